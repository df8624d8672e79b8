/* One device of the KV store as its host code drives it: a queue pair and one registered bounce
 * on an open context, blocking reads and writes split by MDTS, and the scan of its index region
 * (docs/store-format.md, "Reopen", step 2). The store runtime (src/kv/store.c) and the offline
 * tool (tools/giouring_store.c) both go through these, so that what the tool reports is what an
 * open reads. Not installed, not part of the API. One thread at a time per device. */
#ifndef GIOURING_SRC_KV_DEV_H
#define GIOURING_SRC_KV_DEV_H

#include <stddef.h>
#include <stdint.h>

#include <giouring/config.h>
#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>

GIO_EXTERN_C_BEGIN

struct gio_dptr_caps;
struct gio_kv_blockdev;

struct gio__kv_dev {
	struct gio_ctx *ctx;           /* NULL where the device is a block device of the caller's: */
	const struct gio_kv_blockdev *bd;
	struct gio_qp *qp;
	struct gio_ns_info info;
	const struct gio_dptr_caps *caps;
	struct gio_kv_sb sb;  /* device_index names the device in messages until a superblock is known */
	struct gio_kv_layout lay;
	uint8_t *mem;         /* the registered bounce: buf_bytes of data, then list_bytes of PRP list or
			 * SGL segment for each command in flight */
	uint64_t mem_addr;
	uint64_t buf_bytes;
	uint64_t list_bytes;
	uint64_t piece_bytes; /* largest transfer of one command, a multiple of the block size */
	uint64_t timeout_ns;  /* deadline of each command */
	uint32_t inflight;    /* commands of a batch in flight at once, each with its list slice */
	uint32_t pos;         /* the device's position in the caller's array */
	int registered;
	int abandoned;        /* a command missed its deadline: the target may still write mem */
};

/* A queue pair and a bounce of at least buf_min bytes (and of a superblock region, and of a scan
 * batch) on ctx, the caller's ctxs[pos]. 0, or -errno with a message; the caller detaches even
 * then. */
int gio__kv_dev_attach(struct gio__kv_dev *dv, struct gio_ctx *ctx, uint32_t pos, uint64_t buf_min,
		       uint64_t timeout_ns);

/* The same for a block device of the caller's: a plain bounce, no queue pair. */
int gio__kv_dev_attach_bd(struct gio__kv_dev *dv, const struct gio_kv_blockdev *bd, uint32_t pos, uint64_t buf_min,
			  uint64_t timeout_ns);

/* Destroys the queue pair and frees the bounce (kept when a command may still write it). A
 * failure is stored in *first_rc (with a message) when first_rc is not NULL and holds 0. */
void gio__kv_dev_detach(struct gio__kv_dev *dv, int *first_rc);

/* Moves blocks [slba, slba + nblocks) to (write) or from the start of the bounce; nblocks at
 * most buf_bytes / block size. 0, or -errno with a message naming the device and what. */
int gio__kv_dev_rw(struct gio__kv_dev *dv, int write, uint64_t slba, uint64_t nblocks, const char *what);

int gio__kv_dev_flush(struct gio__kv_dev *dv, const char *what);

/* Keeps the first failure's rc and message (a later call clears the message) in *first and msg,
 * unless a later one is -ETIME: a missed deadline must reach the caller, which cannot go on with
 * an abandoned device. */
void gio__kv_note_failure(int rc, int *first, char *msg, size_t len);
/* One entry of a batch written by gio__kv_dev_write_entries(): what gio_kv_entry_encode()
 * takes, and rc, set by the call: 0 written, or the -errno of its write. */
struct gio__kv_entry_write {
	uint64_t slot;
	struct gio_kv_u128 key;
	uint64_t seq;
	uint64_t data_len;
	uint32_t state;
	int rc;
};
/* Writes the entries w[0..n-1] (distinct slots; dv->sb and dv->lay set), in slot order through
 * the bounce: consecutive slots go in one command (up to the piece), and up to dv->inflight
 * commands are in flight at once. A command that fails is written again entry by entry, so a
 * bad block costs its own slot. -ETIME abandons the device: the entries not written by then
 * get -ETIME. Returns 0 when every entry was written, else the first failure (-ETIME where any
 * command missed its deadline) with its message. No Flush: the caller's. */
int gio__kv_dev_write_entries(struct gio__kv_dev *dv, struct gio__kv_entry_write *w, uint32_t n, const char *what);
/* What the scan found at one slot: rc 0 (e holds a FREE or VALID entry), -ENODATA (all zero),
 * -EPROTO (refused: reason says why), or the -errno of a read that failed (e and reason
 * unset). Returning nonzero stops the scan with that value. */
typedef int (*gio__kv_entry_visit)(void *arg, uint64_t slot, int rc, uint32_t reason,
				   const struct gio_kv_entry *e);

/* Reads every entry of the device (dv->sb and dv->lay set) in batches the bounce holds and
 * decodes each at its position, in slot order. A failed read visits each slot of its batch with
 * the error and goes on, except -ETIME (the bounce may still be written): returned at once. 0,
 * the visitor's nonzero value, or -ETIME. */
int gio__kv_dev_scan(struct gio__kv_dev *dv, gio__kv_entry_visit visit, void *arg);

GIO_EXTERN_C_END

#endif
