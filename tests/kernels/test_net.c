/* SPDX-License-Identifier: MIT */
/* Networks as data: the table's one-time check and derivations, every error naming its value, and
 * one training step of small odd tables on the native and oneDNN executors against the reference
 * executor over the same table (loss, updated parameters, gradients), plus per-layer timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/net.h"
#include "kern_test.h"

/* Small odd CNN: conv (stride 2, padding 1), ReLU, pool, conv, ReLU, dropout, FC, ReLU, FC, loss. */
static void small_cnn(bkm_net_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->mb = 3;
    d->c = 3;
    d->h = 13;
    d->w = 11;
    d->lr = 0.05f;
    bkm_net_desc_add(d, BKM_NET_CONV, "c1", 8, 3, 2, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "r1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "p1", 0, 3, 2, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "c2", 16, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "r2", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "d3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f3", 20, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f4", 7, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

/* Small odd 3-D network: conv3d (stride 2, padding 1), pool3d, conv3d, ReLU, FC, FC, a loss over the
 * batch axis (the conv3d seed's quirk) and no update (lr 0), or the class loss with an update. */
static void small3d_lossk(bkm_net_desc_t *d, bkm_net_kind_t loss, float lr)
{
    memset(d, 0, sizeof *d);
    d->mb = 3;
    d->c = 2;
    d->d = 6;
    d->h = 7;
    d->w = 5;
    d->lr = lr;
    bkm_net_desc_add(d, BKM_NET_CONV3D, "c1", 4, 3, 2, 1);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL3D, "p1", 0, 2, 1, 0);
    bkm_net_desc_add(d, BKM_NET_CONV3D, "c2", 5, 2, 1, 1);
    bkm_net_desc_add(d, BKM_NET_FC, "f3", 9, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "r3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "f4", 6, 0, 0, 0);
    bkm_net_desc_add(d, loss, "loss", 0, 0, 0, 0);
}

static void small3d(bkm_net_desc_t *d)
{
    small3d_lossk(d, BKM_NET_LOSS_BATCH, 0.0f);
}

START_TEST(conv3d_seed_table)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_err_t err = {0};
    bkm_net_desc_conv3d_seed(&d, 4);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    /* docs/workloads.md §5: 33x33x18, 31x31x16, 15x15x8, 13x13x6, 11x11x4, 5x5x2 (-> 6400) */
    static const int64_t dhw[6][3] = {{33, 33, 18}, {31, 31, 16}, {15, 15, 8}, {13, 13, 6}, {11, 11, 4}, {5, 5, 2}};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(net.li[i].out.d, dhw[i][0]);
        ck_assert_int_eq(net.li[i].out.h, dhw[i][1]);
        ck_assert_int_eq(net.li[i].out.w, dhw[i][2]);
        ck_assert_int_eq(net.li[i].out.nsp, 3);
    }
    ck_assert_int_eq(net.li[6].in.c * net.li[6].in.d * net.li[6].in.h * net.li[6].in.w, 6400);
    ck_assert_int_eq(net.classes, 512);
    /* MAC per sample: 33.87 M, 1700.46 M, 224.28 M, 214.11 M; fwd 17.41 GF and fwd+bwd (no conv1
     * bwd-data) 51.96 GF per 4-sample iteration */
    ck_assert(fabs(net.li[0].flops[BKM_NET_FWD] / 8 - 33.87e6) < 0.01e6);
    ck_assert(fabs(net.li[1].flops[BKM_NET_FWD] / 8 - 1700.46e6) < 0.01e6);
    ck_assert_msg(fabs(net.flops_fwd / 1e9 - 17.41) < 0.005, "%g", net.flops_fwd);
    ck_assert_msg(fabs(net.flops_train / 1e9 - 51.96) < 0.005, "%g", net.flops_train);
    ck_assert(net.li[1].flops[BKM_NET_UPD] == 0.0); /* lr 0: no update step */
}
END_TEST

START_TEST(table_derivations)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_err_t err = {0};
    small_cnn(&d);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    /* c1: 13x11 -> 7x6; p1: 7x6 -> 3x2; c2 keeps 3x2; f3 flattens 16*3*2 = 96 */
    ck_assert_int_eq(net.li[0].out.h, 7);
    ck_assert_int_eq(net.li[0].out.w, 6);
    ck_assert_int_eq(net.li[2].out.h, 3);
    ck_assert_int_eq(net.li[2].out.w, 2);
    ck_assert_int_eq(net.li[6].in.c * net.li[6].in.h * net.li[6].in.w, 96);
    ck_assert_int_eq(net.li[6].n_wei, 20 * 96);
    ck_assert_int_eq(net.classes, 7);
    ck_assert_int_eq(net.n_trainable, 8 * 27 + 8 + 16 * 72 + 16 + 20 * 96 + 20 + 7 * 20 + 7);
    for (int i = 0; i < d.n_layers; i++) {
        ck_assert_uint_eq(net.li[i].wei_off % 16, 0);
        ck_assert_uint_eq(net.li[i].bias_off % 16, 0);
        if (net.li[i].n_wei)
            ck_assert(net.li[i].bias_off + (size_t)net.li[i].n_bias <= net.n_params);
    }
    /* FLOPs: conv 2*N*K*C*R*S*P*Q, FC 2*N*in*out; no bwd-data for the first parameter layer */
    ck_assert(net.li[0].flops[BKM_NET_FWD] == 2.0 * 3 * 8 * 3 * 9 * 7 * 6);
    ck_assert(net.li[0].flops[BKM_NET_BWD_D] == 0.0);
    ck_assert(net.li[3].flops[BKM_NET_BWD_D] == net.li[3].flops[BKM_NET_FWD]);
    ck_assert(net.li[8].flops[BKM_NET_FWD] == 2.0 * 3 * 20 * 7);
    ck_assert(net.flops_train == 3.0 * net.flops_fwd - net.li[0].flops[BKM_NET_FWD]);
    ck_assert(!net.li[0].need_bwd_d && net.li[1].need_bwd_d && net.li[0].need_bwd);

    pool_first(&d);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert(!net.li[0].need_bwd && !net.li[1].need_bwd && net.li[2].need_bwd && !net.li[2].need_bwd_d);
    ck_assert_int_eq(net.li[0].out.h, 5); /* (9 + 2 - 2) / 2 + 1 */
}
END_TEST

/* @p d must be refused with BKM_EINVAL and a message containing @p needle. */
static void refused(const bkm_net_desc_t *d, const char *needle)
{
    bkm_net_t net;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_net_init(&net, d, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' does not name '%s'", err.msg, needle);
}

START_TEST(table_rejects_bad_input)
{
    bkm_net_desc_t d;
    small_cnn(&d);
    d.mb = 0;
    refused(&d, "mb=0");
    small_cnn(&d);
    d.h = -4;
    refused(&d, "h=-4");
    small_cnn(&d);
    d.layer[0].k = 40; /* window larger than the padded input */
    refused(&d, "c1");
    small_cnn(&d);
    d.layer[3].out = 0;
    refused(&d, "out=0");
    small_cnn(&d);
    d.layer[2].p = -1;
    refused(&d, "p=-1");
    small_cnn(&d);
    d.layer[2].p = 3; /* pooling padding as wide as the window */
    refused(&d, "p=3");
    small_cnn(&d);
    d.layer[d.n_layers - 1].kind = BKM_NET_RELU; /* no loss */
    refused(&d, "loss");
    small_cnn(&d);
    d.layer[7].kind = BKM_NET_LOSS; /* loss in the middle */
    refused(&d, "r3");
    small_cnn(&d);
    d.layer[d.n_layers - 2].kind = BKM_NET_RELU; /* loss not after an FC */
    refused(&d, "FC");
    small_cnn(&d);
    d.lr = -1.0f;
    refused(&d, "learning rate -1");
    small_cnn(&d);
    d.layer[3].kind = BKM_NET_CONV3D; /* a 3-D layer on a 2-D tensor */
    refused(&d, "c2");
    small3d(&d);
    d.layer[1].kind = BKM_NET_MAXPOOL; /* a 2-D layer on a 3-D tensor */
    refused(&d, "needs a 2-D (NCHW) input");
    small3d(&d);
    d.layer[4] = (bkm_net_layer_t){BKM_NET_CONV3D, 2, 1, 1, 0, "c5", 0.0f}; /* conv after the FC flattened */
    refused(&d, "flat features");
    small3d(&d);
    d.d = -2;
    refused(&d, "d=-2");
    small3d(&d);
    d.layer[0].k = 9; /* deeper than the input (d = 6) */
    refused(&d, "d=6");
    small_cnn(&d);
    d.layer[6].out = (int64_t)1 << 45; /* too large to address */
    refused(&d, "f3");
    small_cnn(&d);
    d.layer[4].kind = (bkm_net_kind_t)99;
    refused(&d, "kind 99");
    small_cnn(&d);
    d.n_layers = BKM_NET_MAX_LAYERS + 1;
    refused(&d, "33 layers");
    small_cnn(&d);
    ck_assert_ptr_null(bkm_net_desc_add(&(bkm_net_desc_t){.n_layers = BKM_NET_MAX_LAYERS}, BKM_NET_RELU, "x", 0, 0, 0,
                                        0));
}
END_TEST

/* Two steps of @p d on @p eng and on the reference agree (net_test_agree); the update took time
 * when there is one. */
static void agree_with_reference(const bkm_net_desc_t *d, bkm_net_engine_t eng)
{
    bkm_net_exec_t *ex, *ref;
    bkm_net_step_t s1, r1;
    net_test_agree(d, eng, 0.3f, &ex, &ref, &s1, &r1);
    ck_assert_msg(d->lr > 0.0f ? s1.update_ms > 0.0 : s1.update_ms >= 0.0, "update %g ms (lr %g)", s1.update_ms,
                  (double)d->lr);
    bkm_net_exec_destroy(ex);
    bkm_net_exec_destroy(ref);
}

START_TEST(native_matches_reference)
{
    bkm_net_desc_t d;
    small_cnn(&d);
    agree_with_reference(&d, BKM_NET_NATIVE);
    pool_first(&d);
    agree_with_reference(&d, BKM_NET_NATIVE);
    small3d(&d);
    agree_with_reference(&d, BKM_NET_NATIVE);
    small3d_lossk(&d, BKM_NET_LOSS, 0.05f);
    agree_with_reference(&d, BKM_NET_NATIVE);
}
END_TEST

START_TEST(onednn_matches_reference)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    small_cnn(&d);
    agree_with_reference(&d, BKM_NET_ONEDNN);
    small3d(&d);
    agree_with_reference(&d, BKM_NET_ONEDNN);
    small3d_lossk(&d, BKM_NET_LOSS, 0.05f);
    agree_with_reference(&d, BKM_NET_ONEDNN);
    /* oneDNN's chain starts at a parameter layer: a pool on the input is refused, naming it */
    pool_first(&d);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_create(&ex, &net, BKM_NET_ONEDNN, NULL, &err), BKM_ENOTSUP);
    ck_assert_ptr_null(ex);
    ck_assert_ptr_nonnull(strstr(err.msg, "p0"));
}
END_TEST

START_TEST(bad_label_is_named)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    small_cnn(&d);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_create(&ex, &net, (bkm_net_engine_t)_i, NULL, &err), BKM_OK);
    bkm_net_exec_labels(ex, NULL)[1] = 7;
    ck_assert_int_eq(bkm_net_exec_prepare(ex, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "label[1] = 7"));
    bkm_net_exec_labels(ex, NULL)[1] = -1;
    ck_assert_int_eq(bkm_net_exec_prepare(ex, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "label[1] = -1"));
    bkm_net_exec_destroy(ex);
}
END_TEST

START_TEST(per_layer_times)
{
    bkm_net_desc_t d;
    bkm_net_exec_t *ex;
    bkm_err_t err = {0};
    bkm_net_step_t s;
    long steps = -1;
    small_cnn(&d);
    ex = net_test_exec(&d, (bkm_net_engine_t)_i, 0.3f);
    /* off by default: nothing accumulates */
    ck_assert_int_eq(bkm_net_exec_step(ex, &s, &err), BKM_OK);
    ck_assert(bkm_net_exec_layer_ms(ex, 0, BKM_NET_FWD, &steps) == 0.0);
    ck_assert_int_eq(steps, 0);
    bkm_net_exec_set_timing(ex, 1);
    ck_assert_int_eq(bkm_net_exec_step(ex, &s, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_step(ex, &s, &err), BKM_OK);
    const bkm_net_t *net = bkm_net_exec_net(ex);
    double sum = 0.0;
    for (int i = 0; i < d.n_layers; i++) {
        double f = bkm_net_exec_layer_ms(ex, i, BKM_NET_FWD, &steps);
        ck_assert_int_eq(steps, 2);
        if (d.layer[i].kind != BKM_NET_DROPOUT || _i != BKM_NET_ONEDNN)
            ck_assert_msg(f > 0.0, "layer %s fwd %g ms", d.layer[i].name, f);
        if (net->li[i].n_wei) {
            ck_assert_msg(bkm_net_exec_layer_ms(ex, i, BKM_NET_BWD_W, NULL) > 0.0, "%s bwd_w", d.layer[i].name);
            ck_assert_msg(bkm_net_exec_layer_ms(ex, i, BKM_NET_UPD, NULL) > 0.0, "%s update", d.layer[i].name);
        }
        for (int dir = 0; dir < BKM_NET_NDIR; dir++)
            sum += bkm_net_exec_layer_ms(ex, i, (bkm_net_dir_t)dir, NULL);
    }
    /* the first layer's input gradient is never computed */
    ck_assert(bkm_net_exec_layer_ms(ex, 0, BKM_NET_BWD_D, NULL) == 0.0);
    ck_assert(bkm_net_exec_layer_ms(ex, 3, BKM_NET_BWD_D, NULL) > 0.0);
    ck_assert(bkm_net_exec_layer_ms(ex, d.n_layers, BKM_NET_FWD, NULL) == 0.0);
    /* the layers add up to (at most) the phases of the last steps */
    ck_assert(sum <= s.fwd_ms + s.bwd_ms + s.update_ms + 1e3);
    bkm_net_exec_reset_times(ex);
    ck_assert(bkm_net_exec_layer_ms(ex, 0, BKM_NET_FWD, &steps) == 0.0 && steps == 0);
    bkm_net_exec_destroy(ex);
}
END_TEST

/* The MPI recipe's tables (docs/workloads.md §7): parameter counts, and native and oneDNN against the
 * reference (lr 0: gradients only, the caller updates). */
START_TEST(mnist_tables)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_err_t err = {0};
    bkm_net_desc_mnist_cnn(&d, 4, 0.0f);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(net.n_trainable, 21840);
    ck_assert_int_eq(net.classes, 10);
    ck_assert_int_eq(net.li[7].in.c * net.li[7].in.h * net.li[7].in.w, 320); /* fc1 takes 20x4x4 */
    agree_with_reference(&d, BKM_NET_NATIVE);
    agree_with_reference(&d, BKM_NET_ONEDNN);
    bkm_net_desc_mnist_mlp(&d, 3);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(net.n_trainable, 203530);
    agree_with_reference(&d, BKM_NET_NATIVE);
    agree_with_reference(&d, BKM_NET_ONEDNN);
}
END_TEST

/* mean log-softmax NLL of logits[mb][nc], double */
static double nll(const float *z, const int32_t *lab, int64_t mb, int64_t nc)
{
    double s = 0.0;
    for (int64_t i = 0; i < mb; i++) {
        double mx = z[i * nc], e = 0.0;
        for (int64_t j = 1; j < nc; j++)
            mx = fmax(mx, z[i * nc + j]);
        for (int64_t j = 0; j < nc; j++)
            e += exp(z[i * nc + j] - mx);
        s += mx + log(e) - z[i * nc + lab[i]];
    }
    return s / (double)mb;
}

/* Forward-only evaluation: the native logits equal the reference's, and the step's loss is the
 * NLL of their log-softmax; oneDNN refuses. */
START_TEST(forward_only_logits)
{
    bkm_net_desc_t d;
    bkm_err_t err = {0};
    bkm_net_step_t st;
    const float *zn = NULL, *zr = NULL;
    for (int model = 0; model < 2; model++) {
        if (model)
            bkm_net_desc_mnist_mlp(&d, 5);
        else
            bkm_net_desc_mnist_cnn(&d, 5, 0.0f);
        bkm_net_exec_t *ex = net_test_exec(&d, BKM_NET_NATIVE, 0.3f), *ref = net_test_exec(&d, BKM_NET_REF, 0.3f);
        ck_assert_msg(bkm_net_exec_forward(ex, &zn, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg(bkm_net_exec_forward(ref, &zr, &err) == BKM_OK, "%s", err.msg);
        ck_assert_ptr_nonnull(zn);
        ck_assert_ptr_nonnull(zr);
        ck_assert_msg(rel_diff(zn, zr, 50) < 1e-5, "logits differ: %g", rel_diff(zn, zr, 50));
        double want = nll(zr, bkm_net_exec_labels(ref, NULL), 5, 10);
        ck_assert_int_eq(bkm_net_exec_step(ref, &st, &err), BKM_OK);
        ck_assert_msg(fabs(st.loss - want) < 1e-5 * fabs(want), "loss %.8f vs NLL of the logits %.8f", st.loss, want);
        bkm_net_exec_destroy(ex);
        bkm_net_exec_destroy(ref);
    }
    bkm_net_exec_t *od = net_test_exec(&d, BKM_NET_ONEDNN, 0.3f);
    ck_assert_int_eq(bkm_net_exec_forward(od, &zn, &err), BKM_ENOTSUP);
    bkm_net_exec_destroy(od);
}
END_TEST

typedef struct hook_rec {
    bkm_net_exec_t *ex;
    int n, layer[8];
    float *snap;   /* the flat gradients as they were at each call of the layer */
    size_t np;
} hook_rec_t;

static void record_hook(void *ctx, int layer)
{
    hook_rec_t *h = ctx;
    const float *g = bkm_net_exec_grads(h->ex, NULL);
    const bkm_net_t *net = bkm_net_exec_net(h->ex);
    const bkm_net_layer_info_t *li = &net->li[layer];
    ck_assert_int_lt(h->n, 8);
    h->layer[h->n++] = layer;
    memcpy(h->snap + li->wei_off, g + li->wei_off, (size_t)li->n_wei * sizeof(float));
    memcpy(h->snap + li->bias_off, g + li->bias_off, (size_t)li->n_bias * sizeof(float));
}

/* The gradient hook fires once per parameter layer, in backward order, when that layer's gradients
 * are final (what it sees equals the gradients after the step). */
START_TEST(grad_hook_order)
{
    bkm_net_desc_t d;
    bkm_err_t err = {0};
    bkm_net_step_t st;
    bkm_net_desc_mnist_cnn(&d, 3, 0.0f);
    bkm_net_exec_t *ex = net_test_exec(&d, (bkm_net_engine_t)_i, 0.3f);
    hook_rec_t h = {ex, 0, {0}, NULL, 0};
    const float *g = bkm_net_exec_grads(ex, &h.np);
    h.snap = calloc(h.np, sizeof(float));
    bkm_net_exec_set_grad_hook(ex, record_hook, &h);
    ck_assert_int_eq(bkm_net_exec_step(ex, &st, &err), BKM_OK);
    ck_assert_int_eq(h.n, 4);
    ck_assert_int_eq(h.layer[0], 10); /* fc2 */
    ck_assert_int_eq(h.layer[1], 7);  /* fc1 */
    ck_assert_int_eq(h.layer[2], 3);  /* conv2 */
    ck_assert_int_eq(h.layer[3], 0);  /* conv1 */
    ck_assert_msg(rel_diff(h.snap, g, h.np) == 0.0, "gradients changed after the hook");
    bkm_net_exec_set_grad_hook(ex, NULL, NULL);
    h.n = 0;
    ck_assert_int_eq(bkm_net_exec_step(ex, &st, &err), BKM_OK);
    ck_assert_int_eq(h.n, 0);
    free(h.snap);
    bkm_net_exec_destroy(ex);
}
END_TEST

/* Central differences of the reference executor's loss against its gradients, for a sample of the
 * parameters of each of the two tables (every parameter tensor visited). */
START_TEST(mnist_gradcheck)
{
    bkm_net_desc_t d;
    bkm_err_t err = {0};
    bkm_net_step_t st;
    for (int model = 0; model < 3; model++) {
        if (model == 1)
            bkm_net_desc_mnist_mlp(&d, 2);
        else /* model 2: with the seed's dropout (fixed masks: a deterministic function) */
            bkm_net_desc_mnist_cnn(&d, 2, model == 2 ? 0.5f : 0.0f);
        bkm_net_exec_t *ex = net_test_exec(&d, BKM_NET_REF, 0.3f);
        const bkm_net_t *net = bkm_net_exec_net(ex);
        size_t np;
        float *p = bkm_net_exec_params(ex, &np);
        float *g = malloc(np * sizeof(float));
        int bad = 0, checked = 0;
        char first[200] = "";
        for (size_t i = 0; i < np; i++) /* smaller weights and a small step: no pooling winner or ReLU crosses over */
            p[i] *= 0.3f;
        ck_assert_int_eq(bkm_net_exec_step(ex, &st, &err), BKM_OK);
        memcpy(g, bkm_net_exec_grads(ex, NULL), np * sizeof(float));
        for (int i = 0; i < net->d.n_layers; i++) {
            const bkm_net_layer_info_t *li = &net->li[i];
            for (int k = 0; li->n_wei && k < 24; k++) {
                size_t off = k % 2 ? li->bias_off + (size_t)(k * 7) % (size_t)li->n_bias
                                   : li->wei_off + (size_t)(k * 7919) % (size_t)li->n_wei;
                const float keep = p[off], h = 1e-4f;
                double lp, lm, num;
                p[off] = keep + h;
                ck_assert_int_eq(bkm_net_exec_step(ex, &st, &err), BKM_OK);
                lp = st.loss;
                p[off] = keep - h;
                ck_assert_int_eq(bkm_net_exec_step(ex, &st, &err), BKM_OK);
                lm = st.loss;
                p[off] = keep;
                num = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
                checked++;
                if (fabs(num - g[off]) > 1e-2 * fmax(fabs(num), fabs(g[off])) + 2e-4 && bad++ == 0)
                    snprintf(first, sizeof first, "%s[%zu]: analytic %.6g numeric %.6g", net->d.layer[i].name, off,
                             g[off], num);
            }
        }
        ck_assert_msg(bad <= 1, "model %d: %d of %d gradients disagree; first %s", model, bad, checked, first);
        free(g);
        bkm_net_exec_destroy(ex);
    }
}
END_TEST

/* fc 8 -> dropout(p) -> fc 3 -> loss over a batch of @p mb */
static void drop_mlp(bkm_net_desc_t *d, int64_t mb, float p)
{
    memset(d, 0, sizeof *d);
    d->mb = mb, d->c = 2, d->h = 3, d->w = 2;
    bkm_net_desc_add(d, BKM_NET_FC, "fa", 8, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "dr", 0, 0, 0, 0)->drop = p;
    bkm_net_desc_add(d, BKM_NET_FC, "fb", 3, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

/* Training-mode dropout: native = reference (CNN, p 0.5); the masks depend on the key and the
 * global sample index only (a batch of 4 = two batches of 2 starting at samples 0 and 2), change
 * with the key, drop about p of the channels; forward-only evaluation ignores them; oneDNN refuses. */
START_TEST(dropout_training)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_err_t err = {0};
    bkm_net_step_t s4, s2a, s2b, sk;
    bkm_net_exec_t *ex = NULL;
    bkm_net_desc_mnist_cnn(&d, 4, 0.5f);
    agree_with_reference(&d, BKM_NET_NATIVE);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    ck_assert_int_eq(bkm_net_exec_create(&ex, &net, BKM_NET_ONEDNN, NULL, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "drop2d"));
    d.layer[4].drop = 1.0f;
    refused(&d, "dropout probability 1 outside [0, 1)");

    for (int eng = BKM_NET_NATIVE; eng <= BKM_NET_REF; eng += BKM_NET_REF - BKM_NET_NATIVE) {
        drop_mlp(&d, 4, 0.5f);
        bkm_net_exec_t *e4 = net_test_exec(&d, (bkm_net_engine_t)eng, 0.3f);
        drop_mlp(&d, 2, 0.5f);
        bkm_net_exec_t *a = net_test_exec(&d, (bkm_net_engine_t)eng, 0.3f),
                       *b = net_test_exec(&d, (bkm_net_engine_t)eng, 0.3f);
        memcpy(bkm_net_exec_input(a, NULL), bkm_net_exec_input(e4, NULL), 12 * sizeof(float));
        memcpy(bkm_net_exec_input(b, NULL), bkm_net_exec_input(e4, NULL) + 24, 12 * sizeof(float));
        memcpy(bkm_net_exec_input(a, NULL) + 12, bkm_net_exec_input(e4, NULL) + 12, 12 * sizeof(float));
        memcpy(bkm_net_exec_input(b, NULL) + 12, bkm_net_exec_input(e4, NULL) + 36, 12 * sizeof(float));
        for (int k = 0; k < 2; k++) {
            bkm_net_exec_labels(a, NULL)[k] = bkm_net_exec_labels(e4, NULL)[k];
            bkm_net_exec_labels(b, NULL)[k] = bkm_net_exec_labels(e4, NULL)[k + 2];
        }
        bkm_net_exec_set_dropout(e4, 99, 0);
        bkm_net_exec_set_dropout(a, 99, 0);
        bkm_net_exec_set_dropout(b, 99, 2);
        ck_assert_int_eq(bkm_net_exec_step(e4, &s4, &err), BKM_OK);
        ck_assert_int_eq(bkm_net_exec_step(a, &s2a, &err), BKM_OK);
        ck_assert_int_eq(bkm_net_exec_step(b, &s2b, &err), BKM_OK);
        ck_assert_msg(fabs(s4.loss - 0.5 * (s2a.loss + s2b.loss)) < 1e-6 * fabs(s4.loss),
                      "batch of 4 %.8f vs two of 2 %.8f", s4.loss, 0.5 * (s2a.loss + s2b.loss));
        bkm_net_exec_set_dropout(e4, 100, 0);
        ck_assert_int_eq(bkm_net_exec_step(e4, &sk, &err), BKM_OK);
        ck_assert_msg(sk.loss != s4.loss, "another key, the same masks");
        bkm_net_exec_destroy(e4);
        bkm_net_exec_destroy(a);
        bkm_net_exec_destroy(b);
    }
    /* about half the channels of the CNN's Dropout2d are zeroed: the gradient of conv2's bias is 0
     * exactly for a channel dropped in every sample; with 1 sample, about half the 20 channels */
    {
        int zero = 0, trials = 0;
        bkm_net_desc_mnist_cnn(&d, 1, 0.5f);
        bkm_net_exec_t *c = net_test_exec(&d, BKM_NET_NATIVE, 0.3f);
        const bkm_net_t *n = bkm_net_exec_net(c);
        for (uint64_t key = 1; key <= 10; key++) {
            bkm_net_exec_set_dropout(c, key, 0);
            ck_assert_int_eq(bkm_net_exec_step(c, &sk, &err), BKM_OK);
            const float *gb = bkm_net_exec_grads(c, NULL) + n->li[3].bias_off;
            for (int j = 0; j < 20; j++, trials++)
                zero += gb[j] == 0.0f;
        }
        ck_assert_msg(zero > trials / 4 && zero < 3 * trials / 4, "%d of %d channels dropped at p 0.5", zero, trials);
        /* evaluation ignores dropout: forward twice with different keys, the same logits */
        const float *z;
        float z1[10];
        bkm_net_exec_set_dropout(c, 5, 0);
        ck_assert_int_eq(bkm_net_exec_forward(c, &z, &err), BKM_OK);
        memcpy(z1, z, sizeof z1);
        bkm_net_exec_set_dropout(c, 6, 0);
        ck_assert_int_eq(bkm_net_exec_forward(c, &z, &err), BKM_OK);
        ck_assert_int_eq(memcmp(z1, z, sizeof z1), 0);
        bkm_net_exec_destroy(c);
    }
}
END_TEST

static Suite *net_suite(void)
{
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, table_derivations);
    tcase_add_test(tc, table_rejects_bad_input);
    tcase_add_test(tc, conv3d_seed_table);
    suite_add_tcase(s, tc);
    tc = tcase_create("exec");
    tcase_add_test(tc, native_matches_reference);
    tcase_add_test(tc, onednn_matches_reference);
    tcase_add_loop_test(tc, bad_label_is_named, BKM_NET_NATIVE, BKM_NET_REF + 1);
    tcase_add_loop_test(tc, per_layer_times, BKM_NET_NATIVE, BKM_NET_REF + 1);
    tcase_add_test(tc, mnist_tables);
    tcase_add_test(tc, forward_only_logits);
    tcase_add_loop_test(tc, grad_hook_order, BKM_NET_NATIVE, BKM_NET_NATIVE + 1);
    tcase_add_loop_test(tc, grad_hook_order, BKM_NET_REF, BKM_NET_REF + 1);
    tcase_add_test(tc, mnist_gradcheck);
    tcase_add_test(tc, dropout_training);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(net_suite)
