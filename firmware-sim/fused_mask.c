/* FUSED's mask-selects (fused_mask.h): finding them in a program, and their vector loops. */
#include "fused_mask.h"

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

void fz_mask_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
		  const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_mask_plan_t *mp)
{
	plan_t pl, *p = &pl;
	memset(p, 0, sizeof(*p));
	memset(mp, 0, sizeof(*mp));
	p->code = code;
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
