/* SPDX-License-Identifier: MIT */
/* The `conv3d` workload: the seed network (batch 2) and single-layer mode on the native and oneDNN
 * backends from the same seed agree on the first-iteration loss (1e-3 relative); single-layer
 * samples are the layer's own forward + backward-data + backward-weights; bad shapes are named. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "bkm/workloads.h"

static bkm_wl_t *make(const char *backend, const char *shape, const char *batch, bkm_err_t *err, int *rc)
{
    bkm_wl_config_t cfg;
    bkm_wl_t *wl = NULL;
    char kv[128];
    bkm_wl_config_init(&cfg);
    snprintf(kv, sizeof kv, "backend=%s", backend);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, err), BKM_OK);
    snprintf(kv, sizeof kv, "shape=%s", shape);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, err), BKM_OK);
    snprintf(kv, sizeof kv, "batch=%s", batch);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "layers=1", err), BKM_OK);
    *rc = bkm_wl_create(&wl, "conv3d", &cfg, 11, err);
    return wl;
}

static double first_loss(const char *backend, const char *shape, const char *batch, double *flops)
{
    bkm_err_t err = {0};
    bkm_wl_sample_t s;
    double v = 0.0;
    int rc;
    bkm_wl_t *wl = make(backend, shape, batch, &err, &rc);
    ck_assert_msg(rc == BKM_OK, "%s %s: %s", backend, shape, err.msg);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert(s.fwd_ms > 0.0 && s.bwd_ms > 0.0);
    ck_assert(fabs(s.ms - (s.fwd_ms + s.bwd_ms + s.update_ms)) < 1e-9);
    ck_assert_int_eq(bkm_wl_check_value(wl, &v, &err), BKM_OK);
    *flops = bkm_wl_flops(wl);
    {
        bkm_buf_t b;
        bkm_buf_init(&b);
        ck_assert_int_eq(bkm_wl_layers_json(wl, &b), 1);
        ck_assert_msg(strstr(bkm_buf_str(&b), "\"kind\":\"conv3d\",\"direction\":\"bwd_w\"") != NULL, "%s",
                      bkm_buf_str(&b));
        bkm_buf_free(&b);
    }
    ck_assert_ptr_nonnull(strstr(bkm_wl_impl(wl), backend));
    bkm_wl_destroy(wl);
    return v;
}

START_TEST(single_layer_backends_agree)
{
    const char *shape = "mb3ic5id7ih6iw5oc6kd3sd2pd1";
    double fn, fo, n = first_loss("native", shape, "0", &fn), o = first_loss("onednn", shape, "0", &fo);
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    ck_assert_msg(fabs(n - o) <= 1e-3 * fabs(o), "native %.7f vs oneDNN %.7f", n, o);
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shape, 0, &d, &err), BKM_OK);
    ck_assert(fn == fo && fn == 3.0 * bkm_kern_conv3d_flops(&d)); /* fwd + bwd-data + bwd-weights */
}
END_TEST

START_TEST(seed_network_backends_agree)
{
    double fn, fo, n = first_loss("native", "seed", "2", &fn), o = first_loss("onednn", "seed", "2", &fo);
    /* log-softmax over a batch of 2 at random init: near ln 2 */
    ck_assert_msg(o > 0.3 && o < 1.5, "oneDNN first loss %g", o);
    ck_assert_msg(fabs(n - o) <= 1e-3 * fabs(o), "native %.7f vs oneDNN %.7f", n, o);
    ck_assert(fn == fo && fabs(fn / 2 * 4 / 1e9 - 51.96) < 0.01);
}
END_TEST

START_TEST(bad_shapes_are_named)
{
    static const struct { const char *shape, *batch, *needle; } bad[] = {
        {"mb2ic3ih7oc4kh3", "0", "no id"},                  /* a 2-D descriptor */
        {"mb2ic3id7ih7iw7oc4kd3kh2", "0", "cubic"},         /* non-cubic kernel */
        {"mb2ic3id2oc4kd3", "0", "empty output"},
        {"mb2ic0id7oc4", "0", "ic0"},
        {"resnet", "0", "resnet"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bkm_wl_config_t cfg;
        bkm_err_t err = {0};
        char kv[96];
        bkm_wl_config_init(&cfg);
        snprintf(kv, sizeof kv, "shape=%s", bad[i].shape);
        ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
        ck_assert_int_eq(bkm_wl_config_check("conv3d", &cfg, &err), BKM_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "%s: '%s'", bad[i].shape, err.msg);
    }
    {
        bkm_wl_config_t cfg;
        bkm_err_t err = {0};
        bkm_wl_config_init(&cfg);
        ck_assert_int_eq(bkm_wl_config_add(&cfg, "batch=-1", &err), BKM_OK);
        ck_assert_int_eq(bkm_wl_config_check("conv3d", &cfg, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "-1"));
        bkm_wl_config_init(&cfg);
        ck_assert_int_eq(bkm_wl_config_check("conv3d", &cfg, &err), BKM_OK); /* the seed network */
        ck_assert_int_eq(bkm_wl_config_add(&cfg, "v2c=0", &err), BKM_OK);
        ck_assert_int_eq(bkm_wl_config_check("conv3d", &cfg, &err), BKM_OK);
    }
}
END_TEST

static Suite *conv3d_agree_suite(void)
{
    Suite *s = suite_create("conv3d_workload");
    TCase *tc = tcase_create("agree");
    tcase_add_test(tc, bad_shapes_are_named);
    tcase_add_test(tc, single_layer_backends_agree);
    tcase_add_test(tc, seed_network_backends_agree);
    tcase_set_timeout(tc, 240);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(conv3d_agree_suite)
