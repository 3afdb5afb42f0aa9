/* NEFF emission, called by the driver (lower.c): the I/O tensor table (names, aliases) first, the scratch size and the embedded HLO text at the end (the debug map entries are added as instructions are emitted, builder.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

#ifndef NCC_VERSION
#define NCC_VERSION NCC_VERSION_STRING
#endif

static const char *frontend_attr(const ncc_inst_t *inst, const char *key)
{
	for (int32_t i = 0; i < inst->nfrontend_attrs; i++)
		if (inst->frontend_attrs[i].key && strcmp(inst->frontend_attrs[i].key, key) == 0)
			return inst->frontend_attrs[i].value;
	return NULL;
}

static bool name_taken(char (*names)[NEFF_NAME_MAX], uint32_t n, const char *s)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return true;
	return false;
}

/* Name o of a comma-separated neff_output_names list on the root, when the list has
 * exactly one name per output leaf. */
static bool output_name(const ncc_inst_t *root, uint32_t o, char *out)
{
	const char *list = frontend_attr(root, "neff_output_names");
	if (!list)
		return false;
	uint32_t n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	if (n != (uint32_t)ncc_lower_shape_leaves(&root->shape))
		return false;
	const char *p = list;
	for (uint32_t i = 0; i < o; i++)
		p = strchr(p, ',') + 1;
	size_t len = strcspn(p, ",");
	if (len == 0 || len >= NEFF_NAME_MAX)
		return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

ncc_status_t ncc_emit_io(ncc_lower_ctx_t *ctx)
{
	const ncc_comp_t *e = ctx->m->entry;
	const ncc_inst_t *root = e->root;
	if (!root)
		return ncc_lower_fail(ctx, NULL, NCC_ERR_INVALID, "entry computation has no root");
	uint32_t nin = (uint32_t)e->nparams;
	uint32_t nout = (uint32_t)ncc_lower_shape_leaves(&root->shape);
	char(*names)[NEFF_NAME_MAX] = calloc(nin + nout + 1, NEFF_NAME_MAX);
	ctx->in_tensor = malloc((nin + 1) * sizeof(int32_t));
	ctx->out_tensor = calloc(nout + 1, sizeof(uint32_t));
	ctx->out_alias = malloc((nout + 1) * sizeof(int32_t));
	if (!names || !ctx->in_tensor || !ctx->out_tensor || !ctx->out_alias) {
		free(names);
		return NCC_ERR_NOMEM;
	}
	ncc_status_t st = NCC_OK;
	/* Inputs: the parameters in parameter order, region IO0 + in_tensor[p]. A
	 * zero-element parameter or output has no tensor: there is nothing to move
	 * or bind (libnrt has no zero-byte tensors), its value is the empty array. */
	uint32_t ntensors = 0;
	for (uint32_t p = 0; p < nin; p++) {
		const ncc_inst_t *pi = e->params[p];
		if (!pi) {
			st = ncc_lower_fail(ctx, NULL, NCC_ERR_INVALID, "entry parameter %u is missing", p);
			goto out;
		}
		isa_dtype_t dt;
		if (pi->shape.etype == NCC_TUPLE || ncc_lower_dtype(pi->shape.etype, &dt) != NCC_OK) {
			char ty[128];
			ncc_shape_to_string(&pi->shape, false, ty, sizeof(ty));
			st = ncc_lower_fail(ctx, pi, NCC_ERR_UNSUPPORTED,
					    "unsupported entry parameter type %s", ty);
			goto out;
		}
		if (pi->shape.rank > NEFF_MAX_TENSOR_RANK) {
			st = ncc_lower_fail(ctx, pi, NCC_ERR_UNSUPPORTED,
					    "unsupported parameter rank %d (a NEFF tensor has at most %d)",
					    pi->shape.rank, NEFF_MAX_TENSOR_RANK);
			goto out;
		}
		/* torch-neuronx names inputs through frontend_attributes neff_input_names */
		const char *nm = frontend_attr(pi, "neff_input_names");
		if (nm && nm[0] && strlen(nm) < NEFF_NAME_MAX && !name_taken(names, p, nm))
			snprintf(names[p], NEFF_NAME_MAX, "%s", nm);
		else
			snprintf(names[p], NEFF_NAME_MAX, "input%u", p);
		for (int k = 1; name_taken(names, p, names[p]); k++)
			snprintf(names[p], NEFF_NAME_MAX, "input%u_%d", p, k);
		ns_status_t big = ncc_lower_leaf_check(&pi->shape);
		if (big) {
			st = ncc_lower_fail_status(ctx, pi, big, NCC_ERR_LIMIT, "input '%s'", names[p]);
			goto out;
		}
		ctx->in_tensor[p] = -1;
		if (ncc_shape_elements(&pi->shape) == 0)
			continue;
		uint64_t shape[NEFF_MAX_TENSOR_RANK];
		for (int32_t d = 0; d < pi->shape.rank; d++)
			shape[d] = (uint64_t)pi->shape.dims[d];
		uint32_t idx;
		ns_status_t bs = neff_builder_add_tensor(ctx->b, names[p], NEFF_USAGE_INPUT, dt,
							 (uint32_t)pi->shape.rank, shape, -1, &idx);
		if (bs) {
			st = ncc_lower_fail_status(ctx, pi, bs, NCC_ERR_INVALID,
						   "cannot add input tensor '%s'", names[p]);
			goto out;
		}
		if (idx != ntensors++) {
			st = ncc_lower_fail(ctx, pi, NCC_ERR_INTERNAL,
					    "internal: input tensor '%s' got NEFF index %u", names[p],
					    idx);
			goto out;
		}
		ctx->in_tensor[p] = (int32_t)idx;
	}
	for (uint32_t o = 0; o < nout; o++) {
		ctx->out_alias[o] = -1;
		for (int32_t a = 0; a < ctx->m->naliases; a++) {
			const ncc_alias_t *al = &ctx->m->aliases[a];
			/* the output index path is {} for an array root, {o} for a flat tuple */
			bool match = root->shape.etype == NCC_TUPLE
					     ? (al->output_index.n == 1 && al->output_index.v[0] == (int64_t)o)
					     : al->output_index.n == 0;
			if (match && al->param_index.n == 0 && al->param_number >= 0 &&
			    al->param_number < (int64_t)nin && ctx->in_tensor[al->param_number] >= 0)
				ctx->out_alias[o] = (int32_t)al->param_number;
		}
	}
	for (uint32_t o = 0; o < nout; o++) {
		const ncc_shape_t *s = ncc_lower_shape_leaf(&root->shape, (int32_t)o);
		isa_dtype_t dt;
		if (!s || ncc_lower_dtype(s->etype, &dt) != NCC_OK) {
			st = ncc_lower_fail(ctx, root, NCC_ERR_UNSUPPORTED, "unsupported output %u type %s",
					    o, s ? ncc_etype_name(s->etype) : "?");
			goto out;
		}
		if (s->rank > NEFF_MAX_TENSOR_RANK) {
			st = ncc_lower_fail(ctx, root, NCC_ERR_UNSUPPORTED,
					    "unsupported output rank %d", s->rank);
			goto out;
		}
		/* torch-neuronx names outputs through the root's neff_output_names="a,b,..." */
		if (!output_name(root, o, names[nin + o]))
			snprintf(names[nin + o], NEFF_NAME_MAX, "output%u", o);
		for (int k = 1; name_taken(names, nin + o, names[nin + o]); k++)
			snprintf(names[nin + o], NEFF_NAME_MAX, "output%u_%d", o, k);
		ns_status_t big = ncc_lower_leaf_check(s);
		if (big) {
			st = ncc_lower_fail_status(ctx, root, big, NCC_ERR_LIMIT, "output %u", o);
			goto out;
		}
		if (ncc_shape_elements(s) == 0) {
			ctx->out_tensor[o] = NCC_NO_TENSOR;
			ctx->out_alias[o] = -1;
			continue;
		}
		uint64_t shape[NEFF_MAX_TENSOR_RANK];
		for (int32_t d = 0; d < s->rank; d++)
			shape[d] = (uint64_t)s->dims[d];
		int32_t alias = ctx->out_alias[o];
		if (alias >= 0) {
			/* the runtime only accepts an alias of the same dtype and size, and each
			 * input aliased once */
			const ncc_inst_t *pi = e->params[alias];
			bool once = true;
			for (uint32_t q = 0; q < o; q++)
				once = once && ctx->out_alias[q] != alias;
			if (!once || !ncc_shape_equal(&pi->shape, s, false))
				ctx->out_alias[o] = alias = -1;
		}
		uint32_t idx;
		ns_status_t bs = neff_builder_add_tensor(ctx->b, names[nin + o], NEFF_USAGE_OUTPUT, dt,
							 (uint32_t)s->rank, shape,
							 alias >= 0 ? ctx->in_tensor[alias] : -1, &idx);
		if (bs) {
			st = ncc_lower_fail_status(ctx, root, bs, NCC_ERR_INVALID,
						   "cannot add output tensor %u", o);
			goto out;
		}
		ctx->out_tensor[o] = idx;
	}
	ctx->n_inputs = nin;
	ctx->n_outputs = nout;
out:
	free(names);
	return st;
}

ncc_status_t ncc_emit_finish(ncc_lower_ctx_t *ctx, void **out_neff, size_t *out_size)
{
	uint64_t off = 0;
	if (ctx->plan.top > 0) {
		ns_status_t bs = neff_builder_add_scratch(ctx->b, ctx->plan.top, NCC_PLAN_ALIGN, &off);
		if (bs)
			return ncc_lower_fail_status(ctx, NULL, bs, NCC_ERR_LIMIT,
						     "cannot reserve %llu bytes of scratch",
						     (unsigned long long)ctx->plan.top);
		if (off != 0)
			return ncc_lower_fail(ctx, NULL, NCC_ERR_INTERNAL, "internal: scratch not at 0");
	}
	char ver[64];
	snprintf(ver, sizeof(ver), "%s", ctx->opts.compiler_version ? ctx->opts.compiler_version
								 : "ncc " NCC_VERSION);
	ns_status_t bs = neff_builder_set_compiler_version(ctx->b, ver);
	if (bs)
		return ncc_lower_fail_status(ctx, NULL, bs, NCC_ERR_INVALID,
					     "bad compiler version string");
	if (ctx->opts.embed_hlo && ctx->m->source && ctx->m->source_len) {
		bs = neff_builder_set_hlo(ctx->b, ctx->m->source, ctx->m->source_len);
		if (bs)
			return ncc_lower_fail_status(ctx, NULL, bs, NCC_ERR_INTERNAL,
						     "cannot embed the HLO text");
	}
	void *data = NULL;
	size_t size = 0;
	bs = neff_builder_finish(ctx->b, &data, &size);
	if (bs)
		return ncc_lower_fail_status(ctx, NULL, bs, NCC_ERR_INTERNAL,
					     "NEFF serialisation failed");
	*out_neff = data;
	*out_size = size;
	return NCC_OK;
}
