/* Snapshot configuration from the environment: NEURON_DUMP_HLO_SNAPSHOT, XLA_FLAGS, NEURON_NC0_ONLY_SNAPSHOT, RANK, NEURONSIM_SNAPSHOT_RANK. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "snapshot_internal.h"

/* Room left in a path for the file name after the directory. */
#define NAME_ROOM 400

const char *nrt_snapshot_err_mode_name(nrt_snap_err_mode_t mode)
{
	switch (mode) {
	case NRT_SNAP_ERR_DEVICE: return "ON_NRT_ERROR";
	case NRT_SNAP_ERR_HYBRID: return "ON_NRT_ERROR_HYBRID";
	case NRT_SNAP_ERR_CPU: return "ON_NRT_ERROR_CPU";
	default: return "off";
	}
}

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!isdigit((unsigned char)*s))
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* 1 true, 0 false, -1 neither. */
static ns_status_t load_dump_mode(nrt_snapshot_config_t *c)
{
	const char *v = getenv("NEURON_DUMP_HLO_SNAPSHOT");
	if (!v || !*v)
		return NS_OK;
	if (!strcasecmp(v, "ON_NRT_ERROR"))
		c->err_mode = NRT_SNAP_ERR_DEVICE;
	else if (!strcasecmp(v, "ON_NRT_ERROR_HYBRID"))
		c->err_mode = NRT_SNAP_ERR_HYBRID;
	else if (!strcasecmp(v, "ON_NRT_ERROR_CPU"))
		c->err_mode = NRT_SNAP_ERR_CPU;
	else if (nrt_env_parse_bool(v) >= 0)
		/* torch-neuronx 1.13's NEURON_DUMP_HLO_SNAPSHOT=1: every execution */
		c->on_demand = c->on_demand || nrt_env_parse_bool(v) == 1;
	else
		return nrt_status_make(NRT_INVALID, "NEURON_DUMP_HLO_SNAPSHOT=\"%s\" is invalid: expected "
				       "ON_NRT_ERROR, ON_NRT_ERROR_HYBRID, ON_NRT_ERROR_CPU, 1 (a snapshot of "
				       "every execution) or 0", v);
	return NS_OK;
}

/* Copies the next whitespace-separated token of *p into tok (quotes group
 * and are removed, as a shell would). false at the end or when tok is full. */
static bool next_token(const char **p, char *tok, size_t len, bool *too_long)
{
	const char *s = *p;
	while (isspace((unsigned char)*s))
		s++;
	if (!*s)
		return false;
	size_t n = 0;
	char quote = 0;
	for (; *s && (quote || !isspace((unsigned char)*s)); s++) {
		if (!quote && (*s == '"' || *s == '\'')) {
			quote = *s;
			continue;
		}
		if (quote && *s == quote) {
			quote = 0;
			continue;
		}
		if (n + 1 >= len) {
			*too_long = true;
			return false;
		}
		tok[n++] = *s;
	}
	tok[n] = '\0';
	*p = s;
	return true;
}

/* XLA_FLAGS: --xla_dump_hlo_snapshots[=BOOL] and --xla_dump_to=DIR; every
 * other flag belongs to XLA and is ignored. The last occurrence wins. */
static ns_status_t load_xla_flags(nrt_snapshot_config_t *c)
{
	const char *v = getenv("XLA_FLAGS");
	if (!v)
		return NS_OK;
	char tok[PATH_MAX + 64];
	bool too_long = false;
	while (next_token(&v, tok, sizeof(tok), &too_long)) {
		const char *f = tok;
		if (f[0] == '-')
			f += f[1] == '-' ? 2 : 1;
		const char *eq = strchr(f, '=');
		size_t nlen = eq ? (size_t)(eq - f) : strlen(f);
		if (nlen == strlen("xla_dump_hlo_snapshots") && !strncmp(f, "xla_dump_hlo_snapshots", nlen)) {
			int b = eq ? nrt_env_parse_bool(eq + 1) : 1;
			if (b < 0)
				return nrt_status_make(NRT_INVALID, "XLA_FLAGS: \"%s\" is invalid: "
						       "--xla_dump_hlo_snapshots takes true or false", tok);
			c->on_demand = b == 1;
		} else if (nlen == strlen("xla_dump_to") && !strncmp(f, "xla_dump_to", nlen)) {
			const char *dir = eq ? eq + 1 : "";
			if (strlen(dir) + NAME_ROOM >= sizeof(c->dir))
				return nrt_status_make(NRT_INVALID, "XLA_FLAGS: --xla_dump_to is %zu characters long: "
						       "snapshot file names would not fit in a path; use a shorter "
						       "directory", strlen(dir));
			/* XLA's "-" (stdout) has no meaning for binary snapshot files. */
			snprintf(c->dir, sizeof(c->dir), "%s",
				 *dir && strcmp(dir, "-") != 0 ? dir : NRT_SNAPSHOT_DEFAULT_DIR);
		}
	}
	if (too_long)
		return nrt_status_make(NRT_INVALID, "XLA_FLAGS: a flag is longer than %zu characters", sizeof(tok) - 1);
	return NS_OK;
}

static ns_status_t load_filters(nrt_snapshot_config_t *c)
{
	const char *v = getenv("RANK");
	if (v && *v && !parse_u64(v, &c->rank))
		return nrt_status_make(NRT_INVALID, "RANK=\"%s\" is invalid: expected the process rank, a "
				       "non-negative integer (torchrun sets it)", v);
	v = getenv("NEURONSIM_SNAPSHOT_RANK");
	if (v && *v) {
		if (!strcasecmp(v, "all"))
			c->all_ranks = true;
		else if (!parse_u64(v, &c->dump_rank))
			return nrt_status_make(NRT_INVALID, "NEURONSIM_SNAPSHOT_RANK=\"%s\" is invalid: expected a rank "
					       "(non-negative integer) or all", v);
	}
	return nrt_env_get_bool("NEURON_NC0_ONLY_SNAPSHOT", false, &c->nc0_only);
}

ns_status_t nrt_snapshot_config_load(nrt_snapshot_config_t *out)
{
	nrt_snapshot_config_t c;
	memset(&c, 0, sizeof(c));
	snprintf(c.dir, sizeof(c.dir), "%s", NRT_SNAPSHOT_DEFAULT_DIR);
	NS_RETURN_IF_ERROR(load_xla_flags(&c));
	NS_RETURN_IF_ERROR(load_dump_mode(&c));
	NS_RETURN_IF_ERROR(load_filters(&c));
	*out = c;
	return NS_OK;
}
