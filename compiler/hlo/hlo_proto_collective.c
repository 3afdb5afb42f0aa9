/* ncc HloModuleProto decoder: replica groups (explicit and iota), source-target pairs and shardings (as XLA's text spells them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_proto_internal.h"

/* ---------------------------------------------------------------- schema */

static const hp_fdesc_t replica_group_fields[] = {
	{ HPF_REPLICA_GROUP_IDS, "replica_ids", HP_K_REP_VARINT },
};
static const hp_fdesc_t devlist_fields[] = {
	{ HPF_DEVLIST_REPLICA_GROUPS, "replica_groups", HP_K_LEN },
	{ HPF_DEVLIST_IOTA, "iota_replica_group_list", HP_K_LEN },
};
static const hp_fdesc_t iota_fields[] = {
	{ HPF_IOTA_NUM_GROUPS, "num_replica_groups", HP_K_VARINT },
	{ HPF_IOTA_DEVICES_PER_GROUP, "num_devices_per_group", HP_K_VARINT },
	{ HPF_IOTA_RESHAPE_DIMS, "iota_reshape_dims", HP_K_REP_VARINT },
	{ HPF_IOTA_TRANSPOSE_PERM, "iota_transpose_perm", HP_K_REP_VARINT },
};
static const hp_fdesc_t pair_fields[] = {
	{ HPF_PAIR_SOURCE, "source", HP_K_VARINT },
	{ HPF_PAIR_TARGET, "target", HP_K_VARINT },
};
static const hp_fdesc_t sharding_fields[] = {
	{ HPF_SHARDING_TYPE, "type", HP_K_VARINT },
	{ HPF_SHARDING_TILE_ASSIGNMENT_DIMS, "tile_assignment_dimensions", HP_K_REP_VARINT },
	{ HPF_SHARDING_TILE_ASSIGNMENT_DEVICES, "tile_assignment_devices", HP_K_REP_VARINT },
	{ HPF_SHARDING_TUPLE_SHARDINGS, "tuple_shardings", HP_K_LEN },
	{ HPF_SHARDING_REPLICATE_ON_LAST_TILE_DIM, "replicate_on_last_tile_dim", HP_K_VARINT },
	{ HPF_SHARDING_LAST_TILE_DIMS, "last_tile_dims", HP_K_REP_VARINT },
	{ HPF_SHARDING_IOTA_RESHAPE_DIMS, "iota_reshape_dims", HP_K_REP_VARINT },
	{ HPF_SHARDING_IOTA_TRANSPOSE_PERM, "iota_transpose_perm", HP_K_REP_VARINT },
};

/* -------------------------------------------------------- replica groups */

static bool groups_from_list(hp_ctx_t *c, ncc_pb_reader_t r, hp_msgdesc_t desc, uint32_t num,
			     const char *fname, ncc_replica_groups_t *rg)
{
	hp_iter_t it;
	ncc_pb_field_t f;
	int32_t ng = 0;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f))
		if (f.number == num && ++ng > (1 << 20))
			return hp_fail(c, NCC_ERR_LIMIT, fname, -1, "more than %d replica groups", 1 << 20);
	if (c->failed)
		return false;
	if (!ng)
		return true;
	int32_t *sizes = ncc_alloc(c->m, sizeof(int32_t) * (size_t)ng);
	int64_t **parts = ncc__calloc((size_t)ng, sizeof(*parts));
	if (!sizes || !parts) {
		free(parts);
		return hp_nomem(c);
	}
	int64_t total = 0;
	int32_t k = 0;
	bool ok = true;
	hp_iter_init(&it, r, desc);
	while (ok && hp_iter_next(c, &it, &f)) {
		if (f.number != num)
			continue;
		ok = HP_IN(c, fname, k) &&
		     hp_rep_i64(c, hp_sub(c, &f), HP_MSG(replica_group_fields), HPF_REPLICA_GROUP_IDS,
				1 << 22, &parts[k], &sizes[k]);
		if (!ok)
			break;
		for (int32_t i = 0; i < sizes[k]; i++)
			if (parts[k][i] < 0) {
				ok = hp_fail(c, NCC_ERR_PARSE, "replica_ids", -1, "negative replica id %lld",
					     (long long)parts[k][i]);
				break;
			}
		HP_OUT(c);
		total += sizes[k];
		if (ok && total > (1 << 22))
			ok = hp_fail(c, NCC_ERR_LIMIT, fname, -1, "more than %d replica ids", 1 << 22);
		k++;
	}
	if (ok && !c->failed) {
		rg->ids = ncc_alloc(c->m, sizeof(int64_t) * (size_t)(total ? total : 1));
		if (!rg->ids) {
			ok = hp_nomem(c);
		} else {
			int64_t o = 0;
			for (int32_t g = 0; g < ng; g++) {
				if (sizes[g])
					memcpy(rg->ids + o, parts[g], sizeof(int64_t) * (size_t)sizes[g]);
				o += sizes[g];
			}
			rg->ngroups = ng;
			rg->group_sizes = sizes;
		}
	}
	free(parts);
	return ok && !c->failed;
}

/* The iota form [G,S]<=[dims]T(perm): kept as text and expanded, as the text parser
 * does. */
static bool groups_from_iota(hp_ctx_t *c, ncc_pb_reader_t r, ncc_replica_groups_t *rg)
{
	hp_msgdesc_t desc = HP_MSG(iota_fields);
	int64_t g[2] = { 0, 0 }, *dims, *perm;
	int32_t nd, np;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number == HPF_IOTA_NUM_GROUPS)
			g[0] = (int64_t)f.value;
		else if (f.number == HPF_IOTA_DEVICES_PER_GROUP)
			g[1] = (int64_t)f.value;
	}
	if (c->failed || !hp_rep_i64(c, r, desc, HPF_IOTA_RESHAPE_DIMS, NCC_MAX_RANK, &dims, &nd) ||
	    !hp_rep_i64(c, r, desc, HPF_IOTA_TRANSPOSE_PERM, NCC_MAX_RANK, &perm, &np))
		return false;
	int64_t total = 1;
	for (int32_t i = 0; i < nd; i++) {
		if (dims[i] < 0 || (dims[i] && total > (1 << 20) / dims[i]))
			return hp_fail(c, NCC_ERR_LIMIT, "iota_reshape_dims", -1, "replica groups too large");
		total *= dims[i];
	}
	if (g[0] < 0 || g[1] < 0 || g[0] > (1 << 20) || g[1] > (1 << 20) || g[0] * g[1] != total ||
	    (np && np != nd))
		return hp_fail(c, NCC_ERR_PARSE, NULL, -1,
			       "iota replica groups [%lld,%lld] do not match %lld devices",
			       (long long)g[0], (long long)g[1], (long long)total);
	bool seen[NCC_MAX_RANK] = { false }, identity = true;
	for (int32_t i = 0; i < np; i++) {
		if (perm[i] < 0 || perm[i] >= nd || seen[perm[i]])
			return hp_fail(c, NCC_ERR_PARSE, "iota_transpose_perm", -1, "not a permutation");
		seen[perm[i]] = true;
		identity &= perm[i] == i;
	}
	hp_text_t t = { 0 };
	hp_text_printf(&t, "[%lld,%lld]<=[", (long long)g[0], (long long)g[1]);
	for (int32_t i = 0; i < nd; i++)
		hp_text_printf(&t, i ? ",%lld" : "%lld", (long long)dims[i]);
	hp_text_printf(&t, "]");
	if (np && !identity) {
		hp_text_printf(&t, "T(");
		for (int32_t i = 0; i < np; i++)
			hp_text_printf(&t, i ? ",%lld" : "%lld", (long long)perm[i]);
		hp_text_printf(&t, ")");
	}
	if (!(rg->iota_text = hp_text_finish(c, &t)))
		return false;
	if (!ncc_replica_groups_from_iota(c->m, rg, g[0], g[1], dims, nd, perm, np, total))
		return hp_nomem(c);
	return true;
}

bool hp_replica_groups(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_replica_groups_t *rg)
{
	memset(rg, 0, sizeof(*rg));
	if (f->has_devlist) {
		/* CollectiveDeviceListProto: the iota form wins over the explicit list */
		ncc_pb_reader_t r = hp_sub(c, &f->devlist);
		if (!HP_IN(c, "collective_device_list", -1))
			return false;
		bool has_iota = false;
		ncc_pb_field_t iota;
		hp_iter_t it;
		ncc_pb_field_t x;
		hp_iter_init(&it, r, HP_MSG(devlist_fields));
		while (hp_iter_next(c, &it, &x))
			if (x.number == HPF_DEVLIST_IOTA) {
				iota = x;
				has_iota = true;
			}
		if (c->failed)
			return false;
		bool ok;
		if (has_iota) {
			ok = HP_IN(c, "iota_replica_group_list", -1) && groups_from_iota(c, hp_sub(c, &iota), rg);
			HP_OUT(c);
		} else {
			ok = groups_from_list(c, r, HP_MSG(devlist_fields), HPF_DEVLIST_REPLICA_GROUPS,
					      "replica_groups", rg);
		}
		HP_OUT(c);
		return ok;
	}
	return groups_from_list(c, f->msg, hp_inst_desc, HPF_INST_REPLICA_GROUPS, "replica_groups", rg);
}

bool hp_pairs(hp_ctx_t *c, const hp_inst_fields_t *f, ncc_inst_t *in)
{
	if (!f->npairs)
		return true;
	if (f->npairs > (1 << 20))
		return hp_fail(c, NCC_ERR_LIMIT, "source_target_pairs", -1, "too many pairs");
	in->pairs = ncc_alloc(c->m, sizeof(int64_t) * 2 * (size_t)f->npairs);
	if (!in->pairs)
		return hp_nomem(c);
	hp_iter_t it;
	ncc_pb_field_t x;
	int32_t k = 0;
	hp_iter_init(&it, f->msg, hp_inst_desc);
	while (hp_iter_next(c, &it, &x)) {
		if (x.number != HPF_INST_SOURCE_TARGET_PAIRS || k >= f->npairs)
			continue;
		hp_iter_t pit;
		ncc_pb_field_t y;
		if (!hp_elem_begin(c, &x, "source_target_pairs", k, HP_MSG(pair_fields), &pit))
			return false;
		while (hp_iter_next(c, &pit, &y)) {
			if ((int64_t)y.value < 0)
				return hp_fail(c, NCC_ERR_PARSE, y.number == HPF_PAIR_SOURCE ? "source" : "target",
					       -1, "negative device id %lld", (long long)y.value);
			in->pairs[2 * k + (y.number == HPF_PAIR_SOURCE ? 0 : 1)] = (int64_t)y.value;
		}
		if (!hp_elem_end(c))
			return false;
		k++;
	}
	if (c->failed)
		return false;
	in->npairs = k;
	return true;
}

/* ---------------------------------------------------------------- sharding */

static const char *sharding_type_name(int64_t v)
{
	switch (v) {
	case HPV_SHARDING_REPLICATED: return "replicated";
	case HPV_SHARDING_MAXIMAL: return "maximal";
	case HPV_SHARDING_MANUAL: return "manual";
	case HPV_SHARDING_UNKNOWN: return "unknown";
	case HPV_SHARDING_UNREDUCED: return "unreduced";
	default: return NULL;
	}
}

/* XLA's HloSharding spelling: {replicated}, {maximal device=N}, {devices=[2,1]0,1},
 * {devices=[2,2]<=[4]}, tuples as {{...}, {...}}. The IR keeps it as text. */
bool hp_sharding_text(hp_ctx_t *c, ncc_pb_reader_t r, hp_text_t *t)
{
	if (!hp_enter(c))
		return false;
	hp_msgdesc_t desc = HP_MSG(sharding_fields);
	uint64_t type = 0;
	bool last_rep = false;
	hp_iter_t it;
	ncc_pb_field_t f;
	hp_iter_init(&it, r, desc);
	while (hp_iter_next(c, &it, &f)) {
		if (f.number == HPF_SHARDING_TYPE)
			type = f.value;
		else if (f.number == HPF_SHARDING_REPLICATE_ON_LAST_TILE_DIM)
			last_rep = f.value != 0;
	}
	int64_t *dims = NULL, *devs = NULL, *ltd = NULL, *iota = NULL, *perm = NULL;
	int32_t nd = 0, ndev = 0, nltd = 0, niota = 0, nperm = 0;
	if (c->failed)
		goto out;
	if (type == HPV_SHARDING_TUPLE) {
		hp_text_printf(t, "{");
		int32_t k = 0;
		hp_iter_init(&it, r, desc);
		while (hp_iter_next(c, &it, &f)) {
			if (f.number != HPF_SHARDING_TUPLE_SHARDINGS)
				continue;
			if (k >= (1 << 20)) {
				hp_fail(c, NCC_ERR_LIMIT, "tuple_shardings", -1, "too many elements");
				break;
			}
			if (k)
				hp_text_printf(t, ", ");
			bool ok = HP_IN(c, "tuple_shardings", k) && hp_sharding_text(c, hp_sub(c, &f), t);
			HP_OUT(c);
			if (!ok)
				break;
			k++;
		}
		hp_text_printf(t, "}");
		goto out;
	}
	if (!hp_rep_i64(c, r, desc, HPF_SHARDING_TILE_ASSIGNMENT_DIMS, NCC_MAX_RANK, &dims, &nd) ||
	    !hp_rep_i64(c, r, desc, HPF_SHARDING_TILE_ASSIGNMENT_DEVICES, 1 << 20, &devs, &ndev) ||
	    !hp_rep_i64(c, r, desc, HPF_SHARDING_LAST_TILE_DIMS, NCC_MAX_RANK, &ltd, &nltd) ||
	    !hp_rep_i64(c, r, desc, HPF_SHARDING_IOTA_RESHAPE_DIMS, NCC_MAX_RANK, &iota, &niota) ||
	    !hp_rep_i64(c, r, desc, HPF_SHARDING_IOTA_TRANSPOSE_PERM, NCC_MAX_RANK, &perm, &nperm))
		goto out;
	if (type == HPV_SHARDING_MAXIMAL) {
		hp_text_printf(t, "{maximal device=%lld}", (long long)(ndev ? devs[0] : 0));
	} else if (type == HPV_SHARDING_OTHER) {
		hp_text_printf(t, "{devices=[");
		hp_text_ints(t, dims, nd);
		hp_text_printf(t, "]");
		if (niota) {
			hp_text_printf(t, "<=[");
			hp_text_ints(t, iota, niota);
			hp_text_printf(t, "]");
			bool identity = true;
			for (int32_t i = 0; i < nperm; i++)
				identity &= perm[i] == i;
			if (nperm && !identity) {
				hp_text_printf(t, "T(");
				hp_text_ints(t, perm, nperm);
				hp_text_printf(t, ")");
			}
		} else {
			hp_text_ints(t, devs, ndev);
		}
		if (last_rep)
			hp_text_printf(t, " last_tile_dim_replicate");
		if (nltd) {
			hp_text_printf(t, " last_tile_dims={");
			for (int32_t i = 0; i < nltd; i++) {
				const char *n = sharding_type_name(ltd[i]);
				hp_text_printf(t, "%s%s", i ? ", " : "", n ? n : "replicated");
			}
			hp_text_printf(t, "}");
		}
		hp_text_printf(t, "}");
	} else {
		const char *n = sharding_type_name((int64_t)type);
		if (!n) {
			hp_fail(c, NCC_ERR_PARSE, "type", -1, "unknown sharding type %llu",
				(unsigned long long)type);
			goto out;
		}
		hp_text_printf(t, "{%s}", n);
	}
out:
	hp_leave(c);
	return !c->failed;
}
