/* SPDX-License-Identifier: MIT */
/* LSTM as a layer kind of the network tables: the sequence input and the LSTM / L1-loss rows
 * checked once (shapes, parameters, FLOPs, every error naming its value), the native and oneDNN
 * executors against the reference executor over the same small odd tables (losses, gradients,
 * updated parameters over two steps, inference), a finite-difference check of the executor's
 * gradients on a few time steps, and the seed table (bkm_net_desc_lstm_seed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/net.h"
#include "kern_test.h"

/* Small odd sequence network: T=4 steps x mb=3 x 5 features, a 2-layer LSTM stack (H=7), dropout,
 * a 1-layer LSTM (H=6), the L1 loss; an SGD update (lr) or none. */
static void small_seq(bkm_net_desc_t *d, float lr, int grad_input, int inference)
{
    memset(d, 0, sizeof *d);
    d->mb = 3;
    d->c = 5;
    d->h = d->w = 1;
    d->t = 4;
    d->lr = lr;
    d->grad_input = grad_input;
    d->inference = inference;
    bkm_net_desc_add(d, BKM_NET_LSTM, "lstm1", 7, 2, 0, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "drop", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LSTM, "lstm2", 6, 1, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS_L1, "l1", 0, 0, 0, 0);
}

START_TEST(seq_table_derivations)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_lstm_desc_t l1, l2;
    bkm_err_t err = {0};
    small_seq(&d, 0.1f, 0, 0);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&l1, 3, 4, 5, 7, 2, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&l2, 3, 4, 7, 6, 1, &err), BKM_OK);
    /* shapes: a sequence of c features x h = t steps, nsp 1 */
    ck_assert_int_eq(net.li[0].in.nsp, 1);
    ck_assert_int_eq(net.li[0].in.h, 4);
    ck_assert_int_eq(net.li[0].out.c, 7);
    ck_assert_int_eq(net.li[2].in.c, 7);
    ck_assert_int_eq(net.li[2].out.c, 6);
    ck_assert_int_eq(net.li[2].out.h, 4);
    ck_assert_uint_eq(net.n_input, 4 * 3 * 5);
    /* parameters: the kernels' flat arrays, no separate bias */
    ck_assert_int_eq(net.li[0].n_wei, (int64_t)bkm_kern_lstm_param_count(&l1));
    ck_assert_int_eq(net.li[0].n_wei, 4 * 7 * (5 + 7) + 4 * 7 + 4 * 7 * (7 + 7) + 4 * 7);
    ck_assert_int_eq(net.li[0].n_bias, 0);
    ck_assert_int_eq(net.li[2].n_wei, 4 * 6 * (7 + 6) + 4 * 6);
    ck_assert_int_eq(net.n_trainable, net.li[0].n_wei + net.li[2].n_wei);
    ck_assert_int_eq(net.classes, 6);
    /* FLOPs: forward = the kernels' formula; the backward through time is one bwd_d call of 2x
     * forward, less the first layer's input data gradient (T*2*N*4H*I) when nothing needs it */
    ck_assert(net.li[0].flops[BKM_NET_FWD] == bkm_kern_lstm_flops(&l1, 0));
    ck_assert(net.li[2].flops[BKM_NET_FWD] == bkm_kern_lstm_flops(&l2, 0));
    ck_assert(net.li[0].flops[BKM_NET_BWD_W] == 0.0);
    ck_assert(net.li[0].flops[BKM_NET_BWD_D] == 2.0 * bkm_kern_lstm_flops(&l1, 0) - 4.0 * 2 * 3 * 4 * 7 * 5);
    ck_assert(net.li[2].flops[BKM_NET_BWD_D] == 2.0 * bkm_kern_lstm_flops(&l2, 0));
    ck_assert(net.li[0].flops[BKM_NET_UPD] == 2.0 * (double)net.li[0].n_wei);
    /* with the input gradient, training is exactly the kernels' 3x forward */
    small_seq(&d, 0.0f, 1, 0);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert(net.flops_train == bkm_kern_lstm_flops(&l1, 1) + bkm_kern_lstm_flops(&l2, 1));
    ck_assert(net.flops_fwd == bkm_kern_lstm_flops(&l1, 0) + bkm_kern_lstm_flops(&l2, 0));
    /* inference: forward only */
    small_seq(&d, 0.0f, 1, 1);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert(net.flops_train == net.flops_fwd);
    ck_assert(net.li[0].flops[BKM_NET_BWD_D] == 0.0 && !net.li[0].need_bwd);
    /* the seed table: 64,50,500,500, 1 layer: 12.8 GF forward, 38.4 GF training */
    bkm_net_desc_lstm_seed(&d, 64, 50, 500, 500, 1, 0);
    ck_assert_msg(bkm_net_init(&net, &d, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(fabs(net.flops_fwd - 12.8e9) < 1e3, "%g", net.flops_fwd);
    ck_assert_msg(fabs(net.flops_train - 38.4e9) < 1e3, "%g", net.flops_train);
    ck_assert_int_eq(net.d.layer[0].kind, BKM_NET_LSTM);
    ck_assert_int_eq(net.d.layer[1].kind, BKM_NET_LOSS_L1);
    ck_assert_str_eq(bkm_net_kind_name(BKM_NET_LSTM), "lstm");
    ck_assert(bkm_net_kind_is_loss(BKM_NET_LOSS_L1));
}
END_TEST

/* bkm_net_init fails with BKM_EINVAL and a message containing @p want. */
static void rejects(const bkm_net_desc_t *d, const char *want)
{
    bkm_net_t net;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_net_init(&net, d, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, want) != NULL, "'%s' not in '%s'", want, err.msg);
}

START_TEST(seq_table_rejects_bad_input)
{
    bkm_net_desc_t d;
    small_seq(&d, 0.0f, 0, 0);
    d.layer[0].out = 0;
    rejects(&d, "out=0");
    small_seq(&d, 0.0f, 0, 0);
    d.layer[2].k = 0;
    rejects(&d, "k=0");
    small_seq(&d, 0.0f, 0, 0);
    d.layer[0].out = (int64_t)1 << 40;
    rejects(&d, "lstm1");
    small_seq(&d, 0.0f, 0, 0);
    d.t = -2;
    rejects(&d, "t=-2");
    small_seq(&d, 0.0f, 0, 0);
    d.h = 3; /* a sequence has h = w = 1 */
    rejects(&d, "t=4");
    /* an LSTM needs a sequence; a sequence takes no FC / conv; the L1 loss needs a sequence */
    memset(&d, 0, sizeof d);
    d.mb = 2, d.c = 3, d.h = 4, d.w = 4;
    bkm_net_desc_add(&d, BKM_NET_LSTM, "rnn", 5, 1, 0, 0);
    bkm_net_desc_add(&d, BKM_NET_LOSS_L1, "l1", 0, 0, 0, 0);
    rejects(&d, "rnn");
    memset(&d, 0, sizeof d);
    d.mb = 2, d.c = 3, d.h = 4, d.w = 4;
    bkm_net_desc_add(&d, BKM_NET_FC, "fc", 5, 0, 0, 0);
    bkm_net_desc_add(&d, BKM_NET_LOSS_L1, "l1", 0, 0, 0, 0);
    rejects(&d, "L1 loss");
    d.inference = 1;
    d.layer[1].kind = BKM_NET_LOSS;
    rejects(&d, "inference=1");
    small_seq(&d, 0.0f, 0, 0);
    d.layer[1] = d.layer[0];
    d.layer[1].kind = BKM_NET_FC;
    snprintf(d.layer[1].name, sizeof d.layer[1].name, "fcs");
    rejects(&d, "fcs");
    small_seq(&d, 0.0f, 0, 0);
    d.layer[1].kind = BKM_NET_CONV;
    d.layer[1].k = d.layer[1].s = 1;
    d.layer[1].out = 2;
    rejects(&d, "a sequence");
}
END_TEST

/* Two steps of @p d on @p eng and on the reference agree (net_test_agree); the reference loss is
 * positive; each LSTM layer's forward and its whole backward through time (bwd_d) were timed. */
static void agree_with_reference(const bkm_net_desc_t *d, bkm_net_engine_t eng)
{
    bkm_net_exec_t *ex, *ref;
    bkm_net_step_t s1, r1;
    net_test_agree(d, eng, 0.4f, &ex, &ref, &s1, &r1);
    ck_assert_msg(isfinite(r1.loss) && r1.loss > 0.0, "reference loss %g", r1.loss);
    const bkm_net_t *net = bkm_net_exec_net(ex);
    for (int i = 0; i < net->d.n_layers; i++) {
        long steps = 0;
        double fwd = bkm_net_exec_layer_ms(ex, i, BKM_NET_FWD, &steps), bwd = bkm_net_exec_layer_ms(ex, i, BKM_NET_BWD_D, NULL);
        if (!net->li[i].n_wei)
            continue;
        ck_assert_int_eq(steps, 2);
        ck_assert_msg(fwd > 0.0 && (d->inference ? bwd == 0.0 : bwd > 0.0), "%s fwd %g bwd %g ms", net->d.layer[i].name,
                      fwd, bwd);
    }
    bkm_net_exec_destroy(ex);
    bkm_net_exec_destroy(ref);
}

START_TEST(seq_matches_reference)
{
    bkm_net_engine_t eng = (bkm_net_engine_t)_i;
    bkm_net_desc_t d;
    small_seq(&d, 0.2f, 0, 0);
    agree_with_reference(&d, eng);
    small_seq(&d, 0.0f, 1, 0);
    agree_with_reference(&d, eng);
    small_seq(&d, 0.0f, 1, 1);
    agree_with_reference(&d, eng);
}
END_TEST

/* L1 loss of one step of @p ex (no update: lr 0). */
static double loss_of(bkm_net_exec_t *ex)
{
    bkm_net_step_t st;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_net_exec_step(ex, &st, &err) == BKM_OK, "%s", err.msg);
    return st.loss;
}

/* Central differences of the executor's loss against its gradients, for parameters of both LSTM
 * rows (input, recurrent weights and biases of each stacked layer) over T = 3 steps. The L1 loss
 * is piecewise linear in the outputs: eps is small against the distance of every output from its
 * target at this seed, so no kink lies inside [p - eps, p + eps]. */
START_TEST(seq_gradient_check)
{
    bkm_net_engine_t eng = (bkm_net_engine_t)_i;
    bkm_net_desc_t d;
    bkm_err_t err = {0};
    small_seq(&d, 0.0f, 0, 0);
    d.t = 3;
    bkm_net_exec_t *ex = net_test_exec(&d, eng, 0.4f);
    const bkm_net_t *net = bkm_net_exec_net(ex);
    size_t n;
    float *p = bkm_net_exec_params(ex, &n);
    loss_of(ex);
    ck_assert_int_eq(bkm_net_exec_finish(ex, &err), BKM_OK);
    float *g = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(g);
    memcpy(g, bkm_net_exec_grads(ex, NULL), n * sizeof(float));
    int checked = 0;
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        if (!li->n_wei)
            continue;
        for (int64_t q = 0; q < li->n_wei; q += 37) {
            size_t k = li->wei_off + (size_t)q;
            const float keep = p[k], eps = 2e-3f;
            p[k] = keep + eps;
            ck_assert_int_eq(bkm_net_exec_prepare(ex, &err), BKM_OK);
            double lp = loss_of(ex);
            p[k] = keep - eps;
            ck_assert_int_eq(bkm_net_exec_prepare(ex, &err), BKM_OK);
            double lm = loss_of(ex);
            p[k] = keep;
            double fd = (lp - lm) / (2.0 * (double)eps);
            ck_assert_msg(fabs(fd - (double)g[k]) <= 1e-5 + 2e-3 * fabs(fd), "%s %s param %lld: analytic %g, finite "
                          "difference %g", bkm_net_engine_name(eng), net->d.layer[i].name, (long long)q, (double)g[k],
                          fd);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 20);
    free(g);
    bkm_net_exec_destroy(ex);
}
END_TEST

/* The native and oneDNN executors of the seed table at a small shape agree on the first loss. */
START_TEST(seed_table_engines_agree)
{
    bkm_net_desc_t d;
    bkm_net_exec_t *a, *b;
    bkm_lstm_desc_t ld;
    bkm_err_t err = {0};
    bkm_net_desc_lstm_seed(&d, 5, 7, 9, 11, 2, 0);
    a = net_test_exec(&d, BKM_NET_NATIVE, 0.4f);
    b = net_test_exec(&d, BKM_NET_ONEDNN, 0.4f);
    double la = loss_of(a), lb = loss_of(b);
    ck_assert_msg(fabs(la - lb) <= 1e-3 * fabs(lb), "native %.7f vs oneDNN %.7f", la, lb);
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&ld, 5, 7, 9, 11, 2, &err), BKM_OK);
    ck_assert(bkm_net_exec_net(a)->flops_train == bkm_kern_lstm_flops(&ld, 1));
    bkm_net_exec_destroy(a);
    bkm_net_exec_destroy(b);
}
END_TEST

static Suite *net_lstm_suite(void)
{
    Suite *s = suite_create("net_lstm");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, seq_table_derivations);
    tcase_add_test(tc, seq_table_rejects_bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("exec");
    tcase_add_loop_test(tc, seq_matches_reference, BKM_NET_NATIVE, BKM_NET_ONEDNN + 1);
    tcase_add_loop_test(tc, seq_gradient_check, BKM_NET_NATIVE, BKM_NET_REF + 1);
    tcase_add_test(tc, seed_table_engines_agree);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(net_lstm_suite)
