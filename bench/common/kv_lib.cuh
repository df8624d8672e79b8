// kv_lib.cuh: the library's own restore path over the workload of workload.cuh, as an engine
// would use it: the workload's pool described by strides (giouring/kv/pool.h), its P2P tables
// built once on the GPU (SGL, and PRP where the controller takes it), a store
// (giouring/kv/store.h) on the path's target holding each block of the prefix as one chunk, and
// one plan (giouring/kv/plan.h) per row. A repetition is one gio_kv_plan_load() (untimed, in
// the row's prepare), one gio_kv_load_layer() launch per layer (timed: the library's I/O kernel,
// giouring/kv/layer.cuh) and one gio_kv_plan_finish() after the stop event (untimed: each
// request's result is checked there; a failed command fails the row with its NVMe status).
//
// The chunk of block b holds, per layer, its K and V objects: two 32 KiB runs of the pool (the
// K half and the V half of the layer's tensor), one layer object of 64 KiB on the target. So one
// command moves both halves: an SGL descriptor with a two-entry segment list, or PRPs chaining
// the two runs' pages. The store is written through the same calls (gio_kv_save_layer(), from the
// pool filled unshuffled) before the rows; a load then lands block b at pool block perm[b], the
// layout every shuffled row is verified against.
//
// The bench opens its target, registers the pool, translates it to the target's bus addresses
// (giouring/kv/bus.h) and creates the store; it gives kv_lib the device's queue pairs and a way
// to allocate and register metadata memory (segment and PRP lists the controller reads).
#ifndef GIOURING_BENCH_COMMON_KV_LIB_CUH
#define GIOURING_BENCH_COMMON_KV_LIB_CUH

#include <cinttypes>
#include <vector>

#include <giouring/kv/layer.cuh>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>

#include "runner.cuh"
#include "workload.cuh"

// The workload's pool: per layer a [2, pool_blocks, block_tokens, kv_heads, head_dim] tensor,
// the layers one after the other from pool_base (workload.cuh).
static inline void kv_lib_pool(const struct kv_workload *w, struct gio_kv_pool *p)
{
	const struct gio_kv_geometry *g = &w->geom;
	*p = gio_kv_pool{};
	p->base = (uint64_t)(uintptr_t)w->pool_base;
	p->base_mode = GIO_KV_BASE_ONE;
	p->elem_bytes = g->dtype_bytes;
	const uint32_t ext[GIO_KV_DIMS] = {w->n_layers, w->pool_blocks, 2u, g->block_tokens, g->kv_heads, g->head_dim};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		p->extent[d] = ext[d];
	p->stride[GIO_KV_CHANNEL] = 1;
	p->stride[GIO_KV_HEAD] = g->head_dim;
	p->stride[GIO_KV_TOKEN] = (uint64_t)g->head_dim * g->kv_heads;
	p->stride[GIO_KV_BLOCK] = w->obj_bytes / g->dtype_bytes;
	p->stride[GIO_KV_PART] = p->stride[GIO_KV_BLOCK] * w->pool_blocks;
	p->stride[GIO_KV_LAYER] = 2 * p->stride[GIO_KV_PART];
}

// Memory the controller reads (segment lists, PRP lists): allocate `bytes` the GPU can write
// (*dev) and register it with the target (*bus). Returns 0 or -errno.
typedef int (*kv_lib_meta_fn)(void *arg, uint64_t bytes, void **dev, uint64_t *bus);

// The path's one device, as the bench opened it.
struct kv_lib_target {
	struct gio_kv_pool bus_pool;   // the pool with the target's bus addresses
	struct gio_dptr_caps caps;     // the controller's data pointer rules
	struct gio_qp *const *qps;     // nqps queue pairs the GPU uses (a host array of their device pointers)
	uint32_t nqps, nsid, lba_shift;
	kv_lib_meta_fn meta;
	void *meta_arg;
};

enum { KV_LIB_SGL = 0, KV_LIB_PRP = 1 };

struct kv_lib {
	const struct kv_workload *w;
	struct kv_lib_target t;
	struct gio_kv_runs runs;
	struct gio_kv_table_sizes sizes;
	struct gio_kv_store *store;
	union gio_dptr *table[2];      // SGL, PRP (NULL where the controller cannot take the form)
	uint32_t prp_cmds;             // PRP commands per object
	uint64_t prp_list_stride;
	double table_ms[2];
	int *d_rc;                     // managed: the table builds' first failure
	std::vector<struct gio_kv_u128> keys;
	std::vector<uint32_t> identity, shuffled;
	std::vector<struct gio_kv_io_result> results;
};

// One row: a plan over the store with its form and I/O kernel size.
struct kv_lib_row {
	struct kv_lib *lib;
	struct gio_kv_plan *plan;
	int form;
	uint32_t io_sms, io_warps;
	kv_issue_fn before;            // optional: runs first in each repetition's prepare
	void *before_arg;
};

// Store parameters of the workload's chunks (object: the layer's K and V of one block).
static inline int kv_lib_store_params(const struct kv_workload *w, double timeout_s, struct gio_kv_store_params *sp,
				      char *err, size_t errlen)
{
	struct gio_kv_pool pool;
	struct gio_kv_runs runs;
	kv_lib_pool(w, &pool);
	if (gio_kv_pool_check(&pool, nullptr) || gio_kv_pool_runs(&pool, &runs)) {
		kv_fmt(err, errlen, "the workload's pool was refused: %s", gio_last_error());
		return -1;
	}
	*sp = gio_kv_store_params{};
	sp->layers = w->n_layers;
	sp->object_bytes = runs.object_bytes;
	sp->pool_signature = gio_kv_pool_signature(&pool, &runs);
	sp->timeout_ns = (uint64_t)(timeout_s * 1e9);
	return 0;
}

// Bytes a target needs for the workload's store: the chunks, one spare, the index (a block a
// slot: under 1%) and the superblock region, in whole MiB.
static inline uint64_t kv_lib_store_bytes(const struct kv_workload *w)
{
	const uint64_t chunk = 2ull * w->obj_bytes * w->n_layers;
	return ((kv_total_bytes(w) + chunk) * 102 / 100 + (16u << 20)) >> 20 << 20;
}

// Builds the P2P tables (timed on the GPU, each once) and the keys. Before the target's
// persistent executor starts: the tables' memory is allocated here.
static inline int kv_lib_init(struct kv_lib *lib, const struct kv_workload *w, struct kv_runner *r,
			      const struct kv_lib_target *t, struct gio_kv_store *store, char *err, size_t errlen)
{
	*lib = kv_lib{};
	lib->w = w;
	lib->t = *t;
	lib->store = store;
	if (w->pool_blocks != w->n_blocks) {
		kv_fmt(err, errlen, "kv_lib: a prefix view (%u of %u blocks) is not a path's workload", w->n_blocks, w->pool_blocks);
		return -1;
	}
	if (gio_kv_pool_runs(&t->bus_pool, &lib->runs) || gio_kv_table_plan(&t->bus_pool, &lib->runs, &t->caps, &lib->sizes)) {
		kv_fmt(err, errlen, "P2P table plan: %s", gio_last_error());
		return -1;
	}
	KV_CK(cudaMallocManaged((void **)&lib->d_rc, sizeof(int)));
	for (int form = KV_LIB_SGL; form <= KV_LIB_PRP; form++) {
		const gio_kv_table_sizes &s = lib->sizes;
		if (form == KV_LIB_SGL ? s.sgl_rc : s.prp_rc)
			continue; // the controller cannot take this form: its rows are skipped
		void *meta = nullptr;
		uint64_t meta_bus = 0, meta_bytes;
		if (form == KV_LIB_SGL) {
			meta_bytes = s.sgl_list_bytes;
		} else {
			lib->prp_cmds = s.prp_cmds;
			// A list that crosses a page end would need a chain entry there: each list gets
			// the smallest power-of-two chunk that holds it (whole pages above a page), so
			// none crosses one.
			uint64_t stride = s.prp_list_bytes ? 8 : 0;
			while (stride && stride < s.prp_list_bytes && stride < t->caps.page_bytes)
				stride <<= 1;
			if (stride >= t->caps.page_bytes)
				stride = (s.prp_list_bytes + t->caps.page_bytes - 1) / t->caps.page_bytes * t->caps.page_bytes;
			lib->prp_list_stride = stride;
			meta_bytes = s.objects * s.prp_cmds * lib->prp_list_stride;
		}
		if (meta_bytes && t->meta(t->meta_arg, meta_bytes, &meta, &meta_bus)) {
			kv_fmt(err, errlen, "%s lists (%" PRIu64 " bytes): %s", form == KV_LIB_SGL ? "SGL segment" : "PRP",
			       meta_bytes, gio_last_error());
			return -1;
		}
		const uint64_t entries = s.objects * (form == KV_LIB_SGL ? 1u : s.prp_cmds);
		KV_CK(cudaMalloc((void **)&lib->table[form], entries * sizeof(union gio_dptr)));
		*lib->d_rc = 0;
		KV_CK(cudaEventRecord(r->ev_start, r->stream));
		const int rc = form == KV_LIB_SGL
				       ? gio_kv_table_build(&t->bus_pool, &lib->runs, &t->caps, lib->table[form],
							    (struct gio_sgl_desc *)meta, meta_bus, lib->d_rc, r->stream)
				       : gio_kv_table_build_prp(&t->bus_pool, &lib->runs, &t->caps, lib->table[form], meta,
								meta_bus, lib->prp_list_stride, lib->d_rc, r->stream);
		KV_CK(cudaEventRecord(r->ev_stop, r->stream));
		if (rc) {
			kv_fmt(err, errlen, "table build: %s", gio_last_error());
			return -1;
		}
		kv_sync(r, "building a P2P table");
		float ms = 0;
		KV_CK(cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop));
		lib->table_ms[form] = ms;
		if (*lib->d_rc) {
			kv_fmt(err, errlen, "%s table: an entry was refused (%d)", form == KV_LIB_SGL ? "SGL" : "PRP", *lib->d_rc);
			return -1;
		}
	}
	lib->keys.resize(w->n_blocks);
	lib->identity.resize(w->n_blocks);
	lib->shuffled.resize(w->n_blocks);
	lib->results.resize(w->n_blocks);
	for (uint32_t b = 0; b < w->n_blocks; b++) {
		lib->keys[b] = gio_kv_u128{0x6b765f6c69625f31ull, b};
		lib->identity[b] = b;
		lib->shuffled[b] = w->perm[b];
	}
	return 0;
}

// Makes a row's plan (before the executor starts). Returns 0, or -1 with a message; a form the
// controller cannot take gives -2 (the row is skipped, the reason in err).
static inline int kv_lib_row_init(struct kv_lib_row *row, struct kv_lib *lib, int form, uint32_t io_sms,
				  uint32_t io_warps, double timeout_s, char *err, size_t errlen)
{
	*row = kv_lib_row{};
	row->lib = lib;
	row->form = form;
	row->io_sms = io_sms;
	row->io_warps = io_warps;
	if (!lib->table[form]) {
		kv_fmt(err, errlen, "the controller cannot take the %s form (%d)", form == KV_LIB_SGL ? "SGL" : "PRP",
		       form == KV_LIB_SGL ? lib->sizes.sgl_rc : lib->sizes.prp_rc);
		return -2;
	}
	struct gio_kv_io_dev dev = {};
	dev.qps = lib->t.qps;
	dev.table = lib->table[form];
	dev.nqps = lib->t.nqps;
	dev.nsid = lib->t.nsid;
	dev.lba_shift = lib->t.lba_shift;
	dev.psdt = form == KV_LIB_SGL ? GIO_PSDT_SGL_MPTR : GIO_PSDT_PRP;
	dev.cmds = form == KV_LIB_SGL ? 0u : lib->prp_cmds;
	struct gio_kv_plan_params pp = {};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = lib->w->n_blocks;
	pp.blocks = lib->w->pool_blocks;
	pp.io_ctas = io_sms;
	pp.io_warps = io_warps;
	pp.timeout_ns = (uint64_t)(timeout_s * 1e9);
	pp.devs = &dev;
	if (gio_kv_plan_create(lib->store, &pp, &row->plan)) {
		kv_fmt(err, errlen, "plan: %s", gio_last_error());
		return -1;
	}
	return 0;
}

static inline void kv_lib_row_destroy(struct kv_lib_row *row)
{
	if (row->plan && gio_kv_plan_destroy(row->plan))
		std::fprintf(stderr, "plan destroy: %s\n", gio_last_error());
	row->plan = nullptr;
}

// The first failing request's result as a message.
static inline void kv_lib_failure(const struct kv_lib *lib, int rc, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < lib->results.size(); i++) {
		const gio_kv_io_result &x = lib->results[i];
		if (x.rc) {
			kv_fmt(err, errlen, "chunk %u, layer %u: rc %d, NVMe status 0x%04x (%s)", i, x.layer, x.rc, x.status,
			       gio_status_str(x.status));
			return;
		}
	}
	kv_fmt(err, errlen, "rc %d: %s", rc, gio_last_error());
}

// Writes the store: the pool filled unshuffled from the host store (one copy: pool_blocks ==
// n_blocks), then every chunk saved from its own block through the row's plan, every layer one
// gio_kv_save_layer() launch. After the target's executor started.
static inline int kv_lib_fill(struct kv_lib_row *row, struct kv_runner *r, char *err, size_t errlen)
{
	struct kv_lib *lib = row->lib;
	const struct kv_workload *w = lib->w;
	std::vector<int32_t> put(w->n_blocks, 0);
	KV_CK(cudaMemcpyAsync(w->pool_base, w->store, kv_total_bytes(w), cudaMemcpyHostToDevice, r->stream));
	kv_sync(r, "copying the store into the pool");
	const int n = gio_kv_plan_save(row->plan, lib->keys.data(), lib->identity.data(), w->n_blocks, put.data());
	if (n != (int)w->n_blocks) {
		kv_fmt(err, errlen, "plan save: %d of %u chunks planned (%s)", n, w->n_blocks, gio_last_error());
		return -1;
	}
	for (uint32_t l = 0; l < w->n_layers; l++)
		if (gio_kv_save_layer(row->plan, l, r->stream)) {
			kv_fmt(err, errlen, "save layer %u: %s", l, gio_last_error());
			return -1;
		}
	kv_sync(r, "saving the store");
	const int rc = gio_kv_plan_finish(row->plan, lib->results.data(), 0);
	if (rc) {
		kv_lib_failure(lib, rc, err, errlen);
		return -1;
	}
	return 0;
}

// kv_path hooks: plan the batch (prepare), one launch per layer (issue), results (finish).
static inline int kv_lib_prepare(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	struct kv_lib_row *row = (struct kv_lib_row *)arg;
	if (row->before && row->before(w, r, row->before_arg))
		return 1;
	const int n = gio_kv_plan_load(row->plan, row->lib->keys.data(), row->lib->shuffled.data(), w->n_blocks, nullptr);
	if (n != (int)w->n_blocks) {
		kv_fmt(r->err, sizeof(r->err), "plan load: %d of %u chunks found (%s)", n, w->n_blocks, gio_last_error());
		return 1;
	}
	return 0;
}

static inline int kv_lib_issue(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	struct kv_lib_row *row = (struct kv_lib_row *)arg;
	for (uint32_t l = 0; l < w->n_layers; l++)
		if (gio_kv_load_layer(row->plan, l, r->stream)) {
			kv_fmt(r->err, sizeof(r->err), "load layer %u: %s", l, gio_last_error());
			return 1;
		}
	return 0;
}

static inline int kv_lib_finish(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	struct kv_lib_row *row = (struct kv_lib_row *)arg;
	(void)w;
	const int rc = gio_kv_plan_finish(row->plan, row->lib->results.data(), 0);
	if (rc) {
		kv_lib_failure(row->lib, rc, r->err, sizeof(r->err));
		return 1;
	}
	return 0;
}

// A row's kv_path (name and note the bench's).
static inline struct kv_path kv_lib_path(struct kv_lib_row *row, const char *name, const char *note)
{
	struct kv_path p = {name, note, kv_lib_prepare, kv_lib_issue, row, KV_VERIFY_SHUFFLED, row->io_sms,
			    row->lib->w->n_layers, kv_lib_finish};
	return p;
}

// The metadata a row's form takes per object as allocated: the SGL descriptor and its segment
// list, or per PRP command its PRP1/PRP2 and its list's chunk.
static inline uint64_t kv_lib_meta_per_object(const struct kv_lib *lib, int form)
{
	return form == KV_LIB_SGL ? lib->sizes.sgl_object_bytes : lib->prp_cmds * (16 + lib->prp_list_stride);
}

static inline void kv_lib_destroy(struct kv_lib *lib)
{
	for (int f = 0; f < 2; f++)
		if (lib->table[f])
			KV_CK(cudaFree(lib->table[f]));
	if (lib->d_rc)
		KV_CK(cudaFree(lib->d_rc));
	lib->table[0] = lib->table[1] = nullptr;
	lib->d_rc = nullptr;
}

#endif // GIOURING_BENCH_COMMON_KV_LIB_CUH
