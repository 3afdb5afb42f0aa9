/* neuronsim-fwd internals: the daemon context, its program cache and its logger. */
#ifndef NEURONSIM_FWD_H
#define NEURONSIM_FWD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwsim/fwsim.h"
#include "uapi/linux/neuronsim.h"

typedef enum fwd_log_level {
	FWD_LOG_ERROR = 0,
	FWD_LOG_WARN = 1,
	FWD_LOG_INFO = 2,
	FWD_LOG_DEBUG = 3,
} fwd_log_level_t;

void fwd_log(fwd_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Where fwd_log goes: stderr (foreground) or syslog (daemon). Set once in
 * main before any thread starts. */
void fwd_log_setup(fwd_log_level_t max_level, int use_syslog);

/* A cache of validated programs keyed by the exact bytes of their code.
 *
 * Why bytes and not only the device addresses: device memory belongs to the
 * clients, who may rewrite a model's code after it was validated, and an
 * address may be freed and handed to another tenant with other code. Every
 * lookup therefore compares the code now in device memory with the private
 * copy the cached program was validated from; fwsim only ever executes that
 * private, validated copy (fwsim_program_create copies the streams), never
 * device memory, so a client racing the comparison gets either a program
 * validated from its old bytes or a new validation, never unvalidated code.
 * The comparison is a memcmp of the code (a few hundred KiB at most for real
 * models), much cheaper than validation, and needs no help from the driver. */
typedef struct fwd_cache fwd_cache_t;
typedef struct fwd_cache_entry fwd_cache_entry_t;

typedef struct fwd_cache_stats {
	uint64_t hits, misses, evictions, invalid;
} fwd_cache_stats_t;

/* max_entries programs and max_bytes of code at most (least recently used
 * evicted first); 0 entries disables caching. Caller destroys with
 * fwd_cache_destroy() after every acquired entry was released. */
fwsim_status_t fwd_cache_create(uint32_t max_entries, uint64_t max_bytes, fwd_cache_t **out_cache);
void fwd_cache_destroy(fwd_cache_t *cache);

/* Returns in *out_entry a validated program for the streams at the given
 * device addresses of mem (mem_size bytes), validated for n_regions regions;
 * the caller releases it with fwd_cache_release(). A failure is a status with a
 * one-line message: NS_STATUS_INVALID_ARGUMENT for a stream outside device
 * memory or an invalid program, NS_STATUS_RESOURCE_EXHAUSTED for no memory. */
ns_status_t fwd_cache_acquire(fwd_cache_t *cache, const uint8_t *mem, uint64_t mem_size,
			      const struct neuronsim_fw_stream streams[NEURONSIM_NUM_ENGINES],
			      uint32_t n_regions, fwd_cache_entry_t **out_entry);
const fwsim_program_t *fwd_cache_program(const fwd_cache_entry_t *entry);
void fwd_cache_release(fwd_cache_t *cache, fwd_cache_entry_t *entry);
void fwd_cache_get_stats(fwd_cache_t *cache, fwd_cache_stats_t *out_stats);

/* What a core runs now, so the abort thread can cancel it. A core runs one
 * job at a time (the driver hands out its next job after the completion). */
typedef struct fwd_running {
	pthread_mutex_t lock;
	uint64_t job_id;      /* 0 = idle */
	fwsim_job_t *job;     /* valid while job_id != 0 */
	uint64_t aborted_id;  /* an abort that came before the worker registered */
} fwd_running_t;

/* The daemon: one per attached device. */
/* The oldest driver minor neuronsim-fwd runs on: 1.1 (FW_ABORT_WAIT). */
#define FWD_MIN_ABI_MINOR 1

typedef struct fwd_ctx {
	uint32_t device;
	int fd;                      /* /dev/neuronsim-fwN, attached */
	uint8_t *mem;                /* all of device memory */
	uint64_t mem_size;
	uint32_t num_cores;
	bool record_ext;             /* the driver takes struct neuronsim_error_record_ext
				      * (NEURONSIM_CAP_RECORD_EXT, ABI 1.2): jobs report flops */
	fwsim_core_t **cores;        /* one simulated core per device core */
	fwd_cache_t *cache;
	uint32_t n_workers;
	pthread_t *workers;
	atomic_int stop;             /* set on SIGTERM/SIGINT: fetch no more */
	atomic_uint_fast64_t jobs_done, jobs_failed, jobs_aborted;
	uint64_t fetch_slice_ns;     /* how long one FW_FETCH blocks */
	fwd_running_t *running;      /* num_cores entries */
	pthread_t abort_thread;
	atomic_int abort_stop;       /* the workers are gone: the abort thread ends */
} fwd_ctx_t;

/* Worker thread body: fetch, execute, complete until ctx->stop or the
 * device side goes away. arg is the fwd_ctx_t. */
void *fwd_worker_main(void *arg);

/* Abort thread body: waits in FW_ABORT_WAIT for jobs the driver wants
 * stopped (deadline passed, submitter gone) and cancels them on their core
 * (fwsim_job_cancel) until ctx->abort_stop. arg is the fwd_ctx_t. */
void *fwd_abort_main(void *arg);

#endif /* NEURONSIM_FWD_H */
