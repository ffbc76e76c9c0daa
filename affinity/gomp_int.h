/* SPDX-License-Identifier: MIT */
/* Private declarations of the GNU libgomp 12 model, shared by gomp_env.c (the variables),
 * gomp_places.c (the place list) and gomp_plan.c (teams, plan object). Not part of the API. */
#ifndef BKM_GOMP_INT_H
#define BKM_GOMP_INT_H

#include "bkm/affinity.h"

/** libgomp's proc_bind values (omp_proc_bind_t): the same order as bkm_aff_bind_t. */
enum { GOMP_BIND_FALSE = 0, GOMP_BIND_TRUE, GOMP_BIND_MASTER, GOMP_BIND_CLOSE, GOMP_BIND_SPREAD };

/** Most list entries kept per variable (OMP_NUM_THREADS, OMP_PROC_BIND); libgomp keeps any
 *  number, the planner uses BKM_AFF_GOMP_MAX_LEVELS and keeps the rest for display. */
#define BKM__GOMP_LIST_MAX 64
/** Most places the planner holds (libgomp: 65536 from OMP_PLACES, more from GOMP_CPU_AFFINITY). */
#define BKM__GOMP_PLACES_MAX (1 << 20)
/** Most messages kept per plan. */
#define BKM__GOMP_MSG_MAX 32

/** The model's working state: the machine as libgomp sees it, where messages go, the place list
 *  being built. */
typedef struct bkm__gomp {
    const bkm_topo_t *topo;
    bkm_cpuset_t mask; /**< initial mask (pthread_getaffinity_np at start-up) */
    unsigned long max; /**< 8 x gomp_cpuset_size: CPU numbers at or above are out of range */
    int popcount;      /**< CPUs in the mask: default team size and gomp_available_cpus */
    const char *var;   /**< the variable being read (names messages and reasons) */
    /* libgomp's messages (gomp_error), without the "libgomp: " prefix, and their variables */
    char *msg[BKM__GOMP_MSG_MAX];
    const char *msg_var[BKM__GOMP_MSG_MAX];
    int n_msg;
    int oom; /**< an allocation failed: the plan is refused with BKM_ENOMEM */
    /* why the first value libgomp rejected was rejected (for the strict checks); "" = none */
    char why[384];
    const char *why_var;
    int dropped; /**< GOMP_CPU_AFFINITY CPUs dropped silently (beyond the CPU set) */
    /* the place list */
    bkm_cpuset_t *places;
    int n_places, cap_places;
} bkm__gomp_t;

/** Append one of libgomp's messages (printf-style, the text libgomp 12 prints after "libgomp: "). */
void bkm__gomp_msg(bkm__gomp_t *g, const char *fmt, ...) BKM_PRINTF(2, 3);
/** Record why a value is rejected, unless a reason is already recorded. */
void bkm__gomp_why(bkm__gomp_t *g, const char *fmt, ...) BKM_PRINTF(2, 3);
/** isspace() of the C locale, the locale libgomp's constructor runs in. */
int bkm__gomp_isspace(int c);
/** Drop the place list. */
void bkm__gomp_places_clear(bkm__gomp_t *g);

/** The ICVs libgomp's constructor derives from the environment (initialize_env). */
typedef struct bkm__gomp_icv {
    int nthreads_set;                           /**< OMP_NUM_THREADS parsed */
    unsigned long nthreads[BKM__GOMP_LIST_MAX]; /**< nthreads-var list ([0] = first value) */
    int nthreads_len;                           /**< entries in the variable (may exceed the array) */
    int bind_set;                               /**< OMP_PROC_BIND parsed */
    int bind[BKM__GOMP_LIST_MAX];               /**< bind-var list (GOMP_BIND_*) */
    int bind_len;                               /**< entries in the variable (1 = no list) */
    int bind_var;                               /**< the global bind-var after places (TRUE if they set it) */
    unsigned long max_active_levels;
    int wait_policy; /**< -1 unset, 0 passive, 1 active */
    int spin_set;    /**< GOMP_SPINCOUNT parsed */
    unsigned long long spin, throttled;
    int places_src;                       /**< bkm_aff_gomp_places_src_t */
    int places_ignored, affinity_ignored; /**< set but only syntax-checked */
} bkm__gomp_icv_t;

/** Parse the variables of @p env as libgomp 12's constructor does, in its order, recording its
 *  messages in @p g and building the place list (OMP_PLACES, GOMP_CPU_AFFINITY, or the default
 *  `threads` when binding is on without places). BKM_ENOMEM only; every rejected value is a
 *  message, never an error. */
int bkm__gomp_env_apply(bkm__gomp_t *g, const bkm_aff_gomp_env_t *env, bkm__gomp_icv_t *icv);

/** OMP_PLACES (parse_places_var): 1 when it gave a place list, 0 otherwise (messages recorded).
 *  @p ignore: OMP_PROC_BIND=false, only the syntax is checked. */
int bkm__gomp_places_var(bkm__gomp_t *g, const char *value, int ignore);
/** GOMP_CPU_AFFINITY (parse_affinity): 1 when it gave a place list. */
int bkm__gomp_affinity_var(bkm__gomp_t *g, const char *value, int ignore);
/** An abstract place kind (gomp_affinity_init_level): level 1 threads, 2 cores, 3 sockets,
 *  4 ll_caches, 5 numa_domains; at most @p count places. @p quiet: no message on failure.
 *  1 when it gave at least one place. */
int bkm__gomp_places_level(bkm__gomp_t *g, int level, unsigned long count, int quiet);

#endif /* BKM_GOMP_INT_H */
