/* The CPU executor's copy engine for data segments in device memory: an internal interface, so
 * that the CUDA runtime (ctx.c) and a test's stand-in plug in alike. C and C++ (the Catch2 test
 * includes it); not installed, not part of the API.
 *
 * Contract: the executor thread that serves a batch owns one stream; it enqueues every copy of
 * the batch, then waits for all of them with query() against a deadline, and only then posts
 * the batch's completions. A copy is never waited for alone. */
#ifndef GIOURING_SRC_DEVCOPY_H
#define GIOURING_SRC_DEVCOPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gio_ctx;

struct gio__devcopy {
	void *priv;
	uint64_t timeout_ns; /* bound of one batch's wait; past it the batch fails (Data Transfer Error) */
	/* A stream for the calling thread; 0 or -errno. */
	int (*stream_create)(void *priv, void **stream);
	/* Releases a stream; copies still queued on it may yet run (the memory they touch is then
	 * never reused: see the executor). */
	void (*stream_destroy)(void *priv, void *stream);
	/* Enqueues len bytes from src to dst (to_dev: host to device, else device to host); 0 or -errno. */
	int (*copy)(void *priv, void *stream, void *dst, const void *src, size_t len, int to_dev);
	/* 0 when every copy enqueued so far has landed, -EAGAIN while some run, other -errno when one failed. */
	int (*query)(void *priv, void *stream);
	/* Pinned (page-locked, page-aligned) staging memory, or NULL; and its release. */
	void *(*host_alloc)(void *priv, size_t len);
	void (*host_free)(void *priv, void *p);
	/* 1 when memory whose copies missed the deadline may be freed at close (the engine drops a
	 * destroyed stream's copies); 0 keeps it allocated for good (CUDA: a late copy may land). */
	int abandoned_freeable;
	/* A short name for messages ("CUDA", "test"). */
	const char *name;
};

/* Replaces the context's copy engine (tests): before any device region is registered; then
 * gio_ctx_register_device() accepts any pointer, which only dc touches. 0, -EINVAL or -EBUSY. */
int gio__ctx_set_devcopy(struct gio_ctx *ctx, const struct gio__devcopy *dc);

#ifdef __cplusplus
}
#endif

#endif
