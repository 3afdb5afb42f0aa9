/* libFuzzer target for the HloModuleProto decoder: any bytes are refused with a
 * located "hlo proto:" message or decoded into a module that verifies or not, prints,
 * and re-parses from that text to the same text. Never a crash, a leak or an abort
 * outside these checks. */
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
	/* big inputs only slow the fuzzer down; the decoder's own limit is tested elsewhere */
	if (size > (1u << 20))
		return 0;
	ncc_module_t *m = NULL;
	ncc_error_t err;
	ncc_status_t st = ncc_parse_hlo_proto(data, size, "fuzz.pb", &m, &err);
	if (st != NCC_OK) {
		/* every failure carries a NUL-terminated message with the field path */
		if (m || strncmp(err.msg, "fuzz.pb: hlo proto: ", 20) != 0) {
			fprintf(stderr, "bad failure: status %d, message '%s'\n", st, err.msg);
			abort();
		}
		return 0;
	}
	(void)ncc_verify(m, &err);
	/* what the decoder builds must print as text that parses back and prints the same
	 * (ncc_compile_hlo_proto relies on it) */
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
