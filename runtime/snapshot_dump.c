/* Writing snapshot files of an execution: names, directory, tensor table, error record as JSON, counters and warnings. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "neuronsim/fs.h"
#include "neuronsim/json_str.h"
#include "neuronsim/snapshot.h"
#include "nrt/nrt_version.h"
#include "snapshot_internal.h"

static const char *const kind_names[] = { "inputs", "outputs", "error" };

static const char *error_kind_name(uint32_t kind)
{
	switch (kind) {
	case NRT_NEURONSIM_ERROR_NONE: return "none";
	case NRT_NEURONSIM_ERROR_NAN: return "nan";
	case NRT_NEURONSIM_ERROR_INF: return "inf";
	case NRT_NEURONSIM_ERROR_OOB: return "oob";
	case NRT_NEURONSIM_ERROR_TIMEOUT: return "timeout";
	default: return "other";
	}
}

/* The error record as a JSON object text (malloc'd), or NULL without memory. */
static char *error_json(const nrt_neuronsim_exec_error_t *e)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int rc = 0;
	rc |= json_object_set_new(o, "status", json_integer(e->status));
	rc |= json_object_set_new(o, "status_name", ns_json_string_lossy(nrt_get_status_as_str(e->status)));
	rc |= json_object_set_new(o, "kind", ns_json_string_lossy(error_kind_name(e->kind)));
	rc |= json_object_set_new(o, "logical_nc", json_integer(e->logical_nc));
	rc |= json_object_set_new(o, "engine", ns_json_string_lossy(isa_engine_name(e->engine)));
	rc |= json_object_set_new(o, "insn_index", json_integer(e->insn_index));
	rc |= json_object_set_new(o, "hlo_name", ns_json_string_lossy(e->hlo_name));
	rc |= json_object_set_new(o, "op_type", ns_json_string_lossy(e->op_type));
	rc |= json_object_set_new(o, "source_file", ns_json_string_lossy(e->source_file));
	rc |= json_object_set_new(o, "source_line", json_integer(e->source_line));
	rc |= json_object_set_new(o, "region", json_integer(e->region));
	rc |= json_object_set_new(o, "tensor", ns_json_string_lossy(e->tensor));
	rc |= json_object_set_new(o, "first_index", json_integer((json_int_t)e->first_index));
	rc |= json_object_set_new(o, "count", json_integer((json_int_t)e->count));
	rc |= json_object_set_new(o, "message", ns_json_string_lossy(e->message));
	char *s = rc ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static bool dir_ready(nrt_ctx_t *ctx, char *why, size_t why_len)
{
	struct nrt_snapshot_state *s = ctx->snapshot;
	pthread_mutex_lock(&s->dir_lock);
	/* mode 0700: snapshots hold a model's data */
	bool ok = s->dir_ready ||
		  ns_status_consume_message(ns_mkdir_p_status(s->cfg.dir, 0700), why, why_len) ==
			  NS_STATUS_OK;
	s->dir_ready = ok;
	pthread_mutex_unlock(&s->dir_lock);
	return ok;
}

/* MODULE-processNNNNNN-executableNNNNNN-deviceNNNNNN-executionNNNNNN.KIND.decomposed_hlo_snapshot,
 * with the module name reduced to characters safe in a file name. */
static void file_path(const struct nrt_snapshot_state *s, const nrt_exec_rec_t *rec, uint32_t inst,
		      nrt_snap_file_kind_t kind, char *out, size_t len)
{
	char module[sizeof(rec->model->view.meta->model_name)];
	const char *src = rec->model->view.meta->model_name;
	size_t n = 0;
	for (; src[n] && n + 1 < sizeof(module); n++) {
		char c = src[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-';
		module[n] = ok ? c : '_';
	}
	module[n] = '\0';
	if (!n || module[0] == '.')
		module[0] = n ? '_' : '\0';
	snprintf(out, len, "%s/%s-process%06llu-executable%06u-device%06u-execution%06llu.%s.decomposed_hlo_snapshot",
		 s->cfg.dir, n ? module : "module", (unsigned long long)s->cfg.rank,
		 rec->model->executable_id, inst, (unsigned long long)rec->exec_index, kind_names[kind]);
}

/* A snapshot the user asked for is lost (the dump directory is a file, cannot
 * be created or written, the disk is full): the first time an ERROR, which the
 * default log level shows, since a WARN would hide it from exactly the user who
 * asked for dumps; later ones WARN, so a run that dumps every execution does
 * not drown its log. SnapshotWriteFailures counts them all. caller_says: the
 * caller puts the reason in its own report (the error snapshot, in the failed
 * execution's), so nothing is logged here. */
static void report_lost(nrt_ctx_t *ctx, const char *what, bool caller_says)
{
	nrt_neuronsim_counter_add("SnapshotWriteFailures", 1);
	if (caller_says)
		return;
	if (!atomic_exchange(&ctx->snapshot->write_error_said, true))
		NRT_LOGE("%s (the execution itself is not affected; further lost snapshots are "
			 "logged at WARN and counted in SnapshotWriteFailures)", what);
	else
		NRT_LOGW("%s (the execution itself is not affected)", what);
}

bool nrt_snapshot_dump(nrt_ctx_t *ctx, const nrt_exec_rec_t *rec, uint32_t inst_index,
		       nrt_snap_file_kind_t kind, uint8_t *const *inputs, char *out_path,
		       size_t path_len)
{
	const nrt_model_obj_t *m = rec->model;
	const neff_view_t *v = &m->view;
	uint32_t n = rec->n_tensors;
	char path[PATH_MAX + 512], err[PATH_MAX + 768] = "";
	file_path(ctx->snapshot, rec, inst_index, kind, path, sizeof(path));
	if (out_path && path_len)
		out_path[0] = '\0';
	if (!dir_ready(ctx, err, sizeof(err))) {
		char what[sizeof(path) + sizeof(err) + 32];
		snprintf(what, sizeof(what), "snapshot %s not written: %s", path, err);
		report_lost(ctx, what, out_path && path_len);
		if (out_path && path_len)
			snprintf(out_path, path_len, "%s not written: %s", path, err);
		return false;
	}

	snapshot_tensor_t *t = calloc(n ? n : 1, sizeof(*t));
	int32_t *file_index = malloc((n ? n : 1) * sizeof(*file_index));
	char *ejson = kind == NRT_SNAP_FILE_ERROR ? error_json(&rec->error) : NULL;
	bool written = false;
	if (!t || !file_index || (kind == NRT_SNAP_FILE_ERROR && !ejson)) {
		char what[sizeof(path) + 64];
		snprintf(what, sizeof(what), "snapshot %s not written: out of host memory", path);
		report_lost(ctx, what, out_path && path_len);
		if (out_path && path_len)
			snprintf(out_path, path_len, "%s not written: out of host memory", path);
		goto out;
	}
	/* Tensors in NEFF order; an output's alias_input is the index of its input
	 * in this file's table (-1 when the file has no inputs). */
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		const neff_tensor_t *nt = &v->tensors[i];
		bool input = nt->usage == NEFF_USAGE_INPUT;
		file_index[i] = -1;
		if (input ? kind == NRT_SNAP_FILE_OUTPUTS : kind == NRT_SNAP_FILE_INPUTS)
			continue;
		const uint8_t *bytes = input ? inputs[i] : rec->io[i];
		if (!bytes)
			continue; /* unbound: cannot happen after a run, kept safe */
		snapshot_tensor_t *d = &t[k];
		snprintf(d->name, sizeof(d->name), "%s", nt->name);
		d->role = input ? SNAPSHOT_ROLE_INPUT : SNAPSHOT_ROLE_OUTPUT;
		d->dtype = nt->dtype;
		d->rank = nt->rank;
		for (uint32_t r = 0; r < nt->rank && r < SNAPSHOT_MAX_RANK; r++)
			d->shape[r] = nt->shape[r];
		d->size = nt->size;
		d->data = bytes;
		d->alias_input = !input && nt->alias_input >= 0 && (uint32_t)nt->alias_input < n
					 ? file_index[nt->alias_input] : -1;
		file_index[i] = (int32_t)k++;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	nrt_version_t ver;
	nrt_get_version(&ver, sizeof(ver));
	snapshot_meta_t meta = {
		.module_name = v->meta->model_name,
		.kind = kind == NRT_SNAP_FILE_ERROR ? "error" : kind_names[kind],
		.process = ctx->snapshot->cfg.rank,
		.executable = m->executable_id,
		.device = inst_index,
		.execution = rec->exec_index,
		.status = kind == NRT_SNAP_FILE_INPUTS ? 0 : rec->status,
		.error_json = ejson,
		.runtime_version = ver.rt_detail,
		.wall_time_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
	};
	json_t *probe = json_string(meta.module_name);
	if (!probe)
		meta.module_name = "module"; /* not UTF-8: the file name has the readable part */
	json_decref(probe);
	nrt_neuronsim_trace_begin("snapshot_write");
	ns_status_t ss = snapshot_write(path, &meta, v->hlo_text, v->hlo_text ? v->hlo_size : 0, t, k);
	nrt_neuronsim_trace_end();
	if (ns_status_consume_message(ss, err, sizeof(err)) != NS_STATUS_OK) {
		report_lost(ctx, err[0] ? err : path, out_path && path_len);
		if (out_path && path_len)
			snprintf(out_path, path_len, "%s", err[0] ? err : path);
		goto out;
	}
	nrt_neuronsim_counter_add("SnapshotsWritten", 1);
	NRT_LOGI("snapshot written: %s", path);
	if (out_path && path_len)
		snprintf(out_path, path_len, "%s", path);
	written = true;
out:
	free(ejson);
	free(file_index);
	free(t);
	return written;
}
