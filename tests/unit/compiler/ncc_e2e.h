/* End-to-end helpers shared by test_corpus.c and the compiler benchmark: NEFF I/O table, running a NEFF on the embedded device through libnrt. */
#ifndef NCC_E2E_H
#define NCC_E2E_H

/*
 * Header-only (static functions) so that the unit test and tests/bench can both use
 * it without a library of their own. Ownership: ncc_e2e_io_t owns its data buffers;
 * ncc_e2e_io_free() releases them.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "neuronsim/neff.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"

typedef struct ncc_e2e_tensor {
	char name[NEFF_NAME_MAX];
	isa_dtype_t dtype;
	uint32_t rank;
	uint64_t shape[NEFF_MAX_TENSOR_RANK];
	size_t size;           /* bytes */
	int32_t alias_input;   /* outputs: NEFF input index it aliases, else -1 */
	void *data;            /* size bytes (inputs: what to send; outputs: what came back) */
} ncc_e2e_tensor_t;

typedef struct ncc_e2e_io {
	uint32_t n_in, n_out;
	ncc_e2e_tensor_t *in;  /* in NEFF order */
	ncc_e2e_tensor_t *out; /* in NEFF order */
} ncc_e2e_io_t;

static inline double ncc_e2e_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline void ncc_e2e_io_free(ncc_e2e_io_t *io)
{
	for (uint32_t i = 0; io->in && i < io->n_in; i++)
		free(io->in[i].data);
	for (uint32_t i = 0; io->out && i < io->n_out; i++)
		free(io->out[i].data);
	free(io->in);
	free(io->out);
	memset(io, 0, sizeof(*io));
}

/* Reads the I/O tensor table of a NEFF (validated with neff_parse) and allocates a
 * zeroed buffer per tensor. Returns 0, or -1 with a message in err. */
static inline int ncc_e2e_io_from_neff(const void *neff, size_t size, ncc_e2e_io_t *io, char *err,
				       size_t err_len)
{
	memset(io, 0, sizeof(*io));
	neff_view_t v;
	if (ns_status_consume_message(neff_parse(neff, size, &v), err, err_len) != NS_STATUS_OK)
		return -1;
	uint32_t n = v.meta->n_tensors;
	io->in = calloc(n ? n : 1, sizeof(*io->in));
	io->out = calloc(n ? n : 1, sizeof(*io->out));
	if (!io->in || !io->out) {
		snprintf(err, err_len, "out of memory for %u tensors", n);
		ncc_e2e_io_free(io);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const neff_tensor_t *t = &v.tensors[i];
		bool is_in = t->usage == NEFF_USAGE_INPUT;
		ncc_e2e_tensor_t *d = is_in ? &io->in[io->n_in++] : &io->out[io->n_out++];
		snprintf(d->name, sizeof(d->name), "%s", t->name);
		d->dtype = (isa_dtype_t)t->dtype;
		d->rank = t->rank;
		memcpy(d->shape, t->shape, sizeof(d->shape));
		d->size = (size_t)t->size;
		d->alias_input = t->alias_input;
		d->data = calloc(1, d->size ? d->size : 1);
		if (!d->data) {
			snprintf(err, err_len, "out of memory for tensor '%s' (%zu bytes)", d->name, d->size);
			ncc_e2e_io_free(io);
			return -1;
		}
	}
	return 0;
}

/* Loads neff on the (already initialised) runtime, writes io->in[*].data, executes
 * reps times (reps >= 1; runs over 2 s are not repeated) and reads io->out[*].data
 * back. *out_ms (may be NULL) gets the fastest execution in milliseconds. Every output gets its own tensor.
 * Returns the nrt_execute status of the last run (NRT_SUCCESS expected), or another
 * status with a message in err if loading or allocating failed. */
static inline NRT_STATUS ncc_e2e_device_run(const void *neff, size_t size, ncc_e2e_io_t *io,
					    int reps, double *out_ms, char *err, size_t err_len)
{
	nrt_model_t *model = NULL;
	nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
	uint32_t n = io->n_in + io->n_out;
	nrt_tensor_t **tensors = calloc(n ? n : 1, sizeof(*tensors));
	NRT_STATUS st = NRT_RESOURCE;
	if (!tensors) {
		snprintf(err, err_len, "out of memory");
		return st;
	}
	st = nrt_load(neff, size, -1, -1, &model);
	if (st != NRT_SUCCESS) {
		snprintf(err, err_len, "nrt_load failed with status %d", (int)st);
		goto out;
	}
	if ((st = nrt_allocate_tensor_set(&in_set)) != NRT_SUCCESS ||
	    (st = nrt_allocate_tensor_set(&out_set)) != NRT_SUCCESS) {
		snprintf(err, err_len, "nrt_allocate_tensor_set failed with status %d", (int)st);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool is_in = i < io->n_in;
		ncc_e2e_tensor_t *t = is_in ? &io->in[i] : &io->out[i - io->n_in];
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size ? t->size : 1, t->name,
					 &tensors[i]);
		if (st != NRT_SUCCESS) {
			snprintf(err, err_len, "allocating %zu bytes for '%s' failed with status %d",
				 t->size, t->name, (int)st);
			goto out;
		}
		st = nrt_add_tensor_to_tensor_set(is_in ? in_set : out_set, t->name, tensors[i]);
		if (st == NRT_SUCCESS && is_in && t->size)
			st = nrt_tensor_write(tensors[i], t->data, 0, t->size);
		if (st != NRT_SUCCESS) {
			snprintf(err, err_len, "setting up tensor '%s' failed with status %d", t->name,
				 (int)st);
			goto out;
		}
	}
	double best = 1e300;
	for (int r = 0; r < (reps < 1 ? 1 : reps); r++) {
		/* an input aliased by an output is updated in place: restore it so every
		 * repetition computes the same thing */
		for (uint32_t i = 0; r > 0 && i < io->n_in; i++)
			if (io->in[i].size)
				nrt_tensor_write(tensors[i], io->in[i].data, 0, io->in[i].size);
		double t0 = ncc_e2e_now_ms();
		st = nrt_execute(model, in_set, out_set);
		double dt = ncc_e2e_now_ms() - t0;
		if (dt < best)
			best = dt;
		/* repetitions only sharpen the timing of short runs; a run of seconds is
		 * its own measurement */
		if (dt > 2000.0)
			reps = r + 1;
		if (st != NRT_SUCCESS) {
			nrt_neuronsim_exec_error_t rec;
			if (nrt_neuronsim_get_last_error(model, &rec) == NRT_SUCCESS && rec.message[0])
				snprintf(err, err_len, "nrt_execute failed with status %d: %s", (int)st,
					 rec.message);
			else
				snprintf(err, err_len, "nrt_execute failed with status %d", (int)st);
			goto out;
		}
	}
	if (out_ms)
		*out_ms = best;
	for (uint32_t i = 0; i < io->n_out; i++) {
		ncc_e2e_tensor_t *t = &io->out[i];
		if (t->size && (st = nrt_tensor_read(tensors[io->n_in + i], t->data, 0, t->size)) !=
				       NRT_SUCCESS) {
			snprintf(err, err_len, "reading output '%s' failed with status %d", t->name,
				 (int)st);
			goto out;
		}
	}
out:
	for (uint32_t i = 0; i < n; i++)
		if (tensors[i])
			nrt_tensor_free(&tensors[i]);
	free(tensors);
	if (in_set)
		nrt_destroy_tensor_set(&in_set);
	if (out_set)
		nrt_destroy_tensor_set(&out_set);
	if (model)
		nrt_unload(model);
	return st;
}


/* ---- the whole check: device vs reference interpreter ---- */

#include "interp/interp.h"
#include "hlo/ir.h"

/* Collects the array leaves of v depth-first into leaves (at most max). */
static inline int32_t ncc_e2e_leaves(ncc_value_t *v, ncc_value_t **leaves, int32_t n, int32_t max)
{
	if (v->shape.etype != NCC_TUPLE) {
		if (n < max)
			leaves[n] = v;
		return n + 1;
	}
	for (int32_t i = 0; i < v->nelems; i++)
		n = ncc_e2e_leaves(v->elems[i], leaves, n, max);
	return n;
}

/* Monte Carlo arithmetic behind the sensitivity allowance (docs/interp.md,
 * "Numerical sensitivity"): NCC_E2E_PERTURB_RUNS more reference runs move every
 * arithmetic result (and batch norm's statistics) by up to NCC_E2E_PERTURB_ULPS
 * ulps; an output that misses the module tolerance may still differ from the
 * reference by NCC_E2E_SENSITIVITY_FACTOR times the most any of those runs moved it
 * (the output's spread). Calibrated on the MobileNetV2 step at 64x64, seeds 1-8 and
 * 1234, -O0 and -O2 (which give the same bits): the largest factor a device output
 * needed was 4.7, and 11.7 on the full 224x224 step (seed 1234), both for gradients
 * of batch-norm offsets that a following batch norm cancels exactly (pure rounding
 * noise); the other corpus modules never need the allowance. */
#define NCC_E2E_PERTURB_ULPS 16
#define NCC_E2E_PERTURB_RUNS 2
#define NCC_E2E_SENSITIVITY_FACTOR 16.0

/* max(1, largest finite |x|) of an f32/bf16/f16/f64 leaf: the `scale` of
 * ncc_value_compare(). */
static inline double ncc_e2e_scale(const ncc_value_t *v)
{
	double s = 1.0;
	for (int64_t i = 0; i < ncc_value_elements(v); i++) {
		double x = fabs(ncc_value_get_f64(v, i));
		if (isfinite(x) && x > s)
			s = x;
	}
	return s;
}

/* Largest |a - b| over the elements finite in both. */
static inline double ncc_e2e_spread(const ncc_value_t *a, const ncc_value_t *b)
{
	double s = 0.0;
	for (int64_t i = 0; i < ncc_value_elements(a) && i < ncc_value_elements(b); i++) {
		double d = fabs(ncc_value_get_f64(a, i) - ncc_value_get_f64(b, i));
		if (isfinite(d) && d > s)
			s = d;
	}
	return s;
}

/* One device-vs-reference check between ncc_e2e_run() and ncc_e2e_finish(): the
 * arguments, the reference result, the device's outputs and which outputs still
 * need the sensitivity allowance. Owned by the check; ncc_e2e_finish() frees it. */
typedef struct ncc_e2e_check {
	const ncc_module_t *m;
	uint64_t seed;
	ncc_e2e_io_t io;
	ncc_value_t **args;
	int32_t nargs;
	ncc_value_t *result;
	ncc_value_t **leaves; /* the result's array leaves: leaf o is NEFF output o */
	int32_t nleaves;
	bool *pending;        /* pending[o]: float output o missed the module tolerance */
	int32_t npending;
} ncc_e2e_check_t;

static inline void ncc_e2e_check_free(ncc_e2e_check_t *c)
{
	free(c->leaves);
	free(c->pending);
	ncc_value_free(c->result);
	if (c->args)
		ncc_interp_free_args(c->args, c->nargs);
	ncc_e2e_io_free(&c->io);
	memset(c, 0, sizeof(*c));
}

/* Compares NEFF output o with reference leaf o under tol; fills cr. */
static inline bool ncc_e2e_compare_output(ncc_e2e_check_t *c, uint32_t o, const ncc_tolerance_t *tol,
					  ncc_compare_result_t *cr, char *why, size_t why_len, int *rc)
{
	const ncc_value_t *want = c->leaves[o];
	ncc_value_t *actual = NULL;
	if (want->nbytes != c->io.out[o].size || ncc_value_alloc(&want->shape, &actual) != NCC_OK) {
		snprintf(why, why_len, "output %u '%s': %zu bytes on the device, %zu expected", o,
			 c->io.out[o].name, c->io.out[o].size, want->nbytes);
		*rc = -1;
		return false;
	}
	if (want->nbytes)
		memcpy(actual->data, c->io.out[o].data, want->nbytes);
	bool ok = ncc_value_compare(want, actual, tol, cr);
	ncc_value_free(actual);
	return ok;
}

static inline void ncc_e2e_mismatch(ncc_e2e_check_t *c, uint32_t o, const ncc_compare_result_t *cr,
				    bool beyond_sensitivity, char *why, size_t why_len)
{
	char ty[128];
	ncc_shape_to_string(&c->leaves[o]->shape, false, ty, sizeof(ty));
	snprintf(why, why_len, "output %u '%s' (%s): %lld element(s) differ from the reference "
			       "interpreter%s; %s",
		 o, c->io.out[o].name, ty, (long long)cr->mismatches,
		 beyond_sensitivity ? " beyond its rounding sensitivity" : "", cr->msg);
}

/* Seeded model-like arguments for m's parameters (ncc_interp_model_args: batch-norm
 * scale 1 and offset 0, convolution kernels scaled by their fan-in, ReLU6 bounds 6,
 * dropout keep probabilities 0.8, everything else as ncc_interp_random_args: floats
 * in [-1, 1), integers in [0, NCC_RANDOM_INT_MAX], pred 0/1) are written to the
 * NEFF's inputs (input k is parameter k); the reference interpreter runs m
 * (*int_ms), the device runs neff (reps times, *dev_ms the fastest; its model is
 * unloaded again), and every output (NEFF output o is leaf o of the root,
 * depth-first) is compared with ncc_value_compare() under
 * ncc_tolerance_for_module() of its element type (docs/interp.md). Returns 0 when
 * all match, 1 on a mismatch, -1 when a side could not run (why says what), and 2
 * when only float outputs missed the tolerance: ncc_e2e_finish() then decides with
 * the sensitivity allowance. nrt_init() must have been called; the caller may
 * nrt_close() before ncc_e2e_finish() so the simulated device memory is returned
 * before the extra reference runs. *c is filled in every case and released by
 * ncc_e2e_finish() or ncc_e2e_check_free(). */
static inline int ncc_e2e_run(const ncc_module_t *m, const void *neff, size_t size, uint64_t seed,
			      int reps, double *dev_ms, double *int_ms, ncc_e2e_check_t *c, char *why,
			      size_t why_len)
{
	memset(c, 0, sizeof(*c));
	c->m = m;
	c->seed = seed;
	if (ncc_e2e_io_from_neff(neff, size, &c->io, why, why_len) != 0)
		return -1;
	if (ncc_interp_model_args(m, seed, &c->args, &c->nargs) != NCC_OK) {
		snprintf(why, why_len, "cannot make arguments for the entry parameters");
		return -1;
	}
	ncc_e2e_io_t *io = &c->io;
	if ((uint32_t)c->nargs != io->n_in) {
		snprintf(why, why_len, "the NEFF has %u inputs but the entry computation has %d "
				       "parameters", io->n_in, c->nargs);
		return -1;
	}
	for (uint32_t i = 0; i < io->n_in; i++) {
		if (c->args[i]->shape.etype == NCC_TUPLE || c->args[i]->nbytes != io->in[i].size) {
			snprintf(why, why_len, "NEFF input %u '%s' has %zu bytes but parameter %u has %zu",
				 i, io->in[i].name, io->in[i].size, i, c->args[i]->nbytes);
			return -1;
		}
		if (io->in[i].size)
			memcpy(io->in[i].data, c->args[i]->data, io->in[i].size);
	}
	/* The reference first: its intermediates are freed before the device touches its
	 * memory, so the peak is the larger of the two, not their sum. The device still
	 * runs when the reference fails, so the bench gets its time. */
	ncc_error_t err = {0};
	double t0 = ncc_e2e_now_ms();
	ncc_status_t ist = ncc_interp_run(m, (const ncc_value_t *const *)c->args, c->nargs, NULL,
					  &c->result, &err);
	if (int_ms && ist == NCC_OK)
		*int_ms = ncc_e2e_now_ms() - t0;
	NRT_STATUS st = ncc_e2e_device_run(neff, size, io, reps, dev_ms, why, why_len);
	if (ist != NCC_OK) {
		snprintf(why, why_len, "reference interpreter: %s", err.msg);
		return -1;
	}
	if (st != NRT_SUCCESS)
		return -1;
	c->nleaves = ncc_e2e_leaves(c->result, NULL, 0, 0);
	if ((uint32_t)c->nleaves != io->n_out) {
		snprintf(why, why_len, "the NEFF has %u outputs but the root has %d array leaves",
			 io->n_out, c->nleaves);
		return -1;
	}
	c->leaves = calloc(c->nleaves ? (size_t)c->nleaves : 1, sizeof(*c->leaves));
	c->pending = calloc(c->nleaves ? (size_t)c->nleaves : 1, sizeof(*c->pending));
	if (!c->leaves || !c->pending) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	ncc_e2e_leaves(c->result, c->leaves, 0, c->nleaves);
	int rc = 0;
	for (uint32_t o = 0; o < io->n_out && rc >= 0; o++) {
		ncc_tolerance_t tol = ncc_tolerance_for_module(c->leaves[o]->shape.etype);
		ncc_compare_result_t cr;
		if (ncc_e2e_compare_output(c, o, &tol, &cr, why, why_len, &rc) || rc < 0)
			continue;
		if (ncc_etype_is_float(c->leaves[o]->shape.etype)) {
			c->pending[o] = true;
			c->npending++;
		} else if (rc == 0) {
			ncc_e2e_mismatch(c, o, &cr, false, why, why_len);
			rc = 1;
		}
	}
	if (rc == 0 && c->npending > 0)
		rc = 2;
	return rc;
}

/* Decides the outputs ncc_e2e_run() left pending with the sensitivity allowance
 * (NCC_E2E_PERTURB_RUNS perturbed reference runs; docs/interp.md) and releases c.
 * *n_sensitive (may be NULL) counts the outputs that needed it. Returns 0 when they
 * all pass, 1 on a mismatch (why names the output), -1 when a perturbed run failed. */
static inline int ncc_e2e_finish(ncc_e2e_check_t *c, int32_t *n_sensitive, char *why, size_t why_len)
{
	ncc_value_t *perturbed[NCC_E2E_PERTURB_RUNS] = {0};
	ncc_value_t **pleaves[NCC_E2E_PERTURB_RUNS] = {0};
	int rc = 0;
	int32_t sensitive = 0;
	for (int k = 0; k < NCC_E2E_PERTURB_RUNS && c->npending > 0 && rc == 0; k++) {
		ncc_interp_options_t po = {0};
		po.perturb_ulps = NCC_E2E_PERTURB_ULPS;
		po.perturb_seed = c->seed ^ (0x5eed5eed5eedull * (uint64_t)(k + 1));
		ncc_error_t err = {0};
		pleaves[k] = calloc((size_t)c->nleaves, sizeof(*pleaves[k]));
		if (!pleaves[k]) {
			snprintf(why, why_len, "out of memory");
			rc = -1;
		} else if (ncc_interp_run(c->m, (const ncc_value_t *const *)c->args, c->nargs, &po,
					  &perturbed[k], &err) != NCC_OK) {
			snprintf(why, why_len, "perturbed reference interpreter: %s", err.msg);
			rc = -1;
		} else {
			ncc_e2e_leaves(perturbed[k], pleaves[k], 0, c->nleaves);
		}
	}
	for (uint32_t o = 0; o < (uint32_t)c->nleaves && rc == 0; o++) {
		if (!c->pending[o])
			continue;
		const ncc_value_t *want = c->leaves[o];
		double spread = 0.0;
		for (int k = 0; k < NCC_E2E_PERTURB_RUNS; k++) {
			double sk = ncc_e2e_spread(want, pleaves[k][o]);
			spread = sk > spread ? sk : spread;
		}
		/* the allowance enters as atol, which ncc_value_compare scales by the
		 * tensor's magnitude */
		ncc_tolerance_t wide = ncc_tolerance_for_module(want->shape.etype);
		wide.atol += NCC_E2E_SENSITIVITY_FACTOR * spread / ncc_e2e_scale(want);
		ncc_compare_result_t cr;
		if (ncc_e2e_compare_output(c, o, &wide, &cr, why, why_len, &rc)) {
			sensitive++;
		} else if (rc == 0) {
			ncc_e2e_mismatch(c, o, &cr, true, why, why_len);
			rc = 1;
		}
	}
	for (int k = 0; k < NCC_E2E_PERTURB_RUNS; k++) {
		free(pleaves[k]);
		ncc_value_free(perturbed[k]);
	}
	if (n_sensitive)
		*n_sensitive = sensitive;
	ncc_e2e_check_free(c);
	return rc;
}

/* ncc_e2e_run() then, when it returns 2, ncc_e2e_finish() with the runtime still
 * initialised: 0 when all outputs match, 1 on a mismatch, -1 when a side could not
 * run. *n_sensitive as for ncc_e2e_finish(). */
static inline int ncc_e2e_run_and_compare(const ncc_module_t *m, const void *neff, size_t size,
					  uint64_t seed, int reps, double *dev_ms, double *int_ms,
					  int32_t *n_sensitive, char *why, size_t why_len)
{
	ncc_e2e_check_t c;
	int rc = ncc_e2e_run(m, neff, size, seed, reps, dev_ms, int_ms, &c, why, why_len);
	if (n_sensitive)
		*n_sensitive = 0;
	if (rc == 2)
		return ncc_e2e_finish(&c, n_sensitive, why, why_len);
	ncc_e2e_check_free(&c);
	return rc;
}

#endif /* NCC_E2E_H */
