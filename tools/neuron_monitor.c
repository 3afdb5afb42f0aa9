/* neuron-monitor: one JSON document per period on stdout with the Neuron tool's metric
 * groups (execution_stats, memory_used, ...) for every running neuronsim process and the system. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "monitor_common.h"
#include "neuron_monitor_config.h"
#include "neuronsim/proc_stat.h"
#include "neuronsim/procstats.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-monitor [-c CONFIG.json] [-n COUNT] [--verbose LEVEL] [-h]\n"
	"Stream one JSON document per period on standard output with the metric groups\n"
	"of every running neuronsim process (neuroncore_counters, execution_stats,\n"
	"memory_used, neuron_runtime_vcpu_usage) and of the system (vcpu_usage,\n"
	"memory_info, neuron_hw_counters), in the Neuron tool's format.\n"
	"\n"
	"Options:\n"
	"  -c, --config-file FILE  metric groups and periods (JSON, see docs/monitor.md);\n"
	"                          default: every group, period \"5s\", every process\n"
	"  -n, --count N           stop after N documents (default: run until killed)\n"
	"      --verbose LEVEL     0-4, what is said on standard error besides errors:\n"
	"                          0 nothing (default), 1 configuration and processes\n"
	"                          found or gone, 2 each document, 3 each group\n"
	"                          collected, 4 each scan of the stats directory\n"
	"  -h, --help              show this help\n"
	"      --version           print the version and exit\n"
	"\n"
	"Processes publish their stats in $NEURONSIM_STATS_DIR (default /dev/shm); the\n"
	"kernel devices are read from $NEURONSIM_SYSFS_ROOT (default /sys/class/neuronsim).\n"
	"neuron-monitor | neuron-monitor-prometheus.py --port 8000 serves the documents as\n"
	"Prometheus metrics under the Neuron SDK exporter's names.\n"
	"\n"
	"Exit status: 0 done; 2 bad command line or configuration; 5 standard output\n"
	"could not be written.\n";

/* --verbose: 0 says nothing but errors; each level adds to the one below. */
static int verbosity;

static void say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(int level, const char *fmt, ...)
{
	if (verbosity < level)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "neuron-monitor: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- per-process state across documents ---- */

typedef struct base {
	bool valid;
	uint64_t t_ns;
	uint64_t v[PROCSTATS_COUNT];
	uint64_t busy[PROCSTATS_MAX_CORES];
	uint64_t flops[PROCSTATS_MAX_CORES];
	uint64_t cpu_ticks[2];    /* utime, stime of /proc/PID/stat */
} base_t;

typedef struct mon_proc {
	uint32_t pid;
	uint64_t start_time;
	bool present;
	int entry;                /* the first neuron_runtimes entry whose filter matches, -1 none */
	base_t base[MAX_GROUPS];
	json_t *latest[MAX_GROUPS];
} mon_proc_t;

typedef struct monitor {
	config_t cfg;
	uint64_t start_ns;
	mon_proc_t **procs;
	size_t n_procs, cap_procs;
	procstats_list_t list;
	mon_kdevs_t kdevs;
	char sysfs_err[512];
	char scan_err[512];
	/* system baselines */
	struct cpu_times { uint64_t v[7]; } *cpu_prev; /* [0] = all, [1 + i] = cpu i */
	size_t n_cpu_prev;
	uint64_t ctxt_prev;
	uint64_t cpu_prev_ns;
	uint64_t hw_prev[64][MON_JOBS_COUNT];
	bool hw_prev_valid[64];
} monitor_t;

static void set_base(base_t *b, const procstats_snap_t *s, bool zero)
{
	memset(b, 0, sizeof(*b));
	b->valid = true;
	if (zero) {
		/* Started while we watch: everything since its nrt_init counts. */
		b->t_ns = s->init_ns;
		return;
	}
	b->t_ns = s->read_ns;
	memcpy(b->v, s->v, sizeof(b->v));
	for (uint32_t c = 0; c < s->n_cores; c++) {
		b->busy[c] = s->cores[c].v[PROCSTATS_CORE_BUSY_NS];
		b->flops[c] = s->cores[c].v[PROCSTATS_CORE_FLOPS];
	}
	ns_proc_stat_cpu_ticks((pid_t)s->pid, b->cpu_ticks);
}

static mon_proc_t *find_proc(monitor_t *m, const procstats_snap_t *s)
{
	for (size_t i = 0; i < m->n_procs; i++)
		if (m->procs[i]->pid == s->pid && m->procs[i]->start_time == s->start_time)
			return m->procs[i];
	return NULL;
}

static int match_entry(const config_t *c, const char *tag)
{
	for (int i = 0; i < c->n_entries; i++)
		if (!c->entries[i].has_filter || regexec(&c->entries[i].filter, tag, 0, NULL, 0) == 0)
			return i;
	return -1;
}

/* Brings the process table in line with the latest scan. */
static int track_processes(monitor_t *m, bool at_start)
{
	for (size_t i = 0; i < m->n_procs; i++)
		m->procs[i]->present = false;
	for (size_t i = 0; i < m->list.n; i++) {
		const procstats_snap_t *s = &m->list.procs[i];
		mon_proc_t *p = find_proc(m, s);
		if (!p) {
			if (m->n_procs == m->cap_procs) {
				size_t ncap = m->cap_procs ? m->cap_procs * 2 : 8;
				mon_proc_t **np = realloc(m->procs, ncap * sizeof(*np));
				if (!np)
					return -1;
				m->procs = np;
				m->cap_procs = ncap;
			}
			p = calloc(1, sizeof(*p));
			if (!p)
				return -1;
			m->procs[m->n_procs++] = p;
			p->pid = s->pid;
			p->start_time = s->start_time;
			p->entry = match_entry(&m->cfg, s->tag);
			if (p->entry >= 0)
				say(1, "process %u (tag '%s') found: reported by neuron_runtimes[%d]", (unsigned)s->pid,
				    s->tag, p->entry);
			else
				say(1, "process %u (tag '%s') found: no tag_filter matches it, not reported",
				    (unsigned)s->pid, s->tag);
			/* Already running when we started: count from now; else from its start. */
			bool zero = !at_start && s->init_ns >= m->start_ns;
			for (int g = 0; g < m->cfg.n_groups; g++)
				set_base(&p->base[g], s, zero);
		}
		p->present = true;
	}
	size_t k = 0;
	for (size_t i = 0; i < m->n_procs; i++) {
		mon_proc_t *p = m->procs[i];
		if (p->present) {
			m->procs[k++] = p;
			continue;
		}
		say(1, "process %u gone", (unsigned)p->pid);
		for (int g = 0; g < m->cfg.n_groups; g++)
			json_decref(p->latest[g]);
		free(p);
	}
	m->n_procs = k;
	return 0;
}

/* ---- runtime metric groups ---- */

static json_t *percentiles(double *v, size_t n)
{
	if (!n)
		return json_null();
	static const struct { const char *name; double q; } qs[] = {
		{ "p0", 0.0 }, { "p1", 0.01 }, { "p25", 0.25 }, { "p50", 0.5 },
		{ "p75", 0.75 }, { "p99", 0.99 }, { "p100", 1.0 },
	};
	json_t *o = json_object();
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		json_object_set_new(o, qs[i].name, json_real(procstats_quantile(v, n, qs[i].q)));
	return o;
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)(v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v));
}

static double period_s(uint64_t now, uint64_t before)
{
	return now > before ? (double)(now - before) * 1e-9 : 0.0;
}

static json_t *group_execution_stats(const procstats_snap_t *s, const base_t *b)
{
	const uint64_t *v = s->v, *w = b->v;
#define D(i) jint(mon_delta(v[i], w[i]))
	json_t *errs = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
				 "generic", D(PROCSTATS_ERR_GENERIC), "numerical", D(PROCSTATS_ERR_NUMERICAL),
				 "transient", D(PROCSTATS_ERR_TRANSIENT), "model", D(PROCSTATS_ERR_MODEL),
				 "runtime", D(PROCSTATS_ERR_RUNTIME), "hardware", D(PROCSTATS_ERR_HARDWARE));
	json_t *sum = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}",
				"completed", D(PROCSTATS_COMPLETED),
				"completed_with_err", D(PROCSTATS_COMPLETED_WITH_ERR),
				"completed_with_num_err", D(PROCSTATS_COMPLETED_WITH_NUM_ERR),
				"timed_out", D(PROCSTATS_TIMED_OUT), "incorrect_input", D(PROCSTATS_INCORRECT_INPUT),
				"failed_to_queue", D(PROCSTATS_FAILED_TO_QUEUE));
#undef D
	static double tot[PROCSTATS_LAT_RING], dev[PROCSTATS_LAT_RING];
	size_t nt, nd;
	procstats_latencies(s, w[PROCSTATS_LAT_HEAD], tot, &nt, dev, &nd);
	json_t *lat = json_pack("{s:o, s:o}", "total_latency", percentiles(tot, nt),
				"device_latency", percentiles(dev, nd));
	return json_pack("{s:f, s:o, s:o, s:o, s:s}", "period", period_s(s->read_ns, b->t_ns),
			 "error_summary", errs, "execution_summary", sum, "latency_stats", lat, "error", "");
}

/* The documented per-NeuronCore breakdown (usage_breakdown.neuroncore_memory_usage,
 * the five categories the Neuron tool and its Prometheus exporter read) plus
 * neuronsim's snapshot_copies, from mem[] indexed by category
 * (nrt_neuronsim_mem_category_t order: PROCSTATS_MEM_* - PROCSTATS_MEM_FIRST). */
#define MEM(k) jint(mem[PROCSTATS_MEM_##k - PROCSTATS_MEM_FIRST])
static json_t *core_memory(const uint64_t *mem)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "constants", MEM(CONSTANTS), "model_code", MEM(CODE),
			 "model_shared_scratchpad", MEM(SCRATCH), "runtime_memory", MEM(STAGING),
			 "tensors", MEM(TENSORS), "snapshot_copies", MEM(SNAPSHOT));
}
#undef MEM

/* The Neuron tool's loaded_models: per model its name, uuid, id and whether
 * an execution of it is in progress (is_running), and one
 * subgraph per instance with the NeuronCore it starts on and the device
 * memory it holds (constants and scratch on that core, code on each of its
 * cores); neuronsim adds neuroncores, every physical core of the model. */
static json_t *loaded_models(const procstats_snap_t *s)
{
	json_t *list = json_array();
	for (uint32_t i = 0; list && i < s->n_models; i++) {
		const procstats_model_info_t *m = &s->models[i];
		json_t *subgraphs = json_object(), *cores = json_array();
		for (uint32_t in = 0; subgraphs && cores && in < m->n_instances; in++) {
			uint64_t first = (uint64_t)m->first_core + (uint64_t)in * m->neff_cores;
			if (first >= s->n_cores)
				break;
			for (uint32_t c = 0; c < m->neff_cores && first + c < s->n_cores; c++)
				json_array_append_new(cores, json_integer(s->cores[first + c].global));
			uint64_t dev = m->mem_constants + m->mem_code + m->mem_scratch;
			json_t *bytes = json_pack("{s:i, s:o, s:{s:{s:i, s:i, s:i, s:i}, s:{s:o, s:o, s:o, s:i, s:i}}}",
						  "host", 0, "neuron_device", jint(dev), "usage_breakdown",
						  "host", "application_memory", 0, "constants", 0, "dma_buffers", 0,
						  "tensors", 0,
						  "neuron_device", "constants", jint(m->mem_constants),
						  "model_code", jint(m->mem_code),
						  "model_shared_scratchpad", jint(m->mem_scratch),
						  "runtime_memory", 0, "tensors", 0);
			char key[16];
			snprintf(key, sizeof(key), "sg_%02u", in);
			json_object_set_new(subgraphs, key,
					    json_pack("{s:o, s:I, s:I}", "memory_used_bytes", bytes,
						      "neuroncore_index", (json_int_t)s->cores[first].global,
						      "neuron_device_index", (json_int_t)s->cores[first].device));
		}
		char uuid[PROCSTATS_UUID_STR];
		procstats_uuid_str(m->uuid, uuid);
		json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:b, s:o, s:o}", "name", m->name,
						      "uuid", uuid, "model_id", jint(m->id - 1),
						      "is_running", m->running > 0, "subgraphs", subgraphs,
						      "neuroncores", cores));
	}
	return list;
}

static json_t *group_memory_used(const procstats_snap_t *s, const base_t *b)
{
	const uint64_t *v = s->v;
	json_t *host = json_pack("{s:i, s:i, s:i, s:o, s:o}", "application_memory", 0, "constants", 0,
				 "dma_buffers", 0, "tensors", jint(v[PROCSTATS_HOST_TENSORS]),
				 "snapshot_copies", jint(v[PROCSTATS_HOST_SNAPSHOT]));
	/* each core's own: the runtime charges every allocation to the core it
	 * is made for (a tensor's core, a model instance's cores) */
	json_t *per_core = json_object();
	for (uint32_t c = 0; per_core && c < s->n_cores; c++) {
		char key[16];
		snprintf(key, sizeof(key), "%u", s->cores[c].global);
		json_object_set_new(per_core, key, core_memory(s->cores[c].mem));
	}
	/* neuronsim's addition: the process's totals by category, snapshot copies included */
	json_t *dev = core_memory(&v[PROCSTATS_MEM_FIRST]);
	json_t *used = json_pack("{s:o, s:o, s:{s:o, s:o, s:o}}",
				 "host", jint(v[PROCSTATS_HOST_TENSORS] + v[PROCSTATS_HOST_SNAPSHOT]),
				 "neuron_device", jint(v[PROCSTATS_MEM_IN_USE]),
				 "usage_breakdown", "host", host, "neuroncore_memory_usage", per_core,
				 "neuron_device", dev);
	return json_pack("{s:f, s:o, s:o, s:o, s:s}", "period", period_s(s->read_ns, b->t_ns),
			 "neuron_runtime_used_bytes", used, "loaded_models", loaded_models(s),
			 "loaded_models_not_listed", jint(v[PROCSTATS_MODELS_UNLISTED]), "error", "");
}

static json_t *group_neuroncore_counters(const procstats_snap_t *s, const base_t *b)
{
	double dt = period_s(s->read_ns, b->t_ns);
	json_t *cores = json_object();
	for (uint32_t c = 0; c < s->n_cores; c++) {
		double busy = (double)mon_delta(s->cores[c].v[PROCSTATS_CORE_BUSY_NS], b->busy[c]) * 1e-9;
		double util = dt > 0 ? fmin(100.0, 100.0 * busy / dt) : 0.0;
		char key[16];
		snprintf(key, sizeof(key), "%u", s->cores[c].global);
		json_t *core = json_pack("{s:f}", "neuroncore_utilization", util);
		/* As documented, floating-point operations per second over the
		 * period (the FLOPs the core executed in it divided by its length),
		 * an integer as in the Neuron tool's example; left out where the
		 * backend does not count them (the kernel backend) */
		uint64_t fl = s->cores[c].v[PROCSTATS_CORE_FLOPS];
		if (fl != PROCSTATS_FLOPS_UNKNOWN) {
			uint64_t n = mon_delta(fl, b->flops[c] == PROCSTATS_FLOPS_UNKNOWN ? 0 : b->flops[c]);
			json_object_set_new(core, "flops", jint(dt > 0 ? (uint64_t)llround((double)n / dt) : 0));
		}
		json_object_set_new(cores, key, core);
	}
	return json_pack("{s:f, s:o, s:s}", "period", dt, "neuroncores_in_use", cores, "error", "");
}

static json_t *group_runtime_vcpu(const procstats_snap_t *s, const base_t *b)
{
	double dt = period_s(s->read_ns, b->t_ns);
	uint64_t now[2];
	if (ns_proc_stat_cpu_ticks((pid_t)s->pid, now))
		return json_pack("{s:f, s:n, s:s}", "period", dt, "vcpu_usage", "error",
				 "cannot read /proc/PID/stat of the process");
	double hz = (double)sysconf(_SC_CLK_TCK), ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
	double scale = dt > 0 && hz > 0 && ncpu > 0 ? 100.0 / (dt * hz * ncpu) : 0.0;
	return json_pack("{s:f, s:{s:f, s:f}, s:s}", "period", dt, "vcpu_usage",
			 "user", (double)mon_delta(now[0], b->cpu_ticks[0]) * scale,
			 "system", (double)mon_delta(now[1], b->cpu_ticks[1]) * scale, "error", "");
}

/* ---- system metric groups ---- */

static json_t *cpu_object(const uint64_t *now, const uint64_t *before)
{
	uint64_t d[7], total = 0;
	for (int i = 0; i < 7; i++) {
		d[i] = before ? mon_delta(now[i], before[i]) : now[i];
		total += d[i];
	}
	double k = total ? 100.0 / (double)total : 0.0;
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "user", (double)d[0] * k, "nice", (double)d[1] * k,
			 "system", (double)d[2] * k, "idle", (double)d[3] * k, "io_wait", (double)d[4] * k,
			 "irq", (double)d[5] * k, "soft_irq", (double)d[6] * k);
}

static json_t *group_vcpu_usage(monitor_t *m, uint64_t now_ns)
{
	FILE *f = fopen("/proc/stat", "re");
	double dt = period_s(now_ns, m->cpu_prev_ns ? m->cpu_prev_ns : m->start_ns);
	if (!f)
		return json_pack("{s:f, s:s}", "period", dt, "error", "cannot read /proc/stat");
	struct cpu_times *cur = NULL;
	size_t n = 0;
	uint64_t ctxt = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		struct cpu_times t;
		unsigned long long x[7];
		int idx = 0;
		if (strncmp(line, "ctxt ", 5) == 0) {
			ctxt = strtoull(line + 5, NULL, 10);
			continue;
		}
		if (strncmp(line, "cpu", 3) != 0)
			continue;
		if (line[3] != ' ' && sscanf(line + 3, "%d", &idx) != 1)
			continue;
		const char *p = strchr(line, ' ');
		if (!p || sscanf(p, "%llu %llu %llu %llu %llu %llu %llu", &x[0], &x[1], &x[2], &x[3], &x[4], &x[5],
				 &x[6]) != 7)
			continue;
		for (int i = 0; i < 7; i++)
			t.v[i] = x[i];
		struct cpu_times *nc = realloc(cur, (n + 1) * sizeof(*nc));
		if (!nc)
			break;
		cur = nc;
		cur[n++] = t;
	}
	fclose(f);
	json_t *per = json_object();
	for (size_t i = 1; i < n; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%zu", i - 1);
		json_object_set_new(per, key, cpu_object(cur[i].v, i < m->n_cpu_prev ? m->cpu_prev[i].v : NULL));
	}
	json_t *avg = n ? cpu_object(cur[0].v, m->n_cpu_prev ? m->cpu_prev[0].v : NULL) : json_object();
	json_t *o = json_pack("{s:f, s:o, s:o, s:o, s:s}", "period", dt, "average_usage", avg, "usage_data", per,
			      "context_switch_count", jint(mon_delta(ctxt, m->ctxt_prev)), "error", "");
	free(m->cpu_prev);
	m->cpu_prev = cur;
	m->n_cpu_prev = n;
	m->ctxt_prev = ctxt;
	m->cpu_prev_ns = now_ns;
	return o;
}

static json_t *group_memory_info(uint64_t dt_ns)
{
	FILE *f = fopen("/proc/meminfo", "re");
	double dt = (double)dt_ns * 1e-9;
	if (!f)
		return json_pack("{s:f, s:s}", "period", dt, "error", "cannot read /proc/meminfo");
	unsigned long long total = 0, avail = 0, swap_total = 0, swap_free = 0, v;
	char line[256], key[64];
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %llu", key, &v) != 2)
			continue;
		if (!strcmp(key, "MemTotal"))
			total = v;
		else if (!strcmp(key, "MemAvailable"))
			avail = v;
		else if (!strcmp(key, "SwapTotal"))
			swap_total = v;
		else if (!strcmp(key, "SwapFree"))
			swap_free = v;
	}
	fclose(f);
	return json_pack("{s:f, s:o, s:o, s:o, s:o, s:s}", "period", dt, "memory_total_bytes", jint(total * 1024),
			 "memory_used_bytes", jint((total - (avail < total ? avail : total)) * 1024),
			 "swap_total_bytes", jint(swap_total * 1024),
			 "swap_used_bytes",
			 jint((swap_total - (swap_free < swap_total ? swap_free : swap_total)) * 1024),
			 "error", "");
}

/* The real tool's ECC counters (always 0: simulated memory has no ECC) and,
 * under "neuronsim", what the driver's sysfs says about the device. */
static json_t *group_hw_counters(monitor_t *m, uint64_t dt_ns)
{
	json_t *devs = json_array();
	for (size_t i = 0; i < m->kdevs.n; i++) {
		const mon_kdev_t *d = &m->kdevs.devs[i];
		json_t *jobs = json_object();
		bool have_prev = d->index < 64 && m->hw_prev_valid[d->index];
		for (int k = 0; k < MON_JOBS_COUNT; k++) {
			json_object_set_new(jobs, mon_jobs_names[k],
					    jint(have_prev ? mon_delta(d->jobs[k], m->hw_prev[d->index][k]) : 0));
			if (d->index < 64)
				m->hw_prev[d->index][k] = d->jobs[k];
		}
		if (d->index < 64)
			m->hw_prev_valid[d->index] = true;
		json_t *ns = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}",
				       "num_cores", jint(d->num_cores), "mem_size", jint(d->mem_size),
				       "mem_in_use", jint(d->mem_in_use), "mem_peak", jint(d->mem_peak),
				       "cores_reserved", jint(d->cores_reserved),
				       "fw_attached", json_boolean(d->fw_attached), "jobs", jobs,
				       "error", d->error);
		json_array_append_new(devs, json_pack("{s:i, s:i, s:i, s:i, s:i, s:o}", "neuron_device_index",
						      (int)d->index, "mem_ecc_corrected", 0, "mem_ecc_uncorrected", 0,
						      "sram_ecc_uncorrected", 0, "sram_ecc_corrected", 0,
						      "neuronsim", ns));
	}
	return json_pack("{s:f, s:o, s:s}", "period", (double)dt_ns * 1e-9, "neuron_devices", devs, "error",
			 m->sysfs_err);
}

/* ---- the document ---- */

static json_t *instance_info(void)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "instance_name", host, "instance_id", "",
			 "instance_type", "neuronsim", "instance_availability_zone", "",
			 "instance_availability_zone_id", "", "instance_region", "", "ami_id", "", "subnet_id", "",
			 "error", "");
}

/* The embedded backend's devices exist inside each process (as its
 * NEURONSIM_NUM_DEVICES, _CORES_PER_DEVICE and _DEVICE_MEMORY say), so without
 * a kernel device they are described from a running process's stats file: the
 * one with the lowest pid. Cores per device is the highest visible core's index
 * in its device plus one (all of them unless NEURON_RT_VISIBLE_CORES hides the
 * last ones). */
static const procstats_snap_t *hw_process(const monitor_t *m)
{
	const procstats_snap_t *best = NULL;
	for (size_t i = 0; i < m->list.n; i++) {
		const procstats_snap_t *s = &m->list.procs[i];
		if (s->n_devices && (!best || s->pid < best->pid))
			best = s;
	}
	return best;
}

static json_t *hardware_info(const monitor_t *m)
{
	const mon_kdev_t *d = m->kdevs.n ? &m->kdevs.devs[0] : NULL;
	char err[600] = "";
	uint64_t count = 0, mem = 0, per_dev = 0;
	if (d) {
		count = m->kdevs.n;
		mem = d->mem_size;
		per_dev = d->num_cores;
	} else if (!m->sysfs_err[0] && hw_process(m)) {
		const procstats_snap_t *s = hw_process(m);
		count = s->n_devices;
		mem = s->mem_total / s->n_devices;
		for (uint32_t c = 0; c < s->n_cores; c++)
			if (s->cores[c].dev_core + 1u > per_dev)
				per_dev = s->cores[c].dev_core + 1u;
	}
	if (m->sysfs_err[0])
		snprintf(err, sizeof(err), "%s", m->sysfs_err);
	else if (!d && !count)
		snprintf(err, sizeof(err), "no kernel device in %s (neuronsim.ko not loaded) and no neuronsim "
			 "process running: the embedded backend simulates its devices inside each process",
			 mon_sysfs_root());
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:s}", "neuron_device_type", "neuronsim",
			 "neuron_device_version", "v1", "neuroncore_version", "v2",
			 "neuron_device_count", jint(count), "neuron_device_memory_size", jint(mem),
			 "neuroncore_per_device_count", jint(per_dev), "logical_neuroncore_config", 1,
			 "error", err);
}

static json_t *build_document(monitor_t *m)
{
	json_t *rts = json_array();
	for (size_t i = 0; i < m->list.n; i++) {
		const procstats_snap_t *s = &m->list.procs[i];
		mon_proc_t *p = find_proc(m, s);
		if (!p || p->entry < 0)
			continue;
		json_t *report = json_object();
		const rt_entry_t *e = &m->cfg.entries[p->entry];
		for (int t = 0; t < G_FIRST_SYSTEM; t++) {
			int g = e->groups[t];
			if (g >= 0 && p->latest[g])
				json_object_set(report, mon_group_names[t], p->latest[g]);
		}
		json_array_append_new(rts, json_pack("{s:i, s:s, s:s, s:s, s:o}", "pid", (int)s->pid, "address", "",
						     "neuron_runtime_tag", s->tag, "error", "", "report", report));
	}
	json_t *sys = json_object();
	for (int g = 0; g < m->cfg.n_groups; g++)
		if (m->cfg.groups[g].entry < 0 && m->cfg.groups[g].latest)
			json_object_set(sys, mon_group_names[m->cfg.groups[g].type], m->cfg.groups[g].latest);
	return json_pack("{s:o, s:o, s:o, s:o}", "neuron_runtime_data", rts, "system_data", sys,
			 "instance_info", instance_info(), "neuron_hardware_info", hardware_info(m));
}

static void scan(monitor_t *m)
{
	procstats_list_free(&m->list);
	m->scan_err[0] = '\0';
	if (ns_status_consume_message(procstats_scan(procstats_dir(), PROCSTATS_SCAN_REMOVE_STALE, 0,
						     &m->list),
				      m->scan_err, sizeof(m->scan_err)) != NS_STATUS_OK) {
		/* Said once per change, on stderr: the documents go on without processes. */
		static char last[512];
		if (strcmp(last, m->scan_err) != 0)
			fprintf(stderr, "neuron-monitor: %s\n", m->scan_err);
		snprintf(last, sizeof(last), "%s", m->scan_err);
	}
	mon_sysfs_free(&m->kdevs);
	m->sysfs_err[0] = '\0';
	ns_status_consume_message(mon_sysfs_read(mon_sysfs_root(), &m->kdevs), m->sysfs_err,
				  sizeof(m->sysfs_err));
	say(4, "scanned %s: %zu processes; %s: %zu kernel devices", procstats_dir(), m->list.n, mon_sysfs_root(),
	    m->kdevs.n);
}

static void collect(monitor_t *m, group_t *g, int gi, uint64_t now)
{
	if (g->entry < 0) {
		json_t *v = NULL;
		uint64_t dt = now - (g->last_ns ? g->last_ns : m->start_ns);
		switch (g->type) {
		case G_VCPU_USAGE: v = group_vcpu_usage(m, now); break;
		case G_MEMORY_INFO: v = group_memory_info(dt); break;
		case G_HW_COUNTERS: v = group_hw_counters(m, dt); break;
		default: break;
		}
		json_decref(g->latest);
		g->latest = v;
		g->last_ns = now;
		say(3, "collected %s (system)", mon_group_names[g->type]);
		return;
	}
	for (size_t i = 0; i < m->list.n; i++) {
		const procstats_snap_t *s = &m->list.procs[i];
		mon_proc_t *p = find_proc(m, s);
		if (!p || p->entry != g->entry)
			continue;
		base_t *b = &p->base[gi];
		json_t *v = NULL;
		switch (g->type) {
		case G_EXECUTION_STATS: v = group_execution_stats(s, b); break;
		case G_MEMORY_USED: v = group_memory_used(s, b); break;
		case G_NEURONCORE_COUNTERS: v = group_neuroncore_counters(s, b); break;
		case G_RUNTIME_VCPU: v = group_runtime_vcpu(s, b); break;
		default: break;
		}
		json_decref(p->latest[gi]);
		p->latest[gi] = v;
		set_base(b, s, false);
		say(3, "collected %s of process %u", mon_group_names[g->type], (unsigned)s->pid);
	}
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config-file", required_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "verbose", required_argument, NULL, 'V' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_file = NULL;
	long long count = 0;
	int c;
	while ((c = getopt_long(argc, argv, "c:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config_file = optarg; break;
		case 'n': {
			char *end;
			errno = 0;
			count = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || count < 1) {
				fprintf(stderr, "neuron-monitor: --count '%s' is not a positive integer\n", optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		}
		case 'V': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 4) {
				fprintf(stderr, "neuron-monitor: --verbose '%s' is not a level from 0 to 4\n", optarg);
				return TOOL_EXIT_USAGE;
			}
			verbosity = (int)v;
			break;
		}
		case TOOL_OPT_VERSION: return tool_print_version("neuron-monitor", NULL);
		case 'h': fputs(usage_text, stdout); return TOOL_EXIT_OK;
		default:
			fprintf(stderr, "Try 'neuron-monitor --help'.\n");
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "neuron-monitor: unexpected argument '%s'\nTry 'neuron-monitor --help'.\n",
			argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	monitor_t *m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "neuron-monitor: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	if (config_file) {
		if (mon_config_load(config_file, &m->cfg)) {
			mon_config_free(&m->cfg);
			free(m);
			return TOOL_EXIT_USAGE;
		}
	} else {
		mon_config_default(&m->cfg);
	}
	say(1, "configuration %s: %d metric groups, %d neuron_runtimes entries", config_file ? config_file : "default",
	    m->cfg.n_groups, m->cfg.n_entries);

	int rc = TOOL_EXIT_OK;
	m->start_ns = ns_monotonic_ns();
	/* Baselines of what already runs, and of the system counters. */
	scan(m);
	if (track_processes(m, true))
		goto oom;
	for (int g = 0; g < m->cfg.n_groups; g++) {
		group_t *gr = &m->cfg.groups[g];
		gr->next_due = m->start_ns + gr->period_ns;
		if (gr->type == G_VCPU_USAGE)
			json_decref(group_vcpu_usage(m, m->start_ns));
		if (gr->type == G_HW_COUNTERS)
			json_decref(group_hw_counters(m, 0));
	}
	for (long long docs = 0; count == 0 || docs < count;) {
		uint64_t due = UINT64_MAX;
		for (int g = 0; g < m->cfg.n_groups; g++)
			due = m->cfg.groups[g].next_due < due ? m->cfg.groups[g].next_due : due;
		if (due == UINT64_MAX) /* nothing configured: still one document per default period */
			due = m->start_ns + (uint64_t)(docs + 1) * DEFAULT_PERIOD_NS;
		sleep_until(due);
		uint64_t now = ns_monotonic_ns();
		scan(m);
		if (track_processes(m, false))
			goto oom;
		int collected = 0;
		for (int g = 0; g < m->cfg.n_groups; g++) {
			group_t *gr = &m->cfg.groups[g];
			if (gr->next_due > now)
				continue;
			collect(m, gr, g, now);
			collected++;
			gr->next_due += gr->period_ns;
			if (gr->next_due <= now) /* fell behind: skip, do not burst */
				gr->next_due = now + gr->period_ns;
		}
		json_t *doc = build_document(m);
		char *txt = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		json_decref(doc);
		if (!txt)
			goto oom;
		int w = printf("%s\n", txt);
		free(txt);
		say(2, "document %lld: %zu processes, %d of %d metric groups collected", docs + 1, m->n_procs, collected,
		    m->cfg.n_groups);
		if (w < 0 || fflush(stdout) != 0) {
			fprintf(stderr, "neuron-monitor: writing to standard output failed: %s\n", strerror(errno));
			rc = TOOL_EXIT_OUTPUT;
			break;
		}
		docs++;
	}
	goto out;
oom:
	fprintf(stderr, "neuron-monitor: out of memory\n");
	rc = TOOL_EXIT_RUNTIME;
out:
	for (size_t i = 0; i < m->n_procs; i++) {
		for (int g = 0; g < m->cfg.n_groups; g++)
			json_decref(m->procs[i]->latest[g]);
		free(m->procs[i]);
	}
	free(m->procs);
	free(m->cpu_prev);
	procstats_list_free(&m->list);
	mon_sysfs_free(&m->kdevs);
	mon_config_free(&m->cfg);
	free(m);
	return rc;
}
