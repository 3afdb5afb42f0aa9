/* ncc HLO text parser: recursive descent over the lexer's tokens, building an ncc IR module. */
#include "hlo_parser.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_lexer.h"

/* shared with ir.c, not API */
uint32_t ncc__minifloat_encode(ncc_etype_t t, double v);
ncc_status_t ncc__comp_create_unchecked(ncc_module_t *m, const char *name, bool is_entry,
					ncc_comp_t **out_comp);

/* ------------------------------------------------------------ name tables */

/* Open-addressing map from name to pointer: the corpus has computations with ~4,000
 * instructions, so linear lookups per operand would be quadratic. */
typedef struct name_map {
	const char **keys;
	void **vals;
	size_t cap, n;
} name_map_t;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static void map_clear(name_map_t *m)
{
	if (m->keys)
		memset(m->keys, 0, sizeof(*m->keys) * m->cap);
	m->n = 0;
}

static void map_free(name_map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static void *map_get(const name_map_t *m, const char *k)
{
	if (!m->cap)
		return NULL;
	for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return NULL;
		if (strcmp(m->keys[i], k) == 0)
			return m->vals[i];
	}
}

/* key must outlive the map (it is an arena string). false on OOM. */
static bool map_put(name_map_t *m, const char *k, void *v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		const char **nk = ncc__calloc(cap, sizeof(*nk));
		void **nv = ncc__calloc(cap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return false;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->keys[i])
				continue;
			size_t j = hash_str(m->keys[i]) & (cap - 1);
			while (nk[j])
				j = (j + 1) & (cap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = cap;
	}
	size_t i = hash_str(k) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], k) != 0)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
	return true;
}

/* ------------------------------------------------------------------ parser */

typedef struct pending_ref {
	ncc_comp_t **slot;
	const char *name;
	int line, col;
} pending_ref_t;

typedef struct parser {
	ncc_lexer_t lx;
	ncc_token_t tok;     /* lookahead */
	size_t prev_end;     /* byte offset just past the last consumed token */
	ncc_module_t *m;
	ncc_error_t *err;
	const char *filename;
	bool failed;
	ncc_status_t status; /* of the first failure */
	int depth;
	name_map_t insts;    /* current computation's instructions */
	name_map_t all_names;/* every instruction name in the module: XLA keeps them unique */
	name_map_t comps;
	pending_ref_t *pend;
	size_t npend, cap_pend;
	ncc_inst_t **opbuf;  /* operand scratch */
	size_t cap_opbuf;
} parser_t;

static void next(parser_t *p)
{
	p->prev_end = p->tok.pos + p->tok.len;
	if (p->tok.kind == NCC_TOK_NAME)
		p->prev_end++; /* the '%' */
	if (p->tok.kind == NCC_TOK_STRING)
		p->prev_end += 2;
	p->tok = ncc_lex_next(&p->lx);
}

static void tok_desc(const ncc_token_t *t, char *buf, size_t size)
{
	if (t->kind == NCC_TOK_EOF) {
		snprintf(buf, size, "end of input");
		return;
	}
	const char *s = t->text;
	size_t len = t->len;
	if (t->kind == NCC_TOK_NAME) {
		s--;
		len++;
	} else if (t->kind == NCC_TOK_STRING) {
		s--;
		len += 2;
	}
	size_t o = 0;
	buf[o++] = '\'';
	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i >= 40) {
			o += (size_t)snprintf(buf + o, size - o, "...");
			break;
		}
		if (c < 32 || c >= 127)
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (len == 0 && t->kind == NCC_TOK_ERROR && o + 8 < size)
		o += (size_t)snprintf(buf + o, size - o, "?");
	buf[o++] = '\'';
	buf[o] = 0;
}

static bool fail_at(parser_t *p, ncc_status_t st, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static bool fail_at(parser_t *p, ncc_status_t st, int line, int col, const char *fmt, ...)
{
	if (p->failed)
		return false;
	p->failed = true;
	p->status = st;
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ncc_error_set(p->err, st, line, col, "%s:%d:%d: error: %s", p->filename, line, col, msg);
	return false;
}

/* "expected X, got 'TOKEN'" at the current token */
static bool expected(parser_t *p, const char *what)
{
	char d[128];
	tok_desc(&p->tok, d, sizeof(d));
	if (p->tok.kind == NCC_TOK_ERROR && p->tok.len >= 1 && p->tok.text[0] == '"')
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "expected %s, got an unterminated string", what);
	if (p->tok.kind == NCC_TOK_ERROR && p->tok.len >= 2 && p->tok.text[0] == '/')
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "expected %s, got an unterminated comment", what);
	return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col, "expected %s, got %s", what, d);
}

static bool nomem(parser_t *p)
{
	return fail_at(p, NCC_ERR_NOMEM, p->tok.line, p->tok.col, "out of memory");
}

/* Grows *arr to cap elements of elem bytes: a LIMIT error past limit elements (hostile
 * input), a NOMEM error if the allocation fails. */
static bool grow(parser_t *p, void *arr, size_t elem, size_t cap, size_t limit, const char *what)
{
	if (cap > limit)
		return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "%s exceeds %zu entries", what,
			       limit);
	void *n = ncc__realloc(*(void **)arr, elem * cap);
	if (!n)
		return nomem(p);
	*(void **)arr = n;
	return true;
}

static bool accept(parser_t *p, ncc_tok_kind_t k)
{
	if (p->tok.kind != k)
		return false;
	next(p);
	return true;
}

static bool expect(parser_t *p, ncc_tok_kind_t k, const char *what)
{
	if (p->tok.kind != k)
		return expected(p, what);
	next(p);
	return true;
}

static bool tok_is(const ncc_token_t *t, const char *s)
{
	return t->kind == NCC_TOK_IDENT && strlen(s) == t->len && memcmp(t->text, s, t->len) == 0;
}

static char *tok_dup(parser_t *p, const ncc_token_t *t)
{
	char *s = ncc_strndup(p->m, t->text, t->len);
	if (!s)
		nomem(p);
	return s;
}

/* Two-token lookahead without consuming: the kind of the token after the current. */
static ncc_tok_kind_t peek_kind(parser_t *p)
{
	ncc_lexer_t save = p->lx;
	ncc_token_t t = ncc_lex_next(&p->lx);
	p->lx = save;
	return t.kind;
}

static bool enter(parser_t *p)
{
	if (++p->depth > NCC_PARSE_MAX_DEPTH)
		return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
			       "nesting deeper than %d levels", NCC_PARSE_MAX_DEPTH);
	return true;
}

static void leave(parser_t *p) { p->depth--; }

/* --------------------------------------------------------------- numbers */

static bool parse_i64_text(const char *s, size_t len, int64_t *out)
{
	char buf[64];
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	char *end;
	long long v = strtoll(buf, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool parse_int(parser_t *p, int64_t *out, const char *what)
{
	if (p->tok.kind != NCC_TOK_INT)
		return expected(p, what);
	if (!parse_i64_text(p->tok.text, p->tok.len, out))
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "integer '%.*s' out of range", (int)(p->tok.len > 40 ? 40 : p->tok.len),
			       p->tok.text);
	next(p);
	return true;
}

static bool parse_nonneg(parser_t *p, int64_t *out, const char *what)
{
	int line = p->tok.line, col = p->tok.col;
	if (!parse_int(p, out, what))
		return false;
	if (*out < 0)
		return fail_at(p, NCC_ERR_PARSE, line, col, "expected %s, got negative %lld", what,
			       (long long)*out);
	return true;
}

static bool parse_double_tok(const ncc_token_t *t, double *out)
{
	char buf[128];
	const char *s = t->text;
	size_t len = t->len;
	if (t->kind == NCC_TOK_IDENT) {
		bool neg = len && s[0] == '-';
		const char *w = neg ? s + 1 : s;
		size_t wl = neg ? len - 1 : len;
		if ((wl == 3 && memcmp(w, "inf", 3) == 0) || (wl == 8 && memcmp(w, "infinity", 8) == 0)) {
			*out = neg ? -INFINITY : INFINITY;
			return true;
		}
		if (wl == 3 && memcmp(w, "nan", 3) == 0) {
			*out = neg ? -NAN : NAN;
			return true;
		}
		/* nan(0x...) payloads are not produced by the dumps we read */
		return false;
	}
	if (t->kind != NCC_TOK_INT && t->kind != NCC_TOK_FLOAT)
		return false;
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	char *end;
	*out = strtod(buf, &end);
	return *end == 0;
}

static bool parse_double(parser_t *p, double *out, const char *what)
{
	if (!parse_double_tok(&p->tok, out))
		return expected(p, what);
	next(p);
	return true;
}

static bool parse_bool(parser_t *p, bool *out)
{
	if (tok_is(&p->tok, "true"))
		*out = true;
	else if (tok_is(&p->tok, "false"))
		*out = false;
	else
		return expected(p, "'true' or 'false'");
	next(p);
	return true;
}

/* Decodes a string token's escapes into the arena. */
static bool parse_string(parser_t *p, const char **out, const char *what)
{
	if (p->tok.kind != NCC_TOK_STRING)
		return expected(p, what);
	char *s = ncc_alloc(p->m, p->tok.len + 1);
	if (!s)
		return nomem(p);
	size_t o = 0;
	for (size_t i = 0; i < p->tok.len; i++) {
		char c = p->tok.text[i];
		if (c == '\\' && i + 1 < p->tok.len) {
			char e = p->tok.text[++i];
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '"': case '\\': case '\'': c = e; break;
			default:
				/* other escapes are kept verbatim: decoding \0 would cut the string */
				s[o++] = '\\';
				c = e;
				break;
			}
		}
		s[o++] = c;
	}
	s[o] = 0;
	*out = s;
	next(p);
	return true;
}

/* ------------------------------------------------------------------ shapes */

static bool parse_shape(parser_t *p, ncc_shape_t *out);

/* Layout "{1,0}" / "{1,0:T(8,128)S(1)}"; the current token is '{'. */
static bool parse_layout(parser_t *p, ncc_shape_t *s)
{
	int line = p->tok.line, col = p->tok.col;
	next(p);
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_INT) {
		int64_t v;
		if (!parse_int(p, &v, "layout dimension"))
			return false;
		if (n >= NCC_MAX_RANK || v < 0 || v >= NCC_MAX_RANK)
			return fail_at(p, NCC_ERR_PARSE, line, col, "layout entry %lld invalid for rank %d",
				       (long long)v, (int)s->rank);
		s->minor_to_major[n++] = (int32_t)v;
		if (!accept(p, NCC_TOK_COMMA))
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
			return nomem(p);
		p->tok = ncc_lex_next(&p->lx);
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' closing the layout"))
		return false;
	if (n != s->rank)
		return fail_at(p, NCC_ERR_PARSE, line, col,
			       "layout has %d entries but the shape has rank %d", (int)n, (int)s->rank);
	s->has_layout = true;
	return true;
}

static bool parse_shape(parser_t *p, ncc_shape_t *out)
{
	memset(out, 0, sizeof(*out));
	if (p->tok.kind == NCC_TOK_LPAREN) {
		if (!enter(p))
			return false;
		next(p);
		out->etype = NCC_TUPLE;
		ncc_shape_t *elems = NULL;
		int32_t n = 0, cap = 0;
		bool ok = true;
		if (p->tok.kind != NCC_TOK_RPAREN) {
			for (;;) {
				if (n == cap) {
					int32_t nc = cap ? cap * 2 : 4;
					if (nc > (1 << 20)) {
						ok = fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
							     "tuple has too many elements");
						break;
					}
					ncc_shape_t *ne = ncc__realloc(elems, sizeof(*ne) * (size_t)nc);
					if (!ne) {
						ok = nomem(p);
						break;
					}
					elems = ne;
					cap = nc;
				}
				if (!parse_shape(p, &elems[n])) {
					ok = false;
					break;
				}
				n++;
				if (!accept(p, NCC_TOK_COMMA))
					break;
			}
		}
		if (ok)
			ok = expect(p, NCC_TOK_RPAREN, "')' or ',' in tuple shape");
		if (ok && n) {
			out->elems = ncc_alloc(p->m, sizeof(ncc_shape_t) * (size_t)n);
			if (!out->elems)
				ok = nomem(p);
			else
				memcpy(out->elems, elems, sizeof(ncc_shape_t) * (size_t)n);
		}
		out->nelems = n;
		free(elems);
		leave(p);
		return ok;
	}
	if (p->tok.kind != NCC_TOK_IDENT)
		return expected(p, "shape");
	ncc_etype_t t = ncc_etype_from_name(p->tok.text, p->tok.len);
	if (t == NCC_INVALID)
		return expected(p, "element type (f32, bf16, s32, pred, ...)");
	out->etype = t;
	next(p);
	if (!expect(p, NCC_TOK_LSQUARE, "'[' after the element type"))
		return false;
	if (p->tok.kind != NCC_TOK_RSQUARE) {
		for (;;) {
			if (out->rank >= NCC_MAX_RANK)
				return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
					       "rank exceeds the limit of %d", NCC_MAX_RANK);
			int i = out->rank;
			if (accept(p, NCC_TOK_QUESTION)) {
				out->dims[i] = NCC_DIM_UNBOUNDED;
				out->dynamic[i] = true;
			} else {
				if (accept(p, NCC_TOK_LEQ))
					out->dynamic[i] = true;
				if (!parse_nonneg(p, &out->dims[i], "dimension size"))
					return false;
			}
			out->rank++;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (!expect(p, NCC_TOK_RSQUARE, "']' or ',' in dimensions"))
		return false;
	/* a '{' is a layout only if an integer, ':' or '}' follows: after a signature's
	 * result shape the computation body's '{' comes next */
	if (p->tok.kind == NCC_TOK_LBRACE) {
		ncc_tok_kind_t k = peek_kind(p);
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
		if (tok_is(&tk, "true") || (tk.kind == NCC_TOK_INT && tk.len == 1 && tk.text[0] == '1'))
			*dst = 1;
		else if (tok_is(&tk, "false") || (tk.kind == NCC_TOK_INT && tk.len == 1 && tk.text[0] == '0'))
			*dst = 0;
		else
			return expected(p, "pred value (true/false)");
		next(p);
		return true;
	}
	if (tk.kind != NCC_TOK_INT)
		return expected(p, "integer literal");
	char buf[64];
	if (tk.len >= sizeof(buf))
		return fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "integer literal too long");
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
			return fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				       buf, ncc_etype_name(t));
		u = (uint64_t)v;
	} else {
		if (buf[0] == '-')
			return fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				       buf, ncc_etype_name(t));
		unsigned long long v = strtoull(buf, &end, 0);
		if (errno || *end || (bits < 64 && v > (1ull << bits) - 1))
			return fail_at(p, NCC_ERR_PARSE, tk.line, tk.col, "value %s out of range for %s",
				       buf, ncc_etype_name(t));
		u = v;
	}
	switch (es) {
	case 1: dst[0] = (uint8_t)u; break;
	case 2: { uint16_t x = (uint16_t)u; memcpy(dst, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)u; memcpy(dst, &x, 4); break; }
	default: memcpy(dst, &u, 8); break;
	}
	next(p);
	return true;
}

static bool store_float(parser_t *p, ncc_etype_t t, uint8_t *dst)
{
	const ncc_token_t tk = p->tok;
	double d;
	if (!parse_double_tok(&tk, &d))
		return expected(p, "floating-point literal");
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
	next(p);
	/* XLA writes NaNs with a payload as nan(0x...): accepted, payload not kept */
	if (isnan(d) && p->tok.kind == NCC_TOK_LPAREN) {
		next(p);
		if (p->tok.kind != NCC_TOK_INT)
			return expected(p, "NaN payload");
		next(p);
		return expect(p, NCC_TOK_RPAREN, "')' after NaN payload");
	}
	return true;
}

static bool parse_scalar(parser_t *p, ncc_etype_t t, uint8_t *dst)
{
	if (ncc_etype_is_complex(t)) {
		/* (re, im) */
		size_t half = ncc_etype_storage_bytes(t) / 2;
		if (!expect(p, NCC_TOK_LPAREN, "'(' starting a complex value"))
			return false;
		if (!store_float(p, t, dst))
			return false;
		if (!expect(p, NCC_TOK_COMMA, "',' in a complex value"))
			return false;
		if (!store_float(p, t, dst + half))
			return false;
		return expect(p, NCC_TOK_RPAREN, "')' closing a complex value");
	}
	if (ncc_etype_is_float(t))
		return store_float(p, t, dst);
	if (ncc_etype_is_integral(t) || t == NCC_PRED)
		return store_int_elem(p, t, dst);
	return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col, "%s has no literal values",
		       ncc_etype_name(t));
}

static bool parse_lit_dim(parser_t *p, const ncc_shape_t *s, int dim, lit_ctx_t *c)
{
	if (!enter(p))
		return false;
	int line = p->tok.line, col = p->tok.col;
	if (!expect(p, NCC_TOK_LBRACE, "'{' in array literal")) {
		leave(p);
		return false;
	}
	int64_t n = 0;
	size_t es = ncc_etype_storage_bytes(s->etype);
	if (p->tok.kind != NCC_TOK_RBRACE) {
		for (;;) {
			if (n >= s->dims[dim]) {
				leave(p);
				return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
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
				leave(p);
				return false;
			}
			n++;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	leave(p);
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in array literal"))
		return false;
	if (n != s->dims[dim])
		return fail_at(p, NCC_ERR_PARSE, line, col,
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
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "constant of type %s cannot hold a literal", ncc_etype_name(s->etype));
	/* elided large constant: "{...}" */
	if (p->tok.kind == NCC_TOK_LBRACE && peek_kind(p) == NCC_TOK_ELLIPSIS) {
		next(p);
		next(p);
		lit->elided = true;
		lit->count = ncc_shape_elements(s);
		return expect(p, NCC_TOK_RBRACE, "'}' after '...'");
	}
	/* old dumps prefix arrays with their shape: "f32[2] {1, 2}" */
	if (s->rank > 0 && p->tok.kind == NCC_TOK_IDENT && peek_kind(p) == NCC_TOK_LSQUARE) {
		ncc_shape_t again;
		int line = p->tok.line, col = p->tok.col;
		if (!parse_shape(p, &again))
			return false;
		if (!ncc_shape_equal(&again, s, false))
			return fail_at(p, NCC_ERR_PARSE, line, col,
				       "literal shape differs from the instruction's shape");
	}
	int64_t count = ncc_shape_elements(s);
	size_t es = ncc_etype_storage_bytes(s->etype);
	for (int i = 0; i < s->rank; i++)
		if (s->dynamic[i])
			return fail_at(p, NCC_ERR_UNSUPPORTED, p->tok.line, p->tok.col,
				       "constants of dynamic shape are not supported");
	/* every element needs at least one character of text: refuse before allocating */
	size_t left = p->lx.len - p->tok.pos;
	if (count < 0 || (uint64_t)count > left || (uint64_t)count * es > NCC_PARSE_MAX_LITERAL_BYTES)
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "literal of %lld elements is larger than the remaining input",
			       (long long)count);
	if (ncc_literal_init(p->m, lit, s->etype, count) != NCC_OK)
		return nomem(p);
	if (s->rank == 0)
		return parse_scalar(p, s->etype, lit->data);
	lit_ctx_t c = { lit, 0 };
	return parse_lit_dim(p, s, 0, &c);
}

/* Tuple literals "(lit, lit)": leaves stored back to back. */
static bool parse_literal(parser_t *p, const ncc_shape_t *s, ncc_literal_t *lit)
{
	memset(lit, 0, sizeof(*lit));
	if (s->etype != NCC_TUPLE)
		return parse_array_literal(p, s, lit);
	if (!enter(p))
		return false;
	bool ok = expect(p, NCC_TOK_LPAREN, "'(' starting a tuple literal");
	ncc_literal_t acc;
	memset(&acc, 0, sizeof(acc));
	acc.present = true;
	acc.etype = NCC_TUPLE;
	for (int32_t i = 0; ok && i < s->nelems; i++) {
		if (i && !(ok = expect(p, NCC_TOK_COMMA, "',' in tuple literal")))
			break;
		ncc_literal_t e;
		if (!(ok = parse_literal(p, &s->elems[i], &e)))
			break;
		if (e.nbytes) {
			uint8_t *nd = ncc_alloc(p->m, acc.nbytes + e.nbytes);
			if (!nd) {
				ok = nomem(p);
				break;
			}
			if (acc.nbytes)
				memcpy(nd, acc.data, acc.nbytes);
			memcpy(nd + acc.nbytes, e.data, e.nbytes);
			acc.data = nd;
			acc.nbytes += e.nbytes;
		}
		acc.count += e.count;
		acc.elided |= e.elided;
	}
	if (ok)
		ok = expect(p, NCC_TOK_RPAREN, "')' closing a tuple literal");
	*lit = acc;
	leave(p);
	return ok;
}

/* ------------------------------------------------------------- attributes */

static bool parse_ilist(parser_t *p, ncc_ilist_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting a list of integers"))
		return false;
	int64_t *v = NULL;
	int32_t n = 0, cap = 0;
	bool ok = true;
	if (p->tok.kind != NCC_TOK_RBRACE) {
		for (;;) {
			if (n == cap) {
				int32_t nc = cap ? cap * 2 : 8;
				if (!(ok = grow(p, &v, sizeof(*v), (size_t)nc, 1 << 22, "list of integers")))
					break;
				cap = nc;
			}
			if (!(ok = parse_int(p, &v[n], "integer")))
				break;
			n++;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (ok)
		ok = expect(p, NCC_TOK_RBRACE, "'}' or ',' in list of integers");
	if (ok && n) {
		out->v = ncc_alloc(p->m, sizeof(int64_t) * (size_t)n);
		if (!out->v)
			ok = nomem(p);
		else
			memcpy(out->v, v, sizeof(int64_t) * (size_t)n);
	}
	free(v);
	if (!ok)
		return false;
	out->present = true;
	out->n = n;
	return true;
}

static bool add_pending(parser_t *p, ncc_comp_t **slot)
{
	if (p->tok.kind != NCC_TOK_NAME && p->tok.kind != NCC_TOK_IDENT)
		return expected(p, "computation name");
	if (p->npend == p->cap_pend) {
		size_t nc = p->cap_pend ? p->cap_pend * 2 : 64;
		pending_ref_t *np = ncc__realloc(p->pend, sizeof(*np) * nc);
		if (!np)
			return nomem(p);
		p->pend = np;
		p->cap_pend = nc;
	}
	pending_ref_t *r = &p->pend[p->npend];
	r->slot = slot;
	r->line = p->tok.line;
	r->col = p->tok.col;
	r->name = tok_dup(p, &p->tok);
	if (!r->name)
		return false;
	p->npend++;
	next(p);
	return true;
}

static bool parse_comp_list(parser_t *p, ncc_comp_t ***out, int32_t *out_n)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting a list of computations"))
		return false;
	/* count first so the slots can live in the arena and never move */
	ncc_lexer_t save = p->lx;
	ncc_token_t stok = p->tok;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_NAME || p->tok.kind == NCC_TOK_IDENT) {
		n++;
		next(p);
		if (!accept(p, NCC_TOK_COMMA))
			break;
		if (n > 1 << 16)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many computations");
	}
	p->lx = save;
	p->tok = stok;
	ncc_comp_t **arr = n ? ncc_alloc(p->m, sizeof(*arr) * (size_t)n) : NULL;
	if (n && !arr)
		return nomem(p);
	for (int32_t i = 0; i < n; i++) {
		if (!add_pending(p, &arr[i]))
			return false;
		if (i + 1 < n)
			next(p); /* the comma */
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in list of computations"))
		return false;
	*out = arr;
	*out_n = n;
	return true;
}

/* Values with their own micro-syntax are re-read as one raw word. */
static bool raw_word(parser_t *p, ncc_token_t *out, const char *what)
{
	if (p->tok.kind == NCC_TOK_EOF || p->tok.kind == NCC_TOK_RBRACE || p->tok.kind == NCC_TOK_COMMA)
		return expected(p, what);
	ncc_lex_reset_to(&p->lx, &p->tok);
	*out = ncc_lex_raw_word(&p->lx);
	if (out->kind != NCC_TOK_IDENT) {
		p->tok = *out;
		return expected(p, what);
	}
	p->prev_end = out->pos + out->len;
	p->tok = ncc_lex_next(&p->lx);
	return true;
}

/* Splits "3x3" / "1_1x0_0" into up to max int groups of `per` numbers separated
 * by '_'. Returns the number of groups or -1. */
static int split_dims(const ncc_token_t *w, int per, int64_t *vals, int max)
{
	const char *s = w->text, *e = w->text + w->len;
	int groups = 0;
	while (s < e) {
		if (groups >= max)
			return -1;
		for (int k = 0; k < per; k++) {
			const char *q = s;
			if (q < e && *q == '-')
				q++;
			const char *ds = q;
			while (q < e && *q >= '0' && *q <= '9')
				q++;
			if (q == ds || q - s > 19)
				return -1;
			int64_t v;
			if (!parse_i64_text(s, (size_t)(q - s), &v))
				return -1;
			vals[groups * per + k] = v;
			s = q;
			if (k + 1 < per) {
				if (s >= e || *s != '_')
					return -1;
				s++;
			}
		}
		groups++;
		if (s < e) {
			if (*s != 'x')
				return -1;
			s++;
			if (s >= e)
				return -1;
		}
	}
	return groups;
}

static bool parse_window(parser_t *p, ncc_inst_t *inst)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting window"))
		return false;
	ncc_window_t *w = ncc_alloc(p->m, sizeof(*w));
	if (!w)
		return nomem(p);
	inst->window = w;
	int64_t size[NCC_MAX_RANK], stride[NCC_MAX_RANK], pad[2 * NCC_MAX_RANK];
	int64_t ld[NCC_MAX_RANK], rd[NCC_MAX_RANK], rev[NCC_MAX_RANK];
	int nsize = -1, nstride = -1, npad = -1, nld = -1, nrd = -1, nrev = -1;
	while (p->tok.kind == NCC_TOK_IDENT) {
		ncc_token_t key = p->tok;
		next(p);
		if (!expect(p, NCC_TOK_EQUAL, "'=' in window"))
			return false;
		ncc_token_t w2;
		if (!raw_word(p, &w2, "window dimensions like 3x3"))
			return false;
		int *cnt;
		int64_t *dst;
		int per = 1;
		if (tok_is(&key, "size")) { cnt = &nsize; dst = size; }
		else if (tok_is(&key, "stride")) { cnt = &nstride; dst = stride; }
		else if (tok_is(&key, "pad")) { cnt = &npad; dst = pad; per = 2; }
		else if (tok_is(&key, "lhs_dilate")) { cnt = &nld; dst = ld; }
		else if (tok_is(&key, "rhs_dilate")) { cnt = &nrd; dst = rd; }
		else if (tok_is(&key, "rhs_reversal")) { cnt = &nrev; dst = rev; }
		else
			return fail_at(p, NCC_ERR_PARSE, key.line, key.col,
				       "unknown window field '%.*s' (expected size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)",
				       (int)(key.len > 40 ? 40 : key.len), key.text);
		*cnt = split_dims(&w2, per, dst, NCC_MAX_RANK);
		if (*cnt < 0)
			return fail_at(p, NCC_ERR_PARSE, w2.line, w2.col,
				       "malformed window %.*s '%.*s'", (int)key.len, key.text,
				       (int)(w2.len > 40 ? 40 : w2.len), w2.text);
	}
	if (!expect(p, NCC_TOK_RBRACE, "window field or '}'"))
		return false;
	int n = nsize < 0 ? 0 : nsize;
	int cnts[5] = { nstride, npad, nld, nrd, nrev };
	for (int i = 0; i < 5; i++)
		if (cnts[i] >= 0 && cnts[i] != n)
			return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				       "window fields have different numbers of dimensions (%d vs size %d)",
				       cnts[i], n);
	w->n = n;
	if (n) {
		w->dims = ncc_alloc(p->m, sizeof(*w->dims) * (size_t)n);
		if (!w->dims)
			return nomem(p);
	}
	for (int i = 0; i < n; i++) {
		ncc_window_dim_t *d = &w->dims[i];
		d->size = size[i];
		d->stride = nstride >= 0 ? stride[i] : 1;
		d->pad_lo = npad >= 0 ? pad[2 * i] : 0;
		d->pad_hi = npad >= 0 ? pad[2 * i + 1] : 0;
		d->lhs_dilation = nld >= 0 ? ld[i] : 1;
		d->rhs_dilation = nrd >= 0 ? rd[i] : 1;
		d->reversal = nrev >= 0 ? rev[i] != 0 : false;
	}
	return true;
}

/* One part of dim_labels, e.g. "bf01": fills the two named dims and the spatial
 * dims; returns the number of spatial dims or -1. */
static int parse_label_part(const char *s, size_t len, char a, char b, int64_t *da, int64_t *db,
			    int64_t *sp)
{
	if (len < 2 || len > NCC_MAX_RANK)
		return -1;
	bool seen[NCC_MAX_RANK] = { false };
	*da = *db = -1;
	int nsp = (int)len - 2;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == a && *da < 0)
			*da = (int64_t)i;
		else if (c == b && *db < 0)
			*db = (int64_t)i;
		else if (c >= '0' && c <= '9' && c - '0' < nsp && !seen[c - '0']) {
			seen[c - '0'] = true;
			sp[c - '0'] = (int64_t)i;
		} else
			return -1;
	}
	return *da >= 0 && *db >= 0 ? nsp : -1;
}

static bool parse_dim_labels(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t w;
	if (!raw_word(p, &w, "dim_labels like bf01_oi01->bf01"))
		return false;
	ncc_conv_dnums_t *c = ncc_alloc(p->m, sizeof(*c));
	if (!c)
		return nomem(p);
	const char *s = w.text, *e = w.text + w.len;
	const char *us = memchr(s, '_', w.len);
	const char *ar = NULL;
	for (const char *q = s; q + 1 < e; q++)
		if (q[0] == '-' && q[1] == '>') {
			ar = q;
			break;
		}
	int n1 = -1, n2 = -1, n3 = -1;
	if (us && ar && us < ar) {
		n1 = parse_label_part(s, (size_t)(us - s), 'b', 'f', &c->in_batch, &c->in_feature,
				      c->in_spatial);
		n2 = parse_label_part(us + 1, (size_t)(ar - us - 1), 'i', 'o', &c->k_in_feature,
				      &c->k_out_feature, c->k_spatial);
		n3 = parse_label_part(ar + 2, (size_t)(e - ar - 2), 'b', 'f', &c->out_batch,
				      &c->out_feature, c->out_spatial);
	}
	if (n1 < 0 || n1 != n2 || n1 != n3)
		return fail_at(p, NCC_ERR_PARSE, w.line, w.col,
			       "malformed dim_labels '%.*s' (expected e.g. bf01_oi01->bf01)",
			       (int)(w.len > 40 ? 40 : w.len), w.text);
	c->nspatial = n1;
	inst->conv = c;
	return true;
}

static bool parse_padding(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t w;
	if (!raw_word(p, &w, "padding like 0_0x1_1"))
		return false;
	int64_t v[3 * NCC_MAX_RANK];
	/* each dim is lo_hi or lo_hi_interior; normalise by trying the 3-form per group */
	ncc_pad_dim_t dims[NCC_MAX_RANK];
	int n = 0;
	const char *s = w.text, *e = w.text + w.len;
	while (s < e) {
		const char *g = s;
		while (g < e && *g != 'x')
			g++;
		ncc_token_t part = w;
		part.text = s;
		part.len = (size_t)(g - s);
		int cnt = split_dims(&part, 3, v, 1);
		if (cnt != 1) {
			cnt = split_dims(&part, 2, v, 1);
			v[2] = 0;
		}
		if (cnt != 1 || n >= NCC_MAX_RANK)
			return fail_at(p, NCC_ERR_PARSE, w.line, w.col,
				       "malformed padding '%.*s' (expected lo_hi[_interior] per dimension, separated by x)",
				       (int)(w.len > 40 ? 40 : w.len), w.text);
		dims[n].lo = v[0];
		dims[n].hi = v[1];
		dims[n].interior = v[2];
		n++;
		s = g < e ? g + 1 : g;
		if (g < e && s >= e)
			return fail_at(p, NCC_ERR_PARSE, w.line, w.col, "padding ends with 'x'");
	}
	ncc_padding_t *pd = ncc_alloc(p->m, sizeof(*pd));
	if (!pd || !(pd->dims = ncc_alloc(p->m, sizeof(*pd->dims) * (size_t)(n ? n : 1))))
		return nomem(p);
	memcpy(pd->dims, dims, sizeof(*dims) * (size_t)n);
	pd->n = n;
	inst->padding = pd;
	return true;
}

static bool parse_slice(parser_t *p, ncc_inst_t *inst)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting slice"))
		return false;
	ncc_slice_dim_t dims[NCC_MAX_RANK];
	int n = 0;
	while (p->tok.kind == NCC_TOK_LSQUARE) {
		if (n >= NCC_MAX_RANK)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "slice has too many dimensions");
		next(p);
		ncc_slice_dim_t *d = &dims[n];
		if (!parse_int(p, &d->start, "slice start") ||
		    !expect(p, NCC_TOK_COLON, "':' in slice") || !parse_int(p, &d->limit, "slice limit"))
			return false;
		d->stride = 1;
		if (accept(p, NCC_TOK_COLON) && !parse_int(p, &d->stride, "slice stride"))
			return false;
		if (!expect(p, NCC_TOK_RSQUARE, "']' in slice"))
			return false;
		n++;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "'[' or '}' in slice"))
		return false;
	ncc_slice_t *sl = ncc_alloc(p->m, sizeof(*sl));
	if (!sl || !(sl->dims = ncc_alloc(p->m, sizeof(*sl->dims) * (size_t)(n ? n : 1))))
		return nomem(p);
	memcpy(sl->dims, dims, sizeof(*dims) * (size_t)n);
	sl->n = n;
	inst->slice = sl;
	return true;
}

/* replica_groups={{0,1},{2,3}} | {} | [G,S]<=[dims]T(perm) */
static bool parse_replica_groups(parser_t *p, ncc_replica_groups_t *rg)
{
	memset(rg, 0, sizeof(*rg));
	rg->present = true;
	if (p->tok.kind == NCC_TOK_LSQUARE) {
		size_t start = p->tok.pos;
		ncc_ilist_t gs, rd, perm;
		memset(&perm, 0, sizeof(perm));
		/* reuse the ilist parser by faking braces is not possible; read by hand */
		int64_t g[2], r[NCC_MAX_RANK], t[NCC_MAX_RANK];
		int ng = 0, nr = 0, nt = 0;
		next(p);
		while (p->tok.kind == NCC_TOK_INT && ng < 2) {
			if (!parse_nonneg(p, &g[ng++], "group count"))
				return false;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
		if (ng != 2)
			return expected(p, "[groups,size] in iota replica groups");
		if (!expect(p, NCC_TOK_RSQUARE, "']'") || !expect(p, NCC_TOK_LEQ, "'<='") ||
		    !expect(p, NCC_TOK_LSQUARE, "'['"))
			return false;
		while (p->tok.kind == NCC_TOK_INT && nr < NCC_MAX_RANK) {
			if (!parse_nonneg(p, &r[nr++], "reshape dimension"))
				return false;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
		if (!expect(p, NCC_TOK_RSQUARE, "']' in iota replica groups"))
			return false;
		if (tok_is(&p->tok, "T")) {
			next(p);
			if (!expect(p, NCC_TOK_LPAREN, "'(' after T"))
				return false;
			while (p->tok.kind == NCC_TOK_INT && nt < NCC_MAX_RANK) {
				if (!parse_nonneg(p, &t[nt++], "transpose dimension"))
					return false;
				if (!accept(p, NCC_TOK_COMMA))
					break;
			}
			if (!expect(p, NCC_TOK_RPAREN, "')' in iota replica groups"))
				return false;
		}
		(void)gs;
		(void)rd;
		rg->iota_text = ncc_strndup(p->m, p->lx.src + start, p->prev_end - start);
		if (!rg->iota_text)
			return nomem(p);
		/* expand: ids = transpose(reshape(iota(N), r), t) flattened, grouped by g[1] */
		int64_t total = 1;
		for (int i = 0; i < nr; i++) {
			if (r[i] && total > (1 << 20) / r[i])
				return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "replica groups too large");
			total *= r[i];
		}
		if (g[0] * g[1] != total || g[0] > (1 << 20) || (nt && nt != nr))
			return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				       "iota replica groups [%lld,%lld] do not match %lld devices",
				       (long long)g[0], (long long)g[1], (long long)total);
		bool seen[NCC_MAX_RANK] = { false };
		for (int i = 0; i < nt; i++) {
			if (t[i] >= nr || seen[t[i]])
				return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
					       "iota replica groups transpose is not a permutation");
			seen[t[i]] = true;
		}
		rg->ngroups = (int32_t)g[0];
		rg->group_sizes = ncc_alloc(p->m, sizeof(int32_t) * (size_t)(g[0] ? g[0] : 1));
		rg->ids = ncc_alloc(p->m, sizeof(int64_t) * (size_t)(total ? total : 1));
		if (!rg->group_sizes || !rg->ids)
			return nomem(p);
		for (int64_t i = 0; i < g[0]; i++)
			rg->group_sizes[i] = (int32_t)g[1];
		/* out flat index -> coordinates in transposed dims -> source flat index */
		int64_t tdims[NCC_MAX_RANK];
		for (int i = 0; i < nr; i++)
			tdims[i] = r[nt ? t[i] : i];
		for (int64_t o = 0; o < total; o++) {
			int64_t rem = o, coord[NCC_MAX_RANK], src_coord[NCC_MAX_RANK];
			for (int i = nr - 1; i >= 0; i--) {
				coord[i] = tdims[i] ? rem % tdims[i] : 0;
				rem = tdims[i] ? rem / tdims[i] : 0;
			}
			for (int i = 0; i < nr; i++)
				src_coord[nt ? t[i] : i] = coord[i];
			int64_t src = 0;
			for (int i = 0; i < nr; i++)
				src = src * r[i] + src_coord[i];
			rg->ids[o] = src;
		}
		return true;
	}
	if (!expect(p, NCC_TOK_LBRACE, "'{' or '[' starting replica_groups"))
		return false;
	int32_t cap_g = 0, cap_i = 0, nids = 0;
	int32_t *sizes = NULL;
	int64_t *ids = NULL;
	bool ok = true;
	while (ok && p->tok.kind == NCC_TOK_LBRACE) {
		next(p);
		if (rg->ngroups == cap_g) {
			cap_g = cap_g ? cap_g * 2 : 8;
			if (!(ok = grow(p, &sizes, sizeof(*sizes), (size_t)cap_g, 1 << 20, "replica groups")))
				break;
		}
		int32_t n = 0;
		while (p->tok.kind == NCC_TOK_INT) {
			if (nids == cap_i) {
				cap_i = cap_i ? cap_i * 2 : 16;
				if (!(ok = grow(p, &ids, sizeof(*ids), (size_t)cap_i, 1 << 22, "replica ids")))
					break;
			}
			if (!(ok = parse_nonneg(p, &ids[nids], "replica id")))
				break;
			nids++;
			n++;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
		if (ok)
			ok = expect(p, NCC_TOK_RBRACE, "'}' or ',' in replica group");
		if (ok)
			sizes[rg->ngroups++] = n;
		if (ok && !accept(p, NCC_TOK_COMMA))
			break;
	}
	if (ok)
		ok = expect(p, NCC_TOK_RBRACE, "'}' closing replica_groups");
	if (ok && rg->ngroups) {
		rg->group_sizes = ncc_alloc(p->m, sizeof(int32_t) * (size_t)rg->ngroups);
		rg->ids = ncc_alloc(p->m, sizeof(int64_t) * (size_t)(nids ? nids : 1));
		if (!rg->group_sizes || !rg->ids)
			ok = nomem(p);
		else {
			memcpy(rg->group_sizes, sizes, sizeof(int32_t) * (size_t)rg->ngroups);
			if (nids)
				memcpy(rg->ids, ids, sizeof(int64_t) * (size_t)nids);
		}
	}
	free(sizes);
	free(ids);
	return ok;
}

static bool parse_pairs(parser_t *p, ncc_inst_t *inst)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting source_target_pairs"))
		return false;
	int64_t *v = NULL;
	int32_t n = 0, cap = 0;
	bool ok = true;
	while (p->tok.kind == NCC_TOK_LBRACE) {
		next(p);
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if (!(ok = grow(p, &v, 2 * sizeof(*v), (size_t)cap, 1 << 20, "source_target_pairs")))
				break;
		}
		if (!(ok = parse_nonneg(p, &v[2 * n], "source id") &&
			   expect(p, NCC_TOK_COMMA, "',' in pair") &&
			   parse_nonneg(p, &v[2 * n + 1], "target id") &&
			   expect(p, NCC_TOK_RBRACE, "'}' closing pair")))
			break;
		n++;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (ok)
		ok = expect(p, NCC_TOK_RBRACE, "'}' closing source_target_pairs");
	if (ok && n) {
		inst->pairs = ncc_alloc(p->m, sizeof(int64_t) * 2 * (size_t)n);
		if (!inst->pairs)
			ok = nomem(p);
		else
			memcpy(inst->pairs, v, sizeof(int64_t) * 2 * (size_t)n);
	}
	inst->npairs = ok ? n : 0;
	free(v);
	return ok;
}

/* Any value kept verbatim: a balanced {...}/(...)/[...] group, a string (with its
 * quotes), or a raw word. */
static bool capture_raw(parser_t *p, const char **out)
{
	size_t start = p->tok.pos;
	if (p->tok.kind == NCC_TOK_LBRACE || p->tok.kind == NCC_TOK_LPAREN ||
	    p->tok.kind == NCC_TOK_LSQUARE) {
		ncc_lex_reset_to(&p->lx, &p->tok);
		if (!ncc_lex_skip_balanced(&p->lx, NCC_PARSE_MAX_DEPTH))
			return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				       "unbalanced brackets in attribute value");
		size_t end = p->lx.pos;
		p->prev_end = end;
		p->tok = ncc_lex_next(&p->lx);
		*out = ncc_strndup(p->m, p->lx.src + start, end - start);
		return *out ? true : nomem(p);
	}
	if (p->tok.kind == NCC_TOK_STRING) {
		*out = ncc_strndup(p->m, p->lx.src + start, p->tok.len + 2);
		next(p);
		return *out ? true : nomem(p);
	}
	ncc_token_t w;
	if (!raw_word(p, &w, "attribute value"))
		return false;
	*out = ncc_strndup(p->m, w.text, w.len);
	return *out ? true : nomem(p);
}

/* Makes room for element n of an arena array that grows by doubling: the capacity is
 * implied by n (4, 8, 16, ...), so appends cost O(1) amortised arena space. */
static bool arena_append_room(parser_t *p, void *arr, int32_t n, size_t elem)
{
	if (n >= (1 << 24))
		return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many entries");
	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return true; /* still room */
	size_t cap = n == 0 ? 4 : (size_t)n * 2;
	void *na = ncc_alloc(p->m, elem * cap);
	if (!na)
		return nomem(p);
	if (n)
		memcpy(na, *(void **)arr, elem * (size_t)n);
	*(void **)arr = na;
	return true;
}

static bool add_raw_attr(parser_t *p, ncc_raw_attr_t **arr, int32_t *n, const ncc_token_t *key)
{
	const char *text = NULL;
	if (!capture_raw(p, &text))
		return false;
	if (!arena_append_room(p, arr, *n, sizeof(**arr)))
		return false;
	ncc_raw_attr_t *na = *arr;
	na[*n].key = ncc_strndup(p->m, key->text, key->len);
	na[*n].text = text;
	if (!na[*n].key)
		return nomem(p);
	(*n)++;
	return true;
}

static bool parse_metadata(parser_t *p, ncc_metadata_t *md)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting metadata"))
		return false;
	while (p->tok.kind == NCC_TOK_IDENT) {
		ncc_token_t key = p->tok;
		next(p);
		if (!expect(p, NCC_TOK_EQUAL, "'=' in metadata"))
			return false;
		bool ok;
		if (tok_is(&key, "op_type"))
			ok = parse_string(p, &md->op_type, "string for op_type");
		else if (tok_is(&key, "op_name"))
			ok = parse_string(p, &md->op_name, "string for op_name");
		else if (tok_is(&key, "source_file"))
			ok = parse_string(p, &md->source_file, "string for source_file");
		else if (tok_is(&key, "source_line"))
			ok = parse_int(p, &md->source_line, "integer for source_line");
		else {
			/* other metadata (profile_type, deduplicated_name, stack_frame_id, ...):
			 * well-formed values are skipped */
			const char *ignored = NULL;
			ok = capture_raw(p, &ignored);
		}
		if (!ok)
			return false;
		accept(p, NCC_TOK_COMMA);
	}
	return expect(p, NCC_TOK_RBRACE, "metadata field or '}'");
}

static bool parse_frontend_attrs(parser_t *p, ncc_inst_t *inst)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting frontend_attributes"))
		return false;
	ncc_kv_t kv[256];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_IDENT || p->tok.kind == NCC_TOK_STRING) {
		if (n >= 256)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
				       "more than 256 frontend attributes");
		if (p->tok.kind == NCC_TOK_STRING) {
			if (!parse_string(p, &kv[n].key, "key"))
				return false;
		} else {
			if (!(kv[n].key = tok_dup(p, &p->tok)))
				return false;
			next(p);
		}
		if (!expect(p, NCC_TOK_EQUAL, "'=' in frontend_attributes"))
			return false;
		if (p->tok.kind == NCC_TOK_STRING) {
			if (!parse_string(p, &kv[n].value, "string value"))
				return false;
		} else if (!capture_raw(p, &kv[n].value)) {
			return false;
		}
		n++;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in frontend_attributes"))
		return false;
	if (n) {
		inst->frontend_attrs = ncc_alloc(p->m, sizeof(ncc_kv_t) * (size_t)n);
		if (!inst->frontend_attrs)
			return nomem(p);
		memcpy(inst->frontend_attrs, kv, sizeof(ncc_kv_t) * (size_t)n);
	}
	inst->nfrontend_attrs = n;
	return true;
}

static bool parse_enum(parser_t *p, const char *const *names, int n, int first, int *out,
		       const char *what)
{
	if (p->tok.kind == NCC_TOK_IDENT)
		for (int i = 0; i < n; i++)
			if (p->tok.len == strlen(names[i]) &&
			    strncasecmp(p->tok.text, names[i], p->tok.len) == 0) {
				*out = first + i;
				next(p);
				return true;
			}
	return expected(p, what);
}

static bool parse_precision(parser_t *p, ncc_inst_t *inst)
{
	static const char *const names[] = { "default", "high", "highest" };
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting operand_precision"))
		return false;
	ncc_precision_t v[64];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_IDENT && n < 64) {
		int e = 0;
		if (!parse_enum(p, names, 3, 0, &e, "precision (default, high, highest)"))
			return false;
		v[n++] = (ncc_precision_t)e;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "precision or '}'"))
		return false;
	if (n) {
		inst->operand_precision = ncc_alloc(p->m, sizeof(*v) * (size_t)n);
		if (!inst->operand_precision)
			return nomem(p);
		memcpy(inst->operand_precision, v, sizeof(*v) * (size_t)n);
	}
	inst->nprecision = n;
	return true;
}

static bool parse_control_preds(parser_t *p, ncc_inst_t *inst)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting control-predecessors"))
		return false;
	ncc_inst_t *v[256];
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_NAME || p->tok.kind == NCC_TOK_IDENT) {
		if (n >= 256)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many control predecessors");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)p->tok.len, p->tok.text);
		ncc_inst_t *d = map_get(&p->insts, name);
		if (!d)
			return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				       "control predecessor '%s' is not defined before its use", name);
		v[n++] = d;
		next(p);
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in control-predecessors"))
		return false;
	if (n) {
		inst->control_preds = ncc_alloc(p->m, sizeof(*v) * (size_t)n);
		if (!inst->control_preds)
			return nomem(p);
		memcpy(inst->control_preds, v, sizeof(*v) * (size_t)n);
	}
	inst->ncontrol_preds = n;
	return true;
}

static ncc_dot_dnums_t *dot_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->dot && !(inst->dot = ncc_alloc(p->m, sizeof(*inst->dot))))
		nomem(p);
	return inst->dot;
}

static ncc_gather_dnums_t *gather_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->gather && !(inst->gather = ncc_alloc(p->m, sizeof(*inst->gather))))
		nomem(p);
	return inst->gather;
}

static ncc_scatter_dnums_t *scatter_of(parser_t *p, ncc_inst_t *inst)
{
	if (!inst->scatter && !(inst->scatter = ncc_alloc(p->m, sizeof(*inst->scatter))))
		nomem(p);
	return inst->scatter;
}

/* Attributes kept verbatim: valid HLO that the IR does not model. */
static const char *const raw_attr_names[] = {
	"output_to_operand_aliasing", "schedule", "statistics", "outfeed_config",
	"infeed_config", "domain", "operand_layout_constraints", "origin", "is_host_transfer",
	"outfeed_shape", "async_execution_thread", "result_accuracy", "split_dimension",
	"slice_sizes_are_static", "dynamic_slice_sizes_are_static", "padding_type",
	"serialized_hlo_module", "literal", "custom_call_schedule", "kind_name",
	"source_target_pairs_v2", "backend_config_v2", "mode", "dimension", "largest_v2",
	"known_trip_count", "output_layout", "original_value", "parameter_replication",
	"sparsity", "async_group_id", "is_cross_program_prefetch",
	"cross_program_prefetch_index", "wait_on_operation_queues", "result_layout",
	"precision_config", "ragged_all_to_all_config",
};

static bool parse_attr(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t key = p->tok;
	if (key.kind != NCC_TOK_IDENT)
		return expected(p, "attribute name");
	next(p);
	if (!expect(p, NCC_TOK_EQUAL, "'=' after attribute name"))
		return false;
#define K(s) tok_is(&key, s)
	if (K("dimensions"))
		return parse_ilist(p, &inst->dimensions);
	if (K("metadata"))
		return parse_metadata(p, &inst->metadata);
	if (K("index"))
		return parse_nonneg(p, &inst->tuple_index, "tuple index");
	if (K("iota_dimension"))
		return parse_nonneg(p, &inst->iota_dimension, "iota dimension");
	if (K("to_apply"))
		return add_pending(p, &inst->to_apply);
	if (K("condition"))
		return add_pending(p, &inst->condition);
	if (K("body"))
		return add_pending(p, &inst->body);
	if (K("select"))
		return add_pending(p, &inst->select);
	if (K("scatter"))
		return add_pending(p, &inst->scatter_comp);
	if (K("calls")) {
		if (p->tok.kind == NCC_TOK_LBRACE) {
			if (!parse_comp_list(p, &inst->called, &inst->ncalled))
				return false;
			/* calls stays pending-resolved through called[0] after resolution */
			return true;
		}
		return add_pending(p, &inst->calls);
	}
	if (K("called_computations"))
		return parse_comp_list(p, &inst->called, &inst->ncalled);
	if (K("branch_computations")) {
		inst->branches_are_pred = false;
		return parse_comp_list(p, &inst->branches, &inst->nbranches);
	}
	if (K("true_computation") || K("false_computation")) {
		if (!inst->branches) {
			inst->branches = ncc_alloc(p->m, sizeof(*inst->branches) * 2);
			if (!inst->branches)
				return nomem(p);
			inst->nbranches = 2;
			inst->branches_are_pred = true;
		} else if (!inst->branches_are_pred) {
			return fail_at(p, NCC_ERR_PARSE, key.line, key.col,
				       "true/false_computation mixed with branch_computations");
		}
		return add_pending(p, &inst->branches[K("true_computation") ? 0 : 1]);
	}
	if (K("lhs_batch_dims") || K("rhs_batch_dims") || K("lhs_contracting_dims") ||
	    K("rhs_contracting_dims")) {
		ncc_dot_dnums_t *d = dot_of(p, inst);
		if (!d)
			return false;
		return parse_ilist(p, K("lhs_batch_dims") ? &d->lhs_batch :
				   K("rhs_batch_dims") ? &d->rhs_batch :
				   K("lhs_contracting_dims") ? &d->lhs_contracting : &d->rhs_contracting);
	}
	if (K("window"))
		return parse_window(p, inst);
	if (K("dim_labels"))
		return parse_dim_labels(p, inst);
	if (K("feature_group_count"))
		return parse_int(p, &inst->feature_group_count, "feature_group_count");
	if (K("batch_group_count"))
		return parse_int(p, &inst->batch_group_count, "batch_group_count");
	if (K("padding"))
		return parse_padding(p, inst);
	if (K("slice"))
		return parse_slice(p, inst);
	if (K("dynamic_slice_sizes"))
		return parse_ilist(p, &inst->dynamic_slice_sizes);
	if (K("direction")) {
		static const char *const n[] = { "EQ", "NE", "LT", "LE", "GT", "GE" };
		int e = 0;
		if (!parse_enum(p, n, 6, NCC_CMP_EQ, &e, "comparison direction (EQ, NE, LT, LE, GT, GE)"))
			return false;
		inst->cmp_dir = (ncc_cmp_dir_t)e;
		return true;
	}
	if (K("type")) {
		static const char *const n[] = { "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" };
		int e = 0;
		if (!parse_enum(p, n, 4, NCC_CMPT_FLOAT, &e,
				"comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)"))
			return false;
		inst->cmp_type = (ncc_cmp_type_t)e;
		return true;
	}
	if (K("operand_precision"))
		return parse_precision(p, inst);
	if (K("offset_dims") || K("collapsed_slice_dims") || K("start_index_map") ||
	    K("operand_batching_dims") || K("start_indices_batching_dims") || K("slice_sizes")) {
		ncc_gather_dnums_t *g = gather_of(p, inst);
		if (!g)
			return false;
		return parse_ilist(p, K("offset_dims") ? &g->offset_dims :
				   K("collapsed_slice_dims") ? &g->collapsed_slice_dims :
				   K("start_index_map") ? &g->start_index_map :
				   K("operand_batching_dims") ? &g->operand_batching_dims :
				   K("start_indices_batching_dims") ? &g->start_indices_batching_dims :
				   &g->slice_sizes);
	}
	if (K("update_window_dims") || K("inserted_window_dims") ||
	    K("scatter_dims_to_operand_dims") || K("input_batching_dims") ||
	    K("scatter_indices_batching_dims")) {
		ncc_scatter_dnums_t *s = scatter_of(p, inst);
		if (!s)
			return false;
		return parse_ilist(p, K("update_window_dims") ? &s->update_window_dims :
				   K("inserted_window_dims") ? &s->inserted_window_dims :
				   K("scatter_dims_to_operand_dims") ? &s->scatter_dims_to_operand_dims :
				   K("input_batching_dims") ? &s->input_batching_dims :
				   &s->scatter_indices_batching_dims);
	}
	if (K("index_vector_dim")) {
		int64_t v;
		if (!parse_nonneg(p, &v, "index_vector_dim"))
			return false;
		if (inst->op == NCC_OP_SCATTER) {
			ncc_scatter_dnums_t *s = scatter_of(p, inst);
			if (!s)
				return false;
			s->index_vector_dim = v;
		} else {
			ncc_gather_dnums_t *g = gather_of(p, inst);
			if (!g)
				return false;
			g->index_vector_dim = v;
		}
		return true;
	}
	if (K("indices_are_sorted"))
		return parse_bool(p, &inst->indices_are_sorted);
	if (K("unique_indices"))
		return parse_bool(p, &inst->unique_indices);
	if (K("custom_call_target"))
		return parse_string(p, &inst->custom_call_target, "string for custom_call_target");
	if (K("api_version")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return expected(p, "api version (API_VERSION_...)");
		inst->api_version = tok_dup(p, &p->tok);
		next(p);
		return inst->api_version != NULL;
	}
	if (K("custom_call_has_side_effect"))
		return parse_bool(p, &inst->custom_call_has_side_effect);
	if (K("backend_config")) {
		if (p->tok.kind == NCC_TOK_STRING)
			return parse_string(p, &inst->backend_config, "backend_config");
		if (p->tok.kind == NCC_TOK_LBRACE)
			return capture_raw(p, &inst->backend_config);
		return expected(p, "string or {...} for backend_config");
	}
	if (K("replica_groups"))
		return parse_replica_groups(p, &inst->replica_groups);
	if (K("channel_id"))
		return parse_nonneg(p, &inst->channel_id, "channel id");
	if (K("use_global_device_ids"))
		return parse_bool(p, &inst->use_global_device_ids);
	if (K("constrain_layout"))
		return parse_bool(p, &inst->constrain_layout);
	if (K("source_target_pairs"))
		return parse_pairs(p, inst);
	if (K("distribution")) {
		static const char *const n[] = { "rng_uniform", "rng_normal" };
		int e = 0;
		if (!parse_enum(p, n, 2, NCC_RNG_UNIFORM, &e, "rng_uniform or rng_normal"))
			return false;
		inst->distribution = (ncc_rng_dist_t)e;
		return true;
	}
	if (K("algorithm") && inst->op != NCC_OP_RNG_BIT_GENERATOR && inst->op != NCC_OP_RNG)
		/* dot/convolution algorithm=dot_bf16_bf16_f32 and the like: kept verbatim */
		return add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	if (K("algorithm")) {
		static const char *const n[] = { "rng_default", "rng_three_fry", "rng_philox" };
		int e = 0;
		if (!parse_enum(p, n, 3, NCC_RNG_DEFAULT, &e,
				"rng algorithm (rng_default, rng_three_fry, rng_philox)"))
			return false;
		inst->rng_algorithm = (ncc_rng_alg_t)e;
		return true;
	}
	if (K("epsilon")) {
		inst->has_epsilon = true;
		return parse_double(p, &inst->epsilon, "number for epsilon");
	}
	if (K("feature_index"))
		return parse_nonneg(p, &inst->feature_index, "feature index");
	if (K("is_stable"))
		return parse_bool(p, &inst->is_stable);
	if (K("frontend_attributes"))
		return parse_frontend_attrs(p, inst);
	if (K("sharding"))
		return capture_raw(p, &inst->sharding);
	if (K("control-predecessors"))
		return parse_control_preds(p, inst);
	if (K("kind")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return expected(p, "fusion kind (kLoop, kInput, kOutput, kCustom)");
		inst->fusion_kind = tok_dup(p, &p->tok);
		next(p);
		return inst->fusion_kind != NULL;
	}
	if (K("fft_type") || K("transpose_a")) {
		if (p->tok.kind != NCC_TOK_IDENT)
			return expected(p, "identifier");
		const char *v = tok_dup(p, &p->tok);
		next(p);
		if (K("fft_type"))
			inst->fft_type = v;
		else
			inst->transpose_a = v;
		return v != NULL;
	}
	if (K("fft_length"))
		return parse_ilist(p, &inst->fft_length);
	if (K("exponent_bits"))
		return parse_nonneg(p, &inst->exponent_bits, "exponent_bits");
	if (K("mantissa_bits"))
		return parse_nonneg(p, &inst->mantissa_bits, "mantissa_bits");
	if (K("left_side"))
		return parse_bool(p, &inst->left_side);
	if (K("lower"))
		return parse_bool(p, &inst->lower);
	if (K("unit_diagonal"))
		return parse_bool(p, &inst->unit_diagonal);
	if (K("k"))
		return parse_nonneg(p, &inst->topk_k, "k");
	if (K("largest"))
		return parse_bool(p, &inst->topk_largest);
#undef K
	for (size_t i = 0; i < sizeof(raw_attr_names) / sizeof(raw_attr_names[0]); i++)
		if (tok_is(&key, raw_attr_names[i]))
			return add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	/* an opcode we do not know may carry attributes we do not know: keep them, so
	 * the module still parses and analyze can report the opcode */
	if (inst->op == NCC_OP_UNKNOWN)
		return add_raw_attr(p, &inst->raw_attrs, &inst->nraw_attrs, &key);
	return fail_at(p, NCC_ERR_PARSE, key.line, key.col, "unknown attribute '%.*s' on '%s'",
		       (int)(key.len > 60 ? 60 : key.len), key.text, inst->name);
}

/* ------------------------------------------------------------ instructions */

static bool is_name_tok(const ncc_token_t *t)
{
	return t->kind == NCC_TOK_NAME || t->kind == NCC_TOK_IDENT;
}

static bool parse_operand(parser_t *p, ncc_inst_t **out)
{
	/* optional inline shape: "f32[2]{0} %x" or "(f32[], s32[]) %t" */
	if (p->tok.kind == NCC_TOK_LPAREN ||
	    (p->tok.kind == NCC_TOK_IDENT && peek_kind(p) == NCC_TOK_LSQUARE)) {
		ncc_shape_t ignored; /* the operand's own shape is authoritative; the verifier
				      * does not need this copy (tuple elems live in the arena) */
		if (!parse_shape(p, &ignored))
			return false;
	}
	if (!is_name_tok(&p->tok))
		return expected(p, "operand name");
	char name[512];
	if (p->tok.len >= sizeof(name))
		return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "name too long");
	memcpy(name, p->tok.text, p->tok.len);
	name[p->tok.len] = 0;
	ncc_inst_t *d = map_get(&p->insts, name);
	if (!d)
		return fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			       "operand '%s' is not defined before its use in this computation", name);
	*out = d;
	next(p);
	return true;
}

static bool parse_instruction(parser_t *p, ncc_comp_t *c)
{
	ncc_token_t first = p->tok;
	bool is_root = false;
	if (tok_is(&p->tok, "ROOT") && peek_kind(p) != NCC_TOK_EQUAL) {
		is_root = true;
		next(p);
	}
	if (!is_name_tok(&p->tok))
		return expected(p, "instruction name");
	ncc_token_t name_tok = p->tok;
	char *name = tok_dup(p, &name_tok);
	if (!name)
		return false;
	if (map_get(&p->all_names, name))
		return fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			       "instruction name '%s' is defined twice in the module", name);
	next(p);
	if (!expect(p, NCC_TOK_EQUAL, "'=' after the instruction name"))
		return false;
	ncc_shape_t shape;
	if (!parse_shape(p, &shape))
		return false;
	if (p->tok.kind != NCC_TOK_IDENT)
		return expected(p, "opcode");
	ncc_token_t op_tok = p->tok;
	ncc_opcode_t op = ncc_opcode_from_name(op_tok.text, op_tok.len);
	next(p);
	if (!expect(p, NCC_TOK_LPAREN, "'(' after the opcode"))
		return false;

	ncc_inst_t *inst;
	/* operands gathered before creation; parameter/constant have their own syntax */
	size_t nops = 0;
	int64_t param_no = -1;
	ncc_literal_t lit;
	memset(&lit, 0, sizeof(lit));
	if (op == NCC_OP_PARAMETER) {
		if (!parse_nonneg(p, &param_no, "parameter number"))
			return false;
		if (param_no > (1 << 20))
			return fail_at(p, NCC_ERR_LIMIT, name_tok.line, name_tok.col,
				       "parameter number %lld too large", (long long)param_no);
	} else if (op == NCC_OP_CONSTANT) {
		if (!parse_literal(p, &shape, &lit))
			return false;
	} else if (p->tok.kind != NCC_TOK_RPAREN) {
		for (;;) {
			if (nops == p->cap_opbuf) {
				size_t nc = p->cap_opbuf ? p->cap_opbuf * 2 : 16;
				if (!grow(p, &p->opbuf, sizeof(*p->opbuf), nc, NCC_PARSE_MAX_OPERANDS, "operand list"))
					return false;
				p->cap_opbuf = nc;
			}
			if (!parse_operand(p, &p->opbuf[nops]))
				return false;
			nops++;
			if (!accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (!expect(p, NCC_TOK_RPAREN, op == NCC_OP_PARAMETER || op == NCC_OP_CONSTANT ?
		    "')'" : "',' or ')' after operand"))
		return false;
	ncc_status_t st = ncc_inst_create(c, op, &shape, name, p->opbuf, (int32_t)nops, &inst);
	if (st)
		return nomem(p);
	inst->name = name; /* keep the already-copied name */
	if (op == NCC_OP_UNKNOWN) {
		inst->opname = tok_dup(p, &op_tok);
		if (!inst->opname)
			return false;
	}
	inst->line = first.line;
	inst->col = first.col;
	inst->literal = lit;
	if (op == NCC_OP_PARAMETER) {
		inst->parameter_number = param_no;
		if (param_no < c->nparams && c->params[param_no])
			return fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
				       "parameter number %lld is used twice (also by '%s')",
				       (long long)param_no, c->params[param_no]->name);
		if (ncc_comp_set_param(c, inst))
			return nomem(p);
	}
	if (!map_put(&p->insts, inst->name, inst) || !map_put(&p->all_names, inst->name, inst))
		return nomem(p);

	while (p->tok.kind == NCC_TOK_COMMA) {
		next(p);
		if (!parse_attr(p, inst))
			return false;
	}
	if (inst->called && !inst->calls && inst->ncalled && inst->op != NCC_OP_CUSTOM_CALL) {
		/* calls={a,b}: resolution fills called[]; calls is fixed up after resolve */
	}
	if (is_root) {
		if (c->root && c->root->aux_i == 1)
			return fail_at(p, NCC_ERR_PARSE, first.line, first.col,
				       "computation '%s' has a second ROOT ('%s' and '%s')", c->name,
				       c->root->name, inst->name);
		c->root = inst;
		inst->aux_i = 1; /* marks an explicit ROOT while parsing; cleared at the end */
	}
	/* the instruction's text: from its first token to the end of its last line */
	size_t s = first.pos, e = p->prev_end;
	while (e < p->lx.len && p->lx.src[e] != '\n' && p->lx.src[e] != '\r')
		e++;
	inst->text = ncc_strndup(p->m, p->lx.src + s, e - s);
	if (!inst->text)
		return nomem(p);
	return true;
}

static bool parse_computation(parser_t *p)
{
	bool is_entry = false;
	int line = p->tok.line;
	if (tok_is(&p->tok, "ENTRY")) {
		is_entry = true;
		next(p);
	}
	if (!is_name_tok(&p->tok))
		return expected(p, "computation name");
	ncc_token_t name_tok = p->tok;
	char *name = tok_dup(p, &name_tok);
	if (!name)
		return false;
	if (map_get(&p->comps, name))
		return fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			       "computation '%s' is defined twice", name);
	if (is_entry && p->m->entry)
		return fail_at(p, NCC_ERR_PARSE, line, 1, "second ENTRY computation '%s' (first: '%s')",
			       name, p->m->entry->name);
	next(p);
	ncc_comp_t *c;
	if (ncc__comp_create_unchecked(p->m, name, is_entry, &c))
		return nomem(p);
	c->line = line;
	if (!map_put(&p->comps, c->name, c))
		return nomem(p);
	map_clear(&p->insts);

	if (p->tok.kind == NCC_TOK_LPAREN) {
		next(p);
		const char *names[1024];
		ncc_shape_t *shapes = NULL;
		int32_t n = 0;
		bool ok = true;
		if (p->tok.kind != NCC_TOK_RPAREN) {
			shapes = ncc__malloc(sizeof(*shapes) * 1024);
			if (!shapes)
				return nomem(p);
			for (;;) {
				if (n >= 1024) {
					ok = fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
						     "more than 1024 parameters in a signature");
					break;
				}
				if (!is_name_tok(&p->tok)) {
					ok = expected(p, "parameter name");
					break;
				}
				if (!(names[n] = tok_dup(p, &p->tok))) {
					ok = false;
					break;
				}
				next(p);
				if (!(ok = expect(p, NCC_TOK_COLON, "':' after parameter name") &&
					   parse_shape(p, &shapes[n])))
					break;
				n++;
				if (!accept(p, NCC_TOK_COMMA))
					break;
			}
		}
		if (ok)
			ok = expect(p, NCC_TOK_RPAREN, "')' or ',' in the signature");
		if (ok && n) {
			c->sig_param_names = ncc_alloc(p->m, sizeof(char *) * (size_t)n);
			c->sig_param_shapes = ncc_alloc(p->m, sizeof(ncc_shape_t) * (size_t)n);
			if (!c->sig_param_names || !c->sig_param_shapes)
				ok = nomem(p);
			else {
				memcpy(c->sig_param_names, names, sizeof(char *) * (size_t)n);
				memcpy(c->sig_param_shapes, shapes, sizeof(ncc_shape_t) * (size_t)n);
			}
		}
		free(shapes);
		if (!ok)
			return false;
		c->nsig_params = n;
		if (!expect(p, NCC_TOK_ARROW, "'->' after the parameter list"))
			return false;
		if (!parse_shape(p, &c->sig_result))
			return false;
		c->has_sig_result = true;
	}
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting the computation body"))
		return false;
	while (p->tok.kind != NCC_TOK_RBRACE) {
		if (p->tok.kind == NCC_TOK_EOF)
			return expected(p, "instruction or '}'");
		if (!parse_instruction(p, c))
			return false;
	}
	next(p);
	if (c->ninsts == 0)
		return fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			       "computation '%s' has no instructions", c->name);
	if (!c->root)
		c->root = c->insts[c->ninsts - 1]; /* XLA's rule: the last one */
	c->root->aux_i = 0;
	for (int32_t i = 0; i < c->nparams; i++)
		if (!c->params[i])
			return fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
				       "computation '%s' has parameter(%d) missing (it has %d parameters)",
				       c->name, (int)i, (int)c->nparams);
	return true;
}

/* ------------------------------------------------------------------ module */

static bool parse_alias(parser_t *p)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting input_output_alias"))
		return false;
	ncc_alias_t *arr = NULL;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_LBRACE) {
		ncc_alias_t a;
		memset(&a, 0, sizeof(a));
		if (!parse_ilist(p, &a.output_index) || !expect(p, NCC_TOK_COLON, "':' in alias") ||
		    !expect(p, NCC_TOK_LPAREN, "'(' in alias") ||
		    !parse_nonneg(p, &a.param_number, "parameter number") ||
		    !expect(p, NCC_TOK_COMMA, "',' in alias") || !parse_ilist(p, &a.param_index))
			return false;
		if (accept(p, NCC_TOK_COMMA)) {
			if (tok_is(&p->tok, "must-alias"))
				a.kind = NCC_ALIAS_MUST;
			else if (tok_is(&p->tok, "may-alias"))
				a.kind = NCC_ALIAS_MAY;
			else
				return expected(p, "must-alias or may-alias");
			next(p);
		}
		if (!expect(p, NCC_TOK_RPAREN, "')' closing alias"))
			return false;
		if (n >= 1 << 16)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many aliases");
		if (!arena_append_room(p, &arr, n, sizeof(*arr)))
			return false;
		arr[n++] = a;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in input_output_alias"))
		return false;
	p->m->aliases = arr;
	p->m->naliases = n;
	return true;
}

/* buffer_donor={ (1, {}), (2, {}) } (XLA prints "{}" when there are none). */
static bool parse_donors(parser_t *p)
{
	if (!expect(p, NCC_TOK_LBRACE, "'{' starting buffer_donor"))
		return false;
	ncc_donor_t *arr = NULL;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_LPAREN) {
		ncc_donor_t d;
		memset(&d, 0, sizeof(d));
		next(p);
		if (!parse_nonneg(p, &d.param_number, "parameter number") ||
		    !expect(p, NCC_TOK_COMMA, "',' in buffer donor") || !parse_ilist(p, &d.param_index) ||
		    !expect(p, NCC_TOK_RPAREN, "')' closing buffer donor"))
			return false;
		if (n >= 1 << 16)
			return fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many buffer donors");
		if (!arena_append_room(p, &arr, n, sizeof(*arr)))
			return false;
		arr[n++] = d;
		if (!accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!expect(p, NCC_TOK_RBRACE, "'}' or ',' in buffer_donor"))
		return false;
	p->m->donors = arr;
	p->m->ndonors = n;
	return true;
}

static bool parse_module(parser_t *p)
{
	if (!tok_is(&p->tok, "HloModule"))
		return expected(p, "'HloModule'");
	next(p);
	if (!is_name_tok(&p->tok))
		return expected(p, "module name");
	p->m->name = tok_dup(p, &p->tok);
	if (!p->m->name)
		return false;
	next(p);
	while (accept(p, NCC_TOK_COMMA)) {
		ncc_token_t key = p->tok;
		if (key.kind != NCC_TOK_IDENT)
			return expected(p, "module attribute name");
		next(p);
		if (!expect(p, NCC_TOK_EQUAL, "'=' after module attribute name"))
			return false;
		bool ok;
		if (tok_is(&key, "input_output_alias")) {
			ok = parse_alias(p);
		} else if (tok_is(&key, "buffer_donor")) {
			ok = parse_donors(p);
		} else if (tok_is(&key, "entry_computation_layout")) {
			const char *raw = NULL;
			ok = p->tok.kind == NCC_TOK_LBRACE ? capture_raw(p, &raw) :
				expected(p, "'{' starting entry_computation_layout");
			if (ok) {
				size_t l = strlen(raw);
				p->m->entry_computation_layout = ncc_strndup(p->m, raw + 1, l - 2);
				ok = p->m->entry_computation_layout ? true : nomem(p);
			}
		} else if (tok_is(&key, "is_scheduled")) {
			ok = parse_bool(p, &p->m->is_scheduled);
		} else {
			/* replica_count, num_partitions, frontend_attributes, ...:
			 * tolerated and kept verbatim */
			ok = add_raw_attr(p, &p->m->raw_attrs, &p->m->nraw_attrs, &key);
		}
		if (!ok)
			return false;
	}
	while (p->tok.kind != NCC_TOK_EOF)
		if (!parse_computation(p))
			return false;
	if (p->m->ncomps == 0)
		return expected(p, "a computation");
	if (!p->m->entry) {
		/* without ENTRY, XLA takes the last computation */
		p->m->entry = p->m->comps[p->m->ncomps - 1];
		p->m->entry->is_entry = true;
	}
	for (size_t i = 0; i < p->npend; i++) {
		pending_ref_t *r = &p->pend[i];
		ncc_comp_t *c = map_get(&p->comps, r->name);
		if (!c)
			return fail_at(p, NCC_ERR_PARSE, r->line, r->col, "unknown computation '%s'",
				       r->name);
		*r->slot = c;
	}
	/* calls={a,b} lists: the first is also `calls` */
	for (int32_t i = 0; i < p->m->ncomps; i++) {
		ncc_comp_t *c = p->m->comps[i];
		for (int32_t k = 0; k < c->ninsts; k++) {
			ncc_inst_t *in = c->insts[k];
			if (!in->calls && in->ncalled && in->op != NCC_OP_CUSTOM_CALL)
				in->calls = in->called[0];
		}
	}
	return true;
}

ncc_status_t ncc_parse_hlo(const char *text, size_t len, const char *filename,
			   ncc_module_t **out_module, ncc_error_t *err)
{
	*out_module = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!filename)
		filename = "<input>";
	if (!text && len)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "%s: no input", filename);
	if (len > NCC_PARSE_MAX_INPUT)
		return ncc_error_set(err, NCC_ERR_LIMIT, 0, 0,
				     "%s: input of %zu bytes exceeds the limit of %u bytes", filename,
				     len, NCC_PARSE_MAX_INPUT);
	parser_t p;
	memset(&p, 0, sizeof(p));
	p.err = err;
	if (ncc_module_create("module", &p.m))
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", filename);
	char *src = ncc_strndup(p.m, text ? text : "", len);
	const char *fname = ncc_strdup(p.m, filename);
	if (!src || !fname) {
		ncc_module_free(p.m);
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", filename);
	}
	p.m->source = src;
	p.m->source_len = len;
	p.m->filename = fname;
	p.filename = fname;
	ncc_lex_init(&p.lx, src, len);
	p.tok = ncc_lex_next(&p.lx);
	bool ok = parse_module(&p);
	map_free(&p.insts);
	map_free(&p.all_names);
	map_free(&p.comps);
	free(p.pend);
	free(p.opbuf);
	if (!ok) {
		/* the message names the file, which lives in the module: copy it out first */
		ncc_module_free(p.m);
		return p.status ? p.status : NCC_ERR_PARSE;
	}
	*out_module = p.m;
	return NCC_OK;
}

ncc_status_t ncc_parse_hlo_file(const char *path, ncc_module_t **out_module, ncc_error_t *err)
{
	*out_module = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "%s: cannot open: %s", path, strerror(errno));
	char *buf = NULL;
	size_t size = 0, cap = 0, n;
	do {
		if (size == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > (size_t)NCC_PARSE_MAX_INPUT * 2) {
				free(buf);
				fclose(f);
				return ncc_error_set(err, NCC_ERR_LIMIT, 0, 0,
						     "%s: larger than the limit of %u bytes", path,
						     NCC_PARSE_MAX_INPUT);
			}
			char *nb = ncc__realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", path);
			}
			buf = nb;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
	} while (n > 0);
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return ncc_error_set(err, NCC_ERR_IO, 0, 0, "%s: read error", path);
	}
	ncc_status_t st = ncc_parse_hlo(buf, size, path, out_module, err);
	free(buf);
	return st;
}
