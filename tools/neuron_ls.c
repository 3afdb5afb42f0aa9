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
	"Usage: neuron-ls [-w] [-a] [-t] [-j] [-h]\n"
	"List the neuronsim devices: NeuronCores, device memory and the processes using\n"
	"them, as the Neuron tool's table or (-j) its JSON array of devices.\n"
	"\n"
	"Options:\n"
	"  -w, --wide            table with the processes (PID, COMMAND, RUNTIME VERSION)\n"
	"                        instead of the core ids and CPU columns\n"
	"  -a, --show-all-procs  also list neuron-ls itself among each device's processes\n"
	"  -t, --topology        the table and the devices' connections (none are\n"
	"                        simulated)\n"
	"  -j, --json-output     print a JSON array of devices (--json is the same)\n"
	"  -h, --help            show this help\n"
	"      --version         print the version and exit\n"
	"\n"
	"The embedded backend simulates the devices inside each process: the devices\n"
	"listed are those this process's runtime simulates, and 'in use' is what it\n"
	"holds right after nrt_init (normally 0). A process is listed under every\n"
	"device whose cores it uses. Below the table, every other running neuronsim\n"
	"process is listed with its device and host memory by category (snapshot\n"
	"copies included), from the stats files processes publish in\n"
	"$NEURONSIM_STATS_DIR (default /dev/shm); in JSON these figures are added to\n"
	"each entry of neuron_processes.\n"
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
	char version_str[32];       /* this libnrt's version, "2.0.0" */
} ls_info_t;

typedef struct ls_opts {
	bool wide, all, topology, json;
} ls_opts_t;

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
		printf("%7u %-14.14s %-8s %-7s %10s", p->pid, p->tag, p->backend, procstats_core_list(p, "", ids, sizeof(ids)),
		       human(p->v[PROCSTATS_MEM_IN_USE], a, sizeof(a)));
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			printf(" %10s", human(p->v[PROCSTATS_MEM_FIRST + k], a, sizeof(a)));
		printf(" %12s", human(p->v[PROCSTATS_HOST_TENSORS], a, sizeof(a)));
		printf(" %13s\n", human(p->v[PROCSTATS_HOST_SNAPSHOT], a, sizeof(a)));
	}
}

/* Device d's cores: the runtime splits them evenly, the last device takes the rest. */
static uint32_t dev_first(const ls_info_t *in, uint32_t d)
{
	return d * (in->total_cores / in->devices);
}

static uint32_t dev_cores(const ls_info_t *in, uint32_t d)
{
	uint32_t per = in->total_cores / in->devices;
	return d + 1 == in->devices ? in->total_cores - d * per : per;
}

static bool proc_on_device(const procstats_snap_t *p, uint32_t d)
{
	for (uint32_t i = 0; i < p->n_cores; i++)
		if (p->cores[i].device == d)
			return true;
	return false;
}

/* The command line of pid, arguments joined by spaces; its program name when
 * /proc cannot be read (another user's process, or it just ended). */
static const char *proc_command(uint32_t pid, const char *fallback, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	while (n && buf[n - 1] == '\0')
		n--;
	if (!n) {
		snprintf(buf, len, "%s", fallback);
		return buf;
	}
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return buf;
}

/* ---- the Neuron tool's table ---- */

#define LS_COLS 8
typedef struct ls_row {
	char cell[LS_COLS][48];
	bool sep;                   /* a rule above this row (a new device in the process view) */
} ls_row_t;

static void rule(const size_t *w, int n)
{
	for (int c = 0; c < n; c++)
		printf("+%.*s", (int)w[c] + 2, "--------------------------------------------------");
	puts("+");
}

static void box_line(const size_t *w, int n, const char *const *cells, bool center)
{
	for (int c = 0; c < n; c++) {
		size_t len = strlen(cells[c]), pad = w[c] - len, left = center ? pad / 2 : 0;
		printf("| %*s%s%*s ", (int)left, "", cells[c], (int)(pad - left), "");
	}
	puts("|");
}

static void print_box(const char *const *h1, const char *const *h2, int n, const ls_row_t *rows, size_t nrows)
{
	size_t w[LS_COLS];
	for (int c = 0; c < n; c++) {
		w[c] = strlen(h1[c]) > strlen(h2[c]) ? strlen(h1[c]) : strlen(h2[c]);
		for (size_t r = 0; r < nrows; r++)
			if (strlen(rows[r].cell[c]) > w[c])
				w[c] = strlen(rows[r].cell[c]);
	}
	rule(w, n);
	box_line(w, n, h1, true);
	box_line(w, n, h2, true);
	rule(w, n);
	for (size_t r = 0; r < nrows; r++) {
		if (rows[r].sep && r)
			rule(w, n);
		const char *cells[LS_COLS];
		for (int c = 0; c < n; c++)
			cells[c] = rows[r].cell[c];
		box_line(w, n, cells, false);
	}
	rule(w, n);
}

/* COMMAND cells are cut as the Neuron tool cuts them, with "..." */
static void cut_command(char *dst, size_t len, const char *cmd)
{
	if (strlen(cmd) < len) {
		snprintf(dst, len, "%s", cmd);
		return;
	}
	snprintf(dst, len, "%.*s...", (int)len - 4, cmd);
}

static int print_table(const ls_info_t *in, const ls_opts_t *o)
{
	char a[32], b[32], c[32];
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	printf("instance-type: neuronsim\ninstance-id: %s\nlogical-neuroncore-config: 1\n", host);
	printf("neuronsim %s backend, runtime %s\n", in->backend, in->version_str);
	bool procs_view = o->wide || o->all;
	size_t cap = in->devices * (in->procs.n + 2), n = 0;
	ls_row_t *rows = calloc(cap ? cap : 1, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "neuron-ls: out of memory formatting the table\n");
		return TOOL_EXIT_RUNTIME;
	}
	for (uint32_t d = 0; d < in->devices; d++) {
		uint32_t first = dev_first(in, d), nc = dev_cores(in, d);
		ls_row_t *r = &rows[n++];
		r->sep = procs_view;
		snprintf(r->cell[0], sizeof(r->cell[0]), "%u", d);
		snprintf(r->cell[1], sizeof(r->cell[1]), "%u", nc);
		if (!procs_view) {
			snprintf(r->cell[2], sizeof(r->cell[2]), nc == 1 ? "%u" : "%u-%u", first, first + nc - 1);
			snprintf(r->cell[3], sizeof(r->cell[3]), "%s", human(in->mem.total / in->devices, a, sizeof(a)));
			snprintf(r->cell[4], sizeof(r->cell[4]), "-");
			snprintf(r->cell[5], sizeof(r->cell[5]), "-");
			if (!o->topology) {
				snprintf(r->cell[6], sizeof(r->cell[6]), "-");
				snprintf(r->cell[7], sizeof(r->cell[7]), "-");
			}
			continue;
		}
		snprintf(r->cell[2], sizeof(r->cell[2]), "%s", human(in->mem.total / in->devices, a, sizeof(a)));
		snprintf(r->cell[3], sizeof(r->cell[3]), "-");
		snprintf(r->cell[4], sizeof(r->cell[4]), "-");
		bool first_row = true;
		for (size_t i = 0; i <= in->procs.n; i++) {
			uint32_t pid;
			const char *fallback, *ver = in->version_str;
			if (i < in->procs.n) {
				if (!proc_on_device(&in->procs.procs[i], d))
					continue;
				pid = in->procs.procs[i].pid;
				fallback = in->procs.procs[i].comm;
			} else {
				if (!o->all)
					break;
				pid = (uint32_t)getpid(); /* neuron-ls itself, with -a */
				fallback = "neuron-ls";
			}
			ls_row_t *pr = first_row ? r : &rows[n++];
			first_row = false;
			char cmd[512];
			snprintf(pr->cell[5], sizeof(pr->cell[5]), "%u", pid);
			cut_command(pr->cell[6], 41, proc_command(pid, fallback, cmd, sizeof(cmd)));
			snprintf(pr->cell[7], sizeof(pr->cell[7]), "%s", ver);
		}
	}
	if (procs_view) {
		static const char *const h1[] = { "NEURON", "NEURON", "NEURON", "CONNECTED", "PCI", "PID", "COMMAND",
						  "RUNTIME" };
		static const char *const h2[] = { "DEVICE", "CORES", "MEMORY", "DEVICES", "BDF", "", "", "VERSION" };
		print_box(h1, h2, 8, rows, n);
	} else {
		static const char *const h1[] = { "NEURON", "NEURON", "NEURON", "NEURON", "CONNECTED", "PCI", "CPU",
						  "NUMA" };
		static const char *const h2[] = { "DEVICE", "CORES", "CORE IDS", "MEMORY", "DEVICES", "BDF",
						  "AFFINITY", "NODE" };
		print_box(h1, h2, o->topology ? 6 : 8, rows, n);
	}
	free(rows);
	if (o->topology) {
		printf("\nNeuron Device Topology\n");
		for (uint32_t d = 0; d < in->devices; d++)
			printf("%s[%2u ]", d ? "   " : "  ", d);
		printf("\n\n  (no links: the simulated devices are not connected to each other)\n");
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
	return TOOL_EXIT_OK;
}

/* ---- the Neuron tool's JSON: an array of devices ---- */

/* One neuron_processes entry: the documented pid, command and
 * neuron_runtime_version, then neuronsim's figures from the stats file. */
static json_t *process_entry(const ls_info_t *in, const procstats_snap_t *p, uint32_t pid)
{
	char cmd[4096];
	json_t *o = json_pack("{s:i, s:s, s:s}", "pid", (int)pid, "command",
			      proc_command(pid, p ? p->comm : "neuron-ls", cmd, sizeof(cmd)),
			      "neuron_runtime_version", in->version_str);
	if (!o || !p)
		return o;
	json_t *cores = json_array(), *cats = json_object();
	for (uint32_t c = 0; cores && c < p->n_cores; c++)
		json_array_append_new(cores, json_integer(p->cores[c].global));
	for (int k = 0; cats && k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		json_object_set_new(cats, mem_category_names[k], json_integer((json_int_t)p->v[PROCSTATS_MEM_FIRST + k]));
	json_t *extra = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:o, s:I, s:I, s:I}", "tag", p->tag,
				  "program", p->comm, "backend", p->backend, "cores", cores,
				  "memory_total", (json_int_t)p->mem_total,
				  "memory_in_use", (json_int_t)p->v[PROCSTATS_MEM_IN_USE],
				  "memory_peak", (json_int_t)p->v[PROCSTATS_MEM_PEAK], "memory_by_category", cats,
				  "host_tensors", (json_int_t)p->v[PROCSTATS_HOST_TENSORS],
				  "host_snapshot", (json_int_t)p->v[PROCSTATS_HOST_SNAPSHOT],
				  "executions", (json_int_t)p->v[PROCSTATS_EXECUTIONS]);
	if (!extra || json_object_update(o, extra)) {
		json_decref(extra);
		json_decref(o);
		return NULL;
	}
	json_decref(extra);
	return o;
}

static int print_json(const ls_info_t *in, const ls_opts_t *o)
{
	json_t *devs = json_array();
	for (uint32_t d = 0; devs && d < in->devices; d++) {
		uint32_t first = dev_first(in, d), nc = dev_cores(in, d);
		json_t *ids = json_array(), *procs = json_array();
		for (uint32_t c = 0; ids && c < nc; c++)
			json_array_append_new(ids, json_integer(first + c));
		for (size_t i = 0; procs && i < in->procs.n; i++)
			if (proc_on_device(&in->procs.procs[i], d) &&
			    json_array_append_new(procs, process_entry(in, &in->procs.procs[i], in->procs.procs[i].pid)))
				goto oom;
		if (procs && o->all && json_array_append_new(procs, process_entry(in, NULL, (uint32_t)getpid())))
			goto oom;
		json_t *dev = json_pack("{s:i, s:s, s:s, s:s, s:[], s:i, s:i, s:I, s:o, s:o}", "neuron_device", (int)d,
					"bdf", "", "cpu_affinity", "", "numa_node", "", "connected_to", "nc_count",
					(int)nc, "logical_neuroncore_config", 1, "memory_size",
					(json_int_t)(in->mem.total / in->devices), "neuroncore_ids", ids,
					"neuron_processes", procs);
		if (!dev || json_array_append_new(devs, dev))
			goto oom;
	}
	if (!devs)
		goto oom;
	if (in->procs_err[0])
		fprintf(stderr, "neuron-ls: processes not listed: %s\n", in->procs_err);
	char *s = json_dumps(devs, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
	json_decref(devs);
	if (!s) {
		fprintf(stderr, "neuron-ls: out of memory formatting JSON\n");
		return TOOL_EXIT_RUNTIME;
	}
	puts(s);
	free(s);
	return TOOL_EXIT_OK;
oom:
	json_decref(devs);
	fprintf(stderr, "neuron-ls: out of memory building JSON\n");
	return TOOL_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "wide", no_argument, NULL, 'w' },
		{ "show-all-procs", no_argument, NULL, 'a' },
		{ "topology", no_argument, NULL, 't' },
		{ "json-output", no_argument, NULL, 'j' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	ls_opts_t o = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "watjh", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': o.wide = true; break;
		case 'a': o.all = true; break;
		case 't': o.topology = true; break;
		case 'j': o.json = true; break;
		case TOOL_OPT_VERSION: return tool_print_version("neuron-ls", NULL);
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
	ns_status_consume_message(procstats_scan(procstats_dir(), PROCSTATS_SCAN_REMOVE_STALE, getpid(),
						 &in.procs),
				  in.procs_err, sizeof(in.procs_err));
	snprintf(in.version_str, sizeof(in.version_str), "%" PRIu64 ".%" PRIu64 ".%" PRIu64, in.version.rt_major,
		 in.version.rt_minor, in.version.rt_patch);
	int rc = o.json ? print_json(&in, &o) : print_table(&in, &o);
	procstats_list_free(&in.procs);
	nrt_close();
	return rc;
}
