/* End-to-end Check tests of neuron-run, neuron-ls and neuronsim-demo on NEFFs
 * built with the builder; also a helper mode for test_neuron_run_numpy.sh. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo_mlp_neff.h"
#include "neuronsim/neff.h"
#include "neuronsim/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"

/* The code of a call's status; its message is left in buf and the status freed. */
#define STATUS_CODE(call, buf) ns_status_consume_message((call), (buf), sizeof(buf))

/* ---- the test model ------------------------------------------------------
 * inputs a f32[2,3], b f32[2,3], i s32[4]; outputs c = a + b (f32[2,3]),
 * d = i * i (s32[4]), two independent instructions on the vector engine. */

static isa_ap_t ap(uint32_t region, isa_dtype_t dt, uint32_t rank, const uint64_t *shape)
{
	isa_ap_t a;
	memset(&a, 0, sizeof(a));
	a.region = region;
	a.dtype = (uint8_t)dt;
	a.rank = (uint8_t)rank;
	int64_t s = 1;
	for (int k = (int)rank - 1; k >= 0; k--) {
		a.shape[k] = shape[k];
		a.stride[k] = s;
		s *= (int64_t)shape[k];
	}
	return a;
}

/* A builder call that must succeed; its message when it does not. */
#define ck_assert_built(call)                                                         \
	do {                                                                          \
		char msg_[256];                                                       \
		ck_assert_msg(ns_status_consume_message((call), msg_, sizeof(msg_)) == \
				      NS_STATUS_OK,                                   \
			      "%s: %s", #call, msg_);                                 \
	} while (0)

/* Usable outside a Check test (the --write-samples helper), so failures
 * return NULL instead of asserting. */
#define REQ(call)                                  \
	do {                                       \
		if (ns_status_consume_code(call)) { \
			neff_builder_destroy(b);   \
			return NULL;               \
		}                                  \
	} while (0)

static void *build_add_neff(size_t *size)
{
	const uint64_t s23[2] = { 2, 3 }, s4[1] = { 4 };
	neff_builder_t *b = neff_builder_create("tools_test_add", 1);
	uint32_t ia, ib, ii, oc, od;
	if (!b)
		return NULL;
	REQ(neff_builder_add_tensor(b, "a", NEFF_USAGE_INPUT, ISA_DT_F32, 2, s23, -1, &ia));
	REQ(neff_builder_add_tensor(b, "b", NEFF_USAGE_INPUT, ISA_DT_F32, 2, s23, -1, &ib));
	REQ(neff_builder_add_tensor(b, "i", NEFF_USAGE_INPUT, ISA_DT_S32, 1, s4, -1, &ii));
	REQ(neff_builder_add_tensor(b, "c", NEFF_USAGE_OUTPUT, ISA_DT_F32, 2, s23, -1, &oc));
	REQ(neff_builder_add_tensor(b, "d", NEFF_USAGE_OUTPUT, ISA_DT_S32, 1, s4, -1, &od));
	isa_insn_t add = isa_insn_init(ISA_OP_ALU, ISA_ALU_ADD);
	add.n_ap = 3;
	add.ap[0] = ap(ISA_REGION_IO0 + oc, ISA_DT_F32, 2, s23);
	add.ap[1] = ap(ISA_REGION_IO0 + ia, ISA_DT_F32, 2, s23);
	add.ap[2] = ap(ISA_REGION_IO0 + ib, ISA_DT_F32, 2, s23);
	REQ(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &add, NULL));
	isa_insn_t mul = isa_insn_init(ISA_OP_ALU, ISA_ALU_MUL);
	mul.n_ap = 3;
	mul.ap[0] = ap(ISA_REGION_IO0 + od, ISA_DT_S32, 1, s4);
	mul.ap[1] = ap(ISA_REGION_IO0 + ii, ISA_DT_S32, 1, s4);
	mul.ap[2] = mul.ap[1];
	REQ(neff_builder_emit(b, 0, ISA_ENGINE_VECTOR, &mul, NULL));
	void *neff;
	REQ(neff_builder_finish(b, &neff, size));
	neff_builder_destroy(b);
	return neff;
}

/* ---- helpers ------------------------------------------------------------- */

static char tmpdir[64];

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, size, f), size);
	fclose(f);
}

static void write_model(const char *name)
{
	size_t size;
	void *neff = build_add_neff(&size);
	ck_assert_ptr_nonnull(neff);
	char p[256];
	path_in(p, sizeof(p), name);
	write_bytes(p, neff, size);
	free(neff);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	char *buf = calloc(1, 1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Runs the shell command built from fmt with stdout/stderr captured into
 * *out and *err (caller frees) and returns its exit code. */
static int run_cmd(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int run_cmd(char **out, char **err, const char *fmt, ...)
{
	char cmd[4096], full[4500], o[128], e[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	path_in(o, sizeof(o), "stdout.txt");
	path_in(e, sizeof(e), "stderr.txt");
	snprintf(full, sizeof(full), "%s >%s 2>%s", cmd, o, e);
	int st = system(full);
	*out = slurp(o);
	*err = slurp(e);
	ck_assert_msg(WIFEXITED(st), "command did not exit: %s", cmd);
	return WEXITSTATUS(st);
}

static const char *tool(const char *env)
{
	const char *p = getenv(env);
	ck_assert_msg(p != NULL, "%s is not set (run through meson test)", env);
	return p;
}

static void write_inputs(void)
{
	char p[256], err[256];
	const uint64_t s23[2] = { 2, 3 }, s4[1] = { 4 };
	const float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 0.5f, -1, 10, 0, -4, 1e3f };
	const int32_t i[4] = { -3, 0, 7, 46340 };
	path_in(p, sizeof(p), "a.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(p, ISA_DT_F32, 2, s23, a), err), NS_STATUS_OK);
	path_in(p, sizeof(p), "b.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(p, ISA_DT_F32, 2, s23, b), err), NS_STATUS_OK);
	path_in(p, sizeof(p), "i.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(p, ISA_DT_S32, 1, s4, i), err), NS_STATUS_OK);
	/* Wrong dtype and wrong shape variants. */
	const int32_t a_int[6] = { 1, 2, 3, 4, 5, 6 };
	path_in(p, sizeof(p), "a_s32.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(p, ISA_DT_S32, 2, s23, a_int), err), NS_STATUS_OK);
	const uint64_t s32[2] = { 3, 2 };
	path_in(p, sizeof(p), "a_3x2.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(p, ISA_DT_F32, 2, s32, a), err), NS_STATUS_OK);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nsim-tools-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	write_model("add.neff");
	write_inputs();
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- neuron-run ---------------------------------------------------------- */

START_TEST(test_run_npy_inputs_give_npy_outputs)
{
	char *out, *err;
	int rc = run_cmd(&out, &err, "%s %s/add.neff --input a=%s/a.npy -i b=%s/b.npy -i i=%s/i.npy -o %s/out --repeat 3",
			 tool("NEURON_RUN"), tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
	ck_assert_msg(rc == 0, "rc %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
	ck_assert_msg(strstr(out, "status: NRT_SUCCESS (0)") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "exec: 3 runs, p50") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "load: ") != NULL, "%s", out);
	free(out);
	free(err);

	char p[256], e[256];
	npy_array_t c, d;
	path_in(p, sizeof(p), "out/c.npy");
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p, &c), e), NS_STATUS_OK);
	ck_assert_int_eq(c.dtype, ISA_DT_F32);
	ck_assert_uint_eq(c.rank, 2);
	ck_assert_uint_eq(c.shape[0], 2);
	ck_assert_uint_eq(c.shape[1], 3);
	const float want_c[6] = { 1.5f, 1, 13, 4, 1, 1006 };
	ck_assert_mem_eq(c.data, want_c, sizeof(want_c));
	path_in(p, sizeof(p), "out/d.npy");
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p, &d), e), NS_STATUS_OK);
	ck_assert_int_eq(d.dtype, ISA_DT_S32);
	const int32_t want_d[4] = { 9, 0, 49, 46340 * 46340 };
	ck_assert_mem_eq(d.data, want_d, sizeof(want_d));
	npy_array_free(&c);
	npy_array_free(&d);
}
END_TEST

START_TEST(test_run_rejects_wrong_dtype_naming_the_tensor)
{
	char *out, *err;
	int rc = run_cmd(&out, &err, "%s %s/add.neff -i a=%s/a_s32.npy -i b=%s/b.npy -i i=%s/i.npy -n",
			 tool("NEURON_RUN"), tmpdir, tmpdir, tmpdir, tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "input 'a'") && strstr(err, "s32[2,3]") && strstr(err, "f32[2,3]"),
		      "%s", err);
	free(out);
	free(err);
}
END_TEST

START_TEST(test_run_rejects_wrong_shape_naming_the_tensor)
{
	char *out, *err;
	int rc = run_cmd(&out, &err, "%s %s/add.neff -i a=%s/a_3x2.npy -r -n", tool("NEURON_RUN"),
			 tmpdir, tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "input 'a'") && strstr(err, "f32[3,2]") && strstr(err, "expects f32[2,3]"),
		      "%s", err);
	free(out);
	free(err);
}
END_TEST

START_TEST(test_run_input_errors)
{
	char *out, *err;
	/* No value for b and no --random-inputs. */
	int rc = run_cmd(&out, &err, "%s %s/add.neff -i a=%s/a.npy -n", tool("NEURON_RUN"), tmpdir, tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "input 'b'") && strstr(err, "--random-inputs"), "%s", err);
	free(out); free(err);
	/* A name the model does not have: the message lists the real ones. */
	rc = run_cmd(&out, &err, "%s %s/add.neff -r -i zz=%s/a.npy -n", tool("NEURON_RUN"), tmpdir, tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "zz") && strstr(err, " a b i"), "%s", err);
	free(out); free(err);
	/* A missing file and a malformed .npy. */
	rc = run_cmd(&out, &err, "%s %s/add.neff -r -i a=%s/nope.npy -n", tool("NEURON_RUN"), tmpdir, tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "nope.npy"), "%s", err);
	free(out); free(err);
	char p[256];
	path_in(p, sizeof(p), "bad.npy");
	write_bytes(p, "\x93NUMPY\x01\x00\x08\x00{'de    ", 18);
	rc = run_cmd(&out, &err, "%s %s/add.neff -r -i a=%s -n", tool("NEURON_RUN"), tmpdir, p);
	ck_assert_int_eq(rc, 3);
	ck_assert_msg(strstr(err, "malformed") || strstr(err, "truncated"), "%s", err);
	free(out); free(err);
}
END_TEST

START_TEST(test_run_random_inputs_are_deterministic)
{
	char *out, *err, p1[256], p2[256], p3[256], e[256];
	ck_assert_int_eq(run_cmd(&out, &err, "%s %s/add.neff -r -s 7 -o %s/r1", tool("NEURON_RUN"), tmpdir, tmpdir), 0);
	free(out); free(err);
	ck_assert_int_eq(run_cmd(&out, &err, "%s %s/add.neff --random-inputs --seed 7 -o %s/r2", tool("NEURON_RUN"), tmpdir, tmpdir), 0);
	free(out); free(err);
	ck_assert_int_eq(run_cmd(&out, &err, "%s %s/add.neff -r -s 8 -o %s/r3", tool("NEURON_RUN"), tmpdir, tmpdir), 0);
	free(out); free(err);
	path_in(p1, sizeof(p1), "r1/c.npy");
	path_in(p2, sizeof(p2), "r2/c.npy");
	path_in(p3, sizeof(p3), "r3/c.npy");
	npy_array_t a, b, c;
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p1, &a), e), NS_STATUS_OK);
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p2, &b), e), NS_STATUS_OK);
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p3, &c), e), NS_STATUS_OK);
	ck_assert_mem_eq(a.data, b.data, a.nbytes);
	ck_assert(memcmp(a.data, c.data, a.nbytes) != 0);
	/* Floats in [-1, 1): a sum of two stays in [-2, 2). */
	for (uint64_t k = 0; k < a.count; k++)
		ck_assert(fabsf(((float *)a.data)[k]) < 2.0f);
	npy_array_free(&a);
	npy_array_free(&b);
	npy_array_free(&c);
}
END_TEST

START_TEST(test_run_usage_errors)
{
	char *out, *err;
	const char *bad[] = {
		"", "--repeat 0 x.neff", "--repeat abc x.neff", "--cores 1 x.neff",
		"--cores a:b x.neff", "--cores 0:0 x.neff", "--input a x.neff", "--input =f x.neff",
		"--seed -1 x.neff", "--bogus x.neff", "a.neff b.neff",
	};
	/* --cores beyond the visible cores is a command-line error too. */
	int rc0 = run_cmd(&out, &err, "%s %s/add.neff -r -n --cores 1000:1", tool("NEURON_RUN"), tmpdir);
	ck_assert_msg(rc0 == 2 && strstr(err, "visible"), "rc %d: %s", rc0, err);
	free(out); free(err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = run_cmd(&out, &err, "%s %s", tool("NEURON_RUN"), bad[i]);
		ck_assert_msg(rc == 2, "'%s' gave %d: %s", bad[i], rc, err);
		ck_assert_msg(strstr(err, "neuron-run") != NULL, "'%s': %s", bad[i], err);
		free(out); free(err);
	}
	int rc = run_cmd(&out, &err, "%s --help", tool("NEURON_RUN"));
	ck_assert_int_eq(rc, 0);
	ck_assert(strstr(out, "--random-inputs") && strstr(out, "Exit status"));
	free(out); free(err);
}
END_TEST

START_TEST(test_run_rejects_corrupt_and_missing_neff)
{
	char *out, *err, p[256];
	int rc = run_cmd(&out, &err, "%s %s/none.neff -r", tool("NEURON_RUN"), tmpdir);
	ck_assert_int_eq(rc, 3);
	ck_assert(strstr(err, "none.neff") != NULL);
	free(out); free(err);
	/* A valid NEFF with one flipped byte in the body fails the checksum. */
	size_t size;
	uint8_t *neff = build_add_neff(&size);
	ck_assert_ptr_nonnull(neff);
	neff[size - 3] ^= 0x40;
	path_in(p, sizeof(p), "corrupt.neff");
	write_bytes(p, neff, size);
	free(neff);
	rc = run_cmd(&out, &err, "%s %s -r", tool("NEURON_RUN"), p);
	ck_assert_msg(rc == 3, "rc %d: %s", rc, err);
	ck_assert_msg(strstr(err, "corrupt.neff") != NULL, "%s", err);
	free(out); free(err);
	path_in(p, sizeof(p), "garbage.neff");
	write_bytes(p, "hello, not a neff", 17);
	rc = run_cmd(&out, &err, "%s %s -r", tool("NEURON_RUN"), p);
	ck_assert_msg(rc == 3, "rc %d: %s", rc, err);
	free(out); free(err);
}
END_TEST

START_TEST(test_run_output_dir_unwritable)
{
	char *out, *err, p[256];
	path_in(p, sizeof(p), "afile");
	write_bytes(p, "x", 1);
	int rc = run_cmd(&out, &err, "%s %s/add.neff -r -o %s/afile", tool("NEURON_RUN"), tmpdir, tmpdir);
	ck_assert_int_eq(rc, 5);
	ck_assert(strstr(err, "afile") != NULL);
	free(out); free(err);
}
END_TEST

/* A NEFF whose output is log(x): negative inputs make NaN. */
static void write_log_neff(const char *path)
{
	const uint64_t s8[1] = { 8 };
	neff_builder_t *b = neff_builder_create("tools_test_log", 1);
	uint32_t ix, oy;
	ck_assert_ptr_nonnull(b);
	ck_assert_built(neff_builder_add_tensor(b, "x", NEFF_USAGE_INPUT, ISA_DT_F32, 1, s8, -1, &ix));
	ck_assert_built(neff_builder_add_tensor(b, "y", NEFF_USAGE_OUTPUT, ISA_DT_F32, 1, s8, -1, &oy));
	uint32_t dbg;
	ck_assert_built(neff_builder_add_debug(b, "log.7", "log", "model.py", 42, &dbg));
	isa_insn_t in = isa_insn_init(ISA_OP_ACTIVATE, ISA_ACT_LOG);
	in.n_ap = 2;
	in.imm[0] = 1.0;
	in.debug_id = dbg;
	in.ap[0] = ap(ISA_REGION_IO0 + oy, ISA_DT_F32, 1, s8);
	in.ap[1] = ap(ISA_REGION_IO0 + ix, ISA_DT_F32, 1, s8);
	ck_assert_built(neff_builder_emit(b, 0, ISA_ENGINE_SCALAR, &in, NULL));
	void *neff;
	size_t size;
	ck_assert_built(neff_builder_finish(b, &neff, &size));
	neff_builder_destroy(b);
	write_bytes(path, neff, size);
	free(neff);
}

/* NaN: exit 1 with status 1003 named, and the outputs still written so the
 * user can look at them. */
START_TEST(test_run_nan_reports_1003_and_writes_outputs)
{
	char p[256], x[256], e[256], *out, *err;
	path_in(p, sizeof(p), "log.neff");
	write_log_neff(p);
	const float xs[8] = { 1, 2, -1, 4, 5, 6, 7, 8 };
	const uint64_t s8[1] = { 8 };
	path_in(x, sizeof(x), "x.npy");
	ck_assert_int_eq(STATUS_CODE(npy_write_file(x, ISA_DT_F32, 1, s8, xs), e), NS_STATUS_OK);
	int rc = run_cmd(&out, &err, "%s %s -i x=%s -o %s/nan", tool("NEURON_RUN"), p, x, tmpdir);
	ck_assert_msg(rc == 1, "rc %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(out, "NRT_EXEC_COMPLETED_WITH_NUM_ERR (1003)") != NULL, "%s", out);
	ck_assert_msg(strstr(err, "log.7") != NULL, "the error names the instruction: %s", err);
	free(out); free(err);
	npy_array_t y;
	path_in(p, sizeof(p), "nan/y.npy");
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p, &y), e), NS_STATUS_OK);
	ck_assert(isnan(((float *)y.data)[2]));
	ck_assert(fabsf(((float *)y.data)[1] - logf(2.0f)) < 1e-6f);
	npy_array_free(&y);
}
END_TEST

/* The demo's training step through neuron-run: outputs that alias inputs are
 * given their own tensors and come out as files like any other output. */
START_TEST(test_run_demo_neff_with_aliased_outputs)
{
	char p[256], e[256], *out, *err;
	path_in(p, sizeof(p), "mlp.neff");
	int rc = run_cmd(&out, &err, "%s --steps 2 --write-neff %s", tool("NEURONSIM_DEMO"), p);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	free(out); free(err);
	rc = run_cmd(&out, &err, "%s %s --random-inputs -o %s/mlp", tool("NEURON_RUN"), p, tmpdir);
	ck_assert_msg(rc == 0, "rc %d\n%s\n%s", rc, out, err);
	free(out); free(err);
	npy_array_t a;
	path_in(p, sizeof(p), "mlp/w1_out.npy");
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p, &a), e), NS_STATUS_OK);
	ck_assert_uint_eq(a.rank, 2);
	ck_assert_uint_eq(a.shape[0], 64);
	ck_assert_uint_eq(a.shape[1], 128);
	npy_array_free(&a);
	path_in(p, sizeof(p), "mlp/loss.npy");
	ck_assert_int_eq(STATUS_CODE(npy_read_file(p, &a), e), NS_STATUS_OK);
	ck_assert_uint_eq(a.count, 1);
	ck_assert(isfinite(((float *)a.data)[0]));
	npy_array_free(&a);
}
END_TEST

/* ---- neuron-ls ----------------------------------------------------------- */

START_TEST(test_ls_table_and_json)
{
	char *out, *err;
	int rc = run_cmd(&out, &err, "%s", tool("NEURON_LS"));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_msg(strstr(out, "DEVICE") && strstr(out, "CORES") && strstr(out, "MEMORY"), "%s", out);
	free(out); free(err);

	/* The Neuron tool's JSON: an array of devices with its documented fields. */
	/* an empty stats directory: other neuronsim processes of the machine are not listed */
	char stats[256];
	path_in(stats, sizeof(stats), "ls-stats");
	ck_assert(mkdir(stats, 0700) == 0 || errno == EEXIST);
	rc = run_cmd(&out, &err, "NEURONSIM_STATS_DIR=%s NEURONSIM_NUM_DEVICES=2 %s --json-output", stats,
		     tool("NEURON_LS"));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	json_error_t jerr;
	json_t *root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "neuron-ls -j is not JSON: %s\n%s", jerr.text, out);
	ck_assert(json_is_array(root));
	ck_assert_uint_eq(json_array_size(root), 2);
	uint32_t next_core = 0;
	for (size_t d = 0; d < 2; d++) {
		json_t *dev = json_array_get(root, d);
		ck_assert_int_eq(json_integer_value(json_object_get(dev, "neuron_device")), (json_int_t)d);
		ck_assert(json_is_string(json_object_get(dev, "bdf")));
		ck_assert_int_eq(json_integer_value(json_object_get(dev, "nc_count")), 4);
		ck_assert_int_eq(json_integer_value(json_object_get(dev, "memory_size")), 16ll << 30);
		json_t *ids = json_object_get(dev, "neuroncore_ids");
		ck_assert_uint_eq(json_array_size(ids), 4);
		for (size_t i = 0; i < 4; i++)
			ck_assert_int_eq(json_integer_value(json_array_get(ids, i)), next_core++);
		/* Without -a, neuron-ls does not list itself. */
		ck_assert(json_is_array(json_object_get(dev, "neuron_processes")));
		ck_assert_uint_eq(json_array_size(json_object_get(dev, "neuron_processes")), 0);
	}
	json_decref(root);
	free(out); free(err);

	/* -a lists neuron-ls itself under every device: pid, command, runtime version. */
	rc = run_cmd(&out, &err, "NEURONSIM_STATS_DIR=%s %s -j -a", stats, tool("NEURON_LS"));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "neuron-ls -j -a is not JSON: %s\n%s", jerr.text, out);
	json_t *listed = json_object_get(json_array_get(root, 0), "neuron_processes");
	ck_assert_uint_eq(json_array_size(listed), 1);
	json_t *self = json_array_get(listed, 0);
	ck_assert(json_integer_value(json_object_get(self, "pid")) > 0);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(self, "command")), "neuron-ls -j -a"));
	nrt_version_t ver;
	char vs[64];
	ck_assert_int_eq(nrt_get_version(&ver, sizeof(ver)), NRT_SUCCESS);
	snprintf(vs, sizeof(vs), "%llu.%llu.%llu", (unsigned long long)ver.rt_major,
		 (unsigned long long)ver.rt_minor, (unsigned long long)ver.rt_patch);
	ck_assert_str_eq(json_string_value(json_object_get(self, "neuron_runtime_version")), vs);
	json_decref(root);
	free(out); free(err);

	/* -w: the process columns; -t: the topology section. Run as ./neuron-ls
	 * so that the COMMAND column (cut at 40 characters) holds all of it
	 * whatever the build directory's path. */
	char ls_dir[4096];
	snprintf(ls_dir, sizeof(ls_dir), "%s", tool("NEURON_LS"));
	*strrchr(ls_dir, '/') = '\0';
	rc = run_cmd(&out, &err, "cd '%s' && NEURONSIM_STATS_DIR=%s ./neuron-ls -w -a", ls_dir, stats);
	ck_assert_msg(rc == 0 && strstr(out, " PID ") && strstr(out, "COMMAND") &&
		      strstr(out, "RUNTIME") && strstr(out, "neuron-ls -w -a"), "rc %d: %s", rc, out);
	free(out); free(err);
	rc = run_cmd(&out, &err, "%s --topology", tool("NEURON_LS"));
	ck_assert_msg(rc == 0 && strstr(out, "Neuron Device Topology") && strstr(out, "[ 0 ]") &&
		      !strstr(out, "AFFINITY"), "rc %d: %s", rc, out);
	free(out); free(err);

	rc = run_cmd(&out, &err, "%s --bogus", tool("NEURON_LS"));
	ck_assert_int_eq(rc, 2);
	free(out); free(err);
	rc = run_cmd(&out, &err, "%s --help", tool("NEURON_LS"));
	ck_assert_int_eq(rc, 0);
	ck_assert(strstr(out, "--json-output") && strstr(out, "--wide") && strstr(out, "--show-all-procs") &&
		  strstr(out, "--topology"));
	free(out); free(err);
}
END_TEST

/* ---- the demo model ------------------------------------------------------ */

/* Two training steps of the demo NEFF on the device match the host reference,
 * with the weights updated in place through aliased outputs. */
START_TEST(test_demo_mlp_step_matches_host)
{
	demo_mlp_config_t cfg = demo_mlp_default_config();
	cfg.batch = 8;
	cfg.in = 5;
	cfg.hidden = 7;
	cfg.classes = 3;
	void *neff;
	size_t size;
	ck_assert_built(demo_mlp_neff_build(&cfg, &neff, &size));
	const size_t B = cfg.batch, I = cfg.in, H = cfg.hidden, C = cfg.classes;
	float *x = malloc(B * I * 4), *y = malloc(B * C * 4);
	demo_mlp_params_t p = { malloc(I * H * 4), malloc(H * 4), malloc(H * C * 4), malloc(C * 4) };
	demo_mlp_init(&cfg, 3, x, y, &p);

	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	nrt_model_t *model;
	ck_assert_int_eq(nrt_load(neff, size, 0, 1, &model), NRT_SUCCESS);
	free(neff);
	nrt_tensor_info_array_t *info;
	ck_assert_int_eq(nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
	ck_assert_uint_eq(info->tensor_count, DEMO_MLP_N_INPUTS + DEMO_MLP_N_OUTPUTS);
	nrt_free_model_tensor_info(info);

	const size_t bytes[7] = { B * I * 4, B * C * 4, I * H * 4, H * 4, H * C * 4, C * 4, 4 };
	const void *init[6] = { x, y, p.w1, p.b1, p.w2, p.b2 };
	nrt_tensor_t *t[7];
	nrt_tensor_set_t *in, *out;
	ck_assert_int_eq(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
	for (int i = 0; i < 7; i++) {
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes[i], NULL, &t[i]),
				 NRT_SUCCESS);
		if (i < 6) {
			ck_assert_int_eq(nrt_tensor_write(t[i], init[i], 0, bytes[i]), NRT_SUCCESS);
			ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in, demo_mlp_input_names[i], t[i]),
					 NRT_SUCCESS);
		}
	}
	ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, "loss", t[6]), NRT_SUCCESS);
	for (int i = 1; i < DEMO_MLP_N_OUTPUTS; i++)
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(out, demo_mlp_output_names[i], t[1 + i]),
				 NRT_SUCCESS);
	for (int step = 0; step < 2; step++) {
		float host = demo_mlp_host_step(&cfg, x, y, &p), dev;
		ck_assert_int_eq(nrt_execute(model, in, out), NRT_SUCCESS);
		ck_assert_int_eq(nrt_tensor_read(t[6], &dev, 0, 4), NRT_SUCCESS);
		ck_assert_msg(fabsf(dev - host) < 1e-5f, "step %d: device %f host %f", step, dev, host);
	}
	float *w = malloc(I * H * 4);
	ck_assert_int_eq(nrt_tensor_read(t[2], w, 0, I * H * 4), NRT_SUCCESS);
	for (size_t k = 0; k < I * H; k++)
		ck_assert_msg(fabsf(w[k] - p.w1[k]) < 1e-5f, "w1[%zu]: %f vs %f", k, w[k], p.w1[k]);
	free(w);
	for (int i = 0; i < 7; i++)
		nrt_tensor_free(&t[i]);
	nrt_destroy_tensor_set(&in);
	nrt_destroy_tensor_set(&out);
	ck_assert_int_eq(nrt_unload(model), NRT_SUCCESS);
	nrt_close();
	free(x); free(y); free(p.w1); free(p.b1); free(p.w2); free(p.b2);
}
END_TEST

START_TEST(test_demo_neff_build_rejects_bad_config)
{
	demo_mlp_config_t cfg = demo_mlp_default_config();
	void *neff = (void *)0x1;
	size_t size = 7;
	char e[256] = "";
	cfg.hidden = 0;
	ck_assert_int_eq(ns_status_consume_message(demo_mlp_neff_build(&cfg, &neff, &size), e,
						   sizeof(e)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_null(neff);
	ck_assert_uint_eq(size, 0);
	ck_assert_msg(strstr(e, "every dimension must be in 1..65536 (batch 32, in 64, hidden 0"),
		      "%s", e);
	ck_assert_int_eq(ns_status_consume_code(demo_mlp_neff_build(NULL, &neff, &size)),
			 NS_STATUS_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_demo_program_passes)
{
	char *out, *err;
	int rc = run_cmd(&out, &err, "%s --steps 20", tool("NEURONSIM_DEMO"));
	ck_assert_msg(rc == 0, "rc %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(out, "summary: 20 steps") && strstr(out, "PASS"), "%s", out);
	free(out); free(err);
	rc = run_cmd(&out, &err, "%s --steps 1", tool("NEURONSIM_DEMO"));
	ck_assert_int_eq(rc, 2);
	free(out); free(err);
}
END_TEST

/* ---- helper mode for test_neuron_run_numpy.sh ---------------------------- */

/* Writes add.neff and one .npy per dtype with known values into dir. */
static int write_samples(const char *dir)
{
	char p[512], e[256];
	size_t size;
	void *neff = build_add_neff(&size);
	if (!neff) {
		fprintf(stderr, "building the test NEFF failed\n");
		return 1;
	}
	snprintf(p, sizeof(p), "%s/add.neff", dir);
	FILE *f = fopen(p, "wb");
	if (!f || fwrite(neff, 1, size, f) != size) {
		fprintf(stderr, "cannot write %s\n", p);
		return 1;
	}
	fclose(f);
	free(neff);
	static const struct { isa_dtype_t dt; const char *name; } dts[] = {
		{ ISA_DT_F32, "f4" }, { ISA_DT_F16, "f2" }, { ISA_DT_BF16, "bf16" },
		{ ISA_DT_S32, "i4" }, { ISA_DT_S64, "i8" }, { ISA_DT_U32, "u4" },
		{ ISA_DT_U64, "u8" }, { ISA_DT_U8, "u1" }, { ISA_DT_PRED, "b1" },
		{ ISA_DT_S8, "i1" }, { ISA_DT_S16, "i2" }, { ISA_DT_U16, "u2" },
	};
	/* Values 0..5 encoded per dtype, shape (2, 3); -k for signed; pred k&1. */
	const uint64_t shape[2] = { 2, 3 };
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		uint8_t buf[6 * 8];
		for (int k = 0; k < 6; k++) {
			switch (dts[d].dt) {
			case ISA_DT_F32: ((float *)buf)[k] = (float)k * 0.5f - 1.0f; break;
			case ISA_DT_F16: ((uint16_t *)buf)[k] = (uint16_t[]){ 0xbc00, 0xb800, 0, 0x3800, 0x3c00, 0x3e00 }[k]; break;
			case ISA_DT_BF16: ((uint16_t *)buf)[k] = (uint16_t[]){ 0xbf80, 0xbf00, 0, 0x3f00, 0x3f80, 0x3fc0 }[k]; break;
			case ISA_DT_S32: ((int32_t *)buf)[k] = -k * 100000; break;
			case ISA_DT_S64: ((int64_t *)buf)[k] = -(int64_t)k * 10000000000ll; break;
			case ISA_DT_U32: ((uint32_t *)buf)[k] = (uint32_t)k * 1000000000u; break;
			case ISA_DT_U64: ((uint64_t *)buf)[k] = (uint64_t)k * 10000000000000ull; break;
			case ISA_DT_U8: buf[k] = (uint8_t)(k * 50); break;
			case ISA_DT_PRED: buf[k] = (uint8_t)(k & 1); break;
			case ISA_DT_S8: ((int8_t *)buf)[k] = (int8_t)(-k * 20); break;
			case ISA_DT_S16: ((int16_t *)buf)[k] = (int16_t)(-k * 1000); break;
			case ISA_DT_U16: ((uint16_t *)buf)[k] = (uint16_t)(k * 10000); break;
			default: break;
			}
		}
		snprintf(p, sizeof(p), "%s/sample_%s.npy", dir, dts[d].name);
		if (STATUS_CODE(npy_write_file(p, dts[d].dt, 2, shape, buf), e) != NS_STATUS_OK) {
			fprintf(stderr, "%s\n", e);
			return 1;
		}
	}
	return 0;
}

static Suite *tools_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *run = tcase_create("neuron-run");
	tcase_add_checked_fixture(run, setup, teardown);
	tcase_set_timeout(run, 60);
	tcase_add_test(run, test_run_npy_inputs_give_npy_outputs);
	tcase_add_test(run, test_run_rejects_wrong_dtype_naming_the_tensor);
	tcase_add_test(run, test_run_rejects_wrong_shape_naming_the_tensor);
	tcase_add_test(run, test_run_input_errors);
	tcase_add_test(run, test_run_random_inputs_are_deterministic);
	tcase_add_test(run, test_run_usage_errors);
	tcase_add_test(run, test_run_rejects_corrupt_and_missing_neff);
	tcase_add_test(run, test_run_output_dir_unwritable);
	tcase_add_test(run, test_run_nan_reports_1003_and_writes_outputs);
	tcase_add_test(run, test_run_demo_neff_with_aliased_outputs);
	suite_add_tcase(s, run);
	TCase *ls = tcase_create("neuron-ls");
	tcase_add_checked_fixture(ls, setup, teardown);
	tcase_set_timeout(ls, 30);
	tcase_add_test(ls, test_ls_table_and_json);
	suite_add_tcase(s, ls);
	TCase *demo = tcase_create("demo");
	tcase_add_checked_fixture(demo, setup, teardown);
	tcase_set_timeout(demo, 90);
	tcase_add_test(demo, test_demo_mlp_step_matches_host);
	tcase_add_test(demo, test_demo_neff_build_rejects_bad_config);
	tcase_add_test(demo, test_demo_program_passes);
	suite_add_tcase(s, demo);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-samples") == 0)
		return write_samples(argv[2]);
	SRunner *sr = srunner_create(tools_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
