/* MATMUL: f32 (and bf16/f16 converted blockwise to f32) through OpenBLAS sgemm; integers by loop. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>

#include "convert.h"
#include "internal.h"

typedef struct mat {
	uint32_t dt;
	uint64_t rows, cols;
	int64_t sr, sc; /* element strides */
} mat_t;

/* Can sgemm read this matrix in place? Row-major NoTrans needs unit column
 * stride and ld >= cols; Trans needs unit row stride and ld >= rows. Unit
 * dims make their stride irrelevant. */
static int blas_layout(const mat_t *m, const uint8_t *p, CBLAS_TRANSPOSE *t, int *ld)
{
	if (m->dt != ISA_DT_F32 || ((uintptr_t)p & 3u) || m->rows > INT_MAX || m->cols > INT_MAX)
		return 0;
	int64_t rows = (int64_t)m->rows, cols = (int64_t)m->cols;
	if ((cols == 1 || m->sc == 1) && (rows == 1 || (m->sr >= cols && m->sr <= INT_MAX))) {
		*t = CblasNoTrans;
		*ld = (int)(rows == 1 ? (cols > 0 ? cols : 1) : m->sr);
		return 1;
	}
	if ((rows == 1 || m->sr == 1) && (cols == 1 || (m->sc >= rows && m->sc <= INT_MAX))) {
		*t = CblasTrans;
		*ld = (int)(cols == 1 ? (rows > 0 ? rows : 1) : m->sc);
		return 1;
	}
	return 0;
}

/* Converts a strided matrix of any float dtype into a contiguous f32 buffer,
 * walking the operand's unit-stride direction so transposed operands pack
 * with sequential reads; t and ld describe the packed layout. */
static void pack(const mat_t *m, const uint8_t *p, float *dst, CBLAS_TRANSPOSE *t, int *ld)
{
	int64_t es = (int64_t)isa_dtype_size(m->dt);
	int64_t asr = m->sr < 0 ? -m->sr : m->sr, asc = m->sc < 0 ? -m->sc : m->sc;
	if (asr < asc && m->rows > 1) { /* column-major-ish: pack columns */
		for (uint64_t c = 0; c < m->cols; c++)
			fwsim_load_f32(m->dt, p + (int64_t)c * m->sc * es, m->sr * es, m->rows,
				       dst + c * m->rows);
		*t = CblasTrans;
		*ld = (int)(m->rows ? m->rows : 1);
	} else {
		for (uint64_t r = 0; r < m->rows; r++)
			fwsim_load_f32(m->dt, p + (int64_t)r * m->sr * es, m->sc * es, m->cols,
				       dst + r * m->cols);
		*t = CblasNoTrans;
		*ld = (int)(m->cols ? m->cols : 1);
	}
}

/* Row-major packing for the plain-loop path (dims beyond sgemm's int). */
static void pack_rows(const mat_t *m, const uint8_t *p, float *dst)
{
	int64_t es = (int64_t)isa_dtype_size(m->dt);
	for (uint64_t r = 0; r < m->rows; r++)
		fwsim_load_f32(m->dt, p + (int64_t)r * m->sr * es, m->sc * es, m->cols,
			       dst + r * m->cols);
}

static fwsim_status_t matmul_int(const fwsim_kargs_t *k, uint64_t B, uint64_t M, uint64_t N,
				 uint64_t K, const int64_t *sbat)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	uint32_t o = c->rank == 3;
	int64_t ea = (int64_t)isa_dtype_size(a->dtype), ec = (int64_t)isa_dtype_size(c->dtype);
	int uns = isa_dtype_is_unsigned(a->dtype);
	int acc = !!(in->flags & ISA_F_ACCUMULATE);
	int64_t *row = malloc(K * sizeof(*row) + 1);
	if (!row)
		return FWSIM_NOMEM;
	for (uint64_t bi = 0; bi < B; bi++) {
		const uint8_t *pa = k->base[1] + (int64_t)bi * sbat[1] * ea;
		const uint8_t *pb = k->base[2] + (int64_t)bi * sbat[2] * ea;
		uint8_t *pc = k->base[0] + (int64_t)bi * sbat[0] * ec;
		for (uint64_t m = 0; m < M; m++) {
			fwsim_load_i64(a->dtype, pa + (int64_t)m * a->stride[o] * ea,
				       a->stride[o + 1] * ea, K, row);
			for (uint64_t n = 0; n < N; n++) {
				uint8_t *dst = pc + ((int64_t)m * c->stride[o] + (int64_t)n * c->stride[o + 1]) * ec;
				uint64_t s = acc ? (uint64_t)fw_ld_i64(c->dtype, dst) : 0;
				const uint8_t *col = pb + (int64_t)n * b->stride[o + 1] * ea;
				for (uint64_t kk = 0; kk < K; kk++)
					s += (uint64_t)row[kk] *
					     (uint64_t)fw_ld_i64(b->dtype, col + (int64_t)kk * b->stride[o] * ea);
				fw_st_i64(c->dtype, dst, (int64_t)s, uns);
			}
		}
	}
	free(row);
	return FWSIM_OK;
}

/* Plain loop for shapes sgemm cannot take (a dim above INT_MAX). */
static void gemm_loop(uint64_t M, uint64_t N, uint64_t K, const float *A, int ta, uint64_t lda,
		      const float *Bm, int tb, uint64_t ldb, float beta, float *C, uint64_t ldc)
{
	for (uint64_t m = 0; m < M; m++)
		for (uint64_t n = 0; n < N; n++) {
			double s = 0;
			for (uint64_t kk = 0; kk < K; kk++)
				s += (double)(ta ? A[kk * lda + m] : A[m * lda + kk]) *
				     (tb ? Bm[n * ldb + kk] : Bm[kk * ldb + n]);
			C[m * ldc + n] = (float)s + (beta != 0 ? C[m * ldc + n] : 0.0f);
		}
}

/* K = 0: the product is 0; with ACCUMULATE the output stays as it is. */
static fwsim_status_t matmul_empty_k(const fwsim_kargs_t *k, uint64_t B, uint64_t M,
				     uint64_t N, const int64_t *sbat)
{
	const isa_ap_t *c = &k->insn->ap[0];
	if (k->insn->flags & ISA_F_ACCUMULATE)
		return FWSIM_OK;
	uint32_t o = c->rank == 3;
	int64_t ec = (int64_t)isa_dtype_size(c->dtype);
	int64_t *zero = calloc(N, sizeof(*zero));
	if (!zero)
		return FWSIM_NOMEM;
	for (uint64_t bi = 0; bi < B; bi++)
		for (uint64_t m = 0; m < M; m++)
			fwsim_store_i64(c->dtype,
					k->base[0] + ((int64_t)bi * sbat[0] + (int64_t)m * c->stride[o]) * ec,
					c->stride[o + 1] * ec, N, zero, 0);
	free(zero);
	return FWSIM_OK;
}

fwsim_status_t fwsim_kernel_matmul(const fwsim_kargs_t *k)
{
	const isa_insn_t *in = k->insn;
	const isa_ap_t *c = &in->ap[0], *a = &in->ap[1], *b = &in->ap[2];
	uint32_t o = c->rank == 3;
	uint64_t B = o ? c->shape[0] : 1, M = c->shape[o], N = c->shape[o + 1], K = a->shape[o + 1];
	int64_t sbat[3] = { o ? c->stride[0] : 0, o ? a->stride[0] : 0, o ? b->stride[0] : 0 };
	if (B == 0 || M == 0 || N == 0)
		return FWSIM_OK;
	if (K == 0) /* empty sum; the inputs are empty and have no address */
		return matmul_empty_k(k, B, M, N, sbat);
	if (!isa_dtype_is_float(a->dtype))
		return matmul_int(k, B, M, N, K, sbat);

	int64_t ea = (int64_t)isa_dtype_size(a->dtype), ec = (int64_t)isa_dtype_size(c->dtype);
	float beta = (in->flags & ISA_F_ACCUMULATE) ? 1.0f : 0.0f;
	int big = M > INT_MAX || N > INT_MAX || K > INT_MAX;
	float *ta_buf = NULL, *tb_buf = NULL, *tc_buf = NULL;
	fwsim_status_t st = FWSIM_OK;
	for (uint64_t bi = 0; bi < B; bi++) {
		const uint8_t *pa = k->base[1] + (int64_t)bi * sbat[1] * ea;
		const uint8_t *pb = k->base[2] + (int64_t)bi * sbat[2] * ea;
		uint8_t *pc = k->base[0] + (int64_t)bi * sbat[0] * ec;
		mat_t ma = { a->dtype, M, K, a->stride[o], a->stride[o + 1] };
		mat_t mb = { b->dtype, K, N, b->stride[o], b->stride[o + 1] };
		mat_t mc = { c->dtype, M, N, c->stride[o], c->stride[o + 1] };
		CBLAS_TRANSPOSE tA, tB, tC;
		int lda = 1, ldb = 1, ldc = 1;
		const float *A, *Bm;
		float *C;
		if (!big && blas_layout(&ma, pa, &tA, &lda)) {
			A = (const float *)(const void *)pa;
		} else {
			if (!ta_buf && !(ta_buf = malloc(M * K * sizeof(float) + 4)))
				goto nomem;
			if (!big)
				pack(&ma, pa, ta_buf, &tA, &lda);
			else
				pack_rows(&ma, pa, ta_buf);
			A = ta_buf;
		}
		/* a broadcast B operand (batch stride 0) is packed once */
		if (!big && blas_layout(&mb, pb, &tB, &ldb)) {
			Bm = (const float *)(const void *)pb;
		} else {
			if (!tb_buf) {
				if (!(tb_buf = malloc(K * N * sizeof(float) + 4)))
					goto nomem;
			} else if (sbat[2] == 0) {
				Bm = tb_buf;
				goto have_b;
			}
			if (!big)
				pack(&mb, pb, tb_buf, &tB, &ldb);
			else
				pack_rows(&mb, pb, tb_buf);
			Bm = tb_buf;
		}
	have_b:
		(void)tC;
		int direct_c = !big && blas_layout(&mc, pc, &tC, &ldc) && tC == CblasNoTrans;
		if (direct_c) {
			C = (float *)(void *)pc;
		} else {
			if (!tc_buf && !(tc_buf = malloc(M * N * sizeof(float) + 4)))
				goto nomem;
			C = tc_buf;
			ldc = (int)(big ? 0 : N);
			if (beta != 0)
				for (uint64_t r = 0; r < M; r++)
					fwsim_load_f32(mc.dt, pc + (int64_t)r * mc.sr * ec, mc.sc * ec, N,
						       C + r * N);
		}
		if (!big)
			cblas_sgemm(CblasRowMajor, tA, tB, (int)M, (int)N, (int)K, 1.0f, A, lda, Bm,
				    ldb, beta, C, ldc);
		else
			gemm_loop(M, N, K, A, 0, K, Bm, 0, N, beta, C, N);
		for (uint64_t r = 0; r < M; r++) {
			float *row = direct_c ? C + r * (uint64_t)ldc : C + r * N;
			if (k->chk)
				fwsim_numchk_block(k->chk, row, N, (bi * M + r) * N);
			if (!direct_c)
				fwsim_store_f32(mc.dt, pc + (int64_t)r * mc.sr * ec, mc.sc * ec, N, row);
		}
	}
	goto out;
nomem:
	st = FWSIM_NOMEM;
out:
	free(ta_buf);
	free(tb_buf);
	free(tc_buf);
	return st;
}
