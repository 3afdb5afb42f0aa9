/* neuron-top: a live terminal view (ncurses) of the NeuronCores, executions, numerical errors
 * and memory by category of every running neuronsim process, and of the kernel devices (sysfs). */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "monitor_common.h"
#include "neuron_top.h"
#include "neuronsim/proc_stat.h"
#include "neuronsim/procstats.h"
#include "tool_common.h"

#define MIN_COLS 80
#define MIN_LINES 24

static const char usage_text[] =
	"Usage: neuron-top [-i SECONDS] [-h]\n"
	"Live view of every running neuronsim process (its NeuronCores' utilisation,\n"
	"executions per second, numerical and other errors, device and host memory by\n"
	"category, snapshot copies included) and of the kernel devices.\n"
	"\n"
	"Options:\n"
	"  -i, --interval SECONDS  refresh period (default 1, 0.1 to 3600)\n"
	"  -h, --help              show this help\n"
	"      --version           print the version and exit\n"
	"\n"
	"The Neuron tool's layout first: NeuronCore v2 Utilization (F toggles the\n"
	"TFLOPS view), VCPU Utilization (system and runtime, user% and system%),\n"
	"Memory Usage Summary (host and device memory by category) and Memory Usage\n"
	"Details (a tree: each NeuronCore, the models loaded on it and its memory by\n"
	"category, then the host memory), for the selected tab: 'all' (every\n"
	"process) or one process; then neuronsim's tables (PROCESSES, NEURONCORES,\n"
	"DEVICE MEMORY, HOST MEMORY, KERNEL DEVICES).\n"
	"\n"
	"Keys: q quit; 1-9 select a tab (1 is 'all'), a/d the previous/next tab;\n"
	"F utilisation or TFLOPS; up/down select a row of the memory tree,\n"
	"right/left expand/collapse it, x expands/collapses the whole tree;\n"
	"PgUp/PgDn/Home scroll.\n"
	"\n"
	"Processes publish their stats in $NEURONSIM_STATS_DIR (default /dev/shm); the\n"
	"kernel devices are read from $NEURONSIM_SYSFS_ROOT (default\n"
	"/sys/class/neuronsim). Needs a terminal of at least 80x24; for a\n"
	"machine-readable stream use neuron-monitor. docs/monitor.md has the details.\n"
	"\n"
	"Exit status: 0 quit with q; 2 bad command line or unusable terminal.\n";

void screen_add(screen_lines_t *L, int attr, const char *fmt, ...)
{
	if (L->n == L->cap) {
		size_t ncap = L->cap ? L->cap * 2 : 64;
		line_t *p = realloc(L->v, ncap * sizeof(*p));
		if (!p)
			return; /* the view shows fewer lines; the next frame retries */
		L->v = p;
		L->cap = ncap;
	}
	line_t *l = &L->v[L->n++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
	l->attr = attr;
}

static void sample(top_t *t)
{
	procstats_list_free(&t->prev);
	t->prev = t->cur;
	memset(&t->cur, 0, sizeof(t->cur));
	t->scan_err[0] = '\0';
	if (ns_status_consume_message(procstats_scan(t->dir, PROCSTATS_SCAN_REMOVE_STALE, 0, &t->cur),
				      t->scan_err, sizeof(t->scan_err)) != NS_STATUS_OK)
		memset(&t->cur, 0, sizeof(t->cur));
	/* CPU time of the machine and of every process, for VCPU Utilization */
	memcpy(t->sys_cpu_prev, t->sys_cpu, sizeof(t->sys_cpu));
	t->have_sys_cpu_prev = t->have_sys_cpu;
	t->have_sys_cpu = ns_proc_stat_system_cpu(t->sys_cpu) == 0;
	struct proc_cpu *pc = calloc(t->cur.n ? t->cur.n : 1, sizeof(*pc));
	for (size_t i = 0; pc && i < t->cur.n; i++) {
		pc[i].pid = t->cur.procs[i].pid;
		if (ns_proc_stat_cpu_ticks((pid_t)pc[i].pid, pc[i].ticks) != 0)
			continue;
		for (size_t j = 0; j < t->n_pcpu; j++)
			if (t->pcpu[j].pid == pc[i].pid) {
				memcpy(pc[i].prev, t->pcpu[j].ticks, sizeof(pc[i].prev));
				pc[i].have_prev = true;
			}
	}
	free(t->pcpu);
	t->pcpu = pc;
	t->n_pcpu = pc ? t->cur.n : 0;
	if (t->tab > (int)t->cur.n)
		t->tab = 0;
	mon_sysfs_free(&t->kprev);
	t->kprev = t->kcur;
	t->sysfs_err[0] = '\0';
	if (ns_status_consume_message(mon_sysfs_read(t->root, &t->kcur), t->sysfs_err,
				      sizeof(t->sysfs_err)) != NS_STATUS_OK)
		memset(&t->kcur, 0, sizeof(t->kcur));
}

/* The previous sample of the same process (same pid and start time). */
static const procstats_snap_t *prev_of(const top_t *t, const procstats_snap_t *s)
{
	for (size_t i = 0; i < t->prev.n; i++)
		if (t->prev.procs[i].pid == s->pid && t->prev.procs[i].start_time == s->start_time)
			return &t->prev.procs[i];
	return NULL;
}

/* Per-second rate of counter i between p and s; NAN without a previous sample. */
static double rate(const procstats_snap_t *s, const procstats_snap_t *p, uint64_t now, uint64_t before)
{
	if (!p || s->read_ns <= p->read_ns)
		return NAN;
	return (double)mon_delta(now, before) / ((double)(s->read_ns - p->read_ns) * 1e-9);
}

static const char *fmt_rate(double r, char *buf, size_t len)
{
	if (isnan(r))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", r);
	return buf;
}

static const char *fmt_latency(double s, char *buf, size_t len)
{
	if (isnan(s))
		snprintf(buf, len, "-");
	else if (s < 1e-3)
		snprintf(buf, len, "%.1fus", s * 1e6);
	else if (s < 1.0)
		snprintf(buf, len, "%.2fms", s * 1e3);
	else
		snprintf(buf, len, "%.2fs", s);
	return buf;
}

const char *top_fmt_tag(const char *tag, int width, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", width, tag);
	for (char *c = buf; *c; c++)
		if (*c == ' ' || (unsigned char)*c < 32)
			*c = '_';
	return buf;
}

/* p50 of the executions since the previous sample. */
static double p50_since(const procstats_snap_t *s, const procstats_snap_t *p)
{
	static double tot[PROCSTATS_LAT_RING], dev[PROCSTATS_LAT_RING];
	size_t nt, nd;
	procstats_latencies(s, p ? p->v[PROCSTATS_LAT_HEAD] : 0, tot, &nt, dev, &nd);
	return nt ? procstats_quantile(tot, nt, 0.5) : NAN;
}

static uint64_t failures_other(const uint64_t *v, int exec, int ok, int num)
{
	uint64_t bad = v[exec] - v[ok];
	return bad >= v[num] ? bad - v[num] : 0;
}

/* ---- the Neuron tool's sections, for the selected tab ---- */

/* Utilisation of core c of process s over the last interval, NAN without a
 * previous sample. */
static double core_util(const top_t *t, const procstats_snap_t *s, uint32_t c)
{
	const procstats_snap_t *p = prev_of(t, s);
	const uint64_t *pv = p && c < p->n_cores ? p->cores[c].v : NULL;
	double u = rate(s, pv ? p : NULL, s->cores[c].v[PROCSTATS_CORE_BUSY_NS], pv ? pv[PROCSTATS_CORE_BUSY_NS] : 0) *
		   1e-9 * 100.0;
	return isnan(u) ? u : u > 100.0 ? 100.0 : u;
}

/* TFLOPS of core c of process s over the last interval: NAN without a
 * previous sample, -1 when the backend does not count FLOPs (kernel). */
static double core_tflops(const top_t *t, const procstats_snap_t *s, uint32_t c)
{
	uint64_t now = s->cores[c].v[PROCSTATS_CORE_FLOPS];
	if (now == PROCSTATS_FLOPS_UNKNOWN)
		return -1.0;
	const procstats_snap_t *p = prev_of(t, s);
	const uint64_t *pv = p && c < p->n_cores ? p->cores[c].v : NULL;
	uint64_t before = pv && pv[PROCSTATS_CORE_FLOPS] != PROCSTATS_FLOPS_UNKNOWN
				  ? pv[PROCSTATS_CORE_FLOPS] : 0;
	return rate(s, pv ? p : NULL, now, before) * 1e-12;
}

static void build_nc_utilization(const top_t *t, screen_lines_t *L)
{
	screen_add(L, A_BOLD, "NeuronCore v2 Utilization%s", t->flops ? " (TFLOPS)" : "");
	/* One entry per physical core id; in the 'all' tab the processes using the
	 * same id (each simulates its own devices) are added up, capped at 100%. */
	double util[PROCSTATS_MAX_CORES], tflops[PROCSTATS_MAX_CORES];
	bool used[PROCSTATS_MAX_CORES] = { false }, known[PROCSTATS_MAX_CORES] = { false };
	bool fl_known[PROCSTATS_MAX_CORES] = { false }, fl_uncounted[PROCSTATS_MAX_CORES] = { false };
	for (size_t i = 0; i < t->cur.n; i++) {
		if (!top_in_tab(t, i))
			continue;
		const procstats_snap_t *s = &t->cur.procs[i];
		for (uint32_t c = 0; c < s->n_cores; c++) {
			uint32_t g = s->cores[c].global;
			if (g >= PROCSTATS_MAX_CORES)
				continue;
			double u = core_util(t, s, c), f = core_tflops(t, s, c);
			if (!used[g])
				util[g] = tflops[g] = 0.0;
			used[g] = true;
			if (f < 0)
				fl_uncounted[g] = true;
			else if (!isnan(f)) {
				tflops[g] += f;
				fl_known[g] = true;
			}
			if (!isnan(u)) {
				util[g] = fmin(100.0, util[g] + u);
				known[g] = true;
			}
		}
	}
	char line[256], cell[64];
	size_t len = 0;
	int in_line = 0;
	line[0] = '\0';
	for (int g = 0; g < PROCSTATS_MAX_CORES; g++) {
		if (!used[g])
			continue;
		if (t->flops) {
			if (fl_uncounted[g])
				snprintf(cell, sizeof(cell), "  NC%-3d %13s", g, "n/a");
			else if (!fl_known[g])
				snprintf(cell, sizeof(cell), "  NC%-3d %13s", g, "-");
			else
				/* %g: a small simulated workload is far below 0.001 */
				snprintf(cell, sizeof(cell), "  NC%-3d %9.3g TFLOPS", g, tflops[g]);
		} else if (!known[g]) {
			snprintf(cell, sizeof(cell), "  NC%-3d [%10s]     -", g, "");
		} else {
			int bars = (int)lround(util[g] / 10.0);
			snprintf(cell, sizeof(cell), "  NC%-3d [%-10.*s] %5.1f%%", g, bars, "||||||||||", util[g]);
		}
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s", cell);
		if (++in_line == 3) {
			screen_add(L, 0, "%s", line);
			len = 0;
			line[0] = '\0';
			in_line = 0;
		}
	}
	if (in_line)
		screen_add(L, 0, "%s", line);
	if (t->flops) {
		bool uncounted = false;
		for (int g = 0; g < PROCSTATS_MAX_CORES; g++)
			uncounted |= used[g] && fl_uncounted[g];
		if (uncounted)
			screen_add(L, 0, "  (n/a: a kernel backend on a driver or neuronsim-fwd of ABI "
				   "1.1 does not report FLOPs, docs/abi.md)");
	}
	if (!t->cur.n)
		screen_add(L, 0, "  no NeuronCore in use");
}

static double pct(uint64_t part, uint64_t total)
{
	return total ? 100.0 * (double)part / (double)total : 0.0;
}

static void build_vcpu(const top_t *t, screen_lines_t *L)
{
	screen_add(L, A_BOLD, "VCPU Utilization");
	if (t->have_sys_cpu && t->have_sys_cpu_prev) {
		uint64_t d[7], all = 0;
		for (int i = 0; i < 7; i++) {
			d[i] = mon_delta(t->sys_cpu[i], t->sys_cpu_prev[i]);
			all += d[i];
		}
		screen_add(L, 0, "  System vCPU usage    user %5.1f%%  system %5.1f%%", pct(d[0] + d[1], all),
		    pct(d[2] + d[4] + d[5] + d[6], all));
	} else {
		screen_add(L, 0, "  System vCPU usage    -");
	}
	/* The runtime's processes: their CPU time over the interval, as a share of
	 * all online CPUs (the system line's scale). */
	uint64_t ut = 0, st = 0;
	bool any = false;
	for (size_t i = 0; i < t->n_pcpu; i++) {
		if (!top_in_tab(t, i) || !t->pcpu[i].have_prev)
			continue;
		ut += mon_delta(t->pcpu[i].ticks[0], t->pcpu[i].prev[0]);
		st += mon_delta(t->pcpu[i].ticks[1], t->pcpu[i].prev[1]);
		any = true;
	}
	uint64_t all = 0;
	if (t->have_sys_cpu && t->have_sys_cpu_prev)
		for (int i = 0; i < 7; i++)
			all += mon_delta(t->sys_cpu[i], t->sys_cpu_prev[i]);
	if (any && all)
		screen_add(L, 0, "  Runtime vCPU usage   user %5.1f%%  system %5.1f%%", pct(ut, all), pct(st, all));
	else
		screen_add(L, 0, "  Runtime vCPU usage   -");
}

static void build_mem_summary(const top_t *t, screen_lines_t *L)
{
	uint64_t v[PROCSTATS_COUNT] = { 0 };
	for (size_t i = 0; i < t->cur.n; i++)
		if (top_in_tab(t, i))
			for (int k = 0; k < PROCSTATS_COUNT; k++)
				v[k] += t->cur.procs[i].v[k];
	char a[7][16];
	screen_add(L, A_BOLD, "Memory Usage Summary");
	screen_add(L, 0, "  Host Used Memory     Total %8s  Tensors %8s  Constants %8s  DMA Buffers %8s",
	    mon_bytes(v[PROCSTATS_HOST_TENSORS] + v[PROCSTATS_HOST_SNAPSHOT], a[0], sizeof(a[0])),
	    mon_bytes(v[PROCSTATS_HOST_TENSORS], a[1], sizeof(a[1])), mon_bytes(0, a[2], sizeof(a[2])),
	    mon_bytes(0, a[3], sizeof(a[3])));
	screen_add(L, 0, "                       App. Memory %8s  Snapshot copies %8s", mon_bytes(0, a[0], sizeof(a[0])),
	    mon_bytes(v[PROCSTATS_HOST_SNAPSHOT], a[1], sizeof(a[1])));
	screen_add(L, 0, "  Device Used Memory   Total %8s  Tensors %8s  Constants %8s  Model Code %8s",
	    mon_bytes(v[PROCSTATS_MEM_IN_USE], a[0], sizeof(a[0])), mon_bytes(v[PROCSTATS_MEM_TENSORS], a[1], sizeof(a[1])),
	    mon_bytes(v[PROCSTATS_MEM_CONSTANTS], a[2], sizeof(a[2])), mon_bytes(v[PROCSTATS_MEM_CODE], a[3], sizeof(a[3])));
	screen_add(L, 0, "                       Runtime Memory %8s  Model Scratchpad %8s  Snapshot copies %8s",
	    mon_bytes(v[PROCSTATS_MEM_STAGING], a[0], sizeof(a[0])), mon_bytes(v[PROCSTATS_MEM_SCRATCH], a[1], sizeof(a[1])),
	    mon_bytes(v[PROCSTATS_MEM_SNAPSHOT], a[2], sizeof(a[2])));
	screen_add(L, 0, "%s", "");
}

/* The bottom bar's tabs: 'all' then every process by tag, the selected one
 * between '>' and '<'. */
static void tab_bar(const top_t *t, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, " %s1:all%s", t->tab == 0 ? ">" : " ", t->tab == 0 ? "<" : " ");
	for (size_t i = 0; i < t->cur.n && n < len; i++) {
		char tag[24];
		bool sel = (size_t)t->tab == i + 1;
		n += (size_t)snprintf(buf + n, len - n, " %s%zu:%s%s", sel ? ">" : " ", i + 2,
				      top_fmt_tag(t->cur.procs[i].tag, 16, tag, sizeof(tag)), sel ? "<" : " ");
	}
}

static void build_processes(const top_t *t, screen_lines_t *L)
{
	char a[32], b[32], c[64], d[32];
	screen_add(L, A_BOLD, "PROCESSES (%zu)", t->cur.n);
	if (t->scan_err[0])
		screen_add(L, 0, "  %s", t->scan_err);
	else if (!t->cur.n)
		screen_add(L, 0, "  no neuronsim process publishes stats in %s", t->dir);
	if (!t->cur.n)
		return;
	screen_add(L, A_UNDERLINE, "%7s %-14s %-7s %9s %11s %8s %7s %9s", "PID", "TAG", "CORES", "EXEC/S",
	    "EXECUTIONS", "NUM ERR", "ERRORS", "P50 LAT");
	for (size_t i = 0; i < t->cur.n; i++) {
		const procstats_snap_t *s = &t->cur.procs[i], *p = prev_of(t, s);
		screen_add(L, 0, "%7u %-14s %-7s %9s %11" PRIu64 " %8" PRIu64 " %7" PRIu64 " %9s", s->pid,
		    top_fmt_tag(s->tag, 14, c, sizeof(c)), procstats_core_list(s, "-", d, sizeof(d)),
		    fmt_rate(rate(s, p, s->v[PROCSTATS_EXECUTIONS], p ? p->v[PROCSTATS_EXECUTIONS] : 0), a,
			     sizeof(a)),
		    s->v[PROCSTATS_EXECUTIONS], s->v[PROCSTATS_COMPLETED_WITH_NUM_ERR],
		    failures_other(s->v, PROCSTATS_EXECUTIONS, PROCSTATS_COMPLETED,
				   PROCSTATS_COMPLETED_WITH_NUM_ERR),
		    fmt_latency(p50_since(s, p), b, sizeof(b)));
	}
}

static void build_cores(const top_t *t, screen_lines_t *L)
{
	if (!t->cur.n)
		return;
	char a[32], b[32];
	screen_add(L, 0, "%s", "");
	screen_add(L, A_BOLD, "NEURONCORES");
	screen_add(L, A_UNDERLINE, "%7s %3s %4s %6s %9s %11s %11s %8s %7s", "PID", "NC", "PHYS", "UTIL", "EXEC/S",
	    "EXECUTIONS", "COMPLETED", "NUM ERR", "ERRORS");
	for (size_t i = 0; i < t->cur.n; i++) {
		const procstats_snap_t *s = &t->cur.procs[i], *p = prev_of(t, s);
		for (uint32_t c = 0; c < s->n_cores; c++) {
			const uint64_t *v = s->cores[c].v;
			const uint64_t *pv = p && c < p->n_cores ? p->cores[c].v : NULL;
			double util = rate(s, pv ? p : NULL, v[PROCSTATS_CORE_BUSY_NS],
					   pv ? pv[PROCSTATS_CORE_BUSY_NS] : 0) * 1e-9 * 100.0;
			if (!isnan(util))
				util = util > 100.0 ? 100.0 : util;
			if (isnan(util))
				snprintf(a, sizeof(a), "-");
			else
				snprintf(a, sizeof(a), "%.1f%%", util);
			screen_add(L, 0, "%7u %3u %4u %6s %9s %11" PRIu64 " %11" PRIu64 " %8" PRIu64 " %7" PRIu64, s->pid, c,
			    s->cores[c].global, a,
			    fmt_rate(rate(s, pv ? p : NULL, v[PROCSTATS_CORE_EXECUTIONS],
					  pv ? pv[PROCSTATS_CORE_EXECUTIONS] : 0), b, sizeof(b)),
			    v[PROCSTATS_CORE_EXECUTIONS], v[PROCSTATS_CORE_COMPLETED],
			    v[PROCSTATS_CORE_COMPLETED_WITH_NUM_ERR],
			    failures_other(v, PROCSTATS_CORE_EXECUTIONS, PROCSTATS_CORE_COMPLETED,
					   PROCSTATS_CORE_COMPLETED_WITH_NUM_ERR));
		}
	}
}

static void build_memory(const top_t *t, screen_lines_t *L)
{
	if (!t->cur.n)
		return;
	char m[9][16], c[32];
	screen_add(L, 0, "%s", "");
	screen_add(L, A_BOLD, "DEVICE MEMORY");
	screen_add(L, A_UNDERLINE, "%7s %8s %8s %8s %8s %8s %8s %8s %8s", "PID", "IN USE", "TENSORS", "CONSTS",
	    "CODE", "SCRATCH", "STAGING", "SNAPSHOT", "PEAK");
	for (size_t i = 0; i < t->cur.n; i++) {
		const procstats_snap_t *s = &t->cur.procs[i];
		mon_bytes(s->v[PROCSTATS_MEM_IN_USE], m[0], sizeof(m[0]));
		for (int k = 0; k < PROCSTATS_MEM_CATEGORIES; k++)
			mon_bytes(s->v[PROCSTATS_MEM_FIRST + k], m[1 + k], sizeof(m[0]));
		mon_bytes(s->v[PROCSTATS_MEM_PEAK], m[7], sizeof(m[0]));
		screen_add(L, 0, "%7u %8s %8s %8s %8s %8s %8s %8s %8s", s->pid, m[0], m[1], m[2], m[3], m[4], m[5],
		    m[6], m[7]);
	}
	screen_add(L, 0, "%s", "");
	screen_add(L, A_BOLD, "HOST MEMORY");
	screen_add(L, A_UNDERLINE, "%7s %-15s %-8s %12s %13s %12s", "PID", "PROGRAM", "BACKEND", "TENSORS",
	    "SNAPSHOT", "DEVICE SIZE");
	for (size_t i = 0; i < t->cur.n; i++) {
		const procstats_snap_t *s = &t->cur.procs[i];
		screen_add(L, 0, "%7u %-15s %-8s %12s %13s %12s", s->pid, top_fmt_tag(s->comm, 15, c, sizeof(c)),
		    s->backend, mon_bytes(s->v[PROCSTATS_HOST_TENSORS], m[0], sizeof(m[0])),
		    mon_bytes(s->v[PROCSTATS_HOST_SNAPSHOT], m[1], sizeof(m[1])),
		    mon_bytes(s->mem_total, m[2], sizeof(m[2])));
	}
}

static double krate(const top_t *t, uint64_t now, uint64_t before, bool have_prev)
{
	if (!have_prev || t->kcur.read_ns <= t->kprev.read_ns)
		return NAN;
	return (double)mon_delta(now, before) / ((double)(t->kcur.read_ns - t->kprev.read_ns) * 1e-9);
}

static void build_kernel(const top_t *t, screen_lines_t *L)
{
	char a[16], b[16], r[32];
	screen_add(L, 0, "%s", "");
	screen_add(L, A_BOLD, "KERNEL DEVICES (%s)", t->root);
	if (t->sysfs_err[0]) {
		screen_add(L, 0, "  %s", t->sysfs_err);
		return;
	}
	if (!t->kcur.n) {
		screen_add(L, 0, "  none: neuronsim.ko is not loaded (the embedded devices are above)");
		return;
	}
	screen_add(L, A_UNDERLINE, "%4s %5s %4s %3s %9s %9s %9s %11s %8s %8s", "DEV", "CORES", "RESV", "FW",
	    "MEM USED", "MEM SIZE", "JOBS/S", "SUBMITTED", "FAILED", "NUM ERR");
	for (size_t i = 0; i < t->kcur.n; i++) {
		const mon_kdev_t *d = &t->kcur.devs[i];
		const mon_kdev_t *pd = mon_sysfs_find(&t->kprev, d->index);
		screen_add(L, 0, "%4u %5" PRIu64 " %4" PRIu64 " %3s %9s %9s %9s %11" PRIu64 " %8" PRIu64 " %8" PRIu64,
		    d->index, d->num_cores, d->cores_reserved, d->fw_attached ? "yes" : "no",
		    mon_bytes(d->mem_in_use, a, sizeof(a)), mon_bytes(d->mem_size, b, sizeof(b)),
		    fmt_rate(krate(t, d->jobs[MON_JOBS_SUBMITTED], pd ? pd->jobs[MON_JOBS_SUBMITTED] : 0,
				   pd != NULL), r, sizeof(r)),
		    d->jobs[MON_JOBS_SUBMITTED], d->jobs[MON_JOBS_FAILURE], d->jobs[MON_JOBS_NUM_ERR]);
		if (d->error[0])
			screen_add(L, 0, "     %.200s", d->error);
	}
	screen_add(L, A_UNDERLINE, "%4s %3s %7s %7s %7s %8s %10s %8s %8s %8s", "DEV", "NC", "OWNER", "QUEUED",
	    "RUNNING", "JOBS/S", "SUBMITTED", "FAILED", "NUM ERR", "TIMEOUT");
	for (size_t i = 0; i < t->kcur.n; i++) {
		const mon_kdev_t *d = &t->kcur.devs[i];
		const mon_kdev_t *pd = mon_sysfs_find(&t->kprev, d->index);
		for (uint32_t c = 0; c < d->n_cores; c++) {
			const mon_kcore_t *k = &d->cores[c];
			const mon_kcore_t *pk = NULL;
			for (uint32_t j = 0; pd && j < pd->n_cores; j++)
				if (pd->cores[j].index == k->index)
					pk = &pd->cores[j];
			char owner[24];
			if (k->owner_pid > 0)
				snprintf(owner, sizeof(owner), "%lld", (long long)k->owner_pid);
			else
				snprintf(owner, sizeof(owner), "-");
			screen_add(L, 0, "%4u %3u %7s %7lld %7lld %8s %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64,
			    d->index, k->index, owner, (long long)k->queued, (long long)k->running,
			    fmt_rate(krate(t, k->jobs[MON_JOBS_SUBMITTED], pk ? pk->jobs[MON_JOBS_SUBMITTED] : 0,
					   pk != NULL), r, sizeof(r)),
			    k->jobs[MON_JOBS_SUBMITTED], k->jobs[MON_JOBS_FAILURE], k->jobs[MON_JOBS_NUM_ERR],
			    k->jobs[MON_JOBS_TIMEOUT]);
		}
	}
}

static void draw(top_t *t)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	erase();
	if (cols < MIN_COLS || rows < MIN_LINES) {
		mvprintw(0, 0, "terminal too small (%dx%d):", cols, rows);
		mvprintw(1, 0, "neuron-top needs %dx%d", MIN_COLS, MIN_LINES);
		mvprintw(2, 0, "q quits");
		refresh();
		return;
	}
	screen_lines_t L = { 0 };
	build_nc_utilization(t, &L);
	build_vcpu(t, &L);
	build_mem_summary(t, &L);
	int sel_line;
	top_mem_details(t, &L, &sel_line);
	build_processes(t, &L);
	build_cores(t, &L);
	build_memory(t, &L);
	build_kernel(t, &L);
	if (t->cur.n_stale || t->cur.n_skipped) {
		screen_add(&L, 0, "%s", "");
		if (t->cur.n_stale)
			screen_add(&L, 0, "removed %zu stats file(s) of processes that died without nrt_close",
			    t->cur.n_stale);
		if (t->cur.n_skipped)
			screen_add(&L, 0, "skipped %zu stats file(s): %.180s", t->cur.n_skipped, t->cur.first_skip);
	}

	int body = rows - 2;
	int max_scroll = (int)L.n > body ? (int)L.n - body : 0;
	if (t->follow_sel && sel_line >= 0) {
		if (sel_line < t->scroll)
			t->scroll = sel_line;
		else if (sel_line >= t->scroll + body)
			t->scroll = sel_line - body + 1;
	}
	t->follow_sel = false;
	if (t->scroll > max_scroll)
		t->scroll = max_scroll;
	if (t->scroll < 0)
		t->scroll = 0;
	attron(A_REVERSE);
	mvhline(0, 0, ' ', cols);
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	mvprintw(0, 0, " neuron-top (neuronsim)  instance: %.30s  type: neuronsim  every %.1fs  %zu process(es)  stats: %.40s",
		 host, t->interval, t->cur.n, t->dir);
	attroff(A_REVERSE);
	for (int r = 0; r < body && t->scroll + r < (int)L.n; r++) {
		const line_t *l = &L.v[t->scroll + r];
		attron(l->attr);
		mvaddnstr(1 + r, 0, l->text, cols);
		attroff(l->attr);
	}
	attron(A_REVERSE);
	mvhline(rows - 1, 0, ' ', cols);
	char bar[512];
	tab_bar(t, bar, sizeof(bar));
	mvprintw(rows - 1, 0, "%.300s  | q quit  1-9/a/d tab  F flops  x tree%s", bar, max_scroll ? "  (more below)" : "");
	attroff(A_REVERSE);
	refresh();
	free(L.v);
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.1 && v <= 3600.0))
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "version", no_argument, NULL, TOOL_OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	top_t t;
	memset(&t, 0, sizeof(t));
	t.interval = 1.0;
	int c;
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_interval(optarg, &t.interval)) {
				fprintf(stderr, "neuron-top: --interval '%s' is not a number of seconds "
					"between 0.1 and 3600\n", optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case TOOL_OPT_VERSION: return tool_print_version("neuron-top", NULL);
		case 'h':
			fputs(usage_text, stdout);
			return TOOL_EXIT_OK;
		default:
			fprintf(stderr, "Try 'neuron-top --help'.\n");
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "neuron-top: unexpected argument '%s'\nTry 'neuron-top --help'.\n", argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "neuron-top: needs a terminal (standard input and output must be a tty); "
			"for a machine-readable stream use neuron-monitor\n");
		return TOOL_EXIT_USAGE;
	}
	t.dir = procstats_dir();
	t.root = mon_sysfs_root();
	setlocale(LC_ALL, "");
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		const char *term = getenv("TERM");
		fprintf(stderr, "neuron-top: cannot drive terminal type '%s' (TERM): set TERM to a type "
			"terminfo knows, e.g. xterm-256color\n", term ? term : "");
		return TOOL_EXIT_USAGE;
	}
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	if (cols < MIN_COLS || rows < MIN_LINES) {
		endwin();
		delscreen(scr);
		fprintf(stderr, "neuron-top: the terminal is %dx%d; neuron-top needs at least %dx%d\n", cols,
			rows, MIN_COLS, MIN_LINES);
		return TOOL_EXIT_USAGE;
	}
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);

	uint64_t period = (uint64_t)(t.interval * 1e9);
	uint64_t next = ns_monotonic_ns();
	bool quit = false;
	while (!quit) {
		uint64_t now = ns_monotonic_ns();
		if (now >= next) {
			sample(&t);
			next = now + period;
		}
		draw(&t);
		now = ns_monotonic_ns();
		timeout(next > now ? (int)((next - now) / 1000000) + 1 : 0);
		int ch = getch();
		int page = LINES > 4 ? LINES - 4 : 1;
		if (top_tree_key(&t, ch))
			continue;
		switch (ch) {
		case 'q':
		case 'Q':
			quit = true;
			break;
		case 'f':
		case 'F': t.flops = !t.flops; break;
		case 'a': t.tab = t.tab > 0 ? t.tab - 1 : (int)t.cur.n; break;
		case 'd': t.tab = t.tab < (int)t.cur.n ? t.tab + 1 : 0; break;
		case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
			if (ch - '1' <= (int)t.cur.n)
				t.tab = ch - '1';
			break;
		case KEY_UP: t.scroll--; break;
		case KEY_DOWN: t.scroll++; break;
		case KEY_PPAGE: t.scroll -= page; break;
		case KEY_NPAGE: t.scroll += page; break;
		case KEY_HOME: t.scroll = 0; break;
		default: break; /* ERR (timeout), KEY_RESIZE: redraw */
		}
	}
	endwin();
	delscreen(scr);
	procstats_list_free(&t.cur);
	procstats_list_free(&t.prev);
	free(t.pcpu);
	free(t.tree_set);
	free(t.tree_rows);
	mon_sysfs_free(&t.kcur);
	mon_sysfs_free(&t.kprev);
	return TOOL_EXIT_OK;
}
