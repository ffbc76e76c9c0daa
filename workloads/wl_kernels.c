/* SPDX-License-Identifier: MIT */
/* Single-kernel workloads over the benchmark ops: `gemm` (C = A * B) and `conv2d` (one layer,
 * any of fwd / bwd_d / bwd_w). One iteration runs each selected direction once. */
#include <stdio.h>
#include <string.h>

#include "wl_int.h"

#define BACKEND_PARAM                                                                                   \
    {"backend", BKM_WL_ENUM, "native", 0, 0, 1, "native|onednn",                                        \
     "kernel implementation: native (this suite's kernels) or onednn (oneDNN 2.6 reference)", 0}

typedef struct wl_op {
    bkm_kern_op_t *op;
    int dirs;
} wl_op_t;

static int op_dirs_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    wl_op_t *w = wl->priv;
    static const bkm_dir_t order[] = {BKM_DIR_FWD, BKM_DIR_BWD_D, BKM_DIR_BWD_W};
    uint64_t t0 = bkm_now_ns();
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        uint64_t a, b;
        int rc;
        if (!(w->dirs & (int)order[i]))
            continue;
        a = bkm_now_ns();
        if ((rc = bkm_kern_op_exec(w->op, order[i], err)) < 0)
            return rc;
        b = bkm_now_ns();
        if (order[i] == BKM_DIR_FWD)
            s->fwd_ms = (double)(b - a) * 1e-6;
        else
            s->bwd_ms += (double)(b - a) * 1e-6;
    }
    s->ms = (double)(bkm_now_ns() - t0) * 1e-6;
    return BKM_OK;
}

/* Sum of every output buffer, back in the user layout (double accumulation, fixed order). */
static int op_checksum(bkm_wl_t *wl, double *value, bkm_err_t *err)
{
    wl_op_t *w = wl->priv;
    static const bkm_arg_t outs[] = {BKM_ARG_DST, BKM_ARG_DIFF_SRC, BKM_ARG_DIFF_WEI, BKM_ARG_DIFF_BIAS};
    double sum = 0.0;
    int rc;
    if ((rc = bkm_kern_op_finish(w->op, err)) < 0)
        return rc;
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        size_t n = 0;
        const float *p = bkm_kern_op_buffer(w->op, outs[i], &n);
        if (outs[i] == BKM_ARG_DST && !(w->dirs & BKM_DIR_FWD))
            continue;
        for (size_t j = 0; p && j < n; j++)
            sum += (double)p[j];
    }
    *value = sum;
    return BKM_OK;
}

static double op_flops(const bkm_wl_t *wl)
{
    const wl_op_t *w = wl->priv;
    double f = 0.0;
    for (int d = BKM_DIR_FWD; d <= BKM_DIR_BWD_W; d <<= 1)
        if (w->dirs & d)
            f += bkm_kern_op_flops(w->op, (bkm_dir_t)d);
    return f;
}

static void op_destroy(bkm_wl_t *wl)
{
    wl_op_t *w = wl->priv;
    bkm_kern_op_destroy(w->op);
    bkm_free(w);
    wl->priv = NULL;
}

/* impl string: a single name for one direction, else one per direction "fwd=...;bwd_d=..." */
static void op_impl(bkm_wl_t *wl)
{
    wl_op_t *w = wl->priv;
    static const char *names[] = {"fwd", "bwd_d", "bwd_w"};
    size_t len = 0;
    wl->impl[0] = '\0';
    if (w->dirs == BKM_DIR_FWD) {
        snprintf(wl->impl, sizeof wl->impl, "%s", bkm_kern_op_impl(w->op, BKM_DIR_FWD));
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (!(w->dirs & (1 << i)))
            continue;
        snprintf(wl->impl + len, sizeof wl->impl - len, "%s%s=%s", len ? ";" : "", names[i],
                 bkm_kern_op_impl(w->op, (bkm_dir_t)(1 << i)));
        len = strlen(wl->impl);
    }
}

/* Seed the inputs (uniform in [-1, 1), one stream per argument), prepare once (inputs never
 * change between iterations), then record the implementations. */
static int op_finish_create(bkm_wl_t *wl, wl_op_t *w, bkm_err_t *err)
{
    static const bkm_arg_t inputs[] = {BKM_ARG_SRC, BKM_ARG_WEI, BKM_ARG_BIAS, BKM_ARG_DIFF_DST};
    int rc;
    wl->priv = w;
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        size_t n = 0;
        float *p = bkm_kern_op_buffer(w->op, inputs[i], &n);
        if (p)
            bkm__wl_fill_uniform(p, n, 1.0f, wl->seed, (uint64_t)inputs[i]);
    }
    if ((rc = bkm_kern_op_prepare(w->op, err)) < 0)
        return rc;
    op_impl(wl);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* gemm                                                                                       */

static const bkm_wl_param_t gemm_own[] = {
    BACKEND_PARAM,
    {"m", BKM_WL_INT, "1024", 1, 65536, 1, NULL, "rows of A and C", 0},
    {"n", BKM_WL_INT, "1024", 1, 65536, 1, NULL, "columns of B and C", 0},
    {"k", BKM_WL_INT, "1024", 1, 65536, 1, NULL, "columns of A, rows of B", 0},
};

static size_t gemm_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_gemm_params(bkm_kern_isa_detect(), &n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

static int gemm_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    if (wl->be == BKM_BACKEND_NATIVE && bkm_kern_gemm_params_check(&wl->kp, wl->n_threads, err) < 0)
        return bkm_err_prefix(err, "gemm");
    return BKM_OK;
}

static int gemm_create(bkm_wl_t *wl, bkm_err_t *err)
{
    wl_op_t *w = bkm_calloc(1, sizeof *w);
    int rc;
    if (!w)
        return bkm_err_set(err, BKM_ENOMEM, "gemm: out of memory");
    w->dirs = BKM_DIR_FWD;
    if ((rc = bkm_kern_gemm_op_create(&w->op, bkm__wl_int(wl, "m"), bkm__wl_int(wl, "n"), bkm__wl_int(wl, "k"), wl->be,
                                      &wl->kp, err)) < 0) {
        bkm_free(w);
        return bkm_err_prefix(err, "gemm");
    }
    return op_finish_create(wl, w, err);
}

/* A, B, C in the user layout (oneDNN's sgemm works in place; native adds packing buffers). */
static double gemm_bytes(const bkm_wl_t *wl)
{
    double m = (double)bkm__wl_int(wl, "m"), n = (double)bkm__wl_int(wl, "n"), k = (double)bkm__wl_int(wl, "k");
    return 4.0 * (m * k + k * n + m * n) + 64.0 * 1048576.0;
}

const bkm_wl_entry_t bkm__wl_gemm = {
    {"gemm",
     "SGEMM C = A * B (row-major, m x k times k x n, fp32). One iteration is one multiplication; the "
     "inputs are seeded once at creation. Check value: sum of C.",
     "checksum"},
    gemm_own,
    sizeof gemm_own / sizeof gemm_own[0],
    gemm_tunables,
    gemm_validate,
    gemm_bytes,
    gemm_create,
    op_dirs_run,
    op_checksum,
    op_flops,
    op_destroy,
    NULL,
    NULL,
    NULL,
};

/* ---------------------------------------------------------------------------------------- */
/* conv2d                                                                                     */

static const bkm_wl_param_t conv_own[] = {
    BACKEND_PARAM,
    {"shape", BKM_WL_STR, "alexnet:conv2", 0, 0, 1, NULL,
     "benchdnn descriptor (mb32ic192ih13oc384oh13kh3ph1) or alexnet:conv1..alexnet:conv5 (torchvision)", 0},
    {"batch", BKM_WL_INT, "0", 0, 4096, 1, NULL, "minibatch; 0 keeps the shape's own (alexnet:* default 128)", 0},
    {"dir", BKM_WL_ENUM, "all", 0, 0, 1, "fwd|bwd_d|bwd_w|all",
     "directions run per iteration: forward (with bias), backward data, backward weights (with bias)", 0},
};

static size_t conv_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_conv2d_params(&n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

static int conv_dirs(const char *s)
{
    return !strcmp(s, "fwd") ? BKM_DIR_FWD : !strcmp(s, "bwd_d") ? BKM_DIR_BWD_D : !strcmp(s, "bwd_w") ? BKM_DIR_BWD_W
                                                                                                       : BKM_DIR_ALL;
}

static int conv_desc(const bkm_wl_t *wl, bkm_conv2d_desc_t *d, bkm_err_t *err)
{
    int rc = bkm_kern_conv2d_desc_parse(bkm__wl_val(wl, "shape"), bkm__wl_int(wl, "batch"), d, err);
    if (rc < 0)
        return bkm_err_prefix(err, "conv2d: parameter shape='%s'", bkm__wl_val(wl, "shape"));
    return BKM_OK;
}

static int conv_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_conv2d_desc_t d;
    int rc = conv_desc(wl, &d, err);
    if (rc == BKM_OK && wl->be == BKM_BACKEND_NATIVE &&
        bkm_kern_conv2d_params_check(&wl->kp, d.mb, wl->n_threads, err) < 0)
        return bkm_err_prefix(err, "conv2d");
    return rc;
}

static int conv_create(bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_conv2d_desc_t d;
    wl_op_t *w;
    int rc;
    if ((rc = conv_desc(wl, &d, err)) < 0)
        return rc;
    if (!(w = bkm_calloc(1, sizeof *w)))
        return bkm_err_set(err, BKM_ENOMEM, "conv2d: out of memory");
    w->dirs = conv_dirs(bkm__wl_val(wl, "dir"));
    if ((rc = bkm_kern_conv2d_op_create(&w->op, &d, w->dirs, wl->be, &wl->kp, err)) < 0) {
        bkm_free(w);
        return bkm_err_prefix(err, "conv2d");
    }
    return op_finish_create(wl, w, err);
}

/* Every user buffer, and as much again for oneDNN's blocked copies or native's column buffers. */
static double conv_bytes(const bkm_wl_t *wl)
{
    bkm_conv2d_desc_t d;
    double src, dst, wei;
    if (conv_desc(wl, &d, NULL) < 0)
        return 0.0;
    src = (double)d.mb * (double)(d.ic * d.ih * d.iw);
    dst = (double)d.mb * (double)(d.oc * d.oh * d.ow);
    wei = (double)d.oc * (double)(d.ic / d.g) * (double)(d.kh * d.kw);
    return 2.0 * 4.0 * (2.0 * src + 2.0 * dst + 2.0 * wei) + 64.0 * 1048576.0;
}

const bkm_wl_entry_t bkm__wl_conv2d = {
    {"conv2d",
     "One 2-D convolution layer (fp32, NCHW/OIHW user layout; oneDNN may use blocked layouts inside, "
     "reordered outside the timed region). One iteration runs each selected direction once. Check "
     "value: sum of every output (dst, diff_src, diff_wei, diff_bias).",
     "checksum"},
    conv_own,
    sizeof conv_own / sizeof conv_own[0],
    conv_tunables,
    conv_validate,
    conv_bytes,
    conv_create,
    op_dirs_run,
    op_checksum,
    op_flops,
    op_destroy,
    NULL,
    NULL,
    NULL,
};
