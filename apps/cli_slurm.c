/* SPDX-License-Identifier: MIT */
/* Shared Slurm plumbing of the CLI (see cli_slurm.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_home.h"
#include "cli_slurm.h"

extern char **environ;

int bkm_cli_slurm_job_fill(bkm_slurm_job_t *job, const char *revision, int argc, char **argv, char *self,
                           size_t self_len, char host[256], char when[32], char tune_note[BKM_CLI_TUNE_NOTE_MAX],
                           bkm_buf_t *cmd)
{
    bkm_cli_home_t home;
    bkm_err_t err = {0};
    time_t now = time(NULL);
    struct tm tm;
    if (bkm_cli_home_self(&home, &err) < 0) {
        fprintf(stderr, "tune: %s\n", err.msg);
        return 3;
    }
    /* the jobs run this tune by its absolute path: the installed one, or this build tree's */
    snprintf(self, self_len, "%s", home.exe);
    bkm_cli_home_note(&home, BKM_VERSION, tune_note, BKM_CLI_TUNE_NOTE_MAX);
    if (gethostname(host, 255) < 0)
        snprintf(host, 256, "unknown");
    host[255] = '\0';
    gmtime_r(&now, &tm);
    strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    bkm_buf_puts(cmd, "tune");
    for (int i = 0; i < argc; i++) {
        bkm_buf_puts(cmd, " ");
        bkm_slurm_sh_quote(cmd, argv[i], 0);
    }
    job->tune = self;
    job->tune_note = tune_note;
    job->generator_host = host;
    job->generated_at = when;
    job->generator_revision = revision;
    job->generated_by = bkm_buf_str(cmd);
    return 0;
}

void bkm_cli_slurm_rules_apply(const bkm_node_profile_t *prof, const char *account, const char *qos,
                               const char *partition, const char *mpi, bkm_slurm_job_t *job)
{
    const bkm_batch_rules_t *r = &prof->batch;
    job->rules = r;
    job->account = account ? account : r->account[0] ? r->account : NULL;
    job->qos = qos ? qos : r->qos[0] ? r->qos : NULL;
    job->partition = partition ? partition : r->partition[0] ? r->partition : NULL;
    if (mpi)
        job->mpi = strcmp(mpi, "none") == 0 ? NULL : mpi;
    else
        job->mpi = r->mpi[0] ? r->mpi : NULL;
}

int bkm_cli_slurm_submitter(const char *cmd, bkm_slurm_submit_t *how, char *sbatch, size_t n)
{
    char **envp = NULL;
    int cleared = 0;
    bkm_err_t err = {0};
    const char *path = getenv("PATH");
    memset(how, 0, sizeof *how);
    if (bkm_slurm_find_program("sbatch", path ? path : "/usr/bin:/bin", sbatch, n, &err) < 0 ||
        bkm_slurm_submit_env(environ, &envp, &cleared, &err) < 0) {
        fprintf(stderr, "tune %s: %s\n", cmd, err.msg);
        return 3;
    }
    if (cleared > 0)
        fprintf(stderr, "tune %s: %d inherited SBATCH_*/SLURM_* variable(s) cleared for the submission\n", cmd,
                cleared);
    how->sbatch = sbatch;
    how->envp = envp;
    return 0;
}

int bkm_cli_slurm_submit(const char *cmd, const char *script, const char *dependency, int test_only,
                         long long *job_id)
{
    char sbatch[4096];
    int rc;
    bkm_buf_t msg;
    bkm_err_t err = {0};
    bkm_slurm_submit_t s;
    *job_id = 0;
    if ((rc = bkm_cli_slurm_submitter(cmd, &s, sbatch, sizeof sbatch)) != 0)
        return rc;
    s.script = script;
    s.dependency = dependency;
    s.test_only = test_only;
    bkm_buf_init(&msg);
    fflush(stdout);
    rc = bkm_slurm_submit_run(&s, job_id, &msg, &err);
    bkm_free((void *)s.envp);
    if (rc < 0) {
        fprintf(stderr, "tune %s: %s\n", cmd, err.msg);
        bkm_buf_free(&msg);
        return 3;
    }
    if (test_only)
        fprintf(stderr, "tune %s: sbatch --test-only accepts %s: %s\n", cmd, script, bkm_buf_str(&msg));
    else
        printf("Submitted batch job %lld (%s)\n", *job_id, script);
    bkm_buf_free(&msg);
    return 0;
}
