/* SPDX-License-Identifier: MIT */
/* Private to bkm::tuner: helpers shared by several of its source files. */
#ifndef BKM_TUNER_INT_H
#define BKM_TUNER_INT_H

#include <stdint.h>

/* xorshift64*: the reproducible random numbers of the strategies and the replay (a state of 0 stays 0). */
static inline uint64_t bkm_tune_rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* The worker of an MPI training trial (spec.ranks >= 1): worker_train.c, see bkm_tune_worker_run. */
struct bkm_tune_worker_cfg;
struct bkm_buf;
int bkm__tune_worker_train(const struct bkm_tune_worker_cfg *cfg, struct bkm_buf *out, struct bkm_err *err);

#endif
