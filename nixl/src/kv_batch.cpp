#include "kv_batch.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <giouring/target/gpu_target.h>

#include "gpy.h"

namespace gio_nixl {

namespace {

std::string errno_name(int rc)
{
	return std::string(std::strerror(rc < 0 ? -rc : rc));
}

} // namespace

std::string key_hex(gio_kv_u128 key)
{
	char b[40];
	std::snprintf(b, sizeof(b), "%016" PRIx64 "%016" PRIx64, key.hi, key.lo);
	return b;
}

bool key_parse(const std::string &s, gio_kv_u128 &key)
{
	uint64_t part[2] = {0, 0};
	if (s.size() != 32)
		return false;
	for (size_t i = 0; i < 32; i++) {
		const char c = s[i];
		uint64_t v;
		if (c >= '0' && c <= '9')
			v = (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (uint64_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = (uint64_t)(c - 'A' + 10);
		else
			return false;
		part[i / 16] = part[i / 16] << 4 | v;
	}
	key.hi = part[0];
	key.lo = part[1];
	return true;
}

bool kv_has_cuda()
{
#ifdef GIOURING_NIXL_CUDA
	return true;
#else
	return false;
#endif
}

kv_batch::~kv_batch()
{
	if (plan_)
		gpy_plan_destroy(plan_);
	if (store_)
		gpy_store_close(store_);
#ifdef GIOURING_NIXL_CUDA
	if (gpu_) {
		device_stream::release(pool_);
		return;
	}
#endif
	std::free(pool_);
}

void *kv_batch::stream() const
{
#ifdef GIOURING_NIXL_CUDA
	return dev_open_ ? dev_.handle() : nullptr;
#else
	return nullptr;
#endif
}

int kv_batch::copy(bool to_pool, const kv_item &item, uint32_t block, std::string &msg)
{
	uint8_t *const pool = pool_ + (uint64_t)block * chunk_;
	void *const user = reinterpret_cast<void *>(item.addr);
	if (!gpu_ && !item.vram) {
		std::memcpy(to_pool ? pool : user, to_pool ? user : pool, chunk_);
		return 0;
	}
#ifdef GIOURING_NIXL_CUDA
	if (!dev_open_) {
		msg = "GPU memory, but CUDA device " + std::to_string(cfg_.device) + " could not be used when the backend started";
		return -ENODEV;
	}
	return dev_.copy(to_pool ? (void *)pool : user, to_pool ? user : (const void *)pool, chunk_, msg);
#else
	msg = "GPU memory in a build without CUDA";
	return -EOPNOTSUPP;
#endif
}

int kv_batch::copies_wait(std::string &msg)
{
#ifdef GIOURING_NIXL_CUDA
	if (dev_open_)
		return dev_.wait(cfg_.timeout_ns, msg);
#endif
	(void)msg;
	return 0;
}

int kv_batch::open(const kv_config &c, std::string &msg)
{
	std::vector<const char *> uris;
	gpy_pool_desc d;
	uint64_t region[2];
	int rc;
	cfg_ = c;
	if (c.uris.empty() || c.uris.size() > GIO_KV_STORE_MAX_DEVICES) {
		msg = "parameter uris: 1 to " + std::to_string(GIO_KV_STORE_MAX_DEVICES) +
		      " target URIs separated by ';' (file:///path?size=1G, mem://host?size=256M, nvme-pci://...)";
		return -EINVAL;
	}
	if (c.layers == 0 || c.object_bytes == 0 || c.object_bytes > UINT32_MAX || c.blocks == 0) {
		msg = "parameters layers, object_bytes and blocks must be at least 1 (object_bytes below 4 GiB)";
		return -EINVAL;
	}
	chunk_ = (uint64_t)c.layers * c.object_bytes;
	/* Pages for the pool: the targets' DMA registration and their SGL rules like aligned memory. */
	const uint64_t bytes = (chunk_ * c.blocks + 4095) & ~4095ull;
	unsigned gpu_targets = 0;
	for (const auto &u : c.uris) {
		gio_gpu_target_config tc;
		gpu_targets += gio_gpu_target_parse(u.c_str(), &tc) == 0;
	}
	gpu_ = gpu_targets > 0;
	if (gpu_ && gpu_targets != c.uris.size()) {
		msg = "parameter uris: a store's targets are all GPU-executed (mem://hbm, exec=gpu) or none is";
		return -EINVAL;
	}
#ifdef GIOURING_NIXL_CUDA
	if ((rc = dev_.open(c.device, msg)) != 0)
		msg = "CUDA device " + std::to_string(c.device) + ": " + msg;
	dev_open_ = rc == 0;
	/* Without a GPU the backend still serves DRAM over CPU-executed targets. */
	if (gpu_ && !dev_open_)
		return rc;
	if (gpu_) {
		void *p = nullptr;
		if ((rc = dev_.alloc(bytes, &p, msg)) != 0)
			return rc;
		pool_ = static_cast<uint8_t *>(p);
	}
#else
	if (gpu_) {
		msg = "parameter uris: GPU-executed targets need a build of the plugin with CUDA";
		return -EOPNOTSUPP;
	}
#endif
	if (!gpu_) {
		if (!(pool_ = static_cast<uint8_t *>(std::aligned_alloc(4096, bytes)))) {
			msg = "no memory for the pool of " + std::to_string(c.blocks) + " chunks";
			return -ENOMEM;
		}
		std::memset(pool_, 0, bytes);
	}
	/* Blocks first: chunk b's layer l at b x chunk + l x object_bytes, so a chunk is one run of
	 * memory, the same bytes as the caller's buffer. */
	std::memset(&d, 0, sizeof(d));
	d.base_mode = GIO_KV_BASE_ONE;
	d.elem_bytes = 1;
	for (unsigned i = 0; i < GIO_KV_DIMS; i++)
		d.extent[i] = 1;
	d.extent[GIO_KV_LAYER] = c.layers;
	d.extent[GIO_KV_BLOCK] = c.blocks;
	d.extent[GIO_KV_CHANNEL] = (uint32_t)c.object_bytes;
	d.stride[GIO_KV_LAYER] = c.object_bytes;
	d.stride[GIO_KV_BLOCK] = chunk_;
	d.stride[GIO_KV_CHANNEL] = 1;
	d.base = (uint64_t)(uintptr_t)pool_;
	region[0] = d.base;
	region[1] = bytes;
	d.regions = region;
	d.nregions = 1;
	d.device = gpu_ ? c.device : -1;
	for (const auto &u : c.uris)
		uris.push_back(u.c_str());
	rc = gpy_store_open(uris.data(), (uint32_t)uris.size(), &d, c.create ? 1 : 0, c.store_bytes, c.timeout_ns, &store_);
	if (rc) {
		store_ = nullptr;
		msg = std::string(c.create ? "creating" : "opening") + " the store: " + gpy_last_error();
		return rc;
	}
	rc = gpy_plan_create(store_, gpu_ ? GIO_KV_ENGINE_GPU : GIO_KV_ENGINE_CPU, c.blocks, c.queues, 0, 0, 0,
			     c.timeout_ns, 0, 0, GIO_KV_MOVER_SM, GIO_KV_COMPLETIONS_POLL, &plan_);
	if (rc) {
		plan_ = nullptr;
		msg = std::string("making the plan: ") + gpy_last_error();
		return rc;
	}
	return 0;
}

int kv_batch::inject(uint32_t dev, uint64_t nth, uint32_t status, std::string &msg)
{
	const int rc = gpy_store_inject(store_, dev, nth, status);
	if (rc)
		msg = gpy_last_error();
	return rc;
}

int kv_batch::transfer(bool write, const std::vector<kv_item> &items, std::string &msg)
{
	for (size_t i = 0; i < items.size(); i += cfg_.blocks) {
		const size_t n = items.size() - i < cfg_.blocks ? items.size() - i : cfg_.blocks;
		const int rc = batch(write, &items[i], (uint32_t)n, (uint32_t)i, msg);
		if (rc)
			return rc;
	}
	return 0;
}

std::string kv_batch::remove_unreadable(const std::vector<uint64_t> &keys, const std::vector<int32_t> &rcs,
				       std::vector<uint8_t> &removed)
{
	/* A chunk whose read failed stays stored, and a WRITE of its key is taken as done
	 * (-EEXIST), so every later READ of it would fail again. The store removes those whose
	 * failure would repeat (the device's error at once; a missed deadline the second time,
	 * since once is no proof the bytes are bad), and the next WRITE stores them anew (a drive
	 * remaps a bad block when it is written). Every key goes: a miss or a success is left. */
	removed.assign(rcs.size(), 0);
	if (gpy_store_remove_failed(store_, keys.data(), rcs.data(), (uint32_t)rcs.size(), removed.data()) < 0)
		return std::string("; removing the chunks whose reads failed from the store failed: ") + gpy_last_error();
	return "";
}

int kv_batch::batch(bool write, const kv_item *items, uint32_t n, uint32_t first, std::string &msg)
{
	std::vector<uint64_t> keys(2 * (size_t)n);
	std::vector<uint32_t> blocks(n);
	std::vector<int32_t> rcs(n);
	std::vector<uint16_t> status(n), layer(n);
	std::vector<uint8_t> hit(n);
	int rc, planned;
	for (uint32_t i = 0; i < n; i++) {
		keys[2 * i] = items[i].key.hi;
		keys[2 * i + 1] = items[i].key.lo;
		blocks[i] = i;
		if (write && (rc = copy(true, items[i], i, msg)) != 0)
			return rc;
	}
	if (write && (rc = copies_wait(msg)) != 0)
		return rc;
	planned = write ? gpy_plan_save(plan_, keys.data(), blocks.data(), n, rcs.data())
			: gpy_plan_load(plan_, keys.data(), blocks.data(), n, hit.data());
	if (planned < 0) {
		msg = std::string(write ? "planning the save: " : "planning the load: ") + gpy_last_error();
		return planned;
	}
	std::string layer_msg;
	int layer_rc = 0;
	/* A load with a miss moves nothing: the transfer fails as a whole. */
	bool miss = false;
	for (uint32_t i = 0; !write && i < n; i++)
		miss |= !hit[i];
	for (uint32_t l = 0; planned > 0 && !miss && l < cfg_.layers; l++) {
		if ((layer_rc = gpy_plan_layer(plan_, l, write ? 1 : 0, stream())) != 0) {
			layer_msg = gpy_last_error();
			break;
		}
	}
	rc = gpy_plan_finish(plan_, rcs.data(), status.data(), layer.data(), 0);
	const std::string finish_msg = rc ? gpy_last_error() : "";
	std::vector<uint8_t> removed(n, 0);
	const std::string remove_failed = write ? "" : remove_unreadable(keys, rcs, removed);
	for (uint32_t i = 0; i < n; i++) {
		const std::string what = "object " + key_hex(items[i].key) + " (descriptor " + std::to_string(first + i) + ")";
		if (!write && !hit[i]) {
			msg = what + ": not in the store (a miss)";
			return -ENOENT;
		}
		/* -EEXIST: a key names its bytes, and those are stored already. */
		if (rcs[i] == 0 || (write && rcs[i] == -EEXIST))
			continue;
		msg = what + ": " + errno_name(rcs[i]);
		if (layer[i] != 0xffff)
			msg += " in layer " + std::to_string(layer[i]);
		if (status[i])
			msg += std::string(", NVMe status ") + gpy_status_str(status[i]);
		if (!finish_msg.empty())
			msg += " (" + finish_msg + ")";
		/* This key's own fate: another key of the batch may be the one removed. */
		if (removed[i])
			msg += "; removed from the store, so that a WRITE of it stores it anew";
		msg += remove_failed;
		return rcs[i];
	}
	if (layer_rc) {
		msg = "running the layers: " + layer_msg;
		return layer_rc;
	}
	if (rc) {
		msg = "finishing the batch: " + finish_msg;
		return rc;
	}
	for (uint32_t i = 0; !write && i < n; i++)
		if ((rc = copy(false, items[i], i, msg)) != 0)
			return rc;
	return write ? 0 : copies_wait(msg);
}

} // namespace gio_nixl
