/* SPDX-License-Identifier: MIT */
/* The trial worker of the MPI training workload (fmnist-sgd): one worker per rank under the
 * launcher the runner started (mpiexec -bind-to core:T, or srun --cpu-bind=cores). Each rank runs
 * a short training run of bkm_train_run (timed per training step inside it); rank 0 turns the
 * run's JSON into the worker's JSON: one sample per rank (its median step time), the median and
 * maximum over ranks, and the per-rank results with each rank's CPUs, which are verified here
 * (ranks on one host must not share CPUs; a rank must hold a CPU per thread). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/worker.h"
#include "bkm/workloads.h"
#include "worker_int.h"


/* The trial's training configuration: its parameters, then the short-run defaults for what it
 * leaves unset (one epoch of BKM_TUNE_TRAIN_STEPS global batches). */
static int train_config(const bkm_tune_trial_spec_t *spec, bkm_wl_config_t *c, bkm_err_t *err)
{
    char kv[BKM_KV_KEY_MAX + BKM_KV_VALUE_MAX];
    long long batch = 128;
    int rc;
    bkm_wl_config_init(c);
    for (int i = 0; i < spec->n_params; i++) {
        snprintf(kv, sizeof kv, "%s=%s", spec->params[i].key, spec->params[i].value);
        if ((rc = bkm_wl_config_add(c, kv, err)) < 0)
            return rc;
        if (strcmp(spec->params[i].key, "batch") == 0 && bkm_parse_int(spec->params[i].value, 1, INT32_MAX, &batch) < 0)
            return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: batch '%s' is not a positive integer",
                               spec->params[i].value);
    }
    if (spec->backend[0] && bkm_wl_config_get(c, "backend") == NULL) {
        snprintf(kv, sizeof kv, "backend=%s", spec->backend);
        if ((rc = bkm_wl_config_add(c, kv, err)) < 0)
            return rc;
    }
    if (bkm_wl_config_get(c, "epochs") == NULL && (rc = bkm_wl_config_add(c, "epochs=1", err)) < 0)
        return rc;
    if (bkm_wl_config_get(c, "train_limit") == NULL) {
        snprintf(kv, sizeof kv, "train_limit=%lld", batch * BKM_TUNE_TRAIN_STEPS);
        if ((rc = bkm_wl_config_add(c, kv, err)) < 0)
            return rc;
    }
    if (bkm_wl_config_get(c, "test_limit") == NULL) {
        snprintf(kv, sizeof kv, "test_limit=%d", BKM_TUNE_TRAIN_TEST);
        if ((rc = bkm_wl_config_add(c, kv, err)) < 0)
            return rc;
    }
    return bkm_train_config_check(c, err);
}

/* Per-rank binding check over the run's rank_binding; why gets the first problem. 1 = ok. */
static int ranks_bound(const bkm_json_t *rb, int share, int ranks, int threads, char *why, size_t n)
{
    if (rb == NULL || rb->type != BKM_JSON_ARR || (int)rb->n_children != ranks) {
        snprintf(why, n, "the training run reported the CPUs of %d ranks, not %d", rb ? (int)rb->n_children : 0,
                 ranks);
        return 0;
    }
    if (share) {
        snprintf(why, n, "ranks share CPUs (every rank must have cores of its own):");
        for (const bkm_json_t *e = rb->child; e; e = e->next) {
            size_t l = strlen(why);
            snprintf(why + l, n - l, " rank %d {%s}", (int)bkm_json_get_num(e, "rank", -1),
                     bkm_json_get_str(e, "cpus") ? bkm_json_get_str(e, "cpus") : "?");
        }
        return 0;
    }
    for (const bkm_json_t *e = rb->child; e; e = e->next) {
        bkm_cpuset_t set;
        const char *cpus = bkm_json_get_str(e, "cpus");
        if (cpus == NULL || bkm_cpuset_parse(&set, cpus, NULL) < 0 || bkm_cpuset_count(&set) < threads) {
            snprintf(why, n, "rank %d may run on CPUs {%s}: fewer than its %d threads", (int)bkm_json_get_num(e, "rank", -1),
                     cpus ? cpus : "?", threads);
            return 0;
        }
    }
    return 1;
}

/* Rank 0: the worker's JSON from the training run's. */
static int train_result(const bkm_tune_trial_spec_t *spec, const char *tj, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_json_t *doc = NULL;
    const bkm_json_t *st, *per, *rb, *ep, *last = NULL;
    double med[BKM_TUNE_RANKS_MAX], sorted[BKM_TUNE_RANKS_MAX], dev[BKM_TUNE_RANKS_MAX];
    char why[1024];
    bkm_json_w_t w;
    int rc, n = 0, ok, share;

    if ((rc = bkm_json_parse(tj, &doc, err)) < 0)
        return bkm_err_prefix(err, "fmnist-sgd: the training run's JSON");
    st = bkm_json_get(doc, "step_ms");
    per = st ? bkm_json_get(st, "per_rank_median") : NULL;
    rb = bkm_json_get(doc, "rank_binding");
    ep = bkm_json_get(doc, "epochs");
    if (per == NULL || per->type != BKM_JSON_ARR || (int)per->n_children != spec->ranks) {
        rc = bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: the training run gave no step time per rank");
        goto out;
    }
    for (const bkm_json_t *e = per->child; e; e = e->next) {
        if (e->type != BKM_JSON_NUM || !isfinite(e->num)) {
            rc = bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: rank %d's median step time is not a number", n);
            goto out;
        }
        med[n] = sorted[n] = e->num;
        n++;
    }
    qsort(sorted, (size_t)n, sizeof *sorted, bkm_cmp_double);
    {
        double m = bkm_json_get_num(st, "median", NAN);
        for (int i = 0; i < n; i++)
            dev[i] = fabs(med[i] - m);
        qsort(dev, (size_t)n, sizeof *dev, bkm_cmp_double);
    }
    for (const bkm_json_t *e = ep && ep->type == BKM_JSON_ARR ? ep->child : NULL; e; e = e->next)
        last = e;
    {
        const bkm_json_t *sh = bkm_json_get(doc, "ranks_share_cpus");
        share = sh != NULL && sh->type == BKM_JSON_BOOL && sh->boolean;
    }
    ok = ranks_bound(rb, spec->ranks > 1 && share, spec->ranks, spec->threads, why, sizeof why);

    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "workload"), bkm_json_str(&w, spec->workload);
    bkm_json_key(&w, "ranks"), bkm_json_int(&w, spec->ranks);
    bkm_json_key(&w, "threads"), bkm_json_int(&w, spec->threads);
    bkm_json_key(&w, "params");
    if (bkm_json_get(doc, "params") != NULL)
        bkm_json_write_tree(&w, bkm_json_get(doc, "params"));
    else
        bkm_json_null(&w);
    bkm_json_key(&w, "impl"), bkm_json_str(&w, bkm_json_get_str(doc, "impl"));
    bkm_json_key(&w, "steps_per_epoch"), bkm_json_double(&w, bkm_json_get_num(doc, "steps_per_epoch", NAN));
    bkm_json_key(&w, "timing");
    bkm_json_str(&w, "per training step (forward, backward, allreduce, update); samples_ms = each rank's median "
                     "step time in rank order; median_ms = their median, max_ms = their maximum");
    bkm_json_key(&w, "binding");
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "ranks");
    bkm_json_arr_begin(&w);
    {
        int r = 0;
        for (const bkm_json_t *e = rb && rb->type == BKM_JSON_ARR ? rb->child : NULL; e && r < n; e = e->next, r++) {
            bkm_json_obj_begin(&w);
            bkm_json_key(&w, "rank"), bkm_json_int(&w, r);
            bkm_json_key(&w, "host"), bkm_json_str(&w, bkm_json_get_str(e, "host"));
            bkm_json_key(&w, "cpus"), bkm_json_str(&w, bkm_json_get_str(e, "cpus"));
            bkm_json_key(&w, "step_median_ms"), bkm_json_double(&w, med[r]);
            bkm_json_obj_end(&w);
        }
    }
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "ranks_share_cpus"), bkm_json_bool(&w, share);
    bkm_json_key(&w, "median_ms"), bkm_json_double(&w, bkm_json_get_num(st, "median", NAN));
    bkm_json_key(&w, "max_ms"), bkm_json_double(&w, bkm_json_get_num(st, "max", NAN));
    bkm_json_key(&w, "ok"), bkm_json_bool(&w, ok);
    bkm_json_obj_end(&w);
    if (!ok) {
        bkm_json_key(&w, "error"), bkm_json_str(&w, why);
        bkm_json_obj_end(&w);
        rc = bkm_err_set(err, BKM_EVERIFY, "binding mismatch: %s", why);
        goto out;
    }
    bkm_json_key(&w, "samples_ms");
    bkm_json_arr_begin(&w);
    for (int i = 0; i < n; i++)
        bkm_json_double(&w, med[i]);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "median_ms"), bkm_json_double(&w, bkm_json_get_num(st, "median", NAN));
    bkm_json_key(&w, "max_ms"), bkm_json_double(&w, bkm_json_get_num(st, "max", NAN));
    bkm_json_key(&w, "min_ms"), bkm_json_double(&w, sorted[0]);
    bkm_json_key(&w, "mad_ms"), bkm_json_double(&w, n % 2 ? dev[n / 2] : 0.5 * (dev[n / 2 - 1] + dev[n / 2]));
    bkm_json_key(&w, "ci95_ms");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, sorted[0]);
    bkm_json_double(&w, sorted[n - 1]);
    bkm_json_arr_end(&w);
    if (last != NULL) {
        bkm_json_key(&w, "check");
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "loss"), bkm_json_double(&w, bkm_json_get_num(last, "loss", NAN));
        bkm_json_obj_end(&w);
        bkm_json_key(&w, "test_accuracy"), bkm_json_double(&w, bkm_json_get_num(last, "test_accuracy", NAN));
        bkm_json_key(&w, "samples_per_s"), bkm_json_double(&w, bkm_json_get_num(last, "samples_per_s", NAN));
        bkm_json_key(&w, "comm_s"), bkm_json_double(&w, bkm_json_get_num(last, "comm_s", NAN));
        bkm_json_key(&w, "compute_s"), bkm_json_double(&w, bkm_json_get_num(last, "compute_s", NAN));
    }
    bkm_json_obj_end(&w);
    rc = out->oom ? bkm_err_set(err, BKM_ENOMEM, "fmnist-sgd: out of memory for the result") : BKM_OK;
out:
    bkm_json_free(doc);
    return rc;
}

int bkm__tune_worker_train(const bkm_tune_worker_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err)
{
    const bkm_tune_trial_spec_t *spec = &cfg->spec;
    bkm_wl_config_t c;
    bkm_buf_t tj;
    int rc, rank = -1;

    if ((rc = train_config(spec, &c, err)) < 0)
        return rc;
    bkm_buf_init(&tj);
#ifdef BKM_TEST_HOOKS
    if (strcmp(spec->inject, "killrank1") == 0) {
        /* a rank that dies once MPI runs, while rank 0 trains: the launcher must end the job and
         * the tuner record a crash */
        if ((rc = bkm_train_mpi_init(&rank, NULL, err)) < 0)
            goto out;
        if (rank == 1)
            raise(SIGKILL);
        rc = bkm_train_run(&c, spec->threads, NULL, NULL, &tj, &rank, err);
        bkm_train_mpi_finalize();
        goto out;
    }
#endif
    rc = bkm_train_run(&c, spec->threads, NULL, NULL, &tj, &rank, err);
#ifdef BKM_TEST_HOOKS
out:
#endif
    if (rc == BKM_OK && rank == 0)
        rc = train_result(spec, bkm_buf_str(&tj), out, err);
    bkm_buf_free(&tj);
    return rc;
}
