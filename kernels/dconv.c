/* SPDX-License-Identifier: MIT */
/* Direct convolution, NCDHW fp32 (a conv2d is the case kd = id = 1): no column matrix. The three
 * directions run one micro-kernel (dconv_<isa>.c): a register tile of R rows x 64 lanes (AVX-512;
 * 16 on AVX2), each row a base pointer into the input, c[i][l] += sum_j base_i[off[j]] * b[row[j]][l].
 *
 *   forward        rows = R output pixels, lanes = output channels, j = (input channel, tap):
 *                  the input is broadcast in place, b = the weights packed as [tap row][oc].
 *   backward-data  the same gather with the roles of the two tensors swapped: rows = input pixels,
 *                  lanes = input channels, j = (output channel, tap), the taps that reach the pixel
 *                  (any stride: the pixels of one phase share them); b = the weights as [oc tap][ic].
 *   backward-wts   rows = R (input channel, tap) entries, lanes = output channels, j = the output
 *                  pixels; b = a block of diff_dst transposed to [pixel][oc] by each thread.
 *
 * Padding without copies: along each axis the output coordinates fall into classes of identical
 * valid taps (forward: 3 classes for a 3-tap kernel with padding 1); a box of one class per axis
 * has one table of (offset, row) entries, so every tile is dense. Each output element is computed
 * by one thread in one order, so the bits do not depend on the thread count. Every buffer is
 * allocated at creation; the directions never allocate. */
#include "kernels_int.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#define DC_L2_DEFAULT (1u << 20)     /* L2 bytes assumed when the topology gave none */
#define DC_ENTRIES_MAX (1LL << 27)   /* entry tables of one object */
#define DC_GRP_DEFAULT 16            /* tiles per group (forward / backward-data) */
#define DC_PARTS_MAX_ENTRIES 256     /* backward-weights in fixed parts below this many entries a lane block */
#define DC_PARTS 4                   /* ... so many parts (at most the image x pixel blocks) */
#define DC_PX_MAX_K 64               /* forward with pixels in the lanes up to this many entries (AVX-512) */

/* One axis of a gather: the coordinates u of its output grouped into classes of equal taps. */
typedef struct dc_axis {
    int32_t ncls;
    int32_t plo, phi;           /* zeros before and after the gather's input along this axis (a padded copy) */
    int32_t *nu, *u0, *nt, *t0; /* per class: number of u, first in u[], number of taps, first in tk[] */
    int32_t *u, *ub;            /* u grouped by class (increasing), the input coordinate of its tap 0 delta */
    int32_t *tk, *td;           /* taps per class: kernel offset k and input delta (input = ub + td) */
} dc_axis_t;

typedef struct dc_box {
    int32_t cls[3];
    int64_t npix, ntap, ent0, minoff; /* pixels, taps per channel, first entry, offset of the first tap */
} dc_box_t;

typedef struct dc_grp {
    int32_t box;
    int32_t dn, nn, nq; /* images [dn, dn + nn) of a chunk, pixels [q0, q0 + nq) of the box in each */
    int64_t q0;         /* (z, y, x) order */
} dc_grp_t;

/* A gather direction (forward or backward-data). */
typedef struct dc_gat {
    int64_t cin, lanes, nlb, T;           /* reduction channels, lanes, lane blocks, taps */
    int64_t in[3], out[3], in_vol, out_vol;
    dc_axis_t ax[3];
    int64_t nbox, ngrp, gp, kc;           /* boxes, groups of a chunk, pixels per group, channels per block */
    int64_t ch;                           /* images per chunk: a small box's pixels of several images share tiles */
    dc_box_t *box;
    dc_grp_t *grp;
    int32_t *eoff, *erow;                 /* entries, box by box, channel-major */
    float *wp;                            /* weights packed per lane block: [lb][cin * T][LB] */
    int64_t src[3];                       /* the input's own sizes (in[]: those of its padded copy) */
    float *xpad;                          /* NULL, or the zero-padded copy of the input (mb x cin x in_vol) */
} dc_gat_t;

/* Backward-weights: taps grouped by class box (equal valid output ranges along every axis). */
typedef struct dc_wcb {
    int64_t lo[3], hi[3];   /* valid output coordinates per axis */
    int64_t ntap, t0;       /* taps of the box: tap[t0 .. t0 + ntap) */
    int64_t npix, minpix;   /* pixels of the box, input offset of its first pixel */
} dc_wcb_t;

typedef struct dc_wtile {
    int32_t lb, cb, ne; /* lane block, class box, entries (<= R) */
} dc_wtile_t;

typedef struct dc_wgt {
    int64_t ncb, ntile, pb, nblk, T, cin, lanes, nlb;
    int64_t nparts; /* 1: threads split the tiles; else fixed parts of the (image, block) sequence, summed in order */
    dc_wcb_t *cb;
    int32_t *tap;    /* tap indices (kz * kh + ky) * kw + kx grouped by class box */
    dc_wtile_t *tile;
    int64_t *toff;   /* per tile, BKM_DCONV_R_MAX entry base offsets into the input image */
    int32_t *tcol;   /* ... and their columns of diff_wei (c * T + tap) */
    int64_t *cost0;  /* prefix cost of the tiles (ntile + 1) */
    float *stage;    /* per part and tile, BKM_DCONV_R_MAX x LB accumulators */
    double *bsum;    /* per part, the diff_bias sums of every lane block (nlb x LB) */
} dc_wgt_t;

struct bkm_dconv {
    bkm_conv3d_desc_t d;
    int nt;
    int32_t lb;                           /* lanes per row of b and c */
    const bkm_dconv_ukr_desc_t *ukr_set;  /* index v - 1 */
    int32_t r_main;                       /* rows of the full-lane tile */
    const bkm_dconv_ukr_desc_t *main;
    const bkm_dconv_ukr_desc_t *tail;     /* full-lane tiles of r rows: [r - 1] */
    dc_gat_t g[2];                        /* [0] forward, [1] backward-data */
    int has[3];
    dc_wgt_t w;
    int px;                               /* forward with pixels in the lanes (bkm__dconv_px_fwd_avx512) */
    bkm_dconv_px_t pxg;
    int32_t *px_koff, *px_run0, *px_runs;
    float *px_w;                          /* its weights in blocks of 8 channels */
    size_t scratch_floats;                /* per thread */
    float *scratch;
    int64_t *pix;                         /* per thread: 5 x (group pixels + R): offsets in, out, runs */
    int32_t *ptab;                        /* per thread: 2 x pixel block (backward-weights tables) */
    char name[64];
};

/* ---------------------------------------------------------------------------------------- */
/* Axis classes                                                                                */

/* Taps of output coordinate u along one axis (k kernel, s stride, p padding) whose gather input
 * coordinate lies in [lo, hi); fwd: input = u * s - p + k; bwd (u an input coordinate): the output
 * coordinates (u + p - k) / s. Returns the count; *base: the input coordinate of delta 0. */
static int axis_taps(int64_t u, int64_t k, int64_t s, int64_t p, int64_t lo, int64_t hi, int bwd, int32_t *tk,
                     int32_t *td, int64_t *base)
{
    int n = 0;
    if (!bwd) {
        *base = u * s - p;
        for (int64_t j = 0; j < k; j++)
            if (*base + j >= lo && *base + j < hi)
                tk[n] = (int32_t)j, td[n++] = (int32_t)j;
        return n;
    }
    const int64_t ph = (u + p) % s;
    *base = (u + p - ph) / s;
    for (int64_t j = ph; j < k; j += s) {
        const int64_t o = (u + p - j) / s; /* exact: u + p - j is a multiple of s */
        if (o >= lo && o < hi)
            tk[n] = (int32_t)j, td[n++] = (int32_t)(-(j - ph) / s);
    }
    return n;
}

static void axis_free(dc_axis_t *a)
{
    bkm_free(a->nu), bkm_free(a->u0), bkm_free(a->nt), bkm_free(a->t0);
    bkm_free(a->u), bkm_free(a->ub), bkm_free(a->tk), bkm_free(a->td);
    memset(a, 0, sizeof *a);
}

/* Classes of axis @p a: n_u output coordinates, k taps, stride s, padding p over a gather input of n
 * coordinates; @p padded: over a copy of that input with every tap's zeros around it (plo, phi), so
 * that all taps are valid (one class for a unit stride). */
static int axis_build(dc_axis_t *a, int64_t n_u, int64_t k, int64_t s, int64_t p, int64_t n, int bwd, int padded)
{
    int32_t tk[BKM_DCONV_TAPS_MAX], td[BKM_DCONV_TAPS_MAX];
    int32_t *cid = bkm_calloc((size_t)n_u, sizeof(int32_t));
    int64_t base, lo = 0, hi = n;
    int rc = BKM_ENOMEM;
    memset(a, 0, sizeof *a);
    for (int64_t u = 0; padded && u < n_u; u++) { /* the extent of every tap */
        const int nt = axis_taps(u, k, s, p, INT32_MIN, INT32_MAX, bwd, tk, td, &base);
        for (int i = 0; i < nt; i++)
            lo = base + td[i] < lo ? base + td[i] : lo, hi = base + td[i] + 1 > hi ? base + td[i] + 1 : hi;
    }
    a->plo = (int32_t)-lo, a->phi = (int32_t)(hi - n);
    a->nu = bkm_calloc((size_t)n_u, sizeof(int32_t)), a->u0 = bkm_calloc((size_t)n_u, sizeof(int32_t));
    a->nt = bkm_calloc((size_t)n_u, sizeof(int32_t)), a->t0 = bkm_calloc((size_t)n_u, sizeof(int32_t));
    a->u = bkm_calloc((size_t)n_u, sizeof(int32_t)), a->ub = bkm_calloc((size_t)n_u, sizeof(int32_t));
    a->tk = bkm_calloc((size_t)(n_u * k), sizeof(int32_t)), a->td = bkm_calloc((size_t)(n_u * k), sizeof(int32_t));
    if (!cid || !a->nu || !a->u0 || !a->nt || !a->t0 || !a->u || !a->ub || !a->tk || !a->td)
        goto out;
    for (int64_t u = 0, ntk = 0; u < n_u; u++) { /* class of each u: the first with the same taps */
        const int nt = axis_taps(u, k, s, p, lo, hi, bwd, tk, td, &base);
        int32_t c = 0;
        for (; c < a->ncls; c++)
            if (a->nt[c] == nt && !memcmp(a->tk + a->t0[c], tk, (size_t)nt * sizeof(int32_t)) &&
                !memcmp(a->td + a->t0[c], td, (size_t)nt * sizeof(int32_t)))
                break;
        if (c == a->ncls) {
            a->nt[c] = nt, a->t0[c] = (int32_t)ntk;
            memcpy(a->tk + ntk, tk, (size_t)nt * sizeof(int32_t));
            memcpy(a->td + ntk, td, (size_t)nt * sizeof(int32_t));
            ntk += nt;
            a->ncls++;
        }
        cid[u] = c;
        a->nu[c]++;
    }
    for (int32_t c = 1; c < a->ncls; c++)
        a->u0[c] = a->u0[c - 1] + a->nu[c - 1];
    memset(a->nu, 0, (size_t)a->ncls * sizeof(int32_t));
    for (int64_t u = 0; u < n_u; u++) {
        const int32_t c = cid[u], i = a->u0[c] + a->nu[c]++;
        axis_taps(u, k, s, p, lo, hi, bwd, tk, td, &base);
        a->u[i] = (int32_t)u, a->ub[i] = (int32_t)(base + a->plo); /* a coordinate of the (padded) input */
    }
    rc = BKM_OK;
out:
    bkm_free(cid);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Gather directions: boxes, entries, groups                                                    */

/* Index of @p u in class @p c's list of axis @p a, or -1. */
static int32_t uz_index(const dc_axis_t *a, int32_t c, int64_t u)
{
    for (int32_t i = 0; i < a->nu[c]; i++)
        if (a->u[a->u0[c] + i] == u)
            return i;
    return -1;
}

static void gat_free(dc_gat_t *g)
{
    for (int i = 0; i < 3; i++)
        axis_free(&g->ax[i]);
    bkm_free(g->box), bkm_free(g->grp), bkm_free(g->eoff), bkm_free(g->erow), bkm_free(g->wp), bkm_free(g->xpad);
    memset(g, 0, sizeof *g);
}

/* Entries of box b: for each reduction channel c, the taps of the box's classes in (z, y, x) order. */
static void gat_entries(dc_gat_t *g, const bkm_conv3d_desc_t *d, dc_box_t *b, int64_t e)
{
    const dc_axis_t *az = &g->ax[0], *ay = &g->ax[1], *ax = &g->ax[2];
    const int32_t cz = b->cls[0], cy = b->cls[1], cx = b->cls[2];
    int64_t minoff = INT64_MAX;
    b->ent0 = e;
    for (int32_t i = 0; i < az->nt[cz]; i++)
        for (int32_t j = 0; j < ay->nt[cy]; j++)
            for (int32_t l = 0; l < ax->nt[cx]; l++) {
                const int64_t o = ((int64_t)az->td[az->t0[cz] + i] * g->in[1] + ay->td[ay->t0[cy] + j]) * g->in[2] +
                                  ax->td[ax->t0[cx] + l];
                minoff = o < minoff ? o : minoff;
            }
    b->minoff = b->ntap ? minoff : 0;
    for (int64_t c = 0; c < g->cin; c++)
        for (int32_t i = 0; i < az->nt[cz]; i++)
            for (int32_t j = 0; j < ay->nt[cy]; j++)
                for (int32_t l = 0; l < ax->nt[cx]; l++, e++) {
                    const int32_t kz = az->tk[az->t0[cz] + i], ky = ay->tk[ay->t0[cy] + j], kx = ax->tk[ax->t0[cx] + l];
                    const int64_t o = ((int64_t)az->td[az->t0[cz] + i] * g->in[1] + ay->td[ay->t0[cy] + j]) *
                                          g->in[2] + ax->td[ax->t0[cx] + l];
                    g->eoff[e] = (int32_t)(c * g->in_vol + o - b->minoff);
                    g->erow[e] = (int32_t)(c * g->T + ((int64_t)kz * d->kh + ky) * d->kw + kx);
                }
}

/* Groups of a chunk of g->ch images, at most @p gp pixels each (as equal as possible), plane by plane
 * of the output's first axis and, within a plane, box by box: every box of a plane reads the same few
 * input planes, which stay in cache (box by box over the whole volume, a thin box along a border would
 * stream the input for one element per line). A box plane of fewer than gp / 2 pixels (a corner, a
 * border row of a small image) takes the same pixels of several images in one group, so that its
 * tiles are full. Fills g->grp when not NULL; returns the count. */
static int64_t gat_groups(dc_gat_t *g, int64_t gp)
{
    const dc_axis_t *az = &g->ax[0];
    int64_t n = 0;
    for (int64_t dn = 0; dn < g->ch; dn++) /* image by image: one image's input with one lane block's weights */
        for (int64_t uz = 0; uz < g->out[0]; uz++) {
            int32_t cz = 0, iz = 0;
            while (cz < az->ncls && (iz = uz_index(az, cz, uz)) < 0)
                cz++;
            for (int32_t cy = 0; cy < g->ax[1].ncls; cy++)
                for (int32_t cx = 0; cx < g->ax[2].ncls; cx++) {
                    const int32_t bi = (int32_t)(((int64_t)cz * g->ax[1].ncls + cy) * g->ax[2].ncls + cx);
                    const int64_t nyx = (int64_t)g->ax[1].nu[cy] * g->ax[2].nu[cx], ng = (nyx + gp - 1) / gp;
                    const int64_t ipg = 2 * nyx < gp ? gp / nyx : 1; /* images per group */
                    if (dn % ipg)
                        continue; /* in the group of image dn - dn % ipg */
                    for (int64_t j = 0; j < (ipg > 1 ? 1 : ng); j++, n++) /* equal groups: no thin last one */
                        if (g->grp)
                            g->grp[n] = (dc_grp_t){bi, (int32_t)dn, (int32_t)(g->ch - dn < ipg ? g->ch - dn : ipg),
                                                   (int32_t)(nyx * (j + 1) / ng - nyx * j / ng),
                                                   iz * nyx + nyx * j / ng};
                }
        }
    g->gp = gp;
    return n;
}

/* Boxes, entry tables and groups of a gather whose axes are built. */
static int gat_layout(dc_gat_t *g, const bkm_conv3d_desc_t *d, int64_t gp, bkm_err_t *err)
{
    int64_t nent = 0, ng = 0, e = 0;
    g->nbox = (int64_t)g->ax[0].ncls * g->ax[1].ncls * g->ax[2].ncls;
    if (!(g->box = bkm_calloc((size_t)g->nbox, sizeof(dc_box_t))))
        return bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate %lld boxes", (long long)g->nbox);
    for (int64_t i = 0; i < g->nbox; i++) {
        dc_box_t *b = &g->box[i];
        b->cls[0] = (int32_t)(i / (g->ax[1].ncls * g->ax[2].ncls));
        b->cls[1] = (int32_t)((i / g->ax[2].ncls) % g->ax[1].ncls);
        b->cls[2] = (int32_t)(i % g->ax[2].ncls);
        b->npix = (int64_t)g->ax[0].nu[b->cls[0]] * g->ax[1].nu[b->cls[1]] * g->ax[2].nu[b->cls[2]];
        b->ntap = (int64_t)g->ax[0].nt[b->cls[0]] * g->ax[1].nt[b->cls[1]] * g->ax[2].nt[b->cls[2]];
        nent += g->cin * b->ntap;
    }
    ng = gat_groups(g, gp);
    if (nent > DC_ENTRIES_MAX)
        return bkm_err_set(err, BKM_ENOTSUP, "dconv: %lld tap entries exceed %lld", (long long)nent,
                           (long long)DC_ENTRIES_MAX);
    g->eoff = bkm_calloc((size_t)(nent ? nent : 1), sizeof(int32_t));
    g->erow = bkm_calloc((size_t)(nent ? nent : 1), sizeof(int32_t));
    g->grp = bkm_calloc((size_t)(ng ? ng : 1), sizeof(dc_grp_t));
    if (!g->eoff || !g->erow || !g->grp)
        return bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate %lld tap entries", (long long)nent);
    for (int64_t i = 0; i < g->nbox; i++) {
        gat_entries(g, d, &g->box[i], e);
        e += g->cin * g->box[i].ntap;
    }
    g->ngrp = gat_groups(g, gp);
    return BKM_OK;
}

/* Forward (bwd = 0) or backward-data (bwd = 1) gather of @p d; @p padded 1: over a copy of its input
 * zero-padded along x (every tap valid along its lines: no boxes of a column or two), 0: classes of
 * valid taps on every axis, -1 auto: the copy when one image of the input exceeds L2 (the tiles of a
 * border column then stream the input from beyond L2 for one element of each line). */
static int gat_create(bkm_dconv_t *dc, dc_gat_t *g, int bwd, int padded, int64_t kc, int64_t gp, size_t l2,
                      bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    const int64_t ks[3] = {d->kd, d->kh, d->kw}, ss[3] = {d->sd, d->sh, d->sw}, ps[3] = {d->pd, d->ph, d->pw};
    const int64_t xi[3] = {d->id, d->ih, d->iw}, xo[3] = {d->od, d->oh, d->ow};
    int rc;
    g->cin = bwd ? d->oc : d->ic;
    g->lanes = bwd ? d->ic : d->oc;
    g->nlb = (g->lanes + dc->lb - 1) / dc->lb;
    g->T = d->kd * d->kh * d->kw;
    if (padded < 0)
        padded = (double)g->cin * (double)(bwd ? xo[0] * xo[1] * xo[2] : xi[0] * xi[1] * xi[2]) * sizeof(float) >
                 (double)l2;
    for (int i = 0; i < 3; i++) {
        g->src[i] = bwd ? xo[i] : xi[i];
        g->out[i] = bwd ? xi[i] : xo[i];
        if ((rc = axis_build(&g->ax[i], g->out[i], ks[i], ss[i], ps[i], g->src[i], bwd, padded && i == 2)) < 0)
            return bkm_err_set(err, rc, "dconv: cannot allocate the axis classes");
        g->in[i] = g->src[i] + g->ax[i].plo + g->ax[i].phi;
    }
    g->in_vol = g->in[0] * g->in[1] * g->in[2];
    g->out_vol = g->out[0] * g->out[1] * g->out[2];
    if ((double)g->cin * (double)g->in_vol >= 2147483647.0 || (double)g->cin * (double)g->T >= 2147483647.0)
        return bkm_err_set(err, BKM_ENOTSUP, "dconv: an image of %lld x %lld floats exceeds 32-bit offsets",
                           (long long)g->cin, (long long)g->in_vol);
    g->ch = d->mb < dc->main->r ? d->mb : dc->main->r;
    if ((rc = gat_layout(g, d, gp, err)) < 0)
        return rc;
    for (int i = 0; i < 3; i++)
        padded = padded == 1 && (g->ax[i].plo > 0 || g->ax[i].phi > 0) ? 2 : padded;
    if (padded == 2) { /* some tap reads padding: the zeros are written once, each call copies the interior */
        const size_t n = (size_t)(d->mb * g->cin * g->in_vol);
        if (!(g->xpad = bkm_aligned_alloc(64, n * sizeof(float))))
            return bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate a padded copy of %zu floats", n);
#pragma omp parallel for schedule(static) num_threads(dc->nt)
        for (int64_t i = 0; i < d->mb * g->cin; i++)
            memset(g->xpad + i * g->in_vol, 0, (size_t)g->in_vol * sizeof(float));
    }
    if (kc <= 0) { /* auto: the weights of one lane block in half of L2, in equal channel blocks */
        const double wbytes = (double)g->cin * (double)g->T * (double)dc->lb * sizeof(float);
        const int64_t nblk = (int64_t)(wbytes / ((double)l2 / 2.0)) + 1;
        kc = (g->cin + nblk - 1) / nblk;
    }
    g->kc = kc < g->cin ? kc : g->cin;
    if (!(g->wp = bkm_aligned_alloc(64, (size_t)(g->nlb * g->cin * g->T * dc->lb) * sizeof(float))))
        return bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate the packed weights");
    memset(g->wp, 0, (size_t)(g->nlb * g->cin * g->T * dc->lb) * sizeof(float));
    return BKM_OK;
}

/* The micro-kernel of lane block @p lb of @p lanes lanes: the main tile for a full block, else the
 * one with the fewest vectors that covers the rest. */
static const bkm_dconv_ukr_desc_t *ukr_for(const bkm_dconv_t *dc, int64_t lanes, int64_t lb)
{
    const int64_t rest = lanes - lb * dc->lb, vl = dc->lb / dc->main->v;
    if (rest >= dc->lb)
        return dc->main;
    return &dc->ukr_set[(rest + vl - 1) / vl - 1];
}

/* The same for a tile of @p rows rows: a full lane block takes the tail tile of exactly that many. */
static const bkm_dconv_ukr_desc_t *ukr_rows(const bkm_dconv_t *dc, int64_t lanes, int64_t lb, int64_t rows)
{
    const bkm_dconv_ukr_desc_t *u = ukr_for(dc, lanes, lb);
    return u == dc->main && rows < u->r ? &dc->tail[rows - 1] : u;
}

/* ---------------------------------------------------------------------------------------- */
/* Backward-weights: tap class boxes and tiles                                                 */

static void wgt_free(dc_wgt_t *w)
{
    bkm_free(w->cb), bkm_free(w->tap), bkm_free(w->tile), bkm_free(w->toff), bkm_free(w->tcol);
    bkm_free(w->cost0), bkm_free(w->stage), bkm_free(w->bsum);
    memset(w, 0, sizeof *w);
}

/* Tap class boxes of @p d: taps with the same valid output range along each axis, in tap order. */
static int wgt_classes(dc_wgt_t *w, const bkm_conv3d_desc_t *d)
{
    const int64_t ks[3] = {d->kd, d->kh, d->kw}, ss[3] = {d->sd, d->sh, d->sw}, ps[3] = {d->pd, d->ph, d->pw};
    const int64_t xi[3] = {d->id, d->ih, d->iw}, xo[3] = {d->od, d->oh, d->ow};
    int32_t *cid = bkm_calloc((size_t)w->T, sizeof(int32_t));
    if (!cid || !(w->cb = bkm_calloc((size_t)w->T, sizeof(dc_wcb_t))) ||
        !(w->tap = bkm_calloc((size_t)w->T, sizeof(int32_t)))) {
        bkm_free(cid);
        return BKM_ENOMEM;
    }
    w->ncb = 0;
    for (int64_t t = 0; t < w->T; t++) {
        const int64_t k[3] = {t / (d->kh * d->kw), (t / d->kw) % d->kh, t % d->kw};
        int64_t lo[3], hi[3], c = 0;
        for (int i = 0; i < 3; i++) { /* outputs u with 0 <= u * s - p + k < input size */
            const int64_t a = ps[i] - k[i], b = xi[i] - 1 + ps[i] - k[i];
            lo[i] = a <= 0 ? 0 : (a + ss[i] - 1) / ss[i];
            hi[i] = b < 0 ? 0 : b / ss[i] + 1;
            hi[i] = hi[i] > xo[i] ? xo[i] : hi[i];
            hi[i] = hi[i] < lo[i] ? lo[i] : hi[i];
        }
        (void)ks;
        for (; c < w->ncb; c++)
            if (!memcmp(w->cb[c].lo, lo, sizeof lo) && !memcmp(w->cb[c].hi, hi, sizeof hi))
                break;
        if (c == w->ncb) {
            memcpy(w->cb[c].lo, lo, sizeof lo), memcpy(w->cb[c].hi, hi, sizeof hi);
            w->cb[c].npix = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
            w->cb[c].minpix = ((lo[0] * ss[0] - ps[0]) * d->ih + (lo[1] * ss[1] - ps[1])) * d->iw + lo[2] * ss[2] - ps[2];
            w->ncb++;
        }
        cid[t] = (int32_t)c;
        w->cb[c].ntap++;
    }
    for (int64_t c = 1; c < w->ncb; c++)
        w->cb[c].t0 = w->cb[c - 1].t0 + w->cb[c - 1].ntap;
    for (int64_t c = 0; c < w->ncb; c++)
        w->cb[c].ntap = 0;
    for (int64_t t = 0; t < w->T; t++) {
        dc_wcb_t *cb = &w->cb[cid[t]];
        w->tap[cb->t0 + cb->ntap++] = (int32_t)t;
    }
    bkm_free(cid);
    return BKM_OK;
}

/* Tiles of R entries (input channel, tap) per lane block and class box, their input offsets and
 * diff_wei columns, and the prefix of their cost (entries x pixels). */
static int wgt_tiles(bkm_dconv_t *dc, dc_wgt_t *w)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    int64_t n = 0;
    for (int64_t lb = 0; lb < w->nlb; lb++)
        for (int64_t c = 0; c < w->ncb; c++)
            n += (w->cin * w->cb[c].ntap + ukr_for(dc, w->lanes, lb)->r - 1) / ukr_for(dc, w->lanes, lb)->r;
    w->ntile = n;
    w->tile = bkm_calloc((size_t)(n ? n : 1), sizeof(dc_wtile_t));
    w->toff = bkm_calloc((size_t)(n ? n : 1) * BKM_DCONV_R_MAX, sizeof(int64_t));
    w->tcol = bkm_calloc((size_t)(n ? n : 1) * BKM_DCONV_R_MAX, sizeof(int32_t));
    w->cost0 = bkm_calloc((size_t)n + 1, sizeof(int64_t));
    w->stage = bkm_aligned_alloc(64, (size_t)w->nparts * (size_t)(n ? n : 1) * BKM_DCONV_R_MAX * (size_t)dc->lb *
                                         sizeof(float));
    if (!w->tile || !w->toff || !w->tcol || !w->cost0 || !w->stage)
        return BKM_ENOMEM;
    n = 0;
    for (int64_t lb = 0; lb < w->nlb; lb++)
        for (int64_t c = 0; c < w->ncb; c++) {
            const dc_wcb_t *cb = &w->cb[c];
            const int64_t ne = w->cin * cb->ntap, R = ukr_for(dc, w->lanes, lb)->r, nti = (ne + R - 1) / R;
            for (int64_t ti = 0; ti < nti; ti++, n++) { /* tiles as equal as possible */
                const int64_t e0 = ne * ti / nti;
                w->tile[n] = (dc_wtile_t){(int32_t)lb, (int32_t)c, (int32_t)(ne * (ti + 1) / nti - e0)};
                for (int64_t i = 0; i < BKM_DCONV_R_MAX; i++) {
                    const int64_t e = e0 + (i < w->tile[n].ne ? i : w->tile[n].ne - 1);
                    const int64_t ch = e / cb->ntap, t = w->tap[cb->t0 + e % cb->ntap];
                    const int64_t kz = t / (d->kh * d->kw), ky = (t / d->kw) % d->kh, kx = t % d->kw;
                    w->toff[n * BKM_DCONV_R_MAX + i] =
                        ch * d->id * d->ih * d->iw + (cb->npix ? (kz * d->ih + ky) * d->iw + kx + cb->minpix : 0);
                    w->tcol[n * BKM_DCONV_R_MAX + i] = (int32_t)(ch * w->T + t);
                }
                w->cost0[n + 1] = w->cost0[n] + R * cb->npix + 64;
            }
        }
    memset(w->stage, 0, (size_t)w->nparts * (size_t)(n ? n : 1) * BKM_DCONV_R_MAX * (size_t)dc->lb * sizeof(float));
    return BKM_OK;
}

static int wgt_create(bkm_dconv_t *dc, int64_t pb, size_t l2, bkm_err_t *err)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    dc_wgt_t *w = &dc->w;
    const int64_t P = d->od * d->oh * d->ow;
    w->T = d->kd * d->kh * d->kw, w->cin = d->ic, w->lanes = d->oc;
    w->nlb = (w->lanes + dc->lb - 1) / dc->lb;
    if ((double)d->ic * (double)(d->id * d->ih * d->iw) >= 2147483647.0 || (double)d->ic * (double)w->T >= 2147483647.0)
        return bkm_err_set(err, BKM_ENOTSUP, "dconv: an image of %lld channels exceeds 32-bit offsets",
                           (long long)d->ic);
    if (pb <= 0) { /* auto: the transposed diff_dst block of every lane block in a quarter of L2 */
        pb = (int64_t)(l2 / 4 / ((size_t)(w->nlb * dc->lb) * sizeof(float)));
        pb = pb < 64 ? 64 : pb > 4096 ? 4096 : pb / 16 * 16;
    }
    w->pb = pb < P ? pb : P;
    w->nblk = (P + w->pb - 1) / w->pb;
    /* few entries: each thread transposing every diff_dst block would cost as much as the tiles */
    w->nparts = w->cin * w->T < DC_PARTS_MAX_ENTRIES ? DC_PARTS : 1;
    w->nparts = w->nparts < d->mb * w->nblk ? w->nparts : d->mb * w->nblk;
    w->bsum = bkm_calloc((size_t)(w->nparts * w->nlb * dc->lb), sizeof(double));
    if (!w->bsum || wgt_classes(w, d) < 0 || wgt_tiles(dc, w) < 0)
        return bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate the backward-weights tiles");
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Forward with pixels in the lanes                                                            */

/* Its geometry: the entries' input offsets and, per vector of 16 virtual pixels, the runs of real
 * ones (a row of the output ends a run; the iw - ow columns past it are not stored). */
static int px_create(bkm_dconv_t *dc)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    const int64_t T = d->kd * d->kh * d->kw, K = d->ic * T, V = d->oh * d->iw - (d->iw - d->ow), nvec = (V + 15) / 16;
    int64_t nr = 0;
    dc->px_koff = bkm_calloc((size_t)K, sizeof(int32_t));
    dc->px_run0 = bkm_calloc((size_t)nvec + 1, sizeof(int32_t));
    dc->px_runs = bkm_calloc((size_t)(3 * V), sizeof(int32_t));
    dc->px_w = bkm_aligned_alloc(64, (size_t)((d->oc + 7) / 8 * 8 * K) * sizeof(float));
    if (!dc->px_koff || !dc->px_run0 || !dc->px_runs || !dc->px_w)
        return BKM_ENOMEM;
    for (int64_t k = 0; k < K; k++) {
        const int64_t c = k / T, t = k % T / (d->kh * d->kw), r = k % (d->kh * d->kw) / d->kw, x = k % d->kw;
        dc->px_koff[k] = (int32_t)(c * d->id * d->ih * d->iw + (t * d->ih + r) * d->iw + x);
    }
    for (int64_t i = 0; i < nvec; i++) {
        dc->px_run0[i] = (int32_t)nr;
        for (int64_t l = 0; l < 16; l++) {
            const int64_t v = 16 * i + l;
            if (v >= V || v % d->iw >= d->ow)
                continue;
            if (l == 0 || v % d->iw == 0 || (v - 1) % d->iw >= d->ow) /* a new run */
                dc->px_runs[3 * nr] = (int32_t)l, dc->px_runs[3 * nr + 1] = 0,
                dc->px_runs[3 * nr + 2] = (int32_t)(v / d->iw * d->ow + v % d->iw), nr++;
            dc->px_runs[3 * nr - 2]++;
        }
    }
    dc->px_run0[nvec] = (int32_t)nr;
    dc->pxg = (bkm_dconv_px_t){V, K, d->oc, dc->px_koff, dc->px_run0, dc->px_runs};
    return BKM_OK;
}

/* The weights in blocks of 8 channels (as [k][8]), then the planes (image, output depth) split over
 * the team. */
static void px_fwd(bkm_dconv_t *dc, const float *src, const float *wei, const float *bias, int act, float *dst)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    const int64_t in_img = d->ic * d->id * d->ih * d->iw, out_vol = d->od * d->oh * d->ow, K = dc->pxg.k;
    float *wp = dc->px_w;
#pragma omp parallel num_threads(dc->nt)
    {
#pragma omp for schedule(static)
        for (int64_t o = 0; o < (d->oc + 7) / 8 * 8; o++)
            for (int64_t k = 0; k < K; k++)
                wp[(o / 8 * 8) * K + k * 8 + o % 8] = wei[(o < d->oc ? o : d->oc - 1) * K + k];
#pragma omp for schedule(static)
        for (int64_t it = 0; it < d->mb * d->od; it++) {
            const int64_t n = it / d->od, z = it % d->od;
            bkm__dconv_px_fwd_avx512(&dc->pxg, src + n * in_img + z * d->ih * d->iw, wp, bias, act,
                                     dst + n * d->oc * out_vol + z * d->oh * d->ow, out_vol);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The directions                                                                              */

/* Weights into lane blocks (inside the caller's team): forward wp[lb][c * T + t][l] = W[lb * LB + l][c][t];
 * backward-data wp[lb][o * T + t][l] = W[o][lb * LB + l][t]. Lanes past the last stay zero. Both
 * are transposes: of W's rows of a lane block (forward, in chunks of 256 columns), of one output
 * channel's lane block (backward-data). */
static void gat_pack(const bkm_dconv_t *dc, const dc_gat_t *g, int bwd, const float *wei)
{
    const int64_t LBn = dc->lb, rows = g->cin * g->T, T = g->T, nch = bwd ? g->cin : (rows + 255) / 256;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < g->nlb * nch; i++) {
        const int64_t lb = i / nch, ch = i % nch, nl = g->lanes - lb * LBn < LBn ? g->lanes - lb * LBn : LBn;
        const int64_t r0 = bwd ? ch * T : ch * 256, nr = bwd ? T : (rows - r0 < 256 ? rows - r0 : 256);
        const float *s = bwd ? wei + (ch * g->lanes + lb * LBn) * T : wei + lb * LBn * rows + r0;
        const int64_t lds = bwd ? T : rows;
        float *o = g->wp + (lb * rows + r0) * LBn;
        if (LBn == 64) {
            bkm__dconv_tr_avx512(s, lds, nl, nr, o, LBn);
            continue;
        }
        for (int64_t r = 0; r < nr; r++)
            for (int64_t l = 0; l < nl; l++)
                o[r * LBn + l] = s[l * lds + r];
    }
}

/* Pixel offsets of group @p gr for the images from n0 (nn of them): the input offset of each pixel's
 * first tap (pb) and its output offset (po), both from the tensors' starts; pb is padded with the last
 * pixel up to a whole tile. Returns the pixels. */
static int64_t gat_pixels(const dc_gat_t *g, const dc_grp_t *gr, int64_t n0, int64_t nn, int R, int64_t *pb,
                          int64_t *po)
{
    const dc_box_t *b = &g->box[gr->box];
    const dc_axis_t *az = &g->ax[0], *ay = &g->ax[1], *ax = &g->ax[2];
    const int64_t nx = ax->nu[b->cls[2]], nyx = (int64_t)ay->nu[b->cls[1]] * nx, np = nn * gr->nq;
    const int32_t *uz = az->u + az->u0[b->cls[0]], *uy = ay->u + ay->u0[b->cls[1]], *ux = ax->u + ax->u0[b->cls[2]];
    const int32_t *bz = az->ub + az->u0[b->cls[0]], *by = ay->ub + ay->u0[b->cls[1]], *bx = ax->ub + ax->u0[b->cls[2]];
    for (int64_t i = 0; i < np; i++) {
        const int64_t n = n0 + i / gr->nq, qq = gr->q0 + i % gr->nq, iz = qq / nyx, iy = (qq / nx) % (nyx / nx),
                      ix = qq % nx;
        pb[i] = b->ntap ? n * g->cin * g->in_vol + ((int64_t)bz[iz] * g->in[1] + by[iy]) * g->in[2] + bx[ix] +
                              b->minoff
                        : 0;
        po[i] = n * g->lanes * g->out_vol + ((int64_t)uz[iz] * g->out[1] + uy[iy]) * g->out[2] + ux[ix];
    }
    for (int64_t i = np; i < np + R; i++)
        pb[i] = pb[np - 1];
    return np;
}

/* One work item of a gather: chunk ci of images, group gi, lane block lb; stores into y (+ bias,
 * activation). */
static void gat_item(const bkm_dconv_t *dc, const dc_gat_t *g, int64_t ci, int64_t gi, int64_t lb, const float *x,
                     const float *bias, int act, float *y, float *stage, int64_t *pb, int64_t *po)
{
    const dc_grp_t *gr = &g->grp[gi];
    const dc_box_t *b = &g->box[gr->box];
    const bkm_dconv_ukr_desc_t *u = ukr_for(dc, g->lanes, lb);
    const int64_t LBn = dc->lb, R = u->r, nl = g->lanes - lb * LBn < LBn ? g->lanes - lb * LBn : LBn;
    const int64_t n0 = ci * g->ch + gr->dn, nn = dc->d.mb - n0 < gr->nn ? dc->d.mb - n0 : gr->nn;
    const float *wl = g->wp + lb * g->cin * g->T * LBn;
    float *yl = y + lb * LBn * g->out_vol;
    int64_t np, nti;
    if (nn <= 0)
        return;
    np = gat_pixels(g, gr, n0, nn, (int)R, pb, po);
    nti = (np + R - 1) / R;
    for (int64_t c0 = 0; c0 < g->cin; c0 += g->kc) {
        const int64_t c1 = c0 + g->kc < g->cin ? c0 + g->kc : g->cin;
        const int64_t e0 = b->ent0 + c0 * b->ntap, ne = (c1 - c0) * b->ntap;
        for (int64_t ti = 0; ti < nti; ti++) {
            /* tiles as equal as possible where tiles of any row count exist (a 1-row tile runs at half
             * speed); a partial lane block's tile always writes R rows, so its tiles are R apart */
            const int64_t q = u == dc->main ? np * ti / nti : ti * R;
            const int64_t nr = u == dc->main ? np * (ti + 1) / nti - q : (np - q < R ? np - q : R);
            const bkm_dconv_ukr_desc_t *uq = ukr_rows(dc, g->lanes, lb, nr);
            const float *base[BKM_DCONV_R_MAX];
            for (int64_t i = 0; i < uq->r; i++)
                base[i] = x + pb[q + (i < nr ? i : nr - 1)];
            uq->fn(ne, base, g->eoff + e0, g->erow + e0, wl, stage + q * LBn, c0 > 0);
        }
    }
    if (LBn == 64) { /* runs of consecutive output offsets: (first pixel, count, offset) */
        int64_t *runs = po + g->gp + BKM_DCONV_R_MAX, nr = 0;
        for (int64_t q = 0; q < np; q++) {
            if (q == 0 || po[q] != po[q - 1] + 1)
                runs[3 * nr] = q, runs[3 * nr + 1] = 0, runs[3 * nr + 2] = po[q], nr++;
            runs[3 * nr - 2]++;
        }
        bkm__dconv_store_avx512(stage, np, nl, runs, nr, yl, g->out_vol, bias ? bias + lb * LBn : NULL, act,
                                stage + (g->gp + BKM_DCONV_R_MAX) * LBn);
        return;
    }
    for (int64_t l = 0; l < nl; l++) {
        const float bv = bias ? bias[lb * LBn + l] : 0.0f;
        float *yo = yl + l * g->out_vol;
        for (int64_t q = 0; q < np; q++) {
            const float v = stage[q * LBn + l] + bv;
            yo[po[q]] = act == BKM_FAST_ACT_RELU ? (v > 0.0f ? v : 0.0f) : v;
        }
    }
}

/* The first work item at image-weighted position @p c of the (chunk, lane block, group) sequence: the
 * items of a full chunk weigh ch images each, those of a last, partial chunk its rem images. */
static int64_t gat_item_at(const dc_gat_t *g, int64_t mb, int64_t c)
{
    const int64_t per = g->ngrp * g->nlb, full = mb / g->ch * per, rem = mb % g->ch;
    if (c <= full * g->ch)
        return (c + g->ch - 1) / g->ch;
    return full + (c - full * g->ch + rem - 1) / rem;
}

/* The input's interior into the padded copy (inside the caller's team), line by line. */
static void gat_pad(const dc_gat_t *g, int64_t mb, const float *x)
{
    const int64_t nz = g->src[0], ny = g->src[1], nx = g->src[2], lines = mb * g->cin * nz * ny;
    const int64_t z0 = g->ax[0].plo, y0 = g->ax[1].plo, x0 = g->ax[2].plo;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < lines; i++) {
        const int64_t nc = i / (nz * ny), z = i / ny % nz, y = i % ny;
        memcpy(g->xpad + nc * g->in_vol + ((z + z0) * g->in[1] + y + y0) * g->in[2] + x0, x + i * nx,
               (size_t)nx * sizeof(float));
    }
}

static void gat_run(bkm_dconv_t *dc, int bwd, const float *x, const float *wei, const float *bias, int act, float *y)
{
    const dc_gat_t *g = &dc->g[bwd];
    const int64_t total = dc->d.mb * g->ngrp * g->nlb; /* images x groups x lane blocks */
    const float *xs = g->xpad ? g->xpad : x;
#pragma omp parallel num_threads(dc->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        float *stage = dc->scratch + (size_t)t * dc->scratch_floats;
        int64_t *pb = dc->pix + (size_t)t * 5 * (size_t)(g->gp + BKM_DCONV_R_MAX), *po = pb + g->gp + BKM_DCONV_R_MAX;
        /* (chunk, lane block, group), one lane block's weights at a time; equal images per thread (a
         * split by item count gave the thread with a short last chunk up to a chunk less) */
        const int64_t i0 = gat_item_at(g, dc->d.mb, total * t / nth), i1 = gat_item_at(g, dc->d.mb, total * (t + 1) / nth);
        if (g->xpad)
            gat_pad(g, dc->d.mb, x);
        gat_pack(dc, g, bwd, wei);
        for (int64_t it = i0; it < i1; it++)
            gat_item(dc, g, it / (g->nlb * g->ngrp), it % g->ngrp, (it / g->ngrp) % g->nlb, xs, bias, act, y, stage,
                     pb, po);
    }
}

void bkm__dconv_fwd(bkm_dconv_t *dc, const float *src, const float *wei, const float *bias, int act, float *dst)
{
    if (dc->px) {
        px_fwd(dc, src, wei, dc->d.has_bias ? bias : NULL, act, dst);
        return;
    }
    gat_run(dc, 0, src, wei, dc->d.has_bias ? bias : NULL, act, dst);
}

void bkm__dconv_bwd_data(bkm_dconv_t *dc, const float *diff_dst, const float *wei, float *diff_src)
{
    gat_run(dc, 1, diff_dst, wei, NULL, BKM_FAST_ACT_NONE, diff_src);
}

/* Pixel table of class box @p cb within the block [p0, p0 + np): input offsets from the box's first
 * pixel (off) and rows of the block (row). Returns the count. */
static int64_t wgt_table(const bkm_conv3d_desc_t *d, const dc_wcb_t *cb, int64_t p0, int64_t np, int32_t *off,
                         int32_t *row)
{
    int64_t n = 0, z = p0 / (d->oh * d->ow), y = (p0 / d->ow) % d->oh, x = p0 % d->ow;
    for (int64_t p = 0; p < np; p++) {
        if (z >= cb->lo[0] && z < cb->hi[0] && y >= cb->lo[1] && y < cb->hi[1] && x >= cb->lo[2] && x < cb->hi[2]) {
            off[n] = (int32_t)(((z * d->sd - d->pd) * d->ih + (y * d->sh - d->ph)) * d->iw + x * d->sw - d->pw -
                               cb->minpix);
            row[n++] = (int32_t)p;
        }
        if (++x == d->ow) {
            x = 0;
            if (++y == d->oh)
                y = 0, z++;
        }
    }
    return n;
}

/* diff_dst pixels [p0, p0 + np) of one image into dyt[lb][p][LB] (lanes past the last stay zero). */
static void wgt_transpose(const bkm_dconv_t *dc, const float *dy, int64_t p0, int64_t np, float *dyt)
{
    const dc_wgt_t *w = &dc->w;
    const int64_t P = dc->d.od * dc->d.oh * dc->d.ow, LBn = dc->lb;
    for (int64_t lb = 0; lb < w->nlb; lb++) {
        const int64_t nl = w->lanes - lb * LBn < LBn ? w->lanes - lb * LBn : LBn;
        const float *s = dy + lb * LBn * P + p0;
        float *o = dyt + lb * w->pb * LBn;
        if (dc->main->lb == 64)
            bkm__dconv_tr_avx512(s, P, nl, np, o, LBn);
        else
            for (int64_t l = 0; l < nl; l++)
                for (int64_t p = 0; p < np; p++)
                    o[p * LBn + l] = s[l * P + p];
        for (int64_t p = 0; nl < LBn && p < np; p++) /* the lanes past the last: zeros, not stale values */
            memset(o + p * LBn + nl, 0, (size_t)(LBn - nl) * sizeof(float));
    }
}

/* bsum[l] += the sum over the block's np pixels of dyt lane l, per lane block (the block in float, in
 * pixel order; across blocks in double). */
static void wgt_bias(const bkm_dconv_t *dc, const float *dyt, int64_t np, double *bsum)
{
    const dc_wgt_t *w = &dc->w;
    const int64_t LBn = dc->lb;
    float part[64];
    for (int64_t lb = 0; lb < w->nlb; lb++) {
        const float *t = dyt + lb * w->pb * LBn;
        if (LBn == 64) {
            bkm__dconv_colsum_avx512(t, np, part);
        } else {
            memset(part, 0, sizeof part);
            for (int64_t p = 0; p < np; p++)
                for (int64_t l = 0; l < LBn; l++)
                    part[l] += t[p * LBn + l];
        }
        for (int64_t l = 0; l < LBn; l++)
            bsum[lb * LBn + l] += part[l];
    }
}

/* Tiles [ta, tb) over the blocks [b0, b1) of the (image, pixel block) sequence into @p stage (from
 * zero at b0); with @p bsum, the diff_bias sums of the same blocks too (from zero). */
static void wgt_blocks(bkm_dconv_t *dc, const float *src, const float *dy, int64_t b0, int64_t b1, int64_t ta,
                       int64_t tb, float *stage, double *bsum, float *dyt, int32_t *off, int32_t *row)
{
    const bkm_conv3d_desc_t *d = &dc->d;
    dc_wgt_t *w = &dc->w;
    const int64_t P = d->od * d->oh * d->ow, LBn = dc->lb, in_img = d->ic * d->id * d->ih * d->iw;
    if (bsum)
        memset(bsum, 0, (size_t)(w->nlb * LBn) * sizeof(double));
    for (int64_t bi = b0; bi < b1 && (ta < tb || bsum); bi++) {
        const int64_t n = bi / w->nblk, p0 = bi % w->nblk * w->pb, np = P - p0 < w->pb ? P - p0 : w->pb;
        int64_t cur = -1, cnt = 0;
        wgt_transpose(dc, dy + n * d->oc * P, p0, np, dyt);
        if (bsum)
            wgt_bias(dc, dyt, np, bsum);
        for (int64_t i = ta; i < tb; i++) {
            const dc_wtile_t *t = &w->tile[i];
            const bkm_dconv_ukr_desc_t *u = ukr_rows(dc, w->lanes, t->lb, t->ne);
            const float *base[BKM_DCONV_R_MAX];
            if (t->cb != cur)
                cnt = wgt_table(d, &w->cb[t->cb], p0, np, off, row), cur = t->cb;
            for (int64_t r = 0; r < u->r; r++)
                base[r] = src + n * in_img + w->toff[i * BKM_DCONV_R_MAX + r];
            u->fn(cnt, base, off, row, dyt + t->lb * w->pb * LBn, stage + i * BKM_DCONV_R_MAX * LBn, bi > b0);
        }
    }
}

/* diff_wei columns of tiles [ta, tb): the sum of the parts' accumulators, in part order. */
static void wgt_store(const bkm_dconv_t *dc, int64_t ta, int64_t tb, float *dwei)
{
    const dc_wgt_t *w = &dc->w;
    const int64_t LBn = dc->lb, cols = w->cin * w->T, part = w->ntile * BKM_DCONV_R_MAX * LBn;
    for (int64_t i = ta; i < tb; i++) {
        const dc_wtile_t *t = &w->tile[i];
        const int64_t nl = w->lanes - t->lb * LBn < LBn ? w->lanes - t->lb * LBn : LBn;
        const float *st = w->stage + i * BKM_DCONV_R_MAX * LBn;
        for (int64_t l = 0; l < nl; l++)
            for (int64_t r = 0; r < t->ne; r++) {
                float v = st[r * LBn + l];
                for (int64_t p = 1; p < w->nparts; p++)
                    v += st[p * part + r * LBn + l];
                dwei[(t->lb * LBn + l) * cols + w->tcol[i * BKM_DCONV_R_MAX + r]] = v;
            }
    }
}

void bkm__dconv_bwd_weights(bkm_dconv_t *dc, const float *src, const float *diff_dst, float *diff_wei,
                            float *diff_bias)
{
    dc_wgt_t *w = &dc->w;
    const int64_t nb = dc->d.mb * w->nblk, nbl = w->nlb * dc->lb;
#pragma omp parallel num_threads(dc->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        float *dyt = dc->scratch + (size_t)t * dc->scratch_floats;
        int32_t *off = dc->ptab + (size_t)t * 2 * (size_t)(w->pb + 1), *row = off + w->pb + 1;
        if (w->nparts > 1) { /* fixed parts whatever the team, summed in part order */
#pragma omp for schedule(static)
            for (int64_t p = 0; p < w->nparts; p++)
                wgt_blocks(dc, src, diff_dst, nb * p / w->nparts, nb * (p + 1) / w->nparts, 0, w->ntile,
                           w->stage + p * w->ntile * BKM_DCONV_R_MAX * dc->lb, diff_bias ? w->bsum + p * nbl : NULL,
                           dyt, off, row);
#pragma omp for schedule(static)
            for (int64_t i = 0; i < w->ntile; i++)
                wgt_store(dc, i, i + 1, diff_wei);
        } else { /* each thread its tiles, by their cost, over every block; thread 0 the bias too */
            const int64_t total = w->cost0[w->ntile], lo = total * t / nth, hi = total * (t + 1) / nth;
            int64_t ta = 0, tb;
            while (ta < w->ntile && w->cost0[ta] < lo)
                ta++;
            for (tb = ta; tb < w->ntile && w->cost0[tb] < hi; tb++)
                ;
            wgt_blocks(dc, src, diff_dst, 0, nb, ta, tb, w->stage, diff_bias && t == 0 ? w->bsum : NULL, dyt, off,
                       row);
            wgt_store(dc, ta, tb, diff_wei);
        }
    }
    for (int64_t l = 0; diff_bias && l < dc->d.oc; l++) {
        double v = w->bsum[l];
        for (int64_t p = 1; p < w->nparts; p++)
            v += w->bsum[p * nbl + l];
        diff_bias[l] = (float)v;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Object                                                                                      */

void bkm__dconv_destroy(bkm_dconv_t *dc)
{
    if (!dc)
        return;
    gat_free(&dc->g[0]), gat_free(&dc->g[1]);
    wgt_free(&dc->w);
    bkm_free(dc->scratch), bkm_free(dc->pix), bkm_free(dc->ptab);
    bkm_free(dc->px_koff), bkm_free(dc->px_run0), bkm_free(dc->px_runs), bkm_free(dc->px_w);
    bkm_free(dc);
}

int bkm__dconv_create(bkm_dconv_t **out, const bkm_conv3d_desc_t *d, const bkm_dconv_cfg_t *cfg, int dirs, int nt,
                      bkm_err_t *err)
{
    bkm_dconv_t *dc;
    const size_t l2 = cfg->l2 ? cfg->l2 : DC_L2_DEFAULT;
    int64_t gp, pb_max = 0;
    int rc = BKM_OK, pad;
    *out = NULL;
    if (cfg->isa != BKM_ISA_AVX512 && cfg->isa != BKM_ISA_AVX2)
        return bkm_err_set(err, BKM_ENOTSUP, "dconv: no micro-kernel for isa=%s", bkm_kern_isa_name(cfg->isa));
    if (d->kd > BKM_DCONV_TAPS_MAX || d->kh > BKM_DCONV_TAPS_MAX || d->kw > BKM_DCONV_TAPS_MAX)
        return bkm_err_set(err, BKM_ENOTSUP, "dconv: a kernel wider than %d taps", BKM_DCONV_TAPS_MAX);
    if (!(dc = bkm_calloc(1, sizeof *dc)))
        return bkm_err_set(err, BKM_ENOMEM, "dconv: out of memory");
    dc->d = *d;
    dc->nt = nt > 0 ? nt : 1;
    dc->ukr_set = cfg->isa == BKM_ISA_AVX512 ? bkm__dconv_ukr_avx512 : bkm__dconv_ukr_avx2;
    dc->main = cfg->isa == BKM_ISA_AVX512 ? &dc->ukr_set[cfg->r7 ? 4 : 3] : &dc->ukr_set[1];
    dc->tail = cfg->isa == BKM_ISA_AVX512 ? bkm__dconv_tail_avx512 : bkm__dconv_tail_avx2;
    dc->lb = dc->main->lb;
    gp = (cfg->grp > 0 ? cfg->grp : DC_GRP_DEFAULT) * (int64_t)dc->main->r;
    pad = cfg->pad == BKM_DCONV_PAD_AUTO ? -1 : cfg->pad == BKM_DCONV_PAD_NONE ? 0
          : cfg->pad == BKM_DCONV_PAD_BWD_D ? 2 : 3; /* bit 0: the forward, bit 1: backward-data; -1 auto */
    /* the forward of a short reduction (a first layer) with unit strides, no padding: pixels in the lanes */
    dc->px = (dirs & BKM_DCONV_FWD) && cfg->isa == BKM_ISA_AVX512 && !cfg->no_px && d->ic * d->kd * d->kh * d->kw <= DC_PX_MAX_K &&
             d->sd == 1 && d->sh == 1 && d->sw == 1 && d->pd == 0 && d->ph == 0 && d->pw == 0;
    if (dc->px && px_create(dc) < 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate the forward's pixel runs");
        goto out;
    }
    for (int bwd = 0; bwd < 2; bwd++) {
        if (!(dirs & (bwd ? BKM_DCONV_BWD_D : BKM_DCONV_FWD)) || (!bwd && dc->px))
            continue;
        if ((rc = gat_create(dc, &dc->g[bwd], bwd, pad < 0 ? (bwd ? -1 : 0) : (pad >> bwd) & 1, cfg->kc, gp, l2, err)) < 0)
            goto out;
        dc->has[bwd] = 1;
    }
    if ((dirs & BKM_DCONV_BWD_W) && (rc = wgt_create(dc, cfg->pb, l2, err)) < 0)
        goto out;
    dc->has[2] = (dirs & BKM_DCONV_BWD_W) != 0;
    pb_max = dc->has[2] ? dc->w.pb : 0;
    /* a group's accumulators, then their lane-major transpose (64-byte aligned rows) */
    dc->scratch_floats = (size_t)(gp + BKM_DCONV_R_MAX) * (size_t)dc->lb + (size_t)dc->lb * (size_t)((gp + 15) / 16 * 16);
    if (dc->has[2] && (size_t)(dc->w.nlb * pb_max * dc->lb) > dc->scratch_floats)
        dc->scratch_floats = (size_t)(dc->w.nlb * pb_max * dc->lb);
    dc->scratch_floats = (dc->scratch_floats + 15) / 16 * 16;
    dc->scratch = bkm_aligned_alloc(64, (size_t)dc->nt * dc->scratch_floats * sizeof(float));
    dc->pix = bkm_calloc((size_t)dc->nt * 5 * (size_t)(gp + BKM_DCONV_R_MAX), sizeof(int64_t));
    dc->ptab = bkm_calloc((size_t)dc->nt * 2 * (size_t)(pb_max + 1), sizeof(int32_t));
    if (!dc->scratch || !dc->pix || !dc->ptab) {
        rc = bkm_err_set(err, BKM_ENOMEM, "dconv: cannot allocate %d thread workspaces", dc->nt);
        goto out;
    }
#pragma omp parallel num_threads(dc->nt)
    memset(dc->scratch + (size_t)omp_get_thread_num() * dc->scratch_floats, 0, dc->scratch_floats * sizeof(float));
    snprintf(dc->name, sizeof dc->name, "direct.%s%s%s%s", dc->main->name, dc->px ? ".px_fwd_8x48" : "",
             dc->g[0].xpad ? ".xpad_fwd" : "", dc->g[1].xpad ? ".xpad_bwd_d" : "");
out:
    if (rc < 0)
        bkm__dconv_destroy(dc);
    else
        *out = dc;
    return rc;
}

const char *bkm__dconv_name(const bkm_dconv_t *dc)
{
    return dc->name;
}
