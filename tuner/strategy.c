/* SPDX-License-Identifier: MIT */
/* Search strategies as ask/tell objects (next/report), so that the same code runs in a live
 * sweep and in replay: grid, random (seeded), successive halving, local (coordinate descent
 * from the default, then a race among the contenders). Every strategy measures the default
 * configuration first. */
#include <math.h>
#include <string.h>

#include "bkm/tuner.h"

enum { S_GRID, S_RANDOM, S_HALVING, S_LOCAL };

static const char *const strategy_names[] = {"grid", "random", "halving", "local", NULL};

struct bkm_tune_strategy {
    int kind;
    const bkm_tune_problem_t *pb;
    size_t budget, spent;
    uint64_t rng;
    double *val;           /* value at the highest round measured; NaN = failed or unknown */
    int *round;            /* highest round measured, -1 = never */
    size_t *order;         /* grid/random: evaluation order; halving: this rung's configurations;
                              local: the line being scanned */
    size_t *perm;          /* local: random order of restart points */
    size_t n_perm, perm_pos;
    size_t n_order, pos;
    int rung;              /* halving */
    size_t cur;            /* local: current point */
    double cur_val;
    int dim, dims_stale;   /* local: dimension being scanned, dimensions without improvement */
    int done;
    int pending;
    int final;        /* local: 1 while racing the contenders */
    size_t reserve;   /* local: budget kept for the race */
    unsigned *n_meas; /* local: processes measured per configuration */
    double *obs;      /* local: their values, RACE_KEEP per configuration */
};

/* local: values kept per configuration (a contender is re-measured at most this often) */
#define RACE_KEEP 16
/* local: half-width of a configuration's interval, in pooled standard deviations of the log of
 * one process's value, divided by sqrt(processes). Chosen from {0.5, 1, 2} (and the race's share
 * from {1/4, 1/3, 1/2, 2/3}) leave-one-recording-out on the non-flat, undisturbed recordings of
 * tests/tuner/data: each choice made on the others met the bar on the held-out eligible
 * recording (docs/measurement.md, "How local's constants were chosen") */
#define RACE_SIGMAS 0.5

const char *const *bkm_tune_strategy_names(void)
{
    return strategy_names;
}

static size_t rng_below(uint64_t *s, size_t n)
{
    return n ? (size_t)(bkm_rng_next(s) % n) : 0;
}

static void shuffle(size_t *v, size_t n, uint64_t *s)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(s, i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* a better than b (NaN is worst) */
static int better(double a, double b)
{
    if (isnan(a))
        return 0;
    return isnan(b) || a < b;
}

int bkm_tune_strategy_create(bkm_tune_strategy_t **out, const char *name, const bkm_tune_problem_t *pb,
                             size_t budget, uint64_t seed, bkm_err_t *err)
{
    bkm_tune_strategy_t *s = NULL;
    int kind = -1, rc;
    if (out == NULL || pb == NULL || name == NULL)
        return bkm_err_set(err, BKM_EINVAL, "strategy_create: NULL argument");
    *out = NULL;
    for (int i = 0; strategy_names[i]; i++)
        if (strcmp(name, strategy_names[i]) == 0)
            kind = i;
    if (kind < 0)
        return bkm_err_set(err, BKM_EINVAL, "unknown strategy '%s' (known: grid, random, halving, local)", name);
    if (pb->n == 0 || pb->default_index >= pb->n || pb->n_dims < 0 || pb->n_dims > BKM_TUNE_MAX_DIMS)
        return bkm_err_set(err, BKM_EINVAL, "strategy %s: empty search space or bad default index", name);
    s = bkm_calloc(1, sizeof *s);
    if (s == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "strategy: out of memory");
    s->kind = kind;
    s->pb = pb;
    s->budget = budget ? budget : pb->n;
    s->rng = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    if (s->rng == 0)
        s->rng = 1;
    s->val = bkm_malloc(pb->n * sizeof *s->val);
    s->round = bkm_malloc(pb->n * sizeof *s->round);
    s->order = bkm_malloc(pb->n * sizeof *s->order);
    s->perm = bkm_malloc(pb->n * sizeof *s->perm);
    s->n_meas = bkm_calloc(pb->n, sizeof *s->n_meas);
    s->obs = bkm_malloc(pb->n * RACE_KEEP * sizeof *s->obs);
    if (!s->val || !s->round || !s->order || !s->perm || !s->n_meas || !s->obs) {
        rc = bkm_err_set(err, BKM_ENOMEM, "strategy: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < pb->n; i++)
        s->val[i] = NAN, s->round[i] = -1;
    /* default first, then the others (shuffled for random, halving and local restarts) */
    s->order[0] = pb->default_index;
    s->n_order = 1;
    for (size_t i = 0; i < pb->n; i++)
        if (i != pb->default_index)
            s->order[s->n_order++] = i;
    if (kind != S_GRID)
        shuffle(s->order + 1, s->n_order - 1, &s->rng);
    if (kind == S_HALVING) {
        size_t n0 = s->budget / 2;
        if (n0 < 3)
            n0 = 3;
        if (n0 > pb->n)
            n0 = pb->n;
        s->n_order = n0;
    }
    if (kind == S_LOCAL) {
        /* half the budget is kept for the race (chosen leave-one-recording-out with RACE_SIGMAS:
         * a quarter or a third raced too little, two thirds searched too little); a search
         * without a race commits to lucky processes (docs/measurement.md) */
        s->reserve = s->budget / 2;
        memcpy(s->perm, s->order, s->n_order * sizeof *s->perm);
        s->n_perm = s->n_order;
        s->perm_pos = 1;
        s->n_order = 0;   /* local builds its lines around the current point */
    }
    s->cur = pb->default_index;
    s->cur_val = NAN;
    s->dim = -1;
    *out = s;
    return BKM_OK;
fail:
    bkm_tune_strategy_free(s);
    return rc;
}

void bkm_tune_strategy_free(bkm_tune_strategy_t *s)
{
    if (s == NULL)
        return;
    bkm_free(s->val);
    bkm_free(s->round);
    bkm_free(s->order);
    bkm_free(s->perm);
    bkm_free(s->n_meas);
    bkm_free(s->obs);
    bkm_free(s);
}

/* halving: after a rung, keep the best third (at least 1) for the next rung at 3x the samples */
static int halving_next_rung(bkm_tune_strategy_t *s)
{
    size_t keep, scale = 1, n = s->n_order;
    for (int r = 0; r <= s->rung; r++)
        scale *= 3;
    if (n <= 1)
        return 0;
    /* sort this rung's configurations by value (insertion sort; rungs are small) */
    for (size_t i = 1; i < n; i++) {
        size_t c = s->order[i], j = i;
        while (j > 0 && better(s->val[c], s->val[s->order[j - 1]])) {
            s->order[j] = s->order[j - 1];
            j--;
        }
        s->order[j] = c;
    }
    keep = (n + 2) / 3;
    if (s->spent + keep * scale > s->budget)
        keep = (s->budget - s->spent) / scale;
    if (keep < 1 || (keep == 1 && s->rung > 0))
        return 0;
    s->n_order = keep;
    s->pos = 0;
    s->rung++;
    return 1;
}

/* local: prepare the scan of the next dimension around cur; 0 when converged */
static int local_next_dim(bkm_tune_strategy_t *s)
{
    const bkm_tune_problem_t *pb = s->pb;
    const int *cc;
    for (;;) {
        if (s->dims_stale >= pb->n_dims)
            return 0;
        s->dim = (s->dim + 1) % (pb->n_dims ? pb->n_dims : 1);
        cc = &pb->coord[s->cur * (size_t)pb->n_dims];
        s->n_order = 0;
        s->pos = 0;
        for (size_t i = 0; i < pb->n; i++) {
            const int *ci = &pb->coord[i * (size_t)pb->n_dims];
            int same = 1;
            if (s->round[i] >= 0 || i == s->cur)
                continue;
            for (int d = 0; d < pb->n_dims && same; d++)
                same = d == s->dim ? ci[d] != cc[d] : ci[d] == cc[d];
            if (same)
                s->order[s->n_order++] = i;
        }
        if (s->n_order > 0)
            return 1;
        s->dims_stale++;
    }
}

/* local: pooled standard deviation of the log of one process's value, over the configurations
 * measured in more than one process (the run-to-run spread seen so far); 0 when none is */
static double race_spread(const bkm_tune_strategy_t *s)
{
    double ss = 0;
    size_t dof = 0;
    for (size_t i = 0; i < s->pb->n; i++) {
        unsigned m = s->n_meas[i] < RACE_KEEP ? s->n_meas[i] : RACE_KEEP;
        const double *x = &s->obs[i * RACE_KEEP];
        double mean = 0;
        if (m < 2 || isnan(s->val[i]))
            continue;
        for (unsigned k = 0; k < m; k++)
            mean += log(x[k]);
        mean /= m;
        for (unsigned k = 0; k < m; k++)
            ss += (log(x[k]) - mean) * (log(x[k]) - mean);
        dof += m - 1;
    }
    return dof ? sqrt(ss / (double)dof) : 0.0;
}

/* local: the interval of configuration i: its estimate (median over its processes) times
 * exp(-+RACE_SIGMAS * spread / sqrt(processes)); side -1 the optimistic end, +1 the pessimistic */
static double race_bound(const bkm_tune_strategy_t *s, size_t i, double spread, int side)
{
    return s->val[i] * exp(side * RACE_SIGMAS * spread / sqrt((double)s->n_meas[i]));
}

/* local: the configuration the race currently favours: the lowest pessimistic bound, so a
 * configuration seen once in a lucky process does not beat one seen fast in several; pb->n if
 * nothing was measured successfully */
static size_t race_leader(const bkm_tune_strategy_t *s, double spread)
{
    size_t h = s->pb->n;
    for (size_t i = 0; i < s->pb->n; i++)
        if (s->n_meas[i] > 0 && !isnan(s->val[i]) &&
            (h == s->pb->n || race_bound(s, i, spread, 1) < race_bound(s, h, spread, 1)))
            h = i;
    return h;
}

/* local: the next process of the race (LUCB): the leader or its strongest challenger (the lowest
 * optimistic bound among the others with room for more processes), whichever has been measured in
 * fewer processes; pb->n when no configuration can be measured again */
static size_t race_next(const bkm_tune_strategy_t *s)
{
    double spread = race_spread(s);
    size_t h = race_leader(s, spread), l = s->pb->n;
    if (h == s->pb->n)
        return h;
    for (size_t i = 0; i < s->pb->n; i++)
        if (i != h && s->n_meas[i] > 0 && s->n_meas[i] < RACE_KEEP && !isnan(s->val[i]) &&
            (l == s->pb->n || race_bound(s, i, spread, -1) < race_bound(s, l, spread, -1)))
            l = i;
    if (s->n_meas[h] < RACE_KEEP && (l == s->pb->n || s->n_meas[h] <= s->n_meas[l]))
        return h;
    return l;
}

/* local: start the race (for the rest of the budget); 0 when there is nothing to race */
static int local_final(bkm_tune_strategy_t *s)
{
    if (s->final || s->reserve == 0 || race_leader(s, 0.0) == s->pb->n)
        return 0;
    s->final = 1;
    return 1;
}

int bkm_tune_strategy_next(bkm_tune_strategy_t *s, bkm_tune_ask_t *ask)
{
    size_t scale = 1;
    if (s == NULL || ask == NULL || s->done || s->pending)
        return 0;
    for (int r = 0; r < s->rung; r++)
        scale *= 3;
    if (s->spent + scale > s->budget) {
        s->done = 1;
        return 0;
    }
    switch (s->kind) {
    case S_GRID:
    case S_RANDOM:
        if (s->pos >= s->n_order) {
            s->done = 1;
            return 0;
        }
        ask->config = s->order[s->pos++];
        break;
    case S_HALVING:
        if (s->pos >= s->n_order) {
            if (!halving_next_rung(s)) {
                s->done = 1;
                return 0;
            }
            return bkm_tune_strategy_next(s, ask);
        }
        ask->config = s->order[s->pos++];
        break;
    case S_LOCAL:
        if (s->final) {
            size_t c = race_next(s);
            if (c == s->pb->n) {
                s->done = 1;
                return 0;
            }
            /* one more process of c at the usual samples: its round is its process number */
            ask->config = c;
            ask->round = (int)s->n_meas[c];
            ask->scale = 1;
            s->pending = 1;
            return 1;
        }
        if (s->round[s->cur] >= 0 && s->budget - s->spent <= s->reserve && s->reserve > 0) {
            if (local_final(s))
                return bkm_tune_strategy_next(s, ask);
            s->done = 1;
            return 0;
        }
        if (s->round[s->cur] < 0) {
            ask->config = s->cur;   /* the default */
            break;
        }
        if (s->pos >= s->n_order) {
            if (s->dim >= 0) {
                /* the scan of s->dim is complete: move to its best point */
                size_t best = s->cur;
                for (size_t i = 0; i < s->n_order; i++)
                    if (better(s->val[s->order[i]], s->val[best]))
                        best = s->order[i];
                if (best != s->cur) {
                    s->cur = best;
                    s->dims_stale = 1;
                } else {
                    s->dims_stale++;
                }
            }
            if (!local_next_dim(s)) {
                /* converged: restart the descent from a random configuration not measured yet */
                while (s->perm_pos < s->n_perm && s->round[s->perm[s->perm_pos]] >= 0)
                    s->perm_pos++;
                if (s->perm_pos >= s->n_perm) {
                    if (local_final(s))
                        return bkm_tune_strategy_next(s, ask);
                    s->done = 1;
                    return 0;
                }
                s->cur = s->perm[s->perm_pos++];
                s->dim = -1;
                s->dims_stale = 0;
                s->n_order = s->pos = 0;
                ask->config = s->cur;
                break;
            }
        }
        ask->config = s->order[s->pos++];
        break;
    default:
        return 0;
    }
    ask->round = s->rung;
    ask->scale = (int)scale;
    s->pending = 1;
    return 1;
}

void bkm_tune_strategy_report(bkm_tune_strategy_t *s, const bkm_tune_ask_t *ask, double value)
{
    if (s == NULL || ask == NULL || ask->config >= s->pb->n || !s->pending)
        return;
    s->pending = 0;
    s->spent += (size_t)(ask->scale > 0 ? ask->scale : 1);
    if (s->kind == S_LOCAL) {
        /* every process counts: the estimate is the median over them; one failed process
         * fails the configuration */
        size_t c = ask->config;
        unsigned m = s->n_meas[c];
        double tmp[RACE_KEEP];
        if (m < RACE_KEEP)
            s->obs[c * RACE_KEEP + m] = value;
        s->n_meas[c] = m + 1;
        if (ask->round > s->round[c])
            s->round[c] = ask->round;
        if (s->round[c] < 0)
            s->round[c] = 0;
        if (isnan(value) || (m > 0 && isnan(s->val[c]))) {
            s->val[c] = NAN;
            return;
        }
        m = m + 1 < RACE_KEEP ? m + 1 : RACE_KEEP;
        memcpy(tmp, &s->obs[c * RACE_KEEP], m * sizeof *tmp);
        s->val[c] = bkm_median(tmp, m);
        return;
    }
    if (ask->round >= s->round[ask->config]) {
        s->round[ask->config] = ask->round;
        s->val[ask->config] = value;
    }
}

size_t bkm_tune_strategy_best(const bkm_tune_strategy_t *s, double *value)
{
    size_t best = s->pb->default_index;
    int best_round = -1;
    if (s->kind == S_LOCAL) {
        size_t h = race_leader(s, race_spread(s));
        if (h == s->pb->n) {
            if (value)
                *value = NAN;
            return best;
        }
        if (value)
            *value = s->val[h];
        return h;
    }
    for (size_t i = 0; i < s->pb->n; i++) {
        if (s->round[i] < 0 || isnan(s->val[i]))
            continue;
        if (s->round[i] > best_round || (s->round[i] == best_round && better(s->val[i], s->val[best]))) {
            best = i;
            best_round = s->round[i];
        }
    }
    if (value)
        *value = best_round >= 0 ? s->val[best] : NAN;
    return best;
}

size_t bkm_tune_strategy_spent(const bkm_tune_strategy_t *s)
{
    return s ? s->spent : 0;
}

void bkm_tune_strategy_spec_scale(bkm_tune_trial_spec_t *spec, int scale)
{
    double work = 1.0, t, timeout;
    long long n;
    if (spec == NULL || scale <= 1)
        return;
    n = (long long)spec->min_samples * scale;
    if (n > BKM_TUNE_SAMPLES_MAX)
        n = BKM_TUNE_SAMPLES_MAX;
    if (spec->min_samples > 0 && n > spec->min_samples)
        work = (double)n / (double)spec->min_samples;
    spec->min_samples = (int)n;
    if (spec->max_samples < spec->min_samples)
        spec->max_samples = spec->min_samples;
    t = spec->min_time_s * scale;
    if (t > BKM_TUNE_TIME_MAX_S)
        t = BKM_TUNE_TIME_MAX_S;
    if (spec->min_time_s > 0 && t / spec->min_time_s > work)
        work = t / spec->min_time_s;
    if (t > spec->min_time_s)
        spec->min_time_s = t;
    /* the timeout grows with the timed work, or a later rung times out where rung 0 did not */
    timeout = spec->timeout_s * work;
    if (timeout > BKM_TUNE_TIMEOUT_MAX_S)
        timeout = BKM_TUNE_TIMEOUT_MAX_S;
    if (timeout > spec->timeout_s)
        spec->timeout_s = timeout;
}
