// giouring-store (tools/giouring_store.c) over a store the library wrote to file:// targets: show's
// superblocks, counts and entries; check clean in any target order; then bytes damaged in the
// files as a crash or a bad disk would (a duplicate VALID entry with an equal and then a higher
// sequence, a torn entry, a damaged superblock), each named by device and slot with exit status 1
// and the duplicate resolved as the library's own open resolves it (and then written FREE by
// that open, so a second check finds none); a missing file and usage
// errors exit 2; a store of 512-byte blocks read with lba=512 (clean) and without (each device a
// problem naming both block sizes). Runs the program it was built with (GIO_STORE_TOOL).
// [io_uring]: file targets.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>

namespace {

const uint32_t kLayers = 4;
const uint64_t kObject = 3000;
const uint64_t kChunk = kLayers * kObject;
const uint64_t kPool = 0x5eed5eed5eedull;
const uint32_t kDevices = 3;
const uint32_t kBlock = 4096;

gio_kv_u128 key(uint64_t i)
{
	return gio_kv_u128{0x9e3779b97f4a7c15ull * (i + 1), i};
}

std::string hex(gio_kv_u128 k)
{
	char b[40];
	snprintf(b, sizeof(b), "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo);
	return b;
}

// The tool reads entries only: any bytes do for the data.
std::vector<unsigned char> chunk(uint64_t i)
{
	return std::vector<unsigned char>(kChunk, static_cast<unsigned char>(i + 1));
}

struct Run {
	int status;
	std::string out;
};

// The tool's exit status and its stdout and stderr together.
Run tool(const std::string &args)
{
	const std::string cmd = std::string(GIO_STORE_TOOL) + " " + args + " 2>&1";
	FILE *p = popen(cmd.c_str(), "r");
	REQUIRE(p != nullptr);
	Run r{-1, ""};
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		r.out.append(buf, n);
	const int w = pclose(p);
	r.status = WIFEXITED(w) ? WEXITSTATUS(w) : -1;
	return r;
}

bool has(const Run &r, const std::string &s)
{
	return r.out.find(s) != std::string::npos;
}

size_t count(const Run &r, const std::string &s)
{
	size_t n = 0;
	for (size_t at = r.out.find(s); at != std::string::npos; at = r.out.find(s, at + 1))
		n++;
	return n;
}

struct Dir {
	std::string path;
	Dir()
	{
		char tmpl[] = "/tmp/gio_kv_tool_XXXXXX";
		REQUIRE(mkdtemp(tmpl) != nullptr);
		path = tmpl;
	}
	std::string file(uint32_t d) const { return path + "/dev" + std::to_string(d) + ".img"; }
	~Dir()
	{
		for (uint32_t d = 0; d < kDevices; d++)
			std::remove(file(d).c_str());
		rmdir(path.c_str());
	}
};

void file_rw(const std::string &path, bool write, uint64_t off, void *data, size_t len)
{
	const int fd = open(path.c_str(), O_RDWR);
	REQUIRE(fd >= 0);
	const ssize_t n = write ? pwrite(fd, data, len, (off_t)off) : pread(fd, data, len, (off_t)off);
	close(fd);
	REQUIRE(n == (ssize_t)len);
}

gio_kv_sb read_sb(const std::string &path)
{
	unsigned char b[GIO_KV_SB_BYTES];
	gio_kv_sb sb;
	uint32_t reason = 0;
	file_rw(path, false, 0, b, sizeof(b));
	REQUIRE(gio_kv_sb_decode(b, &sb, &reason) == 0);
	return sb;
}

// Writes a VALID entry of key k into slot s of the device at path, its CRC computed by format.h.
void plant_entry(const std::string &path, uint64_t s, gio_kv_u128 k, uint64_t seq)
{
	const gio_kv_sb sb = read_sb(path);
	gio_kv_layout lay;
	unsigned char e[GIO_KV_ENTRY_BYTES];
	uint32_t reason = 0;
	gio_kv_sb_layout(&sb, &lay);
	REQUIRE(gio_kv_entry_encode(e, &sb, s, GIO_KV_ENTRY_VALID, k, seq, kChunk, &reason) == 0);
	file_rw(path, true, gio_kv_entry_lba(&lay, s) * kBlock, e, sizeof(e));
}

gio_kv_store_params params()
{
	gio_kv_store_params p{};
	p.layers = kLayers;
	p.object_bytes = kObject;
	p.pool_signature = kPool;
	p.timeout_ns = 5000000000ull;
	return p;
}

// Opens the files with the library (query: more URI options, each "&name=value"), runs f on the
// store, closes all.
template <class F> void with_store(const Dir &dir, bool create, F f, const std::string &query = "")
{
	std::vector<gio_ctx *> ctx(kDevices, nullptr);
	for (uint32_t d = 0; d < kDevices; d++) {
		const std::string q = (create ? "&size=8M" : "") + query;
		const std::string uri = "file://" + dir.file(d) + (q.empty() ? "" : "?" + q.substr(1));
		INFO(uri << ": " << gio_last_error());
		REQUIRE(gio_ctx_open(uri.c_str(), &ctx[d]) == 0);
	}
	const gio_kv_store_params p = params();
	gio_kv_store *s = nullptr;
	INFO(gio_last_error());
	REQUIRE((create ? gio_kv_store_create(ctx.data(), kDevices, &p, &s) : gio_kv_store_open(ctx.data(), kDevices, &p, &s)) == 0);
	f(s);
	CHECK(gio_kv_store_close(s) == 0);
	for (auto *c : ctx)
		CHECK(gio_ctx_close(c) == 0);
}

} // namespace

TEST_CASE("giouring-store: show and check a store, then damage found by device and slot", "[kv][io_uring]")
{
	Dir dir;
	gio_kv_store_stats st{};
	with_store(dir, true, [&](gio_kv_store *s) {
		for (uint64_t i = 0; i < 7; i++) {
			const auto c = chunk(i);
			INFO(gio_last_error());
			REQUIRE(gio_kv_store_put(s, key(i), c.data(), kChunk) == 0);
		}
		gio_kv_store_info(s, &st);
	});
	const uint64_t slots = read_sb(dir.file(0)).slots;
	REQUIRE(slots >= 8);
	REQUIRE(st.capacity == kDevices * slots);
	std::string uris, shuffled;
	for (uint32_t d = 0; d < kDevices; d++)
		uris += " file://" + dir.file(d);
	shuffled = " file://" + dir.file(2) + " file://" + dir.file(0) + " file://" + dir.file(1);

	// Round-robin placement: keys 0, 3, 6 on device 0, the others two each; 12000 bytes a chunk.
	Run r = tool("show" + uris);
	INFO(r.out);
	CHECK(r.status == 0);
	CHECK(has(r, "superblock: store " + hex(st.store_id) + ", device 1 of 3, format version 1"));
	CHECK(has(r, "geometry: 4 layers x 3000 bytes, slot 12288 bytes (3 blocks of 4096), pool signature 0x00005eed5eed5eed"));
	CHECK(has(r, "layout: " + std::to_string(slots) + " slots, index LBA 1, data LBA 512, store blocks 2048 (device: 2048 blocks of 4096)"));
	CHECK(has(r, "device 0 (file://" + dir.file(0) + "): usage: 3 valid, 0 stale, " + std::to_string(slots - 3) +
			     " free, 0 damaged, 0 unreadable; 36000 bytes used"));
	CHECK(has(r, "device 2 (file://" + dir.file(2) + "): usage: 2 valid, 0 stale, " + std::to_string(slots - 2) +
			     " free, 0 damaged, 0 unreadable; 24000 bytes used"));
	CHECK(has(r, "store: 3 devices; usage: 7 valid, 0 stale, " + std::to_string(3 * slots - 7) +
			     " free, 0 damaged, 0 unreadable; 84000 bytes used"));
	CHECK(!has(r, "VALID key"));

	r = tool("show --entries" + uris);
	CHECK(r.status == 0);
	CHECK(count(r, " VALID key ") == 7);
	CHECK(has(r, "slot 0 VALID key " + hex(key(0)) + " seq 1 len 12000"));
	CHECK(has(r, "slot 2 VALID key " + hex(key(6)) + " seq 7 len 12000"));

	r = tool("check" + shuffled);
	CHECK(r.status == 0);
	CHECK(has(r, "superblocks: 3 devices of one store"));
	CHECK(has(r, "check: 0 problems"));
	CHECK(!has(r, "problem:"));
	CHECK(!has(r, "entries read")); // not a terminal, no --progress
	r = tool("check --progress" + uris);
	CHECK(r.status == 0);
	CHECK(has(r, "of " + std::to_string(3 * slots) + " entries read (100%)"));

	// A second VALID entry of key 0 (device 0 slot 0, sequence 1) in device 2's slot 5 with the
	// same sequence: the open keeps the one it scans first.
	const std::string d0 = "device 0 (file://" + dir.file(0) + ")", d2 = "device 2 (file://" + dir.file(2) + ")";
	plant_entry(dir.file(2), 5, key(0), 1);
	r = tool("check" + shuffled);
	CHECK(r.status == 1);
	CHECK(has(r, "problem: " + d2 + ": slot 5: key " + hex(key(0)) +
			     " VALID here (sequence 1) and in device 0 slot 0 (sequence 1): an open keeps device 0 slot 0 "
			     "(equal sequences: the one scanned first)"));
	CHECK(has(r, d2 + ": usage: 2 valid, 1 stale"));
	CHECK(has(r, "check: 1 problem\n"));

	// With a higher sequence the planted one wins, and so it does in the library's open.
	plant_entry(dir.file(2), 5, key(0), 100);
	r = tool("check" + uris);
	CHECK(r.status == 1);
	CHECK(has(r, "problem: " + d0 + ": slot 0: key " + hex(key(0)) +
			     " VALID here (sequence 1) and in device 2 slot 5 (sequence 100): an open keeps device 2 slot 5 "
			     "(the higher sequence)"));
	CHECK(has(r, d0 + ": usage: 2 valid, 1 stale, " + std::to_string(slots - 3) + " free, 0 damaged, 0 unreadable; 24000 bytes used"));
	CHECK(has(r, d2 + ": usage: 3 valid, 0 stale"));
	r = tool("show --entries" + uris);
	CHECK(r.status == 0);
	CHECK(has(r, d0 + " slot 0: stale: key " + hex(key(0)) + " (sequence 1) kept in device 2 slot 5 (sequence 100)"));
	with_store(dir, false, [&](gio_kv_store *s) {
		gio_kv_store_stats o{};
		std::vector<unsigned char> got(kChunk, 0xff);
		gio_kv_store_info(s, &o);
		CHECK(o.duplicates == 1);
		CHECK(o.valid == 7);
		// Device 2's slot 5 was never written: the open serves its zeros, not chunk 0.
		REQUIRE(gio_kv_store_get(s, key(0), got.data(), kChunk) == 1);
		CHECK(got == std::vector<unsigned char>(kChunk, 0));
	});
	// That open wrote the loser FREE: the check finds no duplicate now.
	r = tool("check" + uris);
	CHECK(r.status == 0);
	CHECK(has(r, d0 + ": usage: 2 valid, 0 stale, " + std::to_string(slots - 2) + " free, 0 damaged, 0 unreadable"));
	CHECK(has(r, "check: 0 problems"));

	// A torn entry: one byte of device 1's slot 0 entry (its key).
	unsigned char b = 0;
	file_rw(dir.file(1), false, 1 * kBlock + 40, &b, 1);
	b ^= 0x5a;
	file_rw(dir.file(1), true, 1 * kBlock + 40, &b, 1);
	const std::string d1 = "device 1 (file://" + dir.file(1) + ")";
	r = tool("check" + uris);
	CHECK(r.status == 1);
	CHECK(has(r, "problem: " + d1 + ": slot 0: entry refused: CRC mismatch"));
	CHECK(has(r, d1 + ": usage: 1 valid, 0 stale, " + std::to_string(slots - 2) + " free, 1 damaged"));
	CHECK(has(r, "damaged: 1 CRC mismatch"));
	CHECK(has(r, "check: 1 problem\n"));
	r = tool("show" + uris);
	CHECK(r.status == 0);
	CHECK(has(r, "1 damaged"));

	// A damaged superblock (its layers field): that device is named and not scanned, the others are.
	file_rw(dir.file(1), false, 40, &b, 1);
	b ^= 1;
	file_rw(dir.file(1), true, 40, &b, 1);
	r = tool("check" + uris);
	CHECK(r.status == 1);
	CHECK(has(r, "problem: file://" + dir.file(1) + ": superblock refused: CRC mismatch"));
	CHECK(has(r, "problem: no target given is device 1 of the store"));
	CHECK(has(r, "superblocks: an open refuses them"));
	CHECK(has(r, "file://" + dir.file(1) + ": not scanned: no superblock"));
	CHECK(has(r, d2 + ": usage: 3 valid"));
}

TEST_CASE("giouring-store: targets that cannot be read exit 2, and part of a store is a problem", "[kv][io_uring]")
{
	Dir dir;
	with_store(dir, true, [](gio_kv_store *) {});
	const std::string missing = dir.path + "/missing.img";
	Run r = tool("check file://" + dir.file(0) + " file://" + missing);
	CHECK(r.status == 2);
	CHECK(has(r, missing + ": No such file or directory"));
	struct stat sbuf;
	CHECK(stat(missing.c_str(), &sbuf) != 0); // never created
	r = tool("show file://" + missing);
	CHECK(r.status == 2);
	r = tool("check file://" + dir.file(0) + "?size=16M");
	CHECK(r.status == 2);
	CHECK(has(r, "size= would resize the file"));
	CHECK(stat(dir.file(0).c_str(), &sbuf) == 0);
	CHECK(sbuf.st_size == 8 << 20);
	// Only some of the store's devices: the count and the missing indices are problems (1).
	r = tool("check file://" + dir.file(0) + " file://" + dir.file(2));
	CHECK(r.status == 1);
	CHECK(has(r, "device count 3, but 2 targets given"));
	CHECK(has(r, "problem: no target given is device 1 of the store"));

}

TEST_CASE("giouring-store: a store of 512-byte blocks, read with lba=512 and without", "[kv][io_uring]")
{
	Dir dir;
	gio_kv_store_stats st{};
	with_store(
		dir, true,
		[&](gio_kv_store *s) {
			for (uint64_t i = 0; i < 5; i++) {
				const auto c = chunk(i);
				INFO(gio_last_error());
				REQUIRE(gio_kv_store_put(s, key(i), c.data(), kChunk) == 0);
			}
			gio_kv_store_info(s, &st);
		},
		"&lba=512");
	const gio_kv_sb sb = read_sb(dir.file(0));
	CHECK(sb.block_bytes == 512);
	std::string uris, plain;
	for (uint32_t d = 0; d < kDevices; d++) {
		uris += " file://" + dir.file(d) + "?lba=512";
		plain += " file://" + dir.file(d);
	}
	// 12000-byte chunks in 24 blocks of 512: slots of 12288 bytes, as with 4096-byte blocks.
	Run r = tool("show" + uris);
	INFO(r.out);
	CHECK(r.status == 0);
	CHECK(has(r, "geometry: 4 layers x 3000 bytes, slot 12288 bytes (24 blocks of 512), pool signature 0x00005eed5eed5eed"));
	CHECK(has(r, "store: 3 devices; usage: 5 valid, 0 stale, " + std::to_string(st.capacity - 5) +
			     " free, 0 damaged, 0 unreadable; 60000 bytes used"));
	r = tool("check" + uris);
	CHECK(r.status == 0);
	// Read as 4096-byte blocks, every superblock's block size is not the device's: a problem
	// that names it, never a clean check.
	r = tool("check" + plain);
	CHECK(r.status != 0);
	CHECK(has(r, "device block size differs from the superblock's (superblock: 16384 blocks of 512; device: 2048 blocks of 4096)"));
}

TEST_CASE("giouring-store: usage errors exit 2, --help 0", "[kv]")
{
	CHECK(tool("").status == 2);
	CHECK(tool("check").status == 2);
	CHECK(tool("frob mem://host?size=1M").status == 2);
	Run r = tool("show --progress mem://host?size=1M");
	CHECK(r.status == 2);
	CHECK(has(r, "unknown option"));
	// A blank target: no superblock, a problem for check, shown as refused.
	r = tool("check mem://host?size=1M");
	CHECK(r.status == 1);
	CHECK(has(r, "problem: mem://host?size=1M: superblock refused: all zero (never written)"));
	r = tool("show mem://host?size=1M");
	CHECK(r.status == 0);
	CHECK(has(r, "superblock: refused: all zero (never written)"));
	r = tool("--help");
	CHECK(r.status == 0);
	CHECK(has(r, "usage: giouring-store show [--entries] URI..."));
	CHECK(has(r, "Exit status: 0"));
}
