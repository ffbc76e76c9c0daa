/* SPDX-License-Identifier: MIT */
/* `tune run`: one trial of one workload with given settings, in a fresh worker process. */
#define _GNU_SOURCE   /* realpath, PATH_MAX */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_program.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_run_summary[] = "run one trial (workload + settings) in a fresh worker process";

typedef struct run_opts {
    bkm_tune_trial_spec_t spec;
    const char *workload, *backend, *compare;
    const char *metric, *metric_unit, *runtime;   /* -- CMD: the program (cli_program.h) */
    int metric_higher;
    double probe_timeout;
#ifdef BKM_TEST_HOOKS
    const char *inject;
#endif
    int json, dry_run;
} run_opts_t;

/* --affinity / --blocktime: the variable goes into the trial's environment as given. */
static int run_setenv(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    run_opts_t *o = cfg;
    const char *var = strcmp(opt->name, "affinity") == 0            ? "KMP_AFFINITY"
                      : strcmp(opt->name, "blocktime") == 0         ? "KMP_BLOCKTIME"
                      : strcmp(opt->name, "hw-subset") == 0         ? "KMP_HW_SUBSET"
                      : strcmp(opt->name, "places") == 0            ? "OMP_PLACES"
                      : strcmp(opt->name, "gomp-cpu-affinity") == 0 ? "GOMP_CPU_AFFINITY"
                      : strcmp(opt->name, "wait-policy") == 0       ? "OMP_WAIT_POLICY"
                      : strcmp(opt->name, "spincount") == 0         ? "GOMP_SPINCOUNT"
                                                                    : "OMP_PROC_BIND";
    return bkm_tune_trial_spec_setenv(&o->spec, var, v, err);
}

static int run_param(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    (void)opt;
    return bkm_tune_trial_spec_param(&((run_opts_t *)cfg)->spec, v, err);
}

static const bkm_cli_opt_t run_table[] = {
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "W", .off = offsetof(run_opts_t, workload),
     .help = "gemm, conv2d, alexnet, ... (bad names are listed); with -- CMD the\n"
             "name the program is stored under (default: from the program)", .example = "gemm"},
    {.name = "backend", .kind = BKM_CLI_STR, .metavar = "B", .off = offsetof(run_opts_t, backend),
     .help = "native or onednn (default: the workload's default)", .example = "native"},
    {.name = "compare", .kind = BKM_CLI_STR, .metavar = "B", .off = offsetof(run_opts_t, compare),
     .help = "after the measurement, time --backend and backend B step for step in\n"
             "the same worker (alternating, --min-samples pairs, at least 3) and\n"
             "report B's median / --backend's (above 1: --backend is faster), with\n"
             "B's per-layer table in --json for networks (--param layers=1)",
     .example = "onednn"},
    {.name = "threads", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(run_opts_t, spec.threads), .lo = 1,
     .hi = BKM_CPUSET_MAX, .help = "OpenMP threads, at most the PUs of this node (default 1)", .example = "1"},
    {.name = "affinity", .kind = BKM_CLI_CALL, .metavar = "S", .call = run_setenv,
     .help = "KMP_AFFINITY value, e.g. granularity=fine,compact (default unset)", .example = "compact"},
    {.name = "blocktime", .kind = BKM_CLI_CALL, .metavar = "B", .call = run_setenv,
     .help = "KMP_BLOCKTIME value in ms or 'infinite' (default unset)", .example = "0"},
    {.name = "hw-subset", .kind = BKM_CLI_CALL, .metavar = "S", .call = run_setenv,
     .help = "KMP_HW_SUBSET value, e.g. 1s,2c,1t (default unset)", .example = "1c"},
    {.name = "places", .kind = BKM_CLI_CALL, .metavar = "P", .call = run_setenv,
     .help = "OMP_PLACES value, e.g. cores (default unset)", .example = "cores"},
    {.name = "proc-bind", .kind = BKM_CLI_CALL, .metavar = "B", .call = run_setenv,
     .help = "OMP_PROC_BIND value, e.g. spread (default unset)", .example = "close"},
    {.name = "gomp-cpu-affinity", .kind = BKM_CLI_CALL, .metavar = "L", .call = run_setenv,
     .help = "GOMP_CPU_AFFINITY value, e.g. \"0 1\" (GNU libgomp; libomp converts it)", .example = "0"},
    {.name = "wait-policy", .kind = BKM_CLI_CALL, .metavar = "W", .call = run_setenv,
     .help = "OMP_WAIT_POLICY value: active or passive (default unset)", .example = "passive"},
    {.name = "spincount", .kind = BKM_CLI_CALL, .metavar = "N", .call = run_setenv,
     .help = "GOMP_SPINCOUNT value (GNU libgomp only), e.g. 10000 or infinite", .example = "1000"},
    BKM_CLI_PROGRAM_OPTS(run_opts_t),
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "key=value", .call = run_param, .flags = BKM_CLI_REPEAT,
     .help = "a workload parameter or kernel tunable (m=256, mc=128)", .example = "m=64"},
    {.name = "warmup", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(run_opts_t, spec.warmup), .lo = 0,
     .hi = BKM_TUNE_SAMPLES_MAX, .help = "at most N warm-up iterations, at least 1 is always run (default 20)"},
    {.name = "max-time", .kind = BKM_CLI_DURATION, .metavar = "SEC", .off = offsetof(run_opts_t, spec.max_time_s),
     .lo = 0, .hi = BKM_TUNE_TIME_MAX_S, .help = "no adaptive repetition after SEC of timing (default 30)"},
    /* --seed, which `tune sweep` and `tune regress` give to their own random choices, was the
     * data seed here: still read, with a note (run_parse) */
    BKM_CLI_TRIAL_OPTS(run_opts_t, spec, "seed"),
    {.name = "dry-run", .kind = BKM_CLI_FLAG, .off = offsetof(run_opts_t, dry_run),
     .help = "check everything (workload, parameters, settings against this\n"
             "node) and print the worker's trial spec as JSON; start nothing"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(run_opts_t, json),
     .help = "print one JSON object (status, samples_ms, median_ms, min_ms, gflops,\n"
             "flops_per_iter, binding, check, counters, ...) instead of text"},
#ifdef BKM_TEST_HOOKS
    {.name = "inject", .kind = BKM_CLI_STR, .metavar = "FAULT", .off = offsetof(run_opts_t, inject),
     .help = "test build only: the worker misbehaves on purpose (segv, abort, hang,\n"
             "fail, badjson, mismatch)", .example = "fail"},
#endif
};

static const bkm_cli_cmd_spec_t run_cmd = {
    .name = "run",
    .usage = "tune run --workload W [--backend native|onednn [--compare onednn|native]] [--threads N] [--affinity S]\n"
             "tune run [--workload NAME] [--threads N] [--places P] [--proc-bind B] [--affinity S] ...\n"
             "         [--metric REGEX [--metric-unit U] [--metric-higher]] -- CMD ARGS...\n"
             "         [--blocktime B] [--hw-subset S] [--places P] [--proc-bind B] [--param key=value ...] [--warmup N] [--min-samples N]\n"
             "         [--min-time SEC] [--max-samples N] [--max-time SEC] [--data-seed S]\n"
             "         [--counters LIST] [--disturbed-share X] [--trial-timeout SEC] [--dry-run]\n"
             "         [--json]",
    .about = "Runs ONE trial: a fresh worker process gets KMP_AFFINITY, KMP_BLOCKTIME and\n"
             "OMP_NUM_THREADS from the options (every other OMP_*/KMP_*/GOMP_* variable of this shell is\n"
             "removed), verifies that each OpenMP thread is bound as the affinity planner predicts,\n"
             "builds the workload, warms up until two iterations agree within 10%, then times\n"
             "iterations: at least --min-samples samples and --min-time seconds, more (up to\n"
             "--max-samples and --max-time) while the 95% confidence interval of the median is wider\n"
             "than +-5% of it. Warm-up stops early after max(--min-time, 1 s). PAPI counters\n"
             "cover the timed loop on every thread, and so does the noise evidence from the OS\n"
             "(context switches, page faults, CPU time, run-queue wait, migrations per thread;\n"
             "steal time of its CPUs), with or without PAPI: 'noise' in --json.",
    BKM_CLI_TABLE(run_table),
    .more = "environment: the worker inherits this shell's environment except every OMP_*, KMP_*,\n"
            "GOMP_* and HWLOC_* variable; ONEDNN_*, DNNL_*, LD_PRELOAD, ... pass unchanged (its JSON\n"
            "has a descriptor of its own, so ONEDNN_VERBOSE=1 is harmless). HWLOC_XMLFILE,\n"
            "HWLOC_SYNTHETIC, HWLOC_FSROOT and the like are refused (exit 3): they describe another\n"
            "machine than the one the trial runs on. SIGINT/SIGTERM kill the worker at once.\n\n"
            "exit codes: 0 ok, 1 binding mismatch, 2 bad input (named), 3 the worker crashed, timed out\n"
            "            or failed, or another environment problem, 128+N stopped by signal N\n\n"
            "the user's program (-- CMD ARGS): each trial starts CMD with the setting's variables\n"
            "and OMP_NUM_THREADS, times it (its wall time, or the numbers --metric finds in its\n"
            "output), reads which OpenMP runtime it maps, finds its OpenMP team among its threads and\n"
            "checks it against the plan of that runtime (GNU libgomp reads OMP_*/GOMP_*, ignores\n"
            "KMP_*: a variable it ignores is named). A non-zero exit is a failed trial.\n\n"
            "example:\n"
            "  tune run --threads 2 --places cores --proc-bind close -- python3 train.py\n"
            "  tune run --threads 2 --metric 'avg time ([0-9.]+) millisecond' -- ./benchmark\n"
            "  tune run --workload gemm --param m=256 --param n=256 --param k=256 --threads 2 \\\n"
            "           --affinity granularity=fine,compact --json\n"
            "  tune run --workload alexnet --param batch=64 --param layers=1 --threads 2 \\\n"
            "           --backend native --compare onednn --min-samples 5 --json   # interleaved ratio\n",
};

/* Copy option @p name's value @p v into @p dst (@p cap bytes); BKM_EINVAL naming it when too long. */
static int run_copy(const char *name, const char *v, char *dst, size_t cap, bkm_err_t *err)
{
    if (v == NULL)
        return BKM_OK;
    if (strlen(v) >= cap)
        return bkm_err_set(err, BKM_EINVAL, "tune run: --%s '%s' is longer than %zu characters", name, v, cap - 1);
    snprintf(dst, cap, "%s", v);
    return BKM_OK;
}

/* Parse the options into @p o; returns 0 to go on, 1 after --help, or BKM_EINVAL (err set). */
static int run_parse(int argc, char **argv, run_opts_t *o, bkm_err_t *err)
{
    bkm_tune_trial_spec_t *spec = &o->spec;
    bkm_cli_given_t given;
    int rc = bkm_cli_opt_parse_given(&run_cmd, argc, argv, o, &given, err);
    for (size_t i = 0; rc == 0 && i < given.n; i++)
        if (given.list[i].by_alias && strcmp(run_cmd.opts[given.list[i].opt].name, "data-seed") == 0) {
            fprintf(stderr, "tune run: note: --seed is deprecated, use --data-seed (the workload's data seed; "
                            "elsewhere --seed seeds bkm's own random choices)\n");
            break;
        }
    bkm_cli_given_free(&given);
    if (rc != 0)
        return rc;
    if ((rc = run_copy("workload", o->workload, spec->workload, sizeof spec->workload, err)) < 0 ||
        (rc = run_copy("backend", o->backend, spec->backend, sizeof spec->backend, err)) < 0 ||
        (rc = run_copy("compare", o->compare, spec->compare, sizeof spec->compare, err)) < 0)
        return rc;
#ifdef BKM_TEST_HOOKS
    if ((rc = run_copy("inject", o->inject, spec->inject, sizeof spec->inject, err)) < 0)
        return rc;
#endif
    if (o->compare != NULL && (o->backend == NULL || strcmp(o->compare, o->backend) == 0))
        return bkm_err_set(err, BKM_EINVAL, "tune run: --compare '%s' needs --backend naming the other engine (got %s)",
                           o->compare, o->backend ? o->backend : "none");
    if (spec->max_samples < spec->min_samples)
        spec->max_samples = spec->min_samples;
    return BKM_OK;
}

static void run_print_text(const bkm_tune_trial_result_t *r, const bkm_tune_trial_spec_t *spec)
{
    const bkm_json_t *b = r->doc ? bkm_json_get(r->doc, "binding") : NULL;
    const bkm_json_t *th = b ? bkm_json_get(b, "threads") : NULL;
    printf("status      %s%s%s\n", bkm_tune_trial_status_name(r->status), r->message[0] ? ": " : "", r->message);
    printf("workload    %s  backend %s  impl %s\n", spec->workload,
           r->doc && bkm_json_get_str(r->doc, "backend") ? bkm_json_get_str(r->doc, "backend") : "(default)",
           r->impl[0] ? r->impl : "-");
    printf("threads     %d  affinity %s\n", spec->threads,
           r->doc && bkm_json_get_str(r->doc, "effective_affinity") ? bkm_json_get_str(r->doc, "effective_affinity")
                                                                     : "-");
    if (b && bkm_json_get(b, "program")) {   /* the user's program */
        const bkm_json_t *rt = bkm_json_get(b, "runtime"), *ld = rt ? bkm_json_get(rt, "loaded") : NULL;
        printf("runtime     %s (expected %s: %s)", rt && bkm_json_get_str(rt, "planned_for") ? bkm_json_get_str(rt, "planned_for")
                                                                                            : "?",
               rt && bkm_json_get_str(rt, "expected") ? bkm_json_get_str(rt, "expected") : "?",
               rt && bkm_json_get_str(rt, "how") ? bkm_json_get_str(rt, "how") : "?");
        for (const bkm_json_t *x = ld ? ld->child : NULL; x; x = x->next)
            printf("%s%s", x == ld->child ? "; mapped " : ", ", bkm_json_get_str(x, "path") ? bkm_json_get_str(x, "path") : "?");
        printf("%s\n", rt && bkm_json_get(rt, "two_runtimes") && bkm_json_get(rt, "two_runtimes")->boolean
                           ? "  (TWO OpenMP runtimes in one process: each keeps its own threads)" : "");
        printf("binding     %s%s\n", b && bkm_json_get(b, "verified") && bkm_json_get(b, "verified")->boolean ? "verified: "
                                                                                                       : "not verified: ",
               b && bkm_json_get_str(b, "summary") ? bkm_json_get_str(b, "summary") : "?");
    }
    for (const bkm_json_t *t = th ? th->child : NULL; t; t = t->next)
        printf("  thread %-3d on {%s} planned {%s}%s\n", (int)bkm_json_get_num(t, "thread", -1),
               bkm_json_get_str(t, "actual") ? bkm_json_get_str(t, "actual") : "?",
               bkm_json_get_str(t, "planned") ? bkm_json_get_str(t, "planned") : "?",
               bkm_json_get(t, "match") && bkm_json_get(t, "match")->boolean ? "" : "  MISMATCH");
    if (r->n_samples > 0 && r->doc && bkm_json_get(r->doc, "metric")) {
        const bkm_json_t *m = bkm_json_get(r->doc, "metric");
        int higher = bkm_json_get(m, "higher_is_better") && bkm_json_get(m, "higher_is_better")->boolean;
        printf("figure      median %.6g %s%s over %d sample(s) of the process (%s)\n",
               higher ? 1.0 / r->median_ms : r->median_ms, bkm_json_get_str(m, "unit") ? bkm_json_get_str(m, "unit") : "",
               higher ? " (higher is better)" : "", r->n_samples,
               strcmp(bkm_json_get_str(m, "source") ? bkm_json_get_str(m, "source") : "", "output") == 0
                   ? "its output, --metric" : "its wall time");
    } else if (r->n_samples > 0) {
        printf("time        median %.4f ms  min %.4f ms  MAD %.4f ms  95%% CI [%.4f, %.4f] ms  (%d samples)\n",
               r->median_ms, r->min_ms, r->mad_ms, r->ci95_lo_ms, r->ci95_hi_ms, r->n_samples);
        printf("rate        %.2f GFLOP/s (median; %.4g FLOP per iteration)\n", r->gflops, r->flops_per_iter);
    }
    if (r->n_samples > 0 && r->samples_ms && strcmp(spec->workload, "conv3d") == 0) {
        /* the seed's own line (berkely.py, docs/workloads.md §5): the mean over the timed iterations */
        double sum = 0.0;
        for (int i = 0; i < r->n_samples; i++)
            sum += r->samples_ms[i];
        printf("avg time %.4f millisecond\n", sum / (double)r->n_samples);
    }
    {   /* --compare: the interleaved pairs */
        const bkm_json_t *c = r->doc ? bkm_json_get(r->doc, "compare") : NULL;
        if (c != NULL)
            printf("compare     %s median %.4f ms vs %s %.4f ms in %d interleaved pairs: ratio %.3f (%s ms / %s ms)\n",
                   bkm_json_get_str(c, "backend") ? bkm_json_get_str(c, "backend") : "?",
                   bkm_json_get_num(c, "compare_median_ms", NAN), spec->backend, bkm_json_get_num(c, "median_ms", NAN),
                   (int)bkm_json_get_num(c, "pairs", 0), bkm_json_get_num(c, "ratio", NAN),
                   bkm_json_get_str(c, "backend") ? bkm_json_get_str(c, "backend") : "?", spec->backend);
    }
    if (r->check_kind[0])
        printf("check       %s %.9g\n", r->check_kind, r->check_value);
    for (int i = 0; i < r->n_counters; i++) {
        const bkm_counter_t *c = &r->counters[i];
        if (bkm_counter_presentable(c))
            printf("counter     %-24s %lld%s%s%s\n", c->name, c->value, c->domain[0] ? "  (" : "", c->domain,
                   c->domain[0] ? " domain)" : "");
        else if (c->available)
            printf("counter     %-24s disagrees with the OS: %s\n", c->name, c->reason);
        else
            printf("counter     %-24s unavailable: %s\n", c->name, c->reason);
    }
    if (r->doc && bkm_json_get(r->doc, "noise")) {
        const bkm_json_t *n = bkm_json_get(r->doc, "noise"), *t = bkm_db_noise_totals(n);
        printf("noise       %s: share %.3g (run-queue wait %.3g + steal %.3g; threshold %.3g)\n",
               r->disturbed == 1 ? "DISTURBED" : r->disturbed == 0 ? "quiet" : "unknown", r->noise_share,
               bkm_json_get_num(n, "wait_share", NAN), bkm_json_get_num(n, "steal_share", NAN),
               bkm_json_get_num(n, "threshold", NAN));
        if (t) {
            double nt = bkm_json_get_num(t, "threads", -1);   /* a program's sums say over how many */
            char over[64] = "the team's threads";
            if (nt >= 0)
                snprintf(over, sizeof over, "%.0f thread%s%s", nt, nt == 1 ? "" : "s",
                         t == bkm_json_get(bkm_json_get(n, "totals"), "team") ? " of the OpenMP team" : "");
            printf("            switches %.0f voluntary, %.0f involuntary; migrations %.0f; page faults %.0f minor, "
                   "%.0f major (over %s; -1: unavailable)\n",
                   bkm_json_get_num(t, "voluntary_switches", -1), bkm_json_get_num(t, "involuntary_switches", -1),
                   bkm_json_get_num(t, "migrations", -1), bkm_json_get_num(t, "minor_faults", -1),
                   bkm_json_get_num(t, "major_faults", -1), over);
        }
    }
    if (r->status != BKM_TRIAL_OK && r->stderr_tail[0])
        printf("worker stderr (tail):\n%s", r->stderr_tail);
}

static void run_print_json(const bkm_tune_trial_result_t *r)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_trial_result_to_json(r, &w);
    puts(bkm_buf_str(&b));
    bkm_buf_free(&b);
}

/* -- CMD: the program resolved (its runtime found), the trial's name, its variables checked
 * against that runtime (one it ignores is named on stderr; the trial still runs as asked). */
static int run_program_open(run_opts_t *o, bkm_cli_program_t *cp, int pargc, char **pargv, const char *self,
                            const bkm_topo_t *topo, bkm_err_t *err)
{
    bkm_buf_t ignored;
    int rc;
    if (o->backend || o->compare || o->spec.n_params > 0)
        return bkm_err_set(err, BKM_EINVAL, "tune run: --%s does not apply to a program (-- %s)",
                           o->backend ? "backend" : o->compare ? "compare" : "param", pargv[0]);
    if ((rc = bkm_cli_program_open(cp, pargc, pargv, o->workload, o->metric, o->metric_unit, o->metric_higher,
                                   o->runtime, o->probe_timeout, self, topo, err)) < 0)
        return rc;
    snprintf(o->spec.workload, sizeof o->spec.workload, "%s", cp->name);
    bkm_buf_init(&ignored);
    rc = bkm_tune_program_trial_check(&cp->pg, &o->spec, topo, &ignored, err);
    if (rc == BKM_OK && ignored.len)
        fprintf(stderr, "tune run: warning: %s\n", bkm_buf_str(&ignored));
    bkm_buf_free(&ignored);
    return rc;
}

/* --dry-run: the trial spec (and the program with the runtime it loads) as JSON. */
static void run_dry(const run_opts_t *o, const bkm_cli_program_t *cp)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    if (cp == NULL) {
        bkm_tune_trial_spec_to_json(&o->spec, &w);
    } else {
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "spec");
        bkm_tune_trial_spec_to_json(&o->spec, &w);
        bkm_json_key(&w, "program");
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "argv"), bkm_tune_program_argv_json(&cp->pg, &w);
        bkm_json_key(&w, "sha256"), bkm_json_str(&w, cp->sha256);
        bkm_json_key(&w, "runtime"), bkm_json_str(&w, bkm_aff_runtime_kind_name(cp->pg.runtime));
        bkm_json_key(&w, "how"), bkm_json_str(&w, cp->how);
        bkm_json_key(&w, "detection");
        bkm_aff_runtime_result_to_json(&cp->detected, &w, NULL);
        bkm_json_obj_end(&w);
        bkm_json_obj_end(&w);
    }
    puts(bkm_buf_str(&b));
    bkm_buf_free(&b);
}

/* Run the trial and report it; the exit code. */
static int run_trial(const run_opts_t *o, bkm_tune_runner_t *rn)
{
    bkm_tune_trial_result_t res = {0};
    bkm_err_t err = {0};
    int code, rc = bkm_tune_trial_run(rn, &o->spec, &res, &err);
    if (rc < 0) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
    } else if (res.status == BKM_TRIAL_INTERRUPTED) {
        fprintf(stderr, "tune run: %s\n", res.message);
        code = 128 + (int)*rn->stop;
    } else {
        if (o->json)
            run_print_json(&res);
        else
            run_print_text(&res, &o->spec);
        if (res.status != BKM_TRIAL_OK)
            fprintf(stderr, "tune run: trial %s: %s\n", bkm_tune_trial_status_name(res.status), res.message);
        code = res.status == BKM_TRIAL_OK ? 0 : res.status == BKM_TRIAL_BINDING_MISMATCH ? 1 : 3;
    }
    bkm_tune_trial_result_free(&res);
    return code;
}

int bkm_cli_run(int argc, char **argv)
{
    run_opts_t o;
    bkm_tune_runner_t rn = {NULL, "worker", environ, NULL, 0, NULL, NULL, NULL};
    bkm_topo_t *topo = NULL;
    bkm_aff_topo_fix_t fix = {0};
    bkm_cli_program_t *cp = NULL;
    bkm_err_t err = {0};
    char self[PATH_MAX], **pargv = NULL;
    int rc, code = 0, oargc, pargc = 0, libomp;

    memset(&o, 0, sizeof o);
    bkm_tune_trial_spec_defaults(&o.spec);
    if ((rc = bkm_cli_program_split(argc, argv, &oargc, &pargv, &pargc, &err)) < 0 ||
        (rc = run_parse(oargc, argv, &o, &err)) != 0) {
        if (rc < 0)
            fprintf(stderr, "%s\n", err.msg);
        return rc > 0 ? 0 : 2;
    }
    if (pargc == 0 && o.workload == NULL) {
        fprintf(stderr, "tune run: --workload W is required (or -- CMD ARGS: your own program)\n");
        return 2;
    }
    if (realpath("/proc/self/exe", self) == NULL) {
        fprintf(stderr, "tune run: cannot resolve /proc/self/exe to start the worker\n");
        return 3;
    }
    rn.worker_path = self;
    if ((rc = bkm_topo_open_host(&topo, &err)) < 0 ||
        (pargc > 0 && (cp = calloc(1, sizeof *cp)) == NULL && (rc = bkm_err_set(&err, BKM_ENOMEM, "out of memory")) < 0) ||
        (rc = pargc > 0 ? run_program_open(&o, cp, pargc, pargv, self, topo, &err)
                        : bkm_tune_trial_check(&o.spec, topo, &err)) < 0) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
        goto out;
    }
    if (o.dry_run) {
        run_dry(&o, cp);
        goto out;
    }
    /* libomp must see hwloc's topology, which bkm plans with (issue 8): its variables go to
     * bkm's workers and to a program on libomp, never to one that ignores them */
    libomp = cp == NULL || cp->pg.runtime == BKM_AFF_RUNTIME_LIBOMP || cp->pg.runtime == BKM_AFF_RUNTIME_LIBIOMP5;
    if ((rc = bkm_tune_env_check(environ, &err)) < 0 || (rc = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 ||
        (libomp && (rc = bkm_cli_topo_fix_spec(&fix, &o.spec, &err)) < 0)) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
        goto out;
    }
    rn.stop = bkm_cli_stop_signals_catch();
    rn.program = cp ? &cp->pg : NULL;
    if (libomp && (fix.disagreed || fix.unstable)) {
        char note[2048];
        fprintf(stderr, "tune run: %s\n", bkm_cli_topo_fix_describe(&fix, note, sizeof note));
    }
    code = run_trial(&o, &rn);
out:
    bkm_cli_topo_fix_close(&fix);
    bkm_cli_program_close(cp);
    free(cp);
    bkm_topo_close(topo);
    return code;
}
