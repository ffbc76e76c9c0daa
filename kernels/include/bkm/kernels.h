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

#ifdef __cplusplus
}
#endif
#endif /* BKM_KERNELS_H */
