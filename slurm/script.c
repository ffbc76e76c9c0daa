/* SPDX-License-Identifier: MIT */
/* Batch scripts: a setting (best-known, default or the seed's) as #SBATCH lines, exports and one
 * srun line laid out by NERSC's rules; the job array and merge job of a sweep spread over nodes. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bkm/slurm.h"

static void env_of(const bkm_slurm_setting_t *s, bkm_aff_env_t *env)
{
    memset(env, 0, sizeof *env);
    env->kmp_affinity = s->kmp_affinity[0] ? s->kmp_affinity : NULL;
    env->kmp_blocktime = s->kmp_blocktime[0] ? s->kmp_blocktime : NULL;
    env->kmp_hw_subset = s->kmp_hw_subset[0] ? s->kmp_hw_subset : NULL;
    env->omp_places = s->omp_places[0] ? s->omp_places : NULL;
    env->omp_proc_bind = s->omp_proc_bind[0] ? s->omp_proc_bind : NULL;
}

static int copy_str(char *dst, size_t cap, const char *v, const char *what, bkm_err_t *err)
{
    if (strlen(v) >= cap)
        return bkm_err_set(err, BKM_EINVAL, "%s '%.64s...' is too long (at most %zu bytes)", what, v, cap - 1);
    snprintf(dst, cap, "%s", v);
    return BKM_OK;
}

int bkm_slurm_setting_from_config(const char *config_json, bkm_slurm_setting_t *s, bkm_err_t *err)
{
    static const struct {
        const char *name;
        size_t off, cap;
    } vars[] = {
        {"KMP_AFFINITY", offsetof(bkm_slurm_setting_t, kmp_affinity), sizeof s->kmp_affinity},
        {"KMP_BLOCKTIME", offsetof(bkm_slurm_setting_t, kmp_blocktime), sizeof s->kmp_blocktime},
        {"KMP_HW_SUBSET", offsetof(bkm_slurm_setting_t, kmp_hw_subset), sizeof s->kmp_hw_subset},
        {"OMP_PLACES", offsetof(bkm_slurm_setting_t, omp_places), sizeof s->omp_places},
        {"OMP_PROC_BIND", offsetof(bkm_slurm_setting_t, omp_proc_bind), sizeof s->omp_proc_bind},
    };
    bkm_json_t *j = NULL;
    const bkm_json_t *env, *params, *x;
    const char *backend;
    double thr;
    int rc = BKM_OK;
    memset(s, 0, sizeof *s);
    if ((rc = bkm_json_parse(config_json, &j, err)) < 0 || j->type != BKM_JSON_OBJ) {
        rc = bkm_err_set(err, BKM_EINVAL, "stored configuration is not a JSON object: %.200s", config_json);
        goto out;
    }
    thr = bkm_json_get_num(j, "threads", NAN);
    if (!(thr >= 1 && thr <= BKM_CPUSET_MAX) || thr != floor(thr)) {
        rc = bkm_err_set(err, BKM_EINVAL, "stored configuration has no usable \"threads\": %.200s", config_json);
        goto out;
    }
    s->threads = (int)thr;
    if ((env = bkm_json_get(j, "env")) != NULL && env->type == BKM_JSON_OBJ)
        for (x = env->child; x; x = x->next) {
            size_t k;
            for (k = 0; k < sizeof vars / sizeof vars[0]; k++)
                if (strcmp(x->key, vars[k].name) == 0)
                    break;
            if (k == sizeof vars / sizeof vars[0] || x->type != BKM_JSON_STR) {
                rc = bkm_err_set(err, BKM_EINVAL, "stored configuration sets '%s', which a script cannot carry",
                                 x->key);
                goto out;
            }
            if ((rc = copy_str((char *)s + vars[k].off, vars[k].cap, x->str, x->key, err)) < 0)
                goto out;
        }
    if ((params = bkm_json_get(j, "params")) != NULL && params->type == BKM_JSON_OBJ)
        for (x = params->child; x; x = x->next) {
            if (s->n_params >= BKM_SLURM_MAX_PARAMS || x->type != BKM_JSON_STR) {
                rc = bkm_err_set(err, BKM_EINVAL, "stored configuration: parameter '%s' is not usable", x->key);
                goto out;
            }
            if (strlen(x->key) + strlen(x->str) + 2 > sizeof s->params[0]) {
                rc = bkm_err_set(err, BKM_EINVAL, "stored configuration: parameter '%s' is too long", x->key);
                goto out;
            }
            snprintf(s->params[s->n_params++], sizeof s->params[0], "%s=%s", x->key, x->str);
        }
    if ((backend = bkm_json_get_str(j, "backend")) != NULL &&
        (rc = copy_str(s->backend, sizeof s->backend, backend, "backend", err)) < 0)
        goto out;
    rc = BKM_OK;
out:
    bkm_json_free(j);
    return rc;
}

int bkm_slurm_setting_seed(const char *node, bkm_slurm_setting_t *s, bkm_err_t *err)
{
    memset(s, 0, sizeof *s);
    if (node == NULL || (strcmp(node, "haswell") != 0 && strcmp(node, "knl") != 0))
        return bkm_err_set(err, BKM_EINVAL, "--seed-bkm: the seed published settings for haswell and knl only, "
                           "not for node '%s'", node ? node : "");
    s->threads = strcmp(node, "knl") == 0 ? 68 : 32;
    snprintf(s->kmp_affinity, sizeof s->kmp_affinity, "granularity=fine,compact,1,0");
    snprintf(s->kmp_blocktime, sizeof s->kmp_blocktime, "1");
    return BKM_OK;
}

int bkm_slurm_setting_check(const bkm_slurm_setting_t *s, bkm_err_t *err)
{
    bkm_aff_env_t env;
    bkm_aff_setting_t res;
    bkm_aff_kmp_t kmp;
    int rc;
    if (s->threads < 1 || s->threads > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "threads %d is not in 1..%d", s->threads, BKM_CPUSET_MAX);
    env_of(s, &env);
    if ((rc = bkm_aff_setting_resolve(&env, &res, err)) < 0)
        return rc;
    if (res.n_ignored > 0)
        return bkm_err_set(err, BKM_EINVAL, "the setting's variables cancel each other: %s would be ignored",
                           res.ignored[0]);
    if (env.kmp_affinity && (env.omp_places || env.omp_proc_bind) &&
        bkm_aff_kmp_parse(env.kmp_affinity, &kmp, NULL) == BKM_OK && kmp.type != BKM_AFF_TYPE_UNSET)
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY='%s' and %s cancel each other (libomp applies them in "
                           "environment order): a script exports one of the two", env.kmp_affinity,
                           env.omp_proc_bind ? "OMP_PROC_BIND" : "OMP_PLACES");
    for (int i = 0; i < s->n_params; i++)
        for (const char *p = s->params[i]; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("=_.,:+-x", *p))
                return bkm_err_set(err, BKM_EINVAL, "parameter '%s' holds '%c'", s->params[i], *p);
    return BKM_OK;
}

int bkm_slurm_layout(int pus, int cores, int ranks_per_node, bkm_slurm_layout_t *l, bkm_err_t *err)
{
    int r = ranks_per_node, t;
    memset(l, 0, sizeof *l);
    if (pus < 1 || cores < 1 || pus % cores != 0)
        return bkm_err_set(err, BKM_EINVAL, "node of %d CPUs and %d cores: not a whole number of CPUs per core",
                           pus, cores);
    if (r < 1 || r > pus)
        return bkm_err_set(err, BKM_EINVAL, "--ranks-per-node %d is not in 1..%d (the node's logical CPUs)", r, pus);
    t = pus / cores;
    if (r <= cores) {
        if (cores % r == 0) {
            l->cpus_per_task = pus / r;
            snprintf(l->why, sizeof l->why, "%d rank(s) divide the %d cores: -c = %d CPUs / %d", r, cores, pus, r);
        } else {
            l->cpus_per_task = cores / r * t;
            snprintf(l->why, sizeof l->why, "%d ranks do not divide the %d cores: -c = floor(%d/%d) x %d = %d, "
                     "%d core(s) idle", r, cores, cores, r, t, cores / r * t, cores - cores / r * r);
        }
        l->cpu_bind = "cores";
        l->packed = l->cpus_per_task / t * r == cores;
    } else {
        l->cpus_per_task = pus % r == 0 ? pus / r : pus / r > 0 ? pus / r : 1;
        l->cpu_bind = "threads";
        l->packed = l->cpus_per_task * r == pus;
        snprintf(l->why, sizeof l->why, "%d ranks exceed the %d cores: -c = %d, bound to hardware threads", r,
                 cores, l->cpus_per_task);
    }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */

/* A Slurm option value written unquoted after "#SBATCH -X ": no blanks, quotes or metacharacters. */
static int word_check(const char *what, const char *v, const char *extra, bkm_err_t *err)
{
    if (v == NULL)
        return BKM_OK;
    if (v[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "%s is empty", what);
    if (strlen(v) > 200)
        return bkm_err_set(err, BKM_EINVAL, "%s '%.40s...' is too long", what, v);
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.,:+-@", *p) && !(extra && strchr(extra, *p)))
            return bkm_err_set(err, BKM_EINVAL, "%s '%s': character '%c' is not allowed here", what, v,
                               isprint((unsigned char)*p) ? *p : '?');
    return BKM_OK;
}

static int all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 4)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Slurm's time forms: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (or "infinite"). */
static int time_ok(const char *t)
{
    const char *dash = strchr(t, '-'), *p = dash ? dash + 1 : t;
    int parts = 0;
    if (strcmp(t, "infinite") == 0 || strcmp(t, "UNLIMITED") == 0)
        return 1;
    if (dash && !all_digits(t, (size_t)(dash - t)))
        return 0;
    for (;;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (!all_digits(p, n) || ++parts > 3)
            return 0;
        if (!c)
            break;
        p = c + 1;
    }
    return 1;
}

int bkm_slurm_job_check(const bkm_slurm_job_t *job, bkm_err_t *err)
{
    bkm_slurm_layout_t l;
    int rc;
    if (job->workload == NULL || job->node == NULL || job->tune == NULL)
        return bkm_err_set(err, BKM_EINVAL, "slurm job: node, workload and tune are required");
    if ((rc = word_check("--workload", job->workload, NULL, err)) < 0 ||
        (rc = word_check("--node", job->node, "/", err)) < 0 || (rc = word_check("--account", job->account, NULL, err)) < 0 ||
        (rc = word_check("--qos", job->qos, NULL, err)) < 0 || (rc = word_check("--job-name", job->job_name, NULL, err)) < 0 ||
        (rc = word_check("--partition", job->partition, NULL, err)) < 0 ||
        (rc = word_check("--mpi", job->mpi && job->mpi[0] ? job->mpi : NULL, NULL, err)) < 0 ||
        (rc = word_check("--output", job->output, "/%", err)) < 0 ||
        (rc = word_check("constraint", job->constraint && job->constraint[0] ? job->constraint : NULL, "&|[]*", err)) < 0)
        return rc;
    if (job->time == NULL || !time_ok(job->time))
        return bkm_err_set(err, BKM_EINVAL, "--time '%s' is not a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                           "D-HH:MM:SS)", job->time ? job->time : "");
    if (job->nodes < 1 || job->nodes > 100000)
        return bkm_err_set(err, BKM_EINVAL, "--nodes %d is not in 1..100000", job->nodes);
    if (job->command && (job->command[0] == '\0' || strpbrk(job->command, "\n\r")))
        return bkm_err_set(err, BKM_EINVAL, "--command must be one non-empty line");
    for (const char *p = job->tune; *p; p++)
        if (*p == '\n' || *p == '\'')
            return bkm_err_set(err, BKM_EINVAL, "the tune path '%s' holds a quote or newline", job->tune);
    if ((rc = bkm_slurm_layout(job->pus, job->cores, job->ranks_per_node, &l, err)) < 0)
        return rc;
    if ((rc = bkm_slurm_setting_check(&job->setting, err)) < 0)
        return rc;
    if (job->setting.threads > l.cpus_per_task)
        return bkm_err_set(err, BKM_EINVAL, "%d threads per rank do not fit the %d CPUs srun -c gives each of %d "
                           "rank(s) per node of %s", job->setting.threads, l.cpus_per_task, job->ranks_per_node,
                           job->node);
    return BKM_OK;
}

void bkm_slurm_job_defaults(bkm_slurm_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->nodes = 1;
    job->ranks_per_node = 1;
    job->time = "00:30:00";
    job->qos = "regular";
    job->mpi = "pmi2";
    job->origin = BKM_SLURM_FROM_BEST;
    job->prov.median_ms = job->prov.ci_lo_ms = job->prov.ci_hi_ms = NAN;
    job->prov.default_median_ms = job->prov.speedup = NAN;
}

/* 'value' for the shell, with embedded single quotes as '\'' */
static void sh_quote(bkm_buf_t *b, const char *v)
{
    bkm_buf_puts(b, "'");
    for (const char *p = v; *p; p++)
        if (*p == '\'')
            bkm_buf_puts(b, "'\\''");
        else
            bkm_buf_append(b, p, 1);
    bkm_buf_puts(b, "'");
}

static const char *or_unknown(const char *s)
{
    return s && s[0] ? s : "unknown";
}

static void generated_write(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    bkm_buf_printf(b, "# Written by bkm %s (`%s`) on %s at %s.\n", or_unknown(job->generator_revision),
                   or_unknown(job->generated_by), or_unknown(job->generator_host), or_unknown(job->generated_at));
}

static void provenance_write(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    const bkm_slurm_provenance_t *p = &job->prov;
    generated_write(job, b);
    switch (job->origin) {
    case BKM_SLURM_FROM_BEST:
        bkm_buf_printf(b, "# Setting: the best-known setting of node %s, workload %s, MEASURED by bkm:\n", job->node,
                       job->workload);
        bkm_buf_printf(b, "#   sweep %s on host %s, stored %s, bkm revision %s%s%s\n", or_unknown(p->sweep),
                       or_unknown(p->host), or_unknown(p->measured_at), or_unknown(p->git_revision),
                       p->db ? ", database " : "", p->db ? p->db : "");
        bkm_buf_printf(b, "#   median %.4g ms, 95%% interval [%.4g, %.4g] ms (median of per-process medians)\n",
                       p->median_ms, p->ci_lo_ms, p->ci_hi_ms);
        if (isfinite(p->default_median_ms))
            bkm_buf_printf(b, "#   default %.4g ms: speedup vs default %.3fx, %s\n", p->default_median_ms, p->speedup,
                           p->significant ? "significant (beats the default beyond the noise)"
                                          : "NOT significant: the default setting stands");
        break;
    case BKM_SLURM_FROM_DEFAULT:
        bkm_buf_printf(b, "# Setting: the default setting of node profile %s (--default), NOT measured by bkm.\n",
                       job->node);
        break;
    case BKM_SLURM_FROM_SEED:
        bkm_buf_printf(b, "# Setting: PUBLISHED by the seed for Cori %s (--seed-bkm), NOT measured by bkm.\n",
                       job->node);
        break;
    }
}

static void sbatch_lines(const bkm_slurm_job_t *job, const char *output, const char *extra, bkm_buf_t *b)
{
    bkm_buf_printf(b, "#SBATCH -N %d\n", job->nodes);
    if (job->constraint && job->constraint[0])
        bkm_buf_printf(b, "#SBATCH -C %s\n", job->constraint);
    if (job->partition)
        bkm_buf_printf(b, "#SBATCH -p %s\n", job->partition);
    if (job->qos)
        bkm_buf_printf(b, "#SBATCH -q %s\n", job->qos);
    bkm_buf_printf(b, "#SBATCH -t %s\n", job->time);
    if (job->account)
        bkm_buf_printf(b, "#SBATCH -A %s\n", job->account);
    bkm_buf_printf(b, "#SBATCH -J %s\n", job->job_name ? job->job_name : "bkm");
    bkm_buf_printf(b, "#SBATCH -o %s\n", output);
    if (extra)
        bkm_buf_puts(b, extra);
}

static void exports_write(const bkm_slurm_setting_t *s, bkm_buf_t *b)
{
    bkm_aff_env_t env;
    const char *names[8], *values[8];
    int n;
    env_of(s, &env);
    n = bkm_aff_env_export(&env, names, values);
    bkm_buf_puts(b, "# The setting, exported to every rank (srun's default --export=ALL), in the order libomp\n"
                    "# applies it; nothing else that steers OpenMP placement is inherited.\n");
    bkm_buf_puts(b, "unset OMP_PLACES OMP_PROC_BIND KMP_AFFINITY KMP_HW_SUBSET KMP_PLACE_THREADS KMP_BLOCKTIME "
                    "GOMP_CPU_AFFINITY\n");
    bkm_buf_printf(b, "export OMP_NUM_THREADS=%d\n", s->threads);
    for (int i = 0; i < n; i++) {
        bkm_buf_printf(b, "export %s=", names[i]);
        sh_quote(b, values[i]);
        bkm_buf_puts(b, "\n");
    }
}

/* The per-rank line: each rank says who it is and what it sees, then runs the program. */
static void srun_write(const bkm_slurm_job_t *job, const bkm_slurm_layout_t *l, bkm_buf_t *b)
{
    const bkm_slurm_setting_t *s = &job->setting;
    int world = job->nodes * job->ranks_per_node;
    bkm_buf_printf(b, "# srun by NERSC's rules on %s (%d CPUs, %d cores): %s; --cpu-bind=%s%s\n", job->node, job->pus,
                   job->cores, l->why, l->cpu_bind, l->packed ? "" : " (the node is not fully packed: needed)");
    if (job->mpi && job->mpi[0])
        bkm_buf_printf(b, "# --mpi=%s: MPICH under srun needs PMI2, else every rank is a world of its own\n", job->mpi);
    bkm_buf_printf(b, "echo \"bkm: planned world size %d (%d node(s) x %d rank(s)), %d thread(s) per rank\"\n", world,
                   job->nodes, job->ranks_per_node, s->threads);
    bkm_buf_printf(b, "srun -n %d --ntasks-per-node=%d -c %d --cpu-bind=%s", world, job->ranks_per_node,
                   l->cpus_per_task, l->cpu_bind);
    if (job->mpi && job->mpi[0])
        bkm_buf_printf(b, " --mpi=%s", job->mpi);
    bkm_buf_puts(b, " \\\n  bash -c 'echo \"bkm rank ${SLURM_PROCID} of ${SLURM_NTASKS} on ${SLURMD_NODENAME:-$(hostname)}: "
                    "OMP_NUM_THREADS=${OMP_NUM_THREADS-} KMP_AFFINITY=${KMP_AFFINITY-} KMP_BLOCKTIME=${KMP_BLOCKTIME-} "
                    "KMP_HW_SUBSET=${KMP_HW_SUBSET-} OMP_PLACES=${OMP_PLACES-} OMP_PROC_BIND=${OMP_PROC_BIND-}\"; "
                    "exec \"$@\"' bkm-rank \\\n  ");
    if (job->command) {
        bkm_buf_printf(b, "%s\n", job->command);
        return;
    }
    if (job->train) {   /* the MPI training run: every rank trains (its parameters, no affinity options) */
        bkm_buf_printf(b, "\"$TUNE\" train --workload %s --threads \"$OMP_NUM_THREADS\"", job->workload);
        if (s->backend[0])
            bkm_buf_printf(b, " --param backend=%s", s->backend);
        for (int i = 0; i < s->n_params; i++)
            bkm_buf_printf(b, " --param %s", s->params[i]);
        bkm_buf_puts(b, "\n");
        return;
    }
    bkm_buf_printf(b, "\"$TUNE\" run --workload %s --threads \"$OMP_NUM_THREADS\"", job->workload);
    if (s->kmp_affinity[0])
        bkm_buf_puts(b, " --affinity \"$KMP_AFFINITY\"");
    if (s->kmp_blocktime[0])
        bkm_buf_puts(b, " --blocktime \"$KMP_BLOCKTIME\"");
    if (s->kmp_hw_subset[0])
        bkm_buf_puts(b, " --hw-subset \"$KMP_HW_SUBSET\"");
    if (s->omp_places[0])
        bkm_buf_puts(b, " --places \"$OMP_PLACES\"");
    if (s->omp_proc_bind[0])
        bkm_buf_puts(b, " --proc-bind \"$OMP_PROC_BIND\"");
    if (s->backend[0])
        bkm_buf_printf(b, " --backend %s", s->backend);
    for (int i = 0; i < s->n_params; i++)
        bkm_buf_printf(b, " --param %s", s->params[i]);
    bkm_buf_puts(b, "\n");
}

static void tune_var(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    bkm_buf_printf(b, "TUNE=${BKM_TUNE:-'%s'}\n", job->tune);
}

int bkm_slurm_script_write(const bkm_slurm_job_t *job, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_slurm_layout_t l;
    bkm_buf_t o;
    int rc;
    if ((rc = bkm_slurm_job_check(job, err)) < 0 || (rc = bkm_slurm_layout(job->pus, job->cores, job->ranks_per_node, &l, err)) < 0)
        return rc;
    bkm_buf_init(&o);
    if (job->output)
        bkm_buf_puts(&o, job->output);
    else
        bkm_buf_printf(&o, "%s-%%j.out", job->job_name ? job->job_name : "bkm");
    bkm_buf_puts(out, "#!/bin/bash\n");
    provenance_write(job, out);
    sbatch_lines(job, bkm_buf_str(&o), NULL, out);
    bkm_buf_puts(out, "set -eu\n");
    exports_write(&job->setting, out);
    tune_var(job, out);
    srun_write(job, &l, out);
    bkm_buf_free(&o);
    return BKM_OK;
}

static int array_check(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_err_t *err)
{
    int rc;
    if (a->shards < 1 || a->shards > 10000)
        return bkm_err_set(err, BKM_EINVAL, "--slurm-array %d is not in 1..10000", a->shards);
    if (a->db == NULL || a->shard_dir == NULL || a->sweep_args == NULL)
        return bkm_err_set(err, BKM_EINVAL, "slurm array: db, shard_dir and sweep_args are required");
    if (a->group && (rc = word_check("shard group", a->group, NULL, err)) < 0)
        return rc;
    if (strpbrk(a->db, "'\n") || strpbrk(a->shard_dir, "'\n") || strchr(a->sweep_args, '\n'))
        return bkm_err_set(err, BKM_EINVAL, "slurm array: a path holds a quote or newline");
    if ((rc = word_check("--time", job->time, NULL, err)) < 0 || !time_ok(job->time))
        return bkm_err_set(err, BKM_EINVAL, "--time '%s' is not a Slurm time", job->time ? job->time : "");
    if ((rc = word_check("--account", job->account, NULL, err)) < 0 || (rc = word_check("--qos", job->qos, NULL, err)) < 0 ||
        (rc = word_check("--job-name", job->job_name, NULL, err)) < 0 ||
        (rc = word_check("--partition", job->partition, NULL, err)) < 0 ||
        (rc = word_check("constraint", job->constraint && job->constraint[0] ? job->constraint : NULL, "&|[]*", err)) < 0)
        return rc;
    return BKM_OK;
}

int bkm_slurm_array_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err)
{
    int rc;
    char extra[64];
    if ((rc = array_check(job, a, err)) < 0)
        return rc;
    if (a->group == NULL)
        return bkm_err_set(err, BKM_EINVAL, "slurm array: the shards' group is required");
    snprintf(extra, sizeof extra, "#SBATCH --array=0-%d\n", a->shards - 1);
    bkm_buf_puts(out, "#!/bin/bash\n");
    generated_write(job, out);
    bkm_buf_printf(out, "# The sweep of workload %s on node %s, split into %d shards (one per array task).\n"
                        "# Each shard writes its own SQLite file on node-local storage (never SQLite on a shared\n"
                        "# file system), then copies the closed file to the shard folder; the merge job merges them.\n",
                   job->workload, job->node, a->shards);
    {
        bkm_buf_t o;
        bkm_buf_init(&o);
        bkm_buf_printf(&o, "%s-%%A_%%a.out", job->job_name ? job->job_name : "bkm");
        sbatch_lines(job, job->output ? job->output : bkm_buf_str(&o), extra, out);
        bkm_buf_free(&o);
    }
    bkm_buf_puts(out, "set -eu\n");
    tune_var(job, out);
    bkm_buf_printf(out, "SHARDS='%s'\nK=%d\nI=${SLURM_ARRAY_TASK_ID:?not an array task}\n", a->shard_dir, a->shards);
    bkm_buf_puts(out, "LOCAL=${TMPDIR:-/tmp}/bkm-shard-${SLURM_ARRAY_JOB_ID:-$$}-$I.sqlite\n"
                      "mkdir -p \"$SHARDS\"\n"
                      "echo \"bkm: shard $I of $K into $LOCAL\"\n");
    bkm_buf_printf(out, "rc=0\n\"$TUNE\" sweep %s --db \"$LOCAL\" --shard \"$I/$K\" --shard-group "
                        "\"${BKM_SHARD_GROUP:-%s}\" || rc=$?\n",
                   a->sweep_args, a->group);
    bkm_buf_puts(out, "if [ \"$rc\" -ne 0 ] && [ \"$rc\" -ne 4 ]; then echo \"bkm: shard $I failed (exit $rc)\" >&2; "
                      "exit \"$rc\"; fi\n"
                      "cp \"$LOCAL\" \"$SHARDS/shard-$I-of-$K.sqlite.part\"\n"
                      "mv \"$SHARDS/shard-$I-of-$K.sqlite.part\" \"$SHARDS/shard-$I-of-$K.sqlite\"\n"
                      "rm -f \"$LOCAL\"\n"
                      "echo \"bkm: shard $I done: $SHARDS/shard-$I-of-$K.sqlite\"\n"
                      "exit \"$rc\"\n");
    return BKM_OK;
}

int bkm_slurm_merge_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err)
{
    int rc;
    if ((rc = array_check(job, a, err)) < 0)
        return rc;
    bkm_buf_puts(out, "#!/bin/bash\n");
    generated_write(job, out);
    bkm_buf_printf(out, "# The merge job of the %d-shard sweep of workload %s on node %s: merges every shard into\n"
                        "# the database and re-runs the unsplit sweep there, which finds every search trial stored,\n"
                        "# confirms the top candidates against the default and derives the best-known setting.\n"
                        "# Submitted with --dependency=afterany on the array, so it also runs after a failed shard\n"
                        "# (or run it by hand): a shard whose task failed leaves no shard file; the merge then\n"
                        "# merges the shards that exist into the database and names the missing ones (exit 4).\n",
                   a->shards, job->workload, job->node);
    {
        bkm_buf_t o;
        bkm_buf_init(&o);
        bkm_buf_printf(&o, "%s-merge-%%j.out", job->job_name ? job->job_name : "bkm");
        sbatch_lines(job, bkm_buf_str(&o), NULL, out);
        bkm_buf_free(&o);
    }
    bkm_buf_puts(out, "set -u\n");
    tune_var(job, out);
    bkm_buf_printf(out, "SHARDS='%s'\nDB='%s'\nK=%d\n", a->shard_dir, a->db, a->shards);
    bkm_buf_puts(out, "LOCAL=${TMPDIR:-/tmp}/bkm-merge-${SLURM_JOB_ID:-$$}.sqlite\n"
                      "rm -f \"$LOCAL\"\n"
                      "have=() missing=()\n"
                      "for ((i = 0; i < K; i++)); do\n"
                      "  f=\"$SHARDS/shard-$i-of-$K.sqlite\"\n"
                      "  if [ -f \"$f\" ]; then have+=(\"$f\"); else missing+=(\"$i\"); fi\n"
                      "done\n"
                      "if [ ${#have[@]} -gt 0 ]; then\n"
                      "  \"$TUNE\" merge \"$LOCAL\" \"${have[@]}\" || exit $?\n"
                      "fi\n"
                      "if [ ${#missing[@]} -gt 0 ]; then\n"
                      "  if [ ${#have[@]} -gt 0 ]; then \"$TUNE\" merge \"$DB\" \"$LOCAL\" || exit $?; fi\n"
                      "  rm -f \"$LOCAL\"\n"
                      "  echo \"bkm: merge: shard(s) ${missing[*]} of $K missing (not in $SHARDS; failed or never ran):\"\\\n"
                      "       \"merged the other ${#have[@]} into $DB; no best-known setting derived\" >&2\n"
                      "  exit 4\n"
                      "fi\n"
                      "echo \"bkm: merged all $K shards into $DB\"\n");
    bkm_buf_printf(out, "rc=0\n\"$TUNE\" sweep %s --db \"$LOCAL\" || rc=$?\n", a->sweep_args);
    bkm_buf_puts(out, "if [ \"$rc\" -ne 0 ] && [ \"$rc\" -ne 4 ]; then echo \"bkm: the confirmation failed (exit $rc); the \"\\\n"
                      "  \"merged shards stay in $LOCAL\" >&2; exit \"$rc\"; fi\n"
                      "\"$TUNE\" merge \"$DB\" \"$LOCAL\" || exit $?\n"
                      "rm -f \"$LOCAL\"\n");
    bkm_buf_printf(out, "\"$TUNE\" best --node %s --workload %s --db \"$DB\" || true\nexit \"$rc\"\n", job->node,
                   job->workload);
    return BKM_OK;
}

int bkm_slurm_sweep_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err)
{
    int rc;
    bkm_slurm_array_t one = {1, a->sweep_args, a->db, ".", NULL};
    bkm_buf_t o;
    if ((rc = array_check(job, &one, err)) < 0)
        return rc;
    bkm_buf_puts(out, "#!/bin/bash\n");
    generated_write(job, out);
    bkm_buf_printf(out, "# The sweep of workload %s on node %s, run where it belongs. SQLite must not be written\n"
                        "# by a job on a shared file system: the sweep writes node-local storage, then one merge\n"
                        "# copies its results into the database.\n",
                   job->workload, job->node);
    bkm_buf_init(&o);
    bkm_buf_printf(&o, "%s-%%j.out", job->job_name ? job->job_name : "bkm");
    sbatch_lines(job, job->output ? job->output : bkm_buf_str(&o), NULL, out);
    bkm_buf_free(&o);
    bkm_buf_puts(out, "set -u\n");
    tune_var(job, out);
    bkm_buf_printf(out, "DB='%s'\n", a->db);
    bkm_buf_puts(out, "LOCAL=${TMPDIR:-/tmp}/bkm-sweep-${SLURM_JOB_ID:-$$}.sqlite\nrc=0\n");
    bkm_buf_printf(out, "\"$TUNE\" sweep %s --db \"$LOCAL\" || rc=$?\n", a->sweep_args);
    bkm_buf_puts(out, "if [ -f \"$LOCAL\" ]; then \"$TUNE\" merge \"$DB\" \"$LOCAL\" && rm -f \"$LOCAL\"; fi\n");
    bkm_buf_printf(out, "\"$TUNE\" best --node %s --workload %s --db \"$DB\" || true\nexit \"$rc\"\n", job->node,
                   job->workload);
    return BKM_OK;
}
