/* SPDX-License-Identifier: MIT */
/* The trial spec: defaults, environment and parameter tables, limits, its JSON both ways, and the
 * rules for what of the parent's environment reaches a trial process. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/trial.h"

/* ---------------------------------------------------------------------------------------- */
/* Spec                                                                                      */

void bkm_tune_trial_spec_defaults(bkm_tune_trial_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->threads = 1;
    spec->warmup = 20;
    spec->min_samples = 5;
    spec->max_samples = 50;
    spec->min_time_s = 0.5;
    spec->max_time_s = 30.0;
    spec->target_ci_rel = 0.05;
    spec->seed = 1;
    spec->timeout_s = 600.0;
    spec->noise_share = BKM_TUNE_NOISE_SHARE_DEFAULT;
}

static int kv_valid_key(const char *key)
{
    if (key[0] == '\0')
        return 0;
    for (const char *p = key; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-'))
            return 0;
    return 1;
}

static int kv_put(bkm_kv_t *tab, int *n, const char *what, const char *key, size_t key_len,
                  const char *value, bkm_err_t *err)
{
    bkm_kv_t kv;
    int i, rc;
    if ((rc = bkm_kv_set(&kv, key, key_len, value, what, err)) < 0)
        return rc;
    if (!kv_valid_key(kv.key))
        return bkm_err_set(err, BKM_EINVAL, "%s name '%s' may only contain letters, digits, '_', '.', '-'",
                           what, kv.key);
    if ((i = bkm_kv_find(tab, *n, kv.key, key_len)) < 0) {
        if (*n >= BKM_TUNE_KV_MAX)
            return bkm_err_set(err, BKM_EINVAL, "%s %s: more than %d entries", what, kv.key, BKM_TUNE_KV_MAX);
        i = (*n)++;
    }
    tab[i] = kv;
    return BKM_OK;
}

int bkm_tune_trial_spec_setenv(bkm_tune_trial_spec_t *spec, const char *key, const char *value,
                               bkm_err_t *err)
{
    return kv_put(spec->env, &spec->n_env, "environment variable", key, strlen(key), value, err);
}

int bkm_tune_trial_spec_param(bkm_tune_trial_spec_t *spec, const char *key_eq_value, bkm_err_t *err)
{
    const char *eq = strchr(key_eq_value, '=');
    if (eq == NULL)
        return bkm_err_set(err, BKM_EINVAL, "parameter '%s' is not key=value", key_eq_value);
    return kv_put(spec->params, &spec->n_params, "parameter", key_eq_value, (size_t)(eq - key_eq_value),
                  eq + 1, err);
}

/* The fault injections the test build of the worker knows (bkm_tune_worker_run). */
static int spec_inject_valid(const char *s)
{
    static const char *const ok[] = {"", "segv", "abort", "hang", "fail", "badjson", "mismatch", "killrank1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(s, ok[i]) == 0)
            return 1;
    return 0;
}

int bkm_tune_workload_is_mpi(const char *workload)
{
    return workload != NULL && strcmp(workload, BKM_TUNE_TRAIN_WORKLOAD) == 0;
}

int bkm_tune_trial_spec_validate(const bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    if (spec->workload[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "trial: no workload given");
    if (spec->threads < 1 || spec->threads > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: threads %d out of range 1..%d", spec->threads, BKM_CPUSET_MAX);
    if (spec->compare[0] && (spec->backend[0] == '\0' || strcmp(spec->compare, spec->backend) == 0))
        return bkm_err_set(err, BKM_EINVAL, "trial: compare backend '%s' needs a different backend (backend '%s')",
                           spec->compare, spec->backend);
    if (spec->warmup < 0 || spec->warmup > BKM_TUNE_SAMPLES_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: warmup %d out of range 0..%d", spec->warmup, BKM_TUNE_SAMPLES_MAX);
    if (spec->min_samples < 1 || spec->min_samples > BKM_TUNE_SAMPLES_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: min samples %d out of range 1..%d", spec->min_samples,
                           BKM_TUNE_SAMPLES_MAX);
    if (spec->max_samples < spec->min_samples || spec->max_samples > BKM_TUNE_SAMPLES_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: max samples %d must be in %d..%d", spec->max_samples,
                           spec->min_samples, BKM_TUNE_SAMPLES_MAX);
    if (!(spec->min_time_s >= 0.0 && spec->min_time_s <= BKM_TUNE_TIME_MAX_S))
        return bkm_err_set(err, BKM_EINVAL, "trial: min time %g s out of range 0..%g", spec->min_time_s,
                           BKM_TUNE_TIME_MAX_S);
    if (!(spec->max_time_s >= 0.0 && spec->max_time_s <= BKM_TUNE_TIME_MAX_S))
        return bkm_err_set(err, BKM_EINVAL, "trial: max time %g s out of range 0..%g", spec->max_time_s,
                           BKM_TUNE_TIME_MAX_S);
    if (!(spec->target_ci_rel >= 0.0 && spec->target_ci_rel <= 10.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: CI target %g out of range 0..10", spec->target_ci_rel);
    if (!(spec->timeout_s > 0.0 && spec->timeout_s <= BKM_TUNE_TIMEOUT_MAX_S))
        return bkm_err_set(err, BKM_EINVAL, "trial: timeout %g s out of range (0, %g]", spec->timeout_s,
                           BKM_TUNE_TIMEOUT_MAX_S);
    if (!(spec->noise_share > 0.0 && spec->noise_share <= 1.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: disturbed share %g out of range (0, 1]", spec->noise_share);
    if (!spec_inject_valid(spec->inject))
        return bkm_err_set(err, BKM_EINVAL, "trial: unknown fault injection '%s' (test-only: segv, abort, "
                           "hang, fail, badjson, mismatch, killrank1)", spec->inject);
    if (spec->ranks < 0 || spec->ranks > BKM_TUNE_RANKS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: ranks %d out of range 0..%d", spec->ranks, BKM_TUNE_RANKS_MAX);
    if (spec->ranks == 0 && bkm_tune_workload_is_mpi(spec->workload))
        return bkm_err_set(err, BKM_EINVAL, "trial: workload %s runs as an MPI job: ranks must be 1 or more",
                           spec->workload);
    if (spec->ranks > 0 && !bkm_tune_workload_is_mpi(spec->workload))
        return bkm_err_set(err, BKM_EINVAL, "trial: ranks %d given, but workload %s is not an MPI workload (only %s)",
                           spec->ranks, spec->workload, BKM_TUNE_TRAIN_WORKLOAD);
    for (int i = 0; i < spec->n_env; i++)
        if (strcmp(spec->env[i].key, "OMP_NUM_THREADS") == 0)
            return bkm_err_set(err, BKM_EINVAL, "trial: OMP_NUM_THREADS='%s' in the environment list; "
                               "set the thread count instead", spec->env[i].value);
    return BKM_OK;
}

static void kv_to_json(bkm_json_w_t *w, const char *name, const bkm_kv_t *tab, int n)
{
    bkm_json_key(w, name);
    bkm_json_obj_begin(w);
    for (int i = 0; i < n; i++) {
        bkm_json_key(w, tab[i].key);
        bkm_json_str(w, tab[i].value);
    }
    bkm_json_obj_end(w);
}

void bkm_tune_trial_spec_to_json(const bkm_tune_trial_spec_t *spec, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "workload");
    bkm_json_str(w, spec->workload);
    bkm_json_key(w, "backend");
    bkm_json_str(w, spec->backend);
    if (spec->compare[0]) { /* only when set: other specs serialise as before */
        bkm_json_key(w, "compare");
        bkm_json_str(w, spec->compare);
    }
    bkm_json_key(w, "threads");
    bkm_json_int(w, spec->threads);
    kv_to_json(w, "env", spec->env, spec->n_env);
    kv_to_json(w, "params", spec->params, spec->n_params);
    bkm_json_key(w, "warmup");
    bkm_json_int(w, spec->warmup);
    bkm_json_key(w, "min_samples");
    bkm_json_int(w, spec->min_samples);
    bkm_json_key(w, "max_samples");
    bkm_json_int(w, spec->max_samples);
    bkm_json_key(w, "min_time_s");
    bkm_json_double(w, spec->min_time_s);
    bkm_json_key(w, "max_time_s");
    bkm_json_double(w, spec->max_time_s);
    bkm_json_key(w, "target_ci_rel");
    bkm_json_double(w, spec->target_ci_rel);
    bkm_json_key(w, "seed");   /* as a string: a 64-bit seed does not fit a JSON double */
    {
        char s[32];
        snprintf(s, sizeof s, "%llu", (unsigned long long)spec->seed);
        bkm_json_str(w, s);
    }
    bkm_json_key(w, "counters");
    bkm_json_str(w, spec->counters);
    bkm_json_key(w, "timeout_s");
    bkm_json_double(w, spec->timeout_s);
    bkm_json_key(w, "noise_share");
    bkm_json_double(w, spec->noise_share);
    if (spec->ranks > 0) {
        bkm_json_key(w, "ranks");
        bkm_json_int(w, spec->ranks);
    }
    if (spec->inject[0]) {
        bkm_json_key(w, "inject");
        bkm_json_str(w, spec->inject);
    }
    bkm_json_obj_end(w);
}

static int json_copy_str(const bkm_json_t *doc, const char *key, char *dst, size_t n, int required,
                         bkm_err_t *err)
{
    const bkm_json_t *v = bkm_json_get(doc, key);
    if (v == NULL && !required)
        return BKM_OK;
    if (v == NULL || v->type != BKM_JSON_STR)
        return bkm_err_set(err, BKM_EINVAL, "trial spec: '%s' must be a string", key);
    if (strlen(v->str) >= n)
        return bkm_err_set(err, BKM_EINVAL, "trial spec: '%s' value '%s' is too long", key, v->str);
    snprintf(dst, n, "%s", v->str);
    return BKM_OK;
}

static int json_get_int(const bkm_json_t *doc, const char *key, int *dst, bkm_err_t *err)
{
    const bkm_json_t *v = bkm_json_get(doc, key);
    if (v == NULL)
        return BKM_OK;
    if (v->type != BKM_JSON_NUM || v->num != floor(v->num) || v->num < -1e9 || v->num > 1e9)
        return bkm_err_set(err, BKM_EINVAL, "trial spec: '%s' must be an integer", key);
    *dst = (int)v->num;
    return BKM_OK;
}

static int json_get_double(const bkm_json_t *doc, const char *key, double *dst, bkm_err_t *err)
{
    const bkm_json_t *v = bkm_json_get(doc, key);
    if (v == NULL)
        return BKM_OK;
    if (v->type != BKM_JSON_NUM)
        return bkm_err_set(err, BKM_EINVAL, "trial spec: '%s' must be a number", key);
    *dst = v->num;
    return BKM_OK;
}

static int json_get_kv(const bkm_json_t *doc, const char *key, bkm_kv_t *tab, int *n, bkm_err_t *err)
{
    const bkm_json_t *o = bkm_json_get(doc, key);
    int rc;
    if (o == NULL)
        return BKM_OK;
    if (o->type != BKM_JSON_OBJ)
        return bkm_err_set(err, BKM_EINVAL, "trial spec: '%s' must be an object", key);
    for (const bkm_json_t *m = o->child; m; m = m->next) {
        if (m->type != BKM_JSON_STR)
            return bkm_err_set(err, BKM_EINVAL, "trial spec: %s.%s must be a string", key, m->key);
        rc = kv_put(tab, n, key, m->key, strlen(m->key), m->str, err);
        if (rc < 0)
            return rc;
    }
    return BKM_OK;
}

int bkm_tune_trial_spec_from_json(const char *json, bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    bkm_json_t *doc = NULL;
    char seed[32] = "";
    long long sv;
    int rc;
    bkm_tune_trial_spec_defaults(spec);
    rc = bkm_json_parse(json, &doc, err);
    if (rc < 0)
        goto out;
    if (doc->type != BKM_JSON_OBJ) {
        rc = bkm_err_set(err, BKM_EINVAL, "trial spec: not a JSON object");
        goto out;
    }
    if ((rc = json_copy_str(doc, "workload", spec->workload, sizeof spec->workload, 1, err)) < 0 ||
        (rc = json_copy_str(doc, "backend", spec->backend, sizeof spec->backend, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "compare", spec->compare, sizeof spec->compare, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "counters", spec->counters, sizeof spec->counters, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "inject", spec->inject, sizeof spec->inject, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "seed", seed, sizeof seed, 0, err)) < 0 ||
        (rc = json_get_int(doc, "threads", &spec->threads, err)) < 0 ||
        (rc = json_get_int(doc, "ranks", &spec->ranks, err)) < 0 ||
        (rc = json_get_int(doc, "warmup", &spec->warmup, err)) < 0 ||
        (rc = json_get_int(doc, "min_samples", &spec->min_samples, err)) < 0 ||
        (rc = json_get_int(doc, "max_samples", &spec->max_samples, err)) < 0 ||
        (rc = json_get_double(doc, "min_time_s", &spec->min_time_s, err)) < 0 ||
        (rc = json_get_double(doc, "max_time_s", &spec->max_time_s, err)) < 0 ||
        (rc = json_get_double(doc, "target_ci_rel", &spec->target_ci_rel, err)) < 0 ||
        (rc = json_get_double(doc, "timeout_s", &spec->timeout_s, err)) < 0 ||
        (rc = json_get_double(doc, "noise_share", &spec->noise_share, err)) < 0 ||
        (rc = json_get_kv(doc, "env", spec->env, &spec->n_env, err)) < 0 ||
        (rc = json_get_kv(doc, "params", spec->params, &spec->n_params, err)) < 0)
        goto out;
    if (seed[0]) {
        if (bkm_parse_int(seed, 0, INT64_MAX, &sv) < 0) {
            rc = bkm_err_set(err, BKM_EINVAL, "trial spec: seed '%s' is not a non-negative integer", seed);
            goto out;
        }
        spec->seed = (uint64_t)sv;
    }
    rc = bkm_tune_trial_spec_validate(spec, err);
out:
    bkm_json_free(doc);
    return rc;
}

int bkm_tune_env_is_openmp(const char *name)
{
    return strncmp(name, "OMP_", 4) == 0 || strncmp(name, "KMP_", 4) == 0 || strncmp(name, "GOMP_", 5) == 0;
}

int bkm_tune_env_is_hwloc(const char *name)
{
    return strncmp(name, "HWLOC_", 6) == 0;
}

/* HWLOC_THISSYSTEM=1: the user asserts that what hwloc is told (HWLOC_XMLFILE, HWLOC_SYNTHETIC,
 * ...) describes the machine the workers run on (hwloc's own meaning of the variable: binding is
 * then allowed on it). bkm then plans with it, and passes the HWLOC_* variables to the workers so
 * that they plan on the same view. */
int bkm_tune_env_hwloc_asserted(char *const *env)
{
    for (char *const *e = env; e && *e; e++)
        if (strcmp(*e, "HWLOC_THISSYSTEM=1") == 0)
            return 1;
    return 0;
}

int bkm_tune_env_check(char *const *env, bkm_err_t *err)
{
    if (bkm_tune_env_hwloc_asserted(env))
        return BKM_OK;
    /* hwloc 2 reads these in hwloc_topology_load: each replaces or widens what it discovers */
    static const char *const refused[] = {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT", "HWLOC_CPUID_PATH",
                                          "HWLOC_COMPONENTS", "HWLOC_ALLOW", "HWLOC_THISSYSTEM",
                                          "HWLOC_THISSYSTEM_ALLOWED_RESOURCES"};
    for (char *const *e = env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (eq == NULL || eq[1] == '\0')
            continue;
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (strlen(refused[i]) == len && strncmp(*e, refused[i], len) == 0)
                return bkm_err_set(err, BKM_EDEP,
                                   "%s='%.200s' is set: hwloc would describe another machine than this host, and "
                                   "bkm would plan for it while its workers run here; unset it (to plan for "
                                   "another node use --node or a profile; tune topo --xml/--synthetic shows one), "
                                   "or set HWLOC_THISSYSTEM=1 if it does describe this machine",
                                   refused[i], eq + 1);
    }
    return BKM_OK;
}

