/*
 * GPU memory for the GIOURING backend (builds with CUDA only, GIOURING_NIXL_CUDA): the pool of
 * GPU-executed targets in device memory, and copies between the pool and NIXL's VRAM_SEG or
 * DRAM_SEG buffers. Every wait polls the stream with a deadline: a stuck copy is reported, never
 * waited on forever.
 */
#ifndef GIOURING_NIXL_DEVICE_H
#define GIOURING_NIXL_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace gio_nixl {

/** A CUDA stream of the backend's (non-blocking: it never waits behind the legacy default
 *  stream, where the targets' executors run persistently). */
class device_stream {
public:
	/** Selects @p device and makes the stream: 0, or -errno with @p msg. */
	int open(int device, std::string &msg);
	~device_stream();
	void *handle() const { return stream_; }
	/** Queues a copy of @p n bytes (host or device memory on either side, unified addressing). */
	int copy(void *dst, const void *src, size_t n, std::string &msg);
	/** Waits for everything queued, up to @p timeout_ns: 0, -ETIME, or the copy's error. */
	int wait(uint64_t timeout_ns, std::string &msg);
	/** Device memory for the pool: 0 or -ENOMEM with @p msg. */
	int alloc(size_t n, void **out, std::string &msg);
	static void release(void *p);

private:
	void *stream_ = nullptr;
	int device_ = 0;
};

} // namespace gio_nixl

#endif
