/* SPDX-License-Identifier: MIT */
/* oneDNN backend of the benchmark ops: conv2d (fwd_training + bias, bwd_data, bwd_weights +
 * diff_bias) with oneDNN-chosen (blocked) layouts, and GEMM through dnnl_sgemm. One engine and
 * one stream per op. Primitive, memory and reorder creation happen in create; input reorders in
 * prepare, output reorders in finish; exec runs only the primitive (user-managed scratchpad). */
#include <stdio.h>
#include <string.h>

#include "onednn_int.h"

/* ---------------------------------------------------------------------------------------- */
/* conv2d                                                                                     */
/* ---------------------------------------------------------------------------------------- */

enum { ODNN_FWD, ODNN_BWD_D, ODNN_BWD_W, ODNN_NDIR };
/* Seed of the initial fill of every user buffer; bkm_kern_*_op_create then refills the inputs
 * with the seed every backend shares. */
#define ODNN_BUF_SEED 0x6f6e65646e6eULL
#define ODNN_MAX_IO 5

/* One argument of one primitive: the user-layout memory and the primitive's own. */
typedef struct odnn_io {
    dnnl_memory_t user;        /* wraps op->buf[arg] */
    dnnl_memory_t mem;         /* primitive layout; NULL when it is the user layout */
    dnnl_primitive_t reorder;  /* inputs: user -> mem (prepare); outputs: mem -> user (finish) */
    int is_output;
} odnn_io_t;

typedef struct odnn_dir {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t scratch;
    odnn_io_t io[ODNN_MAX_IO];
    int n_io;
    dnnl_exec_arg_t args[ODNN_MAX_IO + 1];
    int n_args;
    char impl[96];
} odnn_dir_t;

typedef struct odnn_conv {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_memory_desc_t user_md[BKM_ARG_COUNT];
    odnn_dir_t dir[ODNN_NDIR];
} odnn_conv_t;

/* What a primitive argument is: its dnnl argument id, our buffer, query and index. */
typedef struct odnn_argspec {
    int darg;
    bkm_arg_t barg;
    dnnl_query_t q;
    int q_index;
    int is_output;
} odnn_argspec_t;

static int dir_index(bkm_dir_t d)
{
    return d == BKM_DIR_FWD ? ODNN_FWD : d == BKM_DIR_BWD_D ? ODNN_BWD_D : d == BKM_DIR_BWD_W ? ODNN_BWD_W : -1;
}

static int odnn_check_params(const bkm_kern_params_t *p, bkm_err_t *err)
{
    if (p && p->n > 0)
        return bkm_err_set(err, BKM_EINVAL, "unknown parameter '%s': the oneDNN backend has no tunables",
                           p->kv[0].key);
    return BKM_OK;
}

/* Memories, reorders, scratchpad and primitive of one direction whose pd is already created. */
static int conv_dir_setup(bkm_kern_op_t *op, odnn_conv_t *c, odnn_dir_t *dr, const odnn_argspec_t *spec,
                          int n_spec, bkm_err_t *err)
{
    int rc = BKM_OK;
    for (int i = 0; i < n_spec; i++) {
        const odnn_argspec_t *s = &spec[i];
        odnn_io_t *io = &dr->io[dr->n_io++];
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(dr->pd, s->q, s->q_index);
        const dnnl_memory_desc_t *umd = &c->user_md[s->barg];
        io->is_output = s->is_output;
        if (!md)
            return bkm_err_set(err, BKM_EDEP, "oneDNN: no memory descriptor for argument %d", s->darg);
        if ((rc = bkm__odnn_mem(&io->user, umd, c->eng, op->buf[s->barg], err)) < 0)
            return rc;
        if (!dnnl_memory_desc_equal(md, umd)) {
            if ((rc = bkm__odnn_mem(&io->mem, md, c->eng, NULL, err)) < 0)
                return rc;
            rc = s->is_output ? bkm__odnn_reorder(&io->reorder, md, umd, c->eng, err)
                              : bkm__odnn_reorder(&io->reorder, umd, md, c->eng, err);
            if (rc < 0)
                return rc;
        }
        dr->args[dr->n_args++] = (dnnl_exec_arg_t){s->darg, io->mem ? io->mem : io->user};
    }
    if ((rc = bkm__odnn_scratch(&dr->scratch, dr->pd, c->eng, err)) < 0)
        return rc;
    if (dr->scratch)
        dr->args[dr->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, dr->scratch};
    BKM_ODNN_TRY(dnnl_primitive_create(&dr->prim, dr->pd));
    bkm__odnn_impl_name(dr->pd, dr->impl, sizeof dr->impl);
out:
    return rc;
}

static int conv_run_reorders(odnn_conv_t *c, int outputs, bkm_err_t *err)
{
    int rc = BKM_OK;
    for (int d = 0; d < ODNN_NDIR; d++) {
        for (int i = 0; i < c->dir[d].n_io; i++) {
            odnn_io_t *io = &c->dir[d].io[i];
            if (!io->reorder || io->is_output != outputs)
                continue;
            dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, outputs ? io->mem : io->user},
                                    {DNNL_ARG_TO, outputs ? io->user : io->mem}};
            BKM_ODNN_TRY(dnnl_primitive_execute(io->reorder, c->strm, 2, a));
        }
    }
    BKM_ODNN_TRY(dnnl_stream_wait(c->strm));
out:
    return rc;
}

static int conv_prepare(bkm_kern_op_t *op, bkm_err_t *err)
{
    return conv_run_reorders(op->priv, 0, err);
}

static int conv_finish(bkm_kern_op_t *op, bkm_err_t *err)
{
    return conv_run_reorders(op->priv, 1, err);
}

static int conv_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    odnn_conv_t *c = op->priv;
    int di = dir_index(dir), rc = BKM_OK;
    if (di < 0 || !(op->dirs & (int)dir) || !c->dir[di].prim)
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: direction %d was not created (dirs=%d)", (int)dir, op->dirs);
    BKM_ODNN_TRY(dnnl_primitive_execute(c->dir[di].prim, c->strm, c->dir[di].n_args, c->dir[di].args));
    BKM_ODNN_TRY(dnnl_stream_wait(c->strm));
out:
    return rc;
}

static const char *conv_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    const odnn_conv_t *c = op->priv;
    int di = dir_index(dir);
    if (di < 0 || !c->dir[di].prim)
        return "onednn:none";
    return c->dir[di].impl;
}

static void conv_destroy(bkm_kern_op_t *op)
{
    odnn_conv_t *c;
    if (!op)
        return;
    c = op->priv;
    if (c) {
        for (int d = 0; d < ODNN_NDIR; d++) {
            odnn_dir_t *dr = &c->dir[d];
            for (int i = 0; i < dr->n_io; i++) {
                dnnl_primitive_destroy(dr->io[i].reorder);
                dnnl_memory_destroy(dr->io[i].mem);
                dnnl_memory_destroy(dr->io[i].user);
            }
            dnnl_memory_destroy(dr->scratch);
            dnnl_primitive_destroy(dr->prim);
            dnnl_primitive_desc_destroy(dr->pd);
        }
        dnnl_stream_destroy(c->strm);
        dnnl_engine_destroy(c->eng);
        bkm_free(c);
    }
    bkm__kern_op_free(op);
}

static const bkm__op_vtbl_t conv_vtbl = {conv_prepare, conv_exec, conv_finish, conv_impl, conv_destroy};

static int conv_user_mds(odnn_conv_t *c, const bkm_conv2d_desc_t *d, bkm_err_t *err)
{
    dnnl_dim_t src[4] = {d->mb, d->ic, d->ih, d->iw}, dst[4] = {d->mb, d->oc, d->oh, d->ow};
    dnnl_dim_t wei5[5] = {d->g, d->oc / d->g, d->ic / d->g, d->kh, d->kw}, wei4[4] = {d->oc, d->ic, d->kh, d->kw};
    dnnl_dim_t bias[1] = {d->oc};
    int rc;
    if ((rc = bkm__odnn_plain_md(&c->user_md[BKM_ARG_SRC], 4, src, err)) < 0 ||
        (rc = bkm__odnn_plain_md(&c->user_md[BKM_ARG_DST], 4, dst, err)) < 0 ||
        (rc = bkm__odnn_plain_md(&c->user_md[BKM_ARG_BIAS], 1, bias, err)) < 0)
        return rc;
    if (d->g > 1)
        rc = bkm__odnn_plain_md(&c->user_md[BKM_ARG_WEI], 5, wei5, err);
    else
        rc = bkm__odnn_plain_md(&c->user_md[BKM_ARG_WEI], 4, wei4, err);
    if (rc < 0)
        return rc;
    c->user_md[BKM_ARG_DIFF_SRC] = c->user_md[BKM_ARG_SRC];
    c->user_md[BKM_ARG_DIFF_DST] = c->user_md[BKM_ARG_DST];
    c->user_md[BKM_ARG_DIFF_WEI] = c->user_md[BKM_ARG_WEI];
    c->user_md[BKM_ARG_DIFF_BIAS] = c->user_md[BKM_ARG_BIAS];
    return BKM_OK;
}

int bkm__kern_onednn_conv2d_op_create(bkm_kern_op_t **opp, const bkm_conv2d_desc_t *d, int dirs,
                                      const bkm_kern_params_t *p, bkm_err_t *err)
{
    int rc = BKM_OK;
    bkm_kern_op_t *op = NULL;
    odnn_conv_t *c = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_convolution_desc_t cd;
    dnnl_memory_desc_t any_src, any_wei, any_dst, any_bias;
    int wnd;

    *opp = NULL;
    if (dirs <= 0 || (dirs & ~BKM_DIR_ALL))
        return bkm_err_set(err, BKM_EINVAL, "conv2d: bad direction set %d (1=fwd, 2=bwd_d, 4=bwd_w)", dirs);
    if (d->mb <= 0 || d->g <= 0 || d->ic <= 0 || d->oc <= 0 || d->ic % d->g || d->oc % d->g || d->oh <= 0 ||
        d->ow <= 0 || d->kh <= 0 || d->kw <= 0 || d->sh <= 0 || d->sw <= 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: inconsistent descriptor '%s'", d->name);
    if ((rc = odnn_check_params(p, err)) < 0)
        return rc;

    op = bkm_calloc(1, sizeof *op);
    c = bkm_calloc(1, sizeof *c);
    if (!op || !c) {
        bkm_free(op);
        bkm_free(c);
        return bkm_err_set(err, BKM_ENOMEM, "conv2d: out of memory");
    }
    op->vt = &conv_vtbl;
    op->be = BKM_BACKEND_ONEDNN;
    op->kind = BKM_OP_CONV2D;
    op->dirs = dirs;
    op->conv = *d;
    op->priv = c;

    /* user buffers (op.c's layout and seeded fill, shared with the native backend) */
    bkm__kern_op_conv2d_lens(op);
    if ((rc = bkm__kern_op_alloc_buffers(op, ODNN_BUF_SEED, err)) < 0)
        goto out;

    BKM_ODNN_TRY(dnnl_engine_create(&c->eng, dnnl_cpu, 0));
    BKM_ODNN_TRY(dnnl_stream_create(&c->strm, c->eng, dnnl_stream_default_flags));
    if ((rc = conv_user_mds(c, d, err)) < 0 || (rc = bkm__odnn_attr(&attr, err)) < 0)
        goto out;

    {
        const dnnl_memory_desc_t *uw = &c->user_md[BKM_ARG_WEI];
        dnnl_dim_t strides[2] = {d->sh, d->sw}, pl[2] = {d->ph, d->pw};
        dnnl_dim_t pr[2] = {(d->oh - 1) * d->sh + d->kh - d->ih - d->ph, (d->ow - 1) * d->sw + d->kw - d->iw - d->pw};
        wnd = uw->ndims;
        BKM_ODNN_TRY(
            dnnl_memory_desc_init_by_tag(&any_src, 4, c->user_md[BKM_ARG_SRC].dims, dnnl_f32, dnnl_format_tag_any));
        BKM_ODNN_TRY(
            dnnl_memory_desc_init_by_tag(&any_dst, 4, c->user_md[BKM_ARG_DST].dims, dnnl_f32, dnnl_format_tag_any));
        BKM_ODNN_TRY(dnnl_memory_desc_init_by_tag(&any_wei, wnd, uw->dims, dnnl_f32, dnnl_format_tag_any));
        BKM_ODNN_TRY(
            dnnl_memory_desc_init_by_tag(&any_bias, 1, c->user_md[BKM_ARG_BIAS].dims, dnnl_f32, dnnl_format_tag_any));

        /* The forward pd is always created: it is the hint of both backward directions. */
        BKM_ODNN_TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &any_src,
                                                        &any_wei, d->has_bias ? &any_bias : NULL, &any_dst, strides,
                                                        pl, pr));
        BKM_ODNN_TRY(dnnl_primitive_desc_create(&c->dir[ODNN_FWD].pd, &cd, attr, c->eng, NULL));
        if (dirs & BKM_DIR_FWD) {
            const odnn_argspec_t spec[] = {
                {DNNL_ARG_SRC, BKM_ARG_SRC, dnnl_query_src_md, 0, 0},
                {DNNL_ARG_WEIGHTS, BKM_ARG_WEI, dnnl_query_weights_md, 0, 0},
                {DNNL_ARG_DST, BKM_ARG_DST, dnnl_query_dst_md, 0, 1},
                {DNNL_ARG_BIAS, BKM_ARG_BIAS, dnnl_query_weights_md, 1, 0},
            };
            if ((rc = conv_dir_setup(op, c, &c->dir[ODNN_FWD], spec, d->has_bias ? 4 : 3, err)) < 0)
                goto out;
        }
        if (dirs & BKM_DIR_BWD_D) {
            const odnn_argspec_t spec[] = {
                {DNNL_ARG_DIFF_DST, BKM_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, 0},
                {DNNL_ARG_WEIGHTS, BKM_ARG_WEI, dnnl_query_weights_md, 0, 0},
                {DNNL_ARG_DIFF_SRC, BKM_ARG_DIFF_SRC, dnnl_query_diff_src_md, 0, 1},
            };
            BKM_ODNN_TRY(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &any_src, &any_wei,
                                                                  &any_dst, strides, pl, pr));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&c->dir[ODNN_BWD_D].pd, &cd, attr, c->eng, c->dir[ODNN_FWD].pd));
            if ((rc = conv_dir_setup(op, c, &c->dir[ODNN_BWD_D], spec, 3, err)) < 0)
                goto out;
        }
        if (dirs & BKM_DIR_BWD_W) {
            const odnn_argspec_t spec[] = {
                {DNNL_ARG_SRC, BKM_ARG_SRC, dnnl_query_src_md, 0, 0},
                {DNNL_ARG_DIFF_DST, BKM_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, 0},
                {DNNL_ARG_DIFF_WEIGHTS, BKM_ARG_DIFF_WEI, dnnl_query_diff_weights_md, 0, 1},
                {DNNL_ARG_DIFF_BIAS, BKM_ARG_DIFF_BIAS, dnnl_query_diff_weights_md, 1, 1},
            };
            BKM_ODNN_TRY(dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &any_src, &any_wei,
                                                                     d->has_bias ? &any_bias : NULL, &any_dst,
                                                                     strides, pl, pr));
            BKM_ODNN_TRY(dnnl_primitive_desc_create(&c->dir[ODNN_BWD_W].pd, &cd, attr, c->eng, c->dir[ODNN_FWD].pd));
            if ((rc = conv_dir_setup(op, c, &c->dir[ODNN_BWD_W], spec, d->has_bias ? 4 : 3, err)) < 0)
                goto out;
        }
    }
    *opp = op;
    op = NULL;
out:
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (rc < 0)
        bkm_err_prefix(err, "onednn conv2d %s", d->name[0] ? d->name : "(unnamed)");
    conv_destroy(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* GEMM through dnnl_sgemm (row-major C = A * B)                                              */
/* ---------------------------------------------------------------------------------------- */

static int gemm_noop(bkm_kern_op_t *op, bkm_err_t *err)
{
    return BKM_OK;
}

static int gemm_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    int rc = BKM_OK;
    if (dir != BKM_DIR_FWD)
        return bkm_err_set(err, BKM_EINVAL, "gemm op: direction %d (only fwd=1 exists)", (int)dir);
    BKM_ODNN_TRY(dnnl_sgemm('N', 'N', op->m, op->n, op->k, 1.0f, op->buf[BKM_ARG_SRC], op->k, op->buf[BKM_ARG_WEI],
                            op->n, 0.0f, op->buf[BKM_ARG_DST], op->n));
out:
    return rc;
}

static const char *gemm_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    return "onednn:dnnl_sgemm";
}

static void gemm_destroy(bkm_kern_op_t *op)
{
    bkm__kern_op_free(op);
}

static const bkm__op_vtbl_t gemm_vtbl = {gemm_noop, gemm_exec, gemm_noop, gemm_impl, gemm_destroy};

int bkm__kern_onednn_gemm_op_create(bkm_kern_op_t **opp, int64_t m, int64_t n, int64_t k,
                                    const bkm_kern_params_t *p, bkm_err_t *err)
{
    int rc = BKM_OK;
    bkm_kern_op_t *op = NULL;
    *opp = NULL;
    if (m <= 0 || n <= 0 || k <= 0)
        return bkm_err_set(err, BKM_EINVAL, "gemm: m=%lld n=%lld k=%lld must all be positive", (long long)m,
                           (long long)n, (long long)k);
    if ((rc = odnn_check_params(p, err)) < 0)
        return rc;
    if (!(op = bkm_calloc(1, sizeof *op)))
        return bkm_err_set(err, BKM_ENOMEM, "gemm: out of memory");
    op->vt = &gemm_vtbl;
    op->be = BKM_BACKEND_ONEDNN;
    op->kind = BKM_OP_GEMM;
    op->dirs = BKM_DIR_FWD;
    op->m = m;
    op->n = n;
    op->k = k;
    op->len[BKM_ARG_SRC] = (size_t)(m * k);
    op->len[BKM_ARG_WEI] = (size_t)(k * n);
    op->len[BKM_ARG_DST] = (size_t)(m * n);
    if ((rc = bkm__kern_op_alloc_buffers(op, ODNN_BUF_SEED, err)) < 0)
        goto out;
    *opp = op;
    op = NULL;
out:
    gemm_destroy(op);
    return rc;
}
