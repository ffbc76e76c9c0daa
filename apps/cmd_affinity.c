/* SPDX-License-Identifier: MIT */
/* `tune affinity explain|verify`: what LLVM libomp 14 does with an affinity setting (KMP_AFFINITY,
 * OMP_PLACES/OMP_PROC_BIND, KMP_HW_SUBSET, GOMP_CPU_AFFINITY, KMP_BLOCKTIME) on a node, or with
 * --runtime gomp what GNU libgomp 12 does with its variables, and a check on this host that the
 * runtime really binds that way (a fresh child process runs the probe). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_affinity_summary[] = "explain or verify an OpenMP affinity setting (KMP_AFFINITY, OMP_PLACES, ...)";

typedef struct aff_cfg {
    const char *cmd;                       /* "explain", "verify", "probe" */
    bkm_topo_source_t src;
    const char *mask;
    int threads;
    int json, tiles, mic, from_env;
    bkm_aff_env_t env;
    /* --runtime gomp: libgomp's own variables and the nested teams */
    const char *runtime;                   /* "libomp" (default) or "gomp" */
    const char *nested;                    /* "T2[,T3[,T4]]": num_threads of the nested levels */
    const char *num_threads, *spincount, *max_active_levels, *omp_nested;
    int lenient;
    int gomp;                              /* --runtime gomp */
    int levels;                            /* 1 + the levels of --nested */
    int level_threads[BKM_AFF_GOMP_MAX_LEVELS];
} aff_cfg_t;

/* The positional argument: a KMP_AFFINITY value, as --kmp-affinity. */
static int aff_positional(void *cfg, const char *arg, bkm_err_t *err)
{
    aff_cfg_t *c = cfg;
    if (arg[0] == '-')
        return bkm_err_set(err, BKM_EINVAL, "unknown option '%s' (see tune affinity --help)", arg);
    if (c->env.kmp_affinity != NULL)
        return bkm_err_set(err, BKM_EINVAL, "second KMP_AFFINITY setting '%s'", arg);
    c->env.kmp_affinity = arg;
    return BKM_OK;
}

#define AFF_STR(nm, meta, member, text, ex)                                                                       \
    {.name = nm, .kind = BKM_CLI_STR, .metavar = meta, .off = offsetof(aff_cfg_t, env.member), .help = text,     \
     .example = ex}
/* The team size and the settings: every sub-command. */
#define AFF_COMMON_OPTS                                                                                           \
    {.name = "threads", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(aff_cfg_t, threads), .lo = 1,       \
     .hi = BKM_CPUSET_MAX,                                                                                       \
     .help = "team size (required; with --runtime gomp optional: the num_threads\n"                              \
             "of the outermost region, else libgomp picks the size)",                                             \
     .example = "1"},                                                                                             \
    AFF_STR("kmp-affinity", "S", kmp_affinity, "KMP_AFFINITY (also the positional argument)", "compact"),      \
    AFF_STR("places", "P", omp_places,                                                                           \
            "OMP_PLACES: threads|cores|sockets|ll_caches|numa_domains[(N)] or\n"                                 \
            "an explicit list such as {0:4},{16:4} or {0:2}:4:2",                                                \
            "cores"),                                                                                             \
    AFF_STR("proc-bind", "B", omp_proc_bind, "OMP_PROC_BIND: false|true|primary|master|close|spread[,...]",    \
            "close"),                                                                                             \
    AFF_STR("hw-subset", "S", kmp_hw_subset, "KMP_HW_SUBSET, e.g. 1s,4c,1t or 64c@4,1t (counts are per parent)", \
            "1t"),                                                                                                \
    AFF_STR("gomp-cpu-affinity", "L", gomp_cpu_affinity, "GOMP_CPU_AFFINITY, e.g. \"0 5 7-9\" or 0-30:10", "0"), \
    AFF_STR("blocktime", "B", kmp_blocktime, "KMP_BLOCKTIME: ms, 1s, 5m, infinite", "0"),                      \
    AFF_STR("wait-policy", "W", omp_wait_policy, "OMP_WAIT_POLICY: active|passive", "passive"),                \
    {.name = "env", .kind = BKM_CLI_FLAG, .off = offsetof(aff_cfg_t, from_env),                                 \
     .help = "take the settings from this process's environment instead"},                                      \
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(aff_cfg_t, json),                                    \
     .help = "machine-readable output: {\"threads\":N,\"bound\":true,\"effective\":\"...\",\n"                   \
             "\"plan\":[{\"thread\":0,\"cpus\":[0]},...],\"warnings\":[...]}"}

#define AFF_GOMP_STR(nm, meta, member, text, ex)                                                                  \
    {.name = nm, .kind = BKM_CLI_STR, .metavar = meta, .off = offsetof(aff_cfg_t, member), .help = text, .example = ex}

static const bkm_cli_opt_t explain_table[] = {
    BKM_CLI_TOPO_OPTS(aff_cfg_t, src, mask),
    {.name = "runtime", .kind = BKM_CLI_CHOICE, .metavar = "libomp|gomp", .off = offsetof(aff_cfg_t, runtime),
     .choices = "libomp|gomp",
     .help = "the OpenMP runtime to explain: LLVM libomp 14 (default) or GNU libgomp 12\n"
             "(gcc -fopenmp, Debian's PyTorch); libgomp ignores every KMP_* variable"},
    AFF_GOMP_STR("nested", "T2[,T3..]", nested,
                 "gomp: plan nested teams too, with these num_threads per level\n"
                 "(0 = libgomp's own choice), e.g. 2 or 2,0",
                 "2"),
    AFF_GOMP_STR("num-threads", "N[,N..]", num_threads, "gomp: OMP_NUM_THREADS, one value per nesting level", "4,2"),
    AFF_GOMP_STR("max-active-levels", "N", max_active_levels, "gomp: OMP_MAX_ACTIVE_LEVELS", "2"),
    AFF_GOMP_STR("omp-nested", "B", omp_nested, "gomp: OMP_NESTED (true|false)", "true"),
    AFF_GOMP_STR("spincount", "N", spincount, "gomp: GOMP_SPINCOUNT, e.g. 10000, 300k, infinite", "300k"),
    {.name = "lenient", .kind = BKM_CLI_FLAG, .off = offsetof(aff_cfg_t, lenient),
     .help = "gomp: show what libgomp does with a value it rejects (its message,\n"
             "then the variable treated as unset) instead of exit 2"},
    {.name = "tiles", .kind = BKM_CLI_FLAG, .off = offsetof(aff_cfg_t, tiles),
     .help = "model KNL tiles as a level (hwloc-method runtimes; libomp 14 as\n"
             "shipped by Debian has no tile level)"},
    {.name = "mic", .kind = BKM_CLI_FLAG, .off = offsetof(aff_cfg_t, mic),
     .help = "KNL (\"mic\") defaults: scatter,granularity=fine when nothing is set"},
    AFF_COMMON_OPTS,
};

static const bkm_cli_opt_t verify_table[] = {AFF_COMMON_OPTS};

static const char aff_settings_text[] =
    "KMP_AFFINITY             positional, e.g. granularity=fine,compact,1,0 (same as --kmp-affinity)\n\n"
    "settings (any combination; precedence as libomp: KMP_AFFINITY with a type beats\n"
    "GOMP_CPU_AFFINITY beats OMP_PLACES/OMP_PROC_BIND; a KMP_AFFINITY without a type only adds\n"
    "its modifiers, and its granularity becomes the default place kind).";

static const bkm_cli_cmd_spec_t explain_cmd = {
    .name = "affinity explain",
    .usage = "tune affinity explain [--node NAME|--profile FILE|--xml FILE|--synthetic DESC]\n"
             "         --threads N [SETTINGS] [--json] [KMP_AFFINITY]\n"
             "tune affinity explain --runtime gomp [--node NAME|...] [--threads N] [--nested T2,..]\n"
             "         [SETTINGS] [--lenient] [--json]",
    .about = "Computes, exactly as LLVM libomp 14 does, which OS processors (PUs) each thread of the\n"
             "outermost OpenMP team of N threads is bound to, and prints a table thread -> PUs, core,\n"
             "socket, the effective settings (as KMP_SETTINGS=1 prints them) and warnings (threads\n"
             "sharing a core, an idle socket, more threads than PUs, variables ignored because another\n"
             "one takes precedence). Nothing is run. The default node is this host.",
    BKM_CLI_TABLE(explain_table),
    .positional = aff_settings_text,
    .positional_fn = aff_positional,
    .more = "With --runtime gomp it computes what GNU libgomp 12 does instead: its place list, the\n"
            "policy of every nesting level, the pin of the initial thread in libgomp's constructor,\n"
            "every thread's place, partition and CPUs (nested teams with --nested), the spin count,\n"
            "and what libgomp ignores (every KMP_* variable, GOMP_CPU_AFFINITY after a valid\n"
            "OMP_PLACES, ...). --threads is then optional (libgomp takes OMP_NUM_THREADS or the CPUs of\n"
            "the mask). A value libgomp rejects is exit 2 naming it, unless --lenient.\n"
            "\n"
            "examples:\n"
            "  tune affinity explain --node haswell --threads 32 granularity=fine,compact,1,0\n"
            "  tune affinity explain --node knl --threads 64 --places cores --proc-bind spread --json\n"
            "  tune affinity explain --node haswell --threads 8 --hw-subset 1s,4c,1t\n"
            "  tune affinity explain --runtime gomp --node haswell --threads 12 --places cores --proc-bind spread\n"
            "  tune affinity explain --runtime gomp --node haswell --threads 2 --nested 4 --proc-bind spread,close\n"
            "\n"
            "exit codes: 0 ok, 2 bad option or setting (the message names the token), 3 environment\n"
            "problem (topology).\n",
};

static const bkm_cli_cmd_spec_t verify_cmd = {
    .name = "affinity verify",
    .usage = "tune affinity verify --threads N [SETTINGS] [--json] [KMP_AFFINITY]",
    .about = "On THIS host, plans the setting, then starts a fresh process with only that setting in its\n"
             "environment, runs one parallel region of N threads and reads every thread's kernel CPU\n"
             "mask; prints plan vs actual. Exit 0 when they match, 1 when not.",
    BKM_CLI_TABLE(verify_table),
    .positional = aff_settings_text,
    .positional_fn = aff_positional,
    .more = "example:\n"
            "  tune affinity verify --threads 2 granularity=fine,compact\n"
            "\n"
            "exit codes: 0 the binding matches, 1 it does not, 2 bad option or setting (the message\n"
            "names the token), 3 environment problem (topology, probe).\n",
};

/* The child verify starts (run_probe); not for people, so not in tune affinity --help. */
static const bkm_cli_cmd_spec_t probe_cmd = {
    .name = "affinity probe",
    .usage = "tune affinity probe --threads N --json",
    .about = "Internal: binds a team of N threads under this environment and prints their masks.",
    BKM_CLI_TABLE(verify_table),
};

/* tune affinity --help: both sub-commands' help, generated from their tables. */
static void usage(FILE *f)
{
    fprintf(f, "tune affinity explain: what LLVM libomp 14 does with an affinity setting on a node\n"
               "tune affinity verify:  on this host, that the runtime really binds that way\n\n");
    bkm_cli_opt_help(&explain_cmd, f);
    fprintf(f, "\n");
    bkm_cli_opt_help(&verify_cmd, f);
}

/* --nested "2,0": the num_threads of levels 2.. (0 = libgomp's own choice). */
static int parse_nested(aff_cfg_t *c, bkm_err_t *err)
{
    const char *s = c->nested;
    c->levels = 1;
    c->level_threads[0] = c->threads;
    while (s != NULL) {
        long long v;
        char item[32];
        size_t n = strcspn(s, ",");
        if (c->levels >= BKM_AFF_GOMP_MAX_LEVELS)
            return bkm_err_set(err, BKM_EINVAL, "tune affinity: --nested '%s': at most %d nested levels", c->nested,
                               BKM_AFF_GOMP_MAX_LEVELS - 1);
        snprintf(item, sizeof(item), "%.*s", (int)(n < sizeof(item) ? n : sizeof(item) - 1), s);
        if (n >= sizeof(item) || bkm_parse_int(item, 0, BKM_AFF_GOMP_MAX_TEAM, &v) < 0)
            return bkm_err_set(err, BKM_EINVAL, "tune affinity: --nested '%s': '%.*s' is not a team size 0..%d",
                               c->nested, (int)n, s, BKM_AFF_GOMP_MAX_TEAM);
        c->level_threads[c->levels++] = (int)v;
        s = s[n] == ',' ? s + n + 1 : NULL;
    }
    return 0;
}

static int parse_args(int argc, char **argv, aff_cfg_t *c, bkm_err_t *err)
{
    const bkm_cli_cmd_spec_t *spec;
    int rc;
    if (argc < 2)
        return bkm_err_set(err, BKM_EINVAL,
                           "tune affinity: missing subcommand: explain or verify (see tune affinity --help)");
    c->cmd = argv[1];
    spec = strcmp(c->cmd, "explain") == 0 ? &explain_cmd : strcmp(c->cmd, "verify") == 0 ? &verify_cmd
           : strcmp(c->cmd, "probe") == 0 ? &probe_cmd : NULL;
    if (spec == NULL)
        return bkm_err_set(err, BKM_EINVAL, "tune affinity: unknown subcommand '%s' (explain or verify)", c->cmd);
    if ((rc = bkm_cli_opt_parse(spec, argc - 1, argv + 1, c, err)) != 0)
        return rc;
    c->gomp = c->runtime != NULL && strcmp(c->runtime, "gomp") == 0;
    if (c->threads < 1 && !c->gomp)
        return bkm_err_set(err, BKM_EINVAL, "tune affinity %s: --threads N is required", c->cmd);
    if (!c->gomp && (c->nested || c->num_threads || c->max_active_levels || c->omp_nested || c->spincount ||
                     c->lenient))
        return bkm_err_set(err, BKM_EINVAL,
                           "tune affinity %s: --nested, --num-threads, --max-active-levels, --omp-nested, --spincount "
                           "and --lenient are for --runtime gomp",
                           c->cmd);
    if (c->from_env) {
        bkm_cli_aff_env_read(&c->env);
        c->num_threads = getenv("OMP_NUM_THREADS");
        c->max_active_levels = getenv("OMP_MAX_ACTIVE_LEVELS");
        c->omp_nested = getenv("OMP_NESTED");
        c->spincount = getenv("GOMP_SPINCOUNT");
    }
    return c->gomp ? parse_nested(c, err) : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* verify: run `tune affinity probe` in a child with exactly the setting's environment.       */

/* Runs `tune affinity probe --threads N --json` in a child with exactly the setting's
 * environment; *out gets its stdout. */
static int run_probe(const aff_cfg_t *c, const bkm_aff_topo_fix_t *fix, char **out, bkm_err_t *err)
{
    char *extra[3];
    char threads[16];
    char *args[7];
    snprintf(threads, sizeof(threads), "%d", c->threads);
    args[0] = (char *)"tune";
    args[1] = (char *)"affinity";
    args[2] = (char *)"probe";
    args[3] = (char *)"--threads";
    args[4] = threads;
    args[5] = (char *)"--json";
    args[6] = NULL;
    fflush(stdout);
    fflush(stderr);
    bkm_cli_topo_fix_envv(fix, extra);
    if (!bkm_aff_topo_fix_wanted(c->env.kmp_affinity))
        extra[0] = NULL; /* KMP_AFFINITY=disabled: libomp 14 would abort with the cpuinfo method */
    return bkm_aff_probe_spawn_ex("/proc/self/exe", args, environ, &c->env, extra, out, err);
}

static int cmd_probe(const aff_cfg_t *c, bkm_err_t *err)
{
    bkm_aff_probe_t *pr = NULL;
    bkm_buf_t b;
    bkm_json_w_t w;
    int rc = bkm_aff_probe_run(c->threads, &pr, err);
    if (rc != BKM_OK)
        return rc;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    rc = bkm_aff_probe_to_json(pr, &w, err);
    if (rc == BKM_OK)
        printf("%s\n", bkm_buf_str(&b));
    bkm_buf_free(&b);
    bkm_aff_probe_free(pr);
    return rc;
}

/* explain --runtime gomp: the libgomp plan, text or JSON, into @p out. */
static int explain_gomp(const aff_cfg_t *c, const bkm_topo_t *t, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_aff_gomp_env_t env;
    bkm_aff_gomp_opts_t opts;
    bkm_aff_gomp_plan_t *plan = NULL;
    char foreign_buf[4][320];
    const char *foreign[5];
    int n_foreign = 0, rc;
    const struct {
        const char *name, *value;
    } kmp[] = {{"KMP_AFFINITY", c->env.kmp_affinity},
               {"KMP_HW_SUBSET", c->env.kmp_hw_subset},
               {"KMP_PLACE_THREADS", c->env.kmp_place_threads},
               {"KMP_BLOCKTIME", c->env.kmp_blocktime}};
    memset(&env, 0, sizeof(env));
    memset(&opts, 0, sizeof(opts));
    env.omp_places = c->env.omp_places;
    env.omp_proc_bind = c->env.omp_proc_bind;
    env.gomp_cpu_affinity = c->env.gomp_cpu_affinity;
    env.omp_wait_policy = c->env.omp_wait_policy;
    env.omp_num_threads = c->num_threads;
    env.omp_max_active_levels = c->max_active_levels;
    env.omp_nested = c->omp_nested;
    env.gomp_spincount = c->spincount;
    for (size_t i = 0; i < sizeof(kmp) / sizeof(kmp[0]); i++)
        if (kmp[i].value != NULL) {
            snprintf(foreign_buf[n_foreign], sizeof(foreign_buf[0]), "%s=%.250s", kmp[i].name, kmp[i].value);
            foreign[n_foreign] = foreign_buf[n_foreign];
            n_foreign++;
        }
    foreign[n_foreign] = NULL;
    env.foreign = foreign;
    opts.n_levels = c->levels;
    for (int l = 0; l < c->levels; l++)
        opts.num_threads[l] = c->level_threads[l];
    opts.strict = !c->lenient;
    if ((rc = bkm_aff_gomp_plan_create(t, &env, &opts, &plan, err)) != BKM_OK)
        return rc;
    if (c->json) {
        bkm_json_w_t w;
        bkm_json_w_init(&w, out, 0);
        rc = bkm_aff_gomp_plan_to_json(plan, t, &w, err);
        if (rc == BKM_OK)
            bkm_buf_puts(out, "\n");
    } else {
        rc = bkm_aff_gomp_plan_explain(plan, t, out, err);
    }
    bkm_aff_gomp_plan_free(plan);
    return rc;
}

int bkm_cli_affinity(int argc, char **argv)
{
    aff_cfg_t cfg;
    bkm_topo_t *t = NULL;
    bkm_aff_plan_t *plan = NULL;
    bkm_aff_plan_opts_t opts;
    bkm_err_t err = {0};
    bkm_buf_t out;
    char *probe_text = NULL;
    bkm_json_t *probe = NULL;
    bkm_aff_topo_fix_t fix = {0};
    int rc;

    memset(&cfg, 0, sizeof(cfg));
    memset(&opts, 0, sizeof(opts));
    bkm_buf_init(&out);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        if (argc == 3 && strcmp(argv[2], "--json") == 0)
            printf("{\"command\":\"affinity\",\"subcommands\":[\"explain\",\"verify\"]}\n");
        else if (argc == 3 && strcmp(argv[2], "--man") == 0) {
            bkm_cli_opt_help_man(&explain_cmd, stdout);
            bkm_cli_opt_help_man(&verify_cmd, stdout);
        } else {
            usage(stdout);
        }
        return 0;
    }
    if ((rc = parse_args(argc, argv, &cfg, &err)) != 0) {
        if (rc < 0)
            fprintf(stderr, "%s\n", err.msg);
        return rc > 0 ? 0 : 2;
    }
    if (strcmp(cfg.cmd, "probe") == 0) {
        rc = cmd_probe(&cfg, &err);
        goto out;
    }
    opts.model_tiles = cfg.tiles;
    opts.mic = cfg.mic;
    if ((rc = bkm_cli_topo_open(&cfg.src, cfg.mask, NULL, &t, &err)) != BKM_OK)
        goto out;
    if (cfg.gomp) {
        if ((rc = explain_gomp(&cfg, t, &out, &err)) == BKM_OK)
            fputs(bkm_buf_str(&out), stdout);
        goto out;
    }
    if ((rc = bkm_aff_plan_create_ex(t, &cfg.env, cfg.threads, &opts, &plan, &err)) != BKM_OK)
        goto out;
    if (strcmp(cfg.cmd, "explain") == 0) {
        if (cfg.json) {
            bkm_json_w_t w;
            bkm_json_w_init(&w, &out, 0);
            rc = bkm_aff_plan_to_json(plan, t, &w, &err);
        } else {
            rc = bkm_aff_plan_explain(plan, t, &out, &err);
        }
        if (rc == BKM_OK)
            printf("%s%s", bkm_buf_str(&out), cfg.json ? "\n" : "");
        goto out;
    }
    /* verify: libomp must see hwloc's topology, which the plan is made on (issue 8) */
    if ((rc = bkm_cli_topo_fix_open(&fix, NULL, &err)) != BKM_OK)
        goto out;
    if (fix.disagreed || fix.unstable) {
        char note[2048];
        fprintf(stderr, "tune affinity verify: %s\n", bkm_cli_topo_fix_describe(&fix, note, sizeof note));
    }
    if ((rc = run_probe(&cfg, &fix, &probe_text, &err)) != BKM_OK)
        goto out;
    if ((rc = bkm_json_parse(probe_text, &probe, &err)) != BKM_OK) {
        bkm_err_prefix(&err, "verify: probe output");
        rc = BKM_EDEP;
        goto out;
    }
    if (!cfg.json) {   /* the CPUs this process may use: what a launcher (srun -c --cpu-bind) gave it */
        bkm_cpuset_t mask;
        bkm_buf_t m;
        bkm_topo_allowed(t, &mask);
        bkm_buf_init(&m);
        bkm_cpuset_format(&mask, &m);
        printf("process mask: %s (%d CPU%s)\n", bkm_buf_str(&m), bkm_cpuset_count(&mask), bkm_cpuset_count(&mask) == 1 ? "" : "s");
        bkm_buf_free(&m);
    }
    rc = bkm_aff_plan_verify(plan, cfg.threads, probe, &out, cfg.json, &err);
    fputs(bkm_buf_str(&out), stdout);
out:
    if (rc != BKM_OK && rc != BKM_EVERIFY)
        fprintf(stderr, "tune affinity %s: %s\n", cfg.cmd ? cfg.cmd : "", err.msg);
    bkm_cli_topo_fix_close(&fix);
    bkm_json_free(probe);
    bkm_free(probe_text);
    bkm_buf_free(&out);
    bkm_aff_plan_free(plan);
    bkm_topo_close(t);
    return bkm_status_exit_code(rc);
}
