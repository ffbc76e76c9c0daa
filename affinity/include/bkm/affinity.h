/* SPDX-License-Identifier: MIT */
/** @file bkm/affinity.h
 * Topology (hwloc: host, XML, synthetic; node profiles), OpenMP affinity settings (KMP_AFFINITY,
 * KMP_HW_SUBSET, KMP_BLOCKTIME, OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY): strict parsing,
 * planning identical to LLVM libomp 14, explanation, and verification of the binding that took
 * effect.
 *
 * Error convention: see bkm/common.h. Handles are opaque; destroy functions accept NULL.
 * Nothing here may be called from inside an OpenMP parallel region unless stated.
 */
#ifndef BKM_AFFINITY_H
#define BKM_AFFINITY_H

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================== */
/* Topology                                                                                  */
/* ======================================================================================== */

typedef struct bkm_topo bkm_topo_t;

/** One processing unit (hardware thread). All indexes are logical (0-based, hwloc order),
 *  except @c os. */
typedef struct bkm_topo_pu {
    int os;      /**< OS index (what sched_setaffinity and KMP proclists use) */
    int pkg;     /**< package (socket) */
    int numa;    /**< first NUMA node local to this PU, -1 when unknown */
    int tile;    /**< group of cores sharing an L2 (KNL tile) when such groups have >1 core, else -1 */
    int core;    /**< core, global logical index */
    int smt;     /**< thread ordinal within its core, by increasing OS index */
    int allowed; /**< 1 if in the process's allowed set (the initial mask libomp "respects") */
} bkm_topo_pu_t;

/** One cache level as discovered (per-instance size). */
typedef struct bkm_topo_cache {
    int level;          /**< 1, 2, 3 */
    char type;          /**< 'd' data, 'i' instruction, 'u' unified */
    uint64_t size_bytes;
    int line_bytes;
    int count;          /**< instances */
    int pus_per_cache;  /**< PUs sharing one instance */
} bkm_topo_cache_t;

/** NUMA node. */
typedef struct bkm_topo_numa {
    int os;
    uint64_t memory_bytes;
    char subtype[16];   /**< "MCDRAM", "DRAM" or "" */
    bkm_cpuset_t cpus;
} bkm_topo_numa_t;

/** Load this host's topology, restricted to the process's allowed cpuset (libomp `respect`). */
int bkm_topo_open_host(bkm_topo_t **topo, bkm_err_t *err);
/** Load an hwloc XML file (as written by `lstopo --of xml`). */
int bkm_topo_open_xml(bkm_topo_t **topo, const char *path, bkm_err_t *err);
/** Load an hwloc synthetic description, e.g. "pack:2 core:16 pu:2(indexes=0,32,1,33,...)". */
int bkm_topo_open_synthetic(bkm_topo_t **topo, const char *desc, bkm_err_t *err);
void bkm_topo_close(bkm_topo_t *topo);

/** PU table, sorted by (pkg, tile, core, smt); valid until bkm_topo_close; do not free. */
const bkm_topo_pu_t *bkm_topo_pus(const bkm_topo_t *topo, int *n_pus);
/** Caches (one entry per level/type); valid until bkm_topo_close. */
const bkm_topo_cache_t *bkm_topo_caches(const bkm_topo_t *topo, int *n_caches);
/** NUMA nodes; valid until bkm_topo_close. */
const bkm_topo_numa_t *bkm_topo_numas(const bkm_topo_t *topo, int *n_numa);

typedef struct bkm_topo_summary {
    int packages, numa_nodes, tiles, cores, pus;
    int pus_per_core_max;     /**< SMT width */
    int allowed_pus;
    char source[16];          /**< "host", "xml", "synthetic", "profile" */
    char isa[16];             /**< "avx512", "avx2", "generic" (host: CPUID; profile: declared) */
    char cpu_model[128];
} bkm_topo_summary_t;
void bkm_topo_summary(const bkm_topo_t *topo, bkm_topo_summary_t *s);

/** Set of allowed PUs (the initial mask). */
void bkm_topo_allowed(const bkm_topo_t *topo, bkm_cpuset_t *set);
/** Restrict the allowed set (emulates an initial process mask from taskset/srun). PUs outside the
 *  topology are an error naming them. */
int bkm_topo_restrict(bkm_topo_t *topo, const bkm_cpuset_t *mask, bkm_err_t *err);
/** Write the topology as JSON (`tune topo --json`). */
int bkm_topo_to_json(const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err);

/* ======================================================================================== */
/* Node profiles                                                                             */
/* ======================================================================================== */

/** A node profile is data: topology description, ISA, Slurm constraint, default sweep ranges. */
typedef struct bkm_node_profile {
    char name[32];                /**< "auto", "haswell", "knl", or a user profile's name */
    char description[160];
    char synthetic[8192];         /**< hwloc synthetic description, or "" */
    char xml_path[512];           /**< hwloc XML file, or "" (one of the two, except for auto) */
    char isa[16];                 /**< "avx512", "avx2", ... */
    char slurm_constraint[64];    /**< e.g. "knl,quad,cache" */
    int threads[16];              /**< default thread counts to sweep */
    int n_threads;
    int blocktime_ms[8];          /**< default KMP_BLOCKTIME values (-1 = infinite) */
    int n_blocktime;
} bkm_node_profile_t;

/** Look up a built-in profile ("auto", "haswell", "knl"); BKM_EINVAL naming @p name if unknown. */
int bkm_profile_builtin(const char *name, bkm_node_profile_t *p, bkm_err_t *err);
/** Names of the built-in profiles, NULL-terminated static array. */
const char *const *bkm_profile_builtin_names(void);
/** Load a user profile file (key = value lines; see docs) or an hwloc XML (then the profile's
 *  name is the file's basename). */
int bkm_profile_load_file(const char *path, bkm_node_profile_t *p, bkm_err_t *err);
/** Open the topology a profile describes ("auto" = this host). */
int bkm_topo_open_profile(bkm_topo_t **topo, const bkm_node_profile_t *p, bkm_err_t *err);
/** Does this host match the profile (same packages/cores/PUs and ISA)? 1 yes, 0 no. */
int bkm_profile_matches_host(const bkm_node_profile_t *p, const bkm_topo_t *host);

/* ======================================================================================== */
/* Settings, planning, explanation (section owned by the planner)                            */
/* ======================================================================================== */

/** The affinity-related environment of one trial, as strings exactly as they would be exported.
 *  NULL = variable unset. */
typedef struct bkm_aff_env {
    const char *kmp_affinity;
    const char *kmp_hw_subset;     /**< or KMP_PLACE_THREADS (KMP_HW_SUBSET wins) */
    const char *kmp_place_threads;
    const char *kmp_blocktime;
    const char *omp_places;
    const char *omp_proc_bind;
    const char *gomp_cpu_affinity;
    const char *omp_wait_policy;
} bkm_aff_env_t;

/* The planner section below is filled in by the affinity planner work. */

#ifdef __cplusplus
}
#endif
#endif /* BKM_AFFINITY_H */
