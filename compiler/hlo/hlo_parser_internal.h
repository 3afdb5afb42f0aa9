/* ncc HLO text parser internals: the parser state and the token, error, number and string helpers shared by hlo_parser*.c. */
#ifndef NCC_HLO_PARSER_INTERNAL_H
#define NCC_HLO_PARSER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hlo_lexer.h"
#include "hlo_parser.h"
#include "ir_internal.h"
#include "map.h"

/* ------------------------------------------------------------------ parser */

typedef struct pending_ref {
	ncc_comp_t **slot;
	const char *name;
	int line, col;
} pending_ref_t;

typedef struct parser {
	ncc_lexer_t lx;
	ncc_token_t tok;     /* lookahead */
	size_t prev_end;     /* byte offset just past the last consumed token */
	ncc_module_t *m;
	ncc_error_t *err;
	const char *filename;
	bool failed;
	ncc_status_t status; /* of the first failure */
	int depth;
	ncc_name_map_t insts;     /* current computation's instructions */
	ncc_name_map_t all_names; /* every instruction name in the module: XLA keeps them unique */
	ncc_name_map_t comps;
	pending_ref_t *pend;
	size_t npend, cap_pend;
	ncc_inst_t **opbuf;  /* operand scratch */
	size_t cap_opbuf;
} parser_t;

/* ------------------------------------------------- errors (hlo_parser_token.c) */

/* Records the first error, "FILE:LINE:COL: error: MESSAGE". Always returns false. */
bool tp_fail_at(parser_t *p, ncc_status_t st, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* "expected X, got 'TOKEN'" at the current token */
bool tp_expected(parser_t *p, const char *what);
bool tp_nomem(parser_t *p);
/* Grows *arr to cap elements of elem bytes: a LIMIT error past limit elements (hostile
 * input), a NOMEM error if the allocation fails. */
bool tp_grow(parser_t *p, void *arr, size_t elem, size_t cap, size_t limit, const char *what);

/* ---------------------------------------------------------------- tokens */

static inline void tp_next(parser_t *p)
{
	p->prev_end = p->tok.pos + p->tok.len;
	if (p->tok.kind == NCC_TOK_NAME)
		p->prev_end++; /* the '%' */
	if (p->tok.kind == NCC_TOK_STRING)
		p->prev_end += 2;
	p->tok = ncc_lex_next(&p->lx);
}

static inline bool tp_accept(parser_t *p, ncc_tok_kind_t k)
{
	if (p->tok.kind != k)
		return false;
	tp_next(p);
	return true;
}

static inline bool tp_tok_is(const ncc_token_t *t, const char *s)
{
	return t->kind == NCC_TOK_IDENT && strlen(s) == t->len && memcmp(t->text, s, t->len) == 0;
}

/* Two-token lookahead without consuming: the kind of the token after the current. */
static inline ncc_tok_kind_t tp_peek_kind(parser_t *p)
{
	ncc_lexer_t save = p->lx;
	ncc_token_t t = ncc_lex_next(&p->lx);
	p->lx = save;
	return t.kind;
}

static inline bool tp_enter(parser_t *p)
{
	if (++p->depth > NCC_PARSE_MAX_DEPTH)
		return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
			          "nesting deeper than %d levels", NCC_PARSE_MAX_DEPTH);
	return true;
}

static inline void tp_leave(parser_t *p) { p->depth--; }

bool tp_expect(parser_t *p, ncc_tok_kind_t k, const char *what);
/* The token's text as an arena string (NULL after an out-of-memory error). */
char *tp_tok_dup(parser_t *p, const ncc_token_t *t);
/* Values with their own micro-syntax are re-read as one raw word. */
bool tp_raw_word(parser_t *p, ncc_token_t *out, const char *what);

/* --------------------------------------------------- numbers and strings */

bool tp_parse_i64_text(const char *s, size_t len, int64_t *out);
bool tp_parse_int(parser_t *p, int64_t *out, const char *what);
bool tp_parse_nonneg(parser_t *p, int64_t *out, const char *what);
bool tp_parse_double_tok(const ncc_token_t *t, double *out);
bool tp_parse_double(parser_t *p, double *out, const char *what);
bool tp_parse_bool(parser_t *p, bool *out);
/* Decodes a string token's escapes into the arena. */
bool tp_parse_string(parser_t *p, const char **out, const char *what);

/* ------------------------------------ shapes and literals (hlo_parser_shape.c) */

bool tp_parse_shape(parser_t *p, ncc_shape_t *out);
/* The literal of a constant of shape s (tuples "(lit, lit)": leaves back to back). */
bool tp_parse_literal(parser_t *p, const ncc_shape_t *s, ncc_literal_t *lit);

/* -------------------------------------------- attributes (hlo_parser_attr.c) */

/* One "name=value" attribute of inst; the current token is the name. */
bool tp_parse_attr(parser_t *p, ncc_inst_t *inst);
bool tp_parse_ilist(parser_t *p, ncc_ilist_t *out);
/* Any value kept verbatim: a balanced {...}/(...)/[...] group, a string (with its
 * quotes), or a raw word. */
bool tp_capture_raw(parser_t *p, const char **out);
/* Makes room for element n of an arena array that grows by doubling. */
bool tp_arena_append_room(parser_t *p, void *arr, int32_t n, size_t elem);
/* Appends key=VALUE (the value kept verbatim) to *arr. */
bool tp_add_raw_attr(parser_t *p, ncc_raw_attr_t **arr, int32_t *n, const ncc_token_t *key);

/* -------------------- windows, dim_labels, padding, slices (hlo_parser_dnums.c) */

bool tp_parse_window(parser_t *p, ncc_inst_t *inst);
bool tp_parse_dim_labels(parser_t *p, ncc_inst_t *inst);
bool tp_parse_padding(parser_t *p, ncc_inst_t *inst);
bool tp_parse_slice(parser_t *p, ncc_inst_t *inst);

/* ---------------- replica groups, source-target pairs (hlo_parser_collective.c) */

/* replica_groups={{0,1},{2,3}} | {} | [G,S]<=[dims]T(perm) */
bool tp_parse_replica_groups(parser_t *p, ncc_replica_groups_t *rg);
bool tp_parse_pairs(parser_t *p, ncc_inst_t *inst);

#endif /* NCC_HLO_PARSER_INTERNAL_H */
