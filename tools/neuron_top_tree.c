/* neuron-top's Memory Usage Details: the Neuron tool's tree of memory by owner
 * (each NeuronCore, the model instances on it, their categories, the host),
 * drawn collapsed and navigated with the arrow keys and x (docs/monitor.md). */
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neuron_top.h"

/* One node of the tree: a NeuronCore, a model instance on it, a category,
 * or the host memory no NeuronCore owns. key names it across frames (its
 * parent's key, '/', its own part). */
typedef struct tree_node {
	char key[80];
	char label[64];
	int depth;
	long long model_id;              /* the Model ID column; -1: none */
	uint64_t host, dev;
	bool parent;                     /* has children */
} tree_node_t;

typedef struct tree {
	tree_node_t *v;
	size_t n, cap;
} tree_t;

static tree_node_t *tree_add(tree_t *T, const char *key, int depth, const char *label, long long model_id,
			     uint64_t host, uint64_t dev, bool parent)
{
	if (T->n == T->cap) {
		size_t ncap = T->cap ? T->cap * 2 : 64;
		tree_node_t *p = realloc(T->v, ncap * sizeof(*p));
		if (!p)
			return NULL; /* the tree shows fewer rows; the next frame retries */
		T->v = p;
		T->cap = ncap;
	}
	tree_node_t *nd = &T->v[T->n++];
	snprintf(nd->key, sizeof(nd->key), "%s", key);
	snprintf(nd->label, sizeof(nd->label), "%s", label);
	nd->depth = depth;
	nd->model_id = model_id;
	nd->host = host;
	nd->dev = dev;
	nd->parent = parent;
	return nd;
}

/* Device memory categories as the Memory Usage Summary names them, by
 * PROCSTATS_MEM_* - PROCSTATS_MEM_FIRST. */
static const char *const mem_label[PROCSTATS_MEM_CATEGORIES] = {
	"Tensors", "Constants", "Model Code", "Model Scratchpad", "Runtime Memory", "Snapshot copies",
};
enum { CAT_TENSORS, CAT_CONSTANTS, CAT_CODE, CAT_SCRATCH, CAT_STAGING, CAT_SNAPSHOT };

/* The device memory of instance `in` of model m on logical core c of s, by
 * category: constants and scratch sit on the instance's first core; code on
 * each of its cores. The stats file holds an instance's code summed over its
 * cores, so a core's share of a multi-core instance is the core's code minus
 * that of the single-core instances on it, split between the multi-core
 * instances on it (exact unless several of those share a core). */
static void model_on_core(const procstats_snap_t *s, const procstats_model_info_t *m, uint32_t in, uint32_t c,
			  uint64_t out[PROCSTATS_MEM_CATEGORIES])
{
	memset(out, 0, PROCSTATS_MEM_CATEGORIES * sizeof(out[0]));
	if (c == (uint64_t)m->first_core + (uint64_t)in * m->neff_cores) {
		out[CAT_CONSTANTS] = m->mem_constants;
		out[CAT_SCRATCH] = m->mem_scratch;
	}
	if (m->neff_cores <= 1) {
		out[CAT_CODE] = m->mem_code;
		return;
	}
	uint64_t single = 0, multi = 0;
	for (uint32_t i = 0; i < s->n_models; i++) {
		const procstats_model_info_t *o = &s->models[i];
		for (uint32_t k = 0; k < o->n_instances; k++) {
			uint64_t f = (uint64_t)o->first_core + (uint64_t)k * o->neff_cores;
			if (c < f || c >= f + o->neff_cores)
				continue;
			if (o->neff_cores <= 1)
				single += o->mem_code;
			else
				multi++;
		}
	}
	uint64_t code = s->cores[c].mem[CAT_CODE];
	out[CAT_CODE] = code > single && multi ? (code - single) / multi : 0;
}

static bool tree_expanded(const top_t *t, const char *key)
{
	for (size_t i = 0; i < t->n_tree_set; i++)
		if (!strcmp(t->tree_set[i].key, key))
			return t->tree_set[i].expanded;
	return t->tree_all;
}

static void tree_set(top_t *t, const char *key, bool expanded)
{
	for (size_t i = 0; i < t->n_tree_set; i++)
		if (!strcmp(t->tree_set[i].key, key)) {
			t->tree_set[i].expanded = expanded;
			return;
		}
	struct tree_state *p = realloc(t->tree_set, (t->n_tree_set + 1) * sizeof(*p));
	if (!p)
		return;
	t->tree_set = p;
	snprintf(p[t->n_tree_set].key, sizeof(p[0].key), "%s", key);
	p[t->n_tree_set++].expanded = expanded;
}

/* The whole tree for the selected tab: one node per NeuronCore in use
 * (physical id; in 'all' the processes using it are added up) holding its
 * model instances (the memory they took at load) and the categories not tied
 * to a model, then the host memory, which neuronsim does not tie to a core.
 * A parent's figures are the sum of its children's. */
static void build_tree(const top_t *t, tree_t *T)
{
	bool any = false;
	uint64_t host[2] = { 0 };
	for (size_t i = 0; i < t->cur.n; i++)
		if (top_in_tab(t, i)) {
			any = true;
			host[0] += t->cur.procs[i].v[PROCSTATS_HOST_TENSORS];
			host[1] += t->cur.procs[i].v[PROCSTATS_HOST_SNAPSHOT];
		}
	if (!any)
		return;
	bool several = t->tab == 0 && t->cur.n > 1;
	for (uint32_t g = 0; g < PROCSTATS_MAX_CORES; g++) {
		size_t nc_at = T->n;
		char key[16], label[16];
		snprintf(key, sizeof(key), "nc%u", g);
		snprintf(label, sizeof(label), "NC%u", g);
		tree_node_t *nc = NULL;
		uint64_t rest[PROCSTATS_MEM_CATEGORIES] = { 0 }, total = 0;
		for (size_t i = 0; i < t->cur.n; i++) {
			const procstats_snap_t *s = &t->cur.procs[i];
			if (!top_in_tab(t, i))
				continue;
			for (uint32_t c = 0; c < s->n_cores; c++) {
				if (s->cores[c].global != g)
					continue;
				if (!nc && !(nc = tree_add(T, key, 0, label, -1, 0, 0, true)))
					return;
				uint64_t left[PROCSTATS_MEM_CATEGORIES];
				memcpy(left, s->cores[c].mem, sizeof(left));
				for (uint32_t mi = 0; mi < s->n_models; mi++) {
					const procstats_model_info_t *m = &s->models[mi];
					for (uint32_t in = 0; in < m->n_instances; in++) {
						uint64_t first = (uint64_t)m->first_core + (uint64_t)in * m->neff_cores;
						if (c < first || c >= first + m->neff_cores)
							continue;
						uint64_t mem[PROCSTATS_MEM_CATEGORIES];
						model_on_core(s, m, in, c, mem);
						char mkey[64], mlabel[64], name[40];
						snprintf(mkey, sizeof(mkey), "%s/p%u.m%" PRIu64 ".%u", key, s->pid, m->id, in);
						top_fmt_tag(m->name[0] ? m->name : "model", 28, name, sizeof(name));
						if (several)
							snprintf(mlabel, sizeof(mlabel), "%s (pid %u)", name, s->pid);
						else if (m->n_instances > 1)
							snprintf(mlabel, sizeof(mlabel), "%s (instance %u)", name, in);
						else
							snprintf(mlabel, sizeof(mlabel), "%s", name);
						uint64_t sum = mem[CAT_CONSTANTS] + mem[CAT_CODE] + mem[CAT_SCRATCH];
						if (!tree_add(T, mkey, 1, mlabel, (long long)m->id - 1, 0, sum, true))
							return;
						static const int cats[] = { CAT_CONSTANTS, CAT_CODE, CAT_SCRATCH };
						for (size_t k = 0; k < 3; k++) {
							char lkey[80];
							snprintf(lkey, sizeof(lkey), "%s/%d", mkey, cats[k]);
							if (!tree_add(T, lkey, 2, mem_label[cats[k]], -1, 0, mem[cats[k]], false))
								return;
							left[cats[k]] -= mem[cats[k]] <= left[cats[k]] ? mem[cats[k]] : left[cats[k]];
						}
						total += sum;
					}
				}
				for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
					rest[k] += left[k];
			}
		}
		if (!nc)
			continue;
		/* a core holding nothing stays out of the tree */
		uint64_t held = total;
		for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
			held += rest[k];
		if (!held && T->n == nc_at + 1) {
			T->n = nc_at;
			continue;
		}
		/* Tensors and Runtime Memory always; the model categories and
		 * snapshot copies when some is not tied to a listed model. */
		for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++) {
			if (k != CAT_TENSORS && k != CAT_STAGING && !rest[k])
				continue;
			char lkey[80];
			snprintf(lkey, sizeof(lkey), "%s/%d", key, k);
			if (!tree_add(T, lkey, 1, mem_label[k], -1, 0, rest[k], false))
				return;
			total += rest[k];
		}
		T->v[nc_at].dev = total; /* nc may have moved with realloc */
	}
	if (tree_add(T, "host", 0, "Host (no NeuronCore)", -1, host[0] + host[1], 0, true)) {
		tree_add(T, "host/t", 1, "Tensors", -1, host[0], 0, false);
		tree_add(T, "host/s", 1, "Snapshot copies", -1, host[1], 0, false);
	}
}

/* The rows of the tree shown: every node whose ancestors are expanded. */
static size_t tree_visible(const top_t *t, const tree_t *T, size_t *rows)
{
	size_t n = 0;
	int hide_below = -1; /* a collapsed node's depth: its subtree is hidden */
	for (size_t i = 0; i < T->n; i++) {
		const tree_node_t *nd = &T->v[i];
		if (hide_below >= 0 && nd->depth > hide_below)
			continue;
		hide_below = -1;
		rows[n++] = i;
		if (nd->parent && !tree_expanded(t, nd->key))
			hide_below = nd->depth;
	}
	return n;
}

/* Draws the tree and remembers its visible rows for the navigation keys;
 * *sel_line gets the body line of the selected row (-1 none). */
void top_mem_details(top_t *t, screen_lines_t *L, int *sel_line)
{
	tree_t T = { 0 };
	build_tree(t, &T);
	size_t *rows = calloc(T.n ? T.n : 1, sizeof(*rows));
	size_t n = rows ? tree_visible(t, &T, rows) : 0;
	screen_add(L, A_BOLD, "Memory Usage Details");
	screen_add(L, A_UNDERLINE, "  %-44s %8s %13s %13s", "", "Model ID", "Host Memory", "Device Memory");
	*sel_line = -1;
	size_t sel = 0;
	bool found = false;
	for (size_t r = 0; r < n; r++)
		if (!strcmp(T.v[rows[r]].key, t->tree_sel)) {
			sel = r;
			found = true;
		}
	/* Until a key moves it, the selection is the first row: rows that
	 * appear later (a process loading its first model after neuron-top
	 * started) must not leave it on the host's row below them. */
	if ((!found || !t->tree_sel_user) && n) {
		snprintf(t->tree_sel, sizeof(t->tree_sel), "%s", T.v[rows[0]].key);
		sel = 0;
	}
	free(t->tree_rows);
	t->tree_rows = calloc(n ? n : 1, sizeof(*t->tree_rows));
	t->n_tree_rows = 0;
	for (size_t r = 0; r < n; r++) {
		const tree_node_t *nd = &T.v[rows[r]];
		char label[96], id[24], h[16], d[16];
		snprintf(label, sizeof(label), "%*s%s%s", nd->depth * 4, "",
			 nd->parent ? (tree_expanded(t, nd->key) ? "[-] " : "[+] ") : "    ", nd->label);
		if (nd->model_id >= 0)
			snprintf(id, sizeof(id), "%lld", nd->model_id);
		else
			id[0] = '\0';
		if (r == sel)
			*sel_line = (int)L->n;
		screen_add(L, r == sel ? A_REVERSE : 0, "%c %-44.44s %8s %13s %13s", r == sel ? '>' : ' ', label, id,
		    mon_bytes(nd->host, h, sizeof(h)), mon_bytes(nd->dev, d, sizeof(d)));
		if (t->tree_rows) {
			struct tree_row *tr = &t->tree_rows[t->n_tree_rows++];
			snprintf(tr->key, sizeof(tr->key), "%s", nd->key);
			tr->parent = nd->parent;
		}
	}
	if (!n)
		screen_add(L, 0, "  no NeuronCore in use");
	screen_add(L, 0, "%s", "");
	free(rows);
	free(T.v);
}

/* The tree's keys: up/down move the selection, right expands the selected
 * node, left collapses it (or selects its parent), x expands or collapses
 * the whole tree. Returns false when the tree has no rows (up/down scroll). */
bool top_tree_key(top_t *t, int ch)
{
	if (ch == 'x' || ch == 'X') {
		t->tree_all = !t->tree_all;
		t->n_tree_set = 0;
		return true;
	}
	if (!t->n_tree_rows)
		return false;
	size_t cur = 0;
	for (size_t r = 0; r < t->n_tree_rows; r++)
		if (!strcmp(t->tree_rows[r].key, t->tree_sel))
			cur = r;
	const struct tree_row *row = &t->tree_rows[cur];
	if (ch == KEY_UP || ch == KEY_DOWN || ch == KEY_RIGHT || ch == KEY_LEFT)
		t->tree_sel_user = true;
	switch (ch) {
	case KEY_UP:
		if (cur > 0)
			cur--;
		break;
	case KEY_DOWN:
		if (cur + 1 < t->n_tree_rows)
			cur++;
		break;
	case KEY_RIGHT:
		if (row->parent)
			tree_set(t, row->key, true);
		break;
	case KEY_LEFT:
		if (row->parent && tree_expanded(t, row->key)) {
			tree_set(t, row->key, false);
		} else {
			char parent[80];
			snprintf(parent, sizeof(parent), "%s", row->key);
			char *slash = strrchr(parent, '/');
			if (slash) {
				*slash = '\0';
				snprintf(t->tree_sel, sizeof(t->tree_sel), "%s", parent);
			}
		}
		t->follow_sel = true;
		return true;
	default: return false;
	}
	snprintf(t->tree_sel, sizeof(t->tree_sel), "%s", t->tree_rows[cur].key);
	t->follow_sel = true;
	return true;
}

