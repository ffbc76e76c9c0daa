/* SPDX-License-Identifier: MIT */
/* Naive LSTM references: every step and gate written out in double, the oracle of the native and
 * oneDNN LSTMs. Gate order i, f, g, o; layouts as in bkm/kernels.h. */
#include "backend_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Forward states of the whole stack, in double: act [L][T][N][4][H] (activated gates),
 * hs/cs [L][T+1][N][H] (slot 0 = the initial state). */
typedef struct ref_state {
    double *act, *hs, *cs;
} ref_state_t;

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static void ref_state_free(ref_state_t *s)
{
    free(s->act), free(s->hs), free(s->cs);
}

static int ref_forward(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                       ref_state_t *s, bkm_err_t *err)
{
    const int64_t N = d->n, T = d->t, H = d->h, L = d->layers, NH = N * H;
    s->act = calloc((size_t)(L * T * N * 4 * H), sizeof(double));
    s->hs = calloc((size_t)(L * (T + 1) * NH), sizeof(double));
    s->cs = calloc((size_t)(L * (T + 1) * NH), sizeof(double));
    if (!s->act || !s->hs || !s->cs) {
        ref_state_free(s);
        return bkm_err_set(err, BKM_ENOMEM, "lstm reference: out of memory");
    }
    for (int64_t l = 0; l < L; l++) {
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        const int64_t I = l == 0 ? d->i : H;
        double *hs = s->hs + l * (T + 1) * NH, *cs = s->cs + l * (T + 1) * NH;
        for (int64_t e = 0; e < NH; e++) {
            hs[e] = h0 ? h0[l * NH + e] : 0.0;
            cs[e] = c0 ? c0[l * NH + e] : 0.0;
        }
        for (int64_t t = 0; t < T; t++) {
            for (int64_t n = 0; n < N; n++) {
                double *act = s->act + ((l * T + t) * N + n) * 4 * H;
                for (int64_t q = 0; q < 4; q++) {
                    for (int64_t j = 0; j < H; j++) {
                        double v = w[ob + (size_t)(q * H + j)];
                        for (int64_t k = 0; k < I; k++) {
                            double in = l == 0 ? (double)x[(t * N + n) * I + k]
                                               : s->hs[((l - 1) * (T + 1) + t + 1) * NH + n * H + k];
                            v += in * w[ox + (size_t)(k * 4 * H + q * H + j)];
                        }
                        for (int64_t k = 0; k < H; k++)
                            v += hs[t * NH + n * H + k] * w[oh + (size_t)(k * 4 * H + q * H + j)];
                        act[q * H + j] = q == 2 ? tanh(v) : sigm(v);
                    }
                }
                for (int64_t j = 0; j < H; j++) {
                    double ig = act[j], fg = act[H + j], gg = act[2 * H + j], og = act[3 * H + j];
                    double c = fg * cs[t * NH + n * H + j] + ig * gg;
                    cs[(t + 1) * NH + n * H + j] = c;
                    hs[(t + 1) * NH + n * H + j] = og * tanh(c);
                }
            }
        }
    }
    return BKM_OK;
}

int bkm_kern_lstm_ref_fwd(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                          float *y, float *hT, float *cT, bkm_err_t *err)
{
    ref_state_t s = {0};
    const int64_t T = d->t, NH = d->n * d->h, L = d->layers;
    int rc = ref_forward(d, x, h0, c0, w, &s, err);
    if (rc < 0)
        return rc;
    for (int64_t e = 0; e < T * NH; e++)
        y[e] = (float)s.hs[((L - 1) * (T + 1) + 1) * NH + e];
    for (int64_t l = 0; l < L; l++) {
        for (int64_t e = 0; e < NH; e++) {
            if (hT)
                hT[l * NH + e] = (float)s.hs[(l * (T + 1) + T) * NH + e];
            if (cT)
                cT[l * NH + e] = (float)s.cs[(l * (T + 1) + T) * NH + e];
        }
    }
    ref_state_free(&s);
    return BKM_OK;
}

int bkm_kern_lstm_ref_bwd(const bkm_lstm_desc_t *d, const float *x, const float *h0, const float *c0, const float *w,
                          const float *dy, const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0,
                          float *dw, bkm_err_t *err)
{
    const int64_t N = d->n, T = d->t, H = d->h, L = d->layers, NH = N * H;
    ref_state_t s = {0};
    double *dyl = NULL, *dxl = NULL, *dg = NULL, *dh = NULL, *dc = NULL;
    int rc = ref_forward(d, x, h0, c0, w, &s, err);
    if (rc < 0)
        return rc;
    const int64_t IMAX = d->i > H ? d->i : H;
    dyl = calloc((size_t)(T * NH), sizeof(double));
    dxl = calloc((size_t)(T * N * IMAX), sizeof(double));
    dg = calloc((size_t)(4 * H), sizeof(double));
    dh = calloc((size_t)NH, sizeof(double));
    dc = calloc((size_t)NH, sizeof(double));
    if (!dyl || !dxl || !dg || !dh || !dc) {
        rc = bkm_err_set(err, BKM_ENOMEM, "lstm reference: out of memory");
        goto out;
    }
    memset(dw, 0, bkm_kern_lstm_param_count(d) * sizeof(float));
    for (int64_t e = 0; e < T * NH; e++)
        dyl[e] = dy[e];
    for (int64_t l = L - 1; l >= 0; l--) {
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        const int64_t I = l == 0 ? d->i : H;
        const double *hs = s.hs + l * (T + 1) * NH, *cs = s.cs + l * (T + 1) * NH;
        for (int64_t e = 0; e < NH; e++) {
            dh[e] = dhT ? dhT[l * NH + e] : 0.0;
            dc[e] = dcT ? dcT[l * NH + e] : 0.0;
        }
        memset(dxl, 0, (size_t)(T * N * I) * sizeof(double));
        for (int64_t t = T - 1; t >= 0; t--) {
            double *ndh = calloc((size_t)NH, sizeof(double));
            if (!ndh) {
                rc = bkm_err_set(err, BKM_ENOMEM, "lstm reference: out of memory");
                goto out;
            }
            for (int64_t n = 0; n < N; n++) {
                const double *act = s.act + ((l * T + t) * N + n) * 4 * H;
                for (int64_t j = 0; j < H; j++) {
                    double ig = act[j], fg = act[H + j], gg = act[2 * H + j], og = act[3 * H + j];
                    double c = cs[(t + 1) * NH + n * H + j], cp = cs[t * NH + n * H + j], tc = tanh(c);
                    double gh = dyl[t * NH + n * H + j] + dh[n * H + j];
                    double gc = dc[n * H + j] + gh * og * (1.0 - tc * tc);
                    dg[j] = gc * gg * ig * (1.0 - ig);
                    dg[H + j] = gc * cp * fg * (1.0 - fg);
                    dg[2 * H + j] = gc * ig * (1.0 - gg * gg);
                    dg[3 * H + j] = gh * tc * og * (1.0 - og);
                    dc[n * H + j] = gc * fg;
                }
                for (int64_t q = 0; q < 4 * H; q++) {
                    dw[ob + (size_t)q] += (float)dg[q];
                    for (int64_t k = 0; k < I; k++) {
                        double in = l == 0 ? (double)x[(t * N + n) * I + k]
                                           : s.hs[((l - 1) * (T + 1) + t + 1) * NH + n * H + k];
                        dw[ox + (size_t)(k * 4 * H + q)] += (float)(in * dg[q]);
                        dxl[(t * N + n) * I + k] += w[ox + (size_t)(k * 4 * H + q)] * dg[q];
                    }
                    for (int64_t k = 0; k < H; k++) {
                        dw[oh + (size_t)(k * 4 * H + q)] += (float)(hs[t * NH + n * H + k] * dg[q]);
                        ndh[n * H + k] += w[oh + (size_t)(k * 4 * H + q)] * dg[q];
                    }
                }
            }
            memcpy(dh, ndh, (size_t)NH * sizeof(double));
            free(ndh);
        }
        for (int64_t e = 0; e < NH; e++) {
            if (dh0)
                dh0[l * NH + e] = (float)dh[e];
            if (dc0)
                dc0[l * NH + e] = (float)dc[e];
        }
        if (l == 0) {
            if (dx)
                for (int64_t e = 0; e < T * N * I; e++)
                    dx[e] = (float)dxl[e];
        } else {
            memcpy(dyl, dxl, (size_t)(T * NH) * sizeof(double));
        }
    }
    rc = BKM_OK;
out:
    ref_state_free(&s);
    free(dyl), free(dxl), free(dg), free(dh), free(dc);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* The reference backend's LSTM stack (backend_int.h): the functions above, no state          */

static int ref_lstm_fwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w, float *y,
                        float *hT, float *cT, bkm_err_t *err)
{
    return bkm_kern_lstm_ref_fwd(&ls->d, x, h0, c0, w, y, hT, cT, err);
}

static int ref_lstm_bwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w,
                        const float *dy, const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0,
                        float *dw, bkm_err_t *err)
{
    return bkm_kern_lstm_ref_bwd(&ls->d, x, h0, c0, w, dy, dhT, dcT, dx, dh0, dc0, dw, err);
}

static const char *ref_lstm_impl(const bkm__lstm_t *ls)
{
    return "ref:naive";
}

static void ref_lstm_destroy(bkm__lstm_t *ls)
{
    ls->vt = NULL;
}

static const bkm__lstm_vtbl_t ref_lstm_vtbl = {ref_lstm_fwd, ref_lstm_bwd, ref_lstm_impl, ref_lstm_destroy};

int bkm__lstm_ref_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                         bkm_err_t *err)
{
    *ls = (bkm__lstm_t){&ref_lstm_vtbl, *d, NULL};
    return BKM_OK;
}
