/* ncc HloModuleProto decoder context: error messages with the field path, message iteration over known fields, repeated scalars, id maps and a text builder. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_proto_internal.h"

/* ---------------------------------------------------------------- errors */

static size_t escape(char *dst, size_t size, const char *s)
{
	size_t o = 0;
	for (size_t i = 0; s[i] && o + 8 < size; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (i == 60) {
			o += (size_t)snprintf(dst + o, size - o, "...");
			break;
		}
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			dst[o++] = (char)ch;
		else
			o += (size_t)snprintf(dst + o, size - o, "\\x%02x", ch);
	}
	dst[o] = 0;
	return o;
}

const char *hp_q(hp_ctx_t *c, const char *s)
{
	char *b = c->quoted[c->nquoted++ & 3];
	escape(b, sizeof(c->quoted[0]), s ? s : "");
	return b;
}

static size_t path_text(const hp_ctx_t *c, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < c->npath && o + 1 < size; i++) {
		const hp_seg_t *s = &c->path[i];
		int n;
		/* a path through deeply nested tuples: its head and tail say enough */
		if (c->npath > 16 && i == 6) {
			n = snprintf(buf + o, size - o, ".(%d levels)", c->npath - 12);
			if (n > 0)
				o += (size_t)n;
			i = c->npath - 7;
			continue;
		}
		if (s->index >= 0)
			n = snprintf(buf + o, size - o, "%s%s[%lld]", i ? "." : "", s->name,
				     (long long)s->index);
		else
			n = snprintf(buf + o, size - o, "%s%s", i ? "." : "", s->name);
		if (n < 0)
			break;
		o += (size_t)n;
		if (o + 4 < size && s->label) {
			char q[200];
			escape(q, sizeof(q), s->label);
			n = snprintf(buf + o, size - o, " (%%%s)", q);
			if (n > 0)
				o += (size_t)n;
		}
	}
	return o < size ? o : size - 1;
}

bool hp_fail(hp_ctx_t *c, ncc_status_t st, const char *field, long long at, const char *fmt, ...)
{
	if (c->failed)
		return false;
	c->failed = true;
	c->status = st;
	char path[600], msg[400];
	size_t o = path_text(c, path, sizeof(path));
	if (field)
		snprintf(path + o, sizeof(path) - o, "%s%s", o ? "." : "", field);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const char *sep = path[0] ? ": " : "";
	if (at >= 0)
		ncc_error_set(c->err, st, 0, 0, "%s: hlo proto: %s%s%s at byte %lld", c->label, path, sep,
			      msg, at);
	else
		ncc_error_set(c->err, st, 0, 0, "%s: hlo proto: %s%s%s", c->label, path, sep, msg);
	return false;
}

bool hp_fail_pb(hp_ctx_t *c, const char *field, ns_status_t st)
{
	hp_fail(c, NCC_ERR_PARSE, field, -1, "%s", ns_status_message(st));
	ns_status_free(st);
	return false;
}

bool hp_nomem(hp_ctx_t *c) { return hp_fail(c, NCC_ERR_NOMEM, NULL, -1, "out of memory"); }

bool hp_push(hp_ctx_t *c, const char *name, int64_t index)
{
	if (c->npath >= HP_PATH_MAX)
		return hp_fail(c, NCC_ERR_LIMIT, NULL, -1, "messages nested deeper than %d levels",
			       HP_PATH_MAX);
	c->path[c->npath].name = name;
	c->path[c->npath].index = index;
	c->path[c->npath].label = NULL;
	c->npath++;
	return true;
}

void hp_pop(hp_ctx_t *c)
{
	if (c->npath > 0)
		c->npath--;
}

void hp_set_label(hp_ctx_t *c, const char *label)
{
	if (c->npath > 0)
		c->path[c->npath - 1].label = label;
}

bool hp_enter(hp_ctx_t *c)
{
	if (++c->depth > NCC_PARSE_MAX_DEPTH) {
		c->depth--;
		return hp_fail(c, NCC_ERR_LIMIT, NULL, -1, "nesting deeper than %d levels",
			       NCC_PARSE_MAX_DEPTH);
	}
	return true;
}

void hp_leave(hp_ctx_t *c) { c->depth--; }

/* ------------------------------------------------------------- messages */

static const char *kind_name(hp_kind_t k)
{
	switch (k) {
	case HP_K_VARINT: return "varint";
	case HP_K_FIXED32: return "fixed32";
	case HP_K_FIXED64: return "fixed64";
	case HP_K_LEN: return "length-delimited";
	case HP_K_REP_VARINT: return "varint or packed";
	case HP_K_REP_FIXED32: return "fixed32 or packed";
	case HP_K_REP_FIXED64: return "fixed64 or packed";
	}
	return "?";
}

static bool wire_ok(hp_kind_t k, ncc_pb_wire_t w)
{
	switch (k) {
	case HP_K_VARINT: return w == NCC_PB_VARINT;
	case HP_K_FIXED32: return w == NCC_PB_FIXED32;
	case HP_K_FIXED64: return w == NCC_PB_FIXED64;
	case HP_K_LEN: return w == NCC_PB_LEN;
	case HP_K_REP_VARINT: return w == NCC_PB_VARINT || w == NCC_PB_LEN;
	case HP_K_REP_FIXED32: return w == NCC_PB_FIXED32 || w == NCC_PB_LEN;
	case HP_K_REP_FIXED64: return w == NCC_PB_FIXED64 || w == NCC_PB_LEN;
	}
	return false;
}

const hp_fdesc_t *hp_field_desc(hp_msgdesc_t desc, uint32_t num)
{
	for (size_t i = 0; i < desc.nfields; i++)
		if (desc.fields[i].num == num)
			return &desc.fields[i];
	return NULL;
}

void hp_iter_init(hp_iter_t *it, ncc_pb_reader_t r, hp_msgdesc_t desc)
{
	it->r = r;
	it->desc = desc;
}

const hp_fdesc_t *hp_iter_next(hp_ctx_t *c, hp_iter_t *it, ncc_pb_field_t *f)
{
	if (c->failed)
		return NULL;
	for (;;) {
		if (ncc_pb_at_end(&it->r))
			return NULL;
		ns_status_t st = ncc_pb_next(&it->r, f);
		const hp_fdesc_t *d = f->number ? hp_field_desc(it->desc, f->number) : NULL;
		if (st) {
			char fname[32];
			const char *name = d ? d->name : NULL;
			if (!name && f->number) {
				snprintf(fname, sizeof(fname), "field %u", f->number);
				name = fname;
			}
			hp_fail_pb(c, name, st);
			return NULL;
		}
		if (!d)
			continue; /* unknown field: skipped, as protobuf requires */
		if (!wire_ok(d->kind, f->wire)) {
			hp_fail(c, NCC_ERR_PARSE, d->name, (long long)f->start,
				"wire type %s (%d), the schema says %s", ncc_pb_wire_name(f->wire),
				(int)f->wire, kind_name(d->kind));
			return NULL;
		}
		return d;
	}
}

ncc_pb_reader_t hp_sub(const hp_ctx_t *c, const ncc_pb_field_t *f)
{
	ncc_pb_reader_t r = { c->data, f->off, f->off + f->len };
	return r;
}

bool hp_elem_begin(hp_ctx_t *c, const ncc_pb_field_t *f, const char *name, int64_t k,
		   hp_msgdesc_t desc, hp_iter_t *it)
{
	if (!HP_IN(c, name, k))
		return false;
	hp_iter_init(it, hp_sub(c, f), desc);
	return true;
}

bool hp_elem_end(hp_ctx_t *c)
{
	if (c->failed)
		return false;
	HP_OUT(c);
	return true;
}

static ncc_pb_elem_t elem_of(hp_kind_t k)
{
	return k == HP_K_REP_FIXED32 || k == HP_K_FIXED32 ? NCC_PB_ELEM_FIXED32 :
	       k == HP_K_REP_FIXED64 || k == HP_K_FIXED64 ? NCC_PB_ELEM_FIXED64 : NCC_PB_ELEM_VARINT;
}

bool hp_rep_i64(hp_ctx_t *c, ncc_pb_reader_t r, hp_msgdesc_t desc, uint32_t num, int64_t limit,
		int64_t **out, int32_t *out_n)
{
	*out = NULL;
	*out_n = 0;
	const hp_fdesc_t *fd = hp_field_desc(desc, num);
	if (!fd)
		return hp_fail(c, NCC_ERR_INTERNAL, NULL, -1, "field %u is not in the schema", num);
	ncc_pb_elem_t elem = elem_of(fd->kind);
	if (limit > (1 << 24))
		limit = 1 << 24;
	/* first pass: count, so the array can live in the arena */
	size_t total = 0;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number != num)
			continue;
		ncc_pb_values_t v;
		size_t n = 0;
		ncc_pb_values_init(&v, &it.r, &f, elem);
		ns_status_t st = ncc_pb_values_count(&v, &n);
		if (st)
			return hp_fail_pb(c, fd->name, st);
		total += n;
		if (total > (size_t)limit)
			return hp_fail(c, NCC_ERR_LIMIT, fd->name, (long long)f.start,
				       "more than %lld values", (long long)limit);
	}
	if (c->failed)
		return false;
	if (!total)
		return true;
	int64_t *arr = ncc_alloc(c->m, sizeof(int64_t) * total);
	if (!arr)
		return hp_nomem(c);
	size_t k = 0;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number != num)
			continue;
		ncc_pb_values_t v;
		ncc_pb_values_init(&v, &it.r, &f, elem);
		uint64_t x;
		while (ncc_pb_values_more(&v) && k < total) {
			ns_status_t st = ncc_pb_values_next(&v, &x);
			if (st)
				return hp_fail_pb(c, fd->name, st);
			if (fd->kind == HP_K_REP_FIXED32 || fd->kind == HP_K_FIXED32)
				arr[k++] = (int64_t)(int32_t)(uint32_t)x;
			else
				arr[k++] = (int64_t)x;
		}
	}
	if (c->failed)
		return false;
	*out = arr;
	*out_n = (int32_t)k;
	return true;
}

bool hp_rep_ilist(hp_ctx_t *c, ncc_pb_reader_t r, hp_msgdesc_t desc, uint32_t num,
		  ncc_ilist_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!hp_rep_i64(c, r, desc, num, 1 << 22, &out->v, &out->n))
		return false;
	out->present = true;
	return true;
}

bool hp_string(hp_ctx_t *c, const ncc_pb_field_t *f, const char **out)
{
	const char *s = (const char *)c->data + f->off;
	const char *z = memchr(s, 0, f->len);
	size_t n = z ? (size_t)(z - s) : f->len;
	char *d = ncc_strndup(c->m, s, n);
	if (!d)
		return hp_nomem(c);
	*out = d;
	return true;
}

bool hp_valid_name(const char *s, size_t len)
{
	if (len == 0 || len > 4096)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
		if (!ok || (ch == '-' && i + 1 < len && s[i + 1] == '>'))
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------- text */

void hp_text_printf(hp_text_t *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ncc__strbuf_vprintf(t, 256, fmt, ap);
	va_end(ap);
}

const char *hp_text_finish(hp_ctx_t *c, hp_text_t *t)
{
	const char *r = NULL;
	if (!t->oom)
		r = ncc_strndup(c->m, t->s ? t->s : "", t->len);
	free(t->s);
	memset(t, 0, sizeof(*t));
	if (!r)
		hp_nomem(c);
	return r;
}

void hp_text_ints(hp_text_t *t, const int64_t *v, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		hp_text_printf(t, i ? ",%lld" : "%lld", (long long)v[i]);
}

void hp_text_shape(hp_text_t *t, const ncc_shape_t *s, int depth)
{
	if (s->etype == NCC_TUPLE) {
		hp_text_printf(t, "(");
		for (int32_t i = 0; i < s->nelems && depth < NCC_PARSE_MAX_DEPTH; i++) {
			if (i)
				hp_text_printf(t, ", ");
			if (i && i % 5 == 0)
				hp_text_printf(t, "/*index=%d*/", (int)i);
			hp_text_shape(t, &s->elems[i], depth + 1);
		}
		hp_text_printf(t, ")");
		return;
	}
	hp_text_printf(t, "%s[", ncc_etype_name(s->etype));
	for (int32_t i = 0; i < s->rank; i++) {
		const char *sep = i ? "," : "";
		if (s->dims[i] == NCC_DIM_UNBOUNDED)
			hp_text_printf(t, "%s?", sep);
		else
			hp_text_printf(t, "%s%s%lld", sep, s->dynamic[i] ? "<=" : "", (long long)s->dims[i]);
	}
	hp_text_printf(t, "]");
	if (s->has_layout) {
		hp_text_printf(t, "{");
		for (int32_t i = 0; i < s->rank; i++)
			hp_text_printf(t, i ? ",%d" : "%d", (int)s->minor_to_major[i]);
		if (s->layout_extra)
			hp_text_printf(t, ":%s", s->layout_extra);
		hp_text_printf(t, "}");
	}
}
