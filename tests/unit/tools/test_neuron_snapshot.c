/* End-to-end Check tests of neuron-snapshot: snapshots of a compiled HLO module that
 * produces NaN for some inputs (written here from the device's own error record, and
 * dumped by the runtime itself), info in text and JSON, export --npz read by Debian's
 * numpy, replay naming the same instruction as the device's error record, and every
 * user-reachable error with its exit code. The tool is $NEURON_SNAPSHOT. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncc/ncc.h"
#include "neuronsim/half.h"
#include "neuronsim/snapshot.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_neuronsim.h"

#define PY "/usr/bin/python3"

/* log(x - y) * 2: NaN where x < y. */
static const char nan_hlo[] =
	"HloModule nan_model\n\n"
	"ENTRY main {\n"
	"  x = f32[8] parameter(0)\n"
	"  y = f32[8] parameter(1)\n"
	"  s = f32[8] subtract(x, y)\n"
	"  l = f32[8] log(s), metadata={op_type=\"aten::log\" op_name=\"model/log\" "
	"source_file=\"model.py\" source_line=12}\n"
	"  two = f32[] constant(2)\n"
	"  b = f32[8] broadcast(two), dimensions={}\n"
	"  ROOT r = f32[8] multiply(l, b)\n"
	"}\n";

static const float x_nan[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
static const float y_nan[8] = { 1, 2, 1, 2, 1, 2, 1, 2 }; /* x < y at 1 and 3 */
static const float y_fin[8] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f };

static char tmpdir[256];

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-neuron-snapshot-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static const char *tool(void)
{
	const char *t = getenv("NEURON_SNAPSHOT");
	ck_assert_msg(t && t[0], "NEURON_SNAPSHOT must name the neuron-snapshot binary");
	return t;
}

/* Runs "neuron-snapshot ARGS" (a shell fragment); stdout and stderr go to
 * g_out / g_err. Returns the exit status. */
static char g_out[65536], g_err[16384];

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

__attribute__((format(printf, 1, 2)))
static int run(const char *fmt, ...)
{
	char args[4096], cmd[8192], out[300], err[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(out, sizeof(out), "%s/stdout.txt", tmpdir);
	snprintf(err, sizeof(err), "%s/stderr.txt", tmpdir);
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", tool(), args, out, err);
	int st = system(cmd);
	slurp(out, g_out, sizeof(g_out));
	slurp(err, g_err, sizeof(g_err));
	ck_assert_msg(WIFEXITED(st), "%s did not exit", cmd);
	return WEXITSTATUS(st);
}

#define EXPECT_RC(rc, want) \
	ck_assert_msg((rc) == (want), "exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", (rc), (want), g_out, g_err)
#define EXPECT_OUT(s) ck_assert_msg(strstr(g_out, (s)), "stdout lacks '%s':\n%s\nstderr:\n%s", (s), g_out, g_err)
#define EXPECT_ERR(s) ck_assert_msg(strstr(g_err, (s)), "stderr lacks '%s':\n%s", (s), g_err)

/* ---- snapshots from a real execution ---------------------------------------- */

typedef struct exec_result {
	NRT_STATUS status;
	nrt_neuronsim_exec_error_t rec;
	float out[8];
} exec_result_t;

/* The device error record as JSON, with the field names the runtime uses. */
static char *error_json(const nrt_neuronsim_exec_error_t *e)
{
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:s, s:I, s:I, s:s}", "status",
			      (int)e->status, "kind", e->kind == NRT_NEURONSIM_ERROR_NAN ? "nan" : "other",
			      "hlo_name", e->hlo_name, "op_type", e->op_type, "source_file",
			      e->source_file, "source_line", (int)e->source_line, "tensor", e->tensor,
			      "first_index", (json_int_t)e->first_index, "count", (json_int_t)e->count,
			      "message", e->message);
	ck_assert_ptr_nonnull(o);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* Compiles nan_hlo at opt_level, runs it on (x, y) and writes a snapshot of the
 * inputs and outputs (and the error record when it failed) to path. */
static exec_result_t snapshot_from_device(const char *hlo, int opt_level, const float *x,
					  const float *y, const char *path, bool with_hlo,
					  const char *rename_input0, bool tamper_output)
{
	exec_result_t r;
	memset(&r, 0, sizeof(r));
	ncc_driver_options_t dopts;
	ncc_driver_options_init(&dopts);
	dopts.compile.opt_level = opt_level;
	dopts.no_cache = true;
	ncc_compile_result_t res = { 0 };
	ncc_error_t err = { 0 };
	ck_assert_msg(ncc_compile_text(hlo, strlen(hlo), "test.hlo", &dopts, &res, &err) == NCC_OK,
		      "%s", err.msg);
	nrt_model_t *model = NULL;
	nrt_tensor_info_array_t *info = NULL;
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
	ck_assert_int_eq(nrt_load(res.neff, res.neff_size, -1, -1, &model), NRT_SUCCESS);
	ck_assert_int_eq(nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
	ck_assert_uint_eq(info->tensor_count, 3);
	nrt_tensor_set_t *in_set, *out_set;
	nrt_tensor_t *t[3];
	ck_assert_int_eq(nrt_allocate_tensor_set(&in_set), NRT_SUCCESS);
	ck_assert_int_eq(nrt_allocate_tensor_set(&out_set), NRT_SUCCESS);
	const float *vals[2] = { x, y };
	for (int i = 0; i < 3; i++) {
		const nrt_tensor_info_t *ti = &info->tensor_array[i];
		ck_assert_uint_eq(ti->size, sizeof(float) * 8);
		ck_assert_int_eq(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name,
						     &t[i]), NRT_SUCCESS);
		bool in = ti->usage == NRT_TENSOR_USAGE_INPUT;
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(in ? in_set : out_set, ti->name, t[i]),
				 NRT_SUCCESS);
		if (in)
			ck_assert_int_eq(nrt_tensor_write(t[i], vals[i], 0, ti->size), NRT_SUCCESS);
	}
	r.status = nrt_execute(model, in_set, out_set);
	ck_assert_int_eq(nrt_neuronsim_get_last_error(model, &r.rec), NRT_SUCCESS);
	ck_assert_int_eq(nrt_tensor_read(t[2], r.out, 0, sizeof(r.out)), NRT_SUCCESS);

	snapshot_tensor_t st[3];
	memset(st, 0, sizeof(st));
	float tampered[8];
	memcpy(tampered, r.out, sizeof(tampered));
	tampered[5] += 1.0f;
	for (int i = 0; i < 3; i++) {
		const nrt_tensor_info_t *ti = &info->tensor_array[i];
		snprintf(st[i].name, sizeof(st[i].name), "%s",
			 i == 0 && rename_input0 ? rename_input0 : ti->name);
		st[i].role = ti->usage == NRT_TENSOR_USAGE_INPUT ? SNAPSHOT_ROLE_INPUT : SNAPSHOT_ROLE_OUTPUT;
		st[i].dtype = ISA_DT_F32;
		st[i].rank = 1;
		st[i].shape[0] = 8;
		st[i].size = ti->size;
		st[i].alias_input = -1;
		st[i].data = i < 2 ? (const void *)vals[i] : tamper_output ? tampered : r.out;
	}
	char *ej = r.status != NRT_SUCCESS ? error_json(&r.rec) : NULL;
	snapshot_meta_t meta = {
		.module_name = "nan_model",
		.kind = ej ? "error" : "inputs outputs",
		.executable = 1,
		.execution = 0,
		.status = r.status,
		.error_json = ej,
		.runtime_version = "test",
		.wall_time_ns = 1700000000000000000ull,
	};
	char e[512];
	ck_assert_msg(ns_status_consume_message(snapshot_write(path, &meta, with_hlo ? hlo : NULL, with_hlo ? strlen(hlo) : 0, st,
				     3), e, sizeof(e)) == NS_STATUS_OK, "%s", e);
	free(ej);
	for (int i = 0; i < 3; i++)
		nrt_tensor_free(&t[i]);
	nrt_destroy_tensor_set(&in_set);
	nrt_destroy_tensor_set(&out_set);
	nrt_free_model_tensor_info(info);
	nrt_unload(model);
	nrt_close();
	ncc_compile_result_release(&res);
	return r;
}

/* ---- info -------------------------------------------------------------------- */

START_TEST(test_info_text_and_json)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/nan.snap", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 1, x_nan, y_nan, path, true, NULL, false);
	ck_assert_int_eq(r.status, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	int rc = run("info '%s'", path);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("format 1.0");
	EXPECT_OUT("module: nan_model");
	EXPECT_OUT("kind: error");
	EXPECT_OUT("status: 1003 (NRT_EXEC_COMPLETED_WITH_NUM_ERR)");
	EXPECT_OUT("hlo_name: l\n");
	EXPECT_OUT("op_type: aten::log");
	EXPECT_OUT("HloModule nan_model");
	EXPECT_OUT("tensors: 3 (2 inputs, 1 output), 96 bytes");
	EXPECT_OUT("input  input0  f32[8]  32 bytes  checksum ");
	EXPECT_OUT("output output0  f32[8]  32 bytes  checksum ");
	EXPECT_OUT(" OK\n");

	rc = run("info -j '%s'", path);
	EXPECT_RC(rc, 0);
	json_error_t je;
	json_t *j = json_loads(g_out, 0, &je);
	ck_assert_msg(j, "info -j is not JSON: %s\n%s", je.text, g_out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "format_version")), "1.0");
	json_t *meta = json_object_get(j, "meta");
	ck_assert_str_eq(json_string_value(json_object_get(meta, "module_name")), "nan_model");
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "status")), 1003);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "hlo_name")),
			 r.rec.hlo_name);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "hlo"), "module")),
			 "nan_model");
	json_t *tensors = json_object_get(j, "tensors");
	ck_assert_uint_eq(json_array_size(tensors), 3);
	json_t *t2 = json_array_get(tensors, 2);
	ck_assert_str_eq(json_string_value(json_object_get(t2, "role")), "output");
	ck_assert_str_eq(json_string_value(json_object_get(t2, "dtype")), "f32");
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(t2, "shape"), 0)), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(t2, "size")), 32);
	ck_assert(json_is_true(json_object_get(t2, "checksum_ok")));
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(t2, "checksum"))), 16);
	json_decref(j);
}
END_TEST

/* ---- export ------------------------------------------------------------------ */

static bool have_numpy(void)
{
	if (system(PY " -c 'import numpy' 2>/dev/null") == 0)
		return true;
	fprintf(stderr, "SKIP: " PY " cannot import numpy (apt install python3-numpy)\n");
	return false;
}

/* Loads npz with numpy and prints "KEY DTYPE SHAPE HEX" per member into g_out. */
static int numpy_dump(const char *npz, const char *extra)
{
	char script[1024], cmd[2048], out[300];
	snprintf(script, sizeof(script),
		 "import sys, numpy as np\n"
		 "z = np.load(sys.argv[1])\n"
		 "for k in sorted(z.files):\n"
		 "    a = z[k]\n"
		 "    print(k, a.dtype.str, ','.join(str(d) for d in a.shape), a.tobytes().hex() or '-')\n"
		 "%s", extra ? extra : "");
	char spath[300];
	snprintf(spath, sizeof(spath), "%s/dump.py", tmpdir);
	FILE *f = fopen(spath, "w");
	fputs(script, f);
	fclose(f);
	snprintf(out, sizeof(out), "%s/py.txt", tmpdir);
	snprintf(cmd, sizeof(cmd), PY " '%s' '%s' >'%s' 2>&1", spath, npz, out);
	int st = system(cmd);
	slurp(out, g_out, sizeof(g_out));
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void hex(const void *p, size_t n, char *buf)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", b[i]);
	if (!n)
		strcpy(buf, "-");
}

START_TEST(test_export_npz_loads_in_numpy)
{
	if (!have_numpy())
		return;
	char path[300], npz[300], line[512], h[256];
	snprintf(path, sizeof(path), "%s/nan.snap", tmpdir);
	snprintf(npz, sizeof(npz), "%s/out.npz", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 2, x_nan, y_nan, path, true, NULL, false);
	ck_assert(isnan(r.out[1]) && isnan(r.out[3]) && !isnan(r.out[0]));
	int rc = run("export '%s' --npz '%s'", path, npz);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("input_input0.npy: f32[8]");
	EXPECT_OUT("output_output0.npy: f32[8]");
	EXPECT_OUT("export: 3 tensors");
	struct stat sb;
	ck_assert_int_eq(stat(npz, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0600);
	/* the same values, NaNs included, bit for bit */
	rc = numpy_dump(npz, "o = z['output_output0']\nassert np.isnan(o[1]) and np.isnan(o[3])\n"
			     "assert np.array_equal(np.log(z['input_input0'][[0,2]] - z['input_input1'][[0,2]]) * 2, o[[0,2]])\n");
	ck_assert_msg(rc == 0, "numpy failed:\n%s", g_out);
	hex(x_nan, sizeof(x_nan), h);
	snprintf(line, sizeof(line), "input_input0 <f4 8 %s\n", h);
	EXPECT_OUT(line);
	hex(y_nan, sizeof(y_nan), h);
	snprintf(line, sizeof(line), "input_input1 <f4 8 %s\n", h);
	EXPECT_OUT(line);
	hex(r.out, sizeof(r.out), h);
	snprintf(line, sizeof(line), "output_output0 <f4 8 %s\n", h);
	EXPECT_OUT(line);
	/* compressed members read the same */
	rc = run("export '%s' --npz '%s' -z", path, npz);
	EXPECT_RC(rc, 0);
	ck_assert_int_eq(numpy_dump(npz, NULL), 0);
	EXPECT_OUT(line);
}
END_TEST

/* bf16 (as float32 or raw bits), pred, s64, rank 0, an empty tensor and names that
 * need sanitising. */
START_TEST(test_export_dtypes_bf16_and_names)
{
	if (!have_numpy())
		return;
	char path[300], npz[300], line[512], h[256];
	snprintf(path, sizeof(path), "%s/dt.snap", tmpdir);
	snprintf(npz, sizeof(npz), "%s/dt.npz", tmpdir);
	uint16_t bf[4] = { ns_f32_to_bf16(1.5f), ns_f32_to_bf16(-2.25f), ns_f32_to_bf16(3e38f),
			   0x7fc0 /* NaN */ };
	uint8_t pred[3] = { 1, 0, 1 };
	int64_t big[2] = { -5, 1ll << 40 };
	float scalar = 0.75f;
	snapshot_tensor_t t[5];
	memset(t, 0, sizeof(t));
	struct { const char *name; uint32_t dt, rank; uint64_t d0, d1; const void *data; } spec[5] = {
		{ "w/bf16:0", ISA_DT_BF16, 2, 2, 2, bf },
		{ "mask", ISA_DT_PRED, 1, 3, 0, pred },
		{ "big", ISA_DT_S64, 1, 2, 0, big },
		{ "lr", ISA_DT_F32, 0, 0, 0, &scalar },
		{ "none", ISA_DT_F32, 2, 0, 3, NULL },
	};
	for (int i = 0; i < 5; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "%s", spec[i].name);
		t[i].role = i == 4 ? SNAPSHOT_ROLE_OUTPUT : SNAPSHOT_ROLE_INPUT;
		t[i].dtype = spec[i].dt;
		t[i].rank = spec[i].rank;
		t[i].shape[0] = spec[i].d0;
		t[i].shape[1] = spec[i].d1;
		t[i].size = isa_dtype_size(spec[i].dt);
		for (uint32_t d = 0; d < spec[i].rank; d++)
			t[i].size *= t[i].shape[d];
		t[i].data = spec[i].data;
		t[i].alias_input = -1;
	}
	snapshot_meta_t m = { .module_name = "dt", .kind = "inputs" };
	char e[512];
	ck_assert_msg(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, t, 5), e, sizeof(e)) == NS_STATUS_OK, "%s", e);

	int rc = run("export '%s' --npz '%s'", path, npz);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("input_w_bf16_0.npy: f32[2,2] (from bf16)");
	rc = numpy_dump(npz, "b = z['input_w_bf16_0']\n"
			     "assert b.dtype == np.float32 and b[0,0] == 1.5 and b[0,1] == -2.25 and np.isnan(b[1,1])\n"
			     "assert z['input_mask'].dtype == np.bool_ and list(z['input_mask']) == [True, False, True]\n"
			     "assert z['input_lr'].shape == () and z['input_lr'] == 0.75\n"
			     "assert z['output_none'].shape == (0, 3)\n");
	ck_assert_msg(rc == 0, "numpy failed:\n%s", g_out);
	float f[4];
	for (int i = 0; i < 4; i++)
		f[i] = ns_bf16_to_f32(bf[i]);
	hex(f, sizeof(f), h);
	snprintf(line, sizeof(line), "input_w_bf16_0 <f4 2,2 %s\n", h);
	EXPECT_OUT(line);
	EXPECT_OUT("input_mask |b1 3 010001\n");
	hex(big, sizeof(big), h);
	snprintf(line, sizeof(line), "input_big <i8 2 %s\n", h);
	EXPECT_OUT(line);
	hex(&scalar, 4, h);
	snprintf(line, sizeof(line), "input_lr <f4  %s\n", h);
	EXPECT_OUT(line);
	EXPECT_OUT("output_none <f4 0,3 -\n");

	/* raw: the 16-bit patterns as '<V2' (ml_dtypes' spelling) */
	rc = run("export '%s' --npz '%s' --bf16 raw", path, npz);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("input_w_bf16_0.npy: bf16[2,2] (bf16 bits as <V2)");
	rc = numpy_dump(npz, "b = z['input_w_bf16_0']\nassert b.dtype.itemsize == 2\n"
			     "f = (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)\n"
			     "assert f[0,0] == 1.5 and f[0,1] == -2.25\n");
	ck_assert_msg(rc == 0, "numpy failed:\n%s", g_out);
	hex(bf, sizeof(bf), h);
	snprintf(line, sizeof(line), "input_w_bf16_0 |V2 2,2 %s\n", h);
	EXPECT_OUT(line);
}
END_TEST

START_TEST(test_export_errors)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/nan.snap", tmpdir);
	snapshot_from_device(nan_hlo, 0, x_nan, y_nan, path, true, NULL, false);
	int rc = run("export '%s' --npz '%s/no/such/dir/x.npz'", path, tmpdir);
	EXPECT_RC(rc, 5);
	EXPECT_ERR("x.npz");
	ck_assert_msg(!strstr(g_out, ".npy"), "members listed although nothing was written:\n%s", g_out);
	rc = run("export '%s'", path);
	EXPECT_RC(rc, 2);
	EXPECT_ERR("missing --npz");
	rc = run("export '%s' --npz o.npz --bf16 f16", path);
	EXPECT_RC(rc, 2);
	EXPECT_ERR("--bf16 wants f32 or raw");
	/* an empty snapshot has nothing to export */
	char empty[300], e[256];
	snprintf(empty, sizeof(empty), "%s/empty.snap", tmpdir);
	snapshot_meta_t m = { 0 };
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(empty, &m, NULL, 0, NULL, 0), e, sizeof(e)), NS_STATUS_OK);
	rc = run("export '%s' --npz '%s/e.npz'", empty, tmpdir);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("no tensors");
}
END_TEST

/* Names that sanitise alike get numbered members. */
START_TEST(test_export_name_collisions)
{
	char path[300], npz[300], e[256];
	snprintf(path, sizeof(path), "%s/names.snap", tmpdir);
	snprintf(npz, sizeof(npz), "%s/names.npz", tmpdir);
	static const char *const names[3] = { "a/b", "a:b", "a_b" };
	snapshot_tensor_t t[3];
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 3; i++) {
		snprintf(t[i].name, sizeof(t[i].name), "%s", names[i]);
		t[i].dtype = ISA_DT_F32;
		t[i].size = 4;
		t[i].data = &x_nan[i];
		t[i].alias_input = -1;
	}
	snapshot_meta_t m = { .kind = "inputs" };
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, t, 3), e, sizeof(e)), NS_STATUS_OK);
	int rc = run("export '%s' --npz '%s'", path, npz);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("input_a_b.npy: f32[]\n");
	EXPECT_OUT("input_a_b_1.npy: f32[]\n");
	EXPECT_OUT("input_a_b_2.npy: f32[]\n");
	if (!have_numpy())
		return;
	ck_assert_int_eq(numpy_dump(npz, "assert z['input_a_b_2'] == 4.0\n"), 0);
}
END_TEST

/* ---- replay ------------------------------------------------------------------ */

/* At -O1 the device names the log itself. */
START_TEST(test_replay_names_device_instruction)
{
	char path[300], line[512];
	snprintf(path, sizeof(path), "%s/nan.snap", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 1, x_nan, y_nan, path, true, NULL, false);
	ck_assert_int_eq(r.status, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	ck_assert_str_eq(r.rec.hlo_name, "l");
	int rc = run("replay '%s' -O1", path);
	EXPECT_RC(rc, 1);
	EXPECT_OUT("device: NRT_EXEC_COMPLETED_WITH_NUM_ERR (1003)");
	EXPECT_OUT("first NaN: produced by HLO instruction 'l' (log, op_type aten::log, model.py:12");
	snprintf(line, sizeof(line), "the recorded error names '%s': the same instruction", r.rec.hlo_name);
	EXPECT_OUT(line);
	EXPECT_OUT("the replayed device error names 'l': the same instruction");
	EXPECT_OUT("2 element(s), first at flat index 1");
	EXPECT_OUT("result: NaN reproduced; the replay names the same instruction as the error record");
	/* device, interpreter and recording agree, NaNs included */
	ck_assert_ptr_null(strstr(g_out, "MISMATCH"));
}
END_TEST

/* At -O2 the log is inside a fusion the compiler made; the device names the
 * instruction inside it that produced the NaN (the fused kernel's step), as at
 * -O0, and the replay shows where it sits in the compiled module. */
START_TEST(test_replay_names_fused_instruction)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/nan2.snap", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 2, x_nan, y_nan, path, true, NULL, false);
	ck_assert_int_eq(r.status, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	ck_assert_msg(strcmp(r.rec.hlo_name, "l") == 0, "device names '%s'", r.rec.hlo_name);
	int rc = run("replay '%s'", path);
	EXPECT_RC(rc, 1);
	EXPECT_OUT("first NaN: produced by HLO instruction 'l' (log, op_type aten::log, model.py:12");
	EXPECT_OUT("in the compiled module (-O2): fusion");
	EXPECT_OUT("the recorded error names 'l': the same instruction");
	EXPECT_OUT("the replayed device error names 'l': the same instruction");
	EXPECT_OUT("result: NaN reproduced; the replay names the same instruction");
	/* replayed at another level: still the same instruction */
	rc = run("replay '%s' -O0", path);
	EXPECT_RC(rc, 1);
	EXPECT_OUT("the recorded error names 'l': the same instruction");
	EXPECT_OUT("the replayed device error names 'l': the same instruction");
}
END_TEST

START_TEST(test_replay_finite_run_matches)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/ok.snap", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 2, x_nan, y_fin, path, true, NULL, false);
	ck_assert_int_eq(r.status, NRT_SUCCESS);
	int rc = run("replay '%s' -v", path);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("device: NRT_SUCCESS (0)");
	EXPECT_OUT("output output0: device vs interpreter: match");
	EXPECT_OUT("output output0: device vs recorded: match");
	EXPECT_OUT("outputs: 1 compared with the interpreter, 1 with the recorded outputs");
	EXPECT_OUT("result: device, interpreter and recorded outputs agree");
	ck_assert_ptr_null(strstr(g_out, "first NaN"));
}
END_TEST

START_TEST(test_replay_detects_changed_output)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/bad.snap", tmpdir);
	snapshot_from_device(nan_hlo, 2, x_nan, y_fin, path, true, NULL, true);
	int rc = run("replay '%s'", path);
	EXPECT_RC(rc, 1);
	EXPECT_OUT("output output0: device vs recorded: MISMATCH, 1 element(s)");
	EXPECT_OUT("output output0: interpreter vs recorded: MISMATCH");
	EXPECT_OUT("element 5");
	EXPECT_OUT("result: outputs differ");
	/* a tolerance wide enough accepts it */
	rc = run("replay '%s' --tolerance 1,1", path);
	EXPECT_RC(rc, 0);
}
END_TEST

START_TEST(test_replay_errors)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/nohlo.snap", tmpdir);
	snapshot_from_device(nan_hlo, 1, x_nan, y_nan, path, false, NULL, false);
	int rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("holds no HLO text");
	/* info still works and says why replay cannot */
	rc = run("info '%s'", path);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("hlo: none");

	snprintf(path, sizeof(path), "%s/renamed.snap", tmpdir);
	snapshot_from_device(nan_hlo, 1, x_nan, y_nan, path, true, "weights", false);
	rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("input 'input0' (f32[8]) is not in");
	EXPECT_ERR(" weights input1");
}
END_TEST

/* Snapshots that cannot come from a compiled module, written by hand. */
START_TEST(test_replay_bad_hlo_and_missing_inputs)
{
	char path[300], e[256];
	snprintf(path, sizeof(path), "%s/badhlo.snap", tmpdir);
	const char *hlo = "HloModule broken\nENTRY main {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] frobnicate(x)\n}\n";
	snapshot_tensor_t t;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "input0");
	t.dtype = ISA_DT_F32;
	t.rank = 1;
	t.shape[0] = 8;
	t.size = 32;
	t.data = x_nan;
	t.alias_input = -1;
	snapshot_meta_t m = { .module_name = "broken", .kind = "inputs" };
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, hlo, strlen(hlo), &t, 1), e, sizeof(e)), NS_STATUS_OK);
	int rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("the embedded HLO does not compile at -O2");
	EXPECT_ERR("frobnicate");
	/* cut short: does not even parse */
	const char *cut = "HloModule broken\nENTRY main {\n  x = f32[8] parameter(0)\n";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, cut, strlen(cut), &t, 1), e, sizeof(e)), NS_STATUS_OK);
	rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("the embedded HLO does not parse");
	EXPECT_ERR("badhlo.snap:hlo:");

	/* outputs only: nothing to feed the replay */
	snprintf(path, sizeof(path), "%s/outonly.snap", tmpdir);
	t.role = SNAPSHOT_ROLE_OUTPUT;
	snprintf(t.name, sizeof(t.name), "output0");
	m.kind = "outputs";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, nan_hlo, strlen(nan_hlo), &t, 1), e, sizeof(e)),
			 NS_STATUS_OK);
	rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("holds no inputs (kind 'outputs')");

	/* an input whose dtype does not match the module */
	snprintf(path, sizeof(path), "%s/dtype.snap", tmpdir);
	snapshot_tensor_t in[2];
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 2; i++) {
		snprintf(in[i].name, sizeof(in[i].name), "input%d", i);
		in[i].dtype = ISA_DT_S32;
		in[i].rank = 1;
		in[i].shape[0] = 8;
		in[i].size = 32;
		in[i].data = x_nan;
		in[i].alias_input = -1;
	}
	m.kind = "inputs";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, nan_hlo, strlen(nan_hlo), in, 2), e, sizeof(e)),
			 NS_STATUS_OK);
	rc = run("replay '%s'", path);
	EXPECT_RC(rc, 3);
	EXPECT_ERR("input 'input0': the snapshot holds s32[8], the compiled module expects f32[8]");
}
END_TEST

/* Issue #11, item 8: the reference interpreter had no time limit, so replaying
 * a snapshot of a long while loop never ended (the device stopped at its
 * deadline long before). It gets NEURON_RT_EXEC_TIMEOUT too, with a message
 * that says so. */
START_TEST(test_replay_interpreter_gets_the_exec_timeout)
{
	char path[300], e[256];
	snprintf(path, sizeof(path), "%s/loop.snap", tmpdir);
	const char *hlo =
		"HloModule long_loop\n"
		"cond { cp = (s32[], f32[8]) parameter(0)\n ci = s32[] get-tuple-element(cp), index=0\n"
		" n = s32[] constant(9000000)\n ROOT lt = pred[] compare(ci, n), direction=LT }\n"
		"body { p = (s32[], f32[8]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
		" v = f32[8] get-tuple-element(p), index=1\n one = s32[] constant(1)\n"
		" i2 = s32[] add(i, one)\n v2 = f32[8] multiply(v, v)\n"
		" ROOT bt = (s32[], f32[8]) tuple(i2, v2) }\n"
		"ENTRY main { x = f32[8] parameter(0)\n z = s32[] constant(0)\n"
		" t = (s32[], f32[8]) tuple(z, x)\n"
		" w = (s32[], f32[8]) while(t), condition=cond, body=body\n"
		" ROOT r = f32[8] get-tuple-element(w), index=1 }\n";
	static const float ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	snapshot_tensor_t t;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "input0");
	t.dtype = ISA_DT_F32;
	t.rank = 1;
	t.shape[0] = 8;
	t.size = 32;
	t.data = ones;
	t.alias_input = -1;
	snapshot_meta_t m = { .module_name = "long_loop", .kind = "inputs" };
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, hlo, strlen(hlo), &t, 1), e, sizeof(e)), NS_STATUS_OK);
	setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
	uint64_t t0 = now_ms();
	int rc = run("replay '%s' -O0", path);
	uint64_t took = now_ms() - t0;
	unsetenv("NEURON_RT_EXEC_TIMEOUT");
	EXPECT_RC(rc, 1);
	EXPECT_OUT("device: NRT_TIMEOUT");
	EXPECT_ERR("reference interpreter did not finish within NEURON_RT_EXEC_TIMEOUT=1 s");
	EXPECT_ERR("deadline passed");
	ck_assert_msg(took < 20000, "replay took %llu ms", (unsigned long long)took);
	setenv("NEURON_RT_EXEC_TIMEOUT", "soon", 1);
	rc = run("replay '%s'", path);
	unsetenv("NEURON_RT_EXEC_TIMEOUT");
	EXPECT_RC(rc, 2);
	EXPECT_ERR("NEURON_RT_EXEC_TIMEOUT=\"soon\" is invalid");
}
END_TEST

START_TEST(test_usage_and_bad_files)
{
	EXPECT_RC(run("%s", ""), 2);
	EXPECT_ERR("missing COMMAND");
	EXPECT_RC(run("frob x"), 2);
	EXPECT_ERR("unknown command 'frob'");
	EXPECT_RC(run("info"), 2);
	EXPECT_ERR("missing FILE");
	EXPECT_RC(run("info a b"), 2);
	EXPECT_RC(run("info --bogus a"), 2);
	EXPECT_RC(run("replay x -O7"), 2);
	EXPECT_ERR("--opt-level wants 0, 1 or 2");
	EXPECT_RC(run("replay x --tolerance abc"), 2);
	EXPECT_ERR("--tolerance wants RTOL or RTOL,ATOL");
	EXPECT_RC(run("replay x --tolerance 1,"), 2);
	EXPECT_RC(run("replay x --tolerance -1"), 2);
	EXPECT_RC(run("--help"), 0);
	EXPECT_OUT("Exit status:");
	EXPECT_RC(run("replay --help"), 0);
	EXPECT_OUT("Usage: neuron-snapshot");

	char path[300];
	snprintf(path, sizeof(path), "%s/missing.snap", tmpdir);
	EXPECT_RC(run("info '%s'", path), 3);
	EXPECT_ERR(path);
	EXPECT_ERR("No such file");
	/* a corrupted file: one flipped byte in the tensor data */
	snprintf(path, sizeof(path), "%s/c.snap", tmpdir);
	snapshot_from_device(nan_hlo, 0, x_nan, y_nan, path, true, NULL, false);
	FILE *f = fopen(path, "r+b");
	fseek(f, -40, SEEK_END);
	int c = fgetc(f);
	fseek(f, -40, SEEK_END);
	fputc(c ^ 0x10, f);
	fclose(f);
	for (int k = 0; k < 3; k++) {
		int rc = k == 0 ? run("info '%s'", path)
			 : k == 1 ? run("replay '%s'", path)
				  : run("export '%s' --npz '%s/c.npz'", path, tmpdir);
		EXPECT_RC(rc, 3);
		EXPECT_ERR(path);
		EXPECT_ERR("checksum mismatch");
	}
}
END_TEST

/* ---- the runtime's own dump --------------------------------------------------- */

/* NEURON_DUMP_HLO_SNAPSHOT=ON_NRT_ERROR: the runtime writes the snapshot on the
 * NaN; replay names the instruction of the runtime's error record. */
START_TEST(test_replay_of_runtime_dump)
{
	char dump[300], flags[400];
	snprintf(dump, sizeof(dump), "%s/dump", tmpdir);
	ck_assert_int_eq(mkdir(dump, 0700), 0);
	snprintf(flags, sizeof(flags), "--xla_dump_to=%s", dump);
	setenv("NEURON_DUMP_HLO_SNAPSHOT", "ON_NRT_ERROR", 1);
	setenv("XLA_FLAGS", flags, 1);
	char unused[300];
	snprintf(unused, sizeof(unused), "%s/unused.snap", tmpdir);
	exec_result_t r = snapshot_from_device(nan_hlo, 2, x_nan, y_nan, unused, true, NULL, false);
	unsetenv("NEURON_DUMP_HLO_SNAPSHOT");
	unsetenv("XLA_FLAGS");
	ck_assert_int_eq(r.status, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
	DIR *d = opendir(dump);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	char path[700] = "";
	int files = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dump, e->d_name);
			files++;
		}
	closedir(d);
	ck_assert_msg(files == 1, "the runtime dumped %d files into %s", files, dump);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0600);
	int rc = run("info '%s'", path);
	EXPECT_RC(rc, 0);
	EXPECT_OUT("kind: error");
	rc = run("replay '%s'", path);
	EXPECT_RC(rc, 1);
	char line[512];
	snprintf(line, sizeof(line), "the recorded error names '%s': the same instruction", r.rec.hlo_name);
	EXPECT_OUT(line);
	EXPECT_OUT("first NaN: produced by HLO instruction 'l'");
	EXPECT_OUT("result: NaN reproduced; the replay names the same instruction as the error record");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("neuron-snapshot");
	TCase *tc = tcase_create("tool");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_info_text_and_json);
	tcase_add_test(tc, test_export_npz_loads_in_numpy);
	tcase_add_test(tc, test_export_dtypes_bf16_and_names);
	tcase_add_test(tc, test_export_errors);
	tcase_add_test(tc, test_export_name_collisions);
	tcase_add_test(tc, test_replay_names_device_instruction);
	tcase_add_test(tc, test_replay_names_fused_instruction);
	tcase_add_test(tc, test_replay_finite_run_matches);
	tcase_add_test(tc, test_replay_detects_changed_output);
	tcase_add_test(tc, test_replay_errors);
	tcase_add_test(tc, test_replay_bad_hlo_and_missing_inputs);
	tcase_add_test(tc, test_replay_interpreter_gets_the_exec_timeout);
	tcase_add_test(tc, test_usage_and_bad_files);
	tcase_add_test(tc, test_replay_of_runtime_dump);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
