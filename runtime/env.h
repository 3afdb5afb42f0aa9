/* Runtime configuration read from the environment at nrt_init (docs/env.md). */
#ifndef NRT_ENV_H
#define NRT_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "nrt/nrt_status.h"
#include "rt_status.h"

#define NRT_MAX_CORES 256

/* NEURON_RT_NUMERICAL_ERRORS_VERBOSITY: what a NaN (or Inf) does. */
typedef enum nrt_num_err_verbosity {
	NRT_NUM_ERR_NONE = 0,        /* not checked: the execution succeeds, nothing is logged */
	NRT_NUM_ERR_WARNING = 1,     /* a WARN line; nrt_execute returns NRT_SUCCESS */
	NRT_NUM_ERR_CRITICAL = 2,    /* an ERROR line; NRT_EXEC_COMPLETED_WITH_NUM_ERR */
} nrt_num_err_verbosity_t;

typedef struct nrt_config {
	uint32_t num_devices;        /* NEURONSIM_NUM_DEVICES */
	uint32_t cores_per_device;   /* NEURONSIM_CORES_PER_DEVICE */
	uint64_t device_memory;      /* NEURONSIM_DEVICE_MEMORY, bytes per device */
	uint32_t n_visible;          /* NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES */
	uint32_t visible[NRT_MAX_CORES]; /* physical (global) core ids, ascending */
	nrt_log_config_t log;        /* NEURON_RT_LOG_LEVEL[_<C>], NEURON_RT_LOG_LOCATION[_<C>] */
	uint64_t exec_timeout_ns;    /* NEURON_RT_EXEC_TIMEOUT (0..INT_MAX s); 0 = none */
	bool oom_log;                /* NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG */
	bool nan_check;              /* NEURONSIM_NAN_CHECK */
	bool inf_check;              /* NEURONSIM_INF_CHECK */
	int num_err_verbosity;       /* nrt_num_err_verbosity_t; NEURON_FAIL_ON_NAN raises it */
	bool fail_on_nan;            /* NEURON_FAIL_ON_NAN */
	bool pin_threads;            /* NEURONSIM_PIN_THREADS */
	uint32_t threads;            /* NEURONSIM_THREADS (0..16); 0 = the affinity mask's CPUs */
	int cpu_isa;                 /* NEURONSIM_CPU_ISA: a fwsim_isa_t; 0 = auto */
	char backend[32];            /* NEURONSIM_BACKEND */
} nrt_config_t;

/* The boolean variable name (1/0, on/off, true/false, yes/no, any case;
 * dflt when unset or empty) in *out, or an NRT_INVALID status naming it and its
 * value. */
ns_status_t nrt_env_get_bool(const char *name, bool dflt, bool *out);
/* Fills *out from the environment. A bad value is a status naming the
 * variable and the value, NRT_INVALID (NRT_RESOURCE when more cores are asked
 * for than exist). */
ns_status_t nrt_env_load(nrt_config_t *out);

/* Says at INFO, once per call, which documented Neuron Runtime variables that
 * are set neuronsim does not implement (and what it does instead), and which
 * set NEURON_RT_* variables are not documented ones; warns about set ones the
 * Neuron Runtime removed (and what replaces them). nrt_init calls it. */
void nrt_env_report_unimplemented(void);

/* Parses a NEURON_RT_VISIBLE_CORES value ("0-3", "1", "0,2,5-6") into a
 * sorted, duplicate-free list of ids < total (out_ids has room for
 * NRT_MAX_CORES; *out_n is set on success only). Syntax errors, empty or
 * reversed ranges, duplicates and ids >= total are an NRT_INVALID status
 * saying what is wrong and what is accepted, without the variable's name: the
 * caller annotates it with that. */
ns_status_t nrt_env_parse_cores(const char *s, uint32_t total, uint32_t *out_ids, uint32_t *out_n);
/* Decimal unsigned integer with optional K/M/G/T (binary) suffix. */
NRT_STATUS nrt_env_parse_size(const char *s, uint64_t *out);

/* A flag's value: 1 for 1, on, true or yes, 0 for 0, off, false or no (any
 * case), -1 for anything else. */
int nrt_env_parse_bool(const char *s);

#endif /* NRT_ENV_H */
