/* SPDX-License-Identifier: MIT */
/* AVX-512 micro-kernels of the direct convolution (dconv.c): an R x (16 V) register tile of
 * accumulators, c[i][l] (+)= sum_j base_i[off[j]] * b[row[j] * 64 + l], one broadcast per row i and
 * V vector loads per step j. The rows are output pixels (forward, backward-data: base_i is the pixel's
 * first input element, off[] the taps) or weight-gradient entries (backward-weights: base_i is one
 * (channel, tap) of the input, off[] the pixels); the lanes are output channels (forward,
 * backward-weights) or input channels (backward-data). Every operand is read in place. */
#include "kernels_int.h"

#include <immintrin.h>

#define LB 64 /* lanes per row of b and c */

static inline __attribute__((always_inline)) void dconv_tile(const int V, const int R, int64_t n,
                                                             const float *const *base, const int32_t *off,
                                                             const int32_t *row, const float *b, float *c, int acc)
{
    __m512 a[BKM_DCONV_R_MAX][4];
    const float *p[BKM_DCONV_R_MAX];
    for (int i = 0; i < R; i++)
        p[i] = base[i];
    for (int i = 0; i < R; i++)
        for (int v = 0; v < V; v++)
            a[i][v] = acc ? _mm512_loadu_ps(c + i * LB + 16 * v) : _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j++) {
        const int64_t o = off[j];
        const float *bp = b + (int64_t)row[j] * LB;
        __m512 bv[4];
        for (int v = 0; v < V; v++)
            bv[v] = _mm512_loadu_ps(bp + 16 * v);
        for (int i = 0; i < R; i++) {
            const __m512 x = _mm512_set1_ps(p[i][o]);
            for (int v = 0; v < V; v++)
                a[i][v] = _mm512_fmadd_ps(x, bv[v], a[i][v]);
        }
    }
    for (int i = 0; i < R; i++)
        for (int v = 0; v < V; v++)
            _mm512_storeu_ps(c + i * LB + 16 * v, a[i][v]);
}

#define DCONV_UKR(V, R)                                                                                               \
    static void dconv_##V##x##R(int64_t n, const float *const *base, const int32_t *off, const int32_t *row,          \
                                const float *b, float *c, int acc)                                                    \
    {                                                                                                                 \
        dconv_tile(V, R, n, base, off, row, b, c, acc);                                                               \
    }

DCONV_UKR(1, 12)
DCONV_UKR(2, 12)
DCONV_UKR(3, 8)
DCONV_UKR(4, 1)
DCONV_UKR(4, 2)
DCONV_UKR(4, 3)
DCONV_UKR(4, 4)
DCONV_UKR(4, 5)
DCONV_UKR(4, 6)
DCONV_UKR(4, 7)

/* The tile for v = 1..4 vectors of lanes (index v - 1); [4]: the 7-row variant of v = 4. */
const bkm_dconv_ukr_desc_t bkm__dconv_ukr_avx512[5] = {
    {1, 12, LB, dconv_1x12, "avx512_12x16"}, {2, 12, LB, dconv_2x12, "avx512_12x32"},
    {3, 8, LB, dconv_3x8, "avx512_8x48"},    {4, 6, LB, dconv_4x6, "avx512_6x64"},
    {4, 7, LB, dconv_4x7, "avx512_7x64"},
};
/* Full-lane tiles of r = 1..7 rows (index r - 1): the last, partial tile of a group or a class box. */
const bkm_dconv_ukr_desc_t bkm__dconv_tail_avx512[7] = {
    {4, 1, LB, dconv_4x1, "avx512_1x64"}, {4, 2, LB, dconv_4x2, "avx512_2x64"}, {4, 3, LB, dconv_4x3, "avx512_3x64"},
    {4, 4, LB, dconv_4x4, "avx512_4x64"}, {4, 5, LB, dconv_4x5, "avx512_5x64"}, {4, 6, LB, dconv_4x6, "avx512_6x64"},
    {4, 7, LB, dconv_4x7, "avx512_7x64"},
};

/* 16 x 16 transpose in registers: r[i] lane j becomes r[j] lane i. */
static inline __attribute__((always_inline)) void tr16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

void bkm__dconv_store_avx512(const float *stage, int64_t nq, int64_t nl, const int64_t *po, float *y, int64_t ldy,
                             const float *bias, int act)
{
    for (int64_t q0 = 0; q0 < nq; q0 += 16) {
        const int64_t m = nq - q0 < 16 ? nq - q0 : 16;
        const __mmask16 mq = (__mmask16)((1u << m) - 1u);
        int32_t ra[16], rn[16], nr = 0; /* runs of consecutive output offsets: first pixel, length */
        for (int64_t q = 0; q < m; q++) {
            if (q == 0 || po[q0 + q] != po[q0 + q - 1] + 1)
                ra[nr] = (int32_t)q, rn[nr++] = 0;
            rn[nr - 1]++;
        }
        for (int64_t l0 = 0; l0 < nl; l0 += 16) {
            const int64_t nll = nl - l0 < 16 ? nl - l0 : 16;
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < m ? _mm512_loadu_ps(stage + (q0 + i) * LB + l0) : _mm512_setzero_ps();
            tr16(r);
            for (int64_t l = 0; l < nll; l++) {
                __m512 v = r[l];
                float *yl = y + (l0 + l) * ldy;
                if (bias)
                    v = _mm512_add_ps(v, _mm512_set1_ps(bias[l0 + l]));
                if (act == BKM_FAST_ACT_RELU) /* v > 0 ? v : 0, as the scalar ReLU (NaN gives 0) */
                    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
                if (nr == 1) {
                    _mm512_mask_storeu_ps(yl + po[q0], mq, v);
                    continue;
                }
                for (int k = 0; k < nr; k++) {
                    const __m512i sh = _mm512_add_epi32(_mm512_set1_epi32(ra[k]),
                                                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                                          13, 14, 15));
                    _mm512_mask_storeu_ps(yl + po[q0 + ra[k]], (__mmask16)((1u << rn[k]) - 1u),
                                          _mm512_permutexvar_ps(sh, v));
                }
            }
        }
    }
}

/* d[p * ldd + i] = s[i * lds + p] for i < rows (<= 64), p < np; 16 x 16 register transposes. */
void bkm__dconv_tr_avx512(const float *s, int64_t lds, int64_t rows, int64_t np, float *d, int64_t ldd)
{
    for (int64_t i0 = 0; i0 < rows; i0 += 16) {
        const int64_t ni = rows - i0 < 16 ? rows - i0 : 16;
        const __mmask16 mi = (__mmask16)((1u << ni) - 1u);
        for (int64_t p0 = 0; p0 < np; p0 += 16) {
            const int64_t npp = np - p0 < 16 ? np - p0 : 16;
            const __mmask16 mp = (__mmask16)((1u << npp) - 1u);
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < ni ? _mm512_maskz_loadu_ps(mp, s + (i0 + i) * lds + p0) : _mm512_setzero_ps();
            tr16(r);
            for (int64_t p = 0; p < npp; p++)
                _mm512_mask_storeu_ps(d + (p0 + p) * ldd + i0, mi, r[p]);
        }
    }
}
