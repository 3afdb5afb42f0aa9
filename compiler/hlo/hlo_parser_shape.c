/* ncc HLO text parser: shapes, layouts and literals (scalars, arrays, tuples, elided constants). */
#include "hlo_parser_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ shapes */

/* Layout "{1,0}" / "{1,0:T(8,128)S(1)}"; the current token is '{'. */
static bool parse_layout(parser_t *p, ncc_shape_t *s)
{
	int line = p->tok.line, col = p->tok.col;
	tp_next(p);
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_INT) {
		int64_t v;
		if (!tp_parse_int(p, &v, "layout dimension"))
			return false;
		if (n >= NCC_MAX_RANK || v < 0 || v >= NCC_MAX_RANK)
			return tp_fail_at(p, NCC_ERR_PARSE, line, col, "layout entry %lld invalid for rank %d",
				          (long long)v, (int)s->rank);
		s->minor_to_major[n++] = (int32_t)v;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (p->tok.kind == NCC_TOK_COLON) {
		/* tiling / memory space / element size: kept as text up to the closing '}' */
		size_t start = p->tok.pos + 1;
		ncc_lex_reset_to(&p->lx, &p->tok);
		p->lx.pos++; /* past ':' (never a newline) */
		int pd = 0;
		while (p->lx.pos < p->lx.len) {
			char c = p->lx.src[p->lx.pos];
			if (c == '(')
				pd++;
			else if (c == ')')
				pd--;
			else if ((c == '}' && pd <= 0) || c == '\n' || c == '{' || c == 0)
				break;
			if (pd > NCC_PARSE_MAX_DEPTH || pd < 0)
				break;
			p->lx.pos++;
		}
		size_t end = p->lx.pos;
		while (end > start && p->lx.src[end - 1] == ' ')
			end--;
		s->layout_extra = ncc_strndup(p->m, p->lx.src + start, end - start);
		if (!s->layout_extra)
			return tp_nomem(p);
		p->tok = ncc_lex_next(&p->lx);
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' closing the layout"))
		return false;
	if (n != s->rank)
		return tp_fail_at(p, NCC_ERR_PARSE, line, col,
			          "layout has %d entries but the shape has rank %d", (int)n, (int)s->rank);
	s->has_layout = true;
	return true;
}

bool tp_parse_shape(parser_t *p, ncc_shape_t *out)
{
	memset(out, 0, sizeof(*out));
	if (p->tok.kind == NCC_TOK_LPAREN) {
		if (!tp_enter(p))
			return false;
		tp_next(p);
		out->etype = NCC_TUPLE;
		ncc_shape_t *elems = NULL;
		int32_t n = 0, cap = 0;
		bool ok = true;
		if (p->tok.kind != NCC_TOK_RPAREN) {
			for (;;) {
				if (n == cap) {
					int32_t nc = cap ? cap * 2 : 4;
					if (nc > (1 << 20)) {
						ok = tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
							        "tuple has too many elements");
						break;
					}
					ncc_shape_t *ne = ncc__realloc(elems, sizeof(*ne) * (size_t)nc);
					if (!ne) {
						ok = tp_nomem(p);
						break;
					}
					elems = ne;
					cap = nc;
				}
				if (!tp_parse_shape(p, &elems[n])) {
					ok = false;
					break;
				}
				n++;
				if (!tp_accept(p, NCC_TOK_COMMA))
					break;
			}
		}
		if (ok)
			ok = tp_expect(p, NCC_TOK_RPAREN, "')' or ',' in tuple shape");
		if (ok && n) {
			out->elems = ncc_alloc(p->m, sizeof(ncc_shape_t) * (size_t)n);
			if (!out->elems)
				ok = tp_nomem(p);
			else
				memcpy(out->elems, elems, sizeof(ncc_shape_t) * (size_t)n);
		}
		out->nelems = n;
		free(elems);
		tp_leave(p);
		return ok;
	}
	if (p->tok.kind != NCC_TOK_IDENT)
		return tp_expected(p, "shape");
	ncc_etype_t t = ncc_etype_from_name(p->tok.text, p->tok.len);
	if (t == NCC_INVALID)
		return tp_expected(p, "element type (f32, bf16, s32, pred, ...)");
	out->etype = t;
	tp_next(p);
	if (!tp_expect(p, NCC_TOK_LSQUARE, "'[' after the element type"))
		return false;
	if (p->tok.kind != NCC_TOK_RSQUARE) {
		for (;;) {
			if (out->rank >= NCC_MAX_RANK)
				return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
					          "rank exceeds the limit of %d", NCC_MAX_RANK);
			int i = out->rank;
			if (tp_accept(p, NCC_TOK_QUESTION)) {
				out->dims[i] = NCC_DIM_UNBOUNDED;
				out->dynamic[i] = true;
			} else {
				if (tp_accept(p, NCC_TOK_LEQ))
					out->dynamic[i] = true;
				if (!tp_parse_nonneg(p, &out->dims[i], "dimension size"))
					return false;
			}
			out->rank++;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (!tp_expect(p, NCC_TOK_RSQUARE, "']' or ',' in dimensions"))
		return false;
	/* a '{' is a layout only if an integer, ':' or '}' follows: after a signature's
	 * result shape the computation body's '{' comes next */
	if (p->tok.kind == NCC_TOK_LBRACE) {
		ncc_tok_kind_t k = tp_peek_kind(p);
		if (k == NCC_TOK_INT || k == NCC_TOK_COLON || k == NCC_TOK_RBRACE)
			return parse_layout(p, out);
	}
	return true;
}

/* ---------------------------------------------------------------- literals */

typedef struct lit_ctx {
	ncc_literal_t *lit;
	int64_t idx;
} lit_ctx_t;

static bool store_int_elem(parser_t *p, ncc_etype_t t, uint8_t *dst)
{
	const ncc_token_t tk = p->tok;
	if (t == NCC_PRED) {
		if (tp_tok_is(&tk, "true") || (tk.kind == NCC_TOK_INT && tk.len == 1 && tk.text[0] == '1'))
			*dst = 1;
		else if (tp_tok_is(&tk, "false") || (tk.kind == NCC_TOK_INT && tk.len == 1 && tk.text[0] == '0'))
			*dst = 0;
		else
			return tp_expected(p, "pred value (true/false)");
		tp_next(p);
		return true;
	}
	if (tk.kind != NCC_TOK_INT)
		return tp_expected(p, "integer literal");
	char buf[64];
	if (tk.len >= sizeof(buf))
		return tp_fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "integer literal too long");
	memcpy(buf, tk.text, tk.len);
	buf[tk.len] = 0;
	int bits = ncc_etype_bits(t);
	size_t es = ncc_etype_storage_bytes(t);
	uint64_t u;
	errno = 0;
	char *end;
	if (ncc_etype_is_signed_int(t)) {
		long long v = strtoll(buf, &end, 0);
		long long lo = bits >= 64 ? INT64_MIN : -(1ll << (bits - 1));
		long long hi = bits >= 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
		if (errno || *end || v < lo || v > hi)
			return tp_fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				          buf, ncc_etype_name(t));
		u = (uint64_t)v;
	} else {
		if (buf[0] == '-')
			return tp_fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				          buf, ncc_etype_name(t));
		unsigned long long v = strtoull(buf, &end, 0);
		if (errno || *end || (bits < 64 && v > (1ull << bits) - 1))
			return tp_fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				          buf, ncc_etype_name(t));
		u = v;
	}
	switch (es) {
	case 1: dst[0] = (uint8_t)u; break;
	case 2: { uint16_t x = (uint16_t)u; memcpy(dst, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)u; memcpy(dst, &x, 4); break; }
	default: memcpy(dst, &u, 8); break;
	}
	tp_next(p);
	return true;
}

static bool store_float(parser_t *p, ncc_etype_t t, uint8_t *dst)
{
	const ncc_token_t tk = p->tok;
	double d;
	if (!tp_parse_double_tok(&tk, &d))
		return tp_expected(p, "floating-point literal");
	if (t == NCC_F32 || t == NCC_C64) {
		float f;
		if (tk.kind == NCC_TOK_IDENT) {
			f = (float)d;
		} else {
			/* strtof directly: decimal -> double -> float could double-round */
			char buf[128];
			memcpy(buf, tk.text, tk.len);
			buf[tk.len] = 0;
			f = strtof(buf, NULL);
		}
		memcpy(dst, &f, 4);
	} else if (t == NCC_F64 || t == NCC_C128) {
		memcpy(dst, &d, 8);
	} else {
		uint32_t bits = ncc__minifloat_encode(t, d);
		if (ncc_etype_storage_bytes(t) == 2) {
			uint16_t x = (uint16_t)bits;
			memcpy(dst, &x, 2);
		} else {
			dst[0] = (uint8_t)bits;
		}
	}
	tp_next(p);
	/* XLA writes NaNs with a payload as nan(0x...): accepted, payload not kept */
	if (isnan(d) && p->tok.kind == NCC_TOK_LPAREN) {
		tp_next(p);
		if (p->tok.kind != NCC_TOK_INT)
			return tp_expected(p, "NaN payload");
		tp_next(p);
		return tp_expect(p, NCC_TOK_RPAREN, "')' after NaN payload");
	}
	return true;
}

static bool parse_scalar(parser_t *p, ncc_etype_t t, uint8_t *dst)
{
	if (ncc_etype_is_complex(t)) {
		/* (re, im) */
		size_t half = ncc_etype_storage_bytes(t) / 2;
		if (!tp_expect(p, NCC_TOK_LPAREN, "'(' starting a complex value"))
			return false;
		if (!store_float(p, t, dst))
			return false;
		if (!tp_expect(p, NCC_TOK_COMMA, "',' in a complex value"))
			return false;
		if (!store_float(p, t, dst + half))
			return false;
		return tp_expect(p, NCC_TOK_RPAREN, "')' closing a complex value");
	}
	if (ncc_etype_is_float(t))
		return store_float(p, t, dst);
	if (ncc_etype_is_integral(t) || t == NCC_PRED)
		return store_int_elem(p, t, dst);
	return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col, "%s has no literal values",
		          ncc_etype_name(t));
}

static bool parse_lit_dim(parser_t *p, const ncc_shape_t *s, int dim, lit_ctx_t *c)
{
	if (!tp_enter(p))
		return false;
	int line = p->tok.line, col = p->tok.col;
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' in array literal")) {
		tp_leave(p);
		return false;
	}
	int64_t n = 0;
	size_t es = ncc_etype_storage_bytes(s->etype);
	if (p->tok.kind != NCC_TOK_RBRACE) {
		for (;;) {
			if (n >= s->dims[dim]) {
				tp_leave(p);
				return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
					          "literal has more than %lld elements in dimension %d",
					          (long long)s->dims[dim], dim);
			}
			bool ok;
			if (dim + 1 < s->rank) {
				ok = parse_lit_dim(p, s, dim + 1, c);
			} else {
				ok = parse_scalar(p, s->etype, c->lit->data + (size_t)c->idx * es);
				c->idx++;
			}
			if (!ok) {
				tp_leave(p);
				return false;
			}
			n++;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	tp_leave(p);
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in array literal"))
		return false;
	if (n != s->dims[dim])
		return tp_fail_at(p, NCC_ERR_PARSE, line, col,
			          "literal has %lld elements in dimension %d, the shape says %lld",
			          (long long)n, dim, (long long)s->dims[dim]);
	return true;
}

/* Literal of array shape s into lit (already zeroed). */
static bool parse_array_literal(parser_t *p, const ncc_shape_t *s, ncc_literal_t *lit)
{
	lit->present = true;
	lit->etype = s->etype;
	if (!ncc_etype_is_array(s->etype))
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "constant of type %s cannot hold a literal", ncc_etype_name(s->etype));
	/* elided large constant: "{...}" */
	if (p->tok.kind == NCC_TOK_LBRACE && tp_peek_kind(p) == NCC_TOK_ELLIPSIS) {
		tp_next(p);
		tp_next(p);
		lit->elided = true;
		lit->count = ncc_shape_elements(s);
		return tp_expect(p, NCC_TOK_RBRACE, "'}' after '...'");
	}
	/* old dumps prefix arrays with their shape: "f32[2] {1, 2}" */
	if (s->rank > 0 && p->tok.kind == NCC_TOK_IDENT && tp_peek_kind(p) == NCC_TOK_LSQUARE) {
		ncc_shape_t again;
		int line = p->tok.line, col = p->tok.col;
		if (!tp_parse_shape(p, &again))
			return false;
		if (!ncc_shape_equal(&again, s, false))
			return tp_fail_at(p, NCC_ERR_PARSE, line, col,
				          "literal shape differs from the instruction's shape");
	}
	int64_t count = ncc_shape_elements(s);
	size_t es = ncc_etype_storage_bytes(s->etype);
	for (int i = 0; i < s->rank; i++)
		if (s->dynamic[i])
			return tp_fail_at(p, NCC_ERR_UNSUPPORTED, p->tok.line, p->tok.col,
				          "constants of dynamic shape are not supported");
	/* every element needs at least one character of text: refuse before allocating */
	size_t left = p->lx.len - p->tok.pos;
	if (count < 0 || (uint64_t)count > left || (uint64_t)count * es > NCC_PARSE_MAX_LITERAL_BYTES)
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "literal of %lld elements is larger than the remaining input",
			          (long long)count);
	if (ncc_literal_init(p->m, lit, s->etype, count) != NCC_OK)
		return tp_nomem(p);
	if (s->rank == 0)
		return parse_scalar(p, s->etype, lit->data);
	lit_ctx_t c = { lit, 0 };
	return parse_lit_dim(p, s, 0, &c);
}

/* Tuple literals "(lit, lit)": leaves stored back to back. */
bool tp_parse_literal(parser_t *p, const ncc_shape_t *s, ncc_literal_t *lit)
{
	memset(lit, 0, sizeof(*lit));
	if (s->etype != NCC_TUPLE)
		return parse_array_literal(p, s, lit);
	if (!tp_enter(p))
		return false;
	bool ok = tp_expect(p, NCC_TOK_LPAREN, "'(' starting a tuple literal");
	ncc_literal_t acc;
	memset(&acc, 0, sizeof(acc));
	acc.present = true;
	acc.etype = NCC_TUPLE;
	for (int32_t i = 0; ok && i < s->nelems; i++) {
		if (i && !(ok = tp_expect(p, NCC_TOK_COMMA, "',' in tuple literal")))
			break;
		ncc_literal_t e;
		if (!(ok = tp_parse_literal(p, &s->elems[i], &e)))
			break;
		if (ncc__literal_append(p->m, &acc, &e) != NCC_OK) {
			ok = tp_nomem(p);
			break;
		}
		acc.elided |= e.elided;
	}
	if (ok)
		ok = tp_expect(p, NCC_TOK_RPAREN, "')' closing a tuple literal");
	*lit = acc;
	tp_leave(p);
	return ok;
}

