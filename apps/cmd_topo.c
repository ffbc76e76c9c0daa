/* SPDX-License-Identifier: MIT */
/* `tune topo`: show a node's topology (this host, a built-in profile, a profile file, an hwloc
 * XML file or a synthetic description) for people, or as JSON. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_topofix.h"

const char bkm_cli_topo_summary[] = "show the node topology (host, knl, haswell, perlmutter-cpu, profile, XML, synthetic)";

typedef struct topo_cfg {
    bkm_topo_source_t src;
    const char *mask;
    int json;
    int cpuinfo;
} topo_cfg_t;

static const bkm_cli_opt_t topo_table[] = {
    BKM_CLI_TOPO_OPTS(topo_cfg_t, src, mask),
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(topo_cfg_t, json),
     .help = "machine-readable output (\"libomp\": libomp's view, whether it agrees)"},
    {.name = "cpuinfo", .kind = BKM_CLI_FLAG, .off = offsetof(topo_cfg_t, cpuinfo),
     .help = "print the topology as the cpuinfo file bkm gives libomp (processor,\n"
             "physical id = package hardware id, core id = core hardware id)"},
};

/* The sizes the help states are the library's limits. */
_Static_assert(BKM_TOPO_XML_MAX_BYTES == (size_t)64 << 20, "tune topo --help states 64 MiB");
_Static_assert(BKM_PROFILE_MAX_BYTES == (size_t)1024 << 10, "tune topo --help states 1024 KiB");

static const bkm_cli_cmd_spec_t topo_cmd = {
    .name = "topo",
    .usage = "tune topo [--node NAME | --profile FILE | --xml FILE | --synthetic DESC]\n"
             "          [--mask LIST] [--json | --cpuinfo]",
    .about = "Shows the topology the tuner plans with: packages, cores, hardware threads (PUs) with\n"
             "their OS numbers (what KMP_AFFINITY proclists, OMP_PLACES and taskset use), KNL tiles\n"
             "(two cores sharing an L2), NUMA nodes (including MCDRAM) and caches. The default is\n"
             "this host, restricted to this process's CPU mask as libomp sees it.\n"
             "\n"
             "For this host it also asks LLVM libomp which package/core/thread it gives every OS proc\n"
             "(a child process with KMP_AFFINITY=verbose) and compares with hwloc: libomp reads CPUID,\n"
             "which some VMs report wrongly. When they differ, every process bkm starts (tune run,\n"
             "sweeps, tune affinity verify) gets KMP_TOPOLOGY_METHOD=cpuinfo and a KMP_CPUINFO_FILE\n"
             "written from hwloc (--cpuinfo prints it), and the stored trials record it.\n"
             "BKM_LIBOMP_TOPOLOGY=auto (default) | never | always chooses when.",
    BKM_CLI_TABLE(topo_table),
    .more = "nodes: auto (this host), haswell (Cori: 2 x 16 cores x 2 HT, PU i+32 is the sibling of i),\n"
            "knl (Cori KNL 7250: 68 cores in 34 tiles x 4 HT, PUs i+68k are core i's), perlmutter-cpu\n"
            "(NERSC: 2 x 64 cores x 2 HT, PU N+128 is the sibling of N, 8 NUMA nodes, 16 L3), or a file.\n"
            "Profile format, one 'key = value' per line, '#' comments, each key once (docs/slurm.md,\n"
            "\"Node profile files\"):\n"
            "  name = mynode              (required)\n"
            "  description = free text\n"
            "  synthetic = pack:2 core:8 pu:2   (or: xml = mynode.xml, relative to the profile file)\n"
            "  isa = avx512 | avx2 | generic\n"
            "  threads = 1,2,4,8          (default sweep, at most 16)\n"
            "  blocktime = 0,200,infinite (KMP_BLOCKTIME ms, at most 8)\n"
            "  the site's batch rules: constraint (#SBATCH -C), site, qos, account, partition,\n"
            "  cpus_per_task = node|threads|cores, cpu_bind = auto|cores|threads|sockets|ldoms|none,\n"
            "  launcher = srun|mpiexec, mpi = PLUGIN|default, srun_inherits_c = yes|no,\n"
            "  prior = OMP_PLACES=threads OMP_PROC_BIND=spread, prior_source = text\n"
            "Profiles and XML files must be regular files (never a FIFO or a device); XML at most\n"
            "64 MiB, a key = value profile at most 1024 KiB.\n"
            "\n"
            "examples:\n"
            "  tune topo\n"
            "  tune topo --node knl\n"
            "  tune topo --node perlmutter-cpu --json\n"
            "  tune topo --synthetic \"pack:1 l2:2 core:2 pu:4\" --json\n"
            "\n"
            "exit codes: 0 ok, 2 bad option or unloadable topology (the message names it),\n"
            "3 hwloc could not discover this host.\n",
};

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

/* The groups of PUs that share a last-level cache, with their cores (when there is more than one
 * such cache, or it is shared by several cores). */
static void print_groups(const bkm_topo_t *t, const bkm_topo_cache_t *cache, int n_c)
{
    int n_pu = 0, n = bkm_topo_groups(t, BKM_TOPO_GROUP_LLC, NULL, 0), level = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(t, &n_pu);
    bkm_cpuset_t *g;
    if (n < 1 || (g = bkm_calloc((size_t)n, sizeof(*g))) == NULL)
        return;
    bkm_topo_groups(t, BKM_TOPO_GROUP_LLC, g, n);
    for (int i = 0; i < n_c; i++)
        if (cache[i].type != 'i' && cache[i].level > level)
            level = cache[i].level;
    printf("last-level cache groups: %d (L%d)\n", n, level);
    for (int i = 0; i < n; i++) {
        bkm_cpuset_t cores;
        bkm_buf_t a, b;
        bkm_cpuset_zero(&cores);
        for (int k = 0; k < n_pu; k++)
            if (bkm_cpuset_isset(&g[i], pu[k].os))
                bkm_cpuset_set(&cores, pu[k].core);
        bkm_buf_init(&a);
        bkm_buf_init(&b);
        bkm_cpuset_format(&cores, &a);
        bkm_cpuset_format(&g[i], &b);
        printf("  L%d group %d: cores %s, PUs %s\n", level, i, bkm_buf_str(&a), bkm_buf_str(&b));
        bkm_buf_free(&a);
        bkm_buf_free(&b);
    }
    bkm_free(g);
}

/* The node's batch rules, when the profile is a site's. */
static void print_rules(const bkm_node_profile_t *p)
{
    const bkm_batch_rules_t *r = &p->batch;
    if (!p->name[0] || strcmp(p->name, "auto") == 0)
        return;
    printf("batch rules%s%s%s:", r->site[0] ? " (" : "", r->site, r->site[0] ? ")" : "");
    if (p->slurm_constraint[0])
        printf(" -C %s", p->slurm_constraint);
    if (r->qos[0])
        printf(" -q %s", r->qos);
    if (r->account[0])
        printf(" -A %s", r->account);
    if (r->partition[0])
        printf(" -p %s", r->partition);
    printf("; %s, -c rule %s, cpu-bind %s%s%s; %s\n", bkm_batch_launcher_name(r->launcher),
           bkm_batch_c_rule_name(r->c_rule), r->cpu_bind, r->mpi[0] ? ", --mpi=" : "", r->mpi,
           r->srun_inherits_c ? "srun inherits the job's -c (Slurm before 22.05)"
                              : "srun does not inherit the job's -c (Slurm 22.05 and later): scripts set srun -c");
    if (r->prior[0])
        printf("site-recommended setting (a prior, not measured): %s%s%s%s\n", r->prior,
               r->prior_source[0] ? " (" : "", r->prior_source, r->prior_source[0] ? ")" : "");
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
        printf(" x %d (%d PU%s each)\n", cache[i].count, cache[i].pus_per_cache,
               cache[i].pus_per_cache == 1 ? "" : "s");
    }
    print_groups(t, cache, n_c);
    int stride = bkm_topo_smt_stride(t);
    if (stride > 0)
        printf("hardware threads: PU N+%d is the sibling of PU N on every core\n", stride);
    print_rules(p);
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
    const char *tmp;
    bkm_buf_t why;
    bkm_buf_init(&why);
    lc->fixed_agrees = -1;
    if (bkm_cli_topo_fix_env(&mode, &tmp, &err) < 0) {
        snprintf(lc->error, sizeof(lc->error), "%s", err.msg);
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
    if (bkm_aff_topo_fix_prepare(t, &lc->view, BKM_AFF_TOPO_FIX_ALWAYS, tmp, &fix, &err) < 0) {
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
    if (bkm_cli_opt_parse_cmd(&topo_cmd, argc, argv, &cfg, &rc))
        return rc;
    if (cfg.json && cfg.cpuinfo) {
        fprintf(stderr, "tune topo: give --json or --cpuinfo, not both\n");
        return 2;
    }
    prof = bkm_calloc(1, sizeof(*prof)); /* ~9 KiB: not on the stack */
    if (!prof) {
        rc = bkm_err_set(&err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = bkm_cli_topo_open(&cfg.src, cfg.mask, prof, &t, &err)) < 0)
        goto out;
    if (cfg.cpuinfo) {
        if ((rc = bkm_topo_cpuinfo_write(t, &out, &err)) < 0)
            goto out;
        fputs(bkm_buf_str(&out), stdout);
        rc = BKM_OK;
        goto out;
    }
    /* libomp's own view concerns this host as this process sees it. */
    int host = !cfg.src.xml && !cfg.src.synthetic && !cfg.src.profile && !cfg.mask &&
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
