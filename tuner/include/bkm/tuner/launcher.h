/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/launcher.h
 * The MPI launcher of MPI trials (workload fmnist-sgd, spec.ranks >= 1), chosen in one place for
 * every command that runs them (`tune sweep`, `tune regress`).
 */
#ifndef BKM_TUNER_LAUNCHER_H
#define BKM_TUNER_LAUNCHER_H

#include <stddef.h>

#include "bkm/common.h"
#include "bkm/tuner/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Choose the launcher of @p runner's MPI trials: inside a Slurm allocation (@p slurm_job_id, the
 *  caller's SLURM_JOB_ID, not NULL or empty) Slurm's `srun`, else MPICH's `mpiexec` (hydra); found
 *  on @p path (the caller's PATH; NULL: /usr/bin:/bin) into @p found (@p n bytes, which must
 *  outlive the runner). Sets runner->launcher and runner->slurm_job_id (NULL outside an
 *  allocation). @return BKM_OK; BKM_EDEP naming the program that is not on PATH and how to
 *  install it (runner unchanged). */
int bkm_tune_launcher_choose(bkm_tune_runner_t *runner, const char *path, const char *slurm_job_id, char *found,
                             size_t n, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_LAUNCHER_H */
