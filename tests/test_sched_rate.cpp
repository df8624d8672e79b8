// The scheduler's bandwidth calibration (giouring/sched/rate.h): the modelled time of a layer's
// transfer, the factor converging to a real ratio and bounded by one outlier, the calibrated
// configuration, and a slot planned with it issuing no write into slack that is not there.
#include <catch2/catch.hpp>

#include <giouring/sched/rate.h>

#include <cmath>
#include <vector>

namespace {

gio_sched_config four_drives(double read, double write)
{
	gio_sched_config c{};
	c.ndevs = 4;
	c.gate = GIO_SCHED_GATE_LAYER;
	c.sm_min = 1;
	c.sm_max = 8;
	for (uint32_t d = 0; d < 4; d++)
		c.dev[d] = {read, write, write / 2};
	return c;
}

} // namespace

TEST_CASE("a rate starts with no correction and refuses what it cannot use", "[sched][rate]")
{
	gio_sched_rate r;
	REQUIRE(gio_sched_rate_init(nullptr, 0.5) == -EINVAL);
	REQUIRE(gio_sched_rate_init(&r, 0.0) == -EINVAL);
	REQUIRE(gio_sched_rate_init(&r, 1.5) == -EINVAL);
	REQUIRE(gio_sched_rate_init(&r, NAN) == -EINVAL);
	REQUIRE(gio_sched_rate_init(&r, GIO_SCHED_ALPHA_DEFAULT) == 0);
	REQUIRE(r.factor[GIO_SCHED_READ] == 1.0);
	REQUIRE(r.factor[GIO_SCHED_WRITE] == 1.0);
	REQUIRE(r.observed[0] == 0);
	REQUIRE(gio_sched_rate_observe(&r, 2, 100, 100) == -EINVAL);
	REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, 0, 100) == -EINVAL);
	REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, 100, 0) == -EINVAL);
	REQUIRE(gio_sched_rate_observe(nullptr, GIO_SCHED_READ, 100, 100) == -EINVAL);
	REQUIRE(r.observed[0] == 0); // nothing changed
	REQUIRE(r.factor[0] == 1.0);
}

TEST_CASE("a layer's modelled transfer is its slowest device's", "[sched][rate]")
{
	gio_sched_config c = four_drives(14.0, 7.0);
	c.dev[2].read_gbps = 7.0;
	const uint64_t bytes[4] = {14000, 14000, 14000, 0};
	REQUIRE(gio_sched_rate_model_ns(&c, bytes, GIO_SCHED_READ) == 2000); // device 2 at 7 GB/s
	REQUIRE(gio_sched_rate_model_ns(&c, bytes, GIO_SCHED_WRITE) == 2000);
	const uint64_t none[4] = {0, 0, 0, 0};
	REQUIRE(gio_sched_rate_model_ns(&c, none, GIO_SCHED_READ) == 0);
	REQUIRE(gio_sched_rate_model_ns(nullptr, bytes, GIO_SCHED_READ) == 0);
}

TEST_CASE("the factor follows a real ratio, and one outlier moves it by at most alpha x (CLAMP - 1)", "[sched][rate]")
{
	gio_sched_rate r;
	REQUIRE(gio_sched_rate_init(&r, 0.125) == 0);
	// Reads 15% slower than configured: after 40 observations within 0.5% of 1.15.
	for (int i = 0; i < 40; i++)
		REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, 2350000, 2702500) == 0);
	REQUIRE(r.factor[GIO_SCHED_READ] == Approx(1.15).epsilon(0.005));
	REQUIRE(r.factor[GIO_SCHED_WRITE] == 1.0); // the other direction untouched
	REQUIRE(r.observed[GIO_SCHED_READ] == 40);
	// One transfer 100x slower (a preempted stream, a first launch): clamped at 2x the factor.
	const double before = r.factor[GIO_SCHED_READ];
	REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, 1000, 100000) == 0);
	REQUIRE(r.factor[GIO_SCHED_READ] <= before * (1.0 + 0.125 * (GIO_SCHED_PROFILE_CLAMP - 1.0)) + 1e-12);
	REQUIRE(r.factor[GIO_SCHED_READ] > before);
	// Faster than configured is followed as well.
	for (int i = 0; i < 200; i++)
		REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_WRITE, 1000, 800) == 0);
	REQUIRE(r.factor[GIO_SCHED_WRITE] == Approx(0.8).epsilon(0.001));
}

TEST_CASE("the calibrated configuration divides each bandwidth by its direction's factor", "[sched][rate]")
{
	const gio_sched_config base = four_drives(14.0, 7.0);
	gio_sched_rate r;
	REQUIRE(gio_sched_rate_init(&r, 1.0) == 0); // alpha 1: the factor is the last (clamped) ratio
	REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, 1000, 1250) == 0);
	REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_WRITE, 1000, 1100) == 0);
	gio_sched_config cal;
	REQUIRE(gio_sched_rate_apply(&r, &base, &cal) == 0);
	uint32_t why = 99, idx = 99;
	REQUIRE(gio_sched_config_check(&cal, &why, &idx) == 0);
	for (uint32_t d = 0; d < 4; d++) {
		REQUIRE(cal.dev[d].read_gbps == Approx(14.0 / 1.25));
		REQUIRE(cal.dev[d].write_gbps == Approx(7.0 / 1.1));
		REQUIRE(cal.dev[d].mixed_gbps == Approx(3.5 / 1.25)); // the larger factor
	}
	REQUIRE(cal.sm_max == base.sm_max);
	gio_sched_config same = base; // in place
	REQUIRE(gio_sched_rate_apply(&r, &same, &same) == 0);
	REQUIRE(same.dev[0].read_gbps == Approx(14.0 / 1.25));
	REQUIRE(gio_sched_rate_apply(nullptr, &base, &cal) == -EINVAL);
	REQUIRE(gio_sched_rate_apply(&r, nullptr, &cal) == -EINVAL);
}

TEST_CASE("planned with the measured rate, a slot puts no write into slack that is not there", "[sched][rate]")
{
	// 32K tokens, 98% restored: 131.5 MB of a layer's prefix over 4 drives configured at 14 GB/s
	// each (2.35 ms modelled) against 2.45 ms of compute; the loads really take 15% longer.
	const gio_sched_config base = four_drives(14.0, 7.0);
	const uint64_t per = 131530752 / 4;
	gio_sched_slot slot{};
	slot.phase = GIO_SCHED_PREFILL;
	slot.slack_ns = 2450000;
	for (uint32_t d = 0; d < 4; d++)
		slot.read_bytes[d] = per;
	// One save layer of the new tokens waits: 656 tokens x 4 KiB over the 4 drives.
	std::vector<gio_sched_item> ring(4);
	gio_sched_backlog bl;
	REQUIRE(gio_sched_backlog_init(&bl, ring.data(), 4, 1ull << 40, 0) == 0);
	gio_sched_item it{};
	it.id = 1;
	for (uint32_t d = 0; d < 4; d++)
		it.bytes[d] = 656ull * 4096 / 4;
	REQUIRE(gio_sched_backlog_push(&bl, &it) == 0);
	std::vector<gio_sched_write> w(4);
	gio_sched_decision as_given{}, calibrated{};
	REQUIRE(gio_sched_plan(&base, &bl, &slot, w.data(), 4, &as_given) == 0);
	REQUIRE(as_given.nwrites == 1); // the model sees 0.1 ms of slack and fills it
	REQUIRE(as_given.bubble_ns == 0);

	gio_sched_rate r;
	REQUIRE(gio_sched_rate_init(&r, GIO_SCHED_ALPHA_DEFAULT) == 0);
	const uint64_t modelled = gio_sched_rate_model_ns(&base, slot.read_bytes, GIO_SCHED_READ);
	REQUIRE(modelled == Approx(2348763).margin(1));
	for (int i = 0; i < 20; i++)
		REQUIRE(gio_sched_rate_observe(&r, GIO_SCHED_READ, modelled, (uint64_t)(modelled * 1.15)) == 0);
	gio_sched_config cal;
	REQUIRE(gio_sched_rate_apply(&r, &base, &cal) == 0);
	REQUIRE(gio_sched_plan(&cal, &bl, &slot, w.data(), 4, &calibrated) == 0);
	REQUIRE(calibrated.nwrites == 0);        // no slack: the save waits for a slot that has some
	REQUIRE(calibrated.bubble_ns > 200000);  // and the stall the engine will see is predicted
	REQUIRE(calibrated.read_end_ns > as_given.read_end_ns);
}
