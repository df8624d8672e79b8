/**
 * @file giouring/giouring.h
 * @brief Umbrella header: everything an engine embeds from plain C11, C++ or CUDA code.
 *
 * The folders are the layers (docs/design.md, "Layers"); each includes only the layers below it:
 * 1. `giouring/nvme/`: wire formats (registers, SQE, CQE, SGL, PRP, Identify);
 * 2. `giouring/proto/`: pure protocol logic (`GIO_HD`): command encoders (prep.h), status
 *    decoding (status.h), data pointer builders (sgl_build.h, prp_build.h, dptr_build.h);
 *    `giouring/kv/`: the KV object layout (layout.h) and pools described by strides (pool.h);
 * 3. `giouring/ring/`: memory ordering (ordering.h), deadlines (clock.h), NVMe queue pairs (qp.h)
 *    and IOCB rings (uring.h), for host and device alike;
 * 4. `giouring/host/`: the host library's API (ctx.h, version.h), linked from `giouring::host`;
 * 5. `giouring/kv/` above them: the store's format (format.h), the store (store.h), and the
 *    per-layer load and save of planned batches (io.h, plan.h; the GPU engine's kernel is
 *    `giouring/kv/layer.cuh`, CUDA only);
 * 6. `giouring/sched/`: the slack-aware I/O scheduler's decisions (sched.h) and slack profile
 *    (profile.h) and bandwidth correction (rate.h), pure (`GIO_HD`), and the profiler and its file
 *    (profiler.h, host library).
 *
 * Not included here: the device verbs (`giouring/device/verbs.cuh`, CUDA only) and the software
 * NVMe target (`giouring/target/`), which an engine needs only to emulate a controller.
 */
#ifndef GIOURING_GIOURING_H
#define GIOURING_GIOURING_H

#include "config.h"

#include "nvme/cqe.h"
#include "nvme/identify.h"
#include "nvme/prp.h"
#include "nvme/regs.h"
#include "nvme/sgl.h"
#include "nvme/sqe.h"

#include "proto/dptr.h"
#include "proto/dptr_build.h"
#include "proto/prep.h"
#include "proto/prp_build.h"
#include "proto/sgl_build.h"
#include "proto/status.h"

#include "kv/layout.h"
#include "kv/pool.h"

#include "ring/clock.h"
#include "ring/ordering.h"
#include "ring/qp.h"
#include "ring/stage.h"
#include "ring/uring.h"

#include "host/ctx.h"
#include "host/path.h"
#include "host/stage.h"
#include "host/uri.h"
#include "host/version.h"

#include "kv/bus.h"
#include "kv/format.h"
#include "kv/io.h"
#include "kv/plan.h"
#include "kv/run.h"
#include "kv/staged.h"
#include "kv/store.h"

#include "sched/profile.h"
#include "sched/profiler.h"
#include "sched/issue.h"
#include "sched/rate.h"
#include "sched/sched.h"

#endif /* GIOURING_GIOURING_H */
