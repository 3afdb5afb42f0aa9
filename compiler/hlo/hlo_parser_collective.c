/* ncc HLO text parser: replica groups (explicit and iota) and source-target pairs of collectives. */
#include "hlo_parser_internal.h"

#include <stdlib.h>
#include <string.h>

/* replica_groups={{0,1},{2,3}} | {} | [G,S]<=[dims]T(perm) */
bool tp_parse_replica_groups(parser_t *p, ncc_replica_groups_t *rg)
{
	memset(rg, 0, sizeof(*rg));
	rg->present = true;
	if (p->tok.kind == NCC_TOK_LSQUARE) {
		size_t start = p->tok.pos;
		ncc_ilist_t gs, rd, perm;
		memset(&perm, 0, sizeof(perm));
		/* reuse the ilist parser by faking braces is not possible; read by hand */
		int64_t g[2], r[NCC_MAX_RANK], t[NCC_MAX_RANK];
		int ng = 0, nr = 0, nt = 0;
		tp_next(p);
		while (p->tok.kind == NCC_TOK_INT && ng < 2) {
			if (!tp_parse_nonneg(p, &g[ng++], "group count"))
				return false;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
		if (ng != 2)
			return tp_expected(p, "[groups,size] in iota replica groups");
		if (!tp_expect(p, NCC_TOK_RSQUARE, "']'") || !tp_expect(p, NCC_TOK_LEQ, "'<='") ||
		    !tp_expect(p, NCC_TOK_LSQUARE, "'['"))
			return false;
		while (p->tok.kind == NCC_TOK_INT && nr < NCC_MAX_RANK) {
			if (!tp_parse_nonneg(p, &r[nr++], "reshape dimension"))
				return false;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
		if (!tp_expect(p, NCC_TOK_RSQUARE, "']' in iota replica groups"))
			return false;
		if (tp_tok_is(&p->tok, "T")) {
			tp_next(p);
			if (!tp_expect(p, NCC_TOK_LPAREN, "'(' after T"))
				return false;
			while (p->tok.kind == NCC_TOK_INT && nt < NCC_MAX_RANK) {
				if (!tp_parse_nonneg(p, &t[nt++], "transpose dimension"))
					return false;
				if (!tp_accept(p, NCC_TOK_COMMA))
					break;
			}
			if (!tp_expect(p, NCC_TOK_RPAREN, "')' in iota replica groups"))
				return false;
		}
		(void)gs;
		(void)rd;
		rg->iota_text = ncc_strndup(p->m, p->lx.src + start, p->prev_end - start);
		if (!rg->iota_text)
			return tp_nomem(p);
		/* expand: ids = transpose(reshape(iota(N), r), t) flattened, grouped by g[1] */
		int64_t total = 1;
		for (int i = 0; i < nr; i++) {
			if (r[i] && total > (1 << 20) / r[i])
				return tp_fail_at(p, NCC_ERR_LIMIT, p->tok.line, p->tok.col, "replica groups too large");
			total *= r[i];
		}
		if (g[0] * g[1] != total || g[0] > (1 << 20) || (nt && nt != nr))
			return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
				          "iota replica groups [%lld,%lld] do not match %lld devices",
				          (long long)g[0], (long long)g[1], (long long)total);
		bool seen[NCC_MAX_RANK] = { false };
		for (int i = 0; i < nt; i++) {
			if (t[i] >= nr || seen[t[i]])
				return tp_fail_at(p, NCC_ERR_PARSE, p->tok.line, p->tok.col,
					          "iota replica groups transpose is not a permutation");
			seen[t[i]] = true;
		}
		if (!ncc_replica_groups_from_iota(p->m, rg, g[0], g[1], r, nr, t, nt, total))
			return tp_nomem(p);
		return true;
	}
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' or '[' starting replica_groups"))
		return false;
	int32_t cap_g = 0, cap_i = 0, nids = 0;
	int32_t *sizes = NULL;
	int64_t *ids = NULL;
	bool ok = true;
	while (ok && p->tok.kind == NCC_TOK_LBRACE) {
		tp_next(p);
		if (rg->ngroups == cap_g) {
			cap_g = cap_g ? cap_g * 2 : 8;
			if (!(ok = tp_grow(p, &sizes, sizeof(*sizes), (size_t)cap_g, 1 << 20, "replica groups")))
				break;
		}
		int32_t n = 0;
		while (p->tok.kind == NCC_TOK_INT) {
			if (nids == cap_i) {
				cap_i = cap_i ? cap_i * 2 : 16;
				if (!(ok = tp_grow(p, &ids, sizeof(*ids), (size_t)cap_i, 1 << 22, "replica ids")))
					break;
			}
			if (!(ok = tp_parse_nonneg(p, &ids[nids], "replica id")))
				break;
			nids++;
			n++;
			if (!tp_accept(p, NCC_TOK_COMMA))
				break;
		}
		if (ok)
			ok = tp_expect(p, NCC_TOK_RBRACE, "'}' or ',' in replica group");
		if (ok)
			sizes[rg->ngroups++] = n;
		if (ok && !tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (ok)
		ok = tp_expect(p, NCC_TOK_RBRACE, "'}' closing replica_groups");
	if (ok && rg->ngroups) {
		rg->group_sizes = ncc_alloc(p->m, sizeof(int32_t) * (size_t)rg->ngroups);
		rg->ids = ncc_alloc(p->m, sizeof(int64_t) * (size_t)(nids ? nids : 1));
		if (!rg->group_sizes || !rg->ids)
			ok = tp_nomem(p);
		else {
			memcpy(rg->group_sizes, sizes, sizeof(int32_t) * (size_t)rg->ngroups);
			if (nids)
				memcpy(rg->ids, ids, sizeof(int64_t) * (size_t)nids);
		}
	}
	free(sizes);
	free(ids);
	return ok;
}

bool tp_parse_pairs(parser_t *p, ncc_inst_t *inst)
{
	if (!tp_expect(p, NCC_TOK_LBRACE, "'{' starting source_target_pairs"))
		return false;
	int64_t *v = NULL;
	int32_t n = 0, cap = 0;
	bool ok = true;
	while (p->tok.kind == NCC_TOK_LBRACE) {
		tp_next(p);
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if (!(ok = tp_grow(p, &v, 2 * sizeof(*v), (size_t)cap, 1 << 20, "source_target_pairs")))
				break;
		}
		if (!(ok = tp_parse_nonneg(p, &v[2 * n], "source id") &&
			   tp_expect(p, NCC_TOK_COMMA, "',' in pair") &&
			   tp_parse_nonneg(p, &v[2 * n + 1], "target id") &&
			   tp_expect(p, NCC_TOK_RBRACE, "'}' closing pair")))
			break;
		n++;
		if (!tp_accept(p, NCC_TOK_COMMA))
			break;
	}
	if (ok)
		ok = tp_expect(p, NCC_TOK_RBRACE, "'}' closing source_target_pairs");
	if (ok && n) {
		inst->pairs = ncc_alloc(p->m, sizeof(int64_t) * 2 * (size_t)n);
		if (!inst->pairs)
			ok = tp_nomem(p);
		else
			memcpy(inst->pairs, v, sizeof(int64_t) * 2 * (size_t)n);
	}
	inst->npairs = ok ? n : 0;
	free(v);
	return ok;
}
