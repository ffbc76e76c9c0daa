/* SPDX-License-Identifier: MIT */
/* Measurement statistics: robust summaries, the order-statistic CI of the median, the
 * Mann-Whitney U test and the "significantly faster" rule (reference/tuning-practice.md 3.1-3.3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/tuner.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bkm_tune_stats_median(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int bkm_tune_stats_median_ci_ranks(size_t n, double conf, size_t *lo, size_t *hi, double *coverage, bkm_err_t *err)
{
    double tail = (1.0 - conf) / 2.0, logp, cdf = 0.0, cdf_ok = -1.0;
    size_t k = 1;
    if (n == 0)
        return bkm_err_set(err, BKM_EINVAL, "confidence interval of the median needs at least one sample");
    if (!(conf > 0.0 && conf < 1.0))
        return bkm_err_set(err, BKM_EINVAL, "confidence level %g is not in (0, 1)", conf);
    /* pmf(j) of Binomial(n, 1/2) in logs (2^-n underflows for n > 1074); lo = j + 1 for the
     * largest j with cdf(j) <= tail, and lo <= n / 2 so that lo <= hi. */
    logp = -(double)n * log(2.0);
    for (size_t j = 0; j < (n + 1) / 2; j++) {
        if (j > 0)
            logp += log((double)(n - j + 1) / (double)j);
        cdf += exp(logp);
        if (cdf > tail)
            break;
        k = j + 1;
        cdf_ok = cdf;
    }
    *lo = k;
    *hi = n + 1 - k;
    if (coverage)
        *coverage = cdf_ok >= 0.0 ? 1.0 - 2.0 * cdf_ok : 1.0 - 2.0 * exp(-(double)n * log(2.0));
    return BKM_OK;
}

int bkm_tune_stats_compute(const double *x, size_t n, double *scratch, bkm_tune_stats_t *out, bkm_err_t *err)
{
    double *s = scratch, sum = 0.0, ss = 0.0;
    int ret = BKM_OK;
    memset(out, 0, sizeof *out);
    if (n == 0 || x == NULL)
        return bkm_err_set(err, BKM_EINVAL, "no samples to summarise");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return bkm_err_set(err, BKM_EINVAL, "sample %zu is not a finite number (%g)", i, x[i]);
    if (s == NULL && (s = malloc(n * sizeof *s)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory summarising %zu samples", n);
    memcpy(s, x, n * sizeof *s);
    out->n = n;
    out->median = bkm_tune_stats_median(s, n);
    out->min = s[0];
    out->max = s[n - 1];
    if ((ret = bkm_tune_stats_median_ci_ranks(n, 0.95, &out->ci_lo_rank, &out->ci_hi_rank, &out->ci_coverage,
                                              err)) < 0)
        goto out;
    out->ci_lo = s[out->ci_lo_rank - 1];
    out->ci_hi = s[out->ci_hi_rank - 1];
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    out->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - out->mean) * (x[i] - out->mean);
    out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    out->cv = out->mean != 0.0 ? out->stddev / out->mean : 0.0;
    for (size_t i = 0; i < n; i++)
        s[i] = fabs(x[i] - out->median);
    out->mad = bkm_tune_stats_median(s, n);
    out->mad_sigma = 1.4826 * out->mad;
out:
    if (scratch == NULL)
        free(s);
    return ret;
}

size_t bkm_tune_stats_outliers(const double *x, size_t n, const bkm_tune_stats_t *st, double z, unsigned char *flags)
{
    double scale = st->mad, mean_ad = 0.0;
    size_t count = 0;
    if (z <= 0.0)
        z = BKM_TUNE_OUTLIER_Z;
    if (scale == 0.0 && n > 0) {
        for (size_t i = 0; i < n; i++)
            mean_ad += fabs(x[i] - st->median);
        scale = mean_ad / (double)n * (1.253314 / 1.4826);
    }
    for (size_t i = 0; i < n; i++) {
        int out = scale > 0.0 && fabs(x[i] - st->median) > z * scale;
        if (flags)
            flags[i] = (unsigned char)out;
        count += (size_t)out;
    }
    return count;
}

/* ---------------------------------------------------------------------------------------- */
typedef struct {
    double v;
    int from_a;
} tagged_t;

static int cmp_tagged(const void *a, const void *b)
{
    return cmp_double(&((const tagged_t *)a)->v, &((const tagged_t *)b)->v);
}

/* Exact two-sided p of U for sizes m, n without ties. The counts of U = 0..mn are the
 * coefficients of the Gaussian binomial [m+n choose m](q) = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i);
 * they stay below C(50, 25) ~ 1.3e14 < 2^53, so doubles hold them exactly. */
static int mwu_exact(double u, size_t m, size_t n, double *p)
{
    size_t top = m * n, ui = (size_t)u;
    double *c = calloc(top + 1, sizeof *c), total = 0.0, le = 0.0;
    if (c == NULL)
        return BKM_ENOMEM;
    c[0] = 1.0;
    for (size_t i = 1; i <= m; i++) {
        for (size_t k = top; k >= n + i; k--) /* multiply by 1 - q^(n+i) */
            c[k] -= c[k - n - i];
        for (size_t k = i; k <= top; k++)     /* divide by 1 - q^i */
            c[k] += c[k - i];
    }
    if (ui > top / 2) /* symmetric: use the lower tail */
        ui = top - ui;
    for (size_t k = 0; k <= top; k++) {
        total += c[k];
        if (k <= ui)
            le += c[k];
    }
    *p = fmin(1.0, 2.0 * le / total);
    free(c);
    return BKM_OK;
}

int bkm_tune_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, bkm_tune_mwu_t *out,
                                bkm_err_t *err)
{
    size_t N = na + nb, i = 0;
    tagged_t *t = NULL;
    double rank_sum_a = 0.0, tie_term = 0.0;
    int ties = 0, ret = BKM_OK;
    memset(out, 0, sizeof *out);
    if (na == 0 || nb == 0)
        return bkm_err_set(err, BKM_EINVAL, "Mann-Whitney test needs samples on both sides (got %zu and %zu)", na, nb);
    if ((t = malloc(N * sizeof *t)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory in the Mann-Whitney test");
    for (size_t k = 0; k < N; k++) {
        t[k].from_a = k < na;
        t[k].v = k < na ? a[k] : b[k - na];
        if (!isfinite(t[k].v)) {
            ret = bkm_err_set(err, BKM_EINVAL, "sample %zu of %s is not a finite number", k < na ? k : k - na,
                              k < na ? "the first set" : "the second set");
            goto out;
        }
    }
    qsort(t, N, sizeof *t, cmp_tagged);
    while (i < N) { /* mid-ranks for runs of equal values */
        size_t j = i;
        double mid;
        while (j + 1 < N && t[j + 1].v == t[i].v)
            j++;
        mid = 0.5 * (double)(i + j) + 1.0;
        for (size_t k = i; k <= j; k++)
            if (t[k].from_a)
                rank_sum_a += mid;
        if (j > i) {
            double len = (double)(j - i + 1);
            ties = 1;
            tie_term += len * len * len - len;
        }
        i = j + 1;
    }
    out->u = rank_sum_a - (double)na * (double)(na + 1) / 2.0;
    if (!ties && N <= 50) {
        out->exact = 1;
        if (mwu_exact(out->u, na, nb, &out->p) < 0)
            ret = bkm_err_set(err, BKM_ENOMEM, "out of memory in the Mann-Whitney test");
    } else {
        double mu = (double)na * (double)nb / 2.0;
        double var = (double)na * (double)nb / 12.0 * ((double)(N + 1) - tie_term / ((double)N * (double)(N - 1)));
        if (var <= 0.0) { /* every value equal: no evidence of a difference */
            out->p = 1.0;
        } else {
            out->z = fmax(0.0, fabs(out->u - mu) - 0.5) / sqrt(var);
            out->p = fmin(1.0, erfc(out->z / sqrt(2.0)));
        }
    }
out:
    free(t);
    return ret;
}

/* ---------------------------------------------------------------------------------------- */
void bkm_tune_faster_rule_defaults(bkm_tune_faster_rule_t *rule)
{
    rule->min_ratio = 1.05;
    rule->alpha = 0.01;
    rule->min_n = 10;
    rule->floor = 0.0;
    rule->require_ci_separation = 1;
}

#define REASON(...) snprintf(out->reason, sizeof out->reason, __VA_ARGS__)

int bkm_tune_stats_faster(const double *cand, size_t nc, const double *base, size_t nb,
                          const bkm_tune_faster_rule_t *rule, bkm_tune_faster_t *out, bkm_err_t *err)
{
    bkm_tune_faster_rule_t def;
    int ret;
    memset(out, 0, sizeof *out);
    if (rule == NULL) {
        bkm_tune_faster_rule_defaults(&def);
        rule = &def;
    }
    if ((ret = bkm_tune_stats_compute(cand, nc, NULL, &out->cand, err)) < 0)
        return bkm_err_prefix(err, "candidate");
    if ((ret = bkm_tune_stats_compute(base, nb, NULL, &out->base, err)) < 0)
        return bkm_err_prefix(err, "baseline");
    if ((ret = bkm_tune_stats_mann_whitney(cand, nc, base, nb, &out->mwu, err)) < 0)
        return ret;
    out->ratio = out->cand.median > 0.0 ? out->base.median / out->cand.median : NAN;
    out->ratio_lo = out->cand.ci_hi > 0.0 ? out->base.ci_lo / out->cand.ci_hi : NAN;
    out->ratio_hi = out->cand.ci_lo > 0.0 ? out->base.ci_hi / out->cand.ci_lo : NAN;
    if (nc < rule->min_n || nb < rule->min_n)
        REASON("too few samples (%zu and %zu, need %zu per side)", nc, nb, rule->min_n);
    else if (!(out->ratio >= rule->min_ratio))
        REASON("median ratio %.4f below %.4f", out->ratio, rule->min_ratio);
    else if (!(out->mwu.p < rule->alpha))
        REASON("Mann-Whitney p %.3g not below %.3g", out->mwu.p, rule->alpha);
    else if (!(out->base.median - out->cand.median > rule->floor))
        REASON("difference %.4g not above the floor %.4g", out->base.median - out->cand.median, rule->floor);
    else if (rule->require_ci_separation && !(out->cand.ci_hi < out->base.ci_lo))
        REASON("95%% CIs overlap ([%.4g, %.4g] vs [%.4g, %.4g])", out->cand.ci_lo, out->cand.ci_hi, out->base.ci_lo,
               out->base.ci_hi);
    else {
        out->significant = 1;
        REASON("faster");
    }
    return BKM_OK;
}
