/*
 * libFuzzer target: the builders against the walkers.
 *   gio_sgl_plan() / gio_sgl_build() (include/giouring/proto/sgl_build.h) then gio_sgl_walk(), and
 *   gio_prp_plan() / gio_prp_build() (include/giouring/proto/prp_build.h) then gio_prp_walk(),
 * on the same list of ranges and controller rules.
 *
 * Input (constants in fuzz_common.h):
 *   bytes 0..7  header
 *     0   flags: bits 0-2 SGLS support (0-2 byte, 3-5 dword, 6 byte + unrelated SGLS bits,
 *         7 none), 3 Bit Bucket, 4 Oversize, 5 is_write (for the SGL walk)
 *     1   seg_max_descs: bit 7 set -> 0 (no limit), else bits 0-5 (0..63)
 *     2   max_segments: same encoding
 *     3   page size (bits 0-2): 4096, 8192, 16384, 65536, 4096, 4096, 2048 (invalid), 12288 (invalid)
 *     4   max_xfer_bytes: 0 none; 1..40 -> 2^value; 41..255 -> (value - 40) MiB
 *     5   memory: bits 0-1 SGL segment memory, bits 2-3 PRP list memory; each 0 enough and
 *         aligned, 1 NULL pointer, 2 bus address not 8-byte aligned (+4), 3 short; bits 4-6
 *         where the PRP list starts in its page P (E: the list entries the ranges need): 0 at
 *         0, 1 at 8, 2 at 256, 3 at P - 256, 4 at P - 8, 5 where its entries end at the page
 *         end ((P - 8 E) mod P), 6 one slot short of that (so it chains), 7 at 8 x byte 6
 *         (mod P); bit 7 unused
 *     6   short sizes: SGL and PRP 8 x value bytes
 *     7   range count: 1 + (value & 63); 0xff -> 0
 *   then one encoded range per count: an op byte, then the payload of its address mode, then
 *   that of its length mode (missing bytes read 0):
 *     op bits 0-2 address: 0 previous end; 1 previous end rounded up to a page; 2 (u8 g) that
 *        plus 1 + g pages; 3 (u32 p) p x 4096; 4 (u64) as is; 5 (u16 t) 2^64 - (t + 1) x 4096;
 *        6 (u8 g) previous end + g; 7 the previous address. Before the first range, "previous"
 *        is the empty range at 0x40000000.
 *     op bits 3-5 length: 0 (u8 k) (1 + k) pages; 1 (u8 k) 1 + k; 2 (u16 k) 1 + k; 3 (u32) as
 *        is, 0 included; 4 up to the end of the start's page; 5 0x7ffff000; 6 0xfffff000;
 *        7 (u16 k) 1 + k pages less the start's offset in its page
 *     op bit 6: address rounded down and length rounded up to multiples of 4.
 *
 * Checks:
 *   - plan: the return and the plan match a model written from the builders' documentation
 *     (errors: which errno may or must be returned; success: every field of the plan); a
 *     failed plan leaves the plan untouched; for PRPs both gio_prp_plan() (list page aligned)
 *     and gio_prp_plan_at() at the list address used, with the list's bytes, pages and the
 *     refusal of an address that is not 8-byte aligned modelled per list page;
 *   - build: returns the plan's error, else 0 / the plan's bytes, else -EINVAL, -ENOSPC or
 *     -E2BIG exactly when the memory given calls for it; gio_sgl_plan's seg_bytes equals what
 *     gio_sgl_build returned; on failure the SQE and the segment / list memory are byte for
 *     byte as before (pattern-filled); on success only DPTR and PSDT changed, PSDT is right,
 *     and no byte of segment / list memory past the returned size changed;
 *   - the walker, given the plan's total and the same rules, succeeds and lists exactly the
 *     input ranges with contiguous ones merged; for PRPs it is given only the bytes the builder
 *     returned as list memory, so a list that would make a controller read further fails.

 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/proto/prp_build.h>
#include <giouring/proto/prp_walk.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/sgl_walk.h>

#include "fuzz_common.h"

#define SEG_BUS 0x80000000ull   /* SGL segment memory */
#define SEG_AVAIL 2048u         /* >= (64 data + 63 chain descriptors) x 16 */
#define LIST_BUS 0x200000ull    /* PRP list memory's page: aligned for every page size */
#define PATTERN 0x5au

/* Errno sets. */
#define E_INVAL 1u
#define E_2BIG 2u
#define E_OPNOTSUPP 4u
#define E_NOSPC 8u

static unsigned errno_bit(int rc)
{
	switch (rc) {
	case -EINVAL: return E_INVAL;
	case -E2BIG: return E_2BIG;
	case -EOPNOTSUPP: return E_OPNOTSUPP;
	case -ENOSPC: return E_NOSPC;
	default: return 0;
	}
}

static int range_bad(const struct gio_range *r)
{
	/* empty, or its end not representable ("wraps the 64-bit address space") */
	return r->len == 0 || r->len > UINT64_MAX - r->addr;
}

static void dump_ranges(const struct gio_range *r, uint32_t n)
{
	uint32_t i;
	fprintf(stderr, "ranges (%u):\n", (unsigned)n);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  [%u] addr 0x%016llx len 0x%x\n", (unsigned)i, (unsigned long long)r[i].addr,
			(unsigned)r[i].len);
}

/* The input ranges merged where contiguous: what a walker must list. */
static uint32_t expected_list(const struct gio_range *r, uint32_t n, struct gio_xfer_seg *segs)
{
	uint32_t i, k = 0;
	for (i = 0; i < n; i++)
		if (fz_list_push(segs, &k, FZ_RANGES_MAX, r[i].addr, r[i].len, 0))
			abort(); /* cannot happen: at most n segments */
	return k;
}

static void check_sqe_rest(const unsigned char *before, const struct gio_sqe *sqe, unsigned psdt, const char *who)
{
	unsigned char after[GIO_SQE_BYTES];
	unsigned i;
	memcpy(after, sqe, sizeof(after));
	for (i = 0; i < GIO_SQE_BYTES; i++) {
		if (i >= 24 && i < 40)
			continue; /* DPTR */
		if (i == 1) {
			FZ_CHECK((after[1] & 0x3fu) == (before[1] & 0x3fu), "%s changed FUSE / reserved flag bits", who);
			FZ_CHECK((after[1] >> 6) == psdt, "%s left PSDT %u, want %u", who, (unsigned)(after[1] >> 6),
				 psdt);
			continue;
		}
		FZ_CHECK(after[i] == before[i], "%s changed SQE byte %u outside DPTR", who, i);
	}
}

static void check_untouched(const unsigned char *mem, size_t from, size_t to, const char *what)
{
	static unsigned char pattern[4096];
	size_t i;
	if (pattern[0] != PATTERN)
		memset(pattern, PATTERN, sizeof(pattern));
	for (i = from; i < to; i += sizeof(pattern)) {
		const size_t k = to - i < sizeof(pattern) ? to - i : sizeof(pattern);
		size_t j;
		if (memcmp(mem + i, pattern, k) == 0)
			continue;
		for (j = 0; mem[i + j] == PATTERN; j++)
			;
		FZ_CHECK(0, "%s byte %zu (of %zu) written, past the %zu bytes used", what, i + j, to, from);
	}
}

static void fill_sqe(unsigned char *s)
{
	unsigned i;
	for (i = 0; i < GIO_SQE_BYTES; i++)
		s[i] = (unsigned char)(0x13u + 7u * i);
	s[1] = 0xc1u; /* PSDT 11b, FUSE 01b: the builder must set PSDT and keep FUSE */
}

/* ------------------------------------------------------------------------- */
/* SGL                                                                       */
/* ------------------------------------------------------------------------- */

static void sgl_roundtrip(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			  int is_write, uint8_t mem_mode, uint8_t short_sel)
{
	const uint32_t support = caps->sgls & GIO_SGLS_SUPPORT_MASK;
	const uint64_t m = caps->seg_max_descs;
	unsigned errs = 0;
	uint64_t total = 0, ndata = 0, nseg = 0, run_addr = 0, run_len = 0;
	int bad = 0;
	uint32_t i;
	struct gio_sgl_sizes plan, plan_before;
	unsigned char sqe_before[GIO_SQE_BYTES];
	struct gio_sqe sqe;
	const uint32_t seg_given = mem_mode == FZ_MEM_SHORT ? 8u * short_sel : SEG_AVAIL;
	const uint64_t seg_addr = SEG_BUS + (mem_mode == FZ_MEM_MISALIGN ? 4u : 0u);
	unsigned char *seg_mem;
	int rc_plan, rc;


	/* Model of gio_sgl_plan(). Ranges coalesce while the joint range fits one descriptor
	 * (gio_range_adjacent: "adjacent in memory and fit one descriptor"). */
	if (support == GIO_SGLS_SUPPORT_NONE)
		errs |= E_OPNOTSUPP;
	if (n == 0)
		errs |= E_INVAL;
	for (i = 0; i < n; i++) {
		const struct gio_range *r = &ranges[i];
		if (range_bad(r) || (support == GIO_SGLS_SUPPORT_DWORD && ((r->addr | r->len) & 3u)))
			bad = 1;
		total += r->len;
		if (i > 0 && r->addr == run_addr + run_len && run_len + r->len <= 0xffffffffull) {
			run_len += r->len;
		} else {
			ndata++;
			run_addr = r->addr;
			run_len = r->len;
		}
	}
	if (bad)
		errs |= E_INVAL;
	if (!bad && n > 0) {
		if (caps->max_xfer_bytes != 0 && total > caps->max_xfer_bytes)
			errs |= E_2BIG;
		if (ndata > 1) {
			if (m == 0 || ndata <= m) {
				nseg = 1;
			} else if (m == 1) {
				errs |= E_INVAL; /* chaining needed while a segment holds one descriptor */
			} else {
				uint64_t left = ndata;
				for (nseg = 1; left > m; nseg++)
					left -= m - 1; /* a full segment: m - 1 data and the chain pointer */
			}
			if (nseg > (caps->max_segments ? caps->max_segments : GIO_SGL_DEFAULT_MAX_SEGMENTS))
				errs |= E_2BIG;
			if ((ndata + nseg - 1) * GIO_SGL_DESC_BYTES > 0x7fffffffull)
				errs |= E_2BIG;
		}
	}

	memset(&plan, 0xee, sizeof(plan));
	plan_before = plan;
	rc_plan = gio_sgl_plan(ranges, n, caps, &plan);
	if (errs) {
		if (!(rc_plan < 0 && (errno_bit(rc_plan) & errs))) {
			dump_ranges(ranges, n);
			FZ_CHECK(0, "gio_sgl_plan returned %d; the documented errors here are mask 0x%x", rc_plan, errs);
		}
		FZ_CHECK(memcmp(&plan, &plan_before, sizeof(plan)) == 0, "failed gio_sgl_plan wrote the plan");
	} else {
		const uint64_t seg_bytes = ndata > 1 ? (ndata + nseg - 1) * GIO_SGL_DESC_BYTES : 0;
		if (rc_plan != 0 || plan.xfer_bytes != total || plan.ndata != ndata ||
		    plan.nsegments != (ndata > 1 ? nseg : 0) || plan.seg_bytes != seg_bytes) {
			dump_ranges(ranges, n);
			FZ_CHECK(0,
				 "gio_sgl_plan: rc %d xfer %llu ndata %u nsegments %u seg_bytes %u; model: rc 0 xfer "
				 "%llu ndata %llu nsegments %llu seg_bytes %llu (seg_max_descs %u max_segments %u)",
				 rc_plan, (unsigned long long)plan.xfer_bytes, (unsigned)plan.ndata,
				 (unsigned)plan.nsegments, (unsigned)plan.seg_bytes, (unsigned long long)total,
				 (unsigned long long)ndata, (unsigned long long)(ndata > 1 ? nseg : 0),
				 (unsigned long long)seg_bytes, (unsigned)caps->seg_max_descs,
				 (unsigned)caps->max_segments);
		}
	}

	/* Build into pattern-filled memory. */
	seg_mem = (unsigned char *)malloc(seg_given ? seg_given : 1u);
	if (seg_mem == NULL)
		abort();
	memset(seg_mem, PATTERN, seg_given ? seg_given : 1u);
	fill_sqe(sqe_before);
	memcpy(&sqe, sqe_before, sizeof(sqe));
	rc = gio_sgl_build(&sqe, ranges, n, caps, mem_mode == FZ_MEM_NULL ? NULL : (struct gio_sgl_desc *)seg_mem,
			   seg_addr, seg_given);

	if (rc_plan != 0) {
		FZ_CHECK(rc == rc_plan, "gio_sgl_build returned %d, gio_sgl_plan %d", rc, rc_plan);
	} else if (plan.ndata == 1) {
		FZ_CHECK(rc == 0, "one data descriptor, yet gio_sgl_build returned %d", rc);
	} else {
		unsigned want = 0;
		if (mem_mode == FZ_MEM_NULL || (seg_addr & 7u))
			want |= E_INVAL;
		if (seg_given < plan.seg_bytes)
			want |= E_NOSPC;
		if (want)
			FZ_CHECK(rc < 0 && (errno_bit(rc) & want), "gio_sgl_build returned %d, want one of mask 0x%x",
				 rc, want);
		else
			FZ_CHECK(rc >= 0 && (uint32_t)rc == plan.seg_bytes,
				 "gio_sgl_build returned %d, gio_sgl_plan's seg_bytes is %u", rc, (unsigned)plan.seg_bytes);
	}

	if (rc < 0) {
		FZ_CHECK(errno_bit(rc) != 0, "gio_sgl_build returned the undocumented %d", rc);
		FZ_CHECK(memcmp(&sqe, sqe_before, sizeof(sqe)) == 0, "failed gio_sgl_build (%d) wrote the SQE", rc);
		check_untouched(seg_mem, 0, seg_given, "failed gio_sgl_build: segment memory");
	} else {
		struct gio_dma_region region;
		struct gio_dma_map map;
		struct gio_xfer_seg segs[FZ_MAX_CAP], want[FZ_RANGES_MAX];
		struct gio_xfer_list out;
		uint32_t nwant;
		uint16_t st;

		check_sqe_rest(sqe_before, &sqe, GIO_PSDT_SGL_MPTR, "gio_sgl_build");
		check_untouched(seg_mem, (size_t)rc, seg_given, "gio_sgl_build: segment memory");

		region.addr = seg_addr;
		region.len = seg_given;
		region.ptr = seg_mem;
		map.regions = &region;
		map.count = 1;
		out.segs = segs;
		out.cap = FZ_MAX_CAP;
		out.n = 0;
		st = gio_sgl_walk(&sqe, plan.xfer_bytes, is_write, caps, &map, &out);
		nwant = expected_list(ranges, n, want);
		if (st != 0 || !fz_lists_equal(out.segs, out.n, want, nwant)) {
			dump_ranges(ranges, n);
			fz_dump_list("walker", out.segs, out.n);
			fz_dump_list("expected", want, nwant);
			FZ_CHECK(0, "gio_sgl_walk of gio_sgl_build's SGL: status 0x%04x (build returned %d, %u data "
				    "descriptors, %u segments)",
				 st, rc, (unsigned)plan.ndata, (unsigned)plan.nsegments);
		}
		/* Under GIO_SGLS_OVERSIZE the walker uses a descriptor that runs past the transfer in
		 * part, so the walk above cannot see an SGL describing more than the ranges there; one
		 * byte more must be missing in every mode. */
		st = gio_sgl_walk(&sqe, plan.xfer_bytes + 1, is_write, caps, &map, &out);
		if (st != (GIO_SF(GIO_SCT_GENERIC, GIO_SC_SGL_INVALID_DATA_LEN) | GIO_SF_DNR)) {
			dump_ranges(ranges, n);
			fz_dump_list("walker", out.segs, out.n);
			FZ_CHECK(0, "gio_sgl_build's SGL describes more than the ranges' %llu bytes: a walk of one byte "
				    "more gave status 0x%04x, not Data SGL Length Invalid",
				 (unsigned long long)plan.xfer_bytes, st);
		}
	}
	free(seg_mem);
}

/* ------------------------------------------------------------------------- */
/* PRP                                                                       */
/* ------------------------------------------------------------------------- */

/* Whether the boundaries between ranges are expressible in PRPs: contiguous ranges form one run
 * (plain address contiguity, as prp_build.h documents; PRPs have no 32-bit length limit), and
 * between runs the earlier must end and the later start on a page boundary. */
static int prp_gaps_bad(const struct gio_range *r, uint32_t n, uint64_t pg)
{
	uint64_t end = r[0].addr + r[0].len;
	uint32_t i;
	for (i = 1; i < n; i++) {
		if (r[i].addr != end && (end % pg != 0 || r[i].addr % pg != 0))
			return 1;
		end = r[i].addr + r[i].len;
	}
	return 0;
}

/* Model of a PRP list's layout, one list page at a time: entries fill a page from the list's
 * offset; a page that cannot hold all that remain gives its last slot to the chain pointer. */
static void prp_list_model(uint64_t npages, uint64_t pg, uint64_t off, uint64_t *slots, uint64_t *pages)
{
	uint64_t left, room;
	*slots = 0;
	*pages = 0;
	if (npages <= 2)
		return;
	left = npages - 1; /* PRP1 holds the first page */
	room = (pg - off % pg) / 8;
	*pages = 1;
	while (left > room) {
		left -= room - 1;
		*slots += room;
		room = pg / 8;
		(*pages)++;
	}
	*slots += left;
}

static void prp_roundtrip(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			  uint8_t mem, uint8_t short_sel)
{
	const uint8_t mem_mode = (mem >> 2) & 3u;
	const uint64_t pg = caps->page_bytes;
	const int pg_ok = pg >= 4096 && (pg & (pg - 1)) == 0;
	const uint64_t avail = pg >= 16384 ? pg : 16384;
	const uint64_t list_given = mem_mode == FZ_MEM_SHORT ? 8u * (uint64_t)short_sel : avail;
	unsigned must = 0, may = 0;
	uint64_t total = 0, npages = 0, slots0 = 0, pages0 = 0, slots = 0, list_pages = 0, list_off, list_addr;
	struct gio_prp_sizes plan, plan_before, plan0;
	unsigned char sqe_before[GIO_SQE_BYTES];
	struct gio_sqe sqe;
	unsigned char *list_mem;
	int bad = 0, rc_plan0, rc_plan, rc;
	uint32_t i;


	/* Model of gio_prp_plan(). */
	if (n == 0 || !pg_ok)
		must |= E_INVAL;
	for (i = 0; i < n; i++) {
		if (range_bad(&ranges[i]))
			bad = 1;
		total += ranges[i].len;
	}
	if (bad)
		must |= E_INVAL;
	if (!bad && n > 0 && pg_ok) {
		struct gio_xfer_seg runs[FZ_RANGES_MAX];
		const uint32_t nruns = expected_list(ranges, n, runs);

		if (ranges[0].addr & 3u)
			must |= E_INVAL;
		if (prp_gaps_bad(ranges, n, pg))
			must |= E_INVAL;
		if (caps->max_xfer_bytes != 0 && total > caps->max_xfer_bytes)
			must |= E_2BIG;
		for (i = 0; i < nruns; i++) /* pages touched */
			npages += (runs[i].addr + runs[i].len - (runs[i].addr & ~(pg - 1)) + pg - 1) / pg;
	}
	/* The list's address: an offset in the page at LIST_BUS picked by the header, and 4 more
	 * for the misaligned memory mode. */
	list_off = fz_list_offset(mem, short_sel, pg, !must && npages > 2 ? npages - 1 : 0);
	list_addr = LIST_BUS + list_off + (mem_mode == FZ_MEM_MISALIGN ? 4u : 0u);
	if (!must && pg_ok) {
		prp_list_model(npages, pg, 0, &slots0, &pages0);
		prp_list_model(npages, pg, list_addr & (pg - 1), &slots, &list_pages);
	}

	memset(&plan0, 0xee, sizeof(plan0));
	plan_before = plan0;
	rc_plan0 = gio_prp_plan(ranges, n, caps, &plan0);
	if (must || (rc_plan0 != 0 && may)) {
		if (!(rc_plan0 < 0 && (errno_bit(rc_plan0) & (must | may)))) {
			dump_ranges(ranges, n);
			FZ_CHECK(0, "gio_prp_plan returned %d; documented errors here: must 0x%x may 0x%x (page %llu)",
				 rc_plan0, must, may, (unsigned long long)pg);
		}
		FZ_CHECK(memcmp(&plan0, &plan_before, sizeof(plan0)) == 0, "failed gio_prp_plan wrote the plan");
	} else if (rc_plan0 != 0 || plan0.xfer_bytes != total || plan0.npages != npages || plan0.list_pages != pages0 ||
		   plan0.list_bytes != slots0 * 8) {
		dump_ranges(ranges, n);
		FZ_CHECK(0,
			 "gio_prp_plan: rc %d xfer %llu npages %llu list_pages %llu list_bytes %llu; model: rc 0 xfer "
			 "%llu npages %llu list_pages %llu list_bytes %llu (page %llu)",
			 rc_plan0, (unsigned long long)plan0.xfer_bytes, (unsigned long long)plan0.npages,
			 (unsigned long long)plan0.list_pages, (unsigned long long)plan0.list_bytes,
			 (unsigned long long)total, (unsigned long long)npages, (unsigned long long)pages0,
			 (unsigned long long)(slots0 * 8), (unsigned long long)pg);
	}

	/* Model of gio_prp_plan_at(): the same, and a list address that is not 8-byte aligned is
	 * refused where a list is needed (LIST_BUS is far from 2^64: the list never wraps). */
	if (!must && npages > 2 && (list_addr & 7u))
		must |= E_INVAL;
	memset(&plan, 0xee, sizeof(plan));
	plan_before = plan;
	rc_plan = gio_prp_plan_at(ranges, n, caps, list_addr, &plan);
	if (must || (rc_plan != 0 && may)) {
		if (!(rc_plan < 0 && (errno_bit(rc_plan) & (must | may)))) {
			dump_ranges(ranges, n);
			FZ_CHECK(0, "gio_prp_plan_at(0x%llx) returned %d; documented errors here: must 0x%x may 0x%x "
				    "(page %llu)",
				 (unsigned long long)list_addr, rc_plan, must, may, (unsigned long long)pg);
		}
		FZ_CHECK(memcmp(&plan, &plan_before, sizeof(plan)) == 0, "failed gio_prp_plan_at wrote the plan");
	} else if (rc_plan != 0 || plan.xfer_bytes != total || plan.npages != npages || plan.list_pages != list_pages ||
		   plan.list_bytes != slots * 8) {
		dump_ranges(ranges, n);
		FZ_CHECK(0,
			 "gio_prp_plan_at(0x%llx): rc %d xfer %llu npages %llu list_pages %llu list_bytes %llu; model: "
			 "rc 0 xfer %llu npages %llu list_pages %llu list_bytes %llu (page %llu)",
			 (unsigned long long)list_addr, rc_plan, (unsigned long long)plan.xfer_bytes,
			 (unsigned long long)plan.npages, (unsigned long long)plan.list_pages,
			 (unsigned long long)plan.list_bytes, (unsigned long long)total, (unsigned long long)npages,
			 (unsigned long long)list_pages, (unsigned long long)(slots * 8), (unsigned long long)pg);
	}

	list_mem = (unsigned char *)malloc(list_given ? (size_t)list_given : 1u);
	if (list_mem == NULL)
		abort();
	memset(list_mem, PATTERN, list_given ? (size_t)list_given : 1u);
	fill_sqe(sqe_before);
	memcpy(&sqe, sqe_before, sizeof(sqe));
	rc = gio_prp_build(&sqe, ranges, n, caps, mem_mode == FZ_MEM_NULL ? NULL : (gio_prp_entry *)list_mem,
			   list_addr, list_given);

	if (rc_plan != 0) {
		FZ_CHECK(rc == rc_plan, "gio_prp_build returned %d, gio_prp_plan_at %d", rc, rc_plan);
	} else if (plan.list_pages == 0) {
		FZ_CHECK(rc == 0, "no list needed, yet gio_prp_build returned %d", rc);
	} else {
		unsigned want = 0;
		if (mem_mode == FZ_MEM_NULL)
			want |= E_INVAL;
		if (list_given < plan.list_bytes)
			want |= E_NOSPC;
		if (plan.list_bytes > 0x7fffffffull)
			want |= E_2BIG;
		if (want)
			FZ_CHECK(rc < 0 && (errno_bit(rc) & want), "gio_prp_build returned %d, want one of mask 0x%x",
				 rc, want);
		else
			FZ_CHECK(rc >= 0 && (uint64_t)rc == plan.list_bytes,
				 "gio_prp_build returned %d, gio_prp_plan_at's list_bytes is %llu", rc,
				 (unsigned long long)plan.list_bytes);
	}

	if (rc < 0) {
		FZ_CHECK(errno_bit(rc) != 0 && rc != -EOPNOTSUPP, "gio_prp_build returned the undocumented %d", rc);
		FZ_CHECK(memcmp(&sqe, sqe_before, sizeof(sqe)) == 0, "failed gio_prp_build (%d) wrote the SQE", rc);
		check_untouched(list_mem, 0, (size_t)list_given, "failed gio_prp_build: list memory");
	} else {
		struct gio_dma_region region;
		struct gio_dma_map map;
		struct gio_xfer_seg segs[FZ_MAX_CAP], want[FZ_RANGES_MAX];
		struct gio_xfer_list out;
		uint32_t nwant;
		uint16_t st;

		check_sqe_rest(sqe_before, &sqe, GIO_PSDT_PRP, "gio_prp_build");
		check_untouched(list_mem, (size_t)rc, (size_t)list_given, "gio_prp_build: list memory");
		FZ_CHECK(sqe.dptr.prp.prp1 == ranges[0].addr, "PRP1 0x%llx, first range at 0x%llx",
			 (unsigned long long)sqe.dptr.prp.prp1, (unsigned long long)ranges[0].addr);
		if (rc > 0)
			FZ_CHECK(sqe.dptr.prp.prp2 == list_addr, "PRP2 0x%llx, the list is at 0x%llx",
				 (unsigned long long)sqe.dptr.prp.prp2, (unsigned long long)list_addr);

		/* The walker sees exactly the list bytes the builder reported using. */
		region.addr = list_addr;
		region.len = (uint64_t)rc;
		region.ptr = list_mem;
		map.regions = &region;
		map.count = rc > 0 ? 1u : 0u;
		out.segs = segs;
		out.cap = FZ_MAX_CAP;
		out.n = 0;
		st = gio_prp_walk(&sqe, plan.xfer_bytes, caps, &map, &out);
		nwant = expected_list(ranges, n, want);
		if (st != 0 || !fz_lists_equal(out.segs, out.n, want, nwant)) {
			dump_ranges(ranges, n);
			fz_dump_list("walker", out.segs, out.n);
			fz_dump_list("expected", want, nwant);
			FZ_CHECK(0, "gio_prp_walk of gio_prp_build's PRPs: status 0x%04x (build returned %d, page %llu, "
				    "%llu pages, list at 0x%llx over %llu pages)",
				 st, rc, (unsigned long long)pg, (unsigned long long)plan.npages,
				 (unsigned long long)list_addr, (unsigned long long)plan.list_pages);
		}
	}
	free(list_mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_reader rd = {data, size};
	struct gio_range ranges[FZ_RANGES_MAX];
	struct gio_range prev = {FZ_RANGE_BASE, 0};
	struct gio_dptr_caps caps;
	uint8_t hdr[FZ_RH_BYTES];
	uint32_t i, n;

	for (i = 0; i < FZ_RH_BYTES; i++)
		hdr[i] = fz_u8(&rd);
	memset(&caps, 0, sizeof(caps));
	caps.sgls = fz_sgls(hdr[FZ_RH_FLAGS]);
	caps.page_bytes = fz_page(hdr[FZ_RH_PAGE]);
	caps.max_xfer_bytes = fz_max_xfer(hdr[FZ_RH_MAX_XFER]);
	caps.seg_max_descs = fz_limit(hdr[FZ_RH_SEG_MAX]);
	caps.max_segments = fz_limit(hdr[FZ_RH_MAX_SEGS]);
	n = fz_count(hdr[FZ_RH_COUNT]);
	for (i = 0; i < n; i++) {
		ranges[i] = fz_decode_range(&rd, &prev, caps.page_bytes);
		prev = ranges[i];
	}

	sgl_roundtrip(ranges, n, &caps, (hdr[FZ_RH_FLAGS] & FZ_F_WRITE) != 0, hdr[FZ_RH_MEM] & 3u, hdr[FZ_RH_SHORT]);
	prp_roundtrip(ranges, n, &caps, hdr[FZ_RH_MEM], hdr[FZ_RH_SHORT]);
	return 0;
}
