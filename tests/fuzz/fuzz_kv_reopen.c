/*
 * libFuzzer target: the KV store's reopen (gio_kv_store_open_blockdevs(), src/kv/store.c) over
 * devices whose bytes were damaged after the store was written, against an independent model of
 * docs/store-format.md, "Reopen". Links the host library (built into this fuzzer with coverage).
 *
 * One input:
 *   1. creates a store over 1 to 3 memory block devices (512- or 4096-byte blocks, 48 to 1071
 *      blocks each, a chunk of 1-4 layers of 1-3000 bytes, a transfer limit or none) and puts
 *      chunks (keys from a small universe, each chunk's bytes a function of its key), closes it;
 *   2. damages the devices' bytes: raw writes anywhere, zeroed blocks, an entry copied to another
 *      slot or device (re-encoded there, its sequence -1, equal or +1, its data with it or not),
 *      a superblock byte changed, blocks that fail every read until written, the devices given
 *      in another order;
 *   3. reopens, and checks it against the model: each superblock decoded, checked against its
 *      device, the caller's shape and the set (a store whose model refuses one must fail, with a
 *      message, with no store left open); then every entry decoded block by block in device and
 *      slot order, a VALID one inserted by key with the higher sequence winning and the first seen
 *      kept on a tie, an unreadable block's slot free. The store must serve exactly the model's
 *      keys (gio_kv_store_contains(), gio_kv_store_get()), each with the bytes the image holds in
 *      the model's slot (or -EIO where a block of that slot fails), count the model's duplicates,
 *      refused and unreadable entries, and give a next sequence above every sequence scanned;
 *   4. puts and removes more chunks, one write of them failing where the input says, whole or
 *      torn (-EEXIST exactly for a key served, a stored chunk served at once with its bytes, a
 *      put that failed leaves its key unserved, a removal answers 1 exactly for a key served and
 *      leaves it unserved, every key that went out since the reopen in gio_kv_store_removed()'s
 *      journal),
 *      closes, reopens with nothing failing any more, and checks
 *      again that the store matches the model of the image, and that it serves exactly the keys
 *      it served before the close, each with the same bytes: the first reopen wrote FREE every
 *      older duplicate and unreadable entry, and the close every entry a failed removal or
 *      eviction left VALID, so no key evicted or removed meanwhile comes back.
 *
 * Input layout (missing bytes read 0): see struct layout below, read in this order:
 *   u8 devices-1 (% 3), per device: u8 block (bit 0: 4096, else 512), u16 blocks (48 + v % 1024);
 *   u8 layers-1 (% 4); u16 object bytes-1 (% 3000); u8 transfer limit (0: none, else v % 8 blocks);
 *   u8 chunks put first (% 48), then each a key index (u8 % 64);
 *   u8 damage ops (% 16), each a kind (u8 % 6) and its operands (see damage());
 *   u8 write fault (bits 0-5: the nth write after the reopen fails, 0 none; bit 7: torn);
 *   u8 chunks put or removed after the reopen (% 24), each a key index (u8 % 96; 192 and above:
 *   a removal).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>

#include "fuzz_common.h"

#define MAXDEV 3u
#define KEYS 96u /* the key universe: indices 0-63 before the reopen, 0-95 after */

struct mdev {
	uint8_t *img;
	uint64_t nblocks;
	uint32_t b;
	uint8_t bad[1072]; /* 1: a read of this block fails (-EIO) until it is written */
	int fail_reads;    /* whether bad blocks fail now */
	uint64_t reads, writes;
};

static struct mdev g_dev[MAXDEV];

/* Writes of any device count down to a failure: the g_write_fail-th write from when it was set
 * fails with -EIO (0: none), after writing its first half where g_write_torn (a torn write). */
static uint32_t g_write_fail, g_write_torn;

static int mdev_rw(void *arg, int write, uint64_t slba, uint64_t nblocks, void *buf, uint64_t timeout_ns)
{
	struct mdev *m = arg;
	(void)timeout_ns;
	FZ_CHECK(slba <= m->nblocks && nblocks <= m->nblocks - slba && nblocks, "rw of LBA %llu + %llu on %llu blocks",
		 (unsigned long long)slba, (unsigned long long)nblocks, (unsigned long long)m->nblocks);
	if (write && g_write_fail && --g_write_fail == 0) {
		if (g_write_torn)
			memcpy(m->img + slba * m->b, buf, nblocks * m->b / 2);
		return -EIO;
	}
	if (write) {
		memcpy(m->img + slba * m->b, buf, nblocks * m->b);
		memset(m->bad + slba, 0, nblocks); /* a write remaps a bad block */
		m->writes++;
		return 0;
	}
	for (uint64_t k = 0; m->fail_reads && k < nblocks; k++)
		if (m->bad[slba + k])
			return -EIO;
	memcpy(buf, m->img + slba * m->b, nblocks * m->b);
	m->reads++;
	return 0;
}

static struct gio_kv_u128 key_of(uint32_t i)
{
	return fz_kv_key(i);
}

/* The key index of a key of the universe, or -1. */
static int index_of(struct gio_kv_u128 k)
{
	for (uint32_t i = 0; i < KEYS; i++)
		if (gio_kv_u128_eq(key_of(i), k))
			return (int)i;
	return -1;
}

static void chunk_of(uint32_t i, uint8_t *buf, uint64_t len)
{
	fz_kv_bytes(0x2545f4914f6cdd1dull * (i + 7), buf, len);
}

/* ---- The model of a reopen (docs/store-format.md, "Reopen") ---- */

struct where {
	int found;
	uint32_t dev; /* position in g_dev */
	uint64_t slot, seq;
};

struct model {
	int ok; /* the superblocks make one whole store of the caller's shape */
	struct gio_kv_sb sb[MAXDEV];
	uint32_t pos_of[MAXDEV]; /* device index -> position in g_dev */
	struct where key[KEYS];
	uint64_t valid, duplicates, refused, unreadable, max_seq, foreign; /* foreign: VALID keys outside the universe */
};

static int block_bad(const struct mdev *m, uint64_t lba, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		if (m->fail_reads && m->bad[lba + k])
			return 1;
	return 0;
}

static void model_of(struct model *md, uint32_t n, uint32_t layers, uint64_t object_bytes, uint64_t pool)
{
	memset(md, 0, sizeof(*md));
	for (uint32_t p = 0; p < n; p++) {
		const struct mdev *m = &g_dev[p];
		/* The open reads the superblock's block (its 128 bytes), not the rest of its region. */
		if (block_bad(m, 0, 1) || gio_kv_sb_decode(m->img, &md->sb[p], NULL) ||
		    gio_kv_sb_check_device(&md->sb[p], m->b, m->nblocks, NULL) ||
		    gio_kv_sb_check_shape(&md->sb[p], layers, object_bytes, pool, NULL))
			return;
	}
	if (gio_kv_sb_check_set(md->sb, n, NULL, NULL))
		return;
	md->ok = 1;
	for (uint32_t p = 0; p < n; p++)
		md->pos_of[md->sb[p].device_index] = p;
	for (uint32_t d = 0; d < n; d++) {
		const uint32_t p = md->pos_of[d];
		const struct mdev *m = &g_dev[p];
		const struct gio_kv_sb *sb = &md->sb[p];
		for (uint64_t s = 0; s < sb->slots; s++) {
			struct gio_kv_entry e;
			int idx;
			if (block_bad(m, sb->index_lba + s, 1)) {
				md->unreadable++;
				continue;
			}
			const int rc = gio_kv_entry_decode(m->img + (sb->index_lba + s) * m->b, sb, s, &e, NULL);
			if (rc == -EPROTO)
				md->refused++;
			if (rc || e.state != GIO_KV_ENTRY_VALID)
				continue;
			md->max_seq = e.seq > md->max_seq ? e.seq : md->max_seq;
			idx = index_of(e.key);
			if (idx < 0) { /* a raw write may make one (with a CRC it got right by chance: never) */
				md->foreign++;
				md->valid++;
				continue;
			}
			if (!md->key[idx].found) {
				md->key[idx] = (struct where){1, p, s, e.seq};
				md->valid++;
			} else {
				md->duplicates++;
				if (e.seq > md->key[idx].seq)
					md->key[idx] = (struct where){1, p, s, e.seq};
			}
		}
	}
}

/* Checks an open store against the model of the image; returns how many keys it serves. */
static uint32_t check_store(struct gio_kv_store *st, const struct model *md, uint64_t chunk, uint8_t *buf,
			    uint8_t served[KEYS], uint8_t *bytes /* KEYS x chunk: what each served key read */)
{
	struct gio_kv_store_stats stats;
	uint32_t count = 0;
	gio_kv_store_info(st, &stats);
	FZ_CHECK(stats.valid == md->valid && stats.duplicates == md->duplicates && stats.refused == md->refused &&
			 stats.unreadable == md->unreadable,
		 "store: %llu valid, %llu duplicates, %llu refused, %llu unreadable; model: %llu, %llu, %llu, %llu",
		 (unsigned long long)stats.valid, (unsigned long long)stats.duplicates, (unsigned long long)stats.refused,
		 (unsigned long long)stats.unreadable, (unsigned long long)md->valid, (unsigned long long)md->duplicates,
		 (unsigned long long)md->refused, (unsigned long long)md->unreadable);
	FZ_CHECK(stats.next_seq > md->max_seq, "next sequence %llu, an entry on the devices has %llu",
		 (unsigned long long)stats.next_seq, (unsigned long long)md->max_seq);
	for (uint32_t i = 0; i < KEYS; i++) {
		const struct gio_kv_u128 k = key_of(i);
		const struct where *w = &md->key[i];
		uint8_t found = 2;
		int rc;
		FZ_CHECK(gio_kv_store_contains(st, &k, 1, &found) == (w->found ? 1 : 0) && found == (w->found ? 1 : 0),
			 "key %u: contains says %u, the model %d", i, found, w->found);
		memset(buf, 0xee, chunk);
		rc = gio_kv_store_get(st, k, buf, chunk);
		served[i] = 0;
		if (!w->found) {
			FZ_CHECK(rc == 0, "key %u: get %d where the model has no such chunk", i, rc);
			continue;
		}
		{
			const struct mdev *m = &g_dev[w->dev];
			const struct gio_kv_sb *sb = &md->sb[w->dev];
			struct gio_kv_layout l;
			gio_kv_sb_layout(sb, &l);
			const uint64_t lba = gio_kv_slot_lba(&l, w->slot);
			if (block_bad(m, lba, l.slot_blocks)) {
				FZ_CHECK(rc == -EIO || rc == 1, "key %u: get %d with a failing block in its slot", i, rc);
				if (rc != 1)
					continue;
			}
			FZ_CHECK(rc == 1, "key %u: get %d, the model serves it from device %u slot %llu", i, rc, w->dev,
				 (unsigned long long)w->slot);
			FZ_CHECK(!memcmp(buf, m->img + lba * m->b, chunk), "key %u: get's bytes are not slot %llu's of device %u",
				 i, (unsigned long long)w->slot, w->dev);
		}
		served[i] = 1;
		memcpy(bytes + (size_t)i * chunk, buf, chunk);
		count++;
	}
	return count;
}

/* ---- Damage ---- */

static void damage(struct fz_reader *r, uint32_t n, uint32_t *order)
{
	const uint8_t kind = fz_u8(r) % 6u;
	const uint32_t p = fz_u8(r) % n;
	struct mdev *m = &g_dev[p];
	switch (kind) {
	case 0: { /* raw bytes anywhere */
		const uint64_t off = fz_u32(r) % (m->nblocks * m->b);
		uint32_t len = 1u + fz_u8(r) % 32u;
		for (uint32_t k = 0; k < len && off + k < m->nblocks * m->b; k++)
			m->img[off + k] = fz_u8(r);
		break;
	}
	case 1: /* a zeroed block */
		memset(m->img + (fz_u16(r) % m->nblocks) * m->b, 0, m->b);
		break;
	case 2: { /* an entry copied to another slot, maybe of another device */
		const uint64_t from = fz_u16(r);
		const uint32_t q = fz_u8(r) % n;
		const uint64_t to = fz_u16(r);
		const uint8_t how = fz_u8(r);
		struct gio_kv_sb s1, s2;
		struct gio_kv_entry e;
		if (gio_kv_sb_decode(m->img, &s1, NULL) || gio_kv_sb_decode(g_dev[q].img, &s2, NULL))
			break;
		const uint64_t a = from % s1.slots, b = to % s2.slots;
		if (gio_kv_entry_decode(m->img + (s1.index_lba + a) * m->b, &s1, a, &e, NULL) || e.state != GIO_KV_ENTRY_VALID)
			break;
		{
			const uint64_t seq = (how % 3u == 0 && e.seq > 1) ? e.seq - 1 : how % 3u == 2 ? e.seq + 1 : e.seq;
			uint8_t *dst = g_dev[q].img + (s2.index_lba + b) * g_dev[q].b;
			memset(dst, 0, g_dev[q].b);
			FZ_CHECK(gio_kv_entry_encode(dst, &s2, b, GIO_KV_ENTRY_VALID, e.key, seq,
						     e.data_len <= s2.slot_bytes ? e.data_len : 0, NULL) == 0,
				 "re-encoding a VALID entry in slot %llu", (unsigned long long)b);
			if (how & 4u) { /* its data too (the slots are the same size: one shape) */
				struct gio_kv_layout l1, l2;
				gio_kv_sb_layout(&s1, &l1);
				gio_kv_sb_layout(&s2, &l2);
				memmove(g_dev[q].img + gio_kv_slot_offset(&l2, b), m->img + gio_kv_slot_offset(&l1, a),
					(size_t)(l1.layers * l1.object_bytes));
			}
		}
		break;
	}
	case 3: { /* a superblock byte, its CRC left as it was */
		const uint8_t at = fz_u8(r) % GIO_KV_SB_BYTES, v = fz_u8(r);
		m->img[at] = v;
		break;
	}
	case 4: /* a block whose reads fail until it is written */
		m->bad[fz_u16(r) % m->nblocks] = 1;
		break;
	default: { /* the devices in another order */
		const uint32_t t = order[0];
		for (uint32_t k = 0; k + 1 < n; k++)
			order[k] = order[k + 1];
		order[n - 1] = t;
		break;
	}
	}
}

/* The devices of the open store: they must stay valid until its close. */
static struct gio_kv_blockdev g_open_bd[MAXDEV];

static int open_store(uint32_t n, const uint32_t *order, const struct gio_kv_store_params *p, struct gio_kv_store **st,
		      uint64_t max_xfer)
{
	struct gio_kv_blockdev *bd = g_open_bd;
	memset(g_open_bd, 0, sizeof(g_open_bd));
	for (uint32_t k = 0; k < n; k++) {
		struct mdev *m = &g_dev[order[k]];
		bd[k].lba_bytes = m->b;
		bd[k].nblocks = m->nblocks;
		bd[k].max_xfer_bytes = max_xfer * m->b;
		bd[k].rw = mdev_rw;
		bd[k].arg = m;
	}
	*st = NULL;
	return gio_kv_store_open_blockdevs(bd, n, p, st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_reader r = {data, size};
	const uint32_t n = 1u + fz_u8(&r) % MAXDEV;
	uint32_t order[MAXDEV] = {0, 1, 2};
	struct gio_kv_blockdev bd[MAXDEV];
	struct gio_kv_store_params p;
	struct gio_kv_store *st = NULL;
	struct model md;
	uint8_t served[KEYS], served2[KEYS], stored[KEYS];
	uint8_t *buf, *bytes, *bytes2;
	uint64_t chunk, max_xfer;
	int rc;

	memset(bd, 0, sizeof(bd));
	g_write_fail = g_write_torn = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct mdev *m = &g_dev[k];
		m->b = fz_u8(&r) & 1u ? 4096u : 512u;
		m->nblocks = 48u + fz_u16(&r) % 1024u;
		m->img = calloc(m->nblocks, m->b);
		FZ_CHECK(m->img != NULL, "calloc");
		memset(m->bad, 0, sizeof(m->bad));
		m->fail_reads = 0;
	}
	memset(&p, 0, sizeof(p));
	p.layers = 1u + fz_u8(&r) % 4u;
	p.object_bytes = 1u + fz_u16(&r) % 3000u;
	p.pool_signature = 0x600d;
	max_xfer = fz_u8(&r) % 8u;
	chunk = p.layers * p.object_bytes;
	buf = malloc(chunk);
	bytes = malloc(KEYS * chunk);
	bytes2 = malloc(KEYS * chunk);
	FZ_CHECK(buf && bytes && bytes2, "malloc");
	for (uint32_t k = 0; k < n; k++) {
		bd[k].lba_bytes = g_dev[k].b;
		bd[k].nblocks = g_dev[k].nblocks;
		bd[k].max_xfer_bytes = max_xfer * g_dev[k].b;
		bd[k].rw = mdev_rw;
		bd[k].arg = &g_dev[k];
	}

	/* 1. A store with chunks in it. */
	rc = gio_kv_store_create_blockdevs(bd, n, &p, &st);
	if (rc == -ENOSPC)
		goto out; /* a device too small for one slot of this chunk */
	FZ_CHECK(rc == 0, "create: %d (%s)", rc, gio_last_error());
	for (uint8_t k = fz_u8(&r) % 48u; k; k--) {
		const uint32_t i = fz_u8(&r) % 64u;
		chunk_of(i, buf, chunk);
		rc = gio_kv_store_put(st, key_of(i), buf, chunk);
		FZ_CHECK(rc == 0 || rc == -EEXIST, "put of key %u: %d (%s)", i, rc, gio_last_error());
	}
	FZ_CHECK(gio_kv_store_close(st) == 0, "close: %s", gio_last_error());
	st = NULL;

	/* 2. Damage. */
	for (uint8_t k = fz_u8(&r) % 16u; k; k--)
		damage(&r, n, order);
	for (uint32_t k = 0; k < n; k++)
		g_dev[k].fail_reads = 1;

	/* 3. Reopen against the model. */
	model_of(&md, n, p.layers, p.object_bytes, p.pool_signature);
	rc = open_store(n, order, &p, &st, max_xfer);
	if (!md.ok) {
		FZ_CHECK(rc < 0 && st == NULL && gio_last_error()[0], "the model refuses the store, the open gave %d", rc);
		goto out;
	}
	/* Every superblock block reads: an entry block that does not is a free slot, never a failed
	 * open. */
	FZ_CHECK(rc == 0, "the model accepts the store, the open gave %d (%s)", rc, gio_last_error());
	check_store(st, &md, chunk, buf, served, bytes);

	/* 4. More chunks, a close, a reopen with every block readable. A put answers -EEXIST exactly
	 * for a key served now, and a chunk it stores is served at once with its bytes; a put that a
	 * failed write ends (-EIO) leaves its key unserved; every key the store drops on the way is in
	 * its journal of removals. */
	{
		const uint8_t wf = fz_u8(&r);
		g_write_fail = wf & 0x3fu;
		g_write_torn = wf >> 7;
	}
	for (uint8_t k = fz_u8(&r) % 24u; k; k--) {
		const uint8_t v = fz_u8(&r);
		const uint32_t i = v % KEYS;
		const struct gio_kv_u128 key = key_of(i);
		uint8_t had = 0;
		gio_kv_store_contains(st, &key, 1, &had);
		if (v >= 2u * KEYS) { /* a removal: 1 exactly for a key served, never served after it */
			uint8_t now = 2;
			rc = gio_kv_store_remove(st, key);
			FZ_CHECK(rc == (int)had || rc == -EIO, "remove of key %u: %d, where contains said %u (%s)", i, rc,
				 had, gio_last_error());
			FZ_CHECK(gio_kv_store_contains(st, &key, 1, &now) == 0 && now == 0, "key %u served after its removal",
				 i);
			continue;
		}
		chunk_of(i, buf, chunk);
		rc = gio_kv_store_put(st, key, buf, chunk);
		FZ_CHECK(rc == 0 || rc == -EEXIST || rc == -EIO, "put of key %u after the reopen: %d (%s)", i, rc,
			 gio_last_error());
		FZ_CHECK((rc == -EEXIST) == (had == 1), "put of key %u: %d, where contains said %u", i, rc, had);
		if (rc == -EIO) {
			uint8_t now = 2;
			FZ_CHECK(gio_kv_store_contains(st, &key, 1, &now) == 0 && now == 0,
				 "key %u served after its put failed (%s)", i, gio_last_error());
		}
		if (rc == 0) {
			memset(buf, 0, chunk);
			FZ_CHECK(gio_kv_store_get(st, key, buf, chunk) == 1, "key %u not served after its put", i);
			chunk_of(i, bytes, chunk); /* bytes: scratch here */
			FZ_CHECK(!memcmp(buf, bytes, chunk), "key %u served with other bytes than it was put with", i);
		}
	}
	{
		uint8_t now[KEYS];
		struct gio_kv_u128 gone[64];
		uint64_t since = 0, next = 0;
		for (uint32_t i = 0; i < KEYS; i++) {
			const struct gio_kv_u128 k = key_of(i);
			now[i] = 0;
			gio_kv_store_contains(st, &k, 1, &now[i]);
		}
		/* A key served at the reopen and not now went through the journal. */
		for (;;) {
			const int got = gio_kv_store_removed(st, since, gone, 64, &next);
			FZ_CHECK(got >= 0, "removed: %d (%s)", got, gio_last_error());
			for (int j = 0; j < got; j++) {
				const int idx = index_of(gone[j]);
				if (idx >= 0)
					served[idx] = 0;
			}
			if (got < 64)
				break;
			since = next;
		}
		for (uint32_t i = 0; i < KEYS; i++)
			FZ_CHECK(!served[i] || now[i], "key %u, served at the reopen, went without a removal", i);
	}
	for (uint32_t i = 0; i < KEYS; i++) { /* what the store holds and serves before the close */
		const struct gio_kv_u128 k = key_of(i);
		stored[i] = served[i] = 0;
		if (gio_kv_store_contains(st, &k, 1, &stored[i]) == 1 && gio_kv_store_get(st, k, buf, chunk) == 1) {
			served[i] = 1; /* a key whose data block fails its reads is stored, not served */
			memcpy(bytes + (size_t)i * chunk, buf, chunk);
		}
	}
	g_write_fail = 0; /* the close's Flushes: none fails (flush is NULL here anyway) */
	FZ_CHECK(gio_kv_store_close(st) == 0, "close after the reopen: %s", gio_last_error());
	st = NULL;
	for (uint32_t k = 0; k < n; k++)
		g_dev[k].fail_reads = 0;
	model_of(&md, n, p.layers, p.object_bytes, p.pool_signature);
	rc = open_store(n, order, &p, &st, max_xfer);
	FZ_CHECK(md.ok && rc == 0, "the second reopen: %d (%s), model %d", rc, gio_last_error(), md.ok);
	check_store(st, &md, chunk, buf, served2, bytes2);
	for (uint32_t i = 0; i < KEYS; i++) {
		FZ_CHECK(!served[i] || (served2[i] && !memcmp(bytes + (size_t)i * chunk, bytes2 + (size_t)i * chunk, chunk)),
			 "key %u was served before the close and is %s after the reopen", i,
			 served2[i] ? "served with other bytes" : "not served");
		FZ_CHECK(stored[i] == served2[i], "key %u was %sstored before the close and is %sserved after the reopen", i,
			 stored[i] ? "" : "not ", served2[i] ? "" : "not ");
	}
out:
	if (st)
		gio_kv_store_close(st);
	for (uint32_t k = 0; k < n; k++) {
		free(g_dev[k].img);
		g_dev[k].img = NULL;
	}
	free(buf);
	free(bytes);
	free(bytes2);
	return 0;
}
