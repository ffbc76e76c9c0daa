/* SPDX-License-Identifier: MIT */
/* AVX2 + FMA SGEMM micro-kernel, 6 x 16: 12 ymm accumulators, 2 B vectors, 1 broadcast of A. */
#include "kernels_int.h"

#include <immintrin.h>

#define MR 6
#define NR 16

static void gemm_ukr_avx2_6x16(int64_t k, const float *restrict a, const float *restrict b, float *restrict c,
                               int64_t ldc, float alpha, float beta)
{
    __m256 c0[MR], c1[MR];
    for (int i = 0; i < MR; i++) {
        c0[i] = _mm256_setzero_ps();
        c1[i] = _mm256_setzero_ps();
    }
    for (int i = 0; i < MR; i++) { /* the C tile is needed only at the end: fetch it now */
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < k; p++) {
        __m256 b0 = _mm256_loadu_ps(b + p * NR);
        __m256 b1 = _mm256_loadu_ps(b + p * NR + 8);
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + p * MR + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
    __m256 va = _mm256_set1_ps(alpha);
    if (beta == 0.0f) { /* never read C: it may hold NaN */
        for (int i = 0; i < MR; i++) {
            _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, c0[i]));
            _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, c1[i]));
        }
    } else {
        __m256 vb = _mm256_set1_ps(beta);
        for (int i = 0; i < MR; i++) {
            _mm256_storeu_ps(c + i * ldc, _mm256_fmadd_ps(va, c0[i], _mm256_mul_ps(vb, _mm256_loadu_ps(c + i * ldc))));
            _mm256_storeu_ps(c + i * ldc + 8,
                             _mm256_fmadd_ps(va, c1[i], _mm256_mul_ps(vb, _mm256_loadu_ps(c + i * ldc + 8))));
        }
    }
}

const bkm_gemm_ukr_desc_t bkm__gemm_ukr_avx2 = {
    .isa = BKM_ISA_AVX2, .mr = MR, .nr = NR, .mc_def = 144, .kc_def = 256, .nc_def = 3072,
    .fn = gemm_ukr_avx2_6x16, .name = "avx2_6x16",
};
