/* FUSED's one-pass tree loop, written once for the vector ISAs: fused_tree.c
 * includes it once per ISA after defining TL_* (the vector and mask types,
 * TV vectors of TL_W lanes per chunk, and the operations below). Every op is
 * the ALU's on each lane: no contraction (-ffp-contract=off), MAX/MIN as
 * alu_ops.h's f_max/f_min, compares IEEE (only NE holds for NaN). */

/* stmt for each vector v of a chunk, the loop unrolled whole so that v is a
 * constant (the vectors stay in registers) */
#define TL_EACH(stmt)                                          \
	_Pragma("GCC unroll 8") for (int v = 0; v < TV; v++) { \
		stmt;                                          \
	}

/* ALU MAX and MIN (alu_ops.h's f_max, f_min) on a vector, as f_max computes
 * them: the vector max both ways round ANDed (min: ORed), which differ only
 * on a tie of +0 and -0; then a NaN a, else a NaN b. */
__attribute__((target(TL_TARGET), always_inline)) static inline TL_V TL_NAME(tv_minmax)(TL_V a, TL_V b, bool max)
{
	TL_V ab = max ? TL_MAXPS(a, b) : TL_MINPS(a, b), ba = max ? TL_MAXPS(b, a) : TL_MINPS(b, a);
	TL_V r = max ? TL_ANDPS(ab, ba) : TL_ORPS(ab, ba);
	r = TL_BLEND(TL_CMP(b, b, _CMP_UNORD_Q), r, b);
	return TL_BLEND(TL_CMP(a, a, _CMP_UNORD_Q), r, a);
}

/* An ALU compare of a vector as a mask. */
__attribute__((target(TL_TARGET), always_inline)) static inline TL_M TL_NAME(tv_cmp)(uint8_t op, TL_V a, TL_V b)
{
	switch (op) {
	case ISA_ALU_CMP_EQ: return TL_CMP(a, b, _CMP_EQ_OQ);
	case ISA_ALU_CMP_NE: return TL_CMP(a, b, _CMP_NEQ_UQ);
	case ISA_ALU_CMP_LT: return TL_CMP(a, b, _CMP_LT_OQ);
	case ISA_ALU_CMP_LE: return TL_CMP(a, b, _CMP_LE_OQ);
	case ISA_ALU_CMP_GT: return TL_CMP(a, b, _CMP_GT_OQ);
	default: return TL_CMP(a, b, _CMP_GE_OQ);
	}
}

/*
 * TV x TL_W elements from e: each op is one dispatch and TV vector operations
 * on acc and t, which stay in registers (the loops are unrolled whole so that
 * their indices are constants). Returns the flag's OR of the results.
 * Instantiated twice: whole chunks, and the last one with lanes past n masked
 * (loaded as 0, never stored, not in the flag); with one instance the masks
 * did not fit the registers and were reloaded from the stack at every load.
 */
__attribute__((target(TL_TARGET), always_inline)) static inline TL_I TL_NAME(tree_chunk)(const fz_tree_t *tr, const float *const *ptr,
					      const float *val, const fz_rowin_t *rows,
					      const float *const *rowv, size_t e, size_t n,
					      float *o, TL_I flag, TL_I vb, bool masked, bool byrow)
{
	const TL_I absm = TL_SET1I(0x7fffffff);
	TL_LANES mk[TV];
	TL_M sel[TV];
	TL_V acc[TV], t[TV], x[TV];
#pragma GCC unroll 8
	for (int v = 0; v < TV; v++) {
		size_t lo = e + TL_W * (size_t)v;
		mk[v] = !masked || (lo < n && n - lo >= TL_W) ? TL_LANES_ALL
			: lo >= n ? TL_LANES_NONE : TL_LANES_FIRST(n - lo);
		acc[v] = TL_ZERO();
		t[v] = TL_ZERO();
		sel[v] = TL_MZERO();
	}
	for (uint32_t k = 0; k < tr->n; k++) {
		uint8_t op = tr->op[k], s = tr->src[k];
		if (op == FZT_STASH) {
			TL_EACH(t[v] = acc[v]);
			continue;
		}
		/* the operand */
		if (s == FZT_T) {
			TL_EACH(x[v] = t[v]);
		} else if (s == FZT_ACC) {
			TL_EACH(x[v] = acc[v]);
		} else if (ptr[s]) {
#pragma GCC unroll 8
			for (int v = 0; v < TV; v++) {
				_mm_prefetch((const char *)(ptr[s] + e + TREE_PF + TL_W * v), _MM_HINT_T0);
				x[v] = masked ? TL_LOADM(mk[v], ptr[s] + e + TL_W * v)
					      : TL_LOAD(ptr[s] + e + TL_W * v);
			}
		} else if (byrow && rowv[s]) {
			/* the values of the rows the chunk spans (at most TL_W:
			 * FZ_ROW_MIN), each lane's from its row's */
			int32_t r0 = rows->rowof[e];
			uint32_t nr = rows->nrows - (uint32_t)r0;
			TL_V rv = nr >= TL_W ? TL_LOAD(rowv[s] + r0)
					     : TL_LOADM(TL_LANES_FIRST(nr), rowv[s] + r0);
			TL_I base = TL_SET1I(r0);
			TL_EACH(x[v] = TL_PERMUTE(TL_SUBI(TL_LOADI(rows->rowof + e + TL_W * v), base), rv));
		} else {
			TL_V b = TL_SET1(val[s]);
			TL_EACH(x[v] = b);
		}
		switch (op) {
		case FZT_LOAD:
			TL_EACH(acc[v] = x[v]);
			break;
		case FZT_ADD:
			TL_EACH(acc[v] = TL_ADD(acc[v], x[v]));
			break;
		case FZT_SUB:
			TL_EACH(acc[v] = TL_SUB(acc[v], x[v]));
			break;
		case FZT_RSUB:
			TL_EACH(acc[v] = TL_SUB(x[v], acc[v]));
			break;
		case FZT_MUL:
			TL_EACH(acc[v] = TL_MUL(acc[v], x[v]));
			break;
		case FZT_MAX:
		case FZT_MIN:
			TL_EACH(acc[v] = TL_NAME(tv_minmax)(acc[v], x[v], op == FZT_MAX));
			break;
		case FZT_RMAX:
		case FZT_RMIN:
			TL_EACH(acc[v] = TL_NAME(tv_minmax)(x[v], acc[v], op == FZT_RMAX));
			break;
		case FZT_MASK:
			TL_EACH(sel[v] = TL_NAME(tv_cmp)(tr->arg[k], acc[v], x[v]));
			break;
		case FZT_MASK_AND:
			TL_EACH(sel[v] = TL_MAND(sel[v], TL_NAME(tv_cmp)(tr->arg[k], acc[v], x[v])));
			break;
		case FZT_MASK_OR:
			TL_EACH(sel[v] = TL_MOR(sel[v], TL_NAME(tv_cmp)(tr->arg[k], acc[v], x[v])));
			break;
		case FZT_BLEND:
			TL_EACH(acc[v] = TL_BLEND(sel[v], acc[v], x[v]));
			break;
		case FZT_BLENDN:
			TL_EACH(acc[v] = TL_BLEND(sel[v], x[v], acc[v]));
			break;
		/* x a CONST, not NaN: (x > acc) ? x : acc keeps a NaN acc, and
		 * gives acc on a tie, which is the IEEE result but for
		 * max(-0, +0) (+ 0 makes it +0) and min(+0, -0) (not taken) */
		case FZT_MAXC:
			TL_EACH(acc[v] = TL_MAXPS(x[v], acc[v]));
			break;
		case FZT_MAXC0:
			TL_EACH(acc[v] = TL_ADD(TL_MAXPS(x[v], acc[v]), x[v]));
			break;
		default: /* FZT_MINC */
			TL_EACH(acc[v] = TL_MINPS(x[v], acc[v]));
		}
	}
#pragma GCC unroll 8
	for (int v = 0; v < TV; v++) {
		TL_I u = TL_ADDI(TL_ANDI(TL_CASTI(acc[v]), absm), vb);
		if (masked) {
			TL_STOREM(o + e + TL_W * v, mk[v], acc[v]);
			flag = TL_ORI_LANES(flag, mk[v], u);
		} else {
			TL_STORE(o + e + TL_W * v, acc[v]);
			flag = TL_ORI(flag, u);
		}
	}
	return flag;
}

/* The whole chunks of n elements, then the masked last one. */
__attribute__((target(TL_TARGET), always_inline)) static inline TL_I TL_NAME(tree_chunks)(const fz_tree_t *tr, const float *const *ptr,
					      const float *val, const fz_rowin_t *rows,
					      const float *const *rowv, size_t n, float *o,
					      uint32_t bias, bool byrow)
{
	TL_I flag = TL_ZEROI(), vb = TL_SET1I((int)bias);
	size_t e = 0;
	for (; e + TL_W * TV <= n; e += TL_W * TV)
		flag = TL_NAME(tree_chunk)(tr, ptr, val, rows, rowv, e, n, o, flag, vb, false, byrow);
	if (e < n)
		flag = TL_NAME(tree_chunk)(tr, ptr, val, rows, rowv, e, n, o, flag, vb, true, byrow);
	return flag;
}

__attribute__((target(TL_TARGET))) static uint32_t TL_NAME(tree_run)(const fz_tree_t *tr, size_t n, float *o,
					 const float *const *in, const float *sc,
					 const fz_rowin_t *rows, uint32_t bias)
{
	const float *ptr[FZT_T], *rowv[FZT_T];
	float val[FZT_T];
	for (uint32_t l = 0; l < tr->n_leaves; l++) {
		bool input = l < tr->n_in;
		ptr[l] = input ? in[l] : NULL;
		rowv[l] = input && !in[l] && rows ? rows->v[l] : NULL;
		val[l] = input ? (in[l] || rowv[l] ? 0.0f : sc[l]) : tr->konst[l - tr->n_in];
	}
	/* byrow a constant in each instance: the loops without row inputs
	 * test nothing more per operand */
	TL_I flag = rows ? TL_NAME(tree_chunks)(tr, ptr, val, rows, rowv, n, o, bias, true)
			 : TL_NAME(tree_chunks)(tr, ptr, val, rows, rowv, n, o, bias, false);
	return TL_REDUCE_ORI(flag);
}
