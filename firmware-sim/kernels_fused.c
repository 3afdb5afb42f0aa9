/* FUSED: validates a fused-loop descriptor in memory, bounds-checks its extra operands and runs its program block by block, storing each element or (ISA 1.3) reducing into the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alu_ops.h"
#include "convert.h"
#include "fused_tree.h"
#include "fused_plan.h"
#include "internal.h"
#include "pool.h"

/* Elements per block. Registers are 8 bytes per element: a typical program of
 * 4-8 registers keeps its lanes in L1/L2 while it runs over a block (32
 * registers: 128 KiB), and 512 amortises the per-step dispatch. Measured on a
 * 6-step f32 program: 1.9x faster than the 6 ALU instructions when memory-bound
 * (4M elements), equal when everything fits in L2 (32K). */
#define FZ_BLOCK 512
/* Elements per block of a one-pass tree (fused_tree.h) over rows several
 * per block: every lane it touches (an input's f32 values, rows of one value
 * each filled 16 at a time, the output's in the reducing form, a blame's f32
 * steps) holds 4-byte elements, so a register's FZ_BLOCK * 8 bytes take
 * twice the block, less the row fill's overrun. Half as many blocks, whose
 * fixed costs were a fifth of a batch norm's normalisation over 7x7 planes
 * (8x576x7x7: 67.5 -> 62.4 us). Long rows keep FZ_BLOCK: a batch norm's
 * gradient over 56x56 planes ran 14% slower in blocks of 1008. A tree with
 * compares keeps FZ_BLOCK too: a blame's step-by-step run writes their pred
 * lanes, 8 bytes each. */
#define FZ_TREE_BLOCK (2 * FZ_BLOCK - 16)
/* Elements per segment of a one-pass tree over long rows when it needs no
 * registers (fz_long_ok). */
#define FZ_TREE_LONG 8192
/* output (or accumulators) + inputs + one index operand per iota dim: what
 * fwsim_iter_t walks at the most */
#define FZ_MAX_OPS FWSIM_ITER_MAX_OPS

/* The largest descriptor check_fused (isa.c) lets an instruction point at. */
#define FZ_DESC_MAX (sizeof(isa_fused_desc_t) + \
		     (ISA_FUSED_MAX_INPUTS - ISA_FUSED_DIRECT) * sizeof(isa_ap_t) + \
		     ISA_FUSED_MAX_CODE * sizeof(isa_fused_op_t))

/* segments that read row inputs in place (fwsim_fused_row_segments) */
static atomic_uint_fast64_t g_row_segments;

uint64_t fwsim_fused_row_segments(void)
{
	return atomic_load(&g_row_segments);
}

typedef struct fz_prog {
	uint8_t raw[FZ_DESC_MAX]; /* the one copy of the descriptor ever read */
	isa_fused_desc_t h;
	isa_ap_t in_ap[ISA_FUSED_MAX_INPUTS];
	uint8_t *in_base[ISA_FUSED_MAX_INPUTS];
	isa_fused_op_t code[ISA_FUSED_MAX_CODE];
	/* steps whose result some later step or the output reads (fz_liveness) */
	bool live[ISA_FUSED_MAX_CODE];
	/* the mask-selects and op pairs (fused_plan.h); NaN blame runs the
	 * program without them, one step at a time */
	fz_plan_t mp;
	/* the whole program in one pass (fused_tree.h), when it can be */
	fz_tree_t tree;
	/* the last live step writing the output register; out_in_place: it
	 * writes f32 lanes and is no CONST (whose lane is kept across blocks),
	 * so its lane can be a contiguous f32 output block (fz_segment) */
	uint32_t out_step;
	bool out_in_place;
} fz_prog_t;

/* Marks the steps whose result is read before being overwritten, by a later
 * live step or as the output register at the end; the others are skipped.
 * The compiler's programs carry dead CONSTs (a scalar constant whose only use
 * is a broadcast, emitted as a CONST of its own) that shared a register with
 * a live one: the two refilled it in turn on every block, a quarter of a
 * hardtanh backward's time, since a register keeps one constant across blocks. */
static void fz_liveness(fz_prog_t *pg)
{
	uint32_t need = 1u << pg->h.out_reg;
	for (int s = (int)pg->h.n_code - 1; s >= 0; s--) {
		const isa_fused_op_t *op = &pg->code[s];
		bool live = (need >> op->dst) & 1u;
		pg->live[s] = live;
		if (!live)
			continue;
		need &= ~(1u << op->dst);
		int arity = op->op == ISA_FUSED_CONVERT ? 1
			    : op->op == ISA_FUSED_CONST || op->op == ISA_FUSED_IOTA ? 0
			    : isa_alu_arity(op->op);
		for (int a = 0; a < arity; a++)
			need |= 1u << op->src[a];
	}
}

/* Float compares and is_finite: float operands, pred (0/1) result (o never
 * overlaps a or b). */
FWSIM_TARGET_CLONES
static void fz_f32_to_pred(uint32_t op, size_t n, int64_t *restrict o, const float *a,
			   const float *b)
{
	switch (op) {
	case ISA_ALU_IS_FINITE: for (size_t i = 0; i < n; i++) o[i] = isfinite(a[i]) ? 1 : 0; break;
	case ISA_ALU_CMP_EQ: for (size_t i = 0; i < n; i++) o[i] = a[i] == b[i]; break;
	case ISA_ALU_CMP_NE: for (size_t i = 0; i < n; i++) o[i] = a[i] != b[i]; break;
	case ISA_ALU_CMP_LT: for (size_t i = 0; i < n; i++) o[i] = a[i] < b[i]; break;
	case ISA_ALU_CMP_LE: for (size_t i = 0; i < n; i++) o[i] = a[i] <= b[i]; break;
	case ISA_ALU_CMP_GT: for (size_t i = 0; i < n; i++) o[i] = a[i] > b[i]; break;
	case ISA_ALU_CMP_GE: for (size_t i = 0; i < n; i++) o[i] = a[i] >= b[i]; break;
	default: for (size_t i = 0; i < n; i++) o[i] = 0;
	}
}

/* dst = p ? a : b over float lanes with an integer predicate, as a bit blend:
 * a branch per lane mispredicts on data-dependent predicates (a ReLU or
 * hardtanh backward: about half the lanes each way), the blend vectorises.
 * The chosen value's bits are copied, NaN payloads included. dst never
 * overlaps an operand (fz_step goes through tmp when it would). */
FWSIM_TARGET_CLONES
static void fz_select_f32(size_t n, float *restrict dst, const int64_t *restrict p,
			  const float *restrict a, const float *restrict b)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t x, y, m = 0u - (uint32_t)(p[i] != 0), z;
		memcpy(&x, &a[i], 4);
		memcpy(&y, &b[i], 4);
		z = (x & m) | (y & ~m);
		memcpy(&dst[i], &z, 4);
	}
}

/* Keeps an integer register exactly what a store and reload in dtype dt would
 * give, so intermediate overflow wraps as it does op by op. */
FWSIM_TARGET_CLONES
static void fz_wrap(uint32_t dt, size_t n, int64_t *v)
{
	switch (dt) {
	case ISA_DT_S8: for (size_t i = 0; i < n; i++) v[i] = (int8_t)v[i]; break;
	case ISA_DT_S16: for (size_t i = 0; i < n; i++) v[i] = (int16_t)v[i]; break;
	case ISA_DT_S32: for (size_t i = 0; i < n; i++) v[i] = (int32_t)v[i]; break;
	case ISA_DT_U8: for (size_t i = 0; i < n; i++) v[i] = (uint8_t)v[i]; break;
	case ISA_DT_U16: for (size_t i = 0; i < n; i++) v[i] = (uint16_t)v[i]; break;
	case ISA_DT_U32: for (size_t i = 0; i < n; i++) v[i] = (uint32_t)v[i]; break;
	case ISA_DT_PRED: for (size_t i = 0; i < n; i++) v[i] = v[i] != 0; break;
	default: break; /* 64-bit: already exact */
	}
}

/* Rounds a float register to dtype dt (bf16/f16 intermediates round per step,
 * as they do when each op stores its result). */
static void fz_round(uint32_t dt, size_t n, float *v)
{
	if (dt == ISA_DT_BF16)
		for (size_t i = 0; i < n; i++)
			v[i] = ns_bf16_to_f32(ns_f32_to_bf16(v[i]));
	else if (dt == ISA_DT_F16)
		for (size_t i = 0; i < n; i++)
			v[i] = ns_f16_to_f32(ns_f32_to_f16(v[i]));
}

/* ---- the program interpreter over one block ---- */

typedef struct fz_regs {
	uint8_t *buf;           /* n_regs * FZ_BLOCK * 8 bytes (malloc'd: no declared type) */
	uint8_t *ptr[ISA_FUSED_MAX_REGS]; /* where the register's block is read from: its
					   * own lane, or contiguous f32 input in place */
	uint8_t dt[ISA_FUSED_MAX_REGS];
	/* a CONST step's value kept in its lane from one block to the next: the
	 * elements filled (0: the lane holds something else), the immediate and
	 * dtype. Refilling 512 lanes per constant per block was most of the
	 * time of a compare-with-constant program (hardtanh backward) */
	uint32_t cfill[ISA_FUSED_MAX_REGS];
	uint64_t cimm[ISA_FUSED_MAX_REGS];
	uint8_t cdt[ISA_FUSED_MAX_REGS];
	/* stride-0 inputs: one lane per input after tmp, and what it holds as
	 * cfill/cimm/cdt do for constants (sfill 0: nothing yet) */
	uint8_t *splat;
	/* the mask-selects' slots: FZ_BLOCK 4-byte masks each (fused_plan.h) */
	uint32_t *masks;
	uint32_t sfill[ISA_FUSED_MAX_INPUTS];
	uint64_t skey[ISA_FUSED_MAX_INPUTS];
	uint8_t sdt[ISA_FUSED_MAX_INPUTS];
	/* IOTA: index along dim d of element e of the block is
	 * iota0[d] + e * iotad[d] */
	int64_t iota0[ISA_MAX_RANK], iotad[ISA_MAX_RANK];
	/* register dreg's lane is the output block in device memory dptr while
	 * a block runs with its output in place (fz_segment); else dreg is
	 * ISA_FUSED_MAX_REGS */
	uint32_t dreg;
	uint8_t *dptr;
	/* a segment of several rows (fz_rows): rows of rlen elements, operand
	 * o's rows rs[o] bytes apart; an input with element stride 0 and
	 * rs != 0 holds one value per row. rs is NULL for a one-row segment */
	const int64_t *rs;
	size_t rlen;
	/* rowof[j] = j / rowof_rlen (0: not filled yet): the rows of a
	 * segment's elements, for the one-pass tree's inputs with one value
	 * per row (fused_tree.h, fz_rowin_t) */
	size_t rowof_rlen;
	int32_t rowof[FZ_TREE_BLOCK + FZ_ROW_SLACK];
	/* the one-pass loops' scan of what they write (fz_pair_run): the bias
	 * of the job's check (0 without one), and the flag and step of the
	 * last such loop in this segment (flag_step UINT32_MAX: none) */
	uint32_t chk_bias, flag, flag_step;
} fz_regs_t;

/* Reads go through ptr (an input may be used in place); writes always go to
 * the register's own lane, which then becomes its ptr. */
static inline const float *RF(const fz_regs_t *r, uint32_t i)
{
	return (const float *)(const void *)r->ptr[i];
}

static inline const int64_t *RI(const fz_regs_t *r, uint32_t i)
{
	return (const int64_t *)(const void *)r->ptr[i];
}

static inline uint8_t *own(const fz_regs_t *r, uint32_t i)
{
	return i == r->dreg ? r->dptr : r->buf + (size_t)i * FZ_BLOCK * 8;
}

static inline float *WF(const fz_regs_t *r, uint32_t i)
{
	return (float *)(void *)own(r, i);
}

static inline int64_t *WI(const fz_regs_t *r, uint32_t i)
{
	return (int64_t *)(void *)own(r, i);
}

/* A conversion that changes the register class (f32 <-> i64 lanes) goes
 * through tmp, since dst may be the same register as the source. */
static void fz_convert(fz_regs_t *r, const isa_fused_op_t *op, size_t n, uint8_t *tmp)
{
	uint32_t sdt = r->dt[op->src[0]], ddt = op->dtype;
	int sf = isa_dtype_is_float(sdt), df = isa_dtype_is_float(ddt);
	if (sf && df) {
		float *o = WF(r, op->dst);
		const float *a = RF(r, op->src[0]);
		if (o != a)
			memcpy(o, a, n * sizeof(float));
		fz_round(ddt, n, o);
	} else if (sf) {
		int64_t *t = (int64_t *)(void *)tmp;
		const float *a = RF(r, op->src[0]);
		/* to pred: x != 0, so NaN -> 1 (as fw_f32_to_int) */
		if (ddt == ISA_DT_PRED)
			for (size_t i = 0; i < n; i++)
				t[i] = a[i] != 0;
		else
			for (size_t i = 0; i < n; i++)
				t[i] = fw_f32_to_int(ddt, a[i]);
		fz_wrap(ddt, n, t);
		memcpy(WI(r, op->dst), t, n * sizeof(int64_t));
	} else if (df) {
		float *t = (float *)(void *)tmp;
		const int64_t *a = RI(r, op->src[0]);
		if (isa_dtype_is_unsigned(sdt))
			for (size_t i = 0; i < n; i++)
				t[i] = (float)(uint64_t)a[i];
		else
			for (size_t i = 0; i < n; i++)
				t[i] = (float)a[i];
		fz_round(ddt, n, t);
		memcpy(WF(r, op->dst), t, n * sizeof(float));
	} else {
		int64_t *o = WI(r, op->dst);
		const int64_t *a = RI(r, op->src[0]);
		if (o != a)
			memcpy(o, a, n * sizeof(int64_t));
		fz_wrap(ddt, n, o);
	}
}

static void fz_const(fz_regs_t *r, const isa_fused_op_t *op, size_t n)
{
	uint32_t k = op->dst;
	if (r->cfill[k] >= n && r->cimm[k] == op->imm && r->cdt[k] == op->dtype)
		return;
	r->cfill[k] = (uint32_t)n;
	r->cimm[k] = op->imm;
	r->cdt[k] = (uint8_t)op->dtype;
	if (isa_dtype_is_float(op->dtype)) {
		double d;
		memcpy(&d, &op->imm, 8);
		float f = (float)d, *o = WF(r, op->dst);
		for (size_t i = 0; i < n; i++)
			o[i] = f;
		fz_round(op->dtype, n, o);
	} else {
		int64_t v = (int64_t)op->imm, *o = WI(r, op->dst);
		for (size_t i = 0; i < n; i++)
			o[i] = v;
		fz_wrap(op->dtype, n, o);
	}
}

static void fz_iota(fz_regs_t *r, const isa_fused_op_t *op, size_t n)
{
	int64_t v0 = r->iota0[op->src[0]] + (int64_t)op->imm, d = r->iotad[op->src[0]];
	if (isa_dtype_is_float(op->dtype)) {
		float *o = WF(r, op->dst);
		for (size_t i = 0; i < n; i++)
			o[i] = (float)(v0 + (int64_t)i * d);
		fz_round(op->dtype, n, o);
	} else {
		int64_t *o = WI(r, op->dst);
		for (size_t i = 0; i < n; i++)
			o[i] = v0 + (int64_t)i * d;
		fz_wrap(op->dtype, n, o);
	}
}

/* After op wrote its register's own lane: the lane is what the register
 * reads, in op's dtype, and no longer a CONST's cached fill (unless op is
 * that CONST). */
static void fz_written(fz_regs_t *r, const isa_fused_op_t *op)
{
	if (op->op != ISA_FUSED_CONST)
		r->cfill[op->dst] = 0;
	r->dt[op->dst] = (uint8_t)op->dtype;
	r->ptr[op->dst] = own(r, op->dst);
}

/* Runs one validated step. Operand and result registers live in the same
 * buffer; a step whose result class differs from an operand's class and
 * shares its register goes through a temporary (tmp: 2 free lanes). With
 * scan, a cheap f32 ALU step tests its results for the check as it writes
 * them (r->flag); returns whether it did. The mask and pair steps below
 * return the same for their one-pass loops. */
static bool fz_step(fz_regs_t *r, const isa_fused_op_t *op, size_t n, uint8_t *tmp, bool scan)
{
	bool scanned = false;
	uint32_t o = op->op;
	if (o == ISA_FUSED_CONVERT) {
		fz_convert(r, op, n, tmp);
	} else if (o == ISA_FUSED_CONST) {
		fz_const(r, op, n);
	} else if (o == ISA_FUSED_IOTA) {
		fz_iota(r, op, n);
	} else {
		int arity = isa_alu_arity(o);
		uint32_t s0 = op->src[0], s1 = arity > 1 ? op->src[1] : s0,
			 s2 = arity > 2 ? op->src[2] : s0;
		uint32_t sdt = r->dt[o == ISA_ALU_SELECT ? s1 : s0];
		int pred_out = o == ISA_ALU_IS_FINITE || (o >= ISA_ALU_CMP_EQ && o <= ISA_ALU_CMP_GE);
		/* a result of another class (8-byte pred lanes from f32, f32 from
		 * pred) goes through tmp only when its register is also read */
		uint8_t *d = own(r, op->dst);
		bool shared = r->ptr[s0] == d || r->ptr[s1] == d || r->ptr[s2] == d;
		if (isa_dtype_is_float(sdt) && pred_out) {
			int64_t *dst = (int64_t *)(void *)(shared ? tmp : d);
			fz_f32_to_pred(o, n, dst, RF(r, s0), RF(r, s1));
			if (shared)
				memcpy(d, dst, n * 8);
		} else if (isa_dtype_is_float(sdt) && o == ISA_ALU_SELECT) {
			float *dst = (float *)(void *)(shared ? tmp : d);
			fz_select_f32(n, dst, RI(r, s0), RF(r, s1), RF(r, s2));
			if (shared)
				memcpy(d, dst, n * 4);
		} else if (isa_dtype_is_float(sdt)) {
			if (scan && op->dtype == ISA_DT_F32 && fwsim_alu_f32_fusable(o)) {
				/* the output's last writer: scanned as it is written
				 * (fz_pair_run's flag) */
				r->flag = fwsim_alu_f32_checked(o, n, WF(r, op->dst), RF(r, s0), RF(r, s1),
								RF(r, s2), r->chk_bias) ? 0x80000000u : 0;
				scanned = true;
			} else {
				fwsim_alu_f32(o, n, WF(r, op->dst), RF(r, s0), RF(r, s1), RF(r, s2));
				fz_round(op->dtype, n, WF(r, op->dst));
			}
		} else {
			fwsim_alu_i64(o, fwsim_ity_of(sdt), n, WI(r, op->dst), RI(r, s0), RI(r, s1), RI(r, s2));
			fz_wrap(op->dtype, n, WI(r, op->dst));
		}
	}
	fz_written(r, op);
	return scanned;
}

/* Runs step s of a mask-select (fused_plan.h): a step of a tree writes its
 * mask slot, not its register (nothing else reads that value); the SELECT
 * blends by its predicate's slot. masks: the slots, FZ_BLOCK elements each. */
static bool fz_mask_step(fz_regs_t *r, const fz_prog_t *pg, uint32_t s, size_t n,
			 uint32_t *masks, uint8_t *tmp)
{
	const isa_fused_op_t *op = &pg->code[s];
	const fz_plan_t *mp = &pg->mp;
	uint32_t *arg0 = masks + (size_t)mp->arg[s][0] * FZ_BLOCK;
	if (mp->select[s] && mp->tree[s][0] >= 0) {
		/* the whole tree and the blend in one pass (its steps skipped) */
		const isa_fused_op_t *c1 = &pg->code[mp->tree[s][0]];
		const isa_fused_op_t *c2 = mp->tree[s][1] >= 0 ? &pg->code[mp->tree[s][1]] : NULL;
		uint32_t join = mp->tree[s][2] >= 0 ? pg->code[mp->tree[s][2]].op : 0;
		float *d = WF(r, op->dst);
		const float *x = RF(r, op->src[1]), *y = RF(r, op->src[2]);
		const float *a1 = RF(r, c1->src[0]), *b1 = RF(r, c1->src[1]);
		const float *a2 = c2 ? RF(r, c2->src[0]) : a1, *b2 = c2 ? RF(r, c2->src[1]) : b1;
		bool alias = d == x || d == y || d == a1 || d == b1 || d == a2 || d == b2;
		float *o = alias ? (float *)(void *)tmp : d;
		r->flag = fz_mask_select_fast(c1->op, c2 ? c2->op : 0, join, n, o, a1, b1, a2, b2, x, y,
					      r->chk_bias);
		if (o != d)
			memcpy(d, o, n * sizeof(float));
		fz_written(r, op);
		return true;
	}
	if (mp->folded[s]) {
		uint32_t *m = masks + (size_t)mp->slot[s] * FZ_BLOCK;
		if (op->op >= ISA_ALU_CMP_EQ && op->op <= ISA_ALU_CMP_GE)
			fz_mask_compare(op->op, n, m, RF(r, op->src[0]), RF(r, op->src[1]));
		else
			fz_mask_join(op->op, n, m, arg0, masks + (size_t)mp->arg[s][1] * FZ_BLOCK);
		return false;
	}
	/* the SELECT: through tmp when it overwrites an operand (the blend's
	 * vector loop needs distinct arrays) */
	const float *a = RF(r, op->src[1]), *b = RF(r, op->src[2]);
	float *d = WF(r, op->dst);
	float *o = d == a || d == b ? (float *)(void *)tmp : d;
	fz_mask_blend(n, o, arg0, a, b);
	if (o != d)
		memcpy(d, o, n * sizeof(float));
	fz_written(r, op);
	return false;
}

/* Runs step s, the second of an op pair (fused_plan.h), with its first: that
 * step's operand registers still hold its operands (fz_plan). */
static bool fz_pair_step(fz_regs_t *r, const fz_prog_t *pg, uint32_t s, size_t n, uint8_t *tmp)
{
	const isa_fused_op_t *u = &pg->code[s], *t = &pg->code[pg->mp.pair_first[s]];
	int side = pg->mp.pair_side[s];
	const float *a = RF(r, t->src[0]), *b = RF(r, t->src[1]), *c = RF(r, u->src[1 - side]);
	float *d = WF(r, u->dst);
	float *o = d == a || d == b || d == c ? (float *)(void *)tmp : d;
	r->flag = fz_pair_run(t->op, u->op, side, n, o, a, b, c, r->chk_bias);
	if (o != d)
		memcpy(d, o, n * sizeof(float));
	fz_written(r, u);
	return true;
}

/* Fills o with rows of rlen copies of an f32 each, the rows' values rs bytes
 * apart from p: a per-channel operand over planes of 4x4 or 7x7. In whole
 * blocks of 16 (a vector store), past a row's end into the next row's (then
 * written) or the lane's slack (a lane's FZ_BLOCK * 8 bytes hold 2 * FZ_BLOCK
 * f32, a block at most FZ_TREE_BLOCK = 2 * FZ_BLOCK - 16). A fill call per
 * row was a quarter of a batch norm's time over 4x4 planes, and the fill
 * alone in SSE stores as much again. */
FWSIM_TARGET_CLONES
static void fz_fill_rows_f32(float *o, const uint8_t *p, int64_t rs, size_t rows, size_t rlen)
{
	for (size_t row = 0; row < rows; row++, o += rlen) {
		float v;
		memcpy(&v, p + (int64_t)row * rs, 4);
		for (size_t x = 0; x < rlen; x += 16)
			for (size_t y = 0; y < 16; y++)
				o[x + y] = v;
	}
}

/* The float of dtype dt at p as f32. An f32 is read in place: this runs for
 * every block, and the conversion's call cost 10% of a batch norm's dx. */
static inline float fz_value_f32(uint32_t dt, const uint8_t *p)
{
	float v;
	if (dt == ISA_DT_F32)
		memcpy(&v, p, 4);
	else
		fwsim_load_f32(dt, p, 0, 1, &v);
	return v;
}

/* Loads input i's block of m elements at p (byte stride bs) into register i, or
 * points the register at it when it is contiguous f32. */
static void fz_load_input(fz_regs_t *r, uint32_t i, uint32_t dt, const uint8_t *p, int64_t bs,
			  size_t m)
{
	r->dt[i] = (uint8_t)dt;
	r->ptr[i] = own(r, i);
	if (bs == 0 && m > 0 && r->rs && r->rs[1 + i]) {
		/* one value per row of the segment, each rlen times (the lane's
		 * single-value fill no longer holds) */
		uint8_t *lane = r->splat + (size_t)i * FZ_BLOCK * 8;
		r->ptr[i] = lane;
		r->sfill[i] = 0;
		if (dt == ISA_DT_F32) {
			fz_fill_rows_f32((float *)(void *)lane, p, r->rs[1 + i], m / r->rlen, r->rlen);
			return;
		}
		for (size_t e = 0, row = 0; e < m; e += r->rlen, row++) {
			const uint8_t *q = p + (int64_t)row * r->rs[1 + i];
			if (isa_dtype_is_float(dt))
				fwsim_load_f32(dt, q, 0, r->rlen, (float *)(void *)lane + e);
			else
				fwsim_load_i64(dt, q, 0, r->rlen, (int64_t *)(void *)lane + e);
		}
		return;
	}
	if (bs == 0 && m > 0) {
		/* one value for the whole block (a [C] operand broadcast along the
		 * loop, a scalar): read from a lane of its own, kept from block to
		 * block while the value is the same (steps never write it: the
		 * register's own lane is free for them). Filling it per block was
		 * 40% of a batch norm's normalisation */
		uint8_t *lane = r->splat + (size_t)i * FZ_BLOCK * 8;
		uint64_t key = 0;
		if (isa_dtype_is_float(dt)) {
			float v = fz_value_f32(dt, p);
			memcpy(&key, &v, sizeof(v));
		} else {
			int64_t v;
			fwsim_load_i64(dt, p, 0, 1, &v);
			key = (uint64_t)v;
		}
		r->ptr[i] = lane;
		if (r->sfill[i] >= m && r->sdt[i] == dt && r->skey[i] == key)
			return;
		if (isa_dtype_is_float(dt))
			fwsim_load_f32(dt, p, 0, m, (float *)(void *)lane);
		else
			fwsim_load_i64(dt, p, 0, m, (int64_t *)(void *)lane);
		r->sfill[i] = (uint32_t)m;
		r->sdt[i] = (uint8_t)dt;
		r->skey[i] = key;
		return;
	}
	r->cfill[i] = 0;
	if (dt == ISA_DT_F32 && bs == 4 && ((uintptr_t)p & 3u) == 0)
		r->ptr[i] = (uint8_t *)(uintptr_t)p; /* read in place */
	else if (isa_dtype_is_float(dt))
		fwsim_load_f32(dt, p, bs, m, WF(r, i));
	else
		fwsim_load_i64(dt, p, bs, m, WI(r, i));
}

/* The block's output has the first bad value of the instruction at element e0:
 * run the program again over the block (inputs reloaded from p[]) and find the
 * first step whose float result at e0 is bad for the check (NaN, Inf as the job
 * asks); when none is (the store's narrowing made the Inf), the last step writing
 * the output register. Returns the step's debug id (param - 1 + step). */
static uint32_t fz_blame(const isa_insn_t *in, const fz_prog_t *pg, fz_regs_t *r,
			 const fwsim_numchk_t *c, const isa_ap_t *const *aps, uint8_t *const *p,
			 const int64_t *bs, size_t m, size_t e0, uint8_t *tmp)
{
	for (uint32_t i = 0; i < pg->h.n_inputs; i++)
		fz_load_input(r, i, aps[1 + i]->dtype, p[i], bs[i], m);
	int64_t blame = -1, last_out = -1;
	for (uint32_t s = 0; s < pg->h.n_code; s++) {
		const isa_fused_op_t *op = &pg->code[s];
		if (!pg->live[s])
			continue;
		fz_step(r, op, m, tmp, false);
		if (op->dst == pg->h.out_reg)
			last_out = s;
		if (blame < 0 && isa_dtype_is_float(op->dtype)) {
			float v = RF(r, op->dst)[e0];
			if ((c->want_nan && isnan(v)) || (c->want_inf && isinf(v)))
				blame = s;
		}
	}
	if (blame < 0)
		blame = last_out;
	if (blame < 0)
		return ISA_DEBUG_NONE;
	return in->param - 1u + (uint32_t)blame;
}

/* One run of the program over an iteration space: the shape of aps[0], which
 * is ap0 (elementwise) or the accumulators (reducing form), then the inputs,
 * then one index operand per iota dim (u8 "bytes" = indices, never read). */
typedef struct fz_part {
	uint32_t nops;
	const isa_ap_t *aps[FZ_MAX_OPS];
	uint8_t *base[FZ_MAX_OPS];       /* NULL for index operands */
	int iota_op[ISA_MAX_RANK];       /* index operand of dim d, or -1 */
	int64_t iota_start[ISA_MAX_RANK];/* index of the part's first element along d */
	int reduce;                      /* aps[0] are fwsim_acc_t accumulators */
	/* reducing form: the debug id of the step that first made a value the
	 * check looks for among the combined ones (ISA_DEBUG_NONE until one did);
	 * blamed when an output turns out bad, since the bad value was combined,
	 * never stored */
	uint32_t *cand_debug;
} fz_part_t;

/* The first of v[0..m) the check looks for (NaN, Inf as the job asks), or m. */
static size_t fz_first_bad(const fwsim_numchk_t *c, const float *v, size_t m)
{
	/* every block of a reducing FUSED is scanned: the scalar search only
	 * when the vectorised pre-check finds something (it was 20% of a batch
	 * norm's time) */
	if (!fwsim_numchk_maybe_nonfinite(c, v, m))
		return m;
	for (size_t e = 0; e < m; e++)
		if ((c->want_nan && isnan(v[e])) || (c->want_inf && isinf(v[e])))
			return e;
	return m;
}

/* The accumulator of the row of a segment of rows (r->rs) holding element e. */
static fwsim_acc_t *fz_row_acc(const fz_regs_t *r, fwsim_acc_t *a0, size_t e)
{
	return (fwsim_acc_t *)(void *)((uint8_t *)a0 + (int64_t)(e / r->rlen) * r->rs[0]);
}

/* Whether m f32 outputs at po overlap none of the bytes the block's nin
 * inputs (at pin[i], byte strides bs[1 + i], rows as r->rs says) read. */
static bool fz_apart(const fz_regs_t *r, const fz_part_t *pt, uint32_t nin, uint8_t *const *pin,
		     const int64_t *bs, size_t m, const uint8_t *po)
{
	uintptr_t o0 = (uintptr_t)po, o1 = o0 + m * 4;
	for (uint32_t i = 0; i < nin; i++) {
		int64_t span = (int64_t)(m - 1) * bs[1 + i];
		if (bs[1 + i] == 0 && r->rs)
			span = (int64_t)(m / r->rlen - 1) * r->rs[1 + i];
		uintptr_t a = (uintptr_t)pin[i] + (uintptr_t)(span < 0 ? span : 0);
		uintptr_t b = (uintptr_t)pin[i] + (uintptr_t)(span > 0 ? span : 0) +
			      isa_dtype_size(pt->aps[1 + i]->dtype);
		if (a < o1 && o0 < b)
			return false;
	}
	return true;
}

/* Whether a segment of m > FZ_BLOCK elements of one row (inputs at pin) can
 * run without registers: a one-pass tree (not reducing) whose inputs are read
 * in place (f32, unit stride) or hold one value for the row, writing an f32
 * output with unit stride, given that the output overlaps none of them
 * (fz_apart, fz_segment's direct store). A blame runs the FZ_BLOCK around its
 * element (fz_segment). */
static bool fz_long_ok(const fz_prog_t *pg, const fz_part_t *pt, const int64_t *bs,
		       uint8_t *const *pin)
{
	if (!pg->tree.n || pt->reduce || pt->aps[0]->dtype != ISA_DT_F32 || bs[0] != 4)
		return false;
	for (uint32_t i = 0; i < pg->h.n_inputs; i++)
		if (bs[1 + i] != 0 && (pt->aps[1 + i]->dtype != ISA_DT_F32 || bs[1 + i] != 4 ||
				       ((uintptr_t)pin[i] & 3u)))
			return false; /* loaded into a register (one value: the tree's scalar) */
	return true;
}

/* One segment of a row: m elements, each operand's first at byte offset off[]
 * and the next bs[] bytes on; flat: the row-major index of the first. The
 * first bad value found is blamed when it precedes every one found before it
 * (segments come in flat order). */
static fwsim_status_t fz_segment(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
				 uint8_t *tmp, const fz_part_t *pt, const int64_t *bs,
				 const int64_t *off, size_t m, uint64_t flat)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *const *aps = pt->aps;
	uint32_t nin = pg->h.n_inputs, odt = in->ap[0].dtype;
	int out_f = isa_dtype_is_float(odt);
	uint8_t *pin[ISA_FUSED_MAX_INPUTS];
	for (uint32_t i = 0; i < nin; i++)
		pin[i] = pt->base[1 + i] + off[1 + i];
	uint8_t *po = pt->base[0] + off[0];
	/* a tree's reducing segments of two blocks use registers as its
	 * segments of rows do (FZ_TREE_BLOCK); other long segments of a row run
	 * with no register or not at all (then stored directly, apart) */
	bool two = pg->tree.n && pt->reduce && !pg->tree.has_pred && m <= 2 * FZ_BLOCK;
	bool long_direct = m > FZ_BLOCK && !r->rs && !two;
	if (long_direct && !(fz_long_ok(pg, pt, bs, pin) && fz_apart(r, pt, nin, pin, bs, m, po))) {
		/* a long segment that needs registers: in blocks that fit them */
		int64_t o2[FZ_MAX_OPS];
		for (size_t j = 0; j < m; j += FZ_BLOCK) {
			for (uint32_t i = 0; i < pt->nops; i++)
				o2[i] = off[i] + (int64_t)j * bs[i];
			size_t mj = m - j < FZ_BLOCK ? m - j : FZ_BLOCK;
			fwsim_status_t st = fz_segment(k, pg, r, tmp, pt, bs, o2, mj, flat + j);
			if (st != FWSIM_OK)
				return st;
		}
		return FWSIM_OK;
	}
	if (fwsim_tick(k, (uint64_t)m * (pg->h.n_code + 1u)))
		return FWSIM_TIMEOUT;
	const float *cin[ISA_FUSED_MAX_INPUTS];
	float csc[ISA_FUSED_MAX_INPUTS];
	bool tree = pg->tree.n > 0;
	/* inputs with one value per row of a segment of rows, read in place
	 * (fused_tree.h): f32 values one after the other, rows long enough */
	fz_rowin_t rows;
	bool by_row = false, row_ok = tree && r->rs && r->rowof_rlen == r->rlen;
	if (row_ok) {
		rows.rowof = r->rowof;
		rows.nrows = (uint32_t)(m / r->rlen);
		memset(rows.v, 0, sizeof(rows.v));
	}
	for (uint32_t i = 0; i < nin; i++) {
		uint32_t dt = aps[1 + i]->dtype;
		if (tree && bs[1 + i] == 0 && m > 0 && (!r->rs || r->rs[1 + i] == 0)) {
			/* one value for the block: a scalar of the tree, no lane */
			csc[i] = fz_value_f32(dt, pin[i]);
			cin[i] = NULL;
			continue;
		}
		if (row_ok && bs[1 + i] == 0 && m > 0 && r->rs[1 + i] == 4 && dt == ISA_DT_F32 &&
		    ((uintptr_t)pin[i] & 3u) == 0) {
			rows.v[i] = (const float *)(const void *)pin[i];
			csc[i] = 0.0f;
			cin[i] = NULL;
			by_row = true;
			continue;
		}
		fz_load_input(r, i, dt, pin[i], bs[1 + i], m);
		cin[i] = RF(r, i);
	}
	for (uint32_t d = 0; d < ISA_MAX_RANK; d++) {
		int v = pt->iota_op[d];
		if (v < 0)
			continue;
		r->iotad[d] = bs[v];
		r->iota0[d] = pt->iota_start[d] + off[v];
	}
	/* a contiguous f32 output block that overlaps none of the block's
	 * inputs (a NaN's blame runs the block again from them) is the output
	 * register's lane for the step that writes the output: it writes the
	 * block in place, where the copy after was a quarter of a batch norm's
	 * dx, a write stream of its own (the steps before keep the register's
	 * lane, in L1) */
	bool direct = (tree || pg->out_in_place) && !pt->reduce && odt == ISA_DT_F32 && bs[0] == 4 &&
		      (long_direct || fz_apart(r, pt, nin, pin, bs, m, po));
	r->flag_step = UINT32_MAX;
	if (tree) {
		uint32_t q = pg->h.out_reg;
		float *dst = direct ? (float *)(void *)po : WF(r, q);
		if (by_row)
			atomic_fetch_add_explicit(&g_row_segments, 1, memory_order_relaxed);
		r->flag = fz_tree_run(&pg->tree, m, dst, cin, csc, by_row ? &rows : NULL, r->chk_bias);
		r->flag_step = pg->out_step;
		r->ptr[q] = (uint8_t *)dst;
		r->dt[q] = ISA_DT_F32;
		r->cfill[q] = 0;
	}
	for (uint32_t s = 0; s < pg->h.n_code && !tree; s++) {
		if (!pg->live[s] || pg->mp.paired[s] || pg->mp.fast_skip[s])
			continue;
		if (direct && s == pg->out_step) {
			r->dreg = pg->h.out_reg;
			r->dptr = po;
		}
		bool scanned;
		if (pg->mp.folded[s] || pg->mp.select[s])
			scanned = fz_mask_step(r, pg, s, m, r->masks, tmp);
		else if (pg->mp.pair_first[s] >= 0)
			scanned = fz_pair_step(r, pg, s, m, tmp);
		else
			scanned = fz_step(r, &pg->code[s], m, tmp, s == pg->out_step && r->chk_bias);
		if (scanned)
			r->flag_step = s;
	}
	/* the output's last writer scanned it as it wrote it: no NaN/Inf there
	 * (the flag is conservative), no scan of its own (27% of a ReLU
	 * backward's time, 13% of a batch norm's sum of (x - c)^2) */
	bool clean = r->flag_step == pg->out_step && !(r->flag >> 31);
	if (pt->reduce) {
		/* combine into the accumulators: one per output, stride 0 along a
		 * reduced inner dim */
		fwsim_acc_t *a0 = (fwsim_acc_t *)(void *)(pt->base[0] + off[0]);
		int64_t step = bs[0] / (int64_t)sizeof(fwsim_acc_t);
		uint32_t rop = pg->h.reduce - 1u;
		if (out_f) {
			const float *v = RF(r, pg->h.out_reg);
			if (k->chk && in->param && !clean && pt->cand_debug &&
			    *pt->cand_debug == ISA_DEBUG_NONE) {
				size_t e0 = fz_first_bad(k->chk, v, m);
				if (e0 < m) {
					*pt->cand_debug = fz_blame(in, pg, r, k->chk, aps, pin, bs + 1, m,
								   e0, tmp);
					v = RF(r, pg->h.out_reg);
				}
			}
			if (step == 0 && r->rs)
				/* a segment of rows, each into its row's accumulator
				 * (rs[0] bytes apart), with the bits of a fold per row */
				fwsim_red_fold_rows_f64(rop, a0, r->rs[0] / (int64_t)sizeof(fwsim_acc_t), v,
							r->rlen, m / r->rlen);
			else if (step == 0)
				/* blocks of FZ_BLOCK, as the step-by-step program
				 * folds them (a tree's segments hold two) */
				fwsim_red_fold_blocks_f64(rop, a0, v, m, FZ_BLOCK);
			else
				fwsim_red_fold_f64(rop, a0, step, v, m);
		} else {
			const int64_t *v = RI(r, pg->h.out_reg);
			int uns = isa_dtype_is_unsigned(odt);
			if (step == 0 && r->rs)
				for (size_t e = 0; e < m; e += r->rlen) {
					fwsim_acc_t *ar = fz_row_acc(r, a0, e);
					ar->i = fwsim_red_fold_i64(rop, uns, ar->i, v + e, r->rlen);
				}
			else if (step == 0)
				a0->i = fwsim_red_fold_i64(rop, uns, a0->i, v, m);
			else
				for (size_t e = 0; e < m; e++)
					a0[(int64_t)e * step].i = fwsim_red_comb_i64(rop, uns,
										     a0[(int64_t)e * step].i, v[e]);
		}
		return FWSIM_OK;
	}
	if (!out_f) {
		fwsim_store_i64(odt, po, bs[0], m, RI(r, pg->h.out_reg), isa_dtype_is_unsigned(odt));
		return FWSIM_OK;
	}
	const float *v = RF(r, pg->h.out_reg);
	if (k->chk && !clean) {
		/* the scan sees the segment alone; its first bad value, when it
		 * precedes every one found so far, is blamed on the step that made
		 * it, before the store (which may overwrite an input) */
		fwsim_numchk_t part = *k->chk;
		part.count = 0;
		part.first = UINT64_MAX;
		fwsim_numchk_block(&part, v, m, flat);
		if (part.count) {
			if (in->param && part.first < k->chk->first) {
				/* run again: a long segment's block of FZ_BLOCK (the
				 * registers' size) that holds the element */
				size_t e0 = (size_t)(part.first - flat);
				size_t b0 = r->rs || m <= FZ_BLOCK ? 0 : e0 / FZ_BLOCK * FZ_BLOCK;
				uint8_t *pb[ISA_FUSED_MAX_INPUTS];
				for (uint32_t i = 0; i < nin; i++)
					pb[i] = pin[i] + (int64_t)b0 * bs[1 + i];
				size_t mb = r->rs || m - b0 <= FZ_BLOCK ? m - b0 : FZ_BLOCK;
				part.blame_debug = fz_blame(in, pg, r, k->chk, aps, pb, bs + 1, mb,
							    e0 - b0, tmp);
				v = RF(r, pg->h.out_reg);
			}
			fwsim_numchk_merge(k->chk, &part);
		}
	}
	if (!direct) {
		fwsim_store_f32(odt, po, bs[0], m, v);
		return FWSIM_OK;
	}
	r->dreg = ISA_FUSED_MAX_REGS;
	r->ptr[pg->h.out_reg] = own(r, pg->h.out_reg);
	return FWSIM_OK;
}

/* Whether the rows of it run several per segment: rows under half a block,
 * the elementwise form without IOTA, every operand contiguous from one row to
 * the next (row stride = row length x element stride) except inputs with
 * element stride 0, which hold a value per row (their row strides in rs),
 * at least one of which changes from row to row (else the iterator would
 * have merged the rows). A softmax's exp(x - max) over rows of 128 ran one
 * segment per row, its fixed costs 4096 times. */
static bool fz_rowset(const fz_part_t *pt, const fwsim_iter_t *it, int64_t *rs)
{
	uint32_t r = it->rank;
	if (r < 2 || it->inner * 2 > FZ_BLOCK)
		return false;
	for (uint32_t d = 0; d < ISA_MAX_RANK; d++)
		if (pt->iota_op[d] >= 0)
			return false;
	bool per_row = false;
	for (uint32_t i = 0; i < pt->nops; i++) {
		int64_t b = it->inner_bs[i], s = it->bstride[i][r - 2];
		rs[i] = s;
		/* inputs with one value per row; in the reducing form, an
		 * accumulator per row (a batch norm's variance over 4x4 images:
		 * rows of 16 into one accumulator per channel) */
		if (b == 0 && (i > 0 || pt->reduce))
			per_row |= s != 0;
		else if (s != (int64_t)it->inner * b)
			return false;
	}
	return per_row;
}

/* The rows of it, the first at flat element index *flat. */
static fwsim_status_t fz_rows(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
			      uint8_t *tmp, const fz_part_t *pt, fwsim_iter_t *it, uint64_t *flat)
{
	int64_t off[FZ_MAX_OPS], rs[FZ_MAX_OPS];
	if (fz_rowset(pt, it, rs)) {
		/* rows shorter than half a block, several per segment */
		/* a blame runs the block step by step: pred steps' 8-byte lanes
		 * hold FZ_BLOCK */
		uint64_t blk = pg->tree.n && !pg->tree.has_pred ? FZ_TREE_BLOCK : FZ_BLOCK;
		uint32_t rd = it->rank - 2;
		r->rs = rs;
		r->rlen = (size_t)it->inner;
		if (pg->tree.n && r->rowof_rlen != r->rlen && r->rlen >= FZ_ROW_MIN) {
			for (size_t j = 0; j < FZ_TREE_BLOCK + FZ_ROW_SLACK; j++)
				r->rowof[j] = (int32_t)(j / r->rlen);
			r->rowof_rlen = r->rlen;
		}
		for (;;) {
			uint64_t n = blk / it->inner, left = it->shape[rd] - it->idx[rd];
			n = n < left ? n : left;
			size_t m = (size_t)(n * it->inner);
			fwsim_status_t st = fz_segment(k, pg, r, tmp, pt, it->inner_bs, it->off, m, *flat);
			*flat += m;
			bool more = st == FWSIM_OK && fwsim_iter_advance(it, n);
			if (!more) {
				r->rs = NULL;
				return st;
			}
		}
	}
	/* a one-pass tree streams rows of up to FZ_TREE_LONG at a time (the
	 * segments' fixed costs were a fifth of a batch norm's normalisation in
	 * blocks of FZ_BLOCK); fz_segment cuts them when they need registers */
	uint64_t blk = !pg->tree.n ? FZ_BLOCK
		       : !pt->reduce ? FZ_TREE_LONG
		       : pg->tree.has_pred ? FZ_BLOCK : 2 * FZ_BLOCK;
	do {
		for (uint64_t j = 0; j < it->inner; j += blk) {
			size_t m = it->inner - j < blk ? (size_t)(it->inner - j) : (size_t)blk;
			for (uint32_t i = 0; i < pt->nops; i++)
				off[i] = it->off[i] + (int64_t)j * it->inner_bs[i];
			fwsim_status_t st = fz_segment(k, pg, r, tmp, pt, it->inner_bs, off, m, *flat);
			if (st != FWSIM_OK)
				return st;
			*flat += m;
		}
	} while (fwsim_iter_next(it));
	return FWSIM_OK;
}

/*
 * A transposed input: strided along the iteration's inner dim and contiguous
 * along an outer dim t, as an SGD update reads a conv weight's gradient in
 * XLA's {0,1,3,2} layout. Walking the rows reads one cache line of it per
 * element (15.6 ms for 2.4M elements, 6.6 ns each). Instead the iteration
 * runs in bands of consecutive values of t (every dim after t whole, so a
 * band is a run of flat indices and bands come in flat order): the band of
 * the input is first transposed into a staging buffer laid out as the band's
 * rows (8x8 register transposes, fwsim_copy_tile), then the band's rows run
 * with long contiguous blocks. A band holds FZ_STAGE_ELEMS elements; a t
 * whose later dims hold more than an eighth of that (bands of fewer than 8
 * values) keeps the row path, as do inputs small enough to stay in cache.
 */
#define FZ_STAGE_ELEMS (1u << 17)
#define FZ_STAGE_MIN (1u << 15)

/* The dim t to run in bands and the input it transposes (*op), or -1 for
 * the row path. */
static int fz_stage_dim(const fwsim_iter_t *it, const fz_part_t *pt, uint32_t *op)
{
	if (pt->reduce || it->rank < 2 || it->inner < 4 || it->rows * it->inner < FZ_STAGE_MIN)
		return -1;
	int64_t es0 = (int64_t)isa_dtype_size(pt->aps[0]->dtype);
	if (it->inner_bs[0] != es0)
		return -1;
	for (uint32_t i = 1; i < pt->nops; i++) {
		int64_t es = (int64_t)isa_dtype_size(pt->aps[i]->dtype), bs = it->inner_bs[i];
		if (!pt->base[i] || bs == 0 || bs == es)
			continue;
		uint64_t rest = it->inner;
		for (int t = (int)it->rank - 2; t >= 0; t--) {
			if (it->bstride[i][t] == es && it->bstride[0][t] != es0 && it->shape[t] >= 8 &&
			    rest <= FZ_STAGE_ELEMS / 8) {
				*op = i;
				return t;
			}
			rest *= it->shape[t];
		}
	}
	return -1;
}

static fwsim_status_t fz_loop_staged(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
				     uint8_t *tmp, const fz_part_t *pt, const fwsim_iter_t *it,
				     uint32_t t, uint32_t a, uint64_t flat)
{
	uint32_t rk = it->rank, n = pt->nops, br = rk - t;
	size_t es = isa_dtype_size(pt->aps[a]->dtype);
	uint64_t fst[ISA_MAX_RANK]; /* element strides of the row-major flat index */
	fwsim_iter_flat_strides(it, fst);
	uint64_t nt = it->shape[t], ni = it->inner, rest = fst[t], mid = rest / ni;
	uint64_t band = FZ_STAGE_ELEMS / rest < nt ? FZ_STAGE_ELEMS / rest : nt;
	uint8_t *stage = malloc((size_t)(band * rest) * es);
	if (!stage)
		return FWSIM_NOMEM;
	/* the band's dims t .. rk-1, byte strides (esize 1 below); the staged
	 * input row-major over them */
	uint64_t bshape[ISA_MAX_RANK];
	int64_t bst[FZ_MAX_OPS][ISA_MAX_RANK];
	const int64_t *bstp[FZ_MAX_OPS];
	size_t ones[FZ_MAX_OPS];
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t q = 0; q < br; q++)
			bst[i][q] = it->bstride[i][t + q];
		bstp[i] = bst[i];
		ones[i] = 1;
	}
	for (uint32_t q = 0; q < br; q++) {
		bshape[q] = it->shape[t + q];
		bst[a][q] = (int64_t)(fst[t + q] * es);
	}
	fz_part_t bp = *pt;
	uint64_t idx[ISA_MAX_RANK] = { 0 };
	fwsim_status_t st = FWSIM_OK;
	for (;;) {
		int64_t row[FZ_MAX_OPS];
		uint64_t f0 = flat;
		for (uint32_t i = 0; i < n; i++) {
			row[i] = it->off[i];
			for (uint32_t q = 0; q < t; q++)
				row[i] += (int64_t)idx[q] * it->bstride[i][q];
		}
		for (uint32_t q = 0; q < t; q++)
			f0 += idx[q] * fst[q];
		for (uint64_t t0 = 0; t0 < nt && st == FWSIM_OK; t0 += band) {
			uint64_t nb = nt - t0 < band ? nt - t0 : band;
			if (fwsim_tick(k, nb * rest)) {
				st = FWSIM_TIMEOUT;
				break;
			}
			/* the input's band, one (t x inner) tile per index of the
			 * dims between them */
			const uint8_t *src = pt->base[a] + row[a] + (int64_t)t0 * it->bstride[a][t];
			for (uint64_t c = 0; c < mid; c++) {
				uint64_t rem = c;
				int64_t so = 0, dof = 0;
				for (uint32_t q = rk - 2; q > t; q--) {
					uint64_t iq = rem % it->shape[q];
					rem /= it->shape[q];
					so += (int64_t)iq * it->bstride[a][q];
					dof += (int64_t)(iq * fst[q] * es);
				}
				fwsim_copy_tile(es, stage + dof, (int64_t)(rest * es), (int64_t)es, src + so,
						it->bstride[a][t], it->inner_bs[a], nb, ni);
			}
			for (uint32_t i = 0; i < n; i++) {
				int64_t o = row[i] + (int64_t)t0 * it->bstride[i][t];
				if (i == a)
					bp.base[i] = stage;
				else if (pt->base[i])
					bp.base[i] = pt->base[i] + o;
			}
			for (uint32_t d = 0; d < ISA_MAX_RANK; d++)
				if (pt->iota_op[d] >= 0)
					bp.iota_start[d] = pt->iota_start[d] +
							   row[pt->iota_op[d]] +
							   (int64_t)t0 * it->bstride[pt->iota_op[d]][t];
			bshape[0] = nb;
			fwsim_iter_t bi;
			fwsim_iter_init(&bi, br, bshape, n, bstp, ones);
			uint64_t f = f0 + t0 * fst[t];
			st = fz_rows(k, pg, r, tmp, &bp, &bi, &f);
		}
		if (st != FWSIM_OK || !fwsim_index_next(idx, it->shape, (int)t, -1))
			break;
	}
	free(stage);
	return st;
}

static fwsim_status_t fz_loop(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
			      uint8_t *tmp, const fz_part_t *pt, uint64_t *flat)
{
	fwsim_iter_t it;
	fwsim_iter_init_aps(&it, pt->aps[0], pt->nops, pt->aps);
	if (it.empty)
		return FWSIM_OK;
	uint32_t a = 0;
	int t = fz_stage_dim(&it, pt, &a);
	if (t >= 0)
		return fz_loop_staged(k, pg, r, tmp, pt, &it, (uint32_t)t, a, *flat);
	return fz_rows(k, pg, r, tmp, pt, &it, flat);
}

/* The reducing form over one part: the part's outputs (at most
 * FWSIM_REDUCE_MAX_ACC) start from ap0 (ACCUMULATE) or the combiner's
 * identity, every element of the program's result
 * is combined into its output's accumulator, and the results are stored
 * with conversion (and scanned for NaN/Inf, flat: the part's first output in
 * row-major order of all outputs). */
static fwsim_status_t fz_reduce_part(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
				     uint8_t *tmp, fz_part_t *pt, fwsim_acc_t *acc, uint64_t *flat)
{
	const isa_ap_t *o = pt->aps[0];
	uint32_t mask = pg->h.reduce_axes, rop = pg->h.reduce - 1u;
	uint64_t oshape[ISA_MAX_RANK], nout = 1;
	int64_t cst[ISA_MAX_RANK];
	for (uint32_t d = 0; d < o->rank; d++) {
		oshape[d] = (mask >> d & 1) ? 1 : o->shape[d];
		nout *= oshape[d];
	}
	if (nout == 0)
		return FWSIM_OK;
	if (fwsim_tick(k, 2 * nout))
		return FWSIM_TIMEOUT;
	/* 1. the initial values: ap0, or the identity */
	fwsim_red_acc_start(rop, k->insn->flags & ISA_F_ACCUMULATE, o, oshape, pt->base[0], acc,
			    nout);
	/* 2. every element into its accumulator (stride 0 along reduced dims) */
	fwsim_red_acc_strides(o->rank, oshape, cst);
	isa_ap_t accap = *o;
	accap.region = 0;
	accap.offset = 0;
	accap.dtype = ISA_DT_U64;
	for (uint32_t d = 0; d < o->rank; d++)
		accap.stride[d] = (mask >> d & 1) ? 0 : cst[d];
	const isa_ap_t *save_ap = pt->aps[0];
	uint8_t *save_base = pt->base[0];
	pt->aps[0] = &accap;
	pt->base[0] = (uint8_t *)acc;
	pt->reduce = 1;
	uint32_t cand = ISA_DEBUG_NONE;
	pt->cand_debug = &cand;
	uint64_t unused = 0;
	fwsim_status_t st = fz_loop(k, pg, r, tmp, pt, &unused);
	pt->aps[0] = save_ap;
	pt->base[0] = save_base;
	if (st != FWSIM_OK)
		return st;
	/* 3. store with conversion, scanning float results as they are written;
	 * the first bad output blames the step that made the first bad value
	 * combined */
	fwsim_red_acc_store(k->chk, o, oshape, pt->base[0], acc, flat, cand);
	return FWSIM_OK;
}

/* pt: whole with every operand cut to [first[q], first[q] + len[q]) along
 * the dims q in the bit mask cut (the others whole), in paps (output and
 * inputs) and iaps (the index operands, which follow the part's shape). */
static void fz_part_cut(const fz_part_t *whole, uint32_t nin, uint32_t cut, const uint64_t *first,
			const uint64_t *len, isa_ap_t *paps, isa_ap_t *iaps, fz_part_t *pt)
{
	uint32_t rank = whole->aps[0]->rank;
	*pt = *whole;
	for (uint32_t i = 0; i <= nin; i++) {
		paps[i] = *whole->aps[i];
		pt->aps[i] = &paps[i];
	}
	for (uint32_t q = 0; q < rank; q++) {
		if (!(cut >> q & 1))
			continue;
		for (uint32_t i = 0; i <= nin; i++) {
			paps[i].shape[q] = len[q];
			pt->base[i] += (int64_t)first[q] * paps[i].stride[q] *
				       (int64_t)isa_dtype_size(paps[i].dtype);
		}
		pt->iota_start[q] = (int64_t)first[q];
	}
	for (uint32_t d = 0; d < ISA_MAX_RANK; d++) {
		int v = whole->iota_op[d];
		if (v < 0)
			continue;
		iaps[d] = *whole->aps[v];
		for (uint32_t q = 0; q < rank; q++)
			iaps[d].shape[q] = paps[0].shape[q];
		pt->aps[v] = &iaps[d];
	}
}

/* The reducing form: outputs in the parts of fwsim_red_parts_t, each with
 * every operand cut alike (reduced dims whole). */
static fwsim_status_t fz_run_reduce(const fwsim_kargs_t *k, const fz_prog_t *pg, fz_regs_t *r,
				    uint8_t *tmp, const fz_part_t *whole)
{
	const isa_ap_t *o = whole->aps[0];
	uint32_t rank = o->rank, mask = pg->h.reduce_axes;
	if (isa_ap_num_elements(o) == 0)
		return FWSIM_OK; /* no outputs, or nothing to combine into them */
	fwsim_red_parts_t parts;
	fwsim_red_parts_init(&parts, rank, o->shape, mask);
	uint64_t cap = parts.nout < FWSIM_REDUCE_MAX_ACC ? parts.nout : FWSIM_REDUCE_MAX_ACC;
	fwsim_acc_t *acc = malloc(cap * sizeof(*acc));
	if (!acc)
		return FWSIM_NOMEM;
	uint32_t nin = pg->h.n_inputs;
	uint64_t first[ISA_MAX_RANK], len[ISA_MAX_RANK], flat = 0;
	fwsim_status_t st = FWSIM_OK;
	while (st == FWSIM_OK && fwsim_red_parts_next(&parts, first, len)) {
		fz_part_t pt;
		isa_ap_t paps[1 + ISA_FUSED_MAX_INPUTS], iaps[ISA_MAX_RANK];
		fz_part_cut(whole, nin, ~mask, first, len, paps, iaps, &pt);
		st = fz_reduce_part(k, pg, r, tmp, &pt, acc, &flat);
	}
	free(acc);
	return st;
}

/* Bytes of one thread's registers for pg: a lane per register, + 1 lane of
 * scratch for steps that change register class, + 1 per input for stride-0
 * inputs, + the mask-selects' slots. */
static size_t fz_regs_bytes(const fz_prog_t *pg)
{
	return ((size_t)pg->h.n_regs + 1 + pg->h.n_inputs) * FZ_BLOCK * 8 +
	       (size_t)pg->mp.n_slots * FZ_BLOCK * 4;
}

/* Sets r up as one thread's registers for pg in buf (fz_regs_bytes(pg),
 * 64-byte aligned); *tmp is its scratch lane. */
static void fz_regs_init(fz_regs_t *r, const fz_prog_t *pg, const fwsim_numchk_t *chk,
			 uint8_t *buf, uint8_t **tmp)
{
	memset(r->iota0, 0, sizeof(r->iota0));
	memset(r->iotad, 0, sizeof(r->iotad));
	memset(r->cfill, 0, sizeof(r->cfill));
	memset(r->sfill, 0, sizeof(r->sfill));
	r->buf = buf;
	*tmp = r->buf + (size_t)pg->h.n_regs * FZ_BLOCK * 8;
	r->splat = *tmp + FZ_BLOCK * 8;
	r->masks = (uint32_t *)(void *)(r->splat + (size_t)pg->h.n_inputs * FZ_BLOCK * 8);
	r->dreg = ISA_FUSED_MAX_REGS;
	r->rs = NULL;
	r->rowof_rlen = 0;
	r->chk_bias = chk ? fwsim_numchk_bias(chk) : 0;
	r->flag_step = UINT32_MAX;
}

/* A program cut into items for the pool (pool.h), as the ALU's are: ranges
 * of the output's outermost dim of two or more (ranges of whole blocks of a
 * one-dim output; a kept dim for the reducing form), each run whole by one
 * thread with registers (and accumulators) and a share of the NaN/Inf scan
 * of its own. A batch norm's FUSED programs were a third of a MobileNetV2
 * step, all on one thread while the step's GEMMs used every core. Each
 * element is computed by the same steps whoever runs it (each output of the
 * reducing form takes the same values in the same order), so the bits, the
 * scan's count, first index and blamed step do not depend on the thread
 * count. */
typedef struct fz_job {
	const fwsim_kargs_t *k;
	const fz_prog_t *pg;
	const fz_part_t *whole;
	uint32_t dim;      /* the dim cut into items */
	uint64_t chunk;    /* its indices per item */
	uint64_t per;      /* elements per index of it */
	fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS];
	uint8_t *buf[FWSIM_PAR_MAX_THREADS]; /* each slot's registers, kept for
					      * its next items */
	fwsim_acc_t *acc[FWSIM_PAR_MAX_THREADS]; /* reducing form: each slot's
						  * accumulators (chunk x per) */
} fz_job_t;

static fwsim_status_t fz_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	fz_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	uint64_t first[ISA_MAX_RANK] = { 0 }, len[ISA_MAX_RANK] = { 0 };
	uint64_t n = j->whole->aps[0]->shape[j->dim];
	first[j->dim] = item * j->chunk;
	len[j->dim] = n - first[j->dim] < j->chunk ? n - first[j->dim] : j->chunk;
	fz_part_t pt;
	isa_ap_t paps[1 + ISA_FUSED_MAX_INPUTS], iaps[ISA_MAX_RANK];
	fz_part_cut(j->whole, j->pg->h.n_inputs, 1u << j->dim, first, len, paps, iaps, &pt);
	if (!j->buf[slot] && !(j->buf[slot] = aligned_alloc(64, fz_regs_bytes(j->pg))))
		return FWSIM_NOMEM;
	fz_regs_t r;
	uint8_t *tmp;
	fz_regs_init(&r, j->pg, kk.chk, j->buf[slot], &tmp);
	uint64_t flat = first[j->dim] * j->per;
	if (!j->pg->h.reduce)
		return fz_loop(&kk, j->pg, &r, tmp, &pt, &flat);
	if (!j->acc[slot] && !(j->acc[slot] = malloc(j->chunk * j->per * sizeof(fwsim_acc_t))))
		return FWSIM_NOMEM;
	return fz_reduce_part(&kk, j->pg, &r, tmp, &pt, j->acc[slot], &flat);
}

/* Runs the program on the pool when it is big enough to split (*st its
 * status); false to run it on this thread alone. The reducing form is cut
 * along its outermost kept dim of two or more when its outputs fit one
 * part of fz_run_reduce: each range of outputs is a run of the row-major
 * output order, and each output takes the same values in the same order
 * (a batch norm's sums over N, H, W, cut by channels). */
static bool fz_run_par(const fwsim_kargs_t *k, const fz_prog_t *pg, const fz_part_t *whole,
		       fwsim_status_t *st)
{
	const isa_ap_t *o = whole->aps[0];
	uint32_t red = pg->h.reduce ? pg->h.reduce_axes : 0;
	uint64_t total = isa_ap_num_elements(o), nout = 1;
	for (uint32_t q = 0; q < o->rank; q++)
		nout *= (red >> q & 1) ? 1 : o->shape[q];
	if (total < fwsim_par_min_ew(k) || fwsim_get_threads() < 2 ||
	    (red && nout > FWSIM_REDUCE_MAX_ACC))
		return false;
	int d = fwsim_par_cut_dim(o, red);
	if (d < 0)
		return false;
	fz_job_t *j = calloc(1, sizeof(*j));
	if (!j)
		return false;
	j->k = k;
	j->pg = pg;
	j->whole = whole;
	j->dim = (uint32_t)d;
	j->per = (red ? nout : total) / o->shape[d];
	j->chunk = (o->shape[d] + FWSIM_PAR_ITEMS - 1) / FWSIM_PAR_ITEMS;
	if (!red && (uint32_t)d + 1 == o->rank) /* ranges of one row: whole blocks */
		j->chunk = (j->chunk + FZ_BLOCK - 1) / FZ_BLOCK * FZ_BLOCK;
	fwsim_par_chk_init(k, j->chk);
	uint64_t items = (o->shape[d] + j->chunk - 1) / j->chunk;
	*st = fwsim_par_for(items, fz_item, j, k->watch);
	fwsim_par_chk_merge(k, j->chk);
	for (uint32_t i = 0; i < FWSIM_PAR_MAX_THREADS; i++) {
		free(j->buf[i]);
		free(j->acc[i]);
	}
	free(j);
	return true;
}

static fwsim_status_t fz_run(const fwsim_kargs_t *k, const fz_prog_t *pg)
{
	const isa_insn_t *in = k->insn;
	uint32_t nin = pg->h.n_inputs;
	fz_part_t pt;
	memset(&pt, 0, sizeof(pt));
	pt.aps[0] = &in->ap[0];
	pt.base[0] = k->base[0];
	for (uint32_t i = 0; i < nin; i++) {
		pt.aps[1 + i] = &pg->in_ap[i];
		pt.base[1 + i] = pg->in_base[i];
	}
	pt.nops = 1 + nin;
	/* an index operand per dim some IOTA step reads: stride 1 (u8: bytes
	 * are indices) along it, 0 elsewhere, so the iterator's offsets count
	 * the index, and it never merges its dim with another */
	isa_ap_t iaps[ISA_MAX_RANK];
	for (uint32_t d = 0; d < ISA_MAX_RANK; d++)
		pt.iota_op[d] = -1;
	for (uint32_t s = 0; s < pg->h.n_code; s++) {
		const isa_fused_op_t *op = &pg->code[s];
		uint32_t d = op->src[0];
		if (op->op != ISA_FUSED_IOTA || pt.iota_op[d] >= 0)
			continue;
		iaps[d] = in->ap[0];
		iaps[d].dtype = ISA_DT_U8;
		iaps[d].region = 0;
		iaps[d].offset = 0;
		for (uint32_t q = 0; q < ISA_MAX_RANK; q++)
			iaps[d].stride[q] = q == d;
		pt.iota_op[d] = (int)pt.nops;
		pt.aps[pt.nops] = &iaps[d];
		pt.base[pt.nops++] = NULL;
	}

	fwsim_status_t pst;
	if (fz_run_par(k, pg, &pt, &pst))
		return pst;
	fz_regs_t r;
	uint8_t *tmp, *buf = aligned_alloc(64, fz_regs_bytes(pg));
	if (!buf)
		return FWSIM_NOMEM;
	fz_regs_init(&r, pg, k->chk, buf, &tmp);
	uint64_t flat = 0;
	fwsim_status_t st = pg->h.reduce ? fz_run_reduce(k, pg, &r, tmp, &pt)
					 : fz_loop(k, pg, &r, tmp, &pt, &flat);
	free(r.buf);
	return st;
}

fwsim_status_t fwsim_exec_fused(fwsim_exec_t *x, uint32_t e, uint32_t pc, fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const fwsim_job_t *job = x->job;
	/* ap1 passed the bounds check: the descriptor bytes are readable. They
	 * live in device memory that other engines (a DMA loop), or a kernel-path
	 * client through its mapping, may rewrite while we run: read them exactly
	 * once into a private copy, then validate and execute only the copy. A
	 * second read after validation let a rewritten n_code copy 1 MiB into this
	 * block (issue #11). */
	size_t len = (size_t)in->ap[1].shape[0];
	if (!k->base[1] || len > FZ_DESC_MAX) {
		fwsim_exec_fail(x, FWSIM_INVALID, e, pc, 1, in->ap[1].region,
				"%s insn %u (fused): bad descriptor: %s", fwsim_engine_name(e),
				pc, k->base[1] ? "longer than any descriptor" : "empty");
		return FWSIM_INVALID;
	}
	fz_prog_t *pg = malloc(sizeof(*pg));
	if (!pg)
		return FWSIM_NOMEM;
	memcpy(pg->raw, k->base[1], len);
	ns_status_t vs = isa_fused_desc_validate(in, pg->raw, len, x->prog->n_regions);
	if (vs) {
		fwsim_exec_fail(x, FWSIM_INVALID, e, pc, 1, in->ap[1].region,
				"%s insn %u (fused): bad descriptor: %s", fwsim_engine_name(e),
				pc, ns_status_message(vs));
		ns_status_free(vs);
		free(pg);
		return FWSIM_INVALID;
	}
	/* Unpacked from the validated copy only. */
	memcpy(&pg->h, pg->raw, sizeof(pg->h));
	uint32_t nin = pg->h.n_inputs;
	uint32_t ndir = nin < ISA_FUSED_DIRECT ? nin : ISA_FUSED_DIRECT;
	const uint8_t *p = pg->raw + sizeof(pg->h);
	for (uint32_t i = 0; i < nin; i++) {
		if (i < ndir) {
			pg->in_ap[i] = in->ap[2 + i];
			pg->in_base[i] = k->base[2 + i];
			continue;
		}
		memcpy(&pg->in_ap[i], p, sizeof(isa_ap_t));
		p += sizeof(isa_ap_t);
		/* the same IOMMU rule as check_bounds in exec.c, for operands that
		 * live in the descriptor */
		const isa_ap_t *ap = &pg->in_ap[i];
		const fwsim_region_t *rg = &job->regions[ap->region];
		pg->in_base[i] = NULL;
		if (rg->size > job->mem_size || rg->addr > job->mem_size - rg->size) {
			fwsim_exec_fail(x, FWSIM_OOB, e, pc, 2 + i, ap->region,
					"%s insn %u (fused) input %u: region %u outside the job's "
					"memory", fwsim_engine_name(e), pc, i, ap->region);
			free(pg);
			return FWSIM_OOB;
		}
		__int128 lo, hi;
		if (!fwsim_ap_extent(ap, &lo, &hi))
			continue;
		if (lo < 0 || hi > (__int128)rg->size) {
			long long slo = lo < -(__int128)INT64_MAX ? -INT64_MAX : (long long)lo;
			unsigned long long shi = hi > (__int128)UINT64_MAX ? UINT64_MAX
									 : (unsigned long long)hi;
			fwsim_exec_fail(x, FWSIM_OOB, e, pc, 2 + i, ap->region,
					"%s insn %u (fused) input %u (ap%u): bytes [%lld, %llu) outside "
					"region %u of 0x%llx bytes", fwsim_engine_name(e), pc, i, 2 + i,
					slo, shi, ap->region, (unsigned long long)rg->size);
			free(pg);
			return FWSIM_OOB;
		}
		pg->in_base[i] = job->mem + rg->addr + ap->offset;
	}
	memcpy(pg->code, p, pg->h.n_code * sizeof(isa_fused_op_t));
	fz_liveness(pg);
	uint8_t in_dt[ISA_FUSED_MAX_INPUTS];
	for (uint32_t i = 0; i < nin; i++)
		in_dt[i] = pg->in_ap[i].dtype;
	fz_plan(pg->code, pg->h.n_code, pg->live, in_dt, nin, pg->h.out_reg, &pg->mp);
	fz_tree_plan(pg->code, pg->h.n_code, pg->live, in_dt, nin, pg->h.out_reg, &pg->tree);
	pg->out_in_place = false;
	for (uint32_t s = 0; s < pg->h.n_code; s++) {
		if (!pg->live[s] || pg->code[s].dst != pg->h.out_reg)
			continue;
		pg->out_step = s;
		/* (a step the plan skips writes nothing: never the output's) */
		pg->out_in_place = pg->code[s].dtype == ISA_DT_F32 && pg->code[s].op != ISA_FUSED_CONST &&
				   !pg->mp.paired[s] && !pg->mp.fast_skip[s] && !pg->mp.folded[s];
	}
	k->flops = isa_insn_flops(in, isa_fused_flops_per_elem(pg->code, pg->h.n_code, in_dt, nin));
	fwsim_status_t st = fz_run(k, pg);
	free(pg);
	return st;
}
