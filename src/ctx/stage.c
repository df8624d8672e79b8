/* Staging areas (giouring/host/stage.h): host memory for the staged path, registered with a
 * context, with its slot rings and, where the controller takes PRPs, its staging table and each
 * slot's PRP list. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/stage.h>
#include <giouring/proto/dptr.h>

#include "../cuda/cudart.h"
#include "../internal.h"

#define PAGE 4096ull

struct gio_ctx_stage {
	struct gio_ctx *ctx;
	void *mem;             /* the slots, then (PRP) each slot's list; GPU: then the table */
	size_t bytes;          /* registered */
	int pinned;            /* GIO_CTX_STAGE_GPU: mem from the pinned cache (GPU-mapped) */
	uint32_t *words;       /* nrings x nslots slot words */
	struct gio_stage *rings;
	union gio_dptr *table; /* PRP: nrings x nslots entries; else NULL */
	struct gio_kv_io_stage io;
};

static void stage_free(struct gio_ctx_stage *s)
{
	if (s->pinned)
		(void)gio__pinned_put(s->mem); /* back to the cache: no CUDA call, nothing waits for kernels */
	else
		free(s->mem);
	free(s->words);
	free(s->rings);
	if (!s->pinned)
		free(s->table);
	free(s);
}

int gio_ctx_stage_create(struct gio_ctx *ctx, uint32_t nrings, uint32_t nslots, uint64_t slot_bytes, uint32_t flags,
			 struct gio_ctx_stage **out)
{
	struct gio_ctx_stage *s;
	const struct gio_dptr_caps *caps;
	uint64_t stride, list_stride = 0, slots_bytes, bus = 0;
	uint32_t q, i, n;
	int rc;
	gio__clear_error();
	if (!ctx || !out)
		return gio__fail(-EINVAL, "giouring: staging area: NULL argument");
	*out = NULL;
	if (flags & ~GIO_CTX_STAGE_GPU)
		return gio__fail(-EOPNOTSUPP, "giouring: staging area: flags %#x unknown (0: the CPU engine copies; "
				 "GIO_CTX_STAGE_GPU: the GPU engine)", flags);
	if (nrings == 0 || nrings > 64 || nslots == 0 || nslots > 65536 || (nslots & (nslots - 1)))
		return gio__fail(-EINVAL, "giouring: staging area: %u rings of %u slots (1 to 64 rings; slots a power of two "
				 "from 1 to 65536)", nrings, nslots);
	if (slot_bytes < 4 || slot_bytes > (1ull << 30) || slot_bytes % 4)
		return gio__fail(-EINVAL, "giouring: staging area: %llu-byte slots (a multiple of 4 from 4 to 1 GiB)",
				 (unsigned long long)slot_bytes);
	caps = gio_ctx_dptr_caps(ctx);
	/* Every slot on a page boundary: a PRP entry's offset is then 0, and an SGL Data Block's address
	 * dword aligned. */
	stride = (slot_bytes + PAGE - 1) / PAGE * PAGE;
	n = nrings * nslots;
	slots_bytes = stride * n;
	if (gio_dptr_sgl_support(caps) == GIO_SGLS_SUPPORT_NONE) /* a page of list per 511 data pages */
		list_stride = (stride / PAGE / 511 + 1) * PAGE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return gio__fail(-ENOMEM, "giouring: staging area: no memory");
	s->ctx = ctx;
	s->bytes = slots_bytes + list_stride * n;
	s->words = calloc(n, sizeof(*s->words));
	s->rings = calloc(nrings, sizeof(*s->rings));
	if (flags & GIO_CTX_STAGE_GPU) {
		/* Pinned and mapped, so that GPU warps reach the slots (and the table) with loads and
		 * stores; the cache's blocks are page-aligned. The table follows the registered part. */
		const size_t table_bytes = list_stride ? (size_t)n * sizeof(*s->table) : 0;
		rc = gio__pinned_alloc(s->bytes + table_bytes, "staging area for the GPU engine", &s->mem);
		if (rc) {
			s->mem = NULL;
			stage_free(s);
			return rc; /* its message stands */
		}
		s->pinned = 1;
		if ((uintptr_t)s->mem % PAGE) {
			const uintptr_t at = (uintptr_t)s->mem;
			stage_free(s);
			return gio__fail(-EINVAL, "giouring: staging area: pinned memory at %#lx is not page-aligned",
					 (unsigned long)at);
		}
		s->table = list_stride ? (union gio_dptr *)((char *)s->mem + s->bytes) : NULL;
	} else {
		s->table = list_stride ? calloc(n, sizeof(*s->table)) : NULL;
		if (posix_memalign(&s->mem, PAGE, s->bytes))
			s->mem = NULL;
	}
	if (!s->mem || !s->words || !s->rings || (list_stride && !s->table)) {
		stage_free(s);
		return gio__fail(-ENOMEM, "giouring: staging area: no memory for %u slots of %llu bytes", n,
				 (unsigned long long)stride);
	}
	memset(s->mem, 0, s->bytes);
	rc = gio_ctx_register(ctx, s->mem, s->bytes, &bus);
	if (rc) {
		stage_free(s);
		return rc; /* its message stands */
	}
	for (q = 0; q < nrings; q++) {
		struct gio_stage *st = &s->rings[q];
		rc = gio_stage_init(st, s->words + (size_t)q * nslots, nslots, stride, bus + (uint64_t)q * nslots * stride,
				    GIO_SCOPE_SYS);
		for (i = 0; !rc && list_stride && i < nslots; i++) {
			const uint64_t off = slots_bytes + ((uint64_t)q * nslots + i) * list_stride;
			const int used = gio_kv_stage_table_entry(st, i, stride, caps, &s->table[(size_t)q * nslots + i],
								  (char *)s->mem + off, bus + off, list_stride);
			rc = used < 0 ? used : 0;
		}
		if (rc) {
			(void)gio_ctx_unregister(ctx, s->mem);
			stage_free(s);
			return gio__fail(rc, "giouring: staging area: ring %u of %u slots of %llu bytes: %d", q, nslots,
					 (unsigned long long)stride, rc);
		}
	}
	s->io.rings = s->rings;
	s->io.table = s->table;
	s->io.area = s->mem;
	*out = s;
	return 0;
}

const struct gio_kv_io_stage *gio_ctx_stage_io(const struct gio_ctx_stage *st)
{
	return st ? &st->io : NULL;
}

int gio_ctx_stage_destroy(struct gio_ctx_stage *st)
{
	int rc;
	if (!st)
		return 0;
	rc = gio_ctx_unregister(st->ctx, st->mem);
	if (rc)
		return rc; /* kept: a controller may still write it */
	stage_free(st);
	return 0;
}
