/* Shared helpers of the libfwsim unit tests: memory with canaries, AP layouts, independent element codecs, FUSED descriptors. */
#ifndef FWSIM_TEST_H
#define FWSIM_TEST_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fwsim/fwsim.h"
#include "neuronsim/half.h"

/* ck_assert_msg for per-element loops. A passing Check assertion records its
 * location (a write to Check's message file): the millions of elements these tests
 * compare made that most of their run time (seconds in release, minutes under the
 * sanitizers). This one asserts only when expr fails, with Check's own report. */
#define T_CHECK(expr, ...)                            \
	do {                                          \
		if (!(expr))                          \
			ck_assert_msg(expr, __VA_ARGS__); \
	} while (0)

#define T_NREG 4
#define T_REGSZ (1u << 20)
#define T_GUARD 4096u /* canary bytes around every region */
#define T_CANARY 0xA5

/* One job window: [guard][region0][guard][region1]... every guard filled with
 * T_CANARY so a stray write is visible. */
typedef struct tmem {
	uint8_t *mem;
	uint64_t size;
	fwsim_region_t regions[T_NREG];
	uint64_t bump[T_NREG];
} tmem_t;

static inline void tmem_init(tmem_t *t)
{
	t->size = (uint64_t)T_NREG * (T_REGSZ + T_GUARD) + T_GUARD;
	t->mem = aligned_alloc(4096, t->size);
	ck_assert_ptr_nonnull(t->mem);
	memset(t->mem, T_CANARY, t->size);
	for (uint32_t r = 0; r < T_NREG; r++) {
		t->regions[r].addr = T_GUARD + (uint64_t)r * (T_REGSZ + T_GUARD);
		t->regions[r].size = T_REGSZ;
		memset(t->mem + t->regions[r].addr, 0, T_REGSZ);
		t->bump[r] = 0;
	}
}

static inline void tmem_free(tmem_t *t)
{
	free(t->mem);
	t->mem = NULL;
}

static inline int tmem_guards_intact(const tmem_t *t)
{
	for (uint32_t r = 0; r <= T_NREG; r++) {
		uint64_t start = r == 0 ? 0 : t->regions[r - 1].addr + T_REGSZ;
		for (uint64_t i = 0; i < T_GUARD; i++)
			if (t->mem[start + i] != T_CANARY)
				return 0;
	}
	return 1;
}

/* Reserves n bytes (64-aligned) in region r, returns the region offset. */
static inline uint64_t tmem_alloc(tmem_t *t, uint32_t r, uint64_t n)
{
	uint64_t off = t->bump[r];
	t->bump[r] += (n + 63) & ~63ull;
	ck_assert_uint_le(t->bump[r], T_REGSZ);
	return off;
}

static inline uint8_t *tmem_ptr(tmem_t *t, uint32_t r, uint64_t off)
{
	return t->mem + t->regions[r].addr + off;
}

/* ---- layouts ---- */
typedef enum tlayout {
	L_CONTIG, L_TRANSPOSED, L_STRIDED, L_REVERSED, L_BCAST0, L_COUNT
} tlayout_t;

static const char *const tlayout_name[L_COUNT] = {
	"contig", "transposed", "strided", "reversed", "bcast0",
};

/* An AP of logical shape in a fresh allocation of region r with layout l. */
static inline isa_ap_t tmk_ap(tmem_t *t, uint32_t r, uint32_t dt, uint32_t rank,
			      const uint64_t *shape, tlayout_t l)
{
	isa_ap_t ap;
	memset(&ap, 0, sizeof(ap));
	ap.region = r;
	ap.dtype = (uint8_t)dt;
	ap.rank = (uint8_t)rank;
	uint64_t es = isa_dtype_size(dt);
	int64_t s = l == L_STRIDED ? 3 : 1;
	uint64_t n = 1;
	if (l == L_TRANSPOSED) {
		for (uint32_t k = 0; k < rank; k++) {
			ap.shape[k] = shape[k];
			ap.stride[k] = s;
			s *= (int64_t)shape[k];
		}
	} else {
		for (int k = (int)rank - 1; k >= 0; k--) {
			ap.shape[k] = shape[k];
			if (l == L_BCAST0 && k == 0) {
				ap.stride[k] = 0;
				continue;
			}
			ap.stride[k] = s;
			s *= (int64_t)shape[k];
		}
	}
	n = (uint64_t)s; /* elements spanned (with gaps) */
	uint64_t off = tmem_alloc(t, r, n * es + es);
	if (l == L_REVERSED) {
		for (uint32_t k = 0; k < rank; k++)
			ap.stride[k] = -ap.stride[k];
		off += (n - 1) * es;
	}
	ap.offset = off;
	return ap;
}

static inline uint8_t *telem(tmem_t *t, const isa_ap_t *ap, const uint64_t *idx)
{
	int64_t e = 0;
	for (uint32_t k = 0; k < ap->rank; k++)
		e += (int64_t)idx[k] * ap->stride[k];
	return tmem_ptr(t, ap->region, ap->offset) + e * (int64_t)isa_dtype_size(ap->dtype);
}

static inline void tunflat(uint64_t flat, uint32_t rank, const uint64_t *shape, uint64_t *idx)
{
	for (int k = (int)rank - 1; k >= 0; k--) {
		idx[k] = shape[k] ? flat % shape[k] : 0;
		flat = shape[k] ? flat / shape[k] : 0;
	}
}

static inline uint64_t tnumel(uint32_t rank, const uint64_t *shape)
{
	uint64_t n = 1;
	for (uint32_t k = 0; k < rank; k++)
		n *= shape[k];
	return n;
}

/* ---- independent element codecs (exactly representable values only for
 * f16 encoding; tests pick such values) ---- */
static inline double tf16_dec(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
	return (h & 0x8000) ? -v : v;
}

static inline uint16_t tf16_enc_exact(double v)
{
	uint16_t sign = v < 0 ? 0x8000 : 0;
	v = fabs(v);
	if (v == 0)
		return sign;
	int e = 0;
	double f = frexp(v, &e); /* v = f * 2^e, f in [0.5,1) */
	int be = e - 1 + 15;
	if (be <= 0) /* subnormal */
		return (uint16_t)(sign | (uint16_t)ldexp(v, 24));
	return (uint16_t)(sign | (be << 10) | ((uint16_t)ldexp(f * 2 - 1, 10) & 1023));
}

static inline double tget(uint32_t dt, const uint8_t *p)
{
	switch (dt) {
	case ISA_DT_F32: { float v; memcpy(&v, p, 4); return v; }
	case ISA_DT_BF16: { uint16_t h; memcpy(&h, p, 2); uint32_t u = (uint32_t)h << 16; float v; memcpy(&v, &u, 4); return v; }
	case ISA_DT_F16: { uint16_t h; memcpy(&h, p, 2); return tf16_dec(h); }
	case ISA_DT_S32: { int32_t v; memcpy(&v, p, 4); return v; }
	case ISA_DT_S64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	case ISA_DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case ISA_DT_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
	case ISA_DT_U8: case ISA_DT_PRED: return *p;
	case ISA_DT_S8: return (int8_t)*p;
	case ISA_DT_S16: { int16_t v; memcpy(&v, p, 2); return v; }
	case ISA_DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	}
	return NAN;
}

/* Integer view (exact for 64-bit types). */
static inline int64_t tgeti(uint32_t dt, const uint8_t *p)
{
	switch (dt) {
	case ISA_DT_S64: case ISA_DT_U64: { int64_t v; memcpy(&v, p, 8); return v; }
	default: return (int64_t)tget(dt, p);
	}
}

/* Stores v (exactly representable in dt; integers wrap) as dt. */
static inline void tset(uint32_t dt, uint8_t *p, double v)
{
	switch (dt) {
	case ISA_DT_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
	case ISA_DT_BF16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); uint16_t h = (uint16_t)(u >> 16); memcpy(p, &h, 2); return; }
	case ISA_DT_F16: { uint16_t h = tf16_enc_exact(v); memcpy(p, &h, 2); return; }
	default: break;
	}
	int64_t i = (int64_t)v;
	switch (isa_dtype_size(dt)) {
	case 1: *p = (uint8_t)i; return;
	case 2: { uint16_t x = (uint16_t)i; memcpy(p, &x, 2); return; }
	case 4: { uint32_t x = (uint32_t)i; memcpy(p, &x, 4); return; }
	default: memcpy(p, &i, 8); return;
	}
}

static inline void tseti(uint32_t dt, uint8_t *p, int64_t v)
{
	if (isa_dtype_size(dt) == 8)
		memcpy(p, &v, 8);
	else
		tset(dt, p, (double)v);
}

/* ---- building FUSED descriptors ---- */

typedef struct fbuild {
	isa_fused_desc_t h;
	isa_ap_t in[ISA_FUSED_MAX_INPUTS];
	isa_fused_op_t code[ISA_FUSED_MAX_CODE];
} fbuild_t;

static inline void fb_init(fbuild_t *b)
{
	memset(b, 0, sizeof(*b));
	b->h.magic = ISA_FUSED_MAGIC;
}

static inline uint32_t fb_input(fbuild_t *b, isa_ap_t ap)
{
	b->in[b->h.n_inputs] = ap;
	return b->h.n_inputs++;
}

static inline void fb_op(fbuild_t *b, uint32_t op, uint32_t dst, uint32_t dt, int s0, int s1,
			 int s2, uint64_t imm)
{
	isa_fused_op_t *o = &b->code[b->h.n_code++];
	o->op = (uint16_t)op;
	o->dst = (uint8_t)dst;
	o->dtype = (uint8_t)dt;
	o->src[0] = (uint8_t)(s0 < 0 ? 0 : s0);
	o->src[1] = (uint8_t)(s1 < 0 ? 0 : s1);
	o->src[2] = (uint8_t)(s2 < 0 ? 0 : s2);
	o->imm = imm;
	if (dst + 1u > b->h.n_regs)
		b->h.n_regs = (uint8_t)(dst + 1);
}

static inline uint64_t fimm(double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return u;
}

/* Bytes of b's descriptor. */
static inline size_t fb_size(const fbuild_t *b)
{
	return isa_fused_desc_size(b->h.n_inputs, b->h.n_code);
}

/* Serialises b's descriptor at p, which is offset off of region r, and
 * returns the FUSED instruction that reads it and writes out. */
static inline isa_insn_t fb_insn(fbuild_t *b, uint8_t *p, uint32_t r, uint64_t off, isa_ap_t out)
{
	if (b->h.n_regs < b->h.n_inputs)
		b->h.n_regs = (uint8_t)b->h.n_inputs;
	size_t len = fb_size(b);
	memcpy(p, &b->h, sizeof(b->h));
	p += sizeof(b->h);
	uint32_t ndir = b->h.n_inputs < ISA_FUSED_DIRECT ? b->h.n_inputs : ISA_FUSED_DIRECT;
	for (uint32_t i = ndir; i < b->h.n_inputs; i++, p += sizeof(isa_ap_t))
		memcpy(p, &b->in[i], sizeof(isa_ap_t));
	memcpy(p, b->code, b->h.n_code * sizeof(isa_fused_op_t));
	isa_insn_t in = isa_insn_init(ISA_OP_FUSED, 0);
	in.n_ap = (uint8_t)(2 + ndir);
	in.ap[0] = out;
	uint64_t sh[1] = { len };
	in.ap[1] = isa_ap_contig(r, off, ISA_DT_U8, 1, sh);
	for (uint32_t i = 0; i < ndir; i++)
		in.ap[2 + i] = b->in[i];
	return in;
}

/* ---- running ---- */
static inline fwsim_status_t trun_prog(tmem_t *t, fwsim_core_t *core, const isa_insn_t *const s[ISA_ENGINE_COUNT],
				       const uint32_t n[ISA_ENGINE_COUNT], uint32_t flags,
				       uint64_t deadline_ns, fwsim_job_t *job)
{
	fwsim_program_t *p = NULL;
	char err[200];
	ck_assert_msg(ns_status_consume_message(fwsim_program_create(s, n, T_NREG, &p), err, sizeof(err)) ==
		      NS_STATUS_OK, "program_create: %s", err);
	memset(job, 0, sizeof(*job));
	job->program = p;
	job->mem = t->mem;
	job->mem_size = t->size;
	job->regions = t->regions;
	job->n_regions = T_NREG;
	job->flags = flags;
	job->deadline_ns = deadline_ns;
	int own = core == NULL;
	if (own)
		ck_assert_int_eq(fwsim_core_create(NULL, &core), FWSIM_OK);
	fwsim_status_t st = fwsim_core_execute(core, job);
	if (own)
		fwsim_core_destroy(core);
	fwsim_program_destroy(p);
	job->program = NULL;
	return st;
}

/* Runs a single instruction on engine e. */
static inline fwsim_status_t trun1(tmem_t *t, const isa_insn_t *in, uint32_t e, uint32_t flags,
				   fwsim_job_t *job)
{
	const isa_insn_t *s[ISA_ENGINE_COUNT] = { 0 };
	uint32_t n[ISA_ENGINE_COUNT] = { 0 };
	s[e] = in;
	n[e] = 1;
	return trun_prog(t, NULL, s, n, flags, 0, job);
}

static inline uint64_t tnow_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process. Bounds on the work done after a deadline or
 * a cancel use it: a loaded machine (or a sanitizer build next to other
 * builds) stretches the wall clock by seconds, not the CPU time a job burns. */
static inline uint64_t tcpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deterministic pseudo-random numbers (xorshift). */
static inline uint64_t trand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The device's float MAX and MIN, written independently of alu_ops.h: IEEE
 * 754-2019 maximum and minimum (-0 < +0 in either order, as the interpreter),
 * NaN from either operand with a's bits when a is one, else b's. */
static inline float t_fmax(float a, float b)
{
	if (a != a || b != b)
		return a != a ? a : b;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static inline float t_fmin(float a, float b)
{
	if (a != a || b != b)
		return a != a ? a : b;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

static const uint32_t t_all_dtypes[] = {
	ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_S32, ISA_DT_S64, ISA_DT_U32,
	ISA_DT_U64, ISA_DT_U8, ISA_DT_PRED, ISA_DT_S8, ISA_DT_S16, ISA_DT_U16,
};
#define T_N_DTYPES (sizeof(t_all_dtypes) / sizeof(t_all_dtypes[0]))

/* The ISA validators as the tests ask them: 0, or -1 with the status's
 * message copied into err (when not NULL), so an assertion prints it. */
static inline int t_insn_check(const isa_insn_t *in, uint32_t n_regions, uint32_t stream_len,
			       char *err, size_t err_len)
{
	ns_status_t st = isa_insn_validate(in, n_regions, stream_len);
	if (err && err_len)
		ns_status_copy_message(st, err, err_len);
	ns_status_free(st);
	return st ? -1 : 0;
}

static inline int t_fused_check(const isa_insn_t *in, const uint8_t *desc, size_t len,
				uint32_t n_regions, char *err, size_t err_len)
{
	ns_status_t st = isa_fused_desc_validate(in, desc, len, n_regions);
	if (err && err_len)
		ns_status_copy_message(st, err, err_len);
	ns_status_free(st);
	return st ? -1 : 0;
}

#endif
