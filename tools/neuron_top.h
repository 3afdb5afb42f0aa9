/* neuron-top's shared parts: the screen body built line by line, the tool's
 * state, and the Memory Usage Details tree (neuron_top_tree.c). */
#ifndef NEURONSIM_TOOLS_NEURON_TOP_H
#define NEURONSIM_TOOLS_NEURON_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor_common.h"
#include "neuronsim/procstats.h"

/* The body of the screen, built line by line and then scrolled. */

typedef struct line {
	char text[256];
	int attr;
} line_t;

typedef struct screen_lines {
	line_t *v;
	size_t n, cap;
} screen_lines_t;

void screen_add(screen_lines_t *L, int attr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef struct top {
	double interval;
	const char *dir, *root;
	procstats_list_t cur, prev;      /* this sample and the one before */
	mon_kdevs_t kcur, kprev;
	char scan_err[512], sysfs_err[512];
	int scroll;
	int tab;                         /* 0: all, i: the i-th process of cur */
	bool flops;                      /* F: TFLOPS instead of utilisation */
	uint64_t sys_cpu[7], sys_cpu_prev[7];
	bool have_sys_cpu, have_sys_cpu_prev;
	struct proc_cpu { uint32_t pid; uint64_t ticks[2], prev[2]; bool have_prev; } *pcpu;
	size_t n_pcpu;
	/* Memory Usage Details: x sets every node's state (tree_all), right/left
	 * one node's (tree_set); tree_rows are the rows last drawn */
	bool tree_all;
	struct tree_state { char key[80]; bool expanded; } *tree_set;
	size_t n_tree_set;
	struct tree_row { char key[80]; bool parent; } *tree_rows;
	size_t n_tree_rows;
	char tree_sel[80];               /* the selected node's key */
	bool tree_sel_user;              /* moved by a key: it stays on its node, else on the first row */
	bool follow_sel;                 /* scroll the selection into view */
} top_t;

/* A tag as one column: no spaces, cut to width. */
const char *top_fmt_tag(const char *tag, int width, char *buf, size_t len);

/* Whether process i of the current sample is in the selected tab. */
static inline bool top_in_tab(const top_t *t, size_t i)
{
	return t->tab == 0 || (size_t)t->tab == i + 1;
}

/* Memory Usage Details: draws the tree and remembers its visible rows for
 * the navigation keys; *sel_line gets the body line of the selected row (-1
 * none). */
void top_mem_details(top_t *t, screen_lines_t *L, int *sel_line);
/* The tree's keys; false when the key is not the tree's (up/down then scroll). */
bool top_tree_key(top_t *t, int ch);

#endif
