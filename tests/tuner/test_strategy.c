/* SPDX-License-Identifier: MIT */
/* Strategies on synthetic, deterministic objective functions over a 4 x 4 x 4 grid. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/results.h"
#include "bkm/tuner.h"

#define D 3
#define S 4
#define N (S * S * S)

static int coord[N * D];
static bkm_tune_problem_t pb;

static void setup(void)
{
    for (int i = 0; i < N; i++) {
        coord[i * D + 0] = i % S;
        coord[i * D + 1] = (i / S) % S;
        coord[i * D + 2] = i / (S * S);
    }
    pb.n = N;
    pb.n_dims = D;
    pb.coord = coord;
    pb.default_index = 0;
}

/* separable bowl, minimum 1.0 at (2, 3, 1) */
static double bowl(size_t i)
{
    const int *c = &coord[i * D];
    return 1.0 + 0.1 * ((c[0] - 2) * (c[0] - 2) + (c[1] - 3) * (c[1] - 3) + (c[2] - 1) * (c[2] - 1));
}
static size_t bowl_min(void) { return 2 + 3 * S + 1 * S * S; }

/* Drive a strategy to the end; returns the evaluation count; order[] gets the configurations. */
static size_t drive(bkm_tune_strategy_t *s, double (*f)(size_t), size_t *order, size_t cap)
{
    bkm_tune_ask_t a;
    size_t n = 0;
    while (bkm_tune_strategy_next(s, &a)) {
        ck_assert_uint_lt(a.config, N);
        if (order && n < cap)
            order[n] = a.config;
        n++;
        bkm_tune_strategy_report(s, &a, f(a.config));
        ck_assert_uint_lt(n, 10 * N);
    }
    return n;
}

START_TEST(grid_visits_all_in_order)
{
    bkm_tune_strategy_t *s = NULL;
    bkm_err_t err = {0};
    size_t order[N], n;
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "grid", &pb, 0, 1, &err), BKM_OK);
    n = drive(s, bowl, order, N);
    ck_assert_uint_eq(n, N);
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(order[i], i);
    ck_assert_uint_eq(bkm_tune_strategy_best(s, NULL), bowl_min());
    ck_assert_uint_eq(bkm_tune_strategy_spent(s), N);
    bkm_tune_strategy_free(s);
}
END_TEST

START_TEST(random_is_seeded_permutation)
{
    bkm_tune_strategy_t *a = NULL, *b = NULL, *c = NULL;
    size_t oa[N], ob[N], oc[N];
    int seen[N] = {0}, differ = 0;
    ck_assert_int_eq(bkm_tune_strategy_create(&a, "random", &pb, 0, 7, NULL), BKM_OK);
    ck_assert_int_eq(bkm_tune_strategy_create(&b, "random", &pb, 0, 7, NULL), BKM_OK);
    ck_assert_int_eq(bkm_tune_strategy_create(&c, "random", &pb, 0, 8, NULL), BKM_OK);
    ck_assert_uint_eq(drive(a, bowl, oa, N), N);
    ck_assert_uint_eq(drive(b, bowl, ob, N), N);
    ck_assert_uint_eq(drive(c, bowl, oc, N), N);
    ck_assert_uint_eq(oa[0], 0);   /* default first */
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(oa[i], ob[i]);
        differ |= oa[i] != oc[i];
        seen[oa[i]]++;
    }
    ck_assert(differ);
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
    bkm_tune_strategy_free(a);
    bkm_tune_strategy_free(b);
    bkm_tune_strategy_free(c);
}
END_TEST

START_TEST(budget_is_respected)
{
    static const char *const names[] = {"grid", "random", "halving", "local"};
    for (int k = 0; k < 4; k++) {
        bkm_tune_strategy_t *s = NULL;
        ck_assert_int_eq(bkm_tune_strategy_create(&s, names[k], &pb, 10, 3, NULL), BKM_OK);
        drive(s, bowl, NULL, 0);
        ck_assert_uint_le(bkm_tune_strategy_spent(s), 10);
        ck_assert_uint_gt(bkm_tune_strategy_spent(s), 0);
        bkm_tune_strategy_free(s);
    }
}
END_TEST

START_TEST(local_descends_to_separable_minimum)
{
    bkm_tune_strategy_t *s = NULL;
    size_t order[N], n;
    double v;
    int hit_at = -1;
    /* coordinate descent: the default, one line per dimension (3 each): the separable minimum is
     * reached within 1 + 3 * 3 evaluations, in the half of the budget that explores */
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "local", &pb, 20, 1, NULL), BKM_OK);
    n = drive(s, bowl, order, N);
    ck_assert_uint_eq(order[0], 0);
    for (size_t i = 0; i < n && hit_at < 0; i++)
        if (order[i] == bowl_min())
            hit_at = (int)i;
    ck_assert_int_ge(hit_at, 0);
    ck_assert_int_le(hit_at, 1 + 3 * D);
    ck_assert_uint_eq(bkm_tune_strategy_best(s, &v), bowl_min());
    ck_assert_double_eq(v, 1.0);
    ck_assert_uint_le(n, 20);
    bkm_tune_strategy_free(s);
    /* with the whole space as budget: the first half measures configurations once each (descent,
     * then restarts from random points), the second half races: one more process at a time (scale
     * 1, round = the process's number) of the leader or its closest challenger, never of a
     * configuration the bowl puts far from the minimum */
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "local", &pb, 0, 1, NULL), BKM_OK);
    {
        int seen[N] = {0}, finals = 0, explored = 0;
        bkm_tune_ask_t a;
        while (bkm_tune_strategy_next(s, &a)) {
            ck_assert_int_eq(a.scale, 1);
            ck_assert_int_eq(a.round, seen[a.config]);
            if (a.round == 0) {
                ck_assert_int_eq(finals, 0);
                explored++;
            } else {
                ck_assert(bowl(a.config) <= 1.1 + 1e-12); /* the minimum 1.0 and a runner-up 1.1 */
                finals++;
            }
            seen[a.config]++;
            bkm_tune_strategy_report(s, &a, bowl(a.config));
        }
        ck_assert_int_eq(explored, N / 2);
        ck_assert_int_eq(finals, N / 2);
        ck_assert_uint_eq(bkm_tune_strategy_spent(s), N);
        ck_assert_uint_eq(bkm_tune_strategy_best(s, NULL), bowl_min());
    }
    bkm_tune_strategy_free(s);
}
END_TEST

/* The bowl, except that configuration 1 (a neighbour of the default) runs once in a lucky process
 * at 0.5 and at 3.0 in every later one: a search that commits after one process picks it. */
static int lucky_calls;
static double bowl_lucky_once(size_t i)
{
    if (i == 1)
        return lucky_calls++ == 0 ? 0.5 : 3.0;
    return bowl(i);
}

START_TEST(local_race_rejects_a_lucky_process)
{
    bkm_tune_strategy_t *s = NULL;
    size_t best;
    lucky_calls = 0;
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "local", &pb, 20, 1, NULL), BKM_OK);
    drive(s, bowl_lucky_once, NULL, 0);
    ck_assert_int_ge(lucky_calls, 2); /* the race re-measured the leader after its lucky process */
    best = bkm_tune_strategy_best(s, NULL);
    ck_assert_uint_ne(best, 1);
    ck_assert(bowl(best) < 2.4); /* better than the default, which it started from */
    bkm_tune_strategy_free(s);
}
END_TEST

START_TEST(halving_remeasures_survivors)
{
    bkm_tune_strategy_t *s = NULL;
    bkm_tune_ask_t a;
    int rung1 = 0, rung0 = 0;
    size_t best;
    double rung0_best = INFINITY;
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "halving", &pb, 30, 5, NULL), BKM_OK);
    while (bkm_tune_strategy_next(s, &a)) {
        double v = bowl(a.config);
        if (a.round == 0) {
            ck_assert_int_eq(a.scale, 1);
            rung0++;
            if (v < rung0_best)
                rung0_best = v;
        } else {
            ck_assert_int_eq(a.scale, 3);
            rung1++;
        }
        bkm_tune_strategy_report(s, &a, v);
    }
    ck_assert_int_eq(rung0, 15);   /* budget / 2 screened */
    ck_assert_int_eq(rung1, 5);    /* top third at 3x the samples */
    best = bkm_tune_strategy_best(s, NULL);
    ck_assert_double_eq(bowl(best), rung0_best);
    ck_assert_uint_le(bkm_tune_strategy_spent(s), 30);
    bkm_tune_strategy_free(s);
}
END_TEST

static double fails_except_default(size_t i)
{
    return i == 0 ? 2.0 : NAN;
}

START_TEST(failed_trials_never_win)
{
    static const char *const names[] = {"grid", "random", "halving", "local"};
    for (int k = 0; k < 4; k++) {
        bkm_tune_strategy_t *s = NULL;
        double v;
        ck_assert_int_eq(bkm_tune_strategy_create(&s, names[k], &pb, 12, 1, NULL), BKM_OK);
        drive(s, fails_except_default, NULL, 0);
        ck_assert_uint_eq(bkm_tune_strategy_best(s, &v), 0);
        ck_assert_double_eq(v, 2.0);
        bkm_tune_strategy_free(s);
    }
}
END_TEST

START_TEST(unknown_strategy_named)
{
    bkm_tune_strategy_t *s = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_strategy_create(&s, "annealing", &pb, 0, 1, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "annealing"));
    ck_assert_ptr_null(s);
}
END_TEST

/* Replay on a small synthetic database: the oracle keeps each configuration's least disturbed
 * pass, the pick is judged by its stored median, found_at counts trials. */
static void store(bkm_db_t *db, int64_t sweep, const char *cfg, double ms)
{
    double x[5] = {ms, ms, ms, ms, ms};
    bkm_db_trial_t t;
    bkm_err_t err = {0};
    bkm_db_trial_init(&t);
    t.sweep_id = sweep;
    t.config_json = cfg;
    t.status = BKM_TRIAL_OK;
    t.samples_ms = x;
    t.n_samples = 5;
    t.median_ms = ms;
    ck_assert_msg(bkm_db_trial_insert(db, &t, NULL, NULL, &err) == BKM_OK, "%s", err.msg);
}

/* The limits in tuner.h are the ones the trial validator enforces: at the limit valid, past it not. */
START_TEST(spec_limits_match_validator)
{
    bkm_tune_trial_spec_t t;
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&t);
    snprintf(t.workload, sizeof t.workload, "gemm");
    t.min_samples = t.max_samples = BKM_TUNE_SAMPLES_MAX;
    t.min_time_s = t.max_time_s = BKM_TUNE_TIME_MAX_S;
    t.timeout_s = BKM_TUNE_TIMEOUT_MAX_S;
    ck_assert_msg(bkm_tune_trial_spec_validate(&t, &err) == BKM_OK, "%s", err.msg);
    t.max_samples = BKM_TUNE_SAMPLES_MAX + 1;
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&t, &err), BKM_EINVAL);
    t.max_samples = BKM_TUNE_SAMPLES_MAX;
    t.min_time_s = BKM_TUNE_TIME_MAX_S * 1.0001;
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&t, &err), BKM_EINVAL);
    t.min_time_s = BKM_TUNE_TIME_MAX_S;
    t.timeout_s = BKM_TUNE_TIMEOUT_MAX_S * 1.0001;
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&t, &err), BKM_EINVAL);
}
END_TEST

/* A halving rung at scale 3^r: samples, minimum time and the timeout grow
 * together, and the scaled trial never leaves the limits, so a sweep whose first rung is valid
 * can always finish (issue 7: a later rung used to fail validation and abort the sweep). */
START_TEST(scaled_spec_grows_and_stays_valid)
{
    bkm_tune_trial_spec_t base, t;
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&base);
    snprintf(base.workload, sizeof base.workload, "gemm");
    base.min_samples = 5, base.max_samples = 50, base.min_time_s = 0.5, base.timeout_s = 60;
    t = base;
    bkm_tune_strategy_spec_scale(&t, 1);
    ck_assert_int_eq(memcmp(&t, &base, sizeof t), 0);
    bkm_tune_strategy_spec_scale(&t, 9);
    ck_assert_int_eq(t.min_samples, 45);
    ck_assert_int_eq(t.max_samples, 50);
    ck_assert_double_eq_tol(t.min_time_s, 4.5, 1e-12);
    ck_assert_double_eq_tol(t.timeout_s, 540, 1e-9);
    /* clamped: 40000 x 3 samples, 60000 s x 3, and the timeout grows only as far as the work did */
    t = base;
    t.min_samples = 40000, t.max_samples = 40000, t.min_time_s = 0, t.timeout_s = 100;
    bkm_tune_strategy_spec_scale(&t, 3);
    ck_assert_int_eq(t.min_samples, BKM_TUNE_SAMPLES_MAX);
    ck_assert_int_eq(t.max_samples, BKM_TUNE_SAMPLES_MAX);
    ck_assert_double_eq_tol(t.timeout_s, 250, 1e-9);      /* 100000 / 40000 = 2.5x the work */
    t = base;
    t.min_time_s = 60000, t.timeout_s = 100000;
    bkm_tune_strategy_spec_scale(&t, 3);
    ck_assert_double_eq(t.min_time_s, BKM_TUNE_TIME_MAX_S);
    ck_assert_double_eq_tol(t.timeout_s, 300000, 1e-6);   /* the samples grew 3x */
    t.timeout_s = 300000;
    bkm_tune_strategy_spec_scale(&t, 3);
    ck_assert_double_eq(t.timeout_s, BKM_TUNE_TIMEOUT_MAX_S);
    ck_assert_msg(t.min_time_s < t.timeout_s, "min time %g s, timeout %g s", t.min_time_s, t.timeout_s);
    /* every rung of specs at and near the limits validates */
    for (int lim = 0; lim < 2; lim++)
        for (int r = 0, scale = 1; r < 16; r++, scale = scale > 100000000 ? scale : scale * 3) {
            t = base;
            if (lim)
                t.min_samples = t.max_samples = BKM_TUNE_SAMPLES_MAX, t.min_time_s = BKM_TUNE_TIME_MAX_S,
                t.timeout_s = BKM_TUNE_TIMEOUT_MAX_S;
            bkm_tune_strategy_spec_scale(&t, scale);
            ck_assert_msg(bkm_tune_trial_spec_validate(&t, &err) == BKM_OK, "scale %d: %s", scale, err.msg);
            ck_assert(t.min_samples >= base.min_samples);
        }
}
END_TEST

START_TEST(replay_synthetic_db)
{
    char dir[] = "/tmp/bkm_replay_XXXXXX", path[64];
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_sweep_t info;
    int64_t s1 = 0, s2 = 0;
    bkm_tune_replay_t r;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.sqlite", dir);
    ck_assert_int_eq(bkm_db_open(&db, path, BKM_DB_CREATE, &err), BKM_OK);
    memset(&info, 0, sizeof info);
    info.key = "0123456789abcdef";
    info.node = "n";
    info.workload = "w";
    ck_assert_int_eq(bkm_db_sweep_open(db, &info, 1, &s1, NULL, &err), BKM_OK);
    store(db, s1, "{\"threads\":2,\"default\":true}", 10);
    store(db, s1, "{\"threads\":1}", 5);
    store(db, s1, "{\"threads\":1,\"env\":{\"KMP_BLOCKTIME\":\"0\"}}", 8);
    store(db, s1, "{\"threads\":2,\"env\":{\"KMP_BLOCKTIME\":\"0\"}}", 12);
    /* a second pass, disturbed for threads=1: the first pass stays the oracle */
    ck_assert_int_eq(bkm_db_sweep_open(db, &info, 1, &s2, NULL, &err), BKM_OK);
    store(db, s2, "{\"threads\":1}", 20);
    store(db, s2, "{\"threads\":2,\"env\":{\"KMP_BLOCKTIME\":\"0\"}}", 11);

    /* the best-pass oracle: the least disturbed pass of each configuration */
    ck_assert_msg(bkm_tune_replay_run(db, 0, "grid", 4, 3, BKM_TUNE_REPLAY_BEST_PASS, &r, &err) == BKM_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(r.n_configs, 4);
    ck_assert_double_eq(r.best_ms, 5);
    ck_assert_uint_eq(r.n_runs, 3);
    for (size_t i = 0; i < r.n_runs; i++) {
        ck_assert_double_eq(r.runs[i].rel, 1.0);
        ck_assert_uint_eq(r.runs[i].found_at, 2);   /* the default, then threads=1 */
        ck_assert_uint_eq(r.runs[i].spent, 4);
    }
    ck_assert_uint_eq(r.n_within, 0);   /* 4 of 4 evaluations is more than 25% */
    bkm_tune_replay_free(&r);
    /* one evaluation (25%): only the default, 2x the best */
    ck_assert_int_eq(bkm_tune_replay_run(db, 0, "local", 1, 2, BKM_TUNE_REPLAY_BEST_PASS, &r, &err), BKM_OK);
    ck_assert_double_eq(r.runs[0].rel, 2.0);
    ck_assert_uint_eq(r.runs[0].spent, 1);
    ck_assert_uint_eq(r.n_within, 0);
    bkm_tune_replay_free(&r);
    /* one pass alone: the disturbed one */
    ck_assert_int_eq(bkm_tune_replay_run(db, s2, "grid", 0, 1, BKM_TUNE_REPLAY_UNSEEN_RUNS, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "default"));
    ck_assert_int_eq(bkm_tune_replay_run(db, 0, "annealing", 0, 1, BKM_TUNE_REPLAY_UNSEEN_RUNS, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "annealing"));
    ck_assert_int_eq(bkm_tune_replay_run(db, 0, "grid", 0, 1, 7, &r, &err), BKM_EINVAL);
    /* the honest oracle: each pass is a run; the truth is the median of a configuration's runs
     * (default 10, threads=1 {5, 20} -> 12.5, threads=1 KMP_BLOCKTIME=0 8, threads=2
     * KMP_BLOCKTIME=0 {12, 11} -> 11.5: the best is 8). Grid visits each configuration once and
     * sees one random run. When it draws threads=1's lucky run (5) it picks threads=1 and is
     * judged on the run it did not see (20): 2.5x the best; otherwise it picks the 8 ms setting,
     * whose only run it saw (judged on it: 1.0x). */
    ck_assert_msg(bkm_tune_replay_run(db, 0, "grid", 4, 20, BKM_TUNE_REPLAY_UNSEEN_RUNS, &r, &err) == BKM_OK, "%s",
                  err.msg);
    ck_assert_double_eq(r.best_ms, 8);
    ck_assert_double_eq_tol(r.default_rel, 10.0 / 8.0, 1e-12);
    ck_assert_uint_eq(r.runs_min, 1);
    ck_assert_uint_eq(r.runs_max, 2);
    {
        size_t lucky = 0, seen_only = 0;
        for (size_t i = 0; i < r.n_runs; i++) {
            if (r.runs[i].judged_on_unseen) {
                ck_assert_double_eq(r.runs[i].rel, 2.5);
                lucky++;
            } else {
                ck_assert_double_eq(r.runs[i].rel, 1.0);
                seen_only++;
            }
        }
        ck_assert_uint_gt(lucky, 0);
        ck_assert_uint_gt(seen_only, 0);
        ck_assert_uint_eq(r.n_judged_seen, seen_only);
    }
    bkm_tune_replay_free(&r);
    bkm_db_close(db);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* The unseen-runs oracle returns a configuration's runs without replacement (each once before any
 * again) and holds out half of them; the recording's verdict comes from its runs. */
static void replay_db(const char *path, const double *a, const double *b, int passes)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_sweep_t info;
    memset(&info, 0, sizeof info);
    info.key = "0123456789abcdef";
    info.node = "n";
    info.workload = "w";
    ck_assert_int_eq(bkm_db_open(&db, path, BKM_DB_CREATE, &err), BKM_OK);
    for (int p = 0; p < passes; p++) {
        int64_t id = 0;
        ck_assert_int_eq(bkm_db_sweep_open(db, &info, 1, &id, NULL, &err), BKM_OK);
        store(db, id, "{\"threads\":2,\"default\":true}", a[p]);
        store(db, id, "{\"threads\":1}", b[p]);
    }
    bkm_db_close(db);
}

/* grid over the recording of replay_db in @p dir (2 seeds); the file is removed again */
static void replay_grid(const char *dir, const double *a, const double *b, int passes, bkm_tune_replay_t *r)
{
    char path[96];
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    snprintf(path, sizeof path, "%s/g.sqlite", dir);
    replay_db(path, a, b, passes);
    ck_assert_int_eq(bkm_db_open(&db, path, BKM_DB_READONLY, &err), BKM_OK);
    ck_assert_msg(bkm_tune_replay_run(db, 0, "grid", 0, 2, BKM_TUNE_REPLAY_UNSEEN_RUNS, r, &err) == BKM_OK, "%s",
                  err.msg);
    bkm_db_close(db);
    unlink(path);
}

START_TEST(replay_draws_without_replacement_and_labels)
{
    char dir[] = "/tmp/bkm_replay_XXXXXX", path[96];
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_tune_replay_t r;
    /* threads=1 runs 1, 1.06, 1.16 ms (truth 1.06), the default 10: local measures the default,
     * then threads=1, then races the two (threads=1 three times in 6). One run of threads=1 is
     * held out and is the judge: the pick is judged on that run alone (1/1.06, 1 or 1.16/1.06 the
     * best), never on the mean of two */
    const double a3[] = {10, 10, 10}, b3[] = {1, 1.06, 1.16};
    /* threads=1 runs 1, 1000, 1000 ms (truth 1000), the default 10 (the best). With 4 evaluations
     * local measures the default, threads=1 and races the two: when threads=1's held-out run is a
     * 1000, its other two are 1 and 1000, and drawn without replacement the race sees both
     * whenever it re-measures threads=1, so it never picks threads=1 on a lucky 1 seen twice */
    const double ax[] = {10, 10, 10}, bx[] = {1, 1000, 1000};
    /* 4 passes, the fourth 1.5x slower for both configurations; a tight spread otherwise */
    const double a4[] = {10, 10.1, 10, 15}, b4[] = {5, 5.05, 5, 7.5};
    const double a4q[] = {10, 10.1, 10, 10.05}, b4q[] = {5, 5.05, 5, 5.02};
    size_t counts[3] = {0};
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.sqlite", dir);
    replay_db(path, a3, b3, 3);
    ck_assert_int_eq(bkm_db_open(&db, path, BKM_DB_READONLY, &err), BKM_OK);
    ck_assert_msg(bkm_tune_replay_run(db, 0, "local", 6, 30, BKM_TUNE_REPLAY_UNSEEN_RUNS, &r, &err) == BKM_OK,
                  "%s", err.msg);
    ck_assert_double_eq(r.best_ms, 1.06);
    for (size_t i = 0; i < r.n_runs; i++) {
        double ms = r.runs[i].rel * 1.06;
        int k = fabs(ms - 1) < 1e-9 ? 0 : fabs(ms - 1.06) < 1e-9 ? 1 : fabs(ms - 1.16) < 1e-9 ? 2 : -1;
        ck_assert(r.runs[i].judged_on_unseen);
        ck_assert_uint_eq(r.runs[i].spent, 6);
        ck_assert_msg(k >= 0, "seed %zu judged on %g ms, not on one run", i + 1, ms);
        counts[k]++;
    }
    ck_assert_uint_gt(counts[0], 0);
    ck_assert_uint_gt(counts[1], 0);
    ck_assert_uint_gt(counts[2], 0);
    ck_assert_uint_eq(r.judge_runs, 1);
    ck_assert_uint_eq(r.n_passes, 3);
    ck_assert_uint_eq(r.n_disturbed, 0);   /* passes at most sqrt(1.16) = 1.077x: not disturbed */
    {
        /* the pooled sd of log(run): threads=1's 2 degrees of freedom and the default's 2 (zero) */
        double m = (log(b3[0]) + log(b3[1]) + log(b3[2])) / 3, ss = 0;
        for (int k = 0; k < 3; k++)
            ss += (log(b3[k]) - m) * (log(b3[k]) - m);
        ck_assert_double_eq_tol(r.run_spread, sqrt(ss / 4), 1e-12);
    }
    /* a pick of the best itself, judged on one run, is > 5% off in 18% of seeds */
    ck_assert_double_eq_tol(r.judge_miss, 0.5 * erfc(log(1.05) / r.run_spread / sqrt(2.0)), 1e-12);
    ck_assert_double_gt(r.judge_miss, 0.10);
    ck_assert_str_eq(r.verdict, "judge-limited");
    ck_assert_uint_gt(r.passes_needed, 3);
    bkm_tune_replay_free(&r);
    bkm_db_close(db);
    unlink(path);

    snprintf(path, sizeof path, "%s/x.sqlite", dir);
    replay_db(path, ax, bx, 3);
    ck_assert_int_eq(bkm_db_open(&db, path, BKM_DB_READONLY, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_replay_run(db, 0, "local", 4, 40, BKM_TUNE_REPLAY_UNSEEN_RUNS, &r, &err), BKM_OK);
    ck_assert_double_eq(r.best_ms, 10);
    for (size_t i = 0; i < r.n_runs; i++)
        ck_assert_msg(r.runs[i].rel == 1.0 && r.runs[i].found_at == 1, "seed %zu: pick at %gx, found at %zu", i + 1,
                      r.runs[i].rel, r.runs[i].found_at);
    bkm_tune_replay_free(&r);
    bkm_db_close(db);
    unlink(path);
    /* a pass 1.5x slower as a whole: disturbed (the default is 2x the best: not flat) */
    replay_grid(dir, a4, b4, 4, &r);
    ck_assert_uint_eq(r.n_passes, 4);
    ck_assert_uint_eq(r.n_disturbed, 1);
    ck_assert_double_eq_tol(r.worst_pass, 1.5, 1e-12);
    ck_assert_uint_eq(r.judge_runs, 2);
    ck_assert_str_eq(r.verdict, "disturbed");
    bkm_tune_replay_free(&r);
    /* the same without the slow pass: eligible; and flat when the default is the best */
    replay_grid(dir, a4q, b4q, 4, &r);
    ck_assert_uint_eq(r.n_disturbed, 0);
    ck_assert_double_lt(r.judge_miss, 1e-6);
    ck_assert_uint_eq(r.passes_needed, 2);
    ck_assert_str_eq(r.verdict, "eligible");
    bkm_tune_replay_free(&r);
    replay_grid(dir, b4q, a4q, 4, &r);
    ck_assert_str_eq(r.verdict, "flat");
    bkm_tune_replay_free(&r);
    rmdir(dir);
}
END_TEST

static Suite *strategy_suite(void)
{
    Suite *s = suite_create("strategy");
    TCase *tc = tcase_create("synthetic");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, grid_visits_all_in_order);
    tcase_add_test(tc, random_is_seeded_permutation);
    tcase_add_test(tc, budget_is_respected);
    tcase_add_test(tc, local_descends_to_separable_minimum);
    tcase_add_test(tc, local_race_rejects_a_lucky_process);
    tcase_add_test(tc, halving_remeasures_survivors);
    tcase_add_test(tc, failed_trials_never_win);
    tcase_add_test(tc, unknown_strategy_named);
    tcase_add_test(tc, spec_limits_match_validator);
    tcase_add_test(tc, scaled_spec_grows_and_stays_valid);
    suite_add_tcase(s, tc);
    tc = tcase_create("replay");
    tcase_add_test(tc, replay_synthetic_db);
    tcase_add_test(tc, replay_draws_without_replacement_and_labels);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(strategy_suite)
