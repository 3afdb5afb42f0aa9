/* The benchmarks' corpus: every *.hlo file of a directory, sorted by name, and compiling one as a benchmark wants it (no cache, no environment). */
#ifndef NEURONSIM_BENCH_CORPUS_H
#define NEURONSIM_BENCH_CORPUS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncc/ncc.h"

static inline int bench_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names (malloc'd, like the array) of dir's *.hlo files; -1 when
 * dir cannot be opened. */
static inline int bench_list_corpus(const char *dir, char ***out, int *out_n)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char **v = NULL;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0)
			continue;
		char **nv = realloc(v, (size_t)(n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_str);
	*out = v;
	*out_n = n;
	return 0;
}

/* Compiles the HLO file at path with o (ncc_driver_options_init'd, with the
 * caller's additions, such as a dump_dir) set to use neither the compile
 * cache nor the environment (XLA_FLAGS and the like), so that every run
 * measures the same NEFF. 0 with *res to release with
 * ncc_compile_result_release(), or -1 after printing "prog: cannot compile
 * path: why". */
static inline int bench_compile_file(const char *prog, const char *path, ncc_driver_options_t *o,
				     ncc_compile_result_t *res)
{
	o->no_cache = true;
	o->use_env = false;
	memset(res, 0, sizeof(*res));
	ncc_error_t err;
	memset(&err, 0, sizeof(err));
	if (ncc_compile_file(path, o, res, &err) != NCC_OK) {
		fprintf(stderr, "%s: cannot compile %s: %s\n", prog, path, err.msg);
		return -1;
	}
	return 0;
}

#endif
