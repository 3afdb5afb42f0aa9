/* neuron-snapshot replay: compiles the embedded HLO, runs it on the recorded inputs on the device and the reference interpreter, compares, and names the first instruction that produced a NaN or Inf. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ncc/ncc.h"
#include "ncc/ncc_interp.h"
#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "neuron_snapshot.h"
#include "tool_common.h"

typedef struct replay_opts {
	const char *path;
	int opt_level;
	bool have_tol;
	ncc_tolerance_t tol;
	bool verbose;
	uint32_t timeout_s;    /* NEURON_RT_EXEC_TIMEOUT: also the interpreter's limit; 0 none */
} replay_opts_t;

typedef struct replay {
	snapshot_t *snap;
	ncc_module_t *m;              /* the HLO as written */
	ncc_module_t *opt;            /* after the passes of the opt level (for fused names) */
	ncc_compile_result_t res;
	ncc_value_t **args;
	int32_t nargs;
	ncc_value_t *result;          /* interpreter */
	ncc_value_t **leaves;         /* its array leaves, borrowed */
	int32_t nleaves;
	nrt_model_t *model;
	nrt_tensor_info_array_t *info;
	nrt_tensor_t **tensors;
	nrt_tensor_set_t *in_set, *out_set;
	bool nrt_up;
	uint8_t **dev_out;            /* per NEFF output, bytes read back */
} replay_t;

static void replay_release(replay_t *r)
{
	if (r->in_set)
		nrt_destroy_tensor_set(&r->in_set);
	if (r->out_set)
		nrt_destroy_tensor_set(&r->out_set);
	if (r->tensors && r->info)
		for (uint64_t i = 0; i < r->info->tensor_count; i++)
			if (r->tensors[i])
				nrt_tensor_free(&r->tensors[i]);
	if (r->dev_out && r->info)
		for (uint64_t i = 0; i < r->info->tensor_count; i++)
			free(r->dev_out[i]);
	free(r->dev_out);
	free(r->tensors);
	if (r->info)
		nrt_free_model_tensor_info(r->info);
	if (r->model)
		nrt_unload(r->model);
	if (r->nrt_up)
		nrt_close();
	free(r->leaves);
	ncc_value_free(r->result);
	if (r->args)
		ncc_interp_free_args(r->args, r->nargs);
	ncc_module_free(r->m);
	ncc_module_free(r->opt);
	ncc_compile_result_release(&r->res);
	snapshot_free(r->snap);
}

static int32_t collect_leaves(ncc_value_t *v, ncc_value_t **out, int32_t n)
{
	if (v->shape.etype == NCC_TUPLE) {
		for (int32_t k = 0; k < v->nelems; k++)
			n = collect_leaves(v->elems[k], out, n);
		return n;
	}
	if (out)
		out[n] = v;
	return n + 1;
}

static const snapshot_tensor_t *find_tensor(const snapshot_t *s, uint32_t role, const char *name)
{
	for (uint32_t i = 0; i < s->n_tensors; i++)
		if (s->tensors[i].role == role && strcmp(s->tensors[i].name, name) == 0)
			return &s->tensors[i];
	return NULL;
}

/* The NEFF tensor's dtype as the snapshot spells it (pred reads as u8 through
 * the NRT API, which has no boolean dtype). */
static bool same_dtype(uint32_t snap_dt, nrt_dtype_t nrt_dt)
{
	isa_dtype_t d = tool_dtype_from_nrt(nrt_dt);
	return snap_dt == d || (snap_dt == ISA_DT_PRED && d == ISA_DT_U8);
}

static int replay_compile(const replay_opts_t *o, replay_t *r)
{
	const snapshot_t *s = r->snap;
	ncc_error_t err = { 0 };
	char fname[4200];
	snprintf(fname, sizeof(fname), "%s:hlo", o->path);
	if (!s->hlo_size) {
		fprintf(stderr, "neuron-snapshot: %s holds no HLO text (the NEFF was compiled without "
			"it): nothing to replay; recompile the model with the HLO embedded (the "
			"default)\n", o->path);
		return TOOL_EXIT_INPUT;
	}
	if (ncc_parse_hlo(s->hlo_text, s->hlo_size, fname, &r->m, &err) != NCC_OK ||
	    ncc_verify(r->m, &err) != NCC_OK) {
		fprintf(stderr, "neuron-snapshot: the embedded HLO does not parse: %s\n", err.msg);
		return TOOL_EXIT_INPUT;
	}
	ncc_driver_options_t dopts;
	ncc_driver_options_init(&dopts);
	dopts.compile.opt_level = o->opt_level;
	if (ncc_compile_text(s->hlo_text, s->hlo_size, fname, &dopts, &r->res, &err) != NCC_OK) {
		fprintf(stderr, "neuron-snapshot: the embedded HLO does not compile at -O%d: %s\n",
			o->opt_level, err.msg);
		return TOOL_EXIT_INPUT;
	}
	/* The module the device ran, for fused instruction names (best effort:
	 * without it the trace names only the instructions as written). */
	if (ncc_parse_hlo(s->hlo_text, s->hlo_size, fname, &r->opt, &err) != NCC_OK ||
	    ncc_verify(r->opt, &err) != NCC_OK || ncc_run_passes(r->opt, &dopts.compile, &err) != NCC_OK) {
		ncc_module_free(r->opt);
		r->opt = NULL;
	}
	return TOOL_EXIT_OK;
}

/* Loads the NEFF, binds the recorded inputs (by name) and builds the
 * interpreter's arguments from the same bytes. */
static int replay_bind(const replay_opts_t *o, replay_t *r)
{
	char sbuf[256], want[160], got[160];
	/* The replay must not dump a snapshot of itself into the user's dump
	 * directory (the runtime reads these at nrt_init; only snapshots use them). */
	unsetenv("NEURON_DUMP_HLO_SNAPSHOT");
	unsetenv("XLA_FLAGS");
	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-snapshot: nrt_init failed: %s\n", tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}
	r->nrt_up = true;
	st = nrt_load(r->res.neff, r->res.neff_size, -1, -1, &r->model);
	if (st == NRT_SUCCESS)
		st = nrt_get_model_tensor_info(r->model, &r->info);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&r->in_set);
	if (st == NRT_SUCCESS)
		st = nrt_allocate_tensor_set(&r->out_set);
	if (st != NRT_SUCCESS) {
		fprintf(stderr, "neuron-snapshot: loading the compiled NEFF failed: %s\n",
			tool_status_str(st, sbuf, sizeof(sbuf)));
		return TOOL_EXIT_RUNTIME;
	}
	const snapshot_t *s = r->snap;
	uint64_t n = r->info->tensor_count;
	r->tensors = calloc(n ? n : 1, sizeof(*r->tensors));
	r->dev_out = calloc(n ? n : 1, sizeof(*r->dev_out));
	r->nargs = ncc_module_entry_param_count(r->m);
	r->args = calloc((size_t)(r->nargs ? r->nargs : 1), sizeof(*r->args));
	if (!r->tensors || !r->dev_out || !r->args) {
		fprintf(stderr, "neuron-snapshot: out of memory\n");
		return TOOL_EXIT_RUNTIME;
	}
	uint32_t k = 0, have_inputs = 0;
	for (uint32_t i = 0; i < s->n_tensors; i++)
		have_inputs += s->tensors[i].role == SNAPSHOT_ROLE_INPUT;
	for (uint64_t i = 0; i < n; i++) {
		const nrt_tensor_info_t *ti = &r->info->tensor_array[i];
		bool in = ti->usage == NRT_TENSOR_USAGE_INPUT;
		st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name, &r->tensors[i]);
		if (st == NRT_SUCCESS)
			st = nrt_add_tensor_to_tensor_set(in ? r->in_set : r->out_set, ti->name, r->tensors[i]);
		if (st != NRT_SUCCESS) {
			r->tensors[i] = NULL;
			fprintf(stderr, "neuron-snapshot: tensor '%s' (%zu bytes): %s\n", ti->name, ti->size,
				tool_status_str(st, sbuf, sizeof(sbuf)));
			return TOOL_EXIT_RUNTIME;
		}
		if (!in)
			continue;
		/* input k of a compiled NEFF is parameter k */
		uint32_t p = k++;
		if (!have_inputs) {
			fprintf(stderr, "neuron-snapshot: %s holds no inputs (kind '%s'): nothing to replay; "
				"dump with inputs (XLA_FLAGS snapshot callback returning \"inputs\", or "
				"NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR)\n", o->path, s->meta.kind);
			return TOOL_EXIT_INPUT;
		}
		const snapshot_tensor_t *t = find_tensor(s, SNAPSHOT_ROLE_INPUT, ti->name);
		uint64_t shape[NPY_MAX_RANK] = { 0 };
		for (uint32_t d = 0; d < ti->ndim && d < NPY_MAX_RANK; d++)
			shape[d] = ti->shape[d];
		ns_host_describe(tool_dtype_from_nrt(ti->dtype), ti->ndim, shape, want, sizeof(want));
		if (!t) {
			fprintf(stderr, "neuron-snapshot: the compiled module's input '%s' (%s) is not in %s: "
				"the snapshot's inputs are:", ti->name, want, o->path);
			for (uint32_t j = 0; j < s->n_tensors; j++)
				if (s->tensors[j].role == SNAPSHOT_ROLE_INPUT)
					fprintf(stderr, " %s", s->tensors[j].name);
			fprintf(stderr, "\n");
			return TOOL_EXIT_INPUT;
		}
		const ncc_shape_t *ps = ncc_module_entry_param_shape(r->m, (int32_t)p);
		if (!same_dtype(t->dtype, ti->dtype) || t->size != ti->size || !ps ||
		    ps->etype == NCC_TUPLE) {
			fprintf(stderr, "neuron-snapshot: input '%s': the snapshot holds %s, the compiled "
				"module expects %s\n", t->name,
				ns_host_describe(t->dtype, t->rank, t->shape, got, sizeof(got)), want);
			return TOOL_EXIT_INPUT;
		}
		if (ncc_value_alloc(ps, &r->args[p]) != NCC_OK ||
		    r->args[p]->nbytes != t->size) {
			fprintf(stderr, "neuron-snapshot: input '%s' does not fit parameter %u of the HLO\n",
				t->name, p);
			return TOOL_EXIT_INPUT;
		}
		if (t->size) {
			memcpy(r->args[p]->data, t->data, t->size);
			st = nrt_tensor_write(r->tensors[i], t->data, 0, t->size);
			if (st != NRT_SUCCESS) {
				fprintf(stderr, "neuron-snapshot: writing input '%s' to the device failed: %s\n",
					t->name, tool_status_str(st, sbuf, sizeof(sbuf)));
				return TOOL_EXIT_RUNTIME;
			}
		}
	}
	if ((int32_t)k != r->nargs) {
		fprintf(stderr, "neuron-snapshot: the compiled NEFF has %u inputs, the HLO entry %d "
			"parameters\n", k, r->nargs);
		return TOOL_EXIT_INPUT;
	}
	return TOOL_EXIT_OK;
}

static bool value_nonfinite(const ncc_value_t *v, bool *nan, bool *inf)
{
	if (!ncc_etype_is_float(v->shape.etype))
		return false;
	int64_t n = ncc_value_elements(v);
	for (int64_t i = 0; i < n; i++) {
		double d = ncc_value_get_f64(v, i);
		if (d != d)
			*nan = true;
		else if (isinf(d))
			*inf = true;
	}
	return *nan || *inf;
}

/* One comparison line; returns whether they agree. */
static bool compare_line(const replay_opts_t *o, const char *what, const ncc_value_t *expected,
			 const ncc_value_t *actual, const char *name)
{
	ncc_tolerance_t tol = o->have_tol ? o->tol : ncc_tolerance_for_module(expected->shape.etype);
	ncc_compare_result_t cr;
	bool eq = ncc_value_compare(expected, actual, &tol, &cr);
	if (!eq)
		printf("output %s: %s: MISMATCH, %lld element(s) out of tolerance (rtol %.1e, atol %.1e); %s\n",
		       name, what, (long long)cr.mismatches, tol.rtol, tol.atol, cr.msg);
	else if (o->verbose)
		printf("output %s: %s: match (max abs err %.3g)\n", name, what, cr.max_abs_err);
	return eq;
}

static void describe_inst(const ncc_inst_t *inst, char *buf, size_t len)
{
	ncc_inst_desc_t in;
	ncc_inst_describe(inst, &in);
	size_t n = (size_t)snprintf(buf, len, "'%s' (%s", in.name, in.opcode);
	if (in.op_type && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", op_type %s", in.op_type);
	if (in.source_file && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", %s:%" PRId64, in.source_file,
				      in.source_line);
	if (in.hlo_line > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", HLO line %d", in.hlo_line);
	if (n < len)
		snprintf(buf + n, len - n, ")");
}

/* A string member of the recorded error object, "" when absent. */
static const char *rec_str(json_t *e, const char *key)
{
	json_t *v = json_object_get(e, key);
	return json_is_string(v) ? json_string_value(v) : "";
}

static bool path_has(const char *path, const char *name)
{
	size_t l = strlen(name);
	for (const char *p = path; (p = strstr(p, name)) != NULL; p += l) {
		bool start = p == path || p[-1] == ' ';
		bool end = p[l] == ' ' || p[l] == '\0';
		if (start && end)
			return true;
	}
	return false;
}

/* The interpreter gets the device's limit (NEURON_RT_EXEC_TIMEOUT): a snapshot of
 * a long while loop must not make the replay run for hours after the device
 * already gave up. A deadline per run, from when it starts. */
static ncc_interp_options_t interp_opts(const replay_opts_t *o)
{
	ncc_interp_options_t io;
	memset(&io, 0, sizeof(io));
	if (o->timeout_s)
		io.deadline_ns = ns_monotonic_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	return io;
}

/* Prints why an interpreter run failed: the deadline gets its own sentence. */
static int interp_failed(const replay_opts_t *o, const ncc_interp_options_t *io, const char *what,
			 const ncc_error_t *err)
{
	if (io->deadline_ns && ns_monotonic_ns() >= io->deadline_ns) {
		fprintf(stderr, "neuron-snapshot: %s did not finish within NEURON_RT_EXEC_TIMEOUT=%u s "
			"(the limit the device execution has too): %s; set NEURON_RT_EXEC_TIMEOUT to "
			"more seconds, or to 0 for no limit\n", what, o->timeout_s, err->msg);
		return TOOL_EXIT_EXEC;
	}
	fprintf(stderr, "neuron-snapshot: %s: %s\n", what, err->msg);
	return TOOL_EXIT_INPUT;
}

static int replay_run(const replay_opts_t *o, replay_t *r)
{
	char sbuf[256], what[1024];
	const snapshot_t *s = r->snap;
	uint64_t t0 = ns_monotonic_ns();
	NRT_STATUS st = nrt_execute(r->model, r->in_set, r->out_set);
	double dev_ms = (double)(ns_monotonic_ns() - t0) / 1e6;
	nrt_neuronsim_exec_error_t rec;
	memset(&rec, 0, sizeof(rec));
	if (st != NRT_SUCCESS)
		nrt_neuronsim_get_last_error(r->model, &rec);
	printf("device: %s in %.3f ms\n", tool_status_str(st, sbuf, sizeof(sbuf)), dev_ms);
	if (st != NRT_SUCCESS && rec.message[0])
		printf("device error: %s\n", rec.message);

	ncc_error_t err = { 0 };
	t0 = ns_monotonic_ns();
	ncc_interp_options_t io = interp_opts(o);
	if (ncc_interp_run(r->m, (const ncc_value_t *const *)r->args, r->nargs, &io, &r->result,
			   &err) != NCC_OK)
		return interp_failed(o, &io, "reference interpreter", &err);
	printf("interpreter: ran in %.3f ms\n", (double)(ns_monotonic_ns() - t0) / 1e6);
	r->nleaves = collect_leaves(r->result, NULL, 0);
	r->leaves = calloc((size_t)(r->nleaves ? r->nleaves : 1), sizeof(*r->leaves));
	if (!r->leaves)
		return TOOL_EXIT_RUNTIME;
	collect_leaves(r->result, r->leaves, 0);

	bool mismatch = false, any_nan = false, any_inf = false;
	bool dev_ok = st == NRT_SUCCESS || st == NRT_EXEC_COMPLETED_WITH_NUM_ERR;
	uint32_t o_idx = 0, compared_recorded = 0;
	for (uint64_t i = 0; i < r->info->tensor_count; i++) {
		const nrt_tensor_info_t *ti = &r->info->tensor_array[i];
		if (ti->usage != NRT_TENSOR_USAGE_OUTPUT)
			continue;
		uint32_t k = o_idx++;
		if ((int32_t)k >= r->nleaves) {
			fprintf(stderr, "neuron-snapshot: the NEFF has more outputs than the HLO root has leaves\n");
			return TOOL_EXIT_INPUT;
		}
		const ncc_value_t *ref = r->leaves[k];
		value_nonfinite(ref, &any_nan, &any_inf);
		const snapshot_tensor_t *recd = find_tensor(s, SNAPSHOT_ROLE_OUTPUT, ti->name);
		ncc_value_t *dev = NULL, *rv = NULL;
		if (ncc_value_alloc(&ref->shape, &dev) != NCC_OK || dev->nbytes != ti->size) {
			ncc_value_free(dev);
			fprintf(stderr, "neuron-snapshot: output '%s': %zu bytes on the device, %zu from the "
				"interpreter\n", ti->name, ti->size, ref->nbytes);
			return TOOL_EXIT_INPUT;
		}
		if (dev_ok && ti->size) {
			NRT_STATUS rs = nrt_tensor_read(r->tensors[i], dev->data, 0, ti->size);
			if (rs != NRT_SUCCESS) {
				ncc_value_free(dev);
				fprintf(stderr, "neuron-snapshot: reading output '%s' failed: %s\n", ti->name,
					tool_status_str(rs, sbuf, sizeof(sbuf)));
				return TOOL_EXIT_RUNTIME;
			}
		}
		if (dev_ok) {
			value_nonfinite(dev, &any_nan, &any_inf);
			mismatch |= !compare_line(o, "device vs interpreter", ref, dev, ti->name);
		}
		if (recd) {
			if (recd->size != ref->nbytes || ncc_value_alloc(&ref->shape, &rv) != NCC_OK) {
				printf("output %s: the recorded output has %" PRIu64 " bytes, the module's %zu: "
				       "not compared\n", ti->name, recd->size, ref->nbytes);
				mismatch = true;
			} else {
				if (recd->size)
					memcpy(rv->data, recd->data, recd->size);
				compared_recorded++;
				if (dev_ok)
					mismatch |= !compare_line(o, "device vs recorded", rv, dev, ti->name);
				mismatch |= !compare_line(o, "interpreter vs recorded", rv, ref, ti->name);
			}
		}
		ncc_value_free(dev);
		ncc_value_free(rv);
	}
	printf("outputs: %u compared with the interpreter%s, %u with the recorded outputs%s\n", o_idx,
	       dev_ok ? "" : " (not: the device execution failed)", compared_recorded,
	       compared_recorded ? "" : " (the snapshot holds none)");

	/* Where the first NaN/Inf came from, when there is one anywhere. */
	json_t *recorded = s->meta.error_json ? json_loads(s->meta.error_json, 0, NULL) : NULL;
	const char *rec_kind = rec_str(recorded, "kind");
	bool want = st == NRT_EXEC_COMPLETED_WITH_NUM_ERR || any_nan || any_inf ||
		    !strcmp(rec_kind, "nan") || !strcmp(rec_kind, "inf");
	const char *site_name = NULL, *site_path = "";
	char opt_site[1200] = "";
	bool same = false;
	if (want) {
		ncc_interp_trace_t tr, tro;
		io = interp_opts(o);
		if (ncc_interp_trace_nonfinite(r->m, (const ncc_value_t *const *)r->args, r->nargs, &io,
					       &tr, &err) != NCC_OK) {
			json_decref(recorded);
			return interp_failed(o, &io, "interpreter trace", &err);
		}
		/* the kind the device flagged, else NaN before Inf */
		bool inf_first = rec.kind == NRT_NEURONSIM_ERROR_INF ||
				 (rec.kind != NRT_NEURONSIM_ERROR_NAN && !tr.nan.inst && tr.inf.inst) ||
				 (!rec.kind && !strcmp(rec_kind, "inf"));
		const ncc_interp_site_t *site = inf_first ? &tr.inf : &tr.nan;
		const char *kind = inf_first ? "Inf" : "NaN";
		if (!site->inst) {
			printf("interpreter: no %s in any instruction's result (%" PRId64 " evaluated)\n",
			       kind, tr.evaluated);
		} else {
			ncc_inst_desc_t sd;
			ncc_inst_describe(site->inst, &sd);
			describe_inst(site->inst, what, sizeof(what));
			printf("first %s: produced by HLO instruction %s%s%s: %" PRId64
			       " element(s), first at flat index %" PRId64 "%s\n", kind, what,
			       site->path[0] ? " inside " : "", site->path, site->count,
			       site->first_index,
			       sd.is_parameter ? " (the recorded input already holds it)" : "");
			site_name = sd.name;
			site_path = site->path;
			const ncc_interp_site_t *other = inf_first ? &tr.nan : &tr.inf;
			if (other->inst && other->inst != site->inst) {
				describe_inst(other->inst, what, sizeof(what));
				printf("first %s: produced by HLO instruction %s\n", inf_first ? "NaN" : "Inf", what);
			}
		}
		/* The same in the compiled module, whose fusions the device names. */
		io = interp_opts(o);
		if (site_name && r->opt && o->opt_level > 0 &&
		    ncc_interp_trace_nonfinite(r->opt, (const ncc_value_t *const *)r->args, r->nargs, &io,
					       &tro, &err) == NCC_OK) {
			const ncc_interp_site_t *os = inf_first ? &tro.inf : &tro.nan;
			if (os->inst) {
				ncc_inst_desc_t od;
				ncc_inst_describe(os->inst, &od);
				snprintf(opt_site, sizeof(opt_site), "%s%s", os->path, od.name);
				printf("in the compiled module (-O%d): %s\n", o->opt_level, opt_site);
			}
		}
		/* Which instruction the device names: the replay's record, and the
		 * recorded one when the file has it. */
		const char *names[2] = { st != NRT_SUCCESS ? rec.hlo_name : "", rec_str(recorded, "hlo_name") };
		const char *whose[2] = { "the replayed device error", "the recorded error" };
		if (recorded) {
			json_t *line = json_object_get(recorded, "source_line");
			printf("recorded error: %s in '%s' (op_type %s", rec_kind[0] ? rec_kind : "?",
			       names[1], rec_str(recorded, "op_type"));
			if (rec_str(recorded, "source_file")[0])
				printf(", %s:%" PRId64, rec_str(recorded, "source_file"),
				       json_is_integer(line) ? (int64_t)json_integer_value(line) : 0);
			printf("): %s\n", rec_str(recorded, "message"));
		}
		for (int w = 0; w < 2 && site_name; w++) {
			const char *nm = names[w];
			if (!nm[0])
				continue;
			bool m = !strcmp(nm, site_name) || path_has(site_path, nm) ||
				 (opt_site[0] && path_has(opt_site, nm));
			printf("%s names '%s': %s\n", whose[w], nm,
			       m ? "the same instruction as the interpreter's trace"
			       : w == 1 ? "NOT the instruction the interpreter's trace names (replay "
					  "with the -O level the model was compiled with)"
					: "NOT the instruction the interpreter's trace names");
			/* the recorded error decides when the file has one */
			if (w == 1 || !names[1][0])
				same = m;
		}
	}
	json_decref(recorded);

	bool failed = st != NRT_SUCCESS;
	if (failed || any_nan || any_inf)
		printf("result: %s reproduced%s\n",
		       st == NRT_EXEC_COMPLETED_WITH_NUM_ERR || any_nan ? "NaN" : any_inf ? "Inf" : "the failure",
		       same ? "; the replay names the same instruction as the error record" : "");
	else if (mismatch)
		printf("result: outputs differ\n");
	else
		printf("result: device, interpreter and recorded outputs agree\n");
	return failed || mismatch || any_nan || any_inf ? TOOL_EXIT_EXEC : TOOL_EXIT_OK;
}

int nsnap_cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "opt-level", required_argument, NULL, 'O' },
		{ "tolerance", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	replay_opts_t o = { .opt_level = NCC_DRIVER_DEFAULT_OPT_LEVEL };
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "O:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'O':
			o.opt_level = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || o.opt_level < 0 || o.opt_level > 2)
				return nsnap_usage_error("--opt-level wants 0, 1 or 2, got '%s'", optarg);
			break;
		case 't': {
			o.tol.rtol = strtod(optarg, &end);
			o.tol.atol = 0;
			if (end != optarg && *end == ',') {
				char *a = end + 1;
				o.tol.atol = strtod(a, &end);
				if (end == a)
					end = a - 1; /* reject below */
			}
			if (end == optarg || *end || !(o.tol.rtol >= 0) || !(o.tol.atol >= 0) ||
			    isinf(o.tol.rtol) || isinf(o.tol.atol))
				return nsnap_usage_error("--tolerance wants RTOL or RTOL,ATOL (non-negative numbers), got '%s'",
						   optarg);
			o.have_tol = true;
			break;
		}
		case 'v': o.verbose = true; break;
		case 'h': fputs(nsnap_usage_text, stdout); return TOOL_EXIT_OK;
		default: return nsnap_usage_error("%s", "bad option for replay");
		}
	}
	if (optind >= argc)
		return nsnap_usage_error("%s", "replay: missing FILE");
	if (optind + 1 < argc)
		return nsnap_usage_error("replay: unexpected argument '%s'", argv[optind + 1]);
	o.path = argv[optind];
	/* the runtime reads the same variable for the device execution */
	o.timeout_s = 30;
	const char *tv = getenv("NEURON_RT_EXEC_TIMEOUT");
	if (tv && *tv) {
		errno = 0;
		unsigned long v = strtoul(tv, &end, 10);
		if (errno || end == tv || *end || tv[0] == '-' || v > INT_MAX) {
			fprintf(stderr, "neuron-snapshot: NEURON_RT_EXEC_TIMEOUT=\"%s\" is invalid: expected "
				"whole seconds 0..2147483647 (0: no limit)\n", tv);
			return TOOL_EXIT_USAGE;
		}
		o.timeout_s = (uint32_t)v;
	}
	replay_t r;
	memset(&r, 0, sizeof(r));
	r.snap = nsnap_load(o.path);
	if (!r.snap)
		return TOOL_EXIT_INPUT;
	int rc = replay_compile(&o, &r);
	if (rc == TOOL_EXIT_OK) {
		char mod[256];
		int32_t np = ncc_module_entry_param_count(r.m);
		nsnap_hlo_module_name(r.snap->hlo_text, r.snap->hlo_size, mod, sizeof(mod));
		printf("replay: %s: HloModule %s, %d parameter%s, compiled at -O%d in %.1f ms%s\n", o.path,
		       mod[0] ? mod : "?", np, np == 1 ? "" : "s",
		       o.opt_level, r.res.ms_total, r.res.cache_hit ? " (cache hit)" : "");
		rc = replay_bind(&o, &r);
	}
	if (rc == TOOL_EXIT_OK)
		rc = replay_run(&o, &r);
	replay_release(&r);
	return rc;
}
