/* SPDX-License-Identifier: MIT */
/* Naive reference conv2d (fwd, bwd-data, bwd-weights), double accumulation: the oracle for
 * every native and oneDNN direction. Layouts: src/dst NCHW, weights goihw = OIHW with
 * oc = g * (OC/G) + o, bias [OC]. Slow on purpose: one output element at a time. */
#include "bkm/kernels.h"

#define SRC(n, c, y, x) src[(((n) * d->ic + (c)) * d->ih + (y)) * d->iw + (x)]
#define DST(n, c, y, x) dst[(((n) * d->oc + (c)) * d->oh + (y)) * d->ow + (x)]
#define WEI(k, c, r, s) wei[(((k) * icg + (c)) * d->kh + (r)) * d->kw + (s)]

void bkm_kern_conv2d_ref_fwd(const bkm_conv2d_desc_t *d, const float *src, const float *wei, const float *bias,
                             float *dst)
{
    const int64_t icg = d->ic / d->g, ocg = d->oc / d->g;
    for (int64_t n = 0; n < d->mb; n++)
        for (int64_t k = 0; k < d->oc; k++) {
            const int64_t c0 = (k / ocg) * icg;
            for (int64_t p = 0; p < d->oh; p++)
                for (int64_t q = 0; q < d->ow; q++) {
                    double acc = (d->has_bias && bias != NULL) ? bias[k] : 0.0;
                    for (int64_t c = 0; c < icg; c++)
                        for (int64_t r = 0; r < d->kh; r++) {
                            const int64_t y = p * d->sh - d->ph + r;
                            if (y < 0 || y >= d->ih)
                                continue;
                            for (int64_t s = 0; s < d->kw; s++) {
                                const int64_t x = q * d->sw - d->pw + s;
                                if (x < 0 || x >= d->iw)
                                    continue;
                                acc += (double)SRC(n, c0 + c, y, x) * (double)WEI(k, c, r, s);
                            }
                        }
                    DST(n, k, p, q) = (float)acc;
                }
        }
}

void bkm_kern_conv2d_ref_bwd_data(const bkm_conv2d_desc_t *d, const float *diff_dst, const float *wei,
                                  float *diff_src)
{
    const int64_t icg = d->ic / d->g, ocg = d->oc / d->g;
    const float *dst = diff_dst;
    /* Gather form: each diff_src element sums the outputs whose window covers it. */
    for (int64_t n = 0; n < d->mb; n++)
        for (int64_t c = 0; c < d->ic; c++) {
            const int64_t g = c / icg, cc = c % icg;
            for (int64_t y = 0; y < d->ih; y++)
                for (int64_t x = 0; x < d->iw; x++) {
                    double acc = 0.0;
                    for (int64_t r = 0; r < d->kh; r++) {
                        const int64_t py = y + d->ph - r;
                        if (py < 0 || py % d->sh != 0 || py / d->sh >= d->oh)
                            continue;
                        for (int64_t s = 0; s < d->kw; s++) {
                            const int64_t qx = x + d->pw - s;
                            if (qx < 0 || qx % d->sw != 0 || qx / d->sw >= d->ow)
                                continue;
                            for (int64_t o = 0; o < ocg; o++) {
                                const int64_t k = g * ocg + o;
                                acc += (double)DST(n, k, py / d->sh, qx / d->sw) * (double)WEI(k, cc, r, s);
                            }
                        }
                    }
                    diff_src[((n * d->ic + c) * d->ih + y) * d->iw + x] = (float)acc;
                }
        }
}

void bkm_kern_conv2d_ref_bwd_weights(const bkm_conv2d_desc_t *d, const float *src, const float *diff_dst,
                                     float *diff_wei, float *diff_bias)
{
    const int64_t icg = d->ic / d->g, ocg = d->oc / d->g;
    const float *dst = diff_dst;
    for (int64_t k = 0; k < d->oc; k++) {
        const int64_t c0 = (k / ocg) * icg;
        for (int64_t c = 0; c < icg; c++)
            for (int64_t r = 0; r < d->kh; r++)
                for (int64_t s = 0; s < d->kw; s++) {
                    double acc = 0.0;
                    for (int64_t n = 0; n < d->mb; n++)
                        for (int64_t p = 0; p < d->oh; p++) {
                            const int64_t y = p * d->sh - d->ph + r;
                            if (y < 0 || y >= d->ih)
                                continue;
                            for (int64_t q = 0; q < d->ow; q++) {
                                const int64_t x = q * d->sw - d->pw + s;
                                if (x < 0 || x >= d->iw)
                                    continue;
                                acc += (double)SRC(n, c0 + c, y, x) * (double)DST(n, k, p, q);
                            }
                        }
                    diff_wei[((k * icg + c) * d->kh + r) * d->kw + s] = (float)acc;
                }
        if (d->has_bias && diff_bias != NULL) {
            double acc = 0.0;
            for (int64_t n = 0; n < d->mb; n++)
                for (int64_t i = 0; i < d->oh * d->ow; i++)
                    acc += dst[(n * d->oc + k) * d->oh * d->ow + i];
            diff_bias[k] = (float)acc;
        }
    }
}
