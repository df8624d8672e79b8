/* How many GPU executors (gio_gpu_target_start()) of this process run now: calls that wait for the
 * whole device (a green context's creation) refuse while any does, rather than wait for ever. */
#ifndef GIOURING_SRC_GPU_EXECUTORS_H
#define GIOURING_SRC_GPU_EXECUTORS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t gio__gpu_executors_running(void);

#ifdef __cplusplus
}
#endif

#endif
