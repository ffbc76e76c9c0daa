/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner.h
 * The tuner: trial specification and the trial runner (one fresh worker process per trial), the
 * worker's measurement protocol, PAPI counters, statistics, and the sweep.
 *
 * Error convention: see bkm/common.h. A trial that crashes, hangs, exits non-zero or fails its
 * binding check is a *result* (a status in bkm_tune_trial_result_t), never an error of the
 * runner: the runner returns a negative status only when it could not run the trial at all
 * (no worker executable, no pipes, out of memory). Nothing here reads the environment: the CLI
 * passes the parent environment and the worker's affinity environment in.
 *
 * Sections: Trial and Counters (trial runner), Stats, Sweep. Each is owned by one engineer.
 */
#ifndef BKM_TUNER_H
#define BKM_TUNER_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================== */
/* Counters (PAPI)                                                                           */
/* ======================================================================================== */

/** Default counter list: hardware events where the CPU offers them, then the perf_event
 *  software events that any Linux host offers. */
#define BKM_TUNE_COUNTERS_DEFAULT                                                                  \
    "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM,PAPI_L3_TCM,PAPI_FP_OPS,PAPI_SP_OPS,"      \
    "perf::TASK-CLOCK,perf::CPU-MIGRATIONS,perf::CONTEXT-SWITCHES,perf::PAGE-FAULTS"

#define BKM_TUNE_COUNTERS_MAX 32

/* One requested event and its outcome: bkm_counter_t (bkm/common.h). */

/** Counter session. It counts per OpenMP thread: each thread of the team opens its own event
 *  set (PAPI_thread_init), and values are summed over threads. PAPI's PAPI_INHERIT/PAPI_ATTACH
 *  are not used because PAPI's perf_event component probes them with a hardware event, which a
 *  VM without a PMU rejects, although the software events work. */
typedef struct bkm_tune_counters bkm_tune_counters_t;

/** Parse a comma-separated event list ("" or NULL = BKM_TUNE_COUNTERS_DEFAULT, "none" = no
 *  counters) into names. BKM_EINVAL names an empty or over-long item, or too many items. */
int bkm_tune_counters_parse(const char *list, char names[][64], int max, int *n, bkm_err_t *err);

/** Initialise PAPI and decide which of @p list are available (an unknown or unsupported event
 *  is recorded with PAPI's reason, not an error). Must be called before any OpenMP region that
 *  should be counted starts and outside any parallel region. *ctr is NULL on error.
 *  @return BKM_OK; BKM_EINVAL for a malformed list; BKM_EDEP when PAPI cannot initialise
 *  (err names PAPI's reason); BKM_ENOMEM. */
int bkm_tune_counters_open(bkm_tune_counters_t **ctr, const char *list, bkm_err_t *err);
/** Start counting on every thread of an OpenMP team of @p threads threads (runs a parallel
 *  region of that size). Call outside any parallel region. @return BKM_OK or BKM_EDEP. */
int bkm_tune_counters_start(bkm_tune_counters_t *ctr, int threads, bkm_err_t *err);
/** Stop counting (same team) and sum the values. @return BKM_OK or BKM_EDEP. */
int bkm_tune_counters_stop(bkm_tune_counters_t *ctr, bkm_err_t *err);
/** The requested events and their values, valid until close. */
const bkm_counter_t *bkm_tune_counters_values(const bkm_tune_counters_t *ctr, int *n);
/** Number of threads whose event sets were started (0 before start). */
int bkm_tune_counters_threads(const bkm_tune_counters_t *ctr);
/** Which of bkm's known perf software events @p name is (aliases and libpfm4 qualifiers
 *  accepted: "perf::CS:u=1"); -1 for any other event. *kernel_side = 1 for events that happen in
 *  kernel code (context switches, migrations, page faults), which PAPI's default user domain
 *  reads as 0 by construction: the session asks for them in the user and kernel domains, and
 *  where that is not permitted (kernel.perf_event_paranoid >= 2 without root or CAP_PERFMON)
 *  records them unavailable naming the sysctl, never as 0. */
int bkm_tune_counter_kind(const char *name, int *kernel_side);
/** The largest difference between a PAPI figure and the OS's figure for the same @p threads over
 *  the same region that is still agreement: 4 events (5 ms for times, @p time_ns) per thread for
 *  the snapshots that counting brackets, plus 5% of the larger figure; for times also 25 us per
 *  context switch of those threads (@p switches, < 0 unknown), the scheduler's path around a
 *  switch that perf's clock events leave out and the OS's CPU time includes. */
long long bkm_tune_counter_granularity(long long papi, long long os, int threads, int time_ns, long long switches);
/** Check one counted event against the OS's own figure @p os_value (< 0: none, nothing checked)
 *  from @p os_source: records both; beyond bkm_tune_counter_granularity marks it disagreeing
 *  with the reason (both figures). @return 1 when it disagrees, else 0. */
int bkm_tune_counter_check_os(bkm_counter_t *c, long long os_value, const char *os_source, int threads,
                              int time_ns, long long switches);
/** After the timed region: check every counted event that the OS also counts (context switches,
 *  migrations, page faults, task/CPU clock) against the noise evidence @p noise of the same
 *  threads and region (bkm_tune_noise_total). @return the number that disagree. */
typedef struct bkm_tune_noise bkm_tune_noise_t;
int bkm_tune_counters_crosscheck(bkm_tune_counters_t *ctr, const bkm_tune_noise_t *noise);
/** Write {"threads_counted":N, "kernel_domain":"permitted"|"not asked for"|why not,
 *  "values":{name:value} (counted and not contradicted), "unavailable":{name:reason},
 *  "disagree":{name:{papi, os, os_source, reason}}, "domains":{name:"user+kernel"},
 *  "os_checked":{name:{os, os_source}}}. */
void bkm_tune_counters_to_json(const bkm_tune_counters_t *ctr, bkm_json_w_t *w);
/** Stop if running, free, and shut PAPI down. NULL is a no-op. */
void bkm_tune_counters_close(bkm_tune_counters_t *ctr);

/* ======================================================================================== */
/* Noise: what disturbed a trial, from the operating system (with or without PAPI)           */
/* ======================================================================================== */

/* Over the timed region, per OpenMP thread (each thread reads its own values before and after:
 * getrusage(RUSAGE_THREAD), /proc/self/task/<tid>/schedstat and .../sched) and for the process
 * (getrusage(RUSAGE_SELF), /proc/stat steal time of the CPUs the team may run on). Every value
 * is grouped under the source it comes from: "rusage", "proc-schedstat", "proc-sched",
 * "proc-stat"; a source that cannot be read is "unavailable" with the reason. Reading /proc is OS
 * evidence, not configuration: nothing here reads the environment. */

/** Default threshold of the "disturbed" mark: share of the timed region (0..1). */
#define BKM_TUNE_NOISE_SHARE_DEFAULT 0.10

/** One CPU line of /proc/stat, in USER_HZ ticks. */
typedef struct bkm_tune_stat_ticks {
    uint64_t steal;     /**< 8th field; absent on kernels before 2.6.11 */
    uint64_t total;     /**< user + nice + system + idle + iowait + irq + softirq + steal */
    int cpus;           /**< CPU lines summed */
} bkm_tune_stat_ticks_t;

/** Sum the "cpuN" lines of /proc/stat text @p text for the CPUs in @p cpus (NULL: the aggregate
 *  "cpu" line). @return BKM_OK; BKM_EINVAL naming a malformed line or a CPU of @p cpus that has
 *  no line; BKM_ENOTSUP when the lines have no steal field (err says so). */
int bkm_tune_noise_parse_stat(const char *text, const bkm_cpuset_t *cpus, bkm_tune_stat_ticks_t *out,
                              bkm_err_t *err);
/** Parse /proc/<pid>/task/<tid>/schedstat: "run_ns wait_ns timeslices" (time on the CPU, time
 *  runnable on a run queue, times scheduled in). @return BKM_OK or BKM_EINVAL. */
int bkm_tune_noise_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices,
                                   bkm_err_t *err);
/** The integer of line "@p field : value" of /proc/<pid>/task/<tid>/sched (e.g.
 *  "se.nr_migrations"). @return BKM_OK; BKM_ENOTSUP when the field is absent; BKM_EINVAL when
 *  its value is not an integer. */
int bkm_tune_noise_parse_sched(const char *text, const char *field, long long *value, bkm_err_t *err);

/** A noise session for one timed region of a team of threads. */
typedef struct bkm_tune_noise bkm_tune_noise_t;

/** Create a session for a team of @p threads threads; @p proc_root is where procfs is mounted
 *  (NULL = "/proc"; tests give a directory of their own); @p share_threshold (0..1; <= 0 means
 *  BKM_TUNE_NOISE_SHARE_DEFAULT) decides the disturbed mark. Allocates everything it will need.
 *  @return BKM_OK; BKM_EINVAL (threads < 1, threshold > 1); BKM_ENOMEM. */
int bkm_tune_noise_open(bkm_tune_noise_t **noise, int threads, const char *proc_root, double share_threshold,
                        bkm_err_t *err);
/** Snapshot before the timed region: a parallel region of the session's team size in which
 *  every thread reads its own values, then the process's. Call outside any parallel region. */
void bkm_tune_noise_begin(bkm_tune_noise_t *noise);
/** Snapshot after the timed region (same team), then the deltas, shares and the mark. */
void bkm_tune_noise_end(bkm_tune_noise_t *noise);
/** Per-thread begin/end for a caller that runs its own parallel region (@p t: the thread's index
 *  in the team; each thread calls it for itself). bkm_tune_noise_begin/end use these. */
void bkm_tune_noise_thread_begin(bkm_tune_noise_t *noise, int t);
void bkm_tune_noise_thread_end(bkm_tune_noise_t *noise, int t);
/** Process-level snapshots and the evaluation, for callers of the per-thread functions. */
void bkm_tune_noise_process_begin(bkm_tune_noise_t *noise);
void bkm_tune_noise_process_end(bkm_tune_noise_t *noise);
/** After end: the disturbed share (max over threads of run-queue wait / wall, plus the steal share
 *  of the team's CPUs; NaN when no source gave it) and the mark (1 disturbed, 0 not, -1 unknown). */
double bkm_tune_noise_share(const bkm_tune_noise_t *noise);
int bkm_tune_noise_disturbed(const bkm_tune_noise_t *noise);
/** Sum over threads of a per-thread value: "voluntary_switches", "involuntary_switches",
 *  "minor_faults", "major_faults", "cpu_ns" (user + system CPU time, rusage), "migrations"
 *  (proc-sched); -1 when unavailable. */
long long bkm_tune_noise_total(const bkm_tune_noise_t *noise, const char *name);
/** Write the session as one JSON object (see docs/measurement.md, "Noise evidence"). */
void bkm_tune_noise_to_json(const bkm_tune_noise_t *noise, bkm_json_w_t *w);
/** Free. NULL is a no-op. */
void bkm_tune_noise_close(bkm_tune_noise_t *noise);

/* ======================================================================================== */
/* Trial                                                                                     */
/* ======================================================================================== */

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
#ifdef BKM_TEST_HOOKS
    char inject[32];             /**< test builds only (tune_testhooks): fault injection, see
                                      bkm_tune_worker_run; "" */
#endif
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

/** How to run trials. */
typedef struct bkm_tune_runner {
    const char *worker_path;     /**< executable started as `<path> worker --spec JSON --parent
                                      PID --result-fd 3` */
    const char *worker_cmd;      /**< argv[1] ("worker"); NULL = "worker" */
    char *const *environ;        /**< parent environment to inherit (cleaned); NULL = empty */
    const volatile sig_atomic_t *stop; /**< NULL, or set non-zero by a signal handler (SIGINT,
                                      SIGTERM): the running worker's process group is killed at
                                      once and the trial is BKM_TRIAL_INTERRUPTED */
    size_t max_result_bytes;     /**< a longer JSON fails the trial; 0 = BKM_TUNE_RESULT_MAX */
    const char *launcher;        /**< MPI trials (spec.ranks >= 1): path of MPICH's hydra `mpiexec`,
                                      started as `mpiexec -n P -bind-to core:T <worker> worker
                                      --spec JSON` (hydra passes the whole environment to every
                                      rank; -bind-to core:T gives rank r the cores rT..rT+T-1);
                                      or, with slurm_job_id, the path of `srun`, started as
                                      `srun -n P --cpus-per-task=T --cpu-bind=cores --export=ALL --mpi=pmi2 ...`.
                                      NULL: MPI trials fail to start (BKM_EDEP) */
    const char *slurm_job_id;    /**< non-empty: the tuner runs inside that Slurm allocation and
                                      launcher is srun (the CLI reads SLURM_JOB_ID) */
} bkm_tune_runner_t;

/** Result of one trial. Zero-initialise before the first use; free with
 *  bkm_tune_trial_result_free (then it may be reused). */
typedef struct bkm_tune_trial_result {
    int status;                  /**< bkm_trial_status_t */
    int exit_code;               /**< worker exit code, -1 when killed by a signal */
    int signal;                  /**< terminating signal, 0 if none */
    char signal_name[16];        /**< "SIGSEGV", ... or "" */
    char message[512];           /**< why the status is not ok ("" when ok) */
    char stderr_tail[BKM_TUNE_STDERR_TAIL + 1]; /**< last bytes of the worker's stderr */
    double wall_s;               /**< spawn to reap */
    char *json;                  /**< the worker's stdout (owned), NULL when empty */
    bkm_json_t *doc;             /**< parsed JSON (owned): params, binding, env... NULL if none */
    double *samples_ms;          /**< every timed sample (owned) */
    int n_samples;
    double median_ms, min_ms, mad_ms, ci95_lo_ms, ci95_hi_ms; /**< NaN when absent */
    double flops_per_iter, gflops;
    char check_kind[16];         /**< "loss" or "checksum" or "" */
    double check_value;
    char impl[128];              /**< implementation the workload used */
    bkm_counter_t *counters; /**< available and unavailable events (owned) */
    int n_counters;
    int disturbed;               /**< the worker's noise mark: 1, 0, -1 unknown (no "noise") */
    double noise_share;          /**< its share (NaN when unknown) */
} bkm_tune_trial_result_t;

/** libomp 14 registers every process in @p dir (/dev/shm) as __KMP_REGISTERED_LIB_<pid>_<uid> and
 *  maps that file at start-up; a zero-length one, left by a process killed between creating and
 *  sizing it (the runner SIGKILLs worker groups), makes the next process that gets the same pid die
 *  of SIGBUS before main. Removes the zero-length registrations of processes that no longer exist
 *  (never a live process's, never a sized file: libomp recovers from those itself). The runner
 *  calls it before each worker start.
 *  @return the number of files removed (>= 0), or BKM_EIO when @p dir cannot be read (err). */
int bkm_tune_clear_stale_kmp(const char *dir, bkm_err_t *err);

/** Run one trial in a fresh worker process.
 *  The child's environment is runner->environ minus every OpenMP/affinity variable
 *  (bkm_tune_env_is_openmp) and every HWLOC_* variable, plus spec->env and
 *  OMP_NUM_THREADS=spec->threads. stdin is /dev/null; the JSON comes on its own pipe
 *  (descriptor BKM_WORKER_RESULT_FD in the worker); stdout and stderr share one pipe of which
 *  the last BKM_TUNE_STDERR_TAIL bytes are kept. The worker runs in its own process group. The
 *  trial ends when the worker exits (a grandchild holding the pipes open does not keep it
 *  going), at spec->timeout_s (status timeout), when its JSON exceeds max_result_bytes (status
 *  failed) or when *runner->stop becomes non-zero (status interrupted); in every case the whole
 *  process group is SIGKILLed before the worker is reaped. A trial during which *runner->stop
 *  was set at any point is interrupted, and so is one whose worker died of SIGTERM, SIGINT or
 *  SIGHUP when the stop follows within 2 s (a batch system signals every process of the job).
 *  Must be called with SIGCHLD not ignored (else the exit status is lost: BKM_EDEP).
 *  @return BKM_OK when the trial ran (whatever its status: see result->status);
 *          BKM_EINVAL for a bad spec; BKM_EDEP when the worker cannot be started (err names the
 *          path) or SIGCHLD is ignored; BKM_EIO for pipe/poll/wait failures; BKM_ENOMEM. */
int bkm_tune_trial_run(const bkm_tune_runner_t *runner, const bkm_tune_trial_spec_t *spec,
                       bkm_tune_trial_result_t *result, bkm_err_t *err);
void bkm_tune_trial_result_free(bkm_tune_trial_result_t *result);
/** Fill the result's fields from the worker's JSON text (used by the runner; public for tests
 *  and for reading stored results). BKM_EINVAL names what is missing or malformed. */
int bkm_tune_trial_result_parse(bkm_tune_trial_result_t *result, const char *json, bkm_err_t *err);

/** Write the trial as one JSON object: "status", "message", "exit_code", "signal", "wall_s",
 *  "stderr_tail", then every member of the worker's JSON (workload, samples_ms, median_ms, ...). */
void bkm_tune_trial_result_to_json(const bkm_tune_trial_result_t *result, bkm_json_w_t *w);

struct bkm_topo;

/** Check a trial in the parent before spawning a worker: spec ranges, the workload name and
 *  its parameters (backend included) against what the workload publishes, threads <= the PUs
 *  of @p topo, and the trial's affinity variables (the planner must accept them for that
 *  thread count on @p topo). @return BKM_OK or BKM_EINVAL naming the offending value. */
int bkm_tune_trial_check(const bkm_tune_trial_spec_t *spec, const struct bkm_topo *topo, bkm_err_t *err);

/* ---- Measurement protocol ---------------------------------------------------------------- */

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

/* ---- Worker side (`tune worker`) --------------------------------------------------------- */

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

/* ======================================================================================== */
/* Stats (section owned by the statistics work)                                              */
/* ======================================================================================== */

/* Pure functions over timing samples (milliseconds or any unit; all outputs in the same unit).
 * They never allocate unless a scratch pointer is NULL, never print, and may be called from any
 * thread (not inside the timed region: they sort). */

/** Default threshold of the modified z-score outlier rule (hyperfine): |x - median| / MAD_raw
 *  above 14.826 (= 10 robust sigma, since sigma ~ 1.4826 MAD_raw). */
#define BKM_TUNE_OUTLIER_Z 14.826

/** Summary of one set of samples. */
typedef struct bkm_tune_stats {
    size_t n;
    double min, max, mean, median;
    double stddev;            /**< sample standard deviation (divisor n - 1); 0 when n = 1 */
    double cv;                /**< stddev / mean; 0 when mean = 0 */
    double mad;               /**< RAW median absolute deviation, median(|x - median|) */
    double mad_sigma;         /**< 1.4826 * mad: estimates sigma for normal data */
    double ci_lo, ci_hi;      /**< 95% CI of the median: order statistics x(lo_rank), x(hi_rank) */
    size_t ci_lo_rank, ci_hi_rank; /**< 1-based ranks (n <= 8: 1 and n, i.e. [min, max]) */
    double ci_coverage;       /**< exact coverage of that interval (>= 0.95 once n >= 6) */
} bkm_tune_stats_t;

/** Median of @p x, which is sorted in place (mean of the two middle values for even n).
 *  NaN when n = 0. */
double bkm_tune_stats_median(double *x, size_t n);

/** Ranks (1-based) of the distribution-free confidence interval [x(lo), x(hi)] of the median at
 *  level @p conf (0.95): the largest lo with P(Binomial(n, 1/2) <= lo - 1) <= (1 - conf) / 2,
 *  hi = n + 1 - lo, computed from the binomial distribution. n = 10 -> [2, 9], 15 -> [4, 12],
 *  20 -> [6, 15], 30 -> [10, 21], 50 -> [18, 33]; when no interval reaches @p conf (n <= 5 at
 *  95%) it is [1, n]. @p coverage (may be NULL) gets 1 - 2 P(B <= lo - 1).
 *  @return BKM_OK; BKM_EINVAL when n = 0 or conf is not in (0, 1). */
int bkm_tune_stats_median_ci_ranks(size_t n, double conf, size_t *lo, size_t *hi, double *coverage,
                                   bkm_err_t *err);

/** Summarise @p x[0..n-1] (not modified). @p scratch: n doubles, or NULL to allocate.
 *  @return BKM_OK; BKM_EINVAL when n = 0 or a sample is not finite (names its index);
 *          BKM_ENOMEM. */
int bkm_tune_stats_compute(const double *x, size_t n, double *scratch, bkm_tune_stats_t *out,
                           bkm_err_t *err);

/** Flag outliers by the modified z-score rule: flags[i] = 1 when |x[i] - median| > z * MAD_raw
 *  (z <= 0: BKM_TUNE_OUTLIER_Z). When MAD_raw is 0 (more than half the samples equal) the scale
 *  is 0.8453 * mean absolute deviation (the usual fallback: 1.2533 MeanAD estimates sigma);
 *  when that is 0 too, nothing is an outlier. @p st is the summary of @p x.
 *  @return the number of outliers. */
size_t bkm_tune_stats_outliers(const double *x, size_t n, const bkm_tune_stats_t *st, double z,
                               unsigned char *flags);

/** Two-sided Mann-Whitney U test of samples a and b. */
typedef struct bkm_tune_mwu {
    double u;     /**< U of sample a: pairs with a > b, ties counting 1/2 */
    double z;     /**< normal score (0 for the exact test) */
    double p;     /**< two-sided p-value */
    int exact;    /**< 1: exact permutation distribution of the mid-rank sum, conditional on
                       the ties (na + nb <= 50); 0: normal approximation with tie correction
                       and continuity correction */
} bkm_tune_mwu_t;
/** @return BKM_OK; BKM_EINVAL when a side is empty or holds a non-finite value; BKM_ENOMEM. */
int bkm_tune_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                                bkm_tune_mwu_t *out, bkm_err_t *err);

/** Holm's step-down adjustment of the @p m p-values @p p into @p adj (same order): the i-th
 *  smallest is multiplied by m - i (i from 0), capped at 1 and made monotone, so that rejecting
 *  every adj < alpha keeps the family-wise error rate below alpha. @return BKM_OK; BKM_ENOMEM. */
int bkm_tune_stats_holm(const double *p, size_t m, double *adj, bkm_err_t *err);

/* ---- Claims: the process is the unit of evidence --------------------------------------- */

/* Samples inside one worker process are not independent (page placement, frequency, neighbours
 * vary per process), so a claim "X beats the default" is decided on ONE value per process (the
 * median of its samples): R processes per side, measured in an order that cancels drift, and a
 * correction for the number of candidates tested (docs/measurement.md, "Claims"). */

/** Most re-runs of one disturbed confirmation process (--rerun-disturbed). */
#define BKM_TUNE_RERUN_DISTURBED_MAX 10
/** Processes per side in the confirmation round (`tune sweep --replicates`). With 6 per side
 *  the exact two-sided Mann-Whitney p can reach 2/C(12,6) = 0.0022 (0.0087 with two swapped
 *  pairs), below the default alpha of 0.01. */
#define BKM_TUNE_REPLICATES_DEFAULT 6
/** Most candidates a confirmation round re-measures against the default (--confirm-top). */
#define BKM_TUNE_CONFIRM_TOP_MAX 7
/** Most fresh processes per side in a confirmation round (--replicates). */
#define BKM_TUNE_REPLICATES_MAX 1000

/** Order of a confirmation round of @p arms arms (arm 0 is the default) over @p rounds rounds:
 *  @p order gets arms x rounds arm indices, the measurement order. Rounds come in pairs: a
 *  seeded shuffle of the arms, then the same shuffle reversed (ABBA generalised to several
 *  arms: in every pair of rounds each arm's positions sum to the same value, so a linear drift
 *  in time is cancelled exactly, and the shuffle keeps a periodic disturbance from lining up
 *  with one arm); an odd last round is one more shuffle. Deterministic for a given @p seed.
 *  @return BKM_OK; BKM_EINVAL when arms or rounds is 0. */
int bkm_tune_claim_order(size_t arms, size_t rounds, uint64_t seed, size_t *order, bkm_err_t *err);
/** Name of the order of bkm_tune_claim_order, stored with every claim. */
#define BKM_TUNE_CLAIM_ORDER_NAME "abba-shuffled"

/** When a candidate is claimed faster than the default. */
typedef struct bkm_tune_claim_rule {
    double min_ratio;   /**< the ratio estimate (default / candidate) must be >= this; 1.02.
                             Not a noise guard (the process-level test is): the smallest win
                             worth a setting. */
    double alpha;       /**< family-wise error rate: Holm-adjusted Mann-Whitney p < alpha; 0.01 */
    size_t min_n;       /**< processes per side, else never claimed; BKM_TUNE_REPLICATES_DEFAULT */
    double floor;       /**< median of process medians must differ by more (timer floor); 0 */
} bkm_tune_claim_rule_t;
void bkm_tune_claim_rule_defaults(bkm_tune_claim_rule_t *rule);

/** The test of one candidate against the default, on per-process values. */
typedef struct bkm_tune_claim_test {
    int tested;              /**< 0: the candidate had no process values (failed): not tested */
    size_t n_cand, n_base;   /**< processes */
    double cand_median, base_median; /**< median of the per-process values of each side */
    double ratio;            /**< Hodges-Lehmann estimate of default / candidate: the median of
                                  the n_base x n_cand ratios of process values; > 1: faster */
    double ratio_lo, ratio_hi; /**< exact rank interval of that ratio (Moses: order statistics
                                    k and n_base n_cand + 1 - k of the pairwise ratios, k from
                                    the exact null distribution of U); 95% */
    double ratio_coverage;   /**< exact coverage of [ratio_lo, ratio_hi] (>= 0.95 when the
                                  sizes allow it; less for tiny sizes, then it is [min, max]) */
    bkm_tune_mwu_t mwu;      /**< Mann-Whitney on the process values (p two-sided, unadjusted) */
    double p_holm;           /**< Holm-adjusted p over the candidates tested; NaN if untested */
    int significant;         /**< every condition of the rule holds */
    char reason[192];        /**< the first condition that failed, or "faster" */
} bkm_tune_claim_test_t;

/** Decide, for each of @p k candidates, whether it is faster than the default. @p base holds
 *  the default's per-process values (nb of them, e.g. the median of each process's samples);
 *  cand[i] / nc[i] those of candidate i (nc[i] = 0: not tested). The p-values of the tested
 *  candidates are adjusted together by Holm's step-down method, so that the chance of any
 *  false claim among them stays below rule->alpha. Smaller values are faster.
 *  @p rule NULL = defaults. @p out gets k tests.
 *  @return BKM_OK (see out[i].significant); BKM_EINVAL for a non-finite or non-positive value
 *  (ratios need positive values) or an empty default; BKM_ENOMEM. */
int bkm_tune_claim_decide(const double *base, size_t nb, const double *const *cand, const size_t *nc,
                          size_t k, const bkm_tune_claim_rule_t *rule, bkm_tune_claim_test_t *out,
                          bkm_err_t *err);

/* ---- Regression gate (`tune regress`) ---------------------------------------------------- */

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

/* ======================================================================================== */
/* Search space (section owned by the sweep work)                                            */
/* ======================================================================================== */

struct bkm_node_profile;

/** KMP_BLOCKTIME of a configuration: a value in ms, or one of these. */
#define BKM_TUNE_BLOCKTIME_UNSET (-2)    /**< not set: the runtime default (200 ms) */
#define BKM_TUNE_BLOCKTIME_INFINITE (-1) /**< "infinite" */
#define BKM_TUNE_SPACE_MAX_THREADS 64
#define BKM_TUNE_SPACE_MAX_AFFINITY 32
#define BKM_TUNE_SPACE_MAX_BLOCKTIME 8
#define BKM_TUNE_SPACE_MAX_HW_SUBSET 8
#define BKM_TUNE_SPACE_MAX_PARAMS 16
#define BKM_TUNE_SPACE_MAX_VALUES 16
/** Dimensions of the space: threads, affinity, blocktime, hw_subset, then one per parameter. */
#define BKM_TUNE_DIM_THREADS 0
#define BKM_TUNE_DIM_AFFINITY 1
#define BKM_TUNE_DIM_BLOCKTIME 2
#define BKM_TUNE_DIM_HW_SUBSET 3
#define BKM_TUNE_DIM_PARAM0 4
#define BKM_TUNE_MAX_DIMS (BKM_TUNE_DIM_PARAM0 + BKM_TUNE_SPACE_MAX_PARAMS)

/** What the user asked for (a plain value; zero-initialise, then fill). Every empty list means
 *  "the default for this node": the profile's thread counts and blocktimes, affinity settings
 *  generated from the topology (default, none, compact/scatter/balanced x granularity fine/core
 *  x permute 0/1, OMP_PLACES threads/cores x OMP_PROC_BIND close/spread), KMP_HW_SUBSET values
 *  generated from the SMT width (unset, then 1..smt-1 threads per core). Kernel tunables are
 *  swept when named in params, or all of them at {def/2, def, 2 def} (rounded to their
 *  multiple-of rule, within bounds) with sweep_tunables. */
typedef struct bkm_tune_space_opts {
    const char *workload;                          /**< required */
    const char *backend;                           /**< NULL or "" = workload default */
    int threads[BKM_TUNE_SPACE_MAX_THREADS];       /**< --threads */
    int n_threads;
    const char *affinity[BKM_TUNE_SPACE_MAX_AFFINITY]; /**< --affinity: "default", a KMP_AFFINITY
                                                          value, or "VAR=value VAR=value" with VAR
                                                          among KMP_AFFINITY, OMP_PLACES,
                                                          OMP_PROC_BIND (space separated) */
    int n_affinity;
    int blocktime_ms[BKM_TUNE_SPACE_MAX_BLOCKTIME]; /**< --blocktime (BKM_TUNE_BLOCKTIME_*) */
    int n_blocktime;
    const char *hw_subset[BKM_TUNE_SPACE_MAX_HW_SUBSET]; /**< --hw-subset; "none" = unset */
    int n_hw_subset;
    const char *params[BKM_TUNE_SPACE_MAX_PARAMS]; /**< --param "key=v1,v2" (any workload parameter) */
    int n_params;
    int ranks[BKM_TUNE_SPACE_MAX_THREADS];         /**< --ranks (MPI training workload only): ranks
                                                        per trial; default {1} */
    int n_ranks;
    int sweep_tunables;                            /**< 1: also sweep the kernel tunables not named in
                                                        params at {def/2, def, 2 def}; 0: keep them at
                                                        their defaults */
} bkm_tune_space_opts_t;

/** One configuration of the space (a plain value). */
typedef struct bkm_tune_config {
    int threads;               /**< OpenMP threads (per rank for the MPI training workload) */
    char affinity[192];        /**< label: "default", the KMP_AFFINITY value, or "VAR=v VAR=v" */
    char kmp_affinity[128];    /**< "" = unset */
    char omp_places[64];
    char omp_proc_bind[32];
    char kmp_hw_subset[32];
    int blocktime_ms;          /**< BKM_TUNE_BLOCKTIME_UNSET, _INFINITE or ms */
    char backend[16];          /**< "" = workload default */
    int n_params;
    bkm_kv_t params[BKM_TUNE_SPACE_MAX_PARAMS]; /**< parameters not at their default */
    int is_default;            /**< the default setting (the baseline) */
    int coord[BKM_TUNE_MAX_DIMS]; /**< value index along each dimension */
} bkm_tune_config_t;

typedef struct bkm_tune_space bkm_tune_space_t;

/** Build the space for @p prof on @p topo (the node's topology, not necessarily this host):
 *  the product of the dimensions, then every affinity setting (with its KMP_HW_SUBSET) planned
 *  at every thread count with bkm_aff_plan_create: rejected settings are dropped and settings
 *  whose plans are identical are merged into the first one (a note says which, e.g.
 *  "KMP_AFFINITY=scatter = compact at 2 threads on this topology (1 package, 2 cores, 1
 *  thread/core)"); KMP_BLOCKTIME=200 is the runtime default, merged with unset. Parameter
 *  values are checked against the workload (bkm_wl_config_check); bad values from the user are
 *  BKM_EINVAL naming them. The default configuration (threads = cores, nothing set, default
 *  parameters) is always in the space, marked, and is configuration 0.
 *  @return BKM_OK; BKM_EINVAL naming a bad option value (threads beyond the node's PUs, a
 *  malformed affinity setting, an unknown parameter); BKM_ENOMEM. */
int bkm_tune_space_create(bkm_tune_space_t **space, const struct bkm_topo *topo,
                          const struct bkm_node_profile *prof, const bkm_tune_space_opts_t *opts,
                          bkm_err_t *err);
void bkm_tune_space_free(bkm_tune_space_t *space);
size_t bkm_tune_space_size(const bkm_tune_space_t *space);
/** Configuration @p i (valid until free), NULL when out of range. Index 0 is the default. */
const bkm_tune_config_t *bkm_tune_space_config(const bkm_tune_space_t *space, size_t i);
/** Number of dimensions and their sizes (values per dimension). */
int bkm_tune_space_dims(const bkm_tune_space_t *space, int *dim_size);
/** Notes on merged and dropped settings, in order (valid until free). */
size_t bkm_tune_space_n_notes(const bkm_tune_space_t *space);
const char *bkm_tune_space_note(const bkm_tune_space_t *space, size_t i);
/** A cause of dropped or merged settings and how many it accounts for: the summary of the notes. */
typedef struct bkm_tune_space_cause {
    int merged;         /**< 1: merged as identical to another setting, 0: dropped */
    size_t count;       /**< settings (or parameter combinations) dropped or merged for it */
    const char *text;   /**< "32 dropped: KMP_HW_SUBSET=68c,1t with 136/272 threads oversubscribes its 68 PUs" */
} bkm_tune_space_cause_t;
/** Causes of the drops and merges, the most frequent first; their counts add up to those of
 *  bkm_tune_space_counts. Valid until free. */
size_t bkm_tune_space_n_causes(const bkm_tune_space_t *space);
const bkm_tune_space_cause_t *bkm_tune_space_cause(const bkm_tune_space_t *space, size_t i);
/** Counts of configurations merged as identical and dropped as rejected. */
void bkm_tune_space_counts(const bkm_tune_space_t *space, size_t *merged, size_t *dropped);
/** Canonical description of the space (the input of the sweep key). */
int bkm_tune_space_to_json(const bkm_tune_space_t *space, bkm_json_w_t *w);

/** Write @p cfg as a JSON object {"threads":N,"env":{VAR:value,...},"params":{k:v,...}
 *  [,"backend":b][,"default":true]}. */
void bkm_tune_config_to_json(const bkm_tune_config_t *cfg, bkm_json_w_t *w);
/** Canonical config key (bkm_db_config_canonical of the JSON); *key is freed with bkm_free. */
int bkm_tune_config_key(const bkm_tune_config_t *cfg, char **key, bkm_err_t *err);
/** Short human label: "threads=2 KMP_AFFINITY=compact KMP_BLOCKTIME=0 mc=96". */
void bkm_tune_config_label(const bkm_tune_config_t *cfg, char *buf, size_t n);
/** Fill the trial fields of @p spec (threads, env, params, backend) from @p cfg; the protocol
 *  fields are left as they are. */
int bkm_tune_config_to_spec(const bkm_tune_config_t *cfg, const char *workload,
                            bkm_tune_trial_spec_t *spec, bkm_err_t *err);
/** Check, before anything is written, that every configuration of @p sp becomes a valid trial
 *  with the protocol fields of @p base (bkm_tune_config_to_spec + bkm_tune_trial_spec_validate),
 *  unscaled and at the largest scale a strategy asks for (bkm_tune_strategy_spec_scale clamps it).
 *  @return BKM_OK, or BKM_EINVAL naming the configuration and the bad value. */
int bkm_tune_space_specs_check(const bkm_tune_space_t *sp, const char *workload, const bkm_tune_trial_spec_t *base,
                               bkm_err_t *err);

/* ======================================================================================== */
/* Strategies (section owned by the sweep work)                                              */
/* ======================================================================================== */

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

/* ======================================================================================== */
/* Sweep (section owned by the sweep work)                                                   */
/* ======================================================================================== */

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
    double time_budget_s;              /**< 0 = none: stop searching after this long */
    uint64_t seed;
    int fresh;                         /**< 1: never resume */
    int confirm_top;                   /**< candidates re-measured against the default; 3 */
    int replicates;                    /**< confirmation: fresh worker processes per candidate and
                                            for the default, in bkm_tune_claim_order's order;
                                            BKM_TUNE_REPLICATES_DEFAULT */
    double min_ratio;                  /**< smallest win claimed (bkm_tune_claim_rule_t);
                                            0 = the rule's default */
    int rerun_disturbed;               /**< confirmation: a process marked disturbed (base.noise_share)
                                            is run again, up to this many times, and the last attempt
                                            is counted; replaced attempts stay stored at round
                                            position + k x (arms x replicates). 0 (default): disturbed
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
#ifdef BKM_TEST_HOOKS
    char inject[32];                   /**< test builds only: fault injected into trial inject_at */
    int inject_at;                     /**< 1-based trial number of this run; 0 = none */
#endif
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
    double speedup_lo, speedup_hi;     /**< its exact rank 95% interval (NaN when none) */
    int significant;                   /**< a claim: best beats the default beyond noise */
    int aa;                            /**< an A/A run (cfg->aa): significant = a false claim */
    int replicates;                    /**< processes per side planned */
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
 *  the trial runner and store it in its own transaction, then the confirmation round: the
 *  default and the top candidates, each in cfg->replicates fresh worker processes, in
 *  bkm_tune_claim_order's order (role "confirm", round = 1-based position in that order); the
 *  claim is decided by bkm_tune_claim_decide on the per-process medians, and the best-known
 *  setting is stored with that evidence. Faulty trials are stored with their status and the
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

/** Build the strategy's view of @p space. @p coord gets n x n_dims ints (bkm_free). */
int bkm_tune_space_problem(const bkm_tune_space_t *space, bkm_tune_problem_t *pb, int **coord,
                           bkm_err_t *err);

/* ---- Replay -------------------------------------------------------------------------------- */

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
#endif /* BKM_TUNER_H */
