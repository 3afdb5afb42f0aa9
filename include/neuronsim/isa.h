/* The simulated NeuronCore instruction set: engines, dtypes, access patterns and
 * the fixed-size instruction encoding stored in NEFF code sections (docs/isa.md). */
#ifndef NEURONSIM_ISA_H
#define NEURONSIM_ISA_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "neuronsim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump ISA_VERSION_MINOR for compatible additions (new opcodes, new sub-ops);
 * an incompatible change of the encoding is a new NEFF major version. */
#define ISA_VERSION_MAJOR 1
#define ISA_VERSION_MINOR 5

/* Engines of one NeuronCore. Each has its own instruction stream; streams
 * synchronise through the core's semaphores only. */
typedef enum isa_engine {
	ISA_ENGINE_TENSOR = 0, /* matmul */
	ISA_ENGINE_VECTOR = 1, /* elementwise ALU, reductions */
	ISA_ENGINE_SCALAR = 2, /* activation functions */
	ISA_ENGINE_GPSIMD = 3, /* iota, gather, scatter, rng, control flow */
	ISA_ENGINE_DMA = 4,    /* copies, transposes, dtype conversion */
	ISA_ENGINE_COUNT
} isa_engine_t;

/* Element types. Values are part of the NEFF format: never renumber. */
typedef enum isa_dtype {
	ISA_DT_INVALID = 0,
	ISA_DT_F32 = 1,
	ISA_DT_BF16 = 2,
	ISA_DT_F16 = 3,
	ISA_DT_S32 = 4,
	ISA_DT_S64 = 5,
	ISA_DT_U32 = 6,
	ISA_DT_U64 = 7,
	ISA_DT_U8 = 8,
	ISA_DT_PRED = 9, /* one byte, 0 or 1 */
	ISA_DT_S8 = 10,
	ISA_DT_S16 = 11,
	ISA_DT_U16 = 12,
	ISA_DT_COUNT
} isa_dtype_t;

static inline size_t isa_dtype_size(uint32_t dt)
{
	switch (dt) {
	case ISA_DT_F32: case ISA_DT_S32: case ISA_DT_U32: return 4;
	case ISA_DT_BF16: case ISA_DT_F16: case ISA_DT_S16: case ISA_DT_U16: return 2;
	case ISA_DT_S64: case ISA_DT_U64: return 8;
	case ISA_DT_U8: case ISA_DT_PRED: case ISA_DT_S8: return 1;
	default: return 0;
	}
}

static inline int isa_dtype_is_float(uint32_t dt)
{
	return dt == ISA_DT_F32 || dt == ISA_DT_BF16 || dt == ISA_DT_F16;
}

/* Lower-case names as XLA spells them (f32, bf16, s64, pred, ...). */
const char *isa_dtype_name(uint32_t dt);

/* Opcodes. ap[0] is the output unless the opcode says otherwise. */
typedef enum isa_opcode {
	ISA_OP_NOP = 0,      /* only waits/signals semaphores */
	ISA_OP_MATMUL = 1,   /* tensor: ap0[b,m,n] (+)= sum_k ap1[b,m,k] * ap2[b,k,n] */
	ISA_OP_ALU = 2,      /* vector: ap0 = op(ap1[, ap2[, ap3]]), sub = isa_alu */
	ISA_OP_ACTIVATE = 3, /* scalar: ap0 = func(ap1 * imm[0] + imm[1]), sub = isa_act */
	ISA_OP_REDUCE = 4,   /* vector: ap0 = reduce(ap1) over param axes mask, sub = isa_reduce */
	ISA_OP_COPY = 5,     /* dma: ap0 = convert(ap1), same shape, any dtypes */
	ISA_OP_IOTA = 6,     /* gpsimd: ap0[i...] = i[param] + imm[0] */
	ISA_OP_GATHER = 7,   /* gpsimd: ap0[m,r] = ap1[clamp(ap2[m]),r] */
	ISA_OP_SCATTER = 8,  /* gpsimd: ap0[ap2[m],r] = op(ap0[..], ap1[m,r]), sub = isa_reduce */
	ISA_OP_RNG = 9,      /* gpsimd: ap0 = random bits from state ap1 (u64[2]), ap2 = next state */
	ISA_OP_JUMP = 10,    /* any engine: if (ap0 scalar != 0) ^ INVERT, or always when
				 n_ap == 0 or ap0.region == ISA_REGION_NONE, continue at
				 insn param of the same stream */
	ISA_OP_FUSED = 11,   /* vector: ap0 = program(inputs); ap1 = descriptor (u8 bytes in
				 the constants region, isa_fused_desc_t), ap2, ap3 = the
				 first inputs; param = ISA_FUSED_STEPS_DEBUG(first) or 0;
				 added in ISA 1.1 (param in 1.2) */
	ISA_OP_CONV = 12,    /* vector: ap0[n,g,o,y] = sum_{c,k} X(ap1)[n,g,c,y*S+k*D-P] *
				 ap2[g,o,c,k], window ap3 (ISA_CONV_*); added in ISA 1.4 */
	ISA_OP_SELSCAT = 13, /* vector: select-and-scatter (a max-pool's gradient): each
				 window of ap1 picks one element, ap0 there = op(ap0, ap2[window]),
				 sub = isa_reduce, param = the select's compare, window ap3
				 (ISA_SELSCAT_*); added in ISA 1.5 */
	ISA_OP_COUNT
} isa_opcode_t;

/* ALU sub-ops (ISA_OP_ALU). Floats compute in f32, integers in 64 bits with
 * the signedness of the output (compares: of the inputs). */
typedef enum isa_alu {
	/* unary: ap0 = f(ap1) */
	ISA_ALU_NEG = 0, ISA_ALU_ABS, ISA_ALU_SIGN, ISA_ALU_FLOOR, ISA_ALU_CEIL,
	ISA_ALU_ROUND_AWAY, /* round half away from zero (XLA round-nearest-afz) */
	ISA_ALU_ROUND_EVEN, ISA_ALU_EXP, ISA_ALU_EXPM1, ISA_ALU_LOG, ISA_ALU_LOG1P,
	ISA_ALU_SQRT, ISA_ALU_RSQRT, ISA_ALU_TANH, ISA_ALU_LOGISTIC, ISA_ALU_ERF,
	ISA_ALU_SIN, ISA_ALU_COS, ISA_ALU_NOT, ISA_ALU_IS_FINITE, ISA_ALU_RECIPROCAL,
	ISA_ALU_SQUARE, ISA_ALU_POPCNT, ISA_ALU_CLZ,
	/* binary: ap0 = f(ap1, ap2) */
	ISA_ALU_ADD = 64, ISA_ALU_SUB, ISA_ALU_MUL, ISA_ALU_DIV, ISA_ALU_REM,
	ISA_ALU_POW, ISA_ALU_MAX, ISA_ALU_MIN, ISA_ALU_AND, ISA_ALU_OR, ISA_ALU_XOR,
	ISA_ALU_SHL, ISA_ALU_SHR_LOGICAL, ISA_ALU_SHR_ARITH, ISA_ALU_ATAN2,
	ISA_ALU_CMP_EQ, ISA_ALU_CMP_NE, ISA_ALU_CMP_LT, ISA_ALU_CMP_LE,
	ISA_ALU_CMP_GT, ISA_ALU_CMP_GE, /* compares write pred */
	ISA_ALU_GELU_GRAD, /* ap1 = dy, ap2 = x: dy * d/dx gelu(x) (erf form) */
	/* ternary: ap0 = f(ap1, ap2, ap3) */
	ISA_ALU_SELECT = 128, /* ap1 pred ? ap2 : ap3 */
	ISA_ALU_CLAMP,        /* min(max(ap2, ap1), ap3): XLA clamp(lo, x, hi) */
	ISA_ALU_FMA,          /* ap1 * ap2 + ap3 */
	ISA_ALU_END
} isa_alu_t;

static inline int isa_alu_arity(uint32_t op)
{
	if (op <= ISA_ALU_CLZ)
		return 1;
	if (op >= ISA_ALU_ADD && op <= ISA_ALU_GELU_GRAD)
		return 2;
	if (op >= ISA_ALU_SELECT && op < ISA_ALU_END)
		return 3;
	return 0;
}

/* ---- ISA_OP_FUSED (ISA 1.1): one elementwise loop over a small program ----
 *
 * The descriptor is a byte block addressed by ap[1] (u8, rank 1, stride 1, in
 * ISA_REGION_CONST, shape[0] = its exact size). It holds, in order and packed:
 *   isa_fused_desc_t                      the header
 *   isa_ap_t extra[n_inputs - n_direct]   inputs that do not fit in ap[2..3]
 *   isa_fused_op_t code[n_code]           the program
 * n_direct = n_ap - 2 = min(n_inputs, 2). Input i is loaded into register i
 * with its dtype; the program runs over the whole output as if element by
 * element; register out_reg (whose dtype is ap0's) is stored to ap0. Every
 * input has ap0's shape (broadcast with stride 0). docs/isa.md has the rules.
 *
 * ISA 1.3 adds a reducing form: with reduce = ISA_FUSED_REDUCE(op), ap0's shape is
 * still the iteration space, but ap0 has stride 0 on the dims of reduce_axes, and
 * the program's results are reduced with op into ap0, starting from the
 * combiner's identity, or with ISA_F_ACCUMULATE from ap0's values (the reduce's
 * init). So a reduce whose
 * operand is an elementwise expression never materialises the operand. And the
 * IOTA step: a register of each element's index along one dim. */
#define ISA_FUSED_MAGIC 0x31445346u /* "FSD1" little-endian */
#define ISA_FUSED_DIRECT 2          /* inputs carried in ap[2], ap[3] */
#define ISA_FUSED_MAX_INPUTS 16
#define ISA_FUSED_MAX_REGS 32
#define ISA_FUSED_MAX_CODE 256

/* Program ops beyond the ALU sub-ops (which keep their isa_alu_t value). */
#define ISA_FUSED_CONVERT 256u /* dst = convert(src[0]) to dst dtype (COPY rules) */
#define ISA_FUSED_CONST 257u   /* dst = imm in every lane */
#define ISA_FUSED_IOTA 258u    /* ISA 1.3: dst = the element's index along dim src[0] of ap0's
				* shape, plus imm (int64), in dst dtype (not pred) */
#define ISA_FUSED_OP_END 259u

/* reduce field of the descriptor (ISA 1.3): 0 elementwise, else the combiner. */
#define ISA_FUSED_REDUCE(op) ((uint16_t)((op) + 1u))

typedef struct isa_fused_desc {
	uint32_t magic;     /* ISA_FUSED_MAGIC */
	uint16_t n_inputs;  /* 1..ISA_FUSED_MAX_INPUTS (0 allowed: constant output) */
	uint16_t n_code;    /* 1..ISA_FUSED_MAX_CODE */
	uint8_t n_regs;     /* registers used, n_inputs..ISA_FUSED_MAX_REGS */
	uint8_t out_reg;    /* < n_regs */
	uint16_t reduce;    /* 0, or ISA_FUSED_REDUCE(isa_reduce_t) (ISA 1.3; zero before) */
	uint32_t reduce_axes; /* reduced dims of ap0's shape (bit k = dim k); 0 unless
			       * reduce (ISA 1.3; zero before) */
} isa_fused_desc_t;

/* One program step: dst (with dtype) = op(src[0..arity)). Unused src entries
 * and pad are zero; imm is used by ISA_FUSED_CONST (the f64 bit pattern
 * for a float dtype, an int64 for the others, pred 0/1) and ISA_FUSED_IOTA
 * (an int64 start; src[0] is its dim, not a register) and zero otherwise. */
typedef struct isa_fused_op {
	uint16_t op;      /* isa_alu_t or ISA_FUSED_CONVERT / _CONST / _IOTA */
	uint8_t dst;
	uint8_t dtype;    /* dtype of dst after this step */
	uint8_t src[3];
	uint8_t pad;
	uint64_t imm;
} isa_fused_op_t;

/* ---- ISA_OP_CONV (ISA 1.4): grouped direct convolution over two spatial dims ----
 *
 * ap0 out f32[N, G, O, Y0, Y1], ap1 in f32[N, G, C, X0, X1], ap2 kernel
 * f32[G, O, C, K0, K1] (any strides: layouts, groups and a reversed kernel are
 * the access patterns' business), ap3 the window: region ISA_REGION_NONE, rank
 * ISA_CONV_NSPATIAL, dtype and offset 0, and per spatial dim s
 *   shape[ISA_CONV_STRIDE + s]  stride S >= 1
 *   shape[ISA_CONV_RHS_DIL + s] kernel (rhs) dilation D >= 1
 *   shape[ISA_CONV_LHS_DIL + s] input (lhs) dilation L >= 1
 *   stride[s]                   low padding P (negative crops)
 * every other field zero. Then, every sum in f32 in an order fixed by the
 * shapes,
 *   ap0[n,g,o,y0,y1] = sum_{c,k0,k1} X[n,g,c,j0,j1] * ap2[g,o,c,k0,k1],
 *   j_s = y_s * S_s + k_s * D_s - P_s,
 *   X[.., j0, j1] = ap1[.., j0 / L0, j1 / L1] when each j_s >= 0, j_s % L_s == 0 and
 *   j_s / L_s < X_s, else 0 (padding, and the holes of an lhs-dilated input).
 * The forward convolution (L = 1), its input gradient (the transposed form: L =
 * the forward stride, kernel reversed through negative strides) and its weight
 * gradient (the correlation of the input with the output gradient: batch as C,
 * channels as N or G) are all this one form. docs/isa.md, "CONV". */
#define ISA_CONV_NSPATIAL 2
#define ISA_CONV_STRIDE 0
#define ISA_CONV_RHS_DIL 2
#define ISA_CONV_LHS_DIL 4
/* Largest stride, dilation or |padding| of a window: keeps every index
 * computation far from 64-bit overflow. */
#define ISA_CONV_MAX_WINDOW (1ll << 32)
/* The firmware's host scratch per CONV work item, and form P's partial sums
 * in all, in floats (docs/isa.md, "CONV"). They bound no result: a shape
 * whose fastest form would need more runs a slower form (one for depthwise
 * windows: several times slower on dense ones). Compilers read them to
 * choose which convolutions to send to CONV (compiler/lower/
 * lower_conv_grouped.c). */
#define ISA_CONV_SCRATCH_FLOATS (1ll << 22)
#define ISA_CONV_PSUM_FLOATS (1ll << 24)

/* ---- ISA_OP_SELSCAT (ISA 1.5): select-and-scatter over two spatial dims ----
 *
 * ap0 out f32[N, C, X0, X1], ap1 operand f32[N, C, X0, X1], ap2 source
 * f32[N, C, Y0, Y1] (one value per window; any strides), ap3 the window:
 * region ISA_REGION_NONE, rank ISA_CONV_NSPATIAL, dtype and offset 0, and per
 * spatial dim s
 *   shape[ISA_SELSCAT_SIZE + s]    window size K >= 1
 *   shape[ISA_SELSCAT_STRIDE + s]  stride S >= 1
 *   shape[ISA_SELSCAT_DIL + s]     window dilation D >= 1
 *   stride[s]                      low padding P >= 0
 * every other field zero. Window (n, c, y0, y1) covers the positions
 * j_s = y_s * S_s + k_s * D_s - P_s, k_s < K_s, of those the ones inside
 * [0, X_s) in row-major (k0, k1) order. Windows run in row-major order of
 * ap2; in each, the first position is selected, then each next one p
 * replaces it unless cmp(ap1[selected], ap1[p]) holds, cmp = param (an ALU
 * compare: ISA_ALU_CMP_GE, GT, LE or LT, in C's float semantics, a NaN
 * comparing false); then ap0[n, c, selected] = op(ap0[n, c, selected],
 * ap2[n, c, y0, y1]) with op = sub (ISA_RED_SUM, PROD, MAX or MIN). A window
 * with no position inside changes nothing. XLA's select-and-scatter with a
 * window over at most two dims, ap0 holding the init value before.
 * docs/isa.md, "SELSCAT". */
#define ISA_SELSCAT_SIZE 0
#define ISA_SELSCAT_STRIDE 2
#define ISA_SELSCAT_DIL 4

static_assert(sizeof(isa_fused_desc_t) == 16, "isa_fused_desc_t is part of the NEFF format");
static_assert(sizeof(isa_fused_op_t) == 16, "isa_fused_op_t is part of the NEFF format");

/* Activation functions (ISA_OP_ACTIVATE). */
typedef enum isa_act {
	ISA_ACT_IDENTITY = 0, ISA_ACT_RELU, ISA_ACT_GELU, ISA_ACT_GELU_TANH,
	ISA_ACT_TANH, ISA_ACT_LOGISTIC, ISA_ACT_EXP, ISA_ACT_LOG, ISA_ACT_SQRT,
	ISA_ACT_RSQRT, ISA_ACT_SILU, ISA_ACT_SOFTPLUS, ISA_ACT_RECIPROCAL,
	ISA_ACT_SQUARE, ISA_ACT_END
} isa_act_t;

/* Reduction / scatter combiners. */
typedef enum isa_reduce {
	ISA_RED_SUM = 0, ISA_RED_MAX, ISA_RED_MIN, ISA_RED_PROD, ISA_RED_AND,
	ISA_RED_OR, ISA_RED_ASSIGN /* scatter only */, ISA_RED_END
} isa_reduce_t;

/* Instruction flags. */
#define ISA_F_ACCUMULATE (1u << 0) /* MATMUL, REDUCE, reducing FUSED (ISA 1.3): combine
				    * with existing ap0 */
#define ISA_F_INVERT (1u << 1)     /* JUMP: jump when the condition is zero */
#define ISA_F_ALL ((uint32_t)(ISA_F_ACCUMULATE | ISA_F_INVERT))

/* Fixed memory regions; region ISA_REGION_IO0 + i is I/O tensor i of the NEFF's
 * tensor table. The runtime binds every region to device memory per execution. */
#define ISA_REGION_CONST 0u   /* the NEFF's constants section */
#define ISA_REGION_SCRATCH 1u /* the model's scratch memory (size in metadata) */
#define ISA_REGION_IO0 2u
#define ISA_REGION_NONE 0xffffffffu

#define ISA_MAX_RANK 6
#define ISA_MAX_AP 4
#define ISA_NUM_SEMS 32
#define ISA_SEM_NONE 0xffu

/* A tensor access pattern: element [i0..ir-1] lives at byte
 * offset + sum(i_k * stride[k]) * dtype_size inside region. Strides are in
 * elements and may be 0 (broadcast) or negative (reverse). */
typedef struct isa_ap {
	uint32_t region;
	uint8_t dtype;
	uint8_t rank; /* 0..ISA_MAX_RANK; rank 0 is a scalar */
	uint16_t pad;
	uint64_t offset;
	uint64_t shape[ISA_MAX_RANK];
	int64_t stride[ISA_MAX_RANK];
} isa_ap_t;

/* One instruction, 512 bytes, little-endian, stored as-is in NEFF code sections.
 * Before it runs, the engine waits until sem[wait_sem] >= wait_value; after it
 * completes, sem[signal_sem] is incremented. Semaphores start at 0 per job. */
typedef struct isa_insn {
	uint16_t opcode;    /* isa_opcode_t */
	uint16_t sub;       /* isa_alu_t / isa_act_t / isa_reduce_t */
	uint16_t flags;     /* ISA_F_* */
	uint8_t n_ap;       /* number of used access patterns */
	uint8_t wait_sem;   /* ISA_SEM_NONE or 0..ISA_NUM_SEMS-1 */
	uint32_t wait_value;
	uint8_t signal_sem; /* ISA_SEM_NONE or 0..ISA_NUM_SEMS-1 */
	uint8_t pad0[3];
	uint32_t param;     /* axes mask (REDUCE), dimension (IOTA), target (JUMP),
			     * step debug ids (FUSED) */
	uint32_t debug_id;  /* index into the NEFF debug map, or ISA_DEBUG_NONE */
	uint64_t reserved;  /* must be zero */
	double imm[2];      /* ACTIVATE scale, bias; IOTA base */
	isa_ap_t ap[ISA_MAX_AP];
} isa_insn_t;

#define ISA_DEBUG_NONE 0xffffffffu

/* FUSED param (ISA 1.2): 0, or 1 + the debug id of the first of n_code consecutive
 * debug map entries, entry first + s naming the HLO instruction that step s of the
 * program computes. A NaN/Inf the simulator finds in a FUSED output is then
 * reported against the step that first produced it (docs/isa.md, FUSED). */
#define ISA_FUSED_STEPS_DEBUG(first) ((first) + 1u)

/* Largest element count of one access pattern. Bounds the work of a single
 * instruction (deadlines are checked between instructions) and keeps element
 * counts far from 64-bit overflow. */
#define ISA_MAX_ELEMENTS (1ull << 40)

/* Most multiply-adds one MATMUL instruction may do (B * M * N * K): every
 * operand is at most ISA_MAX_ELEMENTS, but stride-0 operands cost no device
 * memory, so without this bound a 1.5 KB NEFF asks for 2^60 of them.
 * 2^44 (1.8e13) is hours of host time, far beyond any model this simulator
 * runs in practice; the deadline stops a job long before. isa_insn_validate
 * enforces it, so the NEFF reader (nrt_load on either backend) and the
 * simulator refuse the same programs. docs/isa.md, "Bounded work". */
#define ISA_MAX_MATMUL_WORK (1ull << 44)

/* The ISA minor version a NEFF needs is the largest its instructions need:
 * 5 for SELSCAT, 4 for CONV, else 3. The NEFF builder stamps that, so a
 * program without the newer opcodes stays readable by an older reader (and
 * byte for byte what an older compiler wrote), and one with them is refused
 * by name there. */
static inline uint32_t isa_insn_min_minor(uint32_t opcode)
{
	return opcode == ISA_OP_SELSCAT ? 5u : opcode == ISA_OP_CONV ? 4u : 3u;
}

static_assert(sizeof(isa_ap_t) == 112, "isa_ap_t is part of the NEFF format");
static_assert(sizeof(isa_insn_t) == 496, "isa_insn_t is part of the NEFF format");
static_assert(offsetof(isa_insn_t, ap) == 48, "isa_insn_t layout");

/* Implemented in common/isa.c (libnscommon), shared by the compiler, the NEFF
 * reader and the simulator so there is one definition of a valid instruction. */

/* Checks one instruction in isolation: opcode and sub-op known, operand count,
 * dtypes and ranks valid for the opcode, shapes consistent, regions <
 * n_regions (or ISA_REGION_NONE where allowed), semaphores in range, jump
 * target < stream_len, reserved and pad fields zero, flags known, a MATMUL's
 * work at most ISA_MAX_MATMUL_WORK. Returns NS_OK, or an
 * NS_STATUS_INVALID_ARGUMENT status with a one-line message ("OPCODE: what")
 * that the caller owns. Does not check that accesses fit their regions:
 * region sizes are only known per execution. */
ns_status_t isa_insn_validate(const isa_insn_t *insn, uint32_t n_regions, uint32_t stream_len);

/* Checks a FUSED descriptor of len bytes (as read from memory) against the
 * instruction insn that references it (already valid per isa_insn_validate):
 * header, sizes, every extra operand as a structural ap check (region <
 * n_regions, dtype, rank, shape equal to ap0's), and the program by simulating
 * register dtypes (no read of an undefined register, op dtypes as for ALU,
 * out_reg ends with ap0's dtype). Returns NS_OK, or an
 * NS_STATUS_INVALID_ARGUMENT status with a one-line message. desc need not be
 * aligned. */
ns_status_t isa_fused_desc_validate(const isa_insn_t *insn, const uint8_t *desc, size_t len,
				    uint32_t n_regions);

/* The window of a CONV (ap3) for two spatial dims: stride, rhs dilation,
 * lhs dilation and low padding of each. */
isa_ap_t isa_conv_window(const int64_t stride[2], const int64_t rhs_dil[2],
			 const int64_t lhs_dil[2], const int64_t pad_lo[2]);

/* The window of a SELSCAT (ap3) for two spatial dims: size, stride, window
 * dilation and low padding of each. */
isa_ap_t isa_selscat_window(const int64_t size[2], const int64_t stride[2], const int64_t dil[2],
			    const int64_t pad_lo[2]);

/* Floating-point operations of one instruction (docs/isa.md, "FLOPs"), the one
 * rule behind the simulator's job flops and neuron-profile's per-instruction
 * flops. Counts only float data: an instruction whose ap1 is an integer or
 * pred type counts 0; data movement and control flow count 0. FUSED counts
 * fused_per_elem (isa_fused_flops_per_elem) per element of ap0, because its
 * program lives in memory, not in the instruction. Element counts of an
 * operand with no region or an overflowing shape count 0. */
uint64_t isa_insn_flops(const isa_insn_t *insn, uint64_t fused_per_elem);

/* Per output element of a FUSED program: one per ALU step whose first source
 * register holds a float (FMA two), none for CONVERT, CONST or SELECT (pred
 * first). in_dtype[i] is input i's dtype (the register dtypes follow the code
 * from there); registers are taken modulo ISA_FUSED_MAX_REGS, so an unchecked
 * program gives a count, never an out-of-bounds read. */
uint64_t isa_fused_flops_per_elem(const isa_fused_op_t *code, uint32_t n_code,
				  const uint8_t *in_dtype, uint32_t n_inputs);

/* Byte size of a descriptor with these counts. */
static inline size_t isa_fused_desc_size(uint32_t n_inputs, uint32_t n_code)
{
	uint32_t extra = n_inputs > ISA_FUSED_DIRECT ? n_inputs - ISA_FUSED_DIRECT : 0;
	return sizeof(isa_fused_desc_t) + extra * sizeof(isa_ap_t) +
	       n_code * sizeof(isa_fused_op_t);
}

/* Lower-case opcode names ("matmul", "alu", ...), "invalid" when unknown. */
const char *isa_opcode_name(uint32_t op);

/* Lower-case engine names ("tensor", "vector", "scalar", "gpsimd", "dma"),
 * "invalid" when unknown. */
const char *isa_engine_name(uint32_t e);

/* s8..s64 and u8..u64 (not pred, not floats). */
int isa_dtype_is_int(uint32_t dt);

/* Unsigned integers and pred: loaded with zero extension. */
int isa_dtype_is_unsigned(uint32_t dt);

/* Product of the shape (1 for rank 0, 0 if any dim is 0), UINT64_MAX on overflow. */
uint64_t isa_ap_num_elements(const isa_ap_t *ap);

/* A row-major contiguous access pattern. */
isa_ap_t isa_ap_contig(uint32_t region, uint64_t offset, isa_dtype_t dtype,
		       uint32_t rank, const uint64_t *shape);

/* A zeroed instruction with no semaphores, no operands and no debug id. */
isa_insn_t isa_insn_init(isa_opcode_t opcode, uint32_t sub);

#ifdef __cplusplus
}
#endif
#endif /* NEURONSIM_ISA_H */
