/* The system trace API (nrt_sys_trace.h): per-core event rings, filled by executions and async requests, fetched as JSON. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nrt/nrt_sys_trace.h"
#include "sys_trace.h"

#define MAX_NC 4096u
#define DEFAULT_MAX_EVENTS 1000000u

static const char *const type_names[NRT_SYS_TRACE_TYPE_COUNT] = {
	"nrt_execute", "nrta_tensor_op", "nrta_compute", "nrta_collectives",
};

int nrt_sys_trace_type_index(const char *name)
{
	for (int i = 0; name && i < NRT_SYS_TRACE_TYPE_COUNT; i++)
		if (strcmp(name, type_names[i]) == 0)
			return i;
	return -1;
}

struct nrt_sys_trace_config {
	uint64_t max_events_per_nc;
	uint8_t nc_off[MAX_NC / 8];
	bool type_off[NRT_SYS_TRACE_TYPE_COUNT];
};

struct nrt_sys_trace_fetch_options {
	uint64_t max_events_per_nc;
	uint64_t nc_idx;             /* UINT64_MAX: every core */
};

typedef struct sys_event {
	uint64_t start_ns, end_ns, value;
	int32_t status;
	uint8_t type;
	char name[32];
	char label[96];
} sys_event_t;

/* Grows up to the capture's cap (no large reservation for a quiet core),
 * then overwrites its oldest event. */
typedef struct ring {
	sys_event_t *ev;
	uint64_t alloc;              /* entries of ev */
	uint64_t head, count;        /* oldest at ev[head] */
	uint64_t dropped;            /* overwritten since the last fetch */
} ring_t;

/* Process-global, like the profiler's recorder and the metrics registry: a
 * capture may start before nrt_init and outlive nrt_close. */
static struct {
	pthread_mutex_t lock;
	atomic_bool on;
	nrt_sys_trace_config_t cfg;  /* of the running capture */
	ring_t *rings[MAX_NC];       /* allocated on a core's first event */
} g_st = { .lock = PTHREAD_MUTEX_INITIALIZER };

bool nrt_sys_trace_capturing(void)
{
	return atomic_load_explicit(&g_st.on, memory_order_relaxed);
}

/* Room for one more event at the tail of r (cap > 0); false when out of memory. */
static bool ring_reserve(ring_t *r, uint64_t cap)
{
	if (r->count < r->alloc || r->alloc >= cap)
		return true;
	uint64_t n = r->alloc ? 2 * r->alloc : 64;
	if (n > cap)
		n = cap;
	sys_event_t *ev = malloc(n * sizeof(*ev));
	if (!ev)
		return false;
	for (uint64_t i = 0; i < r->count; i++)
		ev[i] = r->ev[(r->head + i) % r->alloc];
	free(r->ev);
	r->ev = ev;
	r->alloc = n;
	r->head = 0;
	return true;
}

void nrt_sys_trace_record(uint32_t nc, nrt_sys_trace_type_t type, const char *name, const char *label,
			  uint64_t start_ns, uint64_t end_ns, NRT_STATUS status, uint64_t value)
{
	if (!nrt_sys_trace_capturing() || nc >= MAX_NC || (unsigned)type >= NRT_SYS_TRACE_TYPE_COUNT)
		return;
	pthread_mutex_lock(&g_st.lock);
	const nrt_sys_trace_config_t *c = &g_st.cfg;
	if (!atomic_load(&g_st.on) || (c->nc_off[nc / 8] >> (nc % 8) & 1) || c->type_off[type])
		goto out;
	ring_t *r = g_st.rings[nc];
	if (!r && !(r = g_st.rings[nc] = calloc(1, sizeof(*r))))
		goto out;
	sys_event_t *e;
	if (r->count == c->max_events_per_nc) {
		e = &r->ev[r->head];            /* full: the oldest goes */
		r->head = (r->head + 1) % r->alloc;
		r->dropped++;
	} else if (ring_reserve(r, c->max_events_per_nc)) {
		e = &r->ev[(r->head + r->count) % r->alloc];
		r->count++;
	} else {
		r->dropped++;
		goto out;
	}
	memset(e, 0, sizeof(*e));
	e->start_ns = start_ns;
	e->end_ns = end_ns;
	e->value = value;
	e->status = (int32_t)status;
	e->type = (uint8_t)type;
	snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
	snprintf(e->label, sizeof(e->label), "%s", label ? label : "");
out:
	pthread_mutex_unlock(&g_st.lock);
}

static void rings_free_locked(void)
{
	for (uint32_t i = 0; i < MAX_NC; i++) {
		if (g_st.rings[i])
			free(g_st.rings[i]->ev);
		free(g_st.rings[i]);
		g_st.rings[i] = NULL;
	}
}

/* ---- capture options ---- */

void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options)
{
	if (!options)
		return;
	memset(options, 0, sizeof(*options));
	options->max_events_per_nc = DEFAULT_MAX_EVENTS;
}

ns_status_t nrt_options_alloc(const void *out, size_t size, void **out_mem)
{
	if (!out)
		return nrt_status_make(NRT_INVALID, "options is NULL");
	if (!(*out_mem = malloc(size)))
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the options (%zu bytes)", size);
	return NS_OK;
}

NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options)
{
	NRT_OPTIONS_ALLOCATE(options, nrt_sys_trace_config_t, nrt_sys_trace_config_set_defaults);
}

void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options)
{
	free(options);
}

void nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options, uint64_t max_events_per_nc)
{
	if (options)
		options->max_events_per_nc = max_events_per_nc ? max_events_per_nc : 1;
}

void nrt_sys_trace_config_set_capture_enabled_for_nc(nrt_sys_trace_config_t *options, uint32_t nc_idx,
						     bool enabled)
{
	if (!options || nc_idx >= MAX_NC) {
		NRT_LOGW("nrt_sys_trace_config_set_capture_enabled_for_nc: %s", !options ? "options is NULL"
			 : "NeuronCore index beyond 4095 ignored");
		return;
	}
	if (enabled)
		options->nc_off[nc_idx / 8] &= (uint8_t)~(1u << (nc_idx % 8));
	else
		options->nc_off[nc_idx / 8] |= (uint8_t)(1u << (nc_idx % 8));
}

NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(nrt_sys_trace_config_t *options,
								   const char *event_type, bool enabled)
{
	if (!options || !event_type) {
		NRT_LOGE("%s: options or event_type is NULL", __func__);
		return NRT_INVALID;
	}
	int i = nrt_sys_trace_type_index(event_type);
	if (i >= 0) {
		options->type_off[i] = !enabled;
		return NRT_SUCCESS;
	}
	NRT_LOGE("%s: unknown event type '%s' (nrt_sys_trace_get_event_types lists them)", __func__,
		 event_type);
	return NRT_INVALID;
}

ns_status_t nrt_name_list_dup(const char *what, const char *const *names, unsigned n, uint32_t keep,
			      const char ***out, size_t *count)
{
	if (!out || !count)
		return nrt_status_make(NRT_INVALID, "%s or count is NULL", what);
	const char **a = calloc(n ? n : 1, sizeof(*a));
	size_t k = 0;
	for (unsigned i = 0; a && i < n; i++) {
		if (!(keep & (1u << i)))
			continue;
		if (!(a[k] = strdup(names[i]))) {
			nrt_name_list_free(a, k);
			a = NULL;
		} else {
			k++;
		}
	}
	if (!a)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the list of %s", what);
	*out = a;
	*count = k;
	return NS_OK;
}

void nrt_name_list_free(const char **list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free((void *)list[i]);
	free((void *)list);
}

static NRT_STATUS type_list(const char *func, const bool *off, const char ***event_types, size_t *count)
{
	uint32_t keep = 0;
	for (int i = 0; i < NRT_SYS_TRACE_TYPE_COUNT; i++)
		if (!off || !off[i])
			keep |= 1u << i;
	return nrt_status_report(func, nrt_name_list_dup("event_types", type_names, NRT_SYS_TRACE_TYPE_COUNT,
							 keep, event_types, count));
}

NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types, size_t *count)
{
	return type_list(__func__, NULL, event_types, count);
}

NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(nrt_sys_trace_config_t *options,
							const char ***event_types, size_t *count)
{
	if (!options) {
		NRT_LOGE("%s: options is NULL", __func__);
		return NRT_INVALID;
	}
	return type_list(__func__, options->type_off, event_types, count);
}

void nrt_sys_trace_free_event_types(const char **event_types, size_t count)
{
	nrt_name_list_free(event_types, count);
}

/* ---- capture ---- */

NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options)
{
	NRT_STATUS st = NRT_SUCCESS;
	pthread_mutex_lock(&g_st.lock);
	if (atomic_load(&g_st.on)) {
		NRT_LOGE("%s: a system trace capture is already running: call nrt_sys_trace_stop first",
			 __func__);
		st = NRT_INVALID;
	} else {
		if (options)
			g_st.cfg = *options;
		else
			nrt_sys_trace_config_set_defaults(&g_st.cfg);
		if (!g_st.cfg.max_events_per_nc)
			g_st.cfg.max_events_per_nc = 1;
		atomic_store(&g_st.on, true);
	}
	pthread_mutex_unlock(&g_st.lock);
	return st;
}

NRT_STATUS nrt_sys_trace_stop(void)
{
	pthread_mutex_lock(&g_st.lock);
	bool was = atomic_exchange(&g_st.on, false);
	rings_free_locked();
	pthread_mutex_unlock(&g_st.lock);
	if (!was) {
		NRT_LOGE("%s: no system trace capture is running", __func__);
		return NRT_INVALID;
	}
	return NRT_SUCCESS;
}

/* ---- fetch ---- */

void nrt_sys_trace_fetch_options_set_defaults(nrt_sys_trace_fetch_options_t *options)
{
	if (!options)
		return;
	options->max_events_per_nc = UINT64_MAX;
	options->nc_idx = UINT64_MAX;
}

NRT_STATUS nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options)
{
	NRT_OPTIONS_ALLOCATE(options, nrt_sys_trace_fetch_options_t, nrt_sys_trace_fetch_options_set_defaults);
}

void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options)
{
	free(options);
}

void nrt_sys_trace_fetch_options_set_max_events_per_nc(nrt_sys_trace_fetch_options_t *options,
						       uint64_t max_events_per_nc)
{
	if (options)
		options->max_events_per_nc = max_events_per_nc;
}

void nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options, uint64_t nc_idx)
{
	if (options)
		options->nc_idx = nc_idx;
}

/* Moves up to max of ring nc's oldest events into events, its dropped count
 * into dropped; false when out of memory (the ring is then unchanged). */
static bool take_locked(uint32_t nc, uint64_t max, json_t *events, json_t *dropped)
{
	ring_t *r = g_st.rings[nc];
	if (!r)
		return true;
	uint64_t n = r->count < max ? r->count : max;
	json_t *batch = json_array();
	for (uint64_t i = 0; batch && i < n; i++) {
		const sys_event_t *e = &r->ev[(r->head + i) % r->alloc];
		json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:i, s:I}", "nc", (json_int_t)nc, "type",
				      type_names[e->type], "name", e->name, "label", e->label, "start_ns",
				      (json_int_t)e->start_ns, "end_ns", (json_int_t)e->end_ns, "status",
				      e->status, "value", (json_int_t)e->value);
		if (!o || json_array_append_new(batch, o)) {
			json_decref(batch);
			batch = NULL;
		}
	}
	char key[16];
	snprintf(key, sizeof(key), "%u", nc);
	if (!batch || json_array_extend(events, batch) ||
	    (r->dropped && json_object_set_new(dropped, key, json_integer((json_int_t)r->dropped)))) {
		json_decref(batch);
		return false;
	}
	json_decref(batch);
	r->head = r->alloc ? (r->head + n) % r->alloc : 0;
	r->count -= n;
	r->dropped = 0;
	return true;
}

NRT_STATUS nrt_sys_trace_fetch_events(char **buffer, size_t *written_size,
				      const nrt_sys_trace_fetch_options_t *options)
{
	if (!buffer || !written_size) {
		NRT_LOGE("%s: buffer or written_size is NULL", __func__);
		return NRT_INVALID;
	}
	nrt_sys_trace_fetch_options_t o;
	nrt_sys_trace_fetch_options_set_defaults(&o);
	if (options)
		o = *options;
	json_t *root = json_object(), *events = json_array(), *dropped = json_object();
	NRT_STATUS st = NRT_SUCCESS;
	if (!root || !events || !dropped || json_object_set(root, "events", events) ||
	    json_object_set(root, "dropped", dropped))
		st = NRT_RESOURCE;
	pthread_mutex_lock(&g_st.lock);
	if (!st && !atomic_load(&g_st.on)) {
		NRT_LOGE("%s: no system trace capture is running: call nrt_sys_trace_start first", __func__);
		st = NRT_INVALID;
	}
	for (uint32_t nc = 0; !st && nc < MAX_NC; nc++)
		if ((o.nc_idx == UINT64_MAX || o.nc_idx == nc) && !take_locked(nc, o.max_events_per_nc, events, dropped))
			st = NRT_RESOURCE;
	pthread_mutex_unlock(&g_st.lock);
	char *s = st ? NULL : json_dumps(root, JSON_COMPACT);
	json_decref(events);
	json_decref(dropped);
	json_decref(root);
	if (!st && !s)
		st = NRT_RESOURCE;
	if (st == NRT_RESOURCE)
		NRT_LOGE("%s: out of host memory", __func__);
	if (st)
		return st;
	*buffer = s;
	*written_size = strlen(s);
	return NRT_SUCCESS;
}

void nrt_sys_trace_buffer_free(char *buffer)
{
	free(buffer);
}
