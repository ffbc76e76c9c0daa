/* SPDX-License-Identifier: MIT */
/** @file bkm/affinity.h
 * Topology (hwloc: host, XML, synthetic; node profiles), OpenMP affinity settings (KMP_AFFINITY,
 * KMP_HW_SUBSET, KMP_BLOCKTIME, OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY): strict parsing,
 * planning identical to LLVM libomp 14, explanation, and verification of the binding that took
 * effect; the same for GNU libgomp 12 in bkm/affinity/gomp.h (included here).
 *
 * Error convention: see bkm/common.h. Handles are opaque; destroy functions accept NULL.
 * Nothing here may be called from inside an OpenMP parallel region unless stated.
 */
#ifndef BKM_AFFINITY_H
#define BKM_AFFINITY_H

#include "bkm/common.h"
#include "bkm/affinity/runtime.h"

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
    int pkg_id;  /**< package hardware id: hwloc's os_index of the package (Linux physical_package_id);
                      libomp orders packages by it, not by the OS numbering of their PUs */
    int core_id; /**< core hardware id, unique within its package: hwloc's os_index of the core (Linux
                      core_id), which may be non-contiguous; where the OS repeats core ids across the
                      dies of a package, die rank x (largest core id + 1) + core id. libomp orders the
                      cores of a package by it (what a KMP_CPUINFO_FILE from bkm says) */
    int llc;     /**< last-level cache instance: PUs with the same value share the highest-level cache
                      above them (on Linux the last cache/indexK of the highest level, what GNU
                      libgomp's OMP_PLACES=ll_caches reads); -1 when the topology lists no cache */
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

/** Load this host's topology. PUs outside the calling thread's affinity mask (and the cgroup's
 *  cpuset) stay in the table with allowed = 0, as libomp's `respect` sees them. Call it before the
 *  process's first OpenMP parallel region: libomp may bind the initial thread, which would then
 *  shrink the "allowed" set to that binding. */
int bkm_topo_open_host(bkm_topo_t **topo, bkm_err_t *err);
/** Largest hwloc XML file bkm reads (a 2-socket node with its PCI tree is well under 1 MiB). */
#define BKM_TOPO_XML_MAX_BYTES ((size_t)64 << 20)
/** Load an hwloc XML file (as written by `lstopo --of xml`). Only a regular file of at most
 *  BKM_TOPO_XML_MAX_BYTES is read (bkm_file_read_regular): a FIFO, device or directory, or a
 *  larger file, is BKM_EINVAL naming the path (and the limit). */
int bkm_topo_open_xml(bkm_topo_t **topo, const char *path, bkm_err_t *err);
/** Load an hwloc synthetic description, e.g. "pack:2 core:16 pu:2(indexes=0,32,1,33,...)". */
int bkm_topo_open_synthetic(bkm_topo_t **topo, const char *desc, bkm_err_t *err);
void bkm_topo_close(bkm_topo_t *topo);

/** PU table, sorted by (pkg, tile, core, smt); valid until bkm_topo_close; do not free. */
const bkm_topo_pu_t *bkm_topo_pus(const bkm_topo_t *topo, int *n_pus);
/** Caches (one entry per level/type); valid until bkm_topo_close. */
const bkm_topo_cache_t *bkm_topo_caches(const bkm_topo_t *topo, int *n_caches);
/** Size in bytes of one instance of the L1 data, L2 and L3 cache (0 where the topology has none);
 *  any pointer may be NULL. What the kernels' default blocking takes (bkm_wl_config_t). */
void bkm_topo_cache_sizes(const bkm_topo_t *topo, int64_t *l1d, int64_t *l2, int64_t *l3);
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
/** The topology as a /proc/cpuinfo-style text for libomp's cpuinfo topology method
 *  (KMP_TOPOLOGY_METHOD=cpuinfo, KMP_CPUINFO_FILE): one record per PU in OS order, "processor",
 *  "physical id" (pkg_id) and "core id" (core_id) lines and a blank line. libomp then sees the
 *  packages, cores and threads of this table, in the order the planner assumes. Appends to @p out;
 *  BKM_ENOMEM. */
int bkm_topo_cpuinfo_write(const bkm_topo_t *topo, bkm_buf_t *out, bkm_err_t *err);
/** Groups of PUs that share a last-level cache (BKM_TOPO_GROUP_LLC: on Perlmutter the 16 L3 of 8
 *  cores) or a NUMA node (BKM_TOPO_GROUP_NUMA). */
typedef enum { BKM_TOPO_GROUP_LLC = 0, BKM_TOPO_GROUP_NUMA } bkm_topo_group_t;
/** The PU sets of the groups of @p kind, each restricted to the allowed PUs, empty ones and NUMA
 *  nodes over the same PUs as an earlier one (KNL flat mode's MCDRAM) left out, in hwloc's order,
 *  into @p sets (at most @p cap). Returns how many there are (may exceed @p cap:
 *  only @p cap are written); 0 when the topology lists no such group. */
int bkm_topo_groups(const bkm_topo_t *topo, bkm_topo_group_t kind, bkm_cpuset_t *sets, int cap);
/** The groups of @p kind as an explicit OMP_PLACES value, one place per group, appended to
 *  @p out: the shortest of the replicated form "{0:8,128:8}:16:8" (when every group is the
 *  first one shifted by a constant stride) and the list "{0:8,128:8},{8:8,136:8},...". Runs of
 *  OS ids are written "start:length". BKM_EINVAL when the topology has fewer than two groups of
 *  that kind among the allowed PUs (no place list to make); BKM_ENOMEM. */
int bkm_topo_group_places(const bkm_topo_t *topo, bkm_topo_group_t kind, bkm_buf_t *out, bkm_err_t *err);
/** k when every core with more than one PU has the PUs c, c+k, c+2k, ... (Cori: 32, Perlmutter:
 *  128); 0 when the cores have one PU or no common stride. */
int bkm_topo_smt_stride(const bkm_topo_t *topo);
/** Write the topology as JSON (`tune topo --json`). */
int bkm_topo_to_json(const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err);

/* ======================================================================================== */
/* Node profiles                                                                             */
/* ======================================================================================== */

/** How srun's -c (CPUs per task) follows from the layout: a site's rule. */
typedef enum {
    BKM_BATCH_C_NODE = 0,   /**< "node": the node's CPUs shared evenly over the ranks in whole cores (NERSC:
                                 -c = CPUs / R when R divides the cores, else floor(cores / R) x threads per
                                 core; beyond one rank per core, CPUs / R) */
    BKM_BATCH_C_THREADS,    /**< "threads": -c = the rank's OpenMP threads (one logical CPU each) */
    BKM_BATCH_C_CORES       /**< "cores": -c = threads x hardware threads per core (a whole core each) */
} bkm_batch_c_rule_t;

/** Which program starts the ranks. */
typedef enum {
    BKM_BATCH_LAUNCH_SRUN = 0,  /**< srun -n -c --cpu-bind [--mpi] */
    BKM_BATCH_LAUNCH_MPIEXEC    /**< MPICH's mpiexec (Hydra): -n -ppn -bind-to core:K|hwthread:C|socket|numa */
} bkm_batch_launcher_t;

/** A site's batch rules, carried by a node profile: what a batch script for that node asks Slurm
 *  for and how it starts the ranks. Strings are "" when the site sets nothing. The values are
 *  checked when a profile is loaded (Slurm words: letters, digits and _.,:+-@; the constraint
 *  also &|[]*). */
typedef struct bkm_batch_rules {
    char site[64];              /**< whose rules these are ("NERSC"), for comments and messages */
    char qos[32];               /**< default #SBATCH -q */
    char account[64];           /**< default #SBATCH -A */
    char partition[64];         /**< default #SBATCH -p ("" = the cluster's default partition) */
    int c_rule;                 /**< bkm_batch_c_rule_t */
    char cpu_bind[16];          /**< "auto" (cores; threads when the ranks outnumber the cores), "cores",
                                     "threads", "sockets", "ldoms", "none" */
    int launcher;               /**< bkm_batch_launcher_t */
    char mpi[32];               /**< srun --mpi plugin; "" = the site's default (no --mpi) */
    int srun_inherits_c;        /**< 1: the site's srun takes -c from the job's --cpus-per-task (Slurm
                                     before 22.05); 0: it does not (22.05 and later: srun -c or
                                     SRUN_CPUS_PER_TASK is needed). Scripts bkm writes set srun -c either way */
    char prior[192];            /**< OpenMP variables the site recommends, "NAME=value NAME=value"
                                     (KMP_AFFINITY, KMP_BLOCKTIME, OMP_PLACES, OMP_PROC_BIND), "" = none:
                                     a labelled prior, never a measurement */
    char prior_source[192];     /**< where the site publishes it */
} bkm_batch_rules_t;

/** Names of the closed sets above ("node", "srun", ...), for messages and comments. */
const char *bkm_batch_c_rule_name(int rule);
const char *bkm_batch_launcher_name(int launcher);

/** A node profile is data: topology description, ISA, the site's batch rules, default sweep
 *  ranges. */
typedef struct bkm_node_profile {
    char name[32];                /**< "auto", "haswell", "knl", "perlmutter-cpu", or a user profile's name */
    char description[320];
    char synthetic[8192];         /**< hwloc synthetic description, or "" */
    char xml_path[512];           /**< hwloc XML file, or "" (one of the two, except for auto) */
    char isa[16];                 /**< "avx512", "avx2", ... */
    char slurm_constraint[64];    /**< #SBATCH -C, e.g. "knl,quad,cache" */
    bkm_batch_rules_t batch;      /**< the rest of the site's batch rules */
    int threads[16];              /**< default thread counts to sweep */
    int n_threads;
    int blocktime_ms[8];          /**< default KMP_BLOCKTIME values (-1 = infinite) */
    int n_blocktime;
} bkm_node_profile_t;

/** The site's recommended setting of @p p (its batch.prior) as an environment: pointers into
 *  @p store (@p cap bytes, which must outlive @p env). BKM_EINVAL naming the profile when it
 *  has none; the values were checked when the profile was made. */
struct bkm_aff_env;
int bkm_profile_prior_env(const bkm_node_profile_t *p, struct bkm_aff_env *env, char *store, size_t cap,
                          bkm_err_t *err);

/** Look up a built-in profile ("auto", "haswell", "knl", "perlmutter-cpu"); BKM_EINVAL naming
 *  @p name if unknown. */
int bkm_profile_builtin(const char *name, bkm_node_profile_t *p, bkm_err_t *err);
/** Names of the built-in profiles, NULL-terminated static array. */
const char *const *bkm_profile_builtin_names(void);
/** Largest key = value node profile bkm reads (an XML profile may be BKM_TOPO_XML_MAX_BYTES). */
#define BKM_PROFILE_MAX_BYTES ((size_t)1 << 20)
/** Load a user profile file (key = value lines; see docs) or an hwloc XML (then the profile's
 *  name is the file's basename). The file and the XML it names must be regular files within the
 *  limits above (BKM_EINVAL naming the path otherwise); nothing else is opened. */
int bkm_profile_load_file(const char *path, bkm_node_profile_t *p, bkm_err_t *err);
/** Open the topology a profile describes ("auto" = this host). */
int bkm_topo_open_profile(bkm_topo_t **topo, const bkm_node_profile_t *p, bkm_err_t *err);
/** Does this host match the profile (same packages/cores/PUs and ISA)? 1 yes, 0 no. */
int bkm_profile_matches_host(const bkm_node_profile_t *p, const bkm_topo_t *host);

/** A node profile by name or file: a built-in name (bkm_profile_builtin_names), else a readable
 *  profile file or hwloc XML (bkm_profile_load_file). BKM_EINVAL naming @p name_or_file when it is
 *  neither (the message of the built-in lookup when no such file exists, else the file's). */
int bkm_profile_resolve(const char *name_or_file, bkm_node_profile_t *p, bkm_err_t *err);

/** Where a topology comes from: at most one member set; none = this host ("auto"). */
typedef struct bkm_topo_source {
    const char *node;       /**< a built-in profile name or a profile file (bkm_profile_resolve) */
    const char *profile;    /**< a profile file or hwloc XML */
    const char *xml;        /**< an hwloc XML topology */
    const char *synthetic;  /**< an hwloc synthetic description */
} bkm_topo_source_t;

/** Open the topology @p src names. @p p (optional) receives the profile when one is used (node
 *  or profile; none given: "auto"), else its name is "". BKM_EINVAL when more than one source is
 *  given or the source is bad (named); BKM_EDEP when hwloc cannot discover this host. */
int bkm_topo_open_source(bkm_topo_t **topo, const bkm_topo_source_t *src, bkm_node_profile_t *p, bkm_err_t *err);

/* ======================================================================================== */
/* Binding probe                                                                             */
/* ======================================================================================== */

/** One thread of the probed OpenMP team, as the kernel sees it. */
typedef struct bkm_aff_probe_thread {
    int omp_thread;         /**< omp_get_thread_num() */
    int tid;                /**< kernel thread id (gettid) */
    int cpu;                /**< sched_getcpu() after a short spin with the whole team running */
    int place;              /**< omp_get_place_num(): -1 when the runtime binds to no place */
    bkm_cpuset_t mask;      /**< sched_getaffinity() of the thread: the ground truth */
} bkm_aff_probe_thread_t;

/** A task of this process that is neither the calling thread nor a member of the team: a
 *  libomp pool thread left from a larger earlier team, a libomp hidden helper thread, another
 *  runtime's worker (two OpenMP runtimes), a BLAS/oneDNN pool, a sanitizer thread. */
typedef struct bkm_aff_probe_foreign {
    int tid;
    char name[32];          /**< /proc/self/task/<tid>/comm */
    bkm_cpuset_t mask;      /**< Cpus_allowed_list */
} bkm_aff_probe_foreign_t;

/** What one probe saw. Owned by the caller; free with bkm_aff_probe_free. */
typedef struct bkm_aff_probe {
    int requested;                     /**< num_threads asked for */
    int n_threads;                     /**< team size that ran (omp_get_num_threads) */
    bkm_aff_probe_thread_t *thread;    /**< [n_threads], index = omp thread number */
    int num_places;                    /**< omp_get_num_places() */
    int caller_tid;                    /**< the thread that called the probe (omp thread 0) */
    bkm_cpuset_t caller_mask_after;    /**< its mask after the region (libomp may leave it bound) */
    int n_tasks;                       /**< entries of /proc/self/task after the region */
    int n_foreign;
    bkm_aff_probe_foreign_t *foreign;  /**< [n_foreign] */
    char runtimes[1024];               /**< ';'-separated real paths of the mapped OpenMP runtimes */
    int has_libomp;                    /**< LLVM libomp mapped */
    int has_libgomp;                   /**< GNU libgomp itself mapped (not a link to libomp) */
    int has_libiomp5;                  /**< Intel libiomp5 mapped */
} bkm_aff_probe_t;

/** Run one OpenMP parallel region with num_threads(@p n_threads) in which every thread records
 *  its tid, thread number, kernel mask, CPU and place; then list the process's other tasks and
 *  the OpenMP runtimes mapped (/proc/self/maps). Call from serial code (BKM_EINVAL inside a
 *  parallel region). Never calls omp_display_affinity/omp_capture_affinity (libomp 14 aborts in
 *  them under KMP_AFFINITY=disabled). Reads /proc/self only. BKM_EINVAL for n_threads < 1,
 *  BKM_EIO when /proc is unreadable, BKM_ENOMEM. *probe is NULL on error. */
int bkm_aff_probe_run(int n_threads, bkm_aff_probe_t **probe, bkm_err_t *err);
void bkm_aff_probe_free(bkm_aff_probe_t *probe);
/** BKM_OK when exactly one OpenMP runtime, LLVM libomp, is mapped; else BKM_EVERIFY naming
 *  the runtimes found. */
int bkm_aff_probe_check_single_runtime(const bkm_aff_probe_t *probe, bkm_err_t *err);
/** {"requested":N,"threads":N,"num_places":P,"caller_tid":..,"caller_mask_after":"0-1",
 *   "team":[{"thread":0,"tid":..,"cpu":0,"place":0,"mask":"0"},...],"tasks":T,
 *   "foreign":[{"tid":..,"name":"..","mask":"0-1"}],"runtimes":["/usr/lib/.../libomp.so.5"],
 *   "libomp":true,"libgomp":false,"libiomp5":false} */
int bkm_aff_probe_to_json(const bkm_aff_probe_t *probe, bkm_json_w_t *w, bkm_err_t *err);

/* ======================================================================================== */
/* Settings, planning, explanation                                                          */
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

/* ---- Parsed variables (plain values; no free needed) ------------------------------------ */

/** KMP_AFFINITY type. UNSET: the string names no type (it then only contributes modifiers). */
typedef enum {
    BKM_AFF_TYPE_UNSET = 0,
    BKM_AFF_TYPE_NONE,
    BKM_AFF_TYPE_COMPACT,
    BKM_AFF_TYPE_SCATTER,
    BKM_AFF_TYPE_BALANCED,
    BKM_AFF_TYPE_EXPLICIT,
    BKM_AFF_TYPE_DISABLED,
    BKM_AFF_TYPE_LOGICAL,
    BKM_AFF_TYPE_PHYSICAL
} bkm_aff_type_t;

/** Granularity / place kind (libomp layer names). */
typedef enum {
    BKM_AFF_GRAN_UNSET = 0,
    BKM_AFF_GRAN_THREAD,     /**< "fine" or "thread" */
    BKM_AFF_GRAN_CORE,
    BKM_AFF_GRAN_TILE,
    BKM_AFF_GRAN_SOCKET,     /**< "socket" or "package" */
    BKM_AFF_GRAN_DIE,
    BKM_AFF_GRAN_MODULE,
    BKM_AFF_GRAN_NUMA,       /**< "numa_domain" or "node" */
    BKM_AFF_GRAN_L1,
    BKM_AFF_GRAN_L2,
    BKM_AFF_GRAN_L3,
    BKM_AFF_GRAN_LL,         /**< "ll_cache" */
    BKM_AFF_GRAN_PROC_GROUP,
    BKM_AFF_GRAN_CORE_TYPE,
    BKM_AFF_GRAN_LEVELS      /**< granularity=INT: gran_levels levels above the leaf */
} bkm_aff_gran_t;

#define BKM_AFF_PROCLIST_MAX 4096

/** Parsed KMP_AFFINITY. Modifier fields are -1 when not given (runtime default applies). */
typedef struct bkm_aff_kmp {
    bkm_aff_type_t type;
    bkm_aff_gran_t gran;
    int gran_levels;          /**< for BKM_AFF_GRAN_LEVELS */
    int verbose, warnings, respect, dups;   /**< 0/1, or -1 = not given */
    int n_ints;               /**< 0..2 integers given */
    int permute, offset;      /**< 0 unless given */
    char proclist[BKM_AFF_PROCLIST_MAX];    /**< normalised text between the brackets, "" = none */
} bkm_aff_kmp_t;

/** Parse KMP_AFFINITY strictly: every case libomp 14 warns about (docs/affinity.md §1.4) is
 *  BKM_EINVAL with a message naming the offending token. NULL or "" gives an all-unset value. */
int bkm_aff_kmp_parse(const char *kmp_affinity, bkm_aff_kmp_t *out, bkm_err_t *err);

/** KMP_BLOCKTIME: ms, suffixes s/m/h/d, "infinite"/"infinity" → INT_MAX. Strict: junk, "ms",
 *  "us", negative values and surrounding spaces are BKM_EINVAL naming the value. */
int bkm_aff_blocktime_parse(const char *s, int *ms, bkm_err_t *err);

/** KMP_HW_SUBSET / KMP_PLACE_THREADS item: N<layer>[@offset]. */
typedef struct bkm_aff_hw_item {
    bkm_aff_gran_t layer;     /**< SOCKET, CORE, THREAD, NUMA, TILE, DIE, MODULE, L1, L2, L3 */
    int num;
    int offset;
} bkm_aff_hw_item_t;
typedef struct bkm_aff_hw_subset {
    int n;
    bkm_aff_hw_item_t item[8];
} bkm_aff_hw_subset_t;
int bkm_aff_hw_subset_parse(const char *s, bkm_aff_hw_subset_t *out, bkm_err_t *err);

/** OMP_PLACES: an abstract name with optional (N), or an explicit list (kept as text and expanded
 *  against the topology at planning time). */
typedef struct bkm_aff_places {
    bkm_aff_gran_t kind;      /**< THREAD/CORE/SOCKET/LL/NUMA/TILE/L1/L2/L3...; UNSET = explicit */
    int count;                /**< (N); 0 = all */
    char list[BKM_AFF_PROCLIST_MAX];  /**< explicit place list, normalised; "" for abstract */
} bkm_aff_places_t;
int bkm_aff_places_parse(const char *s, bkm_aff_places_t *out, bkm_err_t *err);

/** OMP_PROC_BIND: one policy per nesting level. */
typedef enum {
    BKM_AFF_BIND_FALSE = 0,
    BKM_AFF_BIND_TRUE,
    BKM_AFF_BIND_PRIMARY,     /**< "primary" or "master" */
    BKM_AFF_BIND_CLOSE,
    BKM_AFF_BIND_SPREAD
} bkm_aff_bind_t;
typedef struct bkm_aff_proc_bind {
    int n;
    bkm_aff_bind_t level[8];
} bkm_aff_proc_bind_t;
int bkm_aff_proc_bind_parse(const char *s, bkm_aff_proc_bind_t *out, bkm_err_t *err);

/** GOMP_CPU_AFFINITY ("0 5 7-9", "0-30:10"): converted, as libomp does, into the equivalent
 *  explicit proclist text ("0,5,7,8,9") written to @p proclist (size @p n). */
int bkm_aff_gomp_parse(const char *s, char *proclist, size_t n, bkm_err_t *err);

/* ---- Resolved settings (precedence of docs/affinity.md §1.3 applied) --------------------- */

/** Where the placement comes from after precedence. */
typedef enum {
    BKM_AFF_SRC_DEFAULT = 0,  /**< nothing set: KMP_AFFINITY default (none) */
    BKM_AFF_SRC_KMP,          /**< KMP_AFFINITY with a type */
    BKM_AFF_SRC_GOMP,         /**< GOMP_CPU_AFFINITY (explicit, fine) */
    BKM_AFF_SRC_OMP           /**< OMP_PLACES / OMP_PROC_BIND */
} bkm_aff_src_t;

typedef struct bkm_aff_setting {
    bkm_aff_src_t src;
    bkm_aff_kmp_t kmp;          /**< effective KMP_AFFINITY (GOMP folded in as explicit) */
    int places_set;             /**< OMP_PLACES took part */
    bkm_aff_places_t places;
    int proc_bind_set;          /**< OMP_PROC_BIND took part */
    bkm_aff_proc_bind_t proc_bind;
    int hw_subset_set;
    bkm_aff_hw_subset_t hw_subset;
    int blocktime_ms;           /**< effective (INT_MAX = infinite) */
    int n_ignored;              /**< variables dropped by precedence (W#182), names below */
    const char *ignored[4];     /**< static strings: "GOMP_CPU_AFFINITY", "OMP_PLACES", ... */
} bkm_aff_setting_t;

/** The variables of @p env that are set, as (name, value) pairs in the order bkm exports them:
 *  OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY, KMP_HW_SUBSET, KMP_PLACE_THREADS, KMP_AFFINITY,
 *  KMP_BLOCKTIME, OMP_WAIT_POLICY. libomp 14 applies the variables in environment order, and a few
 *  combinations depend on it (OMP_PLACES + OMP_PROC_BIND=false; a typeless KMP_AFFINITY's
 *  granularity/dups + OMP_PLACES): the planner assumes this order, so whoever starts a process with
 *  a planned setting must put the variables into its environment in this order. Returns the
 *  number of pairs (at most 8) written to @p names / @p values. */
int bkm_aff_env_export(const bkm_aff_env_t *env, const char *names[8], const char *values[8]);

/** Parse every variable in @p env strictly and apply precedence. */
int bkm_aff_setting_resolve(const bkm_aff_env_t *env, bkm_aff_setting_t *out, bkm_err_t *err);

/* ---- Plan --------------------------------------------------------------------------------- */

/** Planning options beyond the environment. Zero-initialise for libomp 14 on a non-KNL CPU. */
typedef struct bkm_aff_plan_opts {
    int model_tiles;          /**< 1: add the tile level (hwloc-method runtimes), explanation only */
    int mic;                  /**< 1: KNL ("mic") defaults: scatter + fine when nothing is set */
} bkm_aff_plan_opts_t;

typedef struct bkm_aff_plan bkm_aff_plan_t;

/** Compute, exactly as LLVM libomp 14 would, the OS-PU set of every thread of the outermost team
 *  of @p n_threads threads (index = omp_get_thread_num; libomp's hidden helper threads take gtids
 *  1..8 but are removed from the mask index, so thread k uses mask (k + offset) mod #masks).
 *  Variables are assumed to be in the environment in bkm_aff_env_export's order. Where libomp 14
 *  only warns and carries on (bad tokens, proclist/place ids outside the usable PUs, a
 *  KMP_HW_SUBSET that asks for too many or for a layer the topology lacks), this fails with
 *  BKM_EINVAL naming the token or value; *plan is NULL on error. A granularity whose layer libomp
 *  14 does not build (tile, die, numa_domain, l2_cache ... without --tiles) falls back to core as
 *  libomp does, with a warning in the plan. Pure computation: no OpenMP, no environment. */
int bkm_aff_plan_create(const bkm_topo_t *topo, const bkm_aff_env_t *env, int n_threads,
                        bkm_aff_plan_t **plan, bkm_err_t *err);
int bkm_aff_plan_create_ex(const bkm_topo_t *topo, const bkm_aff_env_t *env, int n_threads,
                           const bkm_aff_plan_opts_t *opts, bkm_aff_plan_t **plan, bkm_err_t *err);
void bkm_aff_plan_free(bkm_aff_plan_t *plan);

int bkm_aff_plan_threads(const bkm_aff_plan_t *plan);
/** 1 when threads are bound; 0 when every thread floats over bkm_aff_plan_allowed(). */
int bkm_aff_plan_bound(const bkm_aff_plan_t *plan);
/** CPU set of omp thread @p thread (for unbound plans: the allowed mask); NULL if out of range. */
const bkm_cpuset_t *bkm_aff_plan_cpus(const bkm_aff_plan_t *plan, int thread);
/** The process mask the runtime works in (allowed set, after KMP_HW_SUBSET). */
const bkm_cpuset_t *bkm_aff_plan_allowed(const bkm_aff_plan_t *plan);
/** Effective settings as KMP_SETTINGS prints them, e.g.
 *  "noverbose,warnings,respect,granularity=core,compact,0,0". */
const char *bkm_aff_plan_effective(const bkm_aff_plan_t *plan);
/** Effective blocktime in ms (INT_MAX = infinite). */
int bkm_aff_plan_blocktime_ms(const bkm_aff_plan_t *plan);
/** Warnings ("2 threads share core 3", "socket 1 idle", "threads exceed PUs", ignored vars). */
int bkm_aff_plan_n_warnings(const bkm_aff_plan_t *plan);
const char *bkm_aff_plan_warning(const bkm_aff_plan_t *plan, int i);
/** 1 when both plans map every thread to the same CPU set (and agree on thread count). */
int bkm_aff_plan_equal(const bkm_aff_plan_t *a, const bkm_aff_plan_t *b);
/** {"threads":N,"bound":b,"effective":"...","source":"KMP_AFFINITY","blocktime_ms":200,
 *   "allowed":"0-63","plan":[{"thread":0,"cpus":[0],"cores":[0],"sockets":[0]},...],
 *   "warnings":["..."]}: thread = omp_get_thread_num in the outermost team, cpus = sorted OS ids,
 *  cores/sockets = logical indexes of the PU table (omitted when @p topo is NULL). */
int bkm_aff_plan_to_json(const bkm_aff_plan_t *plan, const bkm_topo_t *topo, bkm_json_w_t *w,
                         bkm_err_t *err);
/** Human-readable table "thread → PUs, core, socket", effective settings and warnings. */
int bkm_aff_plan_explain(const bkm_aff_plan_t *plan, const bkm_topo_t *topo, bkm_buf_t *out,
                         bkm_err_t *err);
/** Run @p exe with @p argv (a command that prints the probe's JSON, e.g. `tune affinity probe
 *  --threads N --json`) in a child whose environment is @p environment without the variables
 *  that steer an OpenMP runtime's affinity (KMP_AFFINITY, KMP_HW_SUBSET, KMP_PLACE_THREADS,
 *  KMP_BLOCKTIME, OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY, OMP_WAIT_POLICY,
 *  KMP_TOPOLOGY_METHOD, KMP_CPUINFO_FILE, OMP_DISPLAY_AFFINITY, OMP_DISPLAY_ENV, KMP_SETTINGS,
 *  OMP_NUM_THREADS, KMP_HIDDEN_HELPER_AFFINITY), plus the settings of @p env in the order
 *  libomp 14 applies them (bkm_aff_env_export).
 *  *out gets the child's stdout (bkm_free). Callers flush their stdio buffers first.
 *  @return BKM_OK; BKM_EDEP when the child fails (exit status or signal named); BKM_EIO
 *  (pipe, fork); BKM_ENOMEM. */
int bkm_aff_probe_spawn(const char *exe, char *const argv[], char *const *environment, const bkm_aff_env_t *env,
                        char **out, bkm_err_t *err);
/** Compare @p plan for @p threads threads with @p probe, the parsed output of
 *  `tune affinity probe --json` run under the plan's settings, and render the comparison into
 *  @p out: per thread the planned and the actual mask, the team size, threads of a second
 *  OpenMP runtime; as a text table, or one compact JSON object ({"threads","effective",
 *  "bound","compare":[{"thread","planned","actual","match"}],"team_size","foreign_threads",
 *  "second_runtime","match"}) when @p json. Ends with a newline.
 *  @return BKM_OK when everything matches; BKM_EVERIFY naming the number of mismatches (the
 *  comparison is rendered too); BKM_EDEP when @p probe has no team (nothing rendered). */
int bkm_aff_plan_verify(const bkm_aff_plan_t *plan, int threads, const bkm_json_t *probe, bkm_buf_t *out, int json,
                        bkm_err_t *err);

/* ======================================================================================== */
/* The topology libomp itself sees                                                           */
/* ======================================================================================== */

/* libomp reads the topology from CPUID by default; some VMs report APIC ids that are not the
 * guest's (leaf 11 missing, legacy ids decoded into a wrong shape and order, changing with the
 * physical cores the vCPUs run on). The planner plans on hwloc's topology, so bkm asks the runtime
 * which ids it gives every OS proc and, when they disagree, makes libomp read hwloc's view from a
 * cpuinfo file (KMP_TOPOLOGY_METHOD=cpuinfo, KMP_CPUINFO_FILE). */

/** One OS proc as libomp 14 maps it ("OS proc N maps to socket S core C thread T"). */
typedef struct bkm_aff_libomp_proc {
    int os, socket, core, thread;
} bkm_aff_libomp_proc_t;

/** libomp's topology, in libomp's order (the order of its verbose map). Free with
 *  bkm_aff_libomp_view_free. */
typedef struct bkm_aff_libomp_view {
    char method[96];             /**< "decoding x2APIC ids", "decoding legacy APIC ids",
                                      "parsing /proc/cpuinfo", ... ("" when not printed) */
    char shape[128];             /**< "1 socket x 2 cores/socket x 1 thread/core (2 total cores)" */
    int n;
    bkm_aff_libomp_proc_t *proc; /**< [n] */
    int vm_guest;                /**< 1 when the CPU reports a hypervisor (CPUID.1:ECX[31]); set by
                                      bkm_aff_libomp_view_spawn, 0 after a plain parse */
} bkm_aff_libomp_view_t;

/** Parse the KMP_AFFINITY=verbose output of libomp 14 (its stderr): the method line (Info #216 /
 *  #220 ...), the shape line (#191) and every "OS proc N maps to ..." line (other layers such as
 *  "die" or "L2 cache" are skipped). BKM_EINVAL when there is no map line or a line is
 *  malformed (named); BKM_ENOMEM. @p view is emptied first. */
int bkm_aff_libomp_view_parse(const char *text, bkm_aff_libomp_view_t *view, bkm_err_t *err);
void bkm_aff_libomp_view_free(bkm_aff_libomp_view_t *view);
/** Run @p exe @p argv (a program that starts libomp and runs a parallel region, e.g. `tune
 *  affinity probe --threads 1`) with @p environment minus the variables that steer an OpenMP
 *  runtime's affinity (the list of bkm_aff_probe_spawn, so libomp uses its default topology
 *  method, as in every process bkm starts), plus KMP_AFFINITY=verbose, OMP_NUM_THREADS=1 and the
 *  "NAME=value" strings of @p extra (NULL-terminated; may be NULL), and parse its stderr.
 *  BKM_EDEP when the child fails or prints no map (its last line named); BKM_EIO; BKM_ENOMEM. */
int bkm_aff_libomp_view_spawn(const char *exe, char *const argv[], char *const *environment, char *const *extra,
                              bkm_aff_libomp_view_t *view, bkm_err_t *err);
/** Does libomp see @p topo's topology? Over the allowed PUs: the same OS procs, the same order
 *  (packages, then cores by hardware id, then threads by OS index: what the planner assumes) and
 *  the same partition into cores and packages. BKM_OK when they agree; BKM_EVERIFY when not, with
 *  @p why (may be NULL) saying how, e.g. "libomp (decoding legacy APIC ids): 1 package x 1 core x
 *  2 threads, procs in the order 1,0; hwloc: 1 package x 2 cores x 1 thread, order 0,1". */
int bkm_aff_libomp_view_compare(const bkm_topo_t *topo, const bkm_aff_libomp_view_t *view, bkm_buf_t *why,
                                bkm_err_t *err);
/** {"method":"..","shape":"..","map":[{"os":0,"socket":0,"core":0,"thread":0},...]} */
int bkm_aff_libomp_view_to_json(const bkm_aff_libomp_view_t *view, bkm_json_w_t *w, bkm_err_t *err);

/** When bkm corrects libomp's topology. */
typedef enum {
    BKM_AFF_TOPO_FIX_AUTO = 0, /**< when libomp's view disagrees with hwloc's */
    BKM_AFF_TOPO_FIX_NEVER,    /**< never: libomp keeps its own view (its default method) */
    BKM_AFF_TOPO_FIX_ALWAYS    /**< always give libomp hwloc's view */
} bkm_aff_topo_fix_mode_t;

/** The correction for the processes one command starts. Zero-initialise; release with
 *  bkm_aff_topo_fix_release. */
typedef struct bkm_aff_topo_fix {
    int applied;          /**< 1: every OpenMP process gets the two variables below */
    int disagreed;        /**< 1: libomp's own view differed from hwloc's (see why) */
    int unstable;         /**< 1: it agreed, but from legacy APIC ids in a VM, which change (see why) */
    char why[1024];       /**< the difference, "" when they agree */
    char method[96];      /**< libomp's own topology method ("decoding x2APIC ids") */
    char path[4096];      /**< the cpuinfo file written (owned: removed by release), "" if none */
    char env_method[32];  /**< "KMP_TOPOLOGY_METHOD=cpuinfo" when applied, else "" */
    char env_file[4120];  /**< "KMP_CPUINFO_FILE=<path>" when applied, else "" */
} bkm_aff_topo_fix_t;

/** 1 when a process whose KMP_AFFINITY is @p kmp_affinity (NULL = unset) takes the correction; 0
 *  for the type "disabled": libomp 14 then aborts in its cpuinfo method ("Assertion failure at
 *  kmp_affinity.cpp(3078): num_avail > 0", measured) and binds nothing anyway, so its topology does
 *  not matter. A value that does not parse counts as 1 (the planner refuses it). */
int bkm_aff_topo_fix_wanted(const char *kmp_affinity);

/** Name of a mode ("auto", "never", "always") and its parser (BKM_EINVAL naming the value). */
const char *bkm_aff_topo_fix_mode_name(bkm_aff_topo_fix_mode_t mode);
int bkm_aff_topo_fix_mode_parse(const char *s, bkm_aff_topo_fix_mode_t *mode, bkm_err_t *err);

/** Decide the correction: compare @p view (libomp's own, may be NULL with mode NEVER or ALWAYS)
 *  with @p topo, and when they disagree (AUTO) or always (ALWAYS) write @p topo's cpuinfo text.
 *  AUTO also corrects a view that agrees but that libomp decoded from legacy APIC ids on a VM guest
 *  (no usable CPUID leaf 11/0x1F): those ids are the host's and follow the physical cores the vCPUs
 *  happen to run on, so the view can change under a running sweep (fix->unstable). It writes
 *  (bkm_topo_cpuinfo_write) to a new file "bkm-cpuinfo-<pid>-XXXXXX" in the directory @p dir (mode
 *  0600). The file must outlive every process started with the variables; the caller releases it
 *  when they have ended. BKM_EIO when the file cannot be written; BKM_EINVAL. */
int bkm_aff_topo_fix_prepare(const bkm_topo_t *topo, const bkm_aff_libomp_view_t *view,
                             bkm_aff_topo_fix_mode_t mode, const char *dir, bkm_aff_topo_fix_t *fix,
                             bkm_err_t *err);
/** Remove the cpuinfo files in @p dir left by bkm processes that no longer exist (killed before
 *  they could release theirs, e.g. by SIGKILL): files "bkm-cpuinfo-<pid>-XXXXXX" of this user
 *  whose pid is gone. Returns how many were removed. */
int bkm_aff_topo_fix_collect(const char *dir);
/** Remove the file (if any) and reset @p fix to "not applied". NULL is a no-op. */
void bkm_aff_topo_fix_release(bkm_aff_topo_fix_t *fix);
/** {"applied":b,"disagreed":b,"unstable":b,"why":"..","libomp_method":"..","KMP_TOPOLOGY_METHOD":"cpuinfo",
 *   "KMP_CPUINFO_FILE":".."} (the two variables only when applied). */
void bkm_aff_topo_fix_to_json(const bkm_aff_topo_fix_t *fix, bkm_json_w_t *w);

/** bkm_aff_probe_spawn with @p extra "NAME=value" strings (NULL-terminated, may be NULL) added
 *  after the setting's variables: the topology correction. */
int bkm_aff_probe_spawn_ex(const char *exe, char *const argv[], char *const *environment, const bkm_aff_env_t *env,
                           char *const *extra, char **out, bkm_err_t *err);

#ifdef __cplusplus
}
#endif

/* GNU libgomp 12: its place list, team placement and waiting (a feature header of this module). */
#include "bkm/affinity/gomp.h"

#endif /* BKM_AFFINITY_H */
