/* SPDX-License-Identifier: MIT */
/* Trial spec and trial runner: one fresh worker process per trial (posix_spawn), with a cleaned
 * environment, JSON on a stdout pipe, the stderr tail kept, a timeout, and every way a worker
 * can end mapped to a trial status. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"

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

static int kv_put(bkm_tune_kv_t *tab, int *n, const char *what, const char *key, size_t key_len,
                  const char *value, bkm_err_t *err)
{
    char k[sizeof tab[0].key];
    int i;
    if (key_len == 0 || key_len >= sizeof k)
        return bkm_err_set(err, BKM_EINVAL, "%s name '%.*s' must be 1-%zu characters", what, (int)key_len,
                           key, sizeof k - 1);
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    if (!kv_valid_key(k))
        return bkm_err_set(err, BKM_EINVAL, "%s name '%s' may only contain letters, digits, '_', '.', '-'",
                           what, k);
    if (strlen(value) >= sizeof tab[0].value)
        return bkm_err_set(err, BKM_EINVAL, "%s %s: value '%s' is longer than %zu characters", what, k, value,
                           sizeof tab[0].value - 1);
    for (i = 0; i < *n; i++)
        if (strcmp(tab[i].key, k) == 0)
            break;
    if (i == *n) {
        if (*n >= BKM_TUNE_KV_MAX)
            return bkm_err_set(err, BKM_EINVAL, "%s %s: more than %d entries", what, k, BKM_TUNE_KV_MAX);
        (*n)++;
    }
    snprintf(tab[i].key, sizeof tab[i].key, "%s", k);
    snprintf(tab[i].value, sizeof tab[i].value, "%s", value);
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

/* Test-only fault injections the worker knows (bkm_tune_worker_run). */
static int spec_inject_valid(const char *s)
{
    static const char *const ok[] = {"", "segv", "abort", "hang", "fail", "badjson", "mismatch"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(s, ok[i]) == 0)
            return 1;
    return 0;
}

int bkm_tune_trial_spec_validate(const bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    if (spec->workload[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "trial: no workload given");
    if (spec->threads < 1 || spec->threads > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "trial: threads %d out of range 1..%d", spec->threads, BKM_CPUSET_MAX);
    if (spec->warmup < 0 || spec->warmup > 100000)
        return bkm_err_set(err, BKM_EINVAL, "trial: warmup %d out of range 0..100000", spec->warmup);
    if (spec->min_samples < 1 || spec->min_samples > 100000)
        return bkm_err_set(err, BKM_EINVAL, "trial: min samples %d out of range 1..100000", spec->min_samples);
    if (spec->max_samples < spec->min_samples || spec->max_samples > 100000)
        return bkm_err_set(err, BKM_EINVAL, "trial: max samples %d must be in %d..100000", spec->max_samples,
                           spec->min_samples);
    if (!(spec->min_time_s >= 0.0 && spec->min_time_s <= 86400.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: min time %g s out of range 0..86400", spec->min_time_s);
    if (!(spec->max_time_s >= 0.0 && spec->max_time_s <= 86400.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: max time %g s out of range 0..86400", spec->max_time_s);
    if (!(spec->target_ci_rel >= 0.0 && spec->target_ci_rel <= 10.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: CI target %g out of range 0..10", spec->target_ci_rel);
    if (!(spec->timeout_s > 0.0 && spec->timeout_s <= 7 * 86400.0))
        return bkm_err_set(err, BKM_EINVAL, "trial: timeout %g s out of range (0, 604800]", spec->timeout_s);
    if (!spec_inject_valid(spec->inject))
        return bkm_err_set(err, BKM_EINVAL, "trial: unknown fault injection '%s' (test-only: segv, abort, "
                           "hang, fail, badjson, mismatch)", spec->inject);
    for (int i = 0; i < spec->n_env; i++)
        if (strcmp(spec->env[i].key, "OMP_NUM_THREADS") == 0)
            return bkm_err_set(err, BKM_EINVAL, "trial: OMP_NUM_THREADS='%s' in the environment list; "
                               "set the thread count instead", spec->env[i].value);
    return BKM_OK;
}

static void kv_to_json(bkm_json_w_t *w, const char *name, const bkm_tune_kv_t *tab, int n)
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

static int json_get_kv(const bkm_json_t *doc, const char *key, bkm_tune_kv_t *tab, int *n, bkm_err_t *err)
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
        (rc = json_copy_str(doc, "counters", spec->counters, sizeof spec->counters, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "inject", spec->inject, sizeof spec->inject, 0, err)) < 0 ||
        (rc = json_copy_str(doc, "seed", seed, sizeof seed, 0, err)) < 0 ||
        (rc = json_get_int(doc, "threads", &spec->threads, err)) < 0 ||
        (rc = json_get_int(doc, "warmup", &spec->warmup, err)) < 0 ||
        (rc = json_get_int(doc, "min_samples", &spec->min_samples, err)) < 0 ||
        (rc = json_get_int(doc, "max_samples", &spec->max_samples, err)) < 0 ||
        (rc = json_get_double(doc, "min_time_s", &spec->min_time_s, err)) < 0 ||
        (rc = json_get_double(doc, "max_time_s", &spec->max_time_s, err)) < 0 ||
        (rc = json_get_double(doc, "target_ci_rel", &spec->target_ci_rel, err)) < 0 ||
        (rc = json_get_double(doc, "timeout_s", &spec->timeout_s, err)) < 0 ||
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

const char *bkm_tune_trial_status_name(int status)
{
    switch (status) {
    case BKM_TRIAL_OK: return "ok";
    case BKM_TRIAL_CRASHED: return "crashed";
    case BKM_TRIAL_TIMEOUT: return "timeout";
    case BKM_TRIAL_FAILED: return "failed";
    case BKM_TRIAL_BINDING_MISMATCH: return "binding-mismatch";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Result                                                                                    */

void bkm_tune_trial_result_free(bkm_tune_trial_result_t *r)
{
    if (r == NULL)
        return;
    bkm_free(r->json);
    bkm_json_free(r->doc);
    bkm_free(r->samples_ms);
    bkm_free(r->counters);
    memset(r, 0, sizeof *r);
}

static void result_reset_numbers(bkm_tune_trial_result_t *r)
{
    r->median_ms = r->min_ms = r->mad_ms = r->ci95_lo_ms = r->ci95_hi_ms = NAN;
    r->flops_per_iter = r->gflops = r->check_value = NAN;
}

static int result_parse_counters(bkm_tune_trial_result_t *r, const bkm_json_t *c, bkm_err_t *err)
{
    const bkm_json_t *vals = bkm_json_get(c, "values"), *un = bkm_json_get(c, "unavailable");
    size_t n = (vals ? vals->n_children : 0) + (un ? un->n_children : 0);
    if (n == 0)
        return BKM_OK;
    r->counters = bkm_calloc(n, sizeof *r->counters);
    if (r->counters == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu counters", n);
    for (const bkm_json_t *m = vals ? vals->child : NULL; m; m = m->next) {
        bkm_tune_counter_t *e = &r->counters[r->n_counters++];
        snprintf(e->name, sizeof e->name, "%s", m->key);
        e->available = 1;
        if (m->type == BKM_JSON_NUM && !(fabs(m->num) < 0x1p63))   /* NaN, Inf, beyond long long */
            return bkm_err_set(err, BKM_EINVAL, "non-finite or out-of-range value %g of counter %s", m->num, m->key);
        e->value = m->type == BKM_JSON_NUM ? (long long)m->num : 0;
    }
    for (const bkm_json_t *m = un ? un->child : NULL; m; m = m->next) {
        bkm_tune_counter_t *e = &r->counters[r->n_counters++];
        snprintf(e->name, sizeof e->name, "%s", m->key);
        snprintf(e->reason, sizeof e->reason, "%s", m->type == BKM_JSON_STR ? m->str : "unavailable");
    }
    return BKM_OK;
}

int bkm_tune_trial_result_parse(bkm_tune_trial_result_t *r, const char *json, bkm_err_t *err)
{
    const bkm_json_t *v, *check;
    int rc;
    bkm_json_free(r->doc);
    r->doc = NULL;
    bkm_free(r->samples_ms);
    r->samples_ms = NULL;
    r->n_samples = 0;
    bkm_free(r->counters);
    r->counters = NULL;
    r->n_counters = 0;
    result_reset_numbers(r);
    rc = bkm_json_parse(json, &r->doc, err);
    if (rc < 0)
        return bkm_err_prefix(err, "worker output is not JSON");
    if (r->doc->type != BKM_JSON_OBJ)
        return bkm_err_set(err, BKM_EINVAL, "worker output is not a JSON object");
    v = bkm_json_get(r->doc, "samples_ms");
    if (v != NULL) {
        if (v->type != BKM_JSON_ARR)
            return bkm_err_set(err, BKM_EINVAL, "worker output: samples_ms is not an array");
        if (v->n_children > 0) {
            r->samples_ms = bkm_calloc(v->n_children, sizeof *r->samples_ms);
            if (r->samples_ms == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu samples", v->n_children);
        }
        for (const bkm_json_t *e = v->child; e; e = e->next) {
            /* null is how bkm's JSON writer spells a NaN or an infinity */
            if (e->type == BKM_JSON_NULL || (e->type == BKM_JSON_NUM && !isfinite(e->num))) {
                rc = bkm_err_set(err, BKM_EINVAL, "non-finite sample %d in samples_ms (%s)", r->n_samples,
                                 e->type == BKM_JSON_NULL ? "null" : isnan(e->num) ? "nan" : "inf");
                r->n_samples = 0;
                return rc;
            }
            if (e->type != BKM_JSON_NUM)
                return bkm_err_set(err, BKM_EINVAL, "worker output: sample %d is not a number", r->n_samples);
            r->samples_ms[r->n_samples++] = e->num;
        }
    }
    {
        static const char *const stats[] = {"median_ms", "min_ms", "mad_ms", "flops_per_iter", "gflops"};
        for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
            if (!isfinite(bkm_json_get_num(r->doc, stats[i], 0)))
                return bkm_err_set(err, BKM_EINVAL, "non-finite %s (%g) in the worker's result", stats[i],
                                   bkm_json_get_num(r->doc, stats[i], 0));
    }
    r->median_ms = bkm_json_get_num(r->doc, "median_ms", NAN);
    r->min_ms = bkm_json_get_num(r->doc, "min_ms", NAN);
    r->mad_ms = bkm_json_get_num(r->doc, "mad_ms", NAN);
    v = bkm_json_get(r->doc, "ci95_ms");
    if (v != NULL && v->type == BKM_JSON_ARR && v->n_children == 2) {
        r->ci95_lo_ms = bkm_json_at(v, 0)->type == BKM_JSON_NUM ? bkm_json_at(v, 0)->num : NAN;
        r->ci95_hi_ms = bkm_json_at(v, 1)->type == BKM_JSON_NUM ? bkm_json_at(v, 1)->num : NAN;
    }
    r->flops_per_iter = bkm_json_get_num(r->doc, "flops_per_iter", NAN);
    r->gflops = bkm_json_get_num(r->doc, "gflops", NAN);
    check = bkm_json_get(r->doc, "check");
    r->check_kind[0] = '\0';
    if (check != NULL && check->type == BKM_JSON_OBJ && check->child != NULL && check->child->type == BKM_JSON_NUM) {
        snprintf(r->check_kind, sizeof r->check_kind, "%s", check->child->key);
        r->check_value = check->child->num;
    }
    snprintf(r->impl, sizeof r->impl, "%s", bkm_json_get_str(r->doc, "impl") ? bkm_json_get_str(r->doc, "impl") : "");
    v = bkm_json_get(r->doc, "counters");
    if (v != NULL && v->type == BKM_JSON_OBJ)
        return result_parse_counters(r, v, err);
    return BKM_OK;
}

void bkm_tune_trial_result_to_json(const bkm_tune_trial_result_t *r, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "status");
    bkm_json_str(w, bkm_tune_trial_status_name(r->status));
    bkm_json_key(w, "message");
    bkm_json_str(w, r->message);
    bkm_json_key(w, "exit_code");
    bkm_json_int(w, r->exit_code);
    bkm_json_key(w, "signal");
    bkm_json_str(w, r->signal_name[0] ? r->signal_name : NULL);
    bkm_json_key(w, "wall_s");
    bkm_json_double(w, r->wall_s);
    bkm_json_key(w, "stderr_tail");
    bkm_json_str(w, r->stderr_tail);
    for (const bkm_json_t *m = r->doc && r->doc->type == BKM_JSON_OBJ ? r->doc->child : NULL; m; m = m->next) {
        if (strcmp(m->key, "status") == 0 || strcmp(m->key, "message") == 0)
            continue;
        bkm_json_key(w, m->key);
        bkm_json_write_tree(w, m);
    }
    bkm_json_obj_end(w);
}

/* ---------------------------------------------------------------------------------------- */
/* Runner                                                                                    */

/* The child's environment: inherited minus OpenMP/affinity variables, plus the trial's. */

/* Position of @p key in the order the planner assumes libomp reads the affinity variables
 * (bkm_aff_env_export): 1..8, or 0 for any other variable. */
static int env_rank(const char *key)
{
    static const char set[] = "";
    const bkm_aff_env_t all = {.kmp_affinity = set, .kmp_hw_subset = set, .kmp_place_threads = set,
                               .kmp_blocktime = set, .omp_places = set, .omp_proc_bind = set,
                               .gomp_cpu_affinity = set, .omp_wait_policy = set};
    const char *names[8], *values[8];
    int n = bkm_aff_env_export(&all, names, values);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], key) == 0)
            return i + 1;
    return 0;
}

static int runner_build_env(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, char ***out,
                            bkm_err_t *err)
{
    size_t n_parent = 0, k = 0, len;
    char **env = NULL;
    int rc = BKM_OK;
    for (char *const *e = rn->environ; e && *e; e++)
        n_parent++;
    env = bkm_calloc(n_parent + (size_t)spec->n_env + 2, sizeof *env);
    if (env == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker environment");
        goto out;
    }
    for (size_t i = 0; i < n_parent; i++) {
        const char *s = rn->environ[i], *eq = strchr(s, '=');
        char name[256];
        len = eq ? (size_t)(eq - s) : strlen(s);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, s, len);
        name[len] = '\0';
        if (bkm_tune_env_is_openmp(name))
            continue;
        if ((env[k++] = bkm_strdup(s)) == NULL)
            goto oom;
    }
    /* libomp 14 applies OMP_PROC_BIND, OMP_PLACES and a type-less KMP_AFFINITY in environment
     * order, the last one winning; the planner assumes bkm_aff_env_export's order, so the trial's
     * variables are written in that order (others first, as given). */
    for (int rank = 0; rank <= 8; rank++) {
        for (int i = 0; i < spec->n_env; i++) {
            bkm_buf_t b;
            if (env_rank(spec->env[i].key) != rank)
                continue;
            bkm_buf_init(&b);
            bkm_buf_printf(&b, "%s=%s", spec->env[i].key, spec->env[i].value);
            if ((env[k++] = bkm_buf_take(&b)) == NULL)
                goto oom;
        }
    }
    {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_buf_printf(&b, "OMP_NUM_THREADS=%d", spec->threads);
        if ((env[k++] = bkm_buf_take(&b)) == NULL)
            goto oom;
    }
    *out = env;
    env = NULL;
    goto out;
oom:
    rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker environment");
out:
    for (size_t i = 0; env && env[i]; i++)
        bkm_free(env[i]);
    bkm_free(env);
    return rc;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        bkm_free(v[i]);
    bkm_free(v);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGQUIT: return "SIGQUIT";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return NULL;
    }
}

/* Keep only the last BKM_TUNE_STDERR_TAIL bytes of stderr. */
static void tail_append(char *tail, size_t *len, const char *data, size_t n)
{
    const size_t cap = BKM_TUNE_STDERR_TAIL;
    if (n >= cap) {
        memcpy(tail, data + n - cap, cap);
        *len = cap;
    } else {
        if (*len + n > cap) {
            size_t drop = *len + n - cap;
            memmove(tail, tail + drop, *len - drop);
            *len -= drop;
        }
        memcpy(tail + *len, data, n);
        *len += n;
    }
    tail[*len] = '\0';
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Drain both pipes (fds[0] stdout, fds[1] stderr; each set to -1 once closed at EOF) until EOF
 * or the deadline; the worker's stdout may be large. */
static int runner_pump(int *fds, uint64_t deadline_ns, bkm_buf_t *out, bkm_tune_trial_result_t *r,
                       int *timed_out, bkm_err_t *err)
{
    char chunk[8192];
    size_t tail_len = 0;
    *timed_out = 0;
    while (fds[0] >= 0 || fds[1] >= 0) {
        struct pollfd p[2];
        int np = 0, idx[2];
        uint64_t now = bkm_now_ns();
        int ms, prc;
        if (now >= deadline_ns) {
            *timed_out = 1;
            return BKM_OK;
        }
        ms = (int)((deadline_ns - now) / 1000000ull) + 1;
        for (int i = 0; i < 2; i++) {
            if (fds[i] >= 0) {
                p[np].fd = fds[i];
                p[np].events = POLLIN;
                p[np].revents = 0;
                idx[np++] = i;
            }
        }
        prc = poll(p, (nfds_t)np, ms);
        if (prc < 0) {
            if (errno == EINTR)
                continue;
            return bkm_err_set(err, BKM_EIO, "poll on the worker's pipes: %s", strerror(errno));
        }
        for (int j = 0; j < np; j++) {
            ssize_t got;
            int i = idx[j];
            if (p[j].revents == 0)
                continue;
            got = read(fds[i], chunk, sizeof chunk);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close_fd(&fds[i]);
                continue;
            }
            if (i == 0) {
                if (out->len + (size_t)got > (size_t)256 << 20)
                    return bkm_err_set(err, BKM_EIO, "worker wrote more than 256 MiB to stdout");
                bkm_buf_append(out, chunk, (size_t)got);
                if (out->oom)
                    return bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker's output");
            } else {
                tail_append(r->stderr_tail, &tail_len, chunk, (size_t)got);
            }
        }
    }
    return BKM_OK;
}

/* waitpid that retries on EINTR; returns the pid or -1. */
static pid_t wait_child(pid_t pid, int *status)
{
    pid_t w;
    do {
        w = waitpid(pid, status, 0);
    } while (w < 0 && errno == EINTR);
    return w;
}

/* Last non-empty line of @p text into @p buf (the worker's final complaint). */
static const char *last_line(const char *text, char *buf, size_t n)
{
    size_t len = strlen(text), end, start;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    end = len;
    start = end;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    if (end - start >= n)
        start = end - (n - 1);
    memcpy(buf, text + start, end - start);
    buf[end - start] = '\0';
    return buf;
}

static void runner_classify(bkm_tune_trial_result_t *r, int wstatus, int timed_out, const char *json,
                            bkm_err_t *perr)
{
    bkm_err_t jerr = {0};
    int have_output = json != NULL && json[0] != '\0';
    int parsed = BKM_EINVAL;
    if (have_output)
        parsed = bkm_tune_trial_result_parse(r, json, &jerr);
    if (timed_out) {
        r->status = BKM_TRIAL_TIMEOUT;
        r->exit_code = -1;
        r->signal = SIGKILL;
        snprintf(r->signal_name, sizeof r->signal_name, "SIGKILL");
        return;
    }
    if (WIFSIGNALED(wstatus)) {
        const char *nm = signal_name(WTERMSIG(wstatus));
        r->status = BKM_TRIAL_CRASHED;
        r->exit_code = -1;
        r->signal = WTERMSIG(wstatus);
        if (nm)
            snprintf(r->signal_name, sizeof r->signal_name, "%s", nm);
        else
            snprintf(r->signal_name, sizeof r->signal_name, "SIG%d", r->signal);
        snprintf(r->message, sizeof r->message, "worker killed by %s%s", r->signal_name,
                 WCOREDUMP(wstatus) ? " (core dumped)" : "");
        return;
    }
    r->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    if (r->exit_code == BKM_WORKER_EXIT_BINDING) {
        r->status = BKM_TRIAL_BINDING_MISMATCH;
        snprintf(r->message, sizeof r->message, "threads were not bound as planned%s",
                 parsed == BKM_OK ? "" : " (no JSON with the difference)");
        if (parsed == BKM_OK && bkm_json_get_str(r->doc, "error"))
            snprintf(r->message, sizeof r->message, "%s", bkm_json_get_str(r->doc, "error"));
        return;
    }
    if (r->exit_code != 0) {
        char last[256];
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker exited with code %d%s%s", r->exit_code,
                 last_line(r->stderr_tail, last, sizeof last)[0] ? ": " : "", last);
        return;
    }
    if (parsed != BKM_OK) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker result unusable: %s",
                 have_output ? jerr.msg : "no output on stdout");
        return;
    }
    if (r->n_samples == 0) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker result has no samples_ms");
        return;
    }
    r->status = BKM_TRIAL_OK;
    (void)perr;
}

int bkm_tune_trial_run(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec,
                       bkm_tune_trial_result_t *r, bkm_err_t *err)
{
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int rc, src, timed_out = 0, wstatus = 0;
    int fa_init = 0, attr_init = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t dflt;
    char **envp = NULL;
    char *argv[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    char parent_pid[24];
    bkm_buf_t spec_json, out;
    bkm_json_w_t w;
    pid_t pid = -1;
    uint64_t t0;

    bkm_buf_init(&spec_json);
    bkm_buf_init(&out);
    bkm_tune_trial_result_free(r);
    result_reset_numbers(r);
    rc = bkm_tune_trial_spec_validate(spec, err);
    if (rc < 0)
        goto out;
    if (rn == NULL || rn->worker_path == NULL || rn->worker_path[0] == '\0') {
        rc = bkm_err_set(err, BKM_EINVAL, "trial runner: no worker executable given");
        goto out;
    }
    rc = runner_build_env(rn, spec, &envp, err);
    if (rc < 0)
        goto out;
    bkm_json_w_init(&w, &spec_json, 0);
    bkm_tune_trial_spec_to_json(spec, &w);
    if (spec_json.oom) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the trial spec");
        goto out;
    }
    argv[0] = (char *)rn->worker_path;
    argv[1] = (char *)(rn->worker_cmd ? rn->worker_cmd : "worker");
    argv[2] = (char *)"--spec";
    argv[3] = spec_json.data;
    /* The worker dies with the tuner (PR_SET_PDEATHSIG) and checks this pid to close the race
     * of a tuner killed before the worker armed it. */
    snprintf(parent_pid, sizeof parent_pid, "%ld", (long)getpid());
    argv[4] = (char *)"--parent";
    argv[5] = parent_pid;

    if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0) {
        rc = bkm_err_set(err, BKM_EIO, "pipe for the worker: %s", strerror(errno));
        goto out;
    }
    if ((src = posix_spawn_file_actions_init(&fa)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn_file_actions_init: %s", strerror(src));
        goto out;
    }
    fa_init = 1;
    /* dup2 clears O_CLOEXEC on the new descriptors; the pipe ends themselves close on exec. */
    if ((src = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
        (src = posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1)) != 0 ||
        (src = posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn file actions: %s", strerror(src));
        goto out;
    }
    if ((src = posix_spawnattr_init(&attr)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawnattr_init: %s", strerror(src));
        goto out;
    }
    attr_init = 1;
    /* Own process group (the whole group is killed on timeout); default signal dispositions and
     * an empty mask, whatever the parent has set. */
    sigfillset(&dflt);
    sigdelset(&dflt, SIGKILL);
    sigdelset(&dflt, SIGSTOP);
    {
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
    }
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    t0 = bkm_now_ns();
    src = posix_spawn(&pid, rn->worker_path, &fa, &attr, argv, envp);
    if (src != 0) {
        pid = -1;
        rc = bkm_err_set(err, BKM_EDEP, "cannot start the worker '%s': %s", rn->worker_path, strerror(src));
        goto out;
    }
    close_fd(&out_pipe[1]);
    close_fd(&err_pipe[1]);

    {
        int fds[2] = {out_pipe[0], err_pipe[0]};
        rc = runner_pump(fds, t0 + (uint64_t)(spec->timeout_s * 1e9), &out, r, &timed_out, err);
        out_pipe[0] = fds[0];   /* -1 where closed at EOF; the rest is closed below */
        err_pipe[0] = fds[1];
    }
    if (rc < 0 || timed_out)
        kill(-pid, SIGKILL);
    if (wait_child(pid, &wstatus) < 0) {
        pid = -1;
        if (rc == BKM_OK)
            rc = bkm_err_set(err, BKM_EIO, "waitpid on the worker: %s", strerror(errno));
        goto out;
    }
    if (!timed_out)
        kill(-pid, SIGKILL);   /* grandchildren left behind by the worker, if any */
    pid = -1;
    r->wall_s = (double)(bkm_now_ns() - t0) * 1e-9;
    if (rc < 0)
        goto out;
    if (out.len > 0) {
        r->json = bkm_buf_take(&out);
        if (r->json == NULL) {
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker's output");
            goto out;
        }
    }
    runner_classify(r, wstatus, timed_out, r->json, err);
    if (timed_out)
        snprintf(r->message, sizeof r->message, "worker exceeded the trial timeout of %g s; killed", spec->timeout_s);
out:
    if (pid > 0) {
        kill(-pid, SIGKILL);
        wait_child(pid, &wstatus);
    }
    close_fd(&out_pipe[0]);
    close_fd(&out_pipe[1]);
    close_fd(&err_pipe[0]);
    close_fd(&err_pipe[1]);
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    strv_free(envp);
    bkm_buf_free(&spec_json);
    bkm_buf_free(&out);
    return rc;
}
