/* SPDX-License-Identifier: MIT */
/* `tune [sweep]`: the main job. Parses the options into the space and sweep configurations,
 * opens the node profile and the database, and calls bkm_tune_sweep_run; on a host that is
 * not the requested node it plans and explains the sweep instead, and records nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"
#include "bkm_revision.h"
#include "cli_common.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_sweep_summary[] = "the main job: sweep the settings of a workload on a node, store every trial, "
                                     "derive the best-known setting";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune [sweep] --workload WL [--node NODE] [options]\n\n"
            "Measures settings of WL on this node, one fresh worker process per trial: thread counts,\n"
            "KMP_AFFINITY (compact/scatter/balanced x granularity x permute, none), the OMP_PLACES /\n"
            "OMP_PROC_BIND alternative, KMP_BLOCKTIME, KMP_HW_SUBSET and kernel tunables. Settings whose\n"
            "thread placement is identical on this topology are measured once; settings the planner\n"
            "rejects are dropped (both are listed with --dry-run). Every finished trial is stored at once\n"
            "in the results database; running the same command again resumes the sweep. The top\n"
            "candidates are then re-measured interleaved with the default setting, and a best-known\n"
            "setting is claimed only when it beats the default beyond the noise.\n"
            "On a host that is not NODE, the sweep is planned and explained, never run or recorded.\n\n"
            "options:\n"
            "  --workload WL        gemm, conv2d, alexnet, ... (tune run --help lists them)\n"
            "  --node NODE          node profile: auto (this host, default), haswell, knl, or a profile file\n"
            "  --threads LIST       thread counts, e.g. 1,2 (default: the profile's)\n"
            "  --affinity SETTING   repeatable: a KMP_AFFINITY value ('granularity=fine,compact,1,0'), 'none',\n"
            "                       'default' (nothing set) or 'OMP_PLACES=cores OMP_PROC_BIND=close'\n"
            "  --blocktime LIST     KMP_BLOCKTIME values in ms or 'infinite', e.g. 0,1,200,infinite\n"
            "  --hw-subset S        repeatable: KMP_HW_SUBSET value, e.g. 68c,2t; 'none' = unset\n"
            "  --param K=V1,V2      repeatable: values of a workload parameter or kernel tunable\n"
            "  --tunables           also sweep every kernel tunable at {def/2, def, 2 def}\n"
            "  --backend B          native or onednn (default: the workload's)\n"
            "  --strategy S         grid, random, halving, local (default %s: chosen by tune replay)\n"
            "  --budget N           at most N trials in the search (default: grid all; others a quarter\n"
            "                       of the configurations, at least 20)\n"
            "  --time DURATION      stop searching after DURATION (90s, 5m, 1h)\n"
            "  --seed N             random choices of the strategy (default 1)\n"
            "  --min-time S         timed loop of a trial lasts at least S seconds (default 0.5; at most\n"
            "                       1 day, and below --trial-timeout)\n"
            "  --min-samples N      at least N timed samples per trial (default 5; 1..100000)\n"
            "  --max-samples N      adaptive cap (default 50; 1..100000)\n"
            "  --trial-timeout S    a trial running longer is killed and stored as timeout (default 600;\n"
            "                       at most 7 days). A trial re-measured at k x the samples (halving\n"
            "                       rungs, local's final round) gets k x the timeout; samples and time\n"
            "                       stay within the limits above\n"
            "  --confirm-top K      candidates re-measured against the default (default 3)\n"
            "  --replicates R       confirmation: each candidate and the default run in R fresh worker\n"
            "                       processes (default %d, at least 6), in a drift-cancelling order;\n"
            "                       the claim uses one value per process\n"
            "  --min-ratio X        smallest speedup over the default worth claiming (default 1.02)\n"
            "  --aa                 A/A run: no search; the default is confirmed against --confirm-top\n"
            "                       copies of itself through the same code; exit 1 if a (false) claim\n"
            "                       would have been made; nothing is stored as best-known\n"
            "  --counters LIST      PAPI events per trial, comma-separated; 'none' disables (default:\n"
            "                       cycles, instructions, cache misses, FP ops and the perf:: software\n"
            "                       events; unavailable ones are stored with PAPI's reason)\n"
            "  --fresh              start a new sweep instead of resuming the same command's\n"
            "  --db PATH            results database (default: $BKM_DB, else %s)\n"
            "  --dry-run            list the planned configurations, merges and drops; run nothing\n"
            "  --verbose            list every configuration, merge and drop (default: counts by cause)\n"
            "  --json               print the summary as JSON\n"
            "  --inject KIND@N      test only: fault KIND (segv, abort, hang, fail, ...) in trial N\n"
            "  -h, --help           this help\n\n"
            "examples:\n"
            "  tune --workload gemm --param m=256 --param n=256 --param k=256 --min-time 0.1\n"
            "  tune --node knl --workload alexnet          (on a non-KNL host: plan + how to run it there)\n\n"
            "SIGINT (Ctrl-C), SIGTERM (Slurm's time limit, scancel) or SIGHUP stop the running trial at\n"
            "once (its worker's process group is killed; nothing is stored for it), mark the sweep\n"
            "interrupted and exit; the same command resumes it. A second signal exits at once.\n"
            "HWLOC_XMLFILE, HWLOC_SYNTHETIC and the like must not be set (they would plan for\n"
            "another machine); no HWLOC_*, OMP_*, KMP_* or GOMP_* variable reaches a worker\n"
            "(see tune worker --help).\n\n"
            "exit codes: 0 done, 1 --aa only: a claim would have been made, 2 bad usage or input,\n"
            "            3 environment (database, worker), 4 some trials failed (stored; the rest\n"
            "            completed), 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (completed trials kept)\n",
            BKM_TUNE_STRATEGY_DEFAULT, BKM_TUNE_REPLICATES_DEFAULT, BKM_DB_DEFAULT_PATH);
}

typedef struct opts {
    bkm_tune_space_opts_t sp;
    bkm_tune_sweep_cfg_t sw;
    const char *node, *db;
    int json, dry_run, verbose;
} opts_t;

static int parse_args(int argc, char **argv, opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        double d;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--dry-run") == 0) {
            o->dry_run = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
        } else if (strcmp(a, "--fresh") == 0) {
            o->sw.fresh = 1;
        } else if (strcmp(a, "--tunables") == 0) {
            o->sp.sweep_tunables = 1;
        } else if (strcmp(a, "--aa") == 0) {
            o->sw.aa = 1;
        } else if (v == NULL) {
            fprintf(stderr, "tune: unknown option or missing value: '%s' (see tune sweep --help)\n", a);
            return -1;
        } else if (i++, strcmp(a, "--workload") == 0) {
            o->sp.workload = o->sw.workload = v;
        } else if (strcmp(a, "--node") == 0) {
            o->node = v;
        } else if (strcmp(a, "--db") == 0) {
            o->db = v;
        } else if (strcmp(a, "--backend") == 0) {
            o->sp.backend = v;
        } else if (strcmp(a, "--strategy") == 0) {
            o->sw.strategy = v;
        } else if (strcmp(a, "--threads") == 0) {
            if (bkm_cli_parse_int_list("--threads", v, o->sp.threads, BKM_TUNE_SPACE_MAX_THREADS, &o->sp.n_threads, 0) < 0)
                return -1;
        } else if (strcmp(a, "--blocktime") == 0) {
            if (bkm_cli_parse_int_list("--blocktime", v, o->sp.blocktime_ms, BKM_TUNE_SPACE_MAX_BLOCKTIME, &o->sp.n_blocktime,
                           1) < 0)
                return -1;
        } else if (strcmp(a, "--affinity") == 0 || strcmp(a, "--hw-subset") == 0 || strcmp(a, "--param") == 0) {
            int aff = a[2] == 'a', hw = a[2] == 'h';
            int *cnt = aff ? &o->sp.n_affinity : hw ? &o->sp.n_hw_subset : &o->sp.n_params;
            int cap = aff ? BKM_TUNE_SPACE_MAX_AFFINITY : hw ? BKM_TUNE_SPACE_MAX_HW_SUBSET : BKM_TUNE_SPACE_MAX_PARAMS;
            if (*cnt >= cap) {
                fprintf(stderr, "tune: %s '%s': at most %d are allowed\n", a, v, cap);
                return -1;
            }
            (aff ? o->sp.affinity : hw ? o->sp.hw_subset : o->sp.params)[(*cnt)++] = v;
        } else if (strcmp(a, "--budget") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--min-samples") == 0 ||
                   strcmp(a, "--max-samples") == 0 || strcmp(a, "--confirm-top") == 0) {
            long long lo = 1, hi = 100000000;
            if (strcmp(a, "--confirm-top") == 0)
                lo = 0, hi = 7;
            else if (strcmp(a, "--min-samples") == 0 || strcmp(a, "--max-samples") == 0)
                hi = BKM_TUNE_SAMPLES_MAX;
            if (bkm_parse_int(v, lo, hi, &n) < 0) {
                fprintf(stderr, "tune: %s '%s' is not a whole number in %lld..%lld\n", a, v, lo, hi);
                return -1;
            }
            if (a[2] == 'b')
                o->sw.budget = (size_t)n;
            else if (a[2] == 's')
                o->sw.seed = (uint64_t)n;
            else if (a[3] == 'i')
                o->sw.base.min_samples = (int)n;
            else if (a[3] == 'a')
                o->sw.base.max_samples = (int)n;
            else
                o->sw.confirm_top = (int)n;
        } else if (strcmp(a, "--min-time") == 0 || strcmp(a, "--trial-timeout") == 0 || strcmp(a, "--time") == 0) {
            double hi = strcmp(a, "--min-time") == 0 ? BKM_TUNE_TIME_MAX_S
                        : strcmp(a, "--trial-timeout") == 0 ? BKM_TUNE_TIMEOUT_MAX_S : HUGE_VAL;
            if (bkm_cli_parse_duration(v, &d) < 0 && !(strcmp(a, "--min-time") == 0 && bkm_parse_double(v, &d) == 0 && d == 0)) {
                fprintf(stderr, "tune: %s '%s' is not a valid duration (e.g. 0.5, 90s, 5m)\n", a, v);
                return -1;
            }
            if (d > hi) {
                fprintf(stderr, "tune: %s '%s' is %g s, more than the limit of %g s\n", a, v, d, hi);
                return -1;
            }
            if (a[2] == 'm')
                o->sw.base.min_time_s = d;
            else if (a[3] == 'r')
                o->sw.base.timeout_s = d;
            else
                o->sw.time_budget_s = d;
        } else if (strcmp(a, "--replicates") == 0) {
            if (bkm_parse_int(v, 6, 1000, &n) < 0) {
                fprintf(stderr, "tune: --replicates '%s' is not a number of processes in 6..1000\n", v);
                return -1;
            }
            o->sw.replicates = (int)n;
        } else if (strcmp(a, "--min-ratio") == 0) {
            if (bkm_parse_double(v, &d) < 0 || !(d >= 1.0 && d <= 100.0)) {
                fprintf(stderr, "tune: --min-ratio '%s' is not a ratio in 1..100\n", v);
                return -1;
            }
            o->sw.min_ratio = d;
        } else if (strcmp(a, "--counters") == 0) {
            char names[64][64];
            int nn = 0;
            bkm_err_t e = {0};
            if (strlen(v) >= sizeof o->sw.base.counters) {
                fprintf(stderr, "tune: --counters '%s' is too long\n", v);
                return -1;
            }
            if (strcmp(v, "none") != 0 && bkm_tune_counters_parse(v, names, 64, &nn, &e) < 0) {
                fprintf(stderr, "tune: --counters '%s': %s\n", v, e.msg);
                return -1;
            }
            snprintf(o->sw.base.counters, sizeof o->sw.base.counters, "%s", v);
        } else if (strcmp(a, "--inject") == 0) {
            const char *at = strchr(v, '@');
            if (at == NULL || at == v || (size_t)(at - v) >= sizeof o->sw.inject ||
                bkm_parse_int(at + 1, 1, 1000000, &n) < 0) {
                fprintf(stderr, "tune: --inject '%s' is not KIND@N\n", v);
                return -1;
            }
            snprintf(o->sw.inject, sizeof o->sw.inject, "%.*s", (int)(at - v), v);
            o->sw.inject_at = (int)n;
            {
                /* the runner knows the fault kinds: ask it now, before anything is written */
                bkm_tune_trial_spec_t t;
                bkm_err_t e = {0};
                bkm_tune_trial_spec_defaults(&t);
                snprintf(t.workload, sizeof t.workload, "check");
                snprintf(t.inject, sizeof t.inject, "%s", o->sw.inject);
                if (bkm_tune_trial_spec_validate(&t, &e) < 0) {
                    fprintf(stderr, "tune: --inject '%s': %s\n", v, e.msg);
                    return -1;
                }
            }
        } else {
            fprintf(stderr, "tune: unknown option '%s' (see tune sweep --help)\n", a);
            return -1;
        }
    }
    if (o->sp.workload == NULL) {
        fprintf(stderr, "tune: --workload is required (e.g. --workload gemm; see tune sweep --help)\n");
        return -1;
    }
    if (o->sw.strategy) {
        const char *const *nm = bkm_tune_strategy_names();
        while (*nm && strcmp(*nm, o->sw.strategy) != 0)
            nm++;
        if (*nm == NULL) {
            fprintf(stderr, "tune: --strategy '%s' is unknown (grid, random, halving, local)\n", o->sw.strategy);
            return -1;
        }
    }
    if (o->sw.base.max_samples < o->sw.base.min_samples)
        o->sw.base.max_samples = o->sw.base.min_samples;
    if (o->sw.base.min_time_s >= o->sw.base.timeout_s) {
        fprintf(stderr, "tune: --min-time %g s is not shorter than --trial-timeout %g s: every trial would time out\n",
                o->sw.base.min_time_s, o->sw.base.timeout_s);
        return -1;
    }
    {
        /* the trial protocol as the runner will check it, now, before anything is written */
        bkm_tune_trial_spec_t t = o->sw.base;
        bkm_err_t e = {0};
        snprintf(t.workload, sizeof t.workload, "check");
        if (bkm_tune_trial_spec_validate(&t, &e) < 0) {
            fprintf(stderr, "tune: the trial options: %s\n", e.msg);
            return -1;
        }
    }
    return 0;
}


typedef struct bar {
    int tty;       /* stderr is a terminal: one self-overwriting line */
    int open;      /* a bar line is on screen without its newline */
} bar_t;

static void log_note(void *ud, int level, const char *msg)
{
    bar_t *bar = ud;
    if (bar && bar->open) {
        fputc('\n', stderr);
        bar->open = 0;
    }
    fprintf(stderr, "tune: %s%s\n", level == BKM_LOG_WARN ? "warning: " : "", msg);
}

static void fmt_eta(double s, char *b, size_t n)
{
    if (!isfinite(s))
        snprintf(b, n, "?");
    else if (s >= 60)
        snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(b, n, "%ds", (int)(s + 0.5));
}

static void on_progress(void *ud, const bkm_tune_progress_t *p)
{
    bar_t *bar_state = ud;
    int tty = bar_state->tty;
    char eta[32];
    fmt_eta(p->eta_s, eta, sizeof eta);
    if (tty) {
        int w = 24, fill = p->total ? (int)((double)w * (double)p->done / (double)p->total) : 0;
        char bar[32];
        if (fill > w)
            fill = w;
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(w - fill));
        bar[w] = '\0';
        fprintf(stderr, "\r\033[K[%s] %zu/%zu %s ETA %s best %.4g ms %.60s", bar, p->done, p->total, p->phase, eta,
                p->best_ms, p->best_label);
        bar_state->open = 1;
    } else {
        fprintf(stderr, "trial %zu/%zu %s %s: %s (best %.4g ms: %s; ETA %s)\n", p->done, p->total, p->phase,
                p->last_status, p->last_label, p->best_ms, p->best_label, eta);
    }
}

/* --dry-run, or a host that is not the node: the plan, its merges and drops, and how to run it. */
static void print_plan(const opts_t *o, const bkm_tune_space_t *sp, const bkm_node_profile_t *prof, int host_match,
                       int argc, char **argv)
{
    bkm_buf_t cmd, out;
    bkm_buf_init(&cmd);
    bkm_buf_init(&out);
    bkm_buf_puts(&cmd, "tune");
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--dry-run") != 0 && strcmp(argv[i], "--json") != 0)
            bkm_buf_printf(&cmd, i == 0 ? " %s" : strchr(argv[i], ' ') || strchr(argv[i], ',') ? " '%s'" : " %s",
                           argv[i]);
    bkm_tune_sweep_plan_render(sp, prof, &o->sw, o->sp.workload, host_match, bkm_buf_str(&cmd), &out, o->json,
                               o->verbose || o->dry_run);
    fputs(bkm_buf_str(&out), stdout);
    bkm_buf_free(&cmd);
    bkm_buf_free(&out);
}

int bkm_cli_sweep(int argc, char **argv)
{
    opts_t o;
    bkm_err_t err = {0};
    bkm_node_profile_t prof;
    bkm_topo_t *host = NULL, *node_topo = NULL;
    bkm_tune_space_t *sp = NULL;
    bkm_db_t *db = NULL;
    bkm_tune_runner_t runner;
    bkm_tune_sweep_result_t res = {0};
    bkm_aff_topo_fix_t fix = {0};
    bkm_log_t log = {log_note, NULL, BKM_LOG_INFO};
    bkm_buf_t cmd, out;
    char self[PATH_MAX];
    int rc, host_match;
    bar_t bar = {isatty(2), 0};

    ssize_t ln;
    const volatile sig_atomic_t *stop;

    memset(&o, 0, sizeof o);
    bkm_tune_sweep_cfg_defaults(&o.sw);
    o.node = "auto";
    bkm_buf_init(&cmd);
    bkm_buf_init(&out);
    if ((rc = parse_args(argc, argv, &o)) != 0)
        return rc > 0 ? 0 : 2;
    o.db = bkm_cli_db_path(o.db);
    if (!bkm_cli_db_check("", o.db))
        return 2;
    /* the host topology first, before anything could start an OpenMP runtime */
    if ((rc = bkm_topo_open_host(&host, &err)) < 0)
        goto fail;
    if (bkm_profile_builtin(o.node, &prof, &err) < 0) {
        bkm_err_t e2 = {0};
        if (access(o.node, R_OK) != 0 || bkm_profile_load_file(o.node, &prof, &e2) < 0) {
            if (access(o.node, R_OK) == 0)
                err = e2;
            rc = BKM_EINVAL;
            goto fail;
        }
    }
    host_match = strcmp(prof.name, "auto") == 0 || bkm_profile_matches_host(&prof, host);
    if (strcmp(prof.name, "auto") == 0) {
        node_topo = host;
        host = NULL;
    } else if ((rc = bkm_topo_open_profile(&node_topo, &prof, &err)) < 0) {
        goto fail;
    }
    if ((rc = bkm_tune_space_create(&sp, node_topo, &prof, &o.sp, &err)) < 0 ||
        (rc = bkm_tune_space_specs_check(sp, o.sp.workload, &o.sw.base, &err)) < 0)
        goto fail;
    if (!host_match || o.dry_run) {
        print_plan(&o, sp, &prof, host_match, argc, argv);
        rc = 0;
        goto done;
    }
    if ((rc = bkm_tune_env_check(environ, &err)) < 0)
        goto fail;
    for (size_t i = 0; i < (o.verbose ? bkm_tune_space_n_notes(sp) : bkm_tune_space_n_causes(sp)); i++)
        bkm_log(&log, BKM_LOG_INFO, "%s", o.verbose ? bkm_tune_space_note(sp, i) : bkm_tune_space_cause(sp, i)->text);
    if ((rc = bkm_db_open(&db, o.db, BKM_DB_CREATE, &err)) < 0)
        goto fail;
    if (bkm_db_warning(db))
        bkm_log(&log, BKM_LOG_WARN, "%s", bkm_db_warning(db));
    if ((rc = bkm_tune_sweep_host_store(db, node_topo, &o.sw.host_id, &err)) < 0)
        goto fail;
    ln = readlink("/proc/self/exe", self, sizeof self - 1);
    if (ln <= 0) {
        rc = bkm_err_set(&err, BKM_EDEP, "cannot find the tune executable (/proc/self/exe): %s", strerror(errno));
        goto fail;
    }
    self[ln] = '\0';
    memset(&runner, 0, sizeof runner);
    runner.worker_path = self;
    runner.worker_cmd = "worker";
    runner.environ = environ;
    /* libomp must see hwloc's topology, which every worker plans with (issue 8): the correction
     * goes into the base spec, whose variables every trial carries and stores. */
    if ((rc = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 || (rc = bkm_cli_topo_fix_spec(&fix, &o.sw.base, &err)) < 0)
        goto fail;
    if (fix.disagreed || fix.applied) {
        char note[2048];
        bkm_log(&log, BKM_LOG_INFO, "%s", bkm_cli_topo_fix_describe(&fix, note, sizeof note));
    }
    bkm_buf_puts(&cmd, "tune");
    for (int i = 0; i < argc; i++)
        bkm_buf_printf(&cmd, " %s", argv[i]);
    o.sw.node = prof.name;
    o.sw.command = bkm_buf_str(&cmd);
    o.sw.git_revision = BKM_BUILD_REVISION;
    o.sw.runner = &runner;
    stop = bkm_cli_stop_signals_catch();
    runner.stop = stop;
    o.sw.stop = stop;
    o.sw.progress = on_progress;
    o.sw.progress_ud = &bar;
    log.ud = &bar;
    o.sw.log = &log;
    rc = bkm_tune_sweep_run(&o.sw, sp, db, &res, &err);
    if (bar.open)
        fputc('\n', stderr);
    if (rc < 0)
        goto fail;
    bkm_tune_sweep_summary_render(&res, o.db, &out, o.json);
    fputs(bkm_buf_str(&out), stdout);
    /* an A/A run whose default "beats" itself is a failed check */
    rc = res.interrupted ? 128 + (int)*stop : res.failed ? 4 : res.aa && res.significant ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "tune: %s\n", err.msg);
    rc = bkm_status_exit_code(rc);
done:
    bkm_cli_topo_fix_close(&fix);
    bkm_db_close(db);
    bkm_tune_space_free(sp);
    bkm_topo_close(node_topo);
    bkm_topo_close(host);
    bkm_buf_free(&cmd);
    bkm_buf_free(&out);
    bkm_tune_sweep_result_clear(&res);
    return rc;
}
