/* libfwsim internals shared by the program, scheduler, executor and kernel files. */
#ifndef FWSIM_INTERNAL_H
#define FWSIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "fwsim/fwsim.h"
#include "neuronsim/clock.h"
#include "neuronsim/half.h"

/* The x86-64-v3 (AVX2 + FMA + F16C ...) and baseline clones of a hot loop,
 * picked by an ifunc resolver on the CPU's features when the program is loaded
 * (a plain "avx2" clone lacks FMA: fmaf() was a libm call per element, the
 * vector engine's FMA and batch-norm loops the top of a MobileNetV2 profile;
 * "arch=haswell" would test the CPU model, not its features). The library is
 * built with -ffp-contract=off so that FMA is only where the ISA says FMA and
 * both clones round every other op the same way. ThreadSanitizer instruments
 * that resolver, which the dynamic loader runs before the TSan runtime is
 * initialised (a SIGSEGV in __tsan_func_entry before main, gcc 12 and clang 14
 * alike): TSan builds (NEURONSIM_TSAN, set by meson.build) get the baseline
 * code only. */
#ifdef NEURONSIM_TSAN
#define FWSIM_TARGET_CLONES
#else
#define FWSIM_TARGET_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif

/* The cap fwsim_set_max_isa() set (a fwsim_isa_t; FWSIM_ISA_AUTO: none). */
int fwsim_max_isa(void);

/* Whether that cap lets the kernels of ISA isa run. */
static inline int fwsim_isa_allows(fwsim_isa_t isa)
{
	int cap = fwsim_max_isa();
	return cap == FWSIM_ISA_AUTO || cap >= (int)isa;
}

/* Whether this CPU runs the kernels written with AVX2 + FMA intrinsics (the
 * CONV forms D and E, EXP's vector code, FUSED's one-pass trees), and also
 * those with AVX-512F intrinsics, within the cap fwsim_set_max_isa() set.
 * 0 off x86 and in TSan builds, which compile none of them. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(NEURONSIM_TSAN)
static inline int fwsim_cpu_avx2_fma(void)
{
	return fwsim_isa_allows(FWSIM_ISA_AVX2) && __builtin_cpu_supports("avx2") &&
	       __builtin_cpu_supports("fma");
}

static inline int fwsim_cpu_avx512(void)
{
	return fwsim_isa_allows(FWSIM_ISA_AVX512) && fwsim_cpu_avx2_fma() &&
	       __builtin_cpu_supports("avx512f");
}
#else
static inline int fwsim_cpu_avx2_fma(void)
{
	return 0;
}

static inline int fwsim_cpu_avx512(void)
{
	return 0;
}
#endif

/* Elements per block in the generic strided path: 512 * 8 bytes * 4 operands
 * stays inside L1 and the per-block overhead is amortised. */
#define FWSIM_BLOCK 512

/* Host scratch of one instruction is bounded by these, never by an operand's
 * logical element count (a stride-0 operand of 2^40 elements costs a few bytes
 * of device memory); docs/isa.md, "Host memory". */
#define FWSIM_MATMUL_MAX_TILE (1u << 22) /* f32 elements per packing buffer (16 MiB) */
#define FWSIM_MATMUL_MAX_ROW (1u << 16)  /* i64 elements of an integer matmul row */
#define FWSIM_REDUCE_MAX_ACC (1u << 20)  /* 8-byte accumulators of a REDUCE */

struct fwsim_program {
	isa_insn_t *insns[ISA_ENGINE_COUNT];
	uint32_t counts[ISA_ENGINE_COUNT];
	uint32_t n_regions;
	uint32_t n_active;   /* engines with a non-empty stream */
	double work[ISA_ENGINE_COUNT]; /* rough element-operation estimate per engine */
	/* The automatic scheduler's timing of this program's executions
	 * (sched_pick.h): not part of what the program computes, so it changes
	 * behind a const program, under its own lock. */
	struct fwsim_sched_pick *pick;
};

/* Numerical scan state of one instruction's output. */
typedef struct fwsim_numchk {
	int want_nan, want_inf;
	float inf_limit;     /* |x| at or above this is Inf once stored in ap0's dtype */
	uint64_t count;
	uint64_t first;      /* UINT64_MAX until the first bad element */
	int first_is_inf;
	/* FUSED with step debug ids (ISA 1.2): the debug id of the step that first
	 * produced the bad value at `first`; ISA_DEBUG_NONE otherwise */
	uint32_t blame_debug;
} fwsim_numchk_t;

/* The watchdog of one running instruction. One instruction's work is not
 * bounded by its bytes (stride-0 operands), so kernels charge what they do to
 * it in their outer loops (fwsim_tick) and every FWSIM_POLL_WORK element
 * operations one poll reads the clock, the job's cancel flag and the other
 * engines' stop flag: a long instruction ends within that much work of its
 * deadline. */
typedef struct fwsim_watch {
	uint64_t left;             /* work until the next poll */
	uint64_t deadline_ns;      /* 0 = none */
	const uint32_t *cancel;    /* the job's cancel flag */
	const atomic_int *stop;    /* another engine failed */
	fwsim_status_t why;        /* after a stop: FWSIM_TIMEOUT, or FWSIM_INVALID
				      when another engine's error stopped us */
	int cancelled;             /* the stop was fwsim_job_cancel()'s */
} fwsim_watch_t;

/* One instruction ready to run: operands resolved to host addresses. */
typedef struct fwsim_kargs {
	const isa_insn_t *insn;
	uint8_t *base[ISA_MAX_AP]; /* address of element [0,..,0]; NULL if empty */
	fwsim_numchk_t *chk;       /* NULL: no check (or the kernel scans in-line) */
	fwsim_watch_t *watch;      /* never NULL */
	uint64_t flops;            /* out, FUSED only: its floating-point operations */
	uint32_t par_min_ew;       /* fwsim_par_min_ew (pool.h); 0 = the default */
} fwsim_kargs_t;

/* The slow half of fwsim_tick (exec.c): polls, re-arms, records why. */
bool fwsim_watch_poll(fwsim_watch_t *w);

/* Charges n element operations to the instruction; true when it must stop
 * now (deadline, cancel, another engine's error): the kernel then returns
 * FWSIM_TIMEOUT at once and fwsim_exec_insn reports w->why. Outputs may be
 * partly written, as after any fatal error. */
static inline bool fwsim_tick(const fwsim_kargs_t *k, uint64_t n)
{
	fwsim_watch_t *w = k->watch;
	if (__builtin_expect(w->left > n, 1)) {
		w->left -= n;
		return false;
	}
	return fwsim_watch_poll(w);
}

/* Operands one row iterator walks together: the most a FUSED instruction has
 * (its output, its inputs and an index operand per IOTA dim); the other
 * kernels walk up to ISA_MAX_AP. */
#define FWSIM_ITER_MAX_OPS (1 + ISA_FUSED_MAX_INPUTS + ISA_MAX_RANK)

/* Row iterator over operands sharing one shape: rows of the innermost dim in
 * row-major order, after dropping size-1 dims and merging dims contiguous in
 * every operand (rows stay in row-major order, so counting elements gives the
 * flat index of a NaN record). */
typedef struct fwsim_iter {
	uint32_t n, rank;
	uint64_t shape[ISA_MAX_RANK];
	int64_t bstride[FWSIM_ITER_MAX_OPS][ISA_MAX_RANK]; /* byte strides */
	uint64_t idx[ISA_MAX_RANK];
	int64_t off[FWSIM_ITER_MAX_OPS]; /* byte offset of the current row */
	uint64_t rows;             /* rows left, including the current one */
	uint64_t inner;            /* elements per row */
	int64_t inner_bs[FWSIM_ITER_MAX_OPS];
	int empty;
} fwsim_iter_t;

void fwsim_iter_init(fwsim_iter_t *it, uint32_t rank, const uint64_t *shape, uint32_t n,
		     const int64_t *const strides[], const size_t esize[]);
/* Moves to the next row; false when done. The first row is current after init
 * (unless empty). */
bool fwsim_iter_next(fwsim_iter_t *it);
/* Moves q rows on (fwsim_iter_next q times, the rows along the innermost
 * row dim in one step); false when that passes the last row. */
bool fwsim_iter_advance(fwsim_iter_t *it, uint64_t q);
static inline void fwsim_iter_init_aps(fwsim_iter_t *it, const isa_ap_t *shape_ap,
				       uint32_t n, const isa_ap_t *const aps[])
{
	const int64_t *st[FWSIM_ITER_MAX_OPS];
	size_t es[FWSIM_ITER_MAX_OPS];
	for (uint32_t i = 0; i < n; i++) {
		st[i] = aps[i]->stride;
		es[i] = isa_dtype_size(aps[i]->dtype);
	}
	fwsim_iter_init(it, shape_ap->rank, shape_ap->shape, n, st, es);
}

/* The next index of dims [0, n) of shape in row-major order, dim skip (-1:
 * none) left at its value: the walk kernels make over the dims outside the
 * ones they run themselves. false after the last index (idx is back at 0). */
static inline bool fwsim_index_next(uint64_t *idx, const uint64_t *shape, int n, int skip)
{
	for (int q = n - 1; q >= 0; q--) {
		if (q == skip)
			continue;
		if (++idx[q] < shape[q])
			return true;
		idx[q] = 0;
	}
	return false;
}

/* fst[q]: the elements one step of dim q of it moves the row-major flat
 * index by. */
static inline void fwsim_iter_flat_strides(const fwsim_iter_t *it, uint64_t *fst)
{
	fst[it->rank - 1] = 1;
	for (int q = (int)it->rank - 2; q >= 0; q--)
		fst[q] = fst[q + 1] * it->shape[q + 1];
}

/* Copies an nr x nc tile of es-byte elements: (i, j) from s + i sr + j sc to
 * d + i dr + j dc, bits unchanged; 8x8 register transposes where one side is
 * contiguous along each dim (kernels_alu.c, the transposing COPY). */
void fwsim_copy_tile(size_t es, uint8_t *d, int64_t dr, int64_t dc, const uint8_t *s,
		     int64_t sr, int64_t sc, size_t nr, size_t nc);
#if defined(__x86_64__) || defined(__i386__)
/* 8 lines of 8 contiguous 4-byte elements at s, s + sl, ... into 8 lines at
 * d, d + dl, ... (line c of d: element c of every line of s). Needs AVX. */
void fwsim_tr8x8_u32(const uint8_t *s, int64_t sl, uint8_t *d, int64_t dl);
#endif

/* Block conversions (convert.c): n elements at p, p + sb, p + 2 sb, ... */
void fwsim_load_f32(uint32_t dt, const uint8_t *p, int64_t sb, size_t n, float *out);
void fwsim_load_i64(uint32_t dt, const uint8_t *p, int64_t sb, size_t n, int64_t *out);
void fwsim_store_f32(uint32_t dt, uint8_t *p, int64_t sb, size_t n, const float *in);
void fwsim_store_i64(uint32_t dt, uint8_t *p, int64_t sb, size_t n, const int64_t *in,
		     int src_unsigned);
void fwsim_copy_raw(uint8_t *dst, int64_t dsb, const uint8_t *src, int64_t ssb, size_t n,
		    size_t esize);

/* Numerical checks (check.c). */
void fwsim_numchk_init(fwsim_numchk_t *c, uint32_t job_flags, uint32_t out_dtype);
/* Exact count and first index of bad values in a block of produced values
 * (the out-of-line scan; callers use fwsim_numchk_block below). */
void fwsim_numchk_block_scan(fwsim_numchk_t *c, const float *v, size_t n, uint64_t flat0);
/* false when v[0..n) certainly holds no NaN (when checked) and no +-Inf (when
 * checked); true when it may (NaN counts when only Inf is checked): a
 * vectorised pre-check before an exact scalar search. */
bool fwsim_numchk_maybe_nonfinite(const fwsim_numchk_t *c, const float *v, size_t n);
/* Whether v[0..n) holds a NaN or an Inf, whatever is checked (the same
 * vectorised scan): CONV's forms test their packed operands with it. */
bool fwsim_any_nonfinite(const float *v, size_t n);
/* Copies n f32 values (bits unchanged) from s to d, which must not overlap,
 * and tests them on the way as fwsim_numchk_maybe_nonfinite does (bias:
 * fwsim_numchk_bias): whether any value copied may be bad. A copy and then a
 * scan read every row twice: the im2col COPYs of a 3x3 convolution, rows of
 * 56 floats, spent as long in the scan as in memmove. */
bool fwsim_copy_f32_flag(float *restrict d, const float *restrict s, size_t n, uint32_t bias);
/* Folds the scan of a part of an output (a tile, a range of rows, scanned in
 * any order) into the whole's: counts add, the smallest first index wins
 * (with the step it blames). */
void fwsim_numchk_merge(fwsim_numchk_t *into, const fwsim_numchk_t *part);
/* 2^31 - (smallest bad |x| as bits): (|x| bits) + bias has bit 31 set iff x
 * is bad, so kernels can OR-reduce results in the loop that produces them. */
static inline uint32_t fwsim_numchk_bias(const fwsim_numchk_t *c)
{
	return 0x80000000u - (c->want_inf ? ns_f32_bits(c->inf_limit) : 0x7f800000u);
}
/* fwsim_numchk_block_scan, with the fast test of a short block (a tile row
 * of a transposing COPY, a row of a small plane) done in line: called per
 * 9-float row, the out-of-line test cost the COPYs of a ResNet-18 step more
 * than their copying. Longer blocks go to the vectorised scan directly. */
#define FWSIM_NUMCHK_INLINE 32
static inline void fwsim_numchk_block(fwsim_numchk_t *c, const float *v, size_t n, uint64_t flat0)
{
	if (n <= FWSIM_NUMCHK_INLINE) {
		uint32_t bias = fwsim_numchk_bias(c), acc = 0;
		for (size_t i = 0; i < n; i++) {
			uint32_t u;
			memcpy(&u, &v[i], 4);
			acc |= (u & 0x7fffffffu) + bias;
		}
		if (!(acc >> 31))
			return;
	}
	fwsim_numchk_block_scan(c, v, n, flat0);
}
/* Scans the whole float operand ap at base (for kernels that write in place),
 * charging the work to k's watch; FWSIM_TIMEOUT when that stopped it. */
fwsim_status_t fwsim_numchk_ap(const fwsim_kargs_t *k, fwsim_numchk_t *c, const isa_ap_t *ap,
			       const uint8_t *base);

/* Byte extent [lo, hi) of ap relative to its region start; false if empty. */
bool fwsim_ap_extent(const isa_ap_t *ap, __int128 *out_lo, __int128 *out_hi);

/* Kernels: return FWSIM_OK, FWSIM_NOMEM, or FWSIM_TIMEOUT when fwsim_tick
 * stopped them. */
fwsim_status_t fwsim_kernel_alu(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_activate(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_copy(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_reduce(const fwsim_kargs_t *k);
/* REDUCE's combiners (kernels_reduce.c), shared with FUSED's reducing form:
 * floats in double, integers in 64 bits with the dtype's signedness (uns). */
double fwsim_red_comb_f64(uint32_t op, double a, double b);
/* The combiner's identity for dtype dt as 8 bytes: a double for floats, an
 * int64 for the others. */
void fwsim_red_identity(uint32_t op, uint32_t dt, void *out8);
int64_t fwsim_red_comb_i64(uint32_t op, int uns, int64_t a, int64_t b);
/* acc combined with v[0..n) in any order (each combiner is associative and
 * commutative in 64 bits): the same bits as the chain of fwsim_red_comb_i64. */
int64_t fwsim_red_fold_i64(uint32_t op, int uns, int64_t acc, const int64_t *v, size_t n);
/* r combined with v[0..n) in order (sums with 8 partial accumulators). */
double fwsim_red_block_f64(uint32_t op, const float *v, size_t n, double init);

/* One accumulator of a reduction (REDUCE, the reducing FUSED): a double for
 * float dtypes, an int64 for the others. */
typedef union fwsim_acc {
	double d;
	int64_t i;
} fwsim_acc_t;

/* Folds the float block v[0..m) into the accumulators acc[0], acc[step], ...
 * (step 0: all into acc[0], fwsim_red_block_f64). Each accumulator takes its
 * values in order; contiguous accumulators (an outer-dim reduction: column
 * sums) take one vectorised loop per op. */
void fwsim_red_fold_f64(uint32_t op, fwsim_acc_t *acc, int64_t step, const float *v, size_t m);
/* As fwsim_red_fold_f64 with step 0 called on each block of blk values of
 * v[0..m) in turn (the last may be shorter), the same bits; sums of two
 * blocks run their partial sums side by side (one block's chain of adds
 * waits on the adder's latency). */
void fwsim_red_fold_blocks_f64(uint32_t op, fwsim_acc_t *acc, const float *v, size_t m, size_t blk);
/* rows rows of rlen f32 one after the other at v, row i folded into
 * acc[i * step] as fwsim_red_block_f64 folds a block (sums two rows at a
 * time: each row's 8 partial sums, the same order). A segment of a reducing
 * FUSED's short rows, one accumulator per row: a batch norm's sums over 7x7
 * planes spent 35% of their time in a call per row. */
void fwsim_red_fold_rows_f64(uint32_t op, fwsim_acc_t *acc, int64_t step, const float *v,
			     size_t rlen, size_t rows);

/* The parts a reduction's outputs are reduced in (REDUCE and the reducing
 * FUSED): row-major pieces of at most FWSIM_REDUCE_MAX_ACC accumulators, so
 * host memory stays bounded whatever the output's logical size (a stride-0
 * output costs no device memory at all); outputs do not depend on each other,
 * so the bytes are the same. The split dim s is the outermost kept dim whose
 * kept dims below fit; kept dims before it are walked one index at a time,
 * dim s in runs; reduced dims always keep their whole extent, so each output
 * sees all its elements, in row-major order, in one part. */
typedef struct fwsim_red_parts {
	uint32_t rank, mask, s;       /* s == rank: one part, the whole */
	uint64_t shape[ISA_MAX_RANK];
	uint64_t nout;                /* outputs: the product of the kept dims */
	uint64_t run, start;
	uint64_t idx[ISA_MAX_RANK];
	int done;
} fwsim_red_parts_t;

/* shape: the reduced operand's (any extent along the dims of mask, the
 * reduced ones); no dim may be 0. */
void fwsim_red_parts_init(fwsim_red_parts_t *p, uint32_t rank, const uint64_t *shape,
			  uint32_t mask);
/* The next part: first[q] and len[q] along each dim (reduced dims: 0 and
 * their extent). false when every part was given. */
bool fwsim_red_parts_next(fwsim_red_parts_t *p, uint64_t first[ISA_MAX_RANK],
			  uint64_t len[ISA_MAX_RANK]);

/* Element strides of acc, the contiguous row-major accumulators of a part's
 * outputs (oshape: extent 1 along reduced dims). */
void fwsim_red_acc_strides(uint32_t rank, const uint64_t *oshape, int64_t *st);
/* A part's first step: its accumulators (acc, nout of them) start from the
 * outputs o at base (o's strides and dtype, shape oshape) when accumulate, else
 * from op's identity. */
void fwsim_red_acc_start(uint32_t op, int accumulate, const isa_ap_t *o, const uint64_t *oshape,
			 const uint8_t *base, fwsim_acc_t *acc, uint64_t nout);
/* A part's last step: stores the accumulators into o at base with conversion,
 * scanning float results with chk (if not NULL) as they are written; *flat,
 * the row-major index of the part's first output among all the
 * instruction's, advances past the part. When this finds the instruction's
 * first bad output and the check blames no FUSED step yet, it blames cand
 * (ISA_DEBUG_NONE: none). */
void fwsim_red_acc_store(fwsim_numchk_t *chk, const isa_ap_t *o, const uint64_t *oshape,
			 uint8_t *base, const fwsim_acc_t *acc, uint64_t *flat, uint32_t cand);
fwsim_status_t fwsim_kernel_matmul(const fwsim_kargs_t *k);
/* The OpenMP runtime's (libgomp, which oneDNN runs on; fwsim_gemm_f32 keeps
 * the calling thread's count): declared here, since clang finds no omp.h
 * without its own OpenMP package. */
void omp_set_num_threads(int n);
int omp_get_max_threads(void);

/* One f32 product c = a b + beta c on the calling thread, operands row-major
 * ('N') or transposed ('T') with leading dimensions as BLAS takes them:
 * oneDNN's sgemm, subnormals read and written as zero (kernels_matmul.c).
 * FWSIM_NOMEM when oneDNN cannot allocate. */
fwsim_status_t fwsim_gemm_f32(char ta, char tb, uint64_t m, uint64_t n, uint64_t k, const float *a,
			      int lda, const float *b, int ldb, float beta, float *c, int ldc);

/* Rows of C a MATMUL has streamed out (mm_streams in kernels_matmul.c), over
 * the process's life: tests check that a product took that path. */
uint64_t fwsim_matmul_streamed_rows(void);
/* Thin f32 products (kernels_matmul_thin.c): whether an m x n product over
 * sums of k takes them on this CPU (AVX-512F; at most 32 columns, or at most
 * 32 rows against a B beyond L2), and one such product, C [m x n] (ldc) =
 * A [m x k] (lda) x B [k x n] (ldb), all row-major with unit column stride,
 * plus C's own values when acc. Outputs (elements of C) they have computed,
 * over the process's life: tests check that a product took them. */
bool fwsim_gemm_thin_fits(uint64_t m, uint64_t n, uint64_t k);
void fwsim_gemm_thin_f32(uint64_t m, uint64_t n, uint64_t k, const float *a, int64_t lda,
			 const float *b, int64_t ldb, bool acc, float *c, int64_t ldc);
uint64_t fwsim_matmul_thin_outputs(void);
/* FUSED segments whose one-pass tree read inputs of one value per row in
 * place (fused_tree.h, fz_rowin_t), over the process's life: tests check
 * that a program took that path. */
uint64_t fwsim_fused_row_segments(void);
/* Subnormal inputs read as zero and subnormal results flushed to zero (x86's
 * MXCSR DAZ and FTZ) on the calling thread until fwsim_flush_end(the value
 * fwsim_flush_begin returned): how the f32 products of MATMUL and CONV's
 * forms G and P run, as XLA:CPU runs its kernels (kernels_matmul.c: why).
 * No-ops off x86. */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
static inline unsigned fwsim_flush_begin(void)
{
	unsigned csr = _mm_getcsr();
	_mm_setcsr(csr | 0x8000u /* FTZ */ | 0x0040u /* DAZ */);
	return csr;
}

static inline void fwsim_flush_end(unsigned csr)
{
	_mm_setcsr(csr);
}
#else
static inline unsigned fwsim_flush_begin(void)
{
	return 0;
}

static inline void fwsim_flush_end(unsigned csr)
{
	(void)csr;
}
#endif
fwsim_status_t fwsim_kernel_iota(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_gather(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_scatter(const fwsim_kargs_t *k);
/* The NaN/Inf check of a SCATTER that ran: the rows it wrote (kernels_misc.c). */
fwsim_status_t fwsim_scatter_numchk(const fwsim_kargs_t *k, fwsim_numchk_t *c);
fwsim_status_t fwsim_kernel_rng(const fwsim_kargs_t *k);
/* CONV (ISA 1.4, kernels_conv.c): NaN/Inf scanned as the planes are stored. */
fwsim_status_t fwsim_kernel_conv(const fwsim_kargs_t *k);
fwsim_status_t fwsim_kernel_selscat(const fwsim_kargs_t *k);

/* Per-job execution state shared by the engines of one core (exec.c). */
typedef struct fwsim_exec {
	fwsim_job_t *job;
	const fwsim_program_t *prog;
	atomic_uint sems[ISA_NUM_SEMS];
	atomic_int stop;           /* a fatal error happened: engines stop */
	pthread_mutex_t rec_lock;  /* guards fatal and num below */
	fwsim_error_t fatal;       /* first OOB/TIMEOUT/DEADLOCK/INVALID/NOMEM */
	fwsim_error_t num;         /* first numerical error */
	uint64_t num_err_insns;
	uint64_t trace_next;       /* atomic slot counter into job->trace */
	uint64_t busy_ns[ISA_ENGINE_COUNT];
	uint64_t insns[ISA_ENGINE_COUNT];
	uint64_t flops[ISA_ENGINE_COUNT];
	/* end time of the engine's previous instruction while it runs back to back
	 * (0 after a wait or a switch: the schedulers clear it), the next one's start:
	 * one clock read per instruction instead of two */
	uint64_t chain_ns[ISA_ENGINE_COUNT];
	/* set by the scheduler that runs the job: its instructions' par_min_ew */
	uint32_t par_min_ew;
} fwsim_exec_t;

fwsim_status_t fwsim_exec_begin(fwsim_exec_t *x, fwsim_job_t *job);
fwsim_status_t fwsim_exec_end(fwsim_exec_t *x);
/* Runs insn pc of engine e (semaphore wait already satisfied), signals its
 * semaphore and sets *out_next. Returns FWSIM_OK to continue, else the fatal
 * status already recorded. The caller clears x->chain_ns[e] whenever engine e did
 * not just run its previous instruction (it waited, or another engine ran). */
fwsim_status_t fwsim_exec_insn(fwsim_exec_t *x, uint32_t e, uint32_t pc, uint32_t *out_next);
/* Records a fatal error once (the first wins) and stops the other engines. */
void fwsim_exec_fail(fwsim_exec_t *x, fwsim_status_t st, uint32_t e, uint32_t pc,
		     uint32_t ap_index, uint32_t region, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

const char *fwsim_engine_name(uint32_t e);

/* FUSED (kernels_fused.c): validates the descriptor ap1 points at and
 * bounds-checks its extra operands (recording INVALID/OOB itself), then runs
 * the program. Needs the job, unlike the kernels above. */
fwsim_status_t fwsim_exec_fused(fwsim_exec_t *x, uint32_t e, uint32_t pc, fwsim_kargs_t *k);

#endif /* FWSIM_INTERNAL_H */
