/* SPDX-License-Identifier: MIT */
/* AVX-512 edge kernels of the conv2d algo-3 driver (conv2d_fast.c) for 32-column B panels: the
 * last row panel of a GEMM whose row count is not a multiple of MR = 14 (AlexNet: 128 output
 * channels = 9 x 14 + 2) would cost a full 14-row micro-kernel call for m rows. These compute only
 * the m <= 4 live rows, with even and odd k steps in separate accumulators so that the FMA
 * latency is covered with so few rows. Called only after run-time CPUID dispatch. */
#include "kernels_int.h"

#include <immintrin.h>

#define EDGE_NR 32

#define EDGE_KERNEL(M)                                                                                          \
    static void edge_rows_##M(int64_t k, const float *restrict a, int64_t lda, const float *restrict b,        \
                              float *restrict c, int64_t ldc, float beta)                                      \
    {                                                                                                           \
        __m512 e0[M], e1[M], o0[M], o1[M];                                                                      \
        int64_t p = 0;                                                                                          \
        for (int i = 0; i < M; i++) {                                                                           \
            e0[i] = _mm512_setzero_ps();                                                                        \
            e1[i] = _mm512_setzero_ps();                                                                        \
            o0[i] = _mm512_setzero_ps();                                                                        \
            o1[i] = _mm512_setzero_ps();                                                                        \
        }                                                                                                       \
        for (; p + 1 < k; p += 2) {                                                                             \
            const __m512 b0 = _mm512_loadu_ps(b + p * EDGE_NR), b1 = _mm512_loadu_ps(b + p * EDGE_NR + 16);    \
            const __m512 b2 = _mm512_loadu_ps(b + (p + 1) * EDGE_NR);                                          \
            const __m512 b3 = _mm512_loadu_ps(b + (p + 1) * EDGE_NR + 16);                                     \
            for (int i = 0; i < M; i++) {                                                                       \
                const __m512 x = _mm512_set1_ps(a[p * lda + i]), y = _mm512_set1_ps(a[(p + 1) * lda + i]);     \
                e0[i] = _mm512_fmadd_ps(x, b0, e0[i]);                                                          \
                e1[i] = _mm512_fmadd_ps(x, b1, e1[i]);                                                          \
                o0[i] = _mm512_fmadd_ps(y, b2, o0[i]);                                                          \
                o1[i] = _mm512_fmadd_ps(y, b3, o1[i]);                                                          \
            }                                                                                                   \
        }                                                                                                       \
        if (p < k) {                                                                                            \
            const __m512 b0 = _mm512_loadu_ps(b + p * EDGE_NR), b1 = _mm512_loadu_ps(b + p * EDGE_NR + 16);    \
            for (int i = 0; i < M; i++) {                                                                       \
                const __m512 x = _mm512_set1_ps(a[p * lda + i]);                                               \
                e0[i] = _mm512_fmadd_ps(x, b0, e0[i]);                                                          \
                e1[i] = _mm512_fmadd_ps(x, b1, e1[i]);                                                          \
            }                                                                                                   \
        }                                                                                                       \
        for (int i = 0; i < M; i++) {                                                                           \
            __m512 r0 = _mm512_add_ps(e0[i], o0[i]), r1 = _mm512_add_ps(e1[i], o1[i]);                          \
            if (beta != 0.0f) { /* beta == 0 never reads C (it may hold NaN) */                                \
                r0 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c + i * ldc), r0);                  \
                r1 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c + i * ldc + 16), r1);             \
            }                                                                                                   \
            _mm512_storeu_ps(c + i * ldc, r0);                                                                  \
            _mm512_storeu_ps(c + i * ldc + 16, r1);                                                             \
        }                                                                                                       \
    }

EDGE_KERNEL(1)
EDGE_KERNEL(2)
EDGE_KERNEL(3)
EDGE_KERNEL(4)

void bkm__conv2d_fast_edge_avx512(int64_t m, int64_t k, const float *a, int64_t lda, const float *b, float *c,
                                  int64_t ldc, float beta)
{
    switch (m) {
    case 1: edge_rows_1(k, a, lda, b, c, ldc, beta); break;
    case 2: edge_rows_2(k, a, lda, b, c, ldc, beta); break;
    case 3: edge_rows_3(k, a, lda, b, c, ldc, beta); break;
    default: edge_rows_4(k, a, lda, b, c, ldc, beta); break;
    }
}

/* bwd_w B panel of 32 K columns over kb depth steps, by hardware gathers: b[p * 32 + jj] =
 * tk[jj][p] >= 0 ? base[jj][tk[jj][p]] : 0 for jj < m, 0 for jj >= m. Eight columns per gather:
 * first their table entries (one int64 each), then the elements they name. */
void bkm__conv2d_fast_gather_avx512(int64_t kb, int64_t m, const int64_t *const *tk, const float *const *base,
                                    float *b)
{
    __m512i tp[EDGE_NR / 8], bp[EDGE_NR / 8];
    __mmask8 live[EDGE_NR / 8];
    const __m512i step = _mm512_set1_epi64((long long)sizeof(int64_t)), none = _mm512_set1_epi64(-1);
    for (int q = 0; q < EDGE_NR / 8; q++) {
        long long tpa[8], bpa[8];
        for (int l = 0; l < 8; l++) {
            const int64_t jj = q * 8 + l;
            tpa[l] = jj < m ? (long long)(uintptr_t)tk[jj] : 0;
            bpa[l] = jj < m ? (long long)(uintptr_t)base[jj] : 0;
        }
        live[q] = m >= q * 8 + 8 ? (__mmask8)0xff : m <= q * 8 ? (__mmask8)0 : (__mmask8)((1u << (m - q * 8)) - 1);
        tp[q] = _mm512_loadu_si512(tpa);
        bp[q] = _mm512_loadu_si512(bpa);
    }
    for (int64_t p = 0; p < kb; p++) {
        for (int q = 0; q < EDGE_NR / 8; q++) {
            const __m512i idx = _mm512_mask_i64gather_epi64(none, live[q], tp[q], NULL, 1);
            const __mmask8 ok = _mm512_mask_cmpge_epi64_mask(live[q], idx, _mm512_setzero_si512());
            const __m512i addr = _mm512_add_epi64(bp[q], _mm512_slli_epi64(idx, 2));
            _mm256_storeu_ps(b + p * EDGE_NR + q * 8, _mm512_mask_i64gather_ps(_mm256_setzero_ps(), ok, addr, NULL, 1));
            tp[q] = _mm512_add_epi64(tp[q], step);
        }
    }
}
