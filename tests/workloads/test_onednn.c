/* SPDX-License-Identifier: MIT */
/* oneDNN backend against the naive references: the conv2d op (every direction, odd shapes with
 * groups, strides and padding) and the GEMM op. (Networks on oneDNN: tests/kernels/test_net.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

static float *copy_of(const float *p, size_t n)
{
    float *q = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(q);
    if (n)
        memcpy(q, p, n * sizeof(float));
    return q;
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
    ck_assert_msg(strncmp(bkm_kern_op_impl(op, BKM_DIR_FWD), "onednn:", 7) == 0, "%s",
                  bkm_kern_op_impl(op, BKM_DIR_FWD));
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

static Suite *onednn_suite(void)
{
    Suite *s = suite_create("onednn");
    TCase *tc = tcase_create("op");
    tcase_add_loop_test(tc, conv2d_op_matches_reference, 0, (int)(sizeof conv_shapes / sizeof conv_shapes[0]));
    tcase_add_test(tc, conv2d_op_single_direction_and_errors);
    tcase_add_loop_test(tc, gemm_op_matches_reference, 0, 4);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(onednn_suite)
