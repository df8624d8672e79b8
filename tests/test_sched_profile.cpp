// The slack profile (giouring/sched/profile.h): its checks, bilinear lookups against a layer cost
// model they must reproduce, clamping outside the grid, and the online recalibration: converging
// to a shifted truth, staying put under noise, bounded by one outlier, refusing what it cannot use.
#include <catch2/catch.hpp>

#include <giouring/sched/profile.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

const uint32_t kInput[] = {128, 1024, 4096, 16384};
const uint32_t kPrefix[] = {0, 4096, 32768, 131072};
const uint32_t kLayers = 8;

// A layer's compute time that bilinear interpolation reproduces exactly between grid points.
double model_ns(uint32_t layer, double input, double prefix)
{
	return 20000.0 + 1000.0 * layer + 35.0 * input + 0.5 * prefix + 0.0004 * input * prefix;
}

std::unique_ptr<gio_sched_profile> model_table()
{
	auto t = std::make_unique<gio_sched_profile>();
	uint32_t reason = 99;
	REQUIRE(gio_sched_profile_init(t.get(), kLayers, kInput, 4, kPrefix, 4, &reason) == 0);
	REQUIRE(reason == GIO_SCHED_PROFILE_R_OK);
	for (uint32_t l = 0; l < kLayers; l++)
		for (uint32_t i = 0; i < 4; i++)
			for (uint32_t p = 0; p < 4; p++)
				t->slack_ns[gio_sched_profile_cell(l, i, p)] = (uint64_t)model_ns(l, kInput[i], kPrefix[p]);
	return t;
}

uint64_t lookup(const gio_sched_profile *t, uint32_t input, uint32_t prefix, uint32_t layer)
{
	gio_sched_estimate e{};
	REQUIRE(gio_sched_profile_lookup(t, input, prefix, layer, &e) == 0);
	return e.slack_ns;
}

} // namespace

TEST_CASE("sched profile: the struct's layout", "[sched]")
{
	CHECK(sizeof(gio_sched_profile) == GIO_SCHED_PROFILE_BYTES);
	CHECK(gio_sched_profile_cell(0, 0, 1) == 1);
	CHECK(gio_sched_profile_cell(0, 1, 0) == GIO_SCHED_AXIS_MAX);
	CHECK(gio_sched_profile_cell(1, 0, 0) == GIO_SCHED_AXIS_MAX * GIO_SCHED_AXIS_MAX);
	CHECK(gio_sched_profile_cell(GIO_SCHED_LAYERS_MAX - 1, GIO_SCHED_AXIS_MAX - 1, GIO_SCHED_AXIS_MAX - 1) ==
	      GIO_SCHED_PROFILE_CELLS - 1);
}

TEST_CASE("sched profile: init and check refuse what is out of range, naming it", "[sched]")
{
	auto t = std::make_unique<gio_sched_profile>();
	const uint32_t up[] = {1, 2, 3}, flat[] = {1, 2, 2}, down[] = {3, 2, 1};
	uint32_t many[GIO_SCHED_AXIS_MAX + 1];
	for (uint32_t i = 0; i <= GIO_SCHED_AXIS_MAX; i++)
		many[i] = i;
	uint32_t r = 0;
	CHECK(gio_sched_profile_init(nullptr, 1, up, 3, up, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_NULL);
	CHECK(gio_sched_profile_init(t.get(), 1, nullptr, 3, up, 3, &r) == -EINVAL);
	CHECK(gio_sched_profile_init(t.get(), 0, up, 3, up, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_LAYERS);
	CHECK(gio_sched_profile_init(t.get(), GIO_SCHED_LAYERS_MAX + 1, up, 3, up, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_LAYERS);
	CHECK(gio_sched_profile_init(t.get(), 1, up, 0, up, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_AXIS_COUNT);
	CHECK(gio_sched_profile_init(t.get(), 1, up, 3, many, GIO_SCHED_AXIS_MAX + 1, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_AXIS_COUNT);
	CHECK(gio_sched_profile_init(t.get(), 1, flat, 3, up, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_AXIS_ORDER);
	CHECK(gio_sched_profile_init(t.get(), 1, up, 3, down, 3, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_AXIS_ORDER);
	CHECK(std::string(gio_sched_profile_reason_name(r)) == "an axis is not strictly increasing");
	CHECK(std::string(gio_sched_profile_reason_name(12345)) == "unknown reason");

	REQUIRE(gio_sched_profile_init(t.get(), GIO_SCHED_LAYERS_MAX, many, GIO_SCHED_AXIS_MAX, many,
				       GIO_SCHED_AXIS_MAX, &r) == 0);
	CHECK(gio_sched_profile_check(t.get(), &r) == 0);
	CHECK(t->alpha == GIO_SCHED_ALPHA_DEFAULT);
	CHECK(t->factor[GIO_SCHED_LAYERS_MAX - 1] == 1.0);
	const double bad_alpha[] = {0.0, -0.5, 1.5, std::nan("")};
	for (double a : bad_alpha) {
		gio_sched_profile c = *t;
		c.alpha = a;
		CHECK(gio_sched_profile_check(&c, &r) == -EINVAL);
		CHECK(r == GIO_SCHED_PROFILE_R_ALPHA);
	}
	const double bad_factor[] = {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()};
	for (double f : bad_factor) {
		gio_sched_profile c = *t;
		c.factor[7] = f;
		CHECK(gio_sched_profile_check(&c, &r) == -EINVAL);
		CHECK(r == GIO_SCHED_PROFILE_R_FACTOR);
	}
	{
		gio_sched_profile c = *t;
		c.has_sm = 2;
		CHECK(gio_sched_profile_check(&c, &r) == -EINVAL);
		CHECK(r == GIO_SCHED_PROFILE_R_HAS_SM);
		c = *t;
		c.input[3] = c.input[2];
		CHECK(gio_sched_profile_check(&c, &r) == -EINVAL);
		CHECK(r == GIO_SCHED_PROFILE_R_AXIS_ORDER);
	}
	CHECK(gio_sched_profile_check(nullptr, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_NULL);
}

TEST_CASE("sched profile: lookups are exact at grid points and bilinear between them", "[sched]")
{
	auto t = model_table();
	for (uint32_t l = 0; l < kLayers; l++)
		for (uint32_t i = 0; i < 4; i++)
			for (uint32_t p = 0; p < 4; p++)
				CHECK(lookup(t.get(), kInput[i], kPrefix[p], l) == (uint64_t)model_ns(l, kInput[i], kPrefix[p]));

	// The model is a + b*input + c*prefix + d*input*prefix: bilinear interpolation reproduces it
	// anywhere inside the grid (to the rounding of the cells, under 2 ns).
	std::mt19937 rng(7);
	std::uniform_int_distribution<uint32_t> in(kInput[0], kInput[3]), pre(kPrefix[0], kPrefix[3]);
	for (int n = 0; n < 2000; n++) {
		const uint32_t x = in(rng), y = pre(rng), l = n % kLayers;
		const double want = model_ns(l, x, y);
		INFO("input " << x << " prefix " << y << " layer " << l);
		CHECK(std::fabs((double)lookup(t.get(), x, y, l) - want) < 2.0);
	}
	// A point halfway between four cells is their mean.
	gio_sched_estimate e{};
	REQUIRE(gio_sched_profile_lookup(t.get(), (kInput[1] + kInput[2]) / 2, (kPrefix[1] + kPrefix[2]) / 2, 3, &e) == 0);
	const double mean = (double)(t->slack_ns[gio_sched_profile_cell(3, 1, 1)] + t->slack_ns[gio_sched_profile_cell(3, 1, 2)] +
				     t->slack_ns[gio_sched_profile_cell(3, 2, 1)] + t->slack_ns[gio_sched_profile_cell(3, 2, 2)]) /
			   4.0;
	CHECK(std::fabs((double)e.base_ns - mean) <= 0.5);
	CHECK(e.factor == 1.0);
	CHECK(e.slack_ns == e.base_ns);
	CHECK(e.sm == 0); // no SM budgets in this profile

	CHECK(gio_sched_profile_lookup(t.get(), 1, 1, kLayers, &e) == -EINVAL);
	CHECK(gio_sched_profile_lookup(nullptr, 1, 1, 0, &e) == -EINVAL);
	CHECK(gio_sched_profile_lookup(t.get(), 1, 1, 0, nullptr) == -EINVAL);
}

TEST_CASE("sched profile: outside the grid the edge is taken, never an extrapolation", "[sched]")
{
	auto t = std::make_unique<gio_sched_profile>();
	const uint32_t input[] = {100, 200}, prefix[] = {1000, 2000};
	REQUIRE(gio_sched_profile_init(t.get(), 1, input, 2, prefix, 2, nullptr) == 0);
	// Falling steeply along the prefix axis: a line through the two points would reach 0 at
	// prefix 2111 and go negative beyond.
	t->slack_ns[gio_sched_profile_cell(0, 0, 0)] = 10000;
	t->slack_ns[gio_sched_profile_cell(0, 0, 1)] = 1000;
	t->slack_ns[gio_sched_profile_cell(0, 1, 0)] = 20000;
	t->slack_ns[gio_sched_profile_cell(0, 1, 1)] = 2000;
	CHECK(lookup(t.get(), 100, 100000, 0) == 1000);
	CHECK(lookup(t.get(), 100, UINT32_MAX, 0) == 1000);
	CHECK(lookup(t.get(), 100, 0, 0) == 10000);
	CHECK(lookup(t.get(), 0, 0, 0) == 10000);
	CHECK(lookup(t.get(), 1000, 0, 0) == 20000);
	CHECK(lookup(t.get(), UINT32_MAX, UINT32_MAX, 0) == 2000);
	CHECK(lookup(t.get(), 150, 5000, 0) == 1500); // clamped on one axis, interpolated on the other

	// One point per axis: the one cell everywhere.
	const uint32_t one[] = {512};
	REQUIRE(gio_sched_profile_init(t.get(), 2, one, 1, one, 1, nullptr) == 0);
	t->slack_ns[gio_sched_profile_cell(1, 0, 0)] = 777;
	CHECK(lookup(t.get(), 0, 0, 1) == 777);
	CHECK(lookup(t.get(), 100000, 3, 1) == 777);
	CHECK(lookup(t.get(), 100000, 3, 0) == 0);
}

TEST_CASE("sched profile: SM budgets interpolate and round down", "[sched]")
{
	auto t = std::make_unique<gio_sched_profile>();
	const uint32_t input[] = {0, 10}, prefix[] = {0, 10};
	REQUIRE(gio_sched_profile_init(t.get(), 1, input, 2, prefix, 2, nullptr) == 0);
	t->has_sm = 1;
	t->sm[gio_sched_profile_cell(0, 0, 0)] = 8;
	t->sm[gio_sched_profile_cell(0, 0, 1)] = 9;
	t->sm[gio_sched_profile_cell(0, 1, 0)] = 8;
	t->sm[gio_sched_profile_cell(0, 1, 1)] = 9;
	gio_sched_estimate e{};
	REQUIRE(gio_sched_profile_lookup(t.get(), 0, 0, 0, &e) == 0);
	CHECK(e.sm == 8);
	REQUIRE(gio_sched_profile_lookup(t.get(), 5, 9, 0, &e) == 0);
	CHECK(e.sm == 8); // 8.9
	REQUIRE(gio_sched_profile_lookup(t.get(), 5, 10, 0, &e) == 0);
	CHECK(e.sm == 9);
	t->has_sm = 0;
	REQUIRE(gio_sched_profile_lookup(t.get(), 5, 10, 0, &e) == 0);
	CHECK(e.sm == 0);
}

TEST_CASE("sched profile: recalibration converges to a 20% slower GPU within 40 observations", "[sched]")
{
	auto t = model_table();
	const double shift = 1.2;
	std::mt19937 rng(11);
	std::uniform_int_distribution<uint32_t> in(0, 20000), pre(0, 140000);
	for (int n = 0; n < 40; n++) // observations at points of the engine's choosing, on every layer
		for (uint32_t l = 0; l < kLayers; l++) {
			const uint32_t x = in(rng), y = pre(rng);
			gio_sched_estimate e{};
			REQUIRE(gio_sched_profile_lookup(t.get(), x, y, l, &e) == 0);
			uint32_t r = 99;
			REQUIRE(gio_sched_profile_observe(t.get(), x, y, l, (uint64_t)((double)e.base_ns * shift), &r) == 0);
			CHECK(r == GIO_SCHED_PROFILE_R_OK);
		}
	for (uint32_t l = 0; l < kLayers; l++) {
		INFO("layer " << l << " factor " << t->factor[l]);
		CHECK(t->observed[l] == 40);
		CHECK(std::fabs(t->factor[l] / shift - 1.0) < 0.01);
		// Every point follows, the ones never observed too: the correction is per layer.
		for (uint32_t i = 0; i < 4; i++)
			for (uint32_t p = 0; p < 4; p++) {
				const double want = shift * (double)t->slack_ns[gio_sched_profile_cell(l, i, p)];
				CHECK(std::fabs((double)lookup(t.get(), kInput[i], kPrefix[p], l) / want - 1.0) < 0.01);
			}
	}
	// Before 40, not yet: the test can tell converged from not.
	auto u = model_table();
	for (int n = 0; n < 5; n++)
		REQUIRE(gio_sched_profile_observe(u.get(), 1024, 4096, 0, (uint64_t)(shift * model_ns(0, 1024, 4096)), nullptr) == 0);
	CHECK(std::fabs(u->factor[0] / shift - 1.0) > 0.05);
	CHECK(u->factor[1] == 1.0); // other layers untouched
}

TEST_CASE("sched profile: recalibration stays put under noise", "[sched]")
{
	auto t = model_table();
	const double shift = 1.2;
	std::mt19937 rng(12);
	std::uniform_real_distribution<double> noise(-0.05, 0.05); // +-5% per measured layer time
	auto observe = [&](int n) {
		double sum = 0, lo = 1e9, hi = 0;
		for (int k = 0; k < n; k++) {
			const double truth = shift * model_ns(2, 4096, 32768);
			REQUIRE(gio_sched_profile_observe(t.get(), 4096, 32768, 2, (uint64_t)(truth * (1.0 + noise(rng))), nullptr) == 0);
			sum += t->factor[2];
			lo = std::min(lo, t->factor[2]);
			hi = std::max(hi, t->factor[2]);
		}
		return std::make_tuple(sum / n, lo, hi);
	};
	observe(100); // converge
	const auto [mean, lo, hi] = observe(2000);
	INFO("factor over 2000 noisy observations: mean " << mean << ", " << lo << " to " << hi);
	CHECK(std::fabs(mean / shift - 1.0) < 0.005);
	CHECK(lo > shift * 0.97);
	CHECK(hi < shift * 1.03);
}

TEST_CASE("sched profile: one outlier moves the correction by at most alpha x (clamp - 1)", "[sched]")
{
	auto t = model_table();
	const uint64_t base = lookup(t.get(), 1024, 4096, 1);
	REQUIRE(gio_sched_profile_observe(t.get(), 1024, 4096, 1, base * 100, nullptr) == 0); // a preempted step
	CHECK(t->factor[1] == Approx(1.0 + GIO_SCHED_ALPHA_DEFAULT * (GIO_SCHED_PROFILE_CLAMP - 1.0)));
	REQUIRE(gio_sched_profile_observe(t.get(), 1024, 4096, 3, 1, nullptr) == 0); // 1 ns
	CHECK(t->factor[3] == Approx(1.0 - GIO_SCHED_ALPHA_DEFAULT * (1.0 - 1.0 / GIO_SCHED_PROFILE_CLAMP)));

	// A real change of 3x is still followed, the clamp only slowing the first steps.
	auto u = model_table();
	const uint64_t base0 = lookup(u.get(), 1024, 4096, 0);
	int n = 0;
	while (std::fabs(u->factor[0] / 3.0 - 1.0) > 0.01 && n < 1000) {
		REQUIRE(gio_sched_profile_observe(u.get(), 1024, 4096, 0, 3 * base0, nullptr) == 0);
		n++;
	}
	INFO("observations to reach 3x within 1%: " << n);
	CHECK(n < 60);

	// A larger alpha follows faster.
	auto v = model_table();
	v->alpha = 0.5;
	for (int k = 0; k < 10; k++)
		REQUIRE(gio_sched_profile_observe(v.get(), 1024, 4096, 0, (uint64_t)(1.2 * (double)base0), nullptr) == 0);
	CHECK(std::fabs(v->factor[0] / 1.2 - 1.0) < 0.001);
}

TEST_CASE("sched profile: observations it cannot use are refused and change nothing", "[sched]")
{
	auto t = model_table();
	uint32_t r = 0;
	CHECK(gio_sched_profile_observe(t.get(), 1024, 4096, kLayers, 1000, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_LAYER);
	CHECK(gio_sched_profile_observe(t.get(), 1024, 4096, 0, 0, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_MEASURED);
	CHECK(gio_sched_profile_observe(nullptr, 1024, 4096, 0, 5, &r) == -EINVAL);
	CHECK(r == GIO_SCHED_PROFILE_R_NULL);
	t->slack_ns[gio_sched_profile_cell(0, 0, 0)] = 0;
	CHECK(gio_sched_profile_observe(t.get(), 0, 0, 0, 1000, &r) == -ERANGE);
	CHECK(r == GIO_SCHED_PROFILE_R_BASE_ZERO);
	for (uint32_t l = 0; l < kLayers; l++) {
		CHECK(t->factor[l] == 1.0);
		CHECK(t->observed[l] == 0);
	}
}

TEST_CASE("sched profile: folding keeps every lookup and resets the factors", "[sched]")
{
	auto t = model_table();
	for (uint32_t l = 0; l < kLayers; l++)
		t->factor[l] = 0.75 + 0.1 * l;
	std::mt19937 rng(13);
	std::uniform_int_distribution<uint32_t> in(0, 20000), pre(0, 140000);
	std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>> seen;
	for (int n = 0; n < 500; n++) {
		const uint32_t x = in(rng), y = pre(rng), l = n % kLayers;
		seen.emplace_back(x, y, l, lookup(t.get(), x, y, l));
	}
	REQUIRE(gio_sched_profile_fold(t.get()) == 0);
	for (uint32_t l = 0; l < kLayers; l++)
		CHECK(t->factor[l] == 1.0);
	for (const auto &[x, y, l, before] : seen) {
		INFO("input " << x << " prefix " << y << " layer " << l);
		CHECK(std::llabs((long long)lookup(t.get(), x, y, l) - (long long)before) <= 1);
	}
	CHECK(gio_sched_profile_fold(nullptr) == -EINVAL);
}
