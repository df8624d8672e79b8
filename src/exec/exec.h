/* The CPU executor of the software target: threads that serve its queues over a memory or file
 * backing store (executor.c), and the backing stores themselves (backing.c). */
#ifndef GIOURING_SRC_EXEC_EXEC_H
#define GIOURING_SRC_EXEC_EXEC_H

#include <pthread.h>
#include <stdint.h>

#include <giouring/host/ctx.h>
#include <giouring/target/core.h>

#include "devcopy.h"

enum gio__backing { GIO__BACKING_MEM, GIO__BACKING_FILE };

#define GIO__EXEC_MAX_THREADS 16
#define GIO__EXEC_MAX_DROPPED 64 /* withheld completions remembered for Delete I/O SQ */

/* The timing model (URI model_read_gbps, model_write_gbps, model_mixed_gbps, model_lat_us, as
 * the GPU-executed targets take them): the backing store stands in for a drive of these rates. */
struct gio__exec_model {
	double read_gbps, write_gbps, mixed_gbps; /* GB/s = bytes per ns; 0: that direction untimed */
	double lat_us;                            /* every batch takes at least this from its fetch */
	int on;                                   /* any of them given */
};

struct gio__exec {
	struct gio_tgt *tgt;
	struct gio__exec_model model;
	/* The modelled device's one timeline, for all its threads (atomic): when its booked
	 * transfers end, and its reads' and writes' (a read booked before writes end is mixed). */
	uint64_t model_busy_ns, model_reads_ns, model_writes_ns;
	enum gio__backing kind;
	unsigned char *mem; /* GIO__BACKING_MEM */
	int fd;             /* GIO__BACKING_FILE: the file, opened once */
	int direct;         /* fd is O_DIRECT: offsets and lengths are whole blocks */
	uint32_t mem_align; /* O_DIRECT: memory alignment it needs (address and length) */
	int nthreads;
	uint32_t idle_us; /* longest sleep of an idle thread between polls (URI idle_us, default 200) */
	pthread_t threads[GIO__EXEC_MAX_THREADS];
	uint32_t stop;
	uint64_t stop_deadline;   /* set before stop: when close stops waiting for the backing store */
	int hang_pipe[2];         /* the hang fault's pipe (nobody writes it), or -1 */
	pthread_rwlock_t quiesce; /* I/O serving holds it shared; CC changes and admin, exclusive */
	pthread_mutex_t fault_lock;
	struct gio_fault fault; /* under fault_lock */
	uint64_t io_seen;       /* I/O commands fetched, under fault_lock */
	/* Commands whose completion the drop fault withheld: fetched, never completed. A Delete I/O
	 * SQ aborts them (a real controller aborts its hung commands); under fault_lock. */
	struct {
		uint16_t qid, cid;
	} dropped[GIO__EXEC_MAX_DROPPED];
	uint32_t ndropped;
	uint64_t stall_until_ns; /* atomic */
	void *workers_mem;       /* the threads' state */
	/* Copy engine for segments in device memory (tgt->copy_map); set before the first device
	 * region is published (the release of copy_map->count orders it for the workers). */
	const struct gio__devcopy *dc;
	int dev_prepared; /* gio__exec_dev_prepare() done */
};

int gio__exec_start(struct gio__exec *e, int nthreads);
/* Waits until every executor thread is between passes and holds them there (the quiesce lock,
 * exclusive) until gio__exec_resume(): no command is in progress and none reads the region
 * tables meanwhile. 0, or -ETIME with a message when a pass outlasts timeout_ns (a command still
 * in the backing store). */
int gio__exec_quiesce(struct gio__exec *e, uint64_t timeout_ns);
void gio__exec_resume(struct gio__exec *e);
/* Stops the threads. Requests still in the backing store after timeout_ns are abandoned (their
 * bounce buffers kept), and the threads end; -ETIME with a message then. A thread that does not
 * end within a second more is inside a call that does not return: *stuck counts them, nothing
 * is freed (they may touch any of the executor's and target's memory), -ETIME. */
int gio__exec_stop(struct gio__exec *e, uint64_t timeout_ns, int *stuck);
/* Copy streams and pinned staging for device segments, made in the calling thread before the
 * first device region is published (see executor.c); 0 or -errno with a message. */
int gio__exec_dev_prepare(struct gio__exec *e);

/* URI direct=: how the file backing store is accessed. */
enum { GIO__DIRECT_AUTO = -1, GIO__DIRECT_OFF = 0, GIO__DIRECT_ON = 1 };

/* Opens (creating) the file at @path as @e's backing store: @size bytes, or the file's size
 * when 0; *@out_size receives the size. @direct is GIO__DIRECT_*; @lba the block size O_DIRECT
 * offsets must divide. 0 or -errno with a message. */
int gio__backing_file(struct gio__exec *e, const char *path, uint64_t size, int direct, uint32_t lba,
		      uint64_t *out_size);

/* A zeroed memory backing store of @size bytes for @e. 0 or -ENOMEM with a message. */
int gio__backing_mem(struct gio__exec *e, uint64_t size);

/* Closes the backing store (fsync first for a file when sync: its error is returned, with a
 * message), and the hang fault's pipe. */
int gio__backing_close(struct gio__exec *e, const char *path, int sync);

#endif
