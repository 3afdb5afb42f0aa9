/* neuron-profile summary: neuronsim's tables of a trace: the top HLO instructions and ops by device time, engine busy time per core, the largest idle gaps. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_profile.h"
#include "neuronsim/quantile.h"
#include "tool_common.h"

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
				if (g > 0 && nprof_push((void **)&gaps, &n_gaps, &cap_g, sizeof(*gaps)))
					gaps[n_gaps++] = (gap_t){ pid, tid, prev->ts + prev->dur, g, prev->name,
								  sp->name };
				prev = sp;
			}
		}
		if (jobs_us <= 0) /* a trace without job events: the span window */
			jobs_us = t->spans[end - 1].ts + t->spans[end - 1].dur - t->spans[i].ts;
		char b1[64], b2[64], sb[32] = "-";
		const char *engine = nprof_track_name(t, pid, tid, b2, sizeof(b2));
		double sim = sim_busy(t, pid, engine);
		if (sim >= 0)
			snprintf(sb, sizeof(sb), "%.3f", sim);
		printf("  %-44s %-16s %12.3f %12.3f %6.2f%% %12s\n",
		       nprof_track_name(t, pid, -1, b1, sizeof(b1)), engine, busy, jobs_us,
		       jobs_us > 0 ? 100.0 * busy / jobs_us : 0.0, sb);
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
		       gaps[g].at - t->t_min, nprof_track_name(t, gaps[g].pid, -1, b1, sizeof(b1)),
		       nprof_track_name(t, gaps[g].pid, gaps[g].tid, b2, sizeof(b2)),
		       gaps[g].after, gaps[g].before);
	}
	if (!n_gaps)
		printf("  (none)\n");
	free(gaps);
}

/* Drops the spans and jobs of each model's first warmup executions (those
 * with an exec_index below it); returns how many spans and jobs went. */
static void drop_warmup(trace_t *t, int warmup, size_t *spans, size_t *jobs)
{
	size_t ns = 0, nj = 0;
	for (size_t i = 0; i < t->n_spans; i++)
		if (t->spans[i].exec_index < 0 || t->spans[i].exec_index >= warmup)
			t->spans[ns++] = t->spans[i];
	for (size_t i = 0; i < t->n_jobs; i++)
		if (t->jobs[i].exec_index < 0 || t->jobs[i].exec_index >= warmup)
			t->jobs[nj++] = t->jobs[i];
	*spans = t->n_spans - ns;
	*jobs = t->n_jobs - nj;
	t->n_spans = ns;
	t->n_jobs = nj;
}

/* A model whose first execution took FIRST_SLOW times its others' median
 * (and FIRST_SLOW_US more) weighs its first-touch costs (page faults of its
 * buffers, oneDNN's kernels generated on first use) on every table: a note
 * says so and how to leave it out. One note, for the first such model. */
#define FIRST_SLOW 1.5
#define FIRST_SLOW_US 100.0

static void note_slow_first_execution(const trace_t *t)
{
	double *others = malloc(t->n_jobs * sizeof(*others));
	if (!others)
		return;
	for (size_t i = 0; i < t->n_jobs; i++) {
		const job_t *first = &t->jobs[i];
		if (first->exec_index != 0)
			continue;
		size_t n = 0;
		for (size_t j = 0; j < t->n_jobs; j++)
			if (t->jobs[j].exec_index > 0 && t->jobs[j].pid == first->pid &&
			    strcmp(t->jobs[j].model, first->model) == 0)
				others[n++] = t->jobs[j].dur;
		if (n < 2)
			continue;
		double med = ns_quantile(others, n, 0.5);
		if (first->dur > FIRST_SLOW * med && first->dur - med > FIRST_SLOW_US) {
			printf("  note: %s's first execution took %.3f us, the median of its %zu others "
			       "%.3f us: its first-touch costs (page faults, kernels generated on first "
			       "use) weigh on the tables; --warmup 1 leaves each model's first execution "
			       "out\n", first->model[0] ? first->model : "a model", first->dur, n, med);
			break;
		}
	}
	free(others);
}

/* neuronsim's tables: header, top instructions and ops, engines and gaps. */
void nprof_print_tables(const char *path, trace_t *t, int top, int warmup)
{
	size_t dropped_spans = 0, dropped_jobs = 0;
	if (warmup > 0)
		drop_warmup(t, warmup, &dropped_spans, &dropped_jobs);
	double total = 0;
	for (size_t i = 0; i < t->n_spans; i++)
		total += t->spans[i].dur;
	printf("trace: %s\n", path);
	printf("  %zu device span(s) (%.3f us of engine time) in %zu job(s); %zu host event(s)",
	       t->n_spans, total, t->n_jobs, t->n_host_events);
	if (t->t_max >= t->t_min)
		printf("; window %.3f us", t->t_max - t->t_min);
	printf("\n");
	if (warmup > 0)
		printf("  left out (--warmup %d): %zu span(s) and %zu job(s) of each model's first "
		       "%d execution(s)\n", warmup, dropped_spans, dropped_jobs, warmup);
	else
		note_slow_first_execution(t);
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

int nprof_summary(const char *path, int top, int warmup)
{
	json_t *root;
	trace_t t;
	int rc = nprof_load_trace(path, &root, &t);
	if (rc)
		return rc;
	nprof_print_tables(path, &t, top, warmup);
	nprof_trace_free(&t);
	json_decref(root);
	return 0;
}
