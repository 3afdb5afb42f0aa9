/* ncc HloModuleProto decoder: xla.ShapeProto / LayoutProto -> ncc_shape_t and xla.LiteralProto -> ncc_literal_t (element types, byte order, the literal's own layout). */
#include <stdlib.h>
#include <string.h>

#include "hlo_proto_internal.h"
#include "ir_internal.h"

static const hp_fdesc_t shape_fields[] = {
	{ HPF_SHAPE_ELEMENT_TYPE, "element_type", HP_K_VARINT },
	{ HPF_SHAPE_DIMENSIONS, "dimensions", HP_K_REP_VARINT },
	{ HPF_SHAPE_TUPLE_SHAPES, "tuple_shapes", HP_K_LEN },
	{ HPF_SHAPE_LAYOUT, "layout", HP_K_LEN },
	{ HPF_SHAPE_IS_DYNAMIC_DIMENSION, "is_dynamic_dimension", HP_K_REP_VARINT },
};

static const hp_fdesc_t layout_fields[] = {
	{ HPF_LAYOUT_MINOR_TO_MAJOR, "minor_to_major", HP_K_REP_VARINT },
	{ HPF_LAYOUT_TILES, "tiles", HP_K_LEN },
	{ HPF_LAYOUT_ELEMENT_SIZE_IN_BITS, "element_size_in_bits", HP_K_VARINT },
	{ HPF_LAYOUT_MEMORY_SPACE, "memory_space", HP_K_VARINT },
	{ HPF_LAYOUT_TAIL_PADDING_ALIGNMENT, "tail_padding_alignment_in_elements", HP_K_VARINT },
};

static const hp_fdesc_t tile_fields[] = {
	{ HPF_TILE_DIMENSIONS, "dimensions", HP_K_REP_VARINT },
};

ncc_etype_t hp_etype(uint64_t v)
{
	switch (v) {
	case HPV_PRED: return NCC_PRED;
	case HPV_S2: return NCC_S2;
	case HPV_S4: return NCC_S4;
	case HPV_S8: return NCC_S8;
	case HPV_S16: return NCC_S16;
	case HPV_S32: return NCC_S32;
	case HPV_S64: return NCC_S64;
	case HPV_U2: return NCC_U2;
	case HPV_U4: return NCC_U4;
	case HPV_U8: return NCC_U8;
	case HPV_U16: return NCC_U16;
	case HPV_U32: return NCC_U32;
	case HPV_U64: return NCC_U64;
	case HPV_F16: return NCC_F16;
	case HPV_BF16: return NCC_BF16;
	case HPV_F32: return NCC_F32;
	case HPV_F64: return NCC_F64;
	case HPV_C64: return NCC_C64;
	case HPV_C128: return NCC_C128;
	case HPV_F4E2M1FN: return NCC_F4E2M1FN;
	case HPV_F8E3M4: return NCC_F8E3M4;
	case HPV_F8E4M3: return NCC_F8E4M3;
	case HPV_F8E4M3FN: return NCC_F8E4M3FN;
	case HPV_F8E4M3B11FNUZ: return NCC_F8E4M3B11FNUZ;
	case HPV_F8E4M3FNUZ: return NCC_F8E4M3FNUZ;
	case HPV_F8E5M2: return NCC_F8E5M2;
	case HPV_F8E5M2FNUZ: return NCC_F8E5M2FNUZ;
	case HPV_F8E8M0FNU: return NCC_F8E8M0FNU;
	case HPV_TOKEN: return NCC_TOKEN;
	case HPV_OPAQUE_TYPE: return NCC_OPAQUE;
	case HPV_TUPLE: return NCC_TUPLE;
	default: return NCC_INVALID;
	}
}

/* ---------------------------------------------------------------- layouts */

/* The part of XLA's layout spelling after ':' (tiles, tail padding, element size,
 * memory space), as the text parser keeps it in layout_extra. */
static bool layout_extra(hp_ctx_t *c, ncc_pb_reader_t r, const char **out)
{
	*out = NULL;
	hp_text_t t = { 0 };
	hp_msgdesc_t desc = HP_MSG(layout_fields);
	int64_t elem_bits = 0, mem_space = 0, tail = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t ntiles = 0;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		switch (f.number) {
		case HPF_LAYOUT_TILES: {
			if (ntiles == 0)
				hp_text_printf(&t, "T");
			if (!hp_push(c, "tiles", ntiles))
				break;
			int64_t *v;
			int32_t n;
			if (hp_rep_i64(c, hp_sub(c, &f), HP_MSG(tile_fields), HPF_TILE_DIMENSIONS,
				       NCC_MAX_RANK, &v, &n)) {
				hp_text_printf(&t, "(");
				for (int32_t i = 0; i < n; i++) {
					if (v[i] == -1)
						hp_text_printf(&t, i ? ",*" : "*");
					else
						hp_text_printf(&t, i ? ",%lld" : "%lld", (long long)v[i]);
				}
				hp_text_printf(&t, ")");
			}
			hp_pop(c);
			ntiles++;
			break;
		}
		case HPF_LAYOUT_ELEMENT_SIZE_IN_BITS: elem_bits = (int64_t)f.value; break;
		case HPF_LAYOUT_MEMORY_SPACE: mem_space = (int64_t)f.value; break;
		case HPF_LAYOUT_TAIL_PADDING_ALIGNMENT: tail = (int64_t)f.value; break;
		default: break;
		}
	}
	if (c->failed) {
		free(t.s);
		return false;
	}
	if (tail != 0 && tail != 1)
		hp_text_printf(&t, "L(%lld)", (long long)tail);
	if (elem_bits)
		hp_text_printf(&t, "E(%lld)", (long long)elem_bits);
	if (mem_space)
		hp_text_printf(&t, "S(%lld)", (long long)mem_space);
	if (t.len == 0 && !t.oom) {
		free(t.s);
		return true;
	}
	*out = hp_text_finish(c, &t);
	return *out != NULL;
}

/* ----------------------------------------------------------------- shapes */

static bool shape_rec(hp_ctx_t *c, ncc_pb_reader_t r, ncc_shape_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!hp_enter(c))
		return false;
	hp_msgdesc_t desc = HP_MSG(shape_fields);
	bool has_layout = false, has_type = false;
	ncc_pb_field_t layout;
	uint64_t type = 0;
	int32_t ntuple = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number == HPF_SHAPE_ELEMENT_TYPE) {
			type = f.value;
			has_type = true;
		} else if (f.number == HPF_SHAPE_LAYOUT) {
			layout = f;
			has_layout = true;
		} else if (f.number == HPF_SHAPE_TUPLE_SHAPES) {
			if (++ntuple > (1 << 20)) {
				hp_fail(c, NCC_ERR_LIMIT, "tuple_shapes", (long long)f.start,
					"more than %d tuple elements", 1 << 20);
				break;
			}
		}
	}
	if (c->failed)
		goto out;
	out->etype = has_type ? hp_etype(type) : NCC_INVALID;
	if (out->etype == NCC_INVALID) {
		hp_fail(c, NCC_ERR_PARSE, "element_type", -1, "unknown element type %llu",
			(unsigned long long)type);
		goto out;
	}
	if (out->etype == NCC_TUPLE) {
		out->nelems = ntuple;
		if (ntuple) {
			out->elems = ncc_alloc(c->m, sizeof(ncc_shape_t) * (size_t)ntuple);
			if (!out->elems) {
				hp_nomem(c);
				goto out;
			}
		}
		int32_t k = 0;
		hp_iter_init(&it, r, desc);
		while (hp_iter_next(c, &it, &f)) {
			if (f.number != HPF_SHAPE_TUPLE_SHAPES)
				continue;
			if (!hp_push(c, "tuple_shapes", k))
				break;
			bool ok = shape_rec(c, hp_sub(c, &f), &out->elems[k]);
			hp_pop(c);
			if (!ok)
				break;
			k++;
		}
		goto out;
	}
	if (ntuple) {
		hp_fail(c, NCC_ERR_PARSE, "tuple_shapes", -1, "a %s shape has tuple elements",
			ncc_etype_name(out->etype));
		goto out;
	}
	int64_t *dims;
	int32_t rank;
	if (!hp_rep_i64(c, r, desc, HPF_SHAPE_DIMENSIONS, NCC_MAX_RANK, &dims, &rank)) {
		if (c->status == NCC_ERR_LIMIT) {
			c->failed = false;
			hp_fail(c, NCC_ERR_LIMIT, "dimensions", -1, "rank exceeds the limit of %d",
				NCC_MAX_RANK);
		}
		goto out;
	}
	int64_t *dyn;
	int32_t ndyn;
	if (!hp_rep_i64(c, r, desc, HPF_SHAPE_IS_DYNAMIC_DIMENSION, NCC_MAX_RANK, &dyn, &ndyn))
		goto out;
	if (ndyn && ndyn != rank) {
		hp_fail(c, NCC_ERR_PARSE, "is_dynamic_dimension", -1,
			"%d entries for a shape of rank %d", (int)ndyn, (int)rank);
		goto out;
	}
	out->rank = rank;
	for (int32_t i = 0; i < rank; i++) {
		out->dynamic[i] = ndyn && dyn[i];
		if (dims[i] == INT64_MIN && out->dynamic[i]) {
			out->dims[i] = NCC_DIM_UNBOUNDED; /* XLA's kUnboundedSize: "?" */
		} else if (dims[i] < 0) {
			hp_fail(c, NCC_ERR_PARSE, "dimensions", -1, "dimension %d has negative size %lld",
				(int)i, (long long)dims[i]);
			goto out;
		} else {
			out->dims[i] = dims[i];
		}
	}
	if (has_layout && ncc_etype_is_array(out->etype)) {
		if (!hp_push(c, "layout", -1))
			goto out;
		ncc_pb_reader_t lr = hp_sub(c, &layout);
		int64_t *m2m;
		int32_t n;
		if (hp_rep_i64(c, lr, HP_MSG(layout_fields), HPF_LAYOUT_MINOR_TO_MAJOR, NCC_MAX_RANK,
			       &m2m, &n)) {
			if (n != rank) {
				hp_fail(c, NCC_ERR_PARSE, "minor_to_major", -1,
					"layout has %d entries but the shape has rank %d", (int)n,
					(int)rank);
			} else {
				for (int32_t i = 0; i < n; i++) {
					if (m2m[i] < 0 || m2m[i] >= NCC_MAX_RANK) {
						hp_fail(c, NCC_ERR_PARSE, "minor_to_major", -1,
							"layout entry %lld invalid for rank %d",
							(long long)m2m[i], (int)rank);
						break;
					}
					out->minor_to_major[i] = (int32_t)m2m[i];
				}
			}
		}
		if (!c->failed)
			layout_extra(c, lr, &out->layout_extra);
		hp_pop(c);
		/* XLA's printer leaves out a scalar's empty "{}" layout; the text parser then
		 * has none, so neither do we */
		out->has_layout = rank > 0 || out->layout_extra;
	}
out:
	hp_leave(c);
	return !c->failed;
}

bool hp_shape(hp_ctx_t *c, ncc_pb_reader_t r, ncc_shape_t *out)
{
	return shape_rec(c, r, out);
}

bool hp_shape_no_layout(hp_ctx_t *c, const ncc_shape_t *s, ncc_shape_t *out, int depth)
{
	*out = *s;
	out->has_layout = false;
	out->layout_extra = NULL;
	memset(out->minor_to_major, 0, sizeof(out->minor_to_major));
	if (s->etype != NCC_TUPLE || s->nelems == 0 || depth > NCC_PARSE_MAX_DEPTH)
		return true;
	out->elems = ncc_alloc(c->m, sizeof(ncc_shape_t) * (size_t)s->nelems);
	if (!out->elems)
		return hp_nomem(c);
	for (int32_t i = 0; i < s->nelems; i++)
		if (!hp_shape_no_layout(c, &s->elems[i], &out->elems[i], depth + 1))
			return false;
	return true;
}

/* --------------------------------------------------------------- literals */

static const hp_fdesc_t literal_fields[] = {
	{ HPF_LIT_SHAPE, "shape", HP_K_LEN },
	{ HPF_LIT_PREDS, "preds", HP_K_REP_VARINT },
	{ HPF_LIT_U8S, "u8s", HP_K_LEN },
	{ HPF_LIT_S32S, "s32s", HP_K_REP_VARINT },
	{ HPF_LIT_S64S, "s64s", HP_K_REP_VARINT },
	{ HPF_LIT_U32S, "u32s", HP_K_REP_VARINT },
	{ HPF_LIT_U64S, "u64s", HP_K_REP_VARINT },
	{ HPF_LIT_F32S, "f32s", HP_K_REP_FIXED32 },
	{ HPF_LIT_F64S, "f64s", HP_K_REP_FIXED64 },
	{ HPF_LIT_TUPLE_LITERALS, "tuple_literals", HP_K_LEN },
	{ HPF_LIT_F16S, "f16s", HP_K_LEN },
	{ HPF_LIT_C64S, "c64s", HP_K_REP_FIXED32 },
	{ HPF_LIT_BF16S, "bf16s", HP_K_LEN },
	{ HPF_LIT_S8S, "s8s", HP_K_LEN },
	{ HPF_LIT_U16S, "u16s", HP_K_LEN },
	{ HPF_LIT_S16S, "s16s", HP_K_LEN },
	{ HPF_LIT_C128S, "c128s", HP_K_REP_FIXED64 },
	{ HPF_LIT_F8E5M2S, "f8e5m2s", HP_K_LEN },
	{ HPF_LIT_F8E4M3FNS, "f8e4m3fns", HP_K_LEN },
	{ HPF_LIT_S4S, "s4s", HP_K_LEN },
	{ HPF_LIT_U4S, "u4s", HP_K_LEN },
	{ HPF_LIT_F8E4M3B11FNUZS, "f8e4m3b11fnuzs", HP_K_LEN },
	{ HPF_LIT_F8E5M2FNUZS, "f8e5m2fnuzs", HP_K_LEN },
	{ HPF_LIT_F8E4M3FNUZS, "f8e4m3fnuzs", HP_K_LEN },
	{ HPF_LIT_S2S, "s2s", HP_K_LEN },
	{ HPF_LIT_U2S, "u2s", HP_K_LEN },
	{ HPF_LIT_F8E4M3S, "f8e4m3s", HP_K_LEN },
	{ HPF_LIT_F8E3M4S, "f8e3m4s", HP_K_LEN },
	{ HPF_LIT_F4E2M1FNS, "f4e2m1fns", HP_K_LEN },
	{ HPF_LIT_F8E8M0FNUS, "f8e8m0fnus", HP_K_LEN },
};

/* Where the values of an element type live: a packed/repeated scalar field (varint or
 * fixed) with `per` values per element, or a bytes field of `width` bytes per
 * element (little endian). */
typedef struct lit_src {
	uint32_t field;
	bool bytes;
	int width; /* bytes: bytes per element */
	int per;   /* repeated: values per element (2 for complex) */
} lit_src_t;

static bool lit_source(ncc_etype_t t, lit_src_t *s)
{
	memset(s, 0, sizeof(*s));
	s->per = 1;
	switch (t) {
	case NCC_PRED: s->field = HPF_LIT_PREDS; return true;
	case NCC_S32: s->field = HPF_LIT_S32S; return true;
	case NCC_S64: s->field = HPF_LIT_S64S; return true;
	case NCC_U32: s->field = HPF_LIT_U32S; return true;
	case NCC_U64: s->field = HPF_LIT_U64S; return true;
	case NCC_F32: s->field = HPF_LIT_F32S; return true;
	case NCC_F64: s->field = HPF_LIT_F64S; return true;
	case NCC_C64: s->field = HPF_LIT_C64S; s->per = 2; return true;
	case NCC_C128: s->field = HPF_LIT_C128S; s->per = 2; return true;
	default: break;
	}
	s->bytes = true;
	s->width = 1;
	switch (t) {
	case NCC_S8: s->field = HPF_LIT_S8S; return true;
	case NCC_U8: s->field = HPF_LIT_U8S; return true;
	case NCC_S4: s->field = HPF_LIT_S4S; return true;
	case NCC_U4: s->field = HPF_LIT_U4S; return true;
	case NCC_S2: s->field = HPF_LIT_S2S; return true;
	case NCC_U2: s->field = HPF_LIT_U2S; return true;
	case NCC_F8E5M2: s->field = HPF_LIT_F8E5M2S; return true;
	case NCC_F8E4M3FN: s->field = HPF_LIT_F8E4M3FNS; return true;
	case NCC_F8E4M3B11FNUZ: s->field = HPF_LIT_F8E4M3B11FNUZS; return true;
	case NCC_F8E5M2FNUZ: s->field = HPF_LIT_F8E5M2FNUZS; return true;
	case NCC_F8E4M3FNUZ: s->field = HPF_LIT_F8E4M3FNUZS; return true;
	case NCC_F8E4M3: s->field = HPF_LIT_F8E4M3S; return true;
	case NCC_F8E3M4: s->field = HPF_LIT_F8E3M4S; return true;
	case NCC_F4E2M1FN: s->field = HPF_LIT_F4E2M1FNS; return true;
	case NCC_F8E8M0FNU: s->field = HPF_LIT_F8E8M0FNUS; return true;
	default: break;
	}
	s->width = 2;
	switch (t) {
	case NCC_F16: s->field = HPF_LIT_F16S; return true;
	case NCC_BF16: s->field = HPF_LIT_BF16S; return true;
	case NCC_S16: s->field = HPF_LIT_S16S; return true;
	case NCC_U16: s->field = HPF_LIT_U16S; return true;
	default: return false;
	}
}

static void store(uint8_t *dst, size_t es, uint64_t v)
{
	switch (es) {
	case 1: dst[0] = (uint8_t)v; break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
	default: memcpy(dst, &v, 8); break;
	}
}

/* Logical (row-major) index of the element at physical position p under the
 * layout m2m of s (a permutation, checked by the caller). */
static int64_t logical_index(const ncc_shape_t *s, int64_t p)
{
	int64_t idx[NCC_MAX_RANK];
	for (int32_t i = 0; i < s->rank; i++) {
		int32_t d = s->minor_to_major[i];
		idx[d] = s->dims[d] ? p % s->dims[d] : 0;
		p = s->dims[d] ? p / s->dims[d] : 0;
	}
	int64_t l = 0;
	for (int32_t d = 0; d < s->rank; d++)
		l = l * s->dims[d] + idx[d];
	return l;
}

/* Does the literal's data need reordering into row-major order? */
static bool needs_transpose(hp_ctx_t *c, const ncc_shape_t *s, bool *out)
{
	*out = false;
	if (!s->has_layout || s->rank < 2)
		return true;
	bool seen[NCC_MAX_RANK] = { false };
	for (int32_t i = 0; i < s->rank; i++) {
		int32_t d = s->minor_to_major[i];
		if (d < 0 || d >= s->rank || seen[d])
			return hp_fail(c, NCC_ERR_PARSE, "shape.layout", -1,
				       "minor_to_major is not a permutation of the %d dimensions",
				       (int)s->rank);
		seen[d] = true;
		if (d != s->rank - 1 - i)
			*out = true;
	}
	return true;
}

static bool array_literal(hp_ctx_t *c, ncc_pb_reader_t r, const ncc_shape_t *s,
			  ncc_literal_t *lit)
{
	memset(lit, 0, sizeof(*lit));
	lit->present = true;
	lit->etype = s->etype;
	lit_src_t src;
	if (!ncc_etype_is_array(s->etype) || !lit_source(s->etype, &src))
		return hp_fail(c, NCC_ERR_PARSE, NULL, -1, "a constant of type %s cannot hold a literal",
			       ncc_etype_name(s->etype));
	for (int32_t i = 0; i < s->rank; i++)
		if (s->dynamic[i])
			return hp_fail(c, NCC_ERR_UNSUPPORTED, NULL, -1,
				       "constants of dynamic shape are not supported");
	int64_t count = ncc_shape_elements(s);
	size_t es = ncc_etype_storage_bytes(s->etype);
	const hp_fdesc_t *fd = hp_field_desc(HP_MSG(literal_fields), src.field);
	/* every element needs at least one byte of input: refuse before allocating */
	if (count < 0 || (uint64_t)count > c->len ||
	    (uint64_t)count * es > NCC_PARSE_MAX_LITERAL_BYTES)
		return hp_fail(c, NCC_ERR_PARSE, fd->name, -1,
			       "literal of %lld elements is larger than the input", (long long)count);
	bool transpose;
	if (!needs_transpose(c, s, &transpose))
		return false;
	if (ncc_literal_init(c->m, lit, s->etype, count) != NCC_OK)
		return hp_nomem(c);
	lit->present = true;
	int64_t have = 0; /* values seen */
	hp_iter_t it;
	ncc_pb_field_t f;
	if (src.bytes) {
		/* a bytes field: the last occurrence counts */
		bool found = false;
		ncc_pb_field_t last;
		hp_iter_init(&it, r, HP_MSG(literal_fields));
		while (hp_iter_next(c, &it, &f))
			if (f.number == src.field) {
				last = f;
				found = true;
			}
		if (c->failed)
			return false;
		size_t nbytes = found ? last.len : 0;
		if (nbytes != (uint64_t)count * (uint64_t)src.width)
			return hp_fail(c, NCC_ERR_PARSE, fd->name, found ? (long long)last.off : -1,
				       "%zu bytes for %lld %s elements (%d bytes each)", nbytes,
				       (long long)count, ncc_etype_name(s->etype), src.width);
		const uint8_t *p = c->data + (found ? last.off : 0);
		int bits = ncc_etype_bits(s->etype);
		bool sub_byte = bits < 8;
		for (int64_t k = 0; k < count; k++) {
			uint64_t v = src.width == 2 ? (uint64_t)p[2 * k] | (uint64_t)p[2 * k + 1] << 8 :
						      p[k];
			if (sub_byte) {
				/* s2/s4/u2/u4/f4 take one byte each: keep the logical bits, with
				 * signed values sign-extended as the text parser stores them */
				v &= (1u << bits) - 1;
				if (ncc_etype_is_signed_int(s->etype) && (v >> (bits - 1)))
					v |= ~(uint64_t)0 << bits;
			}
			int64_t l = transpose ? logical_index(s, k) : k;
			store(lit->data + (size_t)l * es, es, v);
		}
		return true;
	}
	/* repeated scalars: every occurrence, packed or not, in order */
	size_t half = es / (size_t)src.per;
	hp_iter_init(&it, r, HP_MSG(literal_fields));
	while (hp_iter_next(c, &it, &f)) {
		if (f.number != src.field)
			continue;
		ncc_pb_values_t v;
		ncc_pb_values_init(&v, &it.r, &f,
				   fd->kind == HP_K_REP_FIXED32 ? NCC_PB_ELEM_FIXED32 :
				   fd->kind == HP_K_REP_FIXED64 ? NCC_PB_ELEM_FIXED64 : NCC_PB_ELEM_VARINT);
		uint64_t x;
		while (ncc_pb_values_more(&v)) {
			ns_status_t st = ncc_pb_values_next(&v, &x);
			if (st)
				return hp_fail_pb(c, fd->name, st);
			if (have >= count * src.per)
				return hp_fail(c, NCC_ERR_PARSE, fd->name, (long long)f.start,
					       "more values than the %lld elements of the shape",
					       (long long)count);
			int64_t k = have / src.per, part = have % src.per;
			int64_t l = transpose ? logical_index(s, k) : k;
			uint8_t *dst = lit->data + (size_t)l * es + (size_t)part * half;
			if (s->etype == NCC_PRED)
				x = x != 0;
			store(dst, half, x);
			have++;
		}
	}
	if (c->failed)
		return false;
	if (have != count * src.per)
		return hp_fail(c, NCC_ERR_PARSE, fd->name, -1,
			       "%lld values for %lld %s elements", (long long)have, (long long)count,
			       ncc_etype_name(s->etype));
	return true;
}

static bool literal_rec(hp_ctx_t *c, ncc_pb_reader_t r, const ncc_shape_t *ishape,
			ncc_literal_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!hp_enter(c))
		return false;
	hp_msgdesc_t desc = HP_MSG(literal_fields);
	/* the literal's own shape: its layout orders the data */
	ncc_shape_t lshape;
	const ncc_shape_t *s = ishape;
	hp_iter_t it;
	ncc_pb_field_t f;
	bool ok = true;
	hp_iter_init(&it, r, desc);
	while (ok && hp_iter_next(c, &it, &f)) {
		if (f.number != HPF_LIT_SHAPE)
			continue;
		ok = hp_push(c, "shape", -1) && hp_shape(c, hp_sub(c, &f), &lshape);
		hp_pop(c);
		s = &lshape;
	}
	if (c->failed)
		goto out;
	if (s != ishape && !ncc_shape_equal(s, ishape, false)) {
		char a[128], b[128];
		ncc_shape_to_string(s, false, a, sizeof(a));
		ncc_shape_to_string(ishape, false, b, sizeof(b));
		hp_fail(c, NCC_ERR_PARSE, "shape", -1, "literal shape %s differs from the constant's %s",
			a, b);
		goto out;
	}
	if (s->etype != NCC_TUPLE) {
		array_literal(c, r, s, out);
		goto out;
	}
	/* tuple: the leaves' buffers back to back, as the text parser stores them */
	ncc_literal_t acc;
	memset(&acc, 0, sizeof(acc));
	acc.present = true;
	acc.etype = NCC_TUPLE;
	int32_t k = 0;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number != HPF_LIT_TUPLE_LITERALS)
			continue;
		if (k >= ishape->nelems) {
			hp_fail(c, NCC_ERR_PARSE, "tuple_literals", (long long)f.start,
				"more than the %d elements of the tuple shape", (int)ishape->nelems);
			break;
		}
		ncc_literal_t e;
		if (!hp_push(c, "tuple_literals", k))
			break;
		ok = literal_rec(c, hp_sub(c, &f), &ishape->elems[k], &e);
		hp_pop(c);
		if (!ok)
			break;
		if (ncc__literal_append(c->m, &acc, &e) != NCC_OK) {
			hp_nomem(c);
			break;
		}
		k++;
	}
	if (!c->failed && k != ishape->nelems)
		hp_fail(c, NCC_ERR_PARSE, "tuple_literals", -1, "%d elements for a tuple of %d",
			(int)k, (int)ishape->nelems);
	*out = acc;
out:
	hp_leave(c);
	return !c->failed;
}

bool hp_literal(hp_ctx_t *c, ncc_pb_reader_t r, const ncc_shape_t *shape, ncc_literal_t *out)
{
	return literal_rec(c, r, shape, out);
}
