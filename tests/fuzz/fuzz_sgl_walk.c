/*
 * libFuzzer target: gio_sgl_walk() (include/giouring/proto/sgl_walk.h).
 *
 * Input (see fuzz_common.h for the helpers):
 *   bytes 0..11   header
 *     0      flags: bits 0-2 SGLS support (0-2 byte, 3-5 dword, 6 byte with unrelated SGLS
 *            bits set, 7 none), 3 Bit Bucket supported, 4 Oversize supported, 5 is_write,
 *            6-7 PSDT (0 and 2: forced to 01b, 1: forced to 10b, 3: left as in the SQE)
 *     1      seg_max_descs: bit 7 set -> 0 (no limit), else bits 0-5 (0..63)
 *     2      max_segments: same encoding (0 -> the walker's GIO_SGL_DEFAULT_MAX_SEGMENTS)
 *     3      output list capacity 1 + (value & 63)
 *     4..7   u32 xfer_len, taken modulo 1 MiB + 1
 *     8..9   u16 split: the blob's last `split` bytes (clamped) form region B
 *     10     bits 0-1 region B bus base: 0 0x1fffc0, 1 0xfffffffffffff000 (clipped below
 *            2^64), 2 0xffffffc0, 3 directly after region A; bits 2-4 host misalignment 0..7
 *     11     reserved
 *   bytes 12..75  the SQE (64 bytes, wire layout; SGL1 is bytes 24..39 of it)
 *   bytes 76..    the blob; its first (size - split) bytes are region A at bus 0x100000.
 *   Missing header and SQE bytes read as zero.
 *
 * Checks, beyond "no crash, no sanitizer report":
 *   - the walker writes neither the SQE nor registered memory, never more than `cap`
 *     segments (the list is an exact-size allocation), and resets out->n;
 *   - success: segment lengths sum to xfer_len; lengths non-zero; rsvd zero; flags 0 or Bit
 *     Bucket; a Bit Bucket only on reads with GIO_SGLS_BIT_BUCKET, at address 0; no data
 *     segment wraps; dword support gives dword-aligned data segments; the list is fully merged;
 *   - error: SCT generic, CRD/More clear, SC one of those sgl_walk.h documents, DNR set for all
 *     but Data Transfer Error; Granularity only under dword support; Data Transfer Error only
 *     when SGL1 is a (Last) Segment; Invalid Field exactly when PSDT or SGLS forbid SGLs;
 *   - a reference model written from sgl_walk.h's rules (its own descriptor decoding and bus
 *     lookup) agrees on success versus failure, on the exact segment list on success, and on
 *     the failing step (the walker's status must be one the model allows there).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/proto/sgl_walk.h>

#include "fuzz_common.h"

#define BIT(sc) (1ull << (sc))

/* Every SC sgl_walk.h documents for a failed walk. */
#define SGL_WALK_SCS                                                                                  \
	(BIT(GIO_SC_INVALID_FIELD) | BIT(GIO_SC_SGL_INVALID_SEGMENT) | BIT(GIO_SC_SGL_INVALID_COUNT) |   \
	 BIT(GIO_SC_SGL_INVALID_DATA_LEN) | BIT(GIO_SC_SGL_INVALID_TYPE) | BIT(GIO_SC_SGL_INVALID_OFFSET) | \
	 BIT(GIO_SC_SGL_INVALID_GRANULARITY) | BIT(GIO_SC_DATA_XFER_ERROR))

/* ------------------------------------------------------------------------- */
/* Reference model                                                           */
/* ------------------------------------------------------------------------- */

struct model {
	uint32_t sgls;
	uint32_t seg_max_descs, max_segments;
	int is_write;
	const struct gio_dma_region *regions;
	uint32_t nregions;
	uint64_t remaining;
	uint32_t cap, n;
	struct gio_xfer_seg segs[FZ_MAX_CAP];
};

/* The descriptor fields, decoded from the wire bytes rather than through the struct. */
struct desc {
	uint64_t addr;
	uint32_t len;
	unsigned type, subtype;
};

static struct desc decode(const unsigned char *p)
{
	struct desc d;
	d.addr = fz_rd64(p);
	d.len = fz_rd32(p + 8);
	d.type = p[15] >> 4;
	d.subtype = p[15] & 0xfu;
	return d;
}

static int is_segment(const struct desc *d)
{
	return d->type == GIO_SGL_TYPE_SEGMENT || d->type == GIO_SGL_TYPE_LAST_SEGMENT;
}

/* "An address range that wraps": its end is not representable in 64 bits. */
static int wraps(uint64_t addr, uint64_t len)
{
	return len != 0 && len > UINT64_MAX - addr;
}

static uint64_t subtype_errors(const struct desc *d)
{
	if (d->subtype == GIO_SGL_SUBTYPE_ADDRESS)
		return 0;
	return d->subtype == GIO_SGL_SUBTYPE_OFFSET ? BIT(GIO_SC_SGL_INVALID_OFFSET)
						    : BIT(GIO_SC_SGL_INVALID_TYPE);
}

/* One descriptor where data descriptors belong: 0, or the SCs acceptable for its fault. */
static uint64_t model_data(struct model *m, const struct desc *d)
{
	const int dword = (m->sgls & GIO_SGLS_SUPPORT_MASK) == GIO_SGLS_SUPPORT_DWORD;
	uint64_t errs = 0, take;
	int bucket = 0;

	switch (d->type) {
	case GIO_SGL_TYPE_DATA_BLOCK:
		break;
	case GIO_SGL_TYPE_BIT_BUCKET:
		bucket = 1;
		if (m->is_write || !(m->sgls & GIO_SGLS_BIT_BUCKET))
			errs |= BIT(GIO_SC_SGL_INVALID_TYPE);
		break;
	case GIO_SGL_TYPE_SEGMENT:
	case GIO_SGL_TYPE_LAST_SEGMENT: /* only the last slot of a segment may chain */
		errs |= BIT(GIO_SC_SGL_INVALID_COUNT);
		break;
	default:
		errs |= BIT(GIO_SC_SGL_INVALID_TYPE);
		break;
	}
	errs |= subtype_errors(d);
	if (errs)
		return errs;
	if (d->len == 0) /* zero-length data descriptors are skipped */
		return 0;
	if (m->remaining == 0) /* "non-empty descriptors after the transfer is covered" */
		return (m->sgls & GIO_SGLS_OVERSIZE) ? 0 : BIT(GIO_SC_SGL_INVALID_DATA_LEN);
	if (!bucket) {
		if (wraps(d->addr, d->len))
			errs |= BIT(GIO_SC_SGL_INVALID_DATA_LEN);
		if (dword && ((d->addr | d->len) & 3u))
			errs |= BIT(GIO_SC_SGL_INVALID_GRANULARITY);
	}
	if (errs)
		return errs;
	/* "A descriptor longer than what remains": Data SGL Length Invalid without
	 * GIO_SGLS_OVERSIZE, used in part with it. */
	if (d->len > m->remaining && !(m->sgls & GIO_SGLS_OVERSIZE))
		return BIT(GIO_SC_SGL_INVALID_DATA_LEN);
	take = d->len < m->remaining ? d->len : m->remaining;
	if (fz_list_push(m->segs, &m->n, m->cap, bucket ? 0 : d->addr, take,
			 bucket ? GIO_XFER_BIT_BUCKET : 0))
		return BIT(GIO_SC_SGL_INVALID_COUNT); /* more segments than the list holds */
	m->remaining -= take;
	return 0;
}

/* The whole walk: 0 (then m->segs is the expected list) or the acceptable SCs. */
static uint64_t model_walk(struct model *m, const unsigned char sqe[GIO_SQE_BYTES], uint64_t xfer_len)
{
	const unsigned psdt = (sqe[1] >> 6) & 3u;
	const uint32_t max_segments = m->max_segments ? m->max_segments : GIO_SGL_DEFAULT_MAX_SEGMENTS;
	struct desc d = decode(sqe + 24);
	uint32_t nseg = 0;
	uint64_t errs;

	m->remaining = xfer_len;
	m->n = 0;
	if ((psdt != 1 && psdt != 2) || (m->sgls & GIO_SGLS_SUPPORT_MASK) == GIO_SGLS_SUPPORT_NONE)
		return BIT(GIO_SC_INVALID_FIELD);
	if (!is_segment(&d)) {
		errs = model_data(m, &d);
		if (errs)
			return errs;
	} else {
		for (;;) {
			const int is_last = d.type == GIO_SGL_TYPE_LAST_SEGMENT;
			const unsigned char *seg;
			struct desc tail;
			uint32_t i, ndesc = 0, ndata;
			int chains;

			/* The (Last) Segment descriptor itself: all its faults are acceptable. */
			errs = subtype_errors(&d);
			if (d.len == 0 || d.len % GIO_SGL_DESC_BYTES != 0) {
				errs |= BIT(GIO_SC_SGL_INVALID_SEGMENT);
			} else {
				ndesc = d.len / GIO_SGL_DESC_BYTES;
				if (nseg + 1 > max_segments || (m->seg_max_descs && ndesc > m->seg_max_descs))
					errs |= BIT(GIO_SC_SGL_INVALID_COUNT);
			}
			if (wraps(d.addr, d.len))
				errs |= BIT(GIO_SC_SGL_INVALID_DATA_LEN);
			if (errs)
				return errs;
			seg = fz_lookup(m->regions, m->nregions, d.addr, d.len);
			if (seg == NULL)
				return BIT(GIO_SC_DATA_XFER_ERROR);
			nseg++;

			/* Its contents: the chain rule and the first failing data descriptor. */
			tail = decode(seg + (size_t)(ndesc - 1) * GIO_SGL_DESC_BYTES);
			chains = is_segment(&tail);
			if (chains && is_last)
				errs |= BIT(GIO_SC_SGL_INVALID_SEGMENT);
			ndata = chains ? ndesc - 1 : ndesc;
			for (i = 0; i < ndata; i++) {
				const struct desc e = decode(seg + (size_t)i * GIO_SGL_DESC_BYTES);
				const uint64_t de = model_data(m, &e);
				if (de) {
					errs |= de;
					break;
				}
			}
			if (errs)
				return errs;
			if (!chains)
				break;
			d = tail;
		}
	}
	if (m->remaining != 0) /* fewer bytes than the transfer */
		return BIT(GIO_SC_SGL_INVALID_DATA_LEN);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The target                                                                */
/* ------------------------------------------------------------------------- */

static void check_segments(const struct gio_xfer_list *out, const struct gio_dptr_caps *caps, int is_write,
			   uint64_t *sum)
{
	uint32_t i;

	*sum = 0;
	for (i = 0; i < out->n; i++) {
		const struct gio_xfer_seg *s = &out->segs[i];
		FZ_CHECK(s->len > 0, "segment %u is empty", (unsigned)i);
		FZ_CHECK(s->rsvd == 0, "segment %u: rsvd 0x%x", (unsigned)i, (unsigned)s->rsvd);
		FZ_CHECK(s->flags == 0 || s->flags == GIO_XFER_BIT_BUCKET, "segment %u: flags 0x%x",
			 (unsigned)i, (unsigned)s->flags);
		if (s->flags & GIO_XFER_BIT_BUCKET) {
			FZ_CHECK(!is_write && (caps->sgls & GIO_SGLS_BIT_BUCKET),
				 "segment %u is a Bit Bucket on a %s with SGLS 0x%x", (unsigned)i,
				 is_write ? "write" : "read", (unsigned)caps->sgls);
			FZ_CHECK(s->addr == 0, "Bit Bucket segment %u has address 0x%llx", (unsigned)i,
				 (unsigned long long)s->addr);
		} else {
			FZ_CHECK(fz_no_wrap(s->addr, s->len), "segment %u wraps: addr 0x%llx len 0x%llx",
				 (unsigned)i, (unsigned long long)s->addr, (unsigned long long)s->len);
		}
		FZ_CHECK(*sum + s->len >= *sum, "segment lengths overflow");
		*sum += s->len;
	}
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
	uint64_t xfer_len, sum, allowed;
	uint32_t cap, i, sc;
	unsigned psdt_sel;
	int is_write;
	uint16_t st;

	memcpy(hdr, data, size < FZ_WH_BYTES ? size : FZ_WH_BYTES);
	if (size > FZ_WALK_SQE_OFF)
		memcpy(sqe_bytes, data + FZ_WALK_SQE_OFF,
		       size - FZ_WALK_SQE_OFF < GIO_SQE_BYTES ? size - FZ_WALK_SQE_OFF : GIO_SQE_BYTES);
	if (size > FZ_WALK_BLOB_OFF) {
		blob = data + FZ_WALK_BLOB_OFF;
		blob_len = size - FZ_WALK_BLOB_OFF;
	}

	psdt_sel = hdr[FZ_WH_FLAGS] >> FZ_F_PSDT_SHIFT;
	if (psdt_sel != 3) /* force PSDT to an SGL value most of the time */
		sqe_bytes[1] = (uint8_t)((sqe_bytes[1] & 0x3fu) | ((psdt_sel == 1 ? 2u : 1u) << 6));
	memcpy(&sqe, sqe_bytes, sizeof(sqe));

	memset(&caps, 0, sizeof(caps));
	caps.sgls = fz_sgls(hdr[FZ_WH_FLAGS]);
	caps.page_bytes = 4096;
	caps.seg_max_descs = fz_limit(hdr[FZ_WH_SEG_MAX]);
	caps.max_segments = fz_limit(hdr[FZ_WH_MAX_SEGS]);
	is_write = (hdr[FZ_WH_FLAGS] & FZ_F_WRITE) != 0;
	xfer_len = fz_rd32(hdr + FZ_WH_XFER) % (FZ_MAX_XFER + 1u);
	cap = fz_cap(hdr[FZ_WH_CAP]);

	fz_mem_setup(&mem, blob, blob_len, hdr);
	out.segs = (struct gio_xfer_seg *)malloc(cap * sizeof(*out.segs)); /* exact: ASan guards cap */
	if (out.segs == NULL)
		abort();
	memset(out.segs, 0xa5, cap * sizeof(*out.segs));
	out.cap = cap;
	out.n = 0xdeadbeefu; /* the walker resets it */

	st = gio_sgl_walk(&sqe, xfer_len, is_write, &caps, &mem.map, &out);

	FZ_CHECK(memcmp(&sqe, sqe_bytes, sizeof(sqe)) == 0, "the walker modified the SQE");
	fz_mem_check_unchanged(&mem);
	FZ_CHECK(out.n <= cap, "out->n = %u exceeds cap %u", (unsigned)out.n, (unsigned)cap);
	FZ_CHECK(out.cap == cap, "the walker changed out->cap");
	check_segments(&out, &caps, is_write, &sum);

	m = (struct model *)calloc(1, sizeof(*m));
	if (m == NULL)
		abort();
	m->sgls = caps.sgls;
	m->seg_max_descs = caps.seg_max_descs;
	m->max_segments = caps.max_segments;
	m->is_write = is_write;
	m->regions = mem.regions;
	m->nregions = mem.map.count;
	m->cap = cap;
	allowed = model_walk(m, sqe_bytes, xfer_len);

	if (st == 0) {
		FZ_CHECK(sum == xfer_len, "success, but segments sum to %llu of xfer_len %llu",
			 (unsigned long long)sum, (unsigned long long)xfer_len);
		for (i = 0; i < out.n; i++) {
			const struct gio_xfer_seg *s = &out.segs[i];
			if (gio_dptr_sgl_support(&caps) == GIO_SGLS_SUPPORT_DWORD && !(s->flags & GIO_XFER_BIT_BUCKET))
				FZ_CHECK((s->addr & 3u) == 0, "dword support, segment %u at 0x%llx", (unsigned)i,
					 (unsigned long long)s->addr);
			if (i > 0) {
				const struct gio_xfer_seg *p = &out.segs[i - 1];
				const int mergeable = p->flags == s->flags &&
						      ((s->flags & GIO_XFER_BIT_BUCKET) || fz_contiguous(p, s->addr));
				FZ_CHECK(!mergeable, "segments %u and %u should have been merged", (unsigned)i - 1,
					 (unsigned)i);
			}
		}
		if (allowed != 0) {
			fz_dump_list("walker", out.segs, out.n);
			FZ_CHECK(allowed == 0,
				 "the walker accepted an SGL the documented rules refuse (model allows SC mask "
				 "0x%llx), xfer_len %llu, SGLS 0x%x",
				 (unsigned long long)allowed, (unsigned long long)xfer_len, (unsigned)caps.sgls);
		}
		if (!fz_lists_equal(out.segs, out.n, m->segs, m->n)) {
			fz_dump_list("walker", out.segs, out.n);
			fz_dump_list("model", m->segs, m->n);
			FZ_CHECK(0, "segment lists differ");
		}
	} else {
		sc = FZ_SF_SC(st);
		FZ_CHECK(FZ_SF_SCT(st) == GIO_SCT_GENERIC, "status 0x%04x: SCT %u", st, (unsigned)FZ_SF_SCT(st));
		FZ_CHECK(FZ_SF_CRD_M(st) == 0 && FZ_SF_RSVD(st) == 0, "status 0x%04x: CRD/More/bit 15 set", st);
		FZ_CHECK(sc < 64 && (SGL_WALK_SCS & BIT(sc)), "status 0x%04x: undocumented SC 0x%02x", st,
			 (unsigned)sc);
		FZ_CHECK(FZ_SF_DNR(st) == (sc != GIO_SC_DATA_XFER_ERROR), "status 0x%04x: DNR wrong for SC 0x%02x",
			 st, (unsigned)sc);
		FZ_CHECK(sum <= xfer_len, "error, yet %llu bytes of %llu listed", (unsigned long long)sum,
			 (unsigned long long)xfer_len);
		if (sc == GIO_SC_SGL_INVALID_GRANULARITY)
			FZ_CHECK(gio_dptr_sgl_support(&caps) == GIO_SGLS_SUPPORT_DWORD,
				 "Granularity error without dword support");
		if (sc == GIO_SC_DATA_XFER_ERROR)
			FZ_CHECK((sqe_bytes[39] >> 4) == GIO_SGL_TYPE_SEGMENT ||
					 (sqe_bytes[39] >> 4) == GIO_SGL_TYPE_LAST_SEGMENT,
				 "Data Transfer Error though SGL1 reads no memory");
		FZ_CHECK((sc == GIO_SC_INVALID_FIELD) == (allowed == BIT(GIO_SC_INVALID_FIELD)),
			 "status 0x%04x, PSDT %u, SGLS 0x%x: Invalid Field in Command iff SGLs are not usable", st,
			 (unsigned)gio_sqe_psdt(&sqe), (unsigned)caps.sgls);
		if (allowed == 0) {
			fz_dump_list("model", m->segs, m->n);
			FZ_CHECK(allowed != 0, "the walker refused (status 0x%04x, %s) an SGL the documented rules accept",
				 st, "see the model's list above");
		}
		FZ_CHECK(allowed & BIT(sc), "status 0x%04x (SC 0x%02x) is not among the model's SC mask 0x%llx", st,
			 (unsigned)sc, (unsigned long long)allowed);
	}

	free(m);
	free(out.segs);
	fz_mem_free(&mem);
	return 0;
}
