/* Sorting samples and reading a quantile off them: the qsort comparator of
 * doubles every layer sorts with, and the nearest-rank quantile the tools and
 * benchmarks report (medians of step and execution times). */
#ifndef NEURONSIM_QUANTILE_H
#define NEURONSIM_QUANTILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* qsort comparator: ascending doubles (NaN-free input). */
int ns_cmp_double(const void *a, const void *b);

/* Sorts v[0..n) ascending in place and returns the value at quantile q in
 * [0, 1]: index round(q * (n - 1)) of the sorted samples. 0 when n is 0. */
double ns_quantile(double *v, size_t n, double q);

#ifdef __cplusplus
}
#endif

#endif /* NEURONSIM_QUANTILE_H */
