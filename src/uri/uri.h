/* Target URIs, parsed one way for every target (gio_ctx_open(), gio_gpu_target_parse()):
 * a location (`file:///path`, `mem://host`, `nvme-pci://BDF`, or empty) and `?key=value&...`.
 *
 * Use: gio__uri_split(), then one getter per key the target accepts, then gio__uri_done(), which
 * refuses any parameter no getter asked for and lists those that were asked for. Getters return
 * 1 (present and valid: *out set), 0 (absent: *out untouched) or -EINVAL with a message
 * (gio_last_error()) naming the key, its value and what is allowed. */
#ifndef GIOURING_SRC_URI_URI_H
#define GIOURING_SRC_URI_URI_H

#include <stdint.h>

#include <giouring/config.h>

GIO_EXTERN_C_BEGIN

#define GIO__URI_MAX_BYTES 4096u
#define GIO__URI_MAX_PARAMS 32u

struct gio__uri_param {
	const char *key, *val;
	int used;
};

struct gio__uri {
	char buf[GIO__URI_MAX_BYTES];
	const char *location; /* what precedes '?' */
	uint32_t n;
	struct gio__uri_param p[GIO__URI_MAX_PARAMS];
	char known[512]; /* the keys getters asked for, for gio__uri_done()'s message */
};

/* Splits @uri (NULL is ""); -EINVAL for a URI too long, a parameter without '=' or key, a key
 * given twice, or too many parameters. */
int gio__uri_split(struct gio__uri *u, const char *uri);

/* A number (digits, optional K M G T suffix: giouring/host/uri.h) within [lo, hi]; @help, when
 * not NULL, replaces "a number from lo to hi" in the message. */
int gio__uri_u64(struct gio__uri *u, const char *key, uint64_t lo, uint64_t hi, const char *help, uint64_t *out);

/* The same into a 32-bit field (hi at most UINT32_MAX). */
int gio__uri_u32(struct gio__uri *u, const char *key, uint32_t lo, uint32_t hi, const char *help, uint32_t *out);

/* The same, and a power of two. */
int gio__uri_pow2(struct gio__uri *u, const char *key, uint64_t lo, uint64_t hi, uint64_t *out);

/* One of @choices (a NULL-terminated list): *out receives its index; @help explains them. */
int gio__uri_choice(struct gio__uri *u, const char *key, const char *const *choices, const char *help, int *out);

/* A decimal number (strtod) within [lo, hi]. */
int gio__uri_double(struct gio__uri *u, const char *key, double lo, double hi, double *out);
/* The SSD timing model a software target stands in with (model_read_gbps, model_write_gbps,
 * model_mixed_gbps: GB/s; model_lat_us: each batch's least time; each 0 to 1e6, absent 0; mixed
 * absent: the smaller of read and write) into out[0..3]: 1 when any was given, 0 when none, or
 * -EINVAL with a message. */
int gio__uri_model(struct gio__uri *u, double out[4]);

/* 0, or -EINVAL naming the first parameter that no getter asked for, for target @what. */
int gio__uri_done(struct gio__uri *u, const char *what);

GIO_EXTERN_C_END

#endif
