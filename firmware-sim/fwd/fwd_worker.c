/* neuronsim-fwd's worker threads: fetch a job from the driver, run it on its simulated core, complete it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "fwd.h"
#include "neuronsim/clock.h"

/* The error record the waiter gets, from a finished (or refused) fwsim job:
 * the job's error (with its FLOPs, in the 1.2 extension) and its statistics.
 * The types and the ABI's are tied in include/neuronsim/device.h. */
static void fwd_record_fill(struct neuronsim_error_record_ext *ext, const fwsim_job_t *job,
			    const fwsim_trace_t *trace)
{
	ns_job_error_to_record(&job->error, ext);
	struct neuronsim_error_record *rec = &ext->rec;
	rec->insns_executed = job->insns_executed;
	memcpy(rec->engine_busy_ns, job->engine_busy_ns, sizeof(rec->engine_busy_ns));
	if (trace) {
		rec->trace_count = trace->count;
		rec->trace_dropped = trace->dropped;
	}
}

/* A driver of ABI 1.1 takes the plain record (the extension's first
 * member) and no flag. */
static int fwd_complete(fwd_ctx_t *ctx, uint64_t job_id, uint32_t status,
			struct neuronsim_error_record_ext *rec)
{
	struct neuronsim_fw_complete fc = {
		.job_id = job_id,
		.status = status,
		.flags = ctx->record_ext ? NEURONSIM_COMPLETE_RECORD_EXT : 0,
		.error_ptr = (uint64_t)(uintptr_t)rec,
	};
	int r;
	do
		r = ioctl(ctx->fd, NEURONSIM_IOCTL_FW_COMPLETE, &fc);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		fwd_log(FWD_LOG_ERROR, "device %u: completing job %llu failed: %s", ctx->device,
			(unsigned long long)job_id, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Runs one fetched job; always completes it. */
static void fwd_run_job(fwd_ctx_t *ctx, const struct neuronsim_fw_fetch *f,
			const fwsim_region_t *regions)
{
	struct neuronsim_error_record_ext rec;
	fwsim_job_t job;
	memset(&job, 0, sizeof(job));
	fwsim_trace_t trace = { 0 }, *tp = NULL;
	uint64_t t0 = ns_monotonic_ns();

	if (f->core >= ctx->num_cores) {
		/* The driver never does this; a newer driver with more cores
		 * than we attached with might. */
		job.error.status = FWSIM_INVALID;
		snprintf(job.error.message, sizeof(job.error.message),
			 "neuronsim-fwd has %u cores, the job is for core %u", ctx->num_cores, f->core);
		goto complete;
	}
	if ((f->job_flags & NEURONSIM_JOB_PROFILE) && f->trace.size) {
		if (f->trace.addr > ctx->mem_size || f->trace.size > ctx->mem_size - f->trace.addr ||
		    f->trace.addr % 8) {
			job.error.status = FWSIM_INVALID;
			snprintf(job.error.message, sizeof(job.error.message),
				 "trace buffer [%#llx, +%llu) outside device memory or misaligned",
				 (unsigned long long)f->trace.addr, (unsigned long long)f->trace.size);
			goto complete;
		}
		trace.spans = (fwsim_span_t *)(ctx->mem + f->trace.addr);
		trace.cap = f->trace.size / sizeof(fwsim_span_t);
		tp = &trace;
	}

	fwd_cache_entry_t *entry = NULL;
	ns_status_t st = fwd_cache_acquire(ctx->cache, ctx->mem, ctx->mem_size, f->streams,
					   f->n_regions, &entry);
	if (st) {
		/* The job protocol is this failure's boundary: its status and
		 * message go to the client in the error record. */
		job.error.status = ns_status_code(st) == NS_STATUS_RESOURCE_EXHAUSTED ? FWSIM_NOMEM
										     : FWSIM_INVALID;
		ns_status_consume_message(st, job.error.message, sizeof(job.error.message));
		goto complete;
	}
	/* The job window is all of device memory: the regions are device
	 * addresses the driver already checked against the submitter's
	 * allocations, and fwsim checks every access against its region. */
	job.program = fwd_cache_program(entry);
	job.mem = ctx->mem;
	job.mem_size = ctx->mem_size;
	job.regions = regions;
	job.n_regions = f->n_regions;
	job.flags = f->job_flags & (FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF |
				    (tp ? FWSIM_JOB_PROFILE : 0));
	job.deadline_ns = f->deadline_ns > 0 ? (uint64_t)f->deadline_ns : 0;
	job.trace = tp;
	fwd_running_t *run = &ctx->running[f->core];
	pthread_mutex_lock(&run->lock);
	run->job_id = f->job_id;
	run->job = &job;
	if (run->aborted_id == f->job_id)
		fwsim_job_cancel(&job); /* the request came before us */
	run->aborted_id = 0;
	pthread_mutex_unlock(&run->lock);
	fwsim_core_execute(ctx->cores[f->core], &job);
	pthread_mutex_lock(&run->lock);
	run->job_id = 0;
	run->job = NULL;
	pthread_mutex_unlock(&run->lock);
	fwd_cache_release(ctx->cache, entry);

complete:
	fwd_record_fill(&rec, &job, tp);
	if (job.error.status != FWSIM_OK)
		atomic_fetch_add(&ctx->jobs_failed, 1);
	atomic_fetch_add(&ctx->jobs_done, 1);
	fwd_log(job.error.status == FWSIM_OK || job.error.status == FWSIM_NUM_ERR ? FWD_LOG_DEBUG
										: FWD_LOG_INFO,
		"device %u core %u: job %llu %s in %llu us, %llu instructions%s%s", ctx->device,
		f->core, (unsigned long long)f->job_id, fwsim_status_str(job.error.status),
		(unsigned long long)((ns_monotonic_ns() - t0) / 1000),
		(unsigned long long)job.insns_executed, rec.rec.message[0] ? ": " : "", rec.rec.message);
	fwd_complete(ctx, f->job_id, job.error.status, &rec);
}

void *fwd_abort_main(void *arg)
{
	fwd_ctx_t *ctx = arg;
	while (!atomic_load(&ctx->abort_stop)) {
		struct neuronsim_fw_abort a;
		memset(&a, 0, sizeof(a));
		/* a bounded slice, so abort_stop is noticed promptly */
		a.timeout_ns = (int64_t)(ns_monotonic_ns() + ctx->fetch_slice_ns);
		if (ioctl(ctx->fd, NEURONSIM_IOCTL_FW_ABORT_WAIT, &a) < 0) {
			int e = errno;
			if (e == ETIME || e == EINTR)
				continue;
			if (e == EPERM) /* detached (shutdown) */
				break;
			fwd_log(FWD_LOG_ERROR, "device %u: waiting for abort requests failed: %s",
				ctx->device, strerror(e));
			struct timespec pause = { 0, 100 * 1000 * 1000 };
			nanosleep(&pause, NULL); /* do not spin on a persistent error */
			continue;
		}
		if (a.core >= ctx->num_cores)
			continue; /* the driver never does this */
		fwd_running_t *run = &ctx->running[a.core];
		pthread_mutex_lock(&run->lock);
		if (run->job_id == a.job_id && run->job)
			fwsim_job_cancel(run->job);
		else
			run->aborted_id = a.job_id; /* fetched, not started yet */
		pthread_mutex_unlock(&run->lock);
		atomic_fetch_add(&ctx->jobs_aborted, 1);
		fwd_log(FWD_LOG_INFO, "device %u core %u: aborting job %llu: %s", ctx->device, a.core,
			(unsigned long long)a.job_id,
			a.reason == NEURONSIM_ABORT_CLOSED ? "its client closed the device (exited or "
							     "was killed)"
							   : "its deadline passed");
	}
	return NULL;
}

void *fwd_worker_main(void *arg)
{
	fwd_ctx_t *ctx = arg;
	uint32_t cap = 64;
	fwsim_region_t *regions = malloc(cap * sizeof(*regions));
	if (!regions) {
		fwd_log(FWD_LOG_ERROR, "device %u: worker out of memory", ctx->device);
		return NULL;
	}
	while (!atomic_load(&ctx->stop)) {
		struct neuronsim_fw_fetch f;
		memset(&f, 0, sizeof(f));
		f.max_regions = cap;
		f.regions_ptr = (uint64_t)(uintptr_t)regions;
		/* A bounded slice, so a stop request is noticed promptly even
		 * when no job comes. */
		f.timeout_ns = (int64_t)(ns_monotonic_ns() + ctx->fetch_slice_ns);
		if (ioctl(ctx->fd, NEURONSIM_IOCTL_FW_FETCH, &f) < 0) {
			int e = errno;
			if (e == ETIME || e == EINTR)
				continue;
			if (e == E2BIG && f.n_regions > cap && f.n_regions <= NEURONSIM_MAX_REGIONS * 16u) {
				/* The job stays queued; fetch it again with room. */
				fwsim_region_t *n = realloc(regions, f.n_regions * sizeof(*regions));
				if (n) {
					regions = n;
					cap = f.n_regions;
					continue;
				}
			}
			if (e == EPERM) /* detached (shutdown) */
				break;
			fwd_log(FWD_LOG_ERROR, "device %u: fetching a job failed: %s", ctx->device,
				strerror(e));
			struct timespec pause = { 0, 100 * 1000 * 1000 };
			nanosleep(&pause, NULL); /* do not spin on a persistent error */
			continue;
		}
		fwd_run_job(ctx, &f, regions);
	}
	free(regions);
	return NULL;
}
