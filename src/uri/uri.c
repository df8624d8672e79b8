/* Target URI parsing (see uri.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/uri.h>

#include "../internal.h"
#include "uri.h"

int gio__uri_split(struct gio__uri *u, const char *uri)
{
	char *q, *kv, *save = NULL;
	memset(u, 0, sizeof(*u));
	if (!uri)
		uri = "";
	if (strlen(uri) >= sizeof(u->buf))
		return gio__fail(-EINVAL, "giouring: URI longer than %zu bytes", sizeof(u->buf) - 1);
	memcpy(u->buf, uri, strlen(uri) + 1);
	u->location = u->buf;
	q = strchr(u->buf, '?');
	if (!q)
		return 0;
	*q++ = 0;
	for (kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		uint32_t i;
		if (!eq)
			return gio__fail(-EINVAL, "giouring: URI parameter '%s' has no value (key=value)", kv);
		*eq = 0;
		if (!kv[0])
			return gio__fail(-EINVAL, "giouring: URI parameter '=%s' has no name", eq + 1);
		for (i = 0; i < u->n; i++)
			if (!strcmp(u->p[i].key, kv))
				return gio__fail(-EINVAL, "giouring: URI parameter %s is given twice (%s=%s and %s=%s)", kv, kv,
						 u->p[i].val, kv, eq + 1);
		if (u->n == GIO__URI_MAX_PARAMS)
			return gio__fail(-EINVAL, "giouring: more than %u URI parameters", GIO__URI_MAX_PARAMS);
		u->p[u->n].key = kv;
		u->p[u->n].val = eq + 1;
		u->n++;
	}
	return 0;
}

/* The parameter @key, marked used, or NULL; records @key for gio__uri_done()'s message. */
static struct gio__uri_param *take(struct gio__uri *u, const char *key)
{
	const size_t have = strlen(u->known);
	uint32_t i;
	snprintf(u->known + have, sizeof(u->known) - have, "%s%s", have ? ", " : "", key);
	for (i = 0; i < u->n; i++) {
		if (!strcmp(u->p[i].key, key)) {
			u->p[i].used = 1;
			return &u->p[i];
		}
	}
	return NULL;
}

int gio__uri_u64(struct gio__uri *u, const char *key, uint64_t lo, uint64_t hi, const char *help, uint64_t *out)
{
	const struct gio__uri_param *p = take(u, key);
	char range[96];
	uint64_t v;
	int rc;
	if (!p)
		return 0;
	snprintf(range, sizeof(range), "a number from %" PRIu64 " to %" PRIu64, lo, hi);
	rc = gio_uri_number(p->val, &v);
	if (rc == -ERANGE)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s is out of range (%s)", key, p->val, help ? help : range);
	if (rc)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s is not a number (digits, then K, M, G or T)", key, p->val);
	if (v < lo || v > hi)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s: %s", key, p->val, help ? help : range);
	*out = v;
	return 1;
}

int gio__uri_u32(struct gio__uri *u, const char *key, uint32_t lo, uint32_t hi, const char *help, uint32_t *out)
{
	uint64_t v = 0;
	const int rc = gio__uri_u64(u, key, lo, hi, help, &v);
	if (rc == 1)
		*out = (uint32_t)v;
	return rc;
}

int gio__uri_pow2(struct gio__uri *u, const char *key, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char help[96];
	uint64_t v = 0;
	int rc;
	snprintf(help, sizeof(help), "a power of two from %" PRIu64 " to %" PRIu64, lo, hi);
	rc = gio__uri_u64(u, key, lo, hi, help, &v);
	if (rc == 1 && (v & (v - 1)))
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%" PRIu64 ": %s", key, v, help);
	if (rc == 1)
		*out = v;
	return rc;
}

int gio__uri_choice(struct gio__uri *u, const char *key, const char *const *choices, const char *help, int *out)
{
	const struct gio__uri_param *p = take(u, key);
	int i;
	if (!p)
		return 0;
	for (i = 0; choices[i]; i++) {
		if (!strcmp(p->val, choices[i])) {
			*out = i;
			return 1;
		}
	}
	return gio__fail(-EINVAL, "giouring: URI parameter %s=%s: %s", key, p->val, help);
}

int gio__uri_double(struct gio__uri *u, const char *key, double lo, double hi, double *out)
{
	const struct gio__uri_param *p = take(u, key);
	char *end;
	double v;
	if (!p)
		return 0;
	errno = 0;
	v = strtod(p->val, &end);
	if (!p->val[0] || *end || errno || !(v >= lo && v <= hi))
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s: a number from %g to %g", key, p->val, lo, hi);
	*out = v;
	return 1;
}

int gio__uri_model(struct gio__uri *u, double out[4])
{
	static const char *const keys[4] = {"model_read_gbps", "model_write_gbps", "model_mixed_gbps", "model_lat_us"};
	int rc, given = 0;
	for (int k = 0; k < 4; k++) {
		out[k] = 0;
		if ((rc = gio__uri_double(u, keys[k], 0, 1e6, &out[k])) < 0)
			return rc;
		given |= rc;
	}
	/* Reads and writes at once: the slower direction's rate, unless given. */
	if (given && out[2] == 0)
		out[2] = out[0] < out[1] ? out[0] : out[1];
	return given;
}

int gio__uri_done(struct gio__uri *u, const char *what)
{
	uint32_t i;
	for (i = 0; i < u->n; i++)
		if (!u->p[i].used)
			return gio__fail(-EINVAL, "giouring: unknown URI parameter '%s' for %s (%s)", u->p[i].key, what,
					 u->known[0] ? u->known : "it takes none");
	return 0;
}
