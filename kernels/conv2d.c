/* SPDX-License-Identifier: MIT */
/* Native conv2d, all three directions, as im2col (or no im2col for 1x1/stride-1/no-padding) plus
 * SGEMM per image and group, on tiles of output pixels (ptile) so that the column buffer stays in
 * L2. Two threading algorithms (tunable "algo"):
 *   batch: images are split among threads (static schedule), each thread runs 1-thread GEMMs on
 *          its own column and packing buffers; bwd-weights sums per-thread partial gradients in a
 *          fixed order at the end.
 *   gemm:  images are processed in turn; im2col/col2im are split by channel and each GEMM uses
 *          all threads.
 * Every buffer is allocated in bkm_kern_conv2d_create; the directions never allocate. */
#include "kernels_int.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

enum { ALGO_AUTO = 0, ALGO_BATCH = 1, ALGO_GEMM = 2, ALGO_FAST = 3, ALGO_DIRECT = 4 };
typedef enum { DIR_FWD, DIR_BWD_D, DIR_BWD_W } conv_dir_t;
enum { P_ALGO, P_PTILE, P_MC, P_KC, P_NC, P_NT_JC, P_FUSE, P_DKC, P_DGRP, P_DPB, P_DR, P_DPX, P_DPAD, P_COUNT };

static const bkm_param_desc_t conv2d_params[P_COUNT] = {
    {"algo", 0, 4, 0, 1, "0 auto (mb >= threads: on AVX-512 with one group, 4 per direction but a strided backward-data on 3, elsewhere 3; else 2), 1 batch-parallel images, 2 parallel GEMM, 3 packed weights + im2col into GEMM panels (conv2d_fast.c), 4 direct convolution without a column matrix (dconv.c; one group)"},
    {"ptile", 0, 1 << 20, 0, 16, "output pixels per im2col tile (column buffer K x ptile), 0 = equal tiles of <= 1.5 MiB"},
    {"mc", 0, 8192, 0, 1, "GEMM rows of A per block, multiple of mr; 0 = the ISA default"},
    {"kc", 0, 8192, 0, 1, "GEMM depth per block; 0 = auto (the ISA default, deeper from L2 for many rows)"},
    {"nc", 0, 65536, 0, 1, "GEMM columns of B per block, multiple of nr; 0 = the ISA default"},
    {"nt_jc", 0, 4096, 0, 1, "algo 2: ways the GEMM column loop is split (divides the threads); 0 = auto"},
    {"fuse", 0, 7, 3, 1, "network native engine, a sum of: 1 ReLU in the conv forward store, 2 max pooling with the ReLU before it (ReLU after the pool, ReLU backward in its scatter), 4 ReLU backward in the next conv's bwd-data store; 0 separate passes"},
    {"dkc", 0, 65536, 0, 1, "direct (algo 4): input channels per block of the forward reduction (output channels for backward-data); 0 auto (one lane block's weights in half of L2)"},
    {"dgrp", 0, 256, 0, 1, "direct: register tiles of output pixels per group (the unit of work and of the transposing store); 0 = 16"},
    {"dpb", 0, 65536, 0, 16, "direct: output pixels per block of the backward-weights reduction (diff_dst transposed per block); 0 auto (a quarter of L2)"},
    {"dr", 6, 7, 6, 1, "direct, AVX-512: rows of the 64-lane register tile (6: 24 accumulators, 7: 28)"},
    {"dpx", 0, 1, 0, 1, "direct, AVX-512 forward of at most 64 entries (ic*kh*kw), unit strides, no padding: 0 pixels in the lanes, 1 the gather"},
    {"dpad", 0, 3, 0, 1, "direct, padding: 0 auto (2 when one image of diff_dst exceeds L2, else 1), 1 no copies (boxes of equal valid taps), 2 backward-data from a copy of diff_dst zero-padded along x (no boxes of border columns), 3 the forward from such a copy of src too"},
};

#define COL_TILE_BYTES (3u << 19) /* column tile when the L2 size is unknown: 1.5 MiB (3/4 of 2 MiB) */

struct bkm_kern_conv2d {
    bkm_conv2d_desc_t d;
    int algo;               /* ALGO_BATCH or ALGO_GEMM (resolved) */
    int nt;                 /* threads the workspace was sized for */
    int direct;             /* 1x1, stride 1, no padding: the image is its own column matrix */
    int64_t icg, ocg, kdim; /* per group: input/output channels, K = icg * kh * kw */
    int64_t pq;             /* output pixels per image */
    int64_t ptile;          /* output pixels per column tile */
    bkm_gemm_cfg_t gcfg;    /* nt = 1 (batch) or nt (gemm) */
    size_t col_floats;      /* per thread (batch) or in total (gemm) */
    size_t gws_bytes;       /* per GEMM workspace, rounded to 64 bytes */
    size_t wei_floats;
    float *col;             /* column buffers */
    unsigned char *gws;     /* GEMM packing workspaces */
    float *wpart;           /* batch bwd-weights: per-thread partial diff_wei (nt - 1 of them) */
    bkm_conv2d_fast_t *fast; /* algo 3: its own workspace (the buffers above stay NULL) */
    bkm_dconv_t *dc;         /* algo 4: likewise */
    int dalgo[3];            /* algo 3 or 4: ALGO_FAST or ALGO_DIRECT per direction (DIR_FWD, DIR_BWD_D, DIR_BWD_W) */
    char impl[160];
};

const bkm_param_desc_t *bkm_kern_conv2d_params(size_t *n_params)
{
    if (n_params != NULL)
        *n_params = P_COUNT;
    return conv2d_params;
}

const char *bkm_kern_conv2d_impl(const bkm_kern_conv2d_t *cv)
{
    return cv != NULL ? cv->impl : "native:none";
}

void bkm_kern_conv2d_destroy(bkm_kern_conv2d_t *cv)
{
    if (cv == NULL)
        return;
    bkm_free(cv->col);
    bkm_free(cv->gws);
    bkm_free(cv->wpart);
    bkm__conv2d_fast_destroy(cv->fast);
    bkm__dconv_destroy(cv->dc);
    bkm_free(cv);
}

static int conv2d_gemm_cfg(bkm_kern_conv2d_t *cv, const bkm_kern_params_t *params, const int32_t *v,
                           bkm_err_t *err)
{
    int rc = bkm__kern_gemm_cfg_defaults(&cv->gcfg, params != NULL ? params->isa : BKM_ISA_AUTO, err);
    if (rc < 0)
        return rc;
    cv->gcfg.nt = cv->algo == ALGO_BATCH ? 1 : cv->nt;
    if (v[P_MC] > 0)
        cv->gcfg.mc = v[P_MC];
    if (v[P_KC] > 0)
        cv->gcfg.kc = v[P_KC];
    if (v[P_NC] > 0)
        cv->gcfg.nc = v[P_NC];
    cv->gcfg.nt_jc = cv->algo == ALGO_GEMM ? v[P_NT_JC] : 0;
    cv->gcfg.l2_bytes = params != NULL ? params->cache.l2 : 0;
    cv->gcfg.l1_bytes = params != NULL ? params->cache.l1d : 0;
    return bkm_kern_gemm_cfg_check(&cv->gcfg, err);
}

/* The threading algorithm tunable @p algo resolves to for a batch of @p mb on @p nt threads. */
static int conv2d_algo(int32_t algo, int64_t mb, int nt)
{
    int a = algo != ALGO_AUTO ? algo : (mb >= nt ? ALGO_FAST : ALGO_GEMM);
    return nt == 1 && a == ALGO_GEMM ? ALGO_BATCH : a; /* the same thing, without a parallel region */
}

int bkm_kern_conv2d_params_check(const bkm_kern_params_t *params, int64_t mb, int nt, bkm_err_t *err)
{
    bkm_kern_conv2d_t cv;
    int32_t v[P_COUNT];
    int rc;
    if ((rc = bkm_kern_params_resolve(params, conv2d_params, P_COUNT, v, err)) < 0)
        return rc;
    memset(&cv, 0, sizeof cv);
    if (nt > 0) {
        cv.nt = nt;
        cv.algo = conv2d_algo(v[P_ALGO], mb, nt);
    } else {
        /* thread count unknown: nt_jc is held to its bounds only */
        cv.algo = v[P_ALGO] != ALGO_AUTO ? v[P_ALGO] : ALGO_GEMM;
        cv.nt = v[P_NT_JC] > 0 ? v[P_NT_JC] : 1;
    }
    if ((rc = conv2d_gemm_cfg(&cv, params, v, err)) < 0 && cv.gcfg.isa != BKM_ISA_AUTO)
        return bkm_err_prefix(err, "isa=%s", bkm_kern_isa_name(cv.gcfg.isa));
    if (rc == BKM_OK && v[P_ALGO] == ALGO_DIRECT && cv.gcfg.isa != BKM_ISA_AVX512 && cv.gcfg.isa != BKM_ISA_AVX2)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: parameter algo=4: the direct convolution has no isa=%s kernels",
                           bkm_kern_isa_name(cv.gcfg.isa));
    return rc;
}

/* Algo 3 and 4, each direction on the packed im2col GEMM (conv2d_fast.c) or the direct convolution
 * (dconv.c, the 2-D problem as a 3-D one of depth 1). Auto on AVX-512 with one group: the direct
 * convolution, but for a strided backward-data (AlexNet conv1's forward too: faster than the
 * phase-split forward, docs/performance.md); algo=3 and algo=4 take one path for every direction. */
static int conv2d_fast_direct_create(bkm_kern_conv2d_t *cv, const bkm_kern_params_t *params, const int32_t *v,
                                     bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    const bkm_conv3d_desc_t d3 = {d->mb, d->ic, 1, d->ih, d->iw, d->oc, 1, d->oh, d->ow, 1, d->kh, d->kw,
                                  1, d->sh, d->sw, 0, d->ph, d->pw, d->has_bias, ""};
    const bkm_dconv_cfg_t dcfg = {cv->gcfg.isa, v[P_DKC], v[P_DGRP], v[P_DPB], v[P_DR] == 7, v[P_DPX] == 1,
                                  params->cache.l2, v[P_DPAD]};
    const int strided = d->sh > 1 || d->sw > 1;
    const int mixed = v[P_ALGO] == ALGO_AUTO && cv->gcfg.isa == BKM_ISA_AVX512 && d->g == 1;
    int dirs = 0, rc;
    char fast_name[64] = "";
    for (int i = 0; i < 3; i++)
        cv->dalgo[i] = cv->algo;
    if (mixed) {
        cv->dalgo[DIR_FWD] = ALGO_DIRECT;
        cv->dalgo[DIR_BWD_D] = strided ? ALGO_FAST : ALGO_DIRECT;
        cv->dalgo[DIR_BWD_W] = ALGO_DIRECT;
    }
    if (cv->algo == ALGO_DIRECT && d->g != 1)
        return bkm_err_set(err, BKM_ENOTSUP, "conv2d algo=4: g%lld: the direct convolution has no groups",
                           (long long)d->g);
    for (int i = 0; i < 3; i++)
        dirs |= cv->dalgo[i] == ALGO_DIRECT ? (i == DIR_FWD ? BKM_DCONV_FWD : i == DIR_BWD_D ? BKM_DCONV_BWD_D
                                                                                                : BKM_DCONV_BWD_W)
                                           : 0;
    if (dirs != (BKM_DCONV_FWD | BKM_DCONV_BWD_D | BKM_DCONV_BWD_W)) {
        if ((rc = bkm__conv2d_fast_create(&cv->fast, d, &cv->gcfg, v[P_NC], v[P_PTILE], cv->nt, err)) < 0)
            return rc;
        bkm__conv2d_fast_name(cv->fast, cv->gcfg.isa, fast_name, sizeof fast_name);
    }
    if (dirs && (rc = bkm__dconv_create(&cv->dc, &d3, &dcfg, dirs, cv->nt, err)) < 0) {
        bkm_err_prefix(err, "conv2d algo=4");
        return rc;
    }
    if (!cv->dc)
        snprintf(cv->impl, sizeof(cv->impl), "%s", fast_name);
    else if (!cv->fast)
        snprintf(cv->impl, sizeof(cv->impl), "native:%s", bkm__dconv_name(cv->dc));
    else /* "native:<forward>.fwd+<backward-data>.bwd_d+<backward-weights>.bwd_w" */
        snprintf(cv->impl, sizeof(cv->impl), "native:%s.fwd+%s.bwd_d+%s.bwd_w",
                 cv->dalgo[DIR_FWD] == ALGO_DIRECT ? bkm__dconv_name(cv->dc) : fast_name + strlen("native:"),
                 cv->dalgo[DIR_BWD_D] == ALGO_DIRECT ? bkm__dconv_name(cv->dc) : "im2col_packed",
                 cv->dalgo[DIR_BWD_W] == ALGO_DIRECT ? bkm__dconv_name(cv->dc) : "im2col_packed");
    return BKM_OK;
}

int bkm_kern_conv2d_create(bkm_kern_conv2d_t **out, const bkm_conv2d_desc_t *d, const bkm_kern_params_t *params,
                           bkm_err_t *err)
{
    bkm_kern_params_t none;
    bkm_kern_conv2d_t *cv = NULL;
    int32_t v[P_COUNT];
    size_t n_gws;
    int rc;

    if (out == NULL || d == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d_create: NULL argument");
    *out = NULL;
    if (d->mb <= 0 || d->g <= 0 || d->ic <= 0 || d->oc <= 0 || d->ic % d->g != 0 || d->oc % d->g != 0 ||
        d->oh <= 0 || d->ow <= 0 || d->kh <= 0 || d->kw <= 0 || d->sh <= 0 || d->sw <= 0 || d->ph < 0 || d->pw < 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: inconsistent descriptor (mb%lld g%lld ic%lld oc%lld oh%lld ow%lld)",
                           (long long)d->mb, (long long)d->g, (long long)d->ic, (long long)d->oc, (long long)d->oh,
                           (long long)d->ow);
    if (params == NULL) {
        bkm_kern_params_init(&none);
        params = &none;
    }
    if ((rc = bkm_kern_params_resolve(params, conv2d_params, P_COUNT, v, err)) < 0)
        return rc;

    cv = bkm_calloc(1, sizeof(*cv));
    if (cv == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "conv2d: out of memory");
    cv->d = *d;
    cv->nt = omp_get_max_threads();
    if (cv->nt < 1)
        cv->nt = 1;
    /* auto: algo 3 unless the batch is smaller than the threads (its bwd_d splits images). */
    cv->algo = conv2d_algo(v[P_ALGO], d->mb, cv->nt);
    cv->icg = d->ic / d->g;
    cv->ocg = d->oc / d->g;
    cv->kdim = cv->icg * d->kh * d->kw;
    cv->pq = d->oh * d->ow;
    cv->direct = d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->ph == 0 && d->pw == 0;
    cv->wei_floats = (size_t)(d->oc * cv->kdim);
    if (v[P_PTILE] > 0) {
        cv->ptile = v[P_PTILE];
    } else {
        /* Fewest tiles whose column buffer fits the budget, then equal tiles (no thin edge tile,
         * whose GEMM would repack all the weights for a few columns). */
        const size_t tile = params->cache.l2 > 0 ? (size_t)params->cache.l2 / 4 * 3 : COL_TILE_BYTES;
        const int64_t fit = (int64_t)(tile / sizeof(float)) / cv->kdim;
        const int64_t n_tiles = fit < 1 ? cv->pq : (cv->pq + fit - 1) / fit;
        cv->ptile = (cv->pq + n_tiles - 1) / n_tiles;
        cv->ptile = (cv->ptile + 15) / 16 * 16;
    }
    if (cv->ptile > cv->pq)
        cv->ptile = cv->pq;
    if ((rc = conv2d_gemm_cfg(cv, params, v, err)) < 0)
        goto out;
    if (cv->algo == ALGO_FAST || cv->algo == ALGO_DIRECT) {
        if ((rc = conv2d_fast_direct_create(cv, params, v, err)) < 0)
            goto out;
        *out = cv;
        cv = NULL;
        goto out;
    }

    /* Workspace: one column tile and one GEMM workspace per thread (batch) or one of each (gemm). */
    n_gws = cv->algo == ALGO_BATCH ? (size_t)cv->nt : 1;
    cv->gws_bytes = (bkm_kern_gemm_workspace_bytes(&cv->gcfg) + 63) / 64 * 64;
    cv->col_floats = cv->direct ? 0 : ((size_t)(cv->kdim * cv->ptile) + 15) / 16 * 16;
    cv->gws = bkm_aligned_alloc(64, n_gws * cv->gws_bytes);
    if (cv->col_floats > 0)
        cv->col = bkm_aligned_alloc(64, n_gws * cv->col_floats * sizeof(float));
    if (cv->algo == ALGO_BATCH && cv->nt > 1)
        cv->wpart = bkm_aligned_alloc(64, (size_t)(cv->nt - 1) * cv->wei_floats * sizeof(float));
    if (cv->gws == NULL || (cv->col_floats > 0 && cv->col == NULL) ||
        (cv->algo == ALGO_BATCH && cv->nt > 1 && cv->wpart == NULL)) {
        rc = bkm_err_set(err, BKM_ENOMEM, "conv2d: cannot allocate the workspace (%zu threads x %zu column floats)",
                         n_gws, cv->col_floats);
        goto out;
    }
    /* First touch by the threads that use each part. */
#pragma omp parallel num_threads(cv->nt)
    {
        int t = omp_get_thread_num();
        if ((size_t)t < n_gws) {
            memset(cv->gws + (size_t)t * cv->gws_bytes, 0, cv->gws_bytes);
            if (cv->col != NULL)
                memset(cv->col + (size_t)t * cv->col_floats, 0, cv->col_floats * sizeof(float));
        }
        if (cv->wpart != NULL && t > 0)
            memset(cv->wpart + (size_t)(t - 1) * cv->wei_floats, 0, cv->wei_floats * sizeof(float));
    }
    snprintf(cv->impl, sizeof(cv->impl), "native:%s.%s.%s_%dx%d", cv->direct ? "gemm1x1" : "im2col_gemm",
             cv->algo == ALGO_BATCH ? "batch" : "gemm", bkm_kern_isa_name(cv->gcfg.isa), (int)cv->gcfg.mr,
             (int)cv->gcfg.nr);
    *out = cv;
    cv = NULL;
    rc = BKM_OK;
out:
    bkm_kern_conv2d_destroy(cv);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* One image, one group. col/gws: this caller's buffers; par: split im2col/col2im by channel. */

static void im2col_tile(const bkm_kern_conv2d_t *cv, const float *s, int64_t p0, int64_t np, float *col, int par)
{
    if (par) {
#pragma omp parallel for schedule(static) num_threads(cv->nt)
        for (int64_t c = 0; c < cv->icg; c++)
            bkm__kern_im2col(&cv->d, s, c, c + 1, p0, np, col);
    } else {
        bkm__kern_im2col(&cv->d, s, 0, cv->icg, p0, np, col);
    }
}

static int fwd_image(const bkm_kern_conv2d_t *cv, const float *src, const float *wei, const float *bias,
                     float *dst, float *col, void *gws, int par, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    int rc = BKM_OK;
    for (int64_t g = 0; g < d->g && rc == BKM_OK; g++) {
        const float *s = src + g * cv->icg * d->ih * d->iw;
        const float *w = wei + g * cv->ocg * cv->kdim;
        float *o = dst + g * cv->ocg * cv->pq;
        for (int64_t p0 = 0; p0 < cv->pq && rc == BKM_OK; p0 += cv->ptile) {
            const int64_t np = cv->pq - p0 < cv->ptile ? cv->pq - p0 : cv->ptile;
            if (cv->direct) {
                rc = bkm_kern_sgemm(&cv->gcfg, 'N', 'N', cv->ocg, np, cv->kdim, 1.0f, w, cv->kdim, s + p0, cv->pq,
                                    0.0f, o + p0, cv->pq, gws, err);
            } else {
                im2col_tile(cv, s, p0, np, col, par);
                rc = bkm_kern_sgemm(&cv->gcfg, 'N', 'N', cv->ocg, np, cv->kdim, 1.0f, w, cv->kdim, col, np, 0.0f,
                                    o + p0, cv->pq, gws, err);
            }
            if (rc == BKM_OK && bias != NULL)
                for (int64_t k = 0; k < cv->ocg; k++) {
                    const float b = bias[g * cv->ocg + k];
                    float *ok = o + k * cv->pq + p0;
                    for (int64_t j = 0; j < np; j++)
                        ok[j] += b;
                }
        }
    }
    return rc;
}

static int bwd_data_image(const bkm_kern_conv2d_t *cv, const float *diff_dst, const float *wei, float *diff_src,
                          float *col, void *gws, int par, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    const int64_t plane = d->ih * d->iw;
    int rc = BKM_OK;
    for (int64_t g = 0; g < d->g && rc == BKM_OK; g++) {
        const float *dd = diff_dst + g * cv->ocg * cv->pq;
        const float *w = wei + g * cv->ocg * cv->kdim;
        float *ds = diff_src + g * cv->icg * plane;
        if (cv->direct) {
            /* diff_src (icg x pq) = W^T (icg x ocg) * diff_dst (ocg x pq). */
            rc = bkm_kern_sgemm(&cv->gcfg, 'T', 'N', cv->icg, cv->pq, cv->ocg, 1.0f, w, cv->kdim, dd, cv->pq, 0.0f,
                                ds, cv->pq, gws, err);
            continue;
        }
        memset(ds, 0, (size_t)(cv->icg * plane) * sizeof(float));
        for (int64_t p0 = 0; p0 < cv->pq && rc == BKM_OK; p0 += cv->ptile) {
            const int64_t np = cv->pq - p0 < cv->ptile ? cv->pq - p0 : cv->ptile;
            /* col (K x np) = W^T (K x ocg) * diff_dst tile (ocg x np). */
            rc = bkm_kern_sgemm(&cv->gcfg, 'T', 'N', cv->kdim, np, cv->ocg, 1.0f, w, cv->kdim, dd + p0, cv->pq, 0.0f,
                                col, np, gws, err);
            if (rc != BKM_OK)
                break;
            if (par) {
#pragma omp parallel for schedule(static) num_threads(cv->nt)
                for (int64_t c = 0; c < cv->icg; c++)
                    bkm__kern_col2im(d, col, c, c + 1, p0, np, ds);
            } else {
                bkm__kern_col2im(d, col, 0, cv->icg, p0, np, ds);
            }
        }
    }
    return rc;
}

/* diff_wei += diff_dst(image) * col(image)^T for every group. */
static int bwd_weights_image(const bkm_kern_conv2d_t *cv, const float *src, const float *diff_dst, float *diff_wei,
                             float *col, void *gws, int par, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    int rc = BKM_OK;
    for (int64_t g = 0; g < d->g && rc == BKM_OK; g++) {
        const float *s = src + g * cv->icg * d->ih * d->iw;
        const float *dd = diff_dst + g * cv->ocg * cv->pq;
        float *dw = diff_wei + g * cv->ocg * cv->kdim;
        for (int64_t p0 = 0; p0 < cv->pq && rc == BKM_OK; p0 += cv->ptile) {
            const int64_t np = cv->pq - p0 < cv->ptile ? cv->pq - p0 : cv->ptile;
            const float *b;
            int64_t ldb;
            if (cv->direct) {
                b = s + p0;
                ldb = cv->pq;
            } else {
                im2col_tile(cv, s, p0, np, col, par);
                b = col;
                ldb = np;
            }
            /* dW (ocg x K) += diff_dst tile (ocg x np) * col^T (np x K). */
            rc = bkm_kern_sgemm(&cv->gcfg, 'N', 'T', cv->ocg, cv->kdim, np, 1.0f, dd + p0, cv->pq, b, ldb, 1.0f, dw,
                                cv->kdim, gws, err);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Batch loops. Errors inside a parallel region are kept per thread; the first one is returned. */


typedef struct {
    const float *a, *b, *bias; /* fwd: src, wei, bias; bwd_d: diff_dst, wei; bwd_w: src, diff_dst */
    float *out;                /* dst / diff_src / this thread's diff_wei */
    float *dbias;              /* bwd_w of algo 4: diff_bias (NULL: none) */
} conv_io_t;

static int run_image(const bkm_kern_conv2d_t *cv, conv_dir_t dir, const conv_io_t *io, int64_t n, float *wout,
                     float *col, void *gws, int par, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    const size_t src_img = (size_t)(d->ic * d->ih * d->iw), dst_img = (size_t)(d->oc * cv->pq);
    switch (dir) {
    case DIR_FWD:
        return fwd_image(cv, io->a + n * src_img, io->b, io->bias, io->out + n * dst_img, col, gws, par, err);
    case DIR_BWD_D:
        return bwd_data_image(cv, io->a + n * dst_img, io->b, io->out + n * src_img, col, gws, par, err);
    default:
        return bwd_weights_image(cv, io->a + n * src_img, io->b + n * dst_img, wout, col, gws, par, err);
    }
}

static int run_batch(bkm_kern_conv2d_t *cv, conv_dir_t dir, const conv_io_t *io, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &cv->d;
    int rc = BKM_OK;

    if (cv->dc != NULL && cv->dalgo[dir] == ALGO_DIRECT) {
        if (dir == DIR_FWD)
            bkm__dconv_fwd(cv->dc, io->a, io->b, io->bias, BKM_FAST_ACT_NONE, io->out);
        else if (dir == DIR_BWD_D)
            bkm__dconv_bwd_data(cv->dc, io->a, io->b, io->out);
        else
            bkm__dconv_bwd_weights(cv->dc, io->a, io->b, io->out, io->dbias);
        return BKM_OK;
    }
    if (cv->fast != NULL) {
        if (dir == DIR_FWD)
            bkm__conv2d_fast_fwd(cv->fast, io->a, io->b, io->bias, io->out);
        else if (dir == DIR_BWD_D)
            bkm__conv2d_fast_bwd_data(cv->fast, io->a, io->b, io->out);
        else
            bkm__conv2d_fast_bwd_weights(cv->fast, io->a, io->b, io->out);
        return BKM_OK;
    }
    if (cv->algo == ALGO_GEMM || cv->nt == 1) {
        const int par = cv->algo == ALGO_GEMM;
        if (dir == DIR_BWD_W)
            memset(io->out, 0, cv->wei_floats * sizeof(float));
        for (int64_t n = 0; n < d->mb && rc == BKM_OK; n++)
            rc = run_image(cv, dir, io, n, io->out, cv->col, cv->gws, par, err);
        return rc;
    }

#pragma omp parallel num_threads(cv->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        bkm_err_t terr = {0};
        int trc = BKM_OK;
        float *col = cv->col != NULL ? cv->col + (size_t)t * cv->col_floats : NULL;
        void *gws = cv->gws + (size_t)t * cv->gws_bytes;
        float *wout = NULL;
        /* Static contiguous split of the batch: thread t always gets the same images. */
        const int64_t n0 = d->mb * t / nth, n1 = d->mb * (t + 1) / nth;
        if (dir == DIR_BWD_W) {
            wout = t == 0 ? io->out : cv->wpart + (size_t)(t - 1) * cv->wei_floats;
            memset(wout, 0, cv->wei_floats * sizeof(float));
        }
        for (int64_t n = n0; n < n1 && trc == BKM_OK; n++)
            trc = run_image(cv, dir, io, n, wout, col, gws, 0, &terr);
        if (trc != BKM_OK) {
#pragma omp critical(bkm_conv2d_err)
            if (rc == BKM_OK) {
                rc = trc;
                if (err != NULL)
                    *err = terr;
            }
        }
        if (dir == DIR_BWD_W) {
            /* Fixed-order reduction: diff_wei = part0 + part1 + ... (same order every run). */
#pragma omp barrier
#pragma omp for schedule(static)
            for (int64_t i = 0; i < (int64_t)cv->wei_floats; i++) {
                float acc = io->out[i];
                for (int p = 1; p < nth; p++)
                    acc += cv->wpart[(size_t)(p - 1) * cv->wei_floats + (size_t)i];
                io->out[i] = acc;
            }
        }
    }
    return rc;
}

int bkm_kern_conv2d_fwd(bkm_kern_conv2d_t *cv, const float *src, const float *wei, const float *bias, float *dst,
                        bkm_err_t *err)
{
    conv_io_t io = {src, wei, NULL, dst, NULL};
    if (cv == NULL || src == NULL || wei == NULL || dst == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d_fwd: NULL argument");
    io.bias = cv->d.has_bias ? bias : NULL;
    return run_batch(cv, DIR_FWD, &io, err);
}

int bkm__kern_conv2d_fwd_relu(bkm_kern_conv2d_t *cv, const float *src, const float *wei, const float *bias,
                              float *dst, bkm_err_t *err)
{
    int rc;
    if (cv != NULL && cv->dc != NULL && cv->dalgo[DIR_FWD] == ALGO_DIRECT && src != NULL && wei != NULL &&
        dst != NULL) {
        bkm__dconv_fwd(cv->dc, src, wei, cv->d.has_bias ? bias : NULL, BKM_FAST_ACT_RELU, dst);
        return BKM_OK;
    }
    if (cv != NULL && cv->fast != NULL && src != NULL && wei != NULL && dst != NULL) {
        bkm__conv2d_fast_fwd_act(cv->fast, src, wei, cv->d.has_bias ? bias : NULL, BKM_FAST_ACT_RELU, NULL, dst);
        return BKM_OK;
    }
    if ((rc = bkm_kern_conv2d_fwd(cv, src, wei, bias, dst, err)) < 0)
        return rc;
    bkm_kern_relu_fwd((size_t)(cv->d.mb * cv->d.oc * cv->pq), dst, dst);
    return BKM_OK;
}

int bkm__kern_conv2d_bwd_data_relu(bkm_kern_conv2d_t *cv, const float *diff_dst, const float *wei, const float *y,
                                   float *diff_src, bkm_err_t *err)
{
    int rc;
    if (cv != NULL && cv->fast != NULL && cv->dalgo[DIR_BWD_D] == ALGO_FAST && diff_dst != NULL && wei != NULL &&
        y != NULL && diff_src != NULL) {
        bkm__conv2d_fast_bwd_data_mask(cv->fast, diff_dst, wei, y, diff_src);
        return BKM_OK;
    }
    if (y == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d_bwd_data: NULL argument");
    if ((rc = bkm_kern_conv2d_bwd_data(cv, diff_dst, wei, diff_src, err)) < 0)
        return rc;
    bkm_kern_relu_bwd((size_t)(cv->d.mb * cv->d.ic * cv->d.ih * cv->d.iw), y, diff_src, diff_src);
    return BKM_OK;
}

int bkm_kern_conv2d_bwd_data(bkm_kern_conv2d_t *cv, const float *diff_dst, const float *wei, float *diff_src,
                             bkm_err_t *err)
{
    conv_io_t io = {diff_dst, wei, NULL, diff_src, NULL};
    if (cv == NULL || diff_dst == NULL || wei == NULL || diff_src == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d_bwd_data: NULL argument");
    return run_batch(cv, DIR_BWD_D, &io, err);
}

int bkm_kern_conv2d_bwd_weights(bkm_kern_conv2d_t *cv, const float *src, const float *diff_dst, float *diff_wei,
                                float *diff_bias, bkm_err_t *err)
{
    conv_io_t io = {src, diff_dst, NULL, diff_wei, NULL};
    const bkm_conv2d_desc_t *d;
    int rc;
    if (cv == NULL || src == NULL || diff_dst == NULL || diff_wei == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d_bwd_weights: NULL argument");
    d = &cv->d;
    io.dbias = d->has_bias ? diff_bias : NULL;
    if ((rc = run_batch(cv, DIR_BWD_W, &io, err)) < 0 || (cv->dc != NULL && cv->dalgo[DIR_BWD_W] == ALGO_DIRECT))
        return rc; /* the direct backward-weights sums diff_bias itself */
    if (d->has_bias && diff_bias != NULL) {
        /* One channel per iteration, images in order: deterministic for any thread count. */
#pragma omp parallel for schedule(static) num_threads(cv->nt)
        for (int64_t k = 0; k < d->oc; k++) {
            float acc = 0.0f;
            for (int64_t n = 0; n < d->mb; n++) {
                const float *x = diff_dst + (n * d->oc + k) * cv->pq;
                float s = 0.0f;
                for (int64_t j = 0; j < cv->pq; j++)
                    s += x[j];
                acc += s;
            }
            diff_bias[k] = acc;
        }
    }
    return BKM_OK;
}
