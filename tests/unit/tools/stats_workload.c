/* A workload for the monitoring tools' tests: executes a small sqrt model at a
 * given rate, with a NaN every K executions, and reports what it did as JSON. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "test_neffs.h"

static const char usage_text[] =
	"Usage: stats-workload [options]\n"
	"  -n, --count N        executions (default 1000; 0 = until SIGTERM)\n"
	"  -r, --rate R         executions per second (default 0: as fast as possible)\n"
	"  -e, --nan-every K    every K-th execution reads a negative input: NaN (default 0: never)\n"
	"  -b, --bad-every K    every K-th execution misses its input: incorrect input (default 0)\n"
	"  -o, --report FILE    after the executions, write {pid, executions, ..., memory} to FILE\n"
	"  -H, --hold           after the executions, stay alive until SIGTERM\n"
	"  -c, --core NC        load on logical core NC (default 0)\n"
	"  -2, --second-core NC also load the const_scratch model on core NC, with a\n"
	"                       4-float tensor there (never executed; default: none)\n"
	"  -s, --spin-core NC   also load a model that never finishes on core NC and,\n"
	"                       after the report, execute it once: it runs until\n"
	"                       NEURON_RT_EXEC_TIMEOUT ends it (then -H holds)\n";

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(const char *what, NRT_STATUS st)
{
	fprintf(stderr, "stats-workload: %s failed: %d\n", what, (int)st);
	return 1;
}

static nrt_tensor_t *tensor(int nc, const char *name, float v, size_t n)
{
	nrt_tensor_t *t = NULL;
	if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, n * sizeof(float), name, &t))
		return NULL;
	float buf[64];
	for (size_t i = 0; i < n; i++)
		buf[i] = v;
	if (nrt_tensor_write(t, buf, 0, n * sizeof(float)))
		return NULL;
	return t;
}

/* The device memory the second model took at load, by category, and the
 * bytes of the tensor on its core (--second-core): usage before and after. */
static uint64_t second_model[NRT_NEURONSIM_MEM_CATEGORY_COUNT], second_tensors;

/* Writes the report next to FILE and renames it, so a reader never sees half of it. */
static int write_report(const char *path, long executions, long completed, long num_err, long bad)
{
	nrt_neuronsim_mem_usage_t u;
	if (nrt_neuronsim_get_mem_usage(&u))
		return -1;
	/* every visible core's device memory as nrt_get_vnc_memory_stats reports it */
	uint32_t n_cores = 0;
	if (nrt_get_visible_nc_count(&n_cores))
		return -1;
	json_t *cores = json_array();
	for (uint32_t c = 0; c < n_cores; c++) {
		nrt_vnc_memory_stats_t ms;
		size_t got = 0;
		if (nrt_get_vnc_memory_stats(c, &ms, sizeof(ms), &got))
			return -1;
		json_array_append_new(cores, json_integer((json_int_t)ms.bytes_used));
	}
	static const char *const cats[NRT_NEURONSIM_MEM_CATEGORY_COUNT] = {
		"tensors", "constants", "code", "scratch", "staging", "snapshot",
	};
	json_t *mem = json_object();
	for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
		json_object_set_new(mem, cats[k], json_integer((json_int_t)u.by_category[k]));
	json_t *second = json_pack("{s:I, s:I, s:I, s:I}", "constants", (json_int_t)second_model[NRT_NEURONSIM_MEM_CONSTANTS],
				   "code", (json_int_t)second_model[NRT_NEURONSIM_MEM_CODE], "scratch", (json_int_t)second_model[NRT_NEURONSIM_MEM_SCRATCH],
				   "tensors", (json_int_t)second_tensors);
	json_t *root = json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "pid",
				 (int)getpid(), "executions", (int)executions, "completed", (int)completed,
				 "num_err", (int)num_err, "incorrect_input", (int)bad, "memory_in_use",
				 (json_int_t)u.in_use, "memory_total", (json_int_t)u.total, "host_tensors",
				 (json_int_t)u.host_tensors, "host_snapshot", (json_int_t)u.host_snapshot,
				 "memory_by_category", mem, "core_bytes_used", cores, "second_core", second);
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int rc = root && json_dump_file(root, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0 ? 0 : -1;
	json_decref(root);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "nan-every", required_argument, NULL, 'e' },
		{ "bad-every", required_argument, NULL, 'b' },
		{ "report", required_argument, NULL, 'o' },
		{ "hold", no_argument, NULL, 'H' },
		{ "core", required_argument, NULL, 'c' },
		{ "second-core", required_argument, NULL, '2' },
		{ "spin-core", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	long count = 1000, nan_every = 0, bad_every = 0;
	double rate = 0;
	int core = 0, core2 = -1, spin_core = -1;
	const char *report = NULL;
	bool hold = false;
	int c;
	while ((c = getopt_long(argc, argv, "n:r:e:b:o:Hc:2:s:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': count = strtol(optarg, NULL, 10); break;
		case 'r': rate = strtod(optarg, NULL); break;
		case 'e': nan_every = strtol(optarg, NULL, 10); break;
		case 'b': bad_every = strtol(optarg, NULL, 10); break;
		case 'o': report = optarg; break;
		case 'H': hold = true; break;
		case 'c': core = (int)strtol(optarg, NULL, 10); break;
		case '2': core2 = (int)strtol(optarg, NULL, 10); break;
		case 's': spin_core = (int)strtol(optarg, NULL, 10); break;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
	if (st)
		return fail("nrt_init", st);
	size_t size;
	const uint64_t n = 16;
	void *neff = test_neff_sqrt(n, &size);
	nrt_model_t *m = NULL;
	if ((st = nrt_load(neff, size, core, -1, &m)))
		return fail("nrt_load", st);
	nrt_model_t *m2 = NULL;
	nrt_tensor_t *t2 = NULL;
	size_t size2 = 0;
	void *neff2 = NULL;
	if (core2 >= 0) {
		nrt_neuronsim_mem_usage_t u0, u1, u2;
		neff2 = test_neff_const_scratch(&size2);
		if ((st = nrt_neuronsim_get_mem_usage(&u0)))
			return fail("nrt_neuronsim_get_mem_usage", st);
		if ((st = nrt_load(neff2, size2, core2, -1, &m2)))
			return fail("nrt_load of the second model", st);
		if ((st = nrt_neuronsim_get_mem_usage(&u1)))
			return fail("nrt_neuronsim_get_mem_usage", st);
		if (!(t2 = tensor(core2, "x2", 1.0f, 4)))
			return fail("tensor allocation on the second core", NRT_RESOURCE);
		if ((st = nrt_neuronsim_get_mem_usage(&u2)))
			return fail("nrt_neuronsim_get_mem_usage", st);
		for (int k = 0; k < NRT_NEURONSIM_MEM_CATEGORY_COUNT; k++)
			second_model[k] = u1.by_category[k] - u0.by_category[k];
		second_tensors = u2.by_category[NRT_NEURONSIM_MEM_TENSORS] - u1.by_category[NRT_NEURONSIM_MEM_TENSORS];
	}
	nrt_model_t *ms = NULL;
	size_t size_s = 0;
	void *neff_s = NULL;
	if (spin_core >= 0) {
		neff_s = test_neff_spin(&size_s);
		if ((st = nrt_load(neff_s, size_s, spin_core, -1, &ms)))
			return fail("nrt_load of the spin model", st);
	}
	nrt_tensor_t *good = tensor(core, "x_good", 4.0f, n), *neg = tensor(core, "x_neg", -1.0f, n);
	nrt_tensor_t *y = tensor(core, "y", 0.0f, n);
	if (!good || !neg || !y)
		return fail("tensor allocation", NRT_RESOURCE);
	nrt_tensor_set_t *in_good, *in_neg, *in_none, *out;
	if (nrt_allocate_tensor_set(&in_good) || nrt_allocate_tensor_set(&in_neg) ||
	    nrt_allocate_tensor_set(&in_none) || nrt_allocate_tensor_set(&out) ||
	    nrt_add_tensor_to_tensor_set(in_good, "x", good) || nrt_add_tensor_to_tensor_set(in_neg, "x", neg) ||
	    nrt_add_tensor_to_tensor_set(out, "y", y))
		return fail("tensor sets", NRT_RESOURCE);

	long done = 0, completed = 0, num_err = 0, bad = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop && (count == 0 || done < count)) {
		long k = done + 1;
		nrt_tensor_set_t *in = in_good;
		if (bad_every && k % bad_every == 0)
			in = in_none;
		else if (nan_every && k % nan_every == 0)
			in = in_neg;
		st = nrt_execute(m, in, out);
		done++;
		if (st == NRT_SUCCESS)
			completed++;
		else if (st == NRT_EXEC_COMPLETED_WITH_NUM_ERR)
			num_err++;
		else if (st == NRT_INVALID && in == in_none)
			bad++;
		else
			return fail("nrt_execute", st);
		if (rate > 0) {
			/* Paced against the start, so the rate holds on average. */
			double due = (double)done / rate;
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
			if (due > el) {
				double w = due - el;
				struct timespec ts = { (time_t)w, (long)((w - (double)(time_t)w) * 1e9) };
				nanosleep(&ts, NULL);
			}
		}
	}
	if (report && write_report(report, done, completed, num_err, bad)) {
		fprintf(stderr, "stats-workload: cannot write %s: %s\n", report, strerror(errno));
		return 1;
	}
	if (ms) {
		nrt_tensor_t *xs = tensor(spin_core, "x_spin", 1.0f, 1);
		nrt_tensor_set_t *in_s, *out_s;
		if (!xs || nrt_allocate_tensor_set(&in_s) || nrt_allocate_tensor_set(&out_s) ||
		    nrt_add_tensor_to_tensor_set(in_s, "x", xs))
			return fail("the spin model's tensors", NRT_RESOURCE);
		if ((st = nrt_execute(ms, in_s, out_s)) != NRT_TIMEOUT)
			return fail("the spin model's execution (expected a timeout)", st);
		nrt_destroy_tensor_set(&in_s);
		nrt_destroy_tensor_set(&out_s);
		nrt_tensor_free(&xs);
	}
	while (hold && !stop)
		usleep(20000);
	nrt_destroy_tensor_set(&in_good);
	nrt_destroy_tensor_set(&in_neg);
	nrt_destroy_tensor_set(&in_none);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&good);
	nrt_tensor_free(&neg);
	nrt_tensor_free(&y);
	nrt_unload(m);
	free(neff);
	if (ms) {
		nrt_unload(ms);
		free(neff_s);
	}
	if (m2) {
		nrt_tensor_free(&t2);
		nrt_unload(m2);
		free(neff2);
	}
	nrt_close();
	return 0;
}
