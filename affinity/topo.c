/* SPDX-License-Identifier: MIT */
/* Topology from hwloc 2.x (this host, an XML file, or a synthetic description) flattened into a
 * PU table in the numbering libomp uses: logical package/core indexes, OS PU indexes. */
#include "affinity_int.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#define BKM_TOPO_MAX_CACHES 16

struct bkm_topo {
    hwloc_topology_t h;
    bkm_topo_pu_t *pu;
    int n_pu;
    bkm_topo_cache_t cache[BKM_TOPO_MAX_CACHES];
    int n_cache;
    bkm_topo_numa_t *numa;
    int n_numa;
    bkm_topo_summary_t sum;
};

static int pu_cmp(const void *a, const void *b)
{
    const bkm_topo_pu_t *x = a, *y = b;
    if (x->pkg != y->pkg)
        return x->pkg < y->pkg ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    if (x->core != y->core)
        return x->core < y->core ? -1 : 1;
    return x->os < y->os ? -1 : (x->os > y->os);
}

/* The L2 cache above @p core when L2s are shared by more than one core (KNL tiles), else NULL. */
static hwloc_obj_t tile_of(hwloc_topology_t h, hwloc_obj_t core, int l2_shared)
{
    if (!l2_shared || !core)
        return NULL;
    for (hwloc_obj_t o = core->parent; o; o = o->parent)
        if (o->type == HWLOC_OBJ_L2CACHE)
            return o;
    return NULL;
}

/* The cache of the highest level above @p pu (the last of that level found going up), or NULL. */
static hwloc_obj_t llc_of(hwloc_obj_t pu)
{
    hwloc_obj_t best = NULL;
    for (hwloc_obj_t o = pu->parent; o; o = o->parent)
        if (hwloc_obj_type_is_cache(o->type) && (!best || o->attr->cache.depth >= best->attr->cache.depth))
            best = o;
    return best;
}

/* Do L2 caches (if any) each cover more than one core? */
static int l2_is_shared(hwloc_topology_t h)
{
    hwloc_obj_t l2 = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_L2CACHE, NULL);
    if (!l2)
        return 0;
    return hwloc_get_nbobjs_inside_cpuset_by_type(h, l2->cpuset, HWLOC_OBJ_CORE) > 1;
}

static void fill_caches(bkm_topo_t *t)
{
    static const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2CACHE,
                                             HWLOC_OBJ_L2ICACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                             HWLOC_OBJ_L5CACHE};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && t->n_cache < BKM_TOPO_MAX_CACHES; i++) {
        int n = hwloc_get_nbobjs_by_type(t->h, types[i]);
        hwloc_obj_t o = hwloc_get_obj_by_type(t->h, types[i], 0);
        if (n <= 0 || !o)
            continue;
        bkm_topo_cache_t *c = &t->cache[t->n_cache++];
        c->level = (int)o->attr->cache.depth;
        c->type = o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ? 'i'
                  : o->attr->cache.type == HWLOC_OBJ_CACHE_DATA      ? 'd'
                                                                     : 'u';
        c->size_bytes = o->attr->cache.size;
        c->line_bytes = (int)o->attr->cache.linesize;
        c->count = n;
        c->pus_per_cache = hwloc_bitmap_weight(o->cpuset);
    }
}

static int fill_numa(bkm_topo_t *t, bkm_err_t *err)
{
    int n = hwloc_get_nbobjs_by_type(t->h, HWLOC_OBJ_NUMANODE);
    if (n <= 0)
        return BKM_OK;
    t->numa = bkm_calloc((size_t)n, sizeof(*t->numa));
    if (!t->numa)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d NUMA nodes", n);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->h, HWLOC_OBJ_NUMANODE, (unsigned)i);
        bkm_topo_numa_t *m = &t->numa[t->n_numa++];
        m->os = (int)o->os_index;
        m->memory_bytes = o->attr ? o->attr->numanode.local_memory : 0;
        snprintf(m->subtype, sizeof(m->subtype), "%s", o->subtype ? o->subtype : "");
        bkm_cpuset_zero(&m->cpus);
        unsigned cpu;
        hwloc_bitmap_foreach_begin(cpu, o->cpuset) { bkm_cpuset_set(&m->cpus, (int)cpu); }
        hwloc_bitmap_foreach_end();
    }
    return BKM_OK;
}

/* First NUMA node (logical index) whose cpuset holds OS PU @p os, or -1. */
static int numa_of(const bkm_topo_t *t, int os)
{
    for (int i = 0; i < t->n_numa; i++)
        if (bkm_cpuset_isset(&t->numa[i].cpus, os))
            return i;
    return -1;
}

static void fill_cpu_model(bkm_topo_t *t, int from_host)
{
    const char *m = NULL;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(t->h, HWLOC_OBJ_PACKAGE, 0);
    if (pkg)
        m = hwloc_obj_get_info_by_name(pkg, "CPUModel");
    if (!m)
        m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t->h), "CPUModel");
    if (m) {
        snprintf(t->sum.cpu_model, sizeof(t->sum.cpu_model), "%s", m);
        return;
    }
    if (!from_host)
        return;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v) {
                v += 1 + (v[1] == ' ');
                v[strcspn(v, "\n")] = '\0';
                snprintf(t->sum.cpu_model, sizeof(t->sum.cpu_model), "%s", v);
            }
            break;
        }
    }
    fclose(f);
}

static const char *host_isa(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return "avx512";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "avx2";
#endif
    return "generic";
}

/* Hardware id of a package or core: hwloc's os_index (Linux physical_package_id / core_id), or
 * the logical index when the source has none (some XML files). */
static int hw_id(hwloc_obj_t o)
{
    if (o->os_index == HWLOC_UNKNOWN_INDEX || o->os_index > (unsigned)(1 << 20))
        return (int)o->logical_index;
    return (int)o->os_index;
}

/* Make core_id unique within each package, keeping libomp's order. Linux repeats core ids across
 * the dies of a package on some multi-die CPUs; libomp's cpuinfo method would then merge two
 * cores into one (their PUs would become threads of one core), so such ids become die rank x
 * (largest core id + 1) + core id: die-major, the order libomp's x2APIC decoding gives. PUs
 * without a core object (core_id -1) get ids above every real one. @p die: die logical index of
 * each PU (table order) or -1. Called before the table is sorted (PU i is hwloc's PU L#i). */
static void unique_core_ids(bkm_topo_t *t, const int *die)
{
    for (int i = 0; i < t->n_pu; i++) {
        bkm_topo_pu_t *u = &t->pu[i];
        int max_id = -1, first_die = -1, repeated = 0;
        if (i > 0 && t->pu[i - 1].pkg == u->pkg)
            continue; /* this package was done with its first PU */
        for (int j = i; j < t->n_pu; j++) {
            const bkm_topo_pu_t *v = &t->pu[j];
            if (v->pkg != u->pkg)
                continue;
            if (v->core_id > max_id)
                max_id = v->core_id;
            if (die[j] >= 0 && (first_die < 0 || die[j] < first_die))
                first_die = die[j];
            for (int k = i; k < j && !repeated; k++)
                if (t->pu[k].pkg == u->pkg && t->pu[k].core_id == v->core_id && t->pu[k].core != v->core)
                    repeated = 1;
        }
        for (int j = i; j < t->n_pu; j++) {
            bkm_topo_pu_t *v = &t->pu[j];
            if (v->pkg != u->pkg)
                continue;
            if (v->core_id < 0)
                v->core_id = max_id + 1 + v->core;
            else if (repeated)
                v->core_id = (die[j] >= 0 && first_die >= 0 ? die[j] - first_die : v->core) * (max_id + 1) +
                             v->core_id;
        }
    }
}

/* Build the flat tables from the loaded hwloc topology. @p allowed: initial mask or NULL (all). */
static int build_tables(bkm_topo_t *t, const bkm_cpuset_t *allowed, bkm_err_t *err)
{
    hwloc_topology_t h = t->h;
    int n = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
    if (n <= 0)
        return bkm_err_set(err, BKM_EDEP, "hwloc topology has no processing units");
    t->pu = bkm_calloc((size_t)n, sizeof(*t->pu));
    if (!t->pu)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d PUs", n);
    int rc = fill_numa(t, err);
    if (rc < 0)
        return rc;
    fill_caches(t);

    int shared = l2_is_shared(h);
    int n_cores_obj = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE);
    int *die = bkm_calloc((size_t)n, sizeof(*die));
    hwloc_obj_t *llcs = bkm_calloc((size_t)n, sizeof(*llcs)); /* distinct last-level caches seen */
    int n_llc = 0;
    if (!die || !llcs) {
        bkm_free(die);
        bkm_free(llcs);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d PUs", n);
    }
    for (int i = 0; i < n; i++) {
        hwloc_obj_t p = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, (unsigned)i);
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_CORE, p);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, p);
        hwloc_obj_t tile = tile_of(h, core, shared);
        if (p->os_index >= BKM_CPUSET_MAX) {
            bkm_free(die);
            bkm_free(llcs);
            return bkm_err_set(err, BKM_EINVAL, "PU P#%u is beyond the supported OS indexes 0..%d", p->os_index,
                               BKM_CPUSET_MAX - 1);
        }
        hwloc_obj_t d = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_DIE, p);
        die[t->n_pu] = d ? (int)d->logical_index : -1;
        bkm_topo_pu_t *u = &t->pu[t->n_pu++];
        u->os = (int)p->os_index;
        u->pkg = pkg ? (int)pkg->logical_index : 0;
        /* A PU without a core object is its own core (numbered after the real cores). */
        u->core = core ? (int)core->logical_index : n_cores_obj + (int)p->logical_index;
        u->tile = tile ? (int)tile->logical_index : -1;
        u->numa = numa_of(t, u->os);
        u->allowed = allowed ? bkm_cpuset_isset(allowed, u->os) : 1;
        u->pkg_id = pkg ? hw_id(pkg) : 0;
        /* A PU without a core object: an id above every real core id (made unique below). */
        u->core_id = core ? hw_id(core) : -1;
        u->llc = -1;
        hwloc_obj_t llc = llc_of(p);
        for (int k = 0; llc && k <= n_llc; k++)
            if (k == n_llc || llcs[k] == llc) {
                if (k == n_llc)
                    llcs[n_llc++] = llc;
                u->llc = k;
                break;
            }
        u->smt = 0;
        if (core) {
            for (hwloc_obj_t q = hwloc_get_next_obj_inside_cpuset_by_type(h, core->cpuset, HWLOC_OBJ_PU, NULL); q;
                 q = hwloc_get_next_obj_inside_cpuset_by_type(h, core->cpuset, HWLOC_OBJ_PU, q))
                if (q->os_index < p->os_index)
                    u->smt++;
        }
    }
    unique_core_ids(t, die);
    bkm_free(die);
    bkm_free(llcs);
    qsort(t->pu, (size_t)t->n_pu, sizeof(*t->pu), pu_cmp);

    bkm_topo_summary_t *s = &t->sum;
    s->pus = t->n_pu;
    s->numa_nodes = t->n_numa;
    int last_pkg = -1, last_core = -1, last_tile = -1;
    for (int i = 0; i < t->n_pu; i++) {
        const bkm_topo_pu_t *u = &t->pu[i];
        if (u->pkg != last_pkg)
            s->packages++;
        if (u->core != last_core)
            s->cores++;
        if (u->tile >= 0 && (u->tile != last_tile || u->pkg != last_pkg))
            s->tiles++;
        if (u->smt + 1 > s->pus_per_core_max)
            s->pus_per_core_max = u->smt + 1;
        s->allowed_pus += u->allowed != 0;
        last_pkg = u->pkg;
        last_core = u->core;
        last_tile = u->tile;
    }
    return BKM_OK;
}

static int topo_new(bkm_topo_t **out, bkm_err_t *err)
{
    bkm_topo_t *t = bkm_calloc(1, sizeof(*t));
    if (!t)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for a topology");
    if (hwloc_topology_init(&t->h) < 0) {
        int e = errno;
        bkm_free(t);
        return bkm_err_set(err, BKM_EDEP, "hwloc_topology_init failed: %s", strerror(e));
    }
    *out = t;
    return BKM_OK;
}

int bkm_topo_open_host(bkm_topo_t **topo, bkm_err_t *err)
{
    bkm_topo_t *t = NULL;
    int rc;
    if (!topo)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_open_host: topo is NULL");
    *topo = NULL;
    if ((rc = topo_new(&t, err)) < 0)
        return rc;
    /* Keep PUs outside our cgroup/affinity mask in the table, marked allowed = 0. */
    hwloc_topology_set_flags(t->h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (hwloc_topology_load(t->h) < 0) {
        rc = bkm_err_set(err, BKM_EDEP, "hwloc could not discover this host: %s", strerror(errno));
        goto out;
    }
    /* libomp's `respect`: the initial mask is the calling thread's affinity, within what the
     * cgroup allows. */
    cpu_set_t cs;
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof(cs), &cs) != 0) {
        rc = bkm_err_set(err, BKM_EDEP, "sched_getaffinity failed: %s", strerror(errno));
        goto out;
    }
    const struct hwloc_bitmap_s *ha = hwloc_topology_get_allowed_cpuset(t->h);
    bkm_cpuset_t allowed;
    bkm_cpuset_zero(&allowed);
    for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
        if (CPU_ISSET(c, &cs) && (!ha || hwloc_bitmap_isset(ha, (unsigned)c)))
            bkm_cpuset_set(&allowed, c);
    if ((rc = build_tables(t, &allowed, err)) < 0)
        goto out;
    snprintf(t->sum.source, sizeof(t->sum.source), "host");
    snprintf(t->sum.isa, sizeof(t->sum.isa), "%s", host_isa());
    fill_cpu_model(t, 1);
    *topo = t;
    t = NULL;
    rc = BKM_OK;
out:
    bkm_topo_close(t);
    return rc;
}

/* Load an already-configured (XML/synthetic) hwloc topology with every PU allowed. */
static int open_offline(bkm_topo_t *t, const char *source, const char *what, bkm_err_t *err)
{
    if (hwloc_topology_load(t->h) < 0)
        return bkm_err_set(err, BKM_EINVAL, "hwloc could not load %s: %s", what, strerror(errno));
    int rc = build_tables(t, NULL, err);
    if (rc < 0)
        return rc;
    snprintf(t->sum.source, sizeof(t->sum.source), "%s", source);
    snprintf(t->sum.isa, sizeof(t->sum.isa), "unknown");
    fill_cpu_model(t, 0);
    return BKM_OK;
}

int bkm_topo_open_xml(bkm_topo_t **topo, const char *path, bkm_err_t *err)
{
    bkm_topo_t *t = NULL;
    char *xml = NULL;
    size_t len = 0;
    int rc;
    if (!topo || !path || !*path)
        return bkm_err_set(err, BKM_EINVAL, "hwloc XML path is empty");
    *topo = NULL;
    /* read here, bounded, and hand hwloc the bytes: hwloc would open a FIFO or /dev/zero itself */
    if ((rc = bkm_file_read_regular(path, "hwloc XML", BKM_TOPO_XML_MAX_BYTES, &xml, &len, err)) < 0)
        return rc;
    if ((rc = topo_new(&t, err)) < 0)
        goto out;
    if (hwloc_topology_set_xmlbuffer(t->h, xml, (int)len + 1) < 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "hwloc rejected XML file '%s': %s", path, strerror(errno));
        goto out;
    }
    char what[600];
    snprintf(what, sizeof(what), "XML file '%s'", path);
    if ((rc = open_offline(t, "xml", what, err)) < 0)
        goto out;
    *topo = t;
    t = NULL;
out:
    bkm_topo_close(t);
    bkm_free(xml);
    return rc;
}

/* hwloc silently falls back to default numbering when the PU level's "indexes=" list does not
 * have one entry per PU; a profile with a wrong list must not be used with the wrong numbering. */
static int check_pu_indexes(const bkm_topo_t *t, const char *desc, bkm_err_t *err)
{
    const char *pu = strstr(desc, "pu:");
    const char *idx = pu ? strstr(pu, "indexes=") : NULL;
    if (!idx)
        return BKM_OK;
    idx += strlen("indexes=");
    if (!isdigit((unsigned char)*idx))
        return BKM_OK; /* "indexes=pack:core" interleaving, not a list */
    int n = 0;
    hwloc_obj_t o = NULL;
    for (const char *s = idx; isdigit((unsigned char)*s);) {
        char *end;
        long v = strtol(s, &end, 10);
        o = hwloc_get_obj_by_type(t->h, HWLOC_OBJ_PU, (unsigned)n);
        if (o && (long)o->os_index != v)
            return bkm_err_set(err, BKM_EINVAL,
                               "synthetic '%.200s': hwloc ignored the PU indexes= list (PU L#%d has P#%u, "
                               "the list says %ld); give one OS index per PU",
                               desc, n, o->os_index, v);
        n++;
        s = (*end == ',') ? end + 1 : end;
    }
    if (n != t->n_pu)
        return bkm_err_set(err, BKM_EINVAL, "synthetic '%.200s': the PU indexes= list has %d values for %d PUs",
                           desc, n, t->n_pu);
    return BKM_OK;
}

/* Product of the level arities of a synthetic description ("pack:2 core:16 pu:2" -> 64) into *n,
 * so that "pack:99999 core:99999" is refused before hwloc tries to build it. hwloc reads a count
 * with strtoul(..., 0): "0x100" is 256 and "010" is 8 there; a count is therefore taken only as
 * plain decimal digits without a leading zero, ending the level or followed by its attributes,
 * and anything else (hex, octal, a sign, blanks) is refused here, so that the count bkm checks is
 * the one hwloc builds. A level that is no "type:count" (hwloc's other forms) gives *n = -1 and
 * hwloc judges it. Memory levels in [...] do not multiply. */
static int synthetic_pu_count(const char *desc, long long *out, bkm_err_t *err)
{
    long long n = 1;
    const char *s = desc;
    *out = -1;
    while (*s) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        if (*s == '[') {
            while (*s && *s != ']')
                s++;
            if (*s)
                s++;
            continue;
        }
        const char *colon = NULL, *q = s;
        for (; *q && !isspace((unsigned char)*q) && *q != '('; q++)
            if (*q == ':' && !colon)
                colon = q;
        const char *num = colon ? colon + 1 : s, *end = num;
        while (isdigit((unsigned char)*end))
            end++;
        if (end == num || num[0] == '0' || (*end && !isspace((unsigned char)*end) && *end != '(')) {
            if (!colon && !isdigit((unsigned char)*num))
                return BKM_OK;   /* not "type:count": hwloc judges the description */
            return bkm_err_set(err, BKM_EINVAL, "synthetic '%.200s': count '%.*s' of level '%.*s' is not a plain decimal "
                               "number from 1 (hwloc reads 0x... as hex and 0... as octal)", desc,
                               (int)strcspn(num, " \t\n("), num, (int)(q - s), s);
        }
        long long a = 0;
        for (const char *d = num; d < end; d++)
            a = a > (1ll << 40) ? a : a * 10 + (*d - '0');
        n = (a > (1ll << 40) || n > (1ll << 40) / a) ? (1ll << 40) : n * a;
        s = end;
        if (*s == '(') { /* attributes: skip to the matching ')' */
            int depth = 0;
            for (; *s; s++) {
                depth += (*s == '(') - (*s == ')');
                if (depth == 0) {
                    s++;
                    break;
                }
            }
        }
        while (*s && !isspace((unsigned char)*s))
            s++;
    }
    *out = n;
    return BKM_OK;
}

int bkm_topo_open_synthetic(bkm_topo_t **topo, const char *desc, bkm_err_t *err)
{
    bkm_topo_t *t = NULL;
    int rc;
    if (!topo || !desc || !*desc)
        return bkm_err_set(err, BKM_EINVAL, "hwloc synthetic description is empty");
    *topo = NULL;
    long long n_pu = -1;
    if ((rc = synthetic_pu_count(desc, &n_pu, err)) < 0)
        return rc;
    if (n_pu > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "synthetic '%.300s' describes %s%lld PUs, more than the %d supported", desc,
                           n_pu >= (1ll << 40) ? "over " : "", n_pu, BKM_CPUSET_MAX);
    if ((rc = topo_new(&t, err)) < 0)
        return rc;
    if (hwloc_topology_set_synthetic(t->h, desc) < 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "invalid hwloc synthetic description '%.300s': %s", desc,
                         strerror(errno));
        goto out;
    }
    if ((rc = open_offline(t, "synthetic", "the synthetic description", err)) < 0) {
        bkm_err_prefix(err, "synthetic '%.200s'", desc);
        goto out;
    }
    if ((rc = check_pu_indexes(t, desc, err)) < 0)
        goto out;
    *topo = t;
    t = NULL;
out:
    bkm_topo_close(t);
    return rc;
}

void bkm_topo_close(bkm_topo_t *topo)
{
    if (!topo)
        return;
    if (topo->h)
        hwloc_topology_destroy(topo->h);
    bkm_free(topo->pu);
    bkm_free(topo->numa);
    bkm_free(topo);
}

void bkm__topo_set_origin(bkm_topo_t *topo, const char *source, const char *isa)
{
    if (!topo)
        return;
    if (source && *source)
        snprintf(topo->sum.source, sizeof(topo->sum.source), "%s", source);
    if (isa && *isa)
        snprintf(topo->sum.isa, sizeof(topo->sum.isa), "%s", isa);
}

const bkm_topo_pu_t *bkm_topo_pus(const bkm_topo_t *topo, int *n_pus)
{
    if (n_pus)
        *n_pus = topo ? topo->n_pu : 0;
    return topo ? topo->pu : NULL;
}

const bkm_topo_cache_t *bkm_topo_caches(const bkm_topo_t *topo, int *n_caches)
{
    if (n_caches)
        *n_caches = topo ? topo->n_cache : 0;
    return topo ? topo->cache : NULL;
}

void bkm_topo_cache_sizes(const bkm_topo_t *topo, int64_t *l1d, int64_t *l2, int64_t *l3)
{
    int64_t *out[4] = {NULL, l1d, l2, l3};
    for (int lv = 1; lv <= 3; lv++)
        if (out[lv])
            *out[lv] = 0;
    for (int i = 0; topo && i < topo->n_cache; i++) {
        const bkm_topo_cache_t *c = &topo->cache[i];
        if (c->level >= 1 && c->level <= 3 && c->type != 'i' && out[c->level])
            *out[c->level] = (int64_t)c->size_bytes;
    }
}

const bkm_topo_numa_t *bkm_topo_numas(const bkm_topo_t *topo, int *n_numa)
{
    if (n_numa)
        *n_numa = topo ? topo->n_numa : 0;
    return topo ? topo->numa : NULL;
}

void bkm_topo_summary(const bkm_topo_t *topo, bkm_topo_summary_t *s)
{
    if (!s)
        return;
    if (!topo) {
        memset(s, 0, sizeof(*s));
        return;
    }
    *s = topo->sum;
}

void bkm_topo_allowed(const bkm_topo_t *topo, bkm_cpuset_t *set)
{
    bkm_cpuset_zero(set);
    if (!topo)
        return;
    for (int i = 0; i < topo->n_pu; i++)
        if (topo->pu[i].allowed)
            bkm_cpuset_set(set, topo->pu[i].os);
}

int bkm_topo_restrict(bkm_topo_t *topo, const bkm_cpuset_t *mask, bkm_err_t *err)
{
    if (!topo || !mask)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_restrict: NULL argument");
    bkm_cpuset_t known;
    bkm_cpuset_zero(&known);
    for (int i = 0; i < topo->n_pu; i++)
        bkm_cpuset_set(&known, topo->pu[i].os);
    for (int c = bkm_cpuset_first(mask); c >= 0; c = bkm_cpuset_next(mask, c))
        if (!bkm_cpuset_isset(&known, c))
            return bkm_err_set(err, BKM_EINVAL, "PU %d in the mask is not in the topology (%d PUs)", c,
                               topo->n_pu);
    if (bkm_cpuset_is_empty(mask))
        return bkm_err_set(err, BKM_EINVAL, "the restriction mask is empty");
    topo->sum.allowed_pus = 0;
    for (int i = 0; i < topo->n_pu; i++) {
        topo->pu[i].allowed = bkm_cpuset_isset(mask, topo->pu[i].os);
        topo->sum.allowed_pus += topo->pu[i].allowed;
    }
    return BKM_OK;
}

int bkm_topo_cpuinfo_write(const bkm_topo_t *topo, bkm_buf_t *out, bkm_err_t *err)
{
    if (!topo || !out)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_cpuinfo_write: NULL argument");
    /* OS order, as the kernel lists /proc/cpuinfo; libomp sorts by the ids itself. */
    bkm_cpuset_t seen;
    bkm_cpuset_zero(&seen);
    for (int i = 0; i < topo->n_pu; i++)
        bkm_cpuset_set(&seen, topo->pu[i].os);
    for (int os = bkm_cpuset_first(&seen); os >= 0; os = bkm_cpuset_next(&seen, os))
        for (int i = 0; i < topo->n_pu; i++)
            if (topo->pu[i].os == os)
                bkm_buf_printf(out, "processor\t: %d\nphysical id\t: %d\ncore id\t\t: %d\n\n", os,
                               topo->pu[i].pkg_id, topo->pu[i].core_id);
    if (out->oom)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory writing the cpuinfo text");
    return BKM_OK;
}

static void json_cpuset(bkm_json_w_t *w, const bkm_cpuset_t *s)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(s, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_buf_free(&b);
}

int bkm_topo_to_json(const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err)
{
    if (!topo || !w)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_to_json: NULL argument");
    const bkm_topo_summary_t *s = &topo->sum;
    bkm_json_obj_begin(w);
    bkm_json_key(w, "source"), bkm_json_str(w, s->source);
    bkm_json_key(w, "isa"), bkm_json_str(w, s->isa);
    bkm_json_key(w, "cpu_model"), bkm_json_str(w, s->cpu_model);
    bkm_json_key(w, "packages"), bkm_json_int(w, s->packages);
    bkm_json_key(w, "numa_nodes"), bkm_json_int(w, s->numa_nodes);
    bkm_json_key(w, "tiles"), bkm_json_int(w, s->tiles);
    bkm_json_key(w, "cores"), bkm_json_int(w, s->cores);
    bkm_json_key(w, "pus"), bkm_json_int(w, s->pus);
    bkm_json_key(w, "smt"), bkm_json_int(w, s->pus_per_core_max);
    bkm_json_key(w, "allowed_pus"), bkm_json_int(w, s->allowed_pus);
    bkm_cpuset_t allowed;
    bkm_topo_allowed(topo, &allowed);
    bkm_json_key(w, "allowed"), json_cpuset(w, &allowed);

    bkm_json_key(w, "caches");
    bkm_json_arr_begin(w);
    for (int i = 0; i < topo->n_cache; i++) {
        const bkm_topo_cache_t *c = &topo->cache[i];
        char type[2] = {c->type, '\0'};
        bkm_json_obj_begin(w);
        bkm_json_key(w, "level"), bkm_json_int(w, c->level);
        bkm_json_key(w, "type"), bkm_json_str(w, type);
        bkm_json_key(w, "size_bytes"), bkm_json_int(w, (int64_t)c->size_bytes);
        bkm_json_key(w, "line_bytes"), bkm_json_int(w, c->line_bytes);
        bkm_json_key(w, "count"), bkm_json_int(w, c->count);
        bkm_json_key(w, "pus_per_cache"), bkm_json_int(w, c->pus_per_cache);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);

    bkm_json_key(w, "numa");
    bkm_json_arr_begin(w);
    for (int i = 0; i < topo->n_numa; i++) {
        const bkm_topo_numa_t *m = &topo->numa[i];
        bkm_json_obj_begin(w);
        bkm_json_key(w, "os"), bkm_json_int(w, m->os);
        bkm_json_key(w, "memory_bytes"), bkm_json_int(w, (int64_t)m->memory_bytes);
        bkm_json_key(w, "subtype"), bkm_json_str(w, m->subtype);
        bkm_json_key(w, "cpus"), json_cpuset(w, &m->cpus);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);

    bkm_json_key(w, "smt_stride"), bkm_json_int(w, bkm_topo_smt_stride(topo));
    bkm_json_key(w, "llc_groups");
    bkm_json_arr_begin(w);
    {
        int n = bkm_topo_groups(topo, BKM_TOPO_GROUP_LLC, NULL, 0);
        bkm_cpuset_t *g = n > 0 ? bkm_calloc((size_t)n, sizeof(*g)) : NULL;
        if (n > 0 && g == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory writing topology JSON");
        bkm_topo_groups(topo, BKM_TOPO_GROUP_LLC, g, n);
        for (int i = 0; i < n; i++)
            json_cpuset(w, &g[i]);
        bkm_free(g);
    }
    bkm_json_arr_end(w);

    bkm_json_key(w, "cores_list");
    bkm_json_arr_begin(w);
    for (int i = 0; i < topo->n_pu;) {
        const bkm_topo_pu_t *u = &topo->pu[i];
        bkm_json_obj_begin(w);
        bkm_json_key(w, "core"), bkm_json_int(w, u->core);
        bkm_json_key(w, "pkg"), bkm_json_int(w, u->pkg);
        bkm_json_key(w, "pkg_id"), bkm_json_int(w, u->pkg_id);
        bkm_json_key(w, "core_id"), bkm_json_int(w, u->core_id);
        bkm_json_key(w, "tile"), bkm_json_int(w, u->tile);
        bkm_json_key(w, "numa"), bkm_json_int(w, u->numa);
        bkm_json_key(w, "pus");
        bkm_json_arr_begin(w);
        int j = i;
        for (; j < topo->n_pu && topo->pu[j].core == u->core; j++)
            bkm_json_int(w, topo->pu[j].os);
        bkm_json_arr_end(w);
        bkm_json_key(w, "allowed");
        bkm_json_arr_begin(w);
        for (int k = i; k < j; k++)
            bkm_json_bool(w, topo->pu[k].allowed);
        bkm_json_arr_end(w);
        bkm_json_obj_end(w);
        i = j;
    }
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
    if (w->out && w->out->oom)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory writing topology JSON");
    return BKM_OK;
}

int bkm_topo_groups(const bkm_topo_t *topo, bkm_topo_group_t kind, bkm_cpuset_t *sets, int cap)
{
    int n = 0;
    if (!topo)
        return 0;
    if (kind == BKM_TOPO_GROUP_NUMA) {
        for (int i = 0; i < topo->n_numa; i++) {
            bkm_cpuset_t s;
            bkm_cpuset_zero(&s);
            for (int k = 0; k < topo->n_pu; k++)
                if (topo->pu[k].allowed && bkm_cpuset_isset(&topo->numa[i].cpus, topo->pu[k].os))
                    bkm_cpuset_set(&s, topo->pu[k].os);
            int dup = bkm_cpuset_is_empty(&s);
            /* a second node over the same CPUs (KNL flat mode's MCDRAM) is no group of its own */
            for (int j = 0; j < i && !dup; j++) {
                bkm_cpuset_t o;
                bkm_cpuset_zero(&o);
                for (int k = 0; k < topo->n_pu; k++)
                    if (topo->pu[k].allowed && bkm_cpuset_isset(&topo->numa[j].cpus, topo->pu[k].os))
                        bkm_cpuset_set(&o, topo->pu[k].os);
                dup = bkm_cpuset_equal(&o, &s);
            }
            if (dup)
                continue;
            if (sets && n < cap)
                sets[n] = s;
            n++;
        }
        return n;
    }
    /* llc indexes are dense and numbered in hwloc's PU order (build_tables) */
    int max_llc = -1;
    for (int k = 0; k < topo->n_pu; k++)
        if (topo->pu[k].llc > max_llc)
            max_llc = topo->pu[k].llc;
    for (int g = 0; g <= max_llc; g++) {
        bkm_cpuset_t s;
        bkm_cpuset_zero(&s);
        for (int k = 0; k < topo->n_pu; k++)
            if (topo->pu[k].allowed && topo->pu[k].llc == g)
                bkm_cpuset_set(&s, topo->pu[k].os);
        if (bkm_cpuset_is_empty(&s))
            continue;
        if (sets && n < cap)
            sets[n] = s;
        n++;
    }
    return n;
}

/* "{0:8,128:8}": the set as one place, runs of consecutive ids as start:length. */
static void place_text(const bkm_cpuset_t *s, bkm_buf_t *b)
{
    int first = 1;
    bkm_buf_puts(b, "{");
    for (int c = bkm_cpuset_first(s); c >= 0;) {
        int e = c;
        while (bkm_cpuset_isset(s, e + 1))
            e++;
        if (e > c)
            bkm_buf_printf(b, "%s%d:%d", first ? "" : ",", c, e - c + 1);
        else
            bkm_buf_printf(b, "%s%d", first ? "" : ",", c);
        first = 0;
        c = bkm_cpuset_next(s, e);
    }
    bkm_buf_puts(b, "}");
}

/* Is @p b the set @p a shifted by @p d? */
static int shifted(const bkm_cpuset_t *a, const bkm_cpuset_t *b, int d)
{
    if (bkm_cpuset_count(a) != bkm_cpuset_count(b))
        return 0;
    for (int c = bkm_cpuset_first(a); c >= 0; c = bkm_cpuset_next(a, c))
        if (c + d < 0 || c + d >= BKM_CPUSET_MAX || !bkm_cpuset_isset(b, c + d))
            return 0;
    return 1;
}

int bkm_topo_group_places(const bkm_topo_t *topo, bkm_topo_group_t kind, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_cpuset_t *g = NULL;
    int n, stride, replicated = 1;
    if (!topo || !out)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_group_places: NULL argument");
    n = bkm_topo_groups(topo, kind, NULL, 0);
    if (n < 2)
        return bkm_err_set(err, BKM_EINVAL, "the allowed PUs span %d %s: no place list to make", n,
                           kind == BKM_TOPO_GROUP_NUMA ? "NUMA node(s)" : "last-level cache(s)");
    if ((g = bkm_calloc((size_t)n, sizeof(*g))) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d groups", n);
    bkm_topo_groups(topo, kind, g, n);
    stride = bkm_cpuset_first(&g[1]) - bkm_cpuset_first(&g[0]);
    for (int i = 1; i < n && replicated; i++)
        replicated = stride > 0 && shifted(&g[0], &g[i], i * stride);
    if (replicated) {
        place_text(&g[0], out);
        bkm_buf_printf(out, ":%d:%d", n, stride);
    } else {
        for (int i = 0; i < n; i++) {
            if (i)
                bkm_buf_puts(out, ",");
            place_text(&g[i], out);
        }
    }
    bkm_free(g);
    return out->oom ? bkm_err_set(err, BKM_ENOMEM, "out of memory writing a place list") : BKM_OK;
}

int bkm_topo_smt_stride(const bkm_topo_t *topo)
{
    int stride = 0;
    for (int i = 0; topo && i < topo->n_pu;) {
        int j = i;
        while (j < topo->n_pu && topo->pu[j].core == topo->pu[i].core)
            j++;
        /* the PUs of a core are sorted by OS index within it (pu_cmp) */
        for (int k = i + 1; k < j; k++) {
            int d = topo->pu[k].os - topo->pu[k - 1].os;
            if (stride == 0)
                stride = d;
            else if (d != stride)
                return 0;
        }
        i = j;
    }
    return stride;
}
