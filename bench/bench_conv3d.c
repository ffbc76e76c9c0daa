/* SPDX-License-Identifier: MIT */
/* bench_conv3d: (1) vol2col and col2vol of the seed's conv3d_2 image (ic64 33x33x18, 3^3 kernel)
 * serial vs split over the OpenMP threads (evenly, and in dynamic chunks), interleaved, best and median
 * of the repetitions and the median of the per-repetition ratios; (2) the
 * conv3d workload (the NERSC seed network, docs/workloads.md §5, or one layer with --shape) on the
 * native and oneDNN backends in one process, same threads, same seeded data, iterations
 * interleaved after warm-up; ms per iteration (forward + loss + backward, as berkely.py), GFLOP/s,
 * % of the FMA peak measured on the same threads, CPU share, the native/oneDNN ratio, and the
 * seed's own "avg time X millisecond" line. Not a test: it asserts nothing about speed. */
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

typedef struct cfg {
    long long batch, warmup, steps, reps, layers;
    const char *shape;
    int use[B_COUNT];
    bkm_wl_config_t extra;
} cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_conv3d [options]\n"
            "(1) vol2col / col2vol of one image of the seed's conv3d_2 (ic64, 33x33x18, 3^3 kernel): serial vs\n"
            "    one flat range split over the OpenMP threads, interleaved; (2) the conv3d workload (the NERSC\n"
            "    seed network, or one layer with --shape) with oneDNN and native kernels in one process,\n"
            "    iterations interleaved after warm-up. Prints ms per iteration (forward + loss + backward),\n"
            "    GFLOP/s, %% of the measured FMA peak, CPU share, native/oneDNN, and the seed's line.\n\n"
            "options:\n"
            "  --batch N     samples per iteration (default 0: the seed's 4 or the descriptor's mb)\n"
            "  --warmup N    untimed iterations per backend (default 5, as the seed)\n"
            "  --steps N     timed iterations per backend (default 10, as the seed)\n"
            "  --reps N      vol2col/col2vol repetitions per variant (default 20; 0 skips part 1)\n"
            "  --shape S     'seed' (default) or a benchdnn 3-D descriptor (single-layer mode)\n"
            "  --backend B   onednn, native or both (default both)\n"
            "  --layers N    1 (default): also the per-layer, per-direction table of the timed iterations\n"
            "                (ms per iteration on each backend and their ratio); 0: the totals only\n"
            "  --param K=V   native tunable (v2c, mc, kc, nc, isa)\n"
            "  --help        this text\n\n"
            "example:\n"
            "  OMP_NUM_THREADS=2 KMP_AFFINITY=granularity=fine,compact bench_conv3d\n");
}

static int parse_count(const char *opt, const char *v, long long min, long long max, long long *out)
{
    if (!v || bkm_parse_int(v, min, max, out) != BKM_OK) {
        fprintf(stderr, "bench_conv3d: %s '%s' is not an integer in [%lld, %lld]\n", opt, v ? v : "", min, max);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, cfg_t *c)
{
    bkm_err_t err = {0};
    memset(c, 0, sizeof *c);
    c->warmup = 5;
    c->steps = 10;
    c->reps = 20;
    c->layers = 1;
    c->shape = "seed";
    c->use[B_ONEDNN] = c->use[B_NATIVE] = 1;
    bkm_wl_config_init(&c->extra);
    for (int i = 1; i < argc; i++, i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--batch")) {
            if (parse_count(a, v, 0, 256, &c->batch) < 0)
                return -1;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_count(a, v, 1, 1000, &c->warmup) < 0)
                return -1;
        } else if (!strcmp(a, "--steps")) {
            if (parse_count(a, v, 1, 1000, &c->steps) < 0)
                return -1;
        } else if (!strcmp(a, "--reps")) {
            if (parse_count(a, v, 0, 100000, &c->reps) < 0)
                return -1;
        } else if (!strcmp(a, "--layers")) {
            if (parse_count(a, v, 0, 1, &c->layers) < 0)
                return -1;
        } else if (!strcmp(a, "--shape") && v) {
            c->shape = v;
        } else if (!strcmp(a, "--backend") && v &&
                   (!strcmp(v, "both") || !strcmp(v, "onednn") || !strcmp(v, "native"))) {
            c->use[B_ONEDNN] = strcmp(v, "native") != 0;
            c->use[B_NATIVE] = strcmp(v, "onednn") != 0;
        } else if (!strcmp(a, "--param")) {
            if (!v || bkm_wl_config_add(&c->extra, v, &err) < 0) {
                fprintf(stderr, "bench_conv3d: --param: %s\n", v ? err.msg : "missing K=V");
                return -1;
            }
        } else {
            fprintf(stderr, "bench_conv3d: bad option '%s'%s (see --help)\n", a, v ? "" : " or missing value");
            return -1;
        }
    }
    return 0;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* kernels/kernels_int.h (private): thread t's part of an nt-way even split, what bkm_kern_vol2col /
 * bkm_kern_col2vol run in each thread of their team. */
void bkm__kern_vol2col_part(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int t);
void bkm__kern_col2vol_part(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int t);

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The even split exactly as bkm_kern_vol2col / bkm_kern_col2vol run it (one team, part t in thread
 * t), also returning the largest CPU time one thread spent on its part: the time the team would
 * take if no other tenant preempted it (memory stalls count as CPU time). */
static double even_split(int op, const bkm_conv3d_desc_t *d, float *src, float *col, int nt)
{
    double worst = 0.0;
#pragma omp parallel num_threads(nt) reduction(max : worst)
    {
        double c0 = thread_cpu_seconds();
        if (op == 0)
            bkm__kern_vol2col_part(d, src, col, omp_get_num_threads(), omp_get_thread_num());
        else
            bkm__kern_col2vol_part(d, col, src, omp_get_num_threads(), omp_get_thread_num());
        worst = thread_cpu_seconds() - c0;
    }
    return worst;
}

/* Part 1: vol2col and col2vol, serial (1) vs parallel over nt threads (an even split, and dynamic
 * chunks), interleaved repetitions: medians and minima, and the median of the per-repetition
 * ratios (serial and parallel runs adjacent in time see about the same load). */
static int bench_v2c(long long reps, int nt)
{
    enum { V_SER, V_EVEN, V_DYN, V_N };
    static const char *const vname[V_N] = {"serial", "even", "dynamic"};
    bkm_conv3d_desc_t d;
    bkm_err_t err = {0};
    double *t[2 * V_N], *ratio, *share[2 * V_N], *work[2 * V_N];
    float *src, *col;
    size_t nin, ncol;
    if (bkm_kern_conv3d_desc_parse("mb1ic64id33ih33iw18oc64kd3", 0, &d, &err) < 0) {
        fprintf(stderr, "bench_conv3d: %s\n", err.msg);
        return 1;
    }
    nin = (size_t)(d.ic * d.id * d.ih * d.iw);
    ncol = (size_t)(d.ic * d.kd * d.kh * d.kw * d.od * d.oh * d.ow);
    src = bkm_aligned_alloc(64, nin * sizeof(float));
    col = bkm_aligned_alloc(64, ncol * sizeof(float));
    ratio = calloc((size_t)reps, sizeof(double));
    int ok = src && col && ratio;
    for (int i = 0; i < 2 * V_N; i++) {
        t[i] = calloc((size_t)reps, sizeof(double));
        share[i] = calloc((size_t)reps, sizeof(double));
        work[i] = calloc((size_t)reps, sizeof(double));
        ok = ok && t[i] && share[i] && work[i];
    }
    if (!ok) {
        fprintf(stderr, "bench_conv3d: out of memory\n");
        return 3;
    }
    for (size_t i = 0; i < nin; i++)
        src[i] = (float)(i % 97) * 0.01f;
    bkm_kern_vol2col(&d, src, col, nt); /* first touch by the team, then warm every variant */
    bkm_kern_vol2col(&d, src, col, 1);
    bkm_kern_vol2col_dyn(&d, src, col, nt, 0);
    bkm_kern_col2vol(&d, col, src, nt);
    for (long long r = 0; r < reps; r++) {
        for (int v = 0; v < 2 * V_N; v++) {
            int op = v / V_N, how = (int)((v % V_N + r) % V_N); /* rotate the order over repetitions */
            double c0 = cpu_seconds(), tc0 = thread_cpu_seconds(), w = NAN;
            uint64_t t0 = bkm_now_ns();
            if (how == V_EVEN)
                w = even_split(op, &d, src, col, nt);
            else if (op == 0 && how == V_DYN)
                bkm_kern_vol2col_dyn(&d, src, col, nt, 0);
            else if (op == 0)
                bkm_kern_vol2col(&d, src, col, 1);
            else if (how == V_DYN)
                bkm_kern_col2vol_dyn(&d, col, src, nt, 0);
            else
                bkm_kern_col2vol(&d, col, src, 1);
            t[op * V_N + how][r] = (double)(bkm_now_ns() - t0) * 1e-6;
            work[op * V_N + how][r] = how == V_SER ? thread_cpu_seconds() - tc0 : w;
            /* CPU share of the threads it ran on: < 1 when other tenants took them (the process CPU
             * time also counts a finished thread spinning at the team's barrier) */
            share[op * V_N + how][r] =
                (cpu_seconds() - c0) * 1e3 / (t[op * V_N + how][r] * (how == V_SER ? 1 : nt));
        }
    }
    printf("vol2col / col2vol, one image of conv3d_2 (ic64 33x33x18, 3^3 kernel: %.1f M column entries), "
           "%lld interleaved repetitions, %d threads\n", (double)ncol / 1e6, reps, nt);
    printf("%-8s %-8s %10s %10s %9s %12s %10s %12s\n", "op", "variant", "min ms", "median ms", "speedup",
           "paired med", "cpu share", "unpreempted");
    for (int op = 0; op < 2; op++) {
        double *s = t[op * V_N], pr[V_N], un = NAN;
        for (int v = 0; v < V_N; v++) { /* paired ratios first: they need the repetition order */
            for (long long r = 0; r < reps; r++)
                ratio[r] = s[r] / t[op * V_N + v][r];
            qsort(ratio, (size_t)reps, sizeof(double), cmp_double);
            pr[v] = ratio[reps / 2];
        }
        for (long long r = 0; r < reps; r++) /* serial thread CPU / the even split's slowest part */
            ratio[r] = work[op * V_N + V_SER][r] / work[op * V_N + V_EVEN][r];
        qsort(ratio, (size_t)reps, sizeof(double), cmp_double);
        un = ratio[reps / 2];
        for (int v = 0; v < V_N; v++) {
            qsort(t[op * V_N + v], (size_t)reps, sizeof(double), cmp_double);
            qsort(share[op * V_N + v], (size_t)reps, sizeof(double), cmp_double);
        }
        for (int v = 0; v < V_N; v++) {
            const double *x = t[op * V_N + v];
            char unp[32] = "-";
            if (v == V_EVEN)
                snprintf(unp, sizeof unp, "%.2fx", un);
            printf("%-8s %-8s %10.3f %10.3f %8.2fx %11.2fx %9.0f%% %12s\n", op ? "col2vol" : "vol2col", vname[v],
                   x[0], x[reps / 2], s[reps / 2] / x[reps / 2], pr[v], 100.0 * share[op * V_N + v][reps / 2], unp);
        }
    }
    printf("(speedup: serial median / median; paired med: median over repetitions of serial / variant;\n"
           " cpu share: median of process CPU time / (wall x threads); unpreempted: median over repetitions of\n"
           " serial thread CPU time / the even split's largest per-thread CPU time, the speedup without preemption)\n\n");
    for (int i = 0; i < 2 * V_N; i++) {
        free(t[i]);
        free(share[i]);
        free(work[i]);
    }
    free(ratio);
    bkm_free(src);
    bkm_free(col);
    return 0;
}

static int create(const cfg_t *c, int b, bkm_wl_t **wl, bkm_err_t *err)
{
    bkm_wl_config_t k = b == B_NATIVE ? c->extra : (bkm_wl_config_t){0};
    char kv[160];
    int rc;
    snprintf(kv, sizeof kv, "backend=%s", backend_name[b]);
    if ((rc = bkm_wl_config_add(&k, kv, err)) < 0)
        return rc;
    snprintf(kv, sizeof kv, "batch=%lld", c->batch);
    if ((rc = bkm_wl_config_add(&k, kv, err)) < 0)
        return rc;
    snprintf(kv, sizeof kv, "shape=%s", c->shape);
    if ((rc = bkm_wl_config_add(&k, kv, err)) < 0)
        return rc;
    snprintf(kv, sizeof kv, "layers=%lld", c->layers);
    if ((rc = bkm_wl_config_add(&k, kv, err)) < 0)
        return rc;
    return bkm_wl_create(wl, "conv3d", &k, 1, err);
}

int main(int argc, char **argv)
{
    cfg_t c;
    bkm_wl_t *wl[B_COUNT] = {NULL, NULL};
    bkm_err_t err = {0};
    bkm_wl_sample_t s;
    double ms[B_COUNT] = {0}, wall[B_COUNT] = {0}, cpu[B_COUNT] = {0}, loss[B_COUNT] = {0}, flops = 0.0, peak;
    int nt, rc = 0;
    if (parse_args(argc, argv, &c) < 0)
        return 2;
    /* the native kernels' default blocking follows this host's caches (before any parallel region) */
    bkm_bench_host_caches(&c.extra.cache_l1d, &c.extra.cache_l2, &c.extra.cache_l3);
    nt = omp_get_max_threads();
    peak = bkm_kern_peak_gflops(BKM_ISA_AUTO, nt);
    if (c.reps > 0 && (rc = bench_v2c(c.reps, nt)) != 0)
        return rc;
    for (int b = 0; b < B_COUNT; b++) {
        if (!c.use[b])
            continue;
        if (create(&c, b, &wl[b], &err) < 0) {
            fprintf(stderr, "bench_conv3d: %s: %s\n", backend_name[b], err.msg);
            rc = bkm_status_exit_code(err.code);
            goto out;
        }
        flops = bkm_wl_flops(wl[b]);
    }
    for (long long i = 0; i < c.warmup + c.steps; i++)
        for (int b = 0; b < B_COUNT; b++) {
            double c0 = cpu_seconds();
            uint64_t w0 = bkm_now_ns();
            if (!wl[b])
                continue;
            if (bkm_wl_run(wl[b], &s, &err) < 0) {
                fprintf(stderr, "bench_conv3d: %s iteration %lld: %s\n", backend_name[b], i, err.msg);
                rc = bkm_status_exit_code(err.code);
                goto out;
            }
            if (i == 0)
                loss[b] = s.loss;
            if (i < c.warmup)
                continue;
            ms[b] += s.ms / (double)c.steps;
            wall[b] += (double)(bkm_now_ns() - w0) * 1e-9;
            cpu[b] += cpu_seconds() - c0;
        }
    peak = fmax(peak, bkm_kern_peak_gflops(BKM_ISA_AUTO, nt));
    printf("conv3d workload, shape %s, %d threads, %lld warm-up + %lld timed iterations per backend, interleaved\n",
           c.shape, nt, c.warmup, c.steps);
    printf("FLOPs %.2f GF/iteration (fwd + bwd, dense formula); FMA peak %.1f GF/s (measured)\n\n", flops / 1e9, peak);
    printf("%-8s %10s %9s %7s %12s %6s\n", "backend", "ms/iter", "GF/s", "%peak", "loss(1st)", "cpu%");
    for (int b = 0; b < B_COUNT; b++)
        if (wl[b])
            printf("%-8s %10.2f %9.1f %6.1f%% %12.6f %5.0f%%\n", backend_name[b], ms[b], flops / (ms[b] * 1e-3) / 1e9,
                   100.0 * flops / (ms[b] * 1e-3) / 1e9 / peak, loss[b], 100.0 * cpu[b] / (wall[b] * nt));
    if (wl[B_ONEDNN] && wl[B_NATIVE])
        printf("native/oneDNN speed: %.3f (first-iteration losses differ by %.2e relative)\n",
               ms[B_ONEDNN] / ms[B_NATIVE], fabs(loss[B_NATIVE] - loss[B_ONEDNN]) / fabs(loss[B_ONEDNN]));
    for (int b = 0; b < B_COUNT; b++)
        if (wl[b])
            printf("impl %s: %s\n", backend_name[b], bkm_wl_impl(wl[b]));
    if (c.layers)
        bkm_bench_print_layers(wl[B_NATIVE], wl[B_ONEDNN]);
    /* the seed's line (berkely.py) */
    for (int b = 0; b < B_COUNT; b++)
        if (wl[b])
            printf("%s: avg time %.4f millisecond\n", backend_name[b], ms[b]);
out:
    for (int b = 0; b < B_COUNT; b++)
        bkm_wl_destroy(wl[b]);
    return rc;
}
