/* SPDX-License-Identifier: MIT */
/* oneDNN backend of the LSTM: one vanilla LSTM primitive per layer (forward training or inference,
 * and backward), so that layers with I != H stack like the native ones. Gate order i, f, c~ (g), o
 * is oneDNN's and the native one, so user weights ([I][4][H], [H][4][H], [4][H] = ldigo / ldgo)
 * map one to one. Everything is created up front; fwd/bwd run reorders of the weights into the
 * primitives' layouts, the primitives, and copies of the small state tensors, nothing else. */
#include <stdio.h>
#include <string.h>

#include "onednn_int.h"

enum { W_L, W_I, W_COUNT }; /* weights_layer, weights_iter */

typedef struct odnn_lstm_layer {
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fwd, bwd;
    dnnl_memory_t src_layer;              /* l > 0: the dst_layer of layer l - 1 (borrowed) */
    dnnl_memory_t src_iter, src_iter_c, bias, dst_layer, dst_iter, dst_iter_c, ws, fscratch, bscratch;
    dnnl_memory_t w_user[W_COUNT];        /* over the user's weights (handle set per call) */
    dnnl_memory_t w_fwd[W_COUNT], w_bwd[W_COUNT];
    dnnl_primitive_t r_fwd[W_COUNT], r_bwd[W_COUNT];
    dnnl_memory_t ddst_layer;             /* gradient of this layer's output (l < L-1 owned; top: user dy) */
    dnnl_memory_t dsrc_layer;             /* l > 0: the ddst_layer of layer l - 1 (borrowed); l = 0 owned */
    dnnl_memory_t ddst_iter, ddst_iter_c, dsrc_iter, dsrc_iter_c, dbias;
    dnnl_memory_t dw[W_COUNT], dw_user[W_COUNT];
    dnnl_primitive_t r_dw[W_COUNT];
} odnn_lstm_layer_t;

struct bkm_kern_lstm_onednn {
    bkm_lstm_desc_t d;
    int training;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_attr_t attr;
    dnnl_memory_t x_user, y_user, dy_user, dx_user; /* layer-0 input, top output, their gradients */
    odnn_lstm_layer_t *lay;
    char impl[192];
};

static void mem_free(dnnl_memory_t *m)
{
    if (*m)
        dnnl_memory_destroy(*m);
    *m = NULL;
}

static void prim_free(dnnl_primitive_t *p)
{
    if (*p)
        dnnl_primitive_destroy(*p);
    *p = NULL;
}

void bkm_kern_lstm_onednn_destroy(bkm_kern_lstm_onednn_t *ls)
{
    if (!ls)
        return;
    for (int64_t l = 0; ls->lay && l < ls->d.layers; l++) {
        odnn_lstm_layer_t *y = &ls->lay[l];
        dnnl_memory_t *own[] = {&y->src_iter, &y->src_iter_c, &y->bias, &y->dst_layer, &y->dst_iter, &y->dst_iter_c,
                                &y->ws, &y->fscratch, &y->bscratch, &y->ddst_iter, &y->ddst_iter_c, &y->dsrc_iter,
                                &y->dsrc_iter_c, &y->dbias};
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
            mem_free(own[k]);
        if (l < ls->d.layers - 1)
            mem_free(&y->ddst_layer);
        if (l == 0)
            mem_free(&y->dsrc_layer);
        for (int k = 0; k < W_COUNT; k++) {
            mem_free(&y->w_user[k]), mem_free(&y->w_fwd[k]), mem_free(&y->w_bwd[k]);
            mem_free(&y->dw[k]), mem_free(&y->dw_user[k]);
            prim_free(&y->r_fwd[k]), prim_free(&y->r_bwd[k]), prim_free(&y->r_dw[k]);
        }
        prim_free(&y->fwd), prim_free(&y->bwd);
        if (y->fpd)
            dnnl_primitive_desc_destroy(y->fpd);
        if (y->bpd)
            dnnl_primitive_desc_destroy(y->bpd);
    }
    bkm_free(ls->lay);
    mem_free(&ls->x_user), mem_free(&ls->y_user), mem_free(&ls->dy_user), mem_free(&ls->dx_user);
    if (ls->attr)
        dnnl_primitive_attr_destroy(ls->attr);
    if (ls->strm)
        dnnl_stream_destroy(ls->strm);
    if (ls->eng)
        dnnl_engine_destroy(ls->eng);
    bkm_free(ls);
}

const char *bkm_kern_lstm_onednn_impl(const bkm_kern_lstm_onednn_t *ls)
{
    return ls->impl;
}

static int md_tag(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, dnnl_format_tag_t tag, bkm_err_t *err)
{
    int rc = BKM_OK;
    BKM_ODNN_TRY(dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, tag));
out:
    return rc;
}

static const dnnl_memory_desc_t *q_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int idx)
{
    return dnnl_primitive_desc_query_md(pd, what, idx);
}

static int create_layer(bkm_kern_lstm_onednn_t *ls, int64_t l, bkm_err_t *err)
{
    const bkm_lstm_desc_t *d = &ls->d;
    odnn_lstm_layer_t *y = &ls->lay[l];
    const int64_t N = d->n, T = d->t, H = d->h, I = l == 0 ? d->i : H;
    dnnl_memory_desc_t src_l, st, wl_any, wi_any, wl_u, wi_u, b, dst_l;
    int rc = BKM_OK;
    const dnnl_dim_t dsrc[] = {T, N, I}, ddst[] = {T, N, H}, dst_[] = {1, 1, N, H}, dwl[] = {1, 1, I, 4, H},
                     dwi[] = {1, 1, H, 4, H}, db[] = {1, 1, 4, H};
    if ((rc = md_tag(&src_l, 3, dsrc, dnnl_tnc, err)) < 0 || (rc = md_tag(&dst_l, 3, ddst, dnnl_tnc, err)) < 0 ||
        (rc = md_tag(&st, 4, dst_, dnnl_ldnc, err)) < 0 || (rc = md_tag(&wl_any, 5, dwl, dnnl_format_tag_any, err)) < 0 ||
        (rc = md_tag(&wi_any, 5, dwi, dnnl_format_tag_any, err)) < 0 || (rc = md_tag(&wl_u, 5, dwl, dnnl_ldigo, err)) < 0 ||
        (rc = md_tag(&wi_u, 5, dwi, dnnl_ldigo, err)) < 0 || (rc = md_tag(&b, 4, db, dnnl_ldgo, err)) < 0)
        return rc;
    dnnl_rnn_desc_t fd, bd;
    BKM_ODNN_TRY(dnnl_lstm_forward_desc_init(&fd, ls->training ? dnnl_forward_training : dnnl_forward_inference,
                                             dnnl_unidirectional_left2right, &src_l, &st, &st, &wl_any, &wi_any, &b,
                                             &dst_l, &st, &st, 0));
    BKM_ODNN_TRY(dnnl_primitive_desc_create(&y->fpd, &fd, ls->attr, ls->eng, NULL));
    BKM_ODNN_TRY(dnnl_primitive_create(&y->fwd, y->fpd));
    if (l == 0)
        y->src_layer = ls->x_user;
    else
        y->src_layer = ls->lay[l - 1].dst_layer;
    if ((rc = bkm__odnn_mem(&y->src_iter, &st, ls->eng, NULL, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->src_iter_c, &st, ls->eng, NULL, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->bias, &b, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->dst_layer, &dst_l, ls->eng, NULL, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->dst_iter, &st, ls->eng, NULL, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->dst_iter_c, &st, ls->eng, NULL, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->w_user[W_L], &wl_u, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
        (rc = bkm__odnn_mem(&y->w_user[W_I], &wi_u, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
        (rc = bkm__odnn_scratch(&y->fscratch, y->fpd, ls->eng, err)) < 0)
        goto out;
    for (int k = 0; k < W_COUNT; k++) {
        const dnnl_memory_desc_t *wmd = q_md(y->fpd, dnnl_query_weights_md, k);
        if ((rc = bkm__odnn_mem(&y->w_fwd[k], wmd, ls->eng, NULL, err)) < 0 ||
            (rc = bkm__odnn_reorder(&y->r_fwd[k], k == W_L ? &wl_u : &wi_u, wmd, ls->eng, err)) < 0)
            goto out;
    }
    if (ls->training) {
        const dnnl_memory_desc_t *wsmd = q_md(y->fpd, dnnl_query_workspace_md, 0);
        if ((rc = bkm__odnn_mem(&y->ws, wsmd, ls->eng, NULL, err)) < 0)
            goto out;
        BKM_ODNN_TRY(dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dnnl_unidirectional_left2right, &src_l, &st, &st,
                                                  &wl_any, &wi_any, &b, &dst_l, &st, &st, &src_l, &st, &st, &wl_u,
                                                  &wi_u, &b, &dst_l, &st, &st, 0));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&y->bpd, &bd, ls->attr, ls->eng, y->fpd));
        BKM_ODNN_TRY(dnnl_primitive_create(&y->bwd, y->bpd));
        if (l == d->layers - 1)
            y->ddst_layer = ls->dy_user;
        else if ((rc = bkm__odnn_mem(&y->ddst_layer, &dst_l, ls->eng, NULL, err)) < 0)
            goto out;
        if (l > 0)
            y->dsrc_layer = ls->lay[l - 1].ddst_layer;
        else if ((rc = bkm__odnn_mem(&y->dsrc_layer, &src_l, ls->eng, NULL, err)) < 0)
            goto out;
        if ((rc = bkm__odnn_mem(&y->ddst_iter, &st, ls->eng, NULL, err)) < 0 ||
            (rc = bkm__odnn_mem(&y->ddst_iter_c, &st, ls->eng, NULL, err)) < 0 ||
            (rc = bkm__odnn_mem(&y->dsrc_iter, &st, ls->eng, NULL, err)) < 0 ||
            (rc = bkm__odnn_mem(&y->dsrc_iter_c, &st, ls->eng, NULL, err)) < 0 ||
            (rc = bkm__odnn_mem(&y->dbias, &b, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
            (rc = bkm__odnn_scratch(&y->bscratch, y->bpd, ls->eng, err)) < 0)
            goto out;
        for (int k = 0; k < W_COUNT; k++) {
            const dnnl_memory_desc_t *wmd = q_md(y->bpd, dnnl_query_weights_md, k);
            const dnnl_memory_desc_t *dwmd = q_md(y->bpd, dnnl_query_diff_weights_md, k);
            const dnnl_memory_desc_t *umd = k == W_L ? &wl_u : &wi_u;
            if ((rc = bkm__odnn_mem(&y->w_bwd[k], wmd, ls->eng, NULL, err)) < 0 ||
                (rc = bkm__odnn_reorder(&y->r_bwd[k], umd, wmd, ls->eng, err)) < 0 ||
                (rc = bkm__odnn_mem(&y->dw[k], dwmd, ls->eng, NULL, err)) < 0 ||
                (rc = bkm__odnn_mem(&y->dw_user[k], umd, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
                (rc = bkm__odnn_reorder(&y->r_dw[k], dwmd, umd, ls->eng, err)) < 0)
                goto out;
        }
    }
out:
    return rc;
}

int bkm_kern_lstm_onednn_create(bkm_kern_lstm_onednn_t **out, const bkm_lstm_desc_t *d, int training, bkm_err_t *err)
{
    bkm_kern_lstm_onednn_t *ls = NULL;
    int rc;
    *out = NULL;
    if (!(ls = bkm_calloc(1, sizeof *ls)))
        return bkm_err_set(err, BKM_ENOMEM, "lstm (oneDNN): out of memory");
    if ((rc = bkm_kern_lstm_desc_init(&ls->d, d->n, d->t, d->i, d->h, d->layers, err)) < 0)
        goto out;
    ls->training = training != 0;
    if (!(ls->lay = bkm_calloc((size_t)d->layers, sizeof *ls->lay))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "lstm (oneDNN): out of memory");
        goto out;
    }
    BKM_ODNN_TRY(dnnl_engine_create(&ls->eng, dnnl_cpu, 0));
    BKM_ODNN_TRY(dnnl_stream_create(&ls->strm, ls->eng, dnnl_stream_default_flags));
    if ((rc = bkm__odnn_attr(&ls->attr, err)) < 0)
        goto out;
    {
        dnnl_memory_desc_t x, y;
        const dnnl_dim_t dx[] = {d->t, d->n, d->i}, dy[] = {d->t, d->n, d->h};
        if ((rc = md_tag(&x, 3, dx, dnnl_tnc, err)) < 0 || (rc = md_tag(&y, 3, dy, dnnl_tnc, err)) < 0 ||
            (rc = bkm__odnn_mem(&ls->x_user, &x, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
            (rc = bkm__odnn_mem(&ls->y_user, &y, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
            (rc = bkm__odnn_mem(&ls->dy_user, &y, ls->eng, DNNL_MEMORY_NONE, err)) < 0 ||
            (rc = bkm__odnn_mem(&ls->dx_user, &x, ls->eng, DNNL_MEMORY_NONE, err)) < 0)
            goto out;
    }
    for (int64_t l = 0; l < d->layers; l++)
        if ((rc = create_layer(ls, l, err)) < 0)
            goto out;
    {
        char f[96], b[96] = "";
        bkm__odnn_impl_name(ls->lay[0].fpd, f, sizeof f);
        if (ls->training)
            bkm__odnn_impl_name(ls->lay[0].bpd, b, sizeof b);
        snprintf(ls->impl, sizeof ls->impl, "%s%s%s", f, ls->training ? " / bwd " : "", b);
    }
    *out = ls;
    ls = NULL;
    rc = BKM_OK;
out:
    if (rc < 0)
        bkm_err_prefix(err, "lstm (oneDNN)");
    bkm_kern_lstm_onednn_destroy(ls);
    return rc;
}

static int set_handle(dnnl_memory_t m, const void *p, bkm_err_t *err)
{
    int rc = BKM_OK;
    BKM_ODNN_TRY(dnnl_memory_set_data_handle(m, (void *)p));
out:
    return rc;
}

/* copy n floats in (src NULL = zeros) or out of a oneDNN-owned plain memory */
static int mem_copy_in(dnnl_memory_t m, const float *src, size_t n, bkm_err_t *err)
{
    int rc = BKM_OK;
    void *p = NULL;
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(m, &p));
    if (src)
        memcpy(p, src, n * sizeof(float));
    else
        memset(p, 0, n * sizeof(float));
out:
    return rc;
}

static int mem_copy_out(dnnl_memory_t m, float *dst, size_t n, bkm_err_t *err)
{
    int rc = BKM_OK;
    void *p = NULL;
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(m, &p));
    memcpy(dst, p, n * sizeof(float));
out:
    return rc;
}

static int run_reorder(bkm_kern_lstm_onednn_t *ls, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to,
                       bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    BKM_ODNN_TRY(dnnl_primitive_execute(r, ls->strm, 2, a));
out:
    return rc;
}

int bkm_kern_lstm_onednn_fwd(bkm_kern_lstm_onednn_t *ls, const float *x, const float *h0, const float *c0,
                             const float *w, float *y, float *hT, float *cT, bkm_err_t *err)
{
    const bkm_lstm_desc_t *d = &ls->d;
    const size_t NH = (size_t)(d->n * d->h);
    int rc = BKM_OK;
    if (!x || !w || !y)
        return bkm_err_set(err, BKM_EINVAL, "lstm fwd (oneDNN): NULL x, w or y");
    if ((rc = set_handle(ls->x_user, x, err)) < 0)
        goto out;
    for (int64_t l = 0; l < d->layers; l++) {
        odnn_lstm_layer_t *L = &ls->lay[l];
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        if ((rc = set_handle(L->w_user[W_L], w + ox, err)) < 0 || (rc = set_handle(L->w_user[W_I], w + oh, err)) < 0 ||
            (rc = set_handle(L->bias, w + ob, err)) < 0 ||
            (rc = mem_copy_in(L->src_iter, h0 ? h0 + (size_t)l * NH : NULL, NH, err)) < 0 ||
            (rc = mem_copy_in(L->src_iter_c, c0 ? c0 + (size_t)l * NH : NULL, NH, err)) < 0)
            goto out;
        for (int k = 0; k < W_COUNT; k++)
            if ((rc = run_reorder(ls, L->r_fwd[k], L->w_user[k], L->w_fwd[k], err)) < 0)
                goto out;
        dnnl_exec_arg_t a[12];
        int na = 0;
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_LAYER, L->src_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER, L->src_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER_C, L->src_iter_c};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_LAYER, L->w_fwd[W_L]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_ITER, L->w_fwd[W_I]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, L->bias};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_LAYER, L->dst_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER, L->dst_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER_C, L->dst_iter_c};
        if (L->ws)
            a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, L->ws};
        if (L->fscratch)
            a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, L->fscratch};
        BKM_ODNN_TRY(dnnl_primitive_execute(L->fwd, ls->strm, na, a));
        BKM_ODNN_TRY(dnnl_stream_wait(ls->strm));
        if ((hT && (rc = mem_copy_out(L->dst_iter, hT + (size_t)l * NH, NH, err)) < 0) ||
            (cT && (rc = mem_copy_out(L->dst_iter_c, cT + (size_t)l * NH, NH, err)) < 0))
            goto out;
    }
    rc = mem_copy_out(ls->lay[d->layers - 1].dst_layer, y, (size_t)d->t * NH, err);
out:
    if (rc < 0)
        bkm_err_prefix(err, "lstm fwd (oneDNN)");
    return rc;
}

int bkm_kern_lstm_onednn_bwd(bkm_kern_lstm_onednn_t *ls, const float *x, const float *w, const float *dy,
                             const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0, float *dw,
                             bkm_err_t *err)
{
    const bkm_lstm_desc_t *d = &ls->d;
    const size_t NH = (size_t)(d->n * d->h);
    int rc = BKM_OK;
    if (!ls->training)
        return bkm_err_set(err, BKM_EINVAL, "lstm bwd (oneDNN): created for inference");
    if (!x || !w || !dy || !dw)
        return bkm_err_set(err, BKM_EINVAL, "lstm bwd (oneDNN): NULL x, w, dy or dw");
    if ((rc = set_handle(ls->x_user, x, err)) < 0 || (rc = set_handle(ls->dy_user, dy, err)) < 0)
        goto out;
    for (int64_t l = d->layers - 1; l >= 0; l--) {
        odnn_lstm_layer_t *L = &ls->lay[l];
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        if ((rc = set_handle(L->w_user[W_L], w + ox, err)) < 0 || (rc = set_handle(L->w_user[W_I], w + oh, err)) < 0 ||
            (rc = set_handle(L->bias, w + ob, err)) < 0 || (rc = set_handle(L->dbias, dw + ob, err)) < 0 ||
            (rc = set_handle(L->dw_user[W_L], dw + ox, err)) < 0 ||
            (rc = set_handle(L->dw_user[W_I], dw + oh, err)) < 0 ||
            (rc = mem_copy_in(L->ddst_iter, dhT ? dhT + (size_t)l * NH : NULL, NH, err)) < 0 ||
            (rc = mem_copy_in(L->ddst_iter_c, dcT ? dcT + (size_t)l * NH : NULL, NH, err)) < 0)
            goto out;
        /* oneDNN accumulates into the weight gradients */
        memset(dw + ob, 0, (size_t)(4 * d->h) * sizeof(float));
        for (int k = 0; k < W_COUNT; k++) {
            void *p = NULL;
            BKM_ODNN_TRY(dnnl_memory_get_data_handle(L->dw[k], &p));
            memset(p, 0, dnnl_memory_desc_get_size(q_md(L->bpd, dnnl_query_diff_weights_md, k)));
            if ((rc = run_reorder(ls, L->r_bwd[k], L->w_user[k], L->w_bwd[k], err)) < 0)
                goto out;
        }
        dnnl_exec_arg_t a[24];
        int na = 0;
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_LAYER, L->src_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER, L->src_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC_ITER_C, L->src_iter_c};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_LAYER, L->w_bwd[W_L]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS_ITER, L->w_bwd[W_I]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, L->bias};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_LAYER, L->dst_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER, L->dst_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST_ITER_C, L->dst_iter_c};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST_LAYER, L->ddst_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST_ITER, L->ddst_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST_ITER_C, L->ddst_iter_c};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, L->ws};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC_LAYER, l == 0 && dx ? ls->dx_user : L->dsrc_layer};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC_ITER, L->dsrc_iter};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC_ITER_C, L->dsrc_iter_c};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS_LAYER, L->dw[W_L]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS_ITER, L->dw[W_I]};
        a[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, L->dbias};
        if (L->bscratch)
            a[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, L->bscratch};
        if (l == 0 && dx && (rc = set_handle(ls->dx_user, dx, err)) < 0)
            goto out;
        BKM_ODNN_TRY(dnnl_primitive_execute(L->bwd, ls->strm, na, a));
        for (int k = 0; k < W_COUNT; k++)
            if ((rc = run_reorder(ls, L->r_dw[k], L->dw[k], L->dw_user[k], err)) < 0)
                goto out;
        BKM_ODNN_TRY(dnnl_stream_wait(ls->strm));
        if ((dh0 && (rc = mem_copy_out(L->dsrc_iter, dh0 + (size_t)l * NH, NH, err)) < 0) ||
            (dc0 && (rc = mem_copy_out(L->dsrc_iter_c, dc0 + (size_t)l * NH, NH, err)) < 0))
            goto out;
    }
out:
    if (rc < 0)
        bkm_err_prefix(err, "lstm bwd (oneDNN)");
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* The oneDNN backend's LSTM stack (backend_int.h): this object behind the LSTM vtable        */

static int odnn_lstm_fwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w, float *y,
                         float *hT, float *cT, bkm_err_t *err)
{
    return bkm_kern_lstm_onednn_fwd(ls->priv, x, h0, c0, w, y, hT, cT, err);
}

static int odnn_lstm_bwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w,
                         const float *dy, const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0,
                         float *dw, bkm_err_t *err)
{
    return bkm_kern_lstm_onednn_bwd(ls->priv, x, w, dy, dhT, dcT, dx, dh0, dc0, dw, err);
}

static const char *odnn_lstm_impl(const bkm__lstm_t *ls)
{
    return bkm_kern_lstm_onednn_impl(ls->priv);
}

static void odnn_lstm_destroy(bkm__lstm_t *ls)
{
    bkm_kern_lstm_onednn_destroy(ls->priv);
    ls->priv = NULL;
    ls->vt = NULL;
}

static const bkm__lstm_vtbl_t odnn_lstm_vtbl = {odnn_lstm_fwd, odnn_lstm_bwd, odnn_lstm_impl, odnn_lstm_destroy};

int bkm__lstm_onednn_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                            bkm_err_t *err)
{
    bkm_kern_lstm_onednn_t *obj = NULL;
    int rc = bkm_kern_lstm_onednn_create(&obj, d, training, err);
    if (rc < 0)
        return rc;
    *ls = (bkm__lstm_t){&odnn_lstm_vtbl, *d, obj};
    return BKM_OK;
}
