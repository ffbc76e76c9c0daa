/* SPDX-License-Identifier: MIT */
/* `tune topo`: show a node's topology (this host, a built-in profile, a profile file, an hwloc
 * XML file or a synthetic description) for people, or as JSON. */
#include <stdio.h>
#include <string.h>

#include "bkm/affinity.h"
#include "cli_common.h"

const char bkm_cli_topo_summary[] = "show the node topology (host, knl, haswell, profile, XML, synthetic)";

typedef struct topo_cfg {
    bkm_cli_topo_src_t src;
    const char *allowed;
    int json;
} topo_cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune topo [--node NAME | --profile FILE | --xml FILE | --synthetic DESC]\n"
            "                 [--allowed LIST] [--json]\n"
            "\n"
            "Shows the topology the tuner plans with: packages, cores, hardware threads (PUs) with\n"
            "their OS numbers (what KMP_AFFINITY proclists, OMP_PLACES and taskset use), KNL tiles\n"
            "(two cores sharing an L2), NUMA nodes (including MCDRAM) and caches. The default is\n"
            "this host, restricted to this process's CPU mask as libomp sees it.\n"
            "\n"
            "options:\n"
            "  --node NAME       built-in profile: auto (this host, default), haswell (Cori:\n"
            "                    2 x 16 cores x 2 HT, PU i+32 is the sibling of i), knl (Cori\n"
            "                    KNL 7250: 68 cores in 34 tiles x 4 HT, PUs i+68k are core i's)\n"
            "  --profile FILE    a node profile file, or an hwloc XML file (lstopo --of xml).\n"
            "                    Profile format, one 'key = value' per line, '#' comments:\n"
            "                      name = mynode              (required)\n"
            "                      description = free text\n"
            "                      synthetic = pack:2 core:8 pu:2   (or: xml = mynode.xml,\n"
            "                                                   relative to the profile file)\n"
            "                      isa = avx512 | avx2 | generic\n"
            "                      slurm_constraint = knl,quad,cache\n"
            "                      threads = 1,2,4,8          (default sweep, at most 16)\n"
            "                      blocktime = 0,200,infinite (KMP_BLOCKTIME ms, at most 8)\n"
            "  --xml FILE        an hwloc XML topology\n"
            "                    Profiles and XML files must be regular files (never a FIFO or a\n"
            "                    device); XML at most %zu MiB, a key = value profile at most %zu KiB.\n"
            "  --synthetic DESC  an hwloc synthetic description, with optional OS numbering,\n"
            "                    e.g. \"pack:2 core:4 pu:2(indexes=0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15)\"\n"
            "  --allowed LIST    emulate an initial process mask (taskset/srun), e.g. 0-7\n"
            "  --json            machine-readable output\n"
            "  -h, --help        this text\n"
            "\n"
            "examples:\n"
            "  tune topo\n"
            "  tune topo --node knl\n"
            "  tune topo --synthetic \"pack:1 l2:2 core:2 pu:4\" --json\n"
            "\n"
            "exit codes: 0 ok, 2 bad option or unloadable topology (the message names it),\n"
            "3 hwloc could not discover this host.\n",
            BKM_TOPO_XML_MAX_BYTES >> 20, BKM_PROFILE_MAX_BYTES >> 10);
}

static int parse_args(int argc, char **argv, topo_cfg_t *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (strcmp(a, "--json") == 0) {
            c->json = 1;
            continue;
        }
        dst = bkm_cli_topo_src_slot(&c->src, a);
        if (strcmp(a, "--allowed") == 0)
            dst = &c->allowed;
        if (!dst) {
            fprintf(stderr, "tune topo: unknown option '%s' (see tune topo --help)\n", a);
            return 2;
        }
        if (!bkm_cli_need_value("topo", i, argc, a))
            return 2;
        *dst = argv[++i];
    }
    if (!bkm_cli_topo_src_check("topo", &c->src))
        return 2;
    return 0;
}

/* Open the topology the options name; @p p receives the profile when one is used (else name ""). */
static int open_topo(const topo_cfg_t *c, bkm_node_profile_t *p, bkm_topo_t **t, bkm_err_t *err)
{
    int rc;
    p->name[0] = '\0';
    if (c->src.xml)
        return bkm_topo_open_xml(t, c->src.xml, err);
    if (c->src.synthetic)
        return bkm_topo_open_synthetic(t, c->src.synthetic, err);
    if (c->src.profile)
        rc = bkm_profile_load_file(c->src.profile, p, err);
    else
        rc = bkm_profile_builtin(c->src.node ? c->src.node : "auto", p, err);
    if (rc == BKM_OK)
        rc = bkm_topo_open_profile(t, p, err);
    return rc;
}

static void print_size(uint64_t b)
{
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        printf("%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= (1ull << 30))
        printf("%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        printf("%.4g MiB", (double)b / (double)(1ull << 20));
    else
        printf("%.4g KiB", (double)b / 1024.0);
}

static void print_text(const bkm_topo_t *t, const bkm_node_profile_t *p)
{
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    int n_pu = 0, n_c = 0, n_m = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(t, &n_pu);
    const bkm_topo_cache_t *cache = bkm_topo_caches(t, &n_c);
    const bkm_topo_numa_t *numa = bkm_topo_numas(t, &n_m);
    int cores_per_pkg = s.packages > 0 ? s.cores / s.packages : s.cores;
    if (p->name[0])
        printf("node: %s (%s)%s%s\n", p->name, p->description, p->slurm_constraint[0] ? ", sbatch -C " : "",
               p->slurm_constraint);
    printf("source: %s, isa: %s%s%s\n", s.source, s.isa, s.cpu_model[0] ? ", cpu: " : "", s.cpu_model);
    printf("%d package%s x %d cores x %d thread%s", s.packages, s.packages == 1 ? "" : "s", cores_per_pkg,
           s.pus_per_core_max, s.pus_per_core_max == 1 ? "" : "s");
    if (s.tiles > 0)
        printf(", %d tiles", s.tiles);
    printf(" (%d PUs, %d allowed)\n", s.pus, s.allowed_pus);
    printf("NUMA nodes:\n");
    for (int i = 0; i < n_m; i++) {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_cpuset_format(&numa[i].cpus, &b);
        printf("  node %d: ", numa[i].os);
        print_size(numa[i].memory_bytes);
        printf("%s%s, PUs %s\n", numa[i].subtype[0] ? " " : "", numa[i].subtype, bkm_buf_str(&b));
        bkm_buf_free(&b);
    }
    printf("caches:\n");
    for (int i = 0; i < n_c; i++) {
        printf("  L%d%s ", cache[i].level, cache[i].type == 'd' ? "d" : cache[i].type == 'i' ? "i" : "");
        print_size(cache[i].size_bytes);
        printf(" x %d (%d PU%s each)\n", cache[i].count, cache[i].pus_per_cache, cache[i].pus_per_cache == 1 ? "" : "s");
    }
    printf("cores:\n");
    for (int i = 0; i < n_pu;) {
        int j = i;
        printf("  core %d (pkg %d", pu[i].core, pu[i].pkg);
        if (pu[i].tile >= 0)
            printf(", tile %d", pu[i].tile);
        printf("): PUs ");
        for (; j < n_pu && pu[j].core == pu[i].core; j++)
            printf("%s%d%s", j > i ? "," : "", pu[j].os, pu[j].allowed ? "" : "(not allowed)");
        printf("\n");
        i = j;
    }
}

int bkm_cli_topo(int argc, char **argv)
{
    topo_cfg_t cfg = {0};
    bkm_node_profile_t *prof = NULL;
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    bkm_buf_t out;
    int rc;
    bkm_buf_init(&out);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    if ((rc = parse_args(argc, argv, &cfg)) != 0)
        return rc;
    prof = bkm_calloc(1, sizeof(*prof)); /* ~9 KiB: not on the stack */
    if (!prof) {
        rc = bkm_err_set(&err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = open_topo(&cfg, prof, &t, &err)) < 0)
        goto out;
    if (cfg.allowed) {
        bkm_cpuset_t mask;
        if ((rc = bkm_cpuset_parse(&mask, cfg.allowed, &err)) < 0 || (rc = bkm_topo_restrict(t, &mask, &err)) < 0) {
            bkm_err_prefix(&err, "--allowed '%s'", cfg.allowed);
            goto out;
        }
    }
    if (cfg.json) {
        bkm_json_w_t w;
        bkm_json_w_init(&w, &out, 1);
        if ((rc = bkm_topo_to_json(t, &w, &err)) < 0)
            goto out;
        printf("%s\n", bkm_buf_str(&out));
    } else {
        print_text(t, prof);
    }
    rc = BKM_OK;
out:
    if (rc < 0)
        fprintf(stderr, "tune topo: %s\n", err.msg);
    bkm_buf_free(&out);
    bkm_free(prof);
    bkm_topo_close(t);
    return bkm_status_exit_code(rc);
}
