/* libFuzzer target for the HLO parser and verifier: any bytes are refused with a
 * message or parsed into a module that verifies or not, prints, and re-parses to
 * the same text. Never a crash, a leak or an abort outside these checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parser.h"
#include "hlo/ir.h"
#include "hlo/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* big inputs only slow the fuzzer down; the parser's own limit is tested elsewhere */
	if (size > (1u << 20))
		return 0;
	ncc_module_t *m = NULL;
	ncc_error_t err;
	ncc_status_t st = ncc_parse_hlo((const char *)data, size, "fuzz.hlo", &m, &err);
	if (st != NCC_OK) {
		/* every failure carries a located, NUL-terminated message */
		if (m || strlen(err.msg) == 0 || strncmp(err.msg, "fuzz.hlo", 8) != 0)
			abort();
		return 0;
	}
	(void)ncc_verify(m, &err);
	/* the printer's output must parse back and print identically */
	char *t1 = NULL, *t2 = NULL;
	if (ncc_module_to_string(m, &t1) != NCC_OK)
		abort();
	ncc_module_t *m2 = NULL;
	if (ncc_parse_hlo(t1, strlen(t1), "printed.hlo", &m2, &err) != NCC_OK) {
		fprintf(stderr, "re-parse failed: %s\n--- printed:\n%s\n", err.msg, t1);
		abort();
	}
	if (ncc_module_to_string(m2, &t2) != NCC_OK || strcmp(t1, t2) != 0) {
		fprintf(stderr, "printing is not stable:\n--- first:\n%s\n--- second:\n%s\n", t1,
			t2 ? t2 : "(null)");
		abort();
	}
	free(t1);
	free(t2);
	ncc_module_free(m2);
	ncc_module_free(m);
	return 0;
}
