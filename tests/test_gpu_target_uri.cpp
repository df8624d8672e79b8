// The GPU-executed target's URI (gio_gpu_target_parse), parsed by the host library's one URI
// parser: no GPU needed.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/target/gpu_target.h>

#include <cerrno>
#include <string>

TEST_CASE("GPU target URIs: defaults and every parameter", "[uri][gpu_target]")
{
	gio_gpu_target_config c;
	REQUIRE(gio_gpu_target_parse("mem://hbm?size=64M", &c) == 0);
	CHECK(std::string(gio_last_error()).empty());
	CHECK(c.size == 64ull << 20);
	CHECK(c.lba_shift == 12);
	CHECK(c.sgls == 1);
	CHECK(c.mdts == 7);
	CHECK(c.queues == 16);
	CHECK(c.depth == 1024);
	CHECK(c.exec_blocks == 4);
	CHECK(c.exec_warps == 8);
	CHECK(c.flags == 0);

	REQUIRE(gio_gpu_target_parse("mem://host?exec=gpu&size=1G&lba=512&sgls=2&mdts=0&queues=1024&depth=4096&sms=3"
				     "&warps=16&rings=host&scope=sys&profile=1&data=0",
				     &c) == 0);
	CHECK(c.size == 1ull << 30);
	CHECK(c.lba_shift == 9);
	CHECK(c.sgls == 2);
	CHECK(c.mdts == 0);
	CHECK(c.queues == 1024);
	CHECK(c.depth == 4096);
	CHECK(c.exec_blocks == 3);
	CHECK(c.exec_warps == 16);
	CHECK(c.flags == (GIO_GPU_BACKING_HOST | GIO_GPU_RINGS_HOST | GIO_GPU_SCOPE_SYS | GIO_GPU_PROFILE | GIO_GPU_NO_DATA));

	// The timing model: any of its parameters turns it on; mixed defaults to the slower side.
	REQUIRE(gio_gpu_target_parse("mem://hbm?size=1M&model_read_gbps=29&model_write_gbps=12.5&model_lat_us=80", &c) == 0);
	CHECK((c.flags & GIO_GPU_MODEL) != 0);
	CHECK(c.model.read_gbps == Approx(29.0f));
	CHECK(c.model.write_gbps == Approx(12.5f));
	CHECK(c.model.mixed_gbps == Approx(12.5f));
	CHECK(c.model.lat_us == Approx(80.0f));
}

TEST_CASE("GPU target URIs: bad ones get -EINVAL naming the problem", "[uri][gpu_target]")
{
	struct Case {
		const char *uri;
		const char *says;
	} cases[] = {
		{"", "needs a URI"},
		{"mem://hbm", "needs size="},
		{"mem://hbm?size=1M&size=2M", "given twice"},
		{"mem://hbm?size=1000", "size=1000: a number from 4096"},
		{"mem://hbm?size=12K&lba=8192", "not a multiple of the 8192-byte block"},
		{"mem://hbm?size=1M&lba=3000", "lba=3000: a power of two"},
		{"mem://hbm?size=1M&depth=3", "depth=3: a power of two"},
		{"mem://hbm?size=1M&queues=0", "queues=0"},
		{"mem://hbm?size=1M&warps=17", "warps=17"},
		{"mem://hbm?size=1M&rings=disk", "rings=disk: hbm or host"},
		{"mem://hbm?size=1M&scope=cta", "scope=cta: gpu or sys"},
		{"mem://hbm?size=1M&model_lat_us=-1", "model_lat_us=-1"},
		{"mem://hbm?size=1M&model_lat_us=fast", "model_lat_us=fast"},
		{"mem://hbm?size=1M&threads=2", "unknown URI parameter 'threads' for GPU-executed targets"},
		{"mem://host?size=1M", "without exec=gpu"},
		{"mem://hbm?size=1M&exec=cpu", "gio_ctx_open()"},
		{"file:///tmp/x?size=1M", "serves mem://hbm and mem://host?exec=gpu"},
	};
	for (auto &t : cases) {
		INFO(t.uri);
		gio_gpu_target_config c;
		CHECK(gio_gpu_target_parse(t.uri, &c) == -EINVAL);
		INFO(gio_last_error());
		CHECK(std::string(gio_last_error()).find(t.says) != std::string::npos);
	}
	CHECK(gio_gpu_target_parse("mem://hbm?size=1M", nullptr) == -EINVAL);
}
