/**
 * @file giouring/nvme/prp.h
 * @brief NVMe Physical Region Page entries and lists.
 *
 * NVM Express Base Specification 2.0c, "Physical Region Page Entry and List",
 * A PRP entry is a 64-bit memory address: bits 1:0 are zero (dword
 * alignment); the offset bits within a memory page (CC.MPS) are non-zero only in the first entry
 * of a command (PRP1). A PRP list is an array of entries from a qword-aligned start (PRP2 may
 * point into a page) to the end of that memory page at most; when more entries are needed than
 * fit, the last entry of the page points to the next list page, which is page aligned.
 */
#ifndef GIOURING_NVME_PRP_H
#define GIOURING_NVME_PRP_H

#include <stdint.h>

#include "../config.h"

/** @brief Size in bytes of one PRP entry. */
#define GIO_PRP_ENTRY_BYTES 8u
/** @brief Bits of a PRP entry that must be zero: entries are dword aligned. */
#define GIO_PRP_RSVD_MASK 0x3ull

/** @brief One PRP entry: a little-endian 64-bit memory address. */
typedef uint64_t gio_prp_entry;

GIO_STATIC_ASSERT(sizeof(gio_prp_entry) == GIO_PRP_ENTRY_BYTES, "PRP entry is 8 bytes");

#endif /* GIOURING_NVME_PRP_H */
