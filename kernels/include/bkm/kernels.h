/* SPDX-License-Identifier: MIT */
/** @file bkm/kernels.h
 * fp32 deep-learning kernels, forward and backward: SGEMM (BLIS-style, ISA-dispatched),
 * conv2d, pooling, ReLU, fully connected, dropout, softmax + cross-entropy, SGD. Each has a
 * native implementation and a oneDNN backend, a naive reference implementation, a FLOP count
 * (docs/workloads.md §2) and published tunables with bounds and multiple-of rules.
 *
 * Kernels never bind threads and never allocate inside a timed call: workspace needs are
 * reported up front and allocated by the caller (the workload).
 * Error convention: see bkm/common.h.
 */
#ifndef BKM_KERNELS_H
#define BKM_KERNELS_H

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================== */
/* ISA dispatch                                                                              */
/* ======================================================================================== */
typedef enum {
    BKM_ISA_AUTO = 0,   /**< best the CPU offers */
    BKM_ISA_GENERIC,    /**< portable C */
    BKM_ISA_AVX2,       /**< AVX2 + FMA */
    BKM_ISA_AVX512      /**< AVX-512F */
} bkm_isa_t;

/** Best ISA this CPU supports (CPUID + OS XSAVE state). */
bkm_isa_t bkm_kern_isa_detect(void);
/** "generic", "avx2", "avx512" ("auto" for BKM_ISA_AUTO). */
const char *bkm_kern_isa_name(bkm_isa_t isa);
/** Parse an ISA name; BKM_EINVAL naming it if unknown, BKM_ENOTSUP naming it if this CPU lacks it.
 *  "auto" resolves to bkm_kern_isa_detect(). */
int bkm_kern_isa_parse(const char *name, bkm_isa_t *isa, bkm_err_t *err);

/* ======================================================================================== */
/* Tunable parameters (published by every kernel)                                            */
/* ======================================================================================== */
typedef struct bkm_param_desc {
    const char *name;     /**< key in --param, SQLite and JSON ("mc", "kc", ...) */
    int32_t min, max, def;
    int32_t mult_of;      /**< value must be a multiple of this (1 = any) */
    const char *help;
} bkm_param_desc_t;

/* ======================================================================================== */
/* SGEMM (BLIS-style; conv2d, conv3d, FC and LSTM are built on it)                            */
/* ======================================================================================== */

/** Blocking and threading of one SGEMM call: a plain value. */
typedef struct bkm_gemm_cfg {
    bkm_isa_t isa;     /**< resolved ISA (never AUTO after init) */
    int32_t mr, nr;    /**< register tile fixed by the ISA's micro-kernel (read-only) */
    int32_t mc, kc, nc;/**< cache blocks (tunables: multiples of mr / any / nr); kc = 0: auto */
    int32_t nt;        /**< threads to use (<= omp_get_max_threads()); 1 = no parallel region */
    int32_t nt_jc;     /**< ways the JC loop is split among nt threads (nt_ic = nt / nt_jc); 0 = auto */
    int64_t l2_bytes;  /**< per-core L2 for the blocking the tunables leave open; 0 = BKM_KERN_L2_DEFAULT */
    int64_t l1_bytes;  /**< per-core L1d, likewise; 0 = BKM_KERN_L1D_DEFAULT */
} bkm_gemm_cfg_t;

/** Defaults for @p isa (BKM_ISA_AUTO = detect), nt = omp_get_max_threads(). */
int bkm_kern_gemm_cfg_init(bkm_gemm_cfg_t *cfg, bkm_isa_t isa, bkm_err_t *err);
/** Check bounds and multiple-of rules; err names the parameter and value. */
int bkm_kern_gemm_cfg_check(const bkm_gemm_cfg_t *cfg, bkm_err_t *err);
/** Published tunables of SGEMM (mc, kc, nc, nt_jc) for @p isa; static storage. */
const bkm_param_desc_t *bkm_kern_gemm_params(bkm_isa_t isa, size_t *n_params);
/** The blocking one call of bkm_kern_sgemm with @p cfg uses for an m x n x k problem on cfg->nt
 * threads: what the auto values (kc = 0, nt_jc = 0) resolve to, for provenance. */
typedef struct bkm_gemm_plan {
    const char *path; /**< "packed" (BLIS-style, both operands packed) or "dot" (A * B^T, few rows, AVX-512:
                           both read in place along k); static storage */
    int32_t nt_jc;    /**< ways the columns are split among the threads */
    int32_t mc, kc, nc; /**< blocks in effect (kc: depth of every pass but possibly the last; dot: kc only) */
    int32_t k_passes; /**< passes over C along k */
} bkm_gemm_plan_t;
int bkm_kern_gemm_plan(const bkm_gemm_cfg_t *cfg, char transa, char transb, int64_t m, int64_t n, int64_t k,
                       bkm_gemm_plan_t *plan, bkm_err_t *err);
/** Bytes of packing workspace one call with @p cfg needs (for any m, n, k). */
size_t bkm_kern_gemm_workspace_bytes(const bkm_gemm_cfg_t *cfg);
/** Zero the workspace @p ws (bkm_kern_gemm_workspace_bytes(cfg) bytes) from a team of cfg->nt
 *  threads split as bkm_kern_sgemm splits it: each thread first touches the packing buffers it
 *  will use (first-touch page placement). Call outside a parallel region. */
void bkm_kern_gemm_workspace_touch(const bkm_gemm_cfg_t *cfg, void *ws);

/** C = alpha * op(A) * op(B) + beta * C, row-major, op = transpose when trans is 'T'/'t'.
 *  @p ws: at least bkm_kern_gemm_workspace_bytes(cfg) bytes, 64-byte aligned.
 *  If called from inside a parallel region, use cfg->nt = 1. No allocation. */
int bkm_kern_sgemm(const bkm_gemm_cfg_t *cfg, char transa, char transb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc, void *ws, bkm_err_t *err);
/** Naive reference SGEMM (same semantics, double accumulation), the correctness oracle. */
void bkm_kern_sgemm_ref(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc);
/** FLOPs of one call: 2*m*n*k. */
double bkm_kern_gemm_flops(int64_t m, int64_t n, int64_t k);
/** Set one tunable by name ("mc", "kc", "nc", "nt_jc"), checking its bounds and multiple-of rule
 *  (e.g. "mc=100 is not a multiple of mr=14"); BKM_EINVAL naming an unknown name or bad value.
 *  Cross-parameter rules (nt_jc divides nt) are checked by bkm_kern_gemm_cfg_check. */
int bkm_kern_gemm_cfg_set(bkm_gemm_cfg_t *cfg, const char *name, int32_t value, bkm_err_t *err);
/** Name of the micro-kernel @p cfg selects ("avx512_14x32", "avx2_6x16", "generic_4x8"); static. */
const char *bkm_kern_gemm_ukr_name(const bkm_gemm_cfg_t *cfg);
/* Notes for callers of bkm_kern_sgemm:
 *  - alpha == 0 or k == 0 only scales C by beta; beta == 0 never reads C (it may hold NaN).
 *  - Thread-safe for concurrent calls with separate workspaces. With cfg->nt == 1 no parallel
 *    region is opened, so it may be called from inside one (one workspace per calling thread).
 *  - With cfg->nt > 1 the team the runtime grants may be smaller (nested region): the work is
 *    split over the threads actually granted.
 *  - BKM_EINVAL naming the value for a bad trans character, negative size, too-small leading
 *    dimension, NULL or unaligned workspace, or a cfg that fails bkm_kern_gemm_cfg_check. */

/** Measured FP32 peak in GFLOP/s of @p nthreads threads running independent FMA chains of
 *  @p isa (BKM_ISA_AUTO = best): the ceiling for "% of peak". Opens a parallel region of
 *  @p nthreads threads and runs ~0.5 s. Returns 0 if @p isa is not supported by this CPU or
 *  nthreads < 1. */
double bkm_kern_peak_gflops(bkm_isa_t isa, int nthreads);


/* ======================================================================================== */
/* Benchmark operations: one kernel, one problem, one backend (every backend implements the    */
/* same contract).                                                                            */
/* ======================================================================================== */

/** Backends: this suite's kernels, oneDNN, and the naive reference (the test oracle, which runs
 *  networks and LSTM stacks, bkm/net.h, but has no benchmark ops). The network engines of
 *  bkm/net.h are these backends. */
typedef enum { BKM_BACKEND_NATIVE = 0, BKM_BACKEND_ONEDNN = 1, BKM_BACKEND_REF = 2 } bkm_backend_t;
/** "native", "onednn", "ref" ("unknown" for any other value). */
const char *bkm_kern_backend_name(bkm_backend_t be);
/** Parse the name of a backend with benchmark ops: "native", "onednn" (or "dnnl"); BKM_EINVAL
 *  naming any other name. */
int bkm_kern_backend_parse(const char *name, bkm_backend_t *be, bkm_err_t *err);

typedef enum { BKM_DIR_FWD = 1, BKM_DIR_BWD_D = 2, BKM_DIR_BWD_W = 4, BKM_DIR_ALL = 7 } bkm_dir_t;

/** conv2d problem, benchdnn conventions (dilation not supported: must be absent). */
typedef struct bkm_conv2d_desc {
    int64_t mb, g, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw;
    int has_bias;
    char name[64];       /**< e.g. "alexnet:conv2", or "" */
} bkm_conv2d_desc_t;
/** Parse a benchdnn-style descriptor ("mb32ic192ih13oc384oh13kh3ph1", `_` separators allowed,
 *  missing w copies h, outputs/padding deduced) or a named layer "alexnet:conv1".."alexnet:conv5"
 *  (torchvision AlexNet, docs/workloads.md §3) with batch @p mb_override (0 = keep). Checks: positive
 *  output size, groups divide channels, declared oh/ow consistent. err names the bad value. */
int bkm_kern_conv2d_desc_parse(const char *text, int64_t mb_override, bkm_conv2d_desc_t *d, bkm_err_t *err);
/** Canonical descriptor string ("mb32_g1ic192oc384_ih13oh13kh3sh1ph1_iw13ow13kw3sw1pw1"). */
void bkm_kern_conv2d_desc_format(const bkm_conv2d_desc_t *d, bkm_buf_t *out);
/** FLOPs of one direction (docs/workloads.md §2: 2*N*K*(C/G)*R*S*P*Q, same for each direction). */
double bkm_kern_conv2d_flops(const bkm_conv2d_desc_t *d);

/** A prepared benchmark operation. Buffers are owned by the op, in the user layout (NCHW / OIHW
 *  for conv2d, row-major for GEMM); oneDNN may keep internal copies in blocked layouts. */
typedef struct bkm_kern_op bkm_kern_op_t;

typedef enum {
    BKM_ARG_SRC, BKM_ARG_WEI, BKM_ARG_BIAS, BKM_ARG_DST,
    BKM_ARG_DIFF_SRC, BKM_ARG_DIFF_WEI, BKM_ARG_DIFF_BIAS, BKM_ARG_DIFF_DST, BKM_ARG_COUNT
} bkm_arg_t;

/** Per-core cache sizes in bytes (0 = unknown: the kernels use the BKM_KERN_*_DEFAULT values).
 *  Kernels never discover the topology: the workload / CLI layer fills this from it (hwloc). */
typedef struct bkm_kern_cache {
    int64_t l1d, l2, l3;
} bkm_kern_cache_t;
#define BKM_KERN_L1D_DEFAULT (32 * 1024)
#define BKM_KERN_L2_DEFAULT (1024 * 1024)

/** Key=value tunables of an op (as given by --param), validated against its descriptors. */
typedef struct bkm_kern_params {
    int n;
    struct { char key[BKM_KV_KEY_MAX]; int32_t value; } kv[32]; /**< keys as bkm_kv_t's */
    bkm_isa_t isa;       /**< BKM_ISA_AUTO unless --param isa=... */
    bkm_kern_cache_t cache; /**< cache sizes for default blocking (zeros after init: unknown) */
} bkm_kern_params_t;
/** Empty parameter set (isa = AUTO). */
void bkm_kern_params_init(bkm_kern_params_t *p);
/** Add one "key=value" (as given by --param; "isa=avx2" sets p->isa). BKM_EINVAL naming the text
 *  when it is not key=integer, the key repeats or the set is full; BKM_ENOTSUP naming an ISA this
 *  CPU lacks. Values are checked against a kernel's descriptors only when an op is created. */
int bkm_kern_params_add(bkm_kern_params_t *p, const char *key_eq_value, bkm_err_t *err);
/** Resolve @p p against the published descriptors @p desc: vals[i] = value given for desc[i] or its
 *  default. BKM_EINVAL naming key and value for an unknown key, a value out of [min, max] or not a
 *  multiple of mult_of. */
int bkm_kern_params_resolve(const bkm_kern_params_t *p, const bkm_param_desc_t *desc, size_t n_desc,
                            int32_t *vals, bkm_err_t *err);

/** Check the GEMM tunables @p params (NULL = defaults) as bkm_kern_gemm_op_create and the layers
 *  built on SGEMM apply them, for a call on @p nt threads (0 = not known: nt_jc is then held to
 *  its bounds only), without allocating or calling OpenMP: the ISA is available, every value is
 *  within the bounds and multiple-of rules of that ISA's micro-kernel (mc of mr, nc of nr), nt_jc
 *  divides nt. BKM_EINVAL naming the ISA, key and value ("isa=avx2: parameter mc=56 is not a
 *  multiple of 6"); BKM_ENOTSUP naming an ISA this CPU lacks. */
int bkm_kern_gemm_params_check(const bkm_kern_params_t *params, int nt, bkm_err_t *err);
/** The same for the native conv2d tunables (bkm_kern_conv2d_params) of a batch of @p mb images:
 *  what bkm_kern_conv2d_create would refuse, short of allocation. */
int bkm_kern_conv2d_params_check(const bkm_kern_params_t *params, int64_t mb, int nt, bkm_err_t *err);

/** Create a conv2d op for the directions in @p dirs. Allocates every buffer (untimed).
 *  BKM_ENOTSUP if the backend cannot do it; BKM_EINVAL naming a bad tunable, or a backend without
 *  benchmark ops (BKM_BACKEND_REF) or unknown. */
int bkm_kern_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs, bkm_backend_t be,
                              const bkm_kern_params_t *params, bkm_err_t *err);
/** Create a GEMM op (C = A * B, row-major, m x k times k x n); errors as for conv2d. */
int bkm_kern_gemm_op_create(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k, bkm_backend_t be,
                            const bkm_kern_params_t *params, bkm_err_t *err);
/** User-layout buffer of an argument (NULL if the op has none); element count in *n. */
float *bkm_kern_op_buffer(bkm_kern_op_t *op, bkm_arg_t arg, size_t *n);
/** Untimed: copy/reorder the user-layout inputs into the backend's internal layout. */
int bkm_kern_op_prepare(bkm_kern_op_t *op, bkm_err_t *err);
/** TIMED: run direction @p dir once. No allocation, no reorder of inputs. */
int bkm_kern_op_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err);
/** Untimed: bring outputs back to the user layout for checking. */
int bkm_kern_op_finish(bkm_kern_op_t *op, bkm_err_t *err);
/** FLOPs of one exec of @p dir. */
double bkm_kern_op_flops(const bkm_kern_op_t *op, bkm_dir_t dir);
/** Which implementation runs ("native:im2col_gemm.avx512_32x12", "onednn:jit:avx512_core"). */
const char *bkm_kern_op_impl(const bkm_kern_op_t *op, bkm_dir_t dir);
/** Published tunables of the op (names, bounds, defaults, multiple-of); static storage. */
const bkm_param_desc_t *bkm_kern_op_params(const bkm_kern_op_t *op, size_t *n_params);
void bkm_kern_op_destroy(bkm_kern_op_t *op);

/** Native conv2d (im2col / 1x1 + SGEMM, OpenMP over the batch or inside the GEMM). The object owns
 *  its workspace (column buffers, GEMM packing buffers, per-thread partial weight gradients), sized
 *  at creation for the number of threads omp_get_max_threads() returns then: fwd/bwd never
 *  allocate. Not re-entrant: one call at a time per object; call from outside a parallel region.
 *  Tunables (bkm_kern_conv2d_params): algo (0 auto: 3 when the batch is >= the thread count, else
 *  2; 1 batch-parallel images with 1-thread GEMMs; 2 images in turn with one parallel GEMM; 3 the
 *  whole batch as one GEMM, weights packed once, im2col straight into micro-panels), ptile (output pixels per column tile, 0 = whole image),
 *  mc, kc, nc (GEMM cache blocks, 0 = the ISA's default), nt_jc (algo 2 GEMM split, 0 = auto). */
typedef struct bkm_kern_conv2d bkm_kern_conv2d_t;
/** Create for problem @p d. BKM_EINVAL naming a bad tunable, BKM_ENOTSUP naming an ISA the CPU
 *  lacks, BKM_ENOMEM. */
int bkm_kern_conv2d_create(bkm_kern_conv2d_t **cv, const bkm_conv2d_desc_t *d, const bkm_kern_params_t *params,
                           bkm_err_t *err);
/** dst = conv(src, wei) + bias (bias ignored when d->has_bias is 0 or bias is NULL). */
int bkm_kern_conv2d_fwd(bkm_kern_conv2d_t *cv, const float *src, const float *wei, const float *bias, float *dst,
                        bkm_err_t *err);
/** diff_src = conv^T(diff_dst, wei) (overwritten). */
int bkm_kern_conv2d_bwd_data(bkm_kern_conv2d_t *cv, const float *diff_dst, const float *wei, float *diff_src,
                             bkm_err_t *err);
/** diff_wei (and diff_bias when non-NULL and has_bias) overwritten with the batch sum; the reduction
 *  order is fixed for a given thread count (bitwise reproducible run to run). */
int bkm_kern_conv2d_bwd_weights(bkm_kern_conv2d_t *cv, const float *src, const float *diff_dst, float *diff_wei,
                                float *diff_bias, bkm_err_t *err);
/** "native:im2col_gemm.batch.avx512_14x32" etc.; owned by the object. */
const char *bkm_kern_conv2d_impl(const bkm_kern_conv2d_t *cv);
/** Published tunables of native conv2d; static storage. */
const bkm_param_desc_t *bkm_kern_conv2d_params(size_t *n_params);
void bkm_kern_conv2d_destroy(bkm_kern_conv2d_t *cv);

/** Naive reference conv2d (double accumulation), the oracle for every direction. */
void bkm_kern_conv2d_ref_fwd(const bkm_conv2d_desc_t *d, const float *src, const float *wei, const float *bias, float *dst);
void bkm_kern_conv2d_ref_bwd_data(const bkm_conv2d_desc_t *d, const float *diff_dst, const float *wei, float *diff_src);
void bkm_kern_conv2d_ref_bwd_weights(const bkm_conv2d_desc_t *d, const float *src, const float *diff_dst,
                                     float *diff_wei, float *diff_bias);

/* ======================================================================================== */
/* Layers: the CNN building blocks besides conv2d,                                            */
/* native + naive reference each, forward and backward. Activations are NCHW (pooling) or     */
/* [mb][features] row-major (FC, softmax). Native versions use OpenMP where it pays and must  */
/* be called from outside a parallel region; none allocates.                                  */
/* ======================================================================================== */

/** Max pooling, no padding beyond ph/pw (padded taps never win). */
typedef struct bkm_pool_desc {
    int64_t mb, c, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw;
} bkm_pool_desc_t;
/** Fill @p d for a k x k window with stride s and padding p (AlexNet: 3, 2, 0); BKM_EINVAL naming
 *  the value for non-positive sizes or an empty output. */
int bkm_kern_pool_desc_init(bkm_pool_desc_t *d, int64_t mb, int64_t c, int64_t ih, int64_t iw, int64_t k, int64_t s,
                            int64_t p, bkm_err_t *err);
/** dst = max over each window; argmax[i] = index (y * iw + x) inside the image plane of the first
 *  maximum (row-major scan), kept for backward. Parallel over (n, c). */
void bkm_kern_maxpool_fwd(const bkm_pool_desc_t *d, const float *src, float *dst, int32_t *argmax);
/** diff_src = scatter of diff_dst to argmax (overwritten; overlapping windows accumulate). */
void bkm_kern_maxpool_bwd(const bkm_pool_desc_t *d, const float *diff_dst, const int32_t *argmax, float *diff_src);
void bkm_kern_maxpool_ref_fwd(const bkm_pool_desc_t *d, const float *src, float *dst);
/** Reference backward from the forward input (recomputes the first maximum of each window). */
void bkm_kern_maxpool_ref_bwd(const bkm_pool_desc_t *d, const float *src, const float *diff_dst, float *diff_src);

/** ReLU: dst = max(src, 0); dst may equal src (in place). */
void bkm_kern_relu_fwd(size_t n, const float *src, float *dst);
/** diff_src = diff_dst where dst > 0, else 0 (dst = the forward output); diff_src may equal
 *  diff_dst. */
void bkm_kern_relu_bwd(size_t n, const float *dst, const float *diff_dst, float *diff_src);
void bkm_kern_relu_ref_fwd(size_t n, const float *src, float *dst);
void bkm_kern_relu_ref_bwd(size_t n, const float *dst, const float *diff_dst, float *diff_src);

/** Fully connected: dst[mb][out] = src[mb][in] * wei[out][in]^T + bias[out] (PyTorch Linear). */
typedef struct bkm_fc_desc {
    int64_t mb, in, out;
    int has_bias;
} bkm_fc_desc_t;
/** FLOPs of one direction: 2 * mb * in * out. */
double bkm_kern_fc_flops(const bkm_fc_desc_t *d);
/** Native FC over bkm_kern_sgemm; owns the GEMM workspace. Tunables: mc, kc, nc, nt_jc of the GEMM
 *  (bkm_kern_gemm_params). Not re-entrant. */
typedef struct bkm_kern_fc bkm_kern_fc_t;
int bkm_kern_fc_create(bkm_kern_fc_t **fc, const bkm_fc_desc_t *d, const bkm_kern_params_t *params, bkm_err_t *err);
int bkm_kern_fc_fwd(bkm_kern_fc_t *fc, const float *src, const float *wei, const float *bias, float *dst,
                    bkm_err_t *err);
/** diff_src[mb][in] = diff_dst * wei. */
int bkm_kern_fc_bwd_data(bkm_kern_fc_t *fc, const float *diff_dst, const float *wei, float *diff_src, bkm_err_t *err);
/** diff_wei[out][in] = diff_dst^T * src; diff_bias[out] = column sums of diff_dst (overwritten). */
int bkm_kern_fc_bwd_weights(bkm_kern_fc_t *fc, const float *src, const float *diff_dst, float *diff_wei,
                            float *diff_bias, bkm_err_t *err);
void bkm_kern_fc_destroy(bkm_kern_fc_t *fc);
void bkm_kern_fc_ref_fwd(const bkm_fc_desc_t *d, const float *src, const float *wei, const float *bias, float *dst);
void bkm_kern_fc_ref_bwd_data(const bkm_fc_desc_t *d, const float *diff_dst, const float *wei, float *diff_src);
void bkm_kern_fc_ref_bwd_weights(const bkm_fc_desc_t *d, const float *src, const float *diff_dst, float *diff_wei,
                                 float *diff_bias);

/** Inverted dropout, training mode: element i is kept with probability 1 - p (scaled by 1/(1-p)),
 *  decided by a counter-based hash of (seed, i) only, so results do not depend on the thread
 *  count. mask[i] = 1 when kept. p = 0 copies (AlexNet eval mode: call with p = 0 or skip).
 *  BKM_EINVAL naming p when p is outside [0, 1). */
int bkm_kern_dropout_fwd(size_t n, float p, uint64_t seed, const float *src, float *dst, uint8_t *mask,
                         bkm_err_t *err);
int bkm_kern_dropout_bwd(size_t n, float p, const uint8_t *mask, const float *diff_dst, float *diff_src,
                         bkm_err_t *err);
/** The keep decision for element @p i (the RNG both versions share): 1 = keep. */
int bkm_kern_dropout_keep(uint64_t seed, uint64_t i, float p);
void bkm_kern_dropout_ref_fwd(size_t n, float p, uint64_t seed, const float *src, float *dst);

/** Softmax + cross-entropy over logits[mb][nc] with labels[mb] in [0, nc): prob = softmax(logits)
 *  (written when prob is non-NULL), *loss = mean over the batch of -log prob[label].
 *  BKM_EINVAL naming the first label out of range. */
int bkm_kern_softmax_xent_fwd(int64_t mb, int64_t nc, const float *logits, const int32_t *labels, float *prob,
                              double *loss, bkm_err_t *err);
/** diff_logits = (prob - onehot(label)) / mb. */
int bkm_kern_softmax_xent_bwd(int64_t mb, int64_t nc, const float *prob, const int32_t *labels, float *diff_logits,
                              bkm_err_t *err);
int bkm_kern_softmax_xent_ref_fwd(int64_t mb, int64_t nc, const float *logits, const int32_t *labels, float *prob,
                                  double *loss, bkm_err_t *err);

/** SGD with momentum and weight decay, PyTorch semantics (dampening 0, no Nesterov):
 *  g' = g + wd * w; v = mu * v + g'; w -= lr * v. With mu = 0, v is not touched (may be NULL).
 *  v must start at zero (PyTorch's first step v = g' is the same). */
void bkm_kern_sgd_step(size_t n, float *w, const float *g, float *v, float lr, float mu, float wd);
void bkm_kern_sgd_ref_step(size_t n, float *w, const float *g, float *v, float lr, float mu, float wd);
/** FLOPs of one step: 2 per parameter, +2 with momentum, +2 with weight decay. */
double bkm_kern_sgd_flops(size_t n, float mu, float wd);

/* ======================================================================================== */
/* conv3d and 3-D max pooling: NCDHW fp32, weights OIDHW, vol2col + SGEMM.                    */
/* ======================================================================================== */

/** conv3d problem, benchdnn conventions (no groups, no dilation). */
typedef struct bkm_conv3d_desc {
    int64_t mb, ic, id, ih, iw, oc, od, oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw;
    int has_bias;
    char name[64];
} bkm_conv3d_desc_t;
/** Parse a benchdnn 3-D descriptor ("mb4ic64id35ih35iw20oc64kd3", `_` allowed; id is required;
 *  missing ih copies id, iw copies ih, likewise for k, s (default 1) and p (default 0); outputs
 *  deduced, declared ones checked), batch @p mb_override (0 = keep). BKM_EINVAL naming the value:
 *  unknown key, g other than 1, dilation, non-positive size, empty output, inconsistent output. */
int bkm_kern_conv3d_desc_parse(const char *text, int64_t mb_override, bkm_conv3d_desc_t *d, bkm_err_t *err);
/** Check a filled descriptor (outputs 0 = deduce them); same errors as parse. */
int bkm_kern_conv3d_desc_check(bkm_conv3d_desc_t *d, bkm_err_t *err);
/** Canonical descriptor string ("mb4ic1oc64_id35od33kd3sd1pd0_ih35oh33kh3sh1ph0_iw20ow18kw3sw1pw0"). */
void bkm_kern_conv3d_desc_format(const bkm_conv3d_desc_t *d, bkm_buf_t *out);
/** FLOPs of one direction: 2*N*K*C*T*R*S*O*P*Q (docs/workloads.md §2). */
double bkm_kern_conv3d_flops(const bkm_conv3d_desc_t *d);

/** vol2col of one image: col[(c,z,y,x)][(o,p,q)] = src[c][o*sd-pd+z][p*sh-ph+y][q*sw-pw+x] (0 in
 *  the padding), a (ic*kd*kh*kw) x (od*oh*ow) row-major matrix. With @p nt > 1 the flat index
 *  range is split evenly over nt threads, each decoding its start once and walking with carries;
 *  nt = 1 runs serially without a parallel region. */
void bkm_kern_vol2col(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt);
/** col2vol of one image as a gather: src[c][z][y][x] = sum of the col entries that vol2col took
 *  from it (overwritten). Every output element has exactly one writer (no atomics); the flat range
 *  of src is split over @p nt threads as in vol2col. */
void bkm_kern_col2vol(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt);
/** The same two over @p nt threads with a dynamic schedule: chunks of @p chunk entries (rounded up to
 *  whole 64-byte lines; 0 = 32 chunks per thread; each decodes its start once and walks with carries)
 *  taken in turn, so a thread preempted on a shared host leaves its remaining chunks to the others.
 *  Same results. */
void bkm_kern_vol2col_dyn(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int64_t chunk);
void bkm_kern_col2vol_dyn(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int64_t chunk);

/** Native conv3d: per image, vol2col (parallel) + one parallel SGEMM. Owns its column buffer and
 *  GEMM workspace (sized at creation for omp_get_max_threads()); never allocates in fwd/bwd. Not
 *  re-entrant; call from outside a parallel region. Tunables (bkm_kern_conv3d_params): algo (1
 *  batch-level vol2col + GEMM, 2 intra-sample, 3 depth unfold + native conv2d, 0 auto = 1 for short
 *  columns, ic*kd*kh*kw <= 64, else 3), v2c (1 parallel flat-range vol2col/col2vol, 2 the same in
 *  dynamic chunks, 0 serial), mc, kc, nc (GEMM blocks, 0 = ISA default), bww
 *  (backward-weights of algo 3: 1 the unfolded conv2d, 2 as algo 1, 0 auto = 2 for short columns,
 *  ic*kd*kh*kw <= 64). */
typedef struct bkm_kern_conv3d bkm_kern_conv3d_t;
int bkm_kern_conv3d_create(bkm_kern_conv3d_t **cv, const bkm_conv3d_desc_t *d, const bkm_kern_params_t *params,
                           bkm_err_t *err);
int bkm_kern_conv3d_fwd(bkm_kern_conv3d_t *cv, const float *src, const float *wei, const float *bias, float *dst,
                        bkm_err_t *err);
int bkm_kern_conv3d_bwd_data(bkm_kern_conv3d_t *cv, const float *diff_dst, const float *wei, float *diff_src,
                             bkm_err_t *err);
/** diff_wei (and diff_bias when non-NULL) overwritten with the batch sum. */
int bkm_kern_conv3d_bwd_weights(bkm_kern_conv3d_t *cv, const float *src, const float *diff_dst, float *diff_wei,
                                float *diff_bias, bkm_err_t *err);
/** Promise (on != 0) that between a fwd and the bwd_weights / bwd_data that follow it the caller
 *  changes neither the src nor the diff_dst they are given (as a training step does): algo 3 then
 *  reuses the forward's depth unfold in bwd_weights and one plane swap of diff_dst for both
 *  backward directions when the pointers are the same. Off by default. */
void bkm_kern_conv3d_set_reuse(bkm_kern_conv3d_t *cv, int on);
const char *bkm_kern_conv3d_impl(const bkm_kern_conv3d_t *cv);
const bkm_param_desc_t *bkm_kern_conv3d_params(size_t *n_params);
void bkm_kern_conv3d_destroy(bkm_kern_conv3d_t *cv);
void bkm_kern_conv3d_ref_fwd(const bkm_conv3d_desc_t *d, const float *src, const float *wei, const float *bias,
                             float *dst);
void bkm_kern_conv3d_ref_bwd_data(const bkm_conv3d_desc_t *d, const float *diff_dst, const float *wei,
                                  float *diff_src);
void bkm_kern_conv3d_ref_bwd_weights(const bkm_conv3d_desc_t *d, const float *src, const float *diff_dst,
                                     float *diff_wei, float *diff_bias);

/** 3-D max pooling (cubic window k, stride s, padding p < k; padded taps never win). */
typedef struct bkm_pool3d_desc {
    int64_t mb, c, id, ih, iw, od, oh, ow, k, s, p;
} bkm_pool3d_desc_t;
int bkm_kern_pool3d_desc_init(bkm_pool3d_desc_t *d, int64_t mb, int64_t c, int64_t id, int64_t ih, int64_t iw,
                              int64_t k, int64_t s, int64_t p, bkm_err_t *err);
/** argmax[i] = index (z*ih + y)*iw + x inside the volume of the first maximum. Parallel over (n, c). */
void bkm_kern_maxpool3d_fwd(const bkm_pool3d_desc_t *d, const float *src, float *dst, int32_t *argmax);
/** diff_src overwritten: diff_dst scattered to argmax (each (n, c) volume by one thread). */
void bkm_kern_maxpool3d_bwd(const bkm_pool3d_desc_t *d, const float *diff_dst, const int32_t *argmax,
                            float *diff_src);
void bkm_kern_maxpool3d_ref_fwd(const bkm_pool3d_desc_t *d, const float *src, float *dst);
void bkm_kern_maxpool3d_ref_bwd(const bkm_pool3d_desc_t *d, const float *src, const float *diff_dst,
                                float *diff_src);

/* ======================================================================================== */
/* LSTM: unidirectional, L layers, fp32, gate order i, f, g (c~), o — the                      */
/* order of oneDNN's vanilla LSTM and PyTorch's nn.LSTM.                                        */
/* Layouts: x [T][N][I], y [T][N][H], states h0/c0/hT/cT [L][N][H]; parameters one flat array, */
/* per layer l in turn: Wx_l [I_l][4][H], Wh_l [H][4][H], b_l [4][H] (I_0 = I, I_l = H for    */
/* l > 0; oneDNN's ldigo / ldgo). Gradients use the same layouts.                              */
/* ======================================================================================== */

typedef struct bkm_lstm_desc {
    int64_t n, t, i, h, layers;   /**< batch N, time steps T, input I, hidden H, layers L */
} bkm_lstm_desc_t;
/** Fill and check @p d: every size >= 1 and the element counts within int64 / size_t; BKM_EINVAL
 *  naming the value ("H=0"). */
int bkm_kern_lstm_desc_init(bkm_lstm_desc_t *d, int64_t n, int64_t t, int64_t i, int64_t h, int64_t layers,
                            bkm_err_t *err);
/** Parameters (floats) of the whole stack: sum over layers of 4H(I_l + H) + 4H. */
size_t bkm_kern_lstm_param_count(const bkm_lstm_desc_t *d);
/** Offsets (floats) of layer @p l's Wx, Wh and b inside the flat parameter array. */
void bkm_kern_lstm_param_offsets(const bkm_lstm_desc_t *d, int64_t l, size_t *off_wx, size_t *off_wh,
                                 size_t *off_b);
/** FLOPs (docs/workloads.md §2): forward sum over layers of T * 2 * N * 4H * (I_l + H); training
 *  (@p training != 0: forward + backward) is 3x that. */
double bkm_kern_lstm_flops(const bkm_lstm_desc_t *d, int training);

/** Native LSTM: per layer one SGEMM for the input projection of all T steps, one recurrent SGEMM per
 *  step, and one fused parallel pass per step for the gate element-wise work (bias, 3 sigmoid,
 *  2 tanh, the cell and hidden products), split in chunks of `grain` elements of N*H (a single
 *  chunk runs without a parallel region). Backward through time: one fused element-wise pass and
 *  one recurrent SGEMM per step, then one SGEMM each for the data gradient, dWx and dWh of all
 *  steps. The object owns every buffer (gates, cell states, hidden states of each layer, gradient
 *  scratch, GEMM workspace), sized at creation: fwd/bwd never allocate. Not re-entrant; call from
 *  outside a parallel region. Tunables (bkm_kern_lstm_params): grain, mc, kc, nc. */
typedef struct bkm_kern_lstm bkm_kern_lstm_t;
int bkm_kern_lstm_create(bkm_kern_lstm_t **ls, const bkm_lstm_desc_t *d, const bkm_kern_params_t *params,
                         bkm_err_t *err);
/** Forward (training: keeps what backward needs). h0/c0 NULL = zero states; hT/cT NULL = not written. */
int bkm_kern_lstm_fwd(bkm_kern_lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w,
                      float *y, float *hT, float *cT, bkm_err_t *err);
/** Backward through time of the last bkm_kern_lstm_fwd (same x and w): dy [T][N][H] the gradient of
 *  y; dhT/dcT (NULL = zero) of hT/cT. Overwrites dw (whole flat array), and dx, dh0, dc0 when
 *  non-NULL. */
int bkm_kern_lstm_bwd(bkm_kern_lstm_t *ls, const float *x, const float *w, const float *dy, const float *dhT,
                      const float *dcT, float *dx, float *dh0, float *dc0, float *dw, bkm_err_t *err);
/** "native:lstm.fused_gates.grain4096.avx512_14x32"; owned by the object. */
const char *bkm_kern_lstm_impl(const bkm_kern_lstm_t *ls);
const bkm_param_desc_t *bkm_kern_lstm_params(size_t *n_params);
void bkm_kern_lstm_destroy(bkm_kern_lstm_t *ls);

/** oneDNN LSTM: one vanilla LSTM primitive per layer (oneDNN's gate order i, f, c~, o is the native
 *  one), same layouts and semantics as the native object. @p training: forward_training + backward
 *  primitives (workspace kept between fwd and bwd), else forward_inference only (bwd: BKM_EINVAL).
 *  Everything (primitives, reorders, memories, scratchpads) is created here; fwd/bwd reorder the
 *  weights into the primitives' layouts, execute, and copy the state tensors. Not re-entrant. */
typedef struct bkm_kern_lstm_onednn bkm_kern_lstm_onednn_t;
int bkm_kern_lstm_onednn_create(bkm_kern_lstm_onednn_t **ls, const bkm_lstm_desc_t *d, int training, bkm_err_t *err);
int bkm_kern_lstm_onednn_fwd(bkm_kern_lstm_onednn_t *ls, const float *x, const float *h0, const float *c0,
                             const float *w, float *y, float *hT, float *cT, bkm_err_t *err);
int bkm_kern_lstm_onednn_bwd(bkm_kern_lstm_onednn_t *ls, const float *x, const float *w, const float *dy,
                             const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0, float *dw,
                             bkm_err_t *err);
/** "onednn:<fwd impl> / bwd onednn:<bwd impl>"; owned by the object. */
const char *bkm_kern_lstm_onednn_impl(const bkm_kern_lstm_onednn_t *ls);
void bkm_kern_lstm_onednn_destroy(bkm_kern_lstm_onednn_t *ls);

/** Naive references (every step and gate in double; weight gradients summed in float), the oracle. They
 *  allocate their own scratch: BKM_ENOMEM. The backward recomputes the forward from x, h0, c0, w. */
int bkm_kern_lstm_ref_fwd(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                          float *y, float *hT, float *cT, bkm_err_t *err);
int bkm_kern_lstm_ref_bwd(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                          const float *dy, const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0,
                          float *dw, bkm_err_t *err);

/* Networks (tables of these layers) and their executors: bkm/net.h. */

#ifdef __cplusplus
}
#endif
#endif /* BKM_KERNELS_H */
