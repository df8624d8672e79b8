/* The process's cache of pinned host memory (pinned.h; gio_cuda_trim() and
 * gio_cuda_cached_bytes() are documented in giouring/host/ctx.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>

#include "../internal.h"
#include "cuda_errno.h"
#include "pinned.h"

/* One block, in use or cached. */
struct block {
	struct block *next;
	void *p;
	size_t cap;
	const struct gio__pinned_ops *ops;
	int cached;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks; /* every block, in use or cached; lock held */
static size_t cached_bytes;  /* lock held to write; read with a relaxed load */

/* The smallest cached block of ops that holds len bytes and wastes at most half of itself, now
 * in use; NULL where none; lock held. */
static struct block *take_locked(const struct gio__pinned_ops *ops, size_t len)
{
	struct block *b, *best = NULL;
	for (b = blocks; b; b = b->next)
		if (b->cached && b->ops == ops && b->cap >= len && b->cap / 2 <= len && (!best || b->cap < best->cap))
			best = b;
	if (best) {
		best->cached = 0;
		__atomic_store_n(&cached_bytes, cached_bytes - best->cap, __ATOMIC_RELAXED);
	}
	return best;
}

/* Records block p of len bytes, in use, in b. */
static void insert(struct block *b, const struct gio__pinned_ops *ops, void *p, size_t len)
{
	b->p = p;
	b->cap = len;
	b->ops = ops;
	b->cached = 0;
	pthread_mutex_lock(&lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&lock);
}

void *gio__pinned_get(const struct gio__pinned_ops *ops, size_t len, int *cuda_error)
{
	struct block *b;
	void *p = NULL;
	int e;
	*cuda_error = 0;
	pthread_mutex_lock(&lock);
	b = take_locked(ops, len);
	pthread_mutex_unlock(&lock);
	if (b) {
		memset(b->p, 0, len); /* the previous owner's bytes never reach the next one */
		return b->p;
	}
	if (!ops->alloc)
		return NULL;
	b = malloc(sizeof(*b));
	if (!b) {
		*cuda_error = -1;
		return NULL;
	}
	/* Outside the lock: the runtime call takes its time, and other requests need not wait. */
	if ((e = ops->alloc(&p, len)) != 0 || !p) {
		free(b);
		*cuda_error = e ? e : GIO__CUDA_ERR_MEMORY_ALLOCATION;
		return NULL;
	}
	memset(p, 0, len);
	insert(b, ops, p, len);
	return p;
}

int gio__pinned_track(const struct gio__pinned_ops *ops, void *p, size_t len)
{
	struct block *b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	insert(b, ops, p, len);
	return 0;
}

int gio__pinned_forget(void *p)
{
	struct block *b, **link;
	pthread_mutex_lock(&lock);
	for (link = &blocks; (b = *link) != NULL; link = &b->next)
		if (b->p == p && !b->cached) {
			*link = b->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	free(b);
	return b ? 0 : -ENOENT;
}

int gio__pinned_put(void *p)
{
	struct block *b;
	int rc = -ENOENT;
	pthread_mutex_lock(&lock);
	for (b = blocks; b && p; b = b->next)
		if (b->p == p && !b->cached) {
			b->cached = 1;
			__atomic_store_n(&cached_bytes, cached_bytes + b->cap, __ATOMIC_RELAXED);
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&lock);
	return rc;
}

size_t gio_cuda_trim(void)
{
	struct block *b, **link, *drop = NULL;
	size_t freed = 0;
	unsigned failed = 0;
	int first_error = 0;
	const char *first_name = NULL;
	gio__clear_error();
	/* Out of the list first, released outside the lock (each release may wait for the device). */
	pthread_mutex_lock(&lock);
	for (link = &blocks; (b = *link) != NULL;) {
		if (b->cached) {
			*link = b->next;
			b->next = drop;
			drop = b;
			__atomic_store_n(&cached_bytes, cached_bytes - b->cap, __ATOMIC_RELAXED);
		} else {
			link = &b->next;
		}
	}
	pthread_mutex_unlock(&lock);
	while ((b = drop) != NULL) {
		const int e = b->ops->release(b->p, b->cap);
		drop = b->next;
		if (e == 0) {
			freed += b->cap;
		} else if (!failed++) {
			first_error = e;
			first_name = b->ops->name;
		}
		free(b);
	}
	if (failed)
		gio__fail(-EIO, "giouring: gio_cuda_trim: %u cached blocks could not be released (the first by %s: CUDA error "
			  "%d); they are forgotten, not freed", failed, first_name, first_error);
	return freed;
}

size_t gio_cuda_cached_bytes(void)
{
	return __atomic_load_n(&cached_bytes, __ATOMIC_RELAXED);
}
