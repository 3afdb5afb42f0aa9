/* ncc public types: HLO element types and shapes, shared by the IR, the interpreter's values and the tools. */
#ifndef NCC_NCC_SHAPE_H
#define NCC_NCC_SHAPE_H

/*
 * One definition, used inside the compiler (compiler/hlo/ir.h includes this header) and
 * by its users: an interpreter value (include/ncc/ncc_interp.h) carries an
 * ncc_shape_t, and a module's entry parameters are described by one
 * (ncc_module_entry_param_shape(), include/ncc/ncc.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ element types */

/* X(ENUM, "hlo name", size_in_bits). Sub-byte types occupy one byte per element in
 * ncc literal buffers (unpacked); size_in_bits is their logical width. TUPLE is the
 * kind of a tuple shape, not a primitive. */
#define NCC_ETYPES(X)                                   \
	X(INVALID, "invalid", 0)                        \
	X(PRED, "pred", 8)                              \
	X(S2, "s2", 2)                                  \
	X(S4, "s4", 4)                                  \
	X(S8, "s8", 8)                                  \
	X(S16, "s16", 16)                               \
	X(S32, "s32", 32)                               \
	X(S64, "s64", 64)                               \
	X(U2, "u2", 2)                                  \
	X(U4, "u4", 4)                                  \
	X(U8, "u8", 8)                                  \
	X(U16, "u16", 16)                               \
	X(U32, "u32", 32)                               \
	X(U64, "u64", 64)                               \
	X(F16, "f16", 16)                               \
	X(BF16, "bf16", 16)                             \
	X(F32, "f32", 32)                               \
	X(F64, "f64", 64)                               \
	X(C64, "c64", 64)                               \
	X(C128, "c128", 128)                            \
	X(F4E2M1FN, "f4e2m1fn", 4)                      \
	X(F8E3M4, "f8e3m4", 8)                          \
	X(F8E4M3, "f8e4m3", 8)                          \
	X(F8E4M3FN, "f8e4m3fn", 8)                      \
	X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8)            \
	X(F8E4M3FNUZ, "f8e4m3fnuz", 8)                  \
	X(F8E5M2, "f8e5m2", 8)                          \
	X(F8E5M2FNUZ, "f8e5m2fnuz", 8)                  \
	X(F8E8M0FNU, "f8e8m0fnu", 8)                    \
	X(TOKEN, "token", 0)                            \
	X(OPAQUE, "opaque", 0)                          \
	X(TUPLE, "tuple", 0)

typedef enum ncc_etype {
#define NCC_X_(e, s, b) NCC_##e,
	NCC_ETYPES(NCC_X_)
#undef NCC_X_
	NCC_ETYPE_COUNT
} ncc_etype_t;

const char *ncc_etype_name(ncc_etype_t t);          /* "f32"; "invalid" if out of range */
ncc_etype_t ncc_etype_from_name(const char *s, size_t len); /* NCC_INVALID if unknown */
int ncc_etype_bits(ncc_etype_t t);                  /* logical width; 0 for token/opaque/tuple */
size_t ncc_etype_storage_bytes(ncc_etype_t t);      /* bytes per element in a literal buffer */
bool ncc_etype_is_float(ncc_etype_t t);             /* f16 bf16 f32 f64 and all f8/f4 */
bool ncc_etype_is_complex(ncc_etype_t t);           /* c64 c128 */
bool ncc_etype_is_signed_int(ncc_etype_t t);        /* s2..s64 */
bool ncc_etype_is_unsigned_int(ncc_etype_t t);      /* u2..u64 */
bool ncc_etype_is_integral(ncc_etype_t t);          /* signed or unsigned int (not pred) */
bool ncc_etype_is_array(ncc_etype_t t);             /* a primitive with data (not token/opaque/tuple) */

/* ------------------------------------------------------------------ shapes */

/* Largest rank accepted. Real models stay far below; the parser rejects more. */
#define NCC_MAX_RANK 16
/* Dimension size used for an unbounded dynamic dimension "?". */
#define NCC_DIM_UNBOUNDED (-1)

/* An array shape (etype != NCC_TUPLE) or a tuple shape (etype == NCC_TUPLE).
 * For arrays: dims[0..rank) in logical (row-major, as written) order. A dynamic
 * dimension "<=N" has dims[i] = N and dynamic[i] = true; "?" has NCC_DIM_UNBOUNDED.
 * Layout: has_layout when "{...}" was written; minor_to_major[0..rank) then holds it.
 * Any tiling / memory-space suffix after ':' (e.g. "T(8,128)S(1)") is kept verbatim
 * in layout_extra and printed back, never interpreted.
 * For tuples: elems[0..nelems) are the element shapes.
 * layout_extra and elems point into whatever owns the shape (a module's arena, a
 * value): a shape the compiler hands out is read-only and lives as long as its owner. */
typedef struct ncc_shape {
	ncc_etype_t etype;
	int32_t rank;
	int64_t dims[NCC_MAX_RANK];
	bool dynamic[NCC_MAX_RANK];
	bool has_layout;
	int32_t minor_to_major[NCC_MAX_RANK];
	const char *layout_extra;
	int32_t nelems;
	struct ncc_shape *elems;
} ncc_shape_t;

/* Array shape with row-major default layout ({rank-1,...,0}); rank <= NCC_MAX_RANK. */
ncc_shape_t ncc_shape_array(ncc_etype_t t, int32_t rank, const int64_t *dims);
ncc_shape_t ncc_shape_scalar(ncc_etype_t t);
bool ncc_shape_is_tuple(const ncc_shape_t *s);
bool ncc_shape_is_array(const ncc_shape_t *s);
/* Product of dims (1 for rank 0); 0 for tuples/tokens; -1 if it overflows int64 or a
 * dim is unbounded. */
int64_t ncc_shape_elements(const ncc_shape_t *s);
/* Dense byte size of an array shape with ncc_etype_storage_bytes() per element. */
int64_t ncc_shape_bytes(const ncc_shape_t *s);
/* Same element type and dims (recursively for tuples). Layouts compared only if
 * compare_layout and both sides have one. Dynamic flags are compared. */
bool ncc_shape_equal(const ncc_shape_t *a, const ncc_shape_t *b, bool compare_layout);
/* Writes the HLO spelling ("f32[2,3]{1,0}", "(f32[], s32[4]{0})") into buf, always
 * NUL-terminated; returns the length it needed (like snprintf). */
int ncc_shape_to_string(const ncc_shape_t *s, bool with_layout, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NCC_NCC_SHAPE_H */
