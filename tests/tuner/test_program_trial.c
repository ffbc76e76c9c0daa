/* SPDX-License-Identifier: MIT */
/* The user's program as a trial (bkm/tuner/program.h), run through the trial runner on real
 * programs: a C OpenMP program built with gcc (GNU libgomp), with clang (LLVM libomp) and without
 * OpenMP; its figure from its wall time or its output; its OpenMP team found and checked against
 * the plan of the runtime it loaded; and every way it can go wrong a trial status with the reason. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"
#include "bkm_check.h"

extern char **environ;

static bkm_topo_t *host;

typedef struct prog_case {
    bkm_tune_program_t pg;
    const char *argv[8];
    bkm_tune_runner_t rn;
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t res;
} prog_case_t;

/* A trial of @p exe with its arguments (NULL-terminated after exe) and runtime kind @p kind. */
static void prog_setup(prog_case_t *c, const char *exe, int kind, const char *a1, const char *a2, const char *a3)
{
    bkm_err_t err = {0};
    memset(c, 0, sizeof *c);
    c->argv[0] = exe;
    c->argv[1] = a1;
    c->argv[2] = a1 ? a2 : NULL;
    c->argv[3] = a1 && a2 ? a3 : NULL;
    c->pg.argv = c->argv;
    for (c->pg.argc = 0; c->argv[c->pg.argc]; c->pg.argc++)
        ;
    c->pg.name = "omp-prog";
    c->pg.exe_sha256 = "0";
    c->pg.runtime = kind;
    c->pg.runtime_how = "test";
    c->pg.topo = host;
    c->pg.team_shim = BKM_TEAM_SHIM;
    c->rn.environ = environ;
    c->rn.program = &c->pg;
    bkm_tune_trial_spec_defaults(&c->spec);
    snprintf(c->spec.workload, sizeof c->spec.workload, "omp-prog");
    c->spec.threads = 2;
    c->spec.timeout_s = 60;
    ck_assert_int_eq(bkm_tune_program_check(&c->pg, &err), BKM_OK);
}

static void prog_run(prog_case_t *c)
{
    bkm_err_t err = {0};
    ck_assert_msg(bkm_tune_trial_run(&c->rn, &c->spec, &c->res, &err) == BKM_OK, "%s", err.msg);
}

static const bkm_json_t *jget(const bkm_json_t *d, const char *a, const char *b)
{
    const bkm_json_t *x = bkm_json_get(d, a);
    return x && b ? bkm_json_get(x, b) : x;
}

static void prog_done(prog_case_t *c)
{
    bkm_tune_trial_result_free(&c->res);
}

/* gcc: libgomp places the team on cores, close: both team threads bound as planned, the runtime
 * the process mapped stored, its wall time the one sample. */
START_TEST(gomp_program_bound_as_planned)
{
    prog_case_t c;
    bkm_err_t err = {0};
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "ok", "3", "40");
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&c.spec, "OMP_PLACES", "cores", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&c.spec, "OMP_PROC_BIND", "close", &err), BKM_OK);
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s: %s", bkm_trial_status_name(c.res.status), c.res.message);
    ck_assert_int_eq(c.res.n_samples, 1);
    ck_assert(c.res.median_ms >= 100.0 && c.res.median_ms < 30000.0);
    ck_assert_str_eq(bkm_json_get_str(jget(c.res.doc, "binding", "runtime"), "planned_for"), "libgomp");
    ck_assert_str_eq(bkm_json_get_str(bkm_json_at(jget(jget(c.res.doc, "binding", "runtime"), "loaded", NULL), 0), "kind"), "libgomp");
    ck_assert(jget(c.res.doc, "binding", "verified")->boolean);
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(jget(c.res.doc, "binding", NULL), "summary"), "2 of 2"));
    ck_assert_str_eq(bkm_json_get_str(jget(c.res.doc, "metric", NULL), "source"), "wall-time");
    ck_assert(c.res.disturbed == 0 || c.res.disturbed == 1);   /* noise evidence from the parent */
    ck_assert_ptr_nonnull(jget(c.res.doc, "noise", "totals"));
    prog_done(&c);
}
END_TEST

/* The figure from the program's own lines: every match a sample; higher-is-better stored as 1/v. */
START_TEST(metric_from_output)
{
    prog_case_t c;
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "ok", "4", "20");
    c.pg.metric = "avg time ([0-9.]+) millisecond";
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s", c.res.message);
    ck_assert_int_eq(c.res.n_samples, 4);
    for (int i = 0; i < 4; i++)
        ck_assert(c.res.samples_ms[i] >= 19.0 && c.res.samples_ms[i] < 5000.0);
    ck_assert_uint_eq(jget(c.res.doc, "metric", "values")->n_children, 4);
    prog_done(&c);
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "ok", "2", "20");
    c.pg.metric = "avg time ([0-9.]+) millisecond";
    c.pg.metric_higher = 1;
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s", c.res.message);
    ck_assert_int_eq(c.res.n_samples, 2);
    ck_assert_double_eq_tol(c.res.samples_ms[0],
                            1.0 / bkm_json_at(jget(c.res.doc, "metric", "values"), 0)->num, 1e-12);
    prog_done(&c);
}
END_TEST

/* clang: libomp under KMP_AFFINITY, its team found through OMPT and bound as libomp plans. */
START_TEST(libomp_program_bound_as_planned)
{
    prog_case_t c;
    bkm_err_t err = {0};
    prog_setup(&c, BKM_OMP_PROG_CLANG, BKM_AFF_RUNTIME_LIBOMP, "ok", "3", "40");
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&c.spec, "KMP_AFFINITY", "granularity=fine,compact", &err), BKM_OK);
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s: %s", bkm_trial_status_name(c.res.status), c.res.message);
    ck_assert_str_eq(bkm_json_get_str(jget(c.res.doc, "binding", "runtime"), "planned_for"), "libomp");
    ck_assert(jget(c.res.doc, "binding", "verified")->boolean);
    prog_done(&c);
}
END_TEST

/* A thread the program moves itself is caught: the trial is a binding mismatch naming it. */
START_TEST(moved_thread_is_a_mismatch)
{
    prog_case_t c;
    bkm_err_t err = {0};
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "rebind", "3", "60");
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&c.spec, "OMP_PLACES", "cores", &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_trial_spec_setenv(&c.spec, "OMP_PROC_BIND", "close", &err), BKM_OK);
    prog_run(&c);
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        prog_done(&c);
        return;   /* one CPU: "the last CPU" is where thread 0 is planned */
    }
    ck_assert_msg(c.res.status == BKM_TRIAL_BINDING_MISMATCH, "%s: %s", bkm_trial_status_name(c.res.status),
                  c.res.message);
    ck_assert_ptr_nonnull(strstr(c.res.message, "not bound as planned"));
    prog_done(&c);
}
END_TEST

/* No OpenMP runtime: nothing to verify, said so; the trial is a measurement all the same. */
START_TEST(program_without_openmp)
{
    prog_case_t c;
    prog_setup(&c, BKM_OMP_PROG_NONE, BKM_AFF_RUNTIME_NONE, "ok", "2", "20");
    c.spec.threads = 1;
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s", c.res.message);
    ck_assert_str_eq(bkm_json_get_str(jget(c.res.doc, "binding", "runtime"), "planned_for"), "none");
    ck_assert(!jget(c.res.doc, "binding", "verified")->boolean);
    ck_assert_ptr_nonnull(strstr(bkm_json_get_str(jget(c.res.doc, "binding", NULL), "summary"), "no OpenMP runtime"));
    prog_done(&c);
}
END_TEST

/* Two runtimes in one process (libgomp linked, libomp dlopened): a finding in the stored runtime. */
START_TEST(two_runtimes_are_a_finding)
{
    prog_case_t c;
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "dlopen", "3", "100");
    prog_run(&c);
    ck_assert_msg(c.res.status == BKM_TRIAL_OK, "%s", c.res.message);
    ck_assert(jget(jget(c.res.doc, "binding", "runtime"), "two_runtimes", NULL)->boolean);
    ck_assert_uint_eq(jget(jget(c.res.doc, "binding", "runtime"), "loaded", NULL)->n_children, 2);
    prog_done(&c);
}
END_TEST

/* Every way a program can go wrong is a trial status with the reason, never an error of tune. */
START_TEST(failures_are_statuses)
{
    prog_case_t c;
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "crash", "3", "10");
    prog_run(&c);
    ck_assert_int_eq(c.res.status, BKM_TRIAL_CRASHED);
    ck_assert_ptr_nonnull(strstr(c.res.message, "SIGSEGV"));
    prog_done(&c);
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "hang", "3", "10");
    c.spec.timeout_s = 1.5;
    prog_run(&c);
    ck_assert_int_eq(c.res.status, BKM_TRIAL_TIMEOUT);
    ck_assert(c.res.wall_s < 10);
    prog_done(&c);
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "exit3", "1", "10");
    prog_run(&c);
    ck_assert_int_eq(c.res.status, BKM_TRIAL_FAILED);
    ck_assert_ptr_nonnull(strstr(c.res.message, "code 3: omp_prog: giving up with status 3"));
    prog_done(&c);
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "nometric", "1", "10");
    c.pg.metric = "avg time ([0-9.]+) millisecond";
    prog_run(&c);
    ck_assert_int_eq(c.res.status, BKM_TRIAL_FAILED);
    ck_assert_ptr_nonnull(strstr(c.res.message, "no line matching --metric"));
    prog_done(&c);
    prog_setup(&c, BKM_OMP_PROG_GCC, BKM_AFF_RUNTIME_LIBGOMP, "noisy", "4", "5");
    c.pg.output_max = 1u << 20;
    prog_run(&c);
    ck_assert_int_eq(c.res.status, BKM_TRIAL_FAILED);
    ck_assert_ptr_nonnull(strstr(c.res.message, "more than 1048576 bytes"));
    prog_done(&c);
}
END_TEST

/* The checks before a trial, and the metric's parsing. */
START_TEST(checks_and_metric_scan)
{
    bkm_tune_program_t p = {0};
    const char *argv[] = {"omp_prog", NULL}, *abs[] = {BKM_OMP_PROG_GCC, NULL};
    regex_t re;
    double v[8];
    size_t n = 0;
    char name[64];
    bkm_err_t err = {0};
    p.argv = argv, p.argc = 1, p.name = "x";
    ck_assert_int_eq(bkm_tune_program_check(&p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'omp_prog' is not an absolute path"));
    p.argv = abs;
    p.metric = "a(b)(c)";
    ck_assert_int_eq(bkm_tune_program_check(&p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "2 capture groups"));
    p.metric = "(";
    ck_assert_int_eq(bkm_tune_program_check(&p, &err), BKM_EINVAL);
    p.metric = NULL;
    p.name = "bad name";
    ck_assert_int_eq(bkm_tune_program_check(&p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'bad name'"));
    ck_assert_int_eq(regcomp(&re, "t=([-0-9.e+]+)", REG_EXTENDED), 0);
    ck_assert_int_eq(bkm_tune_program_metric_scan(&re, "t=1.5 t=2 t=3e2 x", v, 8, &n, &err), BKM_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_double_eq(v[2], 300.0);
    n = 0;   /* a time or a rate is never negative */
    ck_assert_int_eq(bkm_tune_program_metric_scan(&re, "t=1 t=-3e2", v, 8, &n, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'-3e2'"));
    n = 0;
    ck_assert_int_eq(bkm_tune_program_metric_scan(&re, "t=1.2.3", v, 8, &n, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'1.2.3'"));
    n = 7;
    ck_assert_int_eq(bkm_tune_program_metric_scan(&re, "t=1 t=2", v, 8, &n, &err), BKM_OK);
    ck_assert_uint_eq(n, 8);   /* capped */
    regfree(&re);
    {
        const char *py[] = {"/usr/bin/python3", "-u", "bench.py", "--x", NULL};
        bkm_tune_program_default_name(py, 4, name, sizeof name);
        ck_assert_str_eq(name, "bench");
        bkm_tune_program_default_name(abs, 1, name, sizeof name);
        ck_assert_str_eq(name, "omp_prog_gcc");
    }
}
END_TEST

static Suite *program_suite(int argc, char **argv, int *status)
{
    Suite *s = suite_create("program_trial");
    TCase *tc = tcase_create("program");
    bkm_err_t err = {0};
    (void)argc, (void)argv;
    if (bkm_topo_open_host(&host, &err) < 0) {
        *status = bkm_check_skip("no host topology: %s", err.msg);
        return NULL;
    }
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, checks_and_metric_scan);
    tcase_add_test(tc, gomp_program_bound_as_planned);
    tcase_add_test(tc, metric_from_output);
    tcase_add_test(tc, libomp_program_bound_as_planned);
    tcase_add_test(tc, moved_thread_is_a_mismatch);
    tcase_add_test(tc, program_without_openmp);
    tcase_add_test(tc, two_runtimes_are_a_finding);
    tcase_add_test(tc, failures_are_statuses);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN_ARGS(program_suite)
