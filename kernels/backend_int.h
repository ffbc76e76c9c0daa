/* SPDX-License-Identifier: MIT */
/* Private to kernels/: the objects a backend runs (benchmark ops, LSTM stacks, network engines),
 * each behind its vtable, and the one table of backends (backend.c) through which all of them are
 * created. bkm_kern_*_op_create (op.c), bkm_net_exec_create (net.c) and the LSTM layers of a
 * sequence network (net_seq.c) look the backend up with bkm__backend() and call what its row
 * lists; a backend that lacks an object has NULL in that column. A backend's objects are defined in
 * its own files: native op_native.c, lstm.c, net_native.c; oneDNN onednn_op.c, lstm_onednn.c,
 * net_onednn.c; the naive reference lstm_ref.c, net_ref.c. */
#ifndef BKM_BACKEND_INT_H
#define BKM_BACKEND_INT_H

#include "kernels_int.h"

/* ---------------------------------------------------------------------------------------- */
/* Benchmark op (bkm_kern_op_t)                                                               */

/* The public bkm_kern_op_* functions dispatch through op->vt; everything a generic function
 * needs (problem, user buffers, tunables) sits in the common part, backend data behind op->priv.
 * bkm_kern_op_buffer, bkm_kern_op_flops and bkm_kern_op_params read the common part only. GEMM
 * ops use BKM_ARG_SRC = A (m x k), BKM_ARG_WEI = B (k x n), BKM_ARG_DST = C (m x n), row-major,
 * and only the direction BKM_DIR_FWD. */
typedef enum { BKM_OP_CONV2D = 1, BKM_OP_GEMM = 2 } bkm_op_kind_t;

typedef struct bkm__op_vtbl {
    int (*prepare)(bkm_kern_op_t *op, bkm_err_t *err);
    int (*exec)(bkm_kern_op_t *op, bkm_dir_t dir, bkm_err_t *err); /* dir is one of op->dirs */
    int (*finish)(bkm_kern_op_t *op, bkm_err_t *err);
    const char *(*impl)(const bkm_kern_op_t *op, bkm_dir_t dir);
    void (*destroy)(bkm_kern_op_t *op); /* frees everything, op included */
} bkm__op_vtbl_t;

struct bkm_kern_op {
    const bkm__op_vtbl_t *vt;
    bkm_backend_t be;
    bkm_op_kind_t kind;
    int dirs;                          /* BKM_DIR_* bits the op was created for */
    bkm_conv2d_desc_t conv;            /* kind == BKM_OP_CONV2D */
    int64_t m, n, k;                   /* kind == BKM_OP_GEMM */
    float *buf[BKM_ARG_COUNT];         /* user layout, 64-byte aligned, owned; NULL if unused */
    size_t len[BKM_ARG_COUNT];         /* elements */
    const bkm_param_desc_t *params;    /* static storage */
    size_t n_params;
    void *priv;                        /* backend private data */
};

/* Seed of the inputs every backend's op gets (bkm_kern_*_op_create: seed + argument). */
#define BKM_OP_SEED 0x6b6d62ULL /* "bkm" */

/* The user-layout argument buffers of an op (buffer.c). alloc: op->buf[a] (64-byte aligned) for
 * every op->len[a] > 0, each filled with seeded values (seed + a) in parallel; BKM_ENOMEM naming the
 * argument. conv2d_lens: op->len[] of a conv2d op for its directions (NCHW / goihw). free: op->buf[]
 * (NULL-safe) and op itself; the vtables' destroy functions end with it. */
int bkm__kern_op_alloc_buffers(bkm_kern_op_t *op, uint64_t seed, bkm_err_t *err);
void bkm__kern_op_conv2d_lens(bkm_kern_op_t *op);
void bkm__kern_op_free(bkm_kern_op_t *op);

/* ---------------------------------------------------------------------------------------- */
/* LSTM stack                                                                                */

/* One backend's LSTM stack behind one interface: the same layouts and semantics as
 * bkm_kern_lstm_fwd / bkm_kern_lstm_ref_bwd (bwd gets the h0 and c0 of the forward too: the
 * reference recomputes it, the others ignore them). The object is the caller's (a layer of the
 * sequence engine); create fills it, destroy frees what create allocated. */
typedef struct bkm__lstm bkm__lstm_t;

typedef struct bkm__lstm_vtbl {
    int (*fwd)(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w, float *y,
               float *hT, float *cT, bkm_err_t *err);
    int (*bwd)(bkm__lstm_t *ls, const float *x, const float *h0, const float *c0, const float *w, const float *dy,
               const float *dhT, const float *dcT, float *dx, float *dh0, float *dc0, float *dw, bkm_err_t *err);
    const char *(*impl)(const bkm__lstm_t *ls);
    void (*destroy)(bkm__lstm_t *ls);
} bkm__lstm_vtbl_t;

struct bkm__lstm {
    const bkm__lstm_vtbl_t *vt; /* NULL until created */
    bkm_lstm_desc_t d;
    void *priv;                 /* the backend's object */
};

/* ---------------------------------------------------------------------------------------- */
/* The table of backends (backend.c)                                                         */

typedef struct bkm__net_vtbl bkm__net_vtbl_t; /* a network engine: net_int.h */

typedef struct bkm__backend {
    const char *name; /* bkm_kern_backend_name, bkm_net_engine_name */
    /* Benchmark ops: the contract of the public creators (arguments checked there, params non-NULL). */
    int (*conv2d_op)(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs, const bkm_kern_params_t *p,
                     bkm_err_t *err);
    int (*gemm_op)(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k, const bkm_kern_params_t *p, bkm_err_t *err);
    /* An LSTM stack for @p d (checked); @p training: backward will be called; @p p: native tunables
     * (NULL: defaults). On failure *ls is left unset (nothing to destroy). */
    int (*lstm)(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p, bkm_err_t *err);
    /* The engine of image networks (desc t = 0; sequence networks run net_seq.c over .lstm). */
    const bkm__net_vtbl_t *net;
} bkm__backend_t;

/* The row of backend @p be (a bkm_backend_t, equal to the bkm_net_engine_t value), NULL if unknown. */
const bkm__backend_t *bkm__backend(int be);

/* What the rows list. Ops: op_native.c and onednn_op.c. The oneDNN creators return BKM_ENOTSUP
 * when oneDNN has no implementation for the problem, BKM_EINVAL naming an unknown tunable key (that
 * backend publishes none), BKM_EDEP for any other oneDNN failure (message names the call). */
int bkm__kern_native_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs,
                                      const bkm_kern_params_t *p, bkm_err_t *err);
int bkm__kern_native_gemm_op_create(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k,
                                    const bkm_kern_params_t *p, bkm_err_t *err);
int bkm__kern_onednn_conv2d_op_create(bkm_kern_op_t **op, const bkm_conv2d_desc_t *d, int dirs,
                                      const bkm_kern_params_t *p, bkm_err_t *err);
int bkm__kern_onednn_gemm_op_create(bkm_kern_op_t **op, int64_t m, int64_t n, int64_t k,
                                    const bkm_kern_params_t *p, bkm_err_t *err);
/* LSTM stacks: lstm.c (bkm_kern_lstm_*), lstm_onednn.c (bkm_kern_lstm_onednn_*), lstm_ref.c
 * (bkm_kern_lstm_ref_*, which allocate their scratch per call). */
int bkm__lstm_native_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                            bkm_err_t *err);
int bkm__lstm_onednn_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                            bkm_err_t *err);
int bkm__lstm_ref_create(bkm__lstm_t *ls, const bkm_lstm_desc_t *d, int training, const bkm_kern_params_t *p,
                         bkm_err_t *err);
/* Network engines: net_native.c, net_onednn.c, net_ref.c (declared in net_int.h). */

#endif /* BKM_BACKEND_INT_H */
