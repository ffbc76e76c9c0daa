/* SPDX-License-Identifier: MIT */
/* Native and oneDNN AlexNet training steps start from the same seeded weights, input and labels,
 * so their first-iteration losses must agree (1e-3 relative), and a second step must lower the
 * loss on the same batch on both backends; with layers=1 each writes the per-layer table. Batch 2
 * keeps it under a minute on 2 cores. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/workloads.h"

static void run_alexnet(const char *backend, double *first, double *second, double *flops)
{
    bkm_wl_config_t cfg;
    bkm_wl_t *wl = NULL;
    bkm_err_t err = {0};
    bkm_wl_sample_t s;
    char kv[64];
    double v = 0.0;
    bkm_wl_config_init(&cfg);
    snprintf(kv, sizeof kv, "backend=%s", backend);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "batch=2", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "layers=1", &err), BKM_OK);
    ck_assert_msg(bkm_wl_create(&wl, "alexnet", &cfg, 42, &err) == BKM_OK, "%s: %s", backend, err.msg);
    ck_assert_int_eq(bkm_wl_check_value(wl, &v, &err), BKM_EINVAL); /* nothing ran yet */
    ck_assert_msg(bkm_wl_run(wl, &s, &err) == BKM_OK, "%s: %s", backend, err.msg);
    ck_assert(s.fwd_ms > 0.0 && s.bwd_ms > 0.0 && s.update_ms > 0.0);
    ck_assert(fabs(s.ms - (s.fwd_ms + s.bwd_ms + s.update_ms)) < 1e-9);
    *first = s.loss;
    ck_assert_msg(bkm_wl_run(wl, &s, &err) == BKM_OK, "%s: %s", backend, err.msg);
    *second = s.loss;
    ck_assert_int_eq(bkm_wl_check_value(wl, &v, &err), BKM_OK);
    ck_assert(v == *first); /* the check value is the FIRST iteration's loss */
    *flops = bkm_wl_flops(wl);
    {   /* layers=1: the per-layer table, one row per layer and direction run (not the first step) */
        bkm_buf_t b;
        const char *j;
        bkm_buf_init(&b);
        ck_assert_int_eq(bkm_wl_layers_json(wl, &b), 1);
        j = bkm_buf_str(&b);
        ck_assert_msg(strstr(j, "{\"layer\":\"conv1\",\"kind\":\"conv\",\"direction\":\"fwd\",\"ms\":") != NULL,
                      "%s", j);
        ck_assert_msg(strstr(j, "{\"layer\":\"fc6\",\"kind\":\"fc\",\"direction\":\"bwd_w\"") != NULL, "%s", j);
        ck_assert_msg(strstr(j, "\"conv2\",\"kind\":\"conv\",\"direction\":\"bwd_d\"") != NULL, "%s", j);
        ck_assert_msg(strstr(j, "\"conv1\",\"kind\":\"conv\",\"direction\":\"bwd_d\"") == NULL, "%s", j);
        ck_assert_msg(strstr(j, "\"steps\":1") != NULL, "%s", j);
        bkm_buf_free(&b);
    }
    ck_assert_msg(strncmp(bkm_wl_impl(wl), backend, strlen(backend)) == 0, "impl '%s'", bkm_wl_impl(wl));
    bkm_wl_destroy(wl);
}

START_TEST(native_and_onednn_losses_agree)
{
    double n1, n2, o1, o2, nf, of;
    run_alexnet("onednn", &o1, &o2, &of);
    run_alexnet("native", &n1, &n2, &nf);
    /* random init on 1000 classes: the loss is near ln(1000) */
    ck_assert_msg(o1 > 5.0 && o1 < 9.0, "oneDNN first loss %g", o1);
    ck_assert_msg(fabs(n1 - o1) <= 1e-3 * fabs(o1), "native %.6f vs oneDNN %.6f", n1, o1);
    ck_assert_msg(o2 < o1 && n2 < n1, "a step on the same batch must lower the loss: oneDNN %g -> %g, native %g -> %g",
                  o1, o2, n1, n2);
    ck_assert(nf == of);
}
END_TEST

static Suite *alexnet_agree_suite(void)
{
    Suite *s = suite_create("alexnet");
    TCase *tc = tcase_create("agree");
    tcase_add_test(tc, native_and_onednn_losses_agree);
    tcase_set_timeout(tc, 240);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(alexnet_agree_suite)
