/* SPDX-License-Identifier: MIT */
/* Differential test: the affinity planner (`tune affinity explain --json`) against the real LLVM
 * libomp 14 run on a fake topology (shim.c + probe.c + KMP_CPUINFO_FILE).
 *
 * usage:
 *   libomp_diff cpuinfo SOCKETS CORES THREADS linear|cori FILE
 *       write a /proc/cpuinfo-style file for libomp's cpuinfo topology method
 *   libomp_diff run --shim SO --probe EXE --tune EXE [--cases N] [--seed S] [--verbose]
 *       run N seeded random cases (default 300, or $BKM_DIFF_CASES); compare thread -> cpus maps
 *   libomp_diff grid perlmutter --shim SO --probe EXE --tune EXE [--all-threads] [--verbose]
 *       every setting of the chiplet grid (compact/scatter/balanced, spread/close over threads,
 *       cores, sockets, ll_caches, numa_domains and the explicit L3/NUMA place lists, KMP_HW_SUBSET
 *       with its LL layer) on the Perlmutter CPU numbering (socket 0 = cores 0-63, sibling of N is
 *       N+128), for the whole node and for rank masks of 2, 8 and 16 ranks per node, at a spread of
 *       team sizes from 1 to 256 (--all-threads or $BKM_DIFF_ALL_THREADS=1: every size 1..256); the
 *       planner plans on the built-in perlmutter-cpu profile
 *
 * Exit status of `run`: 0 when every case matched or was rejected by the planner as unsupported
 * (exit 2, counted and listed separately), 1 on any mismatch or harness error, 2 on bad usage.
 * Test code: it reads BKM_DIFF_CASES, BKM_DIFF_ALL_THREADS and TMPDIR from the environment. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/common.h"
#include "../diff_rng.h"

extern char **environ;

#define DIFF_MAX_ARGS 24
#define DIFF_MAX_ENV 512
#define DIFF_CHILD_TIMEOUT_S 60

/* ---- Fake topology -------------------------------------------------------------------------- */

#define DIFF_MAX_SOCKETS 4
#define DIFF_MAX_CORES 20

/* Hardware ids of the packages and cores (what libomp orders by, issue 8). */
enum {
    IDS_PLAIN = 0, /* package s has id s, its core c id c */
    IDS_PERMUTED,  /* package and core ids permuted and non-contiguous (the test writes the file) */
    IDS_DIES       /* packages of D dies whose core ids repeat across the dies, as Linux reports on
                      some multi-die CPUs; libomp gets the cpuinfo file bkm writes (tune topo
                      --cpuinfo), which must keep the cores apart and in die-major order */
};

typedef struct topo_desc {
    int sockets, cores, threads;
    int cori; /* 1: PU of (s, c, t) is t*S*C + s*C + c (Cori); 0: ((s*C)+c)*T + t (linear) */
    int ids;  /* IDS_* */
    int dies; /* dies per package (IDS_DIES), else 1; divides cores */
    int pkg_id[DIFF_MAX_SOCKETS];
    int core_id[DIFF_MAX_SOCKETS][DIFF_MAX_CORES];
} topo_desc_t;

static int topo_pus(const topo_desc_t *t)
{
    return t->sockets * t->cores * t->threads;
}

static int topo_os(const topo_desc_t *t, int s, int c, int h)
{
    if (t->cori)
        return h * t->sockets * t->cores + s * t->cores + c;
    return (s * t->cores + c) * t->threads + h;
}

/** Plain ids: package s is s, core c of each package is c (at most DIFF_MAX_* of them; larger
 *  topologies, written by the `cpuinfo` subcommand, have plain ids only). */
static void topo_plain_ids(topo_desc_t *t)
{
    t->ids = IDS_PLAIN;
    t->dies = 1;
    for (int s = 0; s < t->sockets; s++) {
        t->pkg_id[s] = s;
        for (int c = 0; c < t->cores; c++)
            t->core_id[s][c] = c;
    }
}

/** @p n distinct values of 0..range-1 in random order (n <= range <= 64). */
static void rng_distinct(rng_t *r, int n, int range, int *out)
{
    int pool[64];
    for (int i = 0; i < range; i++)
        pool[i] = i;
    for (int i = 0; i < n; i++) {
        int j = rng_int(r, i, range - 1), tmp = pool[i];
        pool[i] = pool[j];
        pool[j] = tmp;
        out[i] = pool[i];
    }
}

/** Draw the hardware ids of @p t (IDS_PLAIN 40%, IDS_PERMUTED 35%, IDS_DIES 25% when the core
 *  count has a divisor 2..4). */
static void topo_gen_ids(rng_t *r, topo_desc_t *t)
{
    int pct = rng_int(r, 0, 99), div[3], n_div = 0;
    topo_plain_ids(t);
    for (int d = 2; d <= 4; d++)
        if (t->cores % d == 0 && t->cores / d >= 1)
            div[n_div++] = d;
    if (pct < 40)
        return;
    t->ids = pct < 75 || n_div == 0 ? IDS_PERMUTED : IDS_DIES;
    rng_distinct(r, t->sockets, 2 * t->sockets + 3, t->pkg_id);
    if (t->ids == IDS_PERMUTED) {
        int same = rng_pct(r, 50); /* every package the same ids, or each its own */
        for (int s = 0; s < t->sockets; s++) {
            if (same && s > 0)
                memcpy(t->core_id[s], t->core_id[0], sizeof(t->core_id[0]));
            else
                rng_distinct(r, t->cores, t->cores + 3 + t->cores / 2 < 64 ? t->cores + 3 + t->cores / 2 : 64,
                             t->core_id[s]);
        }
        return;
    }
    t->dies = div[rng_int(r, 0, n_div - 1)];
    int k = t->cores / t->dies, per_die[DIFF_MAX_CORES];
    rng_distinct(r, k, 2 * k + 1, per_die);
    for (int s = 0; s < t->sockets; s++)
        for (int c = 0; c < t->cores; c++)
            t->core_id[s][c] = per_die[c % k];
}

static const char *topo_ids_name(const topo_desc_t *t)
{
    return t->ids == IDS_PLAIN ? "plain ids" : t->ids == IDS_PERMUTED ? "permuted ids" : "dies";
}

/** Write the cpuinfo file libomp's cpuinfo method reads: processor / physical id / core id. */
static int topo_write_cpuinfo(const topo_desc_t *t, const char *path, bkm_err_t *err)
{
    int rc = BKM_OK;
    FILE *f = fopen(path, "w");
    if (!f)
        return bkm_err_set(err, BKM_EIO, "cannot write '%s': %s", path, strerror(errno));
    for (int os = 0; os < topo_pus(t); os++) {
        for (int s = 0; s < t->sockets; s++)
            for (int c = 0; c < t->cores; c++)
                for (int h = 0; h < t->threads; h++)
                    if (topo_os(t, s, c, h) == os)
                        fprintf(f, "processor\t: %d\nphysical id\t: %d\ncore id\t\t: %d\n\n", os,
                                t->ids == IDS_PLAIN ? s : t->pkg_id[s], t->ids == IDS_PLAIN ? c : t->core_id[s][c]);
    }
    if (fclose(f) != 0)
        rc = bkm_err_set(err, BKM_EIO, "cannot write '%s'", path);
    return rc;
}

/** hwloc synthetic description with the same OS numbering ("pack:2 core:16 pu:2(indexes=..)"). */
static void topo_synthetic(const topo_desc_t *t, bkm_buf_t *b)
{
    if (t->ids == IDS_PLAIN) {
        bkm_buf_printf(b, "pack:%d core:%d pu:%d", t->sockets, t->cores, t->threads);
    } else {
        /* hwloc keeps these as the os_index of the packages and cores: bkm's hardware ids. */
        bkm_buf_printf(b, "pack:%d(indexes=", t->sockets);
        for (int s = 0; s < t->sockets; s++)
            bkm_buf_printf(b, s ? ",%d" : "%d", t->pkg_id[s]);
        bkm_buf_puts(b, ")");
        if (t->dies > 1)
            bkm_buf_printf(b, " die:%d", t->dies);
        bkm_buf_printf(b, " core:%d(indexes=", t->cores / t->dies);
        for (int s = 0; s < t->sockets; s++)
            for (int c = 0; c < t->cores; c++)
                bkm_buf_printf(b, s || c ? ",%d" : "%d", t->core_id[s][c]);
        bkm_buf_printf(b, ") pu:%d", t->threads);
    }
    if (!t->cori)
        return;
    bkm_buf_puts(b, "(indexes=");
    int first = 1;
    for (int s = 0; s < t->sockets; s++)
        for (int c = 0; c < t->cores; c++)
            for (int h = 0; h < t->threads; h++) {
                bkm_buf_printf(b, first ? "%d" : ",%d", topo_os(t, s, c, h));
                first = 0;
            }
    bkm_buf_puts(b, ")");
}

/* ---- One random case ------------------------------------------------------------------------ */

typedef struct diff_case {
    int id;
    topo_desc_t topo;
    int threads;
    char mask[2048];        /* initial process mask, "" = all PUs */
    char kmp_affinity[512]; /* "" = unset */
    char hw_subset[64];
    char places[256];
    char proc_bind[32];
    const char *node;       /* the planner plans on this built-in profile instead of the synthetic */
} diff_case_t;

static const char *const g_grans[] = {"fine", "thread", "core", "socket"};

static void gen_mask(rng_t *r, diff_case_t *c)
{
    int n = topo_pus(&c->topo);
    bkm_cpuset_t set;
    bkm_cpuset_zero(&set);
    int how = rng_int(r, 0, 2);
    if (how == 0) { /* a range of OS ids, as taskset -c a-b */
        int a = rng_int(r, 0, n - 1), b = rng_int(r, a, n - 1);
        for (int i = a; i <= b; i++)
            bkm_cpuset_set(&set, i);
    } else if (how == 1) { /* whole sockets, as srun --cpu-bind=sockets */
        for (int s = 0; s < c->topo.sockets; s++)
            if (rng_pct(r, 50) || (s == c->topo.sockets - 1 && bkm_cpuset_is_empty(&set)))
                for (int k = 0; k < c->topo.cores; k++)
                    for (int h = 0; h < c->topo.threads; h++)
                        bkm_cpuset_set(&set, topo_os(&c->topo, s, k, h));
    } else { /* any PUs */
        for (int i = 0; i < n; i++)
            if (rng_pct(r, 60))
                bkm_cpuset_set(&set, i);
        if (bkm_cpuset_is_empty(&set))
            bkm_cpuset_set(&set, rng_int(r, 0, n - 1));
    }
    bkm_buf_t b = {0};
    bkm_cpuset_format(&set, &b);
    snprintf(c->mask, sizeof(c->mask), "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
}

static void gen_hw_subset(rng_t *r, diff_case_t *c)
{
    const int count[3] = {c->topo.sockets, c->topo.cores, c->topo.threads};
    const char *const name[3] = {"s", "c", "t"};
    int used[3] = {0, 0, 0}, n_used = 0;
    for (int i = 0; i < 3; i++)
        if (rng_pct(r, 60)) {
            used[i] = 1;
            n_used++;
        }
    if (n_used == 0)
        used[rng_int(r, 0, 2)] = 1;
    int order[3] = {0, 1, 2};
    if (rng_pct(r, 20)) { /* items may come in any order */
        int a = rng_int(r, 0, 2), b = rng_int(r, 0, 2), tmp = order[a];
        order[a] = order[b];
        order[b] = tmp;
    }
    size_t len = 0;
    for (int k = 0; k < 3; k++) {
        int i = order[k];
        if (!used[i])
            continue;
        int num = rng_int(r, 1, count[i]);
        int off = rng_pct(r, 25) ? rng_int(r, 0, count[i] - num) : 0;
        len += (size_t)snprintf(c->hw_subset + len, sizeof(c->hw_subset) - len, "%s%d%s", len ? "," : "",
                                num, name[i]);
        if (off > 0)
            len += (size_t)snprintf(c->hw_subset + len, sizeof(c->hw_subset) - len, "@%d", off);
    }
}

static void gen_proclist(rng_t *r, const diff_case_t *c, char *out, size_t n)
{
    int pus = topo_pus(&c->topo);
    int items = rng_int(r, 1, 6);
    size_t len = 0;
    for (int i = 0; i < items && len + 32 < n; i++) {
        const char *sep = i ? "," : "";
        int a = rng_int(r, 0, pus - 1);
        int kind = rng_int(r, 0, 4);
        if (kind <= 2) {
            len += (size_t)snprintf(out + len, n - len, "%s%d", sep, a);
        } else if (kind == 3) {
            int b = rng_int(r, a, pus - 1 < a + 6 ? pus - 1 : a + 6);
            len += (size_t)snprintf(out + len, n - len, "%s%d-%d", sep, a, b);
        } else {
            int b = rng_int(r, 0, pus - 1);
            if (b == a)
                len += (size_t)snprintf(out + len, n - len, "%s{%d}", sep, a);
            else
                len += (size_t)snprintf(out + len, n - len, "%s{%d,%d}", sep, a < b ? a : b, a < b ? b : a);
        }
    }
}

static void gen_kmp_affinity(rng_t *r, diff_case_t *c)
{
    static const char *const types[] = {"compact", "scatter", "balanced", "logical", "physical", "none",
                                        "explicit"};
    const char *type = types[rng_int(r, 0, 6)];
    char item[8][160];
    int n = 0;
    if (rng_pct(r, 70))
        snprintf(item[n++], sizeof(item[0]), "granularity=%s", g_grans[rng_int(r, 0, 3)]);
    if (strcmp(type, "explicit") == 0) {
        char pl[128];
        gen_proclist(r, c, pl, sizeof(pl));
        snprintf(item[n++], sizeof(item[0]), "proclist=[%s]", pl);
    }
    snprintf(item[n++], sizeof(item[0]), "%s", type);
    int n_ints = 0;
    if (!strcmp(type, "compact") || !strcmp(type, "scatter"))
        n_ints = rng_int(r, 0, 2);
    else if (!strcmp(type, "logical") || !strcmp(type, "physical"))
        n_ints = rng_int(r, 0, 1);
    int pus = topo_pus(&c->topo);
    if (n_ints == 2) {
        snprintf(item[n++], sizeof(item[0]), "%d", rng_int(r, 0, 4));
        snprintf(item[n++], sizeof(item[0]), "%d", rng_int(r, 0, pus + pus / 2));
    } else if (n_ints == 1) {
        int logical = !strcmp(type, "logical") || !strcmp(type, "physical");
        snprintf(item[n++], sizeof(item[0]), "%d", logical ? rng_int(r, 0, pus) : rng_int(r, 0, 4));
    }
    int dups = rng_int(r, 0, 3);
    if (dups == 1)
        snprintf(item[n++], sizeof(item[0]), "dups");
    else if (dups == 2)
        snprintf(item[n++], sizeof(item[0]), "nodups");
    /* The integers keep their relative order (first = permute); modifiers may move around. */
    if (rng_pct(r, 25) && n >= 2) {
        int a = rng_int(r, 0, n - 1);
        if (!(item[0][0] >= '0' && item[0][0] <= '9') && !(item[a][0] >= '0' && item[a][0] <= '9')) {
            char tmp[160];
            memcpy(tmp, item[0], sizeof(tmp));
            memcpy(item[0], item[a], sizeof(tmp));
            memcpy(item[a], tmp, sizeof(tmp));
        }
    }
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(c->kmp_affinity + len, sizeof(c->kmp_affinity) - len, "%s%s", i ? "," : "",
                                item[i]);
}

static void gen_omp(rng_t *r, diff_case_t *c)
{
    static const char *const binds[] = {"true", "false", "close", "spread", "master", "primary"};
    static const char *const kinds[] = {"threads", "cores", "sockets"};
    int pus = topo_pus(&c->topo);
    int have_places = rng_pct(r, 80), have_bind = rng_pct(r, 80);
    if (!have_places && !have_bind)
        have_bind = 1;
    if (have_places) {
        if (rng_pct(r, 75)) {
            const char *k = kinds[rng_int(r, 0, 2)];
            if (rng_pct(r, 30))
                snprintf(c->places, sizeof(c->places), "%s(%d)", k, rng_int(r, 1, 8));
            else
                snprintf(c->places, sizeof(c->places), "%s", k);
        } else { /* explicit places {start:len[:stride]} or {a,b} */
            int items = rng_int(r, 1, 4);
            size_t len = 0;
            for (int i = 0; i < items; i++) {
                int a = rng_int(r, 0, pus - 1);
                int l = rng_int(r, 1, 4);
                if (a + l > pus)
                    l = pus - a;
                if (rng_pct(r, 50))
                    len += (size_t)snprintf(c->places + len, sizeof(c->places) - len, "%s{%d:%d}",
                                            i ? "," : "", a, l);
                else
                    len += (size_t)snprintf(c->places + len, sizeof(c->places) - len, "%s{%d}",
                                            i ? "," : "", a);
            }
        }
    }
    if (have_bind)
        snprintf(c->proc_bind, sizeof(c->proc_bind), "%s", binds[rng_int(r, 0, 5)]);
    if (rng_pct(r, 15)) /* a KMP_AFFINITY without type contributes only its modifiers */
        snprintf(c->kmp_affinity, sizeof(c->kmp_affinity), "granularity=%s", g_grans[rng_int(r, 0, 3)]);
}

/* Replace (from a stream of its own, so that a seed keeps its earlier cases otherwise) a place kind
 * by ll_caches or numa_domains, a granularity by ll_cache, l3_cache or numa_domain, and a socket
 * item of KMP_HW_SUBSET by its LL layer: names libomp 14 maps onto the socket or refuses. */
static void gen_chiplet_names(const rng_t *r, diff_case_t *c)
{
    static const char *const kinds[] = {"ll_caches", "numa_domains"};
    static const char *const grans[] = {"ll_cache", "l3_cache", "numa_domain"};
    rng_t x = {r->s ^ 0x9E3779B97F4A7C15ull};
    char tmp[512], *g;
    if (c->places[0] >= 'a' && c->places[0] <= 'z' && rng_pct(&x, 35)) {
        const char *paren = strchr(c->places, '(');
        snprintf(tmp, sizeof tmp, "%s%s", kinds[rng_int(&x, 0, 1)], paren ? paren : "");
        snprintf(c->places, sizeof c->places, "%s", tmp);
    }
    if ((g = strstr(c->kmp_affinity, "granularity=")) != NULL && rng_pct(&x, 25)) {
        size_t head = (size_t)(g - c->kmp_affinity) + strlen("granularity="), n = strcspn(c->kmp_affinity + head, ",");
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)head, c->kmp_affinity, grans[rng_int(&x, 0, 2)],
                 c->kmp_affinity + head + n);
        snprintf(c->kmp_affinity, sizeof c->kmp_affinity, "%s", tmp);
    }
    if ((g = strchr(c->hw_subset, 's')) != NULL && rng_pct(&x, 40)) {
        size_t at = (size_t)(g - c->hw_subset);
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)at, c->hw_subset, rng_pct(&x, 50) ? "ll" : "LLC", g + 1);
        snprintf(c->hw_subset, sizeof c->hw_subset, "%s", tmp);
    }
}

static void gen_case(rng_t *r, int id, diff_case_t *c)
{
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->topo.sockets = rng_int(r, 1, 4);
    c->topo.cores = rng_int(r, 1, 20);
    c->topo.threads = rng_int(r, 1, 4);
    c->topo.cori = rng_pct(r, 50);
    {
        /* The ids come from a stream of their own, so a seed still gives the cases it gave before
         * the ids existed, now on topologies with hardware ids out of OS order. */
        rng_t ri = {r->s ^ 0xD1B54A32D192ED03ull};
        topo_gen_ids(&ri, &c->topo);
    }
    int pus = topo_pus(&c->topo);
    int how = rng_int(r, 0, 9);
    if (how < 3)
        c->threads = rng_int(r, 1, pus < 8 ? pus : 8);
    else if (how < 7)
        c->threads = rng_int(r, 1, pus);
    else if (how < 8)
        c->threads = rng_pct(r, 50) ? c->topo.sockets * c->topo.cores : pus;
    else
        c->threads = rng_int(r, 1, 2 * pus);
    if (rng_pct(r, 20))
        gen_mask(r, c);
    if (rng_pct(r, 15))
        gen_hw_subset(r, c);
    if (rng_pct(r, 75))
        gen_kmp_affinity(r, c);
    else
        gen_omp(r, c);
    gen_chiplet_names(r, c);
}

static void case_describe(const diff_case_t *c, bkm_buf_t *b)
{
    bkm_buf_printf(b, "case %d: topology %dx%dx%d %s, %s", c->id, c->topo.sockets, c->topo.cores, c->topo.threads,
                   c->topo.cori ? "cori" : "linear", topo_ids_name(&c->topo));
    if (c->topo.ids != IDS_PLAIN) {
        bkm_buf_puts(b, " (package");
        for (int s = 0; s < c->topo.sockets; s++)
            bkm_buf_printf(b, "%s%d", s ? "," : " ", c->topo.pkg_id[s]);
        if (c->topo.dies > 1)
            bkm_buf_printf(b, "; %d dies", c->topo.dies);
        bkm_buf_puts(b, "; core");
        for (int k = 0; k < c->topo.cores; k++)
            bkm_buf_printf(b, "%s%d", k ? "," : " ", c->topo.core_id[0][k]);
        bkm_buf_puts(b, "...)");
    }
    bkm_buf_printf(b, ", threads %d", c->threads);
    if (c->mask[0])
        bkm_buf_printf(b, ", mask %s", c->mask);
    if (c->kmp_affinity[0])
        bkm_buf_printf(b, ", KMP_AFFINITY=%s", c->kmp_affinity);
    if (c->hw_subset[0])
        bkm_buf_printf(b, ", KMP_HW_SUBSET=%s", c->hw_subset);
    if (c->places[0])
        bkm_buf_printf(b, ", OMP_PLACES=%s", c->places);
    if (c->proc_bind[0])
        bkm_buf_printf(b, ", OMP_PROC_BIND=%s", c->proc_bind);
}

/* ---- Running a child ------------------------------------------------------------------------ */

typedef struct child_out {
    int status;      /* exit code, or 128+signal */
    bkm_buf_t out;   /* stdout */
    bkm_buf_t errt;  /* stderr */
} child_out_t;

static int slurp(const char *path, bkm_buf_t *b)
{
    char chunk[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return BKM_EIO;
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        bkm_buf_append(b, chunk, n);
    fclose(f);
    return b->oom ? BKM_ENOMEM : BKM_OK;
}

/** Run argv with envp; stdout/stderr captured through files in @p dir. The child gets a
 *  DIFF_CHILD_TIMEOUT_S alarm that survives exec, so a hung runtime cannot stall the test. */
static int run_child(char *const argv[], char *const envp[], const char *dir, child_out_t *res,
                     bkm_err_t *err)
{
    char out_path[4096], err_path[4096];
    snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
    pid_t pid = fork();
    if (pid < 0)
        return bkm_err_set(err, BKM_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(125);
        alarm(DIFF_CHILD_TIMEOUT_S);
        execve(argv[0], argv, envp);
        _exit(126);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return bkm_err_set(err, BKM_EIO, "waitpid: %s", strerror(errno));
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    slurp(out_path, &res->out);
    slurp(err_path, &res->errt);
    return BKM_OK;
}

static void child_free(child_out_t *c)
{
    bkm_buf_free(&c->out);
    bkm_buf_free(&c->errt);
}

/** Environment without any variable the runtime or the shim reads, plus @p extra. */
static int build_env(char **env, int max, char **extra, int n_extra)
{
    int n = 0;
    for (char **e = environ; *e && n < max - n_extra - 1; e++) {
        if (!strncmp(*e, "KMP_", 4) || !strncmp(*e, "OMP_", 4) || !strncmp(*e, "GOMP_", 5) ||
            !strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "BKM_FAKE_", 9))
            continue;
        env[n++] = *e;
    }
    for (int i = 0; i < n_extra; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    return n;
}

/* ---- Comparing plans ------------------------------------------------------------------------ */

typedef struct plan {
    int n;
    bkm_cpuset_t *cpus; /* [n], indexed by omp thread number */
} plan_t;

static void plan_free(plan_t *p)
{
    bkm_free(p->cpus);
    p->cpus = NULL;
    p->n = 0;
}

/** Read {"threads":N,...,"plan":[{"thread":t,"cpus":[...]},...]} (extra members ignored). */
static int plan_from_json(const char *text, plan_t *p, bkm_err_t *err)
{
    bkm_json_t *root = NULL;
    int rc = bkm_json_parse(text, &root, err);
    if (rc < 0)
        goto out;
    const bkm_json_t *arr = bkm_json_get(root, "plan");
    double n = bkm_json_get_num(root, "threads", -1);
    if (!arr || arr->type != BKM_JSON_ARR || n < 1 || n > 100000 || (size_t)n != arr->n_children) {
        rc = bkm_err_set(err, BKM_EINVAL, "no \"threads\" matching a \"plan\" array in the JSON");
        goto out;
    }
    p->n = (int)n;
    p->cpus = bkm_calloc((size_t)p->n, sizeof(*p->cpus));
    if (!p->cpus) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    for (const bkm_json_t *e = arr->child; e; e = e->next) {
        double t = bkm_json_get_num(e, "thread", -1);
        const bkm_json_t *cpus = bkm_json_get(e, "cpus");
        if (t < 0 || t >= p->n || !cpus || cpus->type != BKM_JSON_ARR) {
            rc = bkm_err_set(err, BKM_EINVAL, "plan entry without a valid \"thread\"/\"cpus\"");
            goto out;
        }
        for (const bkm_json_t *c = cpus->child; c; c = c->next)
            if (c->type != BKM_JSON_NUM || bkm_cpuset_set(&p->cpus[(int)t], (int)c->num) < 0) {
                rc = bkm_err_set(err, BKM_EINVAL, "bad cpu in the plan of thread %d", (int)t);
                goto out;
            }
    }
out:
    bkm_json_free(root);
    if (rc < 0)
        plan_free(p);
    return rc;
}

/** "T0-1:{0,32} T2:{1}" with consecutive threads on equal sets folded. */
static void plan_format(const plan_t *p, bkm_buf_t *b)
{
    for (int t = 0; t < p->n;) {
        int u = t;
        while (u + 1 < p->n && bkm_cpuset_equal(&p->cpus[u + 1], &p->cpus[t]))
            u++;
        if (u > t)
            bkm_buf_printf(b, "%sT%d-%d:{", t ? " " : "", t, u);
        else
            bkm_buf_printf(b, "%sT%d:{", t ? " " : "", t);
        bkm_cpuset_format(&p->cpus[t], b);
        bkm_buf_puts(b, "}");
        t = u + 1;
    }
}

/* ---- The run -------------------------------------------------------------------------------- */

typedef struct diff_opts {
    const char *shim, *probe, *tune;
    int cases;
    uint64_t seed;
    int verbose;
} diff_opts_t;

typedef struct diff_stats {
    int passed, failed, unsupported, harness, order_dependent;
} diff_stats_t;

static void print_repro(const diff_case_t *c, const char *cpuinfo, const char *synth)
{
    printf("  libomp : BKM_FAKE_NCPUS=%d%s%s KMP_CPUINFO_FILE=%s LD_PRELOAD=<shim>", topo_pus(&c->topo),
           c->mask[0] ? " BKM_FAKE_MASK=" : "", c->mask, cpuinfo);
    if (c->kmp_affinity[0])
        printf(" KMP_AFFINITY='%s'", c->kmp_affinity);
    if (c->hw_subset[0])
        printf(" KMP_HW_SUBSET='%s'", c->hw_subset);
    if (c->places[0])
        printf(" OMP_PLACES='%s'", c->places);
    if (c->proc_bind[0])
        printf(" OMP_PROC_BIND='%s'", c->proc_bind);
    printf(" <probe> %d\n", c->threads);
    if (c->node)
        printf("  planner: tune affinity explain --node %s --threads %d", c->node, c->threads);
    else
        printf("  planner: tune affinity explain --synthetic '%s' --threads %d", synth, c->threads);
    if (c->mask[0])
        printf(" --mask %s", c->mask);
    if (c->hw_subset[0])
        printf(" --hw-subset '%s'", c->hw_subset);
    if (c->places[0])
        printf(" --places '%s'", c->places);
    if (c->proc_bind[0])
        printf(" --proc-bind '%s'", c->proc_bind);
    printf(" --json '%s'\n", c->kmp_affinity);
}

static int run_case(const diff_opts_t *o, const diff_case_t *c, const char *dir, diff_stats_t *st,
                    bkm_err_t *err)
{
    int rc = BKM_OK;
    char cpuinfo[4096], nthr[32];
    char e_ncpus[64], e_mask[2100], e_cpuinfo[4200], e_preload[4200], e_kmp[600], e_hw[100], e_pl[300],
        e_pb[64];
    char *extra[12];
    char *env[DIFF_MAX_ENV];
    int n_extra = 0;
    child_out_t probe = {0}, probe_rev = {0}, tune = {0};
    plan_t want = {0}, got = {0};
    bkm_buf_t synth = {0}, desc = {0};
    bkm_err_t perr = {0};

    snprintf(cpuinfo, sizeof(cpuinfo), "%s/cpuinfo", dir);
    topo_synthetic(&c->topo, &synth);
    if (c->topo.ids == IDS_DIES) {
        /* libomp gets the file bkm's correction would give it. */
        char *cargv[] = {(char *)o->tune, "topo", "--synthetic", (char *)bkm_buf_str(&synth), "--cpuinfo", NULL};
        char *cenv[DIFF_MAX_ENV];
        build_env(cenv, DIFF_MAX_ENV, NULL, 0);
        rc = run_child(cargv, cenv, dir, &tune, err);
        if (rc < 0)
            goto out;
        FILE *f = tune.status == 0 ? fopen(cpuinfo, "w") : NULL;
        int wrote = f && fputs(bkm_buf_str(&tune.out), f) >= 0;
        if (f && fclose(f) != 0)
            wrote = 0;
        if (!wrote) {
            rc = bkm_err_set(err, BKM_EIO, "tune topo --synthetic '%s' --cpuinfo: exit %d %s", bkm_buf_str(&synth),
                             tune.status, bkm_buf_str(&tune.errt));
            goto out;
        }
        child_free(&tune);
        memset(&tune, 0, sizeof(tune));
    } else {
        rc = topo_write_cpuinfo(&c->topo, cpuinfo, err);
    }
    if (rc < 0)
        goto out;
    case_describe(c, &desc);
    snprintf(nthr, sizeof(nthr), "%d", c->threads);

    /* The real libomp on the fake machine. */
    snprintf(e_ncpus, sizeof(e_ncpus), "BKM_FAKE_NCPUS=%d", topo_pus(&c->topo));
    extra[n_extra++] = e_ncpus;
    snprintf(e_cpuinfo, sizeof(e_cpuinfo), "KMP_CPUINFO_FILE=%s", cpuinfo);
    extra[n_extra++] = e_cpuinfo;
    snprintf(e_preload, sizeof(e_preload), "LD_PRELOAD=%s", o->shim);
    extra[n_extra++] = e_preload;
    extra[n_extra++] = "KMP_BLOCKTIME=0"; /* hundreds of spinning threads on 2 cores otherwise */
    if (c->mask[0]) {
        snprintf(e_mask, sizeof(e_mask), "BKM_FAKE_MASK=%s", c->mask);
        extra[n_extra++] = e_mask;
    }
    int n_fixed = n_extra;
    if (c->kmp_affinity[0]) {
        snprintf(e_kmp, sizeof(e_kmp), "KMP_AFFINITY=%s", c->kmp_affinity);
        extra[n_extra++] = e_kmp;
    }
    if (c->hw_subset[0]) {
        snprintf(e_hw, sizeof(e_hw), "KMP_HW_SUBSET=%s", c->hw_subset);
        extra[n_extra++] = e_hw;
    }
    if (c->places[0]) {
        snprintf(e_pl, sizeof(e_pl), "OMP_PLACES=%s", c->places);
        extra[n_extra++] = e_pl;
    }
    if (c->proc_bind[0]) {
        snprintf(e_pb, sizeof(e_pb), "OMP_PROC_BIND=%s", c->proc_bind);
        extra[n_extra++] = e_pb;
    }
    build_env(env, DIFF_MAX_ENV, extra, n_extra);
    char *pargv[] = {(char *)o->probe, nthr, NULL};
    rc = run_child(pargv, env, dir, &probe, err);
    if (rc < 0)
        goto out;
    int libomp_warned = strstr(bkm_buf_str(&probe.errt), "OMP: Warning") != NULL;

    /* libomp 14 parses the variables in environment-block order, and some combinations depend on
     * it (OMP_PLACES + OMP_PROC_BIND=false; a type-less KMP_AFFINITY granularity + OMP_PLACES:
     * the last one wins). The planner cannot know the order, so a case whose result changes with
     * the order of the setting variables is reported apart, not compared. Orders tried: every
     * rotation of the listed order and of its reverse (all orders for up to 3 variables). */
    int n_set = n_extra - n_fixed;
    for (int k = 1; n_set >= 2 && k < 2 * n_set; k++) {
        char *perm[12];
        for (int i = 0; i < n_fixed; i++)
            perm[i] = extra[i];
        for (int i = 0; i < n_set; i++) {
            int j = (i + k) % n_set;
            perm[n_fixed + i] = extra[n_fixed + (k < n_set ? j : n_set - 1 - j)];
        }
        build_env(env, DIFF_MAX_ENV, perm, n_extra);
        child_free(&probe_rev);
        rc = run_child(pargv, env, dir, &probe_rev, err);
        if (rc < 0)
            goto out;
        if (probe_rev.status != probe.status || strcmp(bkm_buf_str(&probe_rev.out), bkm_buf_str(&probe.out))) {
            plan_t a = {0}, b = {0};
            bkm_buf_t fa = {0}, fb = {0}, names = {0};
            st->order_dependent++;
            if (plan_from_json(bkm_buf_str(&probe.out), &a, &perr) == 0)
                plan_format(&a, &fa);
            if (plan_from_json(bkm_buf_str(&probe_rev.out), &b, &perr) == 0)
                plan_format(&b, &fb);
            for (int i = n_fixed; i < n_extra; i++)
                bkm_buf_printf(&names, "%s%.*s", i > n_fixed ? " " : "", (int)strcspn(perm[i], "="), perm[i]);
            printf("ORDER-DEPENDENT %s\n  libomp, variables in the order listed: %s\n"
                   "  libomp, order %s: %s\n",
                   bkm_buf_str(&desc), bkm_buf_str(&fa), bkm_buf_str(&names), bkm_buf_str(&fb));
            plan_free(&a);
            plan_free(&b);
            bkm_buf_free(&fa);
            bkm_buf_free(&fb);
            bkm_buf_free(&names);
            goto out;
        }
    }

    /* The planner. */
    char *targv[DIFF_MAX_ARGS];
    int ta = 0;
    targv[ta++] = (char *)o->tune;
    targv[ta++] = "affinity";
    targv[ta++] = "explain";
    targv[ta++] = c->node ? "--node" : "--synthetic";
    targv[ta++] = c->node ? (char *)c->node : (char *)bkm_buf_str(&synth);
    targv[ta++] = "--threads";
    targv[ta++] = nthr;
    if (c->mask[0]) {
        targv[ta++] = "--mask";
        targv[ta++] = (char *)c->mask;
    }
    if (c->hw_subset[0]) {
        targv[ta++] = "--hw-subset";
        targv[ta++] = (char *)c->hw_subset;
    }
    if (c->places[0]) {
        targv[ta++] = "--places";
        targv[ta++] = (char *)c->places;
    }
    if (c->proc_bind[0]) {
        targv[ta++] = "--proc-bind";
        targv[ta++] = (char *)c->proc_bind;
    }
    targv[ta++] = "--json";
    if (c->kmp_affinity[0])
        targv[ta++] = (char *)c->kmp_affinity;
    targv[ta] = NULL;
    char *tenv[DIFF_MAX_ENV];
    build_env(tenv, DIFF_MAX_ENV, NULL, 0);
    rc = run_child(targv, tenv, dir, &tune, err);
    if (rc < 0)
        goto out;

    if (probe.status != 0 || plan_from_json(bkm_buf_str(&probe.out), &want, &perr) < 0) {
        /* libomp itself failed (e.g. the documented 14.0.6 crashes): the planner must refuse. */
        if (tune.status == 2) {
            st->unsupported++;
            if (o->verbose)
                printf("UNSUPPORTED (libomp also failed, status %d) %s\n", probe.status, bkm_buf_str(&desc));
            goto out;
        }
        st->harness++;
        printf("HARNESS %s\n  probe status %d: %s%s\n", bkm_buf_str(&desc), probe.status, perr.msg,
               bkm_buf_str(&probe.errt));
        print_repro(c, cpuinfo, bkm_buf_str(&synth));
        goto out;
    }
    if (tune.status == 2) {
        st->unsupported++;
        if (o->verbose || !libomp_warned) {
            const char *m = bkm_buf_str(&tune.errt);
            printf("UNSUPPORTED %s%s\n  planner: %s", bkm_buf_str(&desc),
                   libomp_warned ? " (libomp warned too)" : " (libomp accepted it silently)", m);
            if (!*m || m[strlen(m) - 1] != '\n')
                printf("\n");
        }
        goto out;
    }
    if (tune.status != 0 || plan_from_json(bkm_buf_str(&tune.out), &got, &perr) < 0) {
        st->failed++;
        printf("FAIL %s\n  planner exit %d: %s%s\n", bkm_buf_str(&desc), tune.status, perr.msg,
               bkm_buf_str(&tune.errt));
        print_repro(c, cpuinfo, bkm_buf_str(&synth));
        goto out;
    }
    int same = want.n == got.n;
    for (int t = 0; same && t < want.n; t++)
        same = bkm_cpuset_equal(&want.cpus[t], &got.cpus[t]);
    if (same) {
        st->passed++;
        if (o->verbose)
            printf("ok %s\n", bkm_buf_str(&desc));
        goto out;
    }
    st->failed++;
    bkm_buf_t a = {0}, b = {0};
    plan_format(&want, &a);
    plan_format(&got, &b);
    printf("MISMATCH %s%s\n  libomp : %s\n  planner: %s\n", bkm_buf_str(&desc),
           libomp_warned ? " (libomp printed a warning)" : "", bkm_buf_str(&a), bkm_buf_str(&b));
    print_repro(c, cpuinfo, bkm_buf_str(&synth));
    bkm_buf_free(&a);
    bkm_buf_free(&b);
out:
    fflush(stdout);
    plan_free(&want);
    plan_free(&got);
    child_free(&probe);
    child_free(&probe_rev);
    child_free(&tune);
    bkm_buf_free(&synth);
    bkm_buf_free(&desc);
    return rc;
}

/** Parse the options of `run` (@p grid 0: --cases, --seed) or `grid` (@p grid 1: --all-threads)
 *  from argv[first..]. 0, or 2 after printing why. */
static int diff_opts_parse(int argc, char **argv, int first, int grid, diff_opts_t *o, int *all_threads)
{
    long long v = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
            continue;
        }
        if (grid && !strcmp(a, "--all-threads")) {
            *all_threads = 1;
            continue;
        }
        if (!val) {
            fprintf(stderr, "libomp_diff: option '%s' needs a value (or is unknown)\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--shim"))
            o->shim = val;
        else if (!strcmp(a, "--probe"))
            o->probe = val;
        else if (!strcmp(a, "--tune"))
            o->tune = val;
        else if (!grid && !strcmp(a, "--cases") && bkm_parse_int(val, 1, 10000000, &v) == 0)
            o->cases = (int)v;
        else if (!grid && !strcmp(a, "--seed") && bkm_parse_int(val, 0, INT64_MAX, &v) == 0)
            o->seed = (uint64_t)v;
        else {
            fprintf(stderr, "libomp_diff: bad option or value '%s %s'\n", a, val);
            return 2;
        }
    }
    if (!o->shim || !o->probe || !o->tune) {
        fprintf(stderr, "libomp_diff: --shim, --probe and --tune are required\n");
        return 2;
    }
    return 0;
}

/** The next case of a run: 1 with *c filled, 0 when there are no more. */
typedef int (*case_next_fn)(void *ud, int i, diff_case_t *c);

/** Run every case @p next gives in a fresh work folder and print the summary (@p what names the
 *  run). 0 when every case matched or the planner refused it, 1 on a mismatch or a harness error,
 *  3 when the harness itself failed, 77 when the planner's explain command is missing. */
static int diff_cases(const diff_opts_t *o, case_next_fn next, void *ud, const char *what)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/bkm-libomp-diff-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "libomp_diff: cannot create a work folder in '%s': %s\n", dir, strerror(errno));
        return 3;
    }
    diff_stats_t st = {0, 0, 0, 0, 0};
    bkm_err_t err = {0};
    int rc = 0;
    {
        /* Skip (77), not pass, while the planner's explain command is not built. */
        char *hargv[] = {(char *)o->tune, "affinity", "explain", "--help", NULL};
        char *henv[DIFF_MAX_ENV];
        child_out_t h = {0};
        build_env(henv, DIFF_MAX_ENV, NULL, 0);
        if (run_child(hargv, henv, dir, &h, &err) < 0 || h.status != 0) {
            printf("SKIP: '%s affinity explain --help' exited %d: the planner's explain command is not "
                   "available in this build\n",
                   o->tune, h.status);
            rc = 77;
        }
        child_free(&h);
    }
    diff_case_t c;
    for (int i = 0; rc == 0 && next(ud, i, &c); i++)
        if (run_case(o, &c, dir, &st, &err) < 0) {
            fprintf(stderr, "libomp_diff: %s\n", err.msg);
            rc = 3;
        }
    char path[4200];
    snprintf(path, sizeof(path), "%s/cpuinfo", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/stdout", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/stderr", dir);
    unlink(path);
    rmdir(dir);
    printf("%d passed, %d failed, %d unsupported by the planner, %d order-dependent in libomp, %d harness errors (%s)\n",
           st.passed, st.failed, st.unsupported, st.order_dependent, st.harness, what);
    if (rc)
        return rc;
    return st.failed || st.harness ? 1 : 0;
}

typedef struct random_cases {
    rng_t r;
    int n;
} random_cases_t;

static int random_next(void *ud, int i, diff_case_t *c)
{
    random_cases_t *rc = ud;
    if (i >= rc->n)
        return 0;
    gen_case(&rc->r, i, c);
    return 1;
}

static int cmd_run(int argc, char **argv)
{
    diff_opts_t o = {NULL, NULL, NULL, 300, 20261130, 0};
    long long v = 0;
    int unused = 0, rc;
    char what[64];
    const char *env_cases = getenv("BKM_DIFF_CASES");
    if (env_cases && *env_cases) {
        if (bkm_parse_int(env_cases, 1, 10000000, &v) < 0) {
            fprintf(stderr, "libomp_diff: BKM_DIFF_CASES='%s' is not a number of cases\n", env_cases);
            return 2;
        }
        o.cases = (int)v;
    }
    if ((rc = diff_opts_parse(argc, argv, 2, 0, &o, &unused)) != 0)
        return rc;
    random_cases_t rcs = {{o.seed}, o.cases};
    snprintf(what, sizeof what, "seed %llu", (unsigned long long)o.seed);
    return diff_cases(&o, random_next, &rcs, what);
}

/* ---- The Perlmutter grid -------------------------------------------------------------------- */

/* A setting of the grid; places "L3" and "NUMA" stand for the explicit list of the mask's L3
 * groups (8 cores) and NUMA nodes (16 cores). */
typedef struct grid_setting {
    const char *kmp, *hw, *places, *bind;
} grid_setting_t;

static const grid_setting_t grid_settings[] = {
    {"compact", NULL, NULL, NULL},
    {"scatter", NULL, NULL, NULL},
    {"balanced", NULL, NULL, NULL},
    {"granularity=fine,compact", NULL, NULL, NULL},
    {"granularity=fine,scatter", NULL, NULL, NULL},
    {"granularity=fine,balanced", NULL, NULL, NULL},
    {"granularity=fine,compact,1,0", NULL, NULL, NULL},
    {"granularity=ll_cache,compact", NULL, NULL, NULL},
    {"granularity=numa_domain,scatter", NULL, NULL, NULL},
    {NULL, NULL, "threads", "spread"},
    {NULL, NULL, "threads", "close"},
    {NULL, NULL, "cores", "spread"},
    {NULL, NULL, "cores", "close"},
    {NULL, NULL, "sockets", "spread"},
    {NULL, NULL, "ll_caches", "spread"},
    {NULL, NULL, "ll_caches", "close"},
    {NULL, NULL, "numa_domains", "spread"},
    {NULL, NULL, "numa_domains", "close"},
    {NULL, NULL, "L3", "spread"},
    {NULL, NULL, "L3", "close"},
    {NULL, NULL, "NUMA", "spread"},
    {NULL, NULL, "NUMA", "close"},
    {"granularity=fine,compact", "1LL@1", NULL, NULL},
    {"granularity=fine,scatter", "2ll,16c,1t", NULL, NULL},
    {NULL, "1LLC,8c", "cores", "spread"},
};

/* Initial masks: the whole node, and one rank of 2, 8 and 16 ranks per node as srun -c 128 / 32 / 16
 * --cpu-bind=cores gives it (first core and core count; both hardware threads of each core). */
static const struct {
    int first, cores;
} grid_masks[] = {{0, 128}, {64, 64}, {16, 16}, {40, 8}};

static const int grid_threads[] = {1,  2,  3,  4,   5,   6,   7,   8,   9,   12,  15,  16,  17,  24,  31, 32,
                                   33, 48, 63, 64,  65,  96,  100, 127, 128, 129, 150, 160, 192, 200, 255, 256};

typedef struct grid_cases {
    int all_threads;
    int s, m, t;   /* the next setting, mask and thread index */
} grid_cases_t;

/* The team sizes of mask @p m: every size from 1 to its PUs, or the sizes of grid_threads up to
 * its PUs and one beyond. */
static int grid_threads_of(const grid_cases_t *g, int m, int t)
{
    int pus = 2 * grid_masks[m].cores, n = 0;
    if (g->all_threads)
        return t < pus ? t + 1 : -1;
    for (size_t k = 0; k < sizeof grid_threads / sizeof grid_threads[0]; k++) {
        int v = grid_threads[k];
        if (v > pus && !(k > 0 && grid_threads[k - 1] <= pus))
            break;
        if (n++ == t)
            return v;
    }
    return -1;
}

/* Fill @p c with setting @p st on mask @p m at @p threads threads; 0 when the setting does not
 * apply to the mask (an explicit list of one group). */
static int grid_case(const grid_setting_t *st, int m, int threads, int id, diff_case_t *c)
{
    int first = grid_masks[m].first, cores = grid_masks[m].cores;
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->node = "perlmutter-cpu";
    c->topo = (topo_desc_t){2, 64, 2, 1, IDS_PLAIN, 1, {0}, {{0}}};
    c->threads = threads;
    if (cores < 128)
        snprintf(c->mask, sizeof c->mask, "%d-%d,%d-%d", first, first + cores - 1, first + 128,
                 first + 128 + cores - 1);
    if (st->kmp)
        snprintf(c->kmp_affinity, sizeof c->kmp_affinity, "%s", st->kmp);
    if (st->hw)
        snprintf(c->hw_subset, sizeof c->hw_subset, "%s", st->hw);
    if (st->bind)
        snprintf(c->proc_bind, sizeof c->proc_bind, "%s", st->bind);
    if (st->places && (!strcmp(st->places, "L3") || !strcmp(st->places, "NUMA"))) {
        int k = !strcmp(st->places, "L3") ? 8 : 16;
        if (cores / k < 2)
            return 0;
        snprintf(c->places, sizeof c->places, "{%d:%d,%d:%d}:%d:%d", first, k, first + 128, k, cores / k, k);
    } else if (st->places) {
        snprintf(c->places, sizeof c->places, "%s", st->places);
    }
    return 1;
}

/* Masks, then settings, then team sizes. */
static int grid_next(void *ud, int i, diff_case_t *c)
{
    grid_cases_t *g = ud;
    const int n_set = (int)(sizeof grid_settings / sizeof grid_settings[0]);
    const int n_mask = (int)(sizeof grid_masks / sizeof grid_masks[0]);
    for (; g->m < n_mask; g->m++, g->s = 0)
        for (; g->s < n_set; g->s++, g->t = 0) {
            int threads;
            while ((threads = grid_threads_of(g, g->m, g->t++)) >= 0)
                if (grid_case(&grid_settings[g->s], g->m, threads, i, c))
                    return 1;
        }
    return 0;
}

static int cmd_grid(int argc, char **argv)
{
    diff_opts_t o = {NULL, NULL, NULL, 0, 0, 0};
    grid_cases_t g = {0, 0, 0, 0};
    const char *all = getenv("BKM_DIFF_ALL_THREADS");
    int rc;
    if (argc < 3 || strcmp(argv[2], "perlmutter") != 0) {
        fprintf(stderr, "usage: libomp_diff grid perlmutter --shim SO --probe EXE --tune EXE [--all-threads]\n");
        return 2;
    }
    g.all_threads = all && !strcmp(all, "1");
    if ((rc = diff_opts_parse(argc, argv, 3, 1, &o, &g.all_threads)) != 0)
        return rc;
    return diff_cases(&o, grid_next, &g,
                      g.all_threads ? "perlmutter grid, every team size" : "perlmutter grid, spread of team sizes");
}

static int cmd_cpuinfo(int argc, char **argv)
{
    long long s, c, t;
    bkm_err_t err = {0};
    if (argc != 7 || bkm_parse_int(argv[2], 1, 64, &s) < 0 || bkm_parse_int(argv[3], 1, 512, &c) < 0 ||
        bkm_parse_int(argv[4], 1, 16, &t) < 0 || (strcmp(argv[5], "linear") && strcmp(argv[5], "cori"))) {
        fprintf(stderr, "usage: libomp_diff cpuinfo SOCKETS CORES THREADS linear|cori FILE\n");
        return 2;
    }
    topo_desc_t td = {(int)s, (int)c, (int)t, !strcmp(argv[5], "cori"), IDS_PLAIN, 1, {0}, {{0}}};
    if (topo_pus(&td) > 2048) {
        fprintf(stderr, "libomp_diff: %d PUs is more than the shim's 2048\n", topo_pus(&td));
        return 2;
    }
    if (topo_write_cpuinfo(&td, argv[6], &err) < 0) {
        fprintf(stderr, "libomp_diff: %s\n", err.msg);
        return 3;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "cpuinfo"))
        return cmd_cpuinfo(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "grid"))
        return cmd_grid(argc, argv);
    fprintf(stderr,
            "usage: libomp_diff cpuinfo SOCKETS CORES THREADS linear|cori FILE\n"
            "       libomp_diff run --shim SO --probe EXE --tune EXE [--cases N] [--seed S] [--verbose]\n"
            "       libomp_diff grid perlmutter --shim SO --probe EXE --tune EXE [--all-threads] [--verbose]\n"
            "Compares `tune affinity explain --json` with the real libomp 14 on fake topologies.\n");
    return 2;
}
