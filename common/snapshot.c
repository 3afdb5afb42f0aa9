/* HLO snapshot files: status and role names and the atomic writer (docs/snapshot.md; the reader: snapshot_read.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "snapshot_internal.h"

static const uint8_t zeros[SNAPSHOT_DATA_ALIGN];

const char *snapshot_role_name(uint32_t role)
{
	switch (role) {
	case SNAPSHOT_ROLE_INPUT: return "input";
	case SNAPSHOT_ROLE_OUTPUT: return "output";
	default: return "?";
	}
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
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

static ns_status_t check_write_args(const char *path, const snapshot_meta_t *meta,
				    const char *hlo_text, size_t hlo_size,
				    const snapshot_tensor_t *tensors, uint32_t n)
{
	if (!path || !path[0])
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT, "snapshot_write: no path given");
	if (!meta)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot %s: no metadata given", path);
	if (hlo_size && !hlo_text)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot %s: %zu bytes of HLO text but no text pointer", path, hlo_size);
	if (n && !tensors)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot %s: %u tensors but no tensor array", path, n);
	if (n > SNAPSHOT_MAX_TENSORS)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "snapshot %s: %u tensors, a snapshot holds at most %u", path, n,
				      SNAPSHOT_MAX_TENSORS);
	for (uint32_t i = 0; i < n; i++) {
		const snapshot_tensor_t *t = &tensors[i];
		uint64_t bytes = 0;
		if (!memchr(t->name, 0, sizeof(t->name)) || !t->name[0])
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u has an empty or unterminated name", path, i);
		if (t->role != SNAPSHOT_ROLE_INPUT && t->role != SNAPSHOT_ROLE_OUTPUT)
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has role %u (0 input, 1 output)", path,
					      i, t->name, t->role);
		if (!isa_dtype_size(t->dtype))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has dtype %u, not an ISA dtype", path, i,
					      t->name, t->dtype);
		if (t->rank > SNAPSHOT_MAX_RANK)
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has rank %u (at most %d)", path, i,
					      t->name, t->rank, SNAPSHOT_MAX_RANK);
		if (!snap_tensor_bytes(t->dtype, t->rank, t->shape, &bytes) || bytes != t->size)
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has %" PRIu64
					      " bytes but its dtype and shape need %" PRIu64, path, i, t->name,
					      t->size, bytes);
		if (t->size && !t->data)
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has no data pointer", path, i, t->name);
		/* alias_input indexes this file's table and names an input */
		if (t->alias_input != -1 &&
		    (t->role != SNAPSHOT_ROLE_OUTPUT || t->alias_input < 0 || (uint32_t)t->alias_input >= n ||
		     tensors[t->alias_input].role != SNAPSHOT_ROLE_INPUT))
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u '%s' has alias_input %d: it must be -1, or for "
					      "an output the table index of an input", path, i, t->name,
					      t->alias_input);
	}
	return NS_OK;
}

/* The JSON metadata text (malloc'd, NUL-terminated) with the tensor table.
 * sums NULL: zero checksums, which have the same length (16 hex digits), so the
 * text's size is known before the data is hashed. */
static ns_status_t build_meta(const char *path, const snapshot_meta_t *meta,
			      const snapshot_tensor_t *tensors, uint32_t n,
			      const uint64_t *offsets, const uint64_t *sums, char **out_text)
{
	*out_text = NULL;
	json_t *root = json_object(), *arr = json_array();
	json_t *error = NULL;
	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "snapshot %s: out of memory", path);
	}
	if (meta->error_json) {
		json_error_t jerr;
		error = json_loads(meta->error_json, JSON_REJECT_DUPLICATES, &jerr);
		if (!error || !json_is_object(error)) {
			json_decref(error);
			json_decref(root);
			json_decref(arr);
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: the error record is not a JSON object (%s)", path,
					      error ? "another JSON value" : errmsg_escape(jerr.text, 64).s);
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
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
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
			return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
					      "snapshot %s: tensor %u's name is not valid UTF-8, or out of memory",
					      path, i);
		}
	}
	if (json_object_set_new(root, "tensors", arr)) {
		json_decref(root);
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "snapshot %s: out of memory", path);
	}
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "snapshot %s: out of memory", path);
	*out_text = text;
	return NS_OK;
}

/* All n bytes out, through EINTR and short writes: write() at the file offset
 * (off < 0, *done counts them) or pwrite() at off. */
static int write_full(int fd, const void *p, uint64_t n, int64_t off, uint64_t *done)
{
	const uint8_t *b = p;
	while (n) {
		/* Linux moves at most ~2 GiB per call; 1 GiB keeps the count exact. */
		size_t chunk = n > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
		ssize_t w = off < 0 ? write(fd, b, chunk) : pwrite(fd, b, chunk, (off_t)off);
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
		if (off >= 0)
			off += w;
		else
			*done += (uint64_t)w;
	}
	return 0;
}

static int write_all(int fd, const void *p, uint64_t n, uint64_t *done)
{
	return write_full(fd, p, n, -1, done);
}

static int pwrite_all(int fd, const void *p, uint64_t n, uint64_t off)
{
	return write_full(fd, p, n, (int64_t)off, NULL);
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

ns_status_t snapshot_write(const char *path, const snapshot_meta_t *meta,
			   const char *hlo_text, size_t hlo_size,
			   const snapshot_tensor_t *tensors, uint32_t n)
{
	errno = 0;
	ns_status_t st = check_write_args(path, meta, hlo_text, hlo_size, tensors, n);
	if (st)
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
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "snapshot %s: out of memory", path);
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
	st = build_meta(path, meta, tensors, n, offsets, NULL, &meta_text);
	if (st) {
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
	st = build_meta(path, meta, tensors, n, offsets, sums, &meta_text);
	if (st || strlen(meta_text) != meta_size) {
		/* The same text with same-width checksums has the same size, unless an
		 * allocation failed inside jansson (its parser can then drop a key of
		 * the error record instead of failing). */
		atomic_file_abort(&af);
		free(offsets);
		free(sums);
		XXH64_freeState(hs);
		free(meta_text);
		errno = ENOMEM;
		return st ? st : ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
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
	return NS_OK;

out_fail:
	e = errno;
	atomic_file_abort(&af);
out_fail_nofile:
	if (e == ENOSPC || e == EDQUOT)
		st = ns_status_make_errno(e, "cannot %s snapshot %s: %s (%" PRIu64 " of %" PRIu64
					  " bytes written); no file was left: free space or point the "
					  "dump directory elsewhere", what, path, strerror(e), done,
					  h.file_size);
	else
		st = ns_status_make_errno(e, "cannot %s snapshot %s: %s; no file was left", what, path,
					  strerror(e));
	free(offsets);
	free(sums);
	XXH64_freeState(hs);
	free(meta_text);
	errno = e;
	return st;
}
