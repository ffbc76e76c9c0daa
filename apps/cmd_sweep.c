/* SPDX-License-Identifier: MIT */
/* `tune [sweep]`: the main job. Parses the options into the space and sweep configurations,
 * opens the node profile and the database, and calls bkm_tune_sweep_run; on a host that is
 * not the requested node it plans and explains the sweep instead, and records nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"
#include "bkm_revision.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_program.h"
#include "cli_slurm.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_sweep_summary[] = "the main job: sweep the settings of a workload on a node, store every trial, "
                                     "derive the best-known setting";

typedef struct opts {
    bkm_tune_space_opts_t sp;
    bkm_tune_sweep_cfg_t sw;
    const char *node, *db, *workload;
    const char *metric, *metric_unit, *runtime;   /* -- CMD: the program (cli_program.h) */
    int metric_higher;
    double probe_timeout;
    bkm_cli_program_t *prog;                      /* NULL: one of bkm's workloads */
    long long budget, seed;
    int json, dry_run, verbose;
    /* Slurm: the sweep as a batch job or a job array + merge job (bkm::slurm) */
    const char *sbatch, *account, *qos, *partition, *slurm_time, *job_name, *shard_group;
    int slurm_array, submit;
} opts_t;

/* --shard I/K: this process runs shard I (0-based) of K */
static int sweep_shard(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    const char *slash = strchr(v, '/');
    char ib[32];
    long long i, k;
    (void)opt;
    if (slash == NULL || (size_t)(slash - v) >= sizeof ib)
        return bkm_err_set(err, BKM_EINVAL, "is not I/K (shard I of K, 0 <= I < K)");
    snprintf(ib, sizeof ib, "%.*s", (int)(slash - v), v);
    if (bkm_parse_int(ib, 0, 9999, &i) < 0 || bkm_parse_int(slash + 1, 1, 10000, &k) < 0 || i >= k)
        return bkm_err_set(err, BKM_EINVAL, "is not I/K with 0 <= I < K <= 10000");
    o->sw.shard_index = (int)i;
    o->sw.shard_count = (int)k;
    return BKM_OK;
}

static int sweep_threads(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    (void)opt;
    return bkm_cli_parse_int_list(v, o->sp.threads, BKM_TUNE_SPACE_MAX_THREADS, &o->sp.n_threads, 0, err);
}

static int sweep_ranks(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    (void)opt;
    return bkm_cli_parse_int_list(v, o->sp.ranks, BKM_TUNE_SPACE_MAX_THREADS, &o->sp.n_ranks, 0, err);
}

static int sweep_blocktime(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    (void)opt;
    return bkm_cli_parse_int_list(v, o->sp.blocktime_ms, BKM_TUNE_SPACE_MAX_BLOCKTIME, &o->sp.n_blocktime, 1, err);
}

/* --affinity, --hw-subset, --param: repeatable, each into its list of the space options. */
static int sweep_list(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    int aff = opt->name[0] == 'a', hw = opt->name[0] == 'h';
    int *cnt = aff ? &o->sp.n_affinity : hw ? &o->sp.n_hw_subset : &o->sp.n_params;
    int cap = aff ? BKM_TUNE_SPACE_MAX_AFFINITY : hw ? BKM_TUNE_SPACE_MAX_HW_SUBSET : BKM_TUNE_SPACE_MAX_PARAMS;
    if (*cnt >= cap)
        return bkm_err_set(err, BKM_EINVAL, "at most %d are allowed", cap);
    (aff ? o->sp.affinity : hw ? o->sp.hw_subset : o->sp.params)[(*cnt)++] = v;
    return BKM_OK;
}

#ifdef BKM_TEST_HOOKS
static int sweep_inject(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    opts_t *o = cfg;
    const char *at = strchr(v, '@');
    long long n;
    bkm_tune_trial_spec_t t;
    (void)opt;
    if (at == NULL || at == v || (size_t)(at - v) >= sizeof o->sw.inject || bkm_parse_int(at + 1, 1, 1000000, &n) < 0)
        return bkm_err_set(err, BKM_EINVAL, "is not KIND@N");
    snprintf(o->sw.inject, sizeof o->sw.inject, "%.*s", (int)(at - v), v);
    o->sw.inject_at = (int)n;
    /* the runner knows the fault kinds: ask it now, before anything is written */
    bkm_tune_trial_spec_defaults(&t);
    snprintf(t.workload, sizeof t.workload, "check");
    snprintf(t.inject, sizeof t.inject, "%s", o->sw.inject);
    return bkm_tune_trial_spec_validate(&t, err);
}
#endif

static const bkm_cli_opt_t sweep_table[] = {
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(opts_t, workload),
     .help = "gemm, conv2d, alexnet, ... (tune run --help lists them), or the MPI\n"
             "training run fmnist-sgd (with --ranks); with -- CMD the name your\n"
             "program is stored under (default: from the program)", .example = "gemm"},
    BKM_CLI_PROGRAM_OPTS(opts_t),
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(opts_t, node),
     .help = "node profile: auto (this host, default), haswell, knl, perlmutter-cpu,\n"
             "or a profile file", .example = "knl"},
    {.name = "threads", .kind = BKM_CLI_CALL, .metavar = "LIST", .call = sweep_threads,
     .help = "thread counts, e.g. 1,2 (default: the profile's; each 1..2048)", .example = "1"},
    {.name = "ranks", .kind = BKM_CLI_CALL, .metavar = "LIST", .call = sweep_ranks,
     .help = "MPI ranks per trial, e.g. 1,2 (workload fmnist-sgd only; default 1):\n"
             "started with mpiexec -n P -bind-to core:T (srun inside a Slurm allocation)",
     .example = "1"},
    {.name = "affinity", .kind = BKM_CLI_CALL, .metavar = "SETTING", .call = sweep_list, .flags = BKM_CLI_REPEAT,
     .help = "a KMP_AFFINITY value ('granularity=fine,compact,1,0'), 'none',\n"
             "'default' (nothing set) or 'OMP_PLACES=cores OMP_PROC_BIND=close'",
     .example = "compact"},
    {.name = "blocktime", .kind = BKM_CLI_CALL, .metavar = "LIST", .call = sweep_blocktime,
     .help = "KMP_BLOCKTIME values in ms or 'infinite', e.g. 0,1,200,infinite", .example = "0"},
    {.name = "hw-subset", .kind = BKM_CLI_CALL, .metavar = "S", .call = sweep_list, .flags = BKM_CLI_REPEAT,
     .help = "KMP_HW_SUBSET value, e.g. 68c,2t; 'none' = unset", .example = "none"},
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "K=V1,V2", .call = sweep_list, .flags = BKM_CLI_REPEAT,
     .help = "values of a workload parameter or kernel tunable", .example = "m=64"},
    {.name = "tunables", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, sp.sweep_tunables),
     .help = "also sweep every kernel tunable at {def/2, def, 2 def}"},
    {.name = "backend", .kind = BKM_CLI_STR, .metavar = "B", .off = offsetof(opts_t, sp.backend),
     .help = "native or onednn (default: the workload's)", .example = "native"},
    {.name = "strategy", .kind = BKM_CLI_CALL, .metavar = "S", .call = bkm_cli_opt_strategy,
     .off = offsetof(opts_t, sw.strategy),
     .help = "grid, random, halving, local (default " BKM_TUNE_STRATEGY_DEFAULT ": chosen by tune replay)",
     .example = "grid"},
    {.name = "budget", .kind = BKM_CLI_I64, .metavar = "N", .off = offsetof(opts_t, budget), .lo = 1, .hi = 1e8,
     .help = "at most N trials in the search (default: grid all; others a quarter\n"
             "of the configurations, at least 20)"},
    {.name = "time", .kind = BKM_CLI_DURATION, .metavar = "DURATION", .off = offsetof(opts_t, sw.time_budget_s),
     .lo = 0.001, .hi = 1e9, .help = "stop searching after DURATION (90s, 5m, 1h), and add no\n"
             "confirmation block after it (the first block always runs)", .example = "5m"},
    {.name = "seed", .kind = BKM_CLI_I64, .metavar = "N", .off = offsetof(opts_t, seed), .lo = 1, .hi = 1e8,
     .help = "seed of the strategy's random choices (default 1; --data-seed is the\n"
             "workload's)"},
    BKM_CLI_TRIAL_OPTS(opts_t, sw.base, NULL),
    {.name = "confirm-top", .kind = BKM_CLI_INT, .metavar = "K", .off = offsetof(opts_t, sw.confirm_top), .lo = 0,
     .hi = BKM_TUNE_CONFIRM_TOP_MAX, .help = "candidates re-measured against the default (default 3)"},
    {.name = "replicates", .kind = BKM_CLI_INT, .metavar = "R", .off = offsetof(opts_t, sw.replicates), .lo = 6,
     .hi = BKM_TUNE_REPLICATES_MAX,
     .help = "confirmation: each candidate and the default run in blocks of R fresh\n"
             "worker processes, in a drift-cancelling order; the claim uses one value\n"
             "per process (default 6)"},
    {.name = "replicates-max", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(opts_t, sw.replicates_max),
     .lo = 6, .hi = BKM_TUNE_REPLICATES_MAX,
     .help = "confirmation: add blocks of R processes per side while a candidate\n"
             "is undecided, up to N per side and while --time lasts (default 24, or R\n"
             "when larger; N = R: a single look); each candidate ends claimed, not\n"
             "better by more than X%, or undecided at the budget", .example = "36"},
    {.name = "min-ratio", .kind = BKM_CLI_NUM, .metavar = "X", .off = offsetof(opts_t, sw.min_ratio), .lo = 1,
     .hi = 100, .help = "smallest speedup over the default worth claiming (default 1.02)"},
    {.name = "rerun-disturbed", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(opts_t, sw.rerun_disturbed),
     .lo = 0, .hi = BKM_TUNE_RERUN_DISTURBED_MAX,
     .help = "confirmation: run a disturbed process again, up to N times, instead\n"
             "of counting it (the last attempt counts; replaced ones stay stored);\n"
             "default 0: disturbed processes count and are reported", .example = "2"},
    {.name = "aa", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, sw.aa),
     .help = "A/A run: no search; the default is confirmed against --confirm-top\n"
             "copies of itself through the same code; exit 1 if a (false) claim\n"
             "would have been made; nothing is stored as best-known"},
    {.name = "label", .kind = BKM_CLI_STR, .metavar = "TEXT", .off = offsetof(opts_t, sw.label),
     .help = "a label stored with the sweep and shown by `tune report` (any text;\n"
             "re-running with another label relabels the resumed sweep)",
     .example = "first try"},
    {.name = "fresh", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, sw.fresh),
     .help = "start a new sweep instead of resuming the same command's"},
    BKM_CLI_DB_OPT(opts_t, db),
    {.name = "verbose", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, verbose),
     .help = "list every configuration, merge and drop (default: counts by cause)"},
    {.name = "dry-run", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, dry_run),
     .help = "list the planned configurations, merges and drops; run nothing"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, json), .help = "print the summary as JSON"},
    {.name = "sbatch", .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(opts_t, sbatch),
     .help = "run nothing here: write the batch job that runs this sweep on NODE\n"
             "(node-local SQLite, then merged into --db) to FILE; with\n"
             "--slurm-array the array script (the merge job: FILE-merge);\n"
             "with --dry-run the script(s) go to stdout",
     .example = "sweep.sbatch"},
    {.name = "slurm-array", .kind = BKM_CLI_INT, .metavar = "K", .off = offsetof(opts_t, slurm_array), .lo = 1,
     .hi = 10000,
     .help = "split the sweep into K shards run as a job array (grid strategy),\n"
             "each into its own node-local SQLite file, plus a merge job\n"
             "(--dependency=afterany) that merges them into --db and derives the\n"
             "best-known setting; after a failed shard it merges the others and\n"
             "exits 4 naming the missing shard(s)"},
    {.name = "submit", .kind = BKM_CLI_FLAG, .off = offsetof(opts_t, submit),
     .help = "with --sbatch/--slurm-array: submit with sbatch (SBATCH_*/SLURM_*\ncleared)"},
    {.name = "account", .kind = BKM_CLI_STR, .metavar = "A", .off = offsetof(opts_t, account),
     .help = "Slurm account of those jobs (#SBATCH -A; default: the profile's)", .example = "m1234"},
    {.name = "qos", .kind = BKM_CLI_STR, .metavar = "Q", .off = offsetof(opts_t, qos),
     .help = "Slurm QOS of those jobs (default: the profile's; regular for\nCori/Perlmutter)", .example = "debug"},
    {.name = "partition", .kind = BKM_CLI_STR, .metavar = "P", .off = offsetof(opts_t, partition),
     .help = "Slurm partition of those jobs (#SBATCH -p; default: the profile's,\nelse the cluster's)", .example = "debug"},
    {.name = "slurm-time", .kind = BKM_CLI_STR, .metavar = "T", .off = offsetof(opts_t, slurm_time),
     .help = "Slurm time limit of each job (default 02:00:00)", .example = "00:10:00"},
    {.name = "job-name", .kind = BKM_CLI_STR, .metavar = "J", .off = offsetof(opts_t, job_name),
     .help = "Slurm job name (default bkm-WL)", .example = "bkm"},
    {.name = "shard", .kind = BKM_CLI_CALL, .metavar = "I/K", .call = sweep_shard,
     .help = "run shard I of K of the sweep (grid strategy; search only: the\n"
             "merge job confirms); what --slurm-array's jobs run", .example = "0/2"},
    {.name = "shard-group", .kind = BKM_CLI_STR, .metavar = "ID", .off = offsetof(opts_t, shard_group),
     .help = "the shards of one sweep share ID (the array's job id), so that\n"
             "`tune merge` folds them into one sweep", .example = "1234"},
#ifdef BKM_TEST_HOOKS
    {.name = "inject", .kind = BKM_CLI_CALL, .metavar = "KIND@N", .call = sweep_inject,
     .help = "test build only: fault KIND (segv, abort, hang, fail, ...) in trial N", .example = "fail@1"},
#endif
};

static const bkm_cli_cmd_spec_t sweep_cmd = {
    .name = "sweep",
    .usage = "tune [sweep] --workload WL [--node NODE] [options]\n"
             "tune [sweep] [--workload NAME] [--node NODE] [options] [--metric REGEX] -- CMD ARGS...",
    .about = "Measures settings of WL on this node, one fresh worker process per trial: thread counts,\n"
             "KMP_AFFINITY (compact/scatter/balanced x granularity x permute, none), the OMP_PLACES /\n"
             "OMP_PROC_BIND alternative, KMP_BLOCKTIME, KMP_HW_SUBSET and kernel tunables. Settings whose\n"
             "thread placement is identical on this topology are measured once; settings the planner\n"
             "rejects are dropped (both are listed with --dry-run). Every finished trial is stored at once\n"
             "in the results database; running the same command again resumes the sweep. The top\n"
             "candidates are then re-measured interleaved with the default setting, in blocks of fresh\n"
             "processes while the evidence is undecided, and a best-known setting is claimed only when\n"
             "it beats the default beyond the noise; each candidate is claimed, found not better by\n"
             "more than X%, or left undecided at the budget (--replicates-max, --time).\n"
             "On a host that is not NODE, the sweep is planned and explained, never run or recorded.",
    BKM_CLI_TABLE(sweep_table),
    .more = "examples:\n"
            "  tune --workload gemm --param m=256 --param n=256 --param k=256 --min-time 0.1\n"
            "  tune --node knl --workload alexnet          (on a non-KNL host: plan + how to run it there)\n"
            "  tune --node auto --workload torch-cnn --threads 1,2 -- python3 train.py\n"
            "       (your own program: the settings its OpenMP runtime reads, each trial one run of it;\n"
            "        GNU libgomp, e.g. Debian's PyTorch: OMP_PLACES x OMP_PROC_BIND x OMP_WAIT_POLICY)\n"
            "  tune --workload fmnist-sgd --ranks 1,2 --threads 1,2 --param allreduce=mpi,ring\n"
            "       (MPI training: ranks x threads per rank; each trial a short training run\n"
            "        timed per step; value = median over ranks of each rank's median step time)\n\n"
            "SIGINT (Ctrl-C), SIGTERM (Slurm's time limit, scancel) or SIGHUP stop the running trial at\n"
            "once (its worker's process group is killed; nothing is stored for it), mark the sweep\n"
            "interrupted and exit; the same command resumes it. A second signal exits at once.\n"
            "HWLOC_XMLFILE, HWLOC_SYNTHETIC and the like must not be set (they would plan for\n"
            "another machine); no HWLOC_*, OMP_*, KMP_* or GOMP_* variable reaches a worker\n"
            "(see tune worker --help).\n\n"
            "exit codes: 0 done, 1 --aa only: a claim would have been made, 2 bad usage or input,\n"
            "            3 environment (database, worker), 4 some trials failed (stored; the rest\n"
            "            completed), 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (completed trials kept)\n",
};

/* Parse argv into @p o (holding the defaults) and @p given (the options given, freed by the
 * caller in every case): 0 to go on, 1 after --help, BKM_EINVAL (err set). */
static int parse_args(int argc, char **argv, opts_t *o, bkm_cli_given_t *given, bkm_err_t *err)
{
    int rc;
    o->seed = (long long)o->sw.seed;
    if ((rc = bkm_cli_opt_parse_given(&sweep_cmd, argc, argv, o, given, err)) != 0)
        return rc;
    if (o->workload == NULL && o->prog == NULL)
        return bkm_err_set(err, BKM_EINVAL, "tune sweep: --workload WL is required (or -- CMD ARGS: your own program)");
    o->sp.workload = o->sw.workload = o->workload;
    o->sw.budget = (size_t)o->budget;
    o->sw.seed = (uint64_t)o->seed;
    if (o->sw.shard_count > 0) {
        /* a shard runs its part of the grid; another strategy cannot be split */
        if (bkm_cli_given_count(&sweep_cmd, given, "strategy") && o->sw.strategy && strcmp(o->sw.strategy, "grid") != 0)
            return bkm_err_set(err, BKM_EINVAL, "tune sweep: --shard runs a part of the grid: --strategy %s cannot "
                               "be split (use grid)", o->sw.strategy);
        if (o->sw.aa)
            return bkm_err_set(err, BKM_EINVAL, "tune sweep: --shard and --aa exclude each other");
        o->sw.strategy = "grid";
    }
    if (o->sw.replicates_max > 0 && o->sw.replicates_max < o->sw.replicates)
        return bkm_err_set(err, BKM_EINVAL, "tune sweep: --replicates-max '%d' is below --replicates %d (the first "
                           "block)", o->sw.replicates_max, o->sw.replicates);
    if (o->sw.base.max_samples < o->sw.base.min_samples)
        o->sw.base.max_samples = o->sw.base.min_samples;
    if (o->sw.base.min_time_s >= o->sw.base.timeout_s)
        return bkm_err_set(err, BKM_EINVAL, "tune sweep: --min-time %g s is not shorter than --trial-timeout %g s: "
                           "every trial would time out", o->sw.base.min_time_s, o->sw.base.timeout_s);
    {
        /* the trial protocol as the runner will check it, now, before anything is written */
        bkm_tune_trial_spec_t t = o->sw.base;
        snprintf(t.workload, sizeof t.workload, "check");
        if (bkm_tune_trial_spec_validate(&t, err) < 0) {
            bkm_err_prefix(err, "tune sweep: the trial options");
            return BKM_EINVAL;
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

/* --dry-run, or a host that is not the node: the plan, its merges and drops, and how to run it
 * (this command line without the --dry-run and --json that were given as options). */
static void print_plan(const opts_t *o, const bkm_cli_given_t *given, const bkm_tune_space_t *sp,
                       const bkm_node_profile_t *prof, int host_match, int argc, char **argv)
{
    bkm_buf_t cmd, out;
    bkm_buf_init(&cmd);
    bkm_buf_init(&out);
    bkm_buf_puts(&cmd, "tune");
    for (int i = 0; i < argc; i++) {
        int drop = 0;
        for (size_t k = 0; k < given->n && !drop; k++)
            drop = given->list[k].argi == i && (strcmp(sweep_table[given->list[k].opt].name, "dry-run") == 0 ||
                                                strcmp(sweep_table[given->list[k].opt].name, "json") == 0);
        if (!drop) {
            bkm_buf_puts(&cmd, " ");
            bkm_slurm_sh_quote(&cmd, argv[i], 0);
        }
    }
    bkm_tune_sweep_plan_render(sp, prof, &o->sw, o->sp.workload, host_match, bkm_buf_str(&cmd), &out, o->json,
                               o->verbose || o->dry_run);
    fputs(bkm_buf_str(&out), stdout);
    bkm_buf_free(&cmd);
    bkm_buf_free(&out);
}

static void words_free(char **w, int n)
{
    for (int i = 0; i < n; i++)
        bkm_free(w[i]);
    bkm_free(w);
}

/* Append "--NAME" (@p dashes) or the value @p s to the words; -1 when out of memory. */
static int word_add(char **w, int *n, const char *dashes, const char *s)
{
    size_t len = strlen(dashes) + strlen(s) + 1;
    if ((w[*n] = bkm_malloc(len)) == NULL)
        return -1;
    snprintf(w[*n], len, "%s%s", dashes, s);
    (*n)++;
    return 0;
}

/* The sweep's own options for the job's `tune sweep` line, one word each into *words (owned;
 * words_free): the options given, as the parser saw them (so that a value is never taken for an
 * option nor an option for a value), without what only concerns writing or submitting the job
 * (and --db, --shard*: the job sets them). A --node that names a profile or XML file becomes its
 * absolute path: the job runs wherever sbatch starts it. 0, or the exit code after printing why. */
static int job_args(const bkm_cli_given_t *given, char ***words, int *n)
{
    static const char *const dropped[] = {"sbatch", "slurm-array", "account", "qos", "partition", "slurm-time",
                                          "job-name", "db", "shard", "shard-group", "submit", "dry-run", "json",
                                          NULL};
    char **w = bkm_calloc(given->n * 2 + 1, sizeof *w);
    int k = 0;
    *words = NULL;
    *n = 0;
    if (w == NULL)
        goto oom;
    for (size_t i = 0; i < given->n; i++) {
        const bkm_cli_opt_t *o = &sweep_table[given->list[i].opt];
        const char *value = given->list[i].value;
        char abs[PATH_MAX];
        int drop = 0;
        for (int d = 0; dropped[d]; d++)
            drop |= strcmp(o->name, dropped[d]) == 0;
        if (drop)
            continue;
        if (strcmp(o->name, "node") == 0) {
            bkm_node_profile_t builtin;
            if (bkm_profile_builtin(value, &builtin, NULL) != BKM_OK) {
                if (realpath(value, abs) == NULL) {
                    fprintf(stderr, "tune: --node '%s': %s\n", value, strerror(errno));
                    words_free(w, k);
                    return 2;
                }
                value = abs;
            }
        }
        if (word_add(w, &k, "--", o->name) < 0 || (value != NULL && word_add(w, &k, "", value) < 0))
            goto oom;
    }
    *words = w;
    *n = k;
    return 0;
oom:
    fprintf(stderr, "tune: out of memory\n");
    if (w)
        words_free(w, k);
    return 3;
}

/* The job(s) built: on stdout with --dry-run, else written (and submitted with --submit). */
static int slurm_jobs_out(const opts_t *o, const bkm_node_profile_t *prof, const bkm_slurm_sweep_jobs_t *j)
{
    bkm_slurm_submit_t how;
    bkm_err_t err = {0};
    long long ids[2] = {0, 0};
    char sbatch[4096];
    int ret, rc;
    if (o->dry_run) {   /* --dry-run writes nothing: the script(s) on stdout */
        printf("# %s\n%s", j->script, bkm_buf_str(&j->script_text));
        if (j->array)
            printf("# %s\n%s", j->merge, bkm_buf_str(&j->merge_text));
        return 0;
    }
    if ((ret = bkm_cli_output_write("sweep", "--sbatch", j->script, bkm_buf_str(&j->script_text), 0777)) != 0 ||
        (j->array && (ret = bkm_cli_output_write("sweep", "--sbatch", j->merge, bkm_buf_str(&j->merge_text), 0777)) != 0))
        return ret;
    if (j->array)
        printf("tune: wrote %s (job array: %d shards of the %s sweep on %s, shards into %s) and %s (merge job into "
               "%s)\n", j->script, o->slurm_array, o->workload, prof->name, bkm_buf_str(&j->shard_dir), j->merge,
               bkm_buf_str(&j->db));
    else
        printf("tune: wrote %s (the %s sweep on %s, results merged into %s)\n", j->script, o->workload, prof->name,
               bkm_buf_str(&j->db));
    if (!o->submit) {   /* a command to copy: each path one shell word, never taken for an option */
        printf("tune: submit with: %s\n", bkm_buf_str(&j->how));
        return 0;
    }
    if ((ret = bkm_cli_slurm_submitter("sweep", &how, sbatch, sizeof sbatch)) != 0)
        return ret;
    fflush(stdout);
    rc = bkm_slurm_sweep_jobs_submit(j, &how, ids, &err);
    bkm_free((void *)how.envp);
    for (int i = 0; i < 2; i++)
        if (ids[i] > 0)
            printf("Submitted batch job %lld (%s)\n", ids[i], i ? j->merge : j->script);
    if (rc < 0) {
        fprintf(stderr, "tune sweep: %s\n", err.msg);
        return 3;
    }
    return 0;
}

/* --sbatch FILE / --slurm-array K: write (and submit) the job(s) that run this sweep on NODE. */
static int slurm_jobs(const opts_t *o, const bkm_cli_given_t *given, const bkm_node_profile_t *prof, int argc,
                      char **argv)
{
    bkm_slurm_job_t job;
    bkm_slurm_sweep_jobs_cfg_t cfg;
    bkm_slurm_sweep_jobs_t j;
    bkm_err_t err = {0};
    bkm_buf_t cmd;
    char **words = NULL;
    char self[PATH_MAX], host[256], when[32], tune_note[BKM_CLI_TUNE_NOTE_MAX], cwd[PATH_MAX];
    int ret, rc, n_words = 0;
    memset(&j, 0, sizeof j);
    bkm_buf_init(&cmd);
    bkm_slurm_job_defaults(&job);
    if ((ret = bkm_cli_slurm_job_fill(&job, BKM_BUILD_REVISION, argc, argv, self, sizeof self, host, when, tune_note,
                                      &cmd)) != 0)
        goto out;
    job.node = prof->name;
    job.constraint = prof->slurm_constraint;
    job.workload = o->workload;
    /* -A, -q, -p: the options given, else the profile's batch rules (a sweep job runs no srun) */
    bkm_cli_slurm_rules_apply(prof, o->account, o->qos, o->partition, NULL, &job);
    job.time = o->slurm_time;   /* NULL: the sweep's default */
    job.job_name = o->job_name;
    if (o->db[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) {
        fprintf(stderr, "tune: cannot read the current folder: %s\n", strerror(errno));
        ret = 3;
        goto out;
    }
    if ((ret = job_args(given, &words, &n_words)) != 0)
        goto out;
    memset(&cfg, 0, sizeof cfg);
    cfg.job = &job;
    cfg.shards = o->slurm_array;
    cfg.sweep_argv = (const char *const *)words;
    cfg.sweep_argc = n_words;
    cfg.strategy = bkm_cli_given_count(&sweep_cmd, given, "strategy") ? o->sw.strategy : NULL;
    cfg.shard_count = o->sw.shard_count;
    cfg.db = o->db;
    cfg.cwd = cwd;
    cfg.script = o->sbatch;
    if ((rc = bkm_slurm_sweep_jobs_build(&cfg, &j, &err)) < 0) {
        fprintf(stderr, "tune: %s\n", err.msg);
        ret = bkm_status_exit_code(rc);
        goto out;
    }
    ret = slurm_jobs_out(o, prof, &j);
out:
    bkm_slurm_sweep_jobs_free(&j);
    bkm_buf_free(&cmd);
    words_free(words, n_words);
    return ret;
}

/* Run the sweep here, on this host (it is the node): the database, the runner, the libomp
 * topology correction, then bkm_tune_sweep_run and its summary; the exit code. */
static int sweep_here(opts_t *o, bkm_tune_space_t *sp, const bkm_topo_t *node_topo, const bkm_node_profile_t *prof,
                      int argc, char **argv)
{
    bkm_err_t err = {0};
    bkm_db_t *db = NULL;
    bkm_tune_runner_t runner;
    bkm_tune_sweep_result_t res = {0};
    bkm_aff_topo_fix_t fix = {0};
    bar_t bar = {isatty(2), 0};
    bkm_log_t log = {log_note, &bar, BKM_LOG_INFO};
    bkm_buf_t cmd, out;
    char self[PATH_MAX], launcher[4096], note[2048];
    int rc;
    bkm_buf_init(&cmd);
    bkm_buf_init(&out);
    if ((rc = bkm_tune_env_check(environ, &err)) < 0)
        goto fail;
    for (size_t i = 0; i < (o->verbose ? bkm_tune_space_n_notes(sp) : bkm_tune_space_n_causes(sp)); i++)
        bkm_log(&log, BKM_LOG_INFO, "%s", o->verbose ? bkm_tune_space_note(sp, i) : bkm_tune_space_cause(sp, i)->text);
    if ((rc = bkm_db_open(&db, o->db, BKM_DB_CREATE, &err)) < 0)
        goto fail;
    if (bkm_db_warning(db))
        bkm_log(&log, BKM_LOG_WARN, "%s", bkm_db_warning(db));
    if ((rc = bkm_tune_sweep_host_store(db, node_topo, &o->sw.host_id, &err)) < 0 ||
        (rc = bkm_cli_runner_self(&runner, self, sizeof self, &err)) < 0)
        goto fail;
    if (bkm_tune_workload_is_mpi(o->sp.workload) &&
        (rc = bkm_tune_launcher_choose(&runner, getenv("PATH"), getenv("SLURM_JOB_ID"), launcher, sizeof launcher,
                                       &err)) < 0) {
        bkm_err_prefix(&err, "workload %s needs an MPI launcher", o->sp.workload);
        goto fail;
    }
    /* libomp must see hwloc's topology, which every worker plans with (issue 8): the correction
     * goes into the base spec, whose variables every trial carries and stores; a program on
     * another runtime (libgomp reads no KMP_* variable) gets none of it. */
    runner.program = o->prog ? &o->prog->pg : NULL;
    if ((rc = bkm_cli_topo_fix_open(&fix, NULL, &err)) < 0 ||
        ((o->prog == NULL || o->prog->pg.runtime == BKM_AFF_RUNTIME_LIBOMP ||
          o->prog->pg.runtime == BKM_AFF_RUNTIME_LIBIOMP5) &&
         (rc = bkm_cli_topo_fix_spec(&fix, &o->sw.base, &err)) < 0))
        goto fail;
    if (fix.disagreed || fix.applied)
        bkm_log(&log, BKM_LOG_INFO, "%s", bkm_cli_topo_fix_describe(&fix, note, sizeof note));
    bkm_buf_puts(&cmd, "tune");
    for (int i = 0; i < argc; i++)
        bkm_buf_printf(&cmd, " %s", argv[i]);
    o->sw.node = prof->name;
    o->sw.shard_group = o->shard_group;
    o->sw.command = bkm_buf_str(&cmd);
    o->sw.git_revision = BKM_BUILD_REVISION;
    o->sw.runner = &runner;
    o->sw.stop = runner.stop = bkm_cli_stop_signals_catch();
    o->sw.progress = on_progress;
    o->sw.progress_ud = &bar;
    o->sw.log = &log;
    rc = bkm_tune_sweep_run(&o->sw, sp, db, &res, &err);
    if (bar.open)
        fputc('\n', stderr);
    if (rc < 0)
        goto fail;
    bkm_tune_sweep_summary_render(&res, o->db, &out, o->json);
    fputs(bkm_buf_str(&out), stdout);
    /* an A/A run whose default "beats" itself is a failed check */
    rc = res.interrupted ? 128 + (int)*o->sw.stop : res.failed ? 4 : res.aa && res.significant ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "tune: %s\n", err.msg);
    rc = bkm_status_exit_code(rc);
done:
    bkm_cli_topo_fix_close(&fix);
    bkm_db_close(db);
    bkm_buf_free(&cmd);
    bkm_buf_free(&out);
    bkm_tune_sweep_result_clear(&res);
    return rc;
}

/* -- CMD: the program resolved and the runtime it loads found; the space follows that runtime. */
static int sweep_program(opts_t *o, int pargc, char **pargv, const bkm_topo_t *topo, bkm_err_t *err)
{
    char self[PATH_MAX];
    int rc, kind;
    if (realpath("/proc/self/exe", self) == NULL)
        return bkm_err_set(err, BKM_EDEP, "cannot resolve /proc/self/exe");
    if ((rc = bkm_cli_program_open(o->prog, pargc, pargv, o->workload, o->metric, o->metric_unit, o->metric_higher,
                                   o->runtime, o->probe_timeout, self, topo, err)) < 0)
        return rc;
    kind = o->prog->pg.runtime;
    if (kind == BKM_AFF_RUNTIME_UNKNOWN)
        return bkm_err_set(err, BKM_EINVAL, "cannot tell which OpenMP runtime %s loads (%s): name it with "
                           "--runtime libgomp|libomp|libiomp5|none", o->prog->exe, o->prog->how);
    o->sp.workload = o->sw.workload = o->prog->name;
    o->sp.program = 1;
    o->sp.gomp = kind == BKM_AFF_RUNTIME_LIBGOMP;
    o->sp.no_openmp = kind == BKM_AFF_RUNTIME_NONE;
    fprintf(stderr, "tune: %s loads %s (%s): sweeping the settings it reads\n", o->prog->exe,
            bkm_aff_runtime_kind_title((bkm_aff_runtime_kind_t)kind), o->prog->how);
    return BKM_OK;
}

int bkm_cli_sweep(int argc, char **argv)
{
    opts_t o;
    bkm_cli_given_t given = {0};
    bkm_err_t err = {0};
    bkm_node_profile_t prof;
    bkm_topo_t *host = NULL, *node_topo = NULL;
    bkm_tune_space_t *sp = NULL;
    char **pargv = NULL;
    int rc, host_match, oargc, pargc = 0;

    memset(&o, 0, sizeof o);
    bkm_tune_sweep_cfg_defaults(&o.sw);
    o.node = "auto";
    if ((rc = bkm_cli_program_split(argc, argv, &oargc, &pargv, &pargc, &err)) < 0 ||
        (pargc > 0 && (o.prog = calloc(1, sizeof *o.prog)) == NULL) ||
        (rc = parse_args(oargc, argv, &o, &given, &err)) != 0) {
        if (rc < 0)
            fprintf(stderr, "%s\n", err.msg);
        bkm_cli_given_free(&given);
        free(o.prog);
        return rc > 0 ? 0 : 2;
    }
    o.db = bkm_cli_db_path(o.db);
    if (!bkm_cli_db_check("", o.db)) {
        rc = 2;
        goto done;
    }
    /* the host topology first, before anything could start an OpenMP runtime */
    if ((rc = bkm_topo_open_host(&host, &err)) < 0 || (rc = bkm_profile_resolve(o.node, &prof, &err)) < 0)
        goto fail;
    host_match = strcmp(prof.name, "auto") == 0 || bkm_profile_matches_host(&prof, host);
    if (strcmp(prof.name, "auto") == 0) {
        node_topo = host;
        host = NULL;
    } else if ((rc = bkm_topo_open_profile(&node_topo, &prof, &err)) < 0) {
        goto fail;
    }
    if (o.prog != NULL && (rc = sweep_program(&o, pargc, pargv, node_topo, &err)) < 0)
        goto fail;
    if ((rc = bkm_tune_space_create(&sp, node_topo, &prof, &o.sp, &err)) < 0 ||
        (rc = bkm_tune_space_specs_check(sp, o.sp.workload, &o.sw.base, &err)) < 0)
        goto fail;
    if (o.sbatch || o.slurm_array) {
        rc = slurm_jobs(&o, &given, &prof, argc, argv);
    } else if (o.submit) {
        fprintf(stderr, "tune: --submit goes with --sbatch FILE or --slurm-array K\n");
        rc = 2;
    } else if (!host_match || o.dry_run) {
        print_plan(&o, &given, sp, &prof, host_match, argc, argv);
        rc = 0;
    } else {
        rc = sweep_here(&o, sp, node_topo, &prof, argc, argv);
    }
    goto done;
fail:
    fprintf(stderr, "tune: %s\n", err.msg);
    rc = bkm_status_exit_code(rc);
done:
    bkm_tune_space_free(sp);
    bkm_topo_close(node_topo);
    bkm_topo_close(host);
    bkm_cli_given_free(&given);
    bkm_cli_program_close(o.prog);
    free(o.prog);
    return rc;
}
