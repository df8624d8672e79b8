/* QEMU KV store program: runs inside the test guest (static, no libc there) against two NVMe
 * controllers bound to vfio-pci, through the public API only: a store over both controllers
 * (giouring/kv/store.h), chunks put and read back, the store closed and opened again with the
 * contexts in the other order, every chunk compared byte for byte, and each device's superblock,
 * index and slots then read raw (own queue pairs, the format's decoders) to see which chunks each
 * device holds and that their bytes are where the format puts them; and a writer killed at random
 * points (the kill mode), every reopen checked. Prints one PASS or FAIL line per check, a KV line
 * per shape (the kill mode: a line per round and a KILL line) and a RESULT line; exits 0 when
 * every check passed.
 *
 *   gio-qemu-kv-store run BDF0 BDF1      every shape on a new store of its own (the last one stays)
 *   gio-qemu-kv-store reopen BDF0 BDF1   a later boot: the last shape's store opened and checked again
 *   gio-qemu-kv-store kill BDF0 BDF1     a new store (of its own shape, over whole devices: the others'
 *                                        are gone), then up to 20 rounds in at most 60 s of: a writer
 *                                        forked that puts chunks and reports each one committed
 *                                        through a pipe, SIGKILLed at a random point, the store
 *                                        reopened in this process and every chunk checked (seed:
 *                                        GIO_QEMU_KILL_SEED, else the clock; printed); a KILL line.
 *                                        The same test over file targets, where the kernel's page
 *                                        cache stands in for the controller: test_kv_store_kill.cpp
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>
#include <giouring/proto/dptr_build.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>

#include "../kill_pipe.h"
#include "chunk_bytes.h"
#include "guest_check.h"

#define IO_TIMEOUT_NS (10ull * 1000000000ull)
/* The raw reader's transfer: below both controllers' MDTS and unlike the store's own pieces, so
 * that a split the store gets wrong the same way on write and read still shows. */
#define RAW_PIECE (128u << 10)
#define KEY_TAG 0x676b7671656d75ull /* key.hi of every chunk; key.lo: its shape and number */
#define POOL_SIGNATURE 0x51454d554b565354ull

/* One store's chunks. The 512-byte-block controller has MDTS 512 KiB and the store moves at most
 * 1 MiB a command, so the last shape's chunks take several commands on both controllers. */
struct shape {
	const char *name;
	uint32_t layers;
	uint64_t object_bytes;
	uint32_t chunks;
	uint64_t store_bytes;
};
static const struct shape shapes[] = {
	{"straddle", 3, 3000, 64, 1u << 20},  /* objects across block boundaries of both block sizes */
	{"fit", 4, 4096, 64, 1u << 20},       /* each object whole blocks of both sizes */
	{"split", 2, 700000, 16, 20u << 20},  /* 1.4 MB chunks: over MDTS, and over the store's 1 MiB piece */
	/* The kill mode's: 540 kB chunks, just over the first controller's MDTS (two data commands
	 * there, one on the other), over whole devices; its writers put chunks until killed. */
	{"kill", 2, 270000, 0, 0},
};
#define NSHAPES 3 /* the run's shapes; then the kill mode's */
#define KILL_SHAPE 3
_Static_assert(sizeof(shapes) / sizeof(shapes[0]) == KILL_SHAPE + 1, "the run's shapes, then the kill mode's");

static const char *bdf[2];

static uint64_t chunk_bytes(const struct shape *sh)
{
	return (uint64_t)sh->layers * sh->object_bytes;
}

/* Chunk i of shape sh (i == chunks: the one put after the reopen). */
static struct gio_kv_u128 key_of(unsigned sh, uint32_t i)
{
	struct gio_kv_u128 k = {((uint64_t)sh << 32) | (i + 1), KEY_TAG};
	return k;
}

/* The chunk's bytes, from its key (chunk_bytes.h). */
static void gen(struct gio_kv_u128 key, unsigned char *p, uint64_t len)
{
	gio_test_chunk_bytes(key, p, len);
}

static double now_s(void)
{
	return (double)gio_host_now_ns() / 1e9;
}

static int open_ctx(const char *b, struct gio_ctx **ctx)
{
	char uri[128];
	snprintf(uri, sizeof(uri), "nvme-pci://%s", b);
	return gio_ctx_open(uri, ctx);
}

static struct gio_kv_store_params params_of(const struct shape *sh)
{
	struct gio_kv_store_params p;
	memset(&p, 0, sizeof(p));
	p.layers = sh->layers;
	p.object_bytes = sh->object_bytes;
	p.pool_signature = POOL_SIGNATURE;
	p.store_bytes = sh->store_bytes;
	p.timeout_ns = IO_TIMEOUT_NS;
	return p;
}

/* Gets chunks [0, n) of shape sh and compares each with its bytes; the count that matched. */
static uint32_t get_all(struct gio_kv_store *st, unsigned sh, uint32_t n, unsigned char *got, unsigned char *want)
{
	const uint64_t len = chunk_bytes(&shapes[sh]);
	uint32_t i, ok = 0;
	for (i = 0; i < n; i++) {
		int rc;
		memset(got, 0xa5, len);
		gen(key_of(sh, i), want, len);
		rc = gio_kv_store_get(st, key_of(sh, i), got, len);
		if (rc == 1 && !memcmp(got, want, len))
			ok++;
		else if (i - ok < 3) /* the first few failures, not one line per chunk */
			printf("  chunk %u: get %d%s %s\n", i, rc, rc == 1 ? ", bytes differ" : "", gio_last_error());
	}
	return ok;
}

/* A key never put: a miss, and the caller's buffer untouched. */
static void check_miss(struct gio_kv_store *st, const char *name, unsigned sh, unsigned char *got)
{
	const uint64_t len = chunk_bytes(&shapes[sh]);
	const struct gio_kv_u128 unknown = {0xdeadbeefcafeull, KEY_TAG};
	uint64_t i, touched = 0;
	int rc;
	memset(got, 0x5a, len);
	rc = gio_kv_store_get(st, unknown, got, len);
	for (i = 0; i < len; i++)
		touched += got[i] != 0x5a;
	CHECK(name, rc == 0 && touched == 0, "get of an unknown key: %d, %" PRIu64 " bytes of the buffer written", rc,
	      touched);
}

/* ---- raw reads: what each device holds, read without the store ------------------------------ */

/* Buffers of the raw reader: a batch of index entries, and a piece of a slot. */
enum { RAW_INDEX = 0, RAW_DATA = 1 };

struct raw {
	struct gio_ctx *ctx;
	struct gio_qp *qp;
	struct gio_ns_info info;
	unsigned char *mem; /* RAW_PIECE for each buffer, then a page for SGL segments or PRP lists */
	uint64_t addr;
	int registered;
};

#define RAW_LIST (2u * RAW_PIECE)

static int raw_open(struct raw *r, struct gio_ctx *ctx)
{
	int rc;
	memset(r, 0, sizeof(*r));
	r->ctx = ctx;
	gio_ctx_info(ctx, &r->info);
	r->mem = aligned_alloc(4096, RAW_LIST + 4096);
	if (!r->mem)
		return -ENOMEM;
	rc = gio_ctx_register(ctx, r->mem, RAW_LIST + 4096, &r->addr);
	if (rc)
		return rc;
	r->registered = 1;
	return gio_ctx_qp_create(ctx, 16, &r->qp);
}

static void raw_close(struct raw *r)
{
	if (r->qp)
		gio_ctx_qp_destroy(r->ctx, r->qp, IO_TIMEOUT_NS, NULL, NULL);
	if (r->registered)
		gio_ctx_unregister(r->ctx, r->mem);
	free(r->mem);
}

static unsigned char *raw_buf(struct raw *r, int which)
{
	return r->mem + (size_t)which * RAW_PIECE;
}

/* Reads nblocks (at most RAW_PIECE bytes) at slba into buffer `which`. */
static int raw_read(struct raw *r, int which, uint64_t slba, uint32_t nblocks)
{
	const struct gio_range range = {r->addr + (uint64_t)which * RAW_PIECE, (uint64_t)nblocks * r->info.lba_bytes};
	struct gio_sqe sqe;
	uint16_t st = 0;
	int rc = gio_prep_read(&sqe, r->info.nsid, slba, nblocks);
	if (!rc)
		rc = gio_dptr_build(&sqe, &range, 1, gio_ctx_dptr_caps(r->ctx), r->mem + RAW_LIST, r->addr + RAW_LIST, 4096);
	if (rc >= 0)
		rc = gio_qp_submit_wait(r->qp, &sqe, IO_TIMEOUT_NS, &st, NULL);
	if (rc == -EIO)
		printf("  read of LBA %" PRIu64 ": status 0x%04x %s\n", slba, st, gio_status_str(st));
	return rc < 0 ? rc : 0;
}

/* Whether slot `slot` holds the chunk `want`, read RAW_PIECE at a time. */
static int raw_slot_matches(struct raw *r, const struct gio_kv_layout *lay, uint64_t slot, const unsigned char *want,
			    uint64_t len)
{
	const uint64_t b = r->info.lba_bytes, per = RAW_PIECE / b, nblocks = (len + b - 1) / b;
	const uint64_t lba = gio_kv_slot_lba(lay, slot);
	uint64_t done = 0;
	while (done < nblocks) {
		const uint64_t nb = nblocks - done < per ? nblocks - done : per;
		const uint64_t off = done * b, bytes = len - off < nb * b ? len - off : nb * b;
		if (raw_read(r, RAW_DATA, lba + done, (uint32_t)nb) || memcmp(raw_buf(r, RAW_DATA), want + off, bytes))
			return 0;
		done += nb;
	}
	return 1;
}

/* The device chunk i must be on, of a shape whose first `chunks` were put into a new store and
 * the rest after a reopen: a store's round robin starts at device 0 when it is created and, when
 * it is opened, at the device after the one holding the highest sequence (the superblocks' device
 * numbers, whichever position the caller gave each), so the reopen does not break the sequence. */
static uint32_t device_of(uint32_t i)
{
	return i % 2;
}

/* What the raw check of one device counted. */
struct raw_counts {
	uint32_t misplaced, damaged, refused, foreign, twice;
};

/* Scans device d's index (its superblock sb read): counts each VALID entry's chunk in seen[],
 * compares its slot with the chunk's bytes, and checks the chunk belongs on device d. */
static int raw_scan(struct raw *r, const struct gio_kv_sb *sb, uint32_t d, unsigned sh, uint32_t n,
		    unsigned char *seen, uint32_t *held, struct raw_counts *c, unsigned char *want)
{
	const uint64_t len = chunk_bytes(&shapes[sh]), per = RAW_PIECE / sb->block_bytes;
	struct gio_kv_layout lay;
	uint64_t slot, k;
	gio_kv_sb_layout(sb, &lay);
	for (slot = 0; slot < sb->slots; slot += per) {
		const uint64_t batch = sb->slots - slot < per ? sb->slots - slot : per;
		const int rc = raw_read(r, RAW_INDEX, gio_kv_entry_lba(&lay, slot), (uint32_t)batch);
		if (rc)
			return rc;
		for (k = 0; k < batch; k++) {
			struct gio_kv_entry e;
			uint32_t i;
			if (gio_kv_entry_decode(raw_buf(r, RAW_INDEX) + k * sb->block_bytes, sb, slot + k, &e, NULL)) {
				c->refused++; /* a format writes every entry FREE: none is blank or torn here */
				continue;
			}
			if (e.state != GIO_KV_ENTRY_VALID)
				continue;
			i = (uint32_t)e.key.lo - 1;
			if (e.key.hi != KEY_TAG || e.key.lo >> 32 != sh || i >= n) {
				c->foreign++;
				continue;
			}
			c->twice += seen[i]++ != 0;
			(*held)++;
			c->misplaced += device_of(i) != d;
			gen(e.key, want, len);
			c->damaged += !raw_slot_matches(r, &lay, slot + k, want, len);
		}
	}
	return 0;
}

/* Reads the superblock and every index entry of the devices behind ctx[0] and ctx[1], checks
 * that ctx[p] is device p of store `id`, that the VALID entries are chunks [0, n) of shape sh,
 * each once, with their bytes in their slots, each on the device of device_of(). held[d]: chunks
 * on device d. */
static void raw_check(struct gio_ctx *const *ctx, unsigned sh, uint32_t n, struct gio_kv_u128 id,
		      uint32_t held[2], unsigned char *want)
{
	struct raw_counts c;
	char name[96];
	unsigned char *seen = calloc(n, 1);
	uint32_t d, i, missing = 0;
	memset(&c, 0, sizeof(c));
	held[0] = held[1] = 0;
	CHECK("raw.memory", seen != NULL, "no memory for %u flags", n);
	if (!seen)
		return;
	for (d = 0; d < 2; d++) {
		struct raw r;
		struct gio_kv_sb sb;
		uint32_t reason = GIO_KV_R_OK;
		int rc = raw_open(&r, ctx[d]);
		memset(&sb, 0, sizeof(sb));
		if (!rc)
			rc = raw_read(&r, RAW_INDEX, 0, 1);
		if (!rc)
			rc = gio_kv_sb_decode(raw_buf(&r, RAW_INDEX), &sb, &reason);
		snprintf(name, sizeof(name), "%s.raw.superblock-%u", shapes[sh].name, d);
		CHECK(name, rc == 0 && sb.device_index == d && sb.device_count == 2 && gio_kv_u128_eq(sb.store_id, id),
		      "%s: rc %d (%s), device %u of %u", bdf[d], rc, gio_kv_reason_str(reason), rc ? 0 : sb.device_index,
		      rc ? 0 : sb.device_count);
		if (!rc) {
			rc = raw_scan(&r, &sb, d, sh, n, seen, &held[d], &c, want);
			snprintf(name, sizeof(name), "%s.raw.scan-%u", shapes[sh].name, d);
			CHECK(name, rc == 0, "%s: reading the index and slots: %d", bdf[d], rc);
		}
		raw_close(&r);
	}
	for (i = 0; i < n; i++)
		missing += !seen[i];
	free(seen);
	snprintf(name, sizeof(name), "%s.raw.every-chunk-once", shapes[sh].name);
	CHECK(name, missing == 0 && c.twice == 0 && c.foreign == 0 && c.refused == 0,
	      "%u chunks on no device, %u twice, %u entries of other keys, %u entries refused", missing, c.twice,
	      c.foreign, c.refused);
	snprintf(name, sizeof(name), "%s.raw.round-robin", shapes[sh].name);
	CHECK(name, c.misplaced == 0 && held[0] + 1 >= held[1] && held[1] + 1 >= held[0],
	      "%u chunks not where the round robin puts them; %u and %u chunks a device", c.misplaced, held[0], held[1]);
	snprintf(name, sizeof(name), "%s.raw.slots-hold-the-bytes", shapes[sh].name);
	CHECK(name, c.damaged == 0, "%u slots differ from their chunk's bytes", c.damaged);
}

/* ---- the store ------------------------------------------------------------------------------ */

/* Puts chunk i of shape sh; 0 or the put's -errno. */
static int put_one(struct gio_kv_store *st, unsigned sh, uint32_t i, unsigned char *buf)
{
	const uint64_t len = chunk_bytes(&shapes[sh]);
	gen(key_of(sh, i), buf, len);
	return gio_kv_store_put(st, key_of(sh, i), buf, len);
}

/* What a freshly opened store holding `valid` chunks (committed with sequences 1 to valid) must
 * report; id: the store id it must keep, or NULL. */
static void check_opened(struct gio_kv_store *st, const char *name, uint64_t valid, const struct gio_kv_u128 *id)
{
	struct gio_kv_store_stats info;
	gio_kv_store_info(st, &info);
	CHECK(name,
	      info.devices == 2 && info.valid == valid && info.free == info.capacity - valid && info.refused == 0 &&
		      info.duplicates == 0 && info.unreadable == 0 && info.next_seq == valid + 1 &&
		      (!id || gio_kv_u128_eq(info.store_id, *id)),
	      "devices %u, valid %" PRIu64 " of %" PRIu64 " (free %" PRIu64 "), refused %" PRIu64 ", duplicates %" PRIu64
	      ", unreadable %" PRIu64 ", next_seq %" PRIu64 ", store id %s",
	      info.devices, info.valid, info.capacity, info.free, info.refused, info.duplicates, info.unreadable,
	      info.next_seq, !id || gio_kv_u128_eq(info.store_id, *id) ? "kept" : "changed");
}

static void print_kv(unsigned sh, const char *what, uint64_t capacity, const uint32_t held[2], double t0)
{
	const struct shape *s = &shapes[sh];
	printf("KV %s: %u x %" PRIu64 "-byte objects (%" PRIu64 "-byte chunks), %s; %" PRIu64
	       " slots; device 0 holds %u, device 1 holds %u; %.1f s\n",
	       s->name, s->layers, s->object_bytes, chunk_bytes(s), what, capacity, held[0], held[1], now_s() - t0);
}

/* A new store of shape sh over ctx[0], ctx[1]: chunks [0, chunks) put and read back, an unknown
 * key missed, the counters checked, closed. 0 and the store's id, or -1 (the store closed). */
static int create_and_fill(struct gio_ctx *const *ctx, unsigned sh, unsigned char *got, unsigned char *want,
			   struct gio_kv_u128 *id)
{
	const struct shape *s = &shapes[sh];
	const uint64_t len = chunk_bytes(s);
	const struct gio_kv_store_params p = params_of(s);
	struct gio_kv_store *st = NULL;
	struct gio_kv_store_stats info;
	uint32_t i, ok = 0;
	char name[96];
	int rc = gio_kv_store_create(ctx, 2, &p, &st);
	snprintf(name, sizeof(name), "%s.create", s->name);
	CHECK(name, rc == 0, "gio_kv_store_create: %d", rc);
	if (rc)
		return -1;
	gio_kv_store_info(st, &info);
	snprintf(name, sizeof(name), "%s.create.capacity", s->name);
	CHECK(name, info.devices == 2 && info.capacity > s->chunks && info.free == info.capacity && info.valid == 0,
	      "devices %u, capacity %" PRIu64 " (want above %u), free %" PRIu64 ", valid %" PRIu64, info.devices,
	      info.capacity, s->chunks, info.free, info.valid);
	for (i = 0; i < s->chunks; i++) {
		rc = put_one(st, sh, i, want);
		ok += rc == 0;
		if (rc && i + 1 - ok <= 3)
			printf("  chunk %u: put %d %s\n", i, rc, gio_last_error());
	}
	snprintf(name, sizeof(name), "%s.put", s->name);
	CHECK(name, ok == s->chunks, "%u of %u chunks put", ok, s->chunks);
	rc = put_one(st, sh, 0, want);
	snprintf(name, sizeof(name), "%s.put.stored-key-refused", s->name);
	CHECK(name, rc == -EEXIST, "a second put of chunk 0: %d, want -EEXIST", rc);
	ok = get_all(st, sh, s->chunks, got, want);
	snprintf(name, sizeof(name), "%s.get.every-chunk", s->name);
	CHECK(name, ok == s->chunks, "%u of %u chunks read back as put", ok, s->chunks);
	snprintf(name, sizeof(name), "%s.get.unknown-key-misses", s->name);
	check_miss(st, name, sh, got);
	gio_kv_store_info(st, &info);
	snprintf(name, sizeof(name), "%s.stats", s->name);
	CHECK(name,
	      info.valid == s->chunks && info.hits == s->chunks && info.misses == 1 &&
		      info.bytes_written == s->chunks * len && info.bytes_read == s->chunks * len,
	      "valid %" PRIu64 ", hits %" PRIu64 ", misses %" PRIu64 ", bytes written %" PRIu64 ", read %" PRIu64,
	      info.valid, info.hits, info.misses, info.bytes_written, info.bytes_read);
	*id = info.store_id;
	rc = gio_kv_store_close(st);
	snprintf(name, sizeof(name), "%s.close", s->name);
	CHECK(name, rc == 0, "gio_kv_store_close: %d", rc);
	return rc ? -1 : 0;
}

/* Shape sh. First boot (reboot 0): a new store filled by create_and_fill(), then opened with the
 * contexts the other way round (the superblocks, not the caller's order, say which device is
 * which), every chunk read back, one more put (chunk `chunks`), closed. A later boot (reboot 1):
 * the store the first boot left, opened in the caller's order and read back. Then, either way,
 * each device read raw. */
static void run_shape(struct gio_ctx *const *ctx, unsigned sh, int reboot)
{
	const struct shape *s = &shapes[sh];
	const uint64_t len = chunk_bytes(s);
	const struct gio_kv_store_params p = params_of(s);
	const char *phase = reboot ? "reboot" : "reopen";
	struct gio_ctx *const rev[2] = {ctx[1], ctx[0]};
	const uint32_t held_now = reboot ? s->chunks + 1 : s->chunks;
	struct gio_kv_store *st = NULL;
	struct gio_kv_store_stats info;
	struct gio_kv_u128 id = {0, 0};
	unsigned char *got = malloc(len), *want = malloc(len);
	const double t0 = now_s();
	uint32_t ok, held[2];
	char name[96];
	int rc;
	printf("== shape %s%s\n", s->name, reboot ? ", after a reboot" : "");
	CHECK("memory", got && want, "no memory for two %" PRIu64 "-byte chunks", len);
	if (!got || !want || (!reboot && create_and_fill(ctx, sh, got, want, &id)))
		goto out;
	rc = gio_kv_store_open(reboot ? ctx : rev, 2, &p, &st);
	snprintf(name, sizeof(name), "%s.%s.open", s->name, phase);
	CHECK(name, rc == 0, "gio_kv_store_open with ctxs {%s, %s}: %d", bdf[!reboot], bdf[reboot], rc);
	if (rc)
		goto out;
	snprintf(name, sizeof(name), "%s.%s.stats", s->name, phase);
	check_opened(st, name, held_now, reboot ? NULL : &id);
	gio_kv_store_info(st, &info);
	ok = get_all(st, sh, held_now, got, want);
	snprintf(name, sizeof(name), "%s.%s.every-chunk", s->name, phase);
	CHECK(name, ok == held_now, "%u of %u chunks read back as put", ok, held_now);
	snprintf(name, sizeof(name), "%s.%s.unknown-key-misses", s->name, phase);
	check_miss(st, name, sh, got);
	if (!reboot) {
		rc = put_one(st, sh, s->chunks, want);
		ok = rc == 0 && get_all(st, sh, s->chunks + 1, got, want) == s->chunks + 1;
		snprintf(name, sizeof(name), "%s.%s.put-and-get", s->name, phase);
		CHECK(name, ok, "one more chunk after the reopen: put %d, then every chunk read back: %s", rc,
		      ok ? "yes" : "no");
	}
	rc = gio_kv_store_close(st);
	st = NULL;
	snprintf(name, sizeof(name), "%s.%s.close", s->name, phase);
	CHECK(name, rc == 0, "gio_kv_store_close: %d", rc);
	raw_check(ctx, sh, s->chunks + 1, info.store_id, held, want);
	print_kv(sh, reboot ? "after a reboot" : "put, closed, opened the other way round, one more put", info.capacity,
		 held, t0);
out:
	if (st)
		gio_kv_store_close(st);
	free(got);
	free(want);
}

/* ---- kill: writers SIGKILLed at random points -------------------------------------------- */

/* Rounds of the kill mode, and the time they may take in all: a round starts only while the
 * longest one so far still fits. run.sh wants at least 10. */
#define KILL_ROUNDS 20
#define KILL_SECONDS 60.0
/* Reports the parent awaits before a round's kill: 0 to KILL_MAX_REPORTS - 1. */
#define KILL_MAX_REPORTS 8
/* A report may take a put's deadline and then some. */
#define KILL_REPORT_WAIT_MS ((int)(IO_TIMEOUT_NS / 1000000ull) + 10000)
/* How long an open may keep getting -EBUSY from VFIO after a writer died. */
#define KILL_EBUSY_NS (10ull * 1000000000ull)

/* A store over both controllers, opened in this process. */
struct kill_stack {
	struct gio_ctx *ctx[2];
	struct gio_kv_store *st;
};

/* Closes the store, then the contexts: the first failure, or 0. */
static int kill_stack_close(struct kill_stack *k)
{
	int first = 0, d, rc;
	if (k->st)
		first = gio_kv_store_close(k->st);
	k->st = NULL;
	for (d = 0; d < 2; d++) {
		if (k->ctx[d] && (rc = gio_ctx_close(k->ctx[d])) && !first)
			first = rc;
		k->ctx[d] = NULL;
	}
	return first;
}

/* Opens both controllers and the kill shape's store over them (create: a new one). A writer's
 * VFIO group and device may stay busy for a while after it was killed, until the kernel has
 * released them: an open refused with -EBUSY is tried again every 10 ms for up to
 * KILL_EBUSY_NS, each refusal counted in *retries and the time spent in *waited_s. 0, or the
 * failure with nothing left open. */
static int kill_stack_open(struct kill_stack *k, int create, uint32_t *retries, double *waited_s)
{
	const struct gio_kv_store_params p = params_of(&shapes[KILL_SHAPE]);
	const uint64_t t0 = gio_host_now_ns(), deadline = gio_deadline_in(KILL_EBUSY_NS);
	int d, rc = 0;
	memset(k, 0, sizeof(*k));
	for (d = 0; d < 2 && !rc; d++)
		while ((rc = open_ctx(bdf[d], &k->ctx[d])) == -EBUSY && !gio_deadline_passed(deadline)) {
			(*retries)++;
			gio_host_sleep_ns(10000000ull);
		}
	*waited_s = (double)(gio_host_now_ns() - t0) / 1e9;
	if (!rc)
		rc = create ? gio_kv_store_create(k->ctx, 2, &p, &k->st) : gio_kv_store_open(k->ctx, 2, &p, &k->st);
	if (rc)
		kill_stack_close(k);
	return rc;
}

/* The writer (a forked child): its own contexts and store, nothing of the parent's; keys from
 * `first` to `limit` put one after another, each reported on fd after its put returned 0 and
 * before the next put starts; then it waits to be killed. A failure exits with its own status
 * and says why on stderr. */
static void __attribute__((noreturn)) kill_writer(int fd, uint32_t first, uint32_t limit, pid_t parent)
{
	unsigned char *buf = malloc(chunk_bytes(&shapes[KILL_SHAPE]));
	struct kill_stack k;
	uint32_t retries = 0, i;
	double waited;
	int rc;
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a parent that died */
	if (getppid() != parent || !buf)
		_exit(20);
	rc = kill_stack_open(&k, 0, &retries, &waited);
	if (rc) {
		fprintf(stderr, "writer: opening the store: %d (%s)\n", rc, gio_last_error());
		_exit(21);
	}
	if (retries) /* the parent counts its own; the log shows the writer's */
		fprintf(stderr, "writer: opened after %u EBUSY retries, %.2f s\n", retries, waited);
	if (!gio_kill_write_u64(fd, GIO_KILL_OPENED))
		_exit(22);
	for (i = first; i < limit; i++) {
		rc = put_one(k.st, KILL_SHAPE, i, buf);
		if (rc) {
			fprintf(stderr, "writer: put of chunk %u: %d (%s)\n", i, rc, gio_last_error());
			_exit(23);
		}
		if (!gio_kill_write_u64(fd, i))
			_exit(24);
	}
	for (;;) /* the store holds every key it can without an eviction: killed here */
		pause();
}

/* splitmix64: the kill points, from the printed seed. */
static uint64_t kill_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* What the parent knows of the writers: reported[k], key k's put returned 0; served[k], whether
 * the last check found key k; keys below next may have been put, none at or above it was. */
struct kill_history {
	unsigned char *reported, *served;
	uint32_t next, reported_total;
};

/* Checks a store just reopened after a kill against h, over capacity slots that no put had to
 * evict for (the writers stop before the store is full): every reported key served with exactly
 * its bytes; any other key served (the put in flight at a kill) with exactly its bytes too; no
 * key served that was never put; a key below `first` (checked after an earlier kill) served now
 * exactly when it was then; the counters agree. Records in h->served what it found; 0, or -1 with
 * what broke in why. */
static int kill_check(struct gio_kv_store *st, struct kill_history *h, uint32_t first, uint64_t capacity,
		      unsigned char *got, unsigned char *want, char *why, size_t why_len)
{
	const uint64_t len = chunk_bytes(&shapes[KILL_SHAPE]);
	struct gio_kv_store_stats info;
	uint32_t k, hits = 0;
	gio_kv_store_info(st, &info);
	if (info.capacity != capacity || info.valid + info.free != info.capacity || info.pinned || info.duplicates ||
	    info.refused || info.unreadable || info.evictions) {
		snprintf(why, why_len,
			 "counters after the open: capacity %" PRIu64 " (want %" PRIu64 "), valid %" PRIu64 ", free %" PRIu64
			 ", pinned %" PRIu64 ", duplicates %" PRIu64 ", refused %" PRIu64 ", unreadable %" PRIu64
			 ", evictions %" PRIu64,
			 info.capacity, capacity, info.valid, info.free, info.pinned, info.duplicates, info.refused,
			 info.unreadable, info.evictions);
		return -1;
	}
	for (k = 0; k <= h->next; k++) {
		const int rep = k < h->next && h->reported[k];
		int rc;
		memset(got, 0xa5, len);
		rc = gio_kv_store_get(st, key_of(KILL_SHAPE, k), got, len);
		if (rc < 0) {
			snprintf(why, why_len, "get of chunk %u: %d (%s)", k, rc, gio_last_error());
			return -1;
		}
		if (rc == 0 && rep) {
			snprintf(why, why_len, "chunk %u, committed (its put returned 0), is not served", k);
			return -1;
		}
		if (k < first && rc != h->served[k]) {
			snprintf(why, why_len, "chunk %u was %s after an earlier kill and is %s now", k,
				 h->served[k] ? "served" : "not served", rc ? "served" : "not served");
			return -1;
		}
		h->served[k] = (unsigned char)rc;
		if (rc == 0)
			continue;
		hits++;
		if (k >= h->next) {
			snprintf(why, why_len, "chunk %u served but never put (chunks put: below %u)", k, h->next);
			return -1;
		}
		gen(key_of(KILL_SHAPE, k), want, len);
		if (memcmp(got, want, len)) {
			uint64_t b = 0;
			while (got[b] == want[b])
				b++;
			snprintf(why, why_len,
				 "chunk %u (%s) served with other bytes: first at byte %" PRIu64 " of %" PRIu64 ", 0x%02x for 0x%02x",
				 k, rep ? "committed" : "in flight at the kill", b, len, got[b], want[b]);
			return -1;
		}
	}
	if (hits != info.valid) {
		snprintf(why, why_len, "%" PRIu64 " chunks valid but %u of chunks 0-%u served", info.valid, hits, h->next);
		return -1;
	}
	return 0;
}

/* What the kill rounds saw, for the KILL line. */
struct kill_counts {
	uint32_t rounds, failed, in_flight_committed, in_flight_lost, idle, retries;
	double longest_wait_s;
};

/* Reads reports from fd until end of file (r == 0 when it ended so), each the key after the last
 * (*last: one past the last key reported). 0, or -1 with what was wrong in why. */
static int kill_read_reports(int fd, uint32_t want_n, struct kill_history *h, uint32_t *last, double *put_s_sum,
			     uint32_t *put_n, char *why, size_t why_len)
{
	double t = now_s();
	uint64_t v = 0;
	uint32_t j;
	int r;
	for (j = 0; j < want_n || want_n == UINT32_MAX; j++) {
		r = gio_kill_read_u64(fd, &v, KILL_REPORT_WAIT_MS);
		if (r == 0 && want_n == UINT32_MAX)
			return 0;
		if (r != 1) {
			snprintf(why, why_len, "the writer stopped after %u reports (read %d)", j, r);
			return -1;
		}
		if (v != *last) {
			snprintf(why, why_len, "the writer reported chunk %" PRIu64 ", want %u", v, *last);
			return -1;
		}
		h->reported[v] = 1;
		h->reported_total++;
		*last = (uint32_t)v + 1;
		if (want_n != UINT32_MAX) { /* reports awaited one by one: the time of a put */
			const double n = now_s();
			*put_s_sum += n - t;
			(*put_n)++;
			t = n;
		}
	}
	return 0;
}

/* One round: a writer forked, killed after `target` reports and then frac of a put's time, the
 * store reopened and checked. 0 when the round passed. */
static int kill_round(uint32_t round, uint32_t target, double frac, uint32_t limit, uint64_t capacity,
		      struct kill_history *h, struct kill_counts *c, double *put_s_sum, uint32_t *put_n,
		      unsigned char *got, unsigned char *want)
{
	const uint32_t first = h->next;
	struct kill_stack k;
	char why[256] = "", how[64] = "not started", name[32];
	const pid_t parent = getpid();
	uint32_t last = first, retries = 0;
	double delay_s = 0, put_s, waited = 0;
	int fds[2], status = 0, rc = -1, in_flight_served;
	uint64_t v = 0;
	pid_t pid;
	snprintf(name, sizeof(name), "kill.round-%u", round);
	if (pipe2(fds, O_CLOEXEC)) {
		CHECK(name, 0, "pipe2: %s", strerror(errno));
		return -1;
	}
	fflush(stdout); /* nothing buffered for the child to print again */
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		kill_writer(fds[1], first, limit, parent);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		CHECK(name, 0, "fork: %s", strerror(errno));
		return -1;
	}
	if (gio_kill_read_u64(fds[0], &v, KILL_REPORT_WAIT_MS) != 1 || v != GIO_KILL_OPENED)
		snprintf(why, sizeof(why), "the writer did not open the store");
	else if (!kill_read_reports(fds[0], target, h, &last, put_s_sum, put_n, why, sizeof(why)))
		rc = 0;
	put_s = *put_n ? *put_s_sum / *put_n : 0.02;
	if (!rc) {
		delay_s = frac * put_s;
		gio_host_sleep_ns((uint64_t)(delay_s * 1e9));
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) == pid)
		gio_kill_status_str(status, how, sizeof(how));
	else
		snprintf(how, sizeof(how), "not reaped: %s", strerror(errno));
	/* Whatever it reported before it died, to the end of the pipe. */
	if (!rc && kill_read_reports(fds[0], UINT32_MAX, h, &last, put_s_sum, put_n, why, sizeof(why)))
		rc = -1;
	close(fds[0]);
	if (!rc && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		snprintf(why, sizeof(why), "the writer %s, want killed by signal %d", how, SIGKILL);
		rc = -1;
	}
	/* The chunk after the last reported may have been in flight: committed or not, both are
	 * right. Later rounds start above it, so no key is put twice. */
	h->next = last < limit ? last + 1 : last;
	if (!rc) {
		rc = kill_stack_open(&k, 0, &retries, &waited);
		c->retries += retries;
		if (waited > c->longest_wait_s)
			c->longest_wait_s = waited;
		if (rc)
			snprintf(why, sizeof(why), "reopen: %d (%s)", rc, gio_last_error());
		else {
			int closed;
			rc = kill_check(k.st, h, first, capacity, got, want, why, sizeof(why));
			closed = kill_stack_close(&k);
			if (!rc && closed) {
				snprintf(why, sizeof(why), "close after the check: %d (%s)", closed, gio_last_error());
				rc = closed;
			}
		}
	}
	/* The chunk in flight at the kill: committed or not (both right), or none. */
	in_flight_served = last < limit ? h->served[last] : -1;
	if (!rc) {
		c->idle += in_flight_served < 0;
		c->in_flight_committed += in_flight_served == 1;
		c->in_flight_lost += in_flight_served == 0;
	}
	printf("  round %u: chunks from %u, killed %.1f ms after report %u (a put takes %.1f ms), %u committed, "
	       "in flight: %s; the writer %s; reopen: %u EBUSY retries, %.2f s\n",
	       round, first, delay_s * 1e3, target, put_s * 1e3, last - first,
	       in_flight_served < 0 ? "none (every chunk the store holds put)"
				    : in_flight_served ? "committed" : "not committed",
	       how, retries, waited);
	CHECK(name, rc == 0, "%s", why);
	return rc;
}

/* The kill mode: a store of the kill shape formatted over both controllers, then rounds of
 * kill_round() until KILL_ROUNDS or KILL_SECONDS; a KILL line with what they saw. Seed: from
 * GIO_QEMU_KILL_SEED, else the clock. */
static void kill_run(void)
{
	const char *env = getenv("GIO_QEMU_KILL_SEED");
	const uint64_t len = chunk_bytes(&shapes[KILL_SHAPE]);
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) : gio_host_now_ns() ^ ((uint64_t)getpid() << 32), rng;
	unsigned char *got = malloc(len), *want = malloc(len);
	struct kill_history h;
	struct kill_counts c;
	struct kill_stack k;
	struct gio_kv_store_stats info;
	double t0 = now_s(), longest = 0, waited = 0, put_s_sum = 0;
	uint32_t limit, put_n = 0;
	int rc;
	memset(&h, 0, sizeof(h));
	memset(&c, 0, sizeof(c));
	rng = seed;
	printf("== kill: seed %" PRIu64 " (GIO_QEMU_KILL_SEED), up to %d rounds in %.0f s\n", seed, KILL_ROUNDS, KILL_SECONDS);
	CHECK("kill.memory", got && want, "no memory for two %" PRIu64 "-byte chunks", len);
	if (!got || !want)
		goto out;
	rc = kill_stack_open(&k, 1, &c.retries, &waited);
	CHECK("kill.create", rc == 0, "gio_kv_store_create over %s and %s: %d", bdf[0], bdf[1], rc);
	if (rc)
		goto out;
	gio_kv_store_info(k.st, &info);
	rc = kill_stack_close(&k);
	CHECK("kill.create.close", rc == 0, "closing the new store: %d", rc);
	/* Keys below the capacity fit without an eviction: every committed one must stay. */
	limit = (uint32_t)info.capacity;
	h.reported = calloc(limit + 1, 1);
	h.served = calloc(limit + 1, 1);
	CHECK("kill.create.capacity", h.reported && h.served && limit >= KILL_ROUNDS * KILL_MAX_REPORTS,
	      "%u slots, want at least %d (every round's reports without an eviction)", limit,
	      KILL_ROUNDS * KILL_MAX_REPORTS);
	if (rc || !h.reported || !h.served || limit < KILL_ROUNDS * KILL_MAX_REPORTS)
		goto out;
	while (c.rounds < KILL_ROUNDS && now_s() - t0 + longest <= KILL_SECONDS) {
		const double r0 = now_s();
		uint32_t target = (uint32_t)(kill_rand(&rng) % KILL_MAX_REPORTS);
		const double frac = 1.5 * (double)(kill_rand(&rng) >> 11) / 9007199254740992.0; /* [0, 1.5) */
		if (target > limit - h.next) /* the writer puts no key at or above limit */
			target = limit - h.next;
		c.failed += kill_round(c.rounds, target, frac, limit, info.capacity, &h, &c, &put_s_sum, &put_n, got, want) != 0;
		c.rounds++;
		if (now_s() - r0 > longest)
			longest = now_s() - r0;
	}
out:
	printf("KILL seed=%" PRIu64 " rounds=%u failed=%u seconds=%.1f committed=%u in_flight_committed=%u "
	       "in_flight_lost=%u idle=%u ebusy_retries=%u longest_reopen_wait=%.2f\n",
	       seed, c.rounds, c.failed, now_s() - t0, h.reported_total, c.in_flight_committed, c.in_flight_lost, c.idle,
	       c.retries, c.longest_wait_s);
	free(h.reported);
	free(h.served);
	free(got);
	free(want);
}

int main(int argc, char **argv)
{
	struct gio_ctx *ctx[2] = {NULL, NULL};
	const int run = argc == 4 && !strcmp(argv[1], "run"), reopen = argc == 4 && !strcmp(argv[1], "reopen");
	const int kill_mode = argc == 4 && !strcmp(argv[1], "kill");
	int d, rc = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!run && !reopen && !kill_mode) {
		fprintf(stderr, "usage: %s run|reopen|kill BDF0 BDF1\n", argv[0]);
		return 2;
	}
	if (kill_mode) { /* its contexts are opened round by round: none may be open at a fork */
		bdf[0] = argv[2];
		bdf[1] = argv[3];
		kill_run();
		printf("RESULT kv-store-kill pass=%d fail=%d\n", npass, nfail);
		return nfail != 0 || npass == 0;
	}
	for (d = 0; d < 2; d++) {
		struct gio_ns_info info;
		char name[32];
		bdf[d] = argv[2 + d];
		rc = open_ctx(bdf[d], &ctx[d]);
		snprintf(name, sizeof(name), "setup.open-%d", d);
		CHECK(name, rc == 0, "gio_ctx_open(nvme-pci://%s): %d", bdf[d], rc);
		if (rc)
			break;
		gio_ctx_info(ctx[d], &info);
		printf("== controller %d: %s, %" PRIu64 " blocks of %u bytes, largest transfer %" PRIu64 " bytes\n", d,
		       bdf[d], info.nblocks, info.lba_bytes, info.max_xfer_bytes);
		/* Without a chunk over the MDTS of one controller no transfer would split. */
		if (d == 0)
			CHECK("setup.chunks-over-mdts", info.max_xfer_bytes && chunk_bytes(&shapes[NSHAPES - 1]) > info.max_xfer_bytes,
			      "%s: largest transfer %" PRIu64 " bytes, the largest chunk %" PRIu64, bdf[d], info.max_xfer_bytes,
			      chunk_bytes(&shapes[NSHAPES - 1]));
	}
	if (!rc && run) {
		unsigned sh;
		for (sh = 0; sh < NSHAPES; sh++)
			run_shape(ctx, sh, 0);
	} else if (!rc) {
		run_shape(ctx, NSHAPES - 1, 1); /* the store the first boot left */
	}
	for (d = 0; d < 2; d++)
		if (ctx[d])
			gio_ctx_close(ctx[d]);
	printf("RESULT kv-store-%s pass=%d fail=%d\n", argv[1], npass, nfail);
	return nfail != 0 || npass == 0;
}
