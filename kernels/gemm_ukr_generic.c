/* SPDX-License-Identifier: MIT */
/* Portable C SGEMM micro-kernel (4 x 8), compiled for the baseline ISA: the fallback on any CPU. */
#include "kernels_int.h"

#define MR 4
#define NR 8

static void gemm_ukr_generic_4x8(int64_t k, const float *restrict a, const float *restrict b, float *restrict c,
                                 int64_t ldc, float alpha, float beta)
{
    float acc[MR][NR] = {{0.0f}};
    for (int64_t p = 0; p < k; p++) {
        for (int i = 0; i < MR; i++) {
            float ai = a[p * MR + i];
            for (int j = 0; j < NR; j++)
                acc[i][j] += ai * b[p * NR + j];
        }
    }
    for (int i = 0; i < MR; i++) {
        for (int j = 0; j < NR; j++) {
            float v = alpha * acc[i][j];
            /* beta == 0 never reads C: it may hold NaN. */
            c[i * ldc + j] = (beta == 0.0f) ? v : v + beta * c[i * ldc + j];
        }
    }
}

const bkm_gemm_ukr_desc_t bkm__gemm_ukr_generic = {
    .isa = BKM_ISA_GENERIC, .mr = MR, .nr = NR, .mc_def = 128, .kc_def = 256, .nc_def = 2048,
    .fn = gemm_ukr_generic_4x8, .name = "generic_4x8",
};
