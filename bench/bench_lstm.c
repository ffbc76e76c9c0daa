/* SPDX-License-Identifier: MIT */
/* bench_lstm: the lstm workload (docs/workloads.md §6, default the seed's 64,50,500,500 training) on the
 * native and oneDNN backends in one process, same threads, same seeded data, iterations
 * interleaved after warm-up (oneDNN, native, oneDNN, native, ...). Prints per backend the median
 * and mean ms per iteration, forward and backward ms, GFLOP/s (§2 formula, from the median),
 * sentences/s (N / median), and the native/oneDNN speed ratio (oneDNN median / native median).
 * Not a test: it asserts nothing about speed. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/kernels.h"
#include "bkm/workloads.h"

enum { B_ONEDNN, B_NATIVE, B_COUNT };
static const char *const backend_name[B_COUNT] = {"onednn", "native"};

typedef struct cfg {
    long long warmup, steps;
    const char *shape, *mode, *layers;
    int use[B_COUNT];
    bkm_wl_config_t extra; /* native tunables */
} cfg_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_lstm [options]\n"
               "The lstm workload with oneDNN and native kernels in one process, iterations interleaved after\n"
               "warm-up. Prints ms per iteration, forward/backward ms, GFLOP/s, sentences/s and native/oneDNN.\n\n"
               "options:\n"
               "  --shape N,T,I,H   (default 64,50,500,500, the seed's)\n"
               "  --layers L        (default 1)\n"
               "  --mode M          training (default) or inference\n"
               "  --warmup N        untimed iterations per backend (default 3)\n"
               "  --steps N         timed iterations per backend (default 10)\n"
               "  --backend B       onednn, native or both (default both)\n"
               "  --param K=V       native tunable (grain, mc, kc, nc, isa)\n"
               "  --help            this text\n\n"
               "example:\n"
               "  OMP_NUM_THREADS=2 KMP_AFFINITY=granularity=fine,compact bench_lstm\n");
}

static int parse_args(int argc, char **argv, cfg_t *c)
{
    bkm_err_t err = {0};
    memset(c, 0, sizeof *c);
    c->warmup = 3;
    c->steps = 10;
    c->shape = "64,50,500,500";
    c->mode = "training";
    c->layers = "1";
    c->use[B_ONEDNN] = c->use[B_NATIVE] = 1;
    bkm_wl_config_init(&c->extra);
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "bench_lstm: %s needs a value\n", a);
            return -1;
        }
        if (!strcmp(a, "--warmup") || !strcmp(a, "--steps")) {
            long long n;
            if (bkm_parse_int(v, !strcmp(a, "--warmup") ? 0 : 1, 100000, &n) != BKM_OK) {
                fprintf(stderr, "bench_lstm: %s '%s' is not an integer in range\n", a, v);
                return -1;
            }
            *(!strcmp(a, "--warmup") ? &c->warmup : &c->steps) = n;
        } else if (!strcmp(a, "--shape")) {
            c->shape = v;
        } else if (!strcmp(a, "--layers")) {
            c->layers = v;
        } else if (!strcmp(a, "--mode")) {
            c->mode = v;
        } else if (!strcmp(a, "--backend")) {
            int o = !strcmp(v, "onednn"), n = !strcmp(v, "native"), b = !strcmp(v, "both");
            if (!o && !n && !b) {
                fprintf(stderr, "bench_lstm: --backend '%s': onednn, native or both\n", v);
                return -1;
            }
            c->use[B_ONEDNN] = o || b;
            c->use[B_NATIVE] = n || b;
        } else if (!strcmp(a, "--param")) {
            if (bkm_wl_config_add(&c->extra, v, &err) < 0) {
                fprintf(stderr, "bench_lstm: --param: %s\n", err.msg);
                return -1;
            }
        } else {
            fprintf(stderr, "bench_lstm: unknown option '%s' (--help)\n", a);
            return -1;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    cfg_t c;
    bkm_wl_t *wl[B_COUNT] = {NULL, NULL};
    double *ms[B_COUNT] = {NULL, NULL}, fwd[B_COUNT] = {0}, bwd[B_COUNT] = {0}, med[B_COUNT] = {0};
    bkm_err_t err = {0};
    int status = 1;
    if (parse_args(argc, argv, &c) < 0)
        return 2;
    for (int b = 0; b < B_COUNT; b++) {
        bkm_wl_config_t cfg;
        char kv[160];
        if (!c.use[b])
            continue;
        cfg = b == B_NATIVE ? c.extra : (bkm_wl_config_t){0};
        if (b != B_NATIVE)
            bkm_wl_config_init(&cfg);
        snprintf(kv, sizeof kv, "backend=%s", backend_name[b]);
        if (bkm_wl_config_add(&cfg, kv, &err) < 0)
            goto fail;
        snprintf(kv, sizeof kv, "shape=%s", c.shape);
        if (bkm_wl_config_add(&cfg, kv, &err) < 0)
            goto fail;
        snprintf(kv, sizeof kv, "mode=%s", c.mode);
        if (bkm_wl_config_add(&cfg, kv, &err) < 0)
            goto fail;
        snprintf(kv, sizeof kv, "layers=%s", c.layers);
        if (bkm_wl_config_add(&cfg, kv, &err) < 0 || bkm_wl_create(&wl[b], "lstm", &cfg, 1, &err) < 0)
            goto fail;
        if (!(ms[b] = calloc((size_t)c.steps, sizeof(double)))) {
            fprintf(stderr, "bench_lstm: out of memory\n");
            goto out;
        }
        for (long long i = 0; i < c.warmup; i++)
            if (bkm_wl_run(wl[b], NULL, &err) < 0)
                goto fail;
    }
    for (long long i = 0; i < c.steps; i++) {
        for (int b = 0; b < B_COUNT; b++) {
            bkm_wl_sample_t s;
            if (!wl[b])
                continue;
            if (bkm_wl_run(wl[b], &s, &err) < 0)
                goto fail;
            ms[b][i] = s.ms;
            fwd[b] += s.fwd_ms / (double)c.steps;
            bwd[b] += s.bwd_ms / (double)c.steps;
        }
    }
    printf("lstm shape=%s layers=%s mode=%s threads=%d warmup=%lld steps=%lld (interleaved)\n", c.shape, c.layers,
           c.mode, omp_get_max_threads(), c.warmup, c.steps);
    printf("%-8s %10s %10s %10s %10s %10s %12s  %s\n", "backend", "median_ms", "mean_ms", "fwd_ms", "bwd_ms",
           "GFLOP/s", "sentences/s", "impl");
    for (int b = 0; b < B_COUNT; b++) {
        double mean = 0.0, check = 0.0;
        if (!wl[b])
            continue;
        for (long long i = 0; i < c.steps; i++)
            mean += ms[b][i] / (double)c.steps;
        qsort(ms[b], (size_t)c.steps, sizeof(double), cmp_double);
        med[b] = c.steps % 2 ? ms[b][c.steps / 2] : 0.5 * (ms[b][c.steps / 2 - 1] + ms[b][c.steps / 2]);
        long long n = atoll(c.shape); /* N: the shape was accepted, so it starts with the batch */
        bkm_wl_check_value(wl[b], &check, &err);
        printf("%-8s %10.2f %10.2f %10.2f %10.2f %10.1f %12.1f  %s (first loss %.7f)\n", backend_name[b], med[b],
               mean, fwd[b], bwd[b], bkm_wl_flops(wl[b]) / (med[b] * 1e6), (double)n / (med[b] / 1e3),
               bkm_wl_impl(wl[b]), check);
    }
    if (wl[B_ONEDNN] && wl[B_NATIVE])
        printf("native/oneDNN speed (oneDNN median / native median): %.3f\n", med[B_ONEDNN] / med[B_NATIVE]);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "bench_lstm: %s\n", err.msg);
out:
    for (int b = 0; b < B_COUNT; b++) {
        bkm_wl_destroy(wl[b]);
        free(ms[b]);
    }
    return status;
}
