/* The GPU-executed target's URI (gio_gpu_target_parse()), through the parser every target uses
 * (../uri/); in the host library, so it is built and tested without CUDA. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <giouring/target/gpu_target.h>

#include "../internal.h"
#include "../uri/uri.h"

static const char *const rings_choices[] = {"hbm", "host", NULL};
static const char *const scope_choices[] = {"gpu", "sys", NULL};
static const char *const exec_choices[] = {"cpu", "gpu", NULL};

static int parse(struct gio__uri *u, struct gio_gpu_target_config *cfg)
{
	double model[4];
	uint64_t v;
	int rc, i, exec_gpu = 0;
	if (!strcmp(u->location, "mem://host"))
		cfg->flags |= GIO_GPU_BACKING_HOST;
	else if (strcmp(u->location, "mem://hbm"))
		return gio__fail(-EINVAL, "giouring: '%s': the GPU executor serves mem://hbm and mem://host?exec=gpu",
				 u->location);
	if ((rc = gio__uri_choice(u, "exec", exec_choices, "cpu or gpu", &i)) < 0)
		return rc;
	if (rc && i == 0)
		return gio__fail(-EINVAL, "giouring: exec=cpu: the CPU executor opens with gio_ctx_open()");
	exec_gpu = rc == 1;
	if ((cfg->flags & GIO_GPU_BACKING_HOST) && !exec_gpu)
		return gio__fail(-EINVAL, "giouring: mem://host without exec=gpu is the CPU executor's: gio_ctx_open()");
	if ((rc = gio__uri_u64(u, "size", 4096, UINT64_MAX, NULL, &cfg->size)) < 0)
		return rc;
	if (rc == 0)
		return gio__fail(-EINVAL, "giouring: %s needs size= (e.g. size=1G)", u->location);
	if ((rc = gio__uri_pow2(u, "lba", 512, 65536, &v)) < 0)
		return rc;
	if (rc)
		cfg->lba_shift = (uint32_t)__builtin_ctzll(v);
	if ((rc = gio__uri_u32(u, "sgls", 0, 2, "0 (PRP only), 1 (SGLs) or 2 (SGLs, dword rule)", &cfg->sgls)) < 0 ||
	    (rc = gio__uri_u32(u, "mdts", 0, 20, "0 (no limit) to 20", &cfg->mdts)) < 0 ||
	    (rc = gio__uri_u32(u, "queues", 1, GIO_TGT_MAX_IO_QUEUES, NULL, &cfg->queues)) < 0 ||
	    (rc = gio__uri_u32(u, "sms", 1, 1024, NULL, &cfg->exec_blocks)) < 0 ||
	    (rc = gio__uri_u32(u, "warps", 1, GIO_GPU_EXEC_MAX_WARPS, NULL, &cfg->exec_warps)) < 0)
		return rc;
	if ((rc = gio__uri_pow2(u, "depth", 2, 4096, &v)) < 0)
		return rc;
	if (rc)
		cfg->depth = (uint32_t)v;
	if ((rc = gio__uri_choice(u, "rings", rings_choices, "hbm or host", &i)) < 0)
		return rc;
	if (rc && i == 1)
		cfg->flags |= GIO_GPU_RINGS_HOST;
	if ((rc = gio__uri_choice(u, "scope", scope_choices, "gpu or sys", &i)) < 0)
		return rc;
	if (rc && i == 1)
		cfg->flags |= GIO_GPU_SCOPE_SYS;
	if ((rc = gio__uri_u64(u, "profile", 0, 1, "0 or 1", &v)) < 0)
		return rc;
	if (rc && v)
		cfg->flags |= GIO_GPU_PROFILE;
	if ((rc = gio__uri_u64(u, "data", 0, 1, "1 (move data) or 0 (complete commands without moving data)", &v)) < 0)
		return rc;
	if (rc && v == 0)
		cfg->flags |= GIO_GPU_NO_DATA;
	if ((rc = gio__uri_u64(u, "check", 0, 1, "0, or 1 (refuse data pointers outside registered memory: -EFAULT)", &v)) < 0)
		return rc;
	if (rc && v)
		cfg->flags |= GIO_GPU_CHECK;
	if ((rc = gio__uri_model(u, model)) < 0)
		return rc;
	if (rc) {
		cfg->flags |= GIO_GPU_MODEL;
		cfg->model.read_gbps = (float)model[0];
		cfg->model.write_gbps = (float)model[1];
		cfg->model.mixed_gbps = (float)model[2];
		cfg->model.lat_us = (float)model[3];
	}
	if ((rc = gio__uri_done(u, "GPU-executed targets")))
		return rc;
	if (cfg->size & ((1ull << cfg->lba_shift) - 1))
		return gio__fail(-EINVAL, "giouring: size=%" PRIu64 " is not a multiple of the %u-byte block", cfg->size,
				 1u << cfg->lba_shift);
	return 0;
}

int gio_gpu_target_parse(const char *uri, struct gio_gpu_target_config *cfg)
{
	struct gio__uri u;
	gio__clear_error();
	if (!cfg)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_parse: cfg is NULL");
	memset(cfg, 0, sizeof(*cfg));
	cfg->lba_shift = 12;
	cfg->sgls = 1;
	cfg->mdts = 7;
	cfg->queues = 16;
	cfg->depth = 1024;
	cfg->exec_blocks = 4;
	cfg->exec_warps = 8;
	if (!uri || !uri[0])
		return gio__fail(-EINVAL, "giouring: a GPU target needs a URI (mem://hbm?size=... or mem://host?exec=gpu&size=...)");
	if (gio__uri_split(&u, uri))
		return -EINVAL;
	return parse(&u, cfg);
}
