/* Writes the seed corpus of fuzz_neff (tests/fuzz/corpus/fuzz_neff/): small
 * valid NEFFs that together reach every section type and opcode family.
 * Usage: gen_neff_corpus DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/neff.h"

#define CHECK(call)                                                            \
	do {                                                                   \
		ns_status_t st_ = (call);                                      \
		if (st_) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, ns_status_message(st_));                \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void save(neff_builder_t *b, const char *dir, const char *name)
{
	void *data;
	size_t size;
	CHECK(neff_builder_finish(b, &data, &size));
	neff_view_t v;
	char err[256];
	if (ns_status_consume_message(neff_parse(data, size, &v),
				      err, sizeof(err)) != NS_STATUS_OK) {
		fprintf(stderr, "%s: generated NEFF does not parse: %s\n", name, err);
		exit(1);
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
		perror(path);
		exit(1);
	}
	printf("%s: %zu bytes\n", path, size);
	free(data);
	neff_builder_destroy(b);
}

static isa_ap_t ap(uint32_t region, isa_dtype_t dt, uint32_t rank, uint64_t d0, uint64_t d1)
{
	const uint64_t shape[2] = { d0, d1 };
	return isa_ap_contig(region, 0, dt, rank, shape);
}

static void gen_small(const char *dir)
{
	neff_builder_t *b = neff_builder_create("small", 1);
	const uint64_t shape[1] = { 2 };
	CHECK(neff_builder_add_tensor(b, "in", NEFF_USAGE_INPUT, ISA_DT_U8, 1, shape, -1, NULL));
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_SCALAR, &nop, NULL));
	save(b, dir, "small.neff");
}

static void gen_empty(const char *dir)
{
	save(neff_builder_create("", 1), dir, "empty.neff");
}

/* Every section, aliasing, semaphores between engines, two cores. */
static void gen_full(const char *dir)
{
	neff_builder_t *b = neff_builder_create("full", 2);
	const uint64_t sx[2] = { 4, 8 }, sw[1] = { 8 };
	uint32_t x, w, y, wo, d0, d1;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 2, sx, -1, &x));
	CHECK(neff_builder_add_tensor(b, "w", NEFF_USAGE_INPUT, ISA_DT_F32, 1, sw, -1, &w));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 2, sx, -1, &y));
	CHECK(neff_builder_add_tensor(b, "w_out", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, sw, (int32_t)w, &wo));
	float bias[32] = { 1, 2, 3 };
	uint64_t c_off;
	CHECK(neff_builder_add_const(b, bias, sizeof(bias), 64, &c_off));
	CHECK(neff_builder_add_scratch(b, 4096, 64, NULL));
	CHECK(neff_builder_add_debug(b, "add.1", "add", "model.py", 12, &d0));
	CHECK(neff_builder_add_debug(b, "copy.2", "copy", "model.py", 13, &d1));
	isa_insn_t add = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	add.n_ap = 3;
	add.ap[0] = ap(ISA_REGION_IO0 + y, ISA_DT_F32, 2, 4, 8);
	add.ap[1] = ap(ISA_REGION_IO0 + x, ISA_DT_F32, 2, 4, 8);
	add.ap[2] = ap(ISA_REGION_CONST, ISA_DT_F32, 2, 4, 8);
	add.ap[2].offset = c_off;
	add.debug_id = d0;
	add.signal_sem = 0;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &add, NULL));
	isa_insn_t copy = isa_insn_init(ISA_OP_COPY, 0);
	copy.n_ap = 2;
	copy.ap[0] = ap(ISA_REGION_IO0 + wo, ISA_DT_F32, 1, 8, 0);
	copy.ap[1] = ap(ISA_REGION_IO0 + w, ISA_DT_F32, 1, 8, 0);
	copy.wait_sem = 0;
	copy.wait_value = 1;
	copy.debug_id = d1;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_DMA, &copy, NULL));
	isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
	CHECK(neff_builder_emit(b, 1, ISA_ENGINE_GPSIMD, &nop, NULL));
	const char *hlo = "HloModule full\nENTRY main {\n  ROOT p = f32[4,8] parameter(0)\n}\n";
	CHECK(neff_builder_set_hlo(b, hlo, strlen(hlo)));
	save(b, dir, "full.neff");
}

/* One instruction of most opcode families on one core. */
static void gen_ops(const char *dir)
{
	neff_builder_t *b = neff_builder_create("ops", 1);
	const uint64_t s44[2] = { 4, 4 }, s4[1] = { 4 }, s2[1] = { 2 };
	uint32_t a, c, i, st, bits, pred;
	CHECK(neff_builder_add_tensor(b, "a", NEFF_USAGE_INPUT, ISA_DT_F32, 2, s44, -1, &a));
	CHECK(neff_builder_add_tensor(b, "idx", NEFF_USAGE_INPUT, ISA_DT_S32, 1, s4, -1, &i));
	CHECK(neff_builder_add_tensor(b, "state", NEFF_USAGE_INPUT, ISA_DT_U64, 1, s2, -1, &st));
	CHECK(neff_builder_add_tensor(b, "pred", NEFF_USAGE_INPUT, ISA_DT_PRED, 0, NULL, -1, &pred));
	CHECK(neff_builder_add_tensor(b, "c", NEFF_USAGE_OUTPUT, ISA_DT_F32, 2, s44, -1, &c));
	CHECK(neff_builder_add_tensor(b, "bits", NEFF_USAGE_OUTPUT, ISA_DT_U32, 2, s44, -1, &bits));
	uint32_t A = ISA_REGION_IO0 + a, C = ISA_REGION_IO0 + c;

	isa_insn_t mm = isa_insn_init(ISA_OP_MATMUL, 0);
	mm.n_ap = 3;
	mm.ap[0] = ap(C, ISA_DT_F32, 2, 4, 4);
	mm.ap[1] = mm.ap[2] = ap(A, ISA_DT_F32, 2, 4, 4);
	mm.flags = ISA_F_ACCUMULATE;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_TENSOR, &mm, NULL));

	isa_insn_t act = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_GELU);
	act.n_ap = 2;
	act.ap[0] = ap(C, ISA_DT_F32, 2, 4, 4);
	act.ap[1] = ap(A, ISA_DT_F32, 2, 4, 4);
	act.ap[1].stride[0] = 0; /* broadcast row 0 */
	act.imm[0] = 1.0;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_SCALAR, &act, NULL));

	isa_insn_t red = isa_insn_init(ISA_OP_REDUCE, ISA_RED_MAX);
	red.n_ap = 2;
	red.ap[0] = ap(ISA_REGION_SCRATCH, ISA_DT_F32, 2, 4, 1);
	red.ap[1] = ap(A, ISA_DT_F32, 2, 4, 4);
	red.param = 2;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &red, NULL));
	CHECK(neff_builder_add_scratch(b, 16, 16, NULL));

	isa_insn_t iota = isa_insn_init(ISA_OP_IOTA, 0);
	iota.n_ap = 1;
	iota.ap[0] = ap(C, ISA_DT_F32, 2, 4, 4);
	iota.param = 1;
	iota.imm[0] = -2.0;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_GPSIMD, &iota, NULL));

	isa_insn_t ga = isa_insn_init(ISA_OP_GATHER, 0);
	ga.n_ap = 3;
	ga.ap[0] = ap(C, ISA_DT_F32, 2, 4, 4);
	ga.ap[1] = ap(A, ISA_DT_F32, 2, 4, 4);
	ga.ap[2] = ap(ISA_REGION_IO0 + i, ISA_DT_S32, 1, 4, 0);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_GPSIMD, &ga, NULL));

	isa_insn_t rng = isa_insn_init(ISA_OP_RNG, 0);
	rng.n_ap = 3;
	rng.ap[0] = ap(ISA_REGION_IO0 + bits, ISA_DT_U32, 2, 4, 4);
	rng.ap[1] = rng.ap[2] = ap(ISA_REGION_IO0 + st, ISA_DT_U64, 1, 2, 0);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_GPSIMD, &rng, NULL));

	isa_insn_t jmp = isa_insn_init(ISA_OP_JUMP, 0);
	jmp.n_ap = 1;
	jmp.ap[0] = ap(ISA_REGION_IO0 + pred, ISA_DT_PRED, 0, 0, 0);
	jmp.flags = ISA_F_INVERT;
	jmp.param = 0;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_GPSIMD, &jmp, NULL));
	save(b, dir, "ops.neff");
}

/* Four cores, NOPs chained by semaphores, a debug map with shared strings. */
static void gen_cores(const char *dir)
{
	neff_builder_t *b = neff_builder_create("cores", 4);
	CHECK(neff_builder_set_compiler_version(b, "gen_neff_corpus"));
	char name[32];
	for (uint32_t k = 0; k < 6; k++) {
		snprintf(name, sizeof(name), "fusion.%u", k);
		CHECK(neff_builder_add_debug(b, name, k % 2 ? "fusion" : "dot", "train.py",
					     100 + k, NULL));
	}
	for (uint32_t c = 0; c < 4; c++) {
		isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
		nop.debug_id = c;
		nop.signal_sem = (uint8_t)c;
		if (c) {
			nop.wait_sem = (uint8_t)(c - 1);
			nop.wait_value = 1;
		}
		CHECK(neff_builder_emit(b, c, (isa_engine_t)(c % ISA_ENGINE_COUNT), &nop, NULL));
	}
	save(b, dir, "cores.neff");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	gen_small(argv[1]);
	gen_empty(argv[1]);
	gen_full(argv[1]);
	gen_ops(argv[1]);
	gen_cores(argv[1]);
	return 0;
}
