/* NIXL's plugin interface: NIXL's own headers where the build names a NIXL install
 * (GIOURING_NIXL_ROOT), else the declarations pinned to nixl 1.5.1 (nixl/abi/). */
#ifndef GIOURING_NIXL_API_H
#define GIOURING_NIXL_API_H

#ifdef GIOURING_NIXL_HEADERS
#include <backend/backend_plugin.h>
#else
#include "nixl_plugin_abi.h"
#endif

#endif
