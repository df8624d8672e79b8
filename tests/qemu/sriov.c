/* QEMU SR-IOV program: runs inside the test guest (static, no libc there) beside an NVMe SSD whose
 * physical function stays on the kernel's nvme driver (ext4 on its namespace) while giouring
 * drives its SR-IOV virtual functions through vfio-pci (scripts/qemu/run.sh sriov, which sets
 * them up with giouring-sriov). Prints one PASS or FAIL line per check and a RESULT line; exits 0
 * when every check passed.
 *
 *   gio-qemu-sriov attach DEV NSID       attaches namespace NSID to the controller behind DEV
 *                                        (/dev/nvmeN: the kernel's), the test's own set-up of
 *                                        the PF's namespace (Namespace Attachment, through the
 *                                        kernel's admin passthrough)
 *   gio-qemu-sriov pf-ns DEV NSID...     the namespaces active on DEV's controller are exactly
 *                                        the NSIDs given: the PF sees no VF's namespace
 *   gio-qemu-sriov refuse-offline VF NSID  opening a VF whose secondary controller is offline
 *                                        fails with -EIO, the message naming the missing step
 *   gio-qemu-sriov refuse-ns VF NSID     opening a namespace not attached to the VF fails with
 *                                        -ENODEV, the message naming the attachment
 *   gio-qemu-sriov queues VF NSID N      the VF grants N I/O queue pairs (its flexible queues
 *                                        less the admin queue): N made, a write and read on each,
 *                                        one more refused with -EBUSY saying why
 *   gio-qemu-sriov pair VF1 NS1 VF2 NS2 SECONDS
 *                                        two writer processes, each with its own VF, namespace
 *                                        and KV store, putting and verifying chunks at the same
 *                                        time for SECONDS; the first is SIGKILLed midway, the
 *                                        second must go on putting and end with every chunk
 *                                        served byte for byte; then the first's store is opened
 *                                        again here: every chunk it reported served, and every
 *                                        chunk served byte for byte
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/store.h>
#include <giouring/nvme/identify.h>
#include <giouring/nvme/sqe.h>
#include <giouring/proto/dptr_build.h>
#include <giouring/proto/prep.h>
#include <giouring/ring/clock.h>

#include "../kill_pipe.h"
#include "chunk_bytes.h"
#include "guest_check.h"

#define IO_TIMEOUT_NS (10ull * 1000000000ull)
#define ADMIN_OPC_NS_ATTACH 0x15u
#define KEY_TAG 0x67696f7372696f76ull /* key.hi of every chunk; key.lo: the writer and the number */
#define POOL_SIGNATURE 0x5352494f564b5653ull
/* 160 KiB chunks: two objects of 80 KiB, so each put and get is a few commands. */
#define LAYERS 2u
#define OBJECT_BYTES (80u << 10)
#define CHUNK_BYTES ((uint64_t)LAYERS * OBJECT_BYTES)
#define STORE_BYTES (16ull << 20)
/* Reports the parent awaits from the first writer before it kills it. */
#define KILL_AFTER 6u
#define REPORT_WAIT_MS 30000
/* How long an open may keep getting -EBUSY from VFIO after a writer died. */
#define EBUSY_NS (10ull * 1000000000ull)

static struct gio_kv_u128 key_of(unsigned writer, uint32_t i)
{
	struct gio_kv_u128 k = {((uint64_t)writer << 32) | (i + 1), KEY_TAG};
	return k;
}

/* ---- the kernel's side: admin commands to the PF through /dev/nvmeN ------------------------ */

static int admin(int fd, uint8_t opc, uint32_t nsid, uint32_t cdw10, void *buf, uint32_t len)
{
	struct nvme_admin_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	cmd.opcode = opc;
	cmd.nsid = nsid;
	cmd.addr = (uint64_t)(uintptr_t)buf;
	cmd.data_len = len;
	cmd.cdw10 = cdw10;
	cmd.timeout_ms = 5000;
	return ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd); /* -1 (errno) or the NVMe status */
}

static int attach(const char *dev, uint32_t nsid)
{
	struct gio_id_ctrl *id = aligned_alloc(4096, sizeof(*id));
	uint16_t *list = aligned_alloc(4096, 4096);
	int fd = open(dev, O_RDWR | O_CLOEXEC), rc;
	if (fd < 0 || !id || !list) {
		printf("FAIL attach: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	rc = admin(fd, GIO_ADMIN_OPC_IDENTIFY, 0, GIO_CNS_CTRL, id, sizeof(*id));
	memset(list, 0, 4096);
	list[0] = 1;
	list[1] = id->cntlid;
	if (rc == 0)
		rc = admin(fd, ADMIN_OPC_NS_ATTACH, nsid, 0 /* SEL: attach */, list, 4096);
	CHECK("attach.pf", rc == 0, "namespace %u to controller %u of %s: %d (%s)", nsid, id->cntlid, dev, rc,
	      rc < 0 ? strerror(errno) : "NVMe status");
	close(fd);
	free(id);
	free(list);
	return rc != 0;
}

static int pf_ns(const char *dev, int argc, char **argv)
{
	uint32_t *list = aligned_alloc(4096, 4096), n = 0, i;
	char got[256] = "", want[256] = "";
	int fd = open(dev, O_RDWR | O_CLOEXEC), rc, a;
	if (fd < 0 || !list) {
		printf("FAIL pf-ns: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	memset(list, 0, 4096);
	rc = admin(fd, GIO_ADMIN_OPC_IDENTIFY, 0, GIO_CNS_NS_ACTIVE_LIST, list, 4096);
	for (i = 0; rc == 0 && i < 1024 && list[i]; i++, n++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%u", n ? " " : "", list[i]);
	for (a = 0; a < argc; a++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", a ? " " : "", argv[a]);
	printf("PF-NS %s: %s\n", dev, got);
	CHECK("isolation.pf-sees-only-its-namespaces", rc == 0 && !strcmp(got, want),
	      "active namespaces of %s: '%s', want '%s' (Identify: %d)", dev, got, want, rc);
	close(fd);
	free(list);
	return rc != 0;
}

/* ---- giouring's side: the VFs ------------------------------------------------------------- */

static int open_vf(const char *vf, uint32_t nsid, struct gio_ctx **ctx)
{
	char uri[128];
	snprintf(uri, sizeof(uri), "nvme-pci://%s?ns=%u", vf, nsid);
	return gio_ctx_open(uri, ctx);
}

static void refuse(const char *vf, uint32_t nsid, const char *name, int want_rc, const char *want1, const char *want2)
{
	struct gio_ctx *ctx = NULL;
	const int rc = open_vf(vf, nsid, &ctx);
	const char *msg = gio_last_error();
	printf("  open nvme-pci://%s?ns=%u: %d: %s\n", vf, nsid, rc, msg);
	CHECK(name, rc == want_rc && strstr(msg, want1) && strstr(msg, want2), "want %d naming '%s' and '%s', got %d", want_rc,
	      want1, want2, rc);
	if (!rc)
		gio_ctx_close(ctx);
}

/* One write and read back of a block through qp, compared. */
static int io_check(struct gio_ctx *ctx, struct gio_qp *qp, unsigned char *buf, uint64_t addr, uint64_t lba, int tag)
{
	struct gio_ns_info ns;
	struct gio_sqe sqe;
	struct gio_range r;
	uint16_t st;
	uint32_t i;
	int rc;
	gio_ctx_info(ctx, &ns);
	r.addr = addr;
	r.len = ns.lba_bytes;
	for (i = 0; i < ns.lba_bytes; i++)
		buf[i] = (unsigned char)(i * 7 + tag);
	if ((rc = gio_prep_write(&sqe, ns.nsid, lba, 1)) ||
	    (rc = gio_dptr_build(&sqe, &r, 1, gio_ctx_dptr_caps(ctx), buf + 65536, addr + 65536, 4096)) < 0 ||
	    (rc = gio_qp_submit_wait(qp, &sqe, IO_TIMEOUT_NS, &st, NULL)))
		return rc;
	memset(buf, 0, ns.lba_bytes);
	if ((rc = gio_prep_read(&sqe, ns.nsid, lba, 1)) ||
	    (rc = gio_dptr_build(&sqe, &r, 1, gio_ctx_dptr_caps(ctx), buf + 65536, addr + 65536, 4096)) < 0 ||
	    (rc = gio_qp_submit_wait(qp, &sqe, IO_TIMEOUT_NS, &st, NULL)))
		return rc;
	for (i = 0; i < ns.lba_bytes; i++)
		if (buf[i] != (unsigned char)(i * 7 + tag))
			return -EILSEQ;
	return 0;
}

static void queues(const char *vf, uint32_t nsid, uint32_t want)
{
	struct gio_ctx *ctx;
	struct gio_qp *qp[64];
	struct gio_ns_info ns;
	unsigned char *buf = aligned_alloc(4096, 65536 + 4096);
	uint64_t addr;
	uint32_t i, made = 0, ok = 0;
	int rc = open_vf(vf, nsid, &ctx);
	CHECK("queues.open", rc == 0, "open nvme-pci://%s?ns=%u: %d", vf, nsid, rc);
	if (rc || !buf)
		return;
	gio_ctx_info(ctx, &ns);
	printf("  %s: namespace %u, %" PRIu64 " blocks of %u bytes, %u I/O queue pairs granted\n", vf, ns.nsid, ns.nblocks,
	       ns.lba_bytes, ns.io_queues);
	CHECK("queues.granted", ns.io_queues == want, "%u I/O queue pairs granted, want %u", ns.io_queues, want);
	rc = gio_ctx_register(ctx, buf, 65536 + 4096, &addr);
	CHECK("queues.register", rc == 0, "register: %d", rc);
	for (i = 0; rc == 0 && i < ns.io_queues && i < 64; i++) {
		if (gio_ctx_qp_create(ctx, 16, &qp[i]))
			break;
		made++;
		ok += io_check(ctx, qp[i], buf, addr, i, (int)i) == 0;
	}
	CHECK("queues.all-granted-work", made == ns.io_queues && ok == made, "%u of %u queue pairs made, %u did I/O", made,
	      ns.io_queues, ok);
	if (made == ns.io_queues && made < 64) {
		struct gio_qp *extra;
		rc = gio_ctx_qp_create(ctx, 16, &extra);
		printf("  one more queue pair: %d: %s\n", rc, gio_last_error());
		CHECK("queues.one-more-refused", rc == -EBUSY && strstr(gio_last_error(), "flexible queues its PF assigned"),
		      "want -EBUSY naming the VF's flexible queues, got %d", rc);
		if (rc == 0)
			gio_ctx_qp_destroy(ctx, extra, IO_TIMEOUT_NS, NULL, NULL);
	}
	for (i = 0; i < made; i++)
		gio_ctx_qp_destroy(ctx, qp[i], IO_TIMEOUT_NS, NULL, NULL);
	gio_ctx_unregister(ctx, buf);
	CHECK("queues.close", gio_ctx_close(ctx) == 0, "close");
	free(buf);
}

/* ---- pair: two processes, one VF each ---------------------------------------------------- */

static struct gio_kv_store_params params(void)
{
	struct gio_kv_store_params p;
	memset(&p, 0, sizeof(p));
	p.layers = LAYERS;
	p.object_bytes = OBJECT_BYTES;
	p.pool_signature = POOL_SIGNATURE;
	p.store_bytes = STORE_BYTES;
	p.timeout_ns = IO_TIMEOUT_NS;
	return p;
}

/* The VF's context, retried while VFIO still holds a dead writer's device (-EBUSY). */
static int open_retry(const char *vf, uint32_t nsid, struct gio_ctx **ctx)
{
	const uint64_t deadline = gio_deadline_in(EBUSY_NS);
	int rc;
	while ((rc = open_vf(vf, nsid, ctx)) == -EBUSY && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(10000000ull);
	return rc;
}

/* Gets chunk i of writer w and compares: 1 served and equal, 0 a miss, -1 served with other
 * bytes or an error. */
static int check_chunk(struct gio_kv_store *st, unsigned w, uint32_t i, unsigned char *got, unsigned char *want)
{
	int rc;
	memset(got, 0xa5, CHUNK_BYTES);
	gio_test_chunk_bytes(key_of(w, i), want, CHUNK_BYTES);
	rc = gio_kv_store_get(st, key_of(w, i), got, CHUNK_BYTES);
	if (rc == 0)
		return 0;
	return rc == 1 && !memcmp(got, want, CHUNK_BYTES) ? 1 : -1;
}

/* A writer process: its own VF and store; puts chunk after chunk until `seconds` pass, each read
 * back and compared, every eighth put a recent one too, each one reported on fd; a full store
 * evicts its least recently used chunks. Then the store is closed and opened again: no chunk
 * served with other bytes, and the latest half of its capacity all served. Exits 0 when all
 * held, else says why. */
static void __attribute__((noreturn)) writer(unsigned w, const char *vf, uint32_t nsid, double seconds, int fd)
{
	const struct gio_kv_store_params p = params();
	unsigned char *buf = malloc(CHUNK_BYTES), *got = malloc(CHUNK_BYTES);
	const uint64_t end = gio_deadline_in((uint64_t)(seconds * 1e9));
	struct gio_kv_store_stats info;
	struct gio_kv_store *st;
	struct gio_ctx *ctx;
	uint32_t n = 0, i, keep, served = 0;
	int rc;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!buf || !got)
		_exit(20);
	if ((rc = open_retry(vf, nsid, &ctx)) || (rc = gio_kv_store_create(&ctx, 1, &p, &st))) {
		fprintf(stderr, "writer %u (%s): open: %d (%s)\n", w, vf, rc, gio_last_error());
		_exit(21);
	}
	gio_kv_store_info(st, &info);
	if (!gio_kill_write_u64(fd, GIO_KILL_OPENED))
		_exit(22);
	while (!gio_deadline_passed(end)) {
		gio_test_chunk_bytes(key_of(w, n), buf, CHUNK_BYTES);
		if ((rc = gio_kv_store_put(st, key_of(w, n), buf, CHUNK_BYTES))) {
			fprintf(stderr, "writer %u: put %u: %d (%s)\n", w, n, rc, gio_last_error());
			_exit(23);
		}
		if (check_chunk(st, w, n, got, buf) != 1 || (n % 8 == 7 && check_chunk(st, w, n - 4, got, buf) != 1)) {
			fprintf(stderr, "writer %u: chunk %u (or %u) not read back as put: %s\n", w, n, n - 4, gio_last_error());
			_exit(24);
		}
		if (!gio_kill_write_u64(fd, n++))
			_exit(25);
	}
	if ((rc = gio_kv_store_close(st)) || (rc = gio_kv_store_open(&ctx, 1, &p, &st))) {
		fprintf(stderr, "writer %u: close and reopen: %d (%s)\n", w, rc, gio_last_error());
		_exit(26);
	}
	keep = (uint32_t)(info.capacity / 2 < n ? info.capacity / 2 : n);
	for (i = 0; i < n; i++) {
		const int c = check_chunk(st, w, i, got, buf);
		served += c == 1;
		if (c < 0 || (c == 0 && i >= n - keep)) {
			fprintf(stderr, "writer %u: after the reopen chunk %u of %u %s\n", w, i, n,
				c < 0 ? "served with other bytes" : "missing (one of the latest)");
			_exit(27);
		}
	}
	printf("WRITER %u %s ns=%u chunks=%u served=%u capacity=%" PRIu64 ": the latest %u all served after a reopen\n", w,
	       vf, nsid, n, served, info.capacity, keep);
	fflush(stdout);
	_exit(gio_kv_store_close(st) || gio_ctx_close(ctx) ? 28 : 0);
}

static pid_t start_writer(unsigned w, const char *vf, uint32_t nsid, double seconds, int *rfd)
{
	int p[2];
	pid_t pid;
	if (pipe(p))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		writer(w, vf, nsid, seconds, p[1]);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static void pair(char **argv)
{
	const char *vf[2] = {argv[0], argv[2]};
	const uint32_t ns[2] = {(uint32_t)strtoul(argv[1], NULL, 0), (uint32_t)strtoul(argv[3], NULL, 0)};
	const double seconds = strtod(argv[4], NULL);
	unsigned char *got = malloc(CHUNK_BYTES), *want = malloc(CHUNK_BYTES);
	uint64_t v, done1 = 0, at_kill; /* done1: chunks writer 1 put */
	uint32_t reported = 0, served = 0, bad = 0, i;
	int fd[2], status[2], opened = 0, r;
	pid_t pid[2];
	char how[64];
	for (i = 0; i < 2; i++)
		pid[i] = start_writer(i, vf[i], ns[i], i == 0 ? 3600 : seconds, &fd[i]);
	CHECK("pair.started", pid[0] > 0 && pid[1] > 0 && got && want, "fork");
	if (pid[0] <= 0 || pid[1] <= 0 || !got || !want)
		return;
	/* Both open, then the first's reports until it has put KILL_AFTER chunks. */
	for (i = 0; i < 2; i++)
		opened += gio_kill_read_u64(fd[i], &v, REPORT_WAIT_MS) == 1 && v == GIO_KILL_OPENED;
	CHECK("pair.both-opened", opened == 2, "%d of 2 writers opened their store", opened);
	while (opened == 2 && reported < KILL_AFTER && (r = gio_kill_read_u64(fd[0], &v, REPORT_WAIT_MS)) == 1) {
		reported++;
	}
	/* The second's reports so far: it must go on after the kill. */
	at_kill = 0;
	while (gio_kill_read_u64(fd[1], &v, 0) == 1)
		at_kill = v + 1;
	kill(pid[0], SIGKILL);
	waitpid(pid[0], &status[0], 0);
	gio_kill_status_str(status[0], how, sizeof(how));
	/* What the first reported before it died. */
	while (gio_kill_read_u64(fd[0], &v, 1000) == 1) {
		reported++;
	}
	printf("  writer 0 (%s) %s after %u chunks; writer 1 had put %" PRIu64 "\n", vf[0], how, reported, at_kill);
	CHECK("pair.first-killed", WIFSIGNALED(status[0]) && reported >= KILL_AFTER, "writer 0 %s, %u chunks", how, reported);
	while (gio_kill_read_u64(fd[1], &v, REPORT_WAIT_MS) == 1)
		done1 = v + 1;
	waitpid(pid[1], &status[1], 0);
	gio_kill_status_str(status[1], how, sizeof(how));
	printf("  writer 1 (%s) %s after %" PRIu64 " chunks, %" PRIu64 " of them after the kill\n", vf[1], how, done1,
	       done1 - at_kill);
	CHECK("pair.second-unharmed", WIFEXITED(status[1]) && WEXITSTATUS(status[1]) == 0 && done1 > at_kill,
	      "writer 1 %s, %" PRIu64 " chunks after the kill", how, done1 - at_kill);
	/* The killed writer's store, opened again in this process. */
	{
		const struct gio_kv_store_params p = params();
		struct gio_kv_store *st = NULL;
		struct gio_ctx *ctx = NULL;
		int rc = open_retry(vf[0], ns[0], &ctx);
		if (!rc)
			rc = gio_kv_store_open(&ctx, 1, &p, &st);
		CHECK("pair.killed-store-reopens", rc == 0, "reopen of writer 0's store on %s: %d", vf[0], rc);
		for (i = 0; rc == 0 && i <= reported; i++) { /* reported ones, and the one in flight */
			const int c = check_chunk(st, 0, i, got, want);
			served += c == 1;
			bad += c < 0 || (c == 0 && i < reported);
		}
		printf("KILLED-STORE %s: %u of %u reported chunks served (the one in flight: %s), %u wrong or missing\n", vf[0],
		       served > reported ? reported : served, reported, served > reported ? "whole" : "absent", bad);
		CHECK("pair.killed-store-intact", rc == 0 && bad == 0 && served >= reported, "%u bad, %u served of %u", bad, served,
		      reported);
		if (st)
			gio_kv_store_close(st);
		if (ctx)
			gio_ctx_close(ctx);
	}
	free(got);
	free(want);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "attach") && argc == 4)
		return attach(argv[2], (uint32_t)strtoul(argv[3], NULL, 0));
	if (!strcmp(mode, "pf-ns") && argc >= 3)
		pf_ns(argv[2], argc - 3, argv + 3);
	else if (!strcmp(mode, "refuse-offline") && argc == 4)
		refuse(argv[2], (uint32_t)strtoul(argv[3], NULL, 0), "refuse.offline-vf", -EIO, "is offline",
		       "giouring-sriov setup");
	else if (!strcmp(mode, "refuse-ns") && argc == 4)
		refuse(argv[2], (uint32_t)strtoul(argv[3], NULL, 0), "isolation.vf-refuses-unattached-namespace", -ENODEV,
		       "not attached", "attach the namespace to controller");
	else if (!strcmp(mode, "queues") && argc == 5)
		queues(argv[2], (uint32_t)strtoul(argv[3], NULL, 0), (uint32_t)strtoul(argv[4], NULL, 0));
	else if (!strcmp(mode, "pair") && argc == 7)
		pair(argv + 2);
	else {
		fprintf(stderr, "usage: gio-qemu-sriov attach DEV NSID | pf-ns DEV NSID... | refuse-offline VF NSID | refuse-ns "
				"VF NSID | queues VF NSID N | pair VF1 NS1 VF2 NS2 SECONDS\n");
		return 2;
	}
	printf("RESULT sriov-%s pass=%d fail=%d\n", mode, npass, nfail);
	return nfail != 0;
}
