/* SPDX-License-Identifier: MIT */
/* libdep.so for the loader-order tests: one OpenMP region, so the copy built by gcc links libgomp
 * and the copy built by clang links libomp; which one the loader finds tells which path it took. */
int dep(void)
{
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n++;
    return n;
}
