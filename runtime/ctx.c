/* The runtime context: the one pointer to the live runtime, and device memory through the backend with its accounting (by category, device and core), the out-of-memory report and the usage query. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "neuronsim/atomic_file.h"
#include "observe.h"

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

bool nrt_ctx_publish(nrt_ctx_t *ctx)
{
	nrt_ctx_t *expect = atomic_load(&g_ctx);
	if ((expect != NULL && expect != CTX_CLOSED) ||
	    !atomic_compare_exchange_strong(&g_ctx, &expect, ctx))
		return false;
	nrt_log_set_config(&ctx->config.log);
	return true;
}

void nrt_ctx_unpublish(void)
{
	nrt_log_set_config(NULL);
	atomic_store(&g_ctx, CTX_CLOSED);
}

ns_status_t nrt_ctx_enter(nrt_ctx_t **out_ctx)
{
	NRT_STATUS st;
	*out_ctx = nrt_ctx_get(&st);
	if (*out_ctx)
		return NS_OK;
	return st == NRT_CLOSED
		       ? nrt_status_make(st, "the runtime was closed (nrt_close); call nrt_init again first")
		       : nrt_status_make(st, "the runtime is not initialised; call nrt_init first");
}

ns_status_t nrt_ctx_check_core(const nrt_ctx_t *ctx, int64_t nc)
{
	if (nc < 0 || nc >= ctx->n_cores)
		return nrt_status_make(NRT_INVALID, "NeuronCore %lld is not visible (%u visible)", (long long)nc,
				       ctx->n_cores);
	return NS_OK;
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

static ns_status_t get_mem_usage(nrt_neuronsim_mem_usage_t *out_usage)
{
	nrt_ctx_t *ctx;
	NS_RETURN_IF_ERROR(nrt_ctx_enter(&ctx));
	if (!out_usage)
		return nrt_status_make(NRT_INVALID, "out_usage is NULL");
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
	return NS_OK;
}

NRT_STATUS nrt_neuronsim_get_mem_usage(nrt_neuronsim_mem_usage_t *out_usage)
{
	return nrt_status_report(__func__, get_mem_usage(out_usage));
}

const char *nrt_neuronsim_backend_name(void)
{
	NRT_STATUS st;
	nrt_ctx_t *ctx = nrt_ctx_get(&st);
	return ctx ? ctx->ops->name : "none";
}
