/* SPDX-License-Identifier: MIT */
/* Test helper: writes a bkm results database through the library, for the CLI tests.
 *   results_fixture PATH NODE WORKLOAD N_TRIALS [best|crash]
 * One sweep with N_TRIALS trials ({"threads": i, "affinity": "compact"}, 5 samples each, every
 * 4th one crashed) and, with "best", a best-known setting; with "crash" the process exits without
 * closing the database, as a killed sweep does: the trials stay in PATH-wal, not yet in PATH.
 * Exit 0 ok, 2 bad usage, 3 error. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bkm/results.h"

static int fill(bkm_db_t *db, const char *node, const char *workload, long long n, int best, bkm_err_t *err)
{
    char key[17], cfg[96];
    int64_t sweep = 0;
    int ret;
    bkm_db_sweep_t s = {.key = key, .command = "results_fixture", .node = node, .workload = workload,
                        .strategy = "exhaustive", .git_revision = BKM_GIT_REVISION};
    if ((ret = bkm_db_sweep_key("{\"threads\":[1,2,4]}", node, workload, key, err)) < 0 ||
        (ret = bkm_db_sweep_open(db, &s, 0, &sweep, NULL, err)) < 0)
        return ret;
    for (long long i = 0; i < n; i++) {
        double ms[5];
        bkm_db_trial_t t;
        bkm_db_trial_init(&t);
        for (int k = 0; k < 5; k++)
            ms[k] = 20.0 - (double)i + 0.01 * k;
        snprintf(cfg, sizeof cfg, "{\"threads\": %lld, \"affinity\": \"compact\"}", i + 1);
        t.sweep_id = sweep;
        t.config_json = cfg;
        t.status = i % 4 == 3 ? BKM_TRIAL_CRASHED : BKM_TRIAL_OK;
        t.error = t.status ? "killed by SIGSEGV" : NULL;
        t.samples_ms = ms;
        t.n_samples = 5;
        t.median_ms = ms[2];
        t.min_ms = ms[0];
        t.ci_lo_ms = ms[0];
        t.ci_hi_ms = ms[4];
        if ((ret = bkm_db_trial_insert(db, &t, NULL, NULL, err)) < 0)
            return ret;
    }
    if ((ret = bkm_db_sweep_finish(db, sweep, "done", err)) < 0 || !best)
        return ret;
    bkm_db_best_t b = {.node = node, .workload = workload, .sweep_id = sweep,
                       .config_json = "{\"threads\":2,\"affinity\":\"compact\"}", .median_ms = 19.0, .ci_lo_ms = 18.9,
                       .ci_hi_ms = 19.1, .default_median_ms = 20.0, .speedup = 20.0 / 19.0, .significant = 1,
                       .evidence_json = "{\"p\":0.0002,\"n\":[12,12]}"};
    return bkm_db_best_store(db, &b, err);
}

int main(int argc, char **argv)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    long long n = 0;
    int ret;
    if (argc < 5 || bkm_parse_int(argv[4], 0, 100000, &n) < 0) {
        fprintf(stderr, "usage: results_fixture PATH NODE WORKLOAD N_TRIALS [best|crash]\n");
        return 2;
    }
    if ((ret = bkm_db_open(&db, argv[1], BKM_DB_CREATE, &err)) == BKM_OK)
        ret = fill(db, argv[2], argv[3], n, argc > 5 && strcmp(argv[5], "best") == 0, &err);
    if (ret == BKM_OK && argc > 5 && strcmp(argv[5], "crash") == 0)
        _exit(0);   /* no close: no checkpoint */
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "results_fixture: %s\n", err.msg);
        return 3;
    }
    return 0;
}
