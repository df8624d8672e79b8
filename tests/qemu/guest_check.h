/* The checks of the QEMU guest programs (the .c files of tests/qemu): one PASS or FAIL line
 * each, counted in npass and nfail, a FAIL line with the host library's last message.
 * scripts/qemu/run.sh judges from these lines in the serial log. Included once per program (the
 * counters are its own). */
#ifndef GIOURING_TESTS_QEMU_GUEST_CHECK_H
#define GIOURING_TESTS_QEMU_GUEST_CHECK_H

#include <stdio.h>

#include <giouring/host/ctx.h>

static int npass, nfail;

#define CHECK(name, cond, ...)                                                                         \
	do {                                                                                           \
		if (cond) {                                                                            \
			npass++;                                                                       \
			printf("PASS %s\n", name);                                                     \
		} else {                                                                               \
			nfail++;                                                                       \
			printf("FAIL %s: ", name);                                                     \
			printf(__VA_ARGS__);                                                           \
			printf(" [%s]\n", gio_last_error());                                           \
		}                                                                                      \
		fflush(stdout);                                                                        \
	} while (0)

#endif
