/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/runner.h
 * The trial runner (parent side): one fresh process per trial with the trial's environment,
 * supervised (its own process group, timeout, output limits, signals), and its result.
 */
#ifndef BKM_TUNER_RUNNER_H
#define BKM_TUNER_RUNNER_H

#include <signal.h>
#include <stddef.h>

#include "bkm/trial.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_tune_program;

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
    const struct bkm_tune_program *program; /**< non-NULL: every trial runs the user's program
                                      (bkm/tuner/program.h) instead of a worker */
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

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_RUNNER_H */
