// Links giouring::gpu, the CUDA part of the host library, from an installed prefix: parses a GPU
// target URI and opens the target where a GPU is present (no GPU: -ENODEV, which passes here,
// since the machine that runs this test may have none).
#include <giouring/host/ctx.h>
#include <giouring/target/gpu_target.h>

#include <cerrno>
#include <cstdio>

int main()
{
	gio_gpu_target_config cfg;
	if (gio_gpu_target_parse("mem://hbm?size=1M&queues=2&depth=8&sms=1&warps=1", &cfg) || cfg.queues != 2) {
		std::fprintf(stderr, "gio_gpu_target_parse: %s\n", gio_last_error());
		return 1;
	}
	gio_gpu_target *g = nullptr;
	const int rc = gio_gpu_target_open("mem://hbm?size=1M&queues=2&depth=8&sms=1&warps=1", &g);
	if (rc == 0 && gio_gpu_target_close(g)) {
		std::fprintf(stderr, "gio_gpu_target_close: %s\n", gio_last_error());
		return 1;
	}
	if (rc != 0 && rc != -ENODEV) {
		std::fprintf(stderr, "gio_gpu_target_open: %d: %s\n", rc, gio_last_error());
		return 1;
	}
	std::printf("giouring::gpu linked: GPU target %s\n", rc == 0 ? "opened" : "not opened (no GPU)");
	return 0;
}
