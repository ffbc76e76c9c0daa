/* SPDX-License-Identifier: MIT */
/* AVX-512 SGEMM micro-kernel, 14 x 32: 28 zmm accumulators, 2 B vectors per k step, A broadcast
 * from memory. Row-major C, so the vector direction is along n. */
#include "kernels_int.h"

#include <immintrin.h>

#define MR 14
#define NR 32
#ifndef PF_A
#define PF_A 16 /* k steps */
#endif
#ifndef PF_B
#define PF_B 8
#endif

static void gemm_ukr_avx512_14x32(int64_t k, const float *restrict a, const float *restrict b,
                                  float *restrict c, int64_t ldc, float alpha, float beta)
{
    __m512 c0[MR], c1[MR];
    for (int i = 0; i < MR; i++) {
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
    }
    for (int i = 0; i < MR; i++) { /* the C tile is needed only at the end: fetch it now */
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < k; p++) {
        __m512 b0 = _mm512_loadu_ps(b + p * NR);
        __m512 b1 = _mm512_loadu_ps(b + p * NR + 16);
        /* A streams from L2 (56 bytes per k step): fetch it PF_A steps ahead. B is reused from
         * L1 except on its first pass, so its stream is fetched ahead too. */
        _mm_prefetch((const char *)(a + (p + PF_A) * MR), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + (p + PF_B) * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + (p + PF_B) * NR + 16), _MM_HINT_T0);
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[p * MR + i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    __m512 va = _mm512_set1_ps(alpha);
    if (beta == 0.0f) { /* never read C: it may hold NaN */
        for (int i = 0; i < MR; i++) {
            _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, c0[i]));
            _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, c1[i]));
        }
    } else {
        __m512 vb = _mm512_set1_ps(beta);
        for (int i = 0; i < MR; i++) {
            _mm512_storeu_ps(c + i * ldc, _mm512_fmadd_ps(va, c0[i], _mm512_mul_ps(vb, _mm512_loadu_ps(c + i * ldc))));
            _mm512_storeu_ps(c + i * ldc + 16,
                             _mm512_fmadd_ps(va, c1[i], _mm512_mul_ps(vb, _mm512_loadu_ps(c + i * ldc + 16))));
        }
    }
}

const bkm_gemm_ukr_desc_t bkm__gemm_ukr_avx512 = {
    .isa = BKM_ISA_AVX512, .mr = MR, .nr = NR, .mc_def = 84, .kc_def = 512, .nc_def = 3072,
    .fn = gemm_ukr_avx512_14x32, .name = "avx512_14x32",
};
