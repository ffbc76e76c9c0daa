/* SPDX-License-Identifier: MIT */
/* Measurement statistics: robust summaries, the order-statistic CI of the median, the
 * Mann-Whitney U test (docs/measurement.md, "Statistics used"), and the claim rule on one value
 * per process: drift-cancelling order, Holm correction, Hodges-Lehmann ratio with its exact
 * rank interval. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/stats.h"
#include "stats_int.h"


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
    out->median = bkm_median(s, n);
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
    out->mad = bkm_median(s, n);
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
    return bkm_cmp_double(&((const tagged_t *)a)->v, &((const tagged_t *)b)->v);
}

/* Null distribution of U for sizes m, n without ties: the counts of U = 0..mn are the
 * coefficients of the Gaussian binomial [m+n choose m](q) = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i);
 * they stay below C(50, 25) ~ 1.3e14 < 2^53 when m + n <= 50, so doubles hold them exactly.
 * Returns the mn + 1 counts (free) and their total, or NULL when out of memory. */
static double *mwu_counts(size_t m, size_t n, double *total)
{
    size_t top = m * n;
    double *c = calloc(top + 1, sizeof *c);
    if (c == NULL)
        return NULL;
    c[0] = 1.0;
    for (size_t i = 1; i <= m; i++) {
        for (size_t k = top; k >= n + i; k--) /* multiply by 1 - q^(n+i) */
            c[k] -= c[k - n - i];
        for (size_t k = i; k <= top; k++)     /* divide by 1 - q^i */
            c[k] += c[k - i];
    }
    *total = 0.0;
    for (size_t k = 0; k <= top; k++)
        *total += c[k];
    return c;
}

double *bkm__mwu_rank_sum_counts(const long *rank2, size_t N, size_t na, long *S)
{
    double *f, *out;
    *S = 0;
    for (size_t i = 0; i < N; i++)
        *S += rank2[i];
    /* f[k][s] = number of k-subsets of the values seen so far with doubled rank sum s */
    if ((f = calloc((na + 1) * (size_t)(*S + 1), sizeof *f)) == NULL)
        return NULL;
    f[0] = 1.0;
    for (size_t i = 0; i < N; i++)
        for (size_t k = (i + 1 < na ? i + 1 : na); k >= 1; k--) {
            double *dst = f + k * (size_t)(*S + 1), *src = f + (k - 1) * (size_t)(*S + 1);
            for (long s = *S; s >= rank2[i]; s--)
                dst[s] += src[s - rank2[i]];
        }
    out = f + na * (size_t)(*S + 1);
    memmove(f, out, (size_t)(*S + 1) * sizeof *f);
    return f;
}

int bkm__mwu_ranks(const double *a, size_t na, const double *b, size_t nb, long **rank2, long *w2, double *u,
                   double *tie_term, int *ties)
{
    size_t N = na + nb, i = 0;
    tagged_t *t = malloc(N * sizeof *t);
    long *r = malloc(N * sizeof *r);
    double rank_sum_a = 0.0;
    *rank2 = NULL;
    *w2 = 0;
    *tie_term = 0.0;
    *ties = 0;
    if (t == NULL || r == NULL) {
        free(t), free(r);
        return BKM_ENOMEM;
    }
    for (size_t k = 0; k < N; k++) {
        t[k].from_a = k < na;
        t[k].v = k < na ? a[k] : b[k - na];
    }
    qsort(t, N, sizeof *t, cmp_tagged);
    while (i < N) { /* mid-ranks for runs of equal values */
        size_t j = i;
        double mid;
        while (j + 1 < N && t[j + 1].v == t[i].v)
            j++;
        mid = 0.5 * (double)(i + j) + 1.0;
        for (size_t k = i; k <= j; k++) {
            r[k] = (long)(i + j + 2); /* 2 x mid */
            if (t[k].from_a)
                rank_sum_a += mid, *w2 += r[k];
        }
        if (j > i) {
            double len = (double)(j - i + 1);
            *ties = 1;
            *tie_term += len * len * len - len;
        }
        i = j + 1;
    }
    *u = rank_sum_a - (double)na * (double)(na + 1) / 2.0;
    *rank2 = r;
    free(t);
    return BKM_OK;
}

/* Exact two-sided p of the rank-sum test, ties included: p = P(|W - E| >= |w - E|) over all
 * C(N, na) equally likely subsets (bkm__mwu_rank_sum_counts), conditional on the observed ties;
 * without ties it is the exact Mann-Whitney p. */
static int mwu_exact(const long *rank2, size_t N, size_t na, long w2, double *p)
{
    long S, e2 = (long)na * (long)(N + 1), dev = labs(w2 - e2);
    double *f = bkm__mwu_rank_sum_counts(rank2, N, na, &S), total = 0.0, tail = 0.0;
    if (f == NULL)
        return BKM_ENOMEM;
    for (long s = 0; s <= S; s++) {
        total += f[s];
        if (labs(s - e2) >= dev)
            tail += f[s];
    }
    *p = fmin(1.0, tail / total);
    free(f);
    return BKM_OK;
}

int bkm_tune_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, bkm_tune_mwu_t *out,
                                bkm_err_t *err)
{
    size_t N = na + nb;
    long *rank2 = NULL, w2 = 0;
    double tie_term = 0.0;
    int ret = BKM_OK, ties = 0;
    memset(out, 0, sizeof *out);
    if (na == 0 || nb == 0)
        return bkm_err_set(err, BKM_EINVAL, "Mann-Whitney test needs samples on both sides (got %zu and %zu)", na, nb);
    for (size_t k = 0; k < N; k++)
        if (!isfinite(k < na ? a[k] : b[k - na]))
            return bkm_err_set(err, BKM_EINVAL, "sample %zu of %s is not a finite number", k < na ? k : k - na,
                               k < na ? "the first set" : "the second set");
    if (bkm__mwu_ranks(a, na, b, nb, &rank2, &w2, &out->u, &tie_term, &ties) < 0)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory in the Mann-Whitney test");
    if (N <= 50) {
        out->exact = 1;
        if (mwu_exact(rank2, N, na, w2, &out->p) < 0)
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
    free(rank2);
    return ret;
}


/* ---------------------------------------------------------------------------------------- */
/* Claims: one value per process. */

/* splitmix64: spreads a user seed (1, 2, 3...) over the state of the xorshift generator. */
static uint64_t seed_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x ? x : 0x2545F4914F6CDD1DULL;
}

int bkm_tune_claim_order(size_t arms, size_t rounds, uint64_t seed, size_t *order, bkm_err_t *err)
{
    uint64_t rng = seed_mix(seed);
    if (arms == 0 || rounds == 0 || order == NULL)
        return bkm_err_set(err, BKM_EINVAL, "confirmation order: %zu arms x %zu rounds (need at least 1 of each)",
                           arms, rounds);
    for (size_t r = 0; r < rounds; r++) {
        size_t *row = order + r * arms;
        if (r % 2 == 1) { /* the second round of a pair: the first one reversed */
            for (size_t a = 0; a < arms; a++)
                row[a] = order[(r - 1) * arms + arms - 1 - a];
            continue;
        }
        for (size_t a = 0; a < arms; a++)
            row[a] = a;
        for (size_t a = arms; a > 1; a--) { /* Fisher-Yates */
            size_t j = (size_t)(bkm_rng_next(&rng) % a), t = row[a - 1];
            row[a - 1] = row[j];
            row[j] = t;
        }
    }
    return BKM_OK;
}

void bkm_tune_claim_rule_defaults(bkm_tune_claim_rule_t *rule)
{
    rule->min_ratio = 1.02;
    rule->alpha = 0.01;
    rule->min_n = BKM_TUNE_REPLICATES_DEFAULT;
    rule->floor = 0.0;
}

static int claim_values_check(const double *x, size_t n, const char *side, bkm_err_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] <= 0.0)
            return bkm_err_set(err, BKM_EINVAL, "%s: process value %zu is %g (a positive time is needed)", side, i,
                               x[i]);
    return BKM_OK;
}

/* The Hodges-Lehmann ratio base / cand and its exact rank (Moses) interval at level @p conf:
 * [d(k), d(mn + 1 - k)] of the sorted pairwise log ratios d, k the largest with
 * P(U <= k - 1) <= (1 - conf) / 2 under the null; coverage 1 - 2 P(U <= k - 1). Beyond 50 values
 * in all, k comes from the normal approximation of U and the coverage is reported as conf. */
static int claim_ratio(const double *base, size_t nb, const double *cand, size_t nc, double conf,
                       bkm_tune_claim_test_t *t)
{
    size_t mn = nb * nc, k = 1;
    double *d = malloc(mn * sizeof *d), tail = (1.0 - conf) / 2.0, med;
    if (d == NULL)
        return BKM_ENOMEM;
    for (size_t j = 0; j < nb; j++)
        for (size_t i = 0; i < nc; i++)
            d[j * nc + i] = log(base[j]) - log(cand[i]);
    qsort(d, mn, sizeof *d, bkm_cmp_double);
    med = mn % 2 ? d[mn / 2] : 0.5 * (d[mn / 2 - 1] + d[mn / 2]);
    t->ratio = exp(med);
    if (nb + nc <= 50) {
        double total, cdf = 0.0, *c = mwu_counts(nb, nc, &total), cov_tail;
        if (c == NULL) {
            free(d);
            return BKM_ENOMEM;
        }
        cov_tail = c[0] / total;
        for (size_t u = 0; u <= mn / 2; u++) {
            cdf += c[u] / total;
            if (cdf > tail)
                break;
            k = u + 1;
            cov_tail = cdf;
        }
        t->ratio_coverage = 1.0 - 2.0 * cov_tail;
        free(c);
    } else {
        double kk = floor((double)mn / 2.0 - 1.959963984540054 * sqrt((double)mn * (double)(nb + nc + 1) / 12.0));
        k = kk >= 1.0 ? (size_t)kk : 1;
        t->ratio_coverage = conf;
    }
    t->ratio_lo = exp(d[k - 1]);
    t->ratio_hi = exp(d[mn - k]);
    free(d);
    return BKM_OK;
}

int bkm_tune_stats_holm(const double *p, size_t m, double *adj, bkm_err_t *err)
{
    size_t *rank;
    double running = 0.0;
    if (m == 0)
        return BKM_OK;
    if ((rank = malloc(m * sizeof *rank)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "holm: out of memory");
    for (size_t i = 0; i < m; i++)
        rank[i] = i;
    /* the i-th smallest of m p-values is multiplied by m - i (i from 0), and the adjusted values
     * are made monotone, so a hypothesis is rejected only if every smaller p is too */
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && p[rank[j]] < p[rank[j - 1]]; j--) {
            size_t tmp = rank[j];
            rank[j] = rank[j - 1];
            rank[j - 1] = tmp;
        }
    for (size_t i = 0; i < m; i++) {
        running = fmax(running, fmin(1.0, (double)(m - i) * p[rank[i]]));
        adj[rank[i]] = running;
    }
    free(rank);
    return BKM_OK;
}

#define CLAIM_REASON(t, ...) snprintf((t)->reason, sizeof (t)->reason, __VA_ARGS__)

int bkm_tune_claim_decide(const double *base, size_t nb, const double *const *cand, const size_t *nc, size_t k,
                          const bkm_tune_claim_rule_t *rule, bkm_tune_claim_test_t *out, bkm_err_t *err)
{
    bkm_tune_claim_rule_t def;
    size_t *rank = NULL, m = 0;
    double *scratch = NULL;
    int ret = BKM_OK;
    if (rule == NULL) {
        bkm_tune_claim_rule_defaults(&def);
        rule = &def;
    }
    if (k > 0)
        memset(out, 0, k * sizeof *out);
    if (base == NULL || nb == 0)
        return bkm_err_set(err, BKM_EINVAL, "claim: the default has no process values");
    if ((ret = claim_values_check(base, nb, "default", err)) < 0)
        return ret;
    for (size_t c = 0; c < k; c++)
        if (nc[c] > 0 && (ret = claim_values_check(cand[c], nc[c], "candidate", err)) < 0)
            return bkm_err_prefix(err, "candidate %zu", c + 1);
    if ((rank = malloc((k ? k : 1) * sizeof *rank)) == NULL ||
        (scratch = malloc(nb * sizeof *scratch)) == NULL) {
        ret = bkm_err_set(err, BKM_ENOMEM, "claim: out of memory");
        goto out;
    }
    memcpy(scratch, base, nb * sizeof *scratch);
    for (size_t c = 0; c < k; c++) {
        bkm_tune_claim_test_t *t = &out[c];
        double *cs;
        t->n_base = nb;
        t->n_cand = nc[c];
        t->base_median = bkm_median(scratch, nb);
        t->cand_median = t->ratio = t->ratio_lo = t->ratio_hi = t->ratio_coverage = t->p_holm = NAN;
        t->mwu.p = NAN;
        if (nc[c] == 0) {
            CLAIM_REASON(t, "not tested: the candidate failed in the confirmation round");
            continue;
        }
        t->tested = 1;
        if ((cs = malloc(nc[c] * sizeof *cs)) == NULL) {
            ret = bkm_err_set(err, BKM_ENOMEM, "claim: out of memory");
            goto out;
        }
        memcpy(cs, cand[c], nc[c] * sizeof *cs);
        t->cand_median = bkm_median(cs, nc[c]);
        free(cs);
        if ((ret = bkm_tune_stats_mann_whitney(cand[c], nc[c], base, nb, &t->mwu, err)) < 0)
            goto out;
        if (claim_ratio(base, nb, cand[c], nc[c], 0.95, t) < 0) {
            ret = bkm_err_set(err, BKM_ENOMEM, "claim: out of memory");
            goto out;
        }
        rank[m++] = c;
    }
    /* Holm over the m candidates tested */
    {
        double *p = malloc((m ? m : 1) * sizeof *p), *adj = malloc((m ? m : 1) * sizeof *adj);
        if (p == NULL || adj == NULL) {
            free(p), free(adj);
            ret = bkm_err_set(err, BKM_ENOMEM, "claim: out of memory");
            goto out;
        }
        for (size_t i = 0; i < m; i++)
            p[i] = out[rank[i]].mwu.p;
        ret = bkm_tune_stats_holm(p, m, adj, err);
        for (size_t i = 0; ret == BKM_OK && i < m; i++)
            out[rank[i]].p_holm = adj[i];
        free(p), free(adj);
        if (ret < 0)
            goto out;
    }
    for (size_t c = 0; c < k; c++) {
        bkm_tune_claim_test_t *t = &out[c];
        if (!t->tested)
            continue;
        if (t->n_cand < rule->min_n || t->n_base < rule->min_n)
            CLAIM_REASON(t, "too few processes (%zu and %zu, need %zu per side)", t->n_cand, t->n_base, rule->min_n);
        else if (!(t->ratio >= rule->min_ratio))
            CLAIM_REASON(t, "ratio %.4f below %.4f", t->ratio, rule->min_ratio);
        else if (!(t->p_holm < rule->alpha))
            CLAIM_REASON(t, "Mann-Whitney p %.3g (Holm-adjusted over %zu candidates: %.3g) not below %.3g", t->mwu.p,
                         m, t->p_holm, rule->alpha);
        else if (!(t->base_median - t->cand_median > rule->floor))
            CLAIM_REASON(t, "difference %.4g not above the floor %.4g", t->base_median - t->cand_median, rule->floor);
        else {
            t->significant = 1;
            CLAIM_REASON(t, "faster");
        }
    }
out:
    free(rank);
    free(scratch);
    return ret;
}
