/* SPDX-License-Identifier: MIT */
/* Seeded random numbers for the differential harnesses (libomp_diff, gomp_diff): splitmix64, the
 * same sequence on every machine, so a seed names a set of cases. */
#ifndef BKM_TESTS_DIFF_RNG_H
#define BKM_TESTS_DIFF_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s;
} rng_t;

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/** Uniform integer in [lo, hi]. */
static inline int rng_int(rng_t *r, int lo, int hi)
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/** 1 with probability pct/100. */
static inline int rng_pct(rng_t *r, int pct)
{
    return rng_int(r, 0, 99) < pct;
}

#endif /* BKM_TESTS_DIFF_RNG_H */
