/* Check tests of the profiler: nrt_profile_start/stop, NEURON_RT_INSPECT_*, user blocks and steps, the Chrome trace it writes, and a corpus model's device trace against the simulator's accounting. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "ncc/ncc.h"
#include "neuronsim/neff.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_profile.h"
#include "rt_fixture.h"
#include "rt_alloc_fault.h"
#include "test_neffs.h"

#ifndef NCC_HLO_CORPUS
#error "NCC_HLO_CORPUS must name the HLO corpus directory (tests/unit/runtime/meson.build)"
#endif

#define DEVICE_PID_BASE (1 << 24)

/* SQLite-style fault injection (rt_alloc_fault.h): this test is linked with
 * -Wl,--wrap for the allocation functions (libnrt, libfwsim and libnscommon
 * are static in it, libc, jansson and zlib are not). Off for every test but
 * the one that arms it. */

/* ---- helpers ------------------------------------------------------------ */

static char tmpdir[64];

static void tmp_setup(void) { rt_tmpdir_create(tmpdir, sizeof(tmpdir), "nrt-profile-test"); }
static void tmp_teardown(void) { ck_assert_int_eq(rt_tmpdir_remove(tmpdir), 0); }
static const char *tmp_path(const char *name) { return rt_tmpdir_path(tmpdir, name); }

static void env_clean(void)
{
	test_env_default();
	static const char *const vars[] = {
		"NEURON_RT_INSPECT_ENABLE", "NEURON_RT_INSPECT_OUTPUT_DIR",
		"NEURON_RT_INSPECT_SYSTEM_PROFILE", "NEURON_RT_INSPECT_DEVICE_PROFILE",
		"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "NEURONSIM_PROFILE_MAX_SPANS",
		"NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* Reads a trace (gzip or plain) with the JSON library. */
static json_t *load_trace(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	ck_assert_msg(gz != NULL, "cannot open %s", path);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int n;
	while ((n = gzread(gz, buf + len, (unsigned)(cap - len))) > 0) {
		len += (size_t)n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	ck_assert_int_eq(n, 0);
	gzclose(gz);
	json_error_t err;
	json_t *root = json_loadb(buf, len, 0, &err);
	ck_assert_msg(root != NULL, "%s: line %d: %s", path, err.line, err.text);
	free(buf);
	ck_assert(json_is_array(json_object_get(root, "traceEvents")));
	return root;
}

static json_t *events(json_t *root)
{
	return json_object_get(root, "traceEvents");
}

static const char *sget(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static int64_t iget(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Nanoseconds of a microsecond field, as the writer wrote it (ns precision). */
static int64_t ns_of(json_t *o, const char *k)
{
	return llround(json_number_value(json_object_get(o, k)) * 1000.0);
}

/* Events with ph (and cat, name when not NULL). */
static size_t count(json_t *root, const char *ph, const char *cat, const char *name)
{
	size_t i, n = 0;
	json_t *e;
	json_array_foreach(events(root), i, e) {
		if (strcmp(sget(e, "ph"), ph) != 0)
			continue;
		if (cat && strcmp(sget(e, "cat"), cat) != 0)
			continue;
		if (name && strcmp(sget(e, "name"), name) != 0)
			continue;
		n++;
	}
	return n;
}

static json_t *find(json_t *root, const char *ph, const char *name, size_t nth)
{
	size_t i;
	json_t *e;
	json_array_foreach(events(root), i, e)
		if (strcmp(sget(e, "ph"), ph) == 0 && strcmp(sget(e, "name"), name) == 0 && nth-- == 0)
			return e;
	return NULL;
}

static bool has_meta(json_t *root, const char *what, int64_t pid, int64_t tid)
{
	size_t i;
	json_t *e;
	json_array_foreach(events(root), i, e)
		if (strcmp(sget(e, "ph"), "M") == 0 && strcmp(sget(e, "name"), what) == 0 &&
		    iget(e, "pid") == pid && (tid < 0 || iget(e, "tid") == tid) &&
		    sget(json_object_get(e, "args"), "name")[0])
			return true;
	return false;
}

typedef struct iv {
	int64_t pid, tid, start, end;
	const char *name;
} iv_t;

static int cmp_iv(const void *a, const void *b)
{
	const iv_t *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* Every pair of complete events of one thread is nested or disjoint, and
 * every thread with events has a thread_name (and its process a
 * process_name). */
static void check_nesting(json_t *root)
{
	size_t n = count(root, "X", NULL, NULL), k = 0, i;
	iv_t *v = calloc(n ? n : 1, sizeof(*v));
	json_t *e;
	json_array_foreach(events(root), i, e) {
		if (strcmp(sget(e, "ph"), "X") != 0)
			continue;
		int64_t s = ns_of(e, "ts");
		v[k++] = (iv_t){ iget(e, "pid"), iget(e, "tid"), s, s + ns_of(e, "dur"), sget(e, "name") };
	}
	qsort(v, n, sizeof(*v), cmp_iv);
	iv_t *stack[256];
	int depth = 0;
	for (size_t a = 0; a < n; a++) {
		if (a == 0 || v[a].pid != v[a - 1].pid || v[a].tid != v[a - 1].tid) {
			depth = 0;
			ck_assert_msg(has_meta(root, "thread_name", v[a].pid, v[a].tid),
				      "no thread_name for pid %lld tid %lld", (long long)v[a].pid,
				      (long long)v[a].tid);
			ck_assert(has_meta(root, "process_name", v[a].pid, -1));
		}
		while (depth && v[a].start >= stack[depth - 1]->end)
			depth--;
		ck_assert_msg(!depth || v[a].end <= stack[depth - 1]->end,
			      "'%s' [%lld, %lld] overlaps '%s' [%lld, %lld] on tid %lld", v[a].name,
			      (long long)v[a].start, (long long)v[a].end, stack[depth - 1]->name,
			      (long long)stack[depth - 1]->start, (long long)stack[depth - 1]->end,
			      (long long)v[a].tid);
		ck_assert_int_lt(depth, 256);
		stack[depth++] = &v[a];
	}
	free(v);
}

/* a, b, out f32[n] on core 0 with a loaded ADD model. */
typedef rt_add_model_t fx_t;

static void fx_setup_neff(fx_t *f, void *neff, size_t size, uint64_t n, int nc)
{
	f->neff = neff;
	f->size = size;
	ck_assert_int_eq(nrt_load(f->neff, f->size, nc, -1, &f->m), NRT_SUCCESS);
	float *v = calloc(n, sizeof(float));
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, n * 4, "a", &f->a), 0);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, n * 4, "b", &f->b), 0);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, nc, n * 4, "out", &f->out), 0);
	ck_assert_int_eq(nrt_tensor_write(f->a, v, 0, n * 4), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_write(f->b, v, 0, n * 4), NRT_SUCCESS);
	free(v);
	rt_add_model_sets(f);
}

static void fx_setup(fx_t *f, uint64_t n)
{
	size_t size;
	void *neff = test_neff_add(n, &size);
	fx_setup_neff(f, neff, size, n, 0);
}

static void fx_teardown(fx_t *f)
{
	rt_add_model_free(f);
}

/* ---- nrt_profile_start / stop ------------------------------------------- */

START_TEST(test_profile_writes_chrome_trace)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 1000);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	float x[4];
	ck_assert_int_eq(nrt_tensor_read(f.out, x, 0, sizeof(x)), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(path), NRT_SUCCESS);

	FILE *fp = fopen(path, "rb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fgetc(fp), '{'); /* plain JSON for a name without .gz */
	fclose(fp);
	json_t *root = load_trace(path);
	int64_t pid = getpid();
	ck_assert(has_meta(root, "process_name", pid, -1));
	ck_assert(has_meta(root, "process_name", DEVICE_PID_BASE, -1));
	for (int e = 0; e < 5; e++)
		ck_assert(has_meta(root, "thread_name", DEVICE_PID_BASE, e));
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 3);
	ck_assert_uint_eq(count(root, "X", "transfer", "nrt_tensor_read"), 1);
	/* loaded and written before the start: outside the window */
	ck_assert_uint_eq(count(root, "X", NULL, "nrt_load"), 0);
	ck_assert_uint_eq(count(root, "X", "transfer", "nrt_tensor_write"), 0);
	json_t *ex = find(root, "X", "nrt_execute", 2);
	ck_assert_str_eq(sget(json_object_get(ex, "args"), "model"), "add");
	ck_assert_int_eq(iget(json_object_get(ex, "args"), "exec_index"), 2);
	ck_assert_int_eq(iget(ex, "pid"), pid);
	/* one ALU add per execution on the vector engine, named by its HLO */
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 3);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 3);
	json_t *sp = find(root, "X", "add.3", 0);
	json_t *args = json_object_get(sp, "args");
	ck_assert_int_eq(iget(sp, "pid"), DEVICE_PID_BASE);
	ck_assert_int_eq(iget(sp, "tid"), 1);
	ck_assert_str_eq(sget(args, "op_type"), "add");
	ck_assert_str_eq(sget(args, "opcode"), "alu");
	ck_assert_str_eq(sget(args, "source"), "model.py:10");
	ck_assert_int_eq(iget(args, "flops"), 1000);
	ck_assert_int_eq(iget(args, "bytes"), 3 * 1000 * 4);
	ck_assert_int_eq(iget(args, "insn_index"), 0);
	/* device spans lie inside their execution's nrt_execute */
	for (int i = 0; i < 3; i++) {
		json_t *d = find(root, "X", "add.3", (size_t)i);
		int64_t ds = ns_of(d, "ts"), de = ds + ns_of(d, "dur");
		int64_t exec = iget(json_object_get(d, "args"), "exec_index");
		json_t *h = find(root, "X", "nrt_execute", (size_t)exec);
		int64_t hs = ns_of(h, "ts"), he = hs + ns_of(h, "dur");
		ck_assert(ds >= hs && de <= he);
	}
	/* each job's simulator accounting (vector engine) is its one span */
	for (size_t i = 0; i < 3; i++) {
		json_t *d = find(root, "X", "add.3", i);
		int64_t exec = iget(json_object_get(d, "args"), "exec_index");
		size_t k;
		json_t *j, *job = NULL;
		json_array_foreach(events(root), k, j)
			if (strcmp(sget(j, "cat"), "job") == 0 &&
			    iget(json_object_get(j, "args"), "exec_index") == exec)
				job = j;
		ck_assert_ptr_nonnull(job);
		json_t *busy = json_object_get(json_object_get(job, "args"), "engine_busy_ns");
		ck_assert_int_eq(iget(busy, "vector"), ns_of(d, "dur"));
		ck_assert_int_eq(iget(busy, "tensor"), 0);
		ck_assert_int_eq(iget(json_object_get(job, "args"), "insns_executed"), 1);
	}
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "session"), "nrt_profile_start");
	check_nesting(root);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* A window holds a job exactly when it holds its execution's nrt_execute.
 * An execution called just before nrt_profile_start that waited for the model
 * behind another one ran its device spans inside the window, which had no
 * nrt_execute for them: they landed before the window's first execution (a
 * flaky check of the TensorBoard profile, test_profiler_tensorboard.py). The
 * session arms device tracing for every execution from nrt_init, as
 * torch_neuronsim's window does. */
static atomic_int g_calling;

static void *exec_thread(void *arg)
{
	fx_t *f = arg;
	atomic_fetch_add(&g_calling, 1);
	ck_assert_int_eq(nrt_execute(f->m, f->in, f->outs), NRT_SUCCESS);
	return NULL;
}

START_TEST(test_profile_window_jobs_match_their_executions)
{
	env_clean();
	tmp_setup();
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", tmp_path("inspect"), 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 1u << 22); /* an add of 4M elements: milliseconds (48 MiB fit the
				 * QEMU guest's 96 MiB device) */
	pthread_t a, b;
	atomic_store(&g_calling, 0);
	ck_assert_int_eq(pthread_create(&a, NULL, exec_thread, &f), 0);
	while (atomic_load(&g_calling) < 1)
		usleep(100);
	usleep(500);
	ck_assert_int_eq(pthread_create(&b, NULL, exec_thread, &f), 0); /* waits for a's */
	while (atomic_load(&g_calling) < 2)
		usleep(100);
	usleep(500);
	const char *path = tmp_path("w.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* inside */
	ck_assert_int_eq(nrt_profile_stop(path), NRT_SUCCESS);
	/* which executions fall inside depends on the scheduling; that every
	 * job in the file has its nrt_execute there does not */
	json_t *root = load_trace(path);
	size_t ne = count(root, "X", "runtime", "nrt_execute"), nj = count(root, "X", "job", NULL);
	ck_assert_uint_ge(ne, 1);
	ck_assert_uint_eq(nj, ne);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	unsetenv("NEURON_RT_INSPECT_ENABLE");
	unsetenv("NEURON_RT_INSPECT_DEVICE_PROFILE");
	unsetenv("NEURON_RT_INSPECT_OUTPUT_DIR");
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_gz_name_writes_gzip)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 64);
	const char *path = tmp_path("t.json.gz");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS); /* NULL: the start's name */
	FILE *fp = fopen(path, "rb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fgetc(fp), 0x1f);
	ck_assert_int_eq(fgetc(fp), 0x8b);
	fclose(fp);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
	json_decref(root);
	/* no temporary file left behind */
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	int files = 0;
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	ck_assert_int_eq(files, 1);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_misuse)
{
	env_clean();
	tmp_setup();
	const char *path = tmp_path("t.json");
	/* before nrt_init (closed when the tests share a process, CK_FORK=no) */
	NRT_STATUS st = nrt_profile_start((nrt_model_t *)0x1, path);
	ck_assert(st == NRT_UNINITIALIZED || st == NRT_CLOSED);
	ck_assert_int_eq(nrt_profile_stop(path), st);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	test_capture_begin();
	ck_assert_int_eq(nrt_profile_start(NULL, path), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_start(f.m, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_start(f.m, ""), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_start(f.m, "/nonexistent-dir/x.json"), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_start((nrt_model_t *)0x12345, path), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_stop(path), NRT_INVALID); /* nothing started */
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_start(f.m, tmp_path("u.json")), NRT_INVALID); /* one at a time */
	ck_assert_int_eq(nrt_profile_stop(path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(path), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "nrt_profile_start: model is NULL"));
	ck_assert_ptr_nonnull(strstr(log, "filename is NULL"));
	ck_assert_ptr_nonnull(strstr(log, "directory '/nonexistent-dir' does not exist"));
	ck_assert_ptr_nonnull(strstr(log, "is not a loaded model"));
	ck_assert_ptr_nonnull(strstr(log, "no profile is being recorded"));
	ck_assert_ptr_nonnull(strstr(log, "already being profiled"));
	free(log);
	/* an unloaded model's handle is refused */
	nrt_model_t *m = f.m;
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	f.m = NULL;
	test_capture_begin();
	ck_assert_int_eq(nrt_profile_start(m, path), NRT_INVALID);
	free(test_capture_end());
	fx_teardown(&f);
	nrt_close();
	ck_assert_int_eq(nrt_profile_start((nrt_model_t *)0x1, path), NRT_CLOSED);
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_stop_write_failure_is_reported)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/gone", tmpdir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/t.json", sub);
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(rmdir(sub), 0);
	test_capture_begin();
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_FAILURE);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, path));
	free(log);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* the session is over; a new one works */
	test_capture_begin();
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_INVALID);
	free(test_capture_end());
	ck_assert_int_eq(nrt_profile_start(f.m, tmp_path("t2.json")), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* Issue #11, item 4: the trace went to "PATH.tmp.PID", opened without O_EXCL:
 * a symlink planted there (or at PATH) made --profile clobber its target. */
START_TEST(test_profile_trace_never_follows_planted_symlinks)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	static const char precious[] = "precious\n";
	char victim[300];
	snprintf(victim, sizeof(victim), "%s", tmp_path("victim.txt"));
	FILE *vf = fopen(victim, "w");
	ck_assert_ptr_nonnull(vf);
	fputs(precious, vf);
	fclose(vf);
	for (int gz = 0; gz < 2; gz++) {
		char path[300], old_tmp[340];
		snprintf(path, sizeof(path), "%s", tmp_path(gz ? "t.json.gz" : "t.json"));
		snprintf(old_tmp, sizeof(old_tmp), "%s.tmp.%ld", path, (long)getpid());
		ck_assert_int_eq(symlink(victim, old_tmp), 0);
		ck_assert_int_eq(symlink(victim, path), 0);
		ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
		ck_assert_int_eq(nrt_profile_stop(path), NRT_SUCCESS);
		char buf[64] = "";
		vf = fopen(victim, "r");
		ck_assert_ptr_nonnull(vf);
		size_t n = fread(buf, 1, sizeof(buf) - 1, vf);
		fclose(vf);
		buf[n] = 0;
		ck_assert_str_eq(buf, precious);
		struct stat sb;
		ck_assert_int_eq(lstat(path, &sb), 0);
		ck_assert(S_ISREG(sb.st_mode)); /* the symlink was replaced by the trace */
		ck_assert_int_gt(sb.st_size, 100);
		ck_assert_int_eq(lstat(old_tmp, &sb), 0);
		ck_assert(S_ISLNK(sb.st_mode));
	}
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_survives_unload_and_other_models)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f, g;
	fx_setup(&f, 32);
	size_t size;
	void *neff = test_neff_sqrt(32, &size);
	nrt_model_t *other;
	ck_assert_int_eq(nrt_load(neff, size, 1, -1, &other), NRT_SUCCESS);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	nrt_tensor_t *x, *y;
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 128, "x", &x), 0);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 128, "y", &y), 0);
	ck_assert_int_eq(nrt_tensor_memset(x, 0, 0, 128), 0);
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), 0);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), 0);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, "x", x), 0);
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, "y", y), 0);
	ck_assert_int_eq(nrt_execute(other, in, out), NRT_SUCCESS);
	/* the profiled model goes away before the trace is written */
	ck_assert_int_eq(nrt_unload(f.m), NRT_SUCCESS);
	f.m = NULL;
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
	/* the other model: system span only, no device trace */
	ck_assert_uint_eq(count(root, "X", "device", "sqrt.7"), 0);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 2);
	json_decref(root);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_tensor_free(&x);
	nrt_tensor_free(&y);
	ck_assert_int_eq(nrt_unload(other), NRT_SUCCESS);
	free(neff);
	(void)g;
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_multi_core_model_one_process_per_core)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	size_t size;
	void *neff = test_neff_add_cores(64, 2, &size);
	fx_t f;
	fx_setup_neff(&f, neff, size, 64, 1);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert(has_meta(root, "process_name", DEVICE_PID_BASE + 1, -1));
	ck_assert(has_meta(root, "process_name", DEVICE_PID_BASE + 2, -1));
	ck_assert_uint_eq(count(root, "X", "job", NULL), 2);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
	check_nesting(root);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* ---- user blocks and steps --------------------------------------------- */

START_TEST(test_user_blocks_nest_and_steps)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 100);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_begin("train_loop"), NRT_SUCCESS);
	for (uint64_t s = 0; s < 2; s++) {
		ck_assert_int_eq(nrt_neuronsim_trace_step(s), NRT_SUCCESS);
		ck_assert_int_eq(nrt_neuronsim_trace_begin("model_build"), NRT_SUCCESS);
		ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
		ck_assert_int_eq(nrt_neuronsim_trace_begin("forward"), NRT_SUCCESS);
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
		ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	}
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "user", "train_loop"), 1);
	ck_assert_uint_eq(count(root, "X", "user", "model_build"), 2);
	ck_assert_uint_eq(count(root, "X", "user", "forward"), 2);
	ck_assert_uint_eq(count(root, "i", "step", NULL), 2);
	json_t *step1 = find(root, "i", "step 1", 0);
	ck_assert_ptr_nonnull(step1);
	ck_assert_int_eq(iget(json_object_get(step1, "args"), "step"), 1);
	ck_assert_str_eq(sget(step1, "s"), "t");
	/* forward holds nrt_execute, train_loop holds everything */
	json_t *loop = find(root, "X", "train_loop", 0);
	int64_t ls = ns_of(loop, "ts"), le = ls + ns_of(loop, "dur");
	for (size_t i = 0; i < 2; i++) {
		json_t *fw = find(root, "X", "forward", i), *ex = find(root, "X", "nrt_execute", i);
		int64_t fs = ns_of(fw, "ts"), fe = fs + ns_of(fw, "dur");
		int64_t es = ns_of(ex, "ts"), ee = es + ns_of(ex, "dur");
		ck_assert(fs >= ls && fe <= le);
		ck_assert(es >= fs && ee <= fe);
		ck_assert_int_eq(iget(fw, "tid"), iget(ex, "tid"));
		int64_t st = ns_of(find(root, "i", i ? "step 1" : "step 0", 0), "ts");
		ck_assert(st >= ls && st <= fs);
	}
	check_nesting(root);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

typedef struct worker {
	fx_t *f;
	nrt_model_t *m;
	const char *name;
	int rc;
} worker_t;

static void *worker_main(void *arg)
{
	worker_t *w = arg;
	pthread_setname_np(pthread_self(), w->name);
	w->rc = 0;
	for (int i = 0; i < 3 && !w->rc; i++) {
		w->rc |= nrt_neuronsim_trace_begin(w->name);
		w->rc |= nrt_neuronsim_trace_begin("inner");
		w->rc |= nrt_execute(w->m, w->f->in, w->f->outs);
		w->rc |= nrt_neuronsim_trace_end();
		w->rc |= nrt_neuronsim_trace_end();
	}
	return NULL;
}

START_TEST(test_user_blocks_are_per_thread)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 4096);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	/* The main thread's block stays open while the workers run. */
	ck_assert_int_eq(nrt_neuronsim_trace_begin("main_block"), NRT_SUCCESS);
	pthread_t th[2];
	worker_t w[2] = { { &f, f.m, "worker_a", 0 }, { &f, f.m, "worker_b", 0 } };
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].rc, 0);
	}
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	/* worker threads' ends did not close the main thread's block */
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "user", "worker_a"), 3);
	ck_assert_uint_eq(count(root, "X", "user", "worker_b"), 3);
	ck_assert_uint_eq(count(root, "X", "user", "inner"), 6);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 6);
	int64_t ta = iget(find(root, "X", "worker_a", 0), "tid");
	int64_t tb = iget(find(root, "X", "worker_b", 0), "tid");
	int64_t tm = iget(find(root, "X", "main_block", 0), "tid");
	ck_assert_int_ne(ta, tb);
	ck_assert_int_ne(ta, tm);
	ck_assert_int_eq(tm, getpid());
	/* the threads' names (exited threads included) */
	size_t i;
	json_t *e;
	bool named_a = false;
	json_array_foreach(events(root), i, e)
		if (strcmp(sget(e, "name"), "thread_name") == 0 && iget(e, "tid") == ta)
			named_a = strcmp(sget(json_object_get(e, "args"), "name"), "worker_a") == 0;
	ck_assert(named_a);
	/* every worker block holds an inner holding an nrt_execute of its thread */
	for (size_t k = 0; k < 6; k++) {
		json_t *in = find(root, "X", "inner", k);
		ck_assert(iget(in, "tid") == ta || iget(in, "tid") == tb);
	}
	check_nesting(root);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

START_TEST(test_user_block_misuse)
{
	env_clean();
	test_capture_begin();
	/* before nrt_init and with nothing recording: counted, not recorded */
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_INVALID);
	ck_assert_int_eq(nrt_neuronsim_trace_begin(NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_neuronsim_trace_begin(""), NRT_INVALID);
	ck_assert_int_eq(nrt_neuronsim_trace_step(3), NRT_SUCCESS);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(nrt_neuronsim_trace_begin("deep"), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_begin("too_deep"), NRT_INVALID);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "nrt_neuronsim_trace_end: this thread has no open block"));
	ck_assert_ptr_nonnull(strstr(log, "name is NULL"));
	ck_assert_ptr_nonnull(strstr(log, "'too_deep': 64 blocks are already open"));
	free(log);
}
END_TEST

START_TEST(test_blocks_begun_before_recording_are_not_recorded)
{
	env_clean();
	tmp_setup();
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	ck_assert_int_eq(nrt_neuronsim_trace_begin("before"), NRT_SUCCESS);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_begin("during"), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS); /* pairs with "before" */
	ck_assert_int_eq(nrt_neuronsim_trace_begin("open_at_stop"), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "user", "during"), 1);
	ck_assert_uint_eq(count(root, "X", "user", "before"), 0);
	ck_assert_uint_eq(count(root, "X", "user", "open_at_stop"), 0);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* ---- NEURON_RT_INSPECT_* -------------------------------------------------- */

/* The one trace under OUTPUT_DIR: <host>_pid_<pid>/ntrace_session_0.json.gz,
 * the Neuron Runtime's directory per process. */
static json_t *load_inspect_trace_of(const char *out_dir, pid_t pid)
{
	DIR *d = opendir(out_dir);
	ck_assert_msg(d != NULL, "no %s", out_dir);
	struct dirent *de;
	char sub[256] = "";
	int subs = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s", de->d_name);
		subs++;
	}
	closedir(d);
	ck_assert_int_eq(subs, 1);
	char host[256], want[300];
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	snprintf(want, sizeof(want), "%s_pid_%ld", host, (long)pid);
	ck_assert_str_eq(sub, want);
	char path[1024];
	ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s/ntrace_session_0.json.gz", out_dir, sub),
			 (int)sizeof(path));
	return load_trace(path);
}

static json_t *load_inspect_trace(const char *out_dir)
{
	return load_inspect_trace_of(out_dir, getpid());
}

START_TEST(test_inspect_env_writes_the_neuron_runtime_layout)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("inspect/out");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 256);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_load"), 1);
	json_t *ld = find(root, "X", "nrt_load", 0);
	ck_assert_str_eq(sget(json_object_get(ld, "args"), "model"), "add");
	ck_assert_uint_eq(count(root, "X", "transfer", "nrt_tensor_write"), 2);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 2);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 2);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "device_profile"), "session");
	check_nesting(root);
	json_decref(root);
	tmp_teardown();
}
END_TEST

/* A process that exits without nrt_close (as PyTorch/XLA does: it keeps its
 * PJRT client, and the runtime, until exit) still leaves its inspection's
 * trace, whether NEURON_RT_INSPECT_ENABLE or nrt_inspect_begin started it. */
START_TEST(test_inspect_written_at_exit_without_nrt_close)
{
	for (int by_api = 0; by_api < 2; by_api++) {
		env_clean();
		tmp_setup();
		const char *out = tmp_path("at-exit");
		if (!by_api)
			setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
		setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
		setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			rt_init_ok();
			if (by_api && nrt_inspect_begin() != NRT_SUCCESS)
				_exit(3);
			fx_t f;
			fx_setup(&f, 256);
			if (nrt_execute(f.m, f.in, f.outs) != NRT_SUCCESS)
				_exit(4);
			exit(0); /* no nrt_inspect_stop, no nrt_close: the exit handler writes */
		}
		int ws = 0;
		ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
		ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child status %d (by_api %d)", ws,
			      by_api);
		json_t *root = load_inspect_trace_of(out, pid);
		ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 1);
		ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
		json_decref(root);
		tmp_teardown();
	}
}
END_TEST

/* nrt_inspect_begin/stop: the window between them, written at stop in the
 * layout nrt_close uses, with the NEURON_RT_INSPECT_* settings of the time
 * of the begin; nothing more at nrt_close. */
START_TEST(test_inspect_begin_stop_api_window)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("api-inspect");
	NRT_STATUS before = nrt_inspect_begin();
	ck_assert(before == NRT_UNINITIALIZED || before == NRT_CLOSED); /* CLOSED with CK_FORK=no */
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "bogus", 1);
	rt_init_ok(); /* NEURON_RT_INSPECT_ENABLE unset: the settings are not read yet */
	fx_t f;
	fx_setup(&f, 256);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* before: not recorded */
	ck_assert_int_eq(nrt_inspect_stop(), NRT_INVALID);
	test_capture_begin();
	NRT_STATUS st = nrt_inspect_begin();
	char *log = test_capture_end();
	ck_assert_int_eq(st, NRT_INVALID);
	ck_assert_ptr_nonnull(strstr(log, "nrt_inspect_begin: NEURON_RT_INSPECT_DEVICE_PROFILE='bogus'"));
	free(log);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
	ck_assert_int_eq(nrt_inspect_begin(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin(), NRT_INVALID); /* one at a time */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* after: not recorded */
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_load"), 0);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 2);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 2);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "device_profile"), "session");
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	root = load_inspect_trace(out); /* still the one run: nrt_close wrote nothing */
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 2);
	json_decref(root);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_CLOSED);
	/* A second window of the same process is the next session in its directory. */
	rt_init_ok();
	ck_assert_int_eq(nrt_inspect_begin(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	nrt_close();
	char host[256], second[1024];
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	snprintf(second, sizeof(second), "%s/%s_pid_%ld/ntrace_session_1.json.gz", out, host, (long)getpid());
	ck_assert_int_eq(access(second, R_OK), 0);
	tmp_teardown();
}
END_TEST

/* With NEURON_RT_INSPECT_ENABLE=1 the inspection runs from nrt_init: a begin
 * is refused until nrt_inspect_stop writes that one. */
START_TEST(test_inspect_begin_refused_while_env_inspection_runs)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("env-then-api");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	rt_init_ok();
	ck_assert_int_eq(nrt_inspect_begin(), NRT_INVALID);
	fx_t f;
	fx_setup(&f, 256);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_load"), 1);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 1);
	json_decref(root);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_INVALID);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* <out>/<host>_pid_<pid>/ntrace_session_<n>.json.gz in path[len]. */
static void session_path(const char *out, unsigned n, char *path, size_t len)
{
	char host[256];
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	ck_assert_int_lt(snprintf(path, len, "%s/%s_pid_%ld/ntrace_session_%u.json.gz", out, host,
				  (long)getpid(), n), (int)len);
}

/* The options objects: defaults, what each setter refuses (with a message
 * naming the call) and the activity lists; none needs nrt_init. */
START_TEST(test_inspect_config_setters_validate)
{
	env_clean();
	nrt_inspect_config_t *o = NULL;
	test_capture_begin();
	ck_assert_int_eq(nrt_inspect_config_allocate(NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_defaults(NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_session_id(NULL, 1), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(NULL, "x"), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_enable_inspect(NULL, true), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_activity(NULL, "all", true), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_allocate(&o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_session_id(o, -1), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, ""), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, "gpu_util", true), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, NULL, true), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_capture_enabled_for_event_type_string(o, "bogus", false),
			 NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_capture_enabled_for_nc(o, 4096, false), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_inspect_device_profile_mode(o, (nrt_inspect_device_profile_mode_t)7),
			 NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_get_enabled_activity_types(o, NULL, NULL), NRT_INVALID);
	char *log = test_capture_end();
	const char *want[] = {
		"nrt_inspect_config_allocate: options is NULL",
		"nrt_inspect_config_set_session_id: session_id -1 is negative",
		"nrt_inspect_config_set_output_dir: output_dir is empty",
		"nrt_inspect_config_set_output_dir: output_dir is NULL",
		"nrt_inspect_config_set_activity: unknown activity type 'gpu_util'",
		"nrt_inspect_config_set_capture_enabled_for_event_type_string: unknown event type 'bogus'",
		"nrt_inspect_config_set_capture_enabled_for_nc: NeuronCore 4096",
		"nrt_inspect_config_set_inspect_device_profile_mode: device profile mode 7",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(log, want[i]), "missing '%s' in: %s", want[i], log);
	free(log);
	/* The defaults enable every activity type. */
	const char **acts = NULL;
	size_t n = 0;
	ck_assert_int_eq(nrt_inspect_config_get_all_activity_types(&acts, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(acts[0], "system_profile");
	ck_assert_str_eq(acts[1], "device_profile");
	ck_assert_str_eq(acts[2], "host_memory");
	ck_assert_str_eq(acts[3], "cpu_util");
	nrt_inspect_config_free_activity_types(acts, n);
	ck_assert_int_eq(nrt_inspect_config_get_enabled_activity_types(o, &acts, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	nrt_inspect_config_free_activity_types(acts, n);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, "all", false), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, "device_profile", true), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_get_enabled_activity_types(o, &acts, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(acts[0], "device_profile");
	nrt_inspect_config_free_activity_types(acts, n);
	ck_assert_int_eq(nrt_inspect_config_set_defaults(o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_get_enabled_activity_types(o, &acts, &n), NRT_SUCCESS);
	ck_assert_uint_eq(n, 4);
	nrt_inspect_config_free_activity_types(acts, n);
	ck_assert_int_eq(nrt_inspect_config_free(o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_free(NULL), NRT_SUCCESS);
}
END_TEST

/* nrt_inspect_begin_with_options: the options, not NEURON_RT_INSPECT_*,
 * choose what is recorded and where; the session id numbers the file; the
 * defaults record nothing; a disabled core gets no device profile; options
 * with nothing behind them are reported once at INFO. */
START_TEST(test_inspect_begin_with_options)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("opts");
	char path[1024];
	nrt_inspect_config_t *o = NULL;
	ck_assert_int_eq(nrt_inspect_config_allocate(&o), NRT_SUCCESS);
	NRT_STATUS before = nrt_inspect_begin_with_options(o);
	ck_assert(before == NRT_UNINITIALIZED || before == NRT_CLOSED); /* CLOSED with CK_FORK=no */
	/* Ignored by this call (the SDK says so): a bad value does not stop it. */
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "bogus", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", tmp_path("env-dir"), 1);
	setenv("NEURON_RT_LOG_LEVEL", "INFO", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 256);

	/* The defaults (NULL): running, recording nothing, writing nothing
	 * (their directory, ./output, is made in the test's own directory). */
	char cwd[1024];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(tmpdir), 0);
	test_capture_begin();
	ck_assert_int_eq(nrt_inspect_begin_with_options(NULL), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "enable_inspect is off in the options: this inspection records nothing"),
		      "log: %s", log);
	ck_assert_msg(strstr(log, "activity host_memory is not implemented by neuronsim"), "log: %s", log);
	ck_assert_msg(strstr(log, "activity cpu_util is not implemented by neuronsim"), "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_inspect_begin(), NRT_INVALID); /* one at a time */
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	session_path("output", 1, path, sizeof(path));
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_int_eq(chdir(cwd), 0);
	ck_assert_int_ne(access(tmp_path("env-dir"), F_OK), 0);

	/* Recording: session 5, the device profile of every execution. */
	ck_assert_int_eq(nrt_inspect_config_set_enable_inspect(o, true), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_session_id(o, 5), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_inspect_device_profile_mode(o, NRT_INSPECT_DEVICE_PROFILE_MODE_SESSION),
			 NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_SUCCESS);
	log = test_capture_end();
	ck_assert_msg(!strstr(log, "host_memory"), "reported twice: %s", log); /* once per process */
	ck_assert_msg(!strstr(log, "records nothing"), "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_inspect_config_free(o), NRT_SUCCESS); /* not needed after the call */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_INVALID);
	session_path(out, 5, path, sizeof(path));
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 2);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 2);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "device_profile"), "session");
	json_decref(root);

	/* The same session id again: the next free number. Core 0 disabled: no
	 * device profile; system profile off: no runtime spans either. */
	ck_assert_int_eq(nrt_inspect_config_allocate(&o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_enable_inspect(o, true), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_session_id(o, 5), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_capture_enabled_for_nc(o, 0, false), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, "system_profile", false), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	session_path(out, 6, path, sizeof(path));
	root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 0);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 0);
	json_decref(root);
	/* Core 0 enabled again, model mode (the default): its first execution. */
	ck_assert_int_eq(nrt_inspect_config_set_capture_enabled_for_nc(o, 0, true), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_SUCCESS);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	session_path(out, 7, path, sizeof(path));
	root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 1);
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "device_profile"), "model");
	json_decref(root);

	/* An output directory that cannot be made, and continuous profiling. */
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, "/proc/neuronsim-no/such"), NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_INVALID);
	log = test_capture_end();
	ck_assert_msg(strstr(log, "nrt_inspect_begin_with_options: the output directory "
				  "'/proc/neuronsim-no/such' cannot be created"), "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_inspect_config_set_output_dir(o, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_start(NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_config_set_activity(o, "device_profile", false), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin_with_options(o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_config_free(o), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	tmp_teardown();
}
END_TEST

/* nrt_trace_start/stop (nrt_experimental.h): the system events of every core
 * between them, with trace_mem the device memory allocations and frees, to
 * the file the stop names; misuse refused with a message; a trace and a
 * nrt_profile_start session side by side; nrt_close discards a running one. */
START_TEST(test_trace_start_stop)
{
	env_clean();
	tmp_setup();
	const char *path = tmp_path("trace.json.gz");
	NRT_STATUS before = nrt_trace_start(true);
	ck_assert(before == NRT_UNINITIALIZED || before == NRT_CLOSED); /* CLOSED with CK_FORK=no */
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 256);
	test_capture_begin();
	ck_assert_int_eq(nrt_trace_stop(path), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_msg(strstr(log, "nrt_trace_stop: no trace is running"), "log: %s", log);
	free(log);

	ck_assert_int_eq(nrt_trace_start(true), NRT_SUCCESS);
	ck_assert_int_eq(nrt_trace_start(false), NRT_INVALID);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	nrt_tensor_t *t = NULL;
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 4096, "scratch_t", &t), NRT_SUCCESS);
	nrt_tensor_free(&t);
	/* A model's profile inside the trace: its stop leaves the trace's events. */
	ck_assert_int_eq(nrt_profile_start(f.m, tmp_path("model.json")), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	test_capture_begin();
	ck_assert_int_eq(nrt_trace_stop(NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_trace_stop(""), NRT_INVALID);
	ck_assert_int_eq(nrt_trace_stop("/nonexistent-dir/trace.json"), NRT_INVALID);
	log = test_capture_end();
	ck_assert_msg(strstr(log, "nrt_trace_stop: filename is NULL") && strstr(log, "the trace goes on") &&
		      strstr(log, "nrt_trace_stop: filename is empty") &&
		      strstr(log, "nrt_trace_stop: cannot write '/nonexistent-dir/trace.json'"), "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* still tracing */
	ck_assert_int_eq(nrt_trace_stop(path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* after: not recorded */
	ck_assert_int_eq(nrt_trace_stop(path), NRT_INVALID);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 3);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 0); /* no device profile */
	ck_assert_str_eq(sget(json_object_get(root, "otherData"), "session"), "nrt_trace_start");
	ck_assert_uint_eq(count(root, "i", "memory", "device_mem_alloc"), 1);
	ck_assert_uint_eq(count(root, "i", "memory", "device_mem_free"), 1);
	json_t *args = json_object_get(find(root, "i", "device_mem_alloc", 0), "args");
	ck_assert_str_eq(sget(args, "category"), "tensors");
	ck_assert_int_ge(iget(args, "bytes"), 4096);
	ck_assert_int_eq(iget(args, "nc"), 1);
	json_decref(root);

	/* Without trace_mem: no memory events. */
	ck_assert_int_eq(nrt_trace_start(false), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "scratch_t", &t), NRT_SUCCESS);
	nrt_tensor_free(&t);
	ck_assert_int_eq(nrt_trace_stop(tmp_path("plain.json")), NRT_SUCCESS);
	root = load_trace(tmp_path("plain.json"));
	ck_assert_uint_eq(count(root, "i", "memory", NULL), 0);
	json_decref(root);

	/* Not stopped: nrt_close discards it, with a warning. */
	ck_assert_int_eq(nrt_trace_start(true), NRT_SUCCESS);
	fx_teardown(&f);
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	test_capture_begin();
	nrt_close();
	log = test_capture_end();
	setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
	ck_assert_msg(strstr(log, "nrt_close: the trace begun by nrt_trace_start was not stopped"), "log: %s", log);
	free(log);
	ck_assert_int_eq(nrt_trace_stop(path), NRT_CLOSED);
	tmp_teardown();
}
END_TEST

/* The files of dir whose names start with prefix, sorted; returns how many
 * (at most 8) and their paths in out. */
static int cont_files(const char *dir, const char *prefix, char out[8][1024])
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 8)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			snprintf(out[n++], 1024, "%s/%s", dir, de->d_name);
	closedir(d);
	qsort(out, (size_t)n, 1024, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* Continuous profiling: every execution traced, the latest per core saved on
 * demand into a new file, nothing written otherwise. */
START_TEST(test_continuous_profiling_saves_latest_execution)
{
	env_clean();
	tmp_setup();
	const char *dir = tmp_path("cont");
	nrt_profile_continuous_options_t *o = NULL;
	ck_assert_int_eq(nrt_profile_continuous_options_allocate(&o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_options_set_output_dir(o, dir), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_options_set_output_dir(o, ""), NRT_INVALID);
	NRT_STATUS before = nrt_profile_continuous_start(o);
	ck_assert(before == NRT_UNINITIALIZED || before == NRT_CLOSED); /* CLOSED with CK_FORK=no */
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 256);
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_INVALID); /* not started */
	ck_assert_int_eq(nrt_profile_continuous_stop(), NRT_INVALID);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS); /* before the start */
	ck_assert_int_eq(nrt_profile_continuous_start(o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_start(o), NRT_INVALID);
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_INVALID); /* nothing since the start */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char files[8][1024];
	ck_assert_int_eq(cont_files(dir, "add_", files), 0); /* nothing written until a save */
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_SUCCESS);
	ck_assert_int_eq(cont_files(dir, "add_nc0_exec3_", files), 1);
	json_t *root = load_trace(files[0]);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 1);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
	json_t *d = find(root, "X", "add.3", 0);
	ck_assert_int_eq(iget(json_object_get(d, "args"), "exec_index"), 3);
	json_decref(root);
	ck_assert_int_eq(nrt_profile_continuous_save(1, o), NRT_INVALID); /* core 1 ran nothing */
	ck_assert_int_eq(nrt_profile_continuous_save(4, o), NRT_INVALID); /* not visible */
	/* Saving again writes another file, never over the first. */
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_SUCCESS);
	ck_assert_int_eq(cont_files(dir, "add_", files), 3);
	ck_assert_int_eq(cont_files(dir, "add_nc0_exec4_", files), 2);
	ck_assert_int_eq(nrt_profile_continuous_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_save(0, o), NRT_INVALID);
	/* Not alongside an inspection that records a device profile. */
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", tmp_path("insp"), 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
	ck_assert_int_eq(nrt_inspect_begin(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_start(NULL), NRT_INVALID);
	ck_assert_int_eq(nrt_inspect_stop(), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_continuous_start(NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrt_inspect_begin(), NRT_INVALID);
	fx_teardown(&f);
	nrt_close(); /* running: stopped and freed, nothing written */
	ck_assert_int_eq(cont_files(dir, "add_", files), 3);
	ck_assert_int_eq(nrt_profile_continuous_options_free(o), NRT_SUCCESS);
	tmp_teardown();
}
END_TEST

START_TEST(test_inspect_model_mode_traces_first_execution_after_warmup)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("o");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "1", 1);
	setenv("NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "2", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 256);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 5);
	ck_assert_uint_eq(count(root, "X", "job", NULL), 1);
	json_t *d = find(root, "X", "add.3", 0);
	ck_assert_int_eq(iget(json_object_get(d, "args"), "exec_index"), 2);
	json_decref(root);
	tmp_teardown();
}
END_TEST

START_TEST(test_inspect_system_and_device_switches)
{
	env_clean();
	tmp_setup();
	/* default: system trace only */
	const char *out = tmp_path("sys");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 64);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 1);
	ck_assert_uint_eq(count(root, "X", "device", NULL), 0);
	json_decref(root);
	/* device trace without the system trace */
	out = tmp_path("dev");
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	setenv("NEURON_RT_INSPECT_SYSTEM_PROFILE", "0", 1);
	setenv("NEURON_RT_INSPECT_DEVICE_PROFILE", "session", 1);
	rt_init_ok();
	fx_setup(&f, 64);
	ck_assert_int_eq(nrt_neuronsim_trace_begin("ignored"), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", NULL), 0);
	ck_assert_uint_eq(count(root, "X", "user", NULL), 0);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
	json_decref(root);
	/* the project's boolean spellings */
	out = tmp_path("yes");
	env_clean();
	setenv("NEURON_RT_INSPECT_ENABLE", "Yes", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	setenv("NEURON_RT_INSPECT_SYSTEM_PROFILE", "on", 1);
	rt_init_ok();
	nrt_close();
	root = load_inspect_trace(out);
	json_decref(root);
	/* INSPECT off: nothing written */
	env_clean();
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", tmp_path("off"), 1);
	rt_init_ok();
	nrt_close();
	ck_assert_int_ne(access(tmp_path("off"), F_OK), 0);
	tmp_teardown();
}
END_TEST

START_TEST(test_inspect_bad_env_fails_init)
{
	env_clean();
	tmp_setup();
	static const char *const bad[][2] = {
		{ "NEURON_RT_INSPECT_ENABLE", "maybe" },
		{ "NEURON_RT_INSPECT_SYSTEM_PROFILE", "2" },
		{ "NEURON_RT_INSPECT_DEVICE_PROFILE", "always" },
		{ "NEURONSIM_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "-1" },
		{ "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "-1" }, /* deprecated name */
		{ "NEURONSIM_PROFILE_MAX_SPANS", "lots" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		env_clean();
		setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
		setenv("NEURON_RT_INSPECT_OUTPUT_DIR", tmp_path("o"), 1);
		setenv(bad[i][0], bad[i][1], 1);
		test_capture_begin();
		ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
		char *log = test_capture_end();
		ck_assert_msg(strstr(log, bad[i][0]) && strstr(log, bad[i][1]), "%s", log);
		free(log);
	}
	/* an output directory that cannot be created */
	env_clean();
	FILE *fp = fopen(tmp_path("file"), "w");
	fclose(fp);
	char under[300];
	snprintf(under, sizeof(under), "%s/sub", tmp_path("file"));
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", under, 1);
	test_capture_begin();
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "NEURON_RT_INSPECT_OUTPUT_DIR"));
	ck_assert_ptr_nonnull(strstr(log, "cannot be created"));
	free(log);
	/* and the runtime still starts once the environment is fixed */
	env_clean();
	rt_init_ok();
	nrt_close();
	tmp_teardown();
}
END_TEST

START_TEST(test_blocks_before_init_are_adopted_by_inspect)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("o");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	/* e.g. the compilation, before the runtime exists */
	ck_assert_int_eq(nrt_neuronsim_trace_begin("compile"), NRT_SUCCESS);
	usleep(1000);
	ck_assert_int_eq(nrt_neuronsim_trace_end(), NRT_SUCCESS);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	fx_teardown(&f);
	nrt_close();
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "user", "compile"), 1);
	json_t *c = find(root, "X", "compile", 0);
	json_t *l = find(root, "X", "nrt_load", 0);
	ck_assert_int_ge(ns_of(c, "dur"), 1000000);
	ck_assert_int_le(ns_of(c, "ts") + ns_of(c, "dur"), ns_of(l, "ts"));
	ck_assert_int_ge(ns_of(c, "ts"), 0);
	json_decref(root);
	tmp_teardown();
}
END_TEST

START_TEST(test_inspect_and_profile_start_together)
{
	env_clean();
	tmp_setup();
	const char *out = tmp_path("o");
	setenv("NEURON_RT_INSPECT_ENABLE", "1", 1);
	setenv("NEURON_RT_INSPECT_OUTPUT_DIR", out, 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	const char *path = tmp_path("api.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	fx_teardown(&f);
	nrt_close();
	json_t *api = load_trace(path);
	ck_assert_uint_eq(count(api, "X", "runtime", "nrt_execute"), 1);
	ck_assert_uint_eq(count(api, "X", "device", "add.3"), 1);
	json_decref(api);
	/* the inspect session kept everything from init to close */
	json_t *root = load_inspect_trace(out);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 3);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_load"), 1);
	json_decref(root);
	tmp_teardown();
}
END_TEST

START_TEST(test_profile_not_stopped_is_written_at_close)
{
	env_clean();
	tmp_setup();
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	const char *path = tmp_path("t.json.gz");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	fx_teardown(&f);
	test_capture_begin();
	nrt_close();
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "was not stopped"));
	free(log);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 1);
	json_decref(root);
	tmp_teardown();
}
END_TEST

START_TEST(test_span_limit_drops_later_executions)
{
	env_clean();
	tmp_setup();
	setenv("NEURONSIM_PROFILE_MAX_SPANS", "2", 1);
	setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 16);
	const char *path = tmp_path("t.json");
	ck_assert_int_eq(nrt_profile_start(f.m, path), NRT_SUCCESS);
	test_capture_begin();
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(nrt_execute(f.m, f.in, f.outs), NRT_SUCCESS);
	char *log = test_capture_end();
	ck_assert_ptr_nonnull(strstr(log, "NEURONSIM_PROFILE_MAX_SPANS"));
	free(log);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);
	json_t *root = load_trace(path);
	ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
	ck_assert_uint_eq(count(root, "X", "runtime", "nrt_execute"), 5);
	ck_assert_int_eq(iget(json_object_get(root, "otherData"), "jobs_dropped"), 3);
	json_decref(root);
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* Every allocation of a profiled run fails in turn: executions still
 * succeed (the trace loses what it could not hold), stop reports what it
 * could not write, nothing leaks (ASan), and whatever was written parses. */
START_TEST(test_profile_survives_every_allocation_failure)
{
	env_clean();
	tmp_setup();
	setenv("NEURON_RT_LOG_LEVEL", "OFF", 1);
	rt_init_ok();
	fx_t f;
	fx_setup(&f, 64);
	const char *path = tmp_path("f.json");
	long n = 1;
	for (;; n++) {
		unlink(path);
		rt_alloc_fault_arm(n);
		NRT_STATUS st = nrt_profile_start(f.m, path);
		NRT_STATUS e1 = nrt_execute(f.m, f.in, f.outs);
		NRT_STATUS b = nrt_neuronsim_trace_begin("block");
		NRT_STATUS e2 = nrt_execute(f.m, f.in, f.outs);
		NRT_STATUS be = nrt_neuronsim_trace_end();
		NRT_STATUS sp = nrt_profile_stop(NULL);
		int fired = rt_alloc_fault_disarm();
		ck_assert_int_eq(st, NRT_SUCCESS);
		ck_assert_int_eq(b, NRT_SUCCESS);
		ck_assert_int_eq(be, NRT_SUCCESS);
		ck_assert_msg(e1 == NRT_SUCCESS || e1 == NRT_RESOURCE, "n=%ld: %d", n, e1);
		ck_assert_msg(e2 == NRT_SUCCESS || e2 == NRT_RESOURCE, "n=%ld: %d", n, e2);
		ck_assert_msg(sp == NRT_SUCCESS || sp == NRT_RESOURCE || sp == NRT_FAILURE, "n=%ld: %d", n, sp);
		if (sp == NRT_SUCCESS) {
			json_t *root = load_trace(path);
			check_nesting(root);
			ck_assert_uint_le(count(root, "X", "device", "add.3"), 2);
			if (!fired) {
				ck_assert_uint_eq(count(root, "X", "device", "add.3"), 2);
				ck_assert_uint_eq(count(root, "X", "user", "block"), 1);
			}
			json_decref(root);
		} else {
			ck_assert_int_ne(access(path, F_OK), 0);
		}
		if (!fired)
			break;
	}
	ck_assert_int_gt(n, 3); /* the profiler did allocate, and each one failed once */
	fx_teardown(&f);
	nrt_close();
	tmp_teardown();
}
END_TEST

/* ---- a corpus model: the device trace against the simulator ------------ */

typedef struct engine_sum {
	int64_t spans_ns[5];
	int64_t sim_ns[5];
} engine_sum_t;

START_TEST(test_corpus_device_trace_matches_simulator_accounting)
{
	env_clean();
	/* The QEMU guest of the kernel-backend suite (run-qemu-kb) has no corpus;
	 * anywhere else a missing corpus is a failure. */
	if (access(NCC_HLO_CORPUS "/mlp-mini_mlp_single.hlo", R_OK) != 0 &&
	    access("/dev/neuronsim0", F_OK) == 0) {
		fprintf(stderr, "test_corpus_device_trace_matches_simulator_accounting: skipped, no "
			"corpus at %s\n", NCC_HLO_CORPUS);
		return;
	}
	tmp_setup();
	/* -O2: several engines run concurrently on their own streams */
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.no_cache = true;
	o.use_env = false;
	ncc_compile_result_t res;
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_compile_file(NCC_HLO_CORPUS "/mlp-mini_mlp_single.hlo", &o, &res, &err) ==
		      NCC_OK, "%s", err.msg);
	neff_view_t view;
	char perr[256];
	ck_assert_int_eq(ns_status_consume_message(neff_parse(res.neff, res.neff_size, &view),
						   perr, sizeof(perr)), NS_STATUS_OK);

	setenv("NEURONSIM_NAN_CHECK", "0", 1);
	rt_init_ok();
	nrt_model_t *m;
	ck_assert_int_eq(nrt_load(res.neff, res.neff_size, 0, -1, &m), NRT_SUCCESS);
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), 0);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), 0);
	nrt_tensor_t *ts[64];
	uint32_t nt = view.meta->n_tensors;
	ck_assert_uint_le(nt, 64);
	for (uint32_t i = 0; i < nt; i++) {
		const neff_tensor_t *t = &view.tensors[i];
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size ? t->size : 1,
						     t->name, &ts[i]), 0);
		ck_assert_int_eq(nrt_tensor_memset(ts[i], 0, 0, t->size), 0);
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(t->usage == NEFF_USAGE_INPUT ? in : out,
							      t->name, ts[i]), 0);
	}
	const char *path = tmp_path("corpus.json.gz");
	ck_assert_int_eq(nrt_profile_start(m, path), NRT_SUCCESS);
	const int runs = 4;
	for (int r = 0; r < runs; r++)
		ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(NULL), NRT_SUCCESS);

	json_t *root = load_trace(path);
	check_nesting(root);
	engine_sum_t sum = { { 0 }, { 0 } };
	static const char *const keys[5] = { "tensor", "vector", "scalar", "gpsimd", "dma" };
	uint32_t total_insns = 0;
	for (int e = 0; e < 5; e++)
		total_insns += view.code_count[0][e];
	size_t i, n_spans = 0, n_jobs = 0;
	int engines_used = 0;
	json_t *e;
	json_array_foreach(events(root), i, e) {
		if (strcmp(sget(e, "ph"), "X") != 0)
			continue;
		json_t *args = json_object_get(e, "args");
		if (strcmp(sget(e, "cat"), "job") == 0) {
			n_jobs++;
			json_t *busy = json_object_get(args, "engine_busy_ns");
			for (int k = 0; k < 5; k++)
				sum.sim_ns[k] += iget(busy, keys[k]);
			ck_assert_int_eq(iget(args, "spans_dropped"), 0);
			ck_assert_int_eq(iget(args, "spans"), iget(args, "insns_executed"));
			ck_assert_int_eq(iget(args, "spans"), total_insns);
			continue;
		}
		if (strcmp(sget(e, "cat"), "device") != 0)
			continue;
		n_spans++;
		int64_t eng = iget(e, "tid");
		ck_assert(eng >= 0 && eng < 5);
		ck_assert_int_eq(iget(e, "pid"), DEVICE_PID_BASE);
		sum.spans_ns[eng] += ns_of(e, "dur");
		/* the span is an instruction of the NEFF, named by its HLO instruction */
		int64_t idx = iget(args, "insn_index");
		ck_assert(idx >= 0 && (uint32_t)idx < view.code_count[0][eng]);
		const isa_insn_t *insn = &view.code[0][eng][idx];
		const char *hlo, *op, *file;
		uint32_t line;
		neff_debug_lookup(&view, insn->debug_id, &hlo, &op, &file, &line);
		ck_assert_msg(hlo && hlo[0], "instruction %lld of engine %lld has no HLO name",
			      (long long)idx, (long long)eng);
		ck_assert_str_eq(sget(e, "name"), hlo);
		ck_assert_str_eq(sget(args, "op_type"), op);
		ck_assert_str_eq(sget(args, "opcode"), isa_opcode_name(insn->opcode));
		if (insn->opcode == ISA_OP_MATMUL)
			ck_assert_int_gt(iget(args, "flops"), 0);
		if (insn->opcode != ISA_OP_NOP && insn->opcode != ISA_OP_JUMP)
			ck_assert_int_gt(iget(args, "bytes"), 0);
	}
	ck_assert_uint_eq(n_jobs, (size_t)runs);
	ck_assert_uint_eq(n_spans, (size_t)runs * total_insns);
	for (int k = 0; k < 5; k++) {
		/* exact: both are sums of the same per-instruction clock readings */
		ck_assert_msg(sum.spans_ns[k] == sum.sim_ns[k], "%s engine: spans %lld ns, simulator %lld ns",
			      keys[k], (long long)sum.spans_ns[k], (long long)sum.sim_ns[k]);
		engines_used += sum.sim_ns[k] > 0;
	}
	ck_assert_int_ge(engines_used, 2);
	json_decref(root);
	for (uint32_t k = 0; k < nt; k++)
		nrt_tensor_free(&ts[k]);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	ck_assert_int_eq(nrt_unload(m), NRT_SUCCESS);
	nrt_close();
	ncc_compile_result_release(&res);
	tmp_teardown();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime_profile");
	TCase *tc = tcase_create("api");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_profile_writes_chrome_trace);
	tcase_add_test(tc, test_profile_gz_name_writes_gzip);
	tcase_add_test(tc, test_profile_misuse);
	tcase_add_test(tc, test_profile_window_jobs_match_their_executions);
	tcase_add_test(tc, test_profile_stop_write_failure_is_reported);
	tcase_add_test(tc, test_profile_trace_never_follows_planted_symlinks);
	tcase_add_test(tc, test_profile_survives_unload_and_other_models);
	tcase_add_test(tc, test_profile_multi_core_model_one_process_per_core);
	tcase_add_test(tc, test_profile_not_stopped_is_written_at_close);
	tcase_add_test(tc, test_span_limit_drops_later_executions);
	tcase_add_test(tc, test_profile_survives_every_allocation_failure);
	suite_add_tcase(s, tc);
	tc = tcase_create("blocks");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_user_blocks_nest_and_steps);
	tcase_add_test(tc, test_user_blocks_are_per_thread);
	tcase_add_test(tc, test_user_block_misuse);
	tcase_add_test(tc, test_blocks_begun_before_recording_are_not_recorded);
	suite_add_tcase(s, tc);
	tc = tcase_create("inspect");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_inspect_env_writes_the_neuron_runtime_layout);
	tcase_add_test(tc, test_inspect_written_at_exit_without_nrt_close);
	tcase_add_test(tc, test_inspect_model_mode_traces_first_execution_after_warmup);
	tcase_add_test(tc, test_inspect_system_and_device_switches);
	tcase_add_test(tc, test_inspect_bad_env_fails_init);
	tcase_add_test(tc, test_blocks_before_init_are_adopted_by_inspect);
	tcase_add_test(tc, test_inspect_and_profile_start_together);
	tcase_add_test(tc, test_inspect_begin_stop_api_window);
	tcase_add_test(tc, test_inspect_begin_refused_while_env_inspection_runs);
	tcase_add_test(tc, test_continuous_profiling_saves_latest_execution);
	tcase_add_test(tc, test_inspect_config_setters_validate);
	tcase_add_test(tc, test_inspect_begin_with_options);
	tcase_add_test(tc, test_trace_start_stop);
	suite_add_tcase(s, tc);
	tc = tcase_create("corpus");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corpus_device_trace_matches_simulator_accounting);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
