/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/regress.h
 * The regression gate (`tune regress`): a fixed suite measured process by process against a
 * baseline file or another build.
 */
#ifndef BKM_TUNER_REGRESS_H
#define BKM_TUNER_REGRESS_H

#include "bkm/stats.h"
#include "bkm/tuner/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A fixed suite (small configurations of every workload) measured in several fresh worker
 * processes per workload; one value per process. Two ways to compare:
 *  - against a recorded baseline file: each workload process is paired with a calibration
 *    process (SGEMM 256^3 on one thread; a check keeps the baseline's calibration whatever its
 *    own --threads and --param say) run right before
 *    or after it (alternating, ABBA), and its value is its minimum / the calibration's minimum, so
 *    a machine that is uniformly slower or busier than when the baseline was recorded cancels;
 *  - A/B against another build (`--against TUNE`): the reference build's workers and this
 *    build's run interleaved in a drift-cancelling order (bkm_tune_claim_order) in the same job;
 *    the values are the process minima (ms).
 * A workload regressed when BOTH the Mann-Whitney test on the process values is significant
 * after Holm's correction over the workloads (alpha) AND the Hodges-Lehmann ratio current /
 * reference exceeds 1 + threshold. The worker's noise mark of every process (disturbed or not,
 * bkm_tune_noise_t) is counted per workload and shown (table, JSON, JUnit, the stored gate run)
 * so a verdict can be read against it; it does not change the rule: disturbed processes are
 * counted like the others (the process minimum already discounts most of what a neighbour adds). */
#define BKM_TUNE_REGRESS_THRESHOLD 0.10
#define BKM_TUNE_REGRESS_ALPHA 0.01
#define BKM_TUNE_REGRESS_PROCESSES 8
#define BKM_TUNE_REGRESS_MAX_WL 16
#define BKM_TUNE_REGRESS_FORMAT "bkm-regress-baseline"

/** One workload of the suite and its outcome. */
typedef struct bkm_tune_regress_wl {
    char name[32];                  /**< workload */
    bkm_tune_trial_spec_t spec;     /**< what this build's processes ran (threads, params, protocol) */
    char params[256];               /**< "m=256 n=256 k=256": the parameters, for people */
    double *values;                 /**< this build: one value per process (owned) */
    size_t n;
    double *wl_ms, *cal_ms;         /**< baseline mode: the process medians and their calibration's */
    double *ref_values;             /**< the reference: the baseline's values or the reference build's */
    size_t n_ref;
    int ref_threads;                /**< threads of the reference's processes */
    size_t failed;                  /**< processes that did not give a value (either side) */
    /* Noise marks of the processes that gave a value (the worker's disturbed mark, see
     * bkm_tune_noise_t): shown and stored only; the decision rule above does not use them. */
    size_t disturbed, noise_unknown;        /**< this build's workload processes: disturbed, no mark */
    size_t ref_disturbed, ref_noise_unknown; /**< the other arm: the reference build's processes
                                                  (A/B) or the calibration processes (baseline) */
    char error[256];                /**< the first failure ("" when none) */
    int tested;                     /**< compared (enough values on both sides) */
    double ratio, ratio_lo, ratio_hi; /**< Hodges-Lehmann current / reference, exact rank 95% interval */
    double p, p_holm;
    int regression;
    char verdict[192];
} bkm_tune_regress_wl_t;

/** A regression run: the suite, what was measured, and the comparison. */
typedef struct bkm_tune_regress {
    int ab;                         /**< 1: A/B against a reference build; 0: baseline file */
    bkm_tune_regress_wl_t wl[BKM_TUNE_REGRESS_MAX_WL];
    size_t n_wl;
    bkm_tune_trial_spec_t calib;    /**< the calibration process (baseline mode) */
    int processes;
    double threshold, alpha;
    int regressions;                /**< after bkm_tune_regress_compare */
    /* provenance of the reference (baseline file) */
    char ref_revision[64], ref_host[128], ref_cpu[128], ref_fingerprint[128], ref_created[32];
} bkm_tune_regress_t;

/** How to run the suite. */
typedef struct bkm_tune_regress_cfg {
    const bkm_tune_runner_t *runner;    /**< this build's workers */
    const bkm_tune_runner_t *reference; /**< A/B: the reference build's workers; NULL otherwise */
    const bkm_tune_trial_spec_t *base;  /**< its env (libomp topology correction) goes to every process; may be NULL */
    int pus;                            /**< PUs of this host (at least 1) */
    int threads;                        /**< threads of the workload processes; 0 = the baseline's,
                                             else 1: on a shared machine a multi-threaded process's
                                             time depends on whether the scheduler stacks its
                                             threads on one PU (an LSTM step of 2 threads measured
                                             0.16, 0.26 or 1.34 ms by process; of 1 thread
                                             0.215-0.219 ms), so the default suite is single-threaded
                                             and threads are checked by recording with --threads N */
    const char *const *params;          /**< "key=value" overrides, applied to every workload that has key */
    size_t n_params;
    const char *workloads;              /**< comma-separated subset, NULL = all */
    int processes;                      /**< per workload and side; 0 = BKM_TUNE_REGRESS_PROCESSES */
    uint64_t seed;
    const volatile sig_atomic_t *stop;
    void (*progress)(void *ud, const char *line);
    void *progress_ud;
} bkm_tune_regress_cfg_t;

/** Fill @p r with the fixed suite (every workload, or cfg->workloads), with cfg's threads and
 *  parameters applied; when @p baseline is not NULL the suite is the baseline's (its workloads,
 *  parameters, threads and process count), loaded into r's reference side, and cfg's threads and
 *  parameters override it. BKM_EINVAL names an unknown workload, a parameter that no workload of
 *  the suite has, a bad value, or a malformed baseline. */
int bkm_tune_regress_plan(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, const char *baseline_json,
                          bkm_err_t *err);
/** Measure: every workload's processes (and, in baseline mode, their calibration processes; in A/B
 *  mode the reference build's processes, interleaved). Failed processes are counted and named in
 *  wl->error. @return BKM_OK; BKM_EIO/BKM_EDEP from the runner; BKM_EFAIL when *cfg->stop was
 *  set (a signal). */
int bkm_tune_regress_measure(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err);
/** Compare each workload with its reference (see above); sets r->regressions. */
int bkm_tune_regress_compare(bkm_tune_regress_t *r, double threshold, double alpha, bkm_err_t *err);
/** The recorded baseline as JSON: format, version, the host (@p host_json: {hostname, cpu_model,
 *  fingerprint, isa, topology}), @p revision, created_at @p when, the calibration, and per workload
 *  its spec, values and the medians they came from. */
void bkm_tune_regress_baseline_json(const bkm_tune_regress_t *r, const char *host_json, const char *revision,
                                    const char *when, bkm_buf_t *out);
/** Per-workload results as a JSON array: {workload, params, threads, ref_threads, n, n_ref,
 *  median, ref_median, ratio, ratio_ci95, p, p_holm, regression, verdict}. */
void bkm_tune_regress_results_json(const bkm_tune_regress_t *r, bkm_json_w_t *w);
/** The comparison as a text table. */
void bkm_tune_regress_table(const bkm_tune_regress_t *r, bkm_buf_t *out);
/** The comparison as JUnit XML: one testsuite "bkm.regress", one testcase per workload, a
 *  <failure> for each regression, <error> for a workload that could not be measured. */
void bkm_tune_regress_junit(const bkm_tune_regress_t *r, bkm_buf_t *out);
void bkm_tune_regress_free(bkm_tune_regress_t *r);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_REGRESS_H */
