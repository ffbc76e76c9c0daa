/* SPDX-License-Identifier: MIT */
/* The regression gate (`tune regress`): a fixed suite of small workload configurations measured
 * in fresh worker processes, one value per process, compared with a recorded baseline (values
 * normalised by an interleaved calibration process) or with another build measured interleaved
 * in the same run. The statistics are the sweeps' sequential confirmation (stats/seq.c): the
 * one-sided Mann-Whitney test on process values at each look, alpha spent over the looks, Holm
 * over the workloads, the Hodges-Lehmann ratio with its repeated interval; blocks of processes
 * are added for the workloads still undecided, up to processes_max. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"
#include "bkm/workloads.h"

/* The suite: small configurations of every workload, each iteration well under a millisecond,
 * so that among its samples a process has some that no neighbour interrupted (on a busy machine
 * a scheduler slice is a few ms: an iteration longer than that is never uncontended, and its
 * fastest sample tracks the neighbours' load instead of the code). AlexNet's training step (55 ms
 * at batch 1, and seconds to build its 61 M parameters) cannot be made that small: it is in the
 * suite only when named (--workloads ...,alexnet), with the noise that brings. The MPI training
 * workload (fmnist-sgd) runs as an MPI job of one rank under the launcher (mpiexec), the MLP on
 * a 10-step training run; its value is the rank's median step time as the runner reports it
 * (the worker takes no warm-up or sample counts: the training run is its loop). It needs MPICH
 * and the Fashion-MNIST files, so it too runs only when named. */
static const struct suite_entry {
    const char *name;
    const char *params[4];
    int warmup, min_samples, in_default, ranks;
    double min_time_s;
} suite[] = {
    {"gemm", {"m=256", "n=256", "k=256"}, 20, 20, 1, 0, 0.1},
    {"conv2d", {"shape=mb1ic32ih14oc32kh3ph1"}, 20, 20, 1, 0, 0.1},
    {"conv3d", {"shape=mb1ic4id12ih12iw12oc8kd3"}, 20, 20, 1, 0, 0.1},
    {"lstm", {"shape=8,10,64,64"}, 20, 20, 1, 0, 0.1},
    {"alexnet", {"batch=1"}, 2, 5, 0, 0, 0.2},
    {"fmnist-sgd", {"model=mlp", "train_limit=1280", "test_limit=100"}, 1, 1, 0, 1, 0},
};
#define SUITE_N (sizeof suite / sizeof suite[0])

/* The calibration process: SGEMM 256^3 on every PU, whatever --threads and --param say. */
static const char *const calib_params[] = {"m=256", "n=256", "k=256"};

/* The base environment (the libomp topology correction) goes to bkm's workers and to a program on
 * libomp, never to one whose runtime ignores it. */
static int wants_base(const bkm_tune_regress_cfg_t *cfg, int program)
{
    int rt = program && cfg->program ? cfg->program->program->runtime : BKM_AFF_RUNTIME_LIBOMP;
    return cfg->base && (rt == BKM_AFF_RUNTIME_LIBOMP || rt == BKM_AFF_RUNTIME_LIBIOMP5);
}

static void spec_base(bkm_tune_trial_spec_t *s, const bkm_tune_regress_cfg_t *cfg, int program)
{
    bkm_tune_trial_spec_defaults(s);
    if (wants_base(cfg, program))
        for (int i = 0; i < cfg->base->n_env; i++)
            s->env[s->n_env++] = cfg->base->env[i];
    snprintf(s->counters, sizeof s->counters, "none");
    s->max_samples = 400; /* the fastest of many short samples: see the suite */
    s->target_ci_rel = 0; /* no early stop on a tight interval: min_time decides */
    s->max_time_s = 2.0;
    s->timeout_s = 300;
}

static void params_label(bkm_tune_regress_wl_t *w)
{
    size_t o = 0;
    w->params[0] = '\0';
    for (int i = 0; i < w->spec.n_params && o < sizeof w->params; i++)
        o += (size_t)snprintf(w->params + o, sizeof w->params - o, "%s%s=%s", i ? " " : "", w->spec.params[i].key,
                              w->spec.params[i].value);
}

static int has_param(const char *wl, const char *key, size_t key_len)
{
    bkm_wl_param_t p[BKM_WL_MAX_PARAMS];
    size_t n = 0;
    if (bkm_wl_params(wl, p, &n, NULL) < 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strlen(p[i].name) == key_len && strncmp(p[i].name, key, key_len) == 0)
            return 1;
    return 0;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncmp(p, name, n) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int doubles_of(const bkm_json_t *arr, double **out, size_t *n, const char *what, bkm_err_t *err)
{
    size_t k = 0;
    *out = NULL;
    *n = 0;
    if (arr == NULL || arr->type != BKM_JSON_ARR)
        return bkm_err_set(err, BKM_EINVAL, "baseline: %s is not an array", what);
    if ((*out = malloc((arr->n_children ? arr->n_children : 1) * sizeof **out)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "baseline: out of memory");
    for (const bkm_json_t *x = arr->child; x; x = x->next) {
        if (x->type != BKM_JSON_NUM || !isfinite(x->num) || x->num <= 0)
            return bkm_err_set(err, BKM_EINVAL, "baseline: %s holds a value that is not a positive number", what);
        (*out)[k++] = x->num;
    }
    *n = k;
    return BKM_OK;
}

/* A spec stored in a baseline; its environment is replaced by this run's (the libomp topology
 * correction names a file of the recording run). */
static int spec_from_tree(const bkm_json_t *tree, const bkm_tune_regress_cfg_t *cfg, int program,
                          bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    int ret;
    if (tree == NULL || tree->type != BKM_JSON_OBJ)
        return bkm_err_set(err, BKM_EINVAL, "not a trial spec object");
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_json_write_tree(&w, tree);
    ret = b.oom ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : bkm_tune_trial_spec_from_json(bkm_buf_str(&b), spec, err);
    bkm_buf_free(&b);
    if (ret < 0)
        return ret;
    spec->n_env = 0;
    if (wants_base(cfg, program))
        for (int i = 0; i < cfg->base->n_env; i++)
            spec->env[spec->n_env++] = cfg->base->env[i];
    return bkm_tune_trial_spec_validate(spec, err);
}

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

/* The argv of @p p as one line for messages ("/usr/bin/python3 train.py 5"), cut to @p n. */
static void argv_line(const char *const *argv, int argc, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && o + 1 < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%s", i ? " " : "", argv[i]) < n - o ? strlen(out + o) : n - o - 1;
}

/* The program a baseline workload was recorded for, against the one this check runs: the same
 * argv and the same metric, or the check is refused (it would compare two different figures).
 * The executable's hash may differ: a new build of the program is what the check measures. */
static int program_from_baseline(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, const bkm_json_t *w,
                                 bkm_tune_regress_wl_t *x, bkm_err_t *err)
{
    const bkm_json_t *pj = bkm_json_get(w, "program"), *av = pj ? bkm_json_get(pj, "argv") : NULL;
    const bkm_tune_program_t *pg = cfg->program ? cfg->program->program : NULL;
    char was[512], now[512];
    const char *metric;
    int i = 0, same;
    if (pj == NULL && pg == NULL)
        return BKM_OK;
    if (pj == NULL)
        return bkm_err_set(err, BKM_EINVAL, "baseline: workload %s is of bkm's suite, not a program: check it "
                           "without -- CMD", x->name);
    if (av == NULL || av->type != BKM_JSON_ARR || av->n_children < 1)
        return bkm_err_set(err, BKM_EINVAL, "baseline: program %s without its argv", x->name);
    was[0] = '\0';
    for (const bkm_json_t *a = av->child; a; a = a->next)
        if (a->type != BKM_JSON_STR)
            return bkm_err_set(err, BKM_EINVAL, "baseline: program %s: an argv word that is not a string", x->name);
    {
        const char *words[BKM_TUNE_PROGRAM_ARGS_MAX];
        int n = 0;
        for (const bkm_json_t *a = av->child; a && n < BKM_TUNE_PROGRAM_ARGS_MAX; a = a->next)
            words[n++] = a->str;
        argv_line(words, n, was, sizeof was);
        if (pg == NULL)
            return bkm_err_set(err, BKM_EINVAL, "baseline: recorded for the program `%s` (workload %s): give it "
                               "after -- to check it", was, x->name);
        same = n == pg->argc;
        for (const bkm_json_t *a = av->child; a && same; a = a->next, i++)
            same = strcmp(a->str, pg->argv[i]) == 0;
    }
    argv_line(pg->argv, pg->argc, now, sizeof now);
    if (!same)
        return bkm_err_set(err, BKM_EINVAL, "baseline: recorded for the program `%s`, not `%s`", was, now);
    metric = bkm_json_get_str(pj, "metric");
    if ((metric == NULL) != (pg->metric == NULL) || (metric && strcmp(metric, pg->metric) != 0) ||
        (int)bkm_json_get_num(pj, "metric_higher", 0) != !!pg->metric_higher)
        return bkm_err_set(err, BKM_EINVAL, "baseline: the program's figure was %s%s%s, not %s%s%s: give the "
                           "same --metric", metric ? "--metric " : "its wall time", metric ? metric : "",
                           bkm_json_get_num(pj, "metric_higher", 0) ? " (higher is better)" : "",
                           pg->metric ? "--metric " : "its wall time", pg->metric ? pg->metric : "",
                           pg->metric_higher ? " (higher is better)" : "");
    copy_str(r->ref_exe_sha256, sizeof r->ref_exe_sha256, bkm_json_get_str(pj, "exe_sha256"));
    x->program = 1;
    return BKM_OK;
}

/* The suite of a program (record): the program alone, one run a process, 1 thread unless
 * --threads (as bkm's suite). */
static int plan_program(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err)
{
    const bkm_tune_program_t *pg = cfg->program->program;
    bkm_tune_regress_wl_t *x = &r->wl[r->n_wl++];
    copy_str(x->name, sizeof x->name, pg->name);
    x->program = 1;
    spec_base(&x->spec, cfg, 1);
    if (strlen(pg->name) >= sizeof x->spec.workload)
        return bkm_err_set(err, BKM_EINVAL, "program name '%s' is too long", pg->name);
    snprintf(x->spec.workload, sizeof x->spec.workload, "%s", pg->name);
    x->spec.threads = 1;
    x->ref_threads = 1;
    return BKM_OK;
}

/* The suite's refusals for a program: only against a baseline, and its suite is itself. */
static int program_rules(const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err)
{
    if (cfg->program == NULL)
        return BKM_OK;
    if (cfg->program->program == NULL)
        return bkm_err_set(err, BKM_EINVAL, "regress: a program runner without its program");
    if (cfg->reference)
        return bkm_err_set(err, BKM_EINVAL, "--against compares two builds of bkm; a program (-- %s) is checked "
                           "against a baseline it recorded: --record -o FILE -- CMD, then --baseline FILE -- CMD",
                           cfg->program->program->argv[0]);
    if (cfg->workloads)
        return bkm_err_set(err, BKM_EINVAL, "--workloads '%s': with -- CMD the suite is the program alone",
                           cfg->workloads);
    if (cfg->n_params)
        return bkm_err_set(err, BKM_EINVAL, "--param '%s': a program has no bkm parameters (its arguments come "
                           "after --)", cfg->params[0]);
    return BKM_OK;
}

/* Drop @p key from @p sp's environment. */
static void env_drop(bkm_tune_trial_spec_t *sp, const char *key)
{
    int k = bkm_kv_find(sp->env, sp->n_env, key, strlen(key));
    if (k >= 0) {
        memmove(&sp->env[k], &sp->env[k + 1], (size_t)(sp->n_env - k - 1) * sizeof sp->env[0]);
        sp->n_env--;
    }
}

/* more than one thread: bound one per PU (compact). Unbound, a busy machine's scheduler may
 * stack a process's threads on one PU for its whole life (an LSTM step of 2 threads: fastest
 * sample 0.27 to 7.6 ms by process); bound, each thread runs whenever its PU is free and the
 * fastest of many samples finds the moments both were (0.16-0.26 ms). One thread is left
 * unbound, free to move to whichever PU is idle. bkm's workers take KMP_AFFINITY; a program
 * the OpenMP places every runtime reads (OMP_PLACES=cores OMP_PROC_BIND=close, the same
 * binding), none when it loads no OpenMP runtime. */
static int bind_threads(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err)
{
    int ret = BKM_OK;
    for (size_t i = 0; i < r->n_wl && ret == BKM_OK; i++) {
        bkm_tune_trial_spec_t *sp = &r->wl[i].spec;
        env_drop(sp, "KMP_AFFINITY"), env_drop(sp, "OMP_PLACES"), env_drop(sp, "OMP_PROC_BIND");
        if (sp->threads > 1 && !r->wl[i].program)
            ret = bkm_tune_trial_spec_setenv(sp, "KMP_AFFINITY", "granularity=fine,compact", err);
        else if (sp->threads > 1 && cfg->program->program->runtime != BKM_AFF_RUNTIME_NONE &&
                 (ret = bkm_tune_trial_spec_setenv(sp, "OMP_PLACES", "cores", err)) == BKM_OK)
            ret = bkm_tune_trial_spec_setenv(sp, "OMP_PROC_BIND", "close", err);
        params_label(&r->wl[i]);
    }
    return ret;
}

/* The suite of the baseline document: workloads, their specs and reference values. */
static int plan_from_baseline(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, const bkm_json_t *doc,
                              bkm_err_t *err)
{
    const bkm_json_t *wls = bkm_json_get(doc, "workloads"), *host = bkm_json_get(doc, "host");
    const char *fmt = bkm_json_get_str(doc, "format");
    int ret;
    if (fmt == NULL || strcmp(fmt, BKM_TUNE_REGRESS_FORMAT) != 0)
        return bkm_err_set(err, BKM_EINVAL, "baseline: not a bkm regression baseline (format is not \"%s\")",
                           BKM_TUNE_REGRESS_FORMAT);
    if (bkm_json_get_num(doc, "version", 0) != 1)
        return bkm_err_set(err, BKM_EINVAL, "baseline: version %g is not 1", bkm_json_get_num(doc, "version", 0));
    if (wls == NULL || wls->type != BKM_JSON_ARR || wls->n_children == 0)
        return bkm_err_set(err, BKM_EINVAL, "baseline: no workloads");
    copy_str(r->ref_revision, sizeof r->ref_revision, bkm_json_get_str(doc, "git_revision"));
    copy_str(r->ref_created, sizeof r->ref_created, bkm_json_get_str(doc, "created_at"));
    copy_str(r->ref_host, sizeof r->ref_host, host ? bkm_json_get_str(host, "hostname") : NULL);
    copy_str(r->ref_cpu, sizeof r->ref_cpu, host ? bkm_json_get_str(host, "cpu_model") : NULL);
    copy_str(r->ref_fingerprint, sizeof r->ref_fingerprint, host ? bkm_json_get_str(host, "fingerprint") : NULL);
    r->processes = (int)bkm_json_get_num(doc, "processes", BKM_TUNE_REGRESS_PROCESSES);
    if (r->processes < 3 || r->processes > BKM_TUNE_REPLICATES_MAX)
        return bkm_err_set(err, BKM_EINVAL, "baseline: processes %d outside 3..%d", r->processes,
                           BKM_TUNE_REPLICATES_MAX);
    if ((ret = spec_from_tree(bkm_json_get(doc, "calibration"), cfg, 0, &r->calib, err)) < 0)
        return bkm_err_prefix(err, "baseline: calibration");
    for (const bkm_json_t *w = wls->child; w; w = w->next) {
        bkm_tune_regress_wl_t *x;
        const char *name = bkm_json_get_str(w, "workload");
        if (name == NULL || bkm_json_get(w, "spec") == NULL)
            return bkm_err_set(err, BKM_EINVAL, "baseline: a workload without name or spec");
        if (cfg->workloads && !in_list(cfg->workloads, name))
            continue;
        if (r->n_wl == BKM_TUNE_REGRESS_MAX_WL)
            return bkm_err_set(err, BKM_EINVAL, "baseline: more than %d workloads", BKM_TUNE_REGRESS_MAX_WL);
        x = &r->wl[r->n_wl++];
        copy_str(x->name, sizeof x->name, name);
        if ((ret = program_from_baseline(r, cfg, w, x, err)) < 0)
            return ret;
        if ((ret = spec_from_tree(bkm_json_get(w, "spec"), cfg, x->program, &x->spec, err)) < 0)
            return bkm_err_prefix(err, "baseline: workload %s", name);
        if (strcmp(x->spec.workload, name) != 0)
            return bkm_err_set(err, BKM_EINVAL, "baseline: workload %s has the spec of %s", name, x->spec.workload);
        x->ref_threads = x->spec.threads;
        if ((ret = doubles_of(bkm_json_get(w, "values"), &x->ref_values, &x->n_ref, "values", err)) < 0)
            return ret;
    }
    return BKM_OK;
}

int bkm_tune_regress_plan(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, const char *baseline_json,
                          bkm_err_t *err)
{
    bkm_json_t *doc = NULL;
    int ret = BKM_OK;
    memset(r, 0, sizeof *r);
    r->ab = cfg->reference != NULL;
    r->processes = cfg->processes > 0 ? cfg->processes : BKM_TUNE_REGRESS_PROCESSES;
    if (cfg->pus < 1)
        return bkm_err_set(err, BKM_EINVAL, "regress: the host has no PU");
    if ((ret = program_rules(cfg, err)) < 0)
        return ret;
    if (cfg->program) {
        const bkm_tune_program_t *pg = cfg->program->program;
        copy_str(r->exe_sha256, sizeof r->exe_sha256, pg->exe_sha256);
        copy_str(r->runtime, sizeof r->runtime, bkm_aff_runtime_kind_name((bkm_aff_runtime_kind_t)pg->runtime));
    }
    if (cfg->workloads)
        for (const char *p = cfg->workloads; *p;) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            int known = 0;
            for (size_t i = 0; i < SUITE_N; i++)
                known |= strlen(suite[i].name) == l && strncmp(suite[i].name, p, l) == 0;
            if (!known)
                return bkm_err_set(err, BKM_EINVAL, "--workloads: '%.*s' is not in the suite (gemm, conv2d, conv3d, "
                                   "lstm, alexnet, fmnist-sgd)", (int)l, p);
            p = e ? e + 1 : p + l;
        }
    if (baseline_json) {
        if ((ret = bkm_json_parse(baseline_json, &doc, err)) < 0) {
            bkm_err_prefix(err, "baseline");
            goto out;
        }
        if ((ret = plan_from_baseline(r, cfg, doc, err)) < 0)
            goto out;
        if (cfg->processes > 0)
            r->processes = cfg->processes;
    } else {
        spec_base(&r->calib, cfg, 0);
        snprintf(r->calib.workload, sizeof r->calib.workload, "gemm");
        /* one thread: a single thread's fastest sample is steady on a busy machine (a check
         * keeps the baseline's calibration whatever its own --threads) */
        r->calib.threads = 1;
        r->calib.min_time_s = 0.1;
        r->calib.min_samples = 20;
        for (size_t i = 0; i < 3; i++)
            if ((ret = bkm_tune_trial_spec_param(&r->calib, calib_params[i], err)) < 0)
                goto out;
        for (size_t i = 0; i < SUITE_N && cfg->program == NULL; i++) {
            bkm_tune_regress_wl_t *x;
            if (cfg->workloads ? !in_list(cfg->workloads, suite[i].name) : !suite[i].in_default)
                continue;
            x = &r->wl[r->n_wl++];
            copy_str(x->name, sizeof x->name, suite[i].name);
            spec_base(&x->spec, cfg, 0);
            snprintf(x->spec.workload, sizeof x->spec.workload, "%s", suite[i].name);
            x->spec.threads = 1; /* see bkm_tune_regress_cfg_t.threads */
            x->spec.ranks = suite[i].ranks;
            x->spec.warmup = suite[i].warmup;
            x->spec.min_samples = suite[i].min_samples;
            x->spec.min_time_s = suite[i].min_time_s;
            for (size_t k = 0; k < 4 && suite[i].params[k]; k++)
                if ((ret = bkm_tune_trial_spec_param(&x->spec, suite[i].params[k], err)) < 0)
                    goto out;
            x->ref_threads = x->spec.threads;
        }
        if (cfg->program && (ret = plan_program(r, cfg, err)) < 0)
            goto out;
    }
    /* --threads and --param change this build's side only: the reference stays as recorded */
    for (size_t i = 0; i < r->n_wl; i++)
        if (cfg->threads > 0)
            r->wl[i].spec.threads = cfg->threads;
    for (size_t k = 0; k < cfg->n_params; k++) {
        const char *eq = strchr(cfg->params[k], '=');
        int used = 0;
        if (eq == NULL || eq == cfg->params[k]) {
            ret = bkm_err_set(err, BKM_EINVAL, "--param '%s': expected key=value", cfg->params[k]);
            goto out;
        }
        for (size_t i = 0; i < r->n_wl; i++)
            if (has_param(r->wl[i].name, cfg->params[k], (size_t)(eq - cfg->params[k]))) {
                if ((ret = bkm_tune_trial_spec_param(&r->wl[i].spec, cfg->params[k], err)) < 0)
                    goto out;
                used = 1;
            }
        if (!used) {
            ret = bkm_err_set(err, BKM_EINVAL, "--param '%s': no workload of the suite has the parameter '%.*s'",
                              cfg->params[k], (int)(eq - cfg->params[k]), cfg->params[k]);
            goto out;
        }
    }
    ret = bind_threads(r, cfg, err);
    if (ret < 0)
        goto out;
    if (r->n_wl == 0)
        ret = bkm_err_set(err, BKM_EINVAL, "regress: no workload selected");
out:
    bkm_json_free(doc);
    return ret;
}

/* Run one process of @p spec; *ms = its fastest sample, NaN when it failed (wl->error names
 * why). The gate uses each process's minimum, not its median: on a shared machine another
 * tenant only ever adds time to a sample, so the fastest sample of a process is the part of its
 * timing that belongs to the code (the median moves with the neighbours' load). */
static int run_one(const bkm_tune_runner_t *runner, const bkm_tune_trial_spec_t *spec, bkm_tune_regress_wl_t *w,
                   double *ms, int *disturbed, bkm_err_t *err)
{
    bkm_tune_trial_result_t res;
    int ret;
    memset(&res, 0, sizeof res);
    *ms = NAN;
    *disturbed = -1;
    if ((ret = bkm_tune_trial_run(runner, spec, &res, err)) < 0) {
        bkm_tune_trial_result_free(&res);
        return ret;
    }
    if (res.status == BKM_TRIAL_OK && isfinite(res.min_ms) && res.min_ms > 0) {
        *ms = res.min_ms;
        *disturbed = res.disturbed;
    } else {
        w->failed++;
        if (w->error[0] == '\0')
            snprintf(w->error, sizeof w->error, "%s%s: %s (%s)",
                     runner->program ? runner->program->argv[0] : runner->worker_path ? runner->worker_path : "",
                     spec == &w->spec ? "" : " (calibration)", bkm_trial_status_name(res.status), res.message);
    }
    bkm_tune_trial_result_free(&res);
    return BKM_OK;
}

static void progress(const bkm_tune_regress_cfg_t *cfg, const char *fmt, const char *a, size_t i, size_t n)
{
    char line[256];
    if (cfg->progress == NULL)
        return;
    snprintf(line, sizeof line, fmt, a, i, n);
    cfg->progress(cfg->progress_ud, line);
}

/* Grow a workload's value arrays to hold @p cap processes per side and @p looks looks. */
static int wl_grow(bkm_tune_regress_wl_t *w, int ab, size_t cap, size_t looks)
{
    double *v = realloc(w->values, cap * sizeof *v);
    if (v)
        w->values = v;
    if (!v || (v = realloc(w->wl_ms, cap * sizeof *v)) == NULL)
        return BKM_ENOMEM;
    w->wl_ms = v;
    if ((v = realloc(w->cal_ms, cap * sizeof *v)) == NULL)
        return BKM_ENOMEM;
    w->cal_ms = v;
    if (ab) {
        if ((v = realloc(w->ref_values, cap * sizeof *v)) == NULL)
            return BKM_ENOMEM;
        w->ref_values = v;
    }
    {
        size_t *a = realloc(w->n_at, looks * sizeof *a), *b;
        if (a)
            w->n_at = a;
        if (!a || (b = realloc(w->n_ref_at, looks * sizeof *b)) == NULL)
            return BKM_ENOMEM;
        w->n_ref_at = b;
    }
    return BKM_OK;
}

/* One block of @p rounds pairs of workload @p i, in the claims' drift-cancelling order. */
static int measure_block(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, size_t i, size_t rounds,
                         uint64_t seed, size_t *order, size_t done, size_t total, bkm_err_t *err)
{
    bkm_tune_regress_wl_t *w = &r->wl[i];
    int ret;
    /* two arms, in the claims' drift-cancelling order: A/B: 0 = reference build, 1 = this build;
     * baseline: 0 = calibration, 1 = the workload, one pair per round (rounds are consecutive
     * pairs of the order, so each round's two processes run back to back and which one comes
     * first alternates) */
    if ((ret = bkm_tune_claim_order(2, rounds, seed, order, err)) < 0)
        return ret;
    for (size_t k = 0; k < 2 * rounds; k += 2) {
        double ms[2] = {NAN, NAN};
        int dist[2] = {-1, -1};
        for (size_t h = 0; h < 2; h++) {
            size_t arm = order[k + h];
            const bkm_tune_runner_t *rn = r->ab && arm == 0 ? cfg->reference
                                          : arm == 1 && w->program ? cfg->program
                                                                   : cfg->runner;
            if (cfg->stop && *cfg->stop)
                return bkm_err_set(err, BKM_EFAIL, "regress: stopped by a signal");
            progress(cfg, "%s: process %zu of %zu", w->name, done + k + h + 1, total);
            if ((ret = run_one(rn, !r->ab && arm == 0 ? &r->calib : &w->spec, w, &ms[arm], &dist[arm], err)) < 0)
                return ret;
        }
        /* the noise marks of the processes counted below (shown, not used by the rule) */
        if (isfinite(ms[1]) && (r->ab || isfinite(ms[0]))) {
            w->disturbed += dist[1] == 1;
            w->noise_unknown += dist[1] < 0;
        }
        if (isfinite(ms[0]) && (r->ab || isfinite(ms[1]))) {
            w->ref_disturbed += dist[0] == 1;
            w->ref_noise_unknown += dist[0] < 0;
        }
        if (r->ab) {
            if (isfinite(ms[0]))
                w->ref_values[w->n_ref++] = ms[0];
            if (isfinite(ms[1]))
                w->values[w->n++] = ms[1];
        } else if (isfinite(ms[0]) && isfinite(ms[1])) {
            w->wl_ms[w->n] = ms[1];
            w->cal_ms[w->n] = ms[0];
            w->values[w->n++] = ms[1] / ms[0];
        }
    }
    return BKM_OK;
}

/* The sequential rule of the gate: this build's values are the "default", the reference's the
 * candidate; a claim is a regression. */
static int regress_seq(const bkm_tune_regress_t *r, double threshold, double alpha, bkm_tune_seq_t **s,
                       bkm_err_t *err)
{
    bkm_tune_seq_rule_t rule;
    bkm_tune_seq_rule_defaults(&rule);
    rule.alpha = alpha > 0 ? alpha : BKM_TUNE_REGRESS_ALPHA;
    rule.min_ratio = 1.0 + (threshold > 0 ? threshold : BKM_TUNE_REGRESS_THRESHOLD);
    rule.max = (size_t)r->processes_max;
    rule.fixed_cand = !r->ab;   /* a baseline's values are all it has */
    return bkm_tune_seq_create(s, &rule, r->n_wl, err);
}

/* Look at every workload's values after block @p b (fewer than 3 a side: not compared). */
static int regress_look(const bkm_tune_regress_t *r, bkm_tune_seq_t *s, size_t b, int final, bkm_err_t *err)
{
    const double *base[BKM_TUNE_REGRESS_MAX_WL], *ref[BKM_TUNE_REGRESS_MAX_WL];
    size_t nb[BKM_TUNE_REGRESS_MAX_WL], nr[BKM_TUNE_REGRESS_MAX_WL];
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_regress_wl_t *w = &r->wl[i];
        size_t at = w->looks == 0 ? 0 : b < w->looks ? b : w->looks - 1;
        base[i] = w->values;
        ref[i] = w->ref_values;
        nb[i] = w->looks ? w->n_at[at] : 0;
        nr[i] = w->looks ? w->n_ref_at[at] : 0;
        if (nb[i] < 3 || nr[i] < 3)
            nb[i] = nr[i] = 0;
    }
    return bkm_tune_seq_look_each(s, base, nb, ref, nr, final, err);
}

int bkm_tune_regress_measure(bkm_tune_regress_t *r, const bkm_tune_regress_cfg_t *cfg, bkm_err_t *err)
{
    size_t R = (size_t)r->processes, Rmax, done = 0, looks_cap, *order = NULL;
    bkm_tune_seq_t *seq = NULL;
    int ret = BKM_OK;
    if (cfg->processes_max > 0 && cfg->processes_max < r->processes)
        return bkm_err_set(err, BKM_EINVAL, "regress: at most %d processes, below the %d of a block",
                           cfg->processes_max, r->processes);
    r->processes_max = cfg->processes_max > 0 ? cfg->processes_max : r->processes;
    Rmax = (size_t)r->processes_max;
    looks_cap = (Rmax - R + R - 1) / R + 1;
    r->looks = 0;
    if ((order = malloc(2 * R * sizeof *order)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "regress: out of memory");
    for (size_t i = 0; i < r->n_wl; i++) {
        bkm_tune_regress_wl_t *w = &r->wl[i];
        w->n = 0;
        w->looks = 0;
        w->disturbed = w->noise_unknown = w->ref_disturbed = w->ref_noise_unknown = 0;
        if (r->ab)
            w->n_ref = 0;
        if (wl_grow(w, r->ab, Rmax, looks_cap) < 0) {
            ret = bkm_err_set(err, BKM_ENOMEM, "regress: out of memory");
            goto out;
        }
    }
    if (Rmax > R && (ret = regress_seq(r, cfg->threshold, cfg->alpha, &seq, err)) < 0)
        goto out;
    for (size_t b = 0; done < Rmax; b++) {
        size_t rounds = Rmax - done < R ? Rmax - done : R;
        for (size_t i = 0; i < r->n_wl; i++) {
            bkm_tune_regress_wl_t *w = &r->wl[i];
            /* the first block as a fixed check measured it; later ones their own seed each */
            uint64_t seed = b == 0 ? cfg->seed + i : cfg->seed + i + 0x9E3779B97F4A7C15ULL * b;
            if (b > 0 && bkm_tune_seq_cand(seq, i)->closed)
                continue;
            if ((ret = measure_block(r, cfg, i, rounds, seed, order, done, Rmax, err)) < 0)
                goto out;
            w->n_at[w->looks] = w->n;
            w->n_ref_at[w->looks] = w->n_ref;
            w->looks++;
        }
        done += rounds;
        r->looks = b + 1;
        if (done >= Rmax)
            break;
        if ((ret = regress_look(r, seq, b, 0, err)) < 0)
            goto out;
        if (bkm_tune_seq_open(seq) == 0)
            break;
        if (cfg->progress) {
            char line[160];
            snprintf(line, sizeof line, "%zu workload(s) undecided after %zu processes a side: %zu more",
                     bkm_tune_seq_open(seq), done, Rmax - done < R ? Rmax - done : R);
            cfg->progress(cfg->progress_ud, line);
        }
    }
out:
    bkm_tune_seq_free(seq);
    free(order);
    return ret;
}

int bkm_tune_regress_compare(bkm_tune_regress_t *r, double threshold, double alpha, bkm_err_t *err)
{
    bkm_tune_seq_t *s = NULL;
    int ret;
    r->threshold = threshold;
    r->alpha = alpha;
    r->regressions = 0;
    if (r->processes_max < r->processes)
        r->processes_max = r->processes;
    for (size_t i = 0; i < r->n_wl; i++) {
        bkm_tune_regress_wl_t *w = &r->wl[i];
        /* values given without blocks (one look of what there is) */
        if (w->looks == 0 && (w->n > 0 || w->n_ref > 0)) {
            size_t *a = realloc(w->n_at, sizeof *a), *b;
            if (a)
                w->n_at = a;
            if (!a || (b = realloc(w->n_ref_at, sizeof *b)) == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "regress: out of memory");
            w->n_ref_at = b;
            w->n_at[0] = w->n, w->n_ref_at[0] = w->n_ref, w->looks = 1;
            if (r->looks == 0)
                r->looks = 1;
        }
        if (w->n > (size_t)r->processes_max)
            r->processes_max = (int)w->n;
        if (r->ab && w->n_ref > (size_t)r->processes_max)
            r->processes_max = (int)w->n_ref;
    }
    if ((ret = regress_seq(r, threshold, alpha, &s, err)) < 0)
        return ret;
    for (size_t b = 0; b < (r->looks ? r->looks : 1) && ret == BKM_OK; b++)
        ret = regress_look(r, s, b, b + 1 >= r->looks, err);
    for (size_t i = 0; i < r->n_wl && ret == BKM_OK; i++) {
        bkm_tune_regress_wl_t *w = &r->wl[i];
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(s, i);
        w->tested = t->looks > 0 && t->decision != BKM_TUNE_FAILED;
        w->regression = 0;
        w->decision = t->decision;
        w->ratio = w->ratio_lo = w->ratio_hi = w->rci_lo = w->rci_hi = w->p = w->nominal = NAN;
        if (!w->tested) {
            w->decision = BKM_TUNE_FAILED;
            snprintf(w->verdict, sizeof w->verdict, "not compared: %zu and %zu process values (need 3 per side)%s%s",
                     w->n, w->n_ref, w->error[0] ? "; " : "", w->error);
            continue;
        }
        w->ratio = t->ratio;
        w->ratio_lo = t->ratio_lo, w->ratio_hi = t->ratio_hi;
        w->rci_lo = t->rci_lo, w->rci_hi = t->rci_hi;
        w->p = t->p;
        w->nominal = t->nominal;
        if (t->decision == BKM_TUNE_CLAIMED) {
            w->regression = 1;
            r->regressions++;
            snprintf(w->verdict, sizeof w->verdict, "REGRESSION: %.3fx slower, repeated interval [%.3f, %.3f], "
                     "one-sided p %.3g <= %.3g", w->ratio, w->rci_lo, w->rci_hi, w->p, w->nominal);
        } else if (t->decision == BKM_TUNE_NOT_BETTER && w->rci_hi > 1.0) {
            snprintf(w->verdict, sizeof w->verdict, "ok: not slower by more than %.1f%% (%.3fx, repeated interval "
                     "[%.3f, %.3f])", 100.0 * (w->rci_hi - 1.0), w->ratio, w->rci_lo, w->rci_hi);
        } else if (t->decision == BKM_TUNE_NOT_BETTER) {
            snprintf(w->verdict, sizeof w->verdict, "ok: not slower (%.3fx, repeated interval [%.3f, %.3f])", w->ratio,
                     w->rci_lo, w->rci_hi);
        } else if (w->p <= w->nominal) {
            snprintf(w->verdict, sizeof w->verdict, "ok, undecided: slower (one-sided p %.3g <= %.3g) but %.3fx is "
                     "within %.0f%%, repeated interval [%.3f, %.3f]", w->p, w->nominal, w->ratio, 100 * threshold,
                     w->rci_lo, w->rci_hi);
        } else {
            snprintf(w->verdict, sizeof w->verdict, "ok, undecided: %.3fx, repeated interval [%.3f, %.3f] holds both 1 "
                     "and %.2f (one-sided p %.3g > %.3g)", w->ratio, w->rci_lo, w->rci_hi, 1.0 + threshold, w->p,
                     w->nominal);
        }
    }
    bkm_tune_seq_free(s);
    return ret;
}

static void doubles_json(bkm_json_w_t *w, const double *v, size_t n)
{
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < n; i++)
        bkm_json_double(w, v ? v[i] : NAN);
    bkm_json_arr_end(w);
}

/* "program": what a check of the program must run again (argv, metric) and what it was (the
 * executable's hash, the runtime it loads). */
static void program_json(bkm_json_w_t *w, const bkm_tune_program_t *pg, const char *runtime)
{
    bkm_json_key(w, "program");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "argv"), bkm_tune_program_argv_json(pg, w);
    bkm_json_key(w, "exe_sha256"), bkm_json_str(w, pg->exe_sha256 ? pg->exe_sha256 : "");
    bkm_json_key(w, "runtime"), bkm_json_str(w, runtime);
    bkm_json_key(w, "metric");
    if (pg->metric)
        bkm_json_str(w, pg->metric);
    else
        bkm_json_null(w);
    bkm_json_key(w, "metric_unit"), bkm_json_str(w, pg->metric ? (pg->metric_unit ? pg->metric_unit : "ms") : "ms");
    bkm_json_key(w, "metric_higher"), bkm_json_int(w, !!pg->metric_higher);
    bkm_json_obj_end(w);
}

void bkm_tune_regress_baseline_json(const bkm_tune_regress_t *r, const bkm_tune_program_t *pg, const char *host_json,
                                    const char *revision, const char *when, bkm_buf_t *out)
{
    bkm_json_w_t w;
    bkm_json_w_init(&w, out, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "format"), bkm_json_str(&w, BKM_TUNE_REGRESS_FORMAT);
    bkm_json_key(&w, "version"), bkm_json_int(&w, 1);
    bkm_json_key(&w, "created_at"), bkm_json_str(&w, when);
    bkm_json_key(&w, "git_revision"), bkm_json_str(&w, revision);
    bkm_json_key(&w, "host"), bkm_json_raw(&w, host_json);
    bkm_json_key(&w, "unit"), bkm_json_str(&w, pg ? "per run of the program: its figure (wall time, or the fastest "
                                                    "of its --metric samples) / the fastest sample of the calibration "
                                                    "process run next to it"
                                                  : "per worker process: its fastest sample / the fastest sample of "
                                                    "the calibration process run next to it");
    bkm_json_key(&w, "processes"), bkm_json_int(&w, r->processes);
    bkm_json_key(&w, "calibration"), bkm_tune_trial_spec_to_json(&r->calib, &w);
    bkm_json_key(&w, "workloads");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_regress_wl_t *x = &r->wl[i];
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "workload"), bkm_json_str(&w, x->name);
        if (x->program && pg)
            program_json(&w, pg, r->runtime);
        bkm_json_key(&w, "spec"), bkm_tune_trial_spec_to_json(&x->spec, &w);
        bkm_json_key(&w, "values"), doubles_json(&w, x->values, x->n);
        bkm_json_key(&w, "workload_ms"), doubles_json(&w, x->wl_ms, x->n);
        bkm_json_key(&w, "calibration_ms"), doubles_json(&w, x->cal_ms, x->n);
        bkm_json_key(&w, "failed"), bkm_json_int(&w, (int64_t)x->failed);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_obj_end(&w);
}

static double med(const double *v, size_t n)
{
    double *x;
    double m;
    if (n == 0 || (x = malloc(n * sizeof *x)) == NULL)
        return NAN;
    memcpy(x, v, n * sizeof *x);
    m = bkm_median(x, n);
    free(x);
    return m;
}

void bkm_tune_regress_results_json(const bkm_tune_regress_t *r, bkm_json_w_t *w)
{
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_regress_wl_t *x = &r->wl[i];
        bkm_json_obj_begin(w);
        bkm_json_key(w, "workload"), bkm_json_str(w, x->name);
        if (x->program) {
            bkm_json_key(w, "program");
            bkm_json_obj_begin(w);
            bkm_json_key(w, "exe_sha256"), bkm_json_str(w, r->exe_sha256);
            bkm_json_key(w, "ref_exe_sha256"), bkm_json_str(w, r->ref_exe_sha256);
            bkm_json_key(w, "same_executable"), bkm_json_bool(w, strcmp(r->exe_sha256, r->ref_exe_sha256) == 0);
            bkm_json_key(w, "runtime"), bkm_json_str(w, r->runtime);
            bkm_json_obj_end(w);
        }
        bkm_json_key(w, "params"), bkm_json_str(w, x->params);
        bkm_json_key(w, "threads"), bkm_json_int(w, x->spec.threads);
        bkm_json_key(w, "ref_threads"), bkm_json_int(w, x->ref_threads);
        bkm_json_key(w, "n"), bkm_json_int(w, (int64_t)x->n);
        bkm_json_key(w, "n_ref"), bkm_json_int(w, (int64_t)x->n_ref);
        bkm_json_key(w, "values"), doubles_json(w, x->values, x->n);
        bkm_json_key(w, "ref_values"), doubles_json(w, x->ref_values, x->n_ref);
        bkm_json_key(w, "median"), bkm_json_double(w, med(x->values, x->n));
        bkm_json_key(w, "ref_median"), bkm_json_double(w, med(x->ref_values, x->n_ref));
        bkm_json_key(w, "ratio"), bkm_json_double(w, x->ratio);
        bkm_json_key(w, "ratio_ci95");
        bkm_json_arr_begin(w), bkm_json_double(w, x->ratio_lo), bkm_json_double(w, x->ratio_hi), bkm_json_arr_end(w);
        bkm_json_key(w, "ratio_rci");
        bkm_json_arr_begin(w), bkm_json_double(w, x->rci_lo), bkm_json_double(w, x->rci_hi), bkm_json_arr_end(w);
        bkm_json_key(w, "p"), bkm_json_double(w, x->p);
        bkm_json_key(w, "nominal_level"), bkm_json_double(w, x->nominal);
        bkm_json_key(w, "decision"), bkm_json_str(w, bkm_tune_decision_name(x->decision));
        bkm_json_key(w, "looks"), bkm_json_int(w, (int64_t)x->looks);
        bkm_json_key(w, "processes_max"), bkm_json_int(w, r->processes_max);
        bkm_json_key(w, "regression"), bkm_json_bool(w, x->regression);
        bkm_json_key(w, "failed"), bkm_json_int(w, (int64_t)x->failed);
        bkm_json_key(w, "disturbed"), bkm_json_int(w, (int64_t)x->disturbed);
        bkm_json_key(w, "noise_unknown"), bkm_json_int(w, (int64_t)x->noise_unknown);
        bkm_json_key(w, "ref_disturbed"), bkm_json_int(w, (int64_t)x->ref_disturbed);
        bkm_json_key(w, "ref_noise_unknown"), bkm_json_int(w, (int64_t)x->ref_noise_unknown);
        bkm_json_key(w, "verdict"), bkm_json_str(w, x->verdict);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
}

void bkm_tune_regress_table(const bkm_tune_regress_t *r, bkm_buf_t *out)
{
    int mpi = 0;
    for (size_t i = 0; i < r->n_wl; i++)
        mpi |= r->wl[i].spec.ranks > 0;
    bkm_buf_printf(out, "%-10s %-7s %4s %4s %9s %11s %11s %8s %17s %19s  %s\n", "workload", "threads", "n", "ref",
                   "disturbed", "median", "ref median", "ratio", "repeated interval", "p / level", "verdict");
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_regress_wl_t *x = &r->wl[i];
        char thr[16], dis[32];
        snprintf(thr, sizeof thr, "%d/%d", x->spec.threads, x->ref_threads);
        snprintf(dis, sizeof dis, "%zu/%zu", x->disturbed, x->ref_disturbed);
        bkm_buf_printf(out, "%-10s %-7s %4zu %4zu %9s %11.4g %11.4g %8.3f   [%6.3f, %6.3f] %9.2g / %-7.2g  %s\n",
                       x->name, thr, x->n, x->n_ref, dis, med(x->values, x->n), med(x->ref_values, x->n_ref), x->ratio,
                       x->rci_lo, x->rci_hi, x->p, x->nominal, x->verdict);
    }
    bkm_buf_printf(out, "(%s; values: %s%s; a regression needs the one-sided Mann-Whitney p (this build slower) at most "
                        "its level (alpha %g spent over the looks, Holm over %zu workloads) AND ratio >= %.2f; ok: the "
                        "repeated interval ends below %.2f; else undecided, which passes; %d to %d processes a side "
                        "in %zu block(s); disturbed: processes of this build / of the %s marked disturbed by their "
                        "noise evidence, shown only: the rule counts them like the others)\n",
                   r->ab ? "A/B: the reference build and this one interleaved in this run"
                         : "against the baseline file",
                   r->ab ? "fastest sample of each process (ms)"
                         : "fastest sample of each process / that of its calibration process",
                   mpi ? " (an MPI job's sample: its fastest rank's median training step)" : "", r->alpha, r->n_wl,
                   1 + r->threshold, 1 + r->threshold, r->processes, r->processes_max, r->looks,
                   r->ab ? "reference build" : "calibration");
}

/* XML text: & < > " ' escaped; control characters dropped (XML 1.0 forbids them). */
static void xml_esc(bkm_buf_t *out, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '&': bkm_buf_puts(out, "&amp;"); break;
        case '<': bkm_buf_puts(out, "&lt;"); break;
        case '>': bkm_buf_puts(out, "&gt;"); break;
        case '"': bkm_buf_puts(out, "&quot;"); break;
        case '\'': bkm_buf_puts(out, "&apos;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                bkm_buf_append(out, s, 1);
        }
}

void bkm_tune_regress_junit(const bkm_tune_regress_t *r, bkm_buf_t *out)
{
    size_t errors = 0;
    for (size_t i = 0; i < r->n_wl; i++)
        errors += !r->wl[i].tested;
    bkm_buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"bkm.regress\" "
                        "tests=\"%zu\" failures=\"%d\" errors=\"%zu\">\n",
                   r->n_wl, r->regressions, errors);
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_regress_wl_t *x = &r->wl[i];
        bkm_buf_puts(out, "<testcase classname=\"bkm.regress\" name=\"");
        xml_esc(out, x->name);
        bkm_buf_puts(out, " ");
        xml_esc(out, x->params);
        bkm_buf_puts(out, "\">");
        if (x->regression || !x->tested) {
            bkm_buf_printf(out, "<%s message=\"", x->regression ? "failure" : "error");
            xml_esc(out, x->verdict);
            bkm_buf_printf(out, "\">ratio current/reference %.4f, repeated interval [%.4f, %.4f], one-sided "
                                "Mann-Whitney p %.3g, level %.3g, %zu vs %zu processes</%s>",
                           x->ratio, x->rci_lo, x->rci_hi, x->p, x->nominal, x->n, x->n_ref,
                           x->regression ? "failure" : "error");
        }
        bkm_buf_puts(out, "<system-out>");
        xml_esc(out, x->verdict);
        bkm_buf_printf(out, "; disturbed processes (noise evidence, not used by the rule): %zu of %zu, %s %zu of %zu; "
                            "without a mark: %zu, %zu",
                       x->disturbed, x->n, r->ab ? "reference build" : "calibration", x->ref_disturbed,
                       r->ab ? x->n_ref : x->n, x->noise_unknown, x->ref_noise_unknown);
        bkm_buf_puts(out, "</system-out></testcase>\n");
    }
    bkm_buf_puts(out, "</testsuite>\n</testsuites>\n");
}

void bkm_tune_regress_free(bkm_tune_regress_t *r)
{
    for (size_t i = 0; i < r->n_wl; i++) {
        free(r->wl[i].values);
        free(r->wl[i].ref_values);
        free(r->wl[i].wl_ms);
        free(r->wl[i].cal_ms);
        free(r->wl[i].n_at);
        free(r->wl[i].n_ref_at);
        r->wl[i].values = r->wl[i].ref_values = r->wl[i].wl_ms = r->wl[i].cal_ms = NULL;
        r->wl[i].n_at = r->wl[i].n_ref_at = NULL;
    }
    r->n_wl = 0;
}
