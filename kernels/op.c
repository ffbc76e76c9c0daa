/* SPDX-License-Identifier: MIT */
/* Benchmark operations: creation through the backend table (backend.c), the generic
 * bkm_kern_op_* functions (dispatch through op->vt), and the seeded inputs every backend shares. */
#include "backend_int.h"

/* Same seeded inputs for every backend, so that their outputs can be compared. */
static void op_fill_inputs(bkm_kern_op_t *op)
{
    static const bkm_arg_t inputs[] = {BKM_ARG_SRC, BKM_ARG_WEI, BKM_ARG_BIAS, BKM_ARG_DIFF_DST};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
        if (op->buf[inputs[i]] != NULL && op->len[inputs[i]] > 0)
            bkm__kern_fill_seeded(op->buf[inputs[i]], op->len[inputs[i]], BKM_OP_SEED + (uint64_t)inputs[i]);
}

/* The backend @p be, which must have benchmark ops (every row with ops has both kinds). */
static int op_backend(bkm_backend_t be, const char *what, const bkm__backend_t **b, bkm_err_t *err)
{
    *b = bkm__backend((int)be);
    if (*b == NULL)
        return bkm_err_set(err, BKM_EINVAL, "%s op: backend %d is unknown", what, (int)be);
    if ((*b)->conv2d_op == NULL || (*b)->gemm_op == NULL)
        return bkm_err_set(err, BKM_EINVAL, "%s op: the %s backend has no benchmark ops", what, (*b)->name);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Public op API                                                                             */

int bkm_kern_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs, bkm_backend_t be,
                              const bkm_kern_params_t *params, bkm_err_t *err)
{
    const bkm__backend_t *b;
    bkm_kern_params_t none;
    int rc;
    if (op == NULL || d == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: NULL argument");
    *op = NULL;
    if (dirs <= 0 || (dirs & ~BKM_DIR_ALL) != 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: direction set %d is not a combination of 1 (fwd), "
                                            "2 (bwd_d), 4 (bwd_w)", dirs);
    if (params == NULL) {
        bkm_kern_params_init(&none);
        params = &none;
    }
    if ((rc = op_backend(be, "conv2d", &b, err)) < 0)
        return rc;
    if ((rc = b->conv2d_op(op, d, dirs, params, err)) == BKM_OK)
        op_fill_inputs(*op);
    return rc;
}

int bkm_kern_gemm_op_create(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k, bkm_backend_t be,
                            const bkm_kern_params_t *params, bkm_err_t *err)
{
    const bkm__backend_t *b;
    bkm_kern_params_t none;
    int rc;
    if (op == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm op: NULL argument");
    *op = NULL;
    if (m <= 0 || n <= 0 || k <= 0 || m > (1LL << 20) || n > (1LL << 20) || k > (1LL << 20) ||
        m * k > (1LL << 34) || k * n > (1LL << 34) || m * n > (1LL << 34))
        return bkm_err_set(err, BKM_EINVAL, "gemm op: size m=%lld n=%lld k=%lld is out of range", (long long)m,
                           (long long)n, (long long)k);
    if (params == NULL) {
        bkm_kern_params_init(&none);
        params = &none;
    }
    if ((rc = op_backend(be, "gemm", &b, err)) < 0)
        return rc;
    if ((rc = b->gemm_op(op, m, n, k, params, err)) == BKM_OK)
        op_fill_inputs(*op);
    return rc;
}

float *bkm_kern_op_buffer(bkm_kern_op_t *op, bkm_arg_t arg, size_t *n)
{
    if (op == NULL || (int)arg < 0 || arg >= BKM_ARG_COUNT || op->buf[arg] == NULL) {
        if (n != NULL)
            *n = 0;
        return NULL;
    }
    if (n != NULL)
        *n = op->len[arg];
    return op->buf[arg];
}

int bkm_kern_op_prepare(bkm_kern_op_t *op, bkm_err_t *err)
{
    if (op == NULL)
        return bkm_err_set(err, BKM_EINVAL, "op_prepare: NULL op");
    return op->vt->prepare(op, err);
}

int bkm_kern_op_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    if (op == NULL)
        return bkm_err_set(err, BKM_EINVAL, "op_exec: NULL op");
    if (!(op->dirs & (int)dir) || (dir != BKM_DIR_FWD && dir != BKM_DIR_BWD_D && dir != BKM_DIR_BWD_W))
        return bkm_err_set(err, BKM_EINVAL, "op_exec: direction %d was not requested at creation (dirs=%d)",
                           (int)dir, op->dirs);
    return op->vt->exec(op, dir, err);
}

int bkm_kern_op_finish(bkm_kern_op_t *op, bkm_err_t *err)
{
    if (op == NULL)
        return bkm_err_set(err, BKM_EINVAL, "op_finish: NULL op");
    return op->vt->finish(op, err);
}

double bkm_kern_op_flops(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    if (op == NULL || !(op->dirs & (int)dir))
        return 0.0;
    if (op->kind == BKM_OP_GEMM)
        return bkm_kern_gemm_flops(op->m, op->n, op->k);
    return bkm_kern_conv2d_flops(&op->conv);
}

const char *bkm_kern_op_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    if (op == NULL)
        return "none";
    return op->vt->impl(op, dir);
}

const bkm_param_desc_t *bkm_kern_op_params(const bkm_kern_op_t *op, size_t *n_params)
{
    if (op == NULL) {
        if (n_params != NULL)
            *n_params = 0;
        return NULL;
    }
    if (n_params != NULL)
        *n_params = op->n_params;
    return op->params;
}

void bkm_kern_op_destroy(bkm_kern_op_t *op)
{
    if (op != NULL)
        op->vt->destroy(op);
}
