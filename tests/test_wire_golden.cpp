// Golden byte-level tests of giouring's encoders and decoders.
//
// Every expected byte below was written by hand from the field positions of the NVM Express
// Base Specification 2.0c and the NVM Command Set Specification 1.0c (sections cited per test),
// not computed from giouring's own constants. Multi-byte fields are little-endian.
//
// Submission Queue Entry (Base 2.0c, "Submission Queue Entry", "Common Command Format"):
//   byte 0 OPC; byte 1 FUSE (bits 9:8 of CDW0 = byte 1 bits 1:0) and PSDT (bits 15:14 = byte 1
//   bits 7:6); bytes 2-3 CID; 4-7 NSID; 8-15 CDW2-3; 16-23 MPTR; 24-39 DPTR (PRP1 24-31,
//   PRP2 32-39; SGL1: address 24-31, length 32-35, reserved 36-38, SGL Identifier 39);
//   40-63 CDW10-CDW15.
// Completion Queue Entry (Base 2.0c, "Completion Queue Entry", "Status Field Definition"):
//   bytes 0-3 DW0; 4-7 DW1; 8-9 SQHD; 10-11 SQID; 12-13 CID; 14-15 status: DW3 bit 16 P,
//   24:17 SC, 27:25 SCT, 29:28 CRD, 30 M, 31 DNR.

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include <giouring/config.h>
#include <giouring/nvme/cqe.h>
#include <giouring/nvme/identify.h>
#include <giouring/nvme/regs.h>
#include <giouring/nvme/sgl.h>
#include <giouring/nvme/sqe.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>

#include "golden_bytes.h"

namespace {

using golden::check_bytes;
using golden::hex;

// The SQE as the controller reads it: 64 raw bytes.
void check_sqe(const struct gio_sqe &sqe, const uint8_t (&expected)[64])
{
	uint8_t raw[64];
	static_assert(sizeof(sqe) == sizeof(raw), "SQE is 64 bytes");
	memcpy(raw, &sqe, sizeof(raw));
	check_bytes(raw, expected, sizeof(raw));
}

struct gio_cqe cqe_from(const uint8_t (&raw)[16])
{
	struct gio_cqe cqe;
	static_assert(sizeof(cqe) == sizeof(raw), "CQE is 16 bytes");
	memcpy(&cqe, raw, sizeof(cqe));
	return cqe;
}

// Runs an encoder on an SQE filled with 0xAA and checks it failed with -EINVAL without
// writing a single byte.
template <typename F>
void check_einval_untouched(const char *what, F encode)
{
	struct gio_sqe sqe;
	memset(&sqe, 0xAA, sizeof(sqe));
	const int rc = encode(&sqe);
	uint8_t raw[64];
	memcpy(raw, &sqe, sizeof(raw));
	unsigned changed = 0;
	for (uint8_t b : raw)
		changed += b != 0xAA;
	INFO(what);
	CHECK(rc == -EINVAL);
	INFO("SQE after the call:" << hex(raw, sizeof(raw)));
	CHECK(changed == 0);
}

// Little-endian 32-bit value of raw bytes, for reading CDW0 back as one dword.
uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

const uint32_t kNsid = 0xA1B2C3D4u;
const uint64_t kSlba = 0x1122334455667788ull;
const uint32_t kBlocks = 0x100u;
const uint16_t kCid = 0xBEEF;

} // namespace

// ---------------------------------------------------------------------------------------------
// Submission queue entries: NVM command set
// ---------------------------------------------------------------------------------------------

// NVM Command Set Specification 1.0c, "Read command" (SLBA CDW10-11, NLB 0's based CDW12 15:0);
// NVM Express Base Specification 2.0c, "Submission Queue Entry" / "Common Command Format"
// (OPC byte 0, PSDT 00b = PRPs, CID bytes 2-3, NSID 4-7, PRP1 24-31, PRP2 32-39).
TEST_CASE("golden: Read with PRPs", "[wire][golden][sqe][nvm]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_read(&sqe, kNsid, kSlba, kBlocks) == 0);
	sqe.dptr.prp.prp1 = 0x000000ABCDEF1200ull;
	sqe.dptr.prp.prp2 = 0x0000001234567000ull;
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x02, 0x00, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1, // OPC Read, PSDT PRP, CID, NSID
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CDW2, CDW3
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // MPTR
		0x00, 0x12, 0xEF, 0xCD, 0xAB, 0x00, 0x00, 0x00, // PRP1
		0x00, 0x70, 0x56, 0x34, 0x12, 0x00, 0x00, 0x00, // PRP2
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // CDW10-11: SLBA
		0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CDW12: NLB 0xFF; CDW13
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CDW14, CDW15
	};
	check_sqe(sqe, expected);
}

// NVM Command Set Specification 1.0c, "Write command" (FUA CDW12 bit 30, LR bit 31);
// NVM Express Base Specification 2.0c, "Common Command Format" (MPTR bytes 16-23, PSDT 01b:
// SGLs with a contiguous metadata buffer) and "Scatter Gather List (SGL)" (SGL Data Block
// descriptor: address 24-31, length 32-35, reserved 36-38, identifier 39 = type 0h, sub type 0h).
TEST_CASE("golden: Write with an SGL Data Block, metadata pointer, FUA and LR", "[wire][golden][sqe][nvm][sgl]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_write(&sqe, kNsid, kSlba, kBlocks) == 0);
	sqe.mptr = 0x00000000FEEDF000ull;
	sqe.cdw12 |= GIO_SET(RW_CDW12_FUA, 1u) | GIO_SET(RW_CDW12_LR, 1u);
	gio_sqe_set_sgl_data(&sqe, 0x00007F0123456000ull, 0x00020000u);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x01, 0x40, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1, // OPC Write, PSDT 01b, CID, NSID
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CDW2, CDW3
		0x00, 0xF0, 0xED, 0xFE, 0x00, 0x00, 0x00, 0x00, // MPTR
		0x00, 0x60, 0x45, 0x23, 0x01, 0x7F, 0x00, 0x00, // SGL1 address
		0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, // SGL1 length 128 KiB, reserved, id 00h
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // CDW10-11: SLBA
		0xFF, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, // CDW12: NLB 0xFF, FUA, LR; CDW13
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CDW14, CDW15
	};
	check_sqe(sqe, expected);

	// The same Command Dword 0 read back as one little-endian dword.
	uint8_t raw[64];
	memcpy(raw, &sqe, sizeof(raw));
	const uint32_t cdw0 = le32(raw);
	CHECK(cdw0 == 0xBEEF4001u);
	CHECK(GIO_GET(cdw0, CDW0_OPC) == 0x01u);
	CHECK(GIO_GET(cdw0, CDW0_FUSE) == 0u);
	CHECK(GIO_GET(cdw0, CDW0_PSDT) == 1u);
	CHECK(GIO_GET(cdw0, CDW0_CID) == 0xBEEFu);
	CHECK(gio_sqe_psdt(&sqe) == 1u);
}

// NVM Command Set Specification 1.0c, "Read command" / "Write command": NLB is 0's based in
// CDW12 bits 15:0, so 1 block encodes 0 and 65536 blocks encode FFFFh.
TEST_CASE("golden: Read/Write NLB limits", "[wire][golden][sqe][nvm]")
{
	struct gio_sqe sqe;
	uint8_t raw[64];

	REQUIRE(gio_prep_write(&sqe, 1, 0, 1) == 0);
	memcpy(raw, &sqe, sizeof(raw));
	CHECK(raw[0] == 0x01);
	CHECK(raw[48] == 0x00);
	CHECK(raw[49] == 0x00);

	REQUIRE(gio_prep_read(&sqe, 0xFFFFFFFEu, 0xFFFFFFFFFFFEFFFFull, 65536) == 0);
	memcpy(raw, &sqe, sizeof(raw));
	static const uint8_t expected[64] = {
		0x02, 0x00, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0xFF, // OPC Read, NSID FFFFFFFEh
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // SLBA FFFFFFFFFFFEFFFFh: the last block is 2^64 - 2
		0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // NLB FFFFh
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_bytes(raw, expected, 64);
}

// NVM Command Set Specification 1.0c, "Write Zeroes command" (opcode 08h, SLBA CDW10-11,
// NLB CDW12 15:0, DEAC CDW12 bit 25, no data pointer).
TEST_CASE("golden: Write Zeroes with and without DEAC", "[wire][golden][sqe][nvm]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_write_zeroes(&sqe, kNsid, kSlba, kBlocks, 1) == 0);
	sqe.cid = kCid;
	static const uint8_t deac[64] = {
		0x08, 0x00, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xFF, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, // NLB 0xFF, DEAC (bit 25 = byte 51 bit 1)
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, deac);

	REQUIRE(gio_prep_write_zeroes(&sqe, kNsid, kSlba, kBlocks, 0) == 0);
	sqe.cid = kCid;
	uint8_t no_deac[64];
	memcpy(no_deac, deac, sizeof(no_deac));
	no_deac[51] = 0x00;
	check_sqe(sqe, no_deac);
}

// NVM Command Set Specification 1.0c, "Flush command" (opcode 00h, NSID only; FFFFFFFFh
// addresses all namespaces).
TEST_CASE("golden: Flush", "[wire][golden][sqe][nvm]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_flush(&sqe, kNsid) == 0);
	sqe.cid = kCid;
	uint8_t expected[64] = {0x00, 0x00, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1};
	check_sqe(sqe, expected);

	REQUIRE(gio_prep_flush(&sqe, 0xFFFFFFFFu) == 0);
	sqe.cid = kCid;
	expected[4] = expected[5] = expected[6] = expected[7] = 0xFF;
	check_sqe(sqe, expected);
}

// ---------------------------------------------------------------------------------------------
// Submission queue entries: admin commands
// ---------------------------------------------------------------------------------------------

// NVM Express Base Specification 2.0c, "Identify command" (opcode 06h; CDW10 CNS bits 7:0,
// CNTID bits 31:16; CNS 00h namespace, 01h controller, 02h active namespace list; data
// through PRP1/PRP2).
TEST_CASE("golden: Identify", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;

	SECTION("Identify Controller, page-aligned buffer") {
		memset(&sqe, 0x5A, sizeof(sqe));
		REQUIRE(gio_prep_identify(&sqe, GIO_CNS_CTRL, 0, 0x000000ABCDEF1000ull, 0) == 0);
		sqe.cid = kCid;
		static const uint8_t expected[64] = {
			0x06, 0x00, 0xEF, 0xBE, 0x00, 0x00, 0x00, 0x00, // OPC Identify, CID, NSID 0
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x10, 0xEF, 0xCD, 0xAB, 0x00, 0x00, 0x00, // PRP1
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // PRP2
			0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CNS 01h, CNTID 0; CDW11
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		};
		check_sqe(sqe, expected);
	}
	SECTION("Identify Namespace, buffer crossing a page") {
		memset(&sqe, 0x5A, sizeof(sqe));
		REQUIRE(gio_prep_identify(&sqe, GIO_CNS_NS, kNsid, 0x000000ABCDEF1F00ull,
					  0x000000ABCDEF2000ull) == 0);
		sqe.cid = kCid;
		static const uint8_t expected[64] = {
			0x06, 0x00, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x1F, 0xEF, 0xCD, 0xAB, 0x00, 0x00, 0x00, // PRP1 with page offset
			0x00, 0x20, 0xEF, 0xCD, 0xAB, 0x00, 0x00, 0x00, // PRP2: next page
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // CNS 00h
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		};
		check_sqe(sqe, expected);
	}
	SECTION("Active Namespace ID list") {
		REQUIRE(gio_prep_identify(&sqe, GIO_CNS_NS_ACTIVE_LIST, 0x10, 0x1000, 0) == 0);
		uint8_t raw[64];
		memcpy(raw, &sqe, sizeof(raw));
		CHECK(raw[0] == 0x06);
		CHECK(raw[4] == 0x10);
		CHECK(raw[40] == 0x02);
		CHECK(raw[42] == 0x00);
		CHECK(raw[43] == 0x00);
	}
}

// NVM Express Base Specification 2.0c, "Create I/O Completion Queue command" (opcode 05h;
// PRP1 queue base; CDW10 QID bits 15:0, QSIZE bits 31:16 0's based; CDW11 PC bit 0, IEN bit 1,
// IV bits 31:16).
TEST_CASE("golden: Create I/O Completion Queue", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_create_cq(&sqe, 0x0102, 1024, 0x0000001234567000ull, 0xABCD, 1) == 0);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x05, 0x00, 0xEF, 0xBE, 0x00, 0x00, 0x00, 0x00, // OPC, CID, NSID 0
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x70, 0x56, 0x34, 0x12, 0x00, 0x00, 0x00, // PRP1 queue base
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x01, 0xFF, 0x03, 0x03, 0x00, 0xCD, 0xAB, // QID 0102h, QSIZE 3FFh; PC, IEN, IV ABCDh
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, expected);

	SECTION("polled queue: IEN clear, vector not encoded") {
		REQUIRE(gio_prep_create_cq(&sqe, 0x0102, 1024, 0x0000001234567000ull, 0xABCD, 0) == 0);
		sqe.cid = kCid;
		uint8_t polled[64];
		memcpy(polled, expected, sizeof(polled));
		polled[44] = 0x01; // PC only
		polled[46] = 0x00;
		polled[47] = 0x00;
		check_sqe(sqe, polled);
	}
	SECTION("largest queue: QSIZE FFFFh") {
		REQUIRE(gio_prep_create_cq(&sqe, 0xFFFF, 65536, 0x1000, 0, 0) == 0);
		uint8_t raw[64];
		memcpy(raw, &sqe, sizeof(raw));
		CHECK(raw[40] == 0xFF);
		CHECK(raw[41] == 0xFF);
		CHECK(raw[42] == 0xFF);
		CHECK(raw[43] == 0xFF);
	}
}

// NVM Express Base Specification 2.0c, "Create I/O Submission Queue command" (opcode 01h;
// PRP1 queue base; CDW10 QID 15:0, QSIZE 31:16 0's based; CDW11 PC bit 0, QPRIO bits 2:1,
// CQID bits 31:16).
TEST_CASE("golden: Create I/O Submission Queue", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_create_sq(&sqe, 0x0102, 65536, 0x0304, 0x0000ABCD00002000ull) == 0);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x01, 0x00, 0xEF, 0xBE, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x20, 0x00, 0x00, 0xCD, 0xAB, 0x00, 0x00, // PRP1 queue base
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x01, 0xFF, 0xFF, 0x01, 0x00, 0x04, 0x03, // QID 0102h, QSIZE FFFFh; PC, QPRIO 0, CQID 0304h
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, expected);

	SECTION("smallest queue: 2 entries, QSIZE 1") {
		REQUIRE(gio_prep_create_sq(&sqe, 0x0102, 2, 0x0304, 0x0000ABCD00002000ull) == 0);
		sqe.cid = kCid;
		uint8_t small[64];
		memcpy(small, expected, sizeof(small));
		small[42] = 0x01;
		small[43] = 0x00;
		check_sqe(sqe, small);
	}
}

// NVM Express Base Specification 2.0c, "Delete I/O Submission Queue command" (opcode 00h) and
// "Delete I/O Completion Queue command" (opcode 04h): CDW10 QID bits 15:0.
TEST_CASE("golden: Delete I/O Submission and Completion Queue", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	uint8_t expected[64] = {0x00, 0x00, 0xEF, 0xBE};
	expected[40] = 0x02;
	expected[41] = 0x01;

	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_delete_sq(&sqe, 0x0102) == 0);
	sqe.cid = kCid;
	check_sqe(sqe, expected);

	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_delete_cq(&sqe, 0x0102) == 0);
	sqe.cid = kCid;
	expected[0] = 0x04;
	check_sqe(sqe, expected);
}

// NVM Express Base Specification 2.0c, "Set Features command" (opcode 09h; CDW10 FID bits 7:0,
// SV bit 31) and "Number of Queues" feature (FID 07h; CDW11 NSQR bits 15:0, NCQR bits 31:16,
// both 0's based).
TEST_CASE("golden: Set Features (Number of Queues)", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_set_num_queues(&sqe, 16, 8) == 0);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x09, 0x00, 0xEF, 0xBE, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x07, 0x00, 0x00, 0x00, 0x0F, 0x00, 0x07, 0x00, // FID 07h, SV 0; NSQR 15, NCQR 7
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, expected);

	SECTION("limits: 65535 submission queues, 1 completion queue") {
		REQUIRE(gio_prep_set_num_queues(&sqe, 65535, 1) == 0);
		uint8_t raw[64];
		memcpy(raw, &sqe, sizeof(raw));
		CHECK(raw[44] == 0xFE);
		CHECK(raw[45] == 0xFF);
		CHECK(raw[46] == 0x00);
		CHECK(raw[47] == 0x00);
	}
}

// NVM Express Base Specification 2.0c, "Set Features command" (CDW10 FID bits 7:0, SV bit 31;
// CDW11 feature specific).
TEST_CASE("golden: Set Features with save", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	gio_prep_set_features(&sqe, 0x0B, 0xDEADBEEFu, 1);
	sqe.cid = kCid;
	uint8_t expected[64] = {0x09, 0x00, 0xEF, 0xBE};
	expected[40] = 0x0B; // FID
	expected[43] = 0x80; // SV: CDW10 bit 31
	expected[44] = 0xEF;
	expected[45] = 0xBE;
	expected[46] = 0xAD;
	expected[47] = 0xDE;
	check_sqe(sqe, expected);

	gio_prep_set_features(&sqe, 0x0B, 0xDEADBEEFu, 0);
	sqe.cid = kCid;
	expected[43] = 0x00;
	check_sqe(sqe, expected);
}

// NVM Express Base Specification 2.0c, "Get Features command" (opcode 0Ah; CDW10 FID bits 7:0,
// SEL bits 10:8: 000b current, 001b default, 010b saved, 011b supported capabilities).
TEST_CASE("golden: Get Features", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	for (uint32_t sel = 0; sel <= 3; sel++) {
		memset(&sqe, 0x5A, sizeof(sqe));
		REQUIRE(gio_prep_get_features(&sqe, 0x07, sel) == 0);
		sqe.cid = kCid;
		uint8_t expected[64] = {0x0A, 0x00, 0xEF, 0xBE};
		expected[40] = 0x07;
		expected[41] = (uint8_t)sel; // CDW10 bits 10:8 = byte 41 bits 2:0
		CAPTURE(sel);
		check_sqe(sqe, expected);
	}
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_get_features(&sqe, 0xFF, 2) == 0);
	uint8_t raw[64];
	memcpy(raw, &sqe, sizeof(raw));
	CHECK(raw[40] == 0xFF);
	CHECK(raw[41] == 0x02);
	CHECK(raw[42] == 0x00);
	CHECK(raw[43] == 0x00);
}

// NVM Express Base Specification 2.0c, "Abort command" (opcode 08h; CDW10 SQID bits 15:0,
// CID bits 31:16).
TEST_CASE("golden: Abort", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	gio_prep_abort(&sqe, 0x0007, 0x1234);
	sqe.cid = kCid;
	uint8_t expected[64] = {0x08, 0x00, 0xEF, 0xBE};
	expected[40] = 0x07;
	expected[41] = 0x00;
	expected[42] = 0x34;
	expected[43] = 0x12;
	check_sqe(sqe, expected);
}

// NVM Express Base Specification 2.0c, "Doorbell Buffer Config command" (opcode 7Ch; PRP1 the
// Shadow Doorbell buffer, PRP2 the EventIdx buffer, both memory-page aligned).
TEST_CASE("golden: Doorbell Buffer Config", "[wire][golden][sqe][admin]")
{
	struct gio_sqe sqe;
	memset(&sqe, 0x5A, sizeof(sqe));
	REQUIRE(gio_prep_dbbuf_config(&sqe, 0x0000000AB0001000ull, 0x0000000CD0002000ull) == 0);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x7C, 0x00, 0xEF, 0xBE, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x10, 0x00, 0xB0, 0x0A, 0x00, 0x00, 0x00, // PRP1: shadow doorbells
		0x00, 0x20, 0x00, 0xD0, 0x0C, 0x00, 0x00, 0x00, // PRP2: EventIdx
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, expected);
}

// ---------------------------------------------------------------------------------------------
// SGL descriptors
// ---------------------------------------------------------------------------------------------

// NVM Express Base Specification 2.0c, "Scatter Gather List (SGL)": a descriptor is address
// (bytes 0-7), length (8-11), reserved (12-14), SGL Identifier (15) with the descriptor type in
// bits 7:4 (0h Data Block, 1h Bit Bucket, 2h Segment, 3h Last Segment) and the sub type in
// bits 3:0 (0h Address).
TEST_CASE("golden: SGL descriptors", "[wire][golden][sgl]")
{
	struct Case {
		uint32_t type;
		uint8_t id;
	};
	static const Case cases[] = {
		{GIO_SGL_TYPE_DATA_BLOCK, 0x00},
		{GIO_SGL_TYPE_BIT_BUCKET, 0x10},
		{GIO_SGL_TYPE_SEGMENT, 0x20},
		{GIO_SGL_TYPE_LAST_SEGMENT, 0x30},
	};
	for (const Case &c : cases) {
		struct gio_sgl_desc d;
		memset(&d, 0xAA, sizeof(d));
		gio_sgl_set(&d, 0x0123456789ABCDE0ull, 0x00001000u, c.type);
		uint8_t raw[16];
		static_assert(sizeof(d) == sizeof(raw), "SGL descriptor is 16 bytes");
		memcpy(raw, &d, sizeof(raw));
		const uint8_t expected[16] = {
			0xE0, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // address
			0x00, 0x10, 0x00, 0x00,                         // length 4096
			0x00, 0x00, 0x00,                               // reserved, cleared
			c.id,                                           // SGL Identifier
		};
		CAPTURE(c.type);
		check_bytes(raw, expected, sizeof(raw));
	}
}

// NVM Express Base Specification 2.0c, "Common Command Format" (PSDT bits 15:14 of CDW0:
// 01b SGL with contiguous metadata buffer, 10b SGL with metadata SGL; FUSE bits 9:8) and
// "Scatter Gather List (SGL)" (SGL1 in bytes 24-39 of the command).
TEST_CASE("golden: SGL Last Segment in DPTR, PSDT and FUSE coexist", "[wire][golden][sqe][sgl]")
{
	struct gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, kNsid, kSlba, kBlocks) == 0);
	sqe.flags = 0x01; // FUSE 01b: first command of a fused operation (set by hand, byte 1 bits 1:0)
	gio_sgl_set(&sqe.dptr.sgl, 0x0000000876543210ull, 3 * 16, GIO_SGL_TYPE_LAST_SEGMENT);
	gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
	sqe.cid = kCid;
	static const uint8_t expected[64] = {
		0x02, 0x41, 0xEF, 0xBE, 0xD4, 0xC3, 0xB2, 0xA1, // PSDT 01b | FUSE 01b
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x10, 0x32, 0x54, 0x76, 0x08, 0x00, 0x00, 0x00, // segment address
		0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, // length 48 (3 descriptors), id 30h
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_sqe(sqe, expected);
	CHECK(gio_sqe_psdt(&sqe) == 1u);

	// PSDT 10b (metadata SGL), FUSE still kept.
	gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MSGL);
	uint8_t raw[64];
	memcpy(raw, &sqe, sizeof(raw));
	CHECK(raw[1] == 0x81);
	CHECK(gio_sqe_psdt(&sqe) == 2u);

	// Back to PRPs: PSDT 00b.
	gio_sqe_set_psdt(&sqe, GIO_PSDT_PRP);
	memcpy(raw, &sqe, sizeof(raw));
	CHECK(raw[1] == 0x01);

	// gio_sqe_set_sgl_data keeps FUSE as well and writes a Data Block (id 00h).
	gio_sqe_set_sgl_data(&sqe, 0x0000000000ABC000ull, 0x200);
	memcpy(raw, &sqe, sizeof(raw));
	CHECK(raw[1] == 0x41);
	CHECK(raw[24] == 0x00);
	CHECK(raw[25] == 0xC0);
	CHECK(raw[26] == 0xAB);
	CHECK(raw[32] == 0x00);
	CHECK(raw[33] == 0x02);
	CHECK(raw[39] == 0x00);
}

// ---------------------------------------------------------------------------------------------
// Completion queue entries
// ---------------------------------------------------------------------------------------------

// NVM Express Base Specification 2.0c, "Completion Queue Entry" (DW0 command specific, SQHD
// bytes 8-9, SQID 10-11, CID 12-13, P bit 16 of DW3) and "Number of Queues" (DW0 NSQA bits
// 15:0, NCQA bits 31:16, 0's based); "Status Field Definition" (SC 00h SCT 0h: Successful
// Completion).
TEST_CASE("golden: CQE success with phase 1", "[wire][golden][cqe]")
{
	static const uint8_t raw[16] = {
		0x0F, 0x00, 0x07, 0x00, // DW0: 16 SQs, 8 CQs allocated (0's based 15 and 7)
		0x00, 0x00, 0x00, 0x00, // DW1
		0x10, 0x00, 0x03, 0x00, // SQHD 0010h, SQID 0003h
		0xEF, 0xBE, 0x01, 0x00, // CID BEEFh, status word: P = 1, status field 0
	};
	const struct gio_cqe cqe = cqe_from(raw);
	CHECK(cqe.dw0 == 0x0007000Fu);
	CHECK(cqe.dw1 == 0u);
	CHECK(cqe.sqhd == 0x0010);
	CHECK(cqe.sqid == 0x0003);
	CHECK(cqe.cid == 0xBEEF);
	CHECK(gio_cqe_phase(&cqe) == 1u);
	const uint16_t sf = gio_cqe_status(&cqe);
	CHECK(sf == 0);
	CHECK(gio_cqe_is_error(&cqe) == 0);
	CHECK(gio_status_is_error(sf) == 0);
	CHECK(gio_status_should_retry(sf) == 0);
	CHECK(gio_status_errno(sf) == 0);
	CHECK(std::string(gio_status_str(sf)) == "Successful Completion");

	uint32_t nsq = 0, ncq = 0;
	gio_num_queues_granted(cqe.dw0, &nsq, &ncq);
	CHECK(nsq == 16u);
	CHECK(ncq == 8u);
}

// NVM Express Base Specification 2.0c, "Completion Queue Entry" and "Status Field Definition":
// DW3 bit 16 P, 24:17 SC, 27:25 SCT, 29:28 CRD, 30 M, 31 DNR; "Generic Command Status"
// (SC 0Fh: Data SGL Length Invalid).
TEST_CASE("golden: CQE Data SGL Length Invalid, DNR, phase 0", "[wire][golden][cqe]")
{
	// DW3 = DNR (bit 31) | SC 0Fh << 17 | CID 1234h = 801E1234h.
	static const uint8_t raw[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x05, 0x00, 0x01, 0x00, // SQHD 5, SQID 1
		0x34, 0x12, 0x1E, 0x80, // CID 1234h, status word 801Eh
	};
	const struct gio_cqe cqe = cqe_from(raw);
	CHECK(cqe.cid == 0x1234);
	CHECK(cqe.sqid == 0x0001);
	CHECK(cqe.sqhd == 0x0005);
	CHECK(cqe.status == 0x801E);
	CHECK(gio_cqe_phase(&cqe) == 0u);
	const uint16_t sf = gio_cqe_status(&cqe);
	CHECK(sf == 0x400F);
	CHECK(gio_status_sc(sf) == 0x0Fu);
	CHECK(gio_status_sct(sf) == 0u);
	CHECK(gio_status_crd(sf) == 0u);
	CHECK(gio_status_more(sf) == 0u);
	CHECK(gio_status_dnr(sf) == 1u);
	CHECK(gio_cqe_is_error(&cqe) == 1);
	CHECK(gio_status_should_retry(sf) == 0);
	CHECK(gio_status_errno(sf) == -EIO);
	CHECK(std::string(gio_status_str(sf)) == "Data SGL Length Invalid");
	// The status word layout constants on the same raw word.
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_P) == 0u);
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_SC) == 0x0Fu);
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_SCT) == 0u);
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_DNR) == 1u);
	// Dword 3 as one word, as completions are published and consumed (gio_cqe_dw3()).
	struct gio_cqe copy = cqe;
	CHECK(*gio_cqe_dw3(&copy) == 0x801E1234u);
	CHECK(GIO_GET(*gio_cqe_dw3(&copy), CQE_DW3_CID) == 0x1234u);
	CHECK(GIO_GET(*gio_cqe_dw3(&copy), CQE_DW3_STATUS) == 0x801Eu);
	CHECK(GIO_CQE_DW3(0x1234u, 0x801Eu) == 0x801E1234u);
	*gio_cqe_dw3(&copy) = GIO_CQE_DW3(0x0042u, 0x6101u);
	CHECK(copy.cid == 0x0042);
	CHECK(copy.status == 0x6101);
	CHECK(copy.sqhd == 0x0005); // Dwords 0 to 2 untouched
}

// NVM Express Base Specification 2.0c, "Status Field Definition" (CRD bits 29:28, More bit 30);
// NVM Command Set Specification 1.0c, status values (SC 80h, SCT 0h: LBA Out of Range).
TEST_CASE("golden: CQE LBA Out of Range with CRD 2 and More, retryable", "[wire][golden][cqe]")
{
	// DW3 = M (bit 30) | CRD 2 << 28 | SC 80h << 17 | P (bit 16) | CID 0042h = 61010042h.
	static const uint8_t raw[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x02, 0x00,
		0x42, 0x00, 0x01, 0x61,
	};
	const struct gio_cqe cqe = cqe_from(raw);
	CHECK(gio_cqe_phase(&cqe) == 1u);
	const uint16_t sf = gio_cqe_status(&cqe);
	CHECK(sf == 0x3080);
	CHECK(gio_status_sc(sf) == 0x80u);
	CHECK(gio_status_sct(sf) == 0u);
	CHECK(gio_status_crd(sf) == 2u);
	CHECK(gio_status_more(sf) == 1u);
	CHECK(gio_status_dnr(sf) == 0u);
	CHECK(gio_cqe_is_error(&cqe) == 1);
	CHECK(gio_status_should_retry(sf) == 1);
	CHECK(gio_status_errno(sf) == -EIO);
	CHECK(std::string(gio_status_str(sf)) == "LBA Out of Range");
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_CRD) == 2u);
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_M) == 1u);
}

// NVM Express Base Specification 2.0c, "Status Field Definition", "Media and Data Integrity
// Errors" (SCT 2h; SC 81h: Unrecovered Read Error).
TEST_CASE("golden: CQE Unrecovered Read Error", "[wire][golden][cqe]")
{
	// DW3 = DNR | SCT 2 << 25 | SC 81h << 17 | P | CID 0 = 85030000h.
	static const uint8_t raw[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x03, 0x85,
	};
	const struct gio_cqe cqe = cqe_from(raw);
	CHECK(gio_cqe_phase(&cqe) == 1u);
	const uint16_t sf = gio_cqe_status(&cqe);
	CHECK(sf == 0x4281);
	CHECK(gio_status_sct(sf) == 2u);
	CHECK(gio_status_sc(sf) == 0x81u);
	CHECK(gio_status_dnr(sf) == 1u);
	CHECK(gio_status_should_retry(sf) == 0);
	CHECK(std::string(gio_status_str(sf)) == "Unrecovered Read Error");
	CHECK(GIO_GET((uint32_t)cqe.status, CQE_STATUS_SCT) == 2u);
}

// NVM Express Base Specification 2.0c, "Status Field Definition": "Command Specific Status"
// (SCT 1h), "Path Related Status" (SCT 3h), SCT 7h vendor specific, SCT 4h-6h reserved.
TEST_CASE("golden: CQE status strings by status code type", "[wire][golden][cqe]")
{
	// Each row's raw DW3 is built from the spec bit positions below.
	struct Sf {
		uint32_t sct, sc, dnr;
		const char *name;
	};
	static const Sf sfs[] = {
		{1, 0x01, 1, "Invalid Queue Identifier"},
		{1, 0x02, 1, "Invalid Queue Size"},
		{1, 0x08, 1, "Invalid Interrupt Vector"},
		{1, 0x00, 1, "Completion Queue Invalid"},
		{1, 0x0C, 1, "Invalid Queue Deletion"},
		{1, 0x0D, 1, "Feature Identifier Not Saveable"},
		{1, 0x80, 1, "Conflicting Attributes"},
		{3, 0x71, 0, "Command Aborted By Host"},
		{3, 0x03, 0, "Asymmetric Access Transition"},
		{3, 0x00, 0, "Internal Path Error"},
		{0, 0x21, 0, "Command Interrupted"},
		{0, 0x02, 1, "Invalid Field in Command"},
		{0, 0x0B, 1, "Invalid Namespace or Format"},
		{0, 0x13, 1, "PRP Offset Invalid"},
		{0, 0x22, 0, "Transient Transport Error"},
		{2, 0x82, 1, "End-to-end Guard Check Error"},
		{2, 0x85, 1, "Compare Failure"},
		{2, 0x87, 1, "Deallocated or Unwritten Logical Block"},
	};
	for (const Sf &s : sfs) {
		// DW3 with CID 0 and P 1, from the spec bit positions.
		const uint32_t dw3 = (1u << 16) | (s.sc << 17) | (s.sct << 25) | (s.dnr << 31);
		const uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					 (uint8_t)dw3, (uint8_t)(dw3 >> 8), (uint8_t)(dw3 >> 16), (uint8_t)(dw3 >> 24)};
		const struct gio_cqe cqe = cqe_from(raw);
		const uint16_t sf = gio_cqe_status(&cqe);
		CAPTURE(s.sct, s.sc, s.dnr, sf);
		CHECK(gio_cqe_phase(&cqe) == 1u);
		CHECK(gio_status_sct(sf) == s.sct);
		CHECK(gio_status_sc(sf) == s.sc);
		CHECK(gio_status_dnr(sf) == s.dnr);
		CHECK(gio_cqe_is_error(&cqe) == 1);
		CHECK(gio_status_should_retry(sf) == (s.dnr ? 0 : 1));
		CHECK(gio_status_errno(sf) == -EIO);
		REQUIRE(gio_status_str(sf) != nullptr);
		CHECK(std::string(gio_status_str(sf)) == s.name);
	}

	// Hand-written raw words for three of them, cross-checking the formula above.
	{
		const uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x03, 0x82};
		const struct gio_cqe cqe = cqe_from(raw); // SCT 1, SC 01h, DNR, P
		CHECK(std::string(gio_status_str(gio_cqe_status(&cqe))) == "Invalid Queue Identifier");
	}
	{
		const uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0xE3, 0x06};
		const struct gio_cqe cqe = cqe_from(raw); // SCT 3, SC 71h, P
		CHECK(std::string(gio_status_str(gio_cqe_status(&cqe))) == "Command Aborted By Host");
		CHECK(gio_status_should_retry(gio_cqe_status(&cqe)) == 1);
	}
	{
		const uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x42, 0x00};
		const struct gio_cqe cqe = cqe_from(raw); // SCT 0, SC 21h, P 0
		CHECK(gio_cqe_phase(&cqe) == 0u);
		CHECK(std::string(gio_status_str(gio_cqe_status(&cqe))) == "Command Interrupted");
	}
}

// NVM Express Base Specification 2.0c, "Status Field Definition": codes giouring does not list,
// vendor specific (SCT 7h) and reserved status code types still name something.
TEST_CASE("golden: CQE unknown status codes give a generic string", "[wire][golden][cqe]")
{
	static const uint16_t unknown[] = {
		GIO_SF(0, 0x7F), GIO_SF(0, 0xFF), GIO_SF(0, 0x17), GIO_SF(1, 0x7F), GIO_SF(1, 0xFF),
		GIO_SF(2, 0x00), GIO_SF(2, 0xFF), GIO_SF(3, 0x50), GIO_SF(3, 0xFF), GIO_SF(4, 0x00),
		GIO_SF(5, 0x01), GIO_SF(6, 0x02), GIO_SF(7, 0x00), GIO_SF(7, 0xC0),
	};
	for (uint16_t sf : unknown) {
		CAPTURE(sf);
		const char *s = gio_status_str(sf);
		REQUIRE(s != nullptr);
		CHECK(strlen(s) > 0);
		CHECK(gio_status_is_error(sf) == 1);
		CHECK(gio_status_errno(sf) == -EIO);
	}
	// The field is built by hand: SCT 7h SC C0h = 07C0h.
	CHECK(GIO_SF(7, 0xC0) == 0x07C0);
	CHECK(std::string(gio_status_str(0x07C0)) == "Vendor specific status");

	// Every possible status field, CRD/More/DNR included, names something.
	unsigned null_strings = 0;
	for (unsigned sf = 0; sf < 0x8000u; sf++)
		null_strings += gio_status_str((uint16_t)sf) == nullptr;
	CHECK(null_strings == 0);
}

// NVM Express Base Specification 2.0c, "Status Field Definition": CRD, More and DNR alone do
// not make a status an error; the name ignores them.
TEST_CASE("golden: CRD, More and DNR without SC/SCT", "[wire][golden][cqe]")
{
	// Status word bytes 14-15 = F000h: DNR, M, CRD 3, SC 0, SCT 0, P 0.
	static const uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0xF0};
	const struct gio_cqe cqe = cqe_from(raw);
	const uint16_t sf = gio_cqe_status(&cqe);
	CHECK(sf == 0x7800);
	CHECK(gio_status_crd(sf) == 3u);
	CHECK(gio_status_more(sf) == 1u);
	CHECK(gio_status_dnr(sf) == 1u);
	CHECK(gio_cqe_is_error(&cqe) == 0);
	CHECK(gio_status_should_retry(sf) == 0);
	CHECK(gio_status_errno(sf) == 0);
	CHECK(std::string(gio_status_str(sf)) == "Successful Completion");
	// Same name with and without the extra bits.
	CHECK(std::string(gio_status_str(GIO_SF(0, 0x80) | GIO_SF_DNR | GIO_SF_MORE)) == "LBA Out of Range");
	CHECK(GIO_SF_DNR == 0x4000u);
	CHECK(GIO_SF_MORE == 0x2000u);
}

// NVM Express Base Specification 2.0c, "Number of Queues" (Feature Identifier 07h): the
// completion's DW0 holds NSQA in bits 15:0 and NCQA in bits 31:16, both 0's based.
TEST_CASE("golden: Number of Queues granted", "[wire][golden][cqe]")
{
	struct Case {
		uint32_t dw0, nsq, ncq;
	};
	static const Case cases[] = {
		{0x00000000u, 1, 1},
		{0x0003000Fu, 16, 4},
		{0x003F0000u, 1, 64},
		{0xFFFEFFFEu, 65535, 65535},
		{0xFFFFFFFFu, 65536, 65536}, // FFFFh is not a valid answer, but decodes without overflow
	};
	for (const Case &c : cases) {
		uint32_t nsq = 0, ncq = 0;
		gio_num_queues_granted(c.dw0, &nsq, &ncq);
		CAPTURE(c.dw0);
		CHECK(nsq == c.nsq);
		CHECK(ncq == c.ncq);
	}
}

// ---------------------------------------------------------------------------------------------
// Encoder error paths: -EINVAL and the SQE left untouched
// ---------------------------------------------------------------------------------------------

// NVM Command Set Specification 1.0c, "Read command" / "Write command" / "Write Zeroes command"
// (NLB is 16 bits, 0's based: 1 to 65536 blocks); NVM Express Base Specification 2.0c,
// "Namespace Identifier" rules (NSID 0 is invalid for I/O; FFFFFFFFh is the broadcast value,
// not valid for Read/Write).
TEST_CASE("golden: Read/Write/Write Zeroes reject bad arguments untouched", "[wire][golden][errors]")
{
	check_einval_untouched("rw nblocks 0", [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_READ, 1, 0, 0); });
	check_einval_untouched("rw nblocks 65537",
			       [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_READ, 1, 0, 65537); });
	check_einval_untouched("rw nblocks 2^32-1",
			       [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_READ, 1, 0, 0xFFFFFFFFu); });
	check_einval_untouched("rw nsid 0", [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_WRITE, 0, 0, 1); });
	check_einval_untouched("rw nsid FFFFFFFFh",
			       [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_WRITE, 0xFFFFFFFFu, 0, 1); });
	check_einval_untouched("rw slba 2^64-1 + 2 blocks wraps",
			       [](struct gio_sqe *s) { return gio_prep_rw(s, GIO_NVM_OPC_READ, 1, UINT64_MAX, 2); });
	check_einval_untouched("rw slba near the top + 0x100 blocks wraps", [](struct gio_sqe *s) {
		return gio_prep_rw(s, GIO_NVM_OPC_READ, 1, UINT64_MAX - 0x10, 0x100);
	});
	check_einval_untouched("read nsid 0", [](struct gio_sqe *s) { return gio_prep_read(s, 0, kSlba, kBlocks); });
	check_einval_untouched("write nblocks 0", [](struct gio_sqe *s) { return gio_prep_write(s, kNsid, kSlba, 0); });
	check_einval_untouched("write zeroes nblocks 65537",
			       [](struct gio_sqe *s) { return gio_prep_write_zeroes(s, kNsid, kSlba, 65537, 1); });
	check_einval_untouched("write zeroes wraps",
			       [](struct gio_sqe *s) { return gio_prep_write_zeroes(s, kNsid, UINT64_MAX, 2, 0); });
	check_einval_untouched("flush nsid 0", [](struct gio_sqe *s) { return gio_prep_flush(s, 0); });

	// The boundaries themselves are accepted.
	struct gio_sqe sqe;
	CHECK(gio_prep_rw(&sqe, GIO_NVM_OPC_READ, 1, 0, 65536) == 0);
	CHECK(gio_prep_rw(&sqe, GIO_NVM_OPC_READ, 0xFFFFFFFEu, 0, 1) == 0);
	CHECK(gio_prep_rw(&sqe, GIO_NVM_OPC_READ, 1, UINT64_MAX - 1, 1) == 0);
}

// NVM Express Base Specification 2.0c, "Create I/O Completion Queue command" / "Create I/O
// Submission Queue command" (QID 0 is the admin queue; QSIZE is 0's based and at least 1, so 2
// to 65536 entries; PC queues start on a memory page boundary: 4 KiB at least).
TEST_CASE("golden: Create I/O CQ/SQ reject bad arguments untouched", "[wire][golden][errors]")
{
	const uint64_t a = 0x0000001234567000ull;
	check_einval_untouched("create cq qid 0", [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 0, 64, a, 0, 0); });
	check_einval_untouched("create cq entries 0", [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 1, 0, a, 0, 0); });
	check_einval_untouched("create cq entries 1", [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 1, 1, a, 0, 0); });
	check_einval_untouched("create cq entries 65537",
			       [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 1, 65537, a, 0, 0); });
	check_einval_untouched("create cq addr +0x800",
			       [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 1, 64, a + 0x800, 0, 1); });
	check_einval_untouched("create cq addr +4", [&](struct gio_sqe *s) { return gio_prep_create_cq(s, 1, 64, a + 4, 0, 1); });
	check_einval_untouched("create sq qid 0", [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 0, 64, 1, a); });
	check_einval_untouched("create sq cqid 0", [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 1, 64, 0, a); });
	check_einval_untouched("create sq entries 1", [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 1, 1, 1, a); });
	check_einval_untouched("create sq entries 65537",
			       [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 1, 65537, 1, a); });
	check_einval_untouched("create sq addr +0x200",
			       [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 1, 64, 1, a + 0x200); });
	check_einval_untouched("create sq addr +1", [&](struct gio_sqe *s) { return gio_prep_create_sq(s, 1, 64, 1, a + 1); });

	struct gio_sqe sqe;
	CHECK(gio_prep_create_cq(&sqe, 1, 2, a, 0, 0) == 0);
	CHECK(gio_prep_create_cq(&sqe, 0xFFFF, 65536, a, 0, 0) == 0);
	CHECK(gio_prep_create_sq(&sqe, 1, 2, 1, a) == 0);
	CHECK(gio_prep_create_sq(&sqe, 0xFFFF, 65536, 0xFFFF, a) == 0);
}

// NVM Express Base Specification 2.0c, "Delete I/O Submission Queue command", "Delete I/O
// Completion Queue command" (the admin queue, QID 0, cannot be deleted), "Number of Queues"
// (NSQR/NCQR are 0's based and FFFFh is invalid: 1 to 65535 queues), "Get Features command"
// (SEL 100b-111b reserved), "Identify command" (PRP entries are dword aligned), "Doorbell
// Buffer Config command" (buffers are memory-page aligned).
TEST_CASE("golden: admin encoders reject bad arguments untouched", "[wire][golden][errors]")
{
	check_einval_untouched("delete sq qid 0", [](struct gio_sqe *s) { return gio_prep_delete_sq(s, 0); });
	check_einval_untouched("delete cq qid 0", [](struct gio_sqe *s) { return gio_prep_delete_cq(s, 0); });
	check_einval_untouched("num queues nsq 0", [](struct gio_sqe *s) { return gio_prep_set_num_queues(s, 0, 1); });
	check_einval_untouched("num queues ncq 0", [](struct gio_sqe *s) { return gio_prep_set_num_queues(s, 1, 0); });
	check_einval_untouched("num queues nsq 65536",
			       [](struct gio_sqe *s) { return gio_prep_set_num_queues(s, 65536, 1); });
	check_einval_untouched("num queues ncq 65536",
			       [](struct gio_sqe *s) { return gio_prep_set_num_queues(s, 1, 65536); });
	check_einval_untouched("get features sel 4", [](struct gio_sqe *s) { return gio_prep_get_features(s, 7, 4); });
	check_einval_untouched("get features sel 7", [](struct gio_sqe *s) { return gio_prep_get_features(s, 7, 7); });
	check_einval_untouched("get features sel 2^32-1",
			       [](struct gio_sqe *s) { return gio_prep_get_features(s, 7, 0xFFFFFFFFu); });
	check_einval_untouched("identify prp1 +2",
			       [](struct gio_sqe *s) { return gio_prep_identify(s, GIO_CNS_CTRL, 0, 0x1002, 0); });
	check_einval_untouched("identify prp1 +1",
			       [](struct gio_sqe *s) { return gio_prep_identify(s, GIO_CNS_CTRL, 0, 0x1001, 0); });
	check_einval_untouched("identify prp2 +1",
			       [](struct gio_sqe *s) { return gio_prep_identify(s, GIO_CNS_NS, 1, 0x1F00, 0x2001); });
	check_einval_untouched("dbbuf shadow +0x800",
			       [](struct gio_sqe *s) { return gio_prep_dbbuf_config(s, 0x1800, 0x2000); });
	check_einval_untouched("dbbuf eventidx +4",
			       [](struct gio_sqe *s) { return gio_prep_dbbuf_config(s, 0x1000, 0x2004); });

	struct gio_sqe sqe;
	CHECK(gio_prep_set_num_queues(&sqe, 65535, 65535) == 0);
	CHECK(gio_prep_get_features(&sqe, 7, 3) == 0);
	CHECK(gio_prep_identify(&sqe, GIO_CNS_CTRL, 0, 0x1004, 0) == 0); // dword aligned is enough
	CHECK(gio_prep_dbbuf_config(&sqe, 0x1000, 0x2000) == 0);
}

// ---------------------------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------------------------

// NVM Express Base Specification 2.0c, "Controller Properties": "Offset 1000h + ((2y) *
// (4 << CAP.DSTRD)): SQyTDBL" and "Offset 1000h + ((2y + 1) * (4 << CAP.DSTRD)): CQyHDBL";
// CAP.DSTRD is bits 35:32.
TEST_CASE("golden: doorbell offsets", "[wire][golden][regs]")
{
	// Hand-written values for the admin queue and queue 1.
	const uint64_t cap0 = 0x004000200F0107FFull; // DSTRD 0
	const uint64_t cap2 = 0x004000220F0107FFull; // DSTRD 2 (bits 35:32 = 2)
	CHECK(gio_sq_doorbell_offset(cap0, 0) == 0x1000u);
	CHECK(gio_cq_doorbell_offset(cap0, 0) == 0x1004u);
	CHECK(gio_sq_doorbell_offset(cap0, 1) == 0x1008u);
	CHECK(gio_cq_doorbell_offset(cap0, 1) == 0x100Cu);
	CHECK(gio_sq_doorbell_offset(cap2, 0) == 0x1000u);
	CHECK(gio_cq_doorbell_offset(cap2, 0) == 0x1010u);
	CHECK(gio_sq_doorbell_offset(cap2, 1) == 0x1020u);
	CHECK(gio_cq_doorbell_offset(cap2, 1) == 0x1030u);

	// The formula, computed independently, for several strides and queue ids; the other CAP
	// fields are all ones so that only bits 35:32 may matter.
	static const uint32_t dstrds[] = {0, 1, 2, 7, 15};
	static const uint32_t qids[] = {0, 1, 2, 3, 7, 63, 64, 1023, 4095, 65534, 65535};
	for (uint32_t dstrd : dstrds) {
		const uint64_t cap = (~0ull & ~(0xFull << 32)) | ((uint64_t)dstrd << 32);
		const uint64_t stride = 4ull << dstrd;
		for (uint32_t y : qids) {
			CAPTURE(dstrd, y);
			CHECK(gio_sq_doorbell_offset(cap, (uint16_t)y) == 0x1000ull + (2ull * y) * stride);
			CHECK(gio_cq_doorbell_offset(cap, (uint16_t)y) == 0x1000ull + (2ull * y + 1) * stride);
		}
	}
	CHECK(GIO_REG_DBS == 0x1000u);
}

// NVM Express Base Specification 2.0c, "Controller Properties": CC.MPS / CAP.MPSMIN / MPSMAX:
// memory page size is 2 ^ (12 + value) bytes.
TEST_CASE("golden: memory page size", "[wire][golden][regs]")
{
	CHECK(gio_mps_bytes(0) == 4096u);
	CHECK(gio_mps_bytes(1) == 8192u);
	CHECK(gio_mps_bytes(4) == 65536u);
	CHECK(gio_mps_bytes(15) == 134217728u);
	for (uint32_t mps = 0; mps <= 15; mps++) {
		CAPTURE(mps);
		CHECK(gio_mps_bytes(mps) == (1ull << (12 + mps)));
	}
}

// NVM Express Base Specification 2.0c, "Controller Properties": CAP (MQES 15:0, CQR 16, AMS 18:17,
// TO 31:24, DSTRD 35:32, NSSRS 36, CSS 44:37, BPS 45, MPSMIN 51:48, MPSMAX 55:52, PMRS 56,
// CMBS 57), VS (MJR 31:16, MNR 15:8, TER 7:0), CC (EN 0, CSS 6:4, MPS 10:7, AMS 13:11,
// SHN 15:14, IOSQES 19:16, IOCQES 23:20, CRIME 24), CSTS (RDY 0, CFS 1, SHST 3:2, NSSRO 4, PP 5),
// AQA (ASQS 11:0, ACQS 27:16).
TEST_CASE("golden: GIO_GET/GIO_SET on real-looking register values", "[wire][golden][regs]")
{
	SECTION("CAP as QEMU reports it") {
		// MQES 2047, CQR 1, TO 0Fh, DSTRD 0, CSS NVM (bit 37), MPSMIN 0, MPSMAX 4.
		const uint64_t cap = 0x004000200F0107FFull;
		const uint64_t built = GIO_SET(CAP_MQES, 2047ull) | GIO_SET(CAP_CQR, 1ull) | GIO_SET(CAP_TO, 0x0Full) |
				       GIO_SET(CAP_DSTRD, 0ull) | GIO_SET(CAP_CSS, (uint64_t)GIO_CAP_CSS_NVM) |
				       GIO_SET(CAP_MPSMIN, 0ull) | GIO_SET(CAP_MPSMAX, 4ull);
		CHECK(built == cap);
		CHECK(GIO_GET(cap, CAP_MQES) == 2047u);
		CHECK(GIO_GET(cap, CAP_CQR) == 1u);
		CHECK(GIO_GET(cap, CAP_AMS) == 0u);
		CHECK(GIO_GET(cap, CAP_TO) == 0x0Fu);
		CHECK(GIO_GET(cap, CAP_DSTRD) == 0u);
		CHECK(GIO_GET(cap, CAP_NSSRS) == 0u);
		CHECK(GIO_GET(cap, CAP_CSS) == 0x01u);
		CHECK(GIO_GET(cap, CAP_BPS) == 0u);
		CHECK(GIO_GET(cap, CAP_MPSMIN) == 0u);
		CHECK(GIO_GET(cap, CAP_MPSMAX) == 4u);
		CHECK(GIO_GET(cap, CAP_PMRS) == 0u);
		CHECK(GIO_GET(cap, CAP_CMBS) == 0u);
		CHECK(gio_mps_bytes((uint32_t)GIO_GET(cap, CAP_MPSMAX)) == 65536u);
	}
	SECTION("CAP single-bit fields at their spec positions") {
		CHECK(GIO_SET(CAP_AMS, 3ull) == (3ull << 17));
		CHECK(GIO_SET(CAP_NSSRS, 1ull) == (1ull << 36));
		CHECK(GIO_SET(CAP_CSS, 0xFFull) == (0xFFull << 37));
		CHECK(GIO_SET(CAP_BPS, 1ull) == (1ull << 45));
		CHECK(GIO_SET(CAP_PMRS, 1ull) == (1ull << 56));
		CHECK(GIO_SET(CAP_CMBS, 1ull) == (1ull << 57));
		CHECK(GIO_SET(CAP_DSTRD, 0xFull) == 0x0000000F00000000ull);
		CHECK(GIO_SET(CAP_MPSMIN, 0xFull) == 0x000F000000000000ull);
		CHECK(GIO_SET(CAP_MPSMAX, 0xFull) == 0x00F0000000000000ull);
		CHECK(GIO_SET(CAP_CSS, (uint64_t)GIO_CAP_CSS_IOCS) == (1ull << 43));
		CHECK(GIO_SET(CAP_CSS, (uint64_t)GIO_CAP_CSS_ADMIN) == (1ull << 44));
		// Out-of-range values are masked, not spilled into the next field.
		CHECK(GIO_SET(CAP_DSTRD, 0x1Full) == 0x0000000F00000000ull);
	}
	SECTION("VS 1.4.0 and 2.0.0") {
		CHECK(GIO_GET(0x00010400u, VS_MJR) == 1u);
		CHECK(GIO_GET(0x00010400u, VS_MNR) == 4u);
		CHECK(GIO_GET(0x00010400u, VS_TER) == 0u);
		CHECK((GIO_SET(VS_MJR, 2u) | GIO_SET(VS_MNR, 0u) | GIO_SET(VS_TER, 0u)) == 0x00020000u);
		CHECK((GIO_SET(VS_MJR, 1u) | GIO_SET(VS_MNR, 3u) | GIO_SET(VS_TER, 1u)) == 0x00010301u);
	}
	SECTION("CC as a driver enables it") {
		// EN, CSS NVM, MPS 0 (4 KiB), AMS round robin, IOSQES 6, IOCQES 4 = 00460001h.
		const uint32_t cc = GIO_SET(CC_EN, 1u) | GIO_SET(CC_CSS, GIO_CC_CSS_NVM) | GIO_SET(CC_MPS, 0u) |
				    GIO_SET(CC_AMS, 0u) | GIO_SET(CC_IOSQES, GIO_SQE_SHIFT) | GIO_SET(CC_IOCQES, GIO_CQE_SHIFT);
		CHECK(cc == 0x00460001u);
		CHECK(GIO_GET(cc, CC_IOSQES) == 6u);
		CHECK(GIO_GET(cc, CC_IOCQES) == 4u);
		CHECK((cc | GIO_SET(CC_SHN, GIO_CC_SHN_NORMAL)) == 0x00464001u);
		CHECK((cc | GIO_SET(CC_SHN, GIO_CC_SHN_ABRUPT)) == 0x00468001u);
		CHECK(GIO_SET(CC_CSS, GIO_CC_CSS_ALL) == 0x60u);
		CHECK(GIO_SET(CC_CSS, GIO_CC_CSS_ADMIN) == 0x70u);
		CHECK(GIO_SET(CC_MPS, 4u) == 0x200u);
		CHECK(GIO_SET(CC_AMS, 7u) == 0x3800u);
		CHECK(GIO_SET(CC_CRIME, 1u) == 0x01000000u);
		CHECK(GIO_GET(0x00464001u, CC_SHN) == GIO_CC_SHN_NORMAL);
		CHECK(GIO_GET(0x00464001u, CC_EN) == 1u);
		CHECK(GIO_GET(0x00464001u, CC_CSS) == 0u);
	}
	SECTION("CSTS") {
		CHECK(GIO_GET(0x00000001u, CSTS_RDY) == 1u);
		CHECK(GIO_GET(0x00000002u, CSTS_CFS) == 1u);
		CHECK(GIO_GET(0x00000009u, CSTS_SHST) == GIO_CSTS_SHST_COMPLETE); // RDY | SHST 10b
		CHECK(GIO_GET(0x00000005u, CSTS_SHST) == GIO_CSTS_SHST_OCCURING);
		CHECK(GIO_GET(0x00000001u, CSTS_SHST) == GIO_CSTS_SHST_NORMAL);
		CHECK(GIO_GET(0x00000010u, CSTS_NSSRO) == 1u);
		CHECK(GIO_GET(0x00000020u, CSTS_PP) == 1u);
		CHECK(GIO_CSTS_SHST_COMPLETE == 2u);
		CHECK(GIO_CSTS_SHST_OCCURING == 1u);
	}
	SECTION("AQA") {
		CHECK((GIO_SET(AQA_ASQS, 31u) | GIO_SET(AQA_ACQS, 31u)) == 0x001F001Fu);
		CHECK((GIO_SET(AQA_ASQS, 4095u) | GIO_SET(AQA_ACQS, 4095u)) == 0x0FFF0FFFu);
		CHECK(GIO_GET(0x0FFF001Fu, AQA_ASQS) == 31u);
		CHECK(GIO_GET(0x0FFF001Fu, AQA_ACQS) == 4095u);
	}
	SECTION("register offsets") {
		CHECK(GIO_REG_CAP == 0x00u);
		CHECK(GIO_REG_VS == 0x08u);
		CHECK(GIO_REG_INTMS == 0x0Cu);
		CHECK(GIO_REG_INTMC == 0x10u);
		CHECK(GIO_REG_CC == 0x14u);
		CHECK(GIO_REG_CSTS == 0x1Cu);
		CHECK(GIO_REG_NSSR == 0x20u);
		CHECK(GIO_REG_AQA == 0x24u);
		CHECK(GIO_REG_ASQ == 0x28u);
		CHECK(GIO_REG_ACQ == 0x30u);
		CHECK(GIO_REG_CMBLOC == 0x38u);
		CHECK(GIO_REG_CMBSZ == 0x3Cu);
		CHECK(GIO_REG_BPINFO == 0x40u);
		CHECK(GIO_REG_BPRSEL == 0x44u);
		CHECK(GIO_REG_BPMBL == 0x48u);
		CHECK(GIO_REG_CMBMSC == 0x50u);
		CHECK(GIO_REG_CMBSTS == 0x58u);
		CHECK(GIO_REG_CRTO == 0x68u);
	}
}

// ---------------------------------------------------------------------------------------------
// Identify data
// ---------------------------------------------------------------------------------------------

namespace {

// An Identify Namespace page built from raw bytes: NLBAF byte 25, FLBAS byte 26, LBA Format i at
// bytes 128 + 4i (MS bytes 0-1, LBADS byte 2, RP byte 3 bits 1:0).
struct gio_id_ns ns_from(uint8_t nlbaf, uint8_t flbas, unsigned idx, uint8_t lbads)
{
	static uint8_t raw[4096];
	memset(raw, 0, sizeof(raw));
	raw[25] = nlbaf;
	raw[26] = flbas;
	raw[128 + 4 * idx + 0] = 0x08; // MS = 8 bytes of metadata (little-endian)
	raw[128 + 4 * idx + 1] = 0x00;
	raw[128 + 4 * idx + 2] = lbads;
	raw[128 + 4 * idx + 3] = 0x02; // RP 10b: good
	struct gio_id_ns ns;
	static_assert(sizeof(ns) == sizeof(raw), "Identify Namespace is 4096 bytes");
	memcpy(&ns, raw, sizeof(ns));
	return ns;
}

} // namespace

// NVM Command Set Specification 1.0c, "Identify Namespace Data Structure" (NLBAF byte 25, 0's
// based; FLBAS byte 26: bits 3:0 low index, bit 4 extended metadata, bits 6:5 high index bits,
// which count only when more than 16 formats exist (NLBAF >= 16); LBAF0 at bytes 131:128, LBA
// Format: MS bits 15:0, LBADS bits 23:16 (2^n bytes, values below 9 not supported), RP 25:24).
TEST_CASE("golden: Identify Namespace LBA format in use and block size", "[wire][golden][identify]")
{
	SECTION("single 512-byte format") {
		const struct gio_id_ns ns = ns_from(0, 0x00, 0, 9);
		CHECK(ns.nlbaf == 0);
		CHECK(ns.flbas == 0);
		CHECK(ns.lbaf[0].ms == 8);
		CHECK(ns.lbaf[0].lbads == 9);
		CHECK(ns.lbaf[0].rp == 2);
		CHECK(gio_id_ns_lbaf_index(&ns) == 0u);
		CHECK(gio_id_ns_lba_bytes(&ns) == 512u);
	}
	SECTION("format 2 of 4, 4 KiB, with extended metadata bit") {
		const struct gio_id_ns ns = ns_from(3, 0x12, 2, 12);
		CHECK(gio_id_ns_lbaf_index(&ns) == 2u);
		CHECK(gio_id_ns_lba_bytes(&ns) == 4096u);
		CHECK(GIO_GET((uint32_t)ns.flbas, FLBAS_EXT) == 1u);
		CHECK(GIO_GET((uint32_t)ns.flbas, FLBAS_LOW) == 2u);
	}
	SECTION("16 formats (NLBAF 15): high bits ignored") {
		const struct gio_id_ns ns = ns_from(15, 0x61, 1, 12); // high bits 11b would mean index 49
		CHECK(gio_id_ns_lbaf_index(&ns) == 1u);
		CHECK(gio_id_ns_lba_bytes(&ns) == 4096u);
		const struct gio_id_ns ns15 = ns_from(15, 0x0F, 15, 13);
		CHECK(gio_id_ns_lbaf_index(&ns15) == 15u);
		CHECK(gio_id_ns_lba_bytes(&ns15) == 8192u);
	}
	SECTION("17 formats (NLBAF 16): high bits count") {
		const struct gio_id_ns ns = ns_from(16, 0x20, 16, 13); // high 01b, low 0000b: index 16
		CHECK(gio_id_ns_lbaf_index(&ns) == 16u);
		CHECK(gio_id_ns_lba_bytes(&ns) == 8192u);
	}
	SECTION("64 formats (NLBAF 63)") {
		const struct gio_id_ns a = ns_from(63, 0x40, 32, 12); // high 10b: index 32
		CHECK(gio_id_ns_lbaf_index(&a) == 32u);
		CHECK(gio_id_ns_lba_bytes(&a) == 4096u);
		const struct gio_id_ns b = ns_from(63, 0x7F, 63, 9); // high 11b, ext, low 1111b: index 63
		CHECK(gio_id_ns_lbaf_index(&b) == 63u);
		CHECK(gio_id_ns_lba_bytes(&b) == 512u);
		const struct gio_id_ns c = ns_from(63, 0x35, 21, 16); // high 01b, ext, low 0101b: index 21
		CHECK(gio_id_ns_lbaf_index(&c) == 21u);
		CHECK(gio_id_ns_lba_bytes(&c) == 65536u);
		CHECK(GIO_GET((uint32_t)c.flbas, FLBAS_HIGH) == 1u);
	}
	SECTION("invalid LBADS gives 0") {
		static const uint8_t bad[] = {0, 1, 8, 32, 63, 255};
		for (uint8_t lbads : bad) {
			const struct gio_id_ns ns = ns_from(0, 0x00, 0, lbads);
			CAPTURE(lbads);
			CHECK(gio_id_ns_lba_bytes(&ns) == 0u);
		}
		const struct gio_id_ns max = ns_from(0, 0x00, 0, 31);
		CHECK(gio_id_ns_lba_bytes(&max) == 0x80000000u);
	}
	SECTION("LBA format dword fields") {
		const struct gio_id_ns ns = ns_from(0, 0x00, 0, 12);
		uint32_t dw;
		memcpy(&dw, &ns.lbaf[0], sizeof(dw));
		CHECK(dw == 0x020C0008u); // RP 2, LBADS 12, MS 8
		CHECK(GIO_GET(dw, LBAF_MS) == 8u);
		CHECK(GIO_GET(dw, LBAF_LBADS) == 12u);
		CHECK(GIO_GET(dw, LBAF_RP) == 2u);
	}
}

// NVM Express Base Specification 2.0c, "Identify Controller Data Structure" (VID bytes 1:0,
// SN 23:4, MN 63:24, FR 71:64, MDTS 77, CNTLID 79:78, VER 83:80, CRDT1 129:128, SQES 512,
// CQES 513, NN 519:516, ONCS 521:520, VWC 525, SGLS 539:536, SUBNQN 1023:768).
TEST_CASE("golden: Identify Controller fields from raw bytes", "[wire][golden][identify]")
{
	static uint8_t raw[4096];
	memset(raw, 0, sizeof(raw));
	raw[0] = 0x36; // VID 1B36h (Red Hat, as QEMU)
	raw[1] = 0x1B;
	memcpy(&raw[4], "SERIAL-0001         ", 20);
	memcpy(&raw[24], "QEMU NVMe Ctrl                          ", 40);
	memcpy(&raw[64], "8.2.0   ", 8);
	raw[77] = 7;    // MDTS: 2^7 minimum pages
	raw[78] = 0x34; // CNTLID 1234h
	raw[79] = 0x12;
	raw[80] = 0x00; // VER 1.4.0
	raw[81] = 0x04;
	raw[82] = 0x01;
	raw[83] = 0x00;
	raw[128] = 0x0A; // CRDT1 = 10
	raw[512] = 0x66; // SQES: required 6, maximum 6
	raw[513] = 0x44; // CQES
	raw[516] = 0x00; // NN = 256
	raw[517] = 0x01;
	raw[520] = 0x5F; // ONCS
	raw[525] = 0x07; // VWC
	raw[536] = 0x01; // SGLS: supported, byte aligned; bit bucket (bit 16); oversize (bit 18)
	raw[537] = 0x00;
	raw[538] = 0x05;
	raw[539] = 0x00;
	memcpy(&raw[768], "nqn.2019-08.org.qemu:serial", 28);
	struct gio_id_ctrl id;
	static_assert(sizeof(id) == sizeof(raw), "Identify Controller is 4096 bytes");
	memcpy(&id, raw, sizeof(id));

	CHECK(id.vid == 0x1B36);
	CHECK(std::string(id.sn, GIO_ID_SN_BYTES) == "SERIAL-0001         ");
	CHECK(std::string(id.mn, 4) == "QEMU");
	CHECK(std::string(id.fr, GIO_ID_FR_BYTES) == "8.2.0   ");
	CHECK(id.mdts == 7);
	CHECK(id.cntlid == 0x1234);
	CHECK(id.ver == 0x00010400u);
	CHECK(GIO_GET(id.ver, VS_MNR) == 4u);
	CHECK(id.crdt[0] == 10);
	CHECK(id.sqes == 0x66);
	CHECK(id.cqes == 0x44);
	CHECK(id.nn == 256u);
	CHECK(id.oncs == 0x005F);
	CHECK(id.vwc == 0x07);
	CHECK(id.sgls == 0x00050001u);
	CHECK(GIO_GET(id.sgls, SGLS_SUPPORT) == GIO_SGLS_SUPPORT_BYTE);
	CHECK((id.sgls & GIO_SGLS_BIT_BUCKET) != 0);
	CHECK((id.sgls & GIO_SGLS_OVERSIZE) != 0);
	CHECK((id.sgls & GIO_SGLS_MPTR_BYTE) == 0);
	CHECK((id.sgls & GIO_SGLS_KEYED) == 0);
	CHECK(std::string(id.subnqn) == "nqn.2019-08.org.qemu:serial");
}

// NVM Express Base Specification 2.0c, "Identify Controller Data Structure", SGLS (bytes
// 539:536): bits 1:0 SGL support (01b any alignment, 10b dword alignment), bit 2 Keyed SGL Data
// Block, bits 15:8 SGL Descriptor Threshold, bit 16 Bit Bucket, bit 17 byte aligned contiguous
// metadata, bit 18 SGL longer than the data, bit 19 MPTR holding an SGL descriptor, bit 20
// Address as offset, bit 21 Transport SGL Data Block.
TEST_CASE("golden: Identify Controller SGLS bits from raw bytes", "[wire][golden][identify][sgl]")
{
	struct Case {
		unsigned byte; // offset within the 4096-byte page
		uint8_t value;
		uint32_t ours;
		const char *name;
	};
	static const Case cases[] = {
		{536, 0x01, GIO_SGLS_SUPPORT_BYTE << GIO_SGLS_SUPPORT_SHIFT, "support 01b"},
		{536, 0x02, GIO_SGLS_SUPPORT_DWORD << GIO_SGLS_SUPPORT_SHIFT, "support 10b"},
		{536, 0x04, GIO_SGLS_KEYED, "keyed"},
		{537, 0xFF, (uint32_t)GIO_SGLS_SDT_MASK << GIO_SGLS_SDT_SHIFT, "SDT"},
		{538, 0x01, GIO_SGLS_BIT_BUCKET, "bit bucket"},
		{538, 0x02, GIO_SGLS_MPTR_BYTE, "byte aligned metadata"},
		{538, 0x04, GIO_SGLS_OVERSIZE, "oversize"},
		{538, 0x08, GIO_SGLS_MPTR_SGL, "MPTR SGL"},
		{538, 0x10, GIO_SGLS_OFFSET, "offset"},
		{538, 0x20, GIO_SGLS_TRANSPORT, "transport"},
	};
	for (const Case &c : cases) {
		static uint8_t raw[4096];
		memset(raw, 0, sizeof(raw));
		raw[c.byte] = c.value;
		struct gio_id_ctrl id;
		memcpy(&id, raw, sizeof(id));
		INFO(c.name);
		CHECK(id.sgls == c.ours);
	}
	CHECK(GIO_SGLS_SUPPORT_NONE == 0u);
	CHECK(GIO_SGLS_SUPPORT_MASK == 3u);
}

// NVM Express Base Specification 2.0c, "Status Field Definition": "Generic Command Status
// Values", "Command Specific Status Values", "Media and Data Integrity Errors Values", "Path
// Related Status Values"; NVM Command Set Specification 1.0c, the NVM command set values (SC 80h
// and up). Each row: SCT, SC and name as the specifications give them, and our constant.
TEST_CASE("golden: every listed status code, value and name", "[wire][golden][cqe][status]")
{
	struct Case {
		uint32_t sct, sc, ours;
		const char *name;
	};
	static const Case cases[] = {
		{0, 0x00, GIO_SC_SUCCESS, "Successful Completion"},
		{0, 0x01, GIO_SC_INVALID_OPCODE, "Invalid Command Opcode"},
		{0, 0x02, GIO_SC_INVALID_FIELD, "Invalid Field in Command"},
		{0, 0x03, GIO_SC_CID_CONFLICT, "Command ID Conflict"},
		{0, 0x04, GIO_SC_DATA_XFER_ERROR, "Data Transfer Error"},
		{0, 0x05, GIO_SC_POWER_LOSS, "Commands Aborted due to Power Loss Notification"},
		{0, 0x06, GIO_SC_INTERNAL, "Internal Error"},
		{0, 0x07, GIO_SC_ABORT_REQ, "Command Abort Requested"},
		{0, 0x08, GIO_SC_ABORT_SQ_DELETED, "Command Aborted due to SQ Deletion"},
		{0, 0x09, GIO_SC_FUSED_FAIL, "Command Aborted due to Failed Fused Command"},
		{0, 0x0A, GIO_SC_FUSED_MISSING, "Command Aborted due to Missing Fused Command"},
		{0, 0x0B, GIO_SC_INVALID_NS, "Invalid Namespace or Format"},
		{0, 0x0C, GIO_SC_CMD_SEQ_ERROR, "Command Sequence Error"},
		{0, 0x0D, GIO_SC_SGL_INVALID_SEGMENT, "Invalid SGL Segment Descriptor"},
		{0, 0x0E, GIO_SC_SGL_INVALID_COUNT, "Invalid Number of SGL Descriptors"},
		{0, 0x0F, GIO_SC_SGL_INVALID_DATA_LEN, "Data SGL Length Invalid"},
		{0, 0x10, GIO_SC_SGL_INVALID_MD_LEN, "Metadata SGL Length Invalid"},
		{0, 0x11, GIO_SC_SGL_INVALID_TYPE, "SGL Descriptor Type Invalid"},
		{0, 0x12, GIO_SC_CMB_INVALID_USE, "Invalid Use of Controller Memory Buffer"},
		{0, 0x13, GIO_SC_PRP_INVALID_OFFSET, "PRP Offset Invalid"},
		{0, 0x14, GIO_SC_AWU_EXCEEDED, "Atomic Write Unit Exceeded"},
		{0, 0x15, GIO_SC_OP_DENIED, "Operation Denied"},
		{0, 0x16, GIO_SC_SGL_INVALID_OFFSET, "SGL Offset Invalid"},
		{0, 0x18, GIO_SC_HOSTID_FORMAT, "Host Identifier Inconsistent Format"},
		{0, 0x19, GIO_SC_KAT_EXPIRED, "Keep Alive Timer Expired"},
		{0, 0x1A, GIO_SC_KAT_INVALID, "Keep Alive Timeout Invalid"},
		{0, 0x1B, GIO_SC_PREEMPT_ABORT, "Command Aborted due to Preempt and Abort"},
		{0, 0x1C, GIO_SC_SANITIZE_FAILED, "Sanitize Failed"},
		{0, 0x1D, GIO_SC_SANITIZE_IN_PROGRESS, "Sanitize In Progress"},
		{0, 0x1E, GIO_SC_SGL_INVALID_GRANULARITY, "SGL Data Block Granularity Invalid"},
		{0, 0x1F, GIO_SC_CMD_IN_CMBQ_NOT_SUPP, "Command Not Supported for Queue in CMB"},
		{0, 0x20, GIO_SC_NS_WRITE_PROTECTED, "Namespace is Write Protected"},
		{0, 0x21, GIO_SC_CMD_INTERRUPTED, "Command Interrupted"},
		{0, 0x22, GIO_SC_TRANSIENT_TRANSPORT, "Transient Transport Error"},
		{0, 0x80, GIO_SC_LBA_RANGE, "LBA Out of Range"},
		{0, 0x81, GIO_SC_CAP_EXCEEDED, "Capacity Exceeded"},
		{0, 0x82, GIO_SC_NS_NOT_READY, "Namespace Not Ready"},
		{0, 0x83, GIO_SC_RESERVATION_CONFLICT, "Reservation Conflict"},
		{0, 0x84, GIO_SC_FORMAT_IN_PROGRESS, "Format In Progress"},
		{1, 0x00, GIO_SC_CQ_INVALID, "Completion Queue Invalid"},
		{1, 0x01, GIO_SC_QID_INVALID, "Invalid Queue Identifier"},
		{1, 0x02, GIO_SC_QUEUE_SIZE, "Invalid Queue Size"},
		{1, 0x03, GIO_SC_ABORT_LIMIT, "Abort Command Limit Exceeded"},
		{1, 0x08, GIO_SC_INVALID_VECTOR, "Invalid Interrupt Vector"},
		{1, 0x0C, GIO_SC_INVALID_QUEUE_DELETE, "Invalid Queue Deletion"},
		{1, 0x0D, GIO_SC_FEAT_NOT_SAVEABLE, "Feature Identifier Not Saveable"},
		{1, 0x0E, GIO_SC_FEAT_NOT_CHANGEABLE, "Feature Not Changeable"},
		{1, 0x80, GIO_SC_CONFLICTING_ATTRS, "Conflicting Attributes"},
		{1, 0x81, GIO_SC_INVALID_PI, "Invalid Protection Information"},
		{1, 0x82, GIO_SC_READ_ONLY, "Attempted Write to Read Only Range"},
		{2, 0x80, GIO_SC_WRITE_FAULT, "Write Fault"},
		{2, 0x81, GIO_SC_UNRECOVERED_READ, "Unrecovered Read Error"},
		{2, 0x82, GIO_SC_GUARD_CHECK, "End-to-end Guard Check Error"},
		{2, 0x83, GIO_SC_APPTAG_CHECK, "End-to-end Application Tag Check Error"},
		{2, 0x84, GIO_SC_REFTAG_CHECK, "End-to-end Reference Tag Check Error"},
		{2, 0x85, GIO_SC_COMPARE_FAILED, "Compare Failure"},
		{2, 0x86, GIO_SC_ACCESS_DENIED, "Access Denied"},
		{2, 0x87, GIO_SC_UNWRITTEN_BLOCK, "Deallocated or Unwritten Logical Block"},
		{3, 0x00, GIO_SC_INTERNAL_PATH_ERROR, "Internal Path Error"},
		{3, 0x01, GIO_SC_ANA_PERSISTENT_LOSS, "Asymmetric Access Persistent Loss"},
		{3, 0x02, GIO_SC_ANA_INACCESSIBLE, "Asymmetric Access Inaccessible"},
		{3, 0x03, GIO_SC_ANA_TRANSITION, "Asymmetric Access Transition"},
		{3, 0x60, GIO_SC_CTRL_PATH_ERROR, "Controller Pathing Error"},
		{3, 0x70, GIO_SC_HOST_PATH_ERROR, "Host Pathing Error"},
		{3, 0x71, GIO_SC_HOST_ABORTED, "Command Aborted By Host"},
	};
	unsigned rows = 0;
	for (const Case &c : cases) {
		// Status field built from the spec positions: SC bits 7:0, SCT bits 10:8.
		const uint16_t sf = (uint16_t)((c.sct << 8) | c.sc);
		INFO(c.name);
		CAPTURE(c.sct, c.sc);
		CHECK(c.ours == c.sc);
		CHECK(GIO_SF(c.sct, c.sc) == sf);
		REQUIRE(gio_status_str(sf) != nullptr);
		CHECK(std::string(gio_status_str(sf)) == c.name);
		rows++;
	}
	CHECK(rows >= 65u);
	// Status code types.
	CHECK(GIO_SCT_GENERIC == 0u);
	CHECK(GIO_SCT_CMD_SPECIFIC == 1u);
	CHECK(GIO_SCT_MEDIA == 2u);
	CHECK(GIO_SCT_PATH == 3u);
	CHECK(GIO_SCT_VENDOR == 7u);
	// 17h is reserved in the generic set: some name, but none of the listed ones.
	const char *reserved = gio_status_str(0x0017);
	REQUIRE(reserved != nullptr);
	CHECK(strlen(reserved) > 0);
	for (const Case &c : cases) {
		INFO(c.name);
		CHECK(std::string(reserved) != c.name);
	}
}
