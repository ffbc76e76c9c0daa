/* SPDX-License-Identifier: MIT */
/* Networks as data: the table (AlexNet's among them), its one-time check and derivations (shapes,
 * parameter offsets, FLOPs per layer and direction), and the memory an executor of it needs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "net_int.h"

const char *bkm_net_kind_name(bkm_net_kind_t kind)
{
    switch (kind) {
    case BKM_NET_CONV: return "conv";
    case BKM_NET_RELU: return "relu";
    case BKM_NET_MAXPOOL: return "maxpool";
    case BKM_NET_DROPOUT: return "dropout";
    case BKM_NET_FC: return "fc";
    case BKM_NET_LOSS: return "loss";
    case BKM_NET_CONV3D: return "conv3d";
    case BKM_NET_MAXPOOL3D: return "maxpool3d";
    case BKM_NET_LOSS_BATCH: return "loss_batch";
    case BKM_NET_LSTM: return "lstm";
    case BKM_NET_LOSS_L1: return "loss_l1";
    case BKM_NET_DROPOUT2D: return "dropout2d";
    }
    return "?";
}

int bkm_net_kind_is_loss(bkm_net_kind_t kind)
{
    return kind == BKM_NET_LOSS || kind == BKM_NET_LOSS_BATCH || kind == BKM_NET_LOSS_L1;
}

const char *bkm_net_dir_name(bkm_net_dir_t dir)
{
    static const char *const names[BKM_NET_NDIR] = {"fwd", "bwd_d", "bwd_w", "update"};
    return (unsigned)dir < BKM_NET_NDIR ? names[dir] : "?";
}

bkm_net_layer_t *bkm_net_desc_add(bkm_net_desc_t *d, bkm_net_kind_t kind, const char *name, int64_t out, int64_t k,
                                  int64_t s, int64_t p)
{
    bkm_net_layer_t *l;
    if (d->n_layers < 0 || d->n_layers >= BKM_NET_MAX_LAYERS)
        return NULL;
    l = &d->layer[d->n_layers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->out = out;
    l->k = k;
    l->s = s;
    l->p = p;
    snprintf(l->name, sizeof l->name, "%s", name);
    return l;
}

void bkm_net_desc_alexnet(bkm_net_desc_t *d, int64_t mb)
{
    memset(d, 0, sizeof *d);
    d->mb = mb;
    d->c = 3;
    d->h = d->w = 224;
    d->lr = 0.01f;
    /* torchvision.models.alexnet: features, (adaptive avgpool 6x6 = identity at 224), classifier */
    bkm_net_desc_add(d, BKM_NET_CONV, "conv1", 64, 11, 4, 2);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool1", 0, 3, 2, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "conv2", 192, 5, 1, 2);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu2", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool2", 0, 3, 2, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "conv3", 384, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "conv4", 256, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu4", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "conv5", 256, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu5", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool5", 0, 3, 2, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "drop6", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc6", 4096, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu6", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "drop7", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc7", 4096, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu7", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc8", 1000, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

void bkm_net_desc_conv3d_seed(bkm_net_desc_t *d, int64_t mb)
{
    memset(d, 0, sizeof *d);
    d->mb = mb;
    d->c = 1;
    d->d = 35;
    d->h = 35;
    d->w = 20;
    d->lr = 0.0f; /* berkely.py times forward + loss + backward: no optimizer step */
    bkm_net_desc_add(d, BKM_NET_CONV3D, "conv3d_1", 64, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_CONV3D, "conv3d_2", 64, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL3D, "max_pool3d_1", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_CONV3D, "conv3d_3", 128, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_CONV3D, "conv3d_4", 128, 3, 1, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL3D, "max_pool3d_2", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc1", 512, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc2", 512, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS_BATCH, "nll_loss", 0, 0, 0, 0);
}

void bkm_net_desc_lstm_seed(bkm_net_desc_t *d, int64_t n, int64_t t, int64_t i, int64_t h, int64_t layers,
                            int inference)
{
    memset(d, 0, sizeof *d);
    d->mb = n;
    d->c = i;
    d->h = d->w = 1;
    d->t = t;
    d->lr = 0.0f;      /* LSTM.py times forward (+ loss + backward): no optimizer step */
    d->grad_input = 1; /* the kernels' training FLOPs (3 x forward) count the input's data gradient */
    d->inference = inference != 0;
    bkm_net_desc_add(d, BKM_NET_LSTM, "lstm", h, layers, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS_L1, "l1_loss", 0, 0, 0, 0);
}

void bkm_net_desc_mnist_cnn(bkm_net_desc_t *d, int64_t mb, float dropout)
{
    memset(d, 0, sizeof *d);
    d->mb = mb, d->c = 1, d->h = 28, d->w = 28;
    bkm_net_desc_add(d, BKM_NET_CONV, "conv1", 10, 5, 1, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool1", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_CONV, "conv2", 20, 5, 1, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT2D, "drop2d", 0, 0, 0, 0)->drop = dropout;
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool2", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu2", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc1", 50, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu3", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_DROPOUT, "drop", 0, 0, 0, 0)->drop = dropout;
    bkm_net_desc_add(d, BKM_NET_FC, "fc2", 10, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "nll", 0, 0, 0, 0);
}

void bkm_net_desc_mnist_mlp(bkm_net_desc_t *d, int64_t mb)
{
    memset(d, 0, sizeof *d);
    d->mb = mb, d->c = 1, d->h = 28, d->w = 28;
    bkm_net_desc_add(d, BKM_NET_FC, "fc1", 256, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc2", 10, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "nll", 0, 0, 0, 0);
}

/* Round a float count up to 16 (64 bytes), so every tensor in the flat arrays is 64-byte aligned. */
static size_t align16(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

/* Products of positive int64 sizes that would overflow are rejected by this bound (2^46 floats). */
#define NET_MAX_ELEMS ((int64_t)1 << 46)

/* One spatial axis of a window layer: the output size, or BKM_EINVAL naming the layer. */
static int window_axis(const bkm_net_layer_t *l, int i, const char *axis, int64_t in, int64_t *out, bkm_err_t *err)
{
    if (in + 2 * l->p < l->k)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): window k=%lld is larger than the input %s=%lld padded "
                           "by %lld", i, l->name, (long long)l->k, axis, (long long)in, (long long)l->p);
    *out = (in + 2 * l->p - l->k) / l->s + 1;
    return BKM_OK;
}

/* The input of @p d as the shape the first layer gets (*s), or BKM_EINVAL naming the value. */
static int net_input(const bkm_net_desc_t *d, bkm_net_shape_t *s, bkm_err_t *err)
{
    int64_t c = d->c, dd = d->d ? d->d : 1, h = d->h, w = d->w;
    int nsp = d->d ? 3 : 2;
    if (d->mb <= 0 || c <= 0 || h <= 0 || w <= 0 || d->d < 0)
        return bkm_err_set(err, BKM_EINVAL, "net: input mb=%lld c=%lld d=%lld h=%lld w=%lld: every size must be "
                           "positive (d = 0 for a 2-D input)", (long long)d->mb, (long long)c, (long long)d->d,
                           (long long)h, (long long)w);
    if (d->t < 0 || (d->t > 0 && (d->d != 0 || h != 1 || w != 1)))
        return bkm_err_set(err, BKM_EINVAL, "net: input t=%lld: a sequence input has t >= 1 time steps with d = 0 and "
                           "h = w = 1 (t = 0: an image input)", (long long)d->t);
    if (d->t > 0) { /* a sequence: c features x t steps, time-major */
        h = d->t;
        nsp = 1;
    }
    if (d->mb > NET_MAX_ELEMS / c / dd / h / w)
        return bkm_err_set(err, BKM_EINVAL, "net: input %lldx%lldx%lldx%lldx%lld is too large", (long long)d->mb,
                           (long long)c, (long long)dd, (long long)h, (long long)w);
    if (d->n_layers < 2 || d->n_layers > BKM_NET_MAX_LAYERS)
        return bkm_err_set(err, BKM_EINVAL, "net: %d layers: need 2..%d ending with a loss layer", d->n_layers,
                           BKM_NET_MAX_LAYERS);
    if (!(d->lr >= 0.0f) || !isfinite(d->lr))
        return bkm_err_set(err, BKM_EINVAL, "net: learning rate %g must be >= 0", (double)d->lr);
    *s = (bkm_net_shape_t){c, dd, h, w, nsp};
    return BKM_OK;
}

/* A conv or max pooling layer (2-D or 3-D) @p i on the shape *s: its parameters and forward FLOPs
 * into @p li, *s becomes its output. */
static int window_layer(const bkm_net_desc_t *d, int i, bkm_net_layer_info_t *li, bkm_net_shape_t *s, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &d->layer[i];
    int is3 = l->kind == BKM_NET_CONV3D || l->kind == BKM_NET_MAXPOOL3D;
    int conv = l->kind == BKM_NET_CONV || l->kind == BKM_NET_CONV3D;
    int64_t taps;
    int rc;
    if (s->nsp != (is3 ? 3 : 2))
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): a %s layer needs a %s input, not %s", i,
                           l->name, bkm_net_kind_name(l->kind), is3 ? "3-D (NCDHW)" : "2-D (NCHW)",
                           s->nsp == 0 ? "flat features" : s->nsp == 3 ? "a 3-D one" : s->nsp == 1 ? "a sequence"
                                                                                                 : "a 2-D one");
    if (l->k <= 0 || l->s <= 0 || l->p < 0 || (conv && l->out <= 0))
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): k=%lld s=%lld p=%lld out=%lld: sizes must be "
                           "positive (padding non-negative)", i, l->name, (long long)l->k, (long long)l->s,
                           (long long)l->p, (long long)l->out);
    if (!conv && l->p >= l->k)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): padding p=%lld must be smaller than the "
                           "window k=%lld", i, l->name, (long long)l->p, (long long)l->k);
    if (is3 && (rc = window_axis(l, i, "d", s->d, &s->d, err)) < 0)
        return rc;
    if ((rc = window_axis(l, i, "h", s->h, &s->h, err)) < 0 || (rc = window_axis(l, i, "w", s->w, &s->w, err)) < 0)
        return rc;
    if (conv) {
        taps = l->k * l->k * (is3 ? l->k : 1);
        if (l->out > NET_MAX_ELEMS / (s->c * taps) || l->out > NET_MAX_ELEMS / (d->mb * s->d * s->h * s->w))
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): out=%lld is too large", i, l->name,
                               (long long)l->out);
        li->n_wei = l->out * s->c * taps;
        li->n_bias = l->out;
        li->flops[BKM_NET_FWD] = 2.0 * (double)d->mb * (double)l->out * (double)s->c * (double)taps *
                                 (double)(s->d * s->h * s->w);
        s->c = l->out;
    }
    return BKM_OK;
}

/* An FC layer @p i on *s (flattened), as window_layer. */
static int fc_layer(const bkm_net_desc_t *d, int i, bkm_net_layer_info_t *li, bkm_net_shape_t *s, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &d->layer[i];
    int64_t nin = s->c * s->d * s->h * s->w;
    if (s->nsp == 1)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): an FC layer on a sequence is not supported "
                           "(sequences flow through LSTM and dropout layers into the L1 loss)", i, l->name);
    if (l->out <= 0 || l->out > NET_MAX_ELEMS / nin || l->out > NET_MAX_ELEMS / d->mb)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): out=%lld must be in [1, %lld]", i, l->name,
                           (long long)l->out, (long long)(NET_MAX_ELEMS / (nin > d->mb ? nin : d->mb)));
    li->n_wei = l->out * nin;
    li->n_bias = l->out;
    li->flops[BKM_NET_FWD] = 2.0 * (double)d->mb * (double)nin * (double)l->out;
    *s = (bkm_net_shape_t){l->out, 1, 1, 1, 0};
    return BKM_OK;
}

/* An LSTM stack @p i on the sequence *s, as window_layer. */
static int lstm_layer(const bkm_net_desc_t *d, int i, bkm_net_layer_info_t *li, bkm_net_shape_t *s, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &d->layer[i];
    bkm_lstm_desc_t ld;
    int rc;
    if (s->nsp != 1)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): an LSTM layer needs a sequence input (desc t "
                           ">= 1)", i, l->name);
    if (l->k <= 0 || l->k > 64)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): k=%lld stacked LSTM layers must be in [1, 64]",
                           i, l->name, (long long)l->k);
    if (l->out <= 0 ||
        (double)l->k * 4.0 * (double)l->out * ((double)s->c + (double)l->out + 1.0) > (double)NET_MAX_ELEMS ||
        (double)l->k * 4.0 * (double)l->out * (double)d->mb * (double)(s->h + 1) > (double)NET_MAX_ELEMS)
        return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): hidden size out=%lld must be positive and fit "
                           "the batch and steps", i, l->name, (long long)l->out);
    if ((rc = bkm_kern_lstm_desc_init(&ld, d->mb, s->h, s->c, l->out, l->k, err)) < 0)
        return bkm_err_prefix(err, "net layer %d (%s)", i, l->name);
    li->n_wei = (int64_t)bkm_kern_lstm_param_count(&ld);
    li->n_bias = 0;
    li->flops[BKM_NET_FWD] = bkm_kern_lstm_flops(&ld, 0);
    s->c = l->out;
    return BKM_OK;
}

/* Layer @p i of @p d on the shape *s: checked, its parameter counts and forward FLOPs into
 * net->li[i] (and the classes into net, for a loss); *s becomes its output. */
static int net_layer(bkm_net_t *net, const bkm_net_desc_t *d, int i, bkm_net_shape_t *s, bkm_err_t *err)
{
    const bkm_net_layer_t *l = &d->layer[i];
    bkm_net_layer_info_t *li = &net->li[i];
    switch (l->kind) {
    case BKM_NET_CONV:
    case BKM_NET_MAXPOOL:
    case BKM_NET_CONV3D:
    case BKM_NET_MAXPOOL3D:
        return window_layer(d, i, li, s, err);
    case BKM_NET_FC:
        return fc_layer(d, i, li, s, err);
    case BKM_NET_LSTM:
        return lstm_layer(d, i, li, s, err);
    case BKM_NET_LOSS_L1:
        if (i != d->n_layers - 1)
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): the loss must be the last layer (%d layers)",
                               i, l->name, d->n_layers);
        if (s->nsp != 1)
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): the L1 loss is implemented for sequence "
                               "networks only (desc t >= 1)", i, l->name);
        net->classes = s->c;
        return BKM_OK;
    case BKM_NET_LOSS:
    case BKM_NET_LOSS_BATCH:
        if (i != d->n_layers - 1)
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): the loss must be the last layer (%d layers)",
                               i, l->name, d->n_layers);
        if (i == 0 || d->layer[i - 1].kind != BKM_NET_FC)
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): the loss must follow an FC layer", i, l->name);
        net->classes = s->c;
        return BKM_OK;
    case BKM_NET_RELU:
        return BKM_OK;
    case BKM_NET_DROPOUT:
    case BKM_NET_DROPOUT2D:
        if (!(l->drop >= 0.0f && l->drop < 1.0f))
            return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): dropout probability %g outside [0, 1)", i,
                               l->name, (double)l->drop);
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "net layer %d (%s): unknown kind %d", i, l->name, (int)l->kind);
}

/* The backward of layer @p i (its input and output shapes and forward set): whether it runs,
 * its parameters' offsets from *off on (advanced), and its FLOPs per direction. *seen_param: a
 * parameter layer is at or before i (updated). */
static void net_layer_backward(bkm_net_t *net, const bkm_net_desc_t *d, int i, size_t *off, int *seen_param)
{
    const bkm_net_layer_t *l = &d->layer[i];
    bkm_net_layer_info_t *li = &net->li[i];
    li->need_bwd_d = *seen_param || d->grad_input != 0;
    if (li->n_wei) {
        *seen_param = 1;
        li->wei_off = *off;
        *off += align16((size_t)li->n_wei);
        li->bias_off = *off;
        *off += align16((size_t)li->n_bias);
        net->n_trainable += li->n_wei + li->n_bias;
        li->flops[BKM_NET_BWD_W] = li->flops[BKM_NET_FWD];
        if (li->need_bwd_d)
            li->flops[BKM_NET_BWD_D] = li->flops[BKM_NET_FWD];
        if (d->lr > 0.0f)
            li->flops[BKM_NET_UPD] = 2.0 * (double)(li->n_wei + li->n_bias);
        if (l->kind == BKM_NET_LSTM) /* one backward-through-time call: 2 x forward, less the input's
                                      * data gradient (T*2*N*4H*I) when nothing needs it */
            li->flops[BKM_NET_BWD_D] = 2.0 * li->flops[BKM_NET_FWD] -
                                       (li->need_bwd_d ? 0.0 : 2.0 * (double)(d->mb * li->out.h * 4 * l->out) * (double)li->in.c),
            li->flops[BKM_NET_BWD_W] = 0.0;
    }
    li->need_bwd = *seen_param || d->grad_input != 0;
    net->flops_fwd += li->flops[BKM_NET_FWD];
    net->flops_train += li->flops[BKM_NET_FWD] + li->flops[BKM_NET_BWD_D] + li->flops[BKM_NET_BWD_W];
}

int bkm_net_init(bkm_net_t *net, const bkm_net_desc_t *d, bkm_err_t *err)
{
    bkm_net_shape_t s;
    int seen_param = 0, rc;
    size_t off = 0;
    memset(net, 0, sizeof *net);
    if ((rc = net_input(d, &s, err)) < 0)
        return rc;
    net->n_input = (size_t)(d->mb * s.c * s.d * s.h * s.w);
    for (int i = 0; i < d->n_layers; i++) {
        net->li[i].in = s;
        if ((rc = net_layer(net, d, i, &s, err)) < 0)
            return rc;
        net->li[i].out = s;
        net_layer_backward(net, d, i, &off, &seen_param);
    }
    if (!bkm_net_kind_is_loss(d->layer[d->n_layers - 1].kind))
        return bkm_err_set(err, BKM_EINVAL, "net: the last layer (%s) must be a loss layer",
                           d->layer[d->n_layers - 1].name);
    if (!seen_param)
        return bkm_err_set(err, BKM_EINVAL, "net: no layer has parameters (nothing to train)");
    if (d->inference && d->t == 0)
        return bkm_err_set(err, BKM_EINVAL, "net: inference=1 is implemented for sequence networks only (desc t >= 1)");
    if (d->inference) /* forward and loss only */
        for (int i = 0; i < d->n_layers; i++) {
            net->li[i].flops[BKM_NET_BWD_D] = net->li[i].flops[BKM_NET_BWD_W] = net->li[i].flops[BKM_NET_UPD] = 0.0;
            net->li[i].need_bwd = net->li[i].need_bwd_d = 0;
        }
    if (d->inference)
        net->flops_train = net->flops_fwd;
    net->n_params = off;
    net->d = *d;
    return BKM_OK;
}

double bkm_net_bytes(const bkm_net_t *net, bkm_net_engine_t eng)
{
    double act = (double)net->n_input, par = (double)net->n_params, col = 0.0;
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        act += (double)net->d.mb * (double)(li->out.c * li->out.d * li->out.h * li->out.w);
        if (net->d.layer[i].kind == BKM_NET_LSTM) /* gates, states and gradient scratch of the stack */
            col += (double)net->d.layer[i].k * (double)net->d.mb * (double)li->in.h * (double)li->out.c *
                   (4.0 + 2.0 + 2.0) + (double)net->d.mb * (double)li->in.h * (double)li->out.c * 8.0;
        if (net->d.layer[i].kind == BKM_NET_CONV3D) /* native: unfolded input and its gradient, 2-D output */
            col += (double)net->d.mb * (double)li->out.d *
                   (2.0 * (double)(li->in.c * net->d.layer[i].k * li->in.h * li->in.w) +
                    (double)(li->out.c * li->out.h * li->out.w));
    }
    /* activations and their gradients (x2 more for oneDNN's layouts and pooling workspaces);
     * parameters: user copy and gradient, plus value, gradient and a reordered copy for oneDNN. */
    if (eng == BKM_NET_ONEDNN)
        return 4.0 * (4.0 * act + 5.0 * par) + 256.0 * 1048576.0;
    return 4.0 * (2.5 * act + 2.0 * par + col) + 256.0 * 1048576.0;
}
