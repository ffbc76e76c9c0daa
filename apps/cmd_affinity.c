/* SPDX-License-Identifier: MIT */
/* `tune affinity explain|verify`: what LLVM libomp 14 does with an affinity setting (KMP_AFFINITY,
 * OMP_PLACES/OMP_PROC_BIND, KMP_HW_SUBSET, GOMP_CPU_AFFINITY, KMP_BLOCKTIME) on a node, and a check
 * on this host that the runtime really binds that way (a fresh child process runs the probe). */
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
     .hi = BKM_CPUSET_MAX, .help = "team size (required)", .example = "1"},                                     \
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

static const bkm_cli_opt_t explain_table[] = {
    BKM_CLI_TOPO_OPTS(aff_cfg_t, src, mask),
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
             "         --threads N [SETTINGS] [--json] [KMP_AFFINITY]",
    .about = "Computes, exactly as LLVM libomp 14 does, which OS processors (PUs) each thread of the\n"
             "outermost OpenMP team of N threads is bound to, and prints a table thread -> PUs, core,\n"
             "socket, the effective settings (as KMP_SETTINGS=1 prints them) and warnings (threads\n"
             "sharing a core, an idle socket, more threads than PUs, variables ignored because another\n"
             "one takes precedence). Nothing is run. The default node is this host.",
    BKM_CLI_TABLE(explain_table),
    .positional = aff_settings_text,
    .positional_fn = aff_positional,
    .more = "examples:\n"
            "  tune affinity explain --node haswell --threads 32 granularity=fine,compact,1,0\n"
            "  tune affinity explain --node knl --threads 64 --places cores --proc-bind spread --json\n"
            "  tune affinity explain --node haswell --threads 8 --hw-subset 1s,4c,1t\n"
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
    if (c->threads < 1)
        return bkm_err_set(err, BKM_EINVAL, "tune affinity %s: --threads N is required", c->cmd);
    if (c->from_env)
        bkm_cli_aff_env_read(&c->env);
    return 0;
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
        else
            usage(stdout);
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
