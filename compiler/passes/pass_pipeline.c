/* The pass pipeline per optimisation level, with the per-pass IR dump and a verification after each pass. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "neuronsim/atomic_file.h"
#include "passes.h"
#include "hlo/verify.h"

typedef ncc_status_t (*pass_fn)(ncc_module_t *, bool *, ncc_error_t *);

typedef struct pipe {
	ncc_module_t *m;
	const char *dump_dir;
	int seq;        /* number of the next dump */
} pipe_t;

static ncc_status_t dump(pipe_t *p, const char *what, ncc_error_t *err)
{
	if (!p->dump_dir)
		return NCC_OK;
	char path[4096];
	int n = snprintf(path, sizeof(path), "%s/%02d-%s.hlo", p->dump_dir, p->seq++, what);
	if (n < 0 || (size_t)n >= sizeof(path))
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "IR dump path too long in '%s'",
				     p->dump_dir);
	/* whole or nothing, never through a planted symlink (atomic_file.h) */
	atomic_file_t af;
	const char *step = "";
	FILE *f = NULL;
	if (atomic_file_open(&af, path, ATOMIC_FILE_MODE_UMASK, &step) != 0 ||
	    !(f = atomic_file_stream(&af))) {
		int e = errno;
		if (!f)
			atomic_file_abort(&af);
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "cannot write IR dump '%s': %s", path,
				     strerror(e));
	}
	ncc_status_t st = ncc_module_print(p->m, f);
	if (st) {
		atomic_file_abort(&af);
		return ncc_error_set(err, st, 0, 0, "cannot write IR dump '%s'", path);
	}
	if (atomic_file_commit(&af, &step) != 0)
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "cannot write IR dump '%s' (%s): %s", path,
				     step, strerror(errno));
	return NCC_OK;
}

/* After a pass that ran: a pass that breaks the IR is a compiler bug, so stop here,
 * naming it, instead of failing obscurely in the back end; then the dump. */
static ncc_status_t verified(pipe_t *p, const char *name, ncc_error_t *err)
{
	ncc_error_t verr;
	memset(&verr, 0, sizeof(verr));
	if (ncc_verify(p->m, &verr) != NCC_OK)
		return ncc_error_set(err, NCC_ERR_INTERNAL, 0, 0,
				     "internal: the module does not verify after pass '%s': %s", name,
				     verr.msg);
	return dump(p, name, err);
}

static ncc_status_t run(pipe_t *p, const char *name, pass_fn fn, bool *changed, ncc_error_t *err)
{
	bool ch = false;
	ncc_status_t st = fn(p->m, &ch, err);
	if (st)
		return st;
	if (changed)
		*changed |= ch;
	return verified(p, name, err);
}

/* A legalization pass: runs at every level and is dumped only when it changed the
 * module, so modules without f64 or donors dump as before. */
static ncc_status_t legalize(pipe_t *p, const char *name, pass_fn fn, ncc_error_t *err)
{
	bool ch = false;
	ncc_status_t st = fn(p->m, &ch, err);
	if (st || !ch)
		return st;
	return verified(p, name, err);
}

ncc_status_t ncc_run_passes(ncc_module_t *m, const ncc_compile_options_t *opts, ncc_error_t *err)
{
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "run_passes: no module");
	int level = opts ? opts->opt_level : 0;
	pipe_t p = { .m = m, .dump_dir = opts ? opts->dump_dir : NULL, .seq = 0 };
	ncc_status_t st = dump(&p, "input", err);
	/* what every level needs: the device has no f64, and donated parameters
	 * become in-place updates (docs/passes.md, "Legalization") */
	if (!st)
		st = legalize(&p, "demote-f64", ncc_pass_demote_f64, err);
	if (!st)
		st = legalize(&p, "buffer-donors", ncc_pass_buffer_donors, err);
	if (st || level <= 0)
		return st;
	/* simplification exposes folding and CSE and vice versa; a few rounds
	 * reach the fixed point on every corpus module (usually two) */
	for (int round = 0; round < 4; round++) {
		bool changed = false;
		if ((st = run(&p, "simplify", ncc_pass_simplify, &changed, err)) ||
		    (st = run(&p, "fold", ncc_pass_fold, &changed, err)) ||
		    (st = run(&p, "cse", ncc_pass_cse, &changed, err)) ||
		    (st = run(&p, "dce", ncc_pass_dce, &changed, err)))
			return st;
		if (!changed)
			break;
	}
	/* after CSE, which would share the x - mean of the variance and of the
	 * normalisation and so make fusion store it (docs/passes.md); dumped
	 * only when a batch norm was expanded, as the legalization passes */
	if ((st = legalize(&p, "batch-norm-expand", ncc_pass_batch_norm_expand, err)))
		return st;
	if (level >= 2) {
		if ((st = run(&p, "fuse", ncc_pass_fuse, NULL, err)) ||
		    (st = run(&p, "dce", ncc_pass_dce, NULL, err)))
			return st;
	}
	return NCC_OK;
}
