/* SPDX-License-Identifier: MIT */
/* AVX-512 max pooling (layers.c): the interior output columns of one output row, 16 at a time,
 * taps outer; a tap replaces the best only when strictly greater (row-major first maximum, the
 * reference's rule). Called only after run-time CPUID dispatch. */
#include "kernels_int.h"

#include <immintrin.h>

/* The 16 (or n, mask m) window taps at in + off, in + off + sw, ...: stride 2 from two masked
 * loads (lo, hi: lanes 0..2n-2 of the two vectors) and a permute, stride 1 from one load,
 * others by a gather. Only the elements named are read. */
static inline __m512 tap16(const float *in, int64_t off, int64_t sw, __mmask16 m, __mmask16 lo, __mmask16 hi,
                           __m512i even, __m512i step)
{
    if (sw == 2)
        return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, in + off), even,
                                      _mm512_maskz_loadu_ps(hi, in + off + 16));
    if (sw == 1)
        return _mm512_maskz_loadu_ps(m, in + off);
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, step, in + off, 4);
}

/* The masks of n <= 16 windows: m, lanes 0..n-1; lo and hi, the lanes of the two vectors whose
 * permute gives stride 2 (lanes 0..2n-2 of the pair). */
static inline void tap_masks(int64_t n, __mmask16 *m, __mmask16 *lo, __mmask16 *hi)
{
    *m = (__mmask16)((1u << n) - 1u);
    *lo = (__mmask16)(n > 8 ? 0xffffu : (1u << (2 * n - 1)) - 1u);
    *hi = (__mmask16)(n <= 8 ? 0u : n == 16 ? 0x7fffu : (1u << (2 * (n - 8) - 1)) - 1u);
}

/* One tap of a 2-D window row: replace where strictly greater (and remember where, and that some
 * tap did). */
static inline void pool_tap(const float *in, int64_t off, int64_t sw, __mmask16 m, __mmask16 lo, __mmask16 hi,
                            __m512i even, __m512i step, __m512 *best, __m512i *bi, __mmask16 *any)
{
    const __m512 v = tap16(in, off, sw, m, lo, hi, even, step);
    const __mmask16 gt = _mm512_mask_cmp_ps_mask(m, v, *best, _CMP_GT_OQ);
    *best = _mm512_mask_mov_ps(*best, gt, v);
    *bi = _mm512_mask_mov_epi32(*bi, gt, _mm512_add_epi32(_mm512_set1_epi32((int)off), step));
    *any |= gt;
}

/* Store the n (mask m) results; lanes no tap replaced (all-NaN or all -inf windows, rare) get their
 * window's first element, as the reference returns. */
static inline void pool_store(const float *in, __m512 best, __m512i bi, __mmask16 any, __m512i first, __mmask16 m,
                              float *out, int32_t *am)
{
    if ((any & m) != m)
        best = _mm512_mask_i32gather_ps(best, (__mmask16)(m & ~any), first, in, 4);
    _mm512_mask_storeu_ps(out, m, best);
    _mm512_mask_storeu_epi32(am, m, bi);
}

void bkm__maxpool_row_avx512(const float *in, int64_t iw, int64_t ya, int64_t yb, int64_t kw, int64_t x0, int64_t sw,
                             int64_t nc, float *out, int32_t *am, const float *pf, int64_t npf)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));
    const __m512i even = _mm512_add_epi32(lane, lane); /* 0, 2, ..., 30: the stride-2 lanes of two vectors */
    /* The rows later output rows read, one cache line each 16 floats: with the taps' masked
     * loads alone the input streams from memory at a fraction of the bandwidth (AMD Zen 4). */
    for (int64_t p = 0; p < npf; p += 16)
        _mm_prefetch((const char *)(pf + p), _MM_HINT_T0);
    for (int64_t j = 0; j < nc; j += 16) {
        const int64_t n = nc - j < 16 ? nc - j : 16, base = x0 + j * sw;
        __mmask16 m, lo, hi, any = 0; /* any: lanes some tap replaced */
        __m512 best = _mm512_set1_ps(-__builtin_inff());
        const __m512i first = _mm512_add_epi32(_mm512_set1_epi32((int)(ya * iw + base)), step);
        __m512i bi = first;
        tap_masks(n, &m, &lo, &hi);
        for (int64_t y = ya; y < yb; y++)
            for (int64_t x = 0; x < kw; x++)
                pool_tap(in, y * iw + base + x, sw, m, lo, hi, even, step, &best, &bi, &any);
        pool_store(in, best, bi, any, first, m, out + j, am + j);
    }
}

/* R output rows at once (R = 2 or 4), each of at most 16 interior columns and with its whole
 * window inside the input vertically: row q's window starts at row y0 + q * sh. One row's taps form
 * a chain of dependent compare-and-selects; R independent chains keep the units busy on small
 * planes (AlexNet's pool5: 6 columns, pool2: 13). Per row, the same operations in the same order as
 * bkm__maxpool_row_avx512, so the same bits. */
#define POOL_ROWS_KERNEL(R)                                                                                     \
    static void pool_rows_##R(const float *in, int64_t iw, int64_t y0, int64_t sh, int64_t kh, int64_t kw,      \
                              int64_t x0, int64_t sw, int64_t nc, float *out, int64_t ldo, int32_t *am,       \
                              const float *pf, int64_t npf)                                                     \
    {                                                                                                           \
        for (int64_t p = 0; p < npf; p += 16)                                                                   \
            _mm_prefetch((const char *)(pf + p), _MM_HINT_T0);                                                  \
        const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);           \
        const __m512i step = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));                              \
        const __m512i even = _mm512_add_epi32(lane, lane);                                                      \
        __mmask16 m, lo, hi;                                                                                    \
        __m512 best[R];                                                                                         \
        __m512i bi[R], first[R];                                                                                \
        __mmask16 any[R];                                                                                       \
        tap_masks(nc, &m, &lo, &hi);                                                                            \
        for (int q = 0; q < R; q++) {                                                                           \
            best[q] = _mm512_set1_ps(-__builtin_inff());                                                        \
            first[q] = _mm512_add_epi32(_mm512_set1_epi32((int)((y0 + q * sh) * iw + x0)), step);               \
            bi[q] = first[q];                                                                                   \
            any[q] = 0;                                                                                         \
        }                                                                                                       \
        for (int64_t y = 0; y < kh; y++)                                                                        \
            for (int64_t x = 0; x < kw; x++)                                                                    \
                for (int q = 0; q < R; q++)                                                                     \
                    pool_tap(in, (y0 + q * sh + y) * iw + x0 + x, sw, m, lo, hi, even, step, &best[q], &bi[q],  \
                             &any[q]);                                                                          \
        for (int q = 0; q < R; q++)                                                                             \
            pool_store(in, best[q], bi[q], any[q], first[q], m, out + q * ldo, am + q * ldo);                   \
    }

POOL_ROWS_KERNEL(2)
POOL_ROWS_KERNEL(4)

void bkm__maxpool_rows_avx512(int64_t r, const float *in, int64_t iw, int64_t y0, int64_t sh, int64_t kh, int64_t kw,
                              int64_t x0, int64_t sw, int64_t nc, float *out, int64_t ldo, int32_t *am, const float *pf,
                              int64_t npf)
{
    if (r == 4)
        pool_rows_4(in, iw, y0, sh, kh, kw, x0, sw, nc, out, ldo, am, pf, npf);
    else
        pool_rows_2(in, iw, y0, sh, kh, kw, x0, sw, nc, out, ldo, am, pf, npf);
}

/* AVX-512 3-D max pooling (conv3d.c): the interior output columns of one output row, 16 at a
 * time, taps (plane, row, column) outer in row-major order. Each lane starts from its window's
 * first element and a tap replaces it only when strictly greater, exactly as the scalar loop
 * (a NaN first element stays, as in the reference). */
void bkm__maxpool3d_row_avx512(const float *in, int64_t plane, int64_t za, int64_t zb, int64_t iw, int64_t ya,
                               int64_t yb, int64_t kw, int64_t x0, int64_t sw, int64_t nc, float *out, int32_t *am)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw));
    const __m512i even = _mm512_add_epi32(lane, lane);
    for (int64_t j = 0; j < nc; j += 16) {
        const int64_t n = nc - j < 16 ? nc - j : 16, base = x0 + j * sw;
        __mmask16 m, lo, hi;
        __m512 best = _mm512_setzero_ps();
        __m512i bi = _mm512_setzero_si512();
        int started = 0;
        tap_masks(n, &m, &lo, &hi);
        for (int64_t z = za; z < zb; z++)
            for (int64_t y = ya; y < yb; y++)
                for (int64_t x = 0; x < kw; x++) {
                    const int64_t off = z * plane + y * iw + base + x;
                    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)off), step);
                    const __m512 v = tap16(in, off, sw, m, lo, hi, even, step);
                    if (!started) { /* the window's first element */
                        best = v;
                        bi = idx;
                        started = 1;
                        continue;
                    }
                    const __mmask16 gt = _mm512_mask_cmp_ps_mask(m, v, best, _CMP_GT_OQ);
                    best = _mm512_mask_mov_ps(best, gt, v);
                    bi = _mm512_mask_mov_epi32(bi, gt, idx);
                }
        _mm512_mask_storeu_ps(out + j, m, best);
        _mm512_mask_storeu_epi32(am + j, m, bi);
    }
}
