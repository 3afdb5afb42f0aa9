/* fwsim_sched_pick: inline or threaded engines for one program, by timing both (sched_pick.h). */
#include <stdbool.h>
#include <string.h>

#include "sched_pick.h"

void fwsim_sched_pick_init(fwsim_sched_pick_t *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->m, NULL);
	p->choice = FWSIM_PICK_THREADS;
	p->gap = FWSIM_PICK_GAP_MIN;
}

void fwsim_sched_pick_destroy(fwsim_sched_pick_t *p)
{
	pthread_mutex_destroy(&p->m);
}

/* The lowest of a mode's recent times, UINT64_MAX when it has none. */
static uint64_t estimate(const fwsim_sched_pick_t *p, uint32_t mode)
{
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < FWSIM_PICK_KEEP; i++)
		if (p->recent[mode][i] && p->recent[mode][i] < best)
			best = p->recent[mode][i];
	return best;
}

/* Moves the choice to the other mode when its estimate is lower. After the
 * opening probe the gap stays; after a re-probe it restarts at
 * FWSIM_PICK_GAP_MIN on a switch, else doubles up to FWSIM_PICK_GAP_MAX. */
static void decide(fwsim_sched_pick_t *p, bool opening)
{
	uint32_t other = p->choice ^ 1u;
	bool flip = estimate(p, other) < estimate(p, p->choice);
	if (flip) {
		p->choice = other;
		p->switches++;
	}
	if (!opening && flip)
		p->gap = FWSIM_PICK_GAP_MIN;
	else if (!opening && p->gap < FWSIM_PICK_GAP_MAX)
		p->gap *= 2;
	p->next_probe = p->runs + p->gap;
}

uint32_t fwsim_sched_pick_next(fwsim_sched_pick_t *p, uint64_t *run_out)
{
	pthread_mutex_lock(&p->m);
	uint64_t run = p->runs++;
	uint32_t mode;
	*run_out = run;
	if (run == 0)
		mode = FWSIM_PICK_THREADS;
	else if (run <= FWSIM_PICK_PROBES)
		mode = run % 2 ? FWSIM_PICK_THREADS : FWSIM_PICK_INLINE;
	else if (run >= p->next_probe) {
		mode = p->choice ^ 1u;
		/* until its time is recorded (it may fail and never be) */
		p->next_probe = run + p->gap;
	} else {
		mode = p->choice;
	}
	pthread_mutex_unlock(&p->m);
	return mode;
}

void fwsim_sched_pick_record(fwsim_sched_pick_t *p, uint64_t run, uint32_t mode, uint64_t ns)
{
	if (run == 0)
		return; /* the untimed first execution */
	mode &= 1u;
	pthread_mutex_lock(&p->m);
	p->recent[mode][p->next_slot[mode]] = ns ? ns : 1;
	p->next_slot[mode] = (p->next_slot[mode] + 1) % FWSIM_PICK_KEEP;
	/* the opening probe's last time makes the first choice */
	if (run == FWSIM_PICK_PROBES || (run > FWSIM_PICK_PROBES && mode != p->choice))
		decide(p, run == FWSIM_PICK_PROBES);
	pthread_mutex_unlock(&p->m);
}

uint32_t fwsim_sched_pick_choice(fwsim_sched_pick_t *p, uint64_t *switches)
{
	pthread_mutex_lock(&p->m);
	uint32_t c = p->choice;
	if (switches)
		*switches = p->switches;
	pthread_mutex_unlock(&p->m);
	return c;
}
