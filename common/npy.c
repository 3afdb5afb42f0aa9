/* .npy reader and writer: header parsing for format 1.0/2.0/3.0, C order only. */
#include "neuronsim/atomic_file.h"
#include "neuronsim/fs.h"
#include "neuronsim/npy.h"
#include "neuronsim/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6

/* One table drives both directions so the writer only ever produces what the
 * reader accepts. The first spelling of each dtype is the one written. */
static const struct {
	const char *descr;
	isa_dtype_t dtype;
} npy_descrs[] = {
	{ "<f4", ISA_DT_F32 },  { "<f2", ISA_DT_F16 },  { "<V2", ISA_DT_BF16 },
	{ "<i4", ISA_DT_S32 },  { "<i8", ISA_DT_S64 },  { "<u4", ISA_DT_U32 },
	{ "<u8", ISA_DT_U64 },  { "|u1", ISA_DT_U8 },   { "|b1", ISA_DT_PRED },
	{ "|i1", ISA_DT_S8 },   { "<i2", ISA_DT_S16 },  { "<u2", ISA_DT_U16 },
	/* Other spellings NumPy and ml_dtypes produce for the same types. */
	{ "|V2", ISA_DT_BF16 }, { "V2", ISA_DT_BF16 },  { "<u1", ISA_DT_U8 },
	{ "u1", ISA_DT_U8 },    { "<b1", ISA_DT_PRED }, { "b1", ISA_DT_PRED },
	{ "|?", ISA_DT_PRED },  { "<i1", ISA_DT_S8 },   { "i1", ISA_DT_S8 },
};

const char *npy_dtype_descr(isa_dtype_t dtype)
{
	for (size_t i = 0; i < sizeof(npy_descrs) / sizeof(npy_descrs[0]); i++)
		if (npy_descrs[i].dtype == dtype)
			return npy_descrs[i].descr;
	return NULL;
}

isa_dtype_t npy_dtype_from_descr(const char *descr)
{
	char buf[8];
	if (!descr)
		return ISA_DT_INVALID;
	size_t len = strlen(descr);
	if (len + 1 > sizeof(buf))
		return ISA_DT_INVALID;
	memcpy(buf, descr, len + 1);
	/* '=' is native order, which is little-endian on every host we build for. */
	if (buf[0] == '=')
		buf[0] = '<';
	for (size_t i = 0; i < sizeof(npy_descrs) / sizeof(npy_descrs[0]); i++)
		if (strcmp(npy_descrs[i].descr, buf) == 0)
			return npy_descrs[i].dtype;
	return ISA_DT_INVALID;
}

/* ---- header dictionary parser ---------------------------------------- */

/* The header is a Python dict literal written by NumPy, e.g.
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * We parse exactly that grammar (strings, True/False, tuples of integers)
 * instead of evaluating anything; every read is bounds-checked. */
typedef struct npy_lexer {
	const char *p;
	const char *end;
} npy_lexer_t;

static void lex_ws(npy_lexer_t *lx)
{
	while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' ||
				   *lx->p == '\n' || *lx->p == '\r'))
		lx->p++;
}

static bool lex_accept(npy_lexer_t *lx, char c)
{
	lex_ws(lx);
	if (lx->p < lx->end && *lx->p == c) {
		lx->p++;
		return true;
	}
	return false;
}

static ns_status_t lex_string(npy_lexer_t *lx, char *out, size_t out_len)
{
	lex_ws(lx);
	if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"'))
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: expected a quoted string");
	char q = *lx->p++;
	size_t n = 0;
	while (lx->p < lx->end && *lx->p != q) {
		if (*lx->p == '\\' || *lx->p == '\n')
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: escape or newline inside a string");
		if (n + 1 >= out_len)
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: string longer than %zu bytes",
					      out_len - 1);
		out[n++] = *lx->p++;
	}
	if (lx->p >= lx->end)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: unterminated string");
	lx->p++;
	out[n] = '\0';
	return NS_OK;
}

static bool lex_word(npy_lexer_t *lx, const char *word)
{
	lex_ws(lx);
	size_t n = strlen(word);
	if ((size_t)(lx->end - lx->p) >= n && memcmp(lx->p, word, n) == 0) {
		lx->p += n;
		return true;
	}
	return false;
}

static ns_status_t lex_shape(npy_lexer_t *lx, npy_header_t *h)
{
	if (!lex_accept(lx, '('))
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: 'shape' must be a tuple like (3, 4)");
	h->rank = 0;
	for (;;) {
		if (lex_accept(lx, ')'))
			return NS_OK;
		lex_ws(lx);
		if (lx->p >= lx->end || *lx->p < '0' || *lx->p > '9')
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: 'shape' entries must be non-negative integers");
		uint64_t v = 0;
		while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
			unsigned d = (unsigned)(*lx->p - '0');
			if (v > (UINT64_MAX - d) / 10)
				return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
						      "malformed .npy header: shape dimension overflows 64 bits");
			v = v * 10 + d;
			lx->p++;
		}
		/* Python 2 wrote long integers with an L suffix. */
		if (lx->p < lx->end && (*lx->p == 'L' || *lx->p == 'l'))
			lx->p++;
		if (h->rank >= NPY_MAX_RANK)
			return ns_status_make(NS_STATUS_UNIMPLEMENTED,
					      ".npy array has more than %d dimensions", NPY_MAX_RANK);
		h->shape[h->rank++] = v;
		if (lex_accept(lx, ','))
			continue;
		if (lex_accept(lx, ')'))
			return NS_OK;
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: expected ',' or ')' in 'shape'");
	}
}

static ns_status_t npy_parse_dict(npy_lexer_t *lx, npy_header_t *h)
{
	bool have_descr = false, have_order = false, have_shape = false;
	char descr[32] = "";

	if (!lex_accept(lx, '{'))
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: it must be a dict literal starting with '{'");
	for (;;) {
		if (lex_accept(lx, '}'))
			break;
		char key[32];
		ns_status_t st = lex_string(lx, key, sizeof(key));
		if (st)
			return st;
		if (!lex_accept(lx, ':'))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: expected ':' after '%s'", key);
		if (strcmp(key, "descr") == 0) {
			if (have_descr)
				goto duplicate;
			lex_ws(lx);
			if (lx->p < lx->end && *lx->p == '[')
				return ns_status_make(NS_STATUS_UNIMPLEMENTED,
						      ".npy file holds a structured dtype (descr is a list); only plain numeric dtypes are supported");
			st = lex_string(lx, descr, sizeof(descr));
			if (st)
				return st;
			have_descr = true;
		} else if (strcmp(key, "fortran_order") == 0) {
			if (have_order)
				goto duplicate;
			if (lex_word(lx, "True"))
				return ns_status_make(NS_STATUS_UNIMPLEMENTED,
						      ".npy array is in Fortran order; only C order is supported (save np.ascontiguousarray(a))");
			if (!lex_word(lx, "False"))
				return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
						      "malformed .npy header: 'fortran_order' must be True or False");
			have_order = true;
		} else if (strcmp(key, "shape") == 0) {
			if (have_shape)
				goto duplicate;
			st = lex_shape(lx, h);
			if (st)
				return st;
			have_shape = true;
		} else {
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: unexpected key '%s' (expected descr, fortran_order, shape)",
					      key);
		}
		if (lex_accept(lx, ','))
			continue;
		if (lex_accept(lx, '}'))
			break;
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: expected ',' or '}' after '%s'", key);
	}
	lex_ws(lx);
	if (lx->p != lx->end)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: unexpected bytes after the closing '}'");
	if (!have_descr || !have_order || !have_shape)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: missing key '%s'",
				      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");

	h->dtype = npy_dtype_from_descr(descr);
	if (h->dtype == ISA_DT_INVALID) {
		const char *why = "";
		if (descr[0] == '>')
			why = " (big-endian: convert with a.astype(a.dtype.newbyteorder('<')))";
		else if (strcmp(descr, "<f8") == 0)
			why = " (float64: convert with a.astype(np.float32))";
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      ".npy dtype '%s' is not supported%s; supported: <f4 <f2 <V2(bf16) <i4 <i8 <u4 <u8 |u1 |b1 |i1 <i2 <u2",
				      descr, why);
	}
	return NS_OK;

duplicate:
	return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
			      "malformed .npy header: duplicate key");
}

ns_status_t npy_parse_header(const void *data, size_t size, npy_header_t *out)
{
	if (!out)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_parse_header: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!data && size)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_parse_header: data is NULL");

	const uint8_t *b = data;
	if (size < NPY_MAGIC_LEN + 2 || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "not a .npy file (missing the \\x93NUMPY magic)");
	npy_header_t h = { .version_major = b[6], .version_minor = b[7] };
	size_t len_bytes;
	if (h.version_major == 1)
		len_bytes = 2;
	else if (h.version_major == 2 || h.version_major == 3)
		len_bytes = 4;
	else
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      ".npy format version %u.%u is not supported (this reader knows 1.0, 2.0, 3.0)",
				      h.version_major, h.version_minor);
	if (h.version_minor != 0)
		return ns_status_make(NS_STATUS_UNIMPLEMENTED,
				      ".npy format version %u.%u is not supported (this reader knows 1.0, 2.0, 3.0)",
				      h.version_major, h.version_minor);
	size_t prefix = NPY_MAGIC_LEN + 2 + len_bytes;
	if (size < prefix)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      ".npy file truncated inside the header length");
	uint64_t hlen = b[8] | ((uint64_t)b[9] << 8);
	if (len_bytes == 4)
		hlen |= ((uint64_t)b[10] << 16) | ((uint64_t)b[11] << 24);
	if (hlen > NPY_MAX_HEADER_LEN)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      ".npy header length %llu exceeds the limit of %u bytes",
				      (unsigned long long)hlen, NPY_MAX_HEADER_LEN);
	if (hlen > size - prefix)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      ".npy file truncated: header says %llu bytes, only %zu present",
				      (unsigned long long)hlen, size - prefix);
	/* Version 1.0/2.0 headers are latin-1, 3.0 is UTF-8; our grammar is ASCII
	 * so either way a NUL or other control byte means corruption. */
	const char *hdr = (const char *)b + prefix;
	for (size_t i = 0; i < hlen; i++) {
		unsigned char c = (unsigned char)hdr[i];
		if (c == 0 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: control byte 0x%02x at header offset %zu",
					      c, i);
	}

	npy_lexer_t lx = { .p = hdr, .end = hdr + hlen };
	ns_status_t st = npy_parse_dict(&lx, &h);
	if (st)
		return st;

	uint64_t count = 1;
	for (uint32_t i = 0; i < h.rank; i++) {
		if (h.shape[i] && count > UINT64_MAX / h.shape[i])
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "malformed .npy header: shape element count overflows");
		count *= h.shape[i];
	}
	size_t isz = isa_dtype_size(h.dtype);
	if (count > SIZE_MAX / isz)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "malformed .npy header: array byte size overflows");
	h.count = count;
	h.data_offset = prefix + (size_t)hlen;
	*out = h;
	return NS_OK;
}

void npy_array_free(npy_array_t *a)
{
	if (!a)
		return;
	free(a->data);
	memset(a, 0, sizeof(*a));
}

ns_status_t npy_parse(const void *data, size_t size, npy_array_t *out)
{
	if (!out)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_parse: out is NULL");
	memset(out, 0, sizeof(*out));
	npy_header_t h;
	ns_status_t st = npy_parse_header(data, size, &h);
	if (st)
		return st;
	size_t nbytes = (size_t)h.count * isa_dtype_size(h.dtype);
	size_t avail = size - h.data_offset;
	if (avail < nbytes)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      ".npy data truncated: shape needs %zu bytes, file has %zu",
				      nbytes, avail);
	if (avail > nbytes)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      ".npy file has %zu bytes after the array data (shape needs %zu): corrupt or not C order",
				      avail - nbytes, nbytes);
	/* malloc(0) may return NULL; keep data non-NULL so callers need no special case. */
	void *copy = malloc(nbytes ? nbytes : 1);
	if (!copy)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "out of memory for %zu bytes of .npy data", nbytes);
	if (nbytes)
		memcpy(copy, (const uint8_t *)data + h.data_offset, nbytes);
	out->dtype = h.dtype;
	out->rank = h.rank;
	memcpy(out->shape, h.shape, sizeof(out->shape));
	out->count = h.count;
	out->nbytes = nbytes;
	out->data = copy;
	return NS_OK;
}

ns_status_t npy_read_file(const char *path, npy_array_t *out)
{
	if (!out)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_read_file: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!path)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_read_file: path is NULL");
	void *buf;
	size_t len;
	NS_RETURN_IF_ERROR(ns_read_file(path, 0, 0, &buf, &len));
	ns_status_t st = npy_parse(buf, len, out);
	free(buf);
	return ns_status_annotate(st, "%s", path);
}

ns_status_t npy_encode(isa_dtype_t dtype, uint32_t rank, const uint64_t *shape,
			const void *data, void **out_buf, size_t *out_size)
{
	if (!out_buf || !out_size)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_encode: NULL output pointer");
	*out_buf = NULL;
	*out_size = 0;
	const char *descr = npy_dtype_descr(dtype);
	if (!descr)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "npy_encode: dtype %u has no .npy spelling", (unsigned)dtype);
	if (rank > NPY_MAX_RANK || (rank && !shape))
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "npy_encode: rank %u invalid or shape NULL", rank);

	char dict[64 + NPY_MAX_RANK * 22];
	size_t n = (size_t)snprintf(dict, sizeof(dict),
				    "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	uint64_t count = 1;
	for (uint32_t i = 0; i < rank; i++) {
		n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)shape[i]);
		if (shape[i] && count > UINT64_MAX / shape[i])
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "npy_encode: element count overflows");
		count *= shape[i];
	}
	/* A 1-tuple needs its trailing comma to stay a tuple in Python. */
	n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s), }", rank == 1 ? "," : "");
	size_t isz = isa_dtype_size(dtype);
	if (count > (SIZE_MAX - 4096) / isz)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_encode: array too large");
	size_t nbytes = (size_t)count * isz;
	if (nbytes && !data)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_encode: data is NULL");

	/* NumPy pads with spaces and a final newline so the data starts 64-byte
	 * aligned; version 2.0 only when the header outgrows a 16-bit length. */
	size_t prefix = 10, hlen = (n + 1 + 63 + prefix) / 64 * 64 - prefix;
	uint8_t major = 1;
	if (hlen > 0xffff) {
		prefix = 12;
		hlen = (n + 1 + 63 + prefix) / 64 * 64 - prefix;
		major = 2;
	}
	size_t total = prefix + hlen + nbytes;
	uint8_t *buf = malloc(total);
	if (!buf)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "out of memory for a %zu-byte .npy image", total);
	memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
	buf[6] = major;
	buf[7] = 0;
	buf[8] = (uint8_t)hlen;
	buf[9] = (uint8_t)(hlen >> 8);
	if (major == 2) {
		buf[10] = (uint8_t)(hlen >> 16);
		buf[11] = (uint8_t)(hlen >> 24);
	}
	memcpy(buf + prefix, dict, n);
	memset(buf + prefix + n, ' ', hlen - n - 1);
	buf[prefix + hlen - 1] = '\n';
	if (nbytes)
		memcpy(buf + prefix + hlen, data, nbytes);
	*out_buf = buf;
	*out_size = total;
	return NS_OK;
}

ns_status_t npy_write_file(const char *path, isa_dtype_t dtype, uint32_t rank,
			    const uint64_t *shape, const void *data)
{
	if (!path)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "npy_write_file: path is NULL");
	void *buf;
	size_t size;
	ns_status_t st = npy_encode(dtype, rank, shape, data, &buf, &size);
	if (st)
		return st;

	/* Whole or nothing, through an O_EXCL temporary: a reader never sees half a
	 * file, a failed write leaves nothing behind, and a symlink planted at the
	 * target or at a temporary name is never written through. */
	const char *step = "";
	if (atomic_file_write_whole(path, buf, size, ATOMIC_FILE_MODE_UMASK, &step) != 0) {
		int e = errno;
		st = ns_status_make_errno(e, "cannot write %s (%s): %s", path, step, strerror(e));
	}
	free(buf);
	return st;
}
