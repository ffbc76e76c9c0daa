/* SPDX-License-Identifier: MIT */
/* AVX2 + FMA chains for the peak calibration: 12 independent ymm accumulators (FMA latency 4-5
 * cycles times two FMA ports on Haswell and later). */
#include "kernels_int.h"

#include <immintrin.h>

#define CHAINS 12

double bkm__peak_chain_avx2(int64_t iters, float *sink)
{
    __m256 x[CHAINS];
    const __m256 mul = _mm256_set1_ps(0.99999994f), add = _mm256_set1_ps(1e-7f);
    float out[8];
    for (int i = 0; i < CHAINS; i++)
        x[i] = _mm256_set1_ps((float)i);
    for (int64_t it = 0; it < iters; it++) {
        for (int i = 0; i < CHAINS; i++) {
            x[i] = _mm256_fmadd_ps(x[i], mul, add);
            /* Opaque to the optimiser: without this clang merges chains and the FLOP count lies. */
            __asm__ volatile("" : "+v"(x[i]));
        }
    }
    for (int i = 1; i < CHAINS; i++)
        x[0] = _mm256_add_ps(x[0], x[i]);
    _mm256_storeu_ps(out, x[0]);
    *sink = out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
    return 2.0 * 8.0 * CHAINS * (double)iters;
}
