/* The host side of giouring/ring/clock.h: CLOCK_MONOTONIC needs POSIX, which the headers avoid so
 * that they compile as strict C11 everywhere. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <time.h>

#include <giouring/ring/clock.h>

uint64_t gio_host_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gio_host_yield(void)
{
	sched_yield();
}

void gio_host_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}
