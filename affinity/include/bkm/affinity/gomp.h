/* SPDX-License-Identifier: MIT */
/** @file bkm/affinity/gomp.h
 * What GNU libgomp 12 (GCC 12.2, Debian 12's libgomp1 12.2.0) does with its placement and waiting
 * variables on a node: OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY, OMP_NUM_THREADS (with nested
 * lists), OMP_MAX_ACTIVE_LEVELS, OMP_NESTED, OMP_WAIT_POLICY and GOMP_SPINCOUNT.
 *
 * The plan gives libgomp's place list, the bind policy of every nesting level, the pin of the
 * initial thread in libgomp's constructor (before main()), and for a team and its nested teams
 * every thread's place (omp_get_place_num), partition (omp_get_partition_place_nums) and kernel
 * CPU mask; the messages libgomp prints for the values it rejects (each rejected variable is then
 * treated as unset); the spin count of its waits. It models libgomp's behaviour, its bugs included:
 * OMP_PLACES=ll_caches gives one place (libgomp 12.2 reads the first CPU's cache list for every
 * CPU), and a place list shorter than the team does not restart from its beginning
 * (GOMP_CPU_AFFINITY="0 1" with 4 threads gives 0,0,1,1).
 *
 * The machine is the topology as Linux's sysfs shows it to libgomp (thread siblings = the PUs of a
 * core, core siblings = the PUs of a package, the highest-level cache, NUMA nodes by id) and the
 * initial mask is the topology's allowed set (bkm_topo_restrict). The initial mask is taken to be a
 * cpuset the process cannot leave (Slurm's cgroup): a GOMP_CPU_AFFINITY CPU outside it makes the
 * pin of the initial thread fail and the creation of a thread bound to it fatal ("Thread creation
 * failed: Invalid argument"). The threads are those of a program's first parallel region at each
 * level (fresh threads; libgomp re-uses idle threads in later regions of the same size unchanged).
 *
 * Error convention: see bkm/common.h. Plans are immutable; free with bkm_aff_gomp_plan_free (NULL
 * is a no-op). Pure computation: no OpenMP, no environment, no files.
 */
#ifndef BKM_AFFINITY_GOMP_H
#define BKM_AFFINITY_GOMP_H

#include "bkm/affinity.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Nesting levels a plan covers (1 = the outermost team only). */
#define BKM_AFF_GOMP_MAX_LEVELS 4
/** Largest team the planner plans (a larger OMP_NUM_THREADS is BKM_EINVAL naming it). */
#define BKM_AFF_GOMP_MAX_TEAM 4096
/** Most threads over all levels of a plan. */
#define BKM_AFF_GOMP_MAX_THREADS 65536

/** libgomp's variables as they would be exported; NULL = unset. */
typedef struct bkm_aff_gomp_env {
    const char *omp_places;
    const char *omp_proc_bind;
    const char *gomp_cpu_affinity;
    const char *omp_num_threads; /**< "8" or a list per nesting level, "4,2" */
    const char *omp_max_active_levels;
    const char *omp_nested;
    const char *omp_wait_policy;
    const char *gomp_spincount;
    /** Other variables of the setting, "NAME=value" (NULL-terminated, may be NULL): libgomp reads
     *  none of them (KMP_AFFINITY, KMP_BLOCKTIME, ...); the plan notes each one as ignored. */
    const char *const *foreign;
} bkm_aff_gomp_env_t;

/** What to plan beyond the environment. Zero-initialise for the outermost team of the size
 *  libgomp picks itself (OMP_NUM_THREADS, else the CPUs of the initial mask). */
typedef struct bkm_aff_gomp_opts {
    int n_levels;                             /**< nesting levels, 1..BKM_AFF_GOMP_MAX_LEVELS (0 = 1) */
    int num_threads[BKM_AFF_GOMP_MAX_LEVELS]; /**< num_threads clause of the region at each depth
                                                     (every team of that depth), 0 = none */
    int strict;                               /**< 1: fail (BKM_EINVAL naming the variable, the value
                                                     and why) where libgomp would print a message,
                                                     drop a CPU silently or abort */
} bkm_aff_gomp_opts_t;

/** Where the place list comes from. */
typedef enum {
    BKM_AFF_GOMP_PLACES_NONE = 0, /**< no places: threads are not bound */
    BKM_AFF_GOMP_PLACES_OMP,      /**< OMP_PLACES */
    BKM_AFF_GOMP_PLACES_GOMP,     /**< GOMP_CPU_AFFINITY */
    BKM_AFF_GOMP_PLACES_DEFAULT   /**< binding on without places: libgomp's `threads` */
} bkm_aff_gomp_places_src_t;

/** One thread of a planned team. */
typedef struct bkm_aff_gomp_thread {
    int level;         /**< 1 = the outermost team */
    int num;           /**< omp_get_thread_num() in its team */
    int team_size;     /**< omp_get_num_threads() */
    int parent;        /**< index in the plan of the thread that started its team; -1 at level 1 */
    int place;         /**< omp_get_place_num(): -1 when libgomp has no places */
    int part_off;      /**< partition: places part_off .. part_off + part_len - 1 */
    int part_len;      /**< omp_get_partition_num_places() (0 without places) */
    bkm_cpuset_t cpus; /**< the thread's kernel CPU mask */
} bkm_aff_gomp_thread_t;

/** How libgomp's threads wait (spin before sleeping on a futex). */
typedef struct bkm_aff_gomp_wait {
    int policy;                         /**< OMP_WAIT_POLICY: -1 unset (or rejected), 0 passive, 1 active */
    unsigned long long spin_count;      /**< GOMP_SPINCOUNT as libgomp shows it (ULLONG_MAX = infinite) */
    unsigned long long throttled_count; /**< spins used while libgomp manages more threads than CPUs */
    int throttled;                      /**< 1 when the planned threads outnumber the initial mask's CPUs */
    unsigned long long effective;       /**< what the planned teams spin: one of the two */
} bkm_aff_gomp_wait_t;

typedef struct bkm_aff_gomp_plan bkm_aff_gomp_plan_t;

/** Plan, exactly as libgomp 12 would, the settings of @p env on @p topo with its allowed set as the
 *  initial mask. Without opts->strict a value libgomp rejects is what libgomp makes of it (its
 *  message recorded, the variable treated as unset); with strict it is BKM_EINVAL naming the
 *  variable, the value and the reason. BKM_EINVAL too for a team above BKM_AFF_GOMP_MAX_TEAM, more
 *  than BKM_AFF_GOMP_MAX_THREADS threads, bad opts; BKM_ENOMEM. *plan is NULL on error. */
int bkm_aff_gomp_plan_create(const bkm_topo_t *topo, const bkm_aff_gomp_env_t *env, const bkm_aff_gomp_opts_t *opts,
                             bkm_aff_gomp_plan_t **plan, bkm_err_t *err);
void bkm_aff_gomp_plan_free(bkm_aff_gomp_plan_t *plan);

/** Strict check of @p env alone (syntax, no topology): BKM_OK when libgomp 12 accepts every set
 *  variable, else BKM_EINVAL naming the first bad one, its value and why. */
int bkm_aff_gomp_env_check(const bkm_aff_gomp_env_t *env, bkm_err_t *err);

/** libgomp's place list: bkm_aff_gomp_plan_n_places places (0: none), each a CPU set. */
int bkm_aff_gomp_plan_n_places(const bkm_aff_gomp_plan_t *plan);
const bkm_cpuset_t *bkm_aff_gomp_plan_place(const bkm_aff_gomp_plan_t *plan, int i);
bkm_aff_gomp_places_src_t bkm_aff_gomp_plan_places_source(const bkm_aff_gomp_plan_t *plan);
/** The place list in libgomp's notation, as OMP_DISPLAY_ENV prints it ("{0:2},{4},{5:2,8}"),
 *  appended to @p out. */
void bkm_aff_gomp_plan_places_format(const bkm_aff_gomp_plan_t *plan, bkm_buf_t *out);

/** Nesting levels planned, and the bind policy (BKM_AFF_BIND_*; PRIMARY for master/primary) and
 *  the team size of level @p level (1-based); BKM_AFF_BIND_FALSE when libgomp has no places. */
int bkm_aff_gomp_plan_levels(const bkm_aff_gomp_plan_t *plan);
bkm_aff_bind_t bkm_aff_gomp_plan_bind(const bkm_aff_gomp_plan_t *plan, int level);
int bkm_aff_gomp_plan_team_size(const bkm_aff_gomp_plan_t *plan, int level);
/** OMP_PROC_BIND as OMP_DISPLAY_ENV prints it ("SPREAD,CLOSE", "TRUE", "FALSE"). */
const char *bkm_aff_gomp_plan_bind_display(const bkm_aff_gomp_plan_t *plan);
/** OMP_NUM_THREADS as OMP_DISPLAY_ENV prints it ("4,2"), and max-active-levels. */
const char *bkm_aff_gomp_plan_nthreads_display(const bkm_aff_gomp_plan_t *plan);
int bkm_aff_gomp_plan_max_active_levels(const bkm_aff_gomp_plan_t *plan);

/** The initial thread after libgomp's constructor: 1 when the constructor pins it (binding on and
 *  places exist); *cpus (may be NULL) gets its mask then (the initial mask when not pinned, or when
 *  the pin fails because places[0] is outside the initial mask). */
int bkm_aff_gomp_plan_initial_pin(const bkm_aff_gomp_plan_t *plan, bkm_cpuset_t *cpus);
/** The initial mask. */
const bkm_cpuset_t *bkm_aff_gomp_plan_mask(const bkm_aff_gomp_plan_t *plan);

/** Threads of all planned teams: level 1 first (index = thread number), then each level's teams
 *  in the order of their parents. */
int bkm_aff_gomp_plan_n_threads(const bkm_aff_gomp_plan_t *plan);
const bkm_aff_gomp_thread_t *bkm_aff_gomp_plan_thread(const bkm_aff_gomp_plan_t *plan, int i);
/** "1.0": the thread numbers from the outermost team down to thread @p i, into @p out. */
void bkm_aff_gomp_plan_thread_path(const bkm_aff_gomp_plan_t *plan, int i, bkm_buf_t *out);
/** 1 when some thread is bound (its mask differs from the initial mask or it has a place). */
int bkm_aff_gomp_plan_bound(const bkm_aff_gomp_plan_t *plan);

/** libgomp's fatal error while starting the teams ("Thread creation failed: Invalid argument"),
 *  after which the process exits with status 1; NULL when none. */
const char *bkm_aff_gomp_plan_fatal(const bkm_aff_gomp_plan_t *plan);
/** libgomp's messages on stderr, in order, without the "libgomp: " prefix. */
int bkm_aff_gomp_plan_n_messages(const bkm_aff_gomp_plan_t *plan);
const char *bkm_aff_gomp_plan_message(const bkm_aff_gomp_plan_t *plan, int i);
/** Explanations: what was ignored and why, shared places, the constructor's pin, ... */
int bkm_aff_gomp_plan_n_notes(const bkm_aff_gomp_plan_t *plan);
const char *bkm_aff_gomp_plan_note(const bkm_aff_gomp_plan_t *plan, int i);
/** The waiting of the planned teams. */
void bkm_aff_gomp_plan_wait(const bkm_aff_gomp_plan_t *plan, bkm_aff_gomp_wait_t *wait);

/** Plan-equality key, appended to @p out: two plans with the same key run the planned teams the
 *  same way (the initial thread's mask, every thread's CPU set at every level, the spin counts,
 *  a fatal start), so a sweep keeps one setting per key. Place numbers and partitions are not in
 *  the key (they only show through omp_get_place_num and the like). */
void bkm_aff_gomp_plan_key(const bkm_aff_gomp_plan_t *plan, bkm_buf_t *out);
/** 1 when both plans have the same key. */
int bkm_aff_gomp_plan_equal(const bkm_aff_gomp_plan_t *a, const bkm_aff_gomp_plan_t *b);

/** {"runtime":"libgomp","threads":N,"levels":L,"bound":b,"places_source":"OMP_PLACES",
 *   "places":[[0,32],...],"places_display":"{0,32},...","proc_bind":["spread","close"],
 *   "proc_bind_display":"SPREAD,CLOSE","nthreads_display":"4,2","max_active_levels":255,
 *   "mask":"0-63","initial_pin":{"pinned":true,"cpus":[0]},
 *   "wait":{"policy":"unset","spin_count":300000,"throttled_spin_count":100,"throttled":false,
 *   "effective":300000},"plan":[{"thread":0,"path":"0","level":1,"parent":-1,"team_size":4,
 *   "place":0,"partition":[0,1,...],"cpus":[0],"cores":[0],"sockets":[0]},...],
 *   "messages":[...],"fatal":null,"notes":[...],"key":"..."}; level-1 entries come first, "thread"
 *  is the thread number; cores/sockets are logical indexes (omitted when @p topo is NULL). */
int bkm_aff_gomp_plan_to_json(const bkm_aff_gomp_plan_t *plan, const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err);
/** Human-readable: places, binding per level, the constructor's pin, waiting, a table thread ->
 *  place, partition, CPUs, core, socket, then libgomp's messages and the notes. */
int bkm_aff_gomp_plan_explain(const bkm_aff_gomp_plan_t *plan, const bkm_topo_t *topo, bkm_buf_t *out, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_AFFINITY_GOMP_H */
