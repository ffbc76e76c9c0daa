/* SPDX-License-Identifier: MIT */
/* `tune run`: one trial of one workload with given settings, in a fresh worker process. */
#define _GNU_SOURCE   /* realpath, PATH_MAX */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_run_summary[] = "run one trial (workload + settings) in a fresh worker process";

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: tune run --workload W [--backend native|onednn] [--threads N] [--affinity S]\n"
            "                [--blocktime B] [--param key=value ...] [--warmup N] [--iters N]\n"
            "                [--min-time SEC] [--max-samples N] [--max-time SEC] [--seed S]\n"
            "                [--counters LIST]"
            " [--trial-timeout SEC] [--dry-run] [--json]\n\n"
            "Runs ONE trial: a fresh worker process gets KMP_AFFINITY, KMP_BLOCKTIME and\n"
            "OMP_NUM_THREADS from the options (every other OMP_*/KMP_*/GOMP_* variable of this shell is\n"
            "removed), verifies that each OpenMP thread is bound as the affinity planner predicts,\n"
            "builds the workload, warms up until two iterations agree within 10%%, then times\n"
            "iterations: at least --iters samples and --min-time seconds, more (up to --max-samples\n"
            "and --max-time) while the 95%% confidence interval of the median is wider than +-5%% of\n"
            "it. Warm-up stops early after max(--min-time, 1 s). PAPI counters\n"
            "cover the timed loop on every thread.\n\n"
            "options:\n"
            "  --workload W        gemm, conv2d, alexnet, ... (required; bad names are listed)\n"
            "  --backend B         native or onednn (default: the workload's default)\n"
            "  --threads N         OpenMP threads, 1..PUs of this node (default 1)\n"
            "  --affinity S        KMP_AFFINITY value, e.g. granularity=fine,compact (default unset)\n"
            "  --blocktime B       KMP_BLOCKTIME value in ms or 'infinite' (default unset)\n"
            "  --param key=value   a workload parameter or kernel tunable; repeatable (m=256, mc=128)\n"
            "  --warmup N          at most N warm-up iterations, at least 1 is always run (default 20)\n"
            "  --iters N           at least N timed samples (default 5)\n"
            "  --min-time SEC      time at least SEC seconds (default 0.5)\n"
            "  --max-samples N     cap of the adaptive repetition (default 50)\n"
            "  --max-time SEC      no adaptive repetition after SEC seconds of timing (default 30)\n"
            "  --seed S            data seed (default 1)\n"
            "  --counters LIST     PAPI events, comma-separated; 'none' disables (default: cycles,\n"
            "                      instructions, cache misses, FP ops and the perf:: software events;\n"
            "                      unavailable ones are listed with PAPI's reason)\n"
            "  --trial-timeout SEC kill the worker after SEC seconds (default 600)\n"
            "  --dry-run           check everything (workload, parameters, settings against this\n"
            "                      node) and print the worker's trial spec as JSON; start nothing\n"
            "  --json              print one JSON object (status, samples_ms, median_ms, min_ms, gflops,\n"
            "                      flops_per_iter, binding, check, counters, ...) instead of text\n"
            "  --inject FAULT      TESTS ONLY: the worker misbehaves on purpose (segv, abort, hang, fail,\n"
            "                      badjson, mismatch) to check how faults are recorded\n"
            "  --help              this text\n\n"
            "environment: the worker inherits this shell's environment except every OMP_*, KMP_*,\n"
            "GOMP_* and HWLOC_* variable; ONEDNN_*, DNNL_*, LD_PRELOAD, ... pass unchanged (its JSON\n"
            "has a descriptor of its own, so ONEDNN_VERBOSE=1 is harmless). HWLOC_XMLFILE,\n"
            "HWLOC_SYNTHETIC, HWLOC_FSROOT and the like are refused (exit 3): they describe another\n"
            "machine than the one the trial runs on. SIGINT/SIGTERM kill the worker at once.\n\n"
            "exit codes: 0 ok, 1 binding mismatch, 2 bad input (named), 3 the worker crashed, timed out\n"
            "            or failed, or another environment problem, 128+N stopped by signal N\n\n"
            "example:\n"
            "  tune run --workload gemm --param m=256 --param n=256 --param k=256 --threads 2 \\\n"
            "           --affinity granularity=fine,compact --json\n");
}

static int run_int(const char *opt, const char *s, long long lo, long long hi, long long *v)
{
    if (bkm_parse_int(s, lo, hi, v) == BKM_OK)
        return BKM_OK;
    fprintf(stderr, "tune run: %s '%s' is not an integer in %lld..%lld\n", opt, s, lo, hi);
    return BKM_EINVAL;
}

static int run_double(const char *opt, const char *s, double lo, double hi, double *v)
{
    if (bkm_parse_double(s, v) == BKM_OK && *v >= lo && *v <= hi)
        return BKM_OK;
    fprintf(stderr, "tune run: %s '%s' is not a number in %g..%g\n", opt, s, lo, hi);
    return BKM_EINVAL;
}

/* Parse the options into @p spec; returns 0 to go on, 1 after --help, or a negative status. */
static int run_parse(int argc, char **argv, bkm_tune_trial_spec_t *spec, int *json, int *dry_run)
{
    bkm_err_t err = {0};
    long long v;
    int rc = BKM_OK;
    for (int i = 1; i < argc && rc == BKM_OK; i++) {
        const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            run_usage(stdout);
            return 1;
        }
        if (strcmp(o, "--json") == 0) {
            *json = 1;
            continue;
        }
        if (strcmp(o, "--dry-run") == 0) {
            *dry_run = 1;
            continue;
        }
        if (a == NULL || strncmp(o, "--", 2) != 0) {
            fprintf(stderr, "tune run: unknown option or missing value '%s' (see tune run --help)\n", o);
            return BKM_EINVAL;
        }
        i++;
        if (strcmp(o, "--workload") == 0 || strcmp(o, "--backend") == 0 || strcmp(o, "--counters") == 0 ||
            strcmp(o, "--inject") == 0) {
            char *dst = o[2] == 'w' ? spec->workload : o[2] == 'b' ? spec->backend
                        : o[2] == 'c' ? spec->counters : spec->inject;
            size_t n = o[2] == 'w' ? sizeof spec->workload : o[2] == 'b' ? sizeof spec->backend
                       : o[2] == 'c' ? sizeof spec->counters : sizeof spec->inject;
            if (strlen(a) >= n || a[0] == '\0') {
                fprintf(stderr, "tune run: %s '%s' is empty or too long\n", o, a);
                return BKM_EINVAL;
            }
            snprintf(dst, n, "%s", a);
        } else if (strcmp(o, "--threads") == 0) {
            if ((rc = run_int(o, a, 1, BKM_CPUSET_MAX, &v)) == BKM_OK)
                spec->threads = (int)v;
        } else if (strcmp(o, "--affinity") == 0 || strcmp(o, "--blocktime") == 0) {
            rc = bkm_tune_trial_spec_setenv(spec, o[2] == 'a' ? "KMP_AFFINITY" : "KMP_BLOCKTIME", a, &err);
        } else if (strcmp(o, "--param") == 0) {
            rc = bkm_tune_trial_spec_param(spec, a, &err);
        } else if (strcmp(o, "--warmup") == 0) {
            if ((rc = run_int(o, a, 0, BKM_TUNE_SAMPLES_MAX, &v)) == BKM_OK)
                spec->warmup = (int)v;
        } else if (strcmp(o, "--iters") == 0) {
            if ((rc = run_int(o, a, 1, BKM_TUNE_SAMPLES_MAX, &v)) == BKM_OK)
                spec->min_samples = (int)v;
        } else if (strcmp(o, "--max-samples") == 0) {
            if ((rc = run_int(o, a, 1, BKM_TUNE_SAMPLES_MAX, &v)) == BKM_OK)
                spec->max_samples = (int)v;
        } else if (strcmp(o, "--seed") == 0) {
            if ((rc = run_int(o, a, 0, LLONG_MAX, &v)) == BKM_OK)
                spec->seed = (uint64_t)v;
        } else if (strcmp(o, "--min-time") == 0) {
            rc = run_double(o, a, 0.0, BKM_TUNE_TIME_MAX_S, &spec->min_time_s);
        } else if (strcmp(o, "--max-time") == 0) {
            rc = run_double(o, a, 0.0, BKM_TUNE_TIME_MAX_S, &spec->max_time_s);
        } else if (strcmp(o, "--trial-timeout") == 0) {
            rc = run_double(o, a, 0.001, BKM_TUNE_TIMEOUT_MAX_S, &spec->timeout_s);
        } else {
            fprintf(stderr, "tune run: unknown option '%s' (see tune run --help)\n", o);
            return BKM_EINVAL;
        }
        if (rc < 0 && err.msg[0])
            fprintf(stderr, "tune run: %s: %s\n", o, err.msg);
    }
    if (rc == BKM_OK && spec->workload[0] == '\0') {
        fprintf(stderr, "tune run: --workload is required (see tune run --help)\n");
        return BKM_EINVAL;
    }
    if (rc == BKM_OK && spec->max_samples < spec->min_samples)
        spec->max_samples = spec->min_samples;
    return rc;
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
    for (const bkm_json_t *t = th ? th->child : NULL; t; t = t->next)
        printf("  thread %-3d on {%s} planned {%s}%s\n", (int)bkm_json_get_num(t, "thread", -1),
               bkm_json_get_str(t, "actual") ? bkm_json_get_str(t, "actual") : "?",
               bkm_json_get_str(t, "planned") ? bkm_json_get_str(t, "planned") : "?",
               bkm_json_get(t, "match") && bkm_json_get(t, "match")->boolean ? "" : "  MISMATCH");
    if (r->n_samples > 0) {
        printf("time        median %.4f ms  min %.4f ms  MAD %.4f ms  95%% CI [%.4f, %.4f] ms  (%d samples)\n",
               r->median_ms, r->min_ms, r->mad_ms, r->ci95_lo_ms, r->ci95_hi_ms, r->n_samples);
        printf("rate        %.2f GFLOP/s (median; %.4g FLOP per iteration)\n", r->gflops, r->flops_per_iter);
    }
    if (r->check_kind[0])
        printf("check       %s %.9g\n", r->check_kind, r->check_value);
    for (int i = 0; i < r->n_counters; i++) {
        if (r->counters[i].available)
            printf("counter     %-24s %lld\n", r->counters[i].name, r->counters[i].value);
        else
            printf("counter     %-24s unavailable: %s\n", r->counters[i].name, r->counters[i].reason);
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

int bkm_cli_run(int argc, char **argv)
{
    bkm_tune_trial_spec_t spec;
    bkm_tune_trial_result_t res = {0};
    bkm_tune_runner_t rn = {NULL, "worker", environ, NULL, 0};
    bkm_topo_t *topo = NULL;
    bkm_aff_topo_fix_t fix = {0};
    bkm_err_t err = {0};
    char self[PATH_MAX];
    int json = 0, dry_run = 0, rc, code;

    bkm_tune_trial_spec_defaults(&spec);
    rc = run_parse(argc, argv, &spec, &json, &dry_run);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if ((rc = bkm_topo_open_host(&topo, &err)) < 0 || (rc = bkm_tune_trial_check(&spec, topo, &err)) < 0) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
        goto out;
    }
    if (dry_run) {
        bkm_buf_t b;
        bkm_json_w_t w;
        bkm_buf_init(&b);
        bkm_json_w_init(&w, &b, 0);
        bkm_tune_trial_spec_to_json(&spec, &w);
        puts(bkm_buf_str(&b));
        bkm_buf_free(&b);
        code = 0;
        goto out;
    }
    if (realpath("/proc/self/exe", self) == NULL) {
        fprintf(stderr, "tune run: cannot resolve /proc/self/exe to start the worker\n");
        code = 3;
        goto out;
    }
    rn.worker_path = self;
    if ((rc = bkm_tune_env_check(environ, &err)) < 0 ||
        /* libomp must see hwloc's topology, which the worker plans with (issue 8). */
        (rc = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 || (rc = bkm_cli_topo_fix_spec(&fix, &spec, &err)) < 0) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
        goto out;
    }
    rn.stop = bkm_cli_stop_signals_catch();
    if (fix.disagreed || fix.unstable) {
        char note[2048];
        fprintf(stderr, "tune run: %s\n", bkm_cli_topo_fix_describe(&fix, note, sizeof note));
    }
    rc = bkm_tune_trial_run(&rn, &spec, &res, &err);
    if (rc < 0) {
        fprintf(stderr, "tune run: %s\n", err.msg);
        code = bkm_status_exit_code(rc);
        goto out;
    }
    if (res.status == BKM_TRIAL_INTERRUPTED) {
        fprintf(stderr, "tune run: %s\n", res.message);
        code = 128 + (int)*rn.stop;
        goto out;
    }
    if (json)
        run_print_json(&res);
    else
        run_print_text(&res, &spec);
    if (res.status != BKM_TRIAL_OK)
        fprintf(stderr, "tune run: trial %s: %s\n", bkm_tune_trial_status_name(res.status), res.message);
    code = res.status == BKM_TRIAL_OK ? 0 : res.status == BKM_TRIAL_BINDING_MISMATCH ? 1 : 3;
out:
    bkm_cli_topo_fix_close(&fix);
    bkm_tune_trial_result_free(&res);
    bkm_topo_close(topo);
    return code;
}
