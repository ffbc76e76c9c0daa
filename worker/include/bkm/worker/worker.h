/* SPDX-License-Identifier: MIT */
/** @file bkm/worker/worker.h
 * The worker (`tune worker`): the code that runs inside the measured process of a bkm trial:
 * plan and binding check, workload, the measurement protocol, counters, noise evidence, and ONE
 * JSON object for the parent.
 */
#ifndef BKM_WORKER_WORKER_H
#define BKM_WORKER_WORKER_H

#include "bkm/trial.h"
#include "bkm/worker/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_aff_env;

/** What the worker gets from its CLI layer. */
typedef struct bkm_tune_worker_cfg {
    bkm_tune_trial_spec_t spec;
    const struct bkm_aff_env *aff_env; /**< this process's affinity variables, read by the CLI;
                                            NULL = none set */
    int omp_num_threads;               /**< OMP_NUM_THREADS as read by the CLI, 0 if unset */
} bkm_tune_worker_cfg_t;

/** Trial defaults of the MPI training workload: a short run instead of the 10 epochs of
 *  `tune train` (one epoch of BKM_TUNE_TRAIN_STEPS global batches, evaluated on
 *  BKM_TUNE_TRAIN_TEST images) unless the trial's parameters set epochs, train_limit or
 *  test_limit. */
#define BKM_TUNE_TRAIN_STEPS 100
#define BKM_TUNE_TRAIN_TEST 1000

/** MPI training trials (spec.ranks >= 1, one worker per rank under the launcher): the short
 *  training run (BKM_TUNE_TRAIN_STEPS) of bkm_train_run, timed per training step; rank 0 writes
 *  the JSON, the other ranks nothing. samples_ms holds each rank's median step time (one value
 *  per rank, rank order); median_ms is their median, max_ms their maximum; "binding" holds the
 *  per-rank results ({"ranks": [{rank, host, cpus, step_median_ms}], "ranks_share_cpus",
 *  "median_ms", "max_ms"}). Binding verified per rank: ranks on one host must not share CPUs
 *  (P > 1), and each rank must hold at least spec.threads CPUs; otherwise BKM_EVERIFY with the
 *  JSON. Test builds: spec.inject = "killrank1" makes rank 1 SIGKILL itself once MPI runs
 *  (rank 0 goes on into the training run). */
/** The worker's protocol, in this order: topology, plan from the environment (before any
 *  OpenMP call), binding probe with spec.threads threads and comparison with the plan, workload
 *  creation (untimed), warm-up (>= 1 iteration, until two consecutive iterations are within 10%
 *  or spec.warmup), timed samples (>= min_samples and >= min_time_s; more, up to max_samples,
 *  while the 95% CI of the median is wider than target_ci_rel), PAPI counters around the timed
 *  loop, workload check. Writes ONE JSON object to @p out.
 *  Test builds only (compiled with BKM_TEST_HOOKS: the tune_testhooks executable, never the
 *  shipped tune): spec.inject = "segv", "abort", "hang", "fail", "badjson", "mismatch" is a
 *  fault injected after the binding check.
 *  @return BKM_OK; BKM_EVERIFY on a binding mismatch (out holds the JSON with plan vs actual);
 *          BKM_EINVAL bad workload/param (named); BKM_EDEP/BKM_ENOTSUP from dependencies. */
int bkm_tune_worker_run(const bkm_tune_worker_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_WORKER_WORKER_H */
