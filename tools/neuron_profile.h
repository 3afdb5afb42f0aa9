/* neuron-profile: what its subcommands share: the model of a Chrome trace that libnrt's profiler writes (device spans, jobs, track names) and reading one, the tables, and the subcommands' entry points. */
#ifndef NEURON_PROFILE_H
#define NEURON_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct span {
	const char *name;      /* borrowed from the JSON document */
	const char *op_type;
	double ts, dur;        /* microseconds */
	double flops;
	int64_t pid, tid;
	int64_t exec_index;    /* args.exec_index: the model's execution, -1 if none */
} span_t;

typedef struct job {
	int64_t pid;
	double ts, dur;
	json_t *busy;          /* args.engine_busy_ns, borrowed */
	const char *model;     /* args.model, "" if none */
	int64_t exec_index;    /* args.exec_index, -1 if none */
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

/* neuron_profile_trace.c */
/* Makes room for one more element of size bytes in the growing array *v of *n
 * elements (capacity *cap); false when out of memory (*v unchanged). */
bool nprof_push(void **v, size_t *n, size_t *cap, size_t size);
/* The name of track (pid, tid), tid -1 for the process; "pid N"/"tid N" in buf
 * when the trace names none. */
const char *nprof_track_name(const trace_t *t, int64_t pid, int64_t tid, char *buf, size_t len);
/* Reads the trace at path into *out_root (the caller's, json_decref) and its
 * model into *t (free with nprof_trace_free). TOOL_EXIT_INPUT with the message
 * printed. */
int nprof_load_trace(const char *path, json_t **out_root, trace_t *t);
void nprof_trace_free(trace_t *t);
/* The traceEvents array of a trace document (the document itself when it is one). */
json_t *nprof_trace_events(json_t *root);

/* neuron_profile_summary.c: neuronsim's tables (header, top instructions and
 * ops, engines and gaps) of all but each model's first `warmup` executions;
 * sorts t's spans and jobs and drops those it leaves out. */
void nprof_print_tables(const char *path, trace_t *t, int top, int warmup);

/* The subcommands; an exit status (TOOL_EXIT_*). */
typedef struct view_opts {
	const char *neff, *session, *dir, *format, *output;
	int top, warmup;
} view_opts_t;

typedef struct capture_opts {
	const char *neff, *session;
	bool ignore_exec_errors;
	char **inputs;          /* NAME FILE pairs */
	int n_inputs;           /* pairs */
} capture_opts_t;

int nprof_summary(const char *path, int top, int warmup); /* neuron_profile_summary.c */
int nprof_view(const view_opts_t *o);           /* neuron_profile_view.c */
int nprof_capture(const capture_opts_t *o);     /* neuron_profile_capture.c */

#endif /* NEURON_PROFILE_H */
