/* SPDX-License-Identifier: MIT */
/* The batch job(s) that run a sweep on its node (bkm/slurm.h, bkm_slurm_sweep_jobs_build): one
 * job, or a job array of shards with its merge job; their file names; their submission. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bkm/slurm.h"

void bkm_slurm_sweep_jobs_free(bkm_slurm_sweep_jobs_t *j)
{
    if (j == NULL)
        return;
    bkm_buf_free(&j->script_text);
    bkm_buf_free(&j->merge_text);
    bkm_buf_free(&j->db);
    bkm_buf_free(&j->shard_dir);
    bkm_buf_free(&j->how);
}

/* The shards' common sweep group: a random token, so that another script never collides. */
static int random_group(char group[17], bkm_err_t *err)
{
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return bkm_err_set(err, BKM_EIO, "getrandom: %s", strerror(errno));
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(group + 2 * i, 17 - 2 * i, "%02x", rnd[i]);
    return BKM_OK;
}

/* The files: --sbatch FILE or bkm-NODE-WORKLOAD[-array].sbatch, and the merge job's, with -merge
 * before the extension (after the name when it has none). */
static void file_names(const bkm_slurm_sweep_jobs_cfg_t *cfg, bkm_slurm_sweep_jobs_t *j)
{
    const char *dot;
    if (cfg->script)
        snprintf(j->script, sizeof j->script, "%s", cfg->script);
    else
        snprintf(j->script, sizeof j->script, "bkm-%.60s-%.60s%s.sbatch", cfg->job->node, cfg->job->workload,
                 j->array ? "-array" : "");
    dot = strrchr(j->script, '.');
    if (dot && strchr(dot, '/') == NULL && dot != j->script)
        snprintf(j->merge, sizeof j->merge, "%.*s-merge%s", (int)(dot - j->script), j->script, dot);
    else
        snprintf(j->merge, sizeof j->merge, "%s-merge", j->script);
}

/* A script's path as one shell word for a command line ("./" before one that starts with '-'). */
static void script_word(bkm_buf_t *b, const char *path)
{
    bkm_buf_t p;
    bkm_buf_init(&p);
    bkm_buf_printf(&p, "%s%s", path[0] == '-' ? "./" : "", path);
    bkm_slurm_sh_quote(b, bkm_buf_str(&p), 0);
    bkm_buf_free(&p);
}

static int cfg_check(const bkm_slurm_sweep_jobs_cfg_t *cfg, bkm_err_t *err)
{
    if (cfg->job == NULL || cfg->db == NULL || cfg->job->node == NULL || cfg->job->workload == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep jobs: job, node, workload and db are required");
    if (cfg->shards > 0 && cfg->strategy && strcmp(cfg->strategy, "grid") != 0)
        return bkm_err_set(err, BKM_EINVAL, "--slurm-array splits the grid: --strategy %s cannot be sharded (use grid)",
                           cfg->strategy);
    if (cfg->shard_count > 0)
        return bkm_err_set(err, BKM_EINVAL, "--shard is what the array's jobs run; not with --sbatch/--slurm-array");
    if (cfg->db[0] != '/' && cfg->cwd == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep jobs: the database '%s' is relative and no folder is given",
                           cfg->db);
    return BKM_OK;
}

int bkm_slurm_sweep_jobs_build(const bkm_slurm_sweep_jobs_cfg_t *cfg, bkm_slurm_sweep_jobs_t *out, bkm_err_t *err)
{
    bkm_slurm_job_t job;
    bkm_slurm_array_t arr;
    const char **words = NULL;
    char jname[96];
    int rc, n = 0;
    memset(out, 0, sizeof *out);
    bkm_buf_init(&out->script_text), bkm_buf_init(&out->merge_text), bkm_buf_init(&out->db);
    bkm_buf_init(&out->shard_dir), bkm_buf_init(&out->how);
    if ((rc = cfg_check(cfg, err)) < 0)
        return rc;
    out->array = cfg->shards > 0;
    job = *cfg->job;
    snprintf(jname, sizeof jname, "bkm-%.80s", job.workload);
    job.time = job.time ? job.time : "02:00:00";
    job.job_name = job.job_name ? job.job_name : jname;
    if (cfg->db[0] != '/')
        bkm_buf_printf(&out->db, "%s/", cfg->cwd);
    bkm_buf_puts(&out->db, cfg->db);
    bkm_buf_printf(&out->shard_dir, "%s.shards", bkm_buf_str(&out->db));
    if (cfg->group)
        snprintf(out->group, sizeof out->group, "%.16s", cfg->group);
    else if ((rc = random_group(out->group, err)) < 0)
        return rc;
    /* the array's shards split the grid: without a --strategy, the line says so */
    if ((words = bkm_calloc((size_t)cfg->sweep_argc + 2, sizeof *words)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "sweep jobs: out of memory");
    for (; n < cfg->sweep_argc; n++)
        words[n] = cfg->sweep_argv[n];
    if (out->array && cfg->strategy == NULL)
        words[n++] = "--strategy", words[n++] = "grid";
    memset(&arr, 0, sizeof arr);
    arr.shards = out->array ? cfg->shards : 1;
    arr.sweep_argv = words;
    arr.sweep_argc = n;
    arr.db = bkm_buf_str(&out->db);
    arr.shard_dir = bkm_buf_str(&out->shard_dir);
    arr.group = out->group;
    if (out->array) {
        rc = bkm_slurm_array_script_write(&job, &arr, &out->script_text, err);
        if (rc == BKM_OK)
            rc = bkm_slurm_merge_script_write(&job, &arr, &out->merge_text, err);
    } else {
        rc = bkm_slurm_sweep_script_write(&job, &arr, &out->script_text, err);
    }
    bkm_free(words);
    if (rc < 0)
        return rc;
    file_names(cfg, out);
    bkm_buf_puts(&out->how, "sbatch ");
    script_word(&out->how, out->script);
    if (out->array) {
        bkm_buf_puts(&out->how, "; then sbatch --dependency=afterany:<id> ");
        script_word(&out->how, out->merge);
    }
    if (out->script_text.oom || out->merge_text.oom || out->db.oom || out->shard_dir.oom || out->how.oom)
        return bkm_err_set(err, BKM_ENOMEM, "sweep jobs: out of memory");
    return BKM_OK;
}

int bkm_slurm_sweep_jobs_submit(const bkm_slurm_sweep_jobs_t *j, const bkm_slurm_submit_t *how, long long ids[2],
                                bkm_err_t *err)
{
    bkm_slurm_submit_t s = *how;
    bkm_buf_t msg;
    char dep[64];
    int rc;
    ids[0] = ids[1] = 0;
    bkm_buf_init(&msg);
    s.script = j->script;
    s.dependency = NULL;
    rc = bkm_slurm_submit_run(&s, &ids[0], &msg, err);
    if (rc == BKM_OK && j->array) {
        snprintf(dep, sizeof dep, "afterany:%lld", ids[0]);
        s.script = j->merge;
        s.dependency = dep;
        bkm_buf_free(&msg);
        bkm_buf_init(&msg);
        rc = bkm_slurm_submit_run(&s, &ids[1], &msg, err);
    }
    bkm_buf_free(&msg);
    return rc;
}
