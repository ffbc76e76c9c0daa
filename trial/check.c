/* SPDX-License-Identifier: MIT */
/* A trial checked against what it names, on both sides of the process boundary: its workload and
 * parameters against what the workload publishes, its threads against the node, its affinity
 * variables against the planner. */
#include <stdio.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/trial.h"
#include "bkm/workloads.h"

/* The workload configuration of a trial: its parameters, plus backend=... when the trial
 * names a backend (the workloads take the backend as a parameter); @p backend: the trial's or
 * its compare backend. */
int bkm_tune_trial_wl_config(const bkm_tune_trial_spec_t *spec, const char *backend, bkm_wl_config_t *cfg,
                             bkm_err_t *err)
{
    char kv[BKM_KV_KEY_MAX + BKM_KV_VALUE_MAX];
    int rc;
    bkm_wl_config_init(cfg);
    for (int i = 0; i < spec->n_params; i++) {
        snprintf(kv, sizeof kv, "%s=%s", spec->params[i].key, spec->params[i].value);
        rc = bkm_wl_config_add(cfg, kv, err);
        if (rc < 0)
            return rc;
    }
    if (backend[0] && bkm_wl_config_get(cfg, "backend") == NULL) {
        snprintf(kv, sizeof kv, "backend=%s", backend);
        rc = bkm_wl_config_add(cfg, kv, err);
        if (rc < 0)
            return rc;
    }
    return BKM_OK;
}

/* The trial's affinity variables as the planner takes them (pointers into @p spec). */
void bkm_tune_trial_aff_env(const bkm_tune_trial_spec_t *spec, bkm_aff_env_t *e)
{
    memset(e, 0, sizeof *e);
    for (int i = 0; i < spec->n_env; i++) {
        const char *k = spec->env[i].key, *v = spec->env[i].value;
        if (strcmp(k, "KMP_AFFINITY") == 0)
            e->kmp_affinity = v;
        else if (strcmp(k, "KMP_HW_SUBSET") == 0)
            e->kmp_hw_subset = v;
        else if (strcmp(k, "KMP_PLACE_THREADS") == 0)
            e->kmp_place_threads = v;
        else if (strcmp(k, "KMP_BLOCKTIME") == 0)
            e->kmp_blocktime = v;
        else if (strcmp(k, "OMP_PLACES") == 0)
            e->omp_places = v;
        else if (strcmp(k, "OMP_PROC_BIND") == 0)
            e->omp_proc_bind = v;
        else if (strcmp(k, "GOMP_CPU_AFFINITY") == 0)
            e->gomp_cpu_affinity = v;
        else if (strcmp(k, "OMP_WAIT_POLICY") == 0)
            e->omp_wait_policy = v;
    }
}

int bkm_tune_trial_check(const bkm_tune_trial_spec_t *spec, const bkm_topo_t *topo, bkm_err_t *err)
{
    bkm_wl_config_t wcfg;
    bkm_topo_summary_t sum;
    bkm_aff_env_t env;
    bkm_aff_plan_t *plan = NULL;
    const bkm_wl_info_t *info;
    int rc = bkm_tune_trial_spec_validate(spec, err);
    if (rc < 0)
        goto out;
    rc = bkm_wl_find(spec->workload, &info, err);
    if (rc < 0)
        goto out;
    rc = bkm_tune_trial_wl_config(spec, spec->backend, &wcfg, err);
    if (rc < 0)
        goto out;
    rc = bkm_wl_config_check_threads(spec->workload, &wcfg, spec->threads, err);
    if (rc < 0)
        goto out;
    if (spec->compare[0]) {
        if (bkm_wl_config_get(&wcfg, "backend") != NULL && spec->n_params > 0)
            for (int i = 0; i < spec->n_params; i++)
                if (strcmp(spec->params[i].key, "backend") == 0) {
                    rc = bkm_err_set(err, BKM_EINVAL, "compare '%s' with a backend parameter: give --backend instead",
                                     spec->compare);
                    goto out;
                }
        rc = bkm_tune_trial_wl_config(spec, spec->compare, &wcfg, err);
        if (rc < 0)
            goto out;
        rc = bkm_wl_config_check(spec->workload, &wcfg, err);
        if (rc < 0)
            goto out;
    }
    bkm_topo_summary(topo, &sum);
    if (spec->threads > sum.pus) {
        rc = bkm_err_set(err, BKM_EINVAL, "threads %d exceed the %d PUs of this node (%d allowed)", spec->threads,
                         sum.pus, sum.allowed_pus);
        goto out;
    }
    bkm_tune_trial_aff_env(spec, &env);
    rc = bkm_aff_plan_create(topo, &env, spec->threads, &plan, err);
out:
    bkm_aff_plan_free(plan);
    return rc;
}

