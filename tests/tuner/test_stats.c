/* SPDX-License-Identifier: MIT */
/* Unit tests of the statistics in tuner/stats.c against hand-computed values: medians, MAD, the
 * order-statistic CI ranks of reference/tuning-practice.md 3.1, Mann-Whitney p-values (exact
 * values enumerated over all C(m+n, m) arrangements), outliers and the "faster" rule. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"

/* The results database stores the runner's status as is: the two enums must agree. */
_Static_assert(BKM_DB_TRIAL_OK == (int)BKM_TRIAL_OK && BKM_DB_TRIAL_CRASHED == (int)BKM_TRIAL_CRASHED &&
                   BKM_DB_TRIAL_TIMEOUT == (int)BKM_TRIAL_TIMEOUT && BKM_DB_TRIAL_FAILED == (int)BKM_TRIAL_FAILED &&
                   BKM_DB_TRIAL_BINDING_MISMATCH == (int)BKM_TRIAL_BINDING_MISMATCH,
               "bkm_db_trial_status_t and bkm_tune_trial_status_t differ");

START_TEST(median_odd_and_even)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
    ck_assert_double_eq(bkm_tune_stats_median(odd, 3), 3.0);
    ck_assert_double_eq(bkm_tune_stats_median(even, 4), 2.5);
    ck_assert(isnan(bkm_tune_stats_median(NULL, 0)));
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
    /* reference/tuning-practice.md 3.1 */
    static const size_t tab[][3] = {{10, 2, 9}, {15, 4, 12}, {20, 6, 15}, {30, 10, 21}, {50, 18, 33}, {8, 1, 8}, {6, 1, 6}};
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

START_TEST(mann_whitney_normal_with_ties)
{
    const double a[] = {1, 2, 2, 3, 3, 4}, b[] = {2, 3, 4, 5, 5, 6, 7};
    const double s[] = {3, 3, 3}, t[] = {3, 3};
    bkm_tune_mwu_t r;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(a, 6, b, 7, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.exact, 0);
    ck_assert_double_eq(r.u, 6.5);
    ck_assert_double_eq_tol(r.z, 2.0280518608463853, 1e-12);
    ck_assert_double_eq_tol(r.p, 0.04255495530639132, 1e-12);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(s, 3, t, 2, &r, NULL), BKM_OK);
    ck_assert_double_eq(r.p, 1.0);
    ck_assert_int_eq(bkm_tune_stats_mann_whitney(s, 3, t, 0, &r, &err), BKM_EINVAL);
}
END_TEST

START_TEST(faster_rule)
{
    double cand[12], base[12], noisy[12];
    bkm_tune_faster_t v;
    bkm_tune_faster_rule_t rule;
    for (int i = 0; i < 12; i++) {
        cand[i] = 1.00 + 0.001 * i;
        base[i] = 1.20 + 0.001 * ((i * 7) % 12);
        noisy[i] = 0.9 + 0.05 * i; /* spans 0.9 .. 1.45: overlaps the baseline */
    }
    ck_assert_int_eq(bkm_tune_stats_faster(cand, 12, base, 12, NULL, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 1);
    ck_assert_str_eq(v.reason, "faster");
    ck_assert(v.ratio > 1.19 && v.ratio < 1.21);
    ck_assert(v.ratio_lo <= v.ratio && v.ratio <= v.ratio_hi);
    /* too few samples */
    ck_assert_int_eq(bkm_tune_stats_faster(cand, 5, base, 5, NULL, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "too few"));
    /* slower is never faster */
    ck_assert_int_eq(bkm_tune_stats_faster(base, 12, cand, 12, NULL, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "ratio"));
    /* a ratio below the factor */
    bkm_tune_faster_rule_defaults(&rule);
    rule.min_ratio = 1.5;
    ck_assert_int_eq(bkm_tune_stats_faster(cand, 12, base, 12, &rule, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 0);
    /* a floor above the difference */
    bkm_tune_faster_rule_defaults(&rule);
    rule.floor = 0.5;
    ck_assert_int_eq(bkm_tune_stats_faster(cand, 12, base, 12, &rule, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "floor"));
    /* noisy candidate: not significant */
    ck_assert_int_eq(bkm_tune_stats_faster(noisy, 12, base, 12, NULL, &v, NULL), BKM_OK);
    ck_assert_int_eq(v.significant, 0);
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
    tcase_add_test(tc, mann_whitney_normal_with_ties);
    tcase_add_test(tc, faster_rule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stats_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
