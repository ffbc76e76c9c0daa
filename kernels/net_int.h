/* SPDX-License-Identifier: MIT */
/* Private to the network executors (net*.c): the executor object and the engine interface. */
#ifndef BKM_NET_INT_H
#define BKM_NET_INT_H

#include "backend_int.h"
#include "bkm/net.h"

/* What an engine implements (a backend's column .net, or the sequence engine); the executor
 * (net.c) owns the input, labels, parameters, gradients, timing table and impl string, the engine
 * its private state (ex->st). */
struct bkm__net_vtbl {
    int (*create)(bkm_net_exec_t *ex, const bkm_kern_params_t *kp, bkm_err_t *err);
    int (*prepare)(bkm_net_exec_t *ex, bkm_err_t *err);
    int (*step)(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err);
    int (*finish)(bkm_net_exec_t *ex, bkm_err_t *err);
    void (*destroy)(bkm_net_exec_t *ex);
};

struct bkm_net_exec {
    bkm_net_t net;
    bkm_net_engine_t eng;
    const bkm__backend_t *be;     /* the row of eng in the table of backends */
    const bkm__net_vtbl_t *vt;    /* be->net, or the sequence engine */
    void *st;                     /* engine state */
    float *input;                 /* user NCHW input */
    size_t n_input;
    int32_t *labels;
    float *params, *grads;        /* flat, user layout, offsets in net.li[] */
    int timing;                   /* per-layer timing on */
    long timed_steps;
    double ms[BKM_NET_MAX_LAYERS][BKM_NET_NDIR];   /* sums since the last reset */
    double last[BKM_NET_MAX_LAYERS][BKM_NET_NDIR]; /* the last step */
    char impl[512];
    float *state[BKM_NET_MAX_LAYERS]; /* LSTM layers: initial states [2][k][mb][H] (h0, c0) */
    size_t n_state[BKM_NET_MAX_LAYERS];
    float *target;                /* the L1 loss's target (as many floats as its input) */
    size_t n_target;
    int fwd_only;                 /* bkm_net_exec_forward: the step stops after the forward layers */
    const float *logits;          /* set by an engine's forward-only step: the loss layer's input */
    bkm_net_grad_hook_fn grad_hook; /* called once a parameter layer's gradients are final */
    void *grad_ctx;
    uint64_t drop_key;            /* bkm_net_exec_set_dropout */
    int64_t drop_first;
};

/* Dropout layer @p layer (p > 0) of a training step on @p x, in place: each element times its mask
 * (0 or 1/(1-p)). The same call applies it to the activations in forward and to the gradient in
 * backward (the mask is recomputed from the hash: no storage). */
void bkm__net_dropout(const bkm_net_exec_t *ex, int layer, float *x);

/* A zeroed buffer of @p n floats (64-byte aligned, freed with bkm_free), first touched by the
 * calling thread's OpenMP team with the static schedule of the compute over the flat array, so
 * that its pages lie where the threads that use them run; NULL when out of memory. Call it
 * outside any parallel region, with the trial's team size in effect. */
float *bkm__net_zalloc(size_t n);

/* The engines: native (net_native.c), oneDNN (net_onednn.c), the naive reference (net_ref.c), and
 * the one engine of sequence networks (desc t >= 1: LSTM, dropout, L1 loss) over any backend's LSTM
 * stacks (net_seq.c). */
extern const bkm__net_vtbl_t bkm__net_native_vtbl;
extern const bkm__net_vtbl_t bkm__net_onednn_vtbl;
extern const bkm__net_vtbl_t bkm__net_ref_vtbl;
extern const bkm__net_vtbl_t bkm__net_seq_vtbl;

/* Per-layer lap: when timing is on, add the time since *t to layer @p layer, direction @p dir, and
 * restart *t. One clock read; nothing when timing is off. */
static inline void bkm__net_lap(bkm_net_exec_t *ex, int layer, bkm_net_dir_t dir, uint64_t *t)
{
    uint64_t now;
    if (!ex->timing)
        return;
    now = bkm_now_ns();
    ex->ms[layer][dir] += (double)(now - *t) * 1e-6;
    ex->last[layer][dir] += (double)(now - *t) * 1e-6;
    *t = now;
}

/* The batch-axis loss (BKM_NET_LOSS_BATCH): *loss and d loss / d logits into @p grad (double
 * accumulation; mb x classes is small). Returns -1 for the class-axis loss (not handled here). */
int bkm__net_xent(const bkm_net_t *net, const float *logits, const int32_t *labels, float *grad, double *loss);

/* The SGD update (lr > 0; nothing otherwise) of every parameter layer on the flat user-layout arrays,
 * each layer's time lapped under BKM_NET_UPD: the native and sequence engines' update phase. */
void bkm__net_sgd(bkm_net_exec_t *ex, uint64_t *t);

/* Append @p name to the '+'-separated list in @p buf unless it is already there. */
void bkm__net_impl_add(char *buf, size_t cap, const char *name);

#endif /* BKM_NET_INT_H */
