/* SPDX-License-Identifier: MIT */
/* `alexnet`: one training step of torchvision AlexNet (workloads.md §3): forward, mean cross-
 * entropy over softmax, backward (no bwd-data for conv1), plain SGD (lr 0.01, no momentum), eval
 * mode (dropout off). Two chains over the same seeded weights, input and labels: the native kernels
 * (kernels.h "Layers" + native conv2d) and oneDNN primitives (bkm_kern_onednn_cnn_*). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wl_int.h"

/* Generator streams: input, labels, then two per layer (weight, bias). */
#define STREAM_INPUT 1
#define STREAM_LABELS 2
#define STREAM_PARAM(i, is_bias) (100 + 2 * (uint64_t)(i) + (uint64_t)(is_bias))

/* One layer of the native chain. */
typedef struct nat_layer {
    bkm_conv2d_desc_t cd;
    bkm_kern_conv2d_t *cv;
    bkm_fc_desc_t fd;
    bkm_kern_fc_t *fc;
    bkm_pool_desc_t pd;
    int32_t *argmax;
    float *w, *b, *dw, *db;
    size_t nw, nb;
    float *out;        /* owned output (conv, pool, fc); relu / dropout work in place */
    float *gin;        /* owned gradient wrt the input (pool, fc, conv except the first layer) */
    float *in, *y;     /* input and output activations (borrowed) */
    size_t n_in, n_out;
} nat_layer_t;

typedef struct nat_chain {
    nat_layer_t l[BKM_CNN_MAX_LAYERS];
    float *input, *prob, *dlogits;
    int32_t *labels;
} nat_chain_t;

typedef struct alex {
    bkm_cnn_desc_t d;
    bkm_cnn_shape_t sh[BKM_CNN_MAX_LAYERS];
    bkm_onednn_cnn_t *odnn;
    nat_chain_t *nat;
} alex_t;

static const bkm_wl_param_t alex_own[] = {
    {"backend", BKM_WL_ENUM, "native", 0, 0, 1, "native|onednn",
     "kernel implementation: native (this suite's kernels) or onednn (oneDNN 2.6 primitives)", 0},
    {"batch", BKM_WL_INT, "128", 1, 1024, 1, NULL, "images per training step (224x224x3 each)", 0},
};

/* The conv2d tunables apply to all five convolutions; the FC layers use the GEMM defaults. */
static size_t alex_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_conv2d_params(&n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

/* Fan-in of parameter layer @p i (input elements per output unit). */
static int64_t fan_in(const alex_t *a, int i)
{
    const bkm_cnn_layer_t *l = &a->d.layer[i];
    int64_t c = i ? a->sh[i - 1].c : a->d.c, h = i ? a->sh[i - 1].h : a->d.h, w = i ? a->sh[i - 1].w : a->d.w;
    return l->kind == BKM_CNN_CONV ? c * l->k * l->k : c * h * w;
}

/* Same values for every backend: input ~ N(0, 1), labels uniform in [0, classes), weights and
 * biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's default initialisation. */
static void init_input(const alex_t *a, float *input, size_t n, int32_t *labels, uint64_t seed)
{
    int64_t classes = a->d.layer[a->d.n_layers - 1].out;
    bkm__wl_fill_normal(input, n, seed, STREAM_INPUT);
    for (int64_t i = 0; i < a->d.mb; i++)
        labels[i] = (int32_t)(bkm__wl_hash(seed, STREAM_LABELS, (uint64_t)i) % (uint64_t)classes);
}

static void init_param(const alex_t *a, int i, float *w, size_t nw, float *b, size_t nb, uint64_t seed)
{
    float bound = (float)(1.0 / sqrt((double)fan_in(a, i)));
    bkm__wl_fill_uniform(w, nw, bound, seed, STREAM_PARAM(i, 0));
    bkm__wl_fill_uniform(b, nb, bound, seed, STREAM_PARAM(i, 1));
}

/* ---------------------------------------------------------------------------------------- */
/* oneDNN chain                                                                               */

static int odnn_create(bkm_wl_t *wl, alex_t *a, bkm_err_t *err)
{
    int rc;
    size_t n, nw, nb;
    float *p;
    if ((rc = bkm_kern_onednn_cnn_create(&a->odnn, &a->d, err)) < 0)
        return rc;
    p = bkm_kern_onednn_cnn_input(a->odnn, &n);
    init_input(a, p, n, bkm_kern_onednn_cnn_labels(a->odnn, NULL), wl->seed);
    for (int i = 0; i < a->d.n_layers; i++) {
        float *w = bkm_kern_onednn_cnn_param(a->odnn, i, BKM_ARG_WEI, &nw);
        float *b = bkm_kern_onednn_cnn_param(a->odnn, i, BKM_ARG_BIAS, &nb);
        if (w && b)
            init_param(a, i, w, nw, b, nb, wl->seed);
    }
    if ((rc = bkm_kern_onednn_cnn_prepare(a->odnn, err)) < 0)
        return rc;
    snprintf(wl->impl, sizeof wl->impl, "%s", bkm_kern_onednn_cnn_impl(a->odnn));
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Native chain                                                                               */

static float *falloc(size_t n)
{
    float *p = bkm_aligned_alloc(64, (n ? n : 1) * sizeof(float));
    if (p)
        memset(p, 0, (n ? n : 1) * sizeof(float));
    return p;
}

static void nat_free(nat_chain_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < BKM_CNN_MAX_LAYERS; i++) {
        nat_layer_t *l = &c->l[i];
        bkm_kern_conv2d_destroy(l->cv);
        bkm_kern_fc_destroy(l->fc);
        bkm_free(l->argmax);
        bkm_free(l->w);
        bkm_free(l->b);
        bkm_free(l->dw);
        bkm_free(l->db);
        bkm_free(l->out);
        bkm_free(l->gin);
    }
    bkm_free(c->input);
    bkm_free(c->prob);
    bkm_free(c->dlogits);
    bkm_free(c->labels);
    bkm_free(c);
}

static void append_impl(char *buf, size_t cap, const char *name)
{
    size_t len = strlen(buf), nl = strlen(name);
    const char *p = buf;
    while (p && *p) {
        const char *e = strchr(p, '+');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == nl && strncmp(p, name, nl) == 0)
            return;
        p = e ? e + 1 : NULL;
    }
    if (len + nl + 2 < cap)
        snprintf(buf + len, cap - len, "%s%s", len ? "+" : "", name);
}

static int nat_layer_create(bkm_wl_t *wl, alex_t *a, nat_chain_t *c, int i, bkm_err_t *err)
{
    const bkm_cnn_layer_t *cl = &a->d.layer[i];
    nat_layer_t *l = &c->l[i];
    int64_t mb = a->d.mb, ic = i ? a->sh[i - 1].c : a->d.c, ih = i ? a->sh[i - 1].h : a->d.h,
            iw = i ? a->sh[i - 1].w : a->d.w;
    int rc = BKM_OK;
    l->in = i ? c->l[i - 1].y : c->input;
    l->n_in = (size_t)(mb * ic * ih * iw);
    l->n_out = (size_t)(mb * a->sh[i].c * a->sh[i].h * a->sh[i].w);
    switch (cl->kind) {
    case BKM_CNN_CONV: {
        bkm_conv2d_desc_t *d = &l->cd;
        memset(d, 0, sizeof *d);
        d->mb = mb;
        d->g = 1;
        d->ic = ic;
        d->ih = ih;
        d->iw = iw;
        d->oc = cl->out;
        d->oh = a->sh[i].h;
        d->ow = a->sh[i].w;
        d->kh = d->kw = cl->k;
        d->sh = d->sw = cl->s;
        d->ph = d->pw = cl->p;
        d->has_bias = 1;
        snprintf(d->name, sizeof d->name, "alexnet:%s", cl->name);
        if ((rc = bkm_kern_conv2d_create(&l->cv, d, &wl->kp, err)) < 0)
            return rc;
        l->nw = (size_t)(cl->out * ic * cl->k * cl->k);
        l->nb = (size_t)cl->out;
        append_impl(wl->impl, sizeof wl->impl, bkm_kern_conv2d_impl(l->cv));
        break;
    }
    case BKM_CNN_FC: {
        bkm_kern_params_t kp;
        bkm_kern_params_init(&kp);
        kp.isa = wl->kp.isa;
        l->fd = (bkm_fc_desc_t){mb, ic * ih * iw, cl->out, 1};
        if ((rc = bkm_kern_fc_create(&l->fc, &l->fd, &kp, err)) < 0)
            return rc;
        l->nw = (size_t)(cl->out * ic * ih * iw);
        l->nb = (size_t)cl->out;
        append_impl(wl->impl, sizeof wl->impl, "native:fc.sgemm");
        break;
    }
    case BKM_CNN_MAXPOOL:
        if ((rc = bkm_kern_pool_desc_init(&l->pd, mb, ic, ih, iw, cl->k, cl->s, cl->p, err)) < 0)
            return rc;
        if (!(l->argmax = bkm_calloc(l->n_out, sizeof(int32_t))))
            return bkm_err_set(err, BKM_ENOMEM, "alexnet: out of memory");
        break;
    default: /* ReLU in place; dropout is the identity in eval mode */
        l->y = l->in;
        return BKM_OK;
    }
    if (!(l->out = falloc(l->n_out)))
        return bkm_err_set(err, BKM_ENOMEM, "alexnet: cannot allocate %zu activations", l->n_out);
    l->y = l->out;
    if (i > 0 && !(l->gin = falloc(l->n_in)))
        return bkm_err_set(err, BKM_ENOMEM, "alexnet: cannot allocate %zu gradients", l->n_in);
    if (l->nw) {
        if (!(l->w = falloc(l->nw)) || !(l->b = falloc(l->nb)) || !(l->dw = falloc(l->nw)) || !(l->db = falloc(l->nb)))
            return bkm_err_set(err, BKM_ENOMEM, "alexnet: cannot allocate %zu parameters", l->nw);
        init_param(a, i, l->w, l->nw, l->b, l->nb, wl->seed);
    }
    return BKM_OK;
}

static int nat_create(bkm_wl_t *wl, alex_t *a, bkm_err_t *err)
{
    nat_chain_t *c = bkm_calloc(1, sizeof *c);
    size_t n_in = (size_t)(a->d.mb * a->d.c * a->d.h * a->d.w);
    size_t n_logits = (size_t)(a->d.mb * a->d.layer[a->d.n_layers - 1].out);
    int rc;
    if (!c)
        return bkm_err_set(err, BKM_ENOMEM, "alexnet: out of memory");
    a->nat = c;
    c->input = falloc(n_in);
    c->prob = falloc(n_logits);
    c->dlogits = falloc(n_logits);
    c->labels = bkm_calloc((size_t)a->d.mb, sizeof(int32_t));
    if (!c->input || !c->prob || !c->dlogits || !c->labels)
        return bkm_err_set(err, BKM_ENOMEM, "alexnet: cannot allocate the input (%zu floats)", n_in);
    init_input(a, c->input, n_in, c->labels, wl->seed);
    wl->impl[0] = '\0';
    for (int i = 0; i < a->d.n_layers; i++)
        if ((rc = nat_layer_create(wl, a, c, i, err)) < 0)
            return bkm_err_prefix(err, "alexnet layer %s", a->d.layer[i].name);
    return BKM_OK;
}

static int nat_step(alex_t *a, bkm_wl_sample_t *s, bkm_err_t *err)
{
    nat_chain_t *c = a->nat;
    int nl = a->d.n_layers;
    int64_t mb = a->d.mb, classes = a->d.layer[nl - 1].out;
    const float *logits = c->l[nl - 1].y;
    float *g;
    double loss = 0.0;
    uint64_t t0, t1, t2, t3;
    int rc;

    t0 = bkm_now_ns();
    for (int i = 0; i < nl; i++) {
        nat_layer_t *l = &c->l[i];
        switch (a->d.layer[i].kind) {
        case BKM_CNN_CONV:
            rc = bkm_kern_conv2d_fwd(l->cv, l->in, l->w, l->b, l->out, err);
            break;
        case BKM_CNN_FC:
            rc = bkm_kern_fc_fwd(l->fc, l->in, l->w, l->b, l->out, err);
            break;
        case BKM_CNN_MAXPOOL:
            bkm_kern_maxpool_fwd(&l->pd, l->in, l->out, l->argmax);
            rc = BKM_OK;
            break;
        case BKM_CNN_RELU:
            bkm_kern_relu_fwd(l->n_in, l->in, l->in);
            rc = BKM_OK;
            break;
        default:
            rc = BKM_OK;
            break;
        }
        if (rc < 0)
            return rc;
    }
    t1 = bkm_now_ns();
    if ((rc = bkm_kern_softmax_xent_fwd(mb, classes, logits, c->labels, c->prob, &loss, err)) < 0 ||
        (rc = bkm_kern_softmax_xent_bwd(mb, classes, c->prob, c->labels, c->dlogits, err)) < 0)
        return rc;
    g = c->dlogits;
    for (int i = nl - 1; i >= 0; i--) {
        nat_layer_t *l = &c->l[i];
        switch (a->d.layer[i].kind) {
        case BKM_CNN_CONV:
            rc = bkm_kern_conv2d_bwd_weights(l->cv, l->in, g, l->dw, l->db, err);
            if (rc == BKM_OK && i > 0)
                rc = bkm_kern_conv2d_bwd_data(l->cv, g, l->w, l->gin, err);
            g = l->gin;
            break;
        case BKM_CNN_FC:
            rc = bkm_kern_fc_bwd_weights(l->fc, l->in, g, l->dw, l->db, err);
            if (rc == BKM_OK && i > 0)
                rc = bkm_kern_fc_bwd_data(l->fc, g, l->w, l->gin, err);
            g = l->gin;
            break;
        case BKM_CNN_MAXPOOL:
            bkm_kern_maxpool_bwd(&l->pd, g, l->argmax, l->gin);
            g = l->gin;
            break;
        case BKM_CNN_RELU:
            bkm_kern_relu_bwd(l->n_in, l->y, g, g);
            break;
        default:
            break;
        }
        if (rc < 0)
            return rc;
    }
    t2 = bkm_now_ns();
    for (int i = 0; i < nl; i++) {
        nat_layer_t *l = &c->l[i];
        if (!l->nw)
            continue;
        bkm_kern_sgd_step(l->nw, l->w, l->dw, NULL, a->d.lr, 0.0f, 0.0f);
        bkm_kern_sgd_step(l->nb, l->b, l->db, NULL, a->d.lr, 0.0f, 0.0f);
    }
    t3 = bkm_now_ns();
    s->fwd_ms = (double)(t1 - t0) * 1e-6;
    s->bwd_ms = (double)(t2 - t1) * 1e-6;
    s->update_ms = (double)(t3 - t2) * 1e-6;
    s->loss = loss;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Hooks                                                                                      */

static int alex_desc(const bkm_wl_t *wl, alex_t *a, bkm_err_t *err)
{
    bkm_kern_cnn_alexnet(&a->d, bkm__wl_int(wl, "batch"));
    return bkm_kern_cnn_check(&a->d, a->sh, err);
}

/* The native backend runs every convolution with the conv2d tunables: the kernel's rules. */
static int alex_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    if (wl->be == BKM_BACKEND_NATIVE &&
        bkm_kern_conv2d_params_check(&wl->kp, bkm__wl_int(wl, "batch"), wl->n_threads, err) < 0)
        return bkm_err_prefix(err, "alexnet");
    return BKM_OK;
}

static int alex_create(bkm_wl_t *wl, bkm_err_t *err)
{
    alex_t *a = bkm_calloc(1, sizeof *a);
    int rc;
    if (!a)
        return bkm_err_set(err, BKM_ENOMEM, "alexnet: out of memory");
    wl->priv = a;
    if ((rc = alex_desc(wl, a, err)) < 0)
        return rc;
    rc = wl->be == BKM_BACKEND_ONEDNN ? odnn_create(wl, a, err) : nat_create(wl, a, err);
    return rc < 0 ? bkm_err_prefix(err, "alexnet (%s)", bkm_kern_backend_name(wl->be)) : BKM_OK;
}

static int alex_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    alex_t *a = wl->priv;
    int rc;
    if (a->odnn) {
        bkm_cnn_times_t t;
        float loss = 0.0f;
        if ((rc = bkm_kern_onednn_cnn_step(a->odnn, &loss, &t, err)) < 0)
            return rc;
        s->fwd_ms = t.fwd_ms;
        s->bwd_ms = t.bwd_ms;
        s->update_ms = t.update_ms;
        s->loss = loss;
    } else if ((rc = nat_step(a, s, err)) < 0) {
        return rc;
    }
    s->ms = s->fwd_ms + s->bwd_ms + s->update_ms;
    return BKM_OK;
}

static int alex_check(bkm_wl_t *wl, double *value, bkm_err_t *err)
{
    if (!isfinite(wl->first_loss))
        return bkm_err_set(err, BKM_EVERIFY, "alexnet: first-iteration loss is not finite (%g)", wl->first_loss);
    *value = wl->first_loss;
    return BKM_OK;
}

static double alex_flops(const bkm_wl_t *wl)
{
    const alex_t *a = wl->priv;
    return bkm_kern_cnn_flops(&a->d, 1);
}

static void alex_destroy(bkm_wl_t *wl)
{
    alex_t *a = wl->priv;
    bkm_kern_onednn_cnn_destroy(a->odnn);
    nat_free(a->nat);
    bkm_free(a);
    wl->priv = NULL;
}

/* Activations and their gradients (x2 for oneDNN's layouts and pooling workspaces), parameters
 * four times (user copy, value, gradient, a reordered copy). */
static double alex_bytes(const bkm_wl_t *wl)
{
    alex_t a;
    double act, par;
    if (alex_desc(wl, &a, NULL) < 0)
        return 0.0;
    act = (double)(a.d.c * a.d.h * a.d.w);
    for (int i = 0; i < a.d.n_layers; i++)
        act += (double)(a.sh[i].c * a.sh[i].h * a.sh[i].w);
    par = (double)bkm_kern_cnn_n_params(&a.d);
    return 4.0 * (4.0 * (double)a.d.mb * act + 4.0 * par) + 256.0 * 1048576.0;
}

const bkm_wl_entry_t bkm__wl_alexnet = {
    {"alexnet",
     "One training step of torchvision AlexNet (5 conv + 3 FC, 61.1 M parameters, 224x224x3 input): "
     "forward, softmax cross-entropy loss, backward (conv1 without bwd-data), SGD update (lr 0.01, no "
     "momentum), eval mode (dropout off), as mingfeima/convnet-benchmarks pytorch/benchmark.py. The sample "
     "splits the time into fwd, bwd (loss + backward) and update. Check value: the first iteration's loss.",
     "loss"},
    alex_own,
    sizeof alex_own / sizeof alex_own[0],
    alex_tunables,
    alex_validate,
    alex_bytes,
    alex_create,
    alex_run,
    alex_check,
    alex_flops,
    alex_destroy,
};
