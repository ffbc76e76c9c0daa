/* SPDX-License-Identifier: MIT */
/* `fmnist-sgd`: synchronous data-parallel SGD over MPI on Fashion-MNIST (docs/workloads.md §7), the
 * seed's mnist_dist.py recipe done so that P ranks train exactly what one rank trains:
 *  - one permutation of the training set per epoch, drawn from the seed and the epoch number, the
 *    same on every rank; global batch b is samples perm[b*B .. b*B+B), rank r takes its r-th slice
 *    of B/P samples, so P=1 and P>1 see the same global batches (a last partial batch is dropped);
 *  - parameters initialised on rank 0 (PyTorch's default uniform bounds) and broadcast at the start
 *    (and every epoch with bcast=epoch, as the seed does);
 *  - each rank runs forward + backward of its slice on the network executor (lr 0: the executor
 *    only computes gradients), the gradients are summed over the ranks by the chosen allreduce and
 *    divided by P (reduce=mean; reduce=sum keeps the seed's sum, which multiplies the learning rate
 *    by P), then SGD with momentum (PyTorch semantics) updates every rank's copy identically;
 *  - at the end of every epoch a checksum of the parameters is compared over the ranks (max and
 *    min by one allreduce) and any difference stops every rank with an error; the test accuracy is
 *    computed by the ranks on disjoint parts of the test set.
 * Allreduce algorithms: mpi (MPI_Allreduce per tensor, as the seed), flat (one fused buffer), ring
 * (bkm__ring_allreduce_f32 on the fused buffer), overlap (buckets of bucket_kb started with
 * MPI_Iallreduce from the executor's gradient hook while backward continues, as PyTorch DDP).
 * Errors that every rank can see (configuration, data files, setup) are agreed by an allreduce so
 * that every rank returns the error; a rank that dies is handled by the launcher (MPICH's hydra ends
 * the job when a rank exits without MPI_Finalize). */
#define _GNU_SOURCE /* sched_getaffinity */
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_int.h"
#include "wl_mpi.h"

enum { AR_MPI = 0, AR_FLAT, AR_RING, AR_OVERLAP };
static const char *const ar_names[] = {"mpi", "flat", "ring", "overlap"};

static const bkm_train_param_t tr_params[] = {
    {"epochs", "10", "passes over the training set (1..1000)"},
    {"batch", "128", "global batch (1..65536), split evenly over the ranks: must be a multiple of the rank count"},
    {"lr", "auto", "learning rate; auto = 0.02 (cnn: the seed's 0.01 x its 2 ranks' summed gradients, as our "
                   "gradients are averaged) or 0.05 (mlp)"},
    {"momentum", "auto", "SGD momentum in [0, 1); auto = 0.5 (cnn, the seed's) or 0.9 (mlp)"},
    {"model", "cnn", "cnn (the seed's LeNet-like network, 21,840 parameters) or mlp (784-256-10, 203,530)"},
    {"dropout", "auto", "probability of the cnn's two dropouts (Dropout2d after conv2, dropout after fc1) in "
                        "[0, 1); auto = 0.5 (the seed's) for cnn, 0 for mlp; 0 turns them off"},
    {"allreduce", "flat", "mpi (MPI_Allreduce per tensor) | flat (one fused buffer) | ring (own ring: reduce-scatter "
                          "+ allgather) | overlap (buckets started with MPI_Iallreduce during backward)"},
    {"bucket_kb", "32", "overlap: bucket size in KiB (1..1048576)"},
    {"reduce", "mean", "mean (gradients averaged over the ranks) | sum (the seed's: the learning rate times P)"},
    {"data", "/usr/share/datasets/fashion-mnist", "folder of the four IDX files (gzip or plain): MNIST or any IDX set"},
    {"trace", "0", "1: record the loss of every step (step_losses in the JSON)"},
    {"verbose_ranks", "0", "1: every rank prints its own lines, prefixed [rank/size]"},
    {"seed", "1234", "seed of the initial parameters and the shuffling"},
    {"backend", "native", "native | onednn (oneDNN runs training steps; evaluation runs native)"},
    {"bcast", "start", "start: broadcast the parameters from rank 0 once; epoch: at every epoch (the seed)"},
    {"micro", "auto", "micro-batch in images: each rank runs its B/P slice as micro-batches of this size, sums "
                      "their gradients in double in a fixed tree over the micro-batch index and allreduces the "
                      "double partials, so P=1 and P>1 compute the same gradient (auto = gcd(B/P, 32): 32 at "
                      "B=128 for P=1,2,4; it must divide B/P); 0 = off: one float step over the whole slice "
                      "and a float allreduce (the summation order then depends on P)"},
    {"train_limit", "0", "use only the first N training images (0 = all)"},
    {"test_limit", "0", "use only the first N test images (0 = all)"},
};
#define TR_NPARAMS (sizeof tr_params / sizeof tr_params[0])

const bkm_train_param_t *bkm_train_params(size_t *n)
{
    *n = TR_NPARAMS;
    return tr_params;
}

typedef struct tr_cfg {
    int epochs, batch, mlp, algo, bucket_kb, reduce_sum, trace, verbose_ranks, onednn, bcast_epoch;
    int micro; /* -1 = auto */
    double lr, momentum, dropout;
    long long seed, train_limit, test_limit;
    const char *data;
} tr_cfg_t;

static const char *tr_val(const bkm_wl_config_t *cfg, const char *key)
{
    const char *v = cfg ? bkm_wl_config_get(cfg, key) : NULL;
    for (size_t i = 0; !v && i < TR_NPARAMS; i++)
        if (strcmp(tr_params[i].name, key) == 0)
            v = tr_params[i].def;
    return v;
}

static int tr_int(const bkm_wl_config_t *cfg, const char *key, long long lo, long long hi, long long *out,
                  bkm_err_t *err)
{
    const char *v = tr_val(cfg, key);
    if (bkm_parse_int(v, lo, hi, out) < 0)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter %s=%s is not an integer in [%lld, %lld]", key, v,
                           lo, hi);
    return BKM_OK;
}

static int tr_num(const bkm_wl_config_t *cfg, const char *key, double lo, double hi, double autov, double *out,
                  bkm_err_t *err)
{
    const char *v = tr_val(cfg, key);
    if (strcmp(v, "auto") == 0) {
        *out = autov;
        return BKM_OK;
    }
    if (bkm_parse_double(v, out) < 0 || !(*out >= lo && *out < hi))
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter %s=%s is not a number in [%g, %g)", key, v, lo, hi);
    return BKM_OK;
}

static int tr_choice(const bkm_wl_config_t *cfg, const char *key, const char *const *names, int n, int *out,
                     bkm_err_t *err)
{
    const char *v = tr_val(cfg, key);
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter %s=%s is not one of the choices (%s)", key, v,
                       strcmp(key, "allreduce") == 0 ? "mpi|flat|ring|overlap" : "see --help");
}

static int tr_parse(const bkm_wl_config_t *cfg, tr_cfg_t *c, bkm_err_t *err)
{
    static const char *const models[] = {"cnn", "mlp"}, *const reds[] = {"mean", "sum"},
                             *const bools[] = {"0", "1"}, *const bes[] = {"native", "onednn"},
                             *const bcasts[] = {"start", "epoch"};
    long long v;
    int rc;
    memset(c, 0, sizeof *c);
    for (int i = 0; cfg && i < cfg->n; i++) {
        size_t j = 0;
        while (j < TR_NPARAMS && strcmp(tr_params[j].name, cfg->kv[i].key) != 0)
            j++;
        if (j == TR_NPARAMS)
            return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: unknown parameter '%s'", cfg->kv[i].key);
    }
    if ((rc = tr_int(cfg, "epochs", 1, 1000, &v, err)) < 0)
        return rc;
    c->epochs = (int)v;
    if ((rc = tr_int(cfg, "batch", 1, 65536, &v, err)) < 0)
        return rc;
    c->batch = (int)v;
    if ((rc = tr_choice(cfg, "model", models, 2, &c->mlp, err)) < 0 ||
        (rc = tr_num(cfg, "lr", 0.0, 1e3, c->mlp ? 0.05 : 0.02, &c->lr, err)) < 0 ||
        (rc = tr_num(cfg, "momentum", 0.0, 1.0, c->mlp ? 0.9 : 0.5, &c->momentum, err)) < 0 ||
        (rc = tr_num(cfg, "dropout", 0.0, 1.0, c->mlp ? 0.0 : 0.5, &c->dropout, err)) < 0 ||
        (rc = tr_choice(cfg, "allreduce", ar_names, 4, &c->algo, err)) < 0 ||
        (rc = tr_choice(cfg, "reduce", reds, 2, &c->reduce_sum, err)) < 0 ||
        (rc = tr_choice(cfg, "trace", bools, 2, &c->trace, err)) < 0 ||
        (rc = tr_choice(cfg, "verbose_ranks", bools, 2, &c->verbose_ranks, err)) < 0 ||
        (rc = tr_choice(cfg, "backend", bes, 2, &c->onednn, err)) < 0 ||
        (rc = tr_choice(cfg, "bcast", bcasts, 2, &c->bcast_epoch, err)) < 0 ||
        (rc = tr_int(cfg, "seed", 0, INT64_MAX, &c->seed, err)) < 0 ||
        (rc = tr_int(cfg, "train_limit", 0, INT32_MAX, &c->train_limit, err)) < 0 ||
        (rc = tr_int(cfg, "test_limit", 0, INT32_MAX, &c->test_limit, err)) < 0 ||
        (rc = tr_int(cfg, "bucket_kb", 1, 1 << 20, &v, err)) < 0)
        return rc;
    c->bucket_kb = (int)v;
    c->micro = -1;
    if (strcmp(tr_val(cfg, "micro"), "auto") != 0) {
        if ((rc = tr_int(cfg, "micro", 0, 65536, &v, err)) < 0)
            return rc;
        c->micro = (int)v;
    }
    if (c->lr <= 0.0)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter lr=%s must be positive", tr_val(cfg, "lr"));
    if (c->dropout != 0.0 && c->mlp)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter dropout=%s: model=mlp has no dropout layer",
                           tr_val(cfg, "dropout"));
    if (c->dropout != 0.0 && c->onednn)
        return bkm_err_set(err, BKM_EINVAL,
                           "fmnist-sgd: parameter dropout=%s with backend=onednn: training-mode dropout runs on the "
                           "native engine only (dropout=0 turns it off)",
                           tr_val(cfg, "dropout"));
    if (c->onednn && c->algo == AR_OVERLAP)
        return bkm_err_set(err, BKM_EINVAL,
                           "fmnist-sgd: allreduce=overlap needs backend=native (oneDNN's gradients reach the flat "
                           "array only after the whole backward)");
    c->data = tr_val(cfg, "data");
    if (!*c->data)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: parameter data= is empty");
    return BKM_OK;
}

int bkm_train_config_check(const bkm_wl_config_t *cfg, bkm_err_t *err)
{
    tr_cfg_t c;
    return tr_parse(cfg, &c, err);
}

/* ---------------------------------------------------------------------------------------- */

/* One rank's training state. */
typedef struct tr {
    tr_cfg_t c;
    int rank, size, threads;
    MPI_Comm comm;
    bkm_mnist_t m;
    int64_t n_train, n_test, steps;  /* steps per epoch */
    int local_b;                     /* B / P */
    float mean, inv_std;             /* input normalisation (training-set pixel statistics) */
    bkm_net_t net;
    bkm_net_exec_t *ex, *ev;         /* training (local batch) and evaluation (native) executors */
    int64_t ev_b;
    float *fused, *tmp, *vel;        /* reduced gradients, ring scratch, momentum */
    /* exact gradients (micro > 0): k micro-batches of micro images per rank, summed in double in a
     * binary tree over the micro-batch index (acc: n_lev levels of partial sums), the rank's sum in
     * dsum, allreduced in double (dtmp: ring scratch) */
    int micro, n_micro, n_lev, cur_k;
    double *acc, *dsum, *dtmp;
    int64_t *perm;
    /* overlap */
    int nb;                          /* buckets */
    size_t b_lo[BKM_NET_MAX_LAYERS], b_hi[BKM_NET_MAX_LAYERS];
    int b_first[BKM_NET_MAX_LAYERS]; /* lowest layer of the bucket: its hook starts the bucket */
    MPI_Request req[BKM_NET_MAX_LAYERS];
    int n_req, hook_err;
    double hook_s;                   /* time spent inside hooks (copy + start + test) this step */
    double ov_done, ov_all, ov_hook; /* this epoch: gradient bytes whose bucket's allreduce completed before
                                        backward ended, all bytes reduced, seconds inside the hooks */
    double *step_ms;                 /* per-step time (compute + comm), all epochs */
    double *step_loss;               /* trace=1: global loss per step */
    bkm_train_log_fn log;
    void *log_ctx;
    const bkm__train_hooks_t *hooks; /* tests only (NULL otherwise) */
} tr_t;

static double now_s(void)
{
    return (double)bkm_now_ns() * 1e-9;
}

static int mpi_fail(int mrc, const char *what, bkm_err_t *err)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(mrc, msg, &len);
    return bkm_err_set(err, BKM_EDEP, "fmnist-sgd: %s failed: %s", what, msg);
}

static void tr_say(tr_t *t, int all, const char *fmt, ...) BKM_PRINTF(3, 4);
static void tr_say(tr_t *t, int all, const char *fmt, ...)
{
    char line[512];
    int n = 0;
    va_list ap;
    if (!t->log || (t->rank != 0 && !(all && t->c.verbose_ranks)))
        return;
    if (t->c.verbose_ranks)
        n = snprintf(line, sizeof line, "[%d/%d] ", t->rank, t->size);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    t->log(t->log_ctx, line);
}

/* Image @p i of @p x, normalised, into @p dst. */
static void tr_image(const tr_t *t, const bkm_idx_t *x, int64_t i, float *dst)
{
    size_t px = (size_t)(t->m.h * t->m.w);
    const unsigned char *s = x->data + (size_t)i * px;
    for (size_t k = 0; k < px; k++)
        dst[k] = ((float)s[k] * (1.0f / 255.0f) - t->mean) * t->inv_std;
}

/* PyTorch's default initialisation (kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * for weights and biases alike), from the seed. */
static void tr_init_params(tr_t *t, float *p)
{
    for (int i = 0; i < t->net.d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &t->net.li[i];
        int64_t fan_in;
        float bound;
        if (!li->n_wei)
            continue;
        fan_in = li->n_wei / t->net.d.layer[i].out;
        bound = (float)(1.0 / sqrt((double)fan_in));
        bkm__wl_fill_uniform(p + li->wei_off, (size_t)li->n_wei, bound, (uint64_t)t->c.seed, (uint64_t)(2 * i));
        bkm__wl_fill_uniform(p + li->bias_off, (size_t)li->n_bias, bound, (uint64_t)t->c.seed, (uint64_t)(2 * i + 1));
    }
}

/* The flat range of parameter layer @p i (weights and bias, with the alignment gap between). */
static void tr_layer_range(const bkm_net_t *net, int i, size_t *lo, size_t *hi)
{
    const bkm_net_layer_info_t *li = &net->li[i];
    size_t we = li->wei_off + (size_t)li->n_wei, be = li->bias_off + (size_t)li->n_bias;
    *lo = li->wei_off < li->bias_off ? li->wei_off : li->bias_off;
    *hi = we > be ? we : be;
}

/* Buckets for overlap: parameter layers in backward order, a bucket closed once it holds
 * bucket_kb KiB (or at the first layer); each bucket is one contiguous flat range. */
static void tr_buckets(tr_t *t)
{
    size_t cap = (size_t)t->c.bucket_kb * 1024 / sizeof(float), lo, hi, b_hi = 0;
    int open = 0;
    t->nb = 0;
    for (int i = 0; i < BKM_NET_MAX_LAYERS; i++)
        t->b_first[i] = -1;
    for (int i = t->net.d.n_layers - 1; i >= 0; i--) {
        int last_param = 1;
        if (!t->net.li[i].n_wei)
            continue;
        tr_layer_range(&t->net, i, &lo, &hi);
        if (!open) {
            b_hi = hi;
            open = 1;
        }
        for (int j = i - 1; j >= 0; j--)
            if (t->net.li[j].n_wei)
                last_param = 0;
        if (b_hi - lo >= cap || last_param) {
            t->b_lo[t->nb] = lo;
            t->b_hi[t->nb] = b_hi;
            t->b_first[i] = t->nb++;
            open = 0;
        }
    }
}

/* Exact gradients: add micro-batch @p k's gradients (elements [lo, hi)) to the tree of partial sums.
 * Level j holds the sum of 2^j consecutive micro-batches; like a binary counter, micro-batch k merges
 * with the levels of k's trailing one bits (earlier partial on the left) and lands on the next. */
static void tr_acc_push(tr_t *t, int k, size_t lo, size_t hi)
{
    const float *g = bkm_net_exec_grads(t->ex, NULL);
    size_t n = t->net.n_params;
    int tz = 0;
    while (k & (1 << tz))
        tz++;
    for (size_t i = lo; i < hi; i++) {
        double c = (double)g[i];
        for (int j = 0; j < tz; j++)
            c = t->acc[(size_t)j * n + i] + c;
        t->acc[(size_t)tz * n + i] = c;
    }
}

/* After all n_micro pushes: the rank's sum of elements [lo, hi) into dsum, the levels left over
 * combined from the earliest (highest) to the latest. With 2^i micro-batches per rank this is one
 * level: P = 2 ranks then add two halves of exactly the tree one rank builds over all of them. */
static void tr_acc_final(tr_t *t, size_t lo, size_t hi)
{
    size_t n = t->net.n_params;
    int top = t->n_lev - 1;
    for (size_t i = lo; i < hi; i++) {
        double c = t->acc[(size_t)top * n + i];
        for (int j = top - 1; j >= 0; j--)
            if (t->n_micro & (1 << j))
                c = c + t->acc[(size_t)j * n + i];
        t->dsum[i] = c;
    }
}

/* Overlap: test the open buckets (MPICH progresses them only inside MPI calls); a bucket found
 * complete (its request is freed: counted once) adds its bytes to ov_done. */
static int tr_ov_test(tr_t *t)
{
    int idx[BKM_NET_MAX_LAYERS], outc = 0, mrc;
    if (t->n_req == 0)
        return MPI_SUCCESS;
    mrc = MPI_Testsome(t->n_req, t->req, &outc, idx, MPI_STATUSES_IGNORE);
    for (int i = 0; mrc == MPI_SUCCESS && outc != MPI_UNDEFINED && i < outc; i++)
        t->ov_done += (double)(t->b_hi[idx[i]] - t->b_lo[idx[i]]) * (t->micro ? sizeof(double) : sizeof(float));
    return mrc;
}

/* Gradient hook (overlap): when the lowest layer of a bucket is done, copy the bucket into the fused
 * buffer and start its MPI_Iallreduce; every call also tests the open requests so that MPICH
 * progresses them while backward continues. */
static void tr_hook(void *ctx, int layer)
{
    tr_t *t = ctx;
    double t0 = now_s();
    int b = t->b_first[layer];
    if (b >= 0 && !t->hook_err && t->cur_k == t->n_micro - 1) { /* the rank's last micro-batch */
        const float *g = bkm_net_exec_grads(t->ex, NULL);
        size_t lo = t->b_lo[b], n = t->b_hi[b] - lo;
        int mrc;
        if (t->micro) {
            tr_acc_push(t, t->cur_k, lo, lo + n);
            tr_acc_final(t, lo, lo + n);
            mrc = MPI_Iallreduce(MPI_IN_PLACE, t->dsum + lo, (int)n, MPI_DOUBLE, MPI_SUM, t->comm, &t->req[t->n_req]);
        } else {
            memcpy(t->fused + lo, g + lo, n * sizeof(float));
            mrc = MPI_Iallreduce(MPI_IN_PLACE, t->fused + lo, (int)n, MPI_FLOAT, MPI_SUM, t->comm, &t->req[t->n_req]);
        }
        if (mrc != MPI_SUCCESS)
            t->hook_err = 1;
        else
            t->n_req++;
    }
    if (tr_ov_test(t) != MPI_SUCCESS)
        t->hook_err = 1;
    t->hook_s += now_s() - t0;
}

/* Sum the gradients of the step into t->fused by the chosen algorithm. */
static int tr_reduce(tr_t *t, bkm_err_t *err)
{
    const float *g = bkm_net_exec_grads(t->ex, NULL);
    size_t n = t->net.n_params;
    int mrc = MPI_SUCCESS;
    if (t->micro && t->c.algo != AR_OVERLAP) { /* exact: the double partials */
        tr_acc_final(t, 0, n);
        if (t->c.algo == AR_RING)
            mrc = bkm__ring_allreduce_f64(t->dsum, n, t->dtmp, t->comm);
        else if (t->c.algo == AR_FLAT)
            mrc = MPI_Allreduce(MPI_IN_PLACE, t->dsum, (int)n, MPI_DOUBLE, MPI_SUM, t->comm);
        else
            for (int i = 0; i < t->net.d.n_layers && mrc == MPI_SUCCESS; i++) {
                const bkm_net_layer_info_t *li = &t->net.li[i];
                if (!li->n_wei)
                    continue;
                mrc = MPI_Allreduce(MPI_IN_PLACE, t->dsum + li->wei_off, (int)li->n_wei, MPI_DOUBLE, MPI_SUM,
                                    t->comm);
                if (mrc == MPI_SUCCESS)
                    mrc = MPI_Allreduce(MPI_IN_PLACE, t->dsum + li->bias_off, (int)li->n_bias, MPI_DOUBLE, MPI_SUM,
                                        t->comm);
            }
        return mrc == MPI_SUCCESS ? BKM_OK : mpi_fail(mrc, ar_names[t->c.algo], err);
    }
    switch (t->c.algo) {
    case AR_MPI: /* per tensor, as the seed */
        for (int i = 0; i < t->net.d.n_layers && mrc == MPI_SUCCESS; i++) {
            const bkm_net_layer_info_t *li = &t->net.li[i];
            if (!li->n_wei)
                continue;
            mrc = MPI_Allreduce(g + li->wei_off, t->fused + li->wei_off, (int)li->n_wei, MPI_FLOAT, MPI_SUM, t->comm);
            if (mrc == MPI_SUCCESS)
                mrc = MPI_Allreduce(g + li->bias_off, t->fused + li->bias_off, (int)li->n_bias, MPI_FLOAT, MPI_SUM,
                                    t->comm);
        }
        break;
    case AR_FLAT:
        mrc = MPI_Allreduce(g, t->fused, (int)n, MPI_FLOAT, MPI_SUM, t->comm);
        break;
    case AR_RING:
        memcpy(t->fused, g, n * sizeof(float));
        mrc = bkm__ring_allreduce_f32(t->fused, n, t->tmp, t->comm);
        break;
    default: /* overlap: the buckets were started by the hook */
        if (t->hook_err)
            return bkm_err_set(err, BKM_EDEP, "fmnist-sgd: MPI_Iallreduce of a gradient bucket failed");
        mrc = tr_ov_test(t); /* what backward's time hid: the buckets already complete */
        for (int b = 0; b < t->nb; b++)
            t->ov_all += (double)(t->b_hi[b] - t->b_lo[b]) * (t->micro ? sizeof(double) : sizeof(float));
        if (mrc == MPI_SUCCESS)
            mrc = MPI_Waitall(t->n_req, t->req, MPI_STATUSES_IGNORE);
        if (mrc == MPI_SUCCESS && t->n_req != t->nb)
            return bkm_err_set(err, BKM_EDEP, "fmnist-sgd: %d of %d gradient buckets were started", t->n_req, t->nb);
        t->n_req = 0;
        break;
    }
    return mrc == MPI_SUCCESS ? BKM_OK : mpi_fail(mrc, ar_names[t->c.algo], err);
}

/* Every rank agrees on the worst status: an error on any rank becomes an error on all. */
static int tr_agree(tr_t *t, int rc, bkm_err_t *err)
{
    int worst = rc, mrc = MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, t->comm);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(mrc, "MPI_Allreduce (status)", err);
    if (rc == BKM_OK && worst < 0)
        return bkm_err_set(err, worst, "fmnist-sgd: another rank failed (see its message)");
    return rc;
}

static int tr_setup(tr_t *t, bkm_err_t *err)
{
    bkm_net_desc_t d;
    double s = 0.0, s2 = 0.0;
    size_t npx;
    int rc;
    if ((rc = bkm_mnist_load(t->c.data, &t->m, err)) < 0)
        return rc;
    if (t->m.h != 28 || t->m.w != 28)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: data=%s has %lldx%lld images; the models take 28x28",
                           t->c.data, (long long)t->m.h, (long long)t->m.w);
    t->n_train = t->c.train_limit && t->c.train_limit < t->m.n_train ? t->c.train_limit : t->m.n_train;
    t->n_test = t->c.test_limit && t->c.test_limit < t->m.n_test ? t->c.test_limit : t->m.n_test;
    if (t->c.batch % t->size)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: batch=%d is not a multiple of the %d ranks", t->c.batch,
                           t->size);
    t->local_b = t->c.batch / t->size;
    t->micro = t->c.micro;
    if (t->micro < 0) {
        int a = t->local_b, b = 32;
        while (b) {
            int r = a % b;
            a = b;
            b = r;
        }
        t->micro = a;
    }
    if (t->micro > 0 && t->local_b % t->micro)
        return bkm_err_set(err, BKM_EINVAL,
                           "fmnist-sgd: parameter micro=%d does not divide the per-rank batch %d (batch=%d over %d "
                           "ranks)",
                           t->micro, t->local_b, t->c.batch, t->size);
    t->n_micro = t->micro ? t->local_b / t->micro : 1;
    for (t->n_lev = 1; (1 << t->n_lev) <= t->n_micro; t->n_lev++)
        ;
    t->steps = t->n_train / t->c.batch;
    if (t->steps < 1)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: batch=%d is larger than the %lld training images", t->c.batch,
                           (long long)t->n_train);
    npx = (size_t)(t->n_train * t->m.h * t->m.w);
    for (size_t i = 0; i < npx; i++) {
        double v = t->m.train_x.data[i] / 255.0;
        s += v;
        s2 += v * v;
    }
    t->mean = (float)(s / (double)npx);
    t->inv_std = (float)(1.0 / sqrt(fmax(s2 / (double)npx - (s / (double)npx) * (s / (double)npx), 1e-12)));

    if (t->c.mlp)
        bkm_net_desc_mnist_mlp(&d, t->micro ? t->micro : t->local_b);
    else
        bkm_net_desc_mnist_cnn(&d, t->micro ? t->micro : t->local_b, (float)t->c.dropout);
    if ((rc = bkm_net_init(&t->net, &d, err)) < 0 ||
        (rc = bkm_net_exec_create(&t->ex, &t->net, t->c.onednn ? BKM_NET_ONEDNN : BKM_NET_NATIVE, NULL, err)) < 0)
        return rc;
    t->ev_b = t->n_test < 250 ? t->n_test : 250;
    if (t->c.mlp)
        bkm_net_desc_mnist_mlp(&d, t->ev_b);
    else
        bkm_net_desc_mnist_cnn(&d, t->ev_b, (float)t->c.dropout);
    {
        bkm_net_t evn;
        if ((rc = bkm_net_init(&evn, &d, err)) < 0 || (rc = bkm_net_exec_create(&t->ev, &evn, BKM_NET_NATIVE, NULL, err)) < 0)
            return rc;
    }
    t->fused = bkm_calloc(t->net.n_params, sizeof(float));
    t->vel = bkm_calloc(t->net.n_params, sizeof(float));
    t->tmp = bkm_calloc(t->net.n_params / (size_t)t->size + 1, sizeof(float));
    t->perm = bkm_calloc((size_t)t->m.n_train, sizeof(int64_t));
    t->step_ms = bkm_calloc((size_t)(t->steps * t->c.epochs), sizeof(double));
    t->step_loss = t->c.trace ? bkm_calloc((size_t)(t->steps * t->c.epochs), sizeof(double)) : NULL;
    if (t->micro) {
        t->acc = bkm_calloc((size_t)t->n_lev * t->net.n_params, sizeof(double));
        t->dsum = bkm_calloc(t->net.n_params, sizeof(double));
        t->dtmp = bkm_calloc(t->net.n_params / (size_t)t->size + 1, sizeof(double));
        if (!t->acc || !t->dsum || !t->dtmp)
            return bkm_err_set(err, BKM_ENOMEM, "fmnist-sgd: out of memory");
    }
    if (!t->fused || !t->vel || !t->tmp || !t->perm || !t->step_ms || (t->c.trace && !t->step_loss))
        return bkm_err_set(err, BKM_ENOMEM, "fmnist-sgd: out of memory");
    if (t->net.n_params > (size_t)INT32_MAX)
        return bkm_err_set(err, BKM_EINVAL, "fmnist-sgd: %zu parameters exceed one MPI count", t->net.n_params);
    tr_buckets(t);
    if (t->c.algo == AR_OVERLAP)
        bkm_net_exec_set_grad_hook(t->ex, tr_hook, t);
    if (t->rank == 0)
        tr_init_params(t, bkm_net_exec_params(t->ex, NULL));
    return BKM_OK;
}

/* The epoch's permutation, the same on every rank (Fisher-Yates from the seed and the epoch). */
static void tr_shuffle(tr_t *t, int epoch)
{
    for (int64_t i = 0; i < t->n_train; i++)
        t->perm[i] = i;
    for (int64_t i = t->n_train - 1; i > 0; i--) {
        int64_t j = (int64_t)(bkm__wl_hash((uint64_t)t->c.seed, 1000 + (uint64_t)epoch, (uint64_t)i) %
                              (uint64_t)(i + 1));
        int64_t x = t->perm[i];
        t->perm[i] = t->perm[j];
        t->perm[j] = x;
    }
}

/* Correct predictions of this rank's share of the test set (batches b with b % P == rank). */
static int tr_eval(tr_t *t, double *correct, bkm_err_t *err)
{
    float *in = bkm_net_exec_input(t->ev, NULL), *p = bkm_net_exec_params(t->ev, NULL);
    const float *logits;
    int64_t nb = (t->n_test + t->ev_b - 1) / t->ev_b, px = t->m.h * t->m.w, nc = t->net.classes;
    int rc;
    memcpy(p, bkm_net_exec_params(t->ex, NULL), t->net.n_params * sizeof(float));
    *correct = 0.0;
    for (int64_t b = t->rank; b < nb; b += t->size) {
        int64_t n = t->n_test - b * t->ev_b < t->ev_b ? t->n_test - b * t->ev_b : t->ev_b;
        for (int64_t j = 0; j < t->ev_b; j++) /* a last partial batch repeats image 0 (not counted) */
            tr_image(t, &t->m.test_x, j < n ? b * t->ev_b + j : 0, in + j * px);
        if ((rc = bkm_net_exec_forward(t->ev, &logits, err)) < 0)
            return rc;
        for (int64_t j = 0; j < n; j++) {
            int64_t best = 0;
            for (int64_t k = 1; k < nc; k++)
                if (logits[j * nc + k] > logits[j * nc + best])
                    best = k;
            *correct += best == t->m.test_y.data[b * t->ev_b + j];
        }
    }
    return BKM_OK;
}

/* Position-weighted checksum of the parameters (a swap of two values changes it). */
static double tr_checksum(tr_t *t)
{
    const float *p = bkm_net_exec_params(t->ex, NULL);
    double s = 0.0;
    for (size_t i = 0; i < t->net.n_params; i++)
        s += (double)p[i] * (double)(1 + i % 7);
    return s;
}

/* The median of @p v (sorted in place); 0 when empty. */
static double median_of(double *v, size_t n)
{
    return n ? bkm_median(v, n) : 0.0;
}

/* One training step of global batch @p b of epoch @p e; adds its loss, compute and comm time. */
static int tr_step(tr_t *t, int e, int64_t b, double *loss_sum, double *comp, double *comm, bkm_err_t *err)
{
    float *in = bkm_net_exec_input(t->ex, NULL), *p = bkm_net_exec_params(t->ex, NULL);
    int32_t *lab = bkm_net_exec_labels(t->ex, NULL);
    int64_t px = t->m.h * t->m.w, base = b * t->c.batch + (int64_t)t->rank * t->local_b;
    int64_t mb = t->micro ? t->micro : t->local_b;
    bkm_net_step_t st;
    double t0, t1, t2, t3, loss = 0.0;
    /* the gradient sums are means over micro-batches (or the local batch): mean over the global batch
     * = sum / (micro-batches in the global batch); reduce=sum multiplies by P */
    double scale = (t->c.reduce_sum ? (double)t->size : 1.0) / (double)(t->n_micro * t->size);
    int rc;
    t0 = now_s();
    t->hook_s = 0.0;
    t->n_req = 0;
    t->hook_err = 0;
    for (int k = 0; k < t->n_micro; k++) {
        int64_t first = base + k * mb;
        for (int64_t j = 0; j < mb; j++) {
            int64_t s = t->perm[first + j];
            tr_image(t, &t->m.train_x, s, in + j * px);
            lab[j] = t->m.train_y.data[s];
        }
        /* dropout masks from the step and the position in the global batch: the same whichever rank */
        bkm_net_exec_set_dropout(t->ex, bkm__wl_hash((uint64_t)t->c.seed, 77, (uint64_t)((int64_t)e * t->steps + b)),
                                 first);
        t->cur_k = k;
        if ((rc = bkm_net_exec_prepare(t->ex, err)) < 0 || (rc = bkm_net_exec_step(t->ex, &st, err)) < 0 ||
            (rc = bkm_net_exec_finish(t->ex, err)) < 0)
            return rc;
        if (t->micro && !(t->c.algo == AR_OVERLAP && k == t->n_micro - 1)) /* overlap: the hook pushes the last */
            tr_acc_push(t, k, 0, t->net.n_params);
        loss += st.loss;
    }
    st.loss = loss / t->n_micro;
    t1 = now_s();
    if ((rc = tr_reduce(t, err)) < 0)
        return rc;
    t2 = now_s();
    if (t->micro)
        for (size_t i = 0; i < t->net.n_params; i++)
            t->fused[i] = (float)(t->dsum[i] * scale);
    else if (scale != 1.0)
        for (size_t i = 0; i < t->net.n_params; i++)
            t->fused[i] *= (float)scale;
    bkm_kern_sgd_step(t->net.n_params, p, t->fused, t->vel, (float)t->c.lr, (float)t->c.momentum, 0.0f);
    t3 = now_s();
    *comp += (t1 - t0 - t->hook_s) + (t3 - t2);
    *comm += (t2 - t1) + t->hook_s;
    t->ov_hook += t->hook_s;
    *loss_sum += st.loss;
    t->step_ms[(int64_t)e * t->steps + b] = (t3 - t0) * 1e3;
    if (t->c.trace) {
        double g = 0.0;
        int mrc = MPI_Allreduce(&st.loss, &g, 1, MPI_DOUBLE, MPI_SUM, t->comm);
        if (mrc != MPI_SUCCESS)
            return mpi_fail(mrc, "MPI_Allreduce (loss)", err);
        t->step_loss[(int64_t)e * t->steps + b] = g / t->size;
    }
    return BKM_OK;
}

/* The figures of epoch @p e: this rank's sums @p loc and their sums over the ranks @p glob (loss,
 * accuracy, compute and comm seconds, overlap bytes and hook seconds), the parameter checksum
 * @p cs and the epoch's wall seconds; said on rank 0 (and each rank's own on the others) and
 * written as one object of the "epochs" array. */
static void tr_epoch_report(tr_t *t, bkm_json_w_t *w, int e, const double *loc, const double *glob, double cs,
                            double wall)
{
    double loss = glob[0] / t->size / (double)t->steps, acc = glob[1] / (double)t->n_test;
    double sps = (double)(t->steps * t->c.batch) / wall, comm = glob[3] / t->size, comp = glob[2] / t->size;
    tr_say(t, 0, "epoch %d/%d: loss %.4f  test accuracy %.4f  %.0f samples/s  compute %.2f s  comm %.2f s "
                 "(mean over ranks)",
           e + 1, t->c.epochs, loss, acc, sps, comp, comm);
    if (t->c.algo == AR_OVERLAP)
        tr_say(t, 0, "epoch %d/%d: overlap: %.1f%% of the gradient bytes were reduced before backward ended "
                     "(hidden); exposed comm %.2f s = wait after backward %.2f s + inside the hooks %.2f s",
               e + 1, t->c.epochs, glob[5] > 0 ? 100.0 * glob[4] / glob[5] : 0.0, comm,
               comm - glob[6] / t->size, glob[6] / t->size);
    if (t->rank != 0)
        tr_say(t, 1, "epoch %d/%d: local loss %.4f  compute %.2f s  comm %.2f s", e + 1, t->c.epochs,
               loc[0] / (double)t->steps, loc[2], loc[3]);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "epoch");
    bkm_json_int(w, e + 1);
    bkm_json_key(w, "loss");
    bkm_json_double(w, loss);
    bkm_json_key(w, "test_accuracy");
    bkm_json_double(w, acc);
    bkm_json_key(w, "samples_per_s");
    bkm_json_double(w, sps);
    bkm_json_key(w, "comm_s");
    bkm_json_double(w, comm);
    bkm_json_key(w, "compute_s");
    bkm_json_double(w, comp);
    bkm_json_key(w, "checksum");
    bkm_json_double(w, cs);
    if (t->c.algo == AR_OVERLAP) { /* how much communication backward hid */
        bkm_json_key(w, "overlap");
        bkm_json_obj_begin(w);
        bkm_json_key(w, "reduced_during_backward_share");
        bkm_json_double(w, glob[5] > 0 ? glob[4] / glob[5] : 0.0);
        bkm_json_key(w, "bytes_per_step");
        bkm_json_double(w, glob[5] / t->size / (double)t->steps);
        bkm_json_key(w, "buckets");
        bkm_json_int(w, t->nb);
        bkm_json_key(w, "exposed_wait_s");
        bkm_json_double(w, comm - glob[6] / t->size);
        bkm_json_key(w, "hook_s");
        bkm_json_double(w, glob[6] / t->size);
        bkm_json_obj_end(w);
    }
    bkm_json_obj_end(w);
}

/* "step_ms": each rank's median step time, then the median and max over ranks (gathered on rank 0). */
static int tr_step_times(tr_t *t, bkm_json_w_t *w, int64_t total, bkm_err_t *err)
{
    double *meds = NULL;
    int mrc;
    double mine = median_of(t->step_ms, (size_t)total);
    if (!(meds = bkm_calloc((size_t)t->size, sizeof(double))))
        return bkm_err_set(err, BKM_ENOMEM, "fmnist-sgd: out of memory");
    if ((mrc = MPI_Gather(&mine, 1, MPI_DOUBLE, meds, 1, MPI_DOUBLE, 0, t->comm)) != MPI_SUCCESS) {
        bkm_free(meds);
        return mpi_fail(mrc, "MPI_Gather (step times)", err);
    }
    bkm_json_key(w, "step_ms");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "per_rank_median");
    bkm_json_arr_begin(w);
    for (int r = 0; r < t->size; r++)
        bkm_json_double(w, meds[r]);
    bkm_json_arr_end(w);
    bkm_json_key(w, "max");
    qsort(meds, (size_t)t->size, sizeof *meds, bkm_cmp_double);
    bkm_json_double(w, meds[t->size - 1]);
    bkm_json_key(w, "median");
    bkm_json_double(w, median_of(meds, (size_t)t->size));
    bkm_json_obj_end(w);
    bkm_free(meds);
    return BKM_OK;
}

static int tr_train(tr_t *t, bkm_json_w_t *w, bkm_err_t *err)
{
    int64_t total = t->steps * t->c.epochs;
    int rc = BKM_OK, mrc;
    tr_say(t, 0, "fmnist-sgd: model %s (%lld parameters, dropout %g), %d rank%s x %d thread%s, batch %d (%d per rank, micro-batch %d%s), "
                 "allreduce %s, reduce %s, lr %g, momentum %g, %lld steps/epoch, data %s (%lld train, %lld test)",
           t->c.mlp ? "mlp" : "cnn", (long long)t->net.n_trainable, t->c.dropout, t->size, t->size == 1 ? "" : "s", t->threads,
           t->threads == 1 ? "" : "s", t->c.batch, t->local_b, t->micro ? t->micro : t->local_b, t->micro ? ", exact gradients" : "",
           ar_names[t->c.algo], t->c.reduce_sum ? "sum" : "mean",
           t->c.lr, t->c.momentum, (long long)t->steps, t->c.data, (long long)t->n_train, (long long)t->n_test);
    bkm_json_key(w, "epochs");
    bkm_json_arr_begin(w);
    for (int e = 0; e < t->c.epochs; e++) {
        double loc[7] = {0}, glob[7] = {0}, cs[2], csm[2], t0, wall;
        if (e == 0 || t->c.bcast_epoch) {
            mrc = MPI_Bcast(bkm_net_exec_params(t->ex, NULL), (int)t->net.n_params, MPI_FLOAT, 0, t->comm);
            if (mrc != MPI_SUCCESS)
                return mpi_fail(mrc, "MPI_Bcast (parameters)", err);
        }
        tr_shuffle(t, e);
        t->ov_done = t->ov_all = t->ov_hook = 0.0;
        t0 = now_s();
        for (int64_t b = 0; b < t->steps; b++)
            if ((rc = tr_step(t, e, b, &loc[0], &loc[2], &loc[3], err)) < 0)
                return rc;
        wall = now_s() - t0;
        if ((rc = tr_eval(t, &loc[1], err)) < 0)
            return rc;
        if (t->hooks && t->hooks->perturb_epoch == e + 1 && t->hooks->perturb_rank == t->rank) {
            float *p = bkm_net_exec_params(t->ex, NULL);
            p[0] = nextafterf(p[0], INFINITY); /* one ulp of one parameter */
        }
        cs[0] = tr_checksum(t);
        cs[1] = -cs[0];
        loc[4] = t->ov_done;
        loc[5] = t->ov_all;
        loc[6] = t->ov_hook;
        if ((mrc = MPI_Allreduce(loc, glob, 7, MPI_DOUBLE, MPI_SUM, t->comm)) != MPI_SUCCESS ||
            (mrc = MPI_Allreduce(cs, csm, 2, MPI_DOUBLE, MPI_MAX, t->comm)) != MPI_SUCCESS)
            return mpi_fail(mrc, "MPI_Allreduce (epoch figures)", err);
        if (csm[0] != -csm[1])
            return bkm_err_set(err, BKM_EVERIFY,
                               "fmnist-sgd: epoch %d: the parameters differ between ranks (checksums %.17g .. %.17g, "
                               "rank %d has %.17g)",
                               e + 1, -csm[1], csm[0], t->rank, cs[0]);
        tr_epoch_report(t, w, e, loc, glob, cs[0], wall);
    }
    bkm_json_arr_end(w);
    if (t->c.trace) {
        bkm_json_key(w, "step_losses");
        bkm_json_arr_begin(w);
        for (int64_t i = 0; i < total; i++)
            bkm_json_double(w, t->step_loss[i]);
        bkm_json_arr_end(w);
    }
    return tr_step_times(t, w, total, err);
}

/* The CPUs this rank's OpenMP threads may run on (the union of each thread's own mask). */
static void tr_rank_cpus(bkm_cpuset_t *out)
{
    bkm_cpuset_zero(out);
#pragma omp parallel
    {
        cpu_set_t cs;
        bkm_cpuset_t mine;
        bkm_cpuset_zero(&mine);
        if (sched_getaffinity(0, sizeof cs, &cs) == 0)
            for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
                if (CPU_ISSET(c, &cs))
                    bkm_cpuset_set(&mine, c);
#pragma omp critical
        bkm_cpuset_or(out, &mine);
    }
}

/* Every rank's host and CPUs (gathered on rank 0) into the JSON and one text line; whether two
 * ranks on one host may run on the same CPU. */
static int tr_binding(tr_t *t, bkm_json_w_t *w, bkm_err_t *err)
{
    bkm_cpuset_t mine, *all = NULL;
    char host[MPI_MAX_PROCESSOR_NAME] = "", *hosts = NULL;
    int len = 0, share = 0, mrc, rc = BKM_OK;
    bkm_buf_t line, cpus;
    tr_rank_cpus(&mine);
    MPI_Get_processor_name(host, &len);
    if (t->rank == 0) {
        all = bkm_calloc((size_t)t->size, sizeof *all);
        hosts = bkm_calloc((size_t)t->size, MPI_MAX_PROCESSOR_NAME);
        if (!all || !hosts)
            rc = bkm_err_set(err, BKM_ENOMEM, "fmnist-sgd: out of memory");
    }
    /* every rank takes part in the gathers (rank 0's allocation failure is reported after) */
    mrc = MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, all ? (int)sizeof mine : 0, MPI_BYTE, 0, t->comm);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, hosts ? MPI_MAX_PROCESSOR_NAME : 0, MPI_CHAR,
                         0, t->comm);
    if (mrc != MPI_SUCCESS)
        rc = mpi_fail(mrc, "MPI_Gather (binding)", err);
    if (rc < 0 || t->rank != 0)
        goto out;
    bkm_buf_init(&line);
    bkm_buf_init(&cpus);
    bkm_json_key(w, "rank_binding");
    bkm_json_arr_begin(w);
    for (int r = 0; r < t->size; r++) {
        bkm_cpuset_t x;
        for (int q = 0; q < r; q++) {
            x = all[r];
            bkm_cpuset_and(&x, &all[q]);
            if (strcmp(hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME, hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME) == 0 &&
                !bkm_cpuset_is_empty(&x))
                share = 1;
        }
        bkm_buf_free(&cpus);
        bkm_buf_init(&cpus);
        bkm_cpuset_format(&all[r], &cpus);
        bkm_json_obj_begin(w);
        bkm_json_key(w, "rank");
        bkm_json_int(w, r);
        bkm_json_key(w, "host");
        bkm_json_str(w, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        bkm_json_key(w, "cpus");
        bkm_json_str(w, bkm_buf_str(&cpus));
        bkm_json_obj_end(w);
        bkm_buf_printf(&line, "%s rank %d {%s}", r ? "," : "", r, bkm_buf_str(&cpus));
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "ranks_share_cpus");
    bkm_json_bool(w, share);
    tr_say(t, 0, "binding:%s%s", bkm_buf_str(&line),
           share ? " (ranks on one host share CPUs: bind them apart, e.g. mpiexec -bind-to core)" : "");
    bkm_buf_free(&line);
    bkm_buf_free(&cpus);
out:
    bkm_free(all);
    bkm_free(hosts);
    return rc;
}

static void tr_free(tr_t *t)
{
    bkm_net_exec_destroy(t->ex);
    bkm_net_exec_destroy(t->ev);
    bkm_mnist_free(&t->m);
    bkm_free(t->fused);
    bkm_free(t->vel);
    bkm_free(t->tmp);
    bkm_free(t->acc);
    bkm_free(t->dsum);
    bkm_free(t->dtmp);
    bkm_free(t->perm);
    bkm_free(t->step_ms);
    bkm_free(t->step_loss);
}

int bkm_train_mpi_init(int *rank, int *size, bkm_err_t *err)
{
    int provided = 0, mrc, inited = 0;
    MPI_Initialized(&inited);
    if (!inited && (mrc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
        return mpi_fail(mrc, "MPI_Init_thread", err);
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_FUNNELED)
        return bkm_err_set(err, BKM_EDEP, "fmnist-sgd: MPI provides thread level %d, FUNNELED (%d) is needed",
                           provided, MPI_THREAD_FUNNELED);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank)
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (size)
        MPI_Comm_size(MPI_COMM_WORLD, size);
    return BKM_OK;
}

void bkm_train_mpi_finalize(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

int bkm_train_run(const bkm_wl_config_t *cfg, int n_threads, bkm_train_log_fn log, void *log_ctx, bkm_buf_t *json,
                  int *rank, bkm_err_t *err)
{
    return bkm__train_run_hooked(cfg, n_threads, log, log_ctx, json, rank, NULL, err);
}

int bkm__train_run_hooked(const bkm_wl_config_t *cfg, int n_threads, bkm_train_log_fn log, void *log_ctx,
                          bkm_buf_t *json, int *rank, const bkm__train_hooks_t *hooks, bkm_err_t *err)
{
    tr_t t;
    int rc, inited = 0, finalize = 0, provided = 0, mrc;
    bkm_buf_t body;
    bkm_json_w_t w;
    memset(&t, 0, sizeof t);
    bkm_buf_init(&body);
    t.log = log;
    t.log_ctx = log_ctx;
    t.hooks = hooks;
    t.threads = n_threads > 0 ? n_threads : omp_get_max_threads();
    if (rank)
        *rank = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if ((mrc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
            return mpi_fail(mrc, "MPI_Init_thread", err);
        finalize = 1;
    } else
        MPI_Query_thread(&provided);
    t.comm = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(t.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(t.comm, &t.rank);
    MPI_Comm_size(t.comm, &t.size);
    if (rank)
        *rank = t.rank;
    if (provided < MPI_THREAD_FUNNELED)
        rc = bkm_err_set(err, BKM_EDEP, "fmnist-sgd: MPI provides thread level %d, FUNNELED (%d) is needed", provided,
                         MPI_THREAD_FUNNELED);
    else if ((rc = tr_parse(cfg, &t.c, err)) == BKM_OK)
        rc = tr_setup(&t, err);
    if ((rc = tr_agree(&t, rc, err)) < 0)
        goto out;
    bkm_json_w_init(&w, &body, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "workload");
    bkm_json_str(&w, "fmnist-sgd");
    bkm_json_key(&w, "ranks");
    bkm_json_int(&w, t.size);
    bkm_json_key(&w, "threads");
    bkm_json_int(&w, t.threads);
    bkm_json_key(&w, "params");
    bkm_json_obj_begin(&w);
    for (size_t i = 0; i < TR_NPARAMS; i++) {
        char v[64];
        const char *s = tr_val(cfg, tr_params[i].name);
        if (strcmp(tr_params[i].name, "lr") == 0)
            snprintf(v, sizeof v, "%g", t.c.lr), s = v;
        else if (strcmp(tr_params[i].name, "momentum") == 0)
            snprintf(v, sizeof v, "%g", t.c.momentum), s = v;
        else if (strcmp(tr_params[i].name, "dropout") == 0)
            snprintf(v, sizeof v, "%g", t.c.dropout), s = v;
        else if (strcmp(tr_params[i].name, "micro") == 0)
            snprintf(v, sizeof v, "%d", t.micro), s = v;
        bkm_json_key(&w, tr_params[i].name);
        bkm_json_str(&w, s);
    }
    bkm_json_obj_end(&w);
    bkm_json_key(&w, "n_params");
    bkm_json_int(&w, t.net.n_trainable);
    bkm_json_key(&w, "steps_per_epoch");
    bkm_json_int(&w, t.steps);
    bkm_json_key(&w, "impl");
    bkm_json_str(&w, bkm_net_exec_impl(t.ex));
    if ((rc = tr_binding(&t, &w, err)) == BKM_OK)
        rc = tr_train(&t, &w, err);
    /* a mismatch or an MPI error seen by one rank only: the others must not wait forever */
    if (rc == BKM_EVERIFY || rc == BKM_OK)
        rc = tr_agree(&t, rc, err);
    if (rc < 0)
        goto out;
    bkm_json_obj_end(&w);
    if (t.rank == 0 && json)
        bkm_buf_puts(json, bkm_buf_str(&body));
out:
    tr_free(&t);
    bkm_buf_free(&body);
    /* An error every rank agreed on: finalise cleanly. Any other (a dead peer, a failed MPI call):
     * return without MPI_Finalize, so that the launcher ends the job when this rank exits. */
    if (finalize && (rc == BKM_OK || rc == BKM_EINVAL || rc == BKM_EVERIFY))
        MPI_Finalize();
    return rc;
}
