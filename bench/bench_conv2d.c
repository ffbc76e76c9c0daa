/* SPDX-License-Identifier: MIT */
/* bench_conv2d: native conv2d against the oneDNN conv2d op, per layer and direction, in one
 * process with the same threads and the same seeded inputs, interleaved (ABAB) samples after
 * warm-up, medians and their ratio, plus the geometric mean of the ratios per direction. Not a
 * test: it prints figures and asserts nothing about speed. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bkm/kernels.h"
#include "bench_common.h"

#define MAX_LAYERS 16

typedef struct {
    const char *layer[MAX_LAYERS];
    int n_layers;
    long long mb;
    int samples, warmup, dirs, json;
    int cpu_clock; /* --clock cpu: process CPU time / threads instead of wall time */
    bkm_kern_params_t params;
} bench_cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_conv2d [options]\n"
            "Times the native conv2d (im2col/1x1 + SGEMM) and the oneDNN conv2d through the same op\n"
            "abstraction (bkm_kern_conv2d_op_create) on the same seeded inputs, in one process with the\n"
            "same OpenMP threads, interleaved native/oneDNN after warm-up, and prints the median GFLOP/s\n"
            "of each (dense FLOP count, docs/workloads.md §2), the ratio native/oneDNN and, per direction, the\n"
            "geometric mean of the ratios.\n\n"
            "options:\n"
            "  --layer DESC     alexnet:conv1..alexnet:conv5 or a benchdnn descriptor such as\n"
            "                   mb32ic192ih13oc384oh13kh3ph1 (repeatable; default alexnet:conv2..conv5)\n"
            "  --mb N           batch size for every layer (default 32; 0 keeps the descriptor's)\n"
            "  --dir D          fwd, bwd_d, bwd_w or all (repeatable; default all)\n"
            "  --samples N      timed samples per implementation (>= 5, default 5)\n"
            "  --warmup N       untimed runs of each before timing (>= 1, default 1)\n"
            "  --param K=V      native tunable: algo, ptile, mc, kc, nc, nt_jc, or isa=generic|avx2|avx512\n"
            "  --clock C        wall (default): the monotonic clock; cpu: process CPU time / threads\n"
            "                   (on a shared machine with OMP_NUM_THREADS=1 it is the work done; with more\n"
            "                   threads it counts the runtime's spin-waits too)\n"
            "  --json           one JSON object per layer and direction instead of the table\n"
            "  --help           this text\n\n"
            "example:\n"
            "  OMP_NUM_THREADS=2 bench_conv2d --layer alexnet:conv3 --dir fwd --samples 7 --param algo=1\n");
}

static int parse_args(int argc, char **argv, bench_cfg_t *cfg)
{
    bkm_err_t err = {0};
    memset(cfg, 0, sizeof(*cfg));
    cfg->mb = 32;
    cfg->samples = 5;
    cfg->warmup = 1;
    bkm_kern_params_init(&cfg->params);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--json") == 0) {
            cfg->json = 1;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "bench_conv2d: option '%s' is unknown or lacks its value (see --help)\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--layer") == 0 && cfg->n_layers < MAX_LAYERS) {
            cfg->layer[cfg->n_layers++] = v;
        } else if (strcmp(a, "--mb") == 0 && bkm_parse_int(v, 0, 1 << 20, &n) == BKM_OK) {
            cfg->mb = n;
        } else if (strcmp(a, "--samples") == 0 && bkm_parse_int(v, 5, 10000, &n) == BKM_OK) {
            cfg->samples = (int)n;
        } else if (strcmp(a, "--warmup") == 0 && bkm_parse_int(v, 1, 10000, &n) == BKM_OK) {
            cfg->warmup = (int)n;
        } else if (strcmp(a, "--dir") == 0 && strcmp(v, "fwd") == 0) {
            cfg->dirs |= BKM_DIR_FWD;
        } else if (strcmp(a, "--dir") == 0 && strcmp(v, "bwd_d") == 0) {
            cfg->dirs |= BKM_DIR_BWD_D;
        } else if (strcmp(a, "--dir") == 0 && strcmp(v, "bwd_w") == 0) {
            cfg->dirs |= BKM_DIR_BWD_W;
        } else if (strcmp(a, "--dir") == 0 && strcmp(v, "all") == 0) {
            cfg->dirs |= BKM_DIR_ALL;
        } else if (strcmp(a, "--clock") == 0 && (strcmp(v, "wall") == 0 || strcmp(v, "cpu") == 0)) {
            cfg->cpu_clock = strcmp(v, "cpu") == 0;
        } else if (strcmp(a, "--param") == 0) {
            if (bkm_kern_params_add(&cfg->params, v, &err) != BKM_OK) {
                fprintf(stderr, "bench_conv2d: --param %s\n", err.msg);
                return -1;
            }
        } else {
            fprintf(stderr, "bench_conv2d: bad value '%s' for option '%s' (see --help)\n", v, a);
            return -1;
        }
    }
    if (cfg->n_layers == 0) {
        static const char *const def[] = {"alexnet:conv2", "alexnet:conv3", "alexnet:conv4", "alexnet:conv5"};
        for (int i = 0; i < 4; i++)
            cfg->layer[cfg->n_layers++] = def[i];
    }
    if (cfg->dirs == 0)
        cfg->dirs = BKM_DIR_ALL;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Nanoseconds on the chosen clock. */
static uint64_t clock_ns(int cpu_clock)
{
    struct timespec ts;
    if (!cpu_clock)
        return bkm_now_ns();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) / (uint64_t)omp_get_max_threads();
}

/* Seconds of one exec, or -1 on error (printed). */
static double time_exec(bkm_kern_op_t *op, bkm_dir_t dir, int cpu_clock)
{
    bkm_err_t err = {0};
    uint64_t t0 = clock_ns(cpu_clock);
    if (bkm_kern_op_exec(op, dir, &err) != BKM_OK) {
        fprintf(stderr, "bench_conv2d: exec: %s\n", err.msg);
        return -1.0;
    }
    return (double)(clock_ns(cpu_clock) - t0) * 1e-9;
}

int main(int argc, char **argv)
{
    static const bkm_dir_t dirs[3] = {BKM_DIR_FWD, BKM_DIR_BWD_D, BKM_DIR_BWD_W};
    static const char *const dir_names[3] = {"fwd", "bwd_d", "bwd_w"};
    double log_ratio[3] = {0, 0, 0};
    int n_ratio[3] = {0, 0, 0};
    bench_cfg_t cfg;
    int rc = 0;

    if (parse_args(argc, argv, &cfg) != 0)
        return 2;
    /* the native kernels' default blocking follows this host's caches (before any parallel region) */
    bkm_bench_host_caches(&cfg.params.cache.l1d, &cfg.params.cache.l2, &cfg.params.cache.l3);
    if (!cfg.json)
        printf("threads %d, batch %lld, %d samples (median, %s clock), interleaved native/onednn\n"
               "%-14s %-6s %10s %10s %7s  %s | %s\n",
               omp_get_max_threads(), cfg.mb, cfg.samples, cfg.cpu_clock ? "process-CPU-time / threads" : "wall",
               "layer", "dir", "native_GF", "onednn_GF", "ratio",
               "native impl", "onednn impl");
    for (int l = 0; l < cfg.n_layers; l++) {
        bkm_conv2d_desc_t d;
        bkm_err_t err = {0};
        if (bkm_kern_conv2d_desc_parse(cfg.layer[l], cfg.mb, &d, &err) != BKM_OK) {
            fprintf(stderr, "bench_conv2d: --layer %s\n", err.msg);
            return 2;
        }
        for (int di = 0; di < 3; di++) {
            bkm_kern_op_t *nat = NULL, *dnn = NULL;
            double tn[64], td[64], mn, md, gf_n, gf_d;
            int s, n = cfg.samples < 64 ? cfg.samples : 64;
            if (!(cfg.dirs & dirs[di]))
                continue;
            if ((rc = bkm_kern_conv2d_op_create(&nat, &d, dirs[di], BKM_BACKEND_NATIVE, &cfg.params, &err)) != BKM_OK) {
                fprintf(stderr, "bench_conv2d: native %s: %s\n", cfg.layer[l], err.msg);
                return bkm_status_exit_code(rc);
            }
            if (bkm_kern_conv2d_op_create(&dnn, &d, dirs[di], BKM_BACKEND_ONEDNN, NULL, &err) != BKM_OK ||
                bkm_kern_op_prepare(dnn, &err) != BKM_OK) {
                fprintf(stderr, "bench_conv2d: onednn %s (%s): %s\n", cfg.layer[l], dir_names[di], err.msg);
                bkm_kern_op_destroy(dnn);
                dnn = NULL;
            }
            for (s = 0; s < cfg.warmup; s++) {
                if (time_exec(nat, dirs[di], cfg.cpu_clock) < 0 ||
                    (dnn != NULL && time_exec(dnn, dirs[di], cfg.cpu_clock) < 0))
                    return 3;
            }
            for (s = 0; s < n; s++) {
                tn[s] = time_exec(nat, dirs[di], cfg.cpu_clock);
                td[s] = dnn != NULL ? time_exec(dnn, dirs[di], cfg.cpu_clock) : 0.0;
                if (tn[s] < 0 || td[s] < 0)
                    return 3;
            }
            mn = median(tn, n);
            md = dnn != NULL ? median(td, n) : NAN;
            gf_n = bkm_kern_op_flops(nat, dirs[di]) / mn * 1e-9;
            gf_d = dnn != NULL ? bkm_kern_op_flops(dnn, dirs[di]) / md * 1e-9 : NAN;
            if (dnn != NULL) {
                log_ratio[di] += log(gf_n / gf_d);
                n_ratio[di]++;
            }
            if (cfg.json)
                printf("{\"layer\":\"%s\",\"dir\":\"%s\",\"mb\":%lld,\"threads\":%d,\"native_gflops\":%.2f,"
                       "\"onednn_gflops\":%.2f,\"native_ms\":%.4f,\"onednn_ms\":%.4f,\"native_impl\":\"%s\","
                       "\"onednn_impl\":\"%s\"}\n",
                       cfg.layer[l], dir_names[di], (long long)d.mb, omp_get_max_threads(), gf_n,
                       dnn != NULL ? gf_d : 0.0, mn * 1e3, dnn != NULL ? md * 1e3 : 0.0,
                       bkm_kern_op_impl(nat, dirs[di]), dnn != NULL ? bkm_kern_op_impl(dnn, dirs[di]) : "none");
            else
                printf("%-14s %-6s %10.1f %10.1f %7.2f  %s | %s\n", cfg.layer[l], dir_names[di], gf_n, gf_d,
                       gf_n / gf_d, bkm_kern_op_impl(nat, dirs[di]),
                       dnn != NULL ? bkm_kern_op_impl(dnn, dirs[di]) : "none");
            bkm_kern_op_destroy(nat);
            bkm_kern_op_destroy(dnn);
        }
    }
    if (!cfg.json)
        for (int di = 0; di < 3; di++)
            if (n_ratio[di] > 0)
                printf("geomean native/onednn %-6s %.3f over %d layers\n", dir_names[di],
                       exp(log_ratio[di] / n_ratio[di]), n_ratio[di]);
    return 0;
}
