/* The one clock of the project: CLOCK_MONOTONIC in nanoseconds, for executions,
 * deadlines, metrics, traces, process stats and the tools' timings. Sites that
 * need a struct timespec (pthread_cond_timedwait, clock_nanosleep) or another
 * clock (CLOCK_REALTIME for wall time) call clock_gettime themselves. */
#ifndef NEURONSIM_CLOCK_H
#define NEURONSIM_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in ns. */
static inline uint64_t ns_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* NEURONSIM_CLOCK_H */
