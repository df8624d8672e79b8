// The slack-aware scheduler's decisions (giouring/sched/sched.h), slot by slot against times worked
// out by hand from its cost model: reads first and all of them, the bubble, writes after each
// device's reads and only in the window, strict FIFO, decode draining, back-pressure from the
// bounded backlog, SM budgets clamped, the naive policy's collapse, bad input refused.
#include <catch2/catch.hpp>

#include <giouring/sched/sched.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

gio_sched_config config(uint32_t ndevs, double read, double write, double mixed)
{
	gio_sched_config c{};
	c.ndevs = ndevs;
	c.gate = GIO_SCHED_GATE_DEVICE;
	c.sm_min = 2;
	c.sm_max = 16;
	for (uint32_t d = 0; d < ndevs; d++)
		c.dev[d] = {read, write, mixed};
	return c;
}

// Bytes per device from device 0 on, the rest 0.
void per_device(uint64_t *dst, std::initializer_list<uint64_t> bytes)
{
	uint32_t d = 0;
	for (uint64_t b : bytes)
		dst[d++] = b;
}

gio_sched_item item(uint64_t id, std::initializer_list<uint64_t> bytes)
{
	gio_sched_item it{};
	it.id = id;
	per_device(it.bytes, bytes);
	return it;
}

struct Backlog {
	std::vector<gio_sched_item> ring;
	gio_sched_backlog bl{};
	explicit Backlog(uint32_t cap = 64, uint64_t max_bytes = UINT64_MAX, uint64_t soft = 0) : ring(cap)
	{
		REQUIRE(gio_sched_backlog_init(&bl, ring.data(), cap, max_bytes, soft) == 0);
	}
	void push(const gio_sched_item &it) { REQUIRE(gio_sched_backlog_push(&bl, &it) >= 0); }
};

gio_sched_slot slot(uint32_t phase, uint64_t slack_ns, std::initializer_list<uint64_t> reads = {})
{
	gio_sched_slot s{};
	s.phase = phase;
	s.slack_ns = slack_ns;
	per_device(s.read_bytes, reads);
	return s;
}

struct Plan {
	gio_sched_decision d{};
	gio_sched_write w[64]{};
	int rc = 0;
	Plan(const gio_sched_config &c, const Backlog &b, const gio_sched_slot &s, uint32_t max = 64, bool naive = false)
	{
		rc = naive ? gio_sched_plan_naive(&c, &b.bl, &s, w, max, &d) : gio_sched_plan(&c, &b.bl, &s, w, max, &d);
	}
};

} // namespace

TEST_CASE("sched: a transfer's modelled time is bytes / bandwidth, rounded up", "[sched]")
{
	CHECK(gio_sched_xfer_ns(0, 10.0) == 0);
	CHECK(gio_sched_xfer_ns(10, 10.0) == 1);
	CHECK(gio_sched_xfer_ns(11, 10.0) == 2);
	CHECK(gio_sched_xfer_ns(29000000000ull, 29.0) == 1000000000ull); // 29 GB in a second at 29 GB/s
	CHECK(gio_sched_xfer_ns(1, 1e-300) == UINT64_MAX);
	CHECK(gio_sched_xfer_ns(UINT64_MAX, 0.5) == UINT64_MAX);
}

TEST_CASE("sched: a config is checked field by field, naming the device", "[sched]")
{
	uint32_t r = 99, at = 99;
	gio_sched_config c = config(4, 29, 12, 12);
	CHECK(gio_sched_config_check(&c, &r, &at) == 0);
	CHECK(r == GIO_SCHED_R_OK);
	CHECK(at == 0);
	CHECK(gio_sched_config_check(nullptr, &r, &at) == -EINVAL);
	CHECK(r == GIO_SCHED_R_NULL);
	c.ndevs = 0;
	CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
	CHECK(r == GIO_SCHED_R_DEVS);
	c.ndevs = GIO_SCHED_DEVS_MAX + 1;
	CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
	CHECK(r == GIO_SCHED_R_DEVS);
	c = config(GIO_SCHED_DEVS_MAX, 29, 12, 12);
	CHECK(gio_sched_config_check(&c, &r, &at) == 0);
	const double bad[] = {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()};
	for (double b : bad)
		for (int field = 0; field < 3; field++) {
			c = config(4, 29, 12, 12);
			(field == 0 ? c.dev[2].read_gbps : field == 1 ? c.dev[2].write_gbps : c.dev[2].mixed_gbps) = b;
			INFO("field " << field << " = " << b);
			CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
			CHECK(r == GIO_SCHED_R_BANDWIDTH);
			CHECK(at == 2);
		}
	c = config(4, 29, 12, 12);
	c.dev[5].read_gbps = std::nan(""); // beyond ndevs: not looked at
	CHECK(gio_sched_config_check(&c, &r, &at) == 0);
	c.sm_min = 0;
	CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
	CHECK(r == GIO_SCHED_R_SM);
	c.sm_min = 17;
	CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
	c = config(4, 29, 12, 12);
	c.gate = 2;
	CHECK(gio_sched_config_check(&c, &r, &at) == -EINVAL);
	CHECK(r == GIO_SCHED_R_GATE);
	CHECK(std::string(gio_sched_reason_name(r)) == "unknown write gate");
	CHECK(std::string(gio_sched_reason_name(1000)) == "unknown reason");
}

TEST_CASE("sched: the backlog is bounded in items and bytes, says so early, and never drops", "[sched]")
{
	Backlog b(4, 1000, 600);
	const gio_sched_item none = item(0, {});
	CHECK(gio_sched_backlog_push(&b.bl, &none) == 0); // an empty item takes a place and no bytes
	REQUIRE(gio_sched_backlog_pop(&b.bl, 1) == 0);
	const gio_sched_item a = item(1, {100, 100}), big = item(2, {300, 200}), huge = item(3, {0, 0, 1001}),
			     tiny = item(4, {0, 0, 0, 50});
	CHECK(gio_sched_backlog_push(&b.bl, &a) == 0);                  // 200
	CHECK(gio_sched_backlog_push(&b.bl, &big) == GIO_SCHED_PRESSURE); // 700, above the soft mark
	CHECK(gio_sched_backlog_push(&b.bl, &a) == GIO_SCHED_PRESSURE);   // 900
	CHECK(gio_sched_backlog_push(&b.bl, &a) == -EAGAIN);              // 1100 would pass the bound
	CHECK(gio_sched_backlog_push(&b.bl, &huge) == -E2BIG);            // never fits
	CHECK(gio_sched_backlog_push(&b.bl, &tiny) == GIO_SCHED_PRESSURE); // 950, the fourth item
	CHECK(gio_sched_backlog_push(&b.bl, &tiny) == -EAGAIN);           // no place left
	CHECK(b.bl.count == 4);
	CHECK(b.bl.bytes == 950);
	CHECK(b.bl.refused == 2);
	CHECK(b.bl.pressured == 3);
	CHECK(b.bl.pushed == 5);
	CHECK(b.bl.high_items == 4);
	CHECK(b.bl.high_bytes == 950);
	const uint64_t order[] = {1, 2, 1, 4};
	for (uint32_t i = 0; i < 4; i++)
		CHECK(gio_sched_backlog_at(&b.bl, i)->id == order[i]);
	CHECK(gio_sched_backlog_at(&b.bl, 4) == nullptr);

	CHECK(gio_sched_backlog_pop(&b.bl, 5) == -EINVAL); // more than queued: nothing taken
	CHECK(b.bl.count == 4);
	REQUIRE(gio_sched_backlog_pop(&b.bl, 2) == 0);
	CHECK(b.bl.count == 2);
	CHECK(b.bl.bytes == 250);
	CHECK(b.bl.popped == 3);
	// Around the ring's end, in order.
	const gio_sched_item c5 = item(5, {1}), c6 = item(6, {2});
	CHECK(gio_sched_backlog_push(&b.bl, &c5) == 0);
	CHECK(gio_sched_backlog_push(&b.bl, &c6) == 0);
	const uint64_t wrapped[] = {1, 4, 5, 6};
	for (uint32_t i = 0; i < 4; i++)
		CHECK(gio_sched_backlog_at(&b.bl, i)->id == wrapped[i]);
	CHECK(b.bl.head == 3);
	CHECK(b.bl.bytes == 253);
	CHECK(b.bl.high_bytes == 950);

	gio_sched_backlog bl;
	gio_sched_item ring[2];
	CHECK(gio_sched_backlog_init(nullptr, ring, 2, 10, 0) == -EINVAL);
	CHECK(gio_sched_backlog_init(&bl, nullptr, 2, 10, 0) == -EINVAL);
	CHECK(gio_sched_backlog_init(&bl, ring, 0, 10, 0) == -EINVAL);
	CHECK(gio_sched_backlog_init(&bl, ring, 2, 0, 0) == -EINVAL);
	REQUIRE(gio_sched_backlog_init(&bl, ring, 2, 10, 0) == 0);
	CHECK(bl.soft_bytes == 10);
	REQUIRE(gio_sched_backlog_init(&bl, ring, 2, 10, 11) == 0);
	CHECK(bl.soft_bytes == 10);
	const gio_sched_item ten = item(7, {10});
	CHECK(gio_sched_backlog_push(&bl, &ten) == 0); // at the bound, not above it
	CHECK(gio_sched_backlog_push(&bl, nullptr) == -EINVAL);
	CHECK(gio_sched_backlog_push(nullptr, &ten) == -EINVAL);
	CHECK(gio_sched_backlog_pop(nullptr, 0) == -EINVAL);
	const gio_sched_item overflow = item(8, {UINT64_MAX, 1});
	CHECK(gio_sched_item_bytes(&overflow) == UINT64_MAX);
	CHECK(gio_sched_backlog_push(&bl, &overflow) == -E2BIG);
}

TEST_CASE("sched: every read goes at the start; the bubble is what outlasts the slack", "[sched]")
{
	const gio_sched_config c = config(2, 10, 5, 4);
	Backlog b;
	Plan p(c, b, slot(GIO_SCHED_PREFILL, 1000, {20000, 5000}));
	REQUIRE(p.rc == 0);
	CHECK(p.d.dev_read_end_ns[0] == 2000);
	CHECK(p.d.dev_read_end_ns[1] == 500);
	CHECK(p.d.read_end_ns == 2000);
	CHECK(p.d.read_bytes == 25000);
	CHECK(p.d.bubble_ns == 1000);
	CHECK(p.d.slot_ns == 2000);
	CHECK(p.d.window_ns == 2000);
	CHECK(p.d.io_end_ns == 2000);
	CHECK(p.d.nwrites == 0);
	CHECK(p.d.write_end_ns == 0);
	CHECK(p.d.overrun_ns == 0);
	Plan q(c, b, slot(GIO_SCHED_PREFILL, 5000, {20000, 5000}));
	CHECK(q.d.bubble_ns == 0);
	CHECK(q.d.slot_ns == 5000);
}

TEST_CASE("sched: writes fill the slack after the reads, oldest first, up to the first that does not fit", "[sched]")
{
	const gio_sched_config c = config(1, 10, 5, 4);
	Backlog b;
	b.push(item(10, {10000})); // 2000 ns: 2000 to 4000
	b.push(item(11, {20000})); // 4000 ns: 4000 to 8000
	b.push(item(12, {15000})); // 3000 ns: 8000 to 11000, past the slack of 10000
	b.push(item(13, {1000}));  // 200 ns: would fit, but does not pass item 12
	Plan p(c, b, slot(GIO_SCHED_PREFILL, 10000, {20000}));
	REQUIRE(p.rc == 0);
	REQUIRE(p.d.nwrites == 2);
	CHECK(p.w[0].id == 10);
	CHECK(p.w[0].index == 0);
	CHECK(p.w[0].launch_ns == 2000);
	CHECK(p.w[0].end_ns == 4000);
	CHECK(p.w[1].id == 11);
	CHECK(p.w[1].index == 1);
	CHECK(p.w[1].launch_ns == 2000); // launched at the gate, queued on the device behind item 10
	CHECK(p.w[1].end_ns == 8000);
	CHECK(p.w[0].overrun == 0);
	CHECK(p.d.write_bytes == 30000);
	CHECK(p.d.write_end_ns == 8000);
	CHECK(p.d.dev_write_end_ns[0] == 8000);
	CHECK(p.d.io_end_ns == 8000);
	CHECK(p.d.bubble_ns == 0);
	CHECK(b.bl.count == 4); // planning takes nothing: the host pops what it issued

	// Just fitting: an end equal to the window is in.
	Plan e(c, b, slot(GIO_SCHED_PREFILL, 11000, {20000}));
	CHECK(e.d.nwrites == 3);
	Plan f(c, b, slot(GIO_SCHED_PREFILL, 10999, {20000}));
	CHECK(f.d.nwrites == 2);
	Plan all(c, b, slot(GIO_SCHED_PREFILL, 11200, {20000}));
	CHECK(all.d.nwrites == 4);
	// No slack left after the reads: nothing.
	Plan g(c, b, slot(GIO_SCHED_PREFILL, 1000, {20000}));
	CHECK(g.d.nwrites == 0);
	CHECK(g.d.bubble_ns == 1000);
	// The room in the caller's array bounds it too.
	Plan h(c, b, slot(GIO_SCHED_PREFILL, 1000000, {20000}), 3);
	CHECK(h.d.nwrites == 3);
	Plan none(c, b, slot(GIO_SCHED_PREFILL, 1000000, {20000}), 0);
	CHECK(none.d.nwrites == 0);
}

TEST_CASE("sched: a write waits for its devices' reads (gate device) or for the slot's (gate layer)", "[sched]")
{
	gio_sched_config c = config(2, 10, 5, 4);
	Backlog b;
	b.push(item(1, {0, 10000}));   // device 1 only: 2000 ns
	b.push(item(2, {5000, 5000})); // both: 1000 ns each
	const gio_sched_slot s = slot(GIO_SCHED_PREFILL, 10000, {50000}); // device 0 reads for 5000 ns
	Plan dev(c, b, s);
	REQUIRE(dev.d.nwrites == 2);
	CHECK(dev.w[0].launch_ns == 0); // device 1 reads nothing: it writes at once
	CHECK(dev.w[0].end_ns == 2000);
	CHECK(dev.w[1].launch_ns == 5000); // device 0 reads until 5000
	CHECK(dev.w[1].end_ns == 6000);
	CHECK(dev.d.dev_write_end_ns[0] == 6000);
	CHECK(dev.d.dev_write_end_ns[1] == 6000);
	c.gate = GIO_SCHED_GATE_LAYER;
	Plan layer(c, b, s);
	REQUIRE(layer.d.nwrites == 2);
	CHECK(layer.w[0].launch_ns == 5000);
	CHECK(layer.w[0].end_ns == 7000);
	CHECK(layer.w[1].launch_ns == 5000);
	CHECK(layer.w[1].end_ns == 8000); // device 1 behind item 1 until 7000; device 0 done at 6000
	CHECK(layer.d.dev_write_end_ns[0] == 6000);
	CHECK(layer.d.dev_write_end_ns[1] == 8000);
}

TEST_CASE("sched: decode steps drain, past the step up to the decode window, and always the oldest", "[sched]")
{
	gio_sched_config c = config(1, 10, 5, 4);
	Backlog b;
	for (uint64_t id = 0; id < 5; id++)
		b.push(item(id, {10000})); // 2000 ns each
	const gio_sched_slot s = slot(GIO_SCHED_DECODE, 1000);
	Plan one(c, b, s); // no decode window: the oldest anyway, flagged
	REQUIRE(one.d.nwrites == 1);
	CHECK(one.w[0].id == 0);
	CHECK(one.w[0].overrun == 1);
	CHECK(one.d.overrun_ns == 1000);
	CHECK(one.d.window_ns == 1000);
	Plan pre(c, b, slot(GIO_SCHED_PREFILL, 1000)); // prefill never overruns
	CHECK(pre.d.nwrites == 0);
	c.decode_window_ns = 5000;
	Plan two(c, b, s);
	REQUIRE(two.d.nwrites == 2);
	CHECK(two.w[1].end_ns == 4000);
	CHECK(two.w[1].overrun == 0);
	CHECK(two.d.window_ns == 5000);
	CHECK(two.d.overrun_ns == 0);

	// Step after step, the backlog empties, each step's writes carried into the next.
	c.decode_window_ns = 0;
	gio_sched_slot next = s;
	int steps = 0;
	while (b.bl.count > 0 && steps < 100) {
		Plan p(c, b, next);
		REQUIRE(p.rc == 0);
		REQUIRE(p.d.nwrites >= 1);
		REQUIRE(gio_sched_backlog_pop(&b.bl, p.d.nwrites) == 0);
		REQUIRE(gio_sched_carry(&p.d, &next) == 0);
		steps++;
	}
	CHECK(b.bl.count == 0);
	CHECK(steps == 5);
	CHECK(b.bl.popped == 5);
}

TEST_CASE("sched: writes that outlast a slot keep their device busy in the next one", "[sched]")
{
	gio_sched_config c = config(2, 10, 5, 4);
	Backlog b;
	b.push(item(1, {25000})); // 5000 ns on device 0
	Plan d(c, b, slot(GIO_SCHED_DECODE, 1000));
	REQUIRE(d.d.nwrites == 1);
	CHECK(d.d.dev_write_end_ns[0] == 5000);
	gio_sched_slot next = slot(GIO_SCHED_PREFILL, 3000, {10000, 10000}); // 1000 ns of reads each
	REQUIRE(gio_sched_carry(&d.d, &next) == 0);
	CHECK(next.busy_ns[0] == 4000);
	CHECK(next.busy_ns[1] == 0);
	REQUIRE(gio_sched_backlog_pop(&b.bl, 1) == 0);
	Plan p(c, b, next);
	REQUIRE(p.rc == 0);
	CHECK(p.d.dev_read_end_ns[0] == 5000); // after the write: never both at once
	CHECK(p.d.dev_read_end_ns[1] == 1000);
	CHECK(p.d.bubble_ns == 2000);
	CHECK(gio_sched_carry(nullptr, &next) == -EINVAL);
	// A slack-aware prefill slot leaves nothing behind.
	b.push(item(2, {5000}));
	Plan q(c, b, slot(GIO_SCHED_PREFILL, 10000, {10000}));
	REQUIRE(q.d.nwrites == 1);
	REQUIRE(gio_sched_carry(&q.d, &next) == 0);
	for (uint32_t dv = 0; dv < GIO_SCHED_DEVS_MAX; dv++)
		CHECK(next.busy_ns[dv] == 0);
}

TEST_CASE("sched: the SM budget is clamped to the config's bounds", "[sched]")
{
	const gio_sched_config c = config(1, 10, 5, 4); // 2 to 16
	Backlog b;
	const uint32_t budget[] = {0, 1, 2, 9, 16, 17, 1000};
	const uint32_t want[] = {16, 2, 2, 9, 16, 16, 16};
	for (int i = 0; i < 7; i++) {
		gio_sched_slot s = slot(GIO_SCHED_PREFILL, 1000);
		s.sm = budget[i];
		Plan p(c, b, s);
		CHECK(p.d.sm == want[i]);
		Plan n(c, b, s, 64, true);
		CHECK(n.d.sm == want[i]);
	}
}

TEST_CASE("sched: bad input is refused with the reason and the device or item", "[sched]")
{
	const gio_sched_config c = config(2, 10, 5, 4);
	Backlog b;
	b.push(item(1, {1, 1}));
	b.push(item(2, {0, 0, 5})); // device 2 of 2
	gio_sched_decision d{};
	gio_sched_write w[4];
	gio_sched_slot s = slot(GIO_SCHED_PREFILL, 1000, {10, 10});
	for (int naive = 0; naive <= 1; naive++) {
		auto plan = [&](const gio_sched_config *cf, const gio_sched_backlog *bl, const gio_sched_slot *sl,
				gio_sched_write *wr, uint32_t max) {
			return naive ? gio_sched_plan_naive(cf, bl, sl, wr, max, &d) : gio_sched_plan(cf, bl, sl, wr, max, &d);
		};
		CHECK(plan(&c, &b.bl, &s, w, 4) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_ITEM_DEV);
		CHECK(d.fault_index == 1);
		CHECK(d.nwrites == 0);
		CHECK(plan(&c, &b.bl, &s, w, 1) == 0); // item 1 not considered
		CHECK(plan(nullptr, &b.bl, &s, w, 4) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_NULL);
		CHECK(plan(&c, nullptr, &s, w, 4) == -EINVAL);
		CHECK(plan(&c, &b.bl, nullptr, w, 4) == -EINVAL);
		CHECK(plan(&c, &b.bl, &s, nullptr, 4) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_NULL);
		CHECK(plan(&c, &b.bl, &s, nullptr, 0) == 0);
		gio_sched_config z = c;
		z.dev[1].write_gbps = std::nan("");
		CHECK(plan(&z, &b.bl, &s, w, 1) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_BANDWIDTH);
		CHECK(d.fault_index == 1);
		z = c;
		z.ndevs = 17;
		CHECK(plan(&z, &b.bl, &s, w, 1) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_DEVS);
		gio_sched_slot t = s;
		t.phase = 2;
		CHECK(plan(&c, &b.bl, &t, w, 1) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_PHASE);
		t = s;
		t.read_bytes[3] = 1;
		CHECK(plan(&c, &b.bl, &t, w, 1) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_SLOT_DEV);
		CHECK(d.fault_index == 3);
		t = s;
		t.busy_ns[15] = 1;
		CHECK(plan(&c, &b.bl, &t, w, 1) == -EINVAL);
		CHECK(d.fault_index == 15);
		gio_sched_backlog broken = b.bl;
		broken.count = broken.cap + 1;
		CHECK(plan(&c, &broken, &s, w, 1) == -EINVAL);
		CHECK(d.fault == GIO_SCHED_R_BACKLOG);
		CHECK(std::string(gio_sched_reason_name(d.fault)) == "malformed backlog");
	}
	CHECK(gio_sched_plan(&c, &b.bl, &s, w, 1, nullptr) == -EINVAL);
}

TEST_CASE("sched: the naive policy, same model: a device read and written at once collapses", "[sched]")
{
	// The figures cited for one drive (not measured here): 29 GB/s reading alone, 12 writing
	// alone, 12 both together.
	const gio_sched_config c = config(1, 29, 12, 12);
	Backlog b;
	b.push(item(1, {12000000})); // 12 MB: 1 ms alone
	const gio_sched_slot s = slot(GIO_SCHED_PREFILL, 2500000, {29000000}); // 29 MB: 1 ms alone
	Plan aware(c, b, s);
	REQUIRE(aware.d.nwrites == 1);
	CHECK(aware.d.read_end_ns == 1000000);
	CHECK(aware.w[0].launch_ns == 1000000);
	CHECK(aware.d.write_end_ns == 2000000);
	CHECK(aware.d.bubble_ns == 0);
	Plan naive(c, b, s, 64, true);
	REQUIRE(naive.rc == 0);
	REQUIRE(naive.d.nwrites == 1);
	CHECK(naive.w[0].launch_ns == 0);
	CHECK(naive.d.read_end_ns == 3416667); // 41 MB at 12 GB/s: reads wait for the writes
	CHECK(naive.w[0].end_ns == 3416667);
	CHECK(naive.d.bubble_ns == 916667);
	CHECK(naive.d.read_bytes == aware.d.read_bytes);
	CHECK(naive.d.write_bytes == aware.d.write_bytes);

	// Each device alone at its own bandwidth where it only reads or only writes; a mixed
	// bandwidth above both alone is no faster than each alone.
	const gio_sched_config fast = config(2, 10, 5, 100);
	Backlog f;
	f.push(item(1, {10000, 10000}));
	Plan m(fast, f, slot(GIO_SCHED_PREFILL, 100, {20000}), 64, true);
	CHECK(m.d.dev_read_end_ns[0] == 2000);       // max(30000 / 100, 2000, 2000)
	CHECK(m.d.dev_write_end_ns[0] == 2000);
	CHECK(m.d.dev_write_end_ns[1] == 2000);      // alone: 10000 / 5
	CHECK(m.d.dev_read_end_ns[1] == 0);
	CHECK(m.d.bubble_ns == 1900);
	CHECK(m.d.overrun_ns == 0);
	// Naive issues everything, whatever the window.
	Backlog g;
	for (int i = 0; i < 3; i++)
		g.push(item(i, {50000}));
	Plan all(fast, g, slot(GIO_SCHED_PREFILL, 100), 64, true);
	CHECK(all.d.nwrites == 3);
	CHECK(all.d.write_end_ns == 30000);
	CHECK(all.d.overrun_ns == 30000 - 100);
	CHECK(all.w[2].overrun == 1);
	Plan fits(fast, g, slot(GIO_SCHED_PREFILL, 100));
	CHECK(fits.d.nwrites == 0);
}
