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
    env->gomp_cpu_affinity = s->gomp_cpu_affinity[0] ? s->gomp_cpu_affinity : NULL;
    env->omp_wait_policy = s->omp_wait_policy[0] ? s->omp_wait_policy : NULL;
}

/* The setting's variables for GNU libgomp (s->runtime == LIBGOMP). */
static void gomp_env_of(const bkm_slurm_setting_t *s, bkm_aff_gomp_env_t *env)
{
    memset(env, 0, sizeof *env);
    env->omp_places = s->omp_places[0] ? s->omp_places : NULL;
    env->omp_proc_bind = s->omp_proc_bind[0] ? s->omp_proc_bind : NULL;
    env->gomp_cpu_affinity = s->gomp_cpu_affinity[0] ? s->gomp_cpu_affinity : NULL;
    env->omp_wait_policy = s->omp_wait_policy[0] ? s->omp_wait_policy : NULL;
    env->gomp_spincount = s->gomp_spincount[0] ? s->gomp_spincount : NULL;
}

/* A libgomp setting: libgomp's own strict checks; a KMP_* variable does nothing there. */
static int gomp_setting_check(const bkm_slurm_setting_t *s, bkm_err_t *err)
{
    bkm_aff_gomp_env_t env;
    const char *kmp = s->kmp_affinity[0] ? "KMP_AFFINITY" : s->kmp_blocktime[0] ? "KMP_BLOCKTIME"
                      : s->kmp_hw_subset[0] ? "KMP_HW_SUBSET" : NULL;
    if (kmp != NULL)
        return bkm_err_set(err, BKM_EINVAL, "%s is ignored by GNU libgomp, which the program loads: a script for it "
                           "exports OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY/OMP_WAIT_POLICY/GOMP_SPINCOUNT only", kmp);
    gomp_env_of(s, &env);
    return bkm_aff_gomp_env_check(&env, err);
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
        {"GOMP_CPU_AFFINITY", offsetof(bkm_slurm_setting_t, gomp_cpu_affinity), sizeof s->gomp_cpu_affinity},
        {"OMP_WAIT_POLICY", offsetof(bkm_slurm_setting_t, omp_wait_policy), sizeof s->omp_wait_policy},
        {"GOMP_SPINCOUNT", offsetof(bkm_slurm_setting_t, gomp_spincount), sizeof s->gomp_spincount},
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
    if (s->runtime == BKM_AFF_RUNTIME_LIBGOMP && (rc = gomp_setting_check(s, err)) < 0)
        return rc;
    if (s->runtime != BKM_AFF_RUNTIME_LIBGOMP && s->gomp_spincount[0])
        return bkm_err_set(err, BKM_EINVAL, "GOMP_SPINCOUNT is read by GNU libgomp only: LLVM libomp ignores it");
    env_of(s, &env);
    if (s->runtime == BKM_AFF_RUNTIME_LIBGOMP)
        goto params;
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
params:
    for (int i = 0; i < s->n_params; i++) {
        const char *eq = strchr(s->params[i], '=');
        if (eq == NULL || eq == s->params[i])
            return bkm_err_set(err, BKM_EINVAL, "parameter '%.100s' is not key=value", s->params[i]);
        for (const char *p = s->params[i]; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("=_.,:+-x", *p))
                return bkm_err_set(err, BKM_EINVAL, "parameter '%.100s' holds '%c'", s->params[i],
                                   isprint((unsigned char)*p) ? *p : '?');
    }
    /* the backend: a name (native, onednn), never more */
    for (const char *p = s->backend; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return bkm_err_set(err, BKM_EINVAL, "backend '%.15s' holds '%c': not a backend name", s->backend,
                               isprint((unsigned char)*p) ? *p : '?');
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

int bkm_slurm_layout_rules(const bkm_batch_rules_t *rules, int pus, int cores, int ranks_per_node, int threads,
                           bkm_slurm_layout_t *l, bkm_err_t *err)
{
    int rc, t, c, r = ranks_per_node;
    if ((rc = bkm_slurm_layout(pus, cores, r, l, err)) < 0 || rules == NULL)
        return rc;
    t = pus / cores;
    if (threads < 1)
        threads = 1;
    if (rules->c_rule == BKM_BATCH_C_THREADS || rules->c_rule == BKM_BATCH_C_CORES) {
        c = rules->c_rule == BKM_BATCH_C_THREADS ? threads : threads * t;
        if ((long long)r * c > pus)
            return bkm_err_set(err, BKM_EINVAL, "%d rank(s) per node x -c %d (%d thread(s)%s) = %lld CPUs exceed the "
                               "%d of the node", r, c, threads, rules->c_rule == BKM_BATCH_C_CORES ?
                               " x a whole core each" : "", (long long)r * c, pus);
        l->cpus_per_task = c;
        l->packed = r * c == pus;
        if (rules->c_rule == BKM_BATCH_C_THREADS)
            snprintf(l->why, sizeof l->why, "-c = the %d OpenMP thread(s) of a rank", threads);
        else
            snprintf(l->why, sizeof l->why, "-c = %d thread(s) x %d hardware thread(s) per core = %d (a core per "
                     "thread)", threads, t, c);
    }
    if (rules->cpu_bind[0] && strcmp(rules->cpu_bind, "auto") != 0)
        l->cpu_bind = rules->cpu_bind;
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
    if (job->command) {
        if (job->command[0] == '\0')
            return bkm_err_set(err, BKM_EINVAL, "--command must be one non-empty line");
        for (const unsigned char *p = (const unsigned char *)job->command; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                return bkm_err_set(err, BKM_EINVAL, "--command must be one line without control characters "
                                   "(it holds 0x%02x)", *p);
    }
    if (job->program_argv != NULL) {   /* read back from a database: data, checked before it is quoted */
        if (job->program_argc < 1 || job->program_argc > 256 || job->program_argv[0] == NULL ||
            job->program_argv[0][0] != '/')
            return bkm_err_set(err, BKM_EINVAL, "the stored program needs 1..256 words and an absolute path first "
                               "(got %d words, '%.200s')", job->program_argc,
                               job->program_argc > 0 && job->program_argv[0] ? job->program_argv[0] : "");
        for (int i = 0; i < job->program_argc; i++) {
            if (job->program_argv[i] == NULL || strlen(job->program_argv[i]) > 4096)
                return bkm_err_set(err, BKM_EINVAL, "the stored program's word %d is missing or too long", i);
            for (const unsigned char *p = (const unsigned char *)job->program_argv[i]; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                    return bkm_err_set(err, BKM_EINVAL, "the stored program's word %d holds a control character "
                                       "(0x%02x)", i, *p);
        }
    }
    if (job->tune[0] != '/')
        return bkm_err_set(err, BKM_EINVAL, "the tune path '%.300s' is not absolute", job->tune);
    for (const unsigned char *p = (const unsigned char *)job->tune; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return bkm_err_set(err, BKM_EINVAL, "the tune path '%.300s' holds a control character", job->tune);
    if ((rc = bkm_slurm_layout_rules(job->rules, job->pus, job->cores, job->ranks_per_node, job->setting.threads, &l,
                                     err)) < 0)
        return rc;
    if ((rc = bkm_slurm_setting_check(&job->setting, err)) < 0)
        return rc;
    if (job->check_binding && job->setting.runtime == BKM_AFF_RUNTIME_LIBGOMP)
        return bkm_err_set(err, BKM_EINVAL, "--check-binding: bkm's verify checks LLVM libomp's binding, and the "
                           "program loads GNU libgomp");
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

void bkm_slurm_sh_quote(bkm_buf_t *b, const char *v, int always)
{
    int plain = !always && v[0] != '\0';
    for (const char *p = v; plain && *p; p++)
        plain = isalnum((unsigned char)*p) || strchr("_-./=:,+@%", *p) != NULL;
    if (plain) {
        bkm_buf_puts(b, v);
        return;
    }
    bkm_buf_puts(b, "'");
    for (const char *p = v; *p; p++)
        if (*p == '\'')
            bkm_buf_puts(b, "'\\''");
        else
            bkm_buf_append(b, p, 1);
    bkm_buf_puts(b, "'");
}

void bkm_slurm_sh_comment(bkm_buf_t *b, const char *text)
{
    bkm_buf_t t;
    const char *p;
    bkm_buf_init(&t);
    for (p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n')
            bkm_buf_puts(&t, "\\n");
        else if (c == '\r')
            bkm_buf_puts(&t, "\\r");
        else if (c == '\t')
            bkm_buf_puts(&t, "\\t");
        else if (c < 0x20 || c == 0x7f)
            bkm_buf_printf(&t, "\\x%02x", c);
        else
            bkm_buf_append(&t, p, 1);
    }
    /* ill-formed UTF-8 becomes U+FFFD: the script stays a text file */
    bkm_buf_append_utf8(b, bkm_buf_str(&t), t.len);
    bkm_buf_free(&t);
}

/* One comment line: the formatted text (values included) with every control character escaped
 * (bkm_slurm_sh_comment), then the newline that ends it. */
static void BKM_PRINTF(2, 3) comment_line(bkm_buf_t *b, const char *fmt, ...)
{
    bkm_buf_t t;
    va_list ap;
    bkm_buf_init(&t);
    va_start(ap, fmt);
    bkm_buf_vprintf(&t, fmt, ap);
    va_end(ap);
    bkm_slurm_sh_comment(b, bkm_buf_str(&t));
    bkm_buf_puts(b, "\n");
    bkm_buf_free(&t);
}

static const char *or_unknown(const char *s)
{
    return s && s[0] ? s : "unknown";
}

static void generated_write(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    comment_line(b, "# Written by bkm %s (`%s`) on %s at %s.", or_unknown(job->generator_revision),
                 or_unknown(job->generated_by), or_unknown(job->generator_host), or_unknown(job->generated_at));
    if (job->tune_note)
        comment_line(b, "# Runs %s (%s); BKM_TUNE=PATH in the job's environment runs another.", job->tune,
                     job->tune_note);
}

static void provenance_write(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    const bkm_slurm_provenance_t *p = &job->prov;
    generated_write(job, b);
    switch (job->origin) {
    case BKM_SLURM_FROM_BEST:
        comment_line(b, "# Setting: the best-known setting of node %s, workload %s, MEASURED by bkm:", job->node,
                     job->workload);
        comment_line(b, "#   sweep %s on host %s, stored %s, bkm revision %s%s%s", or_unknown(p->sweep),
                     or_unknown(p->host), or_unknown(p->measured_at), or_unknown(p->git_revision),
                     p->db ? ", database " : "", p->db ? p->db : "");
        comment_line(b, "#   median %.4g ms, 95%% interval [%.4g, %.4g] ms (median of per-process medians)",
                     p->median_ms, p->ci_lo_ms, p->ci_hi_ms);
        if (isfinite(p->default_median_ms))
            comment_line(b, "#   default %.4g ms: speedup vs default %.3fx, %s", p->default_median_ms, p->speedup,
                         p->significant ? "significant (beats the default beyond the noise)"
                                        : "NOT significant: the default setting stands");
        break;
    case BKM_SLURM_FROM_DEFAULT:
        comment_line(b, "# Setting: the default setting of node profile %s (--default), NOT measured by bkm.",
                     job->node);
        break;
    case BKM_SLURM_FROM_SEED:
        comment_line(b, "# Setting: PUBLISHED by the seed for Cori %s (--seed-bkm), NOT measured by bkm.", job->node);
        break;
    case BKM_SLURM_FROM_SITE:
        comment_line(b, "# Setting: RECOMMENDED for node %s by %s (--site-prior: %s), NOT measured by bkm.", job->node,
                     job->rules && job->rules->prior_source[0] ? job->rules->prior_source : "its site",
                     job->rules && job->rules->prior[0] ? job->rules->prior : "the profile's prior");
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

/* What the comment over the exports says the program reads. */
static const char *exports_comment(const bkm_slurm_setting_t *s, int program)
{
    if (!program)
        return "# The setting, exported to every rank (srun's default --export=ALL), in the order libomp\n"
               "# applies it; nothing else that steers OpenMP placement is inherited.\n";
    switch (s->runtime) {
    case BKM_AFF_RUNTIME_LIBGOMP:
        return "# The setting, exported to every rank (srun's default --export=ALL): the program loads GNU\n"
               "# libgomp, which reads OMP_* and GOMP_* and ignores every KMP_* variable.\n";
    case BKM_AFF_RUNTIME_LIBOMP:
    case BKM_AFF_RUNTIME_LIBIOMP5:
        return s->runtime == BKM_AFF_RUNTIME_LIBOMP
                   ? "# The setting, exported to every rank (srun's default --export=ALL): the program loads LLVM\n"
                     "# libomp, which reads KMP_* and OMP_*, in the order it applies them; nothing else that\n"
                     "# steers OpenMP placement is inherited.\n"
                   : "# The setting, exported to every rank (srun's default --export=ALL): the program loads Intel\n"
                     "# libiomp5, which reads KMP_* and OMP_*, in the order it applies them; nothing else that\n"
                     "# steers OpenMP placement is inherited.\n";
    default:
        return "# The setting, exported to every rank (srun's default --export=ALL): the program loads no\n"
               "# OpenMP runtime; OMP_NUM_THREADS is what it was measured with.\n";
    }
}

/* The comment of exports_comment, with Hydra's way of passing the environment for mpiexec. */
static void exports_comment_write(const bkm_slurm_setting_t *s, int program, int mpiexec, bkm_buf_t *b)
{
    const char *c = exports_comment(s, program), *at = strstr(c, "srun's default --export=ALL");
    if (!mpiexec || at == NULL) {
        bkm_buf_puts(b, c);
        return;
    }
    bkm_buf_append(b, c, (size_t)(at - c));
    bkm_buf_puts(b, "mpiexec passes the environment");
    bkm_buf_puts(b, at + strlen("srun's default --export=ALL"));
}

static void exports_write(const bkm_slurm_setting_t *s, int program, int mpiexec, bkm_buf_t *b)
{
    bkm_aff_env_t env;
    const char *names[8], *values[8];
    int n;
    env_of(s, &env);
    if (s->runtime == BKM_AFF_RUNTIME_LIBGOMP) {   /* only what libgomp reads; names: a closed set */
        static const char *const gnames[] = {"OMP_PLACES", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "OMP_WAIT_POLICY",
                                             "GOMP_SPINCOUNT"};
        const char *gvals[] = {s->omp_places, s->omp_proc_bind, s->gomp_cpu_affinity, s->omp_wait_policy,
                               s->gomp_spincount};
        n = 0;
        for (size_t i = 0; i < sizeof gnames / sizeof gnames[0]; i++)
            if (gvals[i][0])
                names[n] = gnames[i], values[n++] = gvals[i];
    } else {
        n = bkm_aff_env_export(&env, names, values);
    }
    exports_comment_write(s, program, mpiexec, b);
    bkm_buf_puts(b, "unset OMP_PLACES OMP_PROC_BIND KMP_AFFINITY KMP_HW_SUBSET KMP_PLACE_THREADS KMP_BLOCKTIME "
                    "GOMP_CPU_AFFINITY OMP_WAIT_POLICY GOMP_SPINCOUNT\n");
    bkm_buf_printf(b, "export OMP_NUM_THREADS=%d\n", s->threads);
    for (int i = 0; i < n; i++) {
        bkm_buf_printf(b, "export %s=", names[i]);   /* names: a closed set (bkm_aff_env_export) */
        bkm_slurm_sh_quote(b, values[i], 1);
        bkm_buf_puts(b, "\n");
    }
}

/* " --param K=V ..." and " --backend B" of the run line, each value one quoted word. */
static void run_args(const bkm_slurm_setting_t *s, bkm_buf_t *b)
{
    if (s->backend[0]) {
        bkm_buf_puts(b, " --backend ");
        bkm_slurm_sh_quote(b, s->backend, 0);
    }
    for (int i = 0; i < s->n_params; i++) {
        bkm_buf_puts(b, " --param ");
        bkm_slurm_sh_quote(b, s->params[i], 0);
    }
}

/* Whose rules lay out the ranks, for the comments: "NERSC's", or the profile's. */
static void rules_owner(const bkm_slurm_job_t *job, char *out, size_t n)
{
    if (job->rules == NULL || strcmp(job->rules->site, "NERSC") == 0)
        snprintf(out, n, "NERSC's");
    else if (job->rules->site[0])
        snprintf(out, n, "%s's", job->rules->site);
    else
        snprintf(out, n, "node profile %s's", job->node);
}

static int uses_mpiexec(const bkm_slurm_job_t *job)
{
    return job->rules && job->rules->launcher == BKM_BATCH_LAUNCH_MPIEXEC;
}

/* The comment over the launcher lines: the layout and the rule it follows. */
static void launcher_comment(const bkm_slurm_job_t *job, const bkm_slurm_layout_t *l, bkm_buf_t *b)
{
    char owner[96];
    rules_owner(job, owner, sizeof owner);
    if (uses_mpiexec(job)) {
        comment_line(b, "# mpiexec (MPICH Hydra) by %s rules on %s (%d CPUs, %d cores): %s; bound to %s", owner,
                     job->node, job->pus, job->cores, l->why, l->cpu_bind);
        return;
    }
    comment_line(b, "# srun by %s rules on %s (%d CPUs, %d cores): %s; --cpu-bind=%s%s", owner, job->node, job->pus,
                 job->cores, l->why, l->cpu_bind, l->packed ? "" : " (the node is not fully packed: needed)");
    if (job->rules && !job->rules->srun_inherits_c)
        comment_line(b, "# srun -c is always given: Slurm 22.05 and later (%s's) do not pass the job's --cpus-per-task "
                        "to srun", job->node);
    if (job->mpi && job->mpi[0] && strcmp(job->mpi, "pmi2") == 0)
        comment_line(b, "# --mpi=%s: MPICH under srun needs PMI2, else every rank is a world of its own", job->mpi);
    else if (job->mpi && job->mpi[0])
        comment_line(b, "# --mpi=%s: the MPI plugin of %s srun", job->mpi, owner);
}

/* "srun -n W --ntasks-per-node=R -c C --cpu-bind=B [--mpi=M]" or "mpiexec -n W -ppn R [-bind-to X]",
 * then " \\\n". Every value is a number or from a closed set, except mpi (a checked Slurm word). */
static void launcher_line(const bkm_slurm_job_t *job, const bkm_slurm_layout_t *l, bkm_buf_t *b)
{
    int world = job->nodes * job->ranks_per_node, per_core = job->cores > 0 ? job->pus / job->cores : 1;
    if (uses_mpiexec(job)) {
        int k = l->cpus_per_task / per_core > 0 ? l->cpus_per_task / per_core : 1;
        bkm_buf_printf(b, "mpiexec -n %d -ppn %d", world, job->ranks_per_node);
        if (strcmp(l->cpu_bind, "cores") == 0)
            bkm_buf_printf(b, " -bind-to core:%d", k);
        else if (strcmp(l->cpu_bind, "threads") == 0)
            bkm_buf_printf(b, " -bind-to hwthread:%d", l->cpus_per_task);
        else if (strcmp(l->cpu_bind, "sockets") == 0)
            bkm_buf_puts(b, " -bind-to socket");
        else if (strcmp(l->cpu_bind, "ldoms") == 0)
            bkm_buf_puts(b, " -bind-to numa");
        bkm_buf_puts(b, " \\\n");
        return;
    }
    /* cpu_bind: "cores", "threads" or a profile's value of a closed set (bkm_slurm_layout_rules) */
    bkm_buf_printf(b, "srun -n %d --ntasks-per-node=%d -c %d --cpu-bind=%s", world, job->ranks_per_node,
                   l->cpus_per_task, l->cpu_bind);
    if (job->mpi && job->mpi[0]) {
        bkm_buf_puts(b, " --mpi=");
        bkm_slurm_sh_quote(b, job->mpi, 0);
    }
    bkm_buf_puts(b, " \\\n");
}

/* The rank number and world size a rank reads: srun's, or Hydra's PMI variables (under mpiexec the
 * SLURM_* ones are the batch step's, inherited by every rank). */
static const char *rank_var(const bkm_slurm_job_t *job)
{
    return uses_mpiexec(job) ? "${PMI_RANK-}" : "${SLURM_PROCID}";
}
static const char *size_var(const bkm_slurm_job_t *job)
{
    return uses_mpiexec(job) ? "${PMI_SIZE-}" : "${SLURM_NTASKS}";
}

/* The binding check: every rank runs bkm's verify under the job's layout and setting; each line it
 * prints carries the rank and the node; a mismatch (verify's exit 1) stops the job. */
static void binding_check_write(const bkm_slurm_job_t *job, const bkm_slurm_layout_t *l, bkm_buf_t *b)
{
    bkm_buf_puts(b, "# The binding check (--check-binding): every rank runs bkm's own verify with the setting above.\n"
                    "# It prints the CPU set the launcher gave the rank (its process mask) and, per OpenMP thread,\n"
                    "# the CPUs libomp bound it to against the plan bkm computes for that mask on this node. A\n"
                    "# rank whose threads are not where the plan puts them stops the job before the run.\n");
    launcher_line(job, l, b);
    bkm_buf_printf(b, "  bash -c 'r=%s; n=%s; h=${SLURMD_NODENAME:-$(hostname)}; \"$1\" affinity verify --env --threads "
                      "\"$OMP_NUM_THREADS\" 2>&1 | while IFS= read -r line; do echo \"bkm binding rank $r of $n on $h: "
                      "$line\"; done; exit \"${PIPESTATUS[0]}\"' bkm-check \"$TUNE\" ||\n"
                      "  { echo \"bkm: the binding check failed (see the lines above): not running the job\" >&2; exit 1; }\n",
                   rank_var(job), size_var(job));
}

/* The per-rank line: each rank says who it is and what it sees, then runs the program. */
static void srun_write(const bkm_slurm_job_t *job, const bkm_slurm_layout_t *l, bkm_buf_t *b)
{
    const bkm_slurm_setting_t *s = &job->setting;
    int world = job->nodes * job->ranks_per_node;
    launcher_comment(job, l, b);
    bkm_buf_printf(b, "echo \"bkm: planned world size %d (%d node(s) x %d rank(s)), %d thread(s) per rank\"\n", world,
                   job->nodes, job->ranks_per_node, s->threads);
    if (job->check_binding)
        binding_check_write(job, l, b);
    launcher_line(job, l, b);
    bkm_buf_printf(b, "  bash -c 'echo \"bkm rank %s of %s on ${SLURMD_NODENAME:-$(hostname)}: "
                      "OMP_NUM_THREADS=${OMP_NUM_THREADS-} KMP_AFFINITY=${KMP_AFFINITY-} KMP_BLOCKTIME=${KMP_BLOCKTIME-} "
                      "KMP_HW_SUBSET=${KMP_HW_SUBSET-} OMP_PLACES=${OMP_PLACES-} OMP_PROC_BIND=${OMP_PROC_BIND-} "
                      "GOMP_CPU_AFFINITY=${GOMP_CPU_AFFINITY-} OMP_WAIT_POLICY=${OMP_WAIT_POLICY-}\"; "
                      "exec \"$@\"' bkm-rank \\\n  ", rank_var(job), size_var(job));
    if (job->command) {
        /* the user's own program: the one value written as shell code, on purpose (one line,
         * no control character: bkm_slurm_job_check) */
        bkm_buf_printf(b, "%s\n", job->command);
        return;
    }
    if (job->program_argv != NULL) {   /* the program a sweep measured, as stored: data, each word quoted */
        for (int i = 0; i < job->program_argc; i++) {
            if (i)
                bkm_buf_puts(b, " ");
            bkm_slurm_sh_quote(b, job->program_argv[i], 0);
        }
        bkm_buf_puts(b, "\n");
        return;
    }
    if (job->train) {   /* the MPI training run: every rank trains (its parameters, no affinity options) */
        bkm_buf_puts(b, "\"$TUNE\" train --workload ");
        bkm_slurm_sh_quote(b, job->workload, 0);
        bkm_buf_puts(b, " --threads \"$OMP_NUM_THREADS\"");
        if (s->backend[0]) {
            char kv[sizeof s->backend + 8];
            snprintf(kv, sizeof kv, "backend=%s", s->backend);
            bkm_buf_puts(b, " --param ");
            bkm_slurm_sh_quote(b, kv, 0);
        }
        for (int i = 0; i < s->n_params; i++) {
            bkm_buf_puts(b, " --param ");
            bkm_slurm_sh_quote(b, s->params[i], 0);
        }
        bkm_buf_puts(b, "\n");
        return;
    }
    bkm_buf_puts(b, "\"$TUNE\" run --workload ");
    bkm_slurm_sh_quote(b, job->workload, 0);
    bkm_buf_puts(b, " --threads \"$OMP_NUM_THREADS\"");
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
    run_args(s, b);
    bkm_buf_puts(b, "\n");
}

static void tune_var(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    bkm_buf_puts(b, "TUNE=${BKM_TUNE:-");
    bkm_slurm_sh_quote(b, job->tune, 1);
    bkm_buf_puts(b, "}\n");
}

int bkm_slurm_script_write(const bkm_slurm_job_t *job, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_slurm_layout_t l;
    bkm_buf_t o;
    int rc;
    if ((rc = bkm_slurm_job_check(job, err)) < 0 ||
        (rc = bkm_slurm_layout_rules(job->rules, job->pus, job->cores, job->ranks_per_node, job->setting.threads, &l,
                                     err)) < 0)
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
    exports_write(&job->setting, job->program_argc > 0, uses_mpiexec(job), out);
    tune_var(job, out);
    srun_write(job, &l, out);
    bkm_buf_free(&o);
    return BKM_OK;
}

/* A path written into a script: absolute (a batch job starts in whatever folder sbatch was run
 * from) and free of control characters (it is echoed in messages). */
static int path_check(const char *what, const char *v, bkm_err_t *err)
{
    if (v == NULL || v[0] != '/')
        return bkm_err_set(err, BKM_EINVAL, "slurm array: %s '%.300s' is not an absolute path", what, v ? v : "");
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return bkm_err_set(err, BKM_EINVAL, "slurm array: %s '%.300s' holds a control character (0x%02x)", what,
                               v, *p);
    return BKM_OK;
}

static int array_check(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_err_t *err)
{
    int rc;
    if (a->shards < 1 || a->shards > 10000)
        return bkm_err_set(err, BKM_EINVAL, "--slurm-array %d is not in 1..10000", a->shards);
    if (a->db == NULL || a->shard_dir == NULL || (a->sweep_argc > 0 && a->sweep_argv == NULL) || a->sweep_argc < 0)
        return bkm_err_set(err, BKM_EINVAL, "slurm array: db, shard_dir and sweep_argv are required");
    if (job->node == NULL || job->node[0] == '\0' || job->workload == NULL || job->tune == NULL)
        return bkm_err_set(err, BKM_EINVAL, "slurm array: node, workload and tune are required");
    for (int i = 0; i < a->sweep_argc; i++)
        if (a->sweep_argv[i] == NULL)
            return bkm_err_set(err, BKM_EINVAL, "slurm array: sweep argument %d is NULL", i);
    if (a->group && (rc = word_check("shard group", a->group, NULL, err)) < 0)
        return rc;
    if ((rc = path_check("database", a->db, err)) < 0 || (rc = path_check("shard folder", a->shard_dir, err)) < 0 ||
        (rc = path_check("the tune path", job->tune, err)) < 0)
        return rc;
    if ((rc = word_check("--time", job->time, NULL, err)) < 0 || !time_ok(job->time))
        return bkm_err_set(err, BKM_EINVAL, "--time '%s' is not a Slurm time", job->time ? job->time : "");
    if ((rc = word_check("--workload", job->workload, NULL, err)) < 0 ||
        (rc = word_check("--account", job->account, NULL, err)) < 0 || (rc = word_check("--qos", job->qos, NULL, err)) < 0 ||
        (rc = word_check("--job-name", job->job_name, NULL, err)) < 0 ||
        (rc = word_check("--partition", job->partition, NULL, err)) < 0 ||
        (rc = word_check("--output", job->output, "/%", err)) < 0 ||
        (rc = word_check("constraint", job->constraint && job->constraint[0] ? job->constraint : NULL, "&|[]*", err)) < 0)
        return rc;
    return BKM_OK;
}

/* `"$TUNE" sweep ARGS...`: every argument one quoted word. */
static void sweep_line(const bkm_slurm_array_t *a, bkm_buf_t *b)
{
    bkm_buf_puts(b, "\"$TUNE\" sweep");
    for (int i = 0; i < a->sweep_argc; i++) {
        bkm_buf_puts(b, " ");
        bkm_slurm_sh_quote(b, a->sweep_argv[i], 0);
    }
}

/* NAME='value' */
static void sh_assign(bkm_buf_t *b, const char *name, const char *value)
{
    bkm_buf_printf(b, "%s=", name);
    bkm_slurm_sh_quote(b, value, 1);
    bkm_buf_puts(b, "\n");
}

/* `"$TUNE" best --node NODE --workload WL --db "$DB" || true` */
static void best_line(const bkm_slurm_job_t *job, bkm_buf_t *b)
{
    bkm_buf_puts(b, "\"$TUNE\" best --node ");
    bkm_slurm_sh_quote(b, job->node, 0);
    bkm_buf_puts(b, " --workload ");
    bkm_slurm_sh_quote(b, job->workload, 0);
    bkm_buf_puts(b, " --db \"$DB\" || true\n");
}

/* The node-local folder of a job's SQLite file: a new one (mktemp -d: mode 0700, a name nobody
 * can take first), so the file merged afterwards is the job's own, never one planted on a
 * shared /tmp. */
static void local_dir(bkm_buf_t *b, const char *kind, const char *id)
{
    bkm_buf_printf(b, "LOCALDIR=$(mktemp -d \"${TMPDIR:-/tmp}/bkm-%s-%s.XXXXXX\") || "
                      "{ echo \"bkm: cannot create a node-local folder in ${TMPDIR:-/tmp}\" >&2; exit 3; }\n",
                   kind, id);
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
    comment_line(out, "# The sweep of workload %s on node %s, split into %d shards (one per array task).", job->workload,
                 job->node, a->shards);
    bkm_buf_puts(out, "# Each shard writes its own SQLite file on node-local storage (never SQLite on a shared\n"
                      "# file system), then copies the closed file to the shard folder; the merge job merges them.\n");
    {
        bkm_buf_t o;
        bkm_buf_init(&o);
        bkm_buf_printf(&o, "%s-%%A_%%a.out", job->job_name ? job->job_name : "bkm");
        sbatch_lines(job, job->output ? job->output : bkm_buf_str(&o), extra, out);
        bkm_buf_free(&o);
    }
    bkm_buf_puts(out, "set -eu\n");
    tune_var(job, out);
    sh_assign(out, "SHARDS", a->shard_dir);
    bkm_buf_printf(out, "K=%d\nI=${SLURM_ARRAY_TASK_ID:?not an array task}\n", a->shards);
    local_dir(out, "shard", "${SLURM_ARRAY_JOB_ID:-$$}-$I");
    bkm_buf_puts(out, "LOCAL=$LOCALDIR/shard.sqlite\n"
                      "mkdir -p \"$SHARDS\"\n"
                      "echo \"bkm: shard $I of $K into $LOCAL\"\n");
    bkm_buf_puts(out, "rc=0\n");
    sweep_line(a, out);
    bkm_buf_printf(out, " --db \"$LOCAL\" --shard \"$I/$K\" --shard-group \"${BKM_SHARD_GROUP:-%s}\" || rc=$?\n",
                   a->group);
    bkm_buf_puts(out, "if [ \"$rc\" -ne 0 ] && [ \"$rc\" -ne 4 ]; then echo \"bkm: shard $I failed (exit $rc)\" >&2; "
                      "rm -rf \"$LOCALDIR\"; exit \"$rc\"; fi\n"
                      "cp \"$LOCAL\" \"$SHARDS/shard-$I-of-$K.sqlite.part\"\n"
                      "mv \"$SHARDS/shard-$I-of-$K.sqlite.part\" \"$SHARDS/shard-$I-of-$K.sqlite\"\n"
                      "rm -rf \"$LOCALDIR\"\n"
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
    comment_line(out, "# The merge job of the %d-shard sweep of workload %s on node %s: merges every shard into",
                 a->shards, job->workload, job->node);
    bkm_buf_puts(out, "# the database and re-runs the unsplit sweep there, which finds every search trial stored,\n"
                      "# confirms the top candidates against the default and derives the best-known setting.\n"
                      "# Submitted with --dependency=afterany on the array, so it also runs after a failed shard\n"
                      "# (or run it by hand): a shard whose task failed leaves no shard file; the merge then\n"
                      "# merges the shards that exist into the database and names the missing ones (exit 4).\n");
    {
        bkm_buf_t o;
        bkm_buf_init(&o);
        bkm_buf_printf(&o, "%s-merge-%%j.out", job->job_name ? job->job_name : "bkm");
        sbatch_lines(job, bkm_buf_str(&o), NULL, out);
        bkm_buf_free(&o);
    }
    bkm_buf_puts(out, "set -u\n");
    tune_var(job, out);
    sh_assign(out, "SHARDS", a->shard_dir);
    sh_assign(out, "DB", a->db);
    bkm_buf_printf(out, "K=%d\n", a->shards);
    local_dir(out, "merge", "${SLURM_JOB_ID:-$$}");
    bkm_buf_puts(out, "LOCAL=$LOCALDIR/merge.sqlite\n"
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
                      "  rm -rf \"$LOCALDIR\"\n"
                      "  echo \"bkm: merge: shard(s) ${missing[*]} of $K missing (not in $SHARDS; failed or never ran):\"\\\n"
                      "       \"merged the other ${#have[@]} into $DB; no best-known setting derived\" >&2\n"
                      "  exit 4\n"
                      "fi\n"
                      "echo \"bkm: merged all $K shards into $DB\"\n");
    bkm_buf_puts(out, "rc=0\n");
    sweep_line(a, out);
    bkm_buf_puts(out, " --db \"$LOCAL\" || rc=$?\n");
    bkm_buf_puts(out, "if [ \"$rc\" -ne 0 ] && [ \"$rc\" -ne 4 ]; then echo \"bkm: the confirmation failed (exit $rc); the \"\\\n"
                      "  \"merged shards stay in $LOCAL\" >&2; exit \"$rc\"; fi\n"
                      "\"$TUNE\" merge \"$DB\" \"$LOCAL\" || exit $?\n"
                      "rm -rf \"$LOCALDIR\"\n");
    best_line(job, out);
    bkm_buf_puts(out, "exit \"$rc\"\n");
    return BKM_OK;
}

int bkm_slurm_sweep_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err)
{
    int rc;
    bkm_slurm_array_t one = *a;
    bkm_buf_t o;
    one.shards = 1;
    one.shard_dir = "/";
    one.group = NULL;
    if ((rc = array_check(job, &one, err)) < 0)
        return rc;
    bkm_buf_puts(out, "#!/bin/bash\n");
    generated_write(job, out);
    comment_line(out, "# The sweep of workload %s on node %s, run where it belongs. SQLite must not be written",
                 job->workload, job->node);
    bkm_buf_puts(out, "# by a job on a shared file system: the sweep writes node-local storage, then one merge\n"
                      "# copies its results into the database.\n");
    bkm_buf_init(&o);
    bkm_buf_printf(&o, "%s-%%j.out", job->job_name ? job->job_name : "bkm");
    sbatch_lines(job, job->output ? job->output : bkm_buf_str(&o), NULL, out);
    bkm_buf_free(&o);
    bkm_buf_puts(out, "set -u\n");
    tune_var(job, out);
    sh_assign(out, "DB", a->db);
    local_dir(out, "sweep", "${SLURM_JOB_ID:-$$}");
    bkm_buf_puts(out, "LOCAL=$LOCALDIR/sweep.sqlite\nrc=0\n");
    sweep_line(a, out);
    bkm_buf_puts(out, " --db \"$LOCAL\" || rc=$?\n");
    bkm_buf_puts(out, "if [ -f \"$LOCAL\" ]; then \"$TUNE\" merge \"$DB\" \"$LOCAL\" && rm -rf \"$LOCALDIR\"; "
                      "else rm -rf \"$LOCALDIR\"; fi\n");
    best_line(job, out);
    bkm_buf_puts(out, "exit \"$rc\"\n");
    return BKM_OK;
}
