/* FUSED's step plans (fused_plan.h): finding mask-selects and op pairs in a program, and their vector loops. */
#include "fused_plan.h"

#include <string.h>

#include "internal.h"

#define NONE (-1)

typedef struct plan {
	const isa_fused_op_t *code;
	int16_t def[ISA_FUSED_MAX_CODE][3];  /* the step whose value operand a reads, or NONE */
	uint8_t sdt[ISA_FUSED_MAX_CODE][3];  /* the operand's dtype there (0xFF: unknown) */
	uint16_t uses[ISA_FUSED_MAX_CODE];   /* reads of step s's value */
	int16_t steps[ISA_FUSED_MAX_CODE];   /* the tree being built */
	uint32_t n_steps;
} plan_t;

static int arity_of(const isa_fused_op_t *op)
{
	if (op->op == ISA_FUSED_CONVERT)
		return 1;
	if (op->op == ISA_FUSED_CONST || op->op == ISA_FUSED_IOTA)
		return 0;
	return isa_alu_arity(op->op);
}

/* Collects the steps of the tree whose root is step d; false when it is not one. */
static bool build(plan_t *p, int d)
{
	if (d == NONE || p->uses[d] != 1 || p->code[d].dtype != ISA_DT_PRED)
		return false;
	uint32_t o = p->code[d].op;
	bool ok;
	if (o >= ISA_ALU_CMP_EQ && o <= ISA_ALU_CMP_GE)
		ok = isa_dtype_is_float(p->sdt[d][0]) && isa_dtype_is_float(p->sdt[d][1]);
	else if (o == ISA_ALU_AND || o == ISA_ALU_OR || o == ISA_ALU_XOR)
		ok = p->sdt[d][0] == ISA_DT_PRED && p->sdt[d][1] == ISA_DT_PRED &&
		     build(p, p->def[d][0]) && build(p, p->def[d][1]);
	else if (o == ISA_ALU_NOT)
		ok = p->sdt[d][0] == ISA_DT_PRED && build(p, p->def[d][0]);
	else
		ok = false;
	if (ok)
		p->steps[p->n_steps++] = (int16_t)d;
	return ok;
}

static bool pair_op(const isa_fused_op_t *op)
{
	return (op->op == ISA_ALU_ADD || op->op == ISA_ALU_SUB || op->op == ISA_ALU_MUL) &&
	       op->dtype == ISA_DT_F32;
}

/* LT, LE, GT, GE: the compares the one-pass mask-select runs (ReLU's and
 * hardtanh's backward); EQ and NE trees keep the step-by-step passes. */
static bool is_ordered_cmp(const isa_fused_op_t *op)
{
	return op->op == ISA_ALU_CMP_LT || op->op == ISA_ALU_CMP_LE || op->op == ISA_ALU_CMP_GT ||
	       op->op == ISA_ALU_CMP_GE;
}

/* Whether compare c's operand registers still hold its operands at step s
 * (no live step between them that is not a folded tree step writes them). */
static bool cmp_kept(const isa_fused_op_t *code, const bool *live, const fz_plan_t *mp, int c,
		     uint32_t s)
{
	for (uint32_t w = (uint32_t)c + 1; w < s; w++)
		if (live[w] && !mp->folded[w] &&
		    (code[w].dst == code[c].src[0] || code[w].dst == code[c].src[1]))
			return false;
	return true;
}

/* The one-pass mask-selects (fz_plan_t.tree), among the mask-selects found. */
static void plan_fast(const plan_t *p, uint32_t n_code, const bool *live, fz_plan_t *mp)
{
	const isa_fused_op_t *code = p->code;
	for (uint32_t s = 0; s < n_code; s++) {
		mp->tree[s][0] = mp->tree[s][1] = mp->tree[s][2] = NONE;
		if (!mp->select[s])
			continue;
		int d = p->def[s][0], c1 = NONE, c2 = NONE, j = NONE;
		if (is_ordered_cmp(&code[d])) {
			c1 = d;
		} else if (code[d].op == ISA_ALU_AND || code[d].op == ISA_ALU_OR) {
			j = d;
			c1 = p->def[d][0];
			c2 = p->def[d][1];
			if (!is_ordered_cmp(&code[c1]) || !is_ordered_cmp(&code[c2]))
				continue;
		} else {
			continue;
		}
		if (!cmp_kept(code, live, mp, c1, s) || (c2 != NONE && !cmp_kept(code, live, mp, c2, s)))
			continue;
		mp->tree[s][0] = (int16_t)c1;
		mp->tree[s][1] = (int16_t)c2;
		mp->tree[s][2] = (int16_t)j;
		mp->fast_skip[c1] = true;
		if (c2 != NONE) {
			mp->fast_skip[c2] = true;
			mp->fast_skip[j] = true;
		}
	}
}

/* The op pairs (after the mask-selects, whose steps they leave alone). */
static void plan_pairs(const plan_t *p, uint32_t n_code, const bool *live, fz_plan_t *mp)
{
	const isa_fused_op_t *code = p->code;
	for (uint32_t u = 0; u < n_code; u++) {
		const isa_fused_op_t *ou = &code[u];
		if (!live[u] || mp->folded[u] || mp->paired[u] || !pair_op(ou) ||
		    !isa_dtype_is_float(p->sdt[u][0]) || !isa_dtype_is_float(p->sdt[u][1]))
			continue;
		for (int side = 0; side < 2; side++) {
			int t = p->def[u][side];
			if (t == NONE || p->uses[t] != 1 || mp->folded[t] || mp->paired[t] ||
			    mp->pair_first[t] >= 0 || !pair_op(&code[t]) ||
			    !isa_dtype_is_float(p->sdt[t][0]) || !isa_dtype_is_float(p->sdt[t][1]))
				continue;
			uint32_t ra = code[t].src[0], rb = code[t].src[1];
			bool kept = true;
			/* t itself is skipped: its result never lands in its register */
			for (uint32_t w = (uint32_t)t + 1; w < u && kept; w++)
				kept = !live[w] || (code[w].dst != ra && code[w].dst != rb);
			if (!kept)
				continue;
			mp->paired[t] = true;
			mp->pair_first[u] = (int16_t)t;
			mp->pair_side[u] = (uint8_t)side;
			break;
		}
	}
}

void fz_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
	     const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_plan_t *mp)
{
	plan_t pl, *p = &pl;
	memset(p, 0, sizeof(*p));
	memset(mp, 0, sizeof(*mp));
	p->code = code;
	for (uint32_t s = 0; s < ISA_FUSED_MAX_CODE; s++)
		mp->pair_first[s] = NONE;
	int16_t cur[ISA_FUSED_MAX_REGS];
	uint8_t cdt[ISA_FUSED_MAX_REGS];
	for (uint32_t r = 0; r < ISA_FUSED_MAX_REGS; r++) {
		cur[r] = NONE;
		cdt[r] = r < n_in ? in_dt[r] : 0xFF;
	}
	for (uint32_t s = 0; s < n_code; s++) {
		if (!live[s])
			continue;
		const isa_fused_op_t *op = &code[s];
		for (int a = 0; a < arity_of(op); a++) {
			p->def[s][a] = cur[op->src[a]];
			p->sdt[s][a] = cdt[op->src[a]];
			if (cur[op->src[a]] != NONE)
				p->uses[cur[op->src[a]]]++;
		}
		cur[op->dst] = (int16_t)s;
		cdt[op->dst] = (uint8_t)op->dtype;
	}
	if (cur[out_reg] != NONE)
		p->uses[cur[out_reg]]++;

	for (uint32_t s = 0; s < n_code; s++) {
		if (!live[s] || code[s].op != ISA_ALU_SELECT || !isa_dtype_is_float(p->sdt[s][1]) ||
		    !isa_dtype_is_float(p->sdt[s][2]))
			continue;
		p->n_steps = 0;
		if (!build(p, p->def[s][0]) || mp->n_slots + p->n_steps > ISA_FUSED_MAX_CODE / 2)
			continue;
		/* a tree's steps have one use each: no step is in two trees */
		for (uint32_t i = 0; i < p->n_steps; i++) {
			int d = p->steps[i];
			mp->folded[d] = true;
			mp->slot[d] = (uint8_t)mp->n_slots++;
		}
		for (uint32_t i = 0; i < p->n_steps; i++) {
			int d = p->steps[i];
			if (code[d].op < ISA_ALU_CMP_EQ || code[d].op > ISA_ALU_CMP_GE)
				for (int a = 0; a < arity_of(&code[d]); a++)
					mp->arg[d][a] = mp->slot[p->def[d][a]];
		}
		mp->select[s] = true;
		mp->arg[s][0] = mp->slot[p->def[s][0]];
	}
	plan_fast(p, n_code, live, mp);
	plan_pairs(p, n_code, live, mp);
}

FWSIM_TARGET_CLONES
static void mask_compare(uint32_t op, size_t n, uint32_t *restrict m, const float *a,
			 const float *b)
{
	switch (op) {
	case ISA_ALU_CMP_EQ: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] == b[i]); break;
	case ISA_ALU_CMP_NE: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] != b[i]); break;
	case ISA_ALU_CMP_LT: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] < b[i]); break;
	case ISA_ALU_CMP_LE: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] <= b[i]); break;
	case ISA_ALU_CMP_GT: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] > b[i]); break;
	default: for (size_t i = 0; i < n; i++) m[i] = 0u - (uint32_t)(a[i] >= b[i]); break;
	}
}

FWSIM_TARGET_CLONES
static void mask_join(uint32_t op, size_t n, uint32_t *restrict m, const uint32_t *x,
		      const uint32_t *y)
{
	switch (op) {
	case ISA_ALU_AND: for (size_t i = 0; i < n; i++) m[i] = x[i] & y[i]; break;
	case ISA_ALU_OR: for (size_t i = 0; i < n; i++) m[i] = x[i] | y[i]; break;
	case ISA_ALU_XOR: for (size_t i = 0; i < n; i++) m[i] = x[i] ^ y[i]; break;
	default: for (size_t i = 0; i < n; i++) m[i] = ~x[i]; break; /* NOT */
	}
}

FWSIM_TARGET_CLONES
static void mask_blend(size_t n, float *dst, const uint32_t *restrict m, const float *a,
		       const float *b)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t x, y, z;
		memcpy(&x, &a[i], 4);
		memcpy(&y, &b[i], 4);
		z = (x & m[i]) | (y & ~m[i]);
		memcpy(&dst[i], &z, 4);
	}
}

/* The mask of an ordered compare (GE the default), for a compile-time op. */
static inline __attribute__((always_inline)) uint32_t cmp_mask(uint32_t op, float a, float b)
{
	switch (op) {
	case ISA_ALU_CMP_LT: return 0u - (uint32_t)(a < b);
	case ISA_ALU_CMP_LE: return 0u - (uint32_t)(a <= b);
	case ISA_ALU_CMP_GT: return 0u - (uint32_t)(a > b);
	default: return 0u - (uint32_t)(a >= b); /* GE */
	}
}

/* One pass for constant ops: one compare (j 0), or two joined by AND or OR. */
#define MS_LOOP(O1, O2, J)                                                                  \
	for (size_t i = 0; i < n; i++) {                                                    \
		uint32_t m = cmp_mask(O1, a1[i], b1[i]), u, v, z;                           \
		if ((J) == ISA_ALU_AND)                                                     \
			m &= cmp_mask(O2, a2[i], b2[i]);                                    \
		else if ((J) == ISA_ALU_OR)                                                 \
			m |= cmp_mask(O2, a2[i], b2[i]);                                    \
		memcpy(&u, &x[i], 4);                                                       \
		memcpy(&v, &y[i], 4);                                                       \
		z = (u & m) | (v & ~m);                                                     \
		memcpy(&dst[i], &z, 4);                                                     \
		acc |= (z & 0x7fffffffu) + bias;                                            \
	}                                                                                   \
	return acc
#define MS_OP2(O1, J)                                                                      \
	switch (op2) {                                                                      \
	case ISA_ALU_CMP_LT: MS_LOOP(O1, ISA_ALU_CMP_LT, J);                                 \
	case ISA_ALU_CMP_LE: MS_LOOP(O1, ISA_ALU_CMP_LE, J);                                 \
	case ISA_ALU_CMP_GT: MS_LOOP(O1, ISA_ALU_CMP_GT, J);                                 \
	default: MS_LOOP(O1, ISA_ALU_CMP_GE, J);                                             \
	}
#define MS_OP1(J)                                                                          \
	switch (op1) {                                                                      \
	case ISA_ALU_CMP_LT: MS_OP2(ISA_ALU_CMP_LT, J);                                      \
	case ISA_ALU_CMP_LE: MS_OP2(ISA_ALU_CMP_LE, J);                                      \
	case ISA_ALU_CMP_GT: MS_OP2(ISA_ALU_CMP_GT, J);                                      \
	default: MS_OP2(ISA_ALU_CMP_GE, J);                                                  \
	}

/* One pass, specialised per op so that each compare is one vector compare. */
FWSIM_TARGET_CLONES
static uint32_t mask_select_fast(uint32_t op1, uint32_t op2, uint32_t join, size_t n,
				 float *restrict dst, const float *a1, const float *b1, const float *a2,
				 const float *b2, const float *x, const float *y, uint32_t bias)
{
	uint32_t acc = 0;
	if (join == ISA_ALU_AND) {
		MS_OP1(ISA_ALU_AND)
	} else if (join == ISA_ALU_OR) {
		MS_OP1(ISA_ALU_OR)
	} else {
		op2 = ISA_ALU_CMP_LT; /* one compare: op2 unused */
		MS_OP1(0)
	}
}

uint32_t fz_mask_select_fast(uint32_t op1, uint32_t op2, uint32_t join, size_t n, float *dst,
			     const float *a1, const float *b1, const float *a2, const float *b2,
			     const float *x, const float *y, uint32_t bias)
{
	return mask_select_fast(op1, op2, join, n, dst, a1, b1, a2, b2, x, y, bias);
}

/* Plain wrappers: clang 14 does not export a target_clones function under
 * its own name across translation units (as kernels_reduce.c). */
void fz_mask_compare(uint32_t op, size_t n, uint32_t *m, const float *a, const float *b)
{
	mask_compare(op, n, m, a, b);
}

void fz_mask_join(uint32_t op, size_t n, uint32_t *m, const uint32_t *x, const uint32_t *y)
{
	mask_join(op, n, m, x, y);
}

void fz_mask_blend(size_t n, float *dst, const uint32_t *m, const float *a, const float *b)
{
	mask_blend(n, dst, m, a, b);
}

/* One pair's loop, specialised by the compiler for each constant first,
 * second and side that pair_run passes. */
static inline __attribute__((always_inline)) uint32_t
pair_loop(uint32_t first, uint32_t second, int side, size_t n, float *restrict o,
	  const float *restrict a, const float *restrict b, const float *restrict c, uint32_t bias)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		float x = a[i], y = b[i];
		float t = first == ISA_ALU_ADD ? x + y : first == ISA_ALU_SUB ? x - y : x * y;
		float l = side ? c[i] : t, r = side ? t : c[i];
		float v = second == ISA_ALU_ADD ? l + r : second == ISA_ALU_SUB ? l - r : l * r;
		uint32_t u;
		memcpy(&u, &v, 4);
		o[i] = v;
		acc |= (u & 0x7fffffffu) + bias;
	}
	return acc;
}

#define PAIR_CASE(F, S)                                                        \
	case F * ISA_ALU_END + S:                                              \
		if (side)                                                      \
			return pair_loop(F, S, 1, n, o, a, b, c, bias);        \
		return pair_loop(F, S, 0, n, o, a, b, c, bias)

FWSIM_TARGET_CLONES
static uint32_t pair_run(uint32_t first, uint32_t second, int side, size_t n, float *restrict o,
			 const float *restrict a, const float *restrict b, const float *restrict c,
			 uint32_t bias)
{
	switch (first * ISA_ALU_END + second) {
	PAIR_CASE(ISA_ALU_ADD, ISA_ALU_ADD);
	PAIR_CASE(ISA_ALU_ADD, ISA_ALU_SUB);
	PAIR_CASE(ISA_ALU_ADD, ISA_ALU_MUL);
	PAIR_CASE(ISA_ALU_SUB, ISA_ALU_ADD);
	PAIR_CASE(ISA_ALU_SUB, ISA_ALU_SUB);
	PAIR_CASE(ISA_ALU_SUB, ISA_ALU_MUL);
	PAIR_CASE(ISA_ALU_MUL, ISA_ALU_ADD);
	PAIR_CASE(ISA_ALU_MUL, ISA_ALU_SUB);
	PAIR_CASE(ISA_ALU_MUL, ISA_ALU_MUL);
	default: return 0; /* fz_plan pairs only these */
	}
}

uint32_t fz_pair_run(uint32_t first, uint32_t second, int side, size_t n, float *o, const float *a,
		     const float *b, const float *c, uint32_t bias)
{
	return pair_run(first, second, side, n, o, a, b, c, bias);
}
