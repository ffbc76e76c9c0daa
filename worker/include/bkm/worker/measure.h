/* SPDX-License-Identifier: MIT */
/** @file bkm/worker/measure.h
 * The measurement protocol inside a worker: warm-up, timed samples, counters and noise
 * snapshots around the timed loop.
 */
#ifndef BKM_WORKER_MEASURE_H
#define BKM_WORKER_MEASURE_H

#include "bkm/trial.h"
#include "bkm/worker/counters.h"
#include "bkm/worker/noise.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One timed unit of work (one workload iteration). Must not allocate. */
typedef int (*bkm_tune_iter_fn)(void *ctx, bkm_err_t *err);

/** Samples of one measurement and their summary (ms). Zero-initialise; free with
 *  bkm_tune_samples_free. */
typedef struct bkm_tune_samples {
    double *warmup_ms;           /**< every warm-up iteration, in order (owned) */
    int n_warmup;
    int warmup_stable;           /**< 1: the last two warm-up iterations were within 10% */
    double *ms;                  /**< every timed sample, in order (owned) */
    int n;
    double total_s;              /**< wall time of the timed loop */
    double median, min, max, mad, ci_lo, ci_hi; /**< 95% CI of the median (order statistics) */
    const char *stop_reason;     /**< "ci", "max-samples", "max-time", "cap" (static string) */
} bkm_tune_samples_t;

/** Run the protocol of docs/measurement.md on @p fn: warm-up (>= 1 iteration, until two consecutive
 *  iterations are within 10% or spec->warmup iterations), then timed samples with bkm_now_ns,
 *  >= spec->min_samples and >= spec->min_time_s, continued up to spec->max_samples and
 *  spec->max_time_s while the 95% CI half-width exceeds spec->target_ci_rel x median. Warm-up
 *  also ends once it has taken max(min_time_s, 1 s) (a multi-second training step warms once).
 *  The sample array is allocated before the timed loop (sized from the fastest warm-up
 *  iteration) and, if that was too small, doubled between two samples, never inside a timed
 *  iteration; stop_reason "cap" only at 1e7 samples.
 *  @p ctr (may be NULL) is started with @p threads threads just before the timed loop and
 *  stopped just after it; @p noise (may be NULL; opened for @p threads threads) takes its
 *  snapshots inside those (bkm_tune_noise_begin/end). @return BKM_OK or the first error of @p fn / the counters. */
int bkm_tune_measure(const bkm_tune_trial_spec_t *spec, bkm_tune_iter_fn fn, void *ctx,
                     bkm_tune_counters_t *ctr, bkm_tune_noise_t *noise, int threads, bkm_tune_samples_t *out,
                     bkm_err_t *err);
void bkm_tune_samples_free(bkm_tune_samples_t *s);

#ifdef __cplusplus
}
#endif
#endif /* BKM_WORKER_MEASURE_H */
