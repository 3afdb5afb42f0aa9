/* Helpers of the PJRT plugin tests: the dlopen'ed API, error checks, and wrappers that build the args structs the way a framework does. */
#ifndef PJRT_TEST_UTIL_H
#define PJRT_TEST_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pjrt/pjrt_c_api.h"

/* The plugin's table (pjrt_test_util.c dlopens PJRT_PLUGIN_PATH once). */
const PJRT_Api *T_api(void);
#define API (T_api())

/* Code of err (0 for NULL) and its message; T_free frees it. */
PJRT_Error_Code T_code(PJRT_Error *err);
const char *T_msg(PJRT_Error *err);
void T_free(PJRT_Error *err);
/* Asserts err is NULL (printing its message otherwise). */
#define T_OK(expr)                                                                            \
	do {                                                                                  \
		PJRT_Error *t_err_ = (expr);                                                  \
		ck_assert_msg(t_err_ == NULL, "%s failed: %s", #expr, t_err_ ? T_msg(t_err_) : ""); \
	} while (0)
/* Asserts err has code and (if substr is not NULL) a message containing substr,
 * then frees it. */
void T_expect(PJRT_Error *err, PJRT_Error_Code code, const char *substr, const char *what);
#define T_FAIL(expr, code, substr) T_expect((expr), (code), (substr), #expr)

PJRT_Client *T_client(void);
void T_client_destroy(PJRT_Client *c);
size_t T_devices(PJRT_Client *c, PJRT_Device *const **out);

PJRT_Buffer *T_buffer(PJRT_Client *c, PJRT_Device *dev, PJRT_Buffer_Type type, const int64_t *dims, size_t rank,
		      const void *data, const int64_t *byte_strides);
/* Copies buffer b to dst (dense row-major); returns its size in bytes. */
size_t T_to_host(PJRT_Buffer *b, void *dst, size_t size);
void T_buffer_destroy(PJRT_Buffer *b);
bool T_is_deleted(PJRT_Buffer *b);

/* A serialized CompileOptionsProto with these build options (partitions 0:
 * left out). Returns its length; buf has room for 64 bytes. */
size_t T_compile_options(uint8_t *buf, int64_t replicas, int64_t partitions);
/* Compiles code in format with replicas; *err receives the error (NULL on
 * success). */
PJRT_LoadedExecutable *T_compile(PJRT_Client *c, const char *format, const void *code, size_t size, int replicas,
				 PJRT_Error **err);
PJRT_LoadedExecutable *T_compile_text(PJRT_Client *c, const char *text);
PJRT_Executable *T_executable(PJRT_LoadedExecutable *le);
void T_loaded_destroy(PJRT_LoadedExecutable *le);
void T_executable_destroy(PJRT_Executable *e);
size_t T_num_outputs(PJRT_LoadedExecutable *le);
/* Executes on device dev (NULL: the executable's devices) with nargs
 * arguments; outputs go to outs. non_donatable may be NULL. */
PJRT_Error *T_execute(PJRT_LoadedExecutable *le, PJRT_Device *dev, PJRT_Buffer **args, size_t nargs,
		      PJRT_Buffer **outs, const int64_t *non_donatable, size_t n_non_donatable);

/* Reads a whole file (NULL if it cannot). */
char *T_read_file(const char *path, size_t *out_len);

#endif /* PJRT_TEST_UTIL_H */
