/* PJRT executables: the compiled program shared by the loaded and unloaded handles, its NEFF loaded per NeuronCore on first use, and the PJRT_Executable_* / PJRT_LoadedExecutable_* queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "analyze.h"
#include "pjrt_internal.h"

void pjrt_exec_ref(pjrt_exec_t *e)
{
	atomic_fetch_add(&e->refs, 1);
}

static void unload_all(pjrt_exec_t *e)
{
	if (!e->models)
		return;
	for (uint32_t d = 0; d < e->client->n_devices; d++)
		if (e->models[d]) {
			nrt_unload(e->models[d]);
			e->models[d] = NULL;
		}
}

static void free_names(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void exec_free(pjrt_exec_t *e)
{
	unload_all(e);
	free(e->models);
	free(e->name);
	free(e->program);
	free(e->optimized);
	free(e->neff);
	free(e->alias);
	free_names(e->in_names, e->sig.n_params);
	free_names(e->out_names, e->sig.n_results);
	free(e->in_sizes);
	free(e->out_sizes);
	pjrt_signature_free(&e->sig);
	free(e->addr_list);
	free(e->addr_index);
	free(e->out_types);
	free(e->out_dims);
	free(e->out_dim_sizes);
	free(e->out_kinds);
	free(e->out_kind_sizes);
	pthread_mutex_destroy(&e->lock);
	pjrt_client_t *c = e->client;
	free(e);
	if (c)
		pjrt_client_unref(c);
}

void pjrt_exec_unref(pjrt_exec_t *e)
{
	if (atomic_fetch_sub(&e->refs, 1) == 1)
		exec_free(e);
}

/* Checks a freshly loaded model against the signature and records its tensor
 * names, sizes and in-place updates (first load only). The NEFF's inputs are the
 * parameters that have elements, in parameter order, and its outputs the result
 * leaves that have elements (a zero-element array has no tensor: the compiler
 * leaves it out, docs/compiler.md); f64 ones are f32 tensors. */
static PJRT_Error *learn_model(pjrt_exec_t *e, nrt_model_t *m)
{
	nrt_tensor_info_array_t *info = NULL;
	NRT_STATUS st = nrt_get_model_tensor_info(m, &info);
	if (st != NRT_SUCCESS)
		return pjrt_error(pjrt_code_from_nrt(st), "'%s': nrt_get_model_tensor_info: %s", e->name,
				  nrt_get_status_as_str(st));
	PJRT_Error *err = NULL;
	size_t n = info->tensor_count, np = e->sig.n_params, nr = e->sig.n_results;
	size_t np_t = 0, nr_t = 0;
	for (size_t p = 0; p < np; p++)
		np_t += e->sig.params[p].nbytes != 0;
	for (size_t k = 0; k < nr; k++)
		nr_t += e->sig.results[k].nbytes != 0;
	int32_t *alias = calloc(n + 1, sizeof(int32_t));
	size_t *slot = calloc(n + 1, sizeof(size_t)); /* NEFF tensor -> parameter / leaf */
	e->in_names = calloc(np + 1, sizeof(char *));
	e->out_names = calloc(nr + 1, sizeof(char *));
	e->in_sizes = calloc(np + 1, sizeof(size_t));
	e->out_sizes = calloc(nr + 1, sizeof(size_t));
	e->alias = calloc(nr + 1, sizeof(int32_t));
	if (!alias || !slot || !e->in_names || !e->out_names || !e->in_sizes || !e->out_sizes || !e->alias) {
		err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	if (n != np_t + nr_t) {
		err = pjrt_error(PJRT_Error_Code_INTERNAL,
				 "'%s': the NEFF has %zu I/O tensors, the program %zu parameters and %zu "
				 "result leaves with elements", e->name, n, np_t, nr_t);
		goto out;
	}
	for (size_t i = 0, p = 0, k = 0; i < n; i++) {
		if (i < np_t) {
			while (e->sig.params[p].nbytes == 0)
				p++;
			slot[i] = p++;
		} else {
			while (e->sig.results[k].nbytes == 0)
				k++;
			slot[i] = k++;
		}
	}
	for (size_t k = 0; k < nr; k++)
		e->alias[k] = -1;
	st = nrt_neuronsim_get_model_tensor_aliases(m, alias, n);
	if (st != NRT_SUCCESS) {
		err = pjrt_error(pjrt_code_from_nrt(st), "'%s': nrt_neuronsim_get_model_tensor_aliases: %s",
				 e->name, nrt_get_status_as_str(st));
		goto out;
	}
	/* The compiler puts inputs first; outputs follow. */
	for (size_t i = 0; i < n && !err; i++) {
		const nrt_tensor_info_t *t = &info->tensor_array[i];
		bool input = i < np_t;
		size_t j = slot[i];
		const pjrt_array_t *a = input ? &e->sig.params[j] : &e->sig.results[j];
		/* f64 arrays are f32 on the device: the NEFF must say so */
		bool f64_ok = a->type != PJRT_Buffer_Type_F64 || t->dtype == NRT_DTYPE_FLOAT32;
		if ((t->usage == NRT_TENSOR_USAGE_INPUT) != input || t->size != a->nbytes || !f64_ok) {
			err = pjrt_error(PJRT_Error_Code_INTERNAL,
					 "'%s': NEFF tensor %zu '%s' (%s, %zu bytes%s) does not match %s %zu of "
					 "the program (%s, %zu bytes on the device)", e->name, i, t->name,
					 t->usage == NRT_TENSOR_USAGE_INPUT ? "input" : "output", t->size,
					 f64_ok ? "" : ", not f32", input ? "parameter" : "result leaf", j,
					 pjrt_type_name(a->type), a->nbytes);
			break;
		}
		char *name = strdup(t->name);
		if (!name) {
			err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
			break;
		}
		if (input) {
			e->in_names[j] = name;
			e->in_sizes[j] = t->size;
		} else {
			e->out_names[j] = name;
			e->out_sizes[j] = t->size;
			/* the NEFF names the input tensor; the plugin speaks parameters */
			e->alias[j] = alias[i] >= 0 && (size_t)alias[i] < np_t ? (int32_t)slot[alias[i]] : -1;
		}
	}
out:
	free(alias);
	free(slot);
	nrt_free_model_tensor_info(info);
	return err;
}

PJRT_Error *pjrt_exec_model(pjrt_exec_t *e, uint32_t dev, nrt_model_t **out)
{
	PJRT_Error *err = NULL;
	pthread_mutex_lock(&e->lock);
	if (e->deleted) {
		err = pjrt_error(PJRT_Error_Code_FAILED_PRECONDITION,
				 "executable '%s' was deleted (PJRT_LoadedExecutable_Delete)", e->name);
	} else if (dev >= e->client->n_devices) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "'%s': no NeuronCore %u", e->name, dev);
	} else if (!e->models[dev]) {
		nrt_model_t *m = NULL;
		NRT_STATUS st = nrt_load(e->neff, e->neff_size, (int32_t)dev, -1, &m);
		if (st != NRT_SUCCESS) {
			err = pjrt_error(pjrt_code_from_nrt(st), "'%s': nrt_load on NeuronCore %u: %s (%d)", e->name,
					 dev, nrt_get_status_as_str(st), (int)st);
		} else if (!e->in_names && (err = learn_model(e, m))) {
			nrt_unload(m);
		} else {
			e->models[dev] = m;
		}
	}
	if (!err)
		*out = e->models[dev];
	pthread_mutex_unlock(&e->lock);
	return err;
}

static PJRT_Error *make_views(pjrt_exec_t *e)
{
	size_t nr = e->sig.n_results, total = 0;
	for (size_t i = 0; i < nr; i++)
		total += e->sig.results[i].rank;
	e->out_types = calloc(nr + 1, sizeof(*e->out_types));
	e->out_dims = calloc(total + 1, sizeof(*e->out_dims));
	e->out_dim_sizes = calloc(nr + 1, sizeof(*e->out_dim_sizes));
	e->out_kinds = calloc(nr + 1, sizeof(*e->out_kinds));
	e->out_kind_sizes = calloc(nr + 1, sizeof(*e->out_kind_sizes));
	if (!e->out_types || !e->out_dims || !e->out_dim_sizes || !e->out_kinds || !e->out_kind_sizes)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < nr; i++) {
		const pjrt_array_t *a = &e->sig.results[i];
		e->out_types[i] = a->type;
		e->out_dim_sizes[i] = a->rank;
		for (uint32_t d = 0; d < a->rank; d++)
			e->out_dims[k++] = a->dims[d];
		e->out_kinds[i] = PJRT_MEMORY_KIND;
		e->out_kind_sizes[i] = strlen(PJRT_MEMORY_KIND);
		e->out_bytes += (int64_t)a->nbytes;
	}
	for (size_t i = 0; i < e->sig.n_params; i++)
		e->arg_bytes += (int64_t)e->sig.params[i].nbytes;
	return NULL;
}

PJRT_Error *pjrt_exec_create(pjrt_client_t *client, pjrt_exec_parts_t *parts, pjrt_exec_t **out)
{
	pjrt_exec_t *e = calloc(1, sizeof(*e));
	if (!e) {
		pjrt_exec_parts_free(parts);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	}
	atomic_init(&e->refs, 1);
	pthread_mutex_init(&e->lock, NULL);
	pjrt_client_ref(client);
	e->client = client;
	e->name = parts->name;
	snprintf(e->format, sizeof(e->format), "%s", parts->format);
	e->program = parts->program;
	e->program_size = parts->program_size;
	e->optimized = parts->optimized;
	e->optimized_size = parts->optimized_size;
	snprintf(e->optimized_format, sizeof(e->optimized_format), "%s", parts->optimized_format);
	e->neff = parts->neff;
	e->neff_size = parts->neff_size;
	e->sig = parts->sig;
	e->num_replicas = parts->num_replicas;
	e->num_partitions = parts->num_partitions;
	const int64_t *assignment = parts->assignment;
	memset(parts, 0, sizeof(*parts));

	PJRT_Error *err = NULL;
	e->n_addr = (size_t)e->num_replicas;
	e->addr_list = calloc(e->n_addr + 1, sizeof(*e->addr_list));
	e->addr_index = calloc(e->n_addr + 1, sizeof(*e->addr_index));
	e->models = calloc(client->n_devices, sizeof(*e->models));
	if (!e->addr_list || !e->addr_index || !e->models) {
		err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
		goto fail;
	}
	for (size_t r = 0; r < e->n_addr; r++) {
		int64_t d = assignment ? assignment[r] : (int64_t)r;
		if (d < 0 || d >= (int64_t)client->n_devices) {
			err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "replica %zu: no NeuronCore %lld", r,
					 (long long)d);
			goto fail;
		}
		e->addr_index[r] = (uint32_t)d;
		e->addr_list[r] = client->device_list[d];
	}
	if ((err = make_views(e)))
		goto fail;
	XXH128_hash_t fp = XXH3_128bits(e->neff, e->neff_size);
	snprintf(e->fingerprint, sizeof(e->fingerprint), "%016llx%016llx", (unsigned long long)fp.high64,
		 (unsigned long long)fp.low64);
	/* Load where replica 0 runs now: it validates the NEFF and tells the
	 * tensor names and in-place updates before anyone asks. */
	nrt_model_t *m;
	if (!e->neff) {
		/* analyze mode: nothing to load (analyze.h) */
		if ((err = pjrt_analyze_exec_init(e)))
			goto fail;
	} else if ((err = pjrt_exec_model(e, e->addr_index[0], &m))) {
		goto fail;
	}
	for (size_t i = 0; i < e->sig.n_results; i++)
		if (e->alias[i] >= 0)
			e->alias_bytes += (int64_t)e->sig.results[i].nbytes;
	*out = e;
	return NULL;
fail:
	pjrt_exec_unref(e);
	return err;
}

/* ---------------------------------------------------------------- handles */

static PJRT_Error *new_handle(pjrt_kind_t kind, pjrt_exec_t *e, uint64_t *out)
{
	pjrt_exec_handle_t *o = calloc(1, sizeof(*o));
	if (!o)
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of memory");
	o->exec = e;
	o->h = pjrt_handle_new(kind, o);
	if (!o->h) {
		free(o);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "out of handles");
	}
	*out = o->h;
	return NULL;
}

PJRT_Error *pjrt_loaded_new(pjrt_exec_t *e, PJRT_LoadedExecutable **out)
{
	uint64_t h = 0;
	PJRT_Error *err = new_handle(PJRT_KIND_LOADED, e, &h);
	if (!err)
		*out = PJRT_PTR(PJRT_LoadedExecutable, h);
	return err;
}

static PJRT_Error *destroy_handle(pjrt_kind_t kind, void *handle, const char *fn)
{
	PJRT_Error *err;
	pjrt_exec_handle_t *o = pjrt_handle_remove_arg(fn, kind, handle, &err);
	if (!o)
		return err;
	pjrt_exec_unref(o->exec);
	free(o);
	return NULL;
}

/* The exec of a live (loaded) executable handle, with a handle reference. */
#define EXEC_GET(e, kind, handle, fn)                           \
	PJRT_GET(pjrt_exec_handle_t, e##_obj, kind, handle, fn); \
	pjrt_exec_t *e = e##_obj->exec
#define EXEC_PUT(e) pjrt_handle_put(e##_obj->h)

/* ----------------------------------------------------- loaded executables */

PJRT_IMPL(LoadedExecutable_Destroy)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Destroy_Args, executable);
	return destroy_handle(PJRT_KIND_LOADED, args->executable, "PJRT_LoadedExecutable_Destroy");
}

PJRT_IMPL(LoadedExecutable_GetExecutable)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args, executable);
	EXEC_GET(e, PJRT_KIND_LOADED, args->loaded_executable, "PJRT_LoadedExecutable_GetExecutable");
	uint64_t h = 0;
	pjrt_exec_ref(e);
	PJRT_Error *err = new_handle(PJRT_KIND_EXECUTABLE, e, &h);
	if (err)
		pjrt_exec_unref(e);
	else
		args->executable = PJRT_PTR(PJRT_Executable, h);
	EXEC_PUT(e);
	return err;
}

PJRT_IMPL(LoadedExecutable_AddressableDevices)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices);
	EXEC_GET(e, PJRT_KIND_LOADED, args->executable, "PJRT_LoadedExecutable_AddressableDevices");
	args->addressable_devices = e->addr_list;
	args->num_addressable_devices = e->n_addr;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(LoadedExecutable_Delete)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Delete_Args, executable);
	EXEC_GET(e, PJRT_KIND_LOADED, args->executable, "PJRT_LoadedExecutable_Delete");
	/* Frees the device memory of the loaded models; the program and its
	 * description stay for the PJRT_Executable handles. */
	pthread_mutex_lock(&e->lock);
	unload_all(e);
	e->deleted = true;
	pthread_mutex_unlock(&e->lock);
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(LoadedExecutable_IsDeleted)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args, is_deleted);
	EXEC_GET(e, PJRT_KIND_LOADED, args->executable, "PJRT_LoadedExecutable_IsDeleted");
	pthread_mutex_lock(&e->lock);
	args->is_deleted = e->deleted;
	pthread_mutex_unlock(&e->lock);
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(LoadedExecutable_Fingerprint)
{
	PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size);
	EXEC_GET(e, PJRT_KIND_LOADED, args->executable, "PJRT_LoadedExecutable_Fingerprint");
	args->executable_fingerprint = e->fingerprint;
	args->executable_fingerprint_size = strlen(e->fingerprint);
	EXEC_PUT(e);
	return NULL;
}

/* ------------------------------------------------------------ executables */

PJRT_IMPL(Executable_Destroy)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_Destroy_Args, executable);
	return destroy_handle(PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_Destroy");
}

PJRT_IMPL(Executable_Name)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_Name_Args, executable_name_size);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_Name");
	args->executable_name = e->name;
	args->executable_name_size = strlen(e->name);
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_NumReplicas)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_NumReplicas_Args, num_replicas);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_NumReplicas");
	args->num_replicas = (size_t)e->num_replicas;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_NumPartitions)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_NumPartitions_Args, num_partitions);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_NumPartitions");
	args->num_partitions = (size_t)e->num_partitions;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_NumOutputs)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_NumOutputs_Args, num_outputs);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_NumOutputs");
	args->num_outputs = e->sig.n_results;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_SizeOfGeneratedCodeInBytes)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_SizeOfGeneratedCodeInBytes");
	args->size_in_bytes = (int64_t)e->neff_size;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_GetCostAnalysis)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_GetCostAnalysis_Args, properties);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_GetCostAnalysis");
	(void)e;
	/* No cost model: an empty analysis, which the framework accepts. */
	args->num_properties = 0;
	args->properties = NULL;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_OutputMemoryKinds)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_OutputMemoryKinds");
	args->num_outputs = e->sig.n_results;
	args->memory_kinds = e->out_kinds;
	args->memory_kind_sizes = e->out_kind_sizes;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_OutputElementTypes)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_OutputElementTypes_Args, num_output_types);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_OutputElementTypes");
	args->output_types = e->out_types;
	args->num_output_types = e->sig.n_results;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_OutputDimensions)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_OutputDimensions_Args, dim_sizes);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_OutputDimensions");
	args->num_outputs = e->sig.n_results;
	args->dims = e->out_dims;
	args->dim_sizes = e->out_dim_sizes;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_Fingerprint)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_Fingerprint_Args, executable_fingerprint_size);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_Fingerprint");
	args->executable_fingerprint = e->fingerprint;
	args->executable_fingerprint_size = strlen(e->fingerprint);
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_GetCompiledMemoryStats)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_GetCompiledMemoryStats_Args, host_temp_size_in_bytes);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_GetCompiledMemoryStats");
	args->generated_code_size_in_bytes = (int64_t)e->neff_size;
	args->argument_size_in_bytes = e->arg_bytes;
	args->output_size_in_bytes = e->out_bytes;
	args->alias_size_in_bytes = e->alias_bytes;
	args->temp_size_in_bytes = 0; /* the NEFF's scratch is not visible through libnrt's API */
	args->host_generated_code_size_in_bytes = 0;
	args->host_argument_size_in_bytes = 0;
	args->host_output_size_in_bytes = 0;
	args->host_alias_size_in_bytes = 0;
	args->host_temp_size_in_bytes = 0;
	if (PJRT_HAS_FIELD(args, PJRT_Executable_GetCompiledMemoryStats_Args, peak_memory_in_bytes))
		args->peak_memory_in_bytes = e->arg_bytes + e->out_bytes - e->alias_bytes;
	EXEC_PUT(e);
	return NULL;
}

PJRT_IMPL(Executable_OptimizedProgram)
{
	static const char fn[] = "PJRT_Executable_OptimizedProgram";
	PJRT_CHECK_ARGS(args, PJRT_Executable_OptimizedProgram_Args, program);
	PJRT_Program *p = args->program;
	if (!p || p->struct_size < PJRT_STRUCT_SIZE(PJRT_Program, format_size))
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program is NULL or its struct_size too small",
				  fn);
	EXEC_GET(e, PJRT_KIND_EXECUTABLE, args->executable, fn);
	PJRT_Error *err = NULL;
	/* "hlo_with_config" (a serialized HloModuleProtoWithConfig) for programs
	 * compiled from "hlo", the text itself ("hlo_text") for HLO text. */
	p->format = e->optimized_format;
	p->format_size = strlen(e->optimized_format);
	if (!p->code) {
		p->code_size = e->optimized_size;
	} else if (p->code_size < e->optimized_size) {
		err = pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: code_size %zu < the %zu bytes needed", fn,
				 p->code_size, e->optimized_size);
	} else {
		memcpy(p->code, e->optimized, e->optimized_size);
		p->code_size = e->optimized_size;
	}
	EXEC_PUT(e);
	return err;
}
