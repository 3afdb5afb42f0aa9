/* ncc HLO text parser: windows, convolution dim_labels, padding and slices. */
#include "hlo_parser_internal.h"

#include <stdlib.h>
#include <string.h>

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
			if (!tp_parse_i64_text(s, (size_t)(q - s), &v))
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

bool tp_parse_window(parser_t *p, ncc_inst_t *inst)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting window"))
		return false;
	ncc_window_t *w = ncc_alloc(p->m, sizeof(*w));
	if (!w)
		return tp_nomem(p);
	inst->window = w;
	int64_t size[NCC_MAX_RANK], stride[NCC_MAX_RANK], pad[2 * NCC_MAX_RANK];
	int64_t ld[NCC_MAX_RANK], rd[NCC_MAX_RANK], rev[NCC_MAX_RANK];
	int nsize = -1, nstride = -1, npad = -1, nld = -1, nrd = -1, nrev = -1;
	while (p->tok.kind == NCC_TOK_IDENT) {
		ncc_token_t key = p->tok;
		tp_next(p);
		if (!tp_expect(p, NCC_TOK_EQUAL, "'=' in window"))
			return false;
		ncc_token_t w2;
		if (!tp_raw_word(p, &w2, "window dimensions like 3x3"))
			return false;
		int *cnt;
		int64_t *dst;
		int per = 1;
		if (tp_tok_is(&key, "size")) { cnt = &nsize; dst = size; }
		else if (tp_tok_is(&key, "stride")) { cnt = &nstride; dst = stride; }
		else if (tp_tok_is(&key, "pad")) { cnt = &npad; dst = pad; per = 2; }
		else if (tp_tok_is(&key, "lhs_dilate")) { cnt = &nld; dst = ld; }
		else if (tp_tok_is(&key, "rhs_dilate")) { cnt = &nrd; dst = rd; }
		else if (tp_tok_is(&key, "rhs_reversal")) { cnt = &nrev; dst = rev; }
		else
			return tp_fail_at(p, NCC_ERR_PARSE, key.line, key.col,
				          "unknown window field '%.*s' (expected size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)",
				          (int)(key.len > 40 ? 40 : key.len), key.text);
		*cnt = split_dims(&w2, per, dst, NCC_MAX_RANK);
		if (*cnt < 0)
			return tp_fail_at(p, NCC_ERR_PARSE, w2.line, w2.col,
				          "malformed window %.*s '%.*s'", (int)key.len, key.text,
				          (int)(w2.len > 40 ? 40 : w2.len), w2.text);
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "window field or '}'"))
		return false;
	int n = nsize < 0 ? 0 : nsize;
	int cnts[5] = { nstride, npad, nld, nrd, nrev };
	for (int i = 0; i < 5; i++)
		if (cnts[i] >= 0 && cnts[i] != n)
			return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				          "window fields have different numbers of dimensions (%d vs size %d)",
				          cnts[i], n);
	w->n = n;
	if (n) {
		w->dims = ncc_alloc(p->m, sizeof(*w->dims) * (size_t)n);
		if (!w->dims)
			return tp_nomem(p);
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

bool tp_parse_dim_labels(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t w;
	if (!tp_raw_word(p, &w, "dim_labels like bf01_oi01->bf01"))
		return false;
	ncc_conv_dnums_t *c = ncc_alloc(p->m, sizeof(*c));
	if (!c)
		return tp_nomem(p);
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
		return tp_fail_at(p, NCC_ERR_PARSE, w.line, w.col,
			          "malformed dim_labels '%.*s' (expected e.g. bf01_oi01->bf01)",
			          (int)(w.len > 40 ? 40 : w.len), w.text);
	c->nspatial = n1;
	inst->conv = c;
	return true;
}

bool tp_parse_padding(parser_t *p, ncc_inst_t *inst)
{
	ncc_token_t w;
	if (!tp_raw_word(p, &w, "padding like 0_0x1_1"))
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
			return tp_fail_at(p, NCC_ERR_PARSE, w.line, w.col,
				          "malformed padding '%.*s' (expected lo_hi[_interior] per dimension, separated by x)",
				          (int)(w.len > 40 ? 40 : w.len), w.text);
		dims[n].lo = v[0];
		dims[n].hi = v[1];
		dims[n].interior = v[2];
		n++;
		s = g < e ? g + 1 : g;
		if (g < e && s >= e)
			return tp_fail_at(p, NCC_ERR_PARSE, w.line, w.col, "padding ends with 'x'");
	}
	ncc_padding_t *pd = ncc_alloc(p->m, sizeof(*pd));
	if (!pd || !(pd->dims = ncc_alloc(p->m, sizeof(*pd->dims) * (size_t)(n ? n : 1))))
		return tp_nomem(p);
	memcpy(pd->dims, dims, sizeof(*dims) * (size_t)n);
	pd->n = n;
	inst->padding = pd;
	return true;
}

bool tp_parse_slice(parser_t *p, ncc_inst_t *inst)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting slice"))
		return false;
	ncc_slice_dim_t dims[NCC_MAX_RANK];
	int n = 0;
	while (p->tok.kind == NCC_TOK_LSQUARE) {
		if (n >= NCC_MAX_RANK)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "slice has too many dimensions");
		tp_next(p);
		ncc_slice_dim_t *d = &dims[n];
		if (!tp_parse_int(p, &d->start, "slice start") ||
		    !tp_expect(p, NCC_TOK_COLON, "':' in slice") || !tp_parse_int(p, &d->limit, "slice limit"))
			return false;
		d->stride = 1;
		if (tp_accept(p, NCC_TOK_COLON) && !tp_parse_int(p, &d->stride, "slice stride"))
			return false;
		if (!tp_expect(p, NCC_TOK_RSQUARE, "']' in slice"))
			return false;
		n++;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'[' or '}' in slice"))
		return false;
	ncc_slice_t *sl = ncc_alloc(p->m, sizeof(*sl));
	if (!sl || !(sl->dims = ncc_alloc(p->m, sizeof(*sl->dims) * (size_t)(n ? n : 1))))
		return tp_nomem(p);
	memcpy(sl->dims, dims, sizeof(*dims) * (size_t)n);
	sl->n = n;
	inst->slice = sl;
	return true;
}
