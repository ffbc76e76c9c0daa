/* SPDX-License-Identifier: MIT */
/** @file bkm/trial.h
 * The contract between the tuner (the parent) and a trial process: what one trial is
 * (bkm_tune_trial_spec_t, its JSON both ways, its limits and checks), which variables of the
 * parent's environment reach a trial, and the worker's exit codes and result descriptor. Both
 * sides use it: the parent (bkm/tuner.h) builds and checks specs and runs trials; a worker
 * (bkm/worker.h) reads its spec and measures. Nothing here runs a process or measures.
 *
 * Error convention: see bkm/common.h. Nothing here reads the environment: callers pass it in.
 */
#ifndef BKM_TRIAL_H
#define BKM_TRIAL_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default threshold of the worker's "disturbed" mark (spec.noise_share): share of the timed region
 *  (0..1) in which the trial's threads waited on a run queue or were stolen from. */
#define BKM_TUNE_NOISE_SHARE_DEFAULT 0.10

#define BKM_TUNE_KV_MAX 32
#define BKM_TUNE_STDERR_TAIL 4096

/* A trial's environment variables and workload parameters are bkm_kv_t (bkm/common.h). */

/** Everything one trial needs: a plain value, copyable. bkm_tune_trial_spec_defaults fills
 *  the protocol defaults. */
typedef struct bkm_tune_trial_spec {
    char workload[64];           /**< registry name: "gemm", "conv2d", "alexnet", ... */
    char backend[16];            /**< "native", "onednn", or "" = the workload's default */
    char compare[16];            /**< "" or a second backend the worker times step for step against
                                      backend after the measurement (tune run --compare) */
    int threads;                 /**< OpenMP team size (exported as OMP_NUM_THREADS) */
    bkm_kv_t env[BKM_TUNE_KV_MAX]; /**< the trial's OpenMP/affinity variables */
    int n_env;
    bkm_kv_t params[BKM_TUNE_KV_MAX]; /**< workload parameters ("m"="256") */
    int n_params;
    int warmup;                  /**< cap on warm-up iterations (>= 1 is always run); default 20 */
    int min_samples;             /**< default 5 */
    int max_samples;             /**< adaptive cap; default 50 */
    double min_time_s;           /**< timed loop runs at least this long; default 0.5 */
    double max_time_s;           /**< no adaptive repetition past this (min_samples and min_time_s
                                      still hold); default 30 */
    double target_ci_rel;        /**< stop once the 95% CI half-width <= this x median; 0.05 */
    uint64_t seed;               /**< workload data seed; default 1 */
    char counters[512];          /**< event list, "" = default, "none" = off */
    double noise_share;          /**< a process whose threads waited or were stolen from for more
                                      than this share of the timed region is marked disturbed
                                      (bkm_tune_noise_t); default BKM_TUNE_NOISE_SHARE_DEFAULT */
    double timeout_s;            /**< wall limit of the worker; default 600 */
    int ranks;                   /**< 0: one worker process (every workload but the MPI training);
                                      P >= 1: the MPI training workload (BKM_TUNE_TRAIN_WORKLOAD):
                                      the runner starts P workers under the MPI launcher
                                      (bkm_tune_runner_t.launcher), each bound to its own
                                      `threads` cores; at most BKM_TUNE_RANKS_MAX */
    char inject[32];             /**< "" or a fault to inject (see bkm_tune_worker_run): only the
                                      test build of the worker (tune_testhooks) acts on it; the
                                      shipped worker refuses a trial that names one */
} bkm_tune_trial_spec_t;

/** The workload that runs as an MPI job of spec.ranks processes (synchronous-SGD training). */
#define BKM_TUNE_TRAIN_WORKLOAD "fmnist-sgd"
/** Most ranks of one trial. */
#define BKM_TUNE_RANKS_MAX 1024
/** 1 if @p workload runs as an MPI job (BKM_TUNE_TRAIN_WORKLOAD). */
int bkm_tune_workload_is_mpi(const char *workload);

/** Limits of a trial spec, as bkm_tune_trial_spec_validate enforces them: samples (min and max)
 *  1..BKM_TUNE_SAMPLES_MAX, min/max time 0..BKM_TUNE_TIME_MAX_S, timeout (0, BKM_TUNE_TIMEOUT_MAX_S].
 *  Options are checked against them before anything is written, and a strategy's scaled trial
 *  (bkm_tune_strategy_spec_scale) is clamped to them. */
#define BKM_TUNE_SAMPLES_MAX 100000
#define BKM_TUNE_TIME_MAX_S 86400.0
#define BKM_TUNE_TIMEOUT_MAX_S (7 * 86400.0)

/** Fill @p spec with the protocol defaults (no workload, threads = 1). */
void bkm_tune_trial_spec_defaults(bkm_tune_trial_spec_t *spec);
/** Append KEY=VALUE to spec->env (replacing an earlier KEY). BKM_EINVAL names a bad or
 *  over-long key/value or a full table. */
int bkm_tune_trial_spec_setenv(bkm_tune_trial_spec_t *spec, const char *key, const char *value,
                               bkm_err_t *err);
/** Parse "key=value" and append it to spec->params (replacing an earlier key). */
int bkm_tune_trial_spec_param(bkm_tune_trial_spec_t *spec, const char *key_eq_value, bkm_err_t *err);
/** Check ranges (threads >= 1, samples, times, non-empty workload); BKM_EINVAL names the field. */
int bkm_tune_trial_spec_validate(const bkm_tune_trial_spec_t *spec, bkm_err_t *err);
/** Serialise / parse the spec (the runner passes it to the worker as JSON). */
void bkm_tune_trial_spec_to_json(const bkm_tune_trial_spec_t *spec, bkm_json_w_t *w);
int bkm_tune_trial_spec_from_json(const char *json, bkm_tune_trial_spec_t *spec, bkm_err_t *err);

/** 1 if @p name is a variable the runner strips from the inherited environment: OMP_*, KMP_*,
 *  GOMP_* (OMP_NUM_THREADS included). */
int bkm_tune_env_is_openmp(const char *name);

/* What of the user's environment reaches a worker (the design note of trial.c says why):
 *  - OMP_*, KMP_*, GOMP_*: never inherited; the trial's own settings are set exactly;
 *  - HWLOC_*: not inherited (they change the topology the worker plans its binding on), and a
 *    measuring command refuses to start when one that replaces the discovered topology is set
 *    (bkm_tune_env_check) — unless HWLOC_THISSYSTEM=1 says that view is this machine: then they
 *    are accepted and passed on, so the tuner and its workers plan on the same view;
 *  - everything else (ONEDNN_*, DNNL_*, LD_PRELOAD, LD_LIBRARY_PATH, PATH, ...) is inherited as
 *    it is: the worker's JSON has its own descriptor, so diagnostics such as ONEDNN_VERBOSE are
 *    harmless, and a second OpenMP runtime preloaded by LD_PRELOAD fails the binding check. */

/** 1 if @p name is a variable the runner strips from the inherited environment for hwloc's sake:
 *  any HWLOC_* variable. */
int bkm_tune_env_is_hwloc(const char *name);
/** 1 when @p env holds HWLOC_THISSYSTEM=1: the user asserts that hwloc's configured view
 *  (HWLOC_XMLFILE, HWLOC_SYNTHETIC, ...) is this machine; bkm_tune_env_check accepts it and the
 *  runner passes the HWLOC_* variables to the workers. */
int bkm_tune_env_hwloc_asserted(char *const *env);

/** Check the environment @p env ("NAME=value" strings, NULL-terminated) that a command which
 *  measures on this host runs under: hwloc variables that make hwloc describe another machine
 *  than this one (HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT, HWLOC_CPUID_PATH,
 *  HWLOC_COMPONENTS, HWLOC_ALLOW, HWLOC_THISSYSTEM, HWLOC_THISSYSTEM_ALLOWED_RESOURCES) would
 *  have the tuner plan for one topology while the workers run on another.
 *  @return BKM_OK; BKM_EDEP naming the first such variable (set and non-empty). */
int bkm_tune_env_check(char *const *env, bkm_err_t *err);

/* The outcome of a trial is bkm_trial_status_t (bkm/common.h), shared with the store. */
/** Former name of bkm_trial_status_name, kept while apps/ still spells it so. */
#define bkm_tune_trial_status_name(status) bkm_trial_status_name(status)

/** Worker exit codes (the contract between `tune worker` and the runner). */
#define BKM_WORKER_EXIT_OK 0
#define BKM_WORKER_EXIT_BINDING 5   /**< JSON with plan vs actual is still printed */

/** The descriptor the runner gives a worker for its JSON (`--result-fd 3`). */
#define BKM_WORKER_RESULT_FD 3
/** Default cap on a worker's JSON (runner->max_result_bytes = 0). */
#define BKM_TUNE_RESULT_MAX ((size_t)64 << 20)

struct bkm_topo;
struct bkm_wl_config;
struct bkm_aff_env;

/** The workload configuration of a trial: its parameters, plus backend=@p backend when the
 *  trial names one (the trial's, or its compare backend) and no parameter does. @return BKM_OK or
 *  BKM_EINVAL naming a parameter the workloads refuse. */
int bkm_tune_trial_wl_config(const bkm_tune_trial_spec_t *spec, const char *backend, struct bkm_wl_config *cfg,
                             bkm_err_t *err);
/** The trial's affinity variables as the planner takes them (pointers into @p spec). */
void bkm_tune_trial_aff_env(const bkm_tune_trial_spec_t *spec, struct bkm_aff_env *env);

/** Check a trial in the parent before spawning a worker: spec ranges, the workload name and
 *  its parameters (backend included) against what the workload publishes, threads <= the PUs
 *  of @p topo, and the trial's affinity variables (the planner must accept them for that
 *  thread count on @p topo). @return BKM_OK or BKM_EINVAL naming the offending value. */
int bkm_tune_trial_check(const bkm_tune_trial_spec_t *spec, const struct bkm_topo *topo, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TRIAL_H */
