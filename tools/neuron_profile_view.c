/* neuron-profile view: presents a profile, or every trace under a directory, in the Neuron tool's output formats (summary-text, summary-json, json, perfetto). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "neuron_profile.h"
#include "neuronsim/atomic_file.h"
#include "tool_common.h"

/* The Neuron tool's summary metrics that a libnrt trace can give, in its
 * names where it has one: total_time (s, the jobs' wall time, else the
 * window), event_count, nc_idx (the first job's NeuronCore); then neuronsim's. */
static json_t *summary_object(const trace_t *t)
{
	double jobs_s = 0, engine_s = 0, flops = 0;
	for (size_t i = 0; i < t->n_jobs; i++)
		jobs_s += t->jobs[i].dur * 1e-6;
	for (size_t i = 0; i < t->n_spans; i++) {
		engine_s += t->spans[i].dur * 1e-6;
		flops += t->spans[i].flops;
	}
	double window = t->t_max >= t->t_min ? (t->t_max - t->t_min) * 1e-6 : 0.0;
	json_t *o = json_object();
	json_object_set_new(o, "total_time", json_real(t->n_jobs ? jobs_s : window));
	json_object_set_new(o, "event_count", json_integer((json_int_t)(t->n_spans + t->n_jobs + t->n_host_events)));
	/* the first job's core, from the name libnrt gives its track:
	 * "NeuronCore N (device, physical core P)" */
	for (size_t i = 0; t->n_jobs && i < t->n_names; i++) {
		unsigned nc, phys;
		if (t->names[i].pid == t->jobs[0].pid && t->names[i].tid == -1 &&
		    sscanf(t->names[i].name, "NeuronCore %u (device, physical core %u)", &nc, &phys) == 2) {
			json_object_set_new(o, "nc_idx", json_integer(nc));
			json_object_set_new(o, "physical_nc_idx", json_integer(phys));
			break;
		}
	}
	json_object_set_new(o, "job_count", json_integer((json_int_t)t->n_jobs));
	json_object_set_new(o, "device_instruction_count", json_integer((json_int_t)t->n_spans));
	json_object_set_new(o, "device_busy_time", json_real(engine_s));
	json_object_set_new(o, "host_event_count", json_integer((json_int_t)t->n_host_events));
	json_object_set_new(o, "flops", json_real(flops));
	json_object_set_new(o, "window_time", json_real(window));
	json_object_set_new(o, "spans_dropped", json_integer((json_int_t)t->spans_dropped));
	return o;
}

static void print_summary_text(const json_t *o)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		if (json_is_integer(v))
			printf("%-26s %lld\n", key, (long long)json_integer_value(v));
		else
			printf("%-26s %.9g\n", key, json_real_value(v));
	}
}

/* Writes doc to path through atomic_file (whole or nothing), or to stdout
 * when path is NULL. Takes the reference to doc (NULL: out of memory). */
static int emit_json(json_t *doc, const char *path)
{
	char *text = doc ? json_dumps(doc, JSON_INDENT(path ? 0 : 4) | JSON_COMPACT * !!path) : NULL;
	json_decref(doc);
	if (!text) {
		fprintf(stderr, "neuron-profile: out of memory formatting JSON\n");
		return TOOL_EXIT_RUNTIME;
	}
	int rc = 0;
	if (!path) {
		puts(text);
	} else {
		const char *step = NULL;
		if (atomic_file_write_whole(path, text, strlen(text), 0644, &step) != 0) {
			fprintf(stderr, "neuron-profile: cannot write '%s': %s (%s): choose a writable "
				"--output-file\n", path, strerror(errno), step ? step : "write");
			rc = TOOL_EXIT_OUTPUT;
		} else {
			fprintf(stderr, "neuron-profile: wrote %s\n", path);
		}
	}
	free(text);
	return rc;
}

/* The traces under dir, recursively, sorted: what view -d reads. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_trace_name(const char *name)
{
	size_t n = strlen(name);
	return (n > 5 && strcmp(name + n - 5, ".json") == 0) || (n > 8 && strcmp(name + n - 8, ".json.gz") == 0);
}

static int walk(const char *dir, char ***v, size_t *n, size_t *cap, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "neuron-profile: cannot read the directory '%s': %s\n", dir, strerror(errno));
		return TOOL_EXIT_INPUT;
	}
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		struct stat st;
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 8) {
			rc = walk(path, v, n, cap, depth + 1);
		} else if (S_ISREG(st.st_mode) && is_trace_name(e->d_name)) {
			char *copy = strdup(path);
			if (!copy || !nprof_push((void **)v, n, cap, sizeof(**v))) {
				free(copy);
				fprintf(stderr, "neuron-profile: out of memory listing '%s'\n", dir);
				rc = TOOL_EXIT_RUNTIME;
				break;
			}
			(*v)[(*n)++] = copy;
		}
	}
	closedir(d);
	return rc;
}

static int find_traces(const char *dir, char ***out, size_t *out_n)
{
	size_t cap = 0;
	*out = NULL;
	*out_n = 0;
	int rc = walk(dir, out, out_n, &cap, 0);
	if (rc) {
		for (size_t i = 0; i < *out_n; i++)
			free((*out)[i]);
		free(*out);
		*out = NULL;
		*out_n = 0;
		return rc;
	}
	if (*out_n)
		qsort(*out, *out_n, sizeof(**out), cmp_str);
	return 0;
}
static int view_one(const view_opts_t *o, const char *path, json_t *all_events, json_t *summaries)
{
	json_t *root;
	trace_t t;
	int rc = nprof_load_trace(path, &root, &t);
	if (rc)
		return rc;
	json_t *sum = summary_object(&t);
	if (strcmp(o->format, "summary-text") == 0) {
		print_summary_text(sum);
		printf("\n");
		nprof_print_tables(path, &t, o->top, o->warmup);
	}
	json_array_append_new(summaries, sum);
	json_array_extend(all_events, nprof_trace_events(root));
	nprof_trace_free(&t);
	json_decref(root);
	return 0;
}

int nprof_view(const view_opts_t *o)
{
	static const char *const formats[] = { "summary-text", "summary-json", "json", "perfetto" };
	bool known = false;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		known |= strcmp(o->format, formats[i]) == 0;
	if (!known) {
		fprintf(stderr, "neuron-profile: --output-format %s is not available in neuronsim (the Neuron "
			"tool's db/web view needs its database): use summary-text, summary-json, json or "
			"perfetto\n", o->format);
		return TOOL_EXIT_USAGE;
	}
	if (!o->session == !o->dir) {
		fprintf(stderr, "neuron-profile: view needs one profile: -s PROFILE or -d DIR\n");
		return TOOL_EXIT_USAGE;
	}
	if (o->neff) {
		FILE *f = fopen(o->neff, "rb");
		if (!f) {
			fprintf(stderr, "neuron-profile: cannot open the NEFF '%s': %s\n", o->neff, strerror(errno));
			return TOOL_EXIT_INPUT;
		}
		fclose(f);
	}
	char **paths = NULL;
	size_t n = 0;
	if (o->dir) {
		int rc = find_traces(o->dir, &paths, &n);
		if (rc)
			return rc;
		if (!n) {
			fprintf(stderr, "neuron-profile: no trace (*.json, *.json.gz) under '%s'\n", o->dir);
			free(paths);
			return TOOL_EXIT_INPUT;
		}
	}
	json_t *events = json_array(), *summaries = json_array();
	int rc = 0;
	for (size_t i = 0; i < (o->dir ? n : 1) && !rc; i++) {
		if (o->dir && strcmp(o->format, "summary-text") == 0 && n > 1)
			printf("%s== %s ==\n", i ? "\n" : "", paths[i]);
		rc = view_one(o, o->dir ? paths[i] : o->session, events, summaries);
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	if (!rc && strcmp(o->format, "summary-json") == 0) {
		rc = emit_json(json_pack("{s:O}", "summary", summaries), o->output);
	} else if (!rc && strcmp(o->format, "json") == 0) {
		rc = emit_json(json_pack("{s:O, s:O}", "summary", summaries, "traceEvents", events), o->output);
	} else if (!rc && strcmp(o->format, "perfetto") == 0) {
		rc = emit_json(json_pack("{s:O, s:s}", "traceEvents", events, "displayTimeUnit", "ns"),
			       o->output ? o->output : "ntff.perfetto.json");
	}
	json_decref(events);
	json_decref(summaries);
	return rc;
}
