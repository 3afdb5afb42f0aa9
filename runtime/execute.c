/* nrt_execute: binds tensors to regions, runs each core's program through the backend, maps and reports errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "observe.h"
#include "tensor_set.h"

#define STACK_TENSORS 16

/* One I/O tensor of an execution. */
typedef struct binding {
	nrt_tensor_t *handle;     /* acquired; NULL when not bound */
	nrt_tensor_obj_t *t;
	nrt_backend_mem_t staging;/* host tensors: device copy for this run */
	int alias_of;             /* output bound to input alias_of's memory, or -1 */
} binding_t;

static const char *region_name(const nrt_model_obj_t *m, uint32_t region)
{
	if (region == ISA_REGION_CONST)
		return "constants";
	if (region == ISA_REGION_SCRATCH)
		return "scratch";
	if (region >= ISA_REGION_IO0 && region - ISA_REGION_IO0 < m->view.meta->n_tensors)
		return m->view.tensors[region - ISA_REGION_IO0].name;
	return "?";
}

/* Fills the model's and the execution's error record from the backend's; the
 * failure, if any, comes back as a status for nrt_execute to report (a NaN
 * that NEURON_RT_NUMERICAL_ERRORS_VERBOSITY lets pass is logged here, as a
 * warning). */
static ns_status_t report(const nrt_ctx_t *ctx, nrt_model_obj_t *m, uint32_t logical_nc, nrt_backend_status_t bs,
			 const nrt_backend_error_t *be, nrt_neuronsim_exec_error_t *out)
{
	/* NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=warning: the NaN is recorded and
	 * logged as a warning, the execution counts as a success. */
	bool num_warn = bs == NRT_BACKEND_NUM_ERR && ctx->config.num_err_verbosity == NRT_NUM_ERR_WARNING;
	nrt_neuronsim_exec_error_t r;
	memset(&r, 0, sizeof(r));
	NRT_STATUS st;
	switch (bs) {
	case NRT_BACKEND_OK: st = NRT_SUCCESS; break;
	case NRT_BACKEND_NUM_ERR: st = num_warn ? NRT_SUCCESS : NRT_EXEC_COMPLETED_WITH_NUM_ERR; break;
	case NRT_BACKEND_OOB: st = NRT_EXEC_OOB; break;
	case NRT_BACKEND_TIMEOUT: st = NRT_TIMEOUT; break;
	case NRT_BACKEND_INVALID: st = NRT_INVALID; break;
	case NRT_BACKEND_DEADLOCK: st = NRT_EXEC_COMPLETED_WITH_ERR; break;
	case NRT_BACKEND_NOMEM: st = NRT_RESOURCE; break;
	case NRT_BACKEND_DEVICE_LOST: st = NRT_HW_ERROR; break;
	default: st = NRT_FAILURE; break;
	}
	r.status = st;
	ns_status_t err = NS_OK;
	const char *model_name = m->view.meta->model_name;
	if (bs != NRT_BACKEND_OK) {
		const char *hlo = NULL, *op = NULL, *file = NULL;
		uint32_t line = 0;
		neff_debug_lookup(&m->view, be->debug_id, &hlo, &op, &file, &line);
		r.logical_nc = logical_nc;
		r.engine = be->engine;
		r.insn_index = be->insn_index;
		r.region = be->region;
		r.source_line = line;
		r.first_index = be->first_index;
		r.count = be->count;
		snprintf(r.hlo_name, sizeof(r.hlo_name), "%s", hlo ? hlo : "");
		snprintf(r.op_type, sizeof(r.op_type), "%s", op ? op : "");
		snprintf(r.source_file, sizeof(r.source_file), "%s", file ? file : "");
		snprintf(r.tensor, sizeof(r.tensor), "%s", region_name(m, be->region));
		char where[600];
		if (hlo)
			snprintf(where, sizeof(where), "%s engine instruction %u (hlo '%s', op_type '%s', at %s:%u)",
				 isa_engine_name(be->engine), be->insn_index, hlo, op ? op : "?",
				 file && *file ? file : "?", line);
		else
			snprintf(where, sizeof(where), "%s engine instruction %u (no debug info)",
				 isa_engine_name(be->engine), be->insn_index);
		char msg[2048];
		if (bs == NRT_BACKEND_NUM_ERR) {
			r.kind = be->is_inf ? NRT_NEURONSIM_ERROR_INF : NRT_NEURONSIM_ERROR_NAN;
			snprintf(msg, sizeof(msg),
				 "model '%s' core %u: %s produced %llu %s value(s) in output '%s' "
				 "(region %u) starting at flat index %llu%s", model_name, logical_nc, where,
				 (unsigned long long)be->count, be->is_inf ? "Inf" : "NaN", r.tensor,
				 be->region, (unsigned long long)be->first_index,
				 be->num_err_insns > 1 ? " (first of several bad instructions)" : "");
		} else {
			r.kind = bs == NRT_BACKEND_OOB ? NRT_NEURONSIM_ERROR_OOB :
				 bs == NRT_BACKEND_TIMEOUT ? NRT_NEURONSIM_ERROR_TIMEOUT :
				 NRT_NEURONSIM_ERROR_OTHER;
			snprintf(msg, sizeof(msg), "model '%s' core %u: %s at %s%s%s%s%s",
				 model_name, logical_nc, nrt_get_status_as_str(st), where,
				 bs == NRT_BACKEND_OOB ? ", operand in region of '" : "",
				 bs == NRT_BACKEND_OOB ? r.tensor : "",
				 bs == NRT_BACKEND_OOB ? "'" : "",
				 be->message[0] ? ": " : "");
			size_t l = strlen(msg);
			snprintf(msg + l, sizeof(msg) - l, "%.*s", (int)sizeof(be->message), be->message);
		}
		if (num_warn)
			NRT_LOGW("%s", msg);
		else
			err = nrt_status_make(st, "%s", msg);
		snprintf(r.message, sizeof(r.message), "%.*s", (int)sizeof(r.message) - 1, msg);
	}
	pthread_mutex_lock(&m->err_lock);
	m->last_error = r;
	m->executed = true;
	pthread_mutex_unlock(&m->err_lock);
	*out = r;
	return err;
}

static void busy_lock(nrt_core_t *c)
{
	while (atomic_exchange_explicit(&c->busy_lock, true, memory_order_acquire))
		;
}

static void busy_unlock(nrt_core_t *c)
{
	atomic_store_explicit(&c->busy_lock, false, memory_order_release);
}

void nrt_core_busy_begin(nrt_ctx_t *ctx, uint32_t first, uint32_t n, uint64_t start_ns)
{
	for (uint32_t i = 0; i < n; i++) {
		nrt_core_t *c = &ctx->cores[first + i];
		busy_lock(c);
		c->running++;
		c->running_start_sum += start_ns;
		busy_unlock(c);
	}
}

void nrt_core_busy_end(nrt_ctx_t *ctx, uint32_t first, uint32_t n, uint64_t start_ns,
		       uint64_t end_ns)
{
	for (uint32_t i = 0; i < n; i++) {
		nrt_core_t *c = &ctx->cores[first + i];
		busy_lock(c);
		c->running--;
		c->running_start_sum -= start_ns;
		atomic_fetch_add_explicit(&c->busy_ns, end_ns - start_ns, memory_order_relaxed);
		busy_unlock(c);
	}
}

uint64_t nrt_core_busy_ns(nrt_core_t *c, uint64_t now_ns)
{
	busy_lock(c);
	uint64_t b = atomic_load_explicit(&c->busy_ns, memory_order_relaxed);
	/* now - start of each running execution; a start after now (a reader whose
	 * clock read came first) counts 0 */
	uint64_t run = c->running * now_ns;
	if (run > c->running_start_sum)
		b += run - c->running_start_sum;
	busy_unlock(c);
	return b;
}

/* Per-core counters (nrt_neuronsim_get_core_stats) of one finished execution. */
static void count_execution(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec, uint32_t first_core, uint32_t n_cores)
{
	nrt_core_t *c = &ctx->cores[first_core];
	for (uint32_t i = 0; i < n_cores; i++)
		atomic_fetch_add(&c[i].n_exec, 1); /* busy time: nrt_core_busy_end */
	if (rec->ran && rec->error.kind != NRT_NEURONSIM_ERROR_NONE && rec->error.logical_nc < ctx->n_cores)
		c = &ctx->cores[rec->error.logical_nc];
	switch (rec->status) {
	case NRT_SUCCESS:
		/* a NaN under NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=warning */
		if (rec->error.kind == NRT_NEURONSIM_ERROR_NAN || rec->error.kind == NRT_NEURONSIM_ERROR_INF)
			atomic_fetch_add(&c->n_num_err, 1);
		else
			atomic_fetch_add(&c->n_ok, 1);
		break;
	case NRT_EXEC_COMPLETED_WITH_NUM_ERR: atomic_fetch_add(&c->n_num_err, 1); break;
	case NRT_TIMEOUT: atomic_fetch_add(&c->n_timeout, 1); break;
	case NRT_INVALID:
	case NRT_INVALID_HANDLE:
		if (!rec->ran) {
			atomic_fetch_add(&c->n_bad_input, 1);
			break;
		}
		/* fall through */
	default: atomic_fetch_add(&c->n_err, 1); break;
	}
}

/* Everything that watches executions, once the execution is over. */
static void observe_end(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec)
{
	nrt_metrics_exec(ctx, rec);
	nrt_stats_exec(ctx, rec);
	nrt_profile_exec(ctx, rec);
}

static nrt_instance_t *instance_lock(nrt_model_obj_t *m)
{
	/* Take any idle replica; otherwise queue on one, round-robin. */
	for (uint32_t i = 0; i < m->n_instances; i++)
		if (pthread_mutex_trylock(&m->instances[i].lock) == 0)
			return &m->instances[i];
	nrt_instance_t *in = &m->instances[atomic_fetch_add(&m->next_instance, 1) % m->n_instances];
	pthread_mutex_lock(&in->lock);
	return in;
}

/* Resolves, checks and acquires the tensor of model tensor i. */
static ns_status_t bind_one(nrt_ctx_t *ctx, nrt_model_obj_t *m, uint32_t i,
			   const nrt_tensor_set_obj_t *in_set, const nrt_tensor_set_obj_t *out_set,
			   binding_t *b)
{
	const neff_tensor_t *nt = &m->view.tensors[i];
	bool input = nt->usage == NEFF_USAGE_INPUT;
	nrt_tensor_t *h = nrt_tensor_set_find(input ? in_set : out_set, nt->name);
	b->alias_of = -1;
	if (!h) {
		if (!input && nt->alias_input >= 0 && (uint32_t)nt->alias_input < m->view.meta->n_tensors) {
			/* In-place update: the aliased input's tensor is the output. */
			b->alias_of = nt->alias_input;
			return NS_OK;
		}
		return nrt_status_make(NRT_INVALID, "model '%s': %s tensor '%s' is missing from the %s set",
				       m->view.meta->model_name, input ? "input" : "output", nt->name,
				       input ? "input" : "output");
	}
	void *obj;
	if (nrt_handle_acquire(&ctx->tensors, nrt_handle_of(h), &obj))
		return nrt_status_make(NRT_INVALID_HANDLE, "model '%s': %s '%s' is bound to %p, which is not "
				       "a live tensor (freed?)", m->view.meta->model_name,
				       input ? "input" : "output", nt->name, (void *)h);
	b->handle = h;
	b->t = obj;
	if (!b->t->storage)
		return nrt_status_make(NRT_INVALID, "model '%s': tensor '%s' for '%s' has no storage "
				       "(allocate_empty without attach_buffer)", m->view.meta->model_name,
				       b->t->name, nt->name);
	if (b->t->size != nt->size)
		return nrt_status_make(NRT_INVALID, "model '%s': %s '%s' is %llu bytes but tensor '%s' has %llu",
				       m->view.meta->model_name, input ? "input" : "output", nt->name,
				       (unsigned long long)nt->size, b->t->name, (unsigned long long)b->t->size);
	return NS_OK;
}

static void unbind_all(nrt_ctx_t *ctx, uint32_t device, binding_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (b[i].staging.size)
			nrt_devmem_free(ctx, device, NRT_NEURONSIM_MEM_STAGING, &b[i].staging);
		if (b[i].handle)
			nrt_handle_release(&ctx->tensors, nrt_handle_of(b[i].handle));
	}
}

/* *out_code: the execution's NRT_STATUS once it is known (its status's detail,
 * which a status made while memory ran out does not carry). */
static ns_status_t execute_once(nrt_ctx_t *ctx, nrt_model_obj_t *m, const nrt_tensor_set_obj_t *in_set,
			       const nrt_tensor_set_obj_t *out_set, NRT_STATUS *out_code)
{
	uint32_t n = m->view.meta->n_tensors;
	binding_t stack_b[STACK_TENSORS];
	nrt_backend_region_t stack_r[ISA_REGION_IO0 + STACK_TENSORS];
	uint8_t *stack_io[STACK_TENSORS];
	binding_t *b = stack_b;
	nrt_backend_region_t *regions = stack_r;
	uint8_t **io = stack_io;
	if (n > STACK_TENSORS) {
		b = malloc(n * sizeof(*b));
		regions = malloc((ISA_REGION_IO0 + n) * sizeof(*regions));
		io = malloc(n * sizeof(*io));
		if (!b || !regions || !io) {
			free(b);
			free(regions);
			free(io);
			return nrt_status_make(NRT_RESOURCE, "model '%s': out of host memory binding its %u tensors",
					       m->view.meta->model_name, n);
		}
	}
	memset(b, 0, n * sizeof(*b));
	memset(io, 0, n * sizeof(*io));
	nrt_exec_rec_t rec = {
		.model = m,
		.n_tensors = n,
		.io = io,
		.exec_index = atomic_fetch_add(&m->n_exec, 1),
		.start_ns = ns_monotonic_ns(),
	};
	nrt_stats_exec_begin(ctx, &rec);
	ns_status_t st = NS_OK;
	for (uint32_t i = 0; i < n && !st; i++)
		st = bind_one(ctx, m, i, in_set, out_set, &b[i]);
	if (st) {
		unbind_all(ctx, 0, b, n);
		rec.status = nrt_status_code(st);
		rec.end_ns = ns_monotonic_ns();
		rec.error.status = rec.status;
		rec.error.kind = NRT_NEURONSIM_ERROR_OTHER;
		count_execution(ctx, &rec, m->start_nc, m->neff_cores);
		observe_end(ctx, &rec);
		*out_code = rec.status;
		goto out;
	}

	nrt_instance_t *in = instance_lock(m);
	rec.instance = in;
	/* Tensors in this device's memory are bound in place; host tensors and
	 * tensors of another device are staged through device memory. */
	for (uint32_t i = 0; i < n && !st; i++) {
		if (b[i].alias_of >= 0)
			continue;
		nrt_storage_t *s = b[i].t->storage;
		if (s->kind == NRT_STORAGE_DEVICE && s->device == in->device) {
			regions[ISA_REGION_IO0 + i] = (nrt_backend_region_t){ &s->mem, b[i].t->offset,
									      b[i].t->size };
			io[i] = s->mem.host + b[i].t->offset;
			continue;
		}
		NRT_STATUS ast = nrt_devmem_alloc(ctx, in->first_core, b[i].t->size, NRT_NEURONSIM_MEM_STAGING,
						  &b[i].staging);
		if (ast) {
			st = nrt_status_make(ast, "model '%s': out of device memory staging %s tensor '%s' "
					     "(%llu bytes)", m->view.meta->model_name,
					     s->kind == NRT_STORAGE_DEVICE ? "another device's" : "host",
					     b[i].t->name, (unsigned long long)b[i].t->size);
			break;
		}
		/* Inputs are copied in; outputs too, since the program may read
		 * them (accumulation) and an untouched output must keep its bytes. */
		memcpy(b[i].staging.host, s->host + b[i].t->offset, b[i].t->size);
		regions[ISA_REGION_IO0 + i] = (nrt_backend_region_t){ &b[i].staging, 0, b[i].t->size };
		io[i] = b[i].staging.host;
	}
	for (uint32_t i = 0; i < n && !st; i++)
		if (b[i].alias_of >= 0) {
			regions[ISA_REGION_IO0 + i] = regions[ISA_REGION_IO0 + b[i].alias_of];
			io[i] = io[b[i].alias_of];
		}
	if (!st)
		st = nrt_snapshot_exec_begin(ctx, &rec);
	if (!st) {
		regions[ISA_REGION_CONST] = (nrt_backend_region_t){ &in->consts, 0, m->view.consts_size };
		regions[ISA_REGION_SCRATCH] = (nrt_backend_region_t){ &in->scratch, 0,
								      m->view.meta->scratch_size };
		nrt_backend_job_t job = {
			.regions = regions,
			.n_regions = ISA_REGION_IO0 + n,
			.flags = (ctx->config.nan_check ? NRT_BACKEND_JOB_CHECK_NAN : 0) |
				 (ctx->config.inf_check ? NRT_BACKEND_JOB_CHECK_INF : 0),
			.deadline_ns = ctx->config.exec_timeout_ns ? ns_monotonic_ns() + ctx->config.exec_timeout_ns : 0,
		};
		nrt_backend_status_t worst = NRT_BACKEND_OK;
		nrt_backend_error_t err, first_err;
		uint32_t err_core = 0;
		rec.traces = nrt_profile_exec_traces(ctx, &rec);
		if (rec.traces)
			job.flags |= NRT_BACKEND_JOB_PROFILE;
		rec.ran = true;
		rec.device_start_ns = ns_monotonic_ns();
		nrt_core_busy_begin(ctx, in->first_core, m->neff_cores, rec.device_start_ns);
		for (uint32_t c = 0; c < m->neff_cores; c++) {
			nrt_core_t *core = &ctx->cores[in->first_core + c];
			job.program = in->programs[c];
			job.trace = rec.traces ? &rec.traces[c] : NULL;
			nrt_backend_status_t bs = ctx->ops->execute(ctx->devices[in->device].dev,
								    core->dev_core, &job, &err);
			if (err.flops == NRT_BACKEND_FLOPS_UNKNOWN)
				atomic_store_explicit(&core->flops_unknown, true, memory_order_relaxed);
			else
				atomic_fetch_add_explicit(&core->flops, err.flops, memory_order_relaxed);
			if (bs != NRT_BACKEND_OK && worst == NRT_BACKEND_OK) {
				worst = bs;
				first_err = err;
				err_core = in->first_core + c;
			}
			/* A numerical error still completes; anything else stops. */
			if (bs != NRT_BACKEND_OK && bs != NRT_BACKEND_NUM_ERR)
				break;
		}
		rec.end_ns = ns_monotonic_ns();
		/* busy from start to end exactly; not through a snapshot dump after it */
		nrt_core_busy_end(ctx, in->first_core, m->neff_cores, rec.device_start_ns, rec.end_ns);
		if (worst == NRT_BACKEND_OK)
			memset(&first_err, 0, sizeof(first_err));
		st = report(ctx, m, err_core, worst, &first_err, &rec.error);
		if (rec.error.status == NRT_SUCCESS || rec.error.status == NRT_EXEC_COMPLETED_WITH_NUM_ERR) {
			for (uint32_t i = 0; i < n; i++) {
				const binding_t *src = b[i].alias_of >= 0 ? &b[b[i].alias_of] : &b[i];
				if (m->view.tensors[i].usage == NEFF_USAGE_OUTPUT && src->staging.size)
					memcpy(src->t->storage->host + src->t->offset, src->staging.host,
					       src->t->size);
			}
		}
	} else {
		rec.end_ns = ns_monotonic_ns();
		rec.error.status = nrt_status_code(st);
		rec.error.kind = NRT_NEURONSIM_ERROR_OTHER;
	}
	rec.status = rec.error.status;
	nrt_snapshot_exec_end(ctx, &rec, &st);
	unbind_all(ctx, in->device, b, n);
	pthread_mutex_unlock(&in->lock);
	count_execution(ctx, &rec, in->first_core, m->neff_cores);
	observe_end(ctx, &rec);
	*out_code = rec.status;
out:
	if (b != stack_b) {
		free(b);
		free(regions);
		free(io);
	}
	return st;
}

ns_status_t nrt_execute_status(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set,
			   int repeat, NRT_STATUS *out_code)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (repeat < 1)
		return nrt_status_make(NRT_INVALID, "repeat_count %d must be >= 1", repeat);
	/* References on both sets: a set destroyed meanwhile waits for us */
	ns_status_t st = NS_OK;
	const nrt_tensor_set_obj_t *in_set = nrt_tensor_set_acquire(input_set);
	const nrt_tensor_set_obj_t *out_set = nrt_tensor_set_acquire(output_set);
	nrt_model_obj_t *m;
	if (!in_set || !out_set)
		st = nrt_status_make(NRT_INVALID, "%s is NULL or not a tensor set (destroyed?)",
				     !in_set ? "input_set" : "output_set");
	else if (!(st = nrt_model_acquire(ctx, model, &m))) {
		for (int r = 0; r < repeat && !st; r++)
			st = execute_once(ctx, m, in_set, out_set, out_code);
		nrt_handle_release(&ctx->models, nrt_handle_of(model));
	}
	if (in_set)
		nrt_tensor_set_release(input_set);
	if (out_set)
		nrt_tensor_set_release(output_set);
	return st;
}

/* The boundary of both calls: one log line, and the execution's own code when
 * it ran (exact also when memory ran out making the status: a NaN stays
 * NRT_EXEC_COMPLETED_WITH_NUM_ERR). */
static NRT_STATUS execute_report(const char *func, nrt_model_t *model, const nrt_tensor_set_t *input_set,
				 nrt_tensor_set_t *output_set, int repeat)
{
	NRT_STATUS code = NRT_SUCCESS;
	NRT_STATUS st = nrt_status_report(func, nrt_execute_status(model, input_set, output_set, repeat, &code));
	return st && code ? code : st;
}

NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set)
{
	return execute_report(__func__, model, input_set, output_set, 1);
}

NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set,
			      int repeat_count)
{
	return execute_report(__func__, model, input_set, output_set, repeat_count);
}
