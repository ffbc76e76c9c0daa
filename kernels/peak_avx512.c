/* SPDX-License-Identifier: MIT */
/* AVX-512 FMA chains for the peak calibration: 16 independent zmm accumulators cover the FMA
 * latency (4 cycles) times the two FMA ports of Skylake-SP/Sapphire Rapids class cores. */
#include "kernels_int.h"

#include <immintrin.h>

#define CHAINS 16

double bkm__peak_chain_avx512(int64_t iters, float *sink)
{
    __m512 x[CHAINS];
    const __m512 mul = _mm512_set1_ps(0.99999994f), add = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++)
        x[i] = _mm512_set1_ps((float)i);
    for (int64_t it = 0; it < iters; it++) {
        for (int i = 0; i < CHAINS; i++) {
            x[i] = _mm512_fmadd_ps(x[i], mul, add);
            /* Opaque to the optimiser: without this clang merges chains and the FLOP count lies. */
            __asm__ volatile("" : "+v"(x[i]));
        }
    }
    for (int i = 1; i < CHAINS; i++)
        x[0] = _mm512_add_ps(x[0], x[i]);
    *sink = _mm512_reduce_add_ps(x[0]);
    return 2.0 * 16.0 * CHAINS * (double)iters;
}
