/* ncc protobuf wire-format reader: bounds-checked varints, fixed values, tags, LEN payloads and packed arrays. */
#include "pb_reader.h"

/* The input ends inside a value that starts at byte off. */
static ns_status_t truncated(const char *what, size_t off)
{
	return ns_status_make(NS_STATUS_OUT_OF_RANGE, "%s at byte %zu", what, off);
}

/* Malformed input at byte off. */
static ns_status_t malformed(const char *what, size_t off)
{
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "%s at byte %zu", what, off);
}

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

ns_status_t ncc_pb_read_varint(ncc_pb_reader_t *r, uint64_t *out)
{
	uint64_t v = 0;
	size_t p = r->pos;
	for (int i = 0; i < 10; i++) {
		if (p >= r->end)
			return truncated("truncated varint", r->pos);
		uint8_t b = r->base[p++];
		/* the 10th byte carries bit 63 only; higher bits are dropped, as protobuf's
		 * own parsers do (negative int32 values arrive sign-extended to 64 bits) */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			r->pos = p;
			*out = v;
			return NS_OK;
		}
	}
	return malformed("varint longer than 10 bytes", r->pos);
}

static uint64_t load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A fixed-width value of n bytes at the reader's position. */
static ns_status_t read_fixed(ncc_pb_reader_t *r, int n, uint64_t *out)
{
	if (r->pos > r->end || r->end - r->pos < (size_t)n)
		return truncated("truncated fixed-width value", r->pos);
	*out = load_le(r->base + r->pos, n);
	r->pos += (size_t)n;
	return NS_OK;
}

ns_status_t ncc_pb_read_fixed32(ncc_pb_reader_t *r, uint32_t *out)
{
	uint64_t v = 0;
	ns_status_t st = read_fixed(r, 4, &v);
	*out = (uint32_t)v;
	return st;
}

ns_status_t ncc_pb_read_fixed64(ncc_pb_reader_t *r, uint64_t *out)
{
	return read_fixed(r, 8, out);
}

ns_status_t ncc_pb_next(ncc_pb_reader_t *r, ncc_pb_field_t *f)
{
	f->number = 0;
	f->wire = NCC_PB_VARINT;
	f->value = 0;
	f->off = f->len = 0;
	f->start = r->pos;
	if (r->pos >= r->end)
		return truncated("end of message", r->pos);
	uint64_t tag = 0;
	NS_RETURN_IF_ERROR(ncc_pb_read_varint(r, &tag));
	uint64_t num = tag >> 3;
	if (num == 0 || num > 0x1fffffff)
		return malformed("invalid field number", f->start);
	f->number = (uint32_t)num;
	f->wire = (ncc_pb_wire_t)(tag & 7);
	switch (f->wire) {
	case NCC_PB_VARINT:
		return ncc_pb_read_varint(r, &f->value);
	case NCC_PB_FIXED64:
		return read_fixed(r, 8, &f->value);
	case NCC_PB_FIXED32:
		return read_fixed(r, 4, &f->value);
	case NCC_PB_LEN: {
		uint64_t n = 0;
		size_t lpos = r->pos;
		NS_RETURN_IF_ERROR(ncc_pb_read_varint(r, &n));
		if (n > r->end - r->pos)
			return truncated("length past the end of the enclosing message", lpos);
		f->off = r->pos;
		f->len = (size_t)n;
		r->pos += (size_t)n;
		return NS_OK;
	}
	default:
		return malformed("invalid wire type", f->start);
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

bool ncc_pb_values_more(const ncc_pb_values_t *it)
{
	return it->single ? !it->single_done : !ncc_pb_at_end(&it->r);
}

ns_status_t ncc_pb_values_next(ncc_pb_values_t *it, uint64_t *out)
{
	if (it->single) {
		if (it->single_done)
			return truncated("no value left", it->r.pos);
		it->single_done = true;
		*out = it->value;
		return NS_OK;
	}
	if (ncc_pb_at_end(&it->r))
		return truncated("no value left", it->r.pos);
	switch (it->elem) {
	case NCC_PB_ELEM_VARINT:
		return ncc_pb_read_varint(&it->r, out);
	case NCC_PB_ELEM_FIXED32:
		return read_fixed(&it->r, 4, out);
	default:
		return read_fixed(&it->r, 8, out);
	}
}

ns_status_t ncc_pb_values_count(const ncc_pb_values_t *it, size_t *out_n)
{
	*out_n = 0;
	if (it->single) {
		*out_n = 1;
		return NS_OK;
	}
	size_t len = it->r.end - it->r.pos;
	if (it->elem == NCC_PB_ELEM_FIXED32 || it->elem == NCC_PB_ELEM_FIXED64) {
		size_t w = it->elem == NCC_PB_ELEM_FIXED32 ? 4 : 8;
		if (len % w)
			return truncated("truncated fixed-width value", it->r.pos + len / w * w);
		*out_n = len / w;
		return NS_OK;
	}
	/* varints: count the bytes that end one, then check the last one ends */
	size_t n = 0;
	for (size_t i = it->r.pos; i < it->r.end; i++)
		n += !(it->r.base[i] & 0x80);
	if (len && (it->r.base[it->r.end - 1] & 0x80)) {
		size_t p = it->r.end - 1;
		while (p > it->r.pos && (it->r.base[p - 1] & 0x80))
			p--;
		return truncated("truncated varint", p);
	}
	*out_n = n;
	return NS_OK;
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
