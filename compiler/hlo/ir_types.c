/* ncc IR: element type and opcode tables, shapes (construction, sizes, comparison, spelling). */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ element types */

static const struct {
	const char *name;
	int bits;
} etype_tab[] = {
#define NCC_X_(e, s, b) { s, b },
	NCC_ETYPES(NCC_X_)
#undef NCC_X_
};

const char *ncc_etype_name(ncc_etype_t t)
{
	if ((unsigned)t >= NCC_ETYPE_COUNT)
		return "invalid";
	return etype_tab[t].name;
}

ncc_etype_t ncc_etype_from_name(const char *s, size_t len)
{
	/* "invalid" and "tuple" are not spellable element types */
	for (int i = NCC_PRED; i < NCC_TUPLE; i++)
		if (strlen(etype_tab[i].name) == len && memcmp(etype_tab[i].name, s, len) == 0)
			return (ncc_etype_t)i;
	return NCC_INVALID;
}

int ncc_etype_bits(ncc_etype_t t)
{
	if ((unsigned)t >= NCC_ETYPE_COUNT)
		return 0;
	return etype_tab[t].bits;
}

size_t ncc_etype_storage_bytes(ncc_etype_t t)
{
	int b = ncc_etype_bits(t);
	if (b == 0)
		return 0;
	return b < 8 ? 1 : (size_t)b / 8;
}

bool ncc_etype_is_float(ncc_etype_t t)
{
	return t == NCC_F16 || t == NCC_BF16 || t == NCC_F32 || t == NCC_F64 ||
	       (t >= NCC_F4E2M1FN && t <= NCC_F8E8M0FNU);
}

bool ncc_etype_is_complex(ncc_etype_t t) { return t == NCC_C64 || t == NCC_C128; }
bool ncc_etype_is_signed_int(ncc_etype_t t) { return t >= NCC_S2 && t <= NCC_S64; }
bool ncc_etype_is_unsigned_int(ncc_etype_t t) { return t >= NCC_U2 && t <= NCC_U64; }
bool ncc_etype_is_integral(ncc_etype_t t)
{
	return ncc_etype_is_signed_int(t) || ncc_etype_is_unsigned_int(t);
}
bool ncc_etype_is_array(ncc_etype_t t) { return t > NCC_INVALID && t < NCC_TOKEN; }

/* ------------------------------------------------------------------ shapes */

ncc_shape_t ncc_shape_array(ncc_etype_t t, int32_t rank, const int64_t *dims)
{
	ncc_shape_t s;
	memset(&s, 0, sizeof(s));
	s.etype = t;
	if (rank < 0 || rank > NCC_MAX_RANK)
		rank = 0;
	s.rank = rank;
	for (int32_t i = 0; i < rank; i++) {
		s.dims[i] = dims[i];
		s.minor_to_major[i] = rank - 1 - i;
	}
	s.has_layout = true;
	return s;
}

ncc_shape_t ncc_shape_scalar(ncc_etype_t t) { return ncc_shape_array(t, 0, NULL); }
bool ncc_shape_is_tuple(const ncc_shape_t *s) { return s->etype == NCC_TUPLE; }
bool ncc_shape_is_array(const ncc_shape_t *s) { return ncc_etype_is_array(s->etype); }

int64_t ncc_shape_elements(const ncc_shape_t *s)
{
	if (!ncc_shape_is_array(s))
		return 0;
	int64_t n = 1;
	for (int32_t i = 0; i < s->rank; i++) {
		if (s->dims[i] < 0)
			return -1;
		if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i])
			return -1;
		n *= s->dims[i];
	}
	return n;
}

int64_t ncc_shape_bytes(const ncc_shape_t *s)
{
	int64_t n = ncc_shape_elements(s);
	int64_t b = (int64_t)ncc_etype_storage_bytes(s->etype);
	if (n < 0 || (b && n > INT64_MAX / b))
		return -1;
	return n * b;
}

bool ncc_shape_equal(const ncc_shape_t *a, const ncc_shape_t *b, bool compare_layout)
{
	if (a->etype != b->etype)
		return false;
	if (a->etype == NCC_TUPLE) {
		if (a->nelems != b->nelems)
			return false;
		for (int32_t i = 0; i < a->nelems; i++)
			if (!ncc_shape_equal(&a->elems[i], &b->elems[i], compare_layout))
				return false;
		return true;
	}
	if (a->rank != b->rank)
		return false;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i] || a->dynamic[i] != b->dynamic[i])
			return false;
	if (compare_layout && a->has_layout && b->has_layout) {
		for (int32_t i = 0; i < a->rank; i++)
			if (a->minor_to_major[i] != b->minor_to_major[i])
				return false;
		const char *x = a->layout_extra ? a->layout_extra : "";
		const char *y = b->layout_extra ? b->layout_extra : "";
		if (strcmp(x, y) != 0)
			return false;
	}
	return true;
}

/* snprintf into a moving window that tolerates truncation and counts the need */
typedef struct sbuf {
	char *buf;
	size_t size;
	size_t len; /* needed length so far */
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = b->len < b->size ? b->size - b->len : 0;
	int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n;
}

static void shape_str(sbuf_t *b, const ncc_shape_t *s, bool with_layout, int depth)
{
	if (s->etype == NCC_TUPLE) {
		sb_printf(b, "(");
		for (int32_t i = 0; i < s->nelems; i++) {
			if (i)
				sb_printf(b, ", ");
			if (i && i % 5 == 0)
				sb_printf(b, "/*index=%d*/", (int)i);
			if (depth < 64)
				shape_str(b, &s->elems[i], with_layout, depth + 1);
		}
		sb_printf(b, ")");
		return;
	}
	sb_printf(b, "%s[", ncc_etype_name(s->etype));
	for (int32_t i = 0; i < s->rank; i++) {
		if (i)
			sb_printf(b, ",");
		if (s->dynamic[i] && s->dims[i] == NCC_DIM_UNBOUNDED)
			sb_printf(b, "?");
		else if (s->dynamic[i])
			sb_printf(b, "<=%lld", (long long)s->dims[i]);
		else
			sb_printf(b, "%lld", (long long)s->dims[i]);
	}
	sb_printf(b, "]");
	/* XLA prints no layout for scalars of rank 0 ("f32[]"); keep that habit */
	if (with_layout && s->has_layout && (s->rank > 0 || s->layout_extra) &&
	    ncc_etype_is_array(s->etype)) {
		sb_printf(b, "{");
		for (int32_t i = 0; i < s->rank; i++)
			sb_printf(b, i ? ",%d" : "%d", (int)s->minor_to_major[i]);
		if (s->layout_extra)
			sb_printf(b, ":%s", s->layout_extra);
		sb_printf(b, "}");
	}
}

int ncc_shape_to_string(const ncc_shape_t *s, bool with_layout, char *buf, size_t size)
{
	sbuf_t b = { buf, size, 0 };
	if (size)
		buf[0] = 0;
	shape_str(&b, s, with_layout, 0);
	if (size)
		buf[b.len < size ? b.len : size - 1] = 0;
	return (int)b.len;
}

/* ---------------------------------------------------------------- opcodes */

static const char *const opcode_names[] = {
#define NCC_X_(e, s) s,
	NCC_OPCODES(NCC_X_)
#undef NCC_X_
};

const char *ncc_opcode_name(ncc_opcode_t op)
{
	if ((unsigned)op >= NCC_OP_COUNT)
		return "unknown";
	return opcode_names[op];
}

ncc_opcode_t ncc_opcode_from_name(const char *s, size_t len)
{
	for (int i = 1; i < NCC_OP_COUNT; i++)
		if (strlen(opcode_names[i]) == len && memcmp(opcode_names[i], s, len) == 0)
			return (ncc_opcode_t)i;
	if (len == 20 && memcmp(s, "optimization-barrier", 20) == 0)
		return NCC_OP_OPTIMIZATION_BARRIER;
	if (len == 3 && memcmp(s, "clz", 3) == 0)
		return NCC_OP_CLZ;
	return NCC_OP_UNKNOWN;
}

bool ncc_opcode_is_elementwise_unary(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_ABS: case NCC_OP_CBRT: case NCC_OP_CEIL: case NCC_OP_CLZ: case NCC_OP_COS:
	case NCC_OP_ERF: case NCC_OP_EXP: case NCC_OP_EXPM1: case NCC_OP_FLOOR: case NCC_OP_IMAG:
	case NCC_OP_IS_FINITE: case NCC_OP_LOG: case NCC_OP_LOG1P: case NCC_OP_LOGISTIC:
	case NCC_OP_NEGATE: case NCC_OP_NOT: case NCC_OP_POPCNT: case NCC_OP_REAL:
	case NCC_OP_REDUCE_PRECISION: case NCC_OP_ROUND_NEAREST_AFZ:
	case NCC_OP_ROUND_NEAREST_EVEN: case NCC_OP_RSQRT: case NCC_OP_SIGN: case NCC_OP_SIN:
	case NCC_OP_SQRT: case NCC_OP_TAN: case NCC_OP_TANH: case NCC_OP_COPY:
	case NCC_OP_CONVERT:
		return true;
	default:
		return false;
	}
}

bool ncc_opcode_is_elementwise_binary(ncc_opcode_t op)
{
	switch (op) {
	case NCC_OP_ADD: case NCC_OP_ATAN2: case NCC_OP_COMPARE: case NCC_OP_COMPLEX:
	case NCC_OP_DIVIDE: case NCC_OP_MAXIMUM: case NCC_OP_MINIMUM: case NCC_OP_MULTIPLY:
	case NCC_OP_POWER: case NCC_OP_REMAINDER: case NCC_OP_SUBTRACT: case NCC_OP_AND:
	case NCC_OP_OR: case NCC_OP_XOR: case NCC_OP_SHIFT_LEFT:
	case NCC_OP_SHIFT_RIGHT_ARITHMETIC: case NCC_OP_SHIFT_RIGHT_LOGICAL:
	case NCC_OP_STOCHASTIC_CONVERT:
		return true;
	default:
		return false;
	}
}

bool ncc_opcode_is_elementwise(ncc_opcode_t op)
{
	return ncc_opcode_is_elementwise_unary(op) || ncc_opcode_is_elementwise_binary(op) ||
	       op == NCC_OP_SELECT || op == NCC_OP_CLAMP || op == NCC_OP_MAP;
}

