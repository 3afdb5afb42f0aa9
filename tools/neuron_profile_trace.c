/* neuron-profile: reads a Chrome trace that libnrt's profiler wrote (plain or gzip) into the model of neuron_profile.h: device spans, jobs, track names. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "neuron_profile.h"
#include "tool_common.h"

#define MAX_TRACE_BYTES (8ull << 30)

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

bool nprof_push(void **v, size_t *n, size_t *cap, size_t size)
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

/* args.exec_index as an integer, -1 when absent or not a count (a bad value
 * must not reach a cast). */
static int64_t get_exec_index(json_t *args)
{
	double v;
	if (!get_num(args, "exec_index", &v) || !(v >= 0 && v <= 9007199254740992.0))
		return -1;
	return (int64_t)v;
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
			if (!nprof_push((void **)&t->names, &t->n_names, &cap_n, sizeof(*t->names)))
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
			if (!nprof_push((void **)&t->spans, &t->n_spans, &cap_s, sizeof(*t->spans)))
				goto nomem;
			double flops = 0;
			get_num(args, "flops", &flops);
			t->spans[t->n_spans++] = (span_t){ get_str(ev, "name", "?"),
							   get_str(args, "op_type", ""), ts, dur, flops, pid,
							   tid, get_exec_index(args) };
		} else if (strcmp(ph, "X") == 0 && strcmp(cat, "job") == 0) {
			if (!nprof_push((void **)&t->jobs, &t->n_jobs, &cap_j, sizeof(*t->jobs)))
				goto nomem;
			double dropped = 0;
			if (get_num(args, "spans_dropped", &dropped))
				t->spans_dropped += (uint64_t)dropped;
			t->jobs[t->n_jobs++] = (job_t){ pid, ts, dur, json_object_get(args, "engine_busy_ns"),
							get_str(args, "model", ""), get_exec_index(args) };
		} else {
			t->n_host_events++;
		}
	}
	return 0;
nomem:
	snprintf(err, err_len, "out of memory reading the events");
	return -1;
}

const char *nprof_track_name(const trace_t *t, int64_t pid, int64_t tid, char *buf, size_t len)
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

int nprof_load_trace(const char *path, json_t **out_root, trace_t *t)
{
	char err[1024];
	size_t len;
	char *text = read_trace(path, &len, err, sizeof(err));
	if (!text) {
		fprintf(stderr, "neuron-profile: %s\n", err);
		return TOOL_EXIT_INPUT;
	}
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!root) {
		fprintf(stderr, "neuron-profile: '%s' is not JSON (line %d, column %d: %s); is it a "
			"trace written by the profiler?\n", path, jerr.line, jerr.column, jerr.text);
		return TOOL_EXIT_INPUT;
	}
	json_t *events = nprof_trace_events(root);
	if (!json_is_array(events)) {
		fprintf(stderr, "neuron-profile: '%s' is not a Chrome trace: no traceEvents array\n", path);
		json_decref(root);
		return TOOL_EXIT_INPUT;
	}
	memset(t, 0, sizeof(*t));
	if (collect(events, t, err, sizeof(err)) != 0) {
		fprintf(stderr, "neuron-profile: '%s': %s\n", path, err);
		json_decref(root);
		return TOOL_EXIT_INPUT;
	}
	*out_root = root;
	return 0;
}

void nprof_trace_free(trace_t *t)
{
	free(t->spans);
	free(t->jobs);
	free(t->names);
}

json_t *nprof_trace_events(json_t *root)
{
	return json_is_array(root) ? root : json_object_get(root, "traceEvents");
}
