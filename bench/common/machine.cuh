// machine.cuh: the machine line every GPU bench prints above its tables (GPU, driver, runtime,
// PCIe link, CPU), read from the CUDA runtime, /proc and /sys.
#ifndef GIOURING_BENCH_COMMON_MACHINE_CUH
#define GIOURING_BENCH_COMMON_MACHINE_CUH

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.cuh"

struct kv_machine {
	char gpu[256];
	int sms;
	double hbm_gib;
	int driver_api;        // cudaDriverGetVersion: the CUDA version the driver supports
	int runtime;           // cudaRuntimeGetVersion
	char driver[64];       // the kernel module's version (/proc/driver/nvidia/version), or "?"
	char busid[32];
	char link[64];         // current PCIe link, e.g. "Gen5 x16"
	char link_max[64];
	char cpu[128];
	long cores;
};

static inline void kv_read_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = std::fopen(path, "r");
	if (!f)
		return;
	if (!std::fgets(buf, (int)len, f))
		buf[0] = '\0';
	std::fclose(f);
	buf[std::strcspn(buf, "\n")] = '\0';
}

// "32.0 GT/s PCIe" and "16" -> "Gen5 x16".
static inline void kv_pcie_link(const char *dev, const char *speed_file, const char *width_file, char *out, size_t len)
{
	char p[256], speed[64], width[64];
	kv_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", dev, speed_file);
	kv_read_line(p, speed, sizeof(speed));
	kv_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", dev, width_file);
	kv_read_line(p, width, sizeof(width));
	if (!speed[0]) {
		kv_fmt(out, len, "?");
		return;
	}
	const double gts = std::atof(speed);
	const int gen = gts >= 60 ? 6 : gts >= 30 ? 5 : gts >= 15 ? 4 : gts >= 7 ? 3 : gts >= 4 ? 2 : 1;
	kv_fmt(out, len, "Gen%d x%s", gen, width[0] ? width : "?");
}

static inline void kv_machine_probe(int device, struct kv_machine *m)
{
	std::memset(m, 0, sizeof(*m));
	struct cudaDeviceProp prop;
	KV_CK(cudaGetDeviceProperties(&prop, device));
	kv_fmt(m->gpu, sizeof(m->gpu), "%s", prop.name);
	m->sms = prop.multiProcessorCount;
	m->hbm_gib = (double)prop.totalGlobalMem / (1ull << 30);
	KV_CK(cudaDriverGetVersion(&m->driver_api));
	KV_CK(cudaRuntimeGetVersion(&m->runtime));
	char line[512];
	kv_read_line("/proc/driver/nvidia/version", line, sizeof(line));
	// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
	// the version is the first word after "Kernel Module" that starts with a digit.
	kv_fmt(m->driver, sizeof(m->driver), "?");
	const char *mod = std::strstr(line, "Kernel Module");
	for (const char *w = mod ? mod + std::strlen("Kernel Module") : NULL; w && *w;) {
		w += std::strspn(w, " \t");
		const size_t len = std::strcspn(w, " \t\n");
		if (len && *w >= '0' && *w <= '9') {
			kv_fmt(m->driver, sizeof(m->driver), "%.*s", (int)len, w);
			break;
		}
		w += len;
	}
	char bus[64];
	unsigned dom = 0, b = 0, d = 0, fn = 0;
	KV_CK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device));
	if (std::sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &fn) == 4) {
		kv_fmt(m->busid, sizeof(m->busid), "%04x:%02x:%02x.%x", dom, b, d, fn);
		kv_pcie_link(m->busid, "current_link_speed", "current_link_width", m->link, sizeof(m->link));
		kv_pcie_link(m->busid, "max_link_speed", "max_link_width", m->link_max, sizeof(m->link_max));
	} else {
		kv_fmt(m->busid, sizeof(m->busid), "%s", bus);
		kv_fmt(m->link, sizeof(m->link), "?");
		kv_fmt(m->link_max, sizeof(m->link_max), "?");
	}
	kv_fmt(m->cpu, sizeof(m->cpu), "?");
	FILE *f = std::fopen("/proc/cpuinfo", "r");
	while (f && std::fgets(line, sizeof(line), f)) {
		if (!std::strncmp(line, "model name", 10)) {
			const char *c = std::strchr(line, ':');
			if (c) {
				kv_fmt(m->cpu, sizeof(m->cpu), "%s", c + 2);
				m->cpu[std::strcspn(m->cpu, "\n")] = '\0';
			}
			break;
		}
	}
	if (f)
		std::fclose(f);
	m->cores = sysconf(_SC_NPROCESSORS_ONLN);
}

// The machine in one line of text: GPU, driver, runtime, PCIe link, CPU.
static inline void kv_machine_describe(const struct kv_machine *m, char *buf, size_t len)
{
	kv_fmt(buf, len,
	       "GPU %s (%d SMs, %.1f GiB), driver %s (CUDA %d.%d API), runtime %d.%d, PCIe %s %s (max %s); CPU %s, %ld cores "
	       "online",
	       m->gpu, m->sms, m->hbm_gib, m->driver, m->driver_api / 1000, (m->driver_api % 1000) / 10, m->runtime / 1000,
	       (m->runtime % 1000) / 10, m->busid, m->link, m->link_max, m->cpu, m->cores);
}

static inline void kv_machine_line(FILE *out, const struct kv_machine *m)
{
	char line[1024];
	kv_machine_describe(m, line, sizeof(line));
	std::fprintf(out, "machine: %s\n", line);
}

#endif // GIOURING_BENCH_COMMON_MACHINE_CUH
