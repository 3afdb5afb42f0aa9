/* Models: NEFF validation, placement on cores, upload of code and constants, unload and introspection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "internal.h"
#include "observe.h"
#include "neuronsim/splitmix64.h"
#include "nrt/nrt_experimental.h"

nrt_dtype_t nrt_dtype_from_isa(uint32_t d)
{
	switch (d) {
	case ISA_DT_F32: return NRT_DTYPE_FLOAT32;
	case ISA_DT_BF16: return NRT_DTYPE_BFLOAT16;
	case ISA_DT_F16: return NRT_DTYPE_FLOAT16;
	case ISA_DT_S32: return NRT_DTYPE_INT32;
	case ISA_DT_S64: return NRT_DTYPE_INT64;
	case ISA_DT_U32: return NRT_DTYPE_UINT32;
	case ISA_DT_U64: return NRT_DTYPE_UINT64;
	case ISA_DT_U8: case ISA_DT_PRED: return NRT_DTYPE_UINT8;
	case ISA_DT_S8: return NRT_DTYPE_INT8;
	case ISA_DT_S16: return NRT_DTYPE_INT16;
	case ISA_DT_U16: return NRT_DTYPE_UINT16;
	default: return NRT_DTYPE_UNKNOWN;
	}
}

static void instance_release(nrt_ctx_t *ctx, nrt_model_obj_t *m, nrt_instance_t *in)
{
	nrt_device_t *dev = &ctx->devices[in->device];
	for (uint32_t c = 0; c < m->neff_cores; c++) {
		if (in->programs[c])
			ctx->ops->program_destroy(dev->dev, in->programs[c]);
		in->programs[c] = NULL;
		nrt_devmem_free(ctx, in->device, NRT_NEURONSIM_MEM_CODE, &in->code[c]);
	}
	nrt_devmem_free(ctx, in->device, NRT_NEURONSIM_MEM_CONSTANTS, &in->consts);
	nrt_devmem_free(ctx, in->device, NRT_NEURONSIM_MEM_SCRATCH, &in->scratch);
	pthread_mutex_destroy(&in->lock);
}

void nrt_model_obj_destroy(nrt_ctx_t *ctx, nrt_model_obj_t *m)
{
	if (!m)
		return;
	nrt_snapshot_model_fini(ctx, m);
	for (uint32_t i = 0; i < m->n_instances; i++) {
		instance_release(ctx, m, &m->instances[i]);
		for (uint32_t c = 0; c < m->neff_cores; c++)
			atomic_fetch_sub(&ctx->cores[m->instances[i].first_core + c].n_models, 1);
	}
	pthread_mutex_destroy(&m->err_lock);
	free(m->instances);
	free(m->neff);
	free(m);
}

/* Uploads constants, scratch and each core's code for one replica. */
static ns_status_t instance_create(nrt_ctx_t *ctx, nrt_model_obj_t *m, nrt_instance_t *in,
				   uint32_t first_core)
{
	const neff_view_t *v = &m->view;
	NRT_STATUS st;
	pthread_mutex_init(&in->lock, NULL);
	in->first_core = first_core;
	in->device = ctx->cores[first_core].device;
	if (v->consts_size) {
		if ((st = nrt_devmem_alloc(ctx, in->first_core, v->consts_size, NRT_NEURONSIM_MEM_CONSTANTS,
					   &in->consts)))
			goto err_mem;
		memcpy(in->consts.host, v->consts, v->consts_size);
	}
	if (v->meta->scratch_size) {
		if ((st = nrt_devmem_alloc(ctx, in->first_core, v->meta->scratch_size,
					   NRT_NEURONSIM_MEM_SCRATCH, &in->scratch)))
			goto err_mem;
		/* Programs write scratch before they read it (it is not cleared
		 * between executions either), so zeros are for isolation only: no
		 * model sees what another left in this memory. Fresh pages make
		 * that free, where a memset of GBs was most of the load time. */
		ctx->ops->mem_zero(ctx->devices[in->device].dev, &in->scratch);
	}
	for (uint32_t c = 0; c < m->neff_cores; c++) {
		nrt_backend_code_t code = { .mem = &in->code[c], .n_regions = ISA_REGION_IO0 + v->meta->n_tensors };
		uint64_t total = 0;
		for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
			code.offset[e] = total * sizeof(isa_insn_t);
			code.count[e] = v->code_count[c][e];
			total += v->code_count[c][e];
		}
		/* The code lives in device memory like on the hardware (and the
		 * kernel backend's firmware fetches it from there). */
		if (total) {
			if ((st = nrt_devmem_alloc(ctx, in->first_core + c, total * sizeof(isa_insn_t),
						   NRT_NEURONSIM_MEM_CODE, &in->code[c])))
				goto err_mem;
			for (int e = 0; e < ISA_ENGINE_COUNT; e++)
				if (code.count[e])
					memcpy(in->code[c].host + code.offset[e], v->code[c][e],
					       code.count[e] * sizeof(isa_insn_t));
		}
		nrt_core_t *core = &ctx->cores[first_core + c];
		ns_status_t ps = ctx->ops->program_create(ctx->devices[in->device].dev, core->dev_core,
							  &code, &in->programs[c]);
		if (ps)
			return ns_status_with_detail(ns_status_annotate(ps, "model '%s': code of core %u "
									"rejected", v->meta->model_name, c),
						     nrt_status_code(ps) == NRT_RESOURCE ? NRT_RESOURCE
											 : NRT_INVALID);
	}
	nrt_devmem_log_instance(ctx, in, m->neff_cores, v->meta->model_name);
	return NS_OK;
err_mem:
	/* nrt_devmem_alloc logged the device's memory report (TDRV) */
	return nrt_status_make(st, "model '%s': out of device memory on device %u", v->meta->model_name,
			       in->device);
}

static int32_t pick_start(nrt_ctx_t *ctx, uint32_t count)
{
	/* The first core (run) with the fewest models: "first free" when there
	 * is one, otherwise spread models evenly. */
	int32_t best = -1;
	unsigned best_load = ~0u;
	for (uint32_t s = 0; s + count <= ctx->n_cores; s++) {
		unsigned load = 0;
		bool same_dev = true;
		for (uint32_t c = 0; c < count; c++) {
			load += atomic_load(&ctx->cores[s + c].n_models);
			same_dev &= ctx->cores[s + c].device == ctx->cores[s].device;
		}
		if (same_dev && load < best_load) {
			best = (int32_t)s;
			best_load = load;
		}
	}
	return best;
}

/* nrt_load without its trace span; out_name gets the model's name once known. */
/* The model's uuid (neuron-monitor's loaded_models): a random version 4
 * UUID from the kernel's generator; should that fail (a seccomp filter, a
 * kernel before 3.17), from the clock, the pid and the load index, still
 * distinct per load in this process. */
static void model_uuid(nrt_model_obj_t *m)
{
	if (getrandom(m->uuid, sizeof(m->uuid), GRND_NONBLOCK) != (ssize_t)sizeof(m->uuid)) {
		uint64_t st = ns_monotonic_ns() ^ ((uint64_t)getpid() << 32) ^ m->executable_id;
		for (int w = 0; w < 2; w++) {
			uint64_t r = ns_splitmix64(&st);
			memcpy(m->uuid + 8 * w, &r, 8);
		}
	}
	m->uuid[6] = (uint8_t)((m->uuid[6] & 0x0f) | 0x40); /* version 4 */
	m->uuid[8] = (uint8_t)((m->uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
}

/* What the reader's refusal of a NEFF means for nrt_load: its NRT_STATUS, and
 * what the runtime reads in front of the reader's message. Consumes st. */
static ns_status_t neff_refused(const void *neff, size_t size, ns_status_t st)
{
	switch (ns_status_code(st)) {
	case NS_STATUS_UNIMPLEMENTED: {
		const neff_header_t *h = neff;
		if (size >= sizeof(*h))
			st = ns_status_annotate(st, "NEFF format version %u.%u is not supported: this "
						"runtime reads %u.x (up to %u.%u)", h->version_major,
						h->version_minor, NEFF_VERSION_MAJOR, NEFF_VERSION_MAJOR,
						NEFF_VERSION_MINOR);
		else
			st = ns_status_annotate(st, "unsupported NEFF");
		return ns_status_with_detail(st, NRT_UNSUPPORTED_NEFF_VERSION);
	}
	case NS_STATUS_RESOURCE_EXHAUSTED:
		ns_status_free(st);
		return nrt_status_make(NRT_RESOURCE, "out of host memory parsing the NEFF");
	default:
		return ns_status_with_detail(ns_status_annotate(st, "invalid NEFF (%zu bytes)", size),
					     NRT_INVALID);
	}
}

/* nrt_load's work; a failure's status says why, for nrt_load to report. */
static ns_status_t load_model(const void *neff_bytes, size_t size, int32_t start_nc, int32_t nc_count,
			      nrt_model_t **model, char out_name[128])
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!neff_bytes || !model || size == 0)
		return nrt_status_make(NRT_INVALID, "%s", !model ? "model (out) is NULL" : "no NEFF bytes given");
	if (start_nc < -1 || (start_nc >= 0 && (uint32_t)start_nc >= ctx->n_cores))
		return nrt_status_make(NRT_INVALID, "start_nc %d is not a visible NeuronCore (%u visible: "
				       "0-%d, or -1)", start_nc, ctx->n_cores, (int)ctx->n_cores - 1);
	if (nc_count == 0 || nc_count < -1)
		return nrt_status_make(NRT_INVALID, "nc_count %d is invalid (a positive count or -1)",
				       nc_count);
	nrt_model_obj_t *m = calloc(1, sizeof(*m));
	if (!m)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for a model");
	pthread_mutex_init(&m->err_lock, NULL);
	ns_status_t st;
	/* neff_parse needs 8-byte alignment and the view borrows from the
	 * buffer for the model's lifetime, so keep an aligned copy. */
	size_t alloc = (size + 63) & ~(size_t)63;
	if (alloc < size || !(m->neff = aligned_alloc(64, alloc))) {
		st = nrt_status_make(NRT_RESOURCE, "out of host memory for a copy of the %zu-byte NEFF",
				     size);
		goto err;
	}
	memcpy(m->neff, neff_bytes, size);
	m->neff_size = size;
	st = neff_parse(m->neff, size, &m->view);
	if (st) {
		st = neff_refused(m->neff, size, st);
		goto err;
	}
	const neff_meta_t *meta = m->view.meta;
	snprintf(out_name, 128, "%s", meta->model_name);
	m->neff_cores = meta->n_cores;
	uint32_t want = nc_count == -1 ? m->neff_cores : (uint32_t)nc_count;
	if (want % m->neff_cores) {
		st = nrt_status_make(NRT_INVALID, "model '%s' needs %u NeuronCore(s) per instance; "
				     "nc_count %d is not a multiple of that", meta->model_name,
				     m->neff_cores, nc_count);
		goto err;
	}
	m->n_instances = want / m->neff_cores;
	m->instances = calloc(m->n_instances, sizeof(*m->instances));
	if (!m->instances) {
		st = nrt_status_make(NRT_RESOURCE, "model '%s': out of host memory for %u instance(s)",
				     meta->model_name, m->n_instances);
		goto err;
	}

	pthread_mutex_lock(&ctx->load_lock);
	int32_t start = start_nc;
	if (start == -1)
		start = pick_start(ctx, want);
	if (start < 0 || (uint64_t)start + want > ctx->n_cores) {
		pthread_mutex_unlock(&ctx->load_lock);
		st = nrt_status_make(NRT_LOAD_NOT_ENOUGH_NC, "model '%s' needs %u NeuronCore(s) from core "
				     "%d; %u are visible", meta->model_name, want, start_nc, ctx->n_cores);
		goto err;
	}
	for (uint32_t i = 0; i < m->n_instances; i++) {
		uint32_t first = (uint32_t)start + i * m->neff_cores;
		for (uint32_t c = 1; c < m->neff_cores; c++) {
			if (ctx->cores[first + c].device != ctx->cores[first].device) {
				pthread_mutex_unlock(&ctx->load_lock);
				st = nrt_status_make(NRT_LOAD_NOT_ENOUGH_NC, "model '%s': an instance cannot "
						     "span devices (cores %u-%u)", meta->model_name, first,
						     first + m->neff_cores - 1);
				goto err;
			}
		}
	}
	for (uint32_t c = 0; c < want; c++)
		atomic_fetch_add(&ctx->cores[start + c].n_models, 1);
	pthread_mutex_unlock(&ctx->load_lock);
	m->start_nc = (uint32_t)start;
	/* From here nrt_model_obj_destroy undoes everything, including the
	 * per-core model counts, for the instances created so far. */
	uint32_t created = 0;
	st = NS_OK;
	for (; created < m->n_instances; created++) {
		st = instance_create(ctx, m, &m->instances[created], m->start_nc + created * m->neff_cores);
		if (st)
			break;
	}
	if (st) {
		nrt_instance_t *failed = &m->instances[created];
		instance_release(ctx, m, failed);
		for (uint32_t c = created * m->neff_cores; c < want; c++)
			atomic_fetch_sub(&ctx->cores[m->start_nc + c].n_models, 1);
		m->n_instances = created;
		nrt_model_obj_destroy(ctx, m);
		return st;
	}
	m->executable_id = atomic_fetch_add(&ctx->n_loads, 1);
	model_uuid(m);
	uint64_t h;
	NRT_STATUS rst;
	if (!(st = nrt_snapshot_model_init(ctx, m)) && (rst = nrt_handle_create(&ctx->models, m, &h)))
		st = nrt_status_make(rst, "model '%s': out of host memory registering it", meta->model_name);
	if (st) {
		nrt_model_obj_destroy(ctx, m);
		return st;
	}
	nrt_stats_model_load(ctx, m);
	NRT_LOGI("loaded model '%s' on NeuronCore(s) %u-%u (%u instance(s))", meta->model_name,
		 m->start_nc, m->start_nc + want - 1, m->n_instances);
	*model = (nrt_model_t *)(uintptr_t)h;
	return NS_OK;
err:
	pthread_mutex_destroy(&m->err_lock);
	free(m->instances);
	free(m->neff);
	free(m);
	return st;
}

NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t start_nc, int32_t nc_count, nrt_model_t **model)
{
	uint64_t t0 = ns_monotonic_ns();
	char name[128] = "";
	NRT_STATUS st = nrt_status_report("nrt_load", load_model(neff_bytes, size, start_nc, nc_count, model,
								 name));
	if (nrt_profile_sys_on())
		nrt_profile_call("nrt_load", name, size, st, t0, ns_monotonic_ns());
	return st;
}

NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size, int32_t start_nc, int32_t nc_count,
				uint32_t g_device_id, uint32_t g_device_count, nrt_model_t **model)
{
	if (g_device_count > 1 || g_device_id >= (g_device_count ? g_device_count : 1))
		return nrt_status_report(__func__, nrt_status_make(NRT_INVALID, "collectives across %u devices "
								   "are not simulated (device %u)",
								   g_device_count, g_device_id));
	return nrt_load(neff_bytes, size, start_nc, nc_count, model);
}

static ns_status_t unload(nrt_model_t *model)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!model)
		return nrt_status_make(NRT_INVALID, "model is NULL");
	void *obj;
	NRT_STATUS st = nrt_handle_destroy(&ctx->models, nrt_handle_of(model), &obj);
	if (st)
		return nrt_status_make(st, "%p is not a loaded model (already unloaded?)", (void *)model);
	nrt_stats_model_unload(ctx, obj);
	nrt_model_obj_destroy(ctx, obj);
	return NS_OK;
}

NRT_STATUS nrt_unload(nrt_model_t *model)
{
	return nrt_status_report(__func__, unload(model));
}

ns_status_t nrt_model_acquire(nrt_ctx_t *ctx, const nrt_model_t *model, nrt_model_obj_t **out_m)
{
	void *obj;
	NS_RETURN_IF_ERROR(nrt_handle_acquire_arg(&ctx->models, model, "model",
						  "a loaded model (unloaded, or not a model handle)", &obj));
	*out_m = obj;
	return NS_OK;
}

/* The first steps of a call on a loaded model: the runtime, the out argument
 * (out_name, for the message) and the model, with a reference the caller gives
 * back (model_put). */
static ns_status_t model_get(const nrt_model_t *model, const void *out, const char *out_name,
			     nrt_ctx_t **out_ctx, nrt_model_obj_t **out_m)
{
	NS_RETURN_IF_ERROR(nrt_ctx_enter(out_ctx));
	if (!out)
		return nrt_status_make(NRT_INVALID, "%s (out) is NULL", out_name);
	return nrt_model_acquire(*out_ctx, model, out_m);
}

static void model_put(nrt_ctx_t *ctx, const nrt_model_t *model)
{
	nrt_handle_release(&ctx->models, nrt_handle_of(model));
}

static ns_status_t model_nc_count(const nrt_model_t *model, uint32_t *out, const char *out_name, int instances)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(model_get(model, out, out_name, &ctx, &m));
	*out = instances ? m->n_instances : m->n_instances * m->neff_cores;
	model_put(ctx, model);
	return NS_OK;
}

NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *nc_count)
{
	return nrt_status_report(__func__, model_nc_count(model, nc_count, "nc_count", 0));
}

NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count)
{
	return nrt_status_report(__func__, model_nc_count(model, vnc_count, "vnc_count", 0));
}

NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count)
{
	return nrt_status_report(__func__, model_nc_count(model, instance_count, "instance_count", 1));
}

static ns_status_t get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(model_get(model, tensor_info, "tensor_info", &ctx, &m));
	const neff_view_t *v = &m->view;
	uint32_t n = v->meta->n_tensors;
	/* One block: the array, then every shape, so one free releases all. */
	size_t shapes = 0;
	for (uint32_t i = 0; i < n; i++)
		shapes += v->tensors[i].rank;
	size_t bytes = sizeof(nrt_tensor_info_array_t) + n * sizeof(nrt_tensor_info_t) +
		       shapes * sizeof(uint32_t);
	nrt_tensor_info_array_t *a = calloc(1, bytes);
	if (!a) {
		ns_status_t st = nrt_status_make(NRT_RESOURCE, "model '%s': out of host memory for the "
						 "information on its %u tensors", v->meta->model_name, n);
		model_put(ctx, model);
		return st;
	}
	uint32_t *shape = (uint32_t *)&a->tensor_array[n];
	a->tensor_count = n;
	for (uint32_t i = 0; i < n; i++) {
		const neff_tensor_t *t = &v->tensors[i];
		nrt_tensor_info_t *o = &a->tensor_array[i];
		snprintf(o->name, sizeof(o->name), "%s", t->name);
		o->usage = t->usage == NEFF_USAGE_INPUT ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT;
		o->size = t->size;
		o->dtype = nrt_dtype_from_isa(t->dtype);
		o->ndim = t->rank;
		o->shape = shape;
		for (uint32_t d = 0; d < t->rank; d++)
			*shape++ = t->shape[d] > UINT32_MAX ? UINT32_MAX : (uint32_t)t->shape[d];
	}
	model_put(ctx, model);
	*tensor_info = a;
	return NS_OK;
}

NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info)
{
	return nrt_status_report(__func__, get_model_tensor_info(model, tensor_info));
}

NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info)
{
	free(tensor_info);
	return NRT_SUCCESS;
}

static ns_status_t get_model_tensor_aliases(nrt_model_t *model, int32_t *alias_input, size_t count)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(model_get(model, alias_input, "alias_input", &ctx, &m));
	const neff_view_t *v = &m->view;
	uint32_t n = v->meta->n_tensors;
	ns_status_t st = NS_OK;
	if (count < n) {
		st = nrt_status_make(NRT_INVALID, "room for %zu entries, model '%s' has %u tensors", count,
				     v->meta->model_name, n);
	} else {
		for (uint32_t i = 0; i < n; i++) {
			const neff_tensor_t *t = &v->tensors[i];
			alias_input[i] = t->usage == NEFF_USAGE_OUTPUT && t->alias_input >= 0 &&
						 (uint32_t)t->alias_input < n
						 ? t->alias_input : -1;
		}
	}
	model_put(ctx, model);
	return st;
}

NRT_STATUS nrt_neuronsim_get_model_tensor_aliases(nrt_model_t *model, int32_t *alias_input, size_t count)
{
	return nrt_status_report(__func__, get_model_tensor_aliases(model, alias_input, count));
}

/* *out_ran false, and nothing copied, when the model has not executed yet. */
static ns_status_t get_last_error(nrt_model_t *model, nrt_neuronsim_exec_error_t *out_error, bool *out_ran)
{
	nrt_ctx_t *ctx;
	nrt_model_obj_t *m;
	NS_RETURN_IF_ERROR(model_get(model, out_error, "out_error", &ctx, &m));
	pthread_mutex_lock(&m->err_lock);
	*out_ran = m->executed;
	if (m->executed)
		*out_error = m->last_error;
	pthread_mutex_unlock(&m->err_lock);
	if (!*out_ran)
		NRT_LOGD("nrt_neuronsim_get_last_error: model '%s' has not executed yet: no record",
			 m->view.meta->model_name);
	model_put(ctx, model);
	return NS_OK;
}

NRT_STATUS nrt_neuronsim_get_last_error(nrt_model_t *model, nrt_neuronsim_exec_error_t *out_error)
{
	/* No record yet is an answer, not a failure to log: callers ask after
	 * an nrt_execute that may have failed before anything ran. */
	bool ran = false;
	NRT_STATUS st = nrt_status_report(__func__, get_last_error(model, out_error, &ran));
	return st ? st : ran ? NRT_SUCCESS : NRT_INVALID;
}
