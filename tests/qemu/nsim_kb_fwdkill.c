/* Guest test of the kernel backend through libnrt: kill -9 of neuronsim-fwd mid-job fails the nrt_execute caller promptly; a restarted daemon resumes work. */
#include <errno.h>
#include <pthread.h>
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

/* The execution timeout the caller runs with: the failure must come well
 * before it (the driver fails jobs of a dead firmware at once). */
#define EXEC_TIMEOUT_S 30
#define PROMPT_S 10.0

static pid_t fwd_start(const char *fwd)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(fwd, "neuronsim-fwd", "--foreground", "--quiet", (char *)NULL);
		perror("exec neuronsim-fwd");
		_exit(127);
	}
	if (pid < 0 || sysfs_wait("fw_attached", 1, 20.0) < 0) {
		printf("FAIL: neuronsim-fwd (%s) did not attach\n", fwd);
		return -1;
	}
	return pid;
}

typedef struct spin_run {
	nrt_model_t *m;
	nrt_tensor_set_t *in, *outs;
	NRT_STATUS st;
	double elapsed;
} spin_run_t;

static void *spin_main(void *arg)
{
	spin_run_t *r = arg;
	double t0 = now_s();
	r->st = nrt_execute(r->m, r->in, r->outs);
	r->elapsed = now_s() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s /path/to/neuronsim-fwd\n", argv[0]);
		return 2;
	}
	const char *fwd = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	char tmo[16];
	snprintf(tmo, sizeof(tmo), "%d", EXEC_TIMEOUT_S);
	setenv("NEURON_RT_EXEC_TIMEOUT", tmo, 1);
	setenv("NEURONSIM_BACKEND", "kernel", 1);
	setenv("NEURON_RT_NUM_CORES", "1", 1);

	pid_t pid = fwd_start(fwd);
	if (pid < 0)
		return 1;
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		printf("FAIL: nrt_init on the kernel backend\n");
		return 1;
	}
	EXPECT(!strcmp(nrt_neuronsim_backend_name(), "kernel"), "backend is %s",
	       nrt_neuronsim_backend_name());
	add_model_t am;
	kb_add_setup(&am, 1000);
	EXPECT(kb_add_run(&am) == NRT_SUCCESS, "add before the kill");

	/* A job that runs until its deadline, then kill -9 of the daemon. */
	size_t sz;
	void *neff = test_neff_spin(&sz);
	spin_run_t sr = { 0 };
	EXPECT(nrt_load(neff, sz, 0, 1, &sr.m) == NRT_SUCCESS, "loading the spin model");
	free(neff);
	nrt_tensor_t *x = kb_tensor("x", 4);
	nrt_allocate_tensor_set(&sr.in);
	nrt_allocate_tensor_set(&sr.outs);
	nrt_add_tensor_to_tensor_set(sr.in, "x", x);
	pthread_t th;
	pthread_create(&th, NULL, spin_main, &sr);
	EXPECT(sysfs_wait("core0/running", 1, 20.0) >= 0, "the spin job never ran");
	double t_kill = now_s();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pthread_join(th, NULL);
	double after_kill = now_s() - t_kill;
	printf("fwdkill: nrt_execute returned %d (%s) %.3f s after kill -9 (%.3f s in all, "
	       "timeout %d s)\n", sr.st, nrt_get_status_as_str(sr.st), after_kill, sr.elapsed,
	       EXEC_TIMEOUT_S);
	EXPECT(sr.st == NRT_HW_ERROR, "status %d after the firmware died, expected NRT_HW_ERROR",
	       sr.st);
	EXPECT(after_kill < PROMPT_S, "the caller waited %.1f s after the kill", after_kill);
	nrt_neuronsim_exec_error_t e;
	EXPECT(nrt_neuronsim_get_last_error(sr.m, &e) == NRT_SUCCESS && e.status == NRT_HW_ERROR,
	       "last error record");
	printf("fwdkill: error record: %s\n", e.message);
	EXPECT(sysfs_long("fw_attached") == 0, "fw_attached after the kill");

	/* Without a daemon: a prompt error, not a hang. */
	double t0 = now_s();
	NRT_STATUS st = kb_add_run(&am);
	EXPECT(st == NRT_HW_ERROR && now_s() - t0 < PROMPT_S,
	       "execute without firmware: %d after %.1f s", st, now_s() - t0);

	/* A new daemon attaches and work resumes on the same runtime. */
	pid = fwd_start(fwd);
	if (pid < 0)
		return 1;
	for (int i = 0; i < 5; i++)
		EXPECT(kb_add_run(&am) == NRT_SUCCESS, "add after the restart (%d)", i);
	printf("fwdkill: work resumed after restarting neuronsim-fwd\n");

	/* A hung (stopped) daemon: the caller gets NRT_TIMEOUT a bounded time
	 * after the deadline; once the daemon continues, the abandoned job is
	 * reaped and work goes on. Needs a runtime with a short timeout. */
	nrt_destroy_tensor_set(&sr.in);
	nrt_destroy_tensor_set(&sr.outs);
	nrt_tensor_free(&x);
	nrt_unload(sr.m);
	kb_add_free(&am);
	nrt_close();
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		printf("FAIL: nrt_init with a 1 s timeout\n");
		return 1;
	}
	kb_add_setup(&am, 1000);
	neff = test_neff_spin(&sz);
	sr.m = NULL;
	EXPECT(nrt_load(neff, sz, 0, 1, &sr.m) == NRT_SUCCESS, "loading the spin model again");
	free(neff);
	x = kb_tensor("x", 4);
	nrt_allocate_tensor_set(&sr.in);
	nrt_allocate_tensor_set(&sr.outs);
	nrt_add_tensor_to_tensor_set(sr.in, "x", x);
	pthread_create(&th, NULL, spin_main, &sr);
	EXPECT(sysfs_wait("core0/running", 1, 20.0) >= 0, "the spin job never ran");
	kill(pid, SIGSTOP);
	pthread_join(th, NULL);
	printf("fwdkill: with neuronsim-fwd stopped: nrt_execute returned %d (%s) after %.3f s "
	       "(timeout 1 s)\n", sr.st, nrt_get_status_as_str(sr.st), sr.elapsed);
	EXPECT(sr.st == NRT_TIMEOUT, "status %d with a stopped firmware, expected NRT_TIMEOUT", sr.st);
	EXPECT(sr.elapsed < PROMPT_S, "the caller waited %.1f s", sr.elapsed);
	kill(pid, SIGCONT);
	for (int i = 0; i < 3; i++)
		EXPECT(kb_add_run(&am) == NRT_SUCCESS, "add after the firmware continued (%d)", i);
	EXPECT(sysfs_wait("core0/running", 0, 5.0) >= 0, "core 0 still busy");

	nrt_destroy_tensor_set(&sr.in);
	nrt_destroy_tensor_set(&sr.outs);
	nrt_tensor_free(&x);
	nrt_unload(sr.m);
	kb_add_free(&am);
	nrt_close();
	/* A clean stop: SIGTERM detaches and exits 0. */
	kill(pid, SIGTERM);
	int ws = 0;
	waitpid(pid, &ws, 0);
	EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "neuronsim-fwd exit status %#x on SIGTERM", ws);
	EXPECT(sysfs_long("fw_attached") == 0, "fw_attached after SIGTERM");
	printf("fwdkill: %s (%d failure(s))\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
