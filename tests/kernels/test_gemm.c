/* SPDX-License-Identifier: MIT */
/* SGEMM tests. `test_gemm` checks tunables, argument validation and ISA parsing.
 * `test_gemm <isa>` checks that ISA's micro-kernel path against the double-accumulation reference
 * on odd shapes, all transposes, alpha/beta (beta = 0 over a NaN-filled C), padded leading
 * dimensions, blocks smaller and larger than the problem, and 1 or 2 threads; it exits 77
 * (CTest: Skipped) saying why when this CPU lacks the ISA. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"

/* ISA under test, set once by main() before any test runs. */
static bkm_isa_t test_isa = BKM_ISA_GENERIC;

static const int64_t sizes[] = {1, 2, 3, 7, 13, 31, 33, 64, 65, 100, 257};
#define N_SIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

typedef struct {
    float alpha, beta;
} ab_t;
static const ab_t abs_list[] = {{1.0f, 0.0f}, {0.5f, -1.5f}, {-2.0f, 1.0f}, {1.25f, 0.75f}};

/* Deterministic values in [-1, 1). */
static float rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

typedef struct {
    int blocks;   /* 0 = defaults (larger than the small problems), 1 = small, 2 = odd kc,
                   * 3 = auto kc with an L2 that makes it deeper than the default (see deep_l2) */
    int nt, nt_jc;
    int ld_pad;   /* extra elements in every leading dimension */
} run_opts_t;

/* An L2 size for which the auto kc of a call with more rows than mc is DEEP_KC: deeper than every
 * micro-kernel's default, so that a k of a few hundred takes several passes of equal depth. */
#define DEEP_KC 576
static int64_t deep_l2(const bkm_gemm_cfg_t *cfg)
{
    return (int64_t)DEEP_KC * 2 * (int64_t)sizeof(float) * (cfg->mc + cfg->nr);
}

static void make_cfg(bkm_gemm_cfg_t *cfg, const run_opts_t *o)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_gemm_cfg_init(cfg, test_isa, &err), BKM_OK);
    if (o->blocks == 1) {
        cfg->mc = 2 * cfg->mr;
        cfg->kc = 16;
        cfg->nc = 2 * cfg->nr;
    } else if (o->blocks == 2) {
        cfg->mc = cfg->mr;
        cfg->kc = 7;
        cfg->nc = 3 * cfg->nr;
    } else if (o->blocks == 3) {
        cfg->mc = 2 * cfg->mr;
        cfg->kc = 0;
        cfg->l2_bytes = deep_l2(cfg);
    }
    cfg->nt = o->nt;
    cfg->nt_jc = o->nt_jc;
    ck_assert_msg(bkm_kern_gemm_cfg_check(cfg, &err) == BKM_OK, "cfg: %s", err.msg);
}

/* Run one case and compare with the reference: |c - ref| <= (k + 2) * eps * (|alpha| |A||B| + |beta C|)
 * element-wise, the standard bound for a length-k dot product in float; cells outside the
 * m x n block (leading-dimension padding) must be untouched. */
static void check_case(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                       const run_opts_t *o)
{
    bkm_gemm_cfg_t cfg;
    bkm_err_t err = {0};
    uint64_t seed = (uint64_t)(m * 1000003 + n * 1009 + k) ^ ((uint64_t)ta << 40) ^ ((uint64_t)tb << 48);
    int64_t ar = (ta == 'T') ? k : m, ac = (ta == 'T') ? m : k;
    int64_t br = (tb == 'T') ? n : k, bc = (tb == 'T') ? k : n;
    int64_t lda = ac + o->ld_pad, ldb = bc + o->ld_pad, ldc = n + o->ld_pad;
    size_t na = (size_t)(ar * lda), nb = (size_t)(br * ldb), nc = (size_t)(m * ldc);
    float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
    float *aa = malloc(na * sizeof(float)), *babs = malloc(nb * sizeof(float));
    float *c = malloc(nc * sizeof(float)), *ref = malloc(nc * sizeof(float)), *bound = malloc(nc * sizeof(float));
    void *ws;
    size_t ws_bytes;

    make_cfg(&cfg, o);
    ws_bytes = bkm_kern_gemm_workspace_bytes(&cfg);
    ck_assert_uint_gt(ws_bytes, 0);
    ws = bkm_aligned_alloc(64, ws_bytes);
    ck_assert_ptr_nonnull(ws);
    for (size_t i = 0; i < na; i++) {
        a[i] = rnd(&seed);
        aa[i] = fabsf(a[i]);
    }
    for (size_t i = 0; i < nb; i++) {
        b[i] = rnd(&seed);
        babs[i] = fabsf(b[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        ref[i] = rnd(&seed);
        bound[i] = fabsf(ref[i]);
        /* beta == 0: C may hold NaN and must not be read; padding holds a sentinel. */
        c[i] = (beta == 0.0f) ? NAN : ref[i];
    }
    bkm_kern_sgemm_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ref, ldc);
    bkm_kern_sgemm_ref(ta, tb, m, n, k, fabsf(alpha), aa, lda, babs, ldb, fabsf(beta), bound, ldc);

    ck_assert_msg(bkm_kern_sgemm(&cfg, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ws, &err) == BKM_OK,
                  "sgemm: %s", err.msg);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < ldc; j++) {
            float got = c[i * ldc + j], want = ref[i * ldc + j];
            if (j >= n) {
                if (beta == 0.0f)
                    ck_assert_msg(isnan(got), "padding C[%lld][%lld] was written", (long long)i, (long long)j);
                else
                    ck_assert_msg(got == want, "padding C[%lld][%lld] was written", (long long)i, (long long)j);
                continue;
            }
            double tol = (double)(k + 2) * FLT_EPSILON * bound[i * ldc + j] + 1e-30;
            ck_assert_msg(fabs((double)got - (double)want) <= tol,
                          "%s %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g blocks=%d nt=%d nt_jc=%d ld_pad=%d: "
                          "C[%lld][%lld]=%.9g, reference %.9g (tol %.3g)",
                          bkm_kern_isa_name(test_isa), ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta,
                          o->blocks, o->nt, o->nt_jc, o->ld_pad, (long long)i, (long long)j, got, want, tol);
        }
    }
    bkm_free(ws);
    free(a);
    free(b);
    free(aa);
    free(babs);
    free(c);
    free(ref);
    free(bound);
}

/* Every (m, n, k) of the size list on one thread; transposes, alpha/beta, blocking and
 * leading-dimension padding rotate with the case index (different moduli, so they mix). */
START_TEST(odd_shapes_vs_reference)
{
    static const char tr[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    int idx = 0;
    for (int im = 0; im < N_SIZES; im++) {
        for (int in = 0; in < N_SIZES; in++) {
            for (int ik = 0; ik < N_SIZES; ik++, idx++) {
                run_opts_t o = {.blocks = (idx / 5) % 3, .nt = 1, .nt_jc = 1, .ld_pad = (idx / 2) % 2 ? 3 : 0};
                const ab_t *ab = &abs_list[(idx / 3) % 4];
                check_case(tr[idx % 4][0], tr[idx % 4][1], sizes[im], sizes[in], sizes[ik], ab->alpha, ab->beta, &o);
            }
        }
    }
}
END_TEST

/* All four transpose combinations with every alpha/beta pair, on shapes with edge tiles in m, n
 * and a k tail, with default and small blocks and padded leading dimensions. */
START_TEST(all_transposes_alpha_beta)
{
    static const char tr[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 4; i++) {
            for (int blocks = 0; blocks < 4; blocks++) {
                run_opts_t o = {.blocks = blocks, .nt = 1, .nt_jc = 1, .ld_pad = 5};
                check_case(tr[t][0], tr[t][1], 65, 33, 100, abs_list[i].alpha, abs_list[i].beta, &o);
                if (blocks == 3) /* rows > mc and k > DEEP_KC: three passes of 500 */
                    check_case(tr[t][0], tr[t][1], 70, 40, 1500, abs_list[i].alpha, abs_list[i].beta, &o);
                check_case(tr[t][0], tr[t][1], 257, 31, 13, abs_list[i].alpha, abs_list[i].beta, &o);
                check_case(tr[t][0], tr[t][1], 1, 257, 1, abs_list[i].alpha, abs_list[i].beta, &o);
            }
        }
    }
}
END_TEST

/* Two threads, split over IC (nt_jc = 1), over JC (nt_jc = 2) and auto (0). */
START_TEST(two_threads)
{
    static const int jcs[] = {1, 2, 0};
    for (int t = 0; t < 3; t++) {
        for (int blocks = 0; blocks < 4; blocks++) {
            run_opts_t o = {.blocks = blocks, .nt = 2, .nt_jc = jcs[t], .ld_pad = 1};
            if (blocks == 3)
                check_case('N', 'N', 130, 70, 1201, 1.0f, 0.5f, &o);
            check_case('N', 'N', 257, 100, 65, 1.0f, 0.0f, &o);
            check_case('T', 'T', 100, 257, 33, 0.5f, -1.5f, &o);
            check_case('N', 'T', 3, 7, 257, -2.0f, 1.0f, &o);  /* fewer rows/columns than threads' tiles */
            check_case('T', 'N', 1, 1, 1, 1.0f, 0.0f, &o);
        }
    }
}
END_TEST

/* The same bits for 1, 2 and 3 threads and any split: every element is computed by one thread in
 * one order (the auto depth is decided on the shape, not on a thread's share), on the packed path
 * (auto kc deeper than the default, short last row panel) and on the dot path (N,T, few rows). */
START_TEST(same_bits_for_any_thread_count)
{
    static const struct { char ta, tb; int64_t m, n, k; int blocks; } cases[] = {
        {'N', 'N', 130, 70, 1201, 3}, {'N', 'N', 40, 70, 1100, 3}, {'T', 'N', 100, 65, 700, 3},
        {'N', 'T', 20, 50, 1300, 0},
        {'N', 'T', 3, 7, 257, 0},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t m = cases[ci].m, n = cases[ci].n, k = cases[ci].k;
        const int64_t lda = cases[ci].ta == 'T' ? m : k, ldb = cases[ci].tb == 'T' ? k : n;
        float *a = malloc((size_t)(m * k) * sizeof(float)), *b = malloc((size_t)(k * n) * sizeof(float));
        float *c[4];
        uint64_t seed = 99 + ci;
        for (int64_t i = 0; i < m * k; i++)
            a[i] = rnd(&seed);
        for (int64_t i = 0; i < k * n; i++)
            b[i] = rnd(&seed);
        for (int t = 0; t < 4; t++) { /* nt 1; 2 auto; 2 split over rows; 3 */
            static const int nts[4] = {1, 2, 2, 3}, jcs[4] = {1, 0, 1, 0};
            run_opts_t o = {.blocks = cases[ci].blocks, .nt = nts[t], .nt_jc = jcs[t]};
            bkm_gemm_cfg_t cfg;
            bkm_err_t err = {0};
            void *ws;
            make_cfg(&cfg, &o);
            ws = bkm_aligned_alloc(64, bkm_kern_gemm_workspace_bytes(&cfg));
            c[t] = malloc((size_t)(m * n) * sizeof(float));
            ck_assert_ptr_nonnull(ws);
            ck_assert_int_eq(bkm_kern_sgemm(&cfg, cases[ci].ta, cases[ci].tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f,
                                            c[t], n, ws, &err), BKM_OK);
            bkm_free(ws);
            ck_assert_msg(memcmp(c[0], c[t], (size_t)(m * n) * sizeof(float)) == 0,
                          "%c%c %lldx%lldx%lld: nt=%d nt_jc=%d differs from one thread", cases[ci].ta, cases[ci].tb,
                          (long long)m, (long long)n, (long long)k, nts[t], jcs[t]);
        }
        for (int t = 0; t < 4; t++)
            free(c[t]);
        free(a);
        free(b);
    }
}
END_TEST

/* nt = 1 called from inside a parallel region: each thread its own C and workspace. */
START_TEST(nt1_inside_parallel_region)
{
    int failures = 0;
#pragma omp parallel num_threads(2) reduction(+ : failures)
    {
        bkm_gemm_cfg_t cfg;
        bkm_err_t err = {0};
        int64_t m = 33 + omp_get_thread_num(), n = 65, k = 31;
        float *a = malloc((size_t)(m * k) * sizeof(float)), *b = malloc((size_t)(k * n) * sizeof(float));
        float *c = malloc((size_t)(m * n) * sizeof(float)), *ref = malloc((size_t)(m * n) * sizeof(float));
        uint64_t seed = 7u + (uint64_t)omp_get_thread_num();
        void *ws = NULL;
        if (bkm_kern_gemm_cfg_init(&cfg, test_isa, &err) != BKM_OK)
            failures++;
        cfg.nt = 1;
        ws = bkm_aligned_alloc(64, bkm_kern_gemm_workspace_bytes(&cfg));
        for (int64_t i = 0; i < m * k; i++)
            a[i] = rnd(&seed);
        for (int64_t i = 0; i < k * n; i++)
            b[i] = rnd(&seed);
        bkm_kern_sgemm_ref('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, ref, n);
        if (bkm_kern_sgemm(&cfg, 'N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n, ws, &err) != BKM_OK)
            failures++;
        for (int64_t i = 0; i < m * n; i++)
            if (fabsf(c[i] - ref[i]) > 1e-4f * (float)k)
                failures++;
        bkm_free(ws);
        free(a);
        free(b);
        free(c);
        free(ref);
    }
    ck_assert_int_eq(failures, 0);
}
END_TEST

/* Degenerate sizes: m or n = 0 touch nothing; k = 0 or alpha = 0 only scale C by beta. */
START_TEST(degenerate_sizes)
{
    bkm_gemm_cfg_t cfg;
    bkm_err_t err = {0};
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[4] = {NAN, NAN, NAN, NAN};
    void *ws;
    ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, test_isa, &err), BKM_OK);
    cfg.nt = 1;
    ws = bkm_aligned_alloc(64, bkm_kern_gemm_workspace_bytes(&cfg));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_OK);
    ck_assert(isnan(c[0]));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 0, 1.0f, a, 1, b, 2, 0.0f, c, 2, ws, &err), BKM_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(c[i] == 0.0f);
    c[0] = 2.0f;
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 0.0f, a, 2, b, 2, 0.5f, c, 2, ws, &err), BKM_OK);
    ck_assert(c[0] == 1.0f);
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_OK);
    ck_assert(c[0] == 3.0f && c[1] == 3.0f && c[2] == 7.0f && c[3] == 7.0f);
    bkm_free(ws);
}
END_TEST

/* ---- ISA-independent tests (run by `test_gemm` without an argument) -------------------- */

START_TEST(cfg_defaults_are_valid_and_published)
{
    static const bkm_isa_t isas[] = {BKM_ISA_GENERIC, BKM_ISA_AVX2, BKM_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        bkm_gemm_cfg_t cfg;
        bkm_err_t err = {0};
        size_t np = 0;
        const bkm_param_desc_t *p;
        if ((int)isas[i] > (int)bkm_kern_isa_detect()) {
            ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, isas[i], &err), BKM_ENOTSUP);
            ck_assert_ptr_nonnull(strstr(err.msg, bkm_kern_isa_name(isas[i])));
            continue;
        }
        ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, isas[i], &err), BKM_OK);
        ck_assert_int_eq(cfg.isa, isas[i]);
        ck_assert_int_ge(cfg.nt, 1);
        ck_assert_int_eq(bkm_kern_gemm_cfg_check(&cfg, &err), BKM_OK);
        ck_assert_uint_gt(bkm_kern_gemm_workspace_bytes(&cfg), 0);
        p = bkm_kern_gemm_params(isas[i], &np);
        ck_assert_uint_eq(np, 4);
        ck_assert_str_eq(p[0].name, "mc");
        ck_assert_int_eq(p[0].def, cfg.mc);
        ck_assert_int_eq(p[0].mult_of, cfg.mr);
        ck_assert_str_eq(p[1].name, "kc");
        ck_assert_int_eq(p[1].def, 0); /* auto */
        ck_assert_int_eq(cfg.kc, 0);
        ck_assert_str_eq(p[2].name, "nc");
        ck_assert_int_eq(p[2].def, cfg.nc);
        ck_assert_int_eq(p[2].mult_of, cfg.nr);
        ck_assert_str_eq(p[3].name, "nt_jc");
        for (size_t j = 0; j < np; j++)
            ck_assert(p[j].min <= p[j].def && p[j].def <= p[j].max);
        ck_assert_ptr_nonnull(strstr(bkm_kern_gemm_ukr_name(&cfg), bkm_kern_isa_name(isas[i])));
    }
}
END_TEST

START_TEST(cfg_check_names_bad_values)
{
    bkm_gemm_cfg_t cfg, bad;
    bkm_err_t err = {0};
    char want[128];
    ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, BKM_ISA_AUTO, &err), BKM_OK);

    bad = cfg;
    bad.mc = cfg.mr * 7 + 1;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    snprintf(want, sizeof want, "mc=%d is not a multiple of mr=%d", bad.mc, cfg.mr);
    ck_assert_str_eq(err.msg, want);

    bad = cfg;
    bad.kc = 0; /* auto */
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_OK);
    bad.kc = -1;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "kc=-1 is out of range"));

    bad = cfg;
    bad.kc = 100000;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "kc=100000"));

    bad = cfg;
    bad.nc = cfg.nr + 1;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    snprintf(want, sizeof want, "nc=%d is not a multiple of nr=%d", bad.nc, cfg.nr);
    ck_assert_str_eq(err.msg, want);

    bad = cfg;
    bad.mc = 0;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mc=0"));

    bad = cfg;
    bad.nt = 2;
    bad.nt_jc = 3;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "nt_jc=3 does not divide nt=2");

    bad = cfg;
    bad.nt = 0;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nt=0"));

    bad = cfg;
    bad.mr = cfg.mr + 1;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "micro-kernel"));

    bad = cfg;
    bad.isa = BKM_ISA_AUTO;
    ck_assert_int_eq(bkm_kern_gemm_cfg_check(&bad, &err), BKM_EINVAL);

    /* cfg_set: by name, same rules. */
    bad = cfg;
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "mc", 100 * cfg.mr, &err), BKM_OK);
    ck_assert_int_eq(bad.mc, 100 * cfg.mr);
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "mc", cfg.mr + 1, &err), BKM_EINVAL);
    ck_assert_int_eq(bad.mc, 100 * cfg.mr);
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "kc", 512, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "nc", 4 * cfg.nr, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "nt_jc", -1, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nt_jc=-1"));
    ck_assert_int_eq(bkm_kern_gemm_cfg_set(&bad, "bogus", 1, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'bogus'"));
}
END_TEST

/* The no-allocation check refuses what op creation refuses, with the same message, and names
 * the ISA whose micro-tile the rule comes from. */
START_TEST(params_check_agrees_with_op_create)
{
    static const struct { const char *isa, *kv[2]; int nt; } cases[] = {
        {"avx2", {"mc=56", NULL}, 0},    {"avx2", {"mc=60", NULL}, 0},      {"avx512", {"mc=56", NULL}, 0},
        {"avx512", {"mc=60", NULL}, 0},  {"generic", {"nc=12", NULL}, 0},   {"generic", {"nc=16", NULL}, 0},
        {"avx2", {"kc=0", NULL}, 0},     {"avx2", {"nt_jc=3", NULL}, 2},    {"avx2", {"nt_jc=2", NULL}, 2},
        {"avx2", {"mc=12", "nc=40"}, 0}, {"avx512", {"mc=28", "nc=64"}, 0},
    };
    bkm_isa_t best = bkm_kern_isa_detect();
    int refused = 0, accepted = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bkm_kern_params_t p;
        bkm_kern_op_t *op = NULL;
        bkm_err_t e_check = {0}, e_op = {0};
        char kv[32];
        int rc_check, rc_op;
        bkm_kern_params_init(&p);
        snprintf(kv, sizeof kv, "isa=%s", cases[i].isa);
        if (bkm_kern_params_add(&p, kv, &e_check) == BKM_ENOTSUP || (int)p.isa > (int)best)
            continue; /* this CPU lacks the ISA: nothing to compare */
        for (int k = 0; k < 2 && cases[i].kv[k]; k++)
            ck_assert_int_eq(bkm_kern_params_add(&p, cases[i].kv[k], &e_check), BKM_OK);
        rc_check = bkm_kern_gemm_params_check(&p, cases[i].nt, &e_check);
        omp_set_num_threads(cases[i].nt > 0 ? cases[i].nt : 1);
        rc_op = bkm_kern_gemm_op_create(&op, 8, 8, 8, BKM_BACKEND_NATIVE, &p, &e_op);
        bkm_kern_op_destroy(op);
        ck_assert_msg(rc_check == rc_op, "case %zu (%s %s): check %d (%s), op_create %d (%s)", i, kv, cases[i].kv[0],
                      rc_check, e_check.msg, rc_op, e_op.msg);
        if (rc_check < 0) {
            ck_assert_ptr_nonnull(strstr(e_check.msg, e_op.msg));
            ck_assert_ptr_nonnull(strstr(e_check.msg, kv));
            refused++;
        } else {
            accepted++;
        }
    }
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(accepted, 0);
    if (best >= BKM_ISA_AVX2) {
        bkm_kern_params_t p;
        bkm_err_t err = {0};
        bkm_kern_params_init(&p);
        ck_assert_int_eq(bkm_kern_params_add(&p, "isa=avx2", &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_params_add(&p, "mc=56", &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_gemm_params_check(&p, 0, &err), BKM_EINVAL);
        ck_assert_str_eq(err.msg, "isa=avx2: parameter mc=56 is not a multiple of 6");
        /* thread count unknown: nt_jc only within its bounds */
        bkm_kern_params_init(&p);
        ck_assert_int_eq(bkm_kern_params_add(&p, "nt_jc=3", &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_gemm_params_check(&p, 0, &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_gemm_params_check(&p, 4, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "nt_jc=3 does not divide nt=4"));
        ck_assert_int_eq(bkm_kern_gemm_params_check(&p, 6, &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_gemm_params_check(NULL, 3, &err), BKM_OK);
    }
}
END_TEST

/* What the auto blocking resolves to: the default depth for a call whose threads each have one row
 * block, L2-deep passes of equal depth when the packed B block serves several, a given kc as is,
 * and a workspace that holds the deepest block. */
START_TEST(plan_follows_l2_and_rows)
{
    bkm_gemm_cfg_t cfg;
    bkm_gemm_plan_t plan;
    bkm_err_t err = {0};
    run_opts_t o = {.blocks = 3, .nt = 1, .nt_jc = 1};
    int32_t kc_def;
    make_cfg(&cfg, &o);
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'N', cfg.mc, 100, 1500, &plan, &err), BKM_OK); /* one row block */
    kc_def = plan.kc;
    ck_assert_int_lt(kc_def, DEEP_KC);
    ck_assert_int_eq(plan.k_passes, (1500 + kc_def - 1) / kc_def);
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'N', cfg.mc + 1, 100, 1500, &plan, &err), BKM_OK);
    ck_assert_int_eq(plan.kc, 500);
    ck_assert_int_eq(plan.k_passes, 3);
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'N', 1000, 100, DEEP_KC, &plan, &err), BKM_OK);
    ck_assert_int_eq(plan.kc, DEEP_KC);
    ck_assert_int_eq(plan.k_passes, 1);
    ck_assert_uint_ge(bkm_kern_gemm_workspace_bytes(&cfg),
                      (size_t)DEEP_KC * (size_t)(cfg.mc + cfg.nc) * sizeof(float));
    cfg.kc = 300; /* given: fixed, the last pass shorter */
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'N', 1000, 100, 1500, &plan, &err), BKM_OK);
    ck_assert_int_eq(plan.kc, 300);
    ck_assert_int_eq(plan.k_passes, 5);
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'N', 0, 100, 1500, &plan, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "m=0"));
    ck_assert_str_eq(plan.path, "packed");
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'X', 10, 100, 1500, &plan, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "transb='X'"));
    /* A * B^T with at most mc rows: the AVX-512 dot path (in place), else packed */
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'T', cfg.mc, 100, 1500, &plan, &err), BKM_OK);
    ck_assert_str_eq(plan.path, cfg.isa == BKM_ISA_AVX512 ? "dot" : "packed");
    ck_assert_int_eq(bkm_kern_gemm_plan(&cfg, 'N', 'T', cfg.mc + 1, 100, 1500, &plan, &err), BKM_OK);
    ck_assert_str_eq(plan.path, "packed");
}
END_TEST

START_TEST(sgemm_rejects_bad_arguments)
{
    bkm_gemm_cfg_t cfg;
    bkm_err_t err = {0};
    float a[16] = {0}, b[16] = {0}, c[16] = {0};
    char *ws;
    ck_assert_int_eq(bkm_kern_gemm_cfg_init(&cfg, BKM_ISA_AUTO, &err), BKM_OK);
    cfg.nt = 1;
    ws = bkm_aligned_alloc(64, bkm_kern_gemm_workspace_bytes(&cfg) + 64);
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'X', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "transa='X'"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'q', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "transb='q'"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', -1, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "m=-1"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 3, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "lda=2"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'T', 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ldb=2"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 3, 2, 1.0f, a, 2, b, 3, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ldc=2"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "workspace"));
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws + 4, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 1.0f, NULL, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    cfg.mc = cfg.mr + 1;
    ck_assert_int_eq(bkm_kern_sgemm(&cfg, 'N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, ws, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "mc="));
    bkm_free(ws);
}
END_TEST

START_TEST(isa_parse_and_names)
{
    bkm_isa_t isa;
    bkm_err_t err = {0};
    bkm_isa_t best = bkm_kern_isa_detect();
    ck_assert_int_ge(best, BKM_ISA_GENERIC);
    ck_assert_int_eq(bkm_kern_isa_parse("auto", &isa, &err), BKM_OK);
    ck_assert_int_eq(isa, best);
    ck_assert_int_eq(bkm_kern_isa_parse("generic", &isa, &err), BKM_OK);
    ck_assert_int_eq(isa, BKM_ISA_GENERIC);
    ck_assert_int_eq(bkm_kern_isa_parse("sse9", &isa, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'sse9'"));
    ck_assert_str_eq(bkm_kern_isa_name(BKM_ISA_AVX2), "avx2");
    ck_assert_str_eq(bkm_kern_isa_name(BKM_ISA_AVX512), "avx512");
    if (best < BKM_ISA_AVX512) {
        ck_assert_int_eq(bkm_kern_isa_parse("avx512", &isa, &err), BKM_ENOTSUP);
        ck_assert_ptr_nonnull(strstr(err.msg, "avx512"));
    } else {
        ck_assert_int_eq(bkm_kern_isa_parse("avx512", &isa, &err), BKM_OK);
        ck_assert_int_eq(bkm_kern_isa_parse("avx2", &isa, &err), BKM_OK);
        ck_assert_int_eq(isa, BKM_ISA_AVX2);
    }
}
END_TEST

START_TEST(peak_calibration_runs)
{
    double g1 = bkm_kern_peak_gflops(BKM_ISA_GENERIC, 1);
    ck_assert(g1 > 0.0 && isfinite(g1));
    ck_assert(bkm_kern_peak_gflops(BKM_ISA_GENERIC, 0) == 0.0);
}
END_TEST

/* test_gemm: the API; test_gemm <isa>: one micro-kernel path against the reference (none when this
 * CPU lacks the ISA: skipped). */
static Suite *gemm_suite(int argc, char **argv, int *status)
{
    Suite *s;
    if (argc > 1) {
        bkm_err_t err = {0};
        int rc = bkm_kern_isa_parse(argv[1], &test_isa, &err);
        if (rc == BKM_ENOTSUP) {
            *status = bkm_check_skip("%s, so its SGEMM path cannot be tested here", err.msg);
            return NULL;
        }
        if (rc != BKM_OK) {
            fprintf(stderr, "test_gemm: %s\n", err.msg);
            *status = 2;
            return NULL;
        }
        s = suite_create("gemm");
        TCase *tc = tcase_create(bkm_kern_isa_name(test_isa));
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, odd_shapes_vs_reference);
        tcase_add_test(tc, all_transposes_alpha_beta);
        tcase_add_test(tc, two_threads);
        tcase_add_test(tc, same_bits_for_any_thread_count);
        tcase_add_test(tc, nt1_inside_parallel_region);
        tcase_add_test(tc, degenerate_sizes);
        suite_add_tcase(s, tc);
    } else {
        s = suite_create("gemm");
        TCase *tc = tcase_create("api");
        tcase_add_test(tc, cfg_defaults_are_valid_and_published);
        tcase_add_test(tc, cfg_check_names_bad_values);
        tcase_add_test(tc, params_check_agrees_with_op_create);
        tcase_add_test(tc, plan_follows_l2_and_rows);
        tcase_add_test(tc, sgemm_rejects_bad_arguments);
        tcase_add_test(tc, isa_parse_and_names);
        tcase_add_test(tc, peak_calibration_runs);
        suite_add_tcase(s, tc);
    }
    return s;
}

BKM_CHECK_MAIN_ARGS(gemm_suite)
