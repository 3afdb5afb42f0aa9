/* Builders of the test NEFFs and the environment/stderr helpers shared by the runtime tests. */
#include "test_neffs.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "neuronsim/neff.h"

/* Sets the offset explicitly: the builder helper's handling of it is not
 * what these tests are about. */
static isa_ap_t ap_at(uint32_t region, uint64_t offset, uint64_t n)
{
	isa_ap_t ap = isa_ap_contig(region, offset, ISA_DT_F32, 1, &n);
	ap.offset = offset;
	return ap;
}

#define CHECK(x) do { ns_status_t st_ = (x); if (st_) { fprintf(stderr, "%s:%d: %s: %s\n", \
	__FILE__, __LINE__, #x, ns_status_message(st_)); abort(); } } while (0)

static void *finish(neff_builder_t *b, size_t *out_size)
{
	void *data;
	CHECK(neff_builder_finish(b, &data, out_size));
	neff_builder_destroy(b);
	return data;
}

static isa_insn_t alu(uint32_t sub, isa_ap_t o, isa_ap_t a, isa_ap_t bb, uint32_t dbg)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, sub);
	in.ap[0] = o;
	in.ap[1] = a;
	in.n_ap = 2;
	if (isa_alu_arity(sub) >= 2) {
		in.ap[2] = bb;
		in.n_ap = 3;
	}
	in.debug_id = dbg;
	return in;
}

static void *binary(const char *model, uint32_t sub, uint64_t n, uint32_t n_cores, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create(model, n_cores);
	uint32_t ia, ib, io, dbg;
	CHECK(neff_builder_add_tensor(b, "a", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ia));
	CHECK(neff_builder_add_tensor(b, "b", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ib));
	CHECK(neff_builder_add_tensor(b, "out", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &io));
	CHECK(neff_builder_add_debug(b, "add.3", "add", "model.py", 10, &dbg));
	for (uint32_t c = 0; c < n_cores; c++) {
		isa_insn_t in = alu(sub, isa_ap_contig(ISA_REGION_IO0 + io, 0, ISA_DT_F32, 1, &n),
				    isa_ap_contig(ISA_REGION_IO0 + ia, 0, ISA_DT_F32, 1, &n),
				    isa_ap_contig(ISA_REGION_IO0 + ib, 0, ISA_DT_F32, 1, &n), dbg);
		CHECK(neff_builder_emit(b, c, ISA_ENGINE_VECTOR, &in, NULL));
	}
	return finish(b, out_size);
}

void *test_neff_add(uint64_t n, size_t *out_size)
{
	return binary("add", ISA_ALU_ADD, n, 1, out_size);
}

void *test_neff_add_cores(uint64_t n, uint32_t n_cores, size_t *out_size)
{
	return binary("add_multi", ISA_ALU_ADD, n, n_cores, out_size);
}

void *test_neff_matmul(uint64_t m, uint64_t k, uint64_t n, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("matmul", 1);
	uint64_t xs[2] = { m, k }, ws[2] = { k, n }, ys[2] = { m, n };
	uint32_t ix, iw, iy, dbg;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 2, xs, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "w", NEFF_USAGE_INPUT, ISA_DT_F32, 2, ws, -1, &iw));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 2, ys, -1, &iy));
	CHECK(neff_builder_add_debug(b, "dot.1", "dot", "model.py", 20, &dbg));
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(ISA_REGION_IO0 + iy, 0, ISA_DT_F32, 2, ys);
	in.ap[1] = isa_ap_contig(ISA_REGION_IO0 + ix, 0, ISA_DT_F32, 2, xs);
	in.ap[2] = isa_ap_contig(ISA_REGION_IO0 + iw, 0, ISA_DT_F32, 2, ws);
	in.debug_id = dbg;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_TENSOR, &in, NULL));
	return finish(b, out_size);
}

void *test_neff_sqrt(uint64_t n, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("sqrt", 1);
	uint32_t ix, iy, d0, d1;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &iy));
	CHECK(neff_builder_add_debug(b, "abs.2", "abs", "train.py", 41, &d0));
	CHECK(neff_builder_add_debug(b, "sqrt.7", "sqrt", "train.py", 42, &d1));
	isa_ap_t x = isa_ap_contig(ISA_REGION_IO0 + ix, 0, ISA_DT_F32, 1, &n);
	isa_ap_t y = isa_ap_contig(ISA_REGION_IO0 + iy, 0, ISA_DT_F32, 1, &n);
	/* A harmless first instruction, so the bad one is instruction 1. */
	isa_insn_t i0 = alu(ISA_ALU_ABS, y, x, x, d0);
	isa_insn_t i1 = alu(ISA_ALU_SQRT, y, x, x, d1);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &i0, NULL));
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &i1, NULL));
	return finish(b, out_size);
}

void *test_neff_oob(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("oob", 1);
	uint64_t n = 4;
	uint32_t ix, iy, dbg;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &iy));
	CHECK(neff_builder_add_debug(b, "add.9", "add", "oob.py", 7, &dbg));
	isa_ap_t x = isa_ap_contig(ISA_REGION_IO0 + ix, 0, ISA_DT_F32, 1, &n);
	isa_ap_t y = ap_at(ISA_REGION_IO0 + iy, 64, n);
	isa_insn_t in = alu(ISA_ALU_ADD, y, x, x, dbg);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &in, NULL));
	return finish(b, out_size);
}

void *test_neff_sgd(uint64_t n, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("sgd", 1);
	uint32_t iw, ig, io, dbg;
	CHECK(neff_builder_add_tensor(b, "w", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &iw));
	CHECK(neff_builder_add_tensor(b, "g", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ig));
	CHECK(neff_builder_add_tensor(b, "w_out", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, (int32_t)iw, &io));
	CHECK(neff_builder_add_debug(b, "subtract.4", "subtract", "sgd.py", 3, &dbg));
	isa_insn_t in = alu(ISA_ALU_SUB, isa_ap_contig(ISA_REGION_IO0 + io, 0, ISA_DT_F32, 1, &n),
			    isa_ap_contig(ISA_REGION_IO0 + iw, 0, ISA_DT_F32, 1, &n),
			    isa_ap_contig(ISA_REGION_IO0 + ig, 0, ISA_DT_F32, 1, &n), dbg);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &in, NULL));
	return finish(b, out_size);
}

void *test_neff_const_scratch(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("const_scratch", 1);
	uint64_t n = 4;
	uint32_t ix, iy;
	uint64_t coff, soff;
	const float c[4] = { 1, 2, 3, 4 };
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &iy));
	CHECK(neff_builder_add_const(b, c, sizeof(c), 64, &coff));
	CHECK(neff_builder_add_scratch(b, 16, 64, &soff));
	isa_ap_t x = isa_ap_contig(ISA_REGION_IO0 + ix, 0, ISA_DT_F32, 1, &n);
	isa_ap_t y = isa_ap_contig(ISA_REGION_IO0 + iy, 0, ISA_DT_F32, 1, &n);
	isa_ap_t k = ap_at(ISA_REGION_CONST, coff, n);
	isa_ap_t s = ap_at(ISA_REGION_SCRATCH, soff, n);
	isa_insn_t i0 = alu(ISA_ALU_ADD, s, x, k, ISA_DEBUG_NONE);
	isa_insn_t i1 = alu(ISA_ALU_ADD, y, s, s, ISA_DEBUG_NONE);
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &i0, NULL));
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &i1, NULL));
	return finish(b, out_size);
}

void *test_neff_spin(size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("spin", 1);
	uint64_t n = 1;
	uint32_t ix;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ix));
	isa_insn_t in = isa_insn_init(ISA_OP_JUMP, 0);
	in.n_ap = 1;
	in.ap[0].region = ISA_REGION_NONE;
	in.param = 0;
	CHECK(neff_builder_emit(b, 0, ISA_ENGINE_GPSIMD, &in, NULL));
	return finish(b, out_size);
}

/* x -> y, dtype dt, with one instruction of opcode op over [d0, d1] views of
 * both (stride 0) on engine e. */
static void *stride0(const char *model, uint32_t op, uint32_t sub, uint32_t e, uint32_t dt,
		     uint64_t d0, uint64_t d1, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create(model, 1);
	uint64_t one = 1, sh[2] = { d0, d1 };
	uint32_t ix, iy, dbg;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, dt, 1, &one, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, dt, 1, &one, -1, &iy));
	CHECK(neff_builder_add_debug(b, "huge.1", model, "huge.py", 1, &dbg));
	isa_insn_t in = isa_insn_init(op, sub);
	in.n_ap = 3;
	for (uint32_t i = 0; i < 3; i++) {
		in.ap[i] = isa_ap_contig(ISA_REGION_IO0 + (i ? ix : iy), 0, dt, 2, sh);
		in.ap[i].stride[0] = in.ap[i].stride[1] = 0;
	}
	in.debug_id = dbg;
	CHECK(neff_builder_emit(b, 0, e, &in, NULL));
	return finish(b, out_size);
}

void *test_neff_huge_alu(size_t *out_size)
{
	return stride0("huge_alu", ISA_OP_ALU, ISA_ALU_ADD, ISA_ENGINE_VECTOR, ISA_DT_F32, 1u << 17,
		       1u << 16, out_size);
}

void *test_neff_huge_matmul(uint64_t n, size_t *out_size)
{
	return stride0("huge_matmul", ISA_OP_MATMUL, 0, ISA_ENGINE_TENSOR, ISA_DT_S32, n, n, out_size);
}

static isa_insn_t copy(isa_ap_t o, isa_ap_t a)
{
	isa_insn_t in = isa_insn_init(ISA_OP_COPY, 0);
	in.n_ap = 2;
	in.ap[0] = o;
	in.ap[1] = a;
	return in;
}

void *test_neff_fused_race(uint64_t n, uint32_t iters, size_t *out_size)
{
	neff_builder_t *b = neff_builder_create("fused_race", 1);
	uint32_t ix, iy, dbg;
	CHECK(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ix));
	CHECK(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &iy));
	CHECK(neff_builder_add_debug(b, "fusion.1", "fusion", "race.py", 5, &dbg));
	/* the descriptor: y = x * x, one input, one step */
	struct {
		isa_fused_desc_t h;
		isa_fused_op_t op;
	} d;
	memset(&d, 0, sizeof(d));
	d.h.magic = ISA_FUSED_MAGIC;
	d.h.n_inputs = 1;
	d.h.n_code = 1;
	d.h.n_regs = 1;
	d.op.op = ISA_ALU_MUL;
	d.op.dtype = ISA_DT_F32;
	uint64_t doff, evil_off, good_off, k_off, one_off, zero_off, byte_off;
	CHECK(neff_builder_add_const(b, &d, sizeof(d), 64, &doff));
	const uint16_t evil = 0xFFFF, good = 1;
	const int32_t k = (int32_t)iters, one = 1, zero = 0;
	CHECK(neff_builder_add_const(b, &evil, 2, 2, &evil_off));
	CHECK(neff_builder_add_const(b, &good, 2, 2, &good_off));
	CHECK(neff_builder_add_const(b, &k, 4, 4, &k_off));
	CHECK(neff_builder_add_const(b, &one, 4, 4, &one_off));
	CHECK(neff_builder_add_const(b, &zero, 4, 4, &zero_off));
	CHECK(neff_builder_add_const(b, NULL, 1, 1, &byte_off));
	/* scratch: loop counter, run flag, and two 1 MiB sinks for copies that
	 * make both engines look busy enough for the threaded scheduler */
	const uint64_t big = 1u << 20;
	uint64_t cnt_off, flag_off, sink_v, sink_d;
	CHECK(neff_builder_add_scratch(b, 4, 4, &cnt_off));
	CHECK(neff_builder_add_scratch(b, 4, 4, &flag_off));
	CHECK(neff_builder_add_scratch(b, big, 64, &sink_v));
	CHECK(neff_builder_add_scratch(b, big, 64, &sink_d));

	isa_ap_t cnt = isa_ap_contig(ISA_REGION_SCRATCH, cnt_off, ISA_DT_S32, 0, NULL);
	isa_ap_t flag = isa_ap_contig(ISA_REGION_SCRATCH, flag_off, ISA_DT_S32, 0, NULL);
	isa_ap_t kc = isa_ap_contig(ISA_REGION_CONST, k_off, ISA_DT_S32, 0, NULL);
	isa_ap_t onec = isa_ap_contig(ISA_REGION_CONST, one_off, ISA_DT_S32, 0, NULL);
	isa_ap_t zeroc = isa_ap_contig(ISA_REGION_CONST, zero_off, ISA_DT_S32, 0, NULL);
	isa_ap_t byte_b = isa_ap_contig(ISA_REGION_CONST, byte_off, ISA_DT_U8, 1, &big);
	byte_b.stride[0] = 0; /* one byte broadcast */
	isa_ap_t ncode = isa_ap_contig(ISA_REGION_CONST, doff + offsetof(isa_fused_desc_t, n_code),
				       ISA_DT_U16, 0, NULL);
	isa_ap_t evilc = isa_ap_contig(ISA_REGION_CONST, evil_off, ISA_DT_U16, 0, NULL);
	isa_ap_t goodc = isa_ap_contig(ISA_REGION_CONST, good_off, ISA_DT_U16, 0, NULL);

	/* vector: cnt = k; do { y = fused(x); cnt -= 1 } while (cnt); flag = 0 */
	isa_insn_t v[6];
	v[0] = alu(ISA_ALU_ADD, cnt, kc, zeroc, ISA_DEBUG_NONE);
	v[1] = copy(isa_ap_contig(ISA_REGION_SCRATCH, sink_v, ISA_DT_U8, 1, &big), byte_b);
	v[2] = isa_insn_init(ISA_OP_FUSED, 0);
	v[2].n_ap = 3;
	v[2].ap[0] = isa_ap_contig(ISA_REGION_IO0 + iy, 0, ISA_DT_F32, 1, &n);
	uint64_t dlen = sizeof(d);
	v[2].ap[1] = isa_ap_contig(ISA_REGION_CONST, doff, ISA_DT_U8, 1, &dlen);
	v[2].ap[2] = isa_ap_contig(ISA_REGION_IO0 + ix, 0, ISA_DT_F32, 1, &n);
	v[2].wait_sem = 0; /* the DMA loop has restored the descriptor and raised flag */
	v[2].wait_value = 1;
	v[2].debug_id = dbg;
	v[3] = alu(ISA_ALU_SUB, cnt, cnt, onec, ISA_DEBUG_NONE);
	v[4] = isa_insn_init(ISA_OP_JUMP, 0);
	v[4].n_ap = 1;
	v[4].ap[0] = cnt;
	v[4].param = 2;
	v[5] = alu(ISA_ALU_SUB, flag, flag, flag, ISA_DEBUG_NONE);
	for (int i = 0; i < 6; i++)
		CHECK(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &v[i], NULL));

	/* dma: restore the descriptor, flag = 1, then flip its n_code between
	 * 0xFFFF and 1 until flag drops; it always ends restored */
	isa_insn_t m[6];
	m[0] = copy(ncode, goodc);
	m[1] = copy(flag, onec);
	m[1].signal_sem = 0;
	m[2] = copy(isa_ap_contig(ISA_REGION_SCRATCH, sink_d, ISA_DT_U8, 1, &big), byte_b);
	m[3] = copy(ncode, evilc);
	m[4] = copy(ncode, goodc);
	m[5] = isa_insn_init(ISA_OP_JUMP, 0);
	m[5].n_ap = 1;
	m[5].ap[0] = flag;
	m[5].param = 3;
	for (int i = 0; i < 6; i++)
		CHECK(neff_builder_emit(b, 0, ISA_ENGINE_DMA, &m[i], NULL));
	return finish(b, out_size);
}

void test_env_default(void)
{
	static const char *const unset[] = {
		"NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_EXEC_TIMEOUT",
		"NEURONSIM_NUM_DEVICES", "NEURONSIM_NAN_CHECK", "NEURONSIM_INF_CHECK",
		"NEURONSIM_BACKEND", "NEURONSIM_PIN_THREADS", "NEURONSIM_THREADS", "NEURONSIM_CPU_ISA",
	};
	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
		unsetenv(unset[i]);
	setenv("NEURONSIM_DEVICE_MEMORY", "256M", 1);
	setenv("NEURONSIM_CORES_PER_DEVICE", "4", 1);
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
}

static int saved_stderr = -1;
static FILE *capture_file;

void test_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	dup2(fileno(capture_file), STDERR_FILENO);
}

char *test_capture_end(void)
{
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	/* Written through the descriptor, so ask it, not the FILE. */
	int fd = fileno(capture_file);
	off_t len = lseek(fd, 0, SEEK_END);
	if (len < 0)
		len = 0;
	char *buf = calloc(1, (size_t)len + 1);
	ssize_t got = pread(fd, buf, (size_t)len, 0);
	buf[got > 0 ? got : 0] = '\0';
	fclose(capture_file);
	/* Show it anyway so failures are debuggable. */
	fputs(buf, stderr);
	return buf;
}
