/* SPDX-License-Identifier: MIT */
/* CNN training-step description (AlexNet, shapes, FLOPs) and its oneDNN chain: forward_training
 * primitives whose outputs stay in oneDNN's blocked layouts, log-softmax + cross-entropy, the
 * backward primitives, and the SGD update (bkm_kern_sgd_step, the loop the native chain uses). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onednn_int.h"

/* ---------------------------------------------------------------------------------------- */
/* Description                                                                                */
/* ---------------------------------------------------------------------------------------- */

static void add_layer(bkm_cnn_desc_t *d, bkm_cnn_kind_t kind, const char *name, int64_t out, int64_t k, int64_t s,
                      int64_t p)
{
    bkm_cnn_layer_t *l = &d->layer[d->n_layers++];
    l->kind = kind;
    l->out = out;
    l->k = k;
    l->s = s;
    l->p = p;
    snprintf(l->name, sizeof l->name, "%s", name);
}

void bkm_kern_cnn_alexnet(bkm_cnn_desc_t *d, int64_t mb)
{
    memset(d, 0, sizeof *d);
    d->mb = mb;
    d->c = 3;
    d->h = d->w = 224;
    d->lr = 0.01f;
    /* torchvision.models.alexnet: features, (adaptive avgpool 6x6 = identity at 224), classifier */
    add_layer(d, BKM_CNN_CONV, "conv1", 64, 11, 4, 2);
    add_layer(d, BKM_CNN_RELU, "relu1", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_MAXPOOL, "pool1", 0, 3, 2, 0);
    add_layer(d, BKM_CNN_CONV, "conv2", 192, 5, 1, 2);
    add_layer(d, BKM_CNN_RELU, "relu2", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_MAXPOOL, "pool2", 0, 3, 2, 0);
    add_layer(d, BKM_CNN_CONV, "conv3", 384, 3, 1, 1);
    add_layer(d, BKM_CNN_RELU, "relu3", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_CONV, "conv4", 256, 3, 1, 1);
    add_layer(d, BKM_CNN_RELU, "relu4", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_CONV, "conv5", 256, 3, 1, 1);
    add_layer(d, BKM_CNN_RELU, "relu5", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_MAXPOOL, "pool5", 0, 3, 2, 0);
    add_layer(d, BKM_CNN_DROPOUT, "drop6", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_FC, "fc6", 4096, 0, 0, 0);
    add_layer(d, BKM_CNN_RELU, "relu6", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_DROPOUT, "drop7", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_FC, "fc7", 4096, 0, 0, 0);
    add_layer(d, BKM_CNN_RELU, "relu7", 0, 0, 0, 0);
    add_layer(d, BKM_CNN_FC, "fc8", 1000, 0, 0, 0);
}

int bkm_kern_cnn_check(const bkm_cnn_desc_t *d, bkm_cnn_shape_t *shapes, bkm_err_t *err)
{
    int64_t c = d->c, h = d->h, w = d->w;
    if (d->mb <= 0 || c <= 0 || h <= 0 || w <= 0)
        return bkm_err_set(err, BKM_EINVAL, "cnn: input %lldx%lldx%lldx%lld must be positive", (long long)d->mb,
                           (long long)c, (long long)h, (long long)w);
    if (d->n_layers < 1 || d->n_layers > BKM_CNN_MAX_LAYERS || d->layer[d->n_layers - 1].kind != BKM_CNN_FC)
        return bkm_err_set(err, BKM_EINVAL, "cnn: %d layers: need 1..%d ending with an FC layer", d->n_layers,
                           BKM_CNN_MAX_LAYERS);
    if (!(d->lr > 0.0f) || !isfinite(d->lr))
        return bkm_err_set(err, BKM_EINVAL, "cnn: learning rate %g must be positive", (double)d->lr);
    for (int i = 0; i < d->n_layers; i++) {
        const bkm_cnn_layer_t *l = &d->layer[i];
        switch (l->kind) {
        case BKM_CNN_CONV:
        case BKM_CNN_MAXPOOL:
            if (l->k <= 0 || l->s <= 0 || l->p < 0 || (l->kind == BKM_CNN_CONV && l->out <= 0))
                return bkm_err_set(err, BKM_EINVAL, "cnn layer %d (%s): k=%lld s=%lld p=%lld out=%lld", i, l->name,
                                   (long long)l->k, (long long)l->s, (long long)l->p, (long long)l->out);
            h = (h + 2 * l->p - l->k) / l->s + 1;
            w = (w + 2 * l->p - l->k) / l->s + 1;
            if (h <= 0 || w <= 0 || h + 2 * l->p < l->k)
                return bkm_err_set(err, BKM_EINVAL, "cnn layer %d (%s): empty output for a %lld-wide window", i,
                                   l->name, (long long)l->k);
            if (l->kind == BKM_CNN_CONV)
                c = l->out;
            break;
        case BKM_CNN_FC:
            if (l->out <= 0)
                return bkm_err_set(err, BKM_EINVAL, "cnn layer %d (%s): out=%lld", i, l->name, (long long)l->out);
            c = l->out;
            h = w = 1;
            break;
        case BKM_CNN_RELU:
        case BKM_CNN_DROPOUT:
            break;
        default:
            return bkm_err_set(err, BKM_EINVAL, "cnn layer %d: unknown kind %d", i, (int)l->kind);
        }
        if (shapes)
            shapes[i] = (bkm_cnn_shape_t){c, h, w};
    }
    return BKM_OK;
}

double bkm_kern_cnn_flops(const bkm_cnn_desc_t *d, int training)
{
    bkm_cnn_shape_t sh[BKM_CNN_MAX_LAYERS];
    double fwd = 0.0, first = -1.0;
    int64_t c = d->c, h = d->h, w = d->w;
    if (bkm_kern_cnn_check(d, sh, NULL) < 0)
        return 0.0;
    for (int i = 0; i < d->n_layers; i++) {
        const bkm_cnn_layer_t *l = &d->layer[i];
        double f = 0.0;
        if (l->kind == BKM_CNN_CONV)
            f = 2.0 * (double)d->mb * (double)l->out * (double)c * (double)(l->k * l->k) * (double)(sh[i].h * sh[i].w);
        else if (l->kind == BKM_CNN_FC)
            f = 2.0 * (double)d->mb * (double)(c * h * w) * (double)l->out;
        if (f > 0.0 && first < 0.0)
            first = f;
        fwd += f;
        c = sh[i].c;
        h = sh[i].h;
        w = sh[i].w;
    }
    return training ? 3.0 * fwd - first : fwd;
}

int64_t bkm_kern_cnn_n_params(const bkm_cnn_desc_t *d)
{
    bkm_cnn_shape_t sh[BKM_CNN_MAX_LAYERS];
    int64_t n = 0, c = d->c, h = d->h, w = d->w;
    if (bkm_kern_cnn_check(d, sh, NULL) < 0)
        return 0;
    for (int i = 0; i < d->n_layers; i++) {
        const bkm_cnn_layer_t *l = &d->layer[i];
        if (l->kind == BKM_CNN_CONV)
            n += l->out * c * l->k * l->k + l->out;
        else if (l->kind == BKM_CNN_FC)
            n += l->out * c * h * w + l->out;
        c = sh[i].c;
        h = sh[i].h;
        w = sh[i].w;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* oneDNN chain                                                                               */
/* ---------------------------------------------------------------------------------------- */

#define ONET_MAX_MEMS 256
#define ONET_MAX_PRIMS 160
#define ONET_MAX_STEPS 96
#define ONET_MAX_ARGS 8

/* One primitive execution with its arguments. */
typedef struct onet_step {
    dnnl_primitive_t prim;
    dnnl_exec_arg_t args[ONET_MAX_ARGS];
    int n_args;
} onet_step_t;

typedef struct onet_steps {
    onet_step_t s[ONET_MAX_STEPS];
    int n;
} onet_steps_t;

/* A tensor: its descriptor and memory (owned by the pool). */
typedef struct onet_t {
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
} onet_tensor_t;

/* A trainable tensor: the user copy, the fwd-layout value and its gradient in that layout. */
typedef struct onet_param {
    float *user;              /* user layout (OIHW / OI / O), owned */
    size_t n_user;
    dnnl_memory_t user_mem;
    onet_tensor_t w;          /* layout chosen by the forward primitive */
    onet_tensor_t dw;         /* same layout as w (reordered from the bwd-weights layout if needed) */
    size_t n_int;             /* floats in w / dw (including any blocking padding) */
} onet_param_t;

struct bkm_onednn_cnn {
    bkm_cnn_desc_t d;
    bkm_cnn_shape_t shape[BKM_CNN_MAX_LAYERS];
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_attr_t attr;

    dnnl_memory_t mems[ONET_MAX_MEMS];
    int n_mems;
    dnnl_primitive_t prims[ONET_MAX_PRIMS];
    int n_prims;

    onet_steps_t prep, fwd, bwd, upd, fin;

    float *input;             /* user NCHW input, owned */
    size_t n_input;
    int32_t *labels;
    onet_param_t wei[BKM_CNN_MAX_LAYERS], bias[BKM_CNN_MAX_LAYERS];
    int has_param[BKM_CNN_MAX_LAYERS];

    onet_tensor_t logits;     /* last FC output, plain nc */
    onet_tensor_t logp;       /* log-softmax of the logits, plain nc */
    onet_tensor_t dlogits;    /* gradient of the loss wrt the logits, plain nc */
    char impl[512];
};

static int net_mem(bkm_onednn_cnn_t *net, onet_tensor_t *t, const dnnl_memory_desc_t *md, void *handle, bkm_err_t *err)
{
    int rc;
    if (net->n_mems == ONET_MAX_MEMS)
        return bkm_err_set(err, BKM_ENOMEM, "cnn: more than %d oneDNN memories", ONET_MAX_MEMS);
    t->md = *md;
    if ((rc = bkm__odnn_mem(&t->mem, md, net->eng, handle, err)) < 0)
        return rc;
    net->mems[net->n_mems++] = t->mem;
    return BKM_OK;
}

static int net_keep_prim(bkm_onednn_cnn_t *net, dnnl_primitive_t p, bkm_err_t *err)
{
    if (net->n_prims == ONET_MAX_PRIMS) {
        dnnl_primitive_destroy(p);
        return bkm_err_set(err, BKM_ENOMEM, "cnn: more than %d oneDNN primitives", ONET_MAX_PRIMS);
    }
    net->prims[net->n_prims++] = p;
    return BKM_OK;
}

static onet_step_t *steps_add(onet_steps_t *ss, dnnl_primitive_t p)
{
    onet_step_t *s;
    if (ss->n == ONET_MAX_STEPS)
        return NULL;
    s = &ss->s[ss->n++];
    s->prim = p;
    s->n_args = 0;
    return s;
}

static void step_arg(onet_step_t *s, int arg, dnnl_memory_t m)
{
    if (m && s->n_args < ONET_MAX_ARGS)
        s->args[s->n_args++] = (dnnl_exec_arg_t){arg, m};
}

/* Note the implementation of @p pd in the impl summary (distinct names only). */
static void net_note_impl(bkm_onednn_cnn_t *net, const_dnnl_primitive_desc_t pd)
{
    char name[96];
    size_t len = strlen(net->impl);
    bkm__odnn_impl_name(pd, name, sizeof name);
    if (len == 0) {
        snprintf(net->impl, sizeof net->impl, "%s", name);
        return;
    }
    const char *bare = name + strlen("onednn:");
    const char *p = net->impl + strlen("onednn:");
    size_t bl = strlen(bare);
    while (p && *p) {   /* '+'-separated list */
        const char *e = strchr(p, '+');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == bl && strncmp(p, bare, bl) == 0)
            return;
        p = e ? e + 1 : NULL;
    }
    if (len + 1 + bl < sizeof net->impl)
        snprintf(net->impl + len, sizeof net->impl - len, "+%s", bare);
}

/* Primitive from @p pd (destroys pd), its scratchpad, and a step in @p ss; a compute primitive
 * (not a reorder) also names its implementation in the impl summary. */
static int net_prim(bkm_onednn_cnn_t *net, dnnl_primitive_desc_t pd, onet_steps_t *ss, onet_step_t **step,
                    bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_primitive_t p = NULL;
    onet_tensor_t scratch = {0};
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind) == dnnl_success && kind != dnnl_reorder)
        net_note_impl(net, pd);
    BKM_ODNN_TRY(dnnl_primitive_create(&p, pd));
    if ((rc = net_keep_prim(net, p, err)) < 0)
        goto out;
    if (smd && dnnl_memory_desc_get_size(smd) > 0 && (rc = net_mem(net, &scratch, smd, NULL, err)) < 0)
        goto out;
    if (!(*step = steps_add(ss, p))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "cnn: more than %d steps in one phase", ONET_MAX_STEPS);
        goto out;
    }
    step_arg(*step, DNNL_ARG_SCRATCHPAD, scratch.mem);
out:
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Make @p have available in layout @p want: returns @p have itself when the layouts match, else a
 * new tensor filled by a reorder step appended to @p ss. */
static int net_convert(bkm_onednn_cnn_t *net, const onet_tensor_t *have, const dnnl_memory_desc_t *want,
                       onet_steps_t *ss, onet_tensor_t *out_t, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    if (dnnl_memory_desc_equal(&have->md, want)) {
        *out_t = *have;
        return BKM_OK;
    }
    if ((rc = net_mem(net, out_t, want, NULL, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_reorder_primitive_desc_create(&pd, &have->md, net->eng, want, net->eng, net->attr));
    rc = net_prim(net, pd, ss, &s, err);
    pd = NULL;
    if (rc < 0)
        goto out;
    step_arg(s, DNNL_ARG_FROM, have->mem);
    step_arg(s, DNNL_ARG_TO, out_t->mem);
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int any_md(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, bkm_err_t *err)
{
    int rc = BKM_OK;
    BKM_ODNN_TRY(dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, dnnl_format_tag_any));
out:
    return rc;
}

/* User copy + fwd-layout value + gradient of one parameter tensor. */
static int net_param(bkm_onednn_cnn_t *net, onet_param_t *pr, int nd, const dnnl_dim_t *dims,
                     const dnnl_memory_desc_t *fwd_md, bkm_err_t *err)
{
    int rc;
    dnnl_memory_desc_t umd;
    onet_tensor_t ut;
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)dims[i];
    if ((rc = bkm__odnn_plain_md(&umd, nd, dims, err)) < 0)
        return rc;
    if (!(pr->user = bkm_aligned_alloc(64, n * sizeof(float))))
        return bkm_err_set(err, BKM_ENOMEM, "cnn: cannot allocate %zu parameters", n);
    memset(pr->user, 0, n * sizeof(float));
    pr->n_user = n;
    if ((rc = net_mem(net, &ut, &umd, pr->user, err)) < 0)
        return rc;
    pr->user_mem = ut.mem;
    if ((rc = net_mem(net, &pr->w, fwd_md, NULL, err)) < 0 || (rc = net_mem(net, &pr->dw, fwd_md, NULL, err)) < 0)
        return rc;
    pr->n_int = dnnl_memory_desc_get_size(fwd_md) / sizeof(float);
    /* prepare: user -> w; finish: w -> user (both through a reorder even when the layouts match) */
    {
        dnnl_primitive_desc_t pd = NULL;
        onet_step_t *s;
        BKM_ODNN_TRY(dnnl_reorder_primitive_desc_create(&pd, &umd, net->eng, fwd_md, net->eng, net->attr));
        if ((rc = net_prim(net, pd, &net->prep, &s, err)) < 0)
            return rc;
        step_arg(s, DNNL_ARG_FROM, ut.mem);
        step_arg(s, DNNL_ARG_TO, pr->w.mem);
        BKM_ODNN_TRY(dnnl_reorder_primitive_desc_create(&pd, fwd_md, net->eng, &umd, net->eng, net->attr));
        if ((rc = net_prim(net, pd, &net->fin, &s, err)) < 0)
            return rc;
        step_arg(s, DNNL_ARG_FROM, pr->w.mem);
        step_arg(s, DNNL_ARG_TO, ut.mem);
    }
out:
    return rc;
}

/* The gradient a backward primitive writes in layout @p bw_md, brought into the fwd layout of
 * @p pr before the update. Returns the tensor the primitive must write. */
static int net_grad_target(bkm_onednn_cnn_t *net, onet_param_t *pr, const dnnl_memory_desc_t *bw_md,
                           onet_tensor_t *target, bkm_err_t *err)
{
    int rc;
    if (dnnl_memory_desc_equal(bw_md, &pr->dw.md)) {
        *target = pr->dw;
        return BKM_OK;
    }
    if ((rc = net_mem(net, target, bw_md, NULL, err)) < 0)
        return rc;
    /* reorder target -> dw at the start of the update phase */
    {
        int r2;
        dnnl_primitive_desc_t pd = NULL;
        onet_step_t *s;
        dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, bw_md, net->eng, &pr->dw.md, net->eng, net->attr);
        if (st != dnnl_success)
            return bkm__kern_onednn_status((int)st, "reorder of a weight gradient", err);
        if ((r2 = net_prim(net, pd, &net->upd, &s, err)) < 0)
            return r2;
        step_arg(s, DNNL_ARG_FROM, target->mem);
        step_arg(s, DNNL_ARG_TO, pr->dw.mem);
    }
    return BKM_OK;
}

/* Forward state while building: the current activation tensor and its NCHW (or NC) dims. */
typedef struct onet_cur {
    onet_tensor_t t;
    int is_input;     /* still the constant network input: conversions go to the prepare phase */
    int nd;
    dnnl_dim_t dims[4];
} onet_cur_t;

/* Per-layer record kept from the forward build for the backward build. */
typedef struct onet_rec {
    onet_tensor_t src;            /* forward input as the forward primitive read it */
    onet_tensor_t dst;            /* forward output */
    dnnl_primitive_desc_t fwd_pd; /* hint for backward (owned until the backward is built) */
    onet_tensor_t ws;             /* pooling workspace */
    int skip;                     /* dropout: identity */
    int unflatten;                /* FC over a 4-D input: its 2-D input gradient is viewed back as 4-D */
    dnnl_dim_t in_dims[4];
} onet_rec_t;

/* View tensor @p t (plain, contiguous) with descriptor @p md (same bytes, other dims). */
static int net_view(bkm_onednn_cnn_t *net, const onet_tensor_t *t, const dnnl_memory_desc_t *md, onet_tensor_t *view,
                    bkm_err_t *err)
{
    int rc = BKM_OK;
    void *h = NULL;
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(t->mem, &h));
    rc = net_mem(net, view, md, h, err);
out:
    return rc;
}

/* Turn the 4-D current activation into a plain 2-D [mb][C*H*W] view (reorder step if needed). */
static int flatten_input(bkm_onednn_cnn_t *net, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_memory_desc_t plain4, flat;
    dnnl_dim_t fdims[2] = {cur->dims[0], cur->dims[1] * cur->dims[2] * cur->dims[3]};
    onet_tensor_t t4;
    if ((rc = bkm__odnn_plain_md(&plain4, 4, cur->dims, err)) < 0 ||
        (rc = net_convert(net, &cur->t, &plain4, cur->is_input ? &net->prep : &net->fwd, &t4, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_memory_desc_reshape(&flat, &plain4, 2, fdims));
    if ((rc = net_view(net, &t4, &flat, &cur->t, err)) < 0)
        return rc;
    rec->unflatten = 1;
    memcpy(rec->in_dims, cur->dims, sizeof rec->in_dims);
    cur->nd = 2;
    cur->dims[1] = fdims[1];
out:
    return rc;
}

static int build_conv_or_fc(bkm_onednn_cnn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    const bkm_cnn_layer_t *l = &net->d.layer[i];
    int rc = BKM_OK, is_conv = l->kind == BKM_CNN_CONV;
    dnnl_memory_desc_t src_any, wei_any, bias_any, dst_md;
    dnnl_dim_t wdims[4], bdims[1] = {l->out}, ddims[4];
    int wnd;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    onet_tensor_t src;

    if (is_conv) {
        dnnl_dim_t strides[2] = {l->s, l->s}, pad[2] = {l->p, l->p};
        dnnl_dim_t pr[2] = {(net->shape[i].h - 1) * l->s + l->k - cur->dims[2] - l->p,
                            (net->shape[i].w - 1) * l->s + l->k - cur->dims[3] - l->p};
        dnnl_convolution_desc_t cd;
        wnd = 4;
        wdims[0] = l->out;
        wdims[1] = cur->dims[1];
        wdims[2] = wdims[3] = l->k;
        ddims[0] = net->d.mb;
        ddims[1] = l->out;
        ddims[2] = net->shape[i].h;
        ddims[3] = net->shape[i].w;
        if ((rc = any_md(&src_any, 4, cur->dims, err)) < 0 || (rc = any_md(&wei_any, 4, wdims, err)) < 0 ||
            (rc = any_md(&bias_any, 1, bdims, err)) < 0 || (rc = any_md(&dst_md, 4, ddims, err)) < 0)
            return rc;
        BKM_ODNN_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &src_any,
                                                        &wei_any, &bias_any, &dst_md, strides, pad, pr));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&rec->fwd_pd, &cd, net->attr, net->eng, NULL));
    } else {
        dnnl_inner_product_desc_t ipd;
        /* A 4-D input (pool5's blocked output) is reordered to plain NCHW and viewed as 2-D
         * [mb][C*H*W]: a small activation reorder per step instead of reorders of the 37.7 M
         * fc6 weights between the fwd / bwd-data / bwd-weights layouts oneDNN picks for 4-D. */
        if (cur->nd == 4 && (rc = flatten_input(net, cur, rec, err)) < 0)
            return rc;
        wnd = 2;
        wdims[0] = l->out;
        wdims[1] = cur->dims[1];
        ddims[0] = net->d.mb;
        ddims[1] = l->out;
        /* the logits are plain, for the loss loop */
        if ((rc = any_md(&wei_any, wnd, wdims, err)) < 0 || (rc = any_md(&bias_any, 1, bdims, err)) < 0)
            return rc;
        BKM_ODNN_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, ddims, dnnl_f32, dnnl_nc));
        src_any = cur->t.md;
        BKM_ODNN_TRY(dnnl_inner_product_forward_desc_init(&ipd, dnnl_forward_training, &src_any, &wei_any, &bias_any,
                                                          &dst_md));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&rec->fwd_pd, &ipd, net->attr, net->eng, NULL));
    }

    /* source in the primitive's layout */
    if ((rc = net_convert(net, &cur->t, dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_src_md, 0),
                          cur->is_input ? &net->prep : &net->fwd, &src, err)) < 0)
        return rc;
    rec->src = src;
    /* parameters */
    net->has_param[i] = 1;
    if ((rc = net_param(net, &net->wei[i], wnd, wdims, dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_weights_md, 0),
                        err)) < 0 ||
        (rc = net_param(net, &net->bias[i], 1, bdims, dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_weights_md, 1),
                        err)) < 0)
        return rc;
    if ((rc = net_mem(net, &rec->dst, dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_dst_md, 0), NULL, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_primitive_desc_clone(&pd, rec->fwd_pd));
    rc = net_prim(net, pd, &net->fwd, &s, err);
    pd = NULL;
    if (rc < 0)
        goto out;
    step_arg(s, DNNL_ARG_SRC, src.mem);
    step_arg(s, DNNL_ARG_WEIGHTS, net->wei[i].w.mem);
    step_arg(s, DNNL_ARG_BIAS, net->bias[i].w.mem);
    step_arg(s, DNNL_ARG_DST, rec->dst.mem);
    cur->t = rec->dst;
    cur->is_input = 0;
    cur->nd = is_conv ? 4 : 2;
    memcpy(cur->dims, ddims, sizeof ddims);
out:
    return rc;
}

static int build_relu(bkm_onednn_cnn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    if (cur->is_input)
        return bkm_err_set(err, BKM_EINVAL, "cnn layer %d (%s): ReLU directly on the input is not supported", i,
                           net->d.layer[i].name);
    /* In place: the forward output is what the backward needs (relu_use_dst_for_bwd). */
    BKM_ODNN_TRY(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training, dnnl_eltwise_relu_use_dst_for_bwd,
                                                &cur->t.md, 0.0f, 0.0f));
    BKM_ODNN_TRY(dnnl_primitive_desc_create(&rec->fwd_pd, &ed, net->attr, net->eng, NULL));
    BKM_ODNN_TRY(dnnl_primitive_desc_clone(&pd, rec->fwd_pd));
    rc = net_prim(net, pd, &net->fwd, &s, err);
    pd = NULL;
    if (rc < 0)
        goto out;
    step_arg(s, DNNL_ARG_SRC, cur->t.mem);
    step_arg(s, DNNL_ARG_DST, cur->t.mem);
    rec->src = rec->dst = cur->t;
out:
    return rc;
}

static int build_pool(bkm_onednn_cnn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    const bkm_cnn_layer_t *l = &net->d.layer[i];
    int rc = BKM_OK;
    dnnl_pooling_desc_t pdsc;
    dnnl_memory_desc_t dst_any;
    dnnl_dim_t ddims[4] = {net->d.mb, cur->dims[1], net->shape[i].h, net->shape[i].w};
    dnnl_dim_t k[2] = {l->k, l->k}, st[2] = {l->s, l->s}, pl[2] = {l->p, l->p};
    dnnl_dim_t pr[2] = {(ddims[2] - 1) * l->s + l->k - cur->dims[2] - l->p,
                        (ddims[3] - 1) * l->s + l->k - cur->dims[3] - l->p};
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *ws_md;
    onet_step_t *s;
    if (cur->is_input)
        return bkm_err_set(err, BKM_EINVAL, "cnn layer %d (%s): pooling directly on the input is not supported", i,
                           l->name);
    if ((rc = any_md(&dst_any, 4, ddims, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_pooling_forward_desc_init(&pdsc, dnnl_forward_training, dnnl_pooling_max, &cur->t.md, &dst_any,
                                                st, k, pl, pr));
    BKM_ODNN_TRY(dnnl_primitive_desc_create(&rec->fwd_pd, &pdsc, net->attr, net->eng, NULL));
    rec->src = cur->t;
    if ((rc = net_mem(net, &rec->dst, dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_dst_md, 0), NULL, err)) < 0)
        return rc;
    ws_md = dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_workspace_md, 0);
    if (ws_md && dnnl_memory_desc_get_size(ws_md) > 0 && (rc = net_mem(net, &rec->ws, ws_md, NULL, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_primitive_desc_clone(&pd, rec->fwd_pd));
    rc = net_prim(net, pd, &net->fwd, &s, err);
    pd = NULL;
    if (rc < 0)
        goto out;
    step_arg(s, DNNL_ARG_SRC, cur->t.mem);
    step_arg(s, DNNL_ARG_DST, rec->dst.mem);
    step_arg(s, DNNL_ARG_WORKSPACE, rec->ws.mem);
    cur->t = rec->dst;
    memcpy(cur->dims, ddims, sizeof ddims);
out:
    return rc;
}

/* Backward of layer @p i: @p g holds the gradient wrt its output; on return the gradient wrt
 * its input (unset for the first layer, whose input needs none). */
static int build_bwd(bkm_onednn_cnn_t *net, int i, onet_rec_t *rec, onet_tensor_t *g, bkm_err_t *err)
{
    const bkm_cnn_layer_t *l = &net->d.layer[i];
    int rc = BKM_OK, first = (i == 0);
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    onet_tensor_t gd, gsrc;

    if (rec->skip)
        return BKM_OK;
    if (l->kind == BKM_CNN_RELU) {
        dnnl_eltwise_desc_t ed;
        onet_tensor_t dst;
        /* gradient in the layout it arrives in; the forward output converted if it differs */
        BKM_ODNN_TRY(dnnl_eltwise_backward_desc_init(&ed, dnnl_eltwise_relu_use_dst_for_bwd, &g->md, &rec->dst.md,
                                                     0.0f, 0.0f));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &ed, net->attr, net->eng, rec->fwd_pd));
        if ((rc = net_convert(net, &rec->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &net->bwd, &dst,
                              err)) < 0)
            goto out;
        rc = net_prim(net, pd, &net->bwd, &s, err);
        pd = NULL;
        if (rc < 0)
            goto out;
        step_arg(s, DNNL_ARG_DST, dst.mem);
        step_arg(s, DNNL_ARG_DIFF_DST, g->mem);
        step_arg(s, DNNL_ARG_DIFF_SRC, g->mem);
        return BKM_OK;
    }
    if (l->kind == BKM_CNN_MAXPOOL) {
        dnnl_pooling_desc_t pdsc;
        dnnl_dim_t k[2] = {l->k, l->k}, st[2] = {l->s, l->s}, pl[2] = {l->p, l->p};
        int64_t ih = rec->src.md.dims[2], iw = rec->src.md.dims[3];
        dnnl_dim_t pr[2] = {(net->shape[i].h - 1) * l->s + l->k - ih - l->p,
                            (net->shape[i].w - 1) * l->s + l->k - iw - l->p};
        BKM_ODNN_TRY(dnnl_pooling_backward_desc_init(&pdsc, dnnl_pooling_max, &rec->src.md, &rec->dst.md, st, k, pl,
                                                     pr));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &pdsc, net->attr, net->eng, rec->fwd_pd));
        if ((rc = net_convert(net, g, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0), &net->bwd, &gd,
                              err)) < 0)
            goto out;
        if ((rc = net_mem(net, &gsrc, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_src_md, 0), NULL, err)) < 0)
            goto out;
        rc = net_prim(net, pd, &net->bwd, &s, err);
        pd = NULL;
        if (rc < 0)
            goto out;
        step_arg(s, DNNL_ARG_DIFF_DST, gd.mem);
        step_arg(s, DNNL_ARG_WORKSPACE, rec->ws.mem);
        step_arg(s, DNNL_ARG_DIFF_SRC, gsrc.mem);
        *g = gsrc;
        return BKM_OK;
    }

    /* CONV or FC: backward weights, then backward data (skipped for the first layer). */
    {
        int is_conv = l->kind == BKM_CNN_CONV;
        dnnl_memory_desc_t src_any, wei_any, bias_any, dst_any;
        const dnnl_memory_desc_t *wmd = &net->wei[i].w.md;
        onet_tensor_t src, dw, db, w;
        dnnl_dim_t strides[2] = {l->s, l->s}, pad[2] = {l->p, l->p}, pr[2] = {0, 0};
        if (is_conv) {
            pr[0] = (net->shape[i].h - 1) * l->s + l->k - rec->src.md.dims[2] - l->p;
            pr[1] = (net->shape[i].w - 1) * l->s + l->k - rec->src.md.dims[3] - l->p;
        }
        if ((rc = any_md(&src_any, rec->src.md.ndims, rec->src.md.dims, err)) < 0 ||
            (rc = any_md(&wei_any, wmd->ndims, wmd->dims, err)) < 0 ||
            (rc = any_md(&bias_any, 1, &l->out, err)) < 0 ||
            (rc = any_md(&dst_any, rec->dst.md.ndims, rec->dst.md.dims, err)) < 0)
            goto out;
        if (is_conv) {
            dnnl_convolution_desc_t cd;
            BKM_ODNN_TRY(dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &src_any, &wei_any,
                                                                     &bias_any, &dst_any, strides, pad, pr));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &cd, net->attr, net->eng, rec->fwd_pd));
        } else {
            dnnl_inner_product_desc_t ipd;
            BKM_ODNN_TRY(dnnl_inner_product_backward_weights_desc_init(&ipd, &rec->src.md, &wei_any, &bias_any,
                                                                       &rec->dst.md));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &ipd, net->attr, net->eng, rec->fwd_pd));
        }
        if ((rc = net_convert(net, &rec->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), &net->bwd, &src,
                              err)) < 0 ||
            (rc = net_convert(net, g, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0), &net->bwd, &gd,
                              err)) < 0 ||
            (rc = net_grad_target(net, &net->wei[i], dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0),
                                  &dw, err)) < 0 ||
            (rc = net_grad_target(net, &net->bias[i], dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 1),
                                  &db, err)) < 0)
            goto out;
        rc = net_prim(net, pd, &net->bwd, &s, err);
        pd = NULL;
        if (rc < 0)
            goto out;
        step_arg(s, DNNL_ARG_SRC, src.mem);
        step_arg(s, DNNL_ARG_DIFF_DST, gd.mem);
        step_arg(s, DNNL_ARG_DIFF_WEIGHTS, dw.mem);
        step_arg(s, DNNL_ARG_DIFF_BIAS, db.mem);
        if (first)
            return BKM_OK;

        if (is_conv) {
            dnnl_convolution_desc_t cd;
            BKM_ODNN_TRY(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &src_any, &wei_any,
                                                                  &dst_any, strides, pad, pr));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &cd, net->attr, net->eng, rec->fwd_pd));
        } else {
            dnnl_inner_product_desc_t ipd;
            BKM_ODNN_TRY(dnnl_inner_product_backward_data_desc_init(&ipd, &rec->src.md, &wei_any, &rec->dst.md));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &ipd, net->attr, net->eng, rec->fwd_pd));
        }
        if ((rc = net_convert(net, g, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0), &net->bwd, &gd,
                              err)) < 0 ||
            (rc = net_convert(net, &net->wei[i].w, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                              &net->bwd, &w, err)) < 0 ||
            (rc = net_mem(net, &gsrc, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_src_md, 0), NULL, err)) < 0)
            goto out;
        rc = net_prim(net, pd, &net->bwd, &s, err);
        pd = NULL;
        if (rc < 0)
            goto out;
        step_arg(s, DNNL_ARG_DIFF_DST, gd.mem);
        step_arg(s, DNNL_ARG_WEIGHTS, w.mem);
        step_arg(s, DNNL_ARG_DIFF_SRC, gsrc.mem);
        *g = gsrc;
        if (rec->unflatten) {
            dnnl_memory_desc_t plain4;
            if ((rc = bkm__odnn_plain_md(&plain4, 4, rec->in_dims, err)) < 0 ||
                (rc = net_view(net, &gsrc, &plain4, g, err)) < 0)
                goto out;
        }
    }
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

int bkm_kern_onednn_cnn_create(bkm_onednn_cnn_t **netp, const bkm_cnn_desc_t *d, bkm_err_t *err)
{
    int rc = BKM_OK;
    bkm_onednn_cnn_t *net = NULL;
    onet_rec_t rec[BKM_CNN_MAX_LAYERS];
    onet_cur_t cur;
    dnnl_primitive_desc_t pd = NULL;
    int nl = d->n_layers;
    const bkm_cnn_layer_t *last;

    memset(rec, 0, sizeof rec);
    *netp = NULL;
    if (!(net = bkm_calloc(1, sizeof *net)))
        return bkm_err_set(err, BKM_ENOMEM, "cnn: out of memory");
    net->d = *d;
    if ((rc = bkm_kern_cnn_check(d, net->shape, err)) < 0)
        goto out;
    last = &d->layer[nl - 1];
    net->n_input = (size_t)(d->mb * d->c * d->h * d->w);
    net->input = bkm_aligned_alloc(64, net->n_input * sizeof(float));
    net->labels = bkm_calloc((size_t)d->mb, sizeof(int32_t));
    if (!net->input || !net->labels) {
        rc = bkm_err_set(err, BKM_ENOMEM, "cnn: cannot allocate the input of %zu floats", net->n_input);
        goto out;
    }
    memset(net->input, 0, net->n_input * sizeof(float));
    BKM_ODNN_TRY(dnnl_engine_create(&net->eng, dnnl_cpu, 0));
    BKM_ODNN_TRY(dnnl_stream_create(&net->strm, net->eng, dnnl_stream_default_flags));
    if ((rc = bkm__odnn_attr(&net->attr, err)) < 0)
        goto out;

    /* forward */
    memset(&cur, 0, sizeof cur);
    cur.nd = 4;
    cur.dims[0] = d->mb;
    cur.dims[1] = d->c;
    cur.dims[2] = d->h;
    cur.dims[3] = d->w;
    cur.is_input = 1;
    {
        dnnl_memory_desc_t umd;
        if ((rc = bkm__odnn_plain_md(&umd, 4, cur.dims, err)) < 0 || (rc = net_mem(net, &cur.t, &umd, net->input, err)) < 0)
            goto out;
    }
    for (int i = 0; i < nl; i++) {
        switch (d->layer[i].kind) {
        case BKM_CNN_CONV:
        case BKM_CNN_FC:
            rc = build_conv_or_fc(net, i, &cur, &rec[i], err);
            break;
        case BKM_CNN_RELU:
            rc = build_relu(net, i, &cur, &rec[i], err);
            break;
        case BKM_CNN_MAXPOOL:
            rc = build_pool(net, i, &cur, &rec[i], err);
            break;
        default: /* dropout in eval mode */
            rec[i].skip = 1;
            rc = BKM_OK;
            break;
        }
        if (rc < 0) {
            bkm_err_prefix(err, "cnn layer %d (%s)", i, d->layer[i].name);
            goto out;
        }
    }

    /* loss: log-softmax over the plain logits; the cross-entropy loop runs in step() */
    net->logits = cur.t;
    {
        dnnl_logsoftmax_desc_t ld;
        onet_step_t *s;
        dnnl_dim_t nc[2] = {d->mb, last->out};
        dnnl_memory_desc_t plain;
        if ((rc = bkm__odnn_plain_md(&plain, 2, nc, err)) < 0)
            goto out;
        if (!dnnl_memory_desc_equal(&plain, &net->logits.md)) {
            rc = bkm_err_set(err, BKM_EDEP, "cnn: oneDNN did not produce plain logits");
            goto out;
        }
        BKM_ODNN_TRY(dnnl_logsoftmax_forward_desc_init(&ld, dnnl_forward_inference, &plain, 1));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&pd, &ld, net->attr, net->eng, NULL));
        if ((rc = net_mem(net, &net->logp, &plain, NULL, err)) < 0 ||
            (rc = net_mem(net, &net->dlogits, &plain, NULL, err)) < 0)
            goto out;
        rc = net_prim(net, pd, &net->bwd, &s, err);
        pd = NULL;
        if (rc < 0)
            goto out;
        step_arg(s, DNNL_ARG_SRC, net->logits.mem);
        step_arg(s, DNNL_ARG_DST, net->logp.mem);
    }

    /* backward, last layer first; the first bwd step (log-softmax) stays first, the loss loop
     * is run between it and the rest (see step). */
    {
        onet_tensor_t g = net->dlogits;
        for (int i = nl - 1; i >= 0; i--) {
            if ((rc = build_bwd(net, i, &rec[i], &g, err)) < 0) {
                bkm_err_prefix(err, "cnn layer %d (%s) backward", i, d->layer[i].name);
                goto out;
            }
        }
    }
    *netp = net;
    net = NULL;
out:
    for (int i = 0; i < BKM_CNN_MAX_LAYERS; i++)
        if (rec[i].fwd_pd)
            dnnl_primitive_desc_destroy(rec[i].fwd_pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    bkm_kern_onednn_cnn_destroy(net);
    return rc;
}

float *bkm_kern_onednn_cnn_input(bkm_onednn_cnn_t *net, size_t *n)
{
    if (n)
        *n = net->n_input;
    return net->input;
}

int32_t *bkm_kern_onednn_cnn_labels(bkm_onednn_cnn_t *net, size_t *n)
{
    if (n)
        *n = (size_t)net->d.mb;
    return net->labels;
}

float *bkm_kern_onednn_cnn_param(bkm_onednn_cnn_t *net, int layer, bkm_arg_t arg, size_t *n)
{
    onet_param_t *p = NULL;
    if (layer >= 0 && layer < net->d.n_layers && net->has_param[layer])
        p = arg == BKM_ARG_WEI ? &net->wei[layer] : arg == BKM_ARG_BIAS ? &net->bias[layer] : NULL;
    if (n)
        *n = p ? p->n_user : 0;
    return p ? p->user : NULL;
}

static int run_steps(bkm_onednn_cnn_t *net, const onet_steps_t *ss, int from, bkm_err_t *err)
{
    int rc = BKM_OK;
    for (int i = from; i < ss->n; i++)
        BKM_ODNN_TRY(dnnl_primitive_execute(ss->s[i].prim, net->strm, ss->s[i].n_args, ss->s[i].args));
    BKM_ODNN_TRY(dnnl_stream_wait(net->strm));
out:
    return rc;
}

int bkm_kern_onednn_cnn_prepare(bkm_onednn_cnn_t *net, bkm_err_t *err)
{
    int64_t classes = net->d.layer[net->d.n_layers - 1].out;
    for (int64_t i = 0; i < net->d.mb; i++)
        if (net->labels[i] < 0 || net->labels[i] >= classes)
            return bkm_err_set(err, BKM_EINVAL, "cnn: label[%lld] = %d outside [0, %lld)", (long long)i,
                               (int)net->labels[i], (long long)classes);
    return run_steps(net, &net->prep, 0, err);
}

int bkm_kern_onednn_cnn_finish(bkm_onednn_cnn_t *net, bkm_err_t *err)
{
    return run_steps(net, &net->fin, 0, err);
}

/* Mean cross-entropy from log-probabilities, and d loss / d logits = (p - onehot) / mb. */
static double xent(int64_t mb, int64_t nc, const float *logp, const int32_t *labels, float *dlogits)
{
    double loss = 0.0;
    float inv = 1.0f / (float)mb;
    for (int64_t i = 0; i < mb; i++) {
        const float *lp = logp + i * nc;
        float *g = dlogits + i * nc;
        loss -= (double)lp[labels[i]];
        for (int64_t j = 0; j < nc; j++)
            g[j] = expf(lp[j]) * inv;
        g[labels[i]] -= inv;
    }
    return loss / (double)mb;
}

int bkm_kern_onednn_cnn_step(bkm_onednn_cnn_t *net, float *loss, bkm_cnn_times_t *t, bkm_err_t *err)
{
    int rc = BKM_OK;
    uint64_t t0, t1, t2, t3;
    void *logp = NULL, *dl = NULL;
    onet_step_t *ls = &net->bwd.s[0];
    double l;

    t0 = bkm_now_ns();
    if ((rc = run_steps(net, &net->fwd, 0, err)) < 0)
        goto out;
    t1 = bkm_now_ns();
    BKM_ODNN_TRY(dnnl_primitive_execute(ls->prim, net->strm, ls->n_args, ls->args));
    BKM_ODNN_TRY(dnnl_stream_wait(net->strm));
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(net->logp.mem, &logp));
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(net->dlogits.mem, &dl));
    l = xent(net->d.mb, net->d.layer[net->d.n_layers - 1].out, logp, net->labels, dl);
    if ((rc = run_steps(net, &net->bwd, 1, err)) < 0)
        goto out;
    t2 = bkm_now_ns();
    if ((rc = run_steps(net, &net->upd, 0, err)) < 0)
        goto out;
    for (int i = 0; i < net->d.n_layers; i++) {
        void *w, *dw;
        if (!net->has_param[i])
            continue;
        for (int b = 0; b < 2; b++) {
            onet_param_t *p = b ? &net->bias[i] : &net->wei[i];
            BKM_ODNN_TRY(dnnl_memory_get_data_handle(p->w.mem, &w));
            BKM_ODNN_TRY(dnnl_memory_get_data_handle(p->dw.mem, &dw));
            bkm_kern_sgd_step(p->n_int, w, dw, NULL, net->d.lr, 0.0f, 0.0f);
        }
    }
    t3 = bkm_now_ns();
    if (loss)
        *loss = (float)l;
    if (t) {
        t->fwd_ms = (double)(t1 - t0) * 1e-6;
        t->bwd_ms = (double)(t2 - t1) * 1e-6;
        t->update_ms = (double)(t3 - t2) * 1e-6;
    }
out:
    return rc;
}

const char *bkm_kern_onednn_cnn_impl(const bkm_onednn_cnn_t *net)
{
    return net->impl;
}

void bkm_kern_onednn_cnn_destroy(bkm_onednn_cnn_t *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->n_prims; i++)
        dnnl_primitive_destroy(net->prims[i]);
    for (int i = 0; i < net->n_mems; i++)
        dnnl_memory_destroy(net->mems[i]);
    for (int i = 0; i < BKM_CNN_MAX_LAYERS; i++) {
        bkm_free(net->wei[i].user);
        bkm_free(net->bias[i].user);
    }
    if (net->attr)
        dnnl_primitive_attr_destroy(net->attr);
    dnnl_stream_destroy(net->strm);
    dnnl_engine_destroy(net->eng);
    bkm_free(net->input);
    bkm_free(net->labels);
    bkm_free(net);
}
