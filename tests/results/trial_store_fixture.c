/* SPDX-License-Identifier: MIT */
/* Test helper: runs the fake worker (tests/tuner/fake_worker.c) in mode MODE through the trial
 * runner and stores the outcome in DB as a sweep's trial, the way tune's sweep stores one
 * (status, message, stderr tail, exit info, samples), for the CLI tests of what bkm writes.
 *   trial_store_fixture FAKE_WORKER DB MODE HOSTNAME
 * Exit 0 stored, 2 bad usage, 3 error. */
#include <stdio.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"

int main(int argc, char **argv)
{
    static char *const env[] = {"PATH=/usr/bin:/bin", "ASAN_OPTIONS=detect_leaks=0", NULL};
    bkm_tune_runner_t rn = {0};
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t r = {0};
    bkm_db_t *db = NULL;
    bkm_db_trial_t t;
    bkm_db_host_t host = {0};
    bkm_db_sweep_t sw = {.key = "0123456789abcdef", .command = "trial_store_fixture", .node = "knl",
                         .workload = "gemm", .strategy = "grid", .git_revision = BKM_GIT_REVISION};
    bkm_err_t err = {0};
    char kv[96], cfg[96], exit_info[64];
    int64_t sweep = 0;
    int ret;
    if (argc != 5) {
        fprintf(stderr, "usage: trial_store_fixture FAKE_WORKER DB MODE HOSTNAME\n");
        return 2;
    }
    rn.worker_path = argv[1];
    rn.environ = env;
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    snprintf(kv, sizeof kv, "mode=%s", argv[3]);
    host.hostname = argv[4];
    host.cpu_model = argv[4];
    if ((ret = bkm_tune_trial_spec_param(&spec, kv, &err)) < 0 ||
        (ret = bkm_tune_trial_run(&rn, &spec, &r, &err)) < 0 ||
        (ret = bkm_db_open(&db, argv[2], BKM_DB_CREATE, &err)) < 0 ||
        (ret = bkm_db_host_upsert(db, &host, &sw.host_id, &err)) < 0 ||
        (ret = bkm_db_sweep_open(db, &sw, 0, &sweep, NULL, &err)) < 0)
        goto out;
    bkm_db_trial_init(&t);
    t.sweep_id = sweep;
    snprintf(cfg, sizeof cfg, "{\"mode\":\"%s\"}", argv[3]);
    t.config_json = cfg;
    t.status = r.status;
    t.error = r.message[0] ? r.message : NULL;
    t.stderr_tail = r.stderr_tail[0] ? r.stderr_tail : NULL;
    snprintf(exit_info, sizeof exit_info, "exit %d", r.exit_code);
    t.exit_info = exit_info;
    t.samples_ms = r.samples_ms;
    t.n_samples = r.samples_ms ? (size_t)r.n_samples : 0;
    t.median_ms = r.median_ms;
    ret = bkm_db_trial_insert(db, &t, NULL, NULL, &err);
out:
    bkm_db_close(db);
    bkm_tune_trial_result_free(&r);
    if (ret < 0) {
        fprintf(stderr, "trial_store_fixture: %s\n", err.msg);
        return 3;
    }
    return 0;
}
