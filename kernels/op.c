/* SPDX-License-Identifier: MIT */
/* Benchmark operations: creation by backend, the native conv2d and GEMM ops, the generic
 * bkm_kern_op_* functions (dispatch through op->vt), tunable parsing and validation, and the
 * seeded parallel fill that gives every backend identical inputs. */
#include "kernels_int.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#define OP_SEED 0x6b6d62ULL /* "bkm": inputs are the same in every run and every backend */

/* ---------------------------------------------------------------------------------------- */
/* Tunables                                                                                  */

void bkm_kern_params_init(bkm_kern_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->isa = BKM_ISA_AUTO;
}

int bkm_kern_params_add(bkm_kern_params_t *p, const char *kv, bkm_err_t *err)
{
    const char *eq;
    size_t klen;
    long long v;
    if (p == NULL || kv == NULL)
        return bkm_err_set(err, BKM_EINVAL, "param: NULL argument");
    eq = strchr(kv, '=');
    if (eq == NULL || eq == kv)
        return bkm_err_set(err, BKM_EINVAL, "param '%s' is not key=value", kv);
    klen = (size_t)(eq - kv);
    if (klen >= sizeof(p->kv[0].key))
        return bkm_err_set(err, BKM_EINVAL, "param key '%.*s' is too long", (int)klen, kv);
    if (klen == 3 && strncmp(kv, "isa", 3) == 0)
        return bkm_kern_isa_parse(eq + 1, &p->isa, err);
    if (bkm_parse_int(eq + 1, INT32_MIN, INT32_MAX, &v) != BKM_OK)
        return bkm_err_set(err, BKM_EINVAL, "param %.*s='%s' is not an integer", (int)klen, kv, eq + 1);
    for (int i = 0; i < p->n; i++)
        if (strlen(p->kv[i].key) == klen && strncmp(p->kv[i].key, kv, klen) == 0)
            return bkm_err_set(err, BKM_EINVAL, "param '%.*s' is given twice", (int)klen, kv);
    if (p->n >= (int)(sizeof(p->kv) / sizeof(p->kv[0])))
        return bkm_err_set(err, BKM_EINVAL, "param '%s': too many parameters (at most %zu)", kv,
                           sizeof(p->kv) / sizeof(p->kv[0]));
    memcpy(p->kv[p->n].key, kv, klen);
    p->kv[p->n].key[klen] = '\0';
    p->kv[p->n].value = (int32_t)v;
    p->n++;
    return BKM_OK;
}

int32_t bkm__kern_params_value(const bkm_kern_params_t *p, const char *key, int32_t def)
{
    for (int i = 0; p != NULL && i < p->n; i++)
        if (strcmp(p->kv[i].key, key) == 0)
            return p->kv[i].value;
    return def;
}

int bkm_kern_params_resolve(const bkm_kern_params_t *p, const bkm_param_desc_t *desc, size_t n_desc, int32_t *vals,
                            bkm_err_t *err)
{
    for (size_t i = 0; i < n_desc; i++)
        vals[i] = desc[i].def;
    if (p == NULL)
        return BKM_OK;
    for (int j = 0; j < p->n; j++) {
        const char *key = p->kv[j].key;
        const int32_t v = p->kv[j].value;
        size_t i;
        for (i = 0; i < n_desc; i++)
            if (strcmp(desc[i].name, key) == 0)
                break;
        if (i == n_desc) {
            bkm_buf_t known = {0};
            int rc;
            for (size_t k = 0; k < n_desc; k++)
                bkm_buf_printf(&known, "%s%s", k ? ", " : "", desc[k].name);
            rc = bkm_err_set(err, BKM_EINVAL, "unknown parameter %s=%d (known: %s)", key, (int)v,
                             n_desc ? bkm_buf_str(&known) : "none");
            bkm_buf_free(&known);
            return rc;
        }
        if (v < desc[i].min || v > desc[i].max)
            return bkm_err_set(err, BKM_EINVAL, "parameter %s=%d is out of range [%d, %d]", key, (int)v,
                               (int)desc[i].min, (int)desc[i].max);
        if (desc[i].mult_of > 1 && v % desc[i].mult_of != 0)
            return bkm_err_set(err, BKM_EINVAL, "parameter %s=%d is not a multiple of %d", key, (int)v,
                               (int)desc[i].mult_of);
        vals[i] = v;
    }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* Seeded buffers                                                                            */

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

/* Same seeded inputs for every backend, so that their outputs can be compared. */
static void op_fill_inputs(bkm_kern_op_t *op)
{
    static const bkm_arg_t inputs[] = {BKM_ARG_SRC, BKM_ARG_WEI, BKM_ARG_BIAS, BKM_ARG_DIFF_DST};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
        if (op->buf[inputs[i]] != NULL && op->len[inputs[i]] > 0)
            bkm__kern_fill_seeded(op->buf[inputs[i]], op->len[inputs[i]], OP_SEED + (uint64_t)inputs[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* Native conv2d op                                                                          */

static int native_nop(bkm_kern_op_t *op, bkm_err_t *err)
{
    return BKM_OK;
}

static int native_conv_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    bkm_kern_conv2d_t *cv = op->priv;
    if (!(op->dirs & (int)dir) || (dir != BKM_DIR_FWD && dir != BKM_DIR_BWD_D && dir != BKM_DIR_BWD_W))
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: direction %d was not requested at creation (dirs=%d)",
                           (int)dir, op->dirs);
    switch (dir) {
    case BKM_DIR_FWD:
        return bkm_kern_conv2d_fwd(cv, op->buf[BKM_ARG_SRC], op->buf[BKM_ARG_WEI], op->buf[BKM_ARG_BIAS],
                                   op->buf[BKM_ARG_DST], err);
    case BKM_DIR_BWD_D:
        return bkm_kern_conv2d_bwd_data(cv, op->buf[BKM_ARG_DIFF_DST], op->buf[BKM_ARG_WEI],
                                        op->buf[BKM_ARG_DIFF_SRC], err);
    default:
        return bkm_kern_conv2d_bwd_weights(cv, op->buf[BKM_ARG_SRC], op->buf[BKM_ARG_DIFF_DST],
                                           op->buf[BKM_ARG_DIFF_WEI], op->buf[BKM_ARG_DIFF_BIAS], err);
    }
}

static const char *native_conv_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    return bkm_kern_conv2d_impl(op->priv);
}

static void native_conv_destroy(bkm_kern_op_t *op)
{
    bkm_kern_conv2d_destroy(op->priv);
    bkm__kern_op_free(op);
}

static const struct bkm_kern_op_vtbl native_conv_vtbl = {native_nop, native_conv_exec, native_nop, native_conv_impl,
                                                         native_conv_destroy};

static int native_conv_create(bkm_kern_op_t **out, const bkm_conv2d_desc_t *d, int dirs,
                              const bkm_kern_params_t *params, bkm_err_t *err)
{
    bkm_kern_op_t *op = bkm_calloc(1, sizeof(*op));
    int rc;
    if (op == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "conv2d op: out of memory");
    op->vt = &native_conv_vtbl;
    op->be = BKM_BACKEND_NATIVE;
    op->kind = BKM_OP_CONV2D;
    op->dirs = dirs;
    op->conv = *d;
    op->params = bkm_kern_conv2d_params(&op->n_params);
    if ((rc = bkm_kern_conv2d_create((bkm_kern_conv2d_t **)&op->priv, d, params, err)) < 0)
        goto out;
    bkm__kern_op_conv2d_lens(op);
    if ((rc = bkm__kern_op_alloc_buffers(op, OP_SEED, err)) < 0)
        goto out;
    *out = op;
    op = NULL;
out:
    if (op != NULL)
        native_conv_destroy(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Native GEMM op                                                                            */

typedef struct {
    bkm_gemm_cfg_t cfg;
    void *ws;
    char impl[128];
} native_gemm_t;

static int native_gemm_exec(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err)
{
    native_gemm_t *g = op->priv;
    if (dir != BKM_DIR_FWD)
        return bkm_err_set(err, BKM_EINVAL, "gemm op: direction %d is not fwd (1)", (int)dir);
    return bkm_kern_sgemm(&g->cfg, 'N', 'N', op->m, op->n, op->k, 1.0f, op->buf[BKM_ARG_SRC], op->k,
                          op->buf[BKM_ARG_WEI], op->n, 0.0f, op->buf[BKM_ARG_DST], op->n, g->ws, err);
}

static const char *native_gemm_impl(const bkm_kern_op_t *op, bkm_dir_t dir)
{
    const native_gemm_t *g = op->priv;
    return g->impl;
}

static void native_gemm_destroy(bkm_kern_op_t *op)
{
    native_gemm_t *g = op->priv;
    if (g != NULL)
        bkm_free(g->ws);
    bkm_free(g);
    bkm__kern_op_free(op);
}

static const struct bkm_kern_op_vtbl native_gemm_vtbl = {native_nop, native_gemm_exec, native_nop, native_gemm_impl,
                                                         native_gemm_destroy};

static int native_gemm_create(bkm_kern_op_t **out, int64_t m, int64_t n, int64_t k, const bkm_kern_params_t *params,
                              bkm_err_t *err)
{
    bkm_kern_op_t *op = bkm_calloc(1, sizeof(*op));
    native_gemm_t *g = bkm_calloc(1, sizeof(*g));
    size_t ws_bytes;
    int rc;
    if (op == NULL || g == NULL) {
        bkm_free(op);
        bkm_free(g);
        return bkm_err_set(err, BKM_ENOMEM, "gemm op: out of memory");
    }
    op->vt = &native_gemm_vtbl;
    op->be = BKM_BACKEND_NATIVE;
    op->kind = BKM_OP_GEMM;
    op->dirs = BKM_DIR_FWD;
    op->m = m;
    op->n = n;
    op->k = k;
    op->priv = g;
    if ((rc = bkm_kern_gemm_cfg_init(&g->cfg, params->isa, err)) < 0)
        goto out;
    op->params = bkm_kern_gemm_params(g->cfg.isa, &op->n_params);
    /* the rules bkm_kern_gemm_params_check applies, on this process's thread count */
    if ((rc = bkm__kern_gemm_cfg_apply(&g->cfg, params, err)) < 0)
        goto out;
    ws_bytes = bkm_kern_gemm_workspace_bytes(&g->cfg);
    g->ws = bkm_aligned_alloc(64, ws_bytes);
    if (g->ws == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "gemm op: cannot allocate %zu bytes of workspace", ws_bytes);
        goto out;
    }
    memset(g->ws, 0, ws_bytes);
    {
        /* the blocking this shape resolves to (auto kc / nt_jc), as it runs: provenance */
        bkm_gemm_plan_t plan;
        if ((rc = bkm_kern_gemm_plan(&g->cfg, 'N', 'N', m, n, k, &plan, err)) < 0)
            goto out;
        snprintf(g->impl, sizeof(g->impl), "native:gemm.%s_%dx%d.%s(mc=%d,kc=%d*%d,nc=%d,jc=%d)",
                 bkm_kern_isa_name(g->cfg.isa), (int)g->cfg.mr, (int)g->cfg.nr, plan.path, (int)plan.mc,
                 (int)plan.kc, (int)plan.k_passes, (int)plan.nc, (int)plan.nt_jc);
    }
    op->len[BKM_ARG_SRC] = (size_t)(m * k);
    op->len[BKM_ARG_WEI] = (size_t)(k * n);
    op->len[BKM_ARG_DST] = (size_t)(m * n);
    if ((rc = bkm__kern_op_alloc_buffers(op, OP_SEED, err)) < 0)
        goto out;
    *out = op;
    op = NULL;
out:
    if (op != NULL)
        native_gemm_destroy(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Public op API                                                                             */

int bkm_kern_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs, bkm_backend_t be,
                              const bkm_kern_params_t *params, bkm_err_t *err)
{
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
    switch (be) {
    case BKM_BACKEND_NATIVE:
        rc = native_conv_create(op, d, dirs, params, err);
        break;
    case BKM_BACKEND_ONEDNN:
        rc = bkm__kern_onednn_conv2d_op_create(op, d, dirs, params, err);
        break;
    default:
        return bkm_err_set(err, BKM_EINVAL, "conv2d op: backend %d is unknown", (int)be);
    }
    if (rc == BKM_OK)
        op_fill_inputs(*op);
    return rc;
}

int bkm_kern_gemm_op_create(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k, bkm_backend_t be,
                            const bkm_kern_params_t *params, bkm_err_t *err)
{
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
    switch (be) {
    case BKM_BACKEND_NATIVE:
        rc = native_gemm_create(op, m, n, k, params, err);
        break;
    case BKM_BACKEND_ONEDNN:
        rc = bkm__kern_onednn_gemm_op_create(op, m, n, k, params, err);
        break;
    default:
        return bkm_err_set(err, BKM_EINVAL, "gemm op: backend %d is unknown", (int)be);
    }
    if (rc == BKM_OK)
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
