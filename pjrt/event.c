/* PJRT events: every piece of work the plugin does is finished when the call returns, so events are born complete, carrying success or an error. */
#include <stdlib.h>
#include <string.h>

#include "pjrt_internal.h"

typedef struct pjrt_event {
	PJRT_Error_Code code;   /* 0: success */
	char *msg;              /* owned, NULL on success */
} pjrt_event_t;

PJRT_Error *pjrt_event_new(PJRT_Error_Code code, const char *msg, PJRT_Event **out)
{
	pjrt_event_t *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory creating an event");
	ev->code = code;
	if (code && !(ev->msg = strdup(msg ? msg : ""))) {
		free(ev);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory creating an event");
	}
	uint64_t h = pjrt_handle_new(PJRT_KIND_EVENT, ev);
	if (!h) {
		free(ev->msg);
		free(ev);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of handles creating an event");
	}
	*out = PJRT_PTR(PJRT_Event, h);
	return NULL;
}

/* The event's outcome as a new error (NULL for success); *bad is set when the
 * handle is not a live event. */
static PJRT_Error *outcome(const PJRT_Event *event, const char *fn, bool *bad)
{
	uint64_t h = PJRT_HANDLE(event);
	pjrt_event_t *ev = pjrt_handle_get(h, PJRT_KIND_EVENT);
	*bad = !ev;
	if (!ev)
		return pjrt_error_not_live(fn, PJRT_KIND_EVENT, event);
	PJRT_Error *e = ev->code ? pjrt_error(ev->code, "%s", ev->msg) : NULL;
	pjrt_handle_put(h);
	return e;
}

PJRT_IMPL(Event_Destroy)
{
	PJRT_CHECK_ARGS(args, PJRT_Event_Destroy_Args, event);
	PJRT_Error *err;
	pjrt_event_t *ev = pjrt_handle_remove_arg("PJRT_Event_Destroy", PJRT_KIND_EVENT, args->event, &err);
	if (!ev)
		return err;
	free(ev->msg);
	free(ev);
	return NULL;
}

PJRT_IMPL(Event_IsReady)
{
	PJRT_CHECK_ARGS(args, PJRT_Event_IsReady_Args, is_ready);
	if (!pjrt_handle_get(PJRT_HANDLE(args->event), PJRT_KIND_EVENT))
		return pjrt_error_not_live("PJRT_Event_IsReady", PJRT_KIND_EVENT, args->event);
	pjrt_handle_put(PJRT_HANDLE(args->event));
	args->is_ready = true;
	return NULL;
}

PJRT_IMPL(Event_Error)
{
	PJRT_CHECK_ARGS(args, PJRT_Event_Error_Args, event);
	bool bad;
	return outcome(args->event, "PJRT_Event_Error", &bad);
}

PJRT_IMPL(Event_Await)
{
	PJRT_CHECK_ARGS(args, PJRT_Event_Await_Args, event);
	bool bad;
	return outcome(args->event, "PJRT_Event_Await", &bad);
}

PJRT_IMPL(Event_OnReady)
{
	PJRT_CHECK_ARGS(args, PJRT_Event_OnReady_Args, user_arg);
	if (!args->callback)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Event_OnReady: callback is NULL");
	bool bad;
	PJRT_Error *e = outcome(args->event, "PJRT_Event_OnReady", &bad);
	if (bad)
		return e;
	/* Already complete: run the callback now. No reference on the event is
	 * held here, since callbacks commonly destroy the event they wait on. The
	 * callback owns e. */
	args->callback(e, args->user_arg);
	return NULL;
}
