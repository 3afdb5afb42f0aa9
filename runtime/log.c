/* libnrt's logger: level and location per component (NEURON_RT_LOG_*); lines go out through common's one log path (neuronsim/log.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "log.h"
#include "neuronsim/log.h"

/* The runtime's levels are common's, number for number. */
_Static_assert(NRT_LOG_OFF == (int)NS_LOG_QUIET && NRT_LOG_ERROR == (int)NS_LOG_ERROR &&
	       NRT_LOG_WARN == (int)NS_LOG_WARN && NRT_LOG_INFO == (int)NS_LOG_INFO &&
	       NRT_LOG_DEBUG == (int)NS_LOG_DEBUG && NRT_LOG_TRACE == (int)NS_LOG_TRACE,
	       "nrt_log_level_t follows ns_log_level_t");

static const char *const level_names[] = { "QUIET", "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };
static const char *const component_names[NRT_LOG_COMPONENT_COUNT] = { "NRT", "TDRV", "NMGR" };

int nrt_log_level_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i <= NRT_LOG_TRACE; i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (!strcasecmp(s, "WARNING"))
		return NRT_LOG_WARN;
	if (!strcasecmp(s, "OFF")) /* neuronsim's older name for QUIET */
		return NRT_LOG_OFF;
	return -1;
}

const char *nrt_log_level_name(nrt_log_level_t level)
{
	return (unsigned)level <= NRT_LOG_TRACE ? level_names[level] : "?";
}

const char *nrt_log_component_name(nrt_log_component_t comp)
{
	return (unsigned)comp < NRT_LOG_COMPONENT_COUNT ? component_names[comp] : "?";
}

static int parse_location(const char *v, int *out_loc, char *path, size_t path_len)
{
	if (!strcasecmp(v, "console")) {
		*out_loc = NRT_LOG_TO_CONSOLE;
	} else if (!strcasecmp(v, "syslog")) {
		*out_loc = NRT_LOG_TO_SYSLOG;
	} else {
		/* Anything else names a file, as the Neuron Runtime's per-component
		 * locations do (NEURON_RT_LOG_LOCATION_TDRV=tdrv.log). */
		if (strlen(v) >= path_len)
			return -1;
		*out_loc = NRT_LOG_TO_FILE;
		snprintf(path, path_len, "%s", v);
	}
	return 0;
}

/* A bad value of variable name: what it is and what is accepted. */
static ns_status_t bad_level(const char *name, const char *v)
{
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s=\"%s\" is invalid: expected ERROR, WARNING (or "
			      "WARN), INFO, DEBUG, TRACE or QUIET", name, v);
}

static ns_status_t bad_location(const char *name, const char *v)
{
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s=\"%.64s...\" is invalid: expected console, "
			      "syslog or a file name shorter than %d bytes", name, v, NRT_LOG_PATH_MAX);
}

/* Keeps the first failure of several (*first), dropping the later ones. */
static void keep_first(ns_status_t *first, ns_status_t st)
{
	if (*first)
		ns_status_ignore(st);
	else
		*first = st;
}

ns_status_t nrt_log_config_from_env(nrt_log_config_t *out)
{
	memset(out, 0, sizeof(*out));
	ns_status_t st = NS_OK;
	int level = NRT_LOG_ERROR, loc = NRT_LOG_TO_CONSOLE;
	char path[NRT_LOG_PATH_MAX] = "";
	const char *v = getenv("NEURON_RT_LOG_LEVEL");
	if (v && *v && (level = nrt_log_level_parse(v)) < 0) {
		keep_first(&st, bad_level("NEURON_RT_LOG_LEVEL", v));
		level = NRT_LOG_ERROR;
	}
	v = getenv("NEURON_RT_LOG_LOCATION");
	if (v && *v && parse_location(v, &loc, path, sizeof(path)))
		keep_first(&st, bad_location("NEURON_RT_LOG_LOCATION", v));
	for (int c = 0; c < NRT_LOG_COMPONENT_COUNT; c++) {
		out->level[c] = level;
		out->location[c] = loc;
		snprintf(out->path[c], sizeof(out->path[c]), "%s", path);
		char name[64];
		snprintf(name, sizeof(name), "NEURON_RT_LOG_LEVEL_%s", component_names[c]);
		v = getenv(name);
		int l;
		if (v && *v) {
			if ((l = nrt_log_level_parse(v)) < 0)
				keep_first(&st, bad_level(name, v));
			else
				out->level[c] = l;
		}
		snprintf(name, sizeof(name), "NEURON_RT_LOG_LOCATION_%s", component_names[c]);
		v = getenv(name);
		if (v && *v && parse_location(v, &out->location[c], out->path[c], sizeof(out->path[c])))
			keep_first(&st, bad_location(name, v));
	}
	return st;
}

/* The live runtime's log configuration, set and cleared with the context
 * itself (nrt_ctx_publish), so the logger needs nothing of the runtime: every
 * file of libnrt logs, and the logger calling back into the context made them
 * all one call circle. */
static const nrt_log_config_t *_Atomic g_log_config;

void nrt_log_set_config(const nrt_log_config_t *cfg)
{
	atomic_store_explicit(&g_log_config, cfg, memory_order_release);
}

/* Before nrt_init (or after a failed one) the environment decides, so errors
 * of nrt_init itself are shown or hidden consistently. */
static const nrt_log_config_t *log_config(nrt_log_config_t *scratch)
{
	const nrt_log_config_t *cfg = atomic_load_explicit(&g_log_config, memory_order_acquire);
	if (cfg)
		return cfg;
	/* A bad value is nrt_init's to report (nrt_env_load); the logger
	 * uses the default for it meanwhile. */
	ns_status_ignore(nrt_log_config_from_env(scratch));
	return scratch;
}

nrt_log_level_t nrt_log_level_of(nrt_log_component_t comp)
{
	nrt_log_config_t scratch;
	return (nrt_log_level_t)log_config(&scratch)->level[comp];
}

void nrt_log_c(nrt_log_component_t comp, nrt_log_level_t level, const char *fmt, ...)
{
	if (level == NRT_LOG_OFF)
		return;
	nrt_log_config_t scratch;
	const nrt_log_config_t *cfg = log_config(&scratch);
	if ((int)level > cfg->level[comp])
		return;
	static const ns_log_dest_t dest[] = {
		[NRT_LOG_TO_CONSOLE] = NS_LOG_TO_STDERR,
		[NRT_LOG_TO_SYSLOG] = NS_LOG_TO_SYSLOG,
		[NRT_LOG_TO_FILE] = NS_LOG_TO_FILE,
	};
	ns_log_sink_t sink = {
		.dest = dest[cfg->location[comp]],
		.tag = "nrt",
		.path = cfg->path[comp],
		.syslog_facility = LOG_USER,
	};
	char head[32];
	snprintf(head, sizeof(head), "%-5s %s%s", level_names[level],
		 comp == NRT_LOG_NRT ? "" : component_names[comp], comp == NRT_LOG_NRT ? "" : ": ");
	va_list ap;
	va_start(ap, fmt);
	ns_log_vwrite(&sink, (ns_log_level_t)level, head, fmt, ap);
	va_end(ap);
}
