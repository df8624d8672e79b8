// The GPU half of the HBM provider for nvme-pci: a dma-buf of cudaMalloc memory from the CUDA
// driver (cuMemGetHandleForAddressRange), which gio_ctx_register_ex(GIO_MEM_HBM) then imports
// into the controller's IOAS. The import needs VFIO and iommufd, which the GPU machine lacks (the
// QEMU run tests it with a peer BAR); this checks what the driver hands over, where the driver
// says it can: a dma-buf of exactly the range, and the documented errors for bad ranges.
//
// gpu-check: expected-api-errors (host memory is handed to cuPointerGetAttribute on purpose, and
// drivers that do not know the BAR1 mapping flag refuse the first export call: both handled).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gpu_test.cuh"

#include <giouring/host/ctx.h>

extern "C" int gio__gpu_dmabuf(void *ptr, size_t len, int *fd); // src/internal.h

// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: the runtime's enum keeps the driver's numbers and
// leaves this one unnamed (cudaDevAttrReserved124).
static const cudaDeviceAttr dma_buf_supported = static_cast<cudaDeviceAttr>(124);

static std::string fdinfo(int fd)
{
	char path[64], buf[1024];
	std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	const int f = open(path, O_RDONLY);
	if (f < 0)
		return "";
	const ssize_t n = read(f, buf, sizeof(buf) - 1);
	close(f);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

int main()
{
	skip_without_gpu();
	int dev = 0, supported = -1;
	CK(cudaGetDevice(&dev));
	if (cudaDeviceGetAttribute(&supported, dma_buf_supported, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		supported = -1;
	}
	std::printf("GPU %d: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = %d\n", dev, supported);

	const size_t len = 2u << 20;
	char *d = nullptr;
	CK(cudaMalloc(&d, len + 65536));
	CK(cudaMemset(d, 0x5a, len));
	CK(cudaDeviceSynchronize());

	int fd = -1;
	int rc = gio__gpu_dmabuf(d, len, &fd);
	std::printf("export of %zu bytes: rc %d fd %d%s%s\n", len, rc, fd, rc ? ": " : "", rc ? gio_last_error() : "");
	if (supported == 1) {
		// A dma-buf of exactly the range: its size is what llseek reports, and the kernel lists
		// it with its exporter's name.
		EXPECT(rc == 0 && fd >= 0, "rc %d: %s", rc, gio_last_error());
		if (rc == 0) {
			const off_t size = lseek(fd, 0, SEEK_END);
			EXPECT(size == (off_t)len, "dma-buf size %lld, want %zu", (long long)size, len);
			const std::string info = fdinfo(fd);
			const size_t at = info.find("exp_name:");
			EXPECT(at != std::string::npos, "no exp_name in fdinfo: %s", info.c_str());
			if (at != std::string::npos)
				std::printf("fdinfo: %s\n", info.substr(at, info.find('\n', at) - at).c_str());
			close(fd);
		}
	} else {
		// The driver says no (or cannot say): the export must be refused with the reason, or,
		// where the attribute is unknown, succeed with a valid descriptor.
		EXPECT((rc == -EOPNOTSUPP && std::strstr(gio_last_error(), "dma-buf")) || (supported == -1 && rc == 0 && fd >= 0),
		       "rc %d: %s", rc, gio_last_error());
		if (rc == 0)
			close(fd);
	}

	// A range that is not whole pages, and host memory, are refused before the driver is asked.
	rc = gio__gpu_dmabuf(d + 100, 4096, &fd);
	EXPECT(rc == -EINVAL && fd == -1, "misaligned: rc %d fd %d", rc, fd);
	void *host = std::aligned_alloc(4096, 4096);
	rc = gio__gpu_dmabuf(host, 4096, &fd);
	EXPECT(rc == -EINVAL && std::strstr(gio_last_error(), "not GPU memory"), "host memory: rc %d: %s", rc,
	       gio_last_error());
	std::free(host);
	CK(cudaFree(d));

	if (failures) {
		std::printf("FAIL: %d check(s)\n", failures);
		return 1;
	}
	std::printf("PASS: GPU dma-buf export\n");
	return 0;
}
