/* SPDX-License-Identifier: MIT */
/* The network executor: owns the input, labels, parameters, gradients, initial states and
 * per-layer timing, and runs the engine the table of backends lists for its backend (the sequence
 * engine for sequence networks). */
#include <stdio.h>
#include <string.h>

#include "net_int.h"

int bkm_net_exec_create(bkm_net_exec_t **exp, const bkm_net_t *net, bkm_net_engine_t eng, const bkm_kern_params_t *kp,
                        bkm_err_t *err)
{
    int rc = BKM_OK;
    bkm_net_exec_t *ex = NULL;
    *exp = NULL;
    if (!(ex = bkm_calloc(1, sizeof *ex)))
        return bkm_err_set(err, BKM_ENOMEM, "net: out of memory");
    ex->net = *net;
    ex->eng = eng;
    for (int i = 0; eng == BKM_NET_ONEDNN && i < net->d.n_layers; i++)
        if (net->d.layer[i].drop > 0.0f) {
            rc = bkm_err_set(err, BKM_ENOTSUP, "net layer %d (%s): dropout in training mode (p %g) runs on the native "
                             "and ref engines", i, net->d.layer[i].name, (double)net->d.layer[i].drop);
            goto out;
        }
    if ((ex->be = bkm__backend((int)eng)) == NULL) {
        rc = bkm_err_set(err, BKM_EINVAL, "net: unknown engine %d", (int)eng);
        goto out;
    }
    /* a sequence network: one engine body over the LSTM stacks of the backend asked for */
    ex->vt = net->d.t > 0 ? &bkm__net_seq_vtbl : ex->be->net;
    ex->n_input = net->n_input;
    ex->input = bkm__net_zalloc(ex->n_input);
    ex->labels = bkm_calloc((size_t)net->d.mb, sizeof(int32_t));
    ex->params = bkm__net_zalloc(net->n_params);
    ex->grads = bkm__net_zalloc(net->n_params);
    if (!ex->input || !ex->labels || !ex->params || !ex->grads) {
        rc = bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate the input (%zu floats) and parameters (%zu floats)",
                         ex->n_input, net->n_params);
        goto out;
    }
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_t *l = &net->d.layer[i];
        if (l->kind == BKM_NET_LSTM) {
            ex->n_state[i] = (size_t)(2 * l->k * net->d.mb * l->out);
            if (!(ex->state[i] = bkm__net_zalloc(ex->n_state[i]))) {
                rc = bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate %zu LSTM states", ex->n_state[i]);
                goto out;
            }
        }
        if (l->kind == BKM_NET_LOSS_L1) {
            const bkm_net_shape_t *in = &net->li[i].in;
            ex->n_target = (size_t)(net->d.mb * in->c * in->d * in->h * in->w);
            if (!(ex->target = bkm__net_zalloc(ex->n_target))) {
                rc = bkm_err_set(err, BKM_ENOMEM, "net: cannot allocate %zu targets", ex->n_target);
                goto out;
            }
        }
    }
    if ((rc = ex->vt->create(ex, kp, err)) < 0)
        goto out;
    *exp = ex;
    ex = NULL;
out:
    bkm_net_exec_destroy(ex);
    return rc;
}

int bkm_net_exec_forward(bkm_net_exec_t *ex, const float **logits, bkm_err_t *err)
{
    bkm_net_step_t st;
    int rc;
    if (ex->eng == BKM_NET_ONEDNN)
        return bkm_err_set(err, BKM_ENOTSUP, "net: forward-only evaluation runs on the native and ref engines");
    ex->fwd_only = 1;
    ex->logits = NULL;
    rc = ex->vt->step(ex, &st, err);
    ex->fwd_only = 0;
    *logits = ex->logits;
    return rc;
}

void bkm_net_exec_set_dropout(bkm_net_exec_t *ex, uint64_t key, int64_t first_sample)
{
    ex->drop_key = key;
    ex->drop_first = first_sample;
}

void bkm_net_exec_set_grad_hook(bkm_net_exec_t *ex, bkm_net_grad_hook_fn fn, void *ctx)
{
    ex->grad_hook = fn;
    ex->grad_ctx = ctx;
}

const bkm_net_t *bkm_net_exec_net(const bkm_net_exec_t *ex)
{
    return &ex->net;
}

float *bkm_net_exec_input(bkm_net_exec_t *ex, size_t *n)
{
    if (n)
        *n = ex->n_input;
    return ex->input;
}

int32_t *bkm_net_exec_labels(bkm_net_exec_t *ex, size_t *n)
{
    if (n)
        *n = (size_t)ex->net.d.mb;
    return ex->labels;
}

float *bkm_net_exec_params(bkm_net_exec_t *ex, size_t *n)
{
    if (n)
        *n = ex->net.n_params;
    return ex->params;
}

const float *bkm_net_exec_grads(const bkm_net_exec_t *ex, size_t *n)
{
    if (n)
        *n = ex->net.n_params;
    return ex->grads;
}

float *bkm_net_exec_state(bkm_net_exec_t *ex, int layer, size_t *n)
{
    int ok = layer >= 0 && layer < ex->net.d.n_layers;
    if (n)
        *n = ok ? ex->n_state[layer] : 0;
    return ok ? ex->state[layer] : NULL;
}

float *bkm_net_exec_target(bkm_net_exec_t *ex, size_t *n)
{
    if (n)
        *n = ex->n_target;
    return ex->target;
}

int bkm_net_exec_prepare(bkm_net_exec_t *ex, bkm_err_t *err)
{
    for (int64_t i = 0; i < ex->net.d.mb; i++)
        if (ex->labels[i] < 0 || ex->labels[i] >= ex->net.classes)
            return bkm_err_set(err, BKM_EINVAL, "net: label[%lld] = %d outside [0, %lld)", (long long)i,
                               (int)ex->labels[i], (long long)ex->net.classes);
    return ex->vt->prepare(ex, err);
}

int bkm_net_exec_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err)
{
    int rc;
    if (ex->timing)
        memset(ex->last, 0, sizeof ex->last);
    rc = ex->vt->step(ex, st, err);
    if (rc == BKM_OK && ex->timing)
        ex->timed_steps++;
    return rc;
}

int bkm_net_exec_finish(bkm_net_exec_t *ex, bkm_err_t *err)
{
    return ex->vt->finish(ex, err);
}

void bkm_net_exec_set_timing(bkm_net_exec_t *ex, int on)
{
    ex->timing = on != 0;
}

void bkm_net_exec_reset_times(bkm_net_exec_t *ex)
{
    memset(ex->ms, 0, sizeof ex->ms);
    ex->timed_steps = 0;
}

double bkm_net_exec_layer_ms(const bkm_net_exec_t *ex, int layer, bkm_net_dir_t dir, long *steps)
{
    if (steps)
        *steps = ex->timed_steps;
    if (layer < 0 || layer >= ex->net.d.n_layers || (unsigned)dir >= BKM_NET_NDIR || ex->timed_steps == 0)
        return 0.0;
    return ex->ms[layer][dir] / (double)ex->timed_steps;
}

double bkm_net_exec_last_ms(const bkm_net_exec_t *ex, int layer, bkm_net_dir_t dir)
{
    if (layer < 0 || layer >= ex->net.d.n_layers || (unsigned)dir >= BKM_NET_NDIR)
        return 0.0;
    return ex->last[layer][dir];
}

const char *bkm_net_exec_impl(const bkm_net_exec_t *ex)
{
    return ex->impl;
}

void bkm_net_exec_destroy(bkm_net_exec_t *ex)
{
    if (!ex)
        return;
    if (ex->vt)
        ex->vt->destroy(ex);
    bkm_free(ex->input);
    bkm_free(ex->labels);
    bkm_free(ex->params);
    bkm_free(ex->grads);
    for (int i = 0; i < BKM_NET_MAX_LAYERS; i++)
        bkm_free(ex->state[i]);
    bkm_free(ex->target);
    bkm_free(ex);
}
