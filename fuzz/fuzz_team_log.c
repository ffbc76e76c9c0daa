/* SPDX-License-Identifier: MIT */
/* libFuzzer target of the team log reader (bkm/program.h): a log is data a program could have
 * written, so any bytes must parse without a crash, and the report built from them, its check
 * against a plan and both JSON evidences must be valid whatever the records say. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/program.h"

#define FUZZ_PLAN_MAX 64

static void json_must_parse(const bkm_buf_t *b)
{
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    if (b->oom)
        return;
    if (bkm_json_parse(bkm_buf_str(b), &j, &err) != BKM_OK)
        abort();   /* the report wrote invalid JSON */
    bkm_json_free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bkm_prog_log_t log;
    bkm_prog_report_t *r = NULL;
    bkm_prog_check_t *c = NULL;
    bkm_cpuset_t plan[FUZZ_PLAN_MAX];
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    const bkm_prog_team_t *m;
    int n;
    memset(&log, 0, sizeof log);
    if (bkm_prog_log_parse(&log, (const char *)data, size, &err) != BKM_OK || log.n == 0)
        goto out;
    if (bkm_prog_report_build(NULL, &log, log.rec[0].pid, &r, &err) != BKM_OK)
        goto out;
    m = bkm_prog_report_main_team(r);
    n = m == NULL ? 2 : m->size < FUZZ_PLAN_MAX ? m->size : FUZZ_PLAN_MAX;
    for (int i = 0; i < n; i++) {
        bkm_cpuset_zero(&plan[i]);
        bkm_cpuset_set(&plan[i], i);
    }
    if (bkm_prog_report_check(r, plan, n, NULL, &c, &err) != BKM_OK)
        abort();   /* a valid plan is always checked */
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_prog_report_binding_json(r, c, &w);
    json_must_parse(&b);
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_prog_report_noise_json(r, 0, &w);
    json_must_parse(&b);
    bkm_buf_free(&b);
out:
    bkm_prog_check_free(c);
    bkm_prog_report_free(r);
    bkm_prog_log_free(&log);
    return 0;
}
