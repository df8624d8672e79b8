// Ring stress: many producer threads x many queue pairs x random sizes and offsets
// against the software target, file-backed (io_uring executor) and memory-backed. The
// file-backed sections are tagged [io_uring]: ctest runs them as test_stress.io_uring.
//
// Every producer thread owns a disjoint LBA region, so it checks its data without coordination:
// it writes random ranges (1..N blocks at random offsets) from buffers filled with a pattern of
// (section, thread, LBA, generation), keeps a shadow map of the generation every block holds,
// and reads ranges back into buffers poisoned with 0xA5, comparing byte for byte (and checking
// that the bytes around the data were not touched). A command whose completion reached the wrong
// submitter shows up as poison, zeros or another generation or thread.
//
// Ring invariants checked on the side (docs/design.md, "Ring invariants"):
// - every command yields exactly one result, with no -ETIME under a generous deadline: per
//   thread completion counts, and per queue pair a reserved / completed count for every
//   free-running SQ index (each exactly once);
// - no lost or duplicated CID: a per-queue-pair owner table, indexed by CID (= slot), records
//   which free-running index claimed the slot; each claim must follow the previous one on that
//   slot by whole laps of the ring (so no CID is handed out while its command is outstanding);
// - at the end, every index moved together (reserved = committed = rung = SQ head = CQ head),
//   every slot is free and gio_qp::stray_cqes is 0 (no completion named a command that was not
//   outstanding).
// Small depths (2, 8, 64) make 10^6 commands wrap each ring thousands of times; one section
// runs more producers than slots on one queue pair (gio_qp_reserve gives -EBUSY and
// gio_qp_reserve_wait waits); data pointers are SGLs (one Data Block, or Last Segment lists in
// registered memory) and PRPs (PRP1/PRP2, lists, chained lists), built with gio_sgl_build() and
// gio_prp_build(); batches of several commands go through gio_qp_reserve_wait + gio_qp_put +
// gio_qp_publish + gio_qp_wait (publication in order, producers never waiting on each other),
// single ones also through gio_qp_submit_wait.
//
// Environment knobs (sanitizer builds run fewer commands):
//   GIO_STRESS_COMMANDS    commands in total over all sections (default 1000000)
//   GIO_STRESS_THREADS     producer threads of the bulk sections (default 8; the full-ring
//                          section runs at least 12, the depth-2 section at least 4)
//   GIO_STRESS_EXEC        executor threads of the software target (default 2)
//   GIO_STRESS_SEED        random seed (default 1); threads interleave differently every run
//   GIO_STRESS_DEADLINE_S  deadline of every wait, seconds (default 120)
//   GIO_STRESS_POLL_PCT    batches that poll the ring themselves (gio_qp_reserve, gio_qp_reap,
//                          sleeping) before the library's waits (default 10)
//   GIO_STRESS_DIRECT_PCT  file commands with page-aligned data (default 50): on an O_DIRECT
//                          file (sections "file SGL" and "file PRP") those go straight to the
//                          file, the others through the executor's bounce buffer; the "full
//                          ring" and "tiny rings" sections use the page cache (direct=0)
// One section at a time: test_stress "[sgl]", "[prp]", "[full]", "[tiny]", "[mem]".
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace {

const uint32_t kBlock = 4096;     // logical block size of every section (the URI default)
const uint32_t kPage = 4096;      // CC.MPS page size the host library sets
const uint32_t kMaxPieces = 16;   // ranges of one scattered data pointer
const uint32_t kGuard = 64;       // poisoned bytes checked around every read range
const uint32_t kSegBytes = 1024;  // SGL segment memory per command
const uint32_t kBigMin = 520;     // a "big" PRP transfer: more pages than one list page holds
const uint32_t kBigMax = 1100;
const uint32_t kBigListPages = 4;
const unsigned char kPoison = 0xA5;

uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = std::getenv(name);
	if (!v || !*v)
		return def;
	char *end = nullptr;
	unsigned long long x = std::strtoull(v, &end, 0);
	if (!end || *end)
		return def;
	return x;
}

uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

struct Rng {
	uint64_t s;
	explicit Rng(uint64_t seed) : s(splitmix(seed) | 1) {}
	uint64_t next()
	{
		s ^= s >> 12;
		s ^= s << 25;
		s ^= s >> 27;
		return s * 0x2545F4914F6CDD1Dull;
	}
	uint32_t below(uint32_t n) { return (uint32_t)((next() >> 32) * n >> 32); } // 0 .. n-1
	uint32_t range(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }  // lo .. hi
	bool chance(uint32_t percent) { return below(100) < percent; }
};

// Block content of (section, thread, lba, generation); generation 0 is a never-written block
// (the file is preallocated with zeros, and the memory store starts zeroed).
void fill_block(unsigned char *dst, uint32_t section, uint32_t thread, uint64_t lba, uint32_t gen)
{
	if (gen == 0) {
		std::memset(dst, 0, kBlock);
		return;
	}
	const uint64_t base = splitmix(splitmix(((uint64_t)section << 56) ^ ((uint64_t)thread << 40) ^ lba) ^ gen) | 1;
	uint64_t w[kBlock / 8];
	for (uint32_t j = 0; j < kBlock / 8; j++)
		w[j] = base ^ (j * 0x9E3779B97F4A7C15ull);
	std::memcpy(dst, w, kBlock);
}

struct TempDir {
	std::string dir;
	TempDir()
	{
		const char *t = std::getenv("TMPDIR");
		std::string tmpl = std::string(t && *t ? t : "/tmp") + "/gio-stress-XXXXXX";
		std::vector<char> buf(tmpl.begin(), tmpl.end());
		buf.push_back(0);
		if (mkdtemp(buf.data()))
			dir = buf.data();
	}
	~TempDir()
	{
		if (dir.empty())
			return;
		unlink((dir + "/x.img").c_str());
		rmdir(dir.c_str());
	}
};

bool preallocate(const std::string &path, uint64_t size)
{
	const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	std::vector<char> zeroes(1u << 20, 0);
	bool ok = true;
	for (uint64_t off = 0; ok && off < size; off += zeroes.size()) {
		const size_t n = (size_t)std::min<uint64_t>(zeroes.size(), size - off);
		ok = pwrite(fd, zeroes.data(), n, (off_t)off) == (ssize_t)n;
	}
	ok = ok && fsync(fd) == 0;
	return close(fd) == 0 && ok;
}

enum class Dptr { SGL, PRP, BOTH };

struct Section {
	std::string name;
	bool file;                    // file target (else mem://host)
	std::vector<uint32_t> depths; // one queue pair per entry
	uint32_t producers;
	uint64_t commands;      // in total, over all producers (at least)
	uint32_t max_batch;     // commands per reservation: 1 .. max_batch
	uint32_t max_blocks;    // blocks per command: 1 .. max_blocks
	uint32_t region_blocks; // blocks each producer owns
	Dptr dptr;
	uint32_t sgls;             // URI sgls= (0: the target takes PRPs only)
	uint32_t submit_wait_pct;  // single commands through gio_qp_submit_wait
	bool try_reserve_first;    // gio_qp_reserve first and count -EBUSY, then _reserve_wait
	uint32_t big_per_mille;    // big PRP transfers (chained lists), per 1000 batches
	const char *direct = "auto"; // URI direct=: O_DIRECT where the file system allows, or 0
};

// Per queue pair: who claimed each CID, and how often each free-running index was reserved and
// completed.
struct QpTrack {
	gio_qp *qp = nullptr;
	uint32_t depth = 0;
	std::unique_ptr<uint32_t[]> owner;     // by CID: 1 + the free-running index that holds it
	std::unique_ptr<uint8_t[]> reserved;   // by index
	std::unique_ptr<uint8_t[]> completed;  // by index
	uint64_t nidx = 0;                     // size of reserved / completed
	std::atomic<uint64_t> submit_waits{0}; // indices used by gio_qp_submit_wait (not tracked)
	std::atomic<uint64_t> ebusy{0};
	std::atomic<uint64_t> bad_owner{0};
	std::atomic<uint64_t> bad_count{0};
	std::mutex lock;
	std::string first_bad; // under lock

	void note(std::atomic<uint64_t> &counter, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
	{
		char buf[256];
		va_list ap;
		va_start(ap, fmt);
		std::vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		counter.fetch_add(1);
		std::lock_guard<std::mutex> g(lock);
		if (first_bad.empty())
			first_bad = buf;
	}
};

struct Piece {
	unsigned char *p;
	uint32_t len;
};

struct Cmd {
	bool write;
	bool big;
	uint64_t slba; // within the producer's region
	uint32_t nblk;
	uint32_t gen;
	uint32_t npieces;
	Piece pieces[kMaxPieces + 2];
	gio_sqe sqe;
	uint32_t idx;
};

struct Shared {
	const Section *sec;
	uint32_t section_id;
	gio_ctx *ctx;
	const gio_dptr_caps *caps;
	uint32_t nsid;
	std::vector<std::unique_ptr<QpTrack>> qps;
	uint64_t deadline_ns;
	uint32_t poll_pct;
	uint32_t direct_pct;
	std::atomic<bool> abort{false};
	std::atomic<uint64_t> progress{0}; // batches completed
	std::atomic<uint32_t> finished{0}; // producers done
};

struct Stats {
	uint64_t commands = 0, writes = 0, reads = 0, bytes = 0, batches = 0, submit_waits = 0;
	uint64_t sgl = 0, prp = 0, prp_lists = 0, sgl_segments = 0, big = 0, ebusy = 0, polled = 0;
	void add(const Stats &o)
	{
		commands += o.commands;
		writes += o.writes;
		reads += o.reads;
		bytes += o.bytes;
		batches += o.batches;
		submit_waits += o.submit_waits;
		sgl += o.sgl;
		prp += o.prp;
		prp_lists += o.prp_lists;
		sgl_segments += o.sgl_segments;
		big += o.big;
		ebusy += o.ebusy;
		polled += o.polled;
	}
};

class Producer {
public:
	Producer(Shared &sh, uint32_t id, uint64_t quota, uint64_t seed)
		: sh_(sh), sec_(*sh.sec), id_(id), quota_(quota), rng_(seed), region_(sec_.region_blocks),
		  base_lba_((uint64_t)id * sec_.region_blocks), shadow_(region_, 0), wstamp_(region_, 0),
		  rstamp_(region_, 0)
	{
		slot_data_ = (sec_.max_blocks + 2) * kPage;
		const uint32_t b = sec_.max_batch;
		big_data_ = sec_.big_per_mille ? (kBigMax + 2) * kPage : 0;
		seg_area_ = ((size_t)b * kSegBytes + kPage - 1) / kPage * kPage;
		arena_bytes_ = (size_t)b * slot_data_ + (size_t)b * kPage + seg_area_ + big_data_ +
			       (sec_.big_per_mille ? kBigListPages * kPage : 0);
		arena_ = static_cast<unsigned char *>(aligned_alloc(kPage, arena_bytes_));
		scratch_.resize((size_t)std::max(sec_.max_blocks, sec_.big_per_mille ? kBigMax : 0u) * kBlock);
		cmds_.resize(b);
	}
	~Producer() { free(arena_); }

	// Main thread, before the threads start: registration goes through the context's lock.
	int setup()
	{
		if (!arena_)
			return -ENOMEM;
		std::memset(arena_, 0, arena_bytes_);
		return gio_ctx_register(sh_.ctx, arena_, arena_bytes_, &arena_addr_);
	}

	void run()
	{
		while (done_ < quota_ && !sh_.abort.load(std::memory_order_relaxed)) {
			if (!batch()) {
				sh_.abort.store(true);
				break;
			}
			sh_.progress.fetch_add(1, std::memory_order_relaxed);
		}
		sh_.finished.fetch_add(1);
	}

	const Stats &stats() const { return st_; }
	const std::string &error() const { return err_; }
	uint64_t done() const { return done_; }
	uint64_t quota() const { return quota_; }

private:
	Shared &sh_;
	const Section &sec_;
	uint32_t id_;
	uint64_t quota_, done_ = 0;
	Rng rng_;
	uint32_t region_;
	uint64_t base_lba_;
	std::vector<uint32_t> shadow_, wstamp_, rstamp_;
	uint32_t batch_no_ = 0, gen_ = 0;
	unsigned char *arena_ = nullptr;
	size_t arena_bytes_ = 0, slot_data_ = 0, big_data_ = 0, seg_area_ = 0;
	uint64_t arena_addr_ = 0;
	std::vector<unsigned char> scratch_;
	std::vector<Cmd> cmds_;
	struct Recent {
		uint64_t slba;
		uint32_t nblk;
	} recent_[16] = {};
	uint32_t nrecent_ = 0;
	Stats st_;
	std::string err_;

	uint64_t bus(const void *p) const { return arena_addr_ + (uint64_t)(static_cast<const unsigned char *>(p) - arena_); }
	unsigned char *slot_data(uint32_t j) { return arena_ + (size_t)j * slot_data_; }
	unsigned char *slot_list(uint32_t j) { return arena_ + (size_t)sec_.max_batch * slot_data_ + (size_t)j * kPage; }
	unsigned char *slot_seg(uint32_t j)
	{
		return arena_ + (size_t)sec_.max_batch * (slot_data_ + kPage) + (size_t)j * kSegBytes;
	}
	unsigned char *big_data() { return arena_ + (size_t)sec_.max_batch * (slot_data_ + kPage) + seg_area_; }
	unsigned char *big_list() { return big_data() + big_data_; }

	bool fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
	{
		char buf[1024];
		va_list ap;
		va_start(ap, fmt);
		std::vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		if (err_.empty())
			err_ = std::string("producer ") + std::to_string(id_) + ": " + buf;
		return false;
	}

	bool ring_fail(const char *what, int rc, const QpTrack &q, uint32_t idx)
	{
		const gio_qp_state &s = q.qp->last_timeout;
		return fail("%s on queue %u (depth %u), index %u: %d (%s); ring at the deadline: reserved %u committed %u rung %u "
			    "head %u cq head %u cid %d; %s",
			    what, q.qp->qid, q.depth, idx, rc, std::strerror(-rc), s.sq_reserved, s.sq_committed, s.sq_rung,
			    s.sq_head, s.cq_head, (int)s.cid, gio_last_error());
	}

	// Picks a range that does not conflict with the batch so far (NVMe does not order the
	// commands of one batch: no write may overlap anything else in it).
	bool pick(Cmd &c, bool want_write, uint32_t nblk, bool allow_recent)
	{
		for (int attempt = 0; attempt < 8; attempt++) {
			uint64_t slba;
			uint32_t n = nblk;
			if (!want_write && allow_recent && nrecent_ && rng_.chance(50)) { // read back a recent write
				const Recent &r = recent_[rng_.below(std::min<uint32_t>(nrecent_, 16))];
				slba = r.slba;
				n = std::min(r.nblk, sec_.max_blocks);
			} else {
				slba = rng_.below(region_ - n + 1);
			}
			bool ok = true;
			for (uint32_t i = 0; i < n && ok; i++)
				ok = wstamp_[slba + i] != batch_no_ && (!want_write || rstamp_[slba + i] != batch_no_);
			if (!ok)
				continue;
			for (uint32_t i = 0; i < n; i++)
				(want_write ? wstamp_ : rstamp_)[slba + i] = batch_no_;
			c.write = want_write;
			c.slba = slba;
			c.nblk = n;
			return true;
		}
		return false;
	}

	// Page-aligned data in whole pages goes straight to an O_DIRECT file; the rest through the
	// executor's bounce buffer. File sections use GIO_STRESS_DIRECT_PCT (default 50), memory
	// sections half and half.
	bool aligned() { return rng_.below(100) < (sec_.file ? sh_.direct_pct : 50); }

	// Lays out the data of command `c` in slot `j` and builds its data pointer.
	bool layout(Cmd &c, uint32_t j)
	{
		const uint32_t nbytes = c.nblk * kBlock;
		const bool prp = sec_.dptr == Dptr::PRP || (sec_.dptr == Dptr::BOTH && rng_.chance(50));
		gio_range ranges[kMaxPieces + 2];
		uint32_t n = 0;
		if (c.big) {
			// One contiguous range, dword offset: PRP1 plus a chained list of several pages.
			const uint32_t o = aligned() ? 0 : 4 * rng_.range(1, kPage / 4 - 1);
			c.pieces[0] = {big_data() + o, nbytes};
			c.npieces = 1;
		} else if (prp) {
			const uint32_t o = aligned() ? 0 : 4 * rng_.range(1, kPage / 4 - 1); // PRP1: dword aligned
			const uint32_t npages = (o + nbytes + kPage - 1) / kPage;
			const uint32_t slot_pages = (uint32_t)(slot_data_ / kPage);
			uint32_t pages[64];
			for (uint32_t i = 0; i < slot_pages; i++)
				pages[i] = i;
			if (rng_.chance(50)) // scattered pages, else contiguous
				for (uint32_t i = slot_pages - 1; i > 0; i--)
					std::swap(pages[i], pages[rng_.below(i + 1)]);
			uint32_t left = nbytes;
			c.npieces = 0;
			for (uint32_t i = 0; i < npages; i++) {
				const uint32_t off = i == 0 ? o : 0;
				const uint32_t len = std::min(left, kPage - off);
				c.pieces[c.npieces++] = {slot_data(j) + (size_t)pages[i] * kPage + off, len};
				left -= len;
			}
		} else if (rng_.chance(50)) {
			// One SGL Data Block at any byte offset (the target's SGLS has no dword rule).
			const uint32_t o = aligned() ? 0 : rng_.range(1, kPage - 1);
			c.pieces[0] = {slot_data(j) + o, nbytes};
			c.npieces = 1;
		} else {
			// Several ranges with gaps: a Last Segment of Data Blocks in registered memory.
			const uint32_t k = rng_.range(2, std::min<uint32_t>(kMaxPieces, nbytes));
			uint32_t cuts[kMaxPieces + 1];
			cuts[0] = 0;
			cuts[k] = nbytes;
			for (uint32_t i = 1; i < k; i++)
				cuts[i] = rng_.range(1, nbytes - 1);
			std::sort(cuts + 1, cuts + k);
			uint32_t pos = rng_.below(256);
			c.npieces = 0;
			for (uint32_t i = 0; i < k; i++) {
				const uint32_t len = cuts[i + 1] - cuts[i];
				if (len == 0)
					continue;
				c.pieces[c.npieces++] = {slot_data(j) + pos, len};
				pos += len + rng_.range(1, 64);
			}
		}
		for (uint32_t i = 0; i < c.npieces; i++) {
			ranges[n++] = {bus(c.pieces[i].p), c.pieces[i].len};
		}
		int rc;
		if (prp || c.big) {
			unsigned char *list = c.big ? big_list() : slot_list(j);
			const uint64_t list_bytes = c.big ? (uint64_t)kBigListPages * kPage : kPage;
			rc = gio_prp_build(&c.sqe, ranges, n, sh_.caps, reinterpret_cast<gio_prp_entry *>(list), bus(list),
					   list_bytes);
			if (rc < 0)
				return fail("gio_prp_build(%u ranges, %u bytes) = %d", n, nbytes, rc);
			st_.prp++;
			st_.prp_lists += rc ? 1 : 0;
			if (c.big && rc <= (int)kPage) // a chain fills its first list page and goes on
				return fail("a big transfer of %u pages used %d bytes of PRP list, expected a chain", c.nblk, rc);
		} else {
			unsigned char *seg = slot_seg(j);
			rc = gio_sgl_build(&c.sqe, ranges, n, sh_.caps, reinterpret_cast<gio_sgl_desc *>(seg), bus(seg), kSegBytes);
			if (rc < 0)
				return fail("gio_sgl_build(%u ranges, %u bytes) = %d", n, nbytes, rc);
			st_.sgl++;
			st_.sgl_segments += rc ? 1 : 0;
		}
		return true;
	}

	void expected(const Cmd &c, const std::vector<uint32_t> &gens)
	{
		for (uint32_t b = 0; b < c.nblk; b++)
			fill_block(&scratch_[(size_t)b * kBlock], sh_.section_id, id_, base_lba_ + c.slba + b, gens[b]);
	}

	void scatter(const Cmd &c)
	{
		size_t off = 0;
		for (uint32_t i = 0; i < c.npieces; i++) {
			std::memcpy(c.pieces[i].p, &scratch_[off], c.pieces[i].len);
			off += c.pieces[i].len;
		}
	}

	// The bytes around the pieces that a read must leave poisoned: up to kGuard on each side,
	// outside every piece and inside the command's memory.
	template <typename F> void guards(const Cmd &c, unsigned char *lo, unsigned char *hi, F f)
	{
		struct Span {
			size_t off, len;
		} s[kMaxPieces + 2];
		for (uint32_t i = 0; i < c.npieces; i++)
			s[i] = {(size_t)(c.pieces[i].p - lo), c.pieces[i].len};
		std::sort(s, s + c.npieces, [](const Span &a, const Span &b) { return a.off < b.off; });
		const size_t size = (size_t)(hi - lo);
		size_t prev_end = 0;
		for (uint32_t i = 0; i < c.npieces; i++) {
			const size_t from = std::max(prev_end, s[i].off > kGuard ? s[i].off - kGuard : 0);
			if (from < s[i].off)
				f(lo + from, s[i].off - from);
			const size_t end = s[i].off + s[i].len;
			const size_t next = i + 1 < c.npieces ? s[i + 1].off : size;
			const size_t to = std::min(end + kGuard, next);
			if (end < to)
				f(lo + end, to - end);
			prev_end = std::max(prev_end, to);
		}
	}

	void bounds(const Cmd &c, uint32_t j, unsigned char **lo, unsigned char **hi)
	{
		if (c.big) {
			*lo = big_data();
			*hi = big_data() + big_data_;
		} else {
			*lo = slot_data(j);
			*hi = slot_data(j) + slot_data_;
		}
	}

	void poison(const Cmd &c, uint32_t j)
	{
		unsigned char *lo, *hi;
		bounds(c, j, &lo, &hi);
		for (uint32_t i = 0; i < c.npieces; i++)
			std::memset(c.pieces[i].p, kPoison, c.pieces[i].len);
		guards(c, lo, hi, [](unsigned char *p, size_t n) { std::memset(p, kPoison, n); });
	}

	std::string describe(const unsigned char *got, uint64_t lba, uint32_t want_gen)
	{
		std::vector<unsigned char> blk(kBlock);
		bool all_poison = true, all_zero = true;
		for (uint32_t i = 0; i < kBlock; i++) {
			all_poison = all_poison && got[i] == kPoison;
			all_zero = all_zero && got[i] == 0;
		}
		if (all_poison)
			return "untouched poison (no data arrived)";
		if (all_zero)
			return "zeros";
		for (uint32_t g = want_gen > 64 ? want_gen - 64 : 0; g <= want_gen + 64; g++) {
			fill_block(blk.data(), sh_.section_id, id_, lba, g);
			if (!std::memcmp(blk.data(), got, kBlock))
				return "generation " + std::to_string(g) + " of this block";
		}
		return "unrecognised data (another thread's, another block's, or torn)";
	}

	bool verify_read(const Cmd &c, uint32_t j)
	{
		size_t off = 0;
		for (uint32_t i = 0; i < c.npieces; i++) {
			if (std::memcmp(c.pieces[i].p, &scratch_[off], c.pieces[i].len)) {
				// Gather the logical stream to name the first bad block.
				std::vector<unsigned char> got(scratch_.size());
				size_t o = 0;
				for (uint32_t k = 0; k < c.npieces; k++) {
					std::memcpy(&got[o], c.pieces[k].p, c.pieces[k].len);
					o += c.pieces[k].len;
				}
				for (uint32_t b = 0; b < c.nblk; b++) {
					if (std::memcmp(&got[(size_t)b * kBlock], &scratch_[(size_t)b * kBlock], kBlock)) {
						uint32_t first = 0;
						while (got[(size_t)b * kBlock + first] == scratch_[(size_t)b * kBlock + first])
							first++;
						const uint64_t lba = base_lba_ + c.slba + b;
						return fail("read of LBA %" PRIu64 "+%u (%u pieces): block %" PRIu64
							    " differs from byte %u: want generation %u, got %s",
							    base_lba_ + c.slba, c.nblk, c.npieces, lba, first, shadow_[c.slba + b],
							    describe(&got[(size_t)b * kBlock], lba, shadow_[c.slba + b]).c_str());
					}
				}
				return fail("read of LBA %" PRIu64 "+%u: mismatch", base_lba_ + c.slba, c.nblk);
			}
			off += c.pieces[i].len;
		}
		unsigned char *lo, *hi;
		bounds(c, j, &lo, &hi);
		bool clean = true;
		guards(c, lo, hi, [&](unsigned char *p, size_t n) {
			for (size_t i = 0; i < n && clean; i++)
				clean = p[i] == kPoison;
		});
		if (!clean)
			return fail("read of LBA %" PRIu64 "+%u wrote outside its %u data ranges", base_lba_ + c.slba, c.nblk,
				    c.npieces);
		return true;
	}

	// Claims index `idx` of queue pair `q` for a command (before commit).
	void claim(QpTrack &q, uint32_t idx)
	{
		const uint32_t cid = idx & (q.depth - 1);
		const uint32_t prev = __atomic_exchange_n(&q.owner[cid], idx + 1, __ATOMIC_ACQ_REL);
		// The previous holder of this CID must be the same slot exactly one lap earlier; or some
		// whole laps earlier once gio_qp_submit_wait (whose indices are not recorded) has run on
		// this queue pair. (Its counter goes up before its reservation, which precedes ours.)
		const uint32_t lap = idx >= q.depth ? idx - q.depth + 1 : 0;
		const bool ok = q.submit_waits.load() == 0
					? prev == lap
					: prev == 0 || (prev - 1 < idx && ((idx - (prev - 1)) & (q.depth - 1)) == 0);
		if (!ok)
			q.note(q.bad_owner, "CID %u given to index %u while its owner was index %d", cid, idx, (int)prev - 1);
		if (idx >= q.nidx || __atomic_fetch_add(&q.reserved[idx], 1, __ATOMIC_RELAXED) != 0)
			q.note(q.bad_count, "index %u reserved twice", idx);
	}

	void collected(QpTrack &q, uint32_t idx)
	{
		if (idx >= q.nidx || __atomic_fetch_add(&q.completed[idx], 1, __ATOMIC_RELAXED) != 0)
			q.note(q.bad_count, "index %u completed twice", idx);
		else if (__atomic_load_n(&q.reserved[idx], __ATOMIC_RELAXED) != 1)
			q.note(q.bad_count, "index %u completed but reserved %u times", idx,
			       __atomic_load_n(&q.reserved[idx], __ATOMIC_RELAXED));
	}

	// Polling batches: instead of sitting in gio_qp_reserve_wait and gio_qp_wait, the producer
	// retries gio_qp_reserve and reaps with gio_qp_reap itself, pausing, yielding, then sleeping
	// 20 us, and calls the library's waits once the ring is ready (an engine that polls its
	// rings from an event loop). Commits always go through the library's ordered wait.
	static void backoff(uint32_t spins)
	{
		if (spins < 16) {
			gio_cpu_relax();
		} else if (spins < 256) {
			sched_yield();
		} else {
			const timespec ts = {0, 20000};
			nanosleep(&ts, nullptr);
		}
	}

	int reserve(QpTrack &q, uint32_t n, uint64_t deadline, uint32_t *first, bool poll)
	{
		int rc = -EBUSY;
		if (sec_.try_reserve_first || poll) {
			rc = gio_qp_reserve(q.qp, n, first);
			if (rc != -EBUSY)
				return rc;
			q.ebusy.fetch_add(1, std::memory_order_relaxed);
			st_.ebusy++;
		}
		for (uint32_t spins = 0; poll && !gio_deadline_passed(deadline); spins++) {
			if (!gio_qp_reap(q.qp))
				backoff(spins);
			rc = gio_qp_reserve(q.qp, n, first);
			if (rc != -EBUSY)
				return rc;
		}
		return gio_qp_reserve_wait(q.qp, n, deadline, first);
	}

	static void settle_wait(const QpTrack &q, uint32_t cid, uint64_t deadline)
	{
		for (uint32_t spins = 0; gio_cmd_state(gio_load_acquire(&q.qp->slots[cid].state)) != GIO_CMD_DONE; spins++) {
			if (gio_qp_reap(q.qp))
				continue;
			if (gio_deadline_passed(deadline))
				return;
			backoff(spins);
		}
	}

	bool batch()
	{
		batch_no_++;
		st_.batches++;
		QpTrack &q = *sh_.qps[rng_.below((uint32_t)sh_.qps.size())];
		uint32_t want = rng_.range(1, sec_.max_batch);
		want = (uint32_t)std::min<uint64_t>(want, quota_ - done_);
		want = std::min(want, q.depth - 1); // a reservation holds at most depth - 1 entries
		const bool big = sec_.big_per_mille && rng_.below(1000) < sec_.big_per_mille;
		uint32_t n = 0;
		std::vector<uint32_t> gens;
		for (uint32_t j = 0; j < want; j++) {
			Cmd &c = cmds_[n];
			c.big = big && j == 0;
			const uint32_t nblk = c.big ? rng_.range(kBigMin, std::min(kBigMax, region_)) : rng_.range(1, sec_.max_blocks);
			if (!pick(c, rng_.chance(50), nblk, !c.big))
				continue;
			const int rc = c.write ? gio_prep_write(&c.sqe, sh_.nsid, base_lba_ + c.slba, c.nblk)
					       : gio_prep_read(&c.sqe, sh_.nsid, base_lba_ + c.slba, c.nblk);
			if (rc)
				return fail("gio_prep_%s(%" PRIu64 ", %u) = %d", c.write ? "write" : "read", c.slba, c.nblk, rc);
			if (!layout(c, n))
				return false;
			if (c.write) {
				c.gen = ++gen_;
				gens.assign(c.nblk, c.gen);
				expected(c, gens);
				scatter(c);
			} else {
				poison(c, n);
			}
			n++;
		}
		if (n == 0)
			return true;

		uint16_t status = 0;
		const bool poll = rng_.below(100) < sh_.poll_pct;
		if (n == 1 && !poll && rng_.below(100) < sec_.submit_wait_pct) {
			q.submit_waits.fetch_add(1); // before: the next lap of its slot may follow at once
			const int rc = gio_qp_submit_wait(q.qp, &cmds_[0].sqe, sh_.deadline_ns, &status, nullptr);
			st_.submit_waits++;
			if (rc == -EIO)
				return fail("gio_qp_submit_wait: %s of LBA %" PRIu64 "+%u: status 0x%04x (%s)",
					    cmds_[0].write ? "write" : "read", base_lba_ + cmds_[0].slba, cmds_[0].nblk, status,
					    gio_status_str(status));
			if (rc)
				return ring_fail("gio_qp_submit_wait", rc, q, 0xffffffffu);
			if (status)
				return fail("gio_qp_submit_wait: status 0x%04x (%s)", status, gio_status_str(status));
		} else {
			const uint64_t deadline = gio_deadline_in(sh_.deadline_ns);
			st_.polled += poll;
			uint32_t first = 0;
			int rc = reserve(q, n, deadline, &first, poll);
			if (rc)
				return ring_fail("gio_qp_reserve_wait", rc, q, 0xffffffffu);
			for (uint32_t i = 0; i < n; i++) {
				cmds_[i].idx = first + i;
				claim(q, first + i);
				rc = gio_qp_put(q.qp, first + i, &cmds_[i].sqe, first + i, 0);
				if (rc)
					return ring_fail("gio_qp_put", rc, q, first + i);
			}
			// Always the library's publication: ringing the doorbell here would hide a
			// publication bug.
			gio_qp_publish(q.qp);
			// Wait in a random order: a waiter reaps for the others.
			uint32_t order[64];
			for (uint32_t i = 0; i < n; i++)
				order[i] = i;
			for (uint32_t i = n - 1; i > 0; i--)
				std::swap(order[i], order[rng_.below(i + 1)]);
			for (uint32_t k = 0; k < n; k++) {
				const Cmd &c = cmds_[order[k]];
				status = 0xffff;
				if (poll)
					settle_wait(q, c.idx & (q.depth - 1), deadline);
				rc = gio_qp_wait(q.qp, c.idx, deadline, &status, nullptr);
				if (rc == -EIO)
					return fail("index %u (%s of LBA %" PRIu64 "+%u): status 0x%04x (%s)", c.idx,
						    c.write ? "write" : "read", base_lba_ + c.slba, c.nblk, status,
						    gio_status_str(status));
				if (rc)
					return ring_fail("gio_qp_wait", rc, q, c.idx);
				collected(q, c.idx);
				if (status)
					return fail("index %u: status 0x%04x (%s)", c.idx, status, gio_status_str(status));
			}
		}

		// Every command of the batch completed: writes now hold their generation; reads must
		// show the shadow map's.
		for (uint32_t j = 0; j < n; j++) {
			const Cmd &c = cmds_[j];
			st_.commands++;
			st_.bytes += (uint64_t)c.nblk * kBlock;
			st_.big += c.big;
			if (c.write) {
				st_.writes++;
				for (uint32_t b = 0; b < c.nblk; b++)
					shadow_[c.slba + b] = c.gen;
				recent_[nrecent_++ % 16] = {c.slba, c.nblk};
			} else {
				st_.reads++;
				gens.assign(shadow_.begin() + (long)c.slba, shadow_.begin() + (long)(c.slba + c.nblk));
				expected(c, gens);
				if (!verify_read(c, j))
					return false;
			}
		}
		done_ += n;
		return true;
	}
};

struct Totals {
	uint64_t commands = 0;
	double seconds = 0;
};

Totals &totals()
{
	static Totals t;
	return t;
}

template <typename T> T peek(const T *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

// The ring as its memory shows it, for a stall report: indices, doorbells, command slots and
// the CQ entries (phase, CID, SQ head).
void dump_ring(const QpTrack &q)
{
	const gio_qp *qp = q.qp;
	std::fprintf(stderr,
		     "  queue %u depth %u: reserved %u committed %u rung %u sq_head %u cq_head %u stray %u; doorbells: "
		     "sq tail %u cq head %u\n   slots:",
		     qp->qid, q.depth, peek(&qp->sq_reserved), peek(&qp->sq_committed), peek(&qp->sq_rung),
		     peek(&qp->sq_head), peek(&qp->cq_head), peek(&qp->stray_cqes), peek(qp->sq_db), peek(qp->cq_db));
	for (uint32_t i = 0; i < q.depth && i < 64; i++)
		std::fprintf(stderr, " %u:%u(owner %d)", i, peek(&qp->slots[i].state), (int)peek(&q.owner[i]) - 1);
	std::fprintf(stderr, "\n   cq (expected phase %u at %u):", 1u ^ ((peek(&qp->cq_head) >> qp->cq_shift) & 1u),
		     peek(&qp->cq_head) & (qp->cq_depth - 1));
	for (uint32_t i = 0; i < qp->cq_depth && i < 64; i++)
		std::fprintf(stderr, " %u:[p%u cid %u sqhd %u st 0x%x]", i, peek(&qp->cq[i].status) & 1u, peek(&qp->cq[i].cid),
			     peek(&qp->cq[i].sqhd), peek(&qp->cq[i].status) >> 1);
	std::fprintf(stderr, "\n");
}

// Waits for the producers; when none has completed a batch for GIO_STRESS_STALL_S seconds
// (default 30), prints every ring's state once and runs GIO_STRESS_STALL_CMD if set (a shell
// command; $PID is this process: e.g. gdb -p $PID -batch -ex 'thread apply all bt'), so that a
// hang is diagnosed before the deadlines fire. No progress for a minute past the deadline means
// a wait ignored its deadline: the test aborts with the rings' state.
void watch(Shared &sh, uint32_t producers)
{
	const uint64_t stall_s = env_u64("GIO_STRESS_STALL_S", 30);
	const uint64_t hang_s = sh.deadline_ns / 1000000000ull + 60;
	uint64_t last = sh.progress.load(), still = 0;
	bool reported = false;
	while (sh.finished.load() < producers) {
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		const uint64_t now = sh.progress.load();
		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= hang_s * 100) {
			// Every wait has a deadline (invariant 8): by now each waiter has had its -ETIME.
			std::fprintf(stderr, "stress: %s: no batch completed for %" PRIu64 " s, past every deadline: a wait "
					     "ignores its deadline; aborting\n", sh.sec->name.c_str(), hang_s);
			for (auto &q : sh.qps)
				dump_ring(*q);
			std::fflush(stderr);
			std::abort();
		}
		if (reported || still < stall_s * 100)
			continue;
		reported = true;
		std::fprintf(stderr, "stress: %s: no batch completed for %" PRIu64 " s; rings:\n", sh.sec->name.c_str(),
			     stall_s);
		for (auto &q : sh.qps)
			dump_ring(*q);
		if (const char *cmd = std::getenv("GIO_STRESS_STALL_CMD")) {
			setenv("PID", std::to_string(getpid()).c_str(), 1);
			if (std::system(cmd) != 0)
				std::fprintf(stderr, "stress: GIO_STRESS_STALL_CMD failed\n");
		}
		std::fflush(stderr);
	}
}

void run_section(const Section &sec, uint32_t section_id)
{
	INFO("section: " << sec.name);
	const uint64_t exec_threads = env_u64("GIO_STRESS_EXEC", 2);
	const uint64_t seed = env_u64("GIO_STRESS_SEED", 1);
	TempDir tmp;
	REQUIRE(!tmp.dir.empty());
	const uint64_t size = (uint64_t)sec.producers * sec.region_blocks * kBlock;
	char uri[4600];
	std::snprintf(uri, sizeof(uri), "%s%s?size=%" PRIu64 "&threads=%" PRIu64 "&queues=%zu&sgls=%u&mdts=%u%s%s",
		      sec.file ? "file://" : "mem://host", sec.file ? (tmp.dir + "/x.img").c_str() : "", size,
		      exec_threads, sec.depths.size(), sec.sgls, sec.big_per_mille ? 11u : 7u,
		      sec.file ? "&direct=" : "", sec.file ? sec.direct : "");
	INFO("uri: " << uri);
	if (sec.file) {
		// Allocate every block up front (zeros): O_DIRECT writes into a sparse file allocate
		// blocks and commit the journal, which makes their latency swing by orders of magnitude
		// on a CI VM; overwrites of allocated blocks do not.
		REQUIRE(preallocate(tmp.dir + "/x.img", size));
	}
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open(uri, &ctx) == 0);
	std::unique_ptr<gio_ctx, int (*)(gio_ctx *)> closer(ctx, gio_ctx_close);

	Shared sh;
	sh.sec = &sec;
	sh.section_id = section_id;
	sh.ctx = ctx;
	sh.caps = gio_ctx_dptr_caps(ctx);
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	REQUIRE(info.lba_bytes == kBlock);
	sh.nsid = info.nsid;
	sh.deadline_ns = env_u64("GIO_STRESS_DEADLINE_S", 120) * 1000000000ull;
	sh.poll_pct = (uint32_t)std::min<uint64_t>(100, env_u64("GIO_STRESS_POLL_PCT", 10));
	sh.direct_pct = (uint32_t)std::min<uint64_t>(100, env_u64("GIO_STRESS_DIRECT_PCT", 50));
	for (uint32_t d : sec.depths) {
		auto q = std::make_unique<QpTrack>();
		REQUIRE(gio_ctx_qp_create(ctx, d, &q->qp) == 0);
		q->depth = d;
		q->owner.reset(new uint32_t[d]());
		q->nidx = sec.commands + (uint64_t)sec.producers * sec.max_batch + 1;
		q->reserved.reset(new uint8_t[q->nidx]());
		q->completed.reset(new uint8_t[q->nidx]());
		sh.qps.push_back(std::move(q));
	}

	const uint64_t per = (sec.commands + sec.producers - 1) / sec.producers;
	std::vector<std::unique_ptr<Producer>> ps;
	for (uint32_t i = 0; i < sec.producers; i++) {
		ps.push_back(std::make_unique<Producer>(sh, i, per, splitmix(seed ^ ((uint64_t)section_id << 32) ^ i)));
		INFO("producer " << i << ": " << gio_last_error());
		REQUIRE(ps.back()->setup() == 0);
	}

	const auto t0 = std::chrono::steady_clock::now();
	std::vector<std::thread> threads;
	for (auto &p : ps)
		threads.emplace_back([&p] { p->run(); });
	watch(sh, (uint32_t)ps.size());
	for (auto &t : threads)
		t.join();
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	Stats all;
	std::string errors;
	for (auto &p : ps) {
		all.add(p->stats());
		if (!p->error().empty())
			errors += p->error() + "\n";
	}
	uint64_t ebusy = 0;
	for (auto &q : sh.qps)
		ebusy += q->ebusy.load();
	std::printf("stress: %-58s %8" PRIu64 " commands %7.2f s %9.0f commands/s  (%" PRIu64 " writes, %" PRIu64
		    " reads, %.0f MiB, %" PRIu64 " batches, %" PRIu64 " submit_wait, %" PRIu64 " SGL [%" PRIu64
		    " with segments], %" PRIu64 " PRP [%" PRIu64
		    " with lists, %" PRIu64 " big], %" PRIu64 " -EBUSY, %" PRIu64 " polling batches)\n",
		    sec.name.c_str(), all.commands, secs, all.commands / (secs > 0 ? secs : 1), all.writes, all.reads,
		    all.bytes / 1048576.0, all.batches, all.submit_waits, all.sgl, all.sgl_segments, all.prp,
		    all.prp_lists, all.big, ebusy, all.polled);
	std::fflush(stdout);
	totals().commands += all.commands;
	totals().seconds += secs;

	INFO(errors);
	REQUIRE(errors.empty());
	for (auto &p : ps)
		CHECK(p->done() == p->quota());
	CHECK(all.commands == per * sec.producers);

	// Ring state: every command reserved, committed, rung, fetched and completed exactly once.
	uint64_t total_cq = 0;
	for (auto &q : sh.qps) {
		const gio_qp *qp = q->qp;
		INFO("queue " << qp->qid << " depth " << q->depth << ": " << q->first_bad);
		CHECK(qp->stray_cqes == 0);
		CHECK(qp->sq_cancelled == 0);
		CHECK(q->bad_owner.load() == 0);
		CHECK(q->bad_count.load() == 0);
		CHECK(qp->sq_committed == qp->sq_reserved);
		CHECK(qp->sq_rung == qp->sq_reserved);
		CHECK(qp->sq_head == qp->sq_reserved);
		CHECK(qp->cq_head == qp->sq_reserved);
		CHECK(*qp->sq_db == (qp->sq_reserved & (q->depth - 1)));
		CHECK(*qp->cq_db == (qp->cq_head & (q->depth - 1)));
		uint32_t busy = 0;
		for (uint32_t s = 0; s < q->depth; s++)
			busy += gio_cmd_state(qp->slots[s].state) != GIO_CMD_FREE;
		CHECK(busy == 0);
		uint64_t tracked = 0, bad = 0;
		for (uint64_t i = 0; i < q->nidx; i++) {
			if (q->reserved[i] || q->completed[i]) {
				tracked++;
				bad += q->reserved[i] != 1 || q->completed[i] != 1;
			}
		}
		CHECK(bad == 0);
		CHECK(tracked + q->submit_waits.load() == qp->sq_reserved);
		total_cq += qp->cq_head;
		if (sec.try_reserve_first && sec.producers > q->depth && qp->sq_reserved >= 2000)
			CHECK(q->ebusy.load() > 0); // the ring was full, and reserve said so
	}
	CHECK(total_cq == all.commands);
	CHECK(gio_ctx_close(closer.release()) == 0);
}

struct Plan {
	uint64_t total;
	uint32_t threads;
};

Plan plan()
{
	Plan p;
	p.total = env_u64("GIO_STRESS_COMMANDS", 1000000);
	p.threads = (uint32_t)std::max<uint64_t>(1, env_u64("GIO_STRESS_THREADS", 8));
	return p;
}

uint64_t share(const Plan &p, uint32_t percent) { return std::max<uint64_t>(1, p.total * percent / 100); }

} // namespace

// The sections add up to GIO_STRESS_COMMANDS commands (default 10^6).
TEST_CASE("stress: file target, many producers x queue pairs of depth 8 and 64, SGL", "[stress][sgl][io_uring]")
{
	const Plan p = plan();
	Section s{"file SGL: " + std::to_string(p.threads) + " producers x 4 qps (depth 8,64,8,64), batches 1-8",
		  true, {8, 64, 8, 64}, p.threads, share(p, 35), 8, 8, 1024, Dptr::SGL, 1, 5, false, 0};
	run_section(s, 1);
}

TEST_CASE("stress: file target, PRP-only controller, PRP lists and chained lists", "[stress][prp][io_uring]")
{
	const Plan p = plan();
	Section s{"file PRP: " + std::to_string(p.threads) + " producers x 3 qps (depth 64,8,16), chained lists",
		  true, {64, 8, 16}, p.threads, share(p, 20), 6, 8, 2048, Dptr::PRP, 0, 5, false, 2};
	run_section(s, 2);
}

TEST_CASE("stress: full ring, more producers than slots on one queue pair", "[stress][full][io_uring]")
{
	const Plan p = plan();
	const uint32_t producers = std::max<uint32_t>(12, p.threads);
	Section s{"full ring: " + std::to_string(producers) + " producers x 1 qp (depth 8), page cache", true,
		  {8}, producers, share(p, 15), 4, 4, 256, Dptr::BOTH, 1, 10, true, 0, "0"};
	run_section(s, 3);
}

TEST_CASE("stress: depth-2 rings (one command in flight) and gio_qp_submit_wait", "[stress][tiny][io_uring]")
{
	const Plan p = plan();
	const uint32_t producers = std::max<uint32_t>(4, p.threads / 2);
	Section s{"tiny rings: " + std::to_string(producers) + " producers x 2 qps (depth 2), page cache", true,
		  {2, 2}, producers, share(p, 5), 1, 4, 256, Dptr::BOTH, 1, 50, true, 0, "0"};
	run_section(s, 4);
}

TEST_CASE("stress: memory target, many producers x many queue pairs, SGL+PRP", "[stress][mem]")
{
	const Plan p = plan();
	Section s{"mem SGL+PRP: " + std::to_string(p.threads) + " producers x 8 qps (depth 8..256)", false,
		  {8, 64, 8, 256, 8, 64, 16, 32}, p.threads, share(p, 25), 8, 8, 1024, Dptr::BOTH, 1, 5, false, 0};
	run_section(s, 5);
	std::printf("stress: %-58s %8" PRIu64 " commands %7.2f s %9.0f commands/s\n", "all sections",
		    totals().commands, totals().seconds, totals().commands / (totals().seconds > 0 ? totals().seconds : 1));
	std::fflush(stdout);
}

// Invariant 8 (every wait has a deadline) for a waiter that tries again after -ETIME, as a
// caller may do with an abandoned command: the second gio_qp_wait must also return by its
// deadline. Kept last in this file: when the wait does not return, its thread keeps spinning
// (and its context stays open) until the process exits.
TEST_CASE("stress: a second gio_qp_wait on an abandoned command returns by its deadline", "[stress][deadline]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	void *buf = aligned_alloc(kPage, kPage);
	REQUIRE(buf != nullptr);
	uint64_t addr = 0;
	REQUIRE(gio_ctx_register(ctx, buf, kPage, &addr) == 0);
	gio_fault f{};
	f.drop_nth = 1; // the next command never completes
	gio_ctx_inject(ctx, &f);

	uint32_t idx = 0;
	REQUIRE(gio_qp_reserve_wait(qp, 1, gio_deadline_in(5000000000ull), &idx) == 0);
	gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
	gio_sqe_set_sgl_data(&sqe, addr, kPage);
	REQUIRE(gio_qp_put(qp, idx, &sqe, 0, 0) == 0);
	gio_qp_publish(qp);
	const uint32_t cid = idx & (qp->sq_depth - 1);
	CHECK(gio_qp_wait(qp, idx, gio_deadline_in(50000000ull), nullptr, nullptr) == -ETIME);
	CHECK(gio_cmd_state(qp->slots[cid].state) == GIO_CMD_ABANDONED);

	// Again, from another thread, so that a wait that never returns fails the test instead of
	// hanging it.
	auto done = std::make_shared<std::atomic<int>>(1);
	auto rc = std::make_shared<std::atomic<int>>(0);
	std::thread waiter([qp, idx, done, rc] {
		rc->store(gio_qp_wait(qp, idx, gio_deadline_in(50000000ull), nullptr, nullptr));
		done->store(0);
	});
	const uint64_t t0 = gio_now_ns();
	while (done->load() && gio_now_ns() - t0 < 2000000000ull)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	INFO("gio_qp_wait with a 50 ms deadline on an abandoned command (slot state "
	     << peek(&qp->slots[cid].state) << ") has not returned after 2 s");
	CHECK(done->load() == 0);
	if (done->load()) {
		waiter.detach(); // spins until exit; ctx and buf stay allocated for it
		return;
	}
	waiter.join();
	CHECK(rc->load() == -ETIME);
	gio_ctx_inject(ctx, nullptr);
	CHECK(gio_ctx_close(ctx) == 0);
	free(buf);
}
