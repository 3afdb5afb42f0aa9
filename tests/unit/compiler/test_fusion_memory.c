/* Producer fusion into reductions on the one-hot cross-entropy of a Llama2 step (fusion_hlo/llama_xent_onehot.hlo): at full size -O2 plans a few MiB where the unfused module needs a TiB; at a small size the device matches the reference interpreter at -O0 and -O2. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parser.h"
#include "ncc_e2e.h"
#include "neuronsim/neff.h"
#include "pipeline.h"
#include "hlo/verify.h"

#ifndef NCC_FUSION_HLO_DIR
#error "NCC_FUSION_HLO_DIR must name tests/unit/compiler/fusion_hlo (meson.build)"
#endif

#define MODULE NCC_FUSION_HLO_DIR "/llama_xent_onehot.hlo"
#define SEED 77

static char *read_module(size_t *len)
{
	char *text = NULL;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_read_file(MODULE, &text, len, &err) == NCC_OK, "%s", err.msg);
	return text;
}

/* Scratch bytes the NEFF of text at opt_level asks for (the memory plan). */
static uint64_t planned_scratch(const char *text, size_t len, int opt_level)
{
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.compile.opt_level = opt_level;
	o.no_cache = true;
	ncc_compile_result_t res;
	ncc_error_t err = {0};
	ncc_status_t st = ncc_compile_text(text, len, MODULE, &o, &res, &err);
	ck_assert_msg(st == NCC_OK, "-O%d does not compile: %s", opt_level, err.msg);
	neff_view_t v;
	char msg[200];
	ck_assert_msg(ns_status_consume_message(neff_parse(res.neff, res.neff_size, &v),
						msg, sizeof(msg)) == NS_STATUS_OK, "%s", msg);
	uint64_t s = v.meta->scratch_size;
	ncc_compile_result_release(&res);
	return s;
}

/* The one-hot (125 GiB as pred, 500 GiB as f32) and the other vocabulary-wide
 * products are never planned: the whole step fits in 32 MiB of scratch at -O2
 * (measured: 16 MiB, the one [1024,4096] f32 intermediate), against more than
 * 100 GiB without fusion (-O1; measured 1 TiB). */
START_TEST(test_llama_onehot_planned_memory)
{
	size_t len;
	char *text = read_module(&len);
	uint64_t o2 = planned_scratch(text, len, 2);
	fprintf(stderr, "llama one-hot cross-entropy: planned scratch -O2 %llu bytes\n",
		(unsigned long long)o2);
	ck_assert_uint_le(o2, 32ull << 20);
	uint64_t o1 = planned_scratch(text, len, 1);
	fprintf(stderr, "llama one-hot cross-entropy: planned scratch -O1 %llu bytes\n",
		(unsigned long long)o1);
	ck_assert_uint_gt(o1, 100ull << 30);
	free(text);
}
END_TEST

/* Replaces every occurrence of from by to (same or shorter length). */
static void subst(char *s, const char *from, const char *to)
{
	size_t lf = strlen(from), lt = strlen(to);
	ck_assert_uint_le(lt, lf);
	char *p = s;
	while ((p = strstr(p, from)) != NULL) {
		memcpy(p, to, lt);
		memmove(p + lt, p + lf, strlen(p + lf) + 1);
		p += lt;
	}
}

/* The same graph at [3,5,11] (labels from the interpreter's random integers,
 * 0..7, all inside the vocabulary) on the embedded device at -O0 and -O2
 * against the reference interpreter. */
static void run_small(int opt_level)
{
	size_t len;
	char *text = read_module(&len);
	subst(text, "32000", "11");
	subst(text, "1024", "3");
	subst(text, "4096", "5");
	len = strlen(text);
	ncc_module_t *m = NULL;
	ncc_error_t err = {0};
	ck_assert_msg(ncc_parse_hlo(text, len, "small", &m, &err) == NCC_OK, "parse: %s", err.msg);
	ck_assert_msg(ncc_verify(m, &err) == NCC_OK, "verify: %s", err.msg);
	ncc_driver_options_t o;
	ncc_driver_options_init(&o);
	o.compile.opt_level = opt_level;
	o.no_cache = true;
	ncc_compile_result_t res;
	ck_assert_msg(ncc_compile_text(text, len, "small", &o, &res, &err) == NCC_OK,
		      "-O%d: %s", opt_level, err.msg);
	setenv("NEURONSIM_BACKEND", "embedded", 0);
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, NULL, NULL), NRT_SUCCESS);
	char why[2048] = "";
	int rc = ncc_e2e_run_and_compare(m, res.neff, res.neff_size, SEED, 1, NULL, NULL, NULL, why,
					 sizeof(why));
	nrt_close();
	ck_assert_msg(rc == 0, "-O%d: %s", opt_level, why);
	ncc_compile_result_release(&res);
	ncc_module_free(m);
	free(text);
}

START_TEST(test_llama_onehot_small_matches_interp_o2)
{
	run_small(2);
}
END_TEST

START_TEST(test_llama_onehot_small_matches_interp_o0)
{
	run_small(0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fusion-memory");
	TCase *tc = tcase_create("fusion-memory");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_llama_onehot_planned_memory);
	tcase_add_test(tc, test_llama_onehot_small_matches_interp_o2);
	tcase_add_test(tc, test_llama_onehot_small_matches_interp_o0);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
