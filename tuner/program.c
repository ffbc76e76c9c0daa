/* SPDX-License-Identifier: MIT */
/* The user's own program as a trial: started with the setting's environment and the team shim,
 * supervised like a worker, its figure of merit taken from its wall time or its output, its
 * threads sampled from /proc while it runs, the OpenMP team told apart from its other threads and
 * checked against the plan of the runtime it loads, and everything written as the same JSON a
 * worker writes, so that the sweep, the store and every reader take it unchanged. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/program.h"
#include "bkm/stats.h"
#include "tuner_int.h"

#define PROG_VALUES_MAX BKM_TUNE_SAMPLES_MAX   /* most metric values kept of one process */
#define PROG_LOADED_MAX 8                      /* distinct runtime files remembered */
#define PROG_MAPS_FIRST_NS 5000000ull          /* the mapped runtimes are read 5 ms after the start, */
#define PROG_MAPS_MAX_NS 500000000ull          /* then at doubling intervals up to every 500 ms */

/* ---------------------------------------------------------------------------------------- */
/* Checks                                                                                    */

static int name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 63)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.'))
            return 0;
    return 1;
}

static int metric_compile(const char *metric, regex_t *re, bkm_err_t *err)
{
    char why[160];
    int rc = regcomp(re, metric, REG_EXTENDED);
    if (rc != 0) {
        regerror(rc, re, why, sizeof why);
        return bkm_err_set(err, BKM_EINVAL, "--metric '%s' is not a valid extended regular expression: %s", metric, why);
    }
    if (re->re_nsub != 1) {
        size_t n = re->re_nsub;
        regfree(re);
        return bkm_err_set(err, BKM_EINVAL, "--metric '%s' has %zu capture groups; it needs exactly one (the number), "
                           "e.g. 'avg time ([0-9.]+) millisecond'", metric, n);
    }
    return BKM_OK;
}

int bkm_tune_program_check(const bkm_tune_program_t *p, bkm_err_t *err)
{
    struct stat st;
    if (p == NULL || p->argv == NULL || p->argc < 1 || p->argv[0] == NULL)
        return bkm_err_set(err, BKM_EINVAL, "program: no command after '--'");
    if (p->argc > BKM_TUNE_PROGRAM_ARGS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "program: %d arguments, at most %d", p->argc, BKM_TUNE_PROGRAM_ARGS_MAX);
    if (p->argv[0][0] != '/')
        return bkm_err_set(err, BKM_EINVAL, "program: '%s' is not an absolute path (resolve it first)", p->argv[0]);
    if (stat(p->argv[0], &st) < 0 || !S_ISREG(st.st_mode) || access(p->argv[0], X_OK) != 0)
        return bkm_err_set(err, BKM_EINVAL, "program: '%s' is not an executable file", p->argv[0]);
    if (!name_ok(p->name))
        return bkm_err_set(err, BKM_EINVAL, "program: workload name '%s' must be 1-63 letters, digits, '-', '_', '.'",
                           p->name ? p->name : "");
    if (p->metric_unit != NULL) {
        size_t n = strlen(p->metric_unit);
        if (n == 0 || n > 31)
            return bkm_err_set(err, BKM_EINVAL, "--metric-unit '%s' must be 1-31 characters", p->metric_unit);
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p->metric_unit[i] < 0x21 || (unsigned char)p->metric_unit[i] > 0x7e)
                return bkm_err_set(err, BKM_EINVAL, "--metric-unit '%s' may hold only printable characters without "
                                   "blanks", p->metric_unit);
    }
    if (p->metric != NULL) {
        regex_t re;
        int rc = metric_compile(p->metric, &re, err);
        if (rc < 0)
            return rc;
        regfree(&re);
    }
    return BKM_OK;
}

void bkm_tune_program_default_name(const char *const *argv, int argc, char *out, size_t n)
{
    const char *pick = argc > 0 ? argv[0] : "", *base;
    size_t k = 0;
    /* an interpreter runs a script: the script names the workload */
    if (argc > 1 && bkm_aff_runtime_is_interpreter(argv[0]))
        for (int i = 1; i < argc; i++)
            if (argv[i][0] != '-') {
                pick = argv[i];
                break;
            }
    base = strrchr(pick, '/') ? strrchr(pick, '/') + 1 : pick;
    for (const char *p = base; *p && k + 1 < n && k < 63; p++) {
        if (*p == '.' && strchr(p + 1, '.') == NULL && p != base)
            break;   /* the last extension: bench.py -> bench */
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '_' || *p == '.')
            out[k++] = *p;
    }
    out[k] = '\0';
    if (k == 0)
        snprintf(out, n, "program");
}

int bkm_tune_program_metric_scan(const regex_t *metric, const char *line, double *values, size_t max, size_t *n,
                                 bkm_err_t *err)
{
    const char *p = line;
    regmatch_t m[2];
    while (*n < max && regexec(metric, p, 2, m, p == line ? 0 : REG_NOTBOL) == 0) {
        char num[64], *end;
        size_t len;
        double v;
        if (m[1].rm_so < 0) {            /* the group took no part in this match */
            if (m[0].rm_eo == 0)
                break;
            p += m[0].rm_eo;
            continue;
        }
        len = (size_t)(m[1].rm_eo - m[1].rm_so);
        if (len == 0 || len >= sizeof num)
            return bkm_err_set(err, BKM_EINVAL, "--metric captured '%.*s', which is not a number",
                               (int)(len < 40 ? len : 40), p + m[1].rm_so);
        memcpy(num, p + m[1].rm_so, len);
        num[len] = '\0';
        errno = 0;
        v = strtod(num, &end);
        if (end == num || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0)
            return bkm_err_set(err, BKM_EINVAL, "--metric captured '%s', which is not a finite number >= 0", num);
        values[(*n)++] = v;
        if (m[0].rm_eo == 0)
            break;
        p += m[0].rm_eo;
    }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The run                                                                                   */

typedef struct prog_loaded {
    int kind;                    /* bkm_aff_runtime_kind_t */
    char path[256];
} prog_loaded_t;

typedef struct prog_run {
    const bkm_tune_program_t *pg;
    const bkm_tune_trial_spec_t *spec;
    regex_t re;
    int have_re;
    char line[BKM_TUNE_PROGRAM_LINE_MAX + 1];
    size_t line_len;
    double *values;
    size_t n_values;
    int metric_bad;
    bkm_err_t metric_err;
    bkm_prog_sampler_t *sampler;
    bkm_err_t sampler_err;
    int sampler_failed;
    uint64_t maps_due_ns, maps_every_ns;
    int maps_reads;
    prog_loaded_t loaded[PROG_LOADED_MAX];
    int n_loaded;
    uint64_t rt_seen_ns;            /* the first maps read that saw a runtime (0: none) */
    char log_path[512];
} prog_run_t;

static void prog_line(prog_run_t *pr)
{
    pr->line[pr->line_len] = '\0';
    if (!pr->metric_bad &&
        bkm_tune_program_metric_scan(&pr->re, pr->line, pr->values, PROG_VALUES_MAX, &pr->n_values, &pr->metric_err) < 0)
        pr->metric_bad = 1;
    pr->line_len = 0;
}

static void prog_on_output(void *ud, const char *data, size_t n)
{
    prog_run_t *pr = ud;
    if (!pr->have_re)
        return;
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n' || data[i] == '\r') {
            prog_line(pr);
            continue;
        }
        if (pr->line_len == BKM_TUNE_PROGRAM_LINE_MAX)
            prog_line(pr);   /* a very long line: matched in pieces */
        pr->line[pr->line_len++] = data[i] == '\0' ? ' ' : data[i];
    }
}

/* The OpenMP runtimes the process maps now, added to those seen before (a program may dlopen
 * one late: Python imports torch after it started). */
static void prog_read_maps(prog_run_t *pr, pid_t pid)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    bkm_err_t e = {0};
    bkm_aff_runtime_cfg_init(&cfg);
    bkm_aff_runtime_result_init(&r);
    if (bkm_aff_runtime_detect_pid((int)pid, &cfg, &r, &e) == BKM_OK) {
        pr->maps_reads++;
        for (int i = 0; i < r.n_runtimes; i++) {
            const bkm_aff_runtime_obj_t *o = &r.obj[r.runtime[i]];
            const char *path = o->real ? o->real : o->path ? o->path : "?";
            int seen = 0;
            for (int k = 0; k < pr->n_loaded; k++)
                seen |= strcmp(pr->loaded[k].path, path) == 0;
            if (!seen && pr->n_loaded < PROG_LOADED_MAX) {
                pr->loaded[pr->n_loaded].kind = (int)o->kind;
                snprintf(pr->loaded[pr->n_loaded].path, sizeof pr->loaded[0].path, "%s", path);
                pr->n_loaded++;
            }
        }
        if (r.n_runtimes > 0 && pr->rt_seen_ns == 0)
            pr->rt_seen_ns = bkm_now_ns();
    }
    bkm_aff_runtime_result_free(&r);
}

static void prog_on_start(void *ud, pid_t pid)
{
    prog_run_t *pr = ud;
    bkm_prog_sampler_opts_t o;
    bkm_prog_sampler_opts_defaults(&o);
    if (pr->pg->sample_ms > 0)
        o.interval_ms = pr->pg->sample_ms;
    if (bkm_prog_sampler_open(&pr->sampler, (int)pid, &o, &pr->sampler_err) < 0)
        pr->sampler_failed = 1;
    /* the loader maps the libraries after the exec: the first read waits a little */
    pr->maps_every_ns = PROG_MAPS_FIRST_NS;
    pr->maps_due_ns = bkm_now_ns() + pr->maps_every_ns;
}

static void prog_on_tick(void *ud, pid_t pid)
{
    prog_run_t *pr = ud;
    uint64_t now = bkm_now_ns();
    if (pr->sampler != NULL && !pr->sampler_failed && now >= bkm_prog_sampler_due_ns(pr->sampler) &&
        bkm_prog_sampler_sample(pr->sampler, &pr->sampler_err) < 0)
        pr->sampler_failed = 1;
    if (now >= pr->maps_due_ns) {
        prog_read_maps(pr, pid);
        pr->maps_every_ns = pr->maps_every_ns * 2 < PROG_MAPS_MAX_NS ? pr->maps_every_ns * 2 : PROG_MAPS_MAX_NS;
        pr->maps_due_ns = now + pr->maps_every_ns;
    }
}

static void prog_on_exit(void *ud, pid_t pid)
{
    prog_run_t *pr = ud;
    (void)pid;
    if (pr->line_len > 0 && pr->have_re)
        prog_line(pr);   /* a last line without a newline */
    if (pr->sampler != NULL)
        bkm_prog_sampler_finish(pr->sampler, NULL);
}

/* The program's environment: the trial's (bkm__tune_runner_env) plus the team shim ahead of any
 * LD_PRELOAD it had, and the shim's log. */
static int prog_env(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, const prog_run_t *pr,
                    char ***out, bkm_err_t *err)
{
    char **base = NULL, **env = NULL;
    size_t n = 0, k = 0;
    const char *old_preload = NULL;
    int rc = bkm__tune_runner_env(rn, spec, &base, err);
    if (rc < 0)
        return rc;
    for (; base[n]; n++)
        if (strncmp(base[n], "LD_PRELOAD=", 11) == 0)
            old_preload = base[n] + 11;
    if ((env = bkm_calloc(n + 3, sizeof *env)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the program's environment");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (pr->pg->team_shim != NULL && strncmp(base[i], "LD_PRELOAD=", 11) == 0)
            continue;
        env[k++] = base[i];
        base[i] = NULL;
    }
    if (pr->pg->team_shim != NULL) {
        char value[4096];
        bkm_buf_t b;
        if ((rc = bkm_prog_preload_value(pr->pg->team_shim, old_preload, value, sizeof value, err)) < 0)
            goto out;
        bkm_buf_init(&b);
        bkm_buf_printf(&b, "LD_PRELOAD=%s", value);
        env[k++] = bkm_buf_take(&b);
        bkm_buf_init(&b);
        bkm_buf_printf(&b, "%s=%s", BKM_PROG_LOG_ENV, pr->log_path);
        env[k++] = bkm_buf_take(&b);
        if (env[k - 1] == NULL || env[k - 2] == NULL) {
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the program's environment");
            goto out;
        }
    }
    *out = env;
    env = NULL;
out:
    bkm__tune_strv_free(env);
    bkm__tune_strv_free(base);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Binding: the plan of the runtime the program loads, against the team it ran                */

/* The planned CPU set of each thread of the outermost team of spec->threads threads, for runtime
 * @p kind; *n = 0 when there is nothing to plan (no OpenMP runtime). */
static int prog_plan(const bkm_tune_program_t *pg, const bkm_tune_trial_spec_t *spec, int kind, bkm_cpuset_t **out,
                     int *n, bkm_buf_t *notes, bkm_err_t *err)
{
    int rc = BKM_OK;
    *out = NULL;
    *n = 0;
    if (kind == BKM_AFF_RUNTIME_LIBGOMP) {
        bkm_aff_gomp_env_t env = {0};
        bkm_aff_gomp_opts_t opts = {0};
        bkm_aff_gomp_plan_t *plan = NULL;
        char nt[16];
        snprintf(nt, sizeof nt, "%d", spec->threads);
        env.omp_num_threads = nt;
        for (int i = 0; i < spec->n_env; i++) {
            const char *k = spec->env[i].key, *v = spec->env[i].value;
            if (strcmp(k, "OMP_PLACES") == 0)
                env.omp_places = v;
            else if (strcmp(k, "OMP_PROC_BIND") == 0)
                env.omp_proc_bind = v;
            else if (strcmp(k, "GOMP_CPU_AFFINITY") == 0)
                env.gomp_cpu_affinity = v;
            else if (strcmp(k, "OMP_WAIT_POLICY") == 0)
                env.omp_wait_policy = v;
            else if (strcmp(k, "GOMP_SPINCOUNT") == 0)
                env.gomp_spincount = v;
        }
        if ((rc = bkm_aff_gomp_plan_create(pg->topo, &env, &opts, &plan, err)) < 0)
            return rc;
        *n = bkm_aff_gomp_plan_team_size(plan, 1);
        if (*n > 0 && (*out = bkm_calloc((size_t)*n, sizeof **out)) == NULL)
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the plan");
        for (int i = 0; rc == BKM_OK && i < bkm_aff_gomp_plan_n_threads(plan); i++) {
            const bkm_aff_gomp_thread_t *t = bkm_aff_gomp_plan_thread(plan, i);
            if (t->level == 1 && t->num >= 0 && t->num < *n)
                (*out)[t->num] = t->cpus;
        }
        bkm_buf_puts(notes, "planned by bkm's model of GNU libgomp 12");
        bkm_aff_gomp_plan_free(plan);
        return rc;
    }
    if (kind == BKM_AFF_RUNTIME_LIBOMP || kind == BKM_AFF_RUNTIME_LIBIOMP5) {
        bkm_aff_env_t env;
        bkm_aff_plan_t *plan = NULL;
        bkm_tune_trial_aff_env(spec, &env);
        if ((rc = bkm_aff_plan_create(pg->topo, &env, spec->threads, &plan, err)) < 0)
            return rc;
        *n = bkm_aff_plan_threads(plan);
        if (*n > 0 && (*out = bkm_calloc((size_t)*n, sizeof **out)) == NULL)
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the plan");
        for (int i = 0; rc == BKM_OK && i < *n; i++)
            (*out)[i] = *bkm_aff_plan_cpus(plan, i);
        bkm_buf_puts(notes, kind == BKM_AFF_RUNTIME_LIBOMP ? "planned by bkm's model of LLVM libomp 14"
                                                           : "planned by bkm's model of LLVM libomp 14 (Intel's "
                                                             "libiomp5 places threads the same way)");
        bkm_aff_plan_free(plan);
        return rc;
    }
    return BKM_OK;
}

/* The runtime the plan is made for. One mapped: that one. Several (libgomp + libiomp5 through MKL,
 * or a dlopen): the expected one (ELF closure, probe, --runtime) when it is among them, else the
 * one whose team ran the main team, else the first seen. None mapped: the expected one (a program
 * that ended before a read of its maps saw its libraries). */
static int prog_runtime(const prog_run_t *pr, const bkm_prog_report_t *rep)
{
    const bkm_prog_team_t *team = rep ? bkm_prog_report_main_team(rep) : NULL;
    int first = -1, expected = 0, of_team = -1;
    for (int k = 0; k < pr->n_loaded; k++) {
        int kd = pr->loaded[k].kind;
        if (kd != BKM_AFF_RUNTIME_LIBGOMP && kd != BKM_AFF_RUNTIME_LIBOMP && kd != BKM_AFF_RUNTIME_LIBIOMP5)
            continue;
        if (first < 0)
            first = kd;
        expected |= kd == pr->pg->runtime;
        if (team != NULL && of_team < 0 &&
            ((kd == BKM_AFF_RUNTIME_LIBGOMP && strstr(team->rt, "gomp") != NULL) ||
             (kd == BKM_AFF_RUNTIME_LIBOMP && strstr(team->rt, "libomp") != NULL) ||
             (kd == BKM_AFF_RUNTIME_LIBIOMP5 && strstr(team->rt, "iomp5") != NULL)))
            of_team = kd;
    }
    if (first < 0)
        return pr->pg->runtime == BKM_AFF_RUNTIME_UNKNOWN ? BKM_AFF_RUNTIME_NONE : pr->pg->runtime;
    return expected ? pr->pg->runtime : of_team >= 0 ? of_team : first;
}

/* ---------------------------------------------------------------------------------------- */
/* The trial's JSON: the same keys a worker writes, plus the program's own                    */

static void json_env(bkm_json_w_t *w, const bkm_tune_trial_spec_t *spec)
{
    bkm_json_key(w, "env");
    bkm_json_obj_begin(w);
    for (int i = 0; i < spec->n_env; i++)
        bkm_json_key(w, spec->env[i].key), bkm_json_str(w, spec->env[i].value);
    bkm_json_obj_end(w);
}

void bkm_tune_program_argv_json(const bkm_tune_program_t *p, bkm_json_w_t *w)
{
    bkm_json_arr_begin(w);
    for (int i = 0; i < p->argc; i++)
        bkm_json_str(w, p->argv[i]);
    bkm_json_arr_end(w);
}

static void json_program(bkm_json_w_t *w, const bkm_tune_program_t *pg, const bkm__tune_proc_end_t *end)
{
    bkm_json_key(w, "program");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "argv"), bkm_tune_program_argv_json(pg, w);
    bkm_json_key(w, "exe"), bkm_json_str(w, pg->argv[0]);
    bkm_json_key(w, "sha256"), bkm_json_str(w, pg->exe_sha256);
    bkm_json_key(w, "wall_ms"), bkm_json_double(w, end->wall_s * 1e3);
    bkm_json_key(w, "output_bytes"), bkm_json_int(w, (int64_t)end->output_len);
    bkm_json_obj_end(w);
}

static void json_runtime(bkm_json_w_t *w, const prog_run_t *pr, int planned_for)
{
    int kinds = 0, last = -1;
    bkm_json_key(w, "runtime");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "expected"), bkm_json_str(w, bkm_aff_runtime_kind_name(pr->pg->runtime));
    bkm_json_key(w, "how"), bkm_json_str(w, pr->pg->runtime_how);
    bkm_json_key(w, "loaded");
    bkm_json_arr_begin(w);
    for (int k = 0; k < pr->n_loaded; k++) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "kind"), bkm_json_str(w, bkm_aff_runtime_kind_name(pr->loaded[k].kind));
        bkm_json_key(w, "path"), bkm_json_str(w, pr->loaded[k].path);
        bkm_json_obj_end(w);
        if (pr->loaded[k].kind != last)
            kinds++, last = pr->loaded[k].kind;
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "maps_reads"), bkm_json_int(w, pr->maps_reads);
    /* two runtimes in one process: each keeps a pool of its own (a finding, not a failure) */
    bkm_json_key(w, "two_runtimes"), bkm_json_bool(w, pr->n_loaded > 1);
    bkm_json_key(w, "planned_for"), bkm_json_str(w, bkm_aff_runtime_kind_name(planned_for));
    bkm_json_obj_end(w);
    (void)kinds;
}

static void json_metric(bkm_json_w_t *w, const prog_run_t *pr)
{
    const bkm_tune_program_t *pg = pr->pg;
    bkm_json_key(w, "metric");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "source"), bkm_json_str(w, pg->metric ? "output" : "wall-time");
    bkm_json_key(w, "regex"), bkm_json_str(w, pg->metric);
    bkm_json_key(w, "unit"), bkm_json_str(w, pg->metric ? (pg->metric_unit ? pg->metric_unit : "ms") : "ms");
    bkm_json_key(w, "higher_is_better"), bkm_json_bool(w, pg->metric_higher);
    bkm_json_key(w, "stored_as"), bkm_json_str(w, pg->metric_higher ? "1/value" : "value");
    bkm_json_key(w, "values");
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < pr->n_values; i++)
        bkm_json_double(w, pr->values[i]);
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}

/* The samples of the process (its wall time, or its metric values; 1/v when higher is better)
 * and their summary. */
static int json_samples(bkm_json_w_t *w, const prog_run_t *pr, const bkm__tune_proc_end_t *end, int ok,
                        bkm_err_t *err)
{
    size_t n = 0;
    double *v = NULL;
    bkm_tune_stats_t st;
    int rc = BKM_OK;
    bkm_json_key(w, "samples_ms");
    bkm_json_arr_begin(w);
    if (ok) {
        n = pr->pg->metric ? pr->n_values : 1;
        if ((v = bkm_calloc(n ? n : 1, sizeof *v)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu samples", n);
        for (size_t i = 0; i < n; i++) {
            v[i] = pr->pg->metric ? pr->values[i] : end->wall_s * 1e3;
            if (pr->pg->metric_higher)   /* a throughput of 0 was refused as a trial failure */
                v[i] = 1.0 / v[i];
            bkm_json_double(w, v[i]);
        }
    }
    bkm_json_arr_end(w);
    if (n > 0 && (rc = bkm_tune_stats_compute(v, n, NULL, &st, err)) == BKM_OK) {
        bkm_json_key(w, "median_ms"), bkm_json_double(w, st.median);
        bkm_json_key(w, "min_ms"), bkm_json_double(w, st.min);
        bkm_json_key(w, "mad_ms"), bkm_json_double(w, st.mad);
        bkm_json_key(w, "ci95_ms");
        bkm_json_arr_begin(w), bkm_json_double(w, st.ci_lo), bkm_json_double(w, st.ci_hi), bkm_json_arr_end(w);
    }
    bkm_free(v);
    return rc;
}

/* Binding: the team the report found against the plan. *mismatch = 1 when a team thread was bound
 * elsewhere than planned, or the runtime ran fewer threads than asked. */
static int json_binding(bkm_json_w_t *w, const prog_run_t *pr, const bkm__tune_proc_end_t *end,
                        const bkm_prog_report_t *rep, int kind, int *mismatch, char *why, size_t why_n, bkm_err_t *err)
{
    bkm_cpuset_t *planned = NULL;
    bkm_prog_check_t *chk = NULL;
    bkm_buf_t notes;
    int n = 0, rc, verified = 0;
    *mismatch = 0;
    why[0] = '\0';
    bkm_buf_init(&notes);
    rc = prog_plan(pr->pg, pr->spec, kind, &planned, &n, &notes, err);
    if (rc == BKM_OK && n > 0 && rep != NULL)
        rc = bkm_prog_report_check(rep, planned, n, NULL, &chk, err);
    if (rc < 0)
        goto out;
    if (chk != NULL) {
        verified = chk->verdict == BKM_PROG_MATCH;
        *mismatch = chk->verdict == BKM_PROG_MISMATCH || chk->verdict == BKM_PROG_MISSING;
        snprintf(why, why_n, "%s", chk->summary);
    } else if (n == 0) {
        snprintf(why, why_n, "the program maps no OpenMP runtime: no team to verify");
    } else {
        snprintf(why, why_n, "no thread evidence was gathered (%s)",
                 pr->sampler_failed ? pr->sampler_err.msg : "the sampler did not run");
    }
    bkm_json_key(w, "binding");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "verified"), bkm_json_bool(w, verified);
    bkm_json_key(w, "summary"), bkm_json_str(w, why);
    json_program(w, pr->pg, end);   /* stored with the trial: the scripts run this program */
    json_runtime(w, pr, kind);
    bkm_json_key(w, "planner"), bkm_json_str(w, bkm_buf_str(&notes));
    bkm_json_key(w, "bound"), bkm_json_bool(w, chk != NULL && chk->n_unbound < chk->team_size);
    bkm_json_key(w, "team");
    if (rep != NULL)
        bkm_prog_report_binding_json(rep, chk, w);
    else
        bkm_json_null(w);
    bkm_json_obj_end(w);
out:
    bkm_prog_check_free(chk);
    bkm_free(planned);
    bkm_buf_free(&notes);
    return rc;
}

/* A printable summary of the trial's variables for the text view ("libgomp: OMP_PLACES=cores ..."). */
static void json_effective(bkm_json_w_t *w, const bkm_tune_trial_spec_t *spec, int kind)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_buf_printf(&b, "%s:", bkm_aff_runtime_kind_name(kind));
    for (int i = 0; i < spec->n_env; i++)
        bkm_buf_printf(&b, " %s=%s", spec->env[i].key, spec->env[i].value);
    if (spec->n_env == 0)
        bkm_buf_puts(&b, " (the runtime's defaults)");
    bkm_json_key(w, "effective_affinity"), bkm_json_str(w, bkm_buf_str(&b));
    bkm_buf_free(&b);
}

/* ---------------------------------------------------------------------------------------- */
/* The trial                                                                                 */

static void prog_status(bkm_tune_trial_result_t *r, const prog_run_t *pr, const bkm__tune_proc_end_t *end,
                        size_t output_max)
{
    char last[256] = "";
    const char *tail = r->stderr_tail;
    size_t len = strlen(tail);
    while (len > 0 && (tail[len - 1] == '\n' || tail[len - 1] == '\r'))
        len--;
    {
        size_t s = len;
        while (s > 0 && tail[s - 1] != '\n')
            s--;
        snprintf(last, sizeof last, "%.*s", (int)(len - s < 200 ? len - s : 200), tail + s);
    }
    r->status = BKM_TRIAL_OK;
    if (end->overflow) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "the program wrote more than %zu bytes of output; killed", output_max);
    } else if (end->how == END_TIMEOUT) {
        r->status = BKM_TRIAL_TIMEOUT;
        snprintf(r->message, sizeof r->message, "the program exceeded the trial timeout of %g s; killed",
                 pr->spec->timeout_s);
    } else if (WIFSIGNALED(end->wstatus)) {
        r->status = BKM_TRIAL_CRASHED;
        r->exit_code = -1;
        r->signal = WTERMSIG(end->wstatus);
        snprintf(r->signal_name, sizeof r->signal_name, "%s", sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
        if (sigabbrev_np(r->signal))
            snprintf(r->signal_name, sizeof r->signal_name, "SIG%s", sigabbrev_np(r->signal));
        snprintf(r->message, sizeof r->message, "the program was killed by %s%s", r->signal_name,
                 WCOREDUMP(end->wstatus) ? " (core dumped)" : "");
    } else if ((r->exit_code = WIFEXITED(end->wstatus) ? WEXITSTATUS(end->wstatus) : -1) != 0) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "the program exited with code %d%s%s", r->exit_code, last[0] ? ": " : "",
                 last);
    } else if (pr->metric_bad) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "%s", pr->metric_err.msg);
    } else if (pr->pg->metric && pr->n_values == 0) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "the program printed no line matching --metric '%.300s'",
                 pr->pg->metric);
    } else if (pr->pg->metric_higher) {
        for (size_t i = 0; i < pr->n_values && r->status == BKM_TRIAL_OK; i++)
            if (pr->values[i] == 0.0) {   /* 1/0: no time to store */
                r->status = BKM_TRIAL_FAILED;
                snprintf(r->message, sizeof r->message, "--metric-higher: the program reported a throughput of 0 "
                         "(sample %zu), which has no time per unit", i + 1);
            }
    }
    if (end->overflow || end->how == END_TIMEOUT) {
        r->exit_code = -1;
        r->signal = SIGKILL;
        snprintf(r->signal_name, sizeof r->signal_name, "SIGKILL");
    }
}

/* Where the team shim writes: a fresh file of this trial, created exclusively. */
static int prog_log_open(prog_run_t *pr, bkm_err_t *err)
{
    static const char *const dflt = "/tmp";
    const char *dir = pr->pg->log_dir ? pr->pg->log_dir : dflt;
    for (int attempt = 0; attempt < 8; attempt++) {
        int rc;
        snprintf(pr->log_path, sizeof pr->log_path, "%s/bkm-team-%ld-%llx.log", dir, (long)getpid(),
                 (unsigned long long)bkm_now_ns() + (unsigned long long)attempt);
        if ((rc = bkm_prog_log_create(pr->log_path, err)) == BKM_OK)
            return BKM_OK;
        if (attempt == 7)
            return rc;
    }
    return BKM_OK;
}

/* Run the program once (spawn to reap) and gather what it left. */
static int prog_execute(const bkm_tune_runner_t *rn, prog_run_t *pr, bkm_tune_trial_result_t *r,
                        bkm__tune_proc_end_t *end, size_t output_max, bkm_err_t *err)
{
    bkm__tune_proc_t proc = {0};
    char **envp = NULL;
    int rc = prog_env(rn, pr->spec, pr, &envp, err);
    if (rc < 0)
        return rc;
    proc.what = "the program";
    proc.exe = pr->pg->argv[0];
    proc.argv = (char **)pr->pg->argv;
    proc.envp = envp;
    proc.result_fd = -1;
    proc.timeout_s = pr->spec->timeout_s;
    proc.output_max = output_max;
    proc.slice_ms = pr->pg->sample_ms > 0 ? pr->pg->sample_ms : BKM_PROG_INTERVAL_MS_DEFAULT;
    proc.on_start = prog_on_start;
    proc.on_tick = prog_on_tick;
    proc.on_exit = prog_on_exit;
    proc.on_output = prog_on_output;
    proc.ud = pr;
    rc = bkm__tune_supervise(rn, &proc, r, end, err);
    bkm__tune_strv_free(envp);
    return rc;
}

int bkm__tune_program_run(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, bkm_tune_trial_result_t *r,
                          bkm_err_t *err)
{
    const bkm_tune_program_t *pg = rn->program;
    prog_run_t *pr = NULL;
    bkm__tune_proc_end_t end = {0};
    bkm_prog_log_t log = {0};
    bkm_prog_report_t *rep = NULL;
    bkm_buf_t doc;
    bkm_json_w_t w;
    size_t output_max = pg->output_max ? pg->output_max : BKM_TUNE_PROGRAM_OUTPUT_MAX;
    int rc, kind, mismatch = 0, status;
    char why[256], impl[128], message[512];

    bkm_buf_init(&doc);
    if ((rc = bkm_tune_program_check(pg, err)) < 0)
        return rc;
    if ((pr = bkm_calloc(1, sizeof *pr)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for the program trial");
    pr->pg = pg;
    pr->spec = spec;
    if (pg->metric != NULL) {
        if ((rc = metric_compile(pg->metric, &pr->re, err)) < 0)
            goto out;
        pr->have_re = 1;
        if ((pr->values = bkm_calloc(PROG_VALUES_MAX, sizeof *pr->values)) == NULL) {
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the metric's values");
            goto out;
        }
    }
    if (pg->team_shim != NULL && (rc = prog_log_open(pr, err)) < 0)
        goto out;
    if ((rc = prog_execute(rn, pr, r, &end, output_max, err)) < 0 || bkm__tune_supervise_end(rn, &end, r))
        goto out;
    if (pg->team_shim != NULL)
        (void)bkm_prog_log_read(&log, pr->log_path, BKM_PROG_LOG_MAX_BYTES, NULL);   /* none: inferred from /proc */
    if (pr->sampler != NULL || log.n > 0)
        (void)bkm_prog_report_build(pr->sampler, log.n > 0 ? &log : NULL, (int)end.pid, &rep, NULL);
    bkm_prog_report_set_runtime_seen(rep, pr->rt_seen_ns);
    prog_status(r, pr, &end, output_max);
    status = r->status;
    snprintf(message, sizeof message, "%s", r->message);
    kind = prog_runtime(pr, rep);

    bkm_json_w_init(&w, &doc, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "workload"), bkm_json_str(&w, pg->name);
    bkm_json_key(&w, "backend"), bkm_json_str(&w, "program");
    snprintf(impl, sizeof impl, "program:%s", strrchr(pg->argv[0], '/') + 1);
    bkm_json_key(&w, "impl"), bkm_json_str(&w, impl);
    bkm_json_key(&w, "threads"), bkm_json_int(&w, spec->threads);
    json_env(&w, spec);
    json_effective(&w, spec, kind);
    json_metric(&w, pr);
    if ((rc = json_samples(&w, pr, &end, status == BKM_TRIAL_OK, err)) < 0 ||
        (rc = json_binding(&w, pr, &end, rep, kind, &mismatch, why, sizeof why, err)) < 0)
        goto out;
    bkm_json_key(&w, "noise");
    if (rep != NULL)
        bkm_prog_report_noise_json(rep, spec->noise_share, &w);
    else
        bkm_json_null(&w);
    bkm_json_obj_end(&w);
    if (doc.oom) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the program trial's JSON");
        goto out;
    }
    if ((rc = bkm_tune_trial_result_parse(r, doc.data, err)) < 0)
        goto out;
    if ((r->json = bkm_buf_take(&doc)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the program trial's JSON");
        goto out;
    }
    r->status = status;
    snprintf(r->message, sizeof r->message, "%s", message);
    if (status == BKM_TRIAL_OK && mismatch) {
        r->status = BKM_TRIAL_BINDING_MISMATCH;
        snprintf(r->message, sizeof r->message, "OpenMP team not bound as planned: %s", why);
    }
out:
    if (pr != NULL) {
        if (pr->log_path[0])
            unlink(pr->log_path);
        if (pr->have_re)
            regfree(&pr->re);
        bkm_prog_sampler_close(pr->sampler);
        bkm_free(pr->values);
    }
    bkm_prog_report_free(rep);
    bkm_prog_log_free(&log);
    bkm_free(pr);
    bkm_buf_free(&doc);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* A trial of a program checked before it runs                                              */

int bkm_tune_program_trial_check(const bkm_tune_program_t *p, const bkm_tune_trial_spec_t *spec,
                                 const struct bkm_topo *topo, bkm_buf_t *ignored, bkm_err_t *err)
{
    bkm_topo_summary_t sum;
    bkm_cpuset_t *planned = NULL;
    bkm_buf_t notes;
    int rc, n = 0, kind = p->runtime;
    if ((rc = bkm_tune_trial_spec_validate(spec, err)) < 0)
        return rc;
    bkm_topo_summary(topo, &sum);
    if (spec->threads > sum.pus)
        return bkm_err_set(err, BKM_EINVAL, "threads %d exceed the %d PUs of this node (%d allowed)", spec->threads,
                           sum.pus, sum.allowed_pus);
    for (int i = 0; ignored != NULL && i < spec->n_env; i++)
        if (kind != BKM_AFF_RUNTIME_UNKNOWN && bkm_aff_runtime_var_ignored((bkm_aff_runtime_kind_t)kind,
                                                                           spec->env[i].key)) {
            if (ignored->len)
                bkm_buf_puts(ignored, "; ");
            bkm_aff_runtime_var_explain((bkm_aff_runtime_kind_t)kind, spec->env[i].key, p->argv[0], NULL, ignored);
        }
    bkm_buf_init(&notes);
    rc = prog_plan(p, spec, kind, &planned, &n, &notes, err);
    bkm_free(planned);
    bkm_buf_free(&notes);
    return rc;
}
