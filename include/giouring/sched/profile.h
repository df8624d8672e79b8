/**
 * @file giouring/sched/profile.h
 * @brief The slack profile: each layer's compute time (the window the scheduler fills with I/O)
 *        over a grid of input and prefix lengths, looked up by bilinear interpolation and
 *        recalibrated online from the layer times an engine measures.
 *
 * A prefill step computes `input` new tokens of a request whose first `prefix` tokens come from
 * the KV cache. While layer l computes, the scheduler (giouring/sched/sched.h) reads layer l + 1's
 * KV and, in what is left, writes deferred KV: how long layer l computes is the **slack** it has.
 * The profile holds that time per layer at each point of a grid: `ninput` input lengths by
 * `nprefix` prefix lengths, each axis strictly increasing, at most GIO_SCHED_AXIS_MAX points,
 * for up to GIO_SCHED_LAYERS_MAX layers. The profiler (giouring/sched/profiler.h) measures it
 * with the engine's own forward step, and writes and reads it as a file.
 *
 * Between grid points the time is interpolated bilinearly in (input, prefix). That is exact for
 * a layer whose cost is a + b x input + c x prefix + d x input x prefix, which covers the
 * projections and MLP (linear in input) and attention over the prefix (input x prefix); the
 * attention among the new tokens (quadratic in input) is approximated piecewise, so the input
 * axis wants its points closer where inputs are long. Outside the grid the nearest edge is
 * taken (clamped): never extrapolated, so never negative.
 *
 * **Online recalibration.** A table measured on one GPU, model build or engine version is off
 * on another; Tutti re-profiles. Here each measured layer time goes to
 * gio_sched_profile_observe(), which keeps, per layer, an exponentially weighted moving average
 * (weight gio_sched_profile::alpha) of measured / interpolated time, and lookups multiply by it.
 * Why one multiplicative factor per layer rather than a correction per grid cell:
 * - the changes that invalidate a table (a slower or faster GPU, clocks, another kernel library,
 *   another engine's overheads) scale a layer's time over the whole grid by roughly one factor;
 *   one factor learns it from observations at any point and corrects every point, also the ones
 *   the engine has not run yet, where a per-cell correction would stay wrong until each cell is
 *   observed (and would need its neighbours' corrections to interpolate between them);
 * - it is per layer, not global, because layers differ (the first and last carry embeddings and
 *   the LM head; hybrid models mix layer kinds);
 * - a change of shape (say attention faster but the MLP not) is not captured everywhere: the
 *   factor then tracks the points the engine runs at, the ones its next lookups are near.
 * Each observation's ratio is first clamped to within a factor GIO_SCHED_PROFILE_CLAMP of the
 * current estimate, so that one outlier (a step preempted, a first call compiling kernels) moves
 * the estimate by at most alpha x (CLAMP - 1) of itself, while a real shift of any size is still
 * followed (geometrically, a factor of up to 1 + alpha x (CLAMP - 1) per observation).
 *
 * Everything here is pure (GIO_HD) over one plain struct, so a table can be copied to the GPU and
 * looked up there. It is large (GIO_SCHED_PROFILE_BYTES, about 330 KB): allocate it, do not put
 * it on a stack. One thread updates a table (gio_sched_profile_observe()); lookups from any
 * thread that does not race with it.
 */
#ifndef GIOURING_SCHED_PROFILE_H
#define GIOURING_SCHED_PROFILE_H

#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/** @brief Most points of each axis (input lengths, prefix lengths). */
#define GIO_SCHED_AXIS_MAX 16u
/** @brief Most layers of a profile. */
#define GIO_SCHED_LAYERS_MAX 128u
/** @brief Cells of a profile's arrays: layers x input points x prefix points, at their maxima. */
#define GIO_SCHED_PROFILE_CELLS (GIO_SCHED_LAYERS_MAX * GIO_SCHED_AXIS_MAX * GIO_SCHED_AXIS_MAX)
/** @brief The weight of a new observation that gio_sched_profile_init() sets. */
#define GIO_SCHED_ALPHA_DEFAULT 0.125
/** @brief An observation's ratio is clamped to [factor / CLAMP, factor x CLAMP] before it is averaged. */
#define GIO_SCHED_PROFILE_CLAMP 2.0

/** @brief A slack profile: per layer and grid point, the layer's compute time; per layer, the
 *  online correction. Plain data (host and GPU). */
struct gio_sched_profile {
	uint32_t layers;  /**< Layers, 1 to GIO_SCHED_LAYERS_MAX. */
	uint32_t ninput;  /**< Points of the input axis, 1 to GIO_SCHED_AXIS_MAX. */
	uint32_t nprefix; /**< Points of the prefix axis, 1 to GIO_SCHED_AXIS_MAX. */
	uint32_t has_sm;  /**< 1 when sm[] holds SM budgets, 0 when the profile has none. */
	uint32_t input[GIO_SCHED_AXIS_MAX];  /**< Input lengths (tokens), strictly increasing; ninput used. */
	uint32_t prefix[GIO_SCHED_AXIS_MAX]; /**< Prefix lengths (tokens), strictly increasing; nprefix used. */
	double alpha; /**< Weight of a new observation, in (0, 1]. */
	double factor[GIO_SCHED_LAYERS_MAX];     /**< Per layer: the correction lookups multiply by (1 at start). */
	uint64_t observed[GIO_SCHED_LAYERS_MAX]; /**< Per layer: observations taken into factor. */
	uint64_t slack_ns[GIO_SCHED_PROFILE_CELLS]; /**< Compute time per cell (gio_sched_profile_cell()), ns,
						         as measured (the correction is kept apart). */
	uint16_t sm[GIO_SCHED_PROFILE_CELLS]; /**< SM budget of the I/O kernel per cell, where has_sm. */
};

/** @brief Bytes of struct gio_sched_profile. */
#define GIO_SCHED_PROFILE_BYTES 329880u

GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, input) == 16, "gio_sched_profile::input");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, prefix) == 80, "gio_sched_profile::prefix");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, alpha) == 144, "gio_sched_profile::alpha");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, factor) == 152, "gio_sched_profile::factor");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, observed) == 1176, "gio_sched_profile::observed");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, slack_ns) == 2200, "gio_sched_profile::slack_ns");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_profile, sm) == 264344, "gio_sched_profile::sm");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_profile) == GIO_SCHED_PROFILE_BYTES, "gio_sched_profile size");

/** @name Reasons a profile call refuses its input (gio_sched_profile_reason_name())
 * @{ */
#define GIO_SCHED_PROFILE_R_OK 0u          /**< Nothing wrong. */
#define GIO_SCHED_PROFILE_R_NULL 1u        /**< A NULL argument. */
#define GIO_SCHED_PROFILE_R_LAYERS 2u      /**< layers is 0 or above GIO_SCHED_LAYERS_MAX. */
#define GIO_SCHED_PROFILE_R_AXIS_COUNT 3u  /**< An axis has 0 points or more than GIO_SCHED_AXIS_MAX. */
#define GIO_SCHED_PROFILE_R_AXIS_ORDER 4u  /**< An axis is not strictly increasing. */
#define GIO_SCHED_PROFILE_R_ALPHA 5u       /**< alpha is not in (0, 1]. */
#define GIO_SCHED_PROFILE_R_FACTOR 6u      /**< A layer's factor is not a finite positive number. */
#define GIO_SCHED_PROFILE_R_HAS_SM 7u      /**< has_sm is neither 0 nor 1. */
#define GIO_SCHED_PROFILE_R_LAYER 8u       /**< The layer asked for is not below layers. */
#define GIO_SCHED_PROFILE_R_MEASURED 9u    /**< An observation of 0 ns. */
#define GIO_SCHED_PROFILE_R_BASE_ZERO 10u  /**< The table's time there is 0: no factor scales it. */
/** @} */

/** @brief What gio_sched_profile_lookup() gives for one layer at one (input, prefix). */
struct gio_sched_estimate {
	uint64_t slack_ns; /**< The layer's compute time, corrected: base_ns x factor, rounded. */
	uint64_t base_ns;  /**< The table's time, interpolated, rounded (no correction). */
	double factor;     /**< The layer's correction. */
	uint32_t sm;       /**< The SM budget, interpolated and rounded down; 0 where the profile has none. */
	uint32_t reserved; /**< 0. */
};

/**
 * @brief Name of a GIO_SCHED_PROFILE_R_* reason, for messages.
 * @param reason  the reason.
 * @return a short phrase; "unknown reason" for a value not listed.
 *
 * Pure; any thread, host or device.
 */
GIO_HD const char *gio_sched_profile_reason_name(uint32_t reason)
{
	switch (reason) {
	case GIO_SCHED_PROFILE_R_OK: return "no problem";
	case GIO_SCHED_PROFILE_R_NULL: return "a NULL argument";
	case GIO_SCHED_PROFILE_R_LAYERS: return "layers is 0 or above GIO_SCHED_LAYERS_MAX";
	case GIO_SCHED_PROFILE_R_AXIS_COUNT: return "an axis has no points or more than GIO_SCHED_AXIS_MAX";
	case GIO_SCHED_PROFILE_R_AXIS_ORDER: return "an axis is not strictly increasing";
	case GIO_SCHED_PROFILE_R_ALPHA: return "alpha is not in (0, 1]";
	case GIO_SCHED_PROFILE_R_FACTOR: return "a layer's factor is not finite and positive";
	case GIO_SCHED_PROFILE_R_HAS_SM: return "has_sm is neither 0 nor 1";
	case GIO_SCHED_PROFILE_R_LAYER: return "layer beyond the profile's layers";
	case GIO_SCHED_PROFILE_R_MEASURED: return "a measured time of 0 ns";
	case GIO_SCHED_PROFILE_R_BASE_ZERO: return "the table's time there is 0 ns";
	default: return "unknown reason";
	}
}

GIO_HD int gio__sched_profile_fail(uint32_t *reason, uint32_t r)
{
	if (reason)
		*reason = r;
	return -EINVAL;
}

/* 1 when x is finite and positive (NaN fails both comparisons). */
GIO_HD int gio__sched_positive(double x)
{
	return x > 0.0 && x <= DBL_MAX;
}

/* The reason an axis of n points is refused, or GIO_SCHED_PROFILE_R_OK. */
GIO_HD uint32_t gio__sched_axis_check(const uint32_t *axis, uint32_t n)
{
	uint32_t i;
	if (n == 0 || n > GIO_SCHED_AXIS_MAX)
		return GIO_SCHED_PROFILE_R_AXIS_COUNT;
	for (i = 1; i < n; i++)
		if (axis[i] <= axis[i - 1])
			return GIO_SCHED_PROFILE_R_AXIS_ORDER;
	return GIO_SCHED_PROFILE_R_OK;
}

/**
 * @brief Checks a profile: its sizes, axes, alpha, factors and has_sm.
 * @param t       the profile.
 * @param reason  receives GIO_SCHED_PROFILE_R_OK or why it is refused (may be NULL).
 * @return 0, or `-EINVAL` (@p t NULL, or a field out of range: *reason says which).
 *
 * Pure; any thread, host or device. The cells' values are not checked: any time and budget is valid.
 */
GIO_HD int gio_sched_profile_check(const struct gio_sched_profile *t, uint32_t *reason)
{
	uint32_t l, r;
	if (!t)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_NULL);
	if (t->layers == 0 || t->layers > GIO_SCHED_LAYERS_MAX)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_LAYERS);
	if ((r = gio__sched_axis_check(t->input, t->ninput)) != GIO_SCHED_PROFILE_R_OK ||
	    (r = gio__sched_axis_check(t->prefix, t->nprefix)) != GIO_SCHED_PROFILE_R_OK)
		return gio__sched_profile_fail(reason, r);
	if (!(t->alpha > 0.0 && t->alpha <= 1.0))
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_ALPHA);
	for (l = 0; l < t->layers; l++)
		if (!gio__sched_positive(t->factor[l]))
			return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_FACTOR);
	if (t->has_sm > 1)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_HAS_SM);
	if (reason)
		*reason = GIO_SCHED_PROFILE_R_OK;
	return 0;
}

/**
 * @brief Sets up an empty profile: its layers and axes, every time and budget 0, every factor 1,
 *        no observations, alpha GIO_SCHED_ALPHA_DEFAULT, no SM budgets.
 * @param t        the profile to write.
 * @param layers   layers, 1 to GIO_SCHED_LAYERS_MAX.
 * @param input    @p ninput input lengths, strictly increasing.
 * @param ninput   1 to GIO_SCHED_AXIS_MAX.
 * @param prefix   @p nprefix prefix lengths, strictly increasing.
 * @param nprefix  1 to GIO_SCHED_AXIS_MAX.
 * @param reason   receives GIO_SCHED_PROFILE_R_OK or why the arguments are refused (may be NULL).
 * @return 0, or `-EINVAL` (a NULL pointer, a count out of range, an axis not strictly increasing:
 *         *reason says which); @p t is then not written.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_sched_profile_init(struct gio_sched_profile *t, uint32_t layers, const uint32_t *input, uint32_t ninput,
				  const uint32_t *prefix, uint32_t nprefix, uint32_t *reason)
{
	uint32_t i, r;
	if (!t || !input || !prefix)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_NULL);
	if (layers == 0 || layers > GIO_SCHED_LAYERS_MAX)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_LAYERS);
	if ((r = gio__sched_axis_check(input, ninput)) != GIO_SCHED_PROFILE_R_OK ||
	    (r = gio__sched_axis_check(prefix, nprefix)) != GIO_SCHED_PROFILE_R_OK)
		return gio__sched_profile_fail(reason, r);
	t->layers = layers;
	t->ninput = ninput;
	t->nprefix = nprefix;
	t->has_sm = 0;
	for (i = 0; i < GIO_SCHED_AXIS_MAX; i++) {
		t->input[i] = i < ninput ? input[i] : 0;
		t->prefix[i] = i < nprefix ? prefix[i] : 0;
	}
	t->alpha = GIO_SCHED_ALPHA_DEFAULT;
	for (i = 0; i < GIO_SCHED_LAYERS_MAX; i++) {
		t->factor[i] = 1.0;
		t->observed[i] = 0;
	}
	for (i = 0; i < GIO_SCHED_PROFILE_CELLS; i++) {
		t->slack_ns[i] = 0;
		t->sm[i] = 0;
	}
	if (reason)
		*reason = GIO_SCHED_PROFILE_R_OK;
	return 0;
}

/**
 * @brief The index in gio_sched_profile::slack_ns and gio_sched_profile::sm of one cell.
 * @param layer  the layer, below GIO_SCHED_LAYERS_MAX.
 * @param i      the input point, below GIO_SCHED_AXIS_MAX.
 * @param p      the prefix point, below GIO_SCHED_AXIS_MAX.
 * @return `(layer x GIO_SCHED_AXIS_MAX + i) x GIO_SCHED_AXIS_MAX + p`: a layer's cells lie together,
 *         so a lookup reads four neighbours.
 *
 * Pure; any thread, host or device. Arguments are not checked.
 */
GIO_HD uint32_t gio_sched_profile_cell(uint32_t layer, uint32_t i, uint32_t p)
{
	return (layer * GIO_SCHED_AXIS_MAX + i) * GIO_SCHED_AXIS_MAX + p;
}

/* Where x falls on an axis: the points i0 <= i1 around it and the weight w of i1 (0 at or
 * before the first point, 1 at or after the last: clamped). */
GIO_HD void gio__sched_axis_find(const uint32_t *axis, uint32_t n, uint32_t x, uint32_t *i0, uint32_t *i1, double *w)
{
	uint32_t i = 0;
	if (n == 1 || x <= axis[0]) {
		*i0 = *i1 = 0;
		*w = 0.0;
		return;
	}
	if (x >= axis[n - 1]) {
		*i0 = *i1 = n - 1;
		*w = 0.0;
		return;
	}
	while (axis[i + 1] <= x) /* axis[0] < x < axis[n - 1]: stops below n - 1 */
		i++;
	*i0 = i;
	*i1 = i + 1;
	*w = (double)(x - axis[i]) / (double)(axis[i + 1] - axis[i]);
}

/* The bilinear interpolation of a layer's cells at (input, prefix), from slack_ns (sm 0) or sm (1). */
GIO_HD double gio__sched_interp(const struct gio_sched_profile *t, uint32_t layer, uint32_t input, uint32_t prefix,
				int sm)
{
	uint32_t a0, a1, b0, b1;
	double wa, wb, v00, v01, v10, v11;
	gio__sched_axis_find(t->input, t->ninput, input, &a0, &a1, &wa);
	gio__sched_axis_find(t->prefix, t->nprefix, prefix, &b0, &b1, &wb);
	if (sm) {
		v00 = t->sm[gio_sched_profile_cell(layer, a0, b0)];
		v01 = t->sm[gio_sched_profile_cell(layer, a0, b1)];
		v10 = t->sm[gio_sched_profile_cell(layer, a1, b0)];
		v11 = t->sm[gio_sched_profile_cell(layer, a1, b1)];
	} else {
		v00 = (double)t->slack_ns[gio_sched_profile_cell(layer, a0, b0)];
		v01 = (double)t->slack_ns[gio_sched_profile_cell(layer, a0, b1)];
		v10 = (double)t->slack_ns[gio_sched_profile_cell(layer, a1, b0)];
		v11 = (double)t->slack_ns[gio_sched_profile_cell(layer, a1, b1)];
	}
	/* A convex combination of non-negative values: never below the smallest corner. */
	return (1.0 - wa) * ((1.0 - wb) * v00 + wb * v01) + wa * ((1.0 - wb) * v10 + wb * v11);
}

/* x >= 0 rounded to the nearest integer, saturated at UINT64_MAX (NaN gives 0). */
GIO_HD uint64_t gio__sched_round(double x)
{
	if (!(x > 0.0))
		return 0;
	if (x >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)(x + 0.5);
}

/**
 * @brief One layer's compute time (and SM budget) at (input, prefix): bilinear between grid
 *        points, the nearest edge outside the grid, times the layer's correction.
 * @param t       the profile (valid: gio_sched_profile_check()).
 * @param input   input length (tokens).
 * @param prefix  prefix length (tokens).
 * @param layer   the layer.
 * @param out     receives the estimate.
 * @return 0, or `-EINVAL` (NULL arguments, @p layer not below t->layers); @p out is then not written.
 *
 * Pure; any thread, host or device; O(GIO_SCHED_AXIS_MAX).
 */
GIO_HD int gio_sched_profile_lookup(const struct gio_sched_profile *t, uint32_t input, uint32_t prefix, uint32_t layer,
				    struct gio_sched_estimate *out)
{
	double base;
	if (!t || !out || layer >= t->layers || layer >= GIO_SCHED_LAYERS_MAX)
		return -EINVAL;
	base = gio__sched_interp(t, layer, input, prefix, 0);
	out->base_ns = gio__sched_round(base);
	out->factor = t->factor[layer];
	out->slack_ns = gio__sched_round(base * t->factor[layer]);
	out->sm = t->has_sm ? (uint32_t)gio__sched_interp(t, layer, input, prefix, 1) : 0u; /* truncation: down */
	out->reserved = 0;
	return 0;
}

/* One step of a correction factor towards an observed ratio q (measured / modelled): q clamped
 * to within GIO_SCHED_PROFILE_CLAMP of f, then f moved by alpha towards it. Shared by the slack
 * profile's per-layer factors and the bandwidth rates (giouring/sched/rate.h). */
GIO_HD double gio__sched_factor_step(double f, double q, double alpha)
{
	if (q > f * GIO_SCHED_PROFILE_CLAMP)
		q = f * GIO_SCHED_PROFILE_CLAMP;
	else if (q < f / GIO_SCHED_PROFILE_CLAMP)
		q = f / GIO_SCHED_PROFILE_CLAMP;
	return f + alpha * (q - f);
}

/**
 * @brief Takes one measured layer time into the layer's correction: factor moves by alpha
 *        towards measured / interpolated (that ratio clamped to within GIO_SCHED_PROFILE_CLAMP of
 *        factor first), so that lookups follow the times the engine sees.
 * @param t            the profile (valid).
 * @param input        input length of the step measured.
 * @param prefix       prefix length of the step measured.
 * @param layer        the layer measured.
 * @param measured_ns  its compute time.
 * @param reason       receives GIO_SCHED_PROFILE_R_OK or why the observation is refused (may be NULL).
 * @return 0, or `-EINVAL` (NULL @p t, @p layer out of range, @p measured_ns 0: *reason says which),
 *         `-ERANGE` (the table's time at that point is 0 ns, so no factor can scale it:
 *         GIO_SCHED_PROFILE_R_BASE_ZERO). Nothing changes on failure.
 *
 * Pure; the one thread that updates @p t. After n observations of a constant ratio q (within
 * the clamp), factor - q is (1 - alpha)^n of what it was: with alpha 0.125, 0.5% after 40.
 */
GIO_HD int gio_sched_profile_observe(struct gio_sched_profile *t, uint32_t input, uint32_t prefix, uint32_t layer,
				     uint64_t measured_ns, uint32_t *reason)
{
	double base;
	if (!t)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_NULL);
	if (layer >= t->layers || layer >= GIO_SCHED_LAYERS_MAX)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_LAYER);
	if (measured_ns == 0)
		return gio__sched_profile_fail(reason, GIO_SCHED_PROFILE_R_MEASURED);
	base = gio__sched_interp(t, layer, input, prefix, 0);
	if (!(base > 0.0)) {
		if (reason)
			*reason = GIO_SCHED_PROFILE_R_BASE_ZERO;
		return -ERANGE;
	}
	t->factor[layer] = gio__sched_factor_step(t->factor[layer], (double)measured_ns / base, t->alpha);
	t->observed[layer]++;
	if (reason)
		*reason = GIO_SCHED_PROFILE_R_OK;
	return 0;
}

/**
 * @brief Folds each layer's correction into its cells: every time becomes time x factor
 *        (rounded), every factor 1; observation counts are kept. Lookups give the same times
 *        (within rounding) before and after. What gio_sched_profile_save() writes.
 * @param t  the profile (valid).
 * @return 0, or `-EINVAL` (NULL).
 *
 * Pure; the one thread that updates @p t.
 */
GIO_HD int gio_sched_profile_fold(struct gio_sched_profile *t)
{
	uint32_t l, i, p, c;
	if (!t || t->layers > GIO_SCHED_LAYERS_MAX || t->ninput > GIO_SCHED_AXIS_MAX || t->nprefix > GIO_SCHED_AXIS_MAX)
		return -EINVAL;
	for (l = 0; l < t->layers; l++) {
		if (t->factor[l] == 1.0)
			continue; /* exact: a double holds only 53 bits of a time */
		for (i = 0; i < t->ninput; i++)
			for (p = 0; p < t->nprefix; p++) {
				c = gio_sched_profile_cell(l, i, p);
				t->slack_ns[c] = gio__sched_round((double)t->slack_ns[c] * t->factor[l]);
			}
		t->factor[l] = 1.0;
	}
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_SCHED_PROFILE_H */
