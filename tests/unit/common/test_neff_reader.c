/* Check tests of the NEFF reader: every corrupted field, every truncation and
 * every version mismatch is an error with a one-line message, never a crash. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "neff_test_util.h"

/* ---- where things are in the pristine sample --------------------------- */

typedef struct layout {
	size_t sect_table, n_sect;
	size_t sect[NEFF_SECT_HLO + 1]; /* section table index by type */
	size_t meta, tensors, code, stream_table, insn0, debug, dentries, pool_end;
	size_t pad;                       /* a padding byte between META and TENSORS */
} layout_t;

static uint8_t *sample;
static size_t sample_size;
static layout_t L;

static void layout_init(void)
{
	if (sample)
		return;
	sample = ntu_build_sample(&sample_size);
	neff_view_t v;
	char err[256];
	NTU_REQUIRE(ns_status_consume_message(neff_parse(sample, sample_size, &v),
					      err, sizeof(err)) == NS_STATUS_OK);
	L.sect_table = v.header->section_table_offset;
	L.n_sect = v.header->section_count;
	const neff_section_t *s = (const neff_section_t *)(sample + L.sect_table);
	for (size_t i = 0; i < L.n_sect; i++)
		L.sect[s[i].type] = i;
	L.meta = (const uint8_t *)v.meta - sample;
	L.tensors = (const uint8_t *)v.tensors - sample;
	L.code = s[L.sect[NEFF_SECT_CODE]].offset;
	L.stream_table = L.code + sizeof(neff_code_header_t);
	L.insn0 = (const uint8_t *)v.code[0][ISA_ENGINE_VECTOR] - sample;
	L.debug = s[L.sect[NEFF_SECT_DEBUG]].offset;
	L.dentries = L.debug + sizeof(neff_debug_header_t);
	L.pool_end = (const uint8_t *)v.debug_strings - sample + v.debug_strings_size - 1;
	L.pad = L.meta + sizeof(neff_meta_t);
	NTU_REQUIRE(L.pad % NEFF_ALIGN < NEFF_ALIGN - 8);
}

/* ---- mutations ----------------------------------------------------------- */

enum { OP_SET, OP_ADD, OP_FILL };
enum { B_HDR, B_SECT, B_META, B_TENSOR, B_CODEHDR, B_STREAM, B_INSN, B_DEBUG,
       B_DENTRY, B_POOLEND, B_PAD };

typedef struct mutation {
	char name[96];
	int base, idx;     /* idx: section / tensor / stream / entry index */
	size_t rel, width; /* field offset from base and width in bytes */
	int op;
	uint64_t val;      /* OP_FILL: byte value, width bytes */
	ns_status_code_t expect;
	bool no_recheck;   /* re-checksumming would undo the mutation */
} mutation_t;

static mutation_t muts[512];
static int n_muts;

static void add_mut(const char *name, int base, int idx, size_t rel, size_t width,
		    int op, uint64_t val, ns_status_code_t expect)
{
	NTU_REQUIRE(n_muts < (int)(sizeof(muts) / sizeof(muts[0])));
	mutation_t *m = &muts[n_muts++];
	snprintf(m->name, sizeof(m->name), "%s[%d] %s %s 0x%llx", 
		 (const char *[]){ "header", "section", "meta", "tensor", "code", "stream",
				   "insn", "debug", "dentry", "pool", "pad" }[base],
		 idx, name, op == OP_SET ? "=" : op == OP_ADD ? "+=" : "fill",
		 (unsigned long long)val);
	m->base = base;
	m->idx = idx;
	m->rel = rel;
	m->width = width;
	m->op = op;
	m->val = val;
	m->expect = expect;
}

#define FLD(T, f) offsetof(T, f), sizeof(((T *)0)->f)
#define F NS_STATUS_INVALID_ARGUMENT
#define V NS_STATUS_UNIMPLEMENTED
#define M1 UINT64_MAX /* OP_ADD M1 is -1 */

static void build_mutations(void)
{
	if (n_muts)
		return;
	layout_init();
	/* Header: not covered by the checksum, so each must be caught by itself. */
	add_mut("magic", B_HDR, 0, 0, 1, OP_ADD, 1, F);
	add_mut("magic", B_HDR, 0, 7, 1, OP_SET, 0, F);
	add_mut("version_major", B_HDR, 0, FLD(neff_header_t, version_major), OP_SET, 2, V);
	add_mut("version_major", B_HDR, 0, FLD(neff_header_t, version_major), OP_SET, 0, V);
	add_mut("version_major", B_HDR, 0, FLD(neff_header_t, version_major), OP_SET, 0xffff, V);
	add_mut("header_size", B_HDR, 0, FLD(neff_header_t, header_size), OP_SET, 0, F);
	add_mut("header_size", B_HDR, 0, FLD(neff_header_t, header_size), OP_ADD, M1, F);
	add_mut("header_size", B_HDR, 0, FLD(neff_header_t, header_size), OP_ADD, 8, F);
	add_mut("header_size", B_HDR, 0, FLD(neff_header_t, header_size), OP_SET, 0xffffffff, F);
	add_mut("features_required", B_HDR, 0, FLD(neff_header_t, features_required), OP_SET, 1, V);
	add_mut("features_required", B_HDR, 0, FLD(neff_header_t, features_required), OP_SET,
		1ull << 63, V);
	add_mut("total_size", B_HDR, 0, FLD(neff_header_t, total_size), OP_ADD, 1, F);
	add_mut("total_size", B_HDR, 0, FLD(neff_header_t, total_size), OP_ADD, M1, F);
	add_mut("total_size", B_HDR, 0, FLD(neff_header_t, total_size), OP_SET, 0, F);
	add_mut("total_size", B_HDR, 0, FLD(neff_header_t, total_size), OP_SET, UINT64_MAX, F);
	add_mut("checksum", B_HDR, 0, FLD(neff_header_t, checksum), OP_ADD, 1, F);
	muts[n_muts - 1].no_recheck = true;
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_SET, 0, F);
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_SET, 2, F);
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_ADD, M1, F);
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_ADD, 1, F);
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_SET,
		NEFF_MAX_SECTIONS + 1, F);
	add_mut("section_count", B_HDR, 0, FLD(neff_header_t, section_count), OP_SET,
		0xffffffff, F);
	add_mut("reserved0", B_HDR, 0, FLD(neff_header_t, reserved0), OP_SET, 1, F);
	add_mut("section_table_offset", B_HDR, 0, FLD(neff_header_t, section_table_offset),
		OP_ADD, 8, F);
	add_mut("section_table_offset", B_HDR, 0, FLD(neff_header_t, section_table_offset),
		OP_ADD, M1 - 7, F);
	add_mut("section_table_offset", B_HDR, 0, FLD(neff_header_t, section_table_offset),
		OP_ADD, 1, F);
	add_mut("section_table_offset", B_HDR, 0, FLD(neff_header_t, section_table_offset),
		OP_SET, 0, F);
	add_mut("section_table_offset", B_HDR, 0, FLD(neff_header_t, section_table_offset),
		OP_SET, UINT64_MAX - 7, F);

	/* Every field of every section table entry. */
	for (int i = 0; i < (int)L.n_sect; i++) {
		add_mut("type", B_SECT, i, FLD(neff_section_t, type), OP_SET, 0, F);
		add_mut("type", B_SECT, i, FLD(neff_section_t, type), OP_SET, 99, F);
		/* A second copy of a known section, required or optional. */
		add_mut("type", B_SECT, i, FLD(neff_section_t, type), OP_SET,
			i == (int)L.sect[NEFF_SECT_META] ? NEFF_SECT_TENSORS : NEFF_SECT_META, F);
		add_mut("type", B_SECT, i, FLD(neff_section_t, type), OP_SET,
			i == (int)L.sect[NEFF_SECT_HLO] ? NEFF_SECT_DEBUG : NEFF_SECT_HLO, F);
		add_mut("flags", B_SECT, i, FLD(neff_section_t, flags), OP_SET, 2, F);
		add_mut("flags", B_SECT, i, FLD(neff_section_t, flags), OP_SET, 0x80000001u, F);
		add_mut("offset", B_SECT, i, FLD(neff_section_t, offset), OP_ADD, NEFF_ALIGN, F);
		add_mut("offset", B_SECT, i, FLD(neff_section_t, offset), OP_ADD, M1 - NEFF_ALIGN + 1, F);
		add_mut("offset", B_SECT, i, FLD(neff_section_t, offset), OP_ADD, 8, F);
		add_mut("offset", B_SECT, i, FLD(neff_section_t, offset), OP_SET, 0, F);
		add_mut("offset", B_SECT, i, FLD(neff_section_t, offset), OP_SET,
			UINT64_MAX - NEFF_ALIGN + 1, F);
		add_mut("size", B_SECT, i, FLD(neff_section_t, size), OP_ADD, 1, F);
		add_mut("size", B_SECT, i, FLD(neff_section_t, size), OP_ADD, M1, F);
		add_mut("size", B_SECT, i, FLD(neff_section_t, size), OP_ADD, NEFF_ALIGN, F);
		add_mut("size", B_SECT, i, FLD(neff_section_t, size), OP_SET, 0, F);
		add_mut("size", B_SECT, i, FLD(neff_section_t, size), OP_SET, UINT64_MAX, F);
		add_mut("reserved", B_SECT, i, FLD(neff_section_t, reserved), OP_SET, 1, F);
	}
	/* Type swapped to an unknown optional one: the required section is gone. */
	add_mut("type|optional", B_SECT, 0, 0, 8, OP_SET, 99 | ((uint64_t)NEFF_SECT_F_OPTIONAL << 32), F);
	add_mut("type|optional", B_SECT, 2, 0, 8, OP_SET, 99 | ((uint64_t)NEFF_SECT_F_OPTIONAL << 32), F);
	/* Debug map dropped: instructions refer to entries that do not exist. */
	add_mut("type|optional", B_SECT, 4, 0, 8, OP_SET, 99 | ((uint64_t)NEFF_SECT_F_OPTIONAL << 32), F);

	/* META. */
	add_mut("model_name unterminated", B_META, 0, FLD(neff_meta_t, model_name), OP_FILL, 'm', F);
	add_mut("model_name after NUL", B_META, 0, offsetof(neff_meta_t, model_name) + 127, 1,
		OP_SET, 'z', F);
	add_mut("compiler_version unterminated", B_META, 0, FLD(neff_meta_t, compiler_version),
		OP_FILL, 'c', F);
	add_mut("compiler_version after NUL", B_META, 0,
		offsetof(neff_meta_t, compiler_version) + 63, 1, OP_SET, 1, F);
	add_mut("target unterminated", B_META, 0, FLD(neff_meta_t, target), OP_FILL, 't', F);
	add_mut("target empty", B_META, 0, offsetof(neff_meta_t, target), 1, OP_SET, 0, F);
	add_mut("target", B_META, 0, offsetof(neff_meta_t, target), 1, OP_SET, 'N', F);
	/* Found by fuzz_neff: file strings quoted in a message must not break
	 * it into lines (ntu_parse_copy checks every message is one line). */
	add_mut("target newline", B_META, 0, offsetof(neff_meta_t, target) + 1, 1, OP_SET, '\n', F);
	add_mut("n_cores", B_META, 0, FLD(neff_meta_t, n_cores), OP_SET, 0, F);
	add_mut("n_cores", B_META, 0, FLD(neff_meta_t, n_cores), OP_ADD, 1, F);
	add_mut("n_cores", B_META, 0, FLD(neff_meta_t, n_cores), OP_ADD, M1, F);
	add_mut("n_cores", B_META, 0, FLD(neff_meta_t, n_cores), OP_SET, NEFF_MAX_CORES + 1, F);
	add_mut("n_tensors", B_META, 0, FLD(neff_meta_t, n_tensors), OP_ADD, 1, F);
	add_mut("n_tensors", B_META, 0, FLD(neff_meta_t, n_tensors), OP_ADD, M1, F);
	add_mut("n_tensors", B_META, 0, FLD(neff_meta_t, n_tensors), OP_SET, 0, F);
	add_mut("n_tensors", B_META, 0, FLD(neff_meta_t, n_tensors), OP_SET, 0xffffffff, F);
	add_mut("scratch_size", B_META, 0, FLD(neff_meta_t, scratch_size), OP_SET,
		NEFF_MAX_REGION_SIZE + 1, F);
	add_mut("isa_version_major", B_META, 0, FLD(neff_meta_t, isa_version_major), OP_ADD, 1, V);
	add_mut("isa_version_major", B_META, 0, FLD(neff_meta_t, isa_version_major), OP_SET, 0, V);
	add_mut("isa_version_minor", B_META, 0, FLD(neff_meta_t, isa_version_minor), OP_SET,
		ISA_VERSION_MINOR + 1, V);
	for (int k = 0; k < 4; k++)
		add_mut("reserved", B_META, 0, offsetof(neff_meta_t, reserved) + 8 * (size_t)k, 8,
			OP_SET, 1ull << (k * 13), F);

	/* Every tensor. Tensor 1 ("w") is the input aliased by tensor 3. */
	for (int t = 0; t < (int)NTU_N_TENSORS; t++) {
		add_mut("name unterminated", B_TENSOR, t, FLD(neff_tensor_t, name), OP_FILL, 'n', F);
		add_mut("name empty", B_TENSOR, t, offsetof(neff_tensor_t, name), 1, OP_SET, 0, F);
		add_mut("name after NUL", B_TENSOR, t, offsetof(neff_tensor_t, name) + 200, 1,
			OP_SET, 'q', F);
		add_mut("usage", B_TENSOR, t, FLD(neff_tensor_t, usage), OP_SET, 2, F);
		add_mut("usage", B_TENSOR, t, FLD(neff_tensor_t, usage), OP_SET, 0xffffffff, F);
		add_mut("dtype", B_TENSOR, t, FLD(neff_tensor_t, dtype), OP_SET, ISA_DT_INVALID, F);
		add_mut("dtype", B_TENSOR, t, FLD(neff_tensor_t, dtype), OP_SET, ISA_DT_COUNT, F);
		add_mut("dtype", B_TENSOR, t, FLD(neff_tensor_t, dtype), OP_SET, ISA_DT_BF16, F);
		add_mut("rank", B_TENSOR, t, FLD(neff_tensor_t, rank), OP_SET,
			NEFF_MAX_TENSOR_RANK + 1, F);
		add_mut("rank", B_TENSOR, t, FLD(neff_tensor_t, rank), OP_ADD, M1, F);
		add_mut("rank", B_TENSOR, t, FLD(neff_tensor_t, rank), OP_ADD, 1, F);
		add_mut("shape[0]", B_TENSOR, t, offsetof(neff_tensor_t, shape), 8, OP_ADD, 1, F);
		add_mut("shape[0]", B_TENSOR, t, offsetof(neff_tensor_t, shape), 8, OP_SET,
			1ull << 62, F);
		add_mut("shape[7]", B_TENSOR, t, offsetof(neff_tensor_t, shape) + 56, 8, OP_SET, 1, F);
		add_mut("size", B_TENSOR, t, FLD(neff_tensor_t, size), OP_ADD, 1, F);
		add_mut("size", B_TENSOR, t, FLD(neff_tensor_t, size), OP_SET, 0, F);
		add_mut("alias_input", B_TENSOR, t, FLD(neff_tensor_t, alias_input), OP_SET,
			(uint32_t)NTU_N_TENSORS, F);
		add_mut("alias_input", B_TENSOR, t, FLD(neff_tensor_t, alias_input), OP_SET,
			(uint32_t)-2, F);
		add_mut("alias_input", B_TENSOR, t, FLD(neff_tensor_t, alias_input), OP_SET, 2, F);
		add_mut("alias_input", B_TENSOR, t, FLD(neff_tensor_t, alias_input), OP_SET, 0x7fffffff, F);
	}
	/* Inputs may not alias; x (4x8) differs from w (8) in size. */
	add_mut("alias_input", B_TENSOR, 0, FLD(neff_tensor_t, alias_input), OP_SET, 1, F);
	add_mut("alias_input", B_TENSOR, 1, FLD(neff_tensor_t, alias_input), OP_SET, 1, F);
	add_mut("alias_input", B_TENSOR, 3, FLD(neff_tensor_t, alias_input), OP_SET, 0, F);
	add_mut("alias_input", B_TENSOR, 3, FLD(neff_tensor_t, alias_input), OP_SET, 3, F);
	/* Duplicate names: "w" -> "x", "y" -> "w". */
	add_mut("name dup", B_TENSOR, 1, offsetof(neff_tensor_t, name), 2, OP_SET, 'x', F);
	add_mut("name dup", B_TENSOR, 2, offsetof(neff_tensor_t, name), 2, OP_SET, 'w', F);

	/* CODE header and every stream entry. */
	add_mut("n_cores", B_CODEHDR, 0, FLD(neff_code_header_t, n_cores), OP_ADD, 1, F);
	add_mut("n_cores", B_CODEHDR, 0, FLD(neff_code_header_t, n_cores), OP_ADD, M1, F);
	add_mut("n_cores", B_CODEHDR, 0, FLD(neff_code_header_t, n_cores), OP_SET, 0xffffffff, F);
	add_mut("n_engines", B_CODEHDR, 0, FLD(neff_code_header_t, n_engines), OP_ADD, 1, F);
	add_mut("n_engines", B_CODEHDR, 0, FLD(neff_code_header_t, n_engines), OP_ADD, M1, F);
	for (int i = 0; i < (int)(NTU_N_CORES * ISA_ENGINE_COUNT); i++) {
		add_mut("offset", B_STREAM, i, FLD(neff_code_stream_t, offset), OP_ADD, 8, F);
		add_mut("offset", B_STREAM, i, FLD(neff_code_stream_t, offset), OP_ADD, M1 - 7, F);
		add_mut("offset", B_STREAM, i, FLD(neff_code_stream_t, offset), OP_ADD, 1, F);
		add_mut("offset", B_STREAM, i, FLD(neff_code_stream_t, offset), OP_SET, 0, F);
		add_mut("offset", B_STREAM, i, FLD(neff_code_stream_t, offset), OP_SET,
			UINT64_MAX - 7, F);
		add_mut("count", B_STREAM, i, FLD(neff_code_stream_t, count), OP_ADD, 1, F);
		add_mut("count", B_STREAM, i, FLD(neff_code_stream_t, count), OP_SET, 0xffffffff, F);
		add_mut("reserved", B_STREAM, i, FLD(neff_code_stream_t, reserved), OP_SET, 1, F);
	}
	/* Streams with instructions can also lose one. */
	add_mut("count", B_STREAM, ISA_ENGINE_VECTOR, FLD(neff_code_stream_t, count), OP_ADD, M1, F);
	add_mut("count", B_STREAM, ISA_ENGINE_COUNT + ISA_ENGINE_GPSIMD,
		FLD(neff_code_stream_t, count), OP_ADD, M1, F);

	/* The first instruction (validated by isa_insn_validate) and its debug id. */
	add_mut("opcode", B_INSN, 0, FLD(isa_insn_t, opcode), OP_SET, ISA_OP_COUNT, F);
	add_mut("reserved", B_INSN, 0, FLD(isa_insn_t, reserved), OP_SET, 1, F);
	add_mut("debug_id", B_INSN, 0, FLD(isa_insn_t, debug_id), OP_SET, NTU_N_DEBUG, F);
	add_mut("debug_id", B_INSN, 0, FLD(isa_insn_t, debug_id), OP_SET, ISA_DEBUG_NONE - 1, F);
	add_mut("ap[0].region", B_INSN, 0, offsetof(isa_insn_t, ap), 4, OP_SET,
		ISA_REGION_IO0 + NTU_N_TENSORS, F);

	/* DEBUG header, every entry, the pool's terminator. */
	add_mut("n_entries", B_DEBUG, 0, FLD(neff_debug_header_t, n_entries), OP_ADD, 1, F);
	add_mut("n_entries", B_DEBUG, 0, FLD(neff_debug_header_t, n_entries), OP_ADD, M1, F);
	add_mut("n_entries", B_DEBUG, 0, FLD(neff_debug_header_t, n_entries), OP_SET,
		ISA_DEBUG_NONE, F);
	add_mut("n_entries", B_DEBUG, 0, FLD(neff_debug_header_t, n_entries), OP_SET, 0, F);
	add_mut("strings_size", B_DEBUG, 0, FLD(neff_debug_header_t, strings_size), OP_ADD, 1, F);
	add_mut("strings_size", B_DEBUG, 0, FLD(neff_debug_header_t, strings_size), OP_ADD, M1, F);
	add_mut("strings_size", B_DEBUG, 0, FLD(neff_debug_header_t, strings_size), OP_SET,
		0xffffffff, F);
	for (int i = 0; i < (int)NTU_N_DEBUG; i++) {
		add_mut("hlo_name", B_DENTRY, i, FLD(neff_debug_entry_t, hlo_name), OP_SET, 0x10000, F);
		add_mut("op_type", B_DENTRY, i, FLD(neff_debug_entry_t, op_type), OP_SET, 0xffffffff, F);
		add_mut("source_file", B_DENTRY, i, FLD(neff_debug_entry_t, source_file), OP_SET,
			0x7fffffff, F);
	}
	add_mut("last byte", B_POOLEND, 0, 0, 1, OP_SET, 'x', F);
	add_mut("padding", B_PAD, 0, 0, 1, OP_SET, 1, F);
	add_mut("padding", B_PAD, 0, 0, 8, OP_SET, UINT64_MAX, F);
}

static size_t mut_offset(const mutation_t *m)
{
	switch (m->base) {
	case B_HDR: return m->rel;
	case B_SECT: return L.sect_table + (size_t)m->idx * sizeof(neff_section_t) + m->rel;
	case B_META: return L.meta + m->rel;
	case B_TENSOR: return L.tensors + (size_t)m->idx * sizeof(neff_tensor_t) + m->rel;
	case B_CODEHDR: return L.code + m->rel;
	case B_STREAM: return L.stream_table + (size_t)m->idx * sizeof(neff_code_stream_t) + m->rel;
	case B_INSN: return L.insn0 + m->rel;
	case B_DEBUG: return L.debug + m->rel;
	case B_DENTRY: return L.dentries + (size_t)m->idx * sizeof(neff_debug_entry_t) + m->rel;
	case B_POOLEND: return L.pool_end + m->rel;
	case B_PAD: return L.pad + m->rel;
	}
	ck_abort_msg("bad base");
	return 0;
}

/* Applies m to buf (little-endian fields); fails the test if it is a no-op. */
static void mut_apply(const mutation_t *m, uint8_t *buf)
{
	uint8_t *p = buf + mut_offset(m);
	uint8_t before[256];
	ck_assert_uint_le(m->width, sizeof(before));
	memcpy(before, p, m->width);
	if (m->op == OP_FILL) {
		memset(p, (int)m->val, m->width);
	} else {
		uint64_t v = 0;
		memcpy(&v, p, m->width);
		v = m->op == OP_SET ? m->val : v + m->val;
		memcpy(p, &v, m->width);
	}
	ck_assert_msg(memcmp(before, p, m->width) != 0, "%s changes nothing", m->name);
}

START_TEST(test_parse_rejects_each_corrupted_field)
{
	build_mutations();
	ck_assert_int_lt(_i, n_muts);
	const mutation_t *m = &muts[_i];
	uint8_t *buf = malloc(sample_size);
	char err[256];

	/* As corrupted in storage: the checksum or the field check catches it. */
	memcpy(buf, sample, sample_size);
	mut_apply(m, buf);
	ns_status_code_t raw_expect = m->base == B_HDR ? m->expect : NS_STATUS_INVALID_ARGUMENT;
	ns_status_code_t st = ntu_parse_copy(buf, sample_size, err, sizeof(err));
	ck_assert_msg(st == raw_expect, "%s: status %d, want %d (%s)", m->name, st,
		      raw_expect, err);

	/* As written by a broken writer with a valid checksum: only the
	 * structural checks stand between this NEFF and the simulator. */
	if (!m->no_recheck) {
		ntu_rechecksum(buf, sample_size);
		st = ntu_parse_copy(buf, sample_size, err, sizeof(err));
		ck_assert_msg(st == m->expect, "%s (re-checksummed): status %d, want %d (%s)",
			      m->name, st, m->expect, err[0] ? err : "accepted");
	}
	free(buf);
}
END_TEST

/* Two outputs aliasing one input: make y look exactly like w_out. */
START_TEST(test_parse_rejects_input_aliased_twice)
{
	layout_init();
	uint8_t *buf = malloc(sample_size);
	memcpy(buf, sample, sample_size);
	neff_tensor_t *y = (neff_tensor_t *)(buf + L.tensors + 2 * sizeof(neff_tensor_t));
	const neff_tensor_t *wo = (const neff_tensor_t *)(buf + L.tensors + 3 * sizeof(neff_tensor_t));
	y->rank = wo->rank;
	memcpy(y->shape, wo->shape, sizeof(y->shape));
	y->size = wo->size;
	y->alias_input = wo->alias_input;
	ntu_rechecksum(buf, sample_size);
	char err[256];
	/* The add instruction still writes y as 4x8; either check may fire, but
	 * the alias check comes first. */
	ck_assert_int_eq(ntu_parse_copy(buf, sample_size, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "aliased by more than one output"));
	free(buf);
}
END_TEST

/* ---- truncation ---------------------------------------------------------- */

static void check_truncations(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size);
	char err[256];
	for (size_t len = 0; len < size; len++) {
		ck_assert_msg(ntu_parse_copy(data, len, err, sizeof(err)) == NS_STATUS_INVALID_ARGUMENT,
			      "truncated to %zu accepted", len);
		/* Truncated, but with total_size and checksum made to match. */
		if (len >= sizeof(neff_header_t)) {
			memcpy(buf, data, len);
			uint64_t t = len;
			memcpy(buf + offsetof(neff_header_t, total_size), &t, sizeof(t));
			ntu_rechecksum(buf, len);
			ns_status_code_t st = ntu_parse_copy(buf, len, err, sizeof(err));
			ck_assert_msg(st == NS_STATUS_INVALID_ARGUMENT,
				      "truncated to %zu with fixed size and checksum: %d", len, st);
		}
	}
	free(buf);
}

START_TEST(test_parse_rejects_every_truncation_small)
{
	size_t size;
	uint8_t *small = ntu_build_small(&size);
	check_truncations(small, size);
	free(small);
}
END_TEST

START_TEST(test_parse_rejects_every_truncation_sample)
{
	layout_init();
	check_truncations(sample, sample_size);
}
END_TEST

START_TEST(test_parse_rejects_appended_bytes)
{
	layout_init();
	uint8_t *buf = calloc(1, sample_size + 64);
	memcpy(buf, sample, sample_size);
	char err[256];
	for (size_t extra = 1; extra <= 64; extra++) {
		ck_assert_int_eq(ntu_parse_copy(buf, sample_size + extra, err, sizeof(err)),
				 NS_STATUS_INVALID_ARGUMENT);
		uint64_t t = sample_size + extra;
		memcpy(buf + offsetof(neff_header_t, total_size), &t, sizeof(t));
		ntu_rechecksum(buf, sample_size + extra);
		ck_assert_int_eq(ntu_parse_copy(buf, sample_size + extra, err, sizeof(err)),
				 NS_STATUS_INVALID_ARGUMENT);
		ck_assert_ptr_nonnull(strstr(err, "trailing"));
		memcpy(buf, sample, sizeof(neff_header_t));
	}
	free(buf);
}
END_TEST

/* Every single-bit flip of the small NEFF, re-checksummed: whatever the
 * verdict, no crash, and on failure a message (checked in ntu_parse_copy). */
START_TEST(test_parse_survives_every_bit_flip)
{
	size_t size;
	uint8_t *small = ntu_build_small(&size);
	uint8_t *buf = malloc(size);
	char err[256];
	int accepted = 0;
	for (size_t i = 0; i < size * 8; i++) {
		memcpy(buf, small, size);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		ntu_rechecksum(buf, size);
		if (ntu_parse_copy(buf, size, err, sizeof(err)) == NS_STATUS_OK)
			accepted++;
	}
	/* Only free-form bytes (names, instruction immediates, ...) may change
	 * and still parse; most flips must be caught. */
	ck_assert_int_lt(accepted, (int)(size * 8) / 4);
	free(buf);
	free(small);
}
END_TEST

/* ---- versions and features ------------------------------------------------ */

START_TEST(test_parse_version_message_names_both_versions)
{
	layout_init();
	uint8_t *buf = malloc(sample_size);
	memcpy(buf, sample, sample_size);
	uint16_t major = 2, minor = 3;
	memcpy(buf + offsetof(neff_header_t, version_major), &major, 2);
	memcpy(buf + offsetof(neff_header_t, version_minor), &minor, 2);
	char err[256];
	ck_assert_int_eq(ntu_parse_copy(buf, sample_size, err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	ck_assert_msg(strstr(err, "NEFF format 2.3") && strstr(err, "supports 1.x"), "%s", err);
	/* A future major version may change everything after the version: it
	 * is still named, even when the rest is short. */
	ck_assert_int_eq(ntu_parse_copy(buf, 12, err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	ck_assert_ptr_nonnull(strstr(err, "NEFF format 2.3"));
	free(buf);
}
END_TEST

START_TEST(test_parse_accepts_newer_minor_and_optional_features)
{
	layout_init();
	uint8_t *buf = malloc(sample_size);
	memcpy(buf, sample, sample_size);
	uint16_t minor = 7;
	uint64_t opt = 0xf0f0;
	memcpy(buf + offsetof(neff_header_t, version_minor), &minor, 2);
	memcpy(buf + offsetof(neff_header_t, features_optional), &opt, 8);
	char err[256];
	ck_assert_msg(ntu_parse_copy(buf, sample_size, err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	free(buf);
}
END_TEST

START_TEST(test_parse_required_feature_message_names_bits)
{
	layout_init();
	uint8_t *buf = malloc(sample_size);
	memcpy(buf, sample, sample_size);
	uint64_t req = 0x24;
	memcpy(buf + offsetof(neff_header_t, features_required), &req, 8);
	char err[256];
	ck_assert_int_eq(ntu_parse_copy(buf, sample_size, err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	ck_assert_msg(strstr(err, "0x24") && strstr(err, "1.0"), "%s", err);
	free(buf);
}
END_TEST

/* Appends a section of an unknown type to the small NEFF (its table has room
 * before META's 64-byte boundary). */
static uint8_t *with_unknown_section(uint32_t flags, int count, size_t *out_size)
{
	size_t size;
	uint8_t *small = ntu_build_small(&size);
	neff_header_t h;
	memcpy(&h, small, sizeof(h));
	ck_assert_uint_le(sizeof(h) + (h.section_count + count) * sizeof(neff_section_t), 192);
	size_t off = (size + NEFF_ALIGN - 1) & ~(size_t)(NEFF_ALIGN - 1);
	size_t total = off + (size_t)count * NEFF_ALIGN;
	uint8_t *buf = calloc(1, total);
	memcpy(buf, small, size);
	for (int i = 0; i < count; i++) {
		neff_section_t s = { .type = 1000 + (uint32_t)i, .flags = flags,
				     .offset = off + (size_t)i * NEFF_ALIGN, .size = NEFF_ALIGN };
		memcpy(buf + h.section_table_offset + (h.section_count + i) * sizeof(s), &s,
		       sizeof(s));
		memset(buf + s.offset, 0x5a, NEFF_ALIGN);
	}
	h.section_count += (uint32_t)count;
	h.total_size = total;
	memcpy(buf, &h, sizeof(h));
	ntu_rechecksum(buf, total);
	free(small);
	*out_size = total;
	return buf;
}

START_TEST(test_parse_skips_unknown_optional_sections)
{
	size_t size;
	char err[256];
	uint8_t *buf = with_unknown_section(NEFF_SECT_F_OPTIONAL, 1, &size);
	ck_assert_msg(ntu_parse_copy(buf, size, err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	free(buf);
	buf = with_unknown_section(0, 1, &size);
	ck_assert_int_eq(ntu_parse_copy(buf, size, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "unknown type 1000"));
	free(buf);
}
END_TEST

/* ---- arguments ------------------------------------------------------------ */

START_TEST(test_parse_rejects_bad_arguments)
{
	layout_init();
	char err[256];
	neff_view_t v;
	memset(&v, 0xff, sizeof(v));
	ck_assert_int_eq(ns_status_consume_message(neff_parse(NULL, sample_size, &v),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_null(v.header);
	ck_assert_int_eq(ns_status_consume_message(neff_parse(sample, sample_size, NULL),
						   err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	/* Misaligned data: a message that says what to do. */
	uint8_t *buf = malloc(sample_size + 8);
	memcpy(buf + 4, sample, sample_size);
	memset(&v, 0xff, sizeof(v));
	ck_assert_int_eq(ns_status_consume_message(neff_parse(buf + 4, sample_size, &v),
						   err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "8-byte aligned"));
	ck_assert_ptr_null(v.meta);
	/* No err buffer, or a tiny one: still a clean status. */
	ck_assert_int_eq(ns_status_consume_message(neff_parse(buf + 4, sample_size, &v),
						   NULL, 0), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(ns_status_consume_message(neff_parse(buf + 4, sample_size, &v),
						   err, 1), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_str_eq(err, "");
	free(buf);
}
END_TEST

START_TEST(test_debug_lookup_out_of_range)
{
	layout_init();
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(sample, sample_size, &v),
						   NULL, 0), NS_STATUS_OK);
	const char *n = "x", *o = "x", *f = "x";
	uint32_t line = 7;
	neff_debug_lookup(&v, NTU_N_DEBUG, &n, &o, &f, &line);
	ck_assert_ptr_null(n);
	ck_assert_ptr_null(o);
	ck_assert_ptr_null(f);
	ck_assert_uint_eq(line, 0);
	neff_debug_lookup(&v, ISA_DEBUG_NONE, &n, NULL, NULL, NULL);
	ck_assert_ptr_null(n);
	neff_debug_lookup(NULL, 0, &n, &o, &f, &line);
	ck_assert_ptr_null(n);
}
END_TEST

static Suite *reader_suite(void)
{
	Suite *s = suite_create("neff_reader");
	TCase *tc = tcase_create("corruption");
	tcase_set_timeout(tc, 120);
	build_mutations();
	tcase_add_loop_test(tc, test_parse_rejects_each_corrupted_field, 0, n_muts);
	tcase_add_test(tc, test_parse_rejects_input_aliased_twice);
	tcase_add_test(tc, test_parse_rejects_every_truncation_small);
	tcase_add_test(tc, test_parse_rejects_every_truncation_sample);
	tcase_add_test(tc, test_parse_rejects_appended_bytes);
	tcase_add_test(tc, test_parse_survives_every_bit_flip);
	suite_add_tcase(s, tc);
	tc = tcase_create("version");
	tcase_add_test(tc, test_parse_version_message_names_both_versions);
	tcase_add_test(tc, test_parse_accepts_newer_minor_and_optional_features);
	tcase_add_test(tc, test_parse_required_feature_message_names_bits);
	tcase_add_test(tc, test_parse_skips_unknown_optional_sections);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_test(tc, test_parse_rejects_bad_arguments);
	tcase_add_test(tc, test_debug_lookup_out_of_range);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(reader_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	free(sample);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
