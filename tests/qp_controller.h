// The adversarial controller of the ring tests (test_qp_invariants, test_qp_submit): written for
// the tests, not the software target. It reads the doorbells the way hardware would, checks every
// entry a doorbell covers (its checksum, its CID, the SQ head bound), and completes commands out
// of order after random delays. Entries that a stalled reservation's cancel put in place (Flush of
// namespace 0) fail with Invalid Namespace, as a controller fails them.
#ifndef GIO_TESTS_QP_CONTROLLER_H
#define GIO_TESTS_QP_CONTROLLER_H

#include <giouring/ring/qp.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace qpt {

// Each SQE carries its submission tag and a checksum over every other byte it holds.
inline uint32_t sig(const gio_sqe &s)
{
	uint32_t h = 2166136261u;
	const unsigned char *p = reinterpret_cast<const unsigned char *>(&s);
	for (size_t i = 4; i < 60; i++) // all but CDW0 (CID is set by the ring) and CDW15
		h = (h ^ p[i]) * 16777619u;
	return h;
}

struct Ring {
	uint32_t depth;
	std::vector<gio_sqe> sq;
	std::vector<gio_cqe> cq;
	std::vector<gio_cmd_slot> slots;
	uint32_t sq_db = 0, cq_db = 0;
	gio_qp qp{};
	explicit Ring(uint32_t d) : depth(d), sq(d), cq(d), slots(d)
	{
		std::memset(cq.data(), 0, cq.size() * sizeof(gio_cqe));
		REQUIRE(gio_qp_init(&qp, sq.data(), d, cq.data(), d, slots.data(), 1, &sq_db, &cq_db, 0) == 0);
	}
};

// The adversarial controller. Violations are counted, reported by the test thread.
struct Controller {
	Ring &r;
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> violations{0}, fetched{0}, posted{0}, nops{0};
	std::atomic<int> drop_every{0}; // drop the completion of every Nth command (0: never)
	uint32_t head = 0, last_tail = 0, cq_tail = 0, phase = 1;
	std::vector<uint8_t> outstanding;
	std::mt19937 rng{42};

	explicit Controller(Ring &ring) : r(ring), outstanding(65536, 0) {}

	void bad() { violations++; }

	void run()
	{
		struct Pending {
			uint16_t cid;
			int delay;
			bool nop;
		};
		std::vector<Pending> pend;
		uint64_t n = 0;
		while (!stop.load(std::memory_order_relaxed) || !pend.empty()) {
			const uint32_t tail = gio_load_acquire(&r.sq_db);
			if (tail >= r.depth)
				bad();
			// (2) forward only: the distance from the last value stays within one ring.
			const uint32_t moved = (tail - last_tail + r.depth) % r.depth;
			if (((head + r.depth - last_tail) % r.depth) != 0 && moved != 0 && moved > r.depth - 1)
				bad();
			last_tail = tail;
			while (head != tail) {
				const gio_sqe s = r.sq[head];
				// A cancelled reservation's entry: Flush of namespace 0, nothing else set.
				const bool nop = s.opc == GIO_NVM_OPC_FLUSH && s.nsid == 0;
				// (1) complete entry: the checksum in CDW15 matches the bytes.
				if (nop ? s.cdw15 != 0 || s.cdw10 != 0 || s.dptr.prp.prp1 != 0 : s.cdw15 != sig(s))
					bad();
				nops += nop;
				// (4) the CID is not outstanding already.
				if (outstanding[s.cid])
					bad();
				outstanding[s.cid] = 1;
				head = (head + 1) % r.depth;
				fetched++;
				n++;
				const int de = drop_every.load();
				if (de && n % (uint64_t)de == 0) {
					outstanding[s.cid] = 0; // lost: never completed
					continue;
				}
				pend.push_back({s.cid, (int)(rng() % 4), nop});
			}
			// Complete in random order, after random delays, while the CQ has room.
			for (size_t i = 0; i < pend.size();) {
				if (pend[i].delay-- > 0) {
					i++;
					continue;
				}
				const uint32_t cq_head = gio_load_acquire(&r.cq_db);
				// (5) the host's CQ head never passes what was posted.
				const uint32_t used = (cq_tail - cq_head + r.depth) % r.depth;
				if (cq_head >= r.depth)
					bad();
				if (used + 1 >= r.depth)
					break; // CQ full: the host must consume first
				gio_cqe *e = &r.cq[cq_tail];
				e->dw0 = pend[i].cid * 3u;
				e->dw1 = 0;
				e->sqhd = (uint16_t)head; /* the head when the entry is posted, as the spec says */
				e->sqid = 1;
				outstanding[pend[i].cid] = 0;
				// Invalid Namespace or Format (SCT 0, SC 0x0b) for a cancelled entry.
				gio_store_release(gio_cqe_dw3(e), GIO_CQE_DW3(pend[i].cid, (pend[i].nop ? 0x0bu << 1 : 0u) | phase));
				if (++cq_tail == r.depth) {
					cq_tail = 0;
					phase ^= 1;
				}
				posted++;
				pend[i] = pend.back();
				pend.pop_back();
			}
			// (3) at most depth - 1 between the controller's head and the tail it was given.
			if ((tail - head + r.depth) % r.depth > r.depth - 1)
				bad();
			std::this_thread::yield();
		}
	}
};

inline void fill(gio_sqe *s, uint32_t tag)
{
	std::memset(s, 0, sizeof(*s));
	s->opc = 0x02;
	s->nsid = 1;
	s->cdw10 = tag;
	s->cdw11 = tag * 2654435761u;
	s->cdw12 = ~tag;
	s->dptr.prp.prp1 = (uint64_t)tag << 12;
	s->cdw15 = sig(*s);
}

// Writes a tagged command into reserved index idx (gio_qp_put).
inline int put(Ring &r, uint32_t idx, uint32_t tag, uint64_t user_data = 0, uint32_t flags = 0)
{
	gio_sqe s;
	fill(&s, tag);
	return gio_qp_put(&r.qp, idx, &s, user_data, flags);
}

} // namespace qpt

#endif
