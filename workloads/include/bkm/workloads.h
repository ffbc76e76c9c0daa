/* SPDX-License-Identifier: MIT */
/** @file bkm/workloads.h
 * Named benchmarks built from the kernels: `gemm`, `conv2d`, `alexnet` (training step). A workload
 * is found by name in a static registry; it publishes one parameter list (its own parameters merged
 * with the tunables of the kernels it runs), is created from a configuration (key=value strings)
 * and a seed, runs one TIMED iteration at a time, and reports a check value, its FLOPs per iteration
 * and the implementations it used (provenance).
 *
 * Contract: create allocates and initialises everything (untimed); bkm_wl_run never allocates,
 * never prints and never reads the environment. Same name + configuration + seed => same inputs and
 * initial weights on every backend. Errors follow bkm/common.h: BKM_EINVAL names the unknown
 * workload, the unknown parameter or the bad value; BKM_ENOTSUP when the backend cannot run the
 * problem. A workload object is used by one thread at a time, outside any OpenMP parallel region.
 */
#ifndef BKM_WORKLOADS_H
#define BKM_WORKLOADS_H

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Parameter types. */
typedef enum {
    BKM_WL_INT = 0,  /**< integer in [min, max], a multiple of mult_of */
    BKM_WL_ENUM,     /**< one of the '|'-separated choices */
    BKM_WL_STR       /**< free text checked by the workload (e.g. a conv2d shape) */
} bkm_wl_ptype_t;

/** One parameter as the tuner and `--param` see it. */
typedef struct bkm_wl_param {
    const char *name;     /**< key in --param, SQLite and JSON */
    bkm_wl_ptype_t type;
    char def[40];         /**< default, as text ("128", "all", "alexnet:conv2") */
    int64_t min, max;     /**< BKM_WL_INT bounds */
    int64_t mult_of;      /**< BKM_WL_INT: value must be a multiple of this (1 = any) */
    const char *choices;  /**< BKM_WL_ENUM: "fwd|bwd_d|bwd_w|all"; NULL otherwise */
    const char *help;
    int kernel_tunable;   /**< 1: a kernel tunable (native backend only), 0: a workload parameter */
} bkm_wl_param_t;

/** Static description of a registered workload. */
typedef struct bkm_wl_info {
    const char *name;         /**< "gemm", "conv2d", "alexnet" */
    const char *description;  /**< one paragraph: what it runs, what one iteration is, what is timed */
    const char *check_key;    /**< key of the check value: "checksum" or "loss" */
} bkm_wl_info_t;

/** Number of registered workloads. */
size_t bkm_wl_count(void);
/** Registered workload @p i (static storage), NULL when i >= bkm_wl_count(). */
const bkm_wl_info_t *bkm_wl_info_at(size_t i);
/** Look up @p name; BKM_EINVAL naming it (and listing the known ones) if unknown. */
int bkm_wl_find(const char *name, const bkm_wl_info_t **info, bkm_err_t *err);

/** Maximum number of parameters of one workload (own + kernel tunables). */
#define BKM_WL_MAX_PARAMS 32
/** Parameters of workload @p name, own parameters first, then the kernel tunables; @p out has room
 *  for BKM_WL_MAX_PARAMS. Strings other than def are static. BKM_EINVAL for an unknown workload. */
int bkm_wl_params(const char *name, bkm_wl_param_t *out, size_t *n, bkm_err_t *err);

/** A configuration: key=value strings as given by `--param` (a plain value); bkm_kv_t limits. */
#define BKM_WL_MAX_KV 32
typedef struct bkm_wl_config {
    int n;
    bkm_kv_t kv[BKM_WL_MAX_KV];
    /** Cache sizes in bytes (one instance of each level; 0 = unknown) for the native kernels'
     *  default blocking: the caller fills them from the topology (bkm_topo_cache_sizes). */
    int64_t cache_l1d, cache_l2, cache_l3;
} bkm_wl_config_t;
void bkm_wl_config_init(bkm_wl_config_t *cfg);
/** Add "key=value" (syntax only: checked against a workload at create). BKM_EINVAL naming the text
 *  when it has no '=', an empty key, a key or value too long, a repeated key, or the set is full. */
int bkm_wl_config_add(bkm_wl_config_t *cfg, const char *key_eq_value, bkm_err_t *err);
/** Value given for @p key, or NULL. */
const char *bkm_wl_config_get(const bkm_wl_config_t *cfg, const char *key);
/** Validate @p cfg against workload @p name without creating anything: unknown key, bad integer,
 *  out of bounds, not a multiple, not one of the choices, a kernel tunable with backend=onednn
 *  -> BKM_EINVAL naming key and value. (Shapes are parsed too.) */
int bkm_wl_config_check(const char *name, const bkm_wl_config_t *cfg, bkm_err_t *err);
/** bkm_wl_config_check for a run on @p n_threads OpenMP threads (0 = not known). Both apply the
 *  kernels' own rules for the native tunables (bkm_kern_gemm_params_check: the ISA's micro-tile
 *  multiples, e.g. "isa=avx2: parameter mc=56 is not a multiple of 6"), so that a configuration
 *  accepted here is not refused when the workload is created; with a thread count, also the
 *  rules that depend on it (nt_jc divides the threads). No allocation of buffers, no OpenMP. */
int bkm_wl_config_check_threads(const char *name, const bkm_wl_config_t *cfg, int n_threads, bkm_err_t *err);

/** Result of one timed iteration, milliseconds (monotonic clock). */
typedef struct bkm_wl_sample {
    double ms;          /**< the whole iteration */
    double fwd_ms;      /**< alexnet: forward; kernels: time of direction fwd (0 if not run) */
    double bwd_ms;      /**< alexnet: loss + backward; conv2d: bwd_d + bwd_w */
    double update_ms;   /**< alexnet: SGD update; 0 otherwise */
    double loss;        /**< alexnet: this iteration's loss; 0 otherwise */
} bkm_wl_sample_t;

typedef struct bkm_wl bkm_wl_t;

/** Create workload @p name with @p cfg (NULL = all defaults): validate, allocate, initialise inputs
 *  and weights from @p seed (untimed). */
int bkm_wl_create(bkm_wl_t **wl, const char *name, const bkm_wl_config_t *cfg, uint64_t seed, bkm_err_t *err);
/** TIMED: one iteration (kernels: every selected direction once; alexnet: one training step). */
int bkm_wl_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err);
/** Check value as a JSON object into @p out: {"checksum": y} (kernels: sum of every output of the
 *  last iteration, in the user layout) or {"loss": x} (alexnet: the loss of the FIRST iteration).
 *  Untimed. BKM_EINVAL if no iteration ran yet. */
int bkm_wl_check(bkm_wl_t *wl, bkm_buf_t *out, bkm_err_t *err);
/** The check value as a number (same as bkm_wl_check). */
int bkm_wl_check_value(bkm_wl_t *wl, double *value, bkm_err_t *err);
/** FLOPs of one iteration (docs/workloads.md §2: gemm 2mnk; conv2d per direction times the directions
 *  run; alexnet training 3 x forward minus conv1 bwd-data). */
double bkm_wl_flops(const bkm_wl_t *wl);
/** Implementations used, e.g. "onednn:jit:avx512_core" or "native:im2col_gemm..." (owned). */
const char *bkm_wl_impl(const bkm_wl_t *wl);
/** Per-layer table of a network workload run with layers=1, as a JSON array into @p out: one
 *  object per layer and direction {"layer", "kind", "direction" (fwd|bwd_d|bwd_w|update), "ms" (mean
 *  over the iterations after the first), "gflops" (null for layers without FLOPs), "steps"}.
 *  Returns 1 when written, 0 (nothing written) for other workloads or layers=0. Untimed. */
int bkm_wl_layers_json(const bkm_wl_t *wl, bkm_buf_t *out);
/** Items one iteration processes and their unit ("sentences" for lstm: the batch N), for a
 *  throughput figure items / median time; 0 (and *unit NULL) for workloads that report none. */
double bkm_wl_items_per_iter(const bkm_wl_t *wl, const char **unit);
/** Resolved parameters (every parameter with its effective value) as a JSON object. */
void bkm_wl_params_json(const bkm_wl_t *wl, bkm_buf_t *out);
/** Name of the workload ("alexnet"). */
const char *bkm_wl_name(const bkm_wl_t *wl);
void bkm_wl_destroy(bkm_wl_t *wl);

/* ---------------------------------------------------------------------------------------- */
/* IDX files (MNIST, Fashion-MNIST) and the synchronous-SGD training run `fmnist-sgd`. */

#define BKM_IDX_MAX_DIMS 4
/** An IDX file of unsigned bytes: dims[0] items (images or labels) of dims[1] x ... bytes. */
typedef struct bkm_idx {
    int ndims;
    uint32_t dims[BKM_IDX_MAX_DIMS];
    unsigned char *data;   /**< n bytes, owned (bkm_idx_free) */
    size_t n;
} bkm_idx_t;
/** Read the IDX file @p path (gzip-compressed or plain; a regular file) with @p ndims dimensions of
 *  unsigned bytes; with @p classes > 0 every byte must be below it (labels). BKM_EINVAL naming the
 *  file and the broken rule: bad magic number, a zero dimension, truncated data, trailing data,
 *  a label out of range, damaged gzip data; BKM_ENOMEM. */
int bkm_idx_load(const char *path, int ndims, int64_t classes, bkm_idx_t *out, bkm_err_t *err);
void bkm_idx_free(bkm_idx_t *f);

/** A labelled image set (MNIST layout: train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz],
 *  t10k-... for the test set) read from one folder. */
typedef struct bkm_mnist {
    bkm_idx_t train_x, train_y, test_x, test_y;
    int64_t n_train, n_test, h, w;
} bkm_mnist_t;
/** Read the four files from @p dir (each NAME.gz, else NAME), 10 classes; the image and label
 *  counts of a set must agree and both sets have the same image size. BKM_EINVAL naming the file. */
int bkm_mnist_load(const char *dir, bkm_mnist_t *m, bkm_err_t *err);
void bkm_mnist_free(bkm_mnist_t *m);

/** `fmnist-sgd`: synchronous data-parallel SGD over MPI (docs/workloads.md §7). Parameters (key=value,
 *  the same as `--param`): epochs, batch (global), lr, momentum, model (cnn|mlp), dropout, allreduce (mpi|flat|ring|overlap), bucket_kb, reduce
 *  (mean|sum), data, trace, verbose_ranks, seed, backend (native|onednn), bcast (start|epoch),
 *  micro (micro-batch: exact, P-independent gradient sums), train_limit, test_limit. bkm_train_params lists them with defaults and help. */
typedef struct bkm_train_param {
    const char *name, *def, *help;
} bkm_train_param_t;
const bkm_train_param_t *bkm_train_params(size_t *n);
/** Check @p cfg without running (no MPI): unknown key, bad number, value outside its range -> BKM_EINVAL
 *  naming key and value. */
int bkm_train_config_check(const bkm_wl_config_t *cfg, bkm_err_t *err);
/** A line of text for the user (rank 0's unless verbose_ranks=1, then prefixed "[rank/size]"). */
typedef void (*bkm_train_log_fn)(void *ctx, const char *line);
/** Run the training: MPI initialised here (MPI_THREAD_FUNNELED, checked) when it is not yet, and
 *  finalised on return if it was. Every rank calls it. @p json receives rank 0's result
 *  ({"workload", "ranks", "threads", "params", "epochs": [{epoch, loss, test_accuracy, samples_per_s,
 *  comm_s, compute_s, checksum, and with allreduce=overlap "overlap": {reduced_during_backward_share,
 *  bytes_per_step, buckets, exposed_wait_s, hook_s}}], "step_losses" with trace=1, "step_ms": {median,
 *  max}}); other ranks leave it
 *  empty. *rank (may be NULL) = this process's rank. Errors (same on every rank where the ranks can
 *  agree): BKM_EINVAL bad configuration or data file (named); BKM_EDEP an MPI error; BKM_EVERIFY
 *  parameters that differ between ranks at the end of an epoch. */
int bkm_train_run(const bkm_wl_config_t *cfg, int n_threads, bkm_train_log_fn log, void *log_ctx, bkm_buf_t *json,
                  int *rank, bkm_err_t *err);
/** For programs that make several runs in one process (benchmarks): initialise MPI
 *  (MPI_THREAD_FUNNELED, checked) so that bkm_train_run neither initialises nor finalises it, and
 *  finalise it at the end. *rank and *size (may be NULL) of MPI_COMM_WORLD. BKM_EDEP on an MPI error. */
int bkm_train_mpi_init(int *rank, int *size, bkm_err_t *err);
void bkm_train_mpi_finalize(void);

/** Ring allreduce against MPI_Allreduce on @p n floats, interleaved in the same run: @p reps rounds,
 *  each timing one MPI_Allreduce and one ring allreduce (a barrier before each; the time of an
 *  operation is the slowest rank's). Every rank calls it (MPI initialised); results on every rank. */
typedef struct bkm_allreduce_bench {
    double mpi_ms[3], ring_ms[3];  /**< min, median, max over the rounds */
    double mpi_gbs, ring_gbs;      /**< algorithm bandwidth (bytes / median time), GB/s */
    double ratio;                  /**< ring / MPI_Allreduce bandwidth (medians) */
    int exact;                     /**< 1: the two results were equal (integer-valued data) */
} bkm_allreduce_bench_t;
int bkm_allreduce_bench(size_t n, int reps, bkm_allreduce_bench_t *out, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_WORKLOADS_H */
