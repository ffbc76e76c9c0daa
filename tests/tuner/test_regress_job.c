/* SPDX-License-Identifier: MIT */
/* Unit tests of the regression gate's workflow (tuner/regress_job.c) where it decides before any
 * process starts: the mode rules, the suite refused, a baseline of another machine, an MPI
 * workload without a launcher; the MPI launcher choice (tuner/launcher.c) that the sweep
 * shares; and the comparison's decision per workload on values with known answers. The
 * measurement itself is tested through `tune regress` (test_regress). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/tuner.h"

static char dir[64];

static void fake_program(const char *name)
{
    char path[128];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0700), 0);
}

static void dir_setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bkm-test-launcher-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
    char path[128];
    static const char *const names[] = {"mpiexec", "srun"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* srun inside a Slurm allocation, else mpiexec; a missing one named with how to install it */
START_TEST(launcher_follows_the_allocation)
{
    bkm_tune_runner_t r;
    bkm_err_t err = {0};
    char found[256], path[192], want[256];
    memset(&r, 0, sizeof r);
    snprintf(path, sizeof path, "/nonexistent:%s", dir);
    ck_assert_int_eq(bkm_tune_launcher_choose(&r, path, NULL, found, sizeof found, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "'mpiexec' is not installed"));
    ck_assert_ptr_nonnull(strstr(err.msg, "apt-get install mpich"));
    ck_assert_ptr_null(r.launcher);
    fake_program("mpiexec");
    ck_assert_int_eq(bkm_tune_launcher_choose(&r, path, NULL, found, sizeof found, &err), BKM_OK);
    snprintf(want, sizeof want, "%s/mpiexec", dir);
    ck_assert_str_eq(r.launcher, want);
    ck_assert_ptr_null(r.slurm_job_id);
    ck_assert_int_eq(bkm_tune_launcher_choose(&r, path, "", found, sizeof found, &err), BKM_OK);   /* empty: none */
    ck_assert_ptr_null(r.slurm_job_id);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(bkm_tune_launcher_choose(&r, path, "4242", found, sizeof found, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "'srun' is not installed"));
    ck_assert_ptr_nonnull(strstr(err.msg, "4242"));
    ck_assert_ptr_null(r.launcher);
    fake_program("srun");
    ck_assert_int_eq(bkm_tune_launcher_choose(&r, path, "4242", found, sizeof found, &err), BKM_OK);
    snprintf(want, sizeof want, "%s/srun", dir);
    ck_assert_str_eq(r.launcher, want);
    ck_assert_str_eq(r.slurm_job_id, "4242");
}
END_TEST

static void job_init(bkm_tune_regress_job_t *job, bkm_tune_runner_t *runner)
{
    static char *const env[] = {"PATH=/nonexistent", NULL};
    memset(runner, 0, sizeof *runner);
    runner->worker_path = "/nonexistent/tune";
    memset(job, 0, sizeof *job);
    job->threshold = BKM_TUNE_REGRESS_THRESHOLD;
    job->alpha = BKM_TUNE_REGRESS_ALPHA;
    job->seed = 1;
    job->runner = runner;
    job->environ = env;
    job->path = "/nonexistent";
    job->hostname = "testhost";
    job->revision = "r1";
    job->when = "2026-12-01T00:00:00Z";
    job->db_path = "/nonexistent/gate.sqlite";
}

/* The mode rules, in the words of `tune regress` (unchanged from the CLI's) */
START_TEST(mode_rules)
{
    static const struct {
        int record, json;
        const char *output, *baseline, *against, *junit, *msg;
    } bad[] = {
        {0, 0, NULL, NULL, NULL, NULL, "give exactly one of --record, --baseline FILE, --against TUNE"},
        {1, 0, "x.json", "b.json", NULL, NULL, "give exactly one of --record, --baseline FILE, --against TUNE"},
        {0, 0, NULL, "b.json", "/bin/sh", NULL, "give exactly one of --record, --baseline FILE, --against TUNE"},
        {1, 0, NULL, NULL, NULL, NULL, "--record needs -o FILE"},
        {1, 0, "x.json", NULL, NULL, "j.xml", "--junit is for a check (--baseline or --against), not --record"},
        {1, 1, "x.json", NULL, NULL, NULL, "--json is for a check (--baseline or --against), not --record"},
        {0, 0, "x.json", "b.json", NULL, NULL, "-o 'x.json' is only for --record (--junit OUT writes the comparison)"},
    };
    bkm_tune_regress_job_t job;
    bkm_tune_runner_t runner;
    bkm_tune_regress_outcome_t out;
    bkm_err_t err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        job_init(&job, &runner);
        job.record = bad[i].record;
        job.json = bad[i].json;
        job.output = bad[i].output;
        job.baseline_path = bad[i].baseline;
        job.against = bad[i].against;
        job.junit = bad[i].junit;
        ck_assert_int_eq(bkm_tune_regress_job_check(&job, &err), BKM_EINVAL);
        ck_assert_str_eq(err.msg, bad[i].msg);
        /* the run checks them first, before anything else */
        ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_EINVAL);
        ck_assert_str_eq(err.msg, bad[i].msg);
        bkm_tune_regress_outcome_free(&out);
    }
    job_init(&job, &runner);
    job.against = "/nonexistent/tune";
    ck_assert_int_eq(bkm_tune_regress_job_check(&job, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "--against '/nonexistent/tune': not an executable"));
    job.against = "/bin/sh";
    ck_assert_int_eq(bkm_tune_regress_job_check(&job, &err), BKM_OK);
    job_init(&job, &runner);
    job.record = 1;
    job.output = "x.json";
    ck_assert_int_eq(bkm_tune_regress_job_check(&job, &err), BKM_OK);
    job.processes_max = 24;   /* more blocks only where a comparison decides them */
    ck_assert_int_eq(bkm_tune_regress_job_check(&job, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "--processes-max is for a check (--baseline or --against), not --record");
    ck_assert_str_eq(bkm_tune_regress_verdict_name(BKM_TUNE_REGRESS_INCOMPLETE), "incomplete");
    bkm_tune_regress_outcome_free(NULL);
}
END_TEST

/* Refusals before any process starts: nothing is measured, nothing stored */
START_TEST(refused_before_measuring)
{
    static const char other[] =
        "{\"format\":\"bkm-regress-baseline\",\"version\":1,\"git_revision\":\"r0\",\"created_at\":\"c\","
        "\"host\":{\"hostname\":\"far\",\"cpu_model\":\"Far CPU\",\"fingerprint\":\"2p/2n/64c/128t/avx2\"},"
        "\"processes\":3,\"calibration\":{\"workload\":\"gemm\",\"threads\":1,\"params\":{\"m\":\"256\","
        "\"n\":\"256\",\"k\":\"256\"}},\"workloads\":[{\"workload\":\"gemm\",\"spec\":{\"workload\":\"gemm\","
        "\"threads\":1,\"params\":{\"m\":\"256\"}},\"values\":[1,1,1]}]}";
    bkm_tune_regress_job_t job;
    bkm_tune_runner_t runner;
    bkm_tune_regress_outcome_t out;
    bkm_err_t err = {0};
    job_init(&job, &runner);
    job.record = 1;
    job.output = "x.json";
    job.workloads = "gemm,fft";
    ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--workloads: 'fft' is not in the suite"));
    ck_assert_uint_eq(out.baseline.len, 0);
    bkm_tune_regress_outcome_free(&out);
    /* an MPI workload with no launcher on PATH: named, with the workload to leave out */
    job.workloads = "fmnist-sgd";
    ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "workload fmnist-sgd runs as an MPI job"));
    ck_assert_ptr_nonnull(strstr(err.msg, "'mpiexec' is not installed"));
    bkm_tune_regress_outcome_free(&out);
    /* a baseline of another machine: not comparable here */
    job_init(&job, &runner);
    job.baseline_path = "other.json";
    job.baseline_text = other;
    ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "baseline other.json was recorded on far (Far CPU, topology/ISA "
                                          "2p/2n/64c/128t/avx2)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "not comparable here"));
    ck_assert_uint_eq(out.report.len, 0);
    bkm_tune_regress_outcome_free(&out);
    /* a malformed baseline: named with its file */
    job.baseline_text = "{\"format\":\"something else\"}";
    ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "other.json: baseline: not a bkm regression baseline (format is not "
                              "\"bkm-regress-baseline\")");
    bkm_tune_regress_outcome_free(&out);
    /* a workload's spec this host cannot run: refused naming it */
    job_init(&job, &runner);
    job.record = 1;
    job.output = "x.json";
    job.workloads = "gemm";
    job.threads = 4096;
    ck_assert_int_eq(bkm_tune_regress_job_run(&job, &out, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "workload gemm: "));
    bkm_tune_regress_outcome_free(&out);
}
END_TEST

/* The gate's decision per workload on values with known answers, over two looks (blocks of 6,
 * at most 12, A/B): 2x slower, a regression; the same time with 0.2% noise, "not slower by more
 * than X%" below the threshold; 40% noise, undecided (it passes); two values, not compared. */
static uint64_t rng = 99;
static double noisy(double sd)
{
    double u, v;
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    u = (double)((rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    v = (double)((rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
    return exp(sd * sqrt(-2.0 * log(u > 1e-300 ? u : 1e-300)) * cos(6.283185307179586 * v));
}

START_TEST(compare_decides_each_workload)
{
    static const struct {
        const char *name;
        double slower, sd;
        size_t n;
    } wl[] = {{"slow", 2.0, 0.01, 12}, {"same", 1.0, 0.002, 12}, {"noisy", 1.0, 0.4, 12}, {"broken", 1.0, 0.01, 2}};
    bkm_tune_regress_t r;
    bkm_json_w_t w;
    bkm_buf_t js, table;
    bkm_err_t err = {0};
    memset(&r, 0, sizeof r);
    r.ab = 1;
    r.processes = 6;
    r.processes_max = 12;
    r.looks = 2;
    r.n_wl = 4;
    for (size_t i = 0; i < r.n_wl; i++) {
        bkm_tune_regress_wl_t *x = &r.wl[i];
        snprintf(x->name, sizeof x->name, "%s", wl[i].name);
        x->values = malloc(12 * sizeof *x->values);
        x->ref_values = malloc(12 * sizeof *x->ref_values);
        x->n_at = malloc(2 * sizeof *x->n_at);
        x->n_ref_at = malloc(2 * sizeof *x->n_ref_at);
        for (size_t k = 0; k < wl[i].n; k++) {
            x->values[k] = wl[i].slower * noisy(wl[i].sd);
            x->ref_values[k] = noisy(wl[i].sd);
        }
        x->n = x->n_ref = wl[i].n;
        x->n_at[0] = x->n_ref_at[0] = wl[i].n < 6 ? wl[i].n : 6;
        x->n_at[1] = x->n_ref_at[1] = wl[i].n;
        x->looks = 2;
    }
    ck_assert_int_eq(bkm_tune_regress_compare(&r, 0.10, 0.01, &err), BKM_OK);
    ck_assert_int_eq(r.regressions, 1);
    ck_assert_int_eq(r.wl[0].decision, BKM_TUNE_CLAIMED);
    ck_assert_int_eq(r.wl[0].regression, 1);
    ck_assert_ptr_nonnull(strstr(r.wl[0].verdict, "REGRESSION: 2.0"));
    ck_assert(r.wl[0].rci_lo > 1.5 && r.wl[0].nominal < 0.01);
    ck_assert_int_eq(r.wl[1].decision, BKM_TUNE_NOT_BETTER);
    ck_assert(r.wl[1].rci_hi < 1.1);
    ck_assert_ptr_nonnull(strstr(r.wl[1].verdict, "ok: not slower by more than"));
    ck_assert_int_eq(r.wl[2].decision, BKM_TUNE_UNDECIDED);
    ck_assert_int_eq(r.wl[2].regression, 0);
    ck_assert_ptr_nonnull(strstr(r.wl[2].verdict, "ok, undecided"));
    ck_assert_int_eq(r.wl[3].tested, 0);
    ck_assert_ptr_nonnull(strstr(r.wl[3].verdict, "not compared: 2 and 2 process values"));
    /* the JSON and the table carry the decision */
    bkm_buf_init(&js);
    bkm_json_w_init(&w, &js, 0);
    bkm_tune_regress_results_json(&r, &w);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&js), "\"decision\":\"claimed\""));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&js), "\"decision\":\"not-better\""));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&js), "\"ratio_rci\":["));
    bkm_buf_init(&table);
    bkm_tune_regress_table(&r, &table);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&table), "repeated interval"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&table), "6 to 12 processes a side in 2 block(s)"));
    bkm_buf_free(&js);
    bkm_buf_free(&table);
    bkm_tune_regress_free(&r);
}
END_TEST

static Suite *regress_job_suite(void)
{
    Suite *s = suite_create("regress_job");
    TCase *tc = tcase_create("launcher");
    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, launcher_follows_the_allocation);
    suite_add_tcase(s, tc);
    tc = tcase_create("job");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, mode_rules);
    tcase_add_test(tc, refused_before_measuring);
    tcase_add_test(tc, compare_decides_each_workload);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(regress_job_suite)
