/* SPDX-License-Identifier: MIT */
/* `conv3d`: the NERSC conv3d seed network (docs/workloads.md §5, berkely.py) as a table: forward, the
 * loss (log-softmax over the batch, NLL) and backward per iteration, no update; or, with
 * shape=<benchdnn 3-D descriptor>, one conv3d layer in every direction (forward, backward-data,
 * backward-weights), timed on its own inside a minimal table (the layer, an FC, the
 * loss over two classes), so both backends run it through the same executors. */
#include <string.h>

#include "wl_int.h"

static const bkm_wl_param_t c3_own[] = {
    {"backend", BKM_WL_ENUM, "native", 0, 0, 1, "native|onednn",
     "kernel implementation: native (vol2col + this suite's SGEMM) or onednn (oneDNN 2.6 primitives)", 0},
    {"shape", BKM_WL_STR, "seed", 0, 0, 1, NULL,
     "'seed' (the berkely.py network: 4x1x35x35x20, four 3^3 convolutions, two pools, two FC) or a benchdnn "
     "3-D descriptor for one layer, e.g. mb4ic64id33ih33iw18oc64kd3 (cubic kernel, stride and padding)",
     0},
    {"batch", BKM_WL_INT, "0", 0, 256, 1, NULL, "samples per iteration; 0 keeps the seed's 4 or the descriptor's mb",
     0},
    {"layers", BKM_WL_INT, "0", 0, 1, 1, NULL,
     "1: time every layer and direction and add the per-layer table (layer, direction, ms, GFLOP/s) to the "
     "result JSON",
     0},
};

static size_t c3_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_conv3d_params(&n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

static int single_layer(const bkm_wl_t *wl)
{
    return strcmp(bkm__wl_val(wl, "shape"), "seed") != 0;
}

static int c3_table(const bkm_wl_t *wl, bkm_net_desc_t *d, bkm_err_t *err)
{
    const char *shape = bkm__wl_val(wl, "shape");
    int64_t batch = bkm__wl_int(wl, "batch");
    bkm_conv3d_desc_t c;
    int rc;
    if (!single_layer(wl)) {
        bkm_net_desc_conv3d_seed(d, batch ? batch : 4);
        return BKM_OK;
    }
    if ((rc = bkm_kern_conv3d_desc_parse(shape, batch, &c, err)) < 0)
        return bkm_err_prefix(err, "conv3d: parameter shape='%s'", shape);
    if (c.kh != c.kd || c.kw != c.kd || c.sh != c.sd || c.sw != c.sd || c.ph != c.pd || c.pw != c.pd)
        return bkm_err_set(err, BKM_EINVAL, "conv3d: parameter shape='%s': the network layers take a cubic kernel, "
                           "stride and padding (kd%lld kh%lld kw%lld sd%lld sh%lld sw%lld pd%lld ph%lld pw%lld)", shape,
                           (long long)c.kd, (long long)c.kh, (long long)c.kw, (long long)c.sd, (long long)c.sh,
                           (long long)c.sw, (long long)c.pd, (long long)c.ph, (long long)c.pw);
    memset(d, 0, sizeof *d);
    d->mb = c.mb;
    d->c = c.ic;
    d->d = c.id;
    d->h = c.ih;
    d->w = c.iw;
    d->lr = 0.0f;
    d->grad_input = 1; /* the layer runs backward-data too */
    bkm_net_desc_add(d, BKM_NET_CONV3D, "conv3d", c.oc, c.kd, c.sd, c.pd);
    bkm_net_desc_add(d, BKM_NET_FC, "head", 2, 0, 0, 0); /* two classes: a loss that depends on the layer */
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
    return BKM_OK;
}

static int c3_create(bkm_wl_t *wl, bkm_err_t *err)
{
    int rc = bkm__wl_net_create(wl, err);
    if (rc == BKM_OK && single_layer(wl)) /* the sample is the layer's own time */
        bkm_net_exec_set_timing(bkm__wl_net_exec(wl), 1);
    return rc;
}

static int c3_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    bkm_net_exec_t *ex = bkm__wl_net_exec(wl);
    int rc = bkm__wl_net_run(wl, s, err);
    if (rc < 0 || !single_layer(wl))
        return rc;
    s->fwd_ms = bkm_net_exec_last_ms(ex, 0, BKM_NET_FWD);
    s->bwd_ms = bkm_net_exec_last_ms(ex, 0, BKM_NET_BWD_D) + bkm_net_exec_last_ms(ex, 0, BKM_NET_BWD_W);
    s->update_ms = 0.0;
    s->ms = s->fwd_ms + s->bwd_ms;
    return BKM_OK;
}

static double c3_flops(const bkm_wl_t *wl)
{
    const bkm_net_t *net = bkm_net_exec_net(bkm__wl_net_exec(wl));
    if (!single_layer(wl))
        return net->flops_train;
    return net->li[0].flops[BKM_NET_FWD] + net->li[0].flops[BKM_NET_BWD_D] + net->li[0].flops[BKM_NET_BWD_W];
}

const bkm_wl_entry_t bkm__wl_conv3d = {
    {"conv3d",
     "The NERSC conv3d seed network (MlWoo/PyTorch-benchmark berkely.py, docs/workloads.md §5): input 4x1x35x35x20, "
     "conv3d 1->64->64 (3^3), max pool 2, conv3d 64->128->128, max pool 2, FC 6400->512->512, log-softmax over "
     "the batch dimension + NLL loss; one iteration = forward + loss + backward (conv3d_1 without bwd-data), no "
     "optimizer step, 51.96 GFLOP per 4-sample iteration. With shape=<benchdnn 3-D descriptor> one conv3d "
     "layer: forward + backward-data + backward-weights, the layer's own time. Check value: the first "
     "iteration's loss.",
     "loss"},
    c3_own,
    sizeof c3_own / sizeof c3_own[0],
    c3_tunables,
    bkm__wl_net_validate,
    bkm__wl_net_bytes,
    c3_create,
    c3_run,
    bkm__wl_net_check,
    c3_flops,
    bkm__wl_net_destroy,
    bkm__wl_net_layers_json,
    c3_table,
    NULL,
};
