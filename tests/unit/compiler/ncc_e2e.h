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
	if (neff_parse(neff, size, &v, err, err_len) != NEFF_OK)
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

#include "interp.h"
#include "ir.h"

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

/* Seeded random arguments for m's parameters (ncc_interp_random_args: floats in
 * [-1, 1), integers in [0, NCC_RANDOM_INT_MAX], pred 0/1) are written to the NEFF's
 * inputs (input k is parameter k); the device runs neff (reps times, *dev_ms the
 * fastest), the reference interpreter runs m (*int_ms), and every output (NEFF
 * output o is leaf o of the root, depth-first) is compared with ncc_value_compare()
 * under ncc_tolerance_for_module() of its element type (docs/interp.md). Returns 0
 * when all match, 1 on a mismatch, -1 when a side could not run; why says what.
 * nrt_init() must have been called. */
static inline int ncc_e2e_run_and_compare(const ncc_module_t *m, const void *neff, size_t size,
					  uint64_t seed, int reps, double *dev_ms, double *int_ms,
					  void *reserved, char *why, size_t why_len)
{
	(void)reserved;
	ncc_e2e_io_t io;
	ncc_value_t **args = NULL, *result = NULL, *actual = NULL;
	ncc_value_t **leaves = NULL;
	int32_t nargs = 0;
	int rc = -1;
	if (ncc_e2e_io_from_neff(neff, size, &io, why, why_len) != 0)
		return -1;
	if (ncc_interp_random_args(m, seed, &args, &nargs) != NCC_OK) {
		snprintf(why, why_len, "cannot make random arguments for the entry parameters");
		goto out;
	}
	if ((uint32_t)nargs != io.n_in) {
		snprintf(why, why_len, "the NEFF has %u inputs but the entry computation has %d "
				       "parameters", io.n_in, nargs);
		goto out;
	}
	for (uint32_t i = 0; i < io.n_in; i++) {
		if (args[i]->shape.etype == NCC_TUPLE || args[i]->nbytes != io.in[i].size) {
			snprintf(why, why_len, "NEFF input %u '%s' has %zu bytes but parameter %u has %zu",
				 i, io.in[i].name, io.in[i].size, i, args[i]->nbytes);
			goto out;
		}
		if (io.in[i].size)
			memcpy(io.in[i].data, args[i]->data, io.in[i].size);
	}
	/* The reference first: its intermediates are freed before the device touches its
	 * memory, so the peak is the larger of the two, not their sum (the MobileNetV2
	 * step needs ~9 GB of device scratch and as much interpreter state). The device
	 * still runs when the reference fails, so the bench gets its time. */
	ncc_error_t err = {0};
	double t0 = ncc_e2e_now_ms();
	ncc_status_t ist = ncc_interp_run(m, (const ncc_value_t *const *)args, nargs, NULL, &result,
					  &err);
	if (int_ms && ist == NCC_OK)
		*int_ms = ncc_e2e_now_ms() - t0;
	NRT_STATUS st = ncc_e2e_device_run(neff, size, &io, reps, dev_ms, why, why_len);
	if (ist != NCC_OK) {
		snprintf(why, why_len, "reference interpreter: %s", err.msg);
		goto out;
	}
	if (st != NRT_SUCCESS)
		goto out;
	int32_t nleaves = ncc_e2e_leaves(result, NULL, 0, 0);
	if ((uint32_t)nleaves != io.n_out) {
		snprintf(why, why_len, "the NEFF has %u outputs but the root has %d array leaves",
			 io.n_out, nleaves);
		goto out;
	}
	leaves = calloc(nleaves ? (size_t)nleaves : 1, sizeof(*leaves));
	if (!leaves) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	ncc_e2e_leaves(result, leaves, 0, nleaves);
	rc = 0;
	for (uint32_t o = 0; o < io.n_out && rc == 0; o++) {
		const ncc_value_t *want = leaves[o];
		if (want->nbytes != io.out[o].size ||
		    ncc_value_alloc(&want->shape, &actual) != NCC_OK) {
			snprintf(why, why_len, "output %u '%s': %zu bytes on the device, %zu expected",
				 o, io.out[o].name, io.out[o].size, want->nbytes);
			rc = -1;
			break;
		}
		if (want->nbytes)
			memcpy(actual->data, io.out[o].data, want->nbytes);
		ncc_tolerance_t tol = ncc_tolerance_for_module(want->shape.etype);
		ncc_compare_result_t cr;
		if (!ncc_value_compare(want, actual, &tol, &cr)) {
			char ty[128];
			ncc_shape_to_string(&want->shape, false, ty, sizeof(ty));
			snprintf(why, why_len, "output %u '%s' (%s): %lld element(s) differ from the "
					       "reference interpreter; %s",
				 o, io.out[o].name, ty, (long long)cr.mismatches, cr.msg);
			rc = 1;
		}
		ncc_value_free(actual);
		actual = NULL;
	}
out:
	free(leaves);
	ncc_value_free(result);
	if (args)
		ncc_interp_free_args(args, nargs);
	ncc_e2e_io_free(&io);
	return rc;
}

#endif /* NCC_E2E_H */
