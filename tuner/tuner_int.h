/* SPDX-License-Identifier: MIT */
/* Private to bkm::tuner: the supervision of one trial process, shared by bkm's own worker trials
 * (runner.c) and the user's program (program.c). */
#ifndef BKM_TUNER_INT_H
#define BKM_TUNER_INT_H

#include <sys/types.h>

#include "bkm/tuner.h"

/* How the watch over a running process ended. */
enum { END_EXIT, END_TIMEOUT, END_STOP, END_OVERFLOW };

/* One process to start and supervise: in its own process group, stdin /dev/null, stdout and
 * stderr into one pipe (its tail kept in the result; every byte also given to on_output, at most
 * output_max bytes in all), a result descriptor of its own when result_fd >= 0, until it exits,
 * timeout_s passes, its result or output goes past its cap, or the runner's stop is set; then the
 * whole group is SIGKILLed and the process reaped. */
typedef struct bkm__tune_proc {
    const char *what;              /* "the worker", "the program": for messages */
    const char *exe;               /* absolute path */
    char **argv, **envp;
    int result_fd;                 /* BKM_WORKER_RESULT_FD, or -1 (none) */
    int stdout_is_result;          /* an MPI launcher forwards rank 0's stdout: that is the result */
    double timeout_s;
    bkm_buf_t *json;               /* the result descriptor's bytes (result_fd >= 0) */
    size_t json_max;
    size_t output_max;             /* stdout+stderr bytes; 0 = unlimited */
    int slice_ms;                  /* longest wait between two looks (on_tick is called each) */
    void (*on_start)(void *ud, pid_t pid);
    void (*on_tick)(void *ud, pid_t pid);
    void (*on_exit)(void *ud, pid_t pid);   /* exited, not yet reaped: /proc/PID is still there */
    void (*on_output)(void *ud, const char *data, size_t n);
    void *ud;
} bkm__tune_proc_t;

typedef struct bkm__tune_proc_end {
    int how;                       /* END_* */
    int wstatus;
    int overflow;                  /* the result or the output went past its cap */
    size_t output_len;
    double wall_s;                 /* spawn to exit (before the reap and the drain) */
    pid_t pid;
} bkm__tune_proc_end_t;

/* Start and supervise @p p (see above); r->stderr_tail and r->wall_s are filled. @return BKM_OK
 * when the process ran, whatever its end; BKM_EDEP when it cannot start; BKM_EIO, BKM_ENOMEM. */
int bkm__tune_supervise(const bkm_tune_runner_t *rn, const bkm__tune_proc_t *p, bkm_tune_trial_result_t *r,
                        bkm__tune_proc_end_t *end, bkm_err_t *err);
/* 1 when the trial is interrupted (the runner's stop, or a batch system's signal that killed it
 * and reaches the tuner too): r is marked so. */
int bkm__tune_supervise_end(const bkm_tune_runner_t *rn, const bkm__tune_proc_end_t *end, bkm_tune_trial_result_t *r);
/* The environment of a trial process: the parent's without OpenMP and hwloc variables, the
 * trial's variables in the planner's order, OMP_NUM_THREADS. Free with bkm__tune_strv_free. */
int bkm__tune_runner_env(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, char ***envp,
                         bkm_err_t *err);
void bkm__tune_strv_free(char **v);
/* The user's program as the trial (rn->program): program.c. */
int bkm__tune_program_run(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, bkm_tune_trial_result_t *r,
                          bkm_err_t *err);

#endif
