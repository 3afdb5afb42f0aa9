/* The compiler tests' parse-and-verify of HLO text under Check, one copy for every test file that wants it. Public headers only: test_module_query, built with the public include path alone, uses it too. */
#ifndef NCC_CHECK_PARSE_H
#define NCC_CHECK_PARSE_H

#include <check.h>
#include <string.h>

#include "ncc/ncc.h"

/* text parsed (named "<test>" in messages) and verified; a parse or verify error
 * fails the test with its message. The module is the caller's to free. */
static inline ncc_module_t *parse(const char *text)
{
	ncc_module_t *m = NULL;
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	ncc_status_t st = ncc_parse_hlo(text, strlen(text), "<test>", &m, &err);
	ck_assert_msg(st == NCC_OK, "parse: %s", err.msg);
	st = ncc_verify(m, &err);
	ck_assert_msg(st == NCC_OK, "verify: %s", err.msg);
	return m;
}

#endif /* NCC_CHECK_PARSE_H */
