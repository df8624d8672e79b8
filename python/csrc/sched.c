/* The slack-aware scheduler (giouring/sched/issue.h) for Python: a backlog of deferred save
 * layers and, per slot, gio_sched_issue() over the package's plans. The slot's reads come from
 * the load plan's open batch (gio_kv_plan_layer_bytes()), the writes from the backlog; the GPU
 * engine's layers launch on the caller's stream with the slot's SM budget (gpy_gpu_sched_launch()
 * in gpu.cu), the CPU engine's run on the plan's thread (no launcher: the issuer waits for the
 * load layer, with the scheduler's deadline, before it queues a save). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/sched/issue.h>
#include <giouring/sched/rate.h>

#include "gpy.h"

/* Launches timed at once, at most (a slot's load and saves; read back at later slots). */
#define GPY_SCHED_TIMERS 64u

struct gpy_sched {
	struct gpy_store *s;
	uint32_t engine; /* GIO_KV_ENGINE_*: every plan it is given takes this one */
	struct gio_sched_config cfg;
	struct gio_sched_backlog bl;
	struct gio_sched_item *ring;
	struct gio_sched_write *writes; /* cap entries: a slot may issue the whole backlog */
	struct gpy_plan *saves[GPY_SCHED_SAVES]; /* save plans with items queued, by index */
	struct gio_kv_plan *save_plans[GPY_SCHED_SAVES];
	uint32_t queued[GPY_SCHED_SAVES]; /* items of each index in the backlog, as the plan counts them */
	struct gio_sched_decision prev; /* the last slot's, carried into the next (gio_sched_carry()) */
	uint64_t timeout_ns;
	/* Bandwidth calibration (giouring/sched/rate.h): `cfg` is `base` as corrected by `rate`. */
	struct gio_sched_config base; /* the bandwidths as given */
	struct gio_sched_rate rate;
	int calibrate;
	void *timers; /* GPU engine: stream timers around each launch */
	/* One ring of observations for both engines: GPU, a timer (a pair of events around a
	 * launch); CPU, the plan layer whose run the plan's thread timed (gio_kv_plan_layer_time()). */
	uint64_t modelled_ns[GPY_SCHED_TIMERS]; /* per entry: its transfer's modelled time at `base` */
	uint8_t write[GPY_SCHED_TIMERS];       /* per entry: GIO_SCHED_READ or GIO_SCHED_WRITE */
	uint64_t bytes[GPY_SCHED_TIMERS];      /* per entry: its transfer's bytes, every device's */
	struct gpy_sched_obs {                 /* per entry, the plan layer it times */
		struct gpy_plan *p;            /* CPU engine: the plan whose thread timed it */
		uint64_t uid, batch;           /* CPU engine: the plan's, and its batch's, when issued */
		uint32_t layer;
	} obs[GPY_SCHED_TIMERS];
	uint32_t t_head, t_tail;               /* entries read back, and started (free-running) */
	void *stream;                          /* the slot's stream, for the timed launcher */
	const uint64_t *read_bytes;            /* the slot's reads per device (its load's bytes) */
	int timer_rc;                          /* a timer's first failure in a slot */
	/* The transfers read back, for gpy_sched_transfers(): GPY_SCHED_XFER numbers each. */
	uint64_t log[GPY_SCHED_LOG][GPY_SCHED_XFER];
	uint64_t log_head, log_tail;           /* taken, and read back (free-running) */
	uint64_t log_lost;                     /* dropped unread, the oldest, to make room */
};

int gpy_sched_create(struct gpy_store *s, const double *gbps, uint32_t ndevs, uint32_t sm_min, uint32_t sm_max,
		     uint32_t max_items, uint64_t max_bytes, uint64_t soft_bytes, uint64_t timeout_ns, double calibrate,
		     uint32_t engine, struct gpy_sched **out)
{
	struct gpy_sched *x;
	uint32_t d, why = 0, idx = 0;
	int rc;
	gpy_clear_error();
	if (!s || !gbps || !out)
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	*out = NULL;
	if (ndevs != s->ndevs)
		return gpy_fail(-EINVAL, "scheduler: bandwidths for %u devices, the store has %u", ndevs, s->ndevs);
	if (max_items == 0 || max_bytes == 0)
		return gpy_fail(-EINVAL, "scheduler: the backlog needs room for at least one item and one byte");
	if (!(calibrate >= 0.0 && calibrate <= 1.0))
		return gpy_fail(-EINVAL, "scheduler: calibrate %g: a weight in (0, 1], or 0 for none", calibrate);
	if (engine > GIO_KV_ENGINE_GPU || (engine == GIO_KV_ENGINE_CPU && s->gpu_targets))
		return gpy_fail(-EINVAL, "scheduler: engine %u for %s targets", engine,
				s->gpu_targets ? "GPU-executed" : "these");
	if (engine == GIO_KV_ENGINE_GPU && s->device < 0)
		return gpy_fail(-EINVAL, "scheduler: the GPU engine moves data to and from GPU memory; this store's pool is "
					 "in host memory");
	if (!(x = calloc(1, sizeof(*x))))
		return gpy_fail(-ENOMEM, "no memory");
	x->s = s;
	x->engine = engine;
	x->timeout_ns = timeout_ns;
	x->cfg.ndevs = ndevs;
	x->cfg.gate = GIO_SCHED_GATE_LAYER; /* the package's layers go to one stream */
	x->cfg.sm_min = sm_min;
	x->cfg.sm_max = sm_max;
	for (d = 0; d < ndevs; d++) { /* in the store's device order */
		x->cfg.dev[d].read_gbps = gbps[3 * d];
		x->cfg.dev[d].write_gbps = gbps[3 * d + 1];
		x->cfg.dev[d].mixed_gbps = gbps[3 * d + 2];
	}
	if (gio_sched_config_check(&x->cfg, &why, &idx)) {
		free(x);
		return gpy_fail(-EINVAL, "scheduler: %s (device %u)", gio_sched_reason_name(why), idx);
	}
	x->base = x->cfg;
	(void)gio_sched_rate_init(&x->rate, calibrate > 0.0 ? calibrate : GIO_SCHED_ALPHA_DEFAULT);
	x->calibrate = calibrate > 0.0;
	if (x->calibrate && engine == GIO_KV_ENGINE_GPU && (rc = gpy_gpu_timers_create(s->device, GPY_SCHED_TIMERS, &x->timers)) != 0) {
		free(x);
		return rc; /* its message names the CUDA error */
	}
	x->ring = calloc(max_items, sizeof(*x->ring));
	x->writes = calloc(max_items, sizeof(*x->writes));
	if (!x->ring || !x->writes || gio_sched_backlog_init(&x->bl, x->ring, max_items, max_bytes, soft_bytes)) {
		gpy_gpu_timers_destroy(x->timers);
		free(x->ring);
		free(x->writes);
		free(x);
		return gpy_fail(-ENOMEM, "no memory");
	}
	*out = x;
	return 0;
}

/* Timer entry i read back at @p ns: into the rates, and into the log (where the oldest unread
 * entry makes room for it and is counted as lost). */
static void observed(struct gpy_sched *x, uint32_t i, uint64_t ns)
{
	uint64_t *e;
	/* A launch of no bytes, or one faster than the clock's resolution, teaches the rates nothing. */
	if (x->modelled_ns[i] && ns)
		(void)gio_sched_rate_observe(&x->rate, x->write[i], x->modelled_ns[i], ns);
	if (x->log_tail - x->log_head == GPY_SCHED_LOG) {
		x->log_head++;
		x->log_lost++;
	}
	e = x->log[x->log_tail++ % GPY_SCHED_LOG];
	e[0] = x->write[i] == GIO_SCHED_WRITE;
	e[1] = x->obs[i].layer;
	e[2] = x->bytes[i];
	e[3] = x->modelled_ns[i];
	e[4] = ns;
}

/* A plan's batches so far: an observation of an earlier batch's layer is gone (the plan keeps a
 * layer's time only until its next batch). */
static uint64_t batch_of(const struct gpy_plan *p)
{
	return p->stats[GPY_PLAN_LOADS] + p->stats[GPY_PLAN_SAVES];
}

/* CPU engine: the plan layer just issued, to be read back once its run is timed. */
static void cpu_observe(struct gpy_sched *x, struct gpy_plan *p, uint32_t layer, uint32_t write, const uint64_t *bytes)
{
	const uint32_t i = x->t_tail % GPY_SCHED_TIMERS;
	if (x->t_tail - x->t_head >= GPY_SCHED_TIMERS)
		return; /* every entry still pending: this transfer goes unobserved */
	x->obs[i].p = p;
	x->obs[i].uid = p->uid;
	x->obs[i].batch = batch_of(p);
	x->obs[i].layer = layer;
	x->modelled_ns[i] = gio_sched_rate_model_ns(&x->base, bytes, write);
	x->write[i] = (uint8_t)write;
	x->bytes[i] = gio_sched_bytes_sum(bytes, x->cfg.ndevs);
	x->t_tail++;
}

/* CPU engine: the times of the layers issued, in issue order, into the rates. A layer still
 * running stops the pass; one whose plan is gone or has begun another batch is dropped (the
 * live list and the plan's id say so without touching freed memory). Nothing here waits. */
static void cpu_rates_update(struct gpy_sched *x)
{
	while (x->t_head != x->t_tail) {
		const uint32_t i = x->t_head % GPY_SCHED_TIMERS;
		const struct gpy_sched_obs *o = &x->obs[i];
		uint64_t ns = 0;
		if (gpy_plan_lookup((int64_t)(uintptr_t)o->p) == o->p && o->p->uid == o->uid && batch_of(o->p) == o->batch) {
			const int rc = gio_kv_plan_layer_time(o->p->plan, o->layer, &ns);
			if (rc == -EAGAIN)
				return;
			if (rc == 0)
				observed(x, i, ns);
		}
		x->t_head++;
	}
}

/* Reads back the timers whose launches ended, in launch order, into the rates: a timer still
 * pending stops the pass (the next slot asks again); nothing here waits. */
static int rates_update(struct gpy_sched *x)
{
	if (x->engine != GIO_KV_ENGINE_GPU) {
		cpu_rates_update(x);
		return 0;
	}
	while (x->t_head != x->t_tail) {
		const uint32_t i = x->t_head % GPY_SCHED_TIMERS;
		uint64_t ns = 0;
		const int rc = gpy_gpu_timer_read(x->timers, i, &ns);
		if (rc == -EAGAIN)
			return 0;
		if (rc)
			return rc;
		observed(x, i, ns);
		x->t_head++;
	}
	return 0;
}

/* The GPU engine's launcher with each launch between a timer's marks (gio_sched_launch_fn; arg:
 * the scheduler, its slot's stream in x->stream). A timer that fails leaves the launch alone and
 * fails the slot after it (x->timer_rc); with every timer pending, the launch goes untimed. */
static int timed_launch(void *arg, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	struct gpy_sched *x = arg;
	uint64_t saved[GIO_SCHED_DEVS_MAX];
	/* A load's bytes are the slot's, counted once already; a save's, its plan's batch layer. */
	const uint64_t *bytes = write ? saved : x->read_bytes;
	const int timed = x->t_tail - x->t_head < GPY_SCHED_TIMERS && !x->timer_rc &&
			  (!write || gio_kv_plan_layer_bytes(plan, saved, GIO_SCHED_DEVS_MAX) == 0);
	const uint32_t i = x->t_tail % GPY_SCHED_TIMERS;
	int rc;
	if (timed && (x->timer_rc = gpy_gpu_timer_mark(x->timers, i, 0, x->stream)) != 0)
		return gpy_gpu_sched_launch(x->stream, plan, layer, write, sm);
	rc = gpy_gpu_sched_launch(x->stream, plan, layer, write, sm);
	if (!timed || rc)
		return rc; /* a begin mark without its end is simply reused */
	if ((x->timer_rc = gpy_gpu_timer_mark(x->timers, i, 1, x->stream)) != 0)
		return 0;
	x->modelled_ns[i] = gio_sched_rate_model_ns(&x->base, bytes, write ? GIO_SCHED_WRITE : GIO_SCHED_READ);
	x->write[i] = (uint8_t)(write ? GIO_SCHED_WRITE : GIO_SCHED_READ);
	x->bytes[i] = gio_sched_bytes_sum(bytes, x->cfg.ndevs);
	x->obs[i].layer = layer;
	x->t_tail++;
	return 0;
}

int gpy_sched_rates(const struct gpy_sched *x, double *out, uint32_t n)
{
	uint32_t i;
	if (!x || !out)
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	for (i = 0; i < n && i < 4; i++) /* the factors, then the observation counts */
		out[i] = i < 2 ? x->rate.factor[i] : (double)x->rate.observed[i - 2];
	return 0;
}

int gpy_sched_rates_reset(struct gpy_sched *x)
{
	gpy_clear_error();
	if (!x)
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	/* Transfers timed before the reset and not read back yet would teach the new rates about the
	 * old conditions: dropped (their events are simply recorded again by later launches). */
	x->t_head = x->t_tail;
	(void)gio_sched_rate_init(&x->rate, x->rate.alpha);
	x->cfg = x->base;
	return 0;
}

int gpy_sched_transfers(struct gpy_sched *x, uint64_t *out, uint32_t n)
{
	uint32_t k = 0;
	int rc;
	gpy_clear_error();
	if (!x || (!out && n))
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	if (!x->calibrate)
		return gpy_fail(-EINVAL, "scheduler: its transfers are timed only with calibrate > 0");
	if ((rc = rates_update(x)) != 0)
		return rc; /* its message names the CUDA error */
	for (; k < n && x->log_head != x->log_tail; k++, x->log_head++)
		memcpy(out + (size_t)k * GPY_SCHED_XFER, x->log[x->log_head % GPY_SCHED_LOG], sizeof(x->log[0]));
	return (int)k;
}

static uint32_t queued_of(const struct gpy_sched *x, uint32_t i);

/* Brings each plan's count of queued layers to the backlog's: after a slot took items off it,
 * or (gone 1) when the scheduler goes and its items with it. A plan is touched only while it has
 * items queued, which keeps it alive (gpy_plan_finish() and gpy_plan_destroy() refuse). */
static void settle(struct gpy_sched *x, int gone)
{
	uint32_t i, now;
	for (i = 0; i < GPY_SCHED_SAVES; i++) {
		if (!x->queued[i])
			continue;
		now = gone ? 0 : queued_of(x, i);
		x->saves[i]->sched_queued -= x->queued[i] - now;
		x->queued[i] = now;
	}
}

int gpy_sched_destroy(struct gpy_sched *x)
{
	if (!x)
		return 0;
	settle(x, 1); /* the layers never issued: their plans' finish reports them as not run */
	gpy_gpu_timers_destroy(x->timers);
	free(x->ring);
	free(x->writes);
	free(x);
	return 0;
}

/* Items of save plan index i still queued. */
static uint32_t queued_of(const struct gpy_sched *x, uint32_t i)
{
	uint32_t k, n = 0;
	for (k = 0; k < x->bl.count; k++)
		n += (uint32_t)(gio_sched_backlog_at(&x->bl, k)->id >> 32) == i;
	return n;
}

uint32_t gpy_sched_pending(const struct gpy_sched *x, const struct gpy_plan *p)
{
	uint32_t i;
	for (i = 0; x && i < GPY_SCHED_SAVES; i++)
		if (x->saves[i] == p)
			return queued_of(x, i);
	return 0;
}

static const char *engine_name(uint32_t engine)
{
	return engine == GIO_KV_ENGINE_GPU ? "GPU" : "CPU";
}

/* A plan of the other engine than the scheduler's: its layers would run where the scheduler
 * neither launches nor times them. */
static int engine_mismatch(const struct gpy_sched *x, const struct gpy_plan *p, const char *what)
{
	return gpy_fail(-EINVAL, "scheduler: a %s-engine %s given to a %s-engine scheduler", engine_name(p->engine), what,
			engine_name(x->engine));
}

int gpy_sched_defer(struct gpy_sched *x, struct gpy_plan *p, uint32_t layer)
{
	struct gio_sched_item it;
	uint32_t i, slot = GPY_SCHED_SAVES;
	int rc;
	gpy_clear_error();
	if (!x || !p)
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	if (p->s != x->s)
		return gpy_fail(-EINVAL, "scheduler: the plan is of another store");
	if (p->engine != x->engine)
		return engine_mismatch(x, p, "plan");
	if (!p->batch_open || !p->batch_write)
		return gpy_fail(-EINVAL, "scheduler: defer takes a plan with a save batch open");
	if (layer >= p->layers)
		return gpy_fail(-EINVAL, "scheduler: layer %u beyond the plan's %u", layer, p->layers);
	/* The plan's index: its own, else one whose items were all issued (its plan may be gone). */
	for (i = 0; i < GPY_SCHED_SAVES && slot == GPY_SCHED_SAVES; i++)
		if (x->saves[i] == p)
			slot = i;
	for (i = 0; i < GPY_SCHED_SAVES && slot == GPY_SCHED_SAVES; i++)
		if (!x->saves[i] || queued_of(x, i) == 0)
			slot = i;
	if (slot == GPY_SCHED_SAVES)
		return gpy_fail(-EAGAIN, "scheduler: %u save plans have layers queued already", GPY_SCHED_SAVES);
	memset(&it, 0, sizeof(it));
	it.id = gio_sched_save_id(slot, layer);
	if ((rc = gio_kv_plan_layer_bytes(p->plan, it.bytes, GIO_SCHED_DEVS_MAX)) != 0)
		return gpy_lib(rc, "scheduler: the save layer's bytes");
	rc = gio_sched_backlog_push(&x->bl, &it);
	if (rc == -EAGAIN)
		return gpy_fail(rc, "scheduler: the backlog is full (%u of %u items, %llu of %llu bytes): issue slots "
				    "or drain before deferring more",
				x->bl.count, x->bl.cap, (unsigned long long)x->bl.bytes, (unsigned long long)x->bl.max_bytes);
	if (rc == -E2BIG)
		return gpy_fail(rc, "scheduler: one save layer's %llu bytes exceed the backlog's bound of %llu",
				(unsigned long long)gio_sched_item_bytes(&it), (unsigned long long)x->bl.max_bytes);
	if (rc < 0)
		return gpy_fail(rc, "scheduler: malformed backlog");
	x->saves[slot] = p;
	x->save_plans[slot] = p->plan;
	x->queued[slot]++;
	p->sched_queued++;
	return rc; /* 0, or GIO_SCHED_PRESSURE */
}

int gpy_sched_slot(struct gpy_sched *x, struct gpy_plan *load, uint32_t layer, uint32_t phase, uint64_t slack_ns,
		   uint32_t sm, void *stream, uint64_t *out, uint32_t n)
{
	struct gio_sched_issuer is;
	struct gio_sched_slot slot;
	struct gio_sched_decision dec;
	int rc;
	gpy_clear_error();
	if (!x || !out || n < GPY_SCHED_OUT)
		return gpy_fail(-EINVAL, "scheduler: NULL argument or no room for the decision");
	if (load) {
		if (load->s != x->s)
			return gpy_fail(-EINVAL, "scheduler: the load plan is of another store");
		if (load->engine != x->engine)
			return engine_mismatch(x, load, "load plan");
		if (!load->batch_open || load->batch_write)
			return gpy_fail(-EINVAL, "scheduler: the load plan has no load batch open");
		if (layer >= load->layers)
			return gpy_fail(-EINVAL, "scheduler: layer %u beyond the plan's %u", layer, load->layers);
	}
	memset(&slot, 0, sizeof(slot));
	slot.phase = phase;
	slot.sm = sm;
	slot.slack_ns = slack_ns;
	if (load && (rc = gio_kv_plan_layer_bytes(load->plan, slot.read_bytes, GIO_SCHED_DEVS_MAX)) != 0)
		return gpy_lib(rc, "scheduler: the load layer's bytes");
	gio_sched_carry(&x->prev, &slot);
	if (x->calibrate) {
		/* The transfers measured since the last slot correct the bandwidths this one plans with. */
		if ((rc = rates_update(x)) != 0)
			return rc; /* its message names the CUDA error */
		(void)gio_sched_rate_apply(&x->rate, &x->base, &x->cfg);
	}
	memset(&is, 0, sizeof(is));
	is.cfg = &x->cfg;
	is.backlog = &x->bl;
	is.saves = x->save_plans;
	is.nsaves = GPY_SCHED_SAVES;
	is.launch = x->engine != GIO_KV_ENGINE_GPU ? NULL : x->calibrate ? timed_launch : gpy_gpu_sched_launch;
	is.launch_arg = x->calibrate ? (void *)x : stream;
	is.timeout_ns = x->timeout_ns;
	x->stream = stream;
	x->read_bytes = slot.read_bytes;
	x->timer_rc = 0;
	memset(&dec, 0, sizeof(dec));
	rc = gio_sched_issue(&is, &slot, load ? load->plan : NULL, layer, x->writes, x->bl.cap, &dec);
	if (rc == 0 && x->calibrate && x->engine != GIO_KV_ENGINE_GPU) {
		uint64_t wbytes[GIO_SCHED_DEVS_MAX];
		uint32_t k;
		if (load)
			cpu_observe(x, load, layer, GIO_SCHED_READ, slot.read_bytes);
		for (k = 0; k < dec.nwrites; k++) {
			struct gpy_plan *sp = x->saves[(uint32_t)(x->writes[k].id >> 32) % GPY_SCHED_SAVES];
			if (sp && gio_kv_plan_layer_bytes(sp->plan, wbytes, GIO_SCHED_DEVS_MAX) == 0)
				cpu_observe(x, sp, (uint32_t)x->writes[k].id, GIO_SCHED_WRITE, wbytes);
		}
	}
	settle(x, 0); /* what was issued left the backlog, also when a later item failed */
	if (rc == -EINVAL && dec.fault)
		return gpy_fail(rc, "scheduler: %s (%u)", gio_sched_reason_name(dec.fault), dec.fault_index);
	if (rc)
		return gpy_lib(rc, "scheduler: issuing the slot");
	if (load)
		load->stats[GPY_PLAN_LAYERS]++;
	x->prev = dec;
	out[0] = dec.read_end_ns;
	out[1] = dec.bubble_ns;
	out[2] = dec.slot_ns;
	out[3] = dec.write_end_ns;
	out[4] = dec.read_bytes;
	out[5] = dec.write_bytes;
	out[6] = dec.nwrites;
	out[7] = dec.sm;
	/* The layers went; a timer around them did not: said, not hidden (its message names the
	 * CUDA error), after the slot's bookkeeping. */
	return x->timer_rc;
}

void gpy_sched_idle(struct gpy_sched *x)
{
	if (x)
		memset(&x->prev, 0, sizeof(x->prev));
}

int gpy_sched_stats(const struct gpy_sched *x, uint64_t *out, uint32_t n)
{
	const uint64_t v[] = {x ? x->bl.count : 0,  x ? x->bl.bytes : 0,    x ? x->bl.high_items : 0,
			      x ? x->bl.high_bytes : 0, x ? x->bl.pushed : 0, x ? x->bl.popped : 0,
			      x ? x->bl.refused : 0,    x ? x->bl.pressured : 0,   x ? x->log_lost : 0};
	uint32_t i;
	if (!x || !out)
		return gpy_fail(-EINVAL, "scheduler: NULL argument");
	for (i = 0; i < n && i < sizeof(v) / sizeof(v[0]); i++)
		out[i] = v[i];
	return 0;
}
