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

void bkm__dconv_store_avx512(const float *stage, int64_t nq, int64_t nl, const int64_t *runs, int64_t nruns, float *y,
                             int64_t ldy, const float *bias, int act, float *tbuf)
{
    const int64_t ldt = (nq + 15) / 16 * 16;
    for (int64_t q0 = 0; q0 < nq; q0 += 16) /* lane-major in tbuf: tbuf[l][q] */
        for (int64_t l0 = 0; l0 < nl; l0 += 16) {
            const int64_t m = nq - q0 < 16 ? nq - q0 : 16;
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < m ? _mm512_loadu_ps(stage + (q0 + i) * LB + l0) : _mm512_setzero_ps();
            tr16(r);
            for (int64_t l = 0; l < 16 && l0 + l < nl; l++)
                _mm512_store_ps(tbuf + (l0 + l) * ldt + q0, r[l]);
        }
    /* lane by lane, run by run: each lane's output written in order (64 interleaved write streams of a
     * few lines each were several times slower on a 2-core guest) */
    for (int64_t l = 0; l < nl; l++) {
        const float *t = tbuf + l * ldt;
        const __m512 b = _mm512_set1_ps(bias ? bias[l] : 0.0f);
        float *yl = y + l * ldy;
        for (int64_t k = 0; k < nruns; k++) {
            const int64_t q = runs[3 * k], n = runs[3 * k + 1], o = runs[3 * k + 2];
            for (int64_t j = 0; j < n; j += 16) {
                const __mmask16 mk = (__mmask16)(n - j >= 16 ? 0xffffu : (1u << (n - j)) - 1u);
                __m512 v = _mm512_maskz_loadu_ps(mk, t + q + j);
                if (bias)
                    v = _mm512_add_ps(v, b);
                if (act == BKM_FAST_ACT_RELU) /* v > 0 ? v : 0, as the scalar ReLU (NaN gives 0) */
                    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
                _mm512_mask_storeu_ps(yl + o + j, mk, v);
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

void bkm__dconv_colsum_avx512(const float *t, int64_t np, float *out)
{
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t p = 0; p < np; p++)
        for (int v = 0; v < 4; v++)
            a[v] = _mm512_add_ps(a[v], _mm512_loadu_ps(t + p * LB + 16 * v));
    for (int v = 0; v < 4; v++)
        _mm512_storeu_ps(out + 16 * v, a[v]);
}

/* The runs of output rows of 16-pixel vector vi (lanes shifted down to the run's first). */
static inline void px_store(const bkm_dconv_px_t *g, int64_t vi, __m512 v, float *yo)
{
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int32_t r = g->run0[vi]; r < g->run0[vi + 1]; r++) {
        const int32_t *ru = g->runs + 3 * r; /* first lane, lanes, output offset */
        _mm512_mask_storeu_ps(yo + ru[2], (__mmask16)((1u << ru[1]) - 1u),
                              ru[0] ? _mm512_permutexvar_ps(_mm512_add_epi32(iota, _mm512_set1_epi32(ru[0])), v) : v);
    }
}

/* Forward with pixels in the lanes (short reductions, unit strides, no padding), vectors [c0, c0 + 3)
 * of one output plane and channels [o0, o0 + 8). Virtual pixel v = oy * iw + ox over the input's row
 * width, so the input of tap k at v is x[koff[k] + v], one unaligned load for 16 pixels; the columns
 * ox >= ow are computed and never stored. An 8 x 48 tile: 8 output channels (weights broadcast from
 * wk = [k][8]) x 3 vectors of pixels; mk masks the loads of the plane's last vectors. */
static inline __attribute__((always_inline)) void px_chunk(const bkm_dconv_px_t *g, const float *x, const float *wk,
                                                           int64_t o0, int64_t c0, int masked, const __mmask16 *mk,
                                                           const float *bias, int act, float *y, int64_t ldy)
{
    const int64_t K = g->k, nvec = (g->v + 15) / 16;
    const float *xp = x + c0 * 16;
    __m512 a[8][3];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 3; j++)
            a[i][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *q = xp + g->koff[k];
        __m512 xv[3];
        for (int j = 0; j < 3; j++)
            xv[j] = masked ? _mm512_maskz_loadu_ps(mk[j], q + 16 * j) : _mm512_loadu_ps(q + 16 * j);
        for (int i = 0; i < 8; i++) {
            const __m512 b = _mm512_set1_ps(wk[k * 8 + i]);
            for (int j = 0; j < 3; j++)
                a[i][j] = _mm512_fmadd_ps(b, xv[j], a[i][j]);
        }
    }
    _Alignas(64) float t[8][3][16]; /* plain stores first: the accumulators stay in registers */
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 3; j++)
            _mm512_store_ps(t[i][j], a[i][j]);
    for (int64_t i = 0; i < 8 && o0 + i < g->oc; i++)
        for (int64_t j = 0; j < 3 && c0 + j < nvec; j++) {
            __m512 v = _mm512_load_ps(t[i][j]);
            if (bias)
                v = _mm512_add_ps(v, _mm512_set1_ps(bias[o0 + i]));
            if (act == BKM_FAST_ACT_RELU) /* v > 0 ? v : 0, as the scalar ReLU */
                v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
            px_store(g, c0 + j, v, y + (o0 + i) * ldy);
        }
}

void bkm__dconv_px_fwd_avx512(const bkm_dconv_px_t *g, const float *x, const float *wp, const float *bias, int act,
                              float *y, int64_t ldy)
{
    const int64_t nvec = (g->v + 15) / 16;
    for (int64_t o0 = 0; o0 < g->oc; o0 += 8)
        for (int64_t c0 = 0; c0 < nvec; c0 += 3) {
            __mmask16 mk[3];
            int masked = 0;
            for (int j = 0; j < 3; j++) {
                const int64_t v0 = (c0 + j) * 16, nl = g->v - v0 < 0 ? 0 : g->v - v0 > 16 ? 16 : g->v - v0;
                mk[j] = (__mmask16)((1u << nl) - 1u);
                masked |= nl < 16;
            }
            if (masked)
                px_chunk(g, x, wp + o0 * g->k, o0, c0, 1, mk, bias, act, y, ldy);
            else
                px_chunk(g, x, wp + o0 * g->k, o0, c0, 0, mk, bias, act, y, ldy);
        }
}
