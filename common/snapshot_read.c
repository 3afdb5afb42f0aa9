/* HLO snapshot files: the validating reader (docs/snapshot.md): header, sections, checksums, the JSON metadata and every tensor checked before use. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "neuronsim/bytes.h"
#include "neuronsim/errmsg.h"
#include "neuronsim/fs.h"
#include "neuronsim/snapshot.h"
#include "snapshot_internal.h"

/* The dtype spelled as in the file ("f32", "bf16", ...), ISA_DT_INVALID if unknown. */
static uint32_t dtype_from_name(const char *s)
{
	for (uint32_t dt = 1; dt < ISA_DT_COUNT; dt++)
		if (strcmp(isa_dtype_name(dt), s) == 0)
			return dt;
	return ISA_DT_INVALID;
}

/* ======================================================================== */
/* Reader                                                                   */
/* ======================================================================== */

/* What snapshot_t.priv holds: the file image and the strings handed out. */
typedef struct snap_store {
	uint8_t *image;          /* the whole file, 64-byte aligned */
	char *module_name, *kind, *runtime_version, *error_json, *hlo_text;
} snap_store_t;

typedef struct reader {
	const uint8_t *base;
	uint64_t size;
} reader_t;

/* A failure of code st found by reader r. */
#define RFAIL(r, st, ...) ((void)(r), ns_status_make((st), __VA_ARGS__))

/* Strings from the file are quoted escaped and shortened, so a message stays
 * one printable line whatever the file holds. */
#define esc(s) errmsg_escape((s), 64)

/* [off, off + len) lies inside the file, without overflow. */
static bool in_file(const reader_t *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

static ns_status_t check_header(reader_t *r, snap_header_t *h)
{
	if (r->size < 8)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "truncated: %" PRIu64 " bytes, too short for the snapshot magic", r->size);
	if (memcmp(r->base, SNAPSHOT_MAGIC, 8) != 0)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "not an HLO snapshot file (bad magic, expected \"" SNAPSHOT_MAGIC "\")");
	/* The version before the rest: a future major version may have another header. */
	if (r->size < 12)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "truncated: %" PRIu64 " bytes, too short for the version", r->size);
	uint16_t major, minor;
	memcpy(&major, r->base + 8, 2);
	memcpy(&minor, r->base + 10, 2);
	if (major != SNAPSHOT_VERSION_MAJOR)
		return RFAIL(r,
			     NS_STATUS_UNIMPLEMENTED, "snapshot format %u.%u, this reader supports %u.x: read it with the "
			     "neuronsim that wrote it, or upgrade", major, minor,
			     SNAPSHOT_VERSION_MAJOR);
	if (r->size < SNAPSHOT_HEADER_SIZE)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "truncated: %" PRIu64 " bytes, the header needs %d", r->size,
			     SNAPSHOT_HEADER_SIZE);
	memcpy(h, r->base, sizeof(*h));
	uint64_t sum = XXH64(r->base, offsetof(snap_header_t, header_checksum), 0);
	if (sum != h->header_checksum)
		return RFAIL(r,
			     NS_STATUS_DATA_LOSS, "header checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->header_checksum, sum);
	if (h->file_size != r->size)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "%s: the file has %" PRIu64 " bytes, its header says %" PRIu64,
			     r->size < h->file_size ? "truncated" : "trailing bytes", r->size,
			     h->file_size);
	if (h->flags)
		return RFAIL(r,
			     NS_STATUS_UNIMPLEMENTED, "unknown header flags 0x%08x (format %u.%u): written by a newer neuronsim",
			     h->flags, major, minor);
	if (!ns_all_zero(h->reserved, sizeof(h->reserved)))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "reserved header bytes 96..119 are not zero");
	if (h->header_size < SNAPSHOT_HEADER_SIZE || h->header_size > r->size)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "header size %u is out of range [%d, %" PRIu64 "]",
			     h->header_size, SNAPSHOT_HEADER_SIZE, r->size);
	if (h->meta_size == 0 || h->meta_size > SNAPSHOT_MAX_META)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "metadata size %" PRIu64 " is out of range [1, %"
			     PRIu64 "]", h->meta_size, SNAPSHOT_MAX_META);
	/* Sections in order, inside the file, gaps zero: every byte is accounted for. */
	static const char *const names[] = { "metadata", "HLO text", "tensor data" };
	uint64_t off[3] = { h->meta_offset, h->hlo_offset, h->data_offset };
	uint64_t len[3] = { h->meta_size, h->hlo_size, h->data_size };
	uint64_t end = h->header_size;
	for (int s = 0; s < 3; s++) {
		if (!in_file(r, off[s], len[s]))
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "%s section [%" PRIu64 ", +%" PRIu64 ") is outside the %" PRIu64
				     "-byte file", names[s], off[s], len[s], r->size);
		if (off[s] < end)
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "%s section at %" PRIu64 " overlaps what precedes it (ends at %" PRIu64 ")",
				     names[s], off[s], end);
		if (!ns_all_zero(r->base + end, off[s] - end))
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "non-zero padding bytes between offsets %" PRIu64 " and %" PRIu64,
				     end, off[s]);
		end = off[s] + len[s];
	}
	if (end != r->size)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "the tensor data section ends at %" PRIu64 ", the file at %" PRIu64, end,
			     r->size);
	if (h->data_offset % SNAPSHOT_TENSOR_ALIGN)
		return RFAIL(r, NS_STATUS_INVALID_ARGUMENT, "tensor data offset %" PRIu64
			     " is not a multiple of %d", h->data_offset, SNAPSHOT_TENSOR_ALIGN);
	if (h->n_tensors > SNAPSHOT_MAX_TENSORS)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "%u tensors, a snapshot holds at most %u",
			     h->n_tensors, SNAPSHOT_MAX_TENSORS);
	sum = XXH64(r->base + h->meta_offset, h->meta_size, 0);
	if (sum != h->meta_checksum)
		return RFAIL(r,
			     NS_STATUS_DATA_LOSS, "metadata checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->meta_checksum, sum);
	sum = XXH64(r->base + h->hlo_offset, h->hlo_size, 0);
	if (sum != h->hlo_checksum)
		return RFAIL(r,
			     NS_STATUS_DATA_LOSS, "HLO text checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->hlo_checksum, sum);
	return NS_OK;
}

/* A u64 from JSON: a non-negative integer, or a decimal string (values above
 * INT64_MAX). */
static bool get_u64(const json_t *v, uint64_t *out)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0)
			return false;
		*out = (uint64_t)i;
		return true;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!s[0] || strlen(s) > 20)
			return false;
		uint64_t x = 0;
		for (const char *p = s; *p; p++) {
			if (*p < '0' || *p > '9')
				return false;
			uint64_t dgt = (uint64_t)(*p - '0');
			if (x > (UINT64_MAX - dgt) / 10)
				return false;
			x = x * 10 + dgt;
		}
		*out = x;
		return true;
	}
	return false;
}

/* An optional string member: absent or null -> "" ; otherwise must be a string. */
static ns_status_t get_str(reader_t *r, const json_t *root, const char *key, char **out)
{
	const json_t *v = json_object_get(root, key);
	const char *s = "";
	size_t len = 0;
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "metadata member \"%s\" is not a string", key);
		s = json_string_value(v);
		len = json_string_length(v);
	}
	*out = malloc(len + 1);
	if (!*out)
		return RFAIL(r, NS_STATUS_RESOURCE_EXHAUSTED, "out of memory");
	memcpy(*out, s, len);
	(*out)[len] = '\0';
	return NS_OK;
}

static ns_status_t get_num(reader_t *r, const json_t *root, const char *key, uint64_t *out)
{
	const json_t *v = json_object_get(root, key);
	*out = 0;
	if (!v || json_is_null(v))
		return NS_OK;
	if (!get_u64(v, out))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "metadata member \"%s\" is not a non-negative integer", key);
	return NS_OK;
}

static ns_status_t parse_tensor(reader_t *r, const snap_header_t *h, const json_t *o,
				      uint32_t i, uint64_t *pos, snapshot_tensor_t *t)
{
	if (!json_is_object(o))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u of the table is not a JSON object", i);
	const json_t *name = json_object_get(o, "name"), *role = json_object_get(o, "role");
	const json_t *dtype = json_object_get(o, "dtype"), *shape = json_object_get(o, "shape");
	const json_t *alias = json_object_get(o, "alias_input"), *jsum = json_object_get(o, "checksum");
	uint64_t offset, size;
	if (!json_is_string(name) || json_string_length(name) == 0 ||
	    json_string_length(name) >= SNAPSHOT_NAME_MAX ||
	    strlen(json_string_value(name)) != json_string_length(name))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u: \"name\" must be a string of 1..%d bytes without NUL", i,
			     SNAPSHOT_NAME_MAX - 1);
	memcpy(t->name, json_string_value(name), json_string_length(name) + 1);
	errmsg_escaped_t en = esc(t->name);
	if (!json_is_string(role))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"role\" is not a string", i, en.s);
	if (strcmp(json_string_value(role), "input") == 0)
		t->role = SNAPSHOT_ROLE_INPUT;
	else if (strcmp(json_string_value(role), "output") == 0)
		t->role = SNAPSHOT_ROLE_OUTPUT;
	else
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': role '%s' is neither input nor output", i, en.s,
			     esc(json_string_value(role)).s);
	t->dtype = json_is_string(dtype) ? dtype_from_name(json_string_value(dtype)) : ISA_DT_INVALID;
	if (t->dtype == ISA_DT_INVALID)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': unknown dtype %s", i, en.s,
			     json_is_string(dtype) ? esc(json_string_value(dtype)).s : "(not a string)");
	if (!json_is_array(shape) || json_array_size(shape) > SNAPSHOT_MAX_RANK)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"shape\" must be an array of at most %d dimensions", i,
			     en.s, SNAPSHOT_MAX_RANK);
	t->rank = (uint32_t)json_array_size(shape);
	for (uint32_t d = 0; d < t->rank; d++)
		if (!get_u64(json_array_get(shape, d), &t->shape[d]))
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': dimension %u is not a non-negative integer", i,
				     en.s, d);
	if (!json_is_integer(alias) || json_integer_value(alias) < -1 ||
	    json_integer_value(alias) > INT32_MAX)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"alias_input\" must be -1 or an input index", i, en.s);
	t->alias_input = (int32_t)json_integer_value(alias);
	if (!get_u64(json_object_get(o, "offset"), &offset) ||
	    !get_u64(json_object_get(o, "size"), &size))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"offset\" and \"size\" must be non-negative integers", i,
			     en.s);
	uint64_t need;
	if (!snap_tensor_bytes(t->dtype, t->rank, t->shape, &need) || need != size)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': size %" PRIu64 " does not match its dtype and shape", i,
			     en.s, size);
	if (offset % SNAPSHOT_TENSOR_ALIGN || offset < *pos || offset > h->data_size ||
	    size > h->data_size - offset)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': [%" PRIu64 ", +%" PRIu64 ") is unaligned, overlaps the "
			     "previous tensor or lies outside the %" PRIu64 "-byte data section", i,
			     en.s, offset, size, h->data_size);
	const uint8_t *data = r->base + h->data_offset;
	if (!ns_all_zero(data + *pos, offset - *pos))
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "non-zero padding before tensor %u '%s' in the data section", i, en.s);
	if (!json_is_string(jsum) || json_string_length(jsum) != 16)
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"checksum\" must be 16 hex digits", i, en.s);
	uint64_t stored = 0;
	for (const char *p = json_string_value(jsum); *p; p++) {
		int v = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
		if (v < 0)
			return RFAIL(r,
				     NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': \"checksum\" must be 16 lowercase hex digits", i, en.s);
		stored = stored << 4 | (uint64_t)v;
	}
	t->data = data + offset;
	t->size = size;
	t->checksum = XXH64(t->data, size, 0);
	if (t->checksum != stored)
		return RFAIL(r,
			     NS_STATUS_DATA_LOSS, "tensor %u '%s': data checksum mismatch (stored %016" PRIx64
			     ", computed %016" PRIx64 "): the file is corrupt", i, en.s, stored,
			     t->checksum);
	*pos = offset + size;
	return NS_OK;
}

static ns_status_t parse_meta(reader_t *r, const snap_header_t *h, snapshot_t *s,
				    snap_store_t *store)
{
	json_error_t jerr;
	json_t *root = json_loadb((const char *)r->base + h->meta_offset, h->meta_size,
				  JSON_REJECT_DUPLICATES, &jerr);
	if (!root) /* jansson quotes the bytes near the error as they are */
		return RFAIL(r,
			     NS_STATUS_INVALID_ARGUMENT, "metadata is not valid JSON: %s (byte %d)",
			     esc(jerr.text).s, jerr.position);
	ns_status_t st = NS_OK;
	const json_t *fmt = json_object_get(root, "format");
	const json_t *tab = json_object_get(root, "tensors");
	const json_t *error = json_object_get(root, "error");
	const json_t *status = json_object_get(root, "status");
	if (!json_is_object(root) || !json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), SNAPSHOT_FORMAT_NAME) != 0) {
		st = RFAIL(r,
			   NS_STATUS_INVALID_ARGUMENT, "metadata is not a snapshot description (\"format\" is not \""
			   SNAPSHOT_FORMAT_NAME "\")");
		goto out;
	}
	if (!json_is_array(tab) || json_array_size(tab) != h->n_tensors) {
		st = RFAIL(r,
			   NS_STATUS_INVALID_ARGUMENT, "the tensor table has %zu entries, the header says %u",
			   json_is_array(tab) ? json_array_size(tab) : (size_t)0, h->n_tensors);
		goto out;
	}
	if (error && !json_is_null(error) && !json_is_object(error)) {
		st = RFAIL(r,
			   NS_STATUS_INVALID_ARGUMENT, "metadata member \"error\" is not an object");
		goto out;
	}
	if (status && !json_is_null(status) && !json_is_integer(status)) {
		st = RFAIL(r,
			   NS_STATUS_INVALID_ARGUMENT, "metadata member \"status\" is not an integer");
		goto out;
	}
	s->meta.status = status && json_is_integer(status) ? (int64_t)json_integer_value(status) : 0;
	if ((st = get_str(r, root, "module_name", &store->module_name)) ||
	    (st = get_str(r, root, "kind", &store->kind)) ||
	    (st = get_str(r, root, "runtime_version", &store->runtime_version)) ||
	    (st = get_num(r, root, "process", &s->meta.process)) ||
	    (st = get_num(r, root, "executable", &s->meta.executable)) ||
	    (st = get_num(r, root, "device", &s->meta.device)) ||
	    (st = get_num(r, root, "execution", &s->meta.execution)) ||
	    (st = get_num(r, root, "wall_time_ns", &s->meta.wall_time_ns)))
		goto out;
	s->meta.module_name = store->module_name;
	s->meta.kind = store->kind;
	s->meta.runtime_version = store->runtime_version;
	if (error && json_is_object(error)) {
		store->error_json = json_dumps(error, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (!store->error_json) {
			st = RFAIL(r, NS_STATUS_RESOURCE_EXHAUSTED, "out of memory");
			goto out;
		}
		s->meta.error_json = store->error_json;
	}
	s->tensors = calloc(h->n_tensors ? h->n_tensors : 1, sizeof(*s->tensors));
	if (!s->tensors) {
		st = RFAIL(r,
			   NS_STATUS_RESOURCE_EXHAUSTED, "out of memory for %u tensors", h->n_tensors);
		goto out;
	}
	uint64_t pos = 0;
	for (uint32_t i = 0; i < h->n_tensors; i++) {
		st = parse_tensor(r, h, json_array_get(tab, i), i, &pos, &s->tensors[i]);
		if (st)
			goto out;
	}
	for (uint32_t i = 0; i < h->n_tensors; i++) {
		int32_t a = s->tensors[i].alias_input;
		if (a != -1 && (s->tensors[i].role != SNAPSHOT_ROLE_OUTPUT || (uint32_t)a >= h->n_tensors ||
				s->tensors[a].role != SNAPSHOT_ROLE_INPUT)) {
			st = RFAIL(r,
				   NS_STATUS_INVALID_ARGUMENT, "tensor %u '%s': alias_input %d is not the table index of an input",
				   i, esc(s->tensors[i].name).s, a);
			goto out;
		}
	}
	if (!ns_all_zero(r->base + h->data_offset + pos, h->data_size - pos)) {
		st = RFAIL(r, NS_STATUS_INVALID_ARGUMENT, "non-zero padding after the last tensor");
		goto out;
	}
	s->n_tensors = h->n_tensors;
out:
	json_decref(root);
	return st;
}

void snapshot_free(snapshot_t *s)
{
	if (!s)
		return;
	snap_store_t *store = s->priv;
	if (store) {
		free(store->image);
		free(store->module_name);
		free(store->kind);
		free(store->runtime_version);
		free(store->error_json);
		free(store->hlo_text);
		free(store);
	}
	free(s->tensors);
	free(s);
}

/* Parses the image in buf (taken over: freed on failure, owned by the result on
 * success). */
static ns_status_t parse_owned(uint8_t *buf, uint64_t size, snapshot_t **out)
{
	reader_t r = { buf, size };
	snap_header_t h;
	snapshot_t *s = calloc(1, sizeof(*s));
	snap_store_t *store = calloc(1, sizeof(*store));
	if (!s || !store) {
		free(s);
		free(store);
		free(buf);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED, "out of memory");
	}
	store->image = buf;
	s->priv = store;
	ns_status_t st = check_header(&r, &h);
	if (st == NS_OK)
		st = parse_meta(&r, &h, s, store);
	if (st == NS_OK) {
		store->hlo_text = malloc(h.hlo_size + 1);
		if (!store->hlo_text) {
			st = ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
					    "out of memory for %" PRIu64 " bytes of HLO text", h.hlo_size);
		} else {
			memcpy(store->hlo_text, buf + h.hlo_offset, h.hlo_size);
			store->hlo_text[h.hlo_size] = '\0';
		}
	}
	if (st != NS_OK) {
		snapshot_free(s);
		return st;
	}
	s->hlo_text = store->hlo_text;
	s->hlo_size = h.hlo_size;
	s->version_major = h.version_major;
	s->version_minor = h.version_minor;
	s->file_size = h.file_size;
	s->meta_checksum = h.meta_checksum;
	s->hlo_checksum = h.hlo_checksum;
	*out = s;
	return NS_OK;
}

/* The image buffer: 64-byte aligned so tensor data (64-aligned offsets) is
 * aligned for any element type, one spare byte so an empty file has a buffer. */
static uint8_t *image_alloc(uint64_t size)
{
	void *p = NULL;
	if (size > SIZE_MAX - 64 || posix_memalign(&p, 64, (size_t)size + 1))
		return NULL;
	return p;
}

ns_status_t snapshot_parse(const void *data, size_t size, snapshot_t **out_snapshot)
{
	if (!out_snapshot)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot_parse: no output pointer");
	*out_snapshot = NULL;
	if (!data && size)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "snapshot_parse: no data");
	uint8_t *buf = image_alloc(size);
	if (!buf)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "out of memory for a %zu-byte snapshot image", size);
	if (size)
		memcpy(buf, data, size);
	return parse_owned(buf, size, out_snapshot);
}

ns_status_t snapshot_read(const char *path, snapshot_t **out_snapshot)
{
	if (!out_snapshot)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot_read: no output pointer");
	*out_snapshot = NULL;
	if (!path || !path[0])
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "snapshot_read: no path given");
	void *data;
	size_t size;
	NS_RETURN_IF_ERROR_F(ns_read_file_ex(path, 0, 64, NS_READ_EXACT, &data, &size), "snapshot");
	return ns_status_annotate(parse_owned(data, size, out_snapshot), "snapshot %s", path);
}
