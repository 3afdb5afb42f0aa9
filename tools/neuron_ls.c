/* neuron-ls: list the neuronsim devices, their NeuronCores and device memory, as
 * a table or (-j) as JSON. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "neuronsim/procstats.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_version.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-ls [-j] [-h]\n"
	"List the neuronsim devices of this process's runtime: NeuronCores and device\n"
	"memory (total and in use), as a table.\n"
	"\n"
	"Options:\n"
	"  -j, --json   print the same data as one JSON object\n"
	"  -h, --help   show this help\n"
	"\n"
	"The embedded backend simulates the devices inside each process, so 'in use'\n"
	"is what this process's runtime holds right after nrt_init (normally 0).\n"
	"Below the devices, every other running neuronsim process is listed with its\n"
	"device and host memory by category (snapshot copies included), from the\n"
	"stats files processes publish in $NEURONSIM_STATS_DIR (default /dev/shm).\n"
	"NEURONSIM_NUM_DEVICES, NEURONSIM_CORES_PER_DEVICE, NEURONSIM_DEVICE_MEMORY and\n"
	"NEURON_RT_VISIBLE_CORES shape what is listed (docs/env.md).\n"
	"\n"
	"Exit status: 0 success; 2 bad command line; 4 the runtime failed to start.\n";

/* What neuron-ls reports; gathered once, printed as table or JSON. */
typedef struct ls_info {
	uint32_t total_cores;
	uint32_t visible_cores;
	uint32_t devices;
	nrt_neuronsim_mem_usage_t mem;
	nrt_version_t version;
	const char *backend;
	procstats_list_t procs;     /* other running neuronsim processes */
	char procs_err[512];        /* why they could not be listed, "" if they could */
} ls_info_t;

static const char *const mem_category_names[NRT_NEURONSIM_MEM_CATEGORY_COUNT] = {
	"tensors", "constants", "code", "scratch", "staging", "snapshot",
};

/* The public API has no per-device query, so the device count comes from the
 * documented variable the runtime reads (docs/env.md), clamped so every
 * device gets at least one core. */
static uint32_t device_count(uint32_t total_cores)
{
	const char *s = getenv("NEURONSIM_NUM_DEVICES");
	char *end;
	unsigned long v = s ? strtoul(s, &end, 10) : 1;
	if (!s || *end || v == 0)
		v = 1;
	if (total_cores && v > total_cores)
		v = total_cores;
	return (uint32_t)v;
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}

/* "0-3", "1,3": the physical cores of a process. */
static const char *core_ids(const procstats_snap_t *p, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < p->n_cores && used < len; i++) {
		uint32_t first = p->cores[i].global, last = first;
		while (i + 1 < p->n_cores && p->cores[i + 1].global == last + 1)
			last = p->cores[++i].global;
		int n = snprintf(buf + used, len - used, first == last ? "%s%u" : "%s%u-%u",
				 used ? "," : "", first, last);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

/* The other neuronsim processes and their memory by category (procstats.h). */
static void print_processes(const ls_info_t *in)
{
	if (in->procs_err[0]) {
		printf("processes: not listed: %s\n", in->procs_err);
		return;
	}
	printf("processes (stats in %s): %zu\n", procstats_dir(), in->procs.n);
	if (!in->procs.n)
		return;
	printf("%7s %-14s %-8s %-7s %10s", "PID", "TAG", "BACKEND", "CORES", "IN USE");
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		printf(" %10s", mem_category_names[k]);
	printf(" %12s %13s\n", "host_tensors", "host_snapshot");
	for (size_t i = 0; i < in->procs.n; i++) {
		const procstats_snap_t *p = &in->procs.procs[i];
		char ids[64], a[32];
		printf("%7u %-14.14s %-8s %-7s %10s", p->pid, p->tag, p->backend, core_ids(p, ids, sizeof(ids)),
		       human(p->v[PROCSTATS_MEM_IN_USE], a, sizeof(a)));
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			printf(" %10s", human(p->v[PROCSTATS_MEM_FIRST + k], a, sizeof(a)));
		printf(" %12s", human(p->v[PROCSTATS_HOST_TENSORS], a, sizeof(a)));
		printf(" %13s\n", human(p->v[PROCSTATS_HOST_SNAPSHOT], a, sizeof(a)));
	}
}

static json_t *processes_json(const ls_info_t *in)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < in->procs.n; i++) {
		const procstats_snap_t *p = &in->procs.procs[i];
		json_t *cores = json_array(), *cats = json_object();
		for (uint32_t c = 0; c < p->n_cores; c++)
			json_array_append_new(cores, json_integer(p->cores[c].global));
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			json_object_set_new(cats, mem_category_names[k],
					    json_integer((json_int_t)p->v[PROCSTATS_MEM_FIRST + k]));
		json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:o, s:I, s:I, s:I}",
				      "pid", (int)p->pid, "tag", p->tag, "program", p->comm, "backend", p->backend,
				      "cores", cores, "memory_total", (json_int_t)p->mem_total,
				      "memory_in_use", (json_int_t)p->v[PROCSTATS_MEM_IN_USE],
				      "memory_peak", (json_int_t)p->v[PROCSTATS_MEM_PEAK], "memory_by_category", cats,
				      "host_tensors", (json_int_t)p->v[PROCSTATS_HOST_TENSORS],
				      "host_snapshot", (json_int_t)p->v[PROCSTATS_HOST_SNAPSHOT],
				      "executions", (json_int_t)p->v[PROCSTATS_EXECUTIONS]);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static void print_table(const ls_info_t *in)
{
	char a[32], b[32], c[32];
	uint32_t per = in->total_cores / in->devices;
	printf("neuronsim %s backend, runtime %" PRIu64 ".%" PRIu64 ".%" PRIu64 "\n", in->backend,
	       in->version.rt_major, in->version.rt_minor, in->version.rt_patch);
	printf("%-8s %-6s %-12s %-14s %s\n", "DEVICE", "CORES", "CORE IDS", "MEMORY", "MEMORY IN USE");
	for (uint32_t d = 0; d < in->devices; d++) {
		uint32_t first = d * per;
		uint32_t n = d + 1 == in->devices ? in->total_cores - first : per;
		char ids[32];
		if (n == 1)
			snprintf(ids, sizeof(ids), "%u", first);
		else
			snprintf(ids, sizeof(ids), "%u-%u", first, first + n - 1);
		/* Usage is accounted over all devices; per device only when there is one. */
		printf("%-8u %-6u %-12s %-14s %s\n", d, n, ids,
		       human(in->mem.total / in->devices, a, sizeof(a)),
		       in->devices == 1 ? human(in->mem.in_use, b, sizeof(b)) : "-");
	}
	printf("total: %u cores (%u visible), memory %s, in use %s, peak %s\n", in->total_cores,
	       in->visible_cores, human(in->mem.total, a, sizeof(a)),
	       human(in->mem.in_use, b, sizeof(b)), human(in->mem.peak, c, sizeof(c)));
	/* NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR* keeps a copy of every loaded model's inputs */
	const char *snap = getenv("NEURON_DUMP_HLO_SNAPSHOT");
	printf("snapshot input copies (NEURON_DUMP_HLO_SNAPSHOT=%s): device %s, host %s\n",
	       snap && *snap ? snap : "unset",
	       human(in->mem.by_category[NRT_NEURONSIM_MEM_SNAPSHOT], a, sizeof(a)),
	       human(in->mem.host_snapshot, b, sizeof(b)));
	print_processes(in);
}

static int print_json(const ls_info_t *in)
{
	uint32_t per = in->total_cores / in->devices;
	json_t *root = json_object();
	json_t *devs = json_array();
	json_t *cats = json_object();
	if (!root || !devs || !cats)
		goto oom;
	char ver[64];
	snprintf(ver, sizeof(ver), "%" PRIu64 ".%" PRIu64 ".%" PRIu64, in->version.rt_major,
		 in->version.rt_minor, in->version.rt_patch);
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		json_object_set_new(cats, mem_category_names[k],
				    json_integer((json_int_t)in->mem.by_category[k]));
	for (uint32_t d = 0; d < in->devices; d++) {
		uint32_t first = d * per;
		uint32_t n = d + 1 == in->devices ? in->total_cores - first : per;
		json_t *cores = json_array();
		json_t *dev = json_object();
		if (!cores || !dev)
			goto oom;
		for (uint32_t c = 0; c < n; c++)
			json_array_append_new(cores, json_integer(first + c));
		json_object_set_new(dev, "index", json_integer(d));
		json_object_set_new(dev, "cores", cores);
		json_object_set_new(dev, "memory_total",
				    json_integer((json_int_t)(in->mem.total / in->devices)));
		json_object_set_new(dev, "memory_in_use",
				    in->devices == 1 ? json_integer((json_int_t)in->mem.in_use)
						     : json_null());
		json_array_append_new(devs, dev);
	}
	json_object_set_new(root, "backend", json_string(in->backend));
	json_object_set_new(root, "runtime_version", json_string(ver));
	json_object_set_new(root, "total_cores", json_integer(in->total_cores));
	json_object_set_new(root, "visible_cores", json_integer(in->visible_cores));
	json_object_set_new(root, "memory_total", json_integer((json_int_t)in->mem.total));
	json_object_set_new(root, "memory_in_use", json_integer((json_int_t)in->mem.in_use));
	json_object_set_new(root, "memory_peak", json_integer((json_int_t)in->mem.peak));
	json_object_set_new(root, "memory_by_category", cats);
	json_object_set_new(root, "host_tensors", json_integer((json_int_t)in->mem.host_tensors));
	json_object_set_new(root, "host_snapshot", json_integer((json_int_t)in->mem.host_snapshot));
	json_object_set_new(root, "devices", devs);
	json_t *procs = processes_json(in);
	if (!procs)
		goto oom_procs;
	json_object_set_new(root, "processes", procs);
	json_object_set_new(root, "processes_error", in->procs_err[0] ? json_string(in->procs_err) : json_null());
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!s) {
		fprintf(stderr, "neuron-ls: out of memory formatting JSON\n");
		return TOOL_EXIT_RUNTIME;
	}
	puts(s);
	free(s);
	return TOOL_EXIT_OK;
oom:
	json_decref(root);
	json_decref(devs);
	json_decref(cats);
	fprintf(stderr, "neuron-ls: out of memory building JSON\n");
	return TOOL_EXIT_RUNTIME;
oom_procs:
	json_decref(root);
	fprintf(stderr, "neuron-ls: out of memory building JSON\n");
	return TOOL_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': fputs(usage_text, stdout); return TOOL_EXIT_OK;
		default:
			fprintf(stderr, "Try 'neuron-ls --help'.\n");
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "neuron-ls: unexpected argument '%s'\nTry 'neuron-ls --help'.\n",
			argv[optind]);
		return TOOL_EXIT_USAGE;
	}

	ls_info_t in;
	memset(&in, 0, sizeof(in));
	char sbuf[256];
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-ls: nrt_init failed: %s\n", tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}
	if ((st = nrt_get_total_nc_count(&in.total_cores)) != NRT_SUCCESS ||
	    (st = nrt_get_visible_nc_count(&in.visible_cores)) != NRT_SUCCESS ||
	    (st = nrt_neuronsim_get_mem_usage(&in.mem)) != NRT_SUCCESS ||
	    (st = nrt_get_version(&in.version, sizeof(in.version))) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-ls: querying the runtime failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		nrt_close();
		return TOOL_EXIT_RUNTIME;
	}
	in.backend = nrt_neuronsim_backend_name();
	if (!in.backend)
		in.backend = "unknown";
	in.devices = device_count(in.total_cores);
	/* Not this process: its own runtime is the one described above. */
	procstats_scan(procstats_dir(), PROCSTATS_SCAN_REMOVE_STALE, getpid(), &in.procs, in.procs_err,
		       sizeof(in.procs_err));
	int rc = TOOL_EXIT_OK;
	if (json)
		rc = print_json(&in);
	else
		print_table(&in);
	procstats_list_free(&in.procs);
	nrt_close();
	return rc;
}
