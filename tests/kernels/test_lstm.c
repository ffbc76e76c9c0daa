/* SPDX-License-Identifier: MIT */
/* LSTM: descriptor checks and FLOPs, oneDNN against native (outputs and gradients), the native forward and backward through time against the
 * naive reference on small odd shapes (1-3 layers, I != H, with and without initial and final
 * state gradients, one and several gate chunks), finite-difference gradient checks of the
 * reference over a few steps, and bad tunables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

/* N, T, I, H, layers */
static const int64_t shapes[][5] = {
    {3, 4, 5, 7, 1}, /* odd everything */
    {2, 3, 6, 5, 2}, /* two layers, I > H */
    {1, 5, 3, 4, 3}, /* batch 1, three layers, I < H */
    {5, 2, 9, 11, 1},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

START_TEST(desc_and_flops)
{
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, 64, 50, 500, 500, 1, &err), BKM_OK);
    /* docs/workloads.md §6: 12.80 GF forward per iteration at [64,50,500,500], 3x for training */
    ck_assert_msg(fabs(bkm_kern_lstm_flops(&d, 0) - 12.8e9) < 1e3, "%g", bkm_kern_lstm_flops(&d, 0));
    ck_assert_msg(fabs(bkm_kern_lstm_flops(&d, 1) - 38.4e9) < 1e3, "%g", bkm_kern_lstm_flops(&d, 1));
    /* parameters 4H(I+H)+4H per layer (one bias: oneDNN's and the seed's two biases summed) */
    ck_assert_uint_eq(bkm_kern_lstm_param_count(&d), 4u * 500 * 1000 + 4 * 500);
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, 2, 3, 6, 5, 2, &err), BKM_OK);
    size_t ox, oh, ob;
    bkm_kern_lstm_param_offsets(&d, 1, &ox, &oh, &ob);
    ck_assert_uint_eq(ox, 20u * (6 + 5 + 1));
    ck_assert_uint_eq(oh, ox + 20u * 5);
    ck_assert_uint_eq(ob, oh + 20u * 5);
    ck_assert_uint_eq(bkm_kern_lstm_param_count(&d), ob + 20);
    /* layer 1 takes H inputs: 2 layers x 3 steps x 2 x 2 x 20 x (6+5 | 5+5) */
    ck_assert_msg(bkm_kern_lstm_flops(&d, 0) == 3.0 * 2 * 2 * 20 * 11 + 3.0 * 2 * 2 * 20 * 10, "%g",
                  bkm_kern_lstm_flops(&d, 0));
    static const struct { int64_t v[5]; const char *needle; } bad[] = {
        {{0, 5, 5, 5, 1}, "N=0"},          {{4, -2, 5, 5, 1}, "T=-2"},
        {{4, 5, 5, 0, 1}, "H=0"},          {{4, 5, 0, 5, 1}, "I=0"},
        {{4, 5, 5, 5, 0}, "layers=0"},     {{4, 5, 5, (int64_t)1 << 30, 1}, "H=1073741824"},
        {{1 << 24, 1 << 24, 5, 1 << 24, 1}, "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, bad[i].v[0], bad[i].v[1], bad[i].v[2], bad[i].v[3], bad[i].v[4],
                                                 &err),
                         BKM_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "'%s' does not name '%s'", err.msg, bad[i].needle);
    }
}
END_TEST

/* _i: shape (_i / 8), states given or not (bit 0), algo split with grain 16 or the default (bit 1),
 * algo fused or split (bit 2). */
START_TEST(native_matches_reference)
{
    const int64_t *s = shapes[_i / 8];
    const int states = _i & 1, small_grain = (_i >> 1) & 1, split = (_i >> 2) & 1;
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, s[0], s[1], s[2], s[3], s[4], &err), BKM_OK);
    const size_t nx = (size_t)(d.t * d.n * d.i), ny = (size_t)(d.t * d.n * d.h), ns = (size_t)(d.layers * d.n * d.h),
                 nw = bkm_kern_lstm_param_count(&d);
    float *x = rnd(nx, 1, 1.0f), *w = rnd(nw, 2, 0.4f), *h0 = rnd(ns, 3, 0.5f), *c0 = rnd(ns, 4, 0.5f);
    float *dy = rnd(ny, 5, 1.0f), *dhT = rnd(ns, 6, 1.0f), *dcT = rnd(ns, 7, 1.0f);
    float *y = rnd(ny, 8, 9.0f), *yr = rnd(ny, 9, 9.0f), *hT = rnd(ns, 10, 9.0f), *hTr = rnd(ns, 11, 9.0f);
    float *cT = rnd(ns, 12, 9.0f), *cTr = rnd(ns, 13, 9.0f);
    float *dx = rnd(nx, 14, 9.0f), *dxr = rnd(nx, 15, 9.0f), *dw = rnd(nw, 16, 9.0f), *dwr = rnd(nw, 17, 9.0f);
    float *dh0 = rnd(ns, 18, 9.0f), *dh0r = rnd(ns, 19, 9.0f), *dc0 = rnd(ns, 20, 9.0f), *dc0r = rnd(ns, 21, 9.0f);
    bkm_kern_params_t kp;
    bkm_kern_params_init(&kp);
    if (small_grain)
        ck_assert_int_eq(bkm_kern_params_add(&kp, "grain=16", &err), BKM_OK);
    if (split)
        ck_assert_int_eq(bkm_kern_params_add(&kp, "algo=1", &err), BKM_OK);
    bkm_kern_lstm_t *ls = NULL;
    ck_assert_msg(bkm_kern_lstm_create(&ls, &d, &kp, &err) == BKM_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(bkm_kern_lstm_impl(ls), !split ? "fused" : small_grain ? "grain16" : "grain4096"));
    const float *ph0 = states ? h0 : NULL, *pc0 = states ? c0 : NULL, *pdh = states ? dhT : NULL,
                *pdc = states ? dcT : NULL;
    ck_assert_int_eq(bkm_kern_lstm_ref_fwd(&d, x, ph0, pc0, w, yr, hTr, cTr, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_lstm_ref_bwd(&d, x, ph0, pc0, w, dy, pdh, pdc, dxr, dh0r, dc0r, dwr, &err), BKM_OK);
    /* twice: the second run must not depend on state left by the first */
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_msg(bkm_kern_lstm_fwd(ls, x, ph0, pc0, w, y, hT, cT, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg(bkm_kern_lstm_bwd(ls, x, w, dy, pdh, pdc, dx, dh0, dc0, dw, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg(rel_diff_over(y, yr, ny, 1e-3) < 1e-5, "y %g", rel_diff_over(y, yr, ny, 1e-3));
        ck_assert_msg(rel_diff_over(hT, hTr, ns, 1e-3) < 1e-5, "hT %g", rel_diff_over(hT, hTr, ns, 1e-3));
        ck_assert_msg(rel_diff_over(cT, cTr, ns, 1e-3) < 1e-5, "cT %g", rel_diff_over(cT, cTr, ns, 1e-3));
        ck_assert_msg(rel_diff_over(dx, dxr, nx, 1e-3) < 1e-4, "dx %g", rel_diff_over(dx, dxr, nx, 1e-3));
        ck_assert_msg(rel_diff_over(dw, dwr, nw, 1e-3) < 1e-4, "dw %g", rel_diff_over(dw, dwr, nw, 1e-3));
        ck_assert_msg(rel_diff_over(dh0, dh0r, ns, 1e-3) < 1e-4, "dh0 %g", rel_diff_over(dh0, dh0r, ns, 1e-3));
        ck_assert_msg(rel_diff_over(dc0, dc0r, ns, 1e-3) < 1e-4, "dc0 %g", rel_diff_over(dc0, dc0r, ns, 1e-3));
    }
    /* the last step of the top layer is hT of that layer */
    ck_assert(memcmp(y + (d.t - 1) * d.n * d.h, hT + (d.layers - 1) * d.n * d.h, (size_t)(d.n * d.h) * sizeof(float)) ==
              0);
    bkm_kern_lstm_destroy(ls);
    free(x), free(w), free(h0), free(c0), free(dy), free(dhT), free(dcT), free(y), free(yr), free(hT), free(hTr);
    free(cT), free(cTr), free(dx), free(dxr), free(dw), free(dwr), free(dh0), free(dh0r), free(dc0), free(dc0r);
}
END_TEST

/* loss = <y, gy> + <hT, ghT> + <cT, gcT> of the reference forward */
static double loss_of(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                      const float *gy, const float *ghT, const float *gcT)
{
    const size_t ny = (size_t)(d->t * d->n * d->h), ns = (size_t)(d->layers * d->n * d->h);
    float *y = malloc(ny * sizeof(float)), *hT = malloc(ns * sizeof(float)), *cT = malloc(ns * sizeof(float));
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_lstm_ref_fwd(d, x, h0, c0, w, y, hT, cT, &err), BKM_OK);
    double l = 0.0;
    for (size_t i = 0; i < ny; i++)
        l += (double)y[i] * gy[i];
    for (size_t i = 0; i < ns; i++)
        l += (double)hT[i] * ghT[i] + (double)cT[i] * gcT[i];
    free(y), free(hT), free(cT);
    return l;
}

/* central difference of loss_of in element j of p, against the analytic gradient g */
static void fd_check(const bkm_lstm_desc_t *d, float *x, float *h0, float *c0, float *w, const float *gy,
                     const float *ghT, const float *gcT, float *p, size_t n, const float *g, const char *what)
{
    const float eps = 1e-2f;
    for (size_t j = 0; j < n; j += 1 + n / 17) {
        float keep = p[j];
        p[j] = keep + eps;
        double lp = loss_of(d, x, h0, c0, w, gy, ghT, gcT);
        p[j] = keep - eps;
        double lm = loss_of(d, x, h0, c0, w, gy, ghT, gcT);
        p[j] = keep;
        double num = (lp - lm) / (2.0 * eps);
        ck_assert_msg(fabs(num - g[j]) < 2e-3 * (1.0 + fabs(num)), "%s[%zu]: numeric %g analytic %g", what, j, num,
                      (double)g[j]);
    }
}

START_TEST(gradient_check)
{
    const int64_t *s = shapes[_i];
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, s[0], s[1] < 4 ? s[1] : 4, s[2], s[3], s[4], &err), BKM_OK);
    const size_t nx = (size_t)(d.t * d.n * d.i), ny = (size_t)(d.t * d.n * d.h), ns = (size_t)(d.layers * d.n * d.h),
                 nw = bkm_kern_lstm_param_count(&d);
    float *x = rnd(nx, 31, 1.0f), *w = rnd(nw, 32, 0.5f), *h0 = rnd(ns, 33, 0.5f), *c0 = rnd(ns, 34, 0.5f);
    float *gy = rnd(ny, 35, 1.0f), *ghT = rnd(ns, 36, 1.0f), *gcT = rnd(ns, 37, 1.0f);
    float *dx = malloc(nx * sizeof(float)), *dw = malloc(nw * sizeof(float)), *dh0 = malloc(ns * sizeof(float)),
          *dc0 = malloc(ns * sizeof(float));
    /* the native backward, which the test above ties to the reference backward */
    float *y = malloc(ny * sizeof(float));
    bkm_kern_lstm_t *ls = NULL;
    ck_assert_int_eq(bkm_kern_lstm_create(&ls, &d, NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_lstm_fwd(ls, x, h0, c0, w, y, NULL, NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_lstm_bwd(ls, x, w, gy, ghT, gcT, dx, dh0, dc0, dw, &err), BKM_OK);
    fd_check(&d, x, h0, c0, w, gy, ghT, gcT, w, nw, dw, "dw");
    fd_check(&d, x, h0, c0, w, gy, ghT, gcT, x, nx, dx, "dx");
    fd_check(&d, x, h0, c0, w, gy, ghT, gcT, h0, ns, dh0, "dh0");
    fd_check(&d, x, h0, c0, w, gy, ghT, gcT, c0, ns, dc0, "dc0");
    bkm_kern_lstm_destroy(ls);
    free(x), free(w), free(h0), free(c0), free(gy), free(ghT), free(gcT), free(dx), free(dw), free(dh0), free(dc0);
    free(y);
}
END_TEST

/* oneDNN agrees with the native LSTM on the same seeded inputs: outputs, states and every gradient
 * (_i: shape (_i / 2), states given or not (bit 0)); an inference object refuses backward. */
START_TEST(onednn_agrees)
{
    const int64_t *s = shapes[_i / 2];
    const int states = _i & 1;
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, s[0], s[1], s[2], s[3], s[4], &err), BKM_OK);
    const size_t nx = (size_t)(d.t * d.n * d.i), ny = (size_t)(d.t * d.n * d.h), ns = (size_t)(d.layers * d.n * d.h),
                 nw = bkm_kern_lstm_param_count(&d);
    float *x = rnd(nx, 41, 1.0f), *w = rnd(nw, 42, 0.4f), *h0 = rnd(ns, 43, 0.5f), *c0 = rnd(ns, 44, 0.5f);
    float *dy = rnd(ny, 45, 1.0f), *dhT = rnd(ns, 46, 1.0f), *dcT = rnd(ns, 47, 1.0f);
    float *b[2][7];
    for (int k = 0; k < 2; k++) {
        b[k][0] = rnd(ny, 50 + k, 9.0f), b[k][1] = rnd(ns, 52 + k, 9.0f), b[k][2] = rnd(ns, 54 + k, 9.0f);
        b[k][3] = rnd(nx, 56 + k, 9.0f), b[k][4] = rnd(nw, 58 + k, 9.0f), b[k][5] = rnd(ns, 60 + k, 9.0f);
        b[k][6] = rnd(ns, 62 + k, 9.0f);
    }
    const size_t len[7] = {ny, ns, ns, nx, nw, ns, ns};
    static const char *what[7] = {"y", "hT", "cT", "dx", "dw", "dh0", "dc0"};
    const float *ph0 = states ? h0 : NULL, *pc0 = states ? c0 : NULL, *pdh = states ? dhT : NULL,
                *pdc = states ? dcT : NULL;
    bkm_kern_lstm_t *nat = NULL;
    bkm_kern_lstm_onednn_t *od = NULL, *oi = NULL;
    ck_assert_msg(bkm_kern_lstm_create(&nat, &d, NULL, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_kern_lstm_onednn_create(&od, &d, 1, &err) == BKM_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(bkm_kern_lstm_onednn_impl(od), "onednn:"));
    ck_assert_int_eq(bkm_kern_lstm_fwd(nat, x, ph0, pc0, w, b[0][0], b[0][1], b[0][2], &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_lstm_bwd(nat, x, w, dy, pdh, pdc, b[0][3], b[0][5], b[0][6], b[0][4], &err), BKM_OK);
    /* twice: weight gradients are overwritten, not accumulated */
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_msg(bkm_kern_lstm_onednn_fwd(od, x, ph0, pc0, w, b[1][0], b[1][1], b[1][2], &err) == BKM_OK, "%s",
                      err.msg);
        ck_assert_msg(bkm_kern_lstm_onednn_bwd(od, x, w, dy, pdh, pdc, b[1][3], b[1][5], b[1][6], b[1][4], &err) ==
                          BKM_OK,
                      "%s", err.msg);
        for (int k = 0; k < 7; k++)
            ck_assert_msg(rel_diff_over(b[1][k], b[0][k], len[k], 1e-3) < (k < 3 ? 1e-5 : 1e-4), "%s: %g (rep %d)",
                          what[k], rel_diff_over(b[1][k], b[0][k], len[k], 1e-3), rep);
    }
    /* inference: the same outputs, no backward */
    ck_assert_msg(bkm_kern_lstm_onednn_create(&oi, &d, 0, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_lstm_onednn_fwd(oi, x, ph0, pc0, w, b[1][0], NULL, NULL, &err), BKM_OK);
    ck_assert_msg(rel_diff_over(b[1][0], b[0][0], ny, 1e-3) < 1e-5, "inference y %g",
                  rel_diff_over(b[1][0], b[0][0], ny, 1e-3));
    ck_assert_int_eq(bkm_kern_lstm_onednn_bwd(oi, x, w, dy, NULL, NULL, b[1][3], NULL, NULL, b[1][4], &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "inference"));
    bkm_kern_lstm_destroy(nat);
    bkm_kern_lstm_onednn_destroy(od);
    bkm_kern_lstm_onednn_destroy(oi);
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 7; j++)
            free(b[k][j]);
    free(x), free(w), free(h0), free(c0), free(dy), free(dhT), free(dcT);
}
END_TEST

START_TEST(bad_tunables)
{
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    bkm_kern_lstm_t *ls = NULL;
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, 2, 2, 3, 3, 1, &err), BKM_OK);
    static const struct { const char *kv, *needle; } bad[] = {
        {"grain=17", "grain"}, {"grain=0", "grain"}, {"mc=7", "mc"}, {"xyz=1", "xyz"}, {"algo=2", "algo"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bkm_kern_params_t kp;
        bkm_kern_params_init(&kp);
        ck_assert_int_eq(bkm_kern_params_add(&kp, bad[i].kv, &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_lstm_create(&ls, &d, &kp, &err), BKM_EINVAL);
        ck_assert_ptr_null(ls);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "%s: '%s'", bad[i].kv, err.msg);
    }
    size_t np;
    const bkm_param_desc_t *pd = bkm_kern_lstm_params(&np);
    ck_assert_uint_eq(np, 5);
    ck_assert_str_eq(pd[0].name, "algo");
    ck_assert_str_eq(pd[1].name, "grain");
}
END_TEST

static Suite *lstm_suite(void)
{
    Suite *s = suite_create("lstm");
    TCase *tc = tcase_create("lstm");
    tcase_add_test(tc, desc_and_flops);
    tcase_add_loop_test(tc, native_matches_reference, 0, 8 * N_SHAPES);
    tcase_add_loop_test(tc, gradient_check, 0, N_SHAPES);
    tcase_add_loop_test(tc, onednn_agrees, 0, 2 * N_SHAPES);
    tcase_add_test(tc, bad_tunables);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(lstm_suite)
