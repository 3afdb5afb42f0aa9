/* neuronsim-bench (`make bench`): runtime and simulator speed, each measured as a
 * ratio against a baseline taken in the same run, with a PASS/MISS per target. */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "neuronsim/isa.h"
#include "neuronsim/neff.h"
#include "neuronsim/quantile.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"

/* ---- small utilities ----------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *verdict(bool ok)
{
	return ok ? "PASS" : "MISS";
}

static void die(const char *what, NRT_STATUS st)
{
	fprintf(stderr, "neuronsim-bench: %s failed: %s (%d)\n", what, nrt_get_status_as_str(st),
		(int)st);
	exit(1);
}

#define NRT_OK(call, what)                       \
	do {                                     \
		NRT_STATUS st_ = (call);         \
		if (st_ != NRT_SUCCESS)          \
			die(what, st_);          \
	} while (0)

static isa_ap_t ap_contig(uint32_t region, uint64_t off, uint32_t rank, const uint64_t *shape)
{
	isa_ap_t a;
	memset(&a, 0, sizeof(a));
	a.region = region;
	a.dtype = ISA_DT_F32;
	a.rank = (uint8_t)rank;
	a.offset = off;
	int64_t stride = 1;
	for (int k = (int)rank - 1; k >= 0; k--) {
		a.shape[k] = shape[k];
		a.stride[k] = stride;
		stride *= (int64_t)shape[k];
	}
	return a;
}

/* Exits with "neuronsim-bench: WHAT: <message>" when a builder call failed:
 * the bench has no use for a half-built model. */
static void built(ns_status_t st, const char *what)
{
	if (!st)
		return;
	fprintf(stderr, "neuronsim-bench: %s: %s\n", what, ns_status_message(st));
	ns_status_free(st);
	exit(1);
}

static void finish(neff_builder_t *b, void **neff, size_t *size)
{
	built(neff_builder_finish(b, neff, size), "building a benchmark NEFF");
	neff_builder_destroy(b);
}

static void add_tensor(neff_builder_t *b, const char *name, neff_usage_t usage, uint32_t rank,
		       const uint64_t *shape, uint32_t *idx)
{
	if (!b) {
		fprintf(stderr, "neuronsim-bench: out of memory creating a NEFF builder\n");
		exit(1);
	}
	built(neff_builder_add_tensor(b, name, usage, ISA_DT_F32, rank, shape, -1, idx),
	      "adding a tensor to a NEFF");
}

/* A loaded model with one device tensor per I/O tensor, bound by name. */
typedef struct bench_model {
	nrt_model_t *model;
	nrt_tensor_t *t[4];
	int n;
	nrt_tensor_set_t *in, *out;
} bench_model_t;

static void bench_model_load(bench_model_t *m, void *neff, size_t size, const char *const *names,
			     const size_t *bytes, const bool *is_out, int n)
{
	memset(m, 0, sizeof(*m));
	NRT_OK(nrt_load(neff, size, 0, 1, &m->model), "nrt_load");
	NRT_OK(nrt_allocate_tensor_set(&m->in), "nrt_allocate_tensor_set");
	NRT_OK(nrt_allocate_tensor_set(&m->out), "nrt_allocate_tensor_set");
	m->n = n;
	for (int i = 0; i < n; i++) {
		NRT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes[i], names[i], &m->t[i]),
		       "nrt_tensor_allocate");
		NRT_OK(nrt_add_tensor_to_tensor_set(is_out[i] ? m->out : m->in, names[i], m->t[i]),
		       "nrt_add_tensor_to_tensor_set");
	}
}

static void bench_model_release(bench_model_t *m)
{
	nrt_destroy_tensor_set(&m->in);
	nrt_destroy_tensor_set(&m->out);
	for (int i = 0; i < m->n; i++)
		nrt_tensor_free(&m->t[i]);
	nrt_unload(m->model);
}

static double exec_ms(bench_model_t *m)
{
	uint64_t t0 = now_ns();
	NRT_STATUS st = nrt_execute(m->model, m->in, m->out);
	uint64_t t1 = now_ns();
	if (st != NRT_SUCCESS)
		die("nrt_execute", st);
	return (double)(t1 - t0) / 1e6;
}

/* CPU time of the calling thread for one execution: a one-engine program
 * runs in the calling thread on the embedded backend, so this is its work,
 * which other processes on a loaded machine do not stretch. */
static double exec_cpu_ms(bench_model_t *m)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	NRT_STATUS st = nrt_execute(m->model, m->in, m->out);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	if (st != NRT_SUCCESS)
		die("nrt_execute", st);
	return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

/* ---- (a) nrt_execute round trip vs a futex wake-up round trip ------------ */

static _Atomic uint32_t futex_word;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

/* Waits until *addr == want, sleeping in the kernel in between. */
static void futex_wait_for(_Atomic uint32_t *addr, uint32_t want)
{
	uint32_t v;
	while ((v = atomic_load(addr)) != want)
		futex(addr, FUTEX_WAIT_PRIVATE, v);
}

static long pingpong_iters;

static void *pong(void *arg)
{
	(void)arg;
	for (long i = 0; i < pingpong_iters; i++) {
		futex_wait_for(&futex_word, 1);
		atomic_store(&futex_word, 2);
		futex(&futex_word, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

/* The cost the issue's ~40 us refers to: hand a job to another thread and wait
 * to be woken with its completion. */
static void futex_round_trip(long iters, double *p50, double *p99)
{
	pingpong_iters = iters;
	atomic_store(&futex_word, 0);
	pthread_t th;
	if (pthread_create(&th, NULL, pong, NULL)) {
		fprintf(stderr, "neuronsim-bench: pthread_create failed\n");
		exit(1);
	}
	double *t = malloc((size_t)iters * sizeof(double));
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		atomic_store(&futex_word, 1);
		futex(&futex_word, FUTEX_WAKE_PRIVATE, 1);
		futex_wait_for(&futex_word, 2);
		t[i] = (double)(now_ns() - t0) / 1e3;
		atomic_store(&futex_word, 0);
	}
	pthread_join(th, NULL);
	*p50 = ns_quantile(t, (size_t)iters, 0.5);
	*p99 = ns_quantile(t, (size_t)iters, 0.99);
	free(t);
}

static void bench_exec_round_trip(void)
{
	const uint64_t shape[1] = { 16 };
	neff_builder_t *b = neff_builder_create("bench_one_insn", 1);
	uint32_t in_i, out_i;
	add_tensor(b, "in", NEFF_USAGE_INPUT, 1, shape, &in_i);
	add_tensor(b, "out", NEFF_USAGE_OUTPUT, 1, shape, &out_i);
	isa_insn_t insn = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	insn.n_ap = 3;
	insn.ap[0] = ap_contig(ISA_REGION_IO0 + out_i, 0, 1, shape);
	insn.ap[1] = ap_contig(ISA_REGION_IO0 + in_i, 0, 1, shape);
	insn.ap[2] = insn.ap[1];
	built(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &insn, NULL),
	      "emitting the one-instruction NEFF");
	void *neff;
	size_t size;
	finish(b, &neff, &size);

	bench_model_t m;
	const char *names[2] = { "in", "out" };
	const size_t bytes[2] = { 64, 64 };
	const bool is_out[2] = { false, true };
	bench_model_load(&m, neff, size, names, bytes, is_out, 2);
	free(neff);

	const long warm = 2000, iters = 50000;
	for (long i = 0; i < warm; i++)
		exec_ms(&m);
	double *t = malloc((size_t)iters * sizeof(double));
	for (long i = 0; i < iters; i++)
		t[i] = exec_ms(&m) * 1e3;
	double p50 = ns_quantile(t, (size_t)iters, 0.5), p99 = ns_quantile(t, (size_t)iters, 0.99);
	free(t);
	bench_model_release(&m);

	double f50, f99;
	futex_round_trip(20000, &f50, &f99);
	printf("(a) nrt_execute round trip, 1-instruction NEFF: p50 %.2f us, p99 %.2f us\n"
	    "    baseline futex wake-up round trip (2 threads): p50 %.2f us, p99 %.2f us\n"
	    "    ratio exec/futex p50 %.3f; target p50 <= 2 us: %s\n",
	    p50, p99, f50, f99, p50 / f50, verdict(p50 <= 2.0));
}

/* ---- (b) 1024^3 f32 matmul on the simulator vs dnnl_sgemm ---------------- */

void omp_set_num_threads(int n); /* libgomp's, which oneDNN runs on */

/* The host threads the simulator splits a MATMUL across (NEURONSIM_THREADS,
 * docs/env.md; unset or 0: the affinity mask's CPUs, at most 16). */
static int sim_threads(void)
{
	const char *v = getenv("NEURONSIM_THREADS");
	int n = v && *v ? atoi(v) : 0;
	if (n <= 0) {
		cpu_set_t set;
		n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	}
	return n < 1 ? 1 : n > 16 ? 16 : n;
}

/* The NEFF of one f32 product, tensors a [M, K], b [K, N] and c [M, N]. */
static void matmul_neff(const char *name, uint64_t M, uint64_t K, uint64_t N, void **neff,
			size_t *size)
{
	const uint64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[2] = { M, N };
	neff_builder_t *b = neff_builder_create(name, 1);
	uint32_t a_i, b_i, c_i;
	add_tensor(b, "a", NEFF_USAGE_INPUT, 2, sa, &a_i);
	add_tensor(b, "b", NEFF_USAGE_INPUT, 2, sb, &b_i);
	add_tensor(b, "c", NEFF_USAGE_OUTPUT, 2, sc, &c_i);
	isa_insn_t insn = isa_insn_init(ISA_OP_MATMUL, 0);
	insn.n_ap = 3;
	insn.ap[0] = ap_contig(ISA_REGION_IO0 + c_i, 0, 2, sc);
	insn.ap[1] = ap_contig(ISA_REGION_IO0 + a_i, 0, 2, sa);
	insn.ap[2] = ap_contig(ISA_REGION_IO0 + b_i, 0, 2, sb);
	built(neff_builder_emit(b, 0, ISA_ENGINE_TENSOR, &insn, NULL), "emitting the matmul NEFF");
	finish(b, neff, size);
}

/* One f32 product C [M x N] = A [M x K] x B [K x N], row-major, called
 * directly: the library the simulator's MATMUL calls. */
typedef struct gemm_args {
	uint64_t M, N, K;
	const float *a, *b;
	float *c;
} gemm_args_t;

static double gemm_ms(const gemm_args_t *g)
{
	uint64_t t0 = now_ns();
	dnnl_sgemm('N', 'N', (dnnl_dim_t)g->M, (dnnl_dim_t)g->N, (dnnl_dim_t)g->K, 1.0f, g->a,
		   (dnnl_dim_t)g->K, g->b, (dnnl_dim_t)g->N, 0.0f, g->c, (dnnl_dim_t)g->N);
	return (double)(now_ns() - t0) / 1e6;
}

/* Before run i of a side (0 the NEFF, 1 the direct call): (f) points both
 * at the next of its copies of the wide operand. */
typedef void (*before_run_fn)(void *ctx, int side, int i);

/* Times (b)'s and (f)'s two sides, the NEFF m through nrt_execute and g
 * called directly, in MM_ROUNDS alternating blocks: 50 ms of sleep, one
 * untimed run, then MM_BLOCK timed runs, before each of which before (when
 * not NULL) runs. Within a block the side's own waiting threads are awake and
 * the other side's asleep (libgomp spins for a while after a parallel
 * region, the pool's workers look for 0.8 ms): run by run in turn, each ran
 * beside the other's spinning threads and the 1024^3 product lost 15-30%;
 * after a sleep each, both paid an idle CPU's wake-up (oneDNN's static
 * split the more). A neighbour's bursts still land on both sides. */
enum { MM_ROUNDS = 5, MM_BLOCK = 3, MM_RUNS = MM_ROUNDS * MM_BLOCK };

static void time_sides(bench_model_t *m, gemm_args_t *g, before_run_fn before, void *ctx,
		       double *sim, double *direct)
{
	int n[2] = { 0, 0 };
	for (int r = 0; r < MM_ROUNDS; r++)
		for (int side = 0; side < 2; side++) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			for (int i = -1; i < MM_BLOCK; i++) {
				if (before)
					before(ctx, side, n[side]++);
				double t = side == 0 ? exec_ms(m) : gemm_ms(g);
				if (i >= 0)
					(side == 0 ? sim : direct)[r * MM_BLOCK + i] = t;
			}
		}
}

static void bench_matmul(void)
{
	const uint64_t N = 1024;
	void *neff;
	size_t size;
	matmul_neff("bench_matmul", N, N, N, &neff, &size);

	const size_t bytes = N * N * sizeof(float);
	float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
	for (size_t i = 0; i < N * N; i++) {
		ha[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
		hb[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
	}
	bench_model_t m;
	const char *names[3] = { "a", "b", "c" };
	const size_t nb[3] = { bytes, bytes, bytes };
	const bool is_out[3] = { false, false, true };
	bench_model_load(&m, neff, size, names, nb, is_out, 3);
	free(neff);
	NRT_OK(nrt_tensor_write(m.t[0], ha, 0, bytes), "nrt_tensor_write");
	NRT_OK(nrt_tensor_write(m.t[1], hb, 0, bytes), "nrt_tensor_write");

	/* The simulator runs oneDNN's sgemm on one thread per call inside its
	 * own pool of `threads`; the direct call, the library the simulator
	 * calls, gets oneDNN's own OpenMP threads, as many. */
	double sim[MM_RUNS], direct[MM_RUNS];
	int threads = sim_threads();
	omp_set_num_threads(threads);
	gemm_args_t g = { N, N, N, ha, hb, hc };
	time_sides(&m, &g, NULL, NULL, sim, direct);
	/* Spot-check the simulator's answer so a fast wrong kernel cannot pass. */
	float *dc = malloc(bytes);
	NRT_OK(nrt_tensor_read(m.t[2], dc, 0, bytes), "nrt_tensor_read");
	double maxdiff = 0;
	for (size_t i = 0; i < N * N; i += 4093)
		maxdiff = fmax(maxdiff, fabs((double)dc[i] - (double)hc[i]));
	free(dc);
	bench_model_release(&m);
	free(ha); free(hb); free(hc);

	double s = ns_quantile(sim, MM_RUNS, 0.5), d = ns_quantile(direct, MM_RUNS, 0.5);
	double flop = 2.0 * (double)N * (double)N * (double)N;
	printf("(b) matmul 1024x1024x1024 f32 via nrt_execute, %d thread(s): %.2f ms (%.1f GFLOP/s)\n"
	    "    baseline dnnl_sgemm direct, oneDNN with as many threads: %.2f ms (%.1f GFLOP/s)\n"
	    "    ratio sim/direct throughput %.3f; target >= 0.9: %s%s\n",
	    threads, s, flop / s / 1e6, d, flop / d / 1e6, d / s, verdict(d / s >= 0.9),
	    maxdiff > 1e-2 ? " (WRONG RESULT: sim differs from BLAS)" : "");
}

/* ---- (f) thin matmuls, wide operand cold, vs dnnl_sgemm ------------------ */

/* (f)'s copies of the wide operand: THIN_COPIES x 9.4 MB (75 MB, beyond this
 * machine's L2 and what a training step's other traffic leaves of L3), each
 * run reading the next, so it comes from memory as a kernel read once a
 * step does; as device tensors for the NEFF, as host arrays for sgemm. */
#define THIN_COPIES 8

typedef struct thin_rot {
	bench_model_t *m;
	gemm_args_t *g;
	bool wide_a; /* the wide operand is A (else B) */
	nrt_tensor_t *dev[THIN_COPIES];
	float *host[THIN_COPIES];
} thin_rot_t;

static void thin_next(void *ctx, int side, int i)
{
	thin_rot_t *t = ctx;
	int c = i % THIN_COPIES;
	if (side == 0)
		NRT_OK(nrt_add_tensor_to_tensor_set(t->m->in, t->wide_a ? "a" : "b", t->dev[c]),
		       "nrt_add_tensor_to_tensor_set");
	else if (t->wide_a)
		t->g->a = t->host[c];
	else
		t->g->b = t->host[c];
}

/* One product C [M x N] = A [M x K] x B [K x N], f32 row-major, whose wide
 * operand (A when N is the small dim, else B) is cold: through nrt_execute
 * and through dnnl_sgemm on as many threads. The shapes are ResNet-18's
 * layer 4 at 64x64 (docs/isa.md, thin products). */
static void bench_thin_one(const char *what, uint64_t M, uint64_t K, uint64_t N)
{
	void *neff;
	size_t size;
	matmul_neff("bench_thin", M, K, N, &neff, &size);
	const size_t ab = M * K * sizeof(float), bb = K * N * sizeof(float), cb = M * N * sizeof(float);
	thin_rot_t rot = { .wide_a = N < M };
	const size_t wb = rot.wide_a ? ab : bb, sb = rot.wide_a ? bb : ab;
	float *small = malloc(sb), *hc = malloc(cb), *dc = malloc(cb);
	bool ok = small && hc && dc;
	for (int c = 0; c < THIN_COPIES && ok; c++)
		ok = (rot.host[c] = malloc(wb)) != NULL;
	if (!ok) {
		fprintf(stderr, "neuronsim-bench: out of memory for the thin matmul operands\n");
		exit(1);
	}
	for (int c = 0; c < THIN_COPIES; c++)
		for (size_t i = 0; i < wb / sizeof(float); i++)
			rot.host[c][i] = (float)((i * 7919 + (size_t)c) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < sb / sizeof(float); i++)
		small[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
	bench_model_t m;
	const char *names[3] = { "a", "b", "c" };
	const size_t nb[3] = { ab, bb, cb };
	const bool is_out[3] = { false, false, true };
	bench_model_load(&m, neff, size, names, nb, is_out, 3);
	free(neff);
	NRT_OK(nrt_tensor_write(m.t[rot.wide_a ? 1 : 0], small, 0, sb), "nrt_tensor_write");
	/* the model's own wide tensor is the first copy */
	rot.dev[0] = m.t[rot.wide_a ? 0 : 1];
	for (int c = 0; c < THIN_COPIES; c++) {
		if (c > 0)
			NRT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, wb, "bench_thin_wide",
						   &rot.dev[c]),
			       "nrt_tensor_allocate");
		NRT_OK(nrt_tensor_write(rot.dev[c], rot.host[c], 0, wb), "nrt_tensor_write");
	}
	double sim[MM_RUNS], direct[MM_RUNS];
	omp_set_num_threads(1);
	gemm_args_t g = { M, N, K, rot.wide_a ? rot.host[0] : small, rot.wide_a ? small : rot.host[0], hc };
	rot.m = &m;
	rot.g = &g;
	time_sides(&m, &g, thin_next, &rot, sim, direct);
	/* both sides' last runs read the same copy */
	NRT_OK(nrt_tensor_read(m.t[2], dc, 0, cb), "nrt_tensor_read");
	double maxdiff = 0;
	for (size_t i = 0; i < M * N; i += 97)
		maxdiff = fmax(maxdiff, fabs((double)dc[i] - (double)hc[i]));
	bench_model_release(&m); /* frees the first copy */
	for (int c = 0; c < THIN_COPIES; c++) {
		if (c > 0)
			nrt_tensor_free(&rot.dev[c]);
		free(rot.host[c]);
	}
	free(small); free(hc); free(dc);

	double s = ns_quantile(sim, MM_RUNS, 0.5), d = ns_quantile(direct, MM_RUNS, 0.5);
	printf("(f) thin matmul, %s: [%" PRIu64 " x %" PRIu64 "] x [%" PRIu64 " x %" PRIu64
	       "] f32, wide operand cold, 1 thread: %.3f ms\n"
	       "    baseline dnnl_sgemm direct, 1 thread, same operands: %.3f ms\n"
	       "    ratio direct/sim %.2f; target >= 1.0: %s%s\n",
	       what, M, K, K, N, s, d, d / s, verdict(d / s >= 1.0),
	       maxdiff > 1e-2 ? " (WRONG RESULT: sim differs from BLAS)" : "");
}

/* On one thread each (the runtime initialised with NEURONSIM_THREADS=1,
 * oneDNN with one OpenMP thread): the kernel against the library. With two,
 * a product of about a millisecond run once after idling measures when the
 * pool's second thread wakes more than the kernel (on this machine 0.66-1.2
 * ms from run to run); the ResNet-18 step of bench_conv.py's second table
 * is where both cores count. */
static void bench_thin_matmul(void)
{
	const char *prev = getenv("NEURONSIM_THREADS");
	char *saved = prev ? strdup(prev) : NULL;
	setenv("NEURONSIM_THREADS", "1", 1);
	NRT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), "nrt_init");
	bench_thin_one("narrow (a 3x3 512->512 forward over 8 2x2 planes)", 512, 4608, 32);
	fflush(stdout);
	bench_thin_one("short (its input gradient's col2im product)", 32, 512, 4608);
	nrt_close();
	if (saved)
		setenv("NEURONSIM_THREADS", saved, 1);
	else
		unsetenv("NEURONSIM_THREADS");
	free(saved);
}

/* ---- (c) 64 MiB tensor write/read vs memcpy ------------------------------ */

static void bench_tensor_io(void)
{
	const size_t bytes = 64u << 20;
	uint8_t *src = malloc(bytes), *dst = malloc(bytes);
	if (!src || !dst) {
		fprintf(stderr, "neuronsim-bench: out of memory for 2 x 64 MiB\n");
		exit(1);
	}
	memset(src, 0x5a, bytes);
	memset(dst, 0, bytes);
	nrt_tensor_t *t;
	NRT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, "bench_io", &t),
	       "nrt_tensor_allocate (64 MiB)");
	enum { REPS = 15 };
	double w[REPS], r[REPS], c[REPS];
	NRT_OK(nrt_tensor_write(t, src, 0, bytes), "nrt_tensor_write");
	NRT_OK(nrt_tensor_read(t, dst, 0, bytes), "nrt_tensor_read");
	for (int k = 0; k < REPS; k++) {
		uint64_t t0 = now_ns();
		NRT_OK(nrt_tensor_write(t, src, 0, bytes), "nrt_tensor_write");
		uint64_t t1 = now_ns();
		NRT_OK(nrt_tensor_read(t, dst, 0, bytes), "nrt_tensor_read");
		uint64_t t2 = now_ns();
		memcpy(dst, src, bytes);
		uint64_t t3 = now_ns();
		w[k] = (double)(t1 - t0) / 1e6;
		r[k] = (double)(t2 - t1) / 1e6;
		c[k] = (double)(t3 - t2) / 1e6;
		/* Keep the compiler from treating the copies as dead. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	nrt_tensor_free(&t);
	free(src);
	free(dst);
	double wm = ns_quantile(w, REPS, 0.5), rm = ns_quantile(r, REPS, 0.5), cm = ns_quantile(c, REPS, 0.5);
	double gib = (double)bytes / (1u << 30);
	printf("(c) nrt_tensor_write 64 MiB: %.2f ms (%.1f GiB/s); nrt_tensor_read: %.2f ms (%.1f GiB/s)\n"
	    "    baseline memcpy 64 MiB: %.2f ms (%.1f GiB/s)\n"
	    "    ratio write %.3f, read %.3f (memcpy time / tensor time); target >= 0.9: write %s, read %s\n",
	    wm, gib / wm * 1e3, rm, gib / rm * 1e3, cm, gib / cm * 1e3, cm / wm, cm / rm,
	    verdict(cm / wm >= 0.9), verdict(cm / rm >= 0.9));
}

/* ---- (d) NaN checking on vs off ----------------------------------------- */

static void *build_elementwise_neff(uint64_t n, int n_ops, size_t *size)
{
	const uint64_t shape[1] = { n };
	neff_builder_t *b = neff_builder_create("bench_elementwise", 1);
	uint32_t x_i, y_i;
	add_tensor(b, "x", NEFF_USAGE_INPUT, 1, shape, &x_i);
	add_tensor(b, "y", NEFF_USAGE_OUTPUT, 1, shape, &y_i);
	/* Alternating +1 and *0.5 keeps every value finite and bounded, so the
	 * check scans everything and never finds anything. */
	const float k[2] = { 1.0f, 0.5f };
	uint64_t koff;
	built(neff_builder_add_const(b, k, sizeof(k), 64, &koff), "adding constants");
	isa_ap_t x = ap_contig(ISA_REGION_IO0 + x_i, 0, 1, shape);
	isa_ap_t y = ap_contig(ISA_REGION_IO0 + y_i, 0, 1, shape);
	for (int i = 0; i < n_ops; i++) {
		isa_insn_t insn = isa_insn_init(ISA_OP_ALU, i % 2 ? ISA_ALU_MUL : ISA_ALU_ADD);
		insn.n_ap = 3;
		insn.ap[0] = y;
		insn.ap[1] = i ? y : x;
		insn.ap[2] = ap_contig(ISA_REGION_CONST, koff + (uint64_t)(i % 2) * 4, 1, shape);
		insn.ap[2].stride[0] = 0;
		built(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &insn, NULL),
		      "emitting the elementwise NEFF");
	}
	void *neff;
	finish(b, &neff, size);
	return neff;
}

/* Median execution time of the elementwise NEFF with NaN checking set by
 * NEURONSIM_NAN_CHECK and the deadline by NEURON_RT_EXEC_TIMEOUT (seconds),
 * which the runtime reads at nrt_init (docs/env.md); wall time, or with
 * cpu the calling thread's CPU time. */
static double elementwise_ms(void *neff, size_t size, uint64_t n, bool nan_check,
			     const char *timeout_s, bool cpu, int reps)
{
	setenv("NEURONSIM_NAN_CHECK", nan_check ? "1" : "0", 1);
	setenv("NEURON_RT_EXEC_TIMEOUT", timeout_s, 1);
	NRT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), "nrt_init");
	bench_model_t m;
	const char *names[2] = { "x", "y" };
	const size_t bytes[2] = { n * 4, n * 4 };
	const bool is_out[2] = { false, true };
	bench_model_load(&m, neff, size, names, bytes, is_out, 2);
	float *h = malloc(n * 4);
	for (uint64_t i = 0; i < n; i++)
		h[i] = (float)(i % 1024) / 1024.0f;
	NRT_OK(nrt_tensor_write(m.t[0], h, 0, n * 4), "nrt_tensor_write");
	free(h);
	double t[16];
	exec_ms(&m);
	for (int r = 0; r < reps; r++)
		t[r] = cpu ? exec_cpu_ms(&m) : exec_ms(&m);
	bench_model_release(&m);
	nrt_close();
	return ns_quantile(t, (size_t)reps, 0.5);
}

static void bench_nan_check(void)
{
	const uint64_t n = 4u << 20;
	const int n_ops = 20;
	size_t size;
	void *neff = build_elementwise_neff(n, n_ops, &size);
	/* Alternate on/off rounds and keep the best median of each, so drift in
	 * machine load (2 shared cores) does not land on one side only. */
	enum { ROUNDS = 5, REPS = 5 };
	double on = INFINITY, off = INFINITY;
	for (int r = 0; r < ROUNDS; r++) {
		on = fmin(on, elementwise_ms(neff, size, n, true, "30", false, REPS));
		off = fmin(off, elementwise_ms(neff, size, n, false, "30", false, REPS));
	}
	free(neff);
	double overhead = (on / off - 1.0) * 100.0;
	printf("(d) NaN checking on, %d chained ALU ops on 4M f32: %.2f ms per execution\n"
	    "    baseline NaN checking off (NEURONSIM_NAN_CHECK=0): %.2f ms\n"
	    "    overhead %+.1f%% (ratio on/off %.3f); target <= 5%%: %s\n",
	    n_ops, on, off, overhead, on / off, verdict(overhead <= 5.0));
}

/* ---- (e) deadline polling inside instructions ----------------------------- */

/* Kernels charge their work to a watchdog and every FWSIM_POLL_WORK element
 * operations poll the cancel flag and, with a deadline, the clock (issue #11,
 * item 2). With NEURON_RT_EXEC_TIMEOUT=0 the polls read two flags only, so
 * the difference is the cost of the clock reads. Measured in the calling
 * thread's CPU time: the effect is far below the wall-time noise of a shared
 * machine. */
static void bench_deadline_poll(void)
{
	const uint64_t n = 4u << 20;
	const int n_ops = 20;
	size_t size;
	void *neff = build_elementwise_neff(n, n_ops, &size);
	enum { ROUNDS = 7, REPS = 9 };
	double on = INFINITY, off = INFINITY;
	for (int r = 0; r < ROUNDS; r++) {
		on = fmin(on, elementwise_ms(neff, size, n, false, "30", true, REPS));
		off = fmin(off, elementwise_ms(neff, size, n, false, "0", true, REPS));
	}
	free(neff);
	unsetenv("NEURON_RT_EXEC_TIMEOUT");
	double overhead = (on / off - 1.0) * 100.0;
	printf("(e) deadline polled inside instructions (NEURON_RT_EXEC_TIMEOUT=30), %d chained\n"
	    "    ALU ops on 4M f32: %.2f ms CPU per execution\n"
	    "    baseline no deadline (NEURON_RT_EXEC_TIMEOUT=0): %.2f ms CPU\n"
	    "    overhead %+.1f%% (ratio %.3f); target <= 1%%: %s\n",
	    n_ops, on, off, overhead, on / off, verdict(overhead <= 1.0));
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	if (only && (strcmp(only, "-h") == 0 || strcmp(only, "--help") == 0)) {
		printf("Usage: neuronsim-bench [a|b|c|d|e|f]\n"
		       "Runs the benchmarks (all, or the one named) and prints each result next to\n"
		       "a baseline measured in the same run, with PASS/MISS against its target.\n"
		       "Exit status 0 unless a benchmark could not run at all (then 1).\n");
		return 0;
	}
	printf("neuronsim-bench: %ld CPUs online\n", sysconf(_SC_NPROCESSORS_ONLN));
	fflush(stdout);
	if (!only || strchr(only, 'a') || strchr(only, 'b') || strchr(only, 'c')) {
		NRT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), "nrt_init");
		printf("backend: %s\n", nrt_neuronsim_backend_name());
		if (!only || strchr(only, 'a'))
			bench_exec_round_trip();
		fflush(stdout);
		if (!only || strchr(only, 'b'))
			bench_matmul();
		fflush(stdout);
		if (!only || strchr(only, 'c'))
			bench_tensor_io();
		fflush(stdout);
		nrt_close();
	}
	if (!only || strchr(only, 'f'))
		bench_thin_matmul();
	fflush(stdout);
	if (!only || strchr(only, 'd'))
		bench_nan_check();
	fflush(stdout);
	if (!only || strchr(only, 'e'))
		bench_deadline_poll();
	return 0;
}
