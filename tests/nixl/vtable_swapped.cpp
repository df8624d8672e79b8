/*
 * A plugin-shaped library whose nixlBackendEngine has two virtual functions in the wrong order
 * (supportsLocal before supportsRemote), nothing else: ctest nixl.vtable_catches checks that
 * nixl/check_vtable.py reports it against the pinned wheel, so the guard is known to fail when
 * the declarations drift.
 */
#include <string>
#include <vector>

enum nixl_mem_t { DRAM_SEG };

class nixlBackendEngine {
public:
	virtual ~nixlBackendEngine(); /* out of line: the key function, so this vtable is emitted (the
				       * check sizes the table by it) also where -O2 drops unused ones */
	virtual bool supportsLocal() const = 0; /* swapped */
	virtual bool supportsRemote() const = 0;
	virtual bool supportsNotif() const = 0;
	virtual std::vector<nixl_mem_t> getSupportedMems() const = 0;
};

nixlBackendEngine::~nixlBackendEngine() = default;

namespace gio_nixl {

class engine : public nixlBackendEngine {
public:
	bool supportsLocal() const override { return true; }
	bool supportsRemote() const override { return false; }
	bool supportsNotif() const override { return false; }
	std::vector<nixl_mem_t> getSupportedMems() const override { return {DRAM_SEG}; }
};

} // namespace gio_nixl

/* Keeps the vtables in the library. */
extern "C" __attribute__((visibility("default"))) void *gio_nixl_vtable_probe()
{
	return new gio_nixl::engine();
}
