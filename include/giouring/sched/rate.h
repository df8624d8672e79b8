/**
 * @file giouring/sched/rate.h
 * @brief Online calibration of the scheduler's bandwidths: the devices' read and write rates
 *        corrected from the transfer times an engine measures, as the slack profile's layer
 *        times are (giouring/sched/profile.h).
 *
 * The scheduler (giouring/sched/sched.h) plans from a cost model: each device's read and write
 * bandwidth as configured. Where the real transfers are slower than that, it sees slack that is
 * not there and fills it with deferred writes; on one stream each such write then delays the
 * next slot's reads, and the delays add up layer after layer. Seen on the H200 with modelled
 * drives (bench/ttft_llama.py, 32K tokens, 98% of them restored): 56 GB/s configured gave a
 * modelled read of 2.35 ms a layer against 2.42-2.45 ms of compute, the scheduler put 26 of the 32
 * save layers into the prefill, and the compute stream's wait per layer grew from 0.12 to
 * 0.43 ms over the prefill (bench/results/2026-12-04-ttft-grid-h200.json).
 *
 * A `struct gio_sched_rate` keeps, per direction, a factor: an exponentially weighted moving
 * average (weight `alpha`) of measured / modelled transfer time, each observation's ratio first
 * clamped to within GIO_SCHED_PROFILE_CLAMP of the current factor (one outlier moves it by at most
 * alpha x (CLAMP - 1) of itself; a real shift is followed geometrically). gio_sched_rate_apply()
 * gives the configuration the scheduler then plans with: every device's bandwidth divided by the
 * factor. Why one factor per direction rather than per device: a layer's transfer is one launch
 * over every device, so only the slowest device's time is seen; what makes all of them slower
 * than configured (PCIe, the I/O kernel's own rate, a drive's real speed) scales them alike.
 *
 * The modelled time of an observation is gio_sched_rate_model_ns() of the *configured*
 * bandwidths, not the calibrated ones, so that the factor converges to the real ratio.
 *
 * Everything here is pure (GIO_HD) over plain data; one thread updates a rate.
 */
#ifndef GIOURING_SCHED_RATE_H
#define GIOURING_SCHED_RATE_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "profile.h"
#include "sched.h"

GIO_EXTERN_C_BEGIN

/** @name Directions (gio_sched_rate_observe()'s @p write)
 * @{ */
#define GIO_SCHED_READ 0u  /**< Reads: load layers. */
#define GIO_SCHED_WRITE 1u /**< Writes: save layers. */
/** @} */

/** @brief The bandwidth corrections: measured / modelled time per direction. */
struct gio_sched_rate {
	double factor[2];      /**< [GIO_SCHED_READ], [GIO_SCHED_WRITE]: 1 until observed; above 1: slower than configured. */
	uint64_t observed[2];  /**< Observations taken, per direction. */
	double alpha;          /**< Weight of a new observation, in (0, 1]. */
};

/**
 * @brief Starts a rate with no correction.
 * @param r      the rate.
 * @param alpha  the weight of each observation, in (0, 1] (GIO_SCHED_ALPHA_DEFAULT: the profile's).
 * @return 0, or `-EINVAL` (NULL @p r, @p alpha outside (0, 1]).
 *
 * Pure; any thread.
 */
GIO_HD int gio_sched_rate_init(struct gio_sched_rate *r, double alpha)
{
	if (!r || !(alpha > 0.0 && alpha <= 1.0))
		return -EINVAL;
	r->factor[0] = r->factor[1] = 1.0;
	r->observed[0] = r->observed[1] = 0;
	r->alpha = alpha;
	return 0;
}

/**
 * @brief The modelled time of one layer's transfer over every device at once: the slowest
 *        device's, at the bandwidths of @p cfg.
 * @param cfg    the configuration (the bandwidths as given, for observations).
 * @param bytes  bytes per device, cfg->ndevs of them.
 * @param write  GIO_SCHED_READ or GIO_SCHED_WRITE.
 * @return the ns (0 for no bytes; UINT64_MAX where it does not fit), or 0 for NULL arguments.
 *
 * Pure; any thread.
 */
GIO_HD uint64_t gio_sched_rate_model_ns(const struct gio_sched_config *cfg, const uint64_t *bytes, uint32_t write)
{
	uint64_t t = 0;
	uint32_t d;
	if (!cfg || !bytes)
		return 0;
	for (d = 0; d < cfg->ndevs && d < GIO_SCHED_DEVS_MAX; d++)
		t = gio__sched_max(t, gio_sched_xfer_ns(bytes[d], write ? cfg->dev[d].write_gbps : cfg->dev[d].read_gbps));
	return t;
}

/**
 * @brief Takes one measured transfer into its direction's factor.
 * @param r            the rate.
 * @param write        GIO_SCHED_READ or GIO_SCHED_WRITE.
 * @param modelled_ns  its modelled time (gio_sched_rate_model_ns() of the configured bandwidths).
 * @param measured_ns  how long it took.
 * @return 0, or `-EINVAL` (NULL @p r, an unknown direction, a zero time). Nothing changes on failure.
 *
 * Pure; the one thread that updates @p r. After n observations of a constant ratio q (within
 * the clamp), factor - q is (1 - alpha)^n of what it was.
 */
GIO_HD int gio_sched_rate_observe(struct gio_sched_rate *r, uint32_t write, uint64_t modelled_ns, uint64_t measured_ns)
{
	if (!r || write > GIO_SCHED_WRITE || modelled_ns == 0 || measured_ns == 0)
		return -EINVAL;
	r->factor[write] = gio__sched_factor_step(r->factor[write], (double)measured_ns / (double)modelled_ns, r->alpha);
	r->observed[write]++;
	return 0;
}

/**
 * @brief The configuration to plan with: @p base with every device's read bandwidth divided by
 *        the read factor, its write bandwidth by the write factor, and its mixed bandwidth by
 *        the larger of the two.
 * @param r     the rate.
 * @param base  the configuration as given (valid: gio_sched_config_check()).
 * @param out   receives the calibrated one (may be @p base itself).
 * @return 0, or `-EINVAL` (NULL arguments).
 *
 * Pure; any thread that does not race with the rate's updates.
 */
GIO_HD int gio_sched_rate_apply(const struct gio_sched_rate *r, const struct gio_sched_config *base,
				struct gio_sched_config *out)
{
	double fm;
	uint32_t d;
	if (!r || !base || !out)
		return -EINVAL;
	fm = r->factor[0] > r->factor[1] ? r->factor[0] : r->factor[1];
	if (out != base)
		*out = *base;
	for (d = 0; d < out->ndevs && d < GIO_SCHED_DEVS_MAX; d++) {
		out->dev[d].read_gbps /= r->factor[0];
		out->dev[d].write_gbps /= r->factor[1];
		out->dev[d].mixed_gbps /= fm;
	}
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_SCHED_RATE_H */
