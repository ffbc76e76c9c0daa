/* SPDX-License-Identifier: MIT */
/* `tune regress`: the regression gate. Records a baseline of a fixed suite, checks this build
 * against it, or runs an interleaved A/B against another build (the CI gate). */
#define _GNU_SOURCE /* gethostname, environ */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/slurm.h"
#include "bkm/tuner.h"
#include "bkm_revision.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_regress_summary[] = "the regression gate: record a timing baseline, or check this build against one";

#define REGRESS_MAX_PARAMS 16

typedef struct regress_opts {
    int record, json;
    const char *output, *baseline, *against, *junit, *workloads, *db;
    int threads, processes;
    double threshold, alpha;
    long long seed;
    const char *params[REGRESS_MAX_PARAMS];
    size_t n_params;
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
     .hi = 0.5, .help = "family-wise error rate over the workloads (Holm; default 0.01)"},
    {.name = "processes", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(regress_opts_t, processes), .lo = 3,
     .hi = BKM_TUNE_REPLICATES_MAX, .help = "worker processes per workload and side (default 8; a check uses the\n"
                                           "baseline's count)"},
    {.name = "workloads", .kind = BKM_CLI_STR, .metavar = "LIST", .off = offsetof(regress_opts_t, workloads),
     .help = "these workloads of the suite (default gemm,conv2d,conv3d,lstm; alexnet,\n"
             "55 ms a step, only when named: its fastest sample follows the machine's load;\n"
             "fmnist-sgd, an MPI job of 1 rank under mpiexec, only when named)",
     .example = "gemm"},
    {.name = "seed", .kind = BKM_CLI_I64, .metavar = "S", .off = offsetof(regress_opts_t, seed), .lo = 0, .hi = 9.2e18,
     .help = "seed of the measurement order (default 1)"},
    BKM_CLI_DB_OPT(regress_opts_t, db),
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(regress_opts_t, json),
     .help = "print the comparison as JSON: {verdict, regressions, threshold, alpha,\n"
             "mode, reference, results: [{workload, ratio, ratio_ci95, p, p_holm, ...}]}"},
};

static const bkm_cli_cmd_spec_t regress_cmd = {
    .name = "regress",
    .usage = "tune regress --record -o FILE [--threads N] [--param K=V ...] [--processes N] [--workloads LIST]\n"
             "tune regress --baseline FILE [--junit OUT] [--threads N] [--param K=V ...] [--json]\n"
             "tune regress --against OTHER_TUNE [--junit OUT] [--workloads LIST] [--json]",
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
             "(needs no baseline: what CI uses). A workload regressed when BOTH the Mann-Whitney test on the\n"
             "process values is significant after Holm's correction over the workloads AND the\n"
             "Hodges-Lehmann ratio (current / reference) exceeds 1 + threshold. The run is stored in the\n"
             "results database as the report's regression history.",
    BKM_CLI_TABLE(regress_table),
    .more = "examples:\n"
            "  tune regress --record -o base.json\n"
            "  tune regress --baseline base.json --junit regress.xml\n"
            "  tune regress --record -o base2.json --threads 2\n"
            "  tune regress --baseline base2.json --threads 1         # half the threads, a real slowdown: exit 1\n"
            "  tune regress --against ../main-build/tune --workloads gemm,conv2d,lstm\n"
            "  tune regress --record -o mpi.json --workloads fmnist-sgd   # needs MPICH's mpiexec\n\n"
            "exit codes: 0 no regression, 1 a regression, 2 bad usage or input, 3 environment problem\n"
            "            (baseline from another topology or ISA, unreadable file, worker cannot start),\n"
            "            4 some workloads could not be compared (their processes failed) and none regressed\n",
};

static void on_progress(void *ud, const char *line)
{
    if (*(int *)ud)
        fprintf(stderr, "\rtune regress: %-60s", line);
}

static void host_json(const bkm_topo_t *topo, bkm_buf_t *out, char *fp, size_t n)
{
    bkm_topo_summary_t ts;
    bkm_json_w_t w;
    char hostname[256] = "unknown";
    gethostname(hostname, sizeof hostname - 1);
    bkm_topo_summary(topo, &ts);
    snprintf(fp, n, "%dp/%dn/%dc/%dt/%s", ts.packages, ts.numa_nodes, ts.cores, ts.pus, ts.isa);
    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "hostname"), bkm_json_str(&w, hostname);
    bkm_json_key(&w, "cpu_model"), bkm_json_str(&w, ts.cpu_model);
    bkm_json_key(&w, "fingerprint"), bkm_json_str(&w, fp);
    bkm_json_key(&w, "isa"), bkm_json_str(&w, ts.isa);
    bkm_json_key(&w, "topology");
    if (bkm_topo_to_json(topo, &w, NULL) < 0)
        bkm_json_null(&w);
    bkm_json_obj_end(&w);
}

int bkm_cli_regress(int argc, char **argv)
{
    regress_opts_t o;
    bkm_tune_regress_cfg_t cfg;
    bkm_tune_regress_t *r = NULL;
    bkm_tune_runner_t runner, ref;
    bkm_tune_trial_spec_t base;
    bkm_aff_topo_fix_t fix = {0};
    bkm_topo_t *host = NULL;
    bkm_topo_summary_t ts;
    bkm_err_t err = {0};
    bkm_buf_t hj, out, baseline;
    char self[PATH_MAX], fp[192], when[32], launcher[PATH_MAX];
    char *baseline_text = NULL;
    size_t blen = 0;
    int ret, tty = isatty(2), modes, fix_open = 0;
    time_t now = time(NULL);

    memset(&o, 0, sizeof o);
    o.threshold = BKM_TUNE_REGRESS_THRESHOLD;
    o.alpha = BKM_TUNE_REGRESS_ALPHA;
    o.seed = 1;
    if (bkm_cli_opt_parse_cmd(&regress_cmd, argc, argv, &o, &ret))
        return ret;
    bkm_buf_init(&hj);
    bkm_buf_init(&out);
    bkm_buf_init(&baseline);
    modes = !!o.record + !!o.baseline + !!o.against;
    if (modes != 1) {
        fprintf(stderr, "tune regress: give exactly one of --record, --baseline FILE, --against TUNE\n");
        ret = 2;
        goto done;
    }
    if (o.record && o.output == NULL) {
        fprintf(stderr, "tune regress: --record needs -o FILE\n");
        ret = 2;
        goto done;
    }
    if (o.record && (o.junit || o.json)) {
        fprintf(stderr, "tune regress: --%s is for a check (--baseline or --against), not --record\n",
                o.junit ? "junit" : "json");
        ret = 2;
        goto done;
    }
    if (!o.record && o.output) {
        fprintf(stderr, "tune regress: -o '%s' is only for --record (--junit OUT writes the comparison)\n", o.output);
        ret = 2;
        goto done;
    }
    if (o.baseline) {
        ret = bkm_file_read_regular(o.baseline, "--baseline", 64u << 20, &baseline_text, &blen, &err);
        if (ret < 0) {
            fprintf(stderr, "tune regress: %s\n", err.msg);
            ret = ret == BKM_EINVAL ? 2 : 3;
            goto done;
        }
    }
    if (o.against && access(o.against, X_OK) != 0) {
        fprintf(stderr, "tune regress: --against '%s': not an executable (%s)\n", o.against, strerror(errno));
        ret = 3;
        goto done;
    }
    if ((ret = bkm_tune_env_check(environ, &err)) < 0 || (ret = bkm_topo_open_host(&host, &err)) < 0)
        goto fail;
    host_json(host, &hj, fp, sizeof fp);
    bkm_topo_summary(host, &ts);
    if ((ret = bkm_cli_runner_self(&runner, self, sizeof self, &err)) < 0)
        goto fail;
    ref = runner;
    ref.worker_path = o.against;
    /* the suite runs the default setting (nothing bound): bound threads on a busy machine wait
     * for a neighbour's time slice at every barrier (a 0.1 ms GEMM measured at 5 ms), while
     * unbound ones move to whichever PU is free */
    bkm_tune_trial_spec_defaults(&base);
    if ((ret = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 || (fix_open = 1, ret = bkm_cli_topo_fix_spec(&fix, &base, &err)) < 0)
        goto fail;
    memset(&cfg, 0, sizeof cfg);
    cfg.runner = &runner;
    cfg.reference = o.against ? &ref : NULL;
    cfg.base = &base;
    cfg.pus = ts.allowed_pus;
    cfg.threads = o.threads;
    cfg.params = o.params;
    cfg.n_params = o.n_params;
    cfg.workloads = o.workloads;
    cfg.processes = o.processes;
    cfg.seed = (uint64_t)o.seed;
    cfg.progress = on_progress;
    cfg.progress_ud = &tty;
    if ((r = calloc(1, sizeof *r)) == NULL) {
        ret = bkm_err_set(&err, BKM_ENOMEM, "out of memory");
        goto fail;
    }
    if ((ret = bkm_tune_regress_plan(r, &cfg, baseline_text, &err)) < 0) {
        fprintf(stderr, "tune regress: %s%s%s\n", o.baseline ? o.baseline : "", o.baseline ? ": " : "", err.msg);
        ret = 2;
        goto done;
    }
    if (o.baseline && strcmp(r->ref_fingerprint, fp) != 0) {
        fprintf(stderr, "tune regress: baseline %s was recorded on %s (%s, topology/ISA %s); this host is %s "
                        "(topology/ISA %s): its timings are not comparable here. Record a baseline on this kind of "
                        "machine (tune regress --record -o FILE), or use --against OTHER_TUNE\n",
                o.baseline, r->ref_host, r->ref_cpu, r->ref_fingerprint, ts.cpu_model, fp);
        ret = 3;
        goto done;
    }
    for (size_t i = 0; i < r->n_wl; i++)
        if (r->wl[i].spec.ranks > 0) {
            /* an MPI workload (fmnist-sgd): srun inside a Slurm allocation, else MPICH's mpiexec
             * (hydra), from PATH, for both builds */
            const char *path = getenv("PATH"), *job = getenv("SLURM_JOB_ID");
            runner.slurm_job_id = ref.slurm_job_id = job && job[0] ? job : NULL;
            if (bkm_slurm_find_program(runner.slurm_job_id ? "srun" : "mpiexec", path ? path : "/usr/bin:/bin",
                                       launcher, sizeof launcher, &err) < 0) {
                fprintf(stderr, "tune regress: workload %s runs as an MPI job and needs an MPI launcher: %s "
                                "(install MPICH: mpiexec; or leave %s out of --workloads)\n",
                        r->wl[i].name, err.msg, r->wl[i].name);
                ret = 3;
                goto done;
            }
            runner.launcher = ref.launcher = launcher;
            break;
        }
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_trial_spec_t *sp = &r->wl[i].spec;
        /* an MPI job's workload is no registered kernel: its worker checks the training
         * parameters; here the spec, and a core of its own per rank and thread */
        if (sp->ranks > 0 && (ret = bkm_tune_trial_spec_validate(sp, &err)) == BKM_OK &&
            (long)sp->ranks * sp->threads > ts.allowed_pus)
            ret = bkm_err_set(&err, BKM_EINVAL, "%d ranks x %d threads need more than the %d PUs this process may use",
                              sp->ranks, sp->threads, ts.allowed_pus);
        if (sp->ranks == 0)
            ret = bkm_tune_trial_check(sp, host, &err);
        if (ret < 0) {
            fprintf(stderr, "tune regress: workload %s: %s\n", r->wl[i].name, err.msg);
            ret = 2;
            goto done;
        }
    }
    {
        const volatile sig_atomic_t *stop = bkm_cli_stop_signals_catch();
        runner.stop = ref.stop = stop;
        cfg.stop = stop;
    }
    ret = bkm_tune_regress_measure(r, &cfg, &err);
    if (tty)
        fputc('\n', stderr);
    if (ret < 0)
        goto fail;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    if (o.record) {
        size_t bad = 0;
        for (size_t i = 0; i < r->n_wl; i++)
            if (r->wl[i].n < 3) {
                fprintf(stderr, "tune regress: %s: only %zu process values: %s\n", r->wl[i].name, r->wl[i].n,
                        r->wl[i].error);
                bad++;
            }
        if (bad) {
            fprintf(stderr, "tune regress: baseline not written\n");
            ret = 3;
            goto done;
        }
        bkm_tune_regress_baseline_json(r, bkm_buf_str(&hj), BKM_BUILD_REVISION, when, &baseline);
        if ((ret = bkm_cli_output_write("regress", "-o", o.output, bkm_buf_str(&baseline), 0666)) != 0)
            goto done;
        fprintf(stderr, "tune regress: wrote %s: %zu workloads x %d processes, host %s, revision %s\n", o.output,
                r->n_wl, r->processes, fp, BKM_BUILD_REVISION);
        ret = 0;
        goto done;
    }
    if ((ret = bkm_tune_regress_compare(r, o.threshold, o.alpha, &err)) < 0)
        goto fail;
    {
        bkm_json_w_t w;
        bkm_buf_t res;
        size_t untested = 0;
        char reference[PATH_MAX + 160];
        const char *verdict = r->regressions ? "regression" : "pass";
        for (size_t i = 0; i < r->n_wl; i++)
            untested += !r->wl[i].tested;
        if (!r->regressions && untested)
            verdict = "incomplete";
        if (o.baseline)
            snprintf(reference, sizeof reference, "%s (revision %s, %s)", o.baseline, r->ref_revision, r->ref_created);
        else
            snprintf(reference, sizeof reference, "%s", o.against);
        bkm_buf_init(&res);
        bkm_json_w_init(&w, &res, 0);
        bkm_tune_regress_results_json(r, &w);
        if (o.junit) {
            bkm_buf_t j;
            bkm_buf_init(&j);
            bkm_tune_regress_junit(r, &j);
            ret = bkm_cli_output_write("regress", "--junit", o.junit, bkm_buf_str(&j), 0666);
            bkm_buf_free(&j);
            if (ret != 0) {
                bkm_buf_free(&res);
                goto done;
            }
        }
        {   /* the gate's history, for `tune report` */
            bkm_db_t *db = NULL;
            bkm_db_gate_run_t g = {.mode = o.against ? "ab" : "baseline", .fingerprint = fp,
                                   .git_revision = BKM_BUILD_REVISION, .reference = reference,
                                   .threshold = o.threshold, .alpha = o.alpha, .regressions = r->regressions,
                                   .verdict = verdict, .results_json = bkm_buf_str(&res)};
            char hn[256] = "unknown";
            const char *path = bkm_cli_db_path(o.db);
            bkm_err_t e2 = {0};
            gethostname(hn, sizeof hn - 1);
            g.hostname = hn;
            if (!bkm_cli_db_check("regress", path) || bkm_db_open(&db, path, BKM_DB_CREATE, &e2) < 0 ||
                bkm_db_gate_store(db, &g, &e2) < 0)
                fprintf(stderr, "tune regress: warning: the run was not stored in %s: %s\n", path, e2.msg);
            bkm_db_close(db);
        }
        if (o.json) {
            bkm_json_w_init(&w, &out, 1);
            bkm_json_obj_begin(&w);
            bkm_json_key(&w, "verdict"), bkm_json_str(&w, verdict);
            bkm_json_key(&w, "regressions"), bkm_json_int(&w, r->regressions);
            bkm_json_key(&w, "mode"), bkm_json_str(&w, o.against ? "ab" : "baseline");
            bkm_json_key(&w, "reference"), bkm_json_str(&w, reference);
            bkm_json_key(&w, "revision"), bkm_json_str(&w, BKM_BUILD_REVISION);
            bkm_json_key(&w, "host"), bkm_json_raw(&w, bkm_buf_str(&hj));
            bkm_json_key(&w, "threshold"), bkm_json_double(&w, o.threshold);
            bkm_json_key(&w, "alpha"), bkm_json_double(&w, o.alpha);
            bkm_json_key(&w, "results"), bkm_json_raw(&w, bkm_buf_str(&res));
            bkm_json_obj_end(&w);
            printf("%s\n", bkm_buf_str(&out));
        } else {
            printf("tune regress: %s vs %s on %s (%s)\n", BKM_BUILD_REVISION, reference, fp, ts.cpu_model);
            bkm_tune_regress_table(r, &out);
            fputs(bkm_buf_str(&out), stdout);
            printf("verdict: %s (%d regression(s))\n", verdict, r->regressions);
        }
        bkm_buf_free(&res);
        ret = r->regressions ? 1 : untested ? 4 : 0;
    }
    goto done;
fail:
    fprintf(stderr, "tune regress: %s\n", err.msg);
    ret = bkm_status_exit_code(ret);
done:
    if (fix_open)
        bkm_cli_topo_fix_close(&fix);
    if (r)
        bkm_tune_regress_free(r);
    free(r);
    bkm_free(baseline_text);
    bkm_topo_close(host);
    bkm_buf_free(&hj);
    bkm_buf_free(&out);
    bkm_buf_free(&baseline);
    return ret;
}
