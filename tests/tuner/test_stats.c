/* SPDX-License-Identifier: MIT */
/* Unit tests of the statistics in stats/stats.c against hand-computed values: medians, MAD, the
 * order-statistic CI ranks of docs/measurement.md ("Statistics used"), Mann-Whitney p-values (exact
 * values enumerated over all C(m+n, m) arrangements), outliers, and the claim rule on one value per
 * process (order, Holm correction, exact rank interval of the ratio) with controlled inputs. */
#include <math.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/stats.h"

START_TEST(median_odd_and_even)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
    ck_assert_double_eq(bkm_median(odd, 3), 3.0);
    ck_assert_double_eq(bkm_median(even, 4), 2.5);
    ck_assert(isnan(bkm_median(NULL, 0)));
}
END_TEST

START_TEST(summary_mad_and_spread)
{
    const double x[] = {4, 100, 2, 3, 1};
    double scratch[5];
    bkm_tune_stats_t st;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_stats_compute(x, 5, scratch, &st, &err), BKM_OK);
    ck_assert_double_eq(st.median, 3.0);
    ck_assert_double_eq(st.min, 1.0);
    ck_assert_double_eq(st.max, 100.0);
    ck_assert_double_eq(st.mean, 22.0);
    ck_assert_double_eq_tol(st.stddev, 43.617656975128774, 1e-12); /* sqrt(7610 / 4) */
    ck_assert_double_eq(st.mad, 1.0);                                /* |dev| = 2,1,0,1,97 */
    ck_assert_double_eq_tol(st.mad_sigma, 1.4826, 1e-12);
    ck_assert_double_eq_tol(st.cv, 43.617656975128774 / 22.0, 1e-12);
    /* n = 5: no interval reaches 95%, so [min, max] with coverage 1 - 2/32. */
    ck_assert_uint_eq(st.ci_lo_rank, 1);
    ck_assert_uint_eq(st.ci_hi_rank, 5);
    ck_assert_double_eq_tol(st.ci_coverage, 0.9375, 1e-12);
    ck_assert_double_eq(x[1], 100.0); /* input untouched */
    unsigned char fl[5];
    ck_assert_uint_eq(bkm_tune_stats_outliers(x, 5, &st, 0, fl), 1); /* 97 > 14.826 * 1 */
    ck_assert_int_eq(fl[1], 1);
    ck_assert_int_eq(fl[0] + fl[2] + fl[3] + fl[4], 0);
}
END_TEST

START_TEST(summary_rejects_bad_input)
{
    const double x[] = {1, NAN, 3};
    bkm_tune_stats_t st;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_stats_compute(x, 3, NULL, &st, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sample 1"));
    ck_assert_int_eq(bkm_tune_stats_compute(x, 0, NULL, &st, &err), BKM_EINVAL);
}
END_TEST

START_TEST(outliers_when_mad_is_zero)
{
    const double x[] = {1, 1, 1, 1, 1, 1, 50};
    bkm_tune_stats_t st;
    unsigned char fl[7];
    ck_assert_int_eq(bkm_tune_stats_compute(x, 7, NULL, &st, NULL), BKM_OK);
    ck_assert_double_eq(st.mad, 0.0);
    /* mean |dev| = 49/7 = 7, scale = 7 * 0.8453 = 5.92; 49 > 14.826 * 5.92 = 87.7 is false. */
    ck_assert_uint_eq(bkm_tune_stats_outliers(x, 7, &st, 0, fl), 0);
    ck_assert_uint_eq(bkm_tune_stats_outliers(x, 7, &st, 5.0, fl), 1);
    ck_assert_int_eq(fl[6], 1);
    const double same[] = {2, 2, 2};
    ck_assert_int_eq(bkm_tune_stats_compute(same, 3, NULL, &st, NULL), BKM_OK);
    ck_assert_uint_eq(bkm_tune_stats_outliers(same, 3, &st, 0, NULL), 0);
}
END_TEST

START_TEST(median_ci_ranks_match_table)
{
    /* docs/measurement.md, "Statistics used" */
    static const size_t tab[][3] = {{10, 2, 9},   {15, 4, 12}, {20, 6, 15}, {30, 10, 21},
                                    {50, 18, 33}, {8, 1, 8},   {6, 1, 6}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        size_t lo = 0, hi = 0;
        double cov = 0;
        ck_assert_int_eq(bkm_tune_stats_median_ci_ranks(tab[i][0], 0.95, &lo, &hi, &cov, NULL), BKM_OK);
        ck_assert_msg(lo == tab[i][1] && hi == tab[i][2], "n=%zu: got [%zu,%zu]", tab[i][0], lo, hi);
        ck_assert(cov >= 0.95 && cov <= 1.0);
    }
    size_t lo, hi;
    double cov;
    /* n = 10: coverage 1 - 2 * 11/1024 */
    bkm_tune_stats_median_ci_ranks(10, 0.95, &lo, &hi, &cov, NULL);
    ck_assert_double_eq_tol(cov, 1.0 - 22.0 / 1024.0, 1e-12);
    /* large n does not underflow: the ranks approach n/2 -/+ 1.96 sqrt(n)/2 */
    ck_assert_int_eq(bkm_tune_stats_median_ci_ranks(10000, 0.95, &lo, &hi, &cov, NULL), BKM_OK);
    ck_assert(lo > 4890 && lo < 4910 && hi == 10001 - lo);
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_stats_median_ci_ranks(0, 0.95, &lo, &hi, NULL, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_stats_median_ci_ranks(10, 1.5, &lo, &hi, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1.5"));
}
END_TEST

START_TEST(summary_ci_uses_order_statistics)
{
    const double x[] = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
    bkm_tune_stats_t st;
    ck_assert_int_eq(bkm_tune_stats_compute(x, 10, NULL, &st, NULL), BKM_OK);
    ck_assert_double_eq(st.median, 5.5);
    ck_assert_double_eq(st.ci_lo, 2.0);
    ck_assert_double_eq(st.ci_hi, 9.0);
}
END_TEST

START_TEST(mann_whitney_exact)
{
    const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    const double c[] = {1, 3, 5, 7, 9}, d[] = {2, 4, 6, 8, 10};
    const double e[] = {1.1, 2.5, 3.7, 0.4, 5.2, 6.6}, f[] = {4.1, 7.3, 8.8, 9.0, 5.9, 10.2, 11.5};
    bkm_tune_mwu_t r;
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(a, 5, b, 5, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.exact, 1);
    ck_assert_double_eq(r.u, 0.0);
    ck_assert_double_eq_tol(r.p, 2.0 / 252.0, 1e-12);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(b, 5, a, 5, &r, NULL), BKM_OK);
    ck_assert_double_eq(r.u, 25.0);
    ck_assert_double_eq_tol(r.p, 2.0 / 252.0, 1e-12);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(c, 5, d, 5, &r, NULL), BKM_OK);
    ck_assert_double_eq(r.u, 10.0);
    ck_assert_double_eq_tol(r.p, 0.6904761904761905, 1e-12);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(e, 6, f, 7, &r, NULL), BKM_OK);
    ck_assert_double_eq(r.u, 3.0);
    ck_assert_double_eq_tol(r.p, 0.008158508158508158, 1e-12);
}
END_TEST

START_TEST(mann_whitney_with_ties)
{
    /* exact, conditional on the ties: 63 of the C(13, 6) = 1716 subsets have a mid-rank sum at
     * least as far from its mean (enumerated) */
    const double a[] = {1, 2, 2, 3, 3, 4}, b[] = {2, 3, 4, 5, 5, 6, 7};
    const double s[] = {3, 3, 3}, t[] = {3, 3};
    double big_a[30], big_b[30];
    bkm_tune_mwu_t r;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(a, 6, b, 7, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.exact, 1);
    ck_assert_double_eq(r.u, 6.5);
    ck_assert_double_eq_tol(r.p, 63.0 / 1716.0, 1e-12);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(s, 3, t, 2, &r, NULL), BKM_OK);
    ck_assert_double_eq(r.p, 1.0);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(s, 3, t, 0, &r, &err), BKM_EINVAL);
    /* beyond 50 values: the normal approximation with tie and continuity corrections
     * (a = 0,0,0,1,1,1,...,9; b = a + 2) */
    for (int i = 0; i < 30; i++)
        big_a[i] = i / 3, big_b[i] = i / 3 + 2;
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(big_a, 30, big_b, 30, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.exact, 0);
    ck_assert_double_eq(r.u, 288.0);
    ck_assert_double_eq_tol(r.z, 2.3975644537243643, 1e-12);
    ck_assert_double_eq_tol(r.p, 0.016504477012993086, 1e-12);
}
END_TEST

/* ---- Claims on one value per process -------------------------------------------------- */

/* Reproducible noise for simulated processes: xorshift64*, uniform in [-1, 1). */
static double noise(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

START_TEST(claim_order_cancels_linear_drift)
{
    size_t order[8 * 6];
    for (size_t arms = 2; arms <= 8; arms++)
        for (uint64_t seed = 1; seed <= 40; seed++) {
            long sum[8] = {0};
            ck_assert_int_eq(bkm_tune_claim_order(arms, 6, seed, order, NULL), BKM_OK);
            for (size_t r = 0; r < 6; r++) {
                unsigned seen = 0;
                for (size_t a = 0; a < arms; a++) {
                    size_t arm = order[r * arms + a];
                    ck_assert_uint_lt(arm, arms);
                    seen |= 1u << arm;
                    sum[arm] += (long)(r * arms + a);
                }
                ck_assert_uint_eq(seen, (1u << arms) - 1); /* every round measures every arm once */
            }
            for (size_t a = 1; a < arms; a++) /* every arm sits at the same mean position */
                ck_assert_int_eq(sum[a], sum[0]);
        }
    /* seeded: the same seed gives the same order, and the shuffle does vary between seeds */
    {
        size_t o1[4 * 6], o2[4 * 6];
        int differ = 0;
        bkm_tune_claim_order(4, 6, 7, o1, NULL);
        bkm_tune_claim_order(4, 6, 7, o2, NULL);
        ck_assert_mem_eq(o1, o2, sizeof o1);
        for (uint64_t seed = 8; seed < 20; seed++) {
            bkm_tune_claim_order(4, 6, seed, o2, NULL);
            differ |= memcmp(o1, o2, sizeof o1) != 0;
        }
        ck_assert_int_eq(differ, 1);
    }
    ck_assert_int_eq(bkm_tune_claim_order(0, 6, 1, order, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_claim_order(2, 0, 1, order, NULL), BKM_EINVAL);
}
END_TEST

START_TEST(claim_real_win)
{
    double base[6], cand[6];
    const double *cv[1] = {cand};
    size_t nc[1] = {6};
    bkm_tune_claim_test_t t;
    uint64_t s = 42;
    for (int i = 0; i < 6; i++) {
        base[i] = 10.0 * (1.0 + 0.01 * noise(&s));
        cand[i] = 8.0 * (1.0 + 0.01 * noise(&s));
    }
    ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
    ck_assert_int_eq(t.significant, 1);
    ck_assert_str_eq(t.reason, "faster");
    ck_assert_int_eq(t.mwu.exact, 1);
    ck_assert_double_eq_tol(t.mwu.p, 2.0 / 924.0, 1e-12); /* complete separation of 6 vs 6 */
    ck_assert_double_eq_tol(t.p_holm, t.mwu.p, 1e-15);    /* one candidate: nothing to correct */
    ck_assert(t.ratio > 1.22 && t.ratio < 1.28);
    ck_assert(t.ratio_lo <= t.ratio && t.ratio <= t.ratio_hi && t.ratio_lo > 1.0);
    ck_assert_double_eq_tol(t.ratio_coverage, 1.0 - 2.0 * 19.0 / 924.0, 1e-12); /* P(U <= 5) = 19/924 */
    /* the other way round (the candidate is the slower one): never a claim */
    cv[0] = base;
    ck_assert_int_eq(bkm_tune_claim_decide(cand, 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
    ck_assert_int_eq(t.significant, 0);
    ck_assert_ptr_nonnull(strstr(t.reason, "ratio"));
}
END_TEST

START_TEST(claim_exact_rank_interval)
{
    /* ratios 10..15 / 5..10.5 (36 pairs): sorted log ratios d(6) = log(13 / 10.5) and
     * d(31) = log(14 / 6); the Hodges-Lehmann estimate exp((d(18) + d(19)) / 2) = 5/3
     * (computed by enumeration) */
    const double base[] = {10, 11, 12, 13, 14, 15}, cand[] = {5, 6, 7, 8, 9, 10.5};
    const double *cv[1] = {cand};
    size_t nc[1] = {6};
    bkm_tune_claim_test_t t;
    ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
    ck_assert_double_eq_tol(t.ratio_lo, 13.0 / 10.5, 1e-12);
    ck_assert_double_eq_tol(t.ratio_hi, 14.0 / 6.0, 1e-12);
    ck_assert_double_eq_tol(t.ratio, 5.0 / 3.0, 1e-12);
    ck_assert_double_eq(t.base_median, 12.5);
    ck_assert_double_eq(t.cand_median, 7.5);
    /* U = 1 (10.5 > 10): p = 2 x 2 / 924 */
    ck_assert_double_eq_tol(t.mwu.p, 4.0 / 924.0, 1e-12);
    ck_assert_int_eq(t.significant, 1);
}
END_TEST

START_TEST(claim_null_rarely_claims)
{
    /* 2000 simulated A/A comparisons, 6 processes per side from one distribution with a
     * +-10% spread: two-sided p < 0.01 happens with probability 8/924, half of those in the
     * faster direction, so about 9 claims are expected; more than 20 means the rule is off */
    int claims = 0;
    uint64_t s = 20261201;
    for (int rep = 0; rep < 2000; rep++) {
        double base[6], cand[6];
        const double *cv[1] = {cand};
        size_t nc[1] = {6};
        bkm_tune_claim_test_t t;
        for (int i = 0; i < 6; i++) {
            base[i] = 5.0 * (1.0 + 0.1 * noise(&s));
            cand[i] = 5.0 * (1.0 + 0.1 * noise(&s));
        }
        ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
        claims += t.significant;
    }
    ck_assert_int_le(claims, 20);
    /* identical values: nothing */
    {
        const double same[] = {3, 3, 3, 3, 3, 3};
        const double *cv[1] = {same};
        size_t nc[1] = {6};
        bkm_tune_claim_test_t t;
        ck_assert_int_eq(bkm_tune_claim_decide(same, 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
        ck_assert_int_eq(t.significant, 0);
        ck_assert_double_eq(t.ratio, 1.0);
    }
}
END_TEST

/* Simulated processes whose times fall 2% per position (the machine warms up, a neighbour
 * leaves): values measured later look faster. */
static double drifting(size_t pos, uint64_t *s)
{
    return 10.0 * (1.0 - 0.02 * (double)pos) * (1.0 + 0.002 * noise(s));
}

START_TEST(claim_drift_cancelled_by_order)
{
    size_t order[2 * 6];
    uint64_t s = 99;
    int claims = 0;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        double v[2][6];
        size_t n[2] = {0, 0};
        const double *cv[1] = {v[1]};
        bkm_tune_claim_test_t t;
        ck_assert_int_eq(bkm_tune_claim_order(2, 6, seed, order, NULL), BKM_OK);
        for (size_t p = 0; p < 12; p++)
            v[order[p]][n[order[p]]++] = drifting(p, &s);
        ck_assert_int_eq(bkm_tune_claim_decide(v[0], 6, cv, &n[1], 1, NULL, &t, NULL), BKM_OK);
        claims += t.significant;
    }
    ck_assert_int_eq(claims, 0);
    /* control: the default measured first, then the candidate (the same configuration): the
     * drift alone makes a "win", so the rule without the order would claim */
    {
        double v[2][6];
        const double *cv[1] = {v[1]};
        size_t nc[1] = {6};
        bkm_tune_claim_test_t t;
        for (size_t p = 0; p < 12; p++)
            v[p / 6][p % 6] = drifting(p, &s);
        ck_assert_int_eq(bkm_tune_claim_decide(v[0], 6, cv, nc, 1, NULL, &t, NULL), BKM_OK);
        ck_assert_int_eq(t.significant, 1);
    }
}
END_TEST

START_TEST(claim_holm_several_candidates)
{
    /* three candidates, each with U = 1 against the default: p = 4/924 = 0.0043 < 0.01 each,
     * but Holm multiplies the smallest by 3 (0.013): no claim at all */
    const double base[] = {6, 8, 9, 10, 11, 12};
    const double c1[] = {1, 2, 3, 4, 5, 7}, c2[] = {1.5, 2.5, 3.5, 4.5, 5.5, 7}, c3[] = {2, 3, 4, 5, 5.8, 7};
    const double *cv[3] = {c1, c2, c3};
    size_t nc[3] = {6, 6, 6};
    bkm_tune_claim_test_t t[3];
    ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nc, 3, NULL, t, NULL), BKM_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_double_eq_tol(t[i].mwu.p, 4.0 / 924.0, 1e-12);
        ck_assert_double_eq_tol(t[i].p_holm, 12.0 / 924.0, 1e-12);
        ck_assert_int_eq(t[i].significant, 0);
        ck_assert_ptr_nonnull(strstr(t[i].reason, "Holm"));
    }
    /* alone, the first one is claimed */
    ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nc, 1, NULL, t, NULL), BKM_OK);
    ck_assert_int_eq(t[0].significant, 1);
    /* one real win (complete separation, p = 2/924) among two nulls: Holm keeps it
     * (3 x 0.0022 = 0.0065 < 0.01) and adjusts the others upward, monotonically */
    {
        const double win[] = {1, 1.1, 1.2, 1.3, 1.4, 1.5}, null1[] = {6.5, 8.5, 9.5, 10.5, 11.5, 12.5},
                     null2[] = {5.9, 7.9, 9.1, 9.9, 11.1, 12.1};
        const double *cw[3] = {null1, win, null2};
        ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cw, nc, 3, NULL, t, NULL), BKM_OK);
        ck_assert_int_eq(t[1].significant, 1);
        ck_assert_double_eq_tol(t[1].p_holm, 6.0 / 924.0, 1e-12);
        ck_assert_int_eq(t[0].significant, 0);
        ck_assert_int_eq(t[2].significant, 0);
        ck_assert(t[0].p_holm >= t[1].p_holm && t[2].p_holm >= t[1].p_holm);
    }
    /* a candidate that failed (no values) is not tested and not counted */
    {
        size_t nf[3] = {6, 0, 6};
        ck_assert_int_eq(bkm_tune_claim_decide(base, 6, cv, nf, 3, NULL, t, NULL), BKM_OK);
        ck_assert_int_eq(t[1].tested, 0);
        ck_assert(isnan(t[1].p_holm));
        ck_assert_ptr_nonnull(strstr(t[1].reason, "failed"));
        ck_assert_double_eq_tol(t[0].p_holm, 8.0 / 924.0, 1e-12); /* 2 tested: x 2 */
    }
}
END_TEST

START_TEST(claim_needs_processes_and_sane_values)
{
    const double base[] = {10, 10.1, 10.2, 10.3, 10.4}, cand[] = {5, 5.1, 5.2, 5.3, 5.4};
    const double bad[] = {5, 0, 5, 5, 5}, nan_v[] = {5, NAN, 5, 5, 5};
    const double *cv[1] = {cand};
    size_t nc[1] = {5};
    bkm_tune_claim_test_t t;
    bkm_tune_claim_rule_t rule;
    bkm_err_t err = {0};
    /* 5 processes per side: a 2x win is still not claimed (min_n counts processes) */
    ck_assert_int_eq(bkm_tune_claim_decide(base, 5, cv, nc, 1, NULL, &t, NULL), BKM_OK);
    ck_assert_int_eq(t.significant, 0);
    ck_assert_ptr_nonnull(strstr(t.reason, "too few processes (5 and 5, need 6"));
    bkm_tune_claim_rule_defaults(&rule);
    rule.min_n = 5;
    ck_assert_int_eq(bkm_tune_claim_decide(base, 5, cv, nc, 1, &rule, &t, NULL), BKM_OK);
    ck_assert_int_eq(t.significant, 1); /* p = 2/252 = 0.0079 */
    rule.floor = 6.0;
    ck_assert_int_eq(bkm_tune_claim_decide(base, 5, cv, nc, 1, &rule, &t, NULL), BKM_OK);
    ck_assert_ptr_nonnull(strstr(t.reason, "floor"));
    cv[0] = bad;
    ck_assert_int_eq(bkm_tune_claim_decide(base, 5, cv, nc, 1, NULL, &t, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "candidate 1"));
    cv[0] = nan_v;
    ck_assert_int_eq(bkm_tune_claim_decide(base, 5, cv, nc, 1, NULL, &t, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_claim_decide(base, 0, cv, nc, 1, NULL, &t, &err), BKM_EINVAL);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, median_odd_and_even);
    tcase_add_test(tc, summary_mad_and_spread);
    tcase_add_test(tc, summary_rejects_bad_input);
    tcase_add_test(tc, outliers_when_mad_is_zero);
    tcase_add_test(tc, median_ci_ranks_match_table);
    tcase_add_test(tc, summary_ci_uses_order_statistics);
    tcase_add_test(tc, mann_whitney_exact);
    tcase_add_test(tc, mann_whitney_with_ties);
    tcase_add_test(tc, claim_order_cancels_linear_drift);
    tcase_add_test(tc, claim_real_win);
    tcase_add_test(tc, claim_exact_rank_interval);
    tcase_add_test(tc, claim_null_rarely_claims);
    tcase_add_test(tc, claim_drift_cancelled_by_order);
    tcase_add_test(tc, claim_holm_several_candidates);
    tcase_add_test(tc, claim_needs_processes_and_sane_values);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(stats_suite)
