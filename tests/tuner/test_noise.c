/* SPDX-License-Identifier: MIT */
/* Unit tests of the noise evidence: the /proc parsers (stat steal, schedstat, sched), a session
 * on a fake procfs where files are missing or malformed (each source "unavailable" with its
 * reason), and a session on the real /proc over a busy team (every value present). */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/worker.h"

static const char stat_text[] =
    "cpu  925698 76008 438798 287085 2390 0 1683 3310 0 0\n"
    "cpu0 453279 43434 215350 152969 442 0 108 1670 0 0\n"
    "cpu1 472418 32574 223447 134115 1947 0 1575 1640 0 0\n"
    "intr 11307471 0 0 0\n"
    "ctxt 123\n"
    "cpu_fake_not_a_cpu_line 1 2 3\n";

START_TEST(stat_aggregate_and_cpus)
{
    bkm_tune_stat_ticks_t t;
    bkm_cpuset_t cs;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_noise_parse_stat(stat_text, NULL, &t, &err), BKM_OK);
    ck_assert_uint_eq(t.steal, 3310);
    ck_assert_uint_eq(t.total, 925698ull + 76008 + 438798 + 287085 + 2390 + 0 + 1683 + 3310);
    ck_assert_int_eq(t.cpus, 1);
    bkm_cpuset_zero(&cs);
    bkm_cpuset_set(&cs, 1);
    ck_assert_int_eq(bkm_tune_noise_parse_stat(stat_text, &cs, &t, &err), BKM_OK);
    ck_assert_uint_eq(t.steal, 1640);
    ck_assert_int_eq(t.cpus, 1);
    bkm_cpuset_set(&cs, 0);
    ck_assert_int_eq(bkm_tune_noise_parse_stat(stat_text, &cs, &t, &err), BKM_OK);
    ck_assert_uint_eq(t.steal, 3310);
    ck_assert_int_eq(t.cpus, 2);
    /* a CPU without a line is named */
    bkm_cpuset_set(&cs, 7);
    ck_assert_int_eq(bkm_tune_noise_parse_stat(stat_text, &cs, &t, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "cpu7"));
}
END_TEST

START_TEST(stat_old_and_malformed)
{
    bkm_tune_stat_ticks_t t;
    bkm_err_t err = {0};
    /* before 2.6.11: 7 fields, no steal: unsupported, said so */
    ck_assert_int_eq(bkm_tune_noise_parse_stat("cpu  1 2 3 4 5 6 7\n", NULL, &t, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "no steal field"));
    ck_assert_int_eq(bkm_tune_noise_parse_stat("cpu  1 2\n", NULL, &t, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_noise_parse_stat("intr 1 2 3\n", NULL, &t, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no aggregate"));
    ck_assert_int_eq(bkm_tune_noise_parse_stat("", NULL, &t, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_noise_parse_stat("cpu99999 1 2 3 4 5 6 7 8\n", NULL, &t, &err), BKM_EINVAL);
}
END_TEST

START_TEST(schedstat_format)
{
    uint64_t run, wait, sl;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_noise_parse_schedstat("215512431 85141355 2261\n", &run, &wait, &sl, &err), BKM_OK);
    ck_assert_uint_eq(run, 215512431);
    ck_assert_uint_eq(wait, 85141355);
    ck_assert_uint_eq(sl, 2261);
    ck_assert_int_eq(bkm_tune_noise_parse_schedstat("1 2\n", &run, &wait, &sl, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "three numbers"));
    ck_assert_int_eq(bkm_tune_noise_parse_schedstat("", &run, &wait, &sl, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_noise_parse_schedstat("x y z", &run, &wait, &sl, &err), BKM_EINVAL);
}
END_TEST

static const char sched_text[] =
    "head (27209, #threads: 1)\n"
    "-------------------------------------------------------------------\n"
    "se.exec_start                                :       8689289.419391\n"
    "se.nr_migrations                             :                   17\n"
    "nr_switches                                  :                    3\n"
    "nr_voluntary_switches                        :                    1\n"
    "nr_involuntary_switches                      :                    2\n";

START_TEST(sched_format)
{
    long long v = -1;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_noise_parse_sched(sched_text, "se.nr_migrations", &v, &err), BKM_OK);
    ck_assert_int_eq(v, 17);
    ck_assert_int_eq(bkm_tune_noise_parse_sched(sched_text, "nr_involuntary_switches", &v, &err), BKM_OK);
    ck_assert_int_eq(v, 2);
    /* a prefix of another field is not that field */
    ck_assert_int_eq(bkm_tune_noise_parse_sched(sched_text, "nr_switch", &v, &err), BKM_ENOTSUP);
    ck_assert_int_eq(bkm_tune_noise_parse_sched("x : 1\n", "se.nr_migrations", &v, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "se.nr_migrations"));
    /* not an integer (exec_start is fractional) */
    ck_assert_int_eq(bkm_tune_noise_parse_sched(sched_text, "se.exec_start", &v, &err), BKM_EINVAL);
}
END_TEST

/* The JSON of a session, parsed. */
static bkm_json_t *noise_doc(const bkm_tune_noise_t *n)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *doc = NULL;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_noise_to_json(n, &w);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &doc, NULL), BKM_OK);
    bkm_buf_free(&b);
    return doc;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A fake procfs: stat without steal, this thread's schedstat malformed, no sched file. */
START_TEST(fake_proc_unavailable_named)
{
    char root[] = "/tmp/bkm_noise_XXXXXX", path[512];
    bkm_tune_noise_t *n = NULL;
    bkm_err_t err = {0};
    bkm_json_t *doc;
    const bkm_json_t *th, *ps;
    int tid = (int)syscall(SYS_gettid);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(path, sizeof path, "%s/self", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/self/task", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/self/task/%d", root, tid);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/self/task/%d/schedstat", root, tid);
    write_file(path, "garbage\n");
    snprintf(path, sizeof path, "%s/stat", root);
    {   /* every CPU this process may run on has its line, none has the steal field */
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs("cpu  1 2 3 4 5 6 7\n", f);
        for (int c = 0; c < BKM_CPUSET_MAX; c++)
            fprintf(f, "cpu%d 1 2 3 4 5 6 7\n", c);
        fclose(f);
    }

    ck_assert_int_eq(bkm_tune_noise_open(&n, 1, root, 0, &err), BKM_OK);
    bkm_tune_noise_thread_begin(n, 0);
    bkm_tune_noise_process_begin(n);
    bkm_tune_noise_thread_end(n, 0);
    bkm_tune_noise_process_end(n);
    /* no source of the share: unknown, not "quiet" */
    ck_assert(isnan(bkm_tune_noise_share(n)));
    ck_assert_int_eq(bkm_tune_noise_disturbed(n), -1);
    ck_assert_int_eq(bkm_tune_noise_total(n, "migrations"), -1);
    ck_assert_int_ge(bkm_tune_noise_total(n, "involuntary_switches"), 0);   /* rusage still works */
    doc = noise_doc(n);
    ck_assert_int_eq(bkm_json_get(doc, "disturbed")->type, BKM_JSON_NULL);
    th = bkm_json_at(bkm_json_get(doc, "threads"), 0);
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(bkm_json_get(th, "proc-schedstat"), "unavailable"), "three numbers"));
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(bkm_json_get(th, "proc-sched"), "unavailable"), "No such file"));
    ck_assert_ptr_nonnull(bkm_json_get(bkm_json_get(th, "rusage"), "involuntary_switches"));
    ps = bkm_json_get(bkm_json_get(doc, "process"), "proc-stat");
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(ps, "unavailable"), "no steal field"));
    bkm_json_free(doc);
    bkm_tune_noise_close(n);

    /* no procfs at all: every /proc source names the missing file */
    snprintf(path, sizeof path, "%s/nothing", root);
    ck_assert_int_eq(bkm_tune_noise_open(&n, 1, path, 0.5, &err), BKM_OK);
    bkm_tune_noise_thread_begin(n, 0);
    bkm_tune_noise_process_begin(n);
    bkm_tune_noise_thread_end(n, 0);
    bkm_tune_noise_process_end(n);
    doc = noise_doc(n);
    ps = bkm_json_get(bkm_json_get(doc, "process"), "proc-stat");
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(ps, "unavailable"), "/nothing/stat: No such file"));
    bkm_json_free(doc);
    bkm_tune_noise_close(n);

    snprintf(path, sizeof path, "rm -rf '%s'", root);
    ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(open_refuses_bad_arguments)
{
    bkm_tune_noise_t *n = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_noise_open(&n, 0, NULL, 0, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_noise_open(&n, 1, NULL, 1.5, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1.5"));
    ck_assert_int_eq(bkm_tune_noise_open(&n, 1, NULL, NAN, &err), BKM_EINVAL);
    ck_assert_ptr_null(n);
    /* nothing measured: said so */
    ck_assert_int_eq(bkm_tune_noise_open(&n, 2, NULL, 0, &err), BKM_OK);
    {
        bkm_json_t *doc = noise_doc(n);
        ck_assert_ptr_nonnull(bkm_json_get_str(doc, "unavailable"));
        bkm_json_free(doc);
    }
    bkm_tune_noise_close(n);
    bkm_tune_noise_close(NULL);
}
END_TEST

static void spin_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6 < ms);
}

/* The real /proc over a busy team of 2: every source gives values, CPU time and run time agree
 * with the wall time they cover, and the mark follows the threshold. */
START_TEST(real_proc_every_value)
{
    bkm_tune_noise_t *n = NULL;
    bkm_err_t err = {0};
    bkm_json_t *doc;
    const bkm_json_t *threads;
    ck_assert_int_eq(bkm_tune_noise_open(&n, 2, NULL, 1.0, &err), BKM_OK);
    bkm_tune_noise_begin(n);
#pragma omp parallel num_threads(2)
    spin_ms(150);
    bkm_tune_noise_end(n);
    doc = noise_doc(n);
    ck_assert(!isnan(bkm_tune_noise_share(n)));
    ck_assert(bkm_tune_noise_share(n) >= 0);
    /* threshold 1.0: disturbed only if a thread waited longer than the region itself */
    ck_assert_int_ge(bkm_tune_noise_disturbed(n), 0);
    threads = bkm_json_get(doc, "threads");
    ck_assert_uint_eq(threads->n_children, 2);
    for (const bkm_json_t *t = threads->child; t; t = t->next) {
        const bkm_json_t *ru = bkm_json_get(t, "rusage"), *ss = bkm_json_get(t, "proc-schedstat"),
                         *sc = bkm_json_get(t, "proc-sched");
        double wall = bkm_json_get_num(t, "wall_s", NAN), cpu = bkm_json_get_num(ru, "cpu_s", NAN);
        double run = bkm_json_get_num(ss, "run_s", NAN), wait = bkm_json_get_num(ss, "wait_s", NAN);
        ck_assert_ptr_null(bkm_json_get(ru, "unavailable"));
        ck_assert_ptr_null(bkm_json_get(ss, "unavailable"));
        ck_assert_ptr_null(bkm_json_get(sc, "unavailable"));
        ck_assert(wall >= 0.14);
        /* run + wait covers the spin (the thread was either on a CPU or queued for one); within
         * a scheduler tick of accounting lag */
        ck_assert_msg(run + wait > 0.8 * wall - 0.02, "run %g + wait %g vs wall %g", run, wait, wall);
        ck_assert_msg(cpu <= wall + 0.02 && fabs(cpu - run) < 0.02 + 0.1 * run, "cpu %g run %g wall %g", cpu, run,
                      wall);
        ck_assert_int_ge(bkm_json_get_num(sc, "migrations", -1), 0);
    }
    ck_assert_ptr_null(bkm_json_get(bkm_json_get(bkm_json_get(doc, "process"), "proc-stat"), "unavailable"));
    ck_assert_ptr_null(bkm_json_get(bkm_json_get(bkm_json_get(doc, "process"), "rusage"), "unavailable"));
    ck_assert_int_ge(bkm_tune_noise_total(n, "involuntary_switches"), 0);
    ck_assert_int_ge(bkm_tune_noise_total(n, "migrations"), 0);
    bkm_json_free(doc);
    bkm_tune_noise_close(n);
}
END_TEST

static Suite *noise_suite(void)
{
    Suite *s = suite_create("noise");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, stat_aggregate_and_cpus);
    tcase_add_test(tc, stat_old_and_malformed);
    tcase_add_test(tc, schedstat_format);
    tcase_add_test(tc, sched_format);
    tcase_add_test(tc, fake_proc_unavailable_named);
    tcase_add_test(tc, open_refuses_bad_arguments);
    tcase_add_test(tc, real_proc_every_value);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(noise_suite)
