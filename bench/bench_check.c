/* bench_check: what checked submission (giouring/ring/check.h, URI check=1) costs per command on
 * a CPU thread, beside the same commands put on a queue pair unchecked, in the same process.
 *
 * For each data pointer shape and number of registered regions (the command's memory in the last
 * region of the table: the lookup is linear, so this is its worst case), it times:
 * - check: gio_qp_check_sqe() alone;
 * - put, unchecked: gio_qp_reserve() + gio_qp_put() + gio_qp_publish() of one command on a queue
 *   pair whose doorbell is a memory word, the slot recycled by hand (no controller: the ring's
 *   own cost, the least a submission costs);
 * - put, checked: the same with gio_qp::check set.
 * Measured, one thread, median of --reps repetitions with the spread (min-max).
 *
 * Output: the machine line and a Markdown table on stdout. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/ring/check.h>
#include <giouring/ring/qp.h>

#define MAX_REGIONS 64u
#define REGION_BYTES (1u << 20)
#define DEPTH 1024u

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct shape {
	const char *name;
	int sgl;        /* 0 PRP, 1 SGL */
	uint32_t bytes; /* transfer */
	uint32_t ranges; /* SGL: data descriptors in one segment; PRP: 1 */
};

static const struct shape shapes[] = {
	{"PRP, 4 KiB (PRP1)", 0, 4096, 1},
	{"PRP, 32 KiB (list of 7)", 0, 32768, 1},
	{"PRP, 128 KiB (list of 31)", 0, 131072, 1},
	{"SGL, 32 KiB data block", 1, 32768, 1},
	{"SGL, 32 KiB in 8 descriptors", 1, 32768, 8},
};

static unsigned char *mem[MAX_REGIONS];
static struct gio_dma_region regions[MAX_REGIONS];

/* The command of `s` over the last of `n` regions (lists at its start, data after). */
static void build(const struct shape *s, uint32_t n, const struct gio_dptr_caps *caps, struct gio_sqe *sqe)
{
	const struct gio_dma_region *r = &regions[n - 1];
	struct gio_range rg[8];
	uint32_t i;
	int rc;
	gio_prep_read(sqe, 1, 0, s->bytes / 4096);
	for (i = 0; i < s->ranges; i++) {
		rg[i].addr = r->addr + 65536 + (uint64_t)i * 8192; /* gaps: descriptors do not merge */
		rg[i].len = s->bytes / s->ranges;
	}
	if (s->sgl)
		rc = gio_sgl_build(sqe, rg, s->ranges, caps, (struct gio_sgl_desc *)r->ptr, r->addr, 4096);
	else
		rc = gio_prp_build(sqe, rg, 1, caps, (gio_prp_entry *)r->ptr, r->addr, 4096);
	if (rc < 0) {
		fprintf(stderr, "bench_check: building %s failed: %d\n", s->name, rc);
		exit(1);
	}
}

/* ns per call of `what` (0 check, 1 put unchecked, 2 put checked), `iters` calls. */
static double run(int what, struct gio_qp_check *ck, const struct gio_sqe *sqe, uint32_t iters)
{
	static struct gio_sqe sq[DEPTH];
	static struct gio_cqe cq[DEPTH];
	static struct gio_cmd_slot slots[DEPTH];
	static uint32_t sq_db, cq_db;
	struct gio_qp qp;
	volatile int sink = 0;
	uint32_t i, idx;
	double t0;
	if (gio_qp_init(&qp, sq, DEPTH, cq, DEPTH, slots, 1, &sq_db, &cq_db, 0)) {
		fprintf(stderr, "bench_check: gio_qp_init failed\n");
		exit(1);
	}
	qp.check = what == 2 ? ck : NULL;
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		if (what == 0) {
			sink += gio_qp_check_sqe(ck, sqe);
			continue;
		}
		if (gio_qp_reserve(&qp, 1, &idx) || gio_qp_put(&qp, idx, sqe, i, 0)) {
			fprintf(stderr, "bench_check: a put failed at %u\n", i);
			exit(1);
		}
		gio_qp_publish(&qp);
		/* The controller's part, by hand: the command completed and its result was taken. */
		slots[idx & (DEPTH - 1)].state = gio__qp_word(&qp, idx + DEPTH, GIO_CMD_FREE);
		qp.sq_head = idx + 1;
	}
	(void)sink;
	return (now_ns() - t0) / iters;
}

int main(int argc, char **argv)
{
	uint32_t reps = 5, iters = 200000, n_list[] = {1, 8, 64};
	struct gio_dma_map map = {regions, 0};
	struct gio_qp_check ck;
	struct utsname u;
	char cpu[256] = "unknown CPU";
	FILE *f;
	size_t si, ni;
	uint32_t i;
	for (i = 1; i < (uint32_t)argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			reps = 1;
			iters = 2000;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < (uint32_t)argc) {
			reps = (uint32_t)atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: bench_check [--quick] [--reps N]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 99)
		reps = 5;
	for (i = 0; i < MAX_REGIONS; i++) {
		mem[i] = aligned_alloc(4096, REGION_BYTES);
		memset(mem[i], 0, REGION_BYTES);
		regions[i].addr = 0x100000000ull + (uint64_t)i * 2 * REGION_BYTES;
		regions[i].len = REGION_BYTES;
		regions[i].ptr = mem[i];
	}
	memset(&ck, 0, sizeof(ck));
	ck.map = &map;
	ck.caps.sgls = GIO_SGLS_SUPPORT_BYTE;
	ck.caps.page_bytes = 4096;
	ck.lba_shift = 12;
	uname(&u);
	if ((f = fopen("/proc/cpuinfo", "r"))) {
		char line[512];
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
				snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
				cpu[strcspn(cpu, "\n")] = 0;
				break;
			}
		fclose(f);
	}
	printf("machine: %s, %ld online CPUs, %s %s; one thread; measured, median of %u (min-max)\n\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, reps);
	printf("| data pointer | regions | check ns | put unchecked ns | put checked ns | added per command |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
	for (si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		for (ni = 0; ni < sizeof(n_list) / sizeof(n_list[0]); ni++) {
			double t[3][99], med[3];
			struct gio_sqe sqe;
			int w;
			map.count = n_list[ni];
			build(&shapes[si], n_list[ni], &ck.caps, &sqe);
			if (gio_qp_check_sqe(&ck, &sqe) != 0) {
				fprintf(stderr, "bench_check: %s refused\n", shapes[si].name);
				return 1;
			}
			for (w = 0; w < 3; w++) {
				(void)run(w, &ck, &sqe, iters / 10); /* warm-up */
				for (i = 0; i < reps; i++)
					t[w][i] = run(w, &ck, &sqe, iters);
				qsort(t[w], reps, sizeof(double), cmp_double);
				med[w] = t[w][reps / 2];
			}
			printf("| %s | %u | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %+.1f ns |\n", shapes[si].name,
			       n_list[ni], med[0], t[0][0], t[0][reps - 1], med[1], t[1][0], t[1][reps - 1], med[2], t[2][0],
			       t[2][reps - 1], med[2] - med[1]);
		}
	}
	for (i = 0; i < MAX_REGIONS; i++)
		free(mem[i]);
	return 0;
}
