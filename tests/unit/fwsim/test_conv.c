/* CONV (ISA 1.4) against a naive double-precision reference: windows (padding, strides, both dilations), groups, layouts, NaN/Inf records, thread counts, deadlines. */
#include <stdbool.h>

#include "conv.h"
#include "fwsim_test.h"

#define C_NREG 4
#define C_REGSZ (8u << 20)

typedef struct cmem {
	uint8_t *mem;
	uint64_t size;
	fwsim_region_t regions[C_NREG];
} cmem_t;

/* One convolution: out [N, G, O, Y0, Y1] = in [N, G, C, X0, X1] (*) w [G, O, C, K0, K1]. */
typedef struct cspec {
	int64_t N, G, O, C, X[2], K[2], S[2], D[2], L[2], P[2];
	int layout; /* 0 row-major; 1 input channels innermost, reversed kernel, strided output;
		     * 2 row-major but the output's channels innermost (a weight gradient's 01bf) */
} cspec_t;

/* Output size of one dim: the positions whose window starts inside the padded,
 * dilated input ("valid" over P low zeros and as many high ones). */
static int64_t c_out_dim(const cspec_t *c, int s)
{
	int64_t xd = c->X[s] > 0 ? (c->X[s] - 1) * c->L[s] + 1 : 0;
	int64_t kd = (c->K[s] - 1) * c->D[s] + 1;
	int64_t span = xd + 2 * c->P[s] - kd;
	return span < 0 ? 0 : span / c->S[s] + 1;
}

typedef struct cconv {
	cspec_t c;
	int64_t Y[2];
	isa_insn_t in;
	float *x, *w, *o; /* host pointers of element [0,...,0] */
} cconv_t;

static isa_ap_t c_ap5(uint32_t r, uint64_t off, const int64_t *shape, const int64_t *stride)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = r;
	ap.offset = off;
	ap.dtype = ISA_DT_F32;
	ap.rank = 5;
	for (int i = 0; i < 5; i++) {
		ap.shape[i] = (uint64_t)shape[i];
		ap.stride[i] = stride[i];
	}
	return ap;
}

static void c_rowmajor(const int64_t *shape, int64_t *stride, int64_t scale)
{
	int64_t s = scale;
	for (int i = 4; i >= 0; i--) {
		stride[i] = s;
		s *= shape[i];
	}
}

/* Lays the operands out in m (input region 0, kernel 1, output 2) and fills
 * input and kernel with small values of a seeded generator. */
static void c_build(cmem_t *m, const cspec_t *c, cconv_t *cv, uint32_t seed)
{
	memset(cv, 0, sizeof(*cv));
	cv->c = *c;
	for (int s = 0; s < 2; s++)
		cv->Y[s] = c_out_dim(c, s);
	int64_t xs[5] = { c->N, c->G, c->C, c->X[0], c->X[1] };
	int64_t ws[5] = { c->G, c->O, c->C, c->K[0], c->K[1] };
	int64_t os[5] = { c->N, c->G, c->O, cv->Y[0], cv->Y[1] };
	int64_t xst[5], wst[5], ost[5];
	uint64_t xoff = 0, woff = 0;
	if (c->layout == 0 || c->layout == 2) {
		c_rowmajor(xs, xst, 1);
		c_rowmajor(ws, wst, 1);
		c_rowmajor(os, ost, 1);
		if (c->layout == 2) { /* [N, G, Y0, Y1, O] */
			ost[2] = 1;
			ost[4] = c->O;
			ost[3] = c->O * cv->Y[1];
			ost[1] = ost[3] * cv->Y[0];
			ost[0] = ost[1] * c->G;
		}
	} else {
		/* input [N, X0, X1, G, C] (channels innermost), kernel with both
		 * spatial dims reversed, output with every element 2 apart */
		xst[2] = 1;
		xst[1] = c->C;
		xst[4] = c->C * c->G;
		xst[3] = xst[4] * c->X[1];
		xst[0] = xst[3] * c->X[0];
		c_rowmajor(ws, wst, 1);
		woff = (uint64_t)((c->K[0] - 1) * wst[3] + (c->K[1] - 1) * wst[4]) * 4;
		wst[3] = -wst[3];
		wst[4] = -wst[4];
		c_rowmajor(os, ost, 2);
	}
	cv->in = isa_insn_init(ISA_OP_CONV, 0);
	cv->in.n_ap = 4;
	cv->in.ap[0] = c_ap5(2, 0, os, ost);
	cv->in.ap[1] = c_ap5(0, xoff, xs, xst);
	cv->in.ap[2] = c_ap5(1, woff, ws, wst);
	cv->in.ap[3] = isa_conv_window(c->S, c->D, c->L, c->P);
	cv->x = (float *)(void *)(m->mem + m->regions[0].addr + xoff);
	cv->w = (float *)(void *)(m->mem + m->regions[1].addr + woff);
	cv->o = (float *)(void *)(m->mem + m->regions[2].addr);
	uint64_t st = seed * 2654435761u + 1;
	float *xr = (float *)(void *)(m->mem + m->regions[0].addr);
	float *wr = (float *)(void *)(m->mem + m->regions[1].addr);
	for (uint64_t i = 0; i < C_REGSZ / 4; i++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		xr[i] = (float)((int)(st >> 40) % 17 - 8) / 8.0f;
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		wr[i] = (float)((int)(st >> 40) % 13 - 6) / 16.0f;
		if (wr[i] == 0.0f)
			wr[i] = 0.5f; /* no zero weights: a NaN or Inf input must show */
	}
	memset(m->mem + m->regions[2].addr, 0x7f, C_REGSZ); /* garbage where outputs go */
}

static int64_t c_off(const isa_ap_t *ap, const int64_t *idx)
{
	int64_t e = 0;
	for (int i = 0; i < 5; i++)
		e += idx[i] * ap->stride[i];
	return e;
}

/* The definition of docs/isa.md, term by term in double; *mag = sum |terms|. */
static double c_ref(const cconv_t *cv, const int64_t *oi, double *mag)
{
	const cspec_t *c = &cv->c;
	double s = 0, a = 0;
	for (int64_t ch = 0; ch < c->C; ch++)
		for (int64_t k0 = 0; k0 < c->K[0]; k0++)
			for (int64_t k1 = 0; k1 < c->K[1]; k1++) {
				int64_t j[2], kk[2] = { k0, k1 };
				bool in = true;
				for (int d = 0; d < 2; d++) {
					j[d] = oi[3 + d] * c->S[d] + kk[d] * c->D[d] - c->P[d];
					in = in && j[d] >= 0 && j[d] % c->L[d] == 0 && j[d] / c->L[d] < c->X[d];
				}
				if (!in)
					continue;
				int64_t xi[5] = { oi[0], oi[1], ch, j[0] / c->L[0], j[1] / c->L[1] };
				int64_t wi[5] = { oi[1], oi[2], ch, k0, k1 };
				double t = (double)cv->x[c_off(&cv->in.ap[1], xi)] *
					   (double)cv->w[c_off(&cv->in.ap[2], wi)];
				s += t;
				a += fabs(t);
			}
	*mag = a;
	return s;
}

static void cmem_init(cmem_t *m)
{
	m->size = (uint64_t)C_NREG * C_REGSZ;
	m->mem = aligned_alloc(64, m->size);
	ck_assert_ptr_nonnull(m->mem);
	for (uint32_t r = 0; r < C_NREG; r++)
		m->regions[r] = (fwsim_region_t){ (uint64_t)r * C_REGSZ, C_REGSZ };
}

static fwsim_status_t c_run(cmem_t *m, const isa_insn_t *in, uint32_t flags, uint64_t deadline_ns,
			    fwsim_job_t *job)
{
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = in };
	uint32_t n[ISA_ENGINE_COUNT] = { [ISA_ENGINE_VECTOR] = 1 };
	fwsim_program_t *p = NULL;
	char err[200];
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(s, n, C_NREG, &p),
						err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	*job = (fwsim_job_t){ .program = p, .mem = m->mem, .mem_size = m->size, .regions = m->regions,
			      .n_regions = C_NREG, .flags = flags, .deadline_ns = deadline_ns };
	fwsim_core_t *core;
	ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_status_t st = fwsim_core_execute(core, job);
	fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	job->program = NULL;
	return st;
}

/* Runs the spec and compares every output with the reference. */
static void c_check(const cspec_t *c, const char *what)
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	c_build(&m, c, &cv, 7);
	fwsim_job_t job;
	ck_assert_msg(c_run(&m, &cv.in, FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, 0, &job) == FWSIM_OK,
		      "%s: %s", what, job.error.message);
	int64_t oi[5];
	uint64_t n = 0;
	for (oi[0] = 0; oi[0] < c->N; oi[0]++)
		for (oi[1] = 0; oi[1] < c->G; oi[1]++)
			for (oi[2] = 0; oi[2] < c->O; oi[2]++)
				for (oi[3] = 0; oi[3] < cv.Y[0]; oi[3]++)
					for (oi[4] = 0; oi[4] < cv.Y[1]; oi[4]++, n++) {
						double mag, want = c_ref(&cv, oi, &mag);
						double got = cv.o[c_off(&cv.in.ap[0], oi)];
						T_CHECK(fabs(got - want) <= 1e-6 * mag + 1e-30,
							"%s: out[%lld,%lld,%lld,%lld,%lld] = %.9g, want %.9g",
							what, (long long)oi[0], (long long)oi[1], (long long)oi[2],
							(long long)oi[3], (long long)oi[4], got, want);
					}
	ck_assert_msg(n > 0, "%s: no outputs", what);
	/* the FLOP rule: every output its whole window */
	ck_assert_uint_eq(job.flops, 2 * n * (uint64_t)(c->C * c->K[0] * c->K[1]));
	free(m.mem);
}

#define SPEC(...) ((cspec_t){ __VA_ARGS__ })

static const cspec_t dw_specs[] = {
	SPEC(.N = 2, .G = 11, .O = 1, .C = 1, .X = { 9, 13 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 16, .O = 1, .C = 1, .X = { 20, 7 }, .K = { 3, 3 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 9, .O = 2, .C = 1, .X = { 12, 17 }, .K = { 3, 3 }, .S = { 1, 2 },
	     .D = { 2, 1 }, .L = { 1, 1 }, .P = { 2, 0 }),
	SPEC(.N = 2, .G = 8, .O = 1, .C = 1, .X = { 11, 24 }, .K = { 3, 3 }, .S = { 1, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { -1, -2 }),
	SPEC(.N = 1, .G = 12, .O = 1, .C = 1, .X = { 5, 8 }, .K = { 2, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 4, 5 }),
	/* unit column stride, form D's AVX-512 pairs: 21 columns (blocks of 16,
	 * the last moved back) with dilation 2, 14 (7 pairs), 1 (the odd one) */
	SPEC(.N = 1, .G = 8, .O = 1, .C = 1, .X = { 6, 21 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 2 }, .L = { 1, 1 }, .P = { 1, 2 }),
	SPEC(.N = 2, .G = 10, .O = 1, .C = 1, .X = { 4, 14 }, .K = { 3, 3 }, .S = { 2, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 9, .O = 1, .C = 1, .X = { 7, 1 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	/* form R (3x3, AVX-512): rows of 3 chunks of 16 outputs, the last
	 * partial; 37 rows in blocks of 8, the last moved back; then stride 2
	 * over a plane large enough to prefetch, a channel multiplier */
	SPEC(.N = 2, .G = 9, .O = 1, .C = 1, .X = { 37, 41 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 8, .O = 2, .C = 1, .X = { 70, 67 }, .K = { 3, 3 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
};
#define DW_N_SPECS (sizeof(dw_specs) / sizeof(dw_specs[0]))

/* Depthwise weight gradients' shapes (few outputs, long windows, 8 or more
 * groups): forms E and W. Output blocks of 9, 9 + 1, 9 + 7; a channel multiplier;
 * dilation; stride. Then small planes (7x7, 4x4 and 5x3 windows over
 * 3x3 outputs), whose output rows under 8 long take form E as well, with
 * input rows of 7, 4 and 3 (the masked row loads) and a partial last block
 * of groups. */
static const cspec_t dwg_specs[] = {
	SPEC(.N = 1, .G = 10, .O = 1, .C = 5, .X = { 7, 7 }, .K = { 7, 7 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 8, .O = 1, .C = 3, .X = { 4, 4 }, .K = { 4, 4 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 9, .O = 1, .C = 2, .X = { 5, 3 }, .K = { 5, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 10, .O = 1, .C = 3, .X = { 14, 13 }, .K = { 14, 13 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 2, .G = 9, .O = 2, .C = 2, .X = { 23, 22 }, .K = { 11, 11 }, .S = { 1, 1 },
	     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 0 }),
	SPEC(.N = 1, .G = 16, .O = 1, .C = 4, .X = { 16, 16 }, .K = { 12, 12 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	/* form W (3x3 outputs, AVX-512): kernel rows of 3 chunks (16, 16, 5)
	 * and an odd number of groups (planes in pairs, one alone); dilation 2
	 * with a channel multiplier and batch entries; planes past 16 KiB
	 * (prefetch ahead) at dilations 1 and 2, 5 and 4 chunks */
	SPEC(.N = 1, .G = 9, .O = 1, .C = 3, .X = { 36, 37 }, .K = { 36, 37 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 2, .G = 8, .O = 2, .C = 2, .X = { 25, 23 }, .K = { 13, 12 }, .S = { 1, 1 },
	     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 8, .O = 1, .C = 2, .X = { 70, 70 }, .K = { 70, 70 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 8, .O = 1, .C = 2, .X = { 113, 113 }, .K = { 57, 57 }, .S = { 1, 1 },
	     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 1 }),
};
#define DWG_N_SPECS (sizeof(dwg_specs) / sizeof(dwg_specs[0]))

START_TEST(test_depthwise_and_grouped_windows_match_reference)
{
	for (int layout = 0; layout < 2; layout++) {
		/* depthwise 3x3, stride 1, padding 1 */
		c_check(&SPEC(.N = 2, .G = 5, .O = 1, .C = 1, .X = { 9, 11 }, .K = { 3, 3 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }, .layout = layout),
			"dw s1");
		/* grouped, stride 2, channels and widths off the vector width */
		c_check(&SPEC(.N = 1, .G = 3, .O = 2, .C = 3, .X = { 10, 17 }, .K = { 3, 3 },
			      .S = { 2, 2 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }, .layout = layout),
			"grouped s2");
		/* padding larger than the kernel */
		c_check(&SPEC(.N = 1, .G = 2, .O = 1, .C = 2, .X = { 5, 4 }, .K = { 2, 3 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 4, 5 }, .layout = layout),
			"pad > kernel");
		/* stride larger than the kernel (inputs skipped) */
		c_check(&SPEC(.N = 2, .G = 3, .O = 1, .C = 1, .X = { 13, 14 }, .K = { 2, 2 },
			      .S = { 3, 4 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 0, 1 }, .layout = layout),
			"stride > kernel");
		/* kernel dilation */
		c_check(&SPEC(.N = 1, .G = 4, .O = 1, .C = 1, .X = { 12, 9 }, .K = { 3, 2 },
			      .S = { 1, 2 }, .D = { 2, 3 }, .L = { 1, 1 }, .P = { 2, 1 }, .layout = layout),
			"rhs dilation");
		/* input dilation (the input gradient of a stride-2 convolution) */
		c_check(&SPEC(.N = 2, .G = 3, .O = 1, .C = 1, .X = { 7, 6 }, .K = { 3, 3 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 2, 2 }, .P = { 1, 2 }, .layout = layout),
			"lhs dilation 2");
		/* input dilation and stride not multiples of each other: 3 phases of 2 */
		c_check(&SPEC(.N = 1, .G = 2, .O = 2, .C = 2, .X = { 8, 9 }, .K = { 4, 3 },
			      .S = { 2, 2 }, .D = { 1, 2 }, .L = { 3, 3 }, .P = { 2, 3 }, .layout = layout),
			"lhs dilation 3 stride 2");
		/* 1x1 spatial everywhere */
		c_check(&SPEC(.N = 3, .G = 9, .O = 2, .C = 3, .X = { 1, 1 }, .K = { 1, 1 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 0, 0 }, .layout = layout),
			"1x1");
		/* a 1x1 input under a 3x3 window (only the centre tap lands) */
		c_check(&SPEC(.N = 2, .G = 4, .O = 1, .C = 1, .X = { 1, 1 }, .K = { 3, 3 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }, .layout = layout),
			"1x1 input padded");
		/* negative padding (a crop) */
		c_check(&SPEC(.N = 1, .G = 3, .O = 1, .C = 2, .X = { 11, 10 }, .K = { 3, 3 },
			      .S = { 1, 2 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { -2, -1 }, .layout = layout),
			"crop");
		/* few outputs, long windows (the weight gradient's form): dot products */
		c_check(&SPEC(.N = 1, .G = 6, .O = 2, .C = 5, .X = { 14, 13 }, .K = { 13, 12 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }, .layout = layout),
			"long window");
		/* 9 outputs per plane: two groups of four and a single one */
		c_check(&SPEC(.N = 2, .G = 3, .O = 2, .C = 3, .X = { 14, 14 }, .K = { 12, 12 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 0, 0 }, .layout = layout),
			"long window, 9 outputs");
		c_check(&SPEC(.N = 2, .G = 3, .O = 1, .C = 4, .X = { 21, 20 }, .K = { 10, 10 },
			      .S = { 1, 1 }, .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 0 }, .layout = layout),
			"long dilated window");
		/* an empty input dim: every output a sum of nothing (padding only) */
		c_check(&SPEC(.N = 1, .G = 2, .O = 1, .C = 1, .X = { 0, 3 }, .K = { 1, 1 },
			      .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 0 }, .layout = layout),
			"empty input");
		/* a window too far apart for the planes: the direct loop */
		c_check(&SPEC(.N = 1, .G = 2, .O = 1, .C = 1, .X = { 3, 4 }, .K = { 2, 2 },
			      .S = { 1, 1 << 25 }, .D = { 1, 1 }, .L = { 1, 1 << 25 }, .P = { 0, 0 },
			      .layout = layout),
			"direct loop");
	}
	/* depthwise over 8 or more groups (lanes of 8 groups: a partial last
	 * block, widths below, at and past 8, stride 2, dilation, a channel
	 * multiplier, padding past the kernel, a crop) */
	for (size_t i = 0; i < DW_N_SPECS; i++)
		c_check(&dw_specs[i], "depthwise lanes");
	for (size_t i = 0; i < DWG_N_SPECS; i++)
		c_check(&dwg_specs[i], "depthwise weight gradient lanes");
}
END_TEST

/* Full-precision values in the input and kernel regions, so that a product
 * rounded before its sum (no fma) or another order of the terms shows in the
 * bits. */
static void c_fill_full(cmem_t *m, uint64_t seed)
{
	uint64_t st = seed;
	float *xr = (float *)(void *)(m->mem + m->regions[0].addr);
	float *wr = (float *)(void *)(m->mem + m->regions[1].addr);
	for (uint64_t e = 0; e < C_REGSZ / 4; e++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		xr[e] = (float)((int64_t)(st >> 40) - (1ll << 23)) / 3000000.0f;
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		wr[e] = (float)((int64_t)(st >> 40) - (1ll << 23)) / 7000000.0f;
	}
}

/* Term (c, k0, k1) of output oi: kernel x input, the input 0 in the padding. */
static void c_term(const cconv_t *cv, const int64_t *oi, int64_t c, int64_t k0, int64_t k1,
		   float *w, float *x)
{
	const cspec_t *s = &cv->c;
	int64_t j0 = oi[3] * s->S[0] + k0 * s->D[0] - s->P[0];
	int64_t j1 = oi[4] * s->S[1] + k1 * s->D[1] - s->P[1];
	int64_t xi[5] = { oi[0], oi[1], c, j0, j1 };
	int64_t wi[5] = { oi[1], oi[2], c, k0, k1 };
	bool in = j0 >= 0 && j0 < s->X[0] && j1 >= 0 && j1 < s->X[1];
	*x = in ? cv->x[c_off(&cv->in.ap[1], xi)] : 0.0f;
	*w = cv->w[c_off(&cv->in.ap[2], wi)];
}

/* Whether form W (docs/isa.md, "CONV") takes a spec: 3x3 outputs, stride 1,
 * equal kernel dilations of 1 or 2, no input dilation, contiguous rows (layout
 * 0), AVX-512F; form R, which comes first, needs one input channel. */
static bool c_form_w(const cspec_t *c)
{
	int64_t y0 = c_out_dim(c, 0), y1 = c_out_dim(c, 1);
	return fwsim_cpu_avx512() && c->layout == 0 && c->C > 1 && y0 == 3 && y1 == 3 &&
	       c->S[0] == 1 && c->S[1] == 1 && c->L[0] == 1 && c->L[1] == 1 && c->D[0] == c->D[1] &&
	       c->D[0] <= 2;
}

/* Whether form F (docs/isa.md, "CONV") takes a spec: AVX-512F, row-major
 * output planes (layout 0), strides 1 or 2, no input dilation, at least 2
 * taps and 64 terms (C K0 K1), O at least 16, planes of 256 outputs or
 * more, the padded row pitch Y1 + (K1 - 1) D1 / S1 at least 16 and at most
 * 8/7 of Y1. */
static bool c_form_f(const cspec_t *c)
{
	int64_t y0 = c_out_dim(c, 0), y1 = c_out_dim(c, 1);
	int64_t wp = y1 + (c->K[1] - 1) * c->D[1] / c->S[1];
	return fwsim_cpu_avx512() && c->layout == 0 && c->S[0] <= 2 && c->S[1] <= 2 &&
	       c->L[0] == 1 && c->L[1] == 1 && c->K[0] * c->K[1] >= 2 &&
	       c->C * c->K[0] * c->K[1] >= 64 && c->O >= 16 && y0 * y1 >= 256 && wp >= 16 &&
	       wp * 7 <= y1 * 8;
}

/* Form W's sum of output oi: lane l of 16 partial sums is a chain of fma from
 * 0 over (c, k0, chunk) of the terms at k1 = 16 chunk + l; then lanes l and
 * l + 8 are added, l and l + 4, l + 2, l + 1. */
static float c_sum_w(const cconv_t *cv, const int64_t *oi)
{
	const cspec_t *c = &cv->c;
	float part[16] = { 0 }, w, x;
	for (int64_t ch = 0; ch < c->C; ch++)
		for (int64_t k0 = 0; k0 < c->K[0]; k0++)
			for (int64_t k1 = 0; k1 < c->K[1]; k1++) {
				c_term(cv, oi, ch, k0, k1, &w, &x);
				part[k1 % 16] = fmaf(w, x, part[k1 % 16]);
			}
	for (int h = 8; h >= 1; h /= 2)
		for (int l = 0; l < h; l++)
			part[l] = part[l] + part[l + h];
	return part[0];
}

/* Forms D and R's sum of output oi (and form A's): one fma chain from 0 over
 * (c, k0, k1), padding taps included. */
static float c_sum_chain(const cconv_t *cv, const int64_t *oi)
{
	const cspec_t *c = &cv->c;
	float acc = 0.0f, w, x;
	for (int64_t ch = 0; ch < c->C; ch++)
		for (int64_t k0 = 0; k0 < c->K[0]; k0++)
			for (int64_t k1 = 0; k1 < c->K[1]; k1++) {
				c_term(cv, oi, ch, k0, k1, &w, &x);
				acc = fmaf(w, x, acc);
			}
	return acc;
}

/* Form E's: per (c, k0) a chain of fma over k1 from 0, added in that order. */
static float c_sum_e(const cconv_t *cv, const int64_t *oi)
{
	const cspec_t *c = &cv->c;
	float acc = 0.0f, w, x;
	for (int64_t ch = 0; ch < c->C; ch++)
		for (int64_t k0 = 0; k0 < c->K[0]; k0++) {
			float part = 0.0f;
			for (int64_t k1 = 0; k1 < c->K[1]; k1++) {
				c_term(cv, oi, ch, k0, k1, &w, &x);
				part = fmaf(w, x, part);
			}
			acc += part;
		}
	return acc;
}

/* Runs spec c (inputs of c_build's seed and c_fill_full's fill) and compares
 * every output's bits with want's. */
static void c_check_bits(const cspec_t *c, uint32_t seed, uint64_t fill,
			 float (*want)(const cconv_t *, const int64_t *), const char *what, size_t i)
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	c_build(&m, c, &cv, seed);
	c_fill_full(&m, fill);
	fwsim_job_t job;
	ck_assert_int_eq(c_run(&m, &cv.in, FWSIM_JOB_CHECK_NAN, 0, &job), FWSIM_OK);
	int64_t oi[5];
	for (oi[0] = 0; oi[0] < c->N; oi[0]++)
		for (oi[1] = 0; oi[1] < c->G; oi[1]++)
			for (oi[2] = 0; oi[2] < c->O; oi[2]++)
				for (oi[3] = 0; oi[3] < cv.Y[0]; oi[3]++)
					for (oi[4] = 0; oi[4] < cv.Y[1]; oi[4]++) {
						float acc = want(&cv, oi);
						float got = cv.o[c_off(&cv.in.ap[0], oi)];
						T_CHECK(memcmp(&got, &acc, 4) == 0,
							"spec %zu (%s): out[%lld,%lld,%lld,%lld,%lld] = %a, want %a",
							i, what, (long long)oi[0], (long long)oi[1],
							(long long)oi[2], (long long)oi[3], (long long)oi[4], got,
							acc);
					}
	free(m.mem);
}

/* Depthwise over 8 or more groups runs as forms D or R (forward shapes) and
 * E or W (weight-gradient shapes), whose orders docs/isa.md states: D and R
 * are form A's one fma chain per output over (k0, k1) from 0, padding taps
 * included; E sums, in (c, k0) order, a chain of fma over k1 from 0; W as
 * c_sum_w. Bit for bit. */
START_TEST(test_depthwise_lanes_bit_exact)
{
	/* without AVX2 + FMA (TSan builds too) none of these forms runs: form A
	 * takes every spec, its order another (the weight gradients sum in
	 * another order than c_sum_chain's) */
	if (!fwsim_cpu_avx2_fma())
		return;
	int n_w = 0;
	for (size_t i = 0; i < DW_N_SPECS + DWG_N_SPECS; i++) {
		bool e = i >= DW_N_SPECS;
		const cspec_t *c = e ? &dwg_specs[i - DW_N_SPECS] : &dw_specs[i];
		bool wf = e && c_form_w(c);
		n_w += wf;
		c_check_bits(c, 5, 77 + i, wf ? c_sum_w : e ? c_sum_e : c_sum_chain,
			     wf ? "form W" : e ? "form E" : "form D/R", i);
	}
	/* on a CPU with AVX-512F both E and W are checked */
	ck_assert_int_eq(n_w > 0 && n_w < (int)DWG_N_SPECS, fwsim_cpu_avx512() != 0);
}
END_TEST

/* Input gradients of stride-2 depthwise 3x3 convolutions (input dilation 2):
 * form T on AVX-512 CPUs, else form A, one order for both (docs/isa.md): per
 * output a chain of fma from 0 over its non-hole taps (the dilated input's
 * zeros, never multiplied) in (k0, k1) order, padding taps included. Rows of
 * 1 to 3 blocks of 32 columns, both parities of padding, a multiplier. */
static const cspec_t dil_specs[] = {
	SPEC(.N = 2, .G = 9, .O = 1, .C = 1, .X = { 7, 9 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 2, 2 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 3, .O = 2, .C = 1, .X = { 6, 40 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 2, 2 }, .P = { 2, 0 }),
	SPEC(.N = 1, .G = 4, .O = 1, .C = 1, .X = { 5, 16 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 2, 2 }, .P = { 0, 1 }),
};

/* The sum of output oi at input dilation 2 (stride 1, no kernel dilation,
 * one input channel): a chain of fma from 0 over the non-hole taps in (k0,
 * k1) order, padding taps included. */
static float c_sum_dilated(const cconv_t *cv, const int64_t *oi)
{
	const cspec_t *c = &cv->c;
	float acc = 0.0f;
	for (int64_t k0 = 0; k0 < c->K[0]; k0++)
		for (int64_t k1 = 0; k1 < c->K[1]; k1++) {
			int64_t j0 = oi[3] + k0 - c->P[0];
			int64_t j1 = oi[4] + k1 - c->P[1];
			if (j0 % 2 || j1 % 2)
				continue; /* a hole */
			bool in = j0 >= 0 && j0 / 2 < c->X[0] && j1 >= 0 && j1 / 2 < c->X[1];
			int64_t xi[5] = { oi[0], oi[1], 0, j0 / 2, j1 / 2 };
			int64_t wi[5] = { oi[1], oi[2], 0, k0, k1 };
			float x = in ? cv->x[c_off(&cv->in.ap[1], xi)] : 0.0f;
			acc = fmaf(cv->w[c_off(&cv->in.ap[2], wi)], x, acc);
		}
	return acc;
}

START_TEST(test_dilated_depthwise_bit_exact)
{
	for (size_t i = 0; i < sizeof(dil_specs) / sizeof(dil_specs[0]); i++) {
		c_check(&dil_specs[i], "dilated depthwise");
		c_check_bits(&dil_specs[i], 9, 91 + i, c_sum_dilated, "dilated", i);
	}
}
END_TEST

/* Dense shapes (C K0 K1 >= 64 and O >= 16): form G, im2col bands and sgemm
 * (the last in layout 0 is form F's on a CPU with AVX-512F: dense_bands).
 * Full im2col (8 channels: each product's depth from C K1 too small to
 * shift; a 7x7 stride-2 stem), the shifted form (stride 1 along dim 0,
 * kernel dilation 2 there), two groups, cropping and padding past the
 * kernel, an odd-width stride-2 plane cropped on one side (its staged
 * phases end unevenly), a 2x2 stride-3 kernel whose staged rows would pass
 * T's size (T built directly; two bands), and a 64-channel 41x40 plane cut
 * into three bands, the last one row shorter. Layout 0 writes the products into the output and reads the
 * unshifted kernel in place; layout 1 gathers channels-innermost input
 * columns, packs the reversed kernel and stores from scratch. */
static const cspec_t dense_specs[] = {
	SPEC(.N = 2, .G = 1, .O = 16, .C = 8, .X = { 13, 11 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 2, .G = 1, .O = 20, .C = 24, .X = { 12, 10 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 2, .G = 1, .O = 16, .C = 3, .X = { 23, 22 }, .K = { 7, 7 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 3, 3 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 32, .X = { 15, 14 }, .K = { 3, 3 }, .S = { 1, 2 },
	     .D = { 2, 1 }, .L = { 1, 1 }, .P = { 2, 0 }),
	SPEC(.N = 1, .G = 2, .O = 16, .C = 32, .X = { 9, 9 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 1, .O = 17, .C = 32, .X = { 8, 9 }, .K = { 2, 2 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { -1, 0 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 24, .X = { 5, 6 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 4, 3 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 5, .X = { 15, 27 }, .K = { 4, 5 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, -1 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 16, .X = { 96, 200 }, .K = { 2, 2 }, .S = { 3, 3 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 0, 0 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 64, .X = { 41, 40 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
};
#define DENSE_N_SPECS (sizeof(dense_specs) / sizeof(dense_specs[0]))
/* bands per plane: two for the 2x2 stride-3 spec, three for the last */
static const int dense_spec_bands[DENSE_N_SPECS] = { 1, 1, 1, 1, 1, 1, 1, 1, 2, 3 };

/* c_check for each spec of layouts 0 to nlayouts - 1, and that each ran
 * want(spec) units of forms G and P (bands, or input channels). */
static void c_check_units(const cspec_t *specs, size_t n, int nlayouts, const char *name,
			  uint64_t (*want)(const cspec_t *c, size_t i))
{
	for (int layout = 0; layout < nlayouts; layout++)
		for (size_t i = 0; i < n; i++) {
			cspec_t c = specs[i];
			c.layout = layout;
			char what[48];
			snprintf(what, sizeof(what), "%s spec %zu layout %d", name, i, layout);
			uint64_t units = fwsim_conv_gemm_units();
			c_check(&c, what);
			uint64_t ran = fwsim_conv_gemm_units() - units, w = want(&c, i);
			ck_assert_msg(ran == w, "%s: %llu units, want %llu", what, (unsigned long long)ran,
				      (unsigned long long)w);
		}
}

/* Form G: each plane's bands (none where form F takes the spec: the last,
 * in layout 0, on a CPU with AVX-512F). */
static uint64_t dense_bands(const cspec_t *c, size_t i)
{
	return c_form_f(c) ? 0 : (uint64_t)(c->N * c->G) * (uint64_t)dense_spec_bands[i];
}

START_TEST(test_dense_gemm_bands_match_reference)
{
	c_check_units(dense_specs, DENSE_N_SPECS, 2, "dense", dense_bands);
}
END_TEST

/* Dense weight-gradient shapes (few outputs, 64 or more taps, the batch as
 * C): form P. Without AVX-512F (capped), a partial sum per c added in c
 * order: kernel rows in one chunk of T, with a stride along dim 0 (output
 * row y0 reads T from row 2 y0) and kernel dilation 2 along dim 1; then 16
 * channels of 63x63 planes, whose 64 kernel rows take 2 chunks of 32. With
 * it, register tiles: 26 n by 40 o (units of 13 n, each two tiles of 7 and
 * 6, by a slice of 32 o and one of 8); kernel rows of 300 (the tiles'
 * blocks cut one row in two); strided forwards' gradients (kernel
 * dilation 2: without AVX-512, T built again for each output row, the
 * last in two chunks of kernel rows). Three layouts (1 packs each c's reversed
 * kernel, which the tiles transpose element by element, and gathers
 * channels-innermost input; 2 stores the output channels innermost, as a
 * weight gradient's 01bf output lies). */
static const cspec_t psum_specs[] = {
	SPEC(.N = 4, .G = 1, .O = 16, .C = 3, .X = { 20, 19 }, .K = { 18, 17 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 5, .G = 1, .O = 17, .C = 2, .X = { 24, 30 }, .K = { 16, 16 }, .S = { 2, 1 },
	     .D = { 1, 2 }, .L = { 1, 1 }, .P = { 0, 2 }),
	SPEC(.N = 16, .G = 1, .O = 16, .C = 2, .X = { 63, 63 }, .K = { 64, 64 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 26, .G = 1, .O = 40, .C = 2, .X = { 15, 15 }, .K = { 16, 16 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 4, .G = 1, .O = 16, .C = 3, .X = { 4, 302 }, .K = { 2, 300 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 24, .G = 1, .O = 20, .C = 2, .X = { 17, 17 }, .K = { 8, 8 }, .S = { 1, 1 },
	     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 8, .G = 1, .O = 16, .C = 2, .X = { 5, 1201 }, .K = { 4, 1200 }, .S = { 1, 1 },
	     .D = { 2, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	/* wide tiles (at most 6 n, 64 o or more: 4 vectors of o): 3 n by a
	 * slice of 64 o and one of 8; 5 n by one slice, whose 6 output rows
	 * two units share */
	SPEC(.N = 3, .G = 1, .O = 72, .C = 2, .X = { 12, 11 }, .K = { 9, 8 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 5, .G = 1, .O = 64, .C = 2, .X = { 12, 11 }, .K = { 9, 8 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
};
#define PSUM_N_SPECS (sizeof(psum_specs) / sizeof(psum_specs[0]))

/* Form P's units: with AVX2 + FMA (the register tiles), a slice of 32 o
 * (64 with at most 6 n and 64 o or more) by a range of n (at least 4 units
 * where 12 n per range, 6 wide, allow: docs/isa.md), the output rows cut
 * in two when wide tiles leave one unit and the pool has two threads or
 * more; else an input channel each. */
static uint64_t psum_units(const cspec_t *c, size_t i)
{
	(void)i;
	if (!fwsim_cpu_avx2_fma())
		return (uint64_t)c->C;
	int64_t to = c->N <= 6 && c->O >= 64 ? 64 : 32, tnmax = to == 32 ? 12 : 6;
	int64_t nq = (c->O + to - 1) / to, ns = (4 + nq - 1) / nq, most = (c->N + tnmax - 1) / tnmax;
	ns = ns > most ? most : ns;
	int64_t tn = (c->N + ns - 1) / ns, units = nq * ((c->N + tn - 1) / tn);
	bool cut_rows = to == 64 && units < 2 && c_out_dim(c, 0) > 1 && fwsim_get_threads() > 1;
	return (uint64_t)(units * (cut_rows ? 2 : 1));
}

/* The ISA cap of loop index i: 0 none (AVX-512 where the CPU has it), 1
 * AVX2, 2 scalar. */
static const fwsim_isa_t loop_isa[3] = { FWSIM_ISA_AUTO, FWSIM_ISA_AVX2, FWSIM_ISA_SCALAR };

/* Under ISA cap isa: c_check_units of the specs in 3 layouts, then, where
 * the tiles run, each spec's outputs bit for bit against c_sum_chain. */
static void c_check_tiles(fwsim_isa_t isa, const cspec_t *specs, size_t n, const char *name,
			  uint64_t (*units)(const cspec_t *c, size_t i), uint32_t seed)
{
	fwsim_set_max_isa(isa);
	c_check_units(specs, n, 3, name, units);
	if (fwsim_cpu_avx2_fma())
		for (int layout = 0; layout < 3; layout++)
			for (size_t i = 0; i < n; i++) {
				cspec_t c = specs[i];
				c.layout = layout;
				c_check_bits(&c, seed, 100 * seed + i, c_sum_chain, name, i);
			}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}

/* _i 0: the widest kernels (the register tiles on a CPU with AVX-512F, bit
 * for bit in their order, docs/isa.md: one chain of fma from 0 over (c, k0,
 * k1), as form A's, c_sum_chain; padding terms, 0 x a finite w, change no
 * bits of such a chain); 1: capped to AVX2, the tiles' AVX2 kernels, the
 * same bits; 2: capped to scalar, T and sgemm. */
START_TEST(test_dense_wgrad_partial_sums_match_reference)
{
	c_check_tiles(loop_isa[_i], psum_specs, PSUM_N_SPECS, "psum", psum_units, 13);
}
END_TEST

/* Forward convolutions of small planes (under 256 outputs per plane, sums
 * C x taps at least 256 deep): form P's register tiles where the CPU has
 * AVX2 and FMA, a whole kernel per channel in each block (the tiles sum whole
 * blocks of channels before storing): 8 n by 40 o over 8x8 (blocks of 28
 * channels and 12, a 32-o slice and an 8-o one); 13 n (ranges of 7 and 6)
 * by 33 o over 4x4; stride 2 over 5x5. Capped to AVX2, the tiles' AVX2
 * kernels (the same bits); to scalar, form G: one band per plane. Three
 * layouts (1 reverses the kernel, transposed a channel at a time, read
 * ascending and written descending; 0 and 2 run each block's channels as
 * one transpose). */
static const cspec_t small_specs[] = {
	SPEC(.N = 8, .G = 1, .O = 40, .C = 40, .X = { 8, 8 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 13, .G = 1, .O = 33, .C = 30, .X = { 4, 4 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 3, .G = 1, .O = 16, .C = 32, .X = { 9, 9 }, .K = { 3, 3 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
};
#define SMALL_N_SPECS (sizeof(small_specs) / sizeof(small_specs[0]))

static uint64_t small_units(const cspec_t *c, size_t i)
{
	return fwsim_cpu_avx2_fma() ? psum_units(c, i) : (uint64_t)(c->N * c->G);
}

START_TEST(test_dense_small_planes_tiles_match_reference)
{
	c_check_tiles(loop_isa[_i], small_specs, SMALL_N_SPECS, "small", small_units, 17);
}
END_TEST

/*
 * Form F (strides 1 or 2, planes of 256 outputs or more, AVX-512F, row-major
 * output planes: layout 0; layouts 1 and 2 go to form G). Each spec's
 * bands per plane follow from the copy's 2^16 floats: C x (band + (K0 - 1)
 * D0) rows at the pitch Wp = Y1 + (K1 - 1) D1, plus 64 floats of slack.
 * - 64 channels of 23x39 (Wp 41, odd: a vector's lanes meet the next row
 *   at every offset): 2 bands (12, 11 rows), whose last tiles of 48
 *   positions need 1 and 2 vectors; 20 o: blocks 8, 8, 4.
 * - two groups, a 2x5 kernel dilated 2, padding 1 and 2: 1 band.
 * - cropping (padding -1): the copy starts a column in; 96 channels: 2
 *   bands of 10 rows.
 * - padding 2 past a 3x3 kernel (rows and columns of zeros) and the least
 *   pitch, 16 (a vector's lanes reach into the next row but one's pitch).
 * - rows of 320 (Wp 322): a band of one row (3 of them).
 * - stride 2 (the copy in 4 phases of even and odd rows and columns): a
 *   7x7 stem's window over 3 channels (Wp 22 + 3), 1 band; a 3x3 kernel
 *   dilated 2 along dim 1 (its taps all in even columns: phases copied and
 *   never read), 2 bands.
 */
static const cspec_t flat_specs[] = {
	SPEC(.N = 1, .G = 1, .O = 20, .C = 64, .X = { 23, 39 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 2, .O = 16, .C = 8, .X = { 30, 60 }, .K = { 2, 5 }, .S = { 1, 1 },
	     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 2 }),
	SPEC(.N = 1, .G = 1, .O = 24, .C = 96, .X = { 24, 36 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { -1, -1 }),
	SPEC(.N = 3, .G = 1, .O = 16, .C = 8, .X = { 20, 12 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 2, 2 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 64, .X = { 3, 320 }, .K = { 3, 3 }, .S = { 1, 1 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 3, .X = { 40, 44 }, .K = { 7, 7 }, .S = { 2, 2 },
	     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 3, 3 }),
	SPEC(.N = 1, .G = 1, .O = 16, .C = 64, .X = { 39, 30 }, .K = { 3, 3 }, .S = { 2, 2 },
	     .D = { 1, 2 }, .L = { 1, 1 }, .P = { 1, 2 }),
};
#define FLAT_N_SPECS (sizeof(flat_specs) / sizeof(flat_specs[0]))
static const int flat_spec_bands[FLAT_N_SPECS] = { 2, 1, 2, 1, 3, 1, 2 };

/* _i 0: form F where c_form_f says (every spec in layout 0 on a CPU with
 * AVX-512F), each output bit for bit its chain of fma over (c, k0, k1) from
 * 0 with the padding terms (docs/isa.md), c_sum_chain, which c_term builds
 * from the definition; layouts 1 and 2 run no form F band. _i 1 and 2,
 * capped to AVX2 and scalar: layout 0 runs none either. (Those go to form
 * G, whose results test_dense_gemm_bands_match_reference checks: the
 * double reference of c_check is most of this test's time under ASan.) */
START_TEST(test_dense_flat_tiles_match_chain)
{
	fwsim_set_max_isa(loop_isa[_i]);
	for (int layout = 0; layout < 3; layout++)
		for (size_t i = 0; i < FLAT_N_SPECS; i++) {
			cspec_t c = flat_specs[i];
			c.layout = layout;
			if (_i && layout)
				continue;
			char what[48];
			snprintf(what, sizeof(what), "flat spec %zu layout %d", i, layout);
			if (_i == 0 && layout == 0 && fwsim_cpu_avx512())
				ck_assert_msg(c_form_f(&c), "%s: not form F's", what);
			uint64_t units = fwsim_conv_flat_units();
			if (c_form_f(&c)) {
				c_check_bits(&c, 19, 1900 + i, c_sum_chain, what, i);
			} else {
				cmem_t m;
				cmem_init(&m);
				cconv_t cv;
				c_build(&m, &c, &cv, 19);
				fwsim_job_t job;
				ck_assert_int_eq(c_run(&m, &cv.in, 0, 0, &job), FWSIM_OK);
				free(m.mem);
			}
			uint64_t ran = fwsim_conv_flat_units() - units;
			uint64_t want = c_form_f(&c) ? (uint64_t)(c.N * c.G) * (uint64_t)flat_spec_bands[i] : 0;
			ck_assert_msg(ran == want, "%s: %llu bands of form F, want %llu", what,
				      (unsigned long long)ran, (unsigned long long)want);
		}
	fwsim_set_max_isa(FWSIM_ISA_AUTO);
}
END_TEST

/* An output that repeats along its rows (stride 0) is not cut into bands,
 * whose items would write the same elements at once: a form that keeps the
 * plane whole runs it, and the last row's values are the ones left. */
START_TEST(test_dense_repeated_output_rows_not_banded)
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	cspec_t c = dense_specs[DENSE_N_SPECS - 1];
	c_build(&m, &c, &cv, 9);
	cv.in.ap[0].stride[3] = 0;
	fwsim_set_threads(2);
	uint64_t units = fwsim_conv_gemm_units();
	fwsim_job_t job;
	ck_assert_int_eq(c_run(&m, &cv.in, 0, 0, &job), FWSIM_OK);
	fwsim_set_threads(0);
	ck_assert_uint_eq(fwsim_conv_gemm_units(), units);
	int64_t oi[5] = { 0, 0, 0, cv.Y[0] - 1, 0 };
	for (oi[2] = 0; oi[2] < c.O; oi[2]++)
		for (oi[4] = 0; oi[4] < cv.Y[1]; oi[4]++) {
			double mag, want = c_ref(&cv, oi, &mag);
			float got = cv.o[c_off(&cv.in.ap[0], oi)];
			T_CHECK(fabs(got - want) <= 1e-6 * mag + 1e-30, "out[0,0,%lld,*,%lld] = %g, want %g",
				(long long)oi[2], (long long)oi[4], got, want);
		}
	free(m.mem);
}
END_TEST

/* A NaN (_i 0) or Inf (_i 1) weight of the last output channel at tap (0,
 * 0) makes that channel's every output NaN, where that tap lies in the
 * padding too (0 x NaN and 0 x Inf are terms of the sum), in both layouts,
 * and the record's first index is its first: form G's three bands (form
 * F's in layout 0 with AVX-512F, whose padding terms are in its chain), form P
 * (the register tiles skip padding taps and add those terms afterwards),
 * then capped to AVX2 (the tiles' AVX2 kernels) and to scalar (T and
 * sgemm); then the tiles over small planes (a forward convolution); then
 * wide tiles whose two units share the output rows (each stores and scans
 * only its own). */
START_TEST(test_dense_nan_weight_blames_its_channel)
{
	for (int run = 0; run < 12; run++) {
		int layout = run % 2;
		cmem_t m;
		cmem_init(&m);
		cconv_t cv;
		cspec_t c = run < 2    ? dense_specs[DENSE_N_SPECS - 1]
			    : run < 8  ? psum_specs[0]
			    : run < 10 ? small_specs[0]
				       : psum_specs[PSUM_N_SPECS - 1];
		if (run < 2)
			c.N = 2;
		c.layout = layout;
		fwsim_set_max_isa(run >= 8 ? FWSIM_ISA_AUTO : loop_isa[run < 4 ? 0 : run / 2 - 1]);
		fwsim_set_threads(run >= 10 ? 2 : 0); /* the wide tiles' rows cut for 2 */
		c_build(&m, &c, &cv, 5);
		int64_t wi[5] = { 0, c.O - 1, c.C / 2, 0, 0 };
		cv.w[c_off(&cv.in.ap[2], wi)] = _i ? INFINITY : NAN;
		fwsim_job_t job;
		ck_assert_int_eq(c_run(&m, &cv.in, FWSIM_JOB_CHECK_NAN | FWSIM_JOB_CHECK_INF, 0, &job),
				 FWSIM_NUM_ERR);
		fwsim_set_max_isa(FWSIM_ISA_AUTO);
		fwsim_set_threads(0);
		uint64_t ny = (uint64_t)(cv.Y[0] * cv.Y[1]);
		ck_assert_uint_eq(job.error.count, (uint64_t)c.N * ny);
		ck_assert_uint_eq(job.error.first_index, (uint64_t)(c.O - 1) * ny);
		ck_assert_uint_eq(job.error.is_inf, 0);
		int64_t oi[5];
		for (oi[0] = 0; oi[0] < c.N; oi[0]++)
			for (oi[2] = 0; oi[2] < c.O; oi[2]++)
				for (oi[3] = 0; oi[3] < cv.Y[0]; oi[3]++)
					for (oi[4] = 0; oi[4] < cv.Y[1]; oi[4]++) {
						oi[1] = 0;
						float got = cv.o[c_off(&cv.in.ap[0], oi)];
						/* both specs: stride 1, padding 1, so tap (0, 0)
						 * is padding exactly in row 0 and column 0 (a
						 * NaN term, which c_ref skips); elsewhere its
						 * term is x Inf (NaN where x is 0) */
						bool bad = oi[2] == c.O - 1;
						bool pad = bad && (oi[3] == 0 || oi[4] == 0);
						double mag, want = bad ? c_ref(&cv, oi, &mag) : 0.0;
						T_CHECK(isnan(got) == (pad || isnan(want)) &&
								isfinite(got) == (!pad && isfinite(want)) &&
								isfinite(got) == !bad,
							"run %d: out[%lld,0,%lld,%lld,%lld] = %g", run,
							(long long)oi[0], (long long)oi[2], (long long)oi[3],
							(long long)oi[4], got);
					}
		free(m.mem);
	}
}
END_TEST

/* A NaN and an Inf in the input: exactly the outputs whose window holds them
 * are bad (the runs of the flat grid past a row's end never leak into a stored
 * output), and the record names the first bad flat index and the count. */
START_TEST(test_nan_inf_inputs_reach_only_their_windows)
{
	const cspec_t specs[] = {
		SPEC(.N = 2, .G = 3, .O = 1, .C = 1, .X = { 9, 10 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 2, .O = 1, .C = 2, .X = { 9, 10 }, .K = { 3, 3 }, .S = { 2, 2 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 2, .O = 1, .C = 1, .X = { 6, 7 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 2, 2 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 2, .O = 1, .C = 3, .X = { 14, 13 }, .K = { 13, 12 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 2, .O = 2, .C = 2, .X = { 21, 20 }, .K = { 10, 10 }, .S = { 1, 1 },
		     .D = { 2, 2 }, .L = { 1, 1 }, .P = { 1, 0 }),
		/* depthwise lanes of 8 groups, the bad value in the partial block;
		 * an odd number of columns (the AVX-512 rows' single last one) */
		SPEC(.N = 2, .G = 10, .O = 1, .C = 1, .X = { 9, 10 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 9, .O = 1, .C = 1, .X = { 5, 1 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 12, .O = 2, .C = 1, .X = { 15, 18 }, .K = { 3, 3 }, .S = { 2, 2 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form E: a weight gradient's shape over 8 or more groups */
		SPEC(.N = 1, .G = 10, .O = 1, .C = 3, .X = { 14, 13 }, .K = { 14, 13 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form P */
		SPEC(.N = 4, .G = 1, .O = 16, .C = 3, .X = { 20, 19 }, .K = { 18, 17 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form G: shifted, then whole im2col bands */
		SPEC(.N = 2, .G = 1, .O = 16, .C = 24, .X = { 9, 10 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 2, .G = 1, .O = 16, .C = 3, .X = { 12, 11 }, .K = { 7, 7 }, .S = { 2, 2 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 3, 3 }),
		/* form F: the bad value's row end beside the next row's start in
		 * the flattened positions */
		SPEC(.N = 1, .G = 2, .O = 16, .C = 8, .X = { 17, 20 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
	};
	for (size_t si = 0; si < sizeof(specs) / sizeof(specs[0]); si++)
		for (int inf = 0; inf < 2; inf++) {
			cmem_t m;
			cmem_init(&m);
			cconv_t cv;
			c_build(&m, &specs[si], &cv, 3);
			const cspec_t *c = &cv.c;
			/* the bad value at the last column of a row and the first of the next */
			int64_t bi[5] = { c->N - 1, c->G - 1, c->C - 1, c->X[0] / 2, c->X[1] - 1 };
			cv.x[c_off(&cv.in.ap[1], bi)] = inf ? INFINITY : NAN;
			fwsim_job_t job;
			uint32_t fl = inf ? FWSIM_JOB_CHECK_INF : FWSIM_JOB_CHECK_NAN;
			ck_assert_int_eq(c_run(&m, &cv.in, fl, 0, &job), FWSIM_NUM_ERR);
			uint64_t count = 0, first = UINT64_MAX, flat = 0;
			int64_t oi[5];
			for (oi[0] = 0; oi[0] < c->N; oi[0]++)
				for (oi[1] = 0; oi[1] < c->G; oi[1]++)
					for (oi[2] = 0; oi[2] < c->O; oi[2]++)
						for (oi[3] = 0; oi[3] < cv.Y[0]; oi[3]++)
							for (oi[4] = 0; oi[4] < cv.Y[1]; oi[4]++, flat++) {
								double mag, want = c_ref(&cv, oi, &mag);
								float got = cv.o[c_off(&cv.in.ap[0], oi)];
								T_CHECK(isfinite(want) == isfinite(got) &&
									isnan(want) == isnan(got),
									"spec %zu: out %llu = %g, want %g", si,
									(unsigned long long)flat, got, want);
								if (!isfinite(want)) {
									count++;
									if (first == UINT64_MAX)
										first = flat;
								}
							}
			ck_assert_uint_gt(count, 0);
			ck_assert_uint_eq(job.error.count, count);
			ck_assert_uint_eq(job.error.first_index, first);
			ck_assert_uint_eq(job.error.is_inf, (uint32_t)inf);
			ck_assert_msg(strstr(job.error.message, "(conv)"), "%s", job.error.message);
			free(m.mem);
		}
}
END_TEST

/* Runs spec c (built with seed) on 1, 2 and 3 threads and checks that they
 * write the same bits; the units of forms G and P each run took, into
 * units[3]. */
static void c_threads_same_bits(const cspec_t *c, uint32_t seed, const char *what,
				uint64_t units[3])
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	c_build(&m, c, &cv, seed);
	uint64_t bytes = (uint64_t)(c->N * c->G * c->O * cv.Y[0] * cv.Y[1]) * 4;
	uint8_t *one = malloc(bytes);
	ck_assert_ptr_nonnull(one);
	const uint32_t threads[3] = { 1, 2, 3 };
	for (int t = 0; t < 3; t++) {
		fwsim_set_threads(threads[t]);
		uint64_t u0 = fwsim_conv_gemm_units();
		fwsim_job_t job;
		ck_assert_int_eq(c_run(&m, &cv.in, 0, 0, &job), FWSIM_OK);
		units[t] = fwsim_conv_gemm_units() - u0;
		if (t == 0)
			memcpy(one, cv.o, bytes);
		else
			ck_assert_msg(!memcmp(one, cv.o, bytes), "%s: %u threads differ", what,
				      threads[t]);
	}
	fwsim_set_threads(0);
	free(one);
	free(m.mem);
}

/* Every output is one item's: 1, 2 and 3 threads write the same bits (both
 * instructions above the pool's 2^22 multiply-adds, so they are cut). */
START_TEST(test_threads_bit_identical)
{
	const cspec_t specs[] = {
		SPEC(.N = 4, .G = 64, .O = 1, .C = 1, .X = { 48, 48 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		SPEC(.N = 1, .G = 64, .O = 1, .C = 8, .X = { 32, 32 }, .K = { 30, 30 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form P: 4 items of 16 channels' partial sums */
		SPEC(.N = 16, .G = 1, .O = 16, .C = 4, .X = { 66, 66 }, .K = { 64, 64 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form F (form G without AVX-512F): 8 planes of 3 bands, 24 items */
		SPEC(.N = 8, .G = 1, .O = 32, .C = 64, .X = { 41, 40 }, .K = { 3, 3 }, .S = { 1, 1 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }),
		/* form G at stride 2 along dim 1 only, past form F's 8/7 pitch
		 * (staged rows): 8 planes of 1 band, 8 items */
		SPEC(.N = 8, .G = 1, .O = 32, .C = 64, .X = { 41, 40 }, .K = { 3, 7 }, .S = { 1, 2 },
		     .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 3 }),
	};
	for (size_t si = 0; si < sizeof(specs) / sizeof(specs[0]); si++) {
		char what[16];
		snprintf(what, sizeof(what), "spec %zu", si);
		uint64_t units[3];
		c_threads_same_bits(&specs[si], 11, what, units);
	}
}
END_TEST

/* Wide tiles of one slice and one range of n (a 7x7 stem's weight
 * gradient: 3 n, 64 o, the batch as c) cut their output rows in two only
 * when the pool has two threads or more: one unit on one thread (each half
 * would transpose the whole kernel slice again), two on 2 and 3, and the
 * same bits on all. Above the pool's 2^22 multiply-adds, so the units are
 * items of their own. */
START_TEST(test_wide_tiles_cut_rows_for_threads)
{
	if (!fwsim_cpu_avx2_fma())
		return; /* no tiles: form P's partial sums */
	const cspec_t c = SPEC(.N = 3, .G = 1, .O = 64, .C = 8, .X = { 40, 40 }, .K = { 34, 34 },
			       .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 });
	uint64_t units[3];
	c_threads_same_bits(&c, 19, "wide", units);
	ck_assert_uint_eq(units[0], 1);
	ck_assert_uint_eq(units[1], 2);
	ck_assert_uint_eq(units[2], 2);
}
END_TEST

/* A deadline already past stops the instruction inside its work. */
START_TEST(test_deadline_stops_conv)
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	c_build(&m, &SPEC(.N = 2, .G = 64, .O = 1, .C = 8, .X = { 40, 40 }, .K = { 3, 3 },
			  .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }), &cv, 1);
	fwsim_job_t job;
	ck_assert_int_eq(c_run(&m, &cv.in, 0, 1, &job), FWSIM_TIMEOUT);
	/* form P; form F (form G without AVX-512F) */
	c_build(&m, &SPEC(.N = 16, .G = 1, .O = 16, .C = 4, .X = { 66, 66 }, .K = { 64, 64 },
			  .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }), &cv, 1);
	ck_assert_int_eq(c_run(&m, &cv.in, 0, 1, &job), FWSIM_TIMEOUT);
	c_build(&m, &SPEC(.N = 8, .G = 1, .O = 32, .C = 64, .X = { 41, 40 }, .K = { 3, 3 },
			  .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }), &cv, 1);
	ck_assert_int_eq(c_run(&m, &cv.in, 0, 1, &job), FWSIM_TIMEOUT);
	free(m.mem);
}
END_TEST

/* Runs the CONV of output os (row-major), input xs and kernel ws (strides
 * xst and wst: a plane repeated), unit strides, no padding, under a
 * deadline 20 ms away: it stops, within cpu_ns of CPU time, after units()
 * counted at least one item of the form that takes it. */
static void c_deadline_inside(const int64_t *os, const int64_t *xs, const int64_t *xst,
			      const int64_t *ws, const int64_t *wst, uint64_t (*units)(void),
			      uint64_t cpu_ns)
{
	cmem_t m;
	cmem_init(&m);
	int64_t ost[5];
	c_rowmajor(os, ost, 1);
	isa_insn_t in = isa_insn_init(ISA_OP_CONV, 0);
	in.n_ap = 4;
	in.ap[0] = c_ap5(2, 0, os, ost);
	in.ap[1] = c_ap5(0, 0, xs, xst);
	in.ap[2] = c_ap5(1, 0, ws, wst);
	int64_t one[2] = { 1, 1 }, zero[2] = { 0, 0 };
	in.ap[3] = isa_conv_window(one, one, one, zero);
	fwsim_job_t job;
	uint64_t u0 = units(), t0 = tcpu_ns();
	ck_assert_int_eq(c_run(&m, &in, 0, tnow_ns() + 20000000ull, &job), FWSIM_TIMEOUT);
	ck_assert_uint_lt(tcpu_ns() - t0, cpu_ns);
	ck_assert_uint_ge(units() - u0, 1); /* the form's items ran */
	free(m.mem);
}

/* A deadline 20 ms away stops form P inside an item: 8 channels of 2^38
 * multiply-adds each (about 3 s apiece), 16 x 16 outputs of 64 x 64 windows
 * of a 512 x 512 kernel, the input one 575 x 575 plane and the kernel one
 * 512 x 512 plane repeated (stride 0 along n, c and o). */
START_TEST(test_deadline_stops_psum_inside_an_item)
{
	int64_t os[5] = { 16, 1, 16, 64, 64 }, xs[5] = { 16, 1, 8, 575, 575 };
	int64_t xst[5] = { 0, 0, 0, 575, 1 }, ws[5] = { 1, 16, 8, 512, 512 };
	int64_t wst[5] = { 0, 0, 0, 512, 1 };
	c_deadline_inside(os, xs, xst, ws, wst, fwsim_conv_gemm_units, 3000000000ull);
}
END_TEST

/* A deadline 20 ms away stops form F inside its items: 16 x 204 x 640
 * outputs over 2048 channels of 3x3 taps (3.8e10 multiply-adds, about 0.4 s
 * on one CPU), the input one 206 x 642 plane and the kernel one 3x3 plane
 * repeated (stride 0 along c and o); 204 bands of one row each. */
START_TEST(test_deadline_stops_flat_inside_an_item)
{
	if (!fwsim_cpu_avx512())
		return; /* form F needs AVX-512F */
	int64_t os[5] = { 1, 1, 16, 204, 640 }, xs[5] = { 1, 1, 2048, 206, 642 };
	int64_t xst[5] = { 0, 0, 0, 642, 1 }, ws[5] = { 1, 16, 2048, 3, 3 };
	int64_t wst[5] = { 0, 0, 0, 3, 1 };
	c_deadline_inside(os, xs, xst, ws, wst, fwsim_conv_flat_units, 200000000ull);
}
END_TEST

/* Out-of-window operands are refused before anything is written. */
START_TEST(test_oob_kernel_refused)
{
	cmem_t m;
	cmem_init(&m);
	cconv_t cv;
	c_build(&m, &SPEC(.N = 1, .G = 2, .O = 1, .C = 1, .X = { 5, 5 }, .K = { 3, 3 },
			  .S = { 1, 1 }, .D = { 1, 1 }, .L = { 1, 1 }, .P = { 1, 1 }), &cv, 1);
	cv.in.ap[2].offset = C_REGSZ - 16;
	fwsim_job_t job;
	ck_assert_int_eq(c_run(&m, &cv.in, 0, 0, &job), FWSIM_OOB);
	ck_assert_uint_eq(job.error.ap_index, 2);
	uint32_t bits; /* the garbage c_build left is still there */
	memcpy(&bits, cv.o, 4);
	ck_assert_uint_eq(bits, 0x7f7f7f7fu);
	free(m.mem);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fwsim-conv");
	TCase *tc = tcase_create("conv");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_depthwise_and_grouped_windows_match_reference);
	tcase_add_test(tc, test_depthwise_lanes_bit_exact);
	tcase_add_test(tc, test_dilated_depthwise_bit_exact);
	tcase_add_test(tc, test_dense_gemm_bands_match_reference);
	tcase_add_loop_test(tc, test_dense_nan_weight_blames_its_channel, 0, 2);
	tcase_add_test(tc, test_dense_repeated_output_rows_not_banded);
	tcase_add_loop_test(tc, test_dense_wgrad_partial_sums_match_reference, 0, 3);
	tcase_add_loop_test(tc, test_dense_small_planes_tiles_match_reference, 0, 3);
	tcase_add_loop_test(tc, test_dense_flat_tiles_match_chain, 0, 3);
	tcase_add_test(tc, test_nan_inf_inputs_reach_only_their_windows);
	tcase_add_test(tc, test_threads_bit_identical);
	tcase_add_test(tc, test_wide_tiles_cut_rows_for_threads);
	tcase_add_test(tc, test_deadline_stops_conv);
	tcase_add_test(tc, test_deadline_stops_psum_inside_an_item);
	tcase_add_test(tc, test_deadline_stops_flat_inside_an_item);
	tcase_add_test(tc, test_oob_kernel_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
