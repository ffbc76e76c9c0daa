/* SPDX-License-Identifier: MIT */
/* What the kernels tests share (the tests in tests/kernels and test_onednn.c): seeded buffers,
 * the relative difference to a reference, and for the network tests a seeded executor and the
 * agreement of two training steps with the reference engine. */
#ifndef BKM_TESTS_KERN_TEST_H
#define BKM_TESTS_KERN_TEST_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/net.h"

/* max |a - b| / max(@p floor, max |b|); infinite when a difference is NaN */
static inline double rel_diff_over(const float *a, const float *b, size_t n, double floor)
{
    double md = 0.0, mb = floor;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > md || isnan(d))
            md = isnan(d) ? INFINITY : d;
        if (fabs((double)b[i]) > mb)
            mb = fabs((double)b[i]);
    }
    return md / mb;
}

/* max |a - b| / max(1, max |b|) */
static inline double rel_diff(const float *a, const float *b, size_t n)
{
    return rel_diff_over(a, b, n, 1.0);
}

/* @p n values in [-scale, scale) from the linear congruential generator x = 1103515245 x + 12345
 * seeded with @p seed (16 bits of each x) */
static inline void fill(float *p, size_t n, unsigned seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = scale * ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

/* The same from the generator x = 1664525 x + 1013904223 (Numerical Recipes' constants). */
static inline void fill_nr(float *p, size_t n, unsigned seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = scale * ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

/* A malloc'ed buffer of @p n floats (at least one allocated) from fill / fill_nr. */
static inline float *rnd(size_t n, unsigned seed, float scale)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(p);
    fill(p, n, seed, scale);
    return p;
}

static inline float *rnd_nr(size_t n, unsigned seed, float scale)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(p);
    fill_nr(p, n, seed, scale);
    return p;
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

/* Labels (5 i + 2) mod classes of the executor's batch. */
static inline void net_test_labels(bkm_net_exec_t *ex)
{
    size_t n;
    int32_t *lab = bkm_net_exec_labels(ex, &n);
    const int64_t classes = bkm_net_exec_net(ex)->classes;
    ck_assert_uint_eq(n, (size_t)bkm_net_exec_net(ex)->d.mb);
    for (size_t i = 0; i < n; i++)
        lab[i] = (int32_t)((i * 5 + 2) % (size_t)classes);
}

/* A prepared executor of @p d on @p eng: input fill(seed 1, 1), labels net_test_labels, the
 * initial states of each LSTM layer i fill(7 + i, 0.8), the L1 loss's target fill(33, 0.5) and
 * the parameters fill(100, @p pscale); every buffer's size checked against the table. */
static inline bkm_net_exec_t *net_test_exec(const bkm_net_desc_t *d, bkm_net_engine_t eng, float pscale)
{
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    size_t n;
    ck_assert_msg(bkm_net_init(&net, d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_net_exec_create(&ex, &net, eng, NULL, &err) == BKM_OK, "%s: %s", bkm_net_engine_name(eng),
                  err.msg);
    float *in = bkm_net_exec_input(ex, &n);
    ck_assert_uint_eq(n,
                      d->t ? (size_t)(d->t * d->mb * d->c) : (size_t)(d->mb * d->c * (d->d ? d->d : 1) * d->h * d->w));
    fill(in, n, 1, 1.0f);
    net_test_labels(ex);
    for (int i = 0; i < d->n_layers; i++) {
        float *st = bkm_net_exec_state(ex, i, &n);
        if (d->layer[i].kind != BKM_NET_LSTM) {
            ck_assert_ptr_null(st);
            continue;
        }
        ck_assert_uint_eq(n, (size_t)(2 * d->layer[i].k * d->mb * d->layer[i].out));
        fill(st, n, 7 + (unsigned)i, 0.8f);
    }
    float *tg = bkm_net_exec_target(ex, &n);
    ck_assert_uint_eq(n, (size_t)(d->t * d->mb * net.classes)); /* none (0) but for a sequence network */
    fill(tg, n, 33, 0.5f);
    float *p = bkm_net_exec_params(ex, &n);
    ck_assert_uint_eq(n, net.n_params);
    fill(p, n, 100, pscale);
    ck_assert_msg(bkm_net_exec_prepare(ex, &err) == BKM_OK, "%s", err.msg);
    return ex;
}

/* Two steps of @p d on @p eng (per-layer timing on) and on the reference engine, from the same
 * net_test_exec(@p pscale): the losses agree to 1e-4 and the second is lower when the step
 * updates (lr > 0, not inference), the same otherwise; forward and backward took time; every
 * parameter layer's weights and biases agree to 1e-5 and, unless inference, their gradients to
 * 1e-4; the impl names the engine. The two executors are left in *ex and *ref for more checks. */
static inline void net_test_agree(const bkm_net_desc_t *d, bkm_net_engine_t eng, float pscale, bkm_net_exec_t **exo,
                                  bkm_net_exec_t **refo, bkm_net_step_t *s1, bkm_net_step_t *r1)
{
    bkm_net_exec_t *ex = net_test_exec(d, eng, pscale), *ref = net_test_exec(d, BKM_NET_REF, pscale);
    bkm_err_t err = {0};
    bkm_net_step_t s2, r2;
    size_t n;
    bkm_net_exec_set_timing(ex, 1);
    ck_assert_msg(bkm_net_exec_step(ex, s1, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_net_exec_step(ex, &s2, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_net_exec_finish(ex, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_step(ref, r1, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_step(ref, &r2, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_finish(ref, &err), BKM_OK);
    ck_assert_msg(fabs(s1->loss - r1->loss) <= 1e-4 * fabs(r1->loss), "%s loss %.7f vs reference %.7f",
                  bkm_net_engine_name(eng), s1->loss, r1->loss);
    ck_assert_msg(fabs(s2.loss - r2.loss) <= 1e-4 * fabs(r2.loss), "%s second loss %.7f vs reference %.7f",
                  bkm_net_engine_name(eng), s2.loss, r2.loss);
    if (d->lr > 0.0f && !d->inference)
        ck_assert_msg(r2.loss < r1->loss, "a step on the same batch must lower the loss: %g -> %g", r1->loss, r2.loss);
    else
        ck_assert_msg(r2.loss == r1->loss, "no update: the same loss twice (%g, %g)", r1->loss, r2.loss);
    /* forward and backward did work: measured, finite, positive times */
    ck_assert_msg(s1->fwd_ms > 0.0 && s1->bwd_ms > 0.0 && isfinite(s1->fwd_ms + s1->bwd_ms), "fwd %g bwd %g ms",
                  s1->fwd_ms, s1->bwd_ms);
    const bkm_net_t *net = bkm_net_exec_net(ex);
    const float *p = bkm_net_exec_params(ex, &n), *rp = bkm_net_exec_params(ref, NULL);
    const float *g = bkm_net_exec_grads(ex, NULL), *rg = bkm_net_exec_grads(ref, NULL);
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        if (!li->n_wei)
            continue;
        ck_assert_msg(rel_diff(p + li->wei_off, rp + li->wei_off, (size_t)li->n_wei) < 1e-5, "%s weights",
                      net->d.layer[i].name);
        ck_assert_msg(rel_diff(p + li->bias_off, rp + li->bias_off, (size_t)li->n_bias) < 1e-5, "%s bias",
                      net->d.layer[i].name);
        if (d->inference)
            continue;
        ck_assert_msg(rel_diff(g + li->wei_off, rg + li->wei_off, (size_t)li->n_wei) < 1e-4, "%s weight gradient %g",
                      net->d.layer[i].name, rel_diff(g + li->wei_off, rg + li->wei_off, (size_t)li->n_wei));
        ck_assert_msg(rel_diff(g + li->bias_off, rg + li->bias_off, (size_t)li->n_bias) < 1e-4, "%s bias gradient",
                      net->d.layer[i].name);
    }
    ck_assert_ptr_nonnull(strstr(bkm_net_exec_impl(ex), bkm_net_engine_name(eng)));
    *exo = ex;
    *refo = ref;
}

#endif /* BKM_TESTS_KERN_TEST_H */
