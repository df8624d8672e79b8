/* The pipe through which a writer process that a kill test SIGKILLs at a random point tells its
 * parent what it committed (tests/test_kv_store_kill.cpp over file targets, tests/qemu/kv_store.c
 * over QEMU's NVMe controllers): 8-byte messages, GIO_KILL_OPENED once its store is open, then
 * each key's number after its put returned 0 and before the next put starts. One message is one
 * write below PIPE_BUF, so the kill never leaves half of one in the pipe. C and C++. */
#ifndef GIOURING_TESTS_KILL_PIPE_H
#define GIOURING_TESTS_KILL_PIPE_H

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The writer's first message: its store is open, puts start. */
#define GIO_KILL_OPENED (~(uint64_t)0)

/* Sends v: 1, or 0 when the write failed or was short. */
static inline int gio_kill_write_u64(int fd, uint64_t v)
{
	return write(fd, &v, sizeof(v)) == (ssize_t)sizeof(v);
}

/* Reads one message, waiting at most timeout_ms for each part of it: 1, 0 at end of file (the
 * writer is gone and every message was read), -1 on timeout, a torn message or an error. */
static inline int gio_kill_read_u64(int fd, uint64_t *v, int timeout_ms)
{
	size_t got = 0;
	while (got < sizeof(*v)) {
		struct pollfd pfd = {fd, POLLIN, 0};
		const int pr = poll(&pfd, 1, timeout_ms);
		ssize_t r;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -1;
		r = read(fd, (char *)v + got, sizeof(*v) - got);
		if (r == 0)
			return got ? -1 : 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 1;
}

/* How a reaped child ended (waitpid's status), as words into buf. */
static inline void gio_kill_status_str(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else
		snprintf(buf, len, "wait status %d", status);
}

#endif
