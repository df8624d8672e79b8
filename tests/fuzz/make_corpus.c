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
	s.b[FZ_RH_SHORT] = 2; /* 16 bytes of segments, 128 bytes of list */
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

int main(int argc, char **argv)
{
	if (argc > 1)
		root = argv[1];
	sgl_walk_seeds();
	prp_walk_seeds();
	roundtrip_seeds();
	printf("wrote %u files under %s/corpus and %s/regressions\n", written, root, root);
	return 0;
}
