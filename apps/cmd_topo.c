/* SPDX-License-Identifier: MIT */
/* `tune topo`: show a node's topology (this host, a built-in profile, a profile file, an hwloc
 * XML file or a synthetic description) for people, or as JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "cli_common.h"
#include "cli_topofix.h"

const char bkm_cli_topo_summary[] = "show the node topology (host, knl, haswell, profile, XML, synthetic)";

typedef struct topo_cfg {
    bkm_cli_topo_src_t src;
    const char *allowed;
    int json;
    int cpuinfo;
} topo_cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune topo [--node NAME | --profile FILE | --xml FILE | --synthetic DESC]\n"
            "                 [--allowed LIST] [--json | --cpuinfo]\n"
            "\n"
            "Shows the topology the tuner plans with: packages, cores, hardware threads (PUs) with\n"
            "their OS numbers (what KMP_AFFINITY proclists, OMP_PLACES and taskset use), KNL tiles\n"
            "(two cores sharing an L2), NUMA nodes (including MCDRAM) and caches. The default is\n"
            "this host, restricted to this process's CPU mask as libomp sees it.\n"
            "\n"
            "For this host it also asks LLVM libomp which package/core/thread it gives every OS proc\n"
            "(a child process with KMP_AFFINITY=verbose) and compares with hwloc: libomp reads CPUID,\n"
            "which some VMs report wrongly. When they differ, every process bkm starts (tune run,\n"
            "sweeps, tune affinity verify) gets KMP_TOPOLOGY_METHOD=cpuinfo and a KMP_CPUINFO_FILE\n"
            "written from hwloc (--cpuinfo prints it), and the stored trials record it.\n"
            "BKM_LIBOMP_TOPOLOGY=auto (default) | never | always chooses when.\n"
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
            "  --json            machine-readable output (\"libomp\": libomp's view, whether it agrees)\n"
            "  --cpuinfo         print the topology as the cpuinfo file bkm gives libomp (processor,\n"
            "                    physical id = package hardware id, core id = core hardware id)\n"
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
        if (strcmp(a, "--json") == 0 || strcmp(a, "--cpuinfo") == 0) {
            *(a[2] == 'j' ? &c->json : &c->cpuinfo) = 1;
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
    if (c->json && c->cpuinfo) {
        fprintf(stderr, "tune topo: give --json or --cpuinfo, not both\n");
        return 2;
    }
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
        if (pu[i].pkg_id != pu[i].pkg || pu[i].core_id != pu[i].core)
            printf(", hardware ids: package %d core %d", pu[i].pkg_id, pu[i].core_id);
        printf("): PUs ");
        for (; j < n_pu && pu[j].core == pu[i].core; j++)
            printf("%s%d%s", j > i ? "," : "", pu[j].os, pu[j].allowed ? "" : "(not allowed)");
        printf("\n");
        i = j;
    }
}

/* libomp's own view of this host compared with hwloc's (@p t); when they differ, libomp is asked
 * again with the correction bkm applies, to show that it then agrees. Text or one JSON member. */
typedef struct libomp_check {
    int ran;              /* the view was taken */
    char error[512];      /* why it could not be */
    bkm_aff_libomp_view_t view;
    int agrees;
    int unstable;         /* agrees, but from legacy APIC ids on a VM guest */
    char why[1024];
    int fixed_agrees;     /* -1 not tried */
    char fixed_why[1024];
    char mode[16];
} libomp_check_t;

static void libomp_check_run(const bkm_topo_t *t, libomp_check_t *lc)
{
    bkm_err_t err = {0};
    bkm_aff_topo_fix_t fix = {0};
    bkm_aff_libomp_view_t again = {0};
    bkm_aff_topo_fix_mode_t mode = BKM_AFF_TOPO_FIX_AUTO;
    const char *m = getenv("BKM_LIBOMP_TOPOLOGY");
    const char *tmp = getenv("TMPDIR");
    bkm_buf_t why;
    bkm_buf_init(&why);
    lc->fixed_agrees = -1;
    if (m && *m && bkm_aff_topo_fix_mode_parse(m, &mode, &err) < 0) {
        snprintf(lc->error, sizeof(lc->error), "BKM_LIBOMP_TOPOLOGY: %s", err.msg);
        goto out;
    }
    snprintf(lc->mode, sizeof(lc->mode), "%s", bkm_aff_topo_fix_mode_name(mode));
    if (bkm_cli_libomp_view(NULL, &lc->view, &err) < 0) {
        snprintf(lc->error, sizeof(lc->error), "%s", err.msg);
        goto out;
    }
    lc->ran = 1;
    lc->agrees = bkm_aff_libomp_view_compare(t, &lc->view, &why, &err) == BKM_OK;
    snprintf(lc->why, sizeof(lc->why), "%s", bkm_buf_str(&why));
    lc->unstable = lc->agrees && lc->view.vm_guest && strstr(lc->view.method, "legacy APIC") != NULL;
    if (lc->agrees && !lc->unstable && mode != BKM_AFF_TOPO_FIX_ALWAYS)
        goto out;
    /* What the processes bkm starts will see. */
    if (bkm_aff_topo_fix_prepare(t, &lc->view, BKM_AFF_TOPO_FIX_ALWAYS, tmp && *tmp ? tmp : "/tmp", &fix, &err) < 0) {
        snprintf(lc->fixed_why, sizeof(lc->fixed_why), "%s", err.msg);
        goto out;
    }
    char *extra[3] = {fix.env_method, fix.env_file, NULL};
    if (bkm_cli_libomp_view(extra, &again, &err) < 0) {
        snprintf(lc->fixed_why, sizeof(lc->fixed_why), "%s", err.msg);
        lc->fixed_agrees = 0;
        goto out;
    }
    why.len = 0;
    if (why.data)
        why.data[0] = '\0';
    lc->fixed_agrees = bkm_aff_libomp_view_compare(t, &again, &why, &err) == BKM_OK;
    snprintf(lc->fixed_why, sizeof(lc->fixed_why), "%s", bkm_buf_str(&why));
out:
    bkm_aff_topo_fix_release(&fix);
    bkm_aff_libomp_view_free(&again);
    bkm_buf_free(&why);
}

static void libomp_check_text(const libomp_check_t *lc)
{
    if (!lc->ran) {
        printf("libomp: its own view could not be read: %s\n", lc->error);
        return;
    }
    printf("libomp (%s): %s: %s\n", lc->view.method[0] ? lc->view.method : "method not printed", lc->view.shape,
           lc->agrees ? "agrees with hwloc" : "DISAGREES with hwloc");
    if (!lc->agrees)
        printf("  %s\n", lc->why);
    if (lc->unstable)
        printf("  but from legacy APIC ids on a VM guest: they follow the physical cores the vCPUs run on and\n"
               "  can change at any time\n");
    if (lc->fixed_agrees < 0)
        return;
    if (strcmp(lc->mode, "never") == 0)
        printf("  not corrected (BKM_LIBOMP_TOPOLOGY=never): the processes bkm starts keep libomp's view\n");
    else
        printf("  corrected: every OpenMP process bkm starts gets KMP_TOPOLOGY_METHOD=cpuinfo and a\n"
               "  KMP_CPUINFO_FILE written from hwloc (tune topo --cpuinfo); trials record it\n");
    printf("  with that correction libomp %s\n", lc->fixed_agrees ? "agrees with hwloc" : "STILL DISAGREES:");
    if (!lc->fixed_agrees)
        printf("  %s\n", lc->fixed_why);
}

static void libomp_check_json(const libomp_check_t *lc, bkm_json_w_t *w)
{
    bkm_json_key(w, "libomp");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "checked"), bkm_json_bool(w, lc->ran);
    if (!lc->ran) {
        bkm_json_key(w, "error"), bkm_json_str(w, lc->error);
        bkm_json_obj_end(w);
        return;
    }
    bkm_json_key(w, "view");
    bkm_aff_libomp_view_to_json(&lc->view, w, NULL);
    bkm_json_key(w, "agrees"), bkm_json_bool(w, lc->agrees);
    bkm_json_key(w, "difference"), bkm_json_str(w, lc->why);
    bkm_json_key(w, "unstable"), bkm_json_bool(w, lc->unstable);
    bkm_json_key(w, "mode"), bkm_json_str(w, lc->mode);
    bkm_json_key(w, "corrected"), bkm_json_bool(w, lc->fixed_agrees >= 0 && strcmp(lc->mode, "never") != 0);
    if (lc->fixed_agrees >= 0) {
        bkm_json_key(w, "corrected_agrees"), bkm_json_bool(w, lc->fixed_agrees);
        if (!lc->fixed_agrees)
            bkm_json_key(w, "corrected_difference"), bkm_json_str(w, lc->fixed_why);
    }
    bkm_json_obj_end(w);
}

int bkm_cli_topo(int argc, char **argv)
{
    topo_cfg_t cfg = {0};
    bkm_node_profile_t *prof = NULL;
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    bkm_buf_t out;
    libomp_check_t lc;
    int rc;
    memset(&lc, 0, sizeof(lc));
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
    if (cfg.cpuinfo) {
        if ((rc = bkm_topo_cpuinfo_write(t, &out, &err)) < 0)
            goto out;
        fputs(bkm_buf_str(&out), stdout);
        rc = BKM_OK;
        goto out;
    }
    /* libomp's own view concerns this host as this process sees it. */
    int host = !cfg.src.xml && !cfg.src.synthetic && !cfg.src.profile && !cfg.allowed &&
               (!cfg.src.node || strcmp(cfg.src.node, "auto") == 0);
    if (host) {
        fflush(stdout);
        libomp_check_run(t, &lc);
    }
    if (cfg.json) {
        bkm_json_w_t w;
        bkm_json_w_init(&w, &out, 1);
        if ((rc = bkm_topo_to_json(t, &w, &err)) < 0)
            goto out;
        if (host) {
            /* bkm_topo_to_json wrote one object: reopen it for the "libomp" member. */
            while (out.len > 0 && out.data[out.len - 1] != '}')
                out.len--;
            if (out.len > 0) {
                out.len--;
                out.data[out.len] = '\0';
                while (out.len > 0 && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == ' '))
                    out.data[--out.len] = '\0';
                bkm_buf_t tail;
                bkm_json_w_t w2;
                bkm_buf_init(&tail);
                bkm_json_w_init(&w2, &tail, 1);
                w2.depth = 1;
                w2.need_comma[1] = 1;
                libomp_check_json(&lc, &w2);
                bkm_buf_printf(&out, "%s\n}", bkm_buf_str(&tail));
                bkm_buf_free(&tail);
            }
        }
        printf("%s\n", bkm_buf_str(&out));
    } else {
        print_text(t, prof);
        if (host)
            libomp_check_text(&lc);
    }
    rc = BKM_OK;
out:
    if (rc < 0)
        fprintf(stderr, "tune topo: %s\n", err.msg);
    bkm_buf_free(&out);
    bkm_free(prof);
    bkm_aff_libomp_view_free(&lc.view);
    bkm_topo_close(t);
    return bkm_status_exit_code(rc);
}
