/* HLO snapshots: the observer hooks (observe.h) for on-demand dumps (XLA_FLAGS, the callback, RANK and NC0 filters) and the ON_NRT_ERROR modes with their input copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "snapshot_internal.h"

#define COPY_ALIGN 64u

/* The callback is process-wide, like libneuronxla.register_hlo_snapshot_callback:
 * it may be set before nrt_init and survives nrt_close, so it cannot live in
 * the runtime context. */
static struct {
	pthread_mutex_t lock;
	nrt_neuronsim_snapshot_cb_t cb;
	void *arg;
} g_snapshot_cb = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL };

NRT_STATUS nrt_neuronsim_set_snapshot_callback(nrt_neuronsim_snapshot_cb_t cb, void *arg)
{
	pthread_mutex_lock(&g_snapshot_cb.lock);
	g_snapshot_cb.cb = cb;
	g_snapshot_cb.arg = cb ? arg : NULL;
	pthread_mutex_unlock(&g_snapshot_cb.lock);
	return NRT_SUCCESS;
}

/* torch-neuronx's default: a snapshot of the inputs of every execution. */
static const char *default_callback(const char *name, uint32_t device, uint64_t count, void *arg)
{
	(void)name;
	(void)device;
	(void)count;
	(void)arg;
	return "inputs";
}

enum { WANT_INPUTS = 1, WANT_OUTPUTS = 2 };

/* Asks the callback what to dump for this execution; unknown words are
 * reported once per runtime and ignored. */
static int ask_callback(nrt_ctx_t *ctx, const nrt_model_obj_t *m, uint32_t device, uint64_t count)
{
	pthread_mutex_lock(&g_snapshot_cb.lock);
	nrt_neuronsim_snapshot_cb_t cb = g_snapshot_cb.cb ? g_snapshot_cb.cb : default_callback;
	void *arg = g_snapshot_cb.arg;
	pthread_mutex_unlock(&g_snapshot_cb.lock);
	/* Called without the lock: the callback may set another callback. */
	const char *answer = cb(m->view.meta->model_name, device, count, arg);
	if (!answer)
		return 0;
	int want = 0;
	const char *p = answer;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t len = strcspn(p, " \t,");
		if (!len)
			break;
		if (len == 6 && !strncmp(p, "inputs", len))
			want |= WANT_INPUTS;
		else if (len == 7 && !strncmp(p, "outputs", len))
			want |= WANT_OUTPUTS;
		else if (!atomic_exchange(&ctx->snapshot->cb_warned, true))
			NRT_LOGW("snapshot callback returned \"%.200s\" for model '%s' execution %llu: "
				 "expected \"inputs\", \"outputs\", \"inputs outputs\" or \"\"; ignoring "
				 "\"%.*s\" (reported once)", answer, m->view.meta->model_name,
				 (unsigned long long)count, (int)(len > 64 ? 64 : len), p);
		p += len;
	}
	return want;
}

ns_status_t nrt_snapshot_init(nrt_ctx_t *ctx)
{
	nrt_snapshot_config_t cfg;
	NS_RETURN_IF_ERROR(nrt_snapshot_config_load(&cfg));
	struct nrt_snapshot_state *s = calloc(1, sizeof(*s));
	if (!s)
		return nrt_status_make(NRT_RESOURCE, "out of host memory for the snapshot state");
	s->cfg = cfg;
	pthread_mutex_init(&s->dir_lock, NULL);
	ctx->snapshot = s;
	if (cfg.on_demand)
		NRT_LOGI("snapshots: every execution (as the callback decides) into %s, process %llu, "
			 "dumping rank %s%s", cfg.dir, (unsigned long long)cfg.rank,
			 cfg.all_ranks ? "all" : cfg.rank == cfg.dump_rank ? "this one" : "another one",
			 cfg.nc0_only ? ", NeuronCore 0 only" : "");
	if (cfg.err_mode != NRT_SNAP_ERR_OFF)
		NRT_LOGI("snapshots: NEURON_DUMP_HLO_SNAPSHOT=%s into %s%s",
			 nrt_snapshot_err_mode_name(cfg.err_mode), cfg.dir,
			 cfg.nc0_only ? ", NeuronCore 0 only" : "");
	return NS_OK;
}

void nrt_snapshot_fini(nrt_ctx_t *ctx)
{
	struct nrt_snapshot_state *s = ctx->snapshot;
	if (!s)
		return;
	pthread_mutex_destroy(&s->dir_lock);
	free(s);
	ctx->snapshot = NULL;
}

static void state_free(nrt_ctx_t *ctx, nrt_model_obj_t *m, struct nrt_model_snapshot *ms)
{
	for (uint32_t i = 0; ms->inst && i < ms->n_instances; i++) {
		nrt_snap_instance_t *si = &ms->inst[i];
		nrt_devmem_free(ctx, m->instances[i].device, NRT_NEURONSIM_MEM_SNAPSHOT, &si->dev);
		if (si->host) {
			free(si->host);
			atomic_fetch_sub(&ctx->host_snapshot_bytes, ms->in_total);
		}
	}
	pthread_mutex_destroy(&ms->stop_lock);
	free(ms->inst);
	free(ms->in_off);
	free(ms);
}

/* True when one of the instance's cores is NeuronCore 0 of the machine
 * (physical id 0), what NEURON_NC0_ONLY_SNAPSHOT keeps. */
static bool on_nc0(const nrt_ctx_t *ctx, const nrt_model_obj_t *m, const nrt_instance_t *in)
{
	for (uint32_t c = 0; c < m->neff_cores; c++)
		if (ctx->cores[in->first_core + c].global == 0)
			return true;
	return false;
}

/* Allocates the input copy of instance i for the ON_NRT_ERROR mode in force. */
static ns_status_t alloc_copy(nrt_ctx_t *ctx, nrt_model_obj_t *m, struct nrt_model_snapshot *ms, uint32_t i)
{
	nrt_snap_err_mode_t mode = ctx->snapshot->cfg.err_mode;
	const nrt_instance_t *in = &m->instances[i];
	nrt_snap_instance_t *si = &ms->inst[i];
	const char *name = m->view.meta->model_name;
	unsigned long long total = ms->in_total, largest = ms->in_max;
	if (mode == NRT_SNAP_ERR_DEVICE || mode == NRT_SNAP_ERR_HYBRID) {
		uint64_t need = mode == NRT_SNAP_ERR_DEVICE ? ms->in_total : ms->in_max;
		NRT_STATUS st = nrt_devmem_alloc(ctx, in->first_core, need, NRT_NEURONSIM_MEM_SNAPSHOT, &si->dev);
		if (st == NRT_RESOURCE && mode == NRT_SNAP_ERR_DEVICE)
			return nrt_status_make(st, "model '%s': NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR needs %llu "
					       "bytes of device memory on device %u (instance %u, NeuronCore %u) "
					       "to keep a copy of the inputs, and they do not fit: use "
					       "NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR_HYBRID (%llu bytes of device "
					       "memory and %llu of host memory) or ON_NRT_ERROR_CPU (%llu bytes of "
					       "host memory, none on the device)", name, total, in->device, i,
					       in->first_core, largest, total, total);
		if (st == NRT_RESOURCE)
			return nrt_status_make(st, "model '%s': NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR_HYBRID needs "
					       "%llu bytes of device memory on device %u (instance %u, NeuronCore "
					       "%u) for the bounce buffer of its largest input, and they do not "
					       "fit: use NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR_CPU (%llu bytes of "
					       "host memory, none on the device)", name, largest, in->device, i,
					       in->first_core, total);
		if (st)
			return nrt_status_make(st, "model '%s': allocating the snapshot input copy (%llu bytes) "
					       "on device %u failed: %s", name, (unsigned long long)need,
					       in->device, nrt_get_status_as_str(st));
	}
	if (mode == NRT_SNAP_ERR_HYBRID || mode == NRT_SNAP_ERR_CPU) {
		si->host = aligned_alloc(COPY_ALIGN, ms->in_total);
		if (!si->host)
			return nrt_status_make(NRT_RESOURCE, "model '%s': cannot allocate %llu bytes of host "
					       "memory for the copy of the inputs that NEURON_DUMP_HLO_SNAPSHOT=%s "
					       "keeps", name, total, nrt_snapshot_err_mode_name(mode));
		atomic_fetch_add(&ctx->host_snapshot_bytes, ms->in_total);
	}
	return NS_OK;
}

ns_status_t nrt_snapshot_model_init(nrt_ctx_t *ctx, nrt_model_obj_t *m)
{
	const struct nrt_snapshot_state *s = ctx->snapshot;
	if (!s || (!s->cfg.on_demand && s->cfg.err_mode == NRT_SNAP_ERR_OFF))
		return NS_OK;
	uint32_t n = m->view.meta->n_tensors;
	struct nrt_model_snapshot *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return nrt_status_make(NRT_RESOURCE, "model '%s': out of host memory for its snapshot state",
				       m->view.meta->model_name);
	pthread_mutex_init(&ms->stop_lock, NULL);
	ms->n_instances = m->n_instances;
	ms->inst = calloc(m->n_instances ? m->n_instances : 1, sizeof(*ms->inst));
	ms->in_off = calloc(n ? n : 1, sizeof(*ms->in_off));
	if (!ms->inst || !ms->in_off) {
		state_free(ctx, m, ms);
		return nrt_status_make(NRT_RESOURCE, "model '%s': out of host memory for its snapshot state",
				       m->view.meta->model_name);
	}
	for (uint32_t i = 0; i < n; i++) {
		const neff_tensor_t *t = &m->view.tensors[i];
		if (t->usage != NEFF_USAGE_INPUT)
			continue;
		ms->in_off[i] = ms->in_total;
		ms->in_total += (t->size + COPY_ALIGN - 1) & ~(uint64_t)(COPY_ALIGN - 1);
		if (t->size > ms->in_max)
			ms->in_max = t->size;
	}
	bool rank_ok = s->cfg.all_ranks || s->cfg.rank == s->cfg.dump_rank;
	for (uint32_t i = 0; i < m->n_instances; i++) {
		nrt_snap_instance_t *si = &ms->inst[i];
		bool core_ok = !s->cfg.nc0_only || on_nc0(ctx, m, &m->instances[i]);
		si->on_demand = s->cfg.on_demand && rank_ok && core_ok;
		si->err_active = s->cfg.err_mode != NRT_SNAP_ERR_OFF && core_ok;
		if (si->err_active && ms->in_total) {
			ns_status_t st = alloc_copy(ctx, m, ms, i);
			if (st) {
				state_free(ctx, m, ms);
				return st;
			}
		}
	}
	m->snapshot = ms;
	return NS_OK;
}

void nrt_snapshot_model_fini(nrt_ctx_t *ctx, nrt_model_obj_t *m)
{
	if (!m->snapshot)
		return;
	state_free(ctx, m, m->snapshot);
	m->snapshot = NULL;
}

/* Copies the inputs as they are before the execution (aliased ones included:
 * the device overwrites them in place). */
static void copy_inputs(nrt_snap_err_mode_t mode, const nrt_model_obj_t *m, const struct nrt_model_snapshot *ms,
			nrt_snap_instance_t *si, const nrt_exec_rec_t *rec)
{
	for (uint32_t i = 0; i < rec->n_tensors; i++) {
		const neff_tensor_t *t = &m->view.tensors[i];
		if (t->usage != NEFF_USAGE_INPUT || !rec->io[i])
			continue;
		switch (mode) {
		case NRT_SNAP_ERR_DEVICE:
			memcpy(si->dev.host + ms->in_off[i], rec->io[i], t->size);
			break;
		case NRT_SNAP_ERR_HYBRID:
			/* A device-side copy into the bounce buffer, then out to host
			 * memory, one input at a time. */
			memcpy(si->dev.host, rec->io[i], t->size);
			memcpy(si->host + ms->in_off[i], si->dev.host, t->size);
			break;
		case NRT_SNAP_ERR_CPU:
			memcpy(si->host + ms->in_off[i], rec->io[i], t->size);
			break;
		default:
			break;
		}
	}
}

ns_status_t nrt_snapshot_exec_begin(nrt_ctx_t *ctx, nrt_exec_rec_t *rec)
{
	nrt_model_obj_t *m = rec->model;
	struct nrt_model_snapshot *ms = m->snapshot;
	if (!ms || !rec->instance)
		return NS_OK;
	if (atomic_load(&ms->stopped)) {
		pthread_mutex_lock(&ms->stop_lock);
		ns_status_t st = nrt_status_make(NRT_EXEC_UNIT_DISABLED, "model '%s' is stopped: its execution "
						 "%llu failed (%s) under NEURON_DUMP_HLO_SNAPSHOT=%s, snapshot "
						 "%s; unload it (nrt_unload) and load it again (nrt_load) to "
						 "execute it", m->view.meta->model_name,
						 (unsigned long long)ms->stop_exec,
						 nrt_get_status_as_str(ms->stop_status),
						 nrt_snapshot_err_mode_name(ctx->snapshot->cfg.err_mode),
						 ms->stop_file[0] ? ms->stop_file : "not written");
		pthread_mutex_unlock(&ms->stop_lock);
		return st;
	}
	uint32_t ii = (uint32_t)(rec->instance - m->instances);
	nrt_snap_instance_t *si = &ms->inst[ii];
	si->exec_index = rec->exec_index;
	si->copied = false;
	si->want_outputs = false;
	if (si->err_active) {
		copy_inputs(ctx->snapshot->cfg.err_mode, m, ms, si, rec);
		si->copied = true;
	}
	if (si->on_demand) {
		int want = ask_callback(ctx, m, ii, rec->exec_index);
		if (want & WANT_INPUTS)
			nrt_snapshot_dump(ctx, rec, ii, NRT_SNAP_FILE_INPUTS, rec->io, NULL, 0);
		si->want_outputs = (want & WANT_OUTPUTS) != 0;
	}
	return NS_OK;
}

/* Writes the error snapshot of a failed execution and stops the model; what
 * it did goes at the end of *st, the execution's failure. */
static void dump_error(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec, uint32_t ii, ns_status_t *st)
{
	nrt_model_obj_t *m = rec->model;
	struct nrt_model_snapshot *ms = m->snapshot;
	const nrt_snap_instance_t *si = &ms->inst[ii];
	nrt_snap_err_mode_t mode = ctx->snapshot->cfg.err_mode;
	char path[PATH_MAX + 1024] = "out of host memory";
	bool written = false;
	uint8_t **inputs = calloc(rec->n_tensors ? rec->n_tensors : 1, sizeof(*inputs));
	if (inputs) {
		uint8_t *base = mode == NRT_SNAP_ERR_DEVICE ? si->dev.host : si->host;
		for (uint32_t i = 0; i < rec->n_tensors; i++)
			if (m->view.tensors[i].usage == NEFF_USAGE_INPUT)
				inputs[i] = base + ms->in_off[i];
		written = nrt_snapshot_dump(ctx, rec, ii, NRT_SNAP_FILE_ERROR, inputs, path, sizeof(path));
		free(inputs);
	} else {
		nrt_neuronsim_counter_add("SnapshotWriteFailures", 1);
	}
	pthread_mutex_lock(&ms->stop_lock);
	if (!atomic_load(&ms->stopped)) {
		ms->stop_exec = rec->exec_index;
		ms->stop_status = rec->status;
		snprintf(ms->stop_file, sizeof(ms->stop_file), "%s", written ? path : "");
		atomic_store(&ms->stopped, true);
	}
	pthread_mutex_unlock(&ms->stop_lock);
	if (!*st) /* the failure's own status is always there; not when memory ran out */
		*st = nrt_status_make(rec->status, "model '%s': %s", m->view.meta->model_name,
				      nrt_get_status_as_str(rec->status));
	if (written)
		*st = nrt_status_append(*st, "; NEURON_DUMP_HLO_SNAPSHOT=%s wrote %s (execution %llu's inputs "
					"before it ran, its outputs and error record); the model is stopped until "
					"it is reloaded", nrt_snapshot_err_mode_name(mode), path,
					(unsigned long long)rec->exec_index);
	else
		*st = nrt_status_append(*st, "; NEURON_DUMP_HLO_SNAPSHOT=%s could not write the snapshot of "
					"execution %llu (%s); the model is stopped until it is reloaded",
					nrt_snapshot_err_mode_name(mode), (unsigned long long)rec->exec_index, path);
}

void nrt_snapshot_exec_end(nrt_ctx_t *ctx, nrt_exec_rec_t *rec, ns_status_t *st)
{
	nrt_model_obj_t *m = rec->model;
	struct nrt_model_snapshot *ms = m->snapshot;
	if (!ms || !rec->instance)
		return;
	uint32_t ii = (uint32_t)(rec->instance - m->instances);
	nrt_snap_instance_t *si = &ms->inst[ii];
	/* Only what exec_begin set up for this very execution counts (it is not
	 * called when binding failed or the model was refused). */
	bool mine = si->exec_index == rec->exec_index;
	bool copied = mine && si->copied, want_outputs = mine && si->want_outputs;
	si->copied = si->want_outputs = false;
	if (!rec->ran)
		return;
	if (want_outputs)
		nrt_snapshot_dump(ctx, rec, ii, NRT_SNAP_FILE_OUTPUTS, NULL, NULL, 0);
	if (copied && rec->status != NRT_SUCCESS)
		dump_error(ctx, rec, ii, st);
}
