/* The CUDA copy engine of the CPU executor (devcopy.c). */
#ifndef GIOURING_SRC_CUDA_DEVCOPY_H
#define GIOURING_SRC_CUDA_DEVCOPY_H

#include <stdint.h>

struct gio__devcopy;

/* Fills @dc with the CUDA runtime's operations for memory on GPU *@ordinal (read at each use);
 * the runtime must be loaded (gio__cudart() not NULL) and have the stream and copy calls. */
void gio__devcopy_cuda(struct gio__devcopy *dc, int *ordinal, uint64_t timeout_ns);

#endif
