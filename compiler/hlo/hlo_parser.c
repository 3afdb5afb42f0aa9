/* ncc HLO text parser: recursive descent over the lexer's tokens, building an ncc IR module (the module, computation and instruction grammar; the parts in hlo_parser_*.c). */
#include "hlo_parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_parser_internal.h"
#include "neuronsim/fs.h"

/* ------------------------------------------------------------ instructions */

static bool is_name_tok(const ncc_token_t *t)
{
	return t->kind == NCC_TOK_NAME || t->kind == NCC_TOK_IDENT;
}

static bool parse_operand(parser_t *p, ncc_inst_t **out)
{
	/* optional inline shape: "f32[2]{0} %x" or "(f32[], s32[]) %t" */
	if (p->tok.kind == NCC_TOK_LPAREN ||
	    (p->tok.kind == NCC_TOK_IDENT && tp_peek_kind(p) == NCC_TOK_LSQUARE)) {
		ncc_shape_t ignored; /* the operand's own shape is authoritative; the verifier
				      * does not need this copy (tuple elems live in the arena) */
		if (!tp_parse_shape(p, &ignored))
			return false;
	}
	if (!is_name_tok(&p->tok))
		return tp_expected(p, "operand name");
	char name[512];
	if (p->tok.len >= sizeof(name))
		return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "name too long");
	memcpy(name, p->tok.text, p->tok.len);
	name[p->tok.len] = 0;
	ncc_inst_t *d = ncc_name_map_get(&p->insts, name);
	if (!d)
		return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
			          "operand '%s' is not defined before its use in this computation", name);
	*out = d;
	tp_next(p);
	return true;
}

static bool parse_instruction(parser_t *p, ncc_comp_t *c)
{
	ncc_token_t first = p->tok;
	bool is_root = false;
	if (tp_tok_is(&p->tok, "ROOT") && tp_peek_kind(p) != NCC_TOK_EQUAL) {
		is_root = true;
		tp_next(p);
	}
	if (!is_name_tok(&p->tok))
		return tp_expected(p, "instruction name");
	ncc_token_t name_tok = p->tok;
	char *name = tp_tok_dup(p, &name_tok);
	if (!name)
		return false;
	if (ncc_name_map_get(&p->all_names, name))
		return tp_fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			          "instruction name '%s' is defined twice in the module", name);
	tp_next(p);
	if (!tp_expect(p, NCC_TOK_EQUAL, "'=' after the instruction name"))
		return false;
	ncc_shape_t shape;
	if (!tp_parse_shape(p, &shape))
		return false;
	if (p->tok.kind != NCC_TOK_IDENT)
		return tp_expected(p, "opcode");
	ncc_token_t op_tok = p->tok;
	ncc_opcode_t op = ncc_opcode_from_name(op_tok.text, op_tok.len);
	tp_next(p);
	if (!tp_expect(p, NCC_TOK_LPAREN, "'(' after the opcode"))
		return false;

	ncc_inst_t *inst;
	/* operands gathered before creation; parameter/constant have their own syntax */
	size_t nops = 0;
	int64_t param_no = -1;
	ncc_literal_t lit;
	memset(&lit, 0, sizeof(lit));
	if (op == NCC_OP_PARAMETER) {
		if (!tp_parse_nonneg(p, &param_no, "parameter number"))
			return false;
		if (param_no > (1 << 20))
			return tp_fail_at(p, NCC_ERR_LIMIT, name_tok.line, name_tok.col,
				          "parameter number %lld too large", (long long)param_no);
	} else if (op == NCC_OP_CONSTANT) {
		if (!tp_parse_literal(p, &shape, &lit))
			return false;
	} else if (p->tok.kind != NCC_TOK_RPAREN) {
		for (;;) {
			if (nops == p->cap_opbuf) {
				size_t nc = p->cap_opbuf ? p->cap_opbuf * 2 : 16;
				if (!tp_grow(p, &p->opbuf, sizeof(*p->opbuf), nc, NCC_PARSE_MAX_OPERANDS, "operand list"))
					return false;
				p->cap_opbuf = nc;
			}
			if (!parse_operand(p, &p->opbuf[nops]))
				return false;
			nops++;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
	}
	if (!tp_expect(p, NCC_TOK_RPAREN, op == NCC_OP_PARAMETER || op == NCC_OP_CONSTANT ?
		       "')'" : "',' or ')' after operand"))
		return false;
	ncc_status_t st = ncc_inst_create(c, op, &shape, name, p->opbuf, (int32_t)nops, &inst);
	if (st)
		return tp_nomem(p);
	inst->name = name; /* keep the already-copied name */
	if (op == NCC_OP_UNKNOWN) {
		inst->opname = tp_tok_dup(p, &op_tok);
		if (!inst->opname)
			return false;
	}
	inst->line = first.line;
	inst->col = first.col;
	inst->literal = lit;
	if (op == NCC_OP_PARAMETER) {
		inst->parameter_number = param_no;
		if (param_no < c->nparams && c->params[param_no])
			return tp_fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
				          "parameter number %lld is used twice (also by '%s')",
				          (long long)param_no, c->params[param_no]->name);
		if (ncc_comp_set_param(c, inst))
			return tp_nomem(p);
	}
	if (!ncc_name_map_put(&p->insts, inst->name, inst) ||
	    !ncc_name_map_put(&p->all_names, inst->name, inst))
		return tp_nomem(p);

	while (p->tok.kind == NCC_TOK_COMMA) {
		tp_next(p);
		if (!tp_parse_attr(p, inst))
			return false;
	}
	if (inst->called && !inst->calls && inst->ncalled && inst->op != NCC_OP_CUSTOM_CALL) {
		/* calls={a,b}: resolution fills called[]; calls is fixed up after resolve */
	}
	if (is_root) {
		if (c->root && c->root->aux_i == 1)
			return tp_fail_at(p, NCC_ERR_PARSE, first.line, first.col,
				          "computation '%s' has a second ROOT ('%s' and '%s')", c->name,
				          c->root->name, inst->name);
		c->root = inst;
		inst->aux_i = 1; /* marks an explicit ROOT while parsing; cleared at the end */
	}
	/* the instruction's text: from its first token to the end of its last line */
	size_t s = first.pos, e = p->prev_end;
	while (e < p->lx.len && p->lx.src[e] != '\n' && p->lx.src[e] != '\r')
		e++;
	inst->text = ncc_strndup(p->m, p->lx.src + s, e - s);
	if (!inst->text)
		return tp_nomem(p);
	return true;
}

static bool parse_computation(parser_t *p)
{
	bool is_entry = false;
	int line = p->tok.line;
	if (tp_tok_is(&p->tok, "ENTRY")) {
		is_entry = true;
		tp_next(p);
	}
	if (!is_name_tok(&p->tok))
		return tp_expected(p, "computation name");
	ncc_token_t name_tok = p->tok;
	char *name = tp_tok_dup(p, &name_tok);
	if (!name)
		return false;
	if (ncc_name_map_get(&p->comps, name))
		return tp_fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			          "computation '%s' is defined twice", name);
	if (is_entry && p->m->entry)
		return tp_fail_at(p, NCC_ERR_PARSE, line, 1, "second ENTRY computation '%s' (first: '%s')",
			          name, p->m->entry->name);
	tp_next(p);
	ncc_comp_t *c;
	if (ncc__comp_create_unchecked(p->m, name, is_entry, &c))
		return tp_nomem(p);
	c->line = line;
	if (!ncc_name_map_put(&p->comps, c->name, c))
		return tp_nomem(p);
	ncc_name_map_clear(&p->insts);

	if (p->tok.kind == NCC_TOK_LPAREN) {
		tp_next(p);
		const char *names[1024];
		ncc_shape_t *shapes = NULL;
		int32_t n = 0;
		bool ok = true;
		if (p->tok.kind != NCC_TOK_RPAREN) {
			shapes = ncc__malloc(sizeof(*shapes) * 1024);
			if (!shapes)
				return tp_nomem(p);
			for (;;) {
				if (n >= 1024) {
					ok = tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col,
						        "more than 1024 parameters in a signature");
					break;
				}
				if (!is_name_tok(&p->tok)) {
					ok = tp_expected(p, "parameter name");
					break;
				}
				if (!(names[n] = tp_tok_dup(p, &p->tok))) {
					ok = false;
					break;
				}
				tp_next(p);
				if (!(ok = tp_expect(p, NCC_TOK_COLON, "':' after parameter name") &&
					   tp_parse_shape(p, &shapes[n])))
					break;
				n++;
				if (!tp_accept(p, NCC_TOK_COMMA))
					break;
			}
		}
		if (ok)
			ok = tp_expect(p, NCC_TOK_RPAREN, "')' or ',' in the signature");
		if (ok && n) {
			c->sig_param_names = ncc_alloc(p->m, sizeof(char *) * (size_t)n);
			c->sig_param_shapes = ncc_alloc(p->m, sizeof(ncc_shape_t) * (size_t)n);
			if (!c->sig_param_names || !c->sig_param_shapes)
				ok = tp_nomem(p);
			else {
				memcpy(c->sig_param_names, names, sizeof(char *) * (size_t)n);
				memcpy(c->sig_param_shapes, shapes, sizeof(ncc_shape_t) * (size_t)n);
			}
		}
		free(shapes);
		if (!ok)
			return false;
		c->nsig_params = n;
		if (!tp_expect(p, NCC_TOK_ARROW, "'->' after the parameter list"))
			return false;
		if (!tp_parse_shape(p, &c->sig_result))
			return false;
		c->has_sig_result = true;
	}
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting the computation body"))
		return false;
	while (p->tok.kind != NCC_TOK_RBRACE) {
		if (p->tok.kind == NCC_TOK_EOF)
			return tp_expected(p, "instruction or '}'");
		if (!parse_instruction(p, c))
			return false;
	}
	tp_next(p);
	if (c->ninsts == 0)
		return tp_fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
			          "computation '%s' has no instructions", c->name);
	if (!c->root)
		c->root = c->insts[c->ninsts - 1]; /* XLA's rule: the last one */
	c->root->aux_i = 0;
	for (int32_t i = 0; i < c->nparams; i++)
		if (!c->params[i])
			return tp_fail_at(p, NCC_ERR_PARSE, name_tok.line, name_tok.col,
				          "computation '%s' has parameter(%d) missing (it has %d parameters)",
				          c->name, (int)i, (int)c->nparams);
	return true;
}

/* ------------------------------------------------------------------ module */

static bool parse_alias(parser_t *p)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting input_output_alias"))
		return false;
	ncc_alias_t *arr = NULL;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_LBRACE) {
		ncc_alias_t a;
		memset(&a, 0, sizeof(a));
		if (!tp_parse_ilist(p, &a.output_index) || !tp_expect(p, NCC_TOK_COLON, "':' in alias") ||
		    !tp_expect(p, NCC_TOK_LPAREN, "'(' in alias") ||
		    !tp_parse_nonneg(p, &a.param_number, "parameter number") ||
		    !tp_expect(p, NCC_TOK_COMMA, "',' in alias") || !tp_parse_ilist(p, &a.param_index))
			return false;
		if (tp_accept(p, NCC_TOK_COMMA)) {
			if (tp_tok_is(&p->tok, "must-alias"))
				a.kind = NCC_ALIAS_MUST;
			else if (tp_tok_is(&p->tok, "may-alias"))
				a.kind = NCC_ALIAS_MAY;
			else
				return tp_expected(p, "must-alias or may-alias");
			tp_next(p);
		}
		if (!tp_expect(p, NCC_TOK_RPAREN, "')' closing alias"))
			return false;
		if (n >= 1 << 16)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many aliases");
		if (!tp_arena_append_room(p, &arr, n, sizeof(*arr)))
			return false;
		arr[n++] = a;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in input_output_alias"))
		return false;
	p->m->aliases = arr;
	p->m->naliases = n;
	return true;
}

/* buffer_donor={ (1, {}), (2, {}) } (XLA prints "{}" when there are none). */
static bool parse_donors(parser_t *p)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting buffer_donor"))
		return false;
	ncc_donor_t *arr = NULL;
	int32_t n = 0;
	while (p->tok.kind == NCC_TOK_LPAREN) {
		ncc_donor_t d;
		memset(&d, 0, sizeof(d));
		tp_next(p);
		if (!tp_parse_nonneg(p, &d.param_number, "parameter number") ||
		    !tp_expect(p, NCC_TOK_COMMA, "',' in buffer donor") || !tp_parse_ilist(p, &d.param_index) ||
		    !tp_expect(p, NCC_TOK_RPAREN, "')' closing buffer donor"))
			return false;
		if (n >= 1 << 16)
			return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "too many buffer donors");
		if (!tp_arena_append_room(p, &arr, n, sizeof(*arr)))
			return false;
		arr[n++] = d;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (!tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in buffer_donor"))
		return false;
	p->m->donors = arr;
	p->m->ndonors = n;
	return true;
}

static bool parse_module(parser_t *p)
{
	if (!tp_tok_is(&p->tok, "HloModule"))
		return tp_expected(p, "'HloModule'");
	tp_next(p);
	if (!is_name_tok(&p->tok))
		return tp_expected(p, "module name");
	p->m->name = tp_tok_dup(p, &p->tok);
	if (!p->m->name)
		return false;
	tp_next(p);
	while (tp_accept(p, NCC_TOK_COMMA)) {
		ncc_token_t key = p->tok;
		if (key.kind != NCC_TOK_IDENT)
			return tp_expected(p, "module attribute name");
		tp_next(p);
		if (!tp_expect(p, NCC_TOK_EQUAL, "'=' after module attribute name"))
			return false;
		bool ok;
		if (tp_tok_is(&key, "input_output_alias")) {
			ok = parse_alias(p);
		} else if (tp_tok_is(&key, "buffer_donor")) {
			ok = parse_donors(p);
		} else if (tp_tok_is(&key, "entry_computation_layout")) {
			const char *raw = NULL;
			ok = p->tok.kind == NCC_TOK_LBRACE ? tp_capture_raw(p, &raw) :
				tp_expected(p, "'{' starting entry_computation_layout");
			if (ok) {
				size_t l = strlen(raw);
				p->m->entry_computation_layout = ncc_strndup(p->m, raw + 1, l - 2);
				ok = p->m->entry_computation_layout ? true : tp_nomem(p);
			}
		} else if (tp_tok_is(&key, "is_scheduled")) {
			ok = tp_parse_bool(p, &p->m->is_scheduled);
		} else {
			/* replica_count, num_partitions, frontend_attributes, ...:
			 * tolerated and kept verbatim */
			ok = tp_add_raw_attr(p, &p->m->raw_attrs, &p->m->nraw_attrs, &key);
		}
		if (!ok)
			return false;
	}
	while (p->tok.kind != NCC_TOK_EOF)
		if (!parse_computation(p))
			return false;
	if (p->m->ncomps == 0)
		return tp_expected(p, "a computation");
	if (!p->m->entry) {
		/* without ENTRY, XLA takes the last computation */
		p->m->entry = p->m->comps[p->m->ncomps - 1];
		p->m->entry->is_entry = true;
	}
	for (size_t i = 0; i < p->npend; i++) {
		pending_ref_t *r = &p->pend[i];
		ncc_comp_t *c = ncc_name_map_get(&p->comps, r->name);
		if (!c)
			return tp_fail_at(p, NCC_ERR_PARSE, r->line, r->col, "unknown computation '%s'",
				          r->name);
		*r->slot = c;
	}
	/* calls={a,b} lists: the first is also `calls` */
	for (int32_t i = 0; i < p->m->ncomps; i++) {
		ncc_comp_t *c = p->m->comps[i];
		for (int32_t k = 0; k < c->ninsts; k++) {
			ncc_inst_t *in = c->insts[k];
			if (!in->calls && in->ncalled && in->op != NCC_OP_CUSTOM_CALL)
				in->calls = in->called[0];
		}
	}
	return true;
}

ncc_status_t ncc_parse_hlo(const char *text, size_t len, const char *filename,
			   ncc_module_t **out_module, ncc_error_t *err)
{
	*out_module = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!filename)
		filename = "<input>";
	if (!text && len)
		return ncc_error_set(err, NCC_ERR_INVALID, 0, 0, "%s: no input", filename);
	if (len > NCC_PARSE_MAX_INPUT)
		return ncc_error_set(err, NCC_ERR_LIMIT, 0, 0,
				     "%s: input of %zu bytes exceeds the limit of %u bytes", filename,
				     len, NCC_PARSE_MAX_INPUT);
	parser_t p;
	memset(&p, 0, sizeof(p));
	p.err = err;
	if (ncc_module_create("module", &p.m))
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", filename);
	char *src = ncc_strndup(p.m, text ? text : "", len);
	const char *fname = ncc_strdup(p.m, filename);
	if (!src || !fname) {
		ncc_module_free(p.m);
		return ncc_error_set(err, NCC_ERR_NOMEM, 0, 0, "%s: out of memory", filename);
	}
	p.m->source = src;
	p.m->source_len = len;
	p.m->filename = fname;
	p.filename = fname;
	ncc_lex_init(&p.lx, src, len);
	p.tok = ncc_lex_next(&p.lx);
	bool ok = parse_module(&p);
	ncc_name_map_free(&p.insts);
	ncc_name_map_free(&p.all_names);
	ncc_name_map_free(&p.comps);
	free(p.pend);
	free(p.opbuf);
	if (!ok) {
		/* the message names the file, which lives in the module: copy it out first */
		ncc_module_free(p.m);
		return p.status ? p.status : NCC_ERR_PARSE;
	}
	*out_module = p.m;
	return NCC_OK;
}

/* The HLO input (text or proto) of a file, up to NCC_PARSE_MAX_INPUT bytes. */
ncc_status_t ncc_read_file(const char *path, char **out_text, size_t *out_len, ncc_error_t *err)
{
	void *buf;
	ns_status_t st = ns_read_file(path, NCC_PARSE_MAX_INPUT, 0, &buf, out_len);
	if (st) {
		ncc_status_t code = ncc_status_from_ns(st, NCC_ERR_IO);
		ncc_error_set(err, code, 0, 0, "%s", ns_status_message(st));
		ns_status_free(st);
		return code;
	}
	*out_text = buf;
	return NCC_OK;
}

ncc_status_t ncc_parse_hlo_file(const char *path, ncc_module_t **out_module, ncc_error_t *err)
{
	*out_module = NULL;
	char *buf = NULL;
	size_t size = 0;
	ncc_status_t st = ncc_read_file(path, &buf, &size, err);
	if (st != NCC_OK)
		return st;
	st = ncc_parse_hlo(buf, size, path, out_module, err);
	free(buf);
	return st;
}
