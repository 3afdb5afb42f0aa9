/* The logger: level from NEURON_RT_LOG_LEVEL, one line per message on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static const char *const level_names[] = { "OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };

int nrt_log_level_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i <= NRT_LOG_TRACE; i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (!strcasecmp(s, "WARNING"))
		return NRT_LOG_WARN;
	return -1;
}

const char *nrt_log_level_name(nrt_log_level_t level)
{
	return (unsigned)level <= NRT_LOG_TRACE ? level_names[level] : "?";
}

nrt_log_level_t nrt_log_level(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (ctx)
		return (nrt_log_level_t)ctx->config.log_level;
	/* Before nrt_init (or after a failed one) the environment still decides,
	 * so errors of nrt_init itself are shown or hidden consistently. */
	int l = nrt_log_level_parse(getenv("NEURON_RT_LOG_LEVEL"));
	return l < 0 ? NRT_LOG_ERROR : (nrt_log_level_t)l;
}

void nrt_log(nrt_log_level_t level, const char *fmt, ...)
{
	if (level > nrt_log_level() || level == NRT_LOG_OFF)
		return;
	/* Format the whole line first: one write keeps lines from different
	 * threads from interleaving. */
	char line[2048];
	int n = snprintf(line, sizeof(line), "nrt: %-5s ", level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	fwrite(line, 1, len, stderr);
}
