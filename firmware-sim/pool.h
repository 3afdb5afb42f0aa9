/* fwsim_par: the process-wide pool of host threads that one large instruction (a
 * big MATMUL) is split across. Private to libfwsim. */
#ifndef FWSIM_POOL_H
#define FWSIM_POOL_H

#include "internal.h"

/* At least this many multiply-adds (summed over the instruction) before a
 * MATMUL is cut into items and handed to the pool: below it a hand-off (a
 * futex wake, ~10 us on a busy host) costs more than the second core saves. */
#define FWSIM_PAR_MIN_WORK (1u << 22)

/* Items a split instruction aims for: enough that two to four threads balance
 * by taking them in turn, few enough that each stays a large GEMM. A function
 * of the shape only, never of the thread count, so the results do not depend
 * on how many threads ran them. */
#define FWSIM_PAR_ITEMS 8

/* Elements before an elementwise instruction (ALU, ACTIVATE, COPY: the
 * im2col and padding copies of lowered convolutions, depthwise FMAs; FUSED,
 * REDUCE) is cut into ranges of rows for the pool, with a core's engines on
 * threads of their own. There, a split copy on the DMA engine takes the pool
 * from the tensor engine's GEMM (a convolution's critical path), which then
 * runs on one thread: at 2^18, ResNet's 3x3 weight gradient ran 5.65 ms
 * against 5.29 at 2^20 (2 CPUs). */
#define FWSIM_PAR_MIN_EW (1u << 20)
/* The same with the engines inline (one at a time, so no engine waits for
 * the pool): 2^18 elements take 50-100 us on one thread, several hand-offs'
 * worth. With 2 CPUs, MobileNetV2 b8's step NEFF ran 58.6 ms at 2^20, 54.6
 * at 2^18 and 2^17, 55.8 at 2^16. */
#define FWSIM_PAR_MIN_EW_INLINE (1u << 18)

/* The elements from which k's instruction is cut for the pool. */
static inline uint64_t fwsim_par_min_ew(const fwsim_kargs_t *k)
{
	return k->par_min_ew ? k->par_min_ew : FWSIM_PAR_MIN_EW;
}

/* The most threads (the caller included) the pool runs one instruction on. */
#define FWSIM_PAR_MAX_THREADS 16

/* The CPUs the calling thread may run on (its affinity mask), at least 1:
 * the pool's size when NEURONSIM_THREADS is not set, and whether a core's
 * engines may run on threads of their own (core.c). */
uint32_t fwsim_affinity_cpus(void);

/* Runs one item: item < n_items, slot < FWSIM_PAR_MAX_THREADS names the thread's
 * scratch (no two threads share a slot at a time), w is this thread's watch
 * (a copy of the caller's: fwsim_tick on it polls the same deadline, cancel
 * and stop flags). Returns FWSIM_OK or the failure that ends the instruction. */
typedef fwsim_status_t (*fwsim_par_fn_t)(void *ctx, uint64_t item, uint32_t slot,
					 fwsim_watch_t *w);

/* Runs fn on items 0..n_items-1, each exactly once, on the calling thread and
 * whatever pool workers join; returns when all are done. Between
 * instructions a worker looks for the next job for up to 0.8 ms, yielding
 * its CPU, and stops looking as soon as another thread takes that CPU; then
 * it blocks on a condition variable (pool.c says why). The caller never
 * waits for a worker that has not started: it takes items itself and waits
 * (the same way) only for items already running. Another instruction holding the pool
 * (a second NeuronCore) makes this one run its items on the calling thread.
 * On failure the first failing item's status is returned, items not yet
 * started are skipped, and w->why / w->cancelled are set from that item's
 * watch (as if the caller's own fwsim_tick had stopped). */
fwsim_status_t fwsim_par_for(uint64_t n_items, fwsim_par_fn_t fn, void *ctx, fwsim_watch_t *w);

/* The per-thread shares of one split instruction's NaN/Inf scan, one per
 * slot: fwsim_par_chk_init starts each empty (no count, no first index)
 * with k's check settings, fwsim_par_chk_merge folds them all into k->chk
 * (counts add, the smallest first index wins, with its blamed step). Both do
 * nothing when k has no check. */
void fwsim_par_chk_init(const fwsim_kargs_t *k, fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS]);
void fwsim_par_chk_merge(const fwsim_kargs_t *k, const fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS]);

/* The dim a split instruction with output o is cut along: its outermost of
 * two or more among those not in the bit mask reduced (the reduced ones
 * have extent 1 in a REDUCE's output, the whole extent in a FUSED's), or -1
 * when there is none or o repeats along it (stride 0: every range would
 * write the same elements, the last write the one kept). */
int fwsim_par_cut_dim(const isa_ap_t *o, uint32_t reduced);

/* The arguments an item runs with on slot's thread: k's, with that thread's
 * watch and its share of the scan (NULL when k has no check). */
fwsim_kargs_t fwsim_par_kargs(const fwsim_kargs_t *k, fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS],
			      uint32_t slot, fwsim_watch_t *w);

/* Items run by the pool's workers (not by callers) since the process started:
 * for tests that the split really reaches a second thread. */
uint64_t fwsim_par_worker_items(void);

#endif
