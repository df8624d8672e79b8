/**
 * @file giouring/host/version.h
 * @brief Which version of the host library (`giouring::host`) was linked, to compare with the
 * headers' GIO_VERSION (giouring/config.h). The rest of the host library's API is in
 * giouring/host/ctx.h.
 */
#ifndef GIOURING_HOST_VERSION_H
#define GIOURING_HOST_VERSION_H

#include "../config.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Version of the linked host library, to compare with the headers' GIO_VERSION.
 * @return major * 10000 + minor * 100 + patch.
 *
 * Any host thread; no side effects.
 */
int gio_version(void);

/**
 * @brief Version of the linked host library as text.
 * @return a static string such as "0.1.0"; never NULL.
 *
 * Any host thread; no side effects.
 */
const char *gio_version_string(void);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_VERSION_H */
