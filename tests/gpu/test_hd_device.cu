// Every GIO_HD function compiled for the GPU and run there, compared byte for byte with the same
// call on the host (the scheduler's too: sched/profile.h, sched/sched.h). Without a GPU it compiles (so device code cannot rot) and exits 77, which
// ctest reports as skipped.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

#include <giouring/giouring.h>
#include <giouring/kv/format.h>
#include <giouring/proto/prp_walk.h>
#include <giouring/proto/sgl_walk.h>

#include "../kv_one_request.h"

namespace {

const int kSkip = 77;
const uint64_t kSegAddr = 0x100000;
const uint64_t kListAddr = 0x200000;

// The KV store's on-device format: layouts, superblock and entry bytes, the decode refusal of
// every damaged byte, CRC32C.
struct KvFormatResults {
	gio_kv_layout lay[4];
	int lay_rc[4];
	uint32_t lay_reason[4];
	uint8_t sb_bytes[GIO_KV_SB_BYTES];
	uint8_t entry_bytes[2][GIO_KV_ENTRY_BYTES];
	gio_kv_sb sb_back;
	gio_kv_entry entry_back;
	int rc[8];
	uint32_t reason[8];
	int sb_flip_rc[GIO_KV_SB_BYTES];
	uint32_t sb_flip_reason[GIO_KV_SB_BYTES];
	int entry_flip_rc[GIO_KV_ENTRY_BYTES];
	uint32_t entry_flip_reason[GIO_KV_ENTRY_BYTES];
	uint32_t crc[4];
	gio_kv_span span[2];
	uint64_t lbas[3];
	char reason_names[GIO_KV_R_COUNT];
};

__host__ __device__ void exercise_kv_format(KvFormatResults *r)
{
	const gio_kv_u128 store = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	const gio_kv_u128 key = {0xa0a1a2a3a4a5a6a7ull, 0xb0b1b2b3b4b5b6b7ull};
	r->lay_rc[0] = gio_kv_layout_compute(1ull << 30, 4096, 32, 65536, &r->lay[0], &r->lay_reason[0]);
	r->lay_rc[1] = gio_kv_layout_compute(1u << 20, 512, 3, 1000, &r->lay[1], &r->lay_reason[1]);
	r->lay_rc[2] = gio_kv_layout_compute(8ull << 40, 512, 32, 65536, &r->lay[2], &r->lay_reason[2]);
	r->lay_rc[3] = gio_kv_layout_compute(4096, 4096, 1, 4096, &r->lay[3], &r->lay_reason[3]);

	gio_kv_sb sb;
	r->rc[0] = gio_kv_sb_init(&sb, &r->lay[0], store, 2, 4, 0x1122334455667788ull, &r->reason[0]);
	r->rc[1] = gio_kv_sb_encode(r->sb_bytes, &sb, &r->reason[1]);
	r->rc[2] = gio_kv_sb_decode(r->sb_bytes, &r->sb_back, &r->reason[2]);
	r->rc[3] = gio_kv_entry_encode(r->entry_bytes[0], &sb, 7, GIO_KV_ENTRY_VALID, key, 0x1234, 2u << 20, &r->reason[3]);
	r->rc[4] = gio_kv_entry_decode(r->entry_bytes[0], &sb, 7, &r->entry_back, &r->reason[4]);
	const gio_kv_u128 zero = {0, 0};
	r->rc[5] = gio_kv_entry_encode(r->entry_bytes[1], &sb, 0, GIO_KV_ENTRY_FREE, zero, 0, 0, &r->reason[5]);
	r->rc[6] = gio_kv_sb_check_set(&r->sb_back, 1, &r->reason[6], nullptr);
	r->rc[7] = gio_kv_sb_check_shape(&r->sb_back, 32, 65536, 1, &r->reason[7]);

	for (uint32_t i = 0; i < GIO_KV_SB_BYTES; i++) {
		uint8_t bad[GIO_KV_SB_BYTES];
		gio_kv_sb out;
		memcpy(bad, r->sb_bytes, sizeof(bad));
		bad[i] ^= (uint8_t)(1u << (i % 8));
		r->sb_flip_rc[i] = gio_kv_sb_decode(bad, &out, &r->sb_flip_reason[i]);
	}
	for (uint32_t i = 0; i < GIO_KV_ENTRY_BYTES; i++) {
		uint8_t bad[GIO_KV_ENTRY_BYTES];
		gio_kv_entry out;
		memcpy(bad, r->entry_bytes[0], sizeof(bad));
		bad[i] ^= 0xffu;
		r->entry_flip_rc[i] = gio_kv_entry_decode(bad, &sb, 7, &out, &r->entry_flip_reason[i]);
	}
	r->crc[0] = gio_kv_crc32c(0, "123456789", 9);
	r->crc[1] = gio_kv_crc32c(0, r->sb_bytes, GIO_KV_SB_BYTES);
	r->crc[2] = gio_kv_crc32c(gio_kv_crc32c(0, r->sb_bytes, 50), r->sb_bytes + 50, GIO_KV_SB_BYTES - 50);
	r->crc[3] = gio_kv_crc32c(0, r->entry_bytes, sizeof(r->entry_bytes));
	(void)gio_kv_layer_span(&r->lay[1], 2, 1, &r->span[0]);
	(void)gio_kv_layer_span(&r->lay[0], 510, 31, &r->span[1]);
	r->lbas[0] = gio_kv_entry_lba(&r->lay[0], 9);
	r->lbas[1] = gio_kv_slot_lba(&r->lay[2], 4193279);
	r->lbas[2] = gio_kv_slot_offset(&r->lay[1], 5) + gio_kv_layer_offset(&r->lay[1], 2);
	for (uint32_t i = 0; i < GIO_KV_R_COUNT; i++)
		r->reason_names[i] = gio_kv_reason_str(i)[0];
}

// The scheduler: a slack profile (lookups, observations, fold) and slot decisions, slack-aware and
// naive, over a backlog. Its floating point (bilinear weights, EWMA, bytes / bandwidth) must give
// the same bits on both: the comparison says whether the device's contraction into fused
// multiply-adds changes any.
struct SchedResults {
	gio_sched_profile prof;
	gio_sched_estimate est[4];
	int rc[24];
	uint32_t reason[4];
	gio_sched_config cfg;
	gio_sched_item ring[8];
	gio_sched_backlog bl; // its ring pointer cleared before the comparison
	gio_sched_slot slot[3];
	gio_sched_decision dec[4];
	gio_sched_write w[4][8];
	uint64_t xfer[3];
	char names[24];
};

__host__ __device__ void exercise_sched(SchedResults *r)
{
	const uint32_t in[3] = {128, 1024, 8192}, pre[2] = {0, 32768};
	r->rc[0] = gio_sched_profile_init(&r->prof, 4, in, 3, pre, 2, &r->reason[0]);
	r->prof.has_sm = 1;
	for (uint32_t l = 0; l < 4; l++)
		for (uint32_t i = 0; i < 3; i++)
			for (uint32_t p = 0; p < 2; p++) {
				const uint32_t c = gio_sched_profile_cell(l, i, p);
				r->prof.slack_ns[c] = 100000u + 1000u * l + 37ull * in[i] + 3ull * pre[p];
				r->prof.sm[c] = (uint16_t)(4 + l + 3 * i + p);
			}
	r->rc[1] = gio_sched_profile_check(&r->prof, &r->reason[1]);
	r->rc[2] = gio_sched_profile_lookup(&r->prof, 500, 20000, 2, &r->est[0]);
	r->rc[3] = gio_sched_profile_lookup(&r->prof, 100000, 100000, 3, &r->est[1]);
	for (uint32_t k = 0; k < 20; k++)
		r->rc[4] = gio_sched_profile_observe(&r->prof, 700 + 300 * k, 1000 * k, 1,
						     120000u + 5000u * (k % 3) + 41u * k, &r->reason[2]);
	r->rc[5] = gio_sched_profile_observe(&r->prof, 700, 1000, 1, 100u * r->est[0].slack_ns, &r->reason[3]);
	r->rc[6] = gio_sched_profile_lookup(&r->prof, 3000, 5000, 1, &r->est[2]);
	r->rc[7] = gio_sched_profile_fold(&r->prof);
	r->rc[8] = gio_sched_profile_lookup(&r->prof, 3000, 5000, 1, &r->est[3]);

	r->cfg.ndevs = 3;
	r->cfg.gate = GIO_SCHED_GATE_DEVICE;
	r->cfg.sm_min = 2;
	r->cfg.sm_max = 8;
	r->cfg.decode_window_ns = 3000000;
	for (uint32_t d = 0; d < 3; d++) {
		r->cfg.dev[d].read_gbps = 7.25 - d;
		r->cfg.dev[d].write_gbps = 3.1 + 0.3 * d;
		r->cfg.dev[d].mixed_gbps = 2.9;
	}
	r->rc[9] = gio_sched_config_check(&r->cfg, &r->reason[0], &r->reason[1]);
	r->rc[10] = gio_sched_backlog_init(&r->bl, r->ring, 8, 64ull << 20, 20ull << 20);
	for (uint32_t k = 0; k < 7; k++) {
		gio_sched_item it;
		it.id = 100 + k;
		for (uint32_t d = 0; d < GIO_SCHED_DEVS_MAX; d++)
			it.bytes[d] = d < 3 && (k + d) % 3 ? (1ull << 20) * (1 + k) + 4096 * d : 0;
		r->rc[11 + k] = gio_sched_backlog_push(&r->bl, &it);
	}
	for (uint32_t n = 0; n < 3; n++) {
		for (uint32_t d = 0; d < 3; d++)
			r->slot[n].read_bytes[d] = (16ull << 20) + 777 * d * n;
		r->slot[n].phase = n == 2 ? GIO_SCHED_DECODE : GIO_SCHED_PREFILL;
		r->slot[n].slack_ns = 6000000 + 250000 * n;
		r->slot[n].sm = 3 * n;
	}
	r->rc[18] = gio_sched_plan(&r->cfg, &r->bl, &r->slot[0], r->w[0], 8, &r->dec[0]);
	r->rc[19] = gio_sched_plan_naive(&r->cfg, &r->bl, &r->slot[0], r->w[1], 8, &r->dec[1]);
	r->rc[20] = gio_sched_backlog_pop(&r->bl, r->dec[0].nwrites);
	r->rc[21] = gio_sched_carry(&r->dec[0], &r->slot[2]);
	r->rc[22] = gio_sched_plan(&r->cfg, &r->bl, &r->slot[2], r->w[2], 8, &r->dec[2]);
	r->cfg.gate = GIO_SCHED_GATE_LAYER;
	r->rc[23] = gio_sched_plan(&r->cfg, &r->bl, &r->slot[1], r->w[3], 8, &r->dec[3]);
	r->xfer[0] = gio_sched_xfer_ns(123456789, 7.25);
	r->xfer[1] = gio_sched_xfer_ns(1, 3.0);
	r->xfer[2] = gio_sched_xfer_ns(~0ull, 1e-3);
	for (uint32_t i = 0; i < 12; i++) {
		r->names[i] = gio_sched_reason_name(i)[0];
		r->names[12 + i] = gio_sched_profile_reason_name(i)[0];
	}
	r->bl.items = nullptr; // an address, of another space on each side
}

// The staged path's pure parts: a slot ring's life cycle (its words in the results, global memory
// on the device, where its atomics may go), a staged command of a plan, and the moves of a
// strided object between its slot and the pool.
struct StageResults {
	gio_stage st;
	uint32_t words[4];
	uint32_t tickets[3];
	int rc[16];
	uint64_t off[2], bus[2];
	gio_sqe sqe;
	gio_kv_stage_move mv[4];
	int nmv[3];
	union gio_dptr entry;
};

__host__ __device__ void exercise_stage(StageResults *r)
{
	r->rc[0] = gio_stage_init(&r->st, r->words, 4, 8192, 0x7000000, GIO_SCOPE_SYS);
	r->rc[1] = gio_stage_reserve(&r->st, 3, &r->tickets[0]);
	r->rc[2] = gio_stage_reserve(&r->st, 2, &r->tickets[1]); // -EBUSY: one slot left
	r->rc[3] = gio_stage_fill(&r->st, 1);
	r->rc[4] = gio_stage_full(&r->st, 1);
	r->rc[5] = gio_stage_release(&r->st, 1);
	r->rc[6] = gio_stage_release(&r->st, 1); // -EINVAL: released already
	r->rc[7] = gio_stage_lose(&r->st, 0);
	r->rc[8] = gio_stage_release(&r->st, 2);
	r->rc[9] = gio_stage_reserve(&r->st, 3, &r->tickets[1]); // tickets 3, 4 (slot 0: LOST) -> -EBUSY
	r->rc[10] = gio_stage_reserve_wait(&r->st, 2, gio_deadline_in(0), &r->tickets[2]); // -ETIME
	r->off[0] = gio_stage_offset(&r->st, 5);
	r->bus[0] = gio_stage_bus(&r->st, 5);
	r->off[1] = gio_stage_offset(&r->st, 0xffffffffu);
	r->bus[1] = gio_stage_bus(&r->st, 0xffffffffu);

	const union gio_dptr table[2] = {};
	gio_kv_io_dev dev = {};
	dev.table = table;
	dev.nsid = 1;
	dev.lba_shift = 12;
	dev.cmds = 2;
	const gio_kv_io_req req = {64, 1, 0, 1};
	const gio_kv_io_plan p = kv_one_request_plan(&dev, &req, 16384);
	r->rc[11] = gio_kv_stage_sqe(&p, 1, 0, &r->st, 6, nullptr, &r->sqe);

	gio_kv_pool pool = {};
	pool.base = 0x100000000ull;
	pool.elem_bytes = 2;
	const uint32_t ext[GIO_KV_DIMS] = {2, 2, 2, 16, 2, 64};
	const uint64_t stride[GIO_KV_DIMS] = {2 * 2 * 16 * 2 * 64, 16 * 2 * 64, 2 * 2 * 16 * 2 * 64 * 2, 2 * 64, 64, 1};
	for (int d = 0; d < GIO_KV_DIMS; d++) {
		pool.extent[d] = ext[d];
		pool.stride[d] = stride[d];
	}
	gio_kv_runs runs = {}; // -O3 inlines the calls and cannot see that a failed gio_kv_pool_runs() is caught by rc[12]
	r->rc[12] = gio_kv_pool_runs(&pool, &runs);
	r->nmv[0] = gio_kv_stage_moves(&pool, &runs, 1, 1, 0, 1, nullptr, 0);
	r->nmv[1] = gio_kv_stage_moves(&pool, &runs, 1, 1, 1, 4, r->mv, 4);
	r->nmv[2] = gio_kv_stage_moves_at(&pool, &runs, 1, 1, 0, 1, 1, r->mv + 1, 3); // the second of two copies
	gio_dptr_caps prp = {};
	prp.page_bytes = 4096;
	prp.max_xfer_bytes = 1 << 20;
	r->rc[13] = gio_kv_stage_table_entry(&r->st, 1, 8192, &prp, &r->entry, nullptr, 0, 0);
	r->st.slots = nullptr; // an address, of another space on each side
}

struct Results {
	gio_sqe read_sqe, sgl_sqe, prp_sqe, admin_sqe[6];
	gio_sgl_desc seg[8];
	uint64_t prp_list[512];
	gio_xfer_seg sgl_out[8], prp_out[8];
	uint32_t sgl_n, prp_n;
	uint16_t sgl_st, prp_st;
	int rc[12];
	gio_dptr_caps caps;
	gio_kv_extent ext;
	uint64_t pool_addr, doorbells[2], sgl_pool, prp_pool;
	uint32_t status_bits[8];
	char status_name[40];
	KvFormatResults kv;
	SchedResults sched;
	StageResults stage;
};

// The body runs unchanged on host and device: that is the point of GIO_HD.
__host__ __device__ void exercise(Results *r, const gio_id_ctrl *id)
{
	const gio_range ranges[3] = {{0x10000, 4096}, {0x11000, 4096}, {0x30000, 8192}};
	const gio_range prp_ranges[1] = {{0x40200, 5 * 4096}};
	const uint64_t cap = (0x7ffull) | (1ull << 16) | (0xfull << 24) | (1ull << 37) | (4ull << 52);
	r->rc[0] = gio_dptr_caps_init(&r->caps, cap, GIO_SET(CC_MPS, 0u), id);
	r->caps.seg_max_descs = 2;
	r->rc[1] = gio_prep_read(&r->read_sqe, 1, 0x123456789ull, 16);
	gio_sqe_set_sgl_data(&r->read_sqe, 0xabc000, 8192);
	r->rc[2] = gio_prep_write(&r->sgl_sqe, 1, 64, 4);
	r->rc[3] = gio_sgl_build(&r->sgl_sqe, ranges, 3, &r->caps, r->seg, kSegAddr, sizeof(r->seg));
	r->rc[4] = gio_prep_read(&r->prp_sqe, 1, 0, 5);
	r->rc[5] = gio_prp_build(&r->prp_sqe, prp_ranges, 1, &r->caps, r->prp_list, kListAddr, sizeof(r->prp_list));
	r->rc[6] = gio_prep_identify(&r->admin_sqe[0], GIO_CNS_CTRL, 0, 0x5000, 0);
	r->rc[7] = gio_prep_create_cq(&r->admin_sqe[1], 1, 1024, 0x8000, 0, 0);
	r->rc[8] = gio_prep_create_sq(&r->admin_sqe[2], 1, 1024, 1, 0x9000);
	r->rc[9] = gio_prep_set_num_queues(&r->admin_sqe[3], 8, 8);
	gio_prep_abort(&r->admin_sqe[4], 1, 7);
	r->rc[10] = gio_prep_dbbuf_config(&r->admin_sqe[5], 0xa000, 0xb000);

	gio_dma_region regs[2] = {{kSegAddr, sizeof(r->seg), r->seg}, {kListAddr, sizeof(r->prp_list), r->prp_list}};
	gio_dma_map map = {regs, 2};
	gio_xfer_list out = {r->sgl_out, 8, 0};
	r->sgl_st = gio_sgl_walk(&r->sgl_sqe, 16384, 1, &r->caps, &map, &out);
	r->sgl_n = out.n;
	gio_xfer_list pout = {r->prp_out, 8, 0};
	r->prp_st = gio_prp_walk(&r->prp_sqe, 5 * 4096, &r->caps, &map, &pout);
	r->prp_n = pout.n;

	const gio_kv_geometry g = {32, 8, 128, 2, 16};
	const gio_kv_store_layout s = {4, 4096, 0};
	r->rc[11] = gio_kv_object_extent(&g, &s, 9, 3, GIO_KV_V, &r->ext);
	r->pool_addr = gio_kv_pool_addr(&g, 0x100000000ull, 512, 77, GIO_KV_V);
	r->doorbells[0] = gio_sq_doorbell_offset(cap, 3);
	r->doorbells[1] = gio_cq_doorbell_offset(cap, 3);
	r->sgl_pool = gio_sgl_pool_bytes(1000);
	r->prp_pool = gio_prp_pool_bytes(1000, 65536, 4096);

	gio_cqe cqe = {1, 2, 3, 4, 5, (uint16_t)((1u << 15) | (2u << 12) | (GIO_SCT_GENERIC << 9) | (GIO_SC_SGL_INVALID_DATA_LEN << 1) | 1u)};
	uint16_t sf = gio_cqe_status(&cqe);
	r->status_bits[0] = gio_cqe_phase(&cqe);
	r->status_bits[1] = sf;
	r->status_bits[2] = gio_status_sc(sf);
	r->status_bits[3] = gio_status_sct(sf);
	r->status_bits[4] = gio_status_crd(sf);
	r->status_bits[5] = gio_status_dnr(sf);
	r->status_bits[6] = (uint32_t)gio_cqe_is_error(&cqe);
	r->status_bits[7] = (uint32_t)gio_status_errno(sf);
	const char *name = gio_status_str(sf);
	int i = 0;
	for (; name[i] && i < 39; i++)
		r->status_name[i] = name[i];
	r->status_name[i] = 0;
	exercise_kv_format(&r->kv);
	exercise_sched(&r->sched);
	exercise_stage(&r->stage);
}

__global__ void exercise_kernel(Results *r, const gio_id_ctrl *id)
{
	exercise(r, id);
}

} // namespace

int main()
{
	int n = 0;
	gio_id_ctrl *id_dev = nullptr;
	Results *dev = nullptr;
	static Results host, from_dev;
	static gio_id_ctrl id;

	std::memset(&id, 0, sizeof(id));
	id.mdts = 5;
	id.sgls = GIO_SGLS_SUPPORT_DWORD;
	std::memset(&host, 0, sizeof(host));
	exercise(&host, &id);
	if (host.kv.lay_rc[0] || host.kv.lay[0].slots != 511 || host.kv.rc[2] || host.kv.rc[4] ||
	    host.kv.crc[0] != 0xe3069283u || host.kv.crc[1] != host.kv.crc[2] || host.kv.lay_rc[3] != -ENOSPC) {
		std::printf("FAIL: host reference run of the KV format\n");
		return 1;
	}
	const SchedResults &sh = host.sched;
	for (int i = 0; i < 24; i++)
		if (sh.rc[i] < 0) {
			std::printf("FAIL: host reference run of the scheduler: call %d returned %d\n", i, sh.rc[i]);
			return 1;
		}
	if (sh.dec[0].nwrites == 0 || sh.dec[1].bubble_ns <= sh.dec[0].bubble_ns || sh.prof.observed[1] != 21 ||
	    sh.est[1].base_ns != 100000u + 3000u + 37ull * 8192 + 3ull * 32768) {
		std::printf("FAIL: host reference run of the scheduler: %u writes, bubbles %llu / %llu, %llu observations\n",
			    sh.dec[0].nwrites, (unsigned long long)sh.dec[0].bubble_ns,
			    (unsigned long long)sh.dec[1].bubble_ns, (unsigned long long)sh.prof.observed[1]);
		return 1;
	}
	if (host.sgl_st != 0 || host.prp_st != 0 || host.sgl_n != 2 || host.prp_n != 1) {
		std::printf("FAIL: host reference run: sgl status %#x (%u segs), prp status %#x (%u segs)\n",
			    host.sgl_st, host.sgl_n, host.prp_st, host.prp_n);
		return 1;
	}
	const StageResults &st = host.stage;
	const int stage_want[14] = {0, 0, -EBUSY, 0, 1, 0, -EINVAL, 0, 0, -EBUSY, -ETIME, 0, 0, 0};
	for (int i = 0; i < 14; i++)
		if (st.rc[i] != stage_want[i]) {
			std::printf("FAIL: host reference run of the staging calls: call %d returned %d, not %d\n", i, st.rc[i],
				    stage_want[i]);
			return 1;
		}
	if (st.bus[0] != 0x7000000 + 8192 || st.off[1] != 3 * 8192 || st.sqe.dptr.sgl.len != 8192 ||
	    st.nmv[0] != 2 || st.nmv[1] != 1 || st.mv[0].len != 2048 || st.mv[0].src_off != 0 || st.nmv[2] != 1 ||
	    st.mv[1].src_off == 0 ||
	    st.entry.prp.prp1 != 0x7000000 + 8192 || st.entry.prp.prp2 != 0x7000000 + 2 * 8192 - 4096) {
		std::printf("FAIL: host reference run of the staging calls: slot addresses, command or moves\n");
		return 1;
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		std::printf("SKIP: no CUDA device here; the device code compiled for sm_90 and the host run passed\n");
		return kSkip;
	}
	if (cudaMalloc(&dev, sizeof(Results)) != cudaSuccess || cudaMalloc(&id_dev, sizeof(id)) != cudaSuccess ||
	    cudaMemset(dev, 0, sizeof(Results)) != cudaSuccess ||
	    cudaMemcpy(id_dev, &id, sizeof(id), cudaMemcpyHostToDevice) != cudaSuccess) {
		std::printf("FAIL: device allocation\n");
		return 1;
	}
	exercise_kernel<<<1, 1>>>(dev, id_dev);
	cudaError_t err = cudaDeviceSynchronize();
	if (err != cudaSuccess || cudaMemcpy(&from_dev, dev, sizeof(Results), cudaMemcpyDeviceToHost) != cudaSuccess) {
		std::printf("FAIL: kernel: %s\n", cudaGetErrorString(err));
		return 1;
	}
	// Pointers differ between the runs (segment memory lives in different address spaces), but
	// every field here is a bus address or a value, never a pointer: compare all bytes.
	if (std::memcmp(&host, &from_dev, sizeof(host)) != 0) {
		const unsigned char *a = reinterpret_cast<const unsigned char *>(&host);
		const unsigned char *b = reinterpret_cast<const unsigned char *>(&from_dev);
		size_t i = 0;
		while (a[i] == b[i])
			i++;
		const size_t sched_at = offsetof(Results, sched);
		if (i >= sched_at)
			std::printf("FAIL: device results differ from host results at byte %zu, byte %zu of the scheduler's "
				    "(SchedResults)\n", i, i - sched_at);
		else
			std::printf("FAIL: device results differ from host results at byte %zu\n", i);
		return 1;
	}
	std::printf("PASS: %zu bytes of GIO_HD results identical on host and device\n", sizeof(host));
	cudaFree(dev);
	cudaFree(id_dev);
	return 0;
}
