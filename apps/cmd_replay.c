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
            "usage: tune replay --db DB [--strategy S] [--budget N] [--seeds K] [--sweep ID] [--require M] [--json]\n\n"
            "Runs strategy S K times (seeds 1..K) against an exhaustive sweep already stored in DB, without\n"
            "running any trial: the stored trials are the oracle. Each evaluation returns the median of a\n"
            "seeded bootstrap resample of that configuration's stored samples (realistic noise; halving's\n"
            "3x re-measurements resample 3x as many). For each seed it reports how close the strategy's\n"
            "pick is to the exhaustive best (by the stored medians) and after how many evaluations the\n"
            "pick was first measured; then how many seeds ended within 5%% of the best using at most 25%%\n"
            "of the exhaustive sweep's evaluations. DB is opened read-only: nothing is modified or created\n"
            "next to it.\n\n"
            "options:\n"
            "  --db DB        results database holding the exhaustive sweep (required)\n"
            "  --strategy S   grid, random, halving, local (default %s)\n"
            "  --budget N     trials per replay (default: 25%% of the configurations)\n"
            "  --seeds K      number of seeded replays (default 50)\n"
            "  --sweep ID     the sweep to replay (default: the one with the most ok trials)\n"
            "  --require M    exit 1 unless at least M seeds meet the bar (within 5%%, <= 25%% evaluations)\n"
            "  --json         print the per-seed results and the summary as JSON\n"
            "  -h, --help     this help\n\n"
            "example:\n"
            "  tune replay --db tests/tuner/data/gemm.sqlite --strategy local --seeds 50 --require 45\n\n"
            "exit codes: 0 replayed (and the bar met with --require), 1 the bar was missed,\n"
            "            2 bad usage or no such sweep, 3 the database is missing or not a bkm database\n",
            BKM_TUNE_STRATEGY_DEFAULT);
}

static void print_result(const bkm_tune_replay_t *r, const char *strategy, int json)
{
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
        bkm_json_key(&w, "configs"), bkm_json_int(&w, (int64_t)r->n_configs);
        bkm_json_key(&w, "best_ms"), bkm_json_double(&w, r->best_ms);
        bkm_json_key(&w, "runs");
        bkm_json_arr_begin(&w);
        for (size_t i = 0; i < r->n_runs; i++) {
            bkm_json_obj_begin(&w);
            bkm_json_key(&w, "seed"), bkm_json_int(&w, (int64_t)r->runs[i].seed);
            bkm_json_key(&w, "rel_to_best"), bkm_json_double(&w, r->runs[i].rel);
            bkm_json_key(&w, "found_at"), bkm_json_int(&w, (int64_t)r->runs[i].found_at);
            bkm_json_key(&w, "spent"), bkm_json_int(&w, (int64_t)r->runs[i].spent);
            bkm_json_obj_end(&w);
        }
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "within"), bkm_json_int(&w, (int64_t)r->n_within);
        bkm_json_key(&w, "seeds"), bkm_json_int(&w, (int64_t)r->n_runs);
        bkm_json_obj_end(&w);
        printf("%s\n", bkm_buf_str(&out));
        bkm_buf_free(&out);
        return;
    }
    printf("replay of sweep %lld (%s on %s): %zu configurations, exhaustive best %.4g ms; strategy %s\n",
           (long long)r->sweep_id, r->workload, r->node, r->n_configs, r->best_ms, strategy);
    for (size_t i = 0; i < r->n_runs; i++)
        printf("  seed %3llu: pick at %.4fx the best (%+.1f%%), found after %zu evaluations, %zu spent\n",
               (unsigned long long)r->runs[i].seed, r->runs[i].rel, (r->runs[i].rel - 1) * 100, r->runs[i].found_at,
               r->runs[i].spent);
    printf("%zu/%zu seeds within 5%% of the exhaustive best using <= 25%% of the evaluations (<= %.0f of %zu)\n",
           r->n_within, r->n_runs, 0.25 * (double)r->n_configs, r->n_configs);
}

int bkm_cli_replay(int argc, char **argv)
{
    const char *db_path = NULL, *strategy = BKM_TUNE_STRATEGY_DEFAULT;
    long long budget = 0, seeds = 50, sweep = 0, require = -1;
    int json = 0, rc;
    bkm_db_t *db = NULL;
    bkm_tune_replay_t r;
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
    if ((rc = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) < 0)
        goto fail;
    if ((rc = bkm_tune_replay_run(db, sweep, strategy, (size_t)budget, (size_t)seeds, &r, &err)) < 0)
        goto fail;
    print_result(&r, strategy, json);
    rc = require > 0 && (long long)r.n_within < require ? 1 : 0;
    bkm_tune_replay_free(&r);
    bkm_db_close(db);
    return rc;
fail:
    fprintf(stderr, "tune replay: %s\n", err.msg);
    bkm_db_close(db);
    return bkm_status_exit_code(rc);
}
