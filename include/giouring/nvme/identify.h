/**
 * @file giouring/nvme/identify.h
 * @brief Identify Controller, Identify Namespace and Secondary Controller List data structures
 * (4096 bytes each).
 *
 * NVM Express Base Specification 2.0c, "Identify Controller Data Structure"; NVM Command Set
 * Specification 1.0c, "Identify Namespace Data Structure". Every field giouring reads is named;
 * the rest is kept as reserved bytes so the structures match the wire byte for byte.
 */
#ifndef GIOURING_NVME_IDENTIFY_H
#define GIOURING_NVME_IDENTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"

/** @name SGLS: SGL Support field of Identify Controller (bytes 539:536)
 * @{ */
#define GIO_SGLS_SUPPORT_SHIFT 0 /**< SGL support for the NVM command set: see GIO_SGLS_SUPPORT_*. */
#define GIO_SGLS_SUPPORT_MASK 0x3u
#define GIO_SGLS_SUPPORT_NONE 0x0u  /**< SGLS support value: SGLs not supported. */
#define GIO_SGLS_SUPPORT_BYTE 0x1u  /**< SGLS support value: supported, no alignment or granularity rule. */
#define GIO_SGLS_SUPPORT_DWORD 0x2u /**< SGLS support value: supported, Data Blocks dword aligned and sized. */
#define GIO_SGLS_KEYED (1u << 2)        /**< Keyed SGL Data Block descriptors supported. */
#define GIO_SGLS_SDT_SHIFT 8            /**< SGL Descriptor Threshold (NVMe 2.0). */
#define GIO_SGLS_SDT_MASK 0xffu
#define GIO_SGLS_BIT_BUCKET (1u << 16)  /**< SGL Bit Bucket descriptors supported. */
#define GIO_SGLS_MPTR_BYTE (1u << 17)   /**< Byte aligned contiguous metadata buffer supported. */
#define GIO_SGLS_OVERSIZE (1u << 18)    /**< A data SGL longer than the transfer is accepted. */
#define GIO_SGLS_MPTR_SGL (1u << 19)    /**< MPTR may hold an SGL descriptor (PSDT 10b). */
#define GIO_SGLS_OFFSET (1u << 20)      /**< Address fields may be offsets (sub type 1h). */
#define GIO_SGLS_TRANSPORT (1u << 21)   /**< Transport SGL Data Block descriptors supported. */
/** @} */

/** @name LBA Format dword (Identify Namespace LBAF entries)
 * @{ */
#define GIO_LBAF_MS_SHIFT 0 /**< Metadata Size in bytes. */
#define GIO_LBAF_MS_MASK 0xffffu
#define GIO_LBAF_LBADS_SHIFT 16 /**< LBA Data Size, log2 bytes (9 for 512 B). */
#define GIO_LBAF_LBADS_MASK 0xffu
#define GIO_LBAF_RP_SHIFT 24 /**< Relative Performance. */
#define GIO_LBAF_RP_MASK 0x3u
/** @} */

/** @name FLBAS: Formatted LBA Size (Identify Namespace byte 26)
 * @{ */
#define GIO_FLBAS_LOW_SHIFT 0 /**< Bits 3:0 of the index of the LBA format in use. */
#define GIO_FLBAS_LOW_MASK 0xfu
#define GIO_FLBAS_EXT_SHIFT 4 /**< Metadata transferred at the end of each LBA. */
#define GIO_FLBAS_EXT_MASK 0x1u
#define GIO_FLBAS_HIGH_SHIFT 5 /**< Bits 5:4 of the format index, when more than 16 formats exist. */
#define GIO_FLBAS_HIGH_MASK 0x3u
/** @} */

/** @brief Length of the Serial Number field, space padded, not NUL terminated. */
#define GIO_ID_SN_BYTES 20u
/** @brief Length of the Model Number field, space padded, not NUL terminated. */
#define GIO_ID_MN_BYTES 40u
/** @brief Length of the Firmware Revision field, space padded, not NUL terminated. */
#define GIO_ID_FR_BYTES 8u

/** @brief Identify Controller data structure (CNS 01h). */
struct gio_id_ctrl {
	uint16_t vid;         /**< 1:0 PCI Vendor ID. */
	uint16_t ssvid;       /**< 3:2 PCI Subsystem Vendor ID. */
	char sn[20];          /**< 23:4 Serial Number (ASCII, space padded). */
	char mn[40];          /**< 63:24 Model Number (ASCII, space padded). */
	char fr[8];           /**< 71:64 Firmware Revision (ASCII, space padded). */
	uint8_t rab;          /**< 72 Recommended Arbitration Burst. */
	uint8_t ieee[3];      /**< 75:73 IEEE OUI Identifier. */
	uint8_t cmic;         /**< 76 Controller Multi-Path I/O and Namespace Sharing Capabilities. */
	uint8_t mdts;         /**< 77 Maximum Data Transfer Size: 2^MDTS units of CAP.MPSMIN; 0 = no limit. */
	uint16_t cntlid;      /**< 79:78 Controller ID. */
	uint32_t ver;         /**< 83:80 Version (same layout as the VS register). */
	uint32_t rtd3r;       /**< 87:84 RTD3 Resume Latency. */
	uint32_t rtd3e;       /**< 91:88 RTD3 Entry Latency. */
	uint32_t oaes;        /**< 95:92 Optional Asynchronous Events Supported. */
	uint32_t ctratt;      /**< 99:96 Controller Attributes. */
	uint16_t rrls;        /**< 101:100 Read Recovery Levels Supported. */
	uint8_t rsvd102[9];   /**< 110:102 Reserved. */
	uint8_t cntrltype;    /**< 111 Controller Type. */
	uint8_t fguid[16];    /**< 127:112 FRU Globally Unique Identifier. */
	uint16_t crdt[3];     /**< 133:128 Command Retry Delay Times 1-3, in 100 ms units. */
	uint8_t rsvd134[119]; /**< 252:134 Reserved. */
	uint8_t nvmsr;        /**< 253 NVM Subsystem Report (NVMe-MI). */
	uint8_t vwci;         /**< 254 VPD Write Cycle Information (NVMe-MI). */
	uint8_t mec;          /**< 255 Management Endpoint Capabilities (NVMe-MI). */
	uint16_t oacs;        /**< 257:256 Optional Admin Command Support. */
	uint8_t acl;          /**< 258 Abort Command Limit, 0's based. */
	uint8_t aerl;         /**< 259 Asynchronous Event Request Limit. */
	uint8_t frmw;         /**< 260 Firmware Updates. */
	uint8_t lpa;          /**< 261 Log Page Attributes. */
	uint8_t elpe;         /**< 262 Error Log Page Entries. */
	uint8_t npss;         /**< 263 Number of Power States Support. */
	uint8_t avscc;        /**< 264 Admin Vendor Specific Command Configuration. */
	uint8_t apsta;        /**< 265 Autonomous Power State Transition Attributes. */
	uint16_t wctemp;      /**< 267:266 Warning Composite Temperature Threshold. */
	uint16_t cctemp;      /**< 269:268 Critical Composite Temperature Threshold. */
	uint8_t rsvd270[242]; /**< 511:270 Management fields giouring does not read. */
	uint8_t sqes;         /**< 512 SQ Entry Size: bits 3:0 required, 7:4 maximum, log2 bytes. */
	uint8_t cqes;         /**< 513 CQ Entry Size: bits 3:0 required, 7:4 maximum, log2 bytes. */
	uint16_t maxcmd;      /**< 515:514 Maximum Outstanding Commands (fabrics). */
	uint32_t nn;          /**< 519:516 Number of Namespaces (largest valid NSID). */
	uint16_t oncs;        /**< 521:520 Optional NVM Command Support. */
	uint16_t fuses;       /**< 523:522 Fused Operation Support. */
	uint8_t fna;          /**< 524 Format NVM Attributes. */
	uint8_t vwc;          /**< 525 Volatile Write Cache. */
	uint16_t awun;        /**< 527:526 Atomic Write Unit Normal. */
	uint16_t awupf;       /**< 529:528 Atomic Write Unit Power Fail. */
	uint8_t icsvscc;      /**< 530 I/O Command Set Vendor Specific Command Configuration. */
	uint8_t nwpc;         /**< 531 Namespace Write Protection Capabilities. */
	uint16_t acwu;        /**< 533:532 Atomic Compare & Write Unit. */
	uint16_t ocfs;        /**< 535:534 Optional Copy Formats Supported. */
	uint32_t sgls;        /**< 539:536 SGL Support, see GIO_SGLS_*. */
	uint32_t mnan;        /**< 543:540 Maximum Number of Allowed Namespaces. */
	uint8_t maxdna[16];   /**< 559:544 Maximum Domain Namespace Attachments. */
	uint32_t maxcna;      /**< 563:560 Maximum I/O Controller Namespace Attachments. */
	uint8_t rsvd564[204]; /**< 767:564 Reserved. */
	char subnqn[256];     /**< 1023:768 NVM Subsystem NVMe Qualified Name (NUL terminated). */
	uint8_t rsvd1024[1024]; /**< 2047:1024 Reserved and fabrics fields. */
	uint8_t psd[1024];    /**< 3071:2048 Power State Descriptors 0-31. */
	uint8_t vs[1024];     /**< 4095:3072 Vendor Specific. */
};

/** @brief One LBA Format entry of Identify Namespace. */
struct gio_lbaf {
	uint16_t ms;   /**< Metadata Size in bytes per LBA. */
	uint8_t lbads; /**< LBA Data Size, log2 bytes; 0 means the format is not available. */
	uint8_t rp;    /**< Relative Performance in bits 1:0. */
};

/** @brief Identify Namespace data structure for the NVM command set (CNS 00h). */
struct gio_id_ns {
	uint64_t nsze;        /**< 7:0 Namespace Size, in logical blocks. */
	uint64_t ncap;        /**< 15:8 Namespace Capacity, in logical blocks. */
	uint64_t nuse;        /**< 23:16 Namespace Utilization, in logical blocks. */
	uint8_t nsfeat;       /**< 24 Namespace Features. */
	uint8_t nlbaf;        /**< 25 Number of LBA Formats, 0's based. */
	uint8_t flbas;        /**< 26 Formatted LBA Size, see GIO_FLBAS_*. */
	uint8_t mc;           /**< 27 Metadata Capabilities. */
	uint8_t dpc;          /**< 28 End-to-end Data Protection Capabilities. */
	uint8_t dps;          /**< 29 End-to-end Data Protection Type Settings. */
	uint8_t nmic;         /**< 30 Namespace Multi-path I/O and Namespace Sharing Capabilities. */
	uint8_t rescap;       /**< 31 Reservation Capabilities. */
	uint8_t fpi;          /**< 32 Format Progress Indicator. */
	uint8_t dlfeat;       /**< 33 Deallocate Logical Block Features. */
	uint16_t nawun;       /**< 35:34 Namespace Atomic Write Unit Normal. */
	uint16_t nawupf;      /**< 37:36 Namespace Atomic Write Unit Power Fail. */
	uint16_t nacwu;       /**< 39:38 Namespace Atomic Compare & Write Unit. */
	uint16_t nabsn;       /**< 41:40 Namespace Atomic Boundary Size Normal. */
	uint16_t nabo;        /**< 43:42 Namespace Atomic Boundary Offset. */
	uint16_t nabspf;      /**< 45:44 Namespace Atomic Boundary Size Power Fail. */
	uint16_t noiob;       /**< 47:46 Namespace Optimal I/O Boundary, in logical blocks. */
	uint8_t nvmcap[16];   /**< 63:48 NVM Capacity, in bytes. */
	uint16_t npwg;        /**< 65:64 Namespace Preferred Write Granularity, 0's based. */
	uint16_t npwa;        /**< 67:66 Namespace Preferred Write Alignment, 0's based. */
	uint16_t npdg;        /**< 69:68 Namespace Preferred Deallocate Granularity. */
	uint16_t npda;        /**< 71:70 Namespace Preferred Deallocate Alignment. */
	uint16_t nows;        /**< 73:72 Namespace Optimal Write Size, 0's based. */
	uint16_t mssrl;       /**< 75:74 Maximum Single Source Range Length (Copy). */
	uint32_t mcl;         /**< 79:76 Maximum Copy Length. */
	uint8_t msrc;         /**< 80 Maximum Source Range Count. */
	uint8_t rsvd81;       /**< 81 Reserved. */
	uint8_t nulbaf;       /**< 82 Number of Unique Capability LBA Formats. */
	uint8_t rsvd83[9];    /**< 91:83 Reserved. */
	uint32_t anagrpid;    /**< 95:92 ANA Group Identifier. */
	uint8_t rsvd96[3];    /**< 98:96 Reserved. */
	uint8_t nsattr;       /**< 99 Namespace Attributes. */
	uint16_t nvmsetid;    /**< 101:100 NVM Set Identifier. */
	uint16_t endgid;      /**< 103:102 Endurance Group Identifier. */
	uint8_t nguid[16];    /**< 119:104 Namespace Globally Unique Identifier. */
	uint8_t eui64[8];     /**< 127:120 IEEE Extended Unique Identifier. */
	struct gio_lbaf lbaf[64]; /**< 383:128 LBA Format 0-63 Support. */
	uint8_t vs[3712];     /**< 4095:384 Reserved (LBSTM in newer revisions) and vendor specific. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_id_ctrl) == 4096, "Identify Controller is 4096 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, vid) == 0, "VID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, ssvid) == 2, "SSVID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, sn) == 4, "SN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, mn) == 24, "MN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, fr) == 64, "FR");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rab) == 72, "RAB");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, ieee) == 73, "IEEE");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, cmic) == 76, "CMIC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, mdts) == 77, "MDTS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, cntlid) == 78, "CNTLID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, ver) == 80, "VER");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rtd3r) == 84, "RTD3R");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rtd3e) == 88, "RTD3E");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, oaes) == 92, "OAES");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, ctratt) == 96, "CTRATT");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rrls) == 100, "RRLS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rsvd102) == 102, "reserved 102");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, cntrltype) == 111, "CNTRLTYPE");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, fguid) == 112, "FGUID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, crdt) == 128, "CRDT1");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rsvd134) == 134, "reserved 134");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, nvmsr) == 253, "NVMSR");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, vwci) == 254, "VWCI");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, mec) == 255, "MEC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, oacs) == 256, "OACS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, acl) == 258, "ACL");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, aerl) == 259, "AERL");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, frmw) == 260, "FRMW");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, lpa) == 261, "LPA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, elpe) == 262, "ELPE");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, npss) == 263, "NPSS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, avscc) == 264, "AVSCC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, apsta) == 265, "APSTA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, wctemp) == 266, "WCTEMP");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, cctemp) == 268, "CCTEMP");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rsvd270) == 270, "management fields at 270");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, sqes) == 512, "SQES");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, cqes) == 513, "CQES");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, maxcmd) == 514, "MAXCMD");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, nn) == 516, "NN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, oncs) == 520, "ONCS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, fuses) == 522, "FUSES");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, fna) == 524, "FNA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, vwc) == 525, "VWC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, awun) == 526, "AWUN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, awupf) == 528, "AWUPF");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, icsvscc) == 530, "ICSVSCC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, nwpc) == 531, "NWPC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, acwu) == 532, "ACWU");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, ocfs) == 534, "OCFS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, sgls) == 536, "SGLS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, mnan) == 540, "MNAN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, maxdna) == 544, "MAXDNA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, maxcna) == 560, "MAXCNA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rsvd564) == 564, "reserved 564");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, subnqn) == 768, "SUBNQN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, rsvd1024) == 1024, "reserved 1024");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, psd) == 2048, "PSD0");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ctrl, vs) == 3072, "vendor specific");

GIO_STATIC_ASSERT(sizeof(struct gio_lbaf) == 4, "LBA format entry is 4 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_lbaf, ms) == 0, "LBAF MS");
GIO_STATIC_ASSERT(offsetof(struct gio_lbaf, lbads) == 2, "LBAF LBADS");
GIO_STATIC_ASSERT(offsetof(struct gio_lbaf, rp) == 3, "LBAF RP");

GIO_STATIC_ASSERT(sizeof(struct gio_id_ns) == 4096, "Identify Namespace is 4096 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nsze) == 0, "NSZE");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, ncap) == 8, "NCAP");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nuse) == 16, "NUSE");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nsfeat) == 24, "NSFEAT");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nlbaf) == 25, "NLBAF");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, flbas) == 26, "FLBAS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, mc) == 27, "MC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, dpc) == 28, "DPC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, dps) == 29, "DPS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nmic) == 30, "NMIC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, rescap) == 31, "RESCAP");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, fpi) == 32, "FPI");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, dlfeat) == 33, "DLFEAT");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nawun) == 34, "NAWUN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nawupf) == 36, "NAWUPF");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nacwu) == 38, "NACWU");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nabsn) == 40, "NABSN");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nabo) == 42, "NABO");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nabspf) == 44, "NABSPF");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, noiob) == 46, "NOIOB");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nvmcap) == 48, "NVMCAP");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, npwg) == 64, "NPWG");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, npwa) == 66, "NPWA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, npdg) == 68, "NPDG");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, npda) == 70, "NPDA");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nows) == 72, "NOWS");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, mssrl) == 74, "MSSRL");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, mcl) == 76, "MCL");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, msrc) == 80, "MSRC");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nulbaf) == 82, "NULBAF");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, anagrpid) == 92, "ANAGRPID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nsattr) == 99, "NSATTR");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nvmsetid) == 100, "NVMSETID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, endgid) == 102, "ENDGID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, nguid) == 104, "NGUID");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, eui64) == 120, "EUI64");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, lbaf) == 128, "LBAF0");
GIO_STATIC_ASSERT(offsetof(struct gio_id_ns, vs) == 384, "after LBAF63");

/**
 * @brief Index of the LBA format in use, from FLBAS (both the low and the high bits).
 * @param ns  Identify Namespace data.
 * @return the index into gio_id_ns::lbaf, 0-63.
 *
 * Pure; any thread, host or device. The high bits count only when NLBAF says more than 16
 * formats exist, as the specification requires.
 */
GIO_HD uint32_t gio_id_ns_lbaf_index(const struct gio_id_ns *ns)
{
	uint32_t idx = GIO_GET((uint32_t)ns->flbas, FLBAS_LOW);
	if (ns->nlbaf >= 16)
		idx |= GIO_GET((uint32_t)ns->flbas, FLBAS_HIGH) << 4;
	return idx;
}

/**
 * @brief Logical block size in bytes of the format in use.
 * @param ns  Identify Namespace data.
 * @return `1 << LBADS` of the current format, or 0 when that format is unusable (LBADS < 9, the
 *         smallest block the specification allows, or LBADS > 31).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_id_ns_lba_bytes(const struct gio_id_ns *ns)
{
	uint32_t lbads = ns->lbaf[gio_id_ns_lbaf_index(ns)].lbads;
	return (lbads < 9 || lbads > 31) ? 0u : (1u << lbads);
}

/** @brief Secondary Controller Entry of the Secondary Controller List (Identify CNS 15h): one
 * SR-IOV virtual function's controller as its primary controller sees it (NVM Express Base
 * Specification 2.0c, "Secondary Controller Entry"). */
struct gio_sec_ctrl {
	uint16_t scid;       /**< 1:0 Secondary Controller Identifier (the VF's controller ID). */
	uint16_t pcid;       /**< 3:2 Primary Controller Identifier. */
	uint8_t scs;         /**< 4 Secondary Controller State: bit 0 set when Online (GIO_SCS_ONLINE). */
	uint8_t rsvd5[3];    /**< 7:5 Reserved. */
	uint16_t vfn;        /**< 9:8 Virtual Function Number (1 for the first VF; 0: none). */
	uint16_t nvq;        /**< 11:10 Number of VQ Flexible Resources Assigned (queues, the admin queue counted). */
	uint16_t nvi;        /**< 13:12 Number of VI Flexible Resources Assigned (interrupts). */
	uint8_t rsvd14[18];  /**< 31:14 Reserved. */
};

/** @brief SCS bit 0: the secondary controller is Online. */
#define GIO_SCS_ONLINE 0x1u
/** @brief Entries one Secondary Controller List holds. */
#define GIO_SEC_CTRL_LIST_MAX 127u

/** @brief Secondary Controller List (Identify CNS 15h, 4096 bytes). */
struct gio_sec_ctrl_list {
	uint8_t num;         /**< 0 Number of Identifiers: entries that follow. */
	uint8_t rsvd1[31];   /**< 31:1 Reserved. */
	struct gio_sec_ctrl sc[GIO_SEC_CTRL_LIST_MAX]; /**< Entries, by ascending SCID. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_sec_ctrl) == 32, "Secondary Controller Entry is 32 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, scid) == 0, "SCID");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, pcid) == 2, "PCID");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, scs) == 4, "SCS");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, vfn) == 8, "VFN");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, nvq) == 10, "NVQ");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl, nvi) == 12, "NVI");
GIO_STATIC_ASSERT(sizeof(struct gio_sec_ctrl_list) == 4096, "Secondary Controller List is 4096 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_sec_ctrl_list, sc) == 32, "first Secondary Controller Entry");

#endif /* GIOURING_NVME_IDENTIFY_H */
