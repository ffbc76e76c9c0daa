/* SPDX-License-Identifier: MIT */
/* AVX-512 edge kernels of the SGEMM driver (gemm.c) and of the conv2d algo-3 driver (conv2d_fast.c)
 * for 32-column B panels: the last row panel of a GEMM whose row count is not a multiple of MR = 14
 * (AlexNet: 128 output channels = 9 x 14 + 2; conv1: 64 = 4 x 14 + 8) would cost a full 14-row
 * micro-kernel call for m rows. These compute only the m <= 13 live rows; up to 4 rows with even and
 * odd k steps in separate accumulators so that the FMA latency is covered with so few rows. Called
 * only after run-time CPUID dispatch. */
#include "kernels_int.h"

#include <immintrin.h>

#define EDGE_NR BKM_GEMM_EDGE_NR

/* One row of an edge tile: c[0, 32) = r + beta * c (beta == 0 never reads C: it may hold NaN). */
static inline void edge_store_row(float *c, __m512 r0, __m512 r1, float beta)
{
    if (beta != 0.0f) {
        r0 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c), r0);
        r1 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c + 16), r1);
    }
    _mm512_storeu_ps(c, r0);
    _mm512_storeu_ps(c + 16, r1);
}

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
        for (int i = 0; i < M; i++)                                                                             \
            edge_store_row(c + i * ldc, _mm512_add_ps(e0[i], o0[i]), _mm512_add_ps(e1[i], o1[i]), beta);        \
    }

EDGE_KERNEL(1)
EDGE_KERNEL(2)
EDGE_KERNEL(3)
EDGE_KERNEL(4)

/* 5 to 13 rows: two accumulators per row (10 to 26 zmm) already cover the FMA latency. */
#define EDGE_KERNEL_WIDE(M)                                                                                     \
    static void edge_rows_##M(int64_t k, const float *restrict a, int64_t lda, const float *restrict b,        \
                              float *restrict c, int64_t ldc, float beta)                                      \
    {                                                                                                           \
        __m512 e0[M], e1[M];                                                                                    \
        for (int i = 0; i < M; i++) {                                                                           \
            e0[i] = _mm512_setzero_ps();                                                                        \
            e1[i] = _mm512_setzero_ps();                                                                        \
        }                                                                                                       \
        for (int64_t p = 0; p < k; p++) {                                                                       \
            const __m512 b0 = _mm512_loadu_ps(b + p * EDGE_NR), b1 = _mm512_loadu_ps(b + p * EDGE_NR + 16);    \
            for (int i = 0; i < M; i++) {                                                                       \
                const __m512 x = _mm512_set1_ps(a[p * lda + i]);                                               \
                e0[i] = _mm512_fmadd_ps(x, b0, e0[i]);                                                          \
                e1[i] = _mm512_fmadd_ps(x, b1, e1[i]);                                                          \
            }                                                                                                   \
        }                                                                                                       \
        for (int i = 0; i < M; i++)                                                                             \
            edge_store_row(c + i * ldc, e0[i], e1[i], beta);                                                    \
    }

EDGE_KERNEL_WIDE(5)
EDGE_KERNEL_WIDE(6)
EDGE_KERNEL_WIDE(7)
EDGE_KERNEL_WIDE(8)
/* 9 to 13 rows (AlexNet conv2's 192 output channels = 13 x 14 + 10): up to 26 accumulators */
EDGE_KERNEL_WIDE(9)
EDGE_KERNEL_WIDE(10)
EDGE_KERNEL_WIDE(11)
EDGE_KERNEL_WIDE(12)
EDGE_KERNEL_WIDE(13)

void bkm__gemm_edge_avx512(int64_t m, int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                           float beta)
{
    switch (m) {
    case 1: edge_rows_1(k, a, lda, b, c, ldc, beta); break;
    case 2: edge_rows_2(k, a, lda, b, c, ldc, beta); break;
    case 3: edge_rows_3(k, a, lda, b, c, ldc, beta); break;
    case 4: edge_rows_4(k, a, lda, b, c, ldc, beta); break;
    case 5: edge_rows_5(k, a, lda, b, c, ldc, beta); break;
    case 6: edge_rows_6(k, a, lda, b, c, ldc, beta); break;
    case 7: edge_rows_7(k, a, lda, b, c, ldc, beta); break;
    case 8: edge_rows_8(k, a, lda, b, c, ldc, beta); break;
    case 9: edge_rows_9(k, a, lda, b, c, ldc, beta); break;
    case 10: edge_rows_10(k, a, lda, b, c, ldc, beta); break;
    case 11: edge_rows_11(k, a, lda, b, c, ldc, beta); break;
    case 12: edge_rows_12(k, a, lda, b, c, ldc, beta); break;
    default: edge_rows_13(k, a, lda, b, c, ldc, beta); break;
    }
}
