/* SPDX-License-Identifier: MIT */
/* im2col and its adjoint col2im for the GEMM-based conv2d, on a tile of output pixels so that the
 * column buffer fits in L2. Output pixels are walked row segment by row segment; stride-1 rows
 * become a clamped copy with zeroed edges. */
#include "kernels_int.h"

#include <string.h>

/* Range [t0, t1) of t in [0, len) whose input column ix = (ox + t) * sw - pw + s is inside [0, iw). */
static void valid_range(const bkm_conv2d_desc_t *d, int64_t ox, int64_t len, int64_t s, int64_t *t0, int64_t *t1)
{
    /* ix >= 0  <=>  (ox + t) * sw >= pw - s;  ix < iw  <=>  (ox + t) * sw < iw + pw - s. */
    int64_t lo = d->pw - s, hi = d->iw + d->pw - s;
    int64_t a = lo <= 0 ? 0 : (lo + d->sw - 1) / d->sw;   /* first ox+t with ix >= 0 */
    int64_t b = hi <= 0 ? 0 : (hi + d->sw - 1) / d->sw;   /* first ox+t with ix >= iw */
    a -= ox;
    b -= ox;
    *t0 = a < 0 ? 0 : (a > len ? len : a);
    *t1 = b < *t0 ? *t0 : (b > len ? len : b);
}

void bkm__kern_im2col(const bkm_conv2d_desc_t *d, const float *src, int64_t c0, int64_t c1, int64_t p0,
                      int64_t np, float *col)
{
    const int64_t plane = d->ih * d->iw;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t r = 0; r < d->kh; r++)
            for (int64_t s = 0; s < d->kw; s++) {
                float *row = col + ((c * d->kh + r) * d->kw + s) * np;
                const float *in_plane = src + c * plane;
                int64_t j = 0, p = p0;
                while (j < np) {
                    const int64_t oy = p / d->ow, ox = p % d->ow;
                    const int64_t len = (d->ow - ox < np - j) ? d->ow - ox : np - j;
                    const int64_t iy = oy * d->sh - d->ph + r;
                    float *o = row + j;
                    if (iy < 0 || iy >= d->ih) {
                        memset(o, 0, (size_t)len * sizeof(float));
                    } else {
                        const float *in = in_plane + iy * d->iw;
                        int64_t t0, t1;
                        valid_range(d, ox, len, s, &t0, &t1);
                        if (t0 > 0)
                            memset(o, 0, (size_t)t0 * sizeof(float));
                        if (d->sw == 1) {
                            if (t1 > t0)
                                memcpy(o + t0, in + (ox + t0) - d->pw + s, (size_t)(t1 - t0) * sizeof(float));
                        } else {
                            for (int64_t t = t0; t < t1; t++)
                                o[t] = in[(ox + t) * d->sw - d->pw + s];
                        }
                        if (t1 < len)
                            memset(o + t1, 0, (size_t)(len - t1) * sizeof(float));
                    }
                    j += len;
                    p += len;
                }
            }
}

void bkm__kern_col2im(const bkm_conv2d_desc_t *d, const float *col, int64_t c0, int64_t c1, int64_t p0,
                      int64_t np, float *diff_src)
{
    const int64_t plane = d->ih * d->iw;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t r = 0; r < d->kh; r++)
            for (int64_t s = 0; s < d->kw; s++) {
                const float *row = col + ((c * d->kh + r) * d->kw + s) * np;
                float *out_plane = diff_src + c * plane;
                int64_t j = 0, p = p0;
                while (j < np) {
                    const int64_t oy = p / d->ow, ox = p % d->ow;
                    const int64_t len = (d->ow - ox < np - j) ? d->ow - ox : np - j;
                    const int64_t iy = oy * d->sh - d->ph + r;
                    if (iy >= 0 && iy < d->ih) {
                        const float *o = row + j;
                        float *out = out_plane + iy * d->iw;
                        int64_t t0, t1;
                        valid_range(d, ox, len, s, &t0, &t1);
                        if (d->sw == 1) {
                            float *out1 = t1 > t0 ? out + (ox + t0) - d->pw + s : out;
                            for (int64_t t = 0; t < t1 - t0; t++)
                                out1[t] += o[t0 + t];
                        } else {
                            for (int64_t t = t0; t < t1; t++)
                                out[(ox + t) * d->sw - d->pw + s] += o[t];
                        }
                    }
                    j += len;
                    p += len;
                }
            }
}
