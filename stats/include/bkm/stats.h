/* SPDX-License-Identifier: MIT */
/** @file bkm/stats.h
 * Statistics over measured values: summaries with the order-statistic interval of the median,
 * outliers, Mann-Whitney, Holm, and the claim rule (one value per process, drift-cancelling
 * order, correction for the candidates tested). Pure functions: they never print, never read
 * the environment, and allocate only when a scratch pointer is NULL.
 */
#ifndef BKM_STATS_H
#define BKM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pure functions over timing samples (milliseconds or any unit; all outputs in the same unit).
 * They never allocate unless a scratch pointer is NULL, never print, and may be called from any
 * thread (not inside the timed region: they sort). */

/** Default threshold of the modified z-score outlier rule (hyperfine): |x - median| / MAD_raw
 *  above 14.826 (= 10 robust sigma, since sigma ~ 1.4826 MAD_raw). */
#define BKM_TUNE_OUTLIER_Z 14.826

/** Summary of one set of samples. */
typedef struct bkm_tune_stats {
    size_t n;
    double min, max, mean, median;
    double stddev;            /**< sample standard deviation (divisor n - 1); 0 when n = 1 */
    double cv;                /**< stddev / mean; 0 when mean = 0 */
    double mad;               /**< RAW median absolute deviation, median(|x - median|) */
    double mad_sigma;         /**< 1.4826 * mad: estimates sigma for normal data */
    double ci_lo, ci_hi;      /**< 95% CI of the median: order statistics x(lo_rank), x(hi_rank) */
    size_t ci_lo_rank, ci_hi_rank; /**< 1-based ranks (n <= 8: 1 and n, i.e. [min, max]) */
    double ci_coverage;       /**< exact coverage of that interval (>= 0.95 once n >= 6) */
} bkm_tune_stats_t;

/* The median of a sample is bkm_median (bkm/common.h). */

/** Ranks (1-based) of the distribution-free confidence interval [x(lo), x(hi)] of the median at
 *  level @p conf (0.95): the largest lo with P(Binomial(n, 1/2) <= lo - 1) <= (1 - conf) / 2,
 *  hi = n + 1 - lo, computed from the binomial distribution. n = 10 -> [2, 9], 15 -> [4, 12],
 *  20 -> [6, 15], 30 -> [10, 21], 50 -> [18, 33]; when no interval reaches @p conf (n <= 5 at
 *  95%) it is [1, n]. @p coverage (may be NULL) gets 1 - 2 P(B <= lo - 1).
 *  @return BKM_OK; BKM_EINVAL when n = 0 or conf is not in (0, 1). */
int bkm_tune_stats_median_ci_ranks(size_t n, double conf, size_t *lo, size_t *hi, double *coverage,
                                   bkm_err_t *err);

/** Summarise @p x[0..n-1] (not modified). @p scratch: n doubles, or NULL to allocate.
 *  @return BKM_OK; BKM_EINVAL when n = 0 or a sample is not finite (names its index);
 *          BKM_ENOMEM. */
int bkm_tune_stats_compute(const double *x, size_t n, double *scratch, bkm_tune_stats_t *out,
                           bkm_err_t *err);

/** Flag outliers by the modified z-score rule: flags[i] = 1 when |x[i] - median| > z * MAD_raw
 *  (z <= 0: BKM_TUNE_OUTLIER_Z). When MAD_raw is 0 (more than half the samples equal) the scale
 *  is 0.8453 * mean absolute deviation (the usual fallback: 1.2533 MeanAD estimates sigma);
 *  when that is 0 too, nothing is an outlier. @p st is the summary of @p x.
 *  @return the number of outliers. */
size_t bkm_tune_stats_outliers(const double *x, size_t n, const bkm_tune_stats_t *st, double z,
                               unsigned char *flags);

/** Two-sided Mann-Whitney U test of samples a and b. */
typedef struct bkm_tune_mwu {
    double u;     /**< U of sample a: pairs with a > b, ties counting 1/2 */
    double z;     /**< normal score (0 for the exact test) */
    double p;     /**< two-sided p-value */
    int exact;    /**< 1: exact permutation distribution of the mid-rank sum, conditional on
                       the ties (na + nb <= 50); 0: normal approximation with tie correction
                       and continuity correction */
} bkm_tune_mwu_t;
/** @return BKM_OK; BKM_EINVAL when a side is empty or holds a non-finite value; BKM_ENOMEM. */
int bkm_tune_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                                bkm_tune_mwu_t *out, bkm_err_t *err);

/** Holm's step-down adjustment of the @p m p-values @p p into @p adj (same order): the i-th
 *  smallest is multiplied by m - i (i from 0), capped at 1 and made monotone, so that rejecting
 *  every adj < alpha keeps the family-wise error rate below alpha. @return BKM_OK; BKM_ENOMEM. */
int bkm_tune_stats_holm(const double *p, size_t m, double *adj, bkm_err_t *err);

/* ---- Claims: the process is the unit of evidence --------------------------------------- */

/* Samples inside one worker process are not independent (page placement, frequency, neighbours
 * vary per process), so a claim "X beats the default" is decided on ONE value per process (the
 * median of its samples): R processes per side, measured in an order that cancels drift, and a
 * correction for the number of candidates tested (docs/measurement.md, "Claims"). */

/** Most re-runs of one disturbed confirmation process (--rerun-disturbed). */
#define BKM_TUNE_RERUN_DISTURBED_MAX 10
/** Processes per side in the confirmation round (`tune sweep --replicates`). With 6 per side
 *  the exact two-sided Mann-Whitney p can reach 2/C(12,6) = 0.0022 (0.0087 with two swapped
 *  pairs), below the default alpha of 0.01. */
#define BKM_TUNE_REPLICATES_DEFAULT 6
/** Most candidates a confirmation round re-measures against the default (--confirm-top). */
#define BKM_TUNE_CONFIRM_TOP_MAX 7
/** Most fresh processes per side in a confirmation round (--replicates). */
#define BKM_TUNE_REPLICATES_MAX 1000

/** Order of a confirmation round of @p arms arms (arm 0 is the default) over @p rounds rounds:
 *  @p order gets arms x rounds arm indices, the measurement order. Rounds come in pairs: a
 *  seeded shuffle of the arms, then the same shuffle reversed (ABBA generalised to several
 *  arms: in every pair of rounds each arm's positions sum to the same value, so a linear drift
 *  in time is cancelled exactly, and the shuffle keeps a periodic disturbance from lining up
 *  with one arm); an odd last round is one more shuffle. Deterministic for a given @p seed.
 *  @return BKM_OK; BKM_EINVAL when arms or rounds is 0. */
int bkm_tune_claim_order(size_t arms, size_t rounds, uint64_t seed, size_t *order, bkm_err_t *err);
/** Name of the order of bkm_tune_claim_order, stored with every claim. */
#define BKM_TUNE_CLAIM_ORDER_NAME "abba-shuffled"

/** When a candidate is claimed faster than the default. */
typedef struct bkm_tune_claim_rule {
    double min_ratio;   /**< the ratio estimate (default / candidate) must be >= this; 1.02.
                             Not a noise guard (the process-level test is): the smallest win
                             worth a setting. */
    double alpha;       /**< family-wise error rate: Holm-adjusted Mann-Whitney p < alpha; 0.01 */
    size_t min_n;       /**< processes per side, else never claimed; BKM_TUNE_REPLICATES_DEFAULT */
    double floor;       /**< median of process medians must differ by more (timer floor); 0 */
} bkm_tune_claim_rule_t;
void bkm_tune_claim_rule_defaults(bkm_tune_claim_rule_t *rule);

/** The test of one candidate against the default, on per-process values. */
typedef struct bkm_tune_claim_test {
    int tested;              /**< 0: the candidate had no process values (failed): not tested */
    size_t n_cand, n_base;   /**< processes */
    double cand_median, base_median; /**< median of the per-process values of each side */
    double ratio;            /**< Hodges-Lehmann estimate of default / candidate: the median of
                                  the n_base x n_cand ratios of process values; > 1: faster */
    double ratio_lo, ratio_hi; /**< exact rank interval of that ratio (Moses: order statistics
                                    k and n_base n_cand + 1 - k of the pairwise ratios, k from
                                    the exact null distribution of U); 95% */
    double ratio_coverage;   /**< exact coverage of [ratio_lo, ratio_hi] (>= 0.95 when the
                                  sizes allow it; less for tiny sizes, then it is [min, max]) */
    bkm_tune_mwu_t mwu;      /**< Mann-Whitney on the process values (p two-sided, unadjusted) */
    double p_holm;           /**< Holm-adjusted p over the candidates tested; NaN if untested */
    int significant;         /**< every condition of the rule holds */
    char reason[192];        /**< the first condition that failed, or "faster" */
} bkm_tune_claim_test_t;

/** Decide, for each of @p k candidates, whether it is faster than the default. @p base holds
 *  the default's per-process values (nb of them, e.g. the median of each process's samples);
 *  cand[i] / nc[i] those of candidate i (nc[i] = 0: not tested). The p-values of the tested
 *  candidates are adjusted together by Holm's step-down method, so that the chance of any
 *  false claim among them stays below rule->alpha. Smaller values are faster.
 *  @p rule NULL = defaults. @p out gets k tests.
 *  @return BKM_OK (see out[i].significant); BKM_EINVAL for a non-finite or non-positive value
 *  (ratios need positive values) or an empty default; BKM_ENOMEM. */
int bkm_tune_claim_decide(const double *base, size_t nb, const double *const *cand, const size_t *nc,
                          size_t k, const bkm_tune_claim_rule_t *rule, bkm_tune_claim_test_t *out,
                          bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_STATS_H */
