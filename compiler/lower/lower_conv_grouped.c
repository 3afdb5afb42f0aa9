/* Lowering of depthwise and grouped f32 convolutions (feature or batch groups), and of dense ones over large planes, to one CONV instruction (ISA 1.4). */
#include "lower_internal.h"

/*
 * XLA's grouped forms map onto CONV's [N, G, C, X...] x [G, O, C, K...] -> [N, G, O, Y...]
 * by strides alone:
 *   feature groups G:  in [N, G, C/G, X]   kernel [G, Cout/G, C/G, K]  out [N, G, Cout/G, Y]
 *   batch groups BG:   in [N/BG, BG, C, X] kernel [BG, Cout/BG, C, K]  out [N/BG, BG, Cout/BG, Y]
 * (batch group g takes the input batches [g N/BG, (g + 1) N/BG), as XLA splits them).
 * Windows keep their stride, padding and both dilations; a reversed kernel is a negative
 * stride. One spatial dim becomes the second with a size-1 first dim.
 */
/* Output planes (forward-like) or kernel planes (weight-gradient-like: the
 * activation map as kernel) from which a dense convolution runs as one CONV
 * (the firmware's forms G and P: im2col bands multiplied in each thread's
 * cache, an item per image and band, or per batch entry into partial sums)
 * rather than as im2col COPYs and MATMULs over whole images
 * (lower_conv_dense.c): below it, those batch several images' small planes
 * into one wide product, which reads the kernel once for all. */
#define CONV_BANDED_MIN_PLANE 256
/* Weight gradients of fewer taps (down to 8x8 planes) go to form P too when
 * their outputs are few: as register tiles (AVX-512) ResNet's 3x3 128->128
 * over 8 8x8 images ran 0.53x the MATMULs' time, as T and sgemm (now run
 * only without AVX2) 0.74-0.82x; with 256 channels over 14x14 (590K
 * outputs, 2.4 MB of partial sums per batch entry) T and sgemm ran
 * 1.10-1.15x slower, and 7x7 planes (49 taps) gained nothing either way.
 * A strided forward's weight gradient (kernel dilation along the first
 * spatial dim) goes to form P like the others: as tiles ResNet's 3x3
 * stride-2 64->128 over 8 images ran 0.50-0.56x the MATMULs' time, its 7x7
 * stride-2 3-channel stem (21 rows per product) 0.85x on one CPU and 0.43x
 * on two (the MATMULs, one per image into the same sums, use one), with
 * AVX2 alone 0.8x and 0.4x; over 224x224 images 1.03x and 0.49x. Only
 * without AVX2, where T is built once per output row, does the stem run
 * slower (2.2-2.9x over 64x64). */
#define CONV_WGRAD_MIN_TAPS 64
#define CONV_WGRAD_SMALL_OUTPUTS (1 << 18)
/* Forward convolutions of smaller planes, down to CONV_SMALL_PLANE_MIN
 * outputs per plane, go to CONV too when their sums are at least
 * CONV_SMALL_PLANE_DEPTH deep (C x the taps) and their outputs (N x the
 * plane) at most CONV_SMALL_PLANE_ROWS per channel: the firmware runs them
 * as form P's register tiles on CPUs with AVX2 and FMA (a unit's sums, 32
 * channels of them, stay within 256 KiB), as form G elsewhere. ResNet's
 * 3x3 128 -> 128 over 8 8x8 images ran 0.80-0.84x the MATMULs' time on one
 * CPU and 0.52x on two (MATMULs of 25M multiply-adds gain little from a
 * second CPU), 256 -> 256 over 4x4 0.74-0.77x and 0.55x; with AVX2 alone
 * (oneDNN capped too) 1.0x and 0.75x over 8x8, 0.87x and 0.65x over 4x4.
 * Without AVX2 form G runs 4x4 planes 1.6x slower than the MATMULs. Planes
 * smaller than the kernel (ResNet's 2x2 under a 3x3) keep the MATMULs:
 * there the tiles spent a third of their time transposing the kernel and
 * ran 1.1x slower on one CPU (input gradients 1.4x), and form G does not
 * take them. */
#define CONV_SMALL_PLANE_MIN 16
#define CONV_SMALL_PLANE_DEPTH 256
#define CONV_SMALL_PLANE_ROWS 2048

/* Whether a dense (ungrouped) convolution is one for form G or P: no input
 * dilation, more than one tap, at least 16 outputs, and
 *   forward-like (no more taps than output positions: forward convolutions
 *   and their stride-1 input gradients): output planes of
 *   CONV_BANDED_MIN_PLANE (or CONV_SMALL_PLANE_MIN with the depth and
 *   outputs of CONV_SMALL_PLANE_*), a product at least 64 deep, and stride
 *   1 along the first of two spatial dims (form G copies the input once per kernel
 *   column, not per tap) or too few channels for that (C x K1 under 64: a
 *   stem, whose im2col form G builds in cache where the GEMMs of
 *   lower_conv_dense.c sent 4 MB chunks through L3: ResNet's 7x7 stride-2
 *   stem over 8 224x224 images 0.83x the time on 1 and 2 CPUs). A strided
 *   3x3 of 64 channels keeps the GEMMs: as form G it ran 1.13x slower on
 *   one CPU (0.88x on two);
 *   weight-gradient-like (more taps than outputs): CONV_BANDED_MIN_PLANE
 *   taps (or CONV_WGRAD_MIN_TAPS with at most CONV_WGRAD_SMALL_OUTPUTS
 *   outputs), more than one output position (a pointwise convolution's
 *   gradient is one product over the input as it lies: as form P, which
 *   copies it into T, MobileNetV2's 96->24 over 56x56 ran 0.90 -> 1.50 ms),
 *   at least 2 batch entries (CONV's C, form P's items without AVX2) and
 *   16 rows per product (the kernel's input channels x the last output
 *   dim), partial sums within ISA_CONV_PSUM_FLOATS. */
static bool conv_dense_banded(const ncc_inst_t *inst, const ncc_view_t *x, const ncc_view_t *k,
			      const ncc_view_t *out)
{
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	int64_t taps = 1, plane = 1;
	for (int32_t s = 0; s < ns; s++) {
		if (w->dims[s].lhs_dilation != 1)
			return false;
		taps *= k->dims[dn->k_spatial[s]];
		plane *= out->dims[dn->out_spatial[s]];
	}
	int64_t N = x->dims[dn->in_batch], C = x->dims[dn->in_feature], O = out->dims[dn->out_feature];
	if (ns < 1 || taps <= 1 || O < 16)
		return false;
	/* the last spatial dim's sizes, and the first's (1 with one spatial dim) */
	int64_t y1 = out->dims[dn->out_spatial[ns - 1]], k1 = k->dims[dn->k_spatial[ns - 1]];
	int64_t y0 = ns == 2 ? out->dims[dn->out_spatial[0]] : 1;
	int64_t k0 = ns == 2 ? k->dims[dn->k_spatial[0]] : 1;
	if (taps <= plane) /* form G: its im2col buffer and products for one output row */
		return (plane >= CONV_BANDED_MIN_PLANE ||
			(plane >= CONV_SMALL_PLANE_MIN && C * taps >= CONV_SMALL_PLANE_DEPTH &&
			 N * plane <= CONV_SMALL_PLANE_ROWS)) &&
		       C * taps >= 64 &&
		       (ns == 1 || w->dims[0].stride == 1 || C * k1 < 64) &&
		       C * k1 * (1 + (k0 - 1) * (ns == 2 ? w->dims[0].rhs_dilation : 1)) * y1 <=
			       ISA_CONV_SCRATCH_FLOATS && O * y1 <= ISA_CONV_SCRATCH_FLOATS;
	/* form P: T for one kernel row, a batch entry's kernel packed */
	return (taps >= CONV_BANDED_MIN_PLANE ||
		(taps >= CONV_WGRAD_MIN_TAPS && N * O * plane <= CONV_WGRAD_SMALL_OUTPUTS)) &&
	       plane > 1 && C >= 2 && N * y1 >= 16 &&
	       N * O * plane <= ISA_CONV_PSUM_FLOATS / C &&
	       N * y1 * k1 * (1 + (ns == 2 && w->dims[0].rhs_dilation == 1 ? (y0 - 1) * w->dims[0].stride : 0)) <=
		       ISA_CONV_SCRATCH_FLOATS &&
	       O * taps <= ISA_CONV_SCRATCH_FLOATS;
}

ncc_status_t ncc_lower_conv_grouped(ncc_lower_ctx_t *ctx, const ncc_inst_t *inst, const ncc_view_t *x,
				    const ncc_view_t *k, const ncc_view_t *out, bool *out_done)
{
	*out_done = false;
	const ncc_conv_dnums_t *dn = inst->conv;
	const ncc_window_t *w = inst->window;
	int32_t ns = dn->nspatial;
	/* the kernel with reversed spatial dims where the window says so */
	ncc_view_t kr = *k;
	const ncc_view_t *kv = &kr;
	for (int32_t s = 0; s < ns; s++) {
		int64_t d = dn->k_spatial[s], n = k->dims[d];
		if (w->dims[s].reversal && n > 0) {
			kr.offset = (uint64_t)((int64_t)kr.offset + (n - 1) * kr.strides[d] * 4);
			kr.strides[d] = -kr.strides[d];
		}
	}
	int64_t G = inst->feature_group_count > 1 ? inst->feature_group_count : 1;
	int64_t BG = inst->batch_group_count > 1 ? inst->batch_group_count : 1;
	if ((G == 1 && BG == 1 && !conv_dense_banded(inst, x, k, out)) || (ns != 1 && ns != 2) ||
	    x->dtype != ISA_DT_F32 || kv->dtype != ISA_DT_F32 || out->dtype != ISA_DT_F32)
		return NCC_OK;
	for (int32_t s = 0; s < ns; s++) {
		const ncc_window_dim_t *wd = &w->dims[s];
		if (wd->stride < 1 || wd->rhs_dilation < 1 || wd->lhs_dilation < 1 ||
		    wd->stride > ISA_CONV_MAX_WINDOW || wd->rhs_dilation > ISA_CONV_MAX_WINDOW ||
		    wd->lhs_dilation > ISA_CONV_MAX_WINDOW || wd->pad_lo > ISA_CONV_MAX_WINDOW ||
		    wd->pad_lo < -ISA_CONV_MAX_WINDOW)
			return NCC_OK;
	}
	int64_t N = x->dims[dn->in_batch], C = x->dims[dn->in_feature];
	int64_t Cout = out->dims[dn->out_feature];
	int64_t GE = G * BG, On = Cout / GE, Nb = N / BG, Cc = BG > 1 ? C : C / G;
	int64_t sb = x->strides[dn->in_batch], sf = x->strides[dn->in_feature];
	int64_t sko = kv->strides[dn->k_out_feature], ski = kv->strides[dn->k_in_feature];
	int64_t sob = out->strides[dn->out_batch], sof = out->strides[dn->out_feature];

	isa_insn_t in = isa_insn_init(ISA_OP_CONV, 0);
	in.n_ap = 4;
	isa_ap_t *a0 = &in.ap[0], *a1 = &in.ap[1], *a2 = &in.ap[2];
	a0->region = out->region; a0->dtype = ISA_DT_F32; a0->offset = out->offset; a0->rank = 5;
	a1->region = x->region; a1->dtype = ISA_DT_F32; a1->offset = x->offset; a1->rank = 5;
	a2->region = kv->region; a2->dtype = ISA_DT_F32; a2->offset = kv->offset; a2->rank = 5;
	int64_t n1 = BG > 1 ? Nb : N;
	a1->shape[0] = (uint64_t)n1; a1->stride[0] = sb;
	a1->shape[1] = (uint64_t)GE; a1->stride[1] = BG > 1 ? Nb * sb : Cc * sf;
	a1->shape[2] = (uint64_t)Cc; a1->stride[2] = sf;
	a2->shape[0] = (uint64_t)GE; a2->stride[0] = On * sko;
	a2->shape[1] = (uint64_t)On; a2->stride[1] = sko;
	a2->shape[2] = (uint64_t)Cc; a2->stride[2] = ski;
	a0->shape[0] = (uint64_t)n1; a0->stride[0] = sob;
	a0->shape[1] = (uint64_t)GE; a0->stride[1] = On * sof;
	a0->shape[2] = (uint64_t)On; a0->stride[2] = sof;
	int64_t st[2] = { 1, 1 }, rd[2] = { 1, 1 }, ld[2] = { 1, 1 }, lo[2] = { 0, 0 };
	for (int32_t i = 0; i < 2; i++) {
		int32_t s = i - (2 - ns); /* the spatial dim, or -1 for the size-1 one */
		isa_ap_t *aps[3] = { a0, a1, a2 };
		if (s < 0) {
			for (int a = 0; a < 3; a++) {
				aps[a]->shape[3 + i] = 1;
				aps[a]->stride[3 + i] = 0;
			}
			continue;
		}
		a0->shape[3 + i] = (uint64_t)out->dims[dn->out_spatial[s]];
		a0->stride[3 + i] = out->strides[dn->out_spatial[s]];
		a1->shape[3 + i] = (uint64_t)x->dims[dn->in_spatial[s]];
		a1->stride[3 + i] = x->strides[dn->in_spatial[s]];
		a2->shape[3 + i] = (uint64_t)kv->dims[dn->k_spatial[s]];
		a2->stride[3 + i] = kv->strides[dn->k_spatial[s]];
		st[i] = w->dims[s].stride;
		rd[i] = w->dims[s].rhs_dilation;
		ld[i] = w->dims[s].lhs_dilation;
		lo[i] = w->dims[s].pad_lo;
	}
	/* size-1 dims carry no stride: the NEFF does not depend on it */
	for (int i = 0; i < 5; i++) {
		if (a0->shape[i] == 1)
			a0->stride[i] = 0;
		if (a1->shape[i] == 1)
			a1->stride[i] = 0;
		if (a2->shape[i] == 1)
			a2->stride[i] = 0;
	}
	in.ap[3] = isa_conv_window(st, rd, ld, lo);
	ns_status_t vs = isa_insn_validate(&in, ISA_REGION_NONE, 1);
	if (vs) {
		ns_status_ignore(vs); /* e.g. beyond the work bound: the MATMUL lowering splits it */
		return NCC_OK;
	}
	*out_done = true;
	return ncc_lower_emit(ctx, inst, ISA_ENGINE_VECTOR, &in, NULL);
}
