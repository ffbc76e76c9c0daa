/* SPDX-License-Identifier: MIT */
/* Sequence networks (desc t >= 1): a time-major sequence [T][mb][C] through LSTM stacks and
 * dropout (eval mode: the identity) into the L1 loss, on any engine. The body (activation and
 * gradient buffers, the loss, the phases and per-layer times, the SGD update) is one; each LSTM
 * layer is the LSTM stack the table of backends lists for the executor's backend: native
 * (lstm.c, fused gates), oneDNN (the vanilla LSTM primitive, lstm_onednn.c) or the naive reference
 * (lstm_ref.c, which allocates its own scratch per call: the one exception to "a step never
 * allocates", oracle only).
 * Parameters and gradients are the executor's flat arrays, each LSTM layer's slice in the
 * kernels' own layout (Wx, Wh, b per stacked layer): no reorder at prepare or finish. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "net_int.h"

typedef struct seq_layer {
    bkm_lstm_desc_t ld;
    bkm__lstm_t ls;    /* the backend's LSTM stack (ls.vt NULL: none) */
    float *out;        /* owned output (LSTM) */
    float *gin;        /* owned gradient wrt the input (LSTM with need_bwd_d) */
    float *in, *y;     /* input and output (borrowed; dropout passes its input on) */
} seq_layer_t;

typedef struct seq {
    seq_layer_t l[BKM_NET_MAX_LAYERS];
    float *gloss;      /* d loss / d loss input */
} seq_t;

static void seq_destroy(bkm_net_exec_t *ex)
{
    seq_t *c = ex->st;
    if (!c)
        return;
    for (int i = 0; i < BKM_NET_MAX_LAYERS; i++) {
        if (c->l[i].ls.vt != NULL)
            c->l[i].ls.vt->destroy(&c->l[i].ls);
        bkm_free(c->l[i].out);
        bkm_free(c->l[i].gin);
    }
    bkm_free(c->gloss);
    bkm_free(c);
    ex->st = NULL;
}

static int seq_create(bkm_net_exec_t *ex, const bkm_kern_params_t *kp, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    seq_t *c = bkm_calloc(1, sizeof *c);
    int rc = BKM_OK, loss_i = net->d.n_layers - 1;
    if (!c)
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    ex->st = c;
    for (int i = 0; i < loss_i; i++) {
        const bkm_net_layer_t *nl = &net->d.layer[i];
        const bkm_net_layer_info_t *li = &net->li[i];
        seq_layer_t *l = &c->l[i];
        size_t n_in = (size_t)(net->d.mb * li->in.c * li->in.h), n_out = (size_t)(net->d.mb * li->out.c * li->out.h);
        l->in = i ? c->l[i - 1].y : ex->input;
        l->y = l->in;
        if (nl->kind == BKM_NET_DROPOUT)
            continue;
        if (nl->kind != BKM_NET_LSTM) /* bkm_net_init lets nothing else onto a sequence */
            return bkm_err_set(err, BKM_ENOTSUP, "net layer %d (%s): a %s layer in a sequence network", i, nl->name,
                               bkm_net_kind_name(nl->kind));
        if ((rc = bkm_kern_lstm_desc_init(&l->ld, net->d.mb, li->in.h, li->in.c, nl->out, nl->k, err)) < 0)
            return bkm_err_prefix(err, "net layer %d (%s)", i, nl->name);
        if ((rc = ex->be->lstm(&l->ls, &l->ld, !net->d.inference, kp, err)) < 0)
            return bkm_err_prefix(err, "net layer %d (%s)", i, nl->name);
        bkm__net_impl_add(ex->impl, sizeof ex->impl, l->ls.vt->impl(&l->ls));
        if (!(l->out = bkm__net_zalloc(n_out)) || (li->need_bwd_d && !(l->gin = bkm__net_zalloc(n_in))))
            return bkm_err_set(err, BKM_ENOMEM, "net layer %d (%s): cannot allocate %zu activations", i, nl->name,
                               n_out + n_in);
        l->y = l->out;
    }
    if (!(c->gloss = bkm__net_zalloc(ex->n_target)))
        return bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate %zu loss gradients", ex->n_target);
    return BKM_OK;
}

/* L1 loss (mean |y - target|, double sum) and its gradient sign(y - target) / n: LSTM.py's L1Loss. */
static double l1_loss(const float *y, const float *target, float *g, size_t n)
{
    double sum = 0.0;
    const float inv = 1.0f / (float)n;
    for (size_t i = 0; i < n; i++) {
        float dlt = y[i] - target[i];
        sum += fabsf(dlt);
        g[i] = dlt > 0.0f ? inv : dlt < 0.0f ? -inv : 0.0f;
    }
    return sum / (double)n;
}

static int seq_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err)
{
    const bkm_net_t *net = &ex->net;
    seq_t *c = ex->st;
    int nl = net->d.n_layers, loss_i = nl - 1;
    const float *g;
    double loss;
    uint64_t t0, t1, t2, t3, t;
    int rc = BKM_OK;

    t0 = t = bkm_now_ns();
    for (int i = 0; i < loss_i; i++) {
        seq_layer_t *l = &c->l[i];
        const float *w = ex->params + net->li[i].wei_off, *h0 = ex->state[i];
        const float *c0 = h0 ? h0 + ex->n_state[i] / 2 : NULL;
        if (net->d.layer[i].kind != BKM_NET_LSTM)
            continue;
        if ((rc = l->ls.vt->fwd(&l->ls, l->in, h0, c0, w, l->out, NULL, NULL, err)) < 0)
            return bkm_err_prefix(err, "net layer %d (%s)", i, net->d.layer[i].name);
        bkm__net_lap(ex, i, BKM_NET_FWD, &t);
    }
    t1 = t = bkm_now_ns();
    loss = l1_loss(loss_i ? c->l[loss_i - 1].y : ex->input, ex->target, c->gloss, ex->n_target);
    bkm__net_lap(ex, loss_i, BKM_NET_FWD, &t);
    g = c->gloss;
    for (int i = loss_i - 1; i >= 0 && !net->d.inference && net->li[i].need_bwd; i--) {
        seq_layer_t *l = &c->l[i];
        const bkm_net_layer_info_t *li = &net->li[i];
        const float *w = ex->params + li->wei_off, *h0 = ex->state[i];
        const float *c0 = h0 ? h0 + ex->n_state[i] / 2 : NULL;
        float *dw = ex->grads + li->wei_off;
        if (net->d.layer[i].kind != BKM_NET_LSTM)
            continue; /* dropout (eval): the gradient passes through */
        if ((rc = l->ls.vt->bwd(&l->ls, l->in, h0, c0, w, g, NULL, NULL, l->gin, NULL, NULL, dw, err)) < 0)
            return bkm_err_prefix(err, "net layer %d (%s) backward", i, net->d.layer[i].name);
        bkm__net_lap(ex, i, BKM_NET_BWD_D, &t);
        g = l->gin;
    }
    t2 = t = bkm_now_ns();
    if (!net->d.inference)
        bkm__net_sgd(ex, &t);
    t3 = bkm_now_ns();
    *st = (bkm_net_step_t){loss, (double)(t1 - t0) * 1e-6, (double)(t2 - t1) * 1e-6, (double)(t3 - t2) * 1e-6};
    return BKM_OK;
}

/* Every engine computes on the user-layout input and parameters: nothing to bring in or out. */
static int seq_nothing(bkm_net_exec_t *ex, bkm_err_t *err)
{
    (void)ex;
    (void)err;
    return BKM_OK;
}

const bkm__net_vtbl_t bkm__net_seq_vtbl = {seq_create, seq_nothing, seq_step, seq_nothing, seq_destroy};
