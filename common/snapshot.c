/* HLO snapshot files: the atomic writer and the validating reader (docs/snapshot.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "neuronsim/atomic_file.h"
#include "neuronsim/errmsg.h"
#include "neuronsim/snapshot.h"

#define SNAPSHOT_FORMAT_NAME "neuronsim-hlo-snapshot"

/* The fixed header at offset 0, little-endian (this is a little-endian host,
 * which isa.h already assumes). docs/snapshot.md lists the same fields. */
typedef struct snap_header {
	char magic[8];
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size;
	uint64_t file_size;
	uint64_t meta_offset;
	uint64_t meta_size;
	uint64_t meta_checksum;
	uint64_t hlo_offset;
	uint64_t hlo_size;
	uint64_t hlo_checksum;
	uint64_t data_offset;
	uint64_t data_size;
	uint32_t n_tensors;
	uint32_t flags;
	uint8_t reserved[24];
	uint64_t header_checksum;   /* XXH64 of bytes [0, 120) */
} snap_header_t;

_Static_assert(sizeof(snap_header_t) == SNAPSHOT_HEADER_SIZE, "header is 128 bytes");
_Static_assert(offsetof(snap_header_t, n_tensors) == 88, "n_tensors at 88");
_Static_assert(offsetof(snap_header_t, header_checksum) == 120, "checksum at 120");

static const uint8_t zeros[SNAPSHOT_DATA_ALIGN];

const char *snapshot_status_str(snapshot_status_t s)
{
	switch (s) {
	case SNAPSHOT_OK: return "ok";
	case SNAPSHOT_ERR_IO: return "I/O error";
	case SNAPSHOT_ERR_NOSPACE: return "no space left";
	case SNAPSHOT_ERR_FORMAT: return "format error";
	case SNAPSHOT_ERR_CHECKSUM: return "checksum mismatch";
	case SNAPSHOT_ERR_VERSION: return "unsupported version";
	case SNAPSHOT_ERR_NOMEM: return "out of memory";
	case SNAPSHOT_ERR_INVALID: return "invalid argument";
	}
	return "unknown status";
}

const char *snapshot_role_name(uint32_t role)
{
	switch (role) {
	case SNAPSHOT_ROLE_INPUT: return "input";
	case SNAPSHOT_ROLE_OUTPUT: return "output";
	default: return "?";
	}
}

#define fail(st, ...) ((snapshot_status_t)errmsg_fail((st), __VA_ARGS__))

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The dtype spelled as in the file ("f32", "bf16", ...), ISA_DT_INVALID if unknown. */
static uint32_t dtype_from_name(const char *s)
{
	for (uint32_t dt = 1; dt < ISA_DT_COUNT; dt++)
		if (strcmp(isa_dtype_name(dt), s) == 0)
			return dt;
	return ISA_DT_INVALID;
}

/* Bytes of a dense tensor, false when the product overflows 64 bits. */
static bool tensor_bytes(uint32_t dtype, uint32_t rank, const uint64_t *shape, uint64_t *out)
{
	uint64_t n = isa_dtype_size(dtype);
	for (uint32_t d = 0; d < rank; d++) {
		if (shape[d] && n > UINT64_MAX / shape[d])
			return false;
		n *= shape[d];
	}
	*out = n;
	return true;
}

/* ======================================================================== */
/* Writer                                                                   */
/* ======================================================================== */

/* u64 meta fields go in as JSON integers; jansson's integers are signed 64-bit,
 * so the (never seen in practice) values above INT64_MAX are decimal strings. */
static json_t *json_u64(uint64_t v)
{
	if (v <= (uint64_t)INT64_MAX)
		return json_integer((json_int_t)v);
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return json_string(buf);
}

static int obj_set(json_t *obj, const char *key, json_t *v)
{
	return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *json_str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static snapshot_status_t check_write_args(const char *path, const snapshot_meta_t *meta,
					  const char *hlo_text, size_t hlo_size,
					  const snapshot_tensor_t *tensors, uint32_t n,
					  char *err, size_t err_len)
{
	if (!path || !path[0])
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot_write: no path given");
	if (!meta)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot %s: no metadata given", path);
	if (hlo_size && !hlo_text)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len,
			    "snapshot %s: %zu bytes of HLO text but no text pointer", path, hlo_size);
	if (n && !tensors)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len,
			    "snapshot %s: %u tensors but no tensor array", path, n);
	if (n > SNAPSHOT_MAX_TENSORS)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len,
			    "snapshot %s: %u tensors, a snapshot holds at most %u", path, n,
			    SNAPSHOT_MAX_TENSORS);
	for (uint32_t i = 0; i < n; i++) {
		const snapshot_tensor_t *t = &tensors[i];
		uint64_t bytes = 0;
		if (!memchr(t->name, 0, sizeof(t->name)) || !t->name[0])
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u has an empty or unterminated name", path, i);
		if (t->role != SNAPSHOT_ROLE_INPUT && t->role != SNAPSHOT_ROLE_OUTPUT)
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has role %u (0 input, 1 output)", path,
				    i, t->name, t->role);
		if (!isa_dtype_size(t->dtype))
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has dtype %u, not an ISA dtype", path, i,
				    t->name, t->dtype);
		if (t->rank > SNAPSHOT_MAX_RANK)
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has rank %u (at most %d)", path, i,
				    t->name, t->rank, SNAPSHOT_MAX_RANK);
		if (!tensor_bytes(t->dtype, t->rank, t->shape, &bytes) || bytes != t->size)
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has %" PRIu64
				    " bytes but its dtype and shape need %" PRIu64, path, i, t->name,
				    t->size, bytes);
		if (t->size && !t->data)
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has no data pointer", path, i, t->name);
		/* alias_input indexes this file's table and names an input */
		if (t->alias_input != -1 &&
		    (t->role != SNAPSHOT_ROLE_OUTPUT || t->alias_input < 0 || (uint32_t)t->alias_input >= n ||
		     tensors[t->alias_input].role != SNAPSHOT_ROLE_INPUT))
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u '%s' has alias_input %d: it must be -1, or for "
				    "an output the table index of an input", path, i, t->name,
				    t->alias_input);
	}
	return SNAPSHOT_OK;
}

/* The JSON metadata text (malloc'd, NUL-terminated) with the tensor table.
 * sums NULL: zero checksums, which have the same length (16 hex digits), so the
 * text's size is known before the data is hashed. */
static snapshot_status_t build_meta(const char *path, const snapshot_meta_t *meta,
				    const snapshot_tensor_t *tensors, uint32_t n,
				    const uint64_t *offsets, const uint64_t *sums, char **out_text,
				    char *err, size_t err_len)
{
	*out_text = NULL;
	json_t *root = json_object(), *arr = json_array();
	json_t *error = NULL;
	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len, "snapshot %s: out of memory", path);
	}
	if (meta->error_json) {
		json_error_t jerr;
		error = json_loads(meta->error_json, JSON_REJECT_DUPLICATES, &jerr);
		if (!error || !json_is_object(error)) {
			json_decref(error);
			json_decref(root);
			json_decref(arr);
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: the error record is not a JSON object (%s)", path,
				    error ? "another JSON value" : jerr.text);
		}
	}
	int rc = 0;
	rc |= obj_set(root, "format", json_string(SNAPSHOT_FORMAT_NAME));
	rc |= obj_set(root, "module_name", json_str_or_null(meta->module_name));
	rc |= obj_set(root, "kind", json_str_or_null(meta->kind));
	rc |= obj_set(root, "process", json_u64(meta->process));
	rc |= obj_set(root, "executable", json_u64(meta->executable));
	rc |= obj_set(root, "device", json_u64(meta->device));
	rc |= obj_set(root, "execution", json_u64(meta->execution));
	rc |= obj_set(root, "status", json_integer((json_int_t)meta->status));
	rc |= obj_set(root, "runtime_version", json_str_or_null(meta->runtime_version));
	rc |= obj_set(root, "wall_time_ns", json_u64(meta->wall_time_ns));
	rc |= obj_set(root, "error", error ? error : json_null());
	if (rc) {
		/* json_string() refuses invalid UTF-8: the only way a set fails here
		 * besides memory. */
		json_decref(root);
		json_decref(arr);
		return fail(SNAPSHOT_ERR_INVALID, err, err_len,
			    "snapshot %s: a metadata string (module name, kind or runtime version) "
			    "is not valid UTF-8, or out of memory", path);
	}
	for (uint32_t i = 0; i < n; i++) {
		const snapshot_tensor_t *t = &tensors[i];
		json_t *o = json_object(), *shape = json_array();
		char sum[17];
		snprintf(sum, sizeof(sum), "%016" PRIx64, sums ? sums[i] : (uint64_t)0);
		rc = !o || !shape;
		for (uint32_t d = 0; d < t->rank && !rc; d++)
			rc |= json_array_append_new(shape, json_u64(t->shape[d]));
		if (!rc) {
			rc |= obj_set(o, "name", json_string(t->name));
			rc |= obj_set(o, "role", json_string(snapshot_role_name(t->role)));
			rc |= obj_set(o, "dtype", json_string(isa_dtype_name(t->dtype)));
			rc |= json_object_set(o, "shape", shape);
			rc |= obj_set(o, "alias_input", json_integer(t->alias_input));
			rc |= obj_set(o, "offset", json_integer((json_int_t)offsets[i]));
			rc |= obj_set(o, "size", json_integer((json_int_t)t->size));
			rc |= obj_set(o, "checksum", json_string(sum));
		}
		json_decref(shape);
		if (rc || json_array_append_new(arr, o)) {
			if (rc)
				json_decref(o);
			json_decref(root);
			json_decref(arr);
			return fail(SNAPSHOT_ERR_INVALID, err, err_len,
				    "snapshot %s: tensor %u's name is not valid UTF-8, or out of memory",
				    path, i);
		}
	}
	if (json_object_set_new(root, "tensors", arr)) {
		json_decref(root);
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len, "snapshot %s: out of memory", path);
	}
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len, "snapshot %s: out of memory", path);
	*out_text = text;
	return SNAPSHOT_OK;
}

/* write() until all n bytes are out, through EINTR and short writes. */
static int write_all(int fd, const void *p, uint64_t n, uint64_t *done)
{
	const uint8_t *b = p;
	while (n) {
		/* Linux moves at most ~2 GiB per call; 1 GiB keeps the count exact. */
		size_t chunk = n > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
		ssize_t w = write(fd, b, chunk);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			/* A regular file does not do this; treat it as the device being full
			 * rather than looping forever. */
			errno = ENOSPC;
			return -1;
		}
		b += w;
		n -= (uint64_t)w;
		*done += (uint64_t)w;
	}
	return 0;
}

/* pwrite() of all n bytes at off, through EINTR and short writes. */
static int pwrite_all(int fd, const void *p, uint64_t n, uint64_t off)
{
	const uint8_t *b = p;
	while (n) {
		size_t chunk = n > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
		ssize_t w = pwrite(fd, b, chunk, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		b += w;
		n -= (uint64_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Writes a tensor and hashes it on the way: each chunk is hashed just before
 * write() copies it, while it is still in the cache, so the checksum costs no
 * second pass over memory. */
#define HASH_CHUNK ((uint64_t)1 << 20)
static int write_hashed(int fd, const void *p, uint64_t n, XXH64_state_t *hs, uint64_t *out_sum,
			uint64_t *done)
{
	const uint8_t *b = p;
	XXH64_reset(hs, 0);
	while (n) {
		uint64_t k = n < HASH_CHUNK ? n : HASH_CHUNK;
		XXH64_update(hs, b, (size_t)k);
		if (write_all(fd, b, k, done))
			return -1;
		b += k;
		n -= k;
	}
	*out_sum = XXH64_digest(hs);
	return 0;
}

static int write_zeros(int fd, uint64_t n, uint64_t *done)
{
	while (n) {
		uint64_t k = n < sizeof(zeros) ? n : sizeof(zeros);
		if (write_all(fd, zeros, k, done))
			return -1;
		n -= k;
	}
	return 0;
}

static snapshot_status_t errno_status(int e)
{
	if (e == ENOSPC || e == EDQUOT)
		return SNAPSHOT_ERR_NOSPACE;
	return e == ENOMEM ? SNAPSHOT_ERR_NOMEM : SNAPSHOT_ERR_IO;
}

snapshot_status_t snapshot_write(const char *path, const snapshot_meta_t *meta,
				 const char *hlo_text, size_t hlo_size,
				 const snapshot_tensor_t *tensors, uint32_t n,
				 char *err, size_t err_len)
{
	if (err && err_len)
		err[0] = '\0';
	errno = 0;
	snapshot_status_t st = check_write_args(path, meta, hlo_text, hlo_size, tensors, n, err,
						err_len);
	if (st != SNAPSHOT_OK)
		return st;

	/* Layout: header, JSON metadata, HLO text, zeros up to the 4 KiB aligned
	 * data section, tensors at 64-byte aligned offsets inside it. */
	uint64_t *offsets = calloc(n ? n : 1, sizeof(uint64_t));
	uint64_t *sums = calloc(n ? n : 1, sizeof(uint64_t));
	XXH64_state_t *hs = XXH64_createState();
	if (!offsets || !sums || !hs) {
		free(offsets);
		free(sums);
		XXH64_freeState(hs);
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len, "snapshot %s: out of memory", path);
	}
	uint64_t data_size = 0;
	for (uint32_t i = 0; i < n; i++) {
		offsets[i] = align_up(data_size, SNAPSHOT_TENSOR_ALIGN);
		data_size = offsets[i] + tensors[i].size;
	}
	data_size = align_up(data_size, SNAPSHOT_TENSOR_ALIGN);

	/* The metadata as it will be, checksums zero for now: its size fixes the
	 * layout. Header and metadata are rewritten in place once the data is out. */
	char *meta_text = NULL;
	st = build_meta(path, meta, tensors, n, offsets, NULL, &meta_text, err, err_len);
	if (st != SNAPSHOT_OK) {
		free(offsets);
		free(sums);
		XXH64_freeState(hs);
		errno = 0;
		return st;
	}
	uint64_t meta_size = strlen(meta_text);

	snap_header_t h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SNAPSHOT_MAGIC, 8);
	h.version_major = SNAPSHOT_VERSION_MAJOR;
	h.version_minor = SNAPSHOT_VERSION_MINOR;
	h.header_size = SNAPSHOT_HEADER_SIZE;
	h.meta_offset = SNAPSHOT_HEADER_SIZE;
	h.meta_size = meta_size;
	h.hlo_offset = h.meta_offset + meta_size;
	h.hlo_size = hlo_size;
	h.hlo_checksum = XXH64(hlo_text, hlo_size, 0);
	h.data_offset = align_up(h.hlo_offset + hlo_size, SNAPSHOT_DATA_ALIGN);
	h.data_size = data_size;
	h.file_size = h.data_offset + data_size;
	h.n_tensors = n;

	const char *what = "create a temporary file for";
	uint64_t done = 0;
	int e = 0;
	/* The one way files are written (atomic_file.h): an O_EXCL temporary next
	 * to the target, mode 0600 since the tensors may be private data, fsync,
	 * rename, directory fsync. */
	atomic_file_t af;
	const char *step = "";
	if (atomic_file_open(&af, path, 0600, &step) != 0) {
		e = errno;
		goto out_fail_nofile;
	}
	int fd = af.fd;
	/* Reserve the blocks first: a full disk then fails here, before gigabytes
	 * are written. File systems without fallocate just skip it. */
	what = "reserve space for";
	if (h.file_size) {
		int r = fallocate(fd, 0, 0, (off_t)h.file_size);
		if (r && errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
			goto out_fail;
	}
	/* One sequential pass: placeholder header and metadata, HLO, tensors
	 * (hashed as they go out), then the final header and metadata in place. */
	what = "write";
	if (write_zeros(fd, sizeof(h) + meta_size, &done) || write_all(fd, hlo_text, hlo_size, &done) ||
	    write_zeros(fd, h.data_offset - (h.hlo_offset + hlo_size), &done))
		goto out_fail;
	uint64_t pos = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (write_zeros(fd, offsets[i] - pos, &done) ||
		    write_hashed(fd, tensors[i].data, tensors[i].size, hs, &sums[i], &done))
			goto out_fail;
		pos = offsets[i] + tensors[i].size;
	}
	if (write_zeros(fd, data_size - pos, &done))
		goto out_fail;
	free(meta_text);
	meta_text = NULL;
	st = build_meta(path, meta, tensors, n, offsets, sums, &meta_text, err, err_len);
	if (st != SNAPSHOT_OK || strlen(meta_text) != meta_size) {
		/* The same text with same-width checksums has the same size, unless an
		 * allocation failed inside jansson (its parser can then drop a key of
		 * the error record instead of failing). */
		atomic_file_abort(&af);
		free(offsets);
		free(sums);
		XXH64_freeState(hs);
		free(meta_text);
		errno = ENOMEM;
		return st != SNAPSHOT_OK ? st : fail(SNAPSHOT_ERR_NOMEM, err, err_len,
						     "snapshot %s: out of memory while formatting the "
						     "metadata; no file was left", path);
	}
	h.meta_checksum = XXH64(meta_text, meta_size, 0);
	h.header_checksum = XXH64(&h, offsetof(snap_header_t, header_checksum), 0);
	if (pwrite_all(fd, &h, sizeof(h), 0) || pwrite_all(fd, meta_text, meta_size, sizeof(h)))
		goto out_fail;
	if (atomic_file_commit(&af, &step) != 0) {
		/* sync, close, rename or the directory's sync; af is released and
		 * nothing is left */
		e = errno;
		what = strcmp(step, "rename") == 0 ? "rename the temporary file to"
		       : strcmp(step, "sync the directory of") == 0 ? "sync the directory of" : step;
		goto out_fail_nofile;
	}
	free(offsets);
	free(sums);
	XXH64_freeState(hs);
	free(meta_text);
	errno = 0;
	return SNAPSHOT_OK;

out_fail:
	e = errno;
	atomic_file_abort(&af);
out_fail_nofile:
	st = errno_status(e);
	if (st == SNAPSHOT_ERR_NOSPACE)
		fail(st, err, err_len,
		     "cannot %s snapshot %s: %s (%" PRIu64 " of %" PRIu64 " bytes written); "
		     "no file was left: free space or point the dump directory elsewhere",
		     what, path, strerror(e), done, h.file_size);
	else
		fail(st, err, err_len, "cannot %s snapshot %s: %s; no file was left",
		     what, path, strerror(e));
	free(offsets);
	free(sums);
	XXH64_freeState(hs);
	free(meta_text);
	errno = e;
	return st;
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
	char *err;
	size_t err_len;
} reader_t;

#define RFAIL(r, st, ...) fail((st), (r)->err, (r)->err_len, __VA_ARGS__)

/* Strings from the file are quoted escaped and shortened, so a message stays
 * one printable line whatever the file holds. */
#define esc(s) errmsg_escape((s), 64)

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* [off, off + len) lies inside the file, without overflow. */
static bool in_file(const reader_t *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

static snapshot_status_t check_header(reader_t *r, snap_header_t *h)
{
	if (r->size < 8)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "truncated: %" PRIu64 " bytes, too short for the snapshot magic", r->size);
	if (memcmp(r->base, SNAPSHOT_MAGIC, 8) != 0)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "not an HLO snapshot file (bad magic, expected \"" SNAPSHOT_MAGIC "\")");
	/* The version before the rest: a future major version may have another header. */
	if (r->size < 12)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "truncated: %" PRIu64 " bytes, too short for the version", r->size);
	uint16_t major, minor;
	memcpy(&major, r->base + 8, 2);
	memcpy(&minor, r->base + 10, 2);
	if (major != SNAPSHOT_VERSION_MAJOR)
		return RFAIL(r, SNAPSHOT_ERR_VERSION,
			     "snapshot format %u.%u, this reader supports %u.x: read it with the "
			     "neuronsim that wrote it, or upgrade", major, minor,
			     SNAPSHOT_VERSION_MAJOR);
	if (r->size < SNAPSHOT_HEADER_SIZE)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "truncated: %" PRIu64 " bytes, the header needs %d", r->size,
			     SNAPSHOT_HEADER_SIZE);
	memcpy(h, r->base, sizeof(*h));
	uint64_t sum = XXH64(r->base, offsetof(snap_header_t, header_checksum), 0);
	if (sum != h->header_checksum)
		return RFAIL(r, SNAPSHOT_ERR_CHECKSUM,
			     "header checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->header_checksum, sum);
	if (h->file_size != r->size)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "%s: the file has %" PRIu64 " bytes, its header says %" PRIu64,
			     r->size < h->file_size ? "truncated" : "trailing bytes", r->size,
			     h->file_size);
	if (h->flags)
		return RFAIL(r, SNAPSHOT_ERR_VERSION,
			     "unknown header flags 0x%08x (format %u.%u): written by a newer neuronsim",
			     h->flags, major, minor);
	if (!all_zero(h->reserved, sizeof(h->reserved)))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "reserved header bytes 96..119 are not zero");
	if (h->header_size < SNAPSHOT_HEADER_SIZE || h->header_size > r->size)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "header size %u is out of range [%d, %" PRIu64 "]",
			     h->header_size, SNAPSHOT_HEADER_SIZE, r->size);
	if (h->meta_size == 0 || h->meta_size > SNAPSHOT_MAX_META)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "metadata size %" PRIu64 " is out of range [1, %"
			     PRIu64 "]", h->meta_size, SNAPSHOT_MAX_META);
	/* Sections in order, inside the file, gaps zero: every byte is accounted for. */
	static const char *const names[] = { "metadata", "HLO text", "tensor data" };
	uint64_t off[3] = { h->meta_offset, h->hlo_offset, h->data_offset };
	uint64_t len[3] = { h->meta_size, h->hlo_size, h->data_size };
	uint64_t end = h->header_size;
	for (int s = 0; s < 3; s++) {
		if (!in_file(r, off[s], len[s]))
			return RFAIL(r, SNAPSHOT_ERR_FORMAT,
				     "%s section [%" PRIu64 ", +%" PRIu64 ") is outside the %" PRIu64
				     "-byte file", names[s], off[s], len[s], r->size);
		if (off[s] < end)
			return RFAIL(r, SNAPSHOT_ERR_FORMAT,
				     "%s section at %" PRIu64 " overlaps what precedes it (ends at %" PRIu64 ")",
				     names[s], off[s], end);
		if (!all_zero(r->base + end, off[s] - end))
			return RFAIL(r, SNAPSHOT_ERR_FORMAT,
				     "non-zero padding bytes between offsets %" PRIu64 " and %" PRIu64,
				     end, off[s]);
		end = off[s] + len[s];
	}
	if (end != r->size)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "the tensor data section ends at %" PRIu64 ", the file at %" PRIu64, end,
			     r->size);
	if (h->data_offset % SNAPSHOT_TENSOR_ALIGN)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "tensor data offset %" PRIu64
			     " is not a multiple of %d", h->data_offset, SNAPSHOT_TENSOR_ALIGN);
	if (h->n_tensors > SNAPSHOT_MAX_TENSORS)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "%u tensors, a snapshot holds at most %u",
			     h->n_tensors, SNAPSHOT_MAX_TENSORS);
	sum = XXH64(r->base + h->meta_offset, h->meta_size, 0);
	if (sum != h->meta_checksum)
		return RFAIL(r, SNAPSHOT_ERR_CHECKSUM,
			     "metadata checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->meta_checksum, sum);
	sum = XXH64(r->base + h->hlo_offset, h->hlo_size, 0);
	if (sum != h->hlo_checksum)
		return RFAIL(r, SNAPSHOT_ERR_CHECKSUM,
			     "HLO text checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
			     "): the file is corrupt", h->hlo_checksum, sum);
	return SNAPSHOT_OK;
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
static snapshot_status_t get_str(reader_t *r, const json_t *root, const char *key, char **out)
{
	const json_t *v = json_object_get(root, key);
	const char *s = "";
	size_t len = 0;
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return RFAIL(r, SNAPSHOT_ERR_FORMAT, "metadata member \"%s\" is not a string", key);
		s = json_string_value(v);
		len = json_string_length(v);
	}
	*out = malloc(len + 1);
	if (!*out)
		return RFAIL(r, SNAPSHOT_ERR_NOMEM, "out of memory");
	memcpy(*out, s, len);
	(*out)[len] = '\0';
	return SNAPSHOT_OK;
}

static snapshot_status_t get_num(reader_t *r, const json_t *root, const char *key, uint64_t *out)
{
	const json_t *v = json_object_get(root, key);
	*out = 0;
	if (!v || json_is_null(v))
		return SNAPSHOT_OK;
	if (!get_u64(v, out))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "metadata member \"%s\" is not a non-negative integer", key);
	return SNAPSHOT_OK;
}

static snapshot_status_t parse_tensor(reader_t *r, const snap_header_t *h, const json_t *o,
				      uint32_t i, uint64_t *pos, snapshot_tensor_t *t)
{
	if (!json_is_object(o))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "tensor %u of the table is not a JSON object", i);
	const json_t *name = json_object_get(o, "name"), *role = json_object_get(o, "role");
	const json_t *dtype = json_object_get(o, "dtype"), *shape = json_object_get(o, "shape");
	const json_t *alias = json_object_get(o, "alias_input"), *jsum = json_object_get(o, "checksum");
	uint64_t offset, size;
	if (!json_is_string(name) || json_string_length(name) == 0 ||
	    json_string_length(name) >= SNAPSHOT_NAME_MAX ||
	    strlen(json_string_value(name)) != json_string_length(name))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u: \"name\" must be a string of 1..%d bytes without NUL", i,
			     SNAPSHOT_NAME_MAX - 1);
	memcpy(t->name, json_string_value(name), json_string_length(name) + 1);
	errmsg_escaped_t en = esc(t->name);
	if (!json_is_string(role))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "tensor %u '%s': \"role\" is not a string", i, en.s);
	if (strcmp(json_string_value(role), "input") == 0)
		t->role = SNAPSHOT_ROLE_INPUT;
	else if (strcmp(json_string_value(role), "output") == 0)
		t->role = SNAPSHOT_ROLE_OUTPUT;
	else
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': role '%s' is neither input nor output", i, en.s,
			     esc(json_string_value(role)).s);
	t->dtype = json_is_string(dtype) ? dtype_from_name(json_string_value(dtype)) : ISA_DT_INVALID;
	if (t->dtype == ISA_DT_INVALID)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "tensor %u '%s': unknown dtype %s", i, en.s,
			     json_is_string(dtype) ? esc(json_string_value(dtype)).s : "(not a string)");
	if (!json_is_array(shape) || json_array_size(shape) > SNAPSHOT_MAX_RANK)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': \"shape\" must be an array of at most %d dimensions", i,
			     en.s, SNAPSHOT_MAX_RANK);
	t->rank = (uint32_t)json_array_size(shape);
	for (uint32_t d = 0; d < t->rank; d++)
		if (!get_u64(json_array_get(shape, d), &t->shape[d]))
			return RFAIL(r, SNAPSHOT_ERR_FORMAT,
				     "tensor %u '%s': dimension %u is not a non-negative integer", i,
				     en.s, d);
	if (!json_is_integer(alias) || json_integer_value(alias) < -1 ||
	    json_integer_value(alias) > INT32_MAX)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': \"alias_input\" must be -1 or an input index", i, en.s);
	t->alias_input = (int32_t)json_integer_value(alias);
	if (!get_u64(json_object_get(o, "offset"), &offset) ||
	    !get_u64(json_object_get(o, "size"), &size))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': \"offset\" and \"size\" must be non-negative integers", i,
			     en.s);
	uint64_t need;
	if (!tensor_bytes(t->dtype, t->rank, t->shape, &need) || need != size)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': size %" PRIu64 " does not match its dtype and shape", i,
			     en.s, size);
	if (offset % SNAPSHOT_TENSOR_ALIGN || offset < *pos || offset > h->data_size ||
	    size > h->data_size - offset)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': [%" PRIu64 ", +%" PRIu64 ") is unaligned, overlaps the "
			     "previous tensor or lies outside the %" PRIu64 "-byte data section", i,
			     en.s, offset, size, h->data_size);
	const uint8_t *data = r->base + h->data_offset;
	if (!all_zero(data + *pos, offset - *pos))
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "non-zero padding before tensor %u '%s' in the data section", i, en.s);
	if (!json_is_string(jsum) || json_string_length(jsum) != 16)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT,
			     "tensor %u '%s': \"checksum\" must be 16 hex digits", i, en.s);
	uint64_t stored = 0;
	for (const char *p = json_string_value(jsum); *p; p++) {
		int v = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
		if (v < 0)
			return RFAIL(r, SNAPSHOT_ERR_FORMAT,
				     "tensor %u '%s': \"checksum\" must be 16 lowercase hex digits", i, en.s);
		stored = stored << 4 | (uint64_t)v;
	}
	t->data = data + offset;
	t->size = size;
	t->checksum = XXH64(t->data, size, 0);
	if (t->checksum != stored)
		return RFAIL(r, SNAPSHOT_ERR_CHECKSUM,
			     "tensor %u '%s': data checksum mismatch (stored %016" PRIx64
			     ", computed %016" PRIx64 "): the file is corrupt", i, en.s, stored,
			     t->checksum);
	*pos = offset + size;
	return SNAPSHOT_OK;
}

static snapshot_status_t parse_meta(reader_t *r, const snap_header_t *h, snapshot_t *s,
				    snap_store_t *store)
{
	json_error_t jerr;
	json_t *root = json_loadb((const char *)r->base + h->meta_offset, h->meta_size,
				  JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return RFAIL(r, SNAPSHOT_ERR_FORMAT, "metadata is not valid JSON: %s (byte %d)",
			     jerr.text, jerr.position);
	snapshot_status_t st = SNAPSHOT_OK;
	const json_t *fmt = json_object_get(root, "format");
	const json_t *tab = json_object_get(root, "tensors");
	const json_t *error = json_object_get(root, "error");
	const json_t *status = json_object_get(root, "status");
	if (!json_is_object(root) || !json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), SNAPSHOT_FORMAT_NAME) != 0) {
		st = RFAIL(r, SNAPSHOT_ERR_FORMAT,
			   "metadata is not a snapshot description (\"format\" is not \""
			   SNAPSHOT_FORMAT_NAME "\")");
		goto out;
	}
	if (!json_is_array(tab) || json_array_size(tab) != h->n_tensors) {
		st = RFAIL(r, SNAPSHOT_ERR_FORMAT,
			   "the tensor table has %zu entries, the header says %u",
			   json_is_array(tab) ? json_array_size(tab) : (size_t)0, h->n_tensors);
		goto out;
	}
	if (error && !json_is_null(error) && !json_is_object(error)) {
		st = RFAIL(r, SNAPSHOT_ERR_FORMAT, "metadata member \"error\" is not an object");
		goto out;
	}
	if (status && !json_is_null(status) && !json_is_integer(status)) {
		st = RFAIL(r, SNAPSHOT_ERR_FORMAT, "metadata member \"status\" is not an integer");
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
			st = RFAIL(r, SNAPSHOT_ERR_NOMEM, "out of memory");
			goto out;
		}
		s->meta.error_json = store->error_json;
	}
	s->tensors = calloc(h->n_tensors ? h->n_tensors : 1, sizeof(*s->tensors));
	if (!s->tensors) {
		st = RFAIL(r, SNAPSHOT_ERR_NOMEM, "out of memory for %u tensors", h->n_tensors);
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
			st = RFAIL(r, SNAPSHOT_ERR_FORMAT,
				   "tensor %u '%s': alias_input %d is not the table index of an input",
				   i, esc(s->tensors[i].name).s, a);
			goto out;
		}
	}
	if (!all_zero(r->base + h->data_offset + pos, h->data_size - pos)) {
		st = RFAIL(r, SNAPSHOT_ERR_FORMAT, "non-zero padding after the last tensor");
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
static snapshot_status_t parse_owned(uint8_t *buf, uint64_t size, snapshot_t **out,
				     char *err, size_t err_len)
{
	reader_t r = { buf, size, err, err_len };
	snap_header_t h;
	snapshot_t *s = calloc(1, sizeof(*s));
	snap_store_t *store = calloc(1, sizeof(*store));
	if (!s || !store) {
		free(s);
		free(store);
		free(buf);
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len, "out of memory");
	}
	store->image = buf;
	s->priv = store;
	snapshot_status_t st = check_header(&r, &h);
	if (st == SNAPSHOT_OK)
		st = parse_meta(&r, &h, s, store);
	if (st == SNAPSHOT_OK) {
		store->hlo_text = malloc(h.hlo_size + 1);
		if (!store->hlo_text) {
			st = fail(SNAPSHOT_ERR_NOMEM, err, err_len,
				  "out of memory for %" PRIu64 " bytes of HLO text", h.hlo_size);
		} else {
			memcpy(store->hlo_text, buf + h.hlo_offset, h.hlo_size);
			store->hlo_text[h.hlo_size] = '\0';
		}
	}
	if (st != SNAPSHOT_OK) {
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
	if (err && err_len)
		err[0] = '\0';
	return SNAPSHOT_OK;
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

snapshot_status_t snapshot_parse(const void *data, size_t size, snapshot_t **out_snapshot,
				 char *err, size_t err_len)
{
	if (!out_snapshot)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot_parse: no output pointer");
	*out_snapshot = NULL;
	if (!data && size)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot_parse: no data");
	uint8_t *buf = image_alloc(size);
	if (!buf)
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len,
			    "out of memory for a %zu-byte snapshot image", size);
	if (size)
		memcpy(buf, data, size);
	return parse_owned(buf, size, out_snapshot, err, err_len);
}

snapshot_status_t snapshot_read(const char *path, snapshot_t **out_snapshot, char *err,
				size_t err_len)
{
	if (!out_snapshot)
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot_read: no output pointer");
	*out_snapshot = NULL;
	if (!path || !path[0])
		return fail(SNAPSHOT_ERR_INVALID, err, err_len, "snapshot_read: no path given");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(SNAPSHOT_ERR_IO, err, err_len, "cannot open snapshot %s: %s", path,
			    strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb)) {
		int e = errno;
		close(fd);
		return fail(SNAPSHOT_ERR_IO, err, err_len, "cannot stat snapshot %s: %s", path,
			    strerror(e));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return fail(SNAPSHOT_ERR_IO, err, err_len, "cannot read snapshot %s: not a regular file",
			    path);
	}
	uint64_t size = (uint64_t)sb.st_size;
	uint8_t *buf = image_alloc(size);
	if (!buf) {
		close(fd);
		return fail(SNAPSHOT_ERR_NOMEM, err, err_len,
			    "snapshot %s: out of memory for its %" PRIu64 " bytes", path, size);
	}
	uint64_t got = 0;
	while (got < size) {
		size_t chunk = size - got > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(size - got);
		ssize_t n = read(fd, buf + got, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : 0;
			close(fd);
			free(buf);
			return fail(SNAPSHOT_ERR_IO, err, err_len,
				    "cannot read snapshot %s: %s", path,
				    e ? strerror(e) : "the file shrank while being read");
		}
		got += (uint64_t)n;
	}
	close(fd);
	char msg[400];
	snapshot_status_t st = parse_owned(buf, size, out_snapshot, msg, sizeof(msg));
	if (st != SNAPSHOT_OK)
		fail(st, err, err_len, "snapshot %s: %s", path, msg);
	else if (err && err_len)
		err[0] = '\0';
	return st;
}
