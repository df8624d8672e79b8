/*
 * libplugin_GIOURING.so's entry points: what NIXL's plugin manager looks up after dlopen()
 * (nixl_plugin_init, nixl_plugin_fini), and two C hooks for tests (gio_nixl_*). Nothing else
 * leaves the library: the host library's symbols stay inside (CMake: hidden visibility).
 */
#include <cerrno>
#include <cstring>
#include <exception>
#include <string>

#include "engine.h"
#include "options.h"

#define GIO_NIXL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

nixlBackendEngine *create_engine(const nixlBackendInitParams *init)
{
	try {
		return new gio_nixl::engine(init);
	} catch (const std::exception &) {
		return nullptr; /* NIXL reports a backend that could not be created */
	}
}

void destroy_engine(nixlBackendEngine *e)
{
	delete e;
}

const char *plugin_name()
{
	return "GIOURING";
}

const char *plugin_version()
{
	return "0.1.0";
}

nixl_b_params_t plugin_options()
{
	return gio_nixl::default_options();
}

nixl_mem_list_t plugin_mems()
{
	return gio_nixl::supported_mems();
}

nixlBackendPlugin plugin = {NIXL_PLUGIN_API_VERSION, create_engine,  destroy_engine, plugin_name,
			    plugin_version,          plugin_options, plugin_mems};

thread_local std::string hook_message;

} // namespace

GIO_NIXL_EXPORT nixlBackendPlugin *nixl_plugin_init()
{
	return &plugin;
}

GIO_NIXL_EXPORT void nixl_plugin_fini() {}

/**
 * For tests: makes the @p nth I/O command (from now on, 1-based) of device @p dev of agent
 * @p agent's GIOURING store fail with NVMe status @p status (0 and 0: no fault). Software targets
 * (file://, mem://host) only. Returns 0 or -errno; gio_nixl_last_error() says why.
 */
GIO_NIXL_EXPORT int gio_nixl_inject(const char *agent, uint32_t dev, uint64_t nth, uint32_t status)
{
	gio_nixl::engine *e = agent ? gio_nixl::find_engine(agent) : nullptr;
	if (!e) {
		hook_message = std::string("no GIOURING backend for agent '") + (agent ? agent : "") + "'";
		return -ENOENT;
	}
	return e->inject(dev, nth, status, hook_message);
}

/**
 * For benches: moves @p n chunks between the store of agent @p agent's GIOURING backend and
 * memory without NIXL, on the calling thread: chunk i's key is (keys[2i], keys[2i+1]) and its
 * memory addrs[i] (layers x object_bytes bytes), GPU memory where @p vram is 1 (CUDA builds).
 * @p write 1 stores, 0 reads. The backend's own
 * path minus NIXL's (descriptor lists, the worker's hand-off, polling), to measure what NIXL
 * adds. Returns 0 or -errno; gio_nixl_last_error() says why.
 */
GIO_NIXL_EXPORT int gio_nixl_direct(const char *agent, int write, int vram, const uint64_t *keys, const uint64_t *addrs,
				    uint32_t n)
{
	gio_nixl::engine *e = agent ? gio_nixl::find_engine(agent) : nullptr;
	if (!e || (n && (!keys || !addrs))) {
		hook_message = std::string("no GIOURING backend for agent '") + (agent ? agent : "") + "', or no keys";
		return -EINVAL;
	}
	std::vector<gio_nixl::kv_item> items(n);
	for (uint32_t i = 0; i < n; i++) {
		items[i].key.hi = keys[2 * i];
		items[i].key.lo = keys[2 * i + 1];
		items[i].addr = (uintptr_t)addrs[i];
		items[i].vram = vram != 0;
	}
	if (vram && !gio_nixl::kv_has_cuda()) {
		hook_message = "GPU memory in a build without CUDA";
		return -EOPNOTSUPP;
	}
	return e->direct(write != 0, items, hook_message);
}

/**
 * The latest failure of agent @p agent's GIOURING backend (what it also printed on stderr), or
 * the hooks' own; "" when there is none. Valid until the next call on this thread.
 */
GIO_NIXL_EXPORT const char *gio_nixl_last_error(const char *agent)
{
	gio_nixl::engine *e = agent ? gio_nixl::find_engine(agent) : nullptr;
	if (e)
		hook_message = e->last_error();
	return hook_message.c_str();
}
