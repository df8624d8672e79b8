/* bench_cpu_rings: NVMe commands/s and GB/s through the giouring rings and the software target
 * (file and memory backing stores) on CPU threads, beside a plain liburing baseline and a memcpy
 * baseline, in the same process and run.
 *
 * Every path reads the same objects (the same pseudo-random object sequence per producer thread,
 * reset at every repetition) into the same buffers:
 *
 * | path          | what a producer thread does                                                  |
 * | ------------- | ---------------------------------------------------------------------------- |
 * | liburing      | its own io_uring of qd entries: io_uring_prep_read from the file (O_DIRECT   |
 * |               | when the file system allows it), one io_uring_submit_and_wait per batch       |
 * | giouring-file | its own giouring queue pair: NVMe Reads (one SGL data block) keeping qd in   |
 * |               | flight; the target's executor threads read the file through io_uring          |
 * | memcpy        | memcpy of the object from an in-memory copy of the file (qd does not apply)  |
 * | giouring-mem  | as giouring-file, the target backed by memory (mem://host) holding the file   |
 *
 * The target's executor threads are CPU threads of this process: they stand in for the SSD
 * controller, and their CPU time is in the giouring rows' CPU time per command.
 *
 * Output: the machine line and a Markdown table on stdout, progress on stderr, JSON with --json.
 * Run with --help for the flags. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>

#define BLOCK 4096u
#define MAGIC 0x2167726e69756f69ull /* "iouring!" */
#define MAX_LIST 16
#define MAX_THREADS 64
#define WAIT_NS (10ull * 1000000000ull) /* a command that takes longer is a failure */

enum path { P_LIBURING, P_GIO_FILE, P_MEMCPY, P_GIO_MEM, NPATHS };
static const char *const path_name[NPATHS] = {"liburing", "giouring-file", "memcpy", "giouring-mem"};

/* ---- options -------------------------------------------------------------------------------- */

struct opts {
	const char *file;
	const char *json;
	uint64_t size;
	double seconds;
	double ramp;
	int reps;
	int nthreads, nqd, nio;
	uint32_t threads[MAX_LIST], qd[MAX_LIST], io[MAX_LIST];
	int exec_threads;
	int idle_us; /* the target's idle_us URI parameter */
	int paths[NPATHS];
	int spin;
	int buffered;
	double quiet;
	double time_limit;
	int keep;
	int quick;
};

static struct opts O;
static double run_start, quiet_waited;
static int npasses = 1;
static char cmdline[4096];

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_cpu_rings: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long x;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s)
		die("'%s' is not a size", s);
	switch (toupper((unsigned char)*end)) {
	case 'K': x <<= 10; end++; break;
	case 'M': x <<= 20; end++; break;
	case 'G': x <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		die("'%s' is not a size (digits and K, M or G)", s);
	return x;
}

static int parse_list(const char *s, uint32_t *out)
{
	char buf[512], *save = NULL, *tok;
	int n = 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v = parse_size(tok);
		if (n == MAX_LIST)
			die("more than %d values in '%s'", MAX_LIST, s);
		if (v == 0 || v > UINT32_MAX)
			die("'%s' out of range", tok);
		out[n++] = (uint32_t)v;
	}
	if (n == 0)
		die("empty list '%s'", s);
	return n;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_cpu_rings [flags]\n"
		"  --file PATH        file to read (created and filled with the bench pattern if missing;\n"
		"                     default: a new file under /tmp, removed at exit)\n"
		"  --size N           bytes of the file and of the memory target (default 1G; --quick 64M)\n"
		"  --seconds S        measured seconds per repetition (default 0.5)\n"
		"  --reps N           measured repetitions per point, after one warm-up (default 3)\n"
		"  --threads LIST     producer threads (default 1,2,4)\n"
		"  --qd LIST          commands in flight per producer thread (default 8,32,128)\n"
		"  --io LIST          I/O sizes, multiples of 4K (default 4K,32K)\n"
		"  --exec-threads N   the target's executor threads (default 2)\n"
		"  --idle-us N        the target's idle_us: longest sleep of an idle executor thread (default 200)\n"
		"  --paths LIST       of liburing,giouring-file,memcpy,giouring-mem (default all)\n"
		"  --spin             giouring producers poll without ever yielding the CPU\n"
		"  --buffered         the liburing baseline reads without O_DIRECT (the target still\n"
		"                     uses O_DIRECT where the file system allows it)\n"
		"  --quiet CORES      a repetition during which other processes used more than CORES cores\n"
		"                     is disturbed: before each repetition wait (a little) for a quiet\n"
		"                     machine, and after the first pass over every point run further\n"
		"                     passes for points short of quiet repetitions (default 0.25; 0: off)\n"
		"  --time-limit S     no waiting or further passes after S seconds of run (default 540)\n"
		"  --json PATH        also write the results as JSON\n"
		"  --keep             keep the default file (--file is always kept)\n"
		"  --quick            smoke run: 64M, threads 1,2, qd 8,32, 0.05 s, 1 rep, --quiet 0\n");
}

static void parse_args(int argc, char **argv)
{
	int i, have_size = 0, have_secs = 0, have_reps = 0, have_t = 0, have_q = 0, have_quiet = 0;
	size_t off = 0;
	for (i = 0; i < argc && off < sizeof(cmdline) - 1; i++)
		off += (size_t)snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i ? " " : "", argv[i]);
	O.size = 1ull << 30;
	O.seconds = 0.5;
	O.reps = 3;
	O.exec_threads = 2;
	O.idle_us = 200;
	O.quiet = 0.25;
	O.time_limit = 540;
	for (i = 0; i < NPATHS; i++)
		O.paths[i] = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                          \
	do {                                             \
		if (!v)                                  \
			die("%s needs a value", a);      \
		i++;                                     \
	} while (0)
		if (!strcmp(a, "--file")) {
			NEEDV();
			O.file = v;
		} else if (!strcmp(a, "--json")) {
			NEEDV();
			O.json = v;
		} else if (!strcmp(a, "--size")) {
			NEEDV();
			O.size = parse_size(v);
			have_size = 1;
		} else if (!strcmp(a, "--seconds")) {
			NEEDV();
			O.seconds = atof(v);
			if (O.seconds <= 0)
				die("--seconds %s", v);
			have_secs = 1;
		} else if (!strcmp(a, "--reps")) {
			NEEDV();
			O.reps = atoi(v);
			if (O.reps < 1 || O.reps > 99)
				die("--reps %s: 1 to 99", v);
			have_reps = 1;
		} else if (!strcmp(a, "--threads")) {
			NEEDV();
			O.nthreads = parse_list(v, O.threads);
			have_t = 1;
		} else if (!strcmp(a, "--qd")) {
			NEEDV();
			O.nqd = parse_list(v, O.qd);
			have_q = 1;
		} else if (!strcmp(a, "--io")) {
			NEEDV();
			O.nio = parse_list(v, O.io);
		} else if (!strcmp(a, "--exec-threads")) {
			NEEDV();
			O.exec_threads = atoi(v);
			if (O.exec_threads < 1 || O.exec_threads > 16)
				die("--exec-threads %s: 1 to 16", v);
		} else if (!strcmp(a, "--idle-us")) {
			NEEDV();
			O.idle_us = atoi(v);
			if (O.idle_us < 20 || O.idle_us > 100000)
				die("--idle-us %s: 20 to 100000", v);
		} else if (!strcmp(a, "--paths")) {
			char buf[256], *save = NULL, *tok;
			int p;
			NEEDV();
			memset(O.paths, 0, sizeof(O.paths));
			snprintf(buf, sizeof(buf), "%s", v);
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				for (p = 0; p < NPATHS && strcmp(tok, path_name[p]); p++)
					;
				if (p == NPATHS)
					die("--paths: unknown path '%s'", tok);
				O.paths[p] = 1;
			}
		} else if (!strcmp(a, "--spin")) {
			O.spin = 1;
		} else if (!strcmp(a, "--buffered")) {
			O.buffered = 1;
		} else if (!strcmp(a, "--quiet")) {
			NEEDV();
			O.quiet = atof(v);
			have_quiet = 1;
		} else if (!strcmp(a, "--time-limit")) {
			NEEDV();
			O.time_limit = atof(v);
		} else if (!strcmp(a, "--keep")) {
			O.keep = 1;
		} else if (!strcmp(a, "--quick")) {
			O.quick = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else {
			usage(stderr);
			die("unknown flag '%s'", a);
		}
#undef NEEDV
	}
	if (O.quick) {
		if (!have_size)
			O.size = 64ull << 20;
		if (!have_secs)
			O.seconds = 0.05;
		if (!have_reps)
			O.reps = 1;
		if (!have_t)
			O.nthreads = parse_list("1,2", O.threads);
		if (!have_q)
			O.nqd = parse_list("8,32", O.qd);
	}
	if (!O.nthreads)
		O.nthreads = parse_list("1,2,4", O.threads);
	if (!O.nqd)
		O.nqd = parse_list("8,32,128", O.qd);
	if (!O.nio)
		O.nio = parse_list("4K,32K", O.io);
	O.ramp = O.quick ? 0.01 : 0.05;
	if (O.quick && !have_quiet)
		O.quiet = 0; /* a smoke run measures nothing worth waiting for */
	for (i = 0; i < O.nthreads; i++)
		if (O.threads[i] > MAX_THREADS)
			die("--threads: at most %d", MAX_THREADS);
	for (i = 0; i < O.nqd; i++)
		if (O.qd[i] > 2048)
			die("--qd: at most 2048");
	for (i = 0; i < O.nio; i++)
		if (O.io[i] % BLOCK || O.io[i] > (512u << 10))
			die("--io %u: a multiple of 4K, at most 512K (the target's MDTS)", O.io[i]);
	if (O.size < (8ull << 20) || O.size % (512u << 10))
		die("--size: at least 8M and a multiple of 512K");
}

static uint32_t list_max(const uint32_t *l, int n)
{
	uint32_t m = 0;
	int i;
	for (i = 0; i < n; i++)
		m = l[i] > m ? l[i] : m;
	return m;
}

/* ---- time, CPU, machine ----------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* CPU seconds of the whole process (every thread, user + system). */
static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

/* CPU seconds the whole machine spent busy (user, nice, system, irq, softirq, steal): what other
 * processes used during a window is this minus our own. */
static double machine_busy_s(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;
	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6], &v[7]);
		fclose(f);
	}
	if (n != 8)
		return 0;
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

struct machine {
	char cpu[256];
	long cores;
	char kernel[256];
	uint64_t mem_bytes;
	char fs[64];
	char dev[256];
	char mnt[512];
	int o_direct;
	char o_direct_why[128];
};

static struct machine M;

static void file_system_of(const char *path)
{
	char real[PATH_MAX], line[2048];
	size_t best = 0;
	FILE *f;
	snprintf(M.fs, sizeof(M.fs), "?");
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	f = fopen("/proc/self/mounts", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char dev[256], mnt[512], fs[64];
		size_t n;
		if (sscanf(line, "%255s %511s %63s", dev, mnt, fs) != 3)
			continue;
		n = strlen(mnt);
		if (strncmp(real, mnt, n) || (n > 1 && real[n] != '/' && real[n] != 0))
			continue;
		if (n >= best) {
			best = n;
			snprintf(M.fs, sizeof(M.fs), "%s", fs);
			snprintf(M.dev, sizeof(M.dev), "%s", dev);
			snprintf(M.mnt, sizeof(M.mnt), "%s", mnt);
		}
	}
	fclose(f);
}

static void machine_probe(const char *file)
{
	char line[512];
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");
	snprintf(M.cpu, sizeof(M.cpu), "?");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');
		if (!strncmp(line, "model name", 10) && c) {
			c++;
			while (*c == ' ' || *c == '\t')
				c++;
			c[strcspn(c, "\n")] = 0;
			snprintf(M.cpu, sizeof(M.cpu), "%s", c);
			break;
		}
	}
	if (f)
		fclose(f);
	M.cores = sysconf(_SC_NPROCESSORS_ONLN);
	M.mem_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	if (uname(&u) == 0)
		snprintf(M.kernel, sizeof(M.kernel), "%s %s", u.sysname, u.release);
	file_system_of(file);
}

/* ---- the bench file ----------------------------------------------------------------------------
 * Every 4 KiB block b holds MAGIC, b, then bytes derived from b: reads are checked during the
 * warm-up of every point, on every path. */

static void fill_block(unsigned char *p, uint64_t b)
{
	uint64_t w[2] = {MAGIC, b};
	memset(p, (int)((b * 131u) & 0xffu) | 1, BLOCK);
	memcpy(p, w, sizeof(w));
}

static int check_object(const unsigned char *p, uint64_t off, uint32_t io)
{
	uint32_t k;
	for (k = 0; k < io / BLOCK; k++) {
		uint64_t w[2];
		memcpy(w, p + (uint64_t)k * BLOCK, sizeof(w));
		if (w[0] != MAGIC || w[1] != off / BLOCK + k)
			return -1;
	}
	return 0;
}

static char default_path[PATH_MAX];

static void remove_default_file(void)
{
	if (default_path[0])
		unlink(default_path);
}

/* Creates and fills the file if it does not exist; refuses a file that is not a bench file. */
static void prepare_file(void)
{
	struct stat st;
	unsigned char *chunk;
	const size_t chunk_bytes = 1u << 20;
	uint64_t off;
	int fd;
	if (!O.file) {
		snprintf(default_path, sizeof(default_path), "/tmp/giouring-bench-%d.img", (int)getpid());
		O.file = default_path;
		if (!O.keep)
			atexit(remove_default_file);
	}
	if (stat(O.file, &st) == 0) {
		unsigned char blk[BLOCK];
		uint64_t probe[3] = {0, O.size / BLOCK / 2, O.size / BLOCK - 1};
		int i;
		if ((uint64_t)st.st_size < O.size)
			die("%s holds %lld bytes, fewer than --size %" PRIu64 "; remove it or pick another path", O.file,
			    (long long)st.st_size, O.size);
		fd = open(O.file, O_RDONLY);
		if (fd < 0)
			die("open %s: %s", O.file, strerror(errno));
		for (i = 0; i < 3; i++)
			if (pread(fd, blk, BLOCK, (off_t)(probe[i] * BLOCK)) != (ssize_t)BLOCK ||
			    check_object(blk, probe[i] * BLOCK, BLOCK))
				die("%s exists but does not hold the bench pattern; remove it or pick another path", O.file);
		close(fd);
		fprintf(stderr, "using the existing bench file %s\n", O.file);
		return;
	}
	fd = open(O.file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die("create %s: %s", O.file, strerror(errno));
	chunk = aligned_alloc(BLOCK, chunk_bytes);
	if (!chunk)
		die("no memory");
	fprintf(stderr, "filling %s with %" PRIu64 " MiB ...\n", O.file, O.size >> 20);
	for (off = 0; off < O.size; off += chunk_bytes) {
		uint64_t n = O.size - off < chunk_bytes ? O.size - off : chunk_bytes, b;
		for (b = 0; b < n / BLOCK; b++)
			fill_block(chunk + b * BLOCK, off / BLOCK + b);
		if (pwrite(fd, chunk, (size_t)n, (off_t)off) != (ssize_t)n)
			die("write %s: %s", O.file, strerror(errno));
	}
	if (fsync(fd))
		die("fsync %s: %s", O.file, strerror(errno));
	/* Cold page cache for the buffered paths; O_DIRECT does not use it anyway. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	free(chunk);
}

/* ---- producers ------------------------------------------------------------------------------ */

struct shared {
	enum path path;
	uint32_t qd, io;
	int fd;                  /* liburing */
	const unsigned char *src; /* memcpy */
	struct gio_qp **qps;     /* giouring */
	uint32_t nsid;
	int verify;
	uint32_t stop;
	uint64_t nobj;
};

struct producer {
	struct shared *s;
	int id;
	unsigned char *bufs; /* qd_max * io_max bytes, 4 KiB aligned */
	uint64_t done;       /* commands completed (relaxed atomic) */
	int error;
	char msg[256];
	pthread_t tid;
} __attribute__((aligned(64)));

static struct producer P[MAX_THREADS];
static size_t buf_bytes;

/* The same object sequence on every path: xorshift64* seeded by thread and I/O size. */
static uint64_t rng_seed(int id, uint32_t io)
{
	return 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1) ^ ((uint64_t)io << 20) ^ 0x1234567ull;
}

static uint64_t next_obj(uint64_t *st, uint64_t nobj)
{
	uint64_t x = *st;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*st = x;
	return (x * 0x2545f4914f6cdd1dull >> 11) % nobj;
}

static int stopping(const struct shared *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED) != 0;
}

static void publish(struct producer *p, uint64_t n)
{
	__atomic_store_n(&p->done, n, __ATOMIC_RELAXED);
}

static void fail(struct producer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct producer *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
	p->error = 1;
}

static void *run_liburing(struct producer *p)
{
	struct shared *s = p->s;
	struct io_uring ring;
	uint64_t rng = rng_seed(p->id, s->io), n = 0, *offs;
	uint32_t i, inflight = 0;
	int stop = 0, rc = io_uring_queue_init(s->qd, &ring, 0);
	if (rc < 0) {
		fail(p, "io_uring_queue_init(%u): %s", s->qd, strerror(-rc));
		return NULL;
	}
	offs = calloc(s->qd, sizeof(*offs));
	if (!offs) {
		fail(p, "no memory");
		io_uring_queue_exit(&ring);
		return NULL;
	}
	for (i = 0; i < s->qd; i++) {
		struct io_uring_sqe *e = io_uring_get_sqe(&ring);
		offs[i] = next_obj(&rng, s->nobj) * s->io;
		io_uring_prep_read(e, s->fd, p->bufs + (size_t)i * s->io, s->io, offs[i]);
		io_uring_sqe_set_data64(e, i);
		inflight++;
	}
	while (inflight) {
		struct io_uring_cqe *cqes[256];
		unsigned got, k;
		/* One system call per batch: submit the reads prepared below, wait for one completion. */
		rc = io_uring_submit_and_wait(&ring, 1);
		if (rc < 0 && rc != -EINTR) {
			fail(p, "io_uring_submit_and_wait: %s", strerror(-rc));
			break;
		}
		if (stopping(s))
			stop = 1;
		got = io_uring_peek_batch_cqe(&ring, cqes, 256);
		for (k = 0; k < got; k++) {
			const uint32_t b = (uint32_t)io_uring_cqe_get_data64(cqes[k]);
			if (cqes[k]->res != (int)s->io) {
				fail(p, "read of %u bytes at %" PRIu64 " gave %d", s->io, offs[b], cqes[k]->res);
				stop = 1;
			} else if (s->verify && check_object(p->bufs + (size_t)b * s->io, offs[b], s->io)) {
				fail(p, "liburing: wrong data at %" PRIu64, offs[b]);
				stop = 1;
			}
			inflight--;
			n++;
			if (!stop) {
				struct io_uring_sqe *e = io_uring_get_sqe(&ring);
				offs[b] = next_obj(&rng, s->nobj) * s->io;
				io_uring_prep_read(e, s->fd, p->bufs + (size_t)b * s->io, s->io, offs[b]);
				io_uring_sqe_set_data64(e, b);
				inflight++;
			}
		}
		io_uring_cq_advance(&ring, got);
		publish(p, n);
	}
	io_uring_queue_exit(&ring);
	free(offs);
	return NULL;
}

static void *run_memcpy(struct producer *p)
{
	struct shared *s = p->s;
	uint64_t rng = rng_seed(p->id, s->io), n = 0;
	uint32_t b = 0;
	while (!stopping(s)) {
		uint32_t k;
		for (k = 0; k < 16; k++) { /* check the flag every 16 objects */
			const uint64_t off = next_obj(&rng, s->nobj) * s->io;
			unsigned char *dst = p->bufs + (size_t)b * s->io;
			memcpy(dst, s->src + off, s->io);
			__asm__ __volatile__("" ::"r"(dst) : "memory"); /* the copy is used */
			if (s->verify && check_object(dst, off, s->io)) {
				fail(p, "memcpy: wrong data at %" PRIu64, off);
				return NULL;
			}
			b = b + 1 == s->qd ? 0 : b + 1;
		}
		n += 16;
		publish(p, n);
	}
	return NULL;
}

/* giouring: keep qd Reads in flight on the thread's own queue pair; collect completions in
 * submission order (the executor completes a queue in order) and resubmit those buffers as one
 * reservation. */
static void *run_giouring(struct producer *p)
{
	struct shared *s = p->s;
	struct gio_qp *qp = s->qps[p->id];
	const uint32_t nlb = s->io / BLOCK;
	uint64_t rng = rng_seed(p->id, s->io), n = 0;
	uint32_t *fifo_cid = calloc(s->qd, sizeof(uint32_t)), *fifo_buf = calloc(s->qd, sizeof(uint32_t));
	uint64_t *offs = calloc(s->qd, sizeof(uint64_t));
	uint32_t *ready = calloc(s->qd, sizeof(uint32_t));
	uint32_t head = 0, count = 0, nready = 0, got, i, idle = 0;
	int stop = 0;
	if (!fifo_cid || !fifo_buf || !offs || !ready) {
		fail(p, "no memory");
		goto out;
	}
	for (i = 0; i < s->qd; i++)
		ready[nready++] = i;
	for (;;) {
		/* Submit every ready buffer as one reservation. */
		if (nready && !stop) {
			uint32_t first;
			const uint64_t deadline = gio_deadline_in(WAIT_NS);
			int rc = gio_qp_reserve_wait(qp, nready, deadline, &first);
			if (rc) {
				fail(p, "gio_qp_reserve_wait(%u): %d", nready, rc);
				goto out;
			}
			for (i = 0; i < nready; i++) {
				struct gio_sqe sqe;
				const uint32_t b = ready[i];
				offs[b] = next_obj(&rng, s->nobj) * s->io;
				rc = gio_prep_read(&sqe, s->nsid, offs[b] / BLOCK, nlb);
				if (rc == 0) {
					gio_sqe_set_sgl_data(&sqe, (uint64_t)(uintptr_t)(p->bufs + (size_t)b * s->io), s->io);
					rc = gio_qp_put(qp, first + i, &sqe, b, 0);
				}
				if (rc) {
					fail(p, "gio_prep_read / gio_qp_put: %d", rc);
					goto out;
				}
				fifo_cid[(head + count) % s->qd] = first + i; /* the ticket */
				fifo_buf[(head + count) % s->qd] = b;
				count++;
			}
			gio_qp_publish(qp);
			nready = 0;
		}
		if (count == 0)
			break; /* stopping and drained */
		/* Collect completions, oldest first. */
		got = 0;
		for (;;) {
			uint16_t st = 0;
			int rc;
			if (count == 0)
				break;
			rc = gio_qp_try_result(qp, fifo_cid[head], &st, NULL);
			if (rc == -EAGAIN)
				break;
			if (rc) {
				fail(p, "NVMe Read at %" PRIu64 " failed: status 0x%04x (%s)", offs[fifo_buf[head]], st,
				     gio_status_str(st));
				stop = 1;
			} else if (s->verify &&
				   check_object(p->bufs + (size_t)fifo_buf[head] * s->io, offs[fifo_buf[head]], s->io)) {
				fail(p, "%s: wrong data at %" PRIu64, path_name[s->path], offs[fifo_buf[head]]);
				stop = 1;
			}
			ready[nready++] = fifo_buf[head];
			head = head + 1 == s->qd ? 0 : head + 1;
			count--;
			n++;
			got++;
		}
		if (got) {
			idle = 0;
			publish(p, n);
			if (stopping(s))
				stop = 1;
			continue;
		}
		if (gio_qp_reap(qp))
			continue;
		/* Nothing completed: poll, and after a while give the CPU to the executor threads. */
		if (!O.spin && ++idle >= 64)
			sched_yield();
		else
			gio_cpu_relax();
		if (stopping(s))
			stop = 1;
	}
out:
	free(fifo_cid);
	free(fifo_buf);
	free(offs);
	free(ready);
	return NULL;
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	switch (p->s->path) {
	case P_LIBURING: return run_liburing(p);
	case P_MEMCPY: return run_memcpy(p);
	default: return run_giouring(p);
	}
}

/* ---- one repetition, one point ------------------------------------------------------------- */

struct rep {
	double cmds_s, cpu_us, prod_us, cores, others;
};

/* CPU seconds the producer threads used (their own clocks, precise). */
static double producers_cpu_s(uint32_t nt)
{
	double t = 0;
	uint32_t i;
	for (i = 0; i < nt; i++) {
		clockid_t c;
		struct timespec ts;
		if (pthread_getcpuclockid(P[i].tid, &c) == 0 && clock_gettime(c, &ts) == 0)
			t += (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	}
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t total_done(uint32_t nt)
{
	uint64_t t = 0;
	uint32_t i;
	for (i = 0; i < nt; i++)
		t += __atomic_load_n(&P[i].done, __ATOMIC_RELAXED);
	return t;
}

/* Waits (in 0.2 s samples) until other processes use at most --quiet cores, within what is left
 * of the run's waiting budget (--quiet-wait seconds in all). */
static int time_left(void)
{
	return now_s() - run_start < O.time_limit;
}

static double max_wait_s = 2;

static void wait_quiet(void)
{
	const double start = now_s();
	while (O.quiet > 0 && time_left() && now_s() - start < max_wait_s) {
		const double m0 = machine_busy_s(), u0 = cpu_s(), t0 = now_s();
		double others;
		sleep_s(0.2);
		others = ((machine_busy_s() - m0) - (cpu_s() - u0)) / (now_s() - t0);
		if (others <= O.quiet)
			return;
		quiet_waited += now_s() - t0;
	}
}

static struct rep run_rep(struct shared *s, uint32_t nt, double seconds)
{
	struct rep r;
	uint64_t c0, c1;
	double t0, t1, u0, u1, m0, m1, p0, p1;
	uint32_t i;
	wait_quiet();
	s->stop = 0;
	for (i = 0; i < nt; i++) {
		P[i].s = s;
		P[i].id = (int)i;
		P[i].done = 0;
		P[i].error = 0;
		if (pthread_create(&P[i].tid, NULL, producer_main, &P[i]))
			die("pthread_create failed");
	}
	sleep_s(O.ramp);
	c0 = total_done(nt);
	m0 = machine_busy_s();
	p0 = producers_cpu_s(nt);
	u0 = cpu_s();
	t0 = now_s();
	sleep_s(seconds);
	/* A window needs completions: a slow device at a large qd may take longer than a --quick
	 * window for its first batch. Extend it, up to the commands' own deadline. */
	while ((c1 = total_done(nt)) == c0 && now_s() - t0 < WAIT_NS * 1e-9)
		sleep_s(0.01);
	u1 = cpu_s();
	p1 = producers_cpu_s(nt);
	m1 = machine_busy_s();
	t1 = now_s();
	__atomic_store_n(&s->stop, 1u, __ATOMIC_RELAXED);
	for (i = 0; i < nt; i++)
		pthread_join(P[i].tid, NULL);
	for (i = 0; i < nt; i++)
		if (P[i].error)
			die("%s, %u threads, qd %u, %u bytes: thread %u: %s", path_name[s->path], nt, s->qd, s->io, i,
			    P[i].msg);
	if (c1 == c0)
		die("%s, %u threads, qd %u, %u bytes: no command completed in %.2f s", path_name[s->path], nt, s->qd,
		    s->io, t1 - t0);
	r.cmds_s = (double)(c1 - c0) / (t1 - t0);
	r.cpu_us = (u1 - u0) * 1e6 / (double)(c1 - c0);
	r.prod_us = (p1 - p0) * 1e6 / (double)(c1 - c0);
	r.cores = (u1 - u0) / (t1 - t0);
	r.others = m1 > m0 ? ((m1 - m0) - (u1 - u0)) / (t1 - t0) : 0;
	if (r.others < 0)
		r.others = 0; /* clock-tick granularity of /proc/stat */
	return r;
}

#define MAX_ATTEMPTS 64

struct row {
	enum path path;
	uint32_t threads, qd, io; /* qd 0: does not apply */
	double cmds_s, gbps, cpu_us, prod_us, cores, spread, others;
	struct rep att[MAX_ATTEMPTS]; /* every measured repetition, disturbed or not */
	int natt, nused, disturbed;
};

static struct row *rows;
static int nrows;
static double idle_exec_cores[NPATHS];

static int nquiet(const struct row *w)
{
	int i, n = 0;
	for (i = 0; i < w->natt; i++)
		n += O.quiet <= 0 || w->att[i].others <= O.quiet;
	return n;
}

static int needs_work(const struct row *w)
{
	return nquiet(w) < O.reps && w->natt + O.reps <= MAX_ATTEMPTS;
}

/* A warm-up, then the repetitions this point still needs. */
static void run_point(struct shared *s, struct row *w)
{
	int i, want = w->natt == 0 ? O.reps : O.reps - nquiet(w);
	/* Warm-up, discarded; every completed object is checked. */
	s->verify = 1;
	run_rep(s, w->threads, O.seconds / 2);
	s->verify = 0;
	for (i = 0; i < want && w->natt < MAX_ATTEMPTS; i++)
		w->att[w->natt++] = run_rep(s, w->threads, O.seconds);
	fprintf(stderr, "  %-13s threads %u qd %3u io %6u: %d repetitions, %d quiet\n", path_name[w->path], w->threads,
		w->qd, w->io, w->natt, nquiet(w));
}

static int cmp_others(const void *a, const void *b)
{
	const double x = ((const struct rep *)a)->others, y = ((const struct rep *)b)->others;
	return x < y ? -1 : x > y;
}

/* Medians over the quiet repetitions when there are enough, else over the O.reps least
 * disturbed ones (the row is then marked). */
static void finish_row(struct row *w)
{
	struct rep use[MAX_ATTEMPTS];
	double c[MAX_ATTEMPTS], u[MAX_ATTEMPTS], pu[MAX_ATTEMPTS], k[MAX_ATTEMPTS], o[MAX_ATTEMPTS], lo = 1e300, hi = 0;
	int i, n = 0;
	if (w->natt == 0)
		return;
	for (i = 0; i < w->natt; i++)
		if (O.quiet <= 0 || w->att[i].others <= O.quiet)
			use[n++] = w->att[i];
	if (n < O.reps) {
		memcpy(use, w->att, (size_t)w->natt * sizeof(struct rep));
		qsort(use, (size_t)w->natt, sizeof(struct rep), cmp_others);
		n = w->natt < O.reps ? w->natt : O.reps;
		w->disturbed = 1;
	}
	for (i = 0; i < n; i++) {
		c[i] = use[i].cmds_s;
		u[i] = use[i].cpu_us;
		pu[i] = use[i].prod_us;
		k[i] = use[i].cores;
		o[i] = use[i].others;
		lo = c[i] < lo ? c[i] : lo;
		hi = c[i] > hi ? c[i] : hi;
	}
	w->nused = n;
	w->cmds_s = median(c, n);
	w->gbps = w->cmds_s * w->io / 1e9;
	w->cpu_us = median(u, n);
	w->prod_us = median(pu, n);
	w->cores = median(k, n);
	w->others = median(o, n);
	w->spread = (hi - lo) / w->cmds_s;
}

/* CPU the target's executor threads use with no I/O at all (their idle back-off). */
static double idle_cores(void)
{
	double u0 = cpu_s(), t0 = now_s(), u1, t1;
	sleep_s(O.quick ? 0.05 : 0.3);
	u1 = cpu_s();
	t1 = now_s();
	return (u1 - u0) / (t1 - t0);
}

static unsigned char *memory_copy; /* the file's bytes, for memcpy and the memory target */

static void load_memory_copy(void)
{
	int fd;
	uint64_t off = 0;
	if (memory_copy)
		return;
	memory_copy = aligned_alloc(BLOCK, O.size);
	if (!memory_copy)
		die("no memory for a %" PRIu64 "-byte copy of the file", O.size);
	fd = open(O.file, O_RDONLY);
	if (fd < 0)
		die("open %s: %s", O.file, strerror(errno));
	while (off < O.size) {
		ssize_t r = pread(fd, memory_copy + off, (size_t)(O.size - off), (off_t)off);
		if (r <= 0)
			die("read %s: %s", O.file, r ? strerror(errno) : "short file");
		off += (uint64_t)r;
	}
	close(fd);
}

static void run_path(enum path path)
{
	int r, any = 0;
	const uint32_t tmax = list_max(O.threads, O.nthreads), qmax = list_max(O.qd, O.nqd);
	struct shared s;
	struct gio_ctx *ctx = NULL;
	struct gio_qp *qps[MAX_THREADS];
	uint32_t depth = 8, i;
	for (r = 0; r < nrows; r++)
		any |= rows[r].path == path && (rows[r].natt == 0 || needs_work(&rows[r]));
	if (!any)
		return;
	fprintf(stderr, "%s (pass %d)\n", path_name[path], npasses);
	memset(&s, 0, sizeof(s));
	s.path = path;
	s.fd = -1;
	s.qps = qps;
	s.nobj = 0;
	if (path == P_LIBURING) {
		s.fd = open(O.file, O_RDONLY | (M.o_direct && !O.buffered ? O_DIRECT : 0));
		if (s.fd < 0)
			die("open %s: %s", O.file, strerror(errno));
	} else if (path == P_MEMCPY) {
		load_memory_copy();
		s.src = memory_copy;
	} else {
		char uri[PATH_MAX + 128];
		struct gio_ns_info info;
		while (depth < 2 * qmax)
			depth *= 2;
		if (path == P_GIO_FILE)
			snprintf(uri, sizeof(uri), "file://%s?size=%" PRIu64 "&threads=%d&queues=%u&idle_us=%d", O.file, O.size,
				 O.exec_threads, tmax, O.idle_us);
		else
			snprintf(uri, sizeof(uri), "mem://host?size=%" PRIu64 "&threads=%d&queues=%u&idle_us=%d", O.size,
				 O.exec_threads, tmax, O.idle_us);
		if (gio_ctx_open(uri, &ctx))
			die("gio_ctx_open(%s): %s", uri, gio_last_error());
		gio_ctx_info(ctx, &info);
		s.nsid = info.nsid;
		if (info.lba_bytes != BLOCK)
			die("the target's block size is %u, not %u", info.lba_bytes, BLOCK);
		for (i = 0; i < tmax; i++) {
			if (gio_ctx_qp_create(ctx, depth, &qps[i]))
				die("gio_ctx_qp_create(%u): %s", depth, gio_last_error());
			if (gio_ctx_register(ctx, P[i].bufs, buf_bytes, NULL))
				die("gio_ctx_register: %s", gio_last_error());
		}
		if (path == P_GIO_MEM) {
			/* Put the file's bytes into the memory target through the rings. */
			const uint32_t chunk = 512u << 10;
			uint64_t off;
			load_memory_copy();
			if (gio_ctx_register(ctx, memory_copy, O.size, NULL))
				die("gio_ctx_register: %s", gio_last_error());
			for (off = 0; off < O.size; off += chunk) {
				struct gio_sqe sqe;
				uint16_t st = 0;
				gio_prep_write(&sqe, s.nsid, off / BLOCK, chunk / BLOCK);
				gio_sqe_set_sgl_data(&sqe, (uint64_t)(uintptr_t)(memory_copy + off), chunk);
				if (gio_qp_submit_wait(qps[0], &sqe, WAIT_NS, &st, NULL))
					die("filling the memory target: status 0x%04x: %s", st, gio_last_error());
			}
		}
		idle_exec_cores[path] = idle_cores();
		fprintf(stderr, "  %s: %d executor threads use %.3f cores while idle\n", path_name[path], O.exec_threads,
			idle_exec_cores[path]);
	}
	for (r = 0; r < nrows; r++) {
		struct row *w = &rows[r];
		if (w->path != path || (w->natt && (!needs_work(w) || !time_left())))
			continue;
		s.io = w->io;
		s.nobj = O.size / s.io;
		s.qd = w->qd ? w->qd : O.qd[0];
		run_point(&s, w);
	}
	if (ctx && gio_ctx_close(ctx))
		die("gio_ctx_close: %s", gio_last_error());
	if (s.fd >= 0)
		close(s.fd);
}

/* ---- report ------------------------------------------------------------------------------- */

static const struct row *find(enum path path, uint32_t threads, uint32_t qd, uint32_t io)
{
	int i;
	for (i = 0; i < nrows; i++)
		if (rows[i].path == path && rows[i].threads == threads && rows[i].io == io &&
		    (path == P_MEMCPY || rows[i].qd == qd))
			return &rows[i];
	return NULL;
}

static void ratio_str(char *buf, size_t n, const struct row *r, enum path base)
{
	const struct row *b = find(base, r->threads, r->qd, r->io);
	if (b)
		snprintf(buf, n, "%.2f", r->cmds_s / b->cmds_s);
	else
		snprintf(buf, n, "-");
}

static double ratio_val(const struct row *r, enum path base)
{
	const struct row *b = find(base, r->threads, r->qd, r->io);
	return b ? r->cmds_s / b->cmds_s : -1;
}

static void machine_line(FILE *f)
{
	fprintf(f, "machine: CPU %s, %ld cores online, %.1f GiB memory, %s; file %s on %s (%s at %s), O_DIRECT %s%s\n",
		M.cpu, M.cores, (double)M.mem_bytes / (1u << 30), M.kernel, O.file, M.fs, M.dev, M.mnt,
		M.o_direct ? "yes" : "no", M.o_direct ? "" : M.o_direct_why);
}

static void print_table(void)
{
	enum path order[NPATHS] = {P_LIBURING, P_GIO_FILE, P_MEMCPY, P_GIO_MEM};
	int ii, ti, qi, pi;
	printf("\n| path | producer threads | executor threads | ring scope | qd | io | data moved | commands/s | GB/s | / liburing | / memcpy | CPU us/command | of which producers | CPU cores busy | spread | others |\n");
	printf("| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (ii = 0; ii < O.nio; ii++)
		for (ti = 0; ti < O.nthreads; ti++)
			for (qi = 0; qi < O.nqd; qi++)
				for (pi = 0; pi < NPATHS; pi++) {
					const struct row *r = find(order[pi], O.threads[ti], O.qd[qi], O.io[ii]);
					char r1[32], r2[32], qd[16], ex[16];
					const int gio = r->path == P_GIO_FILE || r->path == P_GIO_MEM;
					if (!r || (r->path == P_MEMCPY && qi != 0))
						continue;
					ratio_str(r1, sizeof(r1), r, P_LIBURING);
					ratio_str(r2, sizeof(r2), r, P_MEMCPY);
					if (r->qd)
						snprintf(qd, sizeof(qd), "%u", r->qd);
					else
						snprintf(qd, sizeof(qd), "-");
					if (gio)
						snprintf(ex, sizeof(ex), "%d", O.exec_threads);
					else
						snprintf(ex, sizeof(ex), "-");
					printf("| %s | %u | %s | %s | %s | %u KiB | yes | %.0f | %.2f | %s | %s | %.2f | %.2f | %.2f | %.0f%% | %.2f%s |\n",
					       path_name[r->path], r->threads, ex, gio ? "host" : "-", qd, r->io >> 10, r->cmds_s,
					       r->gbps, r1, r2,
					       r->cpu_us, r->prod_us, r->cores, 100 * r->spread, r->others,
					       r->disturbed ? " (!)" : "");
				}
	printf("\nMedians of %d repetitions of %.2f s after a warm-up of %.2f s (data checked in the warm-up). "
	       "\"/ liburing\" and \"/ memcpy\": commands/s over those of the baseline row with the same producer threads, "
	       "qd and io (memcpy has no qd).\n",
	       O.reps, O.seconds, O.seconds / 2);
	printf("CPU time is the whole process's (getrusage, user + system) over the measured window; \"of which "
	       "producers\" is the producer threads' own CPU clocks, the rest is other threads of the process. In the "
	       "giouring rows the rest is the target's %d executor threads, which stand in for the SSD controller",
	       O.exec_threads);
	if (O.paths[P_GIO_FILE] || O.paths[P_GIO_MEM])
		printf(" (idle, with idle_us=%d, they use %.3f cores: file target, %.3f cores: memory target)", O.idle_us,
		       idle_exec_cores[P_GIO_FILE],
		       idle_exec_cores[P_GIO_MEM]);
	printf("; giouring producers %s. In the liburing rows the rest is io_uring's io-wq workers (reads the kernel "
	       "could not complete inline); block-device completion work in interrupt context is not attributed to the "
	       "process.\n",
	       O.spin ? "spin while waiting (--spin)" : "spin 64 polls, then sched_yield(), while waiting");
	printf("executor threads: the target's executor threads of the giouring rows (the liburing rows' io-wq "
	       "workers and the kernel's own work are not counted as threads, their CPU time is as above). ring scope "
	       "host: producers and executor are CPU threads of this process, ordered by C11 atomics (the GPU scopes "
	       "gpu and sys do not apply). data moved: every row reads its objects into the producer's buffers (the "
	       "warm-up checks them).\n");
	printf("spread: (max - min) / median of the repetitions' commands/s. others: cores busy outside this process "
	       "during the window (/proc/stat minus getrusage; includes interrupt work and steal), median. A repetition "
	       "with others above %.2f cores is disturbed and not used when the point has %d quiet ones; (!) marks rows "
	       "that did not get them within the time limit (their least disturbed repetitions are shown).\n",
	       O.quiet, O.reps);
	printf("Run: %d passes, %.0f s, of which %.0f s waiting for a quiet machine (time limit %.0f s).\n", npasses,
	       now_s() - run_start, quiet_waited, O.time_limit);
	if (O.buffered)
		printf("--buffered: the liburing baseline read through the page cache (no O_DIRECT).\n");
}

static void write_json(void)
{
	FILE *f;
	int i, j;
	if (!O.json)
		return;
	f = fopen(O.json, "w");
	if (!f)
		die("cannot write %s: %s", O.json, strerror(errno));
	fprintf(f, "{\n  \"bench\": \"bench_cpu_rings\",\n  \"command\": \"");
	for (i = 0; cmdline[i]; i++) {
		if (cmdline[i] == '"' || cmdline[i] == '\\')
			fputc('\\', f);
		fputc(cmdline[i], f);
	}
	fprintf(f, "\",\n  \"machine\": {\"cpu\": \"%s\", \"cores\": %ld, \"mem_bytes\": %" PRIu64
		   ", \"kernel\": \"%s\", \"file\": \"%s\", \"fs\": \"%s\", \"device\": \"%s\", \"mount\": \"%s\", \"o_direct\": %s},\n",
		M.cpu, M.cores, M.mem_bytes, M.kernel, O.file, M.fs, M.dev, M.mnt, M.o_direct ? "true" : "false");
	fprintf(f,
		"  \"size_bytes\": %" PRIu64 ", \"seconds\": %g, \"reps\": %d, \"exec_threads\": %d, \"producer_wait\": \"%s\", "
		"\"liburing_o_direct\": %s, \"quiet_cores\": %g, \"passes\": %d, \"quiet_waited_s\": %.1f,\n",
		O.size, O.seconds, O.reps, O.exec_threads, O.spin ? "spin" : "spin64-then-yield",
		M.o_direct && !O.buffered ? "true" : "false", O.quiet, npasses, quiet_waited);
	fprintf(f, "  \"idle_executor_cores\": {\"giouring-file\": %.4f, \"giouring-mem\": %.4f},\n",
		idle_exec_cores[P_GIO_FILE], idle_exec_cores[P_GIO_MEM]);
	fprintf(f, "  \"rows\": [\n");
	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		const double rl = ratio_val(r, P_LIBURING), rm = ratio_val(r, P_MEMCPY);
		fprintf(f,
			"    {\"path\": \"%s\", \"threads\": %u, \"executor_threads\": %d, \"qd\": %u, \"io_bytes\": %u, "
			"\"data_moved\": true, \"commands_per_s\": %.1f, \"gb_per_s\": %.4f, ",
			path_name[r->path], r->threads, r->path == P_GIO_FILE || r->path == P_GIO_MEM ? O.exec_threads : 0, r->qd,
			r->io, r->cmds_s, r->gbps);
		if (rl >= 0)
			fprintf(f, "\"ratio_liburing\": %.4f, ", rl);
		else
			fprintf(f, "\"ratio_liburing\": null, ");
		if (rm >= 0)
			fprintf(f, "\"ratio_memcpy\": %.4f, ", rm);
		else
			fprintf(f, "\"ratio_memcpy\": null, ");
		fprintf(f,
			"\"cpu_us_per_command\": %.4f, \"producer_cpu_us_per_command\": %.4f, \"cpu_cores\": %.4f, "
			"\"spread\": %.4f, \"other_cores\": %.4f, \"disturbed\": %s, \"reps_used\": %d, \"repetitions\": [",
			r->cpu_us, r->prod_us, r->cores, r->spread, r->others, r->disturbed ? "true" : "false", r->nused);
		for (j = 0; j < r->natt; j++)
			fprintf(f, "%s{\"commands_per_s\": %.1f, \"cpu_us_per_command\": %.4f, \"other_cores\": %.4f}",
				j ? ", " : "", r->att[j].cmds_s, r->att[j].cpu_us, r->att[j].others);
		fprintf(f, "]}%s\n", i + 1 < nrows ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die("cannot write %s", O.json);
}

int main(int argc, char **argv)
{
	uint32_t tmax, qmax, iomax, i;
	time_t t = time(NULL);
	char date[64];
	int p, fd;
	parse_args(argc, argv);
	run_start = now_s();
	prepare_file();
	machine_probe(O.file);
	fd = open(O.file, O_RDONLY | O_DIRECT);
	M.o_direct = fd >= 0;
	if (fd >= 0)
		close(fd);
	else
		snprintf(M.o_direct_why, sizeof(M.o_direct_why), " (%s: buffered reads on every path)", strerror(errno));

	tmax = list_max(O.threads, O.nthreads);
	qmax = list_max(O.qd, O.nqd);
	iomax = list_max(O.io, O.nio);
	buf_bytes = (size_t)qmax * iomax;
	for (i = 0; i < tmax; i++) {
		P[i].bufs = aligned_alloc(BLOCK, buf_bytes);
		if (!P[i].bufs)
			die("no memory for buffers");
		memset(P[i].bufs, 0, buf_bytes);
	}

	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
	printf("# bench_cpu_rings\n\ncommand: %s\ndate: %s\n", cmdline, date);
	machine_line(stdout);
	fflush(stdout);
	{
		const enum path order[NPATHS] = {P_LIBURING, P_GIO_FILE, P_MEMCPY, P_GIO_MEM};
		int ii, ti, qi, r, more;
		rows = calloc((size_t)NPATHS * (size_t)(O.nio * O.nthreads * O.nqd), sizeof(*rows));
		if (!rows)
			die("no memory");
		for (p = 0; p < NPATHS; p++)
			for (ii = 0; O.paths[order[p]] && ii < O.nio; ii++)
				for (ti = 0; ti < O.nthreads; ti++)
					for (qi = 0; qi < O.nqd; qi++) {
						struct row *w = &rows[nrows++];
						w->path = order[p];
						w->threads = O.threads[ti];
						w->io = O.io[ii];
						w->qd = order[p] == P_MEMCPY ? 0 : O.qd[qi];
						if (order[p] == P_MEMCPY)
							break; /* qd does not apply */
					}
		for (p = 0; p < NPATHS; p++)
			if (O.paths[order[p]])
				run_path(order[p]);
		/* Further passes for points that other processes disturbed: later, not at once,
		 * because a disturbance (a build, a test run) usually lasts a while. */
		max_wait_s = 10;
		for (;;) {
			for (r = 0, more = 0; r < nrows; r++)
				more |= needs_work(&rows[r]);
			if (!more || O.quiet <= 0 || !time_left())
				break;
			npasses++;
			for (p = 0; p < NPATHS; p++)
				if (O.paths[order[p]])
					run_path(order[p]);
		}
		for (r = 0; r < nrows; r++)
			finish_row(&rows[r]);
	}
	print_table();

	write_json();
	for (i = 0; i < tmax; i++)
		free(P[i].bufs);
	free(memory_copy);
	free(rows);
	return 0;
}
