/* Analyze mode (NEURONSIM_PJRT_ANALYZE=DIR): per-graph analyze reports instead of NEFFs, zero-filled outputs instead of executions, for neuronsim-analyze. */
#include "analyze.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const char *g_dir;        /* NULL: off */
static atomic_uint g_graphs;     /* reports written by this process */

static void read_env(void)
{
	const char *v = getenv("NEURONSIM_PJRT_ANALYZE");
	g_dir = v && *v ? v : NULL;
}

const char *pjrt_analyze_dir(void)
{
	pthread_once(&g_once, read_env);
	return g_dir;
}

/* Writes obj to DIR/PID-NNNNNN-MODULE.json whole or not at all (atomic_file), so
 * the tool never reads half a report. */
static PJRT_Error *write_report(const char *dir, const char *name, json_t *obj)
{
	char safe[128], path[4096];
	size_t n = 0;
	for (const char *s = name ? name : "module"; *s && n + 1 < sizeof(safe); s++)
		safe[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
					    *s == '.' || *s == '_' || *s == '-'
				    ? *s
				    : '_';
	safe[n] = '\0';
	unsigned idx = atomic_fetch_add(&g_graphs, 1);
	json_object_set_new(obj, "index", json_integer(idx));
	json_object_set_new(obj, "pid", json_integer((json_int_t)getpid()));
	if (ns_mkdir_p(dir, 0700) != 0)
		return pjrt_error(PJRT_Error_Code_INTERNAL,
				  "NEURONSIM_PJRT_ANALYZE=%s: cannot create the report directory: %s", dir,
				  strerror(errno));
	if (snprintf(path, sizeof(path), "%s/%ld-%06u-%s.json", dir, (long)getpid(), idx, safe) >=
	    (int)sizeof(path))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "NEURONSIM_PJRT_ANALYZE=%s: the directory name is too long", dir);
	char *text = json_dumps(obj, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	if (!text)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "analyze '%s': out of memory", name);
	const char *step = "write";
	int rc = atomic_file_write_whole(path, text, strlen(text), ATOMIC_FILE_MODE_UMASK, &step);
	int e = errno;
	free(text);
	if (rc != 0)
		return pjrt_error(PJRT_Error_Code_INTERNAL, "NEURONSIM_PJRT_ANALYZE: cannot %s %s: %s", step,
				  path, strerror(e));
	if (pjrt_trace_on())
		pjrt_log("analyze: '%s' -> %s", name, path);
	return NULL;
}

PJRT_Error *pjrt_analyze_program(const char *format, const uint8_t *code, size_t size, const char *name)
{
	const char *dir = pjrt_analyze_dir();
	bool proto = strcmp(format, PJRT_FORMAT_HLO) == 0;
	ncc_module_t *m = NULL;
	ncc_error_t nerr;
	memset(&nerr, 0, sizeof(nerr));
	ncc_status_t st = proto ? ncc_parse_hlo_proto(code, size, name, &m, &nerr)
				: ncc_parse_hlo((const char *)code, size, name, &m, &nerr);
	if (st == NCC_OK)
		st = ncc_verify(m, &nerr);
	char *report = NULL;
	ncc_analyze_summary_t sum;
	memset(&sum, 0, sizeof(sum));
	/* verbosity 1: the tool drops the HLO lists when asked for the default 2 */
	if (st == NCC_OK)
		st = ncc_analyze_module(m, 1, &report, &sum, &nerr);
	ncc_module_free(m);
	if (st == NCC_ERR_NOMEM) {
		free(report);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "analyze '%s': out of memory", name);
	}
	char hash[17];
	snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)XXH64(code, size, 0));
	json_t *obj = json_object();
	json_t *rep = report ? json_loads(report, 0, NULL) : NULL;
	free(report);
	if (!obj || (st == NCC_OK && !rep)) {
		json_decref(obj);
		json_decref(rep);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "analyze '%s': out of memory", name);
	}
	json_object_set_new(obj, "module", json_string(name ? name : ""));
	json_object_set_new(obj, "format", json_string(format));
	json_object_set_new(obj, "program_hash", json_string(hash));
	if (st == NCC_OK) {
		json_object_set_new(obj, "total", json_integer(sum.total));
		json_object_set_new(obj, "supported", json_integer(sum.supported));
		json_object_set_new(obj, "report", rep);
	} else {
		json_object_set_new(obj, "error", json_sprintf("%s: %s", ncc_status_name(st), nerr.msg));
	}
	PJRT_Error *err = write_report(dir, name, obj);
	json_decref(obj);
	return err;
}

PJRT_Error *pjrt_analyze_exec_init(pjrt_exec_t *e)
{
	size_t np = e->sig.n_params, nr = e->sig.n_results;
	e->alias = malloc((nr + 1) * sizeof(*e->alias));
	e->in_sizes = calloc(np + 1, sizeof(*e->in_sizes));
	e->out_sizes = calloc(nr + 1, sizeof(*e->out_sizes));
	if (!e->alias || !e->in_sizes || !e->out_sizes)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	for (size_t i = 0; i < np; i++)
		e->in_sizes[i] = e->sig.params[i].nbytes;
	for (size_t k = 0; k < nr; k++) {
		e->alias[k] = -1;
		e->out_sizes[k] = e->sig.results[k].nbytes;
	}
	/* no NEFF to hash: the program, so distinct graphs stay distinct */
	XXH128_hash_t fp = XXH3_128bits(e->program, e->program_size);
	snprintf(e->fingerprint, sizeof(e->fingerprint), "%016llx%016llx", (unsigned long long)fp.high64,
		 (unsigned long long)fp.low64);
	return NULL;
}

PJRT_Error *pjrt_analyze_run(pjrt_exec_t *e, pjrt_device_t *dev, PJRT_Buffer **outv)
{
	PJRT_Error *err = NULL;
	size_t k = 0;
	for (; k < e->sig.n_results && !err; k++) {
		const pjrt_array_t *a = &e->sig.results[k];
		nrt_tensor_t *t = NULL;
		/* pjrt_tensor_new zero-fills; a zero-sized output has no tensor */
		err = pjrt_tensor_new(dev, a->nbytes, "analyze_output", &t);
		if (!err)
			err = pjrt_buffer_wrap(dev, a->type, a->rank, a->dims, t, &outv[k]);
	}
	if (err) /* outputs [0, k - 1) were wrapped */
		pjrt_buffers_destroy(outv, k - 1);
	return err;
}
