/* Suite running, nrt_init, tensor set and temporary directory fixtures shared by the runtime Check tests. */
#include "rt_fixture.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test_neffs.h"

int rt_suite_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

void rt_init_ok(void)
{
	ck_assert_int_eq(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

void rt_init_default_ok(void)
{
	test_env_default();
	rt_init_ok();
}

nrt_tensor_set_t *rt_tensor_set_of(int n, ...)
{
	nrt_tensor_set_t *s;
	ck_assert_int_eq(nrt_allocate_tensor_set(&s), NRT_SUCCESS);
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *name = va_arg(ap, const char *);
		nrt_tensor_t *t = va_arg(ap, nrt_tensor_t *);
		ck_assert_int_eq(nrt_add_tensor_to_tensor_set(s, name, t), NRT_SUCCESS);
	}
	va_end(ap);
	return s;
}

void rt_add_model_sets(rt_add_model_t *f)
{
	f->in = rt_tensor_set_of(2, "a", f->a, "b", f->b);
	f->outs = rt_tensor_set_of(1, "out", f->out);
}

void rt_add_model_free(rt_add_model_t *f)
{
	nrt_destroy_tensor_set(&f->in);
	nrt_destroy_tensor_set(&f->outs);
	nrt_tensor_free(&f->a);
	nrt_tensor_free(&f->b);
	nrt_tensor_free(&f->out);
	if (f->m)
		ck_assert_int_eq(nrt_unload(f->m), NRT_SUCCESS);
	free(f->neff);
}

void rt_tmpdir_create(char *dir, size_t len, const char *prefix)
{
	int w = snprintf(dir, len, "/tmp/%s-XXXXXX", prefix);
	ck_assert_msg(w > 0 && (size_t)w < len, "temporary directory name for %s too long", prefix);
	ck_assert_msg(mkdtemp(dir) != NULL, "cannot create %s", dir);
}

/* The first error, kept so that the walk goes on removing what it can. */
static int remove_errno;

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && !remove_errno)
		remove_errno = errno;
	return 0;
}

int rt_tmpdir_remove(const char *dir)
{
	remove_errno = 0;
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		return -1;
	if (remove_errno) {
		errno = remove_errno;
		return -1;
	}
	return 0;
}

const char *rt_tmpdir_path(const char *dir, const char *name)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}
