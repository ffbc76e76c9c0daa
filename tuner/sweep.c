/* SPDX-License-Identifier: MIT */
/* The sweep: strategy -> trial runner -> one transaction per finished trial, resume by sweep
 * key, progress, the sequential confirmation (the default and the top candidates in blocks of
 * fresh worker processes, each block in a drift-cancelling order, a look after each, more blocks
 * while a candidate is undecided), and the best-known-setting derivation on one value per process
 * (claimed only when it beats the default beyond noise; what was decided about every candidate). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"

void bkm_tune_sweep_cfg_defaults(bkm_tune_sweep_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->strategy = BKM_TUNE_STRATEGY_DEFAULT;
    cfg->seed = 1;
    cfg->confirm_top = 3;
    cfg->replicates = BKM_TUNE_REPLICATES_DEFAULT;
    bkm_tune_trial_spec_defaults(&cfg->base);
}

size_t bkm_tune_sweep_budget(const char *strategy, size_t budget, size_t n)
{
    /* the default: the whole space for grid; else a quarter of it (what the default strategy is
     * held to by tune replay), at least 20 trials, at most the whole space */
    if (budget == 0 && strcmp(strategy ? strategy : BKM_TUNE_STRATEGY_DEFAULT, "grid") == 0)
        return n;
    if (budget == 0)
        budget = n / 4 > 20 ? n / 4 : 20;
    return budget < n ? budget : n;
}

int bkm_tune_node_resolve_topo(const char *node, const bkm_topo_t *host, char *out, size_t n, bkm_err_t *err)
{
    const char *const *names = bkm_profile_builtin_names();
    bkm_node_profile_t prof;
    bkm_topo_summary_t ts;
    int len;
    if (node == NULL || node[0] == '\0' || out == NULL || n == 0)
        return bkm_err_set(err, BKM_EINVAL, "node name: empty");
    if (strcmp(node, "auto") != 0) {
        len = snprintf(out, n, "%s", node);
        if (len < 0 || (size_t)len >= n)
            return bkm_err_set(err, BKM_EINVAL, "node name '%s' is longer than %zu characters", node, n - 1);
        return BKM_OK;
    }
    if (host == NULL)
        return bkm_err_set(err, BKM_EINVAL, "node auto: no host topology to resolve it with");
    for (size_t i = 0; names[i] != NULL; i++) {
        if (strcmp(names[i], "auto") == 0 || bkm_profile_builtin(names[i], &prof, NULL) < 0 ||
            !bkm_profile_matches_host(&prof, host))
            continue;
        len = snprintf(out, n, "%s", names[i]);
        if (len < 0 || (size_t)len >= n)
            return bkm_err_set(err, BKM_EINVAL, "node name '%s' is longer than %zu characters", names[i], n - 1);
        return BKM_OK;
    }
    bkm_topo_summary(host, &ts);
    len = snprintf(out, n, "host-%dx%dx%d-%s", ts.packages, ts.packages > 0 ? ts.cores / ts.packages : ts.cores,
                   ts.cores > 0 ? ts.pus / ts.cores : 1, ts.isa[0] ? ts.isa : "unknown");
    if (len < 0 || (size_t)len >= n)
        return bkm_err_set(err, BKM_EINVAL, "node fingerprint of this host is longer than %zu characters", n - 1);
    return BKM_OK;
}

int bkm_tune_node_resolve(const char *node, char *out, size_t n, bkm_err_t *err)
{
    bkm_topo_t *host = NULL;
    int rc;
    if (node != NULL && strcmp(node, "auto") == 0 && (rc = bkm_topo_open_host(&host, err)) < 0)
        return bkm_err_prefix(err, "resolving node auto");
    rc = bkm_tune_node_resolve_topo(node, host, out, n, err);
    bkm_topo_close(host);
    return rc;
}

typedef struct sweep_state {
    const bkm_tune_sweep_cfg_t *cfg;
    const bkm_tune_space_t *space;
    bkm_db_t *db;
    int64_t sweep_id;
    bkm_db_trial_list_t stored;  /* trials stored before this run (resume) */
    char **keys;                 /* canonical key per configuration, computed on demand */
    bkm_tune_progress_t prog;
    uint64_t t0_ns;
    size_t run_here;             /* trials run by this process */
    int trial_no;                /* 1-based, for fault injection (test builds) */
    const char *node;            /* cfg->node resolved (res->node): stored with the results */
    size_t disturbed;            /* processes marked disturbed (this run and resumed) */
    size_t noise_unknown;        /* ok processes without a disturbed mark */
    size_t confirm_disturbed;    /* confirmation processes counted although disturbed */
    size_t reruns;               /* disturbed confirmation processes replaced by a re-run */
} sweep_state_t;

static int config_key(sweep_state_t *st, size_t i, const char **key, bkm_err_t *err)
{
    int rc;
    if (st->keys[i] == NULL &&
        (rc = bkm_tune_config_key(bkm_tune_space_config(st->space, i), &st->keys[i], err)) < 0)
        return rc;
    *key = st->keys[i];
    return BKM_OK;
}

static const bkm_db_trial_row_t *stored_find(const sweep_state_t *st, const char *role, int round, const char *key)
{
    for (size_t i = 0; i < st->stored.n; i++) {
        const bkm_db_trial_row_t *r = &st->stored.rows[i];
        if (r->round == round && strcmp(r->role, role) == 0 && strcmp(r->config_json, key) == 0)
            return r;
    }
    return NULL;
}

static void progress_emit(sweep_state_t *st, const bkm_tune_config_t *c, const char *status)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    double el = (double)(bkm_now_ns() - st->t0_ns) * 1e-9;
    st->prog.elapsed_s = el;
    st->prog.last_status = status;
    bkm_tune_config_label(c, st->prog.last_label, sizeof st->prog.last_label);
    if (st->run_here > 0 && st->prog.total > st->prog.done)
        st->prog.eta_s = el / (double)st->run_here * (double)(st->prog.total - st->prog.done);
    else
        st->prog.eta_s = st->prog.total > st->prog.done ? NAN : 0.0;
    if (cfg->progress)
        cfg->progress(cfg->progress_ud, &st->prog);
}

/* A search trial's median that beats the best so far becomes the progress's best. */
static void progress_best(sweep_state_t *st, const bkm_tune_config_t *c, const char *role, double value)
{
    if (!isnan(value) && strcmp(role, "search") == 0 && (isnan(st->prog.best_ms) || value < st->prog.best_ms)) {
        st->prog.best_ms = value;
        bkm_tune_config_label(c, st->prog.best_label, sizeof st->prog.best_label);
    }
}

/* The noise mark of a process that ran (ok or not), counted for the summary. */
static void noise_account(sweep_state_t *st, int ok, int disturbed, int *out)
{
    if (out)
        *out = disturbed;
    if (disturbed == 1)
        st->disturbed++;
    else if (disturbed < 0 && ok)
        st->noise_unknown++;
}

/* A trial stored before an interruption: reuse it, never run it again. */
static void trial_resume(sweep_state_t *st, const bkm_db_trial_row_t *row, const bkm_tune_config_t *c,
                         const char *role, double *value, double *prec, int *disturbed)
{
    int ok = row->status == BKM_TRIAL_OK;
    noise_account(st, ok, row->disturbed, disturbed);
    *value = ok ? row->median_ms : NAN;
    if (prec && ok)
        prec[0] = row->ci_lo_ms, prec[1] = row->ci_hi_ms;
    st->prog.done++;
    st->prog.resumed++;
    if (!ok)
        st->prog.failed++;
    progress_best(st, c, role, *value);
    progress_emit(st, c, "resumed");
}

/* Variables of the base spec (the libomp topology correction) under the configuration's own;
 * none with KMP_AFFINITY=disabled (bkm_aff_topo_fix_wanted). */
static int spec_add_base_env(const bkm_tune_sweep_cfg_t *cfg, const bkm_tune_config_t *c,
                             bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    int rc;
    if (!bkm_aff_topo_fix_wanted(c->kmp_affinity[0] ? c->kmp_affinity : NULL))
        return BKM_OK;
    for (int i = 0; i < cfg->base.n_env; i++) {
        int own = 0;
        for (int j = 0; j < spec->n_env; j++)
            own |= strcmp(spec->env[j].key, cfg->base.env[i].key) == 0;
        if (!own && (rc = bkm_tune_trial_spec_setenv(spec, cfg->base.env[i].key, cfg->base.env[i].value, err)) < 0)
            return rc;
    }
    return BKM_OK;
}

/* The JSON texts of a stored trial: the environment the worker ran under, its correctness
 * check, and the binding evidence (planned vs actual mask of every thread, the worker's
 * "binding" member as it is). */
typedef struct trial_texts {
    bkm_buf_t env, check, bind, noise, layers;
    char exit_info[48];
} trial_texts_t;

static void trial_texts_free(trial_texts_t *x)
{
    bkm_buf_free(&x->env);
    bkm_buf_free(&x->check);
    bkm_buf_free(&x->bind);
    bkm_buf_free(&x->noise);
    bkm_buf_free(&x->layers);
}

static void trial_texts_write(trial_texts_t *x, const bkm_tune_trial_spec_t *spec,
                              const bkm_tune_trial_result_t *res)
{
    bkm_json_w_t w;
    bkm_json_w_init(&w, &x->env, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "OMP_NUM_THREADS"), bkm_json_int(&w, spec->threads);
    for (int i = 0; i < spec->n_env; i++)
        bkm_json_key(&w, spec->env[i].key), bkm_json_str(&w, spec->env[i].value);
    bkm_json_obj_end(&w);
    if (res->check_kind[0]) {
        bkm_json_w_init(&w, &x->check, 0);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, res->check_kind), bkm_json_double(&w, res->check_value);
        bkm_json_obj_end(&w);
    }
    if (res->doc != NULL && bkm_json_get(res->doc, "binding") != NULL) {
        bkm_json_w_init(&w, &x->bind, 0);
        bkm_json_write_tree(&w, bkm_json_get(res->doc, "binding"));
    }
    if (res->doc != NULL && bkm_json_get(res->doc, "noise") != NULL) {
        bkm_json_w_init(&w, &x->noise, 0);
        bkm_json_write_tree(&w, bkm_json_get(res->doc, "noise"));
    }
    if (res->doc != NULL && bkm_json_get(res->doc, "layers") != NULL) { /* a network with layers=1 */
        bkm_json_w_init(&w, &x->layers, 0);
        bkm_json_write_tree(&w, bkm_json_get(res->doc, "layers"));
    }
    if (res->signal)
        snprintf(x->exit_info, sizeof x->exit_info, "signal %d (%s)", res->signal, res->signal_name);
    else
        snprintf(x->exit_info, sizeof x->exit_info, "exit %d", res->exit_code);
}

/* The row of a finished trial, pointing into @p res and @p x. */
static void trial_row_fill(bkm_db_trial_t *t, const sweep_state_t *st, const char *key, const char *role,
                           int round, const bkm_tune_trial_result_t *res, const trial_texts_t *x)
{
    bkm_db_trial_init(t);
    t->sweep_id = st->sweep_id;
    t->config_json = key;
    t->status = res->status;
    t->role = role;
    t->round = round;
    t->error = res->message[0] ? res->message : NULL;
    t->stderr_tail = res->stderr_tail[0] ? res->stderr_tail : NULL;
    t->exit_info = x->exit_info;
    t->samples_ms = res->samples_ms;
    t->n_samples = res->samples_ms ? (size_t)res->n_samples : 0;
    t->median_ms = res->median_ms, t->min_ms = res->min_ms, t->mad_ms = res->mad_ms;
    t->ci_lo_ms = res->ci95_lo_ms, t->ci_hi_ms = res->ci95_hi_ms, t->gflops = res->gflops;
    t->effective_json = bkm_buf_str(&x->env);
    t->check_json = res->check_kind[0] ? bkm_buf_str(&x->check) : NULL;
    t->binding_json = res->doc != NULL && bkm_json_get(res->doc, "binding") != NULL ? bkm_buf_str(&x->bind) : NULL;
    t->impl = res->impl[0] ? res->impl : NULL;
    t->layers_json = res->doc != NULL && bkm_json_get(res->doc, "layers") != NULL ? bkm_buf_str(&x->layers) : NULL;
    t->counters = res->counters;
    t->n_counters = res->counters ? (size_t)res->n_counters : 0;
    t->noise_json = x->noise.len > 0 ? bkm_buf_str(&x->noise) : NULL;
    t->noise_share = res->noise_share;
    t->disturbed = res->disturbed;
}

/* Progress after a stored trial: its median and precision when ok, else a warning. */
static void trial_account(sweep_state_t *st, const bkm_tune_config_t *c, const char *role,
                          const bkm_tune_trial_result_t *res, double *value, double *prec)
{
    st->prog.done++;
    if (res->status == BKM_TRIAL_OK) {
        *value = res->median_ms;
        progress_best(st, c, role, *value);
        if (prec)
            prec[0] = res->ci95_lo_ms, prec[1] = res->ci95_hi_ms;
    } else {
        char label[256];
        st->prog.failed++;
        bkm_tune_config_label(c, label, sizeof label);
        bkm_log(st->cfg->log, BKM_LOG_WARN, "trial %s: %s (%s)", label, bkm_trial_status_name(res->status),
                res->message);
    }
    progress_emit(st, c, bkm_trial_status_name(res->status));
}

/* Run one configuration as a trial (scale x the samples) and store it under (role, round). On
 * success *value is its median (NaN unless ok) and, when wanted, prec[0..1] the 95% interval of
 * that median from the process's own samples (its precision). */
static int trial_do(sweep_state_t *st, size_t ci, const char *role, int round, int scale, double *value,
                    double *prec, int *disturbed, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    const bkm_tune_config_t *c = bkm_tune_space_config(st->space, ci);
    const bkm_db_trial_row_t *row;
    bkm_tune_trial_spec_t spec = cfg->base;
    bkm_tune_trial_result_t res;
    bkm_db_trial_t t;
    trial_texts_t x;
    const char *key;
    int64_t trial_id = 0;
    int rc;

    memset(&res, 0, sizeof res);
    memset(&x, 0, sizeof x);
    bkm_buf_init(&x.env);
    bkm_buf_init(&x.check);
    bkm_buf_init(&x.bind);
    bkm_buf_init(&x.noise);
    bkm_buf_init(&x.layers);
    *value = NAN;
    if (disturbed)
        *disturbed = -1;
    if (prec)
        prec[0] = prec[1] = NAN;
    if ((rc = config_key(st, ci, &key, err)) < 0)
        return rc;
    if ((row = stored_find(st, role, round, key)) != NULL) {
        trial_resume(st, row, c, role, value, prec, disturbed);
        return BKM_OK;
    }

    if ((rc = bkm_tune_config_to_spec(c, cfg->workload, &spec, err)) < 0 ||
        (rc = spec_add_base_env(cfg, c, &spec, err)) < 0)
        goto out;
    bkm_tune_strategy_spec_scale(&spec, scale);   /* clamped to the limits, timeout scaled too */
    st->trial_no++;
    if (cfg->inject[0] && cfg->inject_at == st->trial_no)   /* the test build's CLI sets it */
        snprintf(spec.inject, sizeof spec.inject, "%s", cfg->inject);
    {
        /* the runner kills the worker at once when the sweep is stopped */
        bkm_tune_runner_t rn = *cfg->runner;
        if (rn.stop == NULL)
            rn.stop = cfg->stop;
        if ((rc = bkm_tune_trial_run(&rn, &spec, &res, err)) < 0)
            goto out;
    }
    if (res.status == BKM_TRIAL_INTERRUPTED) {
        /* cut short by the stop: not a result; nothing is stored, the resumed sweep measures it */
        rc = BKM_OK;
        goto out;
    }
    st->run_here++;

    trial_texts_write(&x, &spec, &res);
    trial_row_fill(&t, st, key, role, round, &res, &x);
    if ((rc = bkm_db_trial_insert(st->db, &t, &trial_id, NULL, err)) < 0)
        goto out;
    trial_account(st, c, role, &res, value, prec);
    noise_account(st, res.status == BKM_TRIAL_OK, res.disturbed, disturbed);
    rc = BKM_OK;
out:
    trial_texts_free(&x);
    bkm_tune_trial_result_free(&res);
    return rc;
}

static int stopped(const bkm_tune_sweep_cfg_t *cfg)
{
    return cfg->stop != NULL && *cfg->stop != 0;
}

size_t bkm_tune_sweep_replicates_max(const bkm_tune_sweep_cfg_t *cfg)
{
    if (cfg->replicates_max > 0)
        return (size_t)cfg->replicates_max;
    return cfg->replicates > BKM_TUNE_REPLICATES_MAX_DEFAULT ? (size_t)cfg->replicates
                                                              : BKM_TUNE_REPLICATES_MAX_DEFAULT;
}

/* One arm of the confirmation round: its per-process medians, their precision (the 95%
 * interval of each median from its own samples, lo/hi pairs) and their positions (1-based) in
 * the confirmation order. */
typedef struct cand {
    size_t config;
    double *proc;
    double *prec;
    int *pos;
    signed char *dist;           /* each process's disturbed mark: 1, 0, -1 unknown */
    size_t n, cap;
    size_t reruns;               /* disturbed processes of this arm replaced by a re-run */
    int failed;
} cand_t;

static int cand_append(cand_t *c, double v, const double *prec, int pos, int disturbed, bkm_err_t *err)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        double *p = bkm_realloc(c->proc, cap * sizeof *p), *q;
        signed char *d;
        int *r;
        if (p == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        c->proc = p;
        if ((q = bkm_realloc(c->prec, 2 * cap * sizeof *q)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        c->prec = q;
        if ((r = bkm_realloc(c->pos, cap * sizeof *r)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        c->pos = r;
        if ((d = bkm_realloc(c->dist, cap * sizeof *d)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        c->dist = d;
        c->cap = cap;
    }
    c->dist[c->n] = (signed char)disturbed;
    c->proc[c->n] = v;
    c->prec[2 * c->n] = prec[0], c->prec[2 * c->n + 1] = prec[1];
    c->pos[c->n++] = pos;
    return BKM_OK;
}

/* Find or create the sweep: its key covers the space and the measurement protocol (another
 * protocol is another sweep), the strategy and its seed, the workload's data seed when it is not
 * the default 1 (so that the keys of sweeps with the default stay what they were), the node and
 * the workload. */
static int sweep_open(sweep_state_t *st, bkm_tune_sweep_result_t *res, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    const char *strategy = cfg->strategy ? cfg->strategy : BKM_TUNE_STRATEGY_DEFAULT;
    bkm_db_sweep_t info;
    bkm_db_filter_t filt;
    bkm_json_w_t w;
    bkm_buf_t sj;
    char key[17], uuid[128];
    int rc;
    bkm_buf_init(&sj);
    bkm_json_w_init(&w, &sj, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "space"), bkm_tune_space_to_json(st->space, &w);
    bkm_json_key(&w, "min_samples"), bkm_json_int(&w, cfg->base.min_samples);
    bkm_json_key(&w, "max_samples"), bkm_json_int(&w, cfg->base.max_samples);
    bkm_json_key(&w, "min_time_s"), bkm_json_double(&w, cfg->base.min_time_s);
    bkm_json_key(&w, "target_ci_rel"), bkm_json_double(&w, cfg->base.target_ci_rel);
    bkm_json_key(&w, "strategy"), bkm_json_str(&w, strategy);
    bkm_json_key(&w, "seed"), bkm_json_int(&w, (int64_t)cfg->seed);
    if (cfg->base.seed != 1)
        bkm_json_key(&w, "data_seed"), bkm_json_int(&w, (int64_t)cfg->base.seed);
    /* the confirmation protocol: processes per arm, and A/A runs apart from real ones */
    bkm_json_key(&w, "confirm"), bkm_json_str(&w, "process-medians/" BKM_TUNE_CLAIM_ORDER_NAME);
    bkm_json_key(&w, "replicates"), bkm_json_int(&w, cfg->replicates);
    /* a sequential confirmation is another protocol than a fixed round (whose key stays as it was) */
    if (bkm_tune_sweep_replicates_max(cfg) > (size_t)cfg->replicates)
        bkm_json_key(&w, "replicates_max"), bkm_json_int(&w, (int64_t)bkm_tune_sweep_replicates_max(cfg));
    bkm_json_key(&w, "confirm_top"), bkm_json_int(&w, cfg->confirm_top);
    bkm_json_key(&w, "aa"), bkm_json_bool(&w, cfg->aa);
    bkm_json_obj_end(&w);
    rc = bkm_db_sweep_key(bkm_buf_str(&sj), st->node, cfg->workload, key, err);
    bkm_buf_free(&sj);
    if (rc < 0)
        return rc;
    memset(&info, 0, sizeof info);
    info.key = key;
    if (cfg->shard_count > 0 && cfg->shard_group) {
        snprintf(uuid, sizeof uuid, "%.100s-%s", cfg->shard_group, key);
        info.uuid = uuid;
    }
    info.command = cfg->command;
    info.node = st->node;
    info.workload = cfg->workload;
    info.strategy = strategy;
    info.label = cfg->label ? cfg->label : cfg->aa ? "A/A" : NULL;
    info.git_revision = cfg->git_revision;
    info.host_id = cfg->host_id;
    if ((rc = bkm_db_sweep_open(st->db, &info, cfg->fresh, &st->sweep_id, &res->resumed, err)) < 0)
        return rc;
    res->sweep_id = st->sweep_id;
    memset(&filt, 0, sizeof filt);
    filt.sweep_id = st->sweep_id;
    return bkm_db_trials_query(st->db, &filt, &st->stored, err);
}

/* The search: the strategy asks, the runner measures (or the database answers on resume). */
static int search_run(sweep_state_t *st, bkm_tune_strategy_t *strat, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    bkm_tune_ask_t ask;
    int rc;
    while (!stopped(cfg) && bkm_tune_strategy_next(strat, &ask)) {
        double v;
        if (cfg->time_budget_s > 0 && (double)(bkm_now_ns() - st->t0_ns) * 1e-9 >= cfg->time_budget_s) {
            bkm_log(cfg->log, BKM_LOG_INFO, "time budget of %g s spent: searching stops", cfg->time_budget_s);
            break;
        }
        if (cfg->shard_count > 0 && ask.config % (size_t)cfg->shard_count != (size_t)cfg->shard_index) {
            bkm_tune_strategy_report(strat, &ask, NAN);   /* another shard's configuration */
            continue;
        }
        if ((rc = trial_do(st, ask.config, "search", ask.round, ask.scale, &v, NULL, NULL, err)) < 0)
            return rc;
        if (stopped(cfg))
            break;   /* the trial may have been cut short: nothing to report */
        bkm_tune_strategy_report(strat, &ask, v);
    }
    return BKM_OK;
}

/* Candidates for the confirmation round: the default first, the strategy's pick, then the
 * lowest stored medians of this sweep's ok search trials, up to confirm_top besides the default. */
static int candidates_pick(sweep_state_t *st, size_t strategy_best, cand_t *cand, size_t cap, size_t *n_cand,
                           bkm_err_t *err)
{
    size_t n = bkm_tune_space_size(st->space), nc = 0, want = (size_t)st->cfg->confirm_top + 1;
    bkm_db_trial_list_t now;
    bkm_db_filter_t filt;
    int rc;
    cand[nc++].config = 0;   /* the default is configuration 0 */
    if (strategy_best != 0 && want > 1)
        cand[nc++].config = strategy_best;
    memset(&filt, 0, sizeof filt);
    filt.sweep_id = st->sweep_id;
    if ((rc = bkm_db_trials_query(st->db, &filt, &now, err)) < 0)
        return rc;
    while (nc < want && nc < cap) {
        size_t pick = n;
        double pv = NAN;
        for (size_t r = 0; r < now.n; r++) {
            const bkm_db_trial_row_t *row = &now.rows[r];
            if (row->status != BKM_TRIAL_OK || strcmp(row->role, "search") != 0 || isnan(row->median_ms) ||
                !(isnan(pv) || row->median_ms < pv))
                continue;
            for (size_t i = 0; i < n; i++) {
                const char *k;
                int dup = 0;
                if ((rc = config_key(st, i, &k, err)) < 0)
                    goto out;
                if (strcmp(k, row->config_json) != 0)
                    continue;
                for (size_t c = 0; c < nc; c++)
                    dup |= cand[c].config == i;
                if (!dup)
                    pick = i, pv = row->median_ms;
                break;
            }
        }
        if (pick == n)
            break;
        cand[nc++].config = pick;
    }
    rc = BKM_OK;
out:
    bkm_db_trial_list_free(&now);
    *n_cand = nc;
    return rc;
}

/* The sequential confirmation in progress: the design, every position's arm, the looks. */
typedef struct confirm {
    bkm_tune_seq_t *seq;
    size_t *order;               /* arm measured at each position (0 the default), all blocks */
    size_t n_order, cap_order;
    bkm_buf_t looks;             /* the looks, a JSON array */
    bkm_json_w_t lw;
    size_t processes;            /* confirmation processes counted or re-run (resumed ones too) */
    size_t per_side;             /* processes per side at the last look */
    size_t rmax;                 /* most per side (resolved) */
    const char *ended;           /* "decided", "max", "time"; "" before the end */
} confirm_t;

static void confirm_init(confirm_t *cf)
{
    memset(cf, 0, sizeof *cf);
    bkm_buf_init(&cf->looks);
    bkm_json_w_init(&cf->lw, &cf->looks, 0);
    bkm_json_arr_begin(&cf->lw);
    cf->ended = "";
}

static void confirm_free(confirm_t *cf)
{
    bkm_tune_seq_free(cf->seq);
    bkm_free(cf->order);
    bkm_buf_free(&cf->looks);
}

static int order_push(confirm_t *cf, size_t arm, bkm_err_t *err)
{
    if (cf->n_order == cf->cap_order) {
        size_t cap = cf->cap_order ? 2 * cf->cap_order : 64, *o = bkm_realloc(cf->order, cap * sizeof *o);
        if (o == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        cf->order = o;
        cf->cap_order = cap;
    }
    cf->order[cf->n_order++] = arm;
    return BKM_OK;
}

/* The seed of block @p b's order: the sweep's own for the first block (the order of a fixed
 * confirmation round), spread for the others. */
static uint64_t block_seed(uint64_t seed, size_t b)
{
    return b == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)b);
}

/* One look, as the evidence lists it. */
static void look_json(confirm_t *cf, const cand_t *cand, size_t n_cand)
{
    bkm_json_w_t *w = &cf->lw;
    bkm_json_obj_begin(w);
    bkm_json_key(w, "look"), bkm_json_int(w, (int64_t)bkm_tune_seq_looks(cf->seq));
    bkm_json_key(w, "processes_per_side"), bkm_json_int(w, (int64_t)cand[0].n);
    bkm_json_key(w, "candidates");
    bkm_json_arr_begin(w);
    for (size_t c = 1; c < n_cand; c++) {
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(cf->seq, c - 1);
        if (t->looks == 0 || t->n_base != cand[0].n)
            continue;   /* not looked at now */
        bkm_json_obj_begin(w);
        bkm_json_key(w, "arm"), bkm_json_int(w, (int64_t)c);
        bkm_json_key(w, "processes"), bkm_json_int(w, (int64_t)t->n_cand);
        bkm_json_key(w, "information"), bkm_json_double(w, t->t);
        bkm_json_key(w, "p"), bkm_json_double(w, t->p);
        bkm_json_key(w, "nominal_level"), bkm_json_double(w, t->nominal);
        bkm_json_key(w, "ratio"), bkm_json_double(w, t->ratio);
        bkm_json_key(w, "ratio_rci");
        bkm_json_arr_begin(w), bkm_json_double(w, t->rci_lo), bkm_json_double(w, t->rci_hi), bkm_json_arr_end(w);
        bkm_json_key(w, "decision"), bkm_json_str(w, bkm_tune_decision_name(t->decision));
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}

/* Measure one position: the trial, its re-runs when disturbed (--rerun-disturbed: stored under
 * round position + k x stride, beyond every planned position, so resume finds them; the last
 * attempt is counted at the planned position). */
static int confirm_one(sweep_state_t *st, confirm_t *cf, cand_t *c, size_t pos, size_t stride, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    double v, prec[2];
    int dist = -1, rc;
    if ((rc = trial_do(st, c->config, "confirm", (int)pos, 1, &v, prec, &dist, err)) < 0)
        return rc;
    cf->processes++;
    for (int k = 1; k <= cfg->rerun_disturbed && dist == 1 && !isnan(v) && !stopped(cfg); k++) {
        st->reruns++;
        c->reruns++;
        st->prog.total++;
        cf->processes++;
        if ((rc = trial_do(st, c->config, "confirm", (int)(pos + (size_t)k * stride), 1, &v, prec, &dist, err)) < 0)
            return rc;
    }
    if (stopped(cfg))
        return BKM_OK;   /* the trial may have been cut short: nothing stored, nothing to count */
    if (isnan(v))
        c->failed = 1;
    else if ((rc = cand_append(c, v, prec, (int)pos, dist, err)) < 0)
        return rc;
    else if (dist == 1)
        st->confirm_disturbed++;
    return BKM_OK;
}

/* The sequential confirmation (bkm_tune_seq_look after every block): the default and every
 * candidate still open, in blocks of cfg->replicates fresh processes each, each block in
 * bkm_tune_claim_order's order; a trial's round is its 1-based position over all blocks (so the
 * order is stored, resume finds every trial at its place, and A/A copies of the default are
 * distinct trials). A candidate whose process fails is dropped; when the default fails, the
 * confirmation ends. */
static int confirm_run(sweep_state_t *st, cand_t *cand, size_t n_cand, confirm_t *cf, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    size_t R = (size_t)cfg->replicates, n = 0, pos = 0, stride, active[BKM_TUNE_CONFIRM_TOP_MAX + 1], *order = NULL;
    const double *vals[BKM_TUNE_CONFIRM_TOP_MAX];
    size_t nv[BKM_TUNE_CONFIRM_TOP_MAX];
    bkm_tune_seq_rule_t rule;
    int rc = BKM_OK;
    st->prog.phase = "confirm";
    cf->rmax = bkm_tune_sweep_replicates_max(cfg);
    if (n_cand < 2)
        goto out;
    stride = n_cand * cf->rmax;
    bkm_tune_seq_rule_defaults(&rule);
    if (cfg->min_ratio > 0)
        rule.min_ratio = cfg->min_ratio;
    rule.max = cf->rmax;
    if ((rc = bkm_tune_seq_create(&cf->seq, &rule, n_cand - 1, err)) < 0 ||
        (order = bkm_malloc(n_cand * R * sizeof *order)) == NULL) {
        if (rc == BKM_OK)
            rc = bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        goto out;
    }
    for (size_t b = 0; !stopped(cfg); b++) {
        size_t rounds = cf->rmax - n < R ? cf->rmax - n : R, na = 0;
        int final;
        active[na++] = 0;
        for (size_t c = 1; c < n_cand; c++)
            if (!bkm_tune_seq_cand(cf->seq, c - 1)->closed && !cand[c].failed)
                active[na++] = c;
        /* the worst case: this block and every later one with the arms open now */
        st->prog.total = st->prog.done + na * (cf->rmax - n);
        if ((rc = bkm_tune_claim_order(na, rounds, block_seed(cfg->seed, b), order, err)) < 0)
            goto out;
        for (size_t t = 0; t < na * rounds && !stopped(cfg) && !cand[0].failed; t++) {
            cand_t *c = &cand[active[order[t]]];
            pos++;
            if ((rc = order_push(cf, active[order[t]], err)) < 0)
                goto out;
            if (!c->failed && (rc = confirm_one(st, cf, c, pos, stride, err)) < 0)
                goto out;
        }
        if (stopped(cfg) || cand[0].failed)
            break;
        n += rounds;
        cf->per_side = n;
        final = n >= cf->rmax ||
                (cfg->time_budget_s > 0 && (double)(bkm_now_ns() - st->t0_ns) * 1e-9 >= cfg->time_budget_s);
        for (size_t c = 1; c < n_cand; c++) {
            vals[c - 1] = cand[c].proc;
            nv[c - 1] = cand[c].failed ? 0 : cand[c].n;
        }
        if ((rc = bkm_tune_seq_look(cf->seq, cand[0].proc, cand[0].n, vals, nv, final, err)) < 0)
            goto out;
        look_json(cf, cand, n_cand);
        if (bkm_tune_seq_open(cf->seq) == 0 || final) {   /* a final look closes every candidate */
            cf->ended = !final ? "decided" : n >= cf->rmax ? "max" : "time";
            break;
        }
        bkm_log(cfg->log, BKM_LOG_INFO, "confirmation: %zu of %zu candidate(s) undecided after %zu processes per "
                "side: %zu more each", bkm_tune_seq_open(cf->seq), n_cand - 1, n,
                cf->rmax - n < R ? cf->rmax - n : R);
    }
out:
    bkm_json_arr_end(&cf->lw);
    bkm_free(order);
    return rc;
}

/* Summary of per-process values: median and its order-statistic 95% interval. */
static void proc_summary(const cand_t *c, double *median, double *lo, double *hi)
{
    bkm_tune_stats_t s;
    *median = *lo = *hi = NAN;
    if (c->n > 0 && bkm_tune_stats_compute(c->proc, c->n, NULL, &s, NULL) == BKM_OK)
        *median = s.median, *lo = s.ci_lo, *hi = s.ci_hi;
}

static void json_doubles(bkm_json_w_t *w, const char *key, const double *x, size_t n)
{
    bkm_json_key(w, key);
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < n; i++)
        bkm_json_double(w, x[i]);
    bkm_json_arr_end(w);
}

static void json_arm(bkm_json_w_t *w, const sweep_state_t *st, const cand_t *c)
{
    double med, lo, hi;
    proc_summary(c, &med, &lo, &hi);
    bkm_json_key(w, "config"), bkm_tune_config_to_json(bkm_tune_space_config(st->space, c->config), w);
    bkm_json_key(w, "processes"), bkm_json_int(w, (int64_t)c->n);
    json_doubles(w, "process_median_ms", c->proc, c->n);
    /* the precision of each process's value, from its own samples (not evidence between arms) */
    bkm_json_key(w, "process_median_ci95_order_stat");
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < c->n; i++) {
        bkm_json_arr_begin(w);
        bkm_json_double(w, c->prec[2 * i]), bkm_json_double(w, c->prec[2 * i + 1]);
        bkm_json_arr_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "positions");
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < c->n; i++)
        bkm_json_int(w, c->pos[i]);
    bkm_json_arr_end(w);
    /* each counted process's noise mark (null: no evidence), and re-runs that replaced one */
    bkm_json_key(w, "process_disturbed");
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < c->n; i++) {
        if (c->dist[i] < 0)
            bkm_json_null(w);
        else
            bkm_json_bool(w, c->dist[i]);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "disturbed_processes");
    {
        int64_t nd = 0;
        for (size_t i = 0; i < c->n; i++)
            nd += c->dist[i] == 1;
        bkm_json_int(w, nd);
    }
    bkm_json_key(w, "reruns"), bkm_json_int(w, (int64_t)c->reruns);
    bkm_json_key(w, "failed"), bkm_json_bool(w, c->failed);
    bkm_json_key(w, "median_ms"), bkm_json_double(w, med);
    bkm_json_key(w, "median_ci95_order_stat");
    bkm_json_arr_begin(w);
    bkm_json_double(w, lo), bkm_json_double(w, hi);
    bkm_json_arr_end(w);
}

/* What was decided about a candidate, in a few words. */
static void decision_text(const bkm_tune_seq_cand_t *t, char *buf, size_t n)
{
    switch (t->decision) {
    case BKM_TUNE_CLAIMED:
        snprintf(buf, n, "claimed %.3gx, repeated interval [%.3g, %.3g], after %zu processes", t->ratio, t->rci_lo,
                 t->rci_hi, t->n_cand);
        break;
    case BKM_TUNE_NOT_BETTER:
        if (t->rci_hi > 1.0)
            snprintf(buf, n, "not better by more than %.1f%% (%.3gx, after %zu processes)", 100.0 * (t->rci_hi - 1.0),
                     t->ratio, t->n_cand);
        else
            snprintf(buf, n, "not better: slower or equal (%.3gx, after %zu processes)", t->ratio, t->n_cand);
        break;
    case BKM_TUNE_FAILED:
        snprintf(buf, n, "failed: not tested");
        break;
    default:
        if (t->beaten_by)
            snprintf(buf, n, "undecided, measured no more: cannot beat the claimed one (%.3gx, after %zu processes)",
                     t->ratio, t->n_cand);
        else
            snprintf(buf, n, "undecided at the budget (%.3gx, repeated interval [%.3g, %.3g], after %zu processes)",
                     t->ratio, t->rci_lo, t->rci_hi, t->n_cand);
    }
}

static void cand_label(const sweep_state_t *st, const cand_t *cand, size_t c, char *label, size_t n)
{
    if (st->cfg->aa)
        snprintf(label, n, "copy %zu of the default", c);
    else
        bkm_tune_config_label(bkm_tune_space_config(st->space, cand[c].config), label, n);
}

/* The evidence of the claim (or of its absence), one JSON object. */
static int evidence_render(const sweep_state_t *st, const cand_t *cand, size_t n_cand, const confirm_t *cf,
                           size_t win, bkm_tune_sweep_result_t *res, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    const bkm_tune_seq_rule_t *rule = bkm_tune_seq_rule(cf->seq);
    bkm_json_w_t w;
    bkm_buf_t ev;
    int rc = BKM_OK;
    bkm_buf_init(&ev);
    bkm_json_w_init(&w, &ev, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "verdict"), bkm_json_str(&w, res->verdict);
    bkm_json_key(&w, "claim"), bkm_json_bool(&w, res->significant);
    bkm_json_key(&w, "decision"), bkm_json_str(&w, bkm_tune_decision_name(res->decision));
    bkm_json_key(&w, "decisions"), bkm_json_str(&w, res->decisions);
    bkm_json_key(&w, "aa"), bkm_json_bool(&w, cfg->aa);
    bkm_json_key(&w, "unit"), bkm_json_str(&w, "process: one value per worker process, the median of its samples");
    bkm_json_key(&w, "replicates"), bkm_json_int(&w, cfg->replicates);
    bkm_json_key(&w, "replicates_max"), bkm_json_int(&w, (int64_t)cf->rmax);
    bkm_json_key(&w, "processes_per_side"), bkm_json_int(&w, (int64_t)cf->per_side);
    bkm_json_key(&w, "confirm_processes"), bkm_json_int(&w, (int64_t)cf->processes);
    bkm_json_key(&w, "design");
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "kind"), bkm_json_str(&w, "group-sequential");
    bkm_json_key(&w, "spending"), bkm_json_str(&w, bkm_tune_spending_name(rule->spending));
    bkm_json_key(&w, "block"), bkm_json_int(&w, cfg->replicates);
    bkm_json_key(&w, "max"), bkm_json_int(&w, (int64_t)cf->rmax);
    bkm_json_key(&w, "looks"), bkm_json_int(&w, (int64_t)bkm_tune_seq_looks(cf->seq));
    bkm_json_key(&w, "ended"), bkm_json_str(&w, cf->ended);
    bkm_json_key(&w, "time_budget_s"), bkm_json_double(&w, cfg->time_budget_s > 0 ? cfg->time_budget_s : NAN);
    bkm_json_key(&w, "information"), bkm_json_str(&w, "processes per side / replicates_max");
    bkm_json_key(&w, "interval");
    bkm_json_str(&w, "repeated confidence interval of the ratio: exact rank (Moses) bounds at the nominal level of "
                     "the look for alpha / candidates tested, simultaneous over the looks");
    bkm_json_key(&w, "sources");
    bkm_json_str(&w, "Lan & DeMets 1983 (spending); Jennison & Turnbull 2000 ch. 7, 9, 19 (boundaries, repeated "
                     "intervals); Maurer & Bretz 2013 (Holm over group-sequential tests)");
    bkm_json_obj_end(&w);
    bkm_json_key(&w, "order"), bkm_json_str(&w, BKM_TUNE_CLAIM_ORDER_NAME);
    bkm_json_key(&w, "order_seed"), bkm_json_int(&w, (int64_t)cfg->seed);
    bkm_json_key(&w, "order_arms");   /* arm measured at each position: 0 the default, i candidate i */
    bkm_json_arr_begin(&w);
    for (size_t t = 0; t < cf->n_order; t++)
        bkm_json_int(&w, (int64_t)cf->order[t]);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "test"), bkm_json_str(&w, "Mann-Whitney U, one-sided (the candidate faster), on the "
                                              "per-process medians, at every look");
    bkm_json_key(&w, "correction"), bkm_json_str(&w, "holm-group-sequential");
    bkm_json_key(&w, "candidates_tested"), bkm_json_int(&w, (int64_t)bkm_tune_seq_tested(cf->seq));
    bkm_json_key(&w, "alpha_familywise"), bkm_json_double(&w, rule->alpha);
    bkm_json_key(&w, "min_ratio"), bkm_json_double(&w, rule->min_ratio);
    bkm_json_key(&w, "not_better_than"), bkm_json_double(&w, res->not_better_than);
    bkm_json_key(&w, "ratio"), bkm_json_str(&w, "Hodges-Lehmann estimate of default / candidate (median of the "
                                                "pairwise ratios of process medians)");
    bkm_json_key(&w, "noise");
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "disturbed_share"), bkm_json_double(&w, cfg->base.noise_share);
    bkm_json_key(&w, "rule");
    bkm_json_str(&w, "a process is disturbed when its worst thread waited on a run queue (proc-schedstat) plus the "
                     "steal share of its CPUs (proc-stat) exceeds disturbed_share of the timed region");
    bkm_json_key(&w, "rerun_disturbed"), bkm_json_int(&w, cfg->rerun_disturbed);
    bkm_json_key(&w, "disturbed_counted"), bkm_json_int(&w, (int64_t)st->confirm_disturbed);
    bkm_json_key(&w, "reruns"), bkm_json_int(&w, (int64_t)st->reruns);
    bkm_json_obj_end(&w);
    bkm_json_key(&w, "default");
    bkm_json_obj_begin(&w);
    json_arm(&w, st, &cand[0]);
    bkm_json_obj_end(&w);
    bkm_json_key(&w, "candidates");
    bkm_json_arr_begin(&w);
    for (size_t c = 1; c < n_cand; c++) {
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(cf->seq, c - 1);
        char text[256];
        decision_text(t, text, sizeof text);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "arm"), bkm_json_int(&w, (int64_t)c);
        json_arm(&w, st, &cand[c]);
        bkm_json_key(&w, "tested"), bkm_json_bool(&w, t->looks > 0);
        bkm_json_key(&w, "decision"), bkm_json_str(&w, bkm_tune_decision_name(t->decision));
        bkm_json_key(&w, "statement"), bkm_json_str(&w, text);
        bkm_json_key(&w, "looks"), bkm_json_int(&w, (int64_t)t->looks);
        bkm_json_key(&w, "beaten_by");
        if (t->beaten_by)
            bkm_json_int(&w, (int64_t)t->beaten_by);
        else
            bkm_json_null(&w);
        bkm_json_key(&w, "p"), bkm_json_double(&w, t->p);
        bkm_json_key(&w, "p_exact"), bkm_json_bool(&w, t->p_exact);
        bkm_json_key(&w, "nominal_level"), bkm_json_double(&w, t->nominal);
        bkm_json_key(&w, "ratio"), bkm_json_double(&w, t->ratio);
        bkm_json_key(&w, "ratio_rci");
        bkm_json_arr_begin(&w);
        bkm_json_double(&w, t->rci_lo), bkm_json_double(&w, t->rci_hi);
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "ratio_ci95_exact_rank");
        bkm_json_arr_begin(&w);
        bkm_json_double(&w, t->ratio_lo), bkm_json_double(&w, t->ratio_hi);
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "ratio_ci_coverage"), bkm_json_double(&w, t->ratio_coverage);
        bkm_json_key(&w, "significant"), bkm_json_bool(&w, t->decision == BKM_TUNE_CLAIMED);
        bkm_json_key(&w, "reason"), bkm_json_str(&w, t->reason);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "looks"), bkm_json_raw(&w, bkm_buf_str(&cf->looks));
    bkm_json_key(&w, "winner");
    if (win > 0)
        bkm_json_int(&w, (int64_t)win);
    else
        bkm_json_null(&w);
    bkm_json_obj_end(&w);
    if ((res->evidence_json = bkm_buf_take(&ev)) == NULL)
        rc = bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
    bkm_buf_free(&ev);
    return rc;
}

/* The claim, from the sequential confirmation: the winner is the claimed candidate with the
 * largest ratio (*win, 0 = the default stands); the sweep's decision and every candidate's. */
static int best_derive(const sweep_state_t *st, const cand_t *cand, size_t n_cand, const confirm_t *cf,
                       bkm_tune_sweep_result_t *res, size_t *win, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    const bkm_tune_space_t *space = st->space;
    const char *aa = cfg->aa ? "A/A: " : "";
    size_t tested = 0, not_better = 0, closest = 0, o = 0;
    *win = 0;
    res->dflt = *bkm_tune_space_config(space, 0);
    res->best = res->dflt;
    res->speedup_lo = res->speedup_hi = res->speedup_rci_lo = res->speedup_rci_hi = res->not_better_than = NAN;
    res->default_median_ms = res->default_ci_lo_ms = res->default_ci_hi_ms = NAN;
    res->replicates_max = (int)cf->rmax;
    res->per_side = cf->per_side;
    res->confirm_processes = cf->processes;
    snprintf(res->ended, sizeof res->ended, "%s", cf->ended);
    if (n_cand == 1) {
        if (cfg->confirm_top == 0)
            snprintf(res->verdict, sizeof res->verdict, "no confirmation round (--confirm-top 0): the search's "
                     "trials are stored, no best-known setting is derived or stored");
        else
            snprintf(res->verdict, sizeof res->verdict, "only the default was measured (no other setting succeeded "
                     "in the search): no best-known setting is stored");
        return BKM_OK;
    }
    if (cand[0].n == 0 || cand[0].failed || cf->seq == NULL || bkm_tune_seq_looks(cf->seq) == 0) {
        snprintf(res->verdict, sizeof res->verdict, "%sthe default setting failed in the confirmation round", aa);
        return BKM_OK;
    }
    res->looks = bkm_tune_seq_looks(cf->seq);
    proc_summary(&cand[0], &res->default_median_ms, &res->default_ci_lo_ms, &res->default_ci_hi_ms);
    res->best_median_ms = res->default_median_ms;
    res->best_ci_lo_ms = res->default_ci_lo_ms, res->best_ci_hi_ms = res->default_ci_hi_ms;
    res->speedup = 1.0;
    res->has_best = 1;
    for (size_t c = 1; c < n_cand; c++) {
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(cf->seq, c - 1);
        char label[160], text[256];
        int len;
        cand_label(st, cand, c, label, sizeof label);
        decision_text(t, text, sizeof text);
        len = snprintf(res->decisions + o, sizeof res->decisions - o, "%s%s: %s", o ? "; " : "", label, text);
        if (len > 0)
            o = o + (size_t)len < sizeof res->decisions ? o + (size_t)len : sizeof res->decisions - 1;
        if (t->looks == 0 || t->decision == BKM_TUNE_FAILED)
            continue;
        tested++;
        not_better += t->decision == BKM_TUNE_NOT_BETTER;
        if (isnan(res->not_better_than) || t->rci_hi > res->not_better_than)
            res->not_better_than = t->rci_hi;
        if (t->decision == BKM_TUNE_CLAIMED &&
            (*win == 0 || t->ratio > bkm_tune_seq_cand(cf->seq, *win - 1)->ratio))
            *win = c;
        if (closest == 0 || t->ratio > bkm_tune_seq_cand(cf->seq, closest - 1)->ratio)
            closest = c;
    }
    res->decision = *win ? BKM_TUNE_CLAIMED : tested > 0 && not_better == tested ? BKM_TUNE_NOT_BETTER
                                                                                 : BKM_TUNE_UNDECIDED;
    if (*win > 0) {
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(cf->seq, *win - 1);
        res->best = *bkm_tune_space_config(space, cand[*win].config);
        proc_summary(&cand[*win], &res->best_median_ms, &res->best_ci_lo_ms, &res->best_ci_hi_ms);
        res->speedup = t->ratio;
        res->speedup_lo = t->ratio_lo, res->speedup_hi = t->ratio_hi;
        res->speedup_rci_lo = t->rci_lo, res->speedup_rci_hi = t->rci_hi;
        res->significant = 1;
        snprintf(res->verdict, sizeof res->verdict,
                 "%s%.3gx faster than the default, repeated interval [%.3g, %.3g]; one-sided Mann-Whitney p %.2g <= "
                 "%.2g on %zu vs %zu processes (look %zu)",
                 cfg->aa ? "A/A: FALSE CLAIM: a copy of the default was found " : "", t->ratio, t->rci_lo,
                 t->rci_hi, t->p, t->nominal, t->n_cand, t->n_base, t->looks);
    } else if (res->decision == BKM_TUNE_NOT_BETTER) {
        if (res->not_better_than > 1.0)
            snprintf(res->verdict, sizeof res->verdict, "%sthe default stands: no setting tested is better by more "
                     "than %.1f%% (every repeated interval ends below %.4g)", aa,
                     100.0 * (res->not_better_than - 1.0), res->not_better_than);
        else
            snprintf(res->verdict, sizeof res->verdict, "%sthe default stands: every setting tested is slower or "
                     "equal", aa);
    } else if (closest > 0) {
        const bkm_tune_seq_cand_t *t = bkm_tune_seq_cand(cf->seq, closest - 1);
        char label[160];
        cand_label(st, cand, closest, label, sizeof label);
        snprintf(res->verdict, sizeof res->verdict, "%sno setting beats the default beyond noise (closest: %s at "
                 "%.3gx: %s)", aa, label, t->ratio, t->reason);
    } else {
        snprintf(res->verdict, sizeof res->verdict, "%sno setting beats the default beyond noise (no candidate "
                 "could be tested)", aa);
    }
    if (cfg->aa && *win == 0) {
        size_t len = strlen(res->verdict);
        snprintf(res->verdict + len, sizeof res->verdict - len, ": no claim, as it should be");
    }
    return evidence_render(st, cand, n_cand, cf, *win, res, err);
}

/* Store the best-known setting with its evidence. */
static int best_store(const sweep_state_t *st, const bkm_tune_sweep_result_t *res, bkm_err_t *err)
{
    const bkm_tune_sweep_cfg_t *cfg = st->cfg;
    bkm_db_best_t b;
    bkm_buf_t cj;
    bkm_json_w_t w;
    int rc;
    memset(&b, 0, sizeof b);
    bkm_buf_init(&cj);
    bkm_json_w_init(&w, &cj, 0);
    bkm_tune_config_to_json(&res->best, &w);
    b.node = st->node;
    b.workload = cfg->workload;
    b.sweep_id = st->sweep_id;
    b.config_json = bkm_buf_str(&cj);
    b.median_ms = res->best_median_ms;
    b.ci_lo_ms = res->best_ci_lo_ms, b.ci_hi_ms = res->best_ci_hi_ms;
    b.default_median_ms = res->default_median_ms;
    b.speedup = res->speedup;
    b.significant = res->significant;
    b.decision = bkm_tune_decision_name(res->decision);
    b.speedup_rci_lo = res->speedup_rci_lo, b.speedup_rci_hi = res->speedup_rci_hi;
    b.not_better_than = res->not_better_than;
    b.confirm_processes = (int64_t)res->confirm_processes;
    b.looks = (int64_t)res->looks;
    b.evidence_json = res->evidence_json;
    rc = bkm_db_best_store(st->db, &b, err);
    bkm_buf_free(&cj);
    return rc;
}

void bkm_tune_sweep_result_clear(bkm_tune_sweep_result_t *res)
{
    if (res == NULL)
        return;
    bkm_free(res->evidence_json);
    res->evidence_json = NULL;
}

int bkm_tune_sweep_run(const bkm_tune_sweep_cfg_t *cfg, const bkm_tune_space_t *space, bkm_db_t *db,
                       bkm_tune_sweep_result_t *res, bkm_err_t *err)
{
    sweep_state_t st;
    bkm_tune_problem_t pb;
    bkm_tune_strategy_t *strat = NULL;
    cand_t cand[BKM_TUNE_CONFIRM_TOP_MAX + 1];   /* the default first */
    confirm_t cf;
    int *coord = NULL, rc;
    size_t n, n_cand = 0, budget, win = 0;

    memset(&st, 0, sizeof st);
    memset(cand, 0, sizeof cand);
    confirm_init(&cf);
    if (cfg == NULL || space == NULL || db == NULL || res == NULL || cfg->runner == NULL || cfg->workload == NULL ||
        cfg->node == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep_run: NULL argument");
    memset(res, 0, sizeof *res);
    res->best_median_ms = res->default_median_ms = res->speedup = NAN;
    res->speedup_lo = res->speedup_hi = NAN;
    res->aa = cfg->aa;
    res->replicates = cfg->replicates;
    res->replicates_max = (int)bkm_tune_sweep_replicates_max(cfg);
    res->speedup_rci_lo = res->speedup_rci_hi = res->not_better_than = NAN;
    if (cfg->replicates < 1 || cfg->replicates > BKM_TUNE_REPLICATES_MAX || cfg->confirm_top < 0 ||
        cfg->confirm_top > BKM_TUNE_CONFIRM_TOP_MAX)
        return bkm_err_set(err, BKM_EINVAL, "sweep: replicates %d (1..%d) or confirm_top %d (0..%d) out of range",
                           cfg->replicates, BKM_TUNE_REPLICATES_MAX, cfg->confirm_top, BKM_TUNE_CONFIRM_TOP_MAX);
    if (cfg->replicates_max < 0 || cfg->replicates_max > BKM_TUNE_REPLICATES_MAX ||
        (cfg->replicates_max > 0 && cfg->replicates_max < cfg->replicates))
        return bkm_err_set(err, BKM_EINVAL, "sweep: replicates_max %d is not in %d..%d (at least replicates)",
                           cfg->replicates_max, cfg->replicates, BKM_TUNE_REPLICATES_MAX);
    if (cfg->rerun_disturbed < 0 || cfg->rerun_disturbed > BKM_TUNE_RERUN_DISTURBED_MAX)
        return bkm_err_set(err, BKM_EINVAL, "sweep: rerun_disturbed %d out of range 0..%d", cfg->rerun_disturbed,
                           BKM_TUNE_RERUN_DISTURBED_MAX);
    if (cfg->shard_count < 0 || (cfg->shard_count > 0 && (cfg->shard_index < 0 || cfg->shard_index >= cfg->shard_count)))
        return bkm_err_set(err, BKM_EINVAL, "sweep: shard %d of %d is not a shard", cfg->shard_index, cfg->shard_count);
    if (cfg->shard_count > 0 && (cfg->aa || cfg->strategy == NULL || strcmp(cfg->strategy, "grid") != 0))
        return bkm_err_set(err, BKM_EINVAL, "sweep: a shard (--shard) runs the grid strategy and no A/A "
                           "(--strategy grid; strategy '%s')", cfg->strategy ? cfg->strategy : BKM_TUNE_STRATEGY_DEFAULT);
    n = bkm_tune_space_size(space);
    st.cfg = cfg, st.space = space, st.db = db;
    st.prog.best_ms = st.prog.eta_s = NAN;
    st.prog.phase = cfg->aa ? "confirm" : "search";
    st.t0_ns = bkm_now_ns();
    if ((rc = bkm_tune_node_resolve(cfg->node, res->node, sizeof res->node, err)) < 0)
        goto out;
    st.node = res->node;
    if (strcmp(cfg->node, res->node) != 0)
        bkm_log(cfg->log, BKM_LOG_INFO, "node %s is %s: results are stored under that name", cfg->node, res->node);
    if ((st.keys = bkm_calloc(n ? n : 1, sizeof *st.keys)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "sweep: out of memory");
        goto out;
    }
    budget = bkm_tune_sweep_budget(cfg->strategy, cfg->budget, n);
    if ((rc = bkm_tune_space_problem(space, &pb, &coord, err)) < 0 ||
        (rc = bkm_tune_strategy_create(&strat, cfg->strategy ? cfg->strategy : BKM_TUNE_STRATEGY_DEFAULT, &pb,
                                       budget, cfg->seed, err)) < 0 ||
        (rc = sweep_open(&st, res, err)) < 0)
        goto out;
    if (cfg->aa) {
        /* A/A: no search; copies of the default are the candidates, everything after is the
         * same code as a real sweep */
        size_t k = cfg->confirm_top > 0 ? (size_t)cfg->confirm_top : 1;
        for (n_cand = 0; n_cand <= k; n_cand++)
            cand[n_cand].config = 0;
        bkm_log(cfg->log, BKM_LOG_INFO, "A/A: the default against %zu cop%s of itself, %d to %zu processes each",
                k, k == 1 ? "y" : "ies", cfg->replicates, bkm_tune_sweep_replicates_max(cfg));
        st.prog.total = (k + 1) * bkm_tune_sweep_replicates_max(cfg);
    } else {
        st.prog.total = budget + bkm_tune_sweep_replicates_max(cfg) * ((size_t)cfg->confirm_top + 1);
        if (cfg->shard_count > 0)
            st.prog.total = (n + (size_t)cfg->shard_count - 1 - (size_t)cfg->shard_index) / (size_t)cfg->shard_count;
        if ((rc = search_run(&st, strat, err)) < 0)
            goto out;
        if (cfg->shard_count > 0) {
            /* a shard only searches: the merge job's unsplit sweep confirms and derives */
            res->trials = st.prog.done;
            res->failed = st.prog.failed;
            res->resumed_trials = st.prog.resumed;
            res->interrupted = stopped(cfg);
            snprintf(res->verdict, sizeof res->verdict, "shard %d of %d: search only (%zu trials); the merge job "
                     "confirms and derives the best-known setting", cfg->shard_index, cfg->shard_count, st.prog.done);
            rc = bkm_db_sweep_finish(db, st.sweep_id, stopped(cfg) ? "interrupted" : res->failed ? "partial" : "done",
                                     err);
            goto out;
        }
        if (!stopped(cfg) && (rc = candidates_pick(&st, bkm_tune_strategy_best(strat, NULL), cand,
                                                   sizeof cand / sizeof cand[0], &n_cand, err)) < 0)
            goto out;
    }
    if (!stopped(cfg) && (rc = confirm_run(&st, cand, n_cand, &cf, err)) < 0)
        goto out;
    res->trials = st.prog.done;
    res->failed = st.prog.failed;
    res->resumed_trials = st.prog.resumed;
    res->disturbed = st.disturbed;
    res->noise_unknown = st.noise_unknown;
    res->confirm_disturbed = st.confirm_disturbed;
    res->reruns = st.reruns;
    if (stopped(cfg)) {
        /* every stored trial is complete (one transaction each); the same command resumes */
        res->interrupted = 1;
        rc = bkm_db_sweep_finish(db, st.sweep_id, "interrupted", err);
        goto out;
    }
    if ((rc = best_derive(&st, cand, n_cand, &cf, res, &win, err)) < 0 ||
        (res->has_best && !cfg->aa && (rc = best_store(&st, res, err)) < 0))
        goto out;
    rc = bkm_db_sweep_finish(db, st.sweep_id, res->failed ? "partial" : "done", err);
out:
    for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
        bkm_free(cand[c].proc);
        bkm_free(cand[c].prec);
        bkm_free(cand[c].pos);
        bkm_free(cand[c].dist);
    }
    if (st.keys)
        for (size_t i = 0; i < n; i++)
            bkm_free(st.keys[i]);
    bkm_free(st.keys);
    bkm_free(coord);
    bkm_db_trial_list_free(&st.stored);
    bkm_tune_strategy_free(strat);
    confirm_free(&cf);
    return rc;
}
