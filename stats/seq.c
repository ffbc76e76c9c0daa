/* SPDX-License-Identifier: MIT */
/* The sequential confirmation (bkm/stats.h, "Sequential confirmation"; docs/measurement.md, "The
 * sequential design"): alpha-spending boundaries by recursive numerical integration, the one-sided
 * exact Mann-Whitney test and the Hodges-Lehmann ratio with its fixed and repeated intervals at
 * each look, Holm's step-down over the candidates, and what was decided about each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/stats.h"
#include "stats_int.h"

/* The grids span the score S = Z sqrt(t) over +-GRID_SD of its standard deviation sqrt(t): the
 * mass outside is below 1e-16. */
#define GRID_SD 8.5
/* Largest grid step on S, and the step relative to the increment's standard deviation. */
#define GRID_STEP 0.02
#define GRID_PER_SD 6.0
#define SEQ_K_MAX 64

/* ---- the normal distribution ------------------------------------------------------------ */

static double norm_sf(double x)
{
    return 0.5 * erfc(x / sqrt(2.0));
}

static double norm_pdf(double x)
{
    return exp(-0.5 * x * x) * 0.398942280401432678;
}

/* x with P(Z >= x) = p: Acklam's rational approximation of the lower quantile of p, then two
 * Halley steps on erfc, which make it exact to rounding. */
static double norm_isf(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    double q, r, x, lowp = p < 0.5 ? p : 1.0 - p; /* the smaller tail, lower side */
    if (!(p > 0.0))
        return INFINITY;
    if (!(p < 1.0))
        return -INFINITY;
    if (lowp < 0.02425) {
        q = sqrt(-2.0 * log(lowp));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    } else {
        q = lowp - 0.5;
        r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    }
    /* x is the lower quantile of lowp (x <= 0); refine P(Z <= x) = lowp */
    for (int it = 0; it < 2; it++) {
        double e = 0.5 * erfc(-x / sqrt(2.0)) - lowp, u = e * 2.506628274631000502 * exp(0.5 * x * x);
        x = x - u / (1.0 + 0.5 * x * u);
    }
    return p < 0.5 ? -x : x;
}

/* ---- spending and boundaries ----------------------------------------------------------- */

const char *bkm_tune_spending_name(bkm_tune_spending_t f)
{
    return f == BKM_TUNE_SPENDING_POCOCK ? "lan-demets-pocock" : "lan-demets-obrien-fleming";
}

double bkm_tune_spending_alpha(bkm_tune_spending_t f, double alpha, double t)
{
    if (!(t > 0.0))
        return 0.0;
    if (t >= 1.0)
        return alpha;
    if (f == BKM_TUNE_SPENDING_POCOCK)
        return alpha * log(1.0 + (2.718281828459045235 - 1.0) * t);
    return 2.0 * norm_sf(norm_isf(alpha / 2.0) / sqrt(t));
}

/* One boundary sequence at one level: the sub-density of the score S at the last look on its
 * continuation region (S below the boundary), on a uniform grid, integrated by Simpson's rule. */
typedef struct gs_level {
    double spent;    /* alpha spent by the looks so far */
    double t;        /* information fraction of the last look; 0 before the first */
    double lo, h;    /* grid start and step */
    size_t g;        /* grid points (odd, >= 3) */
    double *dens;
} gs_level_t;

static double simpson_w(size_t i, size_t g, double h)
{
    if (i == 0 || i == g - 1)
        return h / 3.0;
    return (i % 2 ? 4.0 : 2.0) * h / 3.0;
}

/* A grid from lo to hi with step at most @p step: odd number of points, at least 3. */
static size_t grid_points(double lo, double hi, double step, double *h)
{
    size_t g = (size_t)ceil((hi - lo) / step) + 1;
    if (g < 3)
        g = 3;
    if (g % 2 == 0)
        g++;
    *h = (hi - lo) / (double)(g - 1);
    return g;
}

/* Probability of crossing the score boundary @p bnd at the next look (increment sd @p sd). */
static double gs_cross(const gs_level_t *L, double bnd, double sd)
{
    double sum = 0.0;
    for (size_t i = 0; i < L->g; i++)
        if (L->dens[i] > 0.0)
            sum += simpson_w(i, L->g, L->h) * L->dens[i] * norm_sf((bnd - (L->lo + L->h * (double)i)) / sd);
    return sum;
}

/* Resample the density onto a grid of step at most @p step (linear interpolation). */
static int gs_refine(gs_level_t *L, double step)
{
    double h, hi = L->lo + L->h * (double)(L->g - 1), *d;
    size_t g = grid_points(L->lo, hi, step, &h);
    if ((d = malloc(g * sizeof *d)) == NULL)
        return BKM_ENOMEM;
    for (size_t i = 0; i < g; i++) {
        double x = (double)i * h / L->h;
        size_t j = (size_t)x;
        double f = x - (double)j;
        if (j >= L->g - 1)
            d[i] = L->dens[L->g - 1];
        else
            d[i] = (1.0 - f) * L->dens[j] + f * L->dens[j + 1];
    }
    free(L->dens);
    L->dens = d;
    L->g = g;
    L->h = h;
    return BKM_OK;
}

/* The next look at information fraction @p t with @p cum the alpha to have spent by then: its
 * boundary *z (+inf when nothing is spent), and the density carried to the next look. */
static int gs_step(gs_level_t *L, double t, double cum, double *z)
{
    double pi = cum - L->spent, rt = sqrt(t), lo = -GRID_SD * rt, hi, bnd = INFINITY, h, *nd;
    double sd = L->t > 0.0 ? sqrt(t - L->t) : rt;   /* the increment's standard deviation */
    size_t g;
    *z = INFINITY;
    if (L->t > 0.0 && L->h > sd / GRID_PER_SD * 1.5 && gs_refine(L, sd / GRID_PER_SD) < 0)
        return BKM_ENOMEM;
    if (L->t <= 0.0 && pi > 0.0) {
        *z = norm_isf(pi);
        bnd = *z * rt;
    } else if (pi > 1e-300) {
        /* the crossing probability falls with the boundary: bisection */
        double blo = L->lo - 40.0 * sd, bhi = L->lo + L->h * (double)(L->g - 1) + 40.0 * sd;
        for (int it = 0; it < 200 && bhi - blo > 1e-13 * (1.0 + fabs(bhi)); it++) {
            double mid = 0.5 * (blo + bhi);
            if (gs_cross(L, mid, sd) > pi)
                blo = mid;
            else
                bhi = mid;
        }
        bnd = 0.5 * (blo + bhi);
        *z = bnd / rt;
    }
    /* the sub-density of S on its continuation region, for the next look: at the first look the
     * normal density of S ~ N(0, t), after it the previous one convolved with the increment */
    hi = fmin(bnd, GRID_SD * rt);
    if (hi <= lo + 1e-9)
        hi = lo + 1e-9;
    g = grid_points(lo, hi, fmin(GRID_STEP, sd / GRID_PER_SD), &h);
    if ((nd = malloc(g * sizeof *nd)) == NULL)
        return BKM_ENOMEM;
    for (size_t j = 0; j < g; j++) {
        double s = lo + h * (double)j, sum = 0.0;
        if (L->t <= 0.0)
            sum = norm_pdf(s / rt) / rt;
        else
            for (size_t i = 0; i < L->g; i++) {
                double x = (s - (L->lo + L->h * (double)i)) / sd;
                if (L->dens[i] > 0.0 && fabs(x) < 12.0)
                    sum += simpson_w(i, L->g, L->h) * L->dens[i] * norm_pdf(x) / sd;
            }
        nd[j] = sum;
    }
    free(L->dens);
    L->dens = nd;
    L->g = g;
    L->lo = lo;
    L->h = h;
    L->t = t;
    L->spent = cum;
    return BKM_OK;
}

int bkm_tune_seq_bounds(bkm_tune_spending_t f, double alpha, const double *t, size_t looks, double *z,
                        double *nominal, bkm_err_t *err)
{
    gs_level_t L = {0};
    int ret = BKM_OK;
    if (!(alpha > 0.0 && alpha <= 0.5))
        return bkm_err_set(err, BKM_EINVAL, "sequential design: alpha %g is not in (0, 0.5]", alpha);
    if (looks == 0 || t == NULL || z == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sequential design: no looks");
    for (size_t k = 0; k < looks; k++)
        if (!(t[k] > 0.0 && t[k] <= 1.0) || (k > 0 && !(t[k] > t[k - 1])))
            return bkm_err_set(err, BKM_EINVAL, "sequential design: information fraction %g of look %zu is not "
                               "in (0, 1] and above the last", t[k], k + 1);
    for (size_t k = 0; k < looks; k++) {
        double cum = k + 1 == looks ? alpha : bkm_tune_spending_alpha(f, alpha, t[k]);
        if ((ret = gs_step(&L, t[k], cum, &z[k])) < 0) {
            ret = bkm_err_set(err, BKM_ENOMEM, "sequential design: out of memory");
            break;
        }
        if (nominal)
            nominal[k] = isinf(z[k]) ? 0.0 : norm_sf(z[k]);
    }
    free(L.dens);
    return ret;
}

/* ---- Mann-Whitney, one-sided ----------------------------------------------------------- */

/* cdf[u] = P(U <= u), U = #(a > b) for sizes m, n without ties: the largest of all values is a's
 * with probability m / (m + n) (then it beats all n of b), so f(i, j, u) = i/(i+j) f(i-1, j, u-j)
 * + j/(i+j) f(i, j-1, u); positive terms only. NULL when out of memory or m n too large. */
#define MWU_EXACT_MN 10000
static double *mwu_null_cdf(size_t m, size_t n)
{
    size_t row_len = 0, *off = NULL;
    double *prev = NULL, *cur = NULL, *cdf = NULL;
    if (m * n > MWU_EXACT_MN || (off = malloc((n + 2) * sizeof *off)) == NULL)
        return NULL;
    /* row i holds f(i, j, .) for j = 0..n, of length i j + 1 each */
    for (size_t j = 0; j <= n; j++)
        row_len += m * j + 1;
    if ((prev = calloc(row_len, sizeof *prev)) == NULL || (cur = calloc(row_len, sizeof *cur)) == NULL ||
        (cdf = malloc((m * n + 1) * sizeof *cdf)) == NULL)
        goto fail;
    for (size_t i = 0; i <= m; i++) {
        off[0] = 0;
        for (size_t j = 0; j <= n; j++)
            off[j + 1] = off[j] + i * j + 1;
        for (size_t j = 0; j <= n; j++) {
            double *fj = cur + off[j];
            size_t len = i * j + 1;
            if (i == 0 || j == 0) {
                memset(fj, 0, len * sizeof *fj);
                fj[0] = 1.0;
                continue;
            }
            {
                /* f(i-1, j) lives in prev at the offsets of row i-1; f(i, j-1) in cur */
                size_t poff = 0;
                for (size_t jj = 0; jj < j; jj++)
                    poff += (i - 1) * jj + 1;
                const double *a = prev + poff, *b = cur + off[j - 1];
                double pa = (double)i / (double)(i + j), pb = (double)j / (double)(i + j);
                for (size_t u = 0; u < len; u++) {
                    double v = 0.0;
                    if (u >= j && u - j <= (i - 1) * j)
                        v += pa * a[u - j];
                    if (u <= i * (j - 1))
                        v += pb * b[u];
                    fj[u] = v;
                }
            }
        }
        if (i < m) {
            double *tmp = prev;
            prev = cur;
            cur = tmp;
        }
    }
    {
        const double *f = cur + off[n];
        double run = 0.0;
        for (size_t u = 0; u <= m * n; u++)
            cdf[u] = fmin(1.0, run += f[u]);
    }
    free(prev), free(cur), free(off);
    return cdf;
fail:
    free(prev), free(cur), free(off), free(cdf);
    return NULL;
}

/* One-sided p that a is smaller than b: P(U <= u), U = #(a > b) + ties / 2: from @p cdf (the
 * sizes' null cdf, may be NULL) without ties, else exact conditional on the ties up to 100 values,
 * else the normal approximation (tie and continuity corrections). */
#define MWU_EXACT_TIES 100
static int mwu_p_less(const double *a, size_t na, const double *b, size_t nb, const double *cdf, double *u,
                      double *p, int *exact)
{
    size_t N = na + nb;
    long *rank2 = NULL, w2 = 0, S;
    double tie_term = 0.0, *f;
    int ties = 0, ret = BKM_OK;
    if (bkm__mwu_ranks(a, na, b, nb, &rank2, &w2, u, &tie_term, &ties) < 0)
        return BKM_ENOMEM;
    if (!ties && cdf != NULL) {
        *exact = 1;
        *p = cdf[(size_t)llround(*u)];
    } else if (ties && N <= MWU_EXACT_TIES) {
        double total = 0.0, tail = 0.0;
        *exact = 1;
        if ((f = bkm__mwu_rank_sum_counts(rank2, N, na, &S)) == NULL) {
            ret = BKM_ENOMEM;
        } else {
            for (long s = 0; s <= S; s++) {
                total += f[s];
                if (s <= w2)
                    tail += f[s];
            }
            *p = fmin(1.0, tail / total);
            free(f);
        }
    } else {
        double mu = (double)na * (double)nb / 2.0;
        double var = (double)na * (double)nb / 12.0 * ((double)(N + 1) - tie_term / ((double)N * (double)(N - 1)));
        *exact = 0;
        *p = var > 0.0 ? norm_sf(-(*u - mu + 0.5) / sqrt(var)) : 1.0;
    }
    free(rank2);
    return ret;
}

/* ---- the sequential confirmation ----------------------------------------------------- */

/* The boundaries of a look depend only on the information fractions of the looks so far and on
 * whether this one spends what is left: a tree of those histories, shared by the candidates with
 * the same history and kept across bkm_tune_seq_reset. A node holds, for each Holm level
 * alpha / j (j = 1..m), the density carried on and the nominal level of its look. */
typedef struct gs_node {
    double t;
    int final;
    struct gs_node *child, *next;
    gs_level_t *lev;     /* [m] */
    double *nom;         /* [m] */
} gs_node_t;

struct bkm_tune_seq {
    bkm_tune_seq_rule_t rule;
    size_t k, m, looks;
    int started;
    bkm_tune_seq_cand_t *cand;
    gs_node_t **at;      /* [k]: each candidate's node (its last look) */
    size_t *nc_first;    /* [k]: candidate values at the first look (a fixed reference's count) */
    unsigned char *looked; /* [k]: looked at in the current call */
    gs_node_t *root;     /* for root->lev's m */
    size_t root_m;
    double *cdf;         /* the null cdf of the sizes cdf_m x cdf_n (cached) */
    size_t cdf_m, cdf_n;
    int cdf_tried;
};

static void node_free(gs_node_t *n, size_t m)
{
    while (n) {
        gs_node_t *next = n->next;
        node_free(n->child, m);
        if (n->lev)
            for (size_t j = 0; j < m; j++)
                free(n->lev[j].dens);
        free(n->lev);
        free(n->nom);
        free(n);
        n = next;
    }
}

static gs_node_t *node_new(size_t m)
{
    gs_node_t *n = calloc(1, sizeof *n);
    if (n == NULL || (n->lev = calloc(m, sizeof *n->lev)) == NULL || (n->nom = calloc(m, sizeof *n->nom)) == NULL) {
        if (n)
            free(n->lev);
        free(n);
        return NULL;
    }
    return n;
}

/* The child of @p parent for a look at @p t (spending what is left when @p final), computed from
 * the parent's densities when it is new. */
static gs_node_t *node_child(bkm_tune_seq_t *s, gs_node_t *parent, double t, int final)
{
    gs_node_t *n;
    for (n = parent->child; n; n = n->next)
        if (n->t == t && n->final == final)
            return n;
    if ((n = node_new(s->m)) == NULL)
        return NULL;
    n->t = t;
    n->final = final;
    for (size_t j = 0; j < s->m; j++) {
        gs_level_t *L = &n->lev[j];
        double lvl = s->rule.alpha / (double)(j + 1), z;
        double cum = final ? lvl : bkm_tune_spending_alpha(s->rule.spending, lvl, t);
        *L = parent->lev[j];
        L->dens = NULL;
        if (parent->lev[j].dens) {
            if ((L->dens = malloc(L->g * sizeof *L->dens)) == NULL)
                goto fail;
            memcpy(L->dens, parent->lev[j].dens, L->g * sizeof *L->dens);
        }
        if (gs_step(L, t, cum, &z) < 0)
            goto fail;
        n->nom[j] = isinf(z) ? 0.0 : norm_sf(z);
    }
    n->next = parent->child;
    parent->child = n;
    return n;
fail:
    n->child = n->next = NULL;
    node_free(n, s->m);
    return NULL;
}

void bkm_tune_seq_rule_defaults(bkm_tune_seq_rule_t *rule)
{
    rule->alpha = 0.01;
    rule->min_ratio = 1.02;
    rule->max = BKM_TUNE_REPLICATES_MAX_DEFAULT;
    rule->fixed_cand = 0;
    rule->spending = BKM_TUNE_SPENDING_OBF;
}

const char *bkm_tune_decision_name(bkm_tune_decision_t d)
{
    switch (d) {
    case BKM_TUNE_CLAIMED: return "claimed";
    case BKM_TUNE_NOT_BETTER: return "not-better";
    case BKM_TUNE_FAILED: return "failed";
    default: return "undecided";
    }
}

static void cands_clear(bkm_tune_seq_t *s)
{
    for (size_t i = 0; i < s->k; i++) {
        bkm_tune_seq_cand_t *c = &s->cand[i];
        memset(c, 0, sizeof *c);
        c->u = c->p = c->nominal = c->nominal_bonferroni = c->cand_median = c->base_median = NAN;
        c->ratio = c->ratio_lo = c->ratio_hi = c->ratio_coverage = c->rci_lo = c->rci_hi = c->t = NAN;
        snprintf(c->reason, sizeof c->reason, "not looked at yet");
        s->at[i] = NULL;
        s->looked[i] = 0;
    }
    s->looks = 0;
    s->started = 0;
    s->m = 0;
}

int bkm_tune_seq_create(bkm_tune_seq_t **out, const bkm_tune_seq_rule_t *rule, size_t k, bkm_err_t *err)
{
    bkm_tune_seq_t *s;
    bkm_tune_seq_rule_t def;
    *out = NULL;
    if (rule == NULL) {
        bkm_tune_seq_rule_defaults(&def);
        rule = &def;
    }
    if (!(rule->alpha > 0.0 && rule->alpha <= 0.5))
        return bkm_err_set(err, BKM_EINVAL, "sequential design: alpha %g is not in (0, 0.5]", rule->alpha);
    if (!(rule->min_ratio >= 1.0 && isfinite(rule->min_ratio)))
        return bkm_err_set(err, BKM_EINVAL, "sequential design: min_ratio %g is below 1", rule->min_ratio);
    if (rule->max == 0 || k == 0 || k > SEQ_K_MAX)
        return bkm_err_set(err, BKM_EINVAL, "sequential design: %zu candidates (1..%d), at most %zu processes per "
                           "side (at least 1)", k, SEQ_K_MAX, rule->max);
    if ((s = calloc(1, sizeof *s)) == NULL || (s->cand = calloc(k, sizeof *s->cand)) == NULL ||
        (s->at = calloc(k, sizeof *s->at)) == NULL || (s->looked = calloc(k, 1)) == NULL ||
        (s->nc_first = calloc(k, sizeof *s->nc_first)) == NULL) {
        if (s)
            free(s->cand), free(s->at), free(s->looked);
        free(s);
        return bkm_err_set(err, BKM_ENOMEM, "sequential design: out of memory");
    }
    s->rule = *rule;
    s->k = k;
    cands_clear(s);
    *out = s;
    return BKM_OK;
}

void bkm_tune_seq_reset(bkm_tune_seq_t *s)
{
    if (s)
        cands_clear(s);
}

void bkm_tune_seq_free(bkm_tune_seq_t *s)
{
    if (s == NULL)
        return;
    node_free(s->root, s->root_m);
    free(s->at);
    free(s->looked);
    free(s->nc_first);
    free(s->cand);
    free(s->cdf);
    free(s);
}

size_t bkm_tune_seq_open(const bkm_tune_seq_t *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->k; i++)
        n += !s->cand[i].closed;
    return n;
}

size_t bkm_tune_seq_looks(const bkm_tune_seq_t *s)
{
    return s->looks;
}

const bkm_tune_seq_cand_t *bkm_tune_seq_cand(const bkm_tune_seq_t *s, size_t i)
{
    return i < s->k ? &s->cand[i] : NULL;
}

size_t bkm_tune_seq_tested(const bkm_tune_seq_t *s)
{
    return s->m;
}

const bkm_tune_seq_rule_t *bkm_tune_seq_rule(const bkm_tune_seq_t *s)
{
    return &s->rule;
}

static int values_check(const double *x, size_t n, const char *side, bkm_err_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] <= 0.0)
            return bkm_err_set(err, BKM_EINVAL, "%s: process value %zu is %g (a positive time is needed)", side, i,
                               x[i]);
    return BKM_OK;
}

static double info(size_t nb, size_t nc)
{
    return (double)nb * (double)nc / (double)(nb + nc);
}

/* The rank k of the exact rank (Moses) interval [d(k), d(mn + 1 - k)] whose each side misses with
 * probability at most @p tail: the largest k with P(U <= k - 1) <= tail, 0 when even [d(1), d(mn)]
 * misses more often (then no bounded interval has that level); *cov = 1 - 2 P(U <= k - 1).
 * Without the exact null cdf, the normal approximation. */
static size_t moses_k(const double *cdf, size_t nb, size_t nc, double tail, double *cov)
{
    size_t mn = nb * nc, k = 0;
    *cov = 1.0;
    if (cdf != NULL) {
        for (size_t u = 0; u <= mn / 2 && cdf[u] <= tail; u++) {
            k = u + 1;
            *cov = 1.0 - 2.0 * cdf[u];
        }
    } else {
        double kk = floor((double)mn / 2.0 - norm_isf(tail) * sqrt((double)mn * (double)(nb + nc + 1) / 12.0));
        k = kk >= 1.0 ? (size_t)kk : 0;
        *cov = 1.0 - 2.0 * tail;
    }
    return k;
}

/* The statistics of candidate @p c at this look. */
static int cand_stats(bkm_tune_seq_t *s, bkm_tune_seq_cand_t *c, const double *base, size_t nb, const double *cv,
                      size_t nc, double bonf_nominal)
{
    size_t mn = nb * nc, k;
    double *d = malloc(mn * sizeof *d), *sc = malloc((nb > nc ? nb : nc) * sizeof *sc), cov;
    const double *cdf;
    if (d == NULL || sc == NULL) {
        free(d), free(sc);
        return BKM_ENOMEM;
    }
    if (!s->cdf_tried || s->cdf_m != nc || s->cdf_n != nb) {
        free(s->cdf);
        s->cdf = mwu_null_cdf(nc, nb);   /* U counts the candidate's values above the default's */
        s->cdf_m = nc, s->cdf_n = nb, s->cdf_tried = 1;
    }
    cdf = s->cdf;
    if (mwu_p_less(cv, nc, base, nb, cdf, &c->u, &c->p, &c->p_exact) < 0) {
        free(d), free(sc);
        return BKM_ENOMEM;
    }
    memcpy(sc, base, nb * sizeof *sc);
    c->base_median = bkm_median(sc, nb);
    memcpy(sc, cv, nc * sizeof *sc);
    c->cand_median = bkm_median(sc, nc);
    for (size_t j = 0; j < nb; j++)
        for (size_t i = 0; i < nc; i++)
            d[j * nc + i] = log(base[j]) - log(cv[i]);
    qsort(d, mn, sizeof *d, bkm_cmp_double);
    c->ratio = exp(mn % 2 ? d[mn / 2] : 0.5 * (d[mn / 2 - 1] + d[mn / 2]));
    /* the fixed 95% interval: [min, max] of the pairwise ratios when the sizes allow no better
     * (its coverage says so); the repeated interval: unbounded then, so that it keeps its level */
    if ((k = moses_k(cdf, nc, nb, 0.025, &c->ratio_coverage)) == 0) {
        k = 1;
        c->ratio_coverage = cdf ? 1.0 - 2.0 * cdf[0] : NAN;
    }
    c->ratio_lo = exp(d[k - 1]);
    c->ratio_hi = exp(d[mn - k]);
    k = moses_k(cdf, nc, nb, bonf_nominal, &cov);
    c->rci_lo = k ? exp(d[k - 1]) : 0.0;
    c->rci_hi = k ? exp(d[mn - k]) : INFINITY;
    c->nominal_bonferroni = bonf_nominal;
    c->n_base = nb;
    c->n_cand = nc;
    free(d), free(sc);
    return BKM_OK;
}

#define REASON(c, ...) snprintf((c)->reason, sizeof (c)->reason, __VA_ARGS__)

int bkm_tune_seq_look(bkm_tune_seq_t *s, const double *base, size_t nb, const double *const *cand, const size_t *nc,
                      int final, bkm_err_t *err)
{
    const double *bv[SEQ_K_MAX];
    size_t bn[SEQ_K_MAX];
    if (base == NULL || nb == 0)
        return bkm_err_set(err, BKM_EINVAL, "sequential confirmation: the default has no process values");
    for (size_t i = 0; i < s->k; i++)
        bv[i] = base, bn[i] = nb;
    return bkm_tune_seq_look_each(s, bv, bn, cand, nc, final, err);
}

int bkm_tune_seq_look_each(bkm_tune_seq_t *s, const double *const *base, const size_t *nb, const double *const *cand,
                           const size_t *nc, int final, bkm_err_t *err)
{
    const bkm_tune_seq_rule_t *r = &s->rule;
    size_t changed;
    int ret;
    for (size_t i = 0; i < s->k; i++) {
        if (s->cand[i].closed || nc[i] == 0 || nb[i] == 0)
            continue;
        if (nb[i] > r->max || (!r->fixed_cand && nc[i] > r->max))
            return bkm_err_set(err, BKM_EINVAL, "sequential confirmation: candidate %zu: %zu and %zu processes, "
                               "more than the %zu planned", i + 1, nc[i], nb[i], r->max);
        if ((ret = values_check(base[i], nb[i], "default", err)) < 0 ||
            (ret = values_check(cand[i], nc[i], "candidate", err)) < 0)
            return bkm_err_prefix(err, "candidate %zu", i + 1);
    }
    if (!s->started) {
        size_t m = 0;
        for (size_t i = 0; i < s->k; i++) {
            m += !s->cand[i].closed && nc[i] > 0 && nb[i] > 0;
            s->nc_first[i] = nc[i];
        }
        if (s->root && s->root_m != m) {
            node_free(s->root, s->root_m);
            s->root = NULL;
        }
        s->m = m;
        if (m > 0 && s->root == NULL) {
            if ((s->root = node_new(m)) == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "sequential confirmation: out of memory");
            s->root_m = m;
        }
        for (size_t i = 0; i < s->k; i++)
            s->at[i] = s->root;
        s->started = 1;
    }
    s->looks++;
    for (size_t i = 0; i < s->k; i++) {
        bkm_tune_seq_cand_t *c = &s->cand[i];
        gs_node_t *node;
        double t;
        int fin;
        s->looked[i] = 0;
        if (c->closed)
            continue;
        if (nc[i] == 0 || nb[i] == 0 || s->m == 0) {
            c->decision = BKM_TUNE_FAILED;
            c->closed = 1;
            REASON(c, "not tested: a process of the candidate failed (after %zu look%s)", c->looks,
                   c->looks == 1 ? "" : "s");
            continue;
        }
        /* I_max: max processes of both sides, or max against a reference's own count */
        t = fmin(1.0, info(nb[i], nc[i]) / info(r->max, r->fixed_cand ? s->nc_first[i] : r->max));
        fin = final || t >= 1.0 - 1e-9;
        if (c->looks > 0 && !(t > c->t + 1e-12)) {
            if (fin) {   /* no new processes, and no more to come */
                c->closed = 1;
                REASON(c, "undecided at the budget: %.4fx, repeated interval [%.4f, %.4f] after %zu vs %zu "
                       "processes", c->ratio, c->rci_lo, c->rci_hi, c->n_cand, c->n_base);
            }
            continue;
        }
        if ((node = node_child(s, s->at[i], t, fin)) == NULL ||
            cand_stats(s, c, base[i], nb[i], cand[i], nc[i], node->nom[s->m - 1]) < 0)
            return bkm_err_set(err, BKM_ENOMEM, "sequential confirmation: out of memory");
        s->at[i] = node;
        c->t = t;
        c->looks++;
        s->looked[i] = 1;
    }
    /* Holm's step-down at this look: level alpha / (m - r), r the candidates claimed so far */
    do {
        size_t claimed = 0;
        changed = 0;
        for (size_t i = 0; i < s->k; i++)
            claimed += s->cand[i].decision == BKM_TUNE_CLAIMED;
        if (claimed >= s->m)
            break;
        for (size_t i = 0; i < s->k; i++) {
            bkm_tune_seq_cand_t *c = &s->cand[i];
            size_t j = s->m - claimed;
            if (!s->looked[i] || c->decision != BKM_TUNE_UNDECIDED)
                continue;
            c->nominal = s->at[i]->nom[j - 1];
            if (c->p <= c->nominal && c->ratio >= r->min_ratio) {
                c->decision = BKM_TUNE_CLAIMED;
                c->closed = 1;
                REASON(c, "faster: %.4fx, repeated interval [%.4f, %.4f]; one-sided Mann-Whitney p %.3g <= %.3g "
                       "(look %zu, Holm share alpha/%zu) on %zu vs %zu processes", c->ratio, c->rci_lo, c->rci_hi,
                       c->p, c->nominal, c->looks, j, c->n_cand, c->n_base);
                changed = 1;
            }
        }
    } while (changed);
    for (size_t i = 0; i < s->k; i++) {
        bkm_tune_seq_cand_t *c = &s->cand[i];
        size_t w = s->k;
        if (!s->looked[i] || c->decision != BKM_TUNE_UNDECIDED)
            continue;
        /* a claimed candidate whose repeated interval lies wholly above this one's */
        for (size_t o = 0; o < s->k; o++)
            if (s->cand[o].decision == BKM_TUNE_CLAIMED && s->cand[o].rci_lo > c->rci_hi &&
                (w == s->k || s->cand[o].rci_lo > s->cand[w].rci_lo))
                w = o;
        if (c->rci_hi < r->min_ratio) {
            c->decision = BKM_TUNE_NOT_BETTER;
            c->closed = 1;
            if (c->rci_hi > 1.0)
                REASON(c, "not better by more than %.1f%%: repeated interval [%.4f, %.4f] below %.4f (%.4fx, %zu vs "
                       "%zu processes)", 100.0 * (c->rci_hi - 1.0), c->rci_lo, c->rci_hi, r->min_ratio, c->ratio,
                       c->n_cand, c->n_base);
            else
                REASON(c, "not better: slower or equal, repeated interval [%.4f, %.4f] (%.4fx, %zu vs %zu processes)",
                       c->rci_lo, c->rci_hi, c->ratio, c->n_cand, c->n_base);
        } else if (w < s->k) {
            c->closed = 1;
            c->beaten_by = w + 1;
            REASON(c, "undecided, measured no more: it cannot beat candidate %zu (claimed; repeated interval from "
                   "%.4f) since its own ends at %.4f (%.4fx, one-sided p %.3g, %zu vs %zu processes)", w + 1,
                   s->cand[w].rci_lo, c->rci_hi, c->ratio, c->p, c->n_cand, c->n_base);
        } else if (s->at[i]->final) {
            c->closed = 1;
            if (c->p <= c->nominal)
                REASON(c, "undecided at the budget: faster (one-sided p %.3g <= %.3g) but %.4fx is below %.4f, "
                       "repeated interval [%.4f, %.4f] (%zu vs %zu processes)", c->p, c->nominal, c->ratio,
                       r->min_ratio, c->rci_lo, c->rci_hi, c->n_cand, c->n_base);
            else
                REASON(c, "undecided at the budget: %.4fx, repeated interval [%.4f, %.4f] holds both 1 and %.4f; "
                       "one-sided p %.3g > %.3g (%zu vs %zu processes)", c->ratio, c->rci_lo, c->rci_hi,
                       r->min_ratio, c->p, c->nominal, c->n_cand, c->n_base);
        } else if (c->p <= c->nominal) {
            REASON(c, "open after look %zu: faster (one-sided p %.3g <= %.3g) but %.4fx is below %.4f, repeated "
                   "interval [%.4f, %.4f]", c->looks, c->p, c->nominal, c->ratio, r->min_ratio, c->rci_lo, c->rci_hi);
        } else {
            REASON(c, "open after look %zu: %.4fx, repeated interval [%.4f, %.4f], one-sided p %.3g > %.3g", c->looks,
                   c->ratio, c->rci_lo, c->rci_hi, c->p, c->nominal);
        }
    }
    return BKM_OK;
}
