/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/regress.h
 * The regression gate (`tune regress`): a fixed suite measured process by process against a
 * baseline file or another build.
 */
#ifndef BKM_TUNER_REGRESS_H
#define BKM_TUNER_REGRESS_H

#include <signal.h>
#include <stdint.h>

#include "bkm/stats.h"
#include "bkm/tuner/program.h"
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
 * The comparison is the sequential confirmation of the sweeps (bkm/stats.h, "Sequential
 * confirmation"), with this build's values as the "default" and the reference's as the candidate:
 * a workload regressed when BOTH the one-sided Mann-Whitney p (this build slower) is at most the
 * level of its look (alpha spent over the looks, Holm over the workloads) AND the Hodges-Lehmann
 * ratio current / reference is at least 1 + threshold; it is "ok: not slower by more than X%"
 * when the repeated confidence interval of the ratio ends below 1 + threshold, else undecided
 * (and passes). With processes_max above processes the workloads still undecided after a block
 * get another block of processes, up to processes_max. The worker's noise mark of every process
 * (disturbed or not, bkm_tune_noise_t) is counted per workload and shown (table, JSON, JUnit, the
 * stored gate run) so a verdict can be read against it; it does not change the rule: disturbed
 * processes are counted like the others (the process minimum already discounts most of what a
 * neighbour adds). */
#define BKM_TUNE_REGRESS_THRESHOLD 0.10
#define BKM_TUNE_REGRESS_ALPHA 0.01
#define BKM_TUNE_REGRESS_PROCESSES 8
#define BKM_TUNE_REGRESS_MAX_WL 16
#define BKM_TUNE_REGRESS_FORMAT "bkm-regress-baseline"

/** One workload of the suite and its outcome. */
typedef struct bkm_tune_regress_wl {
    char name[64];                  /**< workload (a program's: the name it is stored under) */
    int program;                    /**< 1: the user's program (cfg->program), each process one run of it */
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
    double ratio, ratio_lo, ratio_hi; /**< Hodges-Lehmann current / reference, exact rank 95% interval
                                           (at the last look, not accounting for the looks) */
    double rci_lo, rci_hi;          /**< its repeated confidence interval (simultaneous over the looks) */
    double p;                       /**< one-sided Mann-Whitney p that this build is slower */
    double nominal;                 /**< the level p was held to at its last look */
    bkm_tune_decision_t decision;   /**< CLAIMED: a regression; NOT_BETTER: not slower by more than
                                         threshold; UNDECIDED; FAILED: not compared */
    size_t looks;                   /**< blocks of processes this workload was measured in */
    size_t *n_at, *n_ref_at;        /**< values of each side after each of them (owned) */
    int regression;
    char verdict[224];
} bkm_tune_regress_wl_t;

/** A regression run: the suite, what was measured, and the comparison. */
typedef struct bkm_tune_regress {
    int ab;                         /**< 1: A/B against a reference build; 0: baseline file */
    bkm_tune_regress_wl_t wl[BKM_TUNE_REGRESS_MAX_WL];
    size_t n_wl;
    bkm_tune_trial_spec_t calib;    /**< the calibration process (baseline mode) */
    int processes;                  /**< per workload and side in a block */
    int processes_max;              /**< most per workload and side (processes: one look) */
    size_t looks;                   /**< blocks measured */
    double threshold, alpha;
    int regressions;                /**< after bkm_tune_regress_compare */
    /* provenance of the reference (baseline file) */
    char ref_revision[64], ref_host[128], ref_cpu[128], ref_fingerprint[128], ref_created[32];
    /* a program's suite: the executable's SHA-256 now and in the baseline (a new build of the
     * program is what a check of it measures), and the runtime it loads */
    char exe_sha256[65], ref_exe_sha256[65];
    char runtime[32];
} bkm_tune_regress_t;

/** How to run the suite. */
typedef struct bkm_tune_regress_cfg {
    const bkm_tune_runner_t *runner;    /**< this build's workers */
    const bkm_tune_runner_t *reference; /**< A/B: the reference build's workers; NULL otherwise */
    const bkm_tune_runner_t *program;   /**< non-NULL (its ->program set): the suite is the user's
                                             program alone, each of its processes one run of it
                                             (wall time, or its --metric: the fastest sample),
                                             paired with a calibration process of runner, as for
                                             bkm's workloads; a baseline of it records its argv,
                                             metric and executable hash, and a check runs the same
                                             argv and metric (the executable may be a new build:
                                             that is what is checked). Not with reference. */
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
    int processes;                      /**< per workload and side in a block; 0 = BKM_TUNE_REGRESS_PROCESSES */
    int processes_max;                  /**< most per workload and side: blocks are added for the
                                             workloads still undecided; 0 = processes (one look) */
    double threshold, alpha;            /**< the rule of the looks between blocks (as
                                             bkm_tune_regress_compare's); 0 = the defaults */
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
 *  mode the reference build's processes, interleaved), in blocks of cfg->processes per side; after
 *  each block the workloads still undecided (cfg->threshold, cfg->alpha) get another, up to
 *  cfg->processes_max. Failed processes are counted and named in wl->error. @return BKM_OK;
 *  BKM_EIO/BKM_EDEP from the runner; BKM_EFAIL when *cfg->stop was set (a signal);
 *  BKM_EINVAL for processes_max below processes. */
int bkm_tune_regress_measure(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err);
/** Compare each workload with its reference (see above) over the looks that were taken (the
 *  values after each block); sets r->regressions. */
int bkm_tune_regress_compare(bkm_tune_regress_t *r, double threshold, double alpha, bkm_err_t *err);
/** The recorded baseline as JSON: format, version, the host (@p host_json: {hostname, cpu_model,
 *  fingerprint, isa, topology}), @p revision, created_at @p when, the calibration, and per workload
 *  its spec, values and the medians they came from; a program's workload (@p program, NULL for
 *  bkm's suite) also its "program": argv, exe_sha256, runtime, metric, metric_unit, metric_higher. */
void bkm_tune_regress_baseline_json(const bkm_tune_regress_t *r, const bkm_tune_program_t *program,
                                    const char *host_json, const char *revision, const char *when, bkm_buf_t *out);
/** Per-workload results as a JSON array: {workload, params, threads, ref_threads, n, n_ref,
 *  median, ref_median, ratio, ratio_ci95, ratio_rci, p, nominal_level, decision, looks, regression,
 *  verdict, ...}. */
void bkm_tune_regress_results_json(const bkm_tune_regress_t *r, bkm_json_w_t *w);
/** The comparison as a text table. */
void bkm_tune_regress_table(const bkm_tune_regress_t *r, bkm_buf_t *out);
/** The comparison as JUnit XML: one testsuite "bkm.regress", one testcase per workload, a
 *  <failure> for each regression, <error> for a workload that could not be measured. */
void bkm_tune_regress_junit(const bkm_tune_regress_t *r, bkm_buf_t *out);
void bkm_tune_regress_free(bkm_tune_regress_t *r);

/* ---------------------------------------------------------------------------------------- */
/* The whole `tune regress` workflow behind one call: the mode rules, the suite planned and
 * checked against this host, the MPI launcher, the measurement, the comparison, the texts to
 * print and to write, and the run stored as the gate's history. The caller parses the command
 * line, reads the baseline file, catches the signals, writes the outputs and prints. */

/** A regression run as its command line asks for it. Exactly one mode: record, baseline_path
 *  (with baseline_text) or against. */
typedef struct bkm_tune_regress_job {
    int record;                         /**< --record: measure and produce a baseline */
    const char *output;                 /**< -o FILE: only with record (the caller writes it) */
    const char *baseline_path;          /**< --baseline FILE: its name (messages, the reference) */
    const char *baseline_text;          /**< its contents, read by the caller */
    const char *against;                /**< --against TUNE: the other build's executable */
    const char *junit;                  /**< --junit OUT: a check writes JUnit XML (the caller writes it) */
    int json;                           /**< a check's report as JSON instead of the table */
    int threads, processes;             /**< as bkm_tune_regress_cfg_t */
    int processes_max;                  /**< as bkm_tune_regress_cfg_t; a check only (0 = processes) */
    const char *const *params;
    size_t n_params;
    const char *workloads;
    double threshold, alpha;            /**< of the comparison */
    uint64_t seed;                      /**< of the measurement order */
    const bkm_tune_runner_t *runner;    /**< this build's workers; its stop flag is the job's */
    const bkm_tune_program_t *program;  /**< -- CMD: the user's program is the suite (see
                                             bkm_tune_regress_cfg_t.program); NULL: bkm's suite */
    const bkm_tune_trial_spec_t *base;  /**< environment for every process (libomp topology
                                             correction); may be NULL */
    char *const *environ;               /**< the environment the run measures under (bkm_tune_env_check) */
    const char *path;                   /**< PATH, for the MPI launcher (bkm_tune_launcher_choose) */
    const char *slurm_job_id;           /**< SLURM_JOB_ID, ditto; NULL outside an allocation */
    const char *hostname;               /**< this host's name (baseline, gate history) */
    const char *revision;               /**< this build's revision */
    const char *when;                   /**< now, ISO-8601 UTC: a baseline's created_at */
    const char *db_path;                /**< results database of the gate's history */
    const volatile sig_atomic_t *stop;  /**< set by a signal: the measurement winds down */
    void (*progress)(void *ud, const char *line);
    void *progress_ud;
} bkm_tune_regress_job_t;

/** What a regression run found. */
typedef enum bkm_tune_regress_verdict {
    BKM_TUNE_REGRESS_RECORDED = 0,      /**< --record: the baseline is in outcome.baseline */
    BKM_TUNE_REGRESS_PASS,              /**< no workload regressed, every one was compared */
    BKM_TUNE_REGRESS_REGRESSION,        /**< at least one workload regressed */
    BKM_TUNE_REGRESS_INCOMPLETE,        /**< none regressed, but some could not be compared */
} bkm_tune_regress_verdict_t;

/** The outcome of bkm_tune_regress_job_run: texts the caller prints or writes. Zero-initialise;
 *  free with bkm_tune_regress_outcome_free (after a failure too: notes may explain it). */
typedef struct bkm_tune_regress_outcome {
    bkm_tune_regress_verdict_t verdict;
    int regressions;
    bkm_buf_t report;                   /**< a check: the table with its head and verdict line, or
                                             the JSON document (job->json), for the standard output */
    bkm_buf_t baseline;                 /**< --record: the baseline JSON, for -o FILE */
    bkm_buf_t junit;                    /**< a check with job->junit: the JUnit XML */
    bkm_buf_t notes;                    /**< lines for people (standard error), each ending in '\n':
                                             why workloads failed, a gate run that was not stored */
    char summary[256];                  /**< --record: "N workloads x P processes, host FP, revision R" */
    bkm_tune_regress_t *run;            /**< the suite and its figures (owned) */
} bkm_tune_regress_outcome_t;

/** The mode rules of @p job, before anything is read or run: exactly one mode; --record needs
 *  -o and takes neither --junit nor --json; -o is only for --record; an --against that is not an
 *  executable. @return BKM_OK; BKM_EINVAL naming the rule ("give exactly one of --record,
 *  --baseline FILE, --against TUNE", "--record needs -o FILE", ...); BKM_EDEP for --against. */
int bkm_tune_regress_job_check(const bkm_tune_regress_job_t *job, bkm_err_t *err);

/** Run @p job: bkm_tune_regress_job_check, this host's topology, the suite (bkm_tune_regress_plan;
 *  a baseline of another topology or ISA is refused), the MPI launcher when an MPI workload is in
 *  it, every workload's spec checked against this host, the measurement, then for --record the
 *  baseline (refused when a workload has fewer than 3 process values: notes name them) and for
 *  a check the comparison, its texts and the gate run stored in job->db_path (when that fails, a
 *  warning in notes; the verdict stands). @return BKM_OK with @p out filled; BKM_EINVAL (a mode
 *  rule, the suite or a workload refused: err names it); BKM_ENOTSUP (a baseline of another
 *  machine); BKM_EDEP (no launcher, --against, a runner error, a baseline not written);
 *  BKM_EFAIL (stopped by a signal); others from the libraries. */
int bkm_tune_regress_job_run(const bkm_tune_regress_job_t *job, bkm_tune_regress_outcome_t *out, bkm_err_t *err);

/** The verdict's name: "recorded", "pass", "regression", "incomplete". */
const char *bkm_tune_regress_verdict_name(bkm_tune_regress_verdict_t v);

/** Release what @p out holds (NULL-safe; a zeroed outcome is fine). */
void bkm_tune_regress_outcome_free(bkm_tune_regress_outcome_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_REGRESS_H */
