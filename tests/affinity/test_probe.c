/* SPDX-License-Identifier: MIT */
/* Unit tests of the binding probe. The probes that depend on KMP_AFFINITY run in a child process
 * (this binary re-executed with --probe-child N and the variables set), because libomp reads its
 * environment once, at its first use in the process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/affinity.h"
#include "child.h"

static int allowed_cpus(void)
{
    cpu_set_t cs;
    CPU_ZERO(&cs);
    sched_getaffinity(0, sizeof(cs), &cs);
    return CPU_COUNT(&cs);
}

/* Child mode: run the probe and print its JSON on stdout. */
static int probe_child(const char *n)
{
    long long nt;
    bkm_aff_probe_t *p = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    if (bkm_parse_int(n, 1, 4096, &nt) != BKM_OK)
        return 2;
    if (bkm_aff_probe_run((int)nt, &p, &err) < 0) {
        fprintf(stderr, "probe: %s\n", err.msg);
        return 1;
    }
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_aff_probe_to_json(p, &w, &err);
    printf("%s\n", bkm_buf_str(&b));
    bkm_buf_free(&b);
    bkm_aff_probe_free(p);
    return 0;
}

/* Run this binary as a probe child with @p env added; returns the parsed JSON. */
static bkm_json_t *run_child(const char *const *env, int n_threads)
{
    char n[16];
    snprintf(n, sizeof(n), "%d", n_threads);
    const char *const args[] = {"test_probe", "--probe-child", n, NULL};
    bkm_buf_t b;
    bkm_buf_init(&b);
    int st = bkm_test_run_child(env, args, &b);
    ck_assert_msg(st == 0, "probe child failed (status %d)", st);
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &j, &err) == BKM_OK, "%s: %s", err.msg, bkm_buf_str(&b));
    bkm_buf_free(&b);
    return j;
}

static const char *team_mask(const bkm_json_t *j, size_t i)
{
    const bkm_json_t *t = bkm_json_at(bkm_json_get(j, "team"), i);
    ck_assert_ptr_nonnull(t);
    return bkm_json_get_str(t, "mask");
}

/* The PU of thread @p i under granularity=fine,compact, as the planner says (libomp's order:
 * packages and cores by hardware id, then threads; the child sees hwloc's topology). */
static int compact_pu(int i)
{
    bkm_topo_t *t = NULL;
    bkm_aff_plan_t *plan = NULL;
    bkm_aff_env_t env = {.kmp_affinity = "granularity=fine,compact"};
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_host(&t, &err), BKM_OK);
    ck_assert_msg(bkm_aff_plan_create(t, &env, i + 1, &plan, &err) == BKM_OK, "%s", err.msg);
    const bkm_cpuset_t *s = bkm_aff_plan_cpus(plan, i);
    ck_assert_ptr_nonnull(s);
    int found = bkm_cpuset_first(s);
    bkm_aff_plan_free(plan);
    bkm_topo_close(t);
    return found;
}

/* ---------------------------------------------------------------------------------------- */
START_TEST(one_thread_is_the_caller)
{
    bkm_aff_probe_t *p = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_aff_probe_run(1, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(p->requested, 1);
    ck_assert_int_eq(p->n_threads, 1);
    ck_assert_int_eq(p->thread[0].omp_thread, 0);
    ck_assert_int_eq(p->thread[0].tid, (int)syscall(SYS_gettid));
    ck_assert_int_eq(p->caller_tid, p->thread[0].tid);
    ck_assert(bkm_cpuset_isset(&p->thread[0].mask, p->thread[0].cpu));
    ck_assert_int_ge(p->n_tasks, 1);
    ck_assert(p->has_libomp);
    ck_assert(!p->has_libgomp);
    ck_assert_int_eq(bkm_aff_probe_check_single_runtime(p, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(p->runtimes, "libomp"));
    bkm_aff_probe_free(p);
}
END_TEST

START_TEST(two_threads_distinct_tids)
{
    bkm_aff_probe_t *p = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_probe_run(2, &p, &err), BKM_OK);
    ck_assert_int_eq(p->n_threads, 2);
    ck_assert_int_eq(p->thread[1].omp_thread, 1);
    ck_assert_int_ne(p->thread[0].tid, p->thread[1].tid);
    ck_assert_int_ge(p->n_tasks, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert(!bkm_cpuset_is_empty(&p->thread[i].mask));
        ck_assert(bkm_cpuset_isset(&p->thread[i].mask, p->thread[i].cpu));
    }
    /* Neither team member is listed as foreign. */
    for (int f = 0; f < p->n_foreign; f++)
        ck_assert(p->foreign[f].tid != p->thread[0].tid && p->foreign[f].tid != p->thread[1].tid);
    bkm_aff_probe_free(p);
}
END_TEST

static void *sleeper(void *arg)
{
    pthread_setname_np(pthread_self(), "bkm-foreign");
    int *ready = arg;
    __atomic_store_n(ready, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    while (__atomic_load_n(ready, __ATOMIC_ACQUIRE) != 0)
        usleep(1000);
    return NULL;
}

START_TEST(foreign_thread_is_listed_with_name_and_mask)
{
    int flag = -1;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, sleeper, &flag), 0);
    while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) == -1)
        usleep(1000);
    int tid = flag;
    bkm_aff_probe_t *p = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_probe_run(1, &p, &err), BKM_OK);
    __atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    int found = 0;
    for (int i = 0; i < p->n_foreign; i++)
        if (p->foreign[i].tid == tid) {
            found = 1;
            ck_assert_str_eq(p->foreign[i].name, "bkm-foreign");
            ck_assert_int_eq(bkm_cpuset_count(&p->foreign[i].mask), allowed_cpus());
        }
    ck_assert_msg(found, "thread %d not reported as foreign", tid);
    bkm_aff_probe_free(p);
}
END_TEST

START_TEST(json_round_trip)
{
    bkm_aff_probe_t *p = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    ck_assert_int_eq(bkm_aff_probe_run(2, &p, &err), BKM_OK);
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_aff_probe_to_json(p, &w, &err), BKM_OK);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq((int)bkm_json_get_num(j, "threads", -1), 2);
    ck_assert_uint_eq(bkm_json_get(j, "team")->n_children, 2);
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_at(bkm_json_get(j, "team"), 1), "tid", -1), p->thread[1].tid);
    ck_assert(bkm_json_get(j, "libomp")->boolean);
    ck_assert_ptr_nonnull(strstr(bkm_json_at(bkm_json_get(j, "runtimes"), 0)->str, "libomp"));
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_aff_probe_free(p);
}
END_TEST

START_TEST(bad_thread_count)
{
    bkm_aff_probe_t *p = (bkm_aff_probe_t *)&p;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_probe_run(0, &p, &err), BKM_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err.msg, "0"));
    ck_assert_int_eq(bkm_aff_probe_run(-3, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "-3"));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
START_TEST(kmp_compact_fine_binds_one_pu_each)
{
    static const char *const env[] = {"KMP_AFFINITY=granularity=fine,compact", NULL};
    int n = allowed_cpus() >= 2 ? 2 : 1;
    bkm_json_t *j = run_child(env, n);
    ck_assert_int_eq((int)bkm_json_get_num(j, "threads", -1), n);
    for (int i = 0; i < n; i++) {
        char want[16];
        snprintf(want, sizeof(want), "%d", compact_pu(i));
        ck_assert_str_eq(team_mask(j, (size_t)i), want);
        const bkm_json_t *t = bkm_json_at(bkm_json_get(j, "team"), (size_t)i);
        ck_assert_int_eq((int)bkm_json_get_num(t, "cpu", -1), compact_pu(i));
        ck_assert_int_ge((int)bkm_json_get_num(t, "place", -1), 0);
    }
    bkm_json_free(j);
}
END_TEST

START_TEST(kmp_disabled_leaves_threads_unbound_without_abort)
{
    /* libomp 14 leaks two small blocks of its own under "disabled" (seen by ASan builds). */
    static const char *const env[] = {
        "KMP_AFFINITY=disabled", "LSAN_OPTIONS=suppressions=" BKM_SOURCE_DIR "/tests/affinity/lsan-libomp.supp", NULL};
    bkm_json_t *j = run_child(env, 2);
    bkm_buf_t b;
    bkm_cpuset_t all;
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_host(&t, &err), BKM_OK);
    bkm_topo_allowed(t, &all);
    bkm_topo_close(t);
    bkm_buf_init(&b);
    bkm_cpuset_format(&all, &b);
    for (size_t i = 0; i < 2; i++)
        ck_assert_str_eq(team_mask(j, i), bkm_buf_str(&b));
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_at(bkm_json_get(j, "team"), 0), "place", 0), -1);
    bkm_buf_free(&b);
    bkm_json_free(j);
}
END_TEST

static Suite *probe_suite(void)
{
    Suite *s = suite_create("probe");
    TCase *tc = tcase_create("inprocess");
    tcase_add_test(tc, one_thread_is_the_caller);
    tcase_add_test(tc, two_threads_distinct_tids);
    tcase_add_test(tc, foreign_thread_is_listed_with_name_and_mask);
    tcase_add_test(tc, json_round_trip);
    tcase_add_test(tc, bad_thread_count);
    suite_add_tcase(s, tc);
    tc = tcase_create("kmp");
    tcase_add_test(tc, kmp_compact_fine_binds_one_pu_each);
    tcase_add_test(tc, kmp_disabled_leaves_threads_unbound_without_abort);
    suite_add_tcase(s, tc);
    return s;
}

/* The suite, or none with the status of the --probe-child mode (the child process the tests start).
 * Debugging: CK_FORK=no CK_RUN_CASE=kmp ./test_probe */
static Suite *probe_suite_or_child(int argc, char **argv, int *status)
{
    if (argc == 3 && strcmp(argv[1], "--probe-child") == 0) {
        *status = probe_child(argv[2]);
        return NULL;
    }
    return probe_suite();
}

BKM_CHECK_MAIN_ARGS(probe_suite_or_child)
