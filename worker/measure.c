/* SPDX-License-Identifier: MIT */
/* The measurement protocol of a trial (docs/measurement.md): warm-up until stable, then timed samples,
 * at least a count and a time, adaptive while the 95% CI of the median is wide; counters around
 * the timed loop. */
#include <math.h>
#include <string.h>

#include "bkm/stats.h"
#include "bkm/worker.h"

/* ---------------------------------------------------------------------------------------- */
/* Measurement protocol                                                                      */

void bkm_tune_samples_free(bkm_tune_samples_t *s)
{
    if (s == NULL)
        return;
    bkm_free(s->warmup_ms);
    bkm_free(s->ms);
    memset(s, 0, sizeof *s);
}

/* Summary of v[0..n) into s via the Stats section; @p tmp holds n doubles. */
static int samples_summarise(const double *v, int n, double *tmp, bkm_tune_samples_t *s, bkm_err_t *err)
{
    bkm_tune_stats_t st;
    int rc = bkm_tune_stats_compute(v, (size_t)n, tmp, &st, err);
    if (rc < 0)
        return rc;
    s->median = st.median;
    s->min = st.min;
    s->max = st.max;
    s->mad = st.mad;
    s->ci_lo = st.ci_lo;
    s->ci_hi = st.ci_hi;
    return BKM_OK;
}

static int ci_is_narrow(const bkm_tune_samples_t *s, double target)
{
    return 0.5 * (s->ci_hi - s->ci_lo) <= target * s->median;
}

/* Hard limit on the samples of one measurement (80 MB of doubles). */
#define MEASURE_MAX_SAMPLES 10000000

/* Double the sample arrays (between two samples, outside any timed iteration). */
static int samples_grow(bkm_tune_samples_t *s, double **tmp, int *cap, bkm_err_t *err)
{
    int ncap = *cap > MEASURE_MAX_SAMPLES / 2 ? MEASURE_MAX_SAMPLES : 2 * *cap;
    double *ms = bkm_realloc(s->ms, (size_t)ncap * sizeof *ms);
    if (ms == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d samples", ncap);
    s->ms = ms;
    ms = bkm_realloc(*tmp, (size_t)ncap * sizeof *ms);
    if (ms == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d samples", ncap);
    *tmp = ms;
    *cap = ncap;
    return BKM_OK;
}

static int time_one(bkm_tune_iter_fn fn, void *ctx, double *ms, bkm_err_t *err)
{
    uint64_t t0 = bkm_now_ns();
    int rc = fn(ctx, err);
    *ms = (double)(bkm_now_ns() - t0) * 1e-6;
    return rc;
}

int bkm_tune_measure(const bkm_tune_trial_spec_t *spec, bkm_tune_iter_fn fn, void *ctx,
                     bkm_tune_counters_t *ctr, bkm_tune_noise_t *noise, int threads, bkm_tune_samples_t *s,
                     bkm_err_t *err)
{
    const int warm_cap = spec->warmup > 0 ? spec->warmup : 1;
    double *tmp = NULL, est_ms, cap_d;
    int rc = BKM_OK, cap, counting = 0;
    uint64_t t_start;

    bkm_tune_samples_free(s);
    s->warmup_ms = bkm_calloc((size_t)warm_cap, sizeof *s->warmup_ms);
    if (s->warmup_ms == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for %d warm-up times", warm_cap);
        goto out;
    }
    /* Warm-up: first touch, caches, oneDNN primitive JIT, thread pool spin-up. */
    t_start = bkm_now_ns();
    while (s->n_warmup < warm_cap) {
        rc = time_one(fn, ctx, &s->warmup_ms[s->n_warmup], err);
        if (rc < 0)
            goto out;
        s->n_warmup++;
        if (s->n_warmup >= 2) {
            double a = s->warmup_ms[s->n_warmup - 2], b = s->warmup_ms[s->n_warmup - 1];
            if (fabs(a - b) <= 0.10 * fmax(a, b)) {
                s->warmup_stable = 1;
                break;
            }
        }
        if ((double)(bkm_now_ns() - t_start) * 1e-9 >= fmax(spec->min_time_s, 1.0))
            break;
    }
    /* Capacity: the larger of max_samples and what min_time needs at the fastest warm-up speed
     * (x2). Allocated here; should the machine speed up, it doubles between two samples, never
     * inside a timed iteration. */
    est_ms = s->warmup_ms[0];
    for (int i = 1; i < s->n_warmup; i++)
        est_ms = fmin(est_ms, s->warmup_ms[i]);
    est_ms = fmax(est_ms, 1e-4);
    cap_d = fmax((double)spec->max_samples, 2.0 * spec->min_time_s * 1e3 / est_ms + spec->min_samples);
    cap = cap_d > MEASURE_MAX_SAMPLES ? MEASURE_MAX_SAMPLES : (int)cap_d;
    s->ms = bkm_calloc((size_t)cap, sizeof *s->ms);
    tmp = bkm_calloc((size_t)cap, sizeof *tmp);
    if (s->ms == NULL || tmp == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for %d samples", cap);
        goto out;
    }
    if (ctr != NULL) {
        rc = bkm_tune_counters_start(ctr, threads, err);
        if (rc < 0)
            goto out;
        counting = 1;
    }
    bkm_tune_noise_begin(noise);   /* each thread reads its own values; nothing inside the loop */
    t_start = bkm_now_ns();
    for (;;) {
        double elapsed_s;
        if (s->n == cap) {
            if (cap >= MEASURE_MAX_SAMPLES) {
                s->stop_reason = "cap";
                break;
            }
            rc = samples_grow(s, &tmp, &cap, err);
            if (rc < 0)
                goto out;
        }
        rc = time_one(fn, ctx, &s->ms[s->n], err);
        if (rc < 0)
            goto out;
        s->n++;
        elapsed_s = (double)(bkm_now_ns() - t_start) * 1e-9;
        if (s->n < spec->min_samples || elapsed_s < spec->min_time_s)
            continue;
        /* The CI is checked every few samples only: summarising sorts all samples. */
        if (s->n >= spec->max_samples || s->n == spec->min_samples || s->n % 5 == 0) {
            rc = samples_summarise(s->ms, s->n, tmp, s, err);
            if (rc < 0)
                goto out;
            if (ci_is_narrow(s, spec->target_ci_rel)) {
                s->stop_reason = "ci";
                break;
            }
            if (s->n >= spec->max_samples) {
                s->stop_reason = "max-samples";
                break;
            }
        }
        if (elapsed_s >= spec->max_time_s) {
            rc = samples_summarise(s->ms, s->n, tmp, s, err);
            if (rc < 0)
                goto out;
            s->stop_reason = ci_is_narrow(s, spec->target_ci_rel) ? "ci" : "max-time";
            break;
        }
    }
    s->total_s = (double)(bkm_now_ns() - t_start) * 1e-9;
    bkm_tune_noise_end(noise);
    if (counting) {
        counting = 0;
        rc = bkm_tune_counters_stop(ctr, err);
        if (rc < 0)
            goto out;
    }
    rc = samples_summarise(s->ms, s->n, tmp, s, err);
out:
    if (counting)
        bkm_tune_counters_stop(ctr, NULL);
    bkm_free(tmp);
    return rc;
}
