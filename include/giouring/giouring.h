/**
 * @file giouring/giouring.h
 * @brief Umbrella header: everything in giouring that plain C11, C++ and CUDA code can include.
 *
 * Layers (DESIGN.md section 3), each in its own headers and never pointing upward:
 * 1. wire formats, `giouring/nvme/`: registers, SQE, CQE, SGL, PRP, Identify;
 * 2. pure protocol logic, `GIO_HD`: encoders (prep.h), status decoding (status.h), data pointer
 *    builders (sgl_build.h, prp_build.h) and walkers (sgl_walk.h, prp_walk.h), the KV layout (kv.h),
 *    memory ordering (ordering.h), deadlines (clock.h), NVMe queue pairs (qp.h), IOCB rings (uring.h)
 *    and the software target's command core (target.h);
 * 3. the host library's API (ctx.h, host.h), linked from `giouring::host`.
 *
 * Device-only headers (`.cuh`) are included separately, from CUDA code only.
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

#include "clock.h"
#include "dma_map.h"
#include "dptr.h"
#include "dptr_build.h"
#include "kv.h"
#include "ordering.h"
#include "prep.h"
#include "prp_build.h"
#include "prp_walk.h"
#include "qp.h"
#include "sgl_build.h"
#include "sgl_walk.h"
#include "status.h"
#include "target.h"
#include "uring.h"
#include "xfer.h"

#include "ctx.h"
#include "uri.h"
#include "host.h"

#endif /* GIOURING_GIOURING_H */
