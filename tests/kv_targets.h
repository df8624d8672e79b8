// Test targets for the KV store's tests: N contexts over file:// targets in a fresh directory
// (reopened on the same files by reopen()) or mem://host targets.
#ifndef GIOURING_TESTS_KV_TARGETS_H
#define GIOURING_TESTS_KV_TARGETS_H

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/io.h>

// N targets; file:// ones in a fresh directory, reopened (the same files) by reopen().
struct Targets {
	std::vector<std::string> uris;
	std::vector<gio_ctx *> ctx;
	std::string dir;

	Targets(uint32_t n, bool files, const char *query = "size=8M")
	{
		if (files) {
			char tmpl[] = "/tmp/gio_kv_XXXXXX";
			REQUIRE(mkdtemp(tmpl) != nullptr);
			dir = tmpl;
		}
		for (uint32_t i = 0; i < n; i++)
			uris.push_back(files ? "file://" + dir + "/dev" + std::to_string(i) + ".img?" + query
					     : std::string("mem://host?") + query);
		open();
	}
	void open()
	{
		ctx.assign(uris.size(), nullptr);
		for (size_t i = 0; i < uris.size(); i++) {
			INFO(uris[i] << ": " << gio_last_error());
			REQUIRE(gio_ctx_open(uris[i].c_str(), &ctx[i]) == 0);
		}
	}
	void close()
	{
		for (auto *c : ctx)
			CHECK(gio_ctx_close(c) == 0);
		ctx.clear();
	}
	void reopen()
	{
		close();
		open();
	}
	~Targets()
	{
		close();
		if (!dir.empty()) {
			for (size_t i = 0; i < uris.size(); i++)
				std::remove((dir + "/dev" + std::to_string(i) + ".img").c_str());
			rmdir(dir.c_str());
		}
	}
};

// Device `ctx` of a CPU-engine plan: two queue pairs of depth 64 created on it (appended to `qps`,
// which must not grow again while the plan uses it: the device points into it), its namespace
// and block size, and the data pointers of `table`.
inline gio_kv_io_dev cpu_plan_dev(gio_ctx *ctx, std::vector<gio_qp *> &qps, const gio_dptr *table, uint32_t psdt,
				  uint32_t cmds)
{
	for (int q = 0; q < 2; q++) {
		gio_qp *qp = nullptr;
		REQUIRE(gio_ctx_qp_create(ctx, 64, &qp) == 0);
		qps.push_back(qp);
	}
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	gio_kv_io_dev dev{};
	dev.qps = qps.data();
	dev.table = table;
	dev.nqps = 2;
	dev.nsid = info.nsid;
	dev.lba_shift = __builtin_ctz(info.lba_bytes);
	dev.psdt = psdt;
	dev.cmds = cmds;
	return dev;
}

#endif
