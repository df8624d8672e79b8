/**
 * @file giouring/ring/clock.h
 * @brief Monotonic time for deadlines, on the host and the GPU.
 *
 * Every wait in giouring takes an absolute deadline in nanoseconds of this clock. On the GPU
 * the clock is `%globaltimer` (nanoseconds, shared by all SMs); on the host it is
 * CLOCK_MONOTONIC. Both halves are inline here: the ring headers need no library on either side.
 * The two clocks are unrelated: a deadline is computed on the side that waits.
 */
#ifndef GIOURING_RING_CLOCK_H
#define GIOURING_RING_CLOCK_H

#include <stdint.h>

#include "../config.h"

/** @cond GIO_INTERNAL */
#include <sched.h>
#include <stddef.h>
#include <time.h>
#if !(defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L) && !defined(__cplusplus)
/* Strict ISO C (-std=c11 without a feature macro) hides these two POSIX declarations, although
 * every Linux C library has the functions; they are declared here as that library declares them
 * (clockid_t is int). C++ compilers always expose them (g++ and clang++ define _GNU_SOURCE). */
extern int clock_gettime(int clock_id, struct timespec *tp);
extern int nanosleep(const struct timespec *req, struct timespec *rem);
#endif
#if defined(CLOCK_MONOTONIC)
#define GIO__CLOCK_MONOTONIC CLOCK_MONOTONIC
#else
#define GIO__CLOCK_MONOTONIC 1 /* Linux's number for CLOCK_MONOTONIC */
#endif
/** @endcond */

GIO_EXTERN_C_BEGIN

/** @brief A deadline that never expires (use only where something else bounds the wait). */
#define GIO_DEADLINE_NEVER UINT64_MAX

/**
 * @brief CLOCK_MONOTONIC in nanoseconds.
 * @return the time.
 *
 * Any host thread.
 */
GIO_INLINE uint64_t gio_host_now_ns(void)
{
	struct timespec ts;
	clock_gettime(GIO__CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/**
 * @brief Gives the CPU away (sched_yield).
 *
 * Any host thread.
 */
GIO_INLINE void gio_host_yield(void)
{
	(void)sched_yield();
}

/**
 * @brief Sleeps for about @p ns nanoseconds (nanosleep; an interrupted sleep returns early).
 * @param ns  how long.
 *
 * Any host thread.
 */
GIO_INLINE void gio_host_sleep_ns(uint64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	(void)nanosleep(&ts, NULL);
}

/**
 * @brief Monotonic nanoseconds on the calling side (host: CLOCK_MONOTONIC, device: %globaltimer).
 * @return the time.
 *
 * Any thread, host or device.
 */
GIO_HD uint64_t gio_now_ns(void)
{
#if defined(__CUDA_ARCH__)
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	return gio_host_now_ns();
#endif
}

/**
 * @brief Absolute deadline @p timeout_ns from now.
 * @param timeout_ns  relative timeout; GIO_DEADLINE_NEVER gives a deadline that never expires.
 * @return the deadline, saturated at GIO_DEADLINE_NEVER.
 *
 * Any thread, host or device.
 */
GIO_HD uint64_t gio_deadline_in(uint64_t timeout_ns)
{
	const uint64_t now = gio_now_ns();
	return timeout_ns >= GIO_DEADLINE_NEVER - now ? GIO_DEADLINE_NEVER : now + timeout_ns;
}

/**
 * @brief Whether a deadline has passed.
 * @param deadline  an absolute deadline from gio_deadline_in().
 * @return 1 when it has passed, else 0.
 *
 * Any thread, host or device.
 */
GIO_HD int gio_deadline_passed(uint64_t deadline)
{
	return deadline != GIO_DEADLINE_NEVER && gio_now_ns() >= deadline;
}

/**
 * @brief One step of a polling wait: spin briefly, then let other threads run.
 * @param spins  the caller's counter, 0 at the start of the wait; incremented here.
 *
 * Any thread, host or device. On the host the first 64 steps pause the core; the next ones yield
 * it, so that waiters do not starve the threads they wait for when threads outnumber cores; after
 * 1024 steps (a wait of a millisecond or more, which no longer needs a fast wake-up) every step
 * sleeps 20 us, because a crowd of yielding waiters still crowds out the executor threads they
 * wait for. On the device every step sleeps a little longer, up to about a microsecond.
 */
GIO_HD void gio_backoff(uint32_t *spins)
{
	const uint32_t n = (*spins)++;
#if defined(__CUDA_ARCH__)
	__nanosleep(n < 32 ? 32u * (n + 1) : 1024u);
#else
	if (n < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else if (n < 1024) {
		gio_host_yield();
	} else {
		gio_host_sleep_ns(20000);
	}
#endif
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_CLOCK_H */
