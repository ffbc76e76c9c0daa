/* SPDX-License-Identifier: MIT */
/* `alexnet`: one training step of torchvision AlexNet (docs/workloads.md §3): forward, mean cross-
 * entropy over softmax, backward (no bwd-data for conv1), plain SGD (lr 0.01, no momentum), eval
 * mode (dropout off). The network is the table bkm_net_desc_alexnet; wl_net.c runs it on the
 * executor of the chosen backend. */
#include "wl_int.h"

static const bkm_wl_param_t alex_own[] = {
    {"backend", BKM_WL_ENUM, "native", 0, 0, 1, "native|onednn",
     "kernel implementation: native (this suite's kernels) or onednn (oneDNN 2.6 primitives)", 0},
    {"batch", BKM_WL_INT, "128", 1, 1024, 1, NULL, "images per training step (224x224x3 each)", 0},
    {"layers", BKM_WL_INT, "0", 0, 1, 1, NULL,
     "1: time every layer and direction and add the per-layer table (layer, direction, ms, GFLOP/s) to the "
     "result JSON",
     0},
};

/* The conv2d tunables apply to all five convolutions; the FC layers use the GEMM defaults. */
static size_t alex_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_conv2d_params(&n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

static int alex_table(const bkm_wl_t *wl, bkm_net_desc_t *d, bkm_err_t *err)
{
    (void)err;
    bkm_net_desc_alexnet(d, bkm__wl_int(wl, "batch"));
    return BKM_OK;
}

/* The table's own checks, then the conv2d kernel's rules: the native engine runs every
 * convolution with the conv2d tunables (the ISA's micro-tile, nt_jc against the threads). */
static int alex_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    int rc = bkm__wl_net_validate(wl, err);
    if (rc == BKM_OK && wl->be == BKM_BACKEND_NATIVE &&
        bkm_kern_conv2d_params_check(&wl->kp, bkm__wl_int(wl, "batch"), wl->n_threads, err) < 0)
        return bkm_err_prefix(err, "alexnet");
    return rc;
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
    bkm__wl_net_bytes,
    bkm__wl_net_create,
    bkm__wl_net_run,
    bkm__wl_net_check,
    bkm__wl_net_flops,
    bkm__wl_net_destroy,
    bkm__wl_net_layers_json,
    alex_table,
    NULL,
};
