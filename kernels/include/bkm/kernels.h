/* SPDX-License-Identifier: MIT */
/** @file bkm/kernels.h
 * fp32 deep-learning kernels, forward and backward: SGEMM (BLIS-style, ISA-dispatched),
 * conv2d, pooling, ReLU, fully connected, dropout, softmax + cross-entropy, SGD. Each has a
 * native implementation and a oneDNN backend, a naive reference implementation, a FLOP count
 * (reference/workloads.md §2) and published tunables with bounds and multiple-of rules.
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
/* SGEMM (section owned by the GEMM work; signatures below are the contract for conv2d/FC)   */
/* ======================================================================================== */

/** Blocking and threading of one SGEMM call: a plain value. */
typedef struct bkm_gemm_cfg {
    bkm_isa_t isa;     /**< resolved ISA (never AUTO after init) */
    int32_t mr, nr;    /**< register tile fixed by the ISA's micro-kernel (read-only) */
    int32_t mc, kc, nc;/**< cache blocks (tunables: multiples of mr / 1 / nr) */
    int32_t nt;        /**< threads to use (<= omp_get_max_threads()); 1 = no parallel region */
    int32_t nt_jc;     /**< ways the JC loop is split among nt threads (nt_ic = nt / nt_jc); 0 = auto */
} bkm_gemm_cfg_t;

/** Defaults for @p isa (BKM_ISA_AUTO = detect), nt = omp_get_max_threads(). */
int bkm_kern_gemm_cfg_init(bkm_gemm_cfg_t *cfg, bkm_isa_t isa, bkm_err_t *err);
/** Check bounds and multiple-of rules; err names the parameter and value. */
int bkm_kern_gemm_cfg_check(const bkm_gemm_cfg_t *cfg, bkm_err_t *err);
/** Published tunables of SGEMM (mc, kc, nc, nt_jc) for @p isa; static storage. */
const bkm_param_desc_t *bkm_kern_gemm_params(bkm_isa_t isa, size_t *n_params);
/** Bytes of packing workspace one call with @p cfg needs (for any m, n, k). */
size_t bkm_kern_gemm_workspace_bytes(const bkm_gemm_cfg_t *cfg);

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


/* ======================================================================================== */
/* Benchmark operations: one kernel, one problem, one backend (section owned by the conv2d/  */
/* layers work; the oneDNN backend implements the same contract). Signatures are the contract.*/
/* ======================================================================================== */

typedef enum { BKM_BACKEND_NATIVE = 0, BKM_BACKEND_ONEDNN = 1 } bkm_backend_t;
const char *bkm_kern_backend_name(bkm_backend_t be);            /* "native", "onednn" */
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
 *  (torchvision AlexNet, workloads.md §3) with batch @p mb_override (0 = keep). Checks: positive
 *  output size, groups divide channels, declared oh/ow consistent. err names the bad value. */
int bkm_kern_conv2d_desc_parse(const char *text, int64_t mb_override, bkm_conv2d_desc_t *d, bkm_err_t *err);
/** Canonical descriptor string ("mb32_g1ic192oc384_ih13oh13kh3sh1ph1_iw13ow13kw3sw1pw1"). */
void bkm_kern_conv2d_desc_format(const bkm_conv2d_desc_t *d, bkm_buf_t *out);
/** FLOPs of one direction (workloads.md §2: 2*N*K*(C/G)*R*S*P*Q, same for each direction). */
double bkm_kern_conv2d_flops(const bkm_conv2d_desc_t *d);

/** A prepared benchmark operation. Buffers are owned by the op, in the user layout (NCHW / OIHW
 *  for conv2d, row-major for GEMM); oneDNN may keep internal copies in blocked layouts. */
typedef struct bkm_kern_op bkm_kern_op_t;

typedef enum {
    BKM_ARG_SRC, BKM_ARG_WEI, BKM_ARG_BIAS, BKM_ARG_DST,
    BKM_ARG_DIFF_SRC, BKM_ARG_DIFF_WEI, BKM_ARG_DIFF_BIAS, BKM_ARG_DIFF_DST, BKM_ARG_COUNT
} bkm_arg_t;

/** Key=value tunables of an op (as given by --param), validated against its descriptors. */
typedef struct bkm_kern_params {
    int n;
    struct { char key[32]; int32_t value; } kv[32];
    bkm_isa_t isa;       /**< BKM_ISA_AUTO unless --param isa=... */
} bkm_kern_params_t;

/** Create a conv2d op for the directions in @p dirs. Allocates every buffer (untimed).
 *  BKM_ENOTSUP if the backend cannot do it; BKM_EINVAL naming a bad tunable. */
int bkm_kern_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs, bkm_backend_t be,
                              const bkm_kern_params_t *params, bkm_err_t *err);
/** Create a GEMM op (C = A * B, row-major, m x k times k x n). */
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

/** Naive reference conv2d (double accumulation), the oracle for every direction. */
void bkm_kern_conv2d_ref_fwd(const bkm_conv2d_desc_t *d, const float *src, const float *wei, const float *bias, float *dst);
void bkm_kern_conv2d_ref_bwd_data(const bkm_conv2d_desc_t *d, const float *diff_dst, const float *wei, float *diff_src);
void bkm_kern_conv2d_ref_bwd_weights(const bkm_conv2d_desc_t *d, const float *src, const float *diff_dst,
                                     float *diff_wei, float *diff_bias);

#ifdef __cplusplus
}
#endif
#endif /* BKM_KERNELS_H */
