/* SPDX-License-Identifier: MIT */
/* `lstm`: the seed's LSTM benchmark (workloads.md §6, xhzhao LSTM.py): an L-layer unidirectional
 * LSTM over an input (T, N, I), random initial states; inference = the forward pass, training =
 * forward + L1 loss against a seeded random target + backward through time (no optimizer step).
 * Native (kernels/lstm.c) or oneDNN (kernels/lstm_onednn.c) on the same seeded inputs. */
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

typedef struct wl_lstm {
    bkm_lstm_desc_t d;
    int training;
    bkm_kern_lstm_t *nat;
    bkm_kern_lstm_onednn_t *odn;
    float *x, *h0, *c0, *w, *y, *target, *dy, *dx, *dw;
} wl_lstm_t;

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

static void lstm_destroy(bkm_wl_t *wl)
{
    wl_lstm_t *a = wl->priv;
    if (!a)
        return;
    bkm_kern_lstm_destroy(a->nat);
    bkm_kern_lstm_onednn_destroy(a->odn);
    float *bufs[] = {a->x, a->h0, a->c0, a->w, a->y, a->target, a->dy, a->dx, a->dw};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        bkm_free(bufs[k]);
    bkm_free(a);
    wl->priv = NULL;
}

static int lstm_create(bkm_wl_t *wl, bkm_err_t *err)
{
    wl_lstm_t *a = bkm_calloc(1, sizeof *a);
    int rc;
    if (!a)
        return bkm_err_set(err, BKM_ENOMEM, "lstm: out of memory");
    wl->priv = a;
    if ((rc = parse_shape(wl, &a->d, err)) < 0)
        goto out;
    a->training = strcmp(bkm__wl_val(wl, "mode"), "training") == 0;
    const bkm_lstm_desc_t *d = &a->d;
    const size_t nx = (size_t)(d->t * d->n * d->i), ny = (size_t)(d->t * d->n * d->h),
                 ns = (size_t)(d->layers * d->n * d->h), nw = bkm_kern_lstm_param_count(d);
    a->x = bkm_aligned_alloc(64, nx * sizeof(float));
    a->h0 = bkm_aligned_alloc(64, ns * sizeof(float));
    a->c0 = bkm_aligned_alloc(64, ns * sizeof(float));
    a->w = bkm_aligned_alloc(64, nw * sizeof(float));
    a->y = bkm_aligned_alloc(64, ny * sizeof(float));
    a->target = bkm_aligned_alloc(64, ny * sizeof(float));
    a->dy = bkm_aligned_alloc(64, ny * sizeof(float));
    a->dx = bkm_aligned_alloc(64, nx * sizeof(float));
    a->dw = bkm_aligned_alloc(64, nw * sizeof(float));
    if (!a->x || !a->h0 || !a->c0 || !a->w || !a->y || !a->target || !a->dy || !a->dx || !a->dw) {
        rc = bkm_err_set(err, BKM_ENOMEM, "lstm: cannot allocate the input, output and parameter buffers");
        goto out;
    }
    /* same values on every backend: x uniform [-1, 1), h0, c0 and the target normal (torch.randn),
     * weights uniform [-1/sqrt(H), 1/sqrt(H)) (nn.LSTM's initialisation) */
    bkm__wl_fill_uniform(a->x, nx, 1.0f, wl->seed, 1);
    bkm__wl_fill_normal(a->h0, ns, wl->seed, 2);
    bkm__wl_fill_normal(a->c0, ns, wl->seed, 3);
    bkm__wl_fill_uniform(a->w, nw, 1.0f / sqrtf((float)d->h), wl->seed, 4);
    bkm__wl_fill_normal(a->target, ny, wl->seed, 5);
    memset(a->y, 0, ny * sizeof(float));
    memset(a->dy, 0, ny * sizeof(float));
    memset(a->dx, 0, nx * sizeof(float));
    memset(a->dw, 0, nw * sizeof(float));
    if (wl->be == BKM_BACKEND_ONEDNN) {
        if ((rc = bkm_kern_lstm_onednn_create(&a->odn, d, a->training, err)) < 0)
            goto out;
        snprintf(wl->impl, sizeof wl->impl, "%s", bkm_kern_lstm_onednn_impl(a->odn));
    } else {
        if ((rc = bkm_kern_lstm_create(&a->nat, d, &wl->kp, err)) < 0)
            goto out;
        snprintf(wl->impl, sizeof wl->impl, "%s", bkm_kern_lstm_impl(a->nat));
    }
    rc = BKM_OK;
out:
    if (rc < 0) {
        lstm_destroy(wl);
        bkm_err_prefix(err, "lstm");
    }
    return rc;
}

/* L1 loss (mean |y - target|) and its gradient dy = sign(y - target) / count. */
static double l1_loss(const float *y, const float *target, float *dy, size_t n)
{
    double sum = 0.0;
    const float inv = 1.0f / (float)n;
    for (size_t i = 0; i < n; i++) {
        float dlt = y[i] - target[i];
        sum += fabsf(dlt);
        dy[i] = dlt > 0.0f ? inv : dlt < 0.0f ? -inv : 0.0f;
    }
    return sum / (double)n;
}

static int lstm_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    wl_lstm_t *a = wl->priv;
    const bkm_lstm_desc_t *d = &a->d;
    const size_t ny = (size_t)(d->t * d->n * d->h);
    int rc;
    uint64_t t0 = bkm_now_ns();
    if (a->odn)
        rc = bkm_kern_lstm_onednn_fwd(a->odn, a->x, a->h0, a->c0, a->w, a->y, NULL, NULL, err);
    else
        rc = bkm_kern_lstm_fwd(a->nat, a->x, a->h0, a->c0, a->w, a->y, NULL, NULL, err);
    if (rc < 0)
        return rc;
    uint64_t t1 = bkm_now_ns();
    s->loss = l1_loss(a->y, a->target, a->dy, ny);
    if (a->training) {
        if (a->odn)
            rc = bkm_kern_lstm_onednn_bwd(a->odn, a->x, a->w, a->dy, NULL, NULL, a->dx, NULL, NULL, a->dw, err);
        else
            rc = bkm_kern_lstm_bwd(a->nat, a->x, a->w, a->dy, NULL, NULL, a->dx, NULL, NULL, a->dw, err);
        if (rc < 0)
            return rc;
    }
    uint64_t t2 = bkm_now_ns();
    s->fwd_ms = (double)(t1 - t0) / 1e6;
    s->bwd_ms = (double)(t2 - t1) / 1e6;
    s->update_ms = 0.0;
    s->ms = s->fwd_ms + s->bwd_ms;
    return BKM_OK;
}

static int lstm_check(bkm_wl_t *wl, double *value, bkm_err_t *err)
{
    if (!isfinite(wl->first_loss))
        return bkm_err_set(err, BKM_EVERIFY, "lstm: first-iteration loss is not finite (%g)", wl->first_loss);
    *value = wl->first_loss;
    return BKM_OK;
}

static double lstm_flops(const bkm_wl_t *wl)
{
    const wl_lstm_t *a = wl->priv;
    return bkm_kern_lstm_flops(&a->d, a->training);
}

/* sentences per iteration: the batch N (sentences/s = N / iteration time, as the seed's SPS) */
static double lstm_items(const bkm_wl_t *wl, const char **unit)
{
    const wl_lstm_t *a = wl->priv;
    *unit = "sentences";
    return (double)a->d.n;
}

const bkm_wl_entry_t bkm__wl_lstm = {
    {"lstm",
     "The seed's LSTM benchmark (xhzhao/pytorch-rnn-benchmark LSTM.py, workloads.md §6): an L-layer "
     "unidirectional LSTM (gates i, f, g, o) over an input of T steps x N sentences x I features, random "
     "initial states. One iteration: inference = the forward pass; training = forward + L1 loss against a "
     "seeded random target + backward through time (data and weight gradients, no optimizer step). FLOPs "
     "(workloads.md §2): forward sum over layers of T*2*N*4H*(I_l+H), training 3x. Sentences/s = N / the "
     "iteration time. Check value: the first iteration's L1 loss.",
     "loss"},
    lstm_own,
    sizeof lstm_own / sizeof lstm_own[0],
    lstm_tunables,
    lstm_validate,
    lstm_bytes,
    lstm_create,
    lstm_run,
    lstm_check,
    lstm_flops,
    lstm_destroy,
    NULL,
    NULL,
    lstm_items,
};
