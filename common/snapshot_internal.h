/* HLO snapshot files, shared by the writer (snapshot.c) and the reader (snapshot_read.c): the header layout, the format name, size arithmetic. */
#ifndef NEURONSIM_COMMON_SNAPSHOT_INTERNAL_H
#define NEURONSIM_COMMON_SNAPSHOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/errmsg.h"
#include "neuronsim/status.h"
#include "neuronsim/isa.h"
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

/* Bytes of a dense tensor, false when the product overflows 64 bits. */
static inline bool snap_tensor_bytes(uint32_t dtype, uint32_t rank, const uint64_t *shape, uint64_t *out)
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

#endif /* NEURONSIM_COMMON_SNAPSHOT_INTERNAL_H */
