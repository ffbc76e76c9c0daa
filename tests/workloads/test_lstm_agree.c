/* SPDX-License-Identifier: MIT */
/* The `lstm` workload: native and oneDNN from the same seed agree on the first-iteration loss
 * (1e-3 relative) in both modes, on a small odd two-layer shape and a slice of the seed's shape;
 * FLOPs follow docs/workloads.md §2; bad shapes and sizes too big for memory are named. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "bkm/workloads.h"

static double first_loss(const char *backend, const char *shape, const char *layers, const char *mode,
                         double *flops)
{
    bkm_wl_config_t cfg;
    bkm_wl_t *wl = NULL;
    bkm_err_t err = {0};
    bkm_wl_sample_t s;
    char kv[128];
    double v = 0.0;
    bkm_wl_config_init(&cfg);
    snprintf(kv, sizeof kv, "backend=%s", backend);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
    snprintf(kv, sizeof kv, "shape=%s", shape);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
    snprintf(kv, sizeof kv, "layers=%s", layers);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
    snprintf(kv, sizeof kv, "mode=%s", mode);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv, &err), BKM_OK);
    ck_assert_msg(bkm_wl_create(&wl, "lstm", &cfg, 17, &err) == BKM_OK, "%s %s: %s", backend, shape, err.msg);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert(s.fwd_ms > 0.0);
    ck_assert(strcmp(mode, "training") != 0 || s.bwd_ms > 0.0);
    ck_assert(fabs(s.ms - (s.fwd_ms + s.bwd_ms + s.update_ms)) < 1e-9);
    ck_assert_int_eq(bkm_wl_check_value(wl, &v, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(bkm_wl_impl(wl), backend));
    {   /* sentences per iteration: the batch N */
        const char *unit = NULL;
        ck_assert(bkm_wl_items_per_iter(wl, &unit) == (double)atoi(shape));
        ck_assert_str_eq(unit, "sentences");
    }
    *flops = bkm_wl_flops(wl);
    bkm_wl_destroy(wl);
    return v;
}

START_TEST(backends_agree)
{
    static const struct { const char *shape, *layers, *mode; } cases[] = {
        {"3,5,7,9", "2", "training"},
        {"3,5,7,9", "2", "inference"},
        {"8,4,500,500", "1", "training"}, /* the seed's sizes, fewer sentences and steps */
    };
    const char *shape = cases[_i].shape;
    double fn, fo, n = first_loss("native", shape, cases[_i].layers, cases[_i].mode, &fn),
                   o = first_loss("onednn", shape, cases[_i].layers, cases[_i].mode, &fo);
    /* L1 loss against a standard normal target: near E|z| = 0.8 for small outputs */
    ck_assert_msg(o > 0.3 && o < 2.0, "oneDNN first loss %g", o);
    ck_assert_msg(fabs(n - o) <= 1e-3 * fabs(o), "%s: native %.7f vs oneDNN %.7f", shape, n, o);
    bkm_lstm_desc_t d;
    bkm_err_t err = {0};
    long long v[4];
    ck_assert_int_eq(sscanf(shape, "%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3]), 4);
    ck_assert_int_eq(bkm_kern_lstm_desc_init(&d, v[0], v[1], v[2], v[3], cases[_i].layers[0] - '0', &err), BKM_OK);
    const int training = strcmp(cases[_i].mode, "training") == 0;
    ck_assert(fn == fo && fn == bkm_kern_lstm_flops(&d, training));
    /* §2 by hand for layer 0: T * 2 * N * 4H * (I + H) */
    ck_assert(bkm_kern_lstm_flops(&d, 0) >= (double)v[1] * 2 * v[0] * 4 * v[3] * (v[2] + v[3]));
}
END_TEST

START_TEST(bad_shapes_are_named)
{
    static const struct { const char *kv, *needle; } bad[] = {
        {"shape=0,50,500,500", "N=0"},
        {"shape=64,-3,500,500", "T=-3"},
        {"shape=64,50,500", "N,T,I,H"},
        {"shape=64,50,500,500,7", "N,T,I,H"},
        {"shape=64,50,x,500", "I='x'"},
        {"shape=64,50,500,0", "H=0"},
        {"shape=64,50,500,99999999", "H=99999999"},
        {"shape=4096,4096,4096,4096", "GiB"}, /* too big for this process's memory */
        {"layers=0", "0"},
        {"mode=sideways", "sideways"},
        {"grain=17", "17"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bkm_wl_config_t cfg;
        bkm_err_t err = {0};
        bkm_wl_config_init(&cfg);
        ck_assert_int_eq(bkm_wl_config_add(&cfg, bad[i].kv, &err), BKM_OK);
        int rc = bkm_wl_config_check("lstm", &cfg, &err);
        if (rc == BKM_OK) { /* tunables are checked when the kernel is created */
            bkm_wl_t *wl = NULL;
            bkm_wl_config_t c2 = cfg;
            ck_assert_int_eq(bkm_wl_config_add(&c2, "shape=2,2,3,3", &err), BKM_OK);
            rc = bkm_wl_create(&wl, "lstm", &c2, 1, &err);
            bkm_wl_destroy(wl);
        }
        ck_assert_msg(rc == BKM_EINVAL, "%s accepted", bad[i].kv);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "%s: '%s'", bad[i].kv, err.msg);
    }
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_check("lstm", &cfg, &err), BKM_OK); /* the seed's shape */
}
END_TEST

static Suite *lstm_agree_suite(void)
{
    Suite *s = suite_create("lstm_workload");
    TCase *tc = tcase_create("agree");
    tcase_add_test(tc, bad_shapes_are_named);
    tcase_add_loop_test(tc, backends_agree, 0, 3);
    tcase_set_timeout(tc, 240);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(lstm_agree_suite)
