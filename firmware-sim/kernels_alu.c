/* Elementwise kernels: ALU unary/binary/ternary, ACTIVATE and COPY (with dtype conversion). */
#include <math.h>
#include <stdlib.h>

#include "alu_ops.h"
#include "convert.h"
#include "internal.h"
#include "pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* ---- the blocked elementwise driver ---- */

static int is_direct_f32(uint32_t dt, int64_t bs, const uint8_t *p)
{
	return dt == ISA_DT_F32 && bs == 4 && ((uintptr_t)p & 3u) == 0;
}

typedef enum { EW_ALU, EW_ACT, EW_COPY } ew_kind_t;

static float act_f32(uint32_t func, float t);

static void act_block(uint32_t func, float scale, float bias, size_t n, float *o, const float *a)
{
	switch (func) {
	case ISA_ACT_IDENTITY: for (size_t i = 0; i < n; i++) o[i] = a[i] * scale + bias; return;
	case ISA_ACT_RELU:
		for (size_t i = 0; i < n; i++) {
			float t = a[i] * scale + bias;
			o[i] = t < 0 ? 0.0f : t; /* NaN passes through */
		}
		return;
	case ISA_ACT_EXP:
		/* t = a * scale + bias into o, then expf's bits over the block */
		for (size_t i = 0; i < n; i++)
			o[i] = a[i] * scale + bias;
		fwsim_expf_block(n, o, o);
		return;
	default:
		for (size_t i = 0; i < n; i++)
			o[i] = act_f32(func, a[i] * scale + bias);
	}
}

static float act_f32(uint32_t func, float t)
{
	switch (func) {
	case ISA_ACT_IDENTITY: return t;
	case ISA_ACT_RELU: return t < 0 ? 0.0f : t;
	case ISA_ACT_GELU: return 0.5f * t * (1.0f + erff(t * 0.70710678118654752f));
	case ISA_ACT_GELU_TANH:
		return 0.5f * t * (1.0f + tanhf(0.7978845608028654f * (t + 0.044715f * t * t * t)));
	case ISA_ACT_TANH: return tanhf(t);
	case ISA_ACT_LOGISTIC: return f_logistic(t);
	case ISA_ACT_EXP: return expf(t);
	case ISA_ACT_LOG: return logf(t);
	case ISA_ACT_SQRT: return sqrtf(t);
	case ISA_ACT_RSQRT: return 1.0f / sqrtf(t);
	case ISA_ACT_SILU: return t * f_logistic(t);
	case ISA_ACT_SOFTPLUS: return (t > 0 ? t : 0.0f) + log1pf(expf(-fabsf(t)));
	case ISA_ACT_RECIPROCAL: return 1.0f / t;
	case ISA_ACT_SQUARE: return t * t;
	default: return 0;
	}
}

/* ---- the transposing COPY ---- */

/* A same-dtype COPY whose two sides stream along different dims (a transpose,
 * a layout change, an im2col gather) walked row by row reads or writes one side
 * with a large stride, one cache line per element. It is copied instead in
 * square tiles of the inner dim and the dim t along which the strided side is
 * contiguous: a tile's lines on both sides stay in L1 while it is copied, so
 * each line is fetched once. Bytes are moved, not converted, so the result is
 * the row path's bit for bit. */
#define COPY_TILE_BYTES 128 /* a tile side: 32 f32, 64 bf16 / f16 */

/* Copies an nr x nc tile: element (i, j) from s + i sr + j sc to d + i dr + j dc. */
#define COPY_TILE_LOOP(T)                                                        \
	for (size_t i = 0; i < nr; i++) {                                        \
		uint8_t *di = d + (int64_t)i * dr;                               \
		const uint8_t *si = s + (int64_t)i * sr;                         \
		for (size_t j = 0; j < nc; j++) {                                \
			T v_;                                                    \
			memcpy(&v_, si + (int64_t)j * sc, sizeof(T));            \
			memcpy(di + (int64_t)j * dc, &v_, sizeof(T));            \
		}                                                                \
	}

static void copy_tile_scalar(size_t es, uint8_t *d, int64_t dr, int64_t dc, const uint8_t *s,
			     int64_t sr, int64_t sc, size_t nr, size_t nc)
{
	switch (es) {
	case 1: COPY_TILE_LOOP(uint8_t); return;
	case 2: COPY_TILE_LOOP(uint16_t); return;
	case 4: COPY_TILE_LOOP(uint32_t); return;
	default: COPY_TILE_LOOP(uint64_t); return;
	}
}

#if defined(__x86_64__) || defined(__i386__)
/* 8 lines of 8 contiguous 4-byte elements at s, s + sl, ... into 8 lines at
 * d, d + dl, ...: line c of d is element c of every line of s. Shuffles only,
 * so the bits move unchanged (NaN payloads included). */
__attribute__((target("avx")))
void fwsim_tr8x8_u32(const uint8_t *s, int64_t sl, uint8_t *d, int64_t dl)
{
	__m256 r[8], t[8];
	for (int l = 0; l < 8; l++)
		r[l] = _mm256_loadu_ps((const float *)(const void *)(s + l * sl));
	for (int l = 0; l < 8; l += 2) {
		t[l] = _mm256_unpacklo_ps(r[l], r[l + 1]);
		t[l + 1] = _mm256_unpackhi_ps(r[l], r[l + 1]);
	}
	for (int l = 0; l < 8; l += 4) {
		r[l] = _mm256_shuffle_ps(t[l], t[l + 2], 0x44);
		r[l + 1] = _mm256_shuffle_ps(t[l], t[l + 2], 0xee);
		r[l + 2] = _mm256_shuffle_ps(t[l + 1], t[l + 3], 0x44);
		r[l + 3] = _mm256_shuffle_ps(t[l + 1], t[l + 3], 0xee);
	}
	for (int l = 0; l < 4; l++) {
		_mm256_storeu_ps((float *)(void *)(d + l * dl),
				 _mm256_permute2f128_ps(r[l], r[l + 4], 0x20));
		_mm256_storeu_ps((float *)(void *)(d + (l + 4) * dl),
				 _mm256_permute2f128_ps(r[l], r[l + 4], 0x31));
	}
}
#endif

#ifdef __SSE2__
/* tr8x8_u32 for 2-byte elements (bf16, f16): 8 lines of 8 in 128-bit
 * registers, SSE2 (every x86-64 CPU has it). */
static void tr8x8_u16(const uint8_t *s, int64_t sl, uint8_t *d, int64_t dl)
{
	__m128i r[8], t[8];
	for (int l = 0; l < 8; l++)
		r[l] = _mm_loadu_si128((const __m128i *)(const void *)(s + l * sl));
	for (int l = 0; l < 8; l += 2) {
		t[l] = _mm_unpacklo_epi16(r[l], r[l + 1]);
		t[l + 1] = _mm_unpackhi_epi16(r[l], r[l + 1]);
	}
	/* r[q], r[q + 4]: columns 2q and 2q + 1 of lines 0-3, then of lines 4-7 */
	for (int h = 0; h < 2; h++) {
		const __m128i *u = t + 4 * h;
		r[4 * h] = _mm_unpacklo_epi32(u[0], u[2]);
		r[4 * h + 1] = _mm_unpackhi_epi32(u[0], u[2]);
		r[4 * h + 2] = _mm_unpacklo_epi32(u[1], u[3]);
		r[4 * h + 3] = _mm_unpackhi_epi32(u[1], u[3]);
	}
	for (int q = 0; q < 4; q++) {
		_mm_storeu_si128((__m128i *)(void *)(d + 2 * q * dl), _mm_unpacklo_epi64(r[q], r[q + 4]));
		_mm_storeu_si128((__m128i *)(void *)(d + (2 * q + 1) * dl),
				 _mm_unpackhi_epi64(r[q], r[q + 4]));
	}
}
#endif

/* An 8x8 register transpose for es-byte elements on this CPU, or NULL. */
typedef void (*tr8x8_fn)(const uint8_t *s, int64_t sl, uint8_t *d, int64_t dl);
static tr8x8_fn tr8x8_for(size_t es)
{
#if defined(__x86_64__) || defined(__i386__)
	if (es == 4 && __builtin_cpu_supports("avx"))
		return fwsim_tr8x8_u32;
#endif
#ifdef __SSE2__
	if (es == 2)
		return tr8x8_u16;
#endif
	(void)es;
	return NULL;
}

void fwsim_copy_tile(size_t es, uint8_t *d, int64_t dr, int64_t dc, const uint8_t *s,
		      int64_t sr, int64_t sc, size_t nr, size_t nc)
{
	/* 2- and 4-byte elements, one side contiguous along each tile dim: 8x8
	 * blocks transposed in registers. A partial last block along either dim
	 * moves back to end at the edge, rewriting a few elements with the same
	 * values: a 9-wide tile (a 3x3 kernel's taps) is two register transposes
	 * per 8 rows, not one and a column copied element by element. */
	int64_t e = (int64_t)es;
	int along_r = sr == e && dc == e, along_c = sc == e && dr == e;
	tr8x8_fn tr = nr >= 8 && nc >= 8 && (along_r || along_c) ? tr8x8_for(es) : NULL;
	if (!tr) {
		copy_tile_scalar(es, d, dr, dc, s, sr, sc, nr, nc);
		return;
	}
	for (size_t i = 0, inext = 0; inext < nr; inext = i + 8) {
		i = inext + 8 <= nr ? inext : nr - 8;
		for (size_t j = 0, jnext = 0; jnext < nc; jnext = j + 8) {
			j = jnext + 8 <= nc ? jnext : nc - 8;
			const uint8_t *sb = s + (int64_t)i * sr + (int64_t)j * sc;
			uint8_t *db = d + (int64_t)i * dr + (int64_t)j * dc;
			if (along_r)
				tr(sb, sc, db, dr);
			else
				tr(sb, sr, db, dc);
		}
	}
}

/* The dim to tile with the inner one, or -1 when the row path is as good: one
 * side's rows are strided (not a broadcast) and it is contiguous along an
 * outer dim t of at least two elements, where the other side is not. */
static int copy_tile_dim(const fwsim_iter_t *it, int64_t es)
{
	if (it->rank < 2 || it->inner < 4)
		return -1;
	int64_t di = it->inner_bs[0], si = it->inner_bs[1];
	if (si == 0 || di == si)
		return -1;
	int side = di == es ? 1 : si == es ? 0 : -1;
	if (side < 0)
		return -1;
	for (int t = (int)it->rank - 2; t >= 0; t--)
		if (it->bstride[side][t] == es && it->bstride[1 - side][t] != es &&
		    it->shape[t] >= 4)
			return t;
	return -1;
}

/* The rows of it (it.off: the first row; idx all 0) copied in tiles of dims
 * t and inner; flat: the row-major index of its first element. The NaN/Inf
 * scan sees each written tile row once, in tile order, and keeps the smallest
 * bad index as the row path does. */
static fwsim_status_t copy_tiled(const fwsim_kargs_t *k, const fwsim_iter_t *it, int t,
				 uint64_t flat)
{
	uint32_t odt = k->insn->ap[0].dtype, r = it->rank;
	size_t es = isa_dtype_size(odt);
	uint64_t tile = COPY_TILE_BYTES / es;
	uint64_t fst[ISA_MAX_RANK]; /* element strides of the row-major flat index */
	fwsim_iter_flat_strides(it, fst);
	const int64_t *b0 = it->bstride[0], *b1 = it->bstride[1];
	uint64_t idx[ISA_MAX_RANK] = { 0 }, nt = it->shape[t], ni = it->inner;
	fwsim_numchk_t part;
	_Alignas(64) float fb[COPY_TILE_BYTES];
	if (k->chk) {
		part = *k->chk;
		part.count = 0;
		part.first = UINT64_MAX;
	}
	for (;;) {
		int64_t o0 = it->off[0], o1 = it->off[1];
		uint64_t f0 = flat;
		for (uint32_t q = 0; q + 1 < r; q++) {
			o0 += (int64_t)idx[q] * b0[q];
			o1 += (int64_t)idx[q] * b1[q];
			f0 += idx[q] * fst[q];
		}
		for (uint64_t i0 = 0; i0 < nt; i0 += tile) {
			size_t nr = nt - i0 < tile ? nt - i0 : tile;
			for (uint64_t j0 = 0; j0 < ni; j0 += tile) {
				size_t nc = ni - j0 < tile ? ni - j0 : tile;
				if (fwsim_tick(k, nr * nc))
					return FWSIM_TIMEOUT;
				uint8_t *d = k->base[0] + o0 + (int64_t)i0 * b0[t] + (int64_t)j0 * b0[r - 1];
				fwsim_copy_tile(es, d, b0[t], b0[r - 1],
					  k->base[1] + o1 + (int64_t)i0 * b1[t] + (int64_t)j0 * b1[r - 1],
					  b1[t], b1[r - 1], nr, nc);
				for (size_t i = 0; k->chk && i < nr; i++) {
					const uint8_t *p = d + (int64_t)i * b0[t];
					const float *v = fb;
					if (is_direct_f32(odt, b0[r - 1], p))
						v = (const float *)(const void *)p;
					else
						fwsim_load_f32(odt, p, b0[r - 1], nc, fb);
					fwsim_numchk_block(&part, v, nc, f0 + (i0 + i) * fst[t] + j0);
					if (part.count) { /* tiles are not in flat order */
						fwsim_numchk_merge(k->chk, &part);
						part.count = 0;
						part.first = UINT64_MAX;
					}
				}
			}
		}
		/* the next index of the dims other than t and the inner one */
		if (!fwsim_index_next(idx, it->shape, (int)r - 1, t))
			return FWSIM_OK;
	}
}

/* ---- the COPY of short rows ---- */

/* A same-dtype COPY whose rows are a few elements (a 3x3 kernel's taps
 * gathered or reversed while the lowering lays out a convolution's weights)
 * paid the row path's per-row costs (iterator step, watch, copy and scan
 * calls) for every 3 elements: a [3, 65536, 3] gather took 10 ms of a
 * ResNet-18 step. Here the innermost dims run as one block per index of the
 * others: two dims, or three when two make a block of at most
 * COPY_SHORT_BLOCK bytes (an im2col COPY of a 3x3 window of small images,
 * [8, 128, 3, 3], paid those costs per 9 elements: 30 us for 9216). Each
 * block is scanned once when it is contiguous in ap0 (then in flat order),
 * else row by row. */
#define COPY_SHORT_BYTES 64
#define COPY_SHORT_BLOCK 256
/*
 * A transposed block: its input's rows lie closer along the dim above the
 * rows' dim than along it, as a ResNet's [512, 512, 3, 3] kernel is laid out
 * for its input gradient's GEMM (the taps reversed, the feature dims
 * swapped). Walked in the output's order, each row of 36 bytes came from
 * another page: 1.46 ms for the 9.4 MB kernel in a step, 2.6 GB/s on a 38 MB
 * one. A band of COPY_BAND rows of the dim above is copied with the rows'
 * dim outside, so that the band's input rows are read on from one another,
 * and the next such run is prefetched CB_PF runs ahead (the hardware's
 * prefetchers do not follow steps of pages). More rows per band open more
 * output streams at the same page offset (12 KiB apart, the L1's sets):
 * 32 doubled the time on the 38 MB kernel, 12 was best (8: +10%, 16: +20%).
 * The band's output is one run in flat order when the output is dense.
 * A forward's [3, 65536, 3] from [65536][3][3] (the kernel rows outermost)
 * is such a block too: in the output's order it read the input three times
 * a third of each line, 0.6-0.8 ms each in the step; in bands, 0.2-0.3.
 */
#define COPY_BAND 12
#define CB_PF 8

/* n3 x n2 x n rows of 4-byte elements (strides in bytes). */
static void copy_block_u32(uint8_t *d, int64_t d3, int64_t d2, int64_t di, const uint8_t *s,
			   int64_t s3, int64_t s2, int64_t si, uint64_t n3, uint64_t n2, uint64_t n)
{
	for (uint64_t a = 0; a < n3; a++)
		for (uint64_t b = 0; b < n2; b++) {
			uint8_t *dr = d + (int64_t)a * d3 + (int64_t)b * d2;
			const uint8_t *sr = s + (int64_t)a * s3 + (int64_t)b * s2;
			for (uint64_t c = 0; c < n; c++)
				memcpy(dr + (int64_t)c * di, sr + (int64_t)c * si, 4);
		}
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
/* Rows of n f32 that copy_block_u32_avx512 moves together in one vector:
 * rows n2 along, at pitches s2 (read) and d2 (written) bytes, both positive
 * multiples of 4, written apart and within 16 lanes; 0 or 1: none. */
static uint64_t win_group(uint64_t n, uint64_t n2, int64_t s2, int64_t d2)
{
	if (n > 16 || s2 <= 0 || s2 % 4 || d2 < 4 * (int64_t)n || d2 % 4 || s2 / 4 >= (1 << 24))
		return 0;
	uint64_t gr = (16 - n) / (uint64_t)(d2 / 4) + 1;
	return gr < n2 ? gr : n2;
}

/* copy_block_u32 for rows contiguous in d, at stride +-4 bytes in s (a
 * kernel's taps reversed: rows of at most 16) or 8: per 16 elements of a row
 * one masked load (two at stride 8), a lane permute when reversed or strided,
 * one masked store (the lanes past the row touch no memory).
 * The bits move unchanged. Returns, when bias is not 0 (fwsim_numchk_bias:
 * the block's values are floats under a NaN/Inf check), whether any value
 * copied may be bad: the check's fast test done on the registers as they are
 * stored, so that a clean block (the common case) is never read again. A
 * scan after the copy took ResNet-18's largest weight reorder from 679 to
 * 927 us. */
__attribute__((target("avx512f")))
static bool copy_block_u32_avx512(uint8_t *d, int64_t d3, int64_t d2, const uint8_t *s, int64_t s3,
				  int64_t s2, int64_t si, uint64_t n3, uint64_t n2, uint64_t n,
				  uint32_t bias)
{
	__m512i acc = _mm512_setzero_si512(), vb = _mm512_set1_epi32((int)bias);
	__m512i absm = _mm512_set1_epi32(0x7fffffff);
	/* Windows of rows: groups of gr rows of n, read at a row pitch of s2
	 * bytes and written at one of d2 into 16 lanes (the im2col of a
	 * convolution: 3x3 windows of 8x8 planes into runs of 9, a group each;
	 * rows of 7 of 8x8 planes shifted by a tap, two to a group). Two masked
	 * loads cover a group's input when it spans at most 32 floats (else one
	 * gather), one permute gathers its rows and one masked store writes
	 * them; row by row, each row of 3 was a masked load and store of its
	 * own, 2.8 ns a row. */
	uint64_t gr = win_group(n, n2, s2, d2);
	if (si == 4 && gr < 2 && win_group(n, n3, s3, d3) >= 2) {
		/* grouped along the outer dim instead: a kernel reordered into
		 * [3][O x C][3] from [O x C][3][3] runs in bands with (O, C)
		 * outermost, its rows of 3 at pitches of 9 (read) and 3 (written)
		 * along (O, C). A copy's elements may move in any order. */
		uint64_t tn = n3;
		int64_t td = d3, ts = s3;
		n3 = n2, d3 = d2, s3 = s2;
		n2 = tn, d2 = td, s2 = ts;
		gr = win_group(n, n2, s2, d2);
	}
	int64_t pin = s2 / 4, pout = d2 / 4;
	if (si == 4 && gr >= 2) {
		/* [0]: a whole group, [1]: the last one of n2 % gr rows */
		__m512i g[2];
		__mmask16 mw[2], mlo[2], mhi[2];
		bool perm[2];
		for (int q = 0; q < 2; q++) {
			uint64_t rows = q ? n2 % gr : gr, win = (uint64_t)((int64_t)(rows - 1) * pin) + n;
			_Alignas(64) int32_t gx[16];
			uint32_t m = 0;
			for (uint64_t l = 0; l < 16; l++) {
				uint64_t r = l / (uint64_t)pout, c = l % (uint64_t)pout;
				bool on = r < rows && c < n;
				gx[l] = on ? (int32_t)((int64_t)r * pin + (int64_t)c) : 0;
				m |= on ? 1u << l : 0;
			}
			g[q] = _mm512_load_si512(gx);
			mw[q] = (__mmask16)m;
			perm[q] = win <= 32;
			mlo[q] = (__mmask16)(win >= 16 ? 0xffffu : (1u << win) - 1);
			mhi[q] = (__mmask16)(win > 16 && win <= 32 ? (1u << (win - 16)) - 1 : 0);
		}
		for (uint64_t a = 0; a < n3; a++)
			for (uint64_t b0 = 0; b0 < n2; b0 += gr) {
				int q = n2 - b0 < gr;
				const uint8_t *sp = s + (int64_t)a * s3 + (int64_t)b0 * s2;
				/* rows further apart (3x3 windows of 16x16 planes): a gather */
				__m512i v = perm[q]
					? _mm512_permutex2var_epi32(_mm512_maskz_loadu_epi32(mlo[q], sp), g[q],
								    _mm512_maskz_loadu_epi32(mhi[q], sp + 64))
					: _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mw[q], g[q], sp, 4);
				_mm512_mask_storeu_epi32(d + (int64_t)a * d3 + (int64_t)b0 * d2, mw[q], v);
				v = _mm512_maskz_mov_epi32(mw[q], v);
				acc = _mm512_or_si512(acc, _mm512_add_epi32(_mm512_and_si512(v, absm), vb));
			}
		return bias && _mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()) != 0;
	}
	/* the row's last piece of 1..16 elements: tn, its mask */
	uint64_t tn = n - (n - 1) / 16 * 16, full = n - tn;
	__mmask16 m = (__mmask16)((1u << tn) - 1);
	/* reversed: the row's lowest address holds element n - 1 */
	int64_t low = si < 0 ? (int64_t)(n - 1) * si : 0;
	_Alignas(64) int32_t ix[16];
	for (int l = 0; l < 16; l++)
		ix[l] = l < (int)n ? (int)n - 1 - l : l;
	__m512i rev = _mm512_load_si512(ix);
	/* stride 2 (a max-pool's windows, a strided convolution's im2col): a
	 * piece's 2 x 16 - 1 elements in two masked loads, its even lanes picked */
	__m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	uint32_t span2 = 2 * (uint32_t)tn - 1;
	__mmask16 m2lo = (__mmask16)(span2 >= 16 ? 0xffffu : (1u << span2) - 1);
	__mmask16 m2hi = (__mmask16)(span2 > 16 ? (1u << (span2 - 16)) - 1 : 0);
	/* the rows of outer index a + CB_PF when they run on one after
	 * another within a few lines (a band, COPY_BAND) */
	int64_t span = (int64_t)n2 * s2;
	bool pf = s2 > 0 && span <= 4096;
	for (uint64_t a = 0; a < n3; a++) {
		if (pf) {
			const uint8_t *q = s + (int64_t)(a + CB_PF) * s3 + low;
			for (int64_t o = 0; o < span + 64; o += 64)
				_mm_prefetch((const char *)(q + o), _MM_HINT_T0);
		}
		for (uint64_t b = 0; b < n2; b++) {
			uint8_t *dr = d + (int64_t)a * d3 + (int64_t)b * d2;
			const uint8_t *sr = s + (int64_t)a * s3 + (int64_t)b * s2 + low;
			/* pieces of 16, the last one of tn under its masks */
			for (uint64_t c = 0; c < n; c += 16) {
				bool last = c == full;
				const uint8_t *sp = sr + (si == 8 ? 8 : 4) * (int64_t)c;
				__m512i v;
				if (si == 8)
					v = _mm512_permutex2var_epi32(
						_mm512_maskz_loadu_epi32(last ? m2lo : 0xffff, sp), even,
						_mm512_maskz_loadu_epi32(last ? m2hi : 0x7fff, sp + 64));
				else
					v = _mm512_maskz_loadu_epi32(last ? m : 0xffff, sp);
				if (si < 0)
					v = _mm512_permutexvar_epi32(rev, v);
				_mm512_mask_storeu_epi32(dr + 4 * (int64_t)c, last ? m : 0xffff, v);
				/* lanes outside the mask are 0, and 0 + bias keeps bit 31 clear */
				acc = _mm512_or_si512(acc, _mm512_add_epi32(_mm512_and_si512(v, absm), vb));
			}
		}
	}
	return bias && _mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()) != 0;
}
#else
#define copy_block_u32_avx512(d, d3, d2, s, s3, s2, si, n3, n2, n, bias) ((void)(bias), true) /* never chosen */
#endif

static fwsim_status_t copy_short_rows(const fwsim_kargs_t *k, const fwsim_iter_t *it,
				      uint64_t flat)
{
	uint32_t odt = k->insn->ap[0].dtype, r = it->rank;
	size_t es = isa_dtype_size(odt);
	uint64_t n2 = it->shape[r - 2], ni = it->inner;
	int64_t di = it->bstride[0][r - 1], si = it->bstride[1][r - 1];
	int64_t d2 = it->bstride[0][r - 2], s2 = it->bstride[1][r - 2];
	bool vec = es == 4 && di == 4 && ((si == -4 && ni <= 16) || si == 4 || si == 8) &&
		   fwsim_cpu_avx512();
	/* the check's fast test in the vector copy's registers (f32 only) */
	uint32_t bias = k->chk && odt == ISA_DT_F32 ? fwsim_numchk_bias(k->chk) : 0;
	/* transposed (COPY_BAND): copied in bands of the dim above */
	bool band = es == 4 && r >= 3 && llabs(s2) > (int64_t)(ni * es) &&
		    llabs(it->bstride[1][r - 3]) < llabs(s2);
	int nd = band || (r >= 3 && n2 * ni * es <= COPY_SHORT_BLOCK) ? 3 : 2; /* dims per block */
	uint64_t n3 = nd == 3 ? it->shape[r - 3] : 1;
	if (band && n3 > COPY_BAND)
		n3 = COPY_BAND;
	int64_t d3 = nd == 3 ? it->bstride[0][r - 3] : 0, s3 = nd == 3 ? it->bstride[1][r - 3] : 0;
	bool dense = di == (int64_t)es && d2 == (int64_t)(ni * es) &&
		     (nd == 2 || d3 == (int64_t)(n2 * ni * es));
	/* the outer and inner dims of a block's walk: a band walks its rows'
	 * dim outside, so that each row of the band's input is read on from
	 * the last */
	int64_t od = band ? d2 : d3, id = band ? d3 : d2, os = band ? s2 : s3, is = band ? s3 : s2;
	uint64_t idx[ISA_MAX_RANK] = { 0 }, n3all = nd == 3 ? it->shape[r - 3] : 1;
	_Alignas(64) float fb[FWSIM_BLOCK];
	for (;;) {
		int64_t o0 = it->off[0], o1 = it->off[1];
		for (uint32_t q = 0; q + nd < r; q++) {
			o0 += (int64_t)idx[q] * it->bstride[0][q];
			o1 += (int64_t)idx[q] * it->bstride[1][q];
		}
		for (uint64_t j0 = 0; j0 < n3all; j0 += n3) {
			uint64_t nb = n3all - j0 < n3 ? n3all - j0 : n3, blk = nb * n2 * ni;
			if (fwsim_tick(k, blk))
				return FWSIM_TIMEOUT;
			uint8_t *d = k->base[0] + o0 + (int64_t)j0 * d3;
			const uint8_t *sp = k->base[1] + o1 + (int64_t)j0 * s3;
			bool suspect = true;
			if (vec)
				suspect = copy_block_u32_avx512(d, od, id, sp, os, is, si, band ? n2 : nb,
								band ? nb : n2, ni, bias);
			else if (es == 4)
				copy_block_u32(d, od, id, di, sp, os, is, si, band ? n2 : nb,
					       band ? nb : n2, ni);
			else
				for (uint64_t a = 0; a < nb; a++)
					copy_tile_scalar(es, d + (int64_t)a * d3, d2, di,
							 sp + (int64_t)a * s3, s2, si, n2, ni);
			if (!suspect) {
				/* tested in registers: nothing bad */
			} else if (k->chk && dense && is_direct_f32(odt, di, d)) {
				fwsim_numchk_block(k->chk, (const float *)(const void *)d, blk, flat);
			} else if (k->chk && dense) {
				for (uint64_t e = 0; e < blk; e += FWSIM_BLOCK) {
					size_t m = blk - e < FWSIM_BLOCK ? blk - e : FWSIM_BLOCK;
					fwsim_load_f32(odt, d + (int64_t)e * (int64_t)es, (int64_t)es, m, fb);
					fwsim_numchk_block(k->chk, fb, m, flat + e);
				}
			} else if (k->chk) {
				/* the rows as written, gathered a block at a time: their
				 * flat indices run on from one row to the next, so one
				 * scan covers them (a scan per row of 15 made ResNet-18's
				 * checked short-row copies 8x as slow) */
				uint64_t per = FWSIM_BLOCK / ni, rows = nb * n2;
				for (uint64_t i0 = 0; i0 < rows; i0 += per) {
					uint64_t nr = rows - i0 < per ? rows - i0 : per;
					for (uint64_t i = i0; i < i0 + nr; i++) {
						const uint8_t *row = d + (int64_t)(i / n2) * d3 +
								     (int64_t)(i % n2) * d2;
						float *to = fb + (i - i0) * ni;
						if (odt == ISA_DT_F32 && di == 4)
							memcpy(to, row, ni * 4);
						else
							fwsim_load_f32(odt, row, di, ni, to);
					}
					fwsim_numchk_block(k->chk, fb, nr * ni, flat + i0 * ni);
				}
			}
			flat += blk;
		}
		if (!fwsim_index_next(idx, it->shape, (int)r - nd, -1))
			return FWSIM_OK;
	}
}

/* Whether the value at p (dtype dt) that a fill writes everywhere passes k's
 * check (k->chk set): then none of the filled elements needs a scan. */
static bool fill_value_passes(const fwsim_kargs_t *k, uint32_t dt, const uint8_t *p)
{
	fwsim_numchk_t one = *k->chk;
	float v0;
	one.count = 0;
	one.first = UINT64_MAX;
	fwsim_load_f32(dt, p, 0, 1, &v0);
	fwsim_numchk_block(&one, &v0, 1, 0);
	return one.count == 0;
}

/* A same-dtype COPY of one 4-byte value to every element (all input
 * strides 0: a broadcast constant, an im2col buffer's padding zeroed) when
 * the value itself passes the check: no element needs a scan. Walked two
 * dims at a time; the row path paid its per-row costs (iterator step, watch,
 * the value's check) for every row: the border rows of 8 floats a 3x3
 * convolution's im2col zeroes over 8x8 images took 2 ns an element. */
static fwsim_status_t fill_u32(const fwsim_kargs_t *k, const fwsim_iter_t *it)
{
	uint32_t v, r = it->rank;
	memcpy(&v, k->base[1] + it->off[1], 4);
	int nd = r >= 2 ? 2 : 1;
	uint64_t ni = it->inner, n2 = nd == 2 ? it->shape[r - 2] : 1;
	int64_t di = it->bstride[0][r - 1], d2 = nd == 2 ? it->bstride[0][r - 2] : 0;
	uint64_t idx[ISA_MAX_RANK] = { 0 };
	for (;;) {
		int64_t o0 = it->off[0];
		for (uint32_t q = 0; q + (uint32_t)nd < r; q++)
			o0 += (int64_t)idx[q] * it->bstride[0][q];
		for (uint64_t b = 0; b < n2; b++) {
			uint8_t *row = k->base[0] + o0 + (int64_t)b * d2;
			for (uint64_t i0 = 0; i0 < ni; i0 += FWSIM_BLOCK * 16) {
				uint64_t m = ni - i0 < FWSIM_BLOCK * 16 ? ni - i0 : FWSIM_BLOCK * 16;
				if (fwsim_tick(k, m))
					return FWSIM_TIMEOUT;
				uint8_t *p = row + (int64_t)i0 * di;
				if (di == 4)
					for (uint64_t i = 0; i < m; i++)
						memcpy(p + 4 * i, &v, 4);
				else
					for (uint64_t i = 0; i < m; i++)
						memcpy(p + (int64_t)i * di, &v, 4);
			}
		}
		if (!fwsim_index_next(idx, it->shape, (int)r - nd, -1))
			return FWSIM_OK;
	}
}

/* Whether the rows of it run several per block: rows under half a block,
 * at least two along the dim above them. Each operand's block is then its
 * rows one after another: read in place (or loaded as one run) when they run
 * on from one row to the next (row stride rs = row length x element stride),
 * else gathered row by row; an output scattered row by row likewise. A
 * softmax's divide by its row sums (rows of 128) and a max-pool gradient's
 * window-offset steps (rows of 16 outputs at stride 2) paid a block's fixed
 * costs (watch, pointers, the op's call, the scan, the store) per row. */
static bool ew_rowset(const fwsim_iter_t *it, uint32_t n, int64_t *rs)
{
	uint32_t r = it->rank;
	if (r < 2 || it->inner * 2 > FWSIM_BLOCK || it->inner_bs[0] == 0 || it->shape[r - 2] < 2)
		return false;
	for (uint32_t i = 0; i < n; i++)
		rs[i] = it->bstride[i][r - 2];
	return true;
}

/* Whether operand i's rows of a rowset block run on from one to the next. */
static bool ew_row_run(const fwsim_iter_t *it, const int64_t *rs, uint32_t i)
{
	return rs[i] == (int64_t)it->inner * it->inner_bs[i];
}

/* Runs an elementwise instruction block by block: gather each operand block
 * into an f32 or i64 temporary (or use contiguous f32 in place), compute,
 * scan the fresh results for NaN/Inf while they are in L1, store with
 * conversion. */
/* Runs the rows of it (the whole instruction's, or one item's part of them),
 * the first at flat element index flat. */
static fwsim_status_t ew_rows(const fwsim_kargs_t *k, ew_kind_t kind, fwsim_iter_t it, uint64_t flat)
{
	const isa_insn_t *in = k->insn;
	uint32_t nin = kind == EW_ALU ? (uint32_t)isa_alu_arity(in->sub) : 1;
	uint32_t n = nin + 1;
	const isa_ap_t *aps[ISA_MAX_AP];
	for (uint32_t i = 0; i < n; i++)
		aps[i] = &in->ap[i];

	/* Compute class: the dtype that decides float vs integer arithmetic. */
	uint32_t cdt = in->ap[kind == EW_ALU && in->sub == ISA_ALU_SELECT ? 2 : 1].dtype;
	uint32_t odt = in->ap[0].dtype;
	int use_f = kind == EW_ACT || isa_dtype_is_float(cdt) ||
		    (kind == EW_COPY && isa_dtype_is_float(odt));
	int raw = kind == EW_COPY && cdt == odt;
	fwsim_ity_t t = fwsim_ity_of(cdt);
	float scale = (float)in->imm[0], bias = (float)in->imm[1];
	uint32_t chk_bias = k->chk ? fwsim_numchk_bias(k->chk) : 0;

	if (raw && isa_dtype_size(odt) == 4) {
		bool fill = true;
		for (uint32_t q = 0; q < it.rank; q++)
			fill &= it.bstride[1][q] == 0;
		if (fill && k->chk)
			fill = fill_value_passes(k, odt, k->base[1] + it.off[1]);
		if (fill)
			return fill_u32(k, &it);
	}
	if (raw) {
		int td = copy_tile_dim(&it, (int64_t)isa_dtype_size(odt));
		if (td >= 0)
			return copy_tiled(k, &it, td, flat);
		/* short rows; and rows of any length at stride 2 into contiguous
		 * ones, which copy_short_rows's vector path gathers 16 lanes at a
		 * time (the row path moved one element per step: a stem's im2col
		 * COPYs, rows of 32 at stride 2, 1.0 -> 0.3 ns an element) */
		bool s2rows = isa_dtype_size(odt) == 4 && it.inner_bs[0] == 4 && it.inner_bs[1] == 8 &&
			      fwsim_cpu_avx512();
		if (it.rank >= 2 && it.inner_bs[1] != 0 &&
		    (it.inner * isa_dtype_size(odt) <= COPY_SHORT_BYTES || s2rows))
			return copy_short_rows(k, &it, flat);
	}

	_Alignas(64) float fb[ISA_MAX_AP][FWSIM_BLOCK];
	_Alignas(64) int64_t ib[ISA_MAX_AP][FWSIM_BLOCK];
	int64_t rs[ISA_MAX_AP];
	bool rowset = !raw && ew_rowset(&it, n, rs);
	/* a float CLAMP by one lower and one upper bound (stride 0 throughout) */
	bool clamp_bounds = use_f && kind == EW_ALU && in->sub == ISA_ALU_CLAMP &&
			    it.inner_bs[1] == 0 && it.inner_bs[3] == 0 &&
			    (!rowset || (rs[1] == 0 && rs[3] == 0));
	do {
		/* a block of nr rows (rowset), else of one row */
		uint64_t nr = 1;
		if (rowset) {
			uint64_t left = it.shape[it.rank - 2] - it.idx[it.rank - 2];
			nr = FWSIM_BLOCK / it.inner < left ? FWSIM_BLOCK / it.inner : left;
		}
		for (uint64_t j = 0; j < it.inner; j += FWSIM_BLOCK) {
			size_t m = it.inner - j < FWSIM_BLOCK ? it.inner - j : FWSIM_BLOCK;
			m *= nr;
			if (fwsim_tick(k, m))
				return FWSIM_TIMEOUT;
			uint8_t *p[ISA_MAX_AP];
			for (uint32_t i = 0; i < n; i++)
				p[i] = k->base[i] + it.off[i] + (int64_t)j * it.inner_bs[i];
			if (raw) {
				size_t es = isa_dtype_size(odt);
				/* a fill (zero padding) of a good value needs no scan */
				bool fill_ok = k->chk && it.inner_bs[1] == 0 &&
					       fill_value_passes(k, odt, p[1]);
				if (k->chk && !fill_ok && is_direct_f32(odt, it.inner_bs[0], p[0]) &&
				    is_direct_f32(odt, it.inner_bs[1], p[1]) &&
				    (p[0] + m * 4 <= p[1] || p[1] + m * 4 <= p[0])) {
					if (fwsim_copy_f32_flag((float *)(void *)p[0],
								(const float *)(const void *)p[1], m,
								chk_bias))
						fwsim_numchk_block(k->chk, (const float *)(const void *)p[0],
								   m, flat);
				} else if (!k->chk || fill_ok || is_direct_f32(odt, it.inner_bs[0], p[0])) {
					fwsim_copy_raw(p[0], it.inner_bs[0], p[1], it.inner_bs[1], m, es);
					/* contiguous f32 is scanned where it was written */
					if (k->chk && !fill_ok)
						fwsim_numchk_block(k->chk, (const float *)(const void *)p[0],
								   m, flat);
				} else {
					/* A strided output is staged: the block copied into
					 * ib (contiguous, m * es <= its 4 KiB), scanned there,
					 * then stored, where reading it back for the scan was
					 * a second strided pass over the output. The values
					 * scanned are the ones stored, whatever another
					 * engine does to the input meanwhile. */
					uint8_t *stage = (uint8_t *)ib[0];
					fwsim_copy_raw(stage, (int64_t)es, p[1], it.inner_bs[1], m, es);
					const float *v = fb[0];
					if (odt == ISA_DT_F32)
						v = (const float *)(const void *)stage;
					else
						fwsim_load_f32(odt, stage, (int64_t)es, m, fb[0]);
					fwsim_numchk_block(k->chk, v, m, flat);
					fwsim_copy_raw(p[0], it.inner_bs[0], stage, (int64_t)es, m, es);
				}
			} else if (use_f) {
				const float *src[ISA_MAX_AP];
				float lo = 0, hi = 0;
				if (clamp_bounds) {
					/* bounds in registers: no lanes to fill */
					fwsim_load_f32(aps[1]->dtype, p[1], 0, 1, &lo);
					fwsim_load_f32(aps[3]->dtype, p[3], 0, 1, &hi);
				}
				for (uint32_t i = 1; i < n; i++) {
					if (clamp_bounds && i != 2)
						continue;
					if (rowset && !ew_row_run(&it, rs, i)) {
						/* row by row (one value per row at element stride 0) */
						for (uint64_t q = 0; q < nr; q++)
							fwsim_load_f32(aps[i]->dtype, p[i] + (int64_t)q * rs[i],
								       it.inner_bs[i], it.inner, fb[i] + q * it.inner);
						src[i] = fb[i];
					} else if (is_direct_f32(aps[i]->dtype, it.inner_bs[i], p[i])) {
						src[i] = (const float *)(const void *)p[i];
					} else {
						fwsim_load_f32(aps[i]->dtype, p[i], it.inner_bs[i], m, fb[i]);
						src[i] = fb[i];
					}
				}
				bool out_run = !rowset || ew_row_run(&it, rs, 0);
				int direct_out = out_run && is_direct_f32(odt, it.inner_bs[0], p[0]);
				float *dst = direct_out ? (float *)(void *)p[0] : fb[0];
				if (clamp_bounds) {
					if (fwsim_clamp_f32_bounds(m, dst, src[2], lo, hi, chk_bias) && k->chk)
						fwsim_numchk_block(k->chk, dst, m, flat);
					goto stored;
				} else if (kind == EW_ALU && k->chk && fwsim_alu_f32_fusable(in->sub)) {
					if (fwsim_alu_f32_checked(in->sub, m, dst, src[1], n > 2 ? src[2] : NULL,
							    n > 3 ? src[3] : NULL, chk_bias))
						fwsim_numchk_block(k->chk, dst, m, flat);
					goto stored;
				} else if (kind == EW_ALU)
					fwsim_alu_f32(in->sub, m, dst, src[1], n > 2 ? src[2] : NULL,
						n > 3 ? src[3] : NULL);
				else if (kind == EW_ACT)
					act_block(in->sub, scale, bias, m, dst, src[1]);
				else
					for (size_t e = 0; e < m; e++)
						dst[e] = src[1][e];
				if (k->chk)
					fwsim_numchk_block(k->chk, dst, m, flat);
			stored:
				if (out_run && !direct_out)
					fwsim_store_f32(odt, p[0], it.inner_bs[0], m, dst);
				for (uint64_t q = 0; !out_run && q < nr; q++)
					fwsim_store_f32(odt, p[0] + (int64_t)q * rs[0], it.inner_bs[0], it.inner,
							dst + q * it.inner);
			} else {
				for (uint32_t i = 1; i < n; i++) {
					if (!rowset || ew_row_run(&it, rs, i)) {
						fwsim_load_i64(aps[i]->dtype, p[i], it.inner_bs[i], m, ib[i]);
						continue;
					}
					for (uint64_t q = 0; q < nr; q++)
						fwsim_load_i64(aps[i]->dtype, p[i] + (int64_t)q * rs[i], it.inner_bs[i],
							       it.inner, ib[i] + q * it.inner);
				}
				if (kind == EW_ALU)
					fwsim_alu_i64(in->sub, t, m, ib[0], ib[1], n > 2 ? ib[2] : NULL,
						n > 3 ? ib[3] : NULL);
				else
					for (size_t e = 0; e < m; e++)
						ib[0][e] = ib[1][e];
				if (!rowset || ew_row_run(&it, rs, 0))
					fwsim_store_i64(odt, p[0], it.inner_bs[0], m, ib[0], t.uns);
				else
					for (uint64_t q = 0; q < nr; q++)
						fwsim_store_i64(odt, p[0] + (int64_t)q * rs[0], it.inner_bs[0], it.inner,
								ib[0] + q * it.inner, t.uns);
			}
			flat += m;
		}
		for (uint64_t q = 1; q < nr; q++)
			if (!fwsim_iter_next(&it))
				return FWSIM_OK;
	} while (fwsim_iter_next(&it));
	return FWSIM_OK;
}

/* One elementwise instruction cut into items: ranges of its outermost iterator
 * dim, each run whole by one thread with its own share of the NaN/Inf scan. */
typedef struct ew_job {
	const fwsim_kargs_t *k;
	ew_kind_t kind;
	fwsim_iter_t it;
	uint64_t per_outer; /* elements per index of the outermost dim */
	uint64_t chunk;     /* outer indices per item */
	fwsim_numchk_t chk[FWSIM_PAR_MAX_THREADS];
} ew_job_t;

static fwsim_status_t ew_item(void *ctx, uint64_t item, uint32_t slot, fwsim_watch_t *w)
{
	ew_job_t *j = ctx;
	fwsim_kargs_t kk = fwsim_par_kargs(j->k, j->chk, slot, w);
	fwsim_iter_t it = j->it;
	uint64_t a = item * j->chunk, b = a + j->chunk < it.shape[0] ? a + j->chunk : it.shape[0];
	if (it.rank == 1)
		it.inner = b - a; /* a range of the one row */
	else
		it.rows = it.rows / it.shape[0] * (b - a);
	it.shape[0] = b - a;
	for (uint32_t i = 0; i < it.n; i++)
		it.off[i] += (int64_t)a * it.bstride[i][0];
	return ew_rows(&kk, j->kind, it, a * j->per_outer);
}

/* Runs an elementwise instruction; one of at least fwsim_par_min_ew elements
 * is cut into about FWSIM_PAR_ITEMS ranges of its outermost dim for the pool
 * (pool.h), or of its one row (whole blocks) when every operand runs on
 * (a ReLU6's clamp of a contiguous activation): every element is computed by
 * the same code whoever runs it, so the results do not depend on the thread
 * count, and the scans' counts and first indices merge exactly. */
static fwsim_status_t ew_run(const fwsim_kargs_t *k, ew_kind_t kind)
{
	const isa_insn_t *in = k->insn;
	uint32_t n = (kind == EW_ALU ? (uint32_t)isa_alu_arity(in->sub) : 1) + 1;
	const isa_ap_t *aps[ISA_MAX_AP];
	for (uint32_t i = 0; i < n; i++)
		aps[i] = &in->ap[i];
	fwsim_iter_t it;
	fwsim_iter_init_aps(&it, &in->ap[0], n, aps);
	if (it.empty)
		return FWSIM_OK;
	uint64_t total = it.rows * it.inner;
	/* an output at stride 0 along the cut dim (every range writing the same
	 * elements, the last write the one kept) stays on one thread */
	if (total < fwsim_par_min_ew(k) || fwsim_get_threads() < 2 || it.bstride[0][0] == 0)
		return ew_rows(k, kind, it, 0);
	ew_job_t *j = malloc(sizeof(*j));
	if (!j)
		return ew_rows(k, kind, it, 0);
	j->k = k;
	j->kind = kind;
	j->it = it;
	j->per_outer = total / it.shape[0];
	j->chunk = (it.shape[0] + FWSIM_PAR_ITEMS - 1) / FWSIM_PAR_ITEMS;
	if (it.rank == 1)
		j->chunk = (j->chunk + FWSIM_BLOCK - 1) / FWSIM_BLOCK * FWSIM_BLOCK;
	fwsim_par_chk_init(k, j->chk);
	uint64_t items = (it.shape[0] + j->chunk - 1) / j->chunk;
	fwsim_status_t st = fwsim_par_for(items, ew_item, j, k->watch);
	fwsim_par_chk_merge(k, j->chk);
	free(j);
	return st;
}

fwsim_status_t fwsim_kernel_alu(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_ALU);
}

fwsim_status_t fwsim_kernel_activate(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_ACT);
}

fwsim_status_t fwsim_kernel_copy(const fwsim_kargs_t *k)
{
	return ew_run(k, EW_COPY);
}
