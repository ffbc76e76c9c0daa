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


/* ---- Sequential confirmation: replicate until the evidence decides ---------------------- */

/* A group-sequential design over one value per process (docs/measurement.md, "The sequential
 * design"). After the first block of processes per side, and after every further block, each
 * open candidate is looked at: claimed when its one-sided exact Mann-Whitney p (candidate
 * faster) is at most the nominal level of that look and its Hodges-Lehmann ratio is at least
 * min_ratio; found "not better" (futility) when the upper end of its repeated confidence interval
 * is below min_ratio; otherwise measured again, up to max processes per side, where what is still
 * open is "undecided at the budget". An open candidate whose repeated interval lies wholly below
 * that of a claimed one is measured no more (it cannot be the best; it stays undecided). The
 * nominal levels come from an alpha-spending function
 * (Lan and DeMets 1983) over the information fraction t = I / I_max, I = n_cand n_base /
 * (n_cand + n_base), computed look by look by the recursive numerical integration of Armitage,
 * McPherson and Rowe for the canonical joint distribution (Jennison and Turnbull 2000, ch. 7 and
 * 19); across candidates Holm's step-down for group-sequential tests (Maurer and Bretz 2013): a
 * candidate is tested at the boundaries of level alpha / (m - r), r the candidates claimed so
 * far, m those tested at the first look. So the chance of any false claim, over all looks and
 * candidates, stays below alpha; stopping for futility is non-binding and does not change that.
 * The repeated confidence interval of a candidate (Jennison and Turnbull 2000, ch. 9) uses the
 * nominal level of its Bonferroni share alpha / m at each look on each side: it covers the true
 * ratio at every look at once with probability at least 1 - 2 alpha / m. */

/** Most processes per side of a sequential confirmation (`--replicates-max`) by default:
 *  4 blocks of BKM_TUNE_REPLICATES_DEFAULT (docs/measurement.md, "The sequential design"). */
#define BKM_TUNE_REPLICATES_MAX_DEFAULT 24

/** How the error rate alpha is spent over the information fraction t in [0, 1]. */
typedef enum bkm_tune_spending {
    BKM_TUNE_SPENDING_OBF = 0,   /**< Lan-DeMets O'Brien-Fleming type: 2 - 2 Phi(z_{alpha/2} / sqrt(t)) */
    BKM_TUNE_SPENDING_POCOCK,    /**< Lan-DeMets Pocock type: alpha ln(1 + (e - 1) t) */
} bkm_tune_spending_t;
/** "lan-demets-obrien-fleming" or "lan-demets-pocock". */
const char *bkm_tune_spending_name(bkm_tune_spending_t f);
/** The error rate spent by information fraction @p t (0 at t <= 0, alpha at t >= 1). */
double bkm_tune_spending_alpha(bkm_tune_spending_t f, double alpha, double t);

/** One-sided group-sequential boundaries z[0..looks-1] on the standardised statistic for the
 *  information fractions t[0..looks-1] (increasing, in (0, 1]; the last look spends what is
 *  left of alpha whatever its t), and their nominal levels P(Z >= z) (may be NULL): crossing
 *  any of them has probability alpha under the null. Infinite z (nominal 0) where nothing is
 *  spent. @return BKM_OK; BKM_EINVAL for alpha outside (0, 0.5], t not increasing in (0, 1];
 *  BKM_ENOMEM. */
int bkm_tune_seq_bounds(bkm_tune_spending_t f, double alpha, const double *t, size_t looks, double *z,
                        double *nominal, bkm_err_t *err);

/** The design of a sequential confirmation. */
typedef struct bkm_tune_seq_rule {
    double alpha;              /**< family-wise rate of false claims, over looks and candidates; 0.01 */
    double min_ratio;          /**< smallest win claimed (default / candidate); 1.02 */
    size_t max;                /**< most processes per side (I_max); BKM_TUNE_REPLICATES_MAX_DEFAULT */
    int fixed_cand;            /**< 0: both sides grow to max. 1: each candidate is a recorded
                                    reference whose values at its first look are all it has (I_max
                                    of that count against max); only the base grows */
    bkm_tune_spending_t spending;  /**< BKM_TUNE_SPENDING_OBF */
} bkm_tune_seq_rule_t;
void bkm_tune_seq_rule_defaults(bkm_tune_seq_rule_t *rule);

/** What was decided about one candidate. */
typedef enum bkm_tune_decision {
    BKM_TUNE_UNDECIDED = 0,    /**< still open; once closed: undecided at the budget */
    BKM_TUNE_CLAIMED,          /**< faster than the default beyond noise, by at least min_ratio */
    BKM_TUNE_NOT_BETTER,       /**< the repeated interval excludes a win of min_ratio */
    BKM_TUNE_FAILED,           /**< a process of it failed: not tested */
} bkm_tune_decision_t;
/** "undecided", "claimed", "not-better", "failed". */
const char *bkm_tune_decision_name(bkm_tune_decision_t d);

/** One candidate of a sequential confirmation, as of its last look. */
typedef struct bkm_tune_seq_cand {
    bkm_tune_decision_t decision;
    int closed;                /**< 1: decided, failed, at the budget, or beaten: measure it no more */
    size_t beaten_by;          /**< 0; else (undecided) the 1-based candidate, claimed, whose repeated
                                    interval lies wholly above this one's: it cannot be the best */
    size_t looks;              /**< looks it took part in */
    size_t n_cand, n_base;     /**< processes at its last look */
    double t;                  /**< information fraction at its last look */
    double u, p;               /**< Mann-Whitney U = #(cand > base) + ties/2 and the one-sided p
                                    (candidate faster) at its last look */
    int p_exact;               /**< p from the exact null distribution */
    double nominal;            /**< the level p was compared with (its Holm share's boundary) */
    double nominal_bonferroni; /**< its level at alpha / m (the repeated interval's) */
    double cand_median, base_median;
    double ratio;              /**< Hodges-Lehmann estimate of default / candidate (> 1 faster) */
    double ratio_lo, ratio_hi, ratio_coverage; /**< fixed-size 95% exact rank (Moses) interval at
                                    the last look: does not account for the looks */
    double rci_lo, rci_hi;     /**< repeated confidence interval: simultaneous over all looks; 0 and
                                    +inf while the sizes allow no bounded interval of its level */
    char reason[224];          /**< what was decided and why, with the figures */
} bkm_tune_seq_cand_t;

/** A sequential confirmation in progress: create, look after every block, read cand[]. */
typedef struct bkm_tune_seq bkm_tune_seq_t;

/** Start a confirmation of @p k candidates (rule NULL = defaults). @return BKM_OK; BKM_EINVAL for
 *  a rule out of range (alpha outside (0, 0.5], min_ratio < 1 or not finite, max 0, k 0 or above
 *  64); BKM_ENOMEM. */
int bkm_tune_seq_create(bkm_tune_seq_t **out, const bkm_tune_seq_rule_t *rule, size_t k, bkm_err_t *err);
void bkm_tune_seq_free(bkm_tune_seq_t *s);
/** Forget the looks, values and decisions (a new confirmation of the same design); the boundaries
 *  computed so far are kept, since they depend only on the information fractions. */
void bkm_tune_seq_reset(bkm_tune_seq_t *s);

/** Look at the values so far: @p base holds the default's @p nb per-process values, cand[i] /
 *  nc[i] candidate i's (nc[i] = 0: a process of it failed; it is closed as failed; a candidate
 *  without values at the first look is not counted among those tested). Closed
 *  candidates are skipped (their values may be NULL). A candidate whose information did not grow
 *  since its last look is not looked at again (unless @p final). With @p final, or where a
 *  candidate reaches max processes per side, what is left of alpha is spent at this look and
 *  what stays undecided is closed. Smaller values are faster.
 *  @return BKM_OK; BKM_EINVAL for a non-finite or non-positive value, an empty default, more
 *  values than max; BKM_ENOMEM. */
int bkm_tune_seq_look(bkm_tune_seq_t *s, const double *base, size_t nb, const double *const *cand,
                      const size_t *nc, int final, bkm_err_t *err);
/** bkm_tune_seq_look with a base of each candidate's own: base[i] / nb[i] are what candidate i is
 *  compared with (a candidate with nb[i] = 0 is closed as failed), e.g. one workload's values of
 *  this build against its reference's in the regression gate. */
int bkm_tune_seq_look_each(bkm_tune_seq_t *s, const double *const *base, const size_t *nb,
                           const double *const *cand, const size_t *nc, int final, bkm_err_t *err);
/** Candidates not closed yet (those still to measure). */
size_t bkm_tune_seq_open(const bkm_tune_seq_t *s);
/** Looks taken so far. */
size_t bkm_tune_seq_looks(const bkm_tune_seq_t *s);
/** Candidate @p i (i < k) as of its last look. */
const bkm_tune_seq_cand_t *bkm_tune_seq_cand(const bkm_tune_seq_t *s, size_t i);
/** Candidates tested at the first look (Holm's m); 0 before it. */
size_t bkm_tune_seq_tested(const bkm_tune_seq_t *s);
/** The design as created (defaults filled in). */
const bkm_tune_seq_rule_t *bkm_tune_seq_rule(const bkm_tune_seq_t *s);

#ifdef __cplusplus
}
#endif
#endif /* BKM_STATS_H */
