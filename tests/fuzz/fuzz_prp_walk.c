/*
 * libFuzzer target: gio_prp_walk() (include/giouring/proto/prp_walk.h).
 *
 * Input (layout shared with fuzz_sgl_walk, see fuzz_common.h):
 *   bytes 0..11   header
 *     0      bits 0-2 page size: 4096, 8192, 16384, 65536, 4096, 4096, 2048 (invalid),
 *            12288 (invalid); bits 3-4 PSDT: 3 leaves it as in the SQE, else forced to 00b
 *     1, 2   unused
 *     3      output list capacity 1 + (value & 63)
 *     4..7   u32 xfer_len, taken modulo 1 MiB + 1
 *     8..9   u16 split: the blob's last `split` bytes (clamped) form region B
 *     10     bits 0-1 region B bus base: 0 0x1fffc0 (its end lies in the page at 0x200000),
 *            1 0xfffffffffffff000, 2 0xffffffc0, 3 directly after region A; bits 2-4 host
 *            misalignment 0..7
 *     11     reserved
 *   bytes 12..75  the SQE (PRP1 at bytes 24..31 of it, PRP2 at 32..39)
 *   bytes 76..    the blob (PRP list pages); its first (size - split) bytes are region A at
 *                 bus 0x100000 (aligned for every page size).
 *
 * Checks, beyond "no crash, no sanitizer report":
 *   - the walker writes neither the SQE nor the list memory, nor more than `cap` segments;
 *   - success: lengths sum to xfer_len, are non-zero, flags and rsvd zero; the first segment
 *     starts at PRP1 and is the only one that may start inside a page; every segment but the
 *     last ends on a page boundary; no segment wraps past 2^64; the list is fully merged;
 *   - error: SCT generic, CRD/More clear, SC one of Invalid Field, PRP Offset Invalid, Data
 *     Transfer Error (without DNR) or Invalid Number of SGL Descriptors (list full);
 *   - a reference model of prp_walk.h's rules (its own list decoding and bus lookup) gives the
 *     same status and, on success, the same segment list.

 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/proto/prp_walk.h>

#include "fuzz_common.h"

#define DNR 0x4000u
#define ST(sc) ((uint16_t)(sc))

struct model {
	uint64_t pg;
	const struct gio_dma_region *regions;
	uint32_t nregions;
	uint32_t cap, n;
	struct gio_xfer_seg segs[FZ_MAX_CAP];
};

static int push(struct model *m, uint64_t addr, uint64_t len)
{
	return fz_list_push(m->segs, &m->n, m->cap, addr, len, 0);
}

/* The status a controller following prp_walk.h's rules posts; m->segs on success. */
static uint16_t model_walk(struct model *m, const unsigned char sqe[GIO_SQE_BYTES], uint64_t xfer_len)
{
	const uint64_t pg = m->pg;
	const uint64_t prp1 = fz_rd64(sqe + 24), prp2 = fz_rd64(sqe + 32);
	const uint16_t bad_offset = ST(GIO_SC_PRP_INVALID_OFFSET | DNR);
	const uint16_t full = ST(GIO_SC_SGL_INVALID_COUNT | DNR);
	uint64_t first, rest, pages, list, slots;

	m->n = 0;
	if (((sqe[1] >> 6) & 3u) != GIO_PSDT_PRP || pg < 4096 || (pg & (pg - 1)) != 0)
		return ST(GIO_SC_INVALID_FIELD | DNR);
	if (xfer_len == 0)
		return 0;
	if (prp1 % 4 != 0) /* PRP1: dword aligned, any offset */
		return bad_offset;
	first = pg - prp1 % pg;
	if (first > xfer_len)
		first = xfer_len;
	if (push(m, prp1, first))
		return full;
	rest = xfer_len - first;
	if (rest == 0)
		return 0;
	pages = (rest + pg - 1) / pg; /* whole pages after the first, the last maybe partial */
	if (pages == 1) {             /* PRP2 is the page itself */
		if (prp2 % pg != 0)
			return bad_offset;
		return push(m, prp2, rest) ? full : 0;
	}
	if (prp2 % 8 != 0) /* a list pointer: qword-aligned offset */
		return bad_offset;
	/* List pages: the first from PRP2's offset to its page end, the next ones whole. A page
	 * holding more slots than data pages remain holds them all; else its last slot chains. */
	list = prp2;
	slots = (pg - prp2 % pg) / 8;
	while (pages > 0) {
		const uint64_t data = pages <= slots ? pages : slots - 1;
		uint64_t k;
		for (k = 0; k < data; k++) {
			const unsigned char *p = fz_lookup(m->regions, m->nregions, list + 8 * k, 8);
			uint64_t e;
			if (p == NULL)
				return ST(GIO_SC_DATA_XFER_ERROR);
			e = fz_rd64(p);
			if (e % pg != 0)
				return bad_offset;
			if (push(m, e, rest < pg ? rest : pg))
				return full;
			rest -= rest < pg ? rest : pg;
		}
		pages -= data;
		if (pages == 0)
			break;
		{ /* the chain pointer in the last slot */
			const unsigned char *p = fz_lookup(m->regions, m->nregions, list + 8 * data, 8);
			if (p == NULL)
				return ST(GIO_SC_DATA_XFER_ERROR);
			list = fz_rd64(p);
			if (list % pg != 0)
				return bad_offset;
			slots = pg / 8;
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	uint8_t hdr[FZ_WH_BYTES] = {0};
	unsigned char sqe_bytes[GIO_SQE_BYTES] = {0};
	struct gio_sqe sqe;
	struct gio_dptr_caps caps;
	struct gio_xfer_list out;
	struct fz_mem mem;
	struct model *m;
	const uint8_t *blob = empty;
	size_t blob_len = 0;
	uint64_t xfer_len, sum = 0, pg, prp1;
	uint32_t cap, i;
	uint16_t st, want;

	memcpy(hdr, data, size < FZ_WH_BYTES ? size : FZ_WH_BYTES);
	if (size > FZ_WALK_SQE_OFF)
		memcpy(sqe_bytes, data + FZ_WALK_SQE_OFF,
		       size - FZ_WALK_SQE_OFF < GIO_SQE_BYTES ? size - FZ_WALK_SQE_OFF : GIO_SQE_BYTES);
	if (size > FZ_WALK_BLOB_OFF) {
		blob = data + FZ_WALK_BLOB_OFF;
		blob_len = size - FZ_WALK_BLOB_OFF;
	}
	if (((hdr[FZ_WH_FLAGS] >> 3) & 3u) != 3u) /* force PSDT 00b most of the time */
		sqe_bytes[1] &= 0x3fu;
	memcpy(&sqe, sqe_bytes, sizeof(sqe));

	memset(&caps, 0, sizeof(caps));
	caps.sgls = GIO_SGLS_SUPPORT_BYTE;
	caps.page_bytes = fz_page(hdr[FZ_WH_FLAGS]);
	pg = caps.page_bytes;
	xfer_len = fz_rd32(hdr + FZ_WH_XFER) % (FZ_MAX_XFER + 1u);
	cap = fz_cap(hdr[FZ_WH_CAP]);
	prp1 = fz_rd64(sqe_bytes + 24);

	fz_mem_setup(&mem, blob, blob_len, hdr);
	out.segs = (struct gio_xfer_seg *)malloc(cap * sizeof(*out.segs));
	if (out.segs == NULL)
		abort();
	memset(out.segs, 0xa5, cap * sizeof(*out.segs));
	out.cap = cap;
	out.n = 0xdeadbeefu;

	st = gio_prp_walk(&sqe, xfer_len, &caps, &mem.map, &out);

	FZ_CHECK(memcmp(&sqe, sqe_bytes, sizeof(sqe)) == 0, "the walker modified the SQE");
	fz_mem_check_unchanged(&mem);
	FZ_CHECK(out.n <= cap, "out->n = %u exceeds cap %u", (unsigned)out.n, (unsigned)cap);
	for (i = 0; i < out.n; i++) {
		const struct gio_xfer_seg *s = &out.segs[i];
		FZ_CHECK(s->len > 0 && s->flags == 0 && s->rsvd == 0, "segment %u: len 0x%llx flags %u rsvd %u",
			 (unsigned)i, (unsigned long long)s->len, (unsigned)s->flags, (unsigned)s->rsvd);
		FZ_CHECK(sum + s->len >= sum, "segment lengths overflow");
		sum += s->len;
	}

	m = (struct model *)calloc(1, sizeof(*m));
	if (m == NULL)
		abort();
	m->pg = pg;
	m->regions = mem.regions;
	m->nregions = mem.map.count;
	m->cap = cap;
	want = model_walk(m, sqe_bytes, xfer_len);

	if (st == 0) {
		FZ_CHECK(sum == xfer_len, "success, but segments sum to %llu of xfer_len %llu",
			 (unsigned long long)sum, (unsigned long long)xfer_len);
		for (i = 0; i < out.n; i++) {
			const struct gio_xfer_seg *s = &out.segs[i];
			if (!fz_no_wrap(s->addr, s->len)) {
				fz_dump_list("walker", out.segs, out.n);
				FZ_CHECK(0, "segment %u wraps past 2^64: addr 0x%llx len 0x%llx", (unsigned)i,
					 (unsigned long long)s->addr, (unsigned long long)s->len);
			}
			if (i == 0)
				FZ_CHECK(s->addr == prp1, "first segment at 0x%llx, PRP1 0x%llx",
					 (unsigned long long)s->addr, (unsigned long long)prp1);
			else
				FZ_CHECK(s->addr % pg == 0, "segment %u starts inside a page: 0x%llx", (unsigned)i,
					 (unsigned long long)s->addr);
			if (i + 1 < out.n)
				FZ_CHECK((s->addr + s->len) % pg == 0, "segment %u (not the last) ends inside a page",
					 (unsigned)i);
			if (i > 0)
				FZ_CHECK(!fz_contiguous(&out.segs[i - 1], s->addr),
					 "segments %u and %u should have been merged", (unsigned)i - 1, (unsigned)i);
		}
	} else {
		const uint32_t sc = FZ_SF_SC(st);
		FZ_CHECK(FZ_SF_SCT(st) == GIO_SCT_GENERIC && FZ_SF_CRD_M(st) == 0 && FZ_SF_RSVD(st) == 0,
			 "status 0x%04x: SCT/CRD/More/bit 15", st);
		FZ_CHECK(sc == GIO_SC_INVALID_FIELD || sc == GIO_SC_PRP_INVALID_OFFSET ||
				 sc == GIO_SC_DATA_XFER_ERROR || sc == GIO_SC_SGL_INVALID_COUNT,
			 "status 0x%04x: undocumented SC", st);
		FZ_CHECK(FZ_SF_DNR(st) == (sc != GIO_SC_DATA_XFER_ERROR), "status 0x%04x: DNR wrong", st);
		FZ_CHECK(sum <= xfer_len, "error, yet %llu bytes of %llu listed", (unsigned long long)sum,
			 (unsigned long long)xfer_len);
	}
	if (st != want || (st == 0 && !fz_lists_equal(out.segs, out.n, m->segs, m->n))) {
		fz_dump_list("walker", out.segs, out.n);
		fz_dump_list("model", m->segs, m->n);
		FZ_CHECK(0, "walker status 0x%04x, model status 0x%04x (page %llu, xfer_len %llu, PRP1 0x%llx, "
			    "PRP2 0x%llx)",
			 st, want, (unsigned long long)pg, (unsigned long long)xfer_len, (unsigned long long)prp1,
			 (unsigned long long)fz_rd64(sqe_bytes + 32));
	}

	free(m);
	free(out.segs);
	fz_mem_free(&mem);
	return 0;
}
