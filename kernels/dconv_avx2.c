/* SPDX-License-Identifier: MIT */
/* AVX2 + FMA micro-kernels of the direct convolution (dconv.c): the AVX-512 tile (dconv_avx512.c)
 * with 8-lane vectors and 16 lanes per row of b and c: c[i][l] (+)= sum_j base_i[off[j]] *
 * b[row[j] * 16 + l]. 16 ymm registers: 6 x 2 (12 accumulators) or 12 x 1. */
#include "kernels_int.h"

#include <immintrin.h>

#define LB 16 /* lanes per row of b and c */

static inline __attribute__((always_inline)) void dconv_tile(const int V, const int R, int64_t n,
                                                             const float *const *base, const int32_t *off,
                                                             const int32_t *row, const float *b, float *c, int acc)
{
    __m256 a[BKM_DCONV_R_MAX][2];
    const float *p[BKM_DCONV_R_MAX];
    for (int i = 0; i < R; i++)
        p[i] = base[i];
    for (int i = 0; i < R; i++)
        for (int v = 0; v < V; v++)
            a[i][v] = acc ? _mm256_loadu_ps(c + i * LB + 8 * v) : _mm256_setzero_ps();
    for (int64_t j = 0; j < n; j++) {
        const int64_t o = off[j];
        const float *bp = b + (int64_t)row[j] * LB;
        __m256 bv[2];
        for (int v = 0; v < V; v++)
            bv[v] = _mm256_loadu_ps(bp + 8 * v);
        for (int i = 0; i < R; i++) {
            const __m256 x = _mm256_broadcast_ss(p[i] + o);
            for (int v = 0; v < V; v++)
                a[i][v] = _mm256_fmadd_ps(x, bv[v], a[i][v]);
        }
    }
    for (int i = 0; i < R; i++)
        for (int v = 0; v < V; v++)
            _mm256_storeu_ps(c + i * LB + 8 * v, a[i][v]);
}

#define DCONV_UKR(V, R)                                                                                               \
    static void dconv_##V##x##R(int64_t n, const float *const *base, const int32_t *off, const int32_t *row,          \
                                const float *b, float *c, int acc)                                                    \
    {                                                                                                                 \
        dconv_tile(V, R, n, base, off, row, b, c, acc);                                                               \
    }

DCONV_UKR(1, 12)
DCONV_UKR(2, 1)
DCONV_UKR(2, 2)
DCONV_UKR(2, 3)
DCONV_UKR(2, 4)
DCONV_UKR(2, 5)
DCONV_UKR(2, 6)

const bkm_dconv_ukr_desc_t bkm__dconv_ukr_avx2[2] = {
    {1, 12, LB, dconv_1x12, "avx2_12x8"},
    {2, 6, LB, dconv_2x6, "avx2_6x16"},
};
const bkm_dconv_ukr_desc_t bkm__dconv_tail_avx2[6] = {
    {2, 1, LB, dconv_2x1, "avx2_1x16"}, {2, 2, LB, dconv_2x2, "avx2_2x16"}, {2, 3, LB, dconv_2x3, "avx2_3x16"},
    {2, 4, LB, dconv_2x4, "avx2_4x16"}, {2, 5, LB, dconv_2x5, "avx2_5x16"}, {2, 6, LB, dconv_2x6, "avx2_6x16"},
};
