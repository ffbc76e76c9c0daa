/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/strategy.h
 * Search strategies over a space (grid, random, halving, local).
 */
#ifndef BKM_TUNER_STRATEGY_H
#define BKM_TUNER_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/trial.h"
#include "bkm/tuner/space.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a strategy sees of a space: n configurations with coordinates (value index per
 *  dimension), the default one. Live sweeps build it from a bkm_tune_space_t, replay from the
 *  configurations stored in a database. */
typedef struct bkm_tune_problem {
    size_t n;
    int n_dims;
    const int *coord;          /**< n x n_dims, row-major */
    size_t default_index;
} bkm_tune_problem_t;

/** One evaluation a strategy asks for. Its cost in trials is @c scale (samples multiplier). */
typedef struct bkm_tune_ask {
    size_t config;
    int round;                 /**< 0 for a first measurement; halving rung 1, 2, ... after; local: the
                                    process's number (1, 2, ... for the race's re-measurements) */
    int scale;                 /**< samples multiplier (1, 3, 9...) */
} bkm_tune_ask_t;

typedef struct bkm_tune_strategy bkm_tune_strategy_t;

/** Names: "grid", "random", "halving", "local".
 *  grid: every configuration in order; random: seeded permutation; halving: screen budget/2
 *  configurations, re-measure the best third at 3x the samples (and so on while the budget
 *  lasts); local: coordinate descent from the default (each dimension's line around the current
 *  point, move to its best, until a full pass improves nothing) and random restarts, each
 *  configuration measured in one process, for the first half of the budget; then a race for the
 *  second half: one more process at a time (scale 1, round = the process's number) of the leader
 *  or of its strongest challenger, whichever has fewer processes (LUCB). A configuration's value
 *  is the median over its processes, its interval that value times exp(-+0.5 s / sqrt(processes)),
 *  s the pooled standard deviation of log(process value) over the configurations measured more
 *  than once (the run-to-run spread seen so far); the leader, and the pick, is the configuration
 *  with the lowest upper end, so one lucky process does not win against several fast ones.
 *
 *  The default is chosen with `tune replay` (50 seeds, 25% of the evaluations, the unseen-runs
 *  oracle: a configuration's runs returned without replacement, half of them held out as the
 *  judge) on the exhaustive sweeps of tests/tuner/data; its two constants (the race's half of
 *  the budget, the interval's 0.5 sigma) were validated leave-one-recording-out (docs/measurement.md,
 *  "How local's constants were chosen"); tests/tuner/test_replay.sh holds it to the bar on
 *  every recording that can test it. Without the race local committed to lucky processes. */
#define BKM_TUNE_STRATEGY_DEFAULT "local"
const char *const *bkm_tune_strategy_names(void);
/** Create strategy @p name over @p pb with a @p budget in trials (cost units; 0 = all n) and a
 *  @p seed (random choices). The problem must outlive the strategy. Every strategy evaluates
 *  the default configuration first. BKM_EINVAL names an unknown strategy. */
int bkm_tune_strategy_create(bkm_tune_strategy_t **s, const char *name, const bkm_tune_problem_t *pb,
                             size_t budget, uint64_t seed, bkm_err_t *err);
void bkm_tune_strategy_free(bkm_tune_strategy_t *s);
/** Next evaluation. @return 1 with *ask filled, 0 when the strategy is done (budget spent,
 *  space exhausted or converged). Each ask must be answered by report before the next call. */
int bkm_tune_strategy_next(bkm_tune_strategy_t *s, bkm_tune_ask_t *ask);
/** Report the objective (median ms; smaller is better; NaN = the trial failed). */
void bkm_tune_strategy_report(bkm_tune_strategy_t *s, const bkm_tune_ask_t *ask, double value);
/** Best configuration so far (by the value at its highest round; local: the race's leader, the
 *  lowest upper end of the interval over its processes), or the default when none succeeded;
 *  *value (may be NULL) gets its value (local: the median over its processes). */
size_t bkm_tune_strategy_best(const bkm_tune_strategy_t *s, double *value);
/** Trials spent so far (sum of ask scales). */
size_t bkm_tune_strategy_spent(const bkm_tune_strategy_t *s);
/** Turn @p spec into the trial an ask of @p scale (> 1: a later halving rung) runs: min_samples and min_time_s times @p scale, each clamped to its limit
 *  (BKM_TUNE_SAMPLES_MAX, BKM_TUNE_TIME_MAX_S); max_samples raised to min_samples; timeout_s
 *  times the factor by which the timed work actually grew, clamped to BKM_TUNE_TIMEOUT_MAX_S. A
 *  spec that validated still validates, at every rung. @p scale <= 1 changes nothing. */
void bkm_tune_strategy_spec_scale(bkm_tune_trial_spec_t *spec, int scale);

/** Build the strategy's view of @p space. @p coord gets n x n_dims ints (bkm_free). */
int bkm_tune_space_problem(const bkm_tune_space_t *space, bkm_tune_problem_t *pb, int **coord,
                           bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_STRATEGY_H */
