/* The one log path (log.h): one line, formatted whole, written with one call to stderr, syslog or an appended file. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/log.h"

#define LINE_MAX_BYTES 2048

void ns_log_vwrite(const ns_log_sink_t *sink, ns_log_level_t level, const char *head,
		   const char *fmt, va_list ap)
{
	if (level <= NS_LOG_QUIET || level > NS_LOG_TRACE)
		return;
	/* The tag is written in front of the rest for stderr and files only:
	 * syslog names the program itself. */
	char line[LINE_MAX_BYTES];
	bool tagged = sink->tag && sink->dest != NS_LOG_TO_SYSLOG;
	int n = snprintf(line, sizeof(line), "%s%s%s", tagged ? sink->tag : "", tagged ? ": " : "",
			 head ? head : "");
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	switch (sink->dest) {
	case NS_LOG_TO_SYSLOG: {
		static const int prio[] = { LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG, LOG_DEBUG };
		line[len] = '\0';
		syslog(sink->syslog_facility | prio[level], "%s", line);
		return;
	}
	case NS_LOG_TO_FILE: {
		line[len++] = '\n';
		const char *step = NULL;
		if (sink->path && atomic_file_append(sink->path, line, len, 0644, &step) == 0)
			return;
		fprintf(stderr, "%s%sERROR cannot append to log file %s (%s: %s): %.*s",
			sink->tag ? sink->tag : "", sink->tag ? ": " : "", sink->path ? sink->path : "",
			step ? step : "append", strerror(errno), (int)len, line);
		return;
	}
	default:
		line[len++] = '\n';
		fwrite(line, 1, len, stderr);
	}
}

void ns_log_write(const ns_log_sink_t *sink, ns_log_level_t level, const char *head,
		  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ns_log_vwrite(sink, level, head, fmt, ap);
	va_end(ap);
}
