/* SPDX-License-Identifier: MIT */
/* CNN layers: every native layer, forward and backward, against its naive reference; max-pool
 * ties and padding, in-place ReLU, FC with and without bias on every ISA, dropout determinism
 * across thread counts, softmax + cross-entropy, SGD with momentum and weight decay. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

/* rnd_nr(n, seed, 1), with few distinct values when @p quantize: many ties in pooling windows. */
static float *rand_buf(size_t n, unsigned seed, int quantize)
{
    float *p = rnd_nr(n, seed, 1.0f);
    for (size_t i = 0; quantize && i < n; i++)
        p[i] = floorf(p[i] * 2.0f);
    return p;
}

static void assert_close(const char *what, const float *got, const float *ref, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - (double)ref[i]) <= tol))
            ck_abort_msg("%s: element %zu is %.7g, reference %.7g", what, i, (double)got[i], (double)ref[i]);
}

/* ---------------------------------------------------------------------------------------- */

static const int64_t pool_shapes[][7] = {
    /* mb, c, ih, iw, k, s, p */
    {2, 3, 13, 13, 3, 2, 0}, /* AlexNet pool on an odd map */
    {1, 2, 7, 9, 3, 2, 1},   /* padding */
    {3, 1, 8, 8, 2, 2, 0},   /* non-overlapping */
    {1, 4, 5, 6, 3, 1, 0},   /* stride 1 */
    {1, 2, 55, 55, 3, 2, 0}, /* AlexNet pool1's planes: 27 columns = a full 16-lane vector + 11 */
    {2, 2, 27, 27, 3, 2, 0}, /* pool2's: 13 columns */
    {1, 2, 6, 41, 3, 1, 0},  /* stride 1 over 39 columns */
};
#define N_POOL_SHAPES ((int)(sizeof pool_shapes / sizeof pool_shapes[0]))

START_TEST(maxpool_matches_reference)
{
    const int64_t *s = pool_shapes[_i % N_POOL_SHAPES];
    bkm_pool_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, s[0], s[1], s[2], s[3], s[4], s[5], s[6], &err), BKM_OK);
    {
        const size_t ni = (size_t)(d.mb * d.c * d.ih * d.iw), no = (size_t)(d.mb * d.c * d.oh * d.ow);
        float *src = rand_buf(ni, 1, _i >= N_POOL_SHAPES), *dst = malloc(no * 4), *ref = malloc(no * 4);
        float *dd = rand_buf(no, 2, 0), *ds = rand_buf(ni, 3, 0), *ds_ref = malloc(ni * 4);
        int32_t *am = malloc(no * sizeof(int32_t));
        bkm_kern_maxpool_fwd(&d, src, dst, am);
        bkm_kern_maxpool_ref_fwd(&d, src, ref);
        assert_close("maxpool fwd", dst, ref, no, 0.0);
        bkm_kern_maxpool_bwd(&d, dd, am, ds);
        bkm_kern_maxpool_ref_bwd(&d, src, dd, ds_ref);
        assert_close("maxpool bwd", ds, ds_ref, ni, 1e-6);
        free(src), free(dst), free(ref), free(dd), free(ds), free(ds_ref), free(am);
    }
}
END_TEST

/* Windows of only -inf or NaN never see a "greater" tap: like the reference, the output is the
 * window's first element and the gradient goes there (the vector kernels' fallback). */
START_TEST(maxpool_nonfinite_windows)
{
    bkm_pool_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 1, 2, 9, 55, 3, 2, 0, &err), BKM_OK);
    {
        const size_t ni = (size_t)(d.mb * d.c * d.ih * d.iw), no = (size_t)(d.mb * d.c * d.oh * d.ow);
        float *src = rand_buf(ni, 11, 0), *dst = malloc(no * 4), *ref = malloc(no * 4);
        float *dd = rand_buf(no, 12, 0), *ds = malloc(ni * 4), *ds_ref = malloc(ni * 4);
        int32_t *am = malloc(no * sizeof(int32_t));
        /* plane 0: windows 0..8 of output row 0 all -inf (then numbers: the numbers win);
         * plane 1: columns 30.. all NaN, so every window there is all NaN (the reference keeps a
         * leading NaN even before numbers, the kernels skip it: windows that mix them differ) */
        for (int64_t y = 0; y < 3; y++)
            for (int64_t x = 0; x < 20; x++)
                src[y * d.iw + x] = -INFINITY;
        for (int64_t y = 0; y < d.ih; y++)
            for (int64_t x = 30; x < d.iw; x++)
                src[(d.ih + y) * d.iw + x] = NAN;
        bkm_kern_maxpool_fwd(&d, src, dst, am);
        bkm_kern_maxpool_ref_fwd(&d, src, ref);
        ck_assert_msg(memcmp(dst, ref, no * 4) == 0, "maxpool fwd differs from the reference on -inf/NaN windows");
        bkm_kern_maxpool_bwd(&d, dd, am, ds);
        bkm_kern_maxpool_ref_bwd(&d, src, dd, ds_ref);
        assert_close("maxpool bwd -inf/NaN", ds, ds_ref, ni, 1e-6);
        free(src), free(dst), free(ref), free(dd), free(ds), free(ds_ref), free(am);
    }
}
END_TEST

START_TEST(pool_desc_errors)
{
    bkm_pool_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 2, 64, 55, 55, 3, 2, 0, &err), BKM_OK);
    ck_assert_int_eq(d.oh, 27);
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 2, 64, 2, 2, 3, 2, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "k3"));
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 2, 64, 8, 8, 3, 0, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "s0"));
    ck_assert_int_eq(bkm_kern_pool_desc_init(&d, 0, 64, 8, 8, 3, 2, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mb0"));
}
END_TEST

START_TEST(relu_matches_reference_in_place)
{
    const size_t n = 1001;
    float *x = rand_buf(n, 4, 0), *y = malloc(n * 4), *ref = malloc(n * 4), *dd = rand_buf(n, 5, 0);
    float *ds = malloc(n * 4), *ds_ref = malloc(n * 4);
    bkm_kern_relu_ref_fwd(n, x, ref);
    bkm_kern_relu_fwd(n, x, y);
    assert_close("relu fwd", y, ref, n, 0.0);
    bkm_kern_relu_fwd(n, x, x); /* in place */
    assert_close("relu fwd in place", x, ref, n, 0.0);
    bkm_kern_relu_bwd(n, y, dd, ds);
    bkm_kern_relu_ref_bwd(n, y, dd, ds_ref);
    assert_close("relu bwd", ds, ds_ref, n, 0.0);
    bkm_kern_relu_bwd(n, y, dd, dd); /* in place */
    assert_close("relu bwd in place", dd, ds_ref, n, 0.0);
    free(x), free(y), free(ref), free(dd), free(ds), free(ds_ref);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static void check_fc(int64_t mb, int64_t in, int64_t out, int has_bias, const char *isa)
{
    bkm_fc_desc_t d = {mb, in, out, has_bias};
    bkm_kern_params_t p;
    bkm_kern_fc_t *fc = NULL;
    bkm_err_t err = {0};
    float *x = rand_buf((size_t)(mb * in), 6, 0), *w = rand_buf((size_t)(out * in), 7, 0),
          *b = rand_buf((size_t)out, 8, 0);
    float *y = rand_buf((size_t)(mb * out), 9, 0), *yr = malloc((size_t)(mb * out) * 4);
    float *dy = rand_buf((size_t)(mb * out), 10, 0), *dx = malloc((size_t)(mb * in) * 4),
          *dxr = malloc((size_t)(mb * in) * 4);
    float *dw = malloc((size_t)(out * in) * 4), *dwr = malloc((size_t)(out * in) * 4);
    float *db = malloc((size_t)out * 4), *dbr = malloc((size_t)out * 4);
    bkm_kern_params_init(&p);
    /* the suite registers only the ISAs this CPU has (layers_suite) */
    ck_assert_msg(isa == NULL || bkm_kern_params_add(&p, isa, &err) == BKM_OK, "%s: %s", isa, err.msg);
    ck_assert_msg(bkm_kern_fc_create(&fc, &d, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_fc_fwd(fc, x, w, b, y, &err), BKM_OK);
    bkm_kern_fc_ref_fwd(&d, x, w, b, yr);
    assert_close("fc fwd", y, yr, (size_t)(mb * out), 1e-5 + 4e-7 * (double)in);
    ck_assert_int_eq(bkm_kern_fc_bwd_data(fc, dy, w, dx, &err), BKM_OK);
    bkm_kern_fc_ref_bwd_data(&d, dy, w, dxr);
    assert_close("fc bwd_d", dx, dxr, (size_t)(mb * in), 1e-5 + 4e-7 * (double)out);
    ck_assert_int_eq(bkm_kern_fc_bwd_weights(fc, x, dy, dw, db, &err), BKM_OK);
    bkm_kern_fc_ref_bwd_weights(&d, x, dy, dwr, dbr);
    assert_close("fc bwd_w", dw, dwr, (size_t)(out * in), 1e-5 + 4e-7 * (double)mb);
    if (has_bias)
        assert_close("fc bwd_w bias", db, dbr, (size_t)out, 1e-5 + 4e-7 * (double)mb);
    ck_assert_double_eq(bkm_kern_fc_flops(&d), 2.0 * (double)mb * (double)in * (double)out);
    bkm_kern_fc_destroy(fc);
    free(x), free(w), free(b), free(y), free(yr), free(dy), free(dx), free(dxr), free(dw), free(dwr), free(db),
        free(dbr);
}

START_TEST(fc_matches_reference)
{
    static const char *const isas[] = {NULL, "isa=generic", "isa=avx2", "isa=avx512"};
    check_fc(5, 37, 11, 1, isas[_i]);
    check_fc(1, 3, 1, 0, isas[_i]);
    check_fc(33, 130, 70, 1, isas[_i]);
    /* the small-batch path's largest batch (several column blocks, a partial one, a lane tail)
     * and the first batch of the GEMM path */
    check_fc(8, 301, 19, 1, isas[_i]);
    check_fc(9, 301, 19, 1, isas[_i]);
}
END_TEST

START_TEST(fc_errors)
{
    bkm_fc_desc_t d = {4, 0, 3, 1};
    bkm_kern_params_t p;
    bkm_kern_fc_t *fc = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_fc_create(&fc, &d, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "in0"));
    d.in = 8;
    bkm_kern_params_init(&p);
    ck_assert_int_eq(bkm_kern_params_add(&p, "kc=-1", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_fc_create(&fc, &d, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "kc=-1"));
    ck_assert_ptr_null(fc);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

START_TEST(dropout_is_seeded_and_thread_independent)
{
    const size_t n = 100000;
    float *x = rand_buf(n, 11, 0), *y1 = malloc(n * 4), *y2 = malloc(n * 4), *yr = malloc(n * 4);
    float *dd = rand_buf(n, 12, 0), *ds = malloc(n * 4);
    uint8_t *m1 = malloc(n), *m2 = malloc(n);
    bkm_err_t err = {0};
    size_t kept = 0;
    omp_set_num_threads(1);
    ck_assert_int_eq(bkm_kern_dropout_fwd(n, 0.5f, 42, x, y1, m1, &err), BKM_OK);
    omp_set_num_threads(3);
    ck_assert_int_eq(bkm_kern_dropout_fwd(n, 0.5f, 42, x, y2, m2, &err), BKM_OK);
    ck_assert_int_eq(memcmp(y1, y2, n * 4), 0);
    ck_assert_int_eq(memcmp(m1, m2, n), 0);
    bkm_kern_dropout_ref_fwd(n, 0.5f, 42, x, yr);
    assert_close("dropout fwd", y1, yr, n, 1e-6);
    for (size_t i = 0; i < n; i++)
        kept += m1[i];
    ck_assert_msg(kept > n * 48 / 100 && kept < n * 52 / 100, "kept %zu of %zu with p = 0.5", kept, n);
    /* Another seed gives another mask. */
    ck_assert_int_eq(bkm_kern_dropout_fwd(n, 0.5f, 43, x, y2, m2, &err), BKM_OK);
    ck_assert_int_ne(memcmp(m1, m2, n), 0);
    /* Backward: gradient flows through kept elements only, scaled by 1 / (1 - p). */
    ck_assert_int_eq(bkm_kern_dropout_bwd(n, 0.5f, m1, dd, ds, &err), BKM_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_float_eq(ds[i], m1[i] ? dd[i] * 2.0f : 0.0f);
    /* p = 0 (eval mode) copies. */
    ck_assert_int_eq(bkm_kern_dropout_fwd(n, 0.0f, 42, x, y2, NULL, &err), BKM_OK);
    ck_assert_int_eq(memcmp(x, y2, n * 4), 0);
    ck_assert_int_eq(bkm_kern_dropout_fwd(n, 1.0f, 42, x, y2, m2, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "p=1"));
    ck_assert_int_eq(bkm_kern_dropout_bwd(n, -0.5f, m1, dd, ds, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "p=-0.5"));
    free(x), free(y1), free(y2), free(yr), free(dd), free(ds), free(m1), free(m2);
}
END_TEST

START_TEST(softmax_xent_matches_reference)
{
    const int64_t mb = 7, nc = 13;
    float *logits = rand_buf((size_t)(mb * nc), 13, 0), *prob = malloc((size_t)(mb * nc) * 4);
    float *prob_ref = malloc((size_t)(mb * nc) * 4), *dl = malloc((size_t)(mb * nc) * 4);
    int32_t labels[7] = {0, 12, 3, 3, 7, 1, 11};
    double loss = 0, loss_ref = 0;
    bkm_err_t err = {0};
    for (int64_t i = 0; i < mb * nc; i++)
        logits[i] *= 8.0f; /* large logits exercise the max subtraction */
    ck_assert_int_eq(bkm_kern_softmax_xent_fwd(mb, nc, logits, labels, prob, &loss, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_softmax_xent_ref_fwd(mb, nc, logits, labels, prob_ref, &loss_ref, &err), BKM_OK);
    assert_close("softmax prob", prob, prob_ref, (size_t)(mb * nc), 1e-6);
    ck_assert_double_eq_tol(loss, loss_ref, 1e-9 * fabs(loss_ref) + 1e-12);
    ck_assert(loss > 0.0);
    ck_assert_int_eq(bkm_kern_softmax_xent_bwd(mb, nc, prob, labels, dl, &err), BKM_OK);
    for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < nc; j++)
            ck_assert_double_eq_tol(dl[i * nc + j], (prob_ref[i * nc + j] - (j == labels[i])) / (double)mb, 1e-6);
    labels[1] = 13;
    ck_assert_int_eq(bkm_kern_softmax_xent_fwd(mb, nc, logits, labels, prob, &loss, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "label[1]=13"));
    ck_assert_int_eq(bkm_kern_softmax_xent_bwd(mb, nc, prob, labels, dl, &err), BKM_EINVAL);
    free(logits), free(prob), free(prob_ref), free(dl);
}
END_TEST

START_TEST(sgd_follows_pytorch)
{
    const size_t n = 257;
    float *w = rand_buf(n, 14, 0), *wr = malloc(n * 4), *g = rand_buf(n, 15, 0);
    float *v = calloc(n, 4), *vr = calloc(n, 4);
    memcpy(wr, w, n * 4);
    for (int step = 0; step < 3; step++) {
        bkm_kern_sgd_step(n, w, g, v, 0.01f, 0.9f, 5e-4f);
        bkm_kern_sgd_ref_step(n, wr, g, vr, 0.01f, 0.9f, 5e-4f);
    }
    assert_close("sgd w", w, wr, n, 1e-6);
    assert_close("sgd v", v, vr, n, 1e-6);
    /* One hand-computed step: w = 1, g = 0.5, wd = 0.1, mu = 0.9, lr = 0.1: v = 0.6, w = 0.94;
     * second step: g' = 0.5 + 0.094 = 0.594, v = 0.54 + 0.594 = 1.134, w = 0.94 - 0.1134. */
    {
        float w1 = 1.0f, g1 = 0.5f, v1 = 0.0f;
        bkm_kern_sgd_step(1, &w1, &g1, &v1, 0.1f, 0.9f, 0.1f);
        ck_assert_float_eq_tol(v1, 0.6f, 1e-6f);
        ck_assert_float_eq_tol(w1, 0.94f, 1e-6f);
        bkm_kern_sgd_step(1, &w1, &g1, &v1, 0.1f, 0.9f, 0.1f);
        ck_assert_float_eq_tol(v1, 1.134f, 1e-6f);
        ck_assert_float_eq_tol(w1, 0.8266f, 1e-6f);
        /* No momentum: plain w -= lr * (g + wd * w), v untouched. */
        bkm_kern_sgd_step(1, &w1, &g1, NULL, 0.1f, 0.0f, 0.0f);
        ck_assert_float_eq_tol(w1, 0.7766f, 1e-6f);
    }
    ck_assert_double_eq(bkm_kern_sgd_flops(10, 0.9f, 0.0f), 40.0);
    free(w), free(wr), free(g), free(v), free(vr);
}
END_TEST

static Suite *layers_suite(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("layers");
    tcase_add_loop_test(tc, maxpool_matches_reference, 0, 2 * N_POOL_SHAPES);
    tcase_add_test(tc, maxpool_nonfinite_windows);
    tcase_add_test(tc, pool_desc_errors);
    tcase_add_test(tc, relu_matches_reference_in_place);
    {   /* default, generic, then avx2 and avx512 where this CPU has them (test_gemm_<isa> reports the
         * skip of a missing one); never a pass for an ISA that did not run */
        bkm_isa_t best = bkm_kern_isa_detect();
        int n = 2 + (best >= BKM_ISA_AVX2) + (best >= BKM_ISA_AVX512);
        if (n < 4)
            printf("note: fc on %s only: this CPU lacks %s\n", n == 3 ? "default, generic, avx2" : "default, generic",
                   n == 3 ? "avx512" : "avx2 and avx512");
        tcase_add_loop_test(tc, fc_matches_reference, 0, n);
    }
    tcase_add_test(tc, fc_errors);
    tcase_add_test(tc, dropout_is_seeded_and_thread_independent);
    tcase_add_test(tc, softmax_xent_matches_reference);
    tcase_add_test(tc, sgd_follows_pytorch);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(layers_suite)
