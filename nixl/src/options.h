/* The GIOURING backend's parameters (NIXL's create_backend(name, {key: value})): their names
 * and defaults, which get_plugin_params() shows, and their parsing into the store's config. */
#ifndef GIOURING_NIXL_OPTIONS_H
#define GIOURING_NIXL_OPTIONS_H

#include <string>

#include "kv_batch.h"
#include "nixl_api.h"

namespace gio_nixl {

/** Every parameter with its default value. */
nixl_b_params_t default_options();

/** Parses @p params (unknown names refused, missing ones defaulted): 0, or -EINVAL with @p msg
 *  naming the parameter and what it takes. */
int parse_options(const nixl_b_params_t &params, kv_config &c, std::string &msg);

} // namespace gio_nixl

#endif
