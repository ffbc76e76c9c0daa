/* SPDX-License-Identifier: MIT */
/* Native CNN layers besides conv2d: max pooling with argmax, ReLU, fully connected over SGEMM,
 * counter-based dropout, softmax + cross-entropy, SGD with momentum and weight decay. OpenMP
 * over independent outputs; nothing allocates after creation. */
#include "kernels_int.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Max pooling                                                                               */

int bkm_kern_pool_desc_init(bkm_pool_desc_t *d, int64_t mb, int64_t c, int64_t ih, int64_t iw, int64_t k, int64_t s,
                            int64_t p, bkm_err_t *err)
{
    const int64_t lim = 1LL << 24;
    if (d == NULL)
        return bkm_err_set(err, BKM_EINVAL, "pool: NULL descriptor");
    if (mb <= 0 || c <= 0 || ih <= 0 || iw <= 0 || mb > lim || c > lim || ih > lim || iw > lim)
        return bkm_err_set(err, BKM_EINVAL, "pool: tensor mb%lld c%lld ih%lld iw%lld must have positive sizes",
                           (long long)mb, (long long)c, (long long)ih, (long long)iw);
    if (k <= 0 || s <= 0 || p < 0 || k > lim || s > lim || p >= k)
        return bkm_err_set(err, BKM_EINVAL, "pool: window k%lld s%lld p%lld is invalid (k, s > 0, 0 <= p < k)",
                           (long long)k, (long long)s, (long long)p);
    if (ih + 2 * p < k || iw + 2 * p < k)
        return bkm_err_set(err, BKM_EINVAL, "pool: window k%lld is larger than the padded input %lldx%lld",
                           (long long)k, (long long)(ih + 2 * p), (long long)(iw + 2 * p));
    if (mb * c > (1LL << 36) / (ih * iw))
        return bkm_err_set(err, BKM_EINVAL, "pool: tensor mb%lld c%lld ih%lld iw%lld is too large", (long long)mb,
                           (long long)c, (long long)ih, (long long)iw);
    d->mb = mb;
    d->c = c;
    d->ih = ih;
    d->iw = iw;
    d->kh = d->kw = k;
    d->sh = d->sw = s;
    d->ph = d->pw = p;
    d->oh = (ih + 2 * p - k) / s + 1;
    d->ow = (iw + 2 * p - k) / s + 1;
    return BKM_OK;
}

/* One output row of one plane: taps outer, output columns inner (in chunks of POOL_CHUNK), so the
 * inner loop is branch-free and vectorises; a later tap replaces the best only when strictly
 * greater (row-major first maximum, as the reference). Windows that start in the padding or end
 * past the input (the edge columns) take the clipped scalar loop. */
#define POOL_CHUNK 64
static inline void pool_tap(const float *restrict row, int32_t off, int64_t sw, int64_t nc, float *restrict best,
                            int32_t *restrict bi)
{
    for (int64_t j = 0; j < nc; j++) {
        const float v = row[j * sw];
        const int gt = v > best[j];
        best[j] = gt ? v : best[j];
        bi[j] = gt ? off + (int32_t)(j * sw) : bi[j];
    }
}

/* left: the floats from in to the end of the source tensor (the prefetch stays inside it) */
static void maxpool_row(const bkm_pool_desc_t *d, const float *in, int64_t left, int64_t oy, float *out, int32_t *am,
                        int avx512)
{
    const int64_t y0 = oy * d->sh - d->ph;
    const int64_t ya = y0 < 0 ? 0 : y0, yb = y0 + d->kh > d->ih ? d->ih : y0 + d->kh;
    /* output columns [xa, xb) have their whole window inside the row */
    const int64_t xa = d->pw <= 0 ? 0 : (d->pw + d->sw - 1) / d->sw;
    const int64_t xb_num = d->iw + d->pw - d->kw, xb = xb_num < 0 ? 0 : xb_num / d->sw + 1 < d->ow ? xb_num / d->sw + 1 : d->ow;
    for (int64_t ox = 0; ox < d->ow; ox++) {
        if (ox == xa && xa < xb) {
            ox = xb - 1; /* the interior, below */
            continue;
        }
        const int64_t x0 = ox * d->sw - d->pw;
        const int64_t xl = x0 < 0 ? 0 : x0, xr = x0 + d->kw > d->iw ? d->iw : x0 + d->kw;
        float best = -INFINITY;
        int64_t bi = ya * d->iw + xl;
        for (int64_t y = ya; y < yb; y++)
            for (int64_t x = xl; x < xr; x++)
                if (in[y * d->iw + x] > best) {
                    best = in[y * d->iw + x];
                    bi = y * d->iw + x;
                }
        out[ox] = in[bi];
        am[ox] = (int32_t)bi;
    }
    if (avx512 && xa < xb) {
        /* the sh rows that output row oy + 2 reads first (the next plane's first rows at the end) */
        const int64_t pa = (y0 + d->sh + d->kh) * d->iw, pb = pa + d->sh * d->iw > left ? left : pa + d->sh * d->iw;
        bkm__maxpool_row_avx512(in, d->iw, ya, yb, d->kw, xa * d->sw - d->pw, d->sw, xb - xa, out + xa, am + xa,
                                in + (pa < pb ? pa : 0), pa < pb ? pb - pa : 0);
        return;
    }
    for (int64_t c0 = xa; c0 < xb; c0 += POOL_CHUNK) {
        const int64_t nc = xb - c0 < POOL_CHUNK ? xb - c0 : POOL_CHUNK;
        float best[POOL_CHUNK];
        int32_t bi[POOL_CHUNK];
        for (int64_t j = 0; j < nc; j++) {
            best[j] = -INFINITY;
            bi[j] = (int32_t)(ya * d->iw + (c0 + j) * d->sw - d->pw);
        }
        for (int64_t y = ya; y < yb; y++)
            for (int64_t x = 0; x < d->kw; x++) {
                const int64_t off = y * d->iw + c0 * d->sw - d->pw + x;
                if (d->sw == 2) /* AlexNet's pools: a constant stride vectorises */
                    pool_tap(in + off, (int32_t)off, 2, nc, best, bi);
                else if (d->sw == 1)
                    pool_tap(in + off, (int32_t)off, 1, nc, best, bi);
                else
                    pool_tap(in + off, (int32_t)off, d->sw, nc, best, bi);
            }
        for (int64_t j = 0; j < nc; j++) {
            out[c0 + j] = in[bi[j]];
            am[c0 + j] = bi[j];
        }
    }
}

/* Output rows from oy on that bkm__maxpool_rows_avx512 takes at once (4 or 2; else 1): no column
 * padding, one chunk of at most 16 columns, every window inside the input vertically. */
static int64_t rows_at_once(const bkm_pool_desc_t *d, int64_t oy, int avx512)
{
    const int64_t y0 = oy * d->sh - d->ph;
    if (!avx512 || d->pw != 0 || d->ow > 16 || (d->ow - 1) * d->sw + d->kw > d->iw || y0 < 0)
        return 1;
    for (int64_t r = 4; r >= 2; r /= 2)
        if (oy + r <= d->oh && y0 + (r - 1) * d->sh + d->kh <= d->ih)
            return r;
    return 1;
}

/* relu: the output plane through ReLU once its rows are done (bkm__kern_maxpool_relu_fwd) */
static void maxpool_fwd(const bkm_pool_desc_t *d, const float *src, float *dst, int32_t *argmax, int relu)
{
    const int64_t planes = d->mb * d->c, ipl = d->ih * d->iw, opl = d->oh * d->ow;
    /* the AVX-512 row kernel indexes with int32 lanes: planes must stay below 2^31 elements */
    const int avx512 = bkm_kern_isa_detect() == BKM_ISA_AVX512 && ipl < (1LL << 31) - 64;
#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *o = dst + pl * opl;
        for (int64_t oy = 0; oy < d->oh;) {
            const int64_t r = rows_at_once(d, oy, avx512);
            if (r > 1) {
                /* the r sh rows the next r output rows read beyond these (the next plane's at the end) */
                const int64_t y0 = oy * d->sh - d->ph, left = (planes - pl) * ipl;
                const int64_t pa = (y0 + (r - 1) * d->sh + d->kh) * d->iw;
                const int64_t pb = pa + r * d->sh * d->iw > left ? left : pa + r * d->sh * d->iw;
                bkm__maxpool_rows_avx512(r, src + pl * ipl, d->iw, y0, d->sh, d->kh, d->kw, 0, d->sw, d->ow,
                                         o + oy * d->ow, d->ow, argmax + pl * opl + oy * d->ow,
                                         src + pl * ipl + (pa < pb ? pa : 0), pa < pb ? pb - pa : 0);
                oy += r;
                continue;
            }
            maxpool_row(d, src + pl * ipl, (planes - pl) * ipl, oy, o + oy * d->ow, argmax + pl * opl + oy * d->ow,
                        avx512);
            oy++;
        }
        if (relu) /* as bkm_kern_relu_fwd: NaN and -0 give +0 */
            for (int64_t i = 0; i < opl; i++)
                o[i] = o[i] > 0.0f ? o[i] : 0.0f;
    }
}

void bkm_kern_maxpool_fwd(const bkm_pool_desc_t *d, const float *src, float *dst, int32_t *argmax)
{
    maxpool_fwd(d, src, dst, argmax, 0);
}

void bkm__kern_maxpool_relu_fwd(const bkm_pool_desc_t *d, const float *src, float *dst, int32_t *argmax)
{
    maxpool_fwd(d, src, dst, argmax, 1);
}

/* mask: keep a term only where mask at its argmax is > 0; else omask: only where omask (the pool's
 * output) is > 0; both NULL: every term */
static void maxpool_bwd(const bkm_pool_desc_t *d, const float *diff_dst, const int32_t *argmax, const float *mask,
                        const float *omask, float *diff_src)
{
    const int64_t planes = d->mb * d->c, ipl = d->ih * d->iw, opl = d->oh * d->ow;
    /* One plane per iteration: the scatter stays inside the plane, so threads never collide. */
#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *ds = diff_src + pl * ipl;
        const float *dd = diff_dst + pl * opl;
        const int32_t *am = argmax + pl * opl;
        memset(ds, 0, (size_t)ipl * sizeof(float));
        if (mask == NULL && omask != NULL) {
            const float *om = omask + pl * opl;
            for (int64_t i = 0; i < opl; i++) /* branch-free, as below */
                ds[am[i]] += om[i] > 0.0f ? dd[i] : 0.0f;
        } else if (mask == NULL) {
            for (int64_t i = 0; i < opl; i++)
                ds[am[i]] += dd[i];
        } else {
            const float *mk = mask + pl * ipl;
            /* branch-free: adding +0 leaves the sum's bits (it starts at +0, so it is never -0) */
            for (int64_t i = 0; i < opl; i++) {
                const int32_t a = am[i];
                ds[a] += mk[a] > 0.0f ? dd[i] : 0.0f;
            }
        }
    }
}

void bkm_kern_maxpool_bwd(const bkm_pool_desc_t *d, const float *diff_dst, const int32_t *argmax, float *diff_src)
{
    maxpool_bwd(d, diff_dst, argmax, NULL, NULL, diff_src);
}

void bkm__kern_maxpool_relu_bwd(const bkm_pool_desc_t *d, const float *diff_dst, const int32_t *argmax,
                                const float *src, const float *dst, float *diff_src)
{
    maxpool_bwd(d, diff_dst, argmax, dst != NULL ? NULL : src, dst, diff_src);
}

/* ---------------------------------------------------------------------------------------- */
/* ReLU                                                                                      */

void bkm_kern_relu_fwd(size_t n, const float *src, float *dst)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
}

void bkm_kern_relu_bwd(size_t n, const float *dst, const float *diff_dst, float *diff_src)
{
    /* both loads unconditional, so the select vectorises (a conditional load does not) */
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float g = diff_dst[i];
        diff_src[i] = dst[i] > 0.0f ? g : 0.0f;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Fully connected                                                                           */

struct bkm_kern_fc {
    bkm_fc_desc_t d;
    bkm_gemm_cfg_t cfg;
    void *ws;
};

/* Small batches (mb <= FC_SMALL_MB, as the conv3d network's 4) skip the GEMM: with a handful of
 * rows the GEMM packs the whole weight matrix (transposed, for the forward) to use a sliver of
 * each micro-tile. Instead the weights stream once: forward as dot products of each weight row
 * with the mb input rows, backward-data as row updates of FC_SMALL_COLS-column blocks of diff_src
 * held in L1, backward-weights as each weight-gradient row written once from the mb input rows
 * (a K = mb GEMM would pack both operands for a handful of FMAs per output). Every output element
 * has one owner and a fixed summation order. */
#ifndef FC_SMALL_MB
#define FC_SMALL_MB 8
#endif
#define FC_SMALL_COLS 128

static float dot_lanes(const float *x, const float *w, int64_t n)
{
    float acc[16] = {0.0f};
    float s = 0.0f;
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int l = 0; l < 16; l++)
            acc[l] += x[j + l] * w[j + l];
    for (; j < n; j++)
        s += x[j] * w[j];
    for (int l = 0; l < 16; l++)
        s += acc[l];
    return s;
}

static void fc_small_fwd(const bkm_fc_desc_t *d, const float *src, const float *wei, const float *bias, float *dst)
{
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < d->out; o++) {
        const float *w = wei + o * d->in;
        for (int64_t n = 0; n < d->mb; n++)
            dst[n * d->out + o] = (bias != NULL ? bias[o] : 0.0f) + dot_lanes(src + n * d->in, w, d->in);
    }
}

static void fc_small_bwd_data(const bkm_fc_desc_t *d, const float *diff_dst, const float *wei, float *diff_src)
{
    const int64_t blocks = (d->in + FC_SMALL_COLS - 1) / FC_SMALL_COLS;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * FC_SMALL_COLS, nc = d->in - i0 < FC_SMALL_COLS ? d->in - i0 : FC_SMALL_COLS;
        float acc[FC_SMALL_MB][FC_SMALL_COLS];
        for (int64_t n = 0; n < d->mb; n++)
            for (int64_t l = 0; l < nc; l++)
                acc[n][l] = 0.0f;
        for (int64_t o = 0; o < d->out; o++) {
            const float *w = wei + o * d->in + i0;
            for (int64_t n = 0; n < d->mb; n++) {
                const float a = diff_dst[n * d->out + o];
                for (int64_t l = 0; l < nc; l++)
                    acc[n][l] += a * w[l];
            }
        }
        for (int64_t n = 0; n < d->mb; n++)
            memcpy(diff_src + n * d->in + i0, acc[n], (size_t)nc * sizeof(float));
    }
}

static void fc_small_bwd_weights(const bkm_fc_desc_t *d, const float *src, const float *diff_dst, float *diff_wei)
{
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < d->out; o++) {
        float *w = diff_wei + o * d->in;
        const float a0 = diff_dst[o];
        for (int64_t l = 0; l < d->in; l++)
            w[l] = a0 * src[l];
        for (int64_t n = 1; n < d->mb; n++) {
            const float a = diff_dst[n * d->out + o], *x = src + n * d->in;
            for (int64_t l = 0; l < d->in; l++)
                w[l] += a * x[l];
        }
    }
}

double bkm_kern_fc_flops(const bkm_fc_desc_t *d)
{
    return 2.0 * (double)d->mb * (double)d->in * (double)d->out;
}

void bkm_kern_fc_destroy(bkm_kern_fc_t *fc)
{
    if (fc == NULL)
        return;
    bkm_free(fc->ws);
    bkm_free(fc);
}

int bkm_kern_fc_create(bkm_kern_fc_t **out, const bkm_fc_desc_t *d, const bkm_kern_params_t *params, bkm_err_t *err)
{
    bkm_kern_fc_t *fc = NULL;
    const bkm_param_desc_t *pd;
    size_t n_pd, ws_bytes;
    int32_t v[8];
    int rc;
    if (out == NULL || d == NULL)
        return bkm_err_set(err, BKM_EINVAL, "fc_create: NULL argument");
    *out = NULL;
    if (d->mb <= 0 || d->in <= 0 || d->out <= 0 || d->mb > (1LL << 24) || d->in > (1LL << 24) ||
        d->out > (1LL << 24))
        return bkm_err_set(err, BKM_EINVAL, "fc: sizes mb%lld in%lld out%lld must be in 1..2^24", (long long)d->mb,
                           (long long)d->in, (long long)d->out);
    fc = bkm_calloc(1, sizeof(*fc));
    if (fc == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "fc: out of memory");
    fc->d = *d;
    if ((rc = bkm_kern_gemm_cfg_init(&fc->cfg, params != NULL ? params->isa : BKM_ISA_AUTO, err)) < 0)
        goto out;
    pd = bkm_kern_gemm_params(fc->cfg.isa, &n_pd);
    if (n_pd > sizeof(v) / sizeof(v[0])) {
        rc = bkm_err_set(err, BKM_EINVAL, "fc: unexpected GEMM tunable table (%zu entries)", n_pd);
        goto out;
    }
    if ((rc = bkm_kern_params_resolve(params, pd, n_pd, v, err)) < 0)
        goto out;
    for (size_t i = 0; i < n_pd; i++)
        if ((rc = bkm_kern_gemm_cfg_set(&fc->cfg, pd[i].name, v[i], err)) < 0)
            goto out;
    fc->cfg.l2_bytes = params != NULL ? params->cache.l2 : 0;
    fc->cfg.l1_bytes = params != NULL ? params->cache.l1d : 0;
    if ((rc = bkm_kern_gemm_cfg_check(&fc->cfg, err)) < 0)
        goto out;
    ws_bytes = bkm_kern_gemm_workspace_bytes(&fc->cfg);
    fc->ws = bkm_aligned_alloc(64, ws_bytes);
    if (fc->ws == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "fc: cannot allocate %zu bytes of GEMM workspace", ws_bytes);
        goto out;
    }
    bkm_kern_gemm_workspace_touch(&fc->cfg, fc->ws);   /* by the team that packs into it */
    *out = fc;
    fc = NULL;
out:
    bkm_kern_fc_destroy(fc);
    return rc;
}

int bkm_kern_fc_fwd(bkm_kern_fc_t *fc, const float *src, const float *wei, const float *bias, float *dst,
                    bkm_err_t *err)
{
    const bkm_fc_desc_t *d;
    int rc;
    if (fc == NULL || src == NULL || wei == NULL || dst == NULL)
        return bkm_err_set(err, BKM_EINVAL, "fc_fwd: NULL argument");
    d = &fc->d;
    if (d->mb <= FC_SMALL_MB) {
        fc_small_fwd(d, src, wei, d->has_bias ? bias : NULL, dst);
        return BKM_OK;
    }
    if (d->has_bias && bias != NULL) {
        /* dst starts as the broadcast bias, then the GEMM accumulates onto it (beta = 1). */
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < d->mb; i++)
            memcpy(dst + i * d->out, bias, (size_t)d->out * sizeof(float));
    }
    rc = bkm_kern_sgemm(&fc->cfg, 'N', 'T', d->mb, d->out, d->in, 1.0f, src, d->in, wei, d->in,
                        (d->has_bias && bias != NULL) ? 1.0f : 0.0f, dst, d->out, fc->ws, err);
    return rc;
}

int bkm_kern_fc_bwd_data(bkm_kern_fc_t *fc, const float *diff_dst, const float *wei, float *diff_src, bkm_err_t *err)
{
    const bkm_fc_desc_t *d;
    if (fc == NULL || diff_dst == NULL || wei == NULL || diff_src == NULL)
        return bkm_err_set(err, BKM_EINVAL, "fc_bwd_data: NULL argument");
    d = &fc->d;
    if (d->mb <= FC_SMALL_MB) {
        fc_small_bwd_data(d, diff_dst, wei, diff_src);
        return BKM_OK;
    }
    return bkm_kern_sgemm(&fc->cfg, 'N', 'N', d->mb, d->in, d->out, 1.0f, diff_dst, d->out, wei, d->in, 0.0f,
                          diff_src, d->in, fc->ws, err);
}

int bkm_kern_fc_bwd_weights(bkm_kern_fc_t *fc, const float *src, const float *diff_dst, float *diff_wei,
                            float *diff_bias, bkm_err_t *err)
{
    const bkm_fc_desc_t *d;
    int rc;
    if (fc == NULL || src == NULL || diff_dst == NULL || diff_wei == NULL)
        return bkm_err_set(err, BKM_EINVAL, "fc_bwd_weights: NULL argument");
    d = &fc->d;
    if (d->mb <= FC_SMALL_MB) {
        fc_small_bwd_weights(d, src, diff_dst, diff_wei);
        rc = BKM_OK;
    } else {
        rc = bkm_kern_sgemm(&fc->cfg, 'T', 'N', d->out, d->in, d->mb, 1.0f, diff_dst, d->out, src, d->in, 0.0f,
                            diff_wei, d->in, fc->ws, err);
    }
    if (rc == BKM_OK && d->has_bias && diff_bias != NULL) {
        /* Per output column, rows in order: deterministic for any thread count. */
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < d->out; j++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < d->mb; i++)
                acc += diff_dst[i * d->out + j];
            diff_bias[j] = acc;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Dropout                                                                                   */

int bkm_kern_dropout_keep(uint64_t seed, uint64_t i, float p)
{
    /* 24 random bits -> u in [0, 1); keep when u >= p. */
    const float u = (float)(bkm__kern_hash64(seed, i) >> 40) * (1.0f / 16777216.0f);
    return u >= p;
}

static int dropout_check_p(float p, bkm_err_t *err)
{
    if (!(p >= 0.0f && p < 1.0f))
        return bkm_err_set(err, BKM_EINVAL, "dropout: p=%g is outside [0, 1)", (double)p);
    return BKM_OK;
}

int bkm_kern_dropout_fwd(size_t n, float p, uint64_t seed, const float *src, float *dst, uint8_t *mask,
                         bkm_err_t *err)
{
    const float scale = 1.0f / (1.0f - p);
    int rc = dropout_check_p(p, err);
    if (rc < 0)
        return rc;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        const int keep = p == 0.0f ? 1 : bkm_kern_dropout_keep(seed, i, p);
        dst[i] = keep ? src[i] * scale : 0.0f;
        if (mask != NULL)
            mask[i] = (uint8_t)keep;
    }
    return BKM_OK;
}

int bkm_kern_dropout_bwd(size_t n, float p, const uint8_t *mask, const float *diff_dst, float *diff_src,
                         bkm_err_t *err)
{
    const float scale = 1.0f / (1.0f - p);
    int rc = dropout_check_p(p, err);
    if (rc < 0)
        return rc;
    if (mask == NULL && p != 0.0f)
        return bkm_err_set(err, BKM_EINVAL, "dropout_bwd: p=%g needs the forward mask", (double)p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        diff_src[i] = (mask == NULL || mask[i]) ? diff_dst[i] * scale : 0.0f;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Softmax + cross-entropy                                                                   */

static int xent_check_labels(int64_t mb, int64_t nc, const int32_t *labels, bkm_err_t *err)
{
    if (mb <= 0 || nc <= 0)
        return bkm_err_set(err, BKM_EINVAL, "softmax_xent: sizes mb%lld nc%lld must be positive", (long long)mb,
                           (long long)nc);
    for (int64_t i = 0; i < mb; i++)
        if (labels[i] < 0 || labels[i] >= nc)
            return bkm_err_set(err, BKM_EINVAL, "softmax_xent: label[%lld]=%d is outside [0, %lld)", (long long)i,
                               (int)labels[i], (long long)nc);
    return BKM_OK;
}

int bkm_kern_softmax_xent_fwd(int64_t mb, int64_t nc, const float *logits, const int32_t *labels, float *prob,
                              double *loss, bkm_err_t *err)
{
    double total = 0.0;
    int rc = xent_check_labels(mb, nc, labels, err);
    if (rc < 0)
        return rc;
    /* Per-row log-sum-exp; the batch sum uses a fixed-order reduction over rows. */
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int64_t i = 0; i < mb; i++) {
        const float *x = logits + i * nc;
        float mx = x[0];
        double sum = 0.0;
        for (int64_t j = 1; j < nc; j++)
            mx = x[j] > mx ? x[j] : mx;
        for (int64_t j = 0; j < nc; j++)
            sum += exp((double)x[j] - mx);
        if (prob != NULL)
            for (int64_t j = 0; j < nc; j++)
                prob[i * nc + j] = (float)(exp((double)x[j] - mx) / sum);
        total += log(sum) + mx - (double)x[labels[i]];
    }
    if (loss != NULL)
        *loss = total / (double)mb;
    return BKM_OK;
}

int bkm_kern_softmax_xent_bwd(int64_t mb, int64_t nc, const float *prob, const int32_t *labels, float *diff_logits,
                              bkm_err_t *err)
{
    const float inv = 1.0f / (float)mb;
    int rc = xent_check_labels(mb, nc, labels, err);
    if (rc < 0)
        return rc;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < nc; j++)
            diff_logits[i * nc + j] = (prob[i * nc + j] - (j == labels[i] ? 1.0f : 0.0f)) * inv;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* SGD                                                                                       */

void bkm_kern_sgd_step(size_t n, float *w, const float *g, float *v, float lr, float mu, float wd)
{
    if (mu == 0.0f || v == NULL) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++)
            w[i] -= lr * (g[i] + wd * w[i]);
        return;
    }
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] + wd * w[i];
        v[i] = mu * v[i] + gi;
        w[i] -= lr * v[i];
    }
}

double bkm_kern_sgd_flops(size_t n, float mu, float wd)
{
    return (double)n * (2.0 + (mu != 0.0f ? 2.0 : 0.0) + (wd != 0.0f ? 2.0 : 0.0));
}
