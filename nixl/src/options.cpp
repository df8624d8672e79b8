#include "options.h"

#include <cerrno>
#include <cstdlib>

namespace gio_nixl {

nixl_b_params_t default_options()
{
	const kv_config c;
	return {
		{"uris", ""}, /* required: target URIs separated by ';' */
		{"layers", std::to_string(c.layers)},
		{"object_bytes", ""}, /* required */
		{"blocks", std::to_string(c.blocks)},
		{"queues", std::to_string(c.queues)},
		{"create", "0"},
		{"store_bytes", "0"},
		{"timeout_ms", std::to_string(c.timeout_ns / 1000000)},
		{"device", std::to_string(c.device)},
	};
}

namespace {

int number(const std::string &name, const std::string &v, uint64_t min, uint64_t max, uint64_t &out, std::string &msg)
{
	char *end = nullptr;
	errno = 0;
	const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
	if (v.empty() || v[0] < '0' || v[0] > '9' || errno || *end || x < min || x > max) {
		msg = "parameter " + name + "='" + v + "': a whole number from " + std::to_string(min) + " to " +
		      std::to_string(max);
		return -EINVAL;
	}
	out = x;
	return 0;
}

} // namespace

int parse_options(const nixl_b_params_t &params, kv_config &c, std::string &msg)
{
	const nixl_b_params_t defaults = default_options();
	for (const auto &kv : params)
		if (!defaults.count(kv.first)) {
			msg = "unknown parameter '" + kv.first + "' (known: uris, layers, object_bytes, blocks, queues, "
								 "create, store_bytes, timeout_ms, device)";
			return -EINVAL;
		}
	auto get = [&](const char *k) {
		const auto it = params.find(k);
		return it == params.end() ? defaults.at(k) : it->second;
	};
	uint64_t v;
	std::string uris = get("uris");
	c.uris.clear();
	for (size_t at = 0; at <= uris.size();) {
		const size_t semi = uris.find(';', at);
		const std::string u = uris.substr(at, semi == std::string::npos ? std::string::npos : semi - at);
		if (!u.empty())
			c.uris.push_back(u);
		if (semi == std::string::npos)
			break;
		at = semi + 1;
	}
	if (c.uris.empty()) {
		msg = "parameter uris is required: target URIs separated by ';' (file:///path?size=1G, mem://host?size=256M)";
		return -EINVAL;
	}
	if (number("layers", get("layers"), 1, 65535, v, msg))
		return -EINVAL;
	c.layers = (uint32_t)v;
	if (get("object_bytes").empty()) {
		msg = "parameter object_bytes is required: bytes of one layer object (a multiple of the targets' block size)";
		return -EINVAL;
	}
	if (number("object_bytes", get("object_bytes"), 1, UINT32_MAX, c.object_bytes, msg))
		return -EINVAL;
	if (number("blocks", get("blocks"), 1, 1u << 20, v, msg))
		return -EINVAL;
	c.blocks = (uint32_t)v;
	if (number("queues", get("queues"), 1, 8, v, msg))
		return -EINVAL;
	c.queues = (uint32_t)v;
	if (number("create", get("create"), 0, 1, v, msg))
		return -EINVAL;
	c.create = v == 1;
	if (number("store_bytes", get("store_bytes"), 0, UINT64_MAX, c.store_bytes, msg))
		return -EINVAL;
	if (number("timeout_ms", get("timeout_ms"), 1, 3600000, v, msg))
		return -EINVAL;
	c.timeout_ns = v * 1000000ull;
	if (number("device", get("device"), 0, 1023, v, msg))
		return -EINVAL;
	c.device = (int)v;
	return 0;
}

} // namespace gio_nixl
