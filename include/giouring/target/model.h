/**
 * @file giouring/target/model.h
 * @brief The SSD timing model's rate rule, one for the CPU executor (src/exec) and the GPU one
 * (gpu_exec.cuh): what a batch's transfer costs on the modelled device.
 *
 * Each executor keeps the device's one timeline its own way (host atomics, GPU atomics); what a
 * batch costs on it is the same rule, here, so that the two targets model the same drive.
 */
#ifndef GIOURING_TARGET_MODEL_H
#define GIOURING_TARGET_MODEL_H

#include <stdint.h>

#include "../config.h"

/**
 * @brief The modelled transfer time, in ns, of a batch of @p rd bytes read and @p wr bytes
 * written, fetched at @p now.
 *
 * The rate is the mixed one (both directions' bandwidth together) where the batch holds both, or
 * reads while a booked write has not ended (@p writes_end after @p now), or writes while a read has
 * not (@p reads_end): a drive's reads and writes share its mixed bandwidth then. Otherwise the
 * read or write rate alone. Rates in GB/s, which is bytes per ns; a rate of 0 leaves its batches
 * untimed (0 ns), as does an empty batch.
 */
GIO_HD uint64_t gio__ssd_model_xfer_ns(double read_gbps, double write_gbps, double mixed_gbps, uint64_t rd,
				       uint64_t wr, uint64_t reads_end, uint64_t writes_end, uint64_t now)
{
	const int mixed = (rd && wr) || (rd && writes_end > now) || (wr && reads_end > now);
	const double gbps = mixed ? mixed_gbps : wr ? write_gbps : read_gbps;
	return rd + wr && gbps > 0 ? (uint64_t)((double)(rd + wr) / gbps) : 0;
}

#endif /* GIOURING_TARGET_MODEL_H */
