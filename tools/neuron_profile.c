/* neuron-profile: summarises a Chrome trace written by the libnrt profiler: top instructions and HLO ops, engine busy time, idle gaps. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <dirent.h>
#include <sys/stat.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"
#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-profile capture -n NEFF -s PROFILE [--ignore-exec-errors] [NAME FILE.npy]...\n"
	"       neuron-profile view -s PROFILE | -d DIR [-n NEFF] [--output-format FORMAT]\n"
	"                           [--output-file FILE] [--top N]\n"
	"       neuron-profile summary TRACE [--top N]\n"
	"       neuron-profile --help | --version\n"
	"\n"
	"capture: load NEFF on NeuronCore 0, execute it once with a device and system\n"
	"  trace (nrt_profile_start/stop) and write the trace to PROFILE (Chrome trace\n"
	"  event JSON, gzip when PROFILE ends in .gz). Inputs are all zeros unless given\n"
	"  as NAME FILE.npy pairs; a failed execution is an error unless\n"
	"  --ignore-exec-errors (the profile is written either way).\n"
	"view: read a profile (-s), or every trace under DIR (-d: a capture's or\n"
	"  NEURON_RT_INSPECT_OUTPUT_DIR's), and present it as --output-format:\n"
	"    summary-text  the summary metrics (name value), then the tables below\n"
	"                  (default)\n"
	"    summary-json  the summary metrics as JSON: {\"summary\": [{...}]}\n"
	"    json          the summary and every trace event: {\"summary\": [...],\n"
	"                  \"traceEvents\": [...]}, to --output-file or stdout\n"
	"    perfetto      the trace as Chrome/Perfetto JSON for ui.perfetto.dev, to\n"
	"                  --output-file (default ntff.perfetto.json)\n"
	"  -n NEFF is accepted for the Neuron tool's command lines and checked to be\n"
	"  readable; the trace names the instructions itself.\n"
	"summary TRACE: the tables alone (neuronsim's command; view's summary-text\n"
	"  prints them too):\n"
	"  - the top HLO instructions and the top HLO ops (op_type) by device time, with\n"
	"    their FLOPs and achieved GFLOP/s;\n"
	"  - per core and engine: busy time, the share of the time the core ran jobs,\n"
	"    and the simulator's own busy time for the same jobs;\n"
	"  - the largest idle gaps between two instructions of an engine in one job\n"
	"    (time it waited on another engine).\n"
	"A TRACE or PROFILE is what libnrt writes (nrt_profile_stop, neuron-run\n"
	"--profile, capture, NEURON_RT_INSPECT_ENABLE=1): Chrome trace event JSON,\n"
	"plain or gzip-compressed.\n"
	"\n"
	"Options:\n"
	"  -n, --neff FILE          capture: the NEFF to run; view: accepted, checked\n"
	"  -s, --session-file FILE  the profile to write (capture) or read (view)\n"
	"  -d, --session-dir DIR    view: every trace under DIR\n"
	"      --ignore-exec-errors capture: a failed execution is not an error\n"
	"      --output-format F    view: summary-text, summary-json, json, perfetto\n"
	"      --output-file FILE   view: where json and perfetto go\n"
	"      --top N              rows per table (default 10; summary also takes -n N)\n"
	"  -h, --help               show this help\n"
	"      --version            print the version and exit\n"
	"\n"
	"Exit status: 0 success; 1 capture's execution failed; 2 bad command line; 3 the\n"
	"NEFF, an input or the trace cannot be read; 4 the runtime failed; 5 an output\n"
	"file could not be written.\n";

#define EXIT_USAGE 2
#define EXIT_INPUT 3
#define MAX_TRACE_BYTES (8ull << 30)

/* ---- reading ---- */

/* Reads path whole, gunzipping when it is gzip (zlib reads plain files as they
 * are). NULL with a message in err on failure. */
static char *read_trace(const char *path, size_t *out_len, char *err, size_t err_len)
{
	FILE *probe = fopen(path, "rb");
	if (!probe) {
		snprintf(err, err_len, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	fclose(probe);
	gzFile gz = gzopen(path, "rb");
	if (!gz) {
		snprintf(err, err_len, "cannot open '%s': %s", path, strerror(errno ? errno : ENOMEM));
		return NULL;
	}
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			snprintf(err, err_len, "'%s': out of memory", path);
			gzclose(gz);
			return NULL;
		}
		if (len == cap) {
			if (cap >= MAX_TRACE_BYTES) {
				snprintf(err, err_len, "'%s': more than %llu GiB uncompressed; too large to "
					 "summarise", path, (unsigned long long)(MAX_TRACE_BYTES >> 30));
				free(buf);
				gzclose(gz);
				return NULL;
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				free(buf);
			buf = nb;
			continue;
		}
		int n = gzread(gz, buf + len, (unsigned)(cap - len > (1u << 30) ? (1u << 30) : cap - len));
		if (n < 0) {
			int code;
			const char *msg = gzerror(gz, &code);
			snprintf(err, err_len, "'%s': not a readable gzip file (%s)", path,
				 code == Z_ERRNO ? strerror(errno) : msg);
			free(buf);
			gzclose(gz);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	int code;
	const char *msg = gzerror(gz, &code);
	if (code != Z_OK) {
		snprintf(err, err_len, "'%s': corrupt or truncated gzip data (%s)", path, msg);
		free(buf);
		gzclose(gz);
		return NULL;
	}
	gzclose(gz);
	buf[len] = '\0';
	*out_len = len;
	return buf;
}

/* ---- the model of a trace ---- */

typedef struct span {
	const char *name;      /* borrowed from the JSON document */
	const char *op_type;
	double ts, dur;        /* microseconds */
	double flops;
	int64_t pid, tid;
} span_t;

typedef struct job {
	int64_t pid;
	double ts, dur;
	json_t *busy;          /* args.engine_busy_ns, borrowed */
} job_t;

typedef struct track_name {
	int64_t pid, tid;      /* tid -1: a process name */
	const char *name;
} track_name_t;

typedef struct trace {
	span_t *spans;
	size_t n_spans;
	job_t *jobs;
	size_t n_jobs;
	track_name_t *names;
	size_t n_names;
	size_t n_host_events, n_malformed;
	double t_min, t_max;
	uint64_t spans_dropped;
} trace_t;

static bool push(void **v, size_t *n, size_t *cap, size_t size)
{
	if (*n < *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 256;
	void *nv = realloc(*v, nc * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = nc;
	return true;
}

static bool get_num(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v))
		return false;
	*out = json_number_value(v);
	return true;
}

static const char *get_str(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

/* Fills t from the events; -1 with a message when out of memory. */
static int collect(json_t *events, trace_t *t, char *err, size_t err_len)
{
	size_t cap_s = 0, cap_j = 0, cap_n = 0;
	t->t_min = 1e300;
	t->t_max = -1e300;
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev) {
		const char *ph = get_str(ev, "ph", NULL);
		json_t *jpid = json_object_get(ev, "pid"), *jtid = json_object_get(ev, "tid");
		if (!json_is_object(ev) || !ph || !json_is_integer(jpid)) {
			t->n_malformed++;
			continue;
		}
		int64_t pid = json_integer_value(jpid);
		int64_t tid = json_is_integer(jtid) ? json_integer_value(jtid) : 0;
		json_t *args = json_object_get(ev, "args");
		if (strcmp(ph, "M") == 0) {
			const char *what = get_str(ev, "name", "");
			bool proc = strcmp(what, "process_name") == 0;
			if (!proc && strcmp(what, "thread_name") != 0)
				continue;
			if (!push((void **)&t->names, &t->n_names, &cap_n, sizeof(*t->names)))
				goto nomem;
			t->names[t->n_names++] = (track_name_t){ pid, proc ? -1 : tid,
								 get_str(args, "name", "?") };
			continue;
		}
		double ts, dur = 0;
		if (!get_num(ev, "ts", &ts) || (strcmp(ph, "X") == 0 && (!get_num(ev, "dur", &dur) || dur < 0))) {
			t->n_malformed++;
			continue;
		}
		if (ts < t->t_min)
			t->t_min = ts;
		if (ts + dur > t->t_max)
			t->t_max = ts + dur;
		const char *cat = get_str(ev, "cat", "");
		if (strcmp(ph, "X") == 0 && strcmp(cat, "device") == 0) {
			if (!push((void **)&t->spans, &t->n_spans, &cap_s, sizeof(*t->spans)))
				goto nomem;
			double flops = 0;
			get_num(args, "flops", &flops);
			t->spans[t->n_spans++] = (span_t){ get_str(ev, "name", "?"),
							   get_str(args, "op_type", ""), ts, dur, flops, pid,
							   tid };
		} else if (strcmp(ph, "X") == 0 && strcmp(cat, "job") == 0) {
			if (!push((void **)&t->jobs, &t->n_jobs, &cap_j, sizeof(*t->jobs)))
				goto nomem;
			double dropped = 0;
			if (get_num(args, "spans_dropped", &dropped))
				t->spans_dropped += (uint64_t)dropped;
			t->jobs[t->n_jobs++] = (job_t){ pid, ts, dur, json_object_get(args, "engine_busy_ns") };
		} else {
			t->n_host_events++;
		}
	}
	return 0;
nomem:
	snprintf(err, err_len, "out of memory reading the events");
	return -1;
}

static const char *track_name(const trace_t *t, int64_t pid, int64_t tid, char *buf, size_t len)
{
	for (size_t i = 0; i < t->n_names; i++)
		if (t->names[i].pid == pid && t->names[i].tid == tid)
			return t->names[i].name;
	if (tid < 0)
		snprintf(buf, len, "pid %lld", (long long)pid);
	else
		snprintf(buf, len, "tid %lld", (long long)tid);
	return buf;
}

/* ---- tables ---- */

typedef struct agg {
	const char *key;
	const char *op_type;   /* of the first span (instruction table) */
	double time, flops;
	uint64_t count;
} agg_t;

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const agg_t *)a)->key, ((const agg_t *)b)->key);
}

static int cmp_time_desc(const void *a, const void *b)
{
	double x = ((const agg_t *)a)->time, y = ((const agg_t *)b)->time;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Groups the spans by name (by_op false) or op_type and sorts by time. */
static agg_t *aggregate(const trace_t *t, bool by_op, size_t *out_n)
{
	agg_t *a = malloc((t->n_spans ? t->n_spans : 1) * sizeof(*a));
	if (!a)
		return NULL;
	for (size_t i = 0; i < t->n_spans; i++) {
		const span_t *s = &t->spans[i];
		a[i] = (agg_t){ by_op ? (s->op_type[0] ? s->op_type : "(none)") : s->name, s->op_type,
				s->dur, s->flops, 1 };
	}
	qsort(a, t->n_spans, sizeof(*a), cmp_key);
	size_t n = 0;
	for (size_t i = 0; i < t->n_spans; i++) {
		if (n && strcmp(a[n - 1].key, a[i].key) == 0) {
			a[n - 1].time += a[i].time;
			a[n - 1].flops += a[i].flops;
			a[n - 1].count++;
		} else {
			a[n++] = a[i];
		}
	}
	qsort(a, n, sizeof(*a), cmp_time_desc);
	*out_n = n;
	return a;
}

static void print_top(const trace_t *t, bool by_op, int top, double total)
{
	size_t n;
	agg_t *a = aggregate(t, by_op, &n);
	if (!a) {
		fprintf(stderr, "neuron-profile: out of memory\n");
		return;
	}
	printf("\nTop %d %s by device time\n", top, by_op ? "HLO ops (op_type)" : "HLO instructions");
	printf("  %4s %12s %7s %7s %10s %12s %9s  %s\n", "rank", "time_us", "share", "count", "mean_us",
	       "flops", "GFLOP/s", by_op ? "op_type" : "instruction (op_type)");
	for (size_t i = 0; i < n && i < (size_t)top; i++) {
		const agg_t *g = &a[i];
		char gf[32] = "-";
		if (g->flops > 0 && g->time > 0)
			snprintf(gf, sizeof(gf), "%.3f", g->flops / (g->time * 1e3));
		printf("  %4zu %12.3f %6.2f%% %7llu %10.3f %12.0f %9s  %s", i + 1, g->time,
		       total > 0 ? 100.0 * g->time / total : 0.0, (unsigned long long)g->count,
		       g->time / (double)g->count, g->flops, gf, g->key);
		if (!by_op && g->op_type[0])
			printf(" (%s)", g->op_type);
		printf("\n");
	}
	if (n > (size_t)top)
		printf("  ... %zu more\n", n - (size_t)top);
	free(a);
}

typedef struct gap {
	int64_t pid, tid;
	double at, len;
	const char *after, *before; /* the instructions around it */
} gap_t;

static int cmp_span_track(const void *a, const void *b)
{
	const span_t *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_job(const void *a, const void *b)
{
	const job_t *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_gap_desc(const void *a, const void *b)
{
	double x = ((const gap_t *)a)->len, y = ((const gap_t *)b)->len;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The simulator's busy time of engine (by its track name's first word) over
 * the jobs of pid, in microseconds; -1 when the jobs do not say. */
static double sim_busy(const trace_t *t, int64_t pid, const char *engine)
{
	char key[32];
	size_t k = 0;
	while (engine[k] && engine[k] != ' ' && k < sizeof(key) - 1) {
		key[k] = engine[k];
		k++;
	}
	key[k] = '\0';
	double sum = 0;
	bool any = false;
	for (size_t j = 0; j < t->n_jobs; j++) {
		if (t->jobs[j].pid != pid)
			continue;
		json_t *v = json_object_get(t->jobs[j].busy, key);
		if (json_is_number(v)) {
			sum += json_number_value(v) / 1e3;
			any = true;
		}
	}
	return any ? sum : -1;
}

/* Per engine track: busy time against the time its core ran jobs; collects
 * the idle gaps inside jobs. Spans and jobs are sorted by the caller. */
static void print_engines_and_gaps(const trace_t *t, int top)
{
	gap_t *gaps = NULL;
	size_t n_gaps = 0, cap_g = 0;
	printf("\nEngine busy time (busy%% = busy / time its core ran jobs)\n");
	printf("  %-44s %-16s %12s %12s %7s %12s\n", "core", "engine", "busy_us", "jobs_us", "busy%",
	       "sim_busy_us");
	size_t i = 0;
	while (i < t->n_spans) {
		size_t end = i;
		while (end < t->n_spans && t->spans[end].pid == t->spans[i].pid &&
		       t->spans[end].tid == t->spans[i].tid)
			end++;
		int64_t pid = t->spans[i].pid, tid = t->spans[i].tid;
		double busy = 0;
		for (size_t k = i; k < end; k++)
			busy += t->spans[k].dur;
		double jobs_us = 0;
		size_t k = i;
		for (size_t j = 0; j < t->n_jobs; j++) {
			const job_t *jb = &t->jobs[j];
			if (jb->pid != pid)
				continue;
			jobs_us += jb->dur;
			/* Gaps between two instructions of this engine in one job:
			 * time it waited on other engines. Before its first and after
			 * its last instruction it had no work yet / any more. */
			while (k < end && t->spans[k].ts < jb->ts)
				k++;
			const span_t *prev = NULL;
			for (; k < end && t->spans[k].ts <= jb->ts + jb->dur; k++) {
				const span_t *sp = &t->spans[k];
				double g = prev ? sp->ts - (prev->ts + prev->dur) : 0;
				if (g > 0 && push((void **)&gaps, &n_gaps, &cap_g, sizeof(*gaps)))
					gaps[n_gaps++] = (gap_t){ pid, tid, prev->ts + prev->dur, g, prev->name,
								  sp->name };
				prev = sp;
			}
		}
		if (jobs_us <= 0) /* a trace without job events: the span window */
			jobs_us = t->spans[end - 1].ts + t->spans[end - 1].dur - t->spans[i].ts;
		char b1[64], b2[64], sb[32] = "-";
		const char *engine = track_name(t, pid, tid, b2, sizeof(b2));
		double sim = sim_busy(t, pid, engine);
		if (sim >= 0)
			snprintf(sb, sizeof(sb), "%.3f", sim);
		printf("  %-44s %-16s %12.3f %12.3f %6.2f%% %12s\n", track_name(t, pid, -1, b1, sizeof(b1)),
		       engine, busy, jobs_us, jobs_us > 0 ? 100.0 * busy / jobs_us : 0.0, sb);
		i = end;
	}
	if (n_gaps) /* gaps is NULL when there are none */
		qsort(gaps, n_gaps, sizeof(*gaps), cmp_gap_desc);
	printf("\nLargest idle gaps between two instructions of an engine in one job (at: us from the "
	       "trace start)\n");
	printf("  %4s %12s %14s  %-44s %-16s %s\n", "rank", "gap_us", "at_us", "core", "engine",
	       "between");
	for (size_t g = 0; g < n_gaps && g < (size_t)top; g++) {
		char b1[64], b2[64];
		printf("  %4zu %12.3f %14.3f  %-44s %-16s %s -> %s\n", g + 1, gaps[g].len,
		       gaps[g].at - t->t_min, track_name(t, gaps[g].pid, -1, b1, sizeof(b1)),
		       track_name(t, gaps[g].pid, gaps[g].tid, b2, sizeof(b2)),
		       gaps[g].after, gaps[g].before);
	}
	if (!n_gaps)
		printf("  (none)\n");
	free(gaps);
}

/* Reads the trace at path into *out_root (the caller's, json_decref) and its
 * model into *t (free with trace_free). EXIT_INPUT with the message printed. */
static int load_trace(const char *path, json_t **out_root, trace_t *t)
{
	char err[1024];
	size_t len;
	char *text = read_trace(path, &len, err, sizeof(err));
	if (!text) {
		fprintf(stderr, "neuron-profile: %s\n", err);
		return EXIT_INPUT;
	}
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!root) {
		fprintf(stderr, "neuron-profile: '%s' is not JSON (line %d, column %d: %s); is it a "
			"trace written by the profiler?\n", path, jerr.line, jerr.column, jerr.text);
		return EXIT_INPUT;
	}
	json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
	if (!json_is_array(events)) {
		fprintf(stderr, "neuron-profile: '%s' is not a Chrome trace: no traceEvents array\n", path);
		json_decref(root);
		return EXIT_INPUT;
	}
	memset(t, 0, sizeof(*t));
	if (collect(events, t, err, sizeof(err)) != 0) {
		fprintf(stderr, "neuron-profile: '%s': %s\n", path, err);
		json_decref(root);
		return EXIT_INPUT;
	}
	*out_root = root;
	return 0;
}

static void trace_free(trace_t *t)
{
	free(t->spans);
	free(t->jobs);
	free(t->names);
}

static json_t *trace_events(json_t *root)
{
	return json_is_array(root) ? root : json_object_get(root, "traceEvents");
}

/* neuronsim's tables: header, top instructions and ops, engines and gaps. */
static void print_tables(const char *path, trace_t *t, int top)
{
	double total = 0;
	for (size_t i = 0; i < t->n_spans; i++)
		total += t->spans[i].dur;
	printf("trace: %s\n", path);
	printf("  %zu device span(s) (%.3f us of engine time) in %zu job(s); %zu host event(s)",
	       t->n_spans, total, t->n_jobs, t->n_host_events);
	if (t->t_max >= t->t_min)
		printf("; window %.3f us", t->t_max - t->t_min);
	printf("\n");
	if (t->spans_dropped)
		printf("  warning: %llu span(s) were dropped while recording (buffer too small for a "
		       "looping program's first execution); totals are short of them\n",
		       (unsigned long long)t->spans_dropped);
	if (t->n_malformed)
		printf("  warning: %zu malformed event(s) skipped\n", t->n_malformed);
	if (!t->n_spans) {
		printf("  no device spans: record a device trace (nrt_profile_start, or "
		       "NEURON_RT_INSPECT_DEVICE_PROFILE=1 or session)\n");
		return;
	}
	print_top(t, false, top, total);
	print_top(t, true, top, total);
	qsort(t->spans, t->n_spans, sizeof(*t->spans), cmp_span_track);
	if (t->n_jobs) /* a trace without job events has no array */
		qsort(t->jobs, t->n_jobs, sizeof(*t->jobs), cmp_job);
	print_engines_and_gaps(t, top);
}

static int summary(const char *path, int top)
{
	json_t *root;
	trace_t t;
	int rc = load_trace(path, &root, &t);
	if (rc)
		return rc;
	print_tables(path, &t, top);
	trace_free(&t);
	json_decref(root);
	return 0;
}

/* ---- view: the Neuron tool's output formats ---- */

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

typedef struct view_opts {
	const char *neff, *session, *dir, *format, *output;
	int top;
} view_opts_t;

/* The traces under dir (recursively): *.json, *.json.gz, sorted by path. */
static int find_traces(const char *dir, char ***out, size_t *out_n);

static int view_one(const view_opts_t *o, const char *path, json_t *all_events, json_t *summaries)
{
	json_t *root;
	trace_t t;
	int rc = load_trace(path, &root, &t);
	if (rc)
		return rc;
	json_t *sum = summary_object(&t);
	if (strcmp(o->format, "summary-text") == 0) {
		print_summary_text(sum);
		printf("\n");
		print_tables(path, &t, o->top);
	}
	json_array_append_new(summaries, sum);
	json_array_extend(all_events, trace_events(root));
	trace_free(&t);
	json_decref(root);
	return 0;
}

static int view(const view_opts_t *o)
{
	static const char *const formats[] = { "summary-text", "summary-json", "json", "perfetto" };
	bool known = false;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		known |= strcmp(o->format, formats[i]) == 0;
	if (!known) {
		fprintf(stderr, "neuron-profile: --output-format %s is not available in neuronsim (the Neuron "
			"tool's db/web view needs its database): use summary-text, summary-json, json or "
			"perfetto\n", o->format);
		return EXIT_USAGE;
	}
	if (!o->session == !o->dir) {
		fprintf(stderr, "neuron-profile: view needs one profile: -s PROFILE or -d DIR\n");
		return EXIT_USAGE;
	}
	if (o->neff) {
		FILE *f = fopen(o->neff, "rb");
		if (!f) {
			fprintf(stderr, "neuron-profile: cannot open the NEFF '%s': %s\n", o->neff, strerror(errno));
			return EXIT_INPUT;
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
			return EXIT_INPUT;
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

/* ---- capture: run a NEFF once under the profiler ---- */

typedef struct capture_opts {
	const char *neff, *session;
	bool ignore_exec_errors;
	char **inputs;          /* NAME FILE pairs */
	int n_inputs;           /* pairs */
} capture_opts_t;

/* The input's bytes: its .npy when given (dtype and shape must match), else zeros. */
static int capture_input(const capture_opts_t *o, const nrt_tensor_info_t *t, void *buf, bool *used)
{
	memset(buf, 0, t->size);
	int k = 0;
	while (k < o->n_inputs && strcmp(o->inputs[2 * k], t->name) != 0)
		k++;
	if (k == o->n_inputs)
		return 0;
	used[k] = true;
	const char *path = o->inputs[2 * k + 1];
	npy_array_t a;
	char err[512], got[128], want[128];
	if (npy_read_file(path, &a, err, sizeof(err)) != NPY_OK) {
		fprintf(stderr, "neuron-profile: input '%s': %s\n", t->name, err);
		return EXIT_INPUT;
	}
	uint64_t shape[NPY_MAX_RANK] = { 0 };
	for (uint32_t d = 0; d < t->ndim && d < NPY_MAX_RANK; d++)
		shape[d] = (uint64_t)t->shape[d];
	isa_dtype_t dt = tool_dtype_from_nrt(t->dtype);
	bool ok = (a.dtype == dt || (dt == ISA_DT_U8 && a.dtype == ISA_DT_PRED)) && a.rank == t->ndim &&
		  a.nbytes == t->size;
	for (uint32_t d = 0; ok && d < a.rank; d++)
		ok = a.shape[d] == shape[d];
	if (!ok) {
		fprintf(stderr, "neuron-profile: input '%s': %s holds %s, the model expects %s: save the array "
			"with that dtype and shape\n", t->name, path,
			tool_describe(a.dtype, a.rank, a.shape, got, sizeof(got)),
			tool_describe(dt, t->ndim, shape, want, sizeof(want)));
		npy_array_free(&a);
		return EXIT_INPUT;
	}
	memcpy(buf, a.data, a.nbytes);
	npy_array_free(&a);
	return 0;
}

static int capture(const capture_opts_t *o)
{
	char err[512], sbuf[256];
	void *neff;
	size_t size;
	if (ns_read_file(o->neff, 0, 64, &neff, &size, err, sizeof(err))) {
		fprintf(stderr, "neuron-profile: %s\n", err);
		return EXIT_INPUT;
	}
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: nrt_init failed: %s\n", tool_status_str(st, sbuf, sizeof(sbuf)));
		free(neff);
		return TOOL_EXIT_RUNTIME;
	}
	int rc = 0;
	nrt_model_t *model = NULL;
	nrt_tensor_info_array_t *info = NULL;
	nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
	nrt_tensor_t **tensors = NULL;
	bool *used = calloc((size_t)o->n_inputs + 1, sizeof(*used));
	st = nrt_load(neff, size, 0, 1, &model);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: cannot load '%s': %s\n", o->neff, tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = st == NRT_INVALID || st == NRT_UNSUPPORTED_NEFF_VERSION ? EXIT_INPUT : TOOL_EXIT_RUNTIME;
		goto out;
	}
	if ((st = nrt_get_model_tensor_info(model, &info)) != NRT_SUCCESS || !used ||
	    nrt_allocate_tensor_set(&in_set) != NRT_SUCCESS || nrt_allocate_tensor_set(&out_set) != NRT_SUCCESS ||
	    !(tensors = calloc(info->tensor_count + 1, sizeof(*tensors)))) {
		fprintf(stderr, "neuron-profile: preparing the model's tensors failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = TOOL_EXIT_RUNTIME;
		goto out;
	}
	for (uint64_t i = 0; i < info->tensor_count && !rc; i++) {
		const nrt_tensor_info_t *t = &info->tensor_array[i];
		bool is_in = t->usage == NRT_TENSOR_USAGE_INPUT;
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size, t->name, &tensors[i]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(is_in ? in_set : out_set, t->name, tensors[i]);
		if (st != NRT_SUCCESS) {
			fprintf(stderr, "neuron-profile: tensor '%s' (%zu bytes): %s\n", t->name, t->size,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		if (!is_in || !t->size)
			continue;
		void *buf = malloc(t->size);
		if (!buf) {
			fprintf(stderr, "neuron-profile: out of memory for input '%s'\n", t->name);
			rc = TOOL_EXIT_RUNTIME;
			break;
		}
		rc = capture_input(o, t, buf, used);
		if (!rc && (st = nrt_tensor_write(tensors[i], buf, 0, t->size)) != NRT_SUCCESS) {
			fprintf(stderr, "neuron-profile: writing input '%s': %s\n", t->name,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			rc = TOOL_EXIT_RUNTIME;
		}
		free(buf);
	}
	for (int k = 0; !rc && k < o->n_inputs; k++) {
		if (used[k])
			continue;
		fprintf(stderr, "neuron-profile: input '%s': the model has no input of that name; its inputs are:",
			o->inputs[2 * k]);
		for (uint64_t i = 0; i < info->tensor_count; i++)
			if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
				fprintf(stderr, " %s", info->tensor_array[i].name);
		fprintf(stderr, "\n");
		rc = EXIT_INPUT;
	}
	if (rc)
		goto out;
	if ((st = nrt_profile_start(model, o->session)) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: cannot start the profile for '%s': %s\n", o->session,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		/* NRT_INVALID: the profile's path cannot be written (the runtime said why) */
		rc = st == NRT_INVALID ? TOOL_EXIT_OUTPUT : TOOL_EXIT_RUNTIME;
		goto out;
	}
	NRT_STATUS est = nrt_execute(model, in_set, out_set);
	if ((st = nrt_profile_stop(o->session)) != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: writing the profile '%s' failed: %s\n", o->session,
			tool_status_str(st, sbuf, sizeof(sbuf)));
		rc = TOOL_EXIT_OUTPUT;
	}
	if (est != NRT_SUCCESS) {
		fprintf(stderr, "neuron-profile: the execution of '%s' failed: %s%s\n", o->neff,
			tool_status_str(est, sbuf, sizeof(sbuf)),
			o->ignore_exec_errors ? " (ignored: --ignore-exec-errors)" : "; the profile holds it "
			"(--ignore-exec-errors makes this not an error)");
		if (!o->ignore_exec_errors && !rc)
			rc = TOOL_EXIT_EXEC;
	}
	if (!rc || rc == TOOL_EXIT_EXEC)
		printf("profile: %s\n", o->session);
out:
	for (uint64_t i = 0; tensors && info && i < info->tensor_count; i++)
		if (tensors[i])
			nrt_tensor_free(&tensors[i]);
	free(tensors);
	free(used);
	nrt_destroy_tensor_set(&in_set);
	nrt_destroy_tensor_set(&out_set);
	if (info)
		nrt_free_model_tensor_info(info);
	if (model)
		nrt_unload(model);
	nrt_close();
	free(neff);
	return rc;
}

/* --top's value; false (with a message) when it is not 1..100000. */
static bool parse_top(const char *arg, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > 100000) {
		fprintf(stderr, "neuron-profile: --top wants an integer in 1..100000, got '%s'\n", arg);
		return false;
	}
	*out = (int)v;
	return true;
}

enum { OPT_IGNORE_EXEC = 0x200, OPT_FORMAT, OPT_OUTPUT, OPT_TOP };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, OPT_TOP },
		{ "neff", required_argument, NULL, 'n' },
		{ "neff-path", required_argument, NULL, 'n' },
		{ "session-file", required_argument, NULL, 's' },
		{ "session-dir", required_argument, NULL, 'd' },
		{ "ignore-exec-errors", no_argument, NULL, OPT_IGNORE_EXEC },
		{ "output-format", required_argument, NULL, OPT_FORMAT },
		{ "output-file", required_argument, NULL, OPT_OUTPUT },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int top = 10;
	const char *cmd = NULL, *neff = NULL, *session = NULL, *dir = NULL, *format = NULL, *output = NULL;
	bool ignore = false;
	char **operands = calloc((size_t)argc + 1, sizeof(*operands));
	int n_operands = 0;
	if (!operands) {
		fprintf(stderr, "neuron-profile: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	/* Options anywhere; the operands are the command and its arguments. */
	while (optind < argc) {
		int c = getopt_long(argc, argv, "+n:s:d:h", longopts, NULL);
		if (c == -1) {
			const char *arg = argv[optind++];
			if (!cmd)
				cmd = arg;
			else
				operands[n_operands++] = (char *)arg;
			continue;
		}
		switch (c) {
		case TOOL_OPT_VERSION: free(operands); return tool_print_version("neuron-profile", NULL);
		case 'h': fputs(usage_text, stdout); free(operands); return 0;
		case 'n': neff = optarg; break;
		case 's': session = optarg; break;
		case 'd': dir = optarg; break;
		case OPT_IGNORE_EXEC: ignore = true; break;
		case OPT_FORMAT: format = optarg; break;
		case OPT_OUTPUT: output = optarg; break;
		case OPT_TOP:
			if (!parse_top(optarg, &top))
				goto usage;
			break;
		default: goto usage;
		}
	}
	int rc;
	if (!cmd) {
		fprintf(stderr, "neuron-profile: missing command (capture, view or summary)\n");
		goto usage;
	} else if (strcmp(cmd, "summary") == 0) {
		/* neuronsim's command: -n is --top here, as before capture/view existed */
		if (neff && !parse_top(neff, &top))
			goto usage;
		if (!n_operands) {
			fprintf(stderr, "neuron-profile: summary needs a TRACE file\n");
			goto usage;
		}
		if (n_operands > 1) {
			fprintf(stderr, "neuron-profile: unexpected argument '%s' (one trace file)\n", operands[1]);
			goto usage;
		}
		if (session || dir || format || output || ignore) {
			fprintf(stderr, "neuron-profile: summary takes one TRACE file and --top N (-s, -d, "
				"--output-* and --ignore-exec-errors are capture's and view's)\n");
			goto usage;
		}
		rc = summary(operands[0], top);
	} else if (strcmp(cmd, "capture") == 0) {
		if (!neff || !session) {
			fprintf(stderr, "neuron-profile: capture needs -n NEFF and -s PROFILE\n");
			goto usage;
		}
		if (n_operands % 2 || dir || format || output) {
			fprintf(stderr, "neuron-profile: capture's inputs are NAME FILE.npy pairs%s\n",
				dir || format || output ? "; -d, --output-format and --output-file are view's" : "");
			goto usage;
		}
		capture_opts_t co = { neff, session, ignore, operands, n_operands / 2 };
		rc = capture(&co);
	} else if (strcmp(cmd, "view") == 0) {
		if (n_operands || ignore) {
			fprintf(stderr, "neuron-profile: view takes no operands and no --ignore-exec-errors: name "
				"the profile with -s PROFILE or -d DIR\n");
			goto usage;
		}
		view_opts_t vo = { neff, session, dir, format ? format : "summary-text", output, top };
		rc = view(&vo);
	} else {
		fprintf(stderr, "neuron-profile: unknown command '%s' (capture, view or summary)\n", cmd);
		goto usage;
	}
	free(operands);
	return rc;
usage:
	free(operands);
	fprintf(stderr, "Try 'neuron-profile --help'.\n");
	return EXIT_USAGE;
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
		return EXIT_INPUT;
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
			if (!copy || !push((void **)v, n, cap, sizeof(**v))) {
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
