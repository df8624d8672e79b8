/* giouring-store: shows and checks a KV store's devices offline (docs/store-format.md), reading
 * them through the store's own device code (src/kv/dev.h) and decoding with giouring/kv/format.h,
 * and resolving keys found twice with the host index the store's open uses, so that what it
 * reports is what an open would see. It only ever reads the media: file:// targets must exist
 * and are never resized (size= is refused). Exit status: show 0, check 0 when clean and 1 when
 * it found problems; 2 for a usage error or a target it could not open or read. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>

#include "../src/kv/dev.h"
#include "../src/kv/index.h"

#define TOOL_TIMEOUT_NS 5000000000ull
#define MAX_TARGETS GIO_KV_STORE_MAX_DEVICES

enum { EXIT_CLEAN = 0, EXIT_PROBLEMS = 1, EXIT_TROUBLE = 2 };

struct target {
	const char *uri;
	struct gio_ctx *ctx;
	struct gio__kv_dev dv;
	int sb_rc;          /* gio_kv_sb_decode() */
	uint32_t sb_reason;
	int usable;         /* superblock decoded and fits the device: its entries are scanned */
	uint32_t ix_dev;    /* its device number in the index (store order) */
	uint64_t valid, stale, free, refused, unreadable, bytes_used;
	uint64_t by_reason[GIO_KV_R_COUNT];
};

struct tool {
	int check;          /* the command is check (else show) */
	int entries;        /* show --entries */
	int progress;       /* progress lines on stderr: 1 asked for, 2 a terminal's (once a scan is long) */
	uint32_t n;
	struct target t[MAX_TARGETS];
	struct target *order[MAX_TARGETS]; /* usable targets in store order: what the open scans */
	uint32_t nusable;
	struct gio__kv_index *ix;
	uint64_t problems;
	int trouble;        /* something could not be opened or read */
	uint64_t *data_len; /* per index slot id: bytes of a VALID entry, for the loser of a duplicate */
	uint64_t total_entries, done_entries, next_pct;
	struct timespec scan_start, last_progress;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: giouring-store show [--entries] URI...\n"
		"       giouring-store check [--progress] URI...\n"
		"       giouring-store --help\n"
		"\n"
		"Reads the devices of a giouring KV store (its on-device format: docs/store-format.md)\n"
		"and never writes them. URI is a target as gio_ctx_open() takes it, one per device of\n"
		"the store in any order: file:///path/dev0.img (an existing file; size= is refused, the\n"
		"file's own size is used), nvme-pci://0000:01:00.0, with lba= where the store's block\n"
		"size is not 4096.\n"
		"\n"
		"show     every superblock (store id, device index and count, format version, block size,\n"
		"         layers and object bytes, slot bytes, pool signature, slots, index and data LBAs,\n"
		"         store blocks) and each device's usage: valid chunks, stale entries (VALID but an\n"
		"         older commit of a key stored again elsewhere), free slots, damaged entries (torn,\n"
		"         damaged or another store's, by reason), unreadable entry blocks, bytes used.\n"
		"         --entries also lists every VALID, stale, damaged or unreadable entry (slot,\n"
		"         state, key in hex, sequence, data length); FREE and never-written ones are counted.\n"
		"check    an offline consistency check: the superblocks against their devices and each\n"
		"         other (one store id, device indices 0..n-1 each once, one shape and pool\n"
		"         signature, the device count), every entry decoded at its position, every VALID\n"
		"         slot inside its device's data region, no key VALID in two slots (both named,\n"
		"         and which sequence an open keeps). Prints each problem with its device and slot,\n"
		"         then the counts. --progress prints a line on stderr every second or 10%% of the\n"
		"         entries (on a terminal the default, once a scan has taken a second).\n"
		"\n"
		"Exit status: 0 shown, or checked clean; 1 check found problems; 2 usage error, or a\n"
		"target that could not be opened or read.\n");
}

static void key_hex(struct gio_kv_u128 k, char out[33])
{
	snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, k.hi, k.lo);
}

static const char *dev_name(const struct target *t, char *buf, size_t len)
{
	if (t->sb_rc == 0)
		snprintf(buf, len, "device %u (%s)", t->dv.sb.device_index, t->uri);
	else
		snprintf(buf, len, "%s", t->uri);
	return buf;
}

static void problem(struct tool *tl, const struct target *t, const char *fmt, ...)
{
	char name[600];
	va_list ap;
	tl->problems++;
	if (!tl->check)
		return;
	printf("problem: %s: ", dev_name(t, name, sizeof(name)));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Refuses what could create or resize a file: the library opens files read-write, creating a
 * missing one and growing a short one to size=. */
static int check_uri(const char *uri)
{
	const char *q;
	char path[4096];
	struct stat st;
	size_t len;
	if (strncmp(uri, "file://", 7))
		return 0;
	q = strchr(uri + 7, '?');
	len = q ? (size_t)(q - (uri + 7)) : strlen(uri + 7);
	if (len == 0 || len >= sizeof(path)) {
		fprintf(stderr, "giouring-store: %s: no file path\n", uri);
		return -EINVAL;
	}
	memcpy(path, uri + 7, len);
	path[len] = 0;
	if (q && (strstr(q, "?size=") == q || strstr(q, "&size="))) {
		fprintf(stderr, "giouring-store: %s: size= would resize the file; leave it out (the file's size is used)\n",
			uri);
		return -EINVAL;
	}
	if (stat(path, &st)) {
		fprintf(stderr, "giouring-store: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_target(struct target *t)
{
	int rc = check_uri(t->uri);
	if (rc)
		return rc;
	rc = gio_ctx_open(t->uri, &t->ctx);
	if (rc) {
		fprintf(stderr, "giouring-store: %s: cannot open: %s\n", t->uri, gio_last_error());
		return rc;
	}
	rc = gio__kv_dev_attach(&t->dv, t->ctx, 0, 0, TOOL_TIMEOUT_NS);
	if (!rc)
		rc = gio__kv_dev_rw(&t->dv, 0, 0, 1, "reading the superblock");
	if (rc) {
		fprintf(stderr, "giouring-store: %s: %s\n", t->uri, gio_last_error());
		return rc;
	}
	t->sb_rc = gio_kv_sb_decode(t->dv.mem, &t->dv.sb, &t->sb_reason);
	if (t->sb_rc == 0)
		gio_kv_sb_layout(&t->dv.sb, &t->dv.lay);
	else
		t->dv.sb.device_index = 0;
	return 0;
}

static void close_target(struct target *t)
{
	if (!t->ctx)
		return;
	gio__kv_dev_detach(&t->dv, NULL);
	gio_ctx_close(t->ctx);
	t->ctx = NULL;
}

static void print_superblock(const struct target *t)
{
	const struct gio_kv_sb *sb = &t->dv.sb;
	char id[33];
	printf("%s\n", t->uri);
	if (t->sb_rc) {
		printf("  superblock: refused: %s\n", gio_kv_reason_str(t->sb_reason));
		return;
	}
	key_hex(sb->store_id, id);
	printf("  superblock: store %s, device %u of %u, format version %u\n", id, sb->device_index,
	       sb->device_count, sb->version);
	printf("  geometry: %u layers x %" PRIu64 " bytes, slot %" PRIu64 " bytes (%" PRIu64 " blocks of %u), pool signature 0x%016" PRIx64 "\n",
	       sb->layers, sb->object_bytes, sb->slot_bytes, t->dv.lay.slot_blocks, sb->block_bytes, sb->pool_signature);
	printf("  layout: %" PRIu64 " slots, index LBA %" PRIu64 ", data LBA %" PRIu64 ", store blocks %" PRIu64
	       " (device: %" PRIu64 " blocks of %u)\n",
	       sb->slots, sb->index_lba, sb->data_lba, sb->store_blocks, t->dv.info.nblocks, t->dv.info.lba_bytes);
}

static void print_usage_line(const char *indent, uint64_t valid, uint64_t stale, uint64_t free_, uint64_t refused,
			     uint64_t unreadable, uint64_t bytes)
{
	printf("%susage: %" PRIu64 " valid, %" PRIu64 " stale, %" PRIu64 " free, %" PRIu64 " damaged, %" PRIu64
	       " unreadable; %" PRIu64 " bytes used\n",
	       indent, valid, stale, free_, refused, unreadable, bytes);
}

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress(struct tool *tl)
{
	struct timespec now;
	uint64_t pct;
	if (!tl->progress || !tl->total_entries)
		return;
	pct = tl->done_entries * 100 / tl->total_entries;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* A terminal gets lines only from a scan that has taken a second: a small store's would be noise. */
	if (tl->progress == 2 && since(&tl->scan_start, &now) < 1.0)
		return;
	if (pct < tl->next_pct && since(&tl->last_progress, &now) < 1.0)
		return;
	fprintf(stderr, "giouring-store: %" PRIu64 " of %" PRIu64 " entries read (%" PRIu64 "%%)\n", tl->done_entries,
		tl->total_entries, pct);
	tl->last_progress = now;
	while (tl->next_pct <= pct)
		tl->next_pct += 10;
}

struct visit_arg {
	struct tool *tl;
	struct target *t;
};

static uint64_t entry_bytes(const struct target *t, const struct gio_kv_entry *e)
{
	return e->data_len ? e->data_len : t->dv.sb.slot_bytes;
}

/* A key VALID in two slots: the index decides as the open does (the higher sequence; on a tie the
 * one scanned first) and names the loser, which becomes stale. */
static void report_duplicate(struct tool *tl, struct gio_kv_u128 key, const struct gio__kv_loc *lost)
{
	struct gio__kv_loc win;
	uint64_t win_seq = 0, lost_seq = 0;
	struct target *wt, *lt;
	char k[33], name[600];
	uint32_t lost_id;
	if (gio__kv_index_lookup(tl->ix, key, 0, &win) ||
	    gio__kv_index_locate(tl->ix, lost->device, lost->slot, &lost_id))
		return;
	gio__kv_index_peek(tl->ix, win.id, NULL, NULL, NULL, NULL, NULL, &win_seq);
	gio__kv_index_peek(tl->ix, lost_id, NULL, NULL, NULL, NULL, NULL, &lost_seq);
	wt = tl->order[win.device];
	lt = tl->order[lost->device];
	lt->valid--;
	lt->stale++;
	lt->bytes_used -= tl->data_len[lost_id];
	key_hex(key, k);
	if (tl->check)
		problem(tl, lt, "slot %" PRIu64 ": key %s VALID here (sequence %" PRIu64 ") and in device %u slot %" PRIu64
			" (sequence %" PRIu64 "): an open keeps device %u slot %" PRIu64 " (%s)",
			lost->slot, k, lost_seq, wt->dv.sb.device_index, win.slot, win_seq, wt->dv.sb.device_index, win.slot,
			win_seq == lost_seq ? "equal sequences: the one scanned first" : "the higher sequence");
	else if (tl->entries)
		printf("  %s slot %" PRIu64 ": stale: key %s (sequence %" PRIu64 ") kept in device %u slot %" PRIu64
		       " (sequence %" PRIu64 ")\n",
		       dev_name(lt, name, sizeof(name)), lost->slot, k, lost_seq, wt->dv.sb.device_index, win.slot, win_seq);
}

/* One entry of a device's scan: counted, listed (show --entries), checked (check). */
static int scan_visit(void *arg, uint64_t slot, int rc, uint32_t reason, const struct gio_kv_entry *e)
{
	struct visit_arg *a = arg;
	struct tool *tl = a->tl;
	struct target *t = a->t;
	struct gio__kv_loc lost;
	char k[33];
	uint32_t id;
	tl->done_entries++;
	progress(tl);
	if (rc == -ENODATA || (rc == 0 && e->state == GIO_KV_ENTRY_FREE)) {
		t->free++;
		return 0;
	}
	if (rc == -EPROTO) {
		t->refused++;
		t->by_reason[reason < GIO_KV_R_COUNT ? reason : 0]++;
		problem(tl, t, "slot %" PRIu64 ": entry refused: %s", slot, gio_kv_reason_str(reason));
		if (tl->entries)
			printf("    slot %" PRIu64 " damaged: %s\n", slot, gio_kv_reason_str(reason));
		return 0;
	}
	if (rc) {
		t->unreadable++;
		tl->trouble = 1;
		if (tl->check)
			printf("unreadable: %s: slot %" PRIu64 ": entry block could not be read (%s)\n", t->uri, slot,
			       strerror(-rc));
		if (tl->entries)
			printf("    slot %" PRIu64 " unreadable: %s\n", slot, strerror(-rc));
		return 0;
	}
	/* The layout check of the superblock's decode puts every slot below slots inside the data
	 * region; checked again here because a reader serves these blocks. */
	if (gio_kv_slot_lba(&t->dv.lay, slot) + t->dv.lay.slot_blocks > t->dv.lay.store_blocks)
		problem(tl, t, "slot %" PRIu64 ": VALID entry outside the data region", slot);
	t->valid++;
	t->bytes_used += entry_bytes(t, e);
	if (tl->entries) {
		key_hex(e->key, k);
		printf("    slot %" PRIu64 " VALID key %s seq %" PRIu64 " len %" PRIu64 "\n", slot, k, e->seq, e->data_len);
	}
	if (gio__kv_index_locate(tl->ix, t->ix_dev, slot, &id) == 0)
		tl->data_len[id] = entry_bytes(t, e);
	rc = gio__kv_index_rebuild_insert(tl->ix, e->key, t->ix_dev, slot, e->seq, &lost);
	if (rc == 1)
		report_duplicate(tl, e->key, &lost);
	else if (rc < 0) {
		fprintf(stderr, "giouring-store: %s: slot %" PRIu64 ": %s\n", t->uri, slot, gio_last_error());
		return rc;
	}
	return 0;
}

/* Orders the usable targets as the open would scan them (by device index; ties in argument
 * order) and builds the index over them. */
static int make_index(struct tool *tl)
{
	uint64_t slots[MAX_TARGETS], cap = 0;
	uint32_t i, j;
	int rc;
	tl->nusable = 0;
	for (i = 0; i < tl->n; i++) {
		struct target *t = &tl->t[i];
		if (!t->usable)
			continue;
		for (j = tl->nusable; j > 0 && tl->order[j - 1]->dv.sb.device_index > t->dv.sb.device_index; j--)
			tl->order[j] = tl->order[j - 1];
		tl->order[j] = t;
		tl->nusable++;
	}
	for (j = 0; j < tl->nusable; j++) {
		tl->order[j]->ix_dev = j;
		slots[j] = tl->order[j]->dv.lay.slots;
		cap += slots[j];
	}
	tl->total_entries = cap;
	if (!tl->nusable)
		return 0;
	rc = gio__kv_index_create(&tl->ix, slots, tl->nusable);
	if (rc) {
		fprintf(stderr, "giouring-store: %s\n", gio_last_error());
		return rc;
	}
	tl->data_len = calloc(cap ? cap : 1, sizeof(*tl->data_len));
	if (!tl->data_len) {
		fprintf(stderr, "giouring-store: no memory for %" PRIu64 " slots\n", cap);
		return -ENOMEM;
	}
	return 0;
}

/* The superblocks against their devices and each other: each problem named, then the verdict of
 * gio_kv_sb_check_set(), the check an open makes. */
static void check_superblocks(struct tool *tl)
{
	struct gio_kv_sb sbs[MAX_TARGETS];
	const struct target *ref = NULL;
	const struct target *owner[MAX_TARGETS];
	uint32_t i, d, nsb = 0, reason = GIO_KV_R_OK, which = 0;
	char name[600];
	memset(owner, 0, sizeof(owner));
	for (i = 0; i < tl->n; i++) {
		struct target *t = &tl->t[i];
		const struct gio_kv_sb *sb = &t->dv.sb;
		if (t->sb_rc) {
			problem(tl, t, "superblock refused: %s", gio_kv_reason_str(t->sb_reason));
			continue;
		}
		if (gio_kv_sb_check_device(sb, t->dv.info.lba_bytes, t->dv.info.nblocks, &reason))
			problem(tl, t, "superblock does not fit the device: %s (superblock: %" PRIu64 " blocks of %u; device: %" PRIu64
				" blocks of %u); entries not scanned",
				gio_kv_reason_str(reason), sb->store_blocks, sb->block_bytes, t->dv.info.nblocks,
				t->dv.info.lba_bytes);
		else
			t->usable = 1;
		sbs[nsb++] = *sb;
		if (sb->device_count != tl->n)
			problem(tl, t, "device count %u, but %u targets given", sb->device_count, tl->n);
		if (!ref) {
			ref = t;
		} else {
			if (!gio_kv_u128_eq(sb->store_id, ref->dv.sb.store_id))
				problem(tl, t, "store id differs from %s's", dev_name(ref, name, sizeof(name)));
			if (gio_kv_sb_check_shape(sb, ref->dv.sb.layers, ref->dv.sb.object_bytes, ref->dv.sb.pool_signature,
						  &reason))
				problem(tl, t, "%s against %s", gio_kv_reason_str(reason), dev_name(ref, name, sizeof(name)));
		}
		if (sb->device_index < MAX_TARGETS) {
			if (owner[sb->device_index])
				problem(tl, t, "device index %u also claimed by %s", sb->device_index, owner[sb->device_index]->uri);
			else
				owner[sb->device_index] = t;
		}
	}
	for (d = 0; ref && d < tl->n; d++)
		if (!owner[d])
			printf("problem: no target given is device %u of the store\n", d), tl->problems++;
	if (nsb == tl->n && gio_kv_sb_check_set(sbs, nsb, &reason, &which) == 0)
		printf("superblocks: %u devices of one store\n", nsb);
	else if (nsb == tl->n)
		printf("superblocks: an open refuses them: %s: %s\n", tl->t[which].uri, gio_kv_reason_str(reason));
	else
		printf("superblocks: an open refuses them: %u of %u refused\n", tl->n - nsb, tl->n);
}

static int scan_all(struct tool *tl)
{
	uint32_t j;
	int rc;
	clock_gettime(CLOCK_MONOTONIC, &tl->scan_start);
	tl->last_progress = tl->scan_start;
	tl->next_pct = 10;
	for (j = 0; j < tl->nusable; j++) {
		struct visit_arg a = {tl, tl->order[j]};
		char name[600];
		if (tl->entries)
			printf("%s entries:\n", dev_name(a.t, name, sizeof(name)));
		rc = gio__kv_dev_scan(&a.t->dv, scan_visit, &a);
		if (rc) {
			if (rc == -ETIME)
				fprintf(stderr, "giouring-store: %s: %s\n", a.t->uri, gio_last_error());
			tl->trouble = 1;
			return rc;
		}
	}
	return 0;
}

static void print_counts(struct tool *tl)
{
	uint64_t v = 0, st = 0, f = 0, r = 0, u = 0, b = 0;
	uint32_t i, k;
	for (i = 0; i < tl->n; i++) {
		const struct target *t = &tl->t[i];
		char name[600];
		printf("%s: ", dev_name(t, name, sizeof(name)));
		if (t->usable)
			print_usage_line("", t->valid, t->stale, t->free, t->refused, t->unreadable, t->bytes_used);
		else
			printf("not scanned: %s\n", t->sb_rc ? "no superblock" : "the superblock does not fit the device");
		for (k = 1; k < GIO_KV_R_COUNT; k++)
			if (t->by_reason[k])
				printf("  damaged: %" PRIu64 " %s\n", t->by_reason[k], gio_kv_reason_str(k));
		v += t->valid, st += t->stale, f += t->free, r += t->refused, u += t->unreadable, b += t->bytes_used;
	}
	printf("store: %u device%s; ", tl->n, tl->n == 1 ? "" : "s");
	print_usage_line("", v, st, f, r, u, b);
	if (tl->check)
		printf("check: %" PRIu64 " problem%s%s\n", tl->problems, tl->problems == 1 ? "" : "s",
		       tl->trouble ? "; some blocks could not be read" : "");
}

int main(int argc, char **argv)
{
	struct tool *tl;
	uint32_t i;
	int a, rc = 0, status;
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		usage(stdout);
		return EXIT_CLEAN;
	}
	if (argc < 2 || (strcmp(argv[1], "show") && strcmp(argv[1], "check"))) {
		usage(stderr);
		return EXIT_TROUBLE;
	}
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return EXIT_TROUBLE;
	tl->check = !strcmp(argv[1], "check");
	tl->progress = tl->check && isatty(STDERR_FILENO) ? 2 : 0;
	for (a = 2; a < argc; a++) {
		if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
			usage(stdout);
			free(tl);
			return EXIT_CLEAN;
		} else if (!tl->check && !strcmp(argv[a], "--entries")) {
			tl->entries = 1;
		} else if (tl->check && !strcmp(argv[a], "--progress")) {
			tl->progress = 1;
		} else if (argv[a][0] == '-') {
			fprintf(stderr, "giouring-store: %s: unknown option for %s (giouring-store --help)\n", argv[a], argv[1]);
			free(tl);
			return EXIT_TROUBLE;
		} else if (tl->n == MAX_TARGETS) {
			fprintf(stderr, "giouring-store: more than %u targets (a store has at most %u devices)\n", MAX_TARGETS,
				MAX_TARGETS);
			free(tl);
			return EXIT_TROUBLE;
		} else {
			tl->t[tl->n++].uri = argv[a];
		}
	}
	if (tl->n == 0) {
		fprintf(stderr, "giouring-store: %s: no target URI given (giouring-store --help)\n", argv[1]);
		free(tl);
		return EXIT_TROUBLE;
	}
	for (i = 0; i < tl->n && !rc; i++)
		rc = open_target(&tl->t[i]);
	if (!rc) {
		if (tl->check) {
			check_superblocks(tl);
		} else {
			/* show scans what a check would: superblocks that fit their devices. */
			for (i = 0; i < tl->n; i++)
				print_superblock(&tl->t[i]);
			for (i = 0; i < tl->n; i++)
				tl->t[i].usable = tl->t[i].sb_rc == 0 &&
						  gio_kv_sb_check_device(&tl->t[i].dv.sb, tl->t[i].dv.info.lba_bytes,
									 tl->t[i].dv.info.nblocks, NULL) == 0;
		}
		rc = make_index(tl);
	}
	if (!rc)
		rc = scan_all(tl);
	if (!rc)
		print_counts(tl);
	for (i = 0; i < tl->n; i++)
		close_target(&tl->t[i]);
	gio__kv_index_destroy(tl->ix);
	free(tl->data_len);
	status = rc || tl->trouble ? EXIT_TROUBLE : tl->check && tl->problems ? EXIT_PROBLEMS : EXIT_CLEAN;
	free(tl);
	return status;
}
