/* SPDX-License-Identifier: MIT */
/* Differential test: the libgomp planner (bkm_aff_gomp_plan_create) against the real GNU libgomp 12
 * on fake machines.
 *
 * How libgomp is shown a machine it does not run on: libgomp reads the topology with fopen() from
 * /sys/devices/system (cpuN/topology/{thread,core}_siblings_list, cpuN/cache/indexK/{level,
 * shared_cpu_list}, node/online, nodeN/cpulist) and the initial mask with pthread_getaffinity_np.
 * The files are presented for real: this program enters a private mount namespace (unshare, a user
 * namespace too when it is not root) and bind-mounts a tree it writes from an hwloc topology over
 * /sys/devices/system, so libgomp's own parser reads them. The affinity calls cannot be real (the
 * fake CPUs do not exist), so the fake-machine shim (tests/affinity/libomp/shim.c, LD_PRELOAD)
 * answers pthread_{get,set}affinity_np, pthread_attr_setaffinity_np + pthread_create and sysconf,
 * with the initial mask as a cpuset the process cannot leave (BKM_FAKE_CPUSET=1), and records the
 * mask of every thread. The probe (probe.c, gcc -fopenmp) runs the teams and prints what libgomp
 * reports per thread; OMP_DISPLAY_ENV=verbose adds libgomp's own view of its variables.
 *
 * usage:
 *   gomp_diff run --shim SO --probe EXE [--tune EXE] [--cases N] [--seed S] [--perturb MODE]
 *                 [--rules] [--topo NAME] [--verbose]
 *       the systematic cases (at most two thirds of N: the rules, then an even sample of the grid),
 *       then seeded random ones up to N (default 3000, or $BKM_GOMP_CASES);
 *       --rules: only the cases of the rule table (one per rule, worked examples first);
 *       --perturb feeds the comparison a deliberately wrong planner (the negative control):
 *       close-restarts, spread-even, ll-caches-per-cache, no-pin, no-messages; `all` compares
 *       every case with the right planner and with each wrong one, and fails unless the right one
 *       matches every case and each wrong one is caught on at least one
 *   gomp_diff sysfs SYNTHETIC DIR      write the fake /sys/devices/system tree of a topology
 *
 * Exit status of `run`: 0 when every case matched, 1 on a mismatch or harness error, 2 on bad
 * usage, 77 when a private mount namespace is not allowed here (the reason is printed).
 * Test code: reads BKM_GOMP_CASES and TMPDIR. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "bkm/affinity.h"
#include "../diff_rng.h"

#define CHILD_TIMEOUT_S 60
#define SLOTS           2

/* ---- Topologies ----------------------------------------------------------------------------- */

typedef struct topo_spec {
    const char *name;
    const char *profile;  /* a built-in profile, or NULL */
    char synthetic[8192]; /* the hwloc description (filled from the profile) */
    const char *mask;     /* initial mask, NULL = every PU */
} topo_spec_t;

/* "pu:2(indexes=0,N,1,N+1,...)" for @p cores cores with sibling i + cores (Cori and AMD numbering). */
static void sibling_plus_n(char *out, size_t n, const char *levels, int cores)
{
    size_t k = (size_t)snprintf(out, n, "%s pu:2(indexes=", levels);
    for (int c = 0; c < cores && k < n; c++)
        k += (size_t)snprintf(out + k, n - k, "%s%d,%d", c ? "," : "", c, c + cores);
    if (k < n)
        snprintf(out + k, n - k, ")");
}

static topo_spec_t g_topos[] = {
    {"haswell", "haswell", "", NULL},                       /* Cori Haswell 2x16x2, PU i+32 the sibling of i */
    {"haswell-srun", "haswell", "", "0-3,32-35"},           /* a job step confined to 4 cores */
    {"knl", "knl", "", NULL},                               /* Cori KNL 68x4 in 34 tiles, PU i+68k siblings */
    {"amd2s", NULL, "", NULL},                              /* 2 sockets x 2 NUMA x 2 L3 x 4 cores x 2 */
    {"amd2s-node1", NULL, "", "8-15,40-47"},                /* confined to NUMA node 1 */
    {"odd6", NULL, "pack:1 [numa] l2:3 core:1 pu:2", NULL}, /* 3 cores x 2, linear numbering */
    {"tri3", NULL, "pack:3 core:1 pu:1", NULL},             /* 3 sockets of 1 CPU, no cache listed */
};
#define N_TOPOS (int)(sizeof(g_topos) / sizeof(g_topos[0]))

static int topos_init(bkm_err_t *err)
{
    for (int i = 0; i < N_TOPOS; i++) {
        topo_spec_t *t = &g_topos[i];
        if (t->profile) {
            bkm_node_profile_t p;
            if (bkm_profile_builtin(t->profile, &p, err) < 0)
                return BKM_EINVAL;
            snprintf(t->synthetic, sizeof(t->synthetic), "%s", p.synthetic);
        } else if (!strncmp(t->name, "amd2s", 5)) {
            sibling_plus_n(t->synthetic, sizeof(t->synthetic), "pack:2 group:2 [numa] l3:2 core:4", 32);
        }
    }
    return BKM_OK;
}

/* ---- The fake /sys/devices/system, written from hwloc ---------------------------------------- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* The kernel's list format ("0-3,8-11\n"). */
static void list_of(hwloc_const_bitmap_t set, char *out, size_t n)
{
    if (hwloc_bitmap_iszero(set))
        snprintf(out, n, "\n");
    else {
        hwloc_bitmap_list_snprintf(out, n - 1, set);
        strcat(out, "\n");
    }
}

static int cache_cmp(const void *a, const void *b)
{
    hwloc_obj_t x = *(const hwloc_obj_t *)a, y = *(const hwloc_obj_t *)b;
    if (x->attr->cache.depth != y->attr->cache.depth)
        return x->attr->cache.depth < y->attr->cache.depth ? -1 : 1;
    return (int)x->attr->cache.type - (int)y->attr->cache.type; /* data or unified before instruction */
}

/* Write DIR/cpu and DIR/node as Linux shows the topology of @p synthetic. */
static int sysfs_write(const char *synthetic, const char *dir, bkm_err_t *err)
{
    hwloc_topology_t h;
    char path[4096], text[16384];
    int rc = BKM_OK;
    if (hwloc_topology_init(&h) < 0 || hwloc_topology_set_synthetic(h, synthetic) < 0 || hwloc_topology_load(h) < 0)
        return bkm_err_set(err, BKM_EINVAL, "hwloc cannot load '%.200s'", synthetic);
    hwloc_bitmap_t all = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(h));
    snprintf(path, sizeof(path), "%s/cpu", dir);
    if (mkdirs(path) < 0)
        rc = bkm_err_set(err, BKM_EIO, "mkdir %s: %s", path, strerror(errno));
    list_of(all, text, sizeof(text));
    for (const char *f = "possible\0present\0online\0"; rc == BKM_OK && *f; f += strlen(f) + 1) {
        snprintf(path, sizeof(path), "%s/cpu/%s", dir, f);
        if (write_file(path, text) < 0)
            rc = bkm_err_set(err, BKM_EIO, "cannot write %s", path);
    }
    int n_pu = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
    for (int i = 0; rc == BKM_OK && i < n_pu; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, (unsigned)i);
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_CORE, pu);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, pu);
        hwloc_obj_t caches[16];
        int n_cache = 0;
        snprintf(path, sizeof(path), "%s/cpu/cpu%u/topology", dir, pu->os_index);
        if (mkdirs(path) < 0) {
            rc = bkm_err_set(err, BKM_EIO, "mkdir %s", path);
            break;
        }
        list_of(core ? core->cpuset : pu->cpuset, text, sizeof(text));
        snprintf(path, sizeof(path), "%s/cpu/cpu%u/topology/thread_siblings_list", dir, pu->os_index);
        rc = write_file(path, text) < 0 ? BKM_EIO : rc;
        list_of(pkg ? pkg->cpuset : all, text, sizeof(text));
        snprintf(path, sizeof(path), "%s/cpu/cpu%u/topology/core_siblings_list", dir, pu->os_index);
        rc = write_file(path, text) < 0 ? BKM_EIO : rc;
        for (hwloc_obj_t o = pu->parent; o && n_cache < 16; o = o->parent)
            if (hwloc_obj_type_is_cache(o->type))
                caches[n_cache++] = o;
        qsort(caches, (size_t)n_cache, sizeof(caches[0]), cache_cmp);
        for (int k = 0; rc == BKM_OK && k < n_cache; k++) {
            snprintf(path, sizeof(path), "%s/cpu/cpu%u/cache/index%d", dir, pu->os_index, k);
            if (mkdirs(path) < 0) {
                rc = BKM_EIO;
                break;
            }
            snprintf(text, sizeof(text), "%u\n", caches[k]->attr->cache.depth);
            snprintf(path, sizeof(path), "%s/cpu/cpu%u/cache/index%d/level", dir, pu->os_index, k);
            rc = write_file(path, text) < 0 ? BKM_EIO : rc;
            list_of(caches[k]->cpuset, text, sizeof(text));
            snprintf(path, sizeof(path), "%s/cpu/cpu%u/cache/index%d/shared_cpu_list", dir, pu->os_index, k);
            rc = write_file(path, text) < 0 ? BKM_EIO : rc;
        }
        if (rc < 0)
            bkm_err_set(err, rc, "cannot write the tree of CPU %u under %s", pu->os_index, dir);
    }
    int n_numa = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    snprintf(path, sizeof(path), "%s/node", dir);
    if (rc == BKM_OK && mkdirs(path) < 0)
        rc = bkm_err_set(err, BKM_EIO, "mkdir %s", path);
    for (int i = 0; rc == BKM_OK && i < n_numa; i++) {
        hwloc_obj_t nd = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, (unsigned)i);
        hwloc_bitmap_set(nodes, nd->os_index);
        snprintf(path, sizeof(path), "%s/node/node%u", dir, nd->os_index);
        if (mkdirs(path) < 0) {
            rc = bkm_err_set(err, BKM_EIO, "mkdir %s", path);
            break;
        }
        list_of(nd->cpuset, text, sizeof(text));
        snprintf(path, sizeof(path), "%s/node/node%u/cpulist", dir, nd->os_index);
        if (write_file(path, text) < 0)
            rc = bkm_err_set(err, BKM_EIO, "cannot write %s", path);
    }
    if (rc == BKM_OK) {
        list_of(nodes, text, sizeof(text));
        snprintf(path, sizeof(path), "%s/node/online", dir);
        if (write_file(path, text) < 0)
            rc = bkm_err_set(err, BKM_EIO, "cannot write %s", path);
    }
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(all);
    hwloc_topology_destroy(h);
    return rc;
}

/* ---- The private mount namespace ------------------------------------------------------------- */

static int write_proc(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Enter a mount namespace of our own (and a user namespace when not root). 0, or -1 with @p why. */
static int enter_namespace(char *why, size_t n)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWNS) != 0) {
        int e = errno;
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
            snprintf(why, n, "unshare(CLONE_NEWNS): %s; unshare(CLONE_NEWUSER|CLONE_NEWNS): %s", strerror(e),
                     strerror(errno));
            return -1;
        }
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
        if (write_proc("/proc/self/setgroups", "deny") < 0 && errno != ENOENT) {
            snprintf(why, n, "/proc/self/setgroups: %s", strerror(errno));
            return -1;
        }
        if (write_proc("/proc/self/uid_map", map) < 0) {
            snprintf(why, n, "/proc/self/uid_map: %s", strerror(errno));
            return -1;
        }
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
        if (write_proc("/proc/self/gid_map", map) < 0) {
            snprintf(why, n, "/proc/self/gid_map: %s", strerror(errno));
            return -1;
        }
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(why, n, "making the mounts private: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int sysfs_mount(const char *dir, char *why, size_t n)
{
    if (mount(dir, "/sys/devices/system", NULL, MS_BIND, NULL) != 0) {
        snprintf(why, n, "bind-mounting %s over /sys/devices/system: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- Cases ------------------------------------------------------------------------------------ */

typedef struct gcase {
    int id, topo;
    int levels;
    int nt[BKM_AFF_GOMP_MAX_LEVELS]; /* num_threads per depth, 0 = none */
    /* the variables; "" with has_* 0 = unset */
    char places[200], bind[64], gomp[128], nthreads[32], max_levels[16], nested[16], wait[16], spin[32];
    int has_places, has_bind, has_gomp, has_nthreads, has_max_levels, has_nested, has_wait, has_spin;
} gcase_t;

#define SET(c, field, ...)                                                                                             \
    do {                                                                                                               \
        snprintf((c)->field, sizeof((c)->field), __VA_ARGS__);                                                         \
        (c)->has_##field = 1;                                                                                          \
    } while (0)

typedef struct tinfo {
    bkm_topo_t *topo; /* with the initial mask */
    int n_pu, n_cores, n_pkgs, max_os;
    int pus[2048]; /* the OS ids of the initial mask, ascending */
    int n_allowed;
} tinfo_t;

static const char *pick(rng_t *r, const char *const *a, int n)
{
    return a[rng_int(r, 0, n - 1)];
}
#define PICK(r, a) pick(r, a, (int)(sizeof(a) / sizeof((a)[0])))

/* A CPU of the machine, usually one of the mask, sometimes beyond it. */
static int any_cpu(rng_t *r, const tinfo_t *t)
{
    int v = rng_pct(r, 85) ? t->pus[rng_int(r, 0, t->n_allowed - 1)] : rng_int(r, 0, t->max_os);
    return rng_pct(r, 3) ? v + rng_int(r, 60, 400) : v; /* out of libgomp's range now and then */
}

static void gen_explicit_places(rng_t *r, const tinfo_t *t, char *out, size_t n)
{
    int items = rng_int(r, 1, 5);
    size_t k = 0;
    for (int i = 0; i < items && k + 48 < n; i++) {
        const char *sep = i ? (rng_pct(r, 10) ? " , " : ",") : "";
        int a = any_cpu(r, t), kind = rng_int(r, 0, 9);
        if (kind <= 2) /* {a:len[:stride]} */
            k += (size_t)snprintf(out + k, n - k, "%s{%d:%d%s}", sep, a, rng_int(r, 1, 6),
                                  rng_pct(r, 40) ? (rng_pct(r, 50) ? ":2" : ":-1") : "");
        else if (kind <= 4) /* {a,b,...} with an exclusion now and then */
            k += (size_t)snprintf(out + k, n - k, "%s{%d,%d%s}", sep, a, any_cpu(r, t), rng_pct(r, 25) ? ",!1" : "");
        else if (kind == 5) /* bare numbers */
            k += (size_t)snprintf(out + k, n - k, "%s%d", sep, a);
        else if (kind == 6) /* replicated place */
            k += (size_t)snprintf(out + k, n - k, "%s{%d:%d}:%d:%d", sep, a, rng_int(r, 1, 4), rng_int(r, 1, 8),
                                  rng_pct(r, 70) ? rng_int(r, 1, 8) : -rng_int(r, 0, 4));
        else if (kind == 7 && i > 0) /* exclude an earlier place (or one that is not there) */
            k += (size_t)snprintf(out + k, n - k, "%s!{%d}", sep, rng_pct(r, 50) ? t->pus[0] : a);
        else
            k += (size_t)snprintf(out + k, n - k, "%s{%d}", sep, a);
    }
}

static void gen_places(rng_t *r, const tinfo_t *t, gcase_t *c)
{
    static const char *const kinds[] = {"threads", "cores", "sockets", "ll_caches", "numa_domains", "Cores", "THREADS"};
    static const char *const bad[] = {"{0-3}",  "cores(",    "threads(x)", "{0:0}",     "bogus",
                                      "",       "{0},",      "{0}:2:",     "cores(2)x", "{!0}",
                                      "{0:2:1", "threads()", "0-3",        "{0,!5}",    "!{99999}"};
    int how = rng_int(r, 0, 99);
    if (how < 12)
        return;
    if (how < 52) {
        const char *k = PICK(r, kinds);
        if (rng_pct(r, 35))
            SET(c, places, "%s%s(%d)", k, rng_pct(r, 15) ? " " : "", rng_int(r, 0, 9));
        else
            SET(c, places, "%s%s", rng_pct(r, 10) ? " " : "", k);
    } else if (how < 90) {
        char buf[200];
        gen_explicit_places(r, t, buf, sizeof(buf));
        SET(c, places, "%s", buf);
    } else {
        SET(c, places, "%s", PICK(r, bad));
    }
}

static void gen_bind(rng_t *r, gcase_t *c)
{
    static const char *const one[] = {"true", "false", "close", "spread", "master", "primary", "CLOSE", " spread "};
    static const char *const lists[] = {"spread,close",   "close,spread",       "spread,spread", "master,close",
                                        "spread,primary", "close,close,spread", "spread, close"};
    static const char *const bad[] = {"true,close", "false,spread", "bogus", "close,", "", "spreadx", "close,true"};
    int how = rng_int(r, 0, 99);
    if (how < 20)
        return;
    if (how < 70)
        SET(c, bind, "%s", PICK(r, one));
    else if (how < 92)
        SET(c, bind, "%s", PICK(r, lists));
    else
        SET(c, bind, "%s", PICK(r, bad));
}

static void gen_gomp(rng_t *r, const tinfo_t *t, gcase_t *c)
{
    static const char *const bad[] = {"0-", "a", "3-1", "0,,1", "0-4:0", "-1", "70000", "1 x"};
    int how = rng_int(r, 0, 99);
    if (how < 72)
        return;
    if (how < 95) {
        size_t k = 0;
        int items = rng_int(r, 1, 4);
        for (int i = 0; i < items && k < sizeof(c->gomp) - 40; i++) {
            const char *sep = i ? (rng_pct(r, 50) ? " " : ",") : "";
            int a = any_cpu(r, t);
            switch (rng_int(r, 0, 4)) {
            case 0:
                k += (size_t)snprintf(c->gomp + k, sizeof(c->gomp) - k, "%s%d-%d", sep, a, a + rng_int(r, 0, 5));
                break;
            case 1:
                k += (size_t)snprintf(c->gomp + k, sizeof(c->gomp) - k, "%s%d-%d:%d", sep, a, a + rng_int(r, 0, 9),
                                      rng_int(r, 1, 4));
                break;
            case 2: k += (size_t)snprintf(c->gomp + k, sizeof(c->gomp) - k, "%s0x%x", sep, (unsigned)a); break;
            default: k += (size_t)snprintf(c->gomp + k, sizeof(c->gomp) - k, "%s%d", sep, a);
            }
        }
        c->has_gomp = 1;
    } else {
        SET(c, gomp, "%s", PICK(r, bad));
    }
}

/* Team sizes, OMP_NUM_THREADS and the nesting variables. */
static void gen_teams(rng_t *r, const tinfo_t *t, gcase_t *c)
{
    static const char *const small[] = {"1", "2", "3", "4", "5", "7", "8", "12", "16", "17"};
    int how = rng_int(r, 0, 99);
    c->levels = how < 72 ? 1 : how < 95 ? 2 : 3;
    int cap = t->n_allowed * 2 + 3 < 160 ? t->n_allowed * 2 + 3 : 160;
    if (c->levels == 1)
        c->nt[0] = rng_pct(r, 50) ? rng_int(r, 1, 8) : rng_int(r, 1, cap);
    else
        c->nt[0] = rng_int(r, 1, c->levels == 2 ? 9 : 4);
    for (int l = 1; l < c->levels; l++)
        c->nt[l] = rng_int(r, 1, c->levels == 2 ? 5 : 3);
    if (rng_pct(r, 12))
        c->nt[rng_int(r, 0, c->levels - 1)] = 0; /* no num_threads clause: libgomp's ICV decides */
    if (rng_pct(r, 30)) {
        if (c->levels > 1 && rng_pct(r, 60))
            SET(c, nthreads, "%s,%d", PICK(r, small), rng_int(r, 1, 4));
        else if (rng_pct(r, 90))
            SET(c, nthreads, "%s", PICK(r, small));
        else
            SET(c, nthreads, "%s", rng_pct(r, 50) ? "0" : "3,x");
    }
    if (c->levels > 1 && rng_pct(r, 60)) {
        if (rng_pct(r, 60))
            SET(c, max_levels, "%d", rng_pct(r, 90) ? c->levels : rng_int(r, 0, 1));
        else
            SET(c, nested, "%s", rng_pct(r, 85) ? "true" : rng_pct(r, 50) ? "false" : "yes");
    }
}

/* Idle libgomp threads spin before they sleep, 300000 times by default: more than a few threads
 * spinning on the 2 real CPUs make a case take 100 times longer. So a case with more than 4
 * threads waits passively unless it sets a short GOMP_SPINCOUNT (the waiting variables are
 * compared on every case through OMP_DISPLAY_ENV whatever the team size). */
static void keep_spin_short(gcase_t *c, int total_threads)
{
    int short_spin = c->has_spin && (!strcmp(c->spin, "0") || !strcmp(c->spin, "10k") || !strcmp(c->spin, "2 k"));
    int passive = c->has_wait && strcasestr(c->wait, "passive") != NULL;
    if (total_threads > 4 && !short_spin && !passive)
        SET(c, wait, "passive");
}

/* Waiting: an active or infinite spin only with few threads (they spin on the 2 real CPUs). */
static void gen_wait(rng_t *r, gcase_t *c, int total_threads)
{
    int how = rng_int(r, 0, 99);
    if (how < 10)
        SET(c, wait, "%s", rng_pct(r, 70) ? "passive" : " PASSIVE ");
    else if (how < 13 && total_threads <= 2)
        SET(c, wait, "active");
    else if (how < 15)
        SET(c, wait, "%s", rng_pct(r, 50) ? "lazy" : "");
    how = rng_int(r, 0, 99);
    if (how < 6)
        SET(c, spin, "%s", rng_pct(r, 50) ? "0" : "10k");
    else if (how < 8)
        SET(c, spin, "%s", total_threads <= 2 ? "infinite" : "2 k");
    else if (how < 10)
        SET(c, spin, "%s", rng_pct(r, 50) ? "1x" : "-");
    keep_spin_short(c, total_threads);
}

static int total_threads(const gcase_t *c, const tinfo_t *t)
{
    int total = 1, team = 1;
    for (int l = 0; l < c->levels; l++) {
        team *= c->nt[l] > 0 ? c->nt[l] : t->n_allowed + 8;
        total += team;
    }
    return total;
}

static void gen_random(rng_t *r, int id, const tinfo_t *tinfo, gcase_t *c)
{
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->topo = rng_int(r, 0, N_TOPOS - 1);
    const tinfo_t *t = &tinfo[c->topo];
    gen_places(r, t, c);
    gen_bind(r, c);
    gen_gomp(r, t, c);
    gen_teams(r, t, c);
    gen_wait(r, c, total_threads(c, t));
}

/* The rules, one case each, first: worked examples (Haswell spread 12 on 32 cores gives places
 * 0 3 6 9 12 15 18 21 24 26 28 30; close 40 on 32 cores goes round robin; KNL spread 64 on 68
 * cores gives the first 4 subpartitions 2 places; GOMP_CPU_AFFINITY "0 1" with 4 threads gives
 * 0,0,1,1; ll_caches gives 1 place), precedence, rejected values, a fatal start, nesting, waiting.
 * NULL = unset; "" = set and empty. */
static const struct rule {
    const char *topo, *places, *bind, *gomp, *nthreads, *max_levels, *wait, *spin;
    int nt[3];
} g_rules[] = {
    {"haswell", "cores", "spread", NULL, NULL, NULL, "passive", NULL, {12}},
    {"haswell", "cores", "close", NULL, NULL, NULL, "passive", NULL, {40}},
    {"knl", "cores", "spread", NULL, NULL, NULL, "passive", NULL, {64}},
    {"haswell", NULL, NULL, "0 1", NULL, NULL, NULL, NULL, {4}},
    {"haswell", NULL, "close", "0-30:10", NULL, NULL, NULL, NULL, {4}},
    {"amd2s", "ll_caches", "close", NULL, NULL, NULL, NULL, NULL, {4}},
    {"knl", "ll_caches", "spread", NULL, NULL, NULL, NULL, NULL, {3}},
    {"amd2s", "numa_domains", "spread", NULL, NULL, NULL, NULL, NULL, {4}},
    {"amd2s-node1", "numa_domains", "close", NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell", "cores", NULL, NULL, NULL, NULL, NULL, NULL, {2}},    /* PLACES alone: bind true */
    {"haswell", NULL, "spread", NULL, NULL, NULL, NULL, NULL, {2}},   /* bind alone: threads */
    {"haswell", "cores", "false", NULL, NULL, NULL, NULL, NULL, {2}}, /* unbound, 0 places */
    {"haswell", "cores", NULL, "3", NULL, NULL, NULL, NULL, {2}},     /* OMP_PLACES wins */
    {"haswell", NULL, "false", "0 1", NULL, NULL, NULL, NULL, {2}},
    {"haswell", "{0:4},{16:4}", "close", NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell", "{0:2}:4:2", "spread", NULL, NULL, NULL, NULL, NULL, {4}},
    {"haswell", "{0:8,!3},!{0:8,!3},{5}", "close", NULL, NULL, NULL, NULL, NULL, {1}},
    {"haswell", "{0-3}", "close", NULL, NULL, NULL, NULL, NULL, {2}}, /* rejected: threads */
    {"haswell", "bogus", NULL, NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell", "threads(0)", "close", NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell-srun", "{64}", "close", NULL, NULL, NULL, NULL, NULL, {2}},        /* out of range */
    {"haswell-srun", "{8:4},{0:2}", "close", NULL, NULL, NULL, NULL, NULL, {2}}, /* places reduced */
    {"haswell-srun", "{8:4}", "close", NULL, NULL, NULL, NULL, NULL, {2}},       /* none usable */
    {"tri3", "ll_caches", "close", NULL, NULL, NULL, NULL, NULL, {2}},           /* no cache listed */
    {"haswell", NULL, "bogus", NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell", NULL, "true,close", NULL, NULL, NULL, NULL, NULL, {2}},
    {"haswell", NULL, "close", "0-", NULL, NULL, NULL, NULL, {2}},
    {"haswell-srun", NULL, NULL, "0 8", NULL, NULL, NULL, NULL, {2}}, /* fatal: 8 is outside */
    {"haswell-srun", NULL, NULL, "8 0", NULL, NULL, NULL, NULL, {1}}, /* the pin fails */
    {"haswell", NULL, NULL, "0 100", NULL, NULL, NULL, NULL, {2}},    /* 100 dropped silently */
    {"haswell", "cores", "spread,close", NULL, NULL, NULL, NULL, NULL, {2, 2}},
    {"knl", "threads", "spread,spread", NULL, NULL, NULL, NULL, NULL, {2, 3}},
    {"amd2s", "cores", "close,master", NULL, "2,3", NULL, NULL, NULL, {0, 0}},
    {"haswell", "cores", "spread", NULL, NULL, NULL, NULL, NULL, {2, 2}}, /* inactive nesting */
    {"haswell", "cores", "spread", NULL, NULL, "2", NULL, NULL, {2, 2}},
    {"odd6", "cores", "spread", NULL, "0", NULL, "lazy", "1x", {2}},
    {"odd6", NULL, NULL, NULL, NULL, NULL, "active", NULL, {2}},
    {"odd6", NULL, NULL, NULL, NULL, NULL, "passive", "10k", {2}},
    {"tri3", NULL, "close", NULL, NULL, NULL, NULL, "infinite", {1}},
};

static int topo_index(const char *name)
{
    for (int i = 0; i < N_TOPOS; i++)
        if (!strcmp(g_topos[i].name, name))
            return i;
    return 0;
}

/* The systematic cases: the rules, then every abstract kind x policy x a few team sizes on every
 * topology, then nested pairs. Returns how many were written (at most @p max). */
static int gen_systematic(const tinfo_t *tinfo, gcase_t *out, int max)
{
    static const char *const kinds[] = {NULL, "threads", "cores", "sockets", "ll_caches", "numa_domains", "cores(3)"};
    static const char *const binds[] = {NULL, "true", "close", "spread", "master", "false"};
    static const char *const nested[] = {"spread,close", "close,spread", "spread,spread", "master,spread"};
    int n = 0;
    gcase_t *c;
#define NEW(topo_i)                                                                                                    \
    (n < max                                                                                                           \
         ? (memset(&out[n], 0, sizeof(out[n])), out[n].id = n, out[n].topo = (topo_i), out[n].levels = 1, &out[n++])   \
         : NULL)
    for (size_t k = 0; k < sizeof(g_rules) / sizeof(g_rules[0]); k++) {
        const struct rule *u = &g_rules[k];
        if (!(c = NEW(topo_index(u->topo))))
            return n;
#define RULE(field, member)                                                                                            \
    if (u->member)                                                                                                     \
        SET(c, field, "%s", u->member);
        RULE(places, places)
        RULE(bind, bind)
        RULE(gomp, gomp)
        RULE(nthreads, nthreads)
        RULE(max_levels, max_levels)
        RULE(wait, wait)
        RULE(spin, spin)
#undef RULE
        c->levels = u->nt[1] || (u->nthreads && strchr(u->nthreads, ',')) ? 2 : 1;
        memcpy(c->nt, u->nt, sizeof(u->nt));
    }
    for (int ti = 0; ti < N_TOPOS; ti++) {
        const tinfo_t *t = &tinfo[ti];
        int sizes[] = {1, 2, 3, 5, t->n_cores - 1, t->n_cores + 1, 2 * t->n_allowed + 1};
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
            for (size_t b = 0; b < sizeof(binds) / sizeof(binds[0]); b++)
                for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                    if (sizes[s] < 1 || sizes[s] > 150 || (!kinds[k] && !binds[b]) || (s > 3 && b == 5))
                        continue;
                    if (!(c = NEW(ti)))
                        return n;
                    if (kinds[k])
                        SET(c, places, "%s", kinds[k]);
                    if (binds[b])
                        SET(c, bind, "%s", binds[b]);
                    c->nt[0] = sizes[s];
                    keep_spin_short(c, sizes[s]);
                }
        for (size_t b = 0; b < sizeof(nested) / sizeof(nested[0]); b++)
            for (int t1 = 2; t1 <= 3; t1++)
                for (int t2 = 2; t2 <= 3; t2++) {
                    if (!(c = NEW(ti)))
                        return n;
                    SET(c, places, "%s", b % 2 ? "threads" : "cores");
                    SET(c, bind, "%s", nested[b]);
                    c->levels = 2;
                    c->nt[0] = t1;
                    c->nt[1] = t2;
                    keep_spin_short(c, 1 + t1 + t1 * t2);
                }
    }
    return n;
#undef NEW
}

static void case_describe(const gcase_t *c, bkm_buf_t *b)
{
    bkm_buf_printf(b, "#%d %s T=%d", c->id, g_topos[c->topo].name, c->nt[0]);
    for (int l = 1; l < c->levels; l++)
        bkm_buf_printf(b, ",%d", c->nt[l]);
#define VAR(field, name)                                                                                               \
    if (c->has_##field)                                                                                                \
        bkm_buf_printf(b, " " name "='%s'", c->field);
    VAR(places, "OMP_PLACES")
    VAR(bind, "OMP_PROC_BIND")
    VAR(gomp, "GOMP_CPU_AFFINITY")
    VAR(nthreads, "OMP_NUM_THREADS")
    VAR(max_levels, "OMP_MAX_ACTIVE_LEVELS")
    VAR(nested, "OMP_NESTED")
    VAR(wait, "OMP_WAIT_POLICY")
    VAR(spin, "GOMP_SPINCOUNT")
#undef VAR
}

static void print_repro(const gcase_t *c)
{
    const topo_spec_t *ts = &g_topos[c->topo];
    printf("  planner: tune affinity explain --runtime gomp --lenient --synthetic '%s'", ts->synthetic);
    if (ts->mask)
        printf(" --mask %s", ts->mask);
    if (c->nt[0] > 0)
        printf(" --threads %d", c->nt[0]);
    if (c->levels > 1) {
        printf(" --nested ");
        for (int l = 1; l < c->levels; l++)
            printf(l > 1 ? ",%d" : "%d", c->nt[l]);
    }
#define OPT(field, opt)                                                                                                \
    if (c->has_##field)                                                                                                \
        printf(" " opt " '%s'", c->field);
    OPT(places, "--places")
    OPT(bind, "--proc-bind")
    OPT(gomp, "--gomp-cpu-affinity")
    OPT(nthreads, "--num-threads")
    OPT(max_levels, "--max-active-levels")
    OPT(nested, "--omp-nested")
    OPT(wait, "--wait-policy")
    OPT(spin, "--spincount")
#undef OPT
    printf("\n");
}

/* ---- What each side says --------------------------------------------------------------------- */

typedef struct tview {
    char path[24];
    int team_size, place, n_part;
    int part[8]; /* the first places of the partition (n_part of them in all) */
    int part_last;
    bkm_cpuset_t cpus;
} tview_t;

/* One run of the teams as the planner predicts it or libgomp shows it. */
typedef struct view {
    int fatal; /* libgomp aborted ("Thread creation failed") */
    int n_msg;
    char msg[16][160];
    char places_display[4096], bind_display[160], nthreads_display[160], wait_display[16];
    unsigned long long spin;
    int max_active_levels;
    int n_places;
    bkm_cpuset_t *places;
    bkm_cpuset_t initial;
    int n_th;
    tview_t *th;
} view_t;

static void view_free(view_t *v)
{
    free(v->places);
    free(v->th);
    memset(v, 0, sizeof(*v));
}

static int view_copy(const view_t *from, view_t *to)
{
    *to = *from;
    to->places = calloc((size_t)from->n_places + 1, sizeof(bkm_cpuset_t));
    to->th = calloc((size_t)from->n_th + 1, sizeof(tview_t));
    if (!to->places || !to->th) {
        view_free(to);
        return -1;
    }
    memcpy(to->places, from->places, (size_t)from->n_places * sizeof(bkm_cpuset_t));
    memcpy(to->th, from->th, (size_t)from->n_th * sizeof(tview_t));
    return 0;
}

static int tview_cmp(const void *a, const void *b)
{
    return strcmp(((const tview_t *)a)->path, ((const tview_t *)b)->path);
}

static void env_of(const gcase_t *c, bkm_aff_gomp_env_t *env)
{
    memset(env, 0, sizeof(*env));
    env->omp_places = c->has_places ? c->places : NULL;
    env->omp_proc_bind = c->has_bind ? c->bind : NULL;
    env->gomp_cpu_affinity = c->has_gomp ? c->gomp : NULL;
    env->omp_num_threads = c->has_nthreads ? c->nthreads : NULL;
    env->omp_max_active_levels = c->has_max_levels ? c->max_levels : NULL;
    env->omp_nested = c->has_nested ? c->nested : NULL;
    env->omp_wait_policy = c->has_wait ? c->wait : NULL;
    env->gomp_spincount = c->has_spin ? c->spin : NULL;
}

/* The planner's prediction. */
static int view_from_plan(const tinfo_t *t, const gcase_t *c, view_t *v, bkm_err_t *err)
{
    bkm_aff_gomp_env_t env;
    bkm_aff_gomp_opts_t opts;
    bkm_aff_gomp_plan_t *p = NULL;
    bkm_aff_gomp_wait_t w;
    bkm_buf_t b;
    int rc;
    env_of(c, &env);
    memset(&opts, 0, sizeof(opts));
    opts.n_levels = c->levels;
    memcpy(opts.num_threads, c->nt, sizeof(c->nt));
    if ((rc = bkm_aff_gomp_plan_create(t->topo, &env, &opts, &p, err)) < 0)
        return rc;
    memset(v, 0, sizeof(*v));
    v->fatal = bkm_aff_gomp_plan_fatal(p) != NULL;
    for (int i = 0; i < bkm_aff_gomp_plan_n_messages(p) && v->n_msg < 16; i++)
        snprintf(v->msg[v->n_msg++], sizeof(v->msg[0]), "%s", bkm_aff_gomp_plan_message(p, i));
    if (v->fatal && v->n_msg < 16)
        snprintf(v->msg[v->n_msg++], sizeof(v->msg[0]), "%s", bkm_aff_gomp_plan_fatal(p));
    bkm_buf_init(&b);
    bkm_aff_gomp_plan_places_format(p, &b);
    snprintf(v->places_display, sizeof(v->places_display), "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
    snprintf(v->bind_display, sizeof(v->bind_display), "%s", bkm_aff_gomp_plan_bind_display(p));
    snprintf(v->nthreads_display, sizeof(v->nthreads_display), "%s", bkm_aff_gomp_plan_nthreads_display(p));
    bkm_aff_gomp_plan_wait(p, &w);
    snprintf(v->wait_display, sizeof(v->wait_display), "%s", w.policy > 0 ? "ACTIVE" : "PASSIVE");
    v->spin = w.spin_count;
    v->max_active_levels = bkm_aff_gomp_plan_max_active_levels(p);
    v->n_places = bkm_aff_gomp_plan_n_places(p);
    v->places = calloc((size_t)(v->n_places + 1), sizeof(bkm_cpuset_t));
    v->n_th = bkm_aff_gomp_plan_n_threads(p);
    v->th = calloc((size_t)(v->n_th + 1), sizeof(tview_t));
    if (!v->places || !v->th) {
        bkm_aff_gomp_plan_free(p);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
    for (int i = 0; i < v->n_places; i++)
        v->places[i] = *bkm_aff_gomp_plan_place(p, i);
    bkm_aff_gomp_plan_initial_pin(p, &v->initial);
    for (int i = 0; i < v->n_th; i++) {
        const bkm_aff_gomp_thread_t *th = bkm_aff_gomp_plan_thread(p, i);
        tview_t *o = &v->th[i];
        bkm_buf_init(&b);
        bkm_aff_gomp_plan_thread_path(p, i, &b);
        snprintf(o->path, sizeof(o->path), "%s", bkm_buf_str(&b));
        bkm_buf_free(&b);
        o->team_size = th->team_size;
        o->place = th->place;
        o->n_part = th->part_len;
        for (int k = 0; k < th->part_len && k < 8; k++)
            o->part[k] = th->part_off + k;
        o->part_last = th->part_len ? th->part_off + th->part_len - 1 : -1;
        o->cpus = th->cpus;
    }
    if (v->fatal)
        v->n_th = 0; /* libgomp exits: there is no team to compare */
    qsort(v->th, (size_t)v->n_th, sizeof(tview_t), tview_cmp);
    bkm_aff_gomp_plan_free(p);
    return BKM_OK;
}

static int json_cpuset(const bkm_json_t *a, bkm_cpuset_t *s)
{
    bkm_cpuset_zero(s);
    if (!a || a->type != BKM_JSON_ARR)
        return -1;
    for (const bkm_json_t *e = a->child; e; e = e->next)
        if (e->type != BKM_JSON_NUM || bkm_cpuset_set(s, (int)e->num) < 0)
            return -1;
    return 0;
}

/* "  NAME = 'value'" of OMP_DISPLAY_ENV, into @p out; 0 when found. */
static int display_value(const char *err_text, const char *name, char *out, size_t n)
{
    char key[64];
    snprintf(key, sizeof(key), "\n  %s = '", name);
    const char *s = strstr(err_text, key);
    if (!s)
        return -1;
    s += strlen(key);
    const char *e = strstr(s, "'\n");
    if (!e)
        return -1;
    snprintf(out, n, "%.*s", (int)(e - s), s);
    return 0;
}

/* What the real libgomp did: the probe's JSON, its exit status, its stderr. */
static int view_from_probe(int status, const char *out, const char *errt, view_t *v, char *why, size_t nwhy)
{
    bkm_json_t *j = NULL;
    bkm_err_t perr = {0};
    char num[64];
    memset(v, 0, sizeof(*v));
    for (const char *s = errt; (s = strstr(s, "libgomp: ")) != NULL; s += 9) {
        if (s != errt && s[-1] != '\n')
            continue;
        size_t len = strcspn(s + 9, "\n");
        /* threads of nested teams that fail to start at the same time each print the fatal error */
        if (v->n_msg > 0 && !strncmp(s + 9, "Thread creation failed", 22) && !strncmp(v->msg[v->n_msg - 1], s + 9, len))
            continue;
        if (v->n_msg < 16)
            snprintf(v->msg[v->n_msg++], sizeof(v->msg[0]), "%.*s", (int)len, s + 9);
    }
    if (status == 1 && v->n_msg > 0 && strstr(v->msg[v->n_msg - 1], "Thread creation failed")) {
        v->fatal = 1;
        return 0;
    }
    if (status != 0) {
        snprintf(why, nwhy, "probe exit status %d: %.300s", status, errt);
        return -1;
    }
    if (display_value(errt, "OMP_PLACES", v->places_display, sizeof(v->places_display)) < 0 ||
        display_value(errt, "OMP_PROC_BIND", v->bind_display, sizeof(v->bind_display)) < 0 ||
        display_value(errt, "OMP_NUM_THREADS", v->nthreads_display, sizeof(v->nthreads_display)) < 0 ||
        display_value(errt, "OMP_WAIT_POLICY", v->wait_display, sizeof(v->wait_display)) < 0 ||
        display_value(errt, "GOMP_SPINCOUNT", num, sizeof(num)) < 0) {
        snprintf(why, nwhy, "no OMP_DISPLAY_ENV output: %.300s", errt);
        return -1;
    }
    v->spin = strtoull(num, NULL, 10);
    if (display_value(errt, "OMP_MAX_ACTIVE_LEVELS", num, sizeof(num)) < 0) {
        snprintf(why, nwhy, "no OMP_MAX_ACTIVE_LEVELS in OMP_DISPLAY_ENV");
        return -1;
    }
    v->max_active_levels = atoi(num);
    if (bkm_json_parse(out, &j, &perr) < 0) {
        snprintf(why, nwhy, "probe output: %s", perr.msg);
        return -1;
    }
    const char *rt = bkm_json_get_str(j, "runtime");
    const bkm_json_t *pl = bkm_json_get(j, "places"), *th = bkm_json_get(j, "threads");
    if (!rt || !strstr(rt, "libgomp.so") || !pl || !th || json_cpuset(bkm_json_get(j, "initial"), &v->initial) < 0) {
        snprintf(why, nwhy, "probe output is not from the real libgomp or incomplete (runtime '%s')", rt ? rt : "");
        bkm_json_free(j);
        return -1;
    }
    v->n_places = (int)pl->n_children;
    v->n_th = (int)th->n_children;
    v->places = calloc((size_t)v->n_places + 1, sizeof(bkm_cpuset_t));
    v->th = calloc((size_t)v->n_th + 1, sizeof(tview_t));
    int i = 0;
    for (const bkm_json_t *e = pl->child; e && v->places; e = e->next)
        json_cpuset(e, &v->places[i++]);
    i = 0;
    for (const bkm_json_t *e = th->child; e && v->th; e = e->next, i++) {
        tview_t *o = &v->th[i];
        const bkm_json_t *part = bkm_json_get(e, "partition");
        snprintf(o->path, sizeof(o->path), "%s", bkm_json_get_str(e, "path") ? bkm_json_get_str(e, "path") : "?");
        o->team_size = (int)bkm_json_get_num(e, "team_size", -1);
        o->place = (int)bkm_json_get_num(e, "place", -2);
        o->n_part = part ? (int)part->n_children : -1;
        o->part_last = -1;
        int k = 0;
        for (const bkm_json_t *q = part ? part->child : NULL; q; q = q->next, k++) {
            if (k < 8)
                o->part[k] = (int)q->num;
            o->part_last = (int)q->num;
        }
        json_cpuset(bkm_json_get(e, "cpus"), &o->cpus);
    }
    bkm_json_free(j);
    if (!v->places || !v->th) {
        snprintf(why, nwhy, "out of memory");
        return -1;
    }
    qsort(v->th, (size_t)v->n_th, sizeof(tview_t), tview_cmp);
    return 0;
}

/* ---- The negative control: deliberately wrong planners ------------------------------------- */

enum {
    PERTURB_NONE = 0,
    PERTURB_CLOSE_RESTARTS,
    PERTURB_SPREAD_EVEN,
    PERTURB_LLC_PER_CACHE,
    PERTURB_NO_PIN,
    PERTURB_NO_MESSAGES,
    PERTURB_N,
    PERTURB_ALL = PERTURB_N /* every wrong planner on every case, each beside the right one */
};
static const char *const g_perturb_names[] = {"none",   "close-restarts", "spread-even", "ll-caches-per-cache",
                                              "no-pin", "no-messages",    "all"};

static int level1_policy(const gcase_t *c)
{
    const char *b = c->bind;
    while (*b == ' ')
        b++;
    if (!c->has_bind)
        return (c->has_places || c->has_gomp) ? 1 : 0;
    return !strncasecmp(b, "spread", 6) ? 4 : !strncasecmp(b, "close", 5) || !strncasecmp(b, "true", 4) ? 1 : -1;
}

/* What a planner with a plausible wrong rule would predict, from the right prediction @p v. */
static void perturb(int mode, const tinfo_t *t, const gcase_t *c, view_t *v)
{
    int policy = level1_policy(c), n1 = 0;
    for (int i = 0; i < v->n_th; i++)
        n1 += strchr(v->th[i].path, '.') == NULL;
    switch (mode) {
    case PERTURB_CLOSE_RESTARTS: /* the manual's reading: a short list restarts from its beginning */
        if (policy == 1 && c->levels == 1 && n1 > v->n_places && v->n_places > 0)
            for (int i = 0; i < v->n_th; i++) {
                v->th[i].place = atoi(v->th[i].path) % v->n_places;
                v->th[i].cpus = v->places[v->th[i].place];
            }
        break;
    case PERTURB_SPREAD_EVEN: /* spread as evenly spaced places, without libgomp's subpartitions */
        if (policy == 4 && c->levels == 1 && n1 <= v->n_places)
            for (int i = 0; i < v->n_th; i++) {
                v->th[i].place = (int)((long)atoi(v->th[i].path) * v->n_places / n1);
                v->th[i].cpus = v->places[v->th[i].place];
            }
        break;
    case PERTURB_LLC_PER_CACHE: /* ll_caches without the 12.2 bug: one place per last-level cache */
        if (c->has_places && !strncasecmp(c->places, "ll_caches", 9) && v->n_places == 1) {
            int n = 0;
            const bkm_topo_pu_t *pu = bkm_topo_pus(t->topo, &n);
            for (int i = 0; i < n; i++)
                if (pu[i].allowed && pu[i].llc >= 0 && !bkm_cpuset_isset(&v->places[0], pu[i].os))
                    bkm_cpuset_set(&v->places[0], pu[i].os);
        }
        break;
    case PERTURB_NO_PIN: /* the initial thread left alone until the first region */
        bkm_topo_allowed(t->topo, &v->initial);
        break;
    case PERTURB_NO_MESSAGES: v->n_msg = 0; break;
    }
}

/* ---- Comparing -------------------------------------------------------------------------------- */

static void fmt_set(const bkm_cpuset_t *s, bkm_buf_t *b)
{
    bkm_buf_puts(b, "{");
    bkm_cpuset_format(s, b);
    bkm_buf_puts(b, "}");
}

/* Differences between the prediction @p want and libgomp's @p got, described into @p d. */
static int compare(const view_t *want, const view_t *got, bkm_buf_t *d)
{
    int bad = 0;
#define DIFF(...)                                                                                                      \
    do {                                                                                                               \
        if (bad++ < 6)                                                                                                 \
            bkm_buf_printf(d, __VA_ARGS__);                                                                            \
    } while (0)
    if (want->n_msg != got->n_msg)
        DIFF("    messages: planner %d, libgomp %d%s%s\n", want->n_msg, got->n_msg, got->n_msg ? ": " : "",
             got->n_msg ? got->msg[0] : "");
    for (int i = 0; i < want->n_msg && i < got->n_msg; i++)
        if (strcmp(want->msg[i], got->msg[i]))
            DIFF("    message %d: planner \"%s\", libgomp \"%s\"\n", i, want->msg[i], got->msg[i]);
    if (want->fatal != got->fatal)
        DIFF("    fatal: planner %s, libgomp %s\n", want->fatal ? "yes" : "no", got->fatal ? "yes" : "no");
    if (want->fatal || got->fatal)
        return bad;
    if (strcmp(want->places_display, got->places_display))
        DIFF("    OMP_PLACES display: planner '%.200s', libgomp '%.200s'\n", want->places_display, got->places_display);
    if (strcmp(want->bind_display, got->bind_display))
        DIFF("    OMP_PROC_BIND display: planner '%s', libgomp '%s'\n", want->bind_display, got->bind_display);
    if (strcmp(want->nthreads_display, got->nthreads_display))
        DIFF("    OMP_NUM_THREADS display: planner '%s', libgomp '%s'\n", want->nthreads_display,
             got->nthreads_display);
    if (strcmp(want->wait_display, got->wait_display) || want->spin != got->spin)
        DIFF("    waiting: planner %s %llu, libgomp %s %llu\n", want->wait_display, want->spin, got->wait_display,
             got->spin);
    if (want->max_active_levels != got->max_active_levels)
        DIFF("    max-active-levels: planner %d, libgomp %d\n", want->max_active_levels, got->max_active_levels);
    if (want->n_places != got->n_places)
        DIFF("    places: planner %d, libgomp %d\n", want->n_places, got->n_places);
    for (int i = 0; i < want->n_places && i < got->n_places; i++)
        if (!bkm_cpuset_equal(&want->places[i], &got->places[i])) {
            bkm_buf_t a = {0}, b = {0};
            fmt_set(&want->places[i], &a);
            fmt_set(&got->places[i], &b);
            DIFF("    place %d: planner %s, libgomp %s\n", i, bkm_buf_str(&a), bkm_buf_str(&b));
            bkm_buf_free(&a);
            bkm_buf_free(&b);
            break;
        }
    if (!bkm_cpuset_equal(&want->initial, &got->initial)) {
        bkm_buf_t a = {0}, b = {0};
        fmt_set(&want->initial, &a);
        fmt_set(&got->initial, &b);
        DIFF("    initial thread: planner %s, libgomp %s\n", bkm_buf_str(&a), bkm_buf_str(&b));
        bkm_buf_free(&a);
        bkm_buf_free(&b);
    }
    if (want->n_th != got->n_th)
        DIFF("    threads: planner %d, libgomp %d\n", want->n_th, got->n_th);
    for (int i = 0; i < want->n_th && i < got->n_th; i++) {
        const tview_t *x = &want->th[i], *y = &got->th[i];
        if (strcmp(x->path, y->path)) {
            DIFF("    thread %d: planner path %s, libgomp %s\n", i, x->path, y->path);
            break;
        }
        int same_part = x->n_part == y->n_part && x->part_last == y->part_last;
        for (int k = 0; same_part && k < x->n_part && k < 8; k++)
            same_part = x->part[k] == y->part[k];
        if (x->team_size != y->team_size || x->place != y->place || !same_part ||
            !bkm_cpuset_equal(&x->cpus, &y->cpus)) {
            bkm_buf_t a = {0}, b = {0};
            fmt_set(&x->cpus, &a);
            fmt_set(&y->cpus, &b);
            DIFF("    thread %s: planner team %d place %d partition %d..%d cpus %s; libgomp team %d place %d "
                 "partition %d..%d cpus %s\n",
                 x->path, x->team_size, x->place, x->n_part ? x->part[0] : -1, x->part_last, bkm_buf_str(&a),
                 y->team_size, y->place, y->n_part > 0 ? y->part[0] : -1, y->part_last, bkm_buf_str(&b));
            bkm_buf_free(&a);
            bkm_buf_free(&b);
        }
    }
#undef DIFF
    return bad;
}

/* ---- Running -------------------------------------------------------------------------------- */

typedef struct opts {
    const char *shim, *probe, *tune, *only_topo;
    int cases, verbose, perturb, rules_only;
    uint64_t seed;
} opts_t;

typedef struct stats {
    int compared, matched, mismatched, harness, cli_checked, cli_failed;
    int with_messages, fatal, nested;
    int caught[PERTURB_N]; /* --perturb all: cases on which each wrong planner was caught */
} stats_t;

typedef struct slot {
    pid_t pid;
    const gcase_t *c;
    char out[4200], err[4200];
} slot_t;

static int slurp(const char *path, bkm_buf_t *b)
{
    char chunk[8192];
    FILE *f = fopen(path, "r");
    size_t n;
    if (!f)
        return -1;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        bkm_buf_append(b, chunk, n);
    fclose(f);
    return 0;
}

/* The probe's environment: nothing from ours but PATH, then the fake machine and the case. */
static int probe_env(const opts_t *o, const tinfo_t *t, const gcase_t *c, char store[][320], char **env)
{
    int n = 0;
    snprintf(store[n++], 320, "PATH=/usr/bin:/bin");
    snprintf(store[n++], 320, "LD_PRELOAD=%s", o->shim);
    snprintf(store[n++], 320, "BKM_FAKE_NCPUS=%d", t->max_os + 1);
    snprintf(store[n++], 320, "BKM_FAKE_CPUSET=1");
    snprintf(store[n++], 320, "OMP_DISPLAY_ENV=verbose");
    if (g_topos[c->topo].mask)
        snprintf(store[n++], 320, "BKM_FAKE_MASK=%s", g_topos[c->topo].mask);
#define ENV(field, name)                                                                                               \
    if (c->has_##field)                                                                                                \
        snprintf(store[n++], 320, name "=%s", c->field);
    ENV(places, "OMP_PLACES")
    ENV(bind, "OMP_PROC_BIND")
    ENV(gomp, "GOMP_CPU_AFFINITY")
    ENV(nthreads, "OMP_NUM_THREADS")
    ENV(max_levels, "OMP_MAX_ACTIVE_LEVELS")
    ENV(nested, "OMP_NESTED")
    ENV(wait, "OMP_WAIT_POLICY")
    ENV(spin, "GOMP_SPINCOUNT")
#undef ENV
    for (int i = 0; i < n; i++)
        env[i] = store[i];
    env[n] = NULL;
    return n;
}

static int slot_start(const opts_t *o, const tinfo_t *t, const gcase_t *c, slot_t *s, bkm_err_t *err)
{
    char store[16][320], *env[17], args[BKM_AFF_GOMP_MAX_LEVELS][16], *argv[BKM_AFF_GOMP_MAX_LEVELS + 2];
    probe_env(o, t, c, store, env);
    argv[0] = (char *)o->probe;
    for (int l = 0; l < c->levels; l++) {
        snprintf(args[l], sizeof(args[l]), "%d", c->nt[l]);
        argv[l + 1] = args[l];
    }
    argv[c->levels + 1] = NULL;
    s->c = c;
    s->pid = fork();
    if (s->pid < 0)
        return bkm_err_set(err, BKM_EIO, "fork: %s", strerror(errno));
    if (s->pid == 0) {
        int fo = open(s->out, O_WRONLY | O_CREAT | O_TRUNC, 0600),
            fe = open(s->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(125);
        alarm(CHILD_TIMEOUT_S); /* survives exec: a hung runtime cannot stall the test */
        execve(argv[0], argv, env);
        _exit(126);
    }
    return BKM_OK;
}

/* The CLI on the same case (every 40th): the same plan as the library, through the options. */
static void cli_check(const opts_t *o, const tinfo_t *t, const gcase_t *c, const char *dir, stats_t *st)
{
    /* the CLI refuses an empty option value (usage error), which the environment may hold */
    if ((c->has_places && !c->places[0]) || (c->has_bind && !c->bind[0]) || (c->has_gomp && !c->gomp[0]) ||
        (c->has_nthreads && !c->nthreads[0]) || (c->has_wait && !c->wait[0]) || (c->has_spin && !c->spin[0]))
        return;
    char *argv[40], nt[16], nested[48], path[4300], bufs[8][300];
    int a = 0, nb = 0;
    const topo_spec_t *ts = &g_topos[c->topo];
    argv[a++] = (char *)o->tune;
    argv[a++] = "affinity";
    argv[a++] = "explain";
    argv[a++] = "--runtime";
    argv[a++] = "gomp";
    argv[a++] = "--lenient";
    argv[a++] = "--json";
    argv[a++] = "--synthetic";
    argv[a++] = (char *)ts->synthetic;
    if (ts->mask) {
        argv[a++] = "--mask";
        argv[a++] = (char *)ts->mask;
    }
    if (c->nt[0] > 0) {
        snprintf(nt, sizeof(nt), "%d", c->nt[0]);
        argv[a++] = "--threads";
        argv[a++] = nt;
    }
    if (c->levels > 1) {
        size_t k = 0;
        for (int l = 1; l < c->levels; l++)
            k += (size_t)snprintf(nested + k, sizeof(nested) - k, l > 1 ? ",%d" : "%d", c->nt[l]);
        argv[a++] = "--nested";
        argv[a++] = nested;
    }
#define ARG(field, opt)                                                                                                \
    if (c->has_##field && nb < 8) {                                                                                    \
        snprintf(bufs[nb], sizeof(bufs[nb]), "--" opt "=%s", c->field);                                                \
        argv[a++] = bufs[nb++];                                                                                        \
    }
    ARG(places, "places")
    ARG(bind, "proc-bind")
    ARG(gomp, "gomp-cpu-affinity")
    ARG(nthreads, "num-threads")
    ARG(max_levels, "max-active-levels")
    ARG(nested, "omp-nested")
    ARG(wait, "wait-policy")
    ARG(spin, "spincount")
#undef ARG
    argv[a] = NULL;
    snprintf(path, sizeof(path), "%s/cli.out", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), dn = open("/dev/null", O_WRONLY);
        if (fd < 0 || dn < 0 || dup2(fd, 1) < 0 || dup2(dn, 2) < 0)
            _exit(125);
        alarm(CHILD_TIMEOUT_S);
        execv(argv[0], argv);
        _exit(126);
    }
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    bkm_buf_t out = {0}, want = {0};
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    bkm_aff_gomp_env_t env;
    bkm_aff_gomp_opts_t po;
    bkm_aff_gomp_plan_t *p = NULL;
    env_of(c, &env);
    memset(&po, 0, sizeof(po));
    po.n_levels = c->levels;
    memcpy(po.num_threads, c->nt, sizeof(c->nt));
    st->cli_checked++;
    int ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && slurp(path, &out) == 0 &&
             bkm_json_parse(bkm_buf_str(&out), &j, &err) == 0 &&
             bkm_aff_gomp_plan_create(t->topo, &env, &po, &p, &err) == 0;
    if (ok) {
        bkm_aff_gomp_plan_key(p, &want);
        const char *key = bkm_json_get_str(j, "key");
        ok = key && !strcmp(key, bkm_buf_str(&want));
    }
    if (!ok) {
        bkm_buf_t d = {0};
        st->cli_failed++;
        case_describe(c, &d);
        printf("CLI MISMATCH %s\n  tune exit %d, output %.300s\n", bkm_buf_str(&d),
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, bkm_buf_str(&out));
        print_repro(c);
        bkm_buf_free(&d);
    }
    bkm_aff_gomp_plan_free(p);
    bkm_json_free(j);
    bkm_buf_free(&out);
    bkm_buf_free(&want);
}

static void slot_finish(const opts_t *o, const tinfo_t *tinfo, slot_t *s, int status, stats_t *st)
{
    const gcase_t *c = s->c;
    bkm_buf_t out = {0}, errt = {0}, desc = {0}, diff = {0};
    view_t want = {0}, got = {0};
    bkm_err_t err = {0};
    char why[512] = "";
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    slurp(s->out, &out);
    slurp(s->err, &errt);
    case_describe(c, &desc);
    if (view_from_plan(&tinfo[c->topo], c, &want, &err) < 0) {
        st->harness++;
        printf("HARNESS %s\n  planner: %s\n", bkm_buf_str(&desc), err.msg);
        goto out;
    }
    if (view_from_probe(code, bkm_buf_str(&out), bkm_buf_str(&errt), &got, why, sizeof(why)) < 0) {
        st->harness++;
        printf("HARNESS %s\n  %s\n", bkm_buf_str(&desc), why);
        print_repro(c);
        goto out;
    }
    if (o->perturb == PERTURB_ALL)
        for (int m = 1; m < PERTURB_N; m++) {
            view_t wrong;
            bkm_buf_t ignored = {0};
            if (view_copy(&want, &wrong) < 0) {
                st->harness++;
                printf("HARNESS %s\n  out of memory\n", bkm_buf_str(&desc));
                goto out;
            }
            perturb(m, &tinfo[c->topo], c, &wrong);
            st->caught[m] += compare(&wrong, &got, &ignored) > 0;
            bkm_buf_free(&ignored);
            view_free(&wrong);
        }
    else
        perturb(o->perturb, &tinfo[c->topo], c, &want);
    st->compared++;
    st->with_messages += got.n_msg > 0;
    st->fatal += got.fatal;
    st->nested += c->levels > 1;
    if (compare(&want, &got, &diff) == 0) {
        st->matched++;
        if (o->verbose)
            printf("ok %s\n", bkm_buf_str(&desc));
    } else {
        st->mismatched++;
        if (st->mismatched <= 40 || o->verbose) {
            printf("MISMATCH %s\n%s", bkm_buf_str(&desc), bkm_buf_str(&diff));
            print_repro(c);
        }
    }
out:
    fflush(stdout);
    view_free(&want);
    view_free(&got);
    bkm_buf_free(&out);
    bkm_buf_free(&errt);
    bkm_buf_free(&desc);
    bkm_buf_free(&diff);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int tinfo_init(const topo_spec_t *ts, tinfo_t *t, bkm_err_t *err)
{
    int rc;
    memset(t, 0, sizeof(*t));
    if ((rc = bkm_topo_open_synthetic(&t->topo, ts->synthetic, err)) < 0)
        return rc;
    if (ts->mask) {
        bkm_cpuset_t m;
        if ((rc = bkm_cpuset_parse(&m, ts->mask, err)) < 0 || (rc = bkm_topo_restrict(t->topo, &m, err)) < 0)
            return rc;
    }
    bkm_topo_summary_t sum;
    bkm_topo_summary(t->topo, &sum);
    t->n_pu = sum.pus;
    t->n_cores = sum.cores;
    t->n_pkgs = sum.packages;
    bkm_cpuset_t a;
    bkm_topo_allowed(t->topo, &a);
    int n = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(t->topo, &n);
    for (int i = 0; i < n; i++)
        if (pu[i].os > t->max_os)
            t->max_os = pu[i].os;
    for (int c = bkm_cpuset_first(&a); c >= 0 && t->n_allowed < 2048; c = bkm_cpuset_next(&a, c))
        t->pus[t->n_allowed++] = c;
    return BKM_OK;
}

static int cmd_run(int argc, char **argv)
{
    opts_t o = {NULL, NULL, NULL, NULL, 3000, 0, PERTURB_NONE, 0, 20261201};
    long long v;
    const char *env_cases = getenv("BKM_GOMP_CASES");
    if (env_cases && *env_cases && bkm_parse_int(env_cases, 1, 1000000, &v) == 0)
        o.cases = (int)v;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verbose")) {
            o.verbose = 1;
            continue;
        }
        if (!strcmp(a, "--rules")) {
            o.rules_only = 1;
            continue;
        }
        if (!val) {
            fprintf(stderr, "gomp_diff: option '%s' needs a value (or is unknown)\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--shim"))
            o.shim = val;
        else if (!strcmp(a, "--probe"))
            o.probe = val;
        else if (!strcmp(a, "--tune"))
            o.tune = val;
        else if (!strcmp(a, "--topo"))
            o.only_topo = val;
        else if (!strcmp(a, "--cases") && bkm_parse_int(val, 1, 1000000, &v) == 0)
            o.cases = (int)v;
        else if (!strcmp(a, "--seed") && bkm_parse_int(val, 0, INT64_MAX, &v) == 0)
            o.seed = (uint64_t)v;
        else if (!strcmp(a, "--perturb")) {
            o.perturb = -1;
            for (int k = 1; k <= PERTURB_ALL; k++)
                if (!strcmp(val, g_perturb_names[k]))
                    o.perturb = k;
            if (o.perturb < 0) {
                fprintf(stderr, "gomp_diff: unknown --perturb '%s'\n", val);
                return 2;
            }
        } else {
            fprintf(stderr, "gomp_diff: bad option or value '%s %s'\n", a, val);
            return 2;
        }
    }
    if (!o.shim || !o.probe || access(o.shim, R_OK) || access(o.probe, X_OK)) {
        fprintf(stderr, "gomp_diff run: --shim and --probe must name the built shim and probe\n");
        return 2;
    }

    char why[600];
    if (enter_namespace(why, sizeof(why)) < 0) {
        printf("SKIP: a private mount namespace is not allowed here (%s): libgomp cannot be shown a fake "
               "/sys/devices/system\n",
               why);
        return 77;
    }
    bkm_err_t err = {0};
    tinfo_t *tinfo = calloc(N_TOPOS, sizeof(*tinfo));
    gcase_t *cases = calloc((size_t)o.cases + 4096, sizeof(*cases));
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    int rc = 0;
    snprintf(dir, sizeof(dir), "%s/bkm-gomp-diff-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!tinfo || !cases || !mkdtemp(dir)) {
        fprintf(stderr, "gomp_diff: cannot set up (%s)\n", strerror(errno));
        return 3;
    }
    if (topos_init(&err) < 0) {
        fprintf(stderr, "gomp_diff: %s\n", err.msg);
        return 3;
    }
    for (int i = 0; i < N_TOPOS; i++)
        if (tinfo_init(&g_topos[i], &tinfo[i], &err) < 0) {
            fprintf(stderr, "gomp_diff: topology %s: %s\n", g_topos[i].name, err.msg);
            return 3;
        }
    /* the cases: systematic first, then random, grouped by topology (one mount per topology) */
    int n_rules = (int)(sizeof(g_rules) / sizeof(g_rules[0]));
    int n = gen_systematic(tinfo, cases, o.rules_only ? n_rules : o.cases + 4096);
    /* at most two thirds systematic: the rules, then an even sample of the grid */
    int budget = o.rules_only ? n : o.cases * 2 / 3 > n_rules ? o.cases * 2 / 3 : n_rules;
    if (n > budget) {
        int grid = n - n_rules, keep = budget - n_rules, k = n_rules;
        for (int i = 0; i < keep; i++) {
            cases[k] = cases[n_rules + (int)((long)i * grid / keep)];
            cases[k].id = k;
            k++;
        }
        n = k;
    }
    int n_systematic = n;
    rng_t r = {o.seed};
    for (; n < o.cases && !o.rules_only; n++)
        gen_random(&r, n, tinfo, &cases[n]);
    stats_t st = {0};
    uint64_t t0 = (uint64_t)time(NULL);
    for (int ti = 0; ti < N_TOPOS && rc == 0; ti++) {
        char tree[4200];
        if (o.only_topo && strcmp(o.only_topo, g_topos[ti].name))
            continue;
        snprintf(tree, sizeof(tree), "%s/sys-%s", dir, g_topos[ti].name);
        if (sysfs_write(g_topos[ti].synthetic, tree, &err) < 0) {
            fprintf(stderr, "gomp_diff: %s\n", err.msg);
            rc = 3;
            break;
        }
        if (sysfs_mount(tree, why, sizeof(why)) < 0) {
            printf("SKIP: %s\n", why);
            rc = 77;
            break;
        }
        slot_t slots[SLOTS];
        memset(slots, 0, sizeof(slots));
        for (int k = 0; k < SLOTS; k++) {
            snprintf(slots[k].out, sizeof(slots[k].out), "%s/out.%d", dir, k);
            snprintf(slots[k].err, sizeof(slots[k].err), "%s/err.%d", dir, k);
        }
        int next = 0, busy = 0;
        for (;;) {
            while (busy < SLOTS) {
                while (next < n && cases[next].topo != ti)
                    next++;
                if (next >= n)
                    break;
                int k = 0;
                while (slots[k].pid > 0)
                    k++;
                if (slot_start(&o, &tinfo[ti], &cases[next], &slots[k], &err) < 0) {
                    fprintf(stderr, "gomp_diff: %s\n", err.msg);
                    rc = 3;
                    break;
                }
                if (o.tune && cases[next].id % 40 == 0)
                    cli_check(&o, &tinfo[ti], &cases[next], dir, &st);
                next++;
                busy++;
            }
            if (busy == 0 || rc)
                break;
            int status = 0;
            pid_t pid = waitpid(-1, &status, 0);
            if (pid < 0) {
                if (errno == EINTR)
                    continue;
                fprintf(stderr, "gomp_diff: waitpid: %s\n", strerror(errno));
                rc = 3;
                break;
            }
            for (int k = 0; k < SLOTS; k++)
                if (slots[k].pid == pid) {
                    slots[k].pid = 0;
                    busy--;
                    slot_finish(&o, tinfo, &slots[k], status, &st);
                }
        }
        umount2("/sys/devices/system", MNT_DETACH);
    }
    printf("%d cases compared with the real libgomp (%d matched, %d mismatched, %d harness errors; %d systematic, "
           "%d random; %d with libgomp messages, %d fatal, %d nested; %d CLI cross-checks, %d failed) in %llu s, "
           "seed %llu%s%s\n",
           st.compared, st.matched, st.mismatched, st.harness, n_systematic, n - n_systematic, st.with_messages,
           st.fatal, st.nested, st.cli_checked, st.cli_failed, (unsigned long long)((uint64_t)time(NULL) - t0),
           (unsigned long long)o.seed, o.perturb ? ", perturbed planner: " : "",
           o.perturb ? g_perturb_names[o.perturb] : "");
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "gomp_diff: could not remove %s\n", dir);
    for (int i = 0; i < N_TOPOS; i++)
        bkm_topo_close(tinfo[i].topo);
    free(tinfo);
    free(cases);
    int missed = 0;
    for (int m = 1; o.perturb == PERTURB_ALL && m < PERTURB_N; m++) {
        printf("negative control: the wrong planner '%s' %s on %d of the %d cases\n", g_perturb_names[m],
               st.caught[m] ? "was caught" : "was NOT caught", st.caught[m], st.compared);
        missed += st.caught[m] == 0;
    }
    if (rc)
        return rc;
    return st.mismatched || st.harness || st.cli_failed || st.compared == 0 || missed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "sysfs")) {
        bkm_err_t err = {0};
        if (sysfs_write(argv[2], argv[3], &err) < 0) {
            fprintf(stderr, "gomp_diff: %s\n", err.msg);
            return 3;
        }
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    fprintf(stderr, "usage: gomp_diff run --shim SO --probe EXE [--tune EXE] [--cases N] [--seed S]\n"
                    "                     [--perturb MODE] [--rules] [--topo NAME] [--verbose]\n"
                    "       gomp_diff sysfs SYNTHETIC DIR\n");
    return 2;
}
