/* SPDX-License-Identifier: MIT */
/* Private to workloads/: the registry entry of a workload and the workload object. */
#ifndef BKM_WL_INT_H
#define BKM_WL_INT_H

#include "bkm/kernels.h"
#include "bkm/net.h"
#include "bkm/workloads.h"

#define BKM_WL_VAL_MAX BKM_KV_VALUE_MAX

/* The workload object: resolved configuration plus the workload's private state. */
struct bkm_wl {
    const struct bkm_wl_entry *e;
    bkm_wl_param_t params[BKM_WL_MAX_PARAMS];
    char vals[BKM_WL_MAX_PARAMS][BKM_WL_VAL_MAX]; /* effective value of params[i], as text */
    size_t n_params;
    bkm_backend_t be;
    bkm_kern_params_t kp;   /* kernel tunables the user gave (native backend), isa */
    uint64_t seed;
    int n_threads;          /* validate: threads the run will use, 0 = not known */
    long runs;              /* iterations run so far */
    double first_loss;      /* alexnet: loss of the first iteration */
    void *priv;
    char impl[512];
};

/* A registered workload. Hooks get a bkm_wl_t whose params/vals/be/kp/seed are filled. */
typedef struct bkm_wl_entry {
    bkm_wl_info_t info;
    const bkm_wl_param_t *own;   /* workload parameters (backend first) */
    size_t n_own;
    /* kernel tunables (native backend): append to out, return the count */
    size_t (*tunables)(bkm_wl_param_t *out, size_t cap);
    /* semantic checks (shapes, the kernels' rules for the tunables), no allocation */
    int (*validate)(const bkm_wl_t *wl, bkm_err_t *err);
    double (*bytes)(const bkm_wl_t *wl);                   /* upper estimate of the memory it allocates */
    int (*create)(bkm_wl_t *wl, bkm_err_t *err);
    int (*run)(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err);
    int (*check)(bkm_wl_t *wl, double *value, bkm_err_t *err);
    double (*flops)(const bkm_wl_t *wl);
    void (*destroy)(bkm_wl_t *wl);
    /* per-layer table (network workloads; NULL otherwise): write a JSON array, return 1; 0 = none */
    int (*layers_json)(const bkm_wl_t *wl, bkm_json_w_t *w);
    /* network workloads: the table for the resolved parameters (wl_net.c runs it) */
    int (*net_table)(const bkm_wl_t *wl, bkm_net_desc_t *d, bkm_err_t *err);
    /* items per iteration and their unit for a throughput figure (NULL = none): lstm sentences */
    double (*items)(const bkm_wl_t *wl, const char **unit);
} bkm_wl_entry_t;

extern const bkm_wl_entry_t bkm__wl_gemm;
extern const bkm_wl_entry_t bkm__wl_conv2d;
extern const bkm_wl_entry_t bkm__wl_alexnet;
extern const bkm_wl_entry_t bkm__wl_conv3d;
extern const bkm_wl_entry_t bkm__wl_lstm;

/* Network workloads (wl_net.c): the hooks of any workload whose entry has a net_table. Parameters
 * the table may read: "backend", and "layers" (1 = per-layer timing and table). Inputs, labels and
 * parameters are seeded the same way on every engine. */
int bkm__wl_net_validate(const bkm_wl_t *wl, bkm_err_t *err);
double bkm__wl_net_bytes(const bkm_wl_t *wl);
int bkm__wl_net_create(bkm_wl_t *wl, bkm_err_t *err);
int bkm__wl_net_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err);
int bkm__wl_net_check(bkm_wl_t *wl, double *value, bkm_err_t *err);
double bkm__wl_net_flops(const bkm_wl_t *wl);
void bkm__wl_net_destroy(bkm_wl_t *wl);
int bkm__wl_net_layers_json(const bkm_wl_t *wl, bkm_json_w_t *w);
/* Create from the table @p d (checked here) with the workload's own seeding @p seed of the input,
 * labels, parameters (and states, target) and per-layer timing on or off: for network workloads
 * whose parameters differ from the net_table ones (lstm). The other hooks above then apply. */
int bkm__wl_net_create_with(bkm_wl_t *wl, const bkm_net_desc_t *d, int timing,
                            void (*seed)(bkm_net_exec_t *ex, uint64_t seed), bkm_err_t *err);
/* The executor of a created network workload. */
bkm_net_exec_t *bkm__wl_net_exec(const bkm_wl_t *wl);

/* Effective value of parameter @p name (NULL if the workload has none). */
const char *bkm__wl_val(const bkm_wl_t *wl, const char *name);
/* Effective integer value of parameter @p name (0 if absent). */
int64_t bkm__wl_int(const bkm_wl_t *wl, const char *name);
/* Append the kernel tunables @p desc (from bkm_kern_*_params) plus "isa" to @p out. */
size_t bkm__wl_tunables_from(const bkm_param_desc_t *desc, size_t n, bkm_wl_param_t *out, size_t cap);

/* Bytes this process may allocate: @p phys, or the tightest cgroup memory limit (v2 memory.max, v1
 * memory.limit_in_bytes) of the groups listed in @p proc_cgroup (/proc/self/cgroup) and their
 * parents under @p cgroup_root (/sys/fs/cgroup). @p src names where the figure came from. */
double bkm__wl_mem_limit(const char *proc_cgroup, const char *cgroup_root, double phys, char *src, size_t src_n);

/* Deterministic generators shared by every backend (same seed => same values). */
uint64_t bkm__wl_hash(uint64_t seed, uint64_t stream, uint64_t i);
/* Uniform in [-bound, bound). */
void bkm__wl_fill_uniform(float *p, size_t n, float bound, uint64_t seed, uint64_t stream);
/* Standard normal (Box-Muller). */
void bkm__wl_fill_normal(float *p, size_t n, uint64_t seed, uint64_t stream);

#endif /* BKM_WL_INT_H */
