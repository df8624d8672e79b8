#include "engine.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>

#include "options.h"

namespace gio_nixl {

namespace {

/* What a registration is: a span of the caller's memory, or one chunk of the store. */
class mem_md : public nixlBackendMD {
public:
	mem_md(nixl_mem_t t, uintptr_t a, size_t l) : nixlBackendMD(true), type(t), addr(a), len(l) {}
	nixl_mem_t type;
	uintptr_t addr;
	size_t len;
	gio_kv_u128 key{0, 0}; /* OBJ_SEG */
};

class req : public nixlBackendReqH {
public:
	std::shared_ptr<xfer_job> job = std::make_shared<xfer_job>();
};

std::mutex registry_mu;
std::map<std::string, engine *> registry;

} // namespace

engine *find_engine(const std::string &agent)
{
	std::lock_guard<std::mutex> g(registry_mu);
	const auto it = registry.find(agent);
	return it == registry.end() ? nullptr : it->second;
}

engine::engine(const nixlBackendInitParams *init) : nixlBackendEngine(init)
{
	kv_config c;
	std::string msg;
	int rc = parse_options(getCustomParams(), c, msg);
	if (rc == 0)
		rc = kv_.open(c, msg);
	if (rc) {
		fail(NIXL_ERR_BACKEND, "cannot start: " + msg);
		initErr = true;
		return;
	}
	{
		std::lock_guard<std::mutex> g(registry_mu);
		registry[localAgent] = this;
	}
	worker_ = std::thread([this] { work(); });
}

engine::~engine()
{
	{
		std::lock_guard<std::mutex> g(registry_mu);
		const auto it = registry.find(localAgent);
		if (it != registry.end() && it->second == this)
			registry.erase(it);
	}
	{
		std::lock_guard<std::mutex> g(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	/* Bounded: the transfer in progress ends within its commands' deadlines. */
	if (worker_.joinable())
		worker_.join();
}

nixl_mem_list_t supported_mems()
{
	if (kv_has_cuda())
		return {DRAM_SEG, VRAM_SEG, OBJ_SEG};
	return {DRAM_SEG, OBJ_SEG};
}

nixl_mem_list_t engine::getSupportedMems() const
{
	return supported_mems();
}

nixl_status_t engine::fail(nixl_status_t st, const std::string &msg) const
{
	std::fprintf(stderr, "nixl GIOURING backend (agent %s): %s\n", localAgent.c_str(), msg.c_str());
	std::lock_guard<std::mutex> g(mu_);
	last_error_ = msg;
	return st;
}

std::string engine::last_error() const
{
	std::lock_guard<std::mutex> g(mu_);
	return last_error_;
}

int engine::direct(bool write, const std::vector<kv_item> &items, std::string &msg)
{
	std::lock_guard<std::mutex> g(io_mu_);
	return kv_.transfer(write, items, msg);
}

int engine::inject(uint32_t dev, uint64_t nth, uint32_t status, std::string &msg)
{
	std::lock_guard<std::mutex> g(io_mu_);
	return kv_.inject(dev, nth, status, msg);
}

nixl_status_t engine::registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out)
{
	auto md = std::make_unique<mem_md>(nixl_mem, mem.addr, mem.len);
	if (nixl_mem == DRAM_SEG || (nixl_mem == VRAM_SEG && kv_has_cuda())) {
		if (mem.addr == 0 || mem.len == 0)
			return fail(NIXL_ERR_INVALID_PARAM, "registerMem: memory at address 0 or of length 0");
	} else if (nixl_mem == OBJ_SEG) {
		if (!key_parse(mem.metaInfo, md->key))
			return fail(NIXL_ERR_INVALID_PARAM, "registerMem: an OBJ_SEG's metaInfo is the chunk's key, 32 hex "
							    "digits, not '" + mem.metaInfo + "'");
		if (mem.len != 0 && mem.len != kv_.chunk_bytes())
			return fail(NIXL_ERR_INVALID_PARAM, "registerMem: object " + mem.metaInfo + " has length " +
							    std::to_string(mem.len) + "; a chunk is " +
							    std::to_string(kv_.chunk_bytes()) + " bytes (or give 0)");
	} else {
		return fail(NIXL_ERR_NOT_SUPPORTED, "registerMem: memory type " + std::to_string((int)nixl_mem) +
							    (kv_has_cuda() ? " (GIOURING takes DRAM_SEG, VRAM_SEG and OBJ_SEG)"
									   : " (GIOURING takes DRAM_SEG and OBJ_SEG in this build without CUDA)"));
	}
	out = md.release();
	return NIXL_SUCCESS;
}

nixl_status_t engine::deregisterMem(nixlBackendMD *meta)
{
	delete meta;
	return NIXL_SUCCESS;
}

nixl_status_t engine::connect(const std::string &remote_agent)
{
	return remote_agent == localAgent ? NIXL_SUCCESS : NIXL_ERR_NOT_SUPPORTED;
}

nixl_status_t engine::disconnect(const std::string &remote_agent)
{
	return remote_agent == localAgent ? NIXL_SUCCESS : NIXL_ERR_NOT_SUPPORTED;
}

/* A local backend's "remote" metadata is its own registration: nothing to load or unload. */
nixl_status_t engine::loadLocalMD(nixlBackendMD *input, nixlBackendMD *&output)
{
	output = input;
	return NIXL_SUCCESS;
}

nixl_status_t engine::unloadMD(nixlBackendMD *)
{
	return NIXL_SUCCESS;
}

nixl_status_t engine::prepXfer(const nixl_xfer_op_t &op, const nixl_meta_dlist_t &local, const nixl_meta_dlist_t &remote,
			       const std::string &remote_agent, nixlBackendReqH *&handle, const nixl_opt_b_args_t *) const
{
	const uint64_t chunk = kv_.chunk_bytes();
	if (remote_agent != localAgent)
		return fail(NIXL_ERR_NOT_SUPPORTED, "prepXfer: GIOURING is a local backend; the target agent is '" +
							    remote_agent + "', not '" + localAgent + "'");
	if (op != NIXL_READ && op != NIXL_WRITE)
		return fail(NIXL_ERR_INVALID_PARAM, "prepXfer: unknown operation");
	const bool vram = local.getType() == VRAM_SEG && kv_has_cuda();
	if ((local.getType() != DRAM_SEG && !vram) || remote.getType() != OBJ_SEG)
		return fail(NIXL_ERR_NOT_SUPPORTED, "prepXfer: GIOURING moves between DRAM_SEG or VRAM_SEG (local) and "
							    "OBJ_SEG (remote), not memory types " +
							    std::to_string((int)local.getType()) + " and " +
							    std::to_string((int)remote.getType()));
	if (local.descCount() != remote.descCount())
		return fail(NIXL_ERR_INVALID_PARAM, "prepXfer: " + std::to_string(local.descCount()) + " local and " +
							    std::to_string(remote.descCount()) + " remote descriptors");
	auto r = std::make_unique<req>();
	r->job->write = op == NIXL_WRITE;
	r->job->items.reserve((size_t)local.descCount());
	for (int i = 0; i < local.descCount(); i++) {
		const nixlMetaDesc &l = local[(size_t)i], &o = remote[(size_t)i];
		const auto *lm = static_cast<const mem_md *>(l.metadataP);
		const auto *om = static_cast<const mem_md *>(o.metadataP);
		const std::string at = "prepXfer: descriptor " + std::to_string(i) + ": ";
		if (!lm || lm->type != local.getType() || l.addr < lm->addr || l.addr + l.len > lm->addr + lm->len)
			return fail(NIXL_ERR_INVALID_PARAM, at + "its memory is not registered with GIOURING");
		if (!om || om->type != OBJ_SEG)
			return fail(NIXL_ERR_INVALID_PARAM, at + "its object is not registered with GIOURING");
		if (o.addr != 0 || o.len != chunk || l.len != chunk)
			return fail(NIXL_ERR_INVALID_PARAM, at + "a descriptor moves one whole chunk: offset 0 and " +
								    std::to_string(chunk) + " bytes on both sides (got offset " +
								    std::to_string(o.addr) + ", lengths " + std::to_string(l.len) +
								    " and " + std::to_string(o.len) + ")");
		r->job->items.push_back(kv_item{om->key, l.addr, vram});
	}
	handle = r.release();
	return NIXL_SUCCESS;
}

nixl_status_t engine::postXfer(const nixl_xfer_op_t &op, const nixl_meta_dlist_t &local, const nixl_meta_dlist_t &remote,
			       const std::string &remote_agent, nixlBackendReqH *&handle, const nixl_opt_b_args_t *) const
{
	(void)local;
	(void)remote;
	(void)remote_agent;
	auto *r = static_cast<req *>(handle);
	if (!r)
		return fail(NIXL_ERR_INVALID_PARAM, "postXfer: no handle (prepXfer first)");
	if ((op == NIXL_WRITE) != r->job->write)
		return fail(NIXL_ERR_INVALID_PARAM, "postXfer: the operation differs from the one prepared");
	if (r->job->state.load(std::memory_order_acquire) == NIXL_IN_PROG)
		return NIXL_ERR_REPOST_ACTIVE;
	/* A repost gets a fresh job: a worker still holding the old one cannot touch the new state. */
	auto job = std::make_shared<xfer_job>();
	job->write = r->job->write;
	job->items = r->job->items;
	job->state.store(NIXL_IN_PROG, std::memory_order_relaxed);
	r->job = job;
	{
		std::lock_guard<std::mutex> g(mu_);
		queue_.push_back(std::move(job));
	}
	cv_.notify_one();
	return NIXL_IN_PROG;
}

nixl_status_t engine::checkXfer(nixlBackendReqH *handle) const
{
	const auto *r = static_cast<const req *>(handle);
	if (!r)
		return NIXL_ERR_INVALID_PARAM;
	return static_cast<nixl_status_t>(r->job->state.load(std::memory_order_acquire));
}

nixl_status_t engine::releaseReqH(nixlBackendReqH *handle) const
{
	delete static_cast<req *>(handle);
	return NIXL_SUCCESS;
}

void engine::work()
{
	for (;;) {
		std::shared_ptr<xfer_job> job;
		{
			std::unique_lock<std::mutex> g(mu_);
			/* Idle wait in slices, so that a stop is seen even if a notify is missed. */
			while (queue_.empty() && !stop_)
				cv_.wait_for(g, std::chrono::milliseconds(100));
			if (queue_.empty())
				return;
			job = std::move(queue_.front());
			queue_.pop_front();
		}
		std::string msg;
		int rc;
		{
			std::lock_guard<std::mutex> g(io_mu_);
			rc = kv_.transfer(job->write, job->items, msg);
		}
		if (rc)
			fail(NIXL_ERR_BACKEND, std::string(job->write ? "WRITE" : "READ") + " failed: " + msg);
		/* Release: the chunks' bytes are in the caller's memory before the state says so. */
		job->state.store(rc ? NIXL_ERR_BACKEND : NIXL_SUCCESS, std::memory_order_release);
	}
}

} // namespace gio_nixl
