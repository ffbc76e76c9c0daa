/* SPDX-License-Identifier: MIT */
/* The binding proof of a PyTorch training loop on Debian's python3-torch (which links GNU libgomp):
 * with OMP_NUM_THREADS=2 OMP_PLACES=cores OMP_PROC_BIND=close the OpenMP team is Python's main
 * thread as thread 0 and one libgomp worker, bound to the first two cores in that order (found
 * through libtorch's own GOMP_parallel calls, which the shim interposes); a plan in the other order
 * is a mismatch; PyTorch's other threads are not the team. Skips (77) without python3-torch. */
#include "bkm_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch.h"

#define PYTHON "/usr/bin/python3"

static bkm_cpuset_t allowed;

START_TEST(torch_team_bound_close)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "OMP_PLACES=cores", "OMP_PROC_BIND=close", NULL};
    char *argv[] = {PYTHON, BKM_TORCH_SCRIPT, "2s", NULL};
    watch_opts_t o = {BKM_TEAM_SHIM, NULL, env, 20, 240};
    bkm_cpuset_t place[2], plan[2];
    watch_result_t res;
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    const bkm_prog_team_t *m;
    bkm_buf_t b;
    bkm_json_w_t w;
    watch_core_places(&allowed, place);
    ck_assert_int_eq(watch_run(argv, &o, &res), 0);
    fprintf(stderr, "torch: exit %d, %d samples, %.0f us a pass, %d threads; %s", res.status,
            bkm_prog_sampler_samples(res.s), (double)bkm_prog_sampler_pass_ns(res.s) * 1e-3,
            bkm_prog_report_n_threads(res.r), res.out);
    ck_assert_int_eq(res.status, 0);
    ck_assert_ptr_nonnull(strstr(res.out, "threads 2 steps "));
    ck_assert_ptr_nonnull(strstr(res.out, " millisecond"));
    m = bkm_prog_report_main_team(res.r);
    plan[0] = place[0], plan[1] = place[1];
    ck_assert_int_eq(bkm_prog_report_check(res.r, plan, 2, NULL, &c, &err), BKM_OK);
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 1);
    bkm_prog_report_binding_json(res.r, c, &w);
    if (m == NULL || c->verdict != BKM_PROG_MATCH)
        fprintf(stderr, "%s\n", bkm_buf_str(&b));
    bkm_buf_free(&b);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->api, BKM_PROG_API_GOMP);
    ck_assert_str_eq(m->rt, "libgomp.so.1");
    ck_assert_int_eq(m->size, 2);
    ck_assert_int_eq(m->tid[0], res.pid);   /* Python's main thread is thread 0 */
    ck_assert_int_eq(bkm_prog_report_find(res.r, res.pid)->cls, BKM_PROG_CLASS_TEAM);
    {
        const bkm_prog_thread_t *t1 = bkm_prog_report_find(res.r, m->tid[1]);
        ck_assert_ptr_nonnull(t1);
        ck_assert_int_eq(t1->cls, BKM_PROG_CLASS_TEAM);
        ck_assert_int_eq(t1->team_index, 1);
        ck_assert_str_eq(t1->via, "libgomp.so.1");
    }
    ck_assert_msg(c->verdict == BKM_PROG_MATCH, "%s", c->summary);
    bkm_prog_check_free(c);
    for (int i = 0; i < bkm_prog_report_n_threads(res.r); i++) {
        const bkm_prog_thread_t *t = bkm_prog_report_thread(res.r, i);
        if (t->tid != m->tid[0] && t->tid != m->tid[1])
            ck_assert_int_ne(t->cls, BKM_PROG_CLASS_TEAM);
        fprintf(stderr, "  tid %d %-16s %s%s%s\n", t->tid, t->task ? t->task->comm : "-", bkm_prog_class_name(t->cls),
                t->created ? " by " : "", t->created ? t->lib : "");
    }
    /* negative control, where the two places differ: the plan in the other order */
    if (!bkm_cpuset_equal(&place[0], &place[1])) {
        plan[0] = place[1], plan[1] = place[0];
        ck_assert_int_eq(bkm_prog_report_check(res.r, plan, 2, NULL, &c, &err), BKM_OK);
        ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
        bkm_prog_check_free(c);
    }
    watch_free(&res);
}
END_TEST

static Suite *torch_suite(int argc, char **argv, int *status)
{
    Suite *s;
    TCase *tc;
    (void)argc, (void)argv;
    if (system(PYTHON " -c 'import torch' >/dev/null 2>&1") != 0) {
        *status = bkm_check_skip(PYTHON " cannot import torch (Debian package python3-torch)");
        return NULL;
    }
    watch_allowed(&allowed);
    if (bkm_cpuset_count(&allowed) < 2) {
        *status = bkm_check_skip("needs 2 CPUs, this process may use %d", bkm_cpuset_count(&allowed));
        return NULL;
    }
    s = suite_create("program_torch");
    tc = tcase_create("torch");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, torch_team_bound_close);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN_ARGS(torch_suite)
