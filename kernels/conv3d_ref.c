/* SPDX-License-Identifier: MIT */
/* Naive conv3d and 3-D max pooling (double accumulation, direct loops): the oracles. */
#include "bkm/kernels.h"

#include <float.h>
#include <string.h>

#define IDX5(n, c, z, y, x, C, D, H, W) (((((n) * (C) + (c)) * (D) + (z)) * (H) + (y)) * (W) + (x))

void bkm_kern_conv3d_ref_fwd(const bkm_conv3d_desc_t *d, const float *src, const float *wei, const float *bias,
                             float *dst)
{
    for (int64_t n = 0; n < d->mb; n++)
        for (int64_t k = 0; k < d->oc; k++)
            for (int64_t o = 0; o < d->od; o++)
                for (int64_t p = 0; p < d->oh; p++)
                    for (int64_t q = 0; q < d->ow; q++) {
                        double acc = bias && d->has_bias ? (double)bias[k] : 0.0;
                        for (int64_t c = 0; c < d->ic; c++)
                            for (int64_t t = 0; t < d->kd; t++)
                                for (int64_t r = 0; r < d->kh; r++)
                                    for (int64_t s = 0; s < d->kw; s++) {
                                        int64_t z = o * d->sd - d->pd + t, y = p * d->sh - d->ph + r,
                                                x = q * d->sw - d->pw + s;
                                        if (z < 0 || z >= d->id || y < 0 || y >= d->ih || x < 0 || x >= d->iw)
                                            continue;
                                        acc += (double)src[IDX5(n, c, z, y, x, d->ic, d->id, d->ih, d->iw)] *
                                               (double)wei[IDX5(k, c, t, r, s, d->ic, d->kd, d->kh, d->kw)];
                                    }
                        dst[IDX5(n, k, o, p, q, d->oc, d->od, d->oh, d->ow)] = (float)acc;
                    }
}

void bkm_kern_conv3d_ref_bwd_data(const bkm_conv3d_desc_t *d, const float *diff_dst, const float *wei,
                                  float *diff_src)
{
    for (int64_t n = 0; n < d->mb; n++)
        for (int64_t c = 0; c < d->ic; c++)
            for (int64_t z = 0; z < d->id; z++)
                for (int64_t y = 0; y < d->ih; y++)
                    for (int64_t x = 0; x < d->iw; x++) {
                        double acc = 0.0;
                        for (int64_t k = 0; k < d->oc; k++)
                            for (int64_t t = 0; t < d->kd; t++)
                                for (int64_t r = 0; r < d->kh; r++)
                                    for (int64_t s = 0; s < d->kw; s++) {
                                        int64_t oz = z + d->pd - t, oy = y + d->ph - r, ox = x + d->pw - s;
                                        if (oz < 0 || oy < 0 || ox < 0 || oz % d->sd || oy % d->sh || ox % d->sw)
                                            continue;
                                        oz /= d->sd, oy /= d->sh, ox /= d->sw;
                                        if (oz >= d->od || oy >= d->oh || ox >= d->ow)
                                            continue;
                                        acc += (double)diff_dst[IDX5(n, k, oz, oy, ox, d->oc, d->od, d->oh, d->ow)] *
                                               (double)wei[IDX5(k, c, t, r, s, d->ic, d->kd, d->kh, d->kw)];
                                    }
                        diff_src[IDX5(n, c, z, y, x, d->ic, d->id, d->ih, d->iw)] = (float)acc;
                    }
}

void bkm_kern_conv3d_ref_bwd_weights(const bkm_conv3d_desc_t *d, const float *src, const float *diff_dst,
                                     float *diff_wei, float *diff_bias)
{
    for (int64_t k = 0; k < d->oc; k++) {
        for (int64_t c = 0; c < d->ic; c++)
            for (int64_t t = 0; t < d->kd; t++)
                for (int64_t r = 0; r < d->kh; r++)
                    for (int64_t s = 0; s < d->kw; s++) {
                        double acc = 0.0;
                        for (int64_t n = 0; n < d->mb; n++)
                            for (int64_t o = 0; o < d->od; o++)
                                for (int64_t p = 0; p < d->oh; p++)
                                    for (int64_t q = 0; q < d->ow; q++) {
                                        int64_t z = o * d->sd - d->pd + t, y = p * d->sh - d->ph + r,
                                                x = q * d->sw - d->pw + s;
                                        if (z < 0 || z >= d->id || y < 0 || y >= d->ih || x < 0 || x >= d->iw)
                                            continue;
                                        acc += (double)src[IDX5(n, c, z, y, x, d->ic, d->id, d->ih, d->iw)] *
                                               (double)diff_dst[IDX5(n, k, o, p, q, d->oc, d->od, d->oh, d->ow)];
                                    }
                        diff_wei[IDX5(k, c, t, r, s, d->ic, d->kd, d->kh, d->kw)] = (float)acc;
                    }
        if (diff_bias && d->has_bias) {
            double acc = 0.0;
            for (int64_t n = 0; n < d->mb; n++)
                for (int64_t i = 0; i < d->od * d->oh * d->ow; i++)
                    acc += (double)diff_dst[(n * d->oc + k) * d->od * d->oh * d->ow + i];
            diff_bias[k] = (float)acc;
        }
    }
}

/* First maximum of window @p o of volume @p s (row-major scan), as an index into the volume. */
static int64_t window_argmax(const bkm_pool3d_desc_t *d, const float *s, int64_t oz, int64_t oy, int64_t ox)
{
    int64_t arg = -1;
    for (int64_t z = oz * d->s - d->p; z < oz * d->s - d->p + d->k; z++)
        for (int64_t y = oy * d->s - d->p; y < oy * d->s - d->p + d->k; y++)
            for (int64_t x = ox * d->s - d->p; x < ox * d->s - d->p + d->k; x++) {
                int64_t i = (z * d->ih + y) * d->iw + x;
                if (z < 0 || z >= d->id || y < 0 || y >= d->ih || x < 0 || x >= d->iw)
                    continue;
                if (arg < 0 || s[i] > s[arg])
                    arg = i;
            }
    return arg;
}

void bkm_kern_maxpool3d_ref_fwd(const bkm_pool3d_desc_t *d, const float *src, float *dst)
{
    const int64_t vin = d->id * d->ih * d->iw, vout = d->od * d->oh * d->ow;
    for (int64_t nc = 0; nc < d->mb * d->c; nc++)
        for (int64_t oz = 0; oz < d->od; oz++)
            for (int64_t oy = 0; oy < d->oh; oy++)
                for (int64_t ox = 0; ox < d->ow; ox++)
                    dst[nc * vout + (oz * d->oh + oy) * d->ow + ox] =
                        src[nc * vin + window_argmax(d, src + nc * vin, oz, oy, ox)];
}

void bkm_kern_maxpool3d_ref_bwd(const bkm_pool3d_desc_t *d, const float *src, const float *diff_dst,
                                float *diff_src)
{
    const int64_t vin = d->id * d->ih * d->iw, vout = d->od * d->oh * d->ow;
    memset(diff_src, 0, (size_t)(d->mb * d->c * vin) * sizeof(float));
    for (int64_t nc = 0; nc < d->mb * d->c; nc++)
        for (int64_t oz = 0; oz < d->od; oz++)
            for (int64_t oy = 0; oy < d->oh; oy++)
                for (int64_t ox = 0; ox < d->ow; ox++)
                    diff_src[nc * vin + window_argmax(d, src + nc * vin, oz, oy, ox)] +=
                        diff_dst[nc * vout + (oz * d->oh + oy) * d->ow + ox];
}
