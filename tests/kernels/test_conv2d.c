/* SPDX-License-Identifier: MIT */
/* conv2d: descriptor grammar (good and bad), FLOP count, every direction of the native conv2d
 * against the reference on small odd shapes for every algorithm, tile size and ISA, tunable
 * validation, and the op abstraction (native conv2d and GEMM ops, oneDNN op against native). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                    */

/* |got - ref| <= tol_per_term * terms + 1e-5 for every element; terms = products per element. */
static void assert_close(const char *what, const float *got, const float *ref, size_t n, double terms)
{
    const double tol = 4e-7 * terms + 1e-5;
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - (double)ref[i]) <= tol))
            ck_abort_msg("%s: element %zu is %.7g, reference %.7g (tolerance %.3g)", what, i, (double)got[i],
                         (double)ref[i], tol);
}

static size_t n_src(const bkm_conv2d_desc_t *d) { return (size_t)(d->mb * d->ic * d->ih * d->iw); }
static size_t n_dst(const bkm_conv2d_desc_t *d) { return (size_t)(d->mb * d->oc * d->oh * d->ow); }
static size_t n_wei(const bkm_conv2d_desc_t *d) { return (size_t)(d->oc * (d->ic / d->g) * d->kh * d->kw); }

static void parse_ok(const char *text, int64_t mb, bkm_conv2d_desc_t *d)
{
    bkm_err_t err = {0};
    int rc = bkm_kern_conv2d_desc_parse(text, mb, d, &err);
    ck_assert_msg(rc == BKM_OK, "parse '%s': %s", text, err.msg);
}

/* Run all three directions of the native conv2d with @p params and compare with the reference. */
static void check_conv(const char *text, const bkm_kern_params_t *params)
{
    bkm_conv2d_desc_t d;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    float *src, *wei, *bias, *dst, *dst_ref, *dd, *ds, *ds_ref, *dw, *dw_ref, *db, *db_ref;
    int rc;

    parse_ok(text, 0, &d);
    src = rnd_nr(n_src(&d), 1, 1.0f);
    wei = rnd_nr(n_wei(&d), 2, 1.0f);
    bias = rnd_nr((size_t)d.oc, 3, 1.0f);
    dd = rnd_nr(n_dst(&d), 4, 1.0f);
    dst = rnd_nr(n_dst(&d), 5, 1.0f); /* garbage: outputs must be overwritten */
    ds = rnd_nr(n_src(&d), 6, 1.0f);
    dw = rnd_nr(n_wei(&d), 7, 1.0f);
    db = rnd_nr((size_t)d.oc, 8, 1.0f);
    dst_ref = malloc(n_dst(&d) * sizeof(float));
    ds_ref = malloc(n_src(&d) * sizeof(float));
    dw_ref = malloc(n_wei(&d) * sizeof(float));
    db_ref = malloc((size_t)d.oc * sizeof(float));

    rc = bkm_kern_conv2d_create(&cv, &d, params, &err);
    ck_assert_msg(rc == BKM_OK, "%s: create: %s", text, err.msg);
    ck_assert_ptr_nonnull(strstr(bkm_kern_conv2d_impl(cv), "native:"));

    ck_assert_msg(bkm_kern_conv2d_fwd(cv, src, wei, bias, dst, &err) == BKM_OK, "%s fwd: %s", text, err.msg);
    bkm_kern_conv2d_ref_fwd(&d, src, wei, bias, dst_ref);
    assert_close(text, dst, dst_ref, n_dst(&d), (double)(d.ic / d.g * d.kh * d.kw));

    ck_assert_msg(bkm_kern_conv2d_bwd_data(cv, dd, wei, ds, &err) == BKM_OK, "%s bwd_d: %s", text, err.msg);
    bkm_kern_conv2d_ref_bwd_data(&d, dd, wei, ds_ref);
    assert_close(text, ds, ds_ref, n_src(&d), (double)(d.oc / d.g * d.kh * d.kw));

    ck_assert_msg(bkm_kern_conv2d_bwd_weights(cv, src, dd, dw, db, &err) == BKM_OK, "%s bwd_w: %s", text, err.msg);
    bkm_kern_conv2d_ref_bwd_weights(&d, src, dd, dw_ref, db_ref);
    assert_close(text, dw, dw_ref, n_wei(&d), (double)(d.mb * d.oh * d.ow));
    assert_close(text, db, db_ref, (size_t)d.oc, (double)(d.mb * d.oh * d.ow));

    bkm_kern_conv2d_destroy(cv);
    free(src), free(wei), free(bias), free(dst), free(dst_ref), free(dd), free(ds), free(ds_ref);
    free(dw), free(dw_ref), free(db), free(db_ref);
}

/* Small odd shapes: edge tiles, strides 2 and 4, padding, groups 2, batch 1, 1x1, kh != kw, ic 3. */
static const char *const shapes[] = {
    "mb1ic3ih13iw11oc5kh3kw2ph1pw0",      /* batch 1, kh != kw, ic 3 */
    "mb3g2ic6ih9oc4kh3sh2ph1",            /* groups 2, stride 2 */
    "mb2ic3ih23oc7kh11sh4ph2",            /* AlexNet conv1-like: k11 s4 p2 */
    "mb3ic17ih7oc19kh1",                  /* 1x1 stride 1: no im2col */
    "mb2g2ic10ih8oc6kh1",                 /* grouped 1x1 */
    "mb2ic5ih8oc6kh1sh2",                 /* 1x1 stride 2: im2col */
    "mb5ic8ih6iw7oc13kh5ph2",             /* padding larger than half the image */
    "mb2ic4ih9oc24kh5ph2",                /* 24 = 14 + 10 output rows: the 10-row edge kernel (conv2's 192) */
    "mb4ic2ih5iw3oc3kh2kw3sh1sw2ph0pw1",  /* everything asymmetric */
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void params_with(bkm_kern_params_t *p, const char *a, const char *b)
{
    bkm_err_t err = {0};
    bkm_kern_params_init(p);
    if (a != NULL)
        ck_assert_msg(bkm_kern_params_add(p, a, &err) == BKM_OK, "%s: %s", a, err.msg);
    if (b != NULL)
        ck_assert_msg(bkm_kern_params_add(p, b, &err) == BKM_OK, "%s: %s", b, err.msg);
}

/* ---------------------------------------------------------------------------------------- */
/* Descriptors                                                                                */

START_TEST(desc_named_alexnet)
{
    static const int64_t ic[] = {3, 64, 192, 384, 256}, oc[] = {64, 192, 384, 256, 256};
    static const int64_t oh[] = {55, 27, 13, 13, 13}, kh[] = {11, 5, 3, 3, 3};
    /* fwd MAC per image from docs/workloads.md §3 (millions). */
    static const double mac[] = {70.28, 223.95, 112.14, 149.52, 99.68};
    for (int i = 0; i < 5; i++) {
        char name[32];
        bkm_conv2d_desc_t d;
        snprintf(name, sizeof name, "alexnet:conv%d", i + 1);
        parse_ok(name, 32, &d);
        ck_assert_int_eq(d.mb, 32);
        ck_assert_int_eq(d.ic, ic[i]);
        ck_assert_int_eq(d.oc, oc[i]);
        ck_assert_int_eq(d.oh, oh[i]);
        ck_assert_int_eq(d.ow, oh[i]);
        ck_assert_int_eq(d.kh, kh[i]);
        ck_assert_int_eq(d.g, 1);
        ck_assert_str_eq(d.name, name);
        ck_assert_double_eq_tol(bkm_kern_conv2d_flops(&d) / 32.0 / 2.0 / 1e6, mac[i], 0.01);
    }
    {
        bkm_conv2d_desc_t d;
        parse_ok("alexnet:conv1", 0, &d);
        ck_assert_int_eq(d.mb, 128);
        ck_assert_int_eq(d.sh, 4);
        ck_assert_int_eq(d.ph, 2);
        ck_assert_int_eq(d.ih, 224);
    }
}
END_TEST

START_TEST(desc_benchdnn_grammar)
{
    bkm_conv2d_desc_t d, e;
    bkm_buf_t b = {0};
    /* Defaults: g1 mb2 s1; w copies h; oh and padding deduced. */
    parse_ok("ic192ih13oc384oh13kh3", 0, &d);
    ck_assert_int_eq(d.mb, 2);
    ck_assert_int_eq(d.g, 1);
    ck_assert_int_eq(d.iw, 13);
    ck_assert_int_eq(d.kw, 3);
    ck_assert_int_eq(d.ph, 1);
    ck_assert_int_eq(d.pw, 1);
    ck_assert_int_eq(d.ow, 13);
    ck_assert_int_eq(d.sw, 1);
    /* `_` separators, a name, an explicit oh with stride, batch override. */
    parse_ok("g2_mb256_ic96ih27_oc256oh27_kh5ph2_n\"alexnet:conv2 caffe\"", 8, &d);
    ck_assert_int_eq(d.mb, 8);
    ck_assert_int_eq(d.g, 2);
    ck_assert_str_eq(d.name, "alexnet:conv2 caffe");
    parse_ok("mb2ic3ih227oc96oh55kh11sh4ph0", 0, &d);
    ck_assert_int_eq(d.ow, 55);
    ck_assert_int_eq(d.sw, 4);
    /* No oh: ph defaults to 0. */
    parse_ok("ic4ih10oc4kh3", 0, &d);
    ck_assert_int_eq(d.oh, 8);
    ck_assert_int_eq(d.ph, 0);
    /* Canonical form round-trips. */
    parse_ok("mb3g2ic6ih9iw7oc4kh3kw2sh2sw1ph1pw0", 0, &d);
    bkm_kern_conv2d_desc_format(&d, &b);
    ck_assert_str_eq(bkm_buf_str(&b), "mb3_g2ic6oc4_ih9oh5kh3sh2ph1_iw7ow6kw2sw1pw0");
    parse_ok(bkm_buf_str(&b), 0, &e);
    ck_assert_int_eq(memcmp(&d, &e, sizeof d), 0);
    bkm_buf_free(&b);
    /* FLOPs: 2 * N * K * C/G * R * S * P * Q. */
    ck_assert_double_eq(bkm_kern_conv2d_flops(&d), 2.0 * 3 * 4 * 3 * 3 * 2 * 5 * 6);
}
END_TEST

static void parse_bad(const char *text, const char *must_name)
{
    bkm_conv2d_desc_t d;
    bkm_err_t err = {0};
    int rc = bkm_kern_conv2d_desc_parse(text, 0, &d, &err);
    ck_assert_msg(rc == BKM_EINVAL, "'%s' was accepted (rc %d)", text, rc);
    ck_assert_msg(strstr(err.msg, must_name) != NULL, "'%s': message '%s' does not name '%s'", text, err.msg,
                  must_name);
}

START_TEST(desc_errors_name_the_value)
{
    parse_bad("ic64ih13oc64kh3_x", "x");              /* not parseable */
    parse_bad("ic64ih13oc64kh3qq7", "qq7");           /* unknown entry */
    parse_bad("ic64ih13oc64kh", "kh");                /* key without number */
    parse_bad("mb2ic4ih5oc8kh7", "oh0");              /* non-positive output size */
    parse_bad("g3ic4ih5oc6kh3", "g3");                /* groups do not divide ic */
    parse_bad("g2ic4ih5oc5kh3", "oc5");               /* groups do not divide oc */
    parse_bad("ic4ih13oc4oh9kh3ph1", "oh9");          /* inconsistent oh */
    parse_bad("ic4ih13iw13oc4ow2kh3pw1", "ow2");      /* inconsistent ow */
    parse_bad("ic4ih13oc4kh3dh1", "dh1");             /* dilation */
    parse_bad("ic4id5ih13oc4kh3", "id5");             /* 3-D */
    parse_bad("ic4ih13oc4kh3sh0", "sh0");             /* zero stride */
    parse_bad("ic0ih13oc4kh3", "ic0");                /* zero channels */
    parse_bad("ih13oc4kh3", "ic");                    /* missing entry */
    parse_bad("ic4ic4ih13oc4kh3", "ic4");             /* repeated entry */
    parse_bad("ic4ih99999999999oc4kh3", "ih");        /* too large */
    parse_bad("alexnet:conv9", "alexnet:conv9");      /* unknown layer */
    parse_bad("ic4ih13oc4kh3n\"open", "open");        /* unterminated name */
    parse_bad("", "lacks");
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Native conv2d against the reference                                                        */

START_TEST(conv_default_all_shapes)
{
    check_conv(shapes[_i], NULL);
}
END_TEST

START_TEST(conv_algo_batch_tiled)
{
    bkm_kern_params_t p;
    params_with(&p, "algo=1", "ptile=16");
    check_conv(shapes[_i], &p);
}
END_TEST

START_TEST(conv_algo_gemm_tiled)
{
    bkm_kern_params_t p;
    params_with(&p, "algo=2", "ptile=32");
    check_conv(shapes[_i], &p);
}
END_TEST

START_TEST(conv_one_and_three_threads)
{
    omp_set_num_threads(1);
    check_conv(shapes[_i], NULL);
    omp_set_num_threads(3); /* mb < 3 for some shapes: auto picks the parallel GEMM */
    check_conv(shapes[_i], NULL);
}
END_TEST

START_TEST(conv_every_isa)
{
    static const char *const isas[] = {"isa=generic", "isa=avx2", "isa=avx512"};
    bkm_kern_params_t p;
    bkm_err_t err = {0};
    bkm_kern_params_init(&p);
    /* main() registers only an ISA this CPU has (test_conv2d_<isa> exits 77 otherwise) */
    ck_assert_msg(bkm_kern_params_add(&p, isas[_i], &err) == BKM_OK, "%s: %s", isas[_i], err.msg);
    ck_assert_int_eq(p.isa, (bkm_isa_t)(BKM_ISA_GENERIC + _i));
    for (size_t s = 0; s < N_SHAPES; s++)
        check_conv(shapes[s], &p);
    ck_assert_int_eq(bkm_kern_params_add(&p, "ptile=48", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&p, "algo=2", &err), BKM_OK);
    for (size_t s = 0; s < N_SHAPES; s++)
        check_conv(shapes[s], &p);
}
END_TEST

START_TEST(conv_bwd_weights_is_reproducible)
{
    bkm_conv2d_desc_t d;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    float *src, *dd, *dw1, *dw2, *db1, *db2;
    parse_ok("mb7ic5ih9oc6kh3ph1", 0, &d);
    src = rnd_nr(n_src(&d), 11, 1.0f);
    dd = rnd_nr(n_dst(&d), 12, 1.0f);
    dw1 = rnd_nr(n_wei(&d), 13, 1.0f);
    dw2 = rnd_nr(n_wei(&d), 14, 1.0f);
    db1 = rnd_nr(6, 15, 1.0f);
    db2 = rnd_nr(6, 16, 1.0f);
    ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv2d_bwd_weights(cv, src, dd, dw1, db1, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv2d_bwd_weights(cv, src, dd, dw2, db2, &err), BKM_OK);
    ck_assert_int_eq(memcmp(dw1, dw2, n_wei(&d) * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(db1, db2, 6 * sizeof(float)), 0);
    bkm_kern_conv2d_destroy(cv);
    free(src), free(dd), free(dw1), free(dw2), free(db1), free(db2);
}
END_TEST

/* algo 3 (packed weights, im2col into GEMM panels, conv2d_fast.c). Extra shapes for its special
 * cases: 16 and 30 channels per group (full 14-row panels plus a 2-row edge panel on AVX-512),
 * and stride 1 with >= 128 input and <= 256 output channels per group (bwd_d computed as the fwd
 * of diff_dst with the flipped, transposed weights), asymmetric kernel and padding included. */
static const char *const fast_shapes[] = {
    "mb3ic5ih9oc16kh3ph1",
    "mb2g2ic4ih7oc60kh3sh2ph1",
    "mb2ic140ih6oc8kh3ph1",
    "mb3g2ic280ih5oc6kh3ph1",
    "mb3ic140ih5iw6oc5kh2kw3ph0pw1",
    "mb3ic3ih123oc20kh11sh4ph2", /* conv1-like: short K, bwd_w reduction cut into 4 parts */
    "mb4ic2ih24oc9kh3ph1",       /* K = 18, 4 parts */
    "mb2ic6ih9oc22kh3ph1",       /* 14 + 8 rows: the widest AVX-512 edge panel */
};
#define N_FAST_SHAPES (sizeof(fast_shapes) / sizeof(fast_shapes[0]))

START_TEST(conv_algo_fast)
{
    bkm_kern_params_t p;
    params_with(&p, "algo=3", NULL);
    check_conv(shapes[_i], &p);
    if (_i < (int)N_FAST_SHAPES)
        check_conv(fast_shapes[_i], &p);
}
END_TEST

/* Tiny blocks: several K and depth blocks (beta = 1 paths), column blocks and bwd_d column tiles
 * that end one image and start the next, partial panels; 1, 2 and 3 threads. */
START_TEST(conv_algo_fast_small_blocks)
{
    bkm_kern_params_t p;
    bkm_err_t err = {0};
    params_with(&p, "algo=3", "kc=5");
    ck_assert_int_eq(bkm_kern_params_add(&p, "nc=32", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&p, "ptile=16", &err), BKM_OK);
    for (int nt = 1; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        check_conv(shapes[_i], &p);
        if (_i < (int)N_FAST_SHAPES)
            check_conv(fast_shapes[_i], &p);
    }
    omp_set_num_threads(2);
}
END_TEST

/* algo 3 on every ISA's micro-kernel (generic 4x8, AVX2 6x16, AVX-512 14x32), with the default
 * blocks and with mc = 2 mr, kc = 3 (several M and K blocks). */
START_TEST(conv_algo_fast_every_isa)
{
    static const char *const isas[] = {"isa=generic", "isa=avx2", "isa=avx512"};
    bkm_kern_params_t p;
    bkm_gemm_cfg_t cfg;
    bkm_err_t err = {0};
    char mc[32];
    params_with(&p, "algo=3", NULL);
    /* main() registers only an ISA this CPU has (test_conv2d_<isa> exits 77 otherwise) */
    ck_assert_msg(bkm_kern_params_add(&p, isas[_i], &err) == BKM_OK, "%s: %s", isas[_i], err.msg);
    for (size_t s = 0; s < N_SHAPES; s++)
        check_conv(shapes[s], &p);
    for (size_t s = 0; s < N_FAST_SHAPES; s++)
        check_conv(fast_shapes[s], &p);
    ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, p.isa, &err), BKM_OK);
    snprintf(mc, sizeof(mc), "mc=%d", 2 * (int)cfg.mr);
    ck_assert_int_eq(bkm_kern_params_add(&p, mc, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&p, "kc=3", &err), BKM_OK);
    for (size_t s = 0; s < N_SHAPES; s++)
        check_conv(shapes[s], &p);
    for (size_t s = 0; s < N_FAST_SHAPES; s++)
        check_conv(fast_shapes[s], &p);
}
END_TEST

/* algo 3 is the default when mb >= threads, names itself, and gives the same bits for 1, 2 and 3
 * threads in every direction (each output element has one owner and one summation order). */
START_TEST(conv_algo_fast_thread_independent)
{
    /* the second shape cuts the bwd_w reduction into parts (short K) */
    static const char *const shapes[] = {"mb5g2ic20ih11oc10kh3ph1", "mb3ic3ih123oc20kh11sh4ph2"};
    bkm_conv2d_desc_t d;
    bkm_kern_params_t p;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    float *src, *wei, *bias, *dd, *out[3][3];
    parse_ok(shapes[_i], 0, &d);
    src = rnd_nr(n_src(&d), 21, 1.0f);
    wei = rnd_nr(n_wei(&d), 22, 1.0f);
    bias = rnd_nr((size_t)d.oc, 23, 1.0f);
    dd = rnd_nr(n_dst(&d), 24, 1.0f);
    params_with(&p, "kc=7", "nc=32");
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, &p, &err), BKM_OK);
        ck_assert_msg(strstr(bkm_kern_conv2d_impl(cv), "im2col_packed") != NULL, "default impl %s",
                      bkm_kern_conv2d_impl(cv));
        out[t][0] = rnd_nr(n_dst(&d), 30, 1.0f);
        out[t][1] = rnd_nr(n_src(&d), 31, 1.0f);
        out[t][2] = rnd_nr(n_wei(&d), 32, 1.0f);
        ck_assert_int_eq(bkm_kern_conv2d_fwd(cv, src, wei, bias, out[t][0], &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_conv2d_bwd_data(cv, dd, wei, out[t][1], &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_conv2d_bwd_weights(cv, src, dd, out[t][2], NULL, &err), BKM_OK);
        bkm_kern_conv2d_destroy(cv);
        cv = NULL;
    }
    omp_set_num_threads(2);
    for (int t = 1; t < 3; t++) {
        ck_assert_int_eq(memcmp(out[0][0], out[t][0], n_dst(&d) * sizeof(float)), 0);
        ck_assert_int_eq(memcmp(out[0][1], out[t][1], n_src(&d) * sizeof(float)), 0);
        ck_assert_int_eq(memcmp(out[0][2], out[t][2], n_wei(&d) * sizeof(float)), 0);
    }
    for (int t = 0; t < 3; t++)
        free(out[t][0]), free(out[t][1]), free(out[t][2]);
    free(src), free(wei), free(bias), free(dd);
}
END_TEST

/* algo 4, the direct convolution: every ungrouped shape against the reference with the default
 * blocks, channel blocks of 2 with one tile per group, and on AVX2 (AVX-512 and AVX2 only: without
 * them it is refused, naming the ISA); a grouped shape is refused naming g. The same bits for 1, 2
 * and 3 threads. */
START_TEST(conv_algo_direct)
{
    static const char *const var[][3] = {{"algo=4", NULL}, {"algo=4", "dkc=2"}, {"algo=4", "isa=avx2"}};
    const bkm_isa_t isa = bkm_kern_isa_detect();
    bkm_conv2d_desc_t d;
    bkm_kern_params_t p;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    parse_ok(shapes[_i], 0, &d);
    for (int v = 0; v < 3; v++) {
        if (isa != BKM_ISA_AVX512 && (v < 2 || isa != BKM_ISA_AVX2))
            continue;
        params_with(&p, var[v][0], var[v][1]);
        if (v == 1)
            ck_assert_int_eq(bkm_kern_params_add(&p, "dgrp=1", &err), BKM_OK);
        if (d.g > 1) {
            ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, &p, &err), BKM_ENOTSUP);
            ck_assert_ptr_nonnull(strstr(err.msg, "g2"));
            continue;
        }
        check_conv(shapes[_i], &p);
        ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, &p, &err), BKM_OK);
        ck_assert_ptr_nonnull(strstr(bkm_kern_conv2d_impl(cv), "native:direct."));
        bkm_kern_conv2d_destroy(cv);
    }
    if (d.g == 1 && isa == BKM_ISA_AVX512) {
        float *src = rnd_nr(n_src(&d), 41, 1.0f), *wei = rnd_nr(n_wei(&d), 42, 1.0f), *dd = rnd_nr(n_dst(&d), 43, 1.0f);
        float *out[3][3];
        params_with(&p, "algo=4", NULL);
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, &p, &err), BKM_OK);
            out[t][0] = calloc(n_dst(&d), 4), out[t][1] = calloc(n_src(&d), 4), out[t][2] = calloc(n_wei(&d), 4);
            ck_assert_int_eq(bkm_kern_conv2d_fwd(cv, src, wei, NULL, out[t][0], &err), BKM_OK);
            ck_assert_int_eq(bkm_kern_conv2d_bwd_data(cv, dd, wei, out[t][1], &err), BKM_OK);
            ck_assert_int_eq(bkm_kern_conv2d_bwd_weights(cv, src, dd, out[t][2], NULL, &err), BKM_OK);
            bkm_kern_conv2d_destroy(cv);
        }
        omp_set_num_threads(2);
        for (int t = 1; t < 3; t++) {
            ck_assert_int_eq(memcmp(out[0][0], out[t][0], n_dst(&d) * 4), 0);
            ck_assert_int_eq(memcmp(out[0][1], out[t][1], n_src(&d) * 4), 0);
            ck_assert_int_eq(memcmp(out[0][2], out[t][2], n_wei(&d) * 4), 0);
        }
        for (int t = 0; t < 3; t++)
            free(out[t][0]), free(out[t][1]), free(out[t][2]);
        free(src), free(wei), free(dd);
    }
}
END_TEST

/* algo 4 on shapes past one register block: 67 output and 70 input channels (a full and a partial
 * lane block in each gather direction), 7 images of 13 x 13 with padding 1 (two chunks of images; the
 * border rows of 13 pixels share their tiles across images, the last chunk holds one image), a plane
 * of 900 pixels (several groups, pixel blocks of 16 in backward-weights), and auto on both. */
START_TEST(conv_algo_direct_blocks)
{
    static const char *const sh[] = {"mb7ic70ih13oc67kh3ph1", "mb2ic9ih30oc64kh5ph2"};
    static const char *const var[][2] = {{"algo=4", NULL}, {"algo=4", "dgrp=1"}, {"algo=4", "dkc=16"},
                                         {"algo=4", "dpb=16"}, {"algo=0", NULL}, {"algo=4", "isa=avx2"}};
    const bkm_isa_t isa = bkm_kern_isa_detect();
    bkm_kern_params_t p;
    if (isa != BKM_ISA_AVX512 && isa != BKM_ISA_AVX2)
        return;
    for (size_t v = 0; v < sizeof var / sizeof var[0]; v++) {
        if (isa != BKM_ISA_AVX512 && v != 5)
            continue;
        params_with(&p, var[v][0], var[v][1]);
        check_conv(sh[_i], &p);
    }
}
END_TEST

/* Auto on AVX-512: the direct convolution for every direction of a stride-1 layer, the direct forward
 * and backward-weights with the im2col backward-data for AlexNet conv1's stride 4, im2col for groups;
 * each named in the impl. */
START_TEST(conv_auto_direction_rule)
{
    static const struct { const char *shape, *impl; } c[] = {
        {"mb2ic4ih9oc24kh5ph2", "native:direct.avx512_6x64"},
        {"mb2ic3ih23oc7kh11sh4ph2",
         "native:direct.avx512_6x64.fwd+im2col_packed.bwd_d+direct.avx512_6x64.bwd_w"},
        {"mb3g2ic6ih9oc4kh3sh2ph1", "native:im2col_packed.avx512_14x32"},
    };
    bkm_conv2d_desc_t d;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512)
        return;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        parse_ok(c[i].shape, 0, &d);
        ck_assert_int_eq(bkm_kern_conv2d_create(&cv, &d, NULL, &err), BKM_OK);
        ck_assert_msg(strncmp(bkm_kern_conv2d_impl(cv), c[i].impl, strlen(c[i].impl)) == 0, "%s: %s", c[i].shape,
                      bkm_kern_conv2d_impl(cv));
        bkm_kern_conv2d_destroy(cv);
    }
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Tunables                                                                                   */

static void create_bad(const char *kv, int want, const char *must_name)
{
    bkm_conv2d_desc_t d;
    bkm_kern_params_t p;
    bkm_kern_conv2d_t *cv = NULL;
    bkm_err_t err = {0};
    int rc;
    parse_ok("mb2ic4ih8oc4kh3", 0, &d);
    bkm_kern_params_init(&p);
    ck_assert_int_eq(bkm_kern_params_add(&p, kv, &err), BKM_OK);
    rc = bkm_kern_conv2d_create(&cv, &d, &p, &err);
    ck_assert_msg(rc == want, "%s: rc %d, expected %d (%s)", kv, rc, want, err.msg);
    ck_assert_ptr_null(cv);
    ck_assert_msg(strstr(err.msg, must_name) != NULL, "%s: message '%s' does not name '%s'", kv, err.msg, must_name);
}

START_TEST(tunables_are_validated)
{
    bkm_kern_params_t p;
    bkm_err_t err = {0};
    size_t n = 0;
    const bkm_param_desc_t *pd = bkm_kern_conv2d_params(&n);
    ck_assert_uint_ge(n, 3);
    ck_assert_str_eq(pd[0].name, "algo");
    create_bad("algo=5", BKM_EINVAL, "algo=5");
    {
        bkm_kern_params_t q;
        params_with(&q, "algo=4", "isa=generic");
        ck_assert_int_eq(bkm_kern_conv2d_params_check(&q, 2, 2, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "algo=4"));
        ck_assert_ptr_nonnull(strstr(err.msg, "isa=generic"));
    }
    create_bad("dr=5", BKM_EINVAL, "dr=5");
    create_bad("dpb=17", BKM_EINVAL, "dpb=17");
    create_bad("algo=-1", BKM_EINVAL, "algo=-1");
    create_bad("ptile=17", BKM_EINVAL, "ptile=17");
    create_bad("bogus=1", BKM_EINVAL, "bogus=1");
    create_bad("kc=9000", BKM_EINVAL, "kc=9000");
    if (bkm_kern_isa_detect() == BKM_ISA_AVX512)
        create_bad("mc=15", BKM_EINVAL, "mc=15"); /* not a multiple of mr = 14 */
    bkm_kern_params_init(&p);
    ck_assert_int_eq(bkm_kern_params_add(&p, "isa=avx9", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "avx9"));
    ck_assert_int_eq(bkm_kern_params_add(&p, "mc", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mc"));
    ck_assert_int_eq(bkm_kern_params_add(&p, "mc=1x", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1x"));
    ck_assert_int_eq(bkm_kern_params_add(&p, "mc=28", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&p, "mc=42", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mc"));
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512) {
        ck_assert_int_eq(bkm_kern_params_add(&p, "isa=avx512", &err), BKM_ENOTSUP);
        ck_assert_ptr_nonnull(strstr(err.msg, "avx512"));
    }
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Ops                                                                                        */

START_TEST(op_native_conv2d_matches_reference)
{
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *op = NULL;
    bkm_err_t err = {0};
    size_t n;
    float *ref_dst, *ref_ds, *ref_dw, *ref_db;
    parse_ok("mb3g2ic6ih11oc8kh3sh2ph1", 0, &d);
    ck_assert_msg(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_ALL, BKM_BACKEND_NATIVE, NULL, &err) == BKM_OK, "%s",
                  err.msg);
    ck_assert_ptr_nonnull(bkm_kern_op_buffer(op, BKM_ARG_SRC, &n));
    ck_assert_uint_eq(n, n_src(&d));
    ck_assert_uint_eq(((uintptr_t)bkm_kern_op_buffer(op, BKM_ARG_WEI, NULL)) % 64, 0);
    ck_assert_ptr_nonnull(bkm_kern_op_buffer(op, BKM_ARG_DIFF_BIAS, &n));
    ck_assert_uint_eq(n, 8);
    ck_assert_ptr_null(bkm_kern_op_buffer(op, BKM_ARG_COUNT, &n));
    ck_assert_int_eq(bkm_kern_op_prepare(op, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_FWD, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_D, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_W, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_finish(op, &err), BKM_OK);
    ref_dst = malloc(n_dst(&d) * sizeof(float));
    ref_ds = malloc(n_src(&d) * sizeof(float));
    ref_dw = malloc(n_wei(&d) * sizeof(float));
    ref_db = malloc(8 * sizeof(float));
    bkm_kern_conv2d_ref_fwd(&d, bkm_kern_op_buffer(op, BKM_ARG_SRC, NULL), bkm_kern_op_buffer(op, BKM_ARG_WEI, NULL),
                            bkm_kern_op_buffer(op, BKM_ARG_BIAS, NULL), ref_dst);
    assert_close("op fwd", bkm_kern_op_buffer(op, BKM_ARG_DST, NULL), ref_dst, n_dst(&d), 27);
    bkm_kern_conv2d_ref_bwd_data(&d, bkm_kern_op_buffer(op, BKM_ARG_DIFF_DST, NULL),
                                 bkm_kern_op_buffer(op, BKM_ARG_WEI, NULL), ref_ds);
    assert_close("op bwd_d", bkm_kern_op_buffer(op, BKM_ARG_DIFF_SRC, NULL), ref_ds, n_src(&d), 36);
    bkm_kern_conv2d_ref_bwd_weights(&d, bkm_kern_op_buffer(op, BKM_ARG_SRC, NULL),
                                    bkm_kern_op_buffer(op, BKM_ARG_DIFF_DST, NULL), ref_dw, ref_db);
    assert_close("op bwd_w", bkm_kern_op_buffer(op, BKM_ARG_DIFF_WEI, NULL), ref_dw, n_wei(&d), 108);
    assert_close("op bwd_w bias", bkm_kern_op_buffer(op, BKM_ARG_DIFF_BIAS, NULL), ref_db, 8, 108);
    ck_assert_double_eq(bkm_kern_op_flops(op, BKM_DIR_BWD_W), bkm_kern_conv2d_flops(&d));
    ck_assert_ptr_nonnull(strstr(bkm_kern_op_impl(op, BKM_DIR_FWD), "native:"));
    ck_assert_ptr_nonnull(bkm_kern_op_params(op, &n));
    ck_assert_uint_ge(n, 3);
    bkm_kern_op_destroy(op);
    free(ref_dst), free(ref_ds), free(ref_dw), free(ref_db);
}
END_TEST

START_TEST(op_errors)
{
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *op = NULL;
    bkm_kern_params_t p;
    bkm_err_t err = {0};
    parse_ok("mb2ic4ih8oc4kh3", 0, &d);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, 8, BKM_BACKEND_NATIVE, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "8"));
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_FWD, BKM_BACKEND_NATIVE, NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_BWD_D, &err), BKM_EINVAL);
    ck_assert_ptr_null(bkm_kern_op_buffer(op, BKM_ARG_DIFF_SRC, NULL));
    ck_assert_double_eq(bkm_kern_op_flops(op, BKM_DIR_BWD_D), 0.0);
    bkm_kern_op_destroy(op);
    params_with(&p, "ptile=20", NULL);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_FWD, BKM_BACKEND_NATIVE, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ptile=20"));
    ck_assert_ptr_null(op);
    params_with(&p, "nc=7", NULL);
    ck_assert_int_eq(bkm_kern_gemm_op_create(&op, 8, 8, 8, BKM_BACKEND_NATIVE, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nc=7"));
    ck_assert_int_eq(bkm_kern_gemm_op_create(&op, 0, 8, 8, BKM_BACKEND_NATIVE, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "m=0"));
    bkm_kern_op_destroy(NULL);
}
END_TEST

/* One table of backends: the names the op and network APIs print, the names parsed (backends with
 * benchmark ops only), and the op creators refusing a backend without ops or an unknown one. */
START_TEST(backend_table)
{
    static const char *const names[] = {"native", "onednn", "ref"};
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *op = NULL;
    bkm_backend_t be;
    bkm_err_t err = {0};
    for (int b = 0; b < 3; b++) {
        ck_assert_str_eq(bkm_kern_backend_name((bkm_backend_t)b), names[b]);
        ck_assert_str_eq(bkm_net_engine_name((bkm_net_engine_t)b), names[b]);
    }
    ck_assert_str_eq(bkm_kern_backend_name((bkm_backend_t)3), "unknown");
    ck_assert_str_eq(bkm_net_engine_name((bkm_net_engine_t)-1), "?");
    ck_assert_int_eq(bkm_kern_backend_parse("native", &be, &err), BKM_OK);
    ck_assert_int_eq(be, BKM_BACKEND_NATIVE);
    ck_assert_int_eq(bkm_kern_backend_parse("dnnl", &be, &err), BKM_OK);
    ck_assert_int_eq(be, BKM_BACKEND_ONEDNN);
    ck_assert_int_eq(bkm_kern_backend_parse("ref", &be, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'ref'"));
    parse_ok("mb2ic4ih8oc4kh3", 0, &d);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&op, &d, BKM_DIR_FWD, BKM_BACKEND_REF, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ref backend"));
    ck_assert_ptr_null(op);
    ck_assert_int_eq(bkm_kern_gemm_op_create(&op, 8, 8, 8, (bkm_backend_t)9, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "backend 9"));
    ck_assert_ptr_null(op);
}
END_TEST

START_TEST(op_native_gemm_matches_reference)
{
    bkm_kern_op_t *op = NULL;
    bkm_err_t err = {0};
    float *ref = malloc(37 * 29 * sizeof(float));
    ck_assert_msg(bkm_kern_gemm_op_create(&op, 37, 29, 41, BKM_BACKEND_NATIVE, NULL, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_op_exec(op, BKM_DIR_FWD, &err), BKM_OK);
    bkm_kern_sgemm_ref('N', 'N', 37, 29, 41, 1.0f, bkm_kern_op_buffer(op, BKM_ARG_SRC, NULL), 41,
                       bkm_kern_op_buffer(op, BKM_ARG_WEI, NULL), 29, 0.0f, ref, 29);
    assert_close("gemm op", bkm_kern_op_buffer(op, BKM_ARG_DST, NULL), ref, 37 * 29, 41);
    ck_assert_double_eq(bkm_kern_op_flops(op, BKM_DIR_FWD), 2.0 * 37 * 29 * 41);
    ck_assert_ptr_nonnull(strstr(bkm_kern_op_impl(op, BKM_DIR_FWD), "native:gemm"));
    bkm_kern_op_destroy(op);
    free(ref);
}
END_TEST

START_TEST(op_onednn_gemm_agrees_with_native)
{
    bkm_kern_op_t *nat = NULL, *dnn = NULL;
    bkm_err_t err = {0};
    int rc;
    ck_assert_int_eq(bkm_kern_gemm_op_create(&nat, 45, 19, 77, BKM_BACKEND_NATIVE, NULL, &err), BKM_OK);
    rc = bkm_kern_gemm_op_create(&dnn, 45, 19, 77, BKM_BACKEND_ONEDNN, NULL, &err);   /* oneDNN is required */
    ck_assert_msg(rc == BKM_OK, "onednn gemm op: %s", err.msg);
    ck_assert_int_eq(bkm_kern_op_prepare(dnn, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(nat, BKM_DIR_FWD, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_exec(dnn, BKM_DIR_FWD, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_op_finish(dnn, &err), BKM_OK);
    assert_close("onednn gemm op", bkm_kern_op_buffer(dnn, BKM_ARG_DST, NULL),
                 bkm_kern_op_buffer(nat, BKM_ARG_DST, NULL), 45 * 19, 77);
    bkm_kern_op_destroy(nat);
    bkm_kern_op_destroy(dnn);
}
END_TEST

/* Both backends get identical seeded inputs, so their outputs must agree. */
START_TEST(op_onednn_agrees_with_native)
{
    static const bkm_arg_t outs[] = {BKM_ARG_DST, BKM_ARG_DIFF_SRC, BKM_ARG_DIFF_WEI, BKM_ARG_DIFF_BIAS};
    bkm_conv2d_desc_t d;
    bkm_kern_op_t *nat = NULL, *dnn = NULL;
    bkm_err_t err = {0};
    int rc;
    parse_ok(shapes[_i], 0, &d);
    ck_assert_int_eq(bkm_kern_conv2d_op_create(&nat, &d, BKM_DIR_ALL, BKM_BACKEND_NATIVE, NULL, &err), BKM_OK);
    rc = bkm_kern_conv2d_op_create(&dnn, &d, BKM_DIR_ALL, BKM_BACKEND_ONEDNN, NULL, &err);   /* required */
    ck_assert_msg(rc == BKM_OK, "onednn create %s: %s", shapes[_i], err.msg);
    for (int a = 0; a < BKM_ARG_COUNT; a++) {
        size_t n1, n2;
        float *b1 = bkm_kern_op_buffer(nat, (bkm_arg_t)a, &n1), *b2 = bkm_kern_op_buffer(dnn, (bkm_arg_t)a, &n2);
        ck_assert_uint_eq(n1, n2);
        if (a == BKM_ARG_SRC || a == BKM_ARG_WEI || a == BKM_ARG_BIAS || a == BKM_ARG_DIFF_DST)
            ck_assert_int_eq(memcmp(b1, b2, n1 * sizeof(float)), 0);
    }
    ck_assert_int_eq(bkm_kern_op_prepare(dnn, &err), BKM_OK);
    for (int dir = BKM_DIR_FWD; dir <= BKM_DIR_BWD_W; dir *= 2) {
        ck_assert_int_eq(bkm_kern_op_exec(nat, (bkm_dir_t)dir, &err), BKM_OK);
        ck_assert_msg(bkm_kern_op_exec(dnn, (bkm_dir_t)dir, &err) == BKM_OK, "onednn dir %d: %s", dir, err.msg);
    }
    ck_assert_int_eq(bkm_kern_op_finish(dnn, &err), BKM_OK);
    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
        size_t n;
        float *b1 = bkm_kern_op_buffer(nat, outs[i], &n);
        if (b1 != NULL)
            assert_close(shapes[_i], bkm_kern_op_buffer(dnn, outs[i], NULL), b1, n,
                         (double)(d.mb * d.oh * d.ow + d.ic * d.kh * d.kw + d.oc * d.kh * d.kw));
    }
    ck_assert_ptr_nonnull(strstr(bkm_kern_op_impl(dnn, BKM_DIR_FWD), "onednn"));
    bkm_kern_op_destroy(nat);
    bkm_kern_op_destroy(dnn);
}
END_TEST

/* isa < 0: every test but the per-ISA ones; otherwise only those, for isas[isa]. */
static Suite *conv2d_suite(int isa)
{
    Suite *s = suite_create("conv2d");
    TCase *tc;
    if (isa >= 0) {
        tc = tcase_create("isa");
        tcase_set_timeout(tc, 120);
        tcase_add_loop_test(tc, conv_every_isa, isa, isa + 1);
        tcase_add_loop_test(tc, conv_algo_fast_every_isa, isa, isa + 1);
        suite_add_tcase(s, tc);
        return s;
    }
    tc = tcase_create("desc");
    tcase_add_test(tc, desc_named_alexnet);
    tcase_add_test(tc, desc_benchdnn_grammar);
    tcase_add_test(tc, desc_errors_name_the_value);
    suite_add_tcase(s, tc);
    tc = tcase_create("native");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, conv_default_all_shapes, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_algo_batch_tiled, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_algo_gemm_tiled, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_one_and_three_threads, 0, N_SHAPES);
    tcase_add_test(tc, conv_bwd_weights_is_reproducible);
    tcase_add_loop_test(tc, conv_algo_fast, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_algo_fast_small_blocks, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_algo_fast_thread_independent, 0, 2);
    tcase_add_loop_test(tc, conv_algo_direct, 0, N_SHAPES);
    tcase_add_loop_test(tc, conv_algo_direct_blocks, 0, 2);
    tcase_add_test(tc, conv_auto_direction_rule);
    suite_add_tcase(s, tc);
    tc = tcase_create("tunables");
    tcase_add_test(tc, tunables_are_validated);
    suite_add_tcase(s, tc);
    tc = tcase_create("op");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, op_native_conv2d_matches_reference);
    tcase_add_test(tc, op_errors);
    tcase_add_test(tc, op_native_gemm_matches_reference);
    tcase_add_loop_test(tc, op_onednn_agrees_with_native, 0, N_SHAPES);
    tcase_add_test(tc, op_onednn_gemm_agrees_with_native);
    tcase_add_test(tc, backend_table);
    suite_add_tcase(s, tc);
    return s;
}

/* test_conv2d: everything but the per-ISA micro-kernel runs; test_conv2d generic|avx2|avx512:
 * those for one ISA, exit 77 (skipped) when this CPU lacks it. */
static Suite *conv2d_suite_of_args(int argc, char **argv, int *status)
{
    static const char *const names[] = {"generic", "avx2", "avx512"};
    int isa = -1;
    if (argc > 1) {
        char kv[32];
        bkm_kern_params_t p;
        bkm_err_t err = {0};
        for (int i = 0; i < 3; i++)
            if (strcmp(argv[1], names[i]) == 0)
                isa = i;
        if (isa < 0) {
            fprintf(stderr, "usage: test_conv2d [generic|avx2|avx512]\n");
            *status = 2;
            return NULL;
        }
        snprintf(kv, sizeof kv, "isa=%s", names[isa]);
        bkm_kern_params_init(&p);
        if (bkm_kern_params_add(&p, kv, &err) == BKM_ENOTSUP) {
            *status = bkm_check_skip("this CPU lacks %s (%s)", names[isa], err.msg);
            return NULL;
        }
    }
    return conv2d_suite(isa);
}

BKM_CHECK_MAIN_ARGS(conv2d_suite_of_args)
