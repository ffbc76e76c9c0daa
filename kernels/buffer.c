/* SPDX-License-Identifier: MIT */
/* Seeded buffers: the counter-based hash, the seeded parallel fill that gives every backend
 * identical inputs, the zeroing by the caller's team (first touch), and the user-layout argument
 * buffers of a benchmark op (sizes, allocation, release). */
#include "backend_int.h"

#include <string.h>

uint64_t bkm__kern_hash64(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i + 0x632be59bd9b4e019ULL;
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void bkm__kern_fill_seeded(float *p, size_t n, uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)(bkm__kern_hash64(seed, i) >> 40) * (2.0 / 16777216.0) - 1.0);
}

void bkm__kern_zero_team(float *p, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        p[i] = 0.0f;
}

void bkm__kern_op_conv2d_lens(bkm_kern_op_t *op)
{
    const bkm_conv2d_desc_t *d = &op->conv;
    const size_t n_src = (size_t)(d->mb * d->ic * d->ih * d->iw), n_dst = (size_t)(d->mb * d->oc * d->oh * d->ow);
    const size_t n_wei = (size_t)(d->oc * (d->ic / d->g) * d->kh * d->kw);
    memset(op->len, 0, sizeof(op->len));
    op->len[BKM_ARG_SRC] = n_src;
    op->len[BKM_ARG_WEI] = n_wei;
    op->len[BKM_ARG_BIAS] = d->has_bias ? (size_t)d->oc : 0;
    if (op->dirs & BKM_DIR_FWD)
        op->len[BKM_ARG_DST] = n_dst;
    if (op->dirs & (BKM_DIR_BWD_D | BKM_DIR_BWD_W))
        op->len[BKM_ARG_DIFF_DST] = n_dst;
    if (op->dirs & BKM_DIR_BWD_D)
        op->len[BKM_ARG_DIFF_SRC] = n_src;
    if (op->dirs & BKM_DIR_BWD_W) {
        op->len[BKM_ARG_DIFF_WEI] = n_wei;
        op->len[BKM_ARG_DIFF_BIAS] = d->has_bias ? (size_t)d->oc : 0;
    }
}

int bkm__kern_op_alloc_buffers(bkm_kern_op_t *op, uint64_t seed, bkm_err_t *err)
{
    for (int a = 0; a < BKM_ARG_COUNT; a++) {
        if (op->len[a] == 0)
            continue;
        op->buf[a] = bkm_aligned_alloc(64, op->len[a] * sizeof(float));
        if (op->buf[a] == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "op: cannot allocate %zu floats for argument %d", op->len[a], a);
        bkm__kern_fill_seeded(op->buf[a], op->len[a], seed + (uint64_t)a);
    }
    return BKM_OK;
}

void bkm__kern_op_free(bkm_kern_op_t *op)
{
    if (op == NULL)
        return;
    for (int a = 0; a < BKM_ARG_COUNT; a++)
        bkm_free(op->buf[a]);
    bkm_free(op);
}
