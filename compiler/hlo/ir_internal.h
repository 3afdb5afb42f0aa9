/* ncc IR internals shared by ir*.c, the HLO text parser and the proto decoder: not API. */
#ifndef NCC_IR_INTERNAL_H
#define NCC_IR_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir.h"

/* ncc_comp_create() without the check that the name is new: the parsers check names
 * with their own maps (a linear check per computation would be quadratic). */
ncc_status_t ncc__comp_create_unchecked(ncc_module_t *m, const char *name, bool is_entry,
					ncc_comp_t **out_comp);

/* Encodes v in the <= 16-bit float format t (f16, bf16, f8, f4), rounding to nearest
 * even (ir_literal.c). */
uint32_t ncc__minifloat_encode(ncc_etype_t t, double v);

/* Appends the elements of literal e to acc (a tuple literal's leaves are stored back
 * to back): data copied into m's arena, count added. NCC_ERR_NOMEM leaves acc as it
 * was. */
ncc_status_t ncc__literal_append(ncc_module_t *m, ncc_literal_t *acc, const ncc_literal_t *e);

/* A growing string (the printer's output, the proto decoder's attribute texts); on out
 * of memory it stops growing and sets oom. Zero-initialised; the caller frees s. */
typedef struct ncc_strbuf {
	char *s;
	size_t len, cap;
	bool oom;
} ncc_strbuf_t;

/* Appends the formatted text to b (ir_print.c). The first allocation is first_cap
 * bytes or the next power-of-two multiple that fits, each growth doubles. */
void ncc__strbuf_vprintf(ncc_strbuf_t *b, size_t first_cap, const char *fmt, va_list ap);

/* The unsigned integer of n = 1, 2, 4 or 8 bytes at p (host byte order). */
static inline uint64_t ncc__load_uint(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	switch (n) {
	case 1: v = p[0]; break;
	case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
	case 8: memcpy(&v, p, 8); break;
	}
	return v;
}

#endif /* NCC_IR_INTERNAL_H */
