/* The one path a log line takes to stderr, syslog or a file, for every layer: levels, the whole line formatted first and written with one call. */
#ifndef NEURONSIM_LOG_H
#define NEURONSIM_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The Neuron Runtime's levels and numbers (NEURON_RT_LOG_LEVEL); a layer with
 * fewer levels uses a subset. */
typedef enum ns_log_level {
	NS_LOG_QUIET = 0, /* nothing at all */
	NS_LOG_ERROR = 1,
	NS_LOG_WARN = 2,
	NS_LOG_INFO = 3,
	NS_LOG_DEBUG = 4,
	NS_LOG_TRACE = 5,
} ns_log_level_t;

typedef enum ns_log_dest {
	NS_LOG_TO_STDERR = 0,
	NS_LOG_TO_SYSLOG = 1,
	NS_LOG_TO_FILE = 2,  /* appended, one line at a time (atomic_file_append) */
} ns_log_dest_t;

/* Where a layer's lines go and what names them there. Owned by the caller; only
 * read while a line is written. */
typedef struct ns_log_sink {
	ns_log_dest_t dest;
	/* stderr and file lines start "TAG: " (the program or library: "nrt",
	 * "neuronsim-fwd"); syslog names the program itself, so not there. NULL
	 * for none. */
	const char *tag;
	const char *path;    /* NS_LOG_TO_FILE */
	int syslog_facility; /* ORed into the priority; 0 keeps openlog's */
} ns_log_sink_t;

/* Writes one line: "TAG: " (not to syslog), head (the caller's level and
 * component columns, "" for none), then the message, cut at 2 KiB, one write
 * (one syslog call) so lines of different threads never interleave. level
 * picks the syslog priority (QUIET writes nothing). A file that cannot be
 * appended to gets the line on stderr instead, after why ("TAG: ERROR cannot
 * append to log file PATH (STEP: ERRNO): "): the line is not lost. */
void ns_log_write(const ns_log_sink_t *sink, ns_log_level_t level, const char *head,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void ns_log_vwrite(const ns_log_sink_t *sink, ns_log_level_t level, const char *head,
		   const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_LOG_H */
