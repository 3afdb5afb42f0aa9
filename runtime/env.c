/* Parsing of the NEURON_RT_* and NEURONSIM_* environment variables into an nrt_config_t. */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend_kernel.h"
#include "fwsim/fwsim.h"
#include "env.h"
#include "log.h"

#define DEFAULT_DEVICE_MEMORY (16ull << 30)
#define DEFAULT_CORES_PER_DEVICE 4u
#define DEFAULT_EXEC_TIMEOUT_S 30u

static int parse_u64(const char **p, uint64_t *out)
{
	const char *s = *p;
	if (!isdigit((unsigned char)*s))
		return -1;
	uint64_t v = 0;
	while (isdigit((unsigned char)*s)) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

NRT_STATUS nrt_env_parse_size(const char *s, uint64_t *out)
{
	uint64_t v;
	if (!s || parse_u64(&s, &v))
		return NRT_INVALID;
	unsigned shift = 0;
	switch (toupper((unsigned char)*s)) {
	case '\0': break;
	case 'K': shift = 10; s++; break;
	case 'M': shift = 20; s++; break;
	case 'G': shift = 30; s++; break;
	case 'T': shift = 40; s++; break;
	default: return NRT_INVALID;
	}
	if (*s == 'i' || *s == 'I')
		s++;
	if ((*s == 'B' || *s == 'b') && shift)
		s++;
	if (*s || (shift && v > (UINT64_MAX >> shift)))
		return NRT_INVALID;
	*out = v << shift;
	return NRT_SUCCESS;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* What a core list may say, for the messages about its syntax. */
#define CORE_LIST_FORM "expected core ids and lo-hi ranges separated by commas, as in 0-3 or 0,2,5-6"

ns_status_t nrt_env_parse_cores(const char *s, uint32_t total, uint32_t *out_ids, uint32_t *out_n)
{
	uint32_t n = 0;
	const char *p = s;
	if (!s || !*s)
		return nrt_status_make(NRT_INVALID, "empty core list: " CORE_LIST_FORM);
	for (;;) {
		while (*p == ' ')
			p++;
		uint64_t lo, hi;
		if (parse_u64(&p, &lo))
			return nrt_status_make(NRT_INVALID, "expected a core number at \"%s\": " CORE_LIST_FORM, p);
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_u64(&p, &hi))
				return nrt_status_make(NRT_INVALID, "expected the end of a range at \"%s\": "
						       CORE_LIST_FORM, p);
			if (hi < lo)
				return nrt_status_make(NRT_INVALID, "range %llu-%llu is reversed: write it %llu-%llu",
						       (unsigned long long)lo, (unsigned long long)hi,
						       (unsigned long long)hi, (unsigned long long)lo);
		}
		if (hi >= total)
			return nrt_status_make(NRT_INVALID, "core %llu does not exist (%u cores: 0-%u)",
					       (unsigned long long)hi, total, total - 1);
		for (uint64_t c = lo; c <= hi; c++) {
			if (n >= NRT_MAX_CORES)
				return nrt_status_make(NRT_INVALID, "more than %d cores", NRT_MAX_CORES);
			out_ids[n++] = (uint32_t)c;
		}
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		if (*p != ',')
			return nrt_status_make(NRT_INVALID, "unexpected '%c': " CORE_LIST_FORM, *p);
		p++;
	}
	qsort(out_ids, n, sizeof(*out_ids), cmp_u32);
	for (uint32_t i = 1; i < n; i++) {
		if (out_ids[i] == out_ids[i - 1])
			return nrt_status_make(NRT_INVALID, "core %u is listed twice: list each core once",
					       out_ids[i]);
	}
	*out_n = n;
	return NS_OK;
}

static ns_status_t env_u32(const char *name, uint32_t def, uint32_t min, uint32_t max, uint32_t *out)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		*out = def;
		return NS_OK;
	}
	const char *p = v;
	uint64_t x;
	if (parse_u64(&p, &x) || *p || x < min || x > max)
		return nrt_status_make(NRT_INVALID, "%s=\"%s\" is invalid: expected an integer from %u to %u",
				       name, v, min, max);
	*out = (uint32_t)x;
	return NS_OK;
}

int nrt_env_parse_bool(const char *s)
{
	static const char *const on[] = { "1", "on", "true", "yes" }, *const off[] = { "0", "off", "false", "no" };
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, on[i]) == 0)
			return 1;
		if (strcasecmp(s, off[i]) == 0)
			return 0;
	}
	return -1;
}

ns_status_t nrt_env_get_bool(const char *name, bool dflt, bool *out)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		*out = dflt;
		return NS_OK;
	}
	int b = nrt_env_parse_bool(v);
	if (b < 0)
		return nrt_status_make(NRT_INVALID, "%s=\"%s\" is invalid: expected 1/0, on/off, true/false or "
				       "yes/no", name, v);
	*out = b == 1;
	return NS_OK;
}

/* NEURONSIM_CPU_ISA: the widest vector kernels of the embedded device's
 * simulator (fwsim_set_max_isa), a fwsim_isa_t in *out (auto when unset). */
static ns_status_t env_cpu_isa(int *out)
{
	const char *v = getenv("NEURONSIM_CPU_ISA");
	fwsim_isa_t isa = FWSIM_ISA_AUTO;
	if (v && *v && fwsim_isa_from_name(v, &isa) != 0)
		return nrt_status_make(NRT_INVALID, "NEURONSIM_CPU_ISA=\"%s\" is invalid: expected auto, avx512, "
				       "avx2 or scalar", v);
	*out = (int)isa;
	return NS_OK;
}

/* NEURON_RT_NUMERICAL_ERRORS_VERBOSITY (docs/env.md): none, warning or critical. */
static ns_status_t env_num_err_verbosity(int *out)
{
	const char *v = getenv("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY");
	*out = NRT_NUM_ERR_CRITICAL;
	if (!v || !*v)
		return NS_OK;
	if (!strcasecmp(v, "none") || !strcasecmp(v, "off"))
		*out = NRT_NUM_ERR_NONE;
	else if (!strcasecmp(v, "warning") || !strcasecmp(v, "warn"))
		*out = NRT_NUM_ERR_WARNING;
	else if (!strcasecmp(v, "critical"))
		*out = NRT_NUM_ERR_CRITICAL;
	else
		return nrt_status_make(NRT_INVALID, "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=\"%s\" is invalid: "
				       "expected none (or off), warning (or warn) or critical", v);
	return NS_OK;
}

ns_status_t nrt_env_load(nrt_config_t *out)
{
	nrt_config_t c;
	memset(&c, 0, sizeof(c));

	/* Reported like the others: the logger then reads the environment with
	 * the broken variable at its default (ERROR, to the console). */
	NS_RETURN_IF_ERROR(nrt_log_config_from_env(&c.log));
	/* The backend first: with the kernel one, the cores per device default
	 * to what the driver has (module parameter num_cores). The device count
	 * defaults to 1 on both backends, so that one environment describes the
	 * same topology everywhere; the kernel backend uses /dev/neuronsim0..N-1. */
	const char *be = getenv("NEURONSIM_BACKEND");
	if (!be || !*be || !strcmp(be, "auto")) {
		be = nrt_backend_kernel_present() ? "kernel" : "embedded";
	} else if (strcmp(be, "embedded") != 0 && strcmp(be, "kernel") != 0) {
		return nrt_status_make(NRT_INVALID, "NEURONSIM_BACKEND=\"%s\" is invalid: expected embedded, "
				       "kernel or auto", be);
	}
	snprintf(c.backend, sizeof(c.backend), "%s", be);
	uint32_t def_cores = DEFAULT_CORES_PER_DEVICE;
	if (!strcmp(c.backend, "kernel")) {
		nrt_backend_kernel_probe_t probe;
		NS_RETURN_IF_ERROR_F(nrt_backend_kernel_probe(&probe), "kernel backend");
		if (!probe.fw_attached)
			NRT_LOGW("kernel backend: no firmware attached to /dev/neuronsim0: executions "
				 "fail until neuronsim-fwd runs");
		def_cores = probe.cores_per_device;
	}
	NS_RETURN_IF_ERROR(env_u32("NEURONSIM_NUM_DEVICES", 1, 1, 64, &c.num_devices));
	NS_RETURN_IF_ERROR(env_u32("NEURONSIM_CORES_PER_DEVICE", def_cores, 1, 64, &c.cores_per_device));
	if (c.num_devices * c.cores_per_device > NRT_MAX_CORES)
		return nrt_status_make(NRT_INVALID, "NEURONSIM_NUM_DEVICES=%u x NEURONSIM_CORES_PER_DEVICE=%u "
				       "exceeds %d cores", c.num_devices, c.cores_per_device, NRT_MAX_CORES);
	uint32_t total = c.num_devices * c.cores_per_device;

	c.device_memory = DEFAULT_DEVICE_MEMORY;
	const char *mem = getenv("NEURONSIM_DEVICE_MEMORY");
	if (mem && *mem) {
		if (nrt_env_parse_size(mem, &c.device_memory) != NRT_SUCCESS ||
		    c.device_memory < (1ull << 20))
			return nrt_status_make(NRT_INVALID, "NEURONSIM_DEVICE_MEMORY=\"%s\" is invalid: expected "
					       "bytes >= 1M, optionally with a K/M/G/T suffix", mem);
	}

	const char *vis = getenv("NEURON_RT_VISIBLE_CORES");
	const char *num = getenv("NEURON_RT_NUM_CORES");
	if (vis && *vis) {
		NS_RETURN_IF_ERROR_F(nrt_env_parse_cores(vis, total, c.visible, &c.n_visible),
				     "NEURON_RT_VISIBLE_CORES=\"%s\" is invalid", vis);
		if (num && *num)
			NRT_LOGW("NEURON_RT_NUM_CORES=\"%s\" ignored: NEURON_RT_VISIBLE_CORES takes precedence",
				 num);
	} else if (num && *num) {
		uint32_t n = 0;
		NS_RETURN_IF_ERROR(env_u32("NEURON_RT_NUM_CORES", 0, 0, NRT_MAX_CORES, &n));
		if (n == 0) /* documented: 0 means all cores */
			n = total;
		if (n > total)
			return nrt_status_make(NRT_RESOURCE, "NEURON_RT_NUM_CORES=\"%s\" asks for more cores than "
					       "the %u that exist", num, total);
		c.n_visible = n;
		for (uint32_t i = 0; i < n; i++)
			c.visible[i] = i;
	} else {
		c.n_visible = total;
		for (uint32_t i = 0; i < total; i++)
			c.visible[i] = i;
	}

	uint32_t timeout_s = 0; /* documented range 0..INT_MAX seconds; 0: no limit */
	NS_RETURN_IF_ERROR(env_u32("NEURON_RT_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT_S, 0, INT_MAX, &timeout_s));
	c.exec_timeout_ns = (uint64_t)timeout_s * 1000000000ull;

	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURONSIM_NAN_CHECK", true, &c.nan_check));
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURONSIM_INF_CHECK", false, &c.inf_check));
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURONSIM_PIN_THREADS", false, &c.pin_threads));
	NS_RETURN_IF_ERROR(env_u32("NEURONSIM_THREADS", 0, 0, 16, &c.threads));
	NS_RETURN_IF_ERROR(env_cpu_isa(&c.cpu_isa));
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURON_FAIL_ON_NAN", false, &c.fail_on_nan));
	NS_RETURN_IF_ERROR(nrt_env_get_bool("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", true, &c.oom_log));
	NS_RETURN_IF_ERROR(env_num_err_verbosity(&c.num_err_verbosity));
	if (c.fail_on_nan) {
		/* As in the Neuron Runtime: failing on NaN cannot be silenced. */
		if (!c.nan_check)
			return nrt_status_make(NRT_INVALID, "NEURON_FAIL_ON_NAN=1 contradicts NEURONSIM_NAN_CHECK=0 "
					       "(NaN detection off): unset one of them");
		if (c.num_err_verbosity != NRT_NUM_ERR_CRITICAL)
			NRT_LOGI("NEURON_FAIL_ON_NAN=1 raises NEURON_RT_NUMERICAL_ERRORS_VERBOSITY to critical");
		c.num_err_verbosity = NRT_NUM_ERR_CRITICAL;
	}
	if (c.num_err_verbosity == NRT_NUM_ERR_NONE)
		c.nan_check = c.inf_check = false;

	*out = c;
	return NS_OK;
}

/* The Neuron Runtime's documented variables (its configuration guide, developer
 * guide and device-memory guide) that neuronsim reads, by name or prefix (a
 * trailing '*'). A set NEURON_RT_* variable that is in neither table gets an
 * INFO line, so a misspelt name does not go unnoticed either. */
static const char *const env_implemented[] = {
	"NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_EXEC_TIMEOUT",
	"NEURON_RT_LOG_LEVEL", "NEURON_RT_LOG_LEVEL_NRT", "NEURON_RT_LOG_LEVEL_TDRV",
	"NEURON_RT_LOG_LEVEL_NMGR", "NEURON_RT_LOG_LOCATION", "NEURON_RT_LOG_LOCATION_NRT",
	"NEURON_RT_LOG_LOCATION_TDRV", "NEURON_RT_LOG_LOCATION_NMGR",
	"NEURON_RT_NUMERICAL_ERRORS_VERBOSITY",
	"NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "NEURON_RT_INSPECT_ENABLE",
	"NEURON_RT_INSPECT_OUTPUT_DIR", "NEURON_RT_INSPECT_DEVICE_PROFILE",
	"NEURON_RT_INSPECT_SYSTEM_PROFILE",
	/* Before its NEURONSIM_ name; runtime/profile.c warns that it is deprecated. */
	"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP",
};

/* Documented, set, not implemented: what neuronsim does instead. */
static const struct {
	const char *name;
	const char *instead;
} env_unimplemented[] = {
	{ "NEURON_RT_VALIDATE_HASH", "every NEFF's checksum is verified at load, whatever the value" },
	{ "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", "each loaded instance has its own constants" },
	{ "NEURON_RT_ALLOW_LEGACY_NEFF", "NEFFs are checked against their format version only" },
	{ "NEURON_RT_ROOT_COMM_ID", "collectives between processes are not simulated" },
	{ "NEURON_RT_STOCHASTIC_ROUNDING_EN", "conversions round to nearest even" },
	{ "NEURON_RT_STOCHASTIC_ROUNDING_SEED", "conversions round to nearest even" },
	{ "NEURON_RT_DEBUG_MEMLOG_MAX_SIZE",
	  "an allocation that does not fit logs the usage table instead of a CSV log" },
	{ "NEURON_RT_VIRTUAL_CORE_SIZE", "one simulated core per NeuronCore" },
	{ "NEURON_LOGICAL_NC_CONFIG", "one simulated core per NeuronCore" },
	{ "NEURON_RT_ONE_THREAD_PER_CORE", "NEURONSIM_PIN_THREADS pins the engines' threads" },
	{ "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", "NEURONSIM_PIN_THREADS pins the engines' threads" },
	{ "NEURON_RT_RESET_CORES", "cores start clean at every nrt_init" },
	{ "NEURON_RT_CONTIGUOUS_SCRATCHPAD", "each model has one contiguous scratch block" },
	{ "NEURON_SCRATCHPAD_PAGE_SIZE", "each model has one contiguous scratch block" },
	{ "NEURON_RT_PROFILE_BUF_*", "profiles are kept in host memory" },
	{ "NEURON_RT_ENABLE_DGE_NOTIFICATIONS", "no descriptor generation engine is simulated" },
	{ "NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES", "no GPSIMD printing is simulated" },
	{ "NEURON_RT_LOCAL_CORE_DUMP_DIRECTORY", "failed executions are recorded as HLO snapshots "
						"(NEURON_DUMP_HLO_SNAPSHOT)" },
	{ "NEURON_RT_S3_CORE_DUMP_PREFIX", "failed executions are recorded as HLO snapshots "
					   "(NEURON_DUMP_HLO_SNAPSHOT)" },
	{ "NEURON_RT_INSPECT_EVENT_FILTER_*", "device profiles record every event" },
	{ "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC", "NEURONSIM_PROFILE_MAX_SPANS bounds a profile" },
	{ "NEURON_RT_INSPECT_START_OFFSET_NSEC", "the whole inspected run is recorded" },
	{ "NEURON_RT_INSPECT_DURATION_NSEC", "the whole inspected run is recorded" },
	{ "NEURON_RT_INSPECT_CPU_UTIL", "host CPU use is in neuron-monitor's vcpu_usage" },
	{ "NEURON_RT_INSPECT_HOST_MEMORY", "host memory use is in neuron-monitor's memory_used" },
	{ "NEURON_RT_INSPECT_PRECACHE_ENABLE", "the whole inspected run is recorded" },
	{ "NEURON_RT_ULTRASERVER_*", "no UltraServer topology is simulated" },
	{ "NEURON_RT_ASYNC_SENDRECV_*", "collectives between processes are not simulated" },
	{ "NEURON_RT_RANKS_PER_NETWORK_PROXY", "collectives between processes are not simulated" },
};

/* Documented once, removed from the Neuron Runtime since: a warning (as the
 * Neuron Runtime now gives) saying what replaces it. */
static const struct {
	const char *name;
	const char *instead;
} env_removed[] = {
	/* Implicit asynchronous mode (nrt_execute returning before the execution
	 * ended): removed in Neuron 2.31.0, replaced by the explicit nrta_* API. */
	{ "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
	  "the implicit asynchronous mode it enabled was removed from the Neuron Runtime in "
	  "Neuron 2.31.0: nrt_execute is synchronous; schedule executions with "
	  "nrta_execute_schedule (nrt_async.h)" },
};

/* name matches pattern, which may end in '*' (any suffix, at least one character). */
static bool env_name_matches(const char *name, size_t name_len, const char *pattern)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return name_len > n - 1 && !strncmp(name, pattern, n - 1);
	return name_len == n && !strncmp(name, pattern, n);
}

extern char **environ;

void nrt_env_report_unimplemented(void)
{
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq[1] == '\0')
			continue;
		size_t len = (size_t)(eq - *e);
		bool known = false;
		for (size_t i = 0; i < sizeof(env_implemented) / sizeof(env_implemented[0]); i++)
			known = known || env_name_matches(*e, len, env_implemented[i]);
		if (known)
			continue;
		for (size_t i = 0; !known && i < sizeof(env_removed) / sizeof(env_removed[0]); i++) {
			if (env_name_matches(*e, len, env_removed[i].name)) {
				NRT_LOGW("%.*s is set but is deprecated and has no effect: %s; docs/env.md",
					 (int)len, *e, env_removed[i].instead);
				known = true;
			}
		}
		for (size_t i = 0; !known && i < sizeof(env_unimplemented) / sizeof(env_unimplemented[0]); i++) {
			if (env_name_matches(*e, len, env_unimplemented[i].name)) {
				NRT_LOGI("%.*s is set: neuronsim does not implement it (%s); docs/env.md",
					 (int)len, *e, env_unimplemented[i].instead);
				known = true;
			}
		}
		if (!known && len > 10 && !strncmp(*e, "NEURON_RT_", 10))
			NRT_LOGI("%.*s is set but is not a Neuron Runtime variable neuronsim knows: ignored "
				 "(docs/env.md lists them)", (int)len, *e);
	}
}
