/* Writes a recorded trace as Chrome trace event JSON (jansson per event, streamed, gzip through zlib). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <zlib.h>

#include "internal.h"
#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"
#include "neuronsim/json_str.h"
#include "nrt/nrt_version.h"
#include "trace.h"

/* Device processes get pids far above any kernel pid (pid_max <= 2^22). */
#define DEVICE_PID_BASE (1 << 24)
#define JOBS_TID ISA_ENGINE_COUNT
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static const char *const engine_names[ISA_ENGINE_COUNT] = {
	"tensor engine", "vector engine", "scalar engine", "gpsimd engine", "dma engine"
};

/* Output: a gzip stream or a plain file; the first error sticks. */
typedef struct sink {
	gzFile gz;
	FILE *f;
	int failed;
	int err;              /* errno of the failure, 0 if zlib's */
	const char *zerr;
} sink_t;

static void sink_put(sink_t *s, const char *p, size_t n)
{
	if (s->failed || !n)
		return;
	if (s->gz) {
		if (gzwrite(s->gz, p, (unsigned)n) != (int)n) {
			int zcode;
			s->zerr = gzerror(s->gz, &zcode);
			s->err = zcode == Z_ERRNO ? errno : 0;
			s->failed = 1;
		}
	} else if (fwrite(p, 1, n, s->f) != n) {
		s->err = errno;
		s->failed = 1;
	}
}

static void sink_str(sink_t *s, const char *p)
{
	sink_put(s, p, strlen(p));
}

/* Appends one event (consumed) to the array. */
static void put_event(sink_t *s, json_t *ev, bool *first)
{
	if (!ev) {
		s->failed = 1;
		s->err = ENOMEM;
		return;
	}
	char stack[1024];
	size_t n = json_dumpb(ev, stack, sizeof(stack), DUMP_FLAGS);
	if (!*first)
		sink_put(s, ",\n", 2);
	*first = false;
	if (n > 0 && n <= sizeof(stack)) {
		sink_put(s, stack, n);
	} else {
		char *big = json_dumps(ev, DUMP_FLAGS);
		if (!big) {
			s->failed = 1;
			s->err = ENOMEM;
		} else {
			sink_str(s, big);
			free(big);
		}
	}
	json_decref(ev);
}

static double us(uint64_t t, uint64_t base)
{
	return t >= base ? (double)(t - base) / 1000.0 : -(double)(base - t) / 1000.0;
}

static json_t *meta_event(const char *what, int64_t pid, int64_t tid, const char *key, json_t *value)
{
	json_t *args = json_object();
	json_object_set_new(args, key, value);
	json_t *ev = json_object();
	json_object_set_new(ev, "name", json_string(what));
	json_object_set_new(ev, "ph", json_string("M"));
	json_object_set_new(ev, "pid", json_integer(pid));
	json_object_set_new(ev, "tid", json_integer(tid));
	json_object_set_new(ev, "args", args);
	return ev;
}

static json_t *host_event(const nrt_trace_event_t *e, int64_t pid, uint32_t tid, uint64_t base)
{
	static const char *const cats[] = { "user", "runtime", "transfer", "step", "memory" };
	json_t *ev = json_object();
	json_t *args = json_object();
	json_object_set_new(ev, "name", ns_json_string_lossy(e->name));
	json_object_set_new(ev, "cat", json_string(e->cat < 5 ? cats[e->cat] : "runtime"));
	json_object_set_new(ev, "pid", json_integer(pid));
	json_object_set_new(ev, "tid", json_integer(tid));
	json_object_set_new(ev, "ts", json_real(us(e->start_ns, base)));
	if (e->kind == NRT_TRACE_INSTANT) {
		json_object_set_new(ev, "ph", json_string("i"));
		json_object_set_new(ev, "s", json_string("t"));
	} else {
		json_object_set_new(ev, "ph", json_string("X"));
		json_object_set_new(ev, "dur", json_real((double)(e->end_ns - e->start_ns) / 1000.0));
	}
	switch (e->cat) {
	case NRT_TRACE_CAT_RUNTIME:
		json_object_set_new(args, "model", ns_json_string_lossy(e->label));
		if (e->has_value)
			json_object_set_new(args, "exec_index", json_integer((json_int_t)e->value));
		else
			json_object_set_new(args, "bytes", json_integer((json_int_t)e->value));
		json_object_set_new(args, "status", json_string(nrt_get_status_as_str(e->status)));
		break;
	case NRT_TRACE_CAT_TRANSFER:
		json_object_set_new(args, "tensor", ns_json_string_lossy(e->label));
		json_object_set_new(args, "bytes", json_integer((json_int_t)e->value));
		break;
	case NRT_TRACE_CAT_STEP:
		json_object_set_new(args, "step", json_integer((json_int_t)e->value));
		break;
	case NRT_TRACE_CAT_MEMORY:
		json_object_set_new(args, "category", ns_json_string_lossy(e->label));
		json_object_set_new(args, "bytes", json_integer((json_int_t)e->value));
		json_object_set_new(args, "nc", json_integer(e->status));
		break;
	default:
		break;
	}
	json_object_set_new(ev, "args", args);
	return ev;
}

static json_t *span_event(const nrt_trace_job_t *j, const nrt_backend_span_t *sp, uint64_t base)
{
	const nrt_trace_model_t *tm = j->model;
	uint32_t c = j->model_core;
	const nrt_trace_insn_t *ti = NULL;
	if (sp->engine < ISA_ENGINE_COUNT && c < NEFF_MAX_CORES && sp->insn_index < tm->count[c][sp->engine])
		ti = &tm->insns[c][sp->engine][sp->insn_index];
	const char *hlo, *op, *file;
	uint32_t line;
	nrt_trace_model_lookup(tm, sp->debug_id, &hlo, &op, &file, &line);
	const char *opcode = ti ? isa_opcode_name(ti->opcode) : "?";
	json_t *ev = json_object();
	json_t *args = json_object();
	/* An instruction without a debug entry is named by its opcode. */
	json_object_set_new(ev, "name", ns_json_string_lossy(hlo[0] ? hlo : opcode));
	json_object_set_new(ev, "cat", json_string("device"));
	json_object_set_new(ev, "ph", json_string("X"));
	json_object_set_new(ev, "pid", json_integer(DEVICE_PID_BASE + (json_int_t)j->logical_nc));
	json_object_set_new(ev, "tid", json_integer(sp->engine));
	json_object_set_new(ev, "ts", json_real(us(sp->start_ns, base)));
	json_object_set_new(ev, "dur", json_real((double)(sp->end_ns - sp->start_ns) / 1000.0));
	json_object_set_new(args, "hlo", ns_json_string_lossy(hlo));
	json_object_set_new(args, "op_type", ns_json_string_lossy(op));
	json_object_set_new(args, "opcode", json_string(opcode));
	json_object_set_new(args, "insn_index", json_integer(sp->insn_index));
	json_object_set_new(args, "flops", json_integer(ti ? (json_int_t)ti->flops : 0));
	json_object_set_new(args, "bytes", json_integer(ti ? (json_int_t)ti->bytes : 0));
	json_object_set_new(args, "model", ns_json_string_lossy(tm->name));
	json_object_set_new(args, "exec_index", json_integer((json_int_t)j->exec_index));
	if (file[0]) {
		char src[300];
		snprintf(src, sizeof(src), "%s:%u", file, line);
		json_object_set_new(args, "source", ns_json_string_lossy(src));
	}
	json_object_set_new(ev, "args", args);
	return ev;
}

static json_t *job_event(const nrt_trace_job_t *j, uint64_t base)
{
	char name[200];
	snprintf(name, sizeof(name), "%s #%llu", j->model->name, (unsigned long long)j->exec_index);
	json_t *ev = json_object();
	json_t *args = json_object();
	json_t *busy = json_object();
	json_object_set_new(ev, "name", ns_json_string_lossy(name));
	json_object_set_new(ev, "cat", json_string("job"));
	json_object_set_new(ev, "ph", json_string("X"));
	json_object_set_new(ev, "pid", json_integer(DEVICE_PID_BASE + (json_int_t)j->logical_nc));
	json_object_set_new(ev, "tid", json_integer(JOBS_TID));
	json_object_set_new(ev, "ts", json_real(us(j->start_ns, base)));
	json_object_set_new(ev, "dur", json_real((double)(j->end_ns - j->start_ns) / 1000.0));
	json_object_set_new(args, "model", ns_json_string_lossy(j->model->name));
	json_object_set_new(args, "exec_index", json_integer((json_int_t)j->exec_index));
	json_object_set_new(args, "model_core", json_integer(j->model_core));
	json_object_set_new(args, "status", json_string(nrt_get_status_as_str(j->status)));
	for (int e = 0; e < ISA_ENGINE_COUNT; e++)
		json_object_set_new(busy, isa_engine_name(e), json_integer((json_int_t)j->busy_ns[e]));
	json_object_set_new(args, "engine_busy_ns", busy);
	json_object_set_new(args, "insns_executed", json_integer((json_int_t)j->insns_executed));
	json_object_set_new(args, "spans", json_integer((json_int_t)j->n_spans));
	json_object_set_new(args, "spans_dropped", json_integer((json_int_t)j->dropped));
	json_object_set_new(ev, "args", args);
	return ev;
}

/* A window holds a job exactly when it holds its execution's nrt_execute
 * span, which the snapshot picks by its start: by the job's own start, an
 * execution called just before the window and queued behind another put its
 * device spans in a window that had no nrt_execute for them, before the
 * window's first one (a flaky check of the TensorBoard profile). */
static bool job_in(const nrt_trace_job_t *j, const nrt_trace_write_args_t *a)
{
	return j->exec_start_ns >= a->from_ns && j->exec_start_ns <= a->to_ns;
}

/* Everything after the opening of the file. */
static void write_body(sink_t *s, const nrt_trace_write_args_t *a, const nrt_trace_snapshot_t *snap)
{
	uint64_t base = a->from_ns;
	int64_t pid = getpid();
	uint64_t spans_dropped = 0;
	for (const nrt_trace_job_t *j = a->jobs; j; j = j->next)
		if (job_in(j, a))
			spans_dropped += j->dropped;

	json_t *other = json_object();
	json_object_set_new(other, "producer", json_string("neuronsim libnrt"));
	nrt_version_t ver = { 0 };
	char vbuf[64] = "?";
	if (nrt_get_version(&ver, sizeof(ver)) == NRT_SUCCESS)
		snprintf(vbuf, sizeof(vbuf), "%llu.%llu.%llu", (unsigned long long)ver.rt_major,
			 (unsigned long long)ver.rt_minor, (unsigned long long)ver.rt_patch);
	json_object_set_new(other, "runtime_version", json_string(vbuf));
	json_object_set_new(other, "session", json_string(a->session));
	json_object_set_new(other, "device_profile", json_string(a->device_profile));
	json_object_set_new(other, "backend", json_string(a->backend ? a->backend : "?"));
	json_object_set_new(other, "clock", json_string("CLOCK_MONOTONIC"));
	json_object_set_new(other, "base_ns", json_integer((json_int_t)base));
	json_object_set_new(other, "events_dropped", json_integer((json_int_t)snap->dropped));
	json_object_set_new(other, "jobs_dropped", json_integer((json_int_t)a->jobs_dropped));
	json_object_set_new(other, "spans_dropped", json_integer((json_int_t)spans_dropped));
	char *other_s = json_dumps(other, DUMP_FLAGS);
	json_decref(other);
	if (!other_s) {
		s->failed = 1;
		s->err = ENOMEM;
		return;
	}
	sink_str(s, "{\"displayTimeUnit\":\"ns\",\"otherData\":");
	sink_str(s, other_s);
	free(other_s);
	sink_str(s, ",\"traceEvents\":[\n");

	bool first = true;
	char pname[256];
	snprintf(pname, sizeof(pname), "%s (host, pid %lld)", program_invocation_short_name,
		 (long long)pid);
	put_event(s, meta_event("process_name", pid, 0, "name", json_string(pname)), &first);
	put_event(s, meta_event("process_sort_index", pid, 0, "sort_index", json_integer(0)), &first);
	for (uint32_t t = 0; t < snap->n_threads; t++) {
		const nrt_trace_thread_events_t *th = &snap->threads[t];
		put_event(s, meta_event("thread_name", pid, th->tid, "name", ns_json_string_lossy(th->name)), &first);
		for (uint64_t i = 0; i < th->n && !s->failed; i++)
			put_event(s, host_event(&th->events[i], pid, th->tid, base), &first);
	}

	/* Device processes: one per core that ran a traced job. */
	bool seen[NRT_MAX_CORES] = { false };
	for (const nrt_trace_job_t *j = a->jobs; j; j = j->next) {
		if (!job_in(j, a) || j->logical_nc >= NRT_MAX_CORES || seen[j->logical_nc])
			continue;
		seen[j->logical_nc] = true;
		int64_t dpid = DEVICE_PID_BASE + j->logical_nc;
		char name[96];
		snprintf(name, sizeof(name), "NeuronCore %u (device, physical core %u)", j->logical_nc,
			 j->global_nc);
		put_event(s, meta_event("process_name", dpid, 0, "name", json_string(name)), &first);
		put_event(s, meta_event("process_sort_index", dpid, 0, "sort_index",
					json_integer(1 + j->logical_nc)), &first);
		for (int e = 0; e <= JOBS_TID; e++) {
			put_event(s, meta_event("thread_name", dpid, e, "name",
						json_string(e < ISA_ENGINE_COUNT ? engine_names[e]
										: "jobs (simulator accounting)")),
				  &first);
			put_event(s, meta_event("thread_sort_index", dpid, e, "sort_index", json_integer(e)),
				  &first);
		}
	}
	for (const nrt_trace_job_t *j = a->jobs; j && !s->failed; j = j->next) {
		if (!job_in(j, a))
			continue;
		put_event(s, job_event(j, base), &first);
		for (uint64_t i = 0; i < j->n_spans && !s->failed; i++)
			put_event(s, span_event(j, &j->spans[i], base), &first);
	}
	sink_str(s, "\n]}\n");
}

ns_status_t nrt_trace_write(const nrt_trace_write_args_t *a)
{
	nrt_trace_snapshot_t snap;
	if (nrt_trace_snapshot(a->from_ns, a->to_ns, &snap) != NRT_SUCCESS)
		return nrt_status_make(NRT_RESOURCE, "out of memory collecting the trace for '%s'", a->path);
	/* Whole or nothing through an O_EXCL temporary next to the target: no
	 * predictable name an attacker could plant a symlink at, no half trace. */
	atomic_file_t af;
	const char *step = "";
	sink_t s = { 0 };
	if (atomic_file_open(&af, a->path, ATOMIC_FILE_MODE_UMASK, &step) == 0) {
		if (a->gzip) {
			/* zlib gets its own descriptor; gzclose closes only that one */
			int zfd = dup(af.fd);
			s.gz = zfd >= 0 ? gzdopen(zfd, "wb") : NULL;
			if (!s.gz && zfd >= 0)
				close(zfd);
		} else {
			s.f = atomic_file_stream(&af);
		}
		if (!s.gz && !s.f)
			atomic_file_abort(&af);
	}
	if (!s.gz && !s.f) {
		ns_status_t st = nrt_status_make(NRT_FAILURE, "cannot create trace file '%s': %s (does the "
						 "directory exist and is it writable?)", a->path,
						 strerror(errno ? errno : ENOMEM));
		nrt_trace_snapshot_free(&snap);
		return st;
	}
	write_body(&s, a, &snap);
	nrt_trace_snapshot_free(&snap);
	if (s.gz) {
		int zc = gzclose(s.gz);
		if (zc != Z_OK && !s.failed) {
			s.failed = 1;
			s.err = zc == Z_ERRNO ? errno : 0;
			s.zerr = "error closing the gzip stream";
		}
	}
	if (s.failed) {
		atomic_file_abort(&af);
	} else if (atomic_file_commit(&af, &step) != 0) {
		s.failed = 1;
		s.err = errno;
	}
	if (s.failed)
		return nrt_status_make(NRT_FAILURE, "writing trace file '%s' failed: %s", a->path,
				       s.err ? strerror(s.err) : s.zerr ? s.zerr : "zlib error");
	return NS_OK;
}

int nrt_trace_mkdirs(const char *dir)
{
	if (!dir[0]) {
		errno = ENOENT;
		return -1;
	}
	return ns_mkdir_p(dir, 0777);
}
