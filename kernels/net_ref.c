/* SPDX-License-Identifier: MIT */
/* The reference engine of the network executor: the naive layers (double accumulation, one
 * buffer per activation and per gradient, nothing in place), the oracle the native and oneDNN
 * engines are tested against over the same table. Slow by design; small shapes only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "net_int.h"

typedef struct ref {
    float *act[BKM_NET_MAX_LAYERS + 1];   /* act[0] = input (borrowed), act[i + 1] = output of layer i */
    float *grad[BKM_NET_MAX_LAYERS + 1];  /* grad[i] = d loss / d act[i] */
    size_t n[BKM_NET_MAX_LAYERS + 1];
    float *prob;
} ref_t;

static void ref_destroy(bkm_net_exec_t *ex)
{
    ref_t *r = ex->st;
    if (!r)
        return;
    for (int i = 0; i <= BKM_NET_MAX_LAYERS; i++) {
        if (i > 0)
            bkm_free(r->act[i]);
        bkm_free(r->grad[i]);
    }
    bkm_free(r->prob);
    bkm_free(r);
    ex->st = NULL;
}

static int ref_create(bkm_net_exec_t *ex, const bkm_kern_params_t *kp, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    ref_t *r = bkm_calloc(1, sizeof *r);
    (void)kp;
    if (!r)
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    ex->st = r;
    r->act[0] = ex->input;
    r->n[0] = ex->n_input;
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_shape_t *o = &net->li[i].out;
        r->n[i + 1] = (size_t)(net->d.mb * o->c * o->d * o->h * o->w);
    }
    for (int i = 0; i <= net->d.n_layers; i++) {
        if ((i > 0 && !(r->act[i] = bkm_calloc(r->n[i], sizeof(float)))) ||
            !(r->grad[i] = bkm_calloc(r->n[i], sizeof(float))))
            return bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate %zu activations", r->n[i]);
    }
    if (!(r->prob = bkm_calloc((size_t)(net->d.mb * net->classes), sizeof(float))))
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    snprintf(ex->impl, sizeof ex->impl, "ref:naive");
    return BKM_OK;
}

static int ref_prepare(bkm_net_exec_t *ex, bkm_err_t *err)
{
    (void)ex;
    (void)err;
    return BKM_OK;
}

/* The descriptors of layer @p i for the reference kernels. */
static void conv_desc(const bkm_net_t *net, int i, bkm_conv2d_desc_t *d)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    *d = (bkm_conv2d_desc_t){net->d.mb, 1, li->in.c, li->in.h, li->in.w, l->out, li->out.h, li->out.w,
                             l->k, l->k, l->s, l->s, l->p, l->p, 1, ""};
}

static void pool_desc(const bkm_net_t *net, int i, bkm_pool_desc_t *d)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    *d = (bkm_pool_desc_t){net->d.mb, li->in.c, li->in.h, li->in.w, li->out.h, li->out.w,
                           l->k, l->k, l->s, l->s, l->p, l->p};
}

static void conv3d_desc(const bkm_net_t *net, int i, bkm_conv3d_desc_t *d)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    memset(d, 0, sizeof *d);
    d->mb = net->d.mb;
    d->ic = li->in.c, d->id = li->in.d, d->ih = li->in.h, d->iw = li->in.w;
    d->oc = l->out, d->od = li->out.d, d->oh = li->out.h, d->ow = li->out.w;
    d->kd = d->kh = d->kw = l->k;
    d->sd = d->sh = d->sw = l->s;
    d->pd = d->ph = d->pw = l->p;
    d->has_bias = 1;
}

static void pool3d_desc(const bkm_net_t *net, int i, bkm_pool3d_desc_t *d)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    *d = (bkm_pool3d_desc_t){net->d.mb, li->in.c, li->in.d, li->in.h, li->in.w, li->out.d, li->out.h, li->out.w,
                             l->k, l->s, l->p};
}

/* The forward of layer @p i (not the loss) of a step: act[i + 1] from act[i]. */
static void ref_layer_fwd(bkm_net_exec_t *ex, ref_t *r, int i)
{
    const bkm_net_t *net = &ex->net;
    const bkm_net_layer_info_t *li = &net->li[i];
    const float *w = ex->params + li->wei_off, *b = ex->params + li->bias_off;
    const int64_t mb = net->d.mb;
    switch (net->d.layer[i].kind) {
    case BKM_NET_CONV: {
        bkm_conv2d_desc_t d;
        conv_desc(net, i, &d);
        bkm_kern_conv2d_ref_fwd(&d, r->act[i], w, b, r->act[i + 1]);
        break;
    }
    case BKM_NET_FC: {
        bkm_fc_desc_t d = {mb, li->in.c * li->in.d * li->in.h * li->in.w, net->d.layer[i].out, 1};
        bkm_kern_fc_ref_fwd(&d, r->act[i], w, b, r->act[i + 1]);
        break;
    }
    case BKM_NET_CONV3D: {
        bkm_conv3d_desc_t d;
        conv3d_desc(net, i, &d);
        bkm_kern_conv3d_ref_fwd(&d, r->act[i], w, b, r->act[i + 1]);
        break;
    }
    case BKM_NET_MAXPOOL3D: {
        bkm_pool3d_desc_t d;
        pool3d_desc(net, i, &d);
        bkm_kern_maxpool3d_ref_fwd(&d, r->act[i], r->act[i + 1]);
        break;
    }
    case BKM_NET_MAXPOOL: {
        bkm_pool_desc_t d;
        pool_desc(net, i, &d);
        bkm_kern_maxpool_ref_fwd(&d, r->act[i], r->act[i + 1]);
        break;
    }
    case BKM_NET_RELU:
        bkm_kern_relu_ref_fwd(r->n[i], r->act[i], r->act[i + 1]);
        break;
    default: /* dropout: the identity in eval mode */
        memcpy(r->act[i + 1], r->act[i], r->n[i] * sizeof(float));
        if (net->d.layer[i].drop > 0.0f && !ex->fwd_only)
            bkm__net_dropout(ex, i, r->act[i + 1]);
        break;
    }
}

/* The backward of layer @p i (need_bwd, not the loss) of a step: grad[i] from grad[i + 1]; the
 * weight-gradient part is lapped under BKM_NET_BWD_W at *t. */
static void ref_layer_bwd(bkm_net_exec_t *ex, ref_t *r, int i, uint64_t *t)
{
    const bkm_net_t *net = &ex->net;
    const bkm_net_layer_info_t *li = &net->li[i];
    const float *w = ex->params + li->wei_off;
    float *dw = ex->grads + li->wei_off, *db = ex->grads + li->bias_off;
    const float *g = r->grad[i + 1];
    float *gin = r->grad[i];
    const int64_t mb = net->d.mb;
    switch (net->d.layer[i].kind) {
    case BKM_NET_CONV: {
        bkm_conv2d_desc_t d;
        conv_desc(net, i, &d);
        bkm_kern_conv2d_ref_bwd_weights(&d, r->act[i], g, dw, db);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (li->need_bwd_d)
            bkm_kern_conv2d_ref_bwd_data(&d, g, w, gin);
        break;
    }
    case BKM_NET_CONV3D: {
        bkm_conv3d_desc_t d;
        conv3d_desc(net, i, &d);
        bkm_kern_conv3d_ref_bwd_weights(&d, r->act[i], g, dw, db);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (li->need_bwd_d)
            bkm_kern_conv3d_ref_bwd_data(&d, g, w, gin);
        break;
    }
    case BKM_NET_MAXPOOL3D: {
        bkm_pool3d_desc_t d;
        pool3d_desc(net, i, &d);
        bkm_kern_maxpool3d_ref_bwd(&d, r->act[i], g, gin);
        break;
    }
    case BKM_NET_FC: {
        bkm_fc_desc_t d = {mb, li->in.c * li->in.d * li->in.h * li->in.w, net->d.layer[i].out, 1};
        bkm_kern_fc_ref_bwd_weights(&d, r->act[i], g, dw, db);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (li->need_bwd_d)
            bkm_kern_fc_ref_bwd_data(&d, g, w, gin);
        break;
    }
    case BKM_NET_MAXPOOL: {
        bkm_pool_desc_t d;
        pool_desc(net, i, &d);
        bkm_kern_maxpool_ref_bwd(&d, r->act[i], g, gin);
        break;
    }
    case BKM_NET_RELU:
        bkm_kern_relu_ref_bwd(r->n[i], r->act[i + 1], g, gin);
        break;
    default:
        memcpy(gin, g, r->n[i] * sizeof(float));
        if (net->d.layer[i].drop > 0.0f)
            bkm__net_dropout(ex, i, gin);
        break;
    }
}

static int ref_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    ref_t *r = ex->st;
    int nl = net->d.n_layers, loss_i = nl - 1;
    int64_t mb = net->d.mb, nc = net->classes;
    double loss = 0.0;
    uint64_t t0, t1, t2, t3, t;
    int rc;

    t0 = t = bkm_now_ns();
    for (int i = 0; i < loss_i; i++) {
        ref_layer_fwd(ex, r, i);
        bkm__net_lap(ex, i, BKM_NET_FWD, &t);
    }
    if (ex->fwd_only) { /* bkm_net_exec_forward: evaluation stops before the loss */
        ex->logits = r->act[loss_i];
        return BKM_OK;
    }
    t1 = t = bkm_now_ns();
    if (bkm__net_xent(net, r->act[loss_i], ex->labels, r->grad[loss_i], &loss) < 0) {
        if ((rc = bkm_kern_softmax_xent_ref_fwd(mb, nc, r->act[loss_i], ex->labels, r->prob, &loss, err)) < 0)
            return rc;
        bkm__net_lap(ex, loss_i, BKM_NET_FWD, &t);
        for (int64_t n = 0; n < mb; n++) /* d loss / d logits = (prob - onehot) / mb */
            for (int64_t j = 0; j < nc; j++)
                r->grad[loss_i][n * nc + j] =
                    (float)(((double)r->prob[n * nc + j] - (j == ex->labels[n] ? 1.0 : 0.0)) / (double)mb);
    }
    bkm__net_lap(ex, loss_i, BKM_NET_BWD_D, &t);
    for (int i = loss_i - 1; i >= 0 && net->li[i].need_bwd; i--) {
        const bkm_net_layer_info_t *li = &net->li[i];
        ref_layer_bwd(ex, r, i, &t);
        if (li->n_wei && ex->grad_hook)
            ex->grad_hook(ex->grad_ctx, i);
        if (!li->n_wei || li->need_bwd_d) /* a first parameter layer has no bwd-data */
            bkm__net_lap(ex, i, BKM_NET_BWD_D, &t);
    }
    t2 = t = bkm_now_ns();
    for (int i = 0; i < nl && net->d.lr > 0.0f; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        if (!li->n_wei)
            continue;
        bkm_kern_sgd_ref_step((size_t)li->n_wei, ex->params + li->wei_off, ex->grads + li->wei_off, NULL, net->d.lr,
                              0.0f, 0.0f);
        bkm_kern_sgd_ref_step((size_t)li->n_bias, ex->params + li->bias_off, ex->grads + li->bias_off, NULL,
                              net->d.lr, 0.0f, 0.0f);
        bkm__net_lap(ex, i, BKM_NET_UPD, &t);
    }
    t3 = bkm_now_ns();
    st->fwd_ms = (double)(t1 - t0) * 1e-6;
    st->bwd_ms = (double)(t2 - t1) * 1e-6;
    st->update_ms = (double)(t3 - t2) * 1e-6;
    st->loss = loss;
    return BKM_OK;
}

static int ref_finish(bkm_net_exec_t *ex, bkm_err_t *err)
{
    (void)ex;
    (void)err;
    return BKM_OK;
}

const bkm__net_vtbl_t bkm__net_ref_vtbl = {ref_create, ref_prepare, ref_step, ref_finish, ref_destroy};
