/* SPDX-License-Identifier: MIT */
/* The binding proof of real programs: omp_busy built with gcc -fopenmp (GNU libgomp) and with
 * clang -fopenmp (LLVM libomp), run under libbkm_team.so with placement settings of their own
 * runtime and sampled from here. The team is found with its indexes, its masks are what the
 * runtime was asked for (a plan in another order is a mismatch), the program's own pthread is
 * "other", libomp's hidden helpers are helpers, nested-only threads are not the team, a forked
 * child writes as itself, and the shim changes neither the output nor the exit status. */
#include "bkm_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "watch.h"

static bkm_cpuset_t allowed;
static bkm_cpuset_t cpu0, cpu1;   /* the first two allowed CPUs, one each */

/* The CPUs of this process (main() has checked there are at least two). */
static void need_two_cpus(void)
{
    int a, b;
    watch_allowed(&allowed);
    a = bkm_cpuset_first(&allowed);
    b = bkm_cpuset_next(&allowed, a);
    bkm_cpuset_zero(&cpu0);
    bkm_cpuset_zero(&cpu1);
    bkm_cpuset_set(&cpu0, a);
    bkm_cpuset_set(&cpu1, b);
}

/* Run @p prog ("gcc" or "clang" build) with @p flags under the shim with @p env. */
static void run(watch_result_t *res, const char *prog, const char *seconds, const char *flags, const char *status,
                const char *const *env, int with_shim)
{
    char *argv[] = {(char *)prog, (char *)seconds, (char *)flags, (char *)status, NULL};
    watch_opts_t o = {with_shim ? BKM_TEAM_SHIM : NULL, NULL, env, 10, 60};
    ck_assert_int_eq(watch_run(argv, &o, res), 0);
    fprintf(stderr, "%s %s %s: exit %d, %d samples, %.0f us a pass, %d threads, %zu records\n", prog, seconds, flags,
            res->status, bkm_prog_sampler_samples(res->s), (double)bkm_prog_sampler_pass_ns(res->s) * 1e-3,
            bkm_prog_report_n_threads(res->r), res->log.n);
}

static bkm_prog_check_t *check2(const watch_result_t *res, const bkm_cpuset_t *p0, const bkm_cpuset_t *p1)
{
    bkm_cpuset_t plan[2] = {*p0, *p1};
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_prog_report_check(res->r, plan, 2, NULL, &c, &err), BKM_OK);
    return c;
}

static void dump(const watch_result_t *res, const bkm_prog_check_t *c)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 1);
    bkm_prog_report_binding_json(res->r, c, &w);
    fprintf(stderr, "%s\n", bkm_buf_str(&b));
    bkm_buf_free(&b);
}

/* The main team: 2 threads, thread 0 the main thread, thread 1 a thread the runtime created. */
static void expect_team(const watch_result_t *res, int api)
{
    const bkm_prog_team_t *m = bkm_prog_report_main_team(res->r);
    const bkm_prog_thread_t *t0, *t1;
    if (m == NULL || m->size != 2 || m->n_found != 2)
        dump(res, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->api, api);
    ck_assert_int_eq(m->size, 2);
    ck_assert_int_eq(m->level, 1);
    ck_assert_int_eq(m->tid[0], res->pid);
    t0 = bkm_prog_report_find(res->r, m->tid[0]);
    t1 = bkm_prog_report_find(res->r, m->tid[1]);
    ck_assert_ptr_nonnull(t0);
    ck_assert_ptr_nonnull(t1);
    ck_assert_int_eq(t0->cls, BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(t0->is_main, 1);
    ck_assert_int_eq(t0->team_index, 0);
    ck_assert_int_eq(t1->cls, BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(t1->team_index, 1);
    ck_assert_int_eq(t1->created, 1);
    ck_assert_int_eq(t1->creator, res->pid);
    ck_assert_ptr_nonnull(t1->task);   /* sampled */
}

/* The program's own pthread is "other", created by the program itself. */
static void expect_own_pthread(const watch_result_t *res, const char *prog_name)
{
    int found = 0;
    for (int i = 0; i < bkm_prog_report_n_threads(res->r); i++) {
        const bkm_prog_thread_t *t = bkm_prog_report_thread(res->r, i);
        if (t->created && t->lib_is_exe) {
            found++;
            ck_assert_int_eq(t->cls, BKM_PROG_CLASS_OTHER);
            ck_assert_str_eq(t->lib, prog_name);
            ck_assert_int_eq(t->team_index, -1);
        }
    }
    ck_assert_int_eq(found, 1);
}

static void expect_verdict(const watch_result_t *res, bkm_prog_check_t *c, int verdict)
{
    if (c->verdict != verdict)
        dump(res, c);
    ck_assert_msg(c->verdict == verdict, "verdict %s, expected %s: %s", bkm_prog_verdict_name(c->verdict),
                  bkm_prog_verdict_name(verdict), c->summary);
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---------------------------------------------------------------------------------------- */
#ifdef BKM_OMP_BUSY_GCC

/* Explicit places in reverse order: thread 0 on the second CPU, thread 1 on the first. */
START_TEST(gomp_places_reverse)
{
    char places[64];
    const char *env[] = {"OMP_NUM_THREADS=2", places, "OMP_PROC_BIND=close", NULL};
    watch_result_t res;
    bkm_prog_check_t *c;
    need_two_cpus();
    snprintf(places, sizeof places, "OMP_PLACES={%d},{%d}", bkm_cpuset_first(&cpu1), bkm_cpuset_first(&cpu0));
    run(&res, BKM_OMP_BUSY_GCC, "1", "-", "0", env, 1);
    ck_assert_int_eq(res.status, 0);
    ck_assert_str_eq(res.out, "checksum 2997000\n");
    expect_team(&res, BKM_PROG_API_GOMP);
    ck_assert_str_eq(bkm_prog_report_main_team(res.r)->rt, "libgomp.so.1");
    expect_own_pthread(&res, base(BKM_OMP_BUSY_GCC));
    c = check2(&res, &cpu1, &cpu0);
    expect_verdict(&res, c, BKM_PROG_MATCH);
    ck_assert_int_eq(c->n_unbound, 0);
    bkm_prog_check_free(c);
    /* negative control: the plan in team order 0 -> first CPU is not what ran */
    c = check2(&res, &cpu0, &cpu1);
    expect_verdict(&res, c, BKM_PROG_MISMATCH);
    ck_assert_int_eq(c->n_mismatch, 2);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

/* OMP_PLACES=cores OMP_PROC_BIND=close: thread 0 on the first core, thread 1 on the next. */
START_TEST(gomp_cores_close)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "OMP_PLACES=cores", "OMP_PROC_BIND=close", NULL};
    bkm_cpuset_t place[2];
    watch_result_t res;
    bkm_prog_check_t *c;
    need_two_cpus();
    watch_core_places(&allowed, place);
    run(&res, BKM_OMP_BUSY_GCC, "1", "-", "0", env, 1);
    expect_team(&res, BKM_PROG_API_GOMP);
    c = check2(&res, &place[0], &place[1]);
    expect_verdict(&res, c, BKM_PROG_MATCH);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

/* Unbound: both threads on every allowed CPU, which is also what a bound plan is not. */
START_TEST(gomp_unbound)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "OMP_PROC_BIND=false", NULL};
    watch_result_t res;
    bkm_prog_check_t *c;
    need_two_cpus();
    run(&res, BKM_OMP_BUSY_GCC, "1", "-", "0", env, 1);
    expect_team(&res, BKM_PROG_API_GOMP);
    c = check2(&res, &allowed, &allowed);
    expect_verdict(&res, c, BKM_PROG_MATCH);
    ck_assert_int_eq(c->n_unbound, 2);
    bkm_prog_check_free(c);
    c = check2(&res, &cpu0, &cpu1);
    expect_verdict(&res, c, BKM_PROG_MISMATCH);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

/* Nested teams and a forked child: the main team stays the level-1 team of the main thread; a
 * thread only in the nested team is not the team; the child's records are its own. */
START_TEST(gomp_nested_fork)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "OMP_PROC_BIND=false", NULL};
    watch_result_t res;
    int other = 0;
    need_two_cpus();
    run(&res, BKM_OMP_BUSY_GCC, "0.6", "nf", "0", env, 1);
    ck_assert_int_eq(res.status, 0);
    expect_team(&res, BKM_PROG_API_GOMP);
    for (int i = 0; i < bkm_prog_report_n_threads(res.r); i++)
        other += bkm_prog_report_thread(res.r, i)->cls == BKM_PROG_CLASS_TEAM_OTHER;
    ck_assert_int_ge(other, 1);
    ck_assert_int_ge(bkm_prog_report_n_teams(res.r), 3);   /* level 1, and a level-2 team per outer thread */
    {
        int child_records = 0;
        for (size_t i = 0; i < res.log.n; i++)
            if (res.log.rec[i].pid != res.pid) {
                child_records++;
                ck_assert_int_ne(res.log.rec[i].tid, res.pid);
            }
        ck_assert_int_ge(child_records, 2);   /* fork + the child's thread */
    }
    watch_free(&res);
}
END_TEST

#endif

#ifdef BKM_OMP_COMBINED_GCC
/* Each interposed entry point ran one team of its own size, every index reported by a thread of
 * the process, and the results are those of the program run without the shim. */
START_TEST(gomp_every_entry_point)
{
    const char *env[] = {"OMP_PROC_BIND=false", NULL};
    char *argv[] = {BKM_OMP_COMBINED_GCC, NULL};
    watch_opts_t with = {BKM_TEAM_SHIM, NULL, env, 10, 60}, without = {NULL, NULL, env, 10, 60};
    watch_result_t a, b;
    ck_assert_int_eq(watch_run(argv, &with, &a), 0);
    ck_assert_int_eq(watch_run(argv, &without, &b), 0);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(b.status, 0);
    ck_assert_str_eq(a.out, b.out);
    ck_assert_ptr_nonnull(strstr(a.out, "loop_static 499500\n"));
    ck_assert_ptr_nonnull(strstr(a.out, "task_reduction 45\n"));
    for (int size = 2; size <= 13; size++) {
        const bkm_prog_team_t *team = NULL;
        for (int i = 0; i < bkm_prog_report_n_teams(a.r); i++)
            if (bkm_prog_report_team(a.r, i)->size == size)
                team = bkm_prog_report_team(a.r, i);
        ck_assert_msg(team != NULL, "no team of %d threads in the log", size);
        ck_assert_int_eq(team->api, BKM_PROG_API_GOMP);
        ck_assert_int_eq(team->primary, a.pid);
        ck_assert_int_eq(team->tid[0], a.pid);
        ck_assert_msg(team->n_found == size, "team of %d: %d indexes reported", size, team->n_found);
        ck_assert_int_eq(team->conflicts, 0);
    }
    /* the main team is the largest level-1 team of the main thread */
    ck_assert_int_eq(bkm_prog_report_main_team(a.r)->size, 13);
    watch_free(&a);
    watch_free(&b);
}
END_TEST
#endif

/* ---------------------------------------------------------------------------------------- */
#ifdef BKM_OMP_BUSY_CLANG

START_TEST(libomp_explicit_reverse)
{
    char aff[96];
    const char *env[] = {"OMP_NUM_THREADS=2", aff, NULL};
    watch_result_t res;
    bkm_prog_check_t *c;
    need_two_cpus();
    snprintf(aff, sizeof aff, "KMP_AFFINITY=granularity=fine,proclist=[%d,%d],explicit", bkm_cpuset_first(&cpu1),
             bkm_cpuset_first(&cpu0));
    run(&res, BKM_OMP_BUSY_CLANG, "1", "-", "0", env, 1);
    ck_assert_int_eq(res.status, 0);
    ck_assert_str_eq(res.out, "checksum 2997000\n");
    expect_team(&res, BKM_PROG_API_OMPT);
    ck_assert_str_eq(bkm_prog_report_main_team(res.r)->rt, "libomp.so.5");
    expect_own_pthread(&res, base(BKM_OMP_BUSY_CLANG));
    ck_assert_int_eq(bkm_prog_report_find(res.r, res.pid)->ompt_type, BKM_PROG_OMPT_INITIAL);
    c = check2(&res, &cpu1, &cpu0);
    expect_verdict(&res, c, BKM_PROG_MATCH);
    bkm_prog_check_free(c);
    c = check2(&res, &cpu0, &cpu1);
    expect_verdict(&res, c, BKM_PROG_MISMATCH);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

START_TEST(libomp_disabled_unbound)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "KMP_AFFINITY=disabled", NULL};
    watch_result_t res;
    bkm_prog_check_t *c;
    need_two_cpus();
    run(&res, BKM_OMP_BUSY_CLANG, "1", "-", "0", env, 1);
    expect_team(&res, BKM_PROG_API_OMPT);
    c = check2(&res, &allowed, &allowed);
    expect_verdict(&res, c, BKM_PROG_MATCH);
    ck_assert_int_eq(c->n_unbound, 2);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

/* Nested teams: the main team stays the level-1 team; a thread only in a nested team is not it. */
START_TEST(libomp_nested)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "KMP_AFFINITY=disabled", NULL};
    watch_result_t res;
    int other = 0;
    need_two_cpus();
    run(&res, BKM_OMP_BUSY_CLANG, "0.6", "n", "0", env, 1);
    ck_assert_int_eq(res.status, 0);
    expect_team(&res, BKM_PROG_API_OMPT);
    for (int i = 0; i < bkm_prog_report_n_threads(res.r); i++)
        other += bkm_prog_report_thread(res.r, i)->cls == BKM_PROG_CLASS_TEAM_OTHER;
    ck_assert_int_ge(other, 1);
    watch_free(&res);
}
END_TEST

/* libomp's hidden helper threads (started by a deferred target task) are helpers, not the team;
 * a forked child writes as itself. (Nested regions and hidden helpers are run apart: libomp 14
 * fails an internal assertion in most processes that have both, with or without the shim.) */
START_TEST(libomp_helpers_fork)
{
    const char *env[] = {"OMP_NUM_THREADS=2", "KMP_AFFINITY=disabled", NULL};
    watch_result_t res;
    int helpers = 0, helper_team = 0, child_records = 0;
    need_two_cpus();
    run(&res, BKM_OMP_BUSY_CLANG, "0.6", "hf", "0", env, 1);
    ck_assert_int_eq(res.status, 0);
    expect_team(&res, BKM_PROG_API_OMPT);
    for (int i = 0; i < bkm_prog_report_n_threads(res.r); i++)
        helpers += bkm_prog_report_thread(res.r, i)->cls == BKM_PROG_CLASS_OMP_HELPER;
    for (int i = 0; i < bkm_prog_report_n_teams(res.r); i++)
        helper_team += bkm_prog_report_team(res.r, i)->helper;
    if (helper_team == 0)
        dump(&res, NULL);
    ck_assert_int_eq(helper_team, 1);
    ck_assert_int_ge(helpers, 2);   /* the helper team's primary and its members */
    for (size_t i = 0; i < res.log.n; i++)
        if (res.log.rec[i].pid != res.pid) {
            child_records++;
            ck_assert_int_ne(res.log.rec[i].tid, res.pid);
        }
    ck_assert_int_ge(child_records, 2);
    watch_free(&res);
}
END_TEST

#endif

/* ---------------------------------------------------------------------------------------- */
/* A program without OpenMP: Python (a dependency of bkm's set-up) with one threading.Thread. The main thread is "main", the
 * thread is "python" (created by the interpreter), and no team ran: the check says so. */
START_TEST(python_threads_no_team)
{
    char *argv[] = {"/usr/bin/python3", "-c",
                    "import threading, time\n"
                    "t = threading.Thread(target=time.sleep, args=(0.3,))\n"
                    "t.start(); t.join(); print('done')\n", NULL};
    watch_opts_t o = {BKM_TEAM_SHIM, NULL, NULL, 10, 60};
    watch_result_t res;
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    int python = 0;
    need_two_cpus();
    ck_assert_int_eq(watch_run(argv, &o, &res), 0);
    ck_assert_int_eq(res.status, 0);
    ck_assert_str_eq(res.out, "done\n");
    ck_assert_int_eq(bkm_prog_report_find(res.r, res.pid)->cls, BKM_PROG_CLASS_MAIN);
    for (int i = 0; i < bkm_prog_report_n_threads(res.r); i++) {
        const bkm_prog_thread_t *t = bkm_prog_report_thread(res.r, i);
        if (t->tid != res.pid) {
            ck_assert_int_eq(t->cls, BKM_PROG_CLASS_PYTHON);
            ck_assert_int_eq(t->lib_is_exe, 1);
            python++;
        }
    }
    ck_assert_int_eq(python, 1);
    ck_assert_ptr_null(bkm_prog_report_main_team(res.r));
    ck_assert_int_eq(bkm_prog_report_check(res.r, &cpu0, 1, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_NO_TEAM);
    bkm_prog_check_free(c);
    watch_free(&res);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* The shim changes nothing the program does: same output, same exit status, with a log, without
 * the shim, and with a log it cannot open. */
static void same_behaviour(const char *prog, const char *flags, const char *const *env)
{
    watch_result_t a, b, c;
    char *argv[] = {(char *)prog, "0.2", (char *)flags, "5", NULL};
    watch_opts_t with = {BKM_TEAM_SHIM, NULL, env, 10, 60};
    watch_opts_t without = {NULL, NULL, env, 10, 60};
    watch_opts_t unopenable = {BKM_TEAM_SHIM, "/nonexistent/bkm/team.log", env, 10, 60};
    ck_assert_int_eq(watch_run(argv, &with, &a), 0);
    ck_assert_int_eq(watch_run(argv, &without, &b), 0);
    ck_assert_int_eq(watch_run(argv, &unopenable, &c), 0);
    ck_assert_int_eq(a.status, 5);
    ck_assert_int_eq(b.status, 5);
    ck_assert_int_eq(c.status, 5);
    ck_assert_str_eq(a.out, b.out);
    ck_assert_str_eq(c.out, b.out);
    ck_assert_uint_gt(a.log.n, 0);
    ck_assert_uint_eq(b.log.n, 0);
    ck_assert_uint_eq(c.log.n, 0);   /* nothing written anywhere, and the fresh log stays empty */
    watch_free(&a);
    watch_free(&b);
    watch_free(&c);
}

START_TEST(shim_changes_nothing)
{
    const char *env[] = {"OMP_NUM_THREADS=2", NULL};
    need_two_cpus();
#ifdef BKM_OMP_BUSY_GCC
    same_behaviour(BKM_OMP_BUSY_GCC, "nf", env);
#endif
#ifdef BKM_OMP_BUSY_CLANG
    same_behaviour(BKM_OMP_BUSY_CLANG, "hf", env);
    same_behaviour(BKM_OMP_BUSY_CLANG, "n", env);
#endif
}
END_TEST

/* The suite, or no suite and a skip when this host cannot run it. */
static Suite *live_suite(int argc, char **argv, int *status)
{
    Suite *s;
    TCase *tc;
    (void)argc, (void)argv;
#if !defined(BKM_OMP_BUSY_GCC) && !defined(BKM_OMP_BUSY_CLANG)
    *status = bkm_check_skip("neither gcc nor clang was found when bkm was configured");
    return NULL;
#endif
    watch_allowed(&allowed);
    if (bkm_cpuset_count(&allowed) < 2) {
        *status = bkm_check_skip("needs 2 CPUs, this process may use %d", bkm_cpuset_count(&allowed));
        return NULL;
    }
    s = suite_create("program_live");
    tc = tcase_create("gomp");
    tcase_set_timeout(tc, 120);
#ifdef BKM_OMP_BUSY_GCC
    tcase_add_test(tc, gomp_places_reverse);
    tcase_add_test(tc, gomp_cores_close);
    tcase_add_test(tc, gomp_unbound);
    tcase_add_test(tc, gomp_nested_fork);
#endif
#ifdef BKM_OMP_COMBINED_GCC
    tcase_add_test(tc, gomp_every_entry_point);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("libomp");
    tcase_set_timeout(tc, 120);
#ifdef BKM_OMP_BUSY_CLANG
    tcase_add_test(tc, libomp_explicit_reverse);
    tcase_add_test(tc, libomp_disabled_unbound);
    tcase_add_test(tc, libomp_nested);
    tcase_add_test(tc, libomp_helpers_fork);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("behaviour");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, python_threads_no_team);
    tcase_add_test(tc, shim_changes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN_ARGS(live_suite)
