/* The runtime context: nrt_init/nrt_close, core counts, version and device memory accounting. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_kernel.h"
#include "internal.h"
#include "neuronsim/atomic_file.h"
#include "observe.h"
#include "nrt/nrt_version.h"
#include "uapi/linux/neuronsim_version.h"

/* The one piece of global mutable state: the live context. "closed" is a
 * marker distinguishing "after nrt_close" from "never initialised". */
static const char closed_marker;
#define CTX_CLOSED ((nrt_ctx_t *)(uintptr_t)&closed_marker)
static nrt_ctx_t *_Atomic g_ctx;

nrt_ctx_t *nrt_ctx_get(NRT_STATUS *out_status)
{
	nrt_ctx_t *ctx = atomic_load_explicit(&g_ctx, memory_order_acquire);
	if (!ctx) {
		*out_status = NRT_UNINITIALIZED;
		return NULL;
	}
	if (ctx == CTX_CLOSED) {
		*out_status = NRT_CLOSED;
		return NULL;
	}
	*out_status = NRT_SUCCESS;
	return ctx;
}

nrt_ctx_t *nrt_ctx_require(const char *func, NRT_STATUS *out_status)
{
	nrt_ctx_t *ctx = nrt_ctx_get(out_status);
	if (!ctx)
		NRT_LOGE("%s: %s", func, *out_status == NRT_CLOSED ?
			 "the runtime was closed (nrt_close); call nrt_init again first" :
			 "the runtime is not initialised; call nrt_init first");
	return ctx;
}

static void ctx_destroy(nrt_ctx_t *ctx)
{
	nrt_async_fini(ctx);
	nrt_profile_fini(ctx);
	nrt_stats_fini(ctx);
	nrt_snapshot_fini(ctx);
	for (uint32_t i = 0; i < ctx->n_cores; i++) {
		nrt_core_t *c = &ctx->cores[i];
		if (ctx->devices && ctx->devices[c->device].dev)
			ctx->ops->core_release(ctx->devices[c->device].dev, c->dev_core);
	}
	for (uint32_t d = 0; d < ctx->n_devices; d++)
		if (ctx->devices[d].dev)
			ctx->ops->close(ctx->devices[d].dev);
	nrt_handle_table_fini(&ctx->tensors);
	nrt_handle_table_fini(&ctx->models);
	pthread_mutex_destroy(&ctx->load_lock);
	free(ctx->devices);
	free(ctx->cores);
	free(ctx);
}

NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version)
{
	NRT_STATUS st;
	if (nrt_ctx_get(&st)) {
		NRT_LOGE("nrt_init: the runtime is already initialised; call nrt_close first");
		return NRT_INVALID;
	}
	if (framework < NRT_FRAMEWORK_TYPE_NO_FW || framework > NRT_FRAMEWORK_TYPE_PRECHECK) {
		NRT_LOGE("nrt_init: unknown framework type %d", (int)framework);
		return NRT_INVALID;
	}
	nrt_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NRT_RESOURCE;
	st = nrt_env_load(&ctx->config);
	if (st) {
		free(ctx);
		return st;
	}
	ctx->ops = strcmp(ctx->config.backend, "kernel") == 0 ? &nrt_backend_kernel_ops
							       : &nrt_backend_embedded_ops;
	/* Different generations per context make handles of an earlier runtime
	 * (before nrt_close) fail instead of naming new objects. */
	uint64_t now = ns_monotonic_ns();
	uint32_t gen_base = (uint32_t)(now ^ (now >> 20));
	nrt_handle_table_init(&ctx->tensors, NRT_HANDLE_TENSOR, gen_base);
	nrt_handle_table_init(&ctx->models, NRT_HANDLE_MODEL, gen_base * 7u + 1u);
	pthread_mutex_init(&ctx->load_lock, NULL);

	ctx->devices = calloc(ctx->config.num_devices, sizeof(*ctx->devices));
	ctx->cores = calloc(ctx->config.n_visible ? ctx->config.n_visible : 1, sizeof(*ctx->cores));
	if (!ctx->devices || !ctx->cores) {
		st = NRT_RESOURCE;
		goto err;
	}
	/* Counted only now, so ctx_destroy never walks a missing array. */
	ctx->n_devices = ctx->config.num_devices;
	nrt_backend_config_t bcfg = {
		.device_memory = ctx->config.device_memory,
		.cores_per_device = ctx->config.cores_per_device,
		.pin_threads = ctx->config.pin_threads,
		.threads = ctx->config.threads,
	};
	for (uint32_t d = 0; d < ctx->n_devices; d++) {
		char err[256] = "";
		st = ctx->ops->open(&bcfg, d, &ctx->devices[d].dev, err, sizeof(err));
		if (st) {
			NRT_LOGE("nrt_init: %s backend: %s", ctx->ops->name, err);
			goto err;
		}
		nrt_backend_info_t info;
		ctx->ops->query(ctx->devices[d].dev, &info);
		if (info.abi_version != NRT_BACKEND_ABI_VERSION) {
			NRT_LOGE("nrt_init: device %u speaks backend ABI %u, this runtime %u", d,
				 info.abi_version, NRT_BACKEND_ABI_VERSION);
			st = NRT_FAILURE;
			goto err;
		}
		ctx->devices[d].index = d;
		ctx->devices[d].n_cores = info.n_cores;
		ctx->devices[d].mem_size = info.mem_size;
		ctx->devices[d].numa_node = info.numa_node;
		ctx->mem_total += info.mem_size;
	}
	for (uint32_t i = 0; i < ctx->config.n_visible; i++) {
		uint32_t g = ctx->config.visible[i];
		nrt_core_t *c = &ctx->cores[i];
		c->global = g;
		/* Physical ids number the cores device after device, with each
		 * device's core count as its backend reports it (a kernel backend
		 * learns it from the driver, not from our environment). */
		uint32_t d = 0, first = 0;
		while (d < ctx->n_devices && g >= first + ctx->devices[d].n_cores)
			first += ctx->devices[d++].n_cores;
		if (d == ctx->n_devices) {
			NRT_LOGE("nrt_init: NeuronCore %u does not exist: the devices have %u cores", g, first);
			st = NRT_INVALID;
			goto err;
		}
		c->device = d;
		c->dev_core = g - first;
		st = ctx->ops->core_reserve(ctx->devices[c->device].dev, c->dev_core);
		if (st) {
			NRT_LOGE("nrt_init: cannot reserve NeuronCore %u (device %u core %u): %s", g,
				 c->device, c->dev_core, nrt_get_status_as_str(st));
			goto err;
		}
		ctx->n_cores = i + 1;
	}
	if ((st = nrt_snapshot_init(ctx)) || (st = nrt_stats_init(ctx)) || (st = nrt_profile_init(ctx)) ||
	    (st = nrt_async_init(ctx)))
		goto err;
	nrt_ctx_t *expect = atomic_load(&g_ctx);
	if ((expect != NULL && expect != CTX_CLOSED) ||
	    !atomic_compare_exchange_strong(&g_ctx, &expect, ctx)) {
		NRT_LOGE("nrt_init: another thread initialised the runtime concurrently");
		st = NRT_INVALID;
		goto err;
	}
	nrt_env_report_unimplemented();
	NRT_LOGI("initialised: %s backend, %u device(s), %u visible core(s), framework %d %s %s",
		 ctx->ops->name, ctx->n_devices, ctx->n_cores, (int)framework,
		 fw_version ? fw_version : "", fal_version ? fal_version : "");
	return NRT_SUCCESS;
err:
	ctx_destroy(ctx);
	return st;
}

static void close_model(void *obj, uint64_t handle, void *arg)
{
	nrt_ctx_t *ctx = arg;
	NRT_LOGW("nrt_close: model %#llx was not unloaded; unloading it",
		 (unsigned long long)handle);
	nrt_model_obj_destroy(ctx, obj);
}

static void close_tensor(void *obj, uint64_t handle, void *arg)
{
	nrt_tensor_obj_destroy(arg, obj);
}

void nrt_close(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (!ctx)
		return;
	/* Queued async requests end first, while the runtime is still up for
	 * the one each worker is running. */
	nrt_async_fini(ctx);
	/* Unpublish first so that new calls fail with NRT_CLOSED. */
	atomic_store(&g_ctx, CTX_CLOSED);
	nrt_handle_foreach(&ctx->models, close_model, ctx);
	nrt_handle_foreach(&ctx->tensors, close_tensor, ctx);
	ctx_destroy(ctx);
}

static NRT_STATUS count_cores(uint32_t *nc_count, int visible)
{
	if (!nc_count)
		return NRT_INVALID;
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	if (ctx) {
		uint32_t total = 0;
		for (uint32_t d = 0; d < ctx->n_devices; d++)
			total += ctx->devices[d].n_cores;
		*nc_count = visible ? ctx->n_cores : total;
		return NRT_SUCCESS;
	}
	/* Documented to work before nrt_init: answer from the environment. */
	nrt_config_t *cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return NRT_RESOURCE;
	st = nrt_env_load(cfg);
	if (st == NRT_SUCCESS)
		*nc_count = visible ? cfg->n_visible : cfg->num_devices * cfg->cores_per_device;
	free(cfg);
	return st;
}

NRT_STATUS nrt_get_total_nc_count(uint32_t *nc_count) { return count_cores(nc_count, 0); }
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count) { return count_cores(vnc_count, 0); }
NRT_STATUS nrt_get_visible_nc_count(uint32_t *nc_count) { return count_cores(nc_count, 1); }
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count) { return count_cores(vnc_count, 1); }

NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size)
{
	if (!ver || size == 0)
		return NRT_INVALID;
	nrt_version_t v;
	memset(&v, 0, sizeof(v));
	v.rt_major = NRT_MAJOR_VERSION;
	v.rt_minor = NRT_MINOR_VERSION;
	v.rt_patch = 0;
	v.rt_maintenance = 0;
	snprintf(v.rt_detail, sizeof(v.rt_detail),
		 "neuronsim %s libnrt %d.%d (NEFF %d.%d, ISA %d.%d)", NEURONSIM_VERSION,
		 NRT_MAJOR_VERSION, NRT_MINOR_VERSION, NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR,
		 ISA_VERSION_MAJOR, ISA_VERSION_MINOR);
	memcpy(ver, &v, size < sizeof(v) ? size : sizeof(v));
	return NRT_SUCCESS;
}

/* Sizes as the Neuron Runtime's memory reports print them: "4.000GB", "0.000B". */
static const char *mem_str(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KB", "MB", "GB", "TB" };
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.3f%s", v, unit[u]);
	return buf;
}

/* Per category: the report's two-line column title and the "usage:" name. */
static const char *const oom_title[NRT_NEURONSIM_MEM_CATEGORY_COUNT][2] = {
	{ "", "Tensors" }, { "Model", "Constants" }, { "Model", "Code" },
	{ "", "Scratchpad" }, { "Staged", "Inputs" }, { "Snapshot", "Copies" },
};
static const char *const oom_usage[NRT_NEURONSIM_MEM_CATEGORY_COUNT] = {
	"tensors", "model constants", "model code", "scratchpad", "staged inputs",
	"snapshot copies",
};

#define OOM_COL 10

static size_t oom_cell(char *line, size_t n, size_t len, const char *text)
{
	size_t w = strlen(text), left = w < OOM_COL ? (OOM_COL - w) / 2 : 0;
	int k = snprintf(line + n, len > n ? len - n : 0, "|%*s%-*s", (int)left, "",
			 (int)(OOM_COL - left), text);
	return n + (k > 0 ? (size_t)k : 0);
}

/* The usage table of every device ("ND d Overall": total in use, each category,
 * what is free of the device's size), '\n' after each line, into out[len] (which
 * the caller sizes for every line); returns the length. */
static size_t oom_table(nrt_ctx_t *ctx, char *out, size_t len)
{
	size_t n = 0;
	char b[32];
	for (int row = 0; row < 2; row++) {
		n += (size_t)snprintf(out + n, len - n, "%-14s", "");
		n = oom_cell(out, n, len, row ? "TOTAL" : "");
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			n = oom_cell(out, n, len, oom_title[k][row]);
		n = oom_cell(out, n, len, row ? "Free" : "");
		n += (size_t)snprintf(out + n, len > n ? len - n : 0, "|\n");
	}
	for (uint32_t d = 0; d < ctx->n_devices && n < len; d++) {
		nrt_device_t *dev = &ctx->devices[d];
		uint64_t used = 0, by[NRT_NEURONSIM_MEM_CATEGORY_COUNT];
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			used += by[k] = atomic_load(&dev->mem_by_cat[k]);
		char name[24];
		snprintf(name, sizeof(name), "ND %u Overall", d);
		n += (size_t)snprintf(out + n, len - n, "%-14s", name);
		n = oom_cell(out, n, len, mem_str(used, b, sizeof(b)));
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			n = oom_cell(out, n, len, mem_str(by[k], b, sizeof(b)));
		n = oom_cell(out, n, len, mem_str(dev->mem_size > used ? dev->mem_size - used : 0, b,
						  sizeof(b)));
		n += (size_t)snprintf(out + n, len > n ? len - n : 0, "|\n");
	}
	return n < len ? n : len - 1;
}

/* The Neuron Runtime's out-of-memory report: the failing size, usage and core,
 * then the usage table, also written to <dir>/neuron_mem_table_device_<d>_hbm_0.log
 * (dir: NEURONSIM_MEM_TABLE_DIR, default /tmp) as the SDK documents.
 * NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0 leaves the first line only. */
static void oom_report(nrt_ctx_t *ctx, uint32_t nc, uint64_t size, nrt_neuronsim_mem_category_t cat)
{
	const nrt_core_t *core = &ctx->cores[nc];
	nrt_device_t *dev = &ctx->devices[core->device];
	uint64_t used = 0;
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		used += atomic_load(&dev->mem_by_cat[k]);
	char a[32], b[32], c[32];
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_ERROR, "Failed to allocate %s (alignment: none, usage: %s) on "
		  "ND %u:NC %u (logical NeuronCore %u): %s of the device's %s are in use; free tensors "
		  "or unload models on it, or give it more memory (NEURONSIM_DEVICE_MEMORY)",
		  mem_str(size, a, sizeof(a)), oom_usage[cat], core->device, core->dev_core, nc,
		  mem_str(used, b, sizeof(b)), mem_str(dev->mem_size, c, sizeof(c)));
	if (!ctx->config.oom_log)
		return;
	/* Every line: a 14-character name, the cells, a closing bar and newline. */
	size_t cap = (ctx->n_devices + 2) * (14 + (OOM_COL + 1) * (NRT_NEURONSIM_MEM_CATEGORY_COUNT + 2) + 2) + 1;
	char *table = malloc(cap);
	if (!table)
		return;
	size_t len = oom_table(ctx, table, cap);
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_ERROR, "Displaying Current Memory Utilization:");
	for (char *line = table, *nl; *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;
		nrt_log_c(NRT_LOG_TDRV, NRT_LOG_ERROR, "%.*s", (int)(nl - line), line);
	}
	const char *dir = getenv("NEURONSIM_MEM_TABLE_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/neuron_mem_table_device_%u_hbm_0.log", dir && *dir ? dir : "/tmp",
		 core->device);
	const char *step = NULL;
	if (atomic_file_write_whole(path, table, len, 0644, &step))
		nrt_log_c(NRT_LOG_TDRV, NRT_LOG_WARN, "cannot write the memory table to %s (%s: %s)", path,
			  step ? step : "write", strerror(errno));
	else
		nrt_log_c(NRT_LOG_TDRV, NRT_LOG_ERROR, "The table is also in %s", path);
	free(table);
}

void nrt_devmem_log_instance(nrt_ctx_t *ctx, const nrt_instance_t *in, uint32_t neff_cores,
			     const char *model)
{
	if (nrt_log_level_of(NRT_LOG_TDRV) < NRT_LOG_INFO)
		return;
	const nrt_core_t *core = &ctx->cores[in->first_core];
	const nrt_device_t *dev = &ctx->devices[core->device];
	uint64_t used = 0, code = 0;
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		used += atomic_load(&dev->mem_by_cat[k]);
	for (uint32_t c = 0; c < neff_cores; c++)
		code += in->code[c].size;
	char a[32], b[32], c[32], d[32];
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "[ND %u:NC %u] Current Usage Total: %s", core->device,
		  core->dev_core, mem_str(used, a, sizeof(a)));
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "Per NEFF memory usage breakdown for [%s]:", model);
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "        Total: %s",
		  mem_str(code + in->consts.size + in->scratch.size, a, sizeof(a)));
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "        * model code: %s", mem_str(code, b, sizeof(b)));
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "        * model constants: %s",
		  mem_str(in->consts.size, c, sizeof(c)));
	nrt_log_c(NRT_LOG_TDRV, NRT_LOG_INFO, "        * scratchpad: %s", mem_str(in->scratch.size, d, sizeof(d)));
}

NRT_STATUS nrt_devmem_alloc(nrt_ctx_t *ctx, uint32_t nc, uint64_t size,
			    nrt_neuronsim_mem_category_t cat, nrt_backend_mem_t *out_mem)
{
	uint32_t device = ctx->cores[nc].device;
	NRT_STATUS st = ctx->ops->mem_alloc(ctx->devices[device].dev, size, out_mem);
	if (st) {
		if (st == NRT_RESOURCE)
			oom_report(ctx, nc, size, cat);
		return st;
	}
	out_mem->nc = nc;
	if (nrt_profile_mem_on())
		nrt_profile_mem(true, nc, oom_usage[cat], out_mem->size);
	atomic_fetch_add(&ctx->mem_by_cat[cat], out_mem->size);
	atomic_fetch_add(&ctx->devices[device].mem_by_cat[cat], out_mem->size);
	atomic_fetch_add(&ctx->cores[nc].mem_by_cat[cat], out_mem->size);
	uint64_t now = atomic_fetch_add(&ctx->mem_in_use, out_mem->size) + out_mem->size;
	uint64_t peak = atomic_load(&ctx->mem_peak);
	while (now > peak && !atomic_compare_exchange_weak(&ctx->mem_peak, &peak, now))
		;
	return NRT_SUCCESS;
}

void nrt_devmem_free(nrt_ctx_t *ctx, uint32_t device, nrt_neuronsim_mem_category_t cat,
		     nrt_backend_mem_t *mem)
{
	if (!mem->size)
		return;
	if (nrt_profile_mem_on())
		nrt_profile_mem(false, mem->nc, oom_usage[cat], mem->size);
	ctx->ops->mem_free(ctx->devices[device].dev, mem);
	atomic_fetch_sub(&ctx->mem_by_cat[cat], mem->size);
	atomic_fetch_sub(&ctx->devices[device].mem_by_cat[cat], mem->size);
	atomic_fetch_sub(&ctx->cores[mem->nc].mem_by_cat[cat], mem->size);
	atomic_fetch_sub(&ctx->mem_in_use, mem->size);
	memset(mem, 0, sizeof(*mem));
}

NRT_STATUS nrt_neuronsim_get_mem_usage(nrt_neuronsim_mem_usage_t *out_usage)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!out_usage)
		return NRT_INVALID;
	nrt_neuronsim_mem_usage_t u;
	memset(&u, 0, sizeof(u));
	u.total = ctx->mem_total;
	u.in_use = atomic_load(&ctx->mem_in_use);
	u.peak = atomic_load(&ctx->mem_peak);
	for (int i = 0; i < NRT_NEURONSIM_MEM_CATEGORY_COUNT; i++)
		u.by_category[i] = atomic_load(&ctx->mem_by_cat[i]);
	u.host_tensors = atomic_load(&ctx->host_tensor_bytes);
	u.host_snapshot = atomic_load(&ctx->host_snapshot_bytes);
	*out_usage = u;
	return NRT_SUCCESS;
}

const char *nrt_neuronsim_backend_name(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	return ctx ? ctx->ops->name : "none";
}

NRT_STATUS nrt_neuronsim_get_core_stats(uint32_t logical_nc, nrt_neuronsim_core_stats_t *out_stats)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_require(__func__, &st);
	if (!ctx)
		return st;
	if (!out_stats) {
		NRT_LOGE("nrt_neuronsim_get_core_stats: out_stats is NULL");
		return NRT_INVALID;
	}
	if (logical_nc >= ctx->n_cores) {
		NRT_LOGE("nrt_neuronsim_get_core_stats: NeuronCore %u is not visible (%u visible)",
			 logical_nc, ctx->n_cores);
		return NRT_INVALID;
	}
	nrt_core_t *c = &ctx->cores[logical_nc];
	*out_stats = (nrt_neuronsim_core_stats_t){
		.executions = atomic_load(&c->n_exec),
		.completed = atomic_load(&c->n_ok),
		.completed_with_err = atomic_load(&c->n_err),
		.completed_with_num_err = atomic_load(&c->n_num_err),
		.timed_out = atomic_load(&c->n_timeout),
		.incorrect_input = atomic_load(&c->n_bad_input),
		.busy_ns = nrt_core_busy_ns(c, ns_monotonic_ns()), /* running executions included */
	};
	return NRT_SUCCESS;
}
