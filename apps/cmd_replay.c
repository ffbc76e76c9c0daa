/* SPDX-License-Identifier: MIT */
/* `tune replay`: evaluate a search strategy against an exhaustive sweep stored in a database,
 * without running anything (bkm_tune_replay_run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"

const char bkm_cli_replay_summary[] = "replay a search strategy against an exhaustive sweep stored in a database";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune replay --db DB [--strategy S] [--budget N] [--seeds K] [--sweep ID] [--oracle O]\n"
            "                   [--require M] [--json]\n\n"
            "Runs strategy S K times (seeds 1..K) against an exhaustive sweep already stored in DB, without\n"
            "running any trial: the stored trials are the oracle, one run (worker process) per pass of the\n"
            "exhaustive sweep. Each evaluation returns the median of ONE run of that configuration drawn at\n"
            "random (the run-to-run spread is visible); the strategy's pick is judged on the runs of that\n"
            "configuration it did not see. For each seed it reports how close the pick is to the\n"
            "exhaustive best and after how many evaluations it was first measured; then how many seeds\n"
            "ended within 5%% of the best using at most 25%% of the evaluations, and the median result\n"
            "against random search's at the same budget and seeds. A recording where the default is\n"
            "within 5%% of the best is labelled flat (every strategy looks good there). DB is opened\n"
            "read-only: nothing is modified or created next to it.\n\n"
            "options:\n"
            "  --db DB        results database holding the exhaustive sweep (required)\n"
            "  --strategy S   grid, random, halving, local (default %s)\n"
            "  --budget N     trials per replay (default: 25%% of the configurations)\n"
            "  --seeds K      number of seeded replays (default 50)\n"
            "  --sweep ID     the sweep to replay (default: the one with the most ok trials)\n"
            "  --oracle O     unseen-runs (default, above) or best-pass (the older oracle: per configuration\n"
            "                 only its least disturbed pass, bootstrap-resampled, and the pick judged on it)\n"
            "  --require M    exit 1 unless at least M seeds meet the bar (within 5%%, <= 25%% evaluations)\n"
            "                 and, on a recording that is not flat, the median result beats random search's\n"
            "  --json         print the per-seed results and the summary as JSON\n"
            "  -h, --help     this help\n\n"
            "example:\n"
            "  tune replay --db tests/tuner/data/gemm.sqlite --strategy local --seeds 50 --require 45\n\n"
            "exit codes: 0 replayed (and the bar met with --require), 1 the bar was missed,\n"
            "            2 bad usage or no such sweep, 3 the database is missing or not a bkm database\n",
            BKM_TUNE_STRATEGY_DEFAULT);
}

static void print_result(const bkm_tune_replay_t *r, const char *strategy, const char *oracle_name,
                         const bkm_tune_replay_t *rnd, int json)
{
    int flat = r->default_rel <= 1.05;
    if (json) {
        bkm_buf_t out;
        bkm_json_w_t w;
        bkm_buf_init(&out);
        bkm_json_w_init(&w, &out, 1);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "sweep"), bkm_json_int(&w, r->sweep_id);
        bkm_json_key(&w, "node"), bkm_json_str(&w, r->node);
        bkm_json_key(&w, "workload"), bkm_json_str(&w, r->workload);
        bkm_json_key(&w, "strategy"), bkm_json_str(&w, strategy);
        bkm_json_key(&w, "oracle"), bkm_json_str(&w, oracle_name);
        bkm_json_key(&w, "configs"), bkm_json_int(&w, (int64_t)r->n_configs);
        bkm_json_key(&w, "best_ms"), bkm_json_double(&w, r->best_ms);
        bkm_json_key(&w, "runs_per_config");
        bkm_json_arr_begin(&w);
        bkm_json_int(&w, (int64_t)r->runs_min), bkm_json_int(&w, (int64_t)r->runs_max);
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "default_rel_to_best"), bkm_json_double(&w, r->default_rel);
        bkm_json_key(&w, "flat"), bkm_json_bool(&w, flat);
        bkm_json_key(&w, "budget"), bkm_json_int(&w, (int64_t)r->budget);
        bkm_json_key(&w, "runs");
        bkm_json_arr_begin(&w);
        for (size_t i = 0; i < r->n_runs; i++) {
            bkm_json_obj_begin(&w);
            bkm_json_key(&w, "seed"), bkm_json_int(&w, (int64_t)r->runs[i].seed);
            bkm_json_key(&w, "rel_to_best"), bkm_json_double(&w, r->runs[i].rel);
            bkm_json_key(&w, "found_at"), bkm_json_int(&w, (int64_t)r->runs[i].found_at);
            bkm_json_key(&w, "spent"), bkm_json_int(&w, (int64_t)r->runs[i].spent);
            bkm_json_key(&w, "judged_on_unseen_runs"), bkm_json_bool(&w, r->runs[i].judged_on_unseen);
            bkm_json_obj_end(&w);
        }
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "within"), bkm_json_int(&w, (int64_t)r->n_within);
        bkm_json_key(&w, "seeds"), bkm_json_int(&w, (int64_t)r->n_runs);
        bkm_json_key(&w, "median_rel"), bkm_json_double(&w, r->median_rel);
        bkm_json_key(&w, "random_median_rel");
        if (rnd)
            bkm_json_double(&w, rnd->median_rel);
        else
            bkm_json_null(&w);
        bkm_json_obj_end(&w);
        printf("%s\n", bkm_buf_str(&out));
        bkm_buf_free(&out);
        return;
    }
    printf("replay of sweep %lld (%s on %s): %zu configurations, %zu-%zu runs each, exhaustive best %.4g ms, the "
           "default at %.3fx%s; strategy %s, budget %zu, oracle %s\n",
           (long long)r->sweep_id, r->workload, r->node, r->n_configs, r->runs_min, r->runs_max, r->best_ms,
           r->default_rel, flat ? " (flat: the default is within 5% of the best)" : "", strategy, r->budget, oracle_name);
    for (size_t i = 0; i < r->n_runs; i++)
        printf("  seed %3llu: pick at %.4fx the best (%+.1f%%, on %s runs), found after %zu evaluations, %zu spent\n",
               (unsigned long long)r->runs[i].seed, r->runs[i].rel, (r->runs[i].rel - 1) * 100,
               r->runs[i].judged_on_unseen ? "unseen" : "seen", r->runs[i].found_at, r->runs[i].spent);
    if (rnd)
        printf("median pick %.4fx the best; random search at the same budget and seeds: %.4fx (%s)\n", r->median_rel,
               rnd->median_rel, r->median_rel < rnd->median_rel ? "beaten" : flat ? "not beaten; flat recording"
                                                                                 : "NOT beaten");
    if (r->n_judged_seen)
        printf("%zu seeds had seen every run of their pick: judged on those\n", r->n_judged_seen);
    printf("%zu/%zu seeds within 5%% of the exhaustive best using <= 25%% of the evaluations (<= %.0f of %zu)\n",
           r->n_within, r->n_runs, 0.25 * (double)r->n_configs, r->n_configs);
}

int bkm_cli_replay(int argc, char **argv)
{
    const char *db_path = NULL, *strategy = BKM_TUNE_STRATEGY_DEFAULT, *oracle_name = "unseen-runs";
    long long budget = 0, seeds = 50, sweep = 0, require = -1;
    int json = 0, rc, oracle;
    bkm_db_t *db = NULL;
    bkm_tune_replay_t r, rnd;
    int have_rnd = 0;
    bkm_err_t err = {0};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long *num = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "tune replay: unknown option or missing value: '%s' (see tune replay --help)\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--db") == 0)
            db_path = v;
        else if (strcmp(a, "--strategy") == 0)
            strategy = v;
        else if (strcmp(a, "--oracle") == 0)
            oracle_name = v;
        else if (strcmp(a, "--budget") == 0)
            num = &budget;
        else if (strcmp(a, "--seeds") == 0)
            num = &seeds;
        else if (strcmp(a, "--sweep") == 0)
            num = &sweep;
        else if (strcmp(a, "--require") == 0)
            num = &require;
        else {
            fprintf(stderr, "tune replay: unknown option '%s' (see tune replay --help)\n", a);
            return 2;
        }
        if (num && bkm_parse_int(v, 1, 1000000, num) < 0) {
            fprintf(stderr, "tune replay: %s '%s' is not a number in 1..1000000\n", a, v);
            return 2;
        }
    }
    if (db_path == NULL) {
        fprintf(stderr, "tune replay: --db is required (see tune replay --help)\n");
        return 2;
    }
    {
        const char *const *nm = bkm_tune_strategy_names();
        while (*nm && strcmp(*nm, strategy) != 0)
            nm++;
        if (*nm == NULL) {
            fprintf(stderr, "tune replay: --strategy '%s' is unknown (grid, random, halving, local)\n", strategy);
            return 2;
        }
    }
    if (!bkm_cli_db_check("replay", db_path))
        return 2;
    if (strcmp(oracle_name, "unseen-runs") == 0) {
        oracle = BKM_TUNE_REPLAY_UNSEEN_RUNS;
    } else if (strcmp(oracle_name, "best-pass") == 0) {
        oracle = BKM_TUNE_REPLAY_BEST_PASS;
    } else {
        fprintf(stderr, "tune replay: --oracle '%s' is unknown (unseen-runs, best-pass)\n", oracle_name);
        return 2;
    }
    if ((rc = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) < 0)
        goto fail;
    if ((rc = bkm_tune_replay_run(db, sweep, strategy, (size_t)budget, (size_t)seeds, oracle, &r, &err)) < 0)
        goto fail;
    /* random search at the same budget and seeds: the baseline every strategy must beat */
    if (strcmp(strategy, "random") != 0) {
        if ((rc = bkm_tune_replay_run(db, r.sweep_id, "random", r.budget, (size_t)seeds, oracle, &rnd, &err)) < 0) {
            bkm_tune_replay_free(&r);
            goto fail;
        }
        have_rnd = 1;
    }
    print_result(&r, strategy, oracle_name, have_rnd ? &rnd : NULL, json);
    rc = require > 0 && ((long long)r.n_within < require ||
                         (r.default_rel > 1.05 && have_rnd && !(r.median_rel < rnd.median_rel))) ? 1 : 0;
    bkm_tune_replay_free(&r);
    if (have_rnd)
        bkm_tune_replay_free(&rnd);
    bkm_db_close(db);
    return rc;
fail:
    fprintf(stderr, "tune replay: %s\n", err.msg);
    bkm_db_close(db);
    return bkm_status_exit_code(rc);
}
