/* SPDX-License-Identifier: MIT */
/* Native LSTM (gate order i, f, g, o): one SGEMM for the input projection of all steps, one
 * recurrent SGEMM per step, one fused parallel element-wise pass per step (bias, sigmoid, tanh,
 * cell and hidden products), and backward through time with the same structure plus three
 * whole-sequence SGEMMs per layer (dX, dWx, dWh). Every buffer is allocated at creation. */
#include "backend_int.h"

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

enum { P_ALGO, P_GRAIN, P_MC, P_KC, P_NC, P_COUNT };
enum { ALGO_FUSED = 0, ALGO_SPLIT = 1 };
static const bkm_param_desc_t lstm_params[P_COUNT] = {
    {"algo", 0, 1, 0, 1,
     "0 fused: one parallel region per layer and direction, recurrent weights packed once, each thread the "
     "recurrent GEMM tiles and the gate pass of its own hidden units, one barrier per step; 1 split: a parallel "
     "SGEMM then a parallel gate pass per step, chunks of `grain` elements"},
    {"grain", 16, 1 << 24, 4096, 16,
     "algo 1: elements of N*H per chunk of the gate pass (forward and backward); one chunk runs serially"},
    {"mc", 0, 4096, 0, 1, "GEMM row block (0 = the ISA's default; else a multiple of mr)"},
    {"kc", 0, 4096, 0, 1, "GEMM depth block (0 = the GEMM's auto: the ISA default, deeper from L2 for many rows)"},
    {"nc", 0, 65536, 0, 1, "GEMM column block (0 = the ISA's default; else a multiple of nr)"},
};

const bkm_param_desc_t *bkm_kern_lstm_params(size_t *n_params)
{
    *n_params = P_COUNT;
    return lstm_params;
}

struct bkm_kern_lstm {
    bkm_lstm_desc_t d;
    int nt, algo;
    int64_t grain;
    bkm_gemm_cfg_t gcfg;
    const bkm_gemm_ukr_desc_t *u; /* fused: the micro-kernel */
    int64_t npj, mp;   /* fused: hidden-unit panels of NR, row panels of MR */
    float *bpack;      /* fused: packed Wh (4 gates x npj panels of H x NR) or Wh^T (npj panels of 4H x NR) */
    float *apack;      /* fused: one packed A per thread, mp x MR x 4H */
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
    bkm_free(ls->bpack);
    bkm_free(ls->apack);
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
    ls->algo = v[P_ALGO];
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
    if (ls->algo == ALGO_FUSED) {
        ls->u = ls->gcfg.isa == BKM_ISA_AVX512 ? &bkm__gemm_ukr_avx512
                : ls->gcfg.isa == BKM_ISA_AVX2 ? &bkm__gemm_ukr_avx2
                                               : &bkm__gemm_ukr_generic;
        ls->npj = (dd.h + ls->u->nr - 1) / ls->u->nr;
        ls->mp = (dd.n + ls->u->mr - 1) / ls->u->mr;
        ls->bpack = alloc_touch((size_t)(4 * ls->npj * ls->u->nr) * H, ls->nt);
        ls->apack = alloc_touch((size_t)ls->nt * (size_t)(ls->mp * ls->u->mr) * 4 * H, ls->nt);
    }
    if (!ls->ws || !ls->gates || !ls->hs || !ls->cs || !ls->dg || !ls->dh || !ls->dc ||
        (L > 1 && (!ls->dyb[0] || !ls->dyb[1])) || (ls->algo == ALGO_FUSED && (!ls->bpack || !ls->apack))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "lstm: cannot allocate the buffers of N=%zu T=%zu H=%zu layers=%zu", N, T,
                         H, L);
        goto fail;
    }
    if (ls->algo == ALGO_FUSED)
        snprintf(ls->impl, sizeof ls->impl, "native:lstm.fused.%s", ls->u->name);
    else
        snprintf(ls->impl, sizeof ls->impl, "native:lstm.split.grain%lld.%s", (long long)ls->grain,
                 bkm_kern_gemm_ukr_name(&ls->gcfg));
    *out = ls;
    return BKM_OK;
fail:
    bkm_kern_lstm_destroy(ls);
    return rc;
}

/* exp(x) for the gates without a libm call, so the gate loops vectorise: x clamped to [-87, 88],
 * x = k ln2 + r (Cody-Waite), exp(r) by Cephes' degree-6 polynomial (about 1 ulp), 2^k from the
 * exponent bits. */
static inline float exp_gate(float x)
{
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float kf = x * 1.44269504088896341f + 12582912.0f; /* round to nearest through the magic 1.5 * 2^23 */
    kf -= 12582912.0f;
    float r = x - kf * 0.693359375f;
    r -= kf * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)kf + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float sigmf(float v)
{
    return 1.0f / (1.0f + exp_gate(-v));
}

/* tanh(v) = 1 - 2 / (1 + exp(2v)): absolute error a few 1e-8, exact limits +-1 */
static inline float tanh_gate(float v)
{
    return 1.0f - 2.0f / (1.0f + exp_gate(2.0f * v));
}

/* Forward cell of one batch row, hidden units [k0, k1): gr [4H] pre-activations without bias ->
 * activated gates (in place); c = f * cp + i * g; h = o * tanh(c). */
static inline void cell_fwd_row(float *restrict gr, const float *restrict bias, const float *restrict cpr,
                                float *restrict cr, float *restrict hr, int64_t H, int64_t k0, int64_t k1)
{
#pragma omp simd
    for (int64_t k = k0; k < k1; k++) {
        float ig = sigmf(gr[k] + bias[k]), fg = sigmf(gr[H + k] + bias[H + k]);
        float gg = tanh_gate(gr[2 * H + k] + bias[2 * H + k]), og = sigmf(gr[3 * H + k] + bias[3 * H + k]);
        float cv = fg * cpr[k] + ig * gg;
        gr[k] = ig, gr[H + k] = fg, gr[2 * H + k] = gg, gr[3 * H + k] = og;
        cr[k] = cv;
        hr[k] = og * tanh_gate(cv);
    }
}

/* Backward cell of one batch row, hidden units [k0, k1): from the activated gates ar, cell states
 * c and cp, the output gradient dy plus dh (carried), and dc (carried, updated in place to the
 * gradient of cp): dgr [4H] the pre-activation gradients. */
static inline void cell_bwd_row(const float *restrict ar, const float *restrict cpr, const float *restrict cr,
                                const float *restrict dyr, const float *restrict dhr, float *restrict dcr,
                                float *restrict dgr, int64_t H, int64_t k0, int64_t k1)
{
#pragma omp simd
    for (int64_t k = k0; k < k1; k++) {
        float ig = ar[k], fg = ar[H + k], gg = ar[2 * H + k], og = ar[3 * H + k];
        float tc = tanh_gate(cr[k]);
        float gh = dhr[k] + dyr[k];
        float gc = dcr[k] + gh * og * (1.0f - tc * tc);
        dgr[k] = gc * gg * ig * (1.0f - ig);
        dgr[H + k] = gc * cpr[k] * fg * (1.0f - fg);
        dgr[2 * H + k] = gc * ig * (1.0f - gg * gg);
        dgr[3 * H + k] = gh * tc * og * (1.0f - og);
        dcr[k] = gc * fg;
    }
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
            cell_fwd_row(g + n * 4 * H, bias, cp + n * H, c + n * H, h + n * H, H, j, jend);
            e += jend - j;
            j = 0;
            n++;
        }
    }
}

/* Backward element-wise work of one step: from the activated gates a, cell states c and cp, the
 * output gradient dy plus dh (carried), and dc (carried, updated in place to the
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
            cell_bwd_row(a + n * 4 * H, cp + n * H, c + n * H, dy + n * H, dh + n * H, dc + n * H, dg + n * 4 * H, H,
                         j, jend);
            e += jend - j;
            j = 0;
            n++;
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Fused recurrence (algo 0): packed weights, per-thread hidden-unit panels, one barrier a step */

/* Pack rows [0, N) of src (leading dimension lda, K columns) into MR-row micro-panels (zero rows
 * past N): dst[(ip * K + p) * MR + i] = src[(ip * MR + i) * lda + p]. */
static void pack_a(const bkm_kern_lstm_t *ls, const float *restrict src, int64_t lda, int64_t K, float *restrict dst)
{
    const int64_t MR = ls->u->mr, N = ls->d.n;
    for (int64_t ip = 0; ip < ls->mp; ip++) {
        float *d = dst + ip * K * MR;
        for (int64_t i = 0; i < MR; i++) {
            const int64_t row = ip * MR + i;
            if (row < N) {
                const float *sr = src + row * lda;
                for (int64_t p = 0; p < K; p++)
                    d[p * MR + i] = sr[p];
            } else {
                for (int64_t p = 0; p < K; p++)
                    d[p * MR + i] = 0.0f;
            }
        }
    }
}

/* C[mrows x ncols] (leading dimension ldc) = A_panel * B_panel + beta * C over depth K. */
static void tile(const bkm_kern_lstm_t *ls, int64_t K, const float *a, const float *b, float *c, int64_t ldc,
                 int64_t mrows, int64_t ncols, float beta)
{
    const int64_t MR = ls->u->mr, NR = ls->u->nr;
    if (mrows == MR && ncols == NR) {
        ls->u->fn(K, a, b, c, ldc, 1.0f, beta);
        return;
    }
    _Alignas(64) float tmp[BKM_GEMM_MR_MAX * BKM_GEMM_NR_MAX];
    ls->u->fn(K, a, b, tmp, NR, 1.0f, 0.0f);
    for (int64_t i = 0; i < mrows; i++)
        for (int64_t j = 0; j < ncols; j++)
            c[i * ldc + j] = tmp[i * NR + j] + (beta != 0.0f ? beta * c[i * ldc + j] : 0.0f);
}

/* Recurrence of one layer, forward: gates [T][N][4H] hold the input projection; steps t = 0..T-1
 * add h_{t-1} * Wh and apply the cell. Each thread owns hidden-unit panels [jp0, jp1) of all four
 * gates: its GEMM tiles and its part of the gate pass, then one barrier before h_t is read. */
static void fused_fwd_layer(bkm_kern_lstm_t *ls, const float *wh, const float *bias, float *gates, float *hs,
                            float *cs)
{
    const int64_t N = ls->d.n, T = ls->d.t, H = ls->d.h, G = 4 * H, NH = N * H;
    const int64_t MR = ls->u->mr, NR = ls->u->nr, npj = ls->npj, mp = ls->mp;
#pragma omp parallel num_threads(ls->nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        float *ap = ls->apack + (size_t)tid * (size_t)(mp * MR * G);
        /* Wh [H][4H] -> panel (q, jp): b[p * NR + jj] = Wh[p][q * H + jp * NR + jj] (0 past H) */
#pragma omp for schedule(static)
        for (int64_t pi = 0; pi < 4 * npj; pi++) {
            const int64_t q = pi / npj, jp = pi % npj;
            float *b = ls->bpack + pi * H * NR;
            for (int64_t p = 0; p < H; p++)
                for (int64_t jj = 0; jj < NR; jj++)
                    b[p * NR + jj] = jp * NR + jj < H ? wh[p * G + q * H + jp * NR + jj] : 0.0f;
        }
        const int64_t jp0 = tid * npj / nth, jp1 = (tid + 1) * npj / nth;
        const int64_t j0 = jp0 * NR, j1 = jp1 * NR < H ? jp1 * NR : H;
        for (int64_t t = 0; t < T; t++) {
            float *gt = gates + t * N * G;
            if (jp1 > jp0) {
                pack_a(ls, hs + t * NH, H, H, ap);
                for (int64_t q = 0; q < 4; q++)
                    for (int64_t jp = jp0; jp < jp1; jp++)
                        for (int64_t ip = 0; ip < mp; ip++)
                            tile(ls, H, ap + ip * H * MR, ls->bpack + (q * npj + jp) * H * NR,
                                 gt + ip * MR * G + q * H + jp * NR, G, N - ip * MR < MR ? N - ip * MR : MR,
                                 H - jp * NR < NR ? H - jp * NR : NR, 1.0f);
                for (int64_t n = 0; n < N; n++)
                    cell_fwd_row(gt + n * G, bias, cs + t * NH + n * H, cs + (t + 1) * NH + n * H,
                                 hs + (t + 1) * NH + n * H, H, j0, j1);
            }
#pragma omp barrier
        }
    }
}

/* Recurrence of one layer, backward: steps t = T-1..0; each thread applies the cell backward to
 * its hidden units (dh of those units is its own GEMM output of the step before), a barrier, then
 * packs dg_t and computes its columns of dh = dg_t * Wh^T. */
static void fused_bwd_layer(bkm_kern_lstm_t *ls, const float *wh, const float *gates, const float *cs,
                            const float *dyl)
{
    const int64_t N = ls->d.n, T = ls->d.t, H = ls->d.h, G = 4 * H, NH = N * H;
    const int64_t MR = ls->u->mr, NR = ls->u->nr, npj = ls->npj, mp = ls->mp;
#pragma omp parallel num_threads(ls->nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        float *ap = ls->apack + (size_t)tid * (size_t)(mp * MR * G);
        /* Wh^T [4H][H] -> panel jp: b[p * NR + jj] = Wh[jp * NR + jj][p] (0 past H) */
#pragma omp for schedule(static)
        for (int64_t jp = 0; jp < npj; jp++) {
            float *b = ls->bpack + jp * G * NR;
            for (int64_t jj = 0; jj < NR; jj++) {
                const int64_t col = jp * NR + jj;
                for (int64_t p = 0; p < G; p++)
                    b[p * NR + jj] = col < H ? wh[col * G + p] : 0.0f;
            }
        }
        const int64_t jp0 = tid * npj / nth, jp1 = (tid + 1) * npj / nth;
        const int64_t j0 = jp0 * NR, j1 = jp1 * NR < H ? jp1 * NR : H;
        for (int64_t t = T - 1; t >= 0; t--) {
            float *dgt = ls->dg + t * N * G;
            const float *gt = gates + t * N * G;
            for (int64_t n = 0; n < N; n++)
                cell_bwd_row(gt + n * G, cs + t * NH + n * H, cs + (t + 1) * NH + n * H, dyl + t * NH + n * H,
                             ls->dh + n * H, ls->dc + n * H, dgt + n * G, H, j0, j1);
#pragma omp barrier
            if (jp1 > jp0) {
                pack_a(ls, dgt, G, G, ap);
                for (int64_t jp = jp0; jp < jp1; jp++)
                    for (int64_t ip = 0; ip < mp; ip++)
                        tile(ls, G, ap + ip * G * MR, ls->bpack + jp * G * NR, ls->dh + ip * MR * H + jp * NR, H,
                             N - ip * MR < MR ? N - ip * MR : MR, H - jp * NR < NR ? H - jp * NR : NR, 0.0f);
            }
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
        if (ls->algo == ALGO_FUSED)
            fused_fwd_layer(ls, w + oh, w + ob, gates, hs, cs);
        for (int64_t t = 0; ls->algo == ALGO_SPLIT && t < T; t++) {
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
        if (ls->algo == ALGO_FUSED)
            fused_bwd_layer(ls, w + oh, gates, cs, dyl);
        for (int64_t t = T - 1; ls->algo == ALGO_SPLIT && t >= 0; t--) {
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

/* ---------------------------------------------------------------------------------------- */
/* The native backend's LSTM stack (backend_int.h): this object behind the LSTM vtable       */

static int nat_lstm_fwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w, float *y,
                        float *hT, float *cT, bkm_err_t *err)
{
    return bkm_kern_lstm_fwd(ls->priv, x, h0, c0, w, y, hT, cT, err);
}

static int nat_lstm_bwd(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w,
                        const float *dy, const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0,
                        float *dw, bkm_err_t *err)
{
    return bkm_kern_lstm_bwd(ls->priv, x, w, dy, dhT, dcT, dx, dh0, dc0, dw, err);
}

static const char *nat_lstm_impl(const bkm__lstm_t *ls)
{
    return bkm_kern_lstm_impl(ls->priv);
}

static void nat_lstm_destroy(bkm__lstm_t *ls)
{
    bkm_kern_lstm_destroy(ls->priv);
    ls->priv = NULL;
    ls->vt = NULL;
}

static const bkm__lstm_vtbl_t nat_lstm_vtbl = {nat_lstm_fwd, nat_lstm_bwd, nat_lstm_impl, nat_lstm_destroy};

int bkm__lstm_native_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                            bkm_err_t *err)
{
    bkm_kern_lstm_t *obj = NULL;
    int rc = bkm_kern_lstm_create(&obj, d, p, err);
    if (rc < 0)
        return rc;
    *ls = (bkm__lstm_t){&nat_lstm_vtbl, *d, obj};
    return BKM_OK;
}
