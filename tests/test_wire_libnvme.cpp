// Cross-check of giouring's NVMe wire-format constants and layouts against libnvme
// (libnvme-dev, /usr/include/nvme/types.h and util.h), an independent implementation of the
// same NVM Express Base Specification 2.0c / NVM Command Set Specification 1.0c definitions.
//
// Every comparison is a row {name, ours, theirs} in a table, checked in a loop that reports the
// row name on a mismatch. Each table ends with a check that it still holds at least the number
// of rows written here, so a row cannot silently disappear.
//
// Naming differences between the two (ours vs libnvme):
//   CAP.NSSRS vs NVME_CAP_NSSRC; CSTS.SHST mask vs NVME_CSTS_SHN_MASK (and NVME_CSTS_SHST_MASK);
//   CAP.CSS IOCS vs NVME_CAP_CSS_CSI; CC.CSS ALL vs NVME_CC_CSS_CSI;
//   struct gio_lbaf::lbads vs struct nvme_lbaf::ds; gio_id_ctrl::crdt[3] vs crdt1/crdt2/crdt3;
//   gio_id_ns::vs (byte 384) vs nvme_id_ns::lbstm (byte 384);
//   Number of Queues GIO_NUMQ_NSQ/NCQ vs NVME_FEAT_NRQS_NSQR/NCQR.
// libnvme's NVME_SC_* are plain Status Code values (status field bits 7:0, unshifted); only
// NVME_SC_CRD, NVME_SC_MORE and NVME_SC_DNR are positioned within the 15-bit status field.
// libnvme's NVME_IO_* control flags are CDW12 bits 31:16 shifted down by 16.

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <catch2/catch.hpp>

extern "C" {
#include <nvme/types.h>
#include <nvme/util.h>
}

#include <giouring/nvme/cqe.h>
#include <giouring/nvme/identify.h>
#include <giouring/nvme/regs.h>
#include <giouring/nvme/sgl.h>
#include <giouring/nvme/sqe.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>

namespace {

struct Row {
	const char *name;
	unsigned long long ours;
	unsigned long long theirs;
};

#define ROW(name, ours, theirs) \
	Row { name, (unsigned long long)(ours), (unsigned long long)(theirs) }

// A right-aligned (mask, shift) pair of ours, positioned like a libnvme in-place mask.
#define POS(f) ((unsigned long long)GIO_##f##_MASK << GIO_##f##_SHIFT)

template <size_t N>
void check_rows(const Row (&rows)[N], size_t rows_written)
{
	for (size_t i = 0; i < N; i++) {
		const Row &r = rows[i];
		INFO("row " << i << ": " << r.name);
		CAPTURE(r.ours, r.theirs);
		CHECK(r.ours == r.theirs);
	}
	INFO("table rows: " << N << ", rows written: " << rows_written);
	CHECK(N >= rows_written);
}

// Offset and size of one field present in both structures under the same name.
#define FIELD(ours_t, theirs_t, f)                                                    \
	ROW("offsetof " #f, offsetof(ours_t, f), offsetof(theirs_t, f)),              \
	ROW("sizeof " #f, sizeof(((ours_t *)nullptr)->f), sizeof(((theirs_t *)nullptr)->f))

// Same, when the two structures name the field differently.
#define FIELD2(ours_t, of, theirs_t, tf)                                                    \
	ROW("offsetof " #of " / " #tf, offsetof(ours_t, of), offsetof(theirs_t, tf)),       \
	ROW("sizeof " #of " / " #tf, sizeof(((ours_t *)nullptr)->of), sizeof(((theirs_t *)nullptr)->tf))

} // namespace

TEST_CASE("libnvme: controller register offsets", "[wire][libnvme][regs]")
{
	static const Row rows[] = {
		ROW("CAP", GIO_REG_CAP, NVME_REG_CAP),
		ROW("VS", GIO_REG_VS, NVME_REG_VS),
		ROW("INTMS", GIO_REG_INTMS, NVME_REG_INTMS),
		ROW("INTMC", GIO_REG_INTMC, NVME_REG_INTMC),
		ROW("CC", GIO_REG_CC, NVME_REG_CC),
		ROW("CSTS", GIO_REG_CSTS, NVME_REG_CSTS),
		ROW("NSSR", GIO_REG_NSSR, NVME_REG_NSSR),
		ROW("AQA", GIO_REG_AQA, NVME_REG_AQA),
		ROW("ASQ", GIO_REG_ASQ, NVME_REG_ASQ),
		ROW("ACQ", GIO_REG_ACQ, NVME_REG_ACQ),
		ROW("CMBLOC", GIO_REG_CMBLOC, NVME_REG_CMBLOC),
		ROW("CMBSZ", GIO_REG_CMBSZ, NVME_REG_CMBSZ),
		ROW("BPINFO", GIO_REG_BPINFO, NVME_REG_BPINFO),
		ROW("BPRSEL", GIO_REG_BPRSEL, NVME_REG_BPRSEL),
		ROW("BPMBL", GIO_REG_BPMBL, NVME_REG_BPMBL),
		ROW("CMBMSC", GIO_REG_CMBMSC, NVME_REG_CMBMSC),
		ROW("CMBSTS", GIO_REG_CMBSTS, NVME_REG_CMBSTS),
		ROW("CRTO", GIO_REG_CRTO, NVME_REG_CRTO),
		// The same offsets through our register block structure.
		ROW("struct cap", offsetof(struct gio_nvme_regs, cap), NVME_REG_CAP),
		ROW("struct vs", offsetof(struct gio_nvme_regs, vs), NVME_REG_VS),
		ROW("struct intms", offsetof(struct gio_nvme_regs, intms), NVME_REG_INTMS),
		ROW("struct intmc", offsetof(struct gio_nvme_regs, intmc), NVME_REG_INTMC),
		ROW("struct cc", offsetof(struct gio_nvme_regs, cc), NVME_REG_CC),
		ROW("struct csts", offsetof(struct gio_nvme_regs, csts), NVME_REG_CSTS),
		ROW("struct nssr", offsetof(struct gio_nvme_regs, nssr), NVME_REG_NSSR),
		ROW("struct aqa", offsetof(struct gio_nvme_regs, aqa), NVME_REG_AQA),
		ROW("struct asq", offsetof(struct gio_nvme_regs, asq), NVME_REG_ASQ),
		ROW("struct acq", offsetof(struct gio_nvme_regs, acq), NVME_REG_ACQ),
		ROW("struct cmbloc", offsetof(struct gio_nvme_regs, cmbloc), NVME_REG_CMBLOC),
		ROW("struct cmbsz", offsetof(struct gio_nvme_regs, cmbsz), NVME_REG_CMBSZ),
		ROW("struct bpinfo", offsetof(struct gio_nvme_regs, bpinfo), NVME_REG_BPINFO),
		ROW("struct bprsel", offsetof(struct gio_nvme_regs, bprsel), NVME_REG_BPRSEL),
		ROW("struct bpmbl", offsetof(struct gio_nvme_regs, bpmbl), NVME_REG_BPMBL),
		ROW("struct cmbmsc", offsetof(struct gio_nvme_regs, cmbmsc), NVME_REG_CMBMSC),
		ROW("struct cmbsts", offsetof(struct gio_nvme_regs, cmbsts), NVME_REG_CMBSTS),
		ROW("struct crto", offsetof(struct gio_nvme_regs, crto), NVME_REG_CRTO),
		// 64-bit registers, as libnvme classifies them.
		ROW("CAP is 64-bit", 1, nvme_is_64bit_reg(GIO_REG_CAP)),
		ROW("ASQ is 64-bit", 1, nvme_is_64bit_reg(GIO_REG_ASQ)),
		ROW("ACQ is 64-bit", 1, nvme_is_64bit_reg(GIO_REG_ACQ)),
		ROW("BPMBL is 64-bit", 1, nvme_is_64bit_reg(GIO_REG_BPMBL)),
		ROW("CMBMSC is 64-bit", 1, nvme_is_64bit_reg(GIO_REG_CMBMSC)),
		ROW("CC is 32-bit", 0, nvme_is_64bit_reg(GIO_REG_CC)),
		ROW("CSTS is 32-bit", 0, nvme_is_64bit_reg(GIO_REG_CSTS)),
		ROW("AQA is 32-bit", 0, nvme_is_64bit_reg(GIO_REG_AQA)),
	};
	check_rows(rows, 44);
}

TEST_CASE("libnvme: CAP, VS, CC, CSTS, AQA field shifts, masks and values", "[wire][libnvme][regs]")
{
	static const Row rows[] = {
		// CAP
		ROW("CAP.MQES shift", GIO_CAP_MQES_SHIFT, NVME_CAP_MQES_SHIFT),
		ROW("CAP.MQES mask", GIO_CAP_MQES_MASK, NVME_CAP_MQES_MASK),
		ROW("CAP.CQR shift", GIO_CAP_CQR_SHIFT, NVME_CAP_CQR_SHIFT),
		ROW("CAP.CQR mask", GIO_CAP_CQR_MASK, NVME_CAP_CQR_MASK),
		ROW("CAP.AMS shift", GIO_CAP_AMS_SHIFT, NVME_CAP_AMS_SHIFT),
		ROW("CAP.AMS mask", GIO_CAP_AMS_MASK, NVME_CAP_AMS_MASK),
		ROW("CAP.TO shift", GIO_CAP_TO_SHIFT, NVME_CAP_TO_SHIFT),
		ROW("CAP.TO mask", GIO_CAP_TO_MASK, NVME_CAP_TO_MASK),
		ROW("CAP.DSTRD shift", GIO_CAP_DSTRD_SHIFT, NVME_CAP_DSTRD_SHIFT),
		ROW("CAP.DSTRD mask", GIO_CAP_DSTRD_MASK, NVME_CAP_DSTRD_MASK),
		ROW("CAP.NSSRS shift (libnvme NSSRC)", GIO_CAP_NSSRS_SHIFT, NVME_CAP_NSSRC_SHIFT),
		ROW("CAP.NSSRS mask (libnvme NSSRC)", GIO_CAP_NSSRS_MASK, NVME_CAP_NSSRC_MASK),
		ROW("CAP.CSS shift", GIO_CAP_CSS_SHIFT, NVME_CAP_CSS_SHIFT),
		ROW("CAP.CSS mask", GIO_CAP_CSS_MASK, NVME_CAP_CSS_MASK),
		ROW("CAP.BPS shift", GIO_CAP_BPS_SHIFT, NVME_CAP_BPS_SHIFT),
		ROW("CAP.BPS mask", GIO_CAP_BPS_MASK, NVME_CAP_BPS_MASK),
		ROW("CAP.MPSMIN shift", GIO_CAP_MPSMIN_SHIFT, NVME_CAP_MPSMIN_SHIFT),
		ROW("CAP.MPSMIN mask", GIO_CAP_MPSMIN_MASK, NVME_CAP_MPSMIN_MASK),
		ROW("CAP.MPSMAX shift", GIO_CAP_MPSMAX_SHIFT, NVME_CAP_MPSMAX_SHIFT),
		ROW("CAP.MPSMAX mask", GIO_CAP_MPSMAX_MASK, NVME_CAP_MPSMAX_MASK),
		ROW("CAP.PMRS shift", GIO_CAP_PMRS_SHIFT, NVME_CAP_PMRS_SHIFT),
		ROW("CAP.PMRS mask", GIO_CAP_PMRS_MASK, NVME_CAP_PMRS_MASK),
		ROW("CAP.CMBS shift", GIO_CAP_CMBS_SHIFT, NVME_CAP_CMBS_SHIFT),
		ROW("CAP.CMBS mask", GIO_CAP_CMBS_MASK, NVME_CAP_CMBS_MASK),
		ROW("CAP.CSS NVM bit", GIO_CAP_CSS_NVM, NVME_CAP_CSS_NVM),
		ROW("CAP.CSS IOCS bit (libnvme CSI)", GIO_CAP_CSS_IOCS, NVME_CAP_CSS_CSI),
		ROW("CAP.CSS admin-only bit", GIO_CAP_CSS_ADMIN, NVME_CAP_CSS_ADMIN),
		// VS
		ROW("VS.TER shift", GIO_VS_TER_SHIFT, NVME_VS_TER_SHIFT),
		ROW("VS.TER mask", GIO_VS_TER_MASK, NVME_VS_TER_MASK),
		ROW("VS.MNR shift", GIO_VS_MNR_SHIFT, NVME_VS_MNR_SHIFT),
		ROW("VS.MNR mask", GIO_VS_MNR_MASK, NVME_VS_MNR_MASK),
		ROW("VS.MJR shift", GIO_VS_MJR_SHIFT, NVME_VS_MJR_SHIFT),
		ROW("VS.MJR mask", GIO_VS_MJR_MASK, NVME_VS_MJR_MASK),
		// CC
		ROW("CC.EN shift", GIO_CC_EN_SHIFT, NVME_CC_EN_SHIFT),
		ROW("CC.EN mask", GIO_CC_EN_MASK, NVME_CC_EN_MASK),
		ROW("CC.CSS shift", GIO_CC_CSS_SHIFT, NVME_CC_CSS_SHIFT),
		ROW("CC.CSS mask", GIO_CC_CSS_MASK, NVME_CC_CSS_MASK),
		ROW("CC.MPS shift", GIO_CC_MPS_SHIFT, NVME_CC_MPS_SHIFT),
		ROW("CC.MPS mask", GIO_CC_MPS_MASK, NVME_CC_MPS_MASK),
		ROW("CC.AMS shift", GIO_CC_AMS_SHIFT, NVME_CC_AMS_SHIFT),
		ROW("CC.AMS mask", GIO_CC_AMS_MASK, NVME_CC_AMS_MASK),
		ROW("CC.SHN shift", GIO_CC_SHN_SHIFT, NVME_CC_SHN_SHIFT),
		ROW("CC.SHN mask", GIO_CC_SHN_MASK, NVME_CC_SHN_MASK),
		ROW("CC.IOSQES shift", GIO_CC_IOSQES_SHIFT, NVME_CC_IOSQES_SHIFT),
		ROW("CC.IOSQES mask", GIO_CC_IOSQES_MASK, NVME_CC_IOSQES_MASK),
		ROW("CC.IOCQES shift", GIO_CC_IOCQES_SHIFT, NVME_CC_IOCQES_SHIFT),
		ROW("CC.IOCQES mask", GIO_CC_IOCQES_MASK, NVME_CC_IOCQES_MASK),
		ROW("CC.CRIME shift", GIO_CC_CRIME_SHIFT, NVME_CC_CRIME_SHIFT),
		ROW("CC.CRIME mask", GIO_CC_CRIME_MASK, NVME_CC_CRIME_MASK),
		ROW("CC.CSS NVM", GIO_CC_CSS_NVM, NVME_CC_CSS_NVM),
		ROW("CC.CSS all I/O sets (libnvme CSI)", GIO_CC_CSS_ALL, NVME_CC_CSS_CSI),
		ROW("CC.CSS admin only", GIO_CC_CSS_ADMIN, NVME_CC_CSS_ADMIN),
		ROW("CC.SHN none", GIO_CC_SHN_NONE, NVME_CC_SHN_NONE),
		ROW("CC.SHN normal", GIO_CC_SHN_NORMAL, NVME_CC_SHN_NORMAL),
		ROW("CC.SHN abrupt", GIO_CC_SHN_ABRUPT, NVME_CC_SHN_ABRUPT),
		// CSTS
		ROW("CSTS.RDY shift", GIO_CSTS_RDY_SHIFT, NVME_CSTS_RDY_SHIFT),
		ROW("CSTS.RDY mask", GIO_CSTS_RDY_MASK, NVME_CSTS_RDY_MASK),
		ROW("CSTS.CFS shift", GIO_CSTS_CFS_SHIFT, NVME_CSTS_CFS_SHIFT),
		ROW("CSTS.CFS mask", GIO_CSTS_CFS_MASK, NVME_CSTS_CFS_MASK),
		ROW("CSTS.SHST shift", GIO_CSTS_SHST_SHIFT, NVME_CSTS_SHST_SHIFT),
		ROW("CSTS.SHST mask (libnvme SHN_MASK)", GIO_CSTS_SHST_MASK, NVME_CSTS_SHN_MASK),
		ROW("CSTS.SHST mask (libnvme SHST_MASK)", GIO_CSTS_SHST_MASK, NVME_CSTS_SHST_MASK),
		ROW("CSTS.NSSRO shift", GIO_CSTS_NSSRO_SHIFT, NVME_CSTS_NSSRO_SHIFT),
		ROW("CSTS.NSSRO mask", GIO_CSTS_NSSRO_MASK, NVME_CSTS_NSSRO_MASK),
		ROW("CSTS.PP shift", GIO_CSTS_PP_SHIFT, NVME_CSTS_PP_SHIFT),
		ROW("CSTS.PP mask", GIO_CSTS_PP_MASK, NVME_CSTS_PP_MASK),
		ROW("CSTS.SHST normal", GIO_CSTS_SHST_NORMAL, NVME_CSTS_SHST_NORMAL),
		ROW("CSTS.SHST occurring", GIO_CSTS_SHST_OCCURING, NVME_CSTS_SHST_OCCUR),
		ROW("CSTS.SHST complete", GIO_CSTS_SHST_COMPLETE, NVME_CSTS_SHST_CMPLT),
		// AQA
		ROW("AQA.ASQS shift", GIO_AQA_ASQS_SHIFT, NVME_AQA_ASQS_SHIFT),
		ROW("AQA.ASQS mask", GIO_AQA_ASQS_MASK, NVME_AQA_ASQS_MASK),
		ROW("AQA.ACQS shift", GIO_AQA_ACQS_SHIFT, NVME_AQA_ACQS_SHIFT),
		ROW("AQA.ACQS mask", GIO_AQA_ACQS_MASK, NVME_AQA_ACQS_MASK),
	};
	check_rows(rows, 73);
}

TEST_CASE("libnvme: GIO_GET agrees with NVME_GET on sample register values", "[wire][libnvme][regs]")
{
	// Behavioural check of the same tables: both extractors on the same values.
	static const uint64_t caps[] = {0x0ull, ~0ull, 0x004000200f0107ffull /* QEMU-like */,
					0x0123456789abcdefull, 0xfedcba9876543210ull};
	static const uint32_t regs32[] = {0u, ~0u, 0x00460001u, 0x12345678u, 0x89abcdefu};
	size_t rows = 0;
	for (uint64_t cap : caps) {
		CAPTURE(cap);
		CHECK(GIO_GET(cap, CAP_MQES) == NVME_CAP_MQES(cap));
		CHECK(GIO_GET(cap, CAP_CQR) == NVME_CAP_CQR(cap));
		CHECK(GIO_GET(cap, CAP_AMS) == NVME_CAP_AMS(cap));
		CHECK(GIO_GET(cap, CAP_TO) == NVME_CAP_TO(cap));
		CHECK(GIO_GET(cap, CAP_DSTRD) == NVME_CAP_DSTRD(cap));
		CHECK(GIO_GET(cap, CAP_NSSRS) == NVME_CAP_NSSRC(cap));
		CHECK(GIO_GET(cap, CAP_CSS) == NVME_CAP_CSS(cap));
		CHECK(GIO_GET(cap, CAP_BPS) == NVME_CAP_BPS(cap));
		CHECK(GIO_GET(cap, CAP_MPSMIN) == NVME_CAP_MPSMIN(cap));
		CHECK(GIO_GET(cap, CAP_MPSMAX) == NVME_CAP_MPSMAX(cap));
		CHECK(GIO_GET(cap, CAP_PMRS) == NVME_CAP_PMRS(cap));
		CHECK(GIO_GET(cap, CAP_CMBS) == NVME_CAP_CMBS(cap));
		rows++;
	}
	for (uint32_t v : regs32) {
		CAPTURE(v);
		CHECK(GIO_GET(v, VS_TER) == NVME_VS_TER(v));
		CHECK(GIO_GET(v, VS_MNR) == NVME_VS_MNR(v));
		CHECK(GIO_GET(v, VS_MJR) == NVME_VS_MJR(v));
		CHECK(GIO_GET(v, CC_EN) == NVME_CC_EN(v));
		CHECK(GIO_GET(v, CC_CSS) == NVME_CC_CSS(v));
		CHECK(GIO_GET(v, CC_MPS) == NVME_CC_MPS(v));
		CHECK(GIO_GET(v, CC_AMS) == NVME_CC_AMS(v));
		CHECK(GIO_GET(v, CC_SHN) == NVME_CC_SHN(v));
		CHECK(GIO_GET(v, CC_IOSQES) == NVME_CC_IOSQES(v));
		CHECK(GIO_GET(v, CC_IOCQES) == NVME_CC_IOCQES(v));
		CHECK(GIO_GET(v, CC_CRIME) == NVME_CC_CRIME(v));
		CHECK(GIO_GET(v, CSTS_RDY) == NVME_CSTS_RDY(v));
		CHECK(GIO_GET(v, CSTS_CFS) == NVME_CSTS_CFS(v));
		CHECK(GIO_GET(v, CSTS_SHST) == NVME_CSTS_SHST(v));
		CHECK(GIO_GET(v, CSTS_NSSRO) == NVME_CSTS_NSSRO(v));
		CHECK(GIO_GET(v, CSTS_PP) == NVME_CSTS_PP(v));
		CHECK(GIO_GET(v, AQA_ASQS) == NVME_AQA_ASQS(v));
		CHECK(GIO_GET(v, AQA_ACQS) == NVME_AQA_ACQS(v));
		rows++;
	}
	CHECK(rows == 10);
}

TEST_CASE("libnvme: Identify Controller SGLS bits", "[wire][libnvme][identify]")
{
	static const Row rows[] = {
		ROW("SGLS support field (in place)", POS(SGLS_SUPPORT), NVME_CTRL_SGLS_SUPPORTED),
		ROW("SGLS keyed", GIO_SGLS_KEYED, NVME_CTRL_SGLS_KEYED),
		ROW("SGLS bit bucket", GIO_SGLS_BIT_BUCKET, NVME_CTRL_SGLS_BIT_BUCKET),
		ROW("SGLS byte aligned contiguous metadata", GIO_SGLS_MPTR_BYTE, NVME_CTRL_SGLS_MPTR_BYTE_ALIGNED),
		ROW("SGLS oversize data SGL", GIO_SGLS_OVERSIZE, NVME_CTRL_SGLS_OVERSIZE),
		ROW("SGLS MPTR holds SGL descriptor", GIO_SGLS_MPTR_SGL, NVME_CTRL_SGLS_MPTR_SGL),
		ROW("SGLS address as offset", GIO_SGLS_OFFSET, NVME_CTRL_SGLS_OFFSET),
		ROW("SGLS transport data block", GIO_SGLS_TRANSPORT, NVME_CTRL_SGLS_TPORT),
	};
	check_rows(rows, 8);
}

TEST_CASE("libnvme: Identify Controller layout", "[wire][libnvme][identify]")
{
	typedef struct gio_id_ctrl O;
	typedef struct nvme_id_ctrl T;
	static const Row rows[] = {
		ROW("sizeof gio_id_ctrl", sizeof(O), 4096),
		ROW("sizeof nvme_id_ctrl", sizeof(T), 4096),
		ROW("sizeof both", sizeof(O), sizeof(T)),
		ROW("Identify data size", GIO_IDENTIFY_BYTES, NVME_IDENTIFY_DATA_SIZE),
		FIELD(O, T, vid),
		FIELD(O, T, ssvid),
		FIELD(O, T, sn),
		FIELD(O, T, mn),
		FIELD(O, T, fr),
		FIELD(O, T, rab),
		FIELD(O, T, ieee),
		FIELD(O, T, cmic),
		FIELD(O, T, mdts),
		FIELD(O, T, cntlid),
		FIELD(O, T, ver),
		FIELD(O, T, rtd3r),
		FIELD(O, T, rtd3e),
		FIELD(O, T, oaes),
		FIELD(O, T, ctratt),
		FIELD(O, T, rrls),
		FIELD(O, T, rsvd102),
		FIELD(O, T, cntrltype),
		FIELD(O, T, fguid),
		ROW("offsetof crdt[0] / crdt1", offsetof(O, crdt), offsetof(T, crdt1)),
		ROW("offsetof crdt[1] / crdt2", offsetof(O, crdt) + sizeof(uint16_t), offsetof(T, crdt2)),
		ROW("offsetof crdt[2] / crdt3", offsetof(O, crdt) + 2 * sizeof(uint16_t), offsetof(T, crdt3)),
		ROW("sizeof crdt / crdt1..3", sizeof(((O *)nullptr)->crdt),
		    sizeof(((T *)nullptr)->crdt1) + sizeof(((T *)nullptr)->crdt2) + sizeof(((T *)nullptr)->crdt3)),
		FIELD(O, T, rsvd134),
		FIELD(O, T, nvmsr),
		FIELD(O, T, vwci),
		FIELD(O, T, mec),
		FIELD(O, T, oacs),
		FIELD(O, T, acl),
		FIELD(O, T, aerl),
		FIELD(O, T, frmw),
		FIELD(O, T, lpa),
		FIELD(O, T, elpe),
		FIELD(O, T, npss),
		FIELD(O, T, avscc),
		FIELD(O, T, apsta),
		FIELD(O, T, wctemp),
		FIELD(O, T, cctemp),
		// Bytes 270-511 are one reserved block for us; libnvme names them from MTFA.
		ROW("offsetof rsvd270 / mtfa", offsetof(O, rsvd270), offsetof(T, mtfa)),
		ROW("end of rsvd270 / sqes", offsetof(O, rsvd270) + sizeof(((O *)nullptr)->rsvd270), offsetof(T, sqes)),
		FIELD(O, T, sqes),
		FIELD(O, T, cqes),
		FIELD(O, T, maxcmd),
		FIELD(O, T, nn),
		FIELD(O, T, oncs),
		FIELD(O, T, fuses),
		FIELD(O, T, fna),
		FIELD(O, T, vwc),
		FIELD(O, T, awun),
		FIELD(O, T, awupf),
		FIELD(O, T, icsvscc),
		FIELD(O, T, nwpc),
		FIELD(O, T, acwu),
		FIELD(O, T, ocfs),
		FIELD(O, T, sgls),
		FIELD(O, T, mnan),
		FIELD(O, T, maxdna),
		FIELD(O, T, maxcna),
		FIELD(O, T, rsvd564),
		FIELD(O, T, subnqn),
		ROW("subnqn length", sizeof(((O *)nullptr)->subnqn), NVME_NQN_LENGTH),
		// Bytes 1024-2047 are one block for us (reserved + fabrics); libnvme splits them.
		ROW("offsetof rsvd1024", offsetof(O, rsvd1024), offsetof(T, rsvd1024)),
		ROW("end of rsvd1024 / psd", offsetof(O, rsvd1024) + sizeof(((O *)nullptr)->rsvd1024), offsetof(T, psd)),
		FIELD(O, T, psd),
		FIELD(O, T, vs),
		ROW("SN length", GIO_ID_SN_BYTES, sizeof(((T *)nullptr)->sn)),
		ROW("MN length", GIO_ID_MN_BYTES, sizeof(((T *)nullptr)->mn)),
		ROW("FR length", GIO_ID_FR_BYTES, sizeof(((T *)nullptr)->fr)),
	};
	// 4 + 19 fields x 2 + 4 crdt + 15 x 2 + 2 + 20 x 2 + 1 + 2 + 2 x 2 + 3
	check_rows(rows, 4 + 38 + 4 + 30 + 2 + 40 + 1 + 2 + 4 + 3);
}

TEST_CASE("libnvme: Identify Namespace layout, LBA format and FLBAS", "[wire][libnvme][identify]")
{
	typedef struct gio_id_ns O;
	typedef struct nvme_id_ns T;
	typedef struct gio_lbaf OL;
	typedef struct nvme_lbaf TL;
	static const Row rows[] = {
		ROW("sizeof gio_id_ns", sizeof(O), 4096),
		ROW("sizeof nvme_id_ns", sizeof(T), 4096),
		ROW("sizeof both", sizeof(O), sizeof(T)),
		FIELD(O, T, nsze),
		FIELD(O, T, ncap),
		FIELD(O, T, nuse),
		FIELD(O, T, nsfeat),
		FIELD(O, T, nlbaf),
		FIELD(O, T, flbas),
		FIELD(O, T, mc),
		FIELD(O, T, dpc),
		FIELD(O, T, dps),
		FIELD(O, T, nmic),
		FIELD(O, T, rescap),
		FIELD(O, T, fpi),
		FIELD(O, T, dlfeat),
		FIELD(O, T, nawun),
		FIELD(O, T, nawupf),
		FIELD(O, T, nacwu),
		FIELD(O, T, nabsn),
		FIELD(O, T, nabo),
		FIELD(O, T, nabspf),
		FIELD(O, T, noiob),
		FIELD(O, T, nvmcap),
		FIELD(O, T, npwg),
		FIELD(O, T, npwa),
		FIELD(O, T, npdg),
		FIELD(O, T, npda),
		FIELD(O, T, nows),
		FIELD(O, T, mssrl),
		FIELD(O, T, mcl),
		FIELD(O, T, msrc),
		FIELD(O, T, rsvd81),
		FIELD(O, T, nulbaf),
		FIELD(O, T, rsvd83),
		FIELD(O, T, anagrpid),
		FIELD(O, T, rsvd96),
		FIELD(O, T, nsattr),
		FIELD(O, T, nvmsetid),
		FIELD(O, T, endgid),
		FIELD(O, T, nguid),
		FIELD(O, T, eui64),
		FIELD(O, T, lbaf),
		ROW("offsetof lbaf[15]", offsetof(O, lbaf) + 15 * sizeof(OL), offsetof(T, lbaf) + 15 * sizeof(TL)),
		ROW("offsetof lbaf[63]", offsetof(O, lbaf) + 63 * sizeof(OL), offsetof(T, lbaf) + 63 * sizeof(TL)),
		ROW("offsetof vs / lbstm (first byte after LBAF63)", offsetof(O, vs), offsetof(T, lbstm)),
		ROW("bytes after LBAF63", sizeof(((O *)nullptr)->vs),
		    sizeof(((T *)nullptr)->lbstm) + sizeof(((T *)nullptr)->vs)),
		// LBA Format entry
		ROW("sizeof lbaf", sizeof(OL), sizeof(TL)),
		FIELD(OL, TL, ms),
		FIELD2(OL, lbads, TL, ds),
		FIELD(OL, TL, rp),
		ROW("LBAF RP mask", GIO_LBAF_RP_MASK, NVME_LBAF_RP_MASK),
		// LBA Format as one dword: our field shifts against the byte layout libnvme uses.
		ROW("LBAF MS shift / byte offset of ms", GIO_LBAF_MS_SHIFT, 8 * offsetof(TL, ms)),
		ROW("LBAF MS mask / width of ms", GIO_LBAF_MS_MASK, (1ull << (8 * sizeof(((TL *)nullptr)->ms))) - 1),
		ROW("LBAF LBADS shift / byte offset of ds", GIO_LBAF_LBADS_SHIFT, 8 * offsetof(TL, ds)),
		ROW("LBAF LBADS mask / width of ds", GIO_LBAF_LBADS_MASK, (1ull << (8 * sizeof(((TL *)nullptr)->ds))) - 1),
		ROW("LBAF RP shift / byte offset of rp", GIO_LBAF_RP_SHIFT, 8 * offsetof(TL, rp)),
		// FLBAS
		ROW("FLBAS low index bits", POS(FLBAS_LOW), NVME_NS_FLBAS_LOWER_MASK),
		ROW("FLBAS extended metadata", POS(FLBAS_EXT), NVME_NS_FLBAS_META_EXT),
		ROW("FLBAS high index bits", POS(FLBAS_HIGH), NVME_NS_FLBAS_HIGHER_MASK),
	};
	// 3 + 40 fields x 2 + 4 + 1 + 3 x 2 + 1 + 5 + 3
	check_rows(rows, 3 + 80 + 4 + 1 + 6 + 1 + 5 + 3);
}

TEST_CASE("libnvme: Secondary Controller List layout (SR-IOV)", "[wire][libnvme][identify]")
{
	typedef struct gio_sec_ctrl O;
	typedef struct nvme_secondary_ctrl T;
	typedef struct gio_sec_ctrl_list OL;
	typedef struct nvme_secondary_ctrl_list TL;
	static const Row rows[] = {
		ROW("sizeof both entries", sizeof(O), sizeof(T)),
		FIELD(O, T, scid),
		FIELD(O, T, pcid),
		FIELD(O, T, scs),
		FIELD(O, T, rsvd5),
		FIELD(O, T, vfn),
		FIELD(O, T, nvq),
		FIELD(O, T, nvi),
		FIELD(O, T, rsvd14),
		ROW("sizeof both lists", sizeof(OL), sizeof(TL)),
		FIELD(OL, TL, num),
		FIELD2(OL, rsvd1, TL, rsvd),
		FIELD2(OL, sc, TL, sc_entry),
		ROW("entries", GIO_SEC_CTRL_LIST_MAX, NVME_ID_SECONDARY_CTRL_MAX),
	};
	// 2 + 11 fields x 2 + 1
	check_rows(rows, 2 + 22 + 1);
}

TEST_CASE("libnvme: FLBAS format index agrees with nvme_id_ns_flbas_to_lbaf_inuse", "[wire][libnvme][identify]")
{
	// libnvme always uses the high bits; ours does when more than 16 formats exist (NLBAF >= 16).
	struct gio_id_ns ns;
	memset(&ns, 0, sizeof(ns));
	ns.nlbaf = 63;
	unsigned checked = 0;
	for (unsigned flbas = 0; flbas < 256; flbas++) {
		uint8_t theirs = 0xff;
		nvme_id_ns_flbas_to_lbaf_inuse((uint8_t)flbas, &theirs);
		ns.flbas = (uint8_t)flbas;
		CAPTURE(flbas);
		CHECK(gio_id_ns_lbaf_index(&ns) == theirs);
		checked++;
	}
	CHECK(checked == 256);
}

TEST_CASE("libnvme: admin and NVM opcodes, CNS, features", "[wire][libnvme][sqe]")
{
	static const Row rows[] = {
		ROW("admin Delete I/O SQ", GIO_ADMIN_OPC_DELETE_SQ, nvme_admin_delete_sq),
		ROW("admin Create I/O SQ", GIO_ADMIN_OPC_CREATE_SQ, nvme_admin_create_sq),
		ROW("admin Get Log Page", GIO_ADMIN_OPC_GET_LOG_PAGE, nvme_admin_get_log_page),
		ROW("admin Delete I/O CQ", GIO_ADMIN_OPC_DELETE_CQ, nvme_admin_delete_cq),
		ROW("admin Create I/O CQ", GIO_ADMIN_OPC_CREATE_CQ, nvme_admin_create_cq),
		ROW("admin Identify", GIO_ADMIN_OPC_IDENTIFY, nvme_admin_identify),
		ROW("admin Abort", GIO_ADMIN_OPC_ABORT, nvme_admin_abort_cmd),
		ROW("admin Set Features", GIO_ADMIN_OPC_SET_FEATURES, nvme_admin_set_features),
		ROW("admin Get Features", GIO_ADMIN_OPC_GET_FEATURES, nvme_admin_get_features),
		ROW("admin Asynchronous Event Request", GIO_ADMIN_OPC_ASYNC_EVENT, nvme_admin_async_event),
		ROW("admin Keep Alive", GIO_ADMIN_OPC_KEEP_ALIVE, nvme_admin_keep_alive),
		ROW("admin Doorbell Buffer Config", GIO_ADMIN_OPC_DBBUF_CONFIG, nvme_admin_dbbuf),
		ROW("NVM Flush", GIO_NVM_OPC_FLUSH, nvme_cmd_flush),
		ROW("NVM Write", GIO_NVM_OPC_WRITE, nvme_cmd_write),
		ROW("NVM Read", GIO_NVM_OPC_READ, nvme_cmd_read),
		ROW("NVM Write Uncorrectable", GIO_NVM_OPC_WRITE_UNCOR, nvme_cmd_write_uncor),
		ROW("NVM Compare", GIO_NVM_OPC_COMPARE, nvme_cmd_compare),
		ROW("NVM Write Zeroes", GIO_NVM_OPC_WRITE_ZEROES, nvme_cmd_write_zeroes),
		ROW("NVM Dataset Management", GIO_NVM_OPC_DSM, nvme_cmd_dsm),
		ROW("CNS Identify Namespace", GIO_CNS_NS, NVME_IDENTIFY_CNS_NS),
		ROW("CNS Identify Controller", GIO_CNS_CTRL, NVME_IDENTIFY_CNS_CTRL),
		ROW("CNS Active Namespace ID list", GIO_CNS_NS_ACTIVE_LIST, NVME_IDENTIFY_CNS_NS_ACTIVE_LIST),
		ROW("CNS Secondary Controller List", GIO_CNS_SEC_CTRL_LIST, NVME_IDENTIFY_CNS_SECONDARY_CTRL_LIST),
		ROW("FID Number of Queues", GIO_FEAT_NUM_QUEUES, NVME_FEAT_FID_NUM_QUEUES),
		ROW("Number of Queues NSQR shift", GIO_NUMQ_NSQ_SHIFT, NVME_FEAT_NRQS_NSQR_SHIFT),
		ROW("Number of Queues NSQR mask", GIO_NUMQ_NSQ_MASK, NVME_FEAT_NRQS_NSQR_MASK),
		ROW("Number of Queues NCQR shift", GIO_NUMQ_NCQ_SHIFT, NVME_FEAT_NRQS_NCQR_SHIFT),
		ROW("Number of Queues NCQR mask", GIO_NUMQ_NCQ_MASK, NVME_FEAT_NRQS_NCQR_MASK),
		ROW("Get Features SEL holds 'supported capabilities'", GIO_FEAT_CDW10_SEL_MASK & NVME_GET_FEATURES_SEL_SUPPORTED,
		    NVME_GET_FEATURES_SEL_SUPPORTED),
		// Read/Write/Write Zeroes CDW12 control bits; libnvme counts them from CDW12 bit 16.
		ROW("CDW12 STC", 1ull << (GIO_RW_CDW12_STC_SHIFT - 16), NVME_IO_STC),
		ROW("CDW12 DEAC", 1ull << (GIO_RW_CDW12_DEAC_SHIFT - 16), NVME_IO_DEAC),
		ROW("CDW12 PRINFO field", (unsigned long long)GIO_RW_CDW12_PRINFO_MASK << (GIO_RW_CDW12_PRINFO_SHIFT - 16),
		    NVME_IO_PRINFO_PRCHK_REF | NVME_IO_PRINFO_PRCHK_APP | NVME_IO_PRINFO_PRCHK_GUARD | NVME_IO_PRINFO_PRACT),
		ROW("CDW12 FUA", 1ull << (GIO_RW_CDW12_FUA_SHIFT - 16), NVME_IO_FUA),
		ROW("CDW12 LR", 1ull << (GIO_RW_CDW12_LR_SHIFT - 16), NVME_IO_LR),
		ROW("CDW12 DTYPE streams", (unsigned long long)GIO_SET(RW_CDW12_DTYPE, 1u) >> 16, NVME_IO_DTYPE_STREAMS),
	};
	check_rows(rows, 35);
}

TEST_CASE("libnvme: Number of Queues decoding agrees with nvme_feature_decode_number_of_queues",
	  "[wire][libnvme][sqe]")
{
	static const uint32_t dw0s[] = {0u, 0x00010002u, 0x003f001fu, 0xfffe0000u, 0x0000fffeu, 0xabcd1234u};
	unsigned checked = 0;
	for (uint32_t dw0 : dw0s) {
		uint16_t nsqr = 0, ncqr = 0;
		uint32_t nsq = 0, ncq = 0;
		nvme_feature_decode_number_of_queues(dw0, &nsqr, &ncqr);
		gio_num_queues_granted(dw0, &nsq, &ncq);
		CAPTURE(dw0);
		// libnvme returns the raw 0's based fields; ours are counts.
		CHECK(nsq == (uint32_t)nsqr + 1u);
		CHECK(ncq == (uint32_t)ncqr + 1u);
		checked++;
	}
	CHECK(checked == 6);
}

TEST_CASE("libnvme: status code types, status codes and status field layout", "[wire][libnvme][status]")
{
	static const Row rows[] = {
		// Status field layout (the 15-bit field, phase tag removed).
		ROW("SF SC shift", GIO_SF_SC_SHIFT, NVME_SC_SHIFT),
		ROW("SF SC mask", GIO_SF_SC_MASK, NVME_SC_MASK),
		ROW("SF SCT shift", GIO_SF_SCT_SHIFT, NVME_SCT_SHIFT),
		ROW("SF SCT mask", GIO_SF_SCT_MASK, NVME_SCT_MASK),
		ROW("SF CRD (in place)", POS(SF_CRD), NVME_SC_CRD),
		ROW("SF More bit", GIO_SF_MORE, NVME_SC_MORE),
		ROW("SF More (in place)", POS(SF_M), NVME_SC_MORE),
		ROW("SF DNR bit", GIO_SF_DNR, NVME_SC_DNR),
		ROW("SF DNR (in place)", POS(SF_DNR), NVME_SC_DNR),
		// Status word (bytes 14-15 of the CQE) is the status field shifted left by the phase tag.
		ROW("status word SC", POS(CQE_STATUS_SC), (unsigned long long)NVME_SC_MASK << 1),
		ROW("status word SCT", POS(CQE_STATUS_SCT), (unsigned long long)NVME_SCT_MASK << (NVME_SCT_SHIFT + 1)),
		ROW("status word CRD", POS(CQE_STATUS_CRD), (unsigned long long)NVME_SC_CRD << 1),
		ROW("status word More", POS(CQE_STATUS_M), (unsigned long long)NVME_SC_MORE << 1),
		ROW("status word DNR", POS(CQE_STATUS_DNR), (unsigned long long)NVME_SC_DNR << 1),
		// Status code types
		ROW("SCT generic", GIO_SCT_GENERIC, NVME_SCT_GENERIC),
		ROW("SCT command specific", GIO_SCT_CMD_SPECIFIC, NVME_SCT_CMD_SPECIFIC),
		ROW("SCT media and data integrity", GIO_SCT_MEDIA, NVME_SCT_MEDIA),
		ROW("SCT path related", GIO_SCT_PATH, NVME_SCT_PATH),
		ROW("SCT vendor specific", GIO_SCT_VENDOR, NVME_SCT_VS),
		// Generic command status (SCT 0)
		ROW("SC Successful Completion", GIO_SC_SUCCESS, NVME_SC_SUCCESS),
		ROW("SC Invalid Command Opcode", GIO_SC_INVALID_OPCODE, NVME_SC_INVALID_OPCODE),
		ROW("SC Invalid Field in Command", GIO_SC_INVALID_FIELD, NVME_SC_INVALID_FIELD),
		ROW("SC Command ID Conflict", GIO_SC_CID_CONFLICT, NVME_SC_CMDID_CONFLICT),
		ROW("SC Data Transfer Error", GIO_SC_DATA_XFER_ERROR, NVME_SC_DATA_XFER_ERROR),
		ROW("SC Power Loss", GIO_SC_POWER_LOSS, NVME_SC_POWER_LOSS),
		ROW("SC Internal Error", GIO_SC_INTERNAL, NVME_SC_INTERNAL),
		ROW("SC Command Abort Requested", GIO_SC_ABORT_REQ, NVME_SC_ABORT_REQ),
		ROW("SC Aborted due to SQ Deletion", GIO_SC_ABORT_SQ_DELETED, NVME_SC_ABORT_QUEUE),
		ROW("SC Aborted due to Failed Fused", GIO_SC_FUSED_FAIL, NVME_SC_FUSED_FAIL),
		ROW("SC Aborted due to Missing Fused", GIO_SC_FUSED_MISSING, NVME_SC_FUSED_MISSING),
		ROW("SC Invalid Namespace or Format", GIO_SC_INVALID_NS, NVME_SC_INVALID_NS),
		ROW("SC Command Sequence Error", GIO_SC_CMD_SEQ_ERROR, NVME_SC_CMD_SEQ_ERROR),
		ROW("SC Invalid SGL Segment Descriptor", GIO_SC_SGL_INVALID_SEGMENT, NVME_SC_SGL_INVALID_LAST),
		ROW("SC Invalid Number of SGL Descriptors", GIO_SC_SGL_INVALID_COUNT, NVME_SC_SGL_INVALID_COUNT),
		ROW("SC Data SGL Length Invalid", GIO_SC_SGL_INVALID_DATA_LEN, NVME_SC_SGL_INVALID_DATA),
		ROW("SC Metadata SGL Length Invalid", GIO_SC_SGL_INVALID_MD_LEN, NVME_SC_SGL_INVALID_METADATA),
		ROW("SC SGL Descriptor Type Invalid", GIO_SC_SGL_INVALID_TYPE, NVME_SC_SGL_INVALID_TYPE),
		ROW("SC Invalid Use of CMB", GIO_SC_CMB_INVALID_USE, NVME_SC_CMB_INVALID_USE),
		ROW("SC PRP Offset Invalid", GIO_SC_PRP_INVALID_OFFSET, NVME_SC_PRP_INVALID_OFFSET),
		ROW("SC Atomic Write Unit Exceeded", GIO_SC_AWU_EXCEEDED, NVME_SC_AWU_EXCEEDED),
		ROW("SC Operation Denied", GIO_SC_OP_DENIED, NVME_SC_OP_DENIED),
		ROW("SC SGL Offset Invalid", GIO_SC_SGL_INVALID_OFFSET, NVME_SC_SGL_INVALID_OFFSET),
		ROW("SC Host Identifier Inconsistent Format", GIO_SC_HOSTID_FORMAT, NVME_SC_HOSTID_FORMAT),
		ROW("SC Keep Alive Timer Expired", GIO_SC_KAT_EXPIRED, NVME_SC_KAT_EXPIRED),
		ROW("SC Keep Alive Timeout Invalid", GIO_SC_KAT_INVALID, NVME_SC_KAT_INVALID),
		ROW("SC Aborted due to Preempt and Abort", GIO_SC_PREEMPT_ABORT, NVME_SC_CMD_ABORTED_PREMEPT),
		ROW("SC Sanitize Failed", GIO_SC_SANITIZE_FAILED, NVME_SC_SANITIZE_FAILED),
		ROW("SC Sanitize In Progress", GIO_SC_SANITIZE_IN_PROGRESS, NVME_SC_SANITIZE_IN_PROGRESS),
		ROW("SC SGL Data Block Granularity Invalid", GIO_SC_SGL_INVALID_GRANULARITY, NVME_SC_SGL_INVALID_GRANULARITY),
		ROW("SC Command Not Supported for Queue in CMB", GIO_SC_CMD_IN_CMBQ_NOT_SUPP, NVME_SC_CMD_IN_CMBQ_NOT_SUPP),
		ROW("SC Namespace is Write Protected", GIO_SC_NS_WRITE_PROTECTED, NVME_SC_NS_WRITE_PROTECTED),
		ROW("SC Command Interrupted", GIO_SC_CMD_INTERRUPTED, NVME_SC_CMD_INTERRUPTED),
		ROW("SC Transient Transport Error", GIO_SC_TRANSIENT_TRANSPORT, NVME_SC_TRAN_TPORT_ERROR),
		ROW("SC LBA Out of Range", GIO_SC_LBA_RANGE, NVME_SC_LBA_RANGE),
		ROW("SC Capacity Exceeded", GIO_SC_CAP_EXCEEDED, NVME_SC_CAP_EXCEEDED),
		ROW("SC Namespace Not Ready", GIO_SC_NS_NOT_READY, NVME_SC_NS_NOT_READY),
		ROW("SC Reservation Conflict", GIO_SC_RESERVATION_CONFLICT, NVME_SC_RESERVATION_CONFLICT),
		ROW("SC Format In Progress", GIO_SC_FORMAT_IN_PROGRESS, NVME_SC_FORMAT_IN_PROGRESS),
		// Command specific status (SCT 1)
		ROW("SC Completion Queue Invalid", GIO_SC_CQ_INVALID, NVME_SC_CQ_INVALID),
		ROW("SC Invalid Queue Identifier", GIO_SC_QID_INVALID, NVME_SC_QID_INVALID),
		ROW("SC Invalid Queue Size", GIO_SC_QUEUE_SIZE, NVME_SC_QUEUE_SIZE),
		ROW("SC Abort Command Limit Exceeded", GIO_SC_ABORT_LIMIT, NVME_SC_ABORT_LIMIT),
		ROW("SC Invalid Interrupt Vector", GIO_SC_INVALID_VECTOR, NVME_SC_INVALID_VECTOR),
		ROW("SC Invalid Queue Deletion", GIO_SC_INVALID_QUEUE_DELETE, NVME_SC_INVALID_QUEUE),
		ROW("SC Feature Identifier Not Saveable", GIO_SC_FEAT_NOT_SAVEABLE, NVME_SC_FEATURE_NOT_SAVEABLE),
		ROW("SC Feature Not Changeable", GIO_SC_FEAT_NOT_CHANGEABLE, NVME_SC_FEATURE_NOT_CHANGEABLE),
		ROW("SC Conflicting Attributes", GIO_SC_CONFLICTING_ATTRS, NVME_SC_BAD_ATTRIBUTES),
		ROW("SC Invalid Protection Information", GIO_SC_INVALID_PI, NVME_SC_INVALID_PI),
		ROW("SC Attempted Write to Read Only Range", GIO_SC_READ_ONLY, NVME_SC_READ_ONLY),
		// Media and data integrity errors (SCT 2)
		ROW("SC Write Fault", GIO_SC_WRITE_FAULT, NVME_SC_WRITE_FAULT),
		ROW("SC Unrecovered Read Error", GIO_SC_UNRECOVERED_READ, NVME_SC_READ_ERROR),
		ROW("SC End-to-end Guard Check Error", GIO_SC_GUARD_CHECK, NVME_SC_GUARD_CHECK),
		ROW("SC End-to-end Application Tag Check Error", GIO_SC_APPTAG_CHECK, NVME_SC_APPTAG_CHECK),
		ROW("SC End-to-end Reference Tag Check Error", GIO_SC_REFTAG_CHECK, NVME_SC_REFTAG_CHECK),
		ROW("SC Compare Failure", GIO_SC_COMPARE_FAILED, NVME_SC_COMPARE_FAILED),
		ROW("SC Access Denied", GIO_SC_ACCESS_DENIED, NVME_SC_ACCESS_DENIED),
		ROW("SC Deallocated or Unwritten Logical Block", GIO_SC_UNWRITTEN_BLOCK, NVME_SC_UNWRITTEN_BLOCK),
		// Path related status (SCT 3)
		ROW("SC Internal Path Error", GIO_SC_INTERNAL_PATH_ERROR, NVME_SC_ANA_INTERNAL_PATH_ERROR),
		ROW("SC Asymmetric Access Persistent Loss", GIO_SC_ANA_PERSISTENT_LOSS, NVME_SC_ANA_PERSISTENT_LOSS),
		ROW("SC Asymmetric Access Inaccessible", GIO_SC_ANA_INACCESSIBLE, NVME_SC_ANA_INACCESSIBLE),
		ROW("SC Asymmetric Access Transition", GIO_SC_ANA_TRANSITION, NVME_SC_ANA_TRANSITION),
		ROW("SC Controller Pathing Error", GIO_SC_CTRL_PATH_ERROR, NVME_SC_CTRL_PATH_ERROR),
		ROW("SC Host Pathing Error", GIO_SC_HOST_PATH_ERROR, NVME_SC_HOST_PATH_ERROR),
		ROW("SC Command Aborted By Host", GIO_SC_HOST_ABORTED, NVME_SC_CMD_ABORTED_BY_HOST),
		// GIO_SF() composes the same status field as libnvme's shift/mask.
		ROW("GIO_SF(media, unrecovered read)", GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ),
		    ((unsigned long long)NVME_SCT_MEDIA << NVME_SCT_SHIFT) | NVME_SC_READ_ERROR),
		ROW("GIO_SF(path, host aborted)", GIO_SF(GIO_SCT_PATH, GIO_SC_HOST_ABORTED),
		    ((unsigned long long)NVME_SCT_PATH << NVME_SCT_SHIFT) | NVME_SC_CMD_ABORTED_BY_HOST),
	};
	// 9 layout + 5 status word + 5 SCT + 39 generic + 11 command specific + 8 media + 7 path + 2
	check_rows(rows, 9 + 5 + 5 + 39 + 11 + 8 + 7 + 2);
}

TEST_CASE("libnvme: status field decoding agrees with nvme_status_code_type/nvme_status_code",
	  "[wire][libnvme][status]")
{
	// Every 15-bit status field; a mismatch is reported once per decoder with the first value.
	unsigned bad_sct = 0, bad_sc = 0, first_bad = 0x10000;
	unsigned n = 0;
	for (unsigned sf = 0; sf < 0x8000u; sf++, n++) {
		const bool ok_sct = gio_status_sct((uint16_t)sf) == nvme_status_code_type((uint16_t)sf);
		const bool ok_sc = gio_status_sc((uint16_t)sf) == nvme_status_code((uint16_t)sf);
		bad_sct += !ok_sct;
		bad_sc += !ok_sc;
		if ((!ok_sct || !ok_sc) && first_bad == 0x10000)
			first_bad = sf;
	}
	CAPTURE(first_bad);
	CHECK(bad_sct == 0);
	CHECK(bad_sc == 0);
	CHECK(n == 0x8000u);
}
