/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/space.h
 * The search space of a sweep: thread counts x affinity settings x blocktime x kernel
 * parameters on a node's topology, configurations the planner rejects dropped and those with
 * identical plans merged.
 */
#ifndef BKM_TUNER_SPACE_H
#define BKM_TUNER_SPACE_H

#include <stddef.h>

#include "bkm/trial.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_node_profile;

/** KMP_BLOCKTIME of a configuration: a value in ms, or one of these. */
#define BKM_TUNE_BLOCKTIME_UNSET (-2)    /**< not set: the runtime default (200 ms) */
#define BKM_TUNE_BLOCKTIME_INFINITE (-1) /**< "infinite" */
#define BKM_TUNE_SPACE_MAX_THREADS 64
#define BKM_TUNE_SPACE_MAX_AFFINITY 32
#define BKM_TUNE_SPACE_MAX_BLOCKTIME 8
#define BKM_TUNE_SPACE_MAX_HW_SUBSET 8
#define BKM_TUNE_SPACE_MAX_PARAMS 16
#define BKM_TUNE_SPACE_MAX_VALUES 16
/** Dimensions of the space: threads, affinity, blocktime, hw_subset, then one per parameter. */
#define BKM_TUNE_DIM_THREADS 0
#define BKM_TUNE_DIM_AFFINITY 1
#define BKM_TUNE_DIM_BLOCKTIME 2
#define BKM_TUNE_DIM_HW_SUBSET 3
#define BKM_TUNE_DIM_PARAM0 4
#define BKM_TUNE_MAX_DIMS (BKM_TUNE_DIM_PARAM0 + BKM_TUNE_SPACE_MAX_PARAMS)

/** What the user asked for (a plain value; zero-initialise, then fill). Every empty list means
 *  "the default for this node": the profile's thread counts and blocktimes, affinity settings
 *  generated from the topology (default, none, compact/scatter/balanced x granularity fine/core
 *  x permute 0/1, OMP_PLACES threads/cores x OMP_PROC_BIND close/spread), KMP_HW_SUBSET values
 *  generated from the SMT width (unset, then 1..smt-1 threads per core). Kernel tunables are
 *  swept when named in params, or all of them at {def/2, def, 2 def} (rounded to their
 *  multiple-of rule, within bounds) with sweep_tunables. */
typedef struct bkm_tune_space_opts {
    const char *workload;                          /**< required */
    const char *backend;                           /**< NULL or "" = workload default */
    int threads[BKM_TUNE_SPACE_MAX_THREADS];       /**< --threads */
    int n_threads;
    const char *affinity[BKM_TUNE_SPACE_MAX_AFFINITY]; /**< --affinity: "default", a KMP_AFFINITY
                                                          value, or "VAR=value VAR=value" with VAR
                                                          among KMP_AFFINITY, OMP_PLACES,
                                                          OMP_PROC_BIND (space separated) */
    int n_affinity;
    int blocktime_ms[BKM_TUNE_SPACE_MAX_BLOCKTIME]; /**< --blocktime (BKM_TUNE_BLOCKTIME_*) */
    int n_blocktime;
    const char *hw_subset[BKM_TUNE_SPACE_MAX_HW_SUBSET]; /**< --hw-subset; "none" = unset */
    int n_hw_subset;
    const char *params[BKM_TUNE_SPACE_MAX_PARAMS]; /**< --param "key=v1,v2" (any workload parameter) */
    int n_params;
    int ranks[BKM_TUNE_SPACE_MAX_THREADS];         /**< --ranks (MPI training workload only): ranks
                                                        per trial; default {1} */
    int n_ranks;
    int sweep_tunables;                            /**< 1: also sweep the kernel tunables not named in
                                                        params at {def/2, def, 2 def}; 0: keep them at
                                                        their defaults */
    int program;                                   /**< 1: the workload is the user's own program
                                                        (bkm/tuner/program.h): not a registered
                                                        workload, no parameters */
    int gomp;                                      /**< 1: the program loads GNU libgomp: the settings
                                                        are OMP_PLACES x OMP_PROC_BIND (and the user's
                                                        GOMP_CPU_AFFINITY), the wait dimension is
                                                        OMP_WAIT_POLICY (unset, active, passive) instead
                                                        of KMP_BLOCKTIME, no KMP_HW_SUBSET, and
                                                        settings with identical plans by bkm's model of
                                                        libgomp 12 are merged; a variable libgomp
                                                        ignores (KMP_*) is dropped with a note */
    int no_openmp;                                 /**< 1: the program loads no OpenMP runtime: no
                                                        OpenMP variable acts; only --threads (its
                                                        OMP_NUM_THREADS, which it may read itself) */
} bkm_tune_space_opts_t;

/** One configuration of the space (a plain value). */
typedef struct bkm_tune_config {
    int threads;               /**< OpenMP threads (per rank for the MPI training workload) */
    char affinity[192];        /**< label: "default", the KMP_AFFINITY value, or "VAR=v VAR=v" */
    char kmp_affinity[128];    /**< "" = unset */
    char omp_places[64];
    char omp_proc_bind[32];
    char kmp_hw_subset[32];
    char gomp_cpu_affinity[128]; /**< "" = unset (libgomp spaces) */
    char omp_wait_policy[16];  /**< "" = unset, "active", "passive" (libgomp spaces) */
    int blocktime_ms;          /**< BKM_TUNE_BLOCKTIME_UNSET, _INFINITE or ms */
    char backend[16];          /**< "" = workload default */
    int n_params;
    bkm_kv_t params[BKM_TUNE_SPACE_MAX_PARAMS]; /**< parameters not at their default */
    int is_default;            /**< the default setting (the baseline) */
    int coord[BKM_TUNE_MAX_DIMS]; /**< value index along each dimension */
} bkm_tune_config_t;

typedef struct bkm_tune_space bkm_tune_space_t;

/** Build the space for @p prof on @p topo (the node's topology, not necessarily this host):
 *  the product of the dimensions, then every affinity setting (with its KMP_HW_SUBSET) planned
 *  at every thread count with bkm_aff_plan_create: rejected settings are dropped and settings
 *  whose plans are identical are merged into the first one (a note says which, e.g.
 *  "KMP_AFFINITY=scatter = compact at 2 threads on this topology (1 package, 2 cores, 1
 *  thread/core)"); KMP_BLOCKTIME=200 is the runtime default, merged with unset. Parameter
 *  values are checked against the workload (bkm_wl_config_check); bad values from the user are
 *  BKM_EINVAL naming them. The default configuration (threads = cores, nothing set, default
 *  parameters) is always in the space, marked, and is configuration 0.
 *  @return BKM_OK; BKM_EINVAL naming a bad option value (threads beyond the node's PUs, a
 *  malformed affinity setting, an unknown parameter); BKM_ENOMEM. */
int bkm_tune_space_create(bkm_tune_space_t **space, const struct bkm_topo *topo,
                          const struct bkm_node_profile *prof, const bkm_tune_space_opts_t *opts,
                          bkm_err_t *err);
void bkm_tune_space_free(bkm_tune_space_t *space);
size_t bkm_tune_space_size(const bkm_tune_space_t *space);
/** Configuration @p i (valid until free), NULL when out of range. Index 0 is the default. */
const bkm_tune_config_t *bkm_tune_space_config(const bkm_tune_space_t *space, size_t i);
/** Number of dimensions and their sizes (values per dimension). */
int bkm_tune_space_dims(const bkm_tune_space_t *space, int *dim_size);
/** Notes on merged and dropped settings, in order (valid until free). */
size_t bkm_tune_space_n_notes(const bkm_tune_space_t *space);
const char *bkm_tune_space_note(const bkm_tune_space_t *space, size_t i);
/** A cause of dropped or merged settings and how many it accounts for: the summary of the notes. */
typedef struct bkm_tune_space_cause {
    int merged;         /**< 1: merged as identical to another setting, 0: dropped */
    size_t count;       /**< settings (or parameter combinations) dropped or merged for it */
    const char *text;   /**< "32 dropped: KMP_HW_SUBSET=68c,1t with 136/272 threads oversubscribes its 68 PUs" */
} bkm_tune_space_cause_t;
/** Causes of the drops and merges, the most frequent first; their counts add up to those of
 *  bkm_tune_space_counts. Valid until free. */
size_t bkm_tune_space_n_causes(const bkm_tune_space_t *space);
const bkm_tune_space_cause_t *bkm_tune_space_cause(const bkm_tune_space_t *space, size_t i);
/** Counts of configurations merged as identical and dropped as rejected. */
void bkm_tune_space_counts(const bkm_tune_space_t *space, size_t *merged, size_t *dropped);
/** Canonical description of the space (the input of the sweep key). */
int bkm_tune_space_to_json(const bkm_tune_space_t *space, bkm_json_w_t *w);

/** Write @p cfg as a JSON object {"threads":N,"env":{VAR:value,...},"params":{k:v,...}
 *  [,"backend":b][,"default":true]}. */
void bkm_tune_config_to_json(const bkm_tune_config_t *cfg, bkm_json_w_t *w);
/** Canonical config key (bkm_db_config_canonical of the JSON); *key is freed with bkm_free. */
int bkm_tune_config_key(const bkm_tune_config_t *cfg, char **key, bkm_err_t *err);
/** Short human label: "threads=2 KMP_AFFINITY=compact KMP_BLOCKTIME=0 mc=96". */
void bkm_tune_config_label(const bkm_tune_config_t *cfg, char *buf, size_t n);
/** Fill the trial fields of @p spec (threads, env, params, backend) from @p cfg; the protocol
 *  fields are left as they are. */
int bkm_tune_config_to_spec(const bkm_tune_config_t *cfg, const char *workload,
                            bkm_tune_trial_spec_t *spec, bkm_err_t *err);
/** Check, before anything is written, that every configuration of @p sp becomes a valid trial
 *  with the protocol fields of @p base (bkm_tune_config_to_spec + bkm_tune_trial_spec_validate),
 *  unscaled and at the largest scale a strategy asks for (bkm_tune_strategy_spec_scale clamps it).
 *  @return BKM_OK, or BKM_EINVAL naming the configuration and the bad value. */
int bkm_tune_space_specs_check(const bkm_tune_space_t *sp, const char *workload, const bkm_tune_trial_spec_t *base,
                               bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_SPACE_H */
