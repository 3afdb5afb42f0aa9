/* libnrt's statuses: an ns_status_t carrying its NRT_STATUS, made where a failure happens and reported once at the nrt_* entry point (status.c). */
#ifndef NRT_RT_STATUS_H
#define NRT_RT_STATUS_H

#include "neuronsim/status.h"
#include "nrt/nrt_status.h"

/* Inside libnrt a failure is an ns_status_t made where it happens and annotated
 * on its way up; the nrt_* entry point turns it into its NRT_STATUS and one log
 * line (nrt_status_report). The backends (backend.h) return the same. */

/* A failure whose NRT_STATUS is nrt (kept as the status's detail), with the
 * canonical code that goes with it. */
ns_status_t nrt_status_make(NRT_STATUS nrt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* st with text added after its message ("MESSAGE" + what follows), its codes
 * kept: where a failure's report says what happened next (the snapshot it
 * left). Consumes st; when memory runs out, st comes back as it was. */
ns_status_t nrt_status_append(ns_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The NRT_STATUS of st: its detail when the runtime set one, else its
 * canonical code's (INVALID_ARGUMENT, OUT_OF_RANGE, NOT_FOUND, DATA_LOSS and
 * UNIMPLEMENTED NRT_INVALID, RESOURCE_EXHAUSTED NRT_RESOURCE, DEADLINE_EXCEEDED
 * NRT_TIMEOUT, anything else NRT_FAILURE). NRT_SUCCESS for NULL. */
NRT_STATUS nrt_status_code(ns_status_t st);
/* The boundary: logs "WHERE: MESSAGE" once at ERROR (where: the entry point,
 * "nrt_load"; NRT_QUEUE_FULL, backpressure, at DEBUG), frees st and returns
 * its NRT_STATUS (nrt_status_code). NRT_SUCCESS, and nothing logged, for NULL. */
NRT_STATUS nrt_status_report(const char *where, ns_status_t st);

#endif /* NRT_RT_STATUS_H */
