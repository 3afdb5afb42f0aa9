/* nrt_trace_start / nrt_trace_stop (the SDK's nrt_experimental.h): a trace of
 * every core's runtime calls and transfers, with device memory events when
 * asked, written by the stop (docs/profiler.md). */
#include <stdatomic.h>
#include <stdio.h>

#include "neuronsim/clock.h"
#include "nrt/nrt_experimental.h"
#include "observe.h"
#include "profile_state.h"

/* Device memory events are recorded (nrt_trace_start(true) runs). */
static atomic_bool g_trace_mem;

bool nrt_profile_mem_on(void)
{
	return atomic_load_explicit(&g_trace_mem, memory_order_relaxed);
}

void nrt_profile_mem(bool alloc, uint32_t nc, const char *category, uint64_t bytes)
{
	nrt_trace_event_t ev = {
		.kind = NRT_TRACE_INSTANT,
		.cat = NRT_TRACE_CAT_MEMORY,
		.value = bytes,
		.status = (int32_t)nc,
	};
	ev.start_ns = ev.end_ns = ns_monotonic_ns();
	snprintf(ev.name, sizeof(ev.name), "%s", alloc ? "device_mem_alloc" : "device_mem_free");
	snprintf(ev.label, sizeof(ev.label), "%s", category);
	nrt_trace_record(&ev);
}

void nrt_profile_trace_discard_locked(nrt_profile_state_t *p)
{
	if (!p->trace_active)
		return;
	NRT_LOGW("nrt_close: the trace begun by nrt_trace_start was not stopped (nrt_trace_stop "
		 "names its file); it is discarded");
	p->trace_active = false;
	atomic_store(&g_trace_mem, false);
}

static ns_status_t trace_start(bool trace_mem)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	if (p->trace_active)
		return nrt_profile_leave(nrt_status_make(NRT_INVALID, "a trace is already running: call "
							 "nrt_trace_stop first"));
	p->trace_active = true;
	p->trace_start_ns = ns_monotonic_ns();
	atomic_store(&g_trace_mem, trace_mem);
	nrt_profile_update_on_locked();
	return nrt_profile_leave(NS_OK);
}

NRT_STATUS nrt_trace_start(bool trace_mem)
{
	return nrt_status_report(__func__, trace_start(trace_mem));
}

static ns_status_t trace_stop(const char *filename)
{
	nrt_ctx_t *ctx;
	nrt_profile_state_t *p;
	NS_RETURN_IF_ERROR(nrt_profile_enter(&ctx, &p));
	bool active = p->trace_active;
	nrt_profile_leave(NS_OK);
	/* The name is checked outside the lock (it touches the file system);
	 * another thread may stop the trace meanwhile. */
	if (active)
		NS_RETURN_IF_ERROR(nrt_profile_check_writable(filename, "; the trace goes on"));
	pthread_mutex_lock(&g_prof.lock);
	if (!p->trace_active)
		return nrt_profile_leave(nrt_status_make(NRT_INVALID, "no trace is running: call "
							 "nrt_trace_start first"));
	uint64_t now = ns_monotonic_ns();
	p->trace_active = false;
	atomic_store(&g_trace_mem, false);
	nrt_profile_update_on_locked();
	nrt_trace_write_args_t a = {
		.path = filename,
		.gzip = nrt_profile_ends_with(filename, ".gz"),
		.from_ns = p->trace_start_ns,
		.to_ns = now,
		.session = "nrt_trace_start",
		.device_profile = "off",
		.backend = p->backend,
	};
	ns_status_t st = nrt_trace_write(&a);
	if (!nrt_profile_sys_needed_locked(p))
		nrt_trace_clear();
	return nrt_profile_leave(st);
}

NRT_STATUS nrt_trace_stop(const char *filename)
{
	return nrt_status_report(__func__, trace_stop(filename));
}
