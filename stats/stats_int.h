/* SPDX-License-Identifier: MIT */
/* Private to bkm::stats: the rank-sum machinery shared by the two-sided test (stats.c) and the
 * one-sided test of the sequential confirmation (seq.c). */
#ifndef BKM_STATS_INT_H
#define BKM_STATS_INT_H

#include <stddef.h>

/* The mid-ranks of the values of a (na) and b (nb) together, in sorted order, doubled so that
 * they are integers: *rank2 (N = na + nb of them; free), *w2 the doubled rank sum of a, *u = U of
 * a (pairs with a > b, ties 1/2), *tie_term the sum of t^3 - t over runs of t equal values, *ties
 * whether there is one. Values must be finite. @return 0, or BKM_ENOMEM. */
int bkm__mwu_ranks(const double *a, size_t na, const double *b, size_t nb, long **rank2, long *w2, double *u,
                   double *tie_term, int *ties);

/* The permutation distribution of the doubled mid-rank sum of @p na of the @p N values whose
 * doubled ranks are @p rank2, all C(N, na) subsets equally likely (conditional on the ties), by
 * dynamic programming over the values: counts[s], s = 0..*S (free); sums of positive terms, exact
 * in doubles while C(N, na) < 2^53 (N <= 50), accurate to rounding beyond. NULL when out of memory. */
double *bkm__mwu_rank_sum_counts(const long *rank2, size_t N, size_t na, long *S);

#endif
