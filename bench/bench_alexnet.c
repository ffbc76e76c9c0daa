/* SPDX-License-Identifier: MIT */
/* bench_alexnet: one AlexNet training step (torchvision layers, docs/workloads.md §3) with the oneDNN
 * chain and the native chain in the same process, same threads, same seeded weights and data,
 * steps interleaved (oneDNN, native, oneDNN, ...) after warm-up. Prints fwd / bwd / update / total
 * ms (averages, as the seed script), images/s, GFLOP/s over fwd+bwd, % of the measured FMA peak,
 * the native/oneDNN ratio, and the seed's own text format (mingfeima/convnet-benchmarks
 * pytorch/benchmark.py). Not a test: it asserts nothing about speed. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bkm/kernels.h"
#include "bkm/workloads.h"
#include "bench_common.h"

enum { B_ONEDNN, B_NATIVE, B_COUNT };
static const char *const backend_name[B_COUNT] = {"onednn", "native"};

typedef struct bench_cfg {
    long long batch, warmup, steps, layers;
    int use[B_COUNT];
    int json;
    bkm_wl_config_t extra;   /* --param for the native backend */
} bench_cfg_t;

typedef struct bench_res {
    double fwd, bwd, upd, first_loss;   /* averages over the timed steps, ms */
    double wall_s, cpu_s;               /* timed steps: wall time and process CPU time */
    char impl[512];
} bench_res_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_alexnet [options]\n"
            "Times one AlexNet training step (forward, softmax cross-entropy + backward, SGD update;\n"
            "torchvision layers, 224x224x3 input, eval mode) with the oneDNN primitives and with the\n"
            "native kernels, in one process on the same OpenMP threads (OMP_NUM_THREADS) and the same\n"
            "seeded weights and data. After the warm-up steps the two backends alternate step by step.\n"
            "Prints average fwd / bwd / update / total ms (total = fwd + bwd, update excluded, as the\n"
            "seed script), images/s, GFLOP/s (training FLOPs 4.145 GF/img over fwd + bwd), the percentage\n"
            "of the FMA peak measured on the same threads, and native/oneDNN ratios; then the same figures\n"
            "in the seed's format (convnet-benchmarks pytorch/benchmark.py).\n\n"
            "options:\n"
            "  --batch N      images per step (default 64)\n"
            "  --warmup N     untimed steps per backend first (default 10, as the seed; >= 1)\n"
            "  --steps N      timed steps per backend (default 10, as the seed; >= 1)\n"
            "  --backend B    onednn, native or both (default both)\n"
            "  --param K=V    native conv2d tunable (algo, ptile, mc, kc, nc, nt_jc, fuse, isa)\n"
            "  --layers N     1 (default): also the per-layer, per-direction table of both backends\n"
            "                 (ms per step, every step after the first, oneDNN ms / native ms); 0: totals only\n"
            "  --json         one JSON object per backend instead of the table\n"
            "  --help         this text\n\n"
            "example:\n"
            "  OMP_NUM_THREADS=2 KMP_AFFINITY=granularity=fine,compact bench_alexnet --batch 64 --steps 5\n");
}

static int parse_count(const char *opt, const char *v, long long min, long long max, long long *out)
{
    if (!v || bkm_parse_int(v, min, max, out) != BKM_OK) {
        fprintf(stderr, "bench_alexnet: %s '%s' is not an integer in [%lld, %lld]\n", opt, v ? v : "", min, max);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, bench_cfg_t *cfg)
{
    bkm_err_t err = {0};
    memset(cfg, 0, sizeof *cfg);
    cfg->batch = 64;
    cfg->warmup = 10;
    cfg->steps = 10;
    cfg->layers = 1;
    cfg->use[B_ONEDNN] = cfg->use[B_NATIVE] = 1;
    bkm_wl_config_init(&cfg->extra);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--json")) {
            cfg->json = 1;
            continue;
        } else if (!strcmp(a, "--batch")) {
            if (parse_count(a, v, 1, 1024, &cfg->batch) < 0)
                return -1;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_count(a, v, 1, 1000, &cfg->warmup) < 0)
                return -1;
        } else if (!strcmp(a, "--steps")) {
            if (parse_count(a, v, 1, 1000, &cfg->steps) < 0)
                return -1;
        } else if (!strcmp(a, "--layers")) {
            if (parse_count(a, v, 0, 1, &cfg->layers) < 0)
                return -1;
        } else if (!strcmp(a, "--backend")) {
            if (!v || (strcmp(v, "both") && strcmp(v, "onednn") && strcmp(v, "native"))) {
                fprintf(stderr, "bench_alexnet: --backend '%s' is not onednn, native or both\n", v ? v : "");
                return -1;
            }
            cfg->use[B_ONEDNN] = strcmp(v, "native") != 0;
            cfg->use[B_NATIVE] = strcmp(v, "onednn") != 0;
        } else if (!strcmp(a, "--param")) {
            if (!v || bkm_wl_config_add(&cfg->extra, v, &err) < 0) {
                fprintf(stderr, "bench_alexnet: --param: %s\n", v ? err.msg : "missing K=V");
                return -1;
            }
        } else {
            fprintf(stderr, "bench_alexnet: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        i++;
    }
    return 0;
}

/* Process CPU time (all threads), seconds: with the wall time it tells how much of the
 * machine the run actually got when other work shares it. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int create(const bench_cfg_t *cfg, int b, bkm_wl_t **wl, bkm_err_t *err)
{
    bkm_wl_config_t c = b == B_NATIVE ? cfg->extra : (bkm_wl_config_t){0};
    char kv[64];
    int rc;
    snprintf(kv, sizeof kv, "backend=%s", backend_name[b]);
    if ((rc = bkm_wl_config_add(&c, kv, err)) < 0)
        return rc;
    snprintf(kv, sizeof kv, "batch=%lld", cfg->batch);
    if ((rc = bkm_wl_config_add(&c, kv, err)) < 0)
        return rc;
    snprintf(kv, sizeof kv, "layers=%lld", cfg->layers);
    if ((rc = bkm_wl_config_add(&c, kv, err)) < 0)
        return rc;
    return bkm_wl_create(wl, "alexnet", &c, 1, err);
}

static void print_table(const bench_cfg_t *cfg, const bench_res_t *r, double flops, double peak, int nt)
{
    printf("AlexNet training step, batch %lld, %d threads, %lld warm-up + %lld timed steps per backend\n",
           cfg->batch, nt, cfg->warmup, cfg->steps);
    printf("training FLOPs %.1f GF/step (%.3f GF/img, fwd+bwd without conv1 bwd-data); FMA peak %.1f GF/s "
           "(measured, best of before/after)\n\n",
           flops / 1e9, flops / 1e9 / (double)cfg->batch, peak);
    printf("%-8s %9s %9s %9s %9s %8s %8s %7s %10s %6s %9s\n", "backend", "fwd ms", "bwd ms", "upd ms", "total ms",
           "img/s", "GF/s", "%peak", "loss(1st)", "cpu%", "GF/cpu-s");
    for (int b = 0; b < B_COUNT; b++) {
        double tot = r[b].fwd + r[b].bwd, gf = flops / (tot * 1e-3) / 1e9;
        if (!cfg->use[b])
            continue;
        printf("%-8s %9.2f %9.2f %9.2f %9.2f %8.2f %8.1f %6.1f%% %10.6f %5.0f%% %9.1f\n", backend_name[b], r[b].fwd,
               r[b].bwd, r[b].upd, tot, (double)cfg->batch * 1e3 / tot, gf, peak > 0 ? 100.0 * gf / peak : NAN,
               r[b].first_loss, 100.0 * r[b].cpu_s / (r[b].wall_s * nt),
               flops * (double)cfg->steps / (r[b].cpu_s * tot / (tot + r[b].upd)) / 1e9);
    }
    if (cfg->use[B_ONEDNN] && cfg->use[B_NATIVE]) {
        const bench_res_t *o = &r[B_ONEDNN], *n = &r[B_NATIVE];
        /* ratio of speeds (native / oneDNN): > 1 means native is faster */
        printf("%-8s %9.3f %9.3f %9.3f %9.3f\n", "nat/odnn", o->fwd / n->fwd, o->bwd / n->bwd, o->upd / n->upd,
               (o->fwd + o->bwd) / (n->fwd + n->bwd));
    }
    for (int b = 0; b < B_COUNT; b++)
        if (cfg->use[b])
            printf("impl %s: %s\n", backend_name[b], r[b].impl);
    printf("cpu%%: process CPU time / (wall time x %d threads) over the timed steps; below ~95%% the machine\n"
           "was shared and the wall-clock figures are pessimistic. GF/cpu-s: training FLOPs per second of\n"
           "CPU time spent in fwd+bwd (insensitive to time-sharing; compare with the peak per thread, %.1f).\n",
           nt, peak / nt);
    /* the seed's format: mingfeima/convnet-benchmarks pytorch/benchmark.py (Oct 2017); its
     * "Input shape" line prints 244 by a typo, the input is 224x224 */
    for (int b = 0; b < B_COUNT; b++) {
        double tot = r[b].fwd + r[b].bwd;
        if (!cfg->use[b])
            continue;
        printf("\nModelType: alexnet, Kernels: %s Input shape: %lldx3x224x224\n", backend_name[b], cfg->batch);
        printf("%-30s %10s %10.2f %10.2f\n", backend_name[b], ":forward:", r[b].fwd,
               (double)cfg->batch * 1e3 / r[b].fwd);
        printf("%-30s %10s %10.2f\n", backend_name[b], ":backward:", r[b].bwd);
        printf("%-30s %10s %10.2f\n", backend_name[b], ":update:", r[b].upd);
        printf("%-30s %10s %10.2f %10.2f\n", backend_name[b], ":total:", tot, (double)cfg->batch * 1e3 / tot);
    }
}

static void print_json(const bench_cfg_t *cfg, const bench_res_t *r, double flops, double peak, int nt)
{
    for (int b = 0; b < B_COUNT; b++) {
        bkm_buf_t out;
        bkm_json_w_t w;
        double tot = r[b].fwd + r[b].bwd, gf = flops / (tot * 1e-3) / 1e9;
        if (!cfg->use[b])
            continue;
        bkm_buf_init(&out);
        bkm_json_w_init(&w, &out, 0);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "backend"), bkm_json_str(&w, backend_name[b]);
        bkm_json_key(&w, "batch"), bkm_json_int(&w, cfg->batch);
        bkm_json_key(&w, "threads"), bkm_json_int(&w, nt);
        bkm_json_key(&w, "steps"), bkm_json_int(&w, cfg->steps);
        bkm_json_key(&w, "fwd_ms"), bkm_json_double(&w, r[b].fwd);
        bkm_json_key(&w, "bwd_ms"), bkm_json_double(&w, r[b].bwd);
        bkm_json_key(&w, "update_ms"), bkm_json_double(&w, r[b].upd);
        bkm_json_key(&w, "total_ms"), bkm_json_double(&w, tot);
        bkm_json_key(&w, "img_per_s"), bkm_json_double(&w, (double)cfg->batch * 1e3 / tot);
        bkm_json_key(&w, "gflops"), bkm_json_double(&w, gf);
        bkm_json_key(&w, "peak_gflops"), bkm_json_double(&w, peak);
        bkm_json_key(&w, "first_loss"), bkm_json_double(&w, r[b].first_loss);
        bkm_json_key(&w, "cpu_share"), bkm_json_double(&w, r[b].cpu_s / (r[b].wall_s * nt));
        bkm_json_key(&w, "impl"), bkm_json_str(&w, r[b].impl);
        bkm_json_obj_end(&w);
        printf("%s\n", bkm_buf_str(&out));
        bkm_buf_free(&out);
    }
}

int main(int argc, char **argv)
{
    bench_cfg_t cfg;
    bkm_wl_t *wl[B_COUNT] = {NULL, NULL};
    bench_res_t res[B_COUNT];
    bkm_err_t err = {0};
    bkm_wl_sample_t s;
    double flops = 0.0, peak;
    int nt, rc = 0;

    if (parse_args(argc, argv, &cfg) < 0)
        return 2;
    /* the native kernels' default blocking follows this host's caches (before any parallel region) */
    bkm_bench_host_caches(&cfg.extra.cache_l1d, &cfg.extra.cache_l2, &cfg.extra.cache_l3);
    memset(res, 0, sizeof res);
    nt = omp_get_max_threads();
    /* the peak is a ceiling: measured before and after the steps, the larger one counts (a busy
     * machine lowers a measurement, never raises it) */
    peak = bkm_kern_peak_gflops(BKM_ISA_AUTO, nt);
    for (int b = 0; b < B_COUNT; b++) {
        if (!cfg.use[b])
            continue;
        if (create(&cfg, b, &wl[b], &err) < 0) {
            fprintf(stderr, "bench_alexnet: %s: %s\n", backend_name[b], err.msg);
            rc = bkm_status_exit_code(err.code);
            goto out;
        }
        snprintf(res[b].impl, sizeof res[b].impl, "%s", bkm_wl_impl(wl[b]));
        flops = bkm_wl_flops(wl[b]);
    }
    for (long long i = 0; i < cfg.warmup + cfg.steps; i++) {
        for (int b = 0; b < B_COUNT; b++) {
            double c0 = cpu_seconds(), c1;
            uint64_t w0 = bkm_now_ns();
            if (!wl[b])
                continue;
            if (bkm_wl_run(wl[b], &s, &err) < 0) {
                fprintf(stderr, "bench_alexnet: %s step %lld: %s\n", backend_name[b], i, err.msg);
                rc = bkm_status_exit_code(err.code);
                goto out;
            }
            if (i == 0)
                res[b].first_loss = s.loss;
            c1 = cpu_seconds();
            if (i < cfg.warmup)
                continue;
            res[b].wall_s += (double)(bkm_now_ns() - w0) * 1e-9;
            res[b].cpu_s += c1 - c0;
            res[b].fwd += s.fwd_ms / (double)cfg.steps;
            res[b].bwd += s.bwd_ms / (double)cfg.steps;
            res[b].upd += s.update_ms / (double)cfg.steps;
        }
    }
    peak = fmax(peak, bkm_kern_peak_gflops(BKM_ISA_AUTO, nt));
    if (cfg.json)
        print_json(&cfg, res, flops, peak, nt);
    else
        print_table(&cfg, res, flops, peak, nt);
    if (!cfg.json && cfg.layers)
        bkm_bench_print_layers(wl[B_NATIVE], wl[B_ONEDNN]);
out:
    for (int b = 0; b < B_COUNT; b++)
        bkm_wl_destroy(wl[b]);
    return rc;
}
