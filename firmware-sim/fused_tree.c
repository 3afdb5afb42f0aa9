/* FUSED's one-pass trees (fused_tree.h): the plan (portable) and the one-pass loop (AVX-512F). */
#include "fused_tree.h"

#include <string.h>

#include "internal.h"

/* The values of a program while it is planned: leaves and steps. */
#define CV_NONE 0xffffu
#define CV_STEP 0x8000u /* | step index; else a leaf index */

typedef struct cplan {
	const isa_fused_op_t *code;
	uint16_t a[ISA_FUSED_MAX_CODE], b[ISA_FUSED_MAX_CODE]; /* each step's operands */
	fz_tree_t *tr;
	bool t_busy;
} cplan_t;

static bool is_step(uint16_t v)
{
	return v != CV_NONE && (v & CV_STEP);
}

/* Whether computing step s's value needs t: one of its subtrees does, or
 * both its operands are steps (and not the same one). */
static bool needs_t(const cplan_t *p, uint32_t s)
{
	uint16_t a = p->a[s], b = p->b[s];
	if (a == b)
		return is_step(a) && needs_t(p, a & ~CV_STEP);
	if (is_step(a) && is_step(b))
		return true;
	return (is_step(a) && needs_t(p, a & ~CV_STEP)) || (is_step(b) && needs_t(p, b & ~CV_STEP));
}

static bool emit(cplan_t *p, uint8_t op, uint8_t src)
{
	fz_tree_t *tr = p->tr;
	if (tr->n >= FZ_TREE_MAX)
		return false;
	tr->op[tr->n] = op;
	tr->src[tr->n] = src;
	tr->n++;
	return true;
}

static uint8_t tree_op(uint32_t alu)
{
	return alu == ISA_ALU_ADD ? FZT_ADD : alu == ISA_ALU_SUB ? FZT_SUB : FZT_MUL;
}

/* Emits the ops that leave step s's value in acc. */
static bool gen(cplan_t *p, uint32_t s)
{
	uint16_t a = p->a[s], b = p->b[s];
	uint8_t op = tree_op(p->code[s].op);
	if (a == b) { /* x op x */
		if (is_step(a))
			return gen(p, a & ~CV_STEP) && emit(p, op, FZT_ACC);
		return emit(p, FZT_LOAD, (uint8_t)a) && emit(p, op, (uint8_t)a);
	}
	if (!is_step(a) && !is_step(b))
		return emit(p, FZT_LOAD, (uint8_t)a) && emit(p, op, (uint8_t)b);
	if (!is_step(b)) /* acc = a's value, then acc op b */
		return gen(p, a & ~CV_STEP) && emit(p, op, (uint8_t)b);
	if (!is_step(a)) /* acc = b's value, then a op acc */
		return gen(p, b & ~CV_STEP) &&
		       emit(p, op == FZT_SUB ? FZT_RSUB : op, (uint8_t)a);
	/* both steps: the one that needs t first, into t; then the other */
	if (p->t_busy)
		return false;
	uint32_t sa = a & ~CV_STEP, sb = b & ~CV_STEP;
	bool first_a = needs_t(p, sa);
	if (first_a && needs_t(p, sb))
		return false;
	uint32_t s1 = first_a ? sa : sb, s2 = first_a ? sb : sa;
	if (!gen(p, s1) || !emit(p, FZT_STASH, 0))
		return false;
	p->t_busy = true;
	if (!gen(p, s2))
		return false;
	p->t_busy = false;
	/* acc holds s2's value, t s1's: a op b is acc op t when s2 is a */
	if (first_a)
		return emit(p, op == FZT_SUB ? FZT_RSUB : op, FZT_T);
	return emit(p, op, FZT_T);
}

void fz_tree_plan(const isa_fused_op_t *code, uint32_t n_code, const bool *live,
		   const uint8_t *in_dt, uint32_t n_in, uint32_t out_reg, fz_tree_t *tr)
{
	tr->n = 0;
	tr->n_in = n_in;
	if (!fwsim_cpu_avx512() || n_in > ISA_FUSED_MAX_INPUTS)
		return;
	for (uint32_t i = 0; i < n_in; i++)
		if (!isa_dtype_is_float(in_dt[i]))
			return;
	cplan_t p = { .code = code, .tr = tr };
	uint16_t val[ISA_FUSED_MAX_REGS];
	uint16_t uses[ISA_FUSED_MAX_CODE] = { 0 };
	uint32_t leaves = n_in;
	for (uint32_t r = 0; r < ISA_FUSED_MAX_REGS; r++)
		val[r] = r < n_in ? (uint16_t)r : CV_NONE;
	for (uint32_t s = 0; s < n_code; s++) {
		if (!live[s])
			continue; /* skipped when run: writes nothing */
		const isa_fused_op_t *op = &code[s];
		if (op->dtype != ISA_DT_F32 || op->dst >= ISA_FUSED_MAX_REGS)
			return;
		if (op->op == ISA_FUSED_CONST) {
			/* a leaf: the value fz_const fills its lanes with */
			double d;
			memcpy(&d, &op->imm, 8);
			if (leaves >= FZT_T)
				return;
			tr->konst[leaves - n_in] = (float)d;
			val[op->dst] = (uint16_t)leaves++;
			continue;
		}
		if (op->op == ISA_FUSED_CONVERT) {
			/* to f32 from a float: registers hold f32 lanes of every
			 * float dtype, and the conversion keeps them (fz_convert) */
			if (val[op->src[0]] == CV_NONE)
				return;
			val[op->dst] = val[op->src[0]];
			continue;
		}
		if (op->op != ISA_ALU_ADD && op->op != ISA_ALU_SUB && op->op != ISA_ALU_MUL)
			return;
		uint16_t a = val[op->src[0]], b = val[op->src[1]];
		if (a == CV_NONE || b == CV_NONE)
			return;
		p.a[s] = a;
		p.b[s] = b;
		/* a value read as both operands of one step counts once */
		if (is_step(a))
			uses[a & ~CV_STEP]++;
		if (is_step(b) && b != a)
			uses[b & ~CV_STEP]++;
		val[op->dst] = (uint16_t)(CV_STEP | s);
	}
	uint16_t root = out_reg < ISA_FUSED_MAX_REGS ? val[out_reg] : CV_NONE;
	if (!is_step(root))
		return;
	for (uint32_t s = 0; s < n_code; s++)
		if (live[s] && code[s].op != ISA_FUSED_CONST && code[s].op != ISA_FUSED_CONVERT &&
		    uses[s] != (s == (root & ~CV_STEP) ? 0 : 1))
			return; /* a value read by two steps: a DAG, not a tree */
	tr->n_leaves = leaves;
	if (!gen(&p, root & ~CV_STEP))
		tr->n = 0;
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

#define TV 8 /* vectors of 16 lanes per register: 128 lanes */
/* Elements ahead of a streamed operand's loads to prefetch. Without it a
 * batch norm's sum of (x - c) * g over 2 x 9.6 MB ran at 0.83 ms, slower than
 * step by step (0.70): the one pass leaves the hardware prefetchers too little
 * time between its bursts of loads. 4 KiB ahead: 0.58 ms, DRAM's rate on
 * this machine; 1 and 2 KiB: 0.62 and 0.59. */
#define TREE_PF 1024

/* Loads 16 lanes at p: whole, or those of mask m (the others 0, their
 * memory untouched). */
#define TV_LOAD(masked, m, p) ((masked) ? _mm512_maskz_loadu_ps((m), (p)) : _mm512_loadu_ps(p))

/*
 * 128 elements from e: each op is one dispatch and 8 vector operations on
 * acc and t, which stay in registers (16 of the 32; the loops are unrolled
 * whole so that their indices are constants). Returns the flag's OR of the
 * results. Instantiated twice: whole chunks, and the last one with lanes
 * past n masked (loaded as 0, never stored, not in the flag); with one
 * instance the 8 masks did not fit the mask registers and were reloaded
 * from the stack at every load.
 */
__attribute__((target("avx512f"), always_inline)) static inline __m512i
tree_chunk(const fz_tree_t *tr, const float *const *ptr, const float *val, size_t e, size_t n,
	    float *o, __m512i flag, __m512i vb, bool masked)
{
	const __m512i absm = _mm512_set1_epi32(0x7fffffff);
	__mmask16 mk[TV];
	__m512 acc[TV], t[TV], x[TV];
#pragma GCC unroll 8
	for (int v = 0; v < TV; v++) {
		size_t lo = e + 16 * (size_t)v;
		mk[v] = !masked || (lo < n && n - lo >= 16) ? 0xffff
			: lo >= n ? 0 : (__mmask16)((1u << (n - lo)) - 1u);
		acc[v] = _mm512_setzero_ps();
		t[v] = _mm512_setzero_ps();
	}
	for (uint32_t k = 0; k < tr->n; k++) {
		uint8_t op = tr->op[k], s = tr->src[k];
		if (op == FZT_STASH) {
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				t[v] = acc[v];
			continue;
		}
		/* the operand */
		if (s == FZT_T) {
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				x[v] = t[v];
		} else if (s == FZT_ACC) {
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				x[v] = acc[v];
		} else if (ptr[s]) {
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++) {
				_mm_prefetch((const char *)(ptr[s] + e + TREE_PF + 16 * v), _MM_HINT_T0);
				x[v] = TV_LOAD(masked, mk[v], ptr[s] + e + 16 * v);
			}
		} else {
			__m512 b = _mm512_set1_ps(val[s]);
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				x[v] = b;
		}
		switch (op) {
		case FZT_LOAD:
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				acc[v] = x[v];
			break;
		case FZT_ADD:
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				acc[v] = _mm512_add_ps(acc[v], x[v]);
			break;
		case FZT_SUB:
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				acc[v] = _mm512_sub_ps(acc[v], x[v]);
			break;
		case FZT_RSUB:
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				acc[v] = _mm512_sub_ps(x[v], acc[v]);
			break;
		default: /* FZT_MUL */
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++)
				acc[v] = _mm512_mul_ps(acc[v], x[v]);
		}
	}
#pragma GCC unroll 8
	for (int v = 0; v < TV; v++) {
		__m512i u = _mm512_add_epi32(_mm512_and_si512(_mm512_castps_si512(acc[v]), absm), vb);
		if (masked) {
			_mm512_mask_storeu_ps(o + e + 16 * v, mk[v], acc[v]);
			flag = _mm512_mask_or_epi32(flag, mk[v], flag, u);
		} else {
			_mm512_storeu_ps(o + e + 16 * v, acc[v]);
			flag = _mm512_or_si512(flag, u);
		}
	}
	return flag;
}

__attribute__((target("avx512f"))) static uint32_t
tree_run_avx512(const fz_tree_t *tr, size_t n, float *o, const float *const *in, const float *sc,
		 uint32_t bias)
{
	const float *ptr[FZT_T];
	float val[FZT_T];
	for (uint32_t l = 0; l < tr->n_leaves; l++) {
		ptr[l] = l < tr->n_in ? in[l] : NULL;
		val[l] = l < tr->n_in ? (in[l] ? 0.0f : sc[l]) : tr->konst[l - tr->n_in];
	}
	__m512i flag = _mm512_setzero_si512(), vb = _mm512_set1_epi32((int)bias);
	size_t e = 0;
	for (; e + 16 * TV <= n; e += 16 * TV)
		flag = tree_chunk(tr, ptr, val, e, n, o, flag, vb, false);
	if (e < n)
		flag = tree_chunk(tr, ptr, val, e, n, o, flag, vb, true);
	return (uint32_t)_mm512_reduce_or_epi32(flag);
}

uint32_t fz_tree_run(const fz_tree_t *tr, size_t n, float *o, const float *const *in,
		      const float *sc, uint32_t bias)
{
	return tree_run_avx512(tr, n, o, in, sc, bias);
}
#else
uint32_t fz_tree_run(const fz_tree_t *tr, size_t n, float *o, const float *const *in,
		      const float *sc, uint32_t bias)
{
	(void)tr, (void)n, (void)o, (void)in, (void)sc, (void)bias;
	return 0; /* never planned here (fz_tree_plan) */
}
#endif
