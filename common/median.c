/* SPDX-License-Identifier: MIT */
/* The median of a sample and the order of doubles: one definition for the whole tree. */
#include <math.h>
#include <stdlib.h>

#include "bkm/common.h"

int bkm_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bkm_median(double *v, size_t n)
{
    if (v == NULL || n == 0)
        return NAN;
    qsort(v, n, sizeof *v, bkm_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
