/* Host library internals shared by its source files; not installed, not part of the API. */
#ifndef GIOURING_SRC_INTERNAL_H
#define GIOURING_SRC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <giouring/ctx.h>
#include <giouring/target.h>

/* Sets the calling thread's error message (gio_last_error) and returns rc. */
int gio__fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

enum gio__backing { GIO__BACKING_MEM, GIO__BACKING_FILE };

#define GIO__EXEC_MAX_THREADS 16

/* The CPU executor: threads that run the software target over a memory or file backing store. */
struct gio__exec {
	struct gio_tgt *tgt;
	enum gio__backing kind;
	unsigned char *mem; /* GIO__BACKING_MEM */
	int fd;             /* GIO__BACKING_FILE: the file, opened once */
	int direct;         /* fd is O_DIRECT: offsets and lengths are whole blocks */
	uint32_t mem_align; /* O_DIRECT: memory alignment it needs (address and length) */
	int nthreads;
	pthread_t threads[GIO__EXEC_MAX_THREADS];
	uint32_t stop;
	pthread_rwlock_t quiesce; /* I/O serving holds it shared; CC changes and admin, exclusive */
	pthread_mutex_t fault_lock;
	struct gio_fault fault; /* under fault_lock */
	uint64_t io_seen;       /* I/O commands fetched, under fault_lock */
	uint64_t stall_until_ns; /* atomic */
	void *workers_mem;       /* the threads' state */
};

int gio__exec_start(struct gio__exec *e, int nthreads);
void gio__exec_stop(struct gio__exec *e);

#endif
