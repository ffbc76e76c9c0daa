/* SPDX-License-Identifier: MIT */
/* Unit tests of the PAPI counter session. "pure": list parsing, the kinds of events bkm knows by
 * meaning, the domain rule and the agreement rule with the OS, without PAPI. "live": a session on
 * this host, checked for the variant it finds (kernel domain permitted, or refused with the
 * sysctl named), the OS cross-check over a real noise session, unknown events with a reason;
 * skips (77) only when PAPI has no usable event at all (no perf_event component). */
#include "bkm_check.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bkm/worker.h"

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

/* Kernel-side events by every spelling, with qualifiers; other events and other PMUs are not. */
START_TEST(kinds_by_meaning)
{
    static const char *const kernel_side[] = {
        "perf::CONTEXT-SWITCHES", "perf::CS", "perf::PERF_COUNT_SW_CONTEXT_SWITCHES", "perf::CPU-MIGRATIONS",
        "perf::MIGRATIONS", "perf::PAGE-FAULTS", "perf::FAULTS", "perf::MINOR-FAULTS", "perf::MAJOR-FAULTS",
        "perf::CONTEXT-SWITCHES:u=1", "CONTEXT-SWITCHES", "perf::CGROUP-SWITCHES"};
    int ks;
    for (size_t i = 0; i < sizeof kernel_side / sizeof kernel_side[0]; i++) {
        ks = 0;
        ck_assert_msg(bkm_tune_counter_kind(kernel_side[i], &ks) >= 0 && ks == 1, "%s", kernel_side[i]);
    }
    ck_assert_int_ge(bkm_tune_counter_kind("perf::TASK-CLOCK", &ks), 0);
    ck_assert_int_eq(ks, 0);
    ck_assert_int_eq(bkm_tune_counter_kind("PAPI_TOT_CYC", &ks), -1);
    ck_assert_int_eq(ks, 0);
    ck_assert_int_eq(bkm_tune_counter_kind("perf_raw::CONTEXT-SWITCHES", &ks), -1);
    ck_assert_int_eq(bkm_tune_counter_kind("perf::CONTEXT-SWITCHESX", &ks), -1);
    ck_assert_int_eq(bkm_tune_counter_kind("", &ks), -1);
}
END_TEST

/* The agreement rule: within 4 per thread + 5% is agreement; beyond it the event disagrees and
 * keeps both figures; an unavailable event and a missing OS figure are never checked. */
START_TEST(agreement_rule)
{
    bkm_counter_t c = {.name = "perf::CONTEXT-SWITCHES", .available = 1, .value = 0, .domain = "user"};
    ck_assert_int_eq(bkm_tune_counter_granularity(0, 16155, 2, 0, -1), 8 + 16155 / 20);
    ck_assert_int_eq(bkm_tune_counter_granularity(100, 90, 1, 1, 10), 5000000 + 5 + 250000);
    /* PAPI's user-domain 0 against thousands of switches: disagrees, both figures in the reason */
    ck_assert_int_eq(bkm_tune_counter_check_os(&c, 16155, "rusage voluntary+involuntary switches", 2, 0, -1), 1);
    ck_assert_int_eq(c.disagrees, 1);
    ck_assert_int_eq(bkm_counter_presentable(&c), 0);
    ck_assert_int_eq(c.os_value, 16155);
    ck_assert_str_eq(c.os_source, "rusage voluntary+involuntary switches");
    ck_assert_ptr_nonnull(strstr(c.reason, "PAPI counted 0 in the user domain"));
    ck_assert_ptr_nonnull(strstr(c.reason, "16155"));
    /* within the granularity (both directions), and at its edge */
    bkm_counter_t a = {.name = "perf::CS", .available = 1, .value = 1000};
    ck_assert_int_eq(bkm_tune_counter_check_os(&a, 1058, "rusage", 2, 0, -1), 0);
    ck_assert_int_eq(a.disagrees, 0);
    ck_assert_int_eq(bkm_counter_presentable(&a), 1);
    ck_assert_str_eq(a.os_source, "rusage");
    a.value = 1058;   /* the first PAPI figure above the OS's that disagrees: exactly past the edge */
    while (a.value - 1058 <= bkm_tune_counter_granularity(a.value, 1058, 2, 0, -1))
        a.value++;
    ck_assert_int_eq(a.value, 1058 + 8 + a.value / 20 + 1);
    ck_assert_int_eq(bkm_tune_counter_check_os(&a, 1058, "rusage", 2, 0, -1), 1);
    a.value--;
    a.disagrees = 0;
    ck_assert_int_eq(bkm_tune_counter_check_os(&a, 1058, "rusage", 2, 0, -1), 0);
    /* a clock: the per-switch allowance is what keeps thousands of switches in agreement */
    bkm_counter_t t = {.name = "perf::TASK-CLOCK", .available = 1, .value = 182000000};
    ck_assert_int_eq(bkm_tune_counter_check_os(&t, 239000000, "rusage CPU", 2, 1, -1), 1);
    t.disagrees = 0;
    ck_assert_int_eq(bkm_tune_counter_check_os(&t, 239000000, "rusage CPU", 2, 1, 6000), 0);
    /* not checked: unavailable, or no OS figure */
    bkm_counter_t u = {.name = "perf::CS", .available = 0};
    ck_assert_int_eq(bkm_tune_counter_check_os(&u, 5000, "rusage", 2, 0, -1), 0);
    ck_assert_str_eq(u.os_source, "");
    bkm_counter_t v = {.name = "perf::CS", .available = 1, .value = 0};
    ck_assert_int_eq(bkm_tune_counter_check_os(&v, -1, "rusage", 2, 0, -1), 0);
    ck_assert_str_eq(v.os_source, "");
    ck_assert_int_eq(bkm_counter_presentable(NULL), 0);
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

/* 1 when a kernel-side event may be counted in the kernel domain here, as PAPI decides it. */
static int kernel_domain_permitted(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int level = 3;
    if (f != NULL) {
        if (fscanf(f, "%d", &level) != 1)
            level = 3;
        fclose(f);
    }
    return getuid() == 0 || level <= 1;
}

/* A kernel-side event is counted in the user and kernel domains where that is permitted, else
 * unavailable naming the sysctl: never a user-domain 0. */
static void check_kernel_side(const bkm_counter_t *e, long long at_least)
{
    if (kernel_domain_permitted()) {
        printf("variant: kernel domain permitted (uid %d): %s counted %lld in the %s domain\n", (int)getuid(),
               e->name, e->value, e->domain);
        ck_assert_msg(e->available, "%s: %s", e->name, e->reason);
        ck_assert_str_eq(e->domain, "user+kernel");
        ck_assert_int_ge(e->value, at_least);
    } else {
        printf("variant: kernel domain not permitted (uid %d): %s unavailable: %s\n", (int)getuid(), e->name,
               e->reason);
        ck_assert_int_eq(e->available, 0);
        ck_assert_ptr_nonnull(strstr(e->reason, "perf_event_paranoid"));
    }
}

/* Two threads burn 100 ms of CPU each and sleep 5 times: task-clock counts both threads, the
 * context switches are counted in the kernel domain (or refused with the reason), and the OS's
 * own figures for the same threads and region agree with them. */
START_TEST(software_events_count_all_threads)
{
    bkm_tune_counters_t *c = NULL;
    bkm_tune_noise_t *noise = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    int rc = bkm_tune_counters_open(&c, "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES,perf::PAGE-FAULTS,"
                                        "perf::CPU-MIGRATIONS,PAPI_TOT_CYC,NO_SUCH_EVENT", &err);
    ck_assert_int_eq(rc, BKM_OK);
    ck_assert_int_eq(bkm_tune_noise_open(&noise, 2, NULL, 0, &err), BKM_OK);
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
    bkm_tune_noise_begin(noise);
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
    bkm_tune_noise_end(noise);
    ck_assert_int_eq(bkm_tune_counters_stop(c, &err), BKM_OK);
    ck_assert(sums[0] > 0 && sums[1] > 0);
    /* task-clock summed over the team must match the CPU time both threads used (one thread
     * alone would give half); small slack for the parallel-region start/stop. */
    ck_assert_int_ge(tc->value, (cpu_ns[0] + cpu_ns[1]) * 9 / 10);
    ck_assert_int_le(tc->value, (cpu_ns[0] + cpu_ns[1]) * 12 / 10 + 20000000ll);
    /* at least the 2 x 5 sleeps above were counted (preemptions may add more), or the event is
     * unavailable with the sysctl named */
    check_kernel_side(find_counter(c, "perf::CONTEXT-SWITCHES"), 10);
    check_kernel_side(find_counter(c, "perf::PAGE-FAULTS"), 0);
    check_kernel_side(find_counter(c, "perf::CPU-MIGRATIONS"), 0);

    /* the OS check: every counted event with an OS figure agrees with it here */
    ck_assert_int_eq(bkm_tune_counters_crosscheck(c, noise), 0);
    ck_assert_str_eq(tc->os_source, "rusage user+system CPU time (ns)");
    ck_assert_int_gt(tc->os_value, 0);
    const bkm_counter_t *cs = find_counter(c, "perf::CONTEXT-SWITCHES");
    if (cs->available) {
        ck_assert_str_eq(cs->os_source, "rusage voluntary+involuntary switches");
        ck_assert_int_ge(cs->os_value, 10);
        ck_assert_int_eq(cs->disagrees, 0);
    } else {
        ck_assert_str_eq(cs->os_source, "");
    }

    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_counters_to_json(c, &w);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\"perf::TASK-CLOCK\":"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\"NO_SUCH_EVENT\":\""));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), kernel_domain_permitted() ? "\"kernel_domain\":\"permitted\""
                                                                           : "\"kernel_domain\":\"not permitted"));
    bkm_buf_free(&b);
    bkm_tune_noise_close(noise);
    bkm_tune_counters_close(c);
}
END_TEST

/* A kernel-side event asked for in the user domain only is refused, not counted as 0. */
START_TEST(user_domain_only_is_refused)
{
    bkm_tune_counters_t *c = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_counters_open(&c, "perf::CONTEXT-SWITCHES:u=1,perf::CS:k=0,perf::TASK-CLOCK:u=1", &err),
                     BKM_OK);
    const bkm_counter_t *cs = find_counter(c, "perf::CONTEXT-SWITCHES:u=1"), *k0 = find_counter(c, "perf::CS:k=0"),
                        *tc = find_counter(c, "perf::TASK-CLOCK:u=1");
    ck_assert_int_eq(cs->available, 0);
    ck_assert_ptr_nonnull(strstr(cs->reason, "reads 0 by construction"));
    ck_assert_int_eq(k0->available, 0);
    ck_assert_ptr_nonnull(strstr(k0->reason, "reads 0 by construction"));
    ck_assert_int_eq(tc->available, 1);   /* not kernel-side: its domain is the one asked for */
    ck_assert_str_eq(tc->domain, "user");
    bkm_tune_counters_close(c);
}
END_TEST

static Suite *counters_suite(int live)
{
    Suite *s = suite_create("counters");
    TCase *tc = tcase_create(live ? "papi" : "pure");
    tcase_set_timeout(tc, 60);
    if (live) {
        tcase_add_test(tc, software_events_count_all_threads);
        tcase_add_test(tc, user_domain_only_is_refused);
    } else {
        tcase_add_test(tc, parse_lists);
        tcase_add_test(tc, kinds_by_meaning);
        tcase_add_test(tc, agreement_rule);
        tcase_add_test(tc, none_counts_nothing);
    }
    suite_add_tcase(s, tc);
    return s;
}

/* PAPI must offer a software event at all, else the live tests skip (77). Probed in a child so
 * that this process starts no PAPI state before Check forks. */
static int papi_usable(void)
{
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
        bkm_tune_counters_t *c = NULL;
        bkm_err_t err = {0};
        const bkm_counter_t *tc;
        if (bkm_tune_counters_open(&c, "perf::TASK-CLOCK", &err) < 0)
            _exit(bkm_check_skip("PAPI cannot initialise here: %s", err.msg));
        tc = bkm_tune_counters_values(c, &status);
        if (!tc[0].available)
            _exit(bkm_check_skip("variant: no usable PAPI component (perf::TASK-CLOCK unavailable: %s)", tc[0].reason));
        bkm_tune_counters_close(c);
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 0;
    return WEXITSTATUS(status) == 0;
}

/* "live": the session on this host, or no suite (77) when PAPI has no usable event here (the
 * probe says why); otherwise the pure tests. */
static Suite *counters_suite_here(int argc, char **argv, int *status)
{
    int live = argc > 1 && strcmp(argv[1], "live") == 0;
    if (live && !papi_usable()) {
        *status = BKM_CHECK_SKIP;
        return NULL;
    }
    return counters_suite(live);
}

BKM_CHECK_MAIN_ARGS(counters_suite_here)
