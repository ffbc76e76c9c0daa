/* SPDX-License-Identifier: MIT */
/* The MPI launcher of MPI trials (bkm/tuner/launcher.h). */
#include "bkm/tuner.h"

int bkm_tune_launcher_choose(bkm_tune_runner_t *runner, const char *path, const char *slurm_job_id, char *found,
                             size_t n, bkm_err_t *err)
{
    const char *job = slurm_job_id && slurm_job_id[0] ? slurm_job_id : NULL;
    const char *prog = job ? "srun" : "mpiexec";
    if (bkm_path_find_program(prog, path ? path : "/usr/bin:/bin", found, n, err) < 0) {
        if (job)
            return bkm_err_set(err, BKM_EDEP, "'srun' is not installed (not on PATH), although this runs inside the "
                               "Slurm allocation %s (SLURM_JOB_ID): load the cluster's Slurm module", job);
        return bkm_err_set(err, BKM_EDEP, "'mpiexec' is not installed (not on PATH): install MPICH (Debian: apt-get "
                           "install mpich)");
    }
    runner->launcher = found;
    runner->slurm_job_id = job;
    return BKM_OK;
}
