/* SPDX-License-Identifier: MIT */
/* Unit tests of the PAPI counter session: list parsing, unavailable events recorded with a
 * reason, software events counting a busy loop over every thread of the team. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/tuner.h"

static const bkm_counter_t *find_counter(const bkm_tune_counters_t *c, const char *name)
{
    int n;
    const bkm_counter_t *v = bkm_tune_counters_values(c, &n);
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

START_TEST(parse_lists)
{
    char names[BKM_TUNE_COUNTERS_MAX][64];
    int n = -1;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_counters_parse("none", names, BKM_TUNE_COUNTERS_MAX, &n, &err), BKM_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(bkm_tune_counters_parse("", names, BKM_TUNE_COUNTERS_MAX, &n, &err), BKM_OK);
    ck_assert_int_ge(n, 8);
    ck_assert_str_eq(names[0], "PAPI_TOT_CYC");
    ck_assert_int_eq(bkm_tune_counters_parse("a,b", names, BKM_TUNE_COUNTERS_MAX, &n, &err), BKM_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(names[1], "b");
    ck_assert_int_eq(bkm_tune_counters_parse("a,,b", names, BKM_TUNE_COUNTERS_MAX, &n, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "a,,b"));
    ck_assert_int_eq(bkm_tune_counters_parse("a,b,c", names, 2, &n, &err), BKM_EINVAL);
}
END_TEST

START_TEST(none_counts_nothing)
{
    bkm_tune_counters_t *c = NULL;
    bkm_err_t err = {0};
    int n = -1;
    ck_assert_int_eq(bkm_tune_counters_open(&c, "none", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_counters_start(c, 2, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_counters_stop(c, &err), BKM_OK);
    bkm_tune_counters_values(c, &n);
    ck_assert_int_eq(n, 0);
    bkm_tune_counters_close(c);
}
END_TEST

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Two threads burn 100 ms of CPU each: task-clock must count both. */
START_TEST(software_events_count_all_threads)
{
    bkm_tune_counters_t *c = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    int rc = bkm_tune_counters_open(&c, "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES,perf::PAGE-FAULTS,"
                                        "perf::CPU-MIGRATIONS,PAPI_TOT_CYC,NO_SUCH_EVENT", &err);
    ck_assert_int_eq(rc, BKM_OK);
    const bkm_counter_t *tc = find_counter(c, "perf::TASK-CLOCK");
    ck_assert_ptr_nonnull(tc);
    ck_assert_int_eq(tc->available, 1);
    const bkm_counter_t *bad = find_counter(c, "NO_SUCH_EVENT");
    ck_assert_int_eq(bad->available, 0);
    ck_assert_int_gt((int)strlen(bad->reason), 0);
    const bkm_counter_t *cyc = find_counter(c, "PAPI_TOT_CYC");
    if (!cyc->available)
        ck_assert_int_gt((int)strlen(cyc->reason), 0);   /* no PMU: listed with PAPI's reason */

    ck_assert_int_eq(bkm_tune_counters_start(c, 2, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_counters_threads(c), 2);
    double sums[2] = {0, 0};
    long long cpu_ns[2] = {0, 0};
#pragma omp parallel num_threads(2)
    {
        /* Busy until this thread has used 100 ms of CPU (a shared machine may preempt it). */
        volatile double x = 0;
        long long used = 0, start = thread_cpu_ns();
        while ((used = thread_cpu_ns() - start) < 100000000ll)
            x += 1.0;
        sums[omp_get_thread_num()] = x;
        cpu_ns[omp_get_thread_num()] = used;
        /* then sleep 5 times: each sleep is a voluntary context switch of this thread */
        for (int k = 0; k < 5; k++) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_int_eq(bkm_tune_counters_stop(c, &err), BKM_OK);
    ck_assert(sums[0] > 0 && sums[1] > 0);
    /* task-clock summed over the team must match the CPU time both threads used (one thread
     * alone would give half); small slack for the parallel-region start/stop. */
    ck_assert_int_ge(tc->value, (cpu_ns[0] + cpu_ns[1]) * 9 / 10);
    ck_assert_int_le(tc->value, (cpu_ns[0] + cpu_ns[1]) * 12 / 10 + 20000000ll);
    /* at least the 2 x 5 sleeps above were counted (preemptions may add more) */
    ck_assert_int_ge(find_counter(c, "perf::CONTEXT-SWITCHES")->value, 10);

    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_counters_to_json(c, &w);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\"perf::TASK-CLOCK\":"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\"NO_SUCH_EVENT\":\""));
    bkm_buf_free(&b);
    bkm_tune_counters_close(c);
}
END_TEST

static Suite *counters_suite(void)
{
    Suite *s = suite_create("counters");
    TCase *tc = tcase_create("papi");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_lists);
    tcase_add_test(tc, none_counts_nothing);
    tcase_add_test(tc, software_events_count_all_threads);
    suite_add_tcase(s, tc);
    return s;
}

/* PAPI must be usable at all, else skip (BKM_CHECK_SKIP). Probed in a child so that this process starts
 * no PAPI state before Check forks. */
static int papi_usable(void)
{
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
        bkm_tune_counters_t *c = NULL;
        bkm_err_t err = {0};
        const bkm_counter_t *tc;
        if (bkm_tune_counters_open(&c, "perf::TASK-CLOCK", &err) < 0) {
            _exit(bkm_check_skip("PAPI cannot initialise here: %s", err.msg));
        }
        tc = bkm_tune_counters_values(c, &status);
        if (!tc[0].available) {
            _exit(bkm_check_skip("the software event perf::TASK-CLOCK is unavailable: %s", tc[0].reason));
        }
        bkm_tune_counters_close(c);
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 0;
    return WEXITSTATUS(status) == 0;
}

/* The suite, or none (exit 77) when PAPI is unusable here; the probe says why. */
static Suite *counters_suite_here(int argc, char **argv, int *status)
{
    if (!papi_usable()) {
        *status = BKM_CHECK_SKIP;
        return NULL;
    }
    return counters_suite();
}

BKM_CHECK_MAIN_ARGS(counters_suite_here)
