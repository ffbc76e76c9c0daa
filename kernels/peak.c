/* SPDX-License-Identifier: MIT */
/* Measured FP32 peak: independent FMA chains on every thread (the ceiling for "% of peak"). */
#include "kernels_int.h"

#include <omp.h>

#define PEAK_CHAINS_GENERIC 8

/* Scalar multiply-add chains (the compiler may vectorise them with the baseline ISA). */
double bkm__peak_chain_generic(int64_t iters, float *sink)
{
    float x[PEAK_CHAINS_GENERIC];
    for (int i = 0; i < PEAK_CHAINS_GENERIC; i++)
        x[i] = (float)i;
    for (int64_t it = 0; it < iters; it++) {
        for (int i = 0; i < PEAK_CHAINS_GENERIC; i++) {
            x[i] = x[i] * 0.99999994f + 1e-7f;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
            __asm__ volatile("" : "+x"(x[i])); /* keep every chain: no merging by the optimiser */
#endif
        }
    }
    for (int i = 1; i < PEAK_CHAINS_GENERIC; i++)
        x[0] += x[i];
    *sink = x[0];
    return 2.0 * PEAK_CHAINS_GENERIC * (double)iters;
}

static double peak_chain(bkm_isa_t isa, int64_t iters, float *sink)
{
    switch (isa) {
    case BKM_ISA_AVX512: return bkm__peak_chain_avx512(iters, sink);
    case BKM_ISA_AVX2: return bkm__peak_chain_avx2(iters, sink);
    default: return bkm__peak_chain_generic(iters, sink);
    }
}

/* One timed round on @p nthreads threads: total FLOPs / wall time of the parallel region. */
static double peak_round(bkm_isa_t isa, int nthreads, int64_t iters)
{
    double flops = 0.0;
    uint64_t t0, t1;
    t0 = bkm_now_ns();
#pragma omp parallel num_threads(nthreads) reduction(+ : flops)
    {
        float sink = 0.0f; /* written by the chain in another file, so the chain cannot be dropped */
        flops += peak_chain(isa, iters, &sink);
    }
    t1 = bkm_now_ns();
    return t1 > t0 ? flops / (double)(t1 - t0) : 0.0; /* FLOP/ns = GFLOP/s */
}

double bkm_kern_peak_gflops(bkm_isa_t isa, int nthreads)
{
    const int64_t iters = 4000000; /* ~0.1 s per round at ~2.5 GHz for the AVX-512 chains */
    double best = 0.0;
    if (isa == BKM_ISA_AUTO)
        isa = bkm_kern_isa_detect();
    if (nthreads < 1 || (int)isa > (int)bkm_kern_isa_detect() || (int)isa < (int)BKM_ISA_GENERIC)
        return 0.0;
    (void)peak_round(isa, nthreads, iters / 4); /* warm-up: thread start, frequency ramp */
    for (int r = 0; r < 3; r++) {
        double g = peak_round(isa, nthreads, iters);
        if (g > best)
            best = g;
    }
    return best;
}
