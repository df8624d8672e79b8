/*
 * Seed corpora and regression inputs for the libFuzzer targets in tests/fuzz.
 *
 * Build and run from the repository root with any C11 compiler (no sanitizers needed):
 *
 *     cc -std=c11 -Wall -Wextra -I include -o /tmp/make_corpus tests/fuzz/make_corpus.c
 *     /tmp/make_corpus tests/fuzz
 *
 * It (re)writes, under the directory given (default: tests/fuzz):
 *   corpus/fuzz_sgl_walk/        valid and deliberately malformed SGLs
 *   corpus/fuzz_prp_walk/         PRP1/PRP2 with 1, 2, 3 pages, lists, a chained list
 *   corpus/fuzz_dptr_roundtrip/   range lists for the builders
 *   corpus/fuzz_target_cmd/       software target sessions: bring-up, admin and I/O commands
 *   corpus/fuzz_kv_format/        KV store superblocks and entries: made, mutated and raw
 *   corpus/fuzz_kv_reopen/        KV stores written, damaged and reopened
 *   corpus/fuzz_kv_pool/          KV pools of the engines' layouts, and one that overlaps
 *   corpus/fuzz_kv_plan/          KV plans: saves and loads layer by layer, refused calls, errors
 *   regressions/fuzz_<target>/    inputs that reproduced header bugs (README.md, "Known
 *                                 findings"); a fixed header passes them
 * Every file is a few hundred bytes at most. Existing files of the same name are replaced;
 * others are left alone. The input layouts are those of fuzz_common.h and the targets' headers.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <giouring/kv/format.h>

#include "fuzz_common.h"

static const char *root = "tests/fuzz";
static unsigned written;

static void mkdir_p(const char *path)
{
	char tmp[1024];
	size_t i, n = strlen(path);
	if (n >= sizeof(tmp)) {
		fprintf(stderr, "path too long: %s\n", path);
		exit(1);
	}
	memcpy(tmp, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] == '/' || tmp[i] == '\0') {
			const char c = tmp[i];
			tmp[i] = '\0';
			if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
				perror(tmp);
				exit(1);
			}
			tmp[i] = c;
		}
	}
}

static void write_file(const char *kind, const char *target, const char *name, const uint8_t *p, size_t n)
{
	char dir[1024], path[1200];
	FILE *f;
	if (n >= 4096) {
		fprintf(stderr, "%s/%s: %zu bytes, seeds stay below 4 KiB\n", target, name, n);
		exit(1);
	}
	snprintf(dir, sizeof(dir), "%s/%s/%s", root, kind, target);
	mkdir_p(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	written++;
}

/* ------------------------------------------------------------------------- */
/* Walker inputs                                                             */
/* ------------------------------------------------------------------------- */

struct walk_seed {
	uint8_t hdr[FZ_WH_BYTES];
	uint8_t sqe[GIO_SQE_BYTES];
	uint8_t a[2048], b[1024]; /* region A (bus FZ_BUS_A) and region B contents */
	size_t alen, blen;
	uint64_t b_base;
};

static void ws_init(struct walk_seed *s, uint8_t flags, uint32_t xfer_len)
{
	memset(s, 0, sizeof(*s));
	s->hdr[FZ_WH_FLAGS] = flags;
	s->hdr[FZ_WH_SEG_MAX] = 0x80; /* no limit */
	s->hdr[FZ_WH_MAX_SEGS] = 0x80;
	s->hdr[FZ_WH_CAP] = 63; /* 64 segments */
	fz_wr32(s->hdr + FZ_WH_XFER, xfer_len);
	s->sqe[0] = GIO_NVM_OPC_READ;
	s->sqe[4] = 1; /* NSID 1 */
}

/* Region B at the base fz_region_b_base(sel) gives (sel 3, "after A", is not used here). */
static void ws_region_b(struct walk_seed *s, uint8_t sel)
{
	s->hdr[FZ_WH_REGION] = (uint8_t)((s->hdr[FZ_WH_REGION] & ~3u) | (sel & 3u));
	s->b_base = fz_region_b_base(sel, 0);
}

/* Bytes at a bus address in region A or B; the regions grow to cover them. */
static void ws_put(struct walk_seed *s, uint64_t bus, const uint8_t *p, size_t n)
{
	if (bus >= FZ_BUS_A && bus - FZ_BUS_A + n <= sizeof(s->a)) {
		memcpy(s->a + (bus - FZ_BUS_A), p, n);
		if (bus - FZ_BUS_A + n > s->alen)
			s->alen = (size_t)(bus - FZ_BUS_A + n);
	} else if (s->b_base && bus >= s->b_base && bus - s->b_base + n <= sizeof(s->b)) {
		memcpy(s->b + (bus - s->b_base), p, n);
		if (bus - s->b_base + n > s->blen)
			s->blen = (size_t)(bus - s->b_base + n);
	} else {
		fprintf(stderr, "seed writes outside its regions at 0x%llx\n", (unsigned long long)bus);
		exit(1);
	}
}

static void desc_bytes(uint8_t out[16], uint64_t addr, uint32_t len, unsigned type, unsigned subtype)
{
	memset(out, 0, 16);
	fz_wr64(out, addr);
	fz_wr32(out + 8, len);
	out[15] = (uint8_t)((type << 4) | subtype);
}

static void ws_sgl1(struct walk_seed *s, uint64_t addr, uint32_t len, unsigned type)
{
	desc_bytes(s->sqe + 24, addr, len, type, GIO_SGL_SUBTYPE_ADDRESS);
}

static void ws_desc(struct walk_seed *s, uint64_t bus, uint64_t addr, uint32_t len, unsigned type)
{
	uint8_t d[16];
	desc_bytes(d, addr, len, type, GIO_SGL_SUBTYPE_ADDRESS);
	ws_put(s, bus, d, sizeof(d));
}

static void ws_prp(struct walk_seed *s, uint64_t prp1, uint64_t prp2)
{
	fz_wr64(s->sqe + 24, prp1);
	fz_wr64(s->sqe + 32, prp2);
}

static void ws_entry(struct walk_seed *s, uint64_t bus, uint64_t v)
{
	uint8_t e[8];
	fz_wr64(e, v);
	ws_put(s, bus, e, sizeof(e));
}

static void ws_write(struct walk_seed *s, const char *kind, const char *target, const char *name)
{
	uint8_t buf[FZ_WALK_BLOB_OFF + sizeof(s->a) + sizeof(s->b)];
	size_t n = 0;
	fz_wr16(s->hdr + FZ_WH_SPLIT, (uint16_t)s->blen);
	memcpy(buf, s->hdr, FZ_WH_BYTES);
	memcpy(buf + FZ_WALK_SQE_OFF, s->sqe, GIO_SQE_BYTES);
	n = FZ_WALK_BLOB_OFF;
	memcpy(buf + n, s->a, s->alen);
	n += s->alen;
	memcpy(buf + n, s->b, s->blen);
	n += s->blen;
	write_file(kind, target, name, buf, n);
}

#define SGL_BYTE 0u  /* FZ_F_SUPPORT_MASK values */
#define SGL_DWORD 3u
#define SGL_NOISE 6u
#define SGL_NONE 7u
#define PSDT_MSGL (1u << FZ_F_PSDT_SHIFT)
#define PSDT_RAW (3u << FZ_F_PSDT_SHIFT)

static void sgl_walk_seeds(void)
{
	const char *t = "fuzz_sgl_walk";
	struct walk_seed s;
	uint64_t bus;

	/* SGL1 alone: one Data Block. */
	ws_init(&s, SGL_BYTE, 4096);
	ws_sgl1(&s, 0x10000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "data-block");

	/* Dword granularity: aligned (valid) and misaligned (Granularity Invalid). */
	ws_init(&s, SGL_DWORD, 4096);
	ws_sgl1(&s, 0x10000004, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "data-block-dword");
	ws_init(&s, SGL_DWORD, 4096);
	ws_sgl1(&s, 0x10000002, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "data-block-dword-misaligned");

	/* A Last Segment to three Data Blocks (one pair contiguous: merged). */
	ws_init(&s, SGL_BYTE, 4096);
	ws_sgl1(&s, FZ_BUS_A, 48, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, FZ_BUS_A + 0, 0x20000000, 512, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_A + 16, 0x20000200, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_A + 32, 0x30000000, 2560, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "last-segment-3-data");

	/* The same with dword rules and the MSGL PSDT value. */
	s.hdr[FZ_WH_FLAGS] = (uint8_t)(SGL_DWORD | PSDT_MSGL);
	ws_write(&s, "corpus", t, "last-segment-3-data-dword-msgl");

	/* Segment -> Segment -> Last Segment, at the segment limits (3 descriptors, 3 segments). */
	ws_init(&s, SGL_BYTE, 6 * 1024);
	s.hdr[FZ_WH_SEG_MAX] = 3;
	s.hdr[FZ_WH_MAX_SEGS] = 3;
	bus = FZ_BUS_A;
	ws_sgl1(&s, bus, 48, GIO_SGL_TYPE_SEGMENT);
	ws_desc(&s, bus + 0, 0x20000000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, bus + 16, 0x20010000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, bus + 32, bus + 0x100, 48, GIO_SGL_TYPE_SEGMENT);
	ws_desc(&s, bus + 0x100, 0x20020000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, bus + 0x110, 0x20030000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, bus + 0x120, bus + 0x200, 32, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, bus + 0x200, 0x20040000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, bus + 0x210, 0x20050000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "chain-3-segments");

	/* A read through a Bit Bucket, and the same as a write (Type Invalid). */
	ws_init(&s, SGL_BYTE | FZ_F_BIT_BUCKET, 2048);
	ws_sgl1(&s, FZ_BUS_A, 48, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, FZ_BUS_A + 0, 0x20000000, 1024, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_A + 16, 0, 512, GIO_SGL_TYPE_BIT_BUCKET);
	ws_desc(&s, FZ_BUS_A + 32, 0x20001000, 512, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "bit-bucket-read");
	s.hdr[FZ_WH_FLAGS] |= FZ_F_WRITE;
	ws_write(&s, "corpus", t, "bit-bucket-write");

	/* Longer than the transfer: an excess descriptor, with and without Oversize. */
	ws_init(&s, SGL_NOISE | FZ_F_OVERSIZE, 4096);
	ws_sgl1(&s, FZ_BUS_A, 32, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, FZ_BUS_A + 0, 0x20000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_A + 16, 0x30000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "oversize-excess-descriptor");
	s.hdr[FZ_WH_FLAGS] = SGL_BYTE;
	ws_write(&s, "corpus", t, "excess-descriptor-no-oversize");

	/* Zero-length descriptors are skipped. */
	ws_init(&s, SGL_BYTE, 512);
	ws_sgl1(&s, FZ_BUS_A, 32, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, FZ_BUS_A + 0, 0x20000000, 0, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_A + 16, 0x20000000, 512, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "zero-length-skipped");

	/* A segment in region B, which straddles a 2 MiB boundary. */
	ws_init(&s, SGL_BYTE, 8192);
	ws_region_b(&s, 0);
	ws_sgl1(&s, FZ_BUS_B_STRADDLE + 0x20, 32, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_desc(&s, FZ_BUS_B_STRADDLE + 0x20, 0x20000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_desc(&s, FZ_BUS_B_STRADDLE + 0x30, 0x20002000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "segment-in-region-b");

	/* A Segment whose only descriptor chains to itself: bounded by max_segments. */
	ws_init(&s, SGL_BYTE, 4096);
	s.hdr[FZ_WH_MAX_SEGS] = 8;
	ws_sgl1(&s, FZ_BUS_A, 16, GIO_SGL_TYPE_SEGMENT);
	ws_desc(&s, FZ_BUS_A, FZ_BUS_A, 16, GIO_SGL_TYPE_SEGMENT);
	ws_write(&s, "corpus", t, "segment-loop");

	/* A Last Segment outside registered memory (Data Transfer Error). */
	ws_init(&s, SGL_BYTE, 4096);
	ws_sgl1(&s, 0x900000, 32, GIO_SGL_TYPE_LAST_SEGMENT);
	ws_write(&s, "corpus", t, "segment-unregistered");

	/* Descriptor types and sub types giouring refuses. */
	ws_init(&s, SGL_BYTE, 4096);
	ws_sgl1(&s, 0x10000000, 4096, GIO_SGL_TYPE_KEYED_DATA_BLOCK);
	ws_write(&s, "corpus", t, "keyed-data-block");
	ws_init(&s, SGL_BYTE, 4096);
	desc_bytes(s.sqe + 24, 0x10000000, 4096, GIO_SGL_TYPE_DATA_BLOCK, GIO_SGL_SUBTYPE_OFFSET);
	ws_write(&s, "corpus", t, "offset-subtype");

	/* PSDT left as in the SQE (00b: PRPs) and SGLs unsupported: Invalid Field. */
	ws_init(&s, SGL_BYTE | PSDT_RAW, 4096);
	ws_sgl1(&s, 0x10000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "psdt-prp");
	ws_init(&s, SGL_NONE, 4096);
	ws_sgl1(&s, 0x10000000, 4096, GIO_SGL_TYPE_DATA_BLOCK);
	ws_write(&s, "corpus", t, "sgl-unsupported");
}

#define PG_4K 0u /* fz_page selectors */
#define PG_8K 1u
#define PG_64K 3u
#define PG_2K_INVALID 6u

static void prp_walk_seeds(void)
{
	const char *t = "fuzz_prp_walk";
	struct walk_seed s;
	uint64_t k;

	/* One page, with and without an offset; two pages; three pages through a list. */
	ws_init(&s, PG_4K, 4096);
	ws_prp(&s, 0x10000000, 0);
	ws_write(&s, "corpus", t, "one-page");
	ws_init(&s, PG_4K, 2048);
	ws_prp(&s, 0x10000800, 0);
	ws_write(&s, "corpus", t, "one-page-offset");
	ws_init(&s, PG_4K, 8192);
	ws_prp(&s, 0x10000000, 0x20000000);
	ws_write(&s, "corpus", t, "two-pages");
	ws_init(&s, PG_4K, 4096);
	ws_prp(&s, 0x10000f00, 0x20000000);
	ws_write(&s, "corpus", t, "two-pages-offset");
	ws_init(&s, PG_4K, 3 * 4096);
	ws_prp(&s, 0x10000000, FZ_BUS_A);
	ws_entry(&s, FZ_BUS_A + 0, 0x20000000);
	ws_entry(&s, FZ_BUS_A + 8, 0x30000000);
	ws_write(&s, "corpus", t, "three-pages-list");

	/* A list that starts at an offset in its page; contiguous pages merge. */
	ws_init(&s, PG_4K, 4 * 4096 + 100);
	ws_prp(&s, 0x10000000, FZ_BUS_A + 0x18);
	for (k = 0; k < 4; k++)
		ws_entry(&s, FZ_BUS_A + 0x18 + 8 * k, 0x10001000 + 4096 * k);
	ws_write(&s, "corpus", t, "list-offset-contiguous");

	/* A list chained across two list pages (page 4096): PRP2 points 16 bytes before the end of
	 * its list page, so that page holds one entry and the chain pointer; the next list page
	 * starts at 0x200000 with three entries. Region B (0x1fffc0) holds both. */
	ws_init(&s, PG_4K, 5 * 4096);
	ws_region_b(&s, 0);
	ws_prp(&s, 0x10000000, 0x1ffff0);
	ws_entry(&s, 0x1ffff0, 0x20000000);
	ws_entry(&s, 0x1ffff8, 0x200000); /* chain */
	ws_entry(&s, 0x200000, 0x21000000);
	ws_entry(&s, 0x200008, 0x22000000);
	ws_entry(&s, 0x200010, 0x23000000);
	ws_write(&s, "corpus", t, "chained-list-4096");

	/* Larger pages. */
	ws_init(&s, PG_8K, 3 * 8192);
	ws_prp(&s, 0x10000000, FZ_BUS_A);
	ws_entry(&s, FZ_BUS_A + 0, 0x20000000);
	ws_entry(&s, FZ_BUS_A + 8, 0x20002000);
	ws_write(&s, "corpus", t, "page-8192-list");
	ws_init(&s, PG_64K, 65536 + 4096);
	ws_prp(&s, 0x10000000, 0x20000000);
	ws_write(&s, "corpus", t, "page-65536-two-pages");

	/* Malformed: PRP2 with an offset, a list entry with an offset, a list outside registered
	 * memory, an invalid page size, more pages than the output list holds. */
	ws_init(&s, PG_4K, 8192);
	ws_prp(&s, 0x10000000, 0x20000010);
	ws_write(&s, "corpus", t, "prp2-offset");
	ws_init(&s, PG_4K, 3 * 4096);
	ws_prp(&s, 0x10000000, FZ_BUS_A);
	ws_entry(&s, FZ_BUS_A + 0, 0x20000000);
	ws_entry(&s, FZ_BUS_A + 8, 0x30000200);
	ws_write(&s, "corpus", t, "list-entry-offset");
	ws_init(&s, PG_4K, 3 * 4096);
	ws_prp(&s, 0x10000000, 0x900000);
	ws_write(&s, "corpus", t, "list-unregistered");
	ws_init(&s, PG_2K_INVALID, 4096);
	ws_prp(&s, 0x10000000, 0);
	ws_write(&s, "corpus", t, "page-size-invalid");
	ws_init(&s, PG_4K, 4 * 4096);
	s.hdr[FZ_WH_CAP] = 1; /* two segments */
	ws_prp(&s, 0x10000000, FZ_BUS_A);
	ws_entry(&s, FZ_BUS_A + 0, 0x20000000);
	ws_entry(&s, FZ_BUS_A + 8, 0x30000000);
	ws_entry(&s, FZ_BUS_A + 16, 0x40000000);
	ws_write(&s, "corpus", t, "output-list-full");

	/* Regression: PRP1 in the top page and PRP2 page 0 (two pages): the walker merged them
	 * into one segment that wraps past 2^64. */
	ws_init(&s, PG_4K, 8192);
	ws_prp(&s, 0xfffffffffffff000ull, 0);
	ws_write(&s, "regressions", t, "wrap-merge-top-page");
}

/* ------------------------------------------------------------------------- */
/* Roundtrip inputs                                                          */
/* ------------------------------------------------------------------------- */

struct rt_seed {
	uint8_t b[1024];
	size_t n;
};

static void rs_u8(struct rt_seed *s, uint8_t v)
{
	if (s->n >= sizeof(s->b))
		exit(1);
	s->b[s->n++] = v;
}

static void rs_u16(struct rt_seed *s, uint16_t v)
{
	rs_u8(s, (uint8_t)v);
	rs_u8(s, (uint8_t)(v >> 8));
}

static void rs_u32(struct rt_seed *s, uint32_t v)
{
	rs_u16(s, (uint16_t)v);
	rs_u16(s, (uint16_t)(v >> 16));
}

static void rs_u64(struct rt_seed *s, uint64_t v)
{
	rs_u32(s, (uint32_t)v);
	rs_u32(s, (uint32_t)(v >> 32));
}

/* Header; count is the number of ranges (1..64). */
static void rs_init(struct rt_seed *s, uint8_t flags, uint8_t seg_max, uint8_t max_segs, uint8_t page,
		    uint8_t max_xfer, uint8_t mem, uint8_t short_sel, unsigned count)
{
	s->n = 0;
	rs_u8(s, flags);
	rs_u8(s, seg_max);
	rs_u8(s, max_segs);
	rs_u8(s, page);
	rs_u8(s, max_xfer);
	rs_u8(s, mem);
	rs_u8(s, short_sel);
	rs_u8(s, (uint8_t)(count - 1u));
}

#define NOLIM 0x80u

static void roundtrip_seeds(void)
{
	const char *t = "fuzz_dptr_roundtrip";
	struct rt_seed s;
	unsigned i;

	/* One page-sized range: one Data Block; PRP1 only. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_PAGES));
	rs_u8(&s, 0);
	write_file("corpus", t, "one-range", s.b, s.n);

	/* Three adjacent ranges: coalesced into one Data Block; one PRP page. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 3);
	for (i = 0; i < 3; i++) {
		rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_SMALL));
		rs_u8(&s, 0xff);
	}
	write_file("corpus", t, "adjacent-ranges", s.b, s.n);

	/* Page-aligned ranges with gaps: a Last Segment of four; a PRP list. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 4);
	for (i = 0; i < 4; i++) {
		rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_PAGES));
		rs_u8(&s, (uint8_t)i);
		rs_u8(&s, 1);
	}
	write_file("corpus", t, "page-aligned-gaps", s.b, s.n);

	/* The first range starts inside a page (PRP1 offset) and ends on a boundary. */
	rs_init(&s, SGL_DWORD, NOLIM, NOLIM, PG_4K, 0, 0, 0, 3);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS, FZ_RL_TO_PAGE));
	rs_u64(&s, 0x40000200);
	rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_MULTI_PAGE));
	rs_u8(&s, 3);
	rs_u16(&s, 2);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS_PAGE, FZ_RL_U16));
	rs_u32(&s, 0x90000);
	rs_u16(&s, 1999); /* 2000 bytes: the last range may end anywhere */
	write_file("corpus", t, "prp1-offset-dword", s.b, s.n);

	/* Ten separate ranges, four descriptors per segment: a chain of three segments. */
	rs_init(&s, SGL_BYTE, 4, NOLIM, PG_4K, 0, 0, 0, 10);
	for (i = 0; i < 10; i++) {
		rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_PAGES));
		rs_u8(&s, 0);
		rs_u8(&s, 0);
	}
	write_file("corpus", t, "chained-sgl", s.b, s.n);

	/* 64 ranges, a mix of adjacent and separate; page 8192. */
	rs_init(&s, SGL_BYTE | FZ_F_BIT_BUCKET | FZ_F_OVERSIZE, 16, 8, PG_8K, 0, 0, 0, 64);
	for (i = 0; i < 64; i++) {
		rs_u8(&s, FZ_R_OP(i % 3 ? FZ_RA_ADJ : FZ_RA_PAGE_GAP, FZ_RL_PAGES));
		if (i % 3 == 0)
			rs_u8(&s, (uint8_t)i);
		rs_u8(&s, 0);
	}
	write_file("corpus", t, "64-ranges-page-8192", s.b, s.n);

	/* Two adjacent ranges that together just fit one descriptor (0xfffff000 bytes... less 4 KiB
	 * each: 2 x 0x7ffff000). */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 2);
	rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_2G));
	rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_2G));
	write_file("corpus", t, "two-2g-ranges", s.b, s.n);

	/* Errors: over MDTS (E2BIG), short memory (ENOSPC), NULL and misaligned memory (EINVAL),
	 * SGLs unsupported (EOPNOTSUPP), a gap PRPs cannot express, an empty range. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 13 /* 8 KiB */, 0, 0, 3);
	for (i = 0; i < 3; i++) {
		rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_PAGES));
		rs_u8(&s, 0);
		rs_u8(&s, 0);
	}
	write_file("corpus", t, "over-max-xfer", s.b, s.n);
	s.b[FZ_RH_MAX_XFER] = 0;
	s.b[FZ_RH_MEM] = FZ_MEM_SHORT | (FZ_MEM_SHORT << 2);
	s.b[FZ_RH_SHORT] = 1; /* 8 bytes of segments and of list: each needs more */
	write_file("corpus", t, "short-memory", s.b, s.n);
	s.b[FZ_RH_MEM] = FZ_MEM_NULL | (FZ_MEM_MISALIGN << 2);
	write_file("corpus", t, "null-and-misaligned-memory", s.b, s.n);
	s.b[FZ_RH_MEM] = FZ_MEM_MISALIGN | (FZ_MEM_NULL << 2);
	s.b[FZ_RH_FLAGS] = SGL_NONE;
	write_file("corpus", t, "sgl-unsupported", s.b, s.n);

	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 2);
	rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_SMALL));
	rs_u8(&s, 99);
	rs_u8(&s, FZ_R_OP(FZ_RA_GAP, FZ_RL_SMALL));
	rs_u8(&s, 16);
	rs_u8(&s, 99);
	write_file("corpus", t, "gap-not-prp-expressible", s.b, s.n);

	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 2);
	rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_PAGES));
	rs_u8(&s, 0);
	rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_RAW));
	rs_u8(&s, 0);
	rs_u32(&s, 0);
	write_file("corpus", t, "empty-range", s.b, s.n);

	/* PRP lists that start inside their page (FZ_LO_*). A Llama3-8B object (32 KiB, 7 list
	 * entries) with its list in the second 256-byte chunk of a page. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, FZ_LO_256 << FZ_LO_SHIFT, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS_PAGE, FZ_RL_PAGES));
	rs_u32(&s, 0x100);
	rs_u8(&s, 7);
	write_file("corpus", t, "prp-list-offset-256", s.b, s.n);

	/* 128 KiB from 0x200 into a page: 33 pages, 32 entries ending exactly at the page end. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, FZ_LO_END_AT_PAGE << FZ_LO_SHIFT, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS, FZ_RL_RAW));
	rs_u64(&s, 0x40000200);
	rs_u32(&s, 128u << 10);
	write_file("corpus", t, "prp-list-ends-at-page-end", s.b, s.n);

	/* The same one slot short (chain after 30 entries), and 34 pages from the last chunk of
	 * the page (31 entries, the chain, 2 more), and 3 pages from the page's last slot (only the
	 * chain pointer there). */
	s.b[FZ_RH_MEM] = FZ_LO_ONE_SHORT << FZ_LO_SHIFT;
	write_file("corpus", t, "prp-list-chains-one-short", s.b, s.n);
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, FZ_LO_LAST_CHUNK << FZ_LO_SHIFT, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS_PAGE, FZ_RL_PAGES));
	rs_u32(&s, 0x100);
	rs_u8(&s, 33);
	write_file("corpus", t, "prp-list-chains-from-last-chunk", s.b, s.n);
	s.b[FZ_RH_MEM] = FZ_LO_ONE_SLOT << FZ_LO_SHIFT;
	s.b[s.n - 1] = 2;
	write_file("corpus", t, "prp-list-one-slot", s.b, s.n);

	/* A chained list from an offset picked by byte 6 (8 x 100 = 800) on 8 KiB pages, and the
	 * same address made misaligned (+4: refused). */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_8K, 0, FZ_LO_SHORT_SEL << FZ_LO_SHIFT, 100, 2);
	rs_u8(&s, FZ_R_OP(FZ_RA_ABS_PAGE, FZ_RL_MULTI_PAGE));
	rs_u32(&s, 0x200);
	rs_u16(&s, 999);
	rs_u8(&s, FZ_R_OP(FZ_RA_PAGE_GAP, FZ_RL_PAGES));
	rs_u8(&s, 3);
	rs_u8(&s, 99);
	write_file("corpus", t, "prp-list-offset-chained-8k", s.b, s.n);
	s.b[FZ_RH_MEM] = (FZ_LO_SHORT_SEL << FZ_LO_SHIFT) | (FZ_MEM_MISALIGN << 2);
	write_file("corpus", t, "prp-list-offset-misaligned", s.b, s.n);

	/* Regression: three adjacent ranges of 0x7ffff000 bytes. Each neighbouring pair fits one
	 * descriptor, so gio_sgl_plan coalesced all three into one Data Block whose length
	 * (0x17fffd000) gio_sgl_build truncated to 32 bits. */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 3);
	for (i = 0; i < 3; i++)
		rs_u8(&s, FZ_R_OP(FZ_RA_ADJ, FZ_RL_2G));
	write_file("regressions", t, "sgl-coalesce-over-4g", s.b, s.n);

	/* Regression: one 4-byte range in the top page below 2^64. gio_prp_build's page step
	 * wraps to 0, which is below the range's end: the loop runs ~2^52 times (hang). */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_TOP, FZ_RL_SMALL));
	rs_u16(&s, 0);
	rs_u8(&s, 3);
	write_file("regressions", t, "prp-build-top-page-hang", s.b, s.n);

	/* Regression: the last three pages below 2^64 less one byte (a PRP list is needed): the
	 * same wrap makes gio_prp_build write list entries past the list (heap overflow). */
	rs_init(&s, SGL_BYTE, NOLIM, NOLIM, PG_4K, 0, 0, 0, 1);
	rs_u8(&s, FZ_R_OP(FZ_RA_TOP, FZ_RL_U16));
	rs_u16(&s, 2);
	rs_u16(&s, 3 * 4096 - 2);
	write_file("regressions", t, "prp-build-top-pages-overflow", s.b, s.n);
}

/* ------------------------------------------------------------------------- */
/* Software target inputs                                                    */
/* ------------------------------------------------------------------------- */

struct tc_seed {
	uint8_t h[FZ_TH_BYTES];
	uint8_t blob[1024]; /* region A at FZ_BUS_A */
	size_t blob_len;
	uint8_t ops[2800];
	size_t n;
};

#define Q(off) (FZ_TQ_BUS + (off)) /* bus address in the queue region */
#define TC_CID 0x100u              /* seeds number their commands from here */

/* Defaults: byte SGLs, small namespace of 64 blocks of 512 bytes, MDTS 0, four I/O queue
 * pairs, MQES 1023, canonical bring-up with 4 KiB pages and 16-entry admin queues. */
static void tc_init(struct tc_seed *s)
{
	memset(s, 0, sizeof(*s));
	s->h[FZ_TH_CFG] = SGL_BYTE | (FZ_TCFG_SMALL << FZ_TCFG_SHIFT);
	s->h[FZ_TH_MDTS] = 0;
	s->h[FZ_TH_LBA] = 0;                 /* 512-byte blocks */
	s->h[FZ_TH_NQ] = 3;                  /* 4 I/O queue pairs */
	fz_wr16(s->h + FZ_TH_MQES, 1023);
	fz_wr64(s->h + FZ_TH_NSZE, 63);      /* 64 blocks */
	s->h[FZ_TH_CC] = FZ_TCC_VALID;       /* MPS 0 */
	s->h[FZ_TH_ASQS] = 14;               /* 16 entries */
	s->h[FZ_TH_ACQS] = 14;
}

/* Bytes of region A (bus FZ_BUS_A + off). */
static void tc_put(struct tc_seed *s, uint64_t off, const uint8_t *p, size_t n)
{
	if (off + n > sizeof(s->blob)) {
		fprintf(stderr, "target seed: blob too small\n");
		exit(1);
	}
	memcpy(s->blob + off, p, n);
	if (off + n > s->blob_len)
		s->blob_len = (size_t)(off + n);
}

static void tc_bytes(struct tc_seed *s, const uint8_t *p, size_t n)
{
	if (s->n + n > sizeof(s->ops)) {
		fprintf(stderr, "target seed: too many ops\n");
		exit(1);
	}
	memcpy(s->ops + s->n, p, n);
	s->n += n;
}

static void tc_u8(struct tc_seed *s, uint8_t v)
{
	tc_bytes(s, &v, 1);
}

static void tc_u16(struct tc_seed *s, uint16_t v)
{
	uint8_t b[2];
	fz_wr16(b, v);
	tc_bytes(s, b, 2);
}

static void tc_write(struct tc_seed *s, const char *kind, const char *name)
{
	uint8_t buf[FZ_TH_BYTES + sizeof(s->blob) + sizeof(s->ops)];
	size_t n = 0;
	fz_wr16(s->h + FZ_TH_BLOB_LEN, (uint16_t)s->blob_len);
	memcpy(buf, s->h, FZ_TH_BYTES);
	n = FZ_TH_BYTES;
	memcpy(buf + n, s->blob, s->blob_len);
	n += s->blob_len;
	memcpy(buf + n, s->ops, s->n);
	n += s->n;
	write_file(kind, "fuzz_target_cmd", name, buf, n);
}

/* SQEs (64 bytes, wire layout). */
static void sqe_base(uint8_t *b, uint8_t opc, uint16_t cid, uint32_t nsid)
{
	memset(b, 0, GIO_SQE_BYTES);
	b[0] = opc;
	fz_wr16(b + 2, cid);
	fz_wr32(b + 4, nsid);
}

static void sqe_prp(uint8_t *b, uint64_t prp1, uint64_t prp2)
{
	b[1] = (uint8_t)(b[1] & 0x3fu);
	fz_wr64(b + 24, prp1);
	fz_wr64(b + 32, prp2);
}

static void sqe_sgl(uint8_t *b, uint64_t addr, uint32_t len, unsigned type)
{
	b[1] = (uint8_t)((b[1] & 0x3fu) | (GIO_PSDT_SGL_MPTR << 6));
	desc_bytes(b + 24, addr, len, type, GIO_SGL_SUBTYPE_ADDRESS);
}

static void sqe_identify(uint8_t *b, uint16_t cid, uint32_t cns, uint32_t nsid, uint64_t prp1, uint64_t prp2)
{
	sqe_base(b, GIO_ADMIN_OPC_IDENTIFY, cid, nsid);
	sqe_prp(b, prp1, prp2);
	fz_wr32(b + 40, cns);
}

/* Create I/O CQ (cqid_or_ien: IEN bit for a CQ) or SQ; physically contiguous unless pc == 0. */
static void sqe_create(uint8_t *b, uint16_t cid, int cq, uint16_t qid, uint32_t entries, uint64_t addr,
		       uint16_t cqid, int pc, int ien)
{
	sqe_base(b, cq ? GIO_ADMIN_OPC_CREATE_CQ : GIO_ADMIN_OPC_CREATE_SQ, cid, 0);
	sqe_prp(b, addr, 0);
	fz_wr32(b + 40, qid | ((entries - 1u) << 16));
	fz_wr32(b + 44, (pc ? 1u : 0u) | (ien ? 2u : 0u) | ((uint32_t)cqid << 16));
}

static void sqe_delete(uint8_t *b, uint16_t cid, int cq, uint16_t qid)
{
	sqe_base(b, cq ? GIO_ADMIN_OPC_DELETE_CQ : GIO_ADMIN_OPC_DELETE_SQ, cid, 0);
	fz_wr32(b + 40, qid);
}

static void sqe_features(uint8_t *b, uint16_t cid, int set, uint32_t fid, uint16_t nsq, uint16_t ncq)
{
	sqe_base(b, set ? GIO_ADMIN_OPC_SET_FEATURES : GIO_ADMIN_OPC_GET_FEATURES, cid, 0);
	fz_wr32(b + 40, fid);
	fz_wr32(b + 44, nsq | ((uint32_t)ncq << 16));
}

/* Read, Write, Write Zeroes, Flush (or any opcode): SLBA, NLB (1-based here). */
static void sqe_rw(uint8_t *b, uint8_t opc, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	sqe_base(b, opc, cid, nsid);
	fz_wr64(b + 40, slba);
	fz_wr32(b + 48, nlb - 1u);
}

/* Ops. */
static void op_admin(struct tc_seed *s, const uint8_t *sqe)
{
	tc_u8(s, FZ_TOP(FZ_TOP_ADMIN, 0));
	tc_bytes(s, sqe, GIO_SQE_BYTES);
}

static void op_io(struct tc_seed *s, uint8_t cap, const uint8_t *sqe)
{
	tc_u8(s, FZ_TOP(FZ_TOP_IO, 0));
	tc_u8(s, cap);
	tc_bytes(s, sqe, GIO_SQE_BYTES);
}

/* Admin (qsel < 0) or I/O ring: n SQEs, then doorbells and fetch/serve/post. */
static void op_ring(struct tc_seed *s, int qsel, uint8_t mode, uint16_t tail, uint16_t head, const uint8_t *sqes,
		    unsigned n)
{
	if (n > 7) {
		fprintf(stderr, "target seed: a ring op carries at most 7 SQEs\n");
		exit(1);
	}
	tc_u8(s, FZ_TOP(qsel < 0 ? FZ_TOP_ARING : FZ_TOP_IORING, n));
	if (qsel >= 0)
		tc_u8(s, (uint8_t)qsel);
	tc_u8(s, mode);
	tc_u16(s, tail);
	tc_u16(s, head);
	tc_bytes(s, sqes, (size_t)n * GIO_SQE_BYTES);
}

static void op_regs(struct tc_seed *s, uint8_t mode, uint32_t cc, uint32_t aqa, uint64_t asq, uint64_t acq)
{
	uint8_t pl[FZ_TREGS_PAYLOAD];
	tc_u8(s, FZ_TOP(FZ_TOP_REGS, 0));
	tc_u8(s, mode);
	fz_wr32(pl, cc);
	fz_wr32(pl + 4, aqa);
	fz_wr64(pl + 8, asq);
	fz_wr64(pl + 16, acq);
	tc_bytes(s, pl, sizeof(pl));
}

static void op_fetchq(struct tc_seed *s, uint16_t qid)
{
	tc_u8(s, FZ_TOP(FZ_TOP_FETCHQ, 0));
	tc_u16(s, qid);
}

#define RING_BATCH(b) ((uint8_t)((b) << FZ_TRING_BATCH_SHIFT))
#define RING_HEAD(h) ((uint8_t)((h) << FZ_TRING_HEAD_SHIFT))

/* Admin ring commands that set up I/O queue pair 1 (CQ at Q+0x2000, SQ at Q+0x3000, 16 entries). */
static unsigned setup_qp1(uint8_t *sq)
{
	sqe_features(sq + 0 * GIO_SQE_BYTES, TC_CID + 0, 1, GIO_FEAT_NUM_QUEUES, 3, 3);
	sqe_create(sq + 1 * GIO_SQE_BYTES, TC_CID + 1, 1, 1, 16, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 2 * GIO_SQE_BYTES, TC_CID + 2, 0, 1, 16, Q(0x3000), 1, 1, 0);
	return 3;
}

static void target_seeds(void)
{
	uint8_t sq[8 * GIO_SQE_BYTES], e[16];
	struct tc_seed s;
	unsigned n, i;

	/* Identify through the admin ring: controller, namespace, active list, bad NSID. */
	tc_init(&s);
	sqe_identify(sq, TC_CID, GIO_CNS_CTRL, 0, Q(0x4000), 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	tc_write(&s, "corpus", "identify-ctrl");
	tc_init(&s);
	sqe_identify(sq, TC_CID, GIO_CNS_NS, 1, Q(0x4000), 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	tc_write(&s, "corpus", "identify-ns");
	tc_init(&s);
	sqe_identify(sq, TC_CID, GIO_CNS_NS_ACTIVE_LIST, 0, Q(0x4000), 0);
	sqe_identify(sq + GIO_SQE_BYTES, TC_CID + 1, GIO_CNS_NS_ACTIVE_LIST, 1, Q(0x5000), 0);
	op_ring(&s, -1, 0, 0, 0, sq, 2);
	tc_write(&s, "corpus", "identify-active-list");
	tc_init(&s);
	sqe_identify(sq, TC_CID, GIO_CNS_NS, 2, Q(0x4000), 0);
	sqe_identify(sq + GIO_SQE_BYTES, TC_CID + 1, 3, 0, Q(0x4000), 0); /* CNS 3: Invalid Field */
	op_ring(&s, -1, 0, 0, 0, sq, 2);
	tc_write(&s, "corpus", "identify-bad-nsid-cns");

	/* Identify with 8 KiB pages: PRP1 at an offset, PRP2 for the rest; PRP2 misaligned;
	 * data outside registered memory; SGL PSDT (admin data uses PRPs only). */
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_VALID | (1u << FZ_TCC_MPS_SHIFT);
	sqe_identify(sq, TC_CID, GIO_CNS_CTRL, 0, Q(0x4800 + 0x1000), Q(0x6000));
	sqe_identify(sq + GIO_SQE_BYTES, TC_CID + 1, GIO_CNS_CTRL, 0, Q(0x5800), Q(0x6100));
	sqe_identify(sq + 2 * GIO_SQE_BYTES, TC_CID + 2, GIO_CNS_NS, 1, 0x90000000ull, 0);
	sqe_identify(sq + 3 * GIO_SQE_BYTES, TC_CID + 3, GIO_CNS_NS, 1, Q(0x4000), 0);
	sq[3 * GIO_SQE_BYTES + 1] = GIO_PSDT_SGL_MPTR << 6;
	op_ring(&s, -1, RING_BATCH(2), 0, 0, sq, 4);
	tc_write(&s, "corpus", "identify-prp-page-8192");

	/* Number of Queues, create CQ and SQ, then I/O through queue pair 1. */
	tc_init(&s);
	n = setup_qp1(sq);
	sqe_features(sq + n * GIO_SQE_BYTES, TC_CID + n, 0, GIO_FEAT_NUM_QUEUES, 0, 0);
	n++;
	op_ring(&s, -1, 0, 0, 0, sq, n);
	sqe_rw(sq, GIO_NVM_OPC_WRITE, 1, 1, 0, 2);
	sqe_prp(sq, Q(0x4000), 0);
	sqe_rw(sq + GIO_SQE_BYTES, GIO_NVM_OPC_READ, 2, 1, 0, 8);
	sqe_prp(sq + GIO_SQE_BYTES, Q(0x5000), 0);
	sqe_rw(sq + 2 * GIO_SQE_BYTES, GIO_NVM_OPC_WRITE_ZEROES, 3, 1, 4, 4);
	sqe_rw(sq + 3 * GIO_SQE_BYTES, GIO_NVM_OPC_FLUSH, 4, 1, 0, 1);
	op_ring(&s, 0, RING_BATCH(2) | FZ_TRING_REVERSE, 0, 0, sq, 4);
	tc_write(&s, "corpus", "create-cq-sq-io-ring");

	/* Delete in the wrong order (CQ first: Invalid Queue Deletion), then the right one. */
	tc_init(&s);
	n = setup_qp1(sq);
	sqe_delete(sq + 3 * GIO_SQE_BYTES, TC_CID + 3, 1, 1);
	sqe_delete(sq + 4 * GIO_SQE_BYTES, TC_CID + 4, 0, 1);
	sqe_delete(sq + 5 * GIO_SQE_BYTES, TC_CID + 5, 1, 1);
	sqe_delete(sq + 6 * GIO_SQE_BYTES, TC_CID + 6, 1, 1); /* no longer exists */
	op_ring(&s, -1, 0, 0, 0, sq, 7);
	tc_write(&s, "corpus", "delete-wrong-order");

	/* Create errors: SQ on a missing CQ, QID 0, QID above the grant, size 1, above MQES, not
	 * contiguous, interrupts, misaligned and unregistered memory; a second Set Features. */
	tc_init(&s);
	fz_wr16(s.h + FZ_TH_MQES, 63);
	sqe_create(sq, TC_CID, 0, 1, 16, Q(0x3000), 2, 1, 0);
	sqe_create(sq + 1 * GIO_SQE_BYTES, TC_CID + 1, 1, 0, 16, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 2 * GIO_SQE_BYTES, TC_CID + 2, 1, 5, 16, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 3 * GIO_SQE_BYTES, TC_CID + 3, 1, 1, 1, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 4 * GIO_SQE_BYTES, TC_CID + 4, 1, 1, 65, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 5 * GIO_SQE_BYTES, TC_CID + 5, 1, 1, 16, Q(0x2000), 0, 0, 0);
	sqe_create(sq + 6 * GIO_SQE_BYTES, TC_CID + 6, 1, 1, 16, Q(0x2000), 0, 1, 1);
	op_ring(&s, -1, RING_BATCH(3), 0, 0, sq, 7);
	sqe_create(sq, TC_CID + 7, 1, 1, 16, Q(0x2010), 0, 1, 0);
	sqe_create(sq + 1 * GIO_SQE_BYTES, TC_CID + 8, 1, 1, 16, 0x90000000ull, 0, 1, 0);
	sqe_create(sq + 2 * GIO_SQE_BYTES, TC_CID + 9, 1, 2, 16, Q(0x7000), 0, 1, 0);
	sqe_features(sq + 3 * GIO_SQE_BYTES, TC_CID + 10, 1, GIO_FEAT_NUM_QUEUES, 0, 0);
	sqe_features(sq + 4 * GIO_SQE_BYTES, TC_CID + 11, 1, 0x08, 0, 0); /* another feature */
	sqe_create(sq + 5 * GIO_SQE_BYTES, TC_CID + 12, 0, 1, 16, Q(0x3000), 0, 1, 0); /* CQID 0 */
	sqe_delete(sq + 6 * GIO_SQE_BYTES, TC_CID + 13, 0, 0);                         /* QID 0 */
	op_ring(&s, -1, 0, 0, 0, sq, 7);
	tc_write(&s, "corpus", "create-errors");

	/* Number of Queues: Get before any Set (the configured count), a grant of 2 (Set NCQ 1),
	 * 0xffff (reserved), creates above the grant, a CQID above 64, creating a live queue
	 * again, and Set Features once queues exist (Command Sequence Error). */
	tc_init(&s);
	sqe_features(sq + 0 * GIO_SQE_BYTES, TC_CID + 0, 0, GIO_FEAT_NUM_QUEUES, 0, 0);
	sqe_features(sq + 1 * GIO_SQE_BYTES, TC_CID + 1, 1, GIO_FEAT_NUM_QUEUES, 0xffff, 0);
	sqe_features(sq + 2 * GIO_SQE_BYTES, TC_CID + 2, 1, GIO_FEAT_NUM_QUEUES, 0, 1);
	sqe_create(sq + 3 * GIO_SQE_BYTES, TC_CID + 3, 1, 3, 16, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 4 * GIO_SQE_BYTES, TC_CID + 4, 1, 2, 16, Q(0x2000), 0, 1, 0);
	sqe_create(sq + 5 * GIO_SQE_BYTES, TC_CID + 5, 1, 2, 16, Q(0x2000), 0, 1, 0); /* again */
	sqe_create(sq + 6 * GIO_SQE_BYTES, TC_CID + 6, 0, 1, 16, Q(0x3000), 100, 1, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 7);
	sqe_features(sq, TC_CID + 7, 1, GIO_FEAT_NUM_QUEUES, 3, 3);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	sqe_create(sq, TC_CID + 8, 0, 2, 16, Q(0x3000), 2, 1, 0);
	sqe_create(sq + 1 * GIO_SQE_BYTES, TC_CID + 9, 0, 1, 16, Q(0x3400), 2, 1, 0); /* 2 SQs, 1 CQ */
	sqe_create(sq + 2 * GIO_SQE_BYTES, TC_CID + 10, 0, 1, 16, Q(0x3800), 2, 1, 0); /* again */
	sqe_features(sq + 3 * GIO_SQE_BYTES, TC_CID + 11, 0, GIO_FEAT_NUM_QUEUES, 0, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 4);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0, 1);
	sqe_prp(sq, Q(0x4000), 0);
	sqe_rw(sq + GIO_SQE_BYTES, GIO_NVM_OPC_WRITE, 2, 1, 1, 1);
	sqe_prp(sq + GIO_SQE_BYTES, Q(0x4000), 0);
	op_ring(&s, 0, 0, 0, 0, sq, 2);
	op_ring(&s, 1, 0, 0, 0, sq, 2);
	tc_write(&s, "corpus", "queue-grant");

	/* Abort, Keep Alive, a fused command, an unknown opcode, sent directly. */
	tc_init(&s);
	sqe_base(sq, GIO_ADMIN_OPC_ABORT, TC_CID, 0);
	op_admin(&s, sq);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID + 1, 0);
	op_admin(&s, sq);
	sq[1] = 1; /* fused */
	op_admin(&s, sq);
	sqe_base(sq, GIO_ADMIN_OPC_GET_LOG_PAGE, TC_CID + 2, 0);
	op_admin(&s, sq);
	tc_write(&s, "corpus", "admin-misc");

	/* I/O checks, sent directly: Read with an SGL Data Block; Read with a PRP list in region
	 * A (4 KiB blocks); Write then Read back; Write Zeroes; Flush. */
	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 2, 2);
	sqe_sgl(sq, Q(0x4000), 1024, GIO_SGL_TYPE_DATA_BLOCK);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "read-sgl-data-block");

	tc_init(&s);
	s.h[FZ_TH_LBA] = 3; /* 4 KiB blocks */
	fz_wr64(s.h + FZ_TH_NSZE, 15);
	fz_wr64(e, Q(0x5000));
	tc_put(&s, 0, e, 8);
	fz_wr64(e, Q(0x6000));
	tc_put(&s, 8, e, 8);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 1, 3);
	sqe_prp(sq, Q(0x4000), FZ_BUS_A);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "read-prp-list");

	tc_init(&s);
	for (i = 0; i < 1024; i++) { /* 1 KiB of write data at the start of region A */
		e[0] = (uint8_t)(0xc0 + i * 7u);
		tc_put(&s, i, e, 1);
	}
	sqe_rw(sq, GIO_NVM_OPC_WRITE, 1, 1, 10, 2);
	sqe_prp(sq, FZ_BUS_A, 0);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_READ, 2, 1, 10, 2);
	sqe_prp(sq, Q(0x4100), 0);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_WRITE_ZEROES, 3, 1, 11, 1);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_READ, 4, 1, 10, 2);
	sqe_sgl(sq, Q(0x4400), 1024, GIO_SGL_TYPE_DATA_BLOCK);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "write-read-back");

	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_WRITE_ZEROES, 1, 1, 0, 64);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "write-zeroes");
	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_FLUSH, 1, 1, 0, 1);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_FLUSH, 2, 0xffffffffu, 0, 1);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_FLUSH, 3, 2, 0, 1);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "flush");

	/* Refusals: LBA out of range (by one), bad opcode (Compare), bad NSID, MDTS exceeded (MDTS 1:
	 * 8 KiB, a 16 KiB read), fused, an output list of one segment for two pages. */
	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 63, 2);
	sqe_prp(sq, Q(0x4000), 0);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_WRITE_ZEROES, 2, 1, 64, 1);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "lba-out-of-range");
	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_COMPARE, 1, 1, 0, 1);
	sqe_prp(sq, Q(0x4000), 0);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "bad-opcode");
	tc_init(&s);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 2, 0, 1);
	sqe_prp(sq, Q(0x4000), 0);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "bad-nsid");
	tc_init(&s);
	s.h[FZ_TH_MDTS] = 1;
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0, 32);
	sqe_prp(sq, Q(0x4000), FZ_BUS_A);
	fz_wr64(e, Q(0x5000));
	tc_put(&s, 0, e, 8);
	fz_wr64(e, Q(0x6000));
	tc_put(&s, 8, e, 8);
	fz_wr64(e, Q(0x7000));
	tc_put(&s, 16, e, 8);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_READ, 2, 1, 0, 16); /* exactly 8 KiB: allowed */
	sqe_prp(sq, Q(0x4000), Q(0x5000));
	op_io(&s, 0, sq);
	op_io(&s, 1, sq); /* two pages, one segment of room */
	sq[1] = 1;        /* fused */
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "mdts-exceeded");

	/* SGL rules through the target: a Last Segment in region A with a Bit Bucket (read), the
	 * same as a write, dword granularity, SGLs unsupported. */
	tc_init(&s);
	s.h[FZ_TH_CFG] = SGL_BYTE | FZ_F_BIT_BUCKET;
	desc_bytes(e, Q(0x4000), 512, GIO_SGL_TYPE_DATA_BLOCK, 0);
	tc_put(&s, 0, e, 16);
	desc_bytes(e, 0, 256, GIO_SGL_TYPE_BIT_BUCKET, 0);
	tc_put(&s, 16, e, 16);
	desc_bytes(e, Q(0x5000), 256, GIO_SGL_TYPE_DATA_BLOCK, 0);
	tc_put(&s, 32, e, 16);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 4, 2);
	sqe_sgl(sq, FZ_BUS_A, 48, GIO_SGL_TYPE_LAST_SEGMENT);
	op_io(&s, 0, sq);
	sq[0] = GIO_NVM_OPC_WRITE;
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "sgl-bit-bucket");
	tc_init(&s);
	s.h[FZ_TH_CFG] = SGL_DWORD;
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0, 1);
	sqe_sgl(sq, Q(0x4002), 512, GIO_SGL_TYPE_DATA_BLOCK);
	op_io(&s, 0, sq);
	s.h[FZ_TH_CFG] = SGL_NONE;
	tc_write(&s, "corpus", "sgl-unsupported");
	s.h[FZ_TH_CFG] = SGL_DWORD;
	tc_write(&s, "corpus", "sgl-dword-misaligned");

	/* Rings: a 4-entry admin queue pair served past several wraps (phase toggles); a CQ left
	 * unconsumed until full; a tail doorbell beyond the queue; batches. */
	tc_init(&s);
	s.h[FZ_TH_ASQS] = 2; /* 4 entries */
	s.h[FZ_TH_ACQS] = 2;
	for (i = 0; i < 3; i++)
		sqe_base(sq + i * GIO_SQE_BYTES, GIO_ADMIN_OPC_KEEP_ALIVE, (uint16_t)(TC_CID + i), 0);
	for (i = 0; i < 4; i++)
		op_ring(&s, -1, RING_BATCH(i & 3), 0, 0, sq, 3);
	op_ring(&s, -1, RING_HEAD(FZ_TRING_HEAD_KEEP), 0, 0, sq, 3);
	op_ring(&s, -1, RING_HEAD(FZ_TRING_HEAD_BEHIND), 0, 1, sq, 0);
	op_ring(&s, -1, FZ_TRING_TAIL_RAW, 4, 0, sq, 1); /* tail doorbell = depth: bad */
	op_ring(&s, -1, FZ_TRING_TAIL_MOD, 3, 0, sq, 0);
	tc_write(&s, "corpus", "admin-ring-wrap");

	/* Bring-up failures (CSTS.CFS): MPS above MPSMAX, IOSQES, IOCQES, CSS, misaligned ASQ,
	 * unregistered ACQ, a 1-entry admin CQ, raw registers; then a canonical enable. */
	{
		static const struct {
			uint8_t cc, asqs, acqs;
			const char *name;
		} bad[] = {
			{FZ_TCC_BAD_MPS, 14, 14, "bringup-bad-mps"},
			{FZ_TCC_BAD_IOSQES, 14, 14, "bringup-bad-iosqes"},
			{FZ_TCC_BAD_IOCQES, 14, 14, "bringup-bad-iocqes"},
			{FZ_TCC_BAD_CSS, 14, 14, "bringup-bad-css"},
			{FZ_TCC_ASQ_MISALIGN, 14, 14, "bringup-asq-misaligned"},
			{FZ_TCC_ACQ_UNREG, 14, 14, "bringup-acq-unregistered"},
			{FZ_TCC_VALID, 14, 0xff, "bringup-acq-one-entry"},
		};
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			tc_init(&s);
			s.h[FZ_TH_CC] = bad[i].cc;
			s.h[FZ_TH_ASQS] = bad[i].asqs;
			s.h[FZ_TH_ACQS] = bad[i].acqs;
			sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
			op_ring(&s, -1, 0, 0, 0, sq, 1); /* no admin queue: -ENODEV */
			op_regs(&s, FZ_TREGS_DISABLE, 0, 0, 0, 0);
			op_regs(&s, FZ_TREGS_ENABLE, 0, 0, 0, 0);
			op_ring(&s, -1, 0, 0, 0, sq, 1);
			tc_write(&s, "corpus", bad[i].name);
		}
	}
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_RAW;
	fz_wr32(s.h + FZ_TH_RAW_CC, fz_tgt_cc(0));
	fz_wr32(s.h + FZ_TH_RAW_AQA, 15u | (15u << 16));
	fz_wr64(s.h + FZ_TH_RAW_ASQ, Q(0x1000));
	fz_wr64(s.h + FZ_TH_RAW_ACQ, Q(0));
	sqe_identify(sq, TC_CID, GIO_CNS_NS, 1, Q(0x4000), 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	/* CC rewritten with EN still 1 (MPS changed): no transition, nothing happens. */
	op_regs(&s, FZ_TREGS_RAW_ALL, fz_tgt_cc(1), 0, Q(0x2000), Q(0x3000));
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	tc_write(&s, "corpus", "bringup-raw");
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_ACQ_IN_A;
	s.h[FZ_TH_ACQS] = 6; /* 8 entries: 128 bytes of region A */
	memset(e, 0, sizeof(e));
	for (i = 0; i < 8; i++)
		tc_put(&s, i * 16u, e, 16);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	tc_write(&s, "corpus", "bringup-acq-in-region-a");

	/* Controller stays disabled until a REGS op enables it; then shutdowns. */
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_NONE;
	sqe_identify(sq, TC_CID, GIO_CNS_CTRL, 0, Q(0x4000), 0);
	op_admin(&s, sq); /* skipped: no admin queue */
	op_regs(&s, FZ_TREGS_ENABLE | (2u << 4), 0, 0, 0, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	op_regs(&s, FZ_TREGS_SHN_NORMAL, 0, 0, 0, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	op_regs(&s, FZ_TREGS_SHN_ABRUPT, 0, 0, 0, 0);
	op_regs(&s, FZ_TREGS_SHN_CLEAR, 0, 0, 0, 0);
	op_regs(&s, FZ_TREGS_POLL, 0, 0, 0, 0);
	tc_write(&s, "corpus", "enable-then-shutdown");

	/* Queues that do not exist. */
	tc_init(&s);
	op_fetchq(&s, 1);
	op_fetchq(&s, 1024); /* GIO_TGT_MAX_IO_QUEUES */
	op_ring(&s, 5, 0, 0, 0, sq, 0);
	tc_write(&s, "corpus", "fetch-missing-queue");

	/* Configurations: large namespace (LBA range at the top), 64 KiB blocks, raw valid and
	 * raw invalid (lba_shift 17). */
	tc_init(&s);
	s.h[FZ_TH_CFG] = SGL_BYTE | (FZ_TCFG_LARGE << FZ_TCFG_SHIFT);
	fz_wr64(s.h + FZ_TH_NSZE, 0xfffffffffffull);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0xfffffffffffull, 2);
	sqe_prp(sq, Q(0x4000), 0);
	op_io(&s, 0, sq);
	sqe_rw(sq, GIO_NVM_OPC_READ, 2, 1, 0, 2);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "large-namespace");
	tc_init(&s);
	s.h[FZ_TH_LBA] = 0x80u | (7u << 2); /* 64 KiB blocks */
	sqe_rw(sq, GIO_NVM_OPC_WRITE_ZEROES, 1, 1, 0, 1);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "block-64k");
	tc_init(&s);
	s.h[FZ_TH_CFG] = (uint8_t)(FZ_TCFG_RAW << FZ_TCFG_SHIFT);
	s.h[FZ_TH_MDTS] = 5;
	s.h[FZ_TH_LBA] = 12;
	s.h[FZ_TH_NQ] = 8;
	fz_wr16(s.h + FZ_TH_MQES, 255);
	fz_wr64(s.h + FZ_TH_NSZE, 16);
	fz_wr32(s.h + FZ_TH_SGLS, GIO_SGLS_SUPPORT_DWORD | GIO_SGLS_BIT_BUCKET);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0, 1);
	sqe_prp(sq, Q(0x4000), 0);
	op_io(&s, 0, sq);
	tc_write(&s, "corpus", "config-raw");
	s.h[FZ_TH_LBA] = 17;
	tc_write(&s, "corpus", "config-raw-invalid");

	/* Regressions: each reproduced a target.h bug (README.md, "Open findings"); a fixed
	 * header passes them. */

	/* MDTS 64 in a configuration gio_tgt_init accepts: 4096ull << 64 (undefined). */
	tc_init(&s);
	s.h[FZ_TH_CFG] = (uint8_t)(FZ_TCFG_RAW << FZ_TCFG_SHIFT);
	s.h[FZ_TH_MDTS] = 64;
	s.h[FZ_TH_LBA] = 9;
	s.h[FZ_TH_NQ] = 4;
	fz_wr16(s.h + FZ_TH_MQES, 255);
	fz_wr64(s.h + FZ_TH_NSZE, 64);
	sqe_rw(sq, GIO_NVM_OPC_READ, 1, 1, 0, 16);
	sqe_prp(sq, Q(0x4000), Q(0x5000));
	op_io(&s, 0, sq);
	tc_write(&s, "regressions", "init-mdts-64-shift");

	/* QID 0xffff: &t->sq[qid] / &t->cq[qid] formed before the range check. */
	tc_init(&s);
	op_fetchq(&s, 0xffff);
	tc_write(&s, "regressions", "fetch-qid-out-of-range");
	tc_init(&s);
	sqe_delete(sq, TC_CID, 0, 0xffff);
	op_admin(&s, sq);
	sqe_create(sq, TC_CID + 1, 1, 0xffff, 16, Q(0x2000), 0, 1, 0);
	op_admin(&s, sq);
	tc_write(&s, "regressions", "admin-qid-out-of-range");

	/* A CQ head doorbell beyond the CQ is read as an empty CQ, not a full one: the target
	 * fetches and then posts over entries the host has not consumed. */
	tc_init(&s);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
	op_ring(&s, -1, RING_HEAD(FZ_TRING_HEAD_RAW), 0, 0x1000, sq, 1);
	tc_write(&s, "regressions", "bad-cq-head-doorbell");

	/* A shutdown notification after a failed enable (CSTS.CFS) reports CSTS.RDY. */
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_BAD_IOSQES;
	op_regs(&s, FZ_TREGS_SHN_NORMAL, 0, 0, 0, 0);
	tc_write(&s, "regressions", "shutdown-after-failed-enable");

	/* A controller reset leaves the admin SQ tail doorbell at 1: after re-enabling, the
	 * target fetches the old Keep Alive again though the host submitted nothing. */
	tc_init(&s);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	op_regs(&s, FZ_TREGS_DISABLE, 0, 0, 0, 0);
	op_regs(&s, FZ_TREGS_ENABLE, 0, 0, 0, 0);
	op_ring(&s, -1, RING_HEAD(FZ_TRING_HEAD_KEEP) | FZ_TRING_TAIL_MOD, 0, 0, sq, 0);
	tc_write(&s, "regressions", "reset-keeps-doorbells");

	/* The admin CQ in region A, whose host copy is misaligned by one byte (the bus address is
	 * 4 KiB aligned): gio_tgt_post stores a struct gio_cqe and its status word through a
	 * misaligned pointer. */
	tc_init(&s);
	s.h[FZ_TH_CC] = FZ_TCC_ACQ_IN_A;
	s.h[FZ_TH_ACQS] = 6; /* 8 entries: 128 bytes of region A */
	s.h[FZ_TH_REGION] = 1u << 2;
	memset(e, 0, sizeof(e));
	for (i = 0; i < 8; i++)
		tc_put(&s, i * 16u, e, 16);
	sqe_base(sq, GIO_ADMIN_OPC_KEEP_ALIVE, TC_CID, 0);
	op_ring(&s, -1, 0, 0, 0, sq, 1);
	tc_write(&s, "regressions", "cq-misaligned-host-pointer");
}

/* ------------------------------------------------------------------------- */
/* KV store format inputs                                                    */
/* ------------------------------------------------------------------------- */

/* Written through the roundtrip seeds' byte writer (struct rt_seed, rs_u8 ... rs_u64). */
static struct rt_seed s_kv;

/* The header of fuzz_kv_format: mode, block size 512 << bshift, the store, its shape (layers and
 * object bytes as the target maps them: 1 + v), device index and count, id, pool signature. */
static void kv_head(struct rt_seed *s, uint8_t mode, uint8_t bshift, uint64_t store_bytes, uint32_t layers,
		    uint64_t object_bytes, uint32_t dev, uint32_t count)
{
	s->n = 0;
	rs_u8(s, mode);
	rs_u8(s, bshift);
	rs_u64(s, store_bytes);
	rs_u32(s, layers - 1u);
	rs_u64(s, object_bytes - 1u);
	rs_u32(s, dev);
	rs_u32(s, count);
	rs_u64(s, 0x0123456789abcdefull);
	rs_u64(s, 0xfedcba9876543210ull);
	rs_u64(s, 0x5157u);
}

/* The device as opened now, then n entries of the kinds fuzz_kv_format reads. */
static void kv_device(struct rt_seed *s, uint8_t bshift, uint64_t blocks)
{
	rs_u8(s, bshift);
	rs_u64(s, blocks);
}

static void kv_entry(struct rt_seed *s, uint8_t emode, uint64_t slot, uint16_t state, uint64_t key, uint64_t seq,
		     uint64_t len)
{
	rs_u8(s, emode);
	rs_u64(s, slot);
	rs_u16(s, state);
	rs_u64(s, key);
	rs_u64(s, key ? ~key : 0);
	rs_u64(s, seq);
	rs_u64(s, len);
}

static void kv_write(struct rt_seed *s, const char *name)
{
	write_file("corpus", "fuzz_kv_format", name, s->b, s->n);
}

static void kv_format_seeds(void)
{
	struct gio_kv_layout lay;
	struct gio_kv_sb sb;
	struct gio_kv_u128 id = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	uint8_t raw[GIO_KV_SB_BYTES], ent[GIO_KV_ENTRY_BYTES];

	/* A Llama3-8B chunk (32 layers of 1 MiB) on 4 KiB blocks: entries of every kind. */
	kv_head(&s_kv, 0, 3, 1ull << 30, 32, 1u << 20, 0, 1);
	rs_u8(&s_kv, 0); /* no mutation */
	kv_device(&s_kv, 3, (1ull << 30) / 4096);
	rs_u8(&s_kv, 4);
	kv_entry(&s_kv, 1, 3, GIO_KV_ENTRY_VALID, 0x99, 5, 0);
	kv_entry(&s_kv, 1 | 4, 7, GIO_KV_ENTRY_FREE, 0, 0, 0);
	kv_entry(&s_kv, 1 | 8, 1, GIO_KV_ENTRY_VALID, 0x77, 1, 12345);
	kv_entry(&s_kv, 1, 2, 9, 0x55, 1, 0); /* a state no entry has */
	kv_write(&s_kv, "llama-4k-entries");

	/* Objects that share blocks (head and tail bytes), on 512-byte blocks, device 1 of 3. */
	kv_head(&s_kv, 0, 0, 40ull << 20, 5, 1000, 1, 3);
	rs_u8(&s_kv, 0);
	kv_device(&s_kv, 0, 40ull << 11);
	rs_u8(&s_kv, 2);
	kv_entry(&s_kv, 1, 0, GIO_KV_ENTRY_VALID, 0x1, 2, 5000);
	kv_entry(&s_kv, 1, 11, GIO_KV_ENTRY_VALID, 0x2, 3, 0);
	kv_write(&s_kv, "shared-blocks-512");

	/* 64 KiB blocks, a device smaller than the store, a device count field mutated. */
	kv_head(&s_kv, 0, 7, 256ull << 20, 8, 1u << 16, 2, 4);
	rs_u8(&s_kv, 1);
	rs_u8(&s_kv, 36); /* device_count's low byte: 4 -> 5, still a store with a device 2 */
	rs_u8(&s_kv, 5);
	kv_device(&s_kv, 7, 100);
	rs_u8(&s_kv, 0);
	kv_write(&s_kv, "64k-count-mutated");

	/* Too small for one slot (-ENOSPC), and a geometry that overflows (raw shape). */
	kv_head(&s_kv, 0, 3, 65536 + 4096, 32, 1u << 20, 0, 1);
	kv_write(&s_kv, "no-space");
	kv_head(&s_kv, FZ_KV_M_RAW_SHAPE, 3, 1ull << 40, 0x10000u, 1ull << 60, 0, 1);
	kv_write(&s_kv, "geometry-overflow");

	/* Raw bytes: a valid superblock and valid entry bytes (CRCs kept as made), then the same
	 * superblock with a reserved byte set and its CRC made right again. */
	if (gio_kv_layout_compute(8ull << 20, 4096, 4, 8192, &lay, NULL) || gio_kv_sb_init(&sb, &lay, id, 0, 1, 0x5157u, NULL) ||
	    gio_kv_sb_encode(raw, &sb, NULL) ||
	    gio_kv_entry_encode(ent, &sb, 0, GIO_KV_ENTRY_VALID, id, 42, 0, NULL)) {
		fprintf(stderr, "kv format seed: the header refused its own example\n");
		exit(1);
	}
	kv_head(&s_kv, FZ_KV_M_SB_RAW | FZ_KV_M_ENTRY_CRC, 3, 8ull << 20, 4, 8192, 0, 1);
	for (size_t i = 0; i < sizeof(raw); i++)
		rs_u8(&s_kv, raw[i]);
	kv_device(&s_kv, 3, 2048);
	rs_u8(&s_kv, 1);
	rs_u8(&s_kv, 2); /* raw entry bytes, slot as given */
	rs_u64(&s_kv, 0);
	for (size_t i = 0; i < sizeof(ent); i++)
		rs_u8(&s_kv, ent[i]);
	kv_write(&s_kv, "raw-valid");
	raw[104] = 1;
	kv_head(&s_kv, FZ_KV_M_SB_RAW | FZ_KV_M_SB_CRC, 3, 8ull << 20, 4, 8192, 0, 1);
	for (size_t i = 0; i < sizeof(raw); i++)
		rs_u8(&s_kv, raw[i]);
	kv_write(&s_kv, "raw-reserved");
}

/* ------------------------------------------------------------------------- */
/* KV store reopen inputs (fuzz_kv_reopen.c's layout, in its first comment)  */
/* ------------------------------------------------------------------------- */

/* Devices: n of them, each (4096-byte blocks?, blocks); the chunk; the transfer limit in blocks;
 * the keys put first (npre from first, one apart). */
static void kr_head(struct rt_seed *s, uint32_t n, const uint8_t *big, const uint16_t *blocks, uint8_t layers,
		    uint16_t object_bytes, uint8_t xfer, uint8_t npre, uint8_t first)
{
	s->n = 0;
	rs_u8(s, (uint8_t)(n - 1));
	for (uint32_t k = 0; k < n; k++) {
		rs_u8(s, big[k]);
		rs_u16(s, (uint16_t)(blocks[k] - 48));
	}
	rs_u8(s, (uint8_t)(layers - 1));
	rs_u16(s, (uint16_t)(object_bytes - 1));
	rs_u8(s, xfer);
	rs_u8(s, npre);
	for (uint8_t i = 0; i < npre; i++)
		rs_u8(s, (uint8_t)(first + i));
}

/* The operations after the reopen: n key bytes (a put of key k % 96, a removal from 192 on), the
 * write_fault-th write failing (0: none). */
static void kr_ops(struct rt_seed *s, uint8_t write_fault, uint8_t n, const uint8_t *ops)
{
	rs_u8(s, write_fault);
	rs_u8(s, n);
	for (uint8_t i = 0; i < n; i++)
		rs_u8(s, ops[i]);
}

/* The chunks put after the reopen: n keys from first, the write_fault-th write failing (0: none). */
static void kr_tail(struct rt_seed *s, uint8_t n, uint8_t first, uint8_t write_fault)
{
	uint8_t keys[255];
	for (uint8_t i = 0; i < n; i++)
		keys[i] = (uint8_t)(first + i);
	kr_ops(s, write_fault, n, keys);
}

static void kr_write(struct rt_seed *s, const char *name)
{
	write_file("corpus", "fuzz_kv_reopen", name, s->b, s->n);
}

static void kv_reopen_seeds(void)
{
	static const uint8_t one512[1] = {0}, three[3] = {1, 0, 1}, two512[2] = {0, 0};
	static const uint16_t b800[1] = {800}, b3[3] = {200, 1000, 300}, b2[2] = {600, 600};
	struct rt_seed *s = &s_kv;

	/* Three devices of two block sizes, no damage, more chunks after the reopen. */
	kr_head(s, 3, three, b3, 2, 1000, 2, 20, 0);
	rs_u8(s, 0);
	kr_tail(s, 10, 60, 0);
	kr_write(s, "three-devices");

	/* An entry copied to another slot with a sequence one higher and its data: the copy wins. */
	kr_head(s, 1, one512, b800, 1, 512, 0, 8, 0);
	rs_u8(s, 1);
	rs_u8(s, 2), rs_u8(s, 0), rs_u16(s, 0), rs_u8(s, 0), rs_u16(s, 7), rs_u8(s, 2 | 4);
	kr_tail(s, 2, 70, 0);
	kr_write(s, "duplicate-newer");

	/* The same with the sequence kept and no data: the first seen stays. */
	kr_head(s, 1, one512, b800, 1, 512, 0, 8, 0);
	rs_u8(s, 1);
	rs_u8(s, 2), rs_u8(s, 0), rs_u16(s, 0), rs_u8(s, 0), rs_u16(s, 7), rs_u8(s, 1);
	kr_tail(s, 2, 70, 0);
	kr_write(s, "duplicate-tie");

	/* Slot 1's entry block on device 0 fails its reads (512-byte blocks: the index at LBA 8). */
	kr_head(s, 2, two512, b2, 1, 700, 0, 12, 0);
	rs_u8(s, 1);
	rs_u8(s, 4), rs_u8(s, 0), rs_u16(s, 9);
	kr_tail(s, 4, 80, 0);
	kr_write(s, "bad-entry-block");

	/* Slot 1's entry torn: 8 bytes of its key overwritten. */
	kr_head(s, 1, one512, b800, 1, 512, 0, 4, 0);
	rs_u8(s, 1);
	rs_u8(s, 0), rs_u8(s, 0), rs_u32(s, 9 * 512 + 32), rs_u8(s, 7);
	for (int i = 0; i < 8; i++)
		rs_u8(s, 0xa5);
	kr_tail(s, 1, 90, 0);
	kr_write(s, "torn-entry");

	/* Writes failing after the reopen: the 3rd whole (a put's FREE entry, its data or its VALID
	 * entry, depending on the slot), the 5th torn. */
	kr_head(s, 2, two512, b2, 2, 900, 0, 6, 0);
	rs_u8(s, 0);
	kr_tail(s, 6, 50, 3);
	kr_write(s, "write-fails");
	kr_head(s, 2, two512, b2, 2, 900, 0, 6, 0);
	rs_u8(s, 0);
	kr_tail(s, 6, 50, 0x80u | 5u);
	kr_write(s, "write-torn");

	/* Removals after the reopen (a key byte of 192 and above): a stored key, an absent one, the
	 * first put again; then the first write (the removal's FREE entry) failing. */
	{
		static const uint8_t ops[5] = {192 + 2, 192 + 9, 2, 192 + 5, 30};
		kr_head(s, 1, one512, b800, 1, 512, 0, 8, 0);
		rs_u8(s, 0);
		kr_ops(s, 0, 5, ops);
		kr_write(s, "removals");
		kr_head(s, 1, one512, b800, 1, 512, 0, 8, 0);
		rs_u8(s, 0);
		kr_ops(s, 1, 3, ops);
		kr_write(s, "removal-write-fails");
	}

	/* A superblock byte changed under its CRC: the open refuses the store. */
	kr_head(s, 1, one512, b800, 3, 100, 0, 4, 0);
	rs_u8(s, 1);
	rs_u8(s, 3), rs_u8(s, 0), rs_u8(s, 40), rs_u8(s, 9);
	kr_write(s, "superblock-byte");

	/* The devices given in another order, transfers of one block. */
	kr_head(s, 3, three, b3, 4, 3000, 1, 16, 20);
	rs_u8(s, 2);
	rs_u8(s, 5), rs_u8(s, 0);
	rs_u8(s, 5), rs_u8(s, 0);
	kr_tail(s, 6, 40, 0);
	kr_write(s, "permuted-one-block-transfers");
}

/* ------------------------------------------------------------------------- */
/* KV pool inputs (fuzz_kv_pool.c's layout, in its first comment)            */
/* ------------------------------------------------------------------------- */

/* A pool with its strides as given: mode bits (base mode, raw bases, element size, dword SGLs),
 * extents (L, B, P, N, H, C, as the target maps them: 1 + v % m), strides, base and bases. */
static void kp_raw(const char *name, uint8_t mode, const uint8_t ext[6], const uint16_t stride[6], uint32_t base,
		   const uint32_t *bases, uint32_t nbases)
{
	struct rt_seed *s = &s_kv;
	s->n = 0;
	rs_u8(s, (uint8_t)(mode | 4u));
	for (int d = 0; d < 6; d++)
		rs_u8(s, (uint8_t)(ext[d] - 1));
	for (int d = 0; d < 6; d++)
		rs_u16(s, stride[d]);
	rs_u32(s, base);
	for (uint32_t i = 0; i < nbases; i++)
		rs_u32(s, bases[i]);
	write_file("corpus", "fuzz_kv_pool", name, s->b, s->n);
}

static void kv_pool_seeds(void)
{
	/* vLLM's tensor per layer [2, blocks, block, heads, dim], bf16: K and V apart, a base per layer. */
	{
		static const uint8_t e[6] = {2, 4, 2, 4, 2, 8};
		static const uint16_t st[6] = {0, 64, 256, 16, 8, 1};
		static const uint32_t b[2] = {0x100000, 0x200000};
		kp_raw("vllm-per-layer", 1u | 8u | (1u << 4), e, st, 0, b, 2);
	}
	/* One buffer [L, B, H, N, C], fp8, a single base. */
	{
		static const uint8_t e[6] = {3, 4, 1, 4, 3, 8};
		static const uint16_t st[6] = {384, 96, 0, 8, 32, 1};
		kp_raw("one-buffer-heads-first", 0, e, st, 0x40000, NULL, 0);
	}
	/* SGLang's K and V buffers of their own per layer [tokens, heads, dim], fp16, dword SGLs. */
	{
		static const uint8_t e[6] = {2, 3, 2, 4, 2, 8};
		static const uint16_t st[6] = {0, 64, 0, 16, 8, 1};
		static const uint32_t b[4] = {0x10000, 0x20000, 0x30000, 0x40000};
		kp_raw("sglang-k-v-buffers", 2u | 8u | (1u << 4) | 0x80u, e, st, 0, b, 4);
	}
	/* Blocks first across layers [blocks, L, 2, block, heads, dim]: a block's layers contiguous. */
	{
		static const uint8_t e[6] = {3, 2, 2, 4, 1, 8};
		static const uint16_t st[6] = {64, 192, 32, 8, 0, 1};
		kp_raw("blocks-first-cross-layer", 2u << 4, e, st, 0x1000, NULL, 0);
	}
	/* Blocks padded apart, and a stride that lets two tokens share bytes (refused). */
	{
		static const uint8_t e[6] = {1, 4, 2, 2, 2, 8};
		static const uint16_t st[6] = {0, 80, 32, 16, 8, 1}, bad[6] = {0, 80, 32, 4, 8, 1};
		kp_raw("blocks-padded", 1u << 4, e, st, 0, NULL, 0);
		kp_raw("tokens-overlap", 1u << 4, e, bad, 0, NULL, 0);
	}
	/* Made from an order and paddings, with a table of bases apart (bits 2 and 3 clear). */
	{
		static const uint8_t tail[] = {1, 3, 1, 3, 2, 7, /* extents */
					       5, 1, 0, 2, 0, 0, /* order picks */
					       1, 0, 2, 0, 1, 0, /* paddings */
					       0, 0, 1, 0,       /* base 0x10000 */
					       7, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0};
		struct rt_seed *s = &s_kv;
		s->n = 0;
		rs_u8(s, 2u | (2u << 4));
		for (size_t i = 0; i < sizeof(tail); i++)
			rs_u8(s, tail[i]);
		write_file("corpus", "fuzz_kv_pool", "made-layer-part", s->b, s->n);
	}
}

/* ------------------------------------------------------------------------- */
/* KV plan inputs (fuzz_kv_plan.c's layout: its first comment, FZ_PC_* ...)   */
/* ------------------------------------------------------------------------- */

/* Header: devices and pool (FZ_PC_*), shape (layers, blocks an object, slots a device), the
 * plan's max_requests and pool blocks, the first create's fault (FZ_PF_*), knobs (FZ_PK_*). */
static void kq_head(struct rt_seed *s, uint8_t cfg, uint32_t layers, uint32_t obj_blocks, uint32_t slots,
		    uint32_t max_requests, uint32_t blocks, uint8_t fault, uint8_t knobs)
{
	s->n = 0;
	rs_u8(s, cfg);
	rs_u8(s, (uint8_t)((layers - 1) | ((obj_blocks - 1) << 2) | ((slots - 2) << 4)));
	rs_u8(s, (uint8_t)(max_requests - 1));
	rs_u8(s, (uint8_t)(blocks - 1));
	rs_u8(s, fault);
	rs_u8(s, knobs);
}

/* A load or save of n keys from `first` (one apart) into blocks from `block` (one apart; 0x80 and
 * up: beyond the pool). */
static void kq_batch(struct rt_seed *s, uint32_t kind, uint8_t n, uint8_t first, uint8_t block)
{
	rs_u8(s, FZ_OP(kind, 0));
	rs_u8(s, n);
	for (uint8_t i = 0; n != FZ_N_ABOVE && i < n; i++) {
		rs_u8(s, (uint8_t)(first + i));
		rs_u8(s, block & 0x80u ? block : (uint8_t)(block + i));
	}
}

static void kq_op(struct rt_seed *s, uint32_t kind, uint32_t arg)
{
	rs_u8(s, FZ_OP(kind, arg));
}

/* A save of ns keys from sfirst into blocks from sblock, every layer run and finished; then a
 * load of nl keys from lfirst into blocks from lblock, the same. */
static void kq_save_load(struct rt_seed *s, uint8_t ns, uint8_t sfirst, uint8_t sblock, uint8_t nl, uint8_t lfirst,
			 uint8_t lblock)
{
	kq_batch(s, FZ_OP_SAVE, ns, sfirst, sblock);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_batch(s, FZ_OP_LOAD, nl, lfirst, lblock);
	kq_op(s, FZ_OP_CYCLE, 0);
}

static void kq_write(struct rt_seed *s, const char *name)
{
	write_file("corpus", "fuzz_kv_plan", name, s->b, s->n);
}

static void kv_plan_seeds(void)
{
	struct rt_seed *s = &s_kv;
	static const char *const faults[FZ_PF_COUNT] = {
		NULL, "engine", "max-requests-0", "blocks-0", "io-warps-33", "devs-null", "no-queue-pairs",
		"qps-null", "table-null", "block-size", "psdt-msgl", "runs-half-a-block", "params-null"};

	/* Four chunks saved layer by layer, then loaded back into other blocks with two misses, its
	 * layers run in reverse but for layer 1 (whose wait ends -ETIME, whose objects stay as they
	 * were); the view and the layer bytes asked for. */
	kq_head(s, 0, 2, 1, 4, 8, 8, FZ_PF_NONE, 0);
	kq_batch(s, FZ_OP_SAVE, 4, 0, 0);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_batch(s, FZ_OP_LOAD, 6, 0, 2);
	kq_op(s, FZ_OP_QUERY, 0);
	kq_op(s, FZ_OP_RUN_ALL, 1u | (2u << 1));
	kq_op(s, FZ_OP_WAIT, 0);
	kq_op(s, FZ_OP_WAIT, 1);
	kq_op(s, FZ_OP_FINISH, 0);
	kq_write(s, "save-load-hits");

	/* Two devices (512-byte blocks and PRPs on device 1), K and V apart: an SGL segment list on
	 * device 0, one PRP command a run on device 1; one queue pair each. */
	kq_head(s, FZ_PC_TWO | FZ_PC_512_1 | FZ_PC_PRP_1 | FZ_PC_APART | FZ_PC_ONE_QP, 3, 2, 3, 12, 12, FZ_PF_NONE, 0x41);
	kq_save_load(s, 6, 3, 0, 8, 1, 4);
	kq_write(s, "two-devices-prp-apart");

	/* PRPs on both devices, 4 layers of 4 blocks, two 512-byte devices. */
	kq_head(s, FZ_PC_TWO | FZ_PC_512_0 | FZ_PC_512_1 | FZ_PC_PRP_0 | FZ_PC_PRP_1 | FZ_PC_TIMEOUT, 4, 4, 2, 6, 6,
		FZ_PF_NONE, 0);
	kq_save_load(s, 3, 10, 0, 4, 9, 2);
	kq_write(s, "two-devices-prp");

	/* Two slots: a save of five keys reserves two and gets -ENOSPC for the rest; a second save
	 * evicts them; a load finds only the last. */
	kq_head(s, 0, 1, 1, 2, 8, 8, FZ_PF_NONE, 0);
	kq_batch(s, FZ_OP_SAVE, 5, 0, 0);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_save_load(s, 2, 7, 3, 8, 0, 0);
	kq_write(s, "evictions-no-space");

	/* Layer calls refused: out of range, the other direction, twice, cancelled; a wait for a layer
	 * not run; a save finished without its last layer (-ECANCELED), then loaded (a miss). */
	kq_head(s, 0, 3, 1, 4, 4, 4, FZ_PF_NONE, 0);
	kq_batch(s, FZ_OP_SAVE, 2, 5, 0);
	kq_op(s, FZ_OP_RUN, 5);
	kq_op(s, FZ_OP_RUN, 0);
	kq_op(s, FZ_OP_RUN, 0);
	kq_op(s, FZ_OP_BEGIN, 1);
	kq_op(s, FZ_OP_RUN, 8 | 2);
	kq_op(s, FZ_OP_CANCEL, 1);
	kq_op(s, FZ_OP_WAIT, 2);
	kq_op(s, FZ_OP_FINISH, 0);
	kq_batch(s, FZ_OP_LOAD, 2, 5, 0);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_write(s, "layer-errors");

	/* Batch calls refused: above max_requests, a block beyond the pool, no batch open (run, wait,
	 * finish, query), a batch open (a load during a save); a destroy with the save's layers run
	 * commits it, and a plan with io_warps 33 is refused before the next. */
	kq_head(s, 0, 2, 1, 4, 4, 4, FZ_PF_NONE, 0);
	kq_batch(s, FZ_OP_LOAD, FZ_N_ABOVE, 0, 0);
	kq_batch(s, FZ_OP_SAVE, 2, 0, 0x81);
	kq_op(s, FZ_OP_RUN, 0);
	kq_op(s, FZ_OP_WAIT, 0);
	kq_op(s, FZ_OP_FINISH, 0);
	kq_op(s, FZ_OP_QUERY, 0);
	kq_batch(s, FZ_OP_SAVE, 3, 1, 0);
	kq_batch(s, FZ_OP_LOAD, 1, 1, 0);
	kq_op(s, FZ_OP_RUN_ALL, 0);
	kq_op(s, FZ_OP_DESTROY, FZ_PF_WARPS);
	kq_batch(s, FZ_OP_LOAD, 3, 1, 1);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_write(s, "batch-errors-destroy");

	/* A read error injected into device 0's second command: one load request fails with its
	 * status; and a write error in a save (a layer, a FREE entry or the commit). */
	kq_head(s, 0, 2, 1, 4, 8, 8, FZ_PF_NONE, 0);
	kq_batch(s, FZ_OP_SAVE, 4, 0, 0);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_op(s, FZ_OP_FAULT, 0);
	rs_u8(s, 2);
	kq_batch(s, FZ_OP_LOAD, 4, 0, 4);
	kq_op(s, FZ_OP_CYCLE, 0);
	kq_op(s, FZ_OP_FAULT, 2);
	rs_u8(s, 3);
	kq_save_load(s, 3, 8, 0, 3, 8, 0);
	kq_write(s, "injected-errors");

	/* PRPs with K and V apart in 4096-byte blocks and objects of one block: a command a run of
	 * 2048 bytes, not whole blocks: no plan can be made. */
	kq_head(s, FZ_PC_PRP_0 | FZ_PC_APART, 1, 1, 2, 2, 2, FZ_PF_NONE, 0);
	kq_write(s, "runs-not-whole-blocks");

	/* Each documented invalid parameter at the first create, then a save and a load. */
	for (uint8_t f = 1; f < FZ_PF_COUNT; f++) {
		char name[64];
		kq_head(s, FZ_PC_TWO, 2, 1, 3, 4, 4, f, 0);
		kq_save_load(s, 2, 0, 0, 2, 0, 2);
		snprintf(name, sizeof(name), "plan-fault-%s", faults[f]);
		kq_write(s, name);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		root = argv[1];
	sgl_walk_seeds();
	prp_walk_seeds();
	roundtrip_seeds();
	target_seeds();
	kv_format_seeds();
	kv_reopen_seeds();
	kv_pool_seeds();
	kv_plan_seeds();
	printf("wrote %u files under %s/corpus and %s/regressions\n", written, root, root);
	return 0;
}
