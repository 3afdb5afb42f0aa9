/* ncc HLO lexer: tokenizes HLO text, tracking line and column for error messages. */
#include "hlo_lexer.h"

#include <string.h>

void ncc_lex_init(ncc_lexer_t *lx, const char *src, size_t len)
{
	lx->src = src;
	lx->len = len;
	lx->pos = 0;
	lx->line = 1;
	lx->line_start = 0;
}

static int peek(const ncc_lexer_t *lx, size_t k)
{
	return lx->pos + k < lx->len ? (unsigned char)lx->src[lx->pos + k] : -1;
}

static void advance(ncc_lexer_t *lx)
{
	if (lx->pos < lx->len) {
		if (lx->src[lx->pos] == '\n') {
			lx->line++;
			lx->line_start = lx->pos + 1;
		}
		lx->pos++;
	}
}

static bool is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

static bool is_ident_char(int c) { return is_ident_start(c) || is_digit(c) || c == '.' || c == '-'; }

static ncc_token_t make(const ncc_lexer_t *lx, ncc_tok_kind_t k, size_t start, int line, size_t lstart)
{
	ncc_token_t t;
	t.kind = k;
	t.text = lx->src + start;
	t.len = lx->pos - start;
	t.line = line;
	t.col = (int)(start - lstart) + 1;
	t.pos = start;
	return t;
}

/* Returns false on an unterminated block comment (the lexer then sits at EOF);
 * *open then holds the comment's offset, line and line start for the message. */
static bool skip_space_at(ncc_lexer_t *lx, size_t *open, int *open_line, size_t *open_ls)
{
	for (;;) {
		int c = peek(lx, 0);
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
			advance(lx);
		} else if (c == '/' && peek(lx, 1) == '*') {
			*open = lx->pos;
			*open_line = lx->line;
			*open_ls = lx->line_start;
			advance(lx);
			advance(lx);
			while (!(peek(lx, 0) == '*' && peek(lx, 1) == '/')) {
				if (peek(lx, 0) < 0)
					return false;
				advance(lx);
			}
			advance(lx);
			advance(lx);
		} else if (c == '/' && peek(lx, 1) == '/') {
			while (peek(lx, 0) >= 0 && peek(lx, 0) != '\n')
				advance(lx);
		} else {
			return true;
		}
	}
}

static bool skip_space(ncc_lexer_t *lx)
{
	size_t o, ls;
	int l;
	return skip_space_at(lx, &o, &l, &ls);
}

void ncc_lex_skip_space(ncc_lexer_t *lx) { (void)skip_space(lx); }

/* An exponent after its letter (e, or p in a hex float): the letter, [+-], digits. */
static void skip_exponent(ncc_lexer_t *lx)
{
	advance(lx);
	if (peek(lx, 0) == '+' || peek(lx, 0) == '-')
		advance(lx);
	while (is_digit(peek(lx, 0)))
		advance(lx);
}

/* Number: -?digits[.digits][e[+-]digits], or hex float -?0x<hex>[.<hex>]p[+-]dd,
 * or a plain hex integer 0x... (not used by XLA but harmless). */
static ncc_tok_kind_t scan_number(ncc_lexer_t *lx)
{
	bool is_float = false;
	if (peek(lx, 0) == '-')
		advance(lx);
	if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X')) {
		advance(lx);
		advance(lx);
		while (is_digit(peek(lx, 0)) || (peek(lx, 0) >= 'a' && peek(lx, 0) <= 'f') ||
		       (peek(lx, 0) >= 'A' && peek(lx, 0) <= 'F') || peek(lx, 0) == '.') {
			if (peek(lx, 0) == '.')
				is_float = true;
			advance(lx);
		}
		if (peek(lx, 0) == 'p' || peek(lx, 0) == 'P') {
			is_float = true;
			skip_exponent(lx);
		}
		return is_float ? NCC_TOK_FLOAT : NCC_TOK_INT;
	}
	while (is_digit(peek(lx, 0)))
		advance(lx);
	if (peek(lx, 0) == '.' && is_digit(peek(lx, 1))) {
		is_float = true;
		advance(lx);
		while (is_digit(peek(lx, 0)))
			advance(lx);
	} else if (peek(lx, 0) == '.' && !is_ident_char(peek(lx, 1)) && peek(lx, 1) != '.') {
		/* "1." */
		is_float = true;
		advance(lx);
	}
	if ((peek(lx, 0) == 'e' || peek(lx, 0) == 'E') &&
	    (is_digit(peek(lx, 1)) ||
	     ((peek(lx, 1) == '+' || peek(lx, 1) == '-') && is_digit(peek(lx, 2))))) {
		is_float = true;
		skip_exponent(lx);
	}
	return is_float ? NCC_TOK_FLOAT : NCC_TOK_INT;
}

ncc_token_t ncc_lex_next(ncc_lexer_t *lx)
{
	size_t cstart = 0, clstart = 0;
	int cline = 0;
	if (!skip_space_at(lx, &cstart, &cline, &clstart)) {
		/* point the error at the comment's opening */
		ncc_token_t t = make(lx, NCC_TOK_ERROR, cstart, cline, clstart);
		t.len = 2;
		return t;
	}
	size_t start = lx->pos;
	int line = lx->line;
	size_t lstart = lx->line_start;
	int c = peek(lx, 0);
	if (c < 0)
		return make(lx, NCC_TOK_EOF, start, line, lstart);
	if (c == 0) { /* embedded NUL: never a token */
		advance(lx);
		return make(lx, NCC_TOK_ERROR, start, line, lstart);
	}
	if (is_ident_start(c)) {
		while (is_ident_char(peek(lx, 0)) && !(peek(lx, 0) == '-' && peek(lx, 1) == '>'))
			advance(lx);
		return make(lx, NCC_TOK_IDENT, start, line, lstart);
	}
	if (c == '%') {
		advance(lx);
		size_t s2 = lx->pos;
		while (is_ident_char(peek(lx, 0)) && !(peek(lx, 0) == '-' && peek(lx, 1) == '>'))
			advance(lx);
		if (lx->pos == s2)
			return make(lx, NCC_TOK_ERROR, start, line, lstart);
		ncc_token_t t = make(lx, NCC_TOK_NAME, start, line, lstart);
		t.text++;
		t.len--;
		return t;
	}
	if (is_digit(c) || (c == '-' && (is_digit(peek(lx, 1)) || peek(lx, 1) == '.'))) {
		ncc_tok_kind_t k = scan_number(lx);
		return make(lx, k, start, line, lstart);
	}
	if (c == '-' && peek(lx, 1) == '>') {
		advance(lx);
		advance(lx);
		return make(lx, NCC_TOK_ARROW, start, line, lstart);
	}
	if (c == '-' && is_ident_start(peek(lx, 1))) {
		/* -inf / -nan: lexed as one identifier so literals can see the sign */
		advance(lx);
		while (is_ident_char(peek(lx, 0)) && !(peek(lx, 0) == '-' && peek(lx, 1) == '>'))
			advance(lx);
		return make(lx, NCC_TOK_IDENT, start, line, lstart);
	}
	if (c == '<' && peek(lx, 1) == '=') {
		advance(lx);
		advance(lx);
		return make(lx, NCC_TOK_LEQ, start, line, lstart);
	}
	if (c == '.' && peek(lx, 1) == '.' && peek(lx, 2) == '.') {
		advance(lx);
		advance(lx);
		advance(lx);
		return make(lx, NCC_TOK_ELLIPSIS, start, line, lstart);
	}
	if (c == '"') {
		advance(lx);
		for (;;) {
			int d = peek(lx, 0);
			if (d <= 0 || d == '\n') { /* NUL would truncate the decoded string */
				ncc_token_t t = make(lx, NCC_TOK_ERROR, start, line, lstart);
				return t;
			}
			if (d == '\\') {
				advance(lx);
				if (peek(lx, 0) <= 0)
					return make(lx, NCC_TOK_ERROR, start, line, lstart);
				advance(lx);
				continue;
			}
			advance(lx);
			if (d == '"')
				break;
		}
		ncc_token_t t = make(lx, NCC_TOK_STRING, start, line, lstart);
		t.text++;
		t.len -= 2;
		return t;
	}
	ncc_tok_kind_t k;
	switch (c) {
	case '{': k = NCC_TOK_LBRACE; break;
	case '}': k = NCC_TOK_RBRACE; break;
	case '(': k = NCC_TOK_LPAREN; break;
	case ')': k = NCC_TOK_RPAREN; break;
	case '[': k = NCC_TOK_LSQUARE; break;
	case ']': k = NCC_TOK_RSQUARE; break;
	case ',': k = NCC_TOK_COMMA; break;
	case '=': k = NCC_TOK_EQUAL; break;
	case ':': k = NCC_TOK_COLON; break;
	case '?': k = NCC_TOK_QUESTION; break;
	case '*': k = NCC_TOK_STAR; break;
	default: k = NCC_TOK_ERROR; break;
	}
	advance(lx);
	return make(lx, k, start, line, lstart);
}

ncc_token_t ncc_lex_raw_word(ncc_lexer_t *lx)
{
	(void)skip_space(lx);
	size_t start = lx->pos;
	int line = lx->line;
	size_t lstart = lx->line_start;
	for (;;) {
		int c = peek(lx, 0);
		if (is_ident_char(c) || c == '+') {
			advance(lx);
		} else if (c == '>' && lx->pos > start && lx->src[lx->pos - 1] == '-') {
			advance(lx);
		} else {
			break;
		}
	}
	if (lx->pos == start) {
		if (peek(lx, 0) >= 0)
			advance(lx);
		return make(lx, NCC_TOK_ERROR, start, line, lstart);
	}
	return make(lx, NCC_TOK_IDENT, start, line, lstart);
}

const char *ncc_tok_kind_name(ncc_tok_kind_t k)
{
	switch (k) {
	case NCC_TOK_EOF: return "end of input";
	case NCC_TOK_ERROR: return "invalid token";
	case NCC_TOK_IDENT: return "identifier";
	case NCC_TOK_NAME: return "%name";
	case NCC_TOK_INT: return "integer";
	case NCC_TOK_FLOAT: return "number";
	case NCC_TOK_STRING: return "string";
	case NCC_TOK_LBRACE: return "'{'";
	case NCC_TOK_RBRACE: return "'}'";
	case NCC_TOK_LPAREN: return "'('";
	case NCC_TOK_RPAREN: return "')'";
	case NCC_TOK_LSQUARE: return "'['";
	case NCC_TOK_RSQUARE: return "']'";
	case NCC_TOK_COMMA: return "','";
	case NCC_TOK_EQUAL: return "'='";
	case NCC_TOK_COLON: return "':'";
	case NCC_TOK_ARROW: return "'->'";
	case NCC_TOK_LEQ: return "'<='";
	case NCC_TOK_QUESTION: return "'?'";
	case NCC_TOK_ELLIPSIS: return "'...'";
	case NCC_TOK_STAR: return "'*'";
	}
	return "token";
}

void ncc_lex_reset_to(ncc_lexer_t *lx, const ncc_token_t *t)
{
	lx->pos = t->pos;
	lx->line = t->line;
	lx->line_start = t->pos - (size_t)(t->col - 1);
}

bool ncc_lex_skip_balanced(ncc_lexer_t *lx, int max_depth)
{
	char stack[256];
	int depth = 0;
	if (max_depth > (int)sizeof(stack))
		max_depth = (int)sizeof(stack);
	do {
		int c = peek(lx, 0);
		if (c <= 0) /* EOF, or a NUL that would cut the captured text short */
			return false;
		if (c == '"') {
			advance(lx);
			while (peek(lx, 0) > 0 && peek(lx, 0) != '"') {
				if (peek(lx, 0) == '\\')
					advance(lx);
				advance(lx);
			}
			if (peek(lx, 0) <= 0)
				return false;
			advance(lx);
			continue;
		}
		if (c == '{' || c == '(' || c == '[') {
			if (depth >= max_depth)
				return false;
			stack[depth++] = (char)(c == '{' ? '}' : c == '(' ? ')' : ']');
		} else if (c == '}' || c == ')' || c == ']') {
			if (depth == 0 || stack[depth - 1] != c)
				return false;
			depth--;
		} else if (depth == 0) {
			return false; /* not at an opener */
		}
		advance(lx);
	} while (depth > 0);
	return true;
}
