/*
 * The part of NIXL's backend plugin interface that libplugin_GIOURING.so uses, declared here so
 * that the plugin builds where NIXL's own headers are missing: the NIXL wheels ship none, and the
 * upstream headers need an Abseil newer than Debian 12's. Pinned to nixl 1.5.1
 * (NIXL_PLUGIN_API_VERSION 1).
 *
 * These are declarations of another project's ABI, not an API of ours: every class, member,
 * virtual function and enum value below has NIXL's name, type and order, because the NIXL core
 * reads the plugin's objects through its own definitions. Two things keep them honest:
 *   - the vtable of nixlBackendEngine (its virtual functions in slot order, with their mangled
 *     parameter types) is compared with the pinned wheel's libplugin_POSIX.so by
 *     nixl/check_vtable.py (ctest nixl.vtable);
 *   - the data members the core reads through inline accessors (nixlBackendEngine's, the
 *     descriptor lists', nixlBackendInitParams') are laid out as in nixl 1.5.1, and the tests
 *     in tests/nixl/ exercise every one of them through the real core.
 * Where a user has NIXL's headers, -DGIOURING_NIXL_ROOT=<install> builds against those instead.
 */
#ifndef GIOURING_NIXL_PLUGIN_ABI_H
#define GIOURING_NIXL_PLUGIN_ABI_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#define NIXL_PLUGIN_API_VERSION 1

enum nixl_mem_t { DRAM_SEG, VRAM_SEG, BLK_SEG, OBJ_SEG, FILE_SEG };

enum nixl_xfer_op_t { NIXL_READ, NIXL_WRITE };

enum nixl_status_t {
	NIXL_IN_PROG = 1,
	NIXL_SUCCESS = 0,
	NIXL_ERR_NOT_POSTED = -1,
	NIXL_ERR_INVALID_PARAM = -2,
	NIXL_ERR_BACKEND = -3,
	NIXL_ERR_NOT_FOUND = -4,
	NIXL_ERR_MISMATCH = -5,
	NIXL_ERR_NOT_ALLOWED = -6,
	NIXL_ERR_REPOST_ACTIVE = -7,
	NIXL_ERR_UNKNOWN = -8,
	NIXL_ERR_NOT_SUPPORTED = -9,
	NIXL_ERR_REMOTE_DISCONNECT = -10,
	NIXL_ERR_CANCELED = -11,
	NIXL_ERR_NO_TELEMETRY = -12
};

enum class nixl_thread_sync_t {
	NIXL_THREAD_SYNC_NONE,
	NIXL_THREAD_SYNC_STRICT,
	NIXL_THREAD_SYNC_RW,
	NIXL_THREAD_SYNC_DEFAULT = NIXL_THREAD_SYNC_NONE,
};

enum class nixl_cost_t { ANALYTICAL_BACKEND = 0 };

using nixl_backend_t = std::string;
using nixl_blob_t = std::string;
using nixl_mem_list_t = std::vector<nixl_mem_t>;
using nixl_b_params_t = std::unordered_map<std::string, std::string>;
using nixl_query_resp_t = std::optional<nixl_b_params_t>;
using nixlMemViewH = void *;
using notif_list_t = std::vector<std::pair<std::string, std::string>>;

class nixlBackendH;

/* Only passed through (estimateXferCost's last parameter): never built nor read here. */
struct nixlAgentOptionalArgs;
using nixl_opt_args_t = nixlAgentOptionalArgs;

class nixlBasicDesc {
public:
	uintptr_t addr;
	size_t len;
	uint64_t devId;
};

class nixlBlobDesc : public nixlBasicDesc {
public:
	nixl_blob_t metaInfo;
};

class nixlBackendMD {
protected:
	bool isPrivateMD;

public:
	explicit nixlBackendMD(bool isPrivate) : isPrivateMD(isPrivate) {}
	virtual ~nixlBackendMD() {}
};

class nixlBackendReqH {
public:
	nixlBackendReqH() {}
	virtual ~nixlBackendReqH() {}
};

class nixlMetaDesc : public nixlBasicDesc {
public:
	nixlBackendMD *metadataP;
};

struct nixlRemoteMetaDesc : public nixlMetaDesc {
	std::string remoteAgent;
};

/* The core builds these lists; the plugin only reads them (inline members of NIXL's template).
 * Its out-of-line members live in libnixl.so and are never called from here. */
template <class T> class nixlDescList {
protected:
	nixl_mem_t type;
	std::vector<T> descs;

public:
	virtual ~nixlDescList() = default;
	nixl_mem_t getType() const { return type; }
	int descCount() const { return (int)descs.size(); }
	const T &operator[](size_t index) const { return descs[index]; }
	/* NIXL's list has two more virtual members (resize, addDesc) and getIndex after them; the
	 * plugin never calls them, and never creates a list, so they are not declared. */
};

using nixl_meta_dlist_t = nixlDescList<nixlMetaDesc>;
using nixl_remote_meta_dlist_t = nixlDescList<nixlRemoteMetaDesc>;
using nixl_reg_dlist_t = nixlDescList<nixlBlobDesc>;

struct nixlBackendOptionalArgs {
	nixl_blob_t notifMsg;
	bool hasNotif = false;
	nixl_blob_t customParam;
};
using nixl_opt_b_args_t = nixlBackendOptionalArgs;

namespace nixlTime {
using us_t = uint64_t;
}

class nixlBackendInitParams {
public:
	std::string localAgent;
	nixl_backend_t type;
	nixl_b_params_t *customParams = nullptr;
	bool enableProgTh = false;
	nixlTime::us_t pthrDelay = 0;
	nixl_thread_sync_t syncMode;
	bool enableTelemetry_ = false;
};

/* The core moves these out of an engine (an inline accessor); this plugin records none, so only
 * the vector's layout matters. */
struct nixlTelemetryEvent;

class nixlBackendEngine {
private:
	nixl_backend_t backendType;
	nixl_b_params_t customParams;
	std::vector<nixlTelemetryEvent *> telemetryEvents_; /* same layout as NIXL's vector; always empty */
	std::mutex telemetryEventsMutex_;

protected:
	bool initErr = false;
	const std::string localAgent;
	const bool enableTelemetry_;

public:
	explicit nixlBackendEngine(const nixlBackendInitParams *init_params)
		: backendType(init_params->type), customParams(*init_params->customParams),
		  localAgent(init_params->localAgent), enableTelemetry_(init_params->enableTelemetry_)
	{
	}
	nixlBackendEngine(nixlBackendEngine &&) = delete;
	nixlBackendEngine(const nixlBackendEngine &) = delete;
	void operator=(nixlBackendEngine &&) = delete;
	void operator=(const nixlBackendEngine &) = delete;
	virtual ~nixlBackendEngine() = default;

	bool getInitErr() const noexcept { return initErr; }
	const nixl_backend_t &getType() const noexcept { return backendType; }
	const nixl_b_params_t &getCustomParams() const noexcept { return customParams; }

	/* Slot order is ABI: nixl/check_vtable.py compares it with the pinned wheel. */
	virtual bool supportsRemote() const = 0;
	virtual bool supportsLocal() const = 0;
	virtual bool supportsNotif() const = 0;
	virtual nixl_mem_list_t getSupportedMems() const = 0;
	virtual nixl_status_t registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out) = 0;
	virtual nixl_status_t deregisterMem(nixlBackendMD *meta) = 0;
	virtual nixl_status_t connect(const std::string &remote_agent) = 0;
	virtual nixl_status_t disconnect(const std::string &remote_agent) = 0;
	virtual nixl_status_t unloadMD(nixlBackendMD *input) = 0;
	virtual nixl_status_t prepXfer(const nixl_xfer_op_t &operation, const nixl_meta_dlist_t &local,
				       const nixl_meta_dlist_t &remote, const std::string &remote_agent,
				       nixlBackendReqH *&handle, const nixl_opt_b_args_t *opt_args = nullptr) const = 0;
	virtual nixl_status_t postXfer(const nixl_xfer_op_t &operation, const nixl_meta_dlist_t &local,
				       const nixl_meta_dlist_t &remote, const std::string &remote_agent,
				       nixlBackendReqH *&handle, const nixl_opt_b_args_t *opt_args = nullptr) const = 0;
	virtual nixl_status_t checkXfer(nixlBackendReqH *handle) const = 0;
	virtual nixl_status_t releaseReqH(nixlBackendReqH *handle) const = 0;
	virtual nixl_status_t prepMemView(const nixl_remote_meta_dlist_t &, nixlMemViewH &,
					  const nixl_opt_b_args_t * = nullptr) const
	{
		return NIXL_ERR_NOT_SUPPORTED;
	}
	virtual nixl_status_t prepMemView(const nixl_meta_dlist_t &, nixlMemViewH &, const nixl_opt_b_args_t * = nullptr) const
	{
		return NIXL_ERR_NOT_SUPPORTED;
	}
	virtual void releaseMemView(nixlMemViewH) const {}
	virtual nixl_status_t getPublicData(const nixlBackendMD *, std::string &) const { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t getConnInfo(std::string &) const { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t loadRemoteConnInfo(const std::string &, const std::string &) { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t loadRemoteMD(const nixlBlobDesc &, const nixl_mem_t &, const std::string &, nixlBackendMD *&)
	{
		return NIXL_ERR_BACKEND;
	}
	virtual nixl_status_t loadLocalMD(nixlBackendMD *, nixlBackendMD *&) { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t getNotifs(notif_list_t &) { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t genNotif(const std::string &, const std::string &) const { return NIXL_ERR_BACKEND; }
	virtual nixl_status_t queryMem(const nixl_reg_dlist_t &, std::vector<nixl_query_resp_t> &) const
	{
		return NIXL_ERR_NOT_SUPPORTED;
	}
	virtual nixl_status_t estimateXferCost(const nixl_xfer_op_t &, const nixl_meta_dlist_t &, const nixl_meta_dlist_t &,
					       const std::string &, nixlBackendReqH *const &, std::chrono::microseconds &,
					       std::chrono::microseconds &, nixl_cost_t &,
					       const nixl_opt_args_t * = nullptr) const
	{
		return NIXL_ERR_NOT_SUPPORTED;
	}
};

class nixlBackendPlugin {
public:
	int api_version;
	nixlBackendEngine *(*create_engine)(const nixlBackendInitParams *init_params);
	void (*destroy_engine)(nixlBackendEngine *engine);
	const char *(*get_plugin_name)();
	const char *(*get_plugin_version)();
	nixl_b_params_t (*get_backend_options)();
	nixl_mem_list_t (*get_backend_mems)();
};

#endif /* GIOURING_NIXL_PLUGIN_ABI_H */
