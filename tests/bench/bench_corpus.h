/* The benchmarks' corpus listing: every *.hlo file of a directory, sorted by name. */
#ifndef NEURONSIM_BENCH_CORPUS_H
#define NEURONSIM_BENCH_CORPUS_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

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

#endif
