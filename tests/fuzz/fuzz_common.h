/*
 * Shared by the libFuzzer targets tests/fuzz/fuzz_*.c and the seed generator
 * tests/fuzz/make_corpus.c: the input layouts (so seeds and decoders cannot
 * drift apart), a byte reader, the registered-memory setup of the walker
 * targets, an independent bus-address lookup for the reference models, and the
 * FZ_CHECK macro that turns a violated invariant into a libFuzzer finding.
 *
 * Not part of giouring: test code only, plain C11, no sanitizer assumptions.
 */
#ifndef GIO_FUZZ_COMMON_H
#define GIO_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/kv/format.h>
#include <giouring/proto/dma_map.h>
#include <giouring/proto/dptr.h>
#include <giouring/nvme/cqe.h>
#include <giouring/nvme/identify.h>
#include <giouring/nvme/sgl.h>
#include <giouring/nvme/sqe.h>
#include <giouring/proto/xfer.h>

/* ------------------------------------------------------------------------- */
/* Invariant checks                                                          */
/* ------------------------------------------------------------------------- */

/* Prints where and why, then abort()s: libFuzzer saves the input as a crash. */
#define FZ_CHECK(cond, ...)                                                              \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "\n*** giouring fuzz invariant violated: %s\n    at %s:%d\n    ", \
				#cond, __FILE__, __LINE__);                              \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* ------------------------------------------------------------------------- */
/* Little-endian field access (inputs are little-endian byte strings)         */
/* ------------------------------------------------------------------------- */

static inline uint16_t fz_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t fz_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t fz_rd64(const uint8_t *p)
{
	return (uint64_t)fz_rd32(p) | ((uint64_t)fz_rd32(p + 4) << 32);
}

static inline void fz_wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void fz_wr32(uint8_t *p, uint32_t v)
{
	fz_wr16(p, (uint16_t)v);
	fz_wr16(p + 2, (uint16_t)(v >> 16));
}

static inline void fz_wr64(uint8_t *p, uint64_t v)
{
	fz_wr32(p, (uint32_t)v);
	fz_wr32(p + 4, (uint32_t)(v >> 32));
}

/* A byte stream that yields zeros once exhausted, so every input decodes. */
struct fz_reader {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz_reader *r)
{
	uint8_t v = 0;
	if (r->n) {
		v = *r->p++;
		r->n--;
	}
	return v;
}

static inline uint16_t fz_u16(struct fz_reader *r)
{
	uint16_t lo = fz_u8(r);
	return (uint16_t)(lo | (fz_u8(r) << 8));
}

static inline uint32_t fz_u32(struct fz_reader *r)
{
	uint32_t lo = fz_u16(r);
	return lo | ((uint32_t)fz_u16(r) << 16);
}

static inline uint64_t fz_u64(struct fz_reader *r)
{
	uint64_t lo = fz_u32(r);
	return lo | ((uint64_t)fz_u32(r) << 32);
}

/* ------------------------------------------------------------------------- */
/* fuzz_kv_format: its mode byte (byte 0) and limits                          */
/* ------------------------------------------------------------------------- */

#define FZ_KV_M_SB_MASK 0x03u     /* where the superblock's bytes come from: */
#define FZ_KV_M_SB_RAW 0x03u      /*   raw input bytes (0-2: made from the parameters, mutated) */
#define FZ_KV_M_SB_CRC 0x04u      /* the CRC of raw superblock bytes made right */
#define FZ_KV_M_ENTRY_CRC 0x08u   /* the CRC of raw entry bytes made right */
#define FZ_KV_M_RAW_SHAPE 0x10u   /* layers, object bytes and device count as read */
#define FZ_KV_MAX_MUTATIONS 8u    /* byte writes into a made superblock */
#define FZ_KV_MAX_ENTRIES 4u      /* entries checked against an accepted superblock */

/* ------------------------------------------------------------------------- */
/* KV targets that drive a store (fuzz_kv_reopen, fuzz_kv_plan)               */
/* ------------------------------------------------------------------------- */

/* Key i of a target's small universe of chunk keys (distinct for every i). */
static inline struct gio_kv_u128 fz_kv_key(uint32_t i)
{
	struct gio_kv_u128 k = {0x6b65790000000000ull | i, 0x9e3779b97f4a7c15ull * (i + 1)};
	return k;
}

/* len bytes of a pseudo-random stream that `seed` names: what a chunk (or one layer object of
 * it) holds, so that a model keeps only the seed. */
static inline void fz_kv_bytes(uint64_t seed, uint8_t *buf, uint64_t len)
{
	uint64_t x = seed ? seed : 1u; /* xorshift never leaves 0 */
	for (uint64_t k = 0; k < len; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[k] = (uint8_t)x;
	}
}

/* ------------------------------------------------------------------------- */
/* fuzz_kv_plan: input layout (its first comment says the rest)               */
/* ------------------------------------------------------------------------- */

/* Header byte 0: devices. */
#define FZ_PC_TWO 0x01u      /* two devices, else one */
#define FZ_PC_512_0 0x02u    /* device 0: 512-byte blocks (else 4096) */
#define FZ_PC_512_1 0x04u    /* device 1: 512-byte blocks */
#define FZ_PC_PRP_0 0x08u    /* device 0: PRP table (the context's dptr=prp), else SGL */
#define FZ_PC_PRP_1 0x10u    /* device 1: PRP table */
#define FZ_PC_APART 0x20u    /* K and V apart in the pool: two runs an object */
#define FZ_PC_TIMEOUT 0x40u  /* the plan's timeout 1 s (else 0: the store's 2 s) */
#define FZ_PC_ONE_QP 0x80u   /* one queue pair a device in the plan (else two) */
/* Header byte 1: the chunk's shape and the store's size. */
#define FZ_PS_LAYERS(v) (1u + ((v) & 3u))           /* layers */
#define FZ_PS_BLOCKS(v) (1u + (((v) >> 2) & 3u))    /* an object's blocks of the largest size */
#define FZ_PS_SLOTS(v) (2u + (((v) >> 4) & 7u))     /* slots a device, about */
/* Header byte 4 and FZ_OP_DESTROY's argument: a parameter made invalid the way plan.h documents. */
#define FZ_PF_NONE 0u
#define FZ_PF_ENGINE 1u     /* engine 2: unknown */
#define FZ_PF_MAX_REQ 2u    /* max_requests 0 */
#define FZ_PF_BLOCKS 3u     /* blocks 0 */
#define FZ_PF_WARPS 4u      /* io_warps 33 */
#define FZ_PF_DEVS 5u       /* devs NULL */
#define FZ_PF_NQPS 6u       /* the last device without queue pairs */
#define FZ_PF_QPS 7u        /* the last device's qps NULL */
#define FZ_PF_TABLE 8u      /* the last device's table NULL (and no staging) */
#define FZ_PF_LBA 9u        /* the last device's block size not the store's */
#define FZ_PF_PSDT 10u      /* the last device's psdt GIO_PSDT_SGL_MSGL */
#define FZ_PF_CMDS 11u      /* the last device's runs half a block */
#define FZ_PF_PARAMS 12u    /* params NULL */
#define FZ_PF_COUNT 13u     /* values from here on: none */
/* Header byte 5: plan knobs the CPU engine takes and ignores. */
#define FZ_PK_SCOPE_SYS 0x01u
#define FZ_PK_WARPS(v) (((v) >> 1) % 33u) /* io_warps 0..32 */

#define FZ_OP_LOAD 0u
#define FZ_OP_SAVE 1u
#define FZ_OP_RUN 2u
#define FZ_OP_RUN_ALL 3u
#define FZ_OP_WAIT 4u
#define FZ_OP_FINISH 5u
#define FZ_OP_DESTROY 6u
#define FZ_OP_CANCEL 7u
#define FZ_OP_QUERY 8u
#define FZ_OP_FAULT 9u
#define FZ_OP_BEGIN 10u
#define FZ_OP_CYCLE 11u
#define FZ_N_ABOVE 0xffu /* a load or save of max_requests + 1 */
#define FZ_OP(kind, arg) ((uint8_t)((kind) | ((arg) << 4)))

/* ------------------------------------------------------------------------- */
/* Decoded settings shared by the targets                                    */
/* ------------------------------------------------------------------------- */

/* Noise in SGLS that must not change what the walker or builders do. */
#define FZ_SGLS_NOISE (GIO_SGLS_KEYED | GIO_SGLS_MPTR_BYTE | GIO_SGLS_MPTR_SGL | GIO_SGLS_OFFSET | \
		       GIO_SGLS_TRANSPORT | (0x5au << GIO_SGLS_SDT_SHIFT))

/* Flag byte bits (byte 0 of the SGL walker and roundtrip headers). */
#define FZ_F_SUPPORT_MASK 0x07u /* 0-2 byte, 3-5 dword, 6 byte + noise bits, 7 none */
#define FZ_F_BIT_BUCKET 0x08u
#define FZ_F_OVERSIZE 0x10u
#define FZ_F_WRITE 0x20u
#define FZ_F_PSDT_SHIFT 6 /* SGL walker only: 0, 2: PSDT 01b; 1: 10b; 3: PSDT as in the SQE */

static inline uint32_t fz_sgls(uint8_t flags)
{
	static const uint32_t support[8] = {
		GIO_SGLS_SUPPORT_BYTE,  GIO_SGLS_SUPPORT_BYTE,  GIO_SGLS_SUPPORT_BYTE,
		GIO_SGLS_SUPPORT_DWORD, GIO_SGLS_SUPPORT_DWORD, GIO_SGLS_SUPPORT_DWORD,
		GIO_SGLS_SUPPORT_BYTE | FZ_SGLS_NOISE, GIO_SGLS_SUPPORT_NONE,
	};
	uint32_t s = support[flags & FZ_F_SUPPORT_MASK];
	if (flags & FZ_F_BIT_BUCKET)
		s |= GIO_SGLS_BIT_BUCKET;
	if (flags & FZ_F_OVERSIZE)
		s |= GIO_SGLS_OVERSIZE;
	return s;
}

/* Segment limits: bit 7 set means 0 (no limit), else the low 6 bits (0 included). */
static inline uint32_t fz_limit(uint8_t b)
{
	return (b & 0x80u) ? 0u : (uint32_t)(b & 0x3fu);
}

/* Page size: mostly valid ones; 2048 and 12288 are invalid on purpose. */
static inline uint32_t fz_page(uint8_t b)
{
	static const uint32_t pages[8] = {4096, 8192, 16384, 65536, 4096, 4096, 2048, 12288};
	return pages[b & 7u];
}

/* Output list capacity of a walker: 1..64. */
#define FZ_MAX_CAP 64u
static inline uint32_t fz_cap(uint8_t b)
{
	return 1u + (b & 63u);
}

/* ------------------------------------------------------------------------- */
/* Walker targets: input layout and registered memory                         */
/* ------------------------------------------------------------------------- */
/*
 * fuzz_sgl_walk and fuzz_prp_walk inputs:
 *   bytes  0..11  header (FZ_WH_*; missing bytes read as 0)
 *   bytes 12..75  the 64-byte SQE, little-endian as on the wire (missing bytes 0)
 *   bytes 76..    the blob: registered memory. Its last `split` bytes form region B,
 *                 the rest region A at bus FZ_BUS_A.
 */
#define FZ_WH_FLAGS 0    /* SGL: FZ_F_* bits; PRP: bits 0-2 page (fz_page), 3-4 PSDT (3: raw, else 00b) */
#define FZ_WH_SEG_MAX 1  /* SGL: gio_dptr_caps::seg_max_descs (fz_limit); PRP: unused */
#define FZ_WH_MAX_SEGS 2 /* SGL: gio_dptr_caps::max_segments (fz_limit); PRP: unused */
#define FZ_WH_CAP 3      /* output list capacity (fz_cap) */
#define FZ_WH_XFER 4     /* u32: xfer_len = value % (FZ_MAX_XFER + 1) */
#define FZ_WH_SPLIT 8    /* u16: bytes at the blob's end that form region B (clamped) */
#define FZ_WH_REGION 10  /* bits 0-1 region B base (fz_region_b_base), 2-4 host misalignment 0..7 */
#define FZ_WH_RSVD 11
#define FZ_WH_BYTES 12
#define FZ_WALK_SQE_OFF FZ_WH_BYTES
#define FZ_WALK_BLOB_OFF (FZ_WH_BYTES + GIO_SQE_BYTES)

#define FZ_MAX_XFER (1u << 20)

/* Region A: the start of the blob, at a fixed, 2 MiB-aligned bus address. */
#define FZ_BUS_A 0x100000ull

/* Region B bases: straddling a 2 MiB boundary, the top page of the address space,
 * straddling 4 GiB, and directly after region A (bus-adjacent, so a range across the
 * boundary is registered bytewise yet lies in no single region). */
#define FZ_BUS_B_STRADDLE 0x1fffc0ull
#define FZ_BUS_B_TOP 0xfffffffffffff000ull
#define FZ_BUS_B_4G 0xffffffc0ull
static inline uint64_t fz_region_b_base(uint8_t sel, uint64_t len_a)
{
	switch (sel & 3u) {
	case 0: return FZ_BUS_B_STRADDLE;
	case 1: return FZ_BUS_B_TOP;
	case 2: return FZ_BUS_B_4G;
	default: return FZ_BUS_A + len_a;
	}
}

/* The registered memory of one walker input: each region in its own exact-size
 * allocation (ASan catches any read past a region), optionally misaligned. */
struct fz_mem {
	struct gio_dma_region regions[2];
	struct gio_dma_map map;
	unsigned char *alloc[2];
	const uint8_t *orig[2]; /* per registered region: the input bytes it was copied from */
};

static inline void fz_mem_setup(struct fz_mem *m, const uint8_t *blob, size_t blob_len,
				const uint8_t *hdr)
{
	size_t split = fz_rd16(hdr + FZ_WH_SPLIT);
	const unsigned mis = (hdr[FZ_WH_REGION] >> 2) & 7u;
	size_t len[2];
	uint64_t base[2];
	int i;

	if (split > blob_len)
		split = blob_len;
	len[0] = blob_len - split;
	len[1] = split;
	base[0] = FZ_BUS_A;
	base[1] = fz_region_b_base(hdr[FZ_WH_REGION], len[0]);
	if (len[1] > 0 - base[1]) /* base[1] != 0 always; keep region B below 2^64 */
		len[1] = (size_t)(0 - base[1]);
	m->map.regions = m->regions;
	m->map.count = 0;
	for (i = 0; i < 2; i++) {
		const uint8_t *src = i == 0 ? blob : blob + (blob_len - split);
		m->alloc[i] = NULL;
		if (len[i] == 0)
			continue;
		m->alloc[i] = (unsigned char *)malloc(len[i] + mis);
		if (m->alloc[i] == NULL)
			abort();
		memcpy(m->alloc[i] + mis, src, len[i]);
		m->regions[m->map.count].addr = base[i];
		m->regions[m->map.count].len = len[i];
		m->regions[m->map.count].ptr = m->alloc[i] + mis;
		m->orig[m->map.count] = src;
		m->map.count++;
	}
}

/* The walkers are pure: registered memory must read as it was written. */
static inline void fz_mem_check_unchanged(const struct fz_mem *m)
{
	uint32_t i;
	for (i = 0; i < m->map.count; i++)
		FZ_CHECK(memcmp(m->regions[i].ptr, m->orig[i], (size_t)m->regions[i].len) == 0,
			 "walker wrote to registered memory (region %u)", (unsigned)i);
}

static inline void fz_mem_free(struct fz_mem *m)
{
	free(m->alloc[0]);
	free(m->alloc[1]);
}

/*
 * The reference models' own bus-address lookup (deliberately not gio_dma_map_find):
 * the host pointer of [addr, addr + len) when it lies in one region, else NULL.
 * len >= 1; a range whose end is not representable in 64 bits is never found.
 */
static inline const unsigned char *fz_lookup(const struct gio_dma_region *r, uint32_t count,
					     uint64_t addr, uint64_t len)
{
	uint32_t i;
	if (len == 0 || addr > UINT64_MAX - (len - 1))
		return NULL;
	for (i = 0; i < count; i++) {
		const uint64_t last = addr + (len - 1); /* inclusive */
		if (r[i].len == 0)
			continue;
		if (addr >= r[i].addr && last <= r[i].addr + (r[i].len - 1) && last >= addr)
			return (const unsigned char *)r[i].ptr + (addr - r[i].addr);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Output lists                                                               */
/* ------------------------------------------------------------------------- */

/* Whether [addr, addr + len) stays below 2^64 (len >= 1: its last byte is >= addr). */
static inline int fz_no_wrap(uint64_t addr, uint64_t len)
{
	return len == 0 || len - 1 <= UINT64_MAX - addr;
}

/*
 * Appends to a model list, merging exactly when the walkers' documentation says
 * ("contiguous pieces merged"): same kind, and for data the new piece starts where
 * the previous one ends without the previous one reaching 2^64. Returns 0, or -1
 * when a new entry is needed and the list already holds cap.
 */
static inline int fz_contiguous(const struct gio_xfer_seg *p, uint64_t next)
{
	return p->len <= UINT64_MAX - p->addr && p->addr + p->len == next;
}

static inline int fz_list_push(struct gio_xfer_seg *segs, uint32_t *n, uint32_t cap, uint64_t addr,
			       uint64_t len, uint32_t flags)
{
	if (*n > 0) {
		struct gio_xfer_seg *p = &segs[*n - 1];
		if (p->flags == flags && ((flags & GIO_XFER_BIT_BUCKET) || fz_contiguous(p, addr))) {
			p->len += len;
			return 0;
		}
	}
	if (*n == cap)
		return -1;
	segs[*n].addr = addr;
	segs[*n].len = len;
	segs[*n].flags = flags;
	segs[*n].rsvd = 0;
	(*n)++;
	return 0;
}

static inline void fz_dump_list(const char *what, const struct gio_xfer_seg *s, uint32_t n)
{
	uint32_t i;
	fprintf(stderr, "%s (%u segments):\n", what, (unsigned)n);
	for (i = 0; i < n && i < 80; i++)
		fprintf(stderr, "  [%u] addr 0x%016llx len 0x%llx flags %u\n", (unsigned)i,
			(unsigned long long)s[i].addr, (unsigned long long)s[i].len, (unsigned)s[i].flags);
}

static inline int fz_lists_equal(const struct gio_xfer_seg *a, uint32_t na, const struct gio_xfer_seg *b,
				 uint32_t nb)
{
	uint32_t i;
	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (a[i].addr != b[i].addr || a[i].len != b[i].len || a[i].flags != b[i].flags ||
		    a[i].rsvd != b[i].rsvd)
			return 0;
	return 1;
}

/* Status field decoding, independent of giouring/proto/status.h. */
#define FZ_SF_SC(sf) ((uint32_t)(sf) & 0xffu)
#define FZ_SF_SCT(sf) (((uint32_t)(sf) >> 8) & 7u)
#define FZ_SF_CRD_M(sf) (((uint32_t)(sf) >> 11) & 7u)
#define FZ_SF_DNR(sf) (((uint32_t)(sf) >> 14) & 1u)
#define FZ_SF_RSVD(sf) (((uint32_t)(sf) >> 15) & 1u)

/* ------------------------------------------------------------------------- */
/* fuzz_dptr_roundtrip: input layout                                          */
/* ------------------------------------------------------------------------- */
/*
 * bytes 0..7  header (FZ_RH_*), then ranges until n are decoded (missing bytes read 0).
 * One range: an op byte, then the payloads its address mode and its length mode take,
 * in that order (FZ_RA_*, FZ_RL_*). "prev" is the previous range; before the first one
 * it is the empty range at FZ_RANGE_BASE. pg is the header's page size (fz_page).
 */
#define FZ_RH_FLAGS 0    /* FZ_F_SUPPORT_MASK, FZ_F_BIT_BUCKET, FZ_F_OVERSIZE, FZ_F_WRITE */
#define FZ_RH_SEG_MAX 1  /* seg_max_descs (fz_limit) */
#define FZ_RH_MAX_SEGS 2 /* max_segments (fz_limit) */
#define FZ_RH_PAGE 3     /* page_bytes (fz_page) */
#define FZ_RH_MAX_XFER 4 /* max_xfer_bytes (fz_max_xfer) */
#define FZ_RH_MEM 5      /* bits 0-1 SGL segment memory, 2-3 PRP list memory: FZ_MEM_*;
			    bits 4-6 where the PRP list starts in its page: FZ_LO_*; bit 7 unused */
#define FZ_RH_SHORT 6    /* FZ_MEM_SHORT sizes: SGL and PRP 8 x value bytes; FZ_LO_SHORT_SEL */
#define FZ_RH_COUNT 7    /* n = 1 + (value & 63); 0xff gives n = 0 */
#define FZ_RH_BYTES 8

#define FZ_MEM_OK 0u        /* enough memory at an aligned bus address */
#define FZ_MEM_NULL 1u      /* NULL pointer */
#define FZ_MEM_MISALIGN 2u  /* bus address off by 4: not 8-byte aligned (SGL and PRP) */
#define FZ_MEM_SHORT 3u     /* FZ_RH_SHORT sizes */

/* The PRP list's offset in its page P (FZ_RH_MEM bits 4-6, after FZ_LO_SHIFT); E is the number
 * of list entries the ranges need (pages - 1), 0 where the ranges are invalid. */
#define FZ_LO_SHIFT 4
#define FZ_LO_MASK 7u
#define FZ_LO_ALIGNED 0u     /* 0: page aligned */
#define FZ_LO_8 1u           /* 8 */
#define FZ_LO_256 2u         /* 256: the second chunk of a pool of 256-byte chunks */
#define FZ_LO_LAST_CHUNK 3u  /* P - 256: the last 256-byte chunk of the page */
#define FZ_LO_ONE_SLOT 4u    /* P - 8: one slot, so a list of two or more entries chains at once */
#define FZ_LO_END_AT_PAGE 5u /* (P - 8 E) mod P: the entries end exactly at the page end */
#define FZ_LO_ONE_SHORT 6u   /* (P - 8 E + 8) mod P: one slot short of that, so the list chains */
#define FZ_LO_SHORT_SEL 7u   /* (8 x FZ_RH_SHORT value) mod P */

static inline uint64_t fz_list_offset(uint8_t mem, uint8_t short_sel, uint64_t pg, uint64_t entries)
{
	uint64_t off;
	if (pg == 0 || (pg & (pg - 1)))
		pg = 4096; /* invalid page sizes: the offset does not matter, the plan fails */
	switch ((mem >> FZ_LO_SHIFT) & FZ_LO_MASK) {
	case FZ_LO_ALIGNED: off = 0; break;
	case FZ_LO_8: off = 8; break;
	case FZ_LO_256: off = 256; break;
	case FZ_LO_LAST_CHUNK: off = pg - 256; break;
	case FZ_LO_ONE_SLOT: off = pg - 8; break;
	case FZ_LO_END_AT_PAGE: off = pg - 8 * entries; break;
	case FZ_LO_ONE_SHORT: off = pg - 8 * entries + 8; break;
	default: off = 8u * short_sel; break;
	}
	return off & (pg - 1);
}

static inline uint64_t fz_max_xfer(uint8_t b)
{
	if (b == 0)
		return 0;
	if (b <= 40)
		return 1ull << b;
	return (uint64_t)(b - 40u) << 20;
}

static inline uint32_t fz_count(uint8_t b)
{
	return b == 0xffu ? 0u : 1u + (b & 63u);
}

#define FZ_RANGE_BASE 0x40000000ull
#define FZ_RANGES_MAX 64u

/* op byte: bits 0-2 address mode, 3-5 length mode, 6 dword-align, 7 unused. */
#define FZ_RA_ADJ 0u        /* prev end */
#define FZ_RA_PAGE_UP 1u    /* prev end rounded up to a page */
#define FZ_RA_PAGE_GAP 2u   /* u8 g: prev end rounded up, plus (1 + g) pages */
#define FZ_RA_ABS_PAGE 3u   /* u32 p: p x 4096 */
#define FZ_RA_ABS 4u        /* u64: as is */
#define FZ_RA_TOP 5u        /* u16 t: 2^64 - (t + 1) x 4096, the top pages */
#define FZ_RA_GAP 6u        /* u8 g: prev end + g */
#define FZ_RA_SAME 7u       /* prev address (overlap) */
#define FZ_RL_PAGES 0u      /* u8 k: (1 + k) x pg */
#define FZ_RL_SMALL 1u      /* u8 k: 1 + k */
#define FZ_RL_U16 2u        /* u16 k: 1 + k */
#define FZ_RL_RAW 3u        /* u32: as is (0 included) */
#define FZ_RL_TO_PAGE 4u    /* to the end of the page the range starts in */
#define FZ_RL_2G 5u         /* 0x7ffff000 */
#define FZ_RL_4G 6u         /* 0xfffff000 */
#define FZ_RL_MULTI_PAGE 7u /* u16 k: (1 + k) pages, less the start's offset into its page */
#define FZ_R_DWORD 0x40u    /* address rounded down, length rounded up to multiples of 4 */
#define FZ_R_OP(addr_mode, len_mode) ((uint8_t)((addr_mode) | ((len_mode) << 3)))

static inline uint64_t fz_round_up(uint64_t x, uint64_t pg)
{
	return (x + pg - 1) / pg * pg;
}

static inline struct gio_range fz_decode_range(struct fz_reader *r, const struct gio_range *prev, uint32_t pg)
{
	const uint8_t op = fz_u8(r);
	const uint64_t prev_end = prev->addr + prev->len;
	struct gio_range out;
	uint64_t len = 0;

	switch (op & 7u) {
	case FZ_RA_ADJ: out.addr = prev_end; break;
	case FZ_RA_PAGE_UP: out.addr = fz_round_up(prev_end, pg); break;
	case FZ_RA_PAGE_GAP: out.addr = fz_round_up(prev_end, pg) + (1u + fz_u8(r)) * (uint64_t)pg; break;
	case FZ_RA_ABS_PAGE: out.addr = (uint64_t)fz_u32(r) * 4096u; break;
	case FZ_RA_ABS: out.addr = fz_u64(r); break;
	case FZ_RA_TOP: out.addr = 0 - ((uint64_t)fz_u16(r) + 1u) * 4096u; break;
	case FZ_RA_GAP: out.addr = prev_end + fz_u8(r); break;
	default: out.addr = prev->addr; break;
	}
	switch ((op >> 3) & 7u) {
	case FZ_RL_PAGES: len = (1u + (uint64_t)fz_u8(r)) * pg; break;
	case FZ_RL_SMALL: len = 1u + (uint64_t)fz_u8(r); break;
	case FZ_RL_U16: len = 1u + (uint64_t)fz_u16(r); break;
	case FZ_RL_RAW: len = fz_u32(r); break;
	case FZ_RL_TO_PAGE: len = pg - out.addr % pg; break;
	case FZ_RL_2G: len = 0x7ffff000u; break;
	case FZ_RL_4G: len = 0xfffff000u; break;
	default: len = (1u + (uint64_t)fz_u16(r)) * pg - out.addr % pg; break;
	}
	if (op & FZ_R_DWORD) {
		out.addr &= ~3ull;
		len = (len + 3u) & ~3ull;
	}
	out.len = len > 0xffffffffull ? 0xfffffffcu : (uint32_t)len;
	return out;
}

/* ------------------------------------------------------------------------- */
/* fuzz_target_cmd: input layout                                              */
/* ------------------------------------------------------------------------- */
/*
 * bytes 0..49   header (FZ_TH_*; missing bytes read as 0)
 * then          the blob: FZ_TH_BLOB_LEN bytes (clamped to what is there), registered as
 *               region A (bus FZ_BUS_A) and region B (its last FZ_TH_SPLIT bytes) exactly as
 *               the walker targets register theirs (fz_region_b_base, misalignment)
 * then          ops until the input ends: an op byte (bits 0-2 FZ_TOP_*, bits 3-7 argument),
 *               then that op's payload (missing bytes read as 0)
 * A third region, FZ_TQ_BYTES of zeros at FZ_TQ_BUS, holds the queues of the canonical
 * bring-up (and whatever commands put there).
 */
#define FZ_TH_CFG 0        /* bits 0-4 SGLS as fz_sgls(); bits 5-7 config mode FZ_TCFG_* */
#define FZ_TH_MDTS 1       /* mdts = value % 9 (raw mode: the value) */
#define FZ_TH_LBA 2        /* lba_shift 9 + (v & 3); bit 7 set: 9 + ((v >> 2) & 7) (raw: v) */
#define FZ_TH_NQ 3         /* max_io_queues 1 + (v & 63) (raw: v) */
#define FZ_TH_MQES 4       /* u16 mqes, 0 read as 1 (raw: as is) */
#define FZ_TH_NSZE 6       /* u64 nsze: small 1 + v % (FZ_TGT_BACKING_MAX >> lba_shift),
			      large 1 + v % (2^(64 - lba_shift) - 1) (raw: as is) */
#define FZ_TH_SGLS 14      /* u32 SGLS, raw mode only */
#define FZ_TH_CC 18        /* bring-up: bits 0-3 FZ_TCC_*, bits 4-6 CC.MPS selector */
#define FZ_TH_ASQS 19      /* admin SQ entries: 0xff -> 1 (invalid), else 2 + v % 63 */
#define FZ_TH_ACQS 20      /* admin CQ entries: 0xff -> 1 (invalid), else 2 + v % 255 */
#define FZ_TH_BLOB_LEN 21  /* u16 bytes of blob after the header */
#define FZ_TH_SPLIT 23     /* u16 the blob's last `split` bytes (clamped) are region B */
#define FZ_TH_REGION 25    /* bits 0-1 region B base (fz_region_b_base), bits 2-4 misalignment */
#define FZ_TH_RAW_CC 26    /* u32 CC for FZ_TCC_RAW (EN forced to 1) */
#define FZ_TH_RAW_AQA 30   /* u32 AQA for FZ_TCC_RAW */
#define FZ_TH_RAW_ASQ 34   /* u64 ASQ for FZ_TCC_RAW */
#define FZ_TH_RAW_ACQ 42   /* u64 ACQ for FZ_TCC_RAW */
#define FZ_TH_BYTES 50

#define FZ_TCFG_SHIFT 5
#define FZ_TCFG_SMALL 0u   /* modes 0-4: valid configuration, small namespace */
#define FZ_TCFG_LARGE 5u   /* modes 5-6: valid configuration, large namespace */
#define FZ_TCFG_RAW 7u     /* mode 7: every field raw; gio_tgt_init may refuse it */

#define FZ_TCC_MPS_SHIFT 4
#define FZ_TCC_VALID 0u       /* modes 0-6: canonical CC/AQA/ASQ/ACQ, CC.MPS = selector & 3 */
#define FZ_TCC_ACQ_IN_A 7u    /* canonical, but ACQ = FZ_BUS_A (valid when region A is big enough) */
#define FZ_TCC_BAD_MPS 8u     /* CC.MPS = 5 + selector (above CAP.MPSMAX) */
#define FZ_TCC_BAD_IOSQES 9u  /* CC.IOSQES = 7 */
#define FZ_TCC_BAD_IOCQES 10u /* CC.IOCQES = 5 */
#define FZ_TCC_BAD_CSS 11u    /* CC.CSS = 7 (admin only) */
#define FZ_TCC_ASQ_MISALIGN 12u /* ASQ = FZ_TQ_BUS + 0x40 */
#define FZ_TCC_ACQ_UNREG 13u  /* ACQ = FZ_TQ_BUS + FZ_TQ_BYTES (just past the region) */
#define FZ_TCC_RAW 14u        /* FZ_TH_RAW_* values */
#define FZ_TCC_NONE 15u       /* no bring-up: the controller stays disabled */

/* The queue region and the canonical admin queues in it. */
#define FZ_TQ_BUS 0x80000000ull
#define FZ_TQ_BYTES 0x8000u
#define FZ_TQ_ASQ FZ_TQ_BUS
#define FZ_TQ_ACQ (FZ_TQ_BUS + 0x1000u)
/* Most bytes of backing store allocated (the namespace, or its first bytes when larger). */
#define FZ_TGT_BACKING_MAX (64u << 10)

/* Ops; the argument is op >> FZ_TOP_ARG_SHIFT. */
#define FZ_TOP_ARG_SHIFT 3
#define FZ_TOP_ADMIN 0u  /* SQE (64): gio_tgt_admin() directly, when the admin queue exists */
#define FZ_TOP_IO 1u     /* u8 capacity (0 -> GIO_TGT_MAX_SEGS), SQE (64): prepare, copy */
#define FZ_TOP_ARING 2u  /* u8 ring mode, u16 tail, u16 head, (arg & 7) SQEs: admin queue */
#define FZ_TOP_IORING 3u /* u8 queue selector, then as FZ_TOP_ARING: an I/O queue */
#define FZ_TOP_REGS 4u   /* u8 mode FZ_TREGS_*, u32 CC, u32 AQA, u64 ASQ, u64 ACQ; poll */
#define FZ_TOP_FETCHQ 5u /* u16 qid: gio_tgt_fetch() of a queue that does not exist */
#define FZ_TOP_ADMIN2 6u /* as FZ_TOP_ADMIN */
#define FZ_TOP_IO2 7u    /* as FZ_TOP_IO */
#define FZ_TOP(kind, arg) ((uint8_t)((kind) | ((arg) << FZ_TOP_ARG_SHIFT)))

/* Ring mode byte. */
#define FZ_TRING_TAIL_MASK 0x03u  /* 0, 1: host tail after the new SQEs; 2: raw; 3: raw % depth */
#define FZ_TRING_TAIL_RAW 2u
#define FZ_TRING_TAIL_MOD 3u
#define FZ_TRING_HEAD_SHIFT 2     /* 0: all consumed; 1: left as is; 2: raw; 3: tail - raw % depth */
#define FZ_TRING_HEAD_ALL 0u
#define FZ_TRING_HEAD_KEEP 1u
#define FZ_TRING_HEAD_RAW 2u
#define FZ_TRING_HEAD_BEHIND 3u
#define FZ_TRING_BATCH_SHIFT 4    /* fetch 1 << value commands before serving them */
#define FZ_TRING_REVERSE 0x40u    /* post a batch in reverse order */

/* REGS op modes (bits 0-2), CC.MPS for FZ_TREGS_ENABLE in bits 4-5. */
#define FZ_TREGS_DISABLE 0u  /* CC.EN = 0 */
#define FZ_TREGS_ENABLE 1u   /* canonical CC, AQA, ASQ, ACQ (sizes from the header) */
#define FZ_TREGS_SHN_NORMAL 2u
#define FZ_TREGS_SHN_ABRUPT 3u
#define FZ_TREGS_SHN_CLEAR 4u
#define FZ_TREGS_RAW_CC 5u   /* the op's CC */
#define FZ_TREGS_RAW_ALL 6u  /* the op's CC, AQA, ASQ, ACQ */
#define FZ_TREGS_POLL 7u     /* nothing written */
#define FZ_TREGS_PAYLOAD 24u

/* Canonical CC: EN, NVM command set, MPS, 64-byte SQEs, 16-byte CQEs. */
static inline uint32_t fz_tgt_cc(uint32_t mps)
{
	return 1u | ((mps & 0xfu) << 7) | (6u << 16) | (4u << 20);
}

#endif /* GIO_FUZZ_COMMON_H */
