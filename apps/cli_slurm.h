/* SPDX-License-Identifier: MIT */
/* What `tune sbatch` and the main job's --sbatch / --slurm-array share: the job's generator
 * fields and submitting a script with sbatch (the CLI reads PATH and the environment here, once,
 * and hands them to bkm::slurm); scripts are written with bkm_cli_output_write. */
#ifndef BKM_CLI_SLURM_H
#define BKM_CLI_SLURM_H

#include "bkm/slurm.h"

/** Size of the note on the tune a job runs (bkm_cli_slurm_job_fill). */
#define BKM_CLI_TUNE_NOTE_MAX 4352
/** Fill the generator fields of @p job: the tune executable (/proc/self/exe, into @p self) and
 *  what it is (installed under which prefix, or a build tree: into @p tune_note, for the script's
 *  header; cli_home.h), this host, now (UTC, into @p when, 32 bytes), the bkm revision, the
 *  command line (argv joined into @p cmd, which the caller frees). 0, or 3 after printing why (no
 *  /proc/self/exe). */
int bkm_cli_slurm_job_fill(bkm_slurm_job_t *job, const char *revision, int argc, char **argv, char *self,
                           size_t self_len, char host[256], char when[32], char tune_note[BKM_CLI_TUNE_NOTE_MAX],
                           bkm_buf_t *cmd);
/** The job's -A, -q, -p and srun --mpi: the options given (NULL: not given; --mpi none: no --mpi),
 *  else the defaults of @p prof's batch rules; and the rules themselves (job->rules). */
void bkm_cli_slurm_rules_apply(const bkm_node_profile_t *prof, const char *account, const char *qos,
                               const char *partition, const char *mpi, bkm_slurm_job_t *job);
/** Prepare a submission: sbatch found on PATH (into @p sbatch, @p n bytes) and this environment
 *  without SBATCH_* / SLURM_* (how->envp: the caller bkm_free()s it), saying how many were
 *  cleared. 0, or 3 after printing why (no sbatch). */
int bkm_cli_slurm_submitter(const char *cmd, bkm_slurm_submit_t *how, char *sbatch, size_t n);
/** Submit @p script with sbatch (cleared SBATCH_ / SLURM_ variables; --test-only when asked;
 *  --dependency when not NULL). Prints what Slurm said. 0 with *job_id set, else the exit code
 *  (3: no sbatch, or Slurm refused: its message verbatim). */
int bkm_cli_slurm_submit(const char *cmd, const char *script, const char *dependency, int test_only,
                         long long *job_id);

#endif
