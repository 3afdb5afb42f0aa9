/* Sorted samples and their quantiles (quantile.h). */
#include "neuronsim/quantile.h"

#include <stdlib.h>

int ns_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double ns_quantile(double *v, size_t n, double q)
{
	if (!n)
		return 0.0;
	qsort(v, n, sizeof(*v), ns_cmp_double);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}
