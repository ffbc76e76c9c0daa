/* SPDX-License-Identifier: MIT */
/* AVX-512 kernels of the conv2d algo-3 driver (conv2d_fast.c): the bwd_w B packing by window
 * rows, the fwd im2col packing runs, the fwd store's epilogue, the phase-split fwd tile and band,
 * and the stride-1 col2im row. Its short row panels run on the GEMM edge kernel
 * (gemm_edge_avx512.c). Called only after run-time CPUID dispatch. */
#include "kernels_int.h"

#include <immintrin.h>

/* bwd_w B packing by window rows: for t in [0, seg), lanes [0, len) of o + t * nr get the input
 * elements in[t * sw + l] whose column ix + t * sw + l lies in [0, iw), zeros elsewhere (in == NULL:
 * zeros only). One masked load and one masked store per pixel; masked-off lanes are not read. */
void bkm__conv2d_fast_rows_avx512(int64_t seg, int64_t len, const float *in, int64_t sw, int64_t ix, int64_t iw,
                                  float *o, int64_t nr)
{
    const __mmask16 all = (__mmask16)((1u << len) - 1u);
    if (in == NULL) {
        for (int64_t t = 0; t < seg; t++)
            _mm512_mask_storeu_ps(o + t * nr, all, _mm512_setzero_ps());
        return;
    }
    if (ix >= 0 && ix + (seg - 1) * sw + len <= iw) { /* no window clipped: one mask for all */
        for (int64_t t = 0; t < seg; t++)
            _mm512_mask_storeu_ps(o + t * nr, all, _mm512_maskz_loadu_ps(all, in + t * sw));
        return;
    }
    for (int64_t t = 0; t < seg; t++) {
        const int64_t x = ix + t * sw, lo = x < 0 ? -x : 0, hi = iw - x < len ? iw - x : len;
        __mmask16 m = all;
        if (lo > 0 || hi < len)
            m = hi <= lo ? (__mmask16)0 : (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
        _mm512_mask_storeu_ps(o + t * nr, all, _mm512_maskz_loadu_ps(m, in + t * sw));
    }
}

/* x[0], x[sw], ..., x[(n - 1) * sw] (n <= 16) into lanes 0..n-1 (others zero or junk-free):
 * strides 1, 2 and 4 from vector loads and lane permutes, others by a gather. Only the elements
 * named are read (masked loads, masked gathers). idx: lane * sw. */
static inline __m512 strided16(const float *x, int64_t sw, int64_t n, __m512i idx)
{
    const int64_t last = (n - 1) * sw; /* last element read */
    const __mmask16 mo = (__mmask16)((1u << n) - 1u);
    /* lanes of input vector i (elements 16 i .. 16 i + 15) up to the last element read */
#define LOADV(i)                                                                                                    \
    _mm512_maskz_loadu_ps(last >= 16 * (i) + 15   ? (__mmask16)0xffffu                                          \
                          : last < 16 * (i)       ? (__mmask16)0u                                               \
                                                  : (__mmask16)((1u << (last - 16 * (i) + 1)) - 1u),            \
                          x + 16 * (i))
    if (sw == 1)
        return _mm512_maskz_loadu_ps(mo, x);
    if (sw == 2)
        return _mm512_permutex2var_ps(LOADV(0), idx, LOADV(1));
    if (sw == 4) {
        const __m512 a = _mm512_permutex2var_ps(LOADV(0), idx, LOADV(1)); /* lanes 0..7 */
        const __m512 b = _mm512_permutex2var_ps(LOADV(2), idx, LOADV(3));
        return _mm512_shuffle_f32x4(a, b, 0x44);
    }
#undef LOADV
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mo, idx, x, 4);
}

void bkm__conv2d_fast_pack_row_avx512(const bkm__fast_run_t *r, int32_t n_runs, const float *base, int64_t sw,
                                      int64_t kb, int64_t nr, float *row)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)sw)); /* 0, sw, 2 sw, ... */
    for (int32_t i = 0; i < n_runs; i++) {
        float *w = row + r[i].q * kb * nr + r[i].jj;
        const float *x = base + r[i].off;
        for (int64_t t = 0; t < r[i].len; t += 16) {
            const int64_t n = r[i].len - t < 16 ? r[i].len - t : 16;
            const __mmask16 mo = (__mmask16)((1u << n) - 1u);
            _mm512_mask_storeu_ps(w + t, mo, r[i].off < 0 ? _mm512_setzero_ps() : strided16(x + t * sw, sw, n, idx));
        }
    }
}

/* The fwd store's epilogue on rows [0, m), columns [0, n) of c (ldc): c += bias[i] (bias NULL:
 * none), then BKM_FAST_ACT_RELU: c > 0 ? c : 0, or BKM_FAST_ACT_MASK: mask > 0 ? c : 0 (mask at
 * c's offsets). Compare-and-select, as the scalar passes: NaN and -0 give +0 as they do there. */
/* Lanes [0, n) of a 16-lane chunk (n >= 16: all). */
static inline __mmask16 lanes(int64_t n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
}

/* The fwd store's epilogue: dst rows [0, m), columns [0, n) (ldd) = act(src (lds) + bias[i]) (bias
 * NULL: none; mask at dst's offsets). src may be dst (in place). */
static void epi_rows(const float *src, int64_t lds, float *dst, int64_t ldd, int64_t m, int64_t n, const float *bias,
                     int act, const float *mask)
{
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t i = 0; i < m; i++) {
        const float *s = src + i * lds, *mk = mask != NULL ? mask + i * ldd : NULL;
        float *r = dst + i * ldd;
        const __m512 bv = _mm512_set1_ps(bias != NULL ? bias[i] : 0.0f);
        for (int64_t j = 0; j < n; j += 16) {
            const __mmask16 lm = lanes(n - j);
            __m512 v = _mm512_maskz_loadu_ps(lm, s + j);
            if (bias != NULL)
                v = _mm512_add_ps(v, bv);
            if (act == BKM_FAST_ACT_RELU)
                v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
            else if (act == BKM_FAST_ACT_MASK)
                v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(lm, mk + j), zero, _CMP_GT_OQ), v);
            _mm512_mask_storeu_ps(r + j, lm, v);
        }
    }
}

void bkm__conv2d_fast_epi_avx512(float *c, int64_t ldc, int64_t m, int64_t n, const float *bias, int act,
                                 const float *mask)
{
    epi_rows(c, ldc, c, ldc, m, n, bias, act, mask);
}

/* Phase-split forward (conv2d_fast.c, "s2d"): one M-row by 32-column tile, C (ld 32) = A * B over
 * all k depth steps, where A is an MR-row weight panel (a[p * lda + i]) and row p of B is the 32
 * floats at b + boff[p] (unpacked: rows of the phase-split input band). M <= 14: 2 M accumulators,
 * 2 B vectors and a broadcast fit the 32 zmm. */
#define S2D_KERNEL(M)                                                                                          \
    static void s2d_rows_##M(int64_t k, const float *restrict a, int64_t lda, const float *restrict b,         \
                             const int32_t *restrict boff, float *restrict c)                                  \
    {                                                                                                          \
        __m512 e0[M], e1[M];                                                                                   \
        for (int i = 0; i < M; i++) {                                                                          \
            e0[i] = _mm512_setzero_ps();                                                                       \
            e1[i] = _mm512_setzero_ps();                                                                       \
        }                                                                                                      \
        for (int64_t p = 0; p < k; p++) {                                                                      \
            const float *bp = b + boff[p];                                                                     \
            const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);                              \
            for (int i = 0; i < M; i++) {                                                                      \
                const __m512 x = _mm512_set1_ps(a[p * lda + i]);                                              \
                e0[i] = _mm512_fmadd_ps(x, b0, e0[i]);                                                         \
                e1[i] = _mm512_fmadd_ps(x, b1, e1[i]);                                                         \
            }                                                                                                  \
        }                                                                                                      \
        for (int i = 0; i < M; i++) {                                                                          \
            _mm512_store_ps(c + i * 32, e0[i]);                                                                \
            _mm512_store_ps(c + i * 32 + 16, e1[i]);                                                           \
        }                                                                                                      \
    }

S2D_KERNEL(1)
S2D_KERNEL(2)
S2D_KERNEL(3)
S2D_KERNEL(4)
S2D_KERNEL(5)
S2D_KERNEL(6)
S2D_KERNEL(7)
S2D_KERNEL(8)
S2D_KERNEL(9)
S2D_KERNEL(10)
S2D_KERNEL(11)
S2D_KERNEL(12)
S2D_KERNEL(13)
S2D_KERNEL(14)

void bkm__conv2d_fast_s2d_tile_avx512(int64_t m, int64_t k, const float *a, int64_t lda, const float *b,
                                      const int32_t *boff, float *c)
{
    switch (m) {
    case 1: s2d_rows_1(k, a, lda, b, boff, c); break;
    case 2: s2d_rows_2(k, a, lda, b, boff, c); break;
    case 3: s2d_rows_3(k, a, lda, b, boff, c); break;
    case 4: s2d_rows_4(k, a, lda, b, boff, c); break;
    case 5: s2d_rows_5(k, a, lda, b, boff, c); break;
    case 6: s2d_rows_6(k, a, lda, b, boff, c); break;
    case 7: s2d_rows_7(k, a, lda, b, boff, c); break;
    case 8: s2d_rows_8(k, a, lda, b, boff, c); break;
    case 9: s2d_rows_9(k, a, lda, b, boff, c); break;
    case 10: s2d_rows_10(k, a, lda, b, boff, c); break;
    case 11: s2d_rows_11(k, a, lda, b, boff, c); break;
    case 12: s2d_rows_12(k, a, lda, b, boff, c); break;
    case 13: s2d_rows_13(k, a, lda, b, boff, c); break;
    default: s2d_rows_14(k, a, lda, b, boff, c); break;
    }
}

/* o[xx] = row[x0 + xx * sw] where 0 <= x0 + xx * sw < iw, else 0, for xx < n: chunks of 16 inside
 * the row by strided16, the (at most two) others lane by lane. */
static void phase_row(const float *row, int64_t iw, int64_t x0, int64_t sw, int64_t n, __m512i idx, float *o)
{
    for (int64_t xx = 0; xx < n; xx += 16) {
        const int64_t cnt = n - xx < 16 ? n - xx : 16, x = x0 + xx * sw;
        const __mmask16 mo = (__mmask16)((1u << cnt) - 1u);
        if (x >= 0 && x + (cnt - 1) * sw < iw) {
            _mm512_mask_storeu_ps(o + xx, mo, strided16(row + x, sw, cnt, idx));
        } else {
            for (int64_t l = 0; l < cnt; l++) {
                const int64_t xl = x + l * sw;
                o[xx + l] = xl >= 0 && xl < iw ? row[xl] : 0.0f;
            }
        }
    }
}

static void copy_row(const float *s, int64_t n, float *o)
{
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = lanes(n - j);
        _mm512_mask_storeu_ps(o + j, m, _mm512_maskz_loadu_ps(m, s + j));
    }
}

void bkm__conv2d_fast_s2d_band_avx512(const bkm_conv2d_desc_t *d, const float *img, int64_t oy0, int64_t nrow,
                                      int64_t ws, int64_t slab, float *q)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)d->sw));
    const int64_t iy0 = oy0 * d->sh - d->ph, iy1 = (oy0 + nrow - 1) * d->sh - d->ph + d->kh;
    for (int64_t c = 0; c < d->ic; c++)
        for (int64_t iy = iy0; iy < iy1; iy++) {
            const float *first = NULL, *row = img + (c * d->ih + iy) * d->iw;
            const int in = iy >= 0 && iy < d->ih;
            /* slab rows (r, oyb) with (oy0 + oyb) sh - ph + r = iy */
            for (int64_t r = (iy - iy0) % d->sh; r < d->kh; r += d->sh) {
                const int64_t oyb = (iy - iy0 - r) / d->sh;
                float *o = q + (c * d->kh + r) * d->sw * slab + oyb * ws;
                if (oyb < 0 || oyb >= nrow)
                    continue;
                for (int64_t ph = 0; ph < d->sw; ph++) {
                    if (!in)
                        for (int64_t j = 0; j < ws; j += 16)
                            _mm512_mask_storeu_ps(o + ph * slab + j,
                                                  lanes(ws - j),
                                                  _mm512_setzero_ps());
                    else if (first == NULL)
                        phase_row(row, d->iw, ph - d->pw, d->sw, ws, idx, o + ph * slab);
                    else
                        copy_row(first + ph * slab, ws, o + ph * slab);
                }
                if (in && first == NULL)
                    first = o;
            }
        }
}

/* Columns [0, len) of rows [0, m) of a tile (ld 32) into c (ldc) through the fwd store's epilogue:
 * + bias[i] (NULL: none), then the activation (as bkm__conv2d_fast_epi_avx512). */
void bkm__conv2d_fast_store_avx512(const float *tile, int64_t m, int64_t len, float *c, int64_t ldc,
                                       const float *bias, int act, const float *mask)
{
    epi_rows(tile, 32, c, ldc, m, len, bias, act, mask);
}

/* Stride-1 col2im of the kw taps of one (channel, kernel row) over one output-row segment (conv2d_fast.c):
 * out[x0 + t + s] += o[s * ld + t] for s < kw, t < len, where 0 <= x0 + t + s < iw. Each 16 outputs
 * are loaded once and get the taps in the order s = 0, 1, ... (the order of the scalar loop over k,
 * so the same bits); a lane without a tap adds +0, which leaves a sum that started at +0 unchanged. */
void bkm__conv2d_fast_col2im_row_avx512(const float *o, int64_t ld, int64_t kw, int64_t len, int64_t x0, int64_t iw,
                                        float *out)
{
    const int64_t xa = x0 > 0 ? x0 : 0, xb = x0 + len - 1 + kw < iw ? x0 + len - 1 + kw : iw;
    for (int64_t x = xa; x < xb; x += 16) {
        const int64_t cnt = xb - x < 16 ? xb - x : 16;
        const __mmask16 mo = (__mmask16)((1u << cnt) - 1u);
        __m512 acc = _mm512_maskz_loadu_ps(mo, out + x);
        for (int64_t s = 0; s < kw; s++) {
            /* lanes l with 0 <= x + l - x0 - s < len */
            const int64_t t = x - x0 - s, lo = t < 0 ? -t : 0, hi = len - t < cnt ? len - t : cnt;
            if (hi <= lo)
                continue;
            const __mmask16 m = (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
            acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, o + s * ld + t));
        }
        _mm512_mask_storeu_ps(out + x, mo, acc);
    }
}
