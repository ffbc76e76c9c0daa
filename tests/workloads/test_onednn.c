/* SPDX-License-Identifier: MIT */
/* oneDNN backend against the naive references: the conv2d op (every direction, odd shapes with
 * groups, strides and padding), the GEMM op, and one training step of a small CNN built from
 * oneDNN primitives (conv, ReLU, max pooling, FC, log-softmax + cross-entropy, SGD) compared with
 * the same step computed by the reference layers. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/kernels.h"

/* max |a - b| / max(1, max |b|) */
static double rel_diff(const float *a, const float *b, size_t n)
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

static float *copy_of(const float *p, size_t n)
{
    float *q = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(q);
    if (n)
        memcpy(q, p, n * sizeof(float));
    return q;
}

static void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* conv2d op                                                                                  */

static const char *conv_shapes[] = {
    "mb2ic3ih11oc5oh6kh3sh2ph1",          /* odd sizes, stride 2, padding 1 */
    "mb3g2ic4ih9iw7oc6oh9ow7kh3kw3ph1pw1", /* groups, non-square */
    "mb1ic16ih13oc32oh13kh3ph1",          /* blocked-friendly channels */
    "mb2ic5ih12oc7oh3kh5sh4ph2",          /* conv1-like: big kernel, stride 4 */
    "mb2g3ic6ih8oc9oh8kh1",               /* grouped 1x1 */
};

START_TEST(conv2d_op_matches_reference)
{
    const char *shape = conv_shapes[_i];
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *op = NULL;
    bkm_err_t err = {0};
    size_t n_src, n_wei, n_dst, n_bias, n;
    ck_assert_msg(bkm_kern_conv2d_desc_parse(shape, 0, &d, &err) == BKM_OK, "%s: %s", shape, err.msg);
    d.has_bias = _i != 4; /* the last shape runs without bias */
    ck_assert_msg(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_ALL, BKM_BACKEND_ONEDNN, NULL, &err) == BKM_OK, "%s: %s",
                  shape, err.msg);
    float *src = copy_of(bkm_kern_op_buffer(op, BKM_ARG_SRC, &n_src), n_src);
    float *wei = copy_of(bkm_kern_op_buffer(op, BKM_ARG_WEI, &n_wei), n_wei);
    float *bias = copy_of(bkm_kern_op_buffer(op, BKM_ARG_BIAS, &n_bias), n_bias);
    float *ddst = copy_of(bkm_kern_op_buffer(op, BKM_ARG_DIFF_DST, &n_dst), n_dst);
    ck_assert_uint_eq(n_bias, d.has_bias ? (size_t)d.oc : 0);
    ck_assert_int_eq(bkm_kern_op_prepare(op, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_FWD, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_D, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_W, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_finish(op, &err), BKM_OK);

    float *dst = calloc(n_dst, sizeof(float)), *dsrc = calloc(n_src, sizeof(float));
    float *dwei = calloc(n_wei, sizeof(float)), *dbias = calloc(n_bias + 1, sizeof(float));
    bkm_kern_conv2d_ref_fwd(&d, src, wei, bias, dst);
    bkm_kern_conv2d_ref_bwd_data(&d, ddst, wei, dsrc);
    bkm_kern_conv2d_ref_bwd_weights(&d, src, ddst, dwei, dbias);
    ck_assert_msg(rel_diff(bkm_kern_op_buffer(op, BKM_ARG_DST, &n), dst, n_dst) < 1e-5, "%s fwd", shape);
    ck_assert_msg(rel_diff(bkm_kern_op_buffer(op, BKM_ARG_DIFF_SRC, &n), dsrc, n_src) < 1e-5, "%s bwd_d", shape);
    ck_assert_msg(rel_diff(bkm_kern_op_buffer(op, BKM_ARG_DIFF_WEI, &n), dwei, n_wei) < 1e-5, "%s bwd_w", shape);
    if (d.has_bias)
        ck_assert_msg(rel_diff(bkm_kern_op_buffer(op, BKM_ARG_DIFF_BIAS, &n), dbias, n_bias) < 1e-5, "%s bias", shape);
    else
        ck_assert_ptr_null(bkm_kern_op_buffer(op, BKM_ARG_DIFF_BIAS, &n));
    /* provenance: oneDNN's implementation name */
    ck_assert_msg(strncmp(bkm_kern_op_impl(op, BKM_DIR_FWD), "onednn:", 7) == 0, "%s", bkm_kern_op_impl(op, BKM_DIR_FWD));
    ck_assert(bkm_kern_op_flops(op, BKM_DIR_BWD_W) == bkm_kern_conv2d_flops(&d));
    free(src), free(wei), free(bias), free(ddst), free(dst), free(dsrc), free(dwei), free(dbias);
    bkm_kern_op_destroy(op);
}
END_TEST

START_TEST(conv2d_op_single_direction_and_errors)
{
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *op = NULL;
    bkm_err_t err = {0};
    bkm_kern_params_t p;
    ck_assert_int_eq(bkm_kern_conv2d_desc_parse("mb2ic4ih6oc4oh6kh3ph1", 0, &d, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_BWD_D, BKM_BACKEND_ONEDNN, NULL, &err), BKM_OK);
    ck_assert_ptr_null(bkm_kern_op_buffer(op, BKM_ARG_DST, NULL));
    ck_assert_int_eq(bkm_kern_op_prepare(op, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_FWD, &err), BKM_EINVAL);   /* not created */
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_D, &err), BKM_OK);
    bkm_kern_op_destroy(op);
    /* the oneDNN backend has no tunables: a key is rejected by name */
    bkm_kern_params_init(&p);
    ck_assert_int_eq(bkm_kern_params_add(&p, "mc=96", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_FWD, BKM_BACKEND_ONEDNN, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mc"));
    ck_assert_ptr_null(op);
}
END_TEST

START_TEST(gemm_op_matches_reference)
{
    static const int64_t sizes[][3] = {{1, 1, 1}, {17, 33, 5}, {64, 48, 129}, {3, 200, 7}};
    const int64_t m = sizes[_i][0], n = sizes[_i][1], k = sizes[_i][2];
    bkm_kern_op_t *op = NULL;
    bkm_err_t err = {0};
    size_t na, nb, nc;
    ck_assert_msg(bkm_kern_gemm_op_create(&op, m, n, k, BKM_BACKEND_ONEDNN, NULL, &err) == BKM_OK, "%s", err.msg);
    const float *a = bkm_kern_op_buffer(op, BKM_ARG_SRC, &na), *b = bkm_kern_op_buffer(op, BKM_ARG_WEI, &nb);
    ck_assert_uint_eq(na, (size_t)(m * k));
    ck_assert_uint_eq(nb, (size_t)(k * n));
    ck_assert_int_eq(bkm_kern_op_prepare(op, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_FWD, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_D, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_kern_op_finish(op, &err), BKM_OK);
    float *c = calloc((size_t)(m * n), sizeof(float));
    bkm_kern_sgemm_ref('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    ck_assert(rel_diff(bkm_kern_op_buffer(op, BKM_ARG_DST, &nc), c, (size_t)(m * n)) < 1e-5);
    ck_assert_str_eq(bkm_kern_op_impl(op, BKM_DIR_FWD), "onednn:dnnl_sgemm");
    ck_assert(bkm_kern_op_flops(op, BKM_DIR_FWD) == 2.0 * (double)(m * n * k));
    free(c);
    bkm_kern_op_destroy(op);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* CNN chain vs the reference layers                                                          */

static void small_cnn(bkm_cnn_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->mb = 3;
    d->c = 3;
    d->h = 13;
    d->w = 11;
    d->lr = 0.1f;
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_CONV, 8, 3, 2, 1, "c1"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_RELU, 0, 0, 0, 0, "r1"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_MAXPOOL, 0, 3, 2, 0, "p1"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_CONV, 16, 3, 1, 1, "c2"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_RELU, 0, 0, 0, 0, "r2"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_DROPOUT, 0, 0, 0, 0, "d3"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_FC, 20, 0, 0, 0, "f3"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_RELU, 0, 0, 0, 0, "r3"};
    d->layer[d->n_layers++] = (bkm_cnn_layer_t){BKM_CNN_FC, 7, 0, 0, 0, "f4"};
}

/* Reference training step over user-layout tensors; w[i]/b[i] updated in place. */
static double ref_step(const bkm_cnn_desc_t *d, const float *input, const int32_t *labels, float **w, float **b)
{
    bkm_cnn_shape_t sh[BKM_CNN_MAX_LAYERS];
    float *act[BKM_CNN_MAX_LAYERS + 1], *g, *gin;
    size_t nact[BKM_CNN_MAX_LAYERS + 1];
    bkm_conv2d_desc_t cd[BKM_CNN_MAX_LAYERS];
    bkm_fc_desc_t fd[BKM_CNN_MAX_LAYERS];
    bkm_pool_desc_t pd[BKM_CNN_MAX_LAYERS];
    double loss = 0.0;
    int nl = d->n_layers;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_cnn_check(d, sh, &err), BKM_OK);
    nact[0] = (size_t)(d->mb * d->c * d->h * d->w);
    act[0] = copy_of(input, nact[0]);
    for (int i = 0; i < nl; i++) {
        const bkm_cnn_layer_t *l = &d->layer[i];
        int64_t ic = i ? sh[i - 1].c : d->c, ih = i ? sh[i - 1].h : d->h, iw = i ? sh[i - 1].w : d->w;
        nact[i + 1] = (size_t)(d->mb * sh[i].c * sh[i].h * sh[i].w);
        act[i + 1] = calloc(nact[i + 1], sizeof(float));
        switch (l->kind) {
        case BKM_CNN_CONV:
            cd[i] = (bkm_conv2d_desc_t){d->mb, 1, ic, ih, iw, l->out, sh[i].h, sh[i].w, l->k, l->k, l->s, l->s, l->p,
                                        l->p, 1, ""};
            bkm_kern_conv2d_ref_fwd(&cd[i], act[i], w[i], b[i], act[i + 1]);
            break;
        case BKM_CNN_FC:
            fd[i] = (bkm_fc_desc_t){d->mb, ic * ih * iw, l->out, 1};
            bkm_kern_fc_ref_fwd(&fd[i], act[i], w[i], b[i], act[i + 1]);
            break;
        case BKM_CNN_MAXPOOL:
            ck_assert_int_eq(bkm_kern_pool_desc_init(&pd[i], d->mb, ic, ih, iw, l->k, l->s, l->p, &err), BKM_OK);
            bkm_kern_maxpool_ref_fwd(&pd[i], act[i], act[i + 1]);
            break;
        case BKM_CNN_RELU:
            bkm_kern_relu_ref_fwd(nact[i], act[i], act[i + 1]);
            break;
        default:
            memcpy(act[i + 1], act[i], nact[i] * sizeof(float));
            break;
        }
    }
    int64_t nc = d->layer[nl - 1].out;
    float *prob = calloc(nact[nl], sizeof(float));
    g = calloc(nact[nl], sizeof(float));
    ck_assert_int_eq(bkm_kern_softmax_xent_ref_fwd(d->mb, nc, act[nl], labels, prob, &loss, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_softmax_xent_bwd(d->mb, nc, prob, labels, g, &err), BKM_OK);
    for (int i = nl - 1; i >= 0; i--) {
        const bkm_cnn_layer_t *l = &d->layer[i];
        size_t nw = 0, nb = (size_t)l->out;
        float *dw = NULL, *db = NULL;
        gin = calloc(nact[i], sizeof(float));
        switch (l->kind) {
        case BKM_CNN_CONV:
            nw = (size_t)(cd[i].oc * cd[i].ic * cd[i].kh * cd[i].kw);
            dw = calloc(nw, sizeof(float)), db = calloc(nb, sizeof(float));
            bkm_kern_conv2d_ref_bwd_weights(&cd[i], act[i], g, dw, db);
            bkm_kern_conv2d_ref_bwd_data(&cd[i], g, w[i], gin);
            break;
        case BKM_CNN_FC:
            nw = (size_t)(fd[i].in * fd[i].out);
            dw = calloc(nw, sizeof(float)), db = calloc(nb, sizeof(float));
            bkm_kern_fc_ref_bwd_weights(&fd[i], act[i], g, dw, db);
            bkm_kern_fc_ref_bwd_data(&fd[i], g, w[i], gin);
            break;
        case BKM_CNN_MAXPOOL:
            bkm_kern_maxpool_ref_bwd(&pd[i], act[i], g, gin);
            break;
        case BKM_CNN_RELU:
            bkm_kern_relu_ref_bwd(nact[i], act[i + 1], g, gin);
            break;
        default:
            memcpy(gin, g, nact[i] * sizeof(float));
            break;
        }
        if (dw) {
            for (size_t j = 0; j < nw; j++)
                w[i][j] -= d->lr * dw[j];
            for (size_t j = 0; j < nb; j++)
                b[i][j] -= d->lr * db[j];
        }
        free(dw), free(db), free(g);
        g = gin;
    }
    free(g), free(prob);
    for (int i = 0; i <= nl; i++)
        free(act[i]);
    return loss;
}

START_TEST(cnn_step_matches_reference_layers)
{
    bkm_cnn_desc_t d;
    bkm_onednn_cnn_t *net = NULL;
    bkm_err_t err = {0};
    float *w[BKM_CNN_MAX_LAYERS] = {0}, *b[BKM_CNN_MAX_LAYERS] = {0};
    size_t nw[BKM_CNN_MAX_LAYERS] = {0}, nb[BKM_CNN_MAX_LAYERS] = {0}, n_in, n_lab;
    small_cnn(&d);
    ck_assert_msg(bkm_kern_onednn_cnn_create(&net, &d, &err) == BKM_OK, "%s", err.msg);
    float *input = bkm_kern_onednn_cnn_input(net, &n_in);
    int32_t *labels = bkm_kern_onednn_cnn_labels(net, &n_lab);
    ck_assert_uint_eq(n_in, 3 * 3 * 13 * 11);
    ck_assert_uint_eq(n_lab, 3);
    fill(input, n_in, 1);
    for (size_t i = 0; i < n_lab; i++)
        labels[i] = (int32_t)((i * 5 + 2) % 7);
    for (int i = 0; i < d.n_layers; i++) {
        float *pw = bkm_kern_onednn_cnn_param(net, i, BKM_ARG_WEI, &nw[i]);
        float *pb = bkm_kern_onednn_cnn_param(net, i, BKM_ARG_BIAS, &nb[i]);
        if (!pw)
            continue;
        fill(pw, nw[i], 100u + (unsigned)i);
        for (size_t j = 0; j < nw[i]; j++)
            pw[j] *= 0.3f;
        fill(pb, nb[i], 200u + (unsigned)i);
        w[i] = copy_of(pw, nw[i]);
        b[i] = copy_of(pb, nb[i]);
    }
    ck_assert_int_eq(bkm_kern_cnn_n_params(&d), 8 * 27 + 8 + 16 * 72 + 16 + 20 * 16 * 3 * 2 + 20 + 7 * 20 + 7);

    float loss = 0.0f;
    bkm_cnn_times_t t;
    ck_assert_msg(bkm_kern_onednn_cnn_prepare(net, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_kern_onednn_cnn_step(net, &loss, &t, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_onednn_cnn_finish(net, &err), BKM_OK);
    ck_assert(t.fwd_ms >= 0.0 && t.bwd_ms >= 0.0 && t.update_ms >= 0.0);
    ck_assert_ptr_nonnull(strstr(bkm_kern_onednn_cnn_impl(net), "onednn:"));

    double ref_loss = ref_step(&d, input, labels, w, b);
    ck_assert_msg(fabs(loss - ref_loss) <= 1e-4 * fabs(ref_loss), "loss %g vs reference %g", (double)loss, ref_loss);
    for (int i = 0; i < d.n_layers; i++) {
        if (!w[i])
            continue;
        float *pw = bkm_kern_onednn_cnn_param(net, i, BKM_ARG_WEI, NULL);
        float *pb = bkm_kern_onednn_cnn_param(net, i, BKM_ARG_BIAS, NULL);
        ck_assert_msg(rel_diff(pw, w[i], nw[i]) < 1e-5, "layer %d weights after one step", i);
        ck_assert_msg(rel_diff(pb, b[i], nb[i]) < 1e-5, "layer %d bias after one step", i);
        free(w[i]), free(b[i]);
    }
    bkm_kern_onednn_cnn_destroy(net);
}
END_TEST

START_TEST(cnn_rejects_bad_descriptions)
{
    bkm_cnn_desc_t d;
    bkm_onednn_cnn_t *net = NULL;
    bkm_err_t err = {0};
    small_cnn(&d);
    d.layer[d.n_layers - 1].kind = BKM_CNN_RELU;
    ck_assert_int_eq(bkm_kern_onednn_cnn_create(&net, &d, &err), BKM_EINVAL);
    ck_assert_ptr_null(net);
    small_cnn(&d);
    d.layer[0].k = 40; /* window larger than the padded input */
    ck_assert_int_eq(bkm_kern_cnn_check(&d, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "c1"));
    /* a label outside [0, classes) is named at prepare */
    small_cnn(&d);
    ck_assert_int_eq(bkm_kern_onednn_cnn_create(&net, &d, &err), BKM_OK);
    bkm_kern_onednn_cnn_labels(net, NULL)[1] = 7;
    ck_assert_int_eq(bkm_kern_onednn_cnn_prepare(net, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "label[1] = 7"));
    bkm_kern_onednn_cnn_destroy(net);
}
END_TEST

static Suite *onednn_suite(void)
{
    Suite *s = suite_create("onednn");
    TCase *tc = tcase_create("op");
    tcase_add_loop_test(tc, conv2d_op_matches_reference, 0, (int)(sizeof conv_shapes / sizeof conv_shapes[0]));
    tcase_add_test(tc, conv2d_op_single_direction_and_errors);
    tcase_add_loop_test(tc, gemm_op_matches_reference, 0, 4);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("cnn");
    tcase_add_test(tc, cnn_step_matches_reference_layers);
    tcase_add_test(tc, cnn_rejects_bad_descriptions);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(onednn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
