/* SPDX-License-Identifier: MIT */
/* Naive reference SGEMM with double accumulation: the correctness oracle for every backend. */
#include "bkm/kernels.h"

void bkm_kern_sgemm_ref(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc)
{
    int ta = (transa == 'T' || transa == 't');
    int tb = (transb == 'T' || transb == 't');
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double av = ta ? a[p * lda + i] : a[i * lda + p];
                double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                acc += av * bv;
            }
            /* beta == 0 must not read C: it may hold NaN or uninitialised memory. */
            double cv = (beta == 0.0f) ? 0.0 : (double)beta * c[i * ldc + j];
            c[i * ldc + j] = (float)((double)alpha * acc + cv);
        }
    }
}

double bkm_kern_gemm_flops(int64_t m, int64_t n, int64_t k)
{
    return 2.0 * (double)m * (double)n * (double)k;
}
