/* SPDX-License-Identifier: MIT */
/* AVX-512 SGEMM for C = alpha * A * B^T + beta * C with few rows (the FC forward at batch size, the
 * LSTM's dh = dgates * W^T): A (m x k) and B (n x k) are both read in place along k, with no
 * packing. With few rows the packed driver spends most of its time transposing B into panels that
 * only a handful of A panels use; here each tile of DOT_NR rows of B is loaded once from memory,
 * stays in L1 while every DOT_MR-row tile of A (from L2) is multiplied against it, and the k
 * direction is the vector direction: DOT_MR x DOT_NR accumulators, each summed across its lanes
 * once per pass. Called only after run-time CPUID dispatch. */
#include "kernels_int.h"

#include <immintrin.h>

#define DOT_MR BKM_GEMM_DOT_MR
#define DOT_NR BKM_GEMM_DOT_NR
#ifndef DOT_PF
#define DOT_PF 512 /* floats ahead along a B row on its first use (from memory) */
#endif

/* Lane sums of v[0..3] in lanes 0..3 of the result. */
static inline __attribute__((always_inline)) __m128 hsum4(__m512 v0, __m512 v1, __m512 v2, __m512 v3)
{
    /* within 128-bit lanes: pairwise, then across the four 128-bit lanes */
    const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(v0, v1), _mm512_unpackhi_ps(v0, v1)); /* a b a b */
    const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(v2, v3), _mm512_unpackhi_ps(v2, v3)); /* c d c d */
    const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xEE)); /* a b c d */
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(u), _mm512_extractf32x8_ps(u, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* One tile: rows R of A against rows C of B over kb steps; C tile = alpha * sums + beta * C
 * (beta == 0 never reads C). PF: fetch the B rows ahead (their first use, from memory). */
static inline __attribute__((always_inline)) void dot_tile(const int R, const int C, const int PF, int64_t kb,
                                                           const float *restrict a, int64_t lda,
                                                           const float *restrict b, int64_t ldb, float *restrict c,
                                                           int64_t ldc, float alpha, float beta)
{
    __m512 acc[DOT_MR][8]; /* DOT_NR <= 8 columns used */
    int64_t p = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            acc[i][j] = _mm512_setzero_ps();
    for (; p + 16 <= kb; p += 16) {
        __m512 av[DOT_MR];
        for (int i = 0; i < R; i++)
            av[i] = _mm512_loadu_ps(a + i * lda + p);
        for (int j = 0; j < C; j++) {
            const __m512 bv = _mm512_loadu_ps(b + j * ldb + p);
            if (PF)
                _mm_prefetch((const char *)(b + j * ldb + p + DOT_PF), _MM_HINT_T0);
            for (int i = 0; i < R; i++)
                acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
        }
    }
    if (p < kb) { /* masked lanes are not read */
        const __mmask16 mk = (__mmask16)((1u << (kb - p)) - 1u);
        __m512 av[DOT_MR];
        for (int i = 0; i < R; i++)
            av[i] = _mm512_maskz_loadu_ps(mk, a + i * lda + p);
        for (int j = 0; j < C; j++) {
            const __m512 bv = _mm512_maskz_loadu_ps(mk, b + j * ldb + p);
            for (int i = 0; i < R; i++)
                acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
        }
    }
    for (int i = 0; i < R; i++) {
        const __m512 z = _mm512_setzero_ps();
        _Alignas(16) float s[12];
        _mm_store_ps(s, hsum4(acc[i][0], C > 1 ? acc[i][1] : z, C > 2 ? acc[i][2] : z, C > 3 ? acc[i][3] : z));
        if (C > 4)
            _mm_store_ps(s + 4, hsum4(acc[i][4], C > 5 ? acc[i][5] : z, C > 6 ? acc[i][6] : z, C > 7 ? acc[i][7] : z));
        for (int j = 0; j < C; j++)
            c[i * ldc + j] = beta == 0.0f ? alpha * s[j] : alpha * s[j] + beta * c[i * ldc + j];
    }
}

/* The tile shapes a call meets: full tiles (with and without the B prefetch), short row tiles with
 * full columns (m not a multiple of DOT_MR), then any short column tile (one per call). */
static void dot_tile_any(int r, int cn, int pf, int64_t kb, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float *c, int64_t ldc, float alpha, float beta)
{
    if (cn == DOT_NR) {
        switch (r * 2 + (pf != 0)) {
#define DOT_CASE(R)                                                                                            \
    case 2 * (R) + 1: dot_tile(R, DOT_NR, 1, kb, a, lda, b, ldb, c, ldc, alpha, beta); return;                  \
    case 2 * (R): dot_tile(R, DOT_NR, 0, kb, a, lda, b, ldb, c, ldc, alpha, beta); return;
#if DOT_MR >= 4
            DOT_CASE(4)
#endif
            DOT_CASE(3)
            DOT_CASE(2)
#undef DOT_CASE
        default: dot_tile(1, DOT_NR, pf, kb, a, lda, b, ldb, c, ldc, alpha, beta); return;
        }
    }
    /* a last column tile: one row at a time, its columns one by one */
    for (int i = 0; i < r; i++)
        for (int j = 0; j < cn; j++)
            dot_tile(1, 1, 0, kb, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc, alpha, beta);
}

void bkm__gemm_dot_avx512(int64_t m, int64_t n, int64_t k, int64_t kc, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t pc = 0; pc < k; pc += kc) {
        const int64_t kb = k - pc < kc ? k - pc : kc;
        const float be = pc == 0 ? beta : 1.0f;
        for (int64_t j0 = 0; j0 < n; j0 += DOT_NR) {
            const int cn = (int)(n - j0 < DOT_NR ? n - j0 : DOT_NR);
            for (int64_t i0 = 0; i0 < m; i0 += DOT_MR) {
                const int r = (int)(m - i0 < DOT_MR ? m - i0 : DOT_MR);
                dot_tile_any(r, cn, i0 == 0, kb, a + i0 * lda + pc, lda, b + j0 * ldb + pc, ldb, c + i0 * ldc + j0,
                             ldc, alpha, be);
            }
        }
    }
}
