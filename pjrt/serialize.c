/* Serialized executables: a small checksummed container holding the NEFF and the program it was compiled from, and its validating reader (PJRT_Executable_DeserializeAndLoad). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "pjrt_internal.h"

/*
 * Container layout (docs/pjrt.md), integers little-endian:
 *
 *   0  magic "NSIMPJRT"               8
 *   8  u32 version (1)                4
 *  12  u32 header_size (64)           4
 *  16  u64 total_size                 8
 *  24  u64 checksum: XXH64, seed 0, of bytes [header_size, total_size)
 *  32  u32 format_len (1..15)         4
 *  36  u32 num_replicas (1..4096)     4
 *  40  u64 program_size (>= 1)        8
 *  48  u64 neff_size (>= 1)           8
 *  56  u32 num_partitions (1)         4
 *  60  u32 reserved (0)               4
 *  64  format, replica device ids (u32 each), program, the NEFF
 *
 * The NEFF is not parsed here: nrt_load validates it when the executable is
 * loaded, and its tensor table is checked against the program's signature.
 * Anything that does not add up is INVALID_ARGUMENT naming the field.
 */

#define MAGIC "NSIMPJRT"
#define VERSION 1u
#define HEADER 64u
#define MAX_REPLICAS 4096u

typedef struct header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t total_size;
	uint64_t checksum;
	uint32_t format_len;
	uint32_t num_replicas;
	uint64_t program_size;
	uint64_t neff_size;
	uint32_t num_partitions;
	uint32_t reserved;
} header_t;

_Static_assert(sizeof(header_t) == HEADER, "the serialized executable header is 64 bytes");

static void free_serialized(PJRT_SerializedExecutable *s)
{
	free(s);
}

PJRT_IMPL(Executable_Serialize)
{
	PJRT_CHECK_ARGS(args, PJRT_Executable_Serialize_Args, serialized_executable_deleter);
	PJRT_GET(pjrt_exec_handle_t, o, PJRT_KIND_EXECUTABLE, args->executable, "PJRT_Executable_Serialize");
	pjrt_exec_t *e = o->exec;
	header_t h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, 8);
	h.version = VERSION;
	h.header_size = HEADER;
	h.format_len = (uint32_t)strlen(e->format);
	h.num_replicas = (uint32_t)e->n_addr;
	h.program_size = e->program_size;
	h.neff_size = e->neff_size;
	h.num_partitions = (uint32_t)e->num_partitions;
	h.total_size = HEADER + h.format_len + 4ull * h.num_replicas + h.program_size + h.neff_size;
	uint8_t *buf = malloc(h.total_size);
	if (!buf) {
		pjrt_handle_put(o->h);
		return pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "PJRT_Executable_Serialize: out of memory");
	}
	uint8_t *p = buf + HEADER;
	memcpy(p, e->format, h.format_len);
	p += h.format_len;
	for (size_t r = 0; r < e->n_addr; r++, p += 4)
		memcpy(p, &e->addr_index[r], 4);
	memcpy(p, e->program, e->program_size);
	p += e->program_size;
	memcpy(p, e->neff, e->neff_size);
	h.checksum = XXH64(buf + HEADER, h.total_size - HEADER, 0);
	memcpy(buf, &h, sizeof(h));
	args->serialized_bytes = (const char *)buf;
	args->serialized_bytes_size = h.total_size;
	args->serialized_executable = (PJRT_SerializedExecutable *)buf;
	args->serialized_executable_deleter = free_serialized;
	pjrt_handle_put(o->h);
	return NULL;
}

static PJRT_Error *bad(const char *what)
{
	return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT,
			  "PJRT_Executable_DeserializeAndLoad: not a neuronsim serialized executable, or a "
			  "corrupt one: %s", what);
}

PJRT_IMPL(Executable_DeserializeAndLoad)
{
	static const char fn[] = "PJRT_Executable_DeserializeAndLoad";
	PJRT_CHECK_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args, loaded_executable);
	const uint8_t *data = (const uint8_t *)args->serialized_executable;
	size_t size = args->serialized_executable_size;
	if (!data && size)
		return pjrt_error(PJRT_Error_Code_INVALID_ARGUMENT, "%s: serialized_executable is NULL", fn);
	header_t h;
	if (size < HEADER)
		return bad("shorter than its 64-byte header");
	memcpy(&h, data, sizeof(h));
	if (memcmp(h.magic, MAGIC, 8) != 0)
		return bad("wrong magic (expected \"NSIMPJRT\")");
	if (h.version != VERSION)
		return pjrt_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "%s: serialized executable format version %u, this plugin reads %u: "
				  "recompile the program", fn, h.version, VERSION);
	if (h.header_size != HEADER)
		return bad("header_size is not 64");
	if (h.total_size != size)
		return bad("total_size does not match the number of bytes given");
	if (h.reserved != 0)
		return bad("reserved field is not zero");
	if (XXH64(data + HEADER, size - HEADER, 0) != h.checksum)
		return bad("checksum mismatch");
	if (h.format_len == 0 || h.format_len > 15)
		return bad("format_len out of range");
	if (h.num_replicas == 0 || h.num_replicas > MAX_REPLICAS)
		return bad("num_replicas out of range");
	if (h.num_partitions != 1)
		return bad("num_partitions is not 1");
	if (h.program_size == 0 || h.neff_size == 0)
		return bad("empty program or NEFF");
	uint64_t sum = HEADER + (uint64_t)h.format_len + 4ull * h.num_replicas, tmp;
	if (__builtin_add_overflow(sum, h.program_size, &tmp) || __builtin_add_overflow(tmp, h.neff_size, &sum) ||
	    sum != size)
		return bad("section sizes do not add up to total_size");
	const char *format = (const char *)data + HEADER;
	const uint8_t *ids = data + HEADER + h.format_len;
	const uint8_t *program = ids + 4ull * h.num_replicas;
	const uint8_t *neff = program + h.program_size;

	PJRT_GET(pjrt_client_t, c, PJRT_KIND_CLIENT, args->client, fn);
	PJRT_Error *err = NULL;
	pjrt_compile_options_t opts;
	memset(&opts, 0, sizeof(opts));
	pjrt_exec_parts_t parts;
	memset(&parts, 0, sizeof(parts));
	pjrt_exec_t *e = NULL;
	bool overridden = PJRT_HAS_FIELD(args, PJRT_Executable_DeserializeAndLoad_Args,
					 overridden_serialized_compile_options_size) &&
			  args->overridden_serialized_compile_options;
	if (overridden) {
		err = pjrt_compile_options_decode((const uint8_t *)args->overridden_serialized_compile_options,
						  args->overridden_serialized_compile_options_size, &opts);
	} else {
		opts.num_replicas = h.num_replicas;
		opts.num_partitions = 1;
		opts.n_assignment = h.num_replicas;
		opts.assignment = calloc(h.num_replicas, sizeof(int64_t));
		if (!opts.assignment)
			err = pjrt_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
		for (uint32_t r = 0; !err && r < h.num_replicas; r++) {
			uint32_t id;
			memcpy(&id, ids + 4ull * r, 4);
			opts.assignment[r] = id;
		}
	}
	if (!err)
		err = pjrt_compile_options_check(c, &opts);
	if (!err)
		err = pjrt_program_prepare(format, h.format_len, program, h.program_size, &opts, neff, h.neff_size,
					   &parts);
	if (!err)
		err = pjrt_exec_create(c, &parts, &e);
	if (!err && (err = pjrt_loaded_new(e, &args->loaded_executable)))
		pjrt_exec_unref(e);
	pjrt_compile_options_free(&opts);
	pjrt_handle_put(c->h);
	return err;
}
