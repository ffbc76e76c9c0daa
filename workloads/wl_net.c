/* SPDX-License-Identifier: MIT */
/* The hooks every network workload shares: build the workload's table (entry->net_table), check it
 * once, seed the input, labels and parameters identically for every engine, run training steps on
 * the executor of the chosen backend, and report the first-iteration loss, the FLOPs derived from
 * the table and, with layers=1, the per-layer table (layer, direction, ms, GFLOP/s). A new network
 * workload is a table function and an entry; none of this is repeated. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wl_int.h"

/* Generator streams: input, labels, then two per layer (weight, bias). */
#define STREAM_INPUT 1
#define STREAM_LABELS 2
#define STREAM_PARAM(i, is_bias) (100 + 2 * (uint64_t)(i) + (uint64_t)(is_bias))

typedef struct wl_net {
    bkm_net_t net;
    bkm_net_exec_t *ex;
} wl_net_t;

static int net_of(const bkm_wl_t *wl, bkm_net_t *net, bkm_err_t *err)
{
    bkm_net_desc_t d;
    int rc;
    memset(&d, 0, sizeof d);
    if ((rc = wl->e->net_table(wl, &d, err)) < 0)
        return rc;
    if ((rc = bkm_net_init(net, &d, err)) < 0)
        return bkm_err_prefix(err, "%s", wl->e->info.name);
    return BKM_OK;
}

static bkm_net_engine_t engine_of(const bkm_wl_t *wl)
{
    return wl->be == BKM_BACKEND_ONEDNN ? BKM_NET_ONEDNN : BKM_NET_NATIVE;
}

int bkm__wl_net_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_net_t net;
    return net_of(wl, &net, err);
}

double bkm__wl_net_bytes(const bkm_wl_t *wl)
{
    bkm_net_t net;
    if (net_of(wl, &net, NULL) < 0)
        return 0.0;
    return bkm_net_bytes(&net, engine_of(wl));
}

/* Same values for every engine: input ~ N(0, 1), labels uniform in [0, classes), weights and biases
 * ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as PyTorch's default initialisation. */
static void seed_exec(bkm_net_exec_t *ex, uint64_t seed)
{
    const bkm_net_t *net = bkm_net_exec_net(ex);
    size_t n;
    float *in = bkm_net_exec_input(ex, &n), *p = bkm_net_exec_params(ex, NULL);
    int32_t *labels = bkm_net_exec_labels(ex, NULL);
    bkm__wl_fill_normal(in, n, seed, STREAM_INPUT);
    for (int64_t i = 0; i < net->d.mb; i++)
        labels[i] = (int32_t)(bkm__wl_hash(seed, STREAM_LABELS, (uint64_t)i) % (uint64_t)net->classes);
    for (int i = 0; i < net->d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        float bound;
        if (!li->n_wei)
            continue;
        bound = (float)(1.0 / sqrt((double)(li->n_wei / li->n_bias)));
        bkm__wl_fill_uniform(p + li->wei_off, (size_t)li->n_wei, bound, seed, STREAM_PARAM(i, 0));
        bkm__wl_fill_uniform(p + li->bias_off, (size_t)li->n_bias, bound, seed, STREAM_PARAM(i, 1));
    }
}

int bkm__wl_net_create_with(bkm_wl_t *wl, const bkm_net_desc_t *d, int timing,
                            void (*seed)(bkm_net_exec_t *ex, uint64_t seed), bkm_err_t *err)
{
    wl_net_t *a = bkm_calloc(1, sizeof *a);
    int rc;
    if (!a)
        return bkm_err_set(err, BKM_ENOMEM, "%s: out of memory", wl->e->info.name);
    wl->priv = a;
    if ((rc = bkm_net_init(&a->net, d, err)) < 0)
        return bkm_err_prefix(err, "%s", wl->e->info.name);
    if ((rc = bkm_net_exec_create(&a->ex, &a->net, engine_of(wl), &wl->kp, err)) < 0)
        goto fail;
    seed(a->ex, wl->seed);
    if ((rc = bkm_net_exec_prepare(a->ex, err)) < 0)
        goto fail;
    bkm_net_exec_set_timing(a->ex, timing);
    snprintf(wl->impl, sizeof wl->impl, "%s", bkm_net_exec_impl(a->ex));
    return BKM_OK;
fail:
    return bkm_err_prefix(err, "%s (%s)", wl->e->info.name, bkm_kern_backend_name(wl->be));
}

int bkm__wl_net_create(bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_net_desc_t d;
    int rc;
    memset(&d, 0, sizeof d);
    if ((rc = wl->e->net_table(wl, &d, err)) < 0)
        return rc;
    return bkm__wl_net_create_with(wl, &d, bkm__wl_int(wl, "layers") != 0, seed_exec, err);
}

int bkm__wl_net_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    wl_net_t *a = wl->priv;
    bkm_net_step_t st;
    int rc;
    if ((rc = bkm_net_exec_step(a->ex, &st, err)) < 0)
        return rc;
    if (wl->runs == 0) /* the per-layer table leaves out the first (cold) step */
        bkm_net_exec_reset_times(a->ex);
    s->fwd_ms = st.fwd_ms;
    s->bwd_ms = st.bwd_ms;
    s->update_ms = st.update_ms;
    s->loss = st.loss;
    s->ms = s->fwd_ms + s->bwd_ms + s->update_ms;
    return BKM_OK;
}

bkm_net_exec_t *bkm__wl_net_exec(const bkm_wl_t *wl)
{
    const wl_net_t *a = wl->priv;
    return a ? a->ex : NULL;
}

int bkm__wl_net_check(bkm_wl_t *wl, double *value, bkm_err_t *err)
{
    if (!isfinite(wl->first_loss))
        return bkm_err_set(err, BKM_EVERIFY, "%s: first-iteration loss is not finite (%g)", wl->e->info.name,
                           wl->first_loss);
    *value = wl->first_loss;
    return BKM_OK;
}

double bkm__wl_net_flops(const bkm_wl_t *wl)
{
    const wl_net_t *a = wl->priv;
    return a->net.flops_train;
}

void bkm__wl_net_destroy(bkm_wl_t *wl)
{
    wl_net_t *a = wl->priv;
    bkm_net_exec_destroy(a->ex);
    bkm_free(a);
    wl->priv = NULL;
}

int bkm__wl_net_layers_json(const bkm_wl_t *wl, bkm_json_w_t *w)
{
    const wl_net_t *a = wl->priv;
    long steps = 0;
    if (!a || !a->ex || bkm__wl_int(wl, "layers") == 0)
        return 0;
    bkm_json_arr_begin(w);
    for (int i = 0; i < a->net.d.n_layers; i++) {
        for (int d = 0; d < BKM_NET_NDIR; d++) {
            double ms = bkm_net_exec_layer_ms(a->ex, i, (bkm_net_dir_t)d, &steps), fl = a->net.li[i].flops[d];
            if (ms <= 0.0)
                continue;
            bkm_json_obj_begin(w);
            bkm_json_key(w, "layer");
            bkm_json_str(w, a->net.d.layer[i].name);
            bkm_json_key(w, "kind");
            bkm_json_str(w, bkm_net_kind_name(a->net.d.layer[i].kind));
            bkm_json_key(w, "direction");
            bkm_json_str(w, bkm_net_dir_name((bkm_net_dir_t)d));
            bkm_json_key(w, "ms");
            bkm_json_double(w, ms);
            bkm_json_key(w, "gflops");
            if (fl > 0.0)
                bkm_json_double(w, fl / (ms * 1e-3) * 1e-9);
            else
                bkm_json_null(w);
            bkm_json_key(w, "steps");
            bkm_json_int(w, steps);
            bkm_json_obj_end(w);
        }
    }
    bkm_json_arr_end(w);
    return 1;
}
