/* fwsim_sched_pick: the automatic scheduler's choice, for one program, between
 * its engines inline (the cooperative scheduler, one thread) and on threads of
 * their own, made by timing both. Private to libfwsim.
 *
 * Why measure: whether engine threads pay depends on how far the engines can
 * overlap, which the program's semaphores decide, not its sizes. A lowered
 * convolution overlaps its DMA engine's im2col copies with the tensor engine's
 * GEMMs (ResNet's 7x7 forward: 8.9 ms threaded, 13.7 inline, 2 CPUs), while a
 * training step's 1200 vector instructions that each wait on another engine
 * pay a futex hand-off apiece (MobileNetV2 b8's step: 62 ms threaded, 56
 * inline). The same program runs many times (a training loop), so its first
 * executions can tell.
 *
 * The policy: the first execution runs threaded and is not timed (it creates
 * the threads and faults the scratch in); the next four alternate threaded,
 * inline, threaded, inline; from then on the mode whose recent best time is
 * lower runs, and the other runs once more after FWSIM_PICK_GAP_MIN
 * executions, then after twice as many each time the choice stands (at most
 * FWSIM_PICK_GAP_MAX), FWSIM_PICK_GAP_MIN again after a switch: a wrong
 * first choice stands a few executions, a machine that changes (another
 * process takes a CPU) moves a settled choice at the next probe, at most
 * FWSIM_PICK_GAP_MAX executions later, and a settled choice costs at most
 * one execution in FWSIM_PICK_GAP_MAX in the slower mode. Both modes compute the same bits
 * (engines interact only through semaphores), so the choice moves only time.
 *
 * Thread-safe: one program may run on several cores at once. */
#ifndef FWSIM_SCHED_PICK_H
#define FWSIM_SCHED_PICK_H

#include <pthread.h>
#include <stdint.h>

#define FWSIM_PICK_INLINE 0u
#define FWSIM_PICK_THREADS 1u

/* Executions in the opening probe (after the untimed first one). */
#define FWSIM_PICK_PROBES 4u
/* Recent times kept per mode; its estimate is their minimum. */
#define FWSIM_PICK_KEEP 4u
/* Short at first: the opening's two times per mode can both be hit by the
 * machine's noise, and a wrong first choice then stands only 4 executions
 * (with 16, ResNet's 3x3 weight gradient kept inline, 6.4-6.8 ms against
 * 5.3-5.5 threaded, for 20 executions of neuron-run). */
#define FWSIM_PICK_GAP_MIN 4u
#define FWSIM_PICK_GAP_MAX 1024u

typedef struct fwsim_sched_pick {
	pthread_mutex_t m;
	uint64_t runs;                             /* executions handed a mode */
	uint64_t recent[2][FWSIM_PICK_KEEP];       /* ns, 0 = empty slot */
	uint32_t next_slot[2];
	uint32_t choice;                           /* FWSIM_PICK_* once probed */
	uint64_t gap;                              /* executions between re-probes */
	uint64_t next_probe;                       /* run index of the next re-probe */
	uint64_t switches;                         /* times the choice changed */
} fwsim_sched_pick_t;

void fwsim_sched_pick_init(fwsim_sched_pick_t *p);
void fwsim_sched_pick_destroy(fwsim_sched_pick_t *p);

/* The mode the next execution runs in (FWSIM_PICK_*) and its index *run
 * (0 for the program's first), to pass back to fwsim_sched_pick_record. */
uint32_t fwsim_sched_pick_next(fwsim_sched_pick_t *p, uint64_t *run);

/* The wall time ns of execution run, which ran in mode; the first execution's
 * is ignored. Failed executions are not recorded (they stop early): a probe
 * that fails is tried again a gap later. */
void fwsim_sched_pick_record(fwsim_sched_pick_t *p, uint64_t run, uint32_t mode, uint64_t ns);

/* The current choice (FWSIM_PICK_THREADS before the probe ends) and how many
 * times it has changed, for tests and tools. */
uint32_t fwsim_sched_pick_choice(fwsim_sched_pick_t *p, uint64_t *switches);

#endif
