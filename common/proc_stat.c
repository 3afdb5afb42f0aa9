/* /proc/PID/stat and /proc/stat (proc_stat.h): the one parser of a process's state, CPU times and start time, and of the machine's CPU time. */
#include "neuronsim/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The unsigned decimal at *p, which must end at a space or the end; advances *p. */
static int field_u64(const char **p, uint64_t *out)
{
	if (**p < '0' || **p > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(*p, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -1;
	*out = v;
	*p = end;
	return 0;
}

int ns_proc_stat_parse(const char *text, ns_proc_stat_t *out)
{
	const char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2] || p[2] == ' ')
		return -1;
	ns_proc_stat_t s = { .state = p[2] };
	p += 3;
	/* p is just after field 3; each further field follows one space */
	for (int field = 4; field <= 22; field++) {
		if (*p != ' ')
			return -1;
		p++;
		uint64_t *dst = field == 14 ? &s.utime : field == 15 ? &s.stime :
				field == 22 ? &s.start_time : NULL;
		if (dst) {
			if (field_u64(&p, dst))
				return -1;
			continue;
		}
		/* a field not kept (some are negative: priority, nice) */
		while (*p && *p != ' ')
			p++;
	}
	*out = s;
	return 0;
}

int ns_proc_stat_read(pid_t pid, ns_proc_stat_t *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return ns_proc_stat_parse(buf, out);
}

int ns_proc_stat_cpu_ticks(pid_t pid, uint64_t out[2])
{
	ns_proc_stat_t st;
	if (ns_proc_stat_read(pid, &st))
		return -1;
	out[0] = st.utime;
	out[1] = st.stime;
	return 0;
}

int ns_proc_stat_system_cpu(uint64_t out[7])
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	char line[512];
	int rc = -1;
	unsigned long long x[7];
	if (fgets(line, sizeof(line), f) && strncmp(line, "cpu ", 4) == 0 &&
	    sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu", &x[0], &x[1], &x[2], &x[3], &x[4],
		   &x[5], &x[6]) == 7) {
		for (int i = 0; i < 7; i++)
			out[i] = x[i];
		rc = 0;
	}
	fclose(f);
	return rc;
}
