/* SPDX-License-Identifier: MIT */
/* BLIS-style SGEMM driver: five loops around a register micro-kernel, packing of A (MC x KC, in
 * MR-row micro-panels) and B (KC x NC, in NR-column micro-panels), transposes handled while
 * packing, OpenMP over the JC and IC loops. No allocation: the caller passes the workspace. */
#include "kernels_int.h"

#include <omp.h>
#include <string.h>

#define GEMM_ALIGN_FLOATS 16 /* 64 bytes */
#define GEMM_MC_MAX 8192
#define GEMM_KC_MAX 8192
#define GEMM_NC_MAX 65536
#define GEMM_NT_MAX 4096

/* Tunables per ISA (bounds follow the micro-kernel's mr/nr; defaults from measurement). */
#define GEMM_PARAMS(MR, NR, MC, KC, NC)                                                              \
    {                                                                                                \
        {"mc", MR, (GEMM_MC_MAX / MR) * MR, MC, MR, "rows of A packed per block (L2), multiple of mr"}, \
        {"kc", 0, GEMM_KC_MAX, 0, 1, "depth of one packed block; 0 = auto: " #KC ", or from the L2 size when m > mc"}, \
        {"nc", NR, (GEMM_NC_MAX / NR) * NR, NC, NR, "columns of B packed per block (L3), multiple of nr"}, \
        {"nt_jc", 0, GEMM_NT_MAX, 0, 1, "ways the JC (column) loop is split; must divide nt; 0 = auto"}, \
    }

static const bkm_gemm_ukr_desc_t *gemm_ukr_for(bkm_isa_t isa)
{
    switch (isa) {
    case BKM_ISA_AVX512: return &bkm__gemm_ukr_avx512;
    case BKM_ISA_AVX2: return &bkm__gemm_ukr_avx2;
    case BKM_ISA_GENERIC: return &bkm__gemm_ukr_generic;
    default: return NULL;
    }
}

const bkm_param_desc_t *bkm_kern_gemm_params(bkm_isa_t isa, size_t *n_params)
{
    /* Values must be compile-time constants here, so they repeat the descriptors' defaults;
     * test_gemm checks that they agree. */
    static const bkm_param_desc_t p_generic[4] = GEMM_PARAMS(4, 8, 128, 256, 2048);
    static const bkm_param_desc_t p_avx2[4] = GEMM_PARAMS(6, 16, 144, 256, 3072);
    static const bkm_param_desc_t p_avx512[4] = GEMM_PARAMS(14, 32, 84, 512, 3072);
    if (isa == BKM_ISA_AUTO)
        isa = bkm_kern_isa_detect();
    if (n_params != NULL)
        *n_params = 4;
    switch (isa) {
    case BKM_ISA_AVX512: return p_avx512;
    case BKM_ISA_AVX2: return p_avx2;
    default: return p_generic;
    }
}

/* Defaults of @p isa (AUTO = detect) with nt = 1, without asking OpenMP: a check in a process
 * that must not start an OpenMP runtime (the tuner) uses it too. */
int bkm__kern_gemm_cfg_defaults(bkm_gemm_cfg_t *cfg, bkm_isa_t isa, bkm_err_t *err)
{
    const bkm_gemm_ukr_desc_t *u;
    bkm_isa_t best = bkm_kern_isa_detect();
    if (cfg == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm_cfg_init: NULL cfg");
    if (isa == BKM_ISA_AUTO)
        isa = best;
    u = gemm_ukr_for(isa);
    if (u == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm: isa=%d is not a known ISA", (int)isa);
    if ((int)isa > (int)best)
        return bkm_err_set(err, BKM_ENOTSUP, "gemm: isa=%s is not supported by this CPU (best: %s)",
                           bkm_kern_isa_name(isa), bkm_kern_isa_name(best));
    memset(cfg, 0, sizeof(*cfg));
    cfg->isa = isa;
    cfg->mr = u->mr;
    cfg->nr = u->nr;
    cfg->mc = u->mc_def;
    cfg->kc = 0; /* auto: bkm__kern_gemm_kc, or per call from the L2 size */
    cfg->nc = u->nc_def;
    cfg->nt = 1;
    cfg->nt_jc = 0;
    return BKM_OK;
}

int bkm_kern_gemm_cfg_init(bkm_gemm_cfg_t *cfg, bkm_isa_t isa, bkm_err_t *err)
{
    int rc = bkm__kern_gemm_cfg_defaults(cfg, isa, err);
    if (rc < 0)
        return rc;
    cfg->nt = omp_get_max_threads();
    if (cfg->nt < 1)
        cfg->nt = 1;
    return BKM_OK;
}

int32_t bkm__kern_gemm_kc(const bkm_gemm_cfg_t *cfg)
{
    const bkm_gemm_ukr_desc_t *u = gemm_ukr_for(cfg->isa);
    return cfg->kc > 0 ? cfg->kc : u != NULL ? u->kc_def : 256;
}

/* Deepest block the auto kc gives a call whose packed B block serves several row blocks: the
 * packed A block (mc x kc) and one B micro-panel (kc x nr) in half of the per-core L2, so that C
 * is read and written k / kc times instead of k / kc_def times. 64 floats granularity. */
static int64_t gemm_kc_l2(const bkm_gemm_cfg_t *cfg)
{
    const int64_t l2 = cfg->l2_bytes > 0 ? cfg->l2_bytes : BKM_KERN_L2_DEFAULT;
    int64_t kc = l2 / 2 / (int64_t)sizeof(float) / (cfg->mc + cfg->nr) / 64 * 64;
    if (kc < 64)
        kc = 64;
    return kc > GEMM_KC_MAX ? GEMM_KC_MAX : kc;
}

/* Largest kc any call with @p cfg packs (sizes the workspace). */
static int64_t gemm_kc_bound(const bkm_gemm_cfg_t *cfg)
{
    int64_t kc = bkm__kern_gemm_kc(cfg), l2 = cfg->kc > 0 ? 0 : gemm_kc_l2(cfg);
    return kc > l2 ? kc : l2;
}

/* Bounds and multiple-of rule of one tunable; err names the parameter and value. */
static int gemm_check_one(const bkm_param_desc_t *d, int32_t v, int32_t mult, const char *mult_name,
                          bkm_err_t *err)
{
    if (v < d->min || v > d->max)
        return bkm_err_set(err, BKM_EINVAL, "%s=%d is out of range [%d, %d]", d->name, (int)v, (int)d->min,
                           (int)d->max);
    if (mult > 1 && v % mult != 0)
        return bkm_err_set(err, BKM_EINVAL, "%s=%d is not a multiple of %s=%d", d->name, (int)v, mult_name,
                           (int)mult);
    return BKM_OK;
}

/* The tunable fields of @p cfg in the order of bkm_kern_gemm_params, with their multiple-of rule. */
static int32_t *gemm_cfg_field(bkm_gemm_cfg_t *cfg, int i, int32_t *mult, const char **mult_name)
{
    *mult = 1;
    *mult_name = "";
    switch (i) {
    case 0: *mult = cfg->mr; *mult_name = "mr"; return &cfg->mc;
    case 1: return &cfg->kc;
    case 2: *mult = cfg->nr; *mult_name = "nr"; return &cfg->nc;
    default: return &cfg->nt_jc;
    }
}

int bkm_kern_gemm_cfg_check(const bkm_gemm_cfg_t *cfg, bkm_err_t *err)
{
    const bkm_gemm_ukr_desc_t *u;
    const bkm_param_desc_t *p;
    bkm_gemm_cfg_t tmp;
    bkm_isa_t best = bkm_kern_isa_detect();
    int rc;
    if (cfg == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm_cfg_check: NULL cfg");
    u = gemm_ukr_for(cfg->isa);
    if (u == NULL)
        return bkm_err_set(err, BKM_EINVAL, "isa=%d is not a resolved ISA (call bkm_kern_gemm_cfg_init)",
                           (int)cfg->isa);
    if ((int)cfg->isa > (int)best)
        return bkm_err_set(err, BKM_ENOTSUP, "isa=%s is not supported by this CPU (best: %s)",
                           bkm_kern_isa_name(cfg->isa), bkm_kern_isa_name(best));
    if (cfg->mr != u->mr || cfg->nr != u->nr)
        return bkm_err_set(err, BKM_EINVAL, "mr=%d nr=%d do not match the %s micro-kernel (%dx%d)", (int)cfg->mr,
                           (int)cfg->nr, u->name, (int)u->mr, (int)u->nr);
    if (cfg->nt < 1 || cfg->nt > GEMM_NT_MAX)
        return bkm_err_set(err, BKM_EINVAL, "nt=%d is out of range [1, %d]", (int)cfg->nt, GEMM_NT_MAX);
    p = bkm_kern_gemm_params(cfg->isa, NULL);
    tmp = *cfg;
    for (int i = 0; i < 4; i++) {
        int32_t mult;
        const char *mult_name;
        int32_t *v = gemm_cfg_field(&tmp, i, &mult, &mult_name);
        if ((rc = gemm_check_one(&p[i], *v, mult, mult_name, err)) < 0)
            return rc;
    }
    if (cfg->nt_jc > 0 && cfg->nt % cfg->nt_jc != 0)
        return bkm_err_set(err, BKM_EINVAL, "nt_jc=%d does not divide nt=%d", (int)cfg->nt_jc, (int)cfg->nt);
    return BKM_OK;
}

int bkm_kern_gemm_cfg_set(bkm_gemm_cfg_t *cfg, const char *name, int32_t value, bkm_err_t *err)
{
    const bkm_param_desc_t *p;
    size_t np;
    if (cfg == NULL || name == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm_cfg_set: NULL argument");
    p = bkm_kern_gemm_params(cfg->isa, &np);
    for (int i = 0; i < (int)np; i++) {
        int32_t mult;
        const char *mult_name;
        int32_t *v;
        int rc;
        if (strcmp(name, p[i].name) != 0)
            continue;
        v = gemm_cfg_field(cfg, i, &mult, &mult_name);
        if ((rc = gemm_check_one(&p[i], value, mult, mult_name, err)) < 0)
            return rc;
        *v = value;
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "gemm parameter '%s' is unknown (expected mc, kc, nc or nt_jc)", name);
}

int bkm__kern_gemm_cfg_apply(bkm_gemm_cfg_t *cfg, const bkm_kern_params_t *params, bkm_err_t *err)
{
    size_t n_pd;
    const bkm_param_desc_t *pd = bkm_kern_gemm_params(cfg->isa, &n_pd);
    int32_t v[4];
    int rc;
    if (n_pd != 4)
        return bkm_err_set(err, BKM_EINVAL, "gemm: unexpected tunable table (%zu entries)", n_pd);
    if ((rc = bkm_kern_params_resolve(params, pd, n_pd, v, err)) < 0)
        return rc;
    for (size_t i = 0; i < n_pd; i++)
        if ((rc = bkm_kern_gemm_cfg_set(cfg, pd[i].name, v[i], err)) < 0)
            return rc;
    if (params != NULL) {
        cfg->l2_bytes = params->cache.l2;
        cfg->l1_bytes = params->cache.l1d;
    }
    return bkm_kern_gemm_cfg_check(cfg, err);
}

int bkm_kern_gemm_params_check(const bkm_kern_params_t *params, int nt, bkm_err_t *err)
{
    bkm_gemm_cfg_t cfg;
    int rc = bkm__kern_gemm_cfg_defaults(&cfg, params != NULL ? params->isa : BKM_ISA_AUTO, err);
    if (rc < 0)
        return rc;
    /* thread count unknown: nt_jc is held to its bounds only */
    cfg.nt = nt > 0 ? nt : bkm__kern_params_value(params, "nt_jc", 1);
    if (cfg.nt < 1)
        cfg.nt = 1;
    if ((rc = bkm__kern_gemm_cfg_apply(&cfg, params, err)) < 0)
        return bkm_err_prefix(err, "isa=%s", bkm_kern_isa_name(cfg.isa));
    return BKM_OK;
}

const char *bkm_kern_gemm_ukr_name(const bkm_gemm_cfg_t *cfg)
{
    const bkm_gemm_ukr_desc_t *u = cfg != NULL ? gemm_ukr_for(cfg->isa) : NULL;
    return u != NULL ? u->name : "unknown";
}

static int64_t round_up(int64_t v, int64_t q)
{
    return (v + q - 1) / q * q;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Resolved explicit JC split (an invalid or auto value: 1). */
static int gemm_nt_jc(int32_t nt, int32_t nt_jc)
{
    if (nt_jc <= 0 || nt_jc > nt || nt % nt_jc != 0)
        return 1;
    return nt_jc;
}

/* Packed-B buffers the workspace holds: the explicit split, or for auto the largest divisor of nt
 * up to GEMM_AUTO_JC_MAX (each JC group packs its own B block). */
#define GEMM_AUTO_JC_MAX 4
static int gemm_ws_jc(int32_t nt, int32_t nt_jc)
{
    int d = 1;
    if (nt_jc > 0)
        return gemm_nt_jc(nt, nt_jc);
    for (int c = 1; c <= GEMM_AUTO_JC_MAX && c <= nt; c++)
        if (nt % c == 0)
            d = c;
    return d;
}

/* Auto JC split for nth threads: the divisor d (<= max_d) that makes each thread's block of C
 * closest to square, m x n / d per JC group split into nth / d row blocks; ties go to the larger d
 * (fewer threads share a packed B: fewer barriers, which cost most on a shared machine). */
static int gemm_auto_jc(int nth, int max_d, int64_t m, int64_t n)
{
    int best = 1;
    double best_cost = -1.0;
    for (int d = 1; d <= max_d && d <= nth; d++) {
        double w, h, cost;
        if (nth % d != 0)
            continue;
        w = (double)n / d;
        h = (double)m * d / nth;
        cost = w > h ? w / h : h / w;
        if (best_cost < 0.0 || cost <= best_cost) {
            best = d;
            best_cost = cost;
        }
    }
    return best;
}

/* Floats of one packed-B buffer and one packed-A buffer, each rounded to 64 bytes. */
static size_t gemm_b_floats(const bkm_gemm_cfg_t *cfg)
{
    return (size_t)round_up(gemm_kc_bound(cfg) * round_up(cfg->nc, cfg->nr), GEMM_ALIGN_FLOATS);
}

static size_t gemm_a_floats(const bkm_gemm_cfg_t *cfg)
{
    return (size_t)round_up((int64_t)round_up(cfg->mc, cfg->mr) * gemm_kc_bound(cfg), GEMM_ALIGN_FLOATS);
}

size_t bkm_kern_gemm_workspace_bytes(const bkm_gemm_cfg_t *cfg)
{
    int32_t nt, nt_jc;
    if (cfg == NULL || cfg->mr < 1 || cfg->nr < 1 || cfg->mc < 1 || cfg->kc < 0 || cfg->nc < 1)
        return 0;
    nt = cfg->nt < 1 ? 1 : cfg->nt;
    nt_jc = gemm_ws_jc(nt, cfg->nt_jc);
    return ((size_t)nt_jc * gemm_b_floats(cfg) + (size_t)nt * gemm_a_floats(cfg)) * sizeof(float);
}

/* First touch of the workspace by the team that will use it: a team of cfg->nt threads split as
 * bkm_kern_sgemm splits it (thread tid in JC group tid / nt_ic), each zeroing its own packed-A
 * buffer and its share of its group's packed-B buffer, so that on a multi-socket node those pages
 * land on the socket of the thread that packs and reads them. */
void bkm_kern_gemm_workspace_touch(const bkm_gemm_cfg_t *cfg, void *ws)
{
    size_t bytes = bkm_kern_gemm_workspace_bytes(cfg);
    if (ws == NULL || bytes == 0)
        return;
    if (cfg->nt <= 1) {
        memset(ws, 0, bytes);
        return;
    }
#pragma omp parallel num_threads(cfg->nt)
    {
        int nth = omp_get_num_threads(), tid = omp_get_thread_num();
        /* B buffers the workspace holds; with the auto split the groups a call uses depend on its
         * shape, so the team touches them as the widest split would */
        int nb = gemm_ws_jc(cfg->nt, cfg->nt_jc);
        int nt_jc = nth == cfg->nt ? nb : gemm_nt_jc(nth, cfg->nt_jc);
        int nt_ic = nth / nt_jc, g = tid / nt_ic, r = tid % nt_ic;
        size_t bf = gemm_b_floats(cfg), af = gemm_a_floats(cfg);
        float *b = (float *)ws + (size_t)g * bf, *a = (float *)ws + (size_t)nb * bf;
        if (g < nt_jc)
            memset(b + bf * (size_t)r / (size_t)nt_ic, 0, (bf * (size_t)(r + 1) / (size_t)nt_ic -
                                                            bf * (size_t)r / (size_t)nt_ic) * sizeof(float));
        memset(a + (size_t)tid * af, 0, af * sizeof(float));
#pragma omp barrier
#pragma omp single
        {
            /* what a smaller team than asked left (threads past nth, groups past nt_jc) */
            size_t used_b = (size_t)nt_jc * bf, all_b = (size_t)nb * bf;
            if (all_b > used_b)
                memset((float *)ws + used_b, 0, (all_b - used_b) * sizeof(float));
            if (cfg->nt > nth)
                memset(a + (size_t)nth * af, 0, (size_t)(cfg->nt - nth) * af * sizeof(float));
        }
    }
}

/* Everything one call needs, shared read-only by the threads. */
typedef struct gemm_job {
    const bkm_gemm_ukr_desc_t *u;
    int ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t lda, ldb, ldc;
    int64_t mc, kc, nc; /* blocks of this call and team (gemm_job_plan) */
    int64_t k_iters;    /* depth blocks: k split into passes of kc (the last may be shorter) */
    size_t l2_bytes;    /* per-core L2 (cfg, or the default) */
    float *bpack, *apack;
    size_t b_floats, a_floats;
    int nt_jc;
} gemm_job_t;

/* Pack op(B)[pc:pc+kb, jc:jc+nb], micro-panels jp0..jp1-1 of NR columns, zero-padded. */
static void gemm_pack_b(const gemm_job_t *job, float *restrict dst, int64_t pc, int64_t kb, int64_t jc,
                        int64_t nb, int64_t jp0, int64_t jp1)
{
    const int64_t nr = job->u->nr;
    for (int64_t jp = jp0; jp < jp1; jp++) {
        int64_t j0 = jc + jp * nr;
        int64_t nn = min64(nr, jc + nb - j0);
        float *restrict d = dst + jp * nr * kb;
        if (!job->tb) {
            const float *s = job->b + pc * job->ldb + j0;
            for (int64_t p = 0; p < kb; p++) {
                /* rows lie a page or more apart: no hardware prefetcher follows them */
                const char *f = (const char *)(s + (p + 24) * job->ldb);
                __builtin_prefetch(f, 0, 3);
                __builtin_prefetch(f + (nn - 1) * (int64_t)sizeof(float), 0, 3);
                memcpy(d + p * nr, s + p * job->ldb, (size_t)nn * sizeof(float));
                for (int64_t j = nn; j < nr; j++)
                    d[p * nr + j] = 0.0f;
            }
        } else if (job->u->isa == BKM_ISA_AVX512 && nr <= 32) {
            bkm__pack_tr_avx512(job->b + j0 * job->ldb + pc, job->ldb, nn, kb, d, nr);
        } else {
            for (int64_t j = 0; j < nn; j++) {
                const float *s = job->b + (j0 + j) * job->ldb + pc;
                for (int64_t p = 0; p < kb; p++)
                    d[p * nr + j] = s[p];
            }
            for (int64_t p = 0; p < kb; p++)
                for (int64_t j = nn; j < nr; j++)
                    d[p * nr + j] = 0.0f;
        }
    }
}

/* Pack op(A)[ic:ic+mb, pc:pc+kb] into MR-row micro-panels, zero-padded. */
static void gemm_pack_a(const gemm_job_t *job, float *restrict dst, int64_t ic, int64_t mb, int64_t pc, int64_t kb)
{
    const int64_t mr = job->u->mr;
    for (int64_t i0 = 0; i0 < mb; i0 += mr) {
        int64_t mm = min64(mr, mb - i0);
        float *restrict d = dst + (i0 / mr) * mr * kb;
        if (job->ta) {
            const float *s = job->a + pc * job->lda + ic + i0;
            for (int64_t p = 0; p < kb; p++) {
                memcpy(d + p * mr, s + p * job->lda, (size_t)mm * sizeof(float));
                for (int64_t i = mm; i < mr; i++)
                    d[p * mr + i] = 0.0f;
            }
        } else if (job->u->isa == BKM_ISA_AVX512 && mr <= 32) {
            bkm__pack_tr_avx512(job->a + (ic + i0) * job->lda + pc, job->lda, mm, kb, d, mr);
        } else {
            /* k outer, rows inner: the packed panel is written sequentially (strided stores into a
             * buffer that is not in L1 cost more than the MR strided read streams). */
            const float *s = job->a + (ic + i0) * job->lda + pc;
            const int64_t lda = job->lda;
            for (int64_t p = 0; p < kb; p++) {
                for (int64_t i = 0; i < mm; i++)
                    d[p * mr + i] = s[i * lda + p];
                for (int64_t i = mm; i < mr; i++)
                    d[p * mr + i] = 0.0f;
            }
        }
    }
}

/* Loops 2 and 1 (JR, IR) around the micro-kernel for one packed A block and one packed B block. */
static void gemm_macro(const gemm_job_t *job, const float *ap, const float *bp, int64_t ic, int64_t mb,
                       int64_t jc, int64_t nb, int64_t kb, float beta)
{
    const int64_t mr = job->u->mr, nr = job->u->nr, ldc = job->ldc;
    const bkm_gemm_ukr_t fn = job->u->fn;
    /* the AVX-512 edge kernel for at most BKM_GEMM_EDGE_M rows of a 32-column panel (alpha 1) */
    const int edge = job->u->isa == BKM_ISA_AVX512 && nr == BKM_GEMM_EDGE_NR && job->alpha == 1.0f;
    _Alignas(64) float tile[BKM_GEMM_MR_MAX * BKM_GEMM_NR_MAX];
    for (int64_t jr = 0; jr < nb; jr += nr) {
        int64_t nn = min64(nr, nb - jr);
        const float *bpan = bp + (jr / nr) * nr * kb;
        for (int64_t ir = 0; ir < mb; ir += mr) {
            int64_t mm = min64(mr, mb - ir);
            const float *apan = ap + (ir / mr) * mr * kb;
            float *c = job->c + (ic + ir) * ldc + jc + jr;
            if (mm == mr && nn == nr) {
                fn(kb, apan, bpan, c, ldc, job->alpha, beta);
                continue;
            }
            if (edge && mm <= BKM_GEMM_EDGE_M && nn == nr) { /* a short last row panel: live rows only */
                bkm__gemm_edge_avx512(mm, kb, apan, mr, bpan, c, ldc, beta);
                continue;
            }
            /* Edge tile: full tile into scratch, then merge the valid m x n part. */
            fn(kb, apan, bpan, tile, nr, 1.0f, 0.0f);
            for (int64_t i = 0; i < mm; i++) {
                for (int64_t j = 0; j < nn; j++) {
                    float v = job->alpha * tile[i * nr + j];
                    c[i * ldc + j] = (beta == 0.0f) ? v : v + beta * c[i * ldc + j];
                }
            }
        }
    }
}

static int gemm_trans(char t, const char *which, bkm_err_t *err)
{
    if (t == 'N' || t == 'n')
        return 0;
    if (t == 'T' || t == 't')
        return 1;
    return bkm_err_set(err, BKM_EINVAL, "%s='%c' (0x%02x) is not 'N' or 'T'", which,
                       (t >= 32 && t < 127) ? t : '?', (unsigned char)t);
}

/* A * B^T with few rows and AVX-512 (FC forward at batch size, LSTM dh): both operands read in
 * place along k by bkm__gemm_dot_avx512, no packing; the same tiles of B for any thread count,
 * each element computed by one thread in one order, so the bits do not depend on it. Few = at
 * most mc rows: what the packed driver would give one row block per thread. */
static int gemm_use_dot(const bkm_gemm_cfg_t *cfg, int ta, int tb, int64_t m)
{
    return cfg->isa == BKM_ISA_AVX512 && !ta && tb && m <= cfg->mc;
}

/* Depth of the dot path: kc when given, else one tile of B (BKM_GEMM_DOT_NR rows) in half of L1. */
static int64_t gemm_dot_kc(const bkm_gemm_cfg_t *cfg)
{
    const int64_t l1 = cfg->l1_bytes > 0 ? cfg->l1_bytes : BKM_KERN_L1D_DEFAULT;
    const int64_t kc = l1 / 2 / (int64_t)sizeof(float) / BKM_GEMM_DOT_NR / 64 * 64;
    return cfg->kc > 0 ? cfg->kc : kc < 64 ? 64 : kc;
}

/* Threads the dot path uses: the columns are split in whole tiles, so one tile is one thread. */
static int gemm_dot_threads(const bkm_gemm_cfg_t *cfg, int64_t n)
{
    return cfg->nt <= 1 || n <= BKM_GEMM_DOT_NR ? 1 : cfg->nt;
}

static void gemm_dot(const bkm_gemm_cfg_t *cfg, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    const int64_t kc = gemm_dot_kc(cfg), tiles = (n + BKM_GEMM_DOT_NR - 1) / BKM_GEMM_DOT_NR;
    if (gemm_dot_threads(cfg, n) == 1) {
        bkm__gemm_dot_avx512(m, n, k, kc, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
#pragma omp parallel num_threads(cfg->nt)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const int64_t j0 = min64(n, tiles * t / nth * BKM_GEMM_DOT_NR), j1 = min64(n, tiles * (t + 1) / nth * BKM_GEMM_DOT_NR);
        if (j1 > j0)
            bkm__gemm_dot_avx512(m, j1 - j0, k, kc, alpha, a, lda, b + j0 * ldb, ldb, beta, c + j0, ldc);
    }
}

/* The blocking of one call for a team of @p nth threads (every thread computes the same): the JC
 * split, then kc and nc from the shape each thread gets. job->m, n, k, mc, l2_bytes and u are set. */
static void gemm_job_plan(gemm_job_t *job, const bkm_gemm_cfg_t *cfg, int nth)
{
    const int64_t mr = job->u->mr, nr = job->u->nr;
    int64_t m_pan, rows, kc_max, nc_l2;
    if (nth <= 1)
        job->nt_jc = 1;
    else if (cfg->nt_jc <= 0)
        job->nt_jc = gemm_auto_jc(nth, gemm_ws_jc(cfg->nt, 0), job->m, job->n);
    else /* the runtime may give fewer threads than asked: split the team we got */
        job->nt_jc = nth == cfg->nt ? gemm_nt_jc(cfg->nt, cfg->nt_jc) : gemm_nt_jc(nth, cfg->nt_jc);
    m_pan = (job->m + mr - 1) / mr;
    rows = (m_pan + nth / job->nt_jc - 1) / (nth / job->nt_jc) * mr;
    /* More rows than one block: an auto kc goes as deep as L2 holds (fewer passes over C), in
     * passes of equal depth. Decided on m, not on a thread's rows, so that the passes (and the
     * bits) do not depend on the thread count. */
    kc_max = bkm__kern_gemm_kc(cfg);
    if (cfg->kc == 0 && job->m > job->mc && gemm_kc_l2(cfg) > kc_max)
        kc_max = gemm_kc_l2(cfg);
    job->k_iters = (job->k + kc_max - 1) / kc_max;
    job->kc = cfg->kc > 0 ? cfg->kc : (job->k + job->k_iters - 1) / job->k_iters;
    /* A thread with a single IC block (few rows: FC layers, the batch) uses each packed B block
     * once, right after packing it: a block that fits half of L2 is consumed from L2 instead of
     * round-tripping through L3. */
    nc_l2 = (int64_t)(job->l2_bytes / 2 / sizeof(float)) / (job->kc < job->k ? job->kc : job->k) / nr * nr;
    job->nc = rows <= job->mc && nc_l2 >= nr && nc_l2 < cfg->nc ? nc_l2 : cfg->nc;
}

/* The checks every entry makes first: the configuration, then the two transposes (into *ta, *tb). */
static int gemm_check_call(const bkm_gemm_cfg_t *cfg, char transa, char transb, int *ta, int *tb, bkm_err_t *err)
{
    int rc;
    if ((rc = bkm_kern_gemm_cfg_check(cfg, err)) < 0)
        return rc;
    if ((*ta = gemm_trans(transa, "transa", err)) < 0)
        return *ta;
    if ((*tb = gemm_trans(transb, "transb", err)) < 0)
        return *tb;
    return BKM_OK;
}

/* The fields of a job that gemm_job_plan reads. */
static void gemm_job_init(gemm_job_t *job, const bkm_gemm_cfg_t *cfg, int64_t m, int64_t n, int64_t k)
{
    memset(job, 0, sizeof(*job));
    job->u = gemm_ukr_for(cfg->isa);
    job->m = m;
    job->n = n;
    job->k = k;
    job->mc = cfg->mc;
    job->l2_bytes = cfg->l2_bytes > 0 ? (size_t)cfg->l2_bytes : BKM_KERN_L2_DEFAULT;
}

int bkm_kern_gemm_plan(const bkm_gemm_cfg_t *cfg, char transa, char transb, int64_t m, int64_t n, int64_t k,
                       bkm_gemm_plan_t *plan, bkm_err_t *err)
{
    gemm_job_t job;
    int rc, ta, tb;
    if (plan == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gemm_plan: NULL plan");
    if ((rc = gemm_check_call(cfg, transa, transb, &ta, &tb, err)) < 0)
        return rc;
    if (m < 1 || n < 1 || k < 1)
        return bkm_err_set(err, BKM_EINVAL, "gemm_plan: size m=%lld n=%lld k=%lld is not positive", (long long)m,
                           (long long)n, (long long)k);
    memset(plan, 0, sizeof(*plan));
    if (gemm_use_dot(cfg, ta, tb, m)) {
        plan->path = "dot";
        plan->nt_jc = gemm_dot_threads(cfg, n);
        plan->kc = (int32_t)gemm_dot_kc(cfg);
        plan->k_passes = (int32_t)((k + plan->kc - 1) / plan->kc);
        return BKM_OK;
    }
    plan->path = "packed";
    gemm_job_init(&job, cfg, m, n, k);
    gemm_job_plan(&job, cfg, cfg->nt);
    plan->nt_jc = job.nt_jc;
    plan->mc = (int32_t)job.mc;
    plan->kc = (int32_t)job.kc;
    plan->nc = (int32_t)job.nc;
    plan->k_passes = (int32_t)job.k_iters;
    return BKM_OK;
}

/* Loops 5, 4, 3 (JC, PC, IC) for thread @p tid of @p nth; every thread runs the same number of
 * barriers, so a thread without work still keeps step with its team. */
static void gemm_thread(const gemm_job_t *job, int tid, int nth)
{
    const int64_t mr = job->u->mr, nr = job->u->nr;
    const int nt_jc = job->nt_jc, nt_ic = nth / job->nt_jc;
    const int g = tid / nt_ic, r = tid % nt_ic;
    /* Whole micro-panels are dealt out as evenly as possible (the partial one counts as one). */
    const int64_t n_pan = (job->n + nr - 1) / nr, m_pan = (job->m + mr - 1) / mr;
    const int64_t n_lo = min64(job->n, n_pan * g / nt_jc * nr), n_hi = min64(job->n, n_pan * (g + 1) / nt_jc * nr);
    const int64_t m_lo = min64(job->m, m_pan * r / nt_ic * mr), m_hi = min64(job->m, m_pan * (r + 1) / nt_ic * mr);
    /* Same count for every group, so that all threads meet the same barriers. */
    const int64_t kc = job->kc, nc = job->nc, k_iters = job->k_iters;
    const int64_t n_iters = (((n_pan + nt_jc - 1) / nt_jc) * nr + nc - 1) / nc;
    float *bp = job->bpack + (size_t)g * job->b_floats;
    float *ap = job->apack + (size_t)tid * job->a_floats;

    for (int64_t jt = 0; jt < n_iters; jt++) {
        int64_t jc = n_lo + jt * nc;
        int64_t nb = min64(nc, n_hi - jc);
        for (int64_t pt = 0; pt < k_iters; pt++) {
            int64_t pc = pt * kc;
            int64_t kb = min64(kc, job->k - pc);
            float beta = pt == 0 ? job->beta : 1.0f;
            if (nb > 0) {
                int64_t np = (nb + nr - 1) / nr;
                gemm_pack_b(job, bp, pc, kb, jc, nb, np * r / nt_ic, np * (r + 1) / nt_ic);
            }
            if (nt_ic > 1) { /* the threads of a JC group share its packed B */
#pragma omp barrier
            }
            if (nb > 0) {
                for (int64_t ic = m_lo; ic < m_hi; ic += job->mc) {
                    int64_t mb = min64(job->mc, m_hi - ic);
                    gemm_pack_a(job, ap, ic, mb, pc, kb);
                    gemm_macro(job, ap, bp, ic, mb, jc, nb, kb, beta);
                }
            }
            if (nt_ic > 1) { /* the threads of a JC group share its packed B */
#pragma omp barrier
            }
        }
    }
}

/* C = beta * C (used when alpha == 0 or k == 0); beta == 0 writes zeros without reading C. */
static void gemm_scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * ldc + j] = (beta == 0.0f) ? 0.0f : beta * c[i * ldc + j];
}

int bkm_kern_sgemm(const bkm_gemm_cfg_t *cfg, char transa, char transb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc, void *ws, bkm_err_t *err)
{
    gemm_job_t job;
    int rc, ta, tb;
    if ((rc = gemm_check_call(cfg, transa, transb, &ta, &tb, err)) < 0)
        return rc;
    if (m < 0 || n < 0 || k < 0)
        return bkm_err_set(err, BKM_EINVAL, "sgemm: negative size m=%lld n=%lld k=%lld", (long long)m,
                           (long long)n, (long long)k);
    if (lda < (ta ? (m > 1 ? m : 1) : (k > 1 ? k : 1)))
        return bkm_err_set(err, BKM_EINVAL, "sgemm: lda=%lld is smaller than %s=%lld", (long long)lda,
                           ta ? "m" : "k", (long long)(ta ? m : k));
    if (ldb < (tb ? (k > 1 ? k : 1) : (n > 1 ? n : 1)))
        return bkm_err_set(err, BKM_EINVAL, "sgemm: ldb=%lld is smaller than %s=%lld", (long long)ldb,
                           tb ? "k" : "n", (long long)(tb ? k : n));
    if (ldc < (n > 1 ? n : 1))
        return bkm_err_set(err, BKM_EINVAL, "sgemm: ldc=%lld is smaller than n=%lld", (long long)ldc,
                           (long long)n);
    if (m == 0 || n == 0)
        return BKM_OK;
    if (c == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sgemm: C is NULL");
    if (k == 0 || alpha == 0.0f) {
        gemm_scale_c(m, n, beta, c, ldc);
        return BKM_OK;
    }
    if (a == NULL || b == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sgemm: %s is NULL", a == NULL ? "A" : "B");
    if (ws == NULL || ((uintptr_t)ws & 63u) != 0)
        return bkm_err_set(err, BKM_EINVAL, "sgemm: workspace %p is NULL or not 64-byte aligned", ws);

    if (gemm_use_dot(cfg, ta, tb, m)) {
        gemm_dot(cfg, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return BKM_OK;
    }

    gemm_job_init(&job, cfg, m, n, k);
    job.ta = ta;
    job.tb = tb;
    job.alpha = alpha;
    job.beta = beta;
    job.a = a;
    job.b = b;
    job.c = c;
    job.lda = lda;
    job.ldb = ldb;
    job.ldc = ldc;
    job.b_floats = gemm_b_floats(cfg);
    job.a_floats = gemm_a_floats(cfg);
    job.bpack = (float *)ws;
    job.apack = job.bpack + (size_t)gemm_ws_jc(cfg->nt, cfg->nt_jc) * job.b_floats;

    if (cfg->nt == 1) {
        gemm_job_plan(&job, cfg, 1);
        gemm_thread(&job, 0, 1);
        return BKM_OK;
    }
#pragma omp parallel num_threads(cfg->nt) firstprivate(job)
    {
        /* The runtime may give fewer threads than asked (nesting, thread limit): split over the
         * team we got. Every thread computes the same plan. The workspace is still large enough. */
        int nth = omp_get_num_threads();
        gemm_job_plan(&job, cfg, nth);
        gemm_thread(&job, omp_get_thread_num(), nth);
    }
    return BKM_OK;
}
