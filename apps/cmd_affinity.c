/* SPDX-License-Identifier: MIT */
/* `tune affinity explain|verify`: what LLVM libomp 14 does with an affinity setting (KMP_AFFINITY,
 * OMP_PLACES/OMP_PROC_BIND, KMP_HW_SUBSET, GOMP_CPU_AFFINITY, KMP_BLOCKTIME) on a node, and a check
 * on this host that the runtime really binds that way (a fresh child process runs the probe). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "cli_common.h"
#include "cli_topofix.h"

extern char **environ;

const char bkm_cli_affinity_summary[] = "explain or verify an OpenMP affinity setting (KMP_AFFINITY, OMP_PLACES, ...)";

typedef struct aff_cfg {
    const char *cmd;                       /* "explain", "verify", "probe" */
    bkm_cli_topo_src_t src;
    const char *mask;
    int threads;
    int json, tiles, mic, from_env;
    bkm_aff_env_t env;
} aff_cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune affinity explain [NODE] --threads N [SETTINGS] [--json] [KMP_AFFINITY]\n"
            "       tune affinity verify --threads N [SETTINGS] [--json] [KMP_AFFINITY]\n"
            "\n"
            "explain: computes, exactly as LLVM libomp 14 does, which OS processors (PUs) each thread\n"
            "  of the outermost OpenMP team of N threads is bound to, and prints a table thread ->\n"
            "  PUs, core, socket, the effective settings (as KMP_SETTINGS=1 prints them) and warnings\n"
            "  (threads sharing a core, an idle socket, more threads than PUs, variables ignored\n"
            "  because another one takes precedence). Nothing is run.\n"
            "verify: on THIS host, plans the setting, then starts a fresh process with only that\n"
            "  setting in its environment, runs one parallel region of N threads and reads every\n"
            "  thread's kernel CPU mask; prints plan vs actual. Exit 0 when they match, 1 when not.\n"
            "\n"
            "node (explain only; default: this host):\n"
            "  --node NAME           built-in profile: auto, haswell, knl\n"
            "  --profile FILE        node profile file or hwloc XML\n"
            "  --xml FILE            hwloc XML topology\n"
            "  --synthetic DESC      hwloc synthetic topology, e.g. \"pack:2 core:16 pu:2(indexes=0,32,...)\"\n"
            "  --mask LIST           initial process mask (taskset/srun), e.g. 0-3,32-35\n"
            "  --tiles               model KNL tiles as a level (hwloc-method runtimes; libomp 14 as\n"
            "                        shipped by Debian has no tile level)\n"
            "  --mic                 KNL (\"mic\") defaults: scatter,granularity=fine when nothing is set\n"
            "settings (any combination; precedence as libomp: KMP_AFFINITY with a type beats\n"
            "GOMP_CPU_AFFINITY beats OMP_PLACES/OMP_PROC_BIND; a KMP_AFFINITY without a type only adds\n"
            "its modifiers, and its granularity becomes the default place kind):\n"
            "  KMP_AFFINITY          positional, e.g. granularity=fine,compact,1,0 (same as --kmp-affinity)\n"
            "  --kmp-affinity S      KMP_AFFINITY\n"
            "  --places P            OMP_PLACES: threads|cores|sockets|ll_caches|numa_domains[(N)] or\n"
            "                        an explicit list such as {0:4},{16:4} or {0:2}:4:2\n"
            "  --proc-bind B         OMP_PROC_BIND: false|true|primary|master|close|spread[,...]\n"
            "  --hw-subset S         KMP_HW_SUBSET, e.g. 1s,4c,1t or 64c@4,1t (counts are per parent)\n"
            "  --gomp-cpu-affinity L GOMP_CPU_AFFINITY, e.g. \"0 5 7-9\" or 0-30:10\n"
            "  --blocktime B         KMP_BLOCKTIME: ms, 1s, 5m, infinite\n"
            "  --wait-policy W       OMP_WAIT_POLICY: active|passive\n"
            "  --env                 take the settings from this process's environment instead\n"
            "other:\n"
            "  --threads N           team size (required, 1..4096)\n"
            "  --json                machine-readable output: {\"threads\":N,\"bound\":true,\"effective\":\"...\",\n"
            "                        \"plan\":[{\"thread\":0,\"cpus\":[0]},...],\"warnings\":[...]}\n"
            "  -h, --help            this text\n"
            "\n"
            "examples:\n"
            "  tune affinity explain --node haswell --threads 32 granularity=fine,compact,1,0\n"
            "  tune affinity explain --node knl --threads 64 --places cores --proc-bind spread --json\n"
            "  tune affinity explain --node haswell --threads 8 --hw-subset 1s,4c,1t\n"
            "  tune affinity verify --threads 2 granularity=fine,compact\n"
            "\n"
            "exit codes: 0 ok (verify: binding matches), 1 verify found a mismatch, 2 bad option or\n"
            "setting (the message names the token), 3 environment problem (topology, probe).\n");
}

static int parse_args(int argc, char **argv, aff_cfg_t *c)
{
    int i;
    if (argc < 2) {
        fprintf(stderr, "tune affinity: missing subcommand: explain or verify (see tune affinity --help)\n");
        return 2;
    }
    c->cmd = argv[1];
    if (strcmp(c->cmd, "explain") != 0 && strcmp(c->cmd, "verify") != 0 && strcmp(c->cmd, "probe") != 0) {
        fprintf(stderr, "tune affinity: unknown subcommand '%s' (explain or verify)\n", c->cmd);
        return 2;
    }
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (strcmp(a, "--json") == 0) {
            c->json = 1;
            continue;
        }
        if (strcmp(a, "--tiles") == 0) {
            c->tiles = 1;
            continue;
        }
        if (strcmp(a, "--mic") == 0) {
            c->mic = 1;
            continue;
        }
        if (strcmp(a, "--env") == 0) {
            c->from_env = 1;
            continue;
        }
        if (strcmp(a, "--threads") == 0) {
            long long v;
            if (!bkm_cli_need_value("affinity", i, argc, a))
                return 2;
            if (bkm_parse_int(argv[i + 1], 1, 4096, &v) != BKM_OK) {
                fprintf(stderr, "tune affinity: --threads '%s' is not an integer in 1..4096\n", argv[i + 1]);
                return 2;
            }
            c->threads = (int)v;
            i++;
            continue;
        }
        dst = bkm_cli_topo_src_slot(&c->src, a);
        if (strcmp(a, "--mask") == 0)
            dst = &c->mask;
        else if (strcmp(a, "--kmp-affinity") == 0)
            dst = &c->env.kmp_affinity;
        else if (strcmp(a, "--places") == 0)
            dst = &c->env.omp_places;
        else if (strcmp(a, "--proc-bind") == 0)
            dst = &c->env.omp_proc_bind;
        else if (strcmp(a, "--hw-subset") == 0)
            dst = &c->env.kmp_hw_subset;
        else if (strcmp(a, "--gomp-cpu-affinity") == 0)
            dst = &c->env.gomp_cpu_affinity;
        else if (strcmp(a, "--blocktime") == 0)
            dst = &c->env.kmp_blocktime;
        else if (strcmp(a, "--wait-policy") == 0)
            dst = &c->env.omp_wait_policy;
        if (dst == NULL) {
            if (a[0] == '-' && a[1] == '-') {
                fprintf(stderr, "tune affinity: unknown option '%s' (see tune affinity --help)\n", a);
                return 2;
            }
            if (c->env.kmp_affinity != NULL) {
                fprintf(stderr, "tune affinity: second KMP_AFFINITY setting '%s'\n", a);
                return 2;
            }
            c->env.kmp_affinity = a;
            continue;
        }
        if (!bkm_cli_need_value("affinity", i, argc, a))
            return 2;
        *dst = argv[++i];
    }
    if (c->threads < 1) {
        fprintf(stderr, "tune affinity %s: --threads N is required\n", c->cmd);
        return 2;
    }
    if (!bkm_cli_topo_src_check("affinity", &c->src))
        return 2;
    if (strcmp(c->cmd, "verify") == 0 &&
        (c->src.node || c->src.profile || c->src.xml || c->src.synthetic || c->mask)) {
        fprintf(stderr, "tune affinity verify: runs on this host only (drop --node/--profile/--xml/--synthetic/--mask)\n");
        return 2;
    }
    if (c->from_env)
        bkm_cli_aff_env_read(&c->env);
    return 0;
}

static int open_topo(const aff_cfg_t *c, bkm_topo_t **t, bkm_err_t *err)
{
    bkm_node_profile_t *p;
    int rc;
    if (c->src.xml)
        rc = bkm_topo_open_xml(t, c->src.xml, err);
    else if (c->src.synthetic)
        rc = bkm_topo_open_synthetic(t, c->src.synthetic, err);
    else if (c->src.node == NULL && c->src.profile == NULL)
        rc = bkm_topo_open_host(t, err);
    else {
        p = bkm_calloc(1, sizeof(*p));
        if (p == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory");
        rc = c->src.profile ? bkm_profile_load_file(c->src.profile, p, err) : bkm_profile_builtin(c->src.node, p, err);
        if (rc == BKM_OK)
            rc = bkm_topo_open_profile(t, p, err);
        bkm_free(p);
    }
    if (rc == BKM_OK && c->mask) {
        bkm_cpuset_t m;
        if ((rc = bkm_cpuset_parse(&m, c->mask, err)) != BKM_OK || (rc = bkm_topo_restrict(*t, &m, err)) != BKM_OK) {
            bkm_err_prefix(err, "--mask '%s'", c->mask);
            bkm_topo_close(*t);
            *t = NULL;
        }
    }
    return rc;
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
    int rc, i;

    memset(&cfg, 0, sizeof(cfg));
    memset(&opts, 0, sizeof(opts));
    bkm_buf_init(&out);
    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    if ((rc = parse_args(argc, argv, &cfg)) != 0)
        return rc;
    if (strcmp(cfg.cmd, "probe") == 0) {
        rc = cmd_probe(&cfg, &err);
        goto out;
    }
    opts.model_tiles = cfg.tiles;
    opts.mic = cfg.mic;
    if ((rc = open_topo(&cfg, &t, &err)) != BKM_OK)
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
