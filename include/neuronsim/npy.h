/* A small .npy reader and writer (NumPy format 1.0/2.0/3.0, C order) shared by
 * the tools and tests; dtypes are named with the ISA's isa_dtype_t. */
#ifndef NEURONSIM_NPY_H
#define NEURONSIM_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "neuronsim/isa.h"
#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NumPy itself allows 32 (1.x) or 64 (2.x) dimensions; no model tensor here has
 * more than NEFF_MAX_TENSOR_RANK, so 32 covers every file we can be handed. */
#define NPY_MAX_RANK 32

/* A header larger than this is refused: NumPy's own reader refuses headers
 * above 10000 bytes by default, and a length field from a corrupt file must not
 * make us allocate gigabytes. */
#define NPY_MAX_HEADER_LEN (1u << 20)

/* Failures are statuses (status.h) with a one-line message naming what is wrong:
 *   NS_STATUS_INVALID_ARGUMENT    not a .npy file, a malformed header, truncated
 *                                 or trailing data; or a bad argument
 *   NS_STATUS_UNIMPLEMENTED       a valid .npy this reader does not handle:
 *                                 dtype, fortran_order, big-endian, a newer version
 *   NS_STATUS_RESOURCE_EXHAUSTED  out of memory
 *   the code of the errno         open/read/write failed (errno kept, and in the
 *                                 message) */

/* A dense C-order array. data holds nbytes bytes, little-endian. */
typedef struct npy_array {
	isa_dtype_t dtype;
	uint32_t rank;                 /* 0 for a scalar */
	uint64_t shape[NPY_MAX_RANK];
	uint64_t count;                /* elements: product of shape (1 for rank 0) */
	size_t nbytes;                 /* count * isa_dtype_size(dtype) */
	void *data;                    /* owned by the array; free with npy_array_free() */
} npy_array_t;

/* The parsed header of a .npy file. */
typedef struct npy_header {
	uint8_t version_major;         /* 1, 2 or 3 */
	uint8_t version_minor;
	isa_dtype_t dtype;
	uint32_t rank;
	uint64_t shape[NPY_MAX_RANK];
	uint64_t count;
	size_t data_offset;            /* where the array data starts in the file */
} npy_header_t;

/* The descr string the writer uses for dtype ('<f4', '|b1', '<V2' for bf16, ...),
 * or NULL when the dtype has no .npy spelling. */
const char *npy_dtype_descr(isa_dtype_t dtype);

/* Maps a descr string to a dtype. Accepts '<', '|' and '=' byte orders (this
 * is a little-endian host), and for bf16 the ml_dtypes convention '<V2'/'|V2'/'V2'.
 * Returns ISA_DT_INVALID when unknown. */
isa_dtype_t npy_dtype_from_descr(const char *descr);

/* Parses the header at the start of [data, data + size). Does not look at the
 * array data beyond checking nothing. On failure *out is zeroed. */
ns_status_t npy_parse_header(const void *data, size_t size, npy_header_t *out);

/* Parses a whole .npy image in memory and copies its data into out, which the
 * caller releases with npy_array_free(). The data must be exactly
 * count * itemsize bytes after the header (truncated or trailing bytes are a
 * failure). On failure *out is zeroed. */
ns_status_t npy_parse(const void *data, size_t size, npy_array_t *out);

/* npy_parse() on the contents of the file at path; its failures are annotated
 * with the path ("PATH: .npy data truncated: ..."), a file that cannot be read
 * says so ("cannot read 'PATH': No such file or directory"). */
ns_status_t npy_read_file(const char *path, npy_array_t *out);

/* Frees a->data and zeroes *a. Safe on a zeroed array and on NULL. */
void npy_array_free(npy_array_t *a);

/* Encodes an array as a .npy image (version 1.0, or 2.0 when the header does
 * not fit 1.0) into a malloc'd buffer the caller frees with free(). data holds
 * product(shape) * isa_dtype_size(dtype) bytes (may be NULL when that is 0). */
ns_status_t npy_encode(isa_dtype_t dtype, uint32_t rank, const uint64_t *shape,
		       const void *data, void **out_buf, size_t *out_size);

/* npy_encode() written to path (created or truncated, mode 0666 & ~umask).
 * A failed write leaves no partial file at path. */
ns_status_t npy_write_file(const char *path, isa_dtype_t dtype, uint32_t rank,
			   const uint64_t *shape, const void *data);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_NPY_H */
