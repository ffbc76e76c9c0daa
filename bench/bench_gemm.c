/* SPDX-License-Identifier: MIT */
/* bench_gemm: native SGEMM against oneDNN's dnnl_sgemm in the same process, same threads,
 * interleaved (ABAB) samples after warm-up, medians, plus the measured FMA peak. Not a test:
 * it prints figures and asserts nothing about speed. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <math.h>
#include <stdint.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "bkm/kernels.h"
#include "bench_common.h"

#define MAX_SIZES 8

typedef struct {
    int64_t m[MAX_SIZES], n[MAX_SIZES], k[MAX_SIZES];
    int n_sizes;
    int samples, warmup, threads, json;
    int cpu_clock;                 /* --clock cpu: process CPU time / threads instead of wall time */
    bkm_isa_t isa;                 /* --param isa=... (default: best of this CPU) */
    int64_t l1_bytes, l2_bytes;    /* this host's per-core L1d / L2 (hwloc), for the auto blocking */
    char ta, tb;                   /* --trans: op(A), op(B) as stored ('N' or 'T') */
    const char *param[16];         /* --param mc=... kc=... nc=... nt_jc=... (checked by gemm_cfg_set) */
    int n_params;
} bench_cfg_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_gemm [options]\n"
            "Times the native BLIS-style SGEMM (bkm_kern_sgemm) and oneDNN's dnnl_sgemm on the same\n"
            "row-major problem C = op(A) * op(B), in one process, with the same number of OpenMP threads,\n"
            "interleaved A B A B after warm-up, and prints the median GFLOP/s of each, their ratio and\n"
            "the FP32 FMA peak measured by a calibration loop on the same threads.\n\n"
            "options:\n"
            "  --size M[xNxK]   problem size (repeatable; M alone means MxMxM). Default: 2048,\n"
            "                   1024 and 4096x4096x256\n"
            "  --samples N      timed samples per implementation (>= 5, default 7)\n"
            "  --warmup N       untimed runs of each before timing (>= 1, default 2)\n"
            "  --threads N      OpenMP threads for both (default: omp_get_max_threads(), i.e.\n"
            "                   OMP_NUM_THREADS)\n"
            "  --param K=V      native tunable: mc, kc, nc, nt_jc, or isa=generic|avx2|avx512\n"
            "  --trans XY       how A and B are stored: NN (default, C = A * B), NT (C = A * B^T with\n"
            "                   B stored N x K: the FC forward), TN or TT\n"
            "  --clock wall|cpu wall: monotonic wall clock (default). cpu: process CPU time divided by\n"
            "                   the threads, an estimate that excludes time the threads were descheduled\n"
            "                   when other processes compete for the cores (spin-waiting still counts)\n"
            "  --json           one JSON object per size on stdout instead of the table\n"
            "  --help           this text\n\n"
            "example:\n"
            "  OMP_NUM_THREADS=2 KMP_AFFINITY=granularity=fine,compact bench_gemm --size 2048 --samples 9\n");
}

static int parse_size(const char *s, bench_cfg_t *cfg)
{
    long long v[3] = {0, 0, 0};
    char buf[64];
    char *tok = buf;
    int n = 0;
    if (cfg->n_sizes >= MAX_SIZES || strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    for (;;) {
        char *x = strchr(tok, 'x');
        if (x != NULL)
            *x = '\0';
        if (n == 3 || bkm_parse_int(tok, 1, 65536, &v[n]) != 0)
            return -1;
        n++;
        if (x == NULL)
            break;
        tok = x + 1;
    }
    if (n != 1 && n != 3)
        return -1;
    cfg->m[cfg->n_sizes] = v[0];
    cfg->n[cfg->n_sizes] = n == 3 ? v[1] : v[0];
    cfg->k[cfg->n_sizes] = n == 3 ? v[2] : v[0];
    cfg->n_sizes++;
    return 0;
}

static int parse_args(int argc, char **argv, bench_cfg_t *cfg, bkm_err_t *err)
{
    long long v;
    memset(cfg, 0, sizeof(*cfg));
    cfg->samples = 7;
    cfg->warmup = 2;
    cfg->threads = omp_get_max_threads();
    cfg->isa = BKM_ISA_AUTO;
    cfg->ta = cfg->tb = 'N';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--json") == 0) {
            cfg->json = 1;
            continue;
        }
        if (strcmp(a, "--size") != 0 && strcmp(a, "--samples") != 0 && strcmp(a, "--warmup") != 0 &&
            strcmp(a, "--threads") != 0 && strcmp(a, "--param") != 0 && strcmp(a, "--clock") != 0 &&
            strcmp(a, "--trans") != 0)
            return bkm_err_set(err, BKM_EINVAL, "unknown option '%s' (see --help)", a);
        if (val == NULL)
            return bkm_err_set(err, BKM_EINVAL, "%s needs a value (see --help)", a);
        i++;
        if (strcmp(a, "--trans") == 0) {
            if (strlen(val) != 2 || (val[0] != 'N' && val[0] != 'T') || (val[1] != 'N' && val[1] != 'T'))
                return bkm_err_set(err, BKM_EINVAL, "--trans '%s' is not NN, NT, TN or TT", val);
            cfg->ta = val[0];
            cfg->tb = val[1];
        } else if (strcmp(a, "--size") == 0) {
            if (parse_size(val, cfg) != 0)
                return bkm_err_set(err, BKM_EINVAL, "--size '%s' is not M or MxNxK with 1..65536 (max %d sizes)",
                                   val, MAX_SIZES);
        } else if (strcmp(a, "--samples") == 0) {
            if (bkm_parse_int(val, 5, 1000, &v) != 0)
                return bkm_err_set(err, BKM_EINVAL, "--samples '%s' is not an integer in [5, 1000]", val);
            cfg->samples = (int)v;
        } else if (strcmp(a, "--warmup") == 0) {
            if (bkm_parse_int(val, 1, 1000, &v) != 0)
                return bkm_err_set(err, BKM_EINVAL, "--warmup '%s' is not an integer in [1, 1000]", val);
            cfg->warmup = (int)v;
        } else if (strcmp(a, "--threads") == 0) {
            if (bkm_parse_int(val, 1, 4096, &v) != 0)
                return bkm_err_set(err, BKM_EINVAL, "--threads '%s' is not an integer in [1, 4096]", val);
            cfg->threads = (int)v;
        } else if (strcmp(a, "--clock") == 0) {
            if (strcmp(val, "wall") != 0 && strcmp(val, "cpu") != 0)
                return bkm_err_set(err, BKM_EINVAL, "--clock '%s' is not wall or cpu", val);
            cfg->cpu_clock = strcmp(val, "cpu") == 0;
        } else if (strcmp(a, "--param") == 0) {
            if (strncmp(val, "isa=", 4) == 0) {
                int rc = bkm_kern_isa_parse(val + 4, &cfg->isa, err);
                if (rc < 0)
                    return rc;
            } else if (cfg->n_params < 16) {
                cfg->param[cfg->n_params++] = val;
            } else {
                return bkm_err_set(err, BKM_EINVAL, "--param '%s': at most 16 parameters", val);
            }
        }
    }
    if (cfg->n_sizes == 0) {
        parse_size("2048", cfg);
        parse_size("1024", cfg);
        parse_size("4096x4096x256", cfg);
    }
    return BKM_OK;
}

/* Nanoseconds on the chosen clock. */
static uint64_t bench_clock_ns(const bench_cfg_t *cfg)
{
    struct timespec ts;
    if (!cfg->cpu_clock)
        return bkm_now_ns();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) / (uint64_t)cfg->threads;
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

/* Aligned buffer, first touched by the threads that will compute on it. */
static float *alloc_touch(size_t n, int threads, uint64_t seed)
{
    float *p = bkm_aligned_alloc(4096, n * sizeof(float));
    if (p == NULL)
        return NULL;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++) {
        uint64_t s = (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
        p[i] = (float)((s >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

static int run_native(const bench_cfg_t *cfg, const bkm_gemm_cfg_t *g, int64_t m, int64_t n, int64_t k,
                      const float *a, const float *b, float *c, void *ws, bkm_err_t *err)
{
    return bkm_kern_sgemm(g, cfg->ta, cfg->tb, m, n, k, 1.0f, a, cfg->ta == 'T' ? m : k, b, cfg->tb == 'T' ? k : n,
                          0.0f, c, n, ws, err);
}

static int run_dnnl(const bench_cfg_t *cfg, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                    float *c, bkm_err_t *err)
{
    dnnl_status_t st = dnnl_sgemm(cfg->ta, cfg->tb, m, n, k, 1.0f, a, cfg->ta == 'T' ? m : k, b,
                                  cfg->tb == 'T' ? k : n, 0.0f, c, n);
    return st == dnnl_success ? BKM_OK : bkm_err_set(err, BKM_EDEP, "dnnl_sgemm: status %d", (int)st);
}

/* Native configuration: ISA defaults, then the --param values by name. */
static int bench_gemm_cfg(const bench_cfg_t *cfg, bkm_gemm_cfg_t *g, bkm_err_t *err)
{
    int rc;
    if ((rc = bkm_kern_gemm_cfg_init(g, cfg->isa, err)) < 0)
        return rc;
    g->nt = cfg->threads;
    for (int i = 0; i < cfg->n_params; i++) {
        char key[32];
        long long v;
        const char *eq = strchr(cfg->param[i], '=');
        size_t len = eq != NULL ? (size_t)(eq - cfg->param[i]) : 0;
        if (eq == NULL || len == 0 || len >= sizeof key || bkm_parse_int(eq + 1, INT32_MIN, INT32_MAX, &v) != 0)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s' is not key=integer", cfg->param[i]);
        memcpy(key, cfg->param[i], len);
        key[len] = '\0';
        if ((rc = bkm_kern_gemm_cfg_set(g, key, (int32_t)v, err)) < 0)
            return rc;
    }
    return bkm_kern_gemm_cfg_check(g, err);
}

static int bench_one(const bench_cfg_t *cfg, int s, double peak, bkm_err_t *err)
{
    const int64_t m = cfg->m[s], n = cfg->n[s], k = cfg->k[s];
    const double flops = bkm_kern_gemm_flops(m, n, k);
    bkm_gemm_cfg_t g;
    bkm_gemm_plan_t plan;
    float *a = NULL, *b = NULL, *c1 = NULL, *c2 = NULL;
    double *t_nat = NULL, *t_dnn = NULL, max_diff = 0.0, g_nat, g_dnn, b_nat, b_dnn;
    void *ws = NULL;
    int rc;

    if ((rc = bench_gemm_cfg(cfg, &g, err)) < 0)
        return rc;
    g.l1_bytes = cfg->l1_bytes; /* the blocking the tunables leave open follows this host's caches */
    g.l2_bytes = cfg->l2_bytes;
    if ((rc = bkm_kern_gemm_plan(&g, cfg->ta, cfg->tb, m, n, k, &plan, err)) < 0)
        return rc;
    a = alloc_touch((size_t)(m * k), cfg->threads, 1);
    b = alloc_touch((size_t)(k * n), cfg->threads, 2);
    c1 = alloc_touch((size_t)(m * n), cfg->threads, 3);
    c2 = alloc_touch((size_t)(m * n), cfg->threads, 4);
    ws = bkm_aligned_alloc(4096, bkm_kern_gemm_workspace_bytes(&g));
    t_nat = calloc((size_t)cfg->samples, sizeof(double));
    t_dnn = calloc((size_t)cfg->samples, sizeof(double));
    if (a == NULL || b == NULL || c1 == NULL || c2 == NULL || ws == NULL || t_nat == NULL || t_dnn == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for %lldx%lldx%lld", (long long)m, (long long)n,
                         (long long)k);
        goto out;
    }
    for (int w = 0; w < cfg->warmup; w++) {
        if ((rc = run_native(cfg, &g, m, n, k, a, b, c1, ws, err)) < 0 || (rc = run_dnnl(cfg, m, n, k, a, b, c2, err)) < 0)
            goto out;
    }
    /* Both must compute the same product (the sums differ only in rounding order). */
    for (size_t i = 0; i < (size_t)(m * n); i++) {
        double d = fabs((double)c1[i] - (double)c2[i]) / (1.0 + fabs((double)c2[i]));
        if (d > max_diff)
            max_diff = d;
    }
    for (int r = 0; r < cfg->samples; r++) {
        uint64_t t0 = bench_clock_ns(cfg);
        if ((rc = run_native(cfg, &g, m, n, k, a, b, c1, ws, err)) < 0)
            goto out;
        uint64_t t1 = bench_clock_ns(cfg);
        if ((rc = run_dnnl(cfg, m, n, k, a, b, c2, err)) < 0)
            goto out;
        uint64_t t2 = bench_clock_ns(cfg);
        t_nat[r] = (double)(t1 - t0);
        t_dnn[r] = (double)(t2 - t1);
    }
    g_nat = flops / median(t_nat, cfg->samples); /* median() sorts: [0] is then the best sample */
    g_dnn = flops / median(t_dnn, cfg->samples);
    b_nat = flops / t_nat[0];
    b_dnn = flops / t_dnn[0];
    if (cfg->json) {
        char peak_s[32];
        if (isfinite(peak))
            snprintf(peak_s, sizeof peak_s, "%.2f", peak);
        else
            snprintf(peak_s, sizeof peak_s, "null"); /* not measured on this clock */
        printf("{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"threads\":%d,\"ukr\":\"%s\",\"mc\":%d,\"kc\":%d,\"nc\":%d,"
               "\"nt_jc\":%d,\"trans\":\"%c%c\",\"path\":\"%s\",\"kc_in_effect\":%d,\"k_passes\":%d,\"nc_in_effect\":%d,\"nt_jc_in_effect\":%d,"
               "\"samples\":%d,\"native_gflops\":%.2f,\"onednn_gflops\":%.2f,\"ratio\":%.4f,"
               "\"native_best_gflops\":%.2f,\"onednn_best_gflops\":%.2f,\"peak_gflops\":%s,\"max_rel_diff\":%.3g}\n",
               (long long)m, (long long)n, (long long)k, cfg->threads, bkm_kern_gemm_ukr_name(&g), g.mc, g.kc, g.nc,
               g.nt_jc, cfg->ta, cfg->tb, plan.path, plan.kc, plan.k_passes, plan.nc, plan.nt_jc, cfg->samples, g_nat, g_dnn, g_nat / g_dnn, b_nat, b_dnn, peak_s, max_diff);
    } else {
        printf("%5lldx%5lldx%5lld  %7.1f  %7.1f  %6.3f  %5.1f%%  %5.1f%%  %7.1f  %7.1f  %6.3f  %.1e  %s kc %dx%d nc %d "
               "jc %d\n",
               (long long)m, (long long)n, (long long)k, g_nat, g_dnn, g_nat / g_dnn, 100.0 * g_nat / peak,
               100.0 * g_dnn / peak, b_nat, b_dnn, b_nat / b_dnn, max_diff, plan.path, plan.kc, plan.k_passes, plan.nc,
               plan.nt_jc);
    }
    if (max_diff > 1e-3) /* a wrong result is never reported as a speed */
        rc = bkm_err_set(err, BKM_EVERIFY, "native and oneDNN results differ (max relative %.3g)", max_diff);
    else
        rc = BKM_OK;
out:
    bkm_free(a);
    bkm_free(b);
    bkm_free(c1);
    bkm_free(c2);
    bkm_free(ws);
    free(t_nat);
    free(t_dnn);
    return rc;
}

int main(int argc, char **argv)
{
    bench_cfg_t cfg;
    bkm_err_t err = {0};
    bkm_gemm_cfg_t g;
    double peak;
    int rc;
    if ((rc = parse_args(argc, argv, &cfg, &err)) < 0) {
        fprintf(stderr, "bench_gemm: %s\n", err.msg);
        return bkm_status_exit_code(rc);
    }
    if ((rc = bench_gemm_cfg(&cfg, &g, &err)) < 0) {
        fprintf(stderr, "bench_gemm: %s\n", err.msg);
        return bkm_status_exit_code(rc);
    }
    /* the default blocking the tunables leave open follows this host's L2 (before any parallel region) */
    bkm_bench_host_caches(&cfg.l1_bytes, &cfg.l2_bytes, NULL);
    g.l1_bytes = cfg.l1_bytes;
    g.l2_bytes = cfg.l2_bytes;
    omp_set_num_threads(cfg.threads); /* oneDNN uses omp_get_max_threads() */
    peak = bkm_kern_peak_gflops(g.isa, cfg.threads);
    /* The calibration runs on the wall clock; against CPU-time figures its % would mislead. */
    if (cfg.cpu_clock)
        peak = NAN;
    if (!cfg.json) {
        char kc_s[16];
        if (g.kc > 0)
            snprintf(kc_s, sizeof kc_s, "%d", (int)g.kc);
        else
            snprintf(kc_s, sizeof kc_s, "auto");
        printf("C = op(A) op(B), %c%c; threads %d, native %s (mc/kc/nc %d/%s/%d), oneDNN %d.%d.%d, samples %d "
               "(ABAB), %s clock\n",
               cfg.ta, cfg.tb, cfg.threads, bkm_kern_gemm_ukr_name(&g), g.mc, kc_s, g.nc, dnnl_version()->major,
               dnnl_version()->minor, dnnl_version()->patch, cfg.samples,
               cfg.cpu_clock ? "process-CPU-time / threads" : "wall");
        if (cfg.cpu_clock)
            printf("FMA peak: not comparable with CPU-time figures (run with --clock wall)\n");
        else
            printf("measured %s FMA peak on %d threads: %.1f GFLOP/s\n", bkm_kern_isa_name(g.isa), cfg.threads, peak);
        printf("%-19s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %6s  %-7s  %s\n", "M x N x K", "native", "oneDNN", "ratio",
               "nat%pk", "dnn%pk", "nat-best", "dnn-best", "ratio", "maxdiff", "native blocks in effect");
        printf("%-19s  %-43s  %-25s\n", "", "(GFLOP/s, median of the ABAB samples)", "(best sample)");
    }
    for (int s = 0; s < cfg.n_sizes; s++) {
        if ((rc = bench_one(&cfg, s, peak, &err)) < 0) {
            fprintf(stderr, "bench_gemm: %s\n", err.msg);
            return bkm_status_exit_code(rc);
        }
    }
    return 0;
}
