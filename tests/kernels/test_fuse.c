/* SPDX-License-Identifier: MIT */
/* The native engine's fusions (the conv2d tunable "fuse": ReLU in the conv forward store and in
 * the next conv's bwd-data store, max pooling with the ReLU before it) against the separate
 * passes (fuse=0): on the AlexNet table and small odd tables, every fusion setting and two conv
 * algorithms give the same bits (loss, forward logits, gradients, updated parameters), and the
 * fused engine agrees with the reference engine. The phase-split forward of strided wide-window
 * convolutions (AlexNet conv1's path) against the naive reference, over one band and several; max
 * pooling of several output rows at once (AlexNet's pool2 and pool5 planes) with -inf and NaN windows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/net.h"
#include "kern_test.h"

/* conv (stride 1) -> ReLU -> conv -> ReLU -> pool -> conv (stride 2) -> dropout(0) -> ReLU -> pool
 * -> FC -> ReLU -> FC -> loss: ReLU into a conv's bwd-data (column-tile path), a ReLU after a conv
 * and before a pool, and one after a dropout before a pool (the ReLU moved after the pool). */
static void odd_table(bkm_net_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->mb = 3;
    d->c = 3;
    d->h = 17;
    d->w = 15;
    d->lr = 0.05f;
    bkm_net_desc_add(d, BKM_NET_CONV, "c1", 7, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "r1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "c2", 9, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r2", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "p2", 0, 3, 2, 1);
    bkm_net_desc_add(d, BKM_NET_CONV, "c3", 11, 3, 2, 1);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "d3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "p3", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f4", 13, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r4", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f5", 5, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

/* Seeded parameters, the weights scaled by 3 / sqrt(fan-in): activations stay O(1) on AlexNet. */
static void seed_params(const bkm_net_t *net, float *p, size_t n)
{
    fill(p, n, 100, 0.3f);
    for (int i = 0; i < net->d.n_layers; i++)
        if (net->li[i].n_wei > 0) {
            const float s = 3.0f / sqrtf((float)net->li[i].n_wei / (float)net->li[i].n_bias);
            for (size_t j = 0; j < (size_t)net->li[i].n_wei; j++)
                p[net->li[i].wei_off + j] *= s;
        }
}

/* The odd table with a dropout (p 0.5, in place) right after the first pool: the pool's backward
 * then tests the ReLU's output rather than its own output, which the dropout zeroes in places
 * (with finite gradients both give the same bits: a dropped output's gradient is zero too). */
static void odd_table_dropout(bkm_net_desc_t *d)
{
    bkm_net_desc_t t;
    odd_table(&t);
    memset(d, 0, sizeof *d);
    d->mb = t.mb, d->c = t.c, d->h = t.h, d->w = t.w, d->lr = t.lr;
    for (int i = 0; i < t.n_layers; i++) {
        const bkm_net_layer_t *l = &t.layer[i];
        bkm_net_desc_add(d, l->kind, l->name, l->out, l->k, l->s, l->p);
        if (strcmp(l->name, "p2") == 0)
            bkm_net_desc_add(d, BKM_NET_DROPOUT, "d2", 0, 0, 0, 0)->drop = 0.5f;
    }
}

typedef struct run {
    bkm_net_exec_t *ex;
    double loss1, loss2;
    float *logits; /* forward-only logits after the two steps */
    size_t n_logits;
} run_t;

/* Two training steps and a forward of @p d on the native engine with conv2d tunables @p params
 * (a comma-free list of key=value strings, NULL-terminated). */
static void run_native(const bkm_net_desc_t *d, const char *const *params, run_t *r)
{
    bkm_net_t net;
    bkm_kern_params_t kp;
    bkm_err_t err = {0};
    bkm_net_step_t st;
    const float *lg;
    size_t n;
    memset(r, 0, sizeof *r);
    bkm_kern_params_init(&kp);
    for (int i = 0; params[i] != NULL; i++)
        ck_assert_msg(bkm_kern_params_add(&kp, params[i], &err) == BKM_OK, "%s: %s", params[i], err.msg);
    ck_assert_msg(bkm_net_init(&net, d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_net_exec_create(&r->ex, &net, BKM_NET_NATIVE, &kp, &err) == BKM_OK, "%s", err.msg);
    float *in = bkm_net_exec_input(r->ex, &n);
    fill(in, n, 1, 1.0f);
    net_test_labels(r->ex);
    float *p = bkm_net_exec_params(r->ex, &n);
    seed_params(&net, p, n);
    ck_assert_msg(bkm_net_exec_prepare(r->ex, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_net_exec_step(r->ex, &st, &err) == BKM_OK, "%s", err.msg);
    r->loss1 = st.loss;
    ck_assert_msg(bkm_net_exec_step(r->ex, &st, &err) == BKM_OK, "%s", err.msg);
    r->loss2 = st.loss;
    ck_assert_int_eq(bkm_net_exec_finish(r->ex, &err), BKM_OK);
    ck_assert_msg(bkm_net_exec_forward(r->ex, &lg, &err) == BKM_OK, "%s", err.msg);
    r->n_logits = (size_t)(net.d.mb * net.classes);
    r->logits = malloc(r->n_logits * sizeof(float));
    ck_assert_ptr_nonnull(r->logits);
    memcpy(r->logits, lg, r->n_logits * sizeof(float));
}

static void run_free(run_t *r)
{
    bkm_net_exec_destroy(r->ex);
    free(r->logits);
}

/* The same bits in @p a and @p b: losses, logits, every gradient and updated parameter. */
static void same_bits(const run_t *a, const run_t *b, const char *what)
{
    size_t n, nb;
    const float *pa = bkm_net_exec_params(a->ex, &n), *pb = bkm_net_exec_params(b->ex, &nb);
    const float *ga = bkm_net_exec_grads(a->ex, NULL), *gb = bkm_net_exec_grads(b->ex, NULL);
    const bkm_net_t *net = bkm_net_exec_net(a->ex);
    ck_assert_msg(isfinite(a->loss1) && a->loss1 > 0.0, "%s: loss %g", what, a->loss1);
    ck_assert_msg(a->loss1 == b->loss1 && a->loss2 == b->loss2, "%s: losses %.9g %.9g vs %.9g %.9g", what,
                  a->loss1, a->loss2, b->loss1, b->loss2);
    ck_assert_msg(memcmp(a->logits, b->logits, a->n_logits * sizeof(float)) == 0, "%s: forward logits differ", what);
    ck_assert_uint_eq(n, nb);
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        double gmax = 0.0;
        if (!li->n_wei)
            continue;
        for (size_t j = 0; j < (size_t)li->n_wei; j++)
            gmax = fmax(gmax, fabs(ga[li->wei_off + j]));
        ck_assert_msg(gmax > 0.0, "%s: %s has an all-zero weight gradient (nothing compared)", what,
                      net->d.layer[i].name);
        ck_assert_msg(memcmp(ga + li->wei_off, gb + li->wei_off, (size_t)li->n_wei * sizeof(float)) == 0 &&
                          memcmp(ga + li->bias_off, gb + li->bias_off, (size_t)li->n_bias * sizeof(float)) == 0,
                      "%s: %s gradients differ (rel %g)", what, net->d.layer[i].name,
                      rel_diff(ga + li->wei_off, gb + li->wei_off, (size_t)li->n_wei));
    }
    ck_assert_msg(memcmp(pa, pb, n * sizeof(float)) == 0, "%s: updated parameters differ", what);
}

/* Every fusion setting against fuse=0, for conv2d algorithms 3 (the fused stores) and 1 (the
 * separate passes behind the fused entries); @p isa: "isa=generic" for the scalar epilogues of
 * algo 3, or "" (the CPU's). */
static void fused_equals_unfused(const bkm_net_desc_t *d, const char *name, int algo1, const char *isa)
{
    static const char *const fuse[] = {"fuse=1", "fuse=2", "fuse=4", "fuse=7"};
    const char *algo = algo1 ? "algo=1" : "algo=3";
    const char *const off[] = {algo, "fuse=0", *isa ? isa : NULL, NULL};
    run_t ref;
    run_native(d, off, &ref);
    for (int k = 0; k < 4; k++) {
        const char *const on[] = {algo, fuse[k], *isa ? isa : NULL, NULL};
        char what[96];
        run_t r;
        snprintf(what, sizeof what, "%s %s %s %s vs fuse=0", name, algo, isa, fuse[k]);
        run_native(d, on, &r);
        same_bits(&r, &ref, what);
        run_free(&r);
    }
    run_free(&ref);
}

START_TEST(small_tables_fused_equal_unfused)
{
    bkm_net_desc_t d;
    odd_table(&d);
    fused_equals_unfused(&d, "odd", 0, "");
    fused_equals_unfused(&d, "odd", 0, "isa=generic");
    fused_equals_unfused(&d, "odd", 1, "");
    odd_table_dropout(&d);
    fused_equals_unfused(&d, "odd+dropout", 0, "");
    pool_first(&d);
    fused_equals_unfused(&d, "pool_first", 0, "");
}
END_TEST

/* AlexNet (batch 2): conv -> ReLU -> pool (conv1, conv2, conv5), ReLU into the transposed bwd-data
 * of conv4 and conv5, ReLU after FC. */
START_TEST(alexnet_fused_equals_unfused)
{
    bkm_net_desc_t d;
    static const char *const off[] = {"fuse=0", NULL}, *const on[] = {"fuse=7", NULL};
    run_t a, b;
    bkm_net_desc_alexnet(&d, 2);
    run_native(&d, on, &a);
    run_native(&d, off, &b);
    same_bits(&a, &b, "alexnet fuse=7 vs fuse=0");
    run_free(&a);
    run_free(&b);
}
END_TEST

/* The fused engine against the reference engine on the odd table (first loss within 1e-5). */
START_TEST(fused_matches_reference)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ref = NULL;
    bkm_err_t err = {0};
    bkm_net_step_t st;
    static const char *const on[] = {"fuse=7", NULL};
    run_t a;
    size_t n;
    odd_table(&d);
    run_native(&d, on, &a);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_create(&ref, &net, BKM_NET_REF, NULL, &err), BKM_OK);
    memcpy(bkm_net_exec_input(ref, &n), bkm_net_exec_input(a.ex, NULL), n * sizeof(float));
    memcpy(bkm_net_exec_labels(ref, &n), bkm_net_exec_labels(a.ex, NULL), n * sizeof(int32_t));
    float *p = bkm_net_exec_params(ref, &n);
    seed_params(&net, p, n);
    ck_assert_int_eq(bkm_net_exec_prepare(ref, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_step(ref, &st, &err), BKM_OK);
    ck_assert_msg(fabs(a.loss1 - st.loss) <= 1e-5 * fabs(st.loss), "fused loss %.9g vs reference %.9g", a.loss1,
                  st.loss);
    bkm_net_exec_destroy(ref);
    run_free(&a);
}
END_TEST

/* Native conv2d fwd of @p text with an L2 of @p l2 bytes (0: unknown) against the reference. */
static void conv_fwd_vs_ref(const char *text, int64_t l2)
{
    bkm_conv2d_desc_t d;
    bkm_kern_params_t kp;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_kern_conv2d_desc_parse(text, 0, &d, &err) == BKM_OK, "%s: %s", text, err.msg);
    const size_t ns = (size_t)(d.mb * d.ic * d.ih * d.iw), nw = (size_t)(d.oc * d.ic * d.kh * d.kw),
                 nd = (size_t)(d.mb * d.oc * d.oh * d.ow);
    float *src = malloc(ns * sizeof(float)), *wei = malloc(nw * sizeof(float)), *bias = malloc((size_t)d.oc * 4),
          *dst = malloc(nd * sizeof(float)), *ref = malloc(nd * sizeof(float));
    ck_assert(src && wei && bias && dst && ref);
    fill(src, ns, 3, 1.0f);
    fill(wei, nw, 4, 0.1f);
    fill(bias, (size_t)d.oc, 5, 0.5f);
    fill(dst, nd, 6, 1e30f); /* every output must be written */
    bkm_kern_params_init(&kp);
    kp.cache.l2 = l2;
    ck_assert_int_eq(bkm_kern_params_add(&kp, "algo=3", &err), BKM_OK);
    ck_assert_msg(bkm_kern_conv2d_create(&cv, &d, &kp, &err) == BKM_OK, "%s: %s", text, err.msg);
    ck_assert_int_eq(bkm_kern_conv2d_fwd(cv, src, wei, bias, dst, &err), BKM_OK);
    bkm_kern_conv2d_ref_fwd(&d, src, wei, bias, ref);
    ck_assert_msg(rel_diff(dst, ref, nd) < 1e-5, "%s l2 %lld: fwd differs from the reference by %g", text,
                  (long long)l2, rel_diff(dst, ref, nd));
    bkm_kern_conv2d_destroy(cv);
    free(src);
    free(wei);
    free(bias);
    free(dst);
    free(ref);
}

START_TEST(phase_split_fwd_matches_reference)
{
    static const char *const shapes[] = {
        "mb2ic3ih67oc64kh11sh4ph2",       /* AlexNet conv1, 64 channels: rows 14 + 14 + 14 + 14 + 8 */
        "mb3ic2ih29iw41oc17kh9kw9sh3sw3ph1pw4", /* stride 3, asymmetric padding and input */
        "mb2ic3ih35oc5kh8sh2ph0",          /* stride 2, kernel a multiple of the stride */
        "mb1ic4ih19oc30kh11sh4ph5",       /* padding near the kernel size */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        conv_fwd_vs_ref(shapes[i], 0);
        conv_fwd_vs_ref(shapes[i], 16 * 1024); /* bands of a row or a few */
    }
}
END_TEST

/* Small planes take 4 and 2 output rows at once: windows of only -inf or NaN keep their first
 * element (the reference's rule), bit for bit; the gradient follows the indices. */
START_TEST(pool_rows_nonfinite_windows)
{
    static const int64_t shapes[][3] = {{13, 13, 2}, {27, 27, 2}, {9, 12, 1}}; /* ih, iw, stride */
    for (int k = 0; k < 3; k++) {
        bkm_pool_desc_t d;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 2, 3, shapes[k][0], shapes[k][1], 3, shapes[k][2], 0, &err), BKM_OK);
        const size_t ni = (size_t)(d.mb * d.c * d.ih * d.iw), no = (size_t)(d.mb * d.c * d.oh * d.ow);
        float *src = malloc(ni * 4), *dst = malloc(no * 4), *ref = malloc(no * 4), *dd = malloc(no * 4);
        float *ds = malloc(ni * 4), *ds_ref = malloc(ni * 4);
        int32_t *am = malloc(no * sizeof(int32_t));
        ck_assert(src && dst && ref && dd && ds && ds_ref && am);
        fill(src, ni, 21, 1.0f);
        fill(dd, no, 22, 1.0f);
        for (int64_t y = 0; y < 5; y++) /* plane 0: the first windows of rows 0 and 1 all -inf */
            for (int64_t x = 0; x < 7; x++)
                src[y * d.iw + x] = -INFINITY;
        for (int64_t y = 4; y < d.ih; y++) /* plane 1: the right part of the lower rows all NaN */
            for (int64_t x = d.iw / 2; x < d.iw; x++)
                src[(d.ih + y) * d.iw + x] = NAN;
        bkm_kern_maxpool_fwd(&d, src, dst, am);
        bkm_kern_maxpool_ref_fwd(&d, src, ref);
        ck_assert_msg(memcmp(dst, ref, no * 4) == 0, "shape %d: pooling differs from the reference", k);
        bkm_kern_maxpool_bwd(&d, dd, am, ds);
        bkm_kern_maxpool_ref_bwd(&d, src, dd, ds_ref);
        ck_assert_msg(rel_diff(ds, ds_ref, ni) < 1e-6, "shape %d: pooling gradient differs", k);
        free(src), free(dst), free(ref), free(dd), free(ds), free(ds_ref), free(am);
    }
}
END_TEST

START_TEST(fuse_value_checked)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_kern_params_t kp;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    odd_table(&d);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    bkm_kern_params_init(&kp);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "fuse=8", &err), BKM_OK);
    ck_assert_int_lt(bkm_net_exec_create(&ex, &net, BKM_NET_NATIVE, &kp, &err), 0);
    ck_assert_msg(strstr(err.msg, "fuse") != NULL, "%s", err.msg);
    ck_assert_ptr_null(ex);
}
END_TEST

static Suite *fuse_suite(void)
{
    Suite *s = suite_create("fuse");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, small_tables_fused_equal_unfused);
    tcase_add_test(tc, alexnet_fused_equals_unfused);
    tcase_add_test(tc, fused_matches_reference);
    tcase_add_test(tc, fuse_value_checked);
    tcase_add_test(tc, phase_split_fwd_matches_reference);
    tcase_add_test(tc, pool_rows_nonfinite_windows);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(fuse_suite)
