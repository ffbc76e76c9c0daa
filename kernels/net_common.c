/* SPDX-License-Identifier: MIT */
/* What the network engines share: the batch-axis loss, the SGD phase, the impl list, zeroed
 * buffers first touched by the team, and the dropout masks (a hash of key, layer and sample). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "net_int.h"

int bkm__net_xent(const bkm_net_t *net, const float *logits, const int32_t *labels, float *grad, double *loss)
{
    int64_t mb = net->d.mb, nc = net->classes;
    double l = 0.0;
    if (net->d.layer[net->d.n_layers - 1].kind == BKM_NET_LOSS_BATCH) {
        /* log-softmax over the batch for each class j; L = -(1/N) sum_n lp[n][y_n];
         * dL/dx[m][j] = (cnt_j * softmax[m][j] - [y_m == j]) / N, cnt_j = samples labelled j */
        for (int64_t j = 0; j < nc; j++) {
            double mx = -INFINITY, se = 0.0;
            int64_t cnt = 0;
            for (int64_t n = 0; n < mb; n++)
                mx = fmax(mx, (double)logits[n * nc + j]);
            for (int64_t n = 0; n < mb; n++) {
                se += exp((double)logits[n * nc + j] - mx);
                cnt += labels[n] == j;
            }
            for (int64_t n = 0; n < mb; n++) {
                double lp = (double)logits[n * nc + j] - mx - log(se);
                if (labels[n] == j)
                    l -= lp;
                grad[n * nc + j] = (float)(((double)cnt * exp(lp) - (labels[n] == j ? 1.0 : 0.0)) / (double)mb);
            }
        }
        *loss = l / (double)mb;
        return BKM_OK;
    }
    return -1; /* the class-axis loss uses the layers' softmax cross-entropy */
}

void bkm__net_sgd(bkm_net_exec_t *ex, uint64_t *t)
{
    const bkm_net_t *net = &ex->net;
    for (int i = 0; i < net->d.n_layers && net->d.lr > 0.0f; i++) {
        const bkm_net_layer_info_t *li = &net->li[i];
        if (!li->n_wei)
            continue;
        bkm_kern_sgd_step((size_t)li->n_wei, ex->params + li->wei_off, ex->grads + li->wei_off, NULL, net->d.lr,
                          0.0f, 0.0f);
        if (li->n_bias)
            bkm_kern_sgd_step((size_t)li->n_bias, ex->params + li->bias_off, ex->grads + li->bias_off, NULL,
                              net->d.lr, 0.0f, 0.0f);
        bkm__net_lap(ex, i, BKM_NET_UPD, t);
    }
}

void bkm__net_impl_add(char *buf, size_t cap, const char *name)
{
    size_t len = strlen(buf), nl = strlen(name);
    const char *p = buf;
    while (p && *p) {
        const char *e = strchr(p, '+');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == nl && strncmp(p, name, nl) == 0)
            return;
        p = e ? e + 1 : NULL;
    }
    if (len + nl + 2 < cap)
        snprintf(buf + len, cap - len, "%s%s", len ? "+" : "", name);
}

float *bkm__net_zalloc(size_t n)
{
    size_t len = n ? n : 1;
    float *p = bkm_aligned_alloc(64, len * sizeof(float));
    if (p == NULL)
        return NULL;
    /* first touch by the calling thread's OpenMP team under the static schedule of the compute
     * (as in the layers' loops over the flat NCHW / [mb][features] arrays) */
    bkm__kern_zero_team(p, len);
    return p;
}

/* Uniform [0, 1) from (key, stream, i): splitmix64 finaliser. */
static double net_unit(uint64_t key, uint64_t stream, uint64_t i)
{
    uint64_t z = key * 0x9e3779b97f4a7c15ULL ^ (stream + 1) * 0xd1b54a32d192ed03ULL;
    z += i * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

void bkm__net_dropout(const bkm_net_exec_t *ex, int layer, float *x)
{
    const bkm_net_layer_info_t *li = &ex->net.li[layer];
    const double p = ex->net.d.layer[layer].drop;
    const float scale = (float)(1.0 / (1.0 - p));
    const int64_t c = li->in.c, sp = li->in.d * li->in.h * li->in.w, mb = ex->net.d.mb;
    const int per_channel = ex->net.d.layer[layer].kind == BKM_NET_DROPOUT2D;
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < mb * c; nc++) {
        float *v = x + nc * sp;
        uint64_t unit = (uint64_t)(ex->drop_first * c + nc); /* global (sample, channel) */
        if (per_channel) {
            float m = net_unit(ex->drop_key, (uint64_t)layer, unit) < p ? 0.0f : scale;
            for (int64_t j = 0; j < sp; j++)
                v[j] *= m;
        } else
            for (int64_t j = 0; j < sp; j++)
                v[j] *= net_unit(ex->drop_key, (uint64_t)layer, unit * (uint64_t)sp + (uint64_t)j) < p ? 0.0f : scale;
    }
}
