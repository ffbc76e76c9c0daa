/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/replay.h
 * Replay: a strategy run against an exhaustive sweep stored in a database, running nothing.
 */
#ifndef BKM_TUNER_REPLAY_H
#define BKM_TUNER_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_db;

/** One seeded replay. */
typedef struct bkm_tune_replay_run {
    uint64_t seed;
    double rel;                /**< the pick, judged on its held-out runs (median of their
                                    medians; best-pass oracle: that pass), / the exhaustive
                                    best; may be < 1 */
    int judged_on_unseen;      /**< 0: the strategy had seen every run of its pick (then judged on
                                    all of them): only with one run per configuration or the
                                    best-pass oracle, since half the runs are held out */
    size_t found_at;           /**< evaluations (trials) spent when the pick was first measured */
    size_t spent;              /**< trials spent in all */
} bkm_tune_replay_run_t;

typedef struct bkm_tune_replay {
    int64_t sweep_id;
    char workload[64], node[32];
    size_t n_configs;          /**< configurations measured ok in the exhaustive sweep */
    size_t runs_min, runs_max; /**< runs (passes, processes) per configuration */
    double best_ms;            /**< exhaustive best: the lowest median of run medians (best-pass
                                    oracle: the lowest best-pass median) */
    double default_rel;        /**< the default's value / best_ms, same oracle: a recording
                                    with default_rel <= 1.05 is flat (the default already wins) */
    size_t budget;             /**< trials per replay */
    size_t n_runs;
    bkm_tune_replay_run_t *runs;  /**< owned */
    size_t n_within;           /**< runs within 5% using <= 25% of the evaluations */
    size_t n_judged_seen;      /**< runs whose pick had no unseen run left */
    double median_rel;         /**< median of runs[].rel: what random search is compared on */
    /* what the recording can test (computed from its runs, whatever the oracle) */
    double run_spread;         /**< pooled standard deviation of log(run median) within a
                                    configuration, over configurations with 2+ runs; NaN: none */
    size_t judge_runs;         /**< runs the pick is judged on (held out), at least: runs_min / 2 */
    double judge_miss;         /**< probability that a pick of the best configuration itself is
                                    judged more than 5% off (normal model of log run, judge =
                                    mean of judge_runs runs: optimistic for 3+, whose median is
                                    wider); 1 when nothing is held out */
    size_t passes_needed;      /**< fewest runs per configuration for judge_miss <= 10% */
    size_t n_passes;           /**< distinct sweeps (passes) among the runs */
    size_t n_disturbed;        /**< passes whose runs were typically (geometric mean) more than
                                    1.10x the fastest run of their configuration */
    double worst_pass;         /**< the highest such geometric mean */
    char verdict[16];          /**< "flat" (default_rel <= 1.05), else "disturbed" (n_disturbed >
                                    0), else "judge-limited" (judge_miss > 10%: the bar of 45/50
                                    within 5% is out of reach of any strategy), else "eligible" */
} bkm_tune_replay_t;

/** How a replay turns the stored runs into evaluations and judgements. */
#define BKM_TUNE_REPLAY_UNSEEN_RUNS 0 /**< honest: an evaluation is ONE run (one worker process,
                                           its median), so the strategy sees the run-to-run
                                           spread; per seed and configuration its runs are put in
                                           a random order, the first half (rounded down) held out
                                           and never returned, the others returned in that order,
                                           each once before any again; the pick is judged on the
                                           median of its held-out runs (the same number for every
                                           strategy); the exhaustive best is the lowest median of
                                           run medians */
#define BKM_TUNE_REPLAY_BEST_PASS 1   /**< the older oracle: per configuration only the pass with
                                           the lowest median counts ("load only adds time"); an
                                           evaluation is the median of a bootstrap resample of its
                                           samples (scale x n), the pick is judged on that pass */

/** Replay strategy @p strategy with @p budget (0 = 25% of the configurations) for seeds
 *  1..@p seeds against the exhaustive sweep @p sweep_id of @p db; 0 = the sweep with the most ok
 *  search trials together with every other sweep of the same node and workload in @p db
 *  (repeated passes of one exhaustive sweep recorded at different times: each pass of a
 *  configuration is one run). @p oracle: BKM_TUNE_REPLAY_UNSEEN_RUNS or _BEST_PASS (above).
 *  @return BKM_OK; BKM_EINVAL (unknown strategy or oracle, no such sweep, too few
 *  configurations); database errors. Free with bkm_tune_replay_free. */
int bkm_tune_replay_run(struct bkm_db *db, int64_t sweep_id, const char *strategy, size_t budget,
                        size_t seeds, int oracle, bkm_tune_replay_t *out, bkm_err_t *err);
void bkm_tune_replay_free(bkm_tune_replay_t *r);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_REPLAY_H */
