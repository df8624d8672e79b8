/* The slack profile's file (giouring/sched/profiler.h): a versioned text format with the model,
 * GPU and engine it was measured for, and a CRC32C over everything before its last line.
 *
 *   giouring-sched-profile 1
 *   model <string>
 *   gpu <string>
 *   engine <string>
 *   layers <L>
 *   input <n> <len>...                       n input lengths, strictly increasing
 *   prefix <m> <len>...                      m prefix lengths, strictly increasing
 *   sm <0|1>                                 whether budget lines follow
 *   slack <layer> <i> <ns>...                m times, for every layer and input point in order
 *   budget <layer> <i> <sms>...              the same order, only with sm 1
 *   crc32c <8 lowercase hex digits>          CRC32C (kv/format.h) of every byte before this line
 *
 * Only integers: no floating point is written (corrections are folded into the times), so no
 * locale can change what is read. Lines end in '\n', fields are separated by one space. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <giouring/kv/format.h>
#include <giouring/sched/profiler.h>

#include "../internal.h"

#define MAGIC "giouring-sched-profile"
#define CRC_LINE_BYTES 16u /* "crc32c " + 8 hex digits + '\n' */

/* ---- identity ---- */

/* The reason a string is no identity, or NULL. */
static const char *ident_problem(const char *s)
{
	size_t n = strnlen(s, GIO_SCHED_IDENT_BYTES);
	size_t i;
	if (n == 0)
		return "is empty";
	if (n == GIO_SCHED_IDENT_BYTES)
		return "has no NUL within 64 bytes";
	for (i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return "holds a character that is not printable ASCII";
	return NULL;
}

static const char *ident_field(const struct gio_sched_identity *id, int i, const char **name)
{
	static const char *const names[3] = {"model", "gpu", "engine"};
	*name = names[i];
	return i == 0 ? id->model : i == 1 ? id->gpu : id->engine;
}

static int ident_check(const struct gio_sched_identity *id, const char *what)
{
	for (int i = 0; i < 3; i++) {
		const char *name, *v = ident_field(id, i, &name), *bad = ident_problem(v);
		if (bad)
			return gio__fail(-EINVAL, "%s: the identity's %s %s", what, name, bad);
	}
	return 0;
}

/* ---- writing ---- */

struct text {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len)
			break;
		size_t cap = t->cap * 2 + (size_t)n + 1;
		char *q = realloc(t->p, cap);
		if (!q) {
			t->err = -ENOMEM;
			return;
		}
		t->p = q;
		t->cap = cap;
	}
	t->len += (size_t)n;
}

/* One line of a layer's cells at input point i: its times (sm 0) or its budgets (sm 1). */
static void put_cells(struct text *t, const struct gio_sched_profile *p, uint32_t l, uint32_t i, int sm)
{
	put(t, "%s %u %u", sm ? "budget" : "slack", l, i);
	for (uint32_t k = 0; k < p->nprefix; k++) {
		const uint32_t c = gio_sched_profile_cell(l, i, k);
		if (sm)
			put(t, " %u", (unsigned)p->sm[c]);
		else
			put(t, " %llu", (unsigned long long)p->slack_ns[c]);
	}
	put(t, "\n");
}

static int encode(const struct gio_sched_profile *p, const struct gio_sched_identity *id, struct text *t)
{
	put(t, MAGIC " %u\nmodel %s\ngpu %s\nengine %s\nlayers %u\ninput %u", GIO_SCHED_PROFILE_VERSION, id->model,
	    id->gpu, id->engine, p->layers, p->ninput);
	for (uint32_t i = 0; i < p->ninput; i++)
		put(t, " %u", p->input[i]);
	put(t, "\nprefix %u", p->nprefix);
	for (uint32_t i = 0; i < p->nprefix; i++)
		put(t, " %u", p->prefix[i]);
	put(t, "\nsm %u\n", p->has_sm);
	for (int sm = 0; sm <= (int)p->has_sm; sm++)
		for (uint32_t l = 0; l < p->layers; l++)
			for (uint32_t i = 0; i < p->ninput; i++)
				put_cells(t, p, l, i, sm);
	if (!t->err)
		put(t, "crc32c %08x\n", gio_kv_crc32c(0, t->p, t->len));
	return t->err;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		const ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int gio_sched_profile_save(const char *path, const struct gio_sched_profile *t, const struct gio_sched_identity *id)
{
	struct gio_sched_profile *folded = NULL;
	struct text txt = {NULL, 0, 0, 0};
	char *tmp = NULL;
	uint32_t reason;
	int rc, fd = -1, created = 0; /* created: tmp names a file of ours, to remove on failure */

	gio__clear_error();
	if (!path || !t || !id)
		return gio__fail(-EINVAL, "gio_sched_profile_save: NULL %s", !path ? "path" : !t ? "profile" : "identity");
	if (gio_sched_profile_check(t, &reason))
		return gio__fail(-EINVAL, "gio_sched_profile_save: %s: the profile is refused: %s", path,
				 gio_sched_profile_reason_name(reason));
	if ((rc = ident_check(id, path)))
		return rc;
	if (!(folded = malloc(sizeof(*folded))) || !(txt.p = malloc(txt.cap = 64 << 10)) ||
	    asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		tmp = NULL;
		rc = gio__fail(-ENOMEM, "gio_sched_profile_save: %s: out of memory", path);
		goto out;
	}
	*folded = *t;
	gio_sched_profile_fold(folded);
	if ((rc = encode(folded, id, &txt))) {
		rc = gio__fail(rc, "gio_sched_profile_save: %s: formatting failed: %s", path, strerror(-rc));
		goto out;
	}
	/* mkstemp's file is 0600; a profile is no secret, and engines may run as other users. */
	if ((fd = mkstemp(tmp)) < 0 || !(created = 1) || fchmod(fd, 0644)) {
		rc = gio__fail(-errno, "gio_sched_profile_save: creating %s: %s", tmp, strerror(errno));
		goto out;
	}
	if ((rc = write_all(fd, txt.p, txt.len)) || (fsync(fd) && (rc = -errno))) {
		rc = gio__fail(rc, "gio_sched_profile_save: writing %s: %s", tmp, strerror(-rc));
		goto out;
	}
	rc = close(fd);
	fd = -1;
	if (rc) {
		rc = gio__fail(-errno, "gio_sched_profile_save: closing %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, path)) {
		rc = gio__fail(-errno, "gio_sched_profile_save: renaming %s to %s: %s", tmp, path, strerror(errno));
		goto out;
	}
	created = 0;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlink(tmp);
	free(tmp);
	free(txt.p);
	free(folded);
	return rc;
}

/* ---- reading ---- */

struct cursor {
	const char *path;
	const char *p, *end; /* the current line's next byte; the end of the lines before the checksum */
	const char *le;      /* the current line's '\n' */
	unsigned line;
};

/* Moves to the next line, which must start with `key` and a space. */
static int next_line(struct cursor *c, const char *key)
{
	const size_t k = strlen(key);
	if (c->line > 0)
		c->p = c->le + 1;
	c->line++;
	if (c->p >= c->end)
		return gio__fail(-EINVAL, "%s: line %u: the file ends where '%s' was expected", c->path, c->line, key);
	c->le = memchr(c->p, '\n', (size_t)(c->end - c->p));
	if ((size_t)(c->le - c->p) <= k || memcmp(c->p, key, k) != 0 || c->p[k] != ' ')
		return gio__fail(-EINVAL, "%s: line %u: expected '%s ...', found '%.*s'", c->path, c->line, key,
				 (int)((c->le - c->p) < 40 ? (c->le - c->p) : 40), c->p);
	c->p += k + 1;
	return 0;
}

/* A decimal number of at most `max`, then a space (`last` 0) or the line's end (`last` 1). */
static int number(struct cursor *c, const char *what, uint64_t max, int last, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = c->p;
	while (c->p < c->le && *c->p >= '0' && *c->p <= '9') {
		const unsigned dgt = (unsigned)(*c->p - '0');
		if (dgt > max || x > (max - dgt) / 10)
			return gio__fail(-EINVAL, "%s: line %u: %s above %llu", c->path, c->line, what,
					 (unsigned long long)max);
		x = x * 10 + dgt;
		c->p++;
	}
	if (c->p == s)
		return gio__fail(-EINVAL, "%s: line %u: %s is not a decimal number", c->path, c->line, what);
	if (last ? c->p != c->le : (c->p == c->le || *c->p != ' '))
		return gio__fail(-EINVAL, "%s: line %u: %s", c->path, c->line,
				 last ? "more than the format's fields" : "fewer than the format's fields");
	if (!last)
		c->p++;
	*v = x;
	return 0;
}

static int u32_field(struct cursor *c, const char *what, uint64_t max, int last, uint32_t *v)
{
	uint64_t x;
	const int rc = number(c, what, max, last, &x);
	if (rc == 0)
		*v = (uint32_t)x;
	return rc;
}

static int ident_line(struct cursor *c, const char *key, char *out)
{
	int rc = next_line(c, key);
	const size_t n = (size_t)(c->le - c->p);
	if (rc)
		return rc;
	if (n >= GIO_SCHED_IDENT_BYTES)
		return gio__fail(-EINVAL, "%s: line %u: %s longer than %u characters", c->path, c->line, key,
				 GIO_SCHED_IDENT_BYTES - 1);
	memcpy(out, c->p, n);
	out[n] = 0;
	if (ident_problem(out))
		return gio__fail(-EINVAL, "%s: line %u: %s %s", c->path, c->line, key, ident_problem(out));
	return 0;
}

static int axis_line(struct cursor *c, const char *key, uint32_t *axis, uint32_t *n)
{
	int rc = next_line(c, key);
	if (!rc)
		rc = u32_field(c, "the point count", GIO_SCHED_AXIS_MAX, 0, n);
	if (!rc && *n == 0)
		rc = gio__fail(-EINVAL, "%s: line %u: %s has no points", c->path, c->line, key);
	for (uint32_t i = 0; i < *n && !rc; i++) {
		rc = u32_field(c, "a length", UINT32_MAX, i + 1 == *n, &axis[i]);
		if (!rc && i > 0 && axis[i] <= axis[i - 1])
			rc = gio__fail(-EINVAL, "%s: line %u: %s lengths not strictly increasing (%u after %u)", c->path,
				       c->line, key, axis[i], axis[i - 1]);
	}
	return rc;
}

static int cells_line(struct cursor *c, struct gio_sched_profile *p, uint32_t l, uint32_t i, int sm)
{
	const char *key = sm ? "budget" : "slack";
	uint32_t fl, fi;
	int rc = next_line(c, key);
	if (!rc)
		rc = u32_field(c, "the layer", UINT32_MAX, 0, &fl);
	if (!rc)
		rc = u32_field(c, "the input point", UINT32_MAX, 0, &fi);
	if (!rc && (fl != l || fi != i))
		rc = gio__fail(-EINVAL, "%s: line %u: %s of layer %u, input point %u where layer %u, input point %u was "
				        "expected", c->path, c->line, key, fl, fi, l, i);
	for (uint32_t k = 0; k < p->nprefix && !rc; k++) {
		const uint32_t cell = gio_sched_profile_cell(l, i, k);
		const int last = k + 1 == p->nprefix;
		uint64_t v;
		rc = number(c, sm ? "a budget" : "a time", sm ? UINT16_MAX : UINT64_MAX, last, &v);
		if (!rc && sm)
			p->sm[cell] = (uint16_t)v;
		else if (!rc)
			p->slack_ns[cell] = v;
	}
	return rc;
}

static int decode(struct cursor *c, struct gio_sched_profile *p, struct gio_sched_identity *id)
{
	uint32_t input[GIO_SCHED_AXIS_MAX], prefix[GIO_SCHED_AXIS_MAX], layers, ninput, nprefix, has_sm;
	int rc;
	if ((rc = next_line(c, MAGIC)) || (rc = ident_line(c, "model", id->model)) ||
	    (rc = ident_line(c, "gpu", id->gpu)) || (rc = ident_line(c, "engine", id->engine)) ||
	    (rc = next_line(c, "layers")) || (rc = u32_field(c, "layers", GIO_SCHED_LAYERS_MAX, 1, &layers)) ||
	    (rc = axis_line(c, "input", input, &ninput)) || (rc = axis_line(c, "prefix", prefix, &nprefix)) ||
	    (rc = next_line(c, "sm")) || (rc = u32_field(c, "sm", 1, 1, &has_sm)))
		return rc;
	if (layers == 0)
		return gio__fail(-EINVAL, "%s: line 5: no layers", c->path);
	gio_sched_profile_init(p, layers, input, ninput, prefix, nprefix, NULL); /* checked above */
	p->has_sm = has_sm;
	for (int sm = 0; sm <= (int)has_sm; sm++)
		for (uint32_t l = 0; l < layers; l++)
			for (uint32_t i = 0; i < ninput; i++)
				if ((rc = cells_line(c, p, l, i, sm)))
					return rc;
	if (c->le + 1 != c->end)
		return gio__fail(-EINVAL, "%s: line %u: more lines than the format's before the checksum", c->path,
				 c->line + 1);
	return 0;
}

/* The whole file, at most GIO_SCHED_PROFILE_FILE_MAX bytes, in *buf (malloc). */
static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	int rc = 0;
	*buf = NULL;
	if (!f)
		return gio__fail(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st))
		rc = gio__fail(-errno, "%s: %s", path, strerror(errno));
	else if (st.st_size > (off_t)GIO_SCHED_PROFILE_FILE_MAX)
		rc = gio__fail(-EFBIG, "%s: larger than %u bytes: not a profile", path, GIO_SCHED_PROFILE_FILE_MAX);
	else if (!(*buf = malloc((size_t)st.st_size + 1)))
		rc = gio__fail(-ENOMEM, "%s: out of memory", path);
	else {
		/* One byte more than its size, to see a file that grows while it is read; one that
		 * shrinks is refused by its checksum line. */
		*len = fread(*buf, 1, (size_t)st.st_size + 1, f);
		if (ferror(f))
			rc = gio__fail(-EIO, "%s: read error", path);
		else if (*len > (size_t)st.st_size)
			rc = gio__fail(-EAGAIN, "%s: grew while it was read", path);
	}
	fclose(f);
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

/* The magic line and the version: what the file is, before anything of its contents is trusted. */
static int check_magic(const char *path, const char *b, size_t len)
{
	const size_t k = sizeof(MAGIC) - 1;
	const char *nl = memchr(b, '\n', len);
	unsigned long long v = 0;
	size_t i;
	if (len < k + 1 || memcmp(b, MAGIC " ", k + 1) != 0)
		return gio__fail(-EINVAL, "%s: not a scheduler profile (no '" MAGIC "' line at the start)", path);
	for (i = k + 1; nl && b + i < nl && b[i] >= '0' && b[i] <= '9' && v < 1000000; i++)
		v = v * 10 + (unsigned)(b[i] - '0');
	if (!nl || i == k + 1 || b + i != nl)
		return gio__fail(-EINVAL, "%s: line 1: no version after '" MAGIC "'", path);
	if (v != GIO_SCHED_PROFILE_VERSION)
		return gio__fail(-EOPNOTSUPP, "%s: profile format version %llu; this library reads version %u", path, v,
				 GIO_SCHED_PROFILE_VERSION);
	return 0;
}

/* The checksum line at the end, against everything before it. Sets *body to the bytes it covers. */
static int check_crc(const char *path, const char *b, size_t len, size_t *body)
{
	const char *line = len > CRC_LINE_BYTES ? b + len - CRC_LINE_BYTES : NULL;
	uint32_t want = 0;
	if (!line || line[-1] != '\n' || memcmp(line, "crc32c ", 7) != 0 || line[CRC_LINE_BYTES - 1] != '\n')
		return gio__fail(-EINVAL, "%s: cut short: no 'crc32c' line at the end", path);
	for (unsigned i = 7; i < CRC_LINE_BYTES - 1; i++) {
		const char h = line[i];
		if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f')))
			return gio__fail(-EINVAL, "%s: cut short: no 'crc32c' line at the end", path);
		want = want << 4 | (uint32_t)(h <= '9' ? h - '0' : h - 'a' + 10);
	}
	*body = len - CRC_LINE_BYTES;
	const uint32_t got = gio_kv_crc32c(0, b, *body);
	if (got != want)
		return gio__fail(-EILSEQ, "%s: damaged: its contents give CRC32C %08x, its last line says %08x", path, got,
				 want);
	return 0;
}

int gio_sched_profile_load(const char *path, const struct gio_sched_identity *expect, struct gio_sched_profile *t,
			   struct gio_sched_identity *id)
{
	struct gio_sched_identity got;
	struct gio_sched_profile *p = NULL;
	struct cursor c;
	char *buf = NULL;
	size_t len = 0, body = 0;
	int rc;

	gio__clear_error();
	if (!path || !t)
		return gio__fail(-EINVAL, "gio_sched_profile_load: NULL %s", !path ? "path" : "profile");
	if (expect && (rc = ident_check(expect, "gio_sched_profile_load: the identity expected")))
		return rc;
	if ((rc = read_file(path, &buf, &len)))
		return rc;
	if ((rc = check_magic(path, buf, len)) || (rc = check_crc(path, buf, len, &body)))
		goto out;
	if (!(p = malloc(sizeof(*p)))) {
		rc = gio__fail(-ENOMEM, "%s: out of memory", path);
		goto out;
	}
	memset(&got, 0, sizeof(got));
	c = (struct cursor){path, buf, buf + body, NULL, 0};
	if ((rc = decode(&c, p, &got)))
		goto out;
	if (id)
		*id = got;
	for (int i = 0; expect && i < 3; i++) {
		const char *name, *want = ident_field(expect, i, &name), *have = ident_field(&got, i, &name);
		if (strcmp(want, have) != 0) {
			rc = gio__fail(-ESTALE, "%s: measured for %s '%s', not '%s': profile again "
					        "(gio_sched_profile_run), or load it without an identity to expect and "
					        "let gio_sched_profile_observe() recalibrate it", path, name, have, want);
			goto out;
		}
	}
	*t = *p;
out:
	free(p);
	free(buf);
	return rc;
}
