/* Unit tests of neuronsim-fwd's program cache: hits, invalidation when device memory changes, eviction, bad streams. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"

#define MEM_SIZE (1u << 20)

static uint8_t *mem;

static void setup(void)
{
	mem = calloc(1, MEM_SIZE);
	ck_assert_ptr_nonnull(mem);
}

static void teardown(void)
{
	free(mem);
}

/* Writes count NOPs (debug ids tag..tag+count-1) at addr of the fake device
 * memory and describes them as the vector engine's stream. */
static void put_nops(uint64_t addr, uint32_t count, uint32_t tag,
		     struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES])
{
	memset(s, 0, sizeof(struct neuronsim_fw_stream) * NEURONSIM_NUM_ENGINES);
	for (uint32_t i = 0; i < count; i++) {
		isa_insn_t in = isa_insn_init(ISA_OP_NOP, 0);
		in.debug_id = tag + i;
		memcpy(mem + addr + (uint64_t)i * sizeof(in), &in, sizeof(in));
	}
	s[ISA_ENGINE_VECTOR].addr = addr;
	s[ISA_ENGINE_VECTOR].count = count;
}

static fwd_cache_entry_t *acquire_ok(fwd_cache_t *c, const struct neuronsim_fw_stream *s)
{
	fwd_cache_entry_t *e = NULL;
	char err[160] = "";
	ns_status_code_t st = ns_status_consume_message(fwd_cache_acquire(c, mem, MEM_SIZE, s, 3, &e),
							err,
							sizeof(err));
	ck_assert_msg(st == NS_STATUS_OK, "acquire: %d %s", st, err);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(fwd_cache_program(e));
	return e;
}

START_TEST(test_same_code_is_validated_once)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(8, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES];
	put_nops(4096, 3, 100, s);
	fwd_cache_entry_t *a = acquire_ok(c, s);
	fwd_cache_entry_t *b = acquire_ok(c, s);
	ck_assert_ptr_eq(fwd_cache_program(a), fwd_cache_program(b));
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.hits, 1);
	fwd_cache_release(c, a);
	fwd_cache_release(c, b);
	fwd_cache_destroy(c);
}
END_TEST

START_TEST(test_rewritten_code_is_revalidated)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(8, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES];
	put_nops(4096, 3, 100, s);
	fwd_cache_entry_t *a = acquire_ok(c, s);
	/* Same addresses and counts, other (valid) bytes: a new program. */
	put_nops(4096, 3, 200, s);
	fwd_cache_entry_t *b = acquire_ok(c, s);
	ck_assert_ptr_ne(fwd_cache_program(a), fwd_cache_program(b));
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.hits, 0);
	/* The stale entry stays usable by whoever holds it. */
	fwd_cache_release(c, a);
	fwd_cache_release(c, b);
	fwd_cache_destroy(c);
}
END_TEST

START_TEST(test_code_made_invalid_after_validation_is_refused)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(8, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES];
	put_nops(8192, 2, 7, s);
	fwd_cache_release(c, acquire_ok(c, s));
	/* A client overwrites its validated code with garbage: the cached
	 * program must not be reused. */
	((isa_insn_t *)(mem + 8192))[1].opcode = 0x7fff;
	fwd_cache_entry_t *e = (fwd_cache_entry_t *)0x1;
	char err[160] = "";
	ck_assert_int_eq(ns_status_consume_message(fwd_cache_acquire(c, mem, MEM_SIZE, s, 3, &e),
						   err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_eq(e, (fwd_cache_entry_t *)0x1);
	ck_assert_str_ne(err, "");
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.invalid, 1);
	/* and once repaired it is valid again */
	put_nops(8192, 2, 7, s);
	fwd_cache_release(c, acquire_ok(c, s));
	fwd_cache_destroy(c);
}
END_TEST

START_TEST(test_streams_outside_memory_are_refused)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(8, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES] = { 0 };
	const struct { uint64_t addr; uint32_t count; } bad[] = {
		{ MEM_SIZE, 1 },
		{ MEM_SIZE - 100, 1 },
		{ UINT64_MAX - 10, 1 },
		{ 0, UINT32_MAX },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s[ISA_ENGINE_TENSOR].addr = bad[i].addr;
		s[ISA_ENGINE_TENSOR].count = bad[i].count;
		fwd_cache_entry_t *e = NULL;
		char err[160] = "";
		ck_assert_int_eq(ns_status_consume_message(fwd_cache_acquire(c, mem, MEM_SIZE, s, 3, &e),
							   err, sizeof(err)),
				 NS_STATUS_INVALID_ARGUMENT);
		ck_assert_ptr_null(e);
		ck_assert_ptr_nonnull(strstr(err, "outside device memory"));
	}
	fwd_cache_destroy(c);
}
END_TEST

START_TEST(test_lru_eviction_keeps_held_programs_alive)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(2, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[3][NEURONSIM_NUM_ENGINES];
	fwd_cache_entry_t *held[3];
	for (int i = 0; i < 3; i++) {
		put_nops(4096 * (uint64_t)(i + 1), 1, (uint32_t)i, s[i]);
		held[i] = acquire_ok(c, s[i]);
	}
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.evictions, 1);
	/* the evicted (first) program is still held and usable */
	ck_assert_ptr_nonnull(fwd_cache_program(held[0]));
	for (int i = 0; i < 3; i++)
		fwd_cache_release(c, held[i]);
	/* 2 and 1 are cached, 0 is not */
	fwd_cache_release(c, acquire_ok(c, s[2]));
	fwd_cache_release(c, acquire_ok(c, s[1]));
	fwd_cache_release(c, acquire_ok(c, s[0]));
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.hits, 2);
	ck_assert_uint_eq(st.misses, 4);
	fwd_cache_destroy(c);
}
END_TEST

START_TEST(test_disabled_cache_always_validates)
{
	fwd_cache_t *c;
	ck_assert_int_eq(fwd_cache_create(0, 0, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[NEURONSIM_NUM_ENGINES];
	put_nops(0, 1, 1, s);
	for (int i = 0; i < 3; i++)
		fwd_cache_release(c, acquire_ok(c, s));
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.misses, 3);
	ck_assert_uint_eq(st.hits, 0);
	fwd_cache_destroy(c);
}
END_TEST

typedef struct racer {
	fwd_cache_t *c;
	struct neuronsim_fw_stream (*s)[NEURONSIM_NUM_ENGINES];
	int seed;
	int failures;
} racer_t;

static void *racer_main(void *arg)
{
	racer_t *r = arg;
	unsigned seed = (unsigned)r->seed;
	for (int i = 0; i < 2000; i++) {
		int k = rand_r(&seed) % 4;
		fwd_cache_entry_t *e = NULL;
		char err[160];
		if (ns_status_consume_message(fwd_cache_acquire(r->c, mem, MEM_SIZE, r->s[k], 3, &e),
					      err, sizeof(err)) != NS_STATUS_OK) {
			r->failures++;
			continue;
		}
		fwd_cache_release(r->c, e);
	}
	return NULL;
}

START_TEST(test_concurrent_acquire_release)
{
	fwd_cache_t *c;
	/* Smaller than the working set: hits, misses and evictions race. */
	ck_assert_int_eq(fwd_cache_create(3, 1u << 20, &c), FWSIM_OK);
	struct neuronsim_fw_stream s[4][NEURONSIM_NUM_ENGINES];
	for (int i = 0; i < 4; i++)
		put_nops(4096 * (uint64_t)(i + 1), (uint32_t)i + 1, (uint32_t)i * 10, s[i]);
	pthread_t th[4];
	racer_t r[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (racer_t){ .c = c, .s = s, .seed = i + 1 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, racer_main, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].failures, 0);
	}
	fwd_cache_stats_t st;
	fwd_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.hits + st.misses, 8000);
	fwd_cache_destroy(c);
}
END_TEST

static Suite *fwd_cache_suite(void)
{
	Suite *s = suite_create("fwd_cache");
	TCase *tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_same_code_is_validated_once);
	tcase_add_test(tc, test_rewritten_code_is_revalidated);
	tcase_add_test(tc, test_code_made_invalid_after_validation_is_refused);
	tcase_add_test(tc, test_streams_outside_memory_are_refused);
	tcase_add_test(tc, test_lru_eviction_keeps_held_programs_alive);
	tcase_add_test(tc, test_disabled_cache_always_validates);
	tcase_add_test(tc, test_concurrent_acquire_release);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fwd_cache_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
