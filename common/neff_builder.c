/* The NEFF builder: collects tensors, code, constants and debug info in memory
 * and serialises them into one checksummed container (docs/neff.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "neuronsim/neff.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define BUILDER_DEFAULT_VERSION \
	"neuronsim-builder " STR(NEFF_VERSION_MAJOR) "." STR(NEFF_VERSION_MINOR)
#define MAX_USER_ALIGN 4096u

/* A bad argument: "FUNCTION: WHAT" (a caller annotates it with its object). */
#define INVALID(...) ns_status_make(NS_STATUS_INVALID_ARGUMENT, __VA_ARGS__)
/* A NULL the caller must not pass. */
#define REQUIRE_NONNULL(p) \
	do { if (!(p)) return INVALID("%s: " #p " is NULL", __func__); } while (0)

typedef struct stream {
	isa_insn_t *insns;
	size_t count;
	size_t cap;
} stream_t;

struct neff_builder {
	neff_meta_t meta;
	neff_tensor_t *tensors;
	size_t n_tensors, cap_tensors;
	uint8_t *consts;
	size_t consts_size, cap_consts;
	neff_debug_entry_t *debug;
	size_t n_debug, cap_debug;
	char *strings;
	size_t strings_size, cap_strings;
	/* Open-addressing set of string pool offsets (+1, 0 = empty) so that
	 * repeated file names and op types are stored once. */
	uint32_t *str_slots;
	size_t str_nslots, str_used;
	char *hlo;
	size_t hlo_size;
	uint32_t alloc_fail_after; /* test hook, 0 = off */
	stream_t streams[NEFF_MAX_CORES][ISA_ENGINE_COUNT];
};

/* Every allocation goes through here so the test hook sees all of them. */
static void *builder_realloc(neff_builder_t *b, void *p, size_t size)
{
	if (b->alloc_fail_after) {
		if (--b->alloc_fail_after == 0)
			return NULL;
	}
	return realloc(p, size ? size : 1);
}

/* Out of memory (ENOMEM, RESOURCE_EXHAUSTED) allocating bytes for what. */
static ns_status_t no_memory(const char *what, size_t bytes)
{
	return ns_status_make_errno(ENOMEM, "out of memory allocating %zu bytes for %s", bytes,
				    what);
}

/* Makes room for need elements of elem bytes in *buf (capacity *cap), what
 * naming the table in the message. Grows geometrically; on failure *buf and
 * *cap are unchanged. */
static ns_status_t builder_reserve(neff_builder_t *b, void **buf, size_t *cap,
				   size_t need, size_t elem, const char *what)
{
	if (need <= *cap)
		return NS_OK;
	size_t ncap = *cap ? *cap : 16, bytes;
	while (ncap < need) {
		if (__builtin_mul_overflow(ncap, 2, &ncap))
			return no_memory(what, SIZE_MAX);
	}
	if (__builtin_mul_overflow(ncap, elem, &bytes))
		return no_memory(what, SIZE_MAX);
	void *p = builder_realloc(b, *buf, bytes);
	if (!p)
		return no_memory(what, bytes);
	*buf = p;
	*cap = ncap;
	return NS_OK;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Rounds v up to a multiple of align (a power of 2); false on overflow. */
static bool align_up(uint64_t v, uint64_t align, uint64_t *out)
{
	uint64_t t;
	if (__builtin_add_overflow(v, align - 1, &t))
		return false;
	*out = t & ~(align - 1);
	return true;
}

neff_builder_t *neff_builder_create(const char *model_name, uint32_t n_cores)
{
	if (!model_name || n_cores == 0 || n_cores > NEFF_MAX_CORES)
		return NULL;
	size_t len = strlen(model_name);
	neff_builder_t *b;
	if (len >= sizeof(b->meta.model_name))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	memcpy(b->meta.model_name, model_name, len);
	memcpy(b->meta.compiler_version, BUILDER_DEFAULT_VERSION,
	       sizeof(BUILDER_DEFAULT_VERSION));
	memcpy(b->meta.target, NEFF_TARGET, sizeof(NEFF_TARGET));
	b->meta.n_cores = n_cores;
	b->meta.isa_version_major = ISA_VERSION_MAJOR;
	/* raised by the instructions that need more (isa_insn_min_minor) */
	b->meta.isa_version_minor = isa_insn_min_minor(ISA_OP_NOP);
	return b;
}

void neff_builder_destroy(neff_builder_t *b)
{
	if (!b)
		return;
	for (uint32_t c = 0; c < NEFF_MAX_CORES; c++)
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++)
			free(b->streams[c][e].insns);
	free(b->tensors);
	free(b->consts);
	free(b->debug);
	free(b->strings);
	free(b->str_slots);
	free(b->hlo);
	free(b);
}

void neff_builder_set_alloc_fail_after(neff_builder_t *b, uint32_t n)
{
	if (b)
		b->alloc_fail_after = n;
}

ns_status_t neff_builder_add_tensor(neff_builder_t *b, const char *name,
				    neff_usage_t usage, isa_dtype_t dtype,
				    uint32_t rank, const uint64_t *shape,
				    int32_t alias_input, uint32_t *out_index)
{
	REQUIRE_NONNULL(b);
	REQUIRE_NONNULL(name);
	size_t len = strnlen(name, NEFF_NAME_MAX);
	if (len == 0)
		return INVALID("tensor name is empty");
	if (len >= NEFF_NAME_MAX)
		return INVALID("tensor '%.32s...': name longer than %d bytes", name,
			       NEFF_NAME_MAX - 1);
	if (rank && !shape)
		return INVALID("tensor '%s': rank %" PRIu32 " with a NULL shape", name, rank);
	if (usage != NEFF_USAGE_INPUT && usage != NEFF_USAGE_OUTPUT)
		return INVALID("tensor '%s': usage %d is neither input (%d) nor output (%d)", name,
			       (int)usage, NEFF_USAGE_INPUT, NEFF_USAGE_OUTPUT);
	size_t esize = isa_dtype_size(dtype);
	if (esize == 0)
		return INVALID("tensor '%s': dtype %d is not an ISA element type", name, (int)dtype);
	if (rank > NEFF_MAX_TENSOR_RANK)
		return INVALID("tensor '%s': rank %" PRIu32 ", the NEFF allows at most %d", name,
			       rank, NEFF_MAX_TENSOR_RANK);
	/* Region ids are ISA_REGION_IO0 + index and must stay below NONE. */
	if (b->n_tensors >= ISA_REGION_NONE - ISA_REGION_IO0 - 1)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "tensor '%s': the NEFF already has %zu tensors, the most "
				      "its region ids can number", name, b->n_tensors);
	uint64_t size = esize;
	for (uint32_t i = 0; i < rank; i++)
		if (__builtin_mul_overflow(size, shape[i], &size))
			return INVALID("tensor '%s': the byte size of its shape overflows 64 bits",
				       name);
	if (size > NEFF_MAX_REGION_SIZE)
		return INVALID("tensor '%s': %" PRIu64 " bytes, above the NEFF's region limit of "
			       "%llu", name, size, NEFF_MAX_REGION_SIZE);
	if (alias_input != -1) {
		if (usage != NEFF_USAGE_OUTPUT)
			return INVALID("tensor '%s': only an output can alias an input", name);
		if (alias_input < 0 || (size_t)alias_input >= b->n_tensors)
			return INVALID("tensor '%s': aliases tensor %" PRId32 ", which does not "
				       "exist (%zu tensors so far)", name, alias_input, b->n_tensors);
		const neff_tensor_t *in = &b->tensors[alias_input];
		if (in->usage != NEFF_USAGE_INPUT)
			return INVALID("tensor '%s': aliases tensor %" PRId32 " '%s', which is not "
				       "an input", name, alias_input, in->name);
		if (in->dtype != (uint32_t)dtype || in->size != size)
			return INVALID("tensor '%s' (%s, %" PRIu64 " bytes): aliases input '%s' "
				       "(%s, %" PRIu64 " bytes), which differs in dtype or size",
				       name, isa_dtype_name(dtype), size, in->name,
				       isa_dtype_name(in->dtype), in->size);
	}
	for (size_t i = 0; i < b->n_tensors; i++)
		if (strcmp(b->tensors[i].name, name) == 0)
			return INVALID("tensor '%s': the name is already tensor %zu's", name, i);

	NS_RETURN_IF_ERROR_F(builder_reserve(b, (void **)&b->tensors, &b->cap_tensors,
					     b->n_tensors + 1, sizeof(neff_tensor_t),
					     "the tensor table"),
			     "tensor '%s'", name);
	neff_tensor_t *t = &b->tensors[b->n_tensors];
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name, len);
	t->usage = usage;
	t->dtype = dtype;
	t->rank = rank;
	t->alias_input = alias_input;
	for (uint32_t i = 0; i < rank; i++)
		t->shape[i] = shape[i];
	t->size = size;
	if (out_index)
		*out_index = (uint32_t)b->n_tensors;
	b->n_tensors++;
	return NS_OK;
}

/* Checks that align is a power of 2 no larger than MAX_USER_ALIGN and places
 * size bytes at the first multiple of it from *cursor, within the region
 * limit: *out_off and *out_end on success. what names the region. */
static ns_status_t place_in_region(const char *what, uint64_t cursor, uint64_t size,
				   uint64_t align, uint64_t *out_off, uint64_t *out_end)
{
	if (!is_pow2(align) || align > MAX_USER_ALIGN)
		return INVALID("%s of %" PRIu64 " bytes: alignment %" PRIu64 " is not a power "
			       "of 2 up to %u", what, size, align, MAX_USER_ALIGN);
	if (!align_up(cursor, align, out_off) ||
	    __builtin_add_overflow(*out_off, size, out_end) || *out_end > NEFF_MAX_REGION_SIZE)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "%s of %" PRIu64 " bytes: the region would pass the NEFF's "
				      "limit of %llu bytes (%" PRIu64 " used)", what, size,
				      NEFF_MAX_REGION_SIZE, cursor);
	return NS_OK;
}

ns_status_t neff_builder_add_const(neff_builder_t *b, const void *data,
				   uint64_t size, uint64_t align,
				   uint64_t *out_offset)
{
	REQUIRE_NONNULL(b);
	uint64_t off = 0, end = 0;
	NS_RETURN_IF_ERROR(place_in_region("constant", b->consts_size, size, align, &off, &end));
	if (end > SIZE_MAX)
		return no_memory("the constants", SIZE_MAX);
	NS_RETURN_IF_ERROR_F(builder_reserve(b, (void **)&b->consts, &b->cap_consts,
					     (size_t)end, 1, "the constants"),
			     "constant of %" PRIu64 " bytes", size);
	memset(b->consts + b->consts_size, 0, (size_t)(off - b->consts_size));
	if (data)
		memcpy(b->consts + off, data, (size_t)size);
	else
		memset(b->consts + off, 0, (size_t)size);
	b->consts_size = (size_t)end;
	if (out_offset)
		*out_offset = off;
	return NS_OK;
}

ns_status_t neff_builder_add_scratch(neff_builder_t *b, uint64_t size,
				     uint64_t align, uint64_t *out_offset)
{
	REQUIRE_NONNULL(b);
	uint64_t off = 0, end = 0;
	NS_RETURN_IF_ERROR(place_in_region("scratch", b->meta.scratch_size, size, align, &off,
					   &end));
	b->meta.scratch_size = end;
	if (out_offset)
		*out_offset = off;
	return NS_OK;
}

/* Rebuilds the dedup set with nslots slots (a power of 2). */
static ns_status_t strings_rehash(neff_builder_t *b, size_t nslots)
{
	uint32_t *slots = builder_realloc(b, NULL, nslots * sizeof(uint32_t));
	if (!slots)
		return no_memory("the debug string index", nslots * sizeof(uint32_t));
	memset(slots, 0, nslots * sizeof(uint32_t));
	for (size_t i = 0; i < b->str_nslots; i++) {
		uint32_t v = b->str_slots[i];
		if (!v)
			continue;
		const char *s = b->strings + v - 1;
		size_t h = (size_t)XXH64(s, strlen(s), 0) & (nslots - 1);
		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = v;
	}
	free(b->str_slots);
	b->str_slots = slots;
	b->str_nslots = nslots;
	return NS_OK;
}

/* Returns the pool offset of s, adding it if new. Cannot fail: the caller has
 * made room with strings_reserve() first. */
static uint32_t strings_intern(neff_builder_t *b, const char *s)
{
	size_t len = strlen(s);
	size_t mask = b->str_nslots - 1;
	size_t h = (size_t)XXH64(s, len, 0) & mask;
	for (; b->str_slots[h]; h = (h + 1) & mask) {
		const char *t = b->strings + b->str_slots[h] - 1;
		if (strcmp(t, s) == 0)
			return b->str_slots[h] - 1;
	}
	uint32_t off = (uint32_t)b->strings_size;
	memcpy(b->strings + off, s, len + 1);
	b->str_slots[h] = off + 1;
	b->str_used++;
	b->strings_size += len + 1;
	return off;
}

/* Makes room for n more strings of at most bytes bytes in total, so that a
 * debug entry is added completely or not at all. */
static ns_status_t strings_reserve(neff_builder_t *b, size_t n, size_t bytes)
{
	size_t end;
	/* Offsets are u32 in the format, and a slot stores offset + 1. */
	if (__builtin_add_overflow(b->strings_size, bytes, &end) || end >= UINT32_MAX)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "the debug strings would pass the NEFF's limit of 4 GiB "
				      "(%zu bytes used, %zu more)", b->strings_size, bytes);
	NS_RETURN_IF_ERROR(builder_reserve(b, (void **)&b->strings, &b->cap_strings, end, 1,
					   "the debug strings"));
	if (b->str_used + n > b->str_nslots / 2) {
		size_t ns = b->str_nslots ? b->str_nslots : 64;
		while (b->str_used + n > ns / 2)
			ns *= 2;
		return strings_rehash(b, ns);
	}
	return NS_OK;
}

ns_status_t neff_builder_add_debug(neff_builder_t *b, const char *hlo_name,
				   const char *op_type, const char *source_file,
				   uint32_t source_line, uint32_t *out_debug_id)
{
	REQUIRE_NONNULL(b);
	const char *strs[3] = { hlo_name ? hlo_name : "", op_type ? op_type : "",
				source_file ? source_file : "" };
	if (b->n_debug >= ISA_DEBUG_NONE - 1)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "debug entry '%.64s': the NEFF already has %zu, the most "
				      "debug ids can number", strs[0], b->n_debug);
	size_t bytes = 0;
	for (int i = 0; i < 3; i++) {
		size_t l = strnlen(strs[i], UINT32_MAX);
		if (l >= UINT32_MAX)
			return INVALID("debug entry '%.64s': a string of 4 GiB or more", strs[0]);
		bytes += l + 1;
	}
	NS_RETURN_IF_ERROR_F(builder_reserve(b, (void **)&b->debug, &b->cap_debug,
					     b->n_debug + 1, sizeof(neff_debug_entry_t),
					     "the debug map"),
			     "debug entry '%.64s'", strs[0]);
	NS_RETURN_IF_ERROR_F(strings_reserve(b, 3, bytes), "debug entry '%.64s'", strs[0]);
	neff_debug_entry_t e = { .source_line = source_line };
	e.hlo_name = strings_intern(b, strs[0]);
	e.op_type = strings_intern(b, strs[1]);
	e.source_file = strings_intern(b, strs[2]);
	b->debug[b->n_debug] = e;
	if (out_debug_id)
		*out_debug_id = (uint32_t)b->n_debug;
	b->n_debug++;
	return NS_OK;
}

/* The stream of (core, engine) in *out, or why there is none. */
static ns_status_t builder_stream(neff_builder_t *b, uint32_t core, isa_engine_t engine,
				  stream_t **out)
{
	if (core >= b->meta.n_cores)
		return INVALID("core %" PRIu32 ": the NEFF has %" PRIu32 " cores", core,
			       b->meta.n_cores);
	if ((uint32_t)engine >= ISA_ENGINE_COUNT)
		return INVALID("core %" PRIu32 ": engine %" PRIu32 " does not exist (%d engines)",
			       core, (uint32_t)engine, ISA_ENGINE_COUNT);
	*out = &b->streams[core][engine];
	return NS_OK;
}

ns_status_t neff_builder_emit(neff_builder_t *b, uint32_t core,
			      isa_engine_t engine, const isa_insn_t *insn,
			      uint32_t *out_index)
{
	REQUIRE_NONNULL(b);
	REQUIRE_NONNULL(insn);
	stream_t *s = NULL;
	NS_RETURN_IF_ERROR_F(builder_stream(b, core, engine, &s), "emitting %s",
			     isa_opcode_name(insn->opcode));
	if (s->count >= UINT32_MAX)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "emitting %s: the stream of core %" PRIu32 " engine %s "
				      "already has the most instructions a stream can hold",
				      isa_opcode_name(insn->opcode), core, isa_engine_name(engine));
	NS_RETURN_IF_ERROR_F(builder_reserve(b, (void **)&s->insns, &s->cap, s->count + 1,
					     sizeof(isa_insn_t), "an instruction stream"),
			     "emitting %s on core %" PRIu32 " engine %s",
			     isa_opcode_name(insn->opcode), core, isa_engine_name(engine));
	s->insns[s->count] = *insn;
	if (isa_insn_min_minor(insn->opcode) > b->meta.isa_version_minor)
		b->meta.isa_version_minor = isa_insn_min_minor(insn->opcode);
	if (out_index)
		*out_index = (uint32_t)s->count;
	s->count++;
	return NS_OK;
}

ns_status_t neff_builder_patch(neff_builder_t *b, uint32_t core,
			       isa_engine_t engine, uint32_t index,
			       const isa_insn_t *insn)
{
	REQUIRE_NONNULL(b);
	REQUIRE_NONNULL(insn);
	stream_t *s = NULL;
	NS_RETURN_IF_ERROR_F(builder_stream(b, core, engine, &s), "patching instruction %" PRIu32,
			     index);
	if (index >= s->count)
		return ns_status_make(NS_STATUS_OUT_OF_RANGE,
				      "patching instruction %" PRIu32 " of core %" PRIu32
				      " engine %s: the stream has %zu", index, core,
				      isa_engine_name(engine), s->count);
	s->insns[index] = *insn;
	if (isa_insn_min_minor(insn->opcode) > b->meta.isa_version_minor)
		b->meta.isa_version_minor = isa_insn_min_minor(insn->opcode);
	return NS_OK;
}

ns_status_t neff_builder_set_hlo(neff_builder_t *b, const char *text,
				 size_t len)
{
	REQUIRE_NONNULL(b);
	if (!text && len)
		return INVALID("HLO text: NULL with a length of %zu", len);
	char *copy = NULL;
	if (len) {
		copy = builder_realloc(b, NULL, len);
		if (!copy)
			return no_memory("the HLO text", len);
		memcpy(copy, text, len);
	}
	free(b->hlo);
	b->hlo = copy;
	b->hlo_size = len;
	return NS_OK;
}

ns_status_t neff_builder_set_compiler_version(neff_builder_t *b,
					      const char *version)
{
	REQUIRE_NONNULL(b);
	REQUIRE_NONNULL(version);
	size_t len = strnlen(version, sizeof(b->meta.compiler_version));
	if (len >= sizeof(b->meta.compiler_version))
		return INVALID("compiler version '%.32s...': longer than %zu bytes", version,
			       sizeof(b->meta.compiler_version) - 1);
	memset(b->meta.compiler_version, 0, sizeof(b->meta.compiler_version));
	memcpy(b->meta.compiler_version, version, len);
	return NS_OK;
}

/* ---- serialisation ---------------------------------------------------- */

typedef struct plan_sect {
	uint32_t type;
	uint64_t offset, size;
} plan_sect_t;

/* Places a section of size bytes at the next NEFF_ALIGN boundary. */
static bool plan_add(plan_sect_t *ps, uint32_t *n, uint64_t *cursor,
		     uint32_t type, uint64_t size)
{
	uint64_t off, end;
	if (!align_up(*cursor, NEFF_ALIGN, &off) ||
	    __builtin_add_overflow(off, size, &end))
		return false;
	ps[*n] = (plan_sect_t){ .type = type, .offset = off, .size = size };
	(*n)++;
	*cursor = end;
	return true;
}

static uint64_t code_table_size(const neff_builder_t *b)
{
	return sizeof(neff_code_header_t) +
	       (uint64_t)b->meta.n_cores * ISA_ENGINE_COUNT * sizeof(neff_code_stream_t);
}

/* Writes the CODE section at dst: header, stream table, then the streams
 * back to back in core-major order (every isa_insn_t is a multiple of 8). */
static void write_code(const neff_builder_t *b, uint8_t *dst)
{
	neff_code_header_t ch = { .n_cores = b->meta.n_cores,
				  .n_engines = ISA_ENGINE_COUNT };
	memcpy(dst, &ch, sizeof(ch));
	uint64_t table = sizeof(ch);
	uint64_t cursor = code_table_size(b);
	for (uint32_t c = 0; c < b->meta.n_cores; c++) {
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			const stream_t *s = &b->streams[c][e];
			neff_code_stream_t cs = { .offset = cursor,
						  .count = (uint32_t)s->count };
			memcpy(dst + table, &cs, sizeof(cs));
			table += sizeof(cs);
			if (s->count)
				memcpy(dst + cursor, s->insns, s->count * sizeof(isa_insn_t));
			cursor += s->count * sizeof(isa_insn_t);
		}
	}
}

/* A NEFF that cannot be laid out in this address space. */
static ns_status_t too_big(const neff_builder_t *b)
{
	return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
			      "NEFF '%s': the sections' sizes overflow the address space",
			      b->meta.model_name);
}

ns_status_t neff_builder_finish(neff_builder_t *b, void **out_data,
				size_t *out_size)
{
	REQUIRE_NONNULL(b);
	REQUIRE_NONNULL(out_data);
	REQUIRE_NONNULL(out_size);

	/* Sizes of every section, overflow-checked. */
	uint64_t tensors_size, code_size = code_table_size(b), debug_size = 0;
	if (__builtin_mul_overflow((uint64_t)b->n_tensors, sizeof(neff_tensor_t),
				   &tensors_size))
		return too_big(b);
	for (uint32_t c = 0; c < b->meta.n_cores; c++)
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			uint64_t bytes;
			if (__builtin_mul_overflow((uint64_t)b->streams[c][e].count,
						   sizeof(isa_insn_t), &bytes) ||
			    __builtin_add_overflow(code_size, bytes, &code_size))
				return too_big(b);
		}
	if (b->n_debug) {
		if (__builtin_mul_overflow((uint64_t)b->n_debug,
					   sizeof(neff_debug_entry_t), &debug_size) ||
		    __builtin_add_overflow(debug_size,
					   sizeof(neff_debug_header_t) + b->strings_size,
					   &debug_size) ||
		    b->strings_size > UINT32_MAX)
			return too_big(b);
	}

	/* Layout: header, section table, then sections in a fixed order. */
	plan_sect_t ps[6];
	uint32_t n = 2 + 1 + (b->consts_size > 0) + (b->n_debug > 0) + (b->hlo_size > 0);
	uint64_t cursor = sizeof(neff_header_t) + (uint64_t)n * sizeof(neff_section_t);
	uint32_t k = 0;
	bool ok = plan_add(ps, &k, &cursor, NEFF_SECT_META, sizeof(neff_meta_t)) &&
		  plan_add(ps, &k, &cursor, NEFF_SECT_TENSORS, tensors_size) &&
		  plan_add(ps, &k, &cursor, NEFF_SECT_CODE, code_size);
	if (ok && b->consts_size)
		ok = plan_add(ps, &k, &cursor, NEFF_SECT_CONSTS, b->consts_size);
	if (ok && b->n_debug)
		ok = plan_add(ps, &k, &cursor, NEFF_SECT_DEBUG, debug_size);
	if (ok && b->hlo_size)
		ok = plan_add(ps, &k, &cursor, NEFF_SECT_HLO, b->hlo_size);
	if (!ok || cursor > SIZE_MAX)
		return too_big(b);

	uint8_t *buf = builder_realloc(b, NULL, (size_t)cursor);
	if (!buf)
		return ns_status_annotate(no_memory("the serialised NEFF", (size_t)cursor),
					  "NEFF '%s'", b->meta.model_name);
	/* Zero first: padding and unused string bytes are part of the
	 * checksum, and must be zero for deterministic output. */
	memset(buf, 0, (size_t)cursor);

	neff_header_t h = {
		.version_major = NEFF_VERSION_MAJOR,
		.version_minor = NEFF_VERSION_MINOR,
		.header_size = sizeof(neff_header_t),
		.total_size = cursor,
		.section_count = n,
		.section_table_offset = sizeof(neff_header_t),
	};
	memcpy(h.magic, NEFF_MAGIC, sizeof(h.magic));
	for (uint32_t i = 0; i < n; i++) {
		neff_section_t s = { .type = ps[i].type, .offset = ps[i].offset,
				     .size = ps[i].size };
		memcpy(buf + sizeof(h) + i * sizeof(s), &s, sizeof(s));
		uint8_t *dst = buf + ps[i].offset;
		switch (ps[i].type) {
		case NEFF_SECT_META: {
			neff_meta_t m = b->meta;
			m.n_tensors = (uint32_t)b->n_tensors;
			memcpy(dst, &m, sizeof(m));
			break;
		}
		case NEFF_SECT_TENSORS:
			if (b->n_tensors)
				memcpy(dst, b->tensors, (size_t)tensors_size);
			break;
		case NEFF_SECT_CODE:
			write_code(b, dst);
			break;
		case NEFF_SECT_CONSTS:
			memcpy(dst, b->consts, b->consts_size);
			break;
		case NEFF_SECT_DEBUG: {
			neff_debug_header_t dh = { .n_entries = (uint32_t)b->n_debug,
						   .strings_size = (uint32_t)b->strings_size };
			memcpy(dst, &dh, sizeof(dh));
			size_t eb = b->n_debug * sizeof(neff_debug_entry_t);
			memcpy(dst + sizeof(dh), b->debug, eb);
			memcpy(dst + sizeof(dh) + eb, b->strings, b->strings_size);
			break;
		}
		case NEFF_SECT_HLO:
			memcpy(dst, b->hlo, b->hlo_size);
			break;
		}
	}
	h.checksum = XXH64(buf + sizeof(h), (size_t)cursor - sizeof(h), 0);
	memcpy(buf, &h, sizeof(h));
	*out_data = buf;
	*out_size = (size_t)cursor;
	return NS_OK;
}
