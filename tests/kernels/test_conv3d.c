/* SPDX-License-Identifier: MIT */
/* conv3d and 3-D max pooling: the benchdnn 3-D grammar and its errors, vol2col / col2vol (parallel
 * equals serial bit for bit, col2vol is vol2col's adjoint), every direction against the naive
 * references on small odd shapes (stride, padding, non-cubic), and finite-difference gradient
 * checks of conv3d and 3-D pooling. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

/* kernels/kernels_int.h (private): thread t's part of an nt-way split, without a team. */
void bkm__kern_vol2col_part(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int t);
void bkm__kern_col2vol_part(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int t);

static const char *shapes[] = {
    "mb2ic3id7ih6iw5oc4kd3",                      /* cubic kernel, no padding, odd sizes */
    "mb1ic2id6ih7iw9oc3kd3kh2kw3sd2sh1sw2pd1ph0pw1", /* strides, padding, non-cubic */
    "mb3ic1id5ih5iw4oc5kd1kh3kw3ph1pw1",          /* kd 1 */
    "mb2ic4id4ih3iw3oc2kd2sd2",                   /* stride = kernel */
};

START_TEST(desc_grammar)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    bkm_buf_t b;
    /* the seed's conv3d_2 (docs/workloads.md §5) */
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse("mb4ic64id33ih33iw18oc64kd3", 0, &d, &err), BKM_OK);
    ck_assert_int_eq(d.od, 31);
    ck_assert_int_eq(d.oh, 31);
    ck_assert_int_eq(d.ow, 16);
    ck_assert_int_eq(d.kw, 3);
    ck_assert_msg(fabs(bkm_kern_conv3d_flops(&d) / 4 / 2 - 1700.46e6) < 0.01e6, "%g", bkm_kern_conv3d_flops(&d));
    bkm_buf_init(&b);
    bkm_kern_conv3d_desc_format(&d, &b);
    ck_assert_str_eq(bkm_buf_str(&b), "mb4ic64oc64_id33od31kd3sd1pd0_ih33oh31kh3sh1ph0_iw18ow16kw3sw1pw0");
    bkm_buf_free(&b);
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse("mb1_ic2id6ih7iw9_oc3_kd3kh2kw3_sd2sw2_pd1pw1", 5, &d, &err), BKM_OK);
    ck_assert_int_eq(d.mb, 5);
    ck_assert_int_eq(d.od, 3);
    ck_assert_int_eq(d.oh, 4); /* (7 + 2 - 2) / 2 + 1: sh and ph copied from sd and pd */
    ck_assert_int_eq(d.ow, 5);
    ck_assert_int_eq(d.sh, 2); /* sh copies sd, sw given */
    ck_assert_int_eq(d.ph, 1);
    /* errors name the value */
    static const struct { const char *text, *needle; } bad[] = {
        {"mb2ic3ih7oc4kh3", "no id"},
        {"mb2g2ic4id7oc4", "g2"},
        {"mb2ic4id7oc4dd1", "dd1"},
        {"mb2ic0id7oc4", "ic0"},
        {"mb2ic3id2oc4kd3", "empty output"},
        {"mb2ic3id7oc4kd3od9", "od9"},
        {"mb2ic3id7oc4xx3", "xx"},
        {"mb2ic3id7oc4kd3ic5", "ic given twice"},
        {"mb2ic3id70oc4kd65", "kd65"},
        {"mb2ic3id7oc4pd-1", "pd-1"},
        {"", "empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(bkm_kern_conv3d_desc_parse(bad[i].text, 0, &d, &err) == BKM_EINVAL, "%s accepted", bad[i].text);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "%s: '%s' does not name '%s'", bad[i].text, err.msg,
                      bad[i].needle);
    }
}
END_TEST

START_TEST(vol2col_parallel_equals_serial_and_adjoint)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shapes[_i], 1, &d, &err), BKM_OK);
    size_t nin = (size_t)(d.ic * d.id * d.ih * d.iw), ncol = (size_t)(d.ic * d.kd * d.kh * d.kw * d.od * d.oh * d.ow);
    float *x = rnd(nin, 3, 1.0f), *c = rnd(ncol, 4, 1.0f);
    float *c1 = calloc(ncol, sizeof(float)), *cn = calloc(ncol, sizeof(float));
    float *x1 = calloc(nin, sizeof(float)), *xn = calloc(nin, sizeof(float));
    bkm_kern_vol2col(&d, x, c1, 1);
    bkm_kern_col2vol(&d, c, x1, 1);
    /* the team of 2 (this machine's cores), then every part of uneven 3..7-way splits run one by one
     * (ranges start inside rows and kernels; larger teams than cores would only oversubscribe) */
    memset(cn, 0xff, ncol * sizeof(float));
    memset(xn, 0xff, nin * sizeof(float));
    bkm_kern_vol2col(&d, x, cn, 2);
    bkm_kern_col2vol(&d, c, xn, 2);
    ck_assert_msg(memcmp(c1, cn, ncol * sizeof(float)) == 0, "vol2col, 2 threads");
    ck_assert_msg(memcmp(x1, xn, nin * sizeof(float)) == 0, "col2vol, 2 threads");
    for (int nt = 3; nt <= 7; nt++) {
        memset(cn, 0xff, ncol * sizeof(float));
        memset(xn, 0xff, nin * sizeof(float));
        for (int t = nt - 1; t >= 0; t--) {
            bkm__kern_vol2col_part(&d, x, cn, nt, t);
            bkm__kern_col2vol_part(&d, c, xn, nt, t);
        }
        ck_assert_msg(memcmp(c1, cn, ncol * sizeof(float)) == 0, "vol2col, %d parts", nt);
        ck_assert_msg(memcmp(x1, xn, nin * sizeof(float)) == 0, "col2vol, %d parts", nt);
    }
    /* dynamic chunks: odd chunk sizes (rounded up to lines; starts inside rows and kernels), the
     * automatic size, and one chunk larger than the range */
    static const int64_t chunks[4] = {1, 37, 0, (int64_t)1 << 40};
    for (int k = 0; k < 4; k++) {
        memset(cn, 0xff, ncol * sizeof(float));
        memset(xn, 0xff, nin * sizeof(float));
        bkm_kern_vol2col_dyn(&d, x, cn, 2, chunks[k]);
        bkm_kern_col2vol_dyn(&d, c, xn, 2, chunks[k]);
        ck_assert_msg(memcmp(c1, cn, ncol * sizeof(float)) == 0, "vol2col, dynamic chunks of %lld", (long long)chunks[k]);
        ck_assert_msg(memcmp(x1, xn, nin * sizeof(float)) == 0, "col2vol, dynamic chunks of %lld", (long long)chunks[k]);
    }
    /* <vol2col(x), c> == <x, col2vol(c)> */
    double a = 0.0, b = 0.0;
    for (size_t i = 0; i < ncol; i++)
        a += (double)c1[i] * (double)c[i];
    for (size_t i = 0; i < nin; i++)
        b += (double)x[i] * (double)x1[i];
    ck_assert_msg(fabs(a - b) <= 1e-4 * (fabs(a) + 1.0), "%g vs %g", a, b);
    /* one entry by its definition: (c, z, y, x) = (0, kd-1, 0, kw-1) at output (od-1, 0, ow-1) */
    {
        int64_t P = d.od * d.oh * d.ow, row = ((0 * d.kd + d.kd - 1) * d.kh + 0) * d.kw + d.kw - 1;
        int64_t iz = (d.od - 1) * d.sd - d.pd + d.kd - 1, iy = -d.ph, ix = (d.ow - 1) * d.sw - d.pw + d.kw - 1;
        float want = (iz >= 0 && iz < d.id && iy >= 0 && ix >= 0 && ix < d.iw) ? x[(iz * d.ih + iy) * d.iw + ix] : 0.0f;
        ck_assert(c1[row * P + (d.od - 1) * d.oh * d.ow + d.ow - 1] == want);
    }
    free(x), free(c), free(c1), free(cn), free(x1), free(xn);
}
END_TEST

/* A column matrix over 32 MiB takes the streaming-store path: every entry by its definition, for
 * the team, uneven parts run one by one, and a destination that is not 16-byte aligned. */
START_TEST(vol2col_large_streaming_by_definition)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse("mb1ic11id30ih31iw33oc1kd3ph1pw1", 0, &d, &err), BKM_OK);
    const int64_t P = d.od * d.oh * d.ow;
    size_t nin = (size_t)(d.ic * d.id * d.ih * d.iw), ncol = (size_t)(d.ic * d.kd * d.kh * d.kw * P);
    ck_assert(ncol * sizeof(float) >= (size_t)32 << 20);
    float *x = rnd(nin, 9, 1.0f), *buf = calloc(ncol + 1, sizeof(float));
    for (int pass = 0; pass < 3; pass++) {
        float *col = buf + (pass == 2); /* pass 2: 4 bytes off 16-byte alignment */
        memset(buf, 0xff, (ncol + 1) * sizeof(float));
        if (pass == 1)
            for (int t = 0; t < 3; t++)
                bkm__kern_vol2col_part(&d, x, col, 3, t);
        else
            bkm_kern_vol2col(&d, x, col, 2);
        for (int64_t r = 0; r < d.ic * d.kd * d.kh * d.kw; r++) {
            int64_t c = r / (d.kd * d.kh * d.kw), kz = (r / (d.kh * d.kw)) % d.kd, ky = (r / d.kw) % d.kh, kx = r % d.kw;
            for (int64_t o = 0; o < P; o++) {
                int64_t iz = o / (d.oh * d.ow) * d.sd - d.pd + kz, iy = (o / d.ow) % d.oh * d.sh - d.ph + ky,
                        ix = o % d.ow * d.sw - d.pw + kx;
                float want = iz >= 0 && iz < d.id && iy >= 0 && iy < d.ih && ix >= 0 && ix < d.iw
                                 ? x[((c * d.id + iz) * d.ih + iy) * d.iw + ix]
                                 : 0.0f;
                if (col[r * P + o] != want)
                    ck_abort_msg("pass %d row %lld column %lld: %g, want %g", pass, (long long)r, (long long)o,
                                 (double)col[r * P + o], (double)want);
            }
        }
    }
    free(x), free(buf);
}
END_TEST

/* One conv3d object of @p shape with the tunables @p kv (NULL-terminated): every direction against
 * the naive references, a second bwd_w overwriting, the impl naming @p impl. */
static void check_against_reference(const char *shape, const char *const *kv, const char *impl)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    bkm_kern_conv3d_t *cv = NULL;
    bkm_kern_params_t kp;
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shape, 0, &d, &err), BKM_OK);
    bkm_kern_params_init(&kp);
    for (int i = 0; kv[i]; i++)
        ck_assert_msg(bkm_kern_params_add(&kp, kv[i], &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_kern_conv3d_create(&cv, &d, &kp, &err) == BKM_OK, "%s %s: %s", shape, kv[0], err.msg);
    ck_assert_msg(strstr(bkm_kern_conv3d_impl(cv), impl) != NULL, "%s: %s", shape, bkm_kern_conv3d_impl(cv));
    size_t ns = (size_t)(d.mb * d.ic * d.id * d.ih * d.iw), nw = (size_t)(d.oc * d.ic * d.kd * d.kh * d.kw),
           nd = (size_t)(d.mb * d.oc * d.od * d.oh * d.ow);
    float *src = rnd(ns, 1, 1.0f), *wei = rnd(nw, 2, 1.0f), *bias = rnd((size_t)d.oc, 3, 1.0f), *dd = rnd(nd, 4, 1.0f);
    float *y = calloc(nd, 4), *yr = calloc(nd, 4), *gs = calloc(ns, 4), *gsr = calloc(ns, 4);
    float *gw = calloc(nw, 4), *gwr = calloc(nw, 4), *gb = calloc((size_t)d.oc, 4), *gbr = calloc((size_t)d.oc, 4);
    memset(y, 0xff, nd * 4), memset(gs, 0xff, ns * 4), memset(gw, 0xff, nw * 4); /* every element is written */
    ck_assert_int_eq(bkm_kern_conv3d_fwd(cv, src, wei, bias, y, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv3d_bwd_data(cv, dd, wei, gs, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, dd, gw, gb, &err), BKM_OK);
    bkm_kern_conv3d_ref_fwd(&d, src, wei, bias, yr);
    bkm_kern_conv3d_ref_bwd_data(&d, dd, wei, gsr);
    bkm_kern_conv3d_ref_bwd_weights(&d, src, dd, gwr, gbr);
    ck_assert_msg(rel_diff(y, yr, nd) < 1e-5, "fwd %s %s: %g", shape, kv[0], rel_diff(y, yr, nd));
    ck_assert_msg(rel_diff(gs, gsr, ns) < 1e-5, "bwd_d %s %s: %g", shape, kv[0], rel_diff(gs, gsr, ns));
    ck_assert_msg(rel_diff(gw, gwr, nw) < 1e-5, "bwd_w %s %s: %g", shape, kv[0], rel_diff(gw, gwr, nw));
    ck_assert_msg(rel_diff(gb, gbr, (size_t)d.oc) < 1e-5, "bias %s", shape);
    /* a second bwd_w overwrites (does not accumulate) */
    ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, dd, gw, gb, &err), BKM_OK);
    ck_assert(rel_diff(gw, gwr, nw) < 1e-5);
    bkm_kern_conv3d_destroy(cv);
    free(src), free(wei), free(bias), free(dd), free(y), free(yr), free(gs), free(gsr), free(gw), free(gwr);
    free(gb), free(gbr);
}

START_TEST(conv3d_matches_reference)
{
    /* variants: batch-level; intra-sample with parallel vol2col; intra-sample with serial vol2col;
     * depth unfold + conv2d in every direction; depth unfold with the batch-level backward-weights;
     * intra-sample with vol2col/col2vol in dynamic chunks */
    static const char *const algo[6] = {"algo=1", "algo=2", "algo=2", "algo=3", "algo=3", "algo=2"};
    static const char *const v2c[6] = {"v2c=1", "v2c=1", "v2c=0", "bww=1", "bww=2", "v2c=2"};
    static const char *const impl[6] = {".batch.", "vol2col_par_gemm.intra", "vol2col_serial_gemm.intra",
                                        "native:unfold_", "+bww_vol2col_gemm.batch", "vol2col_dyn_gemm.intra"};
    const char *const kv[3] = {algo[_i % 6], v2c[_i % 6], NULL};
    check_against_reference(shapes[_i / 6], kv, impl[_i % 6]);
}
END_TEST

/* The direct convolution (algo 4) on the small odd shapes and on shapes with several and partial lane
 * blocks (oc 70 = 64 + 6 on AVX-512, 4 x 16 + 6 on AVX2; ic 20 for backward-data), padding along every
 * axis (taps classes at both borders), strides (backward-data phases) and kd 1 (a conv2d); with its
 * blocking tunables: channel blocks of 1 (accumulating tiles), one tile per group, 16-pixel
 * backward-weights blocks, the 7-row tile, the gathers over copies zero-padded along x (dpad); on AVX2
 * too (77 without it: skipped, never passed). */
static const char *direct_shapes[] = {
    "mb2ic20id6ih7iw9oc70kd3kh2kw3sd2sh1sw2pd1ph1pw2", /* strides, padding, partial lane blocks */
    "mb3ic17id5ih6iw8oc18kd3pd1",                     /* padding 1 on a 3-tap kernel */
    "mb2ic33id4ih9iw11oc64kd1kh5kw5ph2pw2",           /* a 2-D 5x5 conv with padding 2 (kd 1) */
    "mb2ic8id7ih7iw7oc16kd2sd3kh3sh2kw4sw1pd1ph2pw0", /* stride 3 > kernel 2: pixels without taps */
    "mb2ic1id6ih7iw21oc70kd3",                        /* the pixel-lane forward: rows of 19 across vectors */
    "mb3ic2id5ih6iw7oc9kd2kh3kw3",                    /* ... rows of 5, 36 entries, 9 output channels */
};

START_TEST(conv3d_direct_matches_reference)
{
    static const char *const var[][4] = {
        {"algo=4", NULL, NULL},   {"algo=4", "dkc=1", NULL}, {"algo=4", "dgrp=1", NULL},
        {"algo=4", "dpb=16", NULL}, {"algo=4", "dr=7", "dpx=1"}, {"algo=4", "dpad=2", NULL},
        {"algo=4", "dpad=3", "dkc=2"}, {"algo=4", "isa=avx2", "dpad=3"}, {"algo=4", "isa=avx2", "dkc=3"},
    };
    const int nv = (int)(sizeof var / sizeof var[0]), ns0 = (int)(sizeof shapes / sizeof shapes[0]);
    const int v = _i % nv, sh = _i / nv;
    const char *shape = sh < ns0 ? shapes[sh] : direct_shapes[sh - ns0];
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512 && (v < nv - 2 || bkm_kern_isa_detect() != BKM_ISA_AVX2))
        return; /* the run's exit code says skipped: see the skip test below */
    check_against_reference(shape, var[v], v >= nv - 2 ? "direct.avx2_" : "direct.avx512_");
}
END_TEST

/* The forward with pixels in the lanes is the one taken for short reductions with unit strides and
 * no padding (AVX-512), dpx=1 turns it off, and a padded or longer one never takes it. */
START_TEST(conv3d_direct_px_forward_rule)
{
    static const struct { const char *shape, *kv[3]; int px; } c[] = {
        {"mb4ic1id35ih35iw20oc64kd3", {NULL}, 1},              /* the seed's conv3d_1, auto */
        {"mb4ic1id35ih35iw20oc64kd3", {"algo=4", "dpx=1", NULL}, 0},
        {"mb2ic1id6ih7iw9oc8kd3pd1", {"algo=4", NULL}, 0},     /* padding */
        {"mb2ic3id7ih6iw5oc4kd3", {"algo=4", NULL}, 0},        /* 81 entries */
    };
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512)
        return;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        bkm_kern_conv3d_t *cv = NULL;
        bkm_kern_params_t kp;
        ck_assert_int_eq(bkm_kern_conv3d_desc_parse(c[i].shape, 0, &d, &err), BKM_OK);
        bkm_kern_params_init(&kp);
        for (int j = 0; c[i].kv[j]; j++)
            ck_assert_int_eq(bkm_kern_params_add(&kp, c[i].kv[j], &err), BKM_OK);
        ck_assert_msg(bkm_kern_conv3d_create(&cv, &d, &kp, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg((strstr(bkm_kern_conv3d_impl(cv), ".px_fwd") != NULL) == c[i].px, "%s case %zu: %s", c[i].shape,
                      i, bkm_kern_conv3d_impl(cv));
        bkm_kern_conv3d_destroy(cv);
    }
}
END_TEST

/* Backward-data reads a copy of diff_dst zero-padded along x when one image of it exceeds L2 (the seed's
 * conv3d_2: 3.9 MB; the test passes no cache sizes, so 1 MiB is assumed), not for a small one or with
 * dpad=1; dpad=3 pads the forward's input too where it has padding; the impl names each copy. */
START_TEST(conv3d_direct_pad_rule)
{
    static const struct { const char *shape, *kv, *want, *not; } c[] = {
        {"mb1ic64id33ih33iw18oc64kd3", "dpad=0", ".xpad_bwd_d", ".xpad_fwd"},
        {"mb1ic64id33ih33iw18oc64kd3", "dpad=1", NULL, ".xpad"},
        {"mb3ic17id5ih6iw8oc18kd3pd1", "dpad=0", NULL, ".xpad"},
        {"mb3ic17id5ih6iw8oc18kd3pd1", "dpad=3", ".xpad_fwd.xpad_bwd_d", NULL},
        {"mb2ic3id7ih6iw5oc4kd3", "dpad=3", ".xpad_bwd_d", ".xpad_fwd"}, /* no padding: the forward needs none */
    };
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512)
        return;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        bkm_kern_conv3d_t *cv = NULL;
        bkm_kern_params_t kp;
        const char *impl;
        ck_assert_int_eq(bkm_kern_conv3d_desc_parse(c[i].shape, 0, &d, &err), BKM_OK);
        bkm_kern_params_init(&kp);
        ck_assert_int_eq(bkm_kern_params_add(&kp, "algo=4", &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_params_add(&kp, c[i].kv, &err), BKM_OK);
        ck_assert_msg(bkm_kern_conv3d_create(&cv, &d, &kp, &err) == BKM_OK, "%s", err.msg);
        impl = bkm_kern_conv3d_impl(cv);
        ck_assert_msg(!c[i].want || strstr(impl, c[i].want), "case %zu: %s lacks %s", i, impl, c[i].want);
        ck_assert_msg(!c[i].not || !strstr(impl, c[i].not), "case %zu: %s has %s", i, impl, c[i].not);
        bkm_kern_conv3d_destroy(cv);
    }
}
END_TEST

/* The direct convolution computes each element on one thread in one order: the same bits on 1, 2
 * and 3 threads, in every direction (tile split and fixed parts of the backward-weights). */
START_TEST(conv3d_direct_same_bits_for_any_thread_count)
{
    static const char *const sh[] = {"mb3ic17id5ih6iw8oc18kd3pd1", "mb2ic3id7ih6iw5oc70kd3"}; /* 459 / 81 entries */
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    bkm_kern_params_t kp;
    float *out[3][4];
    if (bkm_kern_isa_detect() != BKM_ISA_AVX512 && bkm_kern_isa_detect() != BKM_ISA_AVX2)
        return;
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(sh[_i], 0, &d, &err), BKM_OK);
    bkm_kern_params_init(&kp);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "algo=4", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "dpb=16", &err), BKM_OK); /* several blocks per image */
    size_t ns = (size_t)(d.mb * d.ic * d.id * d.ih * d.iw), nw = (size_t)(d.oc * d.ic * d.kd * d.kh * d.kw),
           nd = (size_t)(d.mb * d.oc * d.od * d.oh * d.ow), n[4] = {nd, ns, nw, (size_t)d.oc};
    float *src = rnd(ns, 41, 1.0f), *wei = rnd(nw, 42, 1.0f), *bias = rnd((size_t)d.oc, 43, 1.0f),
          *dd = rnd(nd, 44, 1.0f);
    const int keep = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        bkm_kern_conv3d_t *cv = NULL;
        omp_set_num_threads(t + 1);
        ck_assert_msg(bkm_kern_conv3d_create(&cv, &d, &kp, &err) == BKM_OK, "%s", err.msg);
        for (int k = 0; k < 4; k++)
            out[t][k] = calloc(n[k], 4);
        ck_assert_int_eq(bkm_kern_conv3d_fwd(cv, src, wei, bias, out[t][0], &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_conv3d_bwd_data(cv, dd, wei, out[t][1], &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, dd, out[t][2], out[t][3], &err), BKM_OK);
        bkm_kern_conv3d_destroy(cv);
    }
    omp_set_num_threads(keep);
    for (int t = 1; t < 3; t++)
        for (int k = 0; k < 4; k++) /* dst, diff_src, diff_wei, diff_bias */
            ck_assert_msg(memcmp(out[0][k], out[t][k], n[k] * 4) == 0, "%s: output %d differs on %d threads", sh[_i],
                          k, t + 1);
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 4; k++)
            free(out[t][k]);
    free(src), free(wei), free(bias), free(dd);
}
END_TEST

/* With reuse on, algo 3 takes the forward's unfold and one swap of diff_dst for both backward
 * directions; a new step (new values in the same buffers) must refresh them: every direction
 * against the naive reference in both backward orders, two steps each. */
START_TEST(conv3d_reuse_within_step)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    bkm_kern_conv3d_t *cv = NULL;
    bkm_kern_params_t kp;
    const char *shape = shapes[_i % 4];
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shape, 0, &d, &err), BKM_OK);
    bkm_kern_params_init(&kp);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "algo=3", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "bww=1", &err), BKM_OK);
    ck_assert_msg(bkm_kern_conv3d_create(&cv, &d, &kp, &err) == BKM_OK, "%s", err.msg);
    bkm_kern_conv3d_set_reuse(cv, 1);
    size_t ns = (size_t)(d.mb * d.ic * d.id * d.ih * d.iw), nw = (size_t)(d.oc * d.ic * d.kd * d.kh * d.kw),
           nd = (size_t)(d.mb * d.oc * d.od * d.oh * d.ow);
    float *src = rnd(ns, 11, 1.0f), *wei = rnd(nw, 12, 1.0f), *bias = rnd((size_t)d.oc, 13, 1.0f),
          *dd = rnd(nd, 14, 1.0f);
    float *y = calloc(nd, 4), *yr = calloc(nd, 4), *gs = calloc(ns, 4), *gsr = calloc(ns, 4);
    float *gw = calloc(nw, 4), *gwr = calloc(nw, 4), *gb = calloc((size_t)d.oc, 4), *gbr = calloc((size_t)d.oc, 4);
    for (int step = 0; step < 2; step++) {
        float *s2 = rnd(ns, 21u + (unsigned)step, 1.0f), *d2 = rnd(nd, 31u + (unsigned)step, 1.0f);
        memcpy(src, s2, ns * sizeof(float)); /* new values, same buffers */
        memcpy(dd, d2, nd * sizeof(float));
        free(s2), free(d2);
        ck_assert_int_eq(bkm_kern_conv3d_fwd(cv, src, wei, bias, y, &err), BKM_OK);
        if (_i / 4 == 0) {
            ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, dd, gw, gb, &err), BKM_OK);
            ck_assert_int_eq(bkm_kern_conv3d_bwd_data(cv, dd, wei, gs, &err), BKM_OK);
        } else {
            ck_assert_int_eq(bkm_kern_conv3d_bwd_data(cv, dd, wei, gs, &err), BKM_OK);
            ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, dd, gw, gb, &err), BKM_OK);
        }
        bkm_kern_conv3d_ref_fwd(&d, src, wei, bias, yr);
        bkm_kern_conv3d_ref_bwd_data(&d, dd, wei, gsr);
        bkm_kern_conv3d_ref_bwd_weights(&d, src, dd, gwr, gbr);
        ck_assert_msg(rel_diff(y, yr, nd) < 1e-5, "fwd %s step %d", shape, step);
        ck_assert_msg(rel_diff(gs, gsr, ns) < 1e-5, "bwd_d %s step %d", shape, step);
        ck_assert_msg(rel_diff(gw, gwr, nw) < 1e-5, "bwd_w %s step %d", shape, step);
        ck_assert_msg(rel_diff(gb, gbr, (size_t)d.oc) < 1e-5, "bias %s step %d", shape, step);
    }
    bkm_kern_conv3d_destroy(cv);
    free(src), free(wei), free(bias), free(dd), free(y), free(yr), free(gs), free(gsr), free(gw), free(gwr);
    free(gb), free(gbr);
}
END_TEST

START_TEST(conv3d_rejects_bad_tunables)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    bkm_kern_conv3d_t *cv = NULL;
    bkm_kern_params_t kp;
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shapes[0], 0, &d, &err), BKM_OK);
    bkm_kern_params_init(&kp);
    ck_assert_int_eq(bkm_kern_params_add(&kp, "v2c=3", &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv3d_create(&cv, &d, &kp, &err), BKM_EINVAL);
    ck_assert_ptr_null(cv);
    ck_assert_ptr_nonnull(strstr(err.msg, "v2c"));
    d.oc = 0;
    ck_assert_int_eq(bkm_kern_conv3d_create(&cv, &d, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "oc0"));
}
END_TEST

/* Finite differences of L = sum(conv(src, wei) * g) against bwd-data and bwd-weights. */
START_TEST(conv3d_gradient_check)
{
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_conv3d_desc_parse(shapes[1], 0, &d, &err), BKM_OK);
    size_t ns = (size_t)(d.mb * d.ic * d.id * d.ih * d.iw), nw = (size_t)(d.oc * d.ic * d.kd * d.kh * d.kw),
           nd = (size_t)(d.mb * d.oc * d.od * d.oh * d.ow);
    float *src = rnd(ns, 5, 1.0f), *wei = rnd(nw, 6, 1.0f), *bias = rnd((size_t)d.oc, 7, 1.0f), *g = rnd(nd, 8, 1.0f),
          *y = calloc(nd, 4);
    float *gs = calloc(ns, 4), *gw = calloc(nw, 4), *gb = calloc((size_t)d.oc, 4);
    bkm_kern_conv3d_t *cv = NULL;
    ck_assert_int_eq(bkm_kern_conv3d_create(&cv, &d, NULL, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv3d_bwd_data(cv, g, wei, gs, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv3d_bwd_weights(cv, src, g, gw, gb, &err), BKM_OK);
    const float eps = 1e-2f;
    for (int pass = 0; pass < 3; pass++) {
        float *v = pass == 0 ? src : pass == 1 ? wei : bias, *grad = pass == 0 ? gs : pass == 1 ? gw : gb;
        size_t n = pass == 0 ? ns : pass == 1 ? nw : (size_t)d.oc;
        for (size_t j = 0; j < n; j += n / 7 + 1) {
            double lp = 0.0, lm = 0.0;
            float keep = v[j];
            v[j] = keep + eps;
            bkm_kern_conv3d_ref_fwd(&d, src, wei, bias, y);
            for (size_t i = 0; i < nd; i++)
                lp += (double)y[i] * g[i];
            v[j] = keep - eps;
            bkm_kern_conv3d_ref_fwd(&d, src, wei, bias, y);
            for (size_t i = 0; i < nd; i++)
                lm += (double)y[i] * g[i];
            v[j] = keep;
            double fd = (lp - lm) / (2.0 * eps);
            ck_assert_msg(fabs(fd - grad[j]) <= 1e-3 * (fabs(fd) + 1.0), "pass %d element %zu: fd %g analytic %g", pass,
                          j, fd, (double)grad[j]);
        }
    }
    bkm_kern_conv3d_destroy(cv);
    free(src), free(wei), free(bias), free(g), free(y), free(gs), free(gw), free(gb);
}
END_TEST

START_TEST(pool3d_matches_reference_and_gradient)
{
    bkm_pool3d_desc_t d;
    bkm_err_t err = {0};
    /* k, s, p, size; the wider rows take the vectorised interior (16 outputs, then a remainder) */
    static const int64_t cfg[][4] = {{2, 2, 0, 7}, {3, 2, 1, 6}, {2, 1, 0, 5}, {2, 2, 0, 41}, {3, 2, 1, 29}, {2, 1, 0, 22}, {3, 3, 1, 40}};
    ck_assert_int_eq(bkm_kern_pool3d_desc_init(&d, 2, 3, cfg[_i][3], cfg[_i][3] - 1, cfg[_i][3] + 1, cfg[_i][0],
                                               cfg[_i][1], cfg[_i][2], &err), BKM_OK);
    size_t ni = (size_t)(d.mb * d.c * d.id * d.ih * d.iw), no = (size_t)(d.mb * d.c * d.od * d.oh * d.ow);
    float *src = malloc(ni * 4), *g = rnd(no, 9, 1.0f), *y = calloc(no, 4), *yr = calloc(no, 4);
    float *gs = calloc(ni, 4), *gsr = calloc(ni, 4);
    int32_t *arg = calloc(no, sizeof(int32_t));
    for (size_t i = 0; i < ni; i++) /* distinct values: no ties, finite differences keep the argmax */
        src[i] = (float)((i * 7919u) % ni) * 0.01f;
    bkm_kern_maxpool3d_fwd(&d, src, y, arg);
    bkm_kern_maxpool3d_bwd(&d, g, arg, gs);
    bkm_kern_maxpool3d_ref_fwd(&d, src, yr);
    bkm_kern_maxpool3d_ref_bwd(&d, src, g, gsr);
    ck_assert(rel_diff(y, yr, no) == 0.0);
    ck_assert(rel_diff(gs, gsr, ni) < 1e-6);
    { /* ties: the first maximum in row-major order wins, as the reference */
        float *q = malloc(ni * 4), *gq = calloc(ni, 4), *gqr = calloc(ni, 4);
        for (size_t i = 0; i < ni; i++)
            q[i] = (float)((i * 7919u) % 3u);
        bkm_kern_maxpool3d_fwd(&d, q, y, arg);
        bkm_kern_maxpool3d_bwd(&d, g, arg, gq);
        bkm_kern_maxpool3d_ref_bwd(&d, q, g, gqr);
        ck_assert(rel_diff(gq, gqr, ni) < 1e-6);
        free(q), free(gq), free(gqr);
    }
    /* finite differences on the small shapes (the wide ones' values outgrow eps in float) */
    for (size_t j = 0; _i < 3 && j < ni; j += ni / 11 + 1) {
        double lp = 0.0, lm = 0.0, eps = 1e-3;
        float keep = src[j];
        src[j] = keep + (float)eps;
        bkm_kern_maxpool3d_ref_fwd(&d, src, yr);
        for (size_t i = 0; i < no; i++)
            lp += (double)yr[i] * g[i];
        src[j] = keep - (float)eps;
        bkm_kern_maxpool3d_ref_fwd(&d, src, yr);
        for (size_t i = 0; i < no; i++)
            lm += (double)yr[i] * g[i];
        src[j] = keep;
        ck_assert_msg(fabs((lp - lm) / (2 * eps) - gs[j]) < 1e-2, "element %zu", j);
    }
    /* bad windows */
    ck_assert_int_eq(bkm_kern_pool3d_desc_init(&d, 1, 1, 4, 4, 4, 2, 2, 2, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "p2"));
    ck_assert_int_eq(bkm_kern_pool3d_desc_init(&d, 1, 1, 1, 4, 4, 2, 2, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty output"));
    free(src), free(g), free(y), free(yr), free(gs), free(gsr), free(arg);
}
END_TEST

static Suite *conv3d_suite(void)
{
    Suite *s = suite_create("conv3d");
    TCase *tc = tcase_create("conv3d");
    tcase_add_test(tc, desc_grammar);
    tcase_add_loop_test(tc, vol2col_parallel_equals_serial_and_adjoint, 0, (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_loop_test(tc, conv3d_matches_reference, 0, 6 * (int)(sizeof shapes / sizeof shapes[0]));
    tcase_add_loop_test(tc, conv3d_direct_matches_reference, 0,
                        9 * (int)(sizeof shapes / sizeof shapes[0] + sizeof direct_shapes / sizeof direct_shapes[0]));
    tcase_add_loop_test(tc, conv3d_reuse_within_step, 0, 8);
    tcase_add_loop_test(tc, conv3d_direct_same_bits_for_any_thread_count, 0, 2);
    tcase_add_test(tc, conv3d_direct_px_forward_rule);
    tcase_add_test(tc, conv3d_direct_pad_rule);
    tcase_add_test(tc, vol2col_large_streaming_by_definition);
    tcase_add_test(tc, conv3d_rejects_bad_tunables);
    tcase_add_test(tc, conv3d_gradient_check);
    tcase_add_loop_test(tc, pool3d_matches_reference_and_gradient, 0, 7);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(conv3d_suite)
