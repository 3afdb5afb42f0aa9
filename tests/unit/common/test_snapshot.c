/* Check tests of HLO snapshot files: round trip of every dtype, every corrupted
 * byte and every truncation refused with a message, mode 0600, and the atomic
 * writer leaving nothing behind on failure (a real full tmpfs and injected
 * write/pwrite/fsync/fallocate/rename failures through -Wl,--wrap; fallocate
 * and pwrite are fallocate64/pwrite64 under _FILE_OFFSET_BITS=64). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>
#include <xxhash.h>

#include "neuronsim/snapshot.h"

/* ---- injected failures ---------------------------------------------------
 * The static libnscommon's calls to these go through the wrappers (see
 * tests/unit/common/meson.build). Unarmed they pass straight through. */
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_fallocate64(int fd, int mode, off_t off, off_t len);
int __real_rename(const char *a, const char *b);
ssize_t __real_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __wrap_fsync(int fd);
int __wrap_fallocate64(int fd, int mode, off_t off, off_t len);
int __wrap_rename(const char *a, const char *b);

static struct {
	bool armed;
	long writes, fsyncs;       /* calls seen while armed */
	long fail_write_at;        /* 1-based call that fails, 0 never */
	int write_errno;
	long fail_fsync_at;
	int fsync_errno;
	int fallocate_errno;       /* 0: pass through */
	int rename_errno;
	int pwrite_errno;          /* the final header/metadata rewrite */
	bool short_writes;         /* at most 7 bytes per call */
	bool eintr;                /* every other call EINTR */
	long allocs;               /* allocations seen while armed */
	long fail_alloc_at;        /* 1-based allocation that fails, 0 never */
} inj;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static bool alloc_fails(void)
{
	return inj.armed && inj.fail_alloc_at && ++inj.allocs == inj.fail_alloc_at;
}

void *__wrap_malloc(size_t n)
{
	return alloc_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return alloc_fails() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return alloc_fails() ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return alloc_fails() ? ENOMEM : __real_posix_memalign(p, a, n);
}

char *__wrap_strdup(const char *s)
{
	return alloc_fails() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return alloc_fails() ? NULL : __real_strndup(s, n);
}

/* jansson is a shared library: its allocations come here through its hook. */
static void *json_alloc(size_t n)
{
	return alloc_fails() ? NULL : __real_malloc(n);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	if (!inj.armed)
		return __real_write(fd, buf, n);
	inj.writes++;
	if (inj.fail_write_at && inj.writes == inj.fail_write_at) {
		errno = inj.write_errno;
		return -1;
	}
	if (inj.eintr && inj.writes % 2) {
		errno = EINTR;
		return -1;
	}
	if (inj.short_writes && n > 7)
		n = 7;
	return __real_write(fd, buf, n);
}

int __wrap_fsync(int fd)
{
	if (inj.armed) {
		inj.fsyncs++;
		if (inj.fail_fsync_at && inj.fsyncs == inj.fail_fsync_at) {
			errno = inj.fsync_errno;
			return -1;
		}
	}
	return __real_fsync(fd);
}

int __wrap_fallocate64(int fd, int mode, off_t off, off_t len)
{
	if (inj.armed && inj.fallocate_errno) {
		errno = inj.fallocate_errno;
		return -1;
	}
	return __real_fallocate64(fd, mode, off, len);
}

int __wrap_rename(const char *a, const char *b)
{
	if (inj.armed && inj.rename_errno) {
		errno = inj.rename_errno;
		return -1;
	}
	return __real_rename(a, b);
}

ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	if (inj.armed && inj.pwrite_errno) {
		errno = inj.pwrite_errno;
		return -1;
	}
	if (inj.armed && inj.short_writes && n > 7)
		n = 7;
	return __real_pwrite64(fd, buf, n, off);
}

static void inj_reset(void)
{
	memset(&inj, 0, sizeof(inj));
}

/* ---- a sample with every dtype -------------------------------------------- */

#define N_SAMPLE 16
static snapshot_tensor_t sample_t[N_SAMPLE];
static uint8_t *sample_data[N_SAMPLE];
static uint32_t sample_n;
static const char sample_hlo[] =
	"HloModule sample\n\nENTRY main {\n  p0 = f32[2,3] parameter(0)\n"
	"  ROOT l = f32[2,3] log(p0)\n}\n";
static const char sample_error[] =
	"{\"kind\":\"nan\",\"hlo_name\":\"l\",\"op_type\":\"aten::log\","
	"\"source_file\":\"model.py\",\"source_line\":12}";

static snapshot_meta_t sample_meta(void)
{
	return (snapshot_meta_t){
		.module_name = "sample",
		.kind = "error",
		.process = 3,
		.executable = 7,
		.device = 1,
		.execution = 42,
		.status = 1003,
		.error_json = sample_error,
		.runtime_version = "neuronsim 0.1.0",
		.wall_time_ns = 1700000000123456789ull,
	};
}

static void add_tensor(const char *name, uint32_t role, uint32_t dt, uint32_t rank,
		       const uint64_t *shape, int32_t alias)
{
	snapshot_tensor_t *t = &sample_t[sample_n];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->role = role;
	t->dtype = dt;
	t->rank = rank;
	t->alias_input = alias;
	uint64_t n = isa_dtype_size(dt);
	for (uint32_t d = 0; d < rank; d++) {
		t->shape[d] = shape[d];
		n *= shape[d];
	}
	t->size = n;
	uint8_t *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 37 + sample_n * 11 + 1);
	if (dt == ISA_DT_PRED)
		for (uint64_t i = 0; i < n; i++)
			p[i] &= 1;
	sample_data[sample_n] = p;
	t->data = p;
	sample_n++;
}

static void sample_init(void)
{
	if (sample_n)
		return;
	static const uint64_t s23[] = { 2, 3 }, s5[] = { 5 }, s0[] = { 0, 3 }, s234[] = { 2, 3, 4 };
	static const uint64_t s8d[] = { 1, 2, 1, 2, 1, 2, 1, 3 };
	add_tensor("input0", SNAPSHOT_ROLE_INPUT, ISA_DT_F32, 2, s23, -1);
	add_tensor("scalar", SNAPSHOT_ROLE_INPUT, ISA_DT_F32, 0, NULL, -1);
	add_tensor("empty", SNAPSHOT_ROLE_INPUT, ISA_DT_S32, 2, s0, -1);
	add_tensor("w/bf16:0", SNAPSHOT_ROLE_INPUT, ISA_DT_BF16, 3, s234, -1);
	add_tensor("h", SNAPSHOT_ROLE_INPUT, ISA_DT_F16, 1, s5, -1);
	add_tensor("s64", SNAPSHOT_ROLE_INPUT, ISA_DT_S64, 1, s5, -1);
	add_tensor("u32", SNAPSHOT_ROLE_INPUT, ISA_DT_U32, 1, s5, -1);
	add_tensor("u64", SNAPSHOT_ROLE_INPUT, ISA_DT_U64, 1, s5, -1);
	add_tensor("u8", SNAPSHOT_ROLE_INPUT, ISA_DT_U8, 1, s5, -1);
	add_tensor("pred", SNAPSHOT_ROLE_INPUT, ISA_DT_PRED, 1, s5, -1);
	add_tensor("s8", SNAPSHOT_ROLE_INPUT, ISA_DT_S8, 1, s5, -1);
	add_tensor("s16", SNAPSHOT_ROLE_INPUT, ISA_DT_S16, 1, s5, -1);
	add_tensor("u16", SNAPSHOT_ROLE_INPUT, ISA_DT_U16, 8, s8d, -1);
	add_tensor("output0", SNAPSHOT_ROLE_OUTPUT, ISA_DT_F32, 2, s23, 0);
	add_tensor("out_empty", SNAPSHOT_ROLE_OUTPUT, ISA_DT_F32, 1, (const uint64_t[]){ 0 }, -1);
}

/* ---- temporary directories ---------------------------------------------- */

static void make_dir(char *buf, size_t len)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(buf, len, "%s/test-snapshot-XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Entries of dir other than . and .. */
static int dir_entries(const char *dir, char *first, size_t len)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n++ == 0 && first)
			snprintf(first, len, "%s", e->d_name);
	}
	closedir(d);
	return n;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p))
			rmdir(p);
	}
	closedir(d);
	rmdir(dir);
}

/* The code of writing the sample (its message in err); errno as snapshot_write left it. */
static ns_status_code_t write_sample(const char *path, char *err, size_t len)
{
	sample_init();
	snapshot_meta_t m = sample_meta();
	ns_status_t st = snapshot_write(path, &m, sample_hlo, strlen(sample_hlo), sample_t, sample_n);
	int e = errno;
	ns_status_code_t code = ns_status_consume_message(st, err, len);
	errno = e;
	return code;
}

/* The sample's file image (malloc'd). */
static uint8_t *sample_image(size_t *out_size)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/s.snap", dir);
	ck_assert_msg(write_sample(path, err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)n);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	remove_dir(dir);
	*out_size = (size_t)n;
	return buf;
}

static void check_equal_to_sample(const snapshot_t *s)
{
	snapshot_meta_t m = sample_meta();
	ck_assert_str_eq(s->meta.module_name, m.module_name);
	ck_assert_str_eq(s->meta.kind, m.kind);
	ck_assert_str_eq(s->meta.runtime_version, m.runtime_version);
	ck_assert_uint_eq(s->meta.process, m.process);
	ck_assert_uint_eq(s->meta.executable, m.executable);
	ck_assert_uint_eq(s->meta.device, m.device);
	ck_assert_uint_eq(s->meta.execution, m.execution);
	ck_assert_int_eq(s->meta.status, m.status);
	ck_assert_uint_eq(s->meta.wall_time_ns, m.wall_time_ns);
	ck_assert_str_eq(s->meta.error_json, sample_error);
	ck_assert_uint_eq(s->hlo_size, strlen(sample_hlo));
	ck_assert_str_eq(s->hlo_text, sample_hlo);
	ck_assert_uint_eq(s->version_major, SNAPSHOT_VERSION_MAJOR);
	ck_assert_uint_eq(s->version_minor, SNAPSHOT_VERSION_MINOR);
	ck_assert_uint_eq(s->n_tensors, sample_n);
	for (uint32_t i = 0; i < sample_n; i++) {
		const snapshot_tensor_t *a = &sample_t[i], *b = &s->tensors[i];
		ck_assert_str_eq(b->name, a->name);
		ck_assert_uint_eq(b->role, a->role);
		ck_assert_uint_eq(b->dtype, a->dtype);
		ck_assert_uint_eq(b->rank, a->rank);
		ck_assert_int_eq(b->alias_input, a->alias_input);
		for (uint32_t d = 0; d < a->rank; d++)
			ck_assert_uint_eq(b->shape[d], a->shape[d]);
		ck_assert_uint_eq(b->size, a->size);
		ck_assert_ptr_nonnull(b->data);
		ck_assert_int_eq(memcmp(b->data, a->data, a->size), 0);
		ck_assert_uint_eq(b->checksum, XXH64(a->data, a->size, 0));
		/* 64-byte aligned in memory, whatever the element type */
		ck_assert_uint_eq((uintptr_t)b->data % SNAPSHOT_TENSOR_ALIGN, 0);
	}
}

/* ---- round trip ------------------------------------------------------------ */

START_TEST(test_round_trip_every_dtype)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/round.snap", dir);
	ck_assert_msg(write_sample(path, err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_str_eq(err, "");
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	check_equal_to_sample(s);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_eq(s->file_size, (uint64_t)sb.st_size);
	ck_assert_uint_eq(sb.st_size % SNAPSHOT_TENSOR_ALIGN, 0);
	snapshot_free(s);
	/* only the file: no temporary */
	ck_assert_int_eq(dir_entries(dir, NULL, 0), 1);
	remove_dir(dir);
}
END_TEST

/* Every dtype alone, at rank 0 and with an empty dimension. */
START_TEST(test_round_trip_rank0_and_empty)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.snap", dir);
	uint32_t dt = (uint32_t)_i + 1;
	uint8_t one[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	if (dt == ISA_DT_PRED)
		memset(one, 1, sizeof(one));
	snapshot_tensor_t t[2];
	memset(t, 0, sizeof(t));
	snprintf(t[0].name, sizeof(t[0].name), "r0");
	t[0].dtype = dt;
	t[0].size = isa_dtype_size(dt);
	t[0].data = one;
	t[0].alias_input = -1;
	snprintf(t[1].name, sizeof(t[1].name), "e");
	t[1].role = SNAPSHOT_ROLE_OUTPUT;
	t[1].dtype = dt;
	t[1].rank = 3;
	t[1].shape[0] = 4;
	t[1].shape[1] = 0;
	t[1].shape[2] = 2;
	t[1].alias_input = -1;
	snapshot_meta_t m = { 0 };  /* every string NULL */
	ck_assert_msg(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, t, 2), err, sizeof(err)) == NS_STATUS_OK,
		      "%s", err);
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_uint_eq(s->n_tensors, 2);
	ck_assert_uint_eq(s->tensors[0].rank, 0);
	ck_assert_uint_eq(s->tensors[0].dtype, dt);
	ck_assert_uint_eq(s->tensors[0].size, isa_dtype_size(dt));
	ck_assert_int_eq(memcmp(s->tensors[0].data, one, isa_dtype_size(dt)), 0);
	ck_assert_uint_eq(s->tensors[1].rank, 3);
	ck_assert_uint_eq(s->tensors[1].shape[1], 0);
	ck_assert_uint_eq(s->tensors[1].size, 0);
	ck_assert_str_eq(s->meta.module_name, "");
	ck_assert_ptr_null(s->meta.error_json);
	ck_assert_uint_eq(s->hlo_size, 0);
	ck_assert_str_eq(s->hlo_text, "");
	snapshot_free(s);
	remove_dir(dir);
}
END_TEST

START_TEST(test_round_trip_u64_beyond_int64)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/big.snap", dir);
	snapshot_meta_t m = { .process = UINT64_MAX, .execution = (uint64_t)INT64_MAX + 1,
			      .status = -5 };
	ck_assert_msg(ns_status_consume_message(snapshot_write(path, &m, "x", 1, NULL, 0), err, sizeof(err)) == NS_STATUS_OK,
		      "%s", err);
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_uint_eq(s->meta.process, UINT64_MAX);
	ck_assert_uint_eq(s->meta.execution, (uint64_t)INT64_MAX + 1);
	ck_assert_int_eq(s->meta.status, -5);
	ck_assert_uint_eq(s->n_tensors, 0);
	snapshot_free(s);
	remove_dir(dir);
}
END_TEST

START_TEST(test_write_replaces_existing_file)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/x.snap", dir);
	FILE *f = fopen(path, "w");
	fputs("old", f);
	fclose(f);
	ck_assert_msg(write_sample(path, err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	snapshot_free(s);
	ck_assert_int_eq(dir_entries(dir, NULL, 0), 1);
	remove_dir(dir);
}
END_TEST

/* ---- mode ------------------------------------------------------------------- */

START_TEST(test_file_mode_is_0600)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/mode.snap", dir);
	mode_t old = umask(0); /* even a permissive umask gives 0600 */
	ns_status_code_t st = write_sample(path, err, sizeof(err));
	umask(old);
	ck_assert_msg(st == NS_STATUS_OK, "%s", err);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 07777, 0600);
	ck_assert(S_ISREG(sb.st_mode));
	remove_dir(dir);
}
END_TEST

/* ---- argument errors ---------------------------------------------------------- */

START_TEST(test_write_rejects_bad_arguments)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/bad.snap", dir);
	sample_init();
	snapshot_meta_t m = sample_meta();
	snapshot_tensor_t t = sample_t[0];

	ck_assert_int_eq(ns_status_consume_message(snapshot_write(NULL, &m, NULL, 0, NULL, 0), err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, NULL, NULL, 0, NULL, 0), err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 5, NULL, 0), err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, NULL, 3), err, sizeof(err)),
			 NS_STATUS_INVALID_ARGUMENT);

	t.size++;  /* size disagrees with dtype and shape */
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "input0"));
	t = sample_t[0];
	t.dtype = 99;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	t.rank = SNAPSHOT_MAX_RANK + 1;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	t.role = 2;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	t.name[0] = '\0';
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	memset(t.name, 'a', sizeof(t.name)); /* no NUL */
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	t.data = NULL;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	t.alias_input = -2;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	/* alias_input: an input may not alias; an output aliases an input of the table */
	t = sample_t[0];
	t.alias_input = 0;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "alias_input"));
	snapshot_tensor_t two[2] = { sample_t[13], sample_t[13] }; /* outputs */
	two[0].alias_input = -1;
	two[1].alias_input = 0;  /* an output, not an input */
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, two, 2), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	two[1].alias_input = 2;  /* beyond the table */
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, two, 2), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	t = sample_t[0];
	snprintf(t.name, sizeof(t.name), "bad\xff\xfe");  /* not UTF-8 */
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "UTF-8"));
	/* shape whose byte count overflows 64 bits */
	t = sample_t[0];
	t.rank = 2;
	t.shape[0] = t.shape[1] = (uint64_t)1 << 40;
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);

	m.error_json = "{not json";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, NULL, 0), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "error record"));
	m.error_json = "[1,2]";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, NULL, 0), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	m = sample_meta();
	m.module_name = "\xc3";
	ck_assert_int_eq(ns_status_consume_message(snapshot_write(path, &m, NULL, 0, NULL, 0), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, path));

	ck_assert_int_eq(dir_entries(dir, NULL, 0), 0);
	remove_dir(dir);
}
END_TEST

/* ---- every corrupted byte and every truncation ------------------------------ */

START_TEST(test_every_flipped_byte_is_detected)
{
	size_t size;
	uint8_t *img = sample_image(&size);
	snapshot_t *s = NULL;
	char err[512];
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)), NS_STATUS_OK);
	check_equal_to_sample(s);
	snapshot_free(s);
	/* Every byte of the file is covered by a checksum or must be zero padding. */
	for (size_t i = 0; i < size; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			img[i] ^= (uint8_t)(1u << bit);
			err[0] = '\0';
			ns_status_code_t st = ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err));
			ck_assert_msg(st != NS_STATUS_OK, "flipping bit %d of byte %zu went unnoticed", bit, i);
			ck_assert_ptr_null(s);
			ck_assert_msg(err[0] && !strchr(err, '\n'), "byte %zu: message '%s'", i, err);
			img[i] ^= (uint8_t)(1u << bit);
		}
	}
	free(img);
}
END_TEST

START_TEST(test_every_truncation_is_detected)
{
	size_t size;
	uint8_t *img = sample_image(&size);
	char err[512];
	for (size_t n = 0; n < size; n++) {
		snapshot_t *s = (snapshot_t *)0x1;
		err[0] = '\0';
		ns_status_code_t st = ns_status_consume_message(snapshot_parse(n ? img : NULL, n, &s), err, sizeof(err));
		ck_assert_msg(st == NS_STATUS_INVALID_ARGUMENT, "length %zu: status %d (%s)", n, st, err);
		ck_assert_ptr_null(s);
		ck_assert_msg(strstr(err, "truncated") || strstr(err, "magic"), "length %zu: '%s'", n, err);
	}
	/* and a trailing byte */
	uint8_t *longer = malloc(size + 1);
	memcpy(longer, img, size);
	longer[size] = 0;
	snapshot_t *s = NULL;
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(longer, size + 1, &s), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "trailing"));
	free(longer);
	free(img);
}
END_TEST

/* The status and message of each section's corruption. */
START_TEST(test_corruption_of_each_section)
{
	size_t size;
	uint8_t *img = sample_image(&size);
	char err[512];
	snapshot_t *s = NULL;
	uint64_t meta_off, hlo_off, data_off;
	memcpy(&meta_off, img + 24, 8);
	memcpy(&hlo_off, img + 48, 8);
	memcpy(&data_off, img + 72, 8);
	ck_assert_uint_eq(meta_off, SNAPSHOT_HEADER_SIZE);
	ck_assert_uint_eq(data_off % SNAPSHOT_DATA_ALIGN, 0);

	struct { size_t at; ns_status_code_t st; const char *words; } cases[] = {
		{ 0, NS_STATUS_INVALID_ARGUMENT, "magic" },
		{ 20, NS_STATUS_DATA_LOSS, "header checksum" },
		{ 121, NS_STATUS_DATA_LOSS, "header checksum" },
		{ (size_t)meta_off + 3, NS_STATUS_DATA_LOSS, "metadata checksum" },
		{ (size_t)hlo_off + 5, NS_STATUS_DATA_LOSS, "HLO text checksum" },
		{ (size_t)data_off - 1, NS_STATUS_INVALID_ARGUMENT, "padding" },
		{ (size_t)data_off + 1, NS_STATUS_DATA_LOSS, "tensor 0 'input0'" },
		{ size - 1, NS_STATUS_INVALID_ARGUMENT, "padding" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		img[cases[c].at] ^= 0x40;
		ns_status_code_t st = ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err));
		ck_assert_msg(st == cases[c].st && strstr(err, cases[c].words),
			      "byte %zu: status %d, message '%s', expected %d with '%s'", cases[c].at, st,
			      err, cases[c].st, cases[c].words);
		img[cases[c].at] ^= 0x40;
	}
	/* A checksum mismatch in the last tensor names it. */
	uint64_t last_off = data_off;
	snapshot_t *ok = NULL;
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, size, &ok), err, sizeof(err)), NS_STATUS_OK);
	const snapshot_tensor_t *lt = &ok->tensors[13]; /* output0 */
	last_off = data_off + (uint64_t)((const uint8_t *)lt->data - (const uint8_t *)ok->tensors[0].data);
	snapshot_free(ok);
	img[last_off + 2] ^= 1;
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)), NS_STATUS_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(err, "'output0'"));
	free(img);
}
END_TEST

START_TEST(test_version_and_flags)
{
	size_t size;
	uint8_t *img = sample_image(&size);
	char err[512];
	snapshot_t *s = NULL;
	uint16_t v = 2;
	memcpy(img + 8, &v, 2);
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	ck_assert_ptr_nonnull(strstr(err, "2.0"));
	ck_assert_ptr_nonnull(strstr(err, "1.x"));
	/* version check precedes the header length: a 12-byte v2 file says so too */
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, 12, &s), err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	v = 1;
	memcpy(img + 8, &v, 2);
	/* a newer minor version is read */
	v = 7;
	memcpy(img + 10, &v, 2);
	uint64_t sum = XXH64(img, 120, 0);
	memcpy(img + 120, &sum, 8);
	ck_assert_msg(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_uint_eq(s->version_minor, 7);
	snapshot_free(s);
	/* unknown flags are refused */
	uint32_t flags = 4;
	memcpy(img + 92, &flags, 4);
	sum = XXH64(img, 120, 0);
	memcpy(img + 120, &sum, 8);
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)), NS_STATUS_UNIMPLEMENTED);
	ck_assert_ptr_nonnull(strstr(err, "flags"));
	free(img);
}
END_TEST

/* ---- structurally bad files with valid checksums ------------------------------
 * Builds an image from a metadata text and a data section, sealing every
 * checksum, so the checks behind the checksums are reached. */
static uint8_t *seal(const char *meta, const char *hlo, const void *data, uint64_t data_size,
		     uint32_t n_tensors, size_t *out_size)
{
	uint64_t meta_size = strlen(meta), hlo_size = strlen(hlo);
	uint64_t hlo_off = SNAPSHOT_HEADER_SIZE + meta_size;
	uint64_t data_off = (hlo_off + hlo_size + SNAPSHOT_DATA_ALIGN - 1) / SNAPSHOT_DATA_ALIGN *
			    SNAPSHOT_DATA_ALIGN;
	uint64_t size = data_off + data_size;
	uint8_t *img = calloc(1, size);
	memcpy(img, SNAPSHOT_MAGIC, 8);
	uint16_t major = 1, minor = 0;
	uint32_t hs = SNAPSHOT_HEADER_SIZE;
	memcpy(img + 8, &major, 2);
	memcpy(img + 10, &minor, 2);
	memcpy(img + 12, &hs, 4);
	uint64_t f[10] = { size, SNAPSHOT_HEADER_SIZE, meta_size, XXH64(meta, meta_size, 0), hlo_off,
			   hlo_size, XXH64(hlo, hlo_size, 0), data_off, data_size };
	memcpy(img + 16, f, 72);
	memcpy(img + 88, &n_tensors, 4);
	memcpy(img + SNAPSHOT_HEADER_SIZE, meta, meta_size);
	memcpy(img + hlo_off, hlo, hlo_size);
	if (data_size)
		memcpy(img + data_off, data, data_size);
	uint64_t sum = XXH64(img, 120, 0);
	memcpy(img + 120, &sum, 8);
	*out_size = size;
	return img;
}

static void expect_bad_meta(const char *meta, uint32_t n, const char *words)
{
	static const float data[16] = { 1, 2, 3, 4, 5, 6 };
	size_t size;
	uint8_t *img = seal(meta, "", data, sizeof(data), n, &size);
	snapshot_t *s = (snapshot_t *)0x1;
	char err[512] = "";
	ns_status_code_t st = ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err));
	ck_assert_msg(st != NS_STATUS_OK && strstr(err, words),
		      "meta %s: status %d, message '%s', expected '%s'", meta, st, err, words);
	ck_assert_msg(!strchr(err, '\n'), "meta %s: message of more than one line: '%s'", meta, err);
	ck_assert_ptr_null(s);
	free(img);
}

#define F "\"format\":\"neuronsim-hlo-snapshot\""
#define T(extra) "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[2,3]," \
	"\"alias_input\":-1,\"size\":24,\"checksum\":\"%s\"" extra "}"

START_TEST(test_bad_metadata_is_refused)
{
	static const float data[16] = { 1, 2, 3, 4, 5, 6 };
	char sum[17], meta[1024];
	snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)XXH64(data, 24, 0));
	/* the good one first, so the cases below fail for the reason they name */
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[" T(",\"offset\":0") "]}", sum);
	size_t size;
	uint8_t *img = seal(meta, "HloModule x", data, sizeof(data), 1, &size);
	snapshot_t *s = NULL;
	char err[512];
	ck_assert_msg(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_uint_eq(s->tensors[0].size, 24);
	ck_assert(((const float *)s->tensors[0].data)[5] == 6.0f);
	snapshot_free(s);
	free(img);

	expect_bad_meta("{" F ",\"tensors\":[]", 0, "not valid JSON");
	expect_bad_meta("[1]", 0, "not a snapshot description");
	expect_bad_meta("{\"format\":\"other\",\"tensors\":[]}", 0, "not a snapshot description");
	expect_bad_meta("{" F ",\"tensors\":[]}", 1, "the header says 1");
	expect_bad_meta("{" F ",\"format\":\"x\",\"tensors\":[]}", 0, "not valid JSON"); /* duplicate key */
	/* jansson quotes the bytes at the error, here a newline after a bad
	 * escape (found by fuzz_snapshot): escaped, the message one line */
	expect_bad_meta("{" F ",\"tensors\":[],\"x\":\"a\\\n\"}", 0, "\\x0a");
	expect_bad_meta("{" F ",\"tensors\":[],\"error\":5}", 0, "\"error\"");
	expect_bad_meta("{" F ",\"tensors\":[],\"status\":\"x\"}", 0, "\"status\"");
	expect_bad_meta("{" F ",\"tensors\":[],\"module_name\":3}", 0, "\"module_name\"");
	expect_bad_meta("{" F ",\"tensors\":[],\"process\":-1}", 0, "\"process\"");
	expect_bad_meta("{" F ",\"tensors\":[],\"device\":\"12x\"}", 0, "\"device\"");
	expect_bad_meta("{" F ",\"tensors\":[],\"device\":\"99999999999999999999\"}", 0, "\"device\"");
	expect_bad_meta("{" F ",\"tensors\":[7]}", 1, "not a JSON object");

	struct { const char *tensor; const char *words; } bad[] = {
		{ "{\"name\":\"\",\"role\":\"input\"}", "\"name\"" },
		{ "{\"name\":\"a\\u0000b\",\"role\":\"input\"}", "not valid JSON" },
		{ "{\"name\":\"a\",\"role\":\"inout\"}", "neither input nor output" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f64\"}", "unknown dtype f64" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1,1,1,1,1,1,1,1,1]}", "at most 8" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[-1]}", "dimension 0" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-2}", "alias_input" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0}", "\"size\"" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0,\"size\":8}", "does not match" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[4294967296,4294967296],\"alias_input\":-1,\"offset\":0,\"size\":0}", "does not match" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":4,\"size\":4}", "unaligned" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":64,\"size\":4}", "outside" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[16],\"alias_input\":-1,\"offset\":9223372036854775744,\"size\":64}", "outside" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0,\"size\":4,\"checksum\":\"12\"}", "16 hex" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0,\"size\":4,\"checksum\":\"000000000000000G\"}", "hex" },
		{ "{\"name\":\"a\",\"role\":\"input\",\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0,\"size\":4,\"checksum\":\"0000000000000000\"}", "checksum mismatch" },
	};
	for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
		snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[%s]}", bad[c].tensor);
		expect_bad_meta(meta, 1, bad[c].words);
	}
	/* alias_input of an input, of an output naming an output, beyond the table */
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[{\"name\":\"a\",\"role\":\"input\","
		 "\"dtype\":\"f32\",\"shape\":[2,3],\"alias_input\":0,\"offset\":0,\"size\":24,"
		 "\"checksum\":\"%s\"}]}", sum);
	expect_bad_meta(meta, 1, "alias_input 0 is not");
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[{\"name\":\"a\",\"role\":\"output\","
		 "\"dtype\":\"f32\",\"shape\":[2,3],\"alias_input\":0,\"offset\":0,\"size\":24,"
		 "\"checksum\":\"%s\"}]}", sum);
	expect_bad_meta(meta, 1, "alias_input 0 is not");
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[{\"name\":\"a\",\"role\":\"output\","
		 "\"dtype\":\"f32\",\"shape\":[2,3],\"alias_input\":5,\"offset\":0,\"size\":24,"
		 "\"checksum\":\"%s\"}]}", sum);
	expect_bad_meta(meta, 1, "alias_input 5 is not");
	/* two tensors overlapping */
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[" T(",\"offset\":0") "," T(",\"offset\":0") "]}",
		 sum, sum);
	expect_bad_meta(meta, 2, "overlaps");
	/* a tensor at 0 of 24 bytes leaves non-zero data after it: padding check */
	snprintf(meta, sizeof(meta), "{" F ",\"tensors\":[{\"name\":\"a\",\"role\":\"input\","
		 "\"dtype\":\"f32\",\"shape\":[1],\"alias_input\":-1,\"offset\":0,\"size\":4,"
		 "\"checksum\":\"%016llx\"}]}", (unsigned long long)XXH64(data, 4, 0));
	expect_bad_meta(meta, 1, "padding after the last tensor");
}
END_TEST

START_TEST(test_bad_sections_are_refused)
{
	const char *meta = "{" F ",\"tensors\":[]}";
	size_t size;
	uint8_t *img = seal(meta, "abc", NULL, 0, 0, &size);
	char err[512];
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_parse(img, size, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	ck_assert_str_eq(s->hlo_text, "abc");
	snapshot_free(s);
	struct { size_t at; uint64_t v; const char *words; } cases[] = {
		{ 12, 64, "header size" },                  /* header_size too small (u32) */
		{ 24, 0, "overlaps" },                      /* meta offset inside the header */
		{ 32, 0, "metadata size" },                 /* empty metadata */
		{ 32, UINT64_MAX - 100, "metadata size" },  /* meta size overflowing */
		{ 48, UINT64_MAX, "outside" },              /* HLO offset */
		{ 56, 1000000, "outside" },                 /* HLO size */
		{ 72, 100, "overlaps" },                    /* data offset before the HLO end */
		{ 80, 8, "outside" },                       /* data size */
		{ 96, 1, "reserved" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint8_t *b = malloc(size);
		memcpy(b, img, size);
		if (cases[c].at == 12) {
			uint32_t v32 = (uint32_t)cases[c].v;
			memcpy(b + 12, &v32, 4);
		} else if (cases[c].at == 96) {
			b[96] = 1;
		} else {
			memcpy(b + cases[c].at, &cases[c].v, 8);
		}
		uint64_t sum = XXH64(b, 120, 0);
		memcpy(b + 120, &sum, 8);
		ns_status_code_t st = ns_status_consume_message(snapshot_parse(b, size, &s), err, sizeof(err));
		ck_assert_msg(st == NS_STATUS_INVALID_ARGUMENT && strstr(err, cases[c].words),
			      "field at %zu: status %d '%s', expected '%s'", cases[c].at, st, err,
			      cases[c].words);
		free(b);
	}
	/* too many tensors for the table */
	uint8_t *b = malloc(size);
	memcpy(b, img, size);
	uint32_t n = SNAPSHOT_MAX_TENSORS + 1;
	memcpy(b + 88, &n, 4);
	uint64_t sum = XXH64(b, 120, 0);
	memcpy(b + 120, &sum, 8);
	ck_assert_int_eq(ns_status_consume_message(snapshot_parse(b, size, &s), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "at most"));
	free(b);
	free(img);
}
END_TEST

START_TEST(test_read_errors_name_the_path)
{
	char dir[256], path[300], err[512];
	snapshot_t *s = (snapshot_t *)0x1;
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/missing.snap", dir);
	ck_assert_int_eq(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)), NS_STATUS_NOT_FOUND);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	ck_assert_int_eq(ns_status_consume_message(snapshot_read(dir, &s), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
	/* a corrupt file: the message starts with the path */
	snprintf(path, sizeof(path), "%s/junk.snap", dir);
	FILE *f = fopen(path, "w");
	fwrite("NSIMSNAP\x01\x00\x00\x00junk", 1, 16, f);
	fclose(f);
	ck_assert_int_eq(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	ck_assert_int_eq(ns_status_consume_message(snapshot_read(NULL, &s), err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT);
	snapshot_free(NULL);
	remove_dir(dir);
}
END_TEST

/* ---- atomicity and disk full -------------------------------------------------- */

START_TEST(test_failure_leaves_no_file)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	/* a directory that does not exist: the temporary cannot be created */
	snprintf(path, sizeof(path), "%s/nodir/x.snap", dir);
	ck_assert_int_eq(write_sample(path, err, sizeof(err)), NS_STATUS_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_int_eq(errno, ENOENT);
	/* the target is a non-empty directory: rename fails after the data is written */
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	char inner[400];
	snprintf(inner, sizeof(inner), "%s/keep", path);
	fclose(fopen(inner, "w"));
	ck_assert_int_eq(write_sample(path, err, sizeof(err)), NS_STATUS_INVALID_ARGUMENT); /* EISDIR */
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "rename"));
	char first[256];
	ck_assert_int_eq(dir_entries(dir, first, sizeof(first)), 1); /* only sub/ */
	ck_assert_str_eq(first, "sub");
	ck_assert_int_eq(dir_entries(path, NULL, 0), 1);
	unlink(inner);
	remove_dir(dir);
}
END_TEST

/* SQLite's habit: fail the 1st, 2nd, ... write until the write succeeds; every
 * failure must be clean. */
START_TEST(test_injected_write_failures)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/inj.snap", dir);
	int errs[] = { ENOSPC, EDQUOT, EIO };
	for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
		long n;
		for (n = 1;; n++) {
			inj_reset();
			inj.fail_write_at = n;
			inj.write_errno = errs[k];
			inj.armed = true;
			err[0] = '\0';
			ns_status_code_t st = write_sample(path, err, sizeof(err));
			long seen = inj.writes;
			inj_reset();
			if (seen < n) {
				ck_assert_msg(st == NS_STATUS_OK, "%s", err);
				break;
			}
			ck_assert_int_eq(st, ns_status_code_from_errno(errs[k]));
			ck_assert_int_eq(errno, errs[k]);
			ck_assert_msg(strstr(err, path) && strstr(err, strerror(errs[k])) &&
				      strstr(err, "no file was left"), "write %ld: '%s'", n, err);
			ck_assert_msg(dir_entries(dir, NULL, 0) == 0, "write %ld left a file", n);
		}
		ck_assert_int_gt(n, 3);
		unlink(path);
	}
	remove_dir(dir);
}
END_TEST

START_TEST(test_injected_fsync_fallocate_rename_failures)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/inj.snap", dir);
	struct { long fsync_at; int fsync_errno; int fallocate_errno; int rename_errno;
		 int pwrite_errno; ns_status_code_t st; const char *words; } cases[] = {
		{ 1, EIO, 0, 0, 0, NS_STATUS_UNKNOWN, "cannot sync" },
		{ 1, ENOSPC, 0, 0, 0, NS_STATUS_RESOURCE_EXHAUSTED, "cannot sync" },
		{ 2, EIO, 0, 0, 0, NS_STATUS_UNKNOWN, "sync the directory" },   /* the directory's fsync */
		{ 0, 0, ENOSPC, 0, 0, NS_STATUS_RESOURCE_EXHAUSTED, "reserve space" },
		{ 0, 0, EDQUOT, 0, 0, NS_STATUS_RESOURCE_EXHAUSTED, "reserve space" },
		{ 0, 0, EOPNOTSUPP, 0, 0, NS_STATUS_OK, "" },                     /* no fallocate: fine */
		{ 0, 0, 0, EACCES, 0, NS_STATUS_PERMISSION_DENIED, "rename" },
		{ 0, 0, 0, 0, ENOSPC, NS_STATUS_RESOURCE_EXHAUSTED, "cannot write" },
		{ 0, 0, 0, 0, EIO, NS_STATUS_UNKNOWN, "cannot write" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		inj_reset();
		inj.fail_fsync_at = cases[c].fsync_at;
		inj.fsync_errno = cases[c].fsync_errno;
		inj.fallocate_errno = cases[c].fallocate_errno;
		inj.rename_errno = cases[c].rename_errno;
		inj.pwrite_errno = cases[c].pwrite_errno;
		inj.armed = true;
		ns_status_code_t st = write_sample(path, err, sizeof(err));
		inj_reset();
		ck_assert_msg(st == cases[c].st && strstr(err, cases[c].words),
			      "case %zu: status %d '%s'", c, st, err);
		if (st == NS_STATUS_OK) {
			snapshot_t *s = NULL;
			ck_assert_int_eq(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)), NS_STATUS_OK);
			snapshot_free(s);
			unlink(path);
		} else {
			ck_assert_ptr_nonnull(strstr(err, path));
		}
		ck_assert_msg(dir_entries(dir, NULL, 0) == 0, "case %zu left a file", c);
	}
	remove_dir(dir);
}
END_TEST

/* Every allocation of the writer and the reader (jansson's included) fails in
 * turn: a clean NOMEM or INVALID-free status, no file, no leak (ASan build). */
START_TEST(test_allocation_failures)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/mem.snap", dir);
	sample_init(); /* before arming: the sample's own buffers must not fail */
	json_set_alloc_funcs(json_alloc, free);
	long n;
	for (n = 1;; n++) {
		inj_reset();
		inj.fail_alloc_at = n;
		inj.armed = true;
		err[0] = '\0';
		ns_status_code_t st = write_sample(path, err, sizeof(err));
		long seen = inj.allocs;
		inj_reset();
		if (seen < n) {
			ck_assert_msg(st == NS_STATUS_OK, "%s", err);
			break;
		}
		/* jansson reports its own failures as invalid input at times */
		ck_assert_msg(st == NS_STATUS_RESOURCE_EXHAUSTED || st == NS_STATUS_INVALID_ARGUMENT,
			      "allocation %ld: status %d '%s'", n, st, err);
		ck_assert_msg(err[0] && strstr(err, path), "allocation %ld: '%s'", n, err);
		ck_assert_msg(dir_entries(dir, NULL, 0) == 0, "allocation %ld left a file", n);
	}
	ck_assert_int_gt(n, 10);
	for (n = 1;; n++) {
		snapshot_t *s = (snapshot_t *)0x1;
		inj_reset();
		inj.fail_alloc_at = n;
		inj.armed = true;
		err[0] = '\0';
		ns_status_code_t st = ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err));
		long seen = inj.allocs;
		inj_reset();
		if (seen < n) {
			ck_assert_msg(st == NS_STATUS_OK, "%s", err);
			check_equal_to_sample(s);
			snapshot_free(s);
			break;
		}
		if (st == NS_STATUS_OK) {
			/* jansson's parser, out of memory for a string, may keep going
			 * with that string empty instead of failing: say so if it was
			 * anything else */
			ck_assert_msg(!s->meta.error_json || strcmp(s->meta.error_json, sample_error) != 0 ||
				      strcmp(s->meta.kind, "error") != 0,
				      "allocation %ld failed unnoticed", n);
			snapshot_free(s);
			continue;
		}
		/* a JSON parse that ran out of memory reads as malformed metadata */
		ck_assert_msg(st == NS_STATUS_RESOURCE_EXHAUSTED || st == NS_STATUS_INVALID_ARGUMENT,
			      "allocation %ld: status %d '%s'", n, st, err);
		ck_assert_ptr_null(s);
		ck_assert_msg(err[0] && strstr(err, path), "allocation %ld: '%s'", n, err);
	}
	ck_assert_int_gt(n, 10);
	json_set_alloc_funcs(malloc, free);
	remove_dir(dir);
}
END_TEST

/* Short writes and EINTR are retried; the file is still exact. */
START_TEST(test_short_writes_and_eintr)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/short.snap", dir);
	inj_reset();
	inj.short_writes = true;
	inj.eintr = true;
	inj.armed = true;
	ns_status_code_t st = write_sample(path, err, sizeof(err));
	long calls = inj.writes;
	inj_reset();
	ck_assert_msg(st == NS_STATUS_OK, "%s", err);
	ck_assert_int_gt(calls, 1000);
	snapshot_t *s = NULL;
	ck_assert_msg(ns_status_consume_message(snapshot_read(path, &s), err, sizeof(err)) == NS_STATUS_OK, "%s", err);
	check_equal_to_sample(s);
	snapshot_free(s);
	remove_dir(dir);
}
END_TEST

/* A real full file system: a 256 KiB tmpfs (needs CAP_SYS_ADMIN; skipped with a
 * message in a container that refuses the mount). */
START_TEST(test_full_tmpfs)
{
	char dir[256], path[300], err[512];
	make_dir(dir, sizeof(dir));
	if (mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700") != 0) {
		fprintf(stderr, "test_full_tmpfs: SKIPPED: cannot mount a tmpfs on %s (%s); the "
			"injected-failure tests cover disk full\n", dir, strerror(errno));
		rmdir(dir);
		return;
	}
	/* 1 MiB of tensor data does not fit in 256 KiB */
	snapshot_tensor_t t;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "big");
	t.dtype = ISA_DT_F32;
	t.rank = 1;
	t.shape[0] = 256 * 1024;
	t.size = 1 << 20;
	t.alias_input = -1;
	void *big = calloc(1, t.size);
	t.data = big;
	snapshot_meta_t m = sample_meta();
	snprintf(path, sizeof(path), "%s/full.snap", dir);
	ns_status_code_t st = ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err, sizeof(err));
	int e = errno;
	int left = dir_entries(dir, NULL, 0);
	/* and the file system is usable afterwards: a small one fits */
	t.shape[0] = 1024;
	t.size = 4096;
	ns_status_code_t st2 = ns_status_consume_message(snapshot_write(path, &m, NULL, 0, &t, 1), err + 256,
							 sizeof(err) - 256);
	struct stat sb;
	int have = stat(path, &sb);
	umount2(dir, MNT_DETACH);
	rmdir(dir);
	free(big);
	ck_assert_msg(st == NS_STATUS_RESOURCE_EXHAUSTED, "status %d: %s", st, err);
	ck_assert_int_eq(e, ENOSPC);
	ck_assert_msg(strstr(err, path) && strstr(err, "No space left"), "'%s'", err);
	ck_assert_int_eq(left, 0);
	ck_assert_msg(st2 == NS_STATUS_OK, "%s", err + 256);
	ck_assert_int_eq(have, 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0600);
}
END_TEST

static Suite *snapshot_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("format");
	tcase_add_test(tc, test_round_trip_every_dtype);
	tcase_add_loop_test(tc, test_round_trip_rank0_and_empty, 0, ISA_DT_COUNT - 1);
	tcase_add_test(tc, test_round_trip_u64_beyond_int64);
	tcase_add_test(tc, test_write_replaces_existing_file);
	tcase_add_test(tc, test_file_mode_is_0600);
	tcase_add_test(tc, test_write_rejects_bad_arguments);
	tcase_add_test(tc, test_every_flipped_byte_is_detected);
	tcase_add_test(tc, test_every_truncation_is_detected);
	tcase_add_test(tc, test_corruption_of_each_section);
	tcase_add_test(tc, test_version_and_flags);
	tcase_add_test(tc, test_bad_metadata_is_refused);
	tcase_add_test(tc, test_bad_sections_are_refused);
	tcase_add_test(tc, test_read_errors_name_the_path);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	TCase *tw = tcase_create("atomic");
	tcase_add_test(tw, test_failure_leaves_no_file);
	tcase_add_test(tw, test_injected_write_failures);
	tcase_add_test(tw, test_injected_fsync_fallocate_rename_failures);
	tcase_add_test(tw, test_short_writes_and_eintr);
	tcase_add_test(tw, test_allocation_failures);
	tcase_add_test(tw, test_full_tmpfs);
	tcase_set_timeout(tw, 120);
	suite_add_tcase(s, tw);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(snapshot_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
