/* /proc/PID/stat, parsed once for the layers that need a process's fields: the stats files' owner check (start time) and the monitors' CPU use (utime, stime). */
#ifndef NEURONSIM_PROC_STAT_H
#define NEURONSIM_PROC_STAT_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fields of /proc/PID/stat the project reads (proc(5) numbering), in clock ticks. */
typedef struct ns_proc_stat {
	char state;          /* field 3: R, S, D, Z, ... */
	uint64_t utime;      /* field 14: user CPU time */
	uint64_t stime;      /* field 15: system CPU time */
	uint64_t start_time; /* field 22: start after boot, unique with the pid */
} ns_proc_stat_t;

/* Parses the text of a /proc/PID/stat file (NUL-terminated). The command (field
 * 2) may hold spaces and parentheses: the fields are counted from its last ')'.
 * 0, or -1 when a field is missing or not a number (*out untouched). */
int ns_proc_stat_parse(const char *text, ns_proc_stat_t *out);

/* Reads and parses /proc/PID/stat. 0, or -1 (no such process, no /proc, a
 * malformed file). */
int ns_proc_stat_read(pid_t pid, ns_proc_stat_t *out);

/* utime and stime of process pid (fields 14 and 15), in clock ticks, into
 * out[0] and out[1]. 0, or -1 as ns_proc_stat_read (out untouched). */
int ns_proc_stat_cpu_ticks(pid_t pid, uint64_t out[2]);

/* The machine's CPU time in clock ticks from /proc/stat's "cpu" line: user,
 * nice, system, idle, iowait, irq, softirq. 0, or -1 (no /proc, a malformed
 * line; out untouched). */
int ns_proc_stat_system_cpu(uint64_t out[7]);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_PROC_STAT_H */
