/* neuron-monitor's configuration file (the Neuron tool's format, docs/monitor.md):
 * periods, neuron_runtimes entries with their tag filters, metric groups. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_monitor_config.h"

const char *const mon_group_names[G_TYPE_COUNT] = {
	"neuroncore_counters", "execution_stats", "memory_used", "neuron_runtime_vcpu_usage",
	"vcpu_usage", "memory_info", "neuron_hw_counters",
};

static int cfg_error(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int cfg_error(const char *file, const char *fmt, ...)
{
	fprintf(stderr, "neuron-monitor: %s: ", file);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* A JSON number (seconds) or a string "<number><unit>", unit ms, s, m or h. */
static int parse_period(const json_t *v, uint64_t *out_ns)
{
	double secs;
	if (json_is_number(v)) {
		secs = json_number_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		errno = 0;
		double x = strtod(s, &end);
		if (errno || end == s)
			return -1;
		double mult;
		if (strcmp(end, "ms") == 0)
			mult = 1e-3;
		else if (strcmp(end, "s") == 0 || *end == '\0')
			mult = 1.0;
		else if (strcmp(end, "m") == 0)
			mult = 60.0;
		else if (strcmp(end, "h") == 0)
			mult = 3600.0;
		else
			return -1;
		secs = x * mult;
	} else {
		return -1;
	}
	if (!(secs >= 0.01 && secs <= 86400.0))
		return -1;
	*out_ns = (uint64_t)llround(secs * 1e9);
	return 0;
}

static int get_period(const char *file, const json_t *obj, const char *where, uint64_t inherited,
		      uint64_t *out_ns)
{
	const json_t *p = json_object_get(obj, "period");
	*out_ns = inherited;
	if (!p)
		return 0;
	if (parse_period(p, out_ns)) {
		char *txt = json_dumps(p, JSON_ENCODE_ANY | JSON_COMPACT);
		cfg_error(file, "%s\"period\": %s is not a period: use a string with a unit, "
			  "ms, s, m or h, between 10ms and 24h, e.g. \"1s\" or \"500ms\"", where,
			  txt ? txt : "?");
		free(txt);
		return -1;
	}
	return 0;
}

/* Refuses keys other than the listed ones (a typo would otherwise be ignored silently). */
static int check_keys(const char *file, const json_t *obj, const char *where, const char *const *known)
{
	const char *key;
	const json_t *val;
	json_object_foreach((json_t *)obj, key, val) {
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok = ok || strcmp(key, known[i]) == 0;
		if (!ok) {
			char list[256] = "";
			for (int i = 0; known[i]; i++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
					 known[i]);
			return cfg_error(file, "unknown field \"%s\" in %s (known: %s)", key,
					 where[0] ? where : "the top-level object", list);
		}
	}
	return 0;
}

static int type_of(const char *name)
{
	for (int t = 0; t < G_TYPE_COUNT; t++)
		if (strcmp(name, mon_group_names[t]) == 0)
			return t;
	return -1;
}

static int add_group(config_t *c, group_type_t type, int entry, uint64_t period)
{
	group_t *g = &c->groups[c->n_groups];
	memset(g, 0, sizeof(*g));
	g->type = type;
	g->entry = entry;
	g->period_ns = period;
	return c->n_groups++;
}

/* One metrics list: runtime (entry >= 0) or system (entry -1). */
static int parse_metrics(const char *file, config_t *c, const json_t *list, const char *where, int entry,
			 uint64_t period)
{
	if (!json_is_array(list))
		return cfg_error(file, "%s must be an array of {\"type\": ...} objects", where);
	static const char *const known[] = { "type", "period", NULL };
	bool seen[G_TYPE_COUNT] = { false };
	size_t i;
	const json_t *m;
	json_array_foreach(list, i, m) {
		char at[128];
		snprintf(at, sizeof(at), "%s[%zu]", where, i);
		if (!json_is_object(m))
			return cfg_error(file, "%s must be an object like {\"type\": \"execution_stats\"}", at);
		if (check_keys(file, m, at, known))
			return -1;
		const json_t *tv = json_object_get(m, "type");
		if (!json_is_string(tv))
			return cfg_error(file, "%s.type is missing or not a string", at);
		int t = type_of(json_string_value(tv));
		bool want_system = entry < 0;
		if (t < 0 || (t >= G_FIRST_SYSTEM) != want_system) {
			char list_txt[256] = "";
			int lo = want_system ? G_FIRST_SYSTEM : 0, hi = want_system ? G_TYPE_COUNT : G_FIRST_SYSTEM;
			for (int k = lo; k < hi; k++)
				snprintf(list_txt + strlen(list_txt), sizeof(list_txt) - strlen(list_txt), "%s%s",
					 list_txt[0] ? ", " : "", mon_group_names[k]);
			return cfg_error(file, "%s.type \"%s\" is not a %s metric group (%s: %s)", at,
					 json_string_value(tv), want_system ? "system" : "neuron_runtimes",
					 t >= 0 ? "it belongs in the other list; these are" : "known", list_txt);
		}
		if (seen[t])
			return cfg_error(file, "%s.type \"%s\" is listed twice in %s", at, mon_group_names[t], where);
		seen[t] = true;
		char pat[160];
		snprintf(pat, sizeof(pat), "%s.", at);
		uint64_t p;
		if (get_period(file, m, pat, period, &p))
			return -1;
		int gi = add_group(c, (group_type_t)t, entry, p);
		if (entry >= 0)
			c->entries[entry].groups[t] = gi;
	}
	return 0;
}

void mon_config_default(config_t *c)
{
	memset(c, 0, sizeof(*c));
	c->n_entries = 1;
	for (int t = 0; t < G_FIRST_SYSTEM; t++)
		c->entries[0].groups[t] = add_group(c, (group_type_t)t, 0, DEFAULT_PERIOD_NS);
	for (int t = G_FIRST_SYSTEM; t < G_TYPE_COUNT; t++)
		add_group(c, (group_type_t)t, -1, DEFAULT_PERIOD_NS);
}

int mon_config_load(const char *file, config_t *c)
{
	memset(c, 0, sizeof(*c));
	json_error_t je;
	json_t *root = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		if (je.line <= 0)
			return cfg_error(file, "%s", je.text);
		return cfg_error(file, "line %d column %d: %s", je.line, je.column, je.text);
	}
	int rc = -1;
	static const char *const root_keys[] = { "period", "neuron_runtimes", "system_metrics", NULL };
	static const char *const rt_keys[] = { "tag_filter", "metrics", "period", NULL };
	uint64_t period;
	if (!json_is_object(root)) {
		cfg_error(file, "the configuration must be a JSON object like {\"period\": \"1s\", ...}");
		goto out;
	}
	if (check_keys(file, root, "", root_keys) || get_period(file, root, "", DEFAULT_PERIOD_NS, &period))
		goto out;
	const json_t *rts = json_object_get(root, "neuron_runtimes");
	if (rts && !json_is_array(rts)) {
		cfg_error(file, "neuron_runtimes must be an array of {\"tag_filter\": ..., \"metrics\": [...]}");
		goto out;
	}
	size_t i;
	const json_t *e;
	json_array_foreach(rts, i, e) {
		char at[64];
		snprintf(at, sizeof(at), "neuron_runtimes[%zu]", i);
		if (i >= MAX_RT_ENTRIES) {
			cfg_error(file, "%s: at most %d neuron_runtimes entries", at, MAX_RT_ENTRIES);
			goto out;
		}
		if (!json_is_object(e)) {
			cfg_error(file, "%s must be an object with \"metrics\"", at);
			goto out;
		}
		if (check_keys(file, e, at, rt_keys))
			goto out;
		rt_entry_t *r = &c->entries[c->n_entries];
		for (int t = 0; t < G_FIRST_SYSTEM; t++)
			r->groups[t] = -1;
		const json_t *tf = json_object_get(e, "tag_filter");
		if (tf) {
			if (!json_is_string(tf)) {
				cfg_error(file, "%s.tag_filter must be a string (a regular expression)", at);
				goto out;
			}
			int re = regcomp(&r->filter, json_string_value(tf), REG_EXTENDED | REG_NOSUB);
			if (re) {
				char msg[256];
				regerror(re, &r->filter, msg, sizeof(msg));
				cfg_error(file, "%s.tag_filter \"%s\" is not a valid regular expression: %s", at,
					  json_string_value(tf), msg);
				goto out;
			}
			r->has_filter = true;
		}
		c->n_entries++;
		char pat[80];
		snprintf(pat, sizeof(pat), "%s.", at);
		uint64_t rp;
		if (get_period(file, e, pat, period, &rp))
			goto out;
		const json_t *metrics = json_object_get(e, "metrics");
		if (!metrics) {
			cfg_error(file, "%s.metrics is missing: list the metric groups, e.g. "
				  "[{\"type\": \"execution_stats\"}]", at);
			goto out;
		}
		char mat[80];
		snprintf(mat, sizeof(mat), "%s.metrics", at);
		if (parse_metrics(file, c, metrics, mat, c->n_entries - 1, rp))
			goto out;
	}
	const json_t *sys = json_object_get(root, "system_metrics");
	if (sys && parse_metrics(file, c, sys, "system_metrics", -1, period))
		goto out;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

void mon_config_free(config_t *c)
{
	for (int i = 0; i < c->n_entries; i++)
		if (c->entries[i].has_filter)
			regfree(&c->entries[i].filter);
	for (int g = 0; g < c->n_groups; g++)
		json_decref(c->groups[g].latest);
}

