/* Developer tool of the back-end tests: compiles and runs every HLO file given on the command line, printing status, instruction count and scratch size. */
#include <stdio.h>
#include <stdlib.h>

#include "hlo/hlo_parser.h"
#include "lower/lower.h"
#include "neuronsim/neff.h"
#include <string.h>
#include "lower/lower_run.h"
#include "hlo/verify.h"
#ifdef NCC_WITH_PASSES
#include "passes/passes.h"
#endif

int main(int argc, char **argv)
{
	int opt = getenv("NCC_OPT") ? atoi(getenv("NCC_OPT")) : 0;
	int bad = 0;
	for (int i = 1; i < argc; i++) {
		ncc_module_t *m = NULL;
		ncc_error_t err = { 0 };
		if (ncc_parse_hlo_file(argv[i], &m, &err) != NCC_OK) {
			printf("%s: PARSE %s\n", argv[i], err.msg);
			bad++;
			continue;
		}
#ifdef NCC_WITH_PASSES
		if (opt > 0) {
			ncc_compile_options_t po;
			ncc_compile_options_init(&po);
			po.opt_level = opt;
			if (ncc_run_passes(m, &po, &err) != NCC_OK) {
				printf("%s: PASSES %s\n", argv[i], err.msg);
				bad++;
				ncc_module_free(m);
				continue;
			}
		}
#endif
		if (getenv("NCC_COMPILE_ONLY")) {
			/* compile and validate only: for modules too big to run here */
			ncc_compile_options_t o;
			ncc_compile_options_init(&o);
			o.opt_level = opt;
			void *neff = NULL;
			size_t size = 0;
			if (ncc_lower_module(m, &o, &neff, &size, &err) != NCC_OK) {
				printf("%s: FAIL %s\n", argv[i], err.msg);
				bad++;
			} else {
				neff_view_t v;
				char msg[256];
				int ok = ns_status_consume_message(neff_parse(neff, size, &v),
								   msg, sizeof(msg)) == NS_STATUS_OK;
				uint64_t n = 0;
				for (int e = 0; ok && e < ISA_ENGINE_COUNT; e++)
					n += v.code_count[0][e];
				printf("%s: %s %zu bytes, %llu insns, scratch %llu, consts %llu %s\n", argv[i],
				       ok ? "COMPILED" : "BADNEFF", size, (unsigned long long)n,
				       ok ? (unsigned long long)v.meta->scratch_size : 0ull,
				       ok ? (unsigned long long)v.consts_size : 0ull, ok ? "" : msg);
				bad += !ok;
			}
			free(neff);
			ncc_module_free(m);
			continue;
		}
		ncc_run_t r;
		int rc = ncc_run_module(m, NULL, opt, NULL, 0, 1, &r);
		if (rc)
			printf("%s: FAIL %s\n", argv[i], r.msg);
		else
			printf("%s: OK %u in %u out, %llu insns, scratch %llu\n", argv[i], r.n_in, r.n_out,
			       (unsigned long long)r.insns, (unsigned long long)r.scratch);
		bad += rc != 0;
		ncc_run_free(&r);
		ncc_module_free(m);
	}
	return bad ? 1 : 0;
}
