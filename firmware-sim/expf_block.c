/* EXP over a block of floats with the C library's expf bits, four or eight lanes at a time where a self-check shows the vector code gives them. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "alu_ops.h"
#include "internal.h"

/*
 * The ISA defines EXP as libm's expf. glibc's expf (2.28 on; the FMA build
 * where the CPU has FMA) evaluates, for |x| < 88, in double precision:
 *   z = x * N/ln2, k = round(z) (by adding 1.5 * 2^52), r = z - k,
 *   s = 2^(k/N) from a table of N = 32 entries and k's integer part,
 *   y = (C0 r + C1) r^2 + (C2 r + 1), each a fused multiply-add,
 * and returns (float)(y * s). The same operations on four (AVX2) or eight
 * (AVX-512) doubles per vector give the same bits. Exhaustively over the 2^32 floats with
 * |x| < 88 this machine's expf and that sequence agreed on every one (a
 * scalar model, tests/unit/fwsim/test_alu.c samples it); other inputs (|x|
 * >= 88, NaN) go to expf itself. Another C library may compute expf
 * otherwise, so the vector code is used only after it matched expf on a
 * sample of inputs at first use (expf_check): else every element calls
 * expf. Scalar expf was 80% of a softmax's time.
 */

#define EXPF_TBITS 5
#define EXPF_N (1 << EXPF_TBITS)

static uint64_t expf_tab[EXPF_N]; /* bits of 2^(i/N), minus i << (52 - TBITS) */

static int expf_vec_ok;         /* 0 scalar, 1 AVX2, 2 AVX-512 */
static pthread_once_t expf_once = PTHREAD_ONCE_INIT;

static void expf_scalar(size_t n, float *o, const float *a)
{
	for (size_t i = 0; i < n; i++)
		o[i] = expf(a[i]);
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
#include <immintrin.h>

/* the vector loops' constants (the scalar path has expf's own) */
static const double expf_c0 = 0x1.c6af84b912394p-5 / EXPF_N / EXPF_N / EXPF_N;
static const double expf_c1 = 0x1.ebfce50fac4f3p-3 / EXPF_N / EXPF_N;
static const double expf_c2 = 0x1.62e42ff0c52d6p-1 / EXPF_N;
static const double expf_invln2n = 0x1.71547652b82fep+0 * EXPF_N;
static const double expf_shift = 0x1.8p+52;

__attribute__((target("avx2,fma")))
static void expf_avx2(size_t n, float *o, const float *a)
{
	const __m256d invln2n = _mm256_set1_pd(expf_invln2n), shift = _mm256_set1_pd(expf_shift);
	const __m256d c0 = _mm256_set1_pd(expf_c0), c1 = _mm256_set1_pd(expf_c1);
	const __m256d c2 = _mm256_set1_pd(expf_c2), one = _mm256_set1_pd(1.0);
	const __m256i mask = _mm256_set1_epi64x(EXPF_N - 1);
	/* |x| >= 88 or NaN: the top 12 bits (sign dropped) at least 88.0f's */
	const __m128i lim = _mm_set1_epi32((int32_t)(0x42b00000u >> 20) - 1);
	const __m128i top = _mm_set1_epi32(0x7ff);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		__m128 xf = _mm_loadu_ps(a + i);
		__m128i abstop = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), top);
		if (_mm_movemask_epi8(_mm_cmpgt_epi32(abstop, lim))) {
			expf_scalar(4, o + i, a + i);
			continue;
		}
		__m256d z = _mm256_mul_pd(invln2n, _mm256_cvtps_pd(xf));
		__m256d kd = _mm256_add_pd(z, shift);
		__m256i ki = _mm256_castpd_si256(kd);
		kd = _mm256_sub_pd(kd, shift);
		__m256d r = _mm256_sub_pd(z, kd);
		__m256i t = _mm256_i64gather_epi64((const long long *)(const void *)expf_tab,
						   _mm256_and_si256(ki, mask), 8);
		t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 52 - EXPF_TBITS));
		__m256d p = _mm256_fmadd_pd(c0, r, c1);
		__m256d q = _mm256_fmadd_pd(c2, r, one);
		__m256d y = _mm256_fmadd_pd(p, _mm256_mul_pd(r, r), q);
		y = _mm256_mul_pd(y, _mm256_castsi256_pd(t));
		_mm_storeu_ps(o + i, _mm256_cvtpd_ps(y));
	}
	expf_scalar(n - i, o + i, a + i);
}

/* The same with eight lanes; the table lookup is two 16-entry permutes and
 * a blend (a gather of 64-bit entries costs more than the arithmetic). */
__attribute__((target("avx512f,avx2,fma")))
static void expf_avx512(size_t n, float *o, const float *a)
{
	const __m512d invln2n = _mm512_set1_pd(expf_invln2n), shift = _mm512_set1_pd(expf_shift);
	const __m512d c0 = _mm512_set1_pd(expf_c0), c1 = _mm512_set1_pd(expf_c1);
	const __m512d c2 = _mm512_set1_pd(expf_c2), one = _mm512_set1_pd(1.0);
	const __m512i t0 = _mm512_loadu_si512(expf_tab), t1 = _mm512_loadu_si512(expf_tab + 8);
	const __m512i t2 = _mm512_loadu_si512(expf_tab + 16), t3 = _mm512_loadu_si512(expf_tab + 24);
	const __m256i lim = _mm256_set1_epi32((int32_t)(0x42b00000u >> 20) - 1);
	const __m256i top = _mm256_set1_epi32(0x7ff);
	const __m512i b4 = _mm512_set1_epi64(16);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 xf = _mm256_loadu_ps(a + i);
		__m256i abstop = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), top);
		if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(abstop, lim))) {
			expf_scalar(8, o + i, a + i);
			continue;
		}
		__m512d z = _mm512_mul_pd(invln2n, _mm512_cvtps_pd(xf));
		__m512d kd = _mm512_add_pd(z, shift);
		__m512i ki = _mm512_castpd_si512(kd);
		kd = _mm512_sub_pd(kd, shift);
		__m512d r = _mm512_sub_pd(z, kd);
		__m512i lo = _mm512_permutex2var_epi64(t0, ki, t1);
		__m512i hi = _mm512_permutex2var_epi64(t2, ki, t3);
		__mmask8 up = _mm512_test_epi64_mask(ki, b4);
		__m512i t = _mm512_mask_blend_epi64(up, lo, hi);
		t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 52 - EXPF_TBITS));
		__m512d p = _mm512_fmadd_pd(c0, r, c1);
		__m512d q = _mm512_fmadd_pd(c2, r, one);
		__m512d y = _mm512_fmadd_pd(p, _mm512_mul_pd(r, r), q);
		y = _mm512_mul_pd(y, _mm512_castsi512_pd(t));
		_mm256_storeu_ps(o + i, _mm512_cvtpd_ps(y));
	}
	expf_avx2(n - i, o + i, a + i);
}
#else
#define expf_avx512 expf_scalar
#define expf_avx2 expf_scalar
#endif

/* The table, then the vector code against expf on 2^16 spread bit patterns
 * and the edges (every exponent, both signs, around +-88, results down to
 * subnormals and zero). */
static void expf_check(void)
{
	for (int i = 0; i < EXPF_N; i++) {
		double v = (double)exp2l((long double)i / EXPF_N);
		uint64_t u;
		memcpy(&u, &v, sizeof(u));
		expf_tab[i] = u - ((uint64_t)i << (52 - EXPF_TBITS));
	}
	if (!fwsim_cpu_avx2_fma())
		return;
	enum { NS = 1 << 16, NE = 8 };
	static float in[NS + NE], got[NS + NE], got512[NS + NE];
	for (uint32_t k = 0; k < NS; k++) {
		uint32_t u = k * 65537u + (k >> 3);
		memcpy(&in[k], &u, sizeof(u));
	}
	const float edges[NE] = { 87.99999f, -87.99999f, -87.3f, -86.9f, 0x1p-30f, -0x1p-30f, 1.0f, 0.0f };
	memcpy(in + NS, edges, sizeof(edges));
	expf_avx2(NS + NE, got, in);
	int wide = fwsim_cpu_avx512();
	if (wide)
		expf_avx512(NS + NE, got512, in);
	for (uint32_t k = 0; k < NS + NE; k++) {
		float want = expf(in[k]);
		if (memcmp(&want, &got[k], sizeof(want)) != 0 && !(isnan(want) && isnan(got[k])))
			return;
		wide = wide && (memcmp(&want, &got512[k], sizeof(want)) == 0 ||
				(isnan(want) && isnan(got512[k])));
	}
	expf_vec_ok = wide ? 2 : 1;
}

int fwsim_expf_vector(void)
{
	pthread_once(&expf_once, expf_check);
	return expf_vec_ok;
}

void fwsim_expf_block(size_t n, float *o, const float *a)
{
	switch (fwsim_expf_vector()) {
	case 2: expf_avx512(n, o, a); return;
	case 1: expf_avx2(n, o, a); return;
	default: expf_scalar(n, o, a);
	}
}
