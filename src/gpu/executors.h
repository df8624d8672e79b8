/* How many GPU executors (gio_gpu_target_start()) of this process run now: calls that wait for the
 * whole device (a green context's creation) refuse while any does, rather than wait for ever. */
#ifndef GIOURING_SRC_GPU_EXECUTORS_H
#define GIOURING_SRC_GPU_EXECUTORS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t gio__gpu_executors_running(void);

/* A new non-blocking stream on the SMs of @p stream (its green context's, or an ordinary stream of
 * its device): each persistent executor needs a stream of its own, since kernels of one stream run
 * one after another (a second executor launched behind the first never starts). */
int gio__stream_on_sms_of(void *stream, void **out);

#ifdef __cplusplus
}
#endif

#endif
