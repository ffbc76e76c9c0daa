/* SPDX-License-Identifier: MIT */
/* AVX-512 SGEMM micro-kernel, 14 x 32: 28 zmm accumulators, 2 B vectors per k step, A broadcast
 * from memory. Row-major C, so the vector direction is along n. */
#include "kernels_int.h"

#include <immintrin.h>

#ifndef MR
#define MR 14
#endif
#ifndef NV
#define NV 2 /* zmm vectors per row of the tile */
#endif
#define NR (16 * NV)
#ifndef PF_A
#define PF_A 16 /* k steps */
#endif
#ifndef PF_B
#define PF_B 8
#endif

/* One k step: NV vectors of B, MR broadcasts of A, MR x NV FMAs. A streams from L2 (MR floats per
 * step): fetch it PF_A steps ahead. B is reused from L1/L2 except on its first pass, so its stream
 * is fetched ahead too. */
static inline __attribute__((always_inline)) void ukr_step(int64_t p, const float *restrict a,
                                                            const float *restrict b, __m512 acc[MR][NV])
{
    __m512 bv[NV];
    for (int v = 0; v < NV; v++)
        bv[v] = _mm512_loadu_ps(b + p * NR + 16 * v);
    _mm_prefetch((const char *)(a + (p + PF_A) * MR), _MM_HINT_T0);
    for (int v = 0; v < NV; v++)
        _mm_prefetch((const char *)(b + (p + PF_B) * NR + 16 * v), _MM_HINT_T0);
    for (int i = 0; i < MR; i++) {
        __m512 ai = _mm512_set1_ps(a[p * MR + i]);
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
}

static void gemm_ukr_avx512(int64_t k, const float *restrict a, const float *restrict b, float *restrict c,
                            int64_t ldc, float alpha, float beta)
{
    __m512 acc[MR][NV];
    /* The C tile is needed only at the end. Fetched into L1 at the start, its MR rows (often a
     * power-of-two stride apart, one L1 set) are evicted again before use: bring it to L2 now, and
     * into L1 during the last MR x NV steps, one line per step (on the AMD EPYC guest this took
     * SGEMM 2048^3 from 0.92 to 0.95 x oneDNN on one thread). */
    const int64_t k_main = k > MR * NV ? k - MR * NV : 0;
    int64_t p = 0;
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm512_setzero_ps();
    for (int i = 0; i < MR; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T1);
        _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T1);
    }
#if defined(__clang__)
#pragma clang loop unroll_count(4)
#endif
    for (; p < k_main; p++)
        ukr_step(p, a, b, acc);
    for (int64_t q = 0; p < k; p++, q++) {
        _mm_prefetch((const char *)(c + (q / NV) * ldc + 16 * (q % NV)), _MM_HINT_T0);
        ukr_step(p, a, b, acc);
    }
    __m512 va = _mm512_set1_ps(alpha);
    if (beta == 0.0f) { /* never read C: it may hold NaN */
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < NV; v++)
                _mm512_storeu_ps(c + i * ldc + 16 * v, _mm512_mul_ps(va, acc[i][v]));
    } else {
        __m512 vb = _mm512_set1_ps(beta);
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < NV; v++)
                _mm512_storeu_ps(
                    c + i * ldc + 16 * v,
                    _mm512_fmadd_ps(va, acc[i][v], _mm512_mul_ps(vb, _mm512_loadu_ps(c + i * ldc + 16 * v))));
    }
}

#ifndef PACK_PF
#define PACK_PF 64 /* floats ahead along each source row in the transposing pack */
#endif

/* Transpose 16 x 16 in registers: on return r[j] lane i holds the old r[i] lane j. */
static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xDD);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
    }
}

void bkm__pack_tr_avx512(const float *s, int64_t lds, int64_t rows, int64_t kb, float *d, int64_t w)
{
    for (int64_t p0 = 0; p0 < kb; p0 += 16) {
        const int64_t np = kb - p0 < 16 ? kb - p0 : 16;
        const __mmask16 mp = (__mmask16)((1u << np) - 1u);
        for (int64_t i0 = 0; i0 < w; i0 += 16) {
            const int64_t ni = w - i0 < 16 ? w - i0 : 16, nv = rows - i0 < 0 ? 0 : rows - i0 < ni ? rows - i0 : ni;
            const __mmask16 mi = (__mmask16)((1u << ni) - 1u);
            __m512 r[16];
            for (int64_t i = 0; i < nv; i++) /* rows far apart: fetch each row's stream ahead */
                _mm_prefetch((const char *)(s + (i0 + i) * lds + p0 + PACK_PF), _MM_HINT_T0);
            for (int64_t i = 0; i < 16; i++)
                r[i] = i < nv ? _mm512_maskz_loadu_ps(mp, s + (i0 + i) * lds + p0) : _mm512_setzero_ps();
            transpose16(r);
            for (int64_t p = 0; p < np; p++)
                _mm512_mask_storeu_ps(d + (p0 + p) * w + i0, mi, r[p]);
        }
    }
}

const bkm_gemm_ukr_desc_t bkm__gemm_ukr_avx512 = {
    .isa = BKM_ISA_AVX512, .mr = MR, .nr = NR, .mc_def = 84, .kc_def = 512, .nc_def = 3072,
    .fn = gemm_ukr_avx512, .name = "avx512_14x32",
};
