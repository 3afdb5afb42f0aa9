/* ncc HLO lexer: splits HLO text into tokens with line/column, plus raw scans for attribute values. */
#ifndef NCC_HLO_LEXER_H
#define NCC_HLO_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ncc_tok_kind {
	NCC_TOK_EOF = 0,
	NCC_TOK_ERROR,   /* a character or construct no token starts with; text is it */
	NCC_TOK_IDENT,   /* [A-Za-z_][A-Za-z0-9_.-]* (a '-' followed by '>' ends it) */
	NCC_TOK_NAME,    /* %name; text excludes the '%' */
	NCC_TOK_INT,     /* decimal integer, optional leading '-' */
	NCC_TOK_FLOAT,   /* decimal or hex float, optional leading '-' */
	NCC_TOK_STRING,  /* "..."; text is the raw body, escapes not yet decoded */
	NCC_TOK_LBRACE, NCC_TOK_RBRACE, NCC_TOK_LPAREN, NCC_TOK_RPAREN,
	NCC_TOK_LSQUARE, NCC_TOK_RSQUARE, NCC_TOK_COMMA, NCC_TOK_EQUAL, NCC_TOK_COLON,
	NCC_TOK_ARROW,   /* -> */
	NCC_TOK_LEQ,     /* <= (dynamic dims, iota replica groups) */
	NCC_TOK_QUESTION,/* ? (unbounded dynamic dim) */
	NCC_TOK_ELLIPSIS,/* ... (elided constant) */
	NCC_TOK_STAR,    /* * */
} ncc_tok_kind_t;

typedef struct ncc_token {
	ncc_tok_kind_t kind;
	const char *text; /* points into the source */
	size_t len;
	int line, col;    /* 1-based position of the first character */
	size_t pos;       /* byte offset of the first character */
} ncc_token_t;

typedef struct ncc_lexer {
	const char *src;
	size_t len;
	size_t pos;
	int line;
	size_t line_start; /* byte offset of the current line's first character */
} ncc_lexer_t;

void ncc_lex_init(ncc_lexer_t *lx, const char *src, size_t len);
/* Skips whitespace and comments (slash-star ... star-slash, and // to end of line)
 * and returns the next token. An unterminated comment or string is an ERROR token. */
ncc_token_t ncc_lex_next(ncc_lexer_t *lx);
/* Scans a raw word made of [A-Za-z0-9_.+-] and "->" after skipping blanks, for
 * attribute values with their own syntax (dim_labels bf01_oi01->bf01, padding
 * 0_0x1_1, window sizes 3x3). Returns an ERROR token if the word is empty. */
ncc_token_t ncc_lex_raw_word(ncc_lexer_t *lx);
/* Current position (after skipping blanks and comments), for raw captures. */
void ncc_lex_skip_space(ncc_lexer_t *lx);
/* Printable name of a token kind, for "expected X" messages. */
const char *ncc_tok_kind_name(ncc_tok_kind_t k);


/* Repositions the lexer at the start of token t (so a raw scan can re-read it). */
void ncc_lex_reset_to(ncc_lexer_t *lx, const ncc_token_t *t);
/* At an opening '{', '(' or '[': advances past the matching closer, honouring
 * nesting of all three and skipping string literals. Returns false (lexer at EOF)
 * if unbalanced or nested deeper than max_depth. */
bool ncc_lex_skip_balanced(ncc_lexer_t *lx, int max_depth);

#endif /* NCC_HLO_LEXER_H */
