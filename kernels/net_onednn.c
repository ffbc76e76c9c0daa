/* SPDX-License-Identifier: MIT */
/* The oneDNN engine of the network executor: forward_training primitives whose outputs stay in
 * oneDNN's blocked layouts, log-softmax + cross-entropy, the backward primitives, and the SGD
 * update (bkm_kern_sgd_step, the loop the native engine uses), over any checked table. Every step
 * is tagged with its layer and direction for the per-layer times. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "net_int.h"
#include "onednn_int.h"

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
    int layer;                /* the layer and direction its time belongs to */
    bkm_net_dir_t dir;
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

/* A trainable tensor: the user copy (in the executor's flat arrays), the fwd-layout value and its
 * gradient in that layout. */
typedef struct onet_param {
    float *user;              /* user layout (OIHW / OI / O) in ex->params, borrowed */
    size_t n_user;
    dnnl_memory_t user_mem;
    onet_tensor_t w;          /* layout chosen by the forward primitive */
    onet_tensor_t dw;         /* same layout as w (reordered from the bwd-weights layout if needed) */
    size_t n_int;             /* floats in w / dw (including any blocking padding) */
} onet_param_t;

typedef struct odn {
    bkm_net_exec_t *ex;
    bkm_net_desc_t d;
    bkm_net_shape_t shape[BKM_NET_MAX_LAYERS];   /* output of each layer */
    int tag_layer;            /* layer and direction of the steps being built */
    bkm_net_dir_t tag_dir;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_attr_t attr;

    dnnl_memory_t mems[ONET_MAX_MEMS];
    int n_mems;
    dnnl_primitive_t prims[ONET_MAX_PRIMS];
    int n_prims;

    onet_steps_t prep, fwd, bwd, upd, fin;

    onet_param_t wei[BKM_NET_MAX_LAYERS], bias[BKM_NET_MAX_LAYERS];
    int has_param[BKM_NET_MAX_LAYERS];

    onet_tensor_t logits;     /* last FC output, plain nc */
    onet_tensor_t logp;       /* log-softmax of the logits, plain nc */
    onet_tensor_t dlogits;    /* gradient of the loss wrt the logits, plain nc */
    char impl[512];
} odn_t;

static int net_mem(odn_t *net, onet_tensor_t *t, const dnnl_memory_desc_t *md, void *handle, bkm_err_t *err)
{
    int rc;
    if (net->n_mems == ONET_MAX_MEMS)
        return bkm_err_set(err, BKM_ENOMEM, "net: more than %d oneDNN memories", ONET_MAX_MEMS);
    t->md = *md;
    if ((rc = bkm__odnn_mem(&t->mem, md, net->eng, handle, err)) < 0)
        return rc;
    net->mems[net->n_mems++] = t->mem;
    return BKM_OK;
}

static int net_keep_prim(odn_t *net, dnnl_primitive_t p, bkm_err_t *err)
{
    if (net->n_prims == ONET_MAX_PRIMS) {
        dnnl_primitive_destroy(p);
        return bkm_err_set(err, BKM_ENOMEM, "net: more than %d oneDNN primitives", ONET_MAX_PRIMS);
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
static void net_note_impl(odn_t *net, const_dnnl_primitive_desc_t pd)
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
static int net_prim(odn_t *net, dnnl_primitive_desc_t pd, onet_steps_t *ss, onet_step_t **step,
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
        rc = bkm_err_set(err, BKM_ENOMEM, "net: more than %d steps in one phase", ONET_MAX_STEPS);
        goto out;
    }
    (*step)->layer = net->tag_layer;
    (*step)->dir = net->tag_dir;
    step_arg(*step, DNNL_ARG_SCRATCHPAD, scratch.mem);
out:
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Make @p have available in layout @p want: returns @p have itself when the layouts match, else a
 * new tensor filled by a reorder step appended to @p ss. */
static int net_convert(odn_t *net, const onet_tensor_t *have, const dnnl_memory_desc_t *want,
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
/* @p user / @p grad: the tensor's place in the executor's flat parameter / gradient arrays. */
static int net_param(odn_t *net, onet_param_t *pr, int nd, const dnnl_dim_t *dims,
                     const dnnl_memory_desc_t *fwd_md, float *user, float *grad, bkm_err_t *err)
{
    int rc;
    dnnl_memory_desc_t umd;
    onet_tensor_t ut, gt;
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)dims[i];
    if ((rc = bkm__odnn_plain_md(&umd, nd, dims, err)) < 0)
        return rc;
    pr->user = user;
    pr->n_user = n;
    if ((rc = net_mem(net, &ut, &umd, user, err)) < 0 || (rc = net_mem(net, &gt, &umd, grad, err)) < 0)
        return rc;
    pr->user_mem = ut.mem;
    if ((rc = net_mem(net, &pr->w, fwd_md, NULL, err)) < 0 || (rc = net_mem(net, &pr->dw, fwd_md, NULL, err)) < 0)
        return rc;
    pr->n_int = dnnl_memory_desc_get_size(fwd_md) / sizeof(float);
    /* prepare: user -> w; finish: w -> user, dw -> grad (through reorders even when the layouts match) */
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
        BKM_ODNN_TRY(dnnl_reorder_primitive_desc_create(&pd, fwd_md, net->eng, &umd, net->eng, net->attr));
        if ((rc = net_prim(net, pd, &net->fin, &s, err)) < 0)
            return rc;
        step_arg(s, DNNL_ARG_FROM, pr->dw.mem);
        step_arg(s, DNNL_ARG_TO, gt.mem);
    }
out:
    return rc;
}

/* The gradient a backward primitive writes in layout @p bw_md, brought into the fwd layout of
 * @p pr before the update. Returns the tensor the primitive must write. */
static int net_grad_target(odn_t *net, onet_param_t *pr, const dnnl_memory_desc_t *bw_md,
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
        s->dir = BKM_NET_UPD;
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
    dnnl_dim_t dims[5];
} onet_cur_t;

/* Per-layer record kept from the forward build for the backward build. */
typedef struct onet_rec {
    onet_tensor_t src;            /* forward input as the forward primitive read it */
    onet_tensor_t dst;            /* forward output */
    dnnl_primitive_desc_t fwd_pd; /* hint for backward (owned until the backward is built) */
    onet_tensor_t ws;             /* pooling workspace */
    int skip;                     /* dropout: identity */
    int unflatten;                /* FC over a 4-D input: its 2-D input gradient is viewed back as 4-D */
    dnnl_dim_t in_dims[5];
    int in_nd;
} onet_rec_t;

/* Window geometry of layer @p i (2-D or 3-D): kernel, strides, left and right padding per spatial
 * axis (oneDNN's right padding makes the output size exact); returns the number of axes. */
static int window_of(const odn_t *net, int i, dnnl_dim_t *k, dnnl_dim_t *st, dnnl_dim_t *pl, dnnl_dim_t *pr)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->ex->net.li[i];
    int sp = l->kind == BKM_NET_CONV3D || l->kind == BKM_NET_MAXPOOL3D ? 3 : 2;
    const int64_t in[3] = {li->in.d, li->in.h, li->in.w}, out[3] = {li->out.d, li->out.h, li->out.w};
    for (int j = 0; j < sp; j++) {
        int a = j + 3 - sp;
        k[j] = l->k;
        st[j] = l->s;
        pl[j] = l->p;
        pr[j] = (out[a] - 1) * l->s + l->k - in[a] - l->p;
    }
    return sp;
}

/* View tensor @p t (plain, contiguous) with descriptor @p md (same bytes, other dims). */
static int net_view(odn_t *net, const onet_tensor_t *t, const dnnl_memory_desc_t *md, onet_tensor_t *view,
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
static int flatten_input(odn_t *net, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_memory_desc_t plain4, flat;
    dnnl_dim_t fdims[2] = {cur->dims[0], 1};
    onet_tensor_t t4;
    for (int j = 1; j < cur->nd; j++)
        fdims[1] *= cur->dims[j];
    if ((rc = bkm__odnn_plain_md(&plain4, cur->nd, cur->dims, err)) < 0 ||
        (rc = net_convert(net, &cur->t, &plain4, cur->is_input ? &net->prep : &net->fwd, &t4, err)) < 0)
        return rc;
    BKM_ODNN_TRY(dnnl_memory_desc_reshape(&flat, &plain4, 2, fdims));
    if ((rc = net_view(net, &t4, &flat, &cur->t, err)) < 0)
        return rc;
    rec->unflatten = 1;
    rec->in_nd = cur->nd;
    memcpy(rec->in_dims, cur->dims, sizeof rec->in_dims);
    cur->nd = 2;
    cur->dims[1] = fdims[1];
out:
    return rc;
}

static int build_conv_or_fc(odn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    const bkm_net_layer_info_t *li = &net->ex->net.li[i];
    int rc = BKM_OK, is_conv = l->kind == BKM_NET_CONV || l->kind == BKM_NET_CONV3D;
    dnnl_memory_desc_t src_any, wei_any, bias_any, dst_md;
    dnnl_dim_t wdims[5], bdims[1] = {l->out}, ddims[5];
    int wnd;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    onet_tensor_t src;

    if (is_conv) {
        dnnl_dim_t kk[3], strides[3], pad[3], pr[3];
        int sp = window_of(net, i, kk, strides, pad, pr);
        const int64_t out[3] = {net->shape[i].d, net->shape[i].h, net->shape[i].w};
        dnnl_convolution_desc_t cd;
        wnd = 2 + sp;
        wdims[0] = l->out;
        wdims[1] = cur->dims[1];
        ddims[0] = net->d.mb;
        ddims[1] = l->out;
        for (int j = 0; j < sp; j++) {
            wdims[2 + j] = l->k;
            ddims[2 + j] = out[j + 3 - sp];
        }
        if ((rc = any_md(&src_any, cur->nd, cur->dims, err)) < 0 || (rc = any_md(&wei_any, wnd, wdims, err)) < 0 ||
            (rc = any_md(&bias_any, 1, bdims, err)) < 0 || (rc = any_md(&dst_md, wnd, ddims, err)) < 0)
            return rc;
        BKM_ODNN_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &src_any,
                                                        &wei_any, &bias_any, &dst_md, strides, pad, pr));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&rec->fwd_pd, &cd, net->attr, net->eng, NULL));
    } else {
        dnnl_inner_product_desc_t ipd;
        /* A 4-D input (pool5's blocked output) is reordered to plain NCHW and viewed as 2-D
         * [mb][C*H*W]: a small activation reorder per step instead of reorders of the 37.7 M
         * fc6 weights between the fwd / bwd-data / bwd-weights layouts oneDNN picks for 4-D. */
        if (cur->nd >= 4 && (rc = flatten_input(net, cur, rec, err)) < 0)
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
    if ((rc = net_param(net, &net->wei[i], wnd, wdims,
                        dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_weights_md, 0),
                        net->ex->params + li->wei_off, net->ex->grads + li->wei_off, err)) < 0 ||
        (rc = net_param(net, &net->bias[i], 1, bdims,
                        dnnl_primitive_desc_query_md(rec->fwd_pd, dnnl_query_weights_md, 1),
                        net->ex->params + li->bias_off, net->ex->grads + li->bias_off, err)) < 0)
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
    cur->nd = is_conv ? wnd : 2;
    memcpy(cur->dims, ddims, sizeof ddims);
out:
    return rc;
}

static int build_relu(odn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    if (cur->is_input)
        return bkm_err_set(err, BKM_ENOTSUP, "net layer %d (%s): ReLU directly on the input is not supported", i,
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

static int build_pool(odn_t *net, int i, onet_cur_t *cur, onet_rec_t *rec, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    int rc = BKM_OK;
    dnnl_pooling_desc_t pdsc;
    dnnl_memory_desc_t dst_any;
    dnnl_dim_t k[3], st[3], pl[3], pr[3];
    int sp = window_of(net, i, k, st, pl, pr);
    dnnl_dim_t ddims[5] = {net->d.mb, cur->dims[1], 0, 0, 0};
    const int64_t out[3] = {net->shape[i].d, net->shape[i].h, net->shape[i].w};
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *ws_md;
    onet_step_t *s;
    if (cur->is_input)
        return bkm_err_set(err, BKM_ENOTSUP, "net layer %d (%s): pooling directly on the input is not supported", i,
                           l->name);
    for (int j = 0; j < sp; j++)
        ddims[2 + j] = out[j + 3 - sp];
    if ((rc = any_md(&dst_any, 2 + sp, ddims, err)) < 0)
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
 * its input (unset when no parameter layer precedes it: nothing needs it). */
/* The backward of ReLU layer (record @p rec): the gradient in the layout it arrives in (*g, in
 * place), the forward output converted if it differs. */
static int bwd_relu(odn_t *net, onet_rec_t *rec, onet_tensor_t *g, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    dnnl_eltwise_desc_t ed;
    onet_tensor_t dst;
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
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* The backward of max pooling layer @p i (record @p rec): *g becomes the gradient of its input. */
static int bwd_pool(odn_t *net, int i, onet_rec_t *rec, onet_tensor_t *g, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    onet_tensor_t gd, gsrc;
    dnnl_pooling_desc_t pdsc;
    dnnl_dim_t k[3], st[3], pl[3], pr[3];
    window_of(net, i, k, st, pl, pr);
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
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* The backward of conv or FC layer @p i (record @p rec): backward weights, then, unless @p first
 * (nothing needs its input's gradient), backward data, *g becoming the gradient of its input. */
static int bwd_param(odn_t *net, int i, onet_rec_t *rec, onet_tensor_t *g, int first, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &net->d.layer[i];
    int rc = BKM_OK;
    dnnl_primitive_desc_t pd = NULL;
    onet_step_t *s;
    onet_tensor_t gd, gsrc;
    int is_conv = l->kind == BKM_NET_CONV || l->kind == BKM_NET_CONV3D;
    dnnl_memory_desc_t src_any, wei_any, bias_any, dst_any;
    const dnnl_memory_desc_t *wmd = &net->wei[i].w.md;
    onet_tensor_t src, dw, db, w;
    dnnl_dim_t kk[3], strides[3] = {0}, pad[3] = {0}, pr[3] = {0};
    if (is_conv)
        window_of(net, i, kk, strides, pad, pr);
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
    net->tag_dir = BKM_NET_BWD_D;

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
        if ((rc = bkm__odnn_plain_md(&plain4, rec->in_nd, rec->in_dims, err)) < 0 ||
            (rc = net_view(net, &gsrc, &plain4, g, err)) < 0)
            goto out;
    }
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int build_bwd(odn_t *net, int i, onet_rec_t *rec, onet_tensor_t *g, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &net->d.layer[i];

    net->tag_layer = i;
    net->tag_dir = BKM_NET_BWD_D;
    if (rec->skip)
        return BKM_OK;
    if (l->kind == BKM_NET_RELU)
        return bwd_relu(net, rec, g, err);
    if (l->kind == BKM_NET_MAXPOOL || l->kind == BKM_NET_MAXPOOL3D)
        return bwd_pool(net, i, rec, g, err);
    /* CONV or FC: backward weights, then backward data (skipped when nothing needs it). */
    net->tag_dir = BKM_NET_BWD_W;
    return bwd_param(net, i, rec, g, !net->ex->net.li[i].need_bwd_d, err);
}

static void odn_destroy(bkm_net_exec_t *ex)
{
    odn_t *net = ex->st;
    if (!net)
        return;
    for (int i = 0; i < net->n_prims; i++)
        dnnl_primitive_destroy(net->prims[i]);
    for (int i = 0; i < net->n_mems; i++)
        dnnl_memory_destroy(net->mems[i]);
    if (net->attr)
        dnnl_primitive_attr_destroy(net->attr);
    dnnl_stream_destroy(net->strm);
    dnnl_engine_destroy(net->eng);
    bkm_free(net);
    ex->st = NULL;
}

static int odn_create(bkm_net_exec_t *ex, const bkm_kern_params_t *kp, bkm_err_t *err)
{
    int rc = BKM_OK;
    odn_t *net = NULL;
    onet_rec_t rec[BKM_NET_MAX_LAYERS];
    onet_cur_t cur;
    dnnl_primitive_desc_t pd = NULL;
    const bkm_net_desc_t *d = &ex->net.d;
    int loss_i = d->n_layers - 1;

    (void)kp; /* oneDNN picks its own implementations */
    memset(rec, 0, sizeof rec);
    if (!(net = bkm_calloc(1, sizeof *net)))
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    ex->st = net;
    net->ex = ex;
    net->d = *d;
    for (int i = 0; i < d->n_layers; i++)
        net->shape[i] = ex->net.li[i].out;
    BKM_ODNN_TRY(dnnl_engine_create(&net->eng, dnnl_cpu, 0));
    BKM_ODNN_TRY(dnnl_stream_create(&net->strm, net->eng, dnnl_stream_default_flags));
    if ((rc = bkm__odnn_attr(&net->attr, err)) < 0)
        goto out;

    /* forward */
    memset(&cur, 0, sizeof cur);
    cur.nd = d->d ? 5 : 4;
    cur.dims[0] = d->mb;
    cur.dims[1] = d->c;
    if (d->d)
        cur.dims[2] = d->d;
    cur.dims[cur.nd - 2] = d->h;
    cur.dims[cur.nd - 1] = d->w;
    cur.is_input = 1;
    {
        dnnl_memory_desc_t umd;
        if ((rc = bkm__odnn_plain_md(&umd, cur.nd, cur.dims, err)) < 0 ||
            (rc = net_mem(net, &cur.t, &umd, ex->input, err)) < 0)
            goto out;
    }
    for (int i = 0; i < loss_i; i++) {
        net->tag_layer = i;
        net->tag_dir = BKM_NET_FWD;
        switch (d->layer[i].kind) {
        case BKM_NET_CONV:
        case BKM_NET_CONV3D:
        case BKM_NET_FC:
            rc = build_conv_or_fc(net, i, &cur, &rec[i], err);
            break;
        case BKM_NET_RELU:
            rc = build_relu(net, i, &cur, &rec[i], err);
            break;
        case BKM_NET_MAXPOOL:
        case BKM_NET_MAXPOOL3D:
            rc = build_pool(net, i, &cur, &rec[i], err);
            break;
        default: /* dropout in eval mode */
            rec[i].skip = 1;
            rc = BKM_OK;
            break;
        }
        if (rc < 0) {
            bkm_err_prefix(err, "net layer %d (%s)", i, d->layer[i].name);
            goto out;
        }
    }

    /* loss: log-softmax over the plain logits (the FC before the loss writes them plain); the
     * cross-entropy loop runs in step() */
    net->logits = cur.t;
    net->tag_layer = loss_i;
    net->tag_dir = BKM_NET_FWD;
    {
        dnnl_logsoftmax_desc_t ld;
        onet_step_t *s;
        dnnl_dim_t nc[2] = {d->mb, ex->net.classes};
        dnnl_memory_desc_t plain;
        if ((rc = bkm__odnn_plain_md(&plain, 2, nc, err)) < 0)
            goto out;
        if (!dnnl_memory_desc_equal(&plain, &net->logits.md)) {
            rc = bkm_err_set(err, BKM_EDEP, "net: oneDNN did not produce plain logits");
            goto out;
        }
        /* the class axis, or the batch axis for BKM_NET_LOSS_BATCH */
        BKM_ODNN_TRY(dnnl_logsoftmax_forward_desc_init(&ld, dnnl_forward_inference, &plain,
                                                       d->layer[loss_i].kind == BKM_NET_LOSS_BATCH ? 0 : 1));
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
        for (int i = loss_i - 1; i >= 0 && ex->net.li[i].need_bwd; i--) {
            if ((rc = build_bwd(net, i, &rec[i], &g, err)) < 0) {
                bkm_err_prefix(err, "net layer %d (%s) backward", i, d->layer[i].name);
                goto out;
            }
        }
    }
    snprintf(ex->impl, sizeof ex->impl, "%s", net->impl);
out:
    for (int i = 0; i < BKM_NET_MAX_LAYERS; i++)
        if (rec[i].fwd_pd)
            dnnl_primitive_desc_destroy(rec[i].fwd_pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Run the steps of @p ss from index @p from; with timing on, each step's time goes to its layer
 * and direction (CPU primitives execute synchronously on the calling thread's OpenMP team). */
static int run_steps(odn_t *net, const onet_steps_t *ss, int from, uint64_t *t, bkm_err_t *err)
{
    int rc = BKM_OK;
    for (int i = from; i < ss->n; i++) {
        BKM_ODNN_TRY(dnnl_primitive_execute(ss->s[i].prim, net->strm, ss->s[i].n_args, ss->s[i].args));
        if (t && net->ex->timing) {
            BKM_ODNN_TRY(dnnl_stream_wait(net->strm));
            bkm__net_lap(net->ex, ss->s[i].layer, ss->s[i].dir, t);
        }
    }
    BKM_ODNN_TRY(dnnl_stream_wait(net->strm));
out:
    return rc;
}

static int odn_prepare(bkm_net_exec_t *ex, bkm_err_t *err)
{
    return run_steps(ex->st, &((odn_t *)ex->st)->prep, 0, NULL, err);
}

static int odn_finish(bkm_net_exec_t *ex, bkm_err_t *err)
{
    odn_t *net = ex->st;
    int rc;
    /* without an update step the gradients are still in the backward primitives' layouts */
    if (net->d.lr == 0.0f && (rc = run_steps(net, &net->upd, 0, NULL, err)) < 0)
        return rc;
    return run_steps(net, &net->fin, 0, NULL, err);
}

/* Mean cross-entropy from log-probabilities, and d loss / d logits = (p - onehot) / mb. With
 * @p batch_axis (log-softmax over the batch): (cnt_j * p - onehot) / mb, cnt_j = samples labelled j. */
static double xent(int64_t mb, int64_t nc, const float *logp, const int32_t *labels, float *dlogits, int batch_axis)
{
    double loss = 0.0;
    float inv = 1.0f / (float)mb;
    if (batch_axis) {
        for (int64_t j = 0; j < nc; j++) {
            int64_t cnt = 0;
            for (int64_t i = 0; i < mb; i++)
                cnt += labels[i] == j;
            for (int64_t i = 0; i < mb; i++)
                dlogits[i * nc + j] = ((float)cnt * expf(logp[i * nc + j]) - (labels[i] == j ? 1.0f : 0.0f)) * inv;
        }
        for (int64_t i = 0; i < mb; i++)
            loss -= (double)logp[i * nc + labels[i]];
        return loss / (double)mb;
    }
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

static int odn_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err)
{
    odn_t *net = ex->st;
    int rc = BKM_OK, loss_i = net->d.n_layers - 1;
    uint64_t t0, t1, t2, t3, t;
    void *logp = NULL, *dl = NULL;
    onet_step_t *ls = &net->bwd.s[0];
    double l;

    t0 = t = bkm_now_ns();
    if ((rc = run_steps(net, &net->fwd, 0, &t, err)) < 0)
        goto out;
    t1 = t = bkm_now_ns();
    BKM_ODNN_TRY(dnnl_primitive_execute(ls->prim, net->strm, ls->n_args, ls->args));
    BKM_ODNN_TRY(dnnl_stream_wait(net->strm));
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(net->logp.mem, &logp));
    BKM_ODNN_TRY(dnnl_memory_get_data_handle(net->dlogits.mem, &dl));
    l = xent(net->d.mb, ex->net.classes, logp, ex->labels, dl, net->d.layer[loss_i].kind == BKM_NET_LOSS_BATCH);
    bkm__net_lap(ex, loss_i, BKM_NET_FWD, &t);
    if ((rc = run_steps(net, &net->bwd, 1, &t, err)) < 0)
        goto out;
    t2 = t = bkm_now_ns();
    if (net->d.lr > 0.0f && (rc = run_steps(net, &net->upd, 0, &t, err)) < 0)
        goto out;
    for (int i = 0; i < loss_i && net->d.lr > 0.0f; i++) {
        void *w, *dw;
        if (!net->has_param[i])
            continue;
        for (int b = 0; b < 2; b++) {
            onet_param_t *p = b ? &net->bias[i] : &net->wei[i];
            BKM_ODNN_TRY(dnnl_memory_get_data_handle(p->w.mem, &w));
            BKM_ODNN_TRY(dnnl_memory_get_data_handle(p->dw.mem, &dw));
            bkm_kern_sgd_step(p->n_int, w, dw, NULL, net->d.lr, 0.0f, 0.0f);
        }
        bkm__net_lap(ex, i, BKM_NET_UPD, &t);
    }
    t3 = bkm_now_ns();
    st->loss = l;
    st->fwd_ms = (double)(t1 - t0) * 1e-6;
    st->bwd_ms = (double)(t2 - t1) * 1e-6;
    st->update_ms = (double)(t3 - t2) * 1e-6;
out:
    return rc;
}

const bkm__net_vtbl_t bkm__net_onednn_vtbl = {odn_create, odn_prepare, odn_step, odn_finish, odn_destroy};
