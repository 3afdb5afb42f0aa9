/* PJRT_LoadedExecutable_Execute: arguments bound to the NEFF's inputs by position, donation of in-place updated inputs, nrt_execute per device, runtime errors turned into PJRT errors with the runtime's message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt_neuronsim.h"
#include "analyze.h"
#include "pjrt_internal.h"

/* How one output of one execution gets its tensor. */
typedef enum out_kind {
	OUT_NEW,        /* a fresh tensor in the output set */
	OUT_DONATED,    /* updates input p's own tensor, taken from its buffer */
	OUT_COPY,       /* updates a copy of input p (p is not donatable) */
} out_kind_t;

typedef struct run {
	pjrt_exec_t *e;
	pjrt_device_t *dev;
	size_t np, nr;
	pjrt_buffer_t **bufs;           /* argument buffers, with handle references */
	nrt_tensor_t **in;              /* tensor bound to input p */
	bool *donated;                  /* input p's tensor was taken from its buffer */
	out_kind_t *kind;
	nrt_tensor_t **out;             /* tensor of output k (owned until wrapped) */
} run_t;

static bool in_list(const int64_t *list, size_t n, size_t v)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] >= 0 && (size_t)list[i] == v)
			return true;
	return false;
}

static bool shape_equal(const pjrt_buffer_t *b, const pjrt_array_t *a)
{
	if (b->type != a->type || b->rank != a->rank)
		return false;
	for (size_t d = 0; d < b->rank; d++)
		if (b->dims[d] != a->dims[d])
			return false;
	return true;
}

static void shape_str(PJRT_Buffer_Type t, size_t rank, const int64_t *dims, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s[", pjrt_type_name(t));
	for (size_t d = 0; d < rank && n > 0 && (size_t)n < size; d++)
		n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "", (long long)dims[d]);
	if (n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "]");
}

/* Gives the tensors back: donated ones to their buffers (the execution did not
 * happen or failed), new ones and copies are freed. */
static void run_undo(run_t *r)
{
	for (size_t k = 0; k < r->nr; k++)
		if (r->kind[k] != OUT_DONATED)
			nrt_tensor_free(&r->out[k]);
	for (size_t p = 0; p < r->np; p++) {
		if (!r->donated[p])
			continue;
		pjrt_buffer_t *b = r->bufs[p];
		pthread_mutex_lock(&b->lock);
		b->tensor = r->in[p];
		b->deleted = false;
		pthread_mutex_unlock(&b->lock);
		r->donated[p] = false;
	}
}

/* The message of a failed nrt_execute: the status and the runtime's error
 * record, which names the HLO instruction, its op type and source line. */
static void exec_message(const run_t *r, nrt_model_t *model, NRT_STATUS st, char *buf, size_t size)
{
	nrt_neuronsim_exec_error_t rec;
	memset(&rec, 0, sizeof(rec));
	bool have = nrt_neuronsim_get_last_error(model, &rec) == NRT_SUCCESS &&
		    rec.kind != NRT_NEURONSIM_ERROR_NONE && rec.message[0];
	snprintf(buf, size, "execution of '%s' on NeuronCore %u failed: %s (%d)%s%s", r->e->name, r->dev->index,
		 nrt_get_status_as_str(st), (int)st, have ? ": " : "", have ? rec.message : "");
}

/* Statuses of an execution that ran and failed on the device. PJRT reports
 * those through the outputs and the completion event, not as a launch error:
 * the framework then raises when it reads a result (PyTorch/XLA: a
 * RuntimeError at .cpu()/.item()) instead of keeping the error as a failed
 * launch that it raises again at exit. */
static bool device_failure(NRT_STATUS st)
{
	switch (st) {
	case NRT_EXEC_COMPLETED_WITH_NUM_ERR: case NRT_EXEC_COMPLETED_WITH_ERR: case NRT_EXEC_OOB:
	case NRT_TIMEOUT: case NRT_HW_ERROR:
		return true;
	default:
		return st >= NRT_EXEC_HW_ERR_COLLECTIVES && st <= NRT_NETWORK_PROXY_FAILURE;
	}
}

/* Every output of r becomes a buffer holding code and msg. */
static PJRT_Error *fail_outputs(const run_t *r, PJRT_Error_Code code, const char *msg, PJRT_Buffer **outv)
{
	for (size_t k = 0; k < r->nr; k++) {
		const pjrt_array_t *a = &r->e->sig.results[k];
		PJRT_Error *err = pjrt_buffer_wrap_error(r->dev, a->type, a->rank, a->dims, code, msg, &outv[k]);
		if (err) {
			pjrt_buffers_destroy(outv, k);
			return err;
		}
	}
	return NULL;
}

/* One execution on one device: argv[np] in, outv[nr] out. A launch failure is
 * returned; a failure on the device (or an argument holding one) fills outv
 * with errored buffers and sets *dev_code and dev_msg for the completion event. */
static PJRT_Error *run_one(pjrt_exec_t *e, uint32_t core, PJRT_Buffer *const *argv, const int64_t *nondon,
			   size_t n_nondon, PJRT_Buffer **outv, PJRT_Error_Code *dev_code, char *dev_msg,
			   size_t dev_msg_size)
{
	static const char fn[] = "PJRT_LoadedExecutable_Execute";
	run_t r = { .e = e, .np = e->sig.n_params, .nr = e->sig.n_results };
	r.dev = &e->client->devices[core];
	r.bufs = calloc(r.np + 1, sizeof(*r.bufs));
	r.in = calloc(r.np + 1, sizeof(*r.in));
	r.donated = calloc(r.np + 1, sizeof(*r.donated));
	r.kind = calloc(r.nr + 1, sizeof(*r.kind));
	r.out = calloc(r.nr + 1, sizeof(*r.out));
	nrt_tensor_set_t *ins = NULL, *outs = NULL;
	PJRT_Error *err = NULL;
	nrt_model_t *model = NULL;
	size_t wrapped = 0;
	if (!r.bufs || !r.in || !r.donated || !r.kind || !r.out) {
		err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
		goto out;
	}
	if (!e->neff) {
		/* analyze mode: zero-filled outputs, nothing runs (analyze.h) */
		err = pjrt_analyze_run(e, r.dev, outv);
		goto out;
	}
	if ((err = pjrt_exec_model(e, core, &model)))
		goto out;
	/* Arguments: live, on this core, of the parameter's type and shape. */
	for (size_t p = 0; p < r.np && !err; p++) {
		r.bufs[p] = pjrt_handle_get(PJRT_HANDLE(argv[p]), PJRT_KIND_BUFFER);
		const pjrt_buffer_t *b = r.bufs[p];
		const pjrt_array_t *a = &e->sig.params[p];
		char want[128], got[128];
		if (!b) {
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: argument %zu of '%s' (%p) is not a live PJRT_Buffer", fn, p, e->name,
					 (void *)argv[p]);
		} else if (b->dev != r.dev) {
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: argument %zu of '%s' is on NeuronCore %u, the execution on %u", fn, p,
					 e->name, b->dev->index, core);
		} else if (!shape_equal(b, a)) {
			shape_str(a->type, a->rank, a->dims, want, sizeof(want));
			shape_str(b->type, b->rank, b->dims, got, sizeof(got));
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: argument %zu of '%s' is %s, parameter %zu is %s", fn, p, e->name, got,
					 p, want);
		}
	}
	if (err)
		goto out;
	/* An argument that holds a failed execution's error: nothing runs, the
	 * error flows into the outputs, as XLA propagates it. */
	for (size_t p = 0; p < r.np; p++) {
		pjrt_buffer_t *b = r.bufs[p];
		pthread_mutex_lock(&b->lock);
		if (b->error && !*dev_code) {
			*dev_code = b->error;
			snprintf(dev_msg, dev_msg_size, "%s", b->error_msg);
		}
		pthread_mutex_unlock(&b->lock);
	}
	if (*dev_code) {
		err = fail_outputs(&r, *dev_code, dev_msg, outv);
		goto out;
	}
	/* Outputs: donation follows PJRT: an input updated in place is donated
	 * unless the caller marked it non-donatable or passes that buffer twice. */
	for (size_t k = 0; k < r.nr; k++) {
		int32_t p = e->alias[k];
		r.kind[k] = OUT_NEW;
		if (p < 0)
			continue;
		bool twice = false;
		for (size_t q = 0; q < r.np; q++)
			twice = twice || (q != (size_t)p && argv[q] == argv[p]);
		r.kind[k] = twice || in_list(nondon, n_nondon, (size_t)p) ? OUT_COPY : OUT_DONATED;
	}
	for (size_t p = 0; p < r.np && !err; p++) {
		pjrt_buffer_t *b = r.bufs[p];
		bool donate = false;
		for (size_t k = 0; k < r.nr; k++)
			donate = donate || (r.kind[k] == OUT_DONATED && e->alias[k] == (int32_t)p);
		pthread_mutex_lock(&b->lock);
		if (b->deleted) {
			err = pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
					 "%s: argument %zu of '%s' was deleted or donated to an earlier execution",
					 fn, p, e->name);
		} else {
			r.in[p] = b->tensor;
			if (donate) {
				b->tensor = NULL;
				b->deleted = true;
				r.donated[p] = true;
			}
		}
		pthread_mutex_unlock(&b->lock);
	}
	if (err)
		goto undo;
	/* The outputs the execution writes whole (new ones, and the copies of
	 * non-donatable arguments) take the tensors of destroyed buffers of
	 * their sizes first; what is left in the pool goes before the others
	 * are allocated: the pool holds memory only from a buffer's destruction
	 * to the next execution. */
	int64_t reused = 0;
	for (size_t k = 0; k < r.nr; k++)
		if (e->out_names[k] && r.kind[k] != OUT_DONATED &&
		    (r.out[k] = pjrt_pool_take(r.dev, e->out_sizes[k])))
			reused++;
	pjrt_pool_drain(r.dev);
	if (reused)
		nrt_neuronsim_counter_add("ReusedOutputBuffer", reused);
	for (size_t k = 0; k < r.nr && !err; k++) {
		int32_t p = e->alias[k];
		if (!e->out_names[k]) {
			/* no elements, no NEFF tensor: the output is an empty buffer */
		} else if (r.kind[k] == OUT_DONATED) {
			r.out[k] = r.in[p];
		} else if (!r.out[k] &&
			   (err = pjrt_tensor_new(r.dev, e->out_sizes[k], e->out_names[k], &r.out[k]))) {
			break;
		}
		if (r.kind[k] == OUT_COPY && r.out[k]) {
			NRT_STATUS st = nrt_tensor_copy(r.in[p], 0, r.out[k], 0, e->out_sizes[k]);
			if (st != NRT_SUCCESS)
				err = pjrt_error(pjrt_code_from_nrt(st), "%s: copying argument %d of '%s': %s", fn, p,
						 e->name, nrt_get_status_as_str(st));
		}
	}
	if (err)
		goto undo;
	NRT_STATUS st = nrt_allocate_tensor_set(&ins);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&outs);
	/* a zero-element argument has no NEFF tensor: nothing to bind */
	for (size_t p = 0; p < r.np && st == NRT_SUCCESS; p++)
		if (e->in_names[p])
			st = nrt_add_tensor_to_tensor_set(ins, e->in_names[p], r.in[p]);
	/* An in-place output stays out of the output set: nrt_execute then
	 * updates the tensor bound to its input, which is the donated tensor or
	 * the copy, bound in the input's place. */
	for (size_t k = 0; k < r.nr && st == NRT_SUCCESS; k++) {
		if (!e->out_names[k])
			continue;
		if (r.kind[k] == OUT_NEW)
			st = nrt_add_tensor_to_tensor_set(outs, e->out_names[k], r.out[k]);
		else
			st = nrt_add_tensor_to_tensor_set(ins, e->in_names[e->alias[k]], r.out[k]);
	}
	if (st != NRT_SUCCESS) {
		err = pjrt_error(pjrt_code_from_nrt(st), "%s: building the tensor sets of '%s': %s", fn, e->name,
				 nrt_get_status_as_str(st));
		goto undo;
	}
	st = nrt_execute(model, ins, outs);
	if (st != NRT_SUCCESS && !device_failure(st)) {
		char msg[1024];
		exec_message(&r, model, st, msg, sizeof(msg));
		err = pjrt_error(pjrt_code_from_nrt(st), "%s", msg);
		goto undo;
	}
	if (st != NRT_SUCCESS) {
		/* It ran: donated inputs are consumed, the outputs carry the error. */
		*dev_code = pjrt_code_from_nrt(st);
		exec_message(&r, model, st, dev_msg, dev_msg_size);
		if (pjrt_trace_on())
			pjrt_log("%s", dev_msg);
		for (size_t p = 0; p < r.np; p++)
			r.donated[p] = false;
		for (size_t k = 0; k < r.nr; k++)
			nrt_tensor_free(&r.out[k]);
		err = fail_outputs(&r, *dev_code, dev_msg, outv);
		goto out;
	}
	if (pjrt_trace_on()) {
		size_t nd = 0, nc = 0;
		for (size_t k = 0; k < r.nr; k++) {
			nd += r.kind[k] == OUT_DONATED;
			nc += r.kind[k] == OUT_COPY;
		}
		pjrt_log("executed '%s' on NeuronCore %u: %zu arguments, %zu outputs (%zu updated a donated "
			 "argument in place, %zu a copy of a non-donatable one)", e->name, core, r.np, r.nr, nd, nc);
	}
	/* Success: the donated inputs are gone for good; outputs become buffers. */
	for (size_t p = 0; p < r.np; p++)
		r.donated[p] = false;
	for (size_t k = 0; k < r.nr; k++) {
		const pjrt_array_t *a = &e->sig.results[k];
		nrt_tensor_t *t = r.out[k];
		r.out[k] = NULL;
		r.kind[k] = OUT_NEW;
		if ((err = pjrt_buffer_wrap(r.dev, a->type, a->rank, a->dims, t, &outv[k])))
			break;
		wrapped++;
	}
	if (err)
		pjrt_buffers_destroy(outv, wrapped);
	goto out;
undo:
	run_undo(&r);
out:
	nrt_destroy_tensor_set(&ins);
	nrt_destroy_tensor_set(&outs);
	if (r.bufs)
		for (size_t p = 0; p < r.np; p++)
			if (r.bufs[p])
				pjrt_handle_put(r.bufs[p]->h);
	free(r.bufs);
	free(r.in);
	free(r.donated);
	free(r.kind);
	free(r.out);
	return err;
}

PJRT_IMPL(LoadedExecutable_Execute)
{
	static const char fn[] = "PJRT_LoadedExecutable_Execute";
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args, device_complete_events);
	PJRT_GET(pjrt_exec_handle_t, lo, PJRT_KIND_LOADED, args->executable, fn);
	pjrt_exec_t *e = lo->exec;
	PJRT_Error *err = NULL;
	const int64_t *nondon = NULL;
	size_t n_nondon = 0;
	const PJRT_ExecuteOptions *o = args->options;
	if (o && o->struct_size >= PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, num_non_donatable_input_indices)) {
		nondon = o->non_donatable_input_indices;
		n_nondon = nondon ? o->num_non_donatable_input_indices : 0;
	}
	PJRT_Device *exec_dev = PJRT_HAS_FIELD(args, PJRT_LoadedExecutable_Execute_Args, execute_device)
					? args->execute_device : NULL;
	size_t ndev = args->num_devices;
	uint32_t cores[1];
	const uint32_t *core_of = e->addr_index;
	if (exec_dev) {
		pjrt_device_t *d = pjrt_device_lookup(exec_dev, e->client);
		if (!d)
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: execute_device %p is not a device of "
					 "the executable's client", fn, (void *)exec_dev);
		else if (ndev != 1)
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: execute_device is set, so num_devices must be 1, not %zu", fn, ndev);
		cores[0] = d ? d->index : 0;
		core_of = cores;
	} else if (ndev != e->n_addr) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
				 "%s: '%s' runs on %zu devices (its replicas), num_devices is %zu", fn, e->name,
				 e->n_addr, ndev);
	}
	if (!err && args->num_args != e->sig.n_params)
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: '%s' takes %zu arguments, %zu given", fn,
				 e->name, e->sig.n_params, args->num_args);
	if (!err && ndev && (!args->output_lists || (e->sig.n_params && !args->argument_lists)))
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: argument_lists or output_lists is NULL", fn);
	for (size_t i = 0; i < ndev && !err; i++)
		if (!args->output_lists[i] || (e->sig.n_params && !args->argument_lists[i]))
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
					 "%s: the argument or output list of device %zu is NULL", fn, i);
	size_t done = 0;
	PJRT_Error_Code *codes = calloc(ndev + 1, sizeof(*codes));
	char (*msgs)[1024] = calloc(ndev + 1, sizeof(*msgs));
	if (!err && (!codes || !msgs))
		err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
	for (size_t i = 0; i < ndev && !err; i++) {
		err = run_one(e, core_of[i], e->sig.n_params ? args->argument_lists[i] : NULL, nondon, n_nondon,
			      args->output_lists[i], &codes[i], msgs[i], sizeof(msgs[i]));
		if (!err)
			done++;
	}
	if (!err && args->device_complete_events) {
		size_t made = 0;
		for (size_t i = 0; i < ndev && !err; i++)
			if (!(err = pjrt_event_new(codes[i], msgs[i], &args->device_complete_events[i])))
				made++;
		if (err) {
			for (size_t i = 0; i < made; i++) {
				PJRT_Event_Destroy_Args d = { .struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
							      .event = args->device_complete_events[i] };
				PJRT_Error *e2 = pjrt_impl_Event_Destroy(&d);
				(void)e2;
				args->device_complete_events[i] = NULL;
			}
		}
	}
	if (err)
		for (size_t i = 0; i < done; i++)
			pjrt_buffers_destroy(args->output_lists[i], e->sig.n_results);
	free(codes);
	free(msgs);
	pjrt_handle_put(lo->h);
	return err;
}
