/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/sweep.h
 * The sweep: search, confirmation round, best-known setting; its plan and summary.
 */
#ifndef BKM_TUNER_SWEEP_H
#define BKM_TUNER_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bkm/stats.h"
#include "bkm/tuner/runner.h"
#include "bkm/tuner/space.h"
#include "bkm/tuner/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_db;

/** Progress of a sweep, passed to the progress callback after every trial. */
typedef struct bkm_tune_progress {
    size_t done, total;        /**< trials finished (this run + resumed) / planned */
    size_t resumed;            /**< of done, taken from the database */
    size_t failed;
    double elapsed_s, eta_s;   /**< eta: NaN when unknown */
    double best_ms;            /**< best median so far, NaN when none */
    char best_label[256];
    char last_label[256];
    const char *last_status;   /**< status of the last trial ("ok", "crashed", ...; "resumed") */
    const char *phase;         /**< "search" or "confirm" */
} bkm_tune_progress_t;

/** Everything a sweep needs (the CLI fills it; nothing here reads the environment). */
typedef struct bkm_tune_sweep_cfg {
    const char *node;                  /**< profile name; "auto" is stored resolved
                                            (bkm_tune_node_resolve) */
    const char *workload;
    const char *strategy;              /**< NULL = BKM_TUNE_STRATEGY_DEFAULT */
    size_t budget;                     /**< search trials; 0 = the whole space for grid, else a
                                            quarter of it, at least 20 (or the whole space if smaller) */
    double time_budget_s;              /**< 0 = none: stop searching after this long, and add no
                                            confirmation block once it has passed (the first block
                                            always runs; the look after the last block spends what is
                                            left of alpha) */
    uint64_t seed;
    int fresh;                         /**< 1: never resume */
    int confirm_top;                   /**< candidates re-measured against the default; 3 */
    int replicates;                    /**< confirmation: fresh worker processes per candidate and
                                            for the default in the first block (and in every further
                                            block), in bkm_tune_claim_order's order;
                                            BKM_TUNE_REPLICATES_DEFAULT */
    int replicates_max;                /**< most processes per side of the sequential confirmation
                                            (bkm/stats.h, "Sequential confirmation"): blocks of
                                            replicates are added while a candidate is undecided, up
                                            to this many and while time_budget_s lasts. 0 = the larger
                                            of BKM_TUNE_REPLICATES_MAX_DEFAULT and replicates;
                                            replicates itself = one look (a fixed design) */
    double min_ratio;                  /**< smallest win claimed (bkm_tune_seq_rule_t); 0 = the
                                            rule's default */
    int rerun_disturbed;               /**< confirmation: a process marked disturbed (base.noise_share)
                                            is run again, up to this many times, and the last attempt
                                            is counted; replaced attempts stay stored at round
                                            position + k x (arms x replicates_max). 0 (default): disturbed
                                            processes are counted as they are (and reported) */
    int aa;                            /**< 1: A/A run: no search; confirm_top (at least 1) copies
                                            of the default are confirmed against the default as if
                                            they were candidates, through the same code; nothing is
                                            stored as best-known; res->significant says whether a
                                            (false) claim would have been made */
    int shard_count;                   /**< 0: the whole sweep. K >= 1: one shard of a sweep spread over
                                            a job array: the search measures only the configurations
                                            i with i % K == shard_index (grid strategy only), then stops:
                                            no confirmation, no best-known setting (the merge job's
                                            unsplit sweep confirms on the merged database) */
    int shard_index;                   /**< 0..shard_count-1 */
    const char *shard_group;           /**< with shard_count: the shards of one sweep share it (the job
                                            array's id); their sweep's uuid is "<group>-<key>", so
                                            `tune merge` folds them into one sweep */
    bkm_tune_trial_spec_t base;        /**< protocol fields (samples, min time, timeout, seed); its env
                                            (the libomp topology correction) goes to every trial */
    char inject[32];                   /**< "" or a fault injected into trial inject_at (only the
                                            test build's worker acts on it, see bkm/trial.h) */
    int inject_at;                     /**< 1-based trial number of this run; 0 = none */
    const char *command;               /**< the command line, stored with the sweep */
    const char *label;                 /**< the user's label (`--label`), stored with the sweep
                                            (a resumed sweep takes the new one); NULL = none
                                            ("A/A" for an A/A run) */
    int64_t host_id;                   /**< bkm_db_host_upsert id of this host; 0 = none */
    const char *git_revision;
    const bkm_tune_runner_t *runner;
    const volatile sig_atomic_t *stop; /**< set non-zero (signal handler) to stop: the running trial
                                            is killed and not stored (the runner's stop too, unless
                                            runner->stop is set); the sweep ends interrupted */
    void (*progress)(void *ud, const bkm_tune_progress_t *p);
    void *progress_ud;
    const bkm_log_t *log;              /**< notes (merged/dropped settings, faults) */
} bkm_tune_sweep_cfg_t;
void bkm_tune_sweep_cfg_defaults(bkm_tune_sweep_cfg_t *cfg);
/** Search trials a sweep of @p n configurations spends with @p strategy (NULL = default) and the
 *  user's @p budget (0 = default: see bkm_tune_sweep_cfg_t.budget); at most n. */
size_t bkm_tune_sweep_budget(const char *strategy, size_t budget, size_t n);
/** Most processes per side of the confirmation: cfg->replicates_max, or when 0 the larger of
 *  BKM_TUNE_REPLICATES_MAX_DEFAULT and cfg->replicates. */
size_t bkm_tune_sweep_replicates_max(const bkm_tune_sweep_cfg_t *cfg);

/** Outcome of a sweep. */
typedef struct bkm_tune_sweep_result {
    int64_t sweep_id;
    int resumed;
    size_t trials, failed, resumed_trials;
    int interrupted;
    int has_best;                      /**< a best setting was derived */
    bkm_tune_config_t best, dflt;
    double best_median_ms, best_ci_lo_ms, best_ci_hi_ms;   /**< median of the per-process
                                            medians and its order-statistic 95% interval */
    double default_median_ms, default_ci_lo_ms, default_ci_hi_ms;
    double speedup;                    /**< Hodges-Lehmann ratio default / best over the
                                            per-process medians (1 when the default stands) */
    double speedup_lo, speedup_hi;     /**< its exact rank 95% interval at the last look, which does
                                            not account for the looks (NaN when none) */
    double speedup_rci_lo, speedup_rci_hi; /**< its repeated confidence interval: simultaneous over
                                            the looks (NaN when none) */
    int significant;                   /**< a claim: best beats the default beyond noise */
    bkm_tune_decision_t decision;      /**< of the sweep: CLAIMED (a winner), NOT_BETTER (every tested
                                            candidate found not better by more than min_ratio allows),
                                            else UNDECIDED */
    double not_better_than;            /**< the largest upper end of the tested candidates' repeated
                                            intervals: none is better than the default by more than
                                            this ratio (NaN when none was tested) */
    int aa;                            /**< an A/A run (cfg->aa): significant = a false claim */
    int replicates;                    /**< processes per side in a block */
    int replicates_max;                /**< most processes per side (resolved) */
    size_t per_side;                   /**< processes per side at the last look */
    size_t looks;                      /**< looks of the sequential confirmation */
    size_t confirm_processes;          /**< confirmation processes counted or re-run (resumed too) */
    char ended[16];                    /**< why measuring stopped: "decided" (nothing open), "max"
                                            (replicates_max reached), "time" (time_budget_s), "" */
    char decisions[640];               /**< one line: each candidate's decision, for people */
    char verdict[320];                 /**< "faster ...", or why the default stands */
    char node[64];                     /**< the node name stored (cfg->node resolved) */
    size_t disturbed;                  /**< processes (trials) marked disturbed, resumed ones included */
    size_t noise_unknown;              /**< ok processes without a mark (no noise evidence) */
    size_t confirm_disturbed;          /**< confirmation processes counted although disturbed */
    size_t reruns;                     /**< disturbed confirmation processes replaced (rerun_disturbed) */
    char *evidence_json;               /**< the claim's evidence (per-process medians of every
                                            arm, order, tests, correction, ratios and intervals),
                                            one JSON object, also stored with the best-known
                                            setting; owned, NULL when no confirmation ran */
} bkm_tune_sweep_result_t;
/** Free what a sweep result owns (evidence_json); the struct may be reused. */
void bkm_tune_sweep_result_clear(bkm_tune_sweep_result_t *res);

/** The node name results are stored and looked up under. "auto" (this host) becomes the name of
 *  the built-in profile @p host matches (bkm_profile_matches_host), else a fingerprint
 *  host-<packages>x<cores per package>x<threads per core>-<isa>, e.g. "host-1x2x1-avx512", so
 *  best-known settings of different hosts do not collide; any other name is copied as it is.
 *  @return BKM_OK; BKM_EINVAL NULL or empty @p node, or a name longer than @p n - 1. */
int bkm_tune_node_resolve_topo(const char *node, const struct bkm_topo *host, char *out, size_t n,
                               bkm_err_t *err);
/** bkm_tune_node_resolve_topo for this host (its topology is opened only for "auto").
 *  @return as above; BKM_EDEP when the host topology cannot be read. */
int bkm_tune_node_resolve(const char *node, char *out, size_t n, bkm_err_t *err);

/** Run the sweep: resume or create it in @p db, ask the strategy for trials, run each through
 *  the trial runner and store it in its own transaction, then the sequential confirmation: the
 *  default and the top candidates, each in blocks of cfg->replicates fresh worker processes, each
 *  block in bkm_tune_claim_order's order (role "confirm", round = 1-based position over all
 *  blocks), a look (bkm_tune_seq_look on the per-process medians) after every block, further blocks
 *  for the default and the open candidates up to cfg->replicates_max; the best-known setting is
 *  stored with that evidence and each candidate's decision. Faulty trials are stored with their status and the
 *  sweep goes on. Free @p res with bkm_tune_sweep_result_clear (also on error).
 *  @return BKM_OK (see res->failed, res->interrupted); BKM_EINVAL bad configuration; BKM_EIO /
 *  BKM_EDEP / BKM_ECORRUPT from the database or the runner. */
int bkm_tune_sweep_run(const bkm_tune_sweep_cfg_t *cfg, const bkm_tune_space_t *space,
                       struct bkm_db *db, bkm_tune_sweep_result_t *res, bkm_err_t *err);

/** Store this host (hostname, CPU model, @p topo as JSON, a "packages p/NUMA nodes n/cores c/
 *  PUs t/ISA" fingerprint) in @p db for bkm_tune_sweep_cfg_t.host_id.
 *  @return BKM_OK; the database's error otherwise. */
int bkm_tune_sweep_host_store(struct bkm_db *db, const struct bkm_topo *topo, int64_t *host_id, bkm_err_t *err);
/** Render the planned sweep (what --dry-run and a host that is not the node show) into @p out:
 *  the space's size, the drops and merges counted by cause, the strategy's budget and @p run_cmd
 *  (the command to run it there). With @p verbose also every note (each merged and dropped
 *  setting) and every configuration; without, a screenful: the causes (at most
 *  BKM_TUNE_PLAN_CAUSES_SHOWN) and a few configurations, the default first. As one pretty JSON
 *  object when @p json (always complete: causes, notes, configurations). @p prof is the node's
 *  profile, @p workload the workload's name. Ends with a newline. */
void bkm_tune_sweep_plan_render(const bkm_tune_space_t *sp, const struct bkm_node_profile *prof,
                                const bkm_tune_sweep_cfg_t *cfg, const char *workload, int host_match,
                                const char *run_cmd, bkm_buf_t *out, int json, int verbose);
/** Causes and configurations the plan shows without verbose. */
#define BKM_TUNE_PLAN_CAUSES_SHOWN 10
#define BKM_TUNE_PLAN_CONFIGS_SHOWN 6
/** Render the outcome of a sweep stored in database @p db (best-known vs default, trial
 *  counts, or how to resume an interrupted one) into @p out, as text or pretty JSON. */
void bkm_tune_sweep_summary_render(const bkm_tune_sweep_result_t *r, const char *db, bkm_buf_t *out, int json);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_SWEEP_H */
