/* SPDX-License-Identifier: MIT */
/* Unit tests of the trial spec, the measurement protocol and the trial runner, driving a fake
 * worker (fake_worker.c) that crashes, hangs, fails or answers as told; plus the environment
 * the worker gets. */
#define _DEFAULT_SOURCE 1 /* mkdtemp */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/tuner.h"
#include "bkm/worker.h"

#ifndef BKM_FAKE_WORKER
#error "BKM_FAKE_WORKER must name the fake worker executable"
#endif

/* The parent environment the runner cleans. ASAN_OPTIONS: under -DBKM_SANITIZE=ON the fake
 * worker must die of its SIGSEGV, not have AddressSanitizer turn it into exit(1). */
static char *parent_env[] = {"PATH=/usr/bin:/bin", "KMP_AFFINITY=compact", "OMP_PLACES=cores",
                             "OMP_NUM_THREADS=7", "GOMP_CPU_AFFINITY=0-1", "BKM_TEST_KEEP=yes",
                             "HWLOC_XMLFILE=/nonexistent/other-machine.xml", "ONEDNN_VERBOSE=1",
                             "ASAN_OPTIONS=handle_segv=0:detect_leaks=0", NULL};

/* The stop flag a sweep's signal handler sets; here a timer (arm_stop) sets it. */
static volatile sig_atomic_t g_stop;
static void on_alarm(int sig)
{
    g_stop = SIGTERM;
    (void)sig;
}

/* Set g_stop to SIGTERM @p ms milliseconds from now (as a SIGTERM to the tuner would). */
static void arm_stop(int ms)
{
    struct sigaction sa;
    struct itimerval it;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    g_stop = 0;
    ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/* The fake worker's behaviour is chosen by the parameter mode=... (see fake_worker.c). */
static void run_fake_with(const char *mode, double timeout_s, const volatile sig_atomic_t *stop, size_t max_result,
                          bkm_tune_trial_result_t *r)
{
    char kv[64];
    bkm_tune_trial_spec_t spec;
    bkm_tune_runner_t rn = {BKM_FAKE_WORKER, NULL, parent_env, stop, max_result, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    snprintf(kv, sizeof kv, "mode=%s", mode);
    ck_assert_int_eq(bkm_tune_trial_spec_param(&spec, kv, &err), BKM_OK);
    spec.threads = 2;
    spec.timeout_s = timeout_s;
    ck_assert_msg(bkm_tune_trial_run(&rn, &spec, r, &err) == BKM_OK, "runner: %s", err.msg);
}

static void run_fake(const char *mode, double timeout_s, bkm_tune_trial_result_t *r)
{
    run_fake_with(mode, timeout_s, NULL, 0, r);
}

/* 1 while process @p pid exists and is not a zombie. */
static int process_alive(long pid)
{
    char path[64], st[512];
    FILE *f;
    size_t n;
    char *rp;
    if (pid <= 0 || kill((pid_t)pid, 0) != 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = '\0';
    rp = strrchr(st, ')');   /* "pid (comm) S ..." */
    return rp != NULL && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

static double seconds_since(uint64_t t0)
{
    return (double)(bkm_now_ns() - t0) * 1e-9;
}

static int count_open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* MPI trials: ranks travel in the spec's JSON; only the MPI workload takes them, and it needs them;
 * without a launcher the runner refuses to start (BKM_EDEP), before spawning anything. */
START_TEST(spec_ranks)
{
    bkm_tune_trial_spec_t a, b;
    bkm_tune_trial_result_t res;
    bkm_tune_runner_t rn = {BKM_FAKE_WORKER, NULL, parent_env, NULL, 0, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_buf_t buf;
    bkm_json_w_t w;
    bkm_tune_trial_spec_defaults(&a);
    snprintf(a.workload, sizeof a.workload, "%s", BKM_TUNE_TRAIN_WORKLOAD);
    ck_assert(bkm_tune_workload_is_mpi(a.workload));
    ck_assert(!bkm_tune_workload_is_mpi("gemm"));
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&a, &err), BKM_EINVAL);   /* ranks 0 */
    ck_assert_ptr_nonnull(strstr(err.msg, "ranks"));
    a.ranks = 2;
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&a, &err), BKM_OK);
    bkm_buf_init(&buf);
    bkm_json_w_init(&w, &buf, 0);
    bkm_tune_trial_spec_to_json(&a, &w);
    ck_assert_int_eq(bkm_tune_trial_spec_from_json(bkm_buf_str(&buf), &b, &err), BKM_OK);
    ck_assert_int_eq(b.ranks, 2);
    bkm_buf_free(&buf);
    a.ranks = BKM_TUNE_RANKS_MAX + 1;
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&a, &err), BKM_EINVAL);
    a.ranks = 2;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &a, &res, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "mpiexec"));
    bkm_tune_trial_result_free(&res);
    snprintf(a.workload, sizeof a.workload, "gemm");
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&a, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not an MPI workload"));
}
END_TEST

START_TEST(spec_roundtrip_and_validation)
{
    bkm_tune_trial_spec_t a, b;
    bkm_err_t err = {0};
    bkm_buf_t buf;
    bkm_json_w_t w;
    bkm_tune_trial_spec_defaults(&a);
    snprintf(a.workload, sizeof a.workload, "conv2d");
    a.threads = 3;
    a.seed = 12345678901234ull;
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&a, "KMP_AFFINITY", "granularity=fine,compact", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_param(&a, "mb=8", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_param(&a, "mb=16", &err), BKM_OK);   /* replaces */
    ck_assert_int_eq(a.n_params, 1);
    ck_assert_int_eq(bkm_tune_trial_spec_param(&a, "novalue", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "novalue"));
    ck_assert_int_eq(bkm_tune_trial_spec_param(&a, "=3", &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&a, "BAD NAME", "x", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "BAD NAME"));
    bkm_buf_init(&buf);
    bkm_json_w_init(&w, &buf, 0);
    bkm_tune_trial_spec_to_json(&a, &w);
    ck_assert_int_eq(bkm_tune_trial_spec_from_json(bkm_buf_str(&buf), &b, &err), BKM_OK);
    ck_assert_str_eq(b.workload, "conv2d");
    ck_assert_int_eq(b.threads, 3);
    ck_assert(b.seed == 12345678901234ull);
    ck_assert_str_eq(b.env[0].value, "granularity=fine,compact");
    ck_assert_str_eq(b.params[0].key, "mb");
    ck_assert_str_eq(b.params[0].value, "16");
    ck_assert_int_eq(b.min_samples, 5);
    bkm_buf_free(&buf);

    ck_assert_int_eq(bkm_tune_trial_spec_from_json("{\"workload\":\"gemm\",\"threads\":0}", &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "threads 0"));
    ck_assert_int_eq(bkm_tune_trial_spec_from_json("{\"threads\":2}", &b, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_trial_spec_from_json("[1]", &b, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_trial_spec_from_json("{\"workload\":\"gemm\",\"min_samples\":9,\"max_samples\":3}",
                                                   &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "max samples 3"));
    bkm_tune_trial_spec_defaults(&b);
    snprintf(b.workload, sizeof b.workload, "gemm");
    bkm_tune_trial_spec_setenv(&b, "OMP_NUM_THREADS", "4", &err);
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "OMP_NUM_THREADS"));
    bkm_tune_trial_spec_defaults(&b);
    snprintf(b.workload, sizeof b.workload, "gemm");
    snprintf(b.inject, sizeof b.inject, "segfault");
    ck_assert_int_eq(bkm_tune_trial_spec_validate(&b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'segfault'"));
}
END_TEST

START_TEST(env_check_refuses_another_topology)
{
    char *ok[] = {"PATH=/bin", "HWLOC_HIDE_ERRORS=1", "HWLOC_XMLFILE=", "ONEDNN_VERBOSE=1", "LD_PRELOAD=x.so", NULL};
    char *xml[] = {"PATH=/bin", "HWLOC_XMLFILE=/tmp/knl.xml", NULL};
    char *syn[] = {"HWLOC_SYNTHETIC=pack:2 core:4 pu:2", NULL};
    char *fsroot[] = {"HWLOC_FSROOT=/tmp/dump", NULL};
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_env_check(ok, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_env_check(NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_env_check(xml, &err), BKM_EDEP);
    ck_assert_msg(strstr(err.msg, "HWLOC_XMLFILE='/tmp/knl.xml'") != NULL, "%s", err.msg);
    ck_assert_int_eq(bkm_tune_env_check(syn, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "HWLOC_SYNTHETIC"));
    ck_assert_int_eq(bkm_tune_env_check(fsroot, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "HWLOC_FSROOT"));
    ck_assert(bkm_tune_env_is_hwloc("HWLOC_COMPONENTS"));
    ck_assert(!bkm_tune_env_is_hwloc("HWLOCX"));
    ck_assert_str_eq(bkm_trial_status_name(BKM_TRIAL_INTERRUPTED), "interrupted");
}
END_TEST

START_TEST(env_names)
{
    ck_assert(bkm_tune_env_is_openmp("OMP_NUM_THREADS"));
    ck_assert(bkm_tune_env_is_openmp("KMP_AFFINITY"));
    ck_assert(bkm_tune_env_is_openmp("GOMP_CPU_AFFINITY"));
    ck_assert(!bkm_tune_env_is_openmp("PATH"));
    ck_assert(!bkm_tune_env_is_openmp("MKL_NUM_THREADS"));
    ck_assert_str_eq(bkm_trial_status_name(BKM_TRIAL_BINDING_MISMATCH), "binding-mismatch");
}
END_TEST

START_TEST(ok_result_is_parsed_and_env_is_clean)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("", 30, &r);
    ck_assert_msg(r.status == BKM_TRIAL_OK, "status %s: %s", bkm_trial_status_name(r.status), r.message);
    ck_assert_int_eq(r.n_samples, 5);
    ck_assert(fabs(r.samples_ms[2] - 1.75) < 1e-12);
    ck_assert(fabs(r.median_ms - 1.5) < 1e-12);
    ck_assert(fabs(r.ci95_hi_ms - 1.75) < 1e-12);
    ck_assert_str_eq(r.check_kind, "checksum");
    ck_assert(fabs(r.check_value - 42.5) < 1e-12);
    ck_assert_str_eq(r.impl, "fake");
    ck_assert_int_eq(r.n_counters, 2);
    ck_assert_str_eq(r.counters[0].name, "perf::TASK-CLOCK");
    ck_assert_int_eq(r.counters[0].available, 1);
    ck_assert_int_eq(r.counters[1].available, 0);
    ck_assert_str_eq(r.counters[1].reason, "Event does not exist");
    /* The parent's OpenMP variables do not leak; the trial's thread count does; others stay. */
    const bkm_json_t *env = bkm_json_get(r.doc, "env");
    ck_assert_str_eq(bkm_json_get_str(env, "KMP_AFFINITY"), "(unset)");
    ck_assert_str_eq(bkm_json_get_str(env, "OMP_PLACES"), "(unset)");
    ck_assert_str_eq(bkm_json_get_str(env, "OMP_NUM_THREADS"), "2");
    ck_assert_str_eq(bkm_json_get_str(env, "BKM_TEST_KEEP"), "yes");
    /* hwloc's variables never reach the worker; the user's oneDNN ones do */
    ck_assert_str_eq(bkm_json_get_str(env, "HWLOC_XMLFILE"), "(unset)");
    ck_assert_str_eq(bkm_json_get_str(env, "ONEDNN_VERBOSE"), "1");
    ck_assert(r.wall_s > 0);
    bkm_tune_trial_result_free(&r);
}
END_TEST

START_TEST(trial_env_is_set)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t r = {0};
    bkm_tune_runner_t rn = {BKM_FAKE_WORKER, NULL, parent_env, NULL, 0, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    spec.threads = 1;
    bkm_tune_trial_spec_setenv(&spec, "KMP_AFFINITY", "granularity=fine,scatter", &err);
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_OK);
    ck_assert_int_eq(r.status, BKM_TRIAL_OK);
    const bkm_json_t *env = bkm_json_get(r.doc, "env");
    ck_assert_str_eq(bkm_json_get_str(env, "KMP_AFFINITY"), "granularity=fine,scatter");
    ck_assert_str_eq(bkm_json_get_str(env, "OMP_NUM_THREADS"), "1");
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* libomp 14 reads OMP_PROC_BIND, OMP_PLACES and a type-less KMP_AFFINITY in environment order;
 * the runner writes them in the planner's order (bkm_aff_env_export) whatever the spec's order. */
START_TEST(trial_env_follows_planner_order)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t r = {0};
    bkm_tune_runner_t rn = {BKM_FAKE_WORKER, NULL, parent_env, NULL, 0, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    spec.threads = 1;
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&spec, "KMP_BLOCKTIME", "0", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&spec, "KMP_AFFINITY", "granularity=fine", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&spec, "OMP_PLACES", "cores", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&spec, "OMP_PROC_BIND", "false", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_OK);
    ck_assert_int_eq(r.status, BKM_TRIAL_OK);
    ck_assert_str_eq(bkm_json_get_str(r.doc, "env_order"),
                     "OMP_PROC_BIND;OMP_PLACES;KMP_AFFINITY;KMP_BLOCKTIME;OMP_NUM_THREADS;");
    bkm_tune_trial_result_free(&r);
}
END_TEST

START_TEST(segv_is_crashed_with_signal_name)
{
    bkm_tune_trial_result_t r = {0};
    int fds = count_open_fds();
    run_fake("segv", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_CRASHED);
    ck_assert_str_eq(r.signal_name, "SIGSEGV");
    ck_assert_int_eq(r.exit_code, -1);
    ck_assert_ptr_nonnull(strstr(r.stderr_tail, "about to crash"));
    ck_assert_ptr_nonnull(strstr(r.message, "SIGSEGV"));
    bkm_tune_trial_result_free(&r);
    ck_assert_int_eq(count_open_fds(), fds);   /* no descriptor leaked */
}
END_TEST

START_TEST(sigkill_is_crashed)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("sigkill", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_CRASHED);
    ck_assert_str_eq(r.signal_name, "SIGKILL");
    bkm_tune_trial_result_free(&r);
}
END_TEST

START_TEST(hang_times_out_within_the_limit)
{
    bkm_tune_trial_result_t r = {0};
    int fds = count_open_fds();
    uint64_t t0 = bkm_now_ns();
    run_fake("hang", 0.5, &r);
    double took = (double)(bkm_now_ns() - t0) * 1e-9;
    ck_assert_int_eq(r.status, BKM_TRIAL_TIMEOUT);
    ck_assert_msg(took >= 0.45 && took < 5.0, "took %g s", took);
    ck_assert_ptr_nonnull(strstr(r.message, "timeout"));
    bkm_tune_trial_result_free(&r);
    ck_assert_int_eq(count_open_fds(), fds);
}
END_TEST

START_TEST(nonzero_exit_is_failed_with_stderr_tail)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("exit3", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_FAILED);
    ck_assert_int_eq(r.exit_code, 3);
    ck_assert_uint_eq(strlen(r.stderr_tail), BKM_TUNE_STDERR_TAIL);
    ck_assert_ptr_nonnull(strstr(r.stderr_tail, "workload exploded"));
    ck_assert_ptr_null(strstr(r.stderr_tail, "noise line 000"));
    ck_assert_msg(strstr(r.message, "code 3: fake_worker: workload exploded") != NULL, "message: %s", r.message);
    bkm_tune_trial_result_free(&r);
}
END_TEST

START_TEST(bad_json_is_failed)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("badjson", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_FAILED);
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_msg(strstr(r.message, "not JSON") != NULL, "message: %s", r.message);
    bkm_tune_trial_result_free(&r);
    run_fake("nosamples", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_FAILED);
    ck_assert_ptr_nonnull(strstr(r.message, "samples_ms"));
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* A NaN or infinite sample fails the trial with a message; the runner returns normally, so the
 * sweep stores the trial as failed and goes on. */
START_TEST(non_finite_sample_is_failed)
{
    static const char *const modes[] = {"nan", "inf", "nullsample"};
    static const char *const says[] = {"non-finite number 'NaN'", "non-finite sample 2 in samples_ms (inf)",
                                       "non-finite sample 2 in samples_ms (null)"};
    for (int i = 0; i < 3; i++) {
        bkm_tune_trial_result_t r = {0};
        run_fake(modes[i], 30, &r);
        ck_assert_int_eq(r.status, BKM_TRIAL_FAILED);
        ck_assert_int_eq(r.exit_code, 0);
        ck_assert_msg(strstr(r.message, says[i]) != NULL, "%s: message: %s", modes[i], r.message);
        ck_assert_int_eq(r.n_samples, 0);   /* a failed parse keeps no sample, finite or not */
        bkm_tune_trial_result_free(&r);
    }
    /* a statistic or a counter beyond a double (or a long long) fails the parse the same way */
    {
        static const char *const docs[] = {"{\"samples_ms\":[1],\"median_ms\":-1e999}",
                                           "{\"samples_ms\":[1],\"gflops\":1e400}",
                                           "{\"samples_ms\":[1],\"counters\":{\"values\":{\"PAPI_X\":1e999}}}",
                                           "{\"samples_ms\":[1],\"counters\":{\"values\":{\"PAPI_X\":1e19}}}"};
        static const char *const names[] = {"median_ms", "gflops", "PAPI_X", "PAPI_X"};
        for (int i = 0; i < 4; i++) {
            bkm_tune_trial_result_t r = {0};
            bkm_err_t err = {0};
            ck_assert_int_eq(bkm_tune_trial_result_parse(&r, docs[i], &err), BKM_EINVAL);
            ck_assert_msg(strstr(err.msg, "non-finite") && strstr(err.msg, names[i]), "%s", err.msg);
            bkm_tune_trial_result_free(&r);
        }
    }
}
END_TEST

START_TEST(binding_mismatch_is_its_own_status)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("mismatch", 30, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_BINDING_MISMATCH);
    ck_assert_int_eq(r.exit_code, BKM_WORKER_EXIT_BINDING);
    ck_assert_ptr_nonnull(strstr(r.message, "planned"));
    ck_assert_ptr_nonnull(bkm_json_get(r.doc, "binding"));
    bkm_tune_trial_result_free(&r);
}
END_TEST

START_TEST(missing_worker_is_an_environment_error)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t r = {0};
    bkm_tune_runner_t rn = {"/nonexistent/tune", NULL, parent_env, NULL, 0, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/tune"));
    spec.threads = 0;
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_EINVAL);
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* What a library prints on stdout (ONEDNN_VERBOSE=1) lands in the tail, never in the JSON. */
START_TEST(stdout_noise_leaves_the_result_alone)
{
    bkm_tune_trial_result_t r = {0};
    run_fake("stdout-noise", 30, &r);
    ck_assert_msg(r.status == BKM_TRIAL_OK, "status %s: %s", bkm_trial_status_name(r.status), r.message);
    ck_assert_int_eq(r.n_samples, 5);
    ck_assert_ptr_nonnull(strstr(r.stderr_tail, "the last word on stdout"));
    ck_assert_ptr_null(strstr(r.json, "onednn_verbose"));
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* The worker answered and exited, a grandchild holds the pipes open for a minute: the trial is
 * ok at once, not a timeout, and the grandchild (its process group) is killed. */
START_TEST(worker_exit_ends_the_trial_despite_a_grandchild)
{
    bkm_tune_trial_result_t r = {0};
    int fds = count_open_fds();
    uint64_t t0 = bkm_now_ns();
    long g;
    run_fake("grandchild", 30, &r);
    ck_assert_msg(r.status == BKM_TRIAL_OK, "status %s: %s", bkm_trial_status_name(r.status), r.message);
    ck_assert_msg(seconds_since(t0) < 10.0, "took %g s", seconds_since(t0));
    g = (long)bkm_json_get_num(r.doc, "grandchild", 0);
    ck_assert_int_gt(g, 0);
    for (int i = 0; i < 500 && process_alive(g); i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(!process_alive(g), "grandchild %ld still runs", g);
    bkm_tune_trial_result_free(&r);
    ck_assert_int_eq(count_open_fds(), fds);
}
END_TEST

/* JSON over the cap fails the trial (not the caller), at once, not at the timeout. */
START_TEST(overlong_result_fails_the_trial)
{
    bkm_tune_trial_result_t r = {0};
    uint64_t t0 = bkm_now_ns();
    run_fake_with("bigout", 30, NULL, (size_t)1 << 20, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_FAILED);
    ck_assert_msg(strstr(r.message, "more than 1048576 bytes") != NULL, "message: %s", r.message);
    ck_assert_ptr_null(r.json);
    ck_assert_msg(seconds_since(t0) < 10.0, "took %g s", seconds_since(t0));
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* A worker writing stderr without a pause still times out on time; only the tail is kept. */
START_TEST(endless_output_still_times_out)
{
    bkm_tune_trial_result_t r = {0};
    uint64_t t0 = bkm_now_ns();
    run_fake("spew", 1.0, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_TIMEOUT);
    ck_assert_msg(seconds_since(t0) < 10.0, "took %g s", seconds_since(t0));
    ck_assert_uint_eq(strlen(r.stderr_tail), BKM_TUNE_STDERR_TAIL);
    ck_assert_ptr_nonnull(strstr(r.stderr_tail, "sss\n"));
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* A stop (SIGINT/SIGTERM to the tuner) kills the running trial at once: interrupted. */
START_TEST(stop_interrupts_the_running_trial)
{
    bkm_tune_trial_result_t r = {0};
    int fds = count_open_fds();
    uint64_t t0 = bkm_now_ns();
    arm_stop(300);
    run_fake_with("hang", 60, &g_stop, 0, &r);
    ck_assert_msg(r.status == BKM_TRIAL_INTERRUPTED, "status %s: %s", bkm_trial_status_name(r.status),
                  r.message);
    ck_assert_msg(seconds_since(t0) < 10.0, "took %g s", seconds_since(t0));
    ck_assert_ptr_nonnull(strstr(r.message, "interrupted"));
    bkm_tune_trial_result_free(&r);
    ck_assert_int_eq(count_open_fds(), fds);
    /* a stop that came before the trial: no worker is started */
    run_fake_with("hang", 60, &g_stop, 0, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_INTERRUPTED);
    ck_assert(r.wall_s == 0);
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* Slurm signals every process of the job: the worker may die of SIGTERM before the tuner's
 * handler runs. Interrupted when the stop follows; crashed when none comes. */
START_TEST(sigterm_death_is_interrupted_when_the_stop_follows)
{
    bkm_tune_trial_result_t r = {0};
    static volatile sig_atomic_t never;
    uint64_t t0;
    arm_stop(300);
    run_fake_with("sigterm", 30, &g_stop, 0, &r);
    ck_assert_msg(r.status == BKM_TRIAL_INTERRUPTED, "status %s: %s", bkm_trial_status_name(r.status),
                  r.message);
    bkm_tune_trial_result_free(&r);
    t0 = bkm_now_ns();
    run_fake_with("sigterm", 30, &never, 0, &r);
    ck_assert_int_eq(r.status, BKM_TRIAL_CRASHED);
    ck_assert_str_eq(r.signal_name, "SIGTERM");
    ck_assert_msg(seconds_since(t0) >= 1.9, "crashed after %g s, before the grace period", seconds_since(t0));
    bkm_tune_trial_result_free(&r);
    run_fake("sigterm", 30, &r);   /* no stop flag at all: crashed at once */
    ck_assert_int_eq(r.status, BKM_TRIAL_CRASHED);
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* With SIGCHLD ignored the kernel reaps the worker and its status is lost: refused, named. */
START_TEST(ignored_sigchld_is_refused)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t r = {0};
    bkm_tune_runner_t rn = {BKM_FAKE_WORKER, NULL, parent_env, NULL, 0, NULL, NULL, NULL};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    snprintf(spec.workload, sizeof spec.workload, "gemm");
    signal(SIGCHLD, SIG_IGN);
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "SIGCHLD"));
    signal(SIGCHLD, SIG_DFL);
    ck_assert_int_eq(bkm_tune_trial_run(&rn, &spec, &r, &err), BKM_OK);
    ck_assert_int_eq(r.status, BKM_TRIAL_OK);
    bkm_tune_trial_result_free(&r);
}
END_TEST

/* A 1 ms iteration (50 ms for the first slow_first calls); fails on call fail_at when > 0. It
 * sleeps rather than spins, so that its duration holds on a loaded machine. */
typedef struct busy { int calls, fail_at, slow_first; } busy_t;
static int busy_iter(void *ctx, bkm_err_t *err)
{
    busy_t *b = ctx;
    struct timespec ts = {0, 1000000L};
    if (++b->calls == b->fail_at)
        return bkm_err_set(err, BKM_EFAIL, "iteration %d failed", b->calls);
    if (b->calls <= b->slow_first)
        ts.tv_nsec = 50000000L;
    while (nanosleep(&ts, &ts) != 0)
        ;
    return BKM_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(measure_follows_the_protocol)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_samples_t s = {0};
    busy_t b = {0, 0, 0};
    bkm_err_t err = {0};
    bkm_tune_trial_spec_defaults(&spec);
    spec.warmup = 4;
    spec.min_samples = 5;
    spec.max_samples = 8;
    spec.min_time_s = 0.03;
    spec.target_ci_rel = 0.0;   /* never narrow enough: runs to max-samples (after min_time) */
    ck_assert_int_eq(bkm_tune_measure(&spec, busy_iter, &b, NULL, NULL, 1, &s, &err), BKM_OK);
    ck_assert_int_ge(s.n_warmup, 1);
    ck_assert_int_le(s.n_warmup, 4);
    ck_assert_int_ge(s.n, 5);
    ck_assert(s.total_s >= 0.03);   /* min_time wins over max_samples */
    ck_assert_int_eq(b.calls, s.n_warmup + s.n);
    ck_assert_str_eq(s.stop_reason, "max-samples");
    ck_assert(s.min >= 0.9 && s.min <= s.median && s.median <= s.max);
    ck_assert(s.ci_lo <= s.median && s.median <= s.ci_hi);
    {   /* min, max, median and MAD agree with the samples themselves (sorted copy) */
        double *v = malloc((size_t)s.n * sizeof *v), med, *dev = malloc((size_t)s.n * sizeof *dev);
        ck_assert_ptr_nonnull(v);
        ck_assert_ptr_nonnull(dev);
        memcpy(v, s.ms, (size_t)s.n * sizeof *v);
        qsort(v, (size_t)s.n, sizeof *v, cmp_double);
        med = s.n % 2 ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
        ck_assert_double_eq(s.min, v[0]);
        ck_assert_double_eq(s.max, v[s.n - 1]);
        ck_assert_double_eq_tol(s.median, med, 1e-12);
        for (int i = 0; i < s.n; i++)
            dev[i] = fabs(s.ms[i] - med);
        qsort(dev, (size_t)s.n, sizeof *dev, cmp_double);
        ck_assert_double_eq_tol(s.mad, s.n % 2 ? dev[s.n / 2] : 0.5 * (dev[s.n / 2 - 1] + dev[s.n / 2]), 1e-12);
        free(v);
        free(dev);
    }
    for (int i = 0; i < s.n; i++)
        ck_assert(s.ms[i] >= s.min && s.ms[i] <= s.max);

    /* A loose target stops as soon as min_samples and min_time are met. */
    spec.target_ci_rel = 1e6;   /* any interval is narrow enough */
    spec.max_samples = 1000;
    spec.min_time_s = 0;
    b.calls = 0;
    ck_assert_int_eq(bkm_tune_measure(&spec, busy_iter, &b, NULL, NULL, 1, &s, &err), BKM_OK);
    ck_assert_str_eq(s.stop_reason, "ci");
    ck_assert_int_eq(s.n, 5);

    /* max_time ends the adaptive repetition (min_samples and min_time still hold). */
    spec.target_ci_rel = 0.0;
    spec.max_samples = 100000;
    spec.min_time_s = 0.01;
    spec.max_time_s = 0.02;
    b.calls = 0;
    ck_assert_int_eq(bkm_tune_measure(&spec, busy_iter, &b, NULL, NULL, 1, &s, &err), BKM_OK);
    ck_assert_str_eq(s.stop_reason, "max-time");
    ck_assert(s.total_s >= 0.02 && s.total_s < 1.0);

    /* A slow warm-up underestimates the samples min_time needs: the arrays grow, min_time holds. */
    spec.warmup = 2;
    spec.min_time_s = 0.1;
    spec.max_time_s = 30;
    spec.max_samples = 8;
    spec.target_ci_rel = 1e6;
    b.calls = 0;
    b.slow_first = 2;
    ck_assert_int_eq(bkm_tune_measure(&spec, busy_iter, &b, NULL, NULL, 1, &s, &err), BKM_OK);
    ck_assert_int_eq(s.n_warmup, 2);
    ck_assert(s.total_s >= 0.1);
    ck_assert_str_eq(s.stop_reason, "ci");
    ck_assert_int_gt(s.n, 9);   /* capacity from the 50 ms warm-up: max(8, 2 x 100 / 50 + 5) */
    b.slow_first = 0;

    /* An iteration's error ends the measurement with that error. */
    b.calls = 0;
    b.fail_at = 7;
    ck_assert_int_eq(bkm_tune_measure(&spec, busy_iter, &b, NULL, NULL, 1, &s, &err), BKM_EFAIL);
    ck_assert_ptr_nonnull(strstr(err.msg, "iteration 7"));
    bkm_tune_samples_free(&s);
}
END_TEST

static void touch_file(const char *dir, const char *name, size_t size)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < size; i++)
        fputc('x', f);
    fclose(f);
}

static int file_exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* A zero-length libomp registration of a dead process is removed (libomp 14 would SIGBUS the next
 * process with that pid); a live process's, a sized one and other names stay; an unreadable
 * directory is an error. */
START_TEST(stale_kmp_registration_is_removed)
{
    char dir[] = "/tmp/bkm_kmp_XXXXXX", dead[64], alive[64], sized[64];
    bkm_err_t err = {0};
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(child, NULL, 0), child); /* reaped: the pid names no process now */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dead, sizeof dead, "__KMP_REGISTERED_LIB_%d_0", (int)child);
    snprintf(alive, sizeof alive, "__KMP_REGISTERED_LIB_%d_0", (int)getpid());
    snprintf(sized, sizeof sized, "__KMP_REGISTERED_LIB_%d_1", (int)child);
    touch_file(dir, dead, 0);
    touch_file(dir, alive, 0);
    touch_file(dir, sized, 1024);
    touch_file(dir, "__KMP_REGISTERED_LIB_x_0", 0);
    touch_file(dir, "unrelated", 0);
    ck_assert_int_eq(bkm_tune_clear_stale_kmp(dir, &err), 1);
    ck_assert(!file_exists(dir, dead));
    ck_assert(file_exists(dir, alive));
    ck_assert(file_exists(dir, sized));
    ck_assert(file_exists(dir, "__KMP_REGISTERED_LIB_x_0"));
    ck_assert(file_exists(dir, "unrelated"));
    ck_assert_int_eq(bkm_tune_clear_stale_kmp(dir, &err), 0);
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
    }
    ck_assert_int_eq(bkm_tune_clear_stale_kmp("/nonexistent/bkm-shm", &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/bkm-shm"));
}
END_TEST

static Suite *trial_suite(void)
{
    Suite *s = suite_create("trial");
    TCase *spec = tcase_create("spec");
    TCase *run = tcase_create("runner");
    tcase_add_test(spec, spec_roundtrip_and_validation);
    tcase_add_test(spec, spec_ranks);
    tcase_add_test(spec, env_names);
    tcase_add_test(spec, env_check_refuses_another_topology);
    tcase_add_test(spec, measure_follows_the_protocol);
    tcase_set_timeout(run, 30);
    tcase_add_test(run, ok_result_is_parsed_and_env_is_clean);
    tcase_add_test(run, trial_env_is_set);
    tcase_add_test(run, segv_is_crashed_with_signal_name);
    tcase_add_test(run, sigkill_is_crashed);
    tcase_add_test(run, hang_times_out_within_the_limit);
    tcase_add_test(run, nonzero_exit_is_failed_with_stderr_tail);
    tcase_add_test(run, bad_json_is_failed);
    tcase_add_test(run, binding_mismatch_is_its_own_status);
    tcase_add_test(run, non_finite_sample_is_failed);
    tcase_add_test(run, missing_worker_is_an_environment_error);
    tcase_add_test(run, trial_env_follows_planner_order);
    tcase_add_test(run, stdout_noise_leaves_the_result_alone);
    tcase_add_test(run, worker_exit_ends_the_trial_despite_a_grandchild);
    tcase_add_test(run, overlong_result_fails_the_trial);
    tcase_add_test(run, endless_output_still_times_out);
    tcase_add_test(run, stop_interrupts_the_running_trial);
    tcase_add_test(run, sigterm_death_is_interrupted_when_the_stop_follows);
    tcase_add_test(run, ignored_sigchld_is_refused);
    tcase_add_test(run, stale_kmp_registration_is_removed);
    suite_add_tcase(s, spec);
    suite_add_tcase(s, run);
    return s;
}

BKM_CHECK_MAIN(trial_suite)
