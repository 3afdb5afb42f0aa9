/* libnrt's logger: levels and locations per component from NEURON_RT_LOG_* (docs/env.md). */
#ifndef NRT_LOG_H
#define NRT_LOG_H

#include <stddef.h>

#include "neuronsim/status.h"

typedef enum nrt_log_level {
	NRT_LOG_OFF = 0, /* QUIET: nothing at all */
	NRT_LOG_ERROR = 1,
	NRT_LOG_WARN = 2,
	NRT_LOG_INFO = 3,
	NRT_LOG_DEBUG = 4,
	NRT_LOG_TRACE = 5,
} nrt_log_level_t;

/* The Neuron Runtime's log components, as NEURON_RT_LOG_LEVEL_<COMPONENT> names
 * them: NRT the API (most of libnrt), TDRV the driver library (device memory,
 * the backends), NMGR the model manager. */
typedef enum nrt_log_component {
	NRT_LOG_NRT = 0,
	NRT_LOG_TDRV = 1,
	NRT_LOG_NMGR = 2,
	NRT_LOG_COMPONENT_COUNT
} nrt_log_component_t;

typedef enum nrt_log_location {
	NRT_LOG_TO_CONSOLE = 0, /* stderr */
	NRT_LOG_TO_SYSLOG = 1,
	NRT_LOG_TO_FILE = 2,    /* appended, one line at a time */
} nrt_log_location_t;

#define NRT_LOG_PATH_MAX 1024

/* What NEURON_RT_LOG_LEVEL[_<C>] and NEURON_RT_LOG_LOCATION[_<C>] say, per
 * component (the component's own variable, else the global one). */
typedef struct nrt_log_config {
	int level[NRT_LOG_COMPONENT_COUNT];      /* nrt_log_level_t */
	int location[NRT_LOG_COMPONENT_COUNT];   /* nrt_log_location_t */
	char path[NRT_LOG_COMPONENT_COUNT][NRT_LOG_PATH_MAX]; /* NRT_LOG_TO_FILE */
} nrt_log_config_t;

/* Parses QUIET/OFF/ERROR/WARN/WARNING/INFO/DEBUG/TRACE (any case). -1 if unknown. */
int nrt_log_level_parse(const char *s);
const char *nrt_log_level_name(nrt_log_level_t level);
const char *nrt_log_component_name(nrt_log_component_t comp);
/* Reads the NEURON_RT_LOG_* variables into *out. A bad value is an
 * INVALID_ARGUMENT status naming the variable, its value and what is accepted
 * (the first bad one, when several are); *out is filled all the same, with the
 * defaults for what could not be read. */
ns_status_t nrt_log_config_from_env(nrt_log_config_t *out);
/* The configuration the logger uses while a runtime is live (ctx.c's
 * nrt_ctx_publish; cfg outlives that), or NULL for the environment's (before
 * nrt_init, after nrt_close, and for errors of nrt_init itself). */
void nrt_log_set_config(const nrt_log_config_t *cfg);
/* The level in force for comp: the runtime's (set at nrt_init) or, before it,
 * the environment's. */
nrt_log_level_t nrt_log_level_of(nrt_log_component_t comp);
static inline nrt_log_level_t nrt_log_level(void) { return nrt_log_level_of(NRT_LOG_NRT); }
void nrt_log_c(nrt_log_component_t comp, nrt_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define nrt_log(level, ...) nrt_log_c(NRT_LOG_NRT, level, __VA_ARGS__)

#define NRT_LOGE(...) nrt_log(NRT_LOG_ERROR, __VA_ARGS__)
#define NRT_LOGW(...) nrt_log(NRT_LOG_WARN, __VA_ARGS__)
#define NRT_LOGI(...) nrt_log(NRT_LOG_INFO, __VA_ARGS__)
#define NRT_LOGD(...) nrt_log(NRT_LOG_DEBUG, __VA_ARGS__)

#endif /* NRT_LOG_H */
