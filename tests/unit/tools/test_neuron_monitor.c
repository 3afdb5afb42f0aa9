/* Check tests of neuron-monitor (documents checked field by field against the Neuron tool's
 * schema, counts against a workload process, config errors, sysfs) and of neuron-ls's process view. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *monitor_bin, *ls_bin, *workload_bin;
static char tmp[256], stats_dir[300], sysfs_dir[300];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/nsim-monitor-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(stats_dir, sizeof(stats_dir), "%s/stats", tmp);
	snprintf(sysfs_dir, sizeof(sysfs_dir), "%s/sys", tmp);
	ck_assert_int_eq(mkdir(stats_dir, 0700), 0);
	setenv("NEURONSIM_STATS_DIR", stats_dir, 1);
	/* No kernel device unless a test builds a fake sysfs tree there. */
	setenv("NEURONSIM_SYSFS_ROOT", sysfs_dir, 1);
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	unsetenv("NEURON_PROCESS_TAG");
	unsetenv("NEURON_DUMP_HLO_SNAPSHOT");
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- child processes ---- */

typedef struct child {
	pid_t pid;
	int out;                  /* its stdout, or -1 */
	char *buf;                /* bytes read, not yet returned as lines */
	size_t len, cap;
} child_t;

/* Starts argv with extra "K=V" environment entries; stdout piped when want_out. */
static child_t spawn(char *const argv[], const char *const *env, bool want_out)
{
	child_t c = { .pid = -1, .out = -1 };
	int fds[2] = { -1, -1 };
	if (want_out)
		ck_assert_int_eq(pipe(fds), 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (want_out) {
			dup2(fds[1], STDOUT_FILENO);
			close(fds[0]);
			close(fds[1]);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (want_out) {
		close(fds[1]);
		c.out = fds[0];
	}
	return c;
}

static int finish(child_t *c, int sig)
{
	if (sig)
		kill(c->pid, sig);
	int status = 0;
	ck_assert_int_eq(waitpid(c->pid, &status, 0), c->pid);
	if (c->out >= 0)
		close(c->out);
	free(c->buf);
	c->buf = NULL;
	c->out = -1;
	return status;
}

/* The next line of c's stdout, within timeout_ms; NULL on timeout or EOF. */
static char *read_line(child_t *c, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			char *line = malloc(n + 1);
			memcpy(line, c->buf, n);
			line[n] = '\0';
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return line;
		}
		uint64_t now = now_ms();
		if (now >= deadline)
			return NULL;
		struct pollfd p = { .fd = c->out, .events = POLLIN };
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? c->cap * 2 : 1 << 17;
			c->buf = realloc(c->buf, c->cap);
			ck_assert_ptr_nonnull(c->buf);
		}
		ssize_t r = read(c->out, c->buf + c->len, c->cap - c->len);
		if (r <= 0)
			return NULL;
		c->len += (size_t)r;
	}
}

static json_t *read_doc(child_t *c, int timeout_ms)
{
	char *line = read_line(c, timeout_ms);
	ck_assert_msg(line != NULL, "neuron-monitor printed no document within %d ms", timeout_ms);
	json_error_t je;
	json_t *doc = json_loads(line, 0, &je);
	ck_assert_msg(doc != NULL, "not JSON (%s): %.300s", je.text, line);
	free(line);
	return doc;
}

/* Runs argv to completion; returns the exit status, stdout and stderr (malloc'd). */
static int run(char *const argv[], char **out_stdout, char **out_stderr)
{
	char so[512], se[512];
	snprintf(so, sizeof(so), "%s/stdout", tmp);
	snprintf(se, sizeof(se), "%s/stderr", tmp);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	const char *paths[2] = { so, se };
	char **outs[2] = { out_stdout, out_stderr };
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "r");
		ck_assert_ptr_nonnull(f);
		char *buf = calloc(1, 1 << 20);
		size_t n = fread(buf, 1, (1 << 20) - 1, f);
		buf[n] = '\0';
		fclose(f);
		if (outs[i])
			*outs[i] = buf;
		else
			free(buf);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static json_t *wait_report(const char *path, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	while (access(path, F_OK) != 0) {
		ck_assert_msg(now_ms() < deadline, "the workload did not write %s", path);
		usleep(20000);
	}
	json_error_t je;
	json_t *r = json_load_file(path, 0, &je);
	ck_assert_msg(r != NULL, "%s: %s", path, je.text);
	return r;
}

static json_int_t rint_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	ck_assert_msg(json_is_integer(v), "report field %s missing", key);
	return json_integer_value(v);
}

/* ---- the schema, field by field ---- */

#define REQ(cond, ...) ck_assert_msg(cond, __VA_ARGS__)

static const json_t *get(const json_t *o, const char *key, json_type type, const char *where)
{
	REQ(json_is_object(o), "%s is not an object", where);
	const json_t *v = json_object_get(o, key);
	REQ(v != NULL, "%s.%s is missing", where, key);
	if (type == JSON_REAL)
		REQ(json_is_number(v), "%s.%s is not a number", where, key);
	else
		REQ(json_typeof(v) == type, "%s.%s has type %d, expected %d", where, key, json_typeof(v), type);
	return v;
}

static json_int_t get_count(const json_t *o, const char *key, const char *where)
{
	json_int_t v = json_integer_value(get(o, key, JSON_INTEGER, where));
	REQ(v >= 0, "%s.%s is negative", where, key);
	return v;
}

static double get_num(const json_t *o, const char *key, const char *where)
{
	return json_number_value(get(o, key, JSON_REAL, where));
}

/* Exactly these keys, no others. */
static void keys_are(const json_t *o, const char *where, const char *const *keys)
{
	size_t n = 0;
	for (; keys[n]; n++)
		REQ(json_object_get(o, keys[n]) != NULL, "%s.%s is missing", where, keys[n]);
	REQ(json_object_size(o) == n, "%s has %zu fields, expected %zu", where, json_object_size(o), n);
}

static void check_group_header(const json_t *g, const char *where)
{
	REQ(get_num(g, "period", where) >= 0.0, "%s.period is negative", where);
	get(g, "error", JSON_STRING, where);
}

static void check_percentiles(const json_t *p, const char *where)
{
	if (json_is_null(p))
		return;
	static const char *const keys[] = { "p0", "p1", "p25", "p50", "p75", "p99", "p100", NULL };
	keys_are(p, where, keys);
	double last = 0;
	for (int i = 0; keys[i]; i++) {
		double v = get_num(p, keys[i], where);
		REQ(v >= last, "%s.%s = %g is below the previous percentile %g", where, keys[i], v, last);
		REQ(v < 60.0, "%s.%s = %g s is not a plausible latency", where, keys[i], v);
		last = v;
	}
}

static void check_execution_stats(const json_t *g)
{
	const char *w = "execution_stats";
	check_group_header(g, w);
	static const char *const ek[] = { "generic", "numerical", "transient", "model", "runtime", "hardware", NULL };
	static const char *const sk[] = { "completed", "completed_with_err", "completed_with_num_err", "timed_out",
					  "incorrect_input", "failed_to_queue", NULL };
	const json_t *es = get(g, "error_summary", JSON_OBJECT, w);
	keys_are(es, "execution_stats.error_summary", ek);
	json_int_t errs = 0, fails = 0;
	for (int i = 0; ek[i]; i++)
		errs += get_count(es, ek[i], "execution_stats.error_summary");
	const json_t *xs = get(g, "execution_summary", JSON_OBJECT, w);
	keys_are(xs, "execution_stats.execution_summary", sk);
	for (int i = 1; sk[i]; i++)
		fails += get_count(xs, sk[i], "execution_stats.execution_summary");
	get_count(xs, "completed", "execution_stats.execution_summary");
	/* Every failed execution has exactly one error kind. */
	REQ(errs == fails, "error_summary sums to %lld, failed executions %lld", (long long)errs, (long long)fails);
	const json_t *ls = get(g, "latency_stats", JSON_OBJECT, w);
	const json_t *tl = json_object_get(ls, "total_latency"), *dl = json_object_get(ls, "device_latency");
	REQ(tl && dl && json_object_size(ls) == 2, "latency_stats needs total_latency and device_latency");
	check_percentiles(tl, "latency_stats.total_latency");
	check_percentiles(dl, "latency_stats.device_latency");
	if (json_is_object(tl) && json_is_object(dl))
		REQ(get_num(dl, "p0", "device_latency") <= get_num(tl, "p100", "total_latency"),
		    "device latency above total latency");
}

static void check_memory_used(const json_t *g)
{
	const char *w = "memory_used";
	check_group_header(g, w);
	const json_t *u = get(g, "neuron_runtime_used_bytes", JSON_OBJECT, w);
	json_int_t host = get_count(u, "host", "neuron_runtime_used_bytes");
	json_int_t dev = get_count(u, "neuron_device", "neuron_runtime_used_bytes");
	const json_t *b = get(u, "usage_breakdown", JSON_OBJECT, "neuron_runtime_used_bytes");
	static const char *const hk[] = { "application_memory", "constants", "dma_buffers", "tensors",
					  "snapshot_copies", NULL };
	static const char *const dk[] = { "constants", "model_code", "model_shared_scratchpad", "runtime_memory",
					  "tensors", "snapshot_copies", NULL };
	const json_t *bh = get(b, "host", JSON_OBJECT, "usage_breakdown");
	const json_t *bd = get(b, "neuron_device", JSON_OBJECT, "usage_breakdown");
	keys_are(bh, "usage_breakdown.host", hk);
	keys_are(bd, "usage_breakdown.neuron_device", dk);
	json_int_t sh = 0, sd = 0;
	for (int i = 0; hk[i]; i++)
		sh += get_count(bh, hk[i], "usage_breakdown.host");
	for (int i = 0; dk[i]; i++)
		sd += get_count(bd, dk[i], "usage_breakdown.neuron_device");
	REQ(sh == host, "host %lld != its breakdown %lld", (long long)host, (long long)sh);
	REQ(sd == dev, "neuron_device %lld != its breakdown %lld", (long long)dev, (long long)sd);
	/* The documented per-core breakdown: every core with the five categories
	 * (snapshot_copies added), summing to the process's device memory. */
	const json_t *nm = get(b, "neuroncore_memory_usage", JSON_OBJECT, "usage_breakdown");
	REQ(json_object_size(nm) > 0, "usage_breakdown.neuroncore_memory_usage lists no core");
	json_int_t sc = 0;
	const char *key;
	const json_t *c;
	json_object_foreach((json_t *)nm, key, c) {
		char *end;
		strtoul(key, &end, 10);
		REQ(*key && !*end, "neuroncore_memory_usage key '%s' is not a core index", key);
		keys_are(c, "usage_breakdown.neuroncore_memory_usage.<core>", dk);
		for (int i = 0; dk[i]; i++)
			sc += get_count(c, dk[i], "usage_breakdown.neuroncore_memory_usage.<core>");
	}
	REQ(sc == dev, "neuron_device %lld != the sum over neuroncore_memory_usage %lld", (long long)dev,
	    (long long)sc);
	/* loaded_models: the Neuron tool's fields in every entry */
	const json_t *lm = get(g, "loaded_models", JSON_ARRAY, w);
	size_t i;
	const json_t *m;
	json_array_foreach((json_t *)lm, i, m) {
		get(m, "name", JSON_STRING, "loaded_models[]");
		get(m, "uuid", JSON_STRING, "loaded_models[]");
		REQ(json_is_boolean(json_object_get(m, "is_running")), "loaded_models[%zu].is_running is not a boolean", i);
		get_count(m, "model_id", "loaded_models[]");
		const json_t *sgs = get(m, "subgraphs", JSON_OBJECT, "loaded_models[]");
		REQ(json_object_size(sgs) > 0, "loaded_models[%zu].subgraphs is empty", i);
		const json_t *sg;
		json_object_foreach((json_t *)sgs, key, sg) {
			get_count(sg, "neuroncore_index", "loaded_models[].subgraphs.<sg>");
			get_count(sg, "neuron_device_index", "loaded_models[].subgraphs.<sg>");
			const json_t *mb = get(sg, "memory_used_bytes", JSON_OBJECT, "loaded_models[].subgraphs.<sg>");
			get_count(mb, "neuron_device", "memory_used_bytes");
		}
	}
	get_count(g, "loaded_models_not_listed", w);
}

static void check_neuroncore_counters(const json_t *g)
{
	check_group_header(g, "neuroncore_counters");
	const json_t *cores = get(g, "neuroncores_in_use", JSON_OBJECT, "neuroncore_counters");
	const char *key;
	const json_t *c;
	json_object_foreach((json_t *)cores, key, c) {
		char *end;
		strtoul(key, &end, 10);
		REQ(*key && !*end, "neuroncores_in_use key '%s' is not a core index", key);
		double u = get_num(c, "neuroncore_utilization", "neuroncores_in_use");
		REQ(u >= 0.0 && u <= 100.0, "utilisation %g outside 0..100", u);
		/* FLOP/s over the period, an integer: the embedded backend counts them */
		const json_t *f = json_object_get(c, "flops");
		REQ(json_is_integer(f) && json_integer_value(f) >= 0,
		    "neuroncores_in_use.%s.flops is not a number of FLOP/s", key);
	}
}

static void check_vcpu_object(const json_t *o, const char *where)
{
	static const char *const k[] = { "user", "nice", "system", "idle", "io_wait", "irq", "soft_irq", NULL };
	keys_are(o, where, k);
	double sum = 0;
	for (int i = 0; k[i]; i++)
		sum += get_num(o, k[i], where);
	REQ(sum == 0.0 || (sum > 99.0 && sum < 101.0), "%s sums to %g%%", where, sum);
}

static void check_document(const json_t *doc)
{
	static const char *const top[] = { "neuron_runtime_data", "system_data", "instance_info",
					   "neuron_hardware_info", NULL };
	keys_are(doc, "document", top);
	const json_t *rts = get(doc, "neuron_runtime_data", JSON_ARRAY, "document");
	size_t i;
	const json_t *rt;
	json_array_foreach(rts, i, rt) {
		static const char *const rk[] = { "pid", "address", "neuron_runtime_tag", "error", "report", NULL };
		keys_are(rt, "neuron_runtime_data[]", rk);
		REQ(get_count(rt, "pid", "neuron_runtime_data[]") > 0, "pid is 0");
		get(rt, "address", JSON_STRING, "neuron_runtime_data[]");
		get(rt, "neuron_runtime_tag", JSON_STRING, "neuron_runtime_data[]");
		get(rt, "error", JSON_STRING, "neuron_runtime_data[]");
		const json_t *rep = get(rt, "report", JSON_OBJECT, "neuron_runtime_data[]");
		const json_t *g;
		if ((g = json_object_get(rep, "execution_stats")))
			check_execution_stats(g);
		if ((g = json_object_get(rep, "memory_used")))
			check_memory_used(g);
		if ((g = json_object_get(rep, "neuroncore_counters")))
			check_neuroncore_counters(g);
		if ((g = json_object_get(rep, "neuron_runtime_vcpu_usage"))) {
			check_group_header(g, "neuron_runtime_vcpu_usage");
			const json_t *v = get(g, "vcpu_usage", JSON_OBJECT, "neuron_runtime_vcpu_usage");
			REQ(get_num(v, "user", "vcpu_usage") >= 0 && get_num(v, "system", "vcpu_usage") >= 0,
			    "negative vcpu usage");
		}
	}
	const json_t *sys = get(doc, "system_data", JSON_OBJECT, "document");
	const json_t *g;
	if ((g = json_object_get(sys, "vcpu_usage"))) {
		check_group_header(g, "vcpu_usage");
		check_vcpu_object(get(g, "average_usage", JSON_OBJECT, "vcpu_usage"), "vcpu_usage.average_usage");
		const json_t *per = get(g, "usage_data", JSON_OBJECT, "vcpu_usage");
		REQ(json_object_size(per) > 0, "vcpu_usage.usage_data is empty");
		const char *key;
		const json_t *c;
		json_object_foreach((json_t *)per, key, c)
			check_vcpu_object(c, "vcpu_usage.usage_data[]");
		get_count(g, "context_switch_count", "vcpu_usage");
	}
	if ((g = json_object_get(sys, "memory_info"))) {
		check_group_header(g, "memory_info");
		json_int_t total = get_count(g, "memory_total_bytes", "memory_info");
		REQ(total > 0, "memory_total_bytes is 0");
		REQ(get_count(g, "memory_used_bytes", "memory_info") <= total, "more memory used than there is");
		REQ(get_count(g, "swap_used_bytes", "memory_info") <= get_count(g, "swap_total_bytes", "memory_info"),
		    "more swap used than there is");
	}
	if ((g = json_object_get(sys, "neuron_hw_counters"))) {
		check_group_header(g, "neuron_hw_counters");
		const json_t *devs = get(g, "neuron_devices", JSON_ARRAY, "neuron_hw_counters");
		const json_t *d;
		json_array_foreach(devs, i, d) {
			get_count(d, "neuron_device_index", "neuron_devices[]");
			static const char *const ecc[] = { "mem_ecc_corrected", "mem_ecc_uncorrected",
							   "sram_ecc_uncorrected", "sram_ecc_corrected", NULL };
			for (int k = 0; ecc[k]; k++)
				REQ(get_count(d, ecc[k], "neuron_devices[]") == 0, "ECC counter %s is not 0", ecc[k]);
			get(d, "neuronsim", JSON_OBJECT, "neuron_devices[]");
		}
	}
	const json_t *ii = get(doc, "instance_info", JSON_OBJECT, "document");
	static const char *const ik[] = { "instance_name", "instance_id", "instance_type", "instance_availability_zone",
					  "instance_availability_zone_id", "instance_region", "ami_id", "subnet_id",
					  "error", NULL };
	keys_are(ii, "instance_info", ik);
	for (int k = 0; ik[k]; k++)
		get(ii, ik[k], JSON_STRING, "instance_info");
	const json_t *hw = get(doc, "neuron_hardware_info", JSON_OBJECT, "document");
	get(hw, "neuron_device_type", JSON_STRING, "neuron_hardware_info");
	get(hw, "neuron_device_version", JSON_STRING, "neuron_hardware_info");
	get(hw, "neuroncore_version", JSON_STRING, "neuron_hardware_info");
	get_count(hw, "neuron_device_count", "neuron_hardware_info");
	get_count(hw, "neuron_device_memory_size", "neuron_hardware_info");
	get_count(hw, "neuroncore_per_device_count", "neuron_hardware_info");
	get_count(hw, "logical_neuroncore_config", "neuron_hardware_info");
	get(hw, "error", JSON_STRING, "neuron_hardware_info");
}

static const json_t *runtime_of(const json_t *doc, json_int_t pid)
{
	size_t i;
	const json_t *rt;
	json_array_foreach(json_object_get(doc, "neuron_runtime_data"), i, rt)
		if (json_integer_value(json_object_get(rt, "pid")) == pid)
			return rt;
	return NULL;
}

static const json_t *group_of(const json_t *rt, const char *name)
{
	return json_object_get(json_object_get(rt, "report"), name);
}

static json_int_t field(const json_t *g, const char *obj, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(g, obj), key));
}

/* Reads documents until one no longer lists pid (those already in the pipe may). */
static void wait_gone(child_t *mon, pid_t pid)
{
	uint64_t deadline = now_ms() + 60000;
	for (;;) {
		json_t *doc = read_doc(mon, 20000);
		bool listed = runtime_of(doc, pid) != NULL;
		json_decref(doc);
		if (!listed)
			return;
		ck_assert_msg(now_ms() < deadline, "pid %d still listed 60 s after it ended", (int)pid);
	}
}

/* A uuid as the Neuron tool prints one: 32 lower-case hex digits of a
 * version 4 UUID (RFC 4122 variant), no dashes. */
static void check_uuid(const char *u)
{
	ck_assert_ptr_nonnull(u);
	ck_assert_msg(strlen(u) == 32 && strspn(u, "0123456789abcdef") == 32, "uuid '%s'", u);
	ck_assert_msg(u[12] == '4' && strchr("89ab", u[16]), "uuid '%s' is not a version 4 UUID", u);
}

/* ---- tests ---- */

START_TEST(test_monitor_documents_follow_the_schema_and_count_every_execution)
{
	char cfg[512], report[512];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	snprintf(report, sizeof(report), "%s/report.json", tmp);
	write_text(cfg, "{\"period\": \"200ms\", \"neuron_runtimes\": [{\"tag_filter\": \"^wl_\", \"metrics\": ["
			"{\"type\": \"neuroncore_counters\"}, {\"type\": \"execution_stats\"}, {\"type\": \"memory_used\"},"
			"{\"type\": \"neuron_runtime_vcpu_usage\"}]}],"
			"\"system_metrics\": [{\"type\": \"vcpu_usage\"}, {\"type\": \"memory_info\"},"
			"{\"type\": \"neuron_hw_counters\"}]}");
	char *margv[] = { (char *)monitor_bin, "-c", cfg, NULL };
	child_t mon = spawn(margv, NULL, true);
	json_t *doc = read_doc(&mon, 20000);
	check_document(doc);
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "neuron_runtime_data")), 0);
	/* No kernel device: said in neuron_hardware_info.error, none listed. */
	const json_t *hw = json_object_get(doc, "neuron_hardware_info");
	ck_assert_int_eq(json_integer_value(json_object_get(hw, "neuron_device_count")), 0);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(hw, "error")), "no kernel device"));
	json_decref(doc);

	/* 300 executions: a NaN every 10th, a missing input every 25th (which wins). */
	char *wargv[] = { (char *)workload_bin, "-n", "300", "-r", "1000", "-e", "10", "-b", "25", "-H", "-o", report,
			  "-2", "2", NULL };
	const char *wenv[] = { "NEURON_PROCESS_TAG=wl_a", NULL };
	child_t wl = spawn(wargv, wenv, false);
	/* Filtered out by tag_filter: never reported. */
	char *oargv[] = { (char *)workload_bin, "-n", "20", "-H", NULL };
	const char *oenv[] = { "NEURON_PROCESS_TAG=other", NULL };
	child_t other = spawn(oargv, oenv, false);

	json_int_t sum[6] = { 0 }, errs[6] = { 0 };
	static const char *const sk[] = { "completed", "completed_with_err", "completed_with_num_err", "timed_out",
					  "incorrect_input", "failed_to_queue" };
	static const char *const ek[] = { "generic", "numerical", "transient", "model", "runtime", "hardware" };
	bool saw_latency = false;
	/* FLOPs per core: each document's flops (a rate) times its period */
	double flops[4] = { 0 }, flops_err = 0;
	json_t *last = NULL;
	uint64_t deadline = now_ms() + 120000;
	while (sum[0] + sum[2] + sum[4] < 300) {
		ck_assert_msg(now_ms() < deadline, "after 120 s the documents counted %lld of 300 executions",
			      (long long)(sum[0] + sum[2] + sum[4]));
		doc = read_doc(&mon, 20000);
		check_document(doc);
		ck_assert_ptr_null(runtime_of(doc, other.pid));
		const json_t *rt = runtime_of(doc, wl.pid);
		if (rt) {
			ck_assert_str_eq(json_string_value(json_object_get(rt, "neuron_runtime_tag")), "wl_a");
			const json_t *es = group_of(rt, "execution_stats");
			ck_assert_ptr_nonnull(es);
			for (int k = 0; k < 6; k++) {
				sum[k] += field(es, "execution_summary", sk[k]);
				errs[k] += field(es, "error_summary", ek[k]);
			}
			if (json_is_object(json_object_get(json_object_get(es, "latency_stats"), "total_latency")))
				saw_latency = true;
			const json_t *nc = json_object_get(group_of(rt, "neuroncore_counters"), "neuroncores_in_use");
			ck_assert_uint_eq(json_object_size(nc), 4);
			ck_assert_ptr_nonnull(json_object_get(nc, "0"));
			double period = json_number_value(json_object_get(group_of(rt, "neuroncore_counters"),
									  "period"));
			for (int c = 0; c < 4; c++) {
				char key[4];
				snprintf(key, sizeof(key), "%d", c);
				flops[c] += (double)field(nc, key, "flops") * period;
			}
			flops_err += 0.5 * period; /* each rate is rounded to an integer */
			ck_assert_ptr_nonnull(group_of(rt, "memory_used"));
			ck_assert_ptr_nonnull(group_of(rt, "neuron_runtime_vcpu_usage"));
		}
		json_decref(last);
		last = doc;
	}
	/* Per period counts: summed over the documents, each execution exactly once. */
	ck_assert_int_eq(sum[0], 264);
	ck_assert_int_eq(sum[1], 0);
	ck_assert_int_eq(sum[2], 24);
	ck_assert_int_eq(sum[3], 0);
	ck_assert_int_eq(sum[4], 12);
	ck_assert_int_eq(sum[5], 0);
	ck_assert_int_eq(errs[0], 12);
	ck_assert_int_eq(errs[1], 24);
	for (int k = 2; k < 6; k++)
		ck_assert_int_eq(errs[k], 0);
	ck_assert(saw_latency);
	/* flops is FLOP/s over the period (the SDK's neuron-monitor guide):
	 * rate times period, summed over the documents, gives back abs and sqrt
	 * of 16 f32 (32) for each of the 288 executions that ran (the 24 NaN
	 * ones too, not the 12 refused), all on core 0, within the rounding of
	 * each rate; the const_scratch model on core 2 never runs. Counts per
	 * period instead of rates would sum to a fifth of it (200 ms periods). */
	ck_assert_msg(fabs(flops[0] - 288 * 32) <= flops_err + 1e-6, "FLOP/s x period summed to %.3f, not %d (+-%.3f)",
		      flops[0], 288 * 32, flops_err);
	for (int c = 1; c < 4; c++)
		ck_assert(flops[c] == 0);

	/* Memory as the process itself reports it (stable while it holds). */
	json_t *rep = wait_report(report, 60000);
	ck_assert_int_eq(rint_of(rep, "executions"), 300);
	json_decref(last);
	last = read_doc(&mon, 20000);
	const json_t *mu = group_of(runtime_of(last, wl.pid), "memory_used");
	ck_assert_ptr_nonnull(mu);
	const json_t *used = json_object_get(mu, "neuron_runtime_used_bytes");
	const json_t *dev = json_object_get(json_object_get(used, "usage_breakdown"), "neuron_device");
	const json_t *cats = json_object_get(rep, "memory_by_category");
	ck_assert_int_eq(json_integer_value(json_object_get(used, "neuron_device")), rint_of(rep, "memory_in_use"));
	ck_assert_int_eq(json_integer_value(json_object_get(dev, "tensors")), rint_of(cats, "tensors"));
	ck_assert_int_eq(json_integer_value(json_object_get(dev, "model_code")), rint_of(cats, "code"));
	ck_assert_int_eq(json_integer_value(json_object_get(dev, "constants")), rint_of(cats, "constants"));
	ck_assert_int_eq(json_integer_value(json_object_get(dev, "snapshot_copies")), rint_of(cats, "snapshot"));
	ck_assert_int_gt(json_integer_value(json_object_get(dev, "tensors")), 0);
	/* Per core, each core's own: the sqrt model and its three 16-float
	 * tensors on core 0, the const_scratch model and one 4-float tensor on
	 * core 2, nothing on 1 and 3 (check_document checked the sums). */
	const json_t *ncm = json_object_get(json_object_get(used, "usage_breakdown"), "neuroncore_memory_usage");
	ck_assert_uint_eq(json_object_size(ncm), 4);
	ck_assert_int_gt(field(ncm, "0", "tensors"), field(ncm, "2", "tensors"));
	ck_assert_int_gt(field(ncm, "2", "tensors"), 0);
	ck_assert_int_eq(field(ncm, "0", "tensors") + field(ncm, "2", "tensors"), rint_of(cats, "tensors"));
	ck_assert_int_gt(field(ncm, "0", "model_code"), 0);
	ck_assert_int_gt(field(ncm, "2", "model_code"), 0);
	ck_assert_int_eq(field(ncm, "0", "model_code") + field(ncm, "2", "model_code"), rint_of(cats, "code"));
	ck_assert_int_eq(field(ncm, "2", "constants"), rint_of(cats, "constants"));
	ck_assert_int_gt(field(ncm, "2", "constants"), 0);
	static const char *const idle[] = { "1", "3" };
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(field(ncm, idle[i], "tensors"), 0);
		ck_assert_int_eq(field(ncm, idle[i], "model_code"), 0);
		ck_assert_int_eq(field(ncm, idle[i], "constants"), 0);
	}
	/* loaded_models: both, in load order, each one subgraph on its core
	 * holding what that core's model memory is */
	const json_t *lm = json_object_get(mu, "loaded_models");
	ck_assert_msg(json_is_array(lm) && json_array_size(lm) == 2, "loaded_models: %zu entries",
		      json_array_size(lm));
	static const struct { const char *name, *core; } want_models[] = { { "sqrt", "0" }, { "const_scratch", "2" } };
	for (size_t i = 0; i < 2; i++) {
		const json_t *m = json_array_get(lm, i);
		ck_assert_str_eq(json_string_value(json_object_get(m, "name")), want_models[i].name);
		check_uuid(json_string_value(json_object_get(m, "uuid")));
		ck_assert(json_is_false(json_object_get(m, "is_running")));
		ck_assert_int_eq(json_integer_value(json_object_get(m, "model_id")), (json_int_t)i);
		const json_t *sgs = json_object_get(m, "subgraphs");
		ck_assert_uint_eq(json_object_size(sgs), 1);
		const json_t *sg = json_object_get(sgs, "sg_00");
		ck_assert_ptr_nonnull(sg);
		ck_assert_int_eq(json_integer_value(json_object_get(sg, "neuroncore_index")),
				 strtol(want_models[i].core, NULL, 10));
		ck_assert_int_eq(json_integer_value(json_object_get(sg, "neuron_device_index")), 0);
		const json_t *sgu = json_object_get(sg, "memory_used_bytes");
		const json_t *sgd = json_object_get(json_object_get(sgu, "usage_breakdown"), "neuron_device");
		ck_assert_int_eq(json_integer_value(json_object_get(sgd, "model_code")), field(ncm, want_models[i].core, "model_code"));
		ck_assert_int_eq(json_integer_value(json_object_get(sgd, "constants")), field(ncm, want_models[i].core, "constants"));
		ck_assert_int_eq(json_integer_value(json_object_get(sgd, "model_shared_scratchpad")),
				 field(ncm, want_models[i].core, "model_shared_scratchpad"));
		ck_assert_int_eq(json_integer_value(json_object_get(sgu, "neuron_device")),
				 json_integer_value(json_object_get(sgd, "model_code")) + json_integer_value(json_object_get(sgd, "constants")) +
				 json_integer_value(json_object_get(sgd, "model_shared_scratchpad")));
		const json_t *cores = json_object_get(m, "neuroncores");
		ck_assert_uint_eq(json_array_size(cores), 1);
		ck_assert_int_eq(json_integer_value(json_array_get(cores, 0)), strtol(want_models[i].core, NULL, 10));
	}
	ck_assert_int_eq(json_integer_value(json_object_get(mu, "loaded_models_not_listed")), 0);
	/* The embedded backend's devices as the running processes simulate them. */
	const json_t *hwi = json_object_get(last, "neuron_hardware_info");
	ck_assert_int_eq(json_integer_value(json_object_get(hwi, "neuron_device_count")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(hwi, "neuroncore_per_device_count")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(hwi, "neuron_device_memory_size")),
			 rint_of(rep, "memory_total"));
	ck_assert_str_eq(json_string_value(json_object_get(hwi, "error")), "");
	/* Idle now: nothing in this period, no latency. */
	const json_t *es = group_of(runtime_of(last, wl.pid), "execution_stats");
	ck_assert_int_eq(field(es, "execution_summary", "completed"), 0);
	ck_assert(json_is_null(json_object_get(json_object_get(es, "latency_stats"), "total_latency")));
	json_decref(rep);
	json_decref(last);

	/* A process that ends cleanly leaves the documents. */
	ck_assert_int_eq(finish(&wl, SIGTERM), 0);
	ck_assert_int_eq(finish(&other, SIGTERM), 0);
	wait_gone(&mon, wl.pid);
	finish(&mon, SIGTERM);
}
END_TEST

/* The memory_used group's loaded_models of pid in doc, or NULL. */
static const json_t *models_of(const json_t *doc, pid_t pid)
{
	const json_t *rt = runtime_of(doc, pid);
	return rt ? json_object_get(group_of(rt, "memory_used"), "loaded_models") : NULL;
}

/* loaded_models' is_running follows an execution in progress, and every
 * model keeps one uuid of its own for as long as it is loaded. */
START_TEST(test_monitor_loaded_models_is_running_and_uuid)
{
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	write_text(cfg, "{\"period\": 0.2, \"neuron_runtimes\": [{\"metrics\": [{\"type\": \"memory_used\"}]}]}");
	/* sqrt on core 0 (5 executions), const_scratch on core 2 (never run),
	 * then the spin model on core 1, running until its 3 s timeout */
	char *wargv[] = { (char *)workload_bin, "-n", "5", "-2", "2", "-s", "1", "-H", NULL };
	const char *wenv[] = { "NEURON_RT_EXEC_TIMEOUT=3", NULL };
	child_t wl = spawn(wargv, wenv, false);
	char *margv[] = { (char *)monitor_bin, "-c", cfg, NULL };
	child_t mon = spawn(margv, NULL, true);
	static const char *const names[3] = { "sqrt", "const_scratch", "spin" };
	char uuids[3][40] = { "", "", "" };
	bool saw_running = false, saw_stopped = false;
	uint64_t deadline = now_ms() + 60000;
	while (!saw_stopped) {
		ck_assert_msg(now_ms() < deadline, "60 s: spin %s", saw_running ? "never stopped running"
										 : "never seen running");
		json_t *doc = read_doc(&mon, 20000);
		check_document(doc);
		const json_t *lm = models_of(doc, wl.pid);
		if (!lm || json_array_size(lm) < 3) {
			json_decref(doc);
			continue;
		}
		ck_assert_uint_eq(json_array_size(lm), 3);
		for (size_t i = 0; i < 3; i++) {
			const json_t *m = json_array_get(lm, i);
			ck_assert_str_eq(json_string_value(json_object_get(m, "name")), names[i]);
			const char *u = json_string_value(json_object_get(m, "uuid"));
			check_uuid(u);
			if (!uuids[i][0])
				snprintf(uuids[i], sizeof(uuids[i]), "%s", u);
			ck_assert_str_eq(u, uuids[i]); /* stable while loaded */
			const json_t *r = json_object_get(m, "is_running");
			ck_assert_msg(json_is_boolean(r), "loaded_models[%zu].is_running is not a boolean", i);
			if (i < 2)
				ck_assert_msg(!json_is_true(r), "%s is_running with no execution", names[i]);
			else if (json_is_true(r))
				saw_running = true;
			else if (saw_running)
				saw_stopped = true;
		}
		json_decref(doc);
	}
	/* a uuid of its own per model */
	ck_assert_str_ne(uuids[0], uuids[1]);
	ck_assert_str_ne(uuids[0], uuids[2]);
	ck_assert_str_ne(uuids[1], uuids[2]);
	finish(&wl, SIGTERM);
	finish(&mon, SIGTERM);
}
END_TEST

START_TEST(test_monitor_forgets_a_killed_process_and_removes_its_file)
{
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	write_text(cfg, "{\"period\": 0.2, \"neuron_runtimes\": [{\"metrics\": [{\"type\": \"execution_stats\"}]}]}");
	char *wargv[] = { (char *)workload_bin, "-n", "5", "-H", NULL };
	child_t wl = spawn(wargv, NULL, false);
	char *margv[] = { (char *)monitor_bin, "-c", cfg, NULL };
	child_t mon = spawn(margv, NULL, true);
	uint64_t deadline = now_ms() + 60000; /* generous: a loaded machine (ASan, -j2) */
	json_t *doc = NULL;
	for (;;) {
		doc = read_doc(&mon, 20000);
		check_document(doc);
		if (runtime_of(doc, wl.pid))
			break;
		json_decref(doc);
		ck_assert_msg(now_ms() < deadline, "the workload never showed up");
	}
	/* Without a tag, the pid is the tag (as the Neuron tool does). */
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)wl.pid);
	ck_assert_str_eq(json_string_value(json_object_get(runtime_of(doc, wl.pid), "neuron_runtime_tag")), pid);
	/* Runtime groups not asked for are absent; system groups too. */
	ck_assert_ptr_null(group_of(runtime_of(doc, wl.pid), "memory_used"));
	ck_assert_uint_eq(json_object_size(json_object_get(doc, "system_data")), 0);
	json_decref(doc);

	char path[600];
	snprintf(path, sizeof(path), "%s/neuronsim-stats.%u.%d", stats_dir, (unsigned)geteuid(), (int)wl.pid);
	ck_assert_int_eq(access(path, F_OK), 0);
	finish(&wl, SIGKILL);
	ck_assert_int_eq(access(path, F_OK), 0);
	wait_gone(&mon, wl.pid);
	ck_assert_int_eq(access(path, F_OK), -1);
	finish(&mon, SIGTERM);
}
END_TEST

/* Replaced in one step, as sysfs shows a value: never half-written. */
static void fake_attr(const char *dir, const char *name, const char *value)
{
	char path[700], t[720];
	ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s", dir, name), (int)sizeof(path));
	ck_assert_int_lt(snprintf(t, sizeof(t), "%s/%s.new", dir, name), (int)sizeof(t));
	write_text(t, value);
	ck_assert_int_eq(rename(t, path), 0);
}

/* A device directory as driver/nsim_sysfs.c creates it. */
static void fake_device(unsigned idx, unsigned cores, unsigned long long submitted, const char *mem_size)
{
	static const char *const jobs[] = { "jobs_success", "jobs_failure", "jobs_timeout", "jobs_num_err",
					    "jobs_oob", "jobs_fw_lost", "jobs_dropped" };
	char d[600], v[64];
	snprintf(d, sizeof(d), "%s/neuronsim%u", sysfs_dir, idx);
	mkdir(sysfs_dir, 0755);
	mkdir(d, 0755);
	fake_attr(d, "abi_version", "1.0\n");
	snprintf(v, sizeof(v), "%u\n", cores);
	fake_attr(d, "num_cores", v);
	fake_attr(d, "mem_size", mem_size);
	fake_attr(d, "mem_in_use", "8192\n");
	fake_attr(d, "mem_peak", "16384\n");
	fake_attr(d, "cores_reserved", "1\n");
	fake_attr(d, "fw_attached", "1\n");
	fake_attr(d, "null_hw", "0\n");
	snprintf(v, sizeof(v), "%llu\n", submitted);
	fake_attr(d, "jobs_submitted", v);
	for (size_t k = 0; k < sizeof(jobs) / sizeof(jobs[0]); k++)
		fake_attr(d, jobs[k], k == 3 ? "2\n" : "0\n");
	for (unsigned c = 0; c < cores; c++) {
		char cd[700];
		snprintf(cd, sizeof(cd), "%s/core%u", d, c);
		mkdir(cd, 0755);
		fake_attr(cd, "reserved", c == 0 ? "1\n" : "0\n");
		fake_attr(cd, "owner_pid", c == 0 ? "4242\n" : "0\n");
		fake_attr(cd, "queued", "0\n");
		fake_attr(cd, "running", "0\n");
		fake_attr(cd, "jobs_submitted", v);
		for (size_t k = 0; k < sizeof(jobs) / sizeof(jobs[0]); k++)
			fake_attr(cd, jobs[k], "0\n");
	}
}

START_TEST(test_monitor_reads_kernel_devices_from_sysfs)
{
	fake_device(0, 2, 100, "1073741824\n");
	fake_device(1, 1, 0, "lots\n");
	/* The firmware node of the same class is not a device. */
	char fw[600];
	snprintf(fw, sizeof(fw), "%s/neuronsim-fw0", sysfs_dir);
	mkdir(fw, 0755);
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	write_text(cfg, "{\"system_metrics\": [{\"type\": \"neuron_hw_counters\", \"period\": \"200ms\"}]}");
	char *margv[] = { (char *)monitor_bin, "-c", cfg, NULL };
	child_t mon = spawn(margv, NULL, true);
	json_t *doc = read_doc(&mon, 20000);
	check_document(doc);
	const json_t *hw = json_object_get(doc, "neuron_hardware_info");
	ck_assert_int_eq(json_integer_value(json_object_get(hw, "neuron_device_count")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(hw, "neuron_device_memory_size")), 1073741824);
	ck_assert_int_eq(json_integer_value(json_object_get(hw, "neuroncore_per_device_count")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(hw, "error")), "");
	const json_t *devs = json_object_get(json_object_get(json_object_get(doc, "system_data"), "neuron_hw_counters"),
					     "neuron_devices");
	ck_assert_uint_eq(json_array_size(devs), 2);
	const json_t *d0 = json_object_get(json_array_get(devs, 0), "neuronsim");
	const json_t *d1 = json_object_get(json_array_get(devs, 1), "neuronsim");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(devs, 1), "neuron_device_index")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(d0, "mem_in_use")), 8192);
	ck_assert(json_is_true(json_object_get(d0, "fw_attached")));
	ck_assert_str_eq(json_string_value(json_object_get(d0, "error")), "");
	/* A malformed attribute is reported on its device, not a crash. */
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(d1, "error")), "mem_size"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(d1, "error")), "is not a number"));
	json_decref(doc);

	/* The job counters are per period: 40 more jobs show up once. */
	char d[600];
	snprintf(d, sizeof(d), "%s/neuronsim0", sysfs_dir);
	fake_attr(d, "jobs_submitted", "140\n");
	/* Documents printed before the change may still be in the pipe (a test
	 * descheduled for a few periods): read until the 40 jobs show up, then two
	 * more periods must add none. The deadline only ends a failing test. */
	long long seen = 0;
	uint64_t deadline = now_ms() + 60000;
	for (int after = 0; after < 2;) {
		doc = read_doc(&mon, 20000);
		const json_t *dv = json_array_get(json_object_get(json_object_get(json_object_get(doc, "system_data"),
									      "neuron_hw_counters"), "neuron_devices"), 0);
		seen += json_integer_value(json_object_get(json_object_get(json_object_get(dv, "neuronsim"), "jobs"),
							   "jobs_submitted"));
		json_decref(doc);
		if (seen > 0)
			after++;
		ck_assert_msg(seen > 0 || now_ms() < deadline, "the 40 new jobs never showed up");
	}
	ck_assert_int_eq(seen, 40);
	finish(&mon, SIGTERM);
}
END_TEST

START_TEST(test_monitor_default_config_and_count)
{
	char *margv[] = { (char *)monitor_bin, "-n", "1", NULL };
	char *out, *err;
	uint64_t t0 = now_ms();
	ck_assert_int_eq(run(margv, &out, &err), 0);
	/* The default period is 5 s. */
	ck_assert_uint_ge(now_ms() - t0, 4900);
	json_error_t je;
	json_t *doc = json_loads(out, 0, &je);
	ck_assert_msg(doc != NULL, "%s", je.text);
	check_document(doc);
	const json_t *sys = json_object_get(doc, "system_data");
	ck_assert_ptr_nonnull(json_object_get(sys, "vcpu_usage"));
	ck_assert_ptr_nonnull(json_object_get(sys, "memory_info"));
	ck_assert_ptr_nonnull(json_object_get(sys, "neuron_hw_counters"));
	double period = json_number_value(json_object_get(json_object_get(sys, "memory_info"), "period"));
	ck_assert(period > 4.5 && period < 7.0);
	json_decref(doc);
	free(out);
	free(err);
}
END_TEST

typedef struct bad_config {
	const char *text;         /* NULL: a file that does not exist */
	const char *expect;
} bad_config_t;

START_TEST(test_monitor_rejects_bad_configs_naming_the_field)
{
	static const bad_config_t cases[] = {
		{ "{", "line 1" },
		{ "[]", "must be a JSON object" },
		{ "{\"perod\": \"1s\"}", "unknown field \"perod\" in the top-level object" },
		{ "{\"period\": \"5x\"}", "\"period\": \"5x\" is not a period" },
		{ "{\"period\": \"1ms\"}", "\"period\": \"1ms\" is not a period" },
		{ "{\"period\": true}", "\"period\": true is not a period" },
		{ "{\"period\": \"1s\", \"period\": \"2s\"}", "duplicate object key" },
		{ "{\"neuron_runtimes\": {}}", "neuron_runtimes must be an array" },
		{ "{\"neuron_runtimes\": [{}]}", "neuron_runtimes[0].metrics is missing" },
		{ "{\"neuron_runtimes\": [3]}", "neuron_runtimes[0] must be an object" },
		{ "{\"neuron_runtimes\": [{\"metrics\": [], \"filter\": \"x\"}]}",
		  "unknown field \"filter\" in neuron_runtimes[0]" },
		{ "{\"neuron_runtimes\": [{\"metrics\": {}}]}", "neuron_runtimes[0].metrics must be an array" },
		{ "{\"neuron_runtimes\": [{\"metrics\": [{\"period\": \"1s\"}]}]}",
		  "neuron_runtimes[0].metrics[0].type is missing" },
		{ "{\"neuron_runtimes\": [{\"metrics\": [{\"type\": \"gpu_stats\"}]}]}",
		  "neuron_runtimes[0].metrics[0].type \"gpu_stats\" is not a neuron_runtimes metric group" },
		{ "{\"neuron_runtimes\": [{\"metrics\": [{\"type\": \"memory_info\"}]}]}", "belongs in the other list" },
		{ "{\"neuron_runtimes\": [{\"metrics\": [{\"type\": \"memory_used\"}, {\"type\": \"memory_used\"}]}]}",
		  "neuron_runtimes[0].metrics[1].type \"memory_used\" is listed twice" },
		{ "{\"neuron_runtimes\": [{\"tag_filter\": \"(\", \"metrics\": []}]}",
		  "neuron_runtimes[0].tag_filter \"(\" is not a valid regular expression" },
		{ "{\"neuron_runtimes\": [{\"tag_filter\": 1, \"metrics\": []}]}",
		  "neuron_runtimes[0].tag_filter must be a string" },
		{ "{\"neuron_runtimes\": [{\"period\": \"-1s\", \"metrics\": []}]}", "neuron_runtimes[0].\"period\"" },
		{ "{\"system_metrics\": [{\"type\": \"memory_info\", \"period\": 0}]}",
		  "system_metrics[0].\"period\": 0 is not a period" },
		{ "{\"system_metrics\": [{\"type\": \"execution_stats\"}]}",
		  "system_metrics[0].type \"execution_stats\" is not a system metric group" },
		{ "{\"system_metrics\": [{\"type\": \"vcpu_usage\", \"extra\": 1}]}",
		  "unknown field \"extra\" in system_metrics[0]" },
		{ NULL, "No such file" },
	};
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "%s/bad.json", tmp);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unlink(cfg);
		if (cases[i].text)
			write_text(cfg, cases[i].text);
		char *margv[] = { (char *)monitor_bin, "-c", cfg, "-n", "1", NULL };
		char *out, *err;
		int rc = run(margv, &out, &err);
		ck_assert_msg(rc == 2, "config %s: exit %d, expected 2", cases[i].text, rc);
		ck_assert_msg(strstr(err, cases[i].expect) != NULL, "config %s: stderr '%s' lacks '%s'", cases[i].text,
			      err, cases[i].expect);
		ck_assert_msg(strstr(err, cfg) != NULL, "config %s: stderr '%s' does not name the file",
			      cases[i].text, err);
		ck_assert_str_eq(out, "");
		free(out);
		free(err);
	}
	/* And the command line. */
	char *a1[] = { (char *)monitor_bin, "-n", "0", NULL };
	char *a2[] = { (char *)monitor_bin, "--bogus", NULL };
	char *a3[] = { (char *)monitor_bin, "extra", NULL };
	char *const *argvs[] = { a1, a2, a3 };
	const char *expect[] = { "--count '0' is not a positive integer", "Try 'neuron-monitor --help'",
				 "unexpected argument 'extra'" };
	for (int i = 0; i < 3; i++) {
		char *out, *err;
		ck_assert_int_eq(run(argvs[i], &out, &err), 2);
		ck_assert_msg(strstr(err, expect[i]) != NULL, "stderr '%s' lacks '%s'", err, expect[i]);
		free(out);
		free(err);
	}
}
END_TEST

/* --verbose LEVEL (the Neuron tool's 0-4): each level says more on stderr, level 0
 * nothing; the documents on stdout are the same at every level. */
START_TEST(test_monitor_verbose_levels_say_more_on_stderr)
{
	char cfg[512], path[600];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	write_text(cfg, "{\"period\": \"100ms\", \"neuron_runtimes\": [{\"tag_filter\": \"verbose_wl\","
		   "\"metrics\": [{\"type\": \"execution_stats\"}]}]}");
	char *wargv[] = { (char *)workload_bin, "-n", "5", "-H", NULL };
	const char *wenv[] = { "NEURON_PROCESS_TAG=verbose_wl", NULL };
	child_t wl = spawn(wargv, wenv, false);
	snprintf(path, sizeof(path), "%s/neuronsim-stats.%u.%d", stats_dir, (unsigned)geteuid(), (int)wl.pid);
	uint64_t deadline = now_ms() + 60000;
	while (access(path, F_OK) != 0) {
		ck_assert_msg(now_ms() < deadline, "the workload never created %s", path);
		usleep(20000);
	}
	char pid_found[96], pid_collected[96];
	snprintf(pid_found, sizeof(pid_found), "process %d (tag 'verbose_wl') found: reported by neuron_runtimes[0]",
		 (int)wl.pid);
	snprintf(pid_collected, sizeof(pid_collected), "collected execution_stats of process %d", (int)wl.pid);
	/* What each level adds; a level shows its own lines and those below. */
	const char *const said[5] = { NULL, "configuration ", "document 2: ", pid_collected, "scanned " };
	for (int level = 0; level <= 4; level++) {
		char lv[8];
		snprintf(lv, sizeof(lv), "%d", level);
		char *margv[] = { (char *)monitor_bin, "-c", cfg, "-n", "2", "--verbose", lv, NULL };
		char *out, *err;
		ck_assert_int_eq(run(margv, &out, &err), 0);
		if (level == 0)
			ck_assert_msg(err[0] == '\0', "--verbose 0 said '%s'", err);
		for (int k = 1; k <= 4; k++)
			ck_assert_msg((strstr(err, said[k]) != NULL) == (k <= level),
				      "--verbose %d: '%s' %s in '%s'", level, said[k],
				      k <= level ? "missing" : "present", err);
		if (level >= 1)
			ck_assert_msg(strstr(err, pid_found) != NULL, "--verbose %d: '%s' missing in '%s'", level,
				      pid_found, err);
		/* Two documents either way, the workload in them. */
		char *nl = strchr(out, '\n');
		ck_assert_ptr_nonnull(nl);
		ck_assert_ptr_nonnull(strchr(nl + 1, '\n'));
		ck_assert_ptr_nonnull(strstr(out, "\"verbose_wl\""));
		free(out);
		free(err);
	}
	char *bad[] = { (char *)monitor_bin, "--verbose", "5", NULL };
	char *out, *err;
	ck_assert_int_eq(run(bad, &out, &err), 2);
	ck_assert_msg(strstr(err, "--verbose '5' is not a level from 0 to 4") != NULL, "stderr '%s'", err);
	free(out);
	free(err);
	finish(&wl, SIGTERM);
}
END_TEST

START_TEST(test_monitor_without_stats_dir_says_so_and_goes_on)
{
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "%s/monitor.json", tmp);
	write_text(cfg, "{\"period\": \"100ms\", \"system_metrics\": [{\"type\": \"memory_info\"}]}");
	setenv("NEURONSIM_STATS_DIR", "/nonexistent/stats-dir", 1);
	char *margv[] = { (char *)monitor_bin, "-c", cfg, "-n", "2", NULL };
	char *out, *err;
	ck_assert_int_eq(run(margv, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/stats-dir"));
	/* Said once, not once per document. */
	ck_assert_ptr_null(strstr(strstr(err, "/nonexistent/stats-dir") + 1, "/nonexistent/stats-dir"));
	char *nl = strchr(out, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_ptr_nonnull(strchr(nl + 1, '\n'));
	free(out);
	free(err);
}
END_TEST

/* ---- neuron-ls: the processes view ---- */

/* The processes neuron-ls -j lists under device 0 (the workloads use its cores). */
static const json_t *ls_procs(const json_t *ls)
{
	return json_object_get(json_array_get(ls, 0), "neuron_processes");
}

START_TEST(test_neuron_ls_lists_processes_with_memory_by_category)
{
	char report[512];
	snprintf(report, sizeof(report), "%s/report.json", tmp);
	char *wargv[] = { (char *)workload_bin, "-n", "5", "-H", "-o", report, NULL };
	/* Snapshot copies in device and host memory (issue #5): visible from outside. */
	const char *wenv[] = { "NEURON_PROCESS_TAG=ls_wl", "NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR_HYBRID", NULL };
	child_t wl = spawn(wargv, wenv, false);
	json_t *rep = wait_report(report, 60000);
	/* Memory figures refresh every 100 ms in the file: neuron-ls runs until it
	 * shows the process' own memory_in_use (the refresh thread of a loaded
	 * machine may run late; the deadline only ends a failing test). */
	char *largv[] = { (char *)ls_bin, "-j", NULL };
	char *out, *err;
	json_error_t je;
	json_t *ls = NULL;
	uint64_t deadline = now_ms() + 60000;
	for (;;) {
		ck_assert_int_eq(run(largv, &out, &err), 0);
		ls = json_loads(out, 0, &je);
		ck_assert_msg(ls != NULL, "%s: %s", je.text, out);
		const json_t *p0 = json_array_get(ls_procs(ls), 0);
		if (json_integer_value(json_object_get(p0, "memory_in_use")) == rint_of(rep, "memory_in_use") ||
		    now_ms() > deadline)
			break;
		json_decref(ls);
		free(out);
		free(err);
		usleep(50000);
	}
	ck_assert_ptr_null(strstr(err, "processes not listed"));
	const json_t *procs = ls_procs(ls);
	ck_assert_uint_eq(json_array_size(procs), 1); /* the workload, not neuron-ls itself */
	/* the documented fields first, neuronsim's figures added */
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(procs, 0), "command")),
				     "stats-workload"));
	ck_assert(json_is_string(json_object_get(json_array_get(procs, 0), "neuron_runtime_version")));
	const json_t *p = json_array_get(procs, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "pid")), wl.pid);
	ck_assert_str_eq(json_string_value(json_object_get(p, "tag")), "ls_wl");
	ck_assert_str_eq(json_string_value(json_object_get(p, "backend")), "embedded");
	ck_assert_str_eq(json_string_value(json_object_get(p, "program")), "stats-workload");
	ck_assert_uint_eq(json_array_size(json_object_get(p, "cores")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "executions")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "memory_in_use")), rint_of(rep, "memory_in_use"));
	ck_assert_int_eq(json_integer_value(json_object_get(p, "memory_total")), rint_of(rep, "memory_total"));
	ck_assert_int_eq(json_integer_value(json_object_get(p, "host_snapshot")), rint_of(rep, "host_snapshot"));
	ck_assert_int_eq(json_integer_value(json_object_get(p, "host_tensors")), rint_of(rep, "host_tensors"));
	const json_t *cats = json_object_get(p, "memory_by_category"), *rcats = json_object_get(rep, "memory_by_category");
	ck_assert_uint_eq(json_object_size(cats), 6);
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)rcats, key, v)
		ck_assert_msg(json_integer_value(json_object_get(cats, key)) == json_integer_value(v),
			      "category %s: neuron-ls %lld, the process %lld", key,
			      (long long)json_integer_value(json_object_get(cats, key)), (long long)json_integer_value(v));
	ck_assert_int_gt(json_integer_value(json_object_get(cats, "snapshot")), 0);
	ck_assert_int_gt(json_integer_value(json_object_get(p, "host_snapshot")), 0);
	json_decref(ls);
	free(out);
	free(err);

	/* The table says the same. */
	char *largv2[] = { (char *)ls_bin, NULL };
	ck_assert_int_eq(run(largv2, &out, &err), 0);
	char pidtxt[32];
	snprintf(pidtxt, sizeof(pidtxt), "%7d ls_wl", (int)wl.pid);
	ck_assert_ptr_nonnull(strstr(out, "processes (stats in "));
	ck_assert_ptr_nonnull(strstr(out, pidtxt));
	ck_assert_ptr_nonnull(strstr(out, "snapshot"));
	ck_assert_ptr_nonnull(strstr(out, "host_snapshot"));
	free(out);
	free(err);
	json_decref(rep);
	ck_assert_int_eq(finish(&wl, SIGTERM), 0);

	/* Gone after it exits; an unreadable directory is said, not fatal. */
	ck_assert_int_eq(run(largv, &out, &err), 0);
	ls = json_loads(out, 0, &je);
	ck_assert_uint_eq(json_array_size(ls_procs(ls)), 0);
	json_decref(ls);
	free(out);
	free(err);
	setenv("NEURONSIM_STATS_DIR", "/nonexistent/stats-dir", 1);
	ck_assert_int_eq(run(largv, &out, &err), 0);
	ls = json_loads(out, 0, &je);
	/* JSON: said on stderr (the documented array has no place for it) */
	ck_assert_ptr_nonnull(strstr(err, "processes not listed"));
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/stats-dir"));
	ck_assert(json_is_array(ls));
	json_decref(ls);
	free(out);
	free(err);
	ck_assert_int_eq(run(largv2, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "processes: not listed: "));
	free(out);
	free(err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("neuron_monitor");
	TCase *tc = tcase_create("monitor");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* Far above a passing run (seconds): the waits above poll, and their deadlines
	 * only end a failing test, on a machine as loaded as it may be. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_monitor_documents_follow_the_schema_and_count_every_execution);
	tcase_add_test(tc, test_monitor_loaded_models_is_running_and_uuid);
	tcase_add_test(tc, test_monitor_forgets_a_killed_process_and_removes_its_file);
	tcase_add_test(tc, test_monitor_reads_kernel_devices_from_sysfs);
	tcase_add_test(tc, test_monitor_default_config_and_count);
	tcase_add_test(tc, test_monitor_rejects_bad_configs_naming_the_field);
	tcase_add_test(tc, test_monitor_verbose_levels_say_more_on_stderr);
	tcase_add_test(tc, test_monitor_without_stats_dir_says_so_and_goes_on);
	tcase_add_test(tc, test_neuron_ls_lists_processes_with_memory_by_category);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	monitor_bin = getenv("NEURON_MONITOR");
	ls_bin = getenv("NEURON_LS");
	workload_bin = getenv("STATS_WORKLOAD");
	if (!monitor_bin || !ls_bin || !workload_bin) {
		fprintf(stderr, "set NEURON_MONITOR, NEURON_LS and STATS_WORKLOAD to the programs' paths\n");
		return 2;
	}
	/* A test's children must not outlive a failed assertion. */
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
