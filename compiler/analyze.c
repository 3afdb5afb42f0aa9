/* ncc analyze report: walks the executed computations, asks ncc_lower_supports() per instruction, writes torch-neuronx style JSON. */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hlo/hlo_parser.h"
#include "lower/lower.h"
#include "passes/passes.h"
#include "pipeline.h"

/* What neuronsim-cc reports in "failureAt" (torch-neuronx says "neuronx-cc"). */
#define NCC_ANALYZE_FAILURE_AT "neuronsim-cc"

void ncc_analyze_op_kind(const char *op_type, char *buf, size_t size)
{
	if (size == 0)
		return;
	const char *sep = op_type ? strstr(op_type, "__") : NULL;
	if (!op_type)
		snprintf(buf, size, "%s", "");
	else if (!sep || sep == op_type)
		snprintf(buf, size, "%s", op_type);
	else
		snprintf(buf, size, "%.*s::%s", (int)(sep - op_type), op_type, sep + 2);
}

/* Computations the device executes: the entry plus control-flow callees. */
typedef struct comp_list {
	const ncc_comp_t **v;
	int32_t n, cap;
} comp_list_t;

static bool comp_list_add(comp_list_t *l, const ncc_comp_t *c)
{
	if (!c)
		return true;
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i] == c)
			return true;
	if (l->n == l->cap) {
		int32_t ncap = l->cap ? l->cap * 2 : 8;
		const ncc_comp_t **nv = realloc(l->v, (size_t)ncap * sizeof(*nv));
		if (!nv)
			return false;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = c;
	return true;
}

static bool collect_executed(const ncc_module_t *m, comp_list_t *l)
{
	if (!comp_list_add(l, m->entry))
		return false;
	/* l grows while we walk it: a breadth-first closure over control flow. */
	for (int32_t k = 0; k < l->n; k++) {
		const ncc_comp_t *c = l->v[k];
		for (int32_t i = 0; i < c->ninsts; i++) {
			const ncc_inst_t *in = c->insts[i];
			bool ok = true;
			switch (in->op) {
			case NCC_OP_WHILE:
				ok = comp_list_add(l, in->condition) && comp_list_add(l, in->body);
				break;
			case NCC_OP_CONDITIONAL:
				for (int32_t b = 0; ok && b < in->nbranches; b++)
					ok = comp_list_add(l, in->branches[b]);
				break;
			case NCC_OP_CALL:
				ok = comp_list_add(l, in->to_apply);
				break;
			default:
				break;
			}
			if (!ok)
				return false;
		}
	}
	return true;
}

/* The instruction as the user wrote it: its source line without indentation, or the
 * printer's spelling for instructions a pass created. malloc'd. */
static char *inst_text(const ncc_inst_t *in)
{
	if (in->text) {
		const char *t = in->text;
		while (*t == ' ' || *t == '\t')
			t++;
		size_t n = strlen(t);
		while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r'))
			n--;
		char *s = malloc(n + 1);
		if (s) {
			memcpy(s, t, n);
			s[n] = '\0';
		}
		return s;
	}
	char *s = NULL;
	if (ncc_inst_to_string(in, &s) != NCC_OK)
		return NULL;
	return s;
}

/* "file line": the Python source in the metadata, else the HLO file and line, so an
 * instruction without metadata can still be found. */
static void inst_call(const ncc_module_t *m, const ncc_inst_t *in, char *buf, size_t size)
{
	if (in->metadata.source_file)
		snprintf(buf, size, "%s %lld", in->metadata.source_file,
			 (long long)in->metadata.source_line);
	else
		snprintf(buf, size, "%s %d", m->filename ? m->filename : "<input>", in->line);
}

static bool aten_entry_exists(json_t *arr, const char *kind, const char *call)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		const char *k = json_string_value(json_object_get(e, "kind"));
		const char *c = json_string_value(json_object_get(e, "call"));
		if (k && c && strcmp(k, kind) == 0 && strcmp(c, call) == 0)
			return true;
	}
	return false;
}

static ncc_status_t analyze(const ncc_module_t *m, int verbosity, char **out_json,
			    ncc_analyze_summary_t *summary, ncc_error_t *err)
{
	*out_json = NULL;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0,
				     "analyze: the module has no ENTRY computation");
	bool with_xla = verbosity <= 1;
	comp_list_t comps = {0};
	json_t *root = json_object();
	json_t *sup = json_object(), *sup_aten = json_object();
	json_t *uns = json_object(), *uns_aten = json_array();
	json_t *sup_xla = with_xla ? json_array() : NULL;
	json_t *uns_xla = with_xla ? json_array() : NULL;
	ncc_status_t st = NCC_ERR_NOMEM;
	if (!root || !sup || !sup_aten || !uns || !uns_aten || (with_xla && (!sup_xla || !uns_xla)))
		goto fail;
	if (!collect_executed(m, &comps))
		goto fail;

	int64_t total = 0, supported = 0;
	for (int32_t k = 0; k < comps.n; k++) {
		const ncc_comp_t *c = comps.v[k];
		for (int32_t i = 0; i < c->ninsts; i++) {
			const ncc_inst_t *in = c->insts[i];
			const char *reason = NULL;
			bool ok = ncc_lower_supports(in, &reason);
			total++;
			char kind[256] = "";
			if (in->metadata.op_type)
				ncc_analyze_op_kind(in->metadata.op_type, kind, sizeof(kind));
			if (ok) {
				supported++;
				/* Only aten operators are counted, as torch-neuronx does; the
				 * xla__device_data / prim__Constant bookkeeping ops are not
				 * user operators. */
				if (strncmp(kind, "aten::", 6) == 0) {
					json_t *cnt = json_object_get(sup_aten, kind);
					json_int_t v = cnt ? json_integer_value(cnt) : 0;
					if (json_object_set_new(sup_aten, kind, json_integer(v + 1)))
						goto fail;
				}
				if (with_xla) {
					char *t = inst_text(in);
					if (!t || json_array_append_new(sup_xla, json_string(t))) {
						free(t);
						goto fail;
					}
					free(t);
				}
				continue;
			}
			/* Every unsupported instruction is listed, aten or not: hiding one
			 * would make the report claim less than the compiler refuses. */
			if (!kind[0])
				snprintf(kind, sizeof(kind), "hlo::%s", in->opname ? in->opname : "unknown");
			char call[1024];
			inst_call(m, in, call, sizeof(call));
			if (!aten_entry_exists(uns_aten, kind, call)) {
				json_t *e = json_pack("{s:s, s:s, s:s}", "kind", kind, "failureAt",
						      NCC_ANALYZE_FAILURE_AT, "call", call);
				if (!e || json_array_append_new(uns_aten, e))
					goto fail;
			}
			if (with_xla) {
				char *t = inst_text(in);
				if (!t) 
					goto fail;
				json_t *e = json_pack("{s:s, s:s, s:s, s:i}", "hlo_instruction", t,
						      "aten_op", kind, "reason",
						      reason ? reason : "not supported by the back end",
						      "line", in->line);
				free(t);
				if (!e || json_array_append_new(uns_xla, e))
					goto fail;
			}
		}
	}

	char pct[16];
	/* An empty entry computation cannot happen in valid HLO (it has a ROOT), but a
	 * division by zero must not either. */
	snprintf(pct, sizeof(pct), "%.2f%%", total ? 100.0 * (double)supported / (double)total : 100.0);
	if (json_object_set_new(root, "neuronx_cc_version", json_string(ncc_version())) ||
	    json_object_set_new(root, "support_percentage", json_string(pct)))
		goto fail;
	if (json_object_set(sup, "aten", sup_aten) || (with_xla && json_object_set(sup, "xla", sup_xla)) ||
	    json_object_set(uns, "aten", uns_aten) || (with_xla && json_object_set(uns, "xla", uns_xla)) ||
	    json_object_set(root, "supported_operators", sup) ||
	    json_object_set(root, "unsupported_operators", uns))
		goto fail;
	char *text = json_dumps(root, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
	if (!text)
		goto fail;
	/* json_dumps has no trailing newline; files and terminals want one. */
	size_t tl = strlen(text);
	char *withnl = malloc(tl + 2);
	if (!withnl) {
		free(text);
		goto fail;
	}
	memcpy(withnl, text, tl);
	withnl[tl] = '\n';
	withnl[tl + 1] = '\0';
	free(text);
	*out_json = withnl;
	if (summary) {
		summary->total = total;
		summary->supported = supported;
		memcpy(summary->percentage, pct, sizeof(pct));
	}
	st = NCC_OK;
fail:
	json_decref(sup_aten);
	json_decref(sup_xla);
	json_decref(uns_aten);
	json_decref(uns_xla);
	json_decref(sup);
	json_decref(uns);
	json_decref(root);
	free(comps.v);
	if (st != NCC_OK)
		return ncc_error_set(err, st, 0, 0, "analyze: out of memory building the report");
	return st;
}

static bool has_f64(const ncc_shape_t *s)
{
	if (s->etype == NCC_TUPLE) {
		for (int32_t i = 0; i < s->nelems; i++)
			if (has_f64(&s->elems[i]))
				return true;
		return false;
	}
	return s->etype == NCC_F64;
}

/* m as the back end sees it: a copy with f64 demoted to f32 (the compile's first
 * pass, docs/passes.md), each instruction keeping the original's source position
 * and text so the report points where it did. NULL when m has no f64, or the
 * demotion refuses the module (then the original is judged: its f64 instructions
 * are unsupported, and the compile refuses the module too). */
static ncc_module_t *demoted_copy(const ncc_module_t *m)
{
	bool any = false;
	for (int32_t c = 0; c < m->ncomps && !any; c++)
		for (int32_t i = 0; i < m->comps[c]->ninsts && !any; i++)
			any = has_f64(&m->comps[c]->insts[i]->shape);
	if (!any)
		return NULL;
	char *text = NULL;
	if (ncc_module_to_string(m, &text) != NCC_OK)
		return NULL;
	ncc_module_t *d = NULL;
	ncc_error_t e;
	memset(&e, 0, sizeof(e));
	bool ok = ncc_parse_hlo(text, strlen(text), m->filename, &d, &e) == NCC_OK &&
		  d->ncomps == m->ncomps && ncc_pass_demote_f64(d, NULL, &e) == NCC_OK;
	free(text);
	/* the printer keeps the order of computations and instructions */
	for (int32_t c = 0; ok && c < m->ncomps; c++) {
		const ncc_comp_t *mc = m->comps[c];
		ncc_comp_t *dc = d->comps[c];
		ok = dc->ninsts == mc->ninsts;
		for (int32_t i = 0; ok && i < mc->ninsts; i++) {
			ncc_inst_t *di = dc->insts[i];
			const ncc_inst_t *mi = mc->insts[i];
			ok = strcmp(di->name, mi->name) == 0;
			di->line = mi->line;
			di->col = mi->col;
			di->text = mi->text;
		}
	}
	if (!ok) {
		ncc_module_free(d);
		return NULL;
	}
	return d;
}

ncc_status_t ncc_analyze_module(const ncc_module_t *m, int verbosity, char **out_json,
				ncc_analyze_summary_t *summary, ncc_error_t *err)
{
	*out_json = NULL;
	if (!m || !m->entry)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0,
				     "analyze: the module has no ENTRY computation");
	/* The compile demotes f64 before the back end judges anything: the report judges
	 * the same module, so it never calls refused what the compiler accepts. The
	 * copy's texts point into m, which outlives it. */
	ncc_module_t *d = demoted_copy(m);
	ncc_status_t st = analyze(d ? d : m, verbosity, out_json, summary, err);
	ncc_module_free(d);
	return st;
}
