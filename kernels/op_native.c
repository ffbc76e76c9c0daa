/* SPDX-License-Identifier: MIT */
/* The native backend's benchmark ops: conv2d (bkm_kern_conv2d_*) and GEMM (bkm_kern_sgemm) behind
 * the op vtable. Every buffer and workspace is allocated here, at creation. */
#include "backend_int.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Native conv2d op                                                                          */

static int native_nop(bkm_kern_op_t *op, bkm_err_t *err)
{
    return BKM_OK;
}

static int native_conv_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    bkm_kern_conv2d_t *cv = op->priv;
    if (!(op->dirs & (int)dir) || (dir != BKM_DIR_FWD && dir != BKM_DIR_BWD_D && dir != BKM_DIR_BWD_W))
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: direction %d was not requested at creation (dirs=%d)",
                           (int)dir, op->dirs);
    switch (dir) {
    case BKM_DIR_FWD:
        return bkm_kern_conv2d_fwd(cv, op->buf[BKM_ARG_SRC], op->buf[BKM_ARG_WEI], op->buf[BKM_ARG_BIAS],
                                   op->buf[BKM_ARG_DST], err);
    case BKM_DIR_BWD_D:
        return bkm_kern_conv2d_bwd_data(cv, op->buf[BKM_ARG_DIFF_DST], op->buf[BKM_ARG_WEI],
                                        op->buf[BKM_ARG_DIFF_SRC], err);
    default:
        return bkm_kern_conv2d_bwd_weights(cv, op->buf[BKM_ARG_SRC], op->buf[BKM_ARG_DIFF_DST],
                                           op->buf[BKM_ARG_DIFF_WEI], op->buf[BKM_ARG_DIFF_BIAS], err);
    }
}

static const char *native_conv_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    return bkm_kern_conv2d_impl(op->priv);
}

static void native_conv_destroy(bkm_kern_op_t *op)
{
    bkm_kern_conv2d_destroy(op->priv);
    bkm__kern_op_free(op);
}

static const bkm__op_vtbl_t native_conv_vtbl = {native_nop, native_conv_exec, native_nop, native_conv_impl,
                                                         native_conv_destroy};

int bkm__kern_native_conv2d_op_create(bkm_kern_op_t **out, const bkm_conv2d_desc_t *d, int dirs,
                                      const bkm_kern_params_t *params, bkm_err_t *err)
{
    bkm_kern_op_t *op = bkm_calloc(1, sizeof(*op));
    int rc;
    if (op == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "conv2d op: out of memory");
    op->vt = &native_conv_vtbl;
    op->be = BKM_BACKEND_NATIVE;
    op->kind = BKM_OP_CONV2D;
    op->dirs = dirs;
    op->conv = *d;
    op->params = bkm_kern_conv2d_params(&op->n_params);
    if ((rc = bkm_kern_conv2d_create((bkm_kern_conv2d_t **)&op->priv, d, params, err)) < 0)
        goto out;
    bkm__kern_op_conv2d_lens(op);
    if ((rc = bkm__kern_op_alloc_buffers(op, BKM_OP_SEED, err)) < 0)
        goto out;
    *out = op;
    op = NULL;
out:
    if (op != NULL)
        native_conv_destroy(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Native GEMM op                                                                            */

typedef struct {
    bkm_gemm_cfg_t cfg;
    void *ws;
    char impl[128];
} native_gemm_t;

static int native_gemm_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    native_gemm_t *g = op->priv;
    if (dir != BKM_DIR_FWD)
        return bkm_err_set(err, BKM_EINVAL, "gemm op: direction %d is not fwd (1)", (int)dir);
    return bkm_kern_sgemm(&g->cfg, 'N', 'N', op->m, op->n, op->k, 1.0f, op->buf[BKM_ARG_SRC], op->k,
                          op->buf[BKM_ARG_WEI], op->n, 0.0f, op->buf[BKM_ARG_DST], op->n, g->ws, err);
}

static const char *native_gemm_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    const native_gemm_t *g = op->priv;
    return g->impl;
}

static void native_gemm_destroy(bkm_kern_op_t *op)
{
    native_gemm_t *g = op->priv;
    if (g != NULL)
        bkm_free(g->ws);
    bkm_free(g);
    bkm__kern_op_free(op);
}

static const bkm__op_vtbl_t native_gemm_vtbl = {native_nop, native_gemm_exec, native_nop, native_gemm_impl,
                                                         native_gemm_destroy};

int bkm__kern_native_gemm_op_create(bkm_kern_op_t **out, int64_t m, int64_t n, int64_t k,
                                    const bkm_kern_params_t *params, bkm_err_t *err)
{
    bkm_kern_op_t *op = bkm_calloc(1, sizeof(*op));
    native_gemm_t *g = bkm_calloc(1, sizeof(*g));
    size_t ws_bytes;
    int rc;
    if (op == NULL || g == NULL) {
        bkm_free(op);
        bkm_free(g);
        return bkm_err_set(err, BKM_ENOMEM, "gemm op: out of memory");
    }
    op->vt = &native_gemm_vtbl;
    op->be = BKM_BACKEND_NATIVE;
    op->kind = BKM_OP_GEMM;
    op->dirs = BKM_DIR_FWD;
    op->m = m;
    op->n = n;
    op->k = k;
    op->priv = g;
    if ((rc = bkm_kern_gemm_cfg_init(&g->cfg, params->isa, err)) < 0)
        goto out;
    op->params = bkm_kern_gemm_params(g->cfg.isa, &op->n_params);
    /* the rules bkm_kern_gemm_params_check applies, on this process's thread count */
    if ((rc = bkm__kern_gemm_cfg_apply(&g->cfg, params, err)) < 0)
        goto out;
    ws_bytes = bkm_kern_gemm_workspace_bytes(&g->cfg);
    g->ws = bkm_aligned_alloc(64, ws_bytes);
    if (g->ws == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "gemm op: cannot allocate %zu bytes of workspace", ws_bytes);
        goto out;
    }
    memset(g->ws, 0, ws_bytes);
    {
        /* the blocking this shape resolves to (auto kc / nt_jc), as it runs: provenance */
        bkm_gemm_plan_t plan;
        if ((rc = bkm_kern_gemm_plan(&g->cfg, 'N', 'N', m, n, k, &plan, err)) < 0)
            goto out;
        snprintf(g->impl, sizeof(g->impl), "native:gemm.%s_%dx%d.%s(mc=%d,kc=%d*%d,nc=%d,jc=%d)",
                 bkm_kern_isa_name(g->cfg.isa), (int)g->cfg.mr, (int)g->cfg.nr, plan.path, (int)plan.mc,
                 (int)plan.kc, (int)plan.k_passes, (int)plan.nc, (int)plan.nt_jc);
    }
    op->len[BKM_ARG_SRC] = (size_t)(m * k);
    op->len[BKM_ARG_WEI] = (size_t)(k * n);
    op->len[BKM_ARG_DST] = (size_t)(m * n);
    if ((rc = bkm__kern_op_alloc_buffers(op, BKM_OP_SEED, err)) < 0)
        goto out;
    *out = op;
    op = NULL;
out:
    if (op != NULL)
        native_gemm_destroy(op);
    return rc;
}
