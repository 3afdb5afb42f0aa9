/* Check tests of neuron-profile: summary's tables on hand-made and libnrt-written traces, capture -n NEFF -s PROFILE and view --output-format, and every refusal (usage, missing, corrupt, not a trace, failed execution). */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "neuronsim/neff.h"
#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_neuronsim.h"
#include "nrt/nrt_profile.h"
#include "rt_fixture.h"
#include "test_neffs.h"

/* The code of a call's status; its message is left in buf and the status freed. */
#define STATUS_CODE(call, buf) ns_status_consume_message((call), (buf), sizeof(buf))

static char tmpdir[64];
static char *out_text, *err_text;

static void setup(void)
{
	rt_tmpdir_create(tmpdir, sizeof(tmpdir), "neuron-profile-test");
	out_text = err_text = NULL;
}

static void teardown(void)
{
	ck_assert_int_eq(rt_tmpdir_remove(tmpdir), 0);
	free(out_text);
	free(err_text);
}

static const char *path_in(const char *name)
{
	return rt_tmpdir_path(tmpdir, name);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Runs neuron-profile with args (a shell fragment); stdout and stderr land in
 * out_text and err_text. Returns the exit status. */
static int run(const char *fmt, ...)
{
	const char *exe = getenv("NEURON_PROFILE");
	ck_assert_msg(exe != NULL, "NEURON_PROFILE must name the neuron-profile binary");
	char args[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", exe, args, path_in("stdout"),
		 path_in("stderr"));
	int rc = system(cmd);
	ck_assert(WIFEXITED(rc));
	free(out_text);
	free(err_text);
	out_text = slurp(path_in("stdout"));
	err_text = slurp(path_in("stderr"));
	return WEXITSTATUS(rc);
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void write_gz(const char *path, const char *text)
{
	gzFile gz = gzopen(path, "wb");
	ck_assert_ptr_nonnull(gz);
	ck_assert_int_eq(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
	ck_assert_int_eq(gzclose(gz), Z_OK);
}

#define D "16777216"
/* Two jobs on one core: the vector engine runs dot.1 (10 + 20 us) and
 * add.2 (3 us, 2 us after dot.1), the dma engine copy.3 (5 us). The jobs say
 * what the simulator counted (here the same). */
static const char handmade[] =
	"{\"traceEvents\":["
	"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" D ",\"tid\":0,\"args\":{\"name\":\"NeuronCore 0\"}},"
	"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" D ",\"tid\":1,\"args\":{\"name\":\"vector engine\"}},"
	"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" D ",\"tid\":4,\"args\":{\"name\":\"dma engine\"}},"
	"{\"name\":\"m #0\",\"cat\":\"job\",\"ph\":\"X\",\"pid\":" D ",\"tid\":5,\"ts\":0,\"dur\":20,"
	"\"args\":{\"engine_busy_ns\":{\"vector\":13000,\"dma\":5000},\"spans_dropped\":0}},"
	"{\"name\":\"dot.1\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":0,\"dur\":10,"
	"\"args\":{\"op_type\":\"dot\",\"flops\":2000000}},"
	"{\"name\":\"add.2\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":12,\"dur\":3,"
	"\"args\":{\"op_type\":\"add\",\"flops\":100}},"
	"{\"name\":\"copy.3\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":4,\"ts\":0,\"dur\":5,"
	"\"args\":{\"op_type\":\"copy\",\"flops\":0}},"
	"{\"name\":\"m #1\",\"cat\":\"job\",\"ph\":\"X\",\"pid\":" D ",\"tid\":5,\"ts\":100,\"dur\":30,"
	"\"args\":{\"engine_busy_ns\":{\"vector\":20000,\"dma\":0},\"spans_dropped\":0}},"
	"{\"name\":\"dot.1\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":100,\"dur\":20,"
	"\"args\":{\"op_type\":\"dot\",\"flops\":2000000}},"
	"{\"name\":\"nrt_execute\",\"cat\":\"runtime\",\"ph\":\"X\",\"pid\":7,\"tid\":7,\"ts\":0,\"dur\":140}"
	"]}";

/* The line of out_text that contains all of the given words, or NULL. */
static const char *line_with(const char *a, const char *b, const char *c)
{
	static char line[1024];
	const char *p = out_text;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c)))
			return line;
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

START_TEST(test_summary_of_handmade_trace)
{
	write_file(path_in("t.json"), handmade, strlen(handmade));
	ck_assert_int_eq(run("summary '%s'", path_in("t.json")), 0);
	ck_assert_str_eq(err_text, "");
	ck_assert_ptr_nonnull(strstr(out_text, "4 device span(s) (38.000 us of engine time) in 2 job(s); 1 host event(s)"));
	/* instructions: dot.1 30 us over 2 runs, 4 MFLOP -> 133.333 GFLOP/s */
	ck_assert_ptr_nonnull(line_with("   1 ", "30.000", "dot.1 (dot)"));
	ck_assert_ptr_nonnull(line_with("15.000", "133.333", "dot.1"));
	ck_assert_ptr_nonnull(line_with("   2 ", "5.000", "copy.3 (copy)"));
	ck_assert_ptr_nonnull(line_with("   3 ", "3.000", "add.2 (add)"));
	/* ops */
	ck_assert_ptr_nonnull(strstr(out_text, "Top 10 HLO ops (op_type) by device time"));
	/* engines: vector busy 33 of the 50 us the core ran jobs; simulator 33 */
	const char *l = line_with("NeuronCore 0", "vector engine", "33.000");
	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_nonnull(strstr(l, "50.000"));
	ck_assert_ptr_nonnull(strstr(l, "66.00%"));
	ck_assert_ptr_nonnull(line_with("dma engine", "5.000", "10.00%"));
	/* the one gap: vector engine between dot.1 and add.2, 2 us at 10 us */
	l = line_with("dot.1 -> add.2", "2.000", "10.000");
	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_nonnull(strstr(l, "vector engine"));
	/* --top limits every table */
	ck_assert_int_eq(run("summary --top 1 '%s'", path_in("t.json")), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "... 2 more"));
	ck_assert_ptr_null(line_with("   2 ", "copy.3", NULL));
	/* options after the file, and the array form of the format */
	const char *arr = strchr(handmade, '[');
	write_file(path_in("a.json"), arr, strlen(arr) - 1);
	ck_assert_int_eq(run("summary '%s' -n 2", path_in("a.json")), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "... 1 more"));
}
END_TEST

/* Three executions of model m on one core: the first (exec_index 0) runs
 * dot.1 for 190 us (its job 200), the others 10 us each (jobs of 20); a span of another model without
 * an exec_index is always kept. */
static const char warm[] =
	"{\"traceEvents\":["
	"{\"name\":\"m #0\",\"cat\":\"job\",\"ph\":\"X\",\"pid\":" D ",\"tid\":5,\"ts\":0,\"dur\":200,"
	"\"args\":{\"model\":\"m\",\"exec_index\":0}},"
	"{\"name\":\"dot.1\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":0,\"dur\":190,"
	"\"args\":{\"op_type\":\"dot\",\"exec_index\":0}},"
	"{\"name\":\"m #1\",\"cat\":\"job\",\"ph\":\"X\",\"pid\":" D ",\"tid\":5,\"ts\":200,\"dur\":20,"
	"\"args\":{\"model\":\"m\",\"exec_index\":1}},"
	"{\"name\":\"dot.1\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":200,\"dur\":10,"
	"\"args\":{\"op_type\":\"dot\",\"exec_index\":1}},"
	"{\"name\":\"m #2\",\"cat\":\"job\",\"ph\":\"X\",\"pid\":" D ",\"tid\":5,\"ts\":300,\"dur\":20,"
	"\"args\":{\"model\":\"m\",\"exec_index\":2}},"
	"{\"name\":\"dot.1\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":300,\"dur\":10,"
	"\"args\":{\"op_type\":\"dot\",\"exec_index\":2}},"
	"{\"name\":\"add.2\",\"cat\":\"device\",\"ph\":\"X\",\"pid\":" D ",\"tid\":1,\"ts\":400,\"dur\":4,"
	"\"args\":{\"op_type\":\"add\",\"exec_index\":1e300}}"
	"]}";

/* A model's first execution, slower than the others' median by far, gets a
 * note; --warmup N leaves each model's first N executions out of every
 * table (summary and view), and says how much it left. */
START_TEST(test_summary_warmup)
{
	write_file(path_in("w.json"), warm, strlen(warm));
	ck_assert_int_eq(run("summary '%s'", path_in("w.json")), 0);
	const char *l = line_with("note: m's first execution took 200.000 us", "median of its 2 others 20.000 us",
				  "--warmup 1");
	ck_assert_msg(l != NULL, "%s", out_text);
	ck_assert_ptr_nonnull(line_with("   1 ", "210.000", "dot.1 (dot)"));
	ck_assert_int_eq(run("summary --warmup 1 '%s'", path_in("w.json")), 0);
	ck_assert_ptr_null(strstr(out_text, "note:"));
	ck_assert_ptr_nonnull(strstr(out_text, "3 device span(s) (24.000 us of engine time) in 2 job(s)"));
	ck_assert_ptr_nonnull(strstr(out_text, "left out (--warmup 1): 1 span(s) and 1 job(s)"));
	ck_assert_ptr_nonnull(line_with("   1 ", "20.000", "dot.1 (dot)"));
	/* the span whose exec_index is not a count (1e300) stays */
	ck_assert_ptr_nonnull(line_with("   2 ", "4.000", "add.2 (add)"));
	/* past every execution: only that span */
	ck_assert_int_eq(run("summary '%s' --warmup 5", path_in("w.json")), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "1 device span(s) (4.000 us of engine time) in 0 job(s)"));
	/* view's tables too */
	ck_assert_int_eq(run("view -s '%s' --warmup 1", path_in("w.json")), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "left out (--warmup 1)"));
	/* a first execution within 1.5x of the others' median: no note */
	char *even = strdup(warm);
	char *p = strstr(even, "\"dur\":200,");
	memcpy(p, "\"dur\": 29,", 10); /* the same length, valid JSON */
	write_file(path_in("e.json"), even, strlen(even));
	free(even);
	ck_assert_int_eq(run("summary '%s'", path_in("e.json")), 0);
	ck_assert_ptr_null(strstr(out_text, "note:"));
	/* bad values */
	ck_assert_int_eq(run("summary --warmup -1 '%s'", path_in("w.json")), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "--warmup wants an integer in 0..1000000000, got '-1'"));
	ck_assert_int_eq(run("summary --warmup x '%s'", path_in("w.json")), 2);
	ck_assert_int_eq(run("capture -n a.neff -s p.json --warmup 1"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "--warmup is view's and summary's"));
}
END_TEST

/* The status of a builder call that must succeed. */
static void built(ns_status_t st)
{
	ck_assert_msg(!st, "building the NEFF: %s", ns_status_message(st));
}

static void *add_neff(size_t *size)
{
	uint64_t n = 4096;
	neff_builder_t *b = neff_builder_create("add", 1);
	uint32_t ia, ib, io, dbg;
	built(neff_builder_add_tensor(b, "a", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ia));
	built(neff_builder_add_tensor(b, "b", NEFF_USAGE_INPUT, ISA_DT_F32, 1, &n, -1, &ib));
	built(neff_builder_add_tensor(b, "out", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, &n, -1, &io));
	built(neff_builder_add_debug(b, "add.3", "aten__add", "model.py", 10, &dbg));
	isa_insn_t in = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	in.n_ap = 3;
	in.ap[0] = isa_ap_contig(ISA_REGION_IO0 + io, 0, ISA_DT_F32, 1, &n);
	in.ap[1] = isa_ap_contig(ISA_REGION_IO0 + ia, 0, ISA_DT_F32, 1, &n);
	in.ap[2] = isa_ap_contig(ISA_REGION_IO0 + ib, 0, ISA_DT_F32, 1, &n);
	in.debug_id = dbg;
	in.signal_sem = 0; /* the copy on the dma engine waits for the add */
	built(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &in, NULL));
	isa_insn_t cp = isa_insn_init(ISA_OP_COPY, 0);
	cp.n_ap = 2;
	cp.ap[0] = isa_ap_contig(ISA_REGION_IO0 + io, 0, ISA_DT_F32, 1, &n);
	cp.ap[1] = isa_ap_contig(ISA_REGION_IO0 + ia, 0, ISA_DT_F32, 1, &n);
	cp.debug_id = dbg;
	cp.wait_sem = 0;
	cp.wait_value = 1;
	built(neff_builder_emit(b, 0, ISA_ENGINE_DMA, &cp, NULL));
	void *neff;
	built(neff_builder_finish(b, &neff, size));
	neff_builder_destroy(b);
	return neff;
}

/* A trace of a real run, written by libnrt: the summary's engine busy time
 * equals the simulator's for the same jobs. */
START_TEST(test_summary_of_libnrt_trace)
{
	setenv("NEURONSIM_DEVICE_MEMORY", "256M", 1);
	rt_init_ok();
	size_t size;
	void *neff = add_neff(&size);
	nrt_model_t *m;
	ck_assert_int_eq(nrt_load(neff, size, 0, -1, &m), NRT_SUCCESS);
	nrt_tensor_t *t[3];
	const char *names[3] = { "a", "b", "out" };
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), 0);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096 * 4, names[i],
						     &t[i]), 0);
		ck_assert_int_eq(nrt_tensor_memset(t[i], 0, 0, 4096 * 4), 0);
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(i < 2 ? in : out, names[i], t[i]), 0);
	}
	const char *trace = path_in("run.json.gz");
	ck_assert_int_eq(nrt_profile_start(m, trace), NRT_SUCCESS);
	for (int r = 0; r < 3; r++)
		ck_assert_int_eq(nrt_execute(m, in, out), NRT_SUCCESS);
	ck_assert_int_eq(nrt_profile_stop(trace), NRT_SUCCESS);
	for (int i = 0; i < 3; i++)
		nrt_tensor_free(&t[i]);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	nrt_unload(m);
	nrt_close();
	free(neff);

	int rc = run("summary '%s'", trace);
	ck_assert_msg(rc == 0, "neuron-profile summary exited %d:\n%s", rc, err_text);
	ck_assert_ptr_nonnull(strstr(out_text, "6 device span(s)"));
	ck_assert_ptr_nonnull(strstr(out_text, "in 3 job(s)"));
	ck_assert_ptr_nonnull(line_with("   1 ", "add.3 (aten__add)", NULL));
	ck_assert_ptr_nonnull(line_with("aten__add", "     6 ", NULL));
	for (int e = 0; e < 2; e++) {
		const char *l = line_with("NeuronCore 0", e ? "dma engine" : "vector engine", NULL);
		ck_assert_ptr_nonnull(l);
		double busy, jobs, pct, sim;
		const char *p = strstr(l, "engine") + strlen("engine");
		ck_assert_int_eq(sscanf(p, "%lf %lf %lf%% %lf", &busy, &jobs, &pct, &sim), 4);
		ck_assert_double_eq_tol(busy, sim, 0.0015);
		ck_assert(busy > 0 && busy <= jobs);
	}
	/* the copy waits for the add: its gap, if any, is after the add */
	ck_assert_ptr_nonnull(strstr(out_text, "Largest idle gaps"));
}
END_TEST

START_TEST(test_summary_without_device_spans)
{
	const char *t = "{\"traceEvents\":[{\"name\":\"nrt_execute\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"
			"\"ts\":1,\"dur\":2},{\"name\":\"broken\",\"ph\":\"X\",\"pid\":1}]}";
	write_file(path_in("t.json"), t, strlen(t));
	ck_assert_int_eq(run("summary '%s'", path_in("t.json")), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "no device spans"));
	ck_assert_ptr_nonnull(strstr(out_text, "1 malformed event(s) skipped"));
}
END_TEST

START_TEST(test_help_and_usage_errors)
{
	ck_assert_int_eq(run("--help"), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "neuron-profile summary TRACE [--top N]"));
	ck_assert_int_eq(run("summary --help"), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "Usage:"));
	ck_assert_int_eq(run(""), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "missing command"));
	ck_assert_ptr_nonnull(strstr(err_text, "Try 'neuron-profile --help'"));
	ck_assert_int_eq(run("report x.json"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "unknown command 'report'"));
	ck_assert_int_eq(run("summary"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "summary needs a TRACE file"));
	ck_assert_int_eq(run("summary a.json b.json"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "unexpected argument 'b.json'"));
	ck_assert_int_eq(run("summary --top 0 a.json"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "--top wants an integer in 1..100000, got '0'"));
	ck_assert_int_eq(run("summary --top ten a.json"), 2);
	ck_assert_int_eq(run("summary --bogus a.json"), 2);
}
END_TEST

START_TEST(test_unreadable_and_corrupt_traces)
{
	/* missing */
	ck_assert_int_eq(run("summary '%s'", path_in("nope.json.gz")), 3);
	ck_assert_ptr_nonnull(strstr(err_text, "cannot open"));
	ck_assert_ptr_nonnull(strstr(err_text, "No such file or directory"));
	ck_assert_str_eq(out_text, "");
	/* a directory */
	ck_assert_int_eq(run("summary '%s'", tmpdir), 3);
	/* gzip header, then garbage */
	const unsigned char bad[] = { 0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3, 'x', 'y', 'z', 1, 2, 3 };
	write_file(path_in("bad.json.gz"), bad, sizeof(bad));
	ck_assert_int_eq(run("summary '%s'", path_in("bad.json.gz")), 3);
	ck_assert_ptr_nonnull(strstr(err_text, "gzip"));
	/* a valid gzip trace cut in half */
	write_gz(path_in("full.json.gz"), handmade);
	char *full = slurp(path_in("full.json.gz"));
	FILE *f = fopen(path_in("full.json.gz"), "rb");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fclose(f);
	write_file(path_in("half.json.gz"), full, (size_t)n / 2);
	free(full);
	ck_assert_int_eq(run("summary '%s'", path_in("full.json.gz")), 0);
	ck_assert_int_eq(run("summary '%s'", path_in("half.json.gz")), 3);
	ck_assert_ptr_nonnull(strstr(err_text, "gzip"));
	/* not JSON */
	write_file(path_in("text.json"), "hello, world\n", 13);
	ck_assert_int_eq(run("summary '%s'", path_in("text.json")), 3);
	ck_assert_ptr_nonnull(strstr(err_text, "is not JSON (line 1"));
	/* JSON, but not a trace */
	write_file(path_in("obj.json"), "{\"events\":[]}", 13);
	ck_assert_int_eq(run("summary '%s'", path_in("obj.json")), 3);
	ck_assert_ptr_nonnull(strstr(err_text, "not a Chrome trace: no traceEvents array"));
	/* empty file */
	write_file(path_in("empty.json"), "", 0);
	ck_assert_int_eq(run("summary '%s'", path_in("empty.json")), 3);
}
END_TEST

/* ---- the Neuron tool's CLI: capture -n NEFF -s PROFILE, view --output-format ---- */

static void write_sqrt_neff(const char *path)
{
	size_t size;
	void *neff = test_neff_sqrt(16, &size);
	ck_assert_ptr_nonnull(neff);
	write_file(path, neff, size);
	free(neff);
}

static json_t *load_json(const char *path)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	ck_assert_msg(j != NULL, "%s: %s", path, je.text);
	return j;
}

START_TEST(test_capture_then_view_in_every_format)
{
	char neff[256], prof[256], out[256];
	snprintf(neff, sizeof(neff), "%s", path_in("sqrt.neff"));
	snprintf(prof, sizeof(prof), "%s", path_in("profile.json"));
	write_sqrt_neff(neff);
	/* all-zero inputs: sqrt(0) runs clean */
	ck_assert_int_eq(run("capture -n '%s' -s '%s'", neff, prof), 0);
	ck_assert_msg(strstr(out_text, "profile: "), "%s%s", out_text, err_text);
	json_t *trace = load_json(prof);
	ck_assert(json_array_size(json_object_get(trace, "traceEvents")) > 0);
	json_decref(trace);

	/* summary-text: the documented name/value lines, then the tables */
	ck_assert_int_eq(run("view -n '%s' -s '%s' --output-format summary-text", neff, prof), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "total_time "));
	ck_assert_ptr_nonnull(strstr(out_text, "nc_idx                     0\n"));
	ck_assert_ptr_nonnull(strstr(out_text, "job_count                  1\n"));
	ck_assert_ptr_nonnull(strstr(out_text, "Top 10 HLO instructions by device time"));
	ck_assert_ptr_nonnull(strstr(out_text, "sqrt.7"));
	/* the default format is summary-text */
	ck_assert_int_eq(run("view -s '%s'", prof), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "event_count "));

	/* summary-json on stdout */
	ck_assert_int_eq(run("view -s '%s' --output-format summary-json", prof), 0);
	json_error_t je;
	json_t *j = json_loads(out_text, 0, &je);
	ck_assert_msg(j != NULL, "%s", out_text);
	json_t *s0 = json_array_get(json_object_get(j, "summary"), 0);
	ck_assert(json_real_value(json_object_get(s0, "total_time")) > 0);
	ck_assert_int_eq(json_integer_value(json_object_get(s0, "nc_idx")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(s0, "job_count")), 1);
	json_int_t events = json_integer_value(json_object_get(s0, "event_count"));
	ck_assert(events > 2);
	json_decref(j);

	/* json: the summary and every event, to --output-file */
	snprintf(out, sizeof(out), "%s", path_in("all.json"));
	ck_assert_int_eq(run("view -s '%s' --output-format json --output-file '%s'", prof, out), 0);
	j = load_json(out);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "summary")), 1);
	ck_assert(json_array_size(json_object_get(j, "traceEvents")) >= (size_t)events);
	json_decref(j);

	/* perfetto: the Chrome/Perfetto JSON neuronsim writes */
	snprintf(out, sizeof(out), "%s", path_in("p.json"));
	ck_assert_int_eq(run("view -s '%s' --output-format perfetto --output-file '%s'", prof, out), 0);
	j = load_json(out);
	ck_assert(json_array_size(json_object_get(j, "traceEvents")) >= (size_t)events);
	json_decref(j);

	/* -d: every trace under a directory (a gzip one and one in a subdirectory) */
	char dir[256], sub[300];
	snprintf(dir, sizeof(dir), "%s", path_in("sessions"));
	snprintf(sub, sizeof(sub), "%s/rank_1", dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	char *text = slurp(prof);
	char p1[400], p2[400];
	snprintf(p1, sizeof(p1), "%s/profile_rank_0.json.gz", dir);
	snprintf(p2, sizeof(p2), "%s/profile.json", sub);
	write_gz(p1, text);
	write_file(p2, text, strlen(text));
	free(text);
	ck_assert_int_eq(run("view -d '%s' --output-format summary-json", dir), 0);
	j = json_loads(out_text, 0, &je);
	ck_assert_msg(j != NULL, "%s", out_text);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "summary")), 2);
	json_decref(j);
	unlink(p1);
	unlink(p2);
	rmdir(sub);
	rmdir(dir);
	unlink(out);
	unlink(path_in("all.json"));
	unlink(prof);
	unlink(neff);
}
END_TEST

START_TEST(test_capture_inputs_and_execution_errors)
{
	char neff[256], prof[256], npy[256], err[256];
	snprintf(neff, sizeof(neff), "%s", path_in("sqrt.neff"));
	snprintf(prof, sizeof(prof), "%s", path_in("nan.json"));
	snprintf(npy, sizeof(npy), "%s", path_in("neg.npy"));
	write_sqrt_neff(neff);
	float neg[16];
	for (int i = 0; i < 16; i++)
		neg[i] = -1.0f - (float)i;
	const uint64_t shape[1] = { 16 };
	ck_assert_int_eq(STATUS_CODE(npy_write_file(npy, ISA_DT_F32, 1, shape, neg), err), NS_STATUS_OK);
	/* a NaN: exit 1 naming it, the profile written anyway */
	ck_assert_int_eq(run("capture -n '%s' -s '%s' x '%s'", neff, prof, npy), 1);
	ck_assert_msg(strstr(err_text, "execution") && strstr(err_text, "NRT_EXEC_COMPLETED_WITH_NUM_ERR") &&
		      strstr(err_text, "--ignore-exec-errors"), "%s", err_text);
	ck_assert_int_eq(access(prof, R_OK), 0);
	unlink(prof);
	ck_assert_int_eq(run("capture --ignore-exec-errors -n '%s' -s '%s' x '%s'", neff, prof, npy), 0);
	ck_assert_int_eq(access(prof, R_OK), 0);
	/* an input the model does not have, a missing file, a wrong shape */
	ck_assert_int_eq(run("capture -n '%s' -s '%s' z '%s'", neff, prof, npy), 3);
	ck_assert_msg(strstr(err_text, "input 'z'") && strstr(err_text, "its inputs are: x"), "%s", err_text);
	ck_assert_int_eq(run("capture -n '%s' -s '%s' x '%s'", neff, prof, path_in("none.npy")), 3);
	ck_assert_msg(strstr(err_text, "input 'x'"), "%s", err_text);
	const uint64_t shape8[1] = { 8 };
	ck_assert_int_eq(STATUS_CODE(npy_write_file(npy, ISA_DT_F32, 1, shape8, neg), err), NS_STATUS_OK);
	ck_assert_int_eq(run("capture -n '%s' -s '%s' x '%s'", neff, prof, npy), 3);
	ck_assert_msg(strstr(err_text, "holds f32[8], the model expects f32[16]"), "%s", err_text);
	/* not a NEFF, no NEFF */
	ck_assert_int_eq(run("capture -n '%s' -s '%s'", npy, prof), 3);
	ck_assert_int_eq(run("capture -n '%s' -s '%s'", path_in("missing.neff"), prof), 3);
	/* a profile that cannot be written */
	ck_assert_int_eq(run("capture -n '%s' -s /nonexistent-dir/p.json", neff), 5);
	ck_assert_msg(strstr(err_text, "/nonexistent-dir/p.json"), "%s", err_text);
	unlink(prof);
	unlink(npy);
	unlink(neff);
}
END_TEST

START_TEST(test_capture_and_view_usage_errors)
{
	ck_assert_int_eq(run("capture -s p.json"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "capture needs -n NEFF and -s PROFILE"));
	ck_assert_int_eq(run("capture -n a.neff -s p.json x"), 2); /* a NAME without its FILE */
	ck_assert_int_eq(run("view"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "-s PROFILE or -d DIR"));
	ck_assert_int_eq(run("view -s a.json -d dir"), 2);
	ck_assert_int_eq(run("view -s a.json --output-format db"), 2);
	ck_assert_ptr_nonnull(strstr(err_text, "--output-format db is not available"));
	ck_assert_int_eq(run("view -s a.json extra"), 2);
	ck_assert_int_eq(run("view -s '%s'", path_in("none.json")), 3);
	ck_assert_int_eq(run("view -d '%s'", path_in("nodir")), 3);
	ck_assert_int_eq(run("view -d '%s'", tmpdir), 3); /* no trace in it */
	ck_assert_ptr_nonnull(strstr(err_text, "no trace"));
	ck_assert_int_eq(run("view -n '%s' -s a.json", path_in("none.neff")), 3);
	ck_assert_int_eq(run("--help"), 0);
	ck_assert_ptr_nonnull(strstr(out_text, "capture -n NEFF -s PROFILE"));
	ck_assert_ptr_nonnull(strstr(out_text, "--output-format"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("neuron_profile");
	TCase *tc = tcase_create("summary");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_summary_of_handmade_trace);
	tcase_add_test(tc, test_summary_warmup);
	tcase_add_test(tc, test_summary_of_libnrt_trace);
	tcase_add_test(tc, test_summary_without_device_spans);
	tcase_add_test(tc, test_help_and_usage_errors);
	tcase_add_test(tc, test_unreadable_and_corrupt_traces);
	tcase_add_test(tc, test_capture_then_view_in_every_format);
	tcase_add_test(tc, test_capture_inputs_and_execution_errors);
	tcase_add_test(tc, test_capture_and_view_usage_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rt_suite_run(suite());
}
