// The scheduler's invariants (giouring/sched/sched.h) over many random configs, backlogs and chains
// of slots: reads first and all of them; no device ever reading and writing at once, within a slot
// or across slots; prefill writes only within the window; strict FIFO, stopping only where the next
// item would not fit; decode always draining; the backlog bounded with back-pressure and never
// losing an item; SM budgets clamped; the naive policy never beating it on the bubble.
// GIO_SCHED_SEED sets the seed (default: from the clock); it is printed either way.
#include <catch2/catch.hpp>

#include <giouring/sched/sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

namespace {

uint64_t env_seed()
{
	const char *s = std::getenv("GIO_SCHED_SEED");
	return s ? std::strtoull(s, nullptr, 0) : (uint64_t)std::chrono::system_clock::now().time_since_epoch().count();
}

struct Rng {
	std::mt19937_64 g;
	explicit Rng(uint64_t seed) : g(seed) {}
	uint64_t below(uint64_t n) { return n ? g() % n : 0; }
	double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }
	bool chance(double p) { return real(0, 1) < p; }
	// Bytes spanning many orders of magnitude, often 0.
	uint64_t bytes(double zero)
	{
		return chance(zero) ? 0 : 1 + (g() >> (g() % 64)) % (64ull << 20);
	}
};

gio_sched_config random_config(Rng &r)
{
	gio_sched_config c{};
	c.ndevs = 1 + (uint32_t)r.below(GIO_SCHED_DEVS_MAX);
	c.gate = r.chance(0.5) ? GIO_SCHED_GATE_LAYER : GIO_SCHED_GATE_DEVICE;
	c.sm_min = 1 + (uint32_t)r.below(8);
	c.sm_max = c.sm_min + (uint32_t)r.below(132);
	c.decode_window_ns = r.chance(0.5) ? 0 : r.below(20000000);
	for (uint32_t d = 0; d < c.ndevs; d++) {
		c.dev[d].read_gbps = r.real(0.5, 40);
		c.dev[d].write_gbps = r.real(0.2, 20);
		c.dev[d].mixed_gbps = r.real(0.2, c.dev[d].read_gbps + c.dev[d].write_gbps);
	}
	return c;
}

gio_sched_item random_item(Rng &r, uint32_t ndevs, uint64_t id)
{
	gio_sched_item it{};
	it.id = id;
	const double zero = r.real(0, 1);
	for (uint32_t d = 0; d < ndevs; d++)
		it.bytes[d] = r.bytes(zero);
	return it;
}

// The backlog beside a plain model of what it must hold.
struct Checked {
	std::vector<gio_sched_item> ring;
	gio_sched_backlog bl{};
	std::deque<gio_sched_item> model;
	uint64_t model_bytes = 0;

	Checked(Rng &r) : ring(1 + r.below(48))
	{
		const uint64_t max = 1 + r.below(1ull << 32);
		REQUIRE(gio_sched_backlog_init(&bl, ring.data(), (uint32_t)ring.size(), max, r.below(max)) == 0);
	}
	void push(const gio_sched_item &it)
	{
		const uint64_t b = gio_sched_item_bytes(&it);
		const int rc = gio_sched_backlog_push(&bl, &it);
		if (rc >= 0) {
			model.push_back(it);
			model_bytes += b;
			REQUIRE(rc == (model_bytes > bl.soft_bytes ? GIO_SCHED_PRESSURE : 0));
		} else if (rc == -EAGAIN) { // refused only where the bound says so
			REQUIRE((model.size() == ring.size() || model_bytes + b > bl.max_bytes));
		} else {
			REQUIRE(rc == -E2BIG);
			REQUIRE(b > bl.max_bytes);
		}
		if (rc < 0)
			REQUIRE((model.size() < ring.size() && model_bytes + b <= bl.max_bytes) == false);
		same();
	}
	void pop(uint32_t n)
	{
		REQUIRE(gio_sched_backlog_pop(&bl, n) == 0);
		for (uint32_t i = 0; i < n; i++) {
			model_bytes -= gio_sched_item_bytes(&model.front());
			model.pop_front();
		}
		same();
	}
	void same() const
	{
		REQUIRE(bl.count == model.size());
		REQUIRE(bl.count <= bl.cap);
		REQUIRE(bl.bytes == model_bytes);
		REQUIRE(bl.bytes <= bl.max_bytes);
		for (uint32_t i = 0; i < bl.count; i++)
			REQUIRE(std::memcmp(gio_sched_backlog_at(&bl, i), &model[i], sizeof(gio_sched_item)) == 0);
	}
};

// The invariants of one slack-aware decision.
void check_aware(const gio_sched_config &c, const gio_sched_backlog &bl, const gio_sched_slot &s, uint32_t max_writes,
		 const gio_sched_decision &d, const gio_sched_write *w)
{
	// Reads: every byte, at the read bandwidth, from the device's busy time.
	uint64_t read_end = 0, read_bytes = 0;
	for (uint32_t v = 0; v < c.ndevs; v++) {
		REQUIRE(d.dev_read_end_ns[v] == s.busy_ns[v] + gio_sched_xfer_ns(s.read_bytes[v], c.dev[v].read_gbps));
		if (s.read_bytes[v])
			read_end = std::max(read_end, d.dev_read_end_ns[v]);
		read_bytes += s.read_bytes[v];
	}
	REQUIRE(d.read_bytes == read_bytes);
	REQUIRE(d.read_end_ns == read_end);
	REQUIRE(d.bubble_ns == (read_end > s.slack_ns ? read_end - s.slack_ns : 0));
	REQUIRE(d.slot_ns == std::max(s.slack_ns, read_end));
	const uint64_t window = s.phase == GIO_SCHED_DECODE ? std::max(d.slot_ns, c.decode_window_ns) : d.slot_ns;
	REQUIRE(d.window_ns == window);
	const uint32_t sm = s.sm == 0 ? c.sm_max : std::min(std::max(s.sm, c.sm_min), c.sm_max);
	REQUIRE(d.sm == sm);

	// Writes: the oldest items in order, each device's writes one after another after its reads.
	const uint32_t can = std::min(bl.count, max_writes);
	REQUIRE(d.nwrites <= can);
	if (s.phase == GIO_SCHED_DECODE && can > 0)
		REQUIRE(d.nwrites >= 1); // decode drains
	uint64_t wend[GIO_SCHED_DEVS_MAX], launch = 0, write_bytes = 0, write_end = 0;
	for (uint32_t v = 0; v < c.ndevs; v++)
		wend[v] = d.dev_read_end_ns[v];
	auto simulate = [&](const gio_sched_item &it, uint64_t l, uint64_t *ends) {
		uint64_t end = l;
		for (uint32_t v = 0; v < c.ndevs; v++) {
			ends[v] = wend[v];
			if (it.bytes[v]) {
				ends[v] = std::max(l, wend[v]) + gio_sched_xfer_ns(it.bytes[v], c.dev[v].write_gbps);
				end = std::max(end, ends[v]);
			}
		}
		return end;
	};
	for (uint32_t k = 0; k < d.nwrites; k++) {
		const gio_sched_item &it = *gio_sched_backlog_at(&bl, k);
		REQUIRE(w[k].id == it.id);
		REQUIRE(w[k].index == k);
		REQUIRE(w[k].launch_ns >= launch); // launched in FIFO order
		if (c.gate == GIO_SCHED_GATE_LAYER)
			REQUIRE(w[k].launch_ns >= read_end);
		for (uint32_t v = 0; v < c.ndevs; v++)
			if (it.bytes[v]) // never while its devices read (or still write what was carried in)
				REQUIRE(w[k].launch_ns >= d.dev_read_end_ns[v]);
		uint64_t ends[GIO_SCHED_DEVS_MAX];
		const uint64_t end = simulate(it, w[k].launch_ns, ends);
		REQUIRE(w[k].end_ns == end);
		if (s.phase == GIO_SCHED_PREFILL || k > 0) {
			REQUIRE(w[k].end_ns <= window); // writes only in the window
			REQUIRE(w[k].overrun == 0);
		} else {
			REQUIRE(w[k].overrun == (w[k].end_ns > window));
			if (w[k].overrun)
				REQUIRE(d.nwrites == 1);
		}
		std::copy(ends, ends + GIO_SCHED_DEVS_MAX, wend);
		launch = w[k].launch_ns;
		write_bytes += gio_sched_item_bytes(&it);
		write_end = std::max(write_end, end);
	}
	// Strict FIFO: the first item left out is one that would not have fitted.
	if (d.nwrites < can) {
		const gio_sched_item &next = *gio_sched_backlog_at(&bl, d.nwrites);
		uint64_t gate = c.gate == GIO_SCHED_GATE_LAYER ? read_end : 0;
		for (uint32_t v = 0; v < c.ndevs; v++)
			if (next.bytes[v])
				gate = std::max(gate, d.dev_read_end_ns[v]);
		uint64_t ends[GIO_SCHED_DEVS_MAX];
		const bool decode_progress_taken = s.phase == GIO_SCHED_DECODE && d.nwrites == 1 && w[0].overrun;
		if (!decode_progress_taken)
			REQUIRE(simulate(next, std::max(launch, gate), ends) > window);
	}
	REQUIRE(d.write_bytes == write_bytes);
	REQUIRE(d.write_end_ns == write_end);
	for (uint32_t v = 0; v < c.ndevs; v++)
		REQUIRE(d.dev_write_end_ns[v] == (wend[v] > d.dev_read_end_ns[v] ? wend[v] : s.busy_ns[v]));
	REQUIRE(d.io_end_ns == std::max(read_end, write_end));
	REQUIRE(d.overrun_ns == (d.io_end_ns > window ? d.io_end_ns - window : 0));
	if (s.phase == GIO_SCHED_PREFILL)
		REQUIRE(d.overrun_ns == 0);
}

} // namespace

TEST_CASE("sched property: the invariants hold over random configs, backlogs and chains of slots", "[sched]")
{
	const uint64_t seed = env_seed();
	std::printf("test_sched_property: seed %llu (GIO_SCHED_SEED=%llu to repeat)\n", (unsigned long long)seed,
		    (unsigned long long)seed);
	INFO("seed " << seed << " (GIO_SCHED_SEED)");
	Rng r(seed);
	uint64_t slots = 0, issued = 0, overruns = 0, refused = 0, naive_worse = 0;
	for (int chain = 0; chain < 1500; chain++) {
		const gio_sched_config c = random_config(r);
		Checked b(r);
		gio_sched_slot s{};
		uint64_t id = 0, t = 0; // t: the slot's start, absolute
		uint64_t busy_until[GIO_SCHED_DEVS_MAX] = {0}; // absolute end of each device's writes so far
		for (int n = 0; n < 24; n++) {
			const uint32_t pushes = (uint32_t)r.below(6);
			for (uint32_t i = 0; i < pushes; i++)
				b.push(random_item(r, c.ndevs, id++));
			s.phase = r.chance(0.3) ? GIO_SCHED_DECODE : GIO_SCHED_PREFILL;
			s.sm = (uint32_t)r.below(200);
			s.slack_ns = r.below(20000000);
			const double zero = r.real(0, 1);
			for (uint32_t v = 0; v < c.ndevs; v++)
				s.read_bytes[v] = r.bytes(zero);
			const uint32_t max_writes = (uint32_t)r.below(b.bl.cap + 2);
			std::vector<gio_sched_write> w(max_writes + 1);
			const std::vector<gio_sched_item> ring_before = b.ring;
			const gio_sched_backlog before = b.bl;
			gio_sched_decision d{}, nd{};
			REQUIRE(gio_sched_plan(&c, &b.bl, &s, w.data(), max_writes, &d) == 0);
			REQUIRE(std::memcmp(&before, &b.bl, sizeof(before)) == 0); // planning changes nothing
			REQUIRE(std::memcmp(ring_before.data(), b.ring.data(), sizeof(gio_sched_item) * b.ring.size()) == 0);
			check_aware(c, b.bl, s, max_writes, d, w.data());
			// Across slots: this slot's reads on a device start after the writes carried into it.
			for (uint32_t v = 0; v < c.ndevs; v++)
				REQUIRE(t + s.busy_ns[v] >= busy_until[v]);

			std::vector<gio_sched_write> nw(max_writes + 1);
			REQUIRE(gio_sched_plan_naive(&c, &b.bl, &s, nw.data(), max_writes, &nd) == 0);
			REQUIRE(nd.nwrites == std::min(b.bl.count, max_writes));
			REQUIRE(nd.read_bytes == d.read_bytes);
			REQUIRE(nd.read_end_ns >= d.read_end_ns); // reads never gain from sharing a device
			REQUIRE(nd.bubble_ns >= d.bubble_ns);
			naive_worse += nd.bubble_ns > d.bubble_ns;

			for (uint32_t v = 0; v < c.ndevs; v++)
				if (d.dev_write_end_ns[v])
					busy_until[v] = t + d.dev_write_end_ns[v];
			issued += d.nwrites;
			overruns += d.overrun_ns > 0;
			slots++;
			b.pop(d.nwrites);
			gio_sched_slot next = s;
			REQUIRE(gio_sched_carry(&d, &next) == 0);
			if (s.phase == GIO_SCHED_PREFILL) // its own writes end within the slot: only what came in may outlast it
				for (uint32_t v = 0; v < GIO_SCHED_DEVS_MAX; v++)
					REQUIRE(next.busy_ns[v] == (s.busy_ns[v] > d.slot_ns ? s.busy_ns[v] - d.slot_ns : 0));
			s = next;
			t += d.slot_ns;
		}
		refused += b.bl.refused;
	}
	std::printf("test_sched_property: %llu slots, %llu items issued, %llu decode overruns, %llu pushes refused, "
		    "naive bubble larger in %llu slots\n", (unsigned long long)slots, (unsigned long long)issued,
		    (unsigned long long)overruns, (unsigned long long)refused, (unsigned long long)naive_worse);
	// The random cases reach every branch that matters (else the test proves little).
	CHECK(issued > 1000);
	CHECK(overruns > 10);
	CHECK(refused > 10);
	CHECK(naive_worse > 100);
}
