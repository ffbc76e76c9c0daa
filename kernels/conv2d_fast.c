/* SPDX-License-Identifier: MIT */
/* Native conv2d "fast" path (conv2d algo 3): a conv-specific BLIS-style driver around the SGEMM
 * micro-kernel of the chosen ISA (bkm__gemm_ukr_<isa>, any of generic/avx2/avx512).
 *
 * The GEMM column dimension is the output pixels of the whole batch, image after image
 * (column c = n * OH*OW + pixel), so a micro-panel may hold the last pixels of one image and the
 * first of the next: only the very last panel of a thread is partial.
 *   fwd:   dst[g] (ocg x cols) = W[g] (ocg x K) * im2col(src) (K x cols), K = icg*KH*KW.
 *          W is packed once per call (MR-row panels per KC block, shared by the threads); im2col
 *          is written straight into NR-column B panels from copy runs per tap (build_runs); the
 *          micro-kernel stores into NCHW dst (ldc = OH*OW) when the tile lies inside one image,
 *          else through a scratch tile; the bias is added to the tile after the last K block; a
 *          last row panel of <= 4 rows uses the AVX-512 edge kernel. Threads split the columns.
 *   bwd_d: stride 1 with many input / few output channels per group (use_transposed): the fwd of
 *          diff_dst with the flipped, transposed weights (object f->tr). Otherwise col (K x cols)
 *          = W[g]^T (K x ocg) * diff_dst (ocg x cols), then col2im; W^T is packed once per call;
 *          threads split the images (the col2im of one image touches overlapping input pixels).
 *   bwd_w: diff_wei[g] (ocg x K) = diff_dst (ocg x cols) * im2col(src)^T (cols x K), the batch
 *          folded into the GEMM depth; B panels packed by window rows (for a tap row (c, r) the
 *          K columns s of one pixel read consecutive input elements: one masked copy per pixel);
 *          threads split (reduction part, K panel) items, where the parts are a fixed cut of the
 *          batch columns chosen from the shape (bww_parts: several only for a short K, as conv1),
 *          summed in a fixed order at the end, so the bits do not depend on the thread count.
 * Results do not depend on the thread count in any direction. Every buffer is allocated in
 * bkm__conv2d_fast_create; the directions never allocate. */
#include "kernels_int.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#ifndef FAST_TR_MIN_ICG
#define FAST_TR_MIN_ICG 128 /* bwd_d as a fwd from this many input channels per group on */
#endif
#ifndef FAST_TR_MAX_OCG
#define FAST_TR_MAX_OCG 256 /* ... up to this many output channels per group */
#endif
#define FAST_BLOCK_BYTES (1u << 20) /* B block / column tile when the L2 size is unknown (half of 2 MiB) */

/* A run of batch columns [j, j + len) inside one NR-column panel whose tap reads consecutive
 * input elements, sw apart, from off on (off < 0: padding, zeros). */
typedef bkm__fast_run_t fast_run_t; /* kernels_int.h: off, panel q, first column jj in it, len */

struct bkm_conv2d_fast {
    bkm_conv2d_desc_t d;
    bkm_gemm_ukr_t ukr;
    int64_t mr, nr, mc, kc;
    int nt;
    int edge;                          /* AVX-512 with 32-column panels: edge kernel for m <= 4 */
    int flip;                          /* this object computes a bwd_d as a fwd (see tr) */
    struct bkm_conv2d_fast *tr;        /* stride 1: bwd_d as the fwd of diff_dst with the flipped,
                                          transposed weights (no col2im); NULL: column tiles */
    int64_t icg, ocg, kdim, pq, ncols; /* ncols = mb * pq */
    int64_t mf, md;                    /* rows padded to mr: ocg (fwd, bwd_w), kdim (bwd_d) */
    int64_t ncf, ncd, ncw;             /* column block: fwd pixels, bwd_d pixels, bwd_w K columns */
    int64_t bww_parts;                 /* bwd_w: fixed parts of the batch-column reduction */
    int64_t runw;                      /* runs per tap at most (build_runs) */
    size_t wp_floats, bp_floats, aux_floats, runs_len, wei_floats;
    float *wp;                         /* packed weights (fwd: W, bwd_d: W^T), shared */
    float *bp;                         /* per thread: packed B block */
    float *aux;                        /* per thread: bwd_d column tile / bwd_w packed A block */
    float *wpart;                      /* bwd_w: partial diff_wei of parts 1 .. bww_parts - 1 */
    fast_run_t *runs;                  /* per thread: fwd copy runs, kh * kw * runw */
    int32_t *nruns;                    /* per thread: runs per tap, kh * kw */
    /* phase-split fwd (use_s2d): bands of s2d_br output rows; per thread a band buffer q of
     * ic * kh * sw slabs of s2d_br * s2d_ws floats, slab (c, r, ph) row oyb: input row
     * oyb * sh - ph_pad + r of channel c at columns xx * sw + ph - pw (0 outside) */
    int s2d;
    int64_t s2d_br, s2d_ws, s2d_nb; /* band rows, phase row length (ow + (kw - 1) / sw), bands */
    size_t q_floats;
    float *q;
    int32_t *boff;                  /* kdim: offset of row k = (c, r, s) of B from the band's column 0 */
};

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static const bkm_gemm_ukr_desc_t *fast_ukr_for(bkm_isa_t isa)
{
    switch (isa) {
    case BKM_ISA_AVX512: return &bkm__gemm_ukr_avx512;
    case BKM_ISA_AVX2: return &bkm__gemm_ukr_avx2;
    case BKM_ISA_GENERIC: return &bkm__gemm_ukr_generic;
    default: return NULL;
    }
}

/* Columns per block so that @p rows x block floats fit @p bytes (half of L2, at least one panel),
 * no more than the columns there are. @p user > 0 overrides the budget. */
static int64_t block_cols(int64_t rows, int64_t user, int64_t nr, int64_t have, size_t bytes)
{
    int64_t n = user > 0 ? round_up(user, nr) : (int64_t)(bytes / sizeof(float)) / rows / nr * nr;
    if (n < nr)
        n = nr;
    return min64(n, round_up(have, nr));
}

/* bwd_d as a fwd: stride 1 (the adjoint is then a convolution), padding <= kernel - 1, enough
 * input channels per group to fill the MR-row panels (the rows of that fwd), and few output
 * channels per group (the depth of the column-tile GEMM, too shallow for the micro-kernel below
 * FAST_TR_MAX_OCG). Measured on AlexNet (torchvision): conv4 (384 -> 256) and conv5 (256 -> 256)
 * gain; conv2 (64 -> 192: only 5 row panels) and conv3 (192 -> 384: deep enough) lose. */
static int use_transposed(const bkm_conv2d_desc_t *d, int64_t icg, int64_t ocg, int64_t mr)
{
    return d->sh == 1 && d->sw == 1 && d->ph <= d->kh - 1 && d->pw <= d->kw - 1 && icg >= FAST_TR_MIN_ICG &&
           round_up(icg, mr) * 10 <= icg * 11 && ocg <= FAST_TR_MAX_OCG;
}

void bkm__conv2d_fast_destroy(bkm_conv2d_fast_t *f)
{
    if (f == NULL)
        return;
    bkm_free(f->wp);
    bkm_free(f->bp);
    bkm_free(f->aux);
    bkm_free(f->wpart);
    bkm_free(f->runs);
    bkm_free(f->nruns);
    bkm_free(f->q);
    bkm_free(f->boff);
    bkm__conv2d_fast_destroy(f->tr);
    bkm_free(f);
}

/* bwd_w reduction parts, from the shape only (so the bits do not depend on the thread count):
 * with a short K (conv1: 3 x 11 x 11 = 363) every thread packing all of diff_dst for its K
 * columns costs as much as a sizeable part of the GEMM, so the batch columns are cut into parts
 * (threads take (part, K panel) items in order, each part is packed by few threads) summed at the
 * end in a fixed order; each part keeps at least BWW_PART_MIN_COLS columns. */
#ifndef BWW_PART_K
#define BWW_PART_K 1024 /* K below which the reduction is split */
#endif
#define BWW_PARTS_MAX 4
#define BWW_PART_MIN_COLS 512
static int64_t bww_parts(const bkm_conv2d_fast_t *f)
{
    int64_t s = f->kdim >= BWW_PART_K ? 1 : f->kdim * 2 >= BWW_PART_K ? 2 : BWW_PARTS_MAX;
    while (s > 1 && f->ncols / s < BWW_PART_MIN_COLS)
        s /= 2;
    return s;
}

/* Phase-split fwd: for a strided conv with a wide window and a short K (AlexNet conv1: 3 x 11 x 11,
 * stride 4) im2col writes every input element about (kh / sh) * (kw / sw) times into the B panels,
 * through strided gathers, in short runs. Instead, per band of output rows, each input row is split
 * once into its sw column phases (one slab per (c, r, phase), rows oyb, ws columns): row k = (c, r, s)
 * of B for the virtual columns v = oyb * ws + ox is then the contiguous slab (c, r, s % sw) from
 * column s / sw on, read in place by the tile kernel (no packing); columns with ox >= ow are junk
 * and never stored. AVX-512 with 32-column tiles, one group, sw >= 2, kw >= 2 sw, K <= S2D_MAX_K
 * (the whole depth in one weight panel). */
#ifndef S2D_MAX_K
#define S2D_MAX_K 1024
#endif
static int use_s2d(const bkm_conv2d_fast_t *f)
{
    const bkm_conv2d_desc_t *d = &f->d;
    return f->edge && f->mr <= 14 && d->g == 1 && d->sw >= 2 && d->kw >= 2 * d->sw && f->kdim <= S2D_MAX_K;
}

/* Band rows from the L2 budget (at least one), bands of equal height; the offsets of B's rows. */
static int s2d_create(bkm_conv2d_fast_t *f, size_t block, bkm_err_t *err)
{
    const bkm_conv2d_desc_t *d = &f->d;
    const int64_t slabs = d->ic * d->kh * d->sw;
    int64_t br;
    f->s2d_ws = d->ow + (d->kw - 1) / d->sw;
    br = (int64_t)(block / sizeof(float)) / (slabs * f->s2d_ws);
    br = br < 1 ? 1 : br > d->oh ? d->oh : br;
    f->s2d_nb = (d->oh + br - 1) / br;
    f->s2d_br = (d->oh + f->s2d_nb - 1) / f->s2d_nb;
    /* slack: a last tile reads up to 31 + (kw - 1) / sw columns past a slab's band */
    f->q_floats = (size_t)round_up(slabs * f->s2d_br * f->s2d_ws + 32 + d->kw, 16);
    f->q = bkm_aligned_alloc(64, (size_t)f->nt * f->q_floats * sizeof(float));
    f->boff = bkm_calloc((size_t)f->kdim, sizeof(int32_t));
    if (f->q == NULL || f->boff == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "conv2d algo=3: cannot allocate the phase-split bands (%d x %zu floats)",
                           f->nt, f->q_floats);
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num();
        memset(f->q + (size_t)t * f->q_floats, 0, f->q_floats * sizeof(float));
    }
    for (int64_t k = 0; k < f->kdim; k++) {
        const int64_t c = k / (d->kh * d->kw), r = k / d->kw % d->kh, s = k % d->kw;
        f->boff[k] = (int32_t)(((c * d->kh + r) * d->sw + s % d->sw) * f->s2d_br * f->s2d_ws + s / d->sw);
    }
    f->s2d = 1;
    return BKM_OK;
}

/* flip: create the bwd_d-as-fwd object of a stride-1 problem (descriptor already transposed). */
static int fast_create(bkm_conv2d_fast_t **out, const bkm_conv2d_desc_t *d, const bkm_gemm_cfg_t *cfg, int32_t nc,
                       int32_t ptile, int nt, int flip, bkm_err_t *err)
{
    const bkm_gemm_ukr_desc_t *u = cfg != NULL ? fast_ukr_for(cfg->isa) : NULL;
    /* blocks of half the L2 the topology reported (cfg->l2_bytes), else FAST_BLOCK_BYTES */
    const size_t block = cfg != NULL && cfg->l2_bytes > 0 ? (size_t)cfg->l2_bytes / 2 : FAST_BLOCK_BYTES;
    bkm_conv2d_fast_t *f = NULL;
    int rc = BKM_OK;

    *out = NULL;
    if (u == NULL)
        return bkm_err_set(err, BKM_ENOTSUP, "conv2d algo=3: no micro-kernel for isa=%s",
                           cfg != NULL ? bkm_kern_isa_name(cfg->isa) : "(null)");
    f = bkm_calloc(1, sizeof(*f));
    if (f == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "conv2d algo=3: out of memory");
    f->d = *d;
    f->ukr = u->fn;
    f->mr = cfg->mr;
    f->nr = cfg->nr;
    f->mc = cfg->mc;
    f->kc = bkm__kern_gemm_kc(cfg);
    f->nt = nt < 1 ? 1 : nt;
    f->edge = cfg->isa == BKM_ISA_AVX512 && cfg->nr == BKM_GEMM_EDGE_NR;
    f->icg = d->ic / d->g;
    f->ocg = d->oc / d->g;
    f->kdim = f->icg * d->kh * d->kw;
    f->pq = d->oh * d->ow;
    f->ncols = d->mb * f->pq;
    f->mf = round_up(f->ocg, f->mr);
    f->md = round_up(f->kdim, f->mr);
    f->ncf = block_cols(min64(f->kc, f->kdim), nc, f->nr, f->ncols, block);
    f->ncd = block_cols(f->md, ptile, f->nr, f->ncols, block);
    f->ncw = block_cols(min64(f->kc, f->ncols), nc, f->nr, f->kdim, block);
    f->wp_floats = (size_t)(d->g * (f->mf * f->kdim > f->md * f->ocg ? f->mf * f->kdim : f->md * f->ocg));
    f->bp_floats = (size_t)round_up(min64(f->kc, f->kdim) * f->ncf, 16);
    if ((size_t)(min64(f->kc, f->ocg) * f->ncd) > f->bp_floats)
        f->bp_floats = (size_t)round_up(min64(f->kc, f->ocg) * f->ncd, 16);
    if ((size_t)(min64(f->kc, f->ncols) * f->ncw) > f->bp_floats)
        f->bp_floats = (size_t)round_up(min64(f->kc, f->ncols) * f->ncw, 16);
    f->aux_floats = (size_t)round_up(f->md * f->ncd > f->mf * min64(f->kc, f->ncols) ? f->md * f->ncd
                                                                                    : f->mf * min64(f->kc, f->ncols),
                                     16);
    f->bww_parts = bww_parts(f);
    f->wei_floats = (size_t)(d->oc * f->kdim);
    if (f->bww_parts > 1)
        f->wpart = bkm_aligned_alloc(64, (size_t)(f->bww_parts - 1) * f->wei_floats * sizeof(float));
    f->runw = f->ncf; /* runs partition the columns, each at least one long */
    f->runs_len = (size_t)(d->kh * d->kw * f->runw);
    f->runs = bkm_aligned_alloc(64, (size_t)f->nt * f->runs_len * sizeof(fast_run_t));
    f->nruns = bkm_calloc((size_t)f->nt * (size_t)(d->kh * d->kw), sizeof(int32_t));
    f->wp = bkm_aligned_alloc(64, f->wp_floats * sizeof(float));
    f->bp = bkm_aligned_alloc(64, (size_t)f->nt * f->bp_floats * sizeof(float));
    f->aux = bkm_aligned_alloc(64, (size_t)f->nt * f->aux_floats * sizeof(float));
    if (f->wp == NULL || f->bp == NULL || f->aux == NULL || (f->bww_parts > 1 && f->wpart == NULL) || f->runs == NULL || f->nruns == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "conv2d algo=3: cannot allocate the workspace (%d threads x %zu floats)",
                         f->nt, f->bp_floats + f->aux_floats);
        goto out;
    }
    /* First touch by the threads that use each part. */
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num();
        memset(f->bp + (size_t)t * f->bp_floats, 0, f->bp_floats * sizeof(float));
        memset(f->aux + (size_t)t * f->aux_floats, 0, f->aux_floats * sizeof(float));
        memset(f->runs + (size_t)t * f->runs_len, 0, f->runs_len * sizeof(fast_run_t));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < (int64_t)f->wp_floats; i += 4096)
            memset(f->wp + i, 0, (size_t)min64(4096, (int64_t)f->wp_floats - i) * sizeof(float));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < (f->bww_parts - 1) * (int64_t)f->wei_floats; i += 4096)
            memset(f->wpart + i, 0, (size_t)min64(4096, (f->bww_parts - 1) * (int64_t)f->wei_floats - i) * sizeof(float));
    }
    f->flip = flip;
    if (!flip && use_s2d(f) && (rc = s2d_create(f, block, err)) < 0)
        goto out;
    if (!flip && use_transposed(d, f->icg, f->ocg, f->mr)) {
        bkm_conv2d_desc_t t = *d;
        t.ic = d->oc;
        t.oc = d->ic;
        t.ih = d->oh;
        t.iw = d->ow;
        t.oh = d->ih;
        t.ow = d->iw;
        t.ph = d->kh - 1 - d->ph;
        t.pw = d->kw - 1 - d->pw;
        t.has_bias = 0;
        if ((rc = fast_create(&f->tr, &t, cfg, nc, ptile, nt, 1, err)) < 0)
            goto out;
    }
    *out = f;
    f = NULL;
out:
    bkm__conv2d_fast_destroy(f);
    return rc;
}

int bkm__conv2d_fast_create(bkm_conv2d_fast_t **out, const bkm_conv2d_desc_t *d, const bkm_gemm_cfg_t *cfg,
                            int32_t nc, int32_t ptile, int nt, bkm_err_t *err)
{
    return fast_create(out, d, cfg, nc, ptile, nt, 0, err);
}

/* ---------------------------------------------------------------------------------------- */
/* Row writers. Column j of a row goes to o[(j / brk) * pstride + (j % brk) * step]; runs never
 * cross a multiple of brk (brk = nr: NR-column panels; brk >= nb: one strided run). */

static float *row_at(float *o, int64_t j, int64_t step, int64_t brk, int64_t pstride)
{
    return o + (j / brk) * pstride + (j % brk) * step;
}

/* Range [t0, t1) of t in [0, len) whose input column (ox + t) * sw - pw + s lies in [0, iw). */
static void valid_range(const bkm_conv2d_desc_t *d, int64_t ox, int64_t len, int64_t s, int64_t *t0, int64_t *t1)
{
    const int64_t lo = d->pw - s, hi = d->iw + d->pw - s;
    int64_t a = lo <= 0 ? 0 : (lo + d->sw - 1) / d->sw;
    int64_t b = hi <= 0 ? 0 : (hi + d->sw - 1) / d->sw;
    a -= ox;
    b -= ox;
    *t0 = a < 0 ? 0 : (a > len ? len : a);
    *t1 = b < *t0 ? *t0 : (b > len ? len : b);
}

/* Row of channel ch (absolute) of an NCHW output-shaped tensor for batch columns [col0, col0 + nb). */
static void out_row(const bkm_conv2d_fast_t *f, const float *x, int64_t ch, int64_t col0, int64_t nb, float *o,
                    int64_t step, int64_t brk, int64_t pstride)
{
    int64_t n = col0 / f->pq, p = col0 % f->pq, j = 0;
    while (j < nb) {
        const int64_t len = min64(min64(f->pq - p, nb - j), brk - j % brk);
        const float *in = x + (n * f->d.oc + ch) * f->pq + p;
        float *w = row_at(o, j, step, brk, pstride);
        if (step == 1)
            memcpy(w, in, (size_t)len * sizeof(float));
        else
            for (int64_t t = 0; t < len; t++)
                w[t * step] = in[t];
        j += len;
        p += len;
        if (p == f->pq) {
            p = 0;
            n++;
        }
    }
}

/* Zero the columns [nb, round_up(nb, nr)) of the last NR-column panel of a kb-deep B block. */
static void pad_panel(const bkm_conv2d_fast_t *f, float *bp, int64_t kb, int64_t nb)
{
    const int64_t rem = nb % f->nr;
    if (rem == 0)
        return;
    for (int64_t p = 0; p < kb; p++)
        memset(bp + (nb / f->nr) * kb * f->nr + p * f->nr + rem, 0, (size_t)(f->nr - rem) * sizeof(float));
}

/* ---------------------------------------------------------------------------------------- */
/* Weight packing (once per call, shared): panel i of group g and depth block pc sits at
 * wp + g * rows * depth + pc * rows + i * kb * mr, where rows is padded to mr. */

static void pack_weights_fwd(const bkm_conv2d_fast_t *f, const float *wei)
{
    const int64_t np = f->mf / f->mr;
#pragma omp for schedule(static)
    for (int64_t gi = 0; gi < f->d.g * np; gi++) {
        const int64_t g = gi / np, i = gi % np;
        for (int64_t pc = 0; pc < f->kdim; pc += f->kc) {
            const int64_t kb = min64(f->kc, f->kdim - pc);
            float *a = f->wp + g * f->mf * f->kdim + pc * f->mf + i * kb * f->mr;
            const int64_t m = min64(f->mr, f->ocg - i * f->mr);
            const float *w = wei + (g * f->ocg + i * f->mr) * f->kdim + pc;
            for (int64_t p = 0; p < kb && !f->flip; p++) {
                for (int64_t ii = 0; ii < m; ii++)
                    a[p * f->mr + ii] = w[ii * f->kdim + p];
                for (int64_t ii = m; ii < f->mr; ii++)
                    a[p * f->mr + ii] = 0.0f;
            }
            for (int64_t p = 0; p < kb && f->flip; p++) {
                /* Row = input channel of the original problem, k = (oc, r', s'): the original
                 * weight [g][oc][row][kh-1-r'][kw-1-s'] (f->icg here is the original ocg). */
                const int64_t khw = f->d.kh * f->d.kw, oc = (pc + p) / khw, tap = (pc + p) % khw;
                const float *wf = wei + ((g * f->icg + oc) * f->ocg + i * f->mr) * khw + (khw - 1 - tap);
                for (int64_t ii = 0; ii < m; ii++)
                    a[p * f->mr + ii] = wf[ii * khw];
                for (int64_t ii = m; ii < f->mr; ii++)
                    a[p * f->mr + ii] = 0.0f;
            }
        }
    }
}

static void pack_weights_bwd_data(const bkm_conv2d_fast_t *f, const float *wei)
{
    const int64_t np = f->md / f->mr;
#pragma omp for schedule(static)
    for (int64_t gi = 0; gi < f->d.g * np; gi++) {
        const int64_t g = gi / np, i = gi % np, k0 = i * f->mr, m = min64(f->mr, f->kdim - k0);
        for (int64_t pc = 0; pc < f->ocg; pc += f->kc) {
            const int64_t kb = min64(f->kc, f->ocg - pc);
            float *a = f->wp + g * f->md * f->ocg + pc * f->md + i * kb * f->mr;
            for (int64_t p = 0; p < kb; p++) {
                const float *w = wei + (g * f->ocg + pc + p) * f->kdim + k0;
                for (int64_t ii = 0; ii < f->mr; ii++)
                    a[p * f->mr + ii] = ii < m ? w[ii] : 0.0f;
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* B packing from the offset tables; srcg: the group's channel 0 of image 0. */

/* Append a run to r[0..*n): zero runs extend a zero run before them in the same panel. */
static void add_run(fast_run_t *r, int32_t *n, int64_t off, int32_t q, int32_t jj, int64_t len)
{
    if (len <= 0)
        return;
    if (off < 0 && *n > 0 && r[*n - 1].off < 0 && r[*n - 1].q == q && r[*n - 1].jj + r[*n - 1].len == jj) {
        r[*n - 1].len += (int32_t)len;
        return;
    }
    r[*n].off = off;
    r[*n].q = q;
    r[*n].jj = jj;
    r[*n].len = (int32_t)len;
    (*n)++;
}

/* Runs of each tap (runs + tap * runw, n_runs[tap] of them) for batch columns [col0, col0 + nb):
 * the columns are walked in segments inside one output row and one NR panel; each segment is
 * padding, valid taps (input elements sw apart) and padding. Offsets are relative to channel 0 of
 * the group in image 0. */
static void build_runs(const bkm_conv2d_fast_t *f, int64_t col0, int64_t nb, fast_run_t *runs, int32_t *n_runs)
{
    const bkm_conv2d_desc_t *d = &f->d;
    const int64_t img = d->ic * d->ih * d->iw;
    for (int64_t r = 0; r < d->kh; r++)
        for (int64_t s = 0; s < d->kw; s++) {
            fast_run_t *rr = runs + (r * d->kw + s) * f->runw;
            int64_t n = col0 / f->pq, p = col0 % f->pq, oy = p / d->ow, ox = p % d->ow, j = 0, jj = 0, q = 0;
            int32_t cnt = 0;
            while (j < nb) {
                const int64_t len = min64(min64(d->ow - ox, nb - j), f->nr - jj), iy = oy * d->sh - d->ph + r;
                if (iy < 0 || iy >= d->ih) {
                    add_run(rr, &cnt, -1, (int32_t)q, (int32_t)jj, len);
                } else {
                    int64_t t0, t1;
                    valid_range(d, ox, len, s, &t0, &t1);
                    add_run(rr, &cnt, -1, (int32_t)q, (int32_t)jj, t0);
                    add_run(rr, &cnt, n * img + iy * d->iw + (ox + t0) * d->sw - d->pw + s, (int32_t)q,
                            (int32_t)(jj + t0), t1 - t0);
                    add_run(rr, &cnt, -1, (int32_t)q, (int32_t)(jj + t1), len - t1);
                }
                j += len;
                ox += len;
                if (ox == d->ow) {
                    ox = 0;
                    if (++oy == d->oh) {
                        oy = 0;
                        n++;
                    }
                }
                jj += len;
                if (jj == f->nr) {
                    jj = 0;
                    q++;
                }
            }
            n_runs[r * d->kw + s] = cnt;
        }
}

/* fwd: rows k in [pc, pc + kb) of im2col, batch columns [0, nb) of the runs, into NR-column
 * panels (panel q at bp + q * kb * nr, row kk at + kk * nr); the last panel is zero-padded. */
static void pack_b_fwd(const bkm_conv2d_fast_t *f, const float *srcg, const fast_run_t *runs, const int32_t *n_runs,
                       int64_t pc, int64_t kb, int64_t nb, float *bp)
{
    const int64_t plane = f->d.ih * f->d.iw, khw = f->d.kh * f->d.kw, nr = f->nr, sw = f->d.sw;
    for (int64_t kk = 0; kk < kb; kk++) {
        const int64_t k = pc + kk, tap = k % khw;
        const fast_run_t *r = runs + tap * f->runw;
        const float *base = srcg + (k / khw) * plane;
        float *row = bp + kk * nr;
        if (f->edge) {
            bkm__conv2d_fast_pack_row_avx512(r, n_runs[tap], base, sw, kb, nr, row);
            continue;
        }
        for (int32_t i = 0; i < n_runs[tap]; i++) {
            float *w = row + r[i].q * kb * nr + r[i].jj;
            if (r[i].off < 0) {
                for (int32_t t = 0; t < r[i].len; t++)
                    w[t] = 0.0f;
            } else if (sw == 1) {
                const float *x = base + r[i].off;
                for (int32_t t = 0; t < r[i].len; t++)
                    w[t] = x[t];
            } else {
                const float *x = base + r[i].off;
                for (int32_t t = 0; t < r[i].len; t++)
                    w[t] = x[t * sw];
            }
        }
    }
    pad_panel(f, bp, kb, nb);
}

/* bwd_w, by window rows: for a fixed tap row (c, r), the K columns (c, r, s0..s1) of one output
 * pixel read s1 - s0 consecutive input elements (whatever the stride), so a piece of a panel row
 * is a short copy, clipped at the padding. Writes lanes [lane, lane + len) of the rows [0, kb) of
 * the panel at dst (row p at dst + p * nr) for batch columns [pc, pc + kb). */
static void pack_piece_bwd_w(const bkm_conv2d_fast_t *f, const float *chan, int64_t r, int64_t s0, int64_t len,
                             int64_t pc, int64_t kb, float *dst)
{
    const bkm_conv2d_desc_t *d = &f->d;
    const int64_t img = d->ic * d->ih * d->iw, nr = f->nr;
    int64_t j = 0, n = pc / f->pq, p = pc % f->pq, oy = p / d->ow, ox = p % d->ow;
    /* output columns [xa, xb) read the whole piece inside the row (no clipping) */
    const int64_t xa = d->pw - s0 <= 0 ? 0 : (d->pw - s0 + d->sw - 1) / d->sw;
    const int64_t xb_num = d->iw + d->pw - s0 - len;
    const int64_t xb = xb_num < 0 ? 0 : min64(d->ow, xb_num / d->sw + 1);
    while (j < kb) {
        const int64_t seg = min64(d->ow - ox, kb - j), iy = oy * d->sh - d->ph + r;
        float *w = dst + j * nr;
        if (f->edge && len <= 16) {
            const int64_t ix = ox * d->sw - d->pw + s0;
            const float *in = iy < 0 || iy >= d->ih ? NULL : chan + n * img + iy * d->iw + ix;
            bkm__conv2d_fast_rows_avx512(seg, len, in, d->sw, ix, d->iw, w, nr);
        } else if (iy < 0 || iy >= d->ih) {
            for (int64_t t = 0; t < seg; t++)
                for (int64_t l = 0; l < len; l++)
                    w[t * nr + l] = 0.0f;
        } else {
            const float *row = chan + n * img + iy * d->iw - d->pw + s0;
            for (int64_t t = 0; t < seg; t++) {
                const int64_t x = ox + t;
                const float *in = row + x * d->sw;
                float *o = w + t * nr;
                if (x >= xa && x < xb) {
                    for (int64_t l = 0; l < len; l++)
                        o[l] = in[l];
                } else {
                    const int64_t ix = x * d->sw - d->pw + s0;
                    for (int64_t l = 0; l < len; l++)
                        o[l] = ix + l >= 0 && ix + l < d->iw ? in[l] : 0.0f;
                }
            }
        }
        j += seg;
        ox += seg;
        if (ox == d->ow) {
            ox = 0;
            if (++oy == d->oh) {
                oy = 0;
                n++;
            }
        }
    }
}

/* bwd_w B block (im2col transposed) for K columns [k0, k0 + nk) and batch columns [pc, pc + kb):
 * panel q at bp + q * kb * nr, depth p at + p * nr; lanes past nk are zero. */
static void pack_b_bwd_w_rows(const bkm_conv2d_fast_t *f, const float *srcg, int64_t pc, int64_t kb, int64_t k0,
                              int64_t nk, float *bp)
{
    const bkm_conv2d_desc_t *d = &f->d;
    const int64_t nr = f->nr, kw = d->kw, plane = d->ih * d->iw, rem = nk % nr;
    const int64_t cr0 = k0 / kw, cr1 = (k0 + nk - 1) / kw + 1;
    if (rem != 0)
        for (int64_t p = 0; p < kb; p++)
            memset(bp + (nk / nr) * kb * nr + p * nr + rem, 0, (size_t)(nr - rem) * sizeof(float));
    for (int64_t cr = cr0; cr < cr1; cr++) {
        const int64_t c = cr / d->kh, r = cr % d->kh, base = cr * kw;
        const int64_t sb = min64(kw, k0 + nk - base);
        int64_t s = k0 - base > 0 ? k0 - base : 0;
        while (s < sb) { /* pieces split at panel boundaries */
            const int64_t kk = base + s - k0, lane = kk % nr, e = min64(sb, s + nr - lane);
            pack_piece_bwd_w(f, srcg + c * plane, r, s, e - s, pc, kb, bp + (kk / nr) * kb * nr + lane);
            s = e;
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Forward */

/* One mr x nr tile of dst[g] rows [i0, i0 + mr) and batch columns [col, col + ncol). */
/* Rows [0, m) of a register tile: the micro-kernel, or the AVX-512 edge kernel for a last row
 * panel of at most BKM_GEMM_EDGE_M rows (rows past m are then not written). */
static int use_edge(const bkm_conv2d_fast_t *f, int64_t m)
{
    return f->edge && m < f->mr && m <= BKM_GEMM_EDGE_M;
}

static void run_tile(const bkm_conv2d_fast_t *f, int64_t m, int64_t kb, const float *a, const float *b, float *c,
                     int64_t ldc, float beta)
{
    if (use_edge(f, m))
        bkm__gemm_edge_avx512(m, kb, a, f->mr, b, c, ldc, beta);
    else
        f->ukr(kb, a, b, c, ldc, 1.0f, beta);
}

/* The fwd store's epilogue, applied once to a tile after its last depth block: the bias (NULL:
 * none), then the activation (BKM_FAST_ACT_*; mask: the ReLU output of ReLU backward, dst's layout). */
typedef struct fast_epi {
    const float *bias;
    int act;
    const float *mask;
} fast_epi_t;

/* rows [0, m), columns [0, n) of c (ldc) in place; bias: the tile's first row's value; mask at the
 * same offsets as c (NULL unless BKM_FAST_ACT_MASK). The same operations as the separate passes
 * (c += bias, then bkm_kern_relu_fwd / bkm_kern_relu_bwd), so the same bits. */
static void epi_tile(const bkm_conv2d_fast_t *f, float *c, int64_t ldc, int64_t m, int64_t n, const float *bias,
                     int act, const float *mask)
{
    if (f->edge) {
        bkm__conv2d_fast_epi_avx512(c, ldc, m, n, bias, act, mask);
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        float *r = c + i * ldc;
        const float *mk = mask != NULL ? mask + i * ldc : NULL;
        if (bias != NULL)
            for (int64_t j = 0; j < n; j++)
                r[j] += bias[i];
        if (act == BKM_FAST_ACT_RELU)
            for (int64_t j = 0; j < n; j++)
                r[j] = r[j] > 0.0f ? r[j] : 0.0f;
        else if (act == BKM_FAST_ACT_MASK)
            for (int64_t j = 0; j < n; j++)
                r[j] = mk[j] > 0.0f ? r[j] : 0.0f;
    }
}

/* One mr x nr tile of dst[g] rows [i0, i0 + mr) and batch columns [col, col + ncol); epi: NULL
 * except after the last depth block. */
static void fwd_tile(const bkm_conv2d_fast_t *f, int64_t kb, const float *a, const float *b, int64_t g, int64_t i0,
                     int64_t col, int64_t ncol, int first, const fast_epi_t *epi, float *dst)
{
    const int64_t m = min64(f->mr, f->ocg - i0), n0 = col / f->pq, p0 = col % f->pq;
    const float *bias = epi != NULL && epi->bias != NULL ? epi->bias + g * f->ocg + i0 : NULL;
    if ((m == f->mr || use_edge(f, m)) && ncol == f->nr && p0 + f->nr <= f->pq) {
        float *c = dst + (n0 * f->d.oc + g * f->ocg + i0) * f->pq + p0;
        if (epi != NULL && epi->mask != NULL) /* the mask rows reach cache while the tile computes */
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < ncol; j += 16)
                    __builtin_prefetch(epi->mask + (c - dst) + i * f->pq + j, 0, 3);
        run_tile(f, m, kb, a, b, c, f->pq, first ? 0.0f : 1.0f);
        if (epi != NULL && (bias != NULL || epi->act != BKM_FAST_ACT_NONE))
            epi_tile(f, c, f->pq, m, ncol, bias, epi->act, epi->mask != NULL ? epi->mask + (c - dst) : NULL);
        return;
    }
    {
        _Alignas(64) float tile[BKM_GEMM_MR_MAX * BKM_GEMM_NR_MAX];
        const int act = epi != NULL ? epi->act : BKM_FAST_ACT_NONE;
        int64_t j = 0, n = n0, p = p0;
        run_tile(f, m, kb, a, b, tile, f->nr, 0.0f);
        while (j < ncol) { /* the tile may end one image and start the next: a piece per image */
            const int64_t len = min64(ncol - j, f->pq - p);
            float *c = dst + (n * f->d.oc + g * f->ocg + i0) * f->pq + p;
            const float *mk = epi != NULL && epi->mask != NULL ? epi->mask + (c - dst) : NULL;
            if (first && f->edge) {
                bkm__conv2d_fast_store_avx512(tile + j, m, len, c, f->pq, bias, act, mk);
            } else {
                for (int64_t i = 0; i < m; i++) {
                    const float bv = bias != NULL ? bias[i] : 0.0f, *t = tile + i * f->nr + j;
                    float *r = c + i * f->pq;
                    if (first)
                        for (int64_t q = 0; q < len; q++)
                            r[q] = t[q] + bv;
                    else
                        for (int64_t q = 0; q < len; q++)
                            r[q] += t[q] + bv;
                }
                if (act != BKM_FAST_ACT_NONE)
                    epi_tile(f, c, f->pq, m, len, NULL, act, mk);
            }
            j += len;
            p = 0;
            n++;
        }
    }
}

/* Prefetch (into L2) of the input rows of the thread's next band, a few cache lines after each
 * tile of the current band: the band's split then reads them from cache, not memory. */
typedef struct s2d_pf {
    const char *img;           /* the next band's image; NULL: none */
    int64_t c, line, nlines;   /* cursor: channel, line in it; lines per channel */
    int64_t chan_bytes, off;   /* bytes between channels; the first row's offset */
    int64_t per;               /* lines per tile */
} s2d_pf_t;

static void s2d_pf_init(const bkm_conv2d_fast_t *f, const float *src, int64_t it, int64_t tiles, s2d_pf_t *pf)
{
    const bkm_conv2d_desc_t *d = &f->d;
    memset(pf, 0, sizeof *pf);
    if (it < 0)
        return;
    {
        const int64_t n = it / f->s2d_nb, oy0 = it % f->s2d_nb * f->s2d_br, nrow = min64(f->s2d_br, d->oh - oy0);
        int64_t a = oy0 * d->sh - d->ph, b = (oy0 + nrow - 1) * d->sh - d->ph + d->kh;
        a = a < 0 ? 0 : a;
        b = b > d->ih ? d->ih : b;
        if (b <= a)
            return;
        pf->img = (const char *)(src + n * d->ic * d->ih * d->iw);
        pf->off = a * d->iw * (int64_t)sizeof(float);
        pf->chan_bytes = d->ih * d->iw * (int64_t)sizeof(float);
        pf->nlines = ((b - a) * d->iw * (int64_t)sizeof(float) + 63) / 64;
        pf->per = d->ic * pf->nlines / (tiles > 0 ? tiles : 1) + 1;
    }
}

static void s2d_pf_step(const bkm_conv2d_fast_t *f, s2d_pf_t *pf)
{
    for (int64_t k = 0; k < pf->per && pf->img != NULL && pf->c < f->d.ic; k++) {
        __builtin_prefetch(pf->img + pf->c * pf->chan_bytes + pf->off + pf->line * 64, 0, 2);
        if (++pf->line == pf->nlines) {
            pf->line = 0;
            pf->c++;
        }
    }
}

static void s2d_fwd(bkm_conv2d_fast_t *f, const float *src, const float *wei, const fast_epi_t *epi, float *dst)
{
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const bkm_conv2d_desc_t *d = &f->d;
        const int64_t items = d->mb * f->s2d_nb, it0 = items * t / nth, it1 = items * (t + 1) / nth;
        const int64_t np = f->mf / f->mr, ws = f->s2d_ws;
        float *q = f->q + (size_t)t * f->q_floats;
        _Alignas(64) float tile[BKM_GEMM_MR_MAX * 32];
        /* the weights in full-depth MR-row panels (panel i at wp + i * kdim * mr) */
#pragma omp for schedule(static)
        for (int64_t i = 0; i < np; i++) {
            const int64_t m = min64(f->mr, f->ocg - i * f->mr);
            float *a = f->wp + i * f->kdim * f->mr;
            for (int64_t p = 0; p < f->kdim; p++)
                for (int64_t ii = 0; ii < f->mr; ii++)
                    a[p * f->mr + ii] = ii < m ? wei[(i * f->mr + ii) * f->kdim + p] : 0.0f;
        }
        for (int64_t it = it0; it < it1; it++) {
            const int64_t n = it / f->s2d_nb, oy0 = it % f->s2d_nb * f->s2d_br;
            const int64_t nrow = min64(f->s2d_br, d->oh - oy0), nv = nrow * ws;
            s2d_pf_t pf;
            bkm__conv2d_fast_s2d_band_avx512(d, src + n * d->ic * d->ih * d->iw, oy0, nrow, ws, f->s2d_br * ws, q);
            s2d_pf_init(f, src, it + 1 < it1 ? it + 1 : -1, ((nv + 31) / 32) * np, &pf);
            for (int64_t v0 = 0; v0 < nv; v0 += 32)
                for (int64_t i = 0; i < np; i++) {
                    const int64_t m = min64(f->mr, f->ocg - i * f->mr);
                    const float *bias = epi->bias != NULL ? epi->bias + i * f->mr : NULL;
                    bkm__conv2d_fast_s2d_tile_avx512(m, f->kdim, f->wp + i * f->kdim * f->mr, f->mr, q + v0, f->boff,
                                                     tile);
                    s2d_pf_step(f, &pf);
                    /* the tile's columns, in pieces inside one output row, into dst */
                    for (int64_t v = v0; v < min64(v0 + 32, nv);) {
                        const int64_t oyb = v / ws, ox = v % ws;
                        const int64_t len = min64(ws - ox, v0 + 32 - v);
                        if (ox < d->ow) {
                            const int64_t l = min64(len, d->ow - ox);
                            float *c = dst + (n * d->oc + i * f->mr) * f->pq + (oy0 + oyb) * d->ow + ox;
                            bkm__conv2d_fast_store_avx512(tile + (v - v0), m, l, c, f->pq, bias, epi->act,
                                                              epi->mask != NULL ? epi->mask + (c - dst) : NULL);
                        }
                        v += len;
                    }
                }
        }
    }
}

void bkm__conv2d_fast_fwd_act(bkm_conv2d_fast_t *f, const float *src, const float *wei, const float *bias, int act,
                              const float *mask, float *dst)
{
    const fast_epi_t epi = {bias, act, mask};
    if (f->s2d) {
        s2d_fwd(f, src, wei, &epi, dst);
        return;
    }
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const int64_t npan = (f->ncols + f->nr - 1) / f->nr;
        const int64_t c0 = npan * t / nth * f->nr, c1 = min64(f->ncols, npan * (t + 1) / nth * f->nr);
        float *bp = f->bp + (size_t)t * f->bp_floats;
        fast_run_t *runs = f->runs + (size_t)t * f->runs_len;
        int32_t *n_runs = f->nruns + (size_t)t * (size_t)(f->d.kh * f->d.kw);
        pack_weights_fwd(f, wei); /* ends with the barrier of the omp for */
        for (int64_t g = 0; g < f->d.g; g++)
            for (int64_t jc = c0; jc < c1; jc += f->ncf) {
                const int64_t nb = min64(f->ncf, c1 - jc);
                build_runs(f, jc, nb, runs, n_runs);
                for (int64_t pc = 0; pc < f->kdim; pc += f->kc) {
                    const int64_t kb = min64(f->kc, f->kdim - pc);
                    const float *ag = f->wp + g * f->mf * f->kdim + pc * f->mf;
                    const int first = pc == 0;
                    const fast_epi_t *e = pc + kb == f->kdim ? &epi : NULL;
                    pack_b_fwd(f, src + g * f->icg * f->d.ih * f->d.iw, runs, n_runs, pc, kb, nb, bp);
                    for (int64_t ic = 0; ic < f->mf; ic += f->mc) {
                        const int64_t ie = min64(f->mf, ic + f->mc);
                        for (int64_t jr = 0; jr < nb; jr += f->nr)
                            for (int64_t ir = ic; ir < ie; ir += f->mr)
                                fwd_tile(f, kb, ag + ir * kb, bp + jr * kb, g, ir, jc + jr, min64(f->nr, nb - jr),
                                         first, e, dst);
                    }
                }
            }
    }
}

void bkm__conv2d_fast_fwd(bkm_conv2d_fast_t *f, const float *src, const float *wei, const float *bias, float *dst)
{
    bkm__conv2d_fast_fwd_act(f, src, wei, bias, BKM_FAST_ACT_NONE, NULL, dst);
}

/* ---------------------------------------------------------------------------------------- */
/* Backward data */

/* diff_src of image n, group g += col2im of the column tile (ld floats per row) for the image's
 * pixels [p0, p0 + np), whose first column is col[0]. */
static void col2im_ld(const bkm_conv2d_fast_t *f, const float *col, int64_t ld, int64_t n, int64_t g, int64_t p0,
                      int64_t np, float *diff_src)
{
    const bkm_conv2d_desc_t *d = &f->d;
    if (f->edge && d->sw == 1) { /* the kw taps of a (c, r) together: each output loaded once */
        for (int64_t cr = 0; cr < f->icg * d->kh; cr++) {
            const int64_t c = cr / d->kh, r = cr % d->kh;
            float *plane = diff_src + (n * d->ic + g * f->icg + c) * d->ih * d->iw;
            int64_t j = 0, oy = p0 / d->ow, ox = p0 % d->ow;
            while (j < np) {
                const int64_t len = min64(d->ow - ox, np - j), iy = oy * d->sh - d->ph + r;
                if (iy >= 0 && iy < d->ih)
                    bkm__conv2d_fast_col2im_row_avx512(col + cr * d->kw * ld + j, ld, d->kw, len, ox - d->pw, d->iw,
                                                       plane + iy * d->iw);
                j += len;
                ox = 0;
                oy++;
            }
        }
        return;
    }
    for (int64_t k = 0; k < f->kdim; k++) {
        const int64_t c = k / (d->kh * d->kw), r = k / d->kw % d->kh, s = k % d->kw;
        const float *row = col + k * ld;
        float *plane = diff_src + (n * d->ic + g * f->icg + c) * d->ih * d->iw;
        int64_t j = 0, oy = p0 / d->ow, ox = p0 % d->ow;
        while (j < np) {
            const int64_t len = min64(d->ow - ox, np - j), iy = oy * d->sh - d->ph + r;
            if (iy >= 0 && iy < d->ih) {
                const float *o = row + j;
                float *out = plane + iy * d->iw;
                int64_t t0, t1;
                valid_range(d, ox, len, s, &t0, &t1);
                if (d->sw == 1) {
                    float *out1 = out + ox - d->pw + s;
                    for (int64_t t = t0; t < t1; t++)
                        out1[t] += o[t];
                } else {
                    for (int64_t t = t0; t < t1; t++)
                        out[(ox + t) * d->sw - d->pw + s] += o[t];
                }
            }
            j += len;
            ox = 0;
            oy++;
        }
    }
}

void bkm__conv2d_fast_bwd_data(bkm_conv2d_fast_t *f, const float *diff_dst, const float *wei, float *diff_src)
{
    bkm__conv2d_fast_bwd_data_mask(f, diff_dst, wei, NULL, diff_src);
}

void bkm__conv2d_fast_bwd_data_mask(bkm_conv2d_fast_t *f, const float *diff_dst, const float *wei, const float *mask,
                                    float *diff_src)
{
    const size_t src_img = (size_t)(f->d.ic * f->d.ih * f->d.iw);
    if (f->tr != NULL) {
        bkm__conv2d_fast_fwd_act(f->tr, diff_dst, wei, NULL, mask != NULL ? BKM_FAST_ACT_MASK : BKM_FAST_ACT_NONE,
                                 mask, diff_src);
        return;
    }
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const int64_t n0 = f->d.mb * t / nth, n1 = f->d.mb * (t + 1) / nth;
        float *bp = f->bp + (size_t)t * f->bp_floats, *col = f->aux + (size_t)t * f->aux_floats;
        if (n1 > n0)
            memset(diff_src + (size_t)n0 * src_img, 0, (size_t)(n1 - n0) * src_img * sizeof(float));
        pack_weights_bwd_data(f, wei);
        for (int64_t g = 0; g < f->d.g; g++)
            /* Tiles on a global grid of ncd columns, clipped to this thread's images: the tiles of
             * an image (so the order of the col2im sums) do not depend on the thread count. */
            for (int64_t jt = n0 * f->pq / f->ncd * f->ncd; jt < n1 * f->pq; jt += f->ncd) {
                const int64_t jc = jt > n0 * f->pq ? jt : n0 * f->pq, nb = min64(jt + f->ncd, n1 * f->pq) - jc;
                for (int64_t pc = 0; pc < f->ocg; pc += f->kc) {
                    const int64_t kb = min64(f->kc, f->ocg - pc);
                    const float *ag = f->wp + g * f->md * f->ocg + pc * f->md;
                    for (int64_t kk = 0; kk < kb; kk++)
                        out_row(f, diff_dst, g * f->ocg + pc + kk, jc, nb, bp + kk * f->nr, 1, f->nr, kb * f->nr);
                    pad_panel(f, bp, kb, nb);
                    /* The column tile has md rows and ncd columns: every tile is a full one. */
                    for (int64_t ic = 0; ic < f->md; ic += f->mc) {
                        const int64_t ie = min64(f->md, ic + f->mc);
                        for (int64_t jr = 0; jr < nb; jr += f->nr)
                            for (int64_t ir = ic; ir < ie; ir += f->mr)
                                f->ukr(kb, ag + ir * kb, bp + jr * kb, col + ir * f->ncd + jr, f->ncd, 1.0f,
                                       pc == 0 ? 0.0f : 1.0f);
                    }
                }
                for (int64_t j = 0; j < nb;) { /* the tile may end one image and start the next */
                    const int64_t c = jc + j, n = c / f->pq, p = c % f->pq, np = min64(f->pq - p, nb - j);
                    col2im_ld(f, col + j, f->ncd, n, g, p, np, diff_src);
                    j += np;
                }
            }
        if (mask != NULL && n1 > n0) { /* ReLU backward over this thread's images, while they are warm */
            float *ds = diff_src + (size_t)n0 * src_img;
            const float *mk = mask + (size_t)n0 * src_img;
            const size_t len = (size_t)(n1 - n0) * src_img;
            for (size_t i = 0; i < len; i++) {
                const float v = ds[i];
                ds[i] = mk[i] > 0.0f ? v : 0.0f;
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Backward weights */

/* A: diff_dst rows of group g, MR-row panels (panel at ap + i0 * kb, depth p at + p * mr) over
 * the batch columns [pc, pc + kb); rows past ocg are zero. */
static void pack_a_bwd_w(const bkm_conv2d_fast_t *f, const float *diff_dst, int64_t g, int64_t pc, int64_t kb,
                         float *ap)
{
    const int64_t mr = f->mr;
    for (int64_t i0 = 0; i0 < f->mf; i0 += mr) {
        const int64_t m = min64(mr, f->ocg - i0);
        float *a = ap + i0 * kb;
        int64_t j = 0, n = pc / f->pq, p = pc % f->pq;
        while (j < kb) {
            const int64_t len = min64(f->pq - p, kb - j);
            const float *x = diff_dst + (n * f->d.oc + g * f->ocg + i0) * f->pq + p;
            if (f->edge) {
                bkm__pack_tr_avx512(x, f->pq, m, len, a + j * mr, mr);
                j += len;
                p = 0;
                n++;
                continue;
            }
            for (int64_t t = 0; t < len; t++) {
                float *w = a + (j + t) * mr;
                for (int64_t ii = 0; ii < m; ii++)
                    w[ii] = x[ii * f->pq + t];
                for (int64_t ii = m; ii < mr; ii++)
                    w[ii] = 0.0f;
            }
            j += len;
            p = 0;
            n++;
        }
    }
}

static void bwd_w_tile(const bkm_conv2d_fast_t *f, int64_t kb, const float *a, const float *b, int64_t g, int64_t i0,
                       int64_t k0, int64_t nk, int first, float *diff_wei)
{
    const int64_t m = min64(f->mr, f->ocg - i0);
    float *c = diff_wei + (g * f->ocg + i0) * f->kdim + k0;
    _Alignas(64) float tile[BKM_GEMM_MR_MAX * BKM_GEMM_NR_MAX];
    if ((m == f->mr || use_edge(f, m)) && nk == f->nr) {
        run_tile(f, m, kb, a, b, c, f->kdim, first ? 0.0f : 1.0f);
        return;
    }
    run_tile(f, m, kb, a, b, tile, f->nr, 0.0f);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < nk; j++)
            c[i * f->kdim + j] = tile[i * f->nr + j] + (first ? 0.0f : c[i * f->kdim + j]);
}

/* Part @p part (batch columns [c0, c1)) of diff_wei for K columns [j0, j1) into out. */
static void bwd_w_part(const bkm_conv2d_fast_t *f, const float *src, const float *diff_dst, int64_t c0, int64_t c1,
                       int64_t j0, int64_t j1, float *bp, float *ap, float *out)
{
    /* Depth blocks outside the column blocks: A is packed once per depth block; out (these
     * columns) is revisited once per depth block. */
    for (int64_t g = 0; g < f->d.g && j0 < j1; g++)
        for (int64_t pc = c0; pc < c1; pc += f->kc) {
            const int64_t kb = min64(f->kc, c1 - pc);
            pack_a_bwd_w(f, diff_dst, g, pc, kb, ap);
            for (int64_t jc = j0; jc < j1; jc += f->ncw) {
                const int64_t nk = min64(f->ncw, j1 - jc);
                pack_b_bwd_w_rows(f, src + g * f->icg * f->d.ih * f->d.iw, pc, kb, jc, nk, bp);
                for (int64_t ic = 0; ic < f->mf; ic += f->mc) {
                    const int64_t ie = min64(f->mf, ic + f->mc);
                    for (int64_t jr = 0; jr < nk; jr += f->nr)
                        for (int64_t ir = ic; ir < ie; ir += f->mr)
                            bwd_w_tile(f, kb, ap + ir * kb, bp + jr * kb, g, ir, jc + jr, min64(f->nr, nk - jr),
                                       pc == c0, out);
                }
            }
        }
}

void bkm__conv2d_fast_bwd_weights(bkm_conv2d_fast_t *f, const float *src, const float *diff_dst, float *diff_wei)
{
#pragma omp parallel num_threads(f->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const int64_t npan = (f->kdim + f->nr - 1) / f->nr, items = f->bww_parts * npan;
        const int64_t it0 = items * t / nth, it1 = items * (t + 1) / nth;
        float *bp = f->bp + (size_t)t * f->bp_floats, *ap = f->aux + (size_t)t * f->aux_floats;
        /* Items (part, K panel) in part-major order; a thread takes a contiguous range of them. */
        for (int64_t part = it0 / npan; part < f->bww_parts && part * npan < it1; part++) {
            const int64_t q0 = (it0 > part * npan ? it0 : part * npan) - part * npan;
            const int64_t q1 = min64(it1, (part + 1) * npan) - part * npan;
            float *out = part == 0 ? diff_wei : f->wpart + (size_t)(part - 1) * f->wei_floats;
            bwd_w_part(f, src, diff_dst, f->ncols * part / f->bww_parts, f->ncols * (part + 1) / f->bww_parts,
                       q0 * f->nr, min64(f->kdim, q1 * f->nr), bp, ap, out);
        }
        if (f->bww_parts > 1) {
            /* Fixed-order sum of the parts: the same bits for any thread count. */
#pragma omp barrier
#pragma omp for schedule(static)
            for (int64_t i = 0; i < (int64_t)f->wei_floats; i++) {
                float acc = diff_wei[i];
                for (int64_t p = 1; p < f->bww_parts; p++)
                    acc += f->wpart[(size_t)(p - 1) * f->wei_floats + (size_t)i];
                diff_wei[i] = acc;
            }
        }
    }
}

void bkm__conv2d_fast_name(const bkm_conv2d_fast_t *f, bkm_isa_t isa, char *buf, size_t size)
{
    snprintf(buf, size, "native:im2col_packed.%s_%dx%d%s", bkm_kern_isa_name(isa), (int)f->mr, (int)f->nr,
             f->s2d ? ".phase_split_fwd" : "");
}
