/* SPDX-License-Identifier: MIT */
/* The affinity planner: the OS-PU set of every thread of the outermost OpenMP team, computed the
 * way LLVM libomp 14 computes it (docs/affinity.md §2.1): socket/core/thread topology built
 * from the allowed PUs (respect) and filtered by KMP_HW_SUBSET, granularity masks, the
 * compact/scatter sort keys, dups/nodups, the gtid → mask mapping (hidden helpers removed, so omp
 * thread k uses mask k + offset), balanced, explicit proclists and OMP_PLACES/OMP_PROC_BIND
 * through __kmp_partition_places. */
#include "planner_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 4
#define MAX_THREADS 4096
#define MAX_WARN 32

enum { LV_SOCKET, LV_TILE, LV_CORE, LV_THREAD };

typedef struct hwt {
    int os;
    int ids[MAXD];
    int sub[MAXD];
    int leader;
} hwt_t;

/* The runtime's view of the machine (kmp_topology_t). */
typedef struct model {
    int depth;
    int type[MAXD];
    hwt_t *h;
    int n;
    int ratio[MAXD], count[MAXD];
    int uniform;
    int threads_per_core, cores_per_pkg, packages, ncores;
    bkm_cpuset_t full;      /* __kmp_affin_fullMask */
} model_t;

/* Internal bind kinds: INTEL = KMP_AFFINITY-style gtid → mask mapping. */
enum { BIND_INTEL = 100 };

struct bkm_aff_plan {
    int n_threads;
    int bound;
    bkm_cpuset_t *cpus;
    bkm_cpuset_t allowed;
    char effective[BKM_AFF_PROCLIST_MAX + 160];
    char topology[128];     /* as libomp's verbose line: "2 sockets x 16 cores/socket x 2 threads/core" */
    const char *source;
    int blocktime_ms;
    int n_warn;
    char *warn[MAX_WARN];
};

/* ---------------------------------------------------------------------------------------- */

static void plan_warn(bkm_aff_plan_t *p, const char *fmt, ...) BKM_PRINTF(2, 3);
static void plan_warn(bkm_aff_plan_t *p, const char *fmt, ...)
{
    bkm_buf_t b;
    va_list ap;
    if (p->n_warn >= MAX_WARN)
        return;
    bkm_buf_init(&b);
    va_start(ap, fmt);
    bkm_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (b.oom) {
        bkm_buf_free(&b);
        return;
    }
    p->warn[p->n_warn++] = bkm_buf_take(&b);
}

static int hwt_cmp_ids(const void *a, const void *b)
{
    const hwt_t *x = a, *y = b;
    int i;
    for (i = 0; i < MAXD; i++) {
        if (x->ids[i] != y->ids[i])
            return x->ids[i] < y->ids[i] ? -1 : 1;
    }
    return 0;
}

/* kmp_hw_thread_t::compare_compact with the "compact" value c. */
static int cmp_compact_c(const hwt_t *x, const hwt_t *y, int depth, int c)
{
    int i;
    for (i = 0; i < c; i++) {
        int j = depth - i - 1;
        if (x->sub[j] != y->sub[j])
            return x->sub[j] < y->sub[j] ? -1 : 1;
    }
    for (; i < depth; i++) {
        int j = i - c;
        if (x->sub[j] != y->sub[j])
            return x->sub[j] < y->sub[j] ? -1 : 1;
    }
    return 0;
}

/* Stable merge sort of indexes by the compact key (keys are unique, so any sort agrees). */
static void sort_compact(const model_t *m, int c, int *idx, int *tmp, int lo, int hi)
{
    int mid, i, j, k;
    if (hi - lo < 2)
        return;
    mid = lo + (hi - lo) / 2;
    sort_compact(m, c, idx, tmp, lo, mid);
    sort_compact(m, c, idx, tmp, mid, hi);
    i = lo;
    j = mid;
    k = lo;
    while (i < mid && j < hi) {
        if (cmp_compact_c(&m->h[idx[j]], &m->h[idx[i]], m->depth, c) < 0)
            tmp[k++] = idx[j++];
        else
            tmp[k++] = idx[i++];
    }
    while (i < mid)
        tmp[k++] = idx[i++];
    while (j < hi)
        tmp[k++] = idx[j++];
    memcpy(idx + lo, tmp + lo, (size_t)(hi - lo) * sizeof(int));
}

/* _set_sub_ids */
static void model_set_sub_ids(model_t *m)
{
    int prev[MAXD], sub[MAXD], i, j, k;
    for (j = 0; j < MAXD; j++) {
        prev[j] = INT_MIN;
        sub[j] = -1;
    }
    for (i = 0; i < m->n; i++) {
        for (j = 0; j < m->depth; j++) {
            if (m->h[i].ids[j] != prev[j]) {
                sub[j]++;
                for (k = j + 1; k < m->depth; k++)
                    sub[k] = 0;
                break;
            }
        }
        for (j = 0; j < m->depth; j++) {
            prev[j] = m->h[i].ids[j];
            m->h[i].sub[j] = sub[j];
        }
    }
}

/* _gather_enumeration_information, _discover_uniformity, _set_globals */
static void model_enumerate(model_t *m)
{
    int prev[MAXD], max[MAXD], i, l, layer;
    int core_l = -1, thr_l = -1, pkg_l = -1, prod = 1;
    for (i = 0; i < MAXD; i++) {
        prev[i] = INT_MIN;
        max[i] = 0;
        m->count[i] = 0;
        m->ratio[i] = 0;
    }
    for (i = 0; i < m->n; i++) {
        for (layer = 0; layer < m->depth; layer++) {
            if (m->h[i].ids[layer] != prev[layer]) {
                for (l = layer; l < m->depth; l++)
                    m->count[l]++;
                max[layer]++;
                for (l = layer + 1; l < m->depth; l++) {
                    if (max[l] > m->ratio[l])
                        m->ratio[l] = max[l];
                    max[l] = 1;
                }
                break;
            }
        }
        for (layer = 0; layer < m->depth; layer++)
            prev[layer] = m->h[i].ids[layer];
    }
    for (layer = 0; layer < m->depth; layer++)
        if (max[layer] > m->ratio[layer])
            m->ratio[layer] = max[layer];
    for (layer = 0; layer < m->depth; layer++)
        prod *= m->ratio[layer];
    m->uniform = (prod == m->count[m->depth - 1]);
    for (layer = 0; layer < m->depth; layer++) {
        if (m->type[layer] == LV_CORE)
            core_l = layer;
        else if (m->type[layer] == LV_THREAD)
            thr_l = layer;
        else if (m->type[layer] == LV_SOCKET)
            pkg_l = layer;
    }
    m->threads_per_core = 1;
    for (l = thr_l; l > core_l; l--)
        m->threads_per_core *= m->ratio[l];
    m->cores_per_pkg = 1;
    for (l = core_l; l > pkg_l; l--)
        m->cores_per_pkg *= m->ratio[l];
    m->packages = m->count[pkg_l];
    m->ncores = m->count[core_l];
}

static int model_level_of(const model_t *m, int lv)
{
    int i;
    for (i = 0; i < m->depth; i++)
        if (m->type[i] == lv)
            return i;
    return -1;
}

/* The level a granularity / place kind / HW_SUBSET layer maps to, or -1 (not in the topology). */
static int model_level_for(const model_t *m, bkm_aff_gran_t g, int tiles_modelled)
{
    switch (g) {
    case BKM_AFF_GRAN_THREAD: return model_level_of(m, LV_THREAD);
    case BKM_AFF_GRAN_CORE: return model_level_of(m, LV_CORE);
    case BKM_AFF_GRAN_SOCKET: return model_level_of(m, LV_SOCKET);
    case BKM_AFF_GRAN_TILE:
    case BKM_AFF_GRAN_L2:
        if (!tiles_modelled)
            return -1;
        /* A removed radix-1 tile layer is equivalent to the layer that was kept. */
        if (model_level_of(m, LV_TILE) >= 0)
            return model_level_of(m, LV_TILE);
        return g == BKM_AFF_GRAN_TILE ? model_level_of(m, LV_CORE) : -1;
    case BKM_AFF_GRAN_LL:
        if (tiles_modelled && model_level_of(m, LV_TILE) >= 0)
            return model_level_of(m, LV_TILE);
        return model_level_of(m, LV_SOCKET);
    default: return -1;
    }
}

static void model_free(model_t *m)
{
    bkm_free(m->h);
    m->h = NULL;
}

/* Build the runtime's topology from the PU table: respect → only allowed PUs. Ids are what a
 * cpuinfo-driven libomp sees (__kmp_affinity_create_cpuinfo_map, then sort_ids): the package's
 * and the core's hardware ids (physical id, core id), so packages and cores are ordered by them
 * and not by the OS numbering of their PUs, and a thread id counted among the usable PUs of the
 * core in OS order. With the tile level (hwloc-method runtimes) the ids are hwloc's logical
 * indexes, as libomp's hwloc method takes them. */
static int model_build(model_t *m, const bkm_topo_t *topo, int respect, int tiles, bkm_err_t *err)
{
    const bkm_topo_pu_t *pu;
    int n_pu = 0, i, have_tile = 0;
    memset(m, 0, sizeof(*m));
    pu = bkm_topo_pus(topo, &n_pu);
    if (pu == NULL || n_pu <= 0)
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: the topology has no PUs");
    m->h = bkm_calloc((size_t)n_pu, sizeof(hwt_t));
    if (m->h == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
    if (tiles)
        for (i = 0; i < n_pu; i++)
            if (pu[i].tile >= 0)
                have_tile = 1;
    m->depth = 0;
    m->type[m->depth++] = LV_SOCKET;
    if (have_tile)
        m->type[m->depth++] = LV_TILE;
    m->type[m->depth++] = LV_CORE;
    m->type[m->depth++] = LV_THREAD;
    {
        int first_core_of_pkg = -1, cur_pkg = -1, cur_core = -1, thr = 0;
        for (i = 0; i < n_pu; i++) {
            hwt_t *h;
            int d = 0;
            if (pu[i].pkg != cur_pkg) {
                cur_pkg = pu[i].pkg;
                first_core_of_pkg = pu[i].core;
            }
            if (pu[i].core != cur_core) {
                cur_core = pu[i].core;
                thr = 0;
            }
            if (respect && !pu[i].allowed)
                continue;
            if (pu[i].os < 0 || pu[i].os >= BKM_CPUSET_MAX)
                continue;
            h = &m->h[m->n++];
            h->os = pu[i].os;
            if (have_tile) { /* hwloc method: logical indexes */
                h->ids[d++] = pu[i].pkg;
                h->ids[d++] = pu[i].tile;
                h->ids[d++] = pu[i].core - first_core_of_pkg;
            } else { /* x2APIC / cpuinfo: hardware ids, so packages and cores sort by them */
                h->ids[d++] = pu[i].pkg_id;
                h->ids[d++] = pu[i].core_id;
            }
            h->ids[d++] = thr++;
            bkm_cpuset_set(&m->full, pu[i].os);
        }
    }
    if (m->n == 0) {
        model_free(m);
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: no allowed PU in the topology");
    }
    qsort(m->h, (size_t)m->n, sizeof(hwt_t), hwt_cmp_ids);
    /* _remove_radix1_layers: only a tile layer can go (socket/core/thread always stay). */
    if (have_tile) {
        int radix1_pt = 1, radix1_tc = 1;
        for (i = 1; i < m->n; i++) {
            if (m->h[i].ids[0] == m->h[i - 1].ids[0] && m->h[i].ids[1] != m->h[i - 1].ids[1])
                radix1_pt = 0;
            if (m->h[i].ids[1] == m->h[i - 1].ids[1] && m->h[i].ids[2] != m->h[i - 1].ids[2])
                radix1_tc = 0;
        }
        if (radix1_pt || radix1_tc) {
            for (i = 0; i < m->n; i++) {
                m->h[i].ids[1] = m->h[i].ids[2];
                m->h[i].ids[2] = m->h[i].ids[3];
                m->h[i].ids[3] = 0;
            }
            m->depth = 3;
            m->type[1] = LV_CORE;
            m->type[2] = LV_THREAD;
        }
    }
    model_set_sub_ids(m);
    model_enumerate(m);
    return BKM_OK;
}

static const char *layer_name(bkm_aff_gran_t g)
{
    return bkm__aff_gran_keyword(g);
}

/* kmp_topology_t::filter_hw_subset; sub_ids are not recomputed afterwards (as in libomp). */
static int model_hw_subset(model_t *m, const bkm_aff_hw_subset_t *hs, int tiles, bkm_err_t *err)
{
    int level[8], i, k, n_new = 0;
    for (k = 0; k < hs->n; k++) {
        const bkm_aff_hw_item_t *it = &hs->item[k];
        level[k] = model_level_for(m, it->layer, tiles);
        if (level[k] < 0)
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: layer \"%s\" of item %d%s is not in the "
                               "topology libomp 14 builds (socket/core/thread; libomp ignores the whole "
                               "variable)", layer_name(it->layer), it->num, layer_name(it->layer));
        for (i = 0; i < k; i++)
            if (level[i] == level[k])
                return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: two items name the same layer (%s%s%s; libomp "
                                   "14 ignores the variable)", layer_name(hs->item[i].layer),
                                   hs->item[i].layer == it->layer ? "" : " and ",
                                   hs->item[i].layer == it->layer ? "" : layer_name(it->layer));
        if (it->num + it->offset > m->ratio[level[k]]) {
            char off[24] = "";
            if (it->offset > 0)
                snprintf(off, sizeof(off), "@%d", it->offset);
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: %ss: too many requested: item \"%d %s%s\" "
                               "needs %d per parent, the topology has at most %d", layer_name(it->layer),
                               it->num, layer_name(it->layer), off, it->num + it->offset, m->ratio[level[k]]);
        }
    }
    bkm_cpuset_zero(&m->full);
    for (i = 0; i < m->n; i++) {
        int drop = 0;
        for (k = 0; k < hs->n; k++) {
            int s = m->h[i].sub[level[k]];
            if (s < hs->item[k].offset || s >= hs->item[k].offset + hs->item[k].num) {
                drop = 1;
                break;
            }
        }
        if (!drop) {
            m->h[n_new++] = m->h[i];
            bkm_cpuset_set(&m->full, m->h[i].os);
        }
    }
    if (n_new == 0)
        return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: no PU is left");
    m->n = n_new;
    model_enumerate(m);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Masks                                                                                     */

typedef struct masks {
    bkm_cpuset_t *os_mask;  /* indexed by hwt index (id order): the granularity mask */
    bkm_cpuset_t *list;     /* __kmp_affinity_masks */
    int n;
} masks_t;

static int create_os_id_masks(model_t *m, int gran_levels, masks_t *mk, int *n_unique, bkm_err_t *err)
{
    int i, j = 0, leader = 0, unique = 0;
    int keep = m->depth - gran_levels;
    bkm_cpuset_t sum;
    mk->os_mask = bkm_calloc((size_t)m->n, sizeof(bkm_cpuset_t));
    if (mk->os_mask == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
    bkm_cpuset_zero(&sum);
    bkm_cpuset_set(&sum, m->h[0].os);
    for (i = 1; i <= m->n; i++) {
        int close = 0;
        if (i < m->n) {
            int l;
            close = 1;
            for (l = 0; l < keep; l++)
                if (m->h[i].ids[l] != m->h[leader].ids[l])
                    close = 0;
        }
        if (close) {
            bkm_cpuset_set(&sum, m->h[i].os);
            continue;
        }
        for (; j < i; j++) {
            mk->os_mask[j] = sum;
            m->h[j].leader = (j == leader);
        }
        unique++;
        if (i < m->n) {
            leader = i;
            bkm_cpuset_zero(&sum);
            bkm_cpuset_set(&sum, m->h[i].os);
        }
    }
    *n_unique = unique;
    return BKM_OK;
}

static int hwt_index_of_os(const model_t *m, int os)
{
    int i;
    for (i = 0; i < m->n; i++)
        if (m->h[i].os == os)
            return i;
    return -1;
}

typedef struct {
    const model_t *m;
    masks_t *mk;
    int cap;
    int is_gomp;
} proc_ud_t;

static const bkm_cpuset_t *mask_of_os(void *ud, int os)
{
    proc_ud_t *u = ud;
    int h = hwt_index_of_os(u->m, os);
    return &u->mk->os_mask[h < 0 ? 0 : h];
}

static int proclist_cb(void *ud, const int *ids, int n, bkm_err_t *err)
{
    proc_ud_t *u = ud;
    bkm_cpuset_t sum;
    int i;
    bkm_cpuset_zero(&sum);
    for (i = 0; i < n; i++) {
        int h = hwt_index_of_os(u->m, ids[i]);
        if (h < 0)
            return bkm_err_set(err, BKM_EINVAL, "%s: OS proc %d is not an allowed PU of this topology",
                               u->is_gomp ? "GOMP_CPU_AFFINITY" : "KMP_AFFINITY proclist", ids[i]);
        bkm_cpuset_or(&sum, &u->mk->os_mask[h]);
    }
    if (u->mk->n >= 65536)
        return bkm_err_set(err, BKM_EINVAL, "proclist: more than 65536 masks");
    if (u->mk->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 16;
        bkm_cpuset_t *nl = bkm_realloc(u->mk->list, (size_t)cap * sizeof(*nl));
        if (nl == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
        u->mk->list = nl;
        u->cap = cap;
    }
    u->mk->list[u->mk->n++] = sum;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* __kmp_partition_places for the outermost team (primary on place @p mp, partition all).     */

static int next_place(int place, int first, int last, int num_masks)
{
    if (place == last)
        return first;
    if (place == num_masks - 1)
        return 0;
    return place + 1;
}

/* More threads than places (close and spread agree): S threads per place, the rem extra threads
 * spread every gap places. */
static void partition_crowded(int n_th, int n_places, int num_masks, int mp, int *place_of)
{
    int S = n_th / n_places, s_count = 0, rem = n_th - S * n_places;
    int gap = rem > 0 ? n_places / rem : n_places, place = mp, gap_ct = gap, f;
    for (f = 0; f < n_th; f++) {
        place_of[f] = place;
        s_count++;
        if (s_count == S && rem && gap_ct == gap) {
            /* one extra thread on this place next */
        } else if (s_count == S + 1 && rem && gap_ct == gap) {
            place = next_place(place, 0, num_masks - 1, num_masks);
            s_count = 0;
            gap_ct = 1;
            rem--;
        } else if (s_count == S) {
            place = next_place(place, 0, num_masks - 1, num_masks);
            gap_ct++;
            s_count = 0;
        }
    }
}

static void partition_places(int bind, int n_th, int num_masks, int mp, int *place_of)
{
    int n_places = num_masks;
    int f;
    place_of[0] = mp;
    if (bind == BKM_AFF_BIND_PRIMARY) {
        for (f = 1; f < n_th; f++)
            place_of[f] = mp;
    } else if (n_th > n_places) {
        partition_crowded(n_th, n_places, num_masks, mp, place_of);
    } else if (bind == BKM_AFF_BIND_CLOSE) {
        int place = mp;
        for (f = 1; f < n_th; f++) {
            place = next_place(place, 0, num_masks - 1, num_masks);
            place_of[f] = place;
        }
    } else {
        /* spread with n_places == num_masks (outermost team): the uniform-spacing branch. */
        double current = (double)mp;
        double spacing = (double)(n_places + 1) / (double)n_th;
        for (f = 0; f < n_th; f++) {
            int first = (int)current;
            if (first >= n_places) {
                if (mp) {
                    first -= n_places;
                    if (first == mp + 1)
                        first--;
                } else {
                    first = 0;
                }
            }
            place_of[f] = first;
            current += spacing;
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* balanced (__kmp_balanced_affinity), for a team of n_th threads                             */

static int find_core_level(const model_t *m)
{
    int core_level = 0, i, j, bottom = m->depth - 1;
    for (i = 0; i < m->n; i++)
        for (j = bottom; j > 0; j--)
            if (m->h[i].ids[j] > 0 && core_level < j - 1)
                core_level = j - 1;
    return core_level;
}

static int find_core(const model_t *m, int proc, int core_level)
{
    int core = 0, i, j;
    for (i = 0; i + 1 <= proc; i++) {
        for (j = 0; j <= core_level; j++) {
            if (m->h[i + 1].sub[j] != m->h[i].sub[j]) {
                core++;
                break;
            }
        }
    }
    return core;
}

static int max_proc_per_core(const model_t *m, int core_level)
{
    int r = 1, l, thr = model_level_of(m, LV_THREAD);
    if (core_level >= m->depth - 1)
        return 1;
    for (l = thr; l > core_level; l--)
        r *= m->ratio[l];
    return r;
}

/* Non-uniform precheck of __kmp_aux_affinity_initialize; returns 0 when balanced falls back to
 * none, else fills *procarr (caller frees). */
static int balanced_procarr(const model_t *m, int **procarr, int *ncores_out, int *npc_out, bkm_err_t *err)
{
    int core_level = find_core_level(m);
    int ncores = m->count[core_level];
    int npc = max_proc_per_core(m, core_level);
    int nproc = ncores * npc, i, lastcore = -1, inlast = 0;
    int *pa;
    *procarr = NULL;
    if (nproc < 2 || nproc < m->n)
        return 0;
    pa = bkm_malloc((size_t)nproc * sizeof(int));
    if (pa == NULL) {
        bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
        return -1;
    }
    for (i = 0; i < nproc; i++)
        pa[i] = -1;
    for (i = 0; i < m->n; i++) {
        int core = find_core(m, i, core_level);
        inlast = (core == lastcore) ? inlast + 1 : 0;
        lastcore = core;
        if (core * npc + inlast < nproc)
            pa[core * npc + inlast] = m->h[i].os;
    }
    *procarr = pa;
    *ncores_out = ncores;
    *npc_out = npc;
    return 1;
}

/* KMP_AFFINITY=balanced: the masks of a team, as libomp 14's __kmp_balanced_affinity()
 * (kmp_affinity.cpp) computes them per thread. On a uniform machine threads are spread over
 * cores (or packages, when cores hold one PU) in contiguous chunks; on a non-uniform one over
 * the ncores x npc slots of procarr (-1 = no PU): every PU when the team fills the machine, one
 * core per thread when the team fits the cores, else the slot counts of balanced_spread. */
typedef struct balanced {
    const model_t *m;
    int fine;            /* one PU per thread (granularity finer than the core) */
    const int *procarr;  /* non-uniform: ncores x npc OS ids, -1 = no PU */
    int ncores, npc;
    int *count;          /* non-uniform spread: threads on each slot of procarr */
} balanced_t;

/* Whether granularity @p gran binds a thread to one PU on this machine. */
static int balanced_fine(const model_t *m, bkm_aff_gran_t gran)
{
    switch (gran) {
    case BKM_AFF_GRAN_THREAD: return 1;
    case BKM_AFF_GRAN_CORE: return m->threads_per_core <= 1;
    case BKM_AFF_GRAN_SOCKET: return m->cores_per_pkg <= 1;
    default: return 0;
    }
}

/* Uniform machine: thread @p tid's core (or package) and its place in it. */
static void balanced_uniform_mask(const balanced_t *b, int tid, int nthreads, bkm_cpuset_t *mask)
{
    const model_t *m = b->m;
    int nth_per_core = m->n / m->ncores, ncores = m->ncores, core, thread, chunk, big_cores;
    if (m->packages > 1 && nth_per_core <= 1) {
        nth_per_core = m->n / m->packages;
        ncores = m->packages;
    }
    chunk = nthreads / ncores;
    big_cores = nthreads % ncores;
    if (tid < (chunk + 1) * big_cores) {
        core = tid / (chunk + 1);
        thread = (tid % (chunk + 1)) % nth_per_core;
    } else {
        core = (tid - big_cores) / chunk;
        thread = ((tid - big_cores) % chunk) % nth_per_core;
    }
    for (int i = b->fine ? thread : 0; i < (b->fine ? thread + 1 : nth_per_core); i++) {
        int k = core * nth_per_core + i;
        if (k >= 0 && k < m->n)
            bkm_cpuset_set(mask, m->h[k].os);
    }
}

/* Non-uniform, a team as large as the machine: thread @p tid on PU @p tid (or its core). */
static void balanced_all_mask(const balanced_t *b, int tid, bkm_cpuset_t *mask)
{
    const model_t *m = b->m;
    int core_level, core;
    if (b->fine) {
        bkm_cpuset_set(mask, m->h[tid].os);
        return;
    }
    core_level = find_core_level(m);
    core = find_core(m, tid, core_level);
    for (int i = 0; i < m->n; i++)
        if (find_core(m, i, core_level) == core)
            bkm_cpuset_set(mask, m->h[i].os);
}

/* The PUs of core @p core of procarr (only the first with @p first_only); 0 when it has none. */
static int balanced_core_set(const balanced_t *b, int core, int first_only, bkm_cpuset_t *mask)
{
    int any = 0;
    for (int j = 0; j < b->npc; j++) {
        int os = b->procarr[core * b->npc + j];
        if (os == -1)
            continue;
        any = 1;
        if (mask)
            bkm_cpuset_set(mask, os);
        if (first_only)
            break;
    }
    return any;
}

/* Non-uniform, a team no larger than the cores: thread @p tid on the tid-th core with a PU. */
static void balanced_few_mask(const balanced_t *b, int tid, bkm_cpuset_t *mask)
{
    for (int i = 0, core = 0; i < b->ncores; i++) {
        if (!balanced_core_set(b, i, 1, NULL))
            continue;
        if (core++ == tid) {
            balanced_core_set(b, i, b->fine, mask);
            return;
        }
    }
}

/* One more thread on core @p core: on its first free PU slot, or, from the second pass on
 * (@p stack), on its first PU slot again. 1 when a slot took it. */
static int balanced_take(balanced_t *b, int core, int stack)
{
    for (int k = 0; k < b->npc; k++) {
        int s = core * b->npc + k;
        if (b->procarr[s] != -1 && (b->count[s] == 0 || stack)) {
            b->count[s]++;
            return 1;
        }
    }
    return 0;
}

/* Non-uniform, a team larger than the cores: b->count[slot] threads per slot, dealt as libomp
 * deals them (passes over the cores by the number of PUs they have, first to free PUs, then
 * stacked). Computed once for the team; @p scratch holds ncores + 2 * (npc + 1) ints, zeroed. */
static void balanced_spread(balanced_t *b, int nthreads, int *scratch)
{
    int *nproc_at_core = scratch, *with_x = scratch + b->ncores, *x_to_max = with_x + b->npc + 1;
    int nth = nthreads, stack = 0;
    for (int i = 0; i < b->ncores; i++) {
        int cnt = 0;
        for (int j = 0; j < b->npc; j++)
            cnt += b->procarr[i * b->npc + j] != -1;
        nproc_at_core[i] = cnt;
        with_x[cnt]++;
    }
    for (int i = 0; i <= b->npc; i++)
        for (int j = i; j <= b->npc; j++)
            x_to_max[i] += with_x[j];
    while (nth > 0) {
        int progress = 0;
        for (int j = 1; j <= b->npc && nth > 0; j++) {
            int cnt = x_to_max[j];   /* cores with at least j PUs: one thread each this pass */
            for (int i = 0; i < b->ncores; i++) {
                if (nproc_at_core[i] == 0)
                    continue;
                if (balanced_take(b, i, stack))
                    cnt--, nth--, progress = 1;
                if (cnt == 0 || nth == 0)
                    break;
            }
        }
        if (!progress && stack)
            break; /* cannot happen with at least one PU; guards the loop */
        stack = 1;
    }
}

/* Non-uniform spread: thread @p tid on the slot where the running count passes it (or that
 * slot's core). */
static void balanced_spread_mask(const balanced_t *b, int tid, bkm_cpuset_t *mask)
{
    for (int i = 0, sum = 0; i < b->ncores * b->npc; i++) {
        sum += b->count[i];
        if (sum <= tid)
            continue;
        if (!b->fine)
            balanced_core_set(b, i / b->npc, 0, mask);
        else if (b->procarr[i] != -1)
            bkm_cpuset_set(mask, b->procarr[i]);
        return;
    }
}

/* The masks of a balanced team of @p nthreads into cpus[0..nthreads-1]; procarr, ncores and
 * npc as balanced_procarr gives them (non-uniform machines). One allocation for the team. */
static int balanced_masks(const model_t *m, bkm_aff_gran_t gran, int nthreads, const int *procarr, int ncores,
                          int npc, bkm_cpuset_t *cpus, bkm_err_t *err)
{
    balanced_t b = {m, balanced_fine(m, gran), procarr, ncores, npc, NULL};
    int *scratch = NULL, spread = !m->uniform && nthreads != m->n && nthreads > ncores;
    if (spread) {
        scratch = bkm_calloc((size_t)ncores * (size_t)npc + (size_t)ncores + 2 * ((size_t)npc + 1), sizeof(int));
        if (scratch == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
        b.count = scratch;
        balanced_spread(&b, nthreads, scratch + (size_t)ncores * (size_t)npc);
    }
    for (int tid = 0; tid < nthreads; tid++) {
        bkm_cpuset_zero(&cpus[tid]);
        if (m->uniform)
            balanced_uniform_mask(&b, tid, nthreads, &cpus[tid]);
        else if (nthreads == m->n)
            balanced_all_mask(&b, tid, &cpus[tid]);
        else if (spread)
            balanced_spread_mask(&b, tid, &cpus[tid]);
        else
            balanced_few_mask(&b, tid, &cpus[tid]);
    }
    bkm_free(scratch);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */

static void effective_string(bkm_aff_plan_t *p, const bkm_aff_kmp_t *k, bkm_aff_type_t type,
                             bkm_aff_gran_t gran, int permute, int offset, const char *proclist)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_buf_printf(&b, "%s,%s,", k->verbose == 1 ? "verbose" : "noverbose",
                   k->warnings == 0 ? "nowarnings" : "warnings");
    if (type == BKM_AFF_TYPE_DISABLED) {
        bkm_buf_puts(&b, "disabled");
    } else {
        bkm_buf_printf(&b, "%s,granularity=%s,", k->respect == 0 ? "norespect" : "respect",
                       bkm__aff_gran_keyword(gran));
        switch (type) {
        case BKM_AFF_TYPE_PHYSICAL: bkm_buf_printf(&b, "physical,%d", offset); break;
        case BKM_AFF_TYPE_LOGICAL: bkm_buf_printf(&b, "logical,%d", offset); break;
        case BKM_AFF_TYPE_COMPACT: bkm_buf_printf(&b, "compact,%d,%d", permute, offset); break;
        case BKM_AFF_TYPE_SCATTER: bkm_buf_printf(&b, "scatter,%d,%d", permute, offset); break;
        case BKM_AFF_TYPE_BALANCED: bkm_buf_printf(&b, "balanced,%d,%d", permute, offset); break;
        case BKM_AFF_TYPE_EXPLICIT: bkm_buf_printf(&b, "proclist=[%s],explicit", proclist); break;
        default: bkm_buf_puts(&b, "none"); break;
        }
    }
    snprintf(p->effective, sizeof(p->effective), "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
}

void bkm_aff_plan_free(bkm_aff_plan_t *plan)
{
    int i;
    if (plan == NULL)
        return;
    for (i = 0; i < plan->n_warn; i++)
        bkm_free(plan->warn[i]);
    bkm_free(plan->cpus);
    bkm_free(plan);
}

int bkm_aff_plan_create(const bkm_topo_t *topo, const bkm_aff_env_t *env, int n_threads,
                        bkm_aff_plan_t **plan, bkm_err_t *err)
{
    return bkm_aff_plan_create_ex(topo, env, n_threads, NULL, plan, err);
}

/* Warnings that explain a plan: shared cores, idle sockets, oversubscription. */
static void plan_explain_warnings(bkm_aff_plan_t *p, const bkm_topo_t *topo)
{
    const bkm_topo_pu_t *pu;
    int n_pu = 0, i, t, max_core = -1, max_pkg = -1, n_allowed;
    int *core_users = NULL, *pkg_used = NULL, *pkg_avail = NULL;
    pu = bkm_topo_pus(topo, &n_pu);
    n_allowed = bkm_cpuset_count(&p->allowed);
    if (p->n_threads > n_allowed)
        plan_warn(p, "threads exceed PUs: %d threads on %d usable PUs", p->n_threads, n_allowed);
    if (!p->bound) {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_cpuset_format(&p->allowed, &b);
        plan_warn(p, "threads are not bound: each may run on any of %s", bkm_buf_str(&b));
        bkm_buf_free(&b);
        return;
    }
    for (i = 0; i < n_pu; i++) {
        if (pu[i].core > max_core)
            max_core = pu[i].core;
        if (pu[i].pkg > max_pkg)
            max_pkg = pu[i].pkg;
    }
    if (max_core < 0 || max_pkg < 0)
        return;
    core_users = bkm_calloc((size_t)max_core + 1, sizeof(int));
    pkg_used = bkm_calloc((size_t)max_pkg + 1, sizeof(int));
    pkg_avail = bkm_calloc((size_t)max_pkg + 1, sizeof(int));
    if (!core_users || !pkg_used || !pkg_avail)
        goto out;
    for (t = 0; t < p->n_threads; t++) {
        int core = -1, single = 1;
        for (i = 0; i < n_pu; i++) {
            if (!bkm_cpuset_isset(&p->cpus[t], pu[i].os))
                continue;
            pkg_used[pu[i].pkg] = 1;
            if (core == -1)
                core = pu[i].core;
            else if (core != pu[i].core)
                single = 0;
        }
        if (single && core >= 0)
            core_users[core]++;
    }
    for (i = 0; i < n_pu; i++)
        if (bkm_cpuset_isset(&p->allowed, pu[i].os))
            pkg_avail[pu[i].pkg] = 1;
    {
        int shown = 0, more = 0;
        for (i = 0; i <= max_core; i++) {
            if (core_users[i] < 2)
                continue;
            if (shown < 4) {
                plan_warn(p, "%d threads share core %d", core_users[i], i);
                shown++;
            } else {
                more++;
            }
        }
        if (more > 0)
            plan_warn(p, "... and %d more cores are shared by several threads", more);
    }
    for (i = 0; i <= max_pkg; i++)
        if (pkg_avail[i] && !pkg_used[i])
            plan_warn(p, "socket %d idle", i);
out:
    bkm_free(core_users);
    bkm_free(pkg_used);
    bkm_free(pkg_avail);
}

/* What libomp 14 makes of a cache or NUMA place kind, granularity or KMP_HW_SUBSET layer on a
 * machine whose last-level caches or NUMA nodes are not its sockets (a chiplet CPU such as
 * Perlmutter's EPYC 7763: 16 L3 and 8 NUMA nodes on 2 sockets). Without hwloc (Debian's libomp
 * 14) its cpuinfo and x2APIC topologies have no cache or NUMA layer: the last-level cache is
 * made equivalent to the socket, L3 and NUMA do not exist (W#192, core instead). The note names
 * the explicit place list that does give one place per group. */
static void plan_group_notes(bkm_aff_plan_t *p, const bkm_topo_t *topo, bkm_aff_gran_t gran, int tiles,
                             const bkm_aff_setting_t *st)
{
    const bkm_topo_pu_t *pu;
    int n_pu = 0, sockets = 0, last = -1, llc, numa, hw_ll = 0;
    const char *what = NULL;
    bkm_buf_t places;
    bkm_topo_group_t kind = BKM_TOPO_GROUP_LLC;
    pu = bkm_topo_pus(topo, &n_pu);
    for (int i = 0; i < n_pu; i++)   /* the table is sorted by package */
        if (pu[i].allowed && pu[i].pkg != last) {
            sockets++;
            last = pu[i].pkg;
        }
    llc = bkm_topo_groups(topo, BKM_TOPO_GROUP_LLC, NULL, 0);
    numa = bkm_topo_groups(topo, BKM_TOPO_GROUP_NUMA, NULL, 0);
    for (int k = 0; st->hw_subset_set && k < st->hw_subset.n; k++)
        hw_ll |= st->hw_subset.item[k].layer == BKM_AFF_GRAN_LL;
    if (tiles)
        return;   /* the hwloc model: the tile is the last-level cache (explanation only) */
    if (hw_ll && llc > sockets)
        plan_warn(p, "KMP_HW_SUBSET: libomp 14 makes its LL layer the socket (no cache layer without hwloc): "
                  "the LL items count sockets, not this node's %d last-level caches", llc);
    if ((gran == BKM_AFF_GRAN_LL || gran == BKM_AFF_GRAN_L3) && llc > sockets && llc >= 2) {
        kind = BKM_TOPO_GROUP_LLC;
        what = gran == BKM_AFF_GRAN_LL ? "libomp 14 without hwloc has no cache layer and takes the socket as the "
                                         "last-level cache, so the places are the sockets"
                                       : "libomp 14 without hwloc has no L3 layer (it places by core instead)";
    } else if (gran == BKM_AFF_GRAN_NUMA && numa >= 2) {
        kind = BKM_TOPO_GROUP_NUMA;
        what = "libomp 14 without hwloc has no NUMA layer (it places by core instead)";
    }
    if (what == NULL)
        return;
    bkm_buf_init(&places);
    if (bkm_topo_group_places(topo, kind, &places, NULL) == BKM_OK)
        plan_warn(p, "%s: the %d %s of the usable PUs are not places; one place per %s is the explicit list "
                  "OMP_PLACES='%s'",
                  what, kind == BKM_TOPO_GROUP_NUMA ? numa : llc,
                  kind == BKM_TOPO_GROUP_NUMA ? "NUMA nodes" : "last-level caches",
                  kind == BKM_TOPO_GROUP_NUMA ? "NUMA node" : "last-level cache", bkm_buf_str(&places));
    bkm_buf_free(&places);
}

/* The placement policy after the environment has been applied (__kmp_env_initialize). */
typedef struct plan_ctx {
    bkm_aff_type_t type;
    bkm_aff_gran_t gran;
    int gran_levels;        /* for BKM_AFF_GRAN_LEVELS */
    int dups, permute, offset;
    int bind;               /* BIND_INTEL or BKM_AFF_BIND_CLOSE/SPREAD/PRIMARY */
    int num_places;         /* OMP_PLACES kind(N), 0 = all */
    const char *proclist;   /* explicit: proclist or place list text */
    int use_placelist, is_gomp, is_omp, tiles;
} plan_ctx_t;

/* set_granularity: levels below the chosen layer, falling back to core as libomp does. */
static int plan_gran_levels(bkm_aff_plan_t *p, const model_t *m, const plan_ctx_t *c, bkm_aff_gran_t *gran)
{
    int lvl;
    *gran = c->gran;
    if (c->gran == BKM_AFF_GRAN_LEVELS) {
        if (c->gran_levels >= m->depth)
            plan_warn(p, "granularity=%d covers the whole machine: threads may migrate", c->gran_levels);
        return c->gran_levels > m->depth ? m->depth : c->gran_levels;
    }
    lvl = model_level_for(m, c->gran, c->tiles);
    if (lvl < 0) {
        plan_warn(p, "granularity %s is not a layer of the topology libomp 14 builds: using core (W#192)",
                  bkm__aff_gran_keyword(c->gran));
        *gran = BKM_AFF_GRAN_CORE;
        lvl = model_level_for(m, *gran, c->tiles);
    }
    return m->depth - 1 - lvl;
}

/* The mask list of compact/scatter/logical/physical/balanced: granularity masks in the order of
 * sort key @p key, leaders only with nodups, truncated to kind(N) places. */
static int plan_sorted_masks(const model_t *m, const plan_ctx_t *c, int key, int n_unique, masks_t *mk,
                             bkm_err_t *err)
{
    int *idx, *tmp, i, j, rc = BKM_OK;
    mk->n = c->dups ? m->n : n_unique;
    if (c->is_omp && c->num_places > 0 && c->num_places < mk->n)
        mk->n = c->num_places;
    mk->list = bkm_calloc((size_t)mk->n, sizeof(bkm_cpuset_t));
    idx = bkm_malloc((size_t)m->n * sizeof(int));
    tmp = bkm_malloc((size_t)m->n * sizeof(int));
    if (mk->list == NULL || idx == NULL || tmp == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
        goto out;
    }
    for (i = 0; i < m->n; i++)
        idx[i] = i;
    sort_compact(m, key, idx, tmp, 0, m->n);
    for (i = 0, j = 0; i < m->n && j < mk->n; i++) {
        if (!c->dups && !m->h[idx[i]].leader)
            continue;
        mk->list[j++] = mk->os_mask[idx[i]];
    }
    mk->n = j;
out:
    bkm_free(idx);
    bkm_free(tmp);
    return rc;
}

/* Masks and thread → mask for a binding type (__kmp_aux_affinity_initialize, then the gtid
 * mapping, __kmp_partition_places or __kmp_balanced_affinity). Leaves p->bound 0 where libomp
 * falls back to not binding. */
static int plan_bind(bkm_aff_plan_t *p, model_t *m, const plan_ctx_t *c, const bkm_topo_t *topo, bkm_err_t *err)
{
    masks_t mk;
    bkm_aff_gran_t gran;
    int *procarr = NULL, *place_of = NULL, nu_ncores = 0, nu_npc = 0, n_unique = 0, i, rc;
    int offset = c->offset, key = 0, n_threads = p->n_threads;
    memset(&mk, 0, sizeof(mk));
    p->bound = 0;
    if ((rc = create_os_id_masks(m, plan_gran_levels(p, m, c, &gran), &mk, &n_unique, err)) != BKM_OK)
        goto out;
    if (c->type == BKM_AFF_TYPE_EXPLICIT && c->use_placelist) {
        bkm_cpuset_t all;
        const bkm_topo_pu_t *pu;
        int n_pu = 0;
        proc_ud_t u = {m, &mk, 0, 0};
        bkm_cpuset_zero(&all);
        pu = bkm_topo_pus(topo, &n_pu);
        for (i = 0; i < n_pu; i++)
            if (pu[i].os >= 0 && pu[i].os < BKM_CPUSET_MAX)
                bkm_cpuset_set(&all, pu[i].os);
        rc = bkm__aff_placelist_eval(c->proclist, &m->full, &all, mask_of_os, &u, &mk.list, &mk.n, err);
    } else if (c->type == BKM_AFF_TYPE_EXPLICIT) {
        proc_ud_t u = {m, &mk, 0, c->is_gomp};
        rc = bkm__aff_proclist_walk(c->is_gomp ? "GOMP_CPU_AFFINITY" : "KMP_AFFINITY proclist", c->proclist,
                                    proclist_cb, &u, err);
    } else {
        switch (c->type) {
        case BKM_AFF_TYPE_LOGICAL:
        case BKM_AFF_TYPE_PHYSICAL:
            key = c->type == BKM_AFF_TYPE_PHYSICAL && m->threads_per_core > 1 && m->depth > 1 ? 1 : 0;
            if (offset)
                offset = m->threads_per_core * offset % m->n;
            break;
        case BKM_AFF_TYPE_SCATTER:
            key = c->permute >= m->depth ? 0 : m->depth - 1 - c->permute;
            break;
        case BKM_AFF_TYPE_BALANCED:
            if (!m->uniform) {
                int ok = balanced_procarr(m, &procarr, &nu_ncores, &nu_npc, err);
                if (ok < 0) {
                    rc = BKM_ENOMEM;
                    goto out;
                }
                if (ok == 0) {
                    plan_warn(p, "balanced is not available on this non-uniform topology: libomp falls back "
                              "to none");
                    goto out;
                }
            }
            key = c->permute >= m->depth ? m->depth - 1 : c->permute;
            break;
        default: /* compact */
            key = c->permute >= m->depth ? m->depth - 1 : c->permute;
            break;
        }
        rc = plan_sorted_masks(m, c, key, n_unique, &mk, err);
    }
    if (rc != BKM_OK)
        goto out;
    if (mk.n == 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "affinity plan: no valid place or mask");
        goto out;
    }
    if (c->type == BKM_AFF_TYPE_BALANCED) {
        if (n_threads == 1)
            goto out; /* a team of one is not bound */
        if ((rc = balanced_masks(m, gran, n_threads, procarr, nu_ncores, nu_npc, p->cpus, err)) != BKM_OK)
            goto out;
    } else if (c->bind == BIND_INTEL) {
        for (i = 0; i < n_threads; i++)
            p->cpus[i] = mk.list[(i + offset) % mk.n];
    } else {
        place_of = bkm_malloc((size_t)n_threads * sizeof(int));
        if (place_of == NULL) {
            rc = bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
            goto out;
        }
        partition_places(c->bind, n_threads, mk.n, offset % mk.n, place_of);
        for (i = 0; i < n_threads; i++)
            p->cpus[i] = mk.list[place_of[i] >= 0 && place_of[i] < mk.n ? place_of[i] : 0];
    }
    p->bound = 1;
out:
    bkm_free(place_of);
    bkm_free(procarr);
    bkm_free(mk.os_mask);
    bkm_free(mk.list);
    return rc;
}

int bkm_aff_plan_create_ex(const bkm_topo_t *topo, const bkm_aff_env_t *env, int n_threads,
                           const bkm_aff_plan_opts_t *opts, bkm_aff_plan_t **plan, bkm_err_t *err)
{
    bkm_aff_setting_t st;
    bkm_aff_plan_opts_t o;
    bkm_aff_plan_t *p = NULL;
    model_t m;
    int rc, i, respect, dups, permute = 0, offset = 0, bind = BIND_INTEL, num_places = 0;
    bkm_aff_type_t type;
    bkm_aff_gran_t gran;
    const char *proclist = "";
    int use_placelist = 0;

    memset(&m, 0, sizeof(m));
    if (plan != NULL)
        *plan = NULL;
    if (topo == NULL || env == NULL || plan == NULL)
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: missing topology, environment or output");
    if (n_threads < 1 || n_threads > MAX_THREADS)
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: thread count %d out of range 1..%d", n_threads,
                           MAX_THREADS);
    memset(&o, 0, sizeof(o));
    if (opts != NULL)
        o = *opts;
    if ((rc = bkm_aff_setting_resolve(env, &st, err)) != BKM_OK)
        return rc;

    p = bkm_calloc(1, sizeof(*p));
    if (p == NULL || (p->cpus = bkm_calloc((size_t)n_threads, sizeof(bkm_cpuset_t))) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory");
        goto out;
    }
    p->n_threads = n_threads;
    p->blocktime_ms = st.blocktime_ms;
    for (i = 0; i < st.n_ignored; i++)
        plan_warn(p, "%s ignored: %s", st.ignored[i],
                  strcmp(st.ignored[i], "KMP_PLACE_THREADS") == 0 ? "KMP_HW_SUBSET has been defined"
                  : st.src == BKM_AFF_SRC_KMP ? "KMP_AFFINITY (with a type) has been defined"
                                              : "GOMP_CPU_AFFINITY has been defined");

    /* Effective type, granularity, dups and binding policy (__kmp_env_initialize). */
    respect = st.kmp.respect != 0;
    gran = st.kmp.gran;
    type = st.kmp.type;
    dups = st.kmp.dups != 0;
    switch (st.src) {
    case BKM_AFF_SRC_KMP:
        p->source = "KMP_AFFINITY";
        permute = st.kmp.permute;
        offset = st.kmp.offset;
        proclist = st.kmp.proclist;
        break;
    case BKM_AFF_SRC_GOMP:
        p->source = "GOMP_CPU_AFFINITY";
        proclist = st.kmp.proclist;
        break;
    case BKM_AFF_SRC_OMP: {
        /* libomp 14 applies the variables in environment order, each overwriting the shared type,
         * granularity and dups; bkm exports (and plans for) OMP_PROC_BIND, OMP_PLACES, then
         * KMP_AFFINITY (bkm_aff_env_export). */
        int b0 = st.proc_bind_set ? (int)st.proc_bind.level[0] : BKM_AFF_BIND_TRUE;
        p->source = st.places_set ? "OMP_PLACES/OMP_PROC_BIND" : "OMP_PROC_BIND";
        bind = b0 == BKM_AFF_BIND_TRUE ? BKM_AFF_BIND_SPREAD : b0;
        type = b0 == BKM_AFF_BIND_FALSE ? BKM_AFF_TYPE_NONE : BKM_AFF_TYPE_UNSET;
        gran = BKM_AFF_GRAN_UNSET;
        dups = 0;
        if (st.places_set) {
            if (st.places.kind == BKM_AFF_GRAN_UNSET) {
                type = BKM_AFF_TYPE_EXPLICIT;
                gran = BKM_AFF_GRAN_THREAD;
                proclist = st.places.list;
                use_placelist = 1;
            } else {
                type = BKM_AFF_TYPE_COMPACT;
                gran = st.places.kind;
                num_places = st.places.count;
            }
            if (b0 == BKM_AFF_BIND_FALSE)
                plan_warn(p, "libomp 14 applies OMP_PROC_BIND=false and OMP_PLACES in environment order: with "
                          "OMP_PLACES first the threads stay unbound; planned for OMP_PROC_BIND first (bkm's "
                          "export order), where OMP_PLACES still binds");
            if (st.kmp.gran != BKM_AFF_GRAN_UNSET || st.kmp.dups != -1)
                plan_warn(p, "KMP_AFFINITY's granularity/dups override OMP_PLACES only when KMP_AFFINITY comes "
                          "later in the environment (bkm's export order, planned here)");
        }
        if (st.kmp.gran != BKM_AFF_GRAN_UNSET)
            gran = st.kmp.gran;
        if (st.kmp.dups != -1 && type != BKM_AFF_TYPE_UNSET)
            dups = st.kmp.dups;
        if (type == BKM_AFF_TYPE_UNSET)
            type = BKM_AFF_TYPE_COMPACT; /* OMP_PROC_BIND alone: compact places, no duplicates */
        if (b0 == BKM_AFF_BIND_FALSE)
            bind = BIND_INTEL; /* masks (if any) are then used per gtid, as KMP_AFFINITY does */
        break;
    }
    default:
        p->source = "default";
        if (o.mic) {
            type = BKM_AFF_TYPE_SCATTER;
            if (gran == BKM_AFF_GRAN_UNSET)
                gran = BKM_AFF_GRAN_THREAD;
        } else {
            type = BKM_AFF_TYPE_NONE;
        }
        break;
    }
    if (gran == BKM_AFF_GRAN_UNSET)
        gran = o.mic ? BKM_AFF_GRAN_THREAD : BKM_AFF_GRAN_CORE;
    effective_string(p, &st.kmp, type, gran, permute, offset, proclist);

    /* KMP_AFFINITY=disabled: the runtime never binds; threads keep the initial process mask. */
    if (type == BKM_AFF_TYPE_DISABLED) {
        bkm_topo_allowed(topo, &p->allowed);
        if (bkm_cpuset_is_empty(&p->allowed)) {
            rc = bkm_err_set(err, BKM_EINVAL, "affinity plan: the topology has no allowed PU");
            goto out;
        }
    } else {
        plan_ctx_t c = {type, gran, st.kmp.gran_levels, dups, permute, offset, bind, num_places, proclist,
                        use_placelist, st.src == BKM_AFF_SRC_GOMP, st.src == BKM_AFF_SRC_OMP, o.model_tiles};
        if ((rc = model_build(&m, topo, respect, o.model_tiles, err)) != BKM_OK)
            goto out;
        if (st.hw_subset_set && (rc = model_hw_subset(&m, &st.hw_subset, o.model_tiles, err)) != BKM_OK)
            goto out;
        p->allowed = m.full;
        snprintf(p->topology, sizeof(p->topology), "%d socket%s x %d cores/socket x %d threads/core (%d PUs%s)",
                 m.packages, m.packages == 1 ? "" : "s", m.cores_per_pkg, m.threads_per_core, m.n,
                 model_level_of(&m, LV_TILE) >= 0 ? ", tile level modelled" : "");
        if (type != BKM_AFF_TYPE_NONE && (rc = plan_bind(p, &m, &c, topo, err)) != BKM_OK)
            goto out;
    }
    if (!p->bound) /* none, disabled, single-thread balanced: every thread floats */
        for (i = 0; i < n_threads; i++)
            p->cpus[i] = p->allowed;
    plan_explain_warnings(p, topo);
    plan_group_notes(p, topo, gran, o.model_tiles, &st);
    *plan = p;
    p = NULL;
out:
    model_free(&m);
    bkm_aff_plan_free(p);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Accessors, comparison, output                                                             */

int bkm_aff_plan_threads(const bkm_aff_plan_t *plan) { return plan ? plan->n_threads : 0; }
int bkm_aff_plan_bound(const bkm_aff_plan_t *plan) { return plan ? plan->bound : 0; }
const bkm_cpuset_t *bkm_aff_plan_cpus(const bkm_aff_plan_t *plan, int thread)
{
    if (plan == NULL || thread < 0 || thread >= plan->n_threads)
        return NULL;
    return &plan->cpus[thread];
}
const bkm_cpuset_t *bkm_aff_plan_allowed(const bkm_aff_plan_t *plan) { return plan ? &plan->allowed : NULL; }
const char *bkm_aff_plan_effective(const bkm_aff_plan_t *plan) { return plan ? plan->effective : ""; }
int bkm_aff_plan_blocktime_ms(const bkm_aff_plan_t *plan) { return plan ? plan->blocktime_ms : 0; }
int bkm_aff_plan_n_warnings(const bkm_aff_plan_t *plan) { return plan ? plan->n_warn : 0; }
const char *bkm_aff_plan_warning(const bkm_aff_plan_t *plan, int i)
{
    if (plan == NULL || i < 0 || i >= plan->n_warn)
        return NULL;
    return plan->warn[i];
}

int bkm_aff_plan_equal(const bkm_aff_plan_t *a, const bkm_aff_plan_t *b)
{
    int i;
    if (a == NULL || b == NULL || a->n_threads != b->n_threads)
        return 0;
    for (i = 0; i < a->n_threads; i++)
        if (!bkm_cpuset_equal(&a->cpus[i], &b->cpus[i]))
            return 0;
    return 1;
}

/* Distinct values of pu.core / pu.pkg over the PUs of @p s, in increasing order. */
static void json_levels(bkm_json_w_t *w, const bkm_topo_pu_t *pu, int n_pu, const bkm_cpuset_t *s, int pkg)
{
    int i, last = -1;
    bkm_json_arr_begin(w);
    for (;;) {
        int best = INT_MAX;
        for (i = 0; i < n_pu; i++) {
            int v = pkg ? pu[i].pkg : pu[i].core;
            if (v > last && v < best && bkm_cpuset_isset(s, pu[i].os))
                best = v;
        }
        if (best == INT_MAX)
            break;
        bkm_json_int(w, best);
        last = best;
    }
    bkm_json_arr_end(w);
}

int bkm_aff_plan_to_json(const bkm_aff_plan_t *plan, const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err)
{
    const bkm_topo_pu_t *pu = NULL;
    int n_pu = 0, t, i;
    bkm_buf_t b;
    if (plan == NULL || w == NULL)
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: nothing to write");
    if (topo != NULL)
        pu = bkm_topo_pus(topo, &n_pu);
    bkm_buf_init(&b);
    bkm_cpuset_format(&plan->allowed, &b);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "threads");
    bkm_json_int(w, plan->n_threads);
    bkm_json_key(w, "bound");
    bkm_json_bool(w, plan->bound);
    bkm_json_key(w, "effective");
    bkm_json_str(w, plan->effective);
    bkm_json_key(w, "source");
    bkm_json_str(w, plan->source);
    bkm_json_key(w, "blocktime_ms");
    bkm_json_int(w, plan->blocktime_ms);
    bkm_json_key(w, "topology");
    bkm_json_str(w, plan->topology);
    bkm_json_key(w, "allowed");
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_json_key(w, "plan");
    bkm_json_arr_begin(w);
    for (t = 0; t < plan->n_threads; t++) {
        const bkm_cpuset_t *s = &plan->cpus[t];
        int c;
        bkm_json_obj_begin(w);
        bkm_json_key(w, "thread");
        bkm_json_int(w, t);
        bkm_json_key(w, "cpus");
        bkm_json_arr_begin(w);
        for (c = bkm_cpuset_first(s); c >= 0; c = bkm_cpuset_next(s, c))
            bkm_json_int(w, c);
        bkm_json_arr_end(w);
        if (pu != NULL) {
            bkm_json_key(w, "cores");
            json_levels(w, pu, n_pu, s, 0);
            bkm_json_key(w, "sockets");
            json_levels(w, pu, n_pu, s, 1);
        }
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "warnings");
    bkm_json_arr_begin(w);
    for (i = 0; i < plan->n_warn; i++)
        bkm_json_str(w, plan->warn[i]);
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
    bkm_buf_free(&b);
    return BKM_OK;
}

/* "0-3,8" list of distinct core or socket indexes of @p s. */
static void fmt_levels(bkm_buf_t *out, const bkm_topo_pu_t *pu, int n_pu, const bkm_cpuset_t *s, int pkg)
{
    bkm_cpuset_t lv;
    int i;
    bkm_cpuset_zero(&lv);
    for (i = 0; i < n_pu; i++) {
        int v = pkg ? pu[i].pkg : pu[i].core;
        if (v >= 0 && v < BKM_CPUSET_MAX && bkm_cpuset_isset(s, pu[i].os))
            bkm_cpuset_set(&lv, v);
    }
    bkm_cpuset_format(&lv, out);
}

int bkm_aff_plan_explain(const bkm_aff_plan_t *plan, const bkm_topo_t *topo, bkm_buf_t *out, bkm_err_t *err)
{
    const bkm_topo_pu_t *pu = NULL;
    int n_pu = 0, t, i;
    if (plan == NULL || out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "affinity plan: nothing to explain");
    if (topo != NULL)
        pu = bkm_topo_pus(topo, &n_pu);
    bkm_buf_printf(out, "placement from: %s\n", plan->source);
    bkm_buf_printf(out, "effective:      KMP_AFFINITY='%s'\n", plan->effective);
    if (plan->blocktime_ms == INT_MAX)
        bkm_buf_printf(out, "blocktime:      infinite (KMP_BLOCKTIME=2147483647)\n");
    else
        bkm_buf_printf(out, "blocktime:      %d ms\n", plan->blocktime_ms);
    if (plan->topology[0] != '\0')
        bkm_buf_printf(out, "topology:       %s\n", plan->topology);
    bkm_buf_puts(out, "usable PUs:     ");
    bkm_cpuset_format(&plan->allowed, out);
    bkm_buf_printf(out, "\nthreads:        %d, %s\n\n", plan->n_threads, plan->bound ? "bound" : "not bound");
    bkm_buf_printf(out, "%-7s  %-24s  %-16s  %s\n", "thread", "PUs", "core", "socket");
    for (t = 0; t < plan->n_threads; t++) {
        bkm_buf_t a, c, s;
        bkm_buf_init(&a);
        bkm_buf_init(&c);
        bkm_buf_init(&s);
        bkm_cpuset_format(&plan->cpus[t], &a);
        if (pu != NULL) {
            fmt_levels(&c, pu, n_pu, &plan->cpus[t], 0);
            fmt_levels(&s, pu, n_pu, &plan->cpus[t], 1);
        }
        bkm_buf_printf(out, "%-7d  %-24s  %-16s  %s\n", t, bkm_buf_str(&a), bkm_buf_str(&c), bkm_buf_str(&s));
        bkm_buf_free(&a);
        bkm_buf_free(&c);
        bkm_buf_free(&s);
    }
    if (plan->n_warn > 0) {
        bkm_buf_puts(out, "\nwarnings:\n");
        for (i = 0; i < plan->n_warn; i++)
            bkm_buf_printf(out, "  - %s\n", plan->warn[i]);
    }
    return out->oom ? bkm_err_set(err, BKM_ENOMEM, "affinity plan: out of memory") : BKM_OK;
}
