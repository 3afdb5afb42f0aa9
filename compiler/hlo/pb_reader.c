/* ncc protobuf wire-format reader: bounds-checked varints, fixed values, tags, LEN payloads and packed arrays. */
#include "pb_reader.h"

ncc_pb_reader_t ncc_pb_reader(const void *data, size_t len)
{
	ncc_pb_reader_t r = { (const uint8_t *)data, 0, data ? len : 0 };
	return r;
}

ncc_pb_reader_t ncc_pb_sub(const ncc_pb_reader_t *r, const ncc_pb_field_t *f)
{
	ncc_pb_reader_t s = { r->base, f->off, f->off + f->len };
	return s;
}

bool ncc_pb_at_end(const ncc_pb_reader_t *r) { return r->pos >= r->end; }

ncc_pb_status_t ncc_pb_read_varint(ncc_pb_reader_t *r, uint64_t *out, size_t *err_off)
{
	uint64_t v = 0;
	size_t p = r->pos;
	for (int i = 0; i < 10; i++) {
		if (p >= r->end) {
			*err_off = r->pos;
			return NCC_PB_TRUNCATED_VARINT;
		}
		uint8_t b = r->base[p++];
		/* the 10th byte carries bit 63 only; higher bits are dropped, as protobuf's
		 * own parsers do (negative int32 values arrive sign-extended to 64 bits) */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			r->pos = p;
			*out = v;
			return NCC_PB_OK;
		}
	}
	*err_off = r->pos;
	return NCC_PB_VARINT_TOO_LONG;
}

static uint64_t load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

ncc_pb_status_t ncc_pb_read_fixed32(ncc_pb_reader_t *r, uint32_t *out, size_t *err_off)
{
	if (r->end - r->pos < 4 || r->pos > r->end) {
		*err_off = r->pos;
		return NCC_PB_TRUNCATED_FIXED;
	}
	*out = (uint32_t)load_le(r->base + r->pos, 4);
	r->pos += 4;
	return NCC_PB_OK;
}

ncc_pb_status_t ncc_pb_read_fixed64(ncc_pb_reader_t *r, uint64_t *out, size_t *err_off)
{
	if (r->end - r->pos < 8 || r->pos > r->end) {
		*err_off = r->pos;
		return NCC_PB_TRUNCATED_FIXED;
	}
	*out = load_le(r->base + r->pos, 8);
	r->pos += 8;
	return NCC_PB_OK;
}

ncc_pb_status_t ncc_pb_next(ncc_pb_reader_t *r, ncc_pb_field_t *f, size_t *err_off)
{
	f->number = 0;
	f->wire = NCC_PB_VARINT;
	f->value = 0;
	f->off = f->len = 0;
	f->start = r->pos;
	if (r->pos >= r->end)
		return NCC_PB_END;
	uint64_t tag;
	ncc_pb_status_t st = ncc_pb_read_varint(r, &tag, err_off);
	if (st)
		return st;
	uint64_t num = tag >> 3;
	if (num == 0 || num > 0x1fffffff) {
		*err_off = f->start;
		return NCC_PB_BAD_FIELD_NUMBER;
	}
	f->number = (uint32_t)num;
	f->wire = (ncc_pb_wire_t)(tag & 7);
	switch (f->wire) {
	case NCC_PB_VARINT:
		return ncc_pb_read_varint(r, &f->value, err_off);
	case NCC_PB_FIXED64:
		return ncc_pb_read_fixed64(r, &f->value, err_off);
	case NCC_PB_FIXED32: {
		uint32_t v = 0;
		st = ncc_pb_read_fixed32(r, &v, err_off);
		f->value = v;
		return st;
	}
	case NCC_PB_LEN: {
		uint64_t n;
		size_t lpos = r->pos;
		st = ncc_pb_read_varint(r, &n, err_off);
		if (st)
			return st;
		if (n > r->end - r->pos) {
			*err_off = lpos;
			return NCC_PB_TRUNCATED;
		}
		f->off = r->pos;
		f->len = (size_t)n;
		r->pos += (size_t)n;
		return NCC_PB_OK;
	}
	default:
		*err_off = f->start;
		return NCC_PB_BAD_WIRE_TYPE;
	}
}

static ncc_pb_wire_t elem_wire(ncc_pb_elem_t e)
{
	return e == NCC_PB_ELEM_VARINT ? NCC_PB_VARINT :
	       e == NCC_PB_ELEM_FIXED32 ? NCC_PB_FIXED32 : NCC_PB_FIXED64;
}

bool ncc_pb_values_init(ncc_pb_values_t *it, const ncc_pb_reader_t *r, const ncc_pb_field_t *f,
			ncc_pb_elem_t elem)
{
	it->elem = elem;
	it->single_done = false;
	it->value = 0;
	if (f->wire == NCC_PB_LEN) {
		it->single = false;
		it->r = ncc_pb_sub(r, f);
		return true;
	}
	if (f->wire != elem_wire(elem))
		return false;
	it->single = true;
	it->value = f->value;
	it->r = ncc_pb_reader(NULL, 0);
	return true;
}

ncc_pb_status_t ncc_pb_values_next(ncc_pb_values_t *it, uint64_t *out, size_t *err_off)
{
	if (it->single) {
		if (it->single_done)
			return NCC_PB_END;
		it->single_done = true;
		*out = it->value;
		return NCC_PB_OK;
	}
	if (ncc_pb_at_end(&it->r))
		return NCC_PB_END;
	switch (it->elem) {
	case NCC_PB_ELEM_VARINT:
		return ncc_pb_read_varint(&it->r, out, err_off);
	case NCC_PB_ELEM_FIXED32: {
		uint32_t v = 0;
		ncc_pb_status_t st = ncc_pb_read_fixed32(&it->r, &v, err_off);
		*out = v;
		return st;
	}
	default:
		return ncc_pb_read_fixed64(&it->r, out, err_off);
	}
}

ncc_pb_status_t ncc_pb_values_count(const ncc_pb_values_t *it, size_t *out_n, size_t *err_off)
{
	*out_n = 0;
	if (it->single) {
		*out_n = 1;
		return NCC_PB_OK;
	}
	size_t len = it->r.end - it->r.pos;
	if (it->elem == NCC_PB_ELEM_FIXED32 || it->elem == NCC_PB_ELEM_FIXED64) {
		size_t w = it->elem == NCC_PB_ELEM_FIXED32 ? 4 : 8;
		if (len % w) {
			*err_off = it->r.pos + len / w * w;
			return NCC_PB_TRUNCATED_FIXED;
		}
		*out_n = len / w;
		return NCC_PB_OK;
	}
	/* varints: count the bytes that end one, then check the last one ends */
	size_t n = 0;
	for (size_t i = it->r.pos; i < it->r.end; i++)
		n += !(it->r.base[i] & 0x80);
	if (len && (it->r.base[it->r.end - 1] & 0x80)) {
		size_t p = it->r.end - 1;
		while (p > it->r.pos && (it->r.base[p - 1] & 0x80))
			p--;
		*err_off = p;
		return NCC_PB_TRUNCATED_VARINT;
	}
	*out_n = n;
	return NCC_PB_OK;
}

const char *ncc_pb_status_str(ncc_pb_status_t st)
{
	switch (st) {
	case NCC_PB_OK: return "ok";
	case NCC_PB_END: return "end of message";
	case NCC_PB_TRUNCATED_VARINT: return "truncated varint";
	case NCC_PB_VARINT_TOO_LONG: return "varint longer than 10 bytes";
	case NCC_PB_TRUNCATED_FIXED: return "truncated fixed-width value";
	case NCC_PB_TRUNCATED: return "length past the end of the enclosing message";
	case NCC_PB_BAD_WIRE_TYPE: return "invalid wire type";
	case NCC_PB_BAD_FIELD_NUMBER: return "invalid field number";
	}
	return "unknown wire-format error";
}

const char *ncc_pb_wire_name(ncc_pb_wire_t w)
{
	switch (w) {
	case NCC_PB_VARINT: return "varint";
	case NCC_PB_FIXED64: return "fixed64";
	case NCC_PB_LEN: return "length-delimited";
	case NCC_PB_SGROUP: return "start-group";
	case NCC_PB_EGROUP: return "end-group";
	case NCC_PB_FIXED32: return "fixed32";
	}
	return "invalid";
}
