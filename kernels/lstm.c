/* SPDX-License-Identifier: MIT */
/* Native LSTM (gate order i, f, g, o): one SGEMM for the input projection of all steps, one
 * recurrent SGEMM per step, one fused parallel element-wise pass per step (bias, sigmoid, tanh,
 * cell and hidden products), and backward through time with the same structure plus three
 * whole-sequence SGEMMs per layer (dX, dWx, dWh). Every buffer is allocated at creation. */
#include "kernels_int.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int bkm_kern_lstm_desc_init(bkm_lstm_desc_t *d, int64_t n, int64_t t, int64_t i, int64_t h, int64_t layers,
                            bkm_err_t *err)
{
    const struct { const char *name; int64_t v; } dims[] = {{"N", n}, {"T", t}, {"I", i}, {"H", h}, {"layers", layers}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        if (dims[k].v < 1)
            return bkm_err_set(err, BKM_EINVAL, "lstm: %s=%lld must be >= 1", dims[k].name, (long long)dims[k].v);
        if (dims[k].v > (int64_t)1 << 24)
            return bkm_err_set(err, BKM_EINVAL, "lstm: %s=%lld is too large (at most %lld)", dims[k].name,
                               (long long)dims[k].v, (long long)1 << 24);
    }
    /* the largest buffer: gates of all steps of one layer, T * N * 4H floats; and the parameters */
    const double gates = (double)t * (double)n * 4.0 * (double)h, maxi = (double)(i > h ? i : h);
    const double params = (double)layers * 4.0 * (double)h * (maxi + (double)h + 1.0);
    if (gates * layers > (double)(INT64_MAX / 16) || params > (double)(INT64_MAX / 16) ||
        (double)t * (double)n * maxi > (double)(INT64_MAX / 16))
        return bkm_err_set(err, BKM_EINVAL, "lstm: N=%lld T=%lld I=%lld H=%lld layers=%lld is too large", (long long)n,
                           (long long)t, (long long)i, (long long)h, (long long)layers);
    d->n = n, d->t = t, d->i = i, d->h = h, d->layers = layers;
    return BKM_OK;
}

size_t bkm_kern_lstm_param_count(const bkm_lstm_desc_t *d)
{
    size_t ox, oh, ob;
    bkm_kern_lstm_param_offsets(d, d->layers, &ox, &oh, &ob);
    return ox;
}

void bkm_kern_lstm_param_offsets(const bkm_lstm_desc_t *d, int64_t l, size_t *off_wx, size_t *off_wh,
                                 size_t *off_b)
{
    const size_t G = (size_t)(4 * d->h), H = (size_t)d->h;
    size_t o = 0;
    for (int64_t k = 0; k < l; k++)
        o += G * ((k == 0 ? (size_t)d->i : H) + H + 1);
    *off_wx = o;
    *off_wh = o + G * (l == 0 ? (size_t)d->i : H);
    *off_b = *off_wh + G * H;
}

double bkm_kern_lstm_flops(const bkm_lstm_desc_t *d, int training)
{
    double f = 0.0;
    for (int64_t l = 0; l < d->layers; l++)
        f += (double)d->t * 2.0 * (double)d->n * 4.0 * (double)d->h * ((double)(l == 0 ? d->i : d->h) + (double)d->h);
    return training ? 3.0 * f : f;
}

enum { P_GRAIN, P_MC, P_KC, P_NC, P_COUNT };
static const bkm_param_desc_t lstm_params[P_COUNT] = {
    {"grain", 16, 1 << 24, 4096, 16,
     "elements of N*H per chunk of the fused gate pass (forward and backward); one chunk runs serially"},
    {"mc", 0, 4096, 0, 1, "GEMM row block (0 = the ISA's default; else a multiple of mr)"},
    {"kc", 0, 4096, 0, 1, "GEMM depth block (0 = the ISA's default)"},
    {"nc", 0, 65536, 0, 1, "GEMM column block (0 = the ISA's default; else a multiple of nr)"},
};

const bkm_param_desc_t *bkm_kern_lstm_params(size_t *n_params)
{
    *n_params = P_COUNT;
    return lstm_params;
}

struct bkm_kern_lstm {
    bkm_lstm_desc_t d;
    int nt;
    int64_t grain;
    bkm_gemm_cfg_t gcfg;
    void *ws;          /* GEMM packing workspace */
    float *gates;      /* [L][T][N][4H]: pre-activations, then activated gates */
    float *hs, *cs;    /* [L][T+1][N][H]: slot 0 the initial state, slot t+1 step t's */
    float *dg;         /* [T][N][4H]: gate gradients (pre-activation) of one layer */
    float *dh, *dc;    /* [N][H]: gradient carried to the previous step */
    float *dyb[2];     /* [T][N][H]: gradient of a lower layer's output (L > 1) */
    char impl[128];
};

void bkm_kern_lstm_destroy(bkm_kern_lstm_t *ls)
{
    if (!ls)
        return;
    bkm_free(ls->ws);
    bkm_free(ls->gates);
    bkm_free(ls->hs);
    bkm_free(ls->cs);
    bkm_free(ls->dg);
    bkm_free(ls->dh);
    bkm_free(ls->dc);
    bkm_free(ls->dyb[0]);
    bkm_free(ls->dyb[1]);
    bkm_free(ls);
}

const char *bkm_kern_lstm_impl(const bkm_kern_lstm_t *ls)
{
    return ls->impl;
}

/* Allocate n floats and zero them from a team of nt threads (first touch by the users). */
static float *alloc_touch(size_t n, int nt)
{
    float *p = bkm_aligned_alloc(64, (n ? n : 1) * sizeof(float));
    if (p) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (size_t k = 0; k < n; k++)
            p[k] = 0.0f;
    }
    return p;
}

int bkm_kern_lstm_create(bkm_kern_lstm_t **out, const bkm_lstm_desc_t *d, const bkm_kern_params_t *params,
                         bkm_err_t *err)
{
    int32_t v[P_COUNT];
    bkm_kern_lstm_t *ls = NULL;
    bkm_lstm_desc_t dd;
    int rc;
    *out = NULL;
    if ((rc = bkm_kern_lstm_desc_init(&dd, d->n, d->t, d->i, d->h, d->layers, err)) < 0)
        return rc;
    if (params) {
        if ((rc = bkm_kern_params_resolve(params, lstm_params, P_COUNT, v, err)) < 0)
            return rc;
    } else {
        for (int k = 0; k < P_COUNT; k++)
            v[k] = lstm_params[k].def;
    }
    if (!(ls = bkm_calloc(1, sizeof *ls)))
        return bkm_err_set(err, BKM_ENOMEM, "lstm: out of memory");
    ls->d = dd;
    ls->nt = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    ls->grain = v[P_GRAIN];
    if ((rc = bkm_kern_gemm_cfg_init(&ls->gcfg, params ? params->isa : BKM_ISA_AUTO, err)) < 0)
        goto fail;
    ls->gcfg.nt = ls->nt;
    if ((v[P_MC] && (rc = bkm_kern_gemm_cfg_set(&ls->gcfg, "mc", v[P_MC], err)) < 0) ||
        (v[P_KC] && (rc = bkm_kern_gemm_cfg_set(&ls->gcfg, "kc", v[P_KC], err)) < 0) ||
        (v[P_NC] && (rc = bkm_kern_gemm_cfg_set(&ls->gcfg, "nc", v[P_NC], err)) < 0) ||
        (rc = bkm_kern_gemm_cfg_check(&ls->gcfg, err)) < 0) {
        bkm_err_prefix(err, "lstm");
        goto fail;
    }
    const size_t N = (size_t)dd.n, T = (size_t)dd.t, H = (size_t)dd.h, L = (size_t)dd.layers;
    ls->ws = bkm_aligned_alloc(64, bkm_kern_gemm_workspace_bytes(&ls->gcfg) + 64);
    ls->gates = alloc_touch(L * T * N * 4 * H, ls->nt);
    ls->hs = alloc_touch(L * (T + 1) * N * H, ls->nt);
    ls->cs = alloc_touch(L * (T + 1) * N * H, ls->nt);
    ls->dg = alloc_touch(T * N * 4 * H, ls->nt);
    ls->dh = alloc_touch(N * H, ls->nt);
    ls->dc = alloc_touch(N * H, ls->nt);
    if (L > 1) {
        ls->dyb[0] = alloc_touch(T * N * H, ls->nt);
        ls->dyb[1] = alloc_touch(T * N * H, ls->nt);
    }
    if (!ls->ws || !ls->gates || !ls->hs || !ls->cs || !ls->dg || !ls->dh || !ls->dc ||
        (L > 1 && (!ls->dyb[0] || !ls->dyb[1]))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "lstm: cannot allocate the buffers of N=%zu T=%zu H=%zu layers=%zu", N, T,
                         H, L);
        goto fail;
    }
    snprintf(ls->impl, sizeof ls->impl, "native:lstm.fused_gates.grain%lld.%s", (long long)ls->grain,
             bkm_kern_gemm_ukr_name(&ls->gcfg));
    *out = ls;
    return BKM_OK;
fail:
    bkm_kern_lstm_destroy(ls);
    return rc;
}

static inline float sigmf(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* Chunks of the N*H element range: [c * grain, min((c + 1) * grain, NH)). */
static int64_t n_chunks(const bkm_kern_lstm_t *ls)
{
    const int64_t NH = ls->d.n * ls->d.h;
    return (NH + ls->grain - 1) / ls->grain;
}

/* Forward element-wise work of one step: g [N][4H] pre-activations without bias -> activated
 * gates (in place); c = f * cp + i * g; h = o * tanh(c). */
static void gates_fwd(const bkm_kern_lstm_t *ls, float *g, const float *bias, const float *cp, float *c, float *h)
{
    const int64_t H = ls->d.h, NH = ls->d.n * H, grain = ls->grain, nch = n_chunks(ls);
#pragma omp parallel for schedule(static) num_threads(ls->nt) if (nch > 1)
    for (int64_t ch = 0; ch < nch; ch++) {
        int64_t e0 = ch * grain, e1 = e0 + grain < NH ? e0 + grain : NH;
        int64_t n = e0 / H, j = e0 % H;
        for (int64_t e = e0; e < e1;) {
            int64_t jend = j + (e1 - e) < H ? j + (e1 - e) : H;
            float *gr = g + n * 4 * H;
            const float *cpr = cp + n * H;
            float *cr = c + n * H, *hr = h + n * H;
            for (int64_t k = j; k < jend; k++) {
                float ig = sigmf(gr[k] + bias[k]), fg = sigmf(gr[H + k] + bias[H + k]);
                float gg = tanhf(gr[2 * H + k] + bias[2 * H + k]), og = sigmf(gr[3 * H + k] + bias[3 * H + k]);
                float cv = fg * cpr[k] + ig * gg;
                gr[k] = ig, gr[H + k] = fg, gr[2 * H + k] = gg, gr[3 * H + k] = og;
                cr[k] = cv;
                hr[k] = og * tanhf(cv);
            }
            e += jend - j;
            j = 0;
            n++;
        }
    }
}

/* Backward element-wise work of one step: from the activated gates a, cell states c and cp, the
 * output gradient dy (NULL = 0) plus dh (carried), and dc (carried, updated in place to the
 * gradient of cp): dg [N][4H] the pre-activation gradients. */
static void gates_bwd(const bkm_kern_lstm_t *ls, const float *a, const float *cp, const float *c, const float *dy,
                      const float *dh, float *dc, float *dg)
{
    const int64_t H = ls->d.h, NH = ls->d.n * H, grain = ls->grain, nch = n_chunks(ls);
#pragma omp parallel for schedule(static) num_threads(ls->nt) if (nch > 1)
    for (int64_t ch = 0; ch < nch; ch++) {
        int64_t e0 = ch * grain, e1 = e0 + grain < NH ? e0 + grain : NH;
        int64_t n = e0 / H, j = e0 % H;
        for (int64_t e = e0; e < e1;) {
            int64_t jend = j + (e1 - e) < H ? j + (e1 - e) : H;
            const float *ar = a + n * 4 * H, *cpr = cp + n * H, *cr = c + n * H, *dhr = dh + n * H;
            const float *dyr = dy ? dy + n * H : NULL;
            float *dcr = dc + n * H, *dgr = dg + n * 4 * H;
            for (int64_t k = j; k < jend; k++) {
                float ig = ar[k], fg = ar[H + k], gg = ar[2 * H + k], og = ar[3 * H + k];
                float tc = tanhf(cr[k]);
                float gh = dhr[k] + (dyr ? dyr[k] : 0.0f);
                float gc = dcr[k] + gh * og * (1.0f - tc * tc);
                dgr[k] = gc * gg * ig * (1.0f - ig);
                dgr[H + k] = gc * cpr[k] * fg * (1.0f - fg);
                dgr[2 * H + k] = gc * ig * (1.0f - gg * gg);
                dgr[3 * H + k] = gh * tc * og * (1.0f - og);
                dcr[k] = gc * fg;
            }
            e += jend - j;
            j = 0;
            n++;
        }
    }
}

int bkm_kern_lstm_fwd(bkm_kern_lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w,
                      float *y, float *hT, float *cT, bkm_err_t *err)
{
    const bkm_lstm_desc_t *d = &ls->d;
    const int64_t N = d->n, T = d->t, H = d->h, L = d->layers, NH = N * H, G = 4 * H;
    int rc = BKM_OK;
    if (!x || !w || !y)
        return bkm_err_set(err, BKM_EINVAL, "lstm fwd: NULL x, w or y");
    for (int64_t l = 0; l < L; l++) {
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        const int64_t I = l == 0 ? d->i : H;
        const float *in = l == 0 ? x : ls->hs + (l - 1) * (T + 1) * NH + NH;
        float *gates = ls->gates + l * T * N * G, *hs = ls->hs + l * (T + 1) * NH, *cs = ls->cs + l * (T + 1) * NH;
        if (h0)
            memcpy(hs, h0 + l * NH, (size_t)NH * sizeof(float));
        else
            memset(hs, 0, (size_t)NH * sizeof(float));
        if (c0)
            memcpy(cs, c0 + l * NH, (size_t)NH * sizeof(float));
        else
            memset(cs, 0, (size_t)NH * sizeof(float));
        /* input projection of all steps: gates[T*N][4H] = in[T*N][I] * Wx[I][4H] */
        if ((rc = bkm_kern_sgemm(&ls->gcfg, 'N', 'N', T * N, G, I, 1.0f, in, I, w + ox, G, 0.0f, gates, G, ls->ws,
                                 err)) < 0)
            goto out;
        for (int64_t t = 0; t < T; t++) {
            float *gt = gates + t * N * G;
            if ((rc = bkm_kern_sgemm(&ls->gcfg, 'N', 'N', N, G, H, 1.0f, hs + t * NH, H, w + oh, G, 1.0f, gt, G,
                                     ls->ws, err)) < 0)
                goto out;
            gates_fwd(ls, gt, w + ob, cs + t * NH, cs + (t + 1) * NH, hs + (t + 1) * NH);
        }
        if (hT)
            memcpy(hT + l * NH, hs + T * NH, (size_t)NH * sizeof(float));
        if (cT)
            memcpy(cT + l * NH, cs + T * NH, (size_t)NH * sizeof(float));
    }
    memcpy(y, ls->hs + (L - 1) * (T + 1) * NH + NH, (size_t)(T * NH) * sizeof(float));
out:
    if (rc < 0)
        bkm_err_prefix(err, "lstm fwd");
    return rc;
}

/* diff_bias[q] = sum over the rows of dg [rows][G], columns split over the threads. */
static void bias_grad(const bkm_kern_lstm_t *ls, const float *dg, int64_t rows, int64_t G, float *db)
{
    const int64_t CB = 64, nb = (G + CB - 1) / CB;
#pragma omp parallel for schedule(static) num_threads(ls->nt)
    for (int64_t b = 0; b < nb; b++) {
        int64_t q0 = b * CB, q1 = q0 + CB < G ? q0 + CB : G;
        for (int64_t q = q0; q < q1; q++)
            db[q] = 0.0f;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = q0; q < q1; q++)
                db[q] += dg[r * G + q];
    }
}

int bkm_kern_lstm_bwd(bkm_kern_lstm_t *ls, const float *x, const float *w, const float *dy, const float *dhT,
                      const float *dcT, float *dx, float *dh0, float *dc0, float *dw, bkm_err_t *err)
{
    const bkm_lstm_desc_t *d = &ls->d;
    const int64_t N = d->n, T = d->t, H = d->h, L = d->layers, NH = N * H, G = 4 * H;
    int rc = BKM_OK;
    if (!x || !w || !dy || !dw)
        return bkm_err_set(err, BKM_EINVAL, "lstm bwd: NULL x, w, dy or dw");
    const float *dyl = dy;
    for (int64_t l = L - 1; l >= 0; l--) {
        size_t ox, oh, ob;
        bkm_kern_lstm_param_offsets(d, l, &ox, &oh, &ob);
        const int64_t I = l == 0 ? d->i : H;
        const float *in = l == 0 ? x : ls->hs + (l - 1) * (T + 1) * NH + NH;
        const float *gates = ls->gates + l * T * N * G, *hs = ls->hs + l * (T + 1) * NH,
                    *cs = ls->cs + l * (T + 1) * NH;
        float *dxl = l == 0 ? dx : ls->dyb[(L - 1 - l) & 1];
        if (dhT)
            memcpy(ls->dh, dhT + l * NH, (size_t)NH * sizeof(float));
        else
            memset(ls->dh, 0, (size_t)NH * sizeof(float));
        if (dcT)
            memcpy(ls->dc, dcT + l * NH, (size_t)NH * sizeof(float));
        else
            memset(ls->dc, 0, (size_t)NH * sizeof(float));
        for (int64_t t = T - 1; t >= 0; t--) {
            float *dgt = ls->dg + t * N * G;
            gates_bwd(ls, gates + t * N * G, cs + t * NH, cs + (t + 1) * NH, dyl + t * NH, ls->dh, ls->dc, dgt);
            /* dh[N][H] = dg_t[N][4H] * Wh[H][4H]^T */
            if ((rc = bkm_kern_sgemm(&ls->gcfg, 'N', 'T', N, H, G, 1.0f, dgt, G, w + oh, G, 0.0f, ls->dh, H, ls->ws,
                                     err)) < 0)
                goto out;
        }
        if (dh0)
            memcpy(dh0 + l * NH, ls->dh, (size_t)NH * sizeof(float));
        if (dc0)
            memcpy(dc0 + l * NH, ls->dc, (size_t)NH * sizeof(float));
        /* dWx[I][4H] = in^T * dg; dWh[H][4H] = h_{t-1}^T * dg over all steps; db = column sums */
        if ((rc = bkm_kern_sgemm(&ls->gcfg, 'T', 'N', I, G, T * N, 1.0f, in, I, ls->dg, G, 0.0f, dw + ox, G, ls->ws,
                                 err)) < 0 ||
            (rc = bkm_kern_sgemm(&ls->gcfg, 'T', 'N', H, G, T * N, 1.0f, hs, H, ls->dg, G, 0.0f, dw + oh, G, ls->ws,
                                 err)) < 0)
            goto out;
        bias_grad(ls, ls->dg, T * N, G, dw + ob);
        /* data gradient dX[T*N][I] = dg * Wx^T (input of the layer below, or dx) */
        if (dxl && (rc = bkm_kern_sgemm(&ls->gcfg, 'N', 'T', T * N, I, G, 1.0f, ls->dg, G, w + ox, G, 0.0f, dxl, I,
                                        ls->ws, err)) < 0)
            goto out;
        dyl = dxl;
    }
out:
    if (rc < 0)
        bkm_err_prefix(err, "lstm bwd");
    return rc;
}
