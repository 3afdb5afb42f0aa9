/* f64 demotion: the device has no f64, so every f64 value becomes f32 (parameters, constants, converts, outputs), as the Neuron compiler computes f64 in f32. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"

/*
 * What f64 means on the device after this pass: f32 precision and range. A constant
 * is rounded to nearest (even) f32, values beyond f32's range become +-inf, and every
 * operation computes in f32 as it does for f32 values. The module's signature changes
 * with it (its f64 parameters and result leaves are f32 in the NEFF); a caller that
 * speaks f64 to its user converts at the boundary (the PJRT plugin does, docs/pjrt.md).
 */

static bool shape_has(const ncc_shape_t *s, ncc_etype_t t)
{
	if (s->etype == NCC_TUPLE) {
		for (int32_t i = 0; i < s->nelems; i++)
			if (shape_has(&s->elems[i], t))
				return true;
		return false;
	}
	return s->etype == t;
}

static bool demote_shape(ncc_shape_t *s)
{
	if (s->etype == NCC_TUPLE) {
		bool ch = false;
		for (int32_t i = 0; i < s->nelems; i++)
			ch |= demote_shape(&s->elems[i]);
		return ch;
	}
	if (s->etype != NCC_F64)
		return false;
	s->etype = NCC_F32;
	return true;
}

static bool inst_touches(const ncc_inst_t *in, ncc_etype_t t)
{
	if (shape_has(&in->shape, t))
		return true;
	for (int32_t k = 0; k < in->noperands; k++)
		if (shape_has(&in->operands[k]->shape, t))
			return true;
	return false;
}

static bool module_has_f64(const ncc_module_t *m)
{
	for (int32_t c = 0; c < m->ncomps; c++)
		for (int32_t i = 0; i < m->comps[c]->ninsts; i++)
			if (shape_has(&m->comps[c]->insts[i]->shape, NCC_F64))
				return true;
	return false;
}

static ncc_status_t refuse(const ncc_module_t *m, const ncc_inst_t *in, const char *why, ncc_error_t *err)
{
	char ty[256];
	ncc_shape_to_string(&in->shape, false, ty, sizeof(ty));
	char src[320] = "";
	if (in->metadata.source_file || in->metadata.source_line)
		snprintf(src, sizeof(src), " at source line %s:%" PRId64,
			 in->metadata.source_file ? in->metadata.source_file : "?", in->metadata.source_line);
	return ncc_error_set(err, NCC_ERR_UNSUPPORTED, in->line, in->col,
			     "%s:%d:%d: error: unsupported %s: instruction '%s' (%s) of type %s%s (HLO line %d)",
			     m->filename ? m->filename : "<input>", in->line, in->col, why, in->name,
			     in->opname ? in->opname : ncc_opcode_name(in->op), ty, src, in->line);
}

/* What cannot be computed in f32 with the meaning HLO gives it. Checked before
 * anything changes, so a refused module is left as it was. */
static ncc_status_t check(const ncc_module_t *m, ncc_error_t *err)
{
	for (int32_t c = 0; c < m->ncomps; c++) {
		const ncc_comp_t *comp = m->comps[c];
		for (int32_t i = 0; i < comp->ninsts; i++) {
			const ncc_inst_t *in = comp->insts[i];
			/* f64's bits are not f32's: a reinterpretation has no f32 meaning */
			if (in->op == NCC_OP_BITCAST_CONVERT && inst_touches(in, NCC_F64))
				return refuse(m, in, "bitcast-convert of f64 (the device holds f64 values "
					      "as f32, whose bits differ)", err);
			/* c128's parts are f64: demoting those alone would break the types,
			 * and the device has no complex types anyway */
			if (inst_touches(in, NCC_C128))
				return refuse(m, in, "element type c128", err);
			if (in->op == NCC_OP_CONSTANT && in->shape.etype == NCC_TUPLE &&
			    shape_has(&in->shape, NCC_F64))
				return refuse(m, in, "tuple constant with f64 elements", err);
		}
	}
	return NCC_OK;
}

static ncc_status_t demote_literal(ncc_module_t *m, ncc_literal_t *lit)
{
	if (!lit->present || lit->etype != NCC_F64)
		return NCC_OK;
	ncc_literal_t nl;
	if (lit->elided || !lit->data) {
		/* values unknown ({...}) or none: only the type changes */
		nl = *lit;
		nl.etype = NCC_F32;
		nl.nbytes = (size_t)lit->count * sizeof(float);
		nl.data = NULL;
		*lit = nl;
		return NCC_OK;
	}
	/* a new array: literal data may be shared with a clone of this constant */
	ncc_status_t st = ncc_literal_init(m, &nl, NCC_F32, lit->count);
	if (st)
		return st;
	for (int64_t k = 0; k < lit->count; k++) {
		double d;
		memcpy(&d, lit->data + (size_t)k * sizeof(double), sizeof(d));
		float f = (float)d; /* round to nearest even; out of range -> inf; NaN stays NaN */
		memcpy(nl.data + (size_t)k * sizeof(float), &f, sizeof(f));
	}
	*lit = nl;
	return NCC_OK;
}

/* "f64" as a type name (not inside another word) -> "f32" in raw layout text. */
static const char *demote_text(ncc_module_t *m, const char *s)
{
	if (!s || !strstr(s, "f64"))
		return s;
	char *t = ncc_strdup(m, s);
	if (!t)
		return NULL;
	for (char *p = strstr(t, "f64"); p; p = strstr(p + 3, "f64")) {
		bool start = p == t || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9') ||
					 p[-1] == '_');
		if (start && (p[3] == '[' || p[3] == '{' || p[3] == 0))
			memcpy(p, "f32", 3);
	}
	return t;
}

ncc_status_t ncc_pass_demote_f64(ncc_module_t *m, bool *out_changed, ncc_error_t *err)
{
	if (out_changed)
		*out_changed = false;
	if (!module_has_f64(m))
		return NCC_OK;
	ncc_status_t st = check(m, err);
	if (st)
		return st;
	for (int32_t c = 0; c < m->ncomps; c++) {
		ncc_comp_t *comp = m->comps[c];
		for (int32_t i = 0; i < comp->ninsts; i++) {
			ncc_inst_t *in = comp->insts[i];
			demote_shape(&in->shape);
			if (in->op == NCC_OP_CONSTANT && (st = demote_literal(m, &in->literal)))
				return ncc_error_set(err, st, 0, 0, "demote-f64: out of memory");
		}
		for (int32_t k = 0; k < comp->nsig_params; k++)
			demote_shape(&comp->sig_param_shapes[k]);
		if (comp->has_sig_result)
			demote_shape(&comp->sig_result);
	}
	const char *layout = demote_text(m, m->entry_computation_layout);
	if (m->entry_computation_layout && !layout)
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "demote-f64: out of memory");
	m->entry_computation_layout = layout;
	if (out_changed)
		*out_changed = true;
	return NCC_OK;
}
