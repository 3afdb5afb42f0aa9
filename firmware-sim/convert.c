/* Block loads and stores between device memory (any dtype, any stride) and f32/i64 temporaries. */
#include "convert.h"
#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FWSIM_HAVE_F16C_PATH 1

/* Contiguous f16 <-> f32 with the F16C instructions (8 lanes, round to
 * nearest even, NaN kept quiet: the same results as the scalar code).
 * Selected at run time: the library still runs on CPUs without F16C. */
__attribute__((target("avx,f16c")))
static void f16_to_f32_f16c(const uint8_t *p, size_t n, float *out)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i))));
	for (; i < n; i++) {
		uint16_t h;
		memcpy(&h, p + 2 * i, 2);
		out[i] = ns_f16_to_f32(h);
	}
}

__attribute__((target("avx,f16c")))
static void f32_to_f16_f16c(uint8_t *p, size_t n, const float *in)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(void *)(p + 2 * i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++) {
		uint16_t h = ns_f32_to_f16(in[i]);
		memcpy(p + 2 * i, &h, 2);
	}
}

/* Every AVX2 CPU has F16C, and "avx2" is a feature name both GCC and clang
 * know (clang 14 lacks "f16c"); the test is a load of a libgcc variable. */
static int have_f16c(void)
{
	return __builtin_cpu_supports("avx2");
}
#endif

/* The dtype switch sits outside the loops so each loop is a tight,
 * vectorisable conversion; contiguous f32 is a plain memcpy. */
#define LOOP_LD(T, EXPR)                                       \
	for (size_t i = 0; i < n; i++) {                       \
		T x_;                                          \
		memcpy(&x_, p + (int64_t)i * sb, sizeof(T));   \
		out[i] = (EXPR);                               \
	}                                                      \
	return

void fwsim_load_f32(uint32_t dt, const uint8_t *p, int64_t sb, size_t n, float *out)
{
	if (sb == 0 && n > 1) {
		/* a broadcast operand (a depthwise weight, a bias): one conversion,
		 * then a fill the compiler vectorises */
		float v;
		fwsim_load_f32(dt, p, 0, 1, &v);
		for (size_t i = 0; i < n; i++)
			out[i] = v;
		return;
	}
	switch (dt) {
	case ISA_DT_F32:
		if (sb == 4) {
			memcpy(out, p, n * 4);
			return;
		}
		LOOP_LD(float, x_);
	case ISA_DT_BF16: LOOP_LD(uint16_t, ns_bf16_to_f32(x_));
	case ISA_DT_F16:
#ifdef FWSIM_HAVE_F16C_PATH
		if (sb == 2 && have_f16c()) {
			f16_to_f32_f16c(p, n, out);
			return;
		}
#endif
		LOOP_LD(uint16_t, ns_f16_to_f32(x_));
	case ISA_DT_S32: LOOP_LD(int32_t, (float)x_);
	case ISA_DT_S64: LOOP_LD(int64_t, (float)x_);
	case ISA_DT_U32: LOOP_LD(uint32_t, (float)x_);
	case ISA_DT_U64: LOOP_LD(uint64_t, (float)x_);
	case ISA_DT_U8: LOOP_LD(uint8_t, (float)x_);
	case ISA_DT_PRED: LOOP_LD(uint8_t, (float)(x_ != 0));
	case ISA_DT_S8: LOOP_LD(int8_t, (float)x_);
	case ISA_DT_S16: LOOP_LD(int16_t, (float)x_);
	case ISA_DT_U16: LOOP_LD(uint16_t, (float)x_);
	default:
		memset(out, 0, n * sizeof(*out));
	}
}

void fwsim_load_i64(uint32_t dt, const uint8_t *p, int64_t sb, size_t n, int64_t *out)
{
	switch (dt) {
	case ISA_DT_F32: case ISA_DT_BF16: case ISA_DT_F16:
		for (size_t i = 0; i < n; i++)
			out[i] = fw_ld_i64(dt, p + (int64_t)i * sb);
		return;
	case ISA_DT_S32: LOOP_LD(int32_t, x_);
	case ISA_DT_S64: LOOP_LD(int64_t, x_);
	case ISA_DT_U32: LOOP_LD(uint32_t, (int64_t)x_);
	case ISA_DT_U64: LOOP_LD(uint64_t, (int64_t)x_);
	case ISA_DT_U8: LOOP_LD(uint8_t, x_);
	case ISA_DT_PRED: LOOP_LD(uint8_t, x_ != 0);
	case ISA_DT_S8: LOOP_LD(int8_t, x_);
	case ISA_DT_S16: LOOP_LD(int16_t, x_);
	case ISA_DT_U16: LOOP_LD(uint16_t, x_);
	default:
		memset(out, 0, n * sizeof(*out));
	}
}

#define LOOP_ST(T, EXPR)                                       \
	for (size_t i = 0; i < n; i++) {                       \
		T x_ = (EXPR);                                 \
		memcpy(p + (int64_t)i * sb, &x_, sizeof(T));   \
	}                                                      \
	return

void fwsim_store_f32(uint32_t dt, uint8_t *p, int64_t sb, size_t n, const float *in)
{
	switch (dt) {
	case ISA_DT_F32:
		if (sb == 4) {
			memmove(p, in, n * 4);
			return;
		}
		LOOP_ST(float, in[i]);
	case ISA_DT_BF16: LOOP_ST(uint16_t, ns_f32_to_bf16(in[i]));
	case ISA_DT_F16:
#ifdef FWSIM_HAVE_F16C_PATH
		if (sb == 2 && have_f16c()) {
			f32_to_f16_f16c(p, n, in);
			return;
		}
#endif
		LOOP_ST(uint16_t, ns_f32_to_f16(in[i]));
	case ISA_DT_PRED: LOOP_ST(uint8_t, in[i] != 0);
	default:
		for (size_t i = 0; i < n; i++)
			fw_st_f32(dt, p + (int64_t)i * sb, in[i]);
	}
}

void fwsim_store_i64(uint32_t dt, uint8_t *p, int64_t sb, size_t n, const int64_t *in,
		     int src_unsigned)
{
	switch (dt) {
	case ISA_DT_S32: case ISA_DT_U32: LOOP_ST(uint32_t, (uint32_t)in[i]);
	case ISA_DT_S64: case ISA_DT_U64: LOOP_ST(int64_t, in[i]);
	case ISA_DT_U8: case ISA_DT_S8: LOOP_ST(uint8_t, (uint8_t)in[i]);
	case ISA_DT_S16: case ISA_DT_U16: LOOP_ST(uint16_t, (uint16_t)in[i]);
	case ISA_DT_PRED: LOOP_ST(uint8_t, in[i] != 0);
	default:
		for (size_t i = 0; i < n; i++)
			fw_st_i64(dt, p + (int64_t)i * sb, in[i], src_unsigned);
	}
}

void fwsim_copy_raw(uint8_t *dst, int64_t dsb, const uint8_t *src, int64_t ssb, size_t n,
		    size_t esize)
{
	if (dsb == (int64_t)esize && ssb == (int64_t)esize) {
		memmove(dst, src, n * esize);
		return;
	}
	if (ssb == 0 && dsb == 4 && esize == 4) { /* a fill (zero padding) */
		uint32_t v, *d = (uint32_t *)(void *)dst;
		memcpy(&v, src, 4);
		if (((uintptr_t)dst & 3u) == 0) {
			for (size_t i = 0; i < n; i++)
				d[i] = v;
			return;
		}
	}
	if (esize == 4 && dsb == 4 && ssb == 8 && !((uintptr_t)dst & 3u) && !((uintptr_t)src & 3u)) {
		/* every other element into a row: the im2col copy of a stride-2
		 * window (a network's stem); vectorises, where the loop below moves
		 * one element per memcpy */
		uint32_t *d = (uint32_t *)(void *)dst;
		const uint32_t *s = (const uint32_t *)(const void *)src;
		for (size_t i = 0; i < n; i++)
			d[i] = s[2 * i];
		return;
	}
	switch (esize) {
	case 1: for (size_t i = 0; i < n; i++) dst[(int64_t)i * dsb] = src[(int64_t)i * ssb]; return;
	case 2: for (size_t i = 0; i < n; i++) memcpy(dst + (int64_t)i * dsb, src + (int64_t)i * ssb, 2); return;
	case 4: for (size_t i = 0; i < n; i++) memcpy(dst + (int64_t)i * dsb, src + (int64_t)i * ssb, 4); return;
	default: for (size_t i = 0; i < n; i++) memcpy(dst + (int64_t)i * dsb, src + (int64_t)i * ssb, 8); return;
	}
}

/* ---- row iterator ---- */

void fwsim_iter_init(fwsim_iter_t *it, uint32_t rank, const uint64_t *shape, uint32_t n,
		     const int64_t *const strides[], const size_t esize[])
{
	memset(it, 0, sizeof(*it));
	it->n = n;
	uint32_t r = 0;
	for (uint32_t k = 0; k < rank; k++) {
		if (shape[k] == 0) {
			it->empty = 1;
			return;
		}
		if (shape[k] == 1)
			continue; /* size-1 dims never move: drop them */
		int merge = r > 0;
		for (uint32_t i = 0; i < n && merge; i++)
			merge = it->bstride[i][r - 1] ==
				strides[i][k] * (int64_t)esize[i] * (int64_t)shape[k];
		if (merge) {
			it->shape[r - 1] *= shape[k];
			for (uint32_t i = 0; i < n; i++)
				it->bstride[i][r - 1] = strides[i][k] * (int64_t)esize[i];
			continue;
		}
		it->shape[r] = shape[k];
		for (uint32_t i = 0; i < n; i++)
			it->bstride[i][r] = strides[i][k] * (int64_t)esize[i];
		r++;
	}
	if (r == 0) { /* rank 0 or all dims 1: one element */
		it->shape[0] = 1;
		r = 1;
	}
	it->rank = r;
	it->inner = it->shape[r - 1];
	for (uint32_t i = 0; i < n; i++)
		it->inner_bs[i] = it->bstride[i][r - 1];
	it->rows = 1;
	for (uint32_t k = 0; k + 1 < r; k++)
		it->rows *= it->shape[k];
}

/* off[i] += bstride[i][k] * mul for the n operands. Most instructions have at
 * most ISA_MAX_AP; with that bound known the compiler keeps the loop scalar,
 * as a row step of a few operands wants (vectorised for FUSED's up to
 * FWSIM_ITER_MAX_OPS, it made rows of 2 elements 2.3x slower). */
static inline void iter_move(fwsim_iter_t *it, int k, int64_t mul)
{
	uint32_t n = it->n;
	if (n <= ISA_MAX_AP) {
		for (uint32_t i = 0; i < n; i++)
			it->off[i] += it->bstride[i][k] * mul;
	} else {
		for (uint32_t i = 0; i < n; i++)
			it->off[i] += it->bstride[i][k] * mul;
	}
}

bool fwsim_iter_next(fwsim_iter_t *it)
{
	if (it->empty || it->rows <= 1)
		return false;
	it->rows--;
	for (int k = (int)it->rank - 2; k >= 0; k--) {
		if (++it->idx[k] < it->shape[k]) {
			iter_move(it, k, 1);
			return true;
		}
		it->idx[k] = 0;
		iter_move(it, k, -(int64_t)(it->shape[k] - 1));
	}
	return false;
}

bool fwsim_iter_advance(fwsim_iter_t *it, uint64_t q)
{
	/* along the row dim at once as far as it has room, then row by row
	 * (carrying into the dims above) */
	if (q > 1 && it->rank >= 2 && !it->empty && it->rows > q) {
		uint32_t k = it->rank - 2;
		uint64_t room = it->shape[k] - 1 - it->idx[k], s = q < room ? q : room;
		it->idx[k] += s;
		it->rows -= s;
		iter_move(it, (int)k, (int64_t)s);
		q -= s;
	}
	while (q--)
		if (!fwsim_iter_next(it))
			return false;
	return true;
}
