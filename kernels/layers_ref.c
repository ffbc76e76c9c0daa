/* SPDX-License-Identifier: MIT */
/* Naive reference layers (sequential, double accumulation where it matters): the oracles for
 * the native layers and the oneDNN layers. */
#include "kernels_int.h"

#include <math.h>
#include <string.h>

/* First maximum of the window of output (oy, ox), row-major scan; index inside the plane. */
static int64_t ref_window_argmax(const bkm_pool_desc_t *d, const float *in, int64_t oy, int64_t ox)
{
    int64_t bi = -1;
    for (int64_t r = 0; r < d->kh; r++)
        for (int64_t s = 0; s < d->kw; s++) {
            const int64_t y = oy * d->sh - d->ph + r, x = ox * d->sw - d->pw + s;
            if (y < 0 || y >= d->ih || x < 0 || x >= d->iw)
                continue;
            if (bi < 0 || in[y * d->iw + x] > in[bi])
                bi = y * d->iw + x;
        }
    return bi;
}

void bkm_kern_maxpool_ref_fwd(const bkm_pool_desc_t *d, const float *src, float *dst)
{
    for (int64_t pl = 0; pl < d->mb * d->c; pl++)
        for (int64_t oy = 0; oy < d->oh; oy++)
            for (int64_t ox = 0; ox < d->ow; ox++) {
                const float *in = src + pl * d->ih * d->iw;
                dst[(pl * d->oh + oy) * d->ow + ox] = in[ref_window_argmax(d, in, oy, ox)];
            }
}

void bkm_kern_maxpool_ref_bwd(const bkm_pool_desc_t *d, const float *src, const float *diff_dst, float *diff_src)
{
    memset(diff_src, 0, (size_t)(d->mb * d->c * d->ih * d->iw) * sizeof(float));
    for (int64_t pl = 0; pl < d->mb * d->c; pl++)
        for (int64_t oy = 0; oy < d->oh; oy++)
            for (int64_t ox = 0; ox < d->ow; ox++) {
                const float *in = src + pl * d->ih * d->iw;
                diff_src[pl * d->ih * d->iw + ref_window_argmax(d, in, oy, ox)] +=
                    diff_dst[(pl * d->oh + oy) * d->ow + ox];
            }
}

void bkm_kern_relu_ref_fwd(size_t n, const float *src, float *dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
}

void bkm_kern_relu_ref_bwd(size_t n, const float *dst, const float *diff_dst, float *diff_src)
{
    for (size_t i = 0; i < n; i++)
        diff_src[i] = dst[i] > 0.0f ? diff_dst[i] : 0.0f;
}

void bkm_kern_fc_ref_fwd(const bkm_fc_desc_t *d, const float *src, const float *wei, const float *bias, float *dst)
{
    for (int64_t i = 0; i < d->mb; i++)
        for (int64_t o = 0; o < d->out; o++) {
            double acc = (d->has_bias && bias != NULL) ? bias[o] : 0.0;
            for (int64_t k = 0; k < d->in; k++)
                acc += (double)src[i * d->in + k] * (double)wei[o * d->in + k];
            dst[i * d->out + o] = (float)acc;
        }
}

void bkm_kern_fc_ref_bwd_data(const bkm_fc_desc_t *d, const float *diff_dst, const float *wei, float *diff_src)
{
    for (int64_t i = 0; i < d->mb; i++)
        for (int64_t k = 0; k < d->in; k++) {
            double acc = 0.0;
            for (int64_t o = 0; o < d->out; o++)
                acc += (double)diff_dst[i * d->out + o] * (double)wei[o * d->in + k];
            diff_src[i * d->in + k] = (float)acc;
        }
}

void bkm_kern_fc_ref_bwd_weights(const bkm_fc_desc_t *d, const float *src, const float *diff_dst, float *diff_wei,
                                 float *diff_bias)
{
    for (int64_t o = 0; o < d->out; o++) {
        for (int64_t k = 0; k < d->in; k++) {
            double acc = 0.0;
            for (int64_t i = 0; i < d->mb; i++)
                acc += (double)diff_dst[i * d->out + o] * (double)src[i * d->in + k];
            diff_wei[o * d->in + k] = (float)acc;
        }
        if (d->has_bias && diff_bias != NULL) {
            double acc = 0.0;
            for (int64_t i = 0; i < d->mb; i++)
                acc += diff_dst[i * d->out + o];
            diff_bias[o] = (float)acc;
        }
    }
}

void bkm_kern_dropout_ref_fwd(size_t n, float p, uint64_t seed, const float *src, float *dst)
{
    for (size_t i = 0; i < n; i++) {
        const int keep = p == 0.0f || bkm_kern_dropout_keep(seed, i, p);
        dst[i] = keep ? (float)((double)src[i] / (1.0 - (double)p)) : 0.0f;
    }
}

int bkm_kern_softmax_xent_ref_fwd(int64_t mb, int64_t nc, const float *logits, const int32_t *labels, float *prob,
                                  double *loss, bkm_err_t *err)
{
    double total = 0.0;
    if (mb <= 0 || nc <= 0)
        return bkm_err_set(err, BKM_EINVAL, "softmax_xent: sizes mb%lld nc%lld must be positive", (long long)mb,
                           (long long)nc);
    for (int64_t i = 0; i < mb; i++) {
        double mx = -INFINITY, sum = 0.0;
        if (labels[i] < 0 || labels[i] >= nc)
            return bkm_err_set(err, BKM_EINVAL, "softmax_xent: label[%lld]=%d is outside [0, %lld)", (long long)i,
                               (int)labels[i], (long long)nc);
        for (int64_t j = 0; j < nc; j++)
            mx = fmax(mx, logits[i * nc + j]);
        for (int64_t j = 0; j < nc; j++)
            sum += exp(logits[i * nc + j] - mx);
        for (int64_t j = 0; j < nc && prob != NULL; j++)
            prob[i * nc + j] = (float)(exp(logits[i * nc + j] - mx) / sum);
        total -= (logits[i * nc + labels[i]] - mx) - log(sum);
    }
    if (loss != NULL)
        *loss = total / (double)mb;
    return BKM_OK;
}

void bkm_kern_sgd_ref_step(size_t n, float *w, const float *g, float *v, float lr, float mu, float wd)
{
    for (size_t i = 0; i < n; i++) {
        double gi = (double)g[i] + (double)wd * w[i];
        if (mu != 0.0f && v != NULL) {
            v[i] = (float)((double)mu * v[i] + gi);
            gi = v[i];
        }
        w[i] = (float)(w[i] - (double)lr * gi);
    }
}
