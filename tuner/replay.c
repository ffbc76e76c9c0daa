/* SPDX-License-Identifier: MIT */
/* Replay: run a strategy against an exhaustive sweep stored in the database, without running
 * anything. The stored trials are the oracle, and the process is the unit: every configuration
 * has several runs (passes of the exhaustive sweep, each a worker process); an evaluation returns
 * the median of ONE run (so the strategy sees the run-to-run spread; a configuration's runs are
 * returned in a seeded random order, each once before any again), and the strategy's pick is
 * judged on the runs of that configuration it could not see: half of each configuration's runs
 * (rounded down, at least one of two or more) are held out of every seed's evaluations and are
 * the judge, the same number of runs whatever the strategy re-measured. The replay also says whether the recording can test a strategy at all: flat
 * (the default is already within 5% of the best), disturbed (a pass slowed as a whole) or
 * judge-limited (the run-to-run spread is so wide that a pick of the best configuration itself
 * would be judged more than 5% off in more than 10% of the seeds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"

typedef struct oracle {
    size_t n;
    char **key;          /* canonical config JSON (borrowed from the trial list) */
    double **run;        /* per configuration: the median of each run (pass) */
    int64_t **pass;      /* per configuration: the sweep (pass) of each run */
    size_t *n_run;
    double *truth;       /* median of the run medians */
    int64_t *best_id;    /* trial of the run with the lowest median (BKM_TUNE_REPLAY_BEST_PASS) */
    double *best_med;    /* its median */
    double **ms;         /* its samples (BKM_TUNE_REPLAY_BEST_PASS only) */
    size_t *n_ms;
    int n_dims;
    int *coord;
    size_t default_index;
} oracle_t;

static void oracle_free(oracle_t *o)
{
    if (o->run)
        for (size_t i = 0; i < o->n + 1; i++)
            bkm_free(o->run[i]);
    if (o->pass)
        for (size_t i = 0; i < o->n + 1; i++)
            bkm_free(o->pass[i]);
    bkm_free(o->pass);
    if (o->ms)
        for (size_t i = 0; i < o->n; i++)
            bkm_free(o->ms[i]);
    bkm_free(o->ms);
    bkm_free(o->n_ms);
    bkm_free(o->best_id);
    bkm_free(o->best_med);
    bkm_free(o->run);
    bkm_free(o->n_run);
    bkm_free(o->truth);
    bkm_free(o->key);
    bkm_free(o->coord);
}

static int run_add(oracle_t *o, size_t k, double v, int64_t trial_id, int64_t pass)
{
    double *p = bkm_realloc(o->run[k], (o->n_run[k] + 1) * sizeof *p);
    int64_t *q;
    if (p == NULL)
        return BKM_ENOMEM;
    o->run[k] = p;
    if ((q = bkm_realloc(o->pass[k], (o->n_run[k] + 1) * sizeof *q)) == NULL)
        return BKM_ENOMEM;
    o->pass[k] = q;
    q[o->n_run[k]] = pass;
    if (o->n_run[k] == 0 || v < o->best_med[k])
        o->best_med[k] = v, o->best_id[k] = trial_id;
    p[o->n_run[k]++] = v;
    o->run[k] = p;
    return BKM_OK;
}

static double median_of(const double *x, size_t n, double *scratch)
{
    memcpy(scratch, x, n * sizeof *x);
    return bkm_median(scratch, n);
}

/* Flattened "path=value" members of a configuration object ("threads", "env.KMP_AFFINITY", ...). */
#define MAX_PATHS 64
typedef struct paths {
    int n;
    char name[MAX_PATHS][64];
    int n_val[MAX_PATHS];
    char **val[MAX_PATHS];   /* distinct values per path */
} paths_t;

static void member_text(const bkm_json_t *v, char *buf, size_t n)
{
    if (v->type == BKM_JSON_STR)
        snprintf(buf, n, "%s", v->str);
    else if (v->type == BKM_JSON_NUM)
        snprintf(buf, n, "%.17g", v->num);
    else if (v->type == BKM_JSON_BOOL)
        snprintf(buf, n, "%s", v->boolean ? "true" : "false");
    else
        snprintf(buf, n, "?");
}

/* Coordinate of @p value along path @p name, adding the path/value when new; -1 when full. */
static int path_coord(paths_t *p, const char *name, const char *value)
{
    int d, k;
    for (d = 0; d < p->n && strcmp(p->name[d], name) != 0; d++)
        ;
    if (d == p->n) {
        if (p->n >= MAX_PATHS)
            return -1;
        snprintf(p->name[p->n++], sizeof p->name[0], "%s", name);
    }
    for (k = 0; k < p->n_val[d]; k++)
        if (strcmp(p->val[d][k], value) == 0)
            return d * 100000 + k;
    {
        char **nv = bkm_realloc(p->val[d], (size_t)(k + 1) * sizeof *nv);
        if (nv == NULL)
            return -1;
        p->val[d] = nv;
        if ((nv[k] = bkm_strdup(value)) == NULL)
            return -1;
        p->n_val[d]++;
    }
    return d * 100000 + k;
}

static void paths_free(paths_t *p)
{
    for (int d = 0; d < p->n; d++) {
        for (int k = 0; k < p->n_val[d]; k++)
            bkm_free(p->val[d][k]);
        bkm_free(p->val[d]);
    }
}

/* Does row @p r belong to the oracle: a search trial of sweep @p sweep_id or, when @p pool, of any
 * sweep of the same node and workload (repeated passes of one exhaustive sweep). */
static int row_in(const bkm_db_trial_row_t *r, const bkm_db_trial_row_t *ref, int pool)
{
    if (strcmp(r->role, "search") != 0 || r->round != 0 || r->status != BKM_TRIAL_OK || isnan(r->median_ms))
        return 0;
    if (r->sweep_id == ref->sweep_id)
        return 1;
    return pool && r->node && ref->node && r->workload && ref->workload && strcmp(r->node, ref->node) == 0 &&
           strcmp(r->workload, ref->workload) == 0;
}

/* A row of the oracle and its configuration, for grouping the runs of one configuration. */
typedef struct key_row {
    const char *key;
    size_t pos;
} key_row_t;

static int key_row_cmp(const void *a, const void *b)
{
    const key_row_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* *first[i]: the place in @p l of the first row of the oracle with row i's configuration (i
 * itself for the first one), for every row of the oracle (row_in); the rows sorted by
 * (configuration, place): O(n log n). */
static int config_firsts(const bkm_db_trial_list_t *l, const bkm_db_trial_row_t *ref, int pool, size_t **first,
                         bkm_err_t *err)
{
    key_row_t *k = bkm_malloc((l->n ? l->n : 1) * sizeof *k);
    size_t n = 0;
    *first = bkm_malloc((l->n ? l->n : 1) * sizeof **first);
    if (k == NULL || *first == NULL) {
        bkm_free(k);
        return bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
    }
    for (size_t i = 0; i < l->n; i++)
        if (row_in(&l->rows[i], ref, pool))
            k[n++] = (key_row_t){l->rows[i].config_json, i};
    qsort(k, n, sizeof *k, key_row_cmp);
    for (size_t g = 0, e; g < n; g = e)
        for (e = g; e < n && strcmp(k[e].key, k[g].key) == 0; e++)
            (*first)[k[e].pos] = k[g].pos;
    bkm_free(k);
    return BKM_OK;
}

static int oracle_build(bkm_db_t *db, const bkm_db_trial_list_t *l, int64_t sweep_id, int pool, oracle_t *o,
                        bkm_err_t *err)
{
    const bkm_db_trial_row_t *ref = NULL;
    paths_t *p = NULL;
    int *raw = NULL, rc = BKM_OK, have_default = 0;
    size_t cap = 0, *first = NULL, *config_at = NULL;
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < l->n && ref == NULL; i++)
        if (l->rows[i].sweep_id == sweep_id)
            ref = &l->rows[i];
    if (ref == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep %lld has no trials in %s", (long long)sweep_id, bkm_db_path(db));
    for (size_t i = 0; i < l->n; i++)
        cap += row_in(&l->rows[i], ref, pool);
    o->key = bkm_calloc(cap + 1, sizeof *o->key);
    o->run = bkm_calloc(cap + 1, sizeof *o->run);
    o->pass = bkm_calloc(cap + 1, sizeof *o->pass);
    o->n_run = bkm_calloc(cap + 1, sizeof *o->n_run);
    o->truth = bkm_calloc(cap + 1, sizeof *o->truth);
    o->best_id = bkm_calloc(cap + 1, sizeof *o->best_id);
    o->best_med = bkm_calloc(cap + 1, sizeof *o->best_med);
    raw = bkm_calloc((cap + 1) * MAX_PATHS, sizeof *raw);
    p = bkm_calloc(1, sizeof *p);
    config_at = bkm_malloc((l->n ? l->n : 1) * sizeof *config_at);
    if (!o->key || !o->run || !o->pass || !o->n_run || !o->truth || !o->best_id || !o->best_med || !raw || !p ||
        !config_at) {
        rc = bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
        goto out;
    }
    if ((rc = config_firsts(l, ref, pool, &first, err)) < 0)
        goto out;
    for (size_t i = 0; i < l->n; i++) {
        const bkm_db_trial_row_t *r = &l->rows[i];
        bkm_json_t *j = NULL;
        size_t k = o->n;
        if (!row_in(r, ref, pool))
            continue;
        if (first[i] != i) {
            /* another pass over the same configuration: one more run */
            if (run_add(o, config_at[first[i]], r->median_ms, r->id, r->sweep_id) < 0) {
                rc = bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
                goto out;
            }
            continue;
        }
        if ((rc = bkm_json_parse(r->config_json, &j, err)) < 0)
            goto out;
        for (int d = 0; d < MAX_PATHS; d++)
            raw[k * MAX_PATHS + d] = -1;
        for (const bkm_json_t *m = j->child; m; m = m->next) {
            char name[64], value[256];
            if (strcmp(m->key, "default") == 0) {
                if (m->type == BKM_JSON_BOOL && m->boolean)
                    o->default_index = k, have_default = 1;
                continue;
            }
            if (m->type == BKM_JSON_OBJ) {
                for (const bkm_json_t *c = m->child; c; c = c->next) {
                    int pc;
                    snprintf(name, sizeof name, "%s.%s", m->key, c->key);
                    member_text(c, value, sizeof value);
                    if ((pc = path_coord(p, name, value)) < 0) {
                        bkm_json_free(j);
                        rc = bkm_err_set(err, BKM_ENOMEM, "replay: too many configuration members");
                        goto out;
                    }
                    raw[k * MAX_PATHS + pc / 100000] = pc % 100000;
                }
            } else {
                int pc;
                member_text(m, value, sizeof value);
                if ((pc = path_coord(p, m->key, value)) < 0) {
                    bkm_json_free(j);
                    rc = bkm_err_set(err, BKM_ENOMEM, "replay: too many configuration members");
                    goto out;
                }
                raw[k * MAX_PATHS + pc / 100000] = pc % 100000;
            }
        }
        bkm_json_free(j);
        o->key[k] = r->config_json;
        config_at[i] = k;
        if (run_add(o, k, r->median_ms, r->id, r->sweep_id) < 0) {
            rc = bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
            goto out;
        }
        o->n++;
    }
    if (o->n < 2) {
        rc = bkm_err_set(err, BKM_EINVAL, "sweep %lld has %zu ok search trials: nothing to replay",
                         (long long)sweep_id, o->n);
        goto out;
    }
    if (!have_default) {
        rc = bkm_err_set(err, BKM_EINVAL, "sweep %lld has no trial of the default configuration: the strategies "
                         "start from it", (long long)sweep_id);
        goto out;
    }
    /* coordinates: a path absent from a configuration has the value index n_val (unset) */
    o->n_dims = p->n;
    o->coord = bkm_malloc(o->n * (size_t)(p->n ? p->n : 1) * sizeof *o->coord);
    if (o->coord == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
        goto out;
    }
    for (size_t i = 0; i < o->n; i++)
        for (int d = 0; d < p->n; d++) {
            int v = raw[i * MAX_PATHS + d];
            o->coord[i * (size_t)p->n + (size_t)d] = v < 0 ? p->n_val[d] : v;
        }
out:
    if (p)
        paths_free(p);
    bkm_free(p);
    bkm_free(raw);
    bkm_free(first);
    bkm_free(config_at);
    return rc;
}

/* a pass whose runs were typically this much slower than the fastest run of their configuration
 * was disturbed as a whole (tests/tuner/data/record.sh flags the same) */
#define REPLAY_DISTURBED 1.10
/* passes told apart by the disturbance check (more are pooled, not checked) */
#define REPLAY_MAX_PASSES 64
/* the bar allows 5 of 50 seeds to miss: a judge that misses a perfect pick more often than this
 * makes the bar unreachable */
#define REPLAY_JUDGE_MISS_MAX 0.10

/* The judge's limit: a pick of the best configuration itself is judged by the median of at least
 * h runs; with log(run) normal with sd @p spread (the mean's sd spread/sqrt(h), optimistic for
 * h >= 3), the probability that this judge puts it more than 5% off */
static double judge_miss(double spread, size_t h)
{
    if (h == 0 || isnan(spread))
        return 1.0;
    if (spread <= 0)
        return 0.0;
    return 0.5 * erfc(log(1.05) * sqrt((double)h) / spread / sqrt(2.0));
}

/* What the recording can test: the run-to-run spread, the judge's limit, disturbed passes, and
 * the verdict (see bkm_tune_replay_t) */
static void replay_diagnose(const oracle_t *o, bkm_tune_replay_t *out)
{
    double ss = 0;
    size_t dof = 0;
    out->n_passes = out->n_disturbed = 0;
    out->worst_pass = 1.0;
    for (size_t i = 0; i < o->n; i++) {
        double mean = 0;
        for (size_t r = 0; r < o->n_run[i]; r++)
            mean += log(o->run[i][r]);
        mean /= (double)o->n_run[i];
        for (size_t r = 0; r < o->n_run[i]; r++)
            ss += (log(o->run[i][r]) - mean) * (log(o->run[i][r]) - mean);
        dof += o->n_run[i] - 1;
    }
    out->run_spread = dof ? sqrt(ss / (double)dof) : NAN;
    out->judge_runs = out->runs_min / 2;
    out->judge_miss = judge_miss(out->run_spread, out->judge_runs);
    out->passes_needed = 0;
    for (size_t n = 2; n <= 1000 && out->passes_needed == 0; n++)
        if (judge_miss(out->run_spread, n / 2) <= REPLAY_JUDGE_MISS_MAX)
            out->passes_needed = n;
    /* per pass: the geometric mean over its runs of run / the fastest run of that configuration
     * (record.sh prints the same); a pass slowed as a whole by other processes stands out. Passes
     * are found in order of first appearance, at most REPLAY_MAX_PASSES of them. */
    {
        int64_t ids[REPLAY_MAX_PASSES];
        double sum[REPLAY_MAX_PASSES] = {0};
        size_t cnt[REPLAY_MAX_PASSES] = {0};
        for (size_t j = 0; j < o->n; j++) {
            double fastest = o->run[j][0];
            for (size_t q = 1; q < o->n_run[j]; q++)
                fastest = o->run[j][q] < fastest ? o->run[j][q] : fastest;
            for (size_t q = 0; q < o->n_run[j]; q++) {
                size_t p;
                for (p = 0; p < out->n_passes && ids[p] != o->pass[j][q]; p++)
                    ;
                if (p == out->n_passes) {
                    if (p == REPLAY_MAX_PASSES)
                        continue;
                    ids[out->n_passes++] = o->pass[j][q];
                }
                sum[p] += log(o->run[j][q] / fastest), cnt[p]++;
            }
        }
        for (size_t p = 0; p < out->n_passes; p++) {
            double g = exp(sum[p] / (double)cnt[p]);
            out->worst_pass = g > out->worst_pass ? g : out->worst_pass;
            out->n_disturbed += g > REPLAY_DISTURBED;
        }
    }
    snprintf(out->verdict, sizeof out->verdict, "%s",
             out->default_rel <= 1.05 ? "flat"
             : out->n_disturbed      ? "disturbed"
             : out->judge_miss > REPLAY_JUDGE_MISS_MAX ? "judge-limited"
                                      : "eligible");
}

/* One row of the sweep pick: a trial's sweep, its place in the list, whether it counts. */
typedef struct sweep_row {
    int64_t sweep_id;
    size_t pos;
    int counts;          /* an ok search trial */
} sweep_row_t;

static int sweep_row_cmp(const void *a, const void *b)
{
    const sweep_row_t *x = a, *y = b;
    if (x->sweep_id != y->sweep_id)
        return x->sweep_id < y->sweep_id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The sweep with the most ok search trials in @p l (rows of sweep 0 are no sweep); among sweeps
 * with as many, the one whose first trial comes first in the list. *sweep_id = 0 when no sweep
 * has an ok search trial. The rows sorted by (sweep, place): O(n log n). */
static int pick_sweep(const bkm_db_trial_list_t *l, int64_t *sweep_id, bkm_err_t *err)
{
    sweep_row_t *r = bkm_malloc((l->n ? l->n : 1) * sizeof *r);
    size_t n = 0, best_n = 0, best_first = 0;
    *sweep_id = 0;
    if (r == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
    for (size_t i = 0; i < l->n; i++)
        if (l->rows[i].sweep_id != 0)
            r[n++] = (sweep_row_t){l->rows[i].sweep_id, i,
                                   l->rows[i].status == BKM_TRIAL_OK && strcmp(l->rows[i].role, "search") == 0};
    qsort(r, n, sizeof *r, sweep_row_cmp);
    for (size_t g = 0, e; g < n; g = e) {
        size_t c = 0;
        for (e = g; e < n && r[e].sweep_id == r[g].sweep_id; e++)
            c += (size_t)r[e].counts;
        /* r[g] is the sweep's first row in the list */
        if (c > best_n || (c == best_n && c > 0 && r[g].pos < best_first))
            best_n = c, best_first = r[g].pos, *sweep_id = r[g].sweep_id;
    }
    bkm_free(r);
    return BKM_OK;
}

/* The trials of @p db and the sweep replayed: *sweep_id, or (0) the pick, pooled with the other
 * passes; its workload and node into @p out. */
static int replay_trials(bkm_db_t *db, int64_t *sweep_id, bkm_db_trial_list_t *l, bkm_tune_replay_t *out,
                         bkm_err_t *err)
{
    int rc;
    if ((rc = bkm_db_trials_query(db, NULL, l, err)) < 0)
        return rc;
    if (*sweep_id == 0) {
        /* the sweep with the most ok search trials; repeated passes of it are pooled */
        if ((rc = pick_sweep(l, sweep_id, err)) < 0)
            return rc;
        if (*sweep_id == 0)
            return bkm_err_set(err, BKM_EINVAL, "%s holds no sweep to replay", bkm_db_path(db));
    }
    out->sweep_id = *sweep_id;
    for (size_t i = 0; i < l->n; i++)
        if (l->rows[i].sweep_id == *sweep_id) {
            snprintf(out->workload, sizeof out->workload, "%s", l->rows[i].workload ? l->rows[i].workload : "");
            snprintf(out->node, sizeof out->node, "%s", l->rows[i].node ? l->rows[i].node : "");
            break;
        }
    return BKM_OK;
}

/* The working arrays of the seeded replays. */
typedef struct replay_work {
    size_t *first_at;    /* per configuration: evaluations spent when first measured */
    size_t *seen_off;    /* per configuration: offset of its runs in order[] and seen[] */
    size_t *n_held;      /* per configuration: runs held out (the judge) */
    size_t *n_drawn;     /* per configuration: evaluations returned so far */
    size_t *order;       /* per configuration: its runs in this seed's order */
    unsigned char *seen; /* per run: returned by an evaluation in this seed */
    double *scratch;     /* max(runs, seeds) doubles */
    double *rels;        /* per seed: the pick's relative value */
    double *boot;        /* a bootstrap resample (best-pass oracle) */
    size_t boot_n;
} replay_work_t;

static void work_free(replay_work_t *w)
{
    bkm_free(w->first_at);
    bkm_free(w->n_held);
    bkm_free(w->n_drawn);
    bkm_free(w->order);
    bkm_free(w->seen);
    bkm_free(w->seen_off);
    bkm_free(w->scratch);
    bkm_free(w->boot);
    bkm_free(w->rels);
}

/* The oracle of the replayed sweep: its configurations and runs, their truth (median of runs,
 * or the best pass and its samples), the exhaustive best, the default's place, the diagnosis. */
static int replay_oracle(bkm_db_t *db, const bkm_db_trial_list_t *l, int64_t sweep_id, int pool, int oracle,
                         size_t seeds, oracle_t *o, replay_work_t *wk, bkm_tune_replay_t *out, bkm_err_t *err)
{
    size_t max_runs = 0;
    int rc;
    if ((rc = oracle_build(db, l, sweep_id, pool, o, err)) < 0)
        return rc;
    out->n_configs = o->n;
    out->runs_min = (size_t)-1;
    for (size_t i = 0; i < o->n; i++) {
        max_runs = o->n_run[i] > max_runs ? o->n_run[i] : max_runs;
        out->runs_min = o->n_run[i] < out->runs_min ? o->n_run[i] : out->runs_min;
    }
    out->runs_max = max_runs;
    if ((wk->scratch = bkm_malloc((max_runs > seeds ? max_runs : seeds) * sizeof *wk->scratch)) == NULL ||
        (wk->seen_off = bkm_malloc((o->n + 1) * sizeof *wk->seen_off)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
    wk->seen_off[0] = 0;
    for (size_t i = 0; i < o->n; i++) {
        o->truth[i] = oracle == BKM_TUNE_REPLAY_BEST_PASS ? o->best_med[i] : median_of(o->run[i], o->n_run[i], wk->scratch);
        wk->seen_off[i + 1] = wk->seen_off[i] + o->n_run[i];
    }
    if (oracle == BKM_TUNE_REPLAY_BEST_PASS) {
        /* the samples of each configuration's least disturbed pass, resampled by the evaluations */
        if ((o->ms = bkm_calloc(o->n, sizeof *o->ms)) == NULL || (o->n_ms = bkm_calloc(o->n, sizeof *o->n_ms)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
        for (size_t i = 0; i < o->n; i++) {
            if ((rc = bkm_db_trial_samples(db, o->best_id[i], &o->ms[i], &o->n_ms[i], err)) < 0)
                return rc;
            if (o->n_ms[i] == 0)
                return bkm_err_set(err, BKM_EINVAL, "replay: trial %lld has no samples to resample",
                                   (long long)o->best_id[i]);
        }
    }
    out->best_ms = o->truth[0];
    for (size_t i = 1; i < o->n; i++)
        if (o->truth[i] < out->best_ms)
            out->best_ms = o->truth[i];
    out->default_rel = o->truth[o->default_index] / out->best_ms;
    replay_diagnose(o, out);
    return BKM_OK;
}

/* One evaluation of @p ask: the median of a bootstrap resample (best-pass oracle), or one run
 * not held out (unseen-runs). */
static int replay_evaluate(const oracle_t *o, int oracle, replay_work_t *wk, bkm_tune_strategy_t *st,
                           const bkm_tune_ask_t *ask, uint64_t *rng, bkm_err_t *err)
{
    if (oracle == BKM_TUNE_REPLAY_BEST_PASS) {
        /* the median of a bootstrap resample (scale x n) of the best pass's samples */
        size_t m = o->n_ms[ask->config] * (size_t)(ask->scale > 0 ? ask->scale : 1);
        if (m > wk->boot_n) {
            double *nb = bkm_realloc(wk->boot, m * sizeof *nb);
            if (nb == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
            wk->boot = nb, wk->boot_n = m;
        }
        for (size_t k = 0; k < m; k++)
            wk->boot[k] = o->ms[ask->config][bkm_rng_next(rng) % o->n_ms[ask->config]];
        bkm_tune_strategy_report(st, ask, bkm_median(wk->boot, m));
    } else {
        /* one process: a run drawn at random (a re-measurement at a larger scale is one
         * longer process too) */
        size_t c = ask->config, r, m = o->n_run[c] - wk->n_held[c];
        r = wk->order[wk->seen_off[c] + wk->n_held[c] + wk->n_drawn[c]++ % m];
        wk->seen[wk->seen_off[ask->config] + r] = 1;
        bkm_tune_strategy_report(st, ask, o->run[ask->config][r]);
    }
    return BKM_OK;
}

/* Seed @p s (0-based) of the replay: the strategy against the oracle, its pick judged; one more
 * run in @p out. */
static int replay_seed(const oracle_t *o, int oracle, const char *strategy, size_t budget, size_t s,
                       const bkm_tune_problem_t *pb, replay_work_t *wk, bkm_tune_replay_t *out, bkm_err_t *err)
{
    bkm_tune_strategy_t *st = NULL;
    bkm_tune_ask_t ask;
    uint64_t rng = (s + 1) * 0xD1B54A32D192ED03ULL + 1;
    bkm_tune_replay_run_t *run = &out->runs[out->n_runs];
    size_t pick, unseen = 0;
    int rc;
    if ((rc = bkm_tune_strategy_create(&st, strategy, pb, budget, s + 1, err)) < 0)
        return rc;
    memset(wk->first_at, 0, o->n * sizeof *wk->first_at);
    memset(wk->seen, 0, wk->seen_off[o->n] ? wk->seen_off[o->n] : 1);
    /* unseen-runs: per configuration, its runs in a seeded random order; the first n/2 (at least
     * one when it has two or more) are held out of this seed's evaluations and judge the pick,
     * so it is always judged on processes the strategy never saw, and on more of them the more
     * runs there are; the evaluations of a configuration return its other runs in that order,
     * each once before any is returned again (a re-measurement is another process while the
     * recording has one) */
    for (size_t c = 0; c < o->n; c++) {
        size_t *p = &wk->order[wk->seen_off[c]];
        for (size_t r = 0; r < o->n_run[c]; r++)
            p[r] = r;
        for (size_t r = o->n_run[c]; r > 1; r--) {
            size_t j = (size_t)(bkm_rng_next(&rng) % r), t = p[r - 1];
            p[r - 1] = p[j], p[j] = t;
        }
        wk->n_held[c] = o->n_run[c] / 2;
        wk->n_drawn[c] = 0;
    }
    while (bkm_tune_strategy_next(st, &ask)) {
        if ((rc = replay_evaluate(o, oracle, wk, st, &ask, &rng, err)) < 0) {
            bkm_tune_strategy_free(st);
            return rc;
        }
        if (wk->first_at[ask.config] == 0)
            wk->first_at[ask.config] = bkm_tune_strategy_spent(st);
    }
    pick = bkm_tune_strategy_best(st, NULL);
    /* judged on the pick's held-out runs, which no evaluation returns: the same number of runs
     * for every strategy and seed, whatever it re-measured (a judge that also took the runs a
     * strategy happened not to draw would judge a race on fewer runs than random search); on
     * the runs it saw only when nothing is held out (one run per configuration; best-pass
     * oracle: on that pass, which the strategy resampled) */
    if (oracle == BKM_TUNE_REPLAY_UNSEEN_RUNS)
        for (size_t k = 0; k < wk->n_held[pick]; k++) {
            size_t r = wk->order[wk->seen_off[pick] + k];
            if (!wk->seen[wk->seen_off[pick] + r])
                wk->scratch[unseen++] = o->run[pick][r];
        }
    run->judged_on_unseen = unseen > 0;
    run->rel = (unseen > 0 ? bkm_median(wk->scratch, unseen) : o->truth[pick]) / out->best_ms;
    out->n_judged_seen += oracle == BKM_TUNE_REPLAY_UNSEEN_RUNS && unseen == 0;
    run->seed = s + 1;
    run->found_at = wk->first_at[pick];
    run->spent = bkm_tune_strategy_spent(st);
    if (run->rel <= 1.05 && (double)run->spent <= 0.25 * (double)o->n)
        out->n_within++;
    wk->rels[out->n_runs] = run->rel;
    out->n_runs++;
    bkm_tune_strategy_free(st);
    return BKM_OK;
}

int bkm_tune_replay_run(bkm_db_t *db, int64_t sweep_id, const char *strategy, size_t budget, size_t seeds,
                        int oracle, bkm_tune_replay_t *out, bkm_err_t *err)
{
    int pool = sweep_id == 0;
    bkm_db_trial_list_t l;
    oracle_t o;
    bkm_tune_problem_t pb;
    replay_work_t wk;
    size_t n_runs;
    int rc;

    memset(&l, 0, sizeof l);
    memset(&o, 0, sizeof o);
    memset(&wk, 0, sizeof wk);
    if (db == NULL || strategy == NULL || out == NULL || seeds == 0 ||
        (oracle != BKM_TUNE_REPLAY_UNSEEN_RUNS && oracle != BKM_TUNE_REPLAY_BEST_PASS))
        return bkm_err_set(err, BKM_EINVAL, "replay: NULL argument, no seeds or unknown oracle %d", oracle);
    memset(out, 0, sizeof *out);
    if ((rc = replay_trials(db, &sweep_id, &l, out, err)) < 0 ||
        (rc = replay_oracle(db, &l, sweep_id, pool, oracle, seeds, &o, &wk, out, err)) < 0)
        goto out;
    if (budget == 0)
        budget = o.n / 4 ? o.n / 4 : 1;
    out->budget = budget;
    pb.n = o.n;
    pb.n_dims = o.n_dims;
    pb.coord = o.coord;
    pb.default_index = o.default_index;
    n_runs = wk.seen_off[o.n];
    wk.first_at = bkm_malloc(o.n * sizeof *wk.first_at);
    wk.n_held = bkm_malloc(o.n * sizeof *wk.n_held);
    wk.n_drawn = bkm_malloc(o.n * sizeof *wk.n_drawn);
    wk.order = bkm_malloc((n_runs ? n_runs : 1) * sizeof *wk.order);
    wk.seen = bkm_malloc(n_runs ? n_runs : 1);
    out->runs = bkm_calloc(seeds, sizeof *out->runs);
    wk.rels = bkm_malloc(seeds * sizeof *wk.rels);
    if (!wk.first_at || !wk.n_held || !wk.n_drawn || !wk.order || !wk.seen || !out->runs || !wk.rels) {
        rc = bkm_err_set(err, BKM_ENOMEM, "replay: out of memory");
        goto out;
    }
    for (size_t s = 0; s < seeds; s++)
        if ((rc = replay_seed(&o, oracle, strategy, budget, s, &pb, &wk, out, err)) < 0)
            goto out;
    out->median_rel = bkm_median(wk.rels, out->n_runs);
    rc = BKM_OK;
out:
    work_free(&wk);
    oracle_free(&o);
    bkm_db_trial_list_free(&l);
    if (rc < 0)
        bkm_tune_replay_free(out);
    return rc;
}

void bkm_tune_replay_free(bkm_tune_replay_t *r)
{
    if (r == NULL)
        return;
    bkm_free(r->runs);
    r->runs = NULL;
    r->n_runs = 0;
}
