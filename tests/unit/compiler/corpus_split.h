/* Shared by the compiler's corpus tests: which corpus modules are "big" (their runs are left to the 'full' suite, `make test-full`) and whether this is a sanitizer build. */
#ifndef NCC_CORPUS_SPLIT_H
#define NCC_CORPUS_SPLIT_H

/*
 * Header-only (static functions), included by the test programs only.
 *
 * Why a split: a few corpus modules carry tensors of hundreds of MB (the 2048 x
 * 30522 logits of bert_single_graph_4, the 4096 x 32000 embedding of llama-tp_1,
 * MobileNetV2's 224x224 activations). Running one of them through the reference
 * interpreter and the simulator takes 10-70 s in a release build and minutes
 * under the sanitizers, and each test program ran each of them at several
 * optimisation levels: most of `make test`'s time went there, while they exercise
 * the same kernels and passes as the small modules, on bigger buffers. So the
 * default run (`meson test`, `make test`) runs the small modules and only parses,
 * verifies, optimises and lowers the big ones; the Check test cases tagged
 * NCC_TEST_TAG_FULL run the big ones, registered in meson's 'full' suite
 * (tests/meson.build). Nothing is skipped: default + full = everything, once.
 *
 * The split is by size, read from the module itself, so a module added to the
 * corpus is classified without editing a list. Sanitizer builds draw the line
 * lower (they run 3-10 times slower and check code paths, which the small
 * modules reach as well): there gpt2_tp_1 (a 147 MB embedding) is big too.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hlo/hlo_parser.h"
#include "hlo/ir.h"

/* Sanitizer builds run the simulator and the interpreter several times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define NCC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define NCC_TEST_SANITIZED 1
#endif
#endif
#ifndef NCC_TEST_SANITIZED
#define NCC_TEST_SANITIZED 0
#endif

/* The Check tag of the test cases that only the 'full' suite runs
 * (CK_INCLUDE_TAGS there, CK_EXCLUDE_TAGS in the default registration). */
#define NCC_TEST_TAG_FULL "full"

/* A module with a tensor of at least this many bytes is big. */
#if NCC_TEST_SANITIZED
#define NCC_TEST_BIG_TENSOR_BYTES ((int64_t)16 << 20)
#else
#define NCC_TEST_BIG_TENSOR_BYTES ((int64_t)256 << 20)
#endif

/* Largest array (or tuple element) of shape s, in bytes. */
static inline int64_t ncc_test_largest_array(const ncc_shape_t *s)
{
	if (s->etype != NCC_TUPLE)
		return ncc_shape_bytes(s);
	int64_t max = 0;
	for (int32_t k = 0; k < s->nelems; k++) {
		int64_t b = ncc_test_largest_array(&s->elems[k]);
		max = b > max ? b : max;
	}
	return max;
}

/* Largest tensor any instruction of any computation of m produces, in bytes. */
static inline int64_t ncc_test_largest_tensor(const ncc_module_t *m)
{
	int64_t max = 0;
	for (int32_t c = 0; c < m->ncomps; c++)
		for (int32_t i = 0; i < m->comps[c]->ninsts; i++) {
			int64_t b = ncc_test_largest_array(&m->comps[c]->insts[i]->shape);
			max = b > max ? b : max;
		}
	return max;
}

/* Whether the corpus file dir/name is big. A file that does not parse counts as
 * small, so the default run gets to report the parse error. */
static inline bool ncc_test_corpus_is_big(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ncc_module_t *m = NULL;
	ncc_error_t err = { 0 };
	if (ncc_parse_hlo_file(path, &m, &err) != NCC_OK)
		return false;
	bool big = ncc_test_largest_tensor(m) >= NCC_TEST_BIG_TENSOR_BYTES;
	ncc_module_free(m);
	return big;
}

/* Splits files[0..n) into the indices of the small ones (small[0..*nsmall)) and
 * of the big ones (big[0..*nbig)), each in the order of files; small and big hold
 * n entries. */
static inline void ncc_test_corpus_split(const char *dir, const char *const *files, int n, int *small,
					 int *nsmall, int *big, int *nbig)
{
	*nsmall = *nbig = 0;
	for (int i = 0; i < n; i++) {
		if (ncc_test_corpus_is_big(dir, files[i]))
			big[(*nbig)++] = i;
		else
			small[(*nsmall)++] = i;
	}
}

#endif /* NCC_CORPUS_SPLIT_H */
