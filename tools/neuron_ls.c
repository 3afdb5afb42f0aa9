/* neuron-ls: list the neuronsim devices, their NeuronCores and device memory, as
 * a table or (-j) as JSON. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
} ls_info_t;

static const char *const mem_category_names[NRT_NEURONSIM_MEM_CATEGORY_COUNT] = {
	"tensors", "constants", "code", "scratch", "staging",
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
	json_object_set_new(root, "devices", devs);
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
	int rc = TOOL_EXIT_OK;
	if (json)
		rc = print_json(&in);
	else
		print_table(&in);
	nrt_close();
	return rc;
}
