/* Builds the demo MLP training step (forward, softmax cross-entropy, backward,
 * in-place SGD) as one NEFF with the builder API, engines ordered by semaphores. */
#include "demo_mlp_neff.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuronsim/isa.h"
#include "neuronsim/neff.h"

const char *const demo_mlp_input_names[DEMO_MLP_N_INPUTS] = {
	"x", "y", "w1", "b1", "w2", "b2",
};
const char *const demo_mlp_output_names[DEMO_MLP_N_OUTPUTS] = {
	"loss", "w1_out", "b1_out", "w2_out", "b2_out",
};

demo_mlp_config_t demo_mlp_default_config(void)
{
	return (demo_mlp_config_t){ .batch = 32, .in = 64, .hidden = 128, .classes = 10,
				    .lr = 0.1f };
}

/* ---- a tiny scheduler over the builder ----------------------------------
 * Every instruction signals the semaphore of its own engine, so after the k-th
 * instruction of engine E has completed, sem[E] >= k + 1 (an engine runs its
 * stream in order). A dependency on instruction k of another engine F is then
 * "wait sem[F] >= k + 1". An instruction waits on one semaphore only, so extra
 * cross-engine dependencies become NOPs on the waiting engine placed just
 * before it. Waits already implied by an earlier wait on the same engine are
 * dropped. */

typedef struct op {
	int engine;     /* isa_engine_t, or -1 for "no dependency" */
	uint32_t index; /* position in that engine's stream */
} op_t;

#define NO_OP ((op_t){ -1, 0 })

typedef struct sched {
	neff_builder_t *b;
	uint32_t count[ISA_ENGINE_COUNT];
	uint32_t waited[ISA_ENGINE_COUNT][ISA_ENGINE_COUNT]; /* [waiter][signaller] */
	ns_status_t failed; /* the first failure; later steps are skipped */
} sched_t;

/* Keeps st, a builder call's status, as the failure when it is the first one,
 * annotated "demo MLP NEFF: <what>"; frees it otherwise. */
static void sched_check(sched_t *s, ns_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void sched_check(sched_t *s, ns_status_t st, const char *fmt, ...)
{
	if (!st)
		return;
	if (s->failed) {
		ns_status_free(st);
		return;
	}
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	s->failed = ns_status_annotate(st, "demo MLP NEFF: %s", what);
}

static op_t sched_put(sched_t *s, isa_engine_t e, isa_insn_t *in, const char *what)
{
	in->signal_sem = (uint8_t)e;
	uint32_t idx = 0;
	if (!s->failed)
		sched_check(s, neff_builder_emit(s->b, 0, e, in, &idx), "emitting %s", what);
	s->count[e]++;
	return (op_t){ (int)e, idx };
}

/* Emits insn on engine e after the instructions in deps (NO_OP entries ignored);
 * name/op_type go to the debug map so errors name the step of the model. */
static op_t sched_emit(sched_t *s, isa_engine_t e, isa_insn_t in, const char *name,
		       const char *op_type, int line, op_t d0, op_t d1, op_t d2)
{
	op_t deps[3] = { d0, d1, d2 };
	uint32_t need[ISA_ENGINE_COUNT] = { 0 };
	for (int i = 0; i < 3; i++)
		if (deps[i].engine >= 0 && deps[i].engine != (int)e &&
		    deps[i].index + 1 > need[deps[i].engine])
			need[deps[i].engine] = deps[i].index + 1;
	int last = -1;
	for (int f = 0; f < ISA_ENGINE_COUNT; f++) {
		if (need[f] <= s->waited[e][f])
			continue;
		if (last >= 0) {
			isa_insn_t nop = isa_insn_init(ISA_OP_NOP, 0);
			nop.wait_sem = (uint8_t)last;
			nop.wait_value = need[last];
			sched_put(s, e, &nop, "a wait");
			s->waited[e][last] = need[last];
		}
		last = f;
	}
	if (last >= 0) {
		in.wait_sem = (uint8_t)last;
		in.wait_value = need[last];
		s->waited[e][last] = need[last];
	}
	uint32_t dbg = ISA_DEBUG_NONE;
	if (!s->failed)
		sched_check(s, neff_builder_add_debug(s->b, name, op_type, "tools/demo_mlp_neff.c",
						      (uint32_t)line, &dbg),
			    "adding the debug entry of %s", name);
	in.debug_id = dbg;
	return sched_put(s, e, &in, name);
}

#define EMIT(s, e, in, name, op_type, d0, d1, d2) \
	sched_emit(s, e, in, name, op_type, __LINE__, d0, d1, d2)

/* ---- access patterns ---------------------------------------------------- */

static isa_ap_t ap2(uint32_t region, uint64_t off, uint64_t d0, uint64_t d1, int64_t s0,
		    int64_t s1)
{
	isa_ap_t a;
	memset(&a, 0, sizeof(a));
	a.region = region;
	a.dtype = ISA_DT_F32;
	a.rank = 2;
	a.offset = off;
	a.shape[0] = d0;
	a.shape[1] = d1;
	a.stride[0] = s0;
	a.stride[1] = s1;
	return a;
}

/* Row-major [d0, d1]. */
static isa_ap_t mat(uint32_t region, uint64_t off, uint64_t d0, uint64_t d1)
{
	return ap2(region, off, d0, d1, (int64_t)d1, 1);
}

/* The transpose of a row-major [d1, d0] matrix, seen as [d0, d1]: no copy, just
 * swapped strides; the matmul kernel reads it through the pattern. */
static isa_ap_t mat_t(uint32_t region, uint64_t off, uint64_t d0, uint64_t d1)
{
	return ap2(region, off, d0, d1, 1, (int64_t)d0);
}

static isa_ap_t vec(uint32_t region, uint64_t off, uint64_t n)
{
	isa_ap_t a;
	memset(&a, 0, sizeof(a));
	a.region = region;
	a.dtype = ISA_DT_F32;
	a.rank = 1;
	a.offset = off;
	a.shape[0] = n;
	a.stride[0] = 1;
	return a;
}

/* One scalar seen as an [n] vector (stride 0). */
static isa_ap_t bcast(uint32_t region, uint64_t off, uint64_t n)
{
	isa_ap_t a = vec(region, off, n);
	a.stride[0] = 0;
	return a;
}

static isa_insn_t alu(isa_alu_t op, isa_ap_t o, isa_ap_t a, isa_ap_t b)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, op);
	in.n_ap = 3;
	in.ap[0] = o;
	in.ap[1] = a;
	in.ap[2] = b;
	return in;
}

static isa_insn_t alu3(isa_alu_t op, isa_ap_t o, isa_ap_t a, isa_ap_t b, isa_ap_t c)
{
	isa_insn_t in = alu(op, o, a, b);
	in.n_ap = 4;
	in.ap[3] = c;
	return in;
}

static isa_insn_t act(isa_act_t f, isa_ap_t o, isa_ap_t a, double scale)
{
	isa_insn_t in = isa_insn_init(ISA_OP_ACTIVATE, f);
	in.n_ap = 2;
	in.ap[0] = o;
	in.ap[1] = a;
	in.imm[0] = scale;
	in.imm[1] = 0.0;
	return in;
}

static isa_insn_t matmul(isa_ap_t o, isa_ap_t a, isa_ap_t b)
{
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.ap[0] = o;
	in.ap[1] = a;
	in.ap[2] = b;
	return in;
}

/* Reduction over the axes in mask; the output keeps reduced dims as size 1. */
static isa_insn_t reduce(isa_reduce_t op, uint32_t mask, isa_ap_t o, isa_ap_t a)
{
	isa_insn_t in = isa_insn_init(ISA_OP_REDUCE, op);
	in.n_ap = 2;
	in.param = mask;
	in.ap[0] = o;
	in.ap[1] = a;
	return in;
}

/* ---- the model ---------------------------------------------------------- */

ns_status_t demo_mlp_neff_build(const demo_mlp_config_t *cfg, void **out_neff,
				size_t *out_size)
{
	if (!cfg || !out_neff || !out_size)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "demo_mlp_neff_build: NULL argument");
	*out_neff = NULL;
	*out_size = 0;
	const uint64_t B = cfg->batch, I = cfg->in, H = cfg->hidden, C = cfg->classes;
	if (!B || !I || !H || !C || B > 65536 || I > 65536 || H > 65536 || C > 65536)
		return ns_status_make(NS_STATUS_INVALID_ARGUMENT,
				      "demo MLP: every dimension must be in 1..65536 (batch %" PRIu64
				      ", in %" PRIu64 ", hidden %" PRIu64 ", classes %" PRIu64 ")",
				      B, I, H, C);
	sched_t s = { 0 };
	s.b = neff_builder_create("demo_mlp_train_step", 1);
	if (!s.b)
		return ns_status_make(NS_STATUS_RESOURCE_EXHAUSTED,
				      "demo MLP NEFF: out of memory creating the builder");
	sched_check(&s, neff_builder_set_compiler_version(s.b, "neuronsim-demo-builder"),
		    "setting the compiler version");

	/* I/O tensors; region of tensor i is ISA_REGION_IO0 + i. */
	uint32_t t[DEMO_MLP_N_INPUTS + DEMO_MLP_N_OUTPUTS];
	const uint64_t shp[][2] = { { B, I }, { B, C }, { I, H }, { H, 0 }, { H, C }, { C, 0 } };
	const uint32_t rnk[] = { 2, 2, 2, 1, 2, 1 };
	for (int i = 0; i < DEMO_MLP_N_INPUTS; i++)
		sched_check(&s, neff_builder_add_tensor(s.b, demo_mlp_input_names[i],
							NEFF_USAGE_INPUT, ISA_DT_F32, rnk[i], shp[i],
							-1, &t[i]),
			    "adding an input");
	const uint64_t one[1] = { 1 };
	sched_check(&s, neff_builder_add_tensor(s.b, "loss", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, one,
						-1, &t[6]),
		    "adding an output");
	for (int i = 1; i < DEMO_MLP_N_OUTPUTS; i++)
		sched_check(&s, neff_builder_add_tensor(s.b, demo_mlp_output_names[i],
							NEFF_USAGE_OUTPUT, ISA_DT_F32, rnk[i + 1],
							shp[i + 1], (int32_t)t[i + 1], &t[6 + i]),
			    "adding an output");
	const uint32_t X = ISA_REGION_IO0 + t[0], Y = ISA_REGION_IO0 + t[1];
	const uint32_t W1 = ISA_REGION_IO0 + t[2], B1 = ISA_REGION_IO0 + t[3];
	const uint32_t W2 = ISA_REGION_IO0 + t[4], B2 = ISA_REGION_IO0 + t[5];
	const uint32_t LOSS = ISA_REGION_IO0 + t[6];
	const uint32_t W1O = ISA_REGION_IO0 + t[7], B1O = ISA_REGION_IO0 + t[8];
	const uint32_t W2O = ISA_REGION_IO0 + t[9], B2O = ISA_REGION_IO0 + t[10];

	/* Constants: 0 (relu mask, select) and -lr (SGD), read with stride-0 patterns. */
	const float consts[2] = { 0.0f, -cfg->lr };
	uint64_t c_off = 0;
	sched_check(&s, neff_builder_add_const(s.b, consts, sizeof(consts), 64, &c_off),
		    "adding the constants");
	const uint64_t ZERO = c_off, NEGLR = c_off + 4;
	const uint32_t K = ISA_REGION_CONST, S = ISA_REGION_SCRATCH;

	/* Scratch: every intermediate of forward and backward. */
	uint64_t hpre, h, z, m, zs, e, sm, p, ls, yz, r, li, lsum, dz, dh, mask, dhp, dw1,
		db1, dw2, db2;
	struct { uint64_t *off; uint64_t bytes; } sc[] = {
		{ &hpre, B * H * 4 }, { &h, B * H * 4 }, { &z, B * C * 4 }, { &m, B * 4 },
		{ &zs, B * C * 4 }, { &e, B * C * 4 }, { &sm, B * 4 }, { &p, B * C * 4 },
		{ &ls, B * 4 }, { &yz, B * C * 4 }, { &r, B * 4 }, { &li, B * 4 },
		{ &lsum, 4 }, { &dz, B * C * 4 }, { &dh, B * H * 4 }, { &mask, B * H },
		{ &dhp, B * H * 4 }, { &dw1, I * H * 4 }, { &db1, H * 4 }, { &dw2, H * C * 4 },
		{ &db2, C * 4 },
	};
	for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		*sc[i].off = 0;
		sched_check(&s, neff_builder_add_scratch(s.b, sc[i].bytes, 64, sc[i].off),
			    "reserving scratch");
	}

	const isa_engine_t TE = ISA_ENGINE_TENSOR, VE = ISA_ENGINE_VECTOR,
			   SE = ISA_ENGINE_SCALAR;
	const double inv_b = 1.0 / (double)B;

	/* forward: h = relu(x @ w1 + b1); b1 is broadcast over rows by a stride-0 row. */
	op_t f1 = EMIT(&s, TE, matmul(mat(S, hpre, B, H), mat(X, 0, B, I), mat(W1, 0, I, H)),
		       "fwd.dot1", "dot", NO_OP, NO_OP, NO_OP);
	op_t f2 = EMIT(&s, VE, alu(ISA_ALU_ADD, mat(S, hpre, B, H), mat(S, hpre, B, H),
				   ap2(B1, 0, B, H, 0, 1)),
		       "fwd.add_b1", "add", f1, NO_OP, NO_OP);
	op_t f3 = EMIT(&s, SE, act(ISA_ACT_RELU, mat(S, h, B, H), mat(S, hpre, B, H), 1.0),
		       "fwd.relu", "maximum", f2, NO_OP, NO_OP);
	op_t f4 = EMIT(&s, TE, matmul(mat(S, z, B, C), mat(S, h, B, H), mat(W2, 0, H, C)),
		       "fwd.dot2", "dot", f3, NO_OP, NO_OP);
	EMIT(&s, VE, alu(ISA_ALU_ADD, mat(S, z, B, C), mat(S, z, B, C), ap2(B2, 0, B, C, 0, 1)),
	     "fwd.add_b2", "add", f4, NO_OP, NO_OP);

	/* loss: softmax cross-entropy, stabilised by the row max; a [B,1] column is
	 * broadcast over classes with a stride-0 column. */
	EMIT(&s, VE, reduce(ISA_RED_MAX, 2, mat(S, m, B, 1), mat(S, z, B, C)),
	     "loss.max", "reduce", NO_OP, NO_OP, NO_OP);
	op_t l_zs = EMIT(&s, VE, alu(ISA_ALU_SUB, mat(S, zs, B, C), mat(S, z, B, C),
				     ap2(S, m, B, C, 1, 0)),
			 "loss.sub_max", "subtract", NO_OP, NO_OP, NO_OP);
	op_t l_e = EMIT(&s, SE, act(ISA_ACT_EXP, mat(S, e, B, C), mat(S, zs, B, C), 1.0),
			"loss.exp", "exponential", l_zs, NO_OP, NO_OP);
	op_t l_s = EMIT(&s, VE, reduce(ISA_RED_SUM, 2, mat(S, sm, B, 1), mat(S, e, B, C)),
			"loss.sum_exp", "reduce", l_e, NO_OP, NO_OP);
	EMIT(&s, VE, alu(ISA_ALU_DIV, mat(S, p, B, C), mat(S, e, B, C), ap2(S, sm, B, C, 1, 0)),
	     "loss.softmax", "divide", NO_OP, NO_OP, NO_OP);
	op_t l_ls = EMIT(&s, SE, act(ISA_ACT_LOG, mat(S, ls, B, 1), mat(S, sm, B, 1), 1.0),
			 "loss.log", "log", l_s, NO_OP, NO_OP);
	EMIT(&s, VE, alu(ISA_ALU_MUL, mat(S, yz, B, C), mat(Y, 0, B, C), mat(S, zs, B, C)),
	     "loss.y_dot_z", "multiply", NO_OP, NO_OP, NO_OP);
	EMIT(&s, VE, reduce(ISA_RED_SUM, 2, mat(S, r, B, 1), mat(S, yz, B, C)),
	     "loss.sum_yz", "reduce", NO_OP, NO_OP, NO_OP);
	EMIT(&s, VE, alu(ISA_ALU_SUB, mat(S, li, B, 1), mat(S, ls, B, 1), mat(S, r, B, 1)),
	     "loss.per_row", "subtract", l_ls, NO_OP, NO_OP);
	op_t l_sum = EMIT(&s, VE, reduce(ISA_RED_SUM, 3, mat(S, lsum, 1, 1), mat(S, li, B, 1)),
			  "loss.sum", "reduce", NO_OP, NO_OP, NO_OP);
	EMIT(&s, SE, act(ISA_ACT_IDENTITY, vec(LOSS, 0, 1), vec(S, lsum, 1), inv_b),
	     "loss.mean", "multiply", l_sum, NO_OP, NO_OP);

	/* backward: dz = (softmax - y) / B */
	op_t b_dz0 = EMIT(&s, VE, alu(ISA_ALU_SUB, mat(S, dz, B, C), mat(S, p, B, C),
				      mat(Y, 0, B, C)),
			  "bwd.softmax_minus_y", "subtract", NO_OP, NO_OP, NO_OP);
	op_t b_dz = EMIT(&s, SE, act(ISA_ACT_IDENTITY, mat(S, dz, B, C), mat(S, dz, B, C), inv_b),
			 "bwd.scale", "multiply", b_dz0, NO_OP, NO_OP);
	/* dw2 = h^T @ dz and dh = dz @ w2^T read transposed operands in place. */
	op_t b_dw2 = EMIT(&s, TE, matmul(mat(S, dw2, H, C), mat_t(S, h, H, B), mat(S, dz, B, C)),
			  "bwd.dot_dw2", "dot", b_dz, NO_OP, NO_OP);
	EMIT(&s, VE, reduce(ISA_RED_SUM, 1, mat(S, db2, 1, C), mat(S, dz, B, C)),
	     "bwd.db2", "reduce", b_dz, NO_OP, NO_OP);
	op_t b_dh = EMIT(&s, TE, matmul(mat(S, dh, B, H), mat(S, dz, B, C), mat_t(W2, 0, C, H)),
			 "bwd.dot_dh", "dot", b_dz, NO_OP, NO_OP);
	isa_ap_t mask_ap = mat(S, mask, B, H);
	mask_ap.dtype = ISA_DT_PRED;
	EMIT(&s, VE, alu(ISA_ALU_CMP_GT, mask_ap, mat(S, h, B, H), ap2(K, ZERO, B, H, 0, 0)),
	     "bwd.relu_mask", "compare", f3, NO_OP, NO_OP);
	op_t b_dhp = EMIT(&s, VE, alu3(ISA_ALU_SELECT, mat(S, dhp, B, H), mask_ap,
				       mat(S, dh, B, H), ap2(K, ZERO, B, H, 0, 0)),
			  "bwd.relu_grad", "select", b_dh, NO_OP, NO_OP);
	op_t b_dw1 = EMIT(&s, TE, matmul(mat(S, dw1, I, H), mat_t(X, 0, I, B), mat(S, dhp, B, H)),
			  "bwd.dot_dw1", "dot", b_dhp, NO_OP, NO_OP);
	EMIT(&s, VE, reduce(ISA_RED_SUM, 1, mat(S, db1, 1, H), mat(S, dhp, B, H)),
	     "bwd.db1", "reduce", NO_OP, NO_OP, NO_OP);

	/* SGD, in place: w_out aliases w, so w_out = w - lr * dw overwrites w. Each
	 * update waits until the last reader of that weight is done (w2 is read by
	 * the dh matmul, w1 by the first matmul, which precedes dw1 on the tensor
	 * engine). */
	EMIT(&s, VE, alu3(ISA_ALU_FMA, mat(W2O, 0, H, C), mat(S, dw2, H, C),
			  ap2(K, NEGLR, H, C, 0, 0), mat(W2, 0, H, C)),
	     "sgd.w2", "fma", b_dw2, b_dh, NO_OP);
	EMIT(&s, VE, alu3(ISA_ALU_FMA, vec(B2O, 0, C), vec(S, db2, C), bcast(K, NEGLR, C),
			  vec(B2, 0, C)),
	     "sgd.b2", "fma", NO_OP, NO_OP, NO_OP);
	EMIT(&s, VE, alu3(ISA_ALU_FMA, mat(W1O, 0, I, H), mat(S, dw1, I, H),
			  ap2(K, NEGLR, I, H, 0, 0), mat(W1, 0, I, H)),
	     "sgd.w1", "fma", b_dw1, NO_OP, NO_OP);
	EMIT(&s, VE, alu3(ISA_ALU_FMA, vec(B1O, 0, H), vec(S, db1, H), bcast(K, NEGLR, H),
			  vec(B1, 0, H)),
	     "sgd.b1", "fma", NO_OP, NO_OP, NO_OP);

	if (!s.failed)
		sched_check(&s, neff_builder_finish(s.b, out_neff, out_size), "serialising");
	neff_builder_destroy(s.b);
	return s.failed;
}
