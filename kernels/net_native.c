/* SPDX-License-Identifier: MIT */
/* The native engine of the network executor: this suite's kernels (conv2d, FC over SGEMM, max
 * pooling, ReLU, softmax cross-entropy, SGD) over any checked table. Activations are NCHW /
 * [mb][features]; ReLU and dropout work in place (dropout: the identity when p = 0 or in evaluation).
 *
 * Fusions (the conv2d tunable "fuse", a sum of bits, default 3; results identical to the separate
 * passes, fuse=0):
 *   1: a conv2d followed by a ReLU stores relu(conv + bias) from its GEMM tiles (the ReLU's forward
 *      is then a no-op);
 *   2: a max pooling after a ReLU applies the ReLU's backward in its scatter (a term only where
 *      the ReLU's output at the argmax, the window's maximum, is > 0: tested on the pool's own
 *      output unless a dropout changes it in place), and, when the ReLU's forward is not already in a
 *      conv store, the ReLU after the pool (relu(maxpool(x)) == maxpool(relu(x)): a quarter of
 *      the elements); its buffer then keeps x, whose positive entries are the ReLU's;
 *   4: a conv2d whose input is a ReLU's output applies that ReLU's backward in its bwd-data store
 *      (off by default: on AlexNet conv4 and conv5 the mask read inside the tile stores costs more,
 *      about 1.5 ms each at batch 64 on AMD EPYC, than the separate streaming pass, 0.45 ms). */
#include <stdio.h>
#include <string.h>

#include "kernels_int.h"
#include "net_int.h"

enum { FUSE_CONV = 1, FUSE_POOL = 2, FUSE_BWD_D = 4, FUSE_DEFAULT = FUSE_CONV | FUSE_POOL };

typedef struct nat_layer {
    bkm_conv2d_desc_t cd;
    bkm_kern_conv2d_t *cv;
    bkm_fc_desc_t fd;
    bkm_kern_fc_t *fc;
    bkm_pool_desc_t pd;
    bkm_conv3d_desc_t c3;
    bkm_kern_conv3d_t *cv3;
    bkm_pool3d_desc_t p3;
    int32_t *argmax;
    float *out;        /* owned output (conv, pool, fc); relu / dropout work in place */
    float *gin;        /* owned gradient wrt the input (when need_bwd_d and the layer does not work in place) */
    float *in, *y;     /* input and output activations (borrowed) */
    size_t n_in, n_out;
    /* fusions: conv fwd stores relu(); conv bwd_d / pool bwd apply the ReLU before them
     * backward; pool fwd applies the ReLU before it to its output; a ReLU handled by a neighbour */
    uint8_t relu_out, relu_bwd, pool_relu_fwd, skip_fwd, skip_bwd;
    uint8_t pool_mask_out; /* pool bwd with the ReLU: test its own output (not changed in place since) */
} nat_layer_t;

typedef struct nat {
    nat_layer_t l[BKM_NET_MAX_LAYERS];
    float *prob, *dlogits;
} nat_t;

static void nat_destroy(bkm_net_exec_t *ex)
{
    nat_t *c = ex->st;
    if (!c)
        return;
    for (int i = 0; i < BKM_NET_MAX_LAYERS; i++) {
        nat_layer_t *l = &c->l[i];
        bkm_kern_conv2d_destroy(l->cv);
        bkm_kern_conv3d_destroy(l->cv3);
        bkm_kern_fc_destroy(l->fc);
        bkm_free(l->argmax);
        bkm_free(l->out);
        bkm_free(l->gin);
    }
    bkm_free(c->prob);
    bkm_free(c->dlogits);
    bkm_free(c);
    ex->st = NULL;
}

static int nat_layer_create(bkm_net_exec_t *ex, nat_t *c, int i, const bkm_kern_params_t *kp, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    const bkm_net_layer_t *nl = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    nat_layer_t *l = &c->l[i];
    int64_t mb = net->d.mb;
    int rc = BKM_OK;
    l->in = i ? c->l[i - 1].y : ex->input;
    l->n_in = (size_t)(mb * li->in.c * li->in.d * li->in.h * li->in.w);
    l->n_out = (size_t)(mb * li->out.c * li->out.d * li->out.h * li->out.w);
    switch (nl->kind) {
    case BKM_NET_CONV: {
        bkm_conv2d_desc_t *d = &l->cd;
        memset(d, 0, sizeof *d);
        *d = (bkm_conv2d_desc_t){mb, 1, li->in.c, li->in.h, li->in.w, nl->out, li->out.h, li->out.w, nl->k, nl->k,
                                 nl->s, nl->s, nl->p, nl->p, 1, ""};
        snprintf(d->name, sizeof d->name, "net:%s", nl->name);
        if ((rc = bkm_kern_conv2d_create(&l->cv, d, kp, err)) < 0)
            return rc;
        bkm__net_impl_add(ex->impl, sizeof ex->impl, bkm_kern_conv2d_impl(l->cv));
        break;
    }
    case BKM_NET_CONV3D: {
        bkm_kern_params_t ckp;
        bkm_conv3d_desc_t *d = &l->c3;
        memset(d, 0, sizeof *d);
        d->mb = mb;
        d->ic = li->in.c, d->id = li->in.d, d->ih = li->in.h, d->iw = li->in.w;
        d->oc = nl->out;
        d->kd = d->kh = d->kw = nl->k;
        d->sd = d->sh = d->sw = nl->s;
        d->pd = d->ph = d->pw = nl->p;
        d->has_bias = 1;
        snprintf(d->name, sizeof d->name, "net:%s", nl->name);
        /* the conv3d tunables given (v2c, mc, kc, nc); the conv2d ones do not apply */
        bkm_kern_params_init(&ckp);
        ckp.isa = kp ? kp->isa : BKM_ISA_AUTO;
        if (kp)
            ckp.cache = kp->cache;
        for (int j = 0; kp && j < kp->n; j++) {
            size_t np;
            const bkm_param_desc_t *pd = bkm_kern_conv3d_params(&np);
            for (size_t q = 0; q < np; q++)
                if (strcmp(kp->kv[j].key, pd[q].name) == 0 && ckp.n < (int)(sizeof ckp.kv / sizeof ckp.kv[0]))
                    ckp.kv[ckp.n++] = kp->kv[j];
        }
        if ((rc = bkm_kern_conv3d_create(&l->cv3, d, &ckp, err)) < 0)
            return rc;
        bkm_kern_conv3d_set_reuse(l->cv3, 1); /* a step keeps the input and gradient until both backwards ran */
        bkm__net_impl_add(ex->impl, sizeof ex->impl, bkm_kern_conv3d_impl(l->cv3));
        break;
    }
    case BKM_NET_MAXPOOL3D:
        if ((rc = bkm_kern_pool3d_desc_init(&l->p3, mb, li->in.c, li->in.d, li->in.h, li->in.w, nl->k, nl->s, nl->p,
                                            err)) < 0)
            return rc;
        if (!(l->argmax = bkm_calloc(l->n_out, sizeof(int32_t))))
            return bkm_err_set(err, BKM_ENOMEM, "cannot allocate %zu pooling indices", l->n_out);
        break;
    case BKM_NET_FC: {
        bkm_kern_params_t fkp;
        bkm_kern_params_init(&fkp);
        fkp.isa = kp ? kp->isa : BKM_ISA_AUTO;
        if (kp)
            fkp.cache = kp->cache;
        l->fd = (bkm_fc_desc_t){mb, li->in.c * li->in.d * li->in.h * li->in.w, nl->out, 1};
        if ((rc = bkm_kern_fc_create(&l->fc, &l->fd, &fkp, err)) < 0)
            return rc;
        bkm__net_impl_add(ex->impl, sizeof ex->impl, "native:fc.sgemm");
        break;
    }
    case BKM_NET_MAXPOOL:
        if ((rc = bkm_kern_pool_desc_init(&l->pd, mb, li->in.c, li->in.h, li->in.w, nl->k, nl->s, nl->p, err)) < 0)
            return rc;
        if (!(l->argmax = bkm_calloc(l->n_out, sizeof(int32_t))))
            return bkm_err_set(err, BKM_ENOMEM, "cannot allocate %zu pooling indices", l->n_out);
        break;
    default: /* ReLU and dropout in place; the loss reads its input */
        l->y = l->in;
        return BKM_OK;
    }
    if (!(l->out = bkm__net_zalloc(l->n_out)))
        return bkm_err_set(err, BKM_ENOMEM, "cannot allocate %zu activations", l->n_out);
    l->y = l->out;
    if (li->need_bwd_d && !(l->gin = bkm__net_zalloc(l->n_in)))
        return bkm_err_set(err, BKM_ENOMEM, "cannot allocate %zu gradients", l->n_in);
    return BKM_OK;
}

/* Mark the fusions of the table (see the file comment). */
static void nat_plan_fusions(const bkm_net_t *net, nat_t *c, int fuse)
{
    const bkm_net_layer_t *L = net->d.layer;
    for (int i = 0; i < net->d.n_layers; i++) {
        nat_layer_t *l = &c->l[i];
        if (L[i].kind != BKM_NET_RELU)
            continue;
        if ((fuse & FUSE_CONV) && i > 0 && L[i - 1].kind == BKM_NET_CONV) {
            c->l[i - 1].relu_out = 1;
            l->skip_fwd = 1;
        }
        if (i + 1 < net->d.n_layers && L[i + 1].kind == BKM_NET_MAXPOOL && (fuse & FUSE_POOL)) {
            /* the pool's output keeps its signs until the backward: no dropout in place (a dropped
             * output's gradient is 0 too, but 0 * NaN is not; the input test keeps NaN's path) */
            int keep = 1;
            for (int j = i + 2; j < net->d.n_layers && (L[j].kind == BKM_NET_RELU || L[j].kind == BKM_NET_DROPOUT ||
                                                         L[j].kind == BKM_NET_DROPOUT2D); j++)
                keep &= L[j].kind == BKM_NET_RELU || L[j].drop <= 0.0f;
            c->l[i + 1].relu_bwd = 1;
            c->l[i + 1].pool_mask_out = (uint8_t)keep;
            l->skip_bwd = 1;
            if (!l->skip_fwd) {
                c->l[i + 1].pool_relu_fwd = 1;
                l->skip_fwd = 1;
            }
        } else if (i + 1 < net->d.n_layers && L[i + 1].kind == BKM_NET_CONV && (fuse & FUSE_BWD_D) &&
                   net->li[i + 1].need_bwd_d) {
            c->l[i + 1].relu_bwd = 1;
            l->skip_bwd = 1;
        }
    }
}

static int nat_create(bkm_net_exec_t *ex, const bkm_kern_params_t *kp, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    nat_t *c = bkm_calloc(1, sizeof *c);
    size_t n_logits = (size_t)(net->d.mb * net->classes);
    int rc;
    if (!c)
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    ex->st = c;
    c->prob = bkm__net_zalloc(n_logits);
    c->dlogits = bkm__net_zalloc(n_logits);
    if (!c->prob || !c->dlogits)
        return bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate %zu logits", n_logits);
    for (int i = 0; i < net->d.n_layers; i++)
        if ((rc = nat_layer_create(ex, c, i, kp, err)) < 0)
            return bkm_err_prefix(err, "net layer %d (%s)", i, net->d.layer[i].name);
    /* the "fuse" tunable (validated by the conv2d table) */
    nat_plan_fusions(net, c, bkm__kern_params_value(kp, "fuse", FUSE_DEFAULT));
    return BKM_OK;
}

static int nat_prepare(bkm_net_exec_t *ex, bkm_err_t *err)
{
    (void)ex;
    (void)err;
    return BKM_OK; /* computes on the user-layout input and parameters directly */
}

/* The forward of layer @p i (not the loss) of a step. */
static int nat_layer_fwd(bkm_net_exec_t *ex, nat_t *c, int i, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    nat_layer_t *l = &c->l[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    int rc = BKM_OK;
    switch (net->d.layer[i].kind) {
    case BKM_NET_CONV:
        if (l->relu_out)
            rc = bkm__kern_conv2d_fwd_relu(l->cv, l->in, ex->params + li->wei_off, ex->params + li->bias_off,
                                           l->out, err);
        else
            rc = bkm_kern_conv2d_fwd(l->cv, l->in, ex->params + li->wei_off, ex->params + li->bias_off, l->out,
                                     err);
        break;
    case BKM_NET_FC:
        rc = bkm_kern_fc_fwd(l->fc, l->in, ex->params + li->wei_off, ex->params + li->bias_off, l->out, err);
        break;
    case BKM_NET_MAXPOOL:
        if (l->pool_relu_fwd)
            bkm__kern_maxpool_relu_fwd(&l->pd, l->in, l->out, l->argmax);
        else
            bkm_kern_maxpool_fwd(&l->pd, l->in, l->out, l->argmax);
        break;
    case BKM_NET_CONV3D:
        rc = bkm_kern_conv3d_fwd(l->cv3, l->in, ex->params + li->wei_off, ex->params + li->bias_off, l->out, err);
        break;
    case BKM_NET_MAXPOOL3D:
        bkm_kern_maxpool3d_fwd(&l->p3, l->in, l->out, l->argmax);
        break;
    case BKM_NET_RELU:
        if (!l->skip_fwd)
            bkm_kern_relu_fwd(l->n_in, l->in, l->in);
        break;
    case BKM_NET_DROPOUT:
    case BKM_NET_DROPOUT2D: /* in place; the identity in eval mode */
        if (net->d.layer[i].drop > 0.0f && !ex->fwd_only)
            bkm__net_dropout(ex, i, l->in);
        break;
    default:
        break;
    }
    return rc;
}

/* The backward of layer @p i (need_bwd, not the loss) of a step: *g, the gradient of its output,
 * becomes that of its input; the weight-gradient part is lapped under BKM_NET_BWD_W at *t. */
static int nat_layer_bwd(bkm_net_exec_t *ex, nat_t *c, int i, float **g, uint64_t *t, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    nat_layer_t *l = &c->l[i];
    const bkm_net_layer_info_t *li = &net->li[i];
    const float *w = ex->params + li->wei_off;
    float *dw = ex->grads + li->wei_off, *db = ex->grads + li->bias_off;
    int rc = BKM_OK;
    switch (net->d.layer[i].kind) {
    case BKM_NET_CONV:
        rc = bkm_kern_conv2d_bwd_weights(l->cv, l->in, *g, dw, db, err);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (rc == BKM_OK && li->need_bwd_d && l->relu_bwd)
            rc = bkm__kern_conv2d_bwd_data_relu(l->cv, *g, w, l->in, l->gin, err);
        else if (rc == BKM_OK && li->need_bwd_d)
            rc = bkm_kern_conv2d_bwd_data(l->cv, *g, w, l->gin, err);
        *g = l->gin;
        break;
    case BKM_NET_FC:
        rc = bkm_kern_fc_bwd_weights(l->fc, l->in, *g, dw, db, err);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (rc == BKM_OK && li->need_bwd_d)
            rc = bkm_kern_fc_bwd_data(l->fc, *g, w, l->gin, err);
        *g = l->gin;
        break;
    case BKM_NET_MAXPOOL:
        if (l->relu_bwd)
            bkm__kern_maxpool_relu_bwd(&l->pd, *g, l->argmax, l->in, l->pool_mask_out ? l->out : NULL, l->gin);
        else
            bkm_kern_maxpool_bwd(&l->pd, *g, l->argmax, l->gin);
        *g = l->gin;
        break;
    case BKM_NET_CONV3D:
        rc = bkm_kern_conv3d_bwd_weights(l->cv3, l->in, *g, dw, db, err);
        bkm__net_lap(ex, i, BKM_NET_BWD_W, t);
        if (rc == BKM_OK && li->need_bwd_d)
            rc = bkm_kern_conv3d_bwd_data(l->cv3, *g, w, l->gin, err);
        *g = l->gin;
        break;
    case BKM_NET_MAXPOOL3D:
        bkm_kern_maxpool3d_bwd(&l->p3, *g, l->argmax, l->gin);
        *g = l->gin;
        break;
    case BKM_NET_RELU:
        if (!l->skip_bwd)
            bkm_kern_relu_bwd(l->n_in, l->y, *g, *g);
        break;
    case BKM_NET_DROPOUT:
    case BKM_NET_DROPOUT2D:
        if (net->d.layer[i].drop > 0.0f)
            bkm__net_dropout(ex, i, *g);
        break;
    default:
        break;
    }
    return rc;
}

static int nat_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    nat_t *c = ex->st;
    int nl = net->d.n_layers, loss_i = nl - 1;
    int64_t mb = net->d.mb;
    float *g;
    double loss = 0.0;
    uint64_t t0, t1, t2, t3, t;
    int rc = BKM_OK;

    t0 = t = bkm_now_ns();
    for (int i = 0; i < loss_i; i++) {
        rc = nat_layer_fwd(ex, c, i, err);
        if (rc < 0)
            return bkm_err_prefix(err, "net layer %d (%s)", i, net->d.layer[i].name);
        bkm__net_lap(ex, i, BKM_NET_FWD, &t);
    }
    if (ex->fwd_only) { /* bkm_net_exec_forward: evaluation stops before the loss */
        ex->logits = c->l[loss_i].in;
        return BKM_OK;
    }
    t1 = t = bkm_now_ns();
    if (bkm__net_xent(net, c->l[loss_i].in, ex->labels, c->dlogits, &loss) < 0) {
        if ((rc = bkm_kern_softmax_xent_fwd(mb, net->classes, c->l[loss_i].in, ex->labels, c->prob, &loss, err)) < 0)
            return rc;
        bkm__net_lap(ex, loss_i, BKM_NET_FWD, &t);
        if ((rc = bkm_kern_softmax_xent_bwd(mb, net->classes, c->prob, ex->labels, c->dlogits, err)) < 0)
            return rc;
    }
    bkm__net_lap(ex, loss_i, BKM_NET_BWD_D, &t);
    g = c->dlogits;
    for (int i = loss_i - 1; i >= 0 && net->li[i].need_bwd; i--) {
        const bkm_net_layer_info_t *li = &net->li[i];
        rc = nat_layer_bwd(ex, c, i, &g, &t, err);
        if (rc < 0)
            return bkm_err_prefix(err, "net layer %d (%s) backward", i, net->d.layer[i].name);
        if (li->n_wei && ex->grad_hook)
            ex->grad_hook(ex->grad_ctx, i);
        if (!li->n_wei || li->need_bwd_d) /* a first parameter layer has no bwd-data */
            bkm__net_lap(ex, i, BKM_NET_BWD_D, &t);
    }
    t2 = t = bkm_now_ns();
    bkm__net_sgd(ex, &t);
    t3 = bkm_now_ns();
    st->fwd_ms = (double)(t1 - t0) * 1e-6;
    st->bwd_ms = (double)(t2 - t1) * 1e-6;
    st->update_ms = (double)(t3 - t2) * 1e-6;
    st->loss = loss;
    return BKM_OK;
}

static int nat_finish(bkm_net_exec_t *ex, bkm_err_t *err)
{
    (void)ex;
    (void)err;
    return BKM_OK; /* parameters and gradients already live in the flat user-layout arrays */
}

const bkm__net_vtbl_t bkm__net_native_vtbl = {nat_create, nat_prepare, nat_step, nat_finish, nat_destroy};
