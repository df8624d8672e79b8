// The process's pinned-memory cache (src/cuda/pinned.h): a block given back is kept, with no
// release, and served again, zeroed, to a request of the same allocator that it fits without
// wasting more than half of it; gio_cuda_trim() releases exactly the cached blocks and reports
// their bytes; gio_cuda_cached_bytes() follows. Stand-in allocators (malloc), no GPU.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <giouring/host/ctx.h>

#include "../src/cuda/pinned.h"

namespace {

std::atomic<int> allocs{0}, releases{0};
std::atomic<int> fail_release{0};

int fake_alloc(void **p, size_t len)
{
	*p = std::malloc(len);
	if (!*p)
		return 2; // cudaErrorMemoryAllocation
	std::memset(*p, 0xa5, len); // what a fresh pinned block may hold: the cache zeroes it
	allocs++;
	return 0;
}

int fake_release(void *p, size_t)
{
	if (fail_release.load())
		return 709; // cudaErrorContextIsDestroyed
	std::free(p);
	releases++;
	return 0;
}

int refusing_alloc(void **p, size_t)
{
	*p = nullptr;
	return 2;
}

const gio__pinned_ops ops_a = {"test allocator a", fake_alloc, fake_release};
const gio__pinned_ops ops_b = {"test allocator b", fake_alloc, fake_release};
const gio__pinned_ops ops_tracked = {"test registrations", nullptr, fake_release};
const gio__pinned_ops ops_refusing = {"test allocator that refuses", refusing_alloc, fake_release};

bool zero(const void *p, size_t len)
{
	const unsigned char *b = static_cast<const unsigned char *>(p);
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

// Every test starts from an empty cache.
void reset()
{
	fail_release = 0;
	gio_cuda_trim();
	allocs = 0;
	releases = 0;
}

} // namespace

TEST_CASE("pinned cache: a block given back is served again, zeroed, without an allocation")
{
	reset();
	int e = -5;
	void *p = gio__pinned_get(&ops_a, 4096, &e);
	REQUIRE(p);
	CHECK(e == 0);
	CHECK(zero(p, 4096));
	CHECK(allocs == 1);
	std::memset(p, 0x5a, 4096);
	CHECK(gio_cuda_cached_bytes() == 0);
	REQUIRE(gio__pinned_put(p) == 0);
	CHECK(gio_cuda_cached_bytes() == 4096);
	CHECK(releases == 0); // no release on the way back
	void *q = gio__pinned_get(&ops_a, 4096, &e);
	CHECK(q == p);
	CHECK(zero(q, 4096));
	CHECK(allocs == 1);
	CHECK(gio_cuda_cached_bytes() == 0);
	REQUIRE(gio__pinned_put(q) == 0);
	CHECK(gio_cuda_trim() == 4096);
	CHECK(releases == 1);
	CHECK(gio_cuda_cached_bytes() == 0);
	CHECK(std::string(gio_last_error()).empty());
}

TEST_CASE("pinned cache: the smallest block that fits, never one wasting more than half")
{
	reset();
	int e;
	void *small = gio__pinned_get(&ops_a, 4096, &e), *large = gio__pinned_get(&ops_a, 16384, &e);
	REQUIRE(small);
	REQUIRE(large);
	REQUIRE(gio__pinned_put(small) == 0);
	REQUIRE(gio__pinned_put(large) == 0);
	CHECK(gio_cuda_cached_bytes() == 4096 + 16384);
	void *a = gio__pinned_get(&ops_a, 3000, &e); // both fit: the smaller
	CHECK(a == small);
	CHECK(zero(a, 3000));
	void *b = gio__pinned_get(&ops_a, 3000, &e); // 16384 would waste more than half: a new block
	CHECK(b != large);
	CHECK(allocs == 3);
	void *c = gio__pinned_get(&ops_a, 8192, &e); // exactly half of 16384 used: fits
	CHECK(c == large);
	void *d = gio__pinned_get(&ops_a, 20000, &e); // nothing holds it: a new block
	CHECK(d != nullptr);
	CHECK(allocs == 4);
	for (void *p : {a, b, c, d})
		REQUIRE(gio__pinned_put(p) == 0);
	CHECK(gio_cuda_trim() == 4096 + 3000 + 16384 + 20000);
	CHECK(releases == 4);
}

TEST_CASE("pinned cache: blocks go back only to requests of the allocator that made them")
{
	reset();
	int e;
	void *p = gio__pinned_get(&ops_a, 8192, &e);
	REQUIRE(p);
	REQUIRE(gio__pinned_put(p) == 0);
	void *q = gio__pinned_get(&ops_b, 8192, &e);
	CHECK(q != p);
	CHECK(allocs == 2);
	REQUIRE(gio__pinned_put(q) == 0);
	CHECK(gio_cuda_trim() == 2 * 8192);
}

TEST_CASE("pinned cache: tracked blocks (registrations) are cached at put and reused, never allocated")
{
	reset();
	int e = -5;
	CHECK(gio__pinned_get(&ops_tracked, 16384, &e) == nullptr); // nothing cached, no allocator
	CHECK(e == 0);
	void *mine = std::malloc(16384);
	REQUIRE(mine);
	REQUIRE(gio__pinned_track(&ops_tracked, mine, 16384) == 0);
	CHECK(gio_cuda_cached_bytes() == 0); // in use
	std::memset(mine, 1, 16384);
	REQUIRE(gio__pinned_put(mine) == 0);
	CHECK(gio_cuda_cached_bytes() == 16384);
	void *again = gio__pinned_get(&ops_tracked, 16384, &e);
	CHECK(again == mine);
	CHECK(zero(again, 16384));
	// A registration that failed: its record goes, the memory stays the caller's.
	void *other = std::malloc(4096);
	REQUIRE(gio__pinned_track(&ops_tracked, other, 4096) == 0);
	CHECK(gio__pinned_forget(other) == 0);
	CHECK(gio__pinned_forget(other) == -ENOENT);
	CHECK(gio__pinned_put(other) == -ENOENT);
	std::free(other);
	REQUIRE(gio__pinned_put(again) == 0);
	CHECK(gio_cuda_trim() == 16384);
	CHECK(releases == 1);
	CHECK(allocs == 0);
}

TEST_CASE("pinned cache: misuse is refused, blocks in use are never released")
{
	reset();
	int e;
	int stack = 0;
	CHECK(gio__pinned_put(nullptr) == -ENOENT);
	CHECK(gio__pinned_put(&stack) == -ENOENT);
	void *p = gio__pinned_get(&ops_a, 4096, &e), *inuse = gio__pinned_get(&ops_a, 4096, &e);
	REQUIRE(p);
	REQUIRE(inuse);
	REQUIRE(gio__pinned_put(p) == 0);
	CHECK(gio__pinned_put(p) == -ENOENT); // given back twice
	CHECK(gio_cuda_trim() == 4096);
	CHECK(releases == 1);
	CHECK(gio_cuda_trim() == 0);
	REQUIRE(gio__pinned_put(inuse) == 0); // still tracked after the trims
	CHECK(gio_cuda_trim() == 4096);
}

TEST_CASE("pinned cache: an allocator's error reaches the caller; a refused release is reported")
{
	reset();
	int e = 0;
	CHECK(gio__pinned_get(&ops_refusing, 4096, &e) == nullptr);
	CHECK(e == 2);
	void *p = gio__pinned_get(&ops_a, 4096, &e);
	REQUIRE(p);
	REQUIRE(gio__pinned_put(p) == 0);
	fail_release = 1;
	CHECK(gio_cuda_trim() == 0);
	const std::string m = gio_last_error();
	CHECK(m.find("gio_cuda_trim: 1 cached blocks could not be released") != std::string::npos);
	CHECK(m.find("test allocator a") != std::string::npos);
	CHECK(gio_cuda_cached_bytes() == 0); // forgotten
	fail_release = 0;
	std::free(p); // what the stand-in's refused release left
}

TEST_CASE("pinned cache: threads taking and giving back at once get distinct blocks")
{
	reset();
	std::vector<std::thread> ts;
	std::atomic<int> bad{0};
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			for (int i = 0; i < 2000; i++) {
				int e;
				const size_t len = 1024u << ((i + t) % 3);
				unsigned char *p = static_cast<unsigned char *>(gio__pinned_get(&ops_a, len, &e));
				if (!p || !zero(p, len)) {
					bad++;
					continue;
				}
				std::memset(p, t + 1, len); // a block shared by two threads would show here
				for (size_t k = 0; k < len; k += 97)
					if (p[k] != t + 1)
						bad++;
				if (gio__pinned_put(p))
					bad++;
			}
		});
	for (auto &t : ts)
		t.join();
	CHECK(bad == 0);
	CHECK(allocs <= 4 * 3); // at most a block per thread and size class
	const size_t cached = gio_cuda_cached_bytes();
	CHECK(gio_cuda_trim() == cached);
	CHECK(releases == allocs);
}
