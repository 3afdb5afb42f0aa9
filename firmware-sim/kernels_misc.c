/* GPSIMD kernels: IOTA, GATHER, SCATTER and RNG (Philox4x32-10). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alu_ops.h"
#include "convert.h"
#include "internal.h"

/* ---- IOTA ---- */

static int64_t imm_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	if (v >= 9223372036854775808.0)
		return INT64_MAX;
	return (int64_t)v;
}

fwsim_status_t fwsim_kernel_iota(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0];
	uint32_t r = o->rank, d = in->param, dt = o->dtype;
	if (isa_ap_num_elements(o) == 0)
		return FWSIM_OK;
	int fl = isa_dtype_is_float(dt);
	int64_t es = (int64_t)isa_dtype_size(dt), base_i = imm_to_i64(in->imm[0]);
	uint64_t idx[ISA_MAX_RANK] = { 0 };
	uint64_t inner = o->shape[r - 1];
	float fb[FWSIM_BLOCK];
	int64_t ib[FWSIM_BLOCK];
	uint64_t flat = 0;
	/* No dim merging here: the value depends on the index along dim d. */
	for (;;) {
		int64_t off = 0;
		for (uint32_t q = 0; q + 1 < r; q++)
			off += (int64_t)idx[q] * o->stride[q] * es;
		for (uint64_t j = 0; j < inner; j += FWSIM_BLOCK) {
			size_t m = inner - j < FWSIM_BLOCK ? inner - j : FWSIM_BLOCK;
			if (fwsim_tick(k, m))
				return FWSIM_TIMEOUT;
			for (size_t e = 0; e < m; e++) {
				uint64_t i = d == r - 1 ? j + e : idx[d];
				if (fl)
					fb[e] = (float)((double)i + in->imm[0]);
				else
					ib[e] = (int64_t)(i + (uint64_t)base_i);
			}
			uint8_t *p = k->base[0] + off + (int64_t)j * o->stride[r - 1] * es;
			if (fl) {
				if (k->chk)
					fwsim_numchk_block(k->chk, fb, m, flat);
				fwsim_store_f32(dt, p, o->stride[r - 1] * es, m, fb);
			} else {
				fwsim_store_i64(dt, p, o->stride[r - 1] * es, m, ib, 0);
			}
			flat += m;
		}
		if (!fwsim_index_next(idx, o->shape, (int)r - 1, -1))
			return FWSIM_OK;
	}
}

/* ---- GATHER / SCATTER ---- */

/* Reads index m of ap2; false if it lies outside [0, n). */
static bool read_index(const isa_ap_t *ix, const uint8_t *base, uint64_t m, uint64_t n,
		       uint64_t *out)
{
	const uint8_t *p = base + (int64_t)m * ix->stride[0] * (int64_t)isa_dtype_size(ix->dtype);
	int64_t v = fw_ld_i64(ix->dtype, p);
	if (isa_dtype_is_unsigned(ix->dtype)) {
		*out = (uint64_t)v;
		return (uint64_t)v < n;
	}
	if (v < 0) {
		*out = 0;
		return false;
	}
	*out = (uint64_t)v;
	return (uint64_t)v < n;
}

fwsim_status_t fwsim_kernel_gather(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *t = &in->ap[1], *ix = &in->ap[2];
	uint64_t M = o->shape[0], R = o->shape[1], N = t->shape[0];
	if (M == 0 || R == 0)
		return FWSIM_OK;
	int64_t es = (int64_t)isa_dtype_size(o->dtype);
	for (uint64_t m = 0; m < M; m++) {
		uint64_t row;
		/* XLA clamps gather indices into range instead of failing. */
		if (!read_index(ix, k->base[2], m, N, &row))
			row = row >= N ? N - 1 : 0;
		int64_t dsb = o->stride[1] * es, ssb = t->stride[1] * es;
		/* a row may be long: copied in pieces the watch can stop between */
		for (uint64_t j = 0; j < R; j += FWSIM_POLL_WORK) {
			uint64_t len = R - j < FWSIM_POLL_WORK ? R - j : FWSIM_POLL_WORK;
			if (fwsim_tick(k, len + 1))
				return FWSIM_TIMEOUT;
			fwsim_copy_raw(k->base[0] + (int64_t)m * o->stride[0] * es + (int64_t)j * dsb,
				       dsb, k->base[1] + (int64_t)row * t->stride[0] * es +
				       (int64_t)j * ssb, ssb, len, (size_t)es);
		}
	}
	return FWSIM_OK;
}

/* A SCATTER of one-element f32 rows (a max-pool gradient: each window's
 * source into the input element it selected, 131072 of them in ResNet-18
 * b8's step): the row loop's per-row watch, loads and stores cost 21 ns an
 * update. Here the watch counts a block of updates at a time and each update
 * is a load, the combiner and a store, in the same order (same bits). */
static fwsim_status_t scatter_f32_elements(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *u = &in->ap[1], *ix = &in->ap[2];
	uint64_t N = o->shape[0], M = u->shape[0];
	uint32_t op = in->sub;
	int64_t so = o->stride[0] * 4, su = u->stride[0] * 4;
	for (uint64_t m0 = 0; m0 < M; m0 += FWSIM_BLOCK) {
		uint64_t m1 = M - m0 < FWSIM_BLOCK ? M : m0 + FWSIM_BLOCK;
		if (fwsim_tick(k, 2 * (m1 - m0)))
			return FWSIM_TIMEOUT;
		for (uint64_t m = m0; m < m1; m++) {
			uint64_t row;
			if (!read_index(ix, k->base[2], m, N, &row))
				continue;
			uint8_t *pd = k->base[0] + (int64_t)row * so;
			float x, y;
			memcpy(&x, pd, 4);
			memcpy(&y, k->base[1] + (int64_t)m * su, 4);
			x = f_red_combine(op, x, y);
			memcpy(pd, &x, 4);
		}
	}
	return FWSIM_OK;
}

fwsim_status_t fwsim_kernel_scatter(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *u = &in->ap[1], *ix = &in->ap[2];
	uint64_t N = o->shape[0], R = o->shape[1], M = u->shape[0];
	if (M == 0 || R == 0 || N == 0)
		return FWSIM_OK;
	uint32_t dt = o->dtype, op = in->sub;
	int64_t es = (int64_t)isa_dtype_size(dt);
	int fl = isa_dtype_is_float(dt), uns = isa_dtype_is_unsigned(dt);
	float fa[FWSIM_BLOCK], fu[FWSIM_BLOCK];
	int64_t ia[FWSIM_BLOCK], iu[FWSIM_BLOCK];
	if (R == 1 && dt == ISA_DT_F32 && op != ISA_RED_ASSIGN)
		return scatter_f32_elements(k);
	/* Updates apply in index order, so duplicate indices combine (or the
	 * last one wins for ASSIGN); out-of-range indices are skipped, as in XLA. */
	for (uint64_t m = 0; m < M; m++) {
		uint64_t row;
		if (fwsim_tick(k, 1))
			return FWSIM_TIMEOUT;
		if (!read_index(ix, k->base[2], m, N, &row))
			continue;
		uint8_t *dst = k->base[0] + (int64_t)row * o->stride[0] * es;
		const uint8_t *src = k->base[1] + (int64_t)m * u->stride[0] * es;
		int64_t dsb = o->stride[1] * es, ssb = u->stride[1] * es;
		if (op == ISA_RED_ASSIGN) {
			for (uint64_t j = 0; j < R; j += FWSIM_POLL_WORK) {
				uint64_t len = R - j < FWSIM_POLL_WORK ? R - j : FWSIM_POLL_WORK;
				if (fwsim_tick(k, len))
					return FWSIM_TIMEOUT;
				fwsim_copy_raw(dst + (int64_t)j * dsb, dsb, src + (int64_t)j * ssb, ssb,
					       len, (size_t)es);
			}
			continue;
		}
		for (uint64_t j = 0; j < R; j += FWSIM_BLOCK) {
			size_t n = R - j < FWSIM_BLOCK ? R - j : FWSIM_BLOCK;
			if (fwsim_tick(k, n))
				return FWSIM_TIMEOUT;
			uint8_t *pd = dst + (int64_t)j * dsb;
			const uint8_t *ps = src + (int64_t)j * ssb;
			if (fl) {
				fwsim_load_f32(dt, pd, dsb, n, fa);
				fwsim_load_f32(dt, ps, ssb, n, fu);
				for (size_t e = 0; e < n; e++) {
					float x = fa[e], y = fu[e];
					fa[e] = f_red_combine(op, x, y);
				}
				fwsim_store_f32(dt, pd, dsb, n, fa);
			} else {
				fwsim_load_i64(dt, pd, dsb, n, ia);
				fwsim_load_i64(dt, ps, ssb, n, iu);
				for (size_t e = 0; e < n; e++) {
					int64_t x = ia[e], y = iu[e];
					switch (op) {
					case ISA_RED_SUM: x = (int64_t)((uint64_t)x + (uint64_t)y); break;
					case ISA_RED_PROD: x = (int64_t)((uint64_t)x * (uint64_t)y); break;
					case ISA_RED_MAX: x = uns ? ((uint64_t)y > (uint64_t)x ? y : x) : (y > x ? y : x); break;
					case ISA_RED_MIN: x = uns ? ((uint64_t)y < (uint64_t)x ? y : x) : (y < x ? y : x); break;
					case ISA_RED_AND: x &= y; break;
					case ISA_RED_OR: x |= y; break;
					}
					ia[e] = x;
				}
				fwsim_store_i64(dt, pd, dsb, n, ia, uns);
			}
		}
	}
	return FWSIM_OK;
}

/* The NaN/Inf check of a SCATTER: the rows it wrote, each once, in ascending
 * order (so the first bad flat index is the smallest, as for any output), not the
 * whole table, whose other rows this instruction neither wrote nor vouches for (a
 * loop that updates a few rows of a big table per iteration would scan all of it
 * every time). Up to FWSIM_SCATTER_CHK_ROWS updates are sorted in a fixed buffer;
 * more scan the whole table as before. */
#define FWSIM_SCATTER_CHK_ROWS 4096

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

fwsim_status_t fwsim_scatter_numchk(const fwsim_kargs_t *k, fwsim_numchk_t *c)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *ix = &in->ap[2];
	uint64_t N = o->shape[0], R = o->shape[1], M = in->ap[1].shape[0];
	if (!k->base[0] || M == 0 || R == 0 || N == 0)
		return FWSIM_OK;
	if (M > FWSIM_SCATTER_CHK_ROWS)
		return fwsim_numchk_ap(k, c, o, k->base[0]);
	uint64_t rows[FWSIM_SCATTER_CHK_ROWS];
	uint64_t n = 0;
	for (uint64_t m = 0; m < M; m++) {
		uint64_t row;
		if (read_index(ix, k->base[2], m, N, &row))
			rows[n++] = row;
	}
	qsort(rows, n, sizeof(rows[0]), cmp_u64);
	int64_t es = (int64_t)isa_dtype_size(o->dtype), sb = o->stride[1] * es;
	float buf[FWSIM_BLOCK];
	for (uint64_t i = 0; i < n; i++) {
		if (i && rows[i] == rows[i - 1])
			continue;
		const uint8_t *p = k->base[0] + (int64_t)rows[i] * o->stride[0] * es;
		for (uint64_t j = 0; j < R; j += FWSIM_BLOCK) {
			size_t b = R - j < FWSIM_BLOCK ? (size_t)(R - j) : FWSIM_BLOCK;
			if (fwsim_tick(k, b))
				return FWSIM_TIMEOUT;
			fwsim_load_f32(o->dtype, p + (int64_t)j * sb, sb, b, buf);
			fwsim_numchk_block(c, buf, b, rows[i] * R + j);
		}
	}
	return FWSIM_OK;
}

/* ---- RNG: Philox4x32-10 (Salmon et al., SC'11), the generator JAX and
 * cuRAND use; counter-based, so any block is computable independently. ---- */

static inline void philox_round(uint32_t c[4], const uint32_t key[2])
{
	uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
	uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
	uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
	uint32_t n0 = hi1 ^ c[1] ^ key[0], n2 = hi0 ^ c[3] ^ key[1];
	c[0] = n0;
	c[1] = lo1;
	c[2] = n2;
	c[3] = lo0;
}

static void philox4x32_10(uint64_t key, uint64_t ctr, uint32_t out[4])
{
	uint32_t k2[2] = { (uint32_t)key, (uint32_t)(key >> 32) };
	uint32_t c[4] = { (uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0 };
	for (int r = 0; r < 10; r++) {
		philox_round(c, k2);
		k2[0] += 0x9E3779B9u;
		k2[1] += 0xBB67AE85u;
	}
	memcpy(out, c, sizeof(c));
}

fwsim_status_t fwsim_kernel_rng(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *o = &in->ap[0], *s = &in->ap[1], *ns = &in->ap[2];
	/* state = { key, counter }: the state is read before anything is written
	 * so ap2 may alias ap1 (in-place update). */
	uint64_t key, ctr;
	memcpy(&key, k->base[1], 8);
	memcpy(&ctr, k->base[1] + s->stride[0] * 8, 8);
	uint64_t nel = isa_ap_num_elements(o);
	uint64_t per_block = o->dtype == ISA_DT_U32 ? 4 : 2;
	uint64_t blocks = (nel + per_block - 1) / per_block;
	if (nel) {
		const isa_ap_t *aps[1] = { o };
		fwsim_iter_t it;
		fwsim_iter_init_aps(&it, o, 1, aps);
		uint64_t flat = 0;
		uint32_t w[4];
		do {
			uint8_t *p = k->base[0] + it.off[0];
			for (uint64_t j = 0; j < it.inner; j++, flat++) {
				if (j % FWSIM_BLOCK == 0 &&
				    fwsim_tick(k, it.inner - j < FWSIM_BLOCK ? it.inner - j : FWSIM_BLOCK))
					return FWSIM_TIMEOUT; /* the state is not advanced */
				/* element flat is word (flat % per_block) of block flat / per_block */
				uint64_t q = flat % per_block;
				if (q == 0 || j == 0)
					philox4x32_10(key, ctr + flat / per_block, w);
				uint8_t *e = p + (int64_t)j * it.inner_bs[0];
				if (per_block == 4) {
					memcpy(e, &w[q], 4);
				} else {
					uint64_t v = (uint64_t)w[2 * q] | (uint64_t)w[2 * q + 1] << 32;
					memcpy(e, &v, 8);
				}
			}
		} while (fwsim_iter_next(&it));
	}
	uint64_t next = ctr + blocks;
	memcpy(k->base[2], &key, 8);
	memcpy(k->base[2] + ns->stride[0] * 8, &next, 8);
	return FWSIM_OK;
}
