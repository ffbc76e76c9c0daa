/* SPDX-License-Identifier: MIT */
/* `tune replay`: evaluate a search strategy against an exhaustive sweep stored in a database,
 * without running anything (bkm_tune_replay_run). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_replay_summary[] = "replay a search strategy against an exhaustive sweep stored in a database";

typedef struct replay_opts {
    const char *db, *strategy, *oracle;
    long long budget, seeds, sweep, require;
    int json;
} replay_opts_t;

static const bkm_cli_opt_t replay_table[] = {
    {.name = "db", .kind = BKM_CLI_STR, .metavar = "DB", .off = offsetof(replay_opts_t, db),
     .help = "results database holding the exhaustive sweep", .example = "x.sqlite",
     .flags = BKM_CLI_REQUIRED},
    {.name = "strategy", .kind = BKM_CLI_CALL, .metavar = "S", .call = bkm_cli_opt_strategy,
     .off = offsetof(replay_opts_t, strategy),
     .help = "grid, random, halving, local (default " BKM_TUNE_STRATEGY_DEFAULT ")", .example = "grid"},
    {.name = "budget", .kind = BKM_CLI_I64, .metavar = "N", .off = offsetof(replay_opts_t, budget), .lo = 1,
     .hi = 1000000, .help = "trials per replay (default: 25% of the configurations)"},
    {.name = "seeds", .kind = BKM_CLI_I64, .metavar = "K", .off = offsetof(replay_opts_t, seeds), .lo = 1,
     .hi = 1000000, .help = "number of seeded replays (default 50)"},
    {.name = "sweep", .kind = BKM_CLI_I64, .metavar = "ID", .off = offsetof(replay_opts_t, sweep), .lo = 1,
     .hi = 1000000, .help = "the sweep to replay (default: the one with the most ok trials)"},
    {.name = "oracle", .kind = BKM_CLI_CHOICE, .metavar = "O", .off = offsetof(replay_opts_t, oracle),
     .choices = "unseen-runs|best-pass",
     .help = "unseen-runs (default, above) or best-pass (the older oracle: per configuration\n"
             "only its least disturbed pass, bootstrap-resampled, and the pick judged on it)"},
    {.name = "require", .kind = BKM_CLI_I64, .metavar = "M", .off = offsetof(replay_opts_t, require), .lo = 1,
     .hi = 1000000,
     .help = "exit 1 unless at least M seeds meet the bar (within 5%, <= 25% evaluations)\n"
             "and, on a recording that is not flat, the median result beats random search's"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(replay_opts_t, json),
     .help = "print the per-seed results and the summary as JSON"},
};

static const bkm_cli_cmd_spec_t replay_cmd = {
    .name = "replay",
    .usage = "tune replay --db DB [--strategy S] [--budget N] [--seeds K] [--sweep ID] [--oracle O]\n"
             "            [--require M] [--json]",
    .about = "Runs strategy S K times (seeds 1..K) against an exhaustive sweep already stored in DB, without\n"
             "running any trial: the stored trials are the oracle, one run (worker process) per pass of the\n"
             "exhaustive sweep. Each evaluation returns the median of ONE run of that configuration (the\n"
             "run-to-run spread is visible; its runs in a seeded random order, each once before any again)\n"
             "among those not held out: per seed half of each configuration's runs (rounded down) are held\n"
             "out, and the strategy's pick is judged on its held-out runs (never returned to it). For\n"
             "each seed it reports how close the pick is to the exhaustive best and after how many\n"
             "evaluations it was first measured; then how many seeds ended within 5% of the best using\n"
             "at most 25% of the evaluations, and the median result against random search's at the same\n"
             "budget, seeds and oracle. The line 'recording:' says what the recording can test: flat\n"
             "(the default is within 5% of the best: every strategy looks good there), disturbed (a pass\n"
             "whose runs were typically > 1.10x the fastest run of their configuration), judge-limited\n"
             "(the run-to-run spread is so wide that a pick of the best configuration itself would be\n"
             "judged > 5% off in > 10% of the seeds: no strategy can meet 45/50; it says how many passes\n"
             "would do), else eligible. DB is opened read-only: nothing is modified or created next to it.",
    BKM_CLI_TABLE(replay_table),
    .more = "example (the recordings of tests/tuner/data are SQL text: load one first):\n"
            "  sqlite3 /tmp/gemm.sqlite < tests/tuner/data/gemm.sql\n"
            "  tune replay --db /tmp/gemm.sqlite --strategy local --seeds 50 --require 45\n\n"
            "exit codes: 0 replayed (and the bar met with --require), 1 the bar was missed,\n"
            "            2 bad usage or no such sweep, 3 the database is missing or not a bkm database\n",
};

static void print_result(const bkm_tune_replay_t *r, const char *strategy, const char *oracle_name,
                         const bkm_tune_replay_t *rnd, int json)
{
    int flat = r->default_rel <= 1.05;
    char spread[64];
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
        bkm_json_key(&w, "run_spread_log_sd");
        if (isnan(r->run_spread))
            bkm_json_null(&w);
        else
            bkm_json_double(&w, r->run_spread);
        bkm_json_key(&w, "judge_runs_min"), bkm_json_int(&w, (int64_t)r->judge_runs);
        bkm_json_key(&w, "judge_miss_of_best"), bkm_json_double(&w, r->judge_miss);
        bkm_json_key(&w, "passes_needed"), bkm_json_int(&w, (int64_t)r->passes_needed);
        bkm_json_key(&w, "passes"), bkm_json_int(&w, (int64_t)r->n_passes);
        bkm_json_key(&w, "passes_disturbed"), bkm_json_int(&w, (int64_t)r->n_disturbed);
        bkm_json_key(&w, "worst_pass_rel"), bkm_json_double(&w, r->worst_pass);
        bkm_json_key(&w, "recording"), bkm_json_str(&w, r->verdict);
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
           r->default_rel, flat ? " (flat: the default is within 5% of the best)" : "", strategy, r->budget,
           oracle_name);
    for (size_t i = 0; i < r->n_runs; i++)
        printf("  seed %3llu: pick at %.4fx the best (%+.1f%%, on %s runs), found after %zu evaluations, %zu spent\n",
               (unsigned long long)r->runs[i].seed, r->runs[i].rel, (r->runs[i].rel - 1) * 100,
               r->runs[i].judged_on_unseen ? "unseen" : "seen", r->runs[i].found_at, r->runs[i].spent);
    if (rnd)
        printf("median pick %.4fx the best; random search at the same budget and seeds: %.4fx (%s)\n", r->median_rel,
               rnd->median_rel, r->median_rel < rnd->median_rel ? "beaten" : flat ? "not beaten; flat recording"
                                                                                 : "NOT beaten");
    if (isnan(r->run_spread))
        snprintf(spread, sizeof spread, "unknown: one run per configuration");
    else
        snprintf(spread, sizeof spread, "sd of log(run) %.3f", r->run_spread);
    printf("recording: %s (run-to-run spread: %s; the pick judged on >= %zu unseen run(s): a pick "
           "of the best itself judged > 5%% off in %.1f%% of seeds%s; %zu of %zu passes disturbed, worst %.2fx the "
           "fastest runs)\n",
           r->verdict, spread, r->judge_runs, 100 * r->judge_miss,
           r->judge_miss > 0.10 ? ": the bar is out of reach of any strategy" : "", r->n_disturbed, r->n_passes,
           r->worst_pass);
    if (r->judge_miss > 0.10 && r->passes_needed)
        printf("  (a judge missing a perfect pick in <= 10%% of seeds needs >= %zu passes per configuration)\n",
               r->passes_needed);
    if (r->n_judged_seen)
        printf("%zu seeds had seen every run of their pick: judged on those\n", r->n_judged_seen);
    printf("%zu/%zu seeds within 5%% of the exhaustive best using <= 25%% of the evaluations (<= %.0f of %zu)\n",
           r->n_within, r->n_runs, 0.25 * (double)r->n_configs, r->n_configs);
}

int bkm_cli_replay(int argc, char **argv)
{
    replay_opts_t o = {.strategy = BKM_TUNE_STRATEGY_DEFAULT, .oracle = "unseen-runs", .seeds = 50, .require = -1};
    const char *db_path, *strategy, *oracle_name;
    long long budget, seeds, sweep, require;
    int rc, oracle;
    bkm_db_t *db = NULL;
    bkm_tune_replay_t r, rnd;
    int have_rnd = 0;
    bkm_err_t err = {0};

    if (bkm_cli_opt_parse_cmd(&replay_cmd, argc, argv, &o, &rc))
        return rc;
    db_path = o.db;
    strategy = o.strategy;
    oracle_name = o.oracle;
    budget = o.budget;
    seeds = o.seeds;
    sweep = o.sweep;
    require = o.require;
    if (!bkm_cli_db_check("replay", db_path))
        return 2;
    oracle = strcmp(oracle_name, "best-pass") == 0 ? BKM_TUNE_REPLAY_BEST_PASS : BKM_TUNE_REPLAY_UNSEEN_RUNS;
    if ((rc = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) < 0)
        goto fail;
    if ((rc = bkm_tune_replay_run(db, sweep, strategy, (size_t)budget, (size_t)seeds, oracle, &r, &err)) < 0)
        goto fail;
    /* random search at the same budget and seeds, against the same oracle (the same sweep
     * selection: with no --sweep, the passes pooled): the baseline every strategy must beat */
    if (strcmp(strategy, "random") != 0) {
        if ((rc = bkm_tune_replay_run(db, sweep, "random", r.budget, (size_t)seeds, oracle, &rnd, &err)) < 0) {
            bkm_tune_replay_free(&r);
            goto fail;
        }
        have_rnd = 1;
    }
    print_result(&r, strategy, oracle_name, have_rnd ? &rnd : NULL, o.json);
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
