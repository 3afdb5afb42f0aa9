/* Check tests of the NEFF builder: round trip of every field through the
 * reader, argument validation, determinism and allocation-failure injection. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "neff_test_util.h"

/* Checks that a builder call returned code, with needle in its message (when
 * not NULL), and frees the status. */
static void expect_status(ns_status_t st, ns_status_code_t code, const char *needle,
			  const char *call)
{
	char msg[512];
	ns_status_code_t got = ns_status_consume_message(st, msg, sizeof(msg));
	ck_assert_msg(got == code, "%s: %s, expected %s: %s", call, ns_status_code_str(got),
		      ns_status_code_str(code), msg);
	if (needle)
		ck_assert_msg(strstr(msg, needle), "%s: '%s' is not in '%s'", call, needle, msg);
}
#define EXPECT(call, code, needle) expect_status((call), code, needle, #call)
#define OK(call) EXPECT(call, NS_STATUS_OK, NULL)
#define BAD(call, needle) EXPECT(call, NS_STATUS_INVALID_ARGUMENT, needle)

START_TEST(test_round_trip_keeps_every_field)
{
	size_t size;
	uint8_t *data = ntu_build_sample(&size);
	neff_view_t v;
	char err[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(data, size, &v),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);

	const neff_header_t *h = v.header;
	ck_assert_ptr_eq(h, data);
	ck_assert_mem_eq(h->magic, NEFF_MAGIC, 8);
	ck_assert_uint_eq(h->version_major, NEFF_VERSION_MAJOR);
	ck_assert_uint_eq(h->version_minor, NEFF_VERSION_MINOR);
	ck_assert_uint_eq(h->header_size, sizeof(neff_header_t));
	ck_assert_uint_eq(h->features_required, 0);
	ck_assert_uint_eq(h->features_optional, 0);
	ck_assert_uint_eq(h->total_size, size);
	ck_assert_uint_eq(h->section_count, 6);
	ck_assert_uint_eq(h->section_table_offset, sizeof(neff_header_t));
	const neff_section_t *s = (const neff_section_t *)(data + h->section_table_offset);
	for (uint32_t i = 0; i < h->section_count; i++) {
		ck_assert_uint_eq(s[i].type, i + 1); /* fixed order META..HLO */
		ck_assert_uint_eq(s[i].offset % NEFF_ALIGN, 0);
		ck_assert_uint_eq(s[i].flags, 0);
	}

	const neff_meta_t *m = v.meta;
	ck_assert_str_eq(m->model_name, NTU_MODEL_NAME);
	ck_assert_str_eq(m->compiler_version, "neuronsim-builder 1.0");
	ck_assert_str_eq(m->target, NEFF_TARGET);
	ck_assert_uint_eq(m->n_cores, NTU_N_CORES);
	ck_assert_uint_eq(m->n_tensors, NTU_N_TENSORS);
	ck_assert_uint_eq(m->scratch_size, NTU_SCRATCH_SIZE);
	ck_assert_uint_eq(m->isa_version_major, ISA_VERSION_MAJOR);
	/* no CONV: stamped 1.3, what the program needs (isa_insn_min_minor) */
	ck_assert_uint_eq(m->isa_version_minor, 3);

	static const char *names[] = { "x", "w", "y", "w_out" };
	static const uint32_t usage[] = { NEFF_USAGE_INPUT, NEFF_USAGE_INPUT,
					  NEFF_USAGE_OUTPUT, NEFF_USAGE_OUTPUT };
	static const uint32_t rank[] = { 2, 1, 2, 1 };
	static const int32_t alias[] = { -1, -1, -1, 1 };
	static const uint64_t bytes[] = { 128, 32, 128, 32 };
	for (uint32_t i = 0; i < NTU_N_TENSORS; i++) {
		const neff_tensor_t *t = &v.tensors[i];
		ck_assert_str_eq(t->name, names[i]);
		ck_assert_uint_eq(t->usage, usage[i]);
		ck_assert_uint_eq(t->dtype, ISA_DT_F32);
		ck_assert_uint_eq(t->rank, rank[i]);
		ck_assert_int_eq(t->alias_input, alias[i]);
		ck_assert_uint_eq(t->size, bytes[i]);
		ck_assert_uint_eq(t->shape[0], rank[i] == 2 ? 4 : 8);
		if (rank[i] == 2)
			ck_assert_uint_eq(t->shape[1], 8);
	}

	/* Constants: 3 bytes, zero padding to 64, then 32 floats. */
	ck_assert_uint_eq(v.consts_size, 64 + 32 * sizeof(float));
	ck_assert_mem_eq(v.consts, "pad\0", 4);
	for (int i = 0; i < 32; i++) {
		float f;
		memcpy(&f, v.consts + 64 + 4 * i, 4);
		ck_assert_float_eq(f, (float)i * 0.5f);
	}

	/* Code: only the streams that were emitted to. */
	for (uint32_t c = 0; c < NEFF_MAX_CORES; c++)
		for (uint32_t e = 0; e < ISA_ENGINE_COUNT; e++) {
			uint32_t want = 0;
			if (c == 0 && (e == ISA_ENGINE_VECTOR || e == ISA_ENGINE_DMA))
				want = 1;
			if (c == 1 && e == ISA_ENGINE_GPSIMD)
				want = 3;
			if (c == 1 && e == ISA_ENGINE_TENSOR)
				want = 1;
			ck_assert_uint_eq(v.code_count[c][e], want);
			ck_assert(!v.code[c][e] == !want);
		}
	const isa_insn_t *add = v.code[0][ISA_ENGINE_VECTOR];
	ck_assert_uint_eq(add->opcode, ISA_OP_ALU);
	ck_assert_uint_eq(add->sub, ISA_ALU_ADD);
	ck_assert_uint_eq(add->n_ap, 3);
	ck_assert_uint_eq(add->signal_sem, 0);
	ck_assert_uint_eq(add->ap[0].region, ISA_REGION_IO0 + 2);
	ck_assert_uint_eq(add->ap[2].region, ISA_REGION_CONST);
	ck_assert_uint_eq(add->ap[2].offset, 64);
	const isa_insn_t *copy = v.code[0][ISA_ENGINE_DMA];
	ck_assert_uint_eq(copy->opcode, ISA_OP_COPY);
	ck_assert_uint_eq(copy->wait_sem, 0);
	ck_assert_uint_eq(copy->wait_value, 1);
	ck_assert_uint_eq(v.code[1][ISA_ENGINE_TENSOR][0].debug_id, ISA_DEBUG_NONE);

	/* Debug map: through lookup, with shared strings stored once. */
	ck_assert_uint_eq(v.n_debug, NTU_N_DEBUG);
	const char *hn, *op, *file;
	uint32_t line;
	neff_debug_lookup(&v, add->debug_id, &hn, &op, &file, &line);
	ck_assert_str_eq(hn, "add.1");
	ck_assert_str_eq(op, "add");
	ck_assert_str_eq(file, "model.py");
	ck_assert_uint_eq(line, 12);
	neff_debug_lookup(&v, copy->debug_id, &hn, &op, &file, &line);
	ck_assert_str_eq(hn, "copy.2");
	ck_assert_str_eq(op, "copy");
	ck_assert_str_eq(file, "model.py");
	ck_assert_uint_eq(line, 13);
	neff_debug_lookup(&v, v.code[1][ISA_ENGINE_GPSIMD][2].debug_id, &hn, &op, &file, &line);
	ck_assert_str_eq(hn, "nop");
	ck_assert_str_eq(op, "");
	ck_assert_str_eq(file, "");
	ck_assert_uint_eq(line, 0);
	/* "add.1", "add", "model.py", "copy.2", "copy", "nop", "" */
	ck_assert_uint_eq(v.debug_strings_size, 6 + 4 + 9 + 7 + 5 + 4 + 1);

	ck_assert_uint_eq(v.hlo_size, strlen(NTU_HLO_TEXT));
	ck_assert_mem_eq(v.hlo_text, NTU_HLO_TEXT, v.hlo_size);
	free(data);
}
END_TEST

START_TEST(test_small_neff_has_no_optional_sections)
{
	size_t size;
	uint8_t *data = ntu_build_small(&size);
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(data, size, &v),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.header->section_count, 3);
	ck_assert_ptr_null(v.consts);
	ck_assert_ptr_null(v.debug);
	ck_assert_ptr_null(v.debug_strings);
	ck_assert_ptr_null(v.hlo_text);
	ck_assert_uint_eq(v.code_count[0][ISA_ENGINE_SCALAR], 1);
	free(data);
}
END_TEST

/* The NEFF says the ISA version its instructions need: 1.3 without a CONV (a
 * 1.3 reader takes it), 1.4 with one (emitted or patched in); a CONV in a
 * NEFF that says 1.3 is refused by name. */
START_TEST(test_isa_minor_is_what_the_code_needs)
{
	size_t size;
	uint8_t *data = ntu_build_small(&size);
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(data, size, &v), NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->isa_version_minor, 3);
	free(data);

	uint64_t o[5] = { 1, 1, 1, 2, 2 }, x[5] = { 1, 1, 1, 4, 4 }, k[5] = { 1, 1, 1, 3, 3 };
	const int64_t one[2] = { 1, 1 }, zero[2] = { 0, 0 };
	isa_insn_t conv = isa_insn_init(ISA_OP_CONV, 0);
	conv.n_ap = 4;
	conv.ap[0] = isa_ap_contig(ISA_REGION_SCRATCH, 0, ISA_DT_F32, 5, o);
	conv.ap[1] = isa_ap_contig(ISA_REGION_SCRATCH, 64, ISA_DT_F32, 5, x);
	conv.ap[2] = isa_ap_contig(ISA_REGION_SCRATCH, 128, ISA_DT_F32, 5, k);
	conv.ap[3] = isa_conv_window(one, one, one, zero);
	for (int patch = 0; patch < 2; patch++) {
		neff_builder_t *b = neff_builder_create("conv", 1);
		ck_assert_ptr_nonnull(b);
		OK(neff_builder_add_scratch(b, 256, 64, NULL));
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		OK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, patch ? &nop : &conv, NULL));
		if (patch)
			OK(neff_builder_patch(b, 0, ISA_ENGINE_VECTOR, 0, &conv));
		void *out;
		OK(neff_builder_finish(b, &out, &size));
		neff_builder_destroy(b);
		char msg[256];
		ck_assert_msg(ns_status_consume_message(neff_parse(out, size, &v), msg, sizeof(msg)) ==
			      NS_STATUS_OK, "%s", msg);
		ck_assert_uint_eq(v.meta->isa_version_minor, 4);
		neff_meta_t *m = (neff_meta_t *)((uint8_t *)out + ((const uint8_t *)v.meta -
								   (const uint8_t *)out));
		m->isa_version_minor = 3;
		ntu_rechecksum(out, size);
		ck_assert_int_ne(ns_status_consume_message(neff_parse(out, size, &v), msg, sizeof(msg)),
				 NS_STATUS_OK);
		ck_assert_msg(strstr(msg, "conv needs ISA 1.4, the NEFF says 1.3"), "%s", msg);
		free(out);
	}
}
END_TEST

START_TEST(test_builder_output_is_deterministic)
{
	size_t s1, s2;
	uint8_t *a = ntu_build_sample(&s1);
	uint8_t *b = ntu_build_sample(&s2);
	ck_assert_uint_eq(s1, s2);
	ck_assert_mem_eq(a, b, s1);
	free(a);
	free(b);

	neff_builder_t *bl = neff_builder_create("twice", 1);
	void *d1, *d2;
	OK(neff_builder_finish(bl, &d1, &s1));
	OK(neff_builder_finish(bl, &d2, &s2));
	ck_assert_uint_eq(s1, s2);
	ck_assert_mem_eq(d1, d2, s1);
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(d1, s1, &v), NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->n_tensors, 0);
	free(d1);
	free(d2);
	neff_builder_destroy(bl);
}
END_TEST

START_TEST(test_builder_create_rejects_bad_arguments)
{
	char long_name[129];
	memset(long_name, 'a', 128);
	long_name[128] = 0;
	ck_assert_ptr_null(neff_builder_create(NULL, 1));
	ck_assert_ptr_null(neff_builder_create("m", 0));
	ck_assert_ptr_null(neff_builder_create("m", NEFF_MAX_CORES + 1));
	ck_assert_ptr_null(neff_builder_create(long_name, 1));
	long_name[127] = 0;
	neff_builder_t *b = neff_builder_create(long_name, NEFF_MAX_CORES);
	ck_assert_ptr_nonnull(b);
	neff_builder_destroy(b);
	neff_builder_destroy(NULL);
}
END_TEST

START_TEST(test_builder_rejects_bad_tensors)
{
	neff_builder_t *b = neff_builder_create("m", 1);
	const uint64_t shape[9] = { 2, 3, 1, 1, 1, 1, 1, 1, 1 };
	const uint64_t huge[2] = { 1ull << 40, 1ull << 40 };
	char name[NEFF_NAME_MAX + 1];
	memset(name, 'n', NEFF_NAME_MAX);
	name[NEFF_NAME_MAX] = 0;
	uint32_t idx = 77;
#define ADD(n, u, dt, r, sh, al) neff_builder_add_tensor(b, n, u, dt, r, sh, al, &idx)
	BAD(ADD(NULL, NEFF_USAGE_INPUT, ISA_DT_F32, 1, shape, -1),
	    "neff_builder_add_tensor: name is NULL");
	BAD(ADD("", NEFF_USAGE_INPUT, ISA_DT_F32, 1, shape, -1), "tensor name is empty");
	BAD(ADD(name, NEFF_USAGE_INPUT, ISA_DT_F32, 1, shape, -1), "name longer than 255 bytes");
	BAD(ADD("a", 2, ISA_DT_F32, 1, shape, -1),
	    "tensor 'a': usage 2 is neither input (0) nor output (1)");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_INVALID, 1, shape, -1),
	    "dtype 0 is not an ISA element type");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_COUNT, 1, shape, -1), "is not an ISA element type");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_F32, 9, shape, -1),
	    "rank 9, the NEFF allows at most 8");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_F32, 1, NULL, -1), "rank 1 with a NULL shape");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_F32, 2, huge, -1), "overflows 64 bits");
	BAD(ADD("a", NEFF_USAGE_INPUT, ISA_DT_F32, 2, shape, 0),
	    "only an output can alias an input");
	ck_assert_uint_eq(idx, 77);
	name[NEFF_NAME_MAX - 1] = 0; /* 255 characters: the longest allowed */
	OK(ADD(name, NEFF_USAGE_INPUT, ISA_DT_F32, 8, shape, -1));
	ck_assert_uint_eq(idx, 0);
	OK(ADD("s", NEFF_USAGE_INPUT, ISA_DT_BF16, 0, NULL, -1));
	ck_assert_uint_eq(idx, 1);
	BAD(ADD("s", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, -1),
	    "tensor 's': the name is already tensor 1's");
	/* Aliases: outputs only, an earlier input, same dtype and size. */
	BAD(ADD("o", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, 2),
	    "aliases tensor 2, which does not exist (2 tensors so far)");
	BAD(ADD("o", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, -2),
	    "aliases tensor -2, which does not exist");
	BAD(ADD("o", NEFF_USAGE_OUTPUT, ISA_DT_F16, 0, NULL, 1),
	    "tensor 'o' (f16, 2 bytes): aliases input 's' (bf16, 2 bytes), which differs in dtype "
	    "or size");
	BAD(ADD("o", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, 0), "which differs in dtype or size");
	BAD(ADD("s_in", NEFF_USAGE_INPUT, ISA_DT_BF16, 0, NULL, 1),
	    "only an output can alias an input");
	OK(ADD("o", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, 1));
	OK(ADD("o2", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 1, shape + 2, -1));
	BAD(ADD("o3", NEFF_USAGE_OUTPUT, ISA_DT_BF16, 0, NULL, 2),
	    "aliases tensor 2 'o', which is not an input");
	BAD(neff_builder_add_tensor(NULL, "z", NEFF_USAGE_INPUT, ISA_DT_F32, 0, NULL, -1, NULL),
	    "neff_builder_add_tensor: b is NULL");
#undef ADD
	void *data;
	size_t size;
	OK(neff_builder_finish(b, &data, &size));
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(data, size, &v),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.meta->n_tensors, 4);
	ck_assert_uint_eq(v.tensors[0].size, 4 * 6);
	ck_assert_uint_eq(strlen(v.tensors[0].name), NEFF_NAME_MAX - 1);
	free(data);
	neff_builder_destroy(b);
}
END_TEST

START_TEST(test_builder_rejects_bad_code_and_regions)
{
	neff_builder_t *b = neff_builder_create("m", 2);
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	uint32_t idx = 5;
	BAD(neff_builder_emit(b, 2, ISA_ENGINE_DMA, &nop, &idx),
	    "emitting nop: core 2: the NEFF has 2 cores");
	BAD(neff_builder_emit(b, 0, ISA_ENGINE_COUNT, &nop, &idx),
	    "core 0: engine 5 does not exist (5 engines)");
	BAD(neff_builder_emit(b, 0, (isa_engine_t)-1, &nop, &idx),
	    "engine 4294967295 does not exist");
	BAD(neff_builder_emit(b, 0, ISA_ENGINE_DMA, NULL, &idx), "neff_builder_emit: insn is NULL");
	BAD(neff_builder_emit(NULL, 0, ISA_ENGINE_DMA, &nop, &idx), "neff_builder_emit: b is NULL");
	ck_assert_uint_eq(idx, 5);
	OK(neff_builder_emit(b, 1, ISA_ENGINE_DMA, &nop, &idx));
	ck_assert_uint_eq(idx, 0);
	OK(neff_builder_emit(b, 1, ISA_ENGINE_DMA, &nop, &idx));
	ck_assert_uint_eq(idx, 1);

	/* Patch: a jump to the last instruction, fixed up after the fact. */
	isa_insn_t jump = isa_insn_init(ISA_OP_JUMP, 0);
	jump.n_ap = 1;
	jump.ap[0].region = ISA_REGION_NONE;
	jump.param = 1;
	EXPECT(neff_builder_patch(b, 1, ISA_ENGINE_DMA, 2, &jump), NS_STATUS_OUT_OF_RANGE,
	       "patching instruction 2 of core 1 engine dma: the stream has 2");
	EXPECT(neff_builder_patch(b, 0, ISA_ENGINE_DMA, 0, &jump), NS_STATUS_OUT_OF_RANGE,
	       "patching instruction 0 of core 0 engine dma: the stream has 0");
	BAD(neff_builder_patch(b, 1, ISA_ENGINE_DMA, 0, NULL), "neff_builder_patch: insn is NULL");
	OK(neff_builder_patch(b, 1, ISA_ENGINE_DMA, 0, &jump));

	uint64_t off = 99;
	BAD(neff_builder_add_const(b, "x", 1, 0, &off),
	    "constant of 1 bytes: alignment 0 is not a power of 2 up to 4096");
	BAD(neff_builder_add_const(b, "x", 1, 3, &off), "alignment 3 is not a power of 2");
	BAD(neff_builder_add_const(b, "x", 1, 8192, &off), "alignment 8192 is not");
	EXPECT(neff_builder_add_const(b, NULL, NEFF_MAX_REGION_SIZE + 1, 1, &off),
	       NS_STATUS_RESOURCE_EXHAUSTED, "constant of 281474976710657 bytes: the region would "
	       "pass the NEFF's limit of 281474976710656 bytes (0 used)");
	BAD(neff_builder_add_scratch(b, 1, 6, &off), "scratch of 1 bytes: alignment 6 is not");
	EXPECT(neff_builder_add_scratch(b, UINT64_MAX, 1, &off), NS_STATUS_RESOURCE_EXHAUSTED,
	       "scratch of 18446744073709551615 bytes: the region would pass");
	ck_assert_uint_eq(off, 99);
	OK(neff_builder_add_scratch(b, 10, 1, &off));
	OK(neff_builder_add_scratch(b, NEFF_MAX_REGION_SIZE - 16, 16, &off));
	ck_assert_uint_eq(off, 16);
	EXPECT(neff_builder_add_scratch(b, 1, 1, &off), NS_STATUS_RESOURCE_EXHAUSTED,
	       "(281474976710656 used)");
	OK(neff_builder_add_const(b, NULL, 100, 1, &off));
	ck_assert_uint_eq(off, 0);

	char ver[65];
	memset(ver, 'v', 64);
	ver[64] = 0;
	BAD(neff_builder_set_compiler_version(b, ver), "longer than 63 bytes");
	BAD(neff_builder_set_compiler_version(b, NULL), "version is NULL");
	OK(neff_builder_set_compiler_version(b, "ncc 9.9"));
	BAD(neff_builder_set_hlo(b, NULL, 3), "HLO text: NULL with a length of 3");
	OK(neff_builder_set_hlo(b, "abc", 3));
	OK(neff_builder_set_hlo(b, NULL, 0));
	BAD(neff_builder_add_debug(NULL, "a", "b", "c", 1, NULL), "b is NULL");

	void *data = (void *)0x1;
	size_t size = 3;
	BAD(neff_builder_finish(b, NULL, &size), "neff_builder_finish: out_data is NULL");
	BAD(neff_builder_finish(b, &data, NULL), "out_size is NULL");
	BAD(neff_builder_finish(NULL, &data, &size), "b is NULL");
	ck_assert_ptr_eq(data, (void *)0x1);
	OK(neff_builder_finish(b, &data, &size));
	neff_view_t v;
	char err[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(data, size, &v),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_str_eq(v.meta->compiler_version, "ncc 9.9");
	ck_assert_uint_eq(v.meta->scratch_size, NEFF_MAX_REGION_SIZE);
	ck_assert_uint_eq(v.consts_size, 100);
	ck_assert_ptr_null(v.hlo_text);
	ck_assert_uint_eq(v.code[1][ISA_ENGINE_DMA][0].opcode, ISA_OP_JUMP);
	free(data);
	neff_builder_destroy(b);
}
END_TEST

START_TEST(test_builder_dedups_debug_strings)
{
	neff_builder_t *b = neff_builder_create("m", 1);
	char name[32];
	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "op.%u", i % 10);
		uint32_t id;
		OK(neff_builder_add_debug(b, name, "add", "f.py", i, &id));
		ck_assert_uint_eq(id, i);
	}
	void *data;
	size_t size;
	OK(neff_builder_finish(b, &data, &size));
	neff_view_t v;
	ck_assert_int_eq(ns_status_consume_message(neff_parse(data, size, &v),
						   NULL, 0), NS_STATUS_OK);
	ck_assert_uint_eq(v.n_debug, 1000);
	ck_assert_uint_eq(v.debug_strings_size, 10 * 5 + 4 + 5);
	const char *hn;
	uint32_t line;
	neff_debug_lookup(&v, 997, &hn, NULL, NULL, &line);
	ck_assert_str_eq(hn, "op.7");
	ck_assert_uint_eq(line, 997);
	free(data);
	neff_builder_destroy(b);
}
END_TEST

/* The sample's calls, each retried once when it reports NOMEM (the hook
 * fires once). Returns whether any call failed. */
static bool build_with_failure(uint32_t fail_at, void **out_data, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create(NTU_MODEL_NAME, NTU_N_CORES);
	ck_assert_ptr_nonnull(b);
	neff_builder_set_alloc_fail_after(b, fail_at);
	bool failed = false;
	ns_status_t st;
	const uint64_t sx[2] = { 4, 8 }, sw[1] = { 8 };
	float bias[32] = { 0 };
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	char name[16];
#define TRY(call)                                                                  \
	do {                                                                       \
		st = (call);                                                       \
		if (ns_status_errno(st) == ENOMEM) {                               \
			ck_assert_int_eq(ns_status_code(st), NS_STATUS_RESOURCE_EXHAUSTED); \
			ck_assert_msg(strstr(ns_status_message(st), "out of memory allocating"), \
				      "%s", ns_status_message(st));                \
			ns_status_free(st);                                        \
			failed = true;                                             \
			st = (call);                                               \
		}                                                                  \
		ck_assert_msg(!st, "%s: %s", #call, ns_status_message(st));       \
	} while (0)
	TRY(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 2, sx, -1, NULL));
	TRY(neff_builder_add_tensor(b, "w", NEFF_USAGE_INPUT, ISA_DT_F32, 1, sw, -1, NULL));
	TRY(neff_builder_add_tensor(b, "w_out", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, sw, 1, NULL));
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		TRY(neff_builder_add_tensor(b, name, NEFF_USAGE_OUTPUT, ISA_DT_U8, 0, NULL, -1, NULL));
	}
	TRY(neff_builder_add_const(b, bias, sizeof(bias), 64, NULL));
	TRY(neff_builder_add_const(b, NULL, 5000, 8, NULL));
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "op.%d", i);
		TRY(neff_builder_add_debug(b, name, i % 2 ? "add" : "mul", "m.py", (uint32_t)i, NULL));
	}
	for (int i = 0; i < 40; i++)
		TRY(neff_builder_emit(b, (uint32_t)i % 2, (isa_engine_t)(i % ISA_ENGINE_COUNT),
				      &nop, NULL));
	TRY(neff_builder_set_hlo(b, NTU_HLO_TEXT, strlen(NTU_HLO_TEXT)));
	TRY(neff_builder_finish(b, out_data, out_size));
#undef TRY
	neff_builder_destroy(b);
	return failed;
}

/* SQLite style: fail the 1st, 2nd, ... allocation until none fails. Each
 * failure must be NOMEM, leave the builder as before the call (the retry
 * gives byte-identical output) and leak nothing (ASan/LSan builds). */
START_TEST(test_builder_survives_every_allocation_failure)
{
	void *ref;
	size_t ref_size;
	ck_assert(!build_with_failure(0, &ref, &ref_size));
	neff_view_t v;
	char err[256];
	ck_assert_msg(ns_status_consume_message(neff_parse(ref, ref_size, &v),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	uint32_t n;
	for (n = 1; n < 10000; n++) {
		void *data;
		size_t size;
		bool failed = build_with_failure(n, &data, &size);
		ck_assert_uint_eq(size, ref_size);
		ck_assert_msg(memcmp(data, ref, size) == 0, "allocation %u changed the output", n);
		free(data);
		if (!failed)
			break;
	}
	ck_assert_uint_gt(n, 10); /* the hook really fired for a while */
	ck_assert_uint_lt(n, 10000);
	free(ref);
}
END_TEST

static Suite *builder_suite(void)
{
	Suite *s = suite_create("neff_builder");
	TCase *tc = tcase_create("builder");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip_keeps_every_field);
	tcase_add_test(tc, test_small_neff_has_no_optional_sections);
	tcase_add_test(tc, test_builder_output_is_deterministic);
	tcase_add_test(tc, test_isa_minor_is_what_the_code_needs);
	tcase_add_test(tc, test_builder_create_rejects_bad_arguments);
	tcase_add_test(tc, test_builder_rejects_bad_tensors);
	tcase_add_test(tc, test_builder_rejects_bad_code_and_regions);
	tcase_add_test(tc, test_builder_dedups_debug_strings);
	tcase_add_test(tc, test_builder_survives_every_allocation_failure);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(builder_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
