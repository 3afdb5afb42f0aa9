/* Guest test of job cancellation on the kernel path (issue #11, item 2): kill -9 of a client in the middle of a job that would run for hours frees its core within 1 s (the driver asks neuronsim-fwd to abort it), and the next client runs at once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "test_neffs.h"

#define SYSFS "/sys/class/neuronsim/neuronsim0"

static int failures;

#define EXPECT(cond, ...)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
			failures++;                                           \
		}                                                             \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long sysfs_long(const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), SYSFS "/%s", rel);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Polls rel until it is (want_nonzero ? nonzero : zero); the time it took,
 * or a negative value after timeout_s. */
static double sysfs_wait(const char *rel, int want_nonzero, double timeout_s)
{
	double t0 = now_s(), end = t0 + timeout_s;
	while (now_s() < end) {
		long v = sysfs_long(rel);
		if (v >= 0 && (want_nonzero ? v != 0 : v == 0))
			return now_s() - t0;
		usleep(2000);
	}
	return -1;
}

static nrt_tensor_t *tensor(const char *name, size_t bytes)
{
	nrt_tensor_t *t = NULL;
	if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, name, &t) != NRT_SUCCESS) {
		printf("FAIL: allocating tensor %s\n", name);
		exit(1);
	}
	return t;
}

/* The victim: loads the NEFF on core 0 and executes it without a deadline
 * (it would run for hours); says so on fd, then blocks in nrt_execute. */
static void victim(void *neff, size_t sz, int fd)
{
	setenv("NEURON_RT_EXEC_TIMEOUT", "0", 1);
	nrt_model_t *m = NULL;
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS ||
	    nrt_load(neff, sz, 0, 1, &m) != NRT_SUCCESS)
		_exit(3);
	nrt_tensor_t *x = tensor("x", 4), *y = tensor("y", 4);
	nrt_tensor_set_t *in, *out;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	nrt_add_tensor_to_tensor_set(in, "x", x);
	nrt_add_tensor_to_tensor_set(out, "y", y);
	if (write(fd, "r", 1) != 1)
		_exit(4);
	NRT_STATUS st = nrt_execute(m, in, out);
	printf("FAIL: the victim's nrt_execute returned %d\n", st);
	_exit(5);
}

/* One round: the victim runs `what` on core 0 and is killed; the core must
 * be free (running 0) within 1 s of the kill. */
static void kill_round(const char *what, void *neff, size_t sz)
{
	int p[2];
	if (pipe(p)) {
		printf("FAIL: pipe\n");
		exit(1);
	}
	long timeouts = sysfs_long("core0/jobs_timeout");
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		victim(neff, sz, p[1]);
	}
	close(p[1]);
	char c;
	EXPECT(read(p[0], &c, 1) == 1, "%s: the victim did not start", what);
	close(p[0]);
	EXPECT(sysfs_wait("core0/running", 1, 30.0) >= 0, "%s: the victim's job never ran", what);
	usleep(200 * 1000); /* well inside its instruction */
	EXPECT(sysfs_long("core0/running") != 0, "%s: the job ended by itself", what);
	double t_kill = now_s();
	kill(pid, SIGKILL);
	int ws = 0;
	waitpid(pid, &ws, 0);
	EXPECT(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "%s: victim status %#x", what, ws);
	double freed = sysfs_wait("core0/running", 0, 30.0);
	double after_kill = freed < 0 ? -1 : now_s() - t_kill;
	printf("clientkill: %s: core 0 free %.3f s after kill -9 of its client\n", what, after_kill);
	EXPECT(freed >= 0, "%s: core 0 still runs the dead client's job 30 s after the kill", what);
	EXPECT(after_kill < 1.0, "%s: core 0 was freed %.3f s after the kill", what, after_kill);
	EXPECT(sysfs_long("core0/jobs_timeout") == timeouts + 1,
	       "%s: jobs_timeout %ld -> %ld: the aborted job ends as TIMEOUT", what, timeouts,
	       sysfs_long("core0/jobs_timeout"));
	EXPECT(sysfs_long("cores_reserved") == 0, "%s: cores reserved after the kill", what);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
	size_t sz;
	void *neff = test_neff_huge_alu(&sz);
	kill_round("2^33-element ALU op", neff, sz);
	free(neff);
	neff = test_neff_huge_matmul(1u << 14, &sz);
	kill_round("s32 matmul 2^14 x 2^14 x 2^14", neff, sz);
	free(neff);

	/* The next client gets core 0 and runs at once. */
	setenv("NEURON_RT_EXEC_TIMEOUT", "30", 1);
	double t0 = now_s();
	nrt_model_t *m = NULL;
	EXPECT(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS, "nrt_init after the kills");
	neff = test_neff_add(256, &sz);
	EXPECT(nrt_load(neff, sz, 0, 1, &m) == NRT_SUCCESS, "loading the add model on core 0");
	free(neff);
	nrt_tensor_t *a = tensor("a", 1024), *b = tensor("b", 1024), *o = tensor("out", 1024);
	float v[256], r[256];
	for (int i = 0; i < 256; i++)
		v[i] = (float)i;
	nrt_tensor_write(a, v, 0, sizeof(v));
	nrt_tensor_write(b, v, 0, sizeof(v));
	nrt_tensor_set_t *in, *out;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	nrt_add_tensor_to_tensor_set(in, "a", a);
	nrt_add_tensor_to_tensor_set(in, "b", b);
	nrt_add_tensor_to_tensor_set(out, "out", o);
	NRT_STATUS st = nrt_execute(m, in, out);
	EXPECT(st == NRT_SUCCESS, "the next client's add: status %d", st);
	nrt_tensor_read(o, r, 0, sizeof(r));
	for (int i = 0; i < 256; i++)
		EXPECT(r[i] == 2.0f * (float)i, "out[%d] = %g", i, r[i]);
	printf("clientkill: the next client ran on core 0 (%.3f s from nrt_init)\n", now_s() - t0);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&a);
	nrt_tensor_free(&b);
	nrt_tensor_free(&o);
	nrt_unload(m);
	nrt_close();
	printf("clientkill: %s (%d failure(s))\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
