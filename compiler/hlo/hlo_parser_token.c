/* ncc HLO text parser: token helpers, error messages, numbers and strings. */
#include "hlo_parser_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool tp_fail_at(parser_t *p, ncc_status_t st, int line, int col, const char *fmt, ...)
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
bool tp_expected(parser_t *p, const char *what)
{
	char d[128];
	tok_desc(&p->tok, d, sizeof(d));
	if (p->tok.kind == NCC_TOK_ERROR && p->tok.len >= 1 && p->tok.text[0] == '"')
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "expected %s, got an unterminated string", what);
	if (p->tok.kind == NCC_TOK_ERROR && p->tok.len >= 2 && p->tok.text[0] == '/')
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "expected %s, got an unterminated comment", what);
	return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col, "expected %s, got %s", what, d);
}

bool tp_nomem(parser_t *p)
{
	return tp_fail_at(p, NCC_ERR_NOMEM, p->tok.line, p->tok.col, "out of memory");
}

/* Grows *arr to cap elements of elem bytes: a LIMIT error past limit elements (hostile
 * input), a NOMEM error if the allocation fails. */
bool tp_grow(parser_t *p, void *arr, size_t elem, size_t cap, size_t limit, const char *what)
{
	if (cap > limit)
		return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "%s exceeds %zu entries", what,
			          limit);
	void *n = ncc__realloc(*(void **)arr, elem * cap);
	if (!n)
		return tp_nomem(p);
	*(void **)arr = n;
	return true;
}

bool tp_expect(parser_t *p, ncc_tok_kind_t k, const char *what)
{
	if (p->tok.kind != k)
		return tp_expected(p, what);
	tp_next(p);
	return true;
}

char *tp_tok_dup(parser_t *p, const ncc_token_t *t)
{
	char *s = ncc_strndup(p->m, t->text, t->len);
	if (!s)
		tp_nomem(p);
	return s;
}


/* --------------------------------------------------------------- numbers */

bool tp_parse_i64_text(const char *s, size_t len, int64_t *out)
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

bool tp_parse_int(parser_t *p, int64_t *out, const char *what)
{
	if (p->tok.kind != NCC_TOK_INT)
		return tp_expected(p, what);
	if (!tp_parse_i64_text(p->tok.text, p->tok.len, out))
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "integer '%.*s' out of range", (int)(p->tok.len > 40 ? 40 : p->tok.len),
			          p->tok.text);
	tp_next(p);
	return true;
}

bool tp_parse_nonneg(parser_t *p, int64_t *out, const char *what)
{
	int line = p->tok.line, col = p->tok.col;
	if (!tp_parse_int(p, out, what))
		return false;
	if (*out < 0)
		return tp_fail_at(p, NCC_ERR_PARSE, line, col, "expected %s, got negative %lld", what,
			          (long long)*out);
	return true;
}

bool tp_parse_double_tok(const ncc_token_t *t, double *out)
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

bool tp_parse_double(parser_t *p, double *out, const char *what)
{
	if (!tp_parse_double_tok(&p->tok, out))
		return tp_expected(p, what);
	tp_next(p);
	return true;
}

bool tp_parse_bool(parser_t *p, bool *out)
{
	if (tp_tok_is(&p->tok, "true"))
		*out = true;
	else if (tp_tok_is(&p->tok, "false"))
		*out = false;
	else
		return tp_expected(p, "'true' or 'false'");
	tp_next(p);
	return true;
}

/* Decodes a string token's escapes into the arena. */
bool tp_parse_string(parser_t *p, const char **out, const char *what)
{
	if (p->tok.kind != NCC_TOK_STRING)
		return tp_expected(p, what);
	char *s = ncc_alloc(p->m, p->tok.len + 1);
	if (!s)
		return tp_nomem(p);
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
	tp_next(p);
	return true;
}

/* Values with their own micro-syntax are re-read as one raw word. */
bool tp_raw_word(parser_t *p, ncc_token_t *out, const char *what)
{
	if (p->tok.kind == NCC_TOK_EOF || p->tok.kind == NCC_TOK_RBRACE || p->tok.kind == NCC_TOK_COMMA)
		return tp_expected(p, what);
	ncc_lex_reset_to(&p->lx, &p->tok);
	*out = ncc_lex_raw_word(&p->lx);
	if (out->kind != NCC_TOK_IDENT) {
		p->tok = *out;
		return tp_expected(p, what);
	}
	p->prev_end = out->pos + out->len;
	p->tok = ncc_lex_next(&p->lx);
	return true;
}
