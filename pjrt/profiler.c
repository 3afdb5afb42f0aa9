/* The PJRT profiler extension: lets a framework's profiler (XLA's PluginTracer, which torch_xla starts for every plugin) start, stop and collect the plugin's trace as a serialized tensorflow.profiler.XSpace. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api_profiler_extension.h"
#include "pjrt_internal.h"

/*
 * Lifecycle: create -> start -> stop -> collect_data (any number of times) ->
 * destroy. A profiler may be started again after it stopped (a new window).
 * The args of create/destroy/start/stop/collect_data carry no struct_size from
 * XLA's PluginTracer (it leaves it unset), so it is not checked here.
 */

typedef enum prof_state {
	PROF_CREATED,
	PROF_STARTED,
	PROF_STOPPED,
} prof_state_t;

struct PLUGIN_Profiler {
	prof_state_t state;
	uint8_t *bytes;       /* the serialized XSpace of the last window (owned) */
	size_t size;
};

struct PLUGIN_Profiler_Error {
	PJRT_Error_Code code;
	char *message;        /* owned; NULL only in the static out-of-memory error */
};

static PLUGIN_Profiler_Error prof_oom = { PJRT_Error_Code_RESOURCE_EXHAUSTED, NULL };
static const char prof_oom_msg[] = "neuronsim PJRT profiler: out of memory";

/* At most one profiler is started at a time: libnrt has one profiling session. */
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static PLUGIN_Profiler *prof_active;

static PLUGIN_Profiler_Error *prof_error(PJRT_Error_Code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static PLUGIN_Profiler_Error *prof_error(PJRT_Error_Code code, const char *fmt, ...)
{
	PLUGIN_Profiler_Error *e = malloc(sizeof(*e));
	if (!e)
		return &prof_oom;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&e->message, fmt, ap);
	va_end(ap);
	if (n < 0) {
		free(e);
		return &prof_oom;
	}
	e->code = code;
	return e;
}

static void prof_error_destroy(PLUGIN_Profiler_Error_Destroy_Args *args)
{
	if (!args || !args->error || args->error == &prof_oom)
		return;
	free(args->error->message);
	free(args->error);
}

static void prof_error_message(PLUGIN_Profiler_Error_Message_Args *args)
{
	const PLUGIN_Profiler_Error *e = args->error;
	const char *m = (!e || !e->message) ? prof_oom_msg : e->message;
	args->message = m;
	args->message_size = strlen(m);
}

static PLUGIN_Profiler_Error *prof_error_get_code(PLUGIN_Profiler_Error_GetCode_Args *args)
{
	if (!args->error)
		return prof_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PLUGIN_Profiler_Error_GetCode: error is NULL");
	args->code = (int)args->error->code;
	return NULL;
}

static PLUGIN_Profiler_Error *prof_create(PLUGIN_Profiler_Create_Args *args)
{
	/* args->options (tensorflow.ProfileOptions) select nothing here: the
	 * device trace is all this plugin records. */
	PLUGIN_Profiler *p = calloc(1, sizeof(*p));
	if (!p)
		return &prof_oom;
	p->state = PROF_CREATED;
	args->profiler = p;
	return NULL;
}

static PLUGIN_Profiler_Error *prof_destroy(PLUGIN_Profiler_Destroy_Args *args)
{
	PLUGIN_Profiler *p = args->profiler;
	if (!p)
		return NULL;
	pthread_mutex_lock(&prof_lock);
	if (prof_active == p)
		prof_active = NULL;
	pthread_mutex_unlock(&prof_lock);
	free(p->bytes);
	free(p);
	return NULL;
}

static PLUGIN_Profiler_Error *prof_start(PLUGIN_Profiler_Start_Args *args)
{
	PLUGIN_Profiler *p = args->profiler;
	if (!p)
		return prof_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PLUGIN_Profiler_Start: profiler is NULL");
	if (p->state == PROF_STARTED)
		return prof_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "PLUGIN_Profiler_Start: this profiler is already started");
	pthread_mutex_lock(&prof_lock);
	if (prof_active) {
		pthread_mutex_unlock(&prof_lock);
		return prof_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "PLUGIN_Profiler_Start: another neuronsim profiler is started in "
				  "this process; stop it first (libnrt records one session at a time)");
	}
	prof_active = p;
	pthread_mutex_unlock(&prof_lock);
	free(p->bytes);
	p->bytes = NULL;
	p->size = 0;
	p->state = PROF_STARTED;
	return NULL;
}

static PLUGIN_Profiler_Error *prof_stop(PLUGIN_Profiler_Stop_Args *args)
{
	PLUGIN_Profiler *p = args->profiler;
	if (!p)
		return prof_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PLUGIN_Profiler_Stop: profiler is NULL");
	if (p->state != PROF_STARTED)
		return prof_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "PLUGIN_Profiler_Stop: this profiler is not started");
	pthread_mutex_lock(&prof_lock);
	prof_active = NULL;
	pthread_mutex_unlock(&prof_lock);
	p->state = PROF_STOPPED;
	return NULL;
}

static PLUGIN_Profiler_Error *prof_collect_data(PLUGIN_Profiler_CollectData_Args *args)
{
	PLUGIN_Profiler *p = args->profiler;
	if (!p)
		return prof_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PLUGIN_Profiler_CollectData: profiler is NULL");
	if (p->state == PROF_STARTED)
		return prof_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "PLUGIN_Profiler_CollectData: the profiler is running; stop it first");
	if (!args->buffer) {
		/* The size, and the bytes themselves (XLA's PluginTracer reads them
		 * from here without a second call). */
		args->buffer = p->bytes;
		args->buffer_size_in_bytes = p->size;
		return NULL;
	}
	if (args->buffer != p->bytes && p->size)
		memcpy(args->buffer, p->bytes, p->size);
	args->buffer_size_in_bytes = p->size;
	return NULL;
}

static PLUGIN_Profiler_Api prof_api = {
	.struct_size = PLUGIN_Profiler_Api_STRUCT_SIZE,
	.priv = NULL,
	.error_destroy = prof_error_destroy,
	.error_message = prof_error_message,
	.error_get_code = prof_error_get_code,
	.create = prof_create,
	.destroy = prof_destroy,
	.start = prof_start,
	.stop = prof_stop,
	.collect_data = prof_collect_data,
};

PJRT_Profiler_Extension pjrt_profiler_extension = {
	.struct_size = PJRT_Profiler_Extension_STRUCT_SIZE,
	.type = PJRT_Extension_Type_Profiler,
	.next = NULL,
	.profiler_api = &prof_api,
	.traceme_context_id = 0,
};
