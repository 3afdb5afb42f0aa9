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
#include "nsim_kb_test.h"
#include "test_neffs.h"

/* The victim: loads the NEFF on core 0 and executes it without a deadline
 * (it would run for hours); says so on fd, then blocks in nrt_execute. */
static void victim(void *neff, size_t sz, int fd)
{
	setenv("NEURON_RT_EXEC_TIMEOUT", "0", 1);
	nrt_model_t *m = NULL;
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS ||
	    nrt_load(neff, sz, 0, 1, &m) != NRT_SUCCESS)
		_exit(3);
	nrt_tensor_t *x = kb_tensor("x", 4), *y = kb_tensor("y", 4);
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
	EXPECT(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS, "nrt_init after the kills");
	add_model_t am;
	kb_add_setup(&am, 256);
	NRT_STATUS st = kb_add_run(&am);
	EXPECT(st == NRT_SUCCESS, "the next client's add: status %d", st);
	printf("clientkill: the next client ran on core 0 (%.3f s from nrt_init)\n", now_s() - t0);
	kb_add_free(&am);
	nrt_close();
	printf("clientkill: %s (%d failure(s))\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
