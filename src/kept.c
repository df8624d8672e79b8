/* Memory the library leaves allocated on purpose: a buffer that a device or the kernel may still
 * write after the call that owned it gave up on it (a command past its deadline, an io_uring
 * request abandoned at close). Freeing it would let a late write land in reused memory; so it is
 * kept here, reachable, so that leak checkers see it as kept rather than lost. Past the table's
 * end it is simply dropped (still never freed). */
#include "internal.h"

static void *kept[256];
static uint32_t kept_n;

void gio__keep(void *p)
{
	const uint32_t i = __atomic_fetch_add(&kept_n, 1, __ATOMIC_RELAXED);
	if (p && i < sizeof(kept) / sizeof(kept[0]))
		__atomic_store_n(&kept[i], p, __ATOMIC_RELAXED);
}
