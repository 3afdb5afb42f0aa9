/* Tests of the PJRT profiler extension (pjrt/profiler.c): found through PJRT_Api.extension_start, driven as XLA's PluginTracer drives it, refusing misuse. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api_profiler_extension.h"
#include "pjrt_test_util.h"

static const char *const add_hlo =
	"HloModule add_mod\n"
	"ENTRY main {\n"
	"  p0 = f32[2,3] parameter(0)\n"
	"  p1 = f32[2,3] parameter(1)\n"
	"  ROOT s = f32[2,3] add(p0, p1)\n"
	"}\n";

static const PLUGIN_Profiler_Api *prof_api(void)
{
	const PJRT_Extension_Base *e = API->extension_start;
	while (e && e->type != PJRT_Extension_Type_Profiler)
		e = e->next;
	ck_assert_msg(e != NULL, "no PJRT_Extension_Type_Profiler in the extension chain");
	const PJRT_Profiler_Extension *pe = (const PJRT_Profiler_Extension *)e;
	ck_assert_uint_ge(pe->struct_size, PJRT_Profiler_Extension_STRUCT_SIZE);
	ck_assert_ptr_nonnull(pe->profiler_api);
	return pe->profiler_api;
}

/* Code of err (0 for NULL); frees it. */
static int perr_code(const PLUGIN_Profiler_Api *p, PLUGIN_Profiler_Error *err, const char *substr)
{
	if (!err)
		return 0;
	PLUGIN_Profiler_Error_GetCode_Args gc = { .struct_size = PLUGIN_Profiler_Error_GetCode_Args_STRUCT_SIZE,
						  .error = err };
	ck_assert_ptr_null(p->error_get_code(&gc));
	PLUGIN_Profiler_Error_Message_Args m = { .struct_size = PLUGIN_Profiler_Error_Message_Args_STRUCT_SIZE,
						 .error = err };
	p->error_message(&m);
	ck_assert(m.message != NULL && m.message_size == strlen(m.message));
	if (substr)
		ck_assert_msg(strstr(m.message, substr), "'%s' lacks '%s'", m.message, substr);
	PLUGIN_Profiler_Error_Destroy_Args d = { .struct_size = PLUGIN_Profiler_Error_Destroy_Args_STRUCT_SIZE,
						 .error = err };
	p->error_destroy(&d);
	return gc.code;
}

/* Counts the planes of a serialized XSpace (field 1, length-delimited) and
 * checks that every field of it is well formed. */
static size_t xspace_planes(const uint8_t *b, size_t n)
{
	size_t planes = 0, i = 0;
	while (i < n) {
		uint64_t key = 0, len = 0;
		for (int s = 0; i < n; s += 7) {
			key |= (uint64_t)(b[i] & 0x7f) << s;
			if (!(b[i++] & 0x80))
				break;
		}
		ck_assert_uint_eq(key & 7, 2); /* XSpace has only length-delimited fields */
		for (int s = 0; i < n; s += 7) {
			len |= (uint64_t)(b[i] & 0x7f) << s;
			if (!(b[i++] & 0x80))
				break;
		}
		ck_assert_uint_le(len, n - i);
		i += len;
		if ((key >> 3) == 1)
			planes++;
	}
	return planes;
}

START_TEST(test_profiler_extension_in_chain)
{
	const PLUGIN_Profiler_Api *p = prof_api();
	ck_assert_uint_eq(p->struct_size, PLUGIN_Profiler_Api_STRUCT_SIZE);
	ck_assert_uint_eq(PLUGIN_Profiler_Api_STRUCT_SIZE, 80);
	ck_assert_uint_eq(PLUGIN_Profiler_CollectData_Args_STRUCT_SIZE, 32);
	ck_assert_uint_eq(PLUGIN_Profiler_Create_Args_STRUCT_SIZE, 32);
	ck_assert_uint_eq(PJRT_Profiler_Extension_STRUCT_SIZE, 40);
	ck_assert(p->error_destroy && p->error_message && p->error_get_code && p->create && p->destroy &&
		  p->start && p->stop && p->collect_data);
}
END_TEST

/* create, start, execute, stop, collect (size, then bytes), destroy, with args
 * whose struct_size is unset as the framework leaves it. */
START_TEST(test_profiler_session_around_an_execution)
{
	const PLUGIN_Profiler_Api *p = prof_api();
	PJRT_Client *c = T_client();
	PJRT_Device *const *devs;
	T_devices(c, &devs);
	PJRT_LoadedExecutable *le = T_compile_text(c, add_hlo);
	float x[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t dims[2] = { 2, 3 };
	PJRT_Buffer *in[2] = { T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, x, NULL),
			       T_buffer(c, devs[0], PJRT_Buffer_Type_F32, dims, 2, x, NULL) };

	PLUGIN_Profiler_Create_Args cr;
	memset(&cr, 0xa5, sizeof(cr));
	cr.options = "";
	cr.options_size = 0;
	ck_assert_int_eq(perr_code(p, p->create(&cr), NULL), 0);
	PLUGIN_Profiler_Start_Args st = { .struct_size = 0xdeadbeef, .profiler = cr.profiler };
	ck_assert_int_eq(perr_code(p, p->start(&st), NULL), 0);

	PJRT_Buffer *out[1] = { NULL };
	T_OK(T_execute(le, devs[0], in, 2, out, NULL, 0));
	float y[6];
	T_to_host(out[0], y, sizeof(y));
	ck_assert(y[5] == 12.0f);
	T_buffer_destroy(out[0]);

	PLUGIN_Profiler_Stop_Args sp = { .struct_size = 0, .profiler = cr.profiler };
	ck_assert_int_eq(perr_code(p, p->stop(&sp), NULL), 0);

	/* XLA's PluginTracer: one call, then reads the plugin's bytes */
	PLUGIN_Profiler_CollectData_Args cd = { .profiler = cr.profiler, .buffer = NULL };
	ck_assert_int_eq(perr_code(p, p->collect_data(&cd), NULL), 0);
	size_t n = cd.buffer_size_in_bytes;
	ck_assert(n == 0 || cd.buffer != NULL);
	size_t planes = xspace_planes(cd.buffer, n);
	/* the documented protocol: a second call into the caller's buffer */
	uint8_t *mine = malloc(n + 1);
	PLUGIN_Profiler_CollectData_Args cd2 = { .profiler = cr.profiler, .buffer = mine };
	ck_assert_int_eq(perr_code(p, p->collect_data(&cd2), NULL), 0);
	ck_assert_uint_eq(cd2.buffer_size_in_bytes, n);
	ck_assert(n == 0 || memcmp(mine, cd.buffer, n) == 0);
	ck_assert_uint_eq(xspace_planes(mine, n), planes);
	free(mine);

	/* a second window on the same profiler */
	ck_assert_int_eq(perr_code(p, p->start(&st), NULL), 0);
	ck_assert_int_eq(perr_code(p, p->stop(&sp), NULL), 0);

	PLUGIN_Profiler_Destroy_Args ds = { .profiler = cr.profiler };
	ck_assert_int_eq(perr_code(p, p->destroy(&ds), NULL), 0);
	T_buffer_destroy(in[0]);
	T_buffer_destroy(in[1]);
	T_loaded_destroy(le);
	T_client_destroy(c);
}
END_TEST

START_TEST(test_profiler_misuse_is_refused)
{
	const PLUGIN_Profiler_Api *p = prof_api();
	PLUGIN_Profiler_Start_Args st = { .profiler = NULL };
	ck_assert_int_eq(perr_code(p, p->start(&st), "NULL"), PJRT_Error_Code_INVALID_ARGUMENT);
	PLUGIN_Profiler_Stop_Args sp = { .profiler = NULL };
	ck_assert_int_eq(perr_code(p, p->stop(&sp), "NULL"), PJRT_Error_Code_INVALID_ARGUMENT);
	PLUGIN_Profiler_CollectData_Args cd = { .profiler = NULL };
	ck_assert_int_eq(perr_code(p, p->collect_data(&cd), "NULL"), PJRT_Error_Code_INVALID_ARGUMENT);
	PLUGIN_Profiler_Destroy_Args dn = { .profiler = NULL };
	ck_assert_int_eq(perr_code(p, p->destroy(&dn), NULL), 0);

	PLUGIN_Profiler_Create_Args a = { .struct_size = PLUGIN_Profiler_Create_Args_STRUCT_SIZE };
	PLUGIN_Profiler_Create_Args b = { .struct_size = PLUGIN_Profiler_Create_Args_STRUCT_SIZE };
	ck_assert_int_eq(perr_code(p, p->create(&a), NULL), 0);
	ck_assert_int_eq(perr_code(p, p->create(&b), NULL), 0);
	PLUGIN_Profiler_Stop_Args sa = { .profiler = a.profiler };
	ck_assert_int_eq(perr_code(p, p->stop(&sa), "not started"), PJRT_Error_Code_FAILED_PRECONDITION);
	PLUGIN_Profiler_Start_Args ta = { .profiler = a.profiler }, tb = { .profiler = b.profiler };
	ck_assert_int_eq(perr_code(p, p->start(&ta), NULL), 0);
	ck_assert_int_eq(perr_code(p, p->start(&ta), "already started"), PJRT_Error_Code_FAILED_PRECONDITION);
	ck_assert_int_eq(perr_code(p, p->start(&tb), "another"), PJRT_Error_Code_FAILED_PRECONDITION);
	PLUGIN_Profiler_CollectData_Args ca = { .profiler = a.profiler };
	ck_assert_int_eq(perr_code(p, p->collect_data(&ca), "stop it first"), PJRT_Error_Code_FAILED_PRECONDITION);
	/* destroying a running profiler stops it: b may start then */
	PLUGIN_Profiler_Destroy_Args da = { .profiler = a.profiler }, db = { .profiler = b.profiler };
	ck_assert_int_eq(perr_code(p, p->destroy(&da), NULL), 0);
	ck_assert_int_eq(perr_code(p, p->start(&tb), NULL), 0);
	ck_assert_int_eq(perr_code(p, p->destroy(&db), NULL), 0);

	/* error helpers accept NULL errors */
	PLUGIN_Profiler_Error_Destroy_Args ed = { .struct_size = PLUGIN_Profiler_Error_Destroy_Args_STRUCT_SIZE };
	p->error_destroy(&ed);
	PLUGIN_Profiler_Error_GetCode_Args gc = { .struct_size = PLUGIN_Profiler_Error_GetCode_Args_STRUCT_SIZE };
	ck_assert_int_eq(perr_code(p, p->error_get_code(&gc), "NULL"), PJRT_Error_Code_INVALID_ARGUMENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pjrt_profiler");
	TCase *tc = tcase_create("pjrt_profiler");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_profiler_extension_in_chain);
	tcase_add_test(tc, test_profiler_session_around_an_execution);
	tcase_add_test(tc, test_profiler_misuse_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
