/*
 * nixlGiouringEngine: NIXL's GIOURING backend, a local storage backend over a giouring KV store.
 *
 * Memory: DRAM_SEG (and, where built with CUDA, VRAM_SEG) buffers on one side, the store's chunks as OBJ_SEG on the other: an OBJ_SEG
 * registration names one chunk by its 128-bit key (metaInfo: 32 hex digits) under a devId, and a
 * transfer descriptor (offset 0, length layers x object_bytes, that devId) moves the whole chunk.
 * Why OBJ_SEG: the store addresses chunks by key, not by file offset or block, and places them
 * itself (round-robin over devices, LRU eviction); FILE_SEG and BLK_SEG would expose offsets
 * that the store does not promise to keep.
 *
 * Transfers: prepXfer checks everything it can (memory types, registrations, lengths, local
 * agent); postXfer queues the transfer to the engine's worker thread and returns NIXL_IN_PROG at
 * once; checkXfer polls. The worker moves the chunks through the KV layer's batch calls
 * (kv_batch.h). One failed chunk fails the transfer (NIXL_ERR_BACKEND, the message on stderr and
 * from gio_nixl_last_error()); a read then leaves the caller's buffers of that batch untouched,
 * and a key the store does not hold is a failure, never zeros.
 */
#ifndef GIOURING_NIXL_ENGINE_H
#define GIOURING_NIXL_ENGINE_H

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv_batch.h"
#include "nixl_api.h"

namespace gio_nixl {

/** A transfer's state, shared by its handle and the worker (a handle released while its transfer
 *  runs leaves the worker its own reference). */
struct xfer_job {
	bool write = false;
	std::vector<kv_item> items;
	std::atomic<int> state{NIXL_ERR_NOT_POSTED}; /* NIXL_IN_PROG, NIXL_SUCCESS or NIXL_ERR_BACKEND */
};

class engine : public nixlBackendEngine {
public:
	explicit engine(const nixlBackendInitParams *init);
	~engine() override;

	bool supportsRemote() const override { return false; }
	bool supportsLocal() const override { return true; }
	bool supportsNotif() const override { return false; }
	nixl_mem_list_t getSupportedMems() const override;

	nixl_status_t registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out) override;
	nixl_status_t deregisterMem(nixlBackendMD *meta) override;
	nixl_status_t connect(const std::string &remote_agent) override;
	nixl_status_t disconnect(const std::string &remote_agent) override;
	nixl_status_t unloadMD(nixlBackendMD *input) override;
	nixl_status_t loadLocalMD(nixlBackendMD *input, nixlBackendMD *&output) override;

	nixl_status_t prepXfer(const nixl_xfer_op_t &op, const nixl_meta_dlist_t &local, const nixl_meta_dlist_t &remote,
			       const std::string &remote_agent, nixlBackendReqH *&handle,
			       const nixl_opt_b_args_t *opt_args = nullptr) const override;
	nixl_status_t postXfer(const nixl_xfer_op_t &op, const nixl_meta_dlist_t &local, const nixl_meta_dlist_t &remote,
			       const std::string &remote_agent, nixlBackendReqH *&handle,
			       const nixl_opt_b_args_t *opt_args = nullptr) const override;
	nixl_status_t checkXfer(nixlBackendReqH *handle) const override;
	nixl_status_t releaseReqH(nixlBackendReqH *handle) const override;

	/** The agent this engine belongs to. */
	const std::string &agent() const { return localAgent; }
	/** The latest failure's message ("" before any). */
	std::string last_error() const;
	/** Bench hook: the same chunks' move without NIXL (kv_batch::transfer() on the caller's
	 *  thread, after any queued transfer's batch): the library's own call that NIXL's path is
	 *  compared with. */
	int direct(bool write, const std::vector<kv_item> &items, std::string &msg);
	/** Test hook: kv_batch::inject(). */
	int inject(uint32_t dev, uint64_t nth, uint32_t status, std::string &msg);

private:
	nixl_status_t fail(nixl_status_t st, const std::string &msg) const;
	void work();

	mutable std::mutex mu_;                 /* guards queue_, stop_, last_error_ */
	mutable std::condition_variable cv_;
	mutable std::deque<std::shared_ptr<xfer_job>> queue_;
	mutable std::string last_error_;
	bool stop_ = false;
	std::mutex io_mu_;                      /* the store's plan: one batch at a time */
	kv_batch kv_;
	std::thread worker_;
};

/** The memory types the backend takes: VRAM_SEG too where built with CUDA. */
nixl_mem_list_t supported_mems();

/** The engine of agent @p agent, or null (engines register themselves while they live). */
engine *find_engine(const std::string &agent);

} // namespace gio_nixl

#endif
