/* SPDX-License-Identifier: MIT */
/* conv3d (NCDHW, fp32): benchdnn 3-D descriptors, vol2col and col2vol over one flat index range
 * split evenly over the threads (each thread decodes its start once and walks with carries;
 * col2vol is a gather, so every element has one writer), forward / backward-data / backward-
 * weights as vol2col + SGEMM, and 3-D max pooling. */
#include "kernels_int.h"

#include <ctype.h>
#include <float.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#define C3_DIM_MAX (1LL << 24)
#define C3_ELEMS_MAX (1LL << 36)
#ifndef C3_BWW_BATCH_MAX_K
#define C3_BWW_BATCH_MAX_K 64 /* auto backward-weights of algo 3 as algo 1 up to this many col rows */
#endif
#ifndef C3_NT_MIN_BYTES
#define C3_NT_MIN_BYTES (32u << 20) /* vol2col with streaming stores from this column size on */
#endif
#define C3_TAPS_MAX 64 /* largest kernel extent along one axis (col2vol keeps its taps on the stack) */

/* ---------------------------------------------------------------------------------------- */
/* Descriptor                                                                                 */

/* Spatial keys come in (d, h, w) triples from F_ID on, so that "missing h copies d, w copies h" is
 * one loop. */
enum { F_MB, F_G, F_IC, F_OC, F_ID, F_IH, F_IW, F_OD, F_OH, F_OW, F_KD, F_KH, F_KW, F_SD, F_SH, F_SW,
       F_PD, F_PH, F_PW, F_DD, F_DH, F_DW, F_COUNT };
static const char *const keys[F_COUNT] = {"mb", "g", "ic", "oc", "id", "ih", "iw", "od", "oh", "ow", "kd",
                                          "kh", "kw", "sd", "sh", "sw", "pd", "ph", "pw", "dd", "dh", "dw"};

static int64_t out_size(int64_t i, int64_t k, int64_t s, int64_t p)
{
    int64_t span = i + 2 * p - k;
    return span < 0 || s <= 0 ? 0 : span / s + 1;
}

int bkm_kern_conv3d_desc_check(bkm_conv3d_desc_t *d, bkm_err_t *err)
{
    const int64_t pos[] = {d->mb, d->ic, d->id, d->ih, d->iw, d->oc, d->kd, d->kh, d->kw, d->sd, d->sh, d->sw};
    const char *const pos_k[] = {"mb", "ic", "id", "ih", "iw", "oc", "kd", "kh", "kw", "sd", "sh", "sw"};
    const int64_t pad[] = {d->pd, d->ph, d->pw};
    const char *const pad_k[] = {"pd", "ph", "pw"};
    int64_t o[3];
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i] <= 0 || pos[i] > C3_DIM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "conv3d: %s%lld is out of range (1..%lld)", pos_k[i],
                               (long long)pos[i], C3_DIM_MAX);
    {
        const int64_t k[3] = {d->kd, d->kh, d->kw};
        for (int i = 0; i < 3; i++)
            if (k[i] > C3_TAPS_MAX)
                return bkm_err_set(err, BKM_EINVAL, "conv3d: %s%lld exceeds the largest kernel, %d", pos_k[6 + i],
                                   (long long)k[i], C3_TAPS_MAX);
    }
    for (int i = 0; i < 3; i++)
        if (pad[i] < 0 || pad[i] > C3_DIM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "conv3d: padding %s%lld is out of range", pad_k[i], (long long)pad[i]);
    o[0] = out_size(d->id, d->kd, d->sd, d->pd);
    o[1] = out_size(d->ih, d->kh, d->sh, d->ph);
    o[2] = out_size(d->iw, d->kw, d->sw, d->pw);
    {
        int64_t *decl[3] = {&d->od, &d->oh, &d->ow};
        const char *const ok[3] = {"od", "oh", "ow"}, *const ik[3] = {"id", "ih", "iw"};
        const int64_t in[3] = {d->id, d->ih, d->iw}, k[3] = {d->kd, d->kh, d->kw};
        for (int i = 0; i < 3; i++) {
            if (o[i] <= 0)
                return bkm_err_set(err, BKM_EINVAL, "conv3d: empty output: %s%lld with a %lld-wide kernel and "
                                   "padding %lld", ik[i], (long long)in[i], (long long)k[i], (long long)pad[i]);
            if (*decl[i] != 0 && *decl[i] != o[i])
                return bkm_err_set(err, BKM_EINVAL, "conv3d: %s%lld is inconsistent (the shape gives %s%lld)", ok[i],
                                   (long long)*decl[i], ok[i], (long long)o[i]);
            *decl[i] = o[i];
        }
    }
    if ((double)d->mb * (double)d->ic * (double)(d->id * d->ih * d->iw) > (double)C3_ELEMS_MAX ||
        (double)d->mb * (double)d->oc * (double)(d->od * d->oh * d->ow) > (double)C3_ELEMS_MAX ||
        (double)d->ic * (double)(d->kd * d->kh * d->kw) * (double)(d->od * d->oh * d->ow) > (double)C3_ELEMS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "conv3d: mb%lld ic%lld oc%lld: tensors too large", (long long)d->mb,
                           (long long)d->ic, (long long)d->oc);
    return BKM_OK;
}

int bkm_kern_conv3d_desc_parse(const char *text, int64_t mb_override, bkm_conv3d_desc_t *d, bkm_err_t *err)
{
    int64_t v[F_COUNT];
    int set[F_COUNT] = {0};
    const char *p = text;
    if (!text || !*text)
        return bkm_err_set(err, BKM_EINVAL, "conv3d: empty descriptor");
    memset(d, 0, sizeof *d);
    memset(v, 0, sizeof v);
    while (*p) {
        char key[8];
        size_t kl = 0;
        int f = -1;
        char *end;
        long long x;
        if (*p == '_') {
            p++;
            continue;
        }
        while (isalpha((unsigned char)*p) && kl + 1 < sizeof key)
            key[kl++] = *p++;
        key[kl] = '\0';
        if (isalpha((unsigned char)*p))
            return bkm_err_set(err, BKM_EINVAL, "conv3d: unknown key in '%s'", text);
        for (int i = 0; i < F_COUNT; i++)
            if (strcmp(key, keys[i]) == 0)
                f = i;
        if (f < 0 || !(isdigit((unsigned char)*p) || *p == '-'))
            return bkm_err_set(err, BKM_EINVAL, "conv3d: unknown key or missing value '%s' in '%s'", key, text);
        x = strtoll(p, &end, 10);
        if (end == p || x < -C3_DIM_MAX || x > C3_DIM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "conv3d: bad value for %s in '%s'", key, text);
        if (set[f])
            return bkm_err_set(err, BKM_EINVAL, "conv3d: %s given twice in '%s'", key, text);
        v[f] = x;
        set[f] = 1;
        p = end;
    }
    if (set[F_G] && v[F_G] != 1)
        return bkm_err_set(err, BKM_EINVAL, "conv3d: g%lld: groups are not supported", (long long)v[F_G]);
    for (int f = F_DD; f <= F_DW; f++)
        if (set[f] && v[f] != 0)
            return bkm_err_set(err, BKM_EINVAL, "conv3d: %s%lld: dilation is not supported", keys[f], (long long)v[f]);
    if (!set[F_ID])
        return bkm_err_set(err, BKM_EINVAL, "conv3d: '%s' has no id: not a 3-D descriptor", text);
    if (!set[F_IC] || !set[F_OC])
        return bkm_err_set(err, BKM_EINVAL, "conv3d: '%s' needs ic and oc", text);
    /* missing h copies d, missing w copies h (inputs, kernels, strides, paddings, outputs) */
    for (int b = F_ID; b <= F_PD; b += 3)
        for (int j = 1; j <= 2; j++)
            if (!set[b + j] && set[b + j - 1]) {
                v[b + j] = v[b + j - 1];
                set[b + j] = 1;
            }
    d->mb = mb_override > 0 ? mb_override : set[F_MB] ? v[F_MB] : 2;
    d->ic = v[F_IC];
    d->oc = v[F_OC];
    d->id = v[F_ID], d->ih = v[F_IH], d->iw = v[F_IW];
    d->od = v[F_OD], d->oh = v[F_OH], d->ow = v[F_OW];
    d->kd = set[F_KD] ? v[F_KD] : 3, d->kh = set[F_KH] ? v[F_KH] : 3, d->kw = set[F_KW] ? v[F_KW] : 3;
    d->sd = set[F_SD] ? v[F_SD] : 1, d->sh = set[F_SH] ? v[F_SH] : 1, d->sw = set[F_SW] ? v[F_SW] : 1;
    d->pd = v[F_PD], d->ph = v[F_PH], d->pw = v[F_PW];
    d->has_bias = 1;
    if (set[F_OD] && v[F_OD] <= 0)
        return bkm_err_set(err, BKM_EINVAL, "conv3d: od%lld must be positive", (long long)v[F_OD]);
    return bkm_kern_conv3d_desc_check(d, err);
}

void bkm_kern_conv3d_desc_format(const bkm_conv3d_desc_t *d, bkm_buf_t *out)
{
    bkm_buf_printf(out, "mb%lldic%lldoc%lld_id%lldod%lldkd%lldsd%lldpd%lld_ih%lldoh%lldkh%lldsh%lldph%lld_"
                   "iw%lldow%lldkw%lldsw%lldpw%lld",
                   (long long)d->mb, (long long)d->ic, (long long)d->oc, (long long)d->id, (long long)d->od,
                   (long long)d->kd, (long long)d->sd, (long long)d->pd, (long long)d->ih, (long long)d->oh,
                   (long long)d->kh, (long long)d->sh, (long long)d->ph, (long long)d->iw, (long long)d->ow,
                   (long long)d->kw, (long long)d->sw, (long long)d->pw);
}

double bkm_kern_conv3d_flops(const bkm_conv3d_desc_t *d)
{
    return 2.0 * (double)d->mb * (double)d->oc * (double)d->ic * (double)(d->kd * d->kh * d->kw) *
           (double)(d->od * d->oh * d->ow);
}

/* ---------------------------------------------------------------------------------------- */
/* vol2col / col2vol                                                                          */

/* [lo, hi) of thread t of nt over n items, evenly in whole 64-byte lines of floats (part sizes
 * differ by at most one line; no line has two writers when the array is 64-byte aligned). */
static void split(int64_t n, int nt, int t, int64_t *lo, int64_t *hi)
{
    const int64_t line = 16, lines = (n + line - 1) / line, q = lines / nt, r = lines % nt;
    *lo = (t * q + (t < r ? t : r)) * line;
    *hi = *lo + (q + (t < r ? 1 : 0)) * line;
    *lo = *lo < n ? *lo : n;
    *hi = *hi < n ? *hi : n;
}

/* dst[0, n) = s[0, n) (s NULL: zeros). With @p nt, aligned 16-byte groups bypass the caches
 * (streaming stores: a column matrix far larger than the last-level cache is written without
 * reading its lines first); the caller issues the fence. */
static inline void row_put(float *dst, const float *s, int64_t n, int nt)
{
#if defined(__SSE__)
    if (nt) {
        int64_t j = 0;
        for (; j < n && ((uintptr_t)(dst + j) & 15u); j++)
            dst[j] = s ? s[j] : 0.0f;
        for (; j + 4 <= n; j += 4)
            _mm_stream_ps(dst + j, s ? _mm_loadu_ps(s + j) : _mm_setzero_ps());
        for (; j < n; j++)
            dst[j] = s ? s[j] : 0.0f;
        return;
    }
#else
    (void)nt;
#endif
    if (s)
        memcpy(dst, s, (size_t)n * sizeof(float));
    else
        memset(dst, 0, (size_t)n * sizeof(float));
}

/* vol2col of the flat range [lo, hi) of col: decode the start once, then walk rows of q with carries. */
static void vol2col_range(const bkm_conv3d_desc_t *d, const float *src, float *col, int64_t lo, int64_t hi)
{
    const int nt = (double)(d->ic * d->kd * d->kh * d->kw) * (double)(d->od * d->oh * d->ow) * sizeof(float) >=
                   (double)C3_NT_MIN_BYTES;
    const int64_t P = d->od * d->oh * d->ow, taps = d->kd * d->kh * d->kw;
    int64_t kk, pp, c, z, y, x, o, p, q, i = lo;
    if (lo >= hi)
        return;
    kk = lo / P, pp = lo % P;
    c = kk / taps, z = (kk % taps) / (d->kh * d->kw), y = (kk % (d->kh * d->kw)) / d->kw, x = kk % d->kw;
    o = pp / (d->oh * d->ow), p = (pp / d->ow) % d->oh, q = pp % d->ow;
    while (i < hi) {
        int64_t n = d->ow - q < hi - i ? d->ow - q : hi - i; /* the rest of this output row */
        int64_t iz = o * d->sd - d->pd + z, iy = p * d->sh - d->ph + y;
        float *dst = col + i;
        if (iz < 0 || iz >= d->id || iy < 0 || iy >= d->ih) {
            row_put(dst, NULL, n, nt);
        } else {
            const float *row = src + ((c * d->id + iz) * d->ih + iy) * d->iw;
            int64_t ix = q * d->sw - d->pw + x;
            if (d->sw == 1 && ix >= 0 && ix + n <= d->iw) {
                row_put(dst, row + ix, n, nt);
            } else {
                for (int64_t j = 0; j < n; j++, ix += d->sw)
                    dst[j] = ix >= 0 && ix < d->iw ? row[ix] : 0.0f;
            }
        }
        i += n;
        q += n;
        if (q == d->ow) { /* carries: q -> p -> o -> x -> y -> z -> c */
            q = 0;
            if (++p == d->oh) {
                p = 0;
                if (++o == d->od) {
                    o = 0;
                    if (++x == d->kw) {
                        x = 0;
                        if (++y == d->kh) {
                            y = 0;
                            if (++z == d->kd) {
                                z = 0;
                                c++;
                            }
                        }
                    }
                }
            }
        }
    }
#if defined(__SSE__)
    if (nt)
        _mm_sfence(); /* the streaming stores are visible before the team's barrier */
#endif
}

void bkm__kern_vol2col_part(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int t)
{
    int64_t lo, hi;
    split(d->ic * d->kd * d->kh * d->kw * d->od * d->oh * d->ow, nt, t, &lo, &hi);
    vol2col_range(d, src, col, lo, hi);
}

void bkm_kern_vol2col(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt)
{
    if (nt <= 1) {
        bkm__kern_vol2col_part(d, src, col, 1, 0);
        return;
    }
#pragma omp parallel num_threads(nt)
    bkm__kern_vol2col_part(d, src, col, omp_get_num_threads(), omp_get_thread_num());
}

/* Chunks of @p chunk floats (rounded up to whole 64-byte lines) of the flat range [0, n), taken in
 * turn by the threads of a team (dynamic schedule): each chunk decodes its start once and walks
 * with carries; a thread that another tenant preempts leaves its remaining chunks to the others
 * instead of holding up the team at the barrier. @p range: vol2col_range or col2vol_range. */
static void dyn_ranges(const bkm_conv3d_desc_t *d, const float *from, float *to, int64_t n, int nt, int64_t chunk,
                       void (*range)(const bkm_conv3d_desc_t *, const float *, float *, int64_t, int64_t))
{
    int64_t ch, nch;
    if (chunk <= 0) /* auto: 32 chunks per thread */
        chunk = n / (32 * (int64_t)nt);
    ch = chunk < 16 ? 16 : (chunk + 15) / 16 * 16;
    nch = (n + ch - 1) / ch;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t k = 0; k < nch; k++)
        range(d, from, to, k * ch, (k + 1) * ch < n ? (k + 1) * ch : n);
}

void bkm_kern_vol2col_dyn(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int64_t chunk)
{
    const int64_t n = d->ic * d->kd * d->kh * d->kw * d->od * d->oh * d->ow;
    if (nt <= 1) {
        vol2col_range(d, src, col, 0, n);
        return;
    }
    dyn_ranges(d, src, col, n, nt, chunk, vol2col_range);
}

/* Taps of one axis that read input coordinate i: kernel offsets k with (i + pad - k) divisible by
 * the stride and the output coordinate in range; out[j] = output coordinate, kofs[j] = k. */
static int taps_of(int64_t i, int64_t pad, int64_t ksz, int64_t s, int64_t osz, int64_t *out, int64_t *kofs)
{
    int n = 0;
    for (int64_t k = 0; k < ksz; k++) {
        int64_t t = i + pad - k;
        if (t < 0 || t % s != 0 || t / s >= osz)
            continue;
        out[n] = t / s;
        kofs[n++] = k;
    }
    return n;
}


/* col2vol gather over the flat range [lo, hi) of the image: decode the start once, walk with carries. */
static void col2vol_range(const bkm_conv3d_desc_t *d, const float *col, float *src, int64_t lo, int64_t hi)
{
    const int64_t P = d->od * d->oh * d->ow;
    int64_t c, z, y, x, i;
    int64_t oz[C3_TAPS_MAX], kz[C3_TAPS_MAX], oy[C3_TAPS_MAX], ky[C3_TAPS_MAX], ox[C3_TAPS_MAX], kx[C3_TAPS_MAX];
    int nz = 0, ny = 0;
    if (lo >= hi)
        return;
    c = lo / (d->id * d->ih * d->iw);
    z = (lo / (d->ih * d->iw)) % d->id;
    y = (lo / d->iw) % d->ih;
    x = lo % d->iw;
    nz = taps_of(z, d->pd, d->kd, d->sd, d->od, oz, kz);
    ny = taps_of(y, d->ph, d->kh, d->sh, d->oh, oy, ky);
    for (i = lo; i < hi; i++) {
        double acc = 0.0;
        int nx = taps_of(x, d->pw, d->kw, d->sw, d->ow, ox, kx);
        for (int a = 0; a < nz; a++)
            for (int b = 0; b < ny; b++) {
                const float *cp =
                    col + ((c * d->kd + kz[a]) * d->kh + ky[b]) * d->kw * P + (oz[a] * d->oh + oy[b]) * d->ow;
                for (int e = 0; e < nx; e++)
                    acc += (double)cp[kx[e] * P + ox[e]];
            }
        src[i] = (float)acc;
        if (++x == d->iw) { /* carries: x -> y -> z -> c; the tap lists change only on a carry */
            x = 0;
            if (++y == d->ih) {
                y = 0;
                if (++z == d->id) {
                    z = 0;
                    c++;
                }
                nz = taps_of(z, d->pd, d->kd, d->sd, d->od, oz, kz);
            }
            ny = taps_of(y, d->ph, d->kh, d->sh, d->oh, oy, ky);
        }
    }
}

void bkm__kern_col2vol_part(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int t)
{
    int64_t lo, hi;
    split(d->ic * d->id * d->ih * d->iw, nt, t, &lo, &hi);
    col2vol_range(d, col, src, lo, hi);
}

void bkm_kern_col2vol(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt)
{
    if (nt <= 1) {
        bkm__kern_col2vol_part(d, col, src, 1, 0);
        return;
    }
#pragma omp parallel num_threads(nt)
    bkm__kern_col2vol_part(d, col, src, omp_get_num_threads(), omp_get_thread_num());
}

void bkm_kern_col2vol_dyn(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int64_t chunk)
{
    const int64_t n = d->ic * d->id * d->ih * d->iw;
    if (nt <= 1) {
        col2vol_range(d, col, src, 0, n);
        return;
    }
    dyn_ranges(d, col, src, n, nt, chunk, col2vol_range);
}

/* ---------------------------------------------------------------------------------------- */
/* conv3d object                                                                              */

enum { P_ALGO, P_V2C, P_MC, P_KC, P_NC, P_BWW, P_DKC, P_DGRP, P_DPB, P_DR, P_DPX, P_DPAD, P_COUNT };
enum { ALGO_AUTO = 0, ALGO_BATCH = 1, ALGO_INTRA = 2, ALGO_UNFOLD = 3, ALGO_DIRECT = 4 };
static const bkm_param_desc_t conv3d_params[P_COUNT] = {
    {"algo", 0, 4, 0, 1, "1 vol2col + GEMM, batch-level (each thread whole images, 1-thread GEMMs); 2 vol2col + "
     "GEMM, intra-sample (images in turn, parallel vol2col + parallel GEMM); 3 depth unfold + the native conv2d "
     "(each output depth plane of each image is a 2-D image of ic*kd channels); 4 direct 3-D convolution (no "
     "column matrix); 0 auto (4 on AVX-512; elsewhere 1 when a column of the vol2col matrix is short, "
     "ic*kd*kh*kw <= 64, e.g. one input channel, else 4 on AVX2 and 3 on generic)"},
    {"v2c", 0, 2, 1, 1, "intra-sample vol2col/col2vol (chunking scheme): 1 one flat range split evenly over the "
     "threads, 2 dynamic chunks of whole lines taken in turn (a preempted thread leaves its chunks to the others), "
     "0 serial"},
    {"mc", 0, 4096, 0, 1, "GEMM row block (0 = the ISA's default; else a multiple of mr)"},
    {"kc", 0, 4096, 0, 1, "GEMM depth block (0 = the GEMM's auto: the ISA default, deeper from L2 for many rows)"},
    {"nc", 0, 65536, 0, 1, "GEMM column block (0 = the ISA's default; else a multiple of nr)"},
    {"bww", 0, 2, 0, 1, "backward-weights of algo 3: 1 the unfolded conv2d; 2 vol2col + GEMM, batch-level (as "
     "algo 1); 0 auto (2 when a column of the vol2col matrix is short, ic*kd*kh*kw <= " "64, e.g. one input channel)"},
    {"dkc", 0, 65536, 0, 1, "direct (algo 4): input channels per block of the forward reduction (output "
     "channels for backward-data); 0 auto (one lane block's weights in half of L2)"},
    {"dgrp", 0, 256, 0, 1, "direct: register tiles of output pixels per group (the unit of work and of the "
     "transposing store); 0 = 16"},
    {"dpb", 0, 65536, 0, 16, "direct: output pixels per block of the backward-weights reduction (diff_dst "
     "transposed per block); 0 auto (a quarter of L2)"},
    {"dr", 6, 7, 6, 1, "direct, AVX-512: rows of the 64-lane register tile (6: 24 accumulators, 7: 28)"},
    {"dpx", 0, 1, 0, 1, "direct, AVX-512 forward of at most 64 entries (ic*kd*kh*kw), unit strides, no padding: 0 "
     "pixels in the lanes (8 channels x 48 pixels, no transposing store), 1 the gather like every other layer"},
    {"dpad", 0, 3, 0, 1, "direct, padding: 0 auto (2 when one image of diff_dst exceeds L2, else 1), 1 no copies "
     "(boxes of equal valid taps), 2 backward-data from a copy of diff_dst zero-padded along x (no boxes of border "
     "columns), 3 the forward from such a copy of src too"},
};

const bkm_param_desc_t *bkm_kern_conv3d_params(size_t *n_params)
{
    *n_params = P_COUNT;
    return conv3d_params;
}

struct bkm_kern_conv3d {
    bkm_conv3d_desc_t d;
    int nt, v2c_nt, algo;
    int v2c_dyn;              /* v2c=2: dynamic chunks instead of the even split */
    int64_t K, P;            /* col rows (ic*taps) and columns (od*oh*ow) */
    bkm_gemm_cfg_t gcfg;     /* nt threads (intra) or 1 (batch) */
    int n_bufs;              /* column buffers / GEMM workspaces: 1 (intra) or nt (batch) */
    float *col;              /* n_bufs x K x P */
    char *ws;                /* n_bufs x ws_bytes */
    size_t ws_bytes;
    float *wpart;            /* batch bwd-weights: partial diff_wei of threads 1..nt-1 */
    bkm_kern_conv2d_t *c2;   /* unfold: the 2-D convolution of mb*od images of ic*kd channels */
    bkm_dconv_t *dc;         /* direct: the three directions */
    float *xu, *gxu, *yu;    /* unfold: unfolded input / its gradient, 2-D output [n][o][k][p][q] */
    int bww_batch;           /* unfold: backward-weights as algo 1 (its buffers allocated too) */
    int reuse;               /* bkm_kern_conv3d_set_reuse: inputs kept unchanged within a step */
    const float *xu_of;      /* unfold: the src whose unfold xu holds (NULL: none) */
    const float *yu_of;      /* unfold: the diff_dst whose plane swap yu holds (NULL: none) */
    char impl[160];
};

/* The algorithm tunable @p algo resolves to for vol2col columns of @p K rows on @p isa. Auto: the
 * direct convolution on AVX-512 (a short column, conv3d_1's 27 rows, through its pixel-lane
 * forward); elsewhere a short column as batch-level vol2col + GEMM, else the direct convolution on
 * AVX2 and the depth unfold on generic. */
static int c3_algo(int32_t algo, int64_t K, bkm_isa_t isa)
{
    if (algo != ALGO_AUTO)
        return algo;
    if (isa == BKM_ISA_AVX512)
        return ALGO_DIRECT;
    if (K <= C3_BWW_BATCH_MAX_K)
        return ALGO_BATCH;
    return isa == BKM_ISA_AVX2 ? ALGO_DIRECT : ALGO_UNFOLD;
}

/* The direct convolution (algo 4) of @p cv, all three directions, with the tunables @p v. */
static int c3_direct(bkm_kern_conv3d_t *cv, const int32_t *v, const bkm_kern_params_t *params, bkm_err_t *err)
{
    const bkm_dconv_cfg_t dcfg = {cv->gcfg.isa, v[P_DKC], v[P_DGRP], v[P_DPB], v[P_DR] == 7, v[P_DPX] == 1,
                                  params ? params->cache.l2 : 0, v[P_DPAD]};
    int rc = bkm__dconv_create(&cv->dc, &cv->d, &dcfg, BKM_DCONV_FWD | BKM_DCONV_BWD_D | BKM_DCONV_BWD_W, cv->nt, err);
    if (rc < 0) {
        bkm_err_prefix(err, "conv3d algo=4");
        return rc;
    }
    cv->P = cv->d.od * cv->d.oh * cv->d.ow;
    snprintf(cv->impl, sizeof cv->impl, "native:%s", bkm__dconv_name(cv->dc));
    return BKM_OK;
}

int bkm_kern_conv3d_create(bkm_kern_conv3d_t **out, const bkm_conv3d_desc_t *d, const bkm_kern_params_t *params,
                           bkm_err_t *err)
{
    int32_t v[P_COUNT];
    bkm_kern_conv3d_t *cv = NULL;
    bkm_conv3d_desc_t dd = *d;
    int rc;
    *out = NULL;
    if ((rc = bkm_kern_conv3d_desc_check(&dd, err)) < 0)
        return rc;
    if (params) {
        if ((rc = bkm_kern_params_resolve(params, conv3d_params, P_COUNT, v, err)) < 0)
            return rc;
    } else {
        for (int i = 0; i < P_COUNT; i++)
            v[i] = conv3d_params[i].def;
    }
    if (!(cv = bkm_calloc(1, sizeof *cv)))
        return bkm_err_set(err, BKM_ENOMEM, "conv3d: out of memory");
    cv->d = dd;
    cv->nt = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    cv->K = dd.ic * dd.kd * dd.kh * dd.kw;
    if ((rc = bkm_kern_gemm_cfg_init(&cv->gcfg, params ? params->isa : BKM_ISA_AUTO, err)) < 0)
        goto fail;
    cv->algo = c3_algo(v[P_ALGO], cv->K, cv->gcfg.isa);
    if (cv->algo == ALGO_DIRECT) {
        if ((rc = c3_direct(cv, v, params, err)) < 0)
            goto fail;
        *out = cv;
        return BKM_OK;
    }
    cv->v2c_nt = v[P_V2C] ? cv->nt : 1;
    cv->v2c_dyn = v[P_V2C] == 2;
    cv->P = dd.od * dd.oh * dd.ow;
    cv->bww_batch = cv->algo == ALGO_UNFOLD && (v[P_BWW] == 2 || (v[P_BWW] == 0 && cv->K <= C3_BWW_BATCH_MAX_K));
    cv->n_bufs = cv->algo == ALGO_BATCH || cv->bww_batch ? cv->nt : 1;
    cv->gcfg.nt = cv->algo == ALGO_BATCH || cv->bww_batch ? 1 : cv->nt;
    if ((v[P_MC] && (rc = bkm_kern_gemm_cfg_set(&cv->gcfg, "mc", v[P_MC], err)) < 0) ||
        (v[P_KC] && (rc = bkm_kern_gemm_cfg_set(&cv->gcfg, "kc", v[P_KC], err)) < 0) ||
        (v[P_NC] && (rc = bkm_kern_gemm_cfg_set(&cv->gcfg, "nc", v[P_NC], err)) < 0) ||
        (rc = bkm_kern_gemm_cfg_check(&cv->gcfg, err)) < 0) {
        bkm_err_prefix(err, "conv3d");
        goto fail;
    }
    if (cv->algo == ALGO_UNFOLD) {
        bkm_conv2d_desc_t c2 = {dd.mb * dd.od, 1, dd.ic * dd.kd, dd.ih, dd.iw, dd.oc, dd.oh, dd.ow, dd.kh, dd.kw,
                                dd.sh, dd.sw, dd.ph, dd.pw, dd.has_bias, "conv3d:unfolded"};
        bkm_kern_params_t kp2;
        size_t nxu = (size_t)(dd.mb * dd.od * dd.ic * dd.kd * dd.ih * dd.iw),
               nyu = (size_t)(dd.mb * dd.od * dd.oc * dd.oh * dd.ow);
        bkm_kern_params_init(&kp2);
        kp2.isa = params ? params->isa : BKM_ISA_AUTO;
        if ((rc = bkm_kern_conv2d_create(&cv->c2, &c2, &kp2, err)) < 0) {
            bkm_err_prefix(err, "conv3d (unfolded)");
            goto fail;
        }
        cv->xu = bkm_aligned_alloc(64, nxu * sizeof(float));
        cv->gxu = bkm_aligned_alloc(64, nxu * sizeof(float));
        cv->yu = bkm_aligned_alloc(64, nyu * sizeof(float));
        if (!cv->xu || !cv->gxu || !cv->yu) {
            rc = bkm_err_set(err, BKM_ENOMEM, "conv3d: cannot allocate the unfolded input (%zu floats)", nxu);
            goto fail;
        }
#pragma omp parallel num_threads(cv->nt)
        {
#pragma omp for schedule(static) nowait
            for (size_t i = 0; i < nxu; i++)
                cv->xu[i] = cv->gxu[i] = 0.0f;
#pragma omp for schedule(static)
            for (size_t i = 0; i < nyu; i++)
                cv->yu[i] = 0.0f;
        }
        snprintf(cv->impl, sizeof cv->impl, "native:unfold_%s%s", bkm_kern_conv2d_impl(cv->c2) + strlen("native:"),
                 cv->bww_batch ? "+bww_vol2col_gemm.batch" : "");
        if (!cv->bww_batch) {
            *out = cv;
            return BKM_OK;
        }
    }
    cv->ws_bytes = (bkm_kern_gemm_workspace_bytes(&cv->gcfg) + 63) & ~(size_t)63;
    cv->col = bkm_aligned_alloc(64, (size_t)cv->n_bufs * (size_t)(cv->K * cv->P) * sizeof(float));
    cv->ws = bkm_aligned_alloc(64, (size_t)cv->n_bufs * cv->ws_bytes);
    if (cv->n_bufs > 1)
        cv->wpart = bkm_aligned_alloc(64, (size_t)(cv->nt - 1) * (size_t)(dd.oc * cv->K) * sizeof(float));
    if (!cv->col || !cv->ws || (cv->n_bufs > 1 && !cv->wpart)) {
        rc = bkm_err_set(err, BKM_ENOMEM, "conv3d: cannot allocate %d column buffers of %lld x %lld", cv->n_bufs,
                         (long long)cv->K, (long long)cv->P);
        goto fail;
    }
    /* first touch by the threads that use each buffer */
#pragma omp parallel num_threads(cv->n_bufs)
    {
        int t = omp_get_thread_num();
        if (t < cv->n_bufs)
            memset(cv->col + (size_t)t * (size_t)(cv->K * cv->P), 0, (size_t)(cv->K * cv->P) * sizeof(float));
        if (t > 0 && cv->wpart)
            memset(cv->wpart + (size_t)(t - 1) * (size_t)(dd.oc * cv->K), 0, (size_t)(dd.oc * cv->K) * sizeof(float));
    }
    if (cv->algo != ALGO_UNFOLD)
        snprintf(cv->impl, sizeof cv->impl, "native:vol2col%s_gemm.%s.%s",
                 cv->algo == ALGO_BATCH ? "" : v[P_V2C] == 2 ? "_dyn" : v[P_V2C] ? "_par" : "_serial",
                 cv->algo == ALGO_BATCH ? "batch" : "intra", bkm_kern_gemm_ukr_name(&cv->gcfg));
    *out = cv;
    return BKM_OK;
fail:
    bkm_kern_conv3d_destroy(cv);
    return rc;
}

/* Record the first error of a parallel region (rc shared, err written once). */
#define C3_KEEP_FIRST(rc_shared, rc_local)                                                                            \
    do {                                                                                                              \
        if ((rc_local) < 0) {                                                                                         \
            _Pragma("omp critical(bkm_conv3d_err)") if ((rc_shared) == BKM_OK)(rc_shared) = (rc_local);               \
        }                                                                                                             \
    } while (0)

/* Depth unfold: xu[n][o][c * kd + t] = src[n][c][o * sd - pd + t] (a zero plane in the depth
 * padding); one (n, o, c) group of kd planes per iteration. */
static void unfold(const bkm_kern_conv3d_t *cv, const float *src, float *xu)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t plane = d->ih * d->iw, groups = d->mb * d->od * d->ic;
#pragma omp parallel for schedule(static) num_threads(cv->nt)
    for (int64_t g = 0; g < groups; g++) {
        int64_t n = g / (d->od * d->ic), o = (g / d->ic) % d->od, c = g % d->ic;
        float *dst = xu + g * d->kd * plane;
        for (int64_t t = 0; t < d->kd; t++) {
            int64_t z = o * d->sd - d->pd + t;
            if (z < 0 || z >= d->id)
                memset(dst + t * plane, 0, (size_t)plane * sizeof(float));
            else
                memcpy(dst + t * plane, src + ((n * d->ic + c) * d->id + z) * plane, (size_t)plane * sizeof(float));
        }
    }
}

/* The adjoint of unfold as a gather: dsrc[n][c][z] = sum over (o, t) with o * sd - pd + t = z of
 * gxu[n][o][c * kd + t]; each (n, c, z) plane has one writer. */
static void fold(const bkm_kern_conv3d_t *cv, const float *gxu, float *dsrc)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t plane = d->ih * d->iw, planes = d->mb * d->ic * d->id;
#pragma omp parallel for schedule(static) num_threads(cv->nt)
    for (int64_t g = 0; g < planes; g++) {
        int64_t n = g / (d->ic * d->id), c = (g / d->id) % d->ic, z = g % d->id;
        float *dst = dsrc + g * plane;
        int first = 1;
        for (int64_t t = 0; t < d->kd; t++) {
            int64_t num = z + d->pd - t, o;
            const float *s;
            if (num < 0 || num % d->sd)
                continue;
            if ((o = num / d->sd) >= d->od)
                continue;
            s = gxu + (((n * d->od + o) * d->ic + c) * d->kd + t) * plane;
            if (first)
                memcpy(dst, s, (size_t)plane * sizeof(float));
            else
                for (int64_t i = 0; i < plane; i++)
                    dst[i] += s[i];
            first = 0;
        }
        if (first)
            memset(dst, 0, (size_t)plane * sizeof(float));
    }
}

/* [n][a][b][pq] <-> [n][b][a][pq] for (a, b) = (od, oc) (to_3d = 0: dst layout -> unfolded) or the
 * reverse; parallel over the destination planes. */
static void swap_planes(const bkm_kern_conv3d_t *cv, const float *from, float *to, int to_3d)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t pq = d->oh * d->ow, A = to_3d ? d->oc : d->od, B = to_3d ? d->od : d->oc, planes = d->mb * A * B;
#pragma omp parallel for schedule(static) num_threads(cv->nt)
    for (int64_t g = 0; g < planes; g++) {
        int64_t n = g / (A * B), a = (g / B) % A, b = g % B;
        memcpy(to + g * pq, from + ((n * B + b) * A + a) * pq, (size_t)pq * sizeof(float));
    }
}

/* One image of the forward: column buffer @p col, workspace @p ws, vol2col over @p v2c_nt threads. */
static int fwd_image(bkm_kern_conv3d_t *cv, const float *x, const float *wei, const float *bias, float *y,
                     float *col, void *ws, int v2c_nt, bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t P = cv->P;
    int rc;
    if (cv->v2c_dyn)
        bkm_kern_vol2col_dyn(d, x, col, v2c_nt, 0);
    else
        bkm_kern_vol2col(d, x, col, v2c_nt);
    if ((rc = bkm_kern_sgemm(&cv->gcfg, 'N', 'N', d->oc, P, cv->K, 1.0f, wei, cv->K, col, P, 0.0f, y, P, ws, err)) < 0)
        return rc;
    if (bias && d->has_bias) {
        if (v2c_nt > 1) {
#pragma omp parallel for schedule(static) num_threads(v2c_nt)
            for (int64_t k = 0; k < d->oc; k++)
                for (int64_t p = 0; p < P; p++)
                    y[k * P + p] += bias[k];
        } else {
            for (int64_t k = 0; k < d->oc; k++)
                for (int64_t p = 0; p < P; p++)
                    y[k * P + p] += bias[k];
        }
    }
    return BKM_OK;
}

int bkm_kern_conv3d_fwd(bkm_kern_conv3d_t *cv, const float *src, const float *wei, const float *bias, float *dst,
                        bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t in_sz = d->ic * d->id * d->ih * d->iw, out_sz = d->oc * cv->P, kp = cv->K * cv->P;
    int rc = BKM_OK;
    if (cv->algo == ALGO_DIRECT) {
        bkm__dconv_fwd(cv->dc, src, wei, bias, BKM_FAST_ACT_NONE, dst);
        return BKM_OK;
    }
    if (cv->algo == ALGO_UNFOLD) {
        unfold(cv, src, cv->xu);
        cv->xu_of = src;
        cv->yu_of = NULL; /* yu now holds the output */
        if ((rc = bkm_kern_conv2d_fwd(cv->c2, cv->xu, wei, bias, cv->yu, err)) < 0)
            return rc;
        swap_planes(cv, cv->yu, dst, 1);
        return BKM_OK;
    }
    if (cv->algo == ALGO_BATCH) {
#pragma omp parallel num_threads(cv->nt)
        {
            int t = omp_get_thread_num(), r;
#pragma omp for schedule(static)
            for (int64_t n = 0; n < d->mb; n++) {
                r = fwd_image(cv, src + n * in_sz, wei, bias, dst + n * out_sz, cv->col + t * kp,
                              cv->ws + (size_t)t * cv->ws_bytes, 1, NULL);
                C3_KEEP_FIRST(rc, r);
            }
        }
        return rc < 0 ? bkm_err_set(err, rc, "conv3d: forward GEMM failed") : BKM_OK;
    }
    for (int64_t n = 0; n < d->mb; n++)
        if ((rc = fwd_image(cv, src + n * in_sz, wei, bias, dst + n * out_sz, cv->col, cv->ws, cv->v2c_nt, err)) < 0)
            return rc;
    return BKM_OK;
}

int bkm_kern_conv3d_bwd_data(bkm_kern_conv3d_t *cv, const float *diff_dst, const float *wei, float *diff_src,
                             bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t in_sz = d->ic * d->id * d->ih * d->iw, out_sz = d->oc * cv->P, kp = cv->K * cv->P;
    int rc = BKM_OK;
    if (cv->algo == ALGO_DIRECT) {
        bkm__dconv_bwd_data(cv->dc, diff_dst, wei, diff_src);
        return BKM_OK;
    }
    if (cv->algo == ALGO_UNFOLD) {
        if (!cv->reuse || cv->yu_of != diff_dst)
            swap_planes(cv, diff_dst, cv->yu, 0);
        cv->yu_of = diff_dst;
        if ((rc = bkm_kern_conv2d_bwd_data(cv->c2, cv->yu, wei, cv->gxu, err)) < 0)
            return rc;
        fold(cv, cv->gxu, diff_src);
        return BKM_OK;
    }
    if (cv->algo == ALGO_BATCH) {
#pragma omp parallel num_threads(cv->nt)
        {
            int t = omp_get_thread_num(), r;
            float *col = cv->col + t * kp;
#pragma omp for schedule(static)
            for (int64_t n = 0; n < d->mb; n++) {
                r = bkm_kern_sgemm(&cv->gcfg, 'T', 'N', cv->K, cv->P, d->oc, 1.0f, wei, cv->K, diff_dst + n * out_sz,
                                   cv->P, 0.0f, col, cv->P, cv->ws + (size_t)t * cv->ws_bytes, NULL);
                C3_KEEP_FIRST(rc, r);
                bkm_kern_col2vol(d, col, diff_src + n * in_sz, 1);
            }
        }
        return rc < 0 ? bkm_err_set(err, rc, "conv3d: backward-data GEMM failed") : BKM_OK;
    }
    for (int64_t n = 0; n < d->mb; n++) {
        if ((rc = bkm_kern_sgemm(&cv->gcfg, 'T', 'N', cv->K, cv->P, d->oc, 1.0f, wei, cv->K, diff_dst + n * out_sz,
                                 cv->P, 0.0f, cv->col, cv->P, cv->ws, err)) < 0)
            return rc;
        if (cv->v2c_dyn)
            bkm_kern_col2vol_dyn(d, cv->col, diff_src + n * in_sz, cv->v2c_nt, 0);
        else
            bkm_kern_col2vol(d, cv->col, diff_src + n * in_sz, cv->v2c_nt);
    }
    return BKM_OK;
}

int bkm_kern_conv3d_bwd_weights(bkm_kern_conv3d_t *cv, const float *src, const float *diff_dst, float *diff_wei,
                                float *diff_bias, bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &cv->d;
    const int64_t in_sz = d->ic * d->id * d->ih * d->iw, out_sz = d->oc * cv->P, P = cv->P, mb = d->mb,
                  kp = cv->K * cv->P, nw = d->oc * cv->K;
    int rc = BKM_OK;
    if (cv->algo == ALGO_DIRECT) {
        bkm__dconv_bwd_weights(cv->dc, src, diff_dst, diff_wei, d->has_bias ? diff_bias : NULL);
        return BKM_OK;
    } else if (cv->algo == ALGO_UNFOLD && !cv->bww_batch) {
        if (!cv->reuse || cv->xu_of != src)
            unfold(cv, src, cv->xu);
        cv->xu_of = src;
        if (!cv->reuse || cv->yu_of != diff_dst)
            swap_planes(cv, diff_dst, cv->yu, 0);
        cv->yu_of = diff_dst;
        return bkm_kern_conv2d_bwd_weights(cv->c2, cv->xu, cv->yu, diff_wei, d->has_bias ? diff_bias : NULL, err);
    } else if (cv->algo == ALGO_BATCH || cv->bww_batch) {
        /* thread t sums its images (a static split: the reduction order is fixed for a thread count)
         * into diff_wei (t = 0) or its partial buffer, then the partials are added in thread order */
#pragma omp parallel num_threads(cv->nt)
        {
            int t = omp_get_thread_num(), nth = omp_get_num_threads(), r;
            int64_t lo = mb * t / nth, hi = mb * (t + 1) / nth;
            float *dw = t == 0 ? diff_wei : cv->wpart + (size_t)(t - 1) * (size_t)nw;
            if (lo == hi)
                memset(dw, 0, (size_t)nw * sizeof(float));
            for (int64_t n = lo; n < hi; n++) {
                bkm_kern_vol2col(d, src + n * in_sz, cv->col + t * kp, 1);
                r = bkm_kern_sgemm(&cv->gcfg, 'N', 'T', d->oc, cv->K, P, 1.0f, diff_dst + n * out_sz, P,
                                   cv->col + t * kp, P, n > lo ? 1.0f : 0.0f, dw, cv->K,
                                   cv->ws + (size_t)t * cv->ws_bytes, NULL);
                C3_KEEP_FIRST(rc, r);
            }
#pragma omp barrier
#pragma omp for schedule(static)
            for (int64_t i = 0; i < nw; i++)
                for (int u = 1; u < nth; u++)
                    diff_wei[i] += cv->wpart[(size_t)(u - 1) * (size_t)nw + (size_t)i];
        }
        if (rc < 0)
            return bkm_err_set(err, rc, "conv3d: backward-weights GEMM failed");
    } else {
        for (int64_t n = 0; n < mb; n++) {
            if (cv->v2c_dyn)
                bkm_kern_vol2col_dyn(d, src + n * in_sz, cv->col, cv->v2c_nt, 0);
            else
                bkm_kern_vol2col(d, src + n * in_sz, cv->col, cv->v2c_nt);
            if ((rc = bkm_kern_sgemm(&cv->gcfg, 'N', 'T', d->oc, cv->K, P, 1.0f, diff_dst + n * out_sz, P, cv->col, P,
                                     n ? 1.0f : 0.0f, diff_wei, cv->K, cv->ws, err)) < 0)
                return rc;
        }
    }
    if (diff_bias && d->has_bias) {
#pragma omp parallel for schedule(static) num_threads(cv->nt)
        for (int64_t k = 0; k < d->oc; k++) {
            double s = 0.0;
            for (int64_t n = 0; n < mb; n++) {
                const float *g = diff_dst + n * out_sz + k * P;
                /* vector lanes of partial sums in a fixed order (a single chain of dependent double adds
                 * took 8 ms for conv3d_1's 5 M gradient entries) */
#pragma omp simd reduction(+ : s)
                for (int64_t p = 0; p < P; p++)
                    s += (double)g[p];
            }
            diff_bias[k] = (float)s;
        }
    }
    return BKM_OK;
}

void bkm_kern_conv3d_set_reuse(bkm_kern_conv3d_t *cv, int on)
{
    cv->reuse = on != 0;
}

const char *bkm_kern_conv3d_impl(const bkm_kern_conv3d_t *cv)
{
    return cv->impl;
}

void bkm_kern_conv3d_destroy(bkm_kern_conv3d_t *cv)
{
    if (!cv)
        return;
    bkm_free(cv->col);
    bkm_free(cv->ws);
    bkm_free(cv->wpart);
    bkm_kern_conv2d_destroy(cv->c2);
    bkm__dconv_destroy(cv->dc);
    bkm_free(cv->xu);
    bkm_free(cv->gxu);
    bkm_free(cv->yu);
    bkm_free(cv);
}

/* ---------------------------------------------------------------------------------------- */
/* 3-D max pooling                                                                            */

int bkm_kern_pool3d_desc_init(bkm_pool3d_desc_t *d, int64_t mb, int64_t c, int64_t id, int64_t ih, int64_t iw,
                              int64_t k, int64_t s, int64_t p, bkm_err_t *err)
{
    if (mb <= 0 || c <= 0 || id <= 0 || ih <= 0 || iw <= 0 || k <= 0 || s <= 0 || p < 0 || p >= k)
        return bkm_err_set(err, BKM_EINVAL, "pool3d: mb%lld c%lld id%lld ih%lld iw%lld k%lld s%lld p%lld: sizes must "
                           "be positive and 0 <= p < k", (long long)mb, (long long)c, (long long)id, (long long)ih,
                           (long long)iw, (long long)k, (long long)s, (long long)p);
    *d = (bkm_pool3d_desc_t){mb, c, id, ih, iw, out_size(id, k, s, p), out_size(ih, k, s, p), out_size(iw, k, s, p),
                             k, s, p};
    if (d->od <= 0 || d->oh <= 0 || d->ow <= 0)
        return bkm_err_set(err, BKM_EINVAL, "pool3d: empty output for a %lld-wide window over %lldx%lldx%lld",
                           (long long)k, (long long)id, (long long)ih, (long long)iw);
    return BKM_OK;
}

/* Window start and clipped extent along one axis. */
static inline void win(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = o * s - p, e = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = e > n ? n : e;
}

void bkm_kern_maxpool3d_fwd(const bkm_pool3d_desc_t *d, const float *src, float *dst, int32_t *argmax)
{
    const int64_t vin = d->id * d->ih * d->iw, vout = d->od * d->oh * d->ow;
    /* output columns [xa, xb) have their whole window inside the row (AVX-512 only) */
    const int avx512 = bkm_kern_isa_detect() == BKM_ISA_AVX512 && vin < (1LL << 31) - 64;
    const int64_t xa = d->p <= 0 ? 0 : (d->p + d->s - 1) / d->s;
    const int64_t xb_num = d->iw + d->p - d->k;
    const int64_t xb = !avx512 || xb_num < 0 ? 0 : xb_num / d->s + 1 < d->ow ? xb_num / d->s + 1 : d->ow;
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < d->mb * d->c; nc++) {
        const float *s = src + nc * vin;
        float *y = dst + nc * vout;
        int32_t *am = argmax + nc * vout;
        for (int64_t oz = 0; oz < d->od; oz++) {
            int64_t z0, z1;
            win(oz, d->s, d->p, d->k, d->id, &z0, &z1);
            for (int64_t oy = 0; oy < d->oh; oy++) {
                int64_t y0, y1;
                win(oy, d->s, d->p, d->k, d->ih, &y0, &y1);
                float *yrow = y + (oz * d->oh + oy) * d->ow;
                int32_t *arow = am + (oz * d->oh + oy) * d->ow;
                for (int64_t ox = 0; ox < d->ow; ox++) {
                    int64_t x0, x1, arg = (z0 * d->ih + y0) * d->iw;
                    if (ox == xa && xa < xb) { /* the whole-window columns, vectorised */
                        /* the rows output row oy + 2 reads (cold from memory after the convolution:
                         * the taps' masked loads alone stream it at a fraction of the bandwidth) */
                        for (int64_t z = z0; z < z1; z++)
                            for (int64_t yy = y0 + 2 * d->s; yy < y0 + 2 * d->s + d->k && yy < d->ih; yy++)
                                for (int64_t x = 0; x < d->iw; x += 16)
                                    _mm_prefetch((const char *)(s + (z * d->ih + yy) * d->iw + x), _MM_HINT_T0);
                        bkm__maxpool3d_row_avx512(s, d->ih * d->iw, z0, z1, d->iw, y0, y1, d->k, xa * d->s - d->p,
                                                  d->s, xb - xa, yrow + xa, arow + xa);
                        ox = xb - 1;
                        continue;
                    }
                    float best;
                    win(ox, d->s, d->p, d->k, d->iw, &x0, &x1);
                    arg += x0;
                    best = s[arg];
                    /* row-major scan, strict >: the first maximum wins (as the reference) */
                    for (int64_t z = z0; z < z1; z++)
                        for (int64_t yy = y0; yy < y1; yy++) {
                            const float *row = s + (z * d->ih + yy) * d->iw;
                            for (int64_t x = x0; x < x1; x++)
                                if (row[x] > best) {
                                    best = row[x];
                                    arg = (z * d->ih + yy) * d->iw + x;
                                }
                        }
                    y[(oz * d->oh + oy) * d->ow + ox] = best;
                    am[(oz * d->oh + oy) * d->ow + ox] = (int32_t)arg;
                }
            }
        }
    }
}

void bkm_kern_maxpool3d_bwd(const bkm_pool3d_desc_t *d, const float *diff_dst, const int32_t *argmax,
                            float *diff_src)
{
    const int64_t vin = d->id * d->ih * d->iw, vout = d->od * d->oh * d->ow;
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < d->mb * d->c; nc++) {
        float *g = diff_src + nc * vin;
        memset(g, 0, (size_t)vin * sizeof(float));
        for (int64_t o = 0; o < vout; o++)
            g[argmax[nc * vout + o]] += diff_dst[nc * vout + o];
    }
}
