/* SPDX-License-Identifier: MIT */
/* The GNU libgomp 12 planner, rule by rule: the abstract places from the sysfs view of the topology
 * (threads in sibling order, cores, sockets, ll_caches with libgomp 12.2's one-place bug,
 * numa_domains), explicit OMP_PLACES lists, GOMP_CPU_AFFINITY, the precedence between them and
 * OMP_PROC_BIND, close/true/primary/spread with partitions and nested levels, the constructor's
 * pin, the messages for rejected values, the waiting, the plan key and the strict checks. The
 * worked examples: Haswell spread 12 on 32 cores, close 40 on 32 cores, KNL spread 64 on 68
 * cores, GOMP_CPU_AFFINITY="0 1" with 4 threads. Topologies are hwloc synthetic descriptions
 * (the built-in Cori profiles, a 2-socket AMD-like node), the same on any machine. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"

static bkm_topo_t *hsw, *knl, *amd;

/* 2 sockets x 2 NUMA nodes x 2 L3 x 4 cores x 2 threads, CPU N+32 the sibling of N. */
static void amd_desc(char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "pack:2 group:2 [numa] l3:2 core:4 pu:2(indexes=");
    for (int c = 0; c < 32; c++)
        k += (size_t)snprintf(out + k, n - k, "%s%d,%d", c ? "," : "", c, c + 32);
    snprintf(out + k, n - k, ")");
}

static bkm_topo_t *open_profile(const char *name)
{
    bkm_node_profile_t p;
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_profile_builtin(name, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_topo_open_profile(&t, &p, &err) == BKM_OK, "%s", err.msg);
    return t;
}

static void setup(void)
{
    char desc[1024];
    bkm_err_t err = {0};
    hsw = open_profile("haswell");
    knl = open_profile("knl");
    amd_desc(desc, sizeof(desc));
    ck_assert_msg(bkm_topo_open_synthetic(&amd, desc, &err) == BKM_OK, "%s", err.msg);
}

static void teardown(void)
{
    bkm_topo_close(hsw);
    bkm_topo_close(knl);
    bkm_topo_close(amd);
    hsw = knl = amd = NULL;
}

/* A topology restricted to @p mask (a fresh one; the caller closes it). */
static bkm_topo_t *masked(const char *profile, const char *mask)
{
    bkm_topo_t *t = open_profile(profile);
    bkm_cpuset_t m;
    ck_assert_int_eq(bkm_cpuset_parse(&m, mask, NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &m, NULL), BKM_OK);
    return t;
}

/* Plan @p env over @p levels nesting levels with num_threads @p t1 (outermost) and @p t2 (each
 * nested team; 0 = no clause). */
static bkm_aff_gomp_plan_t *plan_nested(bkm_topo_t *t, bkm_aff_gomp_env_t env, int levels, int t1, int t2)
{
    bkm_aff_gomp_opts_t o = {0};
    bkm_aff_gomp_plan_t *p = NULL;
    bkm_err_t err = {0};
    o.n_levels = levels;
    o.num_threads[0] = t1;
    for (int l = 1; l < levels; l++)
        o.num_threads[l] = t2;
    ck_assert_msg(bkm_aff_gomp_plan_create(t, &env, &o, &p, &err) == BKM_OK, "plan: %s", err.msg);
    return p;
}

static bkm_aff_gomp_plan_t *plan(bkm_topo_t *t, bkm_aff_gomp_env_t env, int threads)
{
    return plan_nested(t, env, 1, threads, 0);
}

/* The CPUs of @p s as a list "0,32". */
static const char *fmt(const bkm_cpuset_t *s)
{
    static char buf[4][1024];
    static int k;
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(s, &b);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
    return buf[k];
}

/* Thread @p i of the plan: place @p place and CPUs @p cpus. */
static void expect_thread(const bkm_aff_gomp_plan_t *p, int i, int place, const char *cpus)
{
    const bkm_aff_gomp_thread_t *t = bkm_aff_gomp_plan_thread(p, i);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(t->place == place, "thread %d: place %d, want %d", i, t->place, place);
    ck_assert_msg(!strcmp(fmt(&t->cpus), cpus), "thread %d: cpus {%s}, want {%s}", i, fmt(&t->cpus), cpus);
}

static void expect_partition(const bkm_aff_gomp_plan_t *p, int i, int off, int len)
{
    const bkm_aff_gomp_thread_t *t = bkm_aff_gomp_plan_thread(p, i);
    ck_assert_msg(t->part_off == off && t->part_len == len, "thread %d: partition %d+%d, want %d+%d", i, t->part_off,
                  t->part_len, off, len);
}

/* The place list in libgomp's OMP_DISPLAY_ENV notation. */
static void expect_places(const bkm_aff_gomp_plan_t *p, const char *want)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_aff_gomp_plan_places_format(p, &b);
    ck_assert_msg(!strcmp(bkm_buf_str(&b), want), "places '%s', want '%s'", bkm_buf_str(&b), want);
    bkm_buf_free(&b);
}

static void expect_messages(const bkm_aff_gomp_plan_t *p, int n, const char *first)
{
    ck_assert_msg(bkm_aff_gomp_plan_n_messages(p) == n, "%d messages, want %d (first: %s)",
                  bkm_aff_gomp_plan_n_messages(p), n, n ? first : "");
    if (n > 0)
        ck_assert_str_eq(bkm_aff_gomp_plan_message(p, 0), first);
}

static int has_note(const bkm_aff_gomp_plan_t *p, const char *part)
{
    for (int i = 0; i < bkm_aff_gomp_plan_n_notes(p); i++)
        if (strstr(bkm_aff_gomp_plan_note(p, i), part))
            return 1;
    return 0;
}

/* ---- Worked examples ---------------------------------------------------------------------- */

START_TEST(hsw_spread_12_on_cores)
{
    static const int want[] = {0, 3, 6, 9, 12, 15, 18, 21, 24, 26, 28, 30};
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread"}, 12);
    ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 32);
    for (int i = 0; i < 12; i++) {
        char cpus[32];
        snprintf(cpus, sizeof(cpus), "%d,%d", want[i], want[i] + 32);
        expect_thread(p, i, want[i], cpus);
    }
    /* 32 places / 12 threads: subpartitions of 3 places below place 24, then of 2 */
    expect_partition(p, 0, 0, 3);
    expect_partition(p, 7, 21, 3);
    expect_partition(p, 8, 24, 2);
    expect_partition(p, 11, 30, 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_bind(p, 1), BKM_AFF_BIND_SPREAD);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(hsw_close_40_on_cores_round_robin)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "close"}, 40);
    /* T > P: s = 1 thread per place, the 8 left over start again at place 0 */
    for (int i = 0; i < 40; i++) {
        char cpus[32];
        snprintf(cpus, sizeof(cpus), "%d,%d", i % 32, i % 32 + 32);
        expect_thread(p, i, i % 32, cpus);
        expect_partition(p, i, 0, 32);
    }
    ck_assert(has_note(p, "threads share places"));
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(close_more_threads_than_places)
{
    /* T = 8 on P = 3: s = 2 threads per place, and the rest (2) one by one from the first place:
     * thread i < s*P on place i/s, thread i >= s*P on place i - s*P */
    static const int want[] = {0, 0, 1, 1, 2, 2, 0, 1};
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores(3)", .omp_proc_bind = "close"}, 8);
    for (int i = 0; i < 8; i++)
        ck_assert_msg(bkm_aff_gomp_plan_thread(p, i)->place == want[i], "thread %d on place %d, want %d", i,
                      bkm_aff_gomp_plan_thread(p, i)->place, want[i]);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(knl_spread_64_on_68_cores)
{
    bkm_aff_gomp_plan_t *p = plan(knl, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread"}, 64);
    /* 68 / 64: the first 4 subpartitions have 2 places, so cores 1, 3, 5, 7 stay idle */
    static const int head[] = {0, 2, 4, 6, 8, 9, 10, 11};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(bkm_aff_gomp_plan_thread(p, i)->place, head[i]);
    for (int i = 4; i < 64; i++)
        ck_assert_int_eq(bkm_aff_gomp_plan_thread(p, i)->place, i + 4);
    expect_thread(p, 63, 67, "67,135,203,271");
    expect_partition(p, 0, 0, 2);
    expect_partition(p, 4, 8, 1);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(gomp_cpu_affinity_short_list_does_not_restart)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = "0 1"}, 4);
    expect_places(p, "{0},{1}");
    ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_GOMP);
    ck_assert_str_eq(bkm_aff_gomp_plan_bind_display(p), "TRUE");
    expect_thread(p, 0, 0, "0");
    expect_thread(p, 1, 0, "0");
    expect_thread(p, 2, 1, "1");
    expect_thread(p, 3, 1, "1");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

/* ---- Abstract places ---------------------------------------------------------------------- */

START_TEST(threads_follow_the_sibling_lists)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "threads(4)"}, 1);
    expect_places(p, "{0},{32},{1},{33}");
    bkm_aff_gomp_plan_free(p);
    p = plan(knl, (bkm_aff_gomp_env_t){.omp_places = "THREADS ( 5 )"}, 1);
    expect_places(p, "{0},{68},{136},{204},{1}");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(cores_sockets_numa)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "sockets"}, 1);
    expect_places(p, "{0:16,32:16},{16:16,48:16}");
    bkm_aff_gomp_plan_free(p);
    p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores(2)"}, 1);
    expect_places(p, "{0,32},{1,33}");
    bkm_aff_gomp_plan_free(p);
    p = plan(amd, (bkm_aff_gomp_env_t){.omp_places = "numa_domains"}, 1);
    expect_places(p, "{0:8,32:8},{8:8,40:8},{16:8,48:8},{24:8,56:8}");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(ll_caches_is_one_place_in_12_2)
{
    bkm_aff_gomp_plan_t *p = plan(amd, (bkm_aff_gomp_env_t){.omp_places = "ll_caches", .omp_proc_bind = "close"}, 4);
    /* 8 L3 groups of 4 cores, but libgomp reads CPU 0's list for every CPU */
    expect_places(p, "{0:4,32:4}");
    for (int i = 0; i < 4; i++)
        expect_thread(p, i, 0, "0-3,32-35");
    ck_assert(has_note(p, "ll_caches gives 1 place"));
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(a_kind_the_topology_lacks)
{
    bkm_topo_t *t = NULL;
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:3 core:1 pu:1", NULL), BKM_OK);
    /* no cache listed: OMP_PLACES gives no place; binding (close) falls back to threads */
    bkm_aff_gomp_plan_t *p = plan(t, (bkm_aff_gomp_env_t){.omp_places = "ll_caches", .omp_proc_bind = "close"}, 2);
    expect_messages(p, 1, "Error reading core/socket topology");
    ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_DEFAULT);
    expect_places(p, "{0},{1},{2}");
    bkm_aff_gomp_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

START_TEST(restricted_mask)
{
    bkm_topo_t *t = masked("haswell", "0-3,32-35");
    bkm_aff_gomp_plan_t *p = plan(t, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread"}, 2);
    expect_places(p, "{0,32},{1,33},{2,34},{3,35}");
    expect_thread(p, 1, 2, "2,34");
    ck_assert_str_eq(bkm_aff_gomp_plan_nthreads_display(p), "8");
    bkm_aff_gomp_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

/* ---- Explicit OMP_PLACES ------------------------------------------------------------------ */

START_TEST(explicit_lists)
{
    static const struct {
        const char *places, *want;
    } cases[] = {
        {"{0:4},{16:4}", "{0:4},{16:4}"},
        {"{0:2}:4:2", "{0:2},{2:2},{4:2},{6:2}"},
        {"{0}:3:0", "{0},{0},{0}"}, /* stride 0 repeats the place */
        {"{1}:2:-1", "{1},{0}"},
        {"{0:4,!2}", "{0:2,3}"},     /* !N inside braces removes a CPU */
        {"{0:2},{4},!{0:2}", "{4}"}, /* !place removes an earlier place */
        {"0,1, 32", "{0},{1},{32}"}, /* bare numbers are places */
        {" { 0 , 1 } ", "{0:2}"},
        {"{0:3:16}", "{0,16,32}"},
        {"{+1}", "{1}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = cases[i].places}, 1);
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_aff_gomp_plan_places_format(p, &b);
        ck_assert_msg(!strcmp(bkm_buf_str(&b), cases[i].want), "'%s' gives '%s', want '%s'", cases[i].places,
                      bkm_buf_str(&b), cases[i].want);
        ck_assert_int_eq(bkm_aff_gomp_plan_n_messages(p), 0);
        bkm_buf_free(&b);
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

/* A rejected OMP_PLACES: libgomp's messages, then the variable is treated as unset. */
START_TEST(rejected_places)
{
    static const struct {
        const char *places, *first;
        int n_msg;
    } cases[] = {
        {"{0-3}", "Invalid value for environment variable OMP_PLACES", 1},
        {"cores(", "Invalid value for environment variable OMP_PLACES", 1},
        {"threads()", "Invalid value for environment variable OMP_PLACES", 1},
        {"{0:0}", "Invalid value for environment variable OMP_PLACES", 1},
        {"!3:1,{0}", "Invalid value for environment variable OMP_PLACES", 1},
        {"{}", "Invalid value for environment variable OMP_PLACES", 1},
        {"", "Invalid value for environment variable OMP_PLACES", 1},
        {"{0}:65535,{1}:2", "Invalid value for environment variable OMP_PLACES", 1}, /* > 65536 places */
        {"{64}", "Logical CPU number 64 out of range", 2},
        {"{0:2:-1}", "Logical CPU number 0+-1 out of range", 2},
        {"{0}:2:64", "Logical CPU number 0+64 out of range", 2},
        {"{0,!5}", "Logical CPU 5 to be removed is not in the set", 2},
        {"!{0}", "Trying to remove a non-existing place from list of places", 2},
        {"{0:2},!{0:2}", "All places have been removed", 2},
        {"threads(0)", "Error reading core/socket topology", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bkm_aff_gomp_plan_t *p =
            plan(hsw, (bkm_aff_gomp_env_t){.omp_places = cases[i].places, .omp_proc_bind = "close"}, 2);
        ck_assert_msg(bkm_aff_gomp_plan_n_messages(p) == cases[i].n_msg, "'%s': %d messages", cases[i].places,
                      bkm_aff_gomp_plan_n_messages(p));
        ck_assert_msg(!strcmp(bkm_aff_gomp_plan_message(p, 0), cases[i].first), "'%s': '%s'", cases[i].places,
                      bkm_aff_gomp_plan_message(p, 0));
        /* treated as unset: OMP_PROC_BIND=close binds over the default threads */
        ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_DEFAULT);
        ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 64);
        expect_thread(p, 1, 1, "32");
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

START_TEST(places_outside_the_mask)
{
    bkm_topo_t *t = masked("haswell", "0-3,32-35");
    bkm_aff_gomp_plan_t *p = plan(t, (bkm_aff_gomp_env_t){.omp_places = "{8:4},{0:2}"}, 1);
    expect_messages(p, 1,
                    "Number of places reduced from 2 to 1 because some places didn't contain any usable logical CPUs");
    expect_places(p, "{0:2}");
    bkm_aff_gomp_plan_free(p);
    p = plan(t, (bkm_aff_gomp_env_t){.omp_places = "{8:4}"}, 1);
    expect_messages(p, 2, "None of the places contain usable logical CPUs");
    ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_bound(p), 0);
    bkm_aff_gomp_plan_free(p);
    /* the CPU set libgomp allocates ends at 63 (highest CPU of the mask 35, whole 64-bit words) */
    p = plan(t, (bkm_aff_gomp_env_t){.omp_places = "{63}"}, 1);
    expect_messages(p, 2, "None of the places contain usable logical CPUs");
    bkm_aff_gomp_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

/* ---- Precedence and OMP_PROC_BIND --------------------------------------------------------- */

START_TEST(places_alone_bind_true)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores"}, 2);
    ck_assert_str_eq(bkm_aff_gomp_plan_bind_display(p), "TRUE");
    ck_assert_int_eq(bkm_aff_gomp_plan_bind(p, 1), BKM_AFF_BIND_TRUE);
    expect_thread(p, 1, 1, "1,33"); /* like close, not libomp's spread */
    ck_assert(has_note(p, "binding is on because OMP_PLACES gave places"));
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(bind_alone_threads)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = "spread"}, 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_DEFAULT);
    ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 64);
    expect_thread(p, 0, 0, "0");
    expect_thread(p, 1, 32, "16"); /* place 32 of {0},{32},{1},{33},... */
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(bind_false_ignores_places)
{
    bkm_cpuset_t pin;
    bkm_aff_gomp_plan_t *p =
        plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "false", .gomp_cpu_affinity = "0 1"}, 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_bound(p), 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_initial_pin(p, &pin), 0);
    ck_assert_str_eq(fmt(&pin), "0-63");
    expect_thread(p, 1, -1, "0-63");
    ck_assert(has_note(p, "OMP_PLACES is only checked for its syntax"));
    ck_assert(has_note(p, "GOMP_CPU_AFFINITY is only checked for its syntax: OMP_PROC_BIND=false"));
    bkm_aff_gomp_plan_free(p);
    /* ... but the syntax is checked */
    p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "{0-3}", .omp_proc_bind = "false"}, 1);
    expect_messages(p, 1, "Invalid value for environment variable OMP_PLACES");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(omp_places_beats_gomp_cpu_affinity)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .gomp_cpu_affinity = "3"}, 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_OMP);
    expect_thread(p, 0, 0, "0,32");
    ck_assert(has_note(p, "OMP_PLACES gave the places"));
    bkm_aff_gomp_plan_free(p);
    /* a rejected OMP_PLACES leaves the places to GOMP_CPU_AFFINITY */
    p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores(", .gomp_cpu_affinity = "3"}, 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_places_source(p), BKM_AFF_GOMP_PLACES_GOMP);
    expect_thread(p, 1, 0, "3");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(proc_bind_values)
{
    static const struct {
        const char *bind, *display;
        int ok;
    } cases[] = {
        {"primary", "MASTER", 1},
        {"master", "MASTER", 1},
        {" Close ", "CLOSE", 1},
        {"spread,close", "SPREAD,CLOSE", 1},
        {"spread, master", "SPREAD,MASTER", 1},
        {"true,close", "FALSE", 0},
        {"false,spread", "FALSE", 0},
        {"close,true", "FALSE", 0},
        {"bogus", "FALSE", 0},
        {"close,", "FALSE", 0},
        {"", "FALSE", 0},
        {"spreadx", "FALSE", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = cases[i].bind}, 1);
        ck_assert_msg(!strcmp(bkm_aff_gomp_plan_bind_display(p), cases[i].display), "'%s' shows '%s'", cases[i].bind,
                      bkm_aff_gomp_plan_bind_display(p));
        ck_assert_int_eq(bkm_aff_gomp_plan_n_messages(p), !cases[i].ok);
        if (!cases[i].ok) /* rejected = unset: no binding */
            ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 0);
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

START_TEST(primary_keeps_every_thread_on_place_0)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "primary"}, 3);
    for (int i = 0; i < 3; i++)
        expect_thread(p, i, 0, "0,32");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(spread_more_threads_than_places)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "sockets", .omp_proc_bind = "spread"}, 5);
    /* T > P: placed as close with T > P (2 threads per place, the fifth back on place 0), each
     * thread's partition its own place */
    int want[] = {0, 0, 1, 1, 0};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(bkm_aff_gomp_plan_thread(p, i)->place, want[i]);
        expect_partition(p, i, want[i], 1);
    }
    bkm_aff_gomp_plan_free(p);
}
END_TEST

/* ---- GOMP_CPU_AFFINITY -------------------------------------------------------------------- */

START_TEST(gomp_cpu_affinity_grammar)
{
    static const struct {
        const char *list, *places;
    } cases[] = {
        {"0 5 7-9", "{0},{5},{7},{8},{9}"},
        {"0-30:10", "{0},{10},{20},{30}"},
        {"0x2,010", "{2},{8}"},
        {" 3 , 3 ", "{3},{3}"},
        {"0 100", "{0}"}, /* beyond the CPU set: dropped */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = cases[i].list}, 1);
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_aff_gomp_plan_places_format(p, &b);
        ck_assert_msg(!strcmp(bkm_buf_str(&b), cases[i].places), "'%s' gives '%s'", cases[i].list, bkm_buf_str(&b));
        ck_assert_int_eq(bkm_aff_gomp_plan_n_messages(p), 0);
        bkm_buf_free(&b);
        bkm_aff_gomp_plan_free(p);
    }
    static const char *const bad[] = {"0-", "a", "3-1", "0,,1", "0-4:0", "-1", "70000", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = bad[i]}, 1);
        expect_messages(p, 1, "Invalid value for enviroment variable GOMP_CPU_AFFINITY");
        ck_assert_int_eq(bkm_aff_gomp_plan_n_places(p), 0);
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

START_TEST(gomp_cpu_outside_the_mask)
{
    bkm_topo_t *t = masked("haswell", "0-3,32-35");
    bkm_cpuset_t pin;
    /* libgomp does not intersect GOMP_CPU_AFFINITY with the mask: a thread bound to 8 cannot start */
    bkm_aff_gomp_plan_t *p = plan(t, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = "0 8"}, 2);
    ck_assert_str_eq(bkm_aff_gomp_plan_fatal(p), "Thread creation failed: Invalid argument");
    ck_assert(has_note(p, "outside the initial mask"));
    bkm_aff_gomp_plan_free(p);
    /* the constructor's pin to 8 fails: the initial thread keeps the mask */
    p = plan(t, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = "8 0"}, 1);
    ck_assert_ptr_null(bkm_aff_gomp_plan_fatal(p));
    ck_assert_int_eq(bkm_aff_gomp_plan_initial_pin(p, &pin), 1);
    ck_assert_str_eq(fmt(&pin), "0-3,32-35");
    ck_assert(has_note(p, "the pin fails"));
    bkm_aff_gomp_plan_free(p);
    bkm_topo_close(t);
}
END_TEST

/* ---- The constructor's pin and nested teams ----------------------------------------------- */

START_TEST(constructor_pins_the_initial_thread)
{
    bkm_cpuset_t pin;
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = "close"}, 1);
    ck_assert_int_eq(bkm_aff_gomp_plan_initial_pin(p, &pin), 1);
    ck_assert_str_eq(fmt(&pin), "0");
    ck_assert(has_note(p, "pins the initial thread to place 0 {0} before main()"));
    bkm_aff_gomp_plan_free(p);
    p = plan(hsw, (bkm_aff_gomp_env_t){0}, 1);
    ck_assert_int_eq(bkm_aff_gomp_plan_initial_pin(p, &pin), 0);
    ck_assert_str_eq(fmt(&pin), "0-63");
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(nested_spread_close)
{
    bkm_aff_gomp_plan_t *p =
        plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread,close"}, 2, 2, 2);
    bkm_buf_t path;
    ck_assert_int_eq(bkm_aff_gomp_plan_n_threads(p), 6);
    ck_assert_int_eq(bkm_aff_gomp_plan_max_active_levels(p), 255);
    ck_assert_int_eq(bkm_aff_gomp_plan_bind(p, 2), BKM_AFF_BIND_CLOSE);
    /* outer: spread over 32 cores, halves of 16 places; inner: close inside each half */
    expect_thread(p, 0, 0, "0,32");
    expect_partition(p, 0, 0, 16);
    expect_thread(p, 1, 16, "16,48");
    expect_partition(p, 1, 16, 16);
    expect_thread(p, 2, 0, "0,32");
    expect_thread(p, 3, 1, "1,33");
    expect_thread(p, 4, 16, "16,48");
    expect_thread(p, 5, 17, "17,49");
    expect_partition(p, 5, 16, 16);
    bkm_buf_init(&path);
    bkm_aff_gomp_plan_thread_path(p, 5, &path);
    ck_assert_str_eq(bkm_buf_str(&path), "1.1");
    bkm_buf_free(&path);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(nested_close_spread_subpartition_of_the_primary)
{
    /* outer close: thread 1 on place 1 of [0,32); its inner spread team of 2 splits [0,32) into
     * [0,16) and [16,32): the primary keeps place 1 inside [0,16), the other thread takes 16 */
    bkm_aff_gomp_plan_t *p =
        plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "close,spread"}, 2, 2, 2);
    expect_thread(p, 1, 1, "1,33");
    expect_partition(p, 1, 0, 32);
    expect_thread(p, 4, 1, "1,33"); /* 1.0 */
    expect_partition(p, 4, 0, 16);
    expect_thread(p, 5, 16, "16,48"); /* 1.1 */
    expect_partition(p, 5, 16, 16);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(nesting_needs_active_levels)
{
    /* no list, no OMP_MAX_ACTIVE_LEVELS: max-active-levels 1, inner teams of 1 thread */
    bkm_aff_gomp_plan_t *p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = "spread"}, 2, 2, 4);
    ck_assert_int_eq(bkm_aff_gomp_plan_team_size(p, 2), 1);
    ck_assert_int_eq(bkm_aff_gomp_plan_n_threads(p), 4);
    ck_assert(has_note(p, "level 2 teams have 1 thread"));
    bkm_aff_gomp_plan_free(p);
    p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = "spread", .omp_max_active_levels = "2"}, 2, 2, 4);
    ck_assert_int_eq(bkm_aff_gomp_plan_team_size(p, 2), 4);
    bkm_aff_gomp_plan_free(p);
    /* OMP_NESTED=false wins over a list; OMP_MAX_ACTIVE_LEVELS over OMP_NESTED */
    p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_num_threads = "3,2", .omp_nested = "false"}, 2, 0, 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_max_active_levels(p), 1);
    bkm_aff_gomp_plan_free(p);
    p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_max_active_levels = "1", .omp_nested = "true"}, 2, 0, 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_max_active_levels(p), 1);
    bkm_aff_gomp_plan_free(p);
    p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_max_active_levels = "300"}, 2, 0, 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_max_active_levels(p), 255);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(omp_num_threads_list)
{
    bkm_aff_gomp_plan_t *p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_num_threads = " 3 , 2 "}, 2, 0, 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_team_size(p, 1), 3);
    ck_assert_int_eq(bkm_aff_gomp_plan_team_size(p, 2), 2);
    ck_assert_int_eq(bkm_aff_gomp_plan_n_threads(p), 3 + 6);
    ck_assert_str_eq(bkm_aff_gomp_plan_nthreads_display(p), "3,2");
    bkm_aff_gomp_plan_free(p);
    /* unset or rejected: the CPUs of the mask */
    static const char *const bad[] = {"0", "3,", "0x3", "-3", "3 2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = plan_nested(hsw, (bkm_aff_gomp_env_t){.omp_num_threads = bad[i]}, 2, 0, 0);
        expect_messages(p, 1, "Invalid value for environment variable OMP_NUM_THREADS");
        ck_assert_int_eq(bkm_aff_gomp_plan_team_size(p, 1), 64);
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

/* ---- Waiting ------------------------------------------------------------------------------ */

START_TEST(wait_policy_and_spincount)
{
    static const struct {
        const char *policy, *spin;
        int threads;
        unsigned long long count, throttled, effective;
        int n_msg;
    } cases[] = {
        {NULL, NULL, 4, 300000, 100, 300000, 0},
        {NULL, NULL, 65, 300000, 100, 100, 0}, /* more threads than the 64 CPUs */
        {"active", NULL, 2, 30000000000ULL, 1000, 30000000000ULL, 0},
        {" ACTIVE ", "5", 2, 5, 5, 5, 0},
        {"passive", NULL, 2, 0, 0, 0, 0},
        {"passive", "10k", 2, 10000, 0, 10000, 0}, /* GOMP_SPINCOUNT counts even when passive */
        {NULL, "2 k", 2, 2000, 100, 2000, 0},
        {NULL, "1M", 2, 1000000, 100, 1000000, 0},
        {NULL, "infinite", 2, ULLONG_MAX, 100, ULLONG_MAX, 0},
        {NULL, "20000000T", 2, ULLONG_MAX, 100, ULLONG_MAX, 0},
        {NULL, "-1", 2, ULLONG_MAX, 100, ULLONG_MAX, 0}, /* strtoull */
        {"lazy", NULL, 2, 300000, 100, 300000, 1},
        {NULL, "1x", 2, 300000, 100, 300000, 1},
        {NULL, "", 2, 300000, 100, 300000, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bkm_aff_gomp_wait_t w;
        bkm_aff_gomp_plan_t *p =
            plan(hsw, (bkm_aff_gomp_env_t){.omp_wait_policy = cases[i].policy, .gomp_spincount = cases[i].spin},
                 cases[i].threads);
        bkm_aff_gomp_plan_wait(p, &w);
        ck_assert_msg(w.spin_count == cases[i].count && w.throttled_count == cases[i].throttled &&
                          w.effective == cases[i].effective,
                      "case %zu: spin %llu throttled %llu effective %llu", i, w.spin_count, w.throttled_count,
                      w.effective);
        ck_assert_int_eq(bkm_aff_gomp_plan_n_messages(p), cases[i].n_msg);
        bkm_aff_gomp_plan_free(p);
    }
}
END_TEST

/* ---- Key, strict checks, notes, JSON ------------------------------------------------------ */

START_TEST(key_dedups_identical_plans)
{
    bkm_aff_gomp_plan_t *a = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "threads", .omp_proc_bind = "close"}, 4);
    bkm_aff_gomp_plan_t *b = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "{0},{32},{1},{33}"}, 4);
    bkm_aff_gomp_plan_t *c = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread"}, 32);
    bkm_aff_gomp_plan_t *d = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "close"}, 32);
    bkm_aff_gomp_plan_t *e = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "close"}, 4);
    bkm_aff_gomp_plan_t *f =
        plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "close", .gomp_spincount = "0"}, 4);
    ck_assert(bkm_aff_gomp_plan_equal(a, b));  /* same masks, different place lists */
    ck_assert(bkm_aff_gomp_plan_equal(c, d));  /* spread with T = P: the same masks as close */
    ck_assert(!bkm_aff_gomp_plan_equal(a, e)); /* threads vs cores */
    ck_assert(!bkm_aff_gomp_plan_equal(e, f)); /* the spin count */
    bkm_aff_gomp_plan_free(a);
    bkm_aff_gomp_plan_free(b);
    bkm_aff_gomp_plan_free(c);
    bkm_aff_gomp_plan_free(d);
    bkm_aff_gomp_plan_free(e);
    bkm_aff_gomp_plan_free(f);
}
END_TEST

/* Strict: BKM_EINVAL naming the variable and the value. */
static void strict_rejects(bkm_topo_t *t, bkm_aff_gomp_env_t env, const char *part1, const char *part2)
{
    bkm_aff_gomp_opts_t o = {0};
    bkm_aff_gomp_plan_t *p = NULL;
    bkm_err_t err = {0};
    o.strict = 1;
    o.num_threads[0] = 2;
    ck_assert_int_eq(bkm_aff_gomp_plan_create(t, &env, &o, &p, &err), BKM_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err.msg, part1) && strstr(err.msg, part2), "message '%s' lacks '%s' or '%s'", err.msg, part1,
                  part2);
}

START_TEST(strict_names_the_value)
{
    bkm_topo_t *t = masked("haswell", "0-3,32-35");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.omp_places = "{0-3}"}, "OMP_PLACES='{0-3}'", "'-' ranges");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.omp_places = "{64}"}, "OMP_PLACES='{64}'", "CPU 64 is out of range");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.omp_proc_bind = "true,close"}, "OMP_PROC_BIND='true,close'",
                   "cannot start with true");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = "0 100"}, "GOMP_CPU_AFFINITY='0 100'",
                   "drops it silently");
    strict_rejects(t, (bkm_aff_gomp_env_t){.gomp_cpu_affinity = "0 8"}, "GOMP_CPU_AFFINITY='0 8'",
                   "Thread creation failed");
    strict_rejects(t, (bkm_aff_gomp_env_t){.omp_places = "{8:4},{0}"}, "OMP_PLACES='{8:4},{0}'",
                   "Number of places reduced");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.gomp_spincount = "5 kk"}, "GOMP_SPINCOUNT='5 kk'", "\"k\"");
    strict_rejects(hsw, (bkm_aff_gomp_env_t){.omp_wait_policy = "lazy"}, "OMP_WAIT_POLICY='lazy'", "active or passive");
    bkm_topo_close(t);
}
END_TEST

START_TEST(env_check_syntax_only)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_gomp_env_check(&(bkm_aff_gomp_env_t){.omp_places = "{0:4}:2:4",
                                                                  .omp_proc_bind = "spread,close",
                                                                  .gomp_cpu_affinity = "0-7:2",
                                                                  .omp_num_threads = "4,2",
                                                                  .omp_wait_policy = "passive",
                                                                  .gomp_spincount = "10k"},
                                            &err),
                     BKM_OK);
    ck_assert_int_eq(bkm_aff_gomp_env_check(&(bkm_aff_gomp_env_t){.omp_places = "cores(x)"}, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "OMP_PLACES='cores(x)'"));
    ck_assert_int_eq(bkm_aff_gomp_env_check(&(bkm_aff_gomp_env_t){.omp_nested = "yes"}, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "OMP_NESTED='yes'"));
    ck_assert_int_eq(bkm_aff_gomp_env_check(&(bkm_aff_gomp_env_t){.omp_max_active_levels = "-1"}, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_gomp_env_check(&(bkm_aff_gomp_env_t){.gomp_cpu_affinity = "1-0"}, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "GOMP_CPU_AFFINITY='1-0'"));
}
END_TEST

START_TEST(kmp_variables_are_ignored)
{
    const char *foreign[] = {"KMP_AFFINITY=granularity=fine,compact,1,0", "KMP_BLOCKTIME=1", NULL};
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.foreign = foreign}, 2);
    ck_assert(has_note(p, "KMP_AFFINITY=granularity=fine,compact,1,0 is ignored: GNU libgomp reads no KMP_*"));
    ck_assert(has_note(p, "KMP_BLOCKTIME=1 is ignored"));
    ck_assert_int_eq(bkm_aff_gomp_plan_bound(p), 0);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

START_TEST(bad_options)
{
    bkm_aff_gomp_opts_t o = {0};
    bkm_aff_gomp_plan_t *p = NULL;
    bkm_err_t err = {0};
    o.n_levels = BKM_AFF_GOMP_MAX_LEVELS + 1;
    ck_assert_int_eq(bkm_aff_gomp_plan_create(hsw, NULL, &o, &p, &err), BKM_EINVAL);
    o.n_levels = 1;
    o.num_threads[0] = BKM_AFF_GOMP_MAX_TEAM + 1;
    ck_assert_int_eq(bkm_aff_gomp_plan_create(hsw, NULL, &o, &p, &err), BKM_EINVAL);
    o.num_threads[0] = 0;
    ck_assert_int_eq(bkm_aff_gomp_plan_create(hsw, &(bkm_aff_gomp_env_t){.omp_num_threads = "5000"}, &o, &p, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "5000"));
    ck_assert_ptr_null(p);
}
END_TEST

START_TEST(json_and_text)
{
    bkm_aff_gomp_plan_t *p = plan(hsw, (bkm_aff_gomp_env_t){.omp_places = "cores", .omp_proc_bind = "spread"}, 2);
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_aff_gomp_plan_to_json(p, hsw, &w, NULL), BKM_OK);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, NULL), BKM_OK);
    ck_assert_str_eq(bkm_json_get_str(j, "runtime"), "libgomp");
    ck_assert_str_eq(bkm_json_get_str(j, "places_source"), "OMP_PLACES");
    ck_assert_int_eq((int)bkm_json_get_num(j, "threads", 0), 2);
    const bkm_json_t *t1 = bkm_json_at(bkm_json_get(j, "plan"), 1);
    ck_assert_int_eq((int)bkm_json_get_num(t1, "place", -1), 16);
    ck_assert_int_eq((int)bkm_json_at(bkm_json_get(t1, "sockets"), 0)->num, 1);
    ck_assert_int_eq((int)bkm_json_get(t1, "partition")->n_children, 16);
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_get(j, "wait"), "spin_count", 0), 300000);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_aff_gomp_plan_explain(p, hsw, &b, NULL), BKM_OK);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "places from:    OMP_PLACES (32 places)"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "initial thread: pinned to 0,32"));
    bkm_buf_free(&b);
    bkm_aff_gomp_plan_free(p);
}
END_TEST

static Suite *gomp_suite(void)
{
    Suite *s = suite_create("gomp_plan");
    TCase *tc = tcase_create("examples");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, hsw_spread_12_on_cores);
    tcase_add_test(tc, hsw_close_40_on_cores_round_robin);
    tcase_add_test(tc, close_more_threads_than_places);
    tcase_add_test(tc, knl_spread_64_on_68_cores);
    tcase_add_test(tc, gomp_cpu_affinity_short_list_does_not_restart);
    suite_add_tcase(s, tc);
    tc = tcase_create("places");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, threads_follow_the_sibling_lists);
    tcase_add_test(tc, cores_sockets_numa);
    tcase_add_test(tc, ll_caches_is_one_place_in_12_2);
    tcase_add_test(tc, a_kind_the_topology_lacks);
    tcase_add_test(tc, restricted_mask);
    tcase_add_test(tc, explicit_lists);
    tcase_add_test(tc, rejected_places);
    tcase_add_test(tc, places_outside_the_mask);
    suite_add_tcase(s, tc);
    tc = tcase_create("binding");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, places_alone_bind_true);
    tcase_add_test(tc, bind_alone_threads);
    tcase_add_test(tc, bind_false_ignores_places);
    tcase_add_test(tc, omp_places_beats_gomp_cpu_affinity);
    tcase_add_test(tc, proc_bind_values);
    tcase_add_test(tc, primary_keeps_every_thread_on_place_0);
    tcase_add_test(tc, spread_more_threads_than_places);
    tcase_add_test(tc, gomp_cpu_affinity_grammar);
    tcase_add_test(tc, gomp_cpu_outside_the_mask);
    tcase_add_test(tc, constructor_pins_the_initial_thread);
    tcase_add_test(tc, nested_spread_close);
    tcase_add_test(tc, nested_close_spread_subpartition_of_the_primary);
    tcase_add_test(tc, nesting_needs_active_levels);
    tcase_add_test(tc, omp_num_threads_list);
    suite_add_tcase(s, tc);
    tc = tcase_create("plan");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, wait_policy_and_spincount);
    tcase_add_test(tc, key_dedups_identical_plans);
    tcase_add_test(tc, strict_names_the_value);
    tcase_add_test(tc, env_check_syntax_only);
    tcase_add_test(tc, kmp_variables_are_ignored);
    tcase_add_test(tc, bad_options);
    tcase_add_test(tc, json_and_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gomp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
