// Compiles a kernel against the installed headers only (giouring::giouring):
// a GIO_HD encoder must build as device code from the installed tree.
// No CUDA runtime call: the machine that runs this test may have no GPU.
#include <giouring/giouring.h>

#include <cstdio>

__global__ void consumer_kernel(struct gio_sqe *sqes, int *rcs)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	rcs[i] = gio_prep_read(&sqes[i], 1, 8ull * i, 8);
}

int main()
{
	std::printf("giouring headers %d: kernel built from the installed tree\n",
		    GIO_VERSION);
	return 0;
}
