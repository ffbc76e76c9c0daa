/* SPDX-License-Identifier: MIT */
/* `lstm`: the seed's LSTM benchmark (docs/workloads.md §6, xhzhao LSTM.py): an L-layer unidirectional
 * LSTM over an input (T, N, I), random initial states; inference = the forward pass, training =
 * forward + L1 loss against a seeded random target + backward through time (no optimizer step).
 * The network is a table (bkm_net_desc_lstm_seed: sequence input, LSTM stack, L1 loss) run by the
 * network executor (wl_net.c's hooks) on the native engine (kernels/lstm.c) or the oneDNN one
 * (kernels/lstm_onednn.c), seeded identically; the hooks here only add the parameters. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wl_int.h"

static const bkm_wl_param_t lstm_own[] = {
    {"backend", BKM_WL_ENUM, "native", 0, 0, 1, "native|onednn",
     "kernel implementation: native (fused gate pass + this suite's SGEMM) or onednn (oneDNN 2.6 vanilla LSTM)", 0},
    {"shape", BKM_WL_STR, "64,50,500,500", 0, 0, 1, NULL,
     "N,T,I,H: batch, time steps, input size, hidden size (the seed's default 64,50,500,500)", 0},
    {"layers", BKM_WL_INT, "1", 1, 16, 1, NULL, "stacked LSTM layers (layer l > 0 takes H inputs)", 0},
    {"mode", BKM_WL_ENUM, "training", 0, 0, 1, "inference|training",
     "inference: forward only; training: forward + L1 loss + backward through time (data and weight gradients)", 0},
};

static size_t lstm_tunables(bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    const bkm_param_desc_t *d = bkm_kern_lstm_params(&n);
    return bkm__wl_tunables_from(d, n, out, cap);
}

/* "N,T,I,H" -> d (with the layers parameter); BKM_EINVAL naming the value. */
static int parse_shape(const bkm_wl_t *wl, bkm_lstm_desc_t *d, bkm_err_t *err)
{
    const char *s = bkm__wl_val(wl, "shape");
    static const char *names[4] = {"N", "T", "I", "H"};
    long long v[4];
    char part[32];
    const char *p = s;
    for (int k = 0; k < 4; k++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((k < 3 && !end) || (k == 3 && end) || len == 0 || len >= sizeof part)
            return bkm_err_set(err, BKM_EINVAL, "lstm: parameter shape='%s': expected N,T,I,H (four integers)", s);
        memcpy(part, p, len);
        part[len] = '\0';
        if (bkm_parse_int(part, INT64_MIN, INT64_MAX, &v[k]) != BKM_OK)
            return bkm_err_set(err, BKM_EINVAL, "lstm: parameter shape='%s': %s='%s' is not an integer", s, names[k],
                               part);
        p = end ? end + 1 : p + len;
    }
    if (bkm_kern_lstm_desc_init(d, v[0], v[1], v[2], v[3], bkm__wl_int(wl, "layers"), err) < 0)
        return bkm_err_prefix(err, "parameter shape='%s'", s);
    return BKM_OK;
}

static int lstm_validate(const bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_lstm_desc_t d;
    return parse_shape(wl, &d, err);
}

/* Buffers of either backend (the larger, native: gates, states and gradient scratch) plus ours. */
static double lstm_bytes(const bkm_wl_t *wl)
{
    bkm_lstm_desc_t d;
    if (parse_shape(wl, &d, NULL) < 0)
        return 0.0;
    const double N = (double)d.n, T = (double)d.t, I = (double)d.i, H = (double)d.h, L = (double)d.layers;
    const double P = (double)bkm_kern_lstm_param_count(&d);
    const double kernel = L * T * N * 4 * H + 2 * L * (T + 1) * N * H + T * N * 4 * H + 2 * T * N * H + 2 * N * H;
    const double ours = 2 * T * N * I + 4 * T * N * H + 2 * L * N * H + 2 * P;
    return 4.0 * (kernel + ours + 2 * P) + 64.0 * 1048576.0;
}

/* Same values on every backend: x uniform [-1, 1), h0, c0 and the target normal (torch.randn),
 * weights uniform [-1/sqrt(H), 1/sqrt(H)) (nn.LSTM's initialisation); the labels stay 0 (unused). */
static void lstm_seed(bkm_net_exec_t *ex, uint64_t seed)
{
    const bkm_net_t *net = bkm_net_exec_net(ex);
    size_t nx, ns, nw, ny;
    float *x = bkm_net_exec_input(ex, &nx), *st = bkm_net_exec_state(ex, 0, &ns), *w = bkm_net_exec_params(ex, NULL),
          *target = bkm_net_exec_target(ex, &ny);
    nw = (size_t)net->li[0].n_wei;
    bkm__wl_fill_uniform(x, nx, 1.0f, seed, 1);
    bkm__wl_fill_normal(st, ns / 2, seed, 2);
    bkm__wl_fill_normal(st + ns / 2, ns / 2, seed, 3);
    bkm__wl_fill_uniform(w, nw, 1.0f / sqrtf((float)net->d.layer[0].out), seed, 4);
    bkm__wl_fill_normal(target, ny, seed, 5);
}

static int lstm_create(bkm_wl_t *wl, bkm_err_t *err)
{
    bkm_lstm_desc_t d;
    bkm_net_desc_t nd;
    int rc;
    if ((rc = parse_shape(wl, &d, err)) < 0)
        return bkm_err_prefix(err, "lstm");
    bkm_net_desc_lstm_seed(&nd, d.n, d.t, d.i, d.h, d.layers, strcmp(bkm__wl_val(wl, "mode"), "inference") == 0);
    return bkm__wl_net_create_with(wl, &nd, 0, lstm_seed, err);
}

/* sentences per iteration: the batch N (sentences/s = N / iteration time, as the seed's SPS) */
static double lstm_items(const bkm_wl_t *wl, const char **unit)
{
    const bkm_net_exec_t *ex = bkm__wl_net_exec(wl);
    *unit = "sentences";
    return ex ? (double)bkm_net_exec_net(ex)->d.mb : 0.0;
}

const bkm_wl_entry_t bkm__wl_lstm = {
    {"lstm",
     "The seed's LSTM benchmark (xhzhao/pytorch-rnn-benchmark LSTM.py, docs/workloads.md §6): an L-layer "
     "unidirectional LSTM (gates i, f, g, o) over an input of T steps x N sentences x I features, random "
     "initial states. One iteration: inference = the forward pass; training = forward + L1 loss against a "
     "seeded random target + backward through time (data and weight gradients, no optimizer step). FLOPs "
     "(docs/workloads.md §2): forward sum over layers of T*2*N*4H*(I_l+H), training 3x. Sentences/s = N / the "
     "iteration time. Check value: the first iteration's L1 loss.",
     "loss"},
    lstm_own,
    sizeof lstm_own / sizeof lstm_own[0],
    lstm_tunables,
    lstm_validate,
    lstm_bytes,
    lstm_create,
    bkm__wl_net_run,
    bkm__wl_net_check,
    bkm__wl_net_flops,
    bkm__wl_net_destroy,
    NULL,
    NULL,
    lstm_items,
};
