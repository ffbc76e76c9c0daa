/* SPDX-License-Identifier: MIT */
/* The affinity planner against every row of docs/affinity.md §2.2 (Cori Haswell), §2.3 (KNL,
 * without and with tiles), the libomp column of §1.8 (OMP_PLACES/OMP_PROC_BIND), §1.9
 * (GOMP_CPU_AFFINITY), §1.7 (KMP_HW_SUBSET), precedence (§1.3) and the initial mask; and the
 * chiplet node (Perlmutter CPU: 16 L3 and 8 NUMA nodes on 2 sockets, which libomp 14 without hwloc
 * does not see). Topologies are hwloc synthetic descriptions with the sites' OS numbering,
 * identical on any machine. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/affinity.h"

static char haswell_desc[1024];
static char knl_desc[4096];
static bkm_topo_t *hsw, *knl;

static void make_descs(void)
{
    size_t n;
    int i;
    n = (size_t)snprintf(haswell_desc, sizeof(haswell_desc), "pack:2 core:16 pu:2(indexes=");
    for (i = 0; i < 32; i++)
        n += (size_t)snprintf(haswell_desc + n, sizeof(haswell_desc) - n, "%s%d,%d", i ? "," : "", i, i + 32);
    snprintf(haswell_desc + n, sizeof(haswell_desc) - n, ")");
    n = (size_t)snprintf(knl_desc, sizeof(knl_desc), "pack:1 l2:34 core:2 pu:4(indexes=");
    for (i = 0; i < 68; i++)
        n += (size_t)snprintf(knl_desc + n, sizeof(knl_desc) - n, "%s%d,%d,%d,%d", i ? "," : "", i, i + 68, i + 136,
                              i + 204);
    snprintf(knl_desc + n, sizeof(knl_desc) - n, ")");
}

static void setup(void)
{
    bkm_err_t err = {0};
    make_descs();
    ck_assert_msg(bkm_topo_open_synthetic(&hsw, haswell_desc, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_topo_open_synthetic(&knl, knl_desc, &err) == BKM_OK, "%s", err.msg);
}

static void teardown(void)
{
    bkm_topo_close(hsw);
    bkm_topo_close(knl);
    hsw = knl = NULL;
}

typedef struct {
    const char *kmp, *places, *bind, *hw, *gomp;
    int tiles;
} set_t;

static bkm_aff_plan_t *plan_of(bkm_topo_t *t, set_t s, int n)
{
    bkm_aff_env_t env = {0};
    bkm_aff_plan_opts_t o = {0};
    bkm_aff_plan_t *p = NULL;
    bkm_err_t err = {0};
    env.kmp_affinity = s.kmp;
    env.omp_places = s.places;
    env.omp_proc_bind = s.bind;
    env.kmp_hw_subset = s.hw;
    env.gomp_cpu_affinity = s.gomp;
    o.model_tiles = s.tiles;
    ck_assert_msg(bkm_aff_plan_create_ex(t, &env, n, &o, &p, &err) == BKM_OK, "plan %s: %s", s.kmp ? s.kmp : "",
                  err.msg);
    ck_assert_int_eq(bkm_aff_plan_threads(p), n);
    return p;
}

/* Thread @p t of @p p is bound to exactly the CPUs of list @p want ("0,32", "50-53"). */
static void expect(const bkm_aff_plan_t *p, int t, const char *want)
{
    bkm_cpuset_t w;
    bkm_buf_t got;
    ck_assert_int_eq(bkm_cpuset_parse(&w, want, NULL), BKM_OK);
    bkm_buf_init(&got);
    bkm_cpuset_format(bkm_aff_plan_cpus(p, t), &got);
    ck_assert_msg(bkm_cpuset_equal(bkm_aff_plan_cpus(p, t), &w), "thread %d: want {%s}, got {%s}", t, want,
                  bkm_buf_str(&got));
    bkm_buf_free(&got);
}

static void expect2(const bkm_aff_plan_t *p, int t, int a, int b)
{
    char s[32];
    if (b < 0)
        snprintf(s, sizeof(s), "%d", a);
    else
        snprintf(s, sizeof(s), "%d,%d", a, b);
    expect(p, t, s);
}

/* ---- §2.2 Haswell ------------------------------------------------------------------------ */

START_TEST(hsw_fine_compact_1_0_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,1,0"}, 32);
    for (int i = 0; i < 32; i++)
        expect2(p, i, i, -1);
    ck_assert_int_eq(bkm_aff_plan_bound(p), 1);
    ck_assert_str_eq(bkm_aff_plan_effective(p), "noverbose,warnings,respect,granularity=thread,compact,1,0");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_fine_compact_1_0_64)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,1,0"}, 64);
    for (int i = 0; i < 64; i++)
        expect2(p, i, i, -1);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_compact_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "compact"}, 32);
    int idle = 0;
    for (int k = 0; k < 16; k++) {
        expect2(p, 2 * k, k, k + 32);
        expect2(p, 2 * k + 1, k, k + 32);
    }
    for (int i = 0; i < bkm_aff_plan_n_warnings(p); i++)
        idle |= strcmp(bkm_aff_plan_warning(p, i), "socket 1 idle") == 0;
    ck_assert_msg(idle, "no 'socket 1 idle' warning");
    ck_assert_str_eq(bkm_aff_plan_warning(p, 0), "2 threads share core 0");
    ck_assert_str_eq(bkm_aff_plan_effective(p), "noverbose,warnings,respect,granularity=core,compact,0,0");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_fine_compact_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact"}, 32);
    for (int k = 0; k < 16; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, k + 32, -1);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_scatter_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "scatter"}, 32);
    for (int k = 0; k < 16; k++) {
        expect2(p, 2 * k, k, k + 32);
        expect2(p, 2 * k + 1, 16 + k, 48 + k);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_fine_scatter_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,scatter"}, 32);
    for (int k = 0; k < 16; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, 16 + k, -1);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_fine_scatter_64)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,scatter"}, 64);
    for (int k = 0; k < 16; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, 16 + k, -1);
        expect2(p, 32 + 2 * k, 32 + k, -1);
        expect2(p, 33 + 2 * k, 48 + k, -1);
    }
    expect(p, 63, "63");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_core_compact_16)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=core,compact"}, 16);
    for (int k = 0; k < 8; k++) {
        expect2(p, 2 * k, k, k + 32);
        expect2(p, 2 * k + 1, k, k + 32);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_core_compact_1_16)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=core,compact,1"}, 16);
    for (int i = 0; i < 16; i++)
        expect2(p, i, i, i + 32);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_core_scatter_16)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=core,scatter"}, 16);
    for (int k = 0; k < 8; k++) {
        expect2(p, 2 * k, k, k + 32);
        expect2(p, 2 * k + 1, 16 + k, 48 + k);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_balanced_32)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "balanced"}, 32);
    for (int i = 0; i < 32; i++)
        expect2(p, i, i, i + 32);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "balanced"}, 1); /* a single thread is not bound */
    ck_assert_int_eq(bkm_aff_plan_bound(p), 0);
    expect(p, 0, "0-63");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_fine_compact_0_4_8)
{
    static const char *const want[] = {"2", "34", "3", "35", "4", "36", "5", "37"};
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,0,4"}, 8);
    for (int i = 0; i < 8; i++)
        expect(p, i, want[i]);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,0,2"}, 2);
    expect(p, 0, "1");
    bkm_aff_plan_free(p);
    /* offset >= #masks is taken modulo: compact,0,64 == compact,0,0 */
    bkm_aff_plan_t *a = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,0,64"}, 8);
    bkm_aff_plan_t *b = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact,0,0"}, 8);
    ck_assert(bkm_aff_plan_equal(a, b));
    bkm_aff_plan_free(a);
    bkm_aff_plan_free(b);
}
END_TEST

START_TEST(hsw_permute_equivalences)
{
    /* compact,2 / compact,9 = scatter; scatter,1 = compact,1; scatter,2 = compact */
    static const char *const pairs[][2] = {
        {"granularity=fine,compact,2", "granularity=fine,scatter"},
        {"granularity=fine,compact,9", "granularity=fine,scatter"},
        {"granularity=fine,scatter,1", "granularity=fine,compact,1"},
        {"granularity=fine,scatter,2", "granularity=fine,compact"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        bkm_aff_plan_t *a = plan_of(hsw, (set_t){.kmp = pairs[i][0]}, 64);
        bkm_aff_plan_t *b = plan_of(hsw, (set_t){.kmp = pairs[i][1]}, 64);
        ck_assert_msg(bkm_aff_plan_equal(a, b), "%s != %s", pairs[i][0], pairs[i][1]);
        bkm_aff_plan_free(a);
        bkm_aff_plan_free(b);
    }
}
END_TEST

START_TEST(hsw_dups_nodups_physical)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=core,nodups,compact"}, 2);
    expect(p, 0, "0,32");
    expect(p, 1, "1,33");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "physical"}, 4); /* compact,1: fills socket 0 first */
    for (int i = 0; i < 4; i++)
        expect2(p, i, i, i + 32);
    ck_assert_str_eq(bkm_aff_plan_effective(p), "noverbose,warnings,respect,granularity=core,physical,0");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hsw_none_and_disabled_unbound)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){0}, 4);
    ck_assert_int_eq(bkm_aff_plan_bound(p), 0);
    expect(p, 3, "0-63");
    ck_assert_str_eq(bkm_aff_plan_effective(p), "noverbose,warnings,respect,granularity=core,none");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "disabled"}, 4);
    ck_assert_int_eq(bkm_aff_plan_bound(p), 0);
    expect(p, 0, "0-63");
    ck_assert_str_eq(bkm_aff_plan_effective(p), "noverbose,warnings,disabled");
    bkm_aff_plan_free(p);
}
END_TEST

/* ---- §2.3 KNL ------------------------------------------------------------------------------ */

START_TEST(knl_fine_compact_1_0)
{
    for (int tiles = 0; tiles <= 1; tiles++) {
        bkm_aff_plan_t *p = plan_of(knl, (set_t){.kmp = "granularity=fine,compact,1,0", .tiles = tiles}, 68);
        for (int i = 0; i < 68; i++)
            expect2(p, i, i, -1);
        bkm_aff_plan_free(p);
        p = plan_of(knl, (set_t){.kmp = "granularity=fine,compact,1,0", .tiles = tiles}, 136);
        for (int i = 0; i < 136; i++)
            expect2(p, i, i, -1);
        bkm_aff_plan_free(p);
    }
}
END_TEST

START_TEST(knl_balanced)
{
    bkm_aff_plan_t *p = plan_of(knl, (set_t){.kmp = "granularity=fine,balanced"}, 136);
    for (int k = 0; k < 68; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, k + 68, -1);
    }
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.kmp = "balanced"}, 136); /* gran=core */
    for (int k = 0; k < 68; k++) {
        char s[64];
        snprintf(s, sizeof(s), "%d,%d,%d,%d", k, k + 68, k + 136, k + 204);
        expect(p, 2 * k, s);
        expect(p, 2 * k + 1, s);
    }
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.kmp = "granularity=fine,balanced"}, 100);
    for (int k = 0; k < 32; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, k + 68, -1);
    }
    expect(p, 62, "31");
    expect(p, 63, "99");
    for (int i = 64; i < 100; i++)
        expect2(p, i, i - 32, -1);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(knl_scatter_no_tile)
{
    bkm_aff_plan_t *p = plan_of(knl, (set_t){.kmp = "scatter"}, 68);
    for (int i = 0; i < 68; i++) {
        char s[64];
        snprintf(s, sizeof(s), "%d,%d,%d,%d", i, i + 68, i + 136, i + 204);
        expect(p, i, s);
    }
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.kmp = "granularity=fine,scatter"}, 68);
    for (int i = 0; i < 68; i++)
        expect2(p, i, i, -1);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(knl_scatter_tile)
{
    bkm_aff_plan_t *p = plan_of(knl, (set_t){.kmp = "granularity=fine,scatter", .tiles = 1}, 68);
    for (int i = 0; i < 34; i++) {
        expect2(p, i, 2 * i, -1);
        expect2(p, 34 + i, 2 * i + 1, -1);
    }
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.kmp = "granularity=fine,scatter", .tiles = 1}, 136);
    for (int i = 0; i < 34; i++) {
        expect2(p, i, 2 * i, -1);
        expect2(p, 34 + i, 2 * i + 1, -1);
        expect2(p, 68 + i, 68 + 2 * i, -1);
        expect2(p, 102 + i, 69 + 2 * i, -1);
    }
    expect(p, 68, "68");
    expect(p, 101, "134");
    expect(p, 102, "69");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(knl_compact_68)
{
    bkm_aff_plan_t *p = plan_of(knl, (set_t){.kmp = "granularity=fine,compact"}, 68);
    for (int k = 0; k < 17; k++)
        for (int h = 0; h < 4; h++)
            expect2(p, 4 * k + h, k + 68 * h, -1);
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.kmp = "compact"}, 68);
    for (int k = 0; k < 17; k++) {
        char s[64];
        snprintf(s, sizeof(s), "%d,%d,%d,%d", k, k + 68, k + 136, k + 204);
        for (int h = 0; h < 4; h++)
            expect(p, 4 * k + h, s);
    }
    bkm_aff_plan_free(p);
}
END_TEST

/* ---- §1.8 OMP_PLACES / OMP_PROC_BIND, libomp column ---------------------------------------- */

START_TEST(omp_spread_12_on_32_cores)
{
    static const int place[] = {0, 2, 5, 8, 11, 13, 16, 19, 22, 24, 27, 30};
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.bind = "spread"}, 12); /* places default to cores */
    for (int i = 0; i < 12; i++)
        expect2(p, i, place[i], place[i] + 32);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.places = "cores"}, 12); /* PLACES without PROC_BIND: spread */
    for (int i = 0; i < 12; i++)
        expect2(p, i, place[i], place[i] + 32);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.bind = "true"}, 12); /* true = spread */
    for (int i = 0; i < 12; i++)
        expect2(p, i, place[i], place[i] + 32);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_places_threads_spread_t1)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.places = "threads"}, 4); /* T1 on place 16 of threads */
    expect(p, 0, "0");
    expect(p, 1, "8"); /* thread places are ordered 0,32,1,33,...: place 16 is PU 8 */
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_close_40_on_32)
{
    static const int place[] = {0, 0, 1, 2, 3, 4, 4, 5};
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.bind = "close"}, 40);
    for (int i = 0; i < 8; i++)
        expect2(p, i, place[i], place[i] + 32);
    expect(p, 39, "31,63");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_spread_64_on_knl)
{
    bkm_aff_plan_t *p = plan_of(knl, (set_t){.places = "cores", .bind = "spread"}, 64);
    bkm_cpuset_t used;
    bkm_cpuset_zero(&used);
    for (int i = 0; i < 64; i++)
        bkm_cpuset_or(&used, bkm_aff_plan_cpus(p, i));
    for (int c = 0; c < 68; c++) {
        int skipped = (c == 13 || c == 27 || c == 41 || c == 55);
        ck_assert_msg(bkm_cpuset_isset(&used, c) == !skipped, "core %d", c);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_false_with_places_binds)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.places = "cores", .bind = "false"}, 2);
    ck_assert_int_eq(bkm_aff_plan_bound(p), 1);
    expect(p, 0, "0,32");
    expect(p, 1, "1,33");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.bind = "false"}, 2);
    ck_assert_int_eq(bkm_aff_plan_bound(p), 0);
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_rows_both_runtimes_agree)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.places = "cores(4)", .bind = "close"}, 4);
    for (int i = 0; i < 4; i++)
        expect2(p, i, i, i + 32);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.places = "{0:4},{16:4}", .bind = "spread"}, 2);
    expect(p, 0, "0-3");
    expect(p, 1, "16-19");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.places = "{0:2}:4:2", .bind = "close"}, 4);
    expect(p, 0, "0,1");
    expect(p, 1, "2,3");
    expect(p, 2, "4,5");
    expect(p, 3, "6,7");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.bind = "primary"}, 3);
    for (int i = 0; i < 3; i++)
        expect(p, i, "0,32");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.places = "sockets", .bind = "spread,close"}, 2);
    expect(p, 0, "0-15,32-47");
    expect(p, 1, "16-31,48-63");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.places = "ll_caches", .bind = "close"}, 2); /* LLC = socket */
    expect(p, 1, "16-31,48-63");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(omp_typeless_kmp_granularity_is_place_kind)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine", .bind = "spread"}, 2);
    expect(p, 0, "0");
    expect(p, 1, "16"); /* spread over 64 thread places: T1 on place 32 = PU 16 */
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "verbose", .places = "cores", .bind = "spread"}, 2);
    expect(p, 1, "16,48");
    bkm_aff_plan_free(p);
}
END_TEST

/* libomp 14 applies the variables in environment order; the planner assumes bkm's export order
 * (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY, ..., KMP_AFFINITY), checked against the real
 * runtime with the fake-topology harness. */
START_TEST(env_order_model)
{
    const char *names[8], *values[8];
    bkm_aff_env_t env = {0};
    env.kmp_affinity = "granularity=fine";
    env.omp_places = "cores";
    env.omp_proc_bind = "false";
    ck_assert_int_eq(bkm_aff_env_export(&env, names, values), 3);
    ck_assert_str_eq(names[0], "OMP_PROC_BIND");
    ck_assert_str_eq(names[1], "OMP_PLACES");
    ck_assert_str_eq(names[2], "KMP_AFFINITY");
    ck_assert_str_eq(values[2], "granularity=fine");
    /* a later typeless KMP_AFFINITY's granularity replaces the place kind, its dups the nodups */
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine", .places = "cores", .bind = "close"}, 2);
    expect(p, 0, "0");
    expect(p, 1, "32");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "granularity=core", .places = "{0},{1},{2}", .bind = "close"}, 3);
    expect(p, 2, "2,34");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "dups", .places = "cores", .bind = "spread"}, 2); /* 64 core masks */
    expect(p, 1, "16,48");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "dups", .bind = "spread"}, 2); /* PROC_BIND alone: never dups */
    expect(p, 1, "16,48");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "dups", .bind = "spread"}, 3);
    expect(p, 1, "11,43"); /* spacing 33/3 = 11 over 32 core places */
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "granularity=core", .gomp = "3"}, 2);
    expect(p, 0, "3,35");
    bkm_aff_plan_free(p);
}
END_TEST

/* ---- §1.9, §1.3 ------------------------------------------------------------------------------ */

START_TEST(gomp_cpu_affinity)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.gomp = "0 5 7-9"}, 4);
    expect(p, 0, "0");
    expect(p, 1, "5");
    expect(p, 2, "7");
    expect(p, 3, "8");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.gomp = "0-30:10"}, 4);
    expect(p, 0, "0");
    expect(p, 1, "10");
    expect(p, 2, "20");
    expect(p, 3, "30");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.gomp = "3", .places = "cores"}, 2); /* GOMP beats OMP_PLACES */
    expect(p, 0, "3");
    expect(p, 1, "3");
    ck_assert_ptr_nonnull(strstr(bkm_aff_plan_warning(p, 0), "OMP_PLACES ignored"));
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(kmp_beats_omp)
{
    bkm_aff_plan_t *p =
        plan_of(hsw, (set_t){.kmp = "granularity=fine,compact", .places = "cores", .bind = "spread"}, 2);
    expect(p, 0, "0");
    expect(p, 1, "32");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(explicit_proclist)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,explicit,proclist=[{0,1},5,7-9:2]"}, 5);
    expect(p, 0, "0,1");
    expect(p, 1, "5");
    expect(p, 2, "7");
    expect(p, 3, "9");
    expect(p, 4, "0,1");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.kmp = "explicit,proclist=[3]"}, 1); /* granularity=core widens to the core */
    expect(p, 0, "3,35");
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(proclist_outside_machine_is_an_error)
{
    bkm_aff_env_t env = {0};
    bkm_aff_plan_t *p = NULL;
    bkm_err_t err = {0};
    env.kmp_affinity = "granularity=fine,explicit,proclist=[0,99]";
    ck_assert_int_eq(bkm_aff_plan_create(hsw, &env, 2, &p, &err), BKM_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err.msg, "99"));
    env.kmp_affinity = NULL;
    env.gomp_cpu_affinity = "64";
    ck_assert_int_eq(bkm_aff_plan_create(hsw, &env, 2, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "64"));
    env.gomp_cpu_affinity = NULL;
    env.omp_places = "{0:4},{100:2}";
    ck_assert_int_eq(bkm_aff_plan_create(hsw, &env, 2, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "100"));
    ck_assert_int_eq(bkm_aff_plan_create(hsw, &env, 0, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "0"));
}
END_TEST

/* ---- §1.7 KMP_HW_SUBSET ------------------------------------------------------------------------ */

START_TEST(hw_subset_filtering)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.hw = "1s@1,4c@2,1t@1"}, 2); /* type none: floats on subset */
    ck_assert_int_eq(bkm_aff_plan_bound(p), 0);
    expect(p, 1, "50-53");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.hw = "1s,4c,1t"}, 4);
    expect(p, 0, "0-3");
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.hw = "16c,1t", .kmp = "granularity=fine,compact"}, 32); /* per parent */
    for (int i = 0; i < 32; i++)
        expect2(p, i, i, -1);
    bkm_aff_plan_free(p);
    p = plan_of(hsw, (set_t){.hw = "1t", .kmp = "granularity=fine,compact"}, 32);
    for (int i = 0; i < 32; i++)
        expect2(p, i, i, -1);
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.hw = "64c@4,1t", .kmp = "granularity=fine,compact"}, 64);
    for (int i = 0; i < 64; i++)
        expect2(p, i, i + 4, -1);
    bkm_aff_plan_free(p);
    p = plan_of(knl, (set_t){.hw = "68c,2t", .kmp = "granularity=fine,compact"}, 136);
    for (int k = 0; k < 68; k++) {
        expect2(p, 2 * k, k, -1);
        expect2(p, 2 * k + 1, k + 68, -1);
    }
    bkm_aff_plan_free(p);
}
END_TEST

START_TEST(hw_subset_too_many)
{
    static const char *const bad[] = {"32c,1t", "64c,1t", "3s", "1t@2", "1n,4c", "2L2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bkm_aff_env_t env = {0};
        bkm_aff_plan_t *p = NULL;
        bkm_err_t err = {0};
        env.kmp_hw_subset = bad[i];
        ck_assert_msg(bkm_aff_plan_create(hsw, &env, 2, &p, &err) == BKM_EINVAL, "%s accepted", bad[i]);
        ck_assert_ptr_null(p);
    }
}
END_TEST

/* ---- chiplet node (Perlmutter CPU) -------------------------------------------------------------- */

static bkm_topo_t *open_perlmutter(const char *mask)
{
    bkm_node_profile_t prof;
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_profile_builtin("perlmutter-cpu", &prof, &err), BKM_OK);
    ck_assert_msg(bkm_topo_open_profile(&t, &prof, &err) == BKM_OK, "%s", err.msg);
    if (mask) {
        bkm_cpuset_t m;
        ck_assert_int_eq(bkm_cpuset_parse(&m, mask, NULL), BKM_OK);
        ck_assert_int_eq(bkm_topo_restrict(t, &m, &err), BKM_OK);
    }
    return t;
}

static int has_warning(const bkm_aff_plan_t *p, const char *needle)
{
    for (int i = 0; i < bkm_aff_plan_n_warnings(p); i++)
        if (strstr(bkm_aff_plan_warning(p, i), needle))
            return 1;
    return 0;
}

/* libomp 14 without hwloc: ll_caches are the sockets, numa_domains fall back to cores; the notes
 * name the explicit place list that gives one place per L3 / NUMA node. */
START_TEST(perlmutter_ll_caches_and_numa_domains)
{
    bkm_topo_t *t = open_perlmutter(NULL);
    bkm_aff_plan_t *p = plan_of(t, (set_t){.places = "ll_caches", .bind = "spread"}, 4);
    expect(p, 0, "0-63,128-191");
    expect(p, 1, "0-63,128-191");
    expect(p, 2, "64-127,192-255");
    expect(p, 3, "64-127,192-255");
    ck_assert(has_warning(p, "takes the socket as the last-level cache"));
    ck_assert(has_warning(p, "OMP_PLACES='{0:8,128:8}:16:8'"));
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.places = "numa_domains", .bind = "spread"}, 4);
    expect(p, 0, "0,128");
    expect(p, 1, "32,160");
    expect(p, 2, "64,192");
    expect(p, 3, "96,224");
    ck_assert(has_warning(p, "W#192"));
    ck_assert(has_warning(p, "OMP_PLACES='{0:16,128:16}:8:16'"));
    bkm_aff_plan_free(p);
    /* the explicit lists: one thread per L3 (spread), two per L3 (close, 32 threads) */
    p = plan_of(t, (set_t){.places = "{0:8,128:8}:16:8", .bind = "spread"}, 16);
    for (int i = 0; i < 16; i++) {
        char want[32];
        snprintf(want, sizeof want, "%d-%d,%d-%d", 8 * i, 8 * i + 7, 128 + 8 * i, 128 + 8 * i + 7);
        expect(p, i, want);
    }
    ck_assert(!has_warning(p, "last-level cache"));
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.places = "{0:8,128:8}:16:8", .bind = "close"}, 32);
    for (int i = 0; i < 32; i++) {
        char want[32];
        snprintf(want, sizeof want, "%d-%d,%d-%d", 8 * (i / 2), 8 * (i / 2) + 7, 128 + 8 * (i / 2),
                 128 + 8 * (i / 2) + 7);
        expect(p, i, want);
    }
    bkm_aff_plan_free(p);
    /* KMP_HW_SUBSET's LL layer is the socket: 1LL@1 keeps socket 1; LL beside s names one layer twice */
    p = plan_of(t, (set_t){.hw = "1LL@1", .kmp = "granularity=fine,compact"}, 2);
    expect2(p, 0, 64, -1);
    expect2(p, 1, 192, -1);
    ck_assert(has_warning(p, "LL layer the socket"));
    bkm_aff_plan_free(p);
    {
        static const char *const bad[] = {"1s,1ll", "1package", "2L3", "1n,8c", "1numa_domain"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            bkm_aff_env_t env = {0};
            bkm_aff_plan_t *q = NULL;
            bkm_err_t err = {0};
            env.kmp_hw_subset = bad[i];
            env.kmp_affinity = "granularity=fine,compact";
            ck_assert_msg(bkm_aff_plan_create(t, &env, 2, &q, &err) == BKM_EINVAL, "%s accepted", bad[i]);
            ck_assert_msg(strstr(err.msg, "KMP_HW_SUBSET") != NULL, "%s: %s", bad[i], err.msg);
        }
    }
    bkm_topo_close(t);
}
END_TEST

/* One rank of 8 per node (-c 32 --cpu-bind=cores: one NUMA node, two L3): NERSC's OMP_PLACES=threads
 * OMP_PROC_BIND=spread with 16 threads puts one thread on the first hardware thread of each core. */
START_TEST(perlmutter_rank_of_eight)
{
    bkm_topo_t *t = open_perlmutter("16-31,144-159");
    bkm_aff_plan_t *p = plan_of(t, (set_t){.places = "threads", .bind = "spread"}, 16);
    for (int i = 0; i < 16; i++)
        expect2(p, i, 16 + i, -1);
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.places = "cores", .bind = "close"}, 32); /* both hardware threads, 2 per core */
    for (int i = 0; i < 32; i++)
        expect2(p, i, 16 + i / 2, 144 + i / 2);
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.places = "ll_caches", .bind = "close"}, 2); /* one socket: one place */
    expect(p, 0, "16-31,144-159");
    expect(p, 1, "16-31,144-159");
    ck_assert(has_warning(p, "OMP_PLACES='{16:8,144:8}:2:8'"));
    bkm_aff_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

/* ---- initial mask ------------------------------------------------------------------------------ */

START_TEST(initial_mask_respected)
{
    bkm_topo_t *t = NULL;
    bkm_cpuset_t m;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, haswell_desc, &err), BKM_OK);
    ck_assert_int_eq(bkm_cpuset_parse(&m, "0-3,32-35", NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &m, &err), BKM_OK);
    bkm_aff_plan_t *p = plan_of(t, (set_t){.kmp = "granularity=fine,scatter"}, 8); /* 1 socket x 4 x 2 */
    static const char *const want[] = {"0", "1", "2", "3", "32", "33", "34", "35"};
    for (int i = 0; i < 8; i++)
        expect(p, i, want[i]);
    for (int i = 0; i < bkm_aff_plan_n_warnings(p); i++) /* socket 1 is not ours: not "idle" */
        ck_assert_ptr_null(strstr(bkm_aff_plan_warning(p, i), "socket 1"));
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){0}, 2);
    expect(p, 0, "0-3,32-35");
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.kmp = "norespect,granularity=fine,compact"}, 8); /* aims at CPUs not owned */
    expect(p, 2, "1");
    expect(p, 7, "35");
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.kmp = "granularity=fine,compact"}, 10); /* wraps around after 8 masks */
    expect(p, 8, "0");
    bkm_aff_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

/* balanced on a non-uniform topology (initial mask 1-6,9-12 of a 2x4x2 machine): libomp's procarr
 * path. Expected sets measured with the real libomp 14 in the fake-topology harness. */
START_TEST(balanced_non_uniform)
{
    static const char *const fine7[] = {"1", "9", "2", "3", "4", "5", "6"};
    static const char *const core7[] = {"1,9", "1,9", "2,10", "3,11", "4,12", "5", "6"};
    bkm_topo_t *t = NULL;
    bkm_cpuset_t m;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:2 core:4 pu:2(indexes=0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15)",
                                             &err), BKM_OK);
    ck_assert_int_eq(bkm_cpuset_parse(&m, "1-6,9-12", NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &m, &err), BKM_OK);
    bkm_aff_plan_t *p = plan_of(t, (set_t){.kmp = "granularity=fine,balanced"}, 7);
    for (int i = 0; i < 7; i++)
        expect(p, i, fine7[i]);
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.kmp = "balanced"}, 7);
    for (int i = 0; i < 7; i++)
        expect(p, i, core7[i]);
    bkm_aff_plan_free(p);
    p = plan_of(t, (set_t){.kmp = "balanced"}, 3);
    expect(p, 2, "3,11");
    bkm_aff_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

START_TEST(json_output)
{
    bkm_aff_plan_t *p = plan_of(hsw, (set_t){.kmp = "granularity=fine,compact"}, 2);
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_aff_plan_to_json(p, hsw, &w, &err), BKM_OK);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, &err), BKM_OK);
    ck_assert_int_eq((int)bkm_json_get_num(j, "threads", -1), 2);
    const bkm_json_t *plan = bkm_json_get(j, "plan");
    ck_assert_ptr_nonnull(plan);
    const bkm_json_t *t1 = bkm_json_at(plan, 1);
    ck_assert_int_eq((int)bkm_json_get_num(t1, "thread", -1), 1);
    ck_assert_int_eq((int)bkm_json_at(bkm_json_get(t1, "cpus"), 0)->num, 32);
    ck_assert_int_eq(bkm_json_get(j, "bound")->boolean, 1);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_aff_plan_free(p);
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("affinity_plan");
    TCase *tc = tcase_create("haswell");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, hsw_fine_compact_1_0_32);
    tcase_add_test(tc, hsw_fine_compact_1_0_64);
    tcase_add_test(tc, hsw_compact_32);
    tcase_add_test(tc, hsw_fine_compact_32);
    tcase_add_test(tc, hsw_scatter_32);
    tcase_add_test(tc, hsw_fine_scatter_32);
    tcase_add_test(tc, hsw_fine_scatter_64);
    tcase_add_test(tc, hsw_core_compact_16);
    tcase_add_test(tc, hsw_core_compact_1_16);
    tcase_add_test(tc, hsw_core_scatter_16);
    tcase_add_test(tc, hsw_balanced_32);
    tcase_add_test(tc, hsw_fine_compact_0_4_8);
    tcase_add_test(tc, hsw_permute_equivalences);
    tcase_add_test(tc, hsw_dups_nodups_physical);
    tcase_add_test(tc, hsw_none_and_disabled_unbound);
    suite_add_tcase(s, tc);
    tc = tcase_create("knl");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, knl_fine_compact_1_0);
    tcase_add_test(tc, knl_balanced);
    tcase_add_test(tc, knl_scatter_no_tile);
    tcase_add_test(tc, knl_scatter_tile);
    tcase_add_test(tc, knl_compact_68);
    suite_add_tcase(s, tc);
    tc = tcase_create("omp");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, omp_spread_12_on_32_cores);
    tcase_add_test(tc, omp_places_threads_spread_t1);
    tcase_add_test(tc, omp_close_40_on_32);
    tcase_add_test(tc, omp_spread_64_on_knl);
    tcase_add_test(tc, omp_false_with_places_binds);
    tcase_add_test(tc, omp_rows_both_runtimes_agree);
    tcase_add_test(tc, omp_typeless_kmp_granularity_is_place_kind);
    tcase_add_test(tc, env_order_model);
    suite_add_tcase(s, tc);
    tc = tcase_create("other");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, gomp_cpu_affinity);
    tcase_add_test(tc, kmp_beats_omp);
    tcase_add_test(tc, explicit_proclist);
    tcase_add_test(tc, proclist_outside_machine_is_an_error);
    tcase_add_test(tc, hw_subset_filtering);
    tcase_add_test(tc, hw_subset_too_many);
    tcase_add_test(tc, perlmutter_ll_caches_and_numa_domains);
    tcase_add_test(tc, perlmutter_rank_of_eight);
    tcase_add_test(tc, initial_mask_respected);
    tcase_add_test(tc, balanced_non_uniform);
    tcase_add_test(tc, json_output);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(plan_suite)
