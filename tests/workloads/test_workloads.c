/* SPDX-License-Identifier: MIT */
/* Workload registry: lookups, the merged parameter lists, configuration errors naming the bad
 * value, FLOP counts against workloads.md, and small gemm / conv2d runs on both backends. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bkm/kernels.h"
#include "bkm/workloads.h"

START_TEST(registry_lookups)
{
    const bkm_wl_info_t *info = NULL;
    bkm_err_t err = {0};
    ck_assert_uint_eq(bkm_wl_count(), 3);
    ck_assert_str_eq(bkm_wl_info_at(0)->name, "gemm");
    ck_assert_ptr_null(bkm_wl_info_at(3));
    ck_assert_int_eq(bkm_wl_find("alexnet", &info, &err), BKM_OK);
    ck_assert_str_eq(info->check_key, "loss");
    ck_assert_ptr_nonnull(strstr(info->description, "SGD"));
    ck_assert_int_eq(bkm_wl_find("conv2d", &info, &err), BKM_OK);
    ck_assert_str_eq(info->check_key, "checksum");
    ck_assert_int_eq(bkm_wl_find("resnet", &info, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'resnet'"));
    ck_assert_ptr_nonnull(strstr(err.msg, "alexnet")); /* lists the known ones */
}
END_TEST

static const bkm_wl_param_t *param(const bkm_wl_param_t *p, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0)
            return &p[i];
    return NULL;
}

START_TEST(parameter_lists_merge_kernel_tunables)
{
    bkm_wl_param_t p[BKM_WL_MAX_PARAMS];
    size_t n = 0, nk = 0;
    bkm_err_t err = {0};
    const bkm_wl_param_t *q;
    ck_assert_int_eq(bkm_wl_params("conv2d", p, &n, &err), BKM_OK);
    ck_assert_ptr_nonnull(q = param(p, n, "dir"));
    ck_assert_int_eq(q->type, BKM_WL_ENUM);
    ck_assert_str_eq(q->def, "all");
    ck_assert_ptr_nonnull(strstr(q->choices, "bwd_w"));
    ck_assert_ptr_nonnull(q = param(p, n, "shape"));
    ck_assert_int_eq(q->kernel_tunable, 0);
    /* every native conv2d tunable appears, flagged as a kernel tunable, with its bounds */
    const bkm_param_desc_t *kd = bkm_kern_conv2d_params(&nk);
    for (size_t i = 0; i < nk; i++) {
        ck_assert_ptr_nonnull(q = param(p, n, kd[i].name));
        ck_assert_int_eq(q->kernel_tunable, 1);
        ck_assert_int_eq(q->min, kd[i].min);
        ck_assert_int_eq(q->max, kd[i].max);
    }
    ck_assert_ptr_nonnull(param(p, n, "isa"));
    ck_assert_int_eq(bkm_wl_params("gemm", p, &n, &err), BKM_OK);
    ck_assert_ptr_nonnull(param(p, n, "m"));
    ck_assert_ptr_nonnull(param(p, n, "kc"));
    ck_assert_int_eq(bkm_wl_params("alexnet", p, &n, &err), BKM_OK);
    ck_assert_ptr_nonnull(q = param(p, n, "batch"));
    ck_assert_str_eq(q->def, "128");
    ck_assert_int_eq(bkm_wl_params("nope", p, &n, &err), BKM_EINVAL);
}
END_TEST

/* Expect config {kv...} of @p wl to fail with BKM_EINVAL and a message containing @p needle. */
static void expect_bad(const char *wl, const char *kv1, const char *kv2, const char *needle)
{
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    bkm_wl_t *w = NULL;
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv1, &err), BKM_OK);
    if (kv2)
        ck_assert_int_eq(bkm_wl_config_add(&cfg, kv2, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_check(wl, &cfg, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' not in '%s'", needle, err.msg);
    ck_assert_int_eq(bkm_wl_create(&w, wl, &cfg, 1, &err), BKM_EINVAL);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' not in '%s'", needle, err.msg);
}

START_TEST(bad_parameters_are_named)
{
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    expect_bad("gemm", "q=3", NULL, "'q'");
    expect_bad("gemm", "m=abc", NULL, "m='abc'");
    expect_bad("gemm", "m=0", NULL, "m=0");
    expect_bad("gemm", "backend=cuda", NULL, "backend='cuda'");
    expect_bad("conv2d", "dir=sideways", NULL, "dir='sideways'");
    expect_bad("conv2d", "shape=alexnet:conv9", NULL, "alexnet:conv9");
    expect_bad("conv2d", "shape=mb2ic3ih5oc4kh9", NULL, "shape=");
    expect_bad("conv2d", "backend=onednn", "ptile=64", "ptile=64");
    expect_bad("alexnet", "batch=-1", NULL, "batch=-1");
    expect_bad("alexnet", "batch=100000", NULL, "batch=100000");
    expect_bad("alexnet", "isa=sse9", NULL, "isa='sse9'");
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "novalue", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "novalue"));
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "=3", &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "m=3", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "m=4", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'m'"));
    ck_assert_str_eq(bkm_wl_config_get(&cfg, "m"), "3");
    ck_assert_ptr_null(bkm_wl_config_get(&cfg, "n"));
    ck_assert_int_eq(bkm_wl_config_check("gemm", &cfg, &err), BKM_OK);
}
END_TEST

/* The kernels' own rules (the ISA's micro-tile, nt_jc against the threads) are checked by
 * bkm_wl_config_check, so that what it accepts is not refused when the workload is created. */
START_TEST(kernel_rules_checked_without_creating)
{
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    if (bkm_kern_isa_detect() >= BKM_ISA_AVX2) {
        expect_bad("gemm", "isa=avx2", "mc=56", "isa=avx2: parameter mc=56 is not a multiple of 6");
        expect_bad("conv2d", "isa=avx2", "mc=56", "mc=56 is not a multiple of mr=6");
        expect_bad("alexnet", "isa=avx2", "mc=56", "mc=56 is not a multiple of mr=6");
        /* the ISA chosen sets the rule, not this CPU's best one */
        bkm_wl_config_init(&cfg);
        ck_assert_int_eq(bkm_wl_config_add(&cfg, "isa=avx2", &err), BKM_OK);
        ck_assert_int_eq(bkm_wl_config_add(&cfg, "mc=12", &err), BKM_OK);
        ck_assert_msg(bkm_wl_config_check("gemm", &cfg, &err) == BKM_OK, "%s", err.msg);
    }
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "algo=2", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "nt_jc=4", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_check("conv2d", &cfg, &err), BKM_OK);   /* threads not known */
    ck_assert_int_eq(bkm_wl_config_check_threads("conv2d", &cfg, 4, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_check_threads("conv2d", &cfg, 2, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, "nt_jc=4 does not divide nt=2") != NULL, "%s", err.msg);
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "nt_jc=3", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_check_threads("gemm", &cfg, 2, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, "gemm: ") == err.msg && strstr(err.msg, "nt_jc=3"), "%s", err.msg);
    ck_assert_int_eq(bkm_wl_config_check_threads("gemm", &cfg, 3, &err), BKM_OK);
    /* the oneDNN backend has no native tunables to check */
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "backend=onednn", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_check_threads("gemm", &cfg, 3, &err), BKM_OK);
}
END_TEST

START_TEST(too_large_for_this_node_is_not_supported)
{
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    bkm_wl_t *wl = NULL;
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    bkm_wl_config_init(&cfg);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "m=65536", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "n=65536", &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, "k=65536", &err), BKM_OK);
    if (3.0 * 4.0 * 65536.0 * 65536.0 < 0.9 * phys) {
        /* a node that holds the 48 GiB problem must accept it (not created here) */
        ck_assert_int_eq(bkm_wl_config_check("gemm", &cfg, &err), BKM_OK);
        return;
    }
    ck_assert_int_eq(bkm_wl_config_check("gemm", &cfg, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "GiB"));
    ck_assert_int_eq(bkm_wl_create(&wl, "gemm", &cfg, 1, &err), BKM_ENOTSUP);
    ck_assert_ptr_null(wl);
}
END_TEST

START_TEST(alexnet_flops_match_workloads_md)
{
    bkm_cnn_desc_t d;
    bkm_err_t err = {0};
    bkm_cnn_shape_t sh[BKM_CNN_MAX_LAYERS];
    bkm_kern_cnn_alexnet(&d, 128);
    ck_assert_int_eq(bkm_kern_cnn_check(&d, sh, &err), BKM_OK);
    ck_assert_int_eq(sh[2].h, 27);   /* pool1 */
    ck_assert_int_eq(sh[12].h, 6);   /* pool5: 256 x 6 x 6 = 9216 */
    ck_assert_int_eq(sh[12].c * sh[12].h * sh[12].w, 9216);
    /* workloads.md §3: fwd 1.428 GF/img, training 4.145 GF/img, 530.5 GF per 128-image step,
     * 61.10 M parameters */
    ck_assert_msg(fabs(bkm_kern_cnn_flops(&d, 0) / 128 / 1e9 - 1.428) < 0.0005, "%g", bkm_kern_cnn_flops(&d, 0));
    ck_assert_msg(fabs(bkm_kern_cnn_flops(&d, 1) / 128 / 1e9 - 4.145) < 0.0005, "%g", bkm_kern_cnn_flops(&d, 1));
    ck_assert(fabs(bkm_kern_cnn_flops(&d, 1) / 1e9 - 530.5) < 0.1);
    ck_assert(fabs((double)bkm_kern_cnn_n_params(&d) / 1e6 - 61.10) < 0.005);
    /* the training count is 3 x fwd minus conv1's bwd-data, which equals conv1's fwd */
    bkm_conv2d_desc_t c1;
    ck_assert_int_eq(bkm_kern_conv2d_desc_parse("alexnet:conv1", 128, &c1, &err), BKM_OK);
    ck_assert(fabs(bkm_kern_cnn_flops(&d, 1) - (3 * bkm_kern_cnn_flops(&d, 0) - bkm_kern_conv2d_flops(&c1))) < 1.0);
}
END_TEST

/* Run @p name with key=value pairs on @p backend: one warm-up + one iteration, return check value. */
static double run_small(const char *name, const char *backend, const char *kv1, const char *kv2, double *flops,
                        char *impl, size_t impl_n)
{
    bkm_wl_config_t cfg;
    bkm_err_t err = {0};
    bkm_wl_t *wl = NULL;
    bkm_wl_sample_t s;
    bkm_buf_t js;
    char b[64];
    double v = 0.0;
    bkm_wl_config_init(&cfg);
    snprintf(b, sizeof b, "backend=%s", backend);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, b, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_config_add(&cfg, kv1, &err), BKM_OK);
    if (kv2)
        ck_assert_int_eq(bkm_wl_config_add(&cfg, kv2, &err), BKM_OK);
    ck_assert_msg(bkm_wl_create(&wl, name, &cfg, 7, &err) == BKM_OK, "%s/%s: %s", name, backend, err.msg);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert_int_eq(bkm_wl_run(wl, &s, &err), BKM_OK);
    ck_assert(s.ms > 0.0);
    ck_assert_int_eq(bkm_wl_check_value(wl, &v, &err), BKM_OK);
    bkm_buf_init(&js);
    ck_assert_int_eq(bkm_wl_check(wl, &js, &err), BKM_OK);
    ck_assert_msg(strncmp(bkm_buf_str(&js), "{\"checksum\":", 12) == 0, "%s", bkm_buf_str(&js));
    bkm_buf_free(&js);
    bkm_buf_init(&js);
    bkm_wl_params_json(wl, &js);
    ck_assert_msg(strstr(bkm_buf_str(&js), backend) != NULL, "%s", bkm_buf_str(&js));
    bkm_buf_free(&js);
    *flops = bkm_wl_flops(wl);
    snprintf(impl, impl_n, "%s", bkm_wl_impl(wl));
    bkm_wl_destroy(wl);
    return v;
}

START_TEST(gemm_and_conv2d_backends_agree)
{
    double f1, f2, a, b;
    char i1[512], i2[512];
    a = run_small("gemm", "native", "m=37", "k=19", &f1, i1, sizeof i1);
    b = run_small("gemm", "onednn", "m=37", "k=19", &f2, i2, sizeof i2);
    ck_assert(f1 == 2.0 * 37 * 1024 * 19 && f2 == f1);
    ck_assert_msg(fabs(a - b) <= 1e-4 * (fabs(a) + 1.0), "gemm checksums %g vs %g", a, b);
    ck_assert_str_eq(i2, "onednn:dnnl_sgemm");
    ck_assert_msg(strncmp(i1, "native:", 7) == 0, "%s", i1);

    a = run_small("conv2d", "native", "shape=mb2g2ic4ih9oc6oh5kh3sh2ph1", NULL, &f1, i1, sizeof i1);
    b = run_small("conv2d", "onednn", "shape=mb2g2ic4ih9oc6oh5kh3sh2ph1", NULL, &f2, i2, sizeof i2);
    ck_assert_msg(fabs(a - b) <= 1e-4 * (fabs(a) + 1.0), "conv2d checksums %g vs %g", a, b);
    /* dir=all: three directions, each 2*N*K*(C/G)*R*S*P*Q */
    ck_assert(f1 == 3 * 2.0 * 2 * 6 * 2 * 9 * 25 && f2 == f1);
    ck_assert_msg(strstr(i2, "bwd_w=onednn:") != NULL, "%s", i2);

    a = run_small("conv2d", "onednn", "shape=alexnet:conv5", "batch=1", &f1, i1, sizeof i1);
    b = run_small("conv2d", "onednn", "shape=alexnet:conv5", "batch=1", &f2, i2, sizeof i2);
    ck_assert(a == b); /* same seed, same backend: bitwise stable */
    run_small("conv2d", "onednn", "shape=alexnet:conv5", "dir=bwd_d", &f2, i2, sizeof i2);
    ck_assert(fabs(f2 * 3 / 128 - f1) < 1.0); /* one direction at batch 128 vs three at batch 1 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("workloads");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, registry_lookups);
    tcase_add_test(tc, parameter_lists_merge_kernel_tunables);
    tcase_add_test(tc, bad_parameters_are_named);
    tcase_add_test(tc, kernel_rules_checked_without_creating);
    tcase_add_test(tc, alexnet_flops_match_workloads_md);
    tcase_add_test(tc, too_large_for_this_node_is_not_supported);
    suite_add_tcase(s, tc);
    tc = tcase_create("run");
    tcase_add_test(tc, gemm_and_conv2d_backends_agree);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
