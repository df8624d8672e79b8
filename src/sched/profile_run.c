/* The slack profiler's driver (giouring/sched/profiler.h): the caller's forward step over a grid
 * of input and prefix lengths, the median of its repetitions per cell, and what it all cost. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/ring/clock.h>
#include <giouring/sched/profiler.h>

#include "../internal.h"

#define UNWRITTEN UINT64_MAX /* what a layer's time is before the step writes it */

/* The median of n values (sorted in place): the middle one, or the mean of the middle two
 * rounded down. */
static uint64_t median(uint64_t *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) /* n <= GIO_SCHED_REPS_MAX: insertion sort */
		for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			const uint64_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	if (n % 2)
		return v[n / 2];
	const uint64_t a = v[n / 2 - 1], b = v[n / 2];
	return a / 2 + b / 2 + (a & b & 1);
}

struct run {
	const struct gio_sched_profile_params *p;
	gio_sched_step_fn step;
	void *arg;
	struct gio_sched_profile_stats st;
	uint64_t t0;
	uint64_t spread_sum; /* ppm over the cells so far */
	uint64_t *layer_ns;  /* one step's times */
};

/* One step at (input, prefix); `what` names the repetition for messages. */
static int step_once(struct run *r, uint32_t input, uint32_t prefix, const char *what, uint32_t rep)
{
	const uint32_t layers = r->p->layers;
	for (uint32_t l = 0; l < layers; l++)
		r->layer_ns[l] = UNWRITTEN;
	const uint64_t s = gio_host_now_ns();
	const int rc = r->step(r->arg, input, prefix, r->layer_ns, layers);
	const uint64_t e = gio_host_now_ns();
	r->st.step_calls++;
	r->st.step_ns += e - s;
	r->st.wall_ns = e - r->t0;
	if (rc < 0)
		return gio__fail(rc, "gio_sched_profile_run: the step at input %u, prefix %u (%s %u) failed: %s", input,
				 prefix, what, rep, strerror(-rc));
	if (rc > 0)
		return gio__fail(-EINVAL, "gio_sched_profile_run: the step at input %u, prefix %u (%s %u) returned %d, "
				          "neither 0 nor -errno", input, prefix, what, rep, rc);
	for (uint32_t l = 0; l < layers; l++)
		if (r->layer_ns[l] == UNWRITTEN)
			return gio__fail(-EINVAL, "gio_sched_profile_run: the step at input %u, prefix %u (%s %u) left "
					          "layer %u's time unwritten", input, prefix, what, rep, l);
	if (r->p->max_wall_ns && r->st.wall_ns > r->p->max_wall_ns)
		return gio__fail(-ETIME, "gio_sched_profile_run: over its time limit (%llu ns) at input %u, prefix %u "
				         "(%s %u), after %u of %u points", (unsigned long long)r->p->max_wall_ns, input,
				 prefix, what, rep, r->st.points, r->p->ninput * r->p->nprefix);
	return 0;
}

/* One grid point: its warm-up and measured steps, each layer's median into the table. */
static int point(struct run *r, struct gio_sched_profile *t, uint32_t i, uint32_t k, uint64_t *samples)
{
	const uint32_t layers = r->p->layers, reps = r->st.reps, input = t->input[i], prefix = t->prefix[k];
	int rc;
	for (uint32_t w = 0; w < r->p->warmup; w++)
		if ((rc = step_once(r, input, prefix, "warm-up", w)))
			return rc;
	for (uint32_t rep = 0; rep < reps; rep++) {
		if ((rc = step_once(r, input, prefix, "repetition", rep)))
			return rc;
		for (uint32_t l = 0; l < layers; l++)
			samples[(uint64_t)l * reps + rep] = r->layer_ns[l];
	}
	for (uint32_t l = 0; l < layers; l++) {
		uint64_t *v = samples + (uint64_t)l * reps;
		const uint64_t med = median(v, reps), spread = v[reps - 1] - v[0];
		uint32_t ppm;
		if (med == 0)
			ppm = spread ? UINT32_MAX : 0;
		else
			ppm = spread / med >= 4000 ? UINT32_MAX : (uint32_t)((double)spread * 1e6 / (double)med);
		t->slack_ns[gio_sched_profile_cell(l, i, k)] = med;
		r->spread_sum += ppm;
		if (ppm > r->st.spread_max_ppm || (r->st.points == 0 && l == 0)) {
			r->st.spread_max_ppm = ppm;
			r->st.spread_input = input;
			r->st.spread_prefix = prefix;
			r->st.spread_layer = l;
		}
	}
	r->st.points++;
	r->st.spread_mean_ppm = (uint32_t)(r->spread_sum / ((uint64_t)r->st.points * layers));
	return 0;
}

int gio_sched_profile_run(const struct gio_sched_profile_params *params, gio_sched_step_fn step, void *arg,
			  struct gio_sched_profile *table_out, struct gio_sched_profile_stats *stats_out)
{
	struct run r;
	struct gio_sched_profile *t = NULL;
	uint64_t *samples = NULL;
	uint32_t reason;
	int rc = 0;

	gio__clear_error();
	memset(&r, 0, sizeof(r));
	r.t0 = gio_host_now_ns();
	if (stats_out)
		memset(stats_out, 0, sizeof(*stats_out));
	if (!params || !step || !table_out)
		return gio__fail(-EINVAL, "gio_sched_profile_run: NULL %s",
				 !params ? "params" : !step ? "step function" : "table_out");
	if (params->reps > GIO_SCHED_REPS_MAX)
		return gio__fail(-EINVAL, "gio_sched_profile_run: %u repetitions per point, above %u", params->reps,
				 GIO_SCHED_REPS_MAX);
	r.p = params;
	r.step = step;
	r.arg = arg;
	r.st.reps = params->reps ? params->reps : 5;
	if (!(t = malloc(sizeof(*t)))) /* the caller's table is written only on success */
		return gio__fail(-ENOMEM, "gio_sched_profile_run: out of memory");
	if (gio_sched_profile_init(t, params->layers, params->input, params->ninput, params->prefix, params->nprefix,
				   &reason)) {
		rc = gio__fail(-EINVAL, "gio_sched_profile_run: the grid is refused: %s (layers %u, %u input and %u "
				        "prefix lengths)", gio_sched_profile_reason_name(reason), params->layers,
			       params->ninput, params->nprefix);
		goto out;
	}
	if (!(samples = malloc(sizeof(*samples) * params->layers * (r.st.reps + 1u)))) {
		rc = gio__fail(-ENOMEM, "gio_sched_profile_run: out of memory");
		goto out;
	}
	r.layer_ns = samples + (uint64_t)params->layers * r.st.reps;
	for (uint32_t i = 0; i < t->ninput && !rc; i++)
		for (uint32_t k = 0; k < t->nprefix && !rc; k++)
			rc = point(&r, t, i, k, samples);
	r.st.wall_ns = gio_host_now_ns() - r.t0;
	if (!rc)
		memcpy(table_out, t, sizeof(*t));
out:
	if (stats_out)
		*stats_out = r.st;
	free(samples);
	free(t);
	return rc;
}
