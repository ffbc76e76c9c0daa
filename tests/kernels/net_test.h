/* SPDX-License-Identifier: MIT */
/* Helpers shared by the network and conv3d tests (test_net.c, test_net_lstm.c, test_conv3d.c). */
#ifndef BKM_TESTS_NET_TEST_H
#define BKM_TESTS_NET_TEST_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "bkm/net.h"

/* max |a - b| / max(1, max |b|); infinite when a difference is NaN */
static inline double rel_diff(const float *a, const float *b, size_t n)
{
    double md = 0.0, mb = 1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > md || isnan(d))
            md = isnan(d) ? INFINITY : d;
        if (fabs((double)b[i]) > mb)
            mb = fabs((double)b[i]);
    }
    return md / mb;
}

/* @p n values in [-scale, scale) from a linear congruential generator seeded with @p seed */
static inline void fill(float *p, size_t n, unsigned seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = scale * ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

/* Layers before the first parameter layer get no backward: a pool and ReLU on the input. */
static inline void pool_first(bkm_net_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->mb = 2;
    d->c = 2;
    d->h = 9;
    d->w = 10;
    d->lr = 0.1f;
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "p0", 0, 2, 2, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "r0", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "c1", 5, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f2", 4, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

#endif /* BKM_TESTS_NET_TEST_H */
