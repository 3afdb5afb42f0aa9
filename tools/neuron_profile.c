/* neuron-profile: summarises a Chrome trace written by the libnrt profiler: top instructions and HLO ops, engine busy time, idle gaps. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tool_common.h"

static const char usage_text[] =
	"Usage: neuron-profile summary TRACE [--top N]\n"
	"       neuron-profile --help | --version\n"
	"Summarise a profile written by libnrt (nrt_profile_stop, or NEURON_RT_INSPECT_ENABLE=1:\n"
	"OUTPUT_DIR/plugins/profile/RUN/HOST.trace.json.gz). TRACE is Chrome trace event JSON,\n"
	"plain or gzip-compressed.\n"
	"\n"
	"Prints, from the device trace:\n"
	"  - the top HLO instructions and the top HLO ops (op_type) by device time, with\n"
	"    their FLOPs and achieved GFLOP/s;\n"
	"  - per core and engine: busy time, the share of the time the core ran jobs,\n"
	"    and the simulator's own busy time for the same jobs;\n"
	"  - the largest idle gaps between two instructions of an engine in one job\n"
	"    (time it waited on another engine).\n"
	"\n"
	"Options:\n"
	"  -n, --top N   rows per table (default 10)\n"
	"  -h, --help    show this help\n"
	"      --version print the version and exit\n"
	"\n"
	"Exit status: 0 success; 2 bad command line; 3 the trace cannot be read or is not\n"
	"a Chrome trace.\n";

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

static int summary(const char *path, int top)
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
	trace_t t = { 0 };
	if (collect(events, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "neuron-profile: '%s': %s\n", path, err);
		json_decref(root);
		return EXIT_INPUT;
	}
	double total = 0;
	for (size_t i = 0; i < t.n_spans; i++)
		total += t.spans[i].dur;
	printf("trace: %s\n", path);
	printf("  %zu device span(s) (%.3f us of engine time) in %zu job(s); %zu host event(s)",
	       t.n_spans, total, t.n_jobs, t.n_host_events);
	if (t.t_max >= t.t_min)
		printf("; window %.3f us", t.t_max - t.t_min);
	printf("\n");
	if (t.spans_dropped)
		printf("  warning: %llu span(s) were dropped while recording (buffer too small for a "
		       "looping program's first execution); totals are short of them\n",
		       (unsigned long long)t.spans_dropped);
	if (t.n_malformed)
		printf("  warning: %zu malformed event(s) skipped\n", t.n_malformed);
	if (!t.n_spans) {
		printf("  no device spans: record a device trace (nrt_profile_start, or "
		       "NEURON_RT_INSPECT_DEVICE_PROFILE=1 or session)\n");
	} else {
		print_top(&t, false, top, total);
		print_top(&t, true, top, total);
		qsort(t.spans, t.n_spans, sizeof(*t.spans), cmp_span_track);
		if (t.n_jobs) /* a trace without job events has no array */
			qsort(t.jobs, t.n_jobs, sizeof(*t.jobs), cmp_job);
		print_engines_and_gaps(&t, top);
	}
	free(t.spans);
	free(t.jobs);
	free(t.names);
	json_decref(root);
	return 0;
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int top = 10;
	const char *cmd = NULL, *path = NULL;
	/* Options anywhere; the operands are the command and the trace. */
	while (optind < argc) {
		int c = getopt_long(argc, argv, "+n:h", longopts, NULL);
		if (c == -1) {
			const char *arg = argv[optind++];
			if (!cmd) {
				cmd = arg;
			} else if (!path) {
				path = arg;
			} else {
				fprintf(stderr, "neuron-profile: unexpected argument '%s' (one trace file)\n",
					arg);
				goto usage;
			}
			continue;
		}
		if (c == TOOL_OPT_VERSION)
			return tool_print_version("neuron-profile", NULL);
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		}
		if (c != 'n' || !parse_top(optarg, &top))
			goto usage;
	}
	if (!cmd) {
		fprintf(stderr, "neuron-profile: missing command (summary)\n");
		goto usage;
	}
	if (strcmp(cmd, "summary") != 0) {
		fprintf(stderr, "neuron-profile: unknown command '%s' (the command is summary)\n", cmd);
		goto usage;
	}
	if (!path) {
		fprintf(stderr, "neuron-profile: summary needs a TRACE file\n");
		goto usage;
	}
	return summary(path, top);
usage:
	fprintf(stderr, "Try 'neuron-profile --help'.\n");
	return EXIT_USAGE;
}
