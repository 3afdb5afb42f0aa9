/* neuronsim-bench-memory: peak host memory of one execution of corpus models against the lower bound of their live tensors (the compiler's peak live scratch + I/O tensors + constants). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_corpus.h"
#include "ncc/ncc.h"
#include "neuronsim/clock.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/bench/meson.build)"
#endif

/* issue #15 goal 3: peak host memory within 1.3x the live-tensor bound. */
#define TARGET_RATIO 1.3
/* A training step with big scratch, one with several GB (the model). */
static const char *const default_modules[] = { "bert-bert_single_graph_4.hlo", "xla-mobilenet_v2.hlo" };

static double now_ms(void)
{
	return (double)ns_monotonic_ns() / 1e6;
}

/* "VmRSS:" or "VmHWM:" of this process in bytes; 0 when unreadable. */
static uint64_t proc_status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	uint64_t kb = 0;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0) {
			kb = strtoull(line + kl, NULL, 10);
			break;
		}
	fclose(f);
	return kb * 1024;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0). */
static bool reset_hwm(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return false;
	bool ok = fputs("5", f) >= 0;
	return (fclose(f) == 0) && ok;
}

static uint64_t read_plan(const char *dir, const char *key)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/memory-plan.txt", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char k[64];
	unsigned long long v;
	uint64_t out = 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (strcmp(k, key) == 0)
			out = v;
	fclose(f);
	return out;
}

/* Small deterministic floats keep a training step finite; other types zero. */
static void fill(void *buf, size_t size, nrt_dtype_t dt)
{
	if (dt != NRT_DTYPE_FLOAT32)
		return;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	float *f = buf;
	for (size_t k = 0; k < size / sizeof(float); k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		f[k] = ((float)(s >> 40) / (float)(1u << 24) - 0.5f) * 0.1f;
	}
}

/* In a child of its own (so the figure is this model's alone): compile, load,
 * bind device tensors, execute once; prints one row. */
static int bench_module(const char *name)
{
	char path[4096], dir[] = "/tmp/neuronsim-bench-memory-XXXXXX";
	snprintf(path, sizeof(path), strchr(name, '/') ? "%s" : NCC_HLO_CORPUS "/%s", name);
	if (!mkdtemp(dir)) {
		perror("neuronsim-bench-memory: mkdtemp");
		return 1;
	}
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.compile.dump_dir = dir; /* memory-plan.txt: the planner's figures */
	ncc_compile_result_t res;
	int cs = bench_compile_file("neuronsim-bench-memory", path, &o, &res);
	uint64_t peak_live = read_plan(dir, "scratch_peak_live_bytes");
	uint64_t scratch = read_plan(dir, "scratch_bytes");
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "neuronsim-bench-memory: could not remove %s\n", dir);
	if (cs != 0)
		return 1;
	if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-memory: nrt_init failed\n");
		return 1;
	}
	if (!reset_hwm()) {
		fprintf(stderr, "neuronsim-bench-memory: cannot reset VmHWM (/proc/self/clear_refs)\n");
		return 1;
	}
	uint64_t base = proc_status_kb("VmRSS:");
	nrt_model_t *model = NULL;
	nrt_tensor_info_array_t *info = NULL;
	nrt_tensor_set_t *in = NULL, *out = NULL;
	nrt_tensor_t **t = NULL;
	int32_t *alias = NULL;
	int rc = 1;
	if (nrt_load(res.neff, res.neff_size, -1, -1, &model) != NRT_SUCCESS ||
	    nrt_get_model_tensor_info(model, &info) != NRT_SUCCESS) {
		fprintf(stderr, "neuronsim-bench-memory: %s: cannot load\n", name);
		goto out;
	}
	uint32_t n = info->tensor_count;
	t = calloc(n, sizeof(*t));
	alias = calloc(n ? n : 1, sizeof(*alias));
	if (!t || !alias || nrt_neuronsim_get_model_tensor_aliases(model, alias, n) != NRT_SUCCESS)
		goto out;
	nrt_allocate_tensor_set(&in);
	nrt_allocate_tensor_set(&out);
	uint64_t io = 0;
	for (uint32_t i = 0; i < n; i++) {
		const nrt_tensor_info_t *ti = &info->tensor_array[i];
		bool is_in = ti->usage == NRT_TENSOR_USAGE_INPUT;
		if (!is_in && alias[i] >= 0)
			continue; /* updated in place in its input */
		io += ti->size;
		if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name, &t[i]) != NRT_SUCCESS ||
		    nrt_add_tensor_to_tensor_set(is_in ? in : out, ti->name, t[i]) != NRT_SUCCESS) {
			fprintf(stderr, "neuronsim-bench-memory: %s: tensor '%s'\n", name, ti->name);
			goto out;
		}
		if (is_in)
			fill(nrt_tensor_get_va(t[i]), ti->size, ti->dtype);
	}
	nrt_neuronsim_mem_usage_t u;
	nrt_neuronsim_get_mem_usage(&u);
	uint64_t consts = u.by_category[NRT_NEURONSIM_MEM_CONSTANTS];
	double t0 = now_ms();
	NRT_STATUS st = nrt_execute(model, in, out);
	double exec_ms = now_ms() - t0;
	if (st != NRT_SUCCESS && st != NRT_EXEC_COMPLETED_WITH_NUM_ERR) {
		fprintf(stderr, "neuronsim-bench-memory: %s: execution failed with status %d\n", name, (int)st);
		goto out;
	}
	uint64_t hwm = proc_status_kb("VmHWM:");
	uint64_t used = hwm > base ? hwm - base : 0;
	uint64_t bound = peak_live + io + consts;
	const char *base_name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	double g = 1e9;
	printf("%-32s %9.3f %9.3f %9.3f %9.3f %9.3f %6.2f %9.0f  %s\n", base_name, scratch / g,
	       peak_live / g, (io + consts) / g, bound / g, used / g, (double)used / (double)bound,
	       exec_ms, (double)used <= TARGET_RATIO * (double)bound ? "met" : "NOT MET");
	rc = 0;
out:
	for (uint32_t i = 0; t && i < n; i++)
		if (t[i])
			nrt_tensor_free(&t[i]);
	if (in)
		nrt_destroy_tensor_set(&in);
	if (out)
		nrt_destroy_tensor_set(&out);
	nrt_free_model_tensor_info(info);
	if (model)
		nrt_unload(model);
	free(t);
	free(alias);
	nrt_close();
	ncc_compile_result_release(&res);
	return rc;
}

int main(int argc, char **argv)
{
	const char *const *names = default_modules;
	int n = (int)(sizeof(default_modules) / sizeof(default_modules[0]));
	if (argc > 1) {
		names = (const char *const *)argv + 1;
		n = argc - 1;
	}
	/* The MobileNetV2 step runs for minutes on a loaded machine. */
	setenv("NEURON_RT_EXEC_TIMEOUT", "3600", 0);
	printf("peak host memory of one execution vs the live-tensor bound (issue #15 goal 3; GB = 1e9 B)\n"
	       "bound = scratch peak live (compiler's plan) + I/O tensors + constants; "
	       "host = VmHWM - VmRSS before nrt_load; target host <= %.1fx bound\n", TARGET_RATIO);
	printf("%-32s %9s %9s %9s %9s %9s %6s %9s\n", "module", "scratch", "peak live", "I/O+const",
	       "bound", "host", "ratio", "exec ms");
	fflush(stdout);
	int failed = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("neuronsim-bench-memory: fork");
			return 1;
		}
		if (pid == 0) {
			int rc = bench_module(names[i]);
			fflush(stdout);
			_exit(rc);
		}
		int ws;
		if (waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			failed++;
	}
	return failed ? 1 : 0;
}
