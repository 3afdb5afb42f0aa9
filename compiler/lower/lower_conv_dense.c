/* Lowering of dense f32 convolutions (no groups) to few large GEMMs over an im2col buffer built straight from the input, and of strided input gradients by col2im; the rest of the convolution lowering is lower_conv.c. */
#include <string.h>

#include "lower_internal.h"

/* ---- dense convolutions (no groups, f32) as few large GEMMs ----
 *
 * Both kinds of a convolution's sums, out[b, o, y] = sum_f sum_k P[b, f, y*st +
 * k*rd] K[f, o, k] (P the zero-padded input), read P at i = a*sa + b*sb - lo
 * per spatial dim, with a the small index (one COPY per value) and b the large
 * one (runs along rows):
 *   forward-like (prod(K) <= prod(Y)): a = k, b = y; the GEMM is
 *     out[n] [O, Y] (+)= W' [O, (C, a...)] x T[n] [(C, a...), Y], K = C * |a|
 *   weight-gradient-like (the "kernel" an activation map): a = y, b = k;
 *     acc [(B, a...), O] (+)= T[f] [(B, a...), K...] x Kern[f] [K..., O] per f
 * T [o0, o1, a..., run...] is built straight from the input (zeros where the
 * window leaves it), never a padded copy. When the first spatial dim's run has
 * step 1 (stride 1, or rhs dilation 1 for weight gradients) its a is not
 * copied ("shift"): T keeps all R0 = (A0 - 1) * sa0 + B0 input rows and each
 * value of a0 is the same T read from row a0 * sa0 (one GEMM each, a batch of
 * the weight-gradient GEMM): a 3x3 stride-1 convolution copies its input 3
 * times, not 9. Every GEMM output is a real output: nothing is computed from
 * data past a row's end and discarded (such a column could make a NaN from an
 * Inf that no real output combines, and the NaN check would report it). */

/* Bytes of one chunk of the im2col buffer (conv_dense_gemm). */
#define CONV_T_CHUNK (4 << 20)
/* Input channels from which a weight gradient's im2col buffer is transposed. */
#define CONV_WG_TR_MIN_CHANNELS 16

typedef struct conv_axis {
	int64_t X;     /* input size */
	int64_t A, sa; /* the small index (copied) and its step in the input */
	int64_t B, sb; /* the large index (in runs) and its step */
	int64_t lo;    /* low padding */
	int64_t run;   /* T's extent of this dim: B, or R0 for a shifted dim 0 */
} conv_axis_t;

/* Whether inst is a dense convolution (no groups, some spatial dim) of f32
 * operands into a float output (f32 when f32_out): the forms of this file. */
static bool conv_dense_f32(const ncc_inst_t *inst, const ncc_view_t *x, const ncc_view_t *kv,
			   const ncc_view_t *out, bool f32_out)
{
	return inst->conv->nspatial >= 1 && inst->feature_group_count <= 1 &&
	       inst->batch_group_count <= 1 && x->dtype == ISA_DT_F32 && kv->dtype == ISA_DT_F32 &&
	       (f32_out ? out->dtype == ISA_DT_F32 : isa_dtype_is_float(out->dtype));
}

/* Ceil / floor of p / q, q > 0. */
static int64_t div_ceil(int64_t p, int64_t q)
{
	return p >= 0 ? (p + q - 1) / q : -((-p) / q);
}

static int64_t div_floor(int64_t p, int64_t q)
{
	return p >= 0 ? p / q : -((-p + q - 1) / q);
}

/* The run range [t0, t1] of dim s that reads the input for copy index as
 * (the rest is padding): empty when t1 < t0. */
static void im2col_span(const conv_axis_t *q, bool sh, int64_t as, int64_t *t0, int64_t *t1)
{
	int64_t base = (sh ? 0 : as * q->sa) - q->lo, step = sh ? 1 : q->sb;
	*t0 = base >= 0 ? 0 : div_ceil(-base, step);
	*t1 = div_floor(q->X - 1 - base, step);
	if (*t1 > q->run - 1)
		*t1 = q->run - 1;
}

/* Cache lines of fill a COPY instruction's fixed cost is worth (about 1 us
 * of the simulator's dispatch, checks and watch per instruction, at ~8 ns
 * a line written). */
#define IM2COL_FILL_INSN_LINES 128

/* Zeroes T's padding, the places no copy of conv_im2col writes: for each
 * spatial dim s and each value of its copied index (one, for a shifted dim),
 * the runs before and after the span it reads, all other dims whole (corners
 * twice). With emit false, only counts: *n_fills instructions touching about
 * *lines cache lines in all (a fill costs what it writes, lines, not
 * elements: a column of an 8-wide image writes a line per element). A fill
 * of the whole buffer wrote every element once more to zero these few rows
 * and columns: a 7x7 stride-2 stem's 7.4 MB per image, 0.3 ms, where the
 * padding is 4% of it. */
static ncc_status_t im2col_pad_fill(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const conv_axis_t *ax,
				    int32_t ns, int32_t c0, const ncc_view_t *t, bool emit,
				    int64_t *n_fills, double *lines)
{
	int32_t ncd = ns - c0;
	ncc_view_t zero;
	ncc_status_t st = emit ? ncc_lower_const_scalar(ctx, t->dtype, 0, &zero) : NCC_OK;
	*n_fills = 0;
	*lines = 0;
	for (int32_t s = 0; s < ns && st == NCC_OK; s++) {
		const conv_axis_t *q = &ax[s];
		bool copied = s >= c0;
		int32_t rd = 2 + ncd + s;
		for (int64_t v = 0; v < (copied ? q->A : 1) && st == NCC_OK; v++) {
			int64_t t0, t1;
			im2col_span(q, !copied, v, &t0, &t1);
			/* a span past the run, or empty (all padding): [0, t0) and
			 * [t0, run) */
			t0 = t0 < q->run ? t0 : q->run;
			t1 = t1 >= t0 ? t1 : t0 - 1;
			int64_t from[2] = { 0, t1 + 1 }, to[2] = { t0, q->run };
			for (int side = 0; side < 2 && st == NCC_OK; side++) {
				if (from[side] >= to[side])
					continue;
				ncc_view_t r = *t;
				int64_t off = (int64_t)t->offset;
				if (copied) {
					r.dims[2 + s - c0] = 1;
					off += v * t->strides[2 + s - c0] * 4;
				}
				r.dims[rd] = to[side] - from[side];
				off += from[side] * t->strides[rd] * 4;
				r.offset = (uint64_t)off;
				(*n_fills)++;
				double rows = 1;
				for (int32_t d = 0; d + 1 < r.rank; d++)
					rows *= (double)r.dims[d];
				/* a run of L floats from a random float offset */
				*lines += rows * (1 + (double)(r.dims[r.rank - 1] * 4 - 4) / 64);
				if (emit) {
					ncc_view_t z = ncc_view_bcast_scalar(&zero, r.rank, r.dims);
					st = ncc_lower_copy(ctx, inst, &r, &z);
				}
			}
		}
	}
	return st;
}

/* Fills T [O0, O1, a (copied dims)..., run...] (dense, f32) from x: one COPY per
 * value of the copied a's, the input rows each reads clipped to the input, the
 * rest of T zero when fill is set (first: its padding, im2col_pad_fill, or
 * the whole buffer when that costs less; a buffer filled before keeps its
 * zeros, the copies write the same places). d_o0, d_o1 are x's dims that
 * become T's two outer dims; T's first index 0 is x's o0_start along d_o0.
 * tflat, when not NULL, is the whole buffer under t as a contiguous view,
 * zeroed whole (a fill along t's short permuted dims walks rows of a few
 * elements). */
static ncc_status_t conv_im2col(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				int32_t d_o0, int32_t d_o1, int64_t o0_start, const int64_t *d_sp,
				const conv_axis_t *ax, int32_t ns, bool shift, bool fill, const ncc_view_t *t,
				const ncc_view_t *tflat)
{
	int64_t es = (int64_t)isa_dtype_size(x->dtype);
	int32_t c0 = shift ? 1 : 0, ncd = ns - c0; /* copied dims c0..ns-1 */
	int64_t ncopy = 1;
	for (int32_t s = c0; s < ns; s++)
		ncopy *= ax[s].A;
	/* the first element of each dim's run, its count and the input index it reads */
	bool clipped = false;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && clipped && fill) {
			/* the padding alone, when its fills cost less than one of
			 * the whole buffer (counted in cache lines) */
			int64_t nf;
			double pl, whole = 4.0 / 64;
			for (int32_t d = 0; d < t->rank; d++)
				whole *= (double)t->dims[d];
			im2col_pad_fill(ctx, inst, ax, ns, c0, t, false, &nf, &pl);
			ncc_status_t st;
			if (!tflat && pl + (double)(nf - 1) * IM2COL_FILL_INSN_LINES < whole) {
				st = im2col_pad_fill(ctx, inst, ax, ns, c0, t, true, &nf, &pl);
			} else {
				ncc_view_t zero;
				const ncc_view_t *f = tflat ? tflat : t;
				st = ncc_lower_const_scalar(ctx, t->dtype, 0, &zero);
				if (st == NCC_OK) {
					ncc_view_t z = ncc_view_bcast_scalar(&zero, f->rank, f->dims);
					st = ncc_lower_copy(ctx, inst, f, &z);
				}
			}
			if (st != NCC_OK)
				return st;
		}
		for (int64_t cp = 0; cp < ncopy; cp++) {
			int64_t a[NCC_MAX_RANK], rem = cp;
			for (int32_t s = ns - 1; s >= c0; s--) {
				a[s] = rem % ax[s].A;
				rem /= ax[s].A;
			}
			ncc_view_t dst = *t, src = *x;
			dst.rank = src.rank = 2 + ns;
			dst.dims[0] = src.dims[0] = t->dims[0];
			dst.dims[1] = src.dims[1] = t->dims[1];
			dst.strides[0] = t->strides[0];
			dst.strides[1] = t->strides[1];
			src.strides[0] = x->strides[d_o0];
			src.strides[1] = x->strides[d_o1];
			int64_t doff = (int64_t)t->offset;
			int64_t soff = (int64_t)x->offset + o0_start * x->strides[d_o0] * es;
			for (int32_t s = c0; s < ns; s++)
				doff += a[s] * t->strides[2 + s - c0] * es;
			bool empty = false;
			for (int32_t s = 0; s < ns; s++) {
				const conv_axis_t *q = &ax[s];
				bool sh = shift && s == 0;
				int64_t base = (sh ? 0 : a[s] * q->sa) - q->lo, step = sh ? 1 : q->sb;
				int64_t t0, t1;
				im2col_span(q, sh, sh ? 0 : a[s], &t0, &t1);
				int64_t cnt = t1 - t0 + 1;
				if (cnt <= 0) {
					empty = true;
					cnt = 0;
				}
				clipped |= cnt < q->run;
				int64_t tstride = t->strides[2 + ncd + s];
				dst.dims[2 + s] = src.dims[2 + s] = cnt;
				dst.strides[2 + s] = tstride;
				src.strides[2 + s] = x->strides[d_sp[s]] * step;
				doff += t0 * tstride * es;
				soff += (base + t0 * step) * x->strides[d_sp[s]] * es;
			}
			if (pass == 0 || empty)
				continue;
			dst.offset = (uint64_t)doff;
			src.offset = (uint64_t)soff;
			ncc_status_t st = ncc_lower_copy(ctx, inst, &dst, &src);
			if (st != NCC_OK)
				return st;
		}
	}
	return NCC_OK;
}

/* One rank-3 MATMUL operand. */
static void mm_ap(isa_ap_t *ap, const ncc_view_t *v, uint64_t offset, int64_t d0, int64_t s0, int64_t d1,
		  int64_t s1, int64_t d2, int64_t s2)
{
	memset(ap, 0, sizeof(*ap));
	ap->region = v->region;
	ap->dtype = (uint8_t)v->dtype;
	ap->offset = offset;
	ap->rank = 3;
	ap->shape[0] = (uint64_t)d0;
	ap->stride[0] = d0 > 1 ? s0 : 0;
	ap->shape[1] = (uint64_t)d1;
	ap->stride[1] = s1;
	ap->shape[2] = (uint64_t)d2;
	ap->stride[2] = s2;
}

static ncc_status_t emit_mm(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, bool acc, const isa_ap_t *c,
			    const isa_ap_t *a, const isa_ap_t *b)
{
	isa_insn_t in = isa_insn_init(ISA_OP_MATMUL, 0);
	in.n_ap = 3;
	in.flags = acc ? ISA_F_ACCUMULATE : 0;
	in.ap[0] = *c;
	in.ap[1] = *a;
	in.ap[2] = *b;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_TENSOR, &in, NULL);
}

/* The stride of dims d[0..n) of v read as one flat run of prod(dims), or 0
 * when they do not fold into one (dims of size 1 are skipped). */
static int64_t fold_stride(const ncc_view_t *v, const int64_t *d, int32_t n)
{
	int64_t st = 0, span = 1;
	bool any = false;
	for (int32_t s = n - 1; s >= 0; s--) {
		int64_t len = v->dims[d[s]];
		if (len == 1)
			continue;
		if (!any) {
			st = v->strides[d[s]];
			any = true;
		} else if (v->strides[d[s]] != st * span) {
			return 0;
		}
		span *= len;
	}
	return any ? st : 1;
}

/* *wt: a contiguous f32 copy of kv (a kernel, an input window) with its dims
 * in the order d[0..n) (kv's dim indices): W' of the GEMM paths, X' of the
 * folded pointwise form. */
static ncc_status_t conv_dense_copy(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				     const ncc_view_t *kv, const int64_t *d, int32_t n, ncc_view_t *wt)
{
	int64_t wd[NCC_MAX_RANK];
	ncc_view_t src = *kv;
	for (int32_t i = 0; i < n; i++) {
		wd[i] = kv->dims[d[i]];
		src.dims[i] = kv->dims[d[i]];
		src.strides[i] = kv->strides[d[i]];
	}
	src.rank = n;
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_F32, n, wd, wt);
	return st != NCC_OK ? st : ncc_lower_copy(ctx, inst, wt, &src);
}

/* Copies acc, an f32 buffer holding out's values with out's batch and
 * feature dims at element strides sbatch and sfeat and its spatial dims
 * row-major inside, into out. */
static ncc_status_t conv_acc_out(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
				 const ncc_view_t *out, const ncc_view_t *acc, int64_t sbatch,
				 int64_t sfeat)
{
	const ncc_conv_dnums_t *dn = inst->conv;
	ncc_view_t av = *acc;
	av.rank = out->rank;
	av.dims[dn->out_batch] = out->dims[dn->out_batch];
	av.strides[dn->out_batch] = sbatch;
	av.dims[dn->out_feature] = out->dims[dn->out_feature];
	av.strides[dn->out_feature] = sfeat;
	int64_t sy = 1;
	for (int32_t s = dn->nspatial - 1; s >= 0; s--) {
		int64_t d = dn->out_spatial[s];
		av.dims[d] = out->dims[d];
		av.strides[d] = sy;
		sy *= out->dims[d];
	}
	return ncc_lower_copy(ctx, inst, out, &av);
}

/* *acc, the f32 result [O][(n, y...)] of a GEMM over every image's positions
 * at element strides *sof (per O) and *ys (per position): out itself (*direct)
 * when it is f32 and its (n, y...) fold into one run (a weight gradient bound
 * to its output through a transpose: out [O, C, k] row-major), else a buffer
 * that conv_acc_out copies into out after the GEMMs. */
static ncc_status_t conv_acc_rows(ncc_lower_ctx_t *ctx, const ncc_view_t *out,
				  const ncc_conv_dnums_t *dn, ncc_view_t *acc, int64_t *sof,
				  int64_t *ys, bool *direct)
{
	int32_t ns = dn->nspatial;
	int64_t ob[1 + NCC_MAX_RANK] = { dn->out_batch }, npos = out->dims[dn->out_batch];
	for (int32_t s = 0; s < ns; s++) {
		ob[1 + s] = dn->out_spatial[s];
		npos *= out->dims[dn->out_spatial[s]];
	}
	*ys = out->dtype == ISA_DT_F32 ? fold_stride(out, ob, 1 + ns) : 0;
	*direct = *ys != 0;
	*acc = *out;
	*sof = out->strides[dn->out_feature];
	if (*direct)
		return NCC_OK;
	*ys = 1;
	*sof = npos;
	int64_t ad[2] = { out->dims[dn->out_feature], npos };
	return ncc_lower_temp_view(ctx, ISA_DT_F32, 2, ad, acc);
}

/* Output positions per image below which conv_dense_positions runs the
 * convolution, and the most taps it takes (T holds every tap of every position).
 * 4x4 images run there too: ResNet-18 b8's third stage at 64x64, whose
 * forward GEMMs read the kernel in place instead of a reordered copy (4.7 MB,
 * 0.75 ms each), 1.6 -> 1.2 ms a convolution; the step's NEFF 102 -> 96 ms. */
#define CONV_FEW_POSITIONS 17
#define CONV_FEW_POSITIONS_TAPS 64

/*
 * A convolution with few output positions per image (ResNet-18's last stage
 * on 64x64 images: 3x3 over 2x2). Forward-like, each image's GEMM has N = its
 * ny positions (N = 4 ran at a tenth of sgemm's speed); weight-gradient-like,
 * which the kernel's 9 taps > 4 positions chose, one GEMM per input channel
 * with K = the 9 taps: 512 MATMULs, 2.9 ms for a 512->512 3x3 convolution over
 * 8 images. Here T holds the batch inside each row,
 *   acc [O, (n, y...)] = W' [O, (C, k...)] x T [(C, k...), (n, y...)],
 * one GEMM per chunk of images (K = C * nk, N = images x ny), then one COPY of
 * acc into out. No shift: T copies every tap (few positions: T is small).
 * When out is [y...][n][o] (o unit stride: a weight gradient bound to its HWIO
 * output), T is laid out [(C, k...)][y...][n] and one GEMM per position
 * writes out's rows straight:
 *   out[y] [n, O] = T[y]^T [n, (C, k...)] x W'^T [(C, k...), O],
 * where acc [O][(n, y)] needed a full transpose into out (9.4 MB: 1.5-2 ms
 * for each of ResNet-18's 512-channel weight gradients).
 */
static ncc_status_t conv_dense_positions(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
					 const ncc_view_t *x, const ncc_view_t *kv,
					 const ncc_view_t *out, int64_t nk, int64_t ny)
{
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	conv_axis_t ax[NCC_MAX_RANK];
	for (int32_t s = 0; s < ns; s++) {
		conv_axis_t *q = &ax[s];
		q->X = x->dims[dn->in_spatial[s]];
		q->lo = w->dims[s].pad_lo;
		q->A = kv->dims[dn->k_spatial[s]];
		q->sa = w->dims[s].rhs_dilation;
		q->B = out->dims[dn->out_spatial[s]];
		q->sb = w->dims[s].stride;
		q->run = q->B;
	}
	int64_t C = x->dims[dn->in_feature], N = x->dims[dn->in_batch];
	int64_t Cout = out->dims[dn->out_feature], kk = C * nk;
	int64_t cn = ((int64_t)CONV_T_CHUNK / 4) / (kk * ny);
	cn = cn < 1 ? 1 : cn > N ? N : cn;
	int64_t nchunk = (N + cn - 1) / cn;

	/* out [y...][n][o]: each position's rows written by its GEMM */
	int64_t sof = out->strides[dn->out_feature], sob = out->strides[dn->out_batch];
	int64_t soy = fold_stride(out, dn->out_spatial, ns);
	bool rows = out->dtype == ISA_DT_F32 && sof == 1 && sob >= Cout && soy != 0;

	/* T physical [(C, k...)][cn][y...] ([(C, k...)][y...][cn] for rows);
	 * the view conv_im2col fills is [cn][C][k...][y...] over it */
	int64_t td[3] = { kk, cn, ny };
	ncc_view_t tbuf[2];
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_F32, 3, td, &tbuf[0]);
	if (st == NCC_OK && nchunk > 1)
		st = ncc_lower_temp_view(ctx, ISA_DT_F32, 3, td, &tbuf[1]);
	if (st != NCC_OK)
		return st;
	ncc_view_t tl[2];
	for (int b = 0; b < (nchunk > 1 ? 2 : 1); b++) {
		ncc_view_t *v = &tl[b];
		*v = tbuf[b];
		v->rank = 2 + 2 * ns;
		v->dims[0] = cn;
		v->strides[0] = rows ? 1 : ny;
		v->dims[1] = C;
		v->strides[1] = nk * cn * ny;
		int64_t sk = cn * ny, sy = rows ? cn : 1;
		for (int32_t s = ns - 1; s >= 0; s--) {
			v->dims[2 + s] = ax[s].A;
			v->strides[2 + s] = sk;
			sk *= ax[s].A;
			v->dims[2 + ns + s] = ax[s].B;
			v->strides[2 + ns + s] = sy;
			sy *= ax[s].B;
		}
	}

	/* W' [O][(C, k...)]: the kernel in place when (C, k...) is one unit-stride run */
	int64_t kd[NCC_MAX_RANK] = { dn->k_in_feature };
	for (int32_t s = 0; s < ns; s++)
		kd[1 + s] = dn->k_spatial[s];
	ncc_view_t wt = *kv;
	int64_t swo = kv->strides[dn->k_out_feature];
	if (fold_stride(kv, kd, 1 + ns) != 1) {
		int64_t od[NCC_MAX_RANK] = { dn->k_out_feature };
		memcpy(od + 1, kd, (size_t)(1 + ns) * sizeof(*kd));
		if ((st = conv_dense_copy(ctx, inst, kv, od, 2 + ns, &wt)) != NCC_OK)
			return st;
		swo = kk;
	}
	/* the element [o][c = 0][k = 0] of the kernel's first output row: with
	 * unit-stride folded (C, k...), the lowest address of each row */
	uint64_t woff = wt.offset;

	ncc_view_t acc = *out;
	int64_t ys = 0;
	bool direct = rows;
	if (!rows && (st = conv_acc_rows(ctx, out, dn, &acc, &sof, &ys, &direct)) != NCC_OK)
		return st;
	for (int64_t ch = 0; ch < nchunk; ch++) {
		int64_t n0 = ch * cn, nn = N - n0 < cn ? N - n0 : cn;
		ncc_view_t t = tl[ch % 2];
		t.dims[0] = nn;
		st = conv_im2col(ctx, inst, x, (int32_t)dn->in_batch, (int32_t)dn->in_feature, n0,
				 dn->in_spatial, ax, ns, false, ch < 2, &t, &tbuf[ch % 2]);
		if (st != NCC_OK)
			return st;
		isa_ap_t ac, aa, ab;
		uint64_t toff = tbuf[ch % 2].offset;
		if (rows) {
			/* a batch of ny GEMMs: out[y] [nn, O] = T[y]^T x W'^T */
			mm_ap(&ac, out, (uint64_t)((int64_t)out->offset + n0 * sob * 4), ny, soy, nn, sob,
			      Cout, 1);
			mm_ap(&aa, &t, toff, ny, cn, nn, 1, kk, cn * ny);
			mm_ap(&ab, &wt, woff, ny, 0, kk, 1, Cout, swo);
		} else {
			mm_ap(&aa, &wt, woff, 1, 0, Cout, swo, kk, 1);
			mm_ap(&ab, &t, toff, 1, 0, kk, cn * ny, nn * ny, 1);
			mm_ap(&ac, &acc, (uint64_t)((int64_t)acc.offset + n0 * ny * ys * 4), 1, 0, Cout, sof,
			      nn * ny, ys);
		}
		if ((st = emit_mm(ctx, inst, false, &ac, &aa, &ab)) != NCC_OK)
			return st;
	}
	if (direct)
		return NCC_OK;
	/* out[n, o, y...] = acc[o][n][y...] */
	return conv_acc_out(ctx, inst, out, &acc, ny, N * ny);
}

/* Lowers inst when it is a dense f32 convolution that conv_im2col's GEMMs
 * serve (see above); *out_done false (nothing emitted) otherwise. */
ncc_status_t ncc_lower_conv_dense_gemm(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				       const ncc_view_t *kv, const ncc_view_t *out, bool *out_done)
{
	*out_done = false;
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	if (!conv_dense_f32(inst, x, kv, out, false))
		return NCC_OK;
	int64_t nk = 1, ny = 1;
	for (int32_t s = 0; s < ns; s++) {
		if (w->dims[s].lhs_dilation != 1 || w->dims[s].stride < 1 || w->dims[s].rhs_dilation < 1)
			return NCC_OK;
		nk *= kv->dims[dn->k_spatial[s]];
		ny *= out->dims[dn->out_spatial[s]];
	}
	/* 1x1 kernels and single-position weight gradients read their operands in
	 * place (ncc_lower_conv): no im2col at all */
	if (nk == 1 || ny == 1)
		return NCC_OK;
	/* the input's spatial dims inside its features (NCHW): T's rows are runs
	 * of the input's rows */
	int64_t sf = x->strides[dn->in_feature], sl = x->strides[dn->in_spatial[ns - 1]];
	if (sl != 1 || (sf < 0 ? -sf : sf) <= 1)
		return NCC_OK;
	if (ny < CONV_FEW_POSITIONS && nk <= CONV_FEW_POSITIONS_TAPS &&
	    (double)x->dims[dn->in_feature] * (double)nk * (double)ny *
	    (double)x->dims[dn->in_batch] * 4 <= (double)(256 << 20)) {
		*out_done = true;
		return conv_dense_positions(ctx, inst, x, kv, out, nk, ny);
	}
	bool wg = nk > ny;
	conv_axis_t ax[NCC_MAX_RANK];
	for (int32_t s = 0; s < ns; s++) {
		int64_t K = kv->dims[dn->k_spatial[s]], Y = out->dims[dn->out_spatial[s]];
		conv_axis_t *q = &ax[s];
		q->X = x->dims[dn->in_spatial[s]];
		q->lo = w->dims[s].pad_lo;
		q->A = wg ? Y : K;
		q->sa = wg ? w->dims[s].stride : w->dims[s].rhs_dilation;
		q->B = wg ? K : Y;
		q->sb = wg ? w->dims[s].rhs_dilation : w->dims[s].stride;
		q->run = q->B;
	}
	bool shift = ns >= 2 && ax[0].sb == 1 && ax[0].A > 1;
	if (shift)
		ax[0].run = (ax[0].A - 1) * ax[0].sa + ax[0].B;
	int32_t c0 = shift ? 1 : 0;
	int64_t ncopy = 1, nrun = 1, nb = 1;
	for (int32_t s = 0; s < ns; s++) {
		if (s >= c0)
			ncopy *= ax[s].A;
		nrun *= ax[s].run;
		nb *= ax[s].B;
	}
	int64_t runtail = nrun / ax[0].run; /* elements of one T row (dim 0) */
	int64_t na0 = shift ? ax[0].A : 1, st0 = shift ? ax[0].sa * runtail : 0;
	/* x's outer dims in T: (batch, feature) forward, (feature, batch) for weight gradients */
	int32_t d_o0 = (int32_t)(wg ? dn->in_feature : dn->in_batch);
	int32_t d_o1 = (int32_t)(wg ? dn->in_batch : dn->in_feature);
	int64_t O0 = x->dims[d_o0], O1 = x->dims[d_o1], Cout = out->dims[dn->out_feature];
	if ((double)O0 * (double)O1 * (double)ncopy * (double)nrun * 4 > (double)(256 << 20))
		return NCC_OK; /* T within 256 MiB */
	*out_done = true;

	/* T in chunks of the outer dim (batch elements forward, forward batch
	 * elements for weight gradients) of at most CONV_T_CHUNK bytes, two
	 * buffers in turn: each chunk's copies and GEMMs stay in the cache, and
	 * the next chunk's copies need not wait for this chunk's GEMMs */
	int64_t per = O1 * ncopy * nrun, cn = ((int64_t)CONV_T_CHUNK / 4) / (per ? per : 1);
	cn = cn < 1 ? 1 : cn > O0 ? O0 : cn;
	int64_t nchunk = (O0 + cn - 1) / cn;
	int64_t td[NCC_MAX_RANK];
	int32_t tr = 0;
	td[tr++] = cn;
	td[tr++] = O1;
	for (int32_t s = c0; s < ns; s++)
		td[tr++] = ax[s].A;
	for (int32_t s = 0; s < ns; s++)
		td[tr++] = ax[s].run;
	ncc_view_t tbuf[2];
	ncc_status_t st = ncc_lower_temp_view(ctx, ISA_DT_F32, tr, td, &tbuf[0]);
	if (st == NCC_OK && nchunk > 1)
		st = ncc_lower_temp_view(ctx, ISA_DT_F32, tr, td, &tbuf[1]);
	if (st != NCC_OK)
		return st;

	if (!wg) {
		/* W' [a0][O][C][a...]: the kernel, reordered (small) */
		int64_t C = O1, N = O0, kk = C * ncopy;
		int64_t wd[NCC_MAX_RANK];
		int32_t wr = 0;
		ncc_view_t wt;
		if (shift)
			wd[wr++] = dn->k_spatial[0];
		wd[wr++] = dn->k_out_feature;
		wd[wr++] = dn->k_in_feature;
		for (int32_t s = c0; s < ns; s++)
			wd[wr++] = dn->k_spatial[s];
		if ((st = conv_dense_copy(ctx, inst, kv, wd, wr, &wt)) != NCC_OK)
			return st;
		/* out[n] [O, Y] directly when its spatial dims fold and it is f32 */
		int64_t ys = fold_stride(out, dn->out_spatial, ns);
		bool direct = out->dtype == ISA_DT_F32 && ys != 0;
		ncc_view_t acc = *out;
		int64_t sob = out->strides[dn->out_batch], sof = out->strides[dn->out_feature];
		if (!direct) {
			int64_t ad[3] = { N, Cout, nb };
			if ((st = ncc_lower_temp_view(ctx, ISA_DT_F32, 3, ad, &acc)) != NCC_OK)
				return st;
			sob = Cout * nb;
			sof = nb;
			ys = 1;
		}
		for (int64_t ch = 0; ch < nchunk; ch++) {
			int64_t n0 = ch * cn, nn = N - n0 < cn ? N - n0 : cn;
			ncc_view_t t = tbuf[ch % 2];
			t.dims[0] = nn;
			st = conv_im2col(ctx, inst, x, d_o0, d_o1, n0, dn->in_spatial, ax, ns, shift, ch < 2, &t,
					 NULL);
			if (st != NCC_OK)
				return st;
			uint64_t coff = (uint64_t)((int64_t)acc.offset + n0 * sob * 4);
			for (int64_t a0 = 0; a0 < na0; a0++) {
				isa_ap_t ac, aa, ab;
				mm_ap(&aa, &wt, wt.offset + (uint64_t)(a0 * Cout * kk * 4), nn, 0, Cout, kk, kk, 1);
				mm_ap(&ab, &t, t.offset + (uint64_t)(a0 * st0 * 4), nn, kk * nrun, kk, nrun, nb, 1);
				mm_ap(&ac, &acc, coff, nn, sob, Cout, sof, nb, ys);
				if ((st = emit_mm(ctx, inst, a0 > 0, &ac, &aa, &ab)) != NCC_OK)
					return st;
			}
		}
		if (direct)
			return NCC_OK;
		return conv_acc_out(ctx, inst, out, &acc, Cout * nb, nb);
	}

	/* weight-gradient-like: Kern[f] [K..., O] read in place when its spatial
	 * dims fold into one run, else copied [F][O][K...] first */
	int64_t F = O0, Bt = O1, mrows = Bt * ncopy;
	int64_t ks = fold_stride(kv, dn->k_spatial, ns);
	ncc_view_t kern = *kv;
	int64_t skf = kv->strides[dn->k_in_feature], sko = kv->strides[dn->k_out_feature];
	if (ks == 0) {
		int64_t kd[NCC_MAX_RANK] = { dn->k_in_feature, dn->k_out_feature };
		for (int32_t s = 0; s < ns; s++)
			kd[2 + s] = dn->k_spatial[s];
		if ((st = conv_dense_copy(ctx, inst, kv, kd, 2 + ns, &kern)) != NCC_OK)
			return st;
		skf = Cout * nb;
		sko = nb;
		ks = 1;
	}
	/* With many input channels T is laid out transposed, T'[f] [run...][a...][Bt]
	 * (the channels innermost: each COPY a transpose of [Bt][run] rows), and
	 * the GEMM is acc' [a0][O][(a..., Bt)] (+)= Kern[f] [O, K...] x T'[f]
	 * [K..., (a..., Bt)]: sgemm runs [O x K] x [K x N] with both operands
	 * row-major faster than [N x K] x [K x O] with the second transposed
	 * (ResNet's 3x3 64->64 weight gradient over 8 56x56 images: 9.2 -> 7.4
	 * ms of GEMMs in the same cold-cache loop). Few channels would make the
	 * transposes' rows too short. */
	bool tt = Bt >= CONV_WG_TR_MIN_CHANNELS && ks == 1;
	if (tt) {
		for (int b = 0; b < (nchunk > 1 ? 2 : 1); b++) {
			ncc_view_t *v = &tbuf[b];
			int64_t sa = Bt, sr = mrows;
			v->strides[1] = 1;
			for (int32_t s = ns - 1; s >= c0; s--) {
				v->strides[2 + s - c0] = sa;
				sa *= ax[s].A;
			}
			for (int32_t s = ns - 1; s >= 0; s--) {
				v->strides[2 + (ns - c0) + s] = sr;
				sr *= ax[s].run;
			}
			v->strides[0] = sr;
		}
	}
	/* acc [a0][(Bt, a...)][O], or acc' [a0][O][(a..., Bt)] */
	int64_t ad[3] = { na0, tt ? Cout : mrows, tt ? mrows : Cout };
	ncc_view_t acc;
	if ((st = ncc_lower_temp_view(ctx, ISA_DT_F32, 3, ad, &acc)) != NCC_OK)
		return st;
	for (int64_t f = 0; f < F; f++) {
		int64_t ch = f / cn;
		ncc_view_t t = tbuf[ch % 2];
		if (f % cn == 0) {
			t.dims[0] = F - f < cn ? F - f : cn;
			int64_t fd[1] = { t.dims[0] * per };
			ncc_view_t flat = ncc_view_dense(t.region, t.offset, t.dtype, 1, fd);
			st = conv_im2col(ctx, inst, x, d_o0, d_o1, f, dn->in_spatial, ax, ns, shift, ch < 2,
					 &t, tt ? &flat : NULL);
			if (st != NCC_OK)
				return st;
		}
		isa_ap_t ac, aa, ab;
		uint64_t toff = t.offset + (uint64_t)(f % cn * mrows * nrun * 4);
		if (tt) {
			mm_ap(&aa, &kern, (uint64_t)((int64_t)kern.offset + f * skf * 4), na0, 0, Cout, sko, nb, ks);
			mm_ap(&ab, &t, toff, na0, st0 * mrows, nb, mrows, mrows, 1);
			mm_ap(&ac, &acc, acc.offset, na0, Cout * mrows, Cout, mrows, mrows, 1);
		} else {
			mm_ap(&aa, &t, toff, na0, st0, mrows, nrun, nb, 1);
			mm_ap(&ab, &kern, (uint64_t)((int64_t)kern.offset + f * skf * 4), na0, 0, nb, ks, Cout, sko);
			mm_ap(&ac, &acc, acc.offset, na0, mrows * Cout, mrows, Cout, Cout, 1);
		}
		if ((st = emit_mm(ctx, inst, f > 0, &ac, &aa, &ab)) != NCC_OK)
			return st;
	}
	/* out[bt, o, y...] = acc[y0 (shift)][bt][y (copied)...][o], or
	 * acc'[y0 (shift)][o][y (copied)...][bt] */
	ncc_view_t av = acc;
	av.rank = out->rank;
	av.dims[dn->out_batch] = Bt;
	av.strides[dn->out_batch] = tt ? 1 : ncopy * Cout;
	av.dims[dn->out_feature] = Cout;
	av.strides[dn->out_feature] = tt ? mrows : 1;
	int64_t sy = tt ? Bt : Cout;
	for (int32_t s = ns - 1; s >= c0; s--) {
		av.dims[dn->out_spatial[s]] = ax[s].A;
		av.strides[dn->out_spatial[s]] = sy;
		sy *= ax[s].A;
	}
	if (shift) {
		av.dims[dn->out_spatial[0]] = ax[0].A;
		av.strides[dn->out_spatial[0]] = mrows * Cout;
	}
	return ncc_lower_copy(ctx, inst, out, &av);
}

/* Positions per image below which a pointwise convolution's per-image GEMMs
 * are too narrow (ncc_lower_conv_dense_folded). */
#define CONV_FOLD_POSITIONS 64
/* Bytes of col2im's G up to which one GEMM covers every image (col2im). */
#define CONV_COL2IM_FOLD (4 << 20)

/* The kernel as col2im's GEMM operand W' [(Cout, k...)][Ci] in place: true
 * when (Cout, k...) fold into one unit-stride run once reversed spatial dims
 * are read forward. *kf is kv with those dims flipped back and flip[s] says
 * which: row (c, k') of W' holds the taps in memory order, k' = K - 1 - k. */
static bool col2im_kernel_in_place(const ncc_view_t *kv, const ncc_conv_dnums_t *dn, ncc_view_t *kf,
				   bool *flip)
{
	int32_t ns = dn->nspatial;
	int64_t es = (int64_t)isa_dtype_size(kv->dtype);
	*kf = *kv;
	int64_t rd[1 + NCC_MAX_RANK] = { dn->k_out_feature };
	for (int32_t s = 0; s < ns; s++) {
		int64_t d = dn->k_spatial[s], len = kv->dims[d];
		rd[1 + s] = d;
		flip[s] = kv->strides[d] < 0 && len > 1;
		if (flip[s]) {
			kf->offset = (uint64_t)((int64_t)kf->offset + (len - 1) * kv->strides[d] * es);
			kf->strides[d] = -kv->strides[d];
		}
	}
	return fold_stride(kf, rd, 1 + ns) == 1;
}

/* The input gradient of a dense convolution with stride 1 (lhs-dilated by
 * d >= 1): out[n, c, lo + d*q - k] += sum_o W[k, c, o] x[n, o, q]. One MATMUL
 * computes G [(c, k...), q] = W' [(c, k...), O] x x [O, q] over the real
 * inputs only, and one ALU ADD per kernel position adds G's plane into the
 * output's positions lo + d*q - k (col2im) in an accumulator kept by phase
 * (y mod d), then one COPY per phase into the output: no dilated input, d^ns
 * times fewer products than the convolution over it. W' is the kernel itself
 * when its (c, k...) are one run (PyTorch/XLA's reversed OIHW kernel, HLO
 * layout {1,0,2,3}), else a reordered copy.
 *
 * Two layouts. A G of more than CONV_COL2IM_FOLD bytes: per image,
 * G [n][(c, k...)][q...] and Acc [n][c][r...][p...], the ADDs along rows of
 * q. Else one GEMM over every image's positions,
 *   G [(q..., n)][(c, k...)] = X' [(q..., n), O] x W'^T [O, (c, k...)],
 * X' the input copied [q...][n][O] (row-major, as the firmware's thin
 * products take it: kernels_matmul_thin.c), so that the kernel is read row
 * by row as it lies (read down its columns, a 9.4 MB kernel cold in the
 * cache took 2x as long), and Acc [r...][p...][n][c], each ADD along runs of
 * (n, c) (of whole rows when the tap covers them) reading G at a stride of
 * the taps.
 * ResNet-18's last stage at 64x64 has 4 positions per image: per image, 8
 * GEMMs of 4 columns each read its 4.7 MB kernel. A large G stays per image:
 * the ADDs read a cached G once per tap, 9 times for a 3x3 kernel.
 *
 * With d = 1 this form runs where the kernel is read in place and outweighs G
 * (Ci >= N * nq: the last stages' 3x3 input gradients), where the im2col
 * forms copy the whole kernel first. Some of G lands outside the output (taps
 * past the padding) and is not added: products the convolution itself never
 * forms. *out_done false (nothing emitted) when it does not apply. */
ncc_status_t ncc_lower_conv_dense_col2im(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
					 const ncc_view_t *x, const ncc_view_t *kv, const ncc_view_t *out,
					 bool *out_done)
{
	*out_done = false;
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	if (!conv_dense_f32(inst, x, kv, out, true))
		return NCC_OK;
	bool dilated = false;
	int64_t nk = 1, nq = 1;
	for (int32_t s = 0; s < ns; s++) {
		if (w->dims[s].stride != 1 || w->dims[s].rhs_dilation != 1 || w->dims[s].lhs_dilation < 1)
			return NCC_OK;
		dilated |= w->dims[s].lhs_dilation > 1;
		nk *= kv->dims[dn->k_spatial[s]];
		nq *= x->dims[dn->in_spatial[s]];
	}
	int64_t qs = fold_stride(x, dn->in_spatial, ns);
	int64_t N = x->dims[dn->in_batch], Ci = x->dims[dn->in_feature], Cout = out->dims[dn->out_feature];
	int64_t CK = Cout * nk;
	if (qs == 0 || (double)N * (double)CK * (double)nq * 4 > (double)(256 << 20))
		return NCC_OK; /* G within 256 MiB */
	ncc_view_t kf;
	bool flip[NCC_MAX_RANK];
	bool in_place = col2im_kernel_in_place(kv, dn, &kf, flip);
	if (!dilated) {
		int64_t kd[1 + NCC_MAX_RANK] = { dn->k_in_feature };
		for (int32_t s = 0; s < ns; s++)
			kd[1 + s] = dn->k_spatial[s];
		if (!in_place || nk == 1 || fold_stride(kv, kd, 1 + ns) == 1 || Ci < N * nq)
			return NCC_OK;
	}
	*out_done = true;
	bool fold = (double)N * (double)CK * (double)nq * 4 <= (double)CONV_COL2IM_FOLD;
	ncc_status_t st = NCC_OK;
	/* W' [(c, k...)][O]: rows at unit stride, O at swo */
	ncc_view_t wt = kf, g, zero, xt;
	int64_t swo = kv->strides[dn->k_in_feature];
	if (!in_place) {
		int64_t wd[2 + NCC_MAX_RANK] = { dn->k_in_feature, dn->k_out_feature };
		for (int32_t s = 0; s < ns; s++)
			wd[2 + s] = dn->k_spatial[s];
		st = conv_dense_copy(ctx, inst, kv, wd, 2 + ns, &wt);
		swo = CK;
	}
	int64_t gd[1] = { N * CK * nq };
	if (st == NCC_OK)
		st = ncc_lower_temp_view(ctx, ISA_DT_F32, 1, gd, &g);
	if (st == NCC_OK && fold) {
		int64_t xd[2 + NCC_MAX_RANK];
		for (int32_t s = 0; s < ns; s++)
			xd[s] = dn->in_spatial[s];
		xd[ns] = dn->in_batch;
		xd[ns + 1] = dn->in_feature;
		st = conv_dense_copy(ctx, inst, x, xd, 2 + ns, &xt);
	}
	if (st != NCC_OK)
		return st;
	isa_ap_t ac, aa, ab;
	if (fold) {
		mm_ap(&ac, &g, g.offset, 1, 0, nq * N, CK, CK, 1);
		mm_ap(&aa, &xt, xt.offset, 1, 0, nq * N, Ci, Ci, 1);
		mm_ap(&ab, &wt, wt.offset, 1, 0, Ci, swo, CK, 1);
	} else {
		mm_ap(&ac, &g, g.offset, N, CK * nq, CK, nq, nq, 1);
		mm_ap(&aa, &wt, wt.offset, N, 0, CK, 1, Ci, swo);
		mm_ap(&ab, x, x->offset, N, x->strides[dn->in_batch], Ci, x->strides[dn->in_feature], nq, qs);
	}
	if ((st = emit_mm(ctx, inst, false, &ac, &aa, &ab)) != NCC_OK)
		return st;

	/* Acc: output y = r + d*p by phase r (y mod d) */
	int64_t ph[NCC_MAX_RANK], pe[NCC_MAX_RANK], nph = 1, npp = 1;
	for (int32_t s = 0; s < ns; s++) {
		ph[s] = w->dims[s].lhs_dilation;
		pe[s] = div_ceil(out->dims[dn->out_spatial[s]], ph[s]);
		nph *= ph[s];
		npp *= pe[s];
	}
	/* element strides of G (by n, c, tap row, q...) and of Acc (by n, c,
	 * phase, p...); dims of the ADDs' and COPYs' views in the order
	 * (n, c, q...) per image, (q..., n, c) folded */
	int64_t g_n = fold ? CK : CK * nq, g_c = fold ? nk : nk * nq, g_k = fold ? 1 : nq;
	int64_t a_n = fold ? Cout : Cout * nph * npp, a_c = fold ? 1 : nph * npp;
	int64_t a_r = fold ? npp * N * Cout : npp;
	int64_t g_q[NCC_MAX_RANK], a_p[NCC_MAX_RANK], sq = fold ? N * CK : 1, sp = fold ? N * Cout : 1;
	for (int32_t s = ns - 1; s >= 0; s--) {
		g_q[s] = sq;
		sq *= x->dims[dn->in_spatial[s]];
		a_p[s] = sp;
		sp *= pe[s];
	}
	int32_t vn = fold ? ns : 0, vc = vn + 1, vq = fold ? 0 : 2; /* view dim of n, c, q[0] */
	int64_t ad[1] = { N * Cout * nph * npp };
	ncc_view_t acc;
	if ((st = ncc_lower_temp_view(ctx, ISA_DT_F32, 1, ad, &acc)) != NCC_OK ||
	    (st = ncc_lower_const_scalar(ctx, ISA_DT_F32, 0, &zero)) != NCC_OK)
		return st;
	ncc_view_t z = ncc_view_bcast_scalar(&zero, acc.rank, acc.dims);
	if ((st = ncc_lower_copy(ctx, inst, &acc, &z)) != NCC_OK)
		return st;
	for (int64_t kp = 0; kp < nk; kp++) {
		/* tap k, in G's row kg (the kernel's memory order when read in place) */
		int64_t k[NCC_MAX_RANK], rem = kp, kg = 0;
		for (int32_t s = ns - 1; s >= 0; s--) {
			int64_t len = kv->dims[dn->k_spatial[s]];
			k[s] = rem % len;
			rem /= len;
		}
		for (int32_t s = 0; s < ns; s++) {
			int64_t len = kv->dims[dn->k_spatial[s]];
			kg = kg * len + (in_place && flip[s] ? len - 1 - k[s] : k[s]);
		}
		ncc_view_t av = acc, gv = g;
		av.rank = gv.rank = 2 + ns;
		av.dims[vn] = gv.dims[vn] = N;
		av.strides[vn] = a_n;
		gv.strides[vn] = g_n;
		av.dims[vc] = gv.dims[vc] = Cout;
		av.strides[vc] = a_c;
		gv.strides[vc] = g_c;
		int64_t aoff = 0, rlin = 0, goff = kg * g_k;
		bool empty = false;
		for (int32_t s = 0; s < ns; s++) {
			int64_t d = ph[s], lo = w->dims[s].pad_lo;
			int64_t Y = out->dims[dn->out_spatial[s]], Q = x->dims[dn->in_spatial[s]];
			/* y = lo + d*q - k = r + d*(q + base), y in [0, Y), q in [0, Q) */
			int64_t r = ((lo - k[s]) % d + d) % d, base = (lo - k[s] - r) / d;
			int64_t cnt = div_ceil(Y - r, d);
			int64_t q0 = -base > 0 ? -base : 0, q1 = cnt - 1 - base;
			if (q1 > Q - 1)
				q1 = Q - 1;
			if (q1 < q0) {
				empty = true;
				break;
			}
			rlin = rlin * d + r;
			av.dims[vq + s] = gv.dims[vq + s] = q1 - q0 + 1;
			av.strides[vq + s] = a_p[s];
			gv.strides[vq + s] = g_q[s];
			aoff += (q0 + base) * a_p[s];
			goff += q0 * g_q[s];
		}
		if (empty)
			continue;
		av.offset = acc.offset + (uint64_t)((rlin * a_r + aoff) * 4);
		gv.offset = g.offset + (uint64_t)(goff * 4);
		ncc_view_t in2[2] = { av, gv };
		if ((st = ncc_lower_alu(ctx, inst, ISA_ALU_ADD, &av, 2, in2)) != NCC_OK)
			return st;
	}
	/* out[n, c, r + d*p] = Acc[n, c, r, p], one COPY per phase */
	for (int64_t rp = 0; rp < nph; rp++) {
		int64_t r[NCC_MAX_RANK], rem = rp;
		for (int32_t s = ns - 1; s >= 0; s--) {
			r[s] = rem % ph[s];
			rem /= ph[s];
		}
		ncc_view_t ov = *out, av = acc;
		ov.rank = av.rank = 2 + ns;
		ov.dims[vn] = av.dims[vn] = N;
		ov.strides[vn] = out->strides[dn->out_batch];
		av.strides[vn] = a_n;
		ov.dims[vc] = av.dims[vc] = Cout;
		ov.strides[vc] = out->strides[dn->out_feature];
		av.strides[vc] = a_c;
		int64_t ooff = (int64_t)out->offset;
		bool empty = false;
		for (int32_t s = 0; s < ns; s++) {
			int64_t so = out->strides[dn->out_spatial[s]];
			int64_t cnt = div_ceil(out->dims[dn->out_spatial[s]] - r[s], ph[s]);
			empty |= cnt <= 0;
			ov.dims[vq + s] = av.dims[vq + s] = cnt;
			ov.strides[vq + s] = so * ph[s];
			av.strides[vq + s] = a_p[s];
			ooff += r[s] * so * 4;
		}
		if (empty)
			continue;
		ov.offset = (uint64_t)ooff;
		av.offset = acc.offset + (uint64_t)(rp * a_r * 4);
		if ((st = ncc_lower_copy(ctx, inst, &ov, &av)) != NCC_OK)
			return st;
	}
	return NCC_OK;
}

/*
 * Pointwise convolutions (1x1 kernel, unit dilations, no padding) of small
 * images, the batch folded into one GEMM: acc [O, (n, y...)] = W [O, C] x
 * X' [C, (n, y...)], X' the (strided) input window copied channel-major, acc
 * copied into out (or out itself when its (n, y...) fold into one run).
 * ncc_lower_conv's per-image GEMMs have a dim of ny positions: MobileNetV2's
 * 960->320 over 8 4x4 images took 0.91 ms as 8 GEMMs with M = 16, 0.37 ms
 * folded; its 160->960 over 7x7 images 0.96 -> 0.65 ms. (Folding the
 * weight gradients' K the same way gained nothing at 4x4 and lost at 7x7:
 * their per-image GEMMs keep a long contraction.) *out_done false (nothing
 * emitted) when the form does not apply.
 */
ncc_status_t ncc_lower_conv_dense_folded(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst,
					 const ncc_view_t *x, const ncc_view_t *kv, const ncc_view_t *out,
					 bool *out_done)
{
	*out_done = false;
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	if (!conv_dense_f32(inst, x, kv, out, true))
		return NCC_OK;
	int64_t nk = 1, ny = 1;
	for (int32_t s = 0; s < ns; s++) {
		const ncc_window_dim_t *wd = &w->dims[s];
		if (wd->lhs_dilation != 1 || wd->rhs_dilation != 1 || wd->pad_lo != 0 || wd->pad_hi > 0)
			return NCC_OK; /* a padded or dilated window: ncc_lower_conv's */
		nk *= kv->dims[dn->k_spatial[s]];
		ny *= out->dims[dn->out_spatial[s]];
	}
	int64_t N = x->dims[dn->in_batch], C = x->dims[dn->in_feature];
	int64_t Cout = out->dims[dn->out_feature];
	if (nk != 1 || ny <= 1 || ny >= CONV_FOLD_POSITIONS || N <= 1)
		return NCC_OK;
	ncc_status_t st;
	/* X' [C][N][Y...]: the window x[n, c, y * stride] */
	ncc_view_t xw = *x;
	int64_t d[NCC_MAX_RANK] = { dn->in_feature, dn->in_batch };
	for (int32_t s = 0; s < ns; s++) {
		int64_t ds = dn->in_spatial[s];
		xw.dims[ds] = out->dims[dn->out_spatial[s]];
		xw.strides[ds] = x->strides[ds] * w->dims[s].stride;
		d[2 + s] = ds;
	}
	ncc_view_t xt, acc;
	if ((st = conv_dense_copy(ctx, inst, &xw, d, 2 + ns, &xt)) != NCC_OK)
		return st;
	*out_done = true;
	int64_t sof, ys;
	bool direct;
	if ((st = conv_acc_rows(ctx, out, dn, &acc, &sof, &ys, &direct)) != NCC_OK)
		return st;
	isa_ap_t ac, aa, ab;
	mm_ap(&aa, kv, kv->offset, 1, 0, Cout, kv->strides[dn->k_out_feature], C,
	      kv->strides[dn->k_in_feature]);
	mm_ap(&ab, &xt, xt.offset, 1, 0, C, N * ny, N * ny, 1);
	mm_ap(&ac, &acc, acc.offset, 1, 0, Cout, sof, N * ny, ys);
	if ((st = emit_mm(ctx, inst, false, &ac, &aa, &ab)) != NCC_OK || direct)
		return st;
	/* out[n, o, y...] = acc[o][n][y...] */
	return conv_acc_out(ctx, inst, out, &acc, ny, N * ny);
}
