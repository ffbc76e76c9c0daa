/* SPDX-License-Identifier: MIT */
/* `tune regress`: the regression gate. Records a baseline of a fixed suite, checks this build
 * against it, or runs an interleaved A/B against another build (the CI gate). */
#define _GNU_SOURCE /* gethostname, environ */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"   /* BKM_DB_DEFAULT_PATH */
#include "bkm/tuner.h"
#include "bkm_revision.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_program.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_regress_summary[] = "the regression gate: record a timing baseline, or check this build against one";

#define REGRESS_MAX_PARAMS 16

typedef struct regress_opts {
    int record, json;
    const char *output, *baseline, *against, *junit, *workloads, *db;
    int threads, processes, processes_max;
    double threshold, alpha;
    long long seed;
    const char *params[REGRESS_MAX_PARAMS];
    size_t n_params;
    const char *metric, *metric_unit, *runtime;   /* -- CMD: the program (cli_program.h) */
    int metric_higher;
    double probe_timeout;
} regress_opts_t;

static int opt_param(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    regress_opts_t *o = cfg;
    const char *eq = strchr(v, '=');
    if (eq == NULL || eq == v || eq[1] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "'%s' is not key=value", v);
    if (o->n_params == REGRESS_MAX_PARAMS)
        return bkm_err_set(err, BKM_EINVAL, "at most %d --param", REGRESS_MAX_PARAMS);
    o->params[o->n_params++] = v;
    return BKM_OK;
}

static const bkm_cli_opt_t regress_table[] = {
    {.name = "record", .kind = BKM_CLI_FLAG, .off = offsetof(regress_opts_t, record),
     .help = "run the suite and write the baseline to -o FILE"},
    {.name = "output", .short_name = 'o', .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(regress_opts_t, output),
     .help = "--record: the baseline file to write (JSON)", .example = "base.json"},
    {.name = "baseline", .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(regress_opts_t, baseline),
     .help = "check this build against a recorded baseline (same topology and ISA)", .example = "nosuch.json"},
    {.name = "against", .kind = BKM_CLI_STR, .metavar = "TUNE", .off = offsetof(regress_opts_t, against),
     .help = "A/B: check this build against another build's tune executable, both\n"
             "measured interleaved in this run (no stored baseline: the CI gate)",
     .example = "/nonexistent/tune"},
    {.name = "junit", .kind = BKM_CLI_STR, .metavar = "OUT", .off = offsetof(regress_opts_t, junit),
     .help = "also write the comparison as JUnit XML to OUT", .example = "junit.xml"},
    {.name = "threads", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(regress_opts_t, threads), .lo = 1,
     .hi = BKM_CPUSET_MAX, .help = "threads of the workload processes (default: the baseline's, else 1:\n"
                                   "on a shared machine a multi-threaded process's time depends on\n"
                                   "whether its threads get stacked on one PU); the calibration is 1"},
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "KEY=VALUE", .call = opt_param, .flags = BKM_CLI_REPEAT,
     .help = "set a parameter of every workload of the suite that has it (this build's\n"
             "side only), e.g. --param kc=4", .example = "kc=64"},
    {.name = "threshold", .kind = BKM_CLI_NUM, .metavar = "X", .off = offsetof(regress_opts_t, threshold), .lo = 0.01,
     .hi = 10, .help = "smallest slowdown reported, as a fraction (default 0.10 = 10%)"},
    {.name = "alpha", .kind = BKM_CLI_NUM, .metavar = "A", .off = offsetof(regress_opts_t, alpha), .lo = 1e-6,
     .hi = 0.5, .help = "family-wise error rate over the workloads and looks (Holm; default 0.01)"},
    {.name = "processes", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(regress_opts_t, processes), .lo = 3,
     .hi = BKM_TUNE_REPLICATES_MAX, .help = "worker processes per workload and side (default 8; a check uses the\n"
                                           "baseline's count)"},
    {.name = "processes-max", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(regress_opts_t, processes_max),
     .lo = 3, .hi = BKM_TUNE_REPLICATES_MAX,
     .help = "a check: add blocks of --processes for the workloads still undecided\n"
             "(neither a regression nor within the threshold), up to N per side\n"
             "(default: --processes, a single look)", .example = "24"},
    {.name = "workloads", .kind = BKM_CLI_STR, .metavar = "LIST", .off = offsetof(regress_opts_t, workloads),
     .help = "these workloads of the suite (default gemm,conv2d,conv3d,lstm; alexnet,\n"
             "55 ms a step, only when named: its fastest sample follows the machine's load;\n"
             "fmnist-sgd, an MPI job of 1 rank under mpiexec, only when named)",
     .example = "gemm"},
    {.name = "seed", .kind = BKM_CLI_I64, .metavar = "S", .off = offsetof(regress_opts_t, seed), .lo = 0, .hi = 9.2e18,
     .help = "seed of the measurement order (default 1)"},
    BKM_CLI_PROGRAM_OPTS(regress_opts_t),
    BKM_CLI_DB_OPT(regress_opts_t, db),
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(regress_opts_t, json),
     .help = "print the comparison as JSON: {verdict, regressions, threshold, alpha,\n"
             "mode, reference, results: [{workload, ratio, ratio_rci, p, nominal_level,\n"
             "decision, looks, ...}]}"},
};

static const bkm_cli_cmd_spec_t regress_cmd = {
    .name = "regress",
    .usage = "tune regress --record -o FILE [--threads N] [--param K=V ...] [--processes N] [--workloads LIST]\n"
             "tune regress --baseline FILE [--junit OUT] [--threads N] [--param K=V ...] [--processes-max N] [--json]\n"
             "tune regress --against OTHER_TUNE [--junit OUT] [--workloads LIST] [--processes-max N] [--json]\n"
             "tune regress --record -o FILE [--threads N] [--metric REGEX] -- CMD ARGS\n"
             "tune regress --baseline FILE [--threads N] [--metric REGEX] [--processes-max N] -- CMD ARGS",
    .about = "A fixed suite (SGEMM 256^3, a conv2d and a conv3d layer, an LSTM 8,10,64,64: iterations of\n"
             "0.1-0.3 ms; only when named in --workloads: the AlexNet training step, and fmnist-sgd, the\n"
             "MLP on a 10-step training run as an MPI job of 1 rank under mpiexec, its value the rank's\n"
             "median step time) runs in several fresh worker processes per workload (1 thread unless\n"
             "--threads; more are bound one per PU); each process gives one value, the fastest of its\n"
             "samples (a neighbour only ever adds time): the unit of evidence.\n"
             "--record pairs every workload process with a calibration process (SGEMM 256^3, 1 thread)\n"
             "run right before or after it, in alternation, and stores value = workload / calibration, with\n"
             "the host, its topology and the git revision. --baseline re-runs the suite the same way and\n"
             "compares; --against runs another build's workers and this build's interleaved in the same run\n"
             "(needs no baseline: what CI uses). A workload regressed when BOTH the one-sided Mann-Whitney\n"
             "test on the process values (this build slower) is significant at the level of its look (alpha\n"
             "spent over the looks, Holm over the workloads) AND the Hodges-Lehmann ratio (current /\n"
             "reference) is at least 1 + threshold; it is ok when the ratio's repeated interval ends below\n"
             "1 + threshold (\"not slower by more than X%\"), else undecided (it passes; --processes-max\n"
             "adds blocks of processes for it). The run is stored in the results database as the report's\n"
             "regression history.\n"
             "-- CMD ARGS: your own program is the suite. Each of its processes is one run of it (its wall\n"
             "time, or the fastest number --metric matches in its output), supervised as in a sweep (binding\n"
             "proven, runtime found), paired with the same calibration process; --record stores its argv,\n"
             "metric and executable hash; --baseline runs the same argv and metric again, typically after\n"
             "rebuilding the program or changing its environment, and says whether the executable is the\n"
             "one the baseline ran. 1 thread unless --threads N (bound OMP_PLACES=cores OMP_PROC_BIND=close).",
    BKM_CLI_TABLE(regress_table),
    .more = "examples:\n"
            "  tune regress --record -o base.json\n"
            "  tune regress --baseline base.json --junit regress.xml\n"
            "  tune regress --record -o base2.json --threads 2\n"
            "  tune regress --baseline base2.json --threads 1         # half the threads, a real slowdown: exit 1\n"
            "  tune regress --against ../main-build/tune --workloads gemm,conv2d,lstm\n"
            "  tune regress --record -o mpi.json --workloads fmnist-sgd   # needs MPICH's mpiexec\n"
            "  tune regress --record -o mine.json --threads 2 -- ./train --epochs 1\n"
            "  tune regress --baseline mine.json --threads 2 -- ./train --epochs 1   # after a rebuild\n\n"
            "exit codes: 0 no regression, 1 a regression, 2 bad usage or input, 3 environment problem\n"
            "            (baseline from another topology or ISA, unreadable file, worker cannot start),\n"
            "            4 some workloads could not be compared (their processes failed) and none regressed\n",
};

/* The progress line on a terminal: one self-overwriting line, ended before anything else. */
typedef struct regress_bar {
    int tty, open;
} regress_bar_t;

static void on_progress(void *ud, const char *line)
{
    regress_bar_t *bar = ud;
    if (bar->tty) {
        fprintf(stderr, "\rtune regress: %-60s", line);
        bar->open = 1;
    }
}

/* The options as the library's job, with what the run needs from this process. */
static void regress_job(const regress_opts_t *o, const char *baseline_text, bkm_tune_regress_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->record = o->record;
    job->output = o->output;
    job->baseline_path = o->baseline;
    job->baseline_text = baseline_text;
    job->against = o->against;
    job->junit = o->junit;
    job->json = o->json;
    job->threads = o->threads;
    job->processes = o->processes;
    job->processes_max = o->processes_max;
    job->params = o->params;
    job->n_params = o->n_params;
    job->workloads = o->workloads;
    job->threshold = o->threshold;
    job->alpha = o->alpha;
    job->seed = (uint64_t)o->seed;
    job->environ = environ;
    job->path = getenv("PATH");
    job->slurm_job_id = getenv("SLURM_JOB_ID");
    job->revision = BKM_BUILD_REVISION;
    job->db_path = bkm_cli_db_path(o->db);
}

/* What the run found, on the standard output and in the files asked for: the exit code. */
static int regress_outputs(const regress_opts_t *o, const bkm_tune_regress_outcome_t *res)
{
    int ret;
    if (res->verdict == BKM_TUNE_REGRESS_RECORDED) {
        if ((ret = bkm_cli_output_write("regress", "-o", o->output, bkm_buf_str(&res->baseline), 0666)) != 0)
            return ret;
        fprintf(stderr, "tune regress: wrote %s: %s\n", o->output, res->summary);
        return 0;
    }
    if (o->junit && (ret = bkm_cli_output_write("regress", "--junit", o->junit, bkm_buf_str(&res->junit), 0666)) != 0)
        return ret;
    fputs(bkm_buf_str(&res->report), stdout);
    return res->verdict == BKM_TUNE_REGRESS_REGRESSION ? 1 : res->verdict == BKM_TUNE_REGRESS_INCOMPLETE ? 4 : 0;
}

/* Each line of @p notes on the standard error, after "tune regress: ". */
static void print_notes(const bkm_buf_t *notes)
{
    for (const char *p = bkm_buf_str(notes); *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "tune regress: %.*s\n", len, p);
        p += len + (nl != NULL);
    }
}

/* -- CMD: the program resolved, the runtime it loads found (on this host's topology). */
static int regress_program_open(const regress_opts_t *o, bkm_cli_program_t *cp, int pargc, char **pargv,
                                const char *self, bkm_topo_t **topo, bkm_err_t *err)
{
    int rc;
    if ((rc = bkm_topo_open_host(topo, err)) < 0)
        return rc;
    return bkm_cli_program_open(cp, pargc, pargv, NULL, o->metric, o->metric_unit, o->metric_higher, o->runtime,
                                o->probe_timeout, self, *topo, err);
}

int bkm_cli_regress(int argc, char **argv)
{
    regress_opts_t o;
    bkm_tune_regress_job_t job;
    bkm_tune_regress_outcome_t res = {0};
    bkm_tune_runner_t runner;
    bkm_tune_trial_spec_t base;
    bkm_aff_topo_fix_t fix = {0};
    bkm_cli_program_t *cp = NULL;
    bkm_topo_t *topo = NULL;
    bkm_err_t err = {0};
    regress_bar_t bar = {isatty(2), 0};
    char self[PATH_MAX], when[32], host[256] = "unknown", **pargv = NULL;
    char *baseline_text = NULL;
    size_t blen = 0;
    int ret, fix_open = 0, oargc, pargc = 0;

    memset(&o, 0, sizeof o);
    o.threshold = BKM_TUNE_REGRESS_THRESHOLD;
    o.alpha = BKM_TUNE_REGRESS_ALPHA;
    o.seed = 1;
    o.probe_timeout = 20;
    if ((ret = bkm_cli_program_split(argc, argv, &oargc, &pargv, &pargc, &err)) < 0) {
        fprintf(stderr, "tune regress: %s\n", err.msg);
        return 2;
    }
    if (bkm_cli_opt_parse_cmd(&regress_cmd, oargc, argv, &o, &ret))
        return ret;
    if (pargc == 0 && (o.metric || o.metric_unit || o.metric_higher || o.runtime)) {
        fprintf(stderr, "tune regress: --%s is for your own program (-- CMD ARGS)\n",
                o.metric ? "metric" : o.metric_unit ? "metric-unit" : o.metric_higher ? "metric-higher" : "runtime");
        return 2;
    }
    regress_job(&o, NULL, &job);
    if ((ret = bkm_tune_regress_job_check(&job, &err)) < 0)
        goto fail;
    if (o.baseline &&
        (ret = bkm_file_read_regular(o.baseline, "--baseline", 64u << 20, &baseline_text, &blen, &err)) < 0) {
        fprintf(stderr, "tune regress: %s\n", err.msg);
        ret = ret == BKM_EINVAL ? 2 : 3;
        goto done;
    }
    job.baseline_text = baseline_text;
    /* the suite runs the default setting (nothing bound): bound threads on a busy machine wait
     * for a neighbour's time slice at every barrier (a 0.1 ms GEMM measured at 5 ms), while
     * unbound ones move to whichever PU is free */
    bkm_tune_trial_spec_defaults(&base);
    if ((ret = bkm_tune_env_check(environ, &err)) < 0 || (ret = bkm_cli_runner_self(&runner, self, sizeof self, &err)) < 0 ||
        (ret = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 || (fix_open = 1, ret = bkm_cli_topo_fix_spec(&fix, &base, &err)) < 0)
        goto fail;
    if (pargc > 0 && ((cp = calloc(1, sizeof *cp)) == NULL ? (ret = bkm_err_set(&err, BKM_ENOMEM, "out of memory"))
                                                           : (ret = regress_program_open(&o, cp, pargc, pargv, self,
                                                                                         &topo, &err))) < 0)
        goto fail;
    gethostname(host, sizeof host - 1);
    bkm_utc_iso8601(when, sizeof when);
    job.runner = &runner;
    job.program = cp ? &cp->pg : NULL;
    job.base = &base;
    job.hostname = host;
    job.when = when;
    job.stop = bkm_cli_stop_signals_catch();
    job.progress = on_progress;
    job.progress_ud = &bar;
    ret = bkm_tune_regress_job_run(&job, &res, &err);
    if (bar.open)
        fputc('\n', stderr);
    print_notes(&res.notes);
    ret = ret < 0 ? ret : regress_outputs(&o, &res);
    if (ret >= 0)
        goto done;
fail:
    fprintf(stderr, "tune regress: %s\n", err.msg);
    ret = bkm_status_exit_code(ret);
done:
    if (fix_open)
        bkm_cli_topo_fix_close(&fix);
    bkm_cli_program_close(cp);
    free(cp);
    bkm_topo_close(topo);
    bkm_tune_regress_outcome_free(&res);
    bkm_free(baseline_text);
    return ret;
}
