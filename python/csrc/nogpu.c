/* The GPU half where this build has no CUDA (nvcc was not found): GPU-executed targets and the
 * GPU engine are refused by name; everything else of the package works. */
#include <errno.h>

#include <giouring/target/gpu_target.h>

#include "gpy.h"

static int no_cuda(void)
{
	return gpy_fail(-EOPNOTSUPP, "this build of the giouring package has no CUDA (nvcc was not found where it was "
				     "built): GPU-executed targets and the GPU engine need it");
}

int gpy_has_gpu(void)
{
	return 0;
}

int gpy_gpu_open(struct gpy_store *s, struct gpy_dev *d, const char *uri)
{
	struct gio_gpu_target_config cfg;
	(void)s;
	(void)d;
	return gio_gpu_target_parse(uri, &cfg) == 0 ? no_cuda() : 0;
}

int gpy_gpu_attach(struct gpy_store *s, struct gpy_dev *d)
{
	(void)s;
	(void)d;
	return no_cuda();
}

int gpy_gpu_start(struct gpy_store *s)
{
	(void)s;
	return no_cuda();
}

int gpy_gpu_stop(struct gpy_store *s)
{
	(void)s;
	return 0; /* nothing was started */
}

int gpy_gpu_close(struct gpy_store *s, struct gpy_dev *d)
{
	(void)s;
	(void)d;
	return 0; /* nothing was opened */
}

void gpy_gpu_release(struct gpy_store *s)
{
	(void)s;
}

int gpy_gpu_plan_init(struct gpy_plan *p, uint32_t queue_depth)
{
	(void)p;
	(void)queue_depth;
	return no_cuda();
}

int gpy_gpu_plan_free(struct gpy_plan *p)
{
	(void)p;
	return 0;
}

int gpy_gpu_layer(struct gpy_plan *p, uint32_t layer, int write, void *stream)
{
	(void)p;
	(void)layer;
	(void)write;
	(void)stream;
	return no_cuda();
}

int gpy_gpu_wait(struct gpy_plan *p, uint32_t layer, void *stream, uint64_t timeout_ns)
{
	(void)p;
	(void)layer;
	(void)stream;
	(void)timeout_ns;
	return no_cuda();
}

int gpy_gpu_sched_launch(void *arg, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	(void)arg;
	(void)plan;
	(void)layer;
	(void)write;
	(void)sm;
	return no_cuda();
}

int gpy_partition_create(int device, uint32_t io_sms, uint32_t exec_sms, int fallback, void **out)
{
	(void)device;
	(void)io_sms;
	(void)exec_sms;
	(void)fallback;
	if (out)
		*out = NULL;
	return no_cuda();
}

int gpy_partition_info(void *part, uint32_t *out, uint32_t n)
{
	(void)part;
	(void)out;
	(void)n;
	return no_cuda();
}

void *gpy_partition_stream(void *part, int side)
{
	(void)part;
	(void)side;
	return NULL;
}

int gpy_partition_destroy(void *part)
{
	(void)part;
	return 0;
}

int gpy_gpu_timers_create(int device, uint32_t n, void **out)
{
	(void)device;
	(void)n;
	(void)out;
	return no_cuda();
}

void gpy_gpu_timers_destroy(void *timers)
{
	(void)timers;
}

int gpy_gpu_timer_mark(void *timers, uint32_t i, int end, void *stream)
{
	(void)timers;
	(void)i;
	(void)end;
	(void)stream;
	return no_cuda();
}

int gpy_gpu_timer_read(void *timers, uint32_t i, uint64_t *ns)
{
	(void)timers;
	(void)i;
	(void)ns;
	return no_cuda();
}
