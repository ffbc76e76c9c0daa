/* SPDX-License-Identifier: MIT */
/* Unit tests of the topology and node-profile API: Cori Haswell/KNL and Perlmutter CPU synthetic
 * profiles (counts, OS numbering, NUMA nodes, L3 groups, batch rules), hwloc XML
 * (a round trip through hwloc's exporter and the checked-in data/knl-flat.xml), this host,
 * restriction, profile files, and bad input.
 *
 * data/knl-flat.xml is Cori KNL 7250 in quad,flat mode (NUMA 0 = 96 GiB DDR, NUMA 1 = 16 GiB
 * MCDRAM), generated with
 *   lstopo --input "pack:1 [numa(memory=96GiB)] [numa(memory=16GiB)] l2:34(size=1MiB) \
 *                   l1d:2(size=32KiB) core:1 pu:4(indexes=0,68,136,204,1,69,...)" --of xml
 * with subtype="DRAM" / subtype="MCDRAM" added to the two NUMANode objects by hand. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>

#include "bkm_check.h"
#include "bkm/affinity.h"

#define KNL_FLAT_XML BKM_SOURCE_DIR "/tests/affinity/data/knl-flat.xml"

static bkm_topo_t *open_builtin(const char *name)
{
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    bkm_topo_t *t = NULL;
    ck_assert_int_eq(bkm_profile_builtin(name, &p, &err), BKM_OK);
    ck_assert_msg(bkm_topo_open_profile(&t, &p, &err) == BKM_OK, "%s: %s", name, err.msg);
    return t;
}

static const bkm_topo_pu_t *find_pu(const bkm_topo_t *t, int os)
{
    int n = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(t, &n);
    for (int i = 0; i < n; i++)
        if (pu[i].os == os)
            return &pu[i];
    ck_abort_msg("PU %d not found", os);
    return NULL;
}

/* Write @p text to a fresh temp file; returns its path (static buffer owned by the caller). */
static void write_temp(char *path, size_t cap, const char *suffix, const char *text)
{
    snprintf(path, cap, "/tmp/bkm_test_topo_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* ---------------------------------------------------------------------------------------- */
START_TEST(haswell_counts_and_numbering)
{
    bkm_topo_t *t = open_builtin("haswell");
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.packages, 2);
    ck_assert_int_eq(s.cores, 32);
    ck_assert_int_eq(s.pus, 64);
    ck_assert_int_eq(s.pus_per_core_max, 2);
    ck_assert_int_eq(s.tiles, 0);
    ck_assert_int_eq(s.numa_nodes, 2);
    ck_assert_int_eq(s.allowed_pus, 64);
    ck_assert_str_eq(s.isa, "avx2");
    ck_assert_str_eq(s.source, "profile");
    /* PU 32 is core 0's second hardware thread; PU 16 is core 16 on package 1. */
    const bkm_topo_pu_t *p32 = find_pu(t, 32), *p0 = find_pu(t, 0), *p16 = find_pu(t, 16), *p48 = find_pu(t, 48);
    ck_assert_int_eq(p0->core, 0);
    ck_assert_int_eq(p0->smt, 0);
    ck_assert_int_eq(p32->core, 0);
    ck_assert_int_eq(p32->smt, 1);
    ck_assert_int_eq(p32->pkg, 0);
    ck_assert_int_eq(p16->core, 16);
    ck_assert_int_eq(p16->pkg, 1);
    ck_assert_int_eq(p16->smt, 0);
    ck_assert_int_eq(p48->core, 16);
    ck_assert_int_eq(p48->smt, 1);
    ck_assert_int_eq(p48->numa, 1);
    ck_assert_int_eq(p32->tile, -1);
    /* Table order: (pkg, tile, core, smt). */
    int n = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(t, &n);
    ck_assert_int_eq(n, 64);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(pu[i].core, i / 2);
        ck_assert_int_eq(pu[i].os, i / 2 + 32 * (i % 2));
    }
    /* L3 per socket, 32 PUs each. */
    int nc = 0;
    const bkm_topo_cache_t *c = bkm_topo_caches(t, &nc);
    int found_l3 = 0;
    for (int i = 0; i < nc; i++)
        if (c[i].level == 3) {
            found_l3 = 1;
            ck_assert_int_eq(c[i].count, 2);
            ck_assert_int_eq(c[i].pus_per_cache, 32);
        }
    ck_assert(found_l3);
    /* The sizes the kernels' blocking takes: one instance of each level, as the table has them. */
    {
        int64_t l1d = -1, l2 = -1, l3 = -1;
        bkm_topo_cache_sizes(t, &l1d, &l2, &l3);
        for (int i = 0; i < nc; i++) {
            if (c[i].level == 1 && c[i].type != 'i')
                ck_assert_int_eq(l1d, (int64_t)c[i].size_bytes);
            if (c[i].level == 2)
                ck_assert_int_eq(l2, (int64_t)c[i].size_bytes);
            if (c[i].level == 3)
                ck_assert_int_eq(l3, (int64_t)c[i].size_bytes);
        }
        ck_assert_int_gt(l3, 0);
        bkm_topo_cache_sizes(NULL, &l1d, &l2, NULL); /* no topology: zeros (the kernels' defaults) */
        ck_assert_int_eq(l1d, 0);
        ck_assert_int_eq(l2, 0);
    }
    bkm_topo_close(t);
}
END_TEST

START_TEST(knl_counts_tiles_and_numbering)
{
    bkm_topo_t *t = open_builtin("knl");
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.packages, 1);
    ck_assert_int_eq(s.cores, 68);
    ck_assert_int_eq(s.pus, 272);
    ck_assert_int_eq(s.tiles, 34);
    ck_assert_int_eq(s.pus_per_core_max, 4);
    ck_assert_str_eq(s.isa, "avx512");
    for (int k = 0; k < 4; k++) {
        const bkm_topo_pu_t *p = find_pu(t, 68 * k);
        ck_assert_int_eq(p->core, 0);
        ck_assert_int_eq(p->smt, k);
        ck_assert_int_eq(p->tile, 0);
    }
    ck_assert_int_eq(find_pu(t, 1)->tile, 0);
    ck_assert_int_eq(find_pu(t, 2)->tile, 1);
    ck_assert_int_eq(find_pu(t, 67 + 68)->core, 67);
    ck_assert_int_eq(find_pu(t, 67 + 68)->tile, 33);
    ck_assert_int_eq(find_pu(t, 67 + 68)->smt, 1);
    bkm_topo_close(t);
}
END_TEST

START_TEST(perlmutter_counts_numa_and_l3)
{
    bkm_topo_t *t = open_builtin("perlmutter-cpu");
    bkm_topo_summary_t s;
    bkm_cpuset_t g[20];
    bkm_buf_t b;
    bkm_err_t err = {0};
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.packages, 2);
    ck_assert_int_eq(s.cores, 128);
    ck_assert_int_eq(s.pus, 256);
    ck_assert_int_eq(s.pus_per_core_max, 2);
    ck_assert_int_eq(s.numa_nodes, 8);
    ck_assert_int_eq(s.tiles, 0); /* L2 per core: no tiles */
    ck_assert_str_eq(s.isa, "avx2");
    /* socket 0 = cores 0-63, socket 1 = 64-127; the sibling of CPU N is N+128 */
    for (int n = 0; n < 128; n++) {
        const bkm_topo_pu_t *a = find_pu(t, n), *h = find_pu(t, n + 128);
        ck_assert_int_eq(a->core, n);
        ck_assert_int_eq(h->core, n);
        ck_assert_int_eq(a->smt, 0);
        ck_assert_int_eq(h->smt, 1);
        ck_assert_int_eq(a->pkg, n / 64);
        ck_assert_int_eq(a->numa, n / 16);   /* 4 NUMA nodes per socket, 16 cores each */
        ck_assert_int_eq(h->numa, n / 16);
        ck_assert_int_eq(a->llc, n / 8);     /* one L3 per 8 cores (CCX) */
        ck_assert_int_eq(h->llc, n / 8);
    }
    ck_assert_int_eq(bkm_topo_smt_stride(t), 128);
    /* numactl -H: node 0 = CPUs 0-15,128-143 */
    int nm = 0;
    const bkm_topo_numa_t *numa = bkm_topo_numas(t, &nm);
    ck_assert_int_eq(nm, 8);
    bkm_buf_init(&b);
    bkm_cpuset_format(&numa[0].cpus, &b);
    ck_assert_str_eq(bkm_buf_str(&b), "0-15,128-143");
    bkm_buf_free(&b);
    ck_assert_int_eq((int)(numa[0].memory_bytes >> 30), 64);
    /* 16 L3 groups of 8 cores (16 PUs), 32 MiB each */
    ck_assert_int_eq(bkm_topo_groups(t, BKM_TOPO_GROUP_LLC, g, 20), 16);
    for (int i = 0; i < 16; i++) {
        ck_assert_int_eq(bkm_cpuset_count(&g[i]), 16);
        ck_assert_int_eq(bkm_cpuset_first(&g[i]), 8 * i);
        ck_assert(bkm_cpuset_isset(&g[i], 8 * i + 7 + 128));
    }
    int nc = 0, l3 = 0;
    const bkm_topo_cache_t *c = bkm_topo_caches(t, &nc);
    for (int i = 0; i < nc; i++)
        if (c[i].level == 3) {
            l3 = 1;
            ck_assert_int_eq(c[i].count, 16);
            ck_assert_int_eq((int)(c[i].size_bytes >> 20), 32);
        }
    ck_assert(l3);
    ck_assert_int_eq(bkm_topo_groups(t, BKM_TOPO_GROUP_NUMA, g, 20), 8);
    /* the groups as explicit OMP_PLACES, in the replicated form */
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_group_places(t, BKM_TOPO_GROUP_LLC, &b, &err), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), "{0:8,128:8}:16:8");
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_group_places(t, BKM_TOPO_GROUP_NUMA, &b, &err), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), "{0:16,128:16}:8:16");
    bkm_buf_free(&b);
    /* a rank of 8 ranks per node (-c 32, --cpu-bind=cores): one NUMA node, two L3 groups */
    bkm_cpuset_t m;
    ck_assert_int_eq(bkm_cpuset_parse(&m, "16-31,144-159", NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &m, NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_groups(t, BKM_TOPO_GROUP_LLC, g, 20), 2);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_group_places(t, BKM_TOPO_GROUP_LLC, &b, &err), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), "{16:8,144:8}:2:8");
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_group_places(t, BKM_TOPO_GROUP_NUMA, &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1 NUMA node"));
    bkm_buf_free(&b);
    /* not a translate of the first group: the list form */
    ck_assert_int_eq(bkm_cpuset_parse(&m, "0-7,128-135,9-15,136-143", NULL), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &m, NULL), BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_group_places(t, BKM_TOPO_GROUP_LLC, &b, &err), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), "{0:8,128:8},{9:7,136:8}");
    bkm_buf_free(&b);
    bkm_topo_close(t);
    /* Cori Haswell: siblings at +32, one L3 per socket */
    t = open_builtin("haswell");
    ck_assert_int_eq(bkm_topo_smt_stride(t), 32);
    ck_assert_int_eq(bkm_topo_groups(t, BKM_TOPO_GROUP_LLC, NULL, 0), 2);
    bkm_topo_close(t);
}
END_TEST

START_TEST(synthetic_without_cores_or_packages)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pu:3", &err), BKM_OK);
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.pus, 3);
    ck_assert_int_eq(s.cores, 3);
    ck_assert_int_eq(s.packages, 1);
    ck_assert_str_eq(s.source, "synthetic");
    bkm_topo_close(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
START_TEST(xml_round_trip)
{
    const char *desc = "pack:2 l2:2 core:4 pu:2(indexes=0,16,1,17,2,18,3,19,4,20,5,21,6,22,7,23,8,24,9,25,"
                       "10,26,11,27,12,28,13,29,14,30,15,31)";
    hwloc_topology_t h;
    ck_assert_int_eq(hwloc_topology_init(&h), 0);
    ck_assert_int_eq(hwloc_topology_set_synthetic(h, desc), 0);
    ck_assert_int_eq(hwloc_topology_load(h), 0);
    char path[64];
    write_temp(path, sizeof(path), ".xml", "");
    ck_assert_int_eq(hwloc_topology_export_xml(h, path, 0), 0);
    hwloc_topology_destroy(h);

    bkm_topo_t *a = NULL, *b = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_synthetic(&a, desc, &err), BKM_OK);
    ck_assert_msg(bkm_topo_open_xml(&b, path, &err) == BKM_OK, "%s", err.msg);
    unlink(path);
    int na = 0, nb = 0;
    const bkm_topo_pu_t *pa = bkm_topo_pus(a, &na), *pb = bkm_topo_pus(b, &nb);
    ck_assert_int_eq(na, 32);
    ck_assert_int_eq(na, nb);
    ck_assert_mem_eq(pa, pb, sizeof(*pa) * (size_t)na);
    bkm_topo_summary_t s;
    bkm_topo_summary(b, &s);
    ck_assert_str_eq(s.source, "xml");
    ck_assert_int_eq(s.tiles, 4);
    ck_assert_int_eq(find_pu(b, 17)->core, 1);
    ck_assert_int_eq(find_pu(b, 17)->smt, 1);
    bkm_topo_close(a);
    bkm_topo_close(b);
}
END_TEST

START_TEST(xml_knl_flat_mcdram)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_topo_open_xml(&t, KNL_FLAT_XML, &err) == BKM_OK, "%s", err.msg);
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.cores, 68);
    ck_assert_int_eq(s.tiles, 34);
    ck_assert_int_eq(s.numa_nodes, 2);
    int nm = 0;
    const bkm_topo_numa_t *m = bkm_topo_numas(t, &nm);
    ck_assert_int_eq(nm, 2);
    ck_assert_int_eq(m[1].os, 1);
    ck_assert_str_eq(m[1].subtype, "MCDRAM");
    ck_assert_str_eq(m[0].subtype, "DRAM");
    ck_assert_uint_eq(m[1].memory_bytes, 16ull << 30);
    ck_assert_int_eq(bkm_cpuset_count(&m[1].cpus), 272);
    ck_assert_int_eq(find_pu(t, 136)->smt, 2);
    bkm_topo_close(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
START_TEST(host_matches_os_view)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_topo_open_host(&t, &err) == BKM_OK, "%s", err.msg);
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    cpu_set_t cs;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(cs), &cs), 0);
    ck_assert_int_eq(s.pus, (int)sysconf(_SC_NPROCESSORS_ONLN));
    ck_assert_int_eq(s.allowed_pus, CPU_COUNT(&cs));
    ck_assert_str_eq(s.source, "host");
    ck_assert(strcmp(s.isa, "avx512") == 0 || strcmp(s.isa, "avx2") == 0 || strcmp(s.isa, "generic") == 0);
    bkm_cpuset_t allowed;
    bkm_topo_allowed(t, &allowed);
    for (int c = 0; c < CPU_SETSIZE; c++)
        ck_assert_int_eq(bkm_cpuset_isset(&allowed, c), CPU_ISSET(c, &cs) ? 1 : 0);
    bkm_topo_close(t);
}
END_TEST

START_TEST(restrict_emulates_initial_mask)
{
    bkm_topo_t *t = open_builtin("haswell");
    bkm_err_t err = {0};
    bkm_cpuset_t mask, got;
    ck_assert_int_eq(bkm_cpuset_parse(&mask, "0-7,32-39", &err), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &mask, &err), BKM_OK);
    bkm_topo_allowed(t, &got);
    ck_assert(bkm_cpuset_equal(&mask, &got));
    bkm_topo_summary_t s;
    bkm_topo_summary(t, &s);
    ck_assert_int_eq(s.allowed_pus, 16);
    ck_assert_int_eq(find_pu(t, 40)->allowed, 0);
    ck_assert_int_eq(find_pu(t, 39)->allowed, 1);

    ck_assert_int_eq(bkm_cpuset_parse(&mask, "0,64", &err), BKM_OK);
    ck_assert_int_eq(bkm_topo_restrict(t, &mask, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "64"));
    bkm_cpuset_zero(&mask);
    ck_assert_int_eq(bkm_topo_restrict(t, &mask, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
    bkm_topo_close(t);
}
END_TEST

START_TEST(bad_inputs_are_named)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:2 foo:3", &err), BKM_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err.msg, "foo:3"));
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "", &err), BKM_EINVAL);
    /* hwloc ignores an indexes= list of the wrong length; we reject it. */
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:2 core:2 pu:2(indexes=0,1)", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "indexes"));
    /* Sizes beyond what a bkm_cpuset_t holds are refused before hwloc builds them. */
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:99999 core:99999 pu:99999", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "pack:99999"));
    /* hwloc reads counts with strtoul(..., 0): 0x100 is 256 there, 010 is 8. Only plain decimal
     * counts are taken (the one bkm checks is the one hwloc builds); refused at once, by name. */
    {
        static const char *const odd[] = {"pack:0x100 core:0x100 pu:1", "pack:010 core:1 pu:1", "pack:2 core:-1 pu:1",
                                           "pack:+2 pu:1", "pack:2 pu:1x", "pack:0 pu:1", "pack:2 pu:0X10"};
        for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
            uint64_t t0 = bkm_now_ns();
            ck_assert_msg(bkm_topo_open_synthetic(&t, odd[i], &err) == BKM_EINVAL, "'%s' accepted", odd[i]);
            ck_assert_msg(strstr(err.msg, "is not a plain decimal number") != NULL, "%s: %s", odd[i], err.msg);
            ck_assert_msg(bkm_now_ns() - t0 < 1000000000ull, "'%s' took over a second", odd[i]);
            ck_assert_ptr_null(t);
        }
        ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pack:2 core:10 pu:1", &err), BKM_OK);
        bkm_topo_close(t);
        t = NULL;
    }
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, "pu:4(indexes=0,1,2,99999)", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "99999"));
    ck_assert_int_eq(bkm_topo_open_xml(&t, "/nonexistent/topo.xml", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/topo.xml"));
    ck_assert_ptr_nonnull(strstr(err.msg, "No such file"));
    char path[64];
    write_temp(path, sizeof(path), ".xml", "<topology><object type=\"Bogus\"></topology>");
    ck_assert_int_eq(bkm_topo_open_xml(&t, path, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    unlink(path);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(json_has_counts_and_cores)
{
    bkm_topo_t *t = open_builtin("knl");
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_err_t err = {0};
    bkm_json_t *j = NULL;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_topo_to_json(t, &w, &err), BKM_OK);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq((int)bkm_json_get_num(j, "packages", -1), 1);
    ck_assert_int_eq((int)bkm_json_get_num(j, "cores", -1), 68);
    ck_assert_int_eq((int)bkm_json_get_num(j, "pus", -1), 272);
    ck_assert_int_eq((int)bkm_json_get_num(j, "tiles", -1), 34);
    ck_assert_int_eq((int)bkm_json_get_num(j, "smt", -1), 4);
    ck_assert_str_eq(bkm_json_get_str(j, "isa"), "avx512");
    const bkm_json_t *cores = bkm_json_get(j, "cores_list");
    ck_assert_ptr_nonnull(cores);
    ck_assert_uint_eq(cores->n_children, 68);
    const bkm_json_t *c3 = bkm_json_at(cores, 3);
    ck_assert_int_eq((int)bkm_json_get_num(c3, "tile", -9), 1);
    const bkm_json_t *pus = bkm_json_get(c3, "pus");
    ck_assert_uint_eq(pus->n_children, 4);
    ck_assert_int_eq((int)bkm_json_at(pus, 1)->num, 71);
    const bkm_json_t *numa = bkm_json_get(j, "numa");
    ck_assert_str_eq(bkm_json_get_str(bkm_json_at(numa, 0), "cpus"), "0-271");
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_topo_close(t);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
START_TEST(builtin_profiles)
{
    const char *const *names = bkm_profile_builtin_names();
    int n = 0;
    for (; names[n]; n++) {
        bkm_node_profile_t p;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_profile_builtin(names[n], &p, &err), BKM_OK);
        ck_assert_str_eq(p.name, names[n]);
        ck_assert_int_gt(p.n_threads, 0);
        ck_assert_int_gt(p.n_blocktime, 0);
    }
    ck_assert_int_eq(n, 4);
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_profile_builtin("knl", &p, &err), BKM_OK);
    ck_assert_str_eq(p.slurm_constraint, "knl,quad,cache");
    ck_assert_int_eq(p.threads[p.n_threads - 1], 272);
    ck_assert_ptr_nonnull(strstr(p.synthetic, "indexes=0,68,136,204,1,69,137,205,"));
    ck_assert_int_eq(bkm_profile_builtin("haswell", &p, &err), BKM_OK);
    ck_assert_str_eq(p.slurm_constraint, "haswell");
    ck_assert_int_eq(p.blocktime_ms[p.n_blocktime - 1], -1);
    ck_assert_int_eq(bkm_profile_builtin("skylake", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "skylake"));
    ck_assert_ptr_nonnull(strstr(err.msg, "perlmutter-cpu"));
    ck_assert_int_eq(bkm_profile_builtin("knl", &p, &err), BKM_OK);
    /* Cori's batch rules: NERSC's -c rule, -q regular, srun --mpi=pmi2, a Slurm that inherited -c */
    ck_assert_str_eq(p.batch.site, "NERSC");
    ck_assert_str_eq(p.batch.qos, "regular");
    ck_assert_int_eq(p.batch.c_rule, BKM_BATCH_C_NODE);
    ck_assert_str_eq(p.batch.cpu_bind, "auto");
    ck_assert_int_eq(p.batch.launcher, BKM_BATCH_LAUNCH_SRUN);
    ck_assert_str_eq(p.batch.mpi, "pmi2");
    ck_assert_int_eq(p.batch.srun_inherits_c, 1);
    ck_assert_str_eq(p.batch.prior, "OMP_PLACES=threads OMP_PROC_BIND=spread");
    /* Perlmutter's: -C cpu, Slurm 22.05+ (no inheritance), srun's default plugin cray_shasta */
    ck_assert_int_eq(bkm_profile_builtin("perlmutter-cpu", &p, &err), BKM_OK);
    ck_assert_str_eq(p.slurm_constraint, "cpu");
    ck_assert_str_eq(p.isa, "avx2");
    ck_assert_str_eq(p.batch.qos, "regular");
    ck_assert_str_eq(p.batch.mpi, "cray_shasta");
    ck_assert_int_eq(p.batch.srun_inherits_c, 0);
    ck_assert_int_eq(p.threads[0], 1);
    ck_assert_int_eq(p.threads[p.n_threads - 1], 256);
    ck_assert_ptr_nonnull(strstr(p.description, "docs.nersc.gov/systems/perlmutter/architecture"));
    ck_assert_ptr_nonnull(strstr(p.description, "docs.nersc.gov/jobs/affinity"));
    ck_assert_ptr_nonnull(strstr(p.synthetic, "indexes=0,128,1,129,2,130,"));
    {
        bkm_aff_env_t env;
        char store[256];
        ck_assert_int_eq(bkm_profile_prior_env(&p, &env, store, sizeof store, &err), BKM_OK);
        ck_assert_str_eq(env.omp_places, "threads");
        ck_assert_str_eq(env.omp_proc_bind, "spread");
        ck_assert_ptr_null(env.kmp_affinity);
    }
    /* this host: no site, no -q */
    ck_assert_int_eq(bkm_profile_builtin("auto", &p, &err), BKM_OK);
    ck_assert_str_eq(p.batch.qos, "");
    ck_assert_str_eq(p.batch.mpi, "pmi2");
    ck_assert_int_eq(bkm_profile_prior_env(&p, &(bkm_aff_env_t){0}, (char[8]){0}, 8, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "auto"));

}
END_TEST

START_TEST(profile_file_good)
{
    char path[64];
    write_temp(path, sizeof(path), ".prof",
               "# a 2-socket test node\n"
               "name = mini-2s\n"
               "description = two sockets, 4 cores, 2 HT\n"
               "synthetic = pack:2 core:2 pu:2(indexes=0,4,1,5,2,6,3,7)\n"
               "\n"
               "isa = avx2\n"
               "slurm_constraint = mini\n"
               "threads = 1, 2,4, 8\n"
               "blocktime = 0,200,infinite\n");
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_profile_load_file(path, &p, &err) == BKM_OK, "%s", err.msg);
    unlink(path);
    ck_assert_str_eq(p.name, "mini-2s");
    ck_assert_str_eq(p.isa, "avx2");
    ck_assert_str_eq(p.slurm_constraint, "mini");
    ck_assert_int_eq(p.n_threads, 4);
    ck_assert_int_eq(p.threads[3], 8);
    ck_assert_int_eq(p.n_blocktime, 3);
    ck_assert_int_eq(p.blocktime_ms[1], 200);
    ck_assert_int_eq(p.blocktime_ms[2], -1);
    bkm_topo_t *t = NULL;
    ck_assert_int_eq(bkm_topo_open_profile(&t, &p, &err), BKM_OK);
    ck_assert_int_eq(find_pu(t, 4)->core, 0);
    ck_assert_int_eq(find_pu(t, 4)->smt, 1);
    bkm_topo_close(t);

    /* An hwloc XML file is a profile too, named after the file. */
    ck_assert_msg(bkm_profile_load_file(KNL_FLAT_XML, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(p.name, "knl-flat");
    ck_assert_int_eq(p.threads[p.n_threads - 1], 272);

    /* xml = is relative to the profile file's folder (here /tmp). */
    write_temp(path, sizeof(path), ".prof", "name = flat\nxml = .." KNL_FLAT_XML "\nisa = avx512\n");
    ck_assert_msg(bkm_profile_load_file(path, &p, &err) == BKM_OK, "%s", err.msg);
    unlink(path);
    ck_assert_str_eq(p.name, "flat");
}
END_TEST

/* A site's profile file for an invented cluster: its own constraint, QOS, account, partition, -c
 * rule, binding, launcher, Slurm semantics and prior. */
START_TEST(profile_file_site_rules)
{
    char path[64];
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    write_temp(path, sizeof(path), ".prof",
               "name = tundra-cpu\n"
               "site = Tundra HPC centre\n"
               "synthetic = pack:2 core:4 pu:2\n"
               "constraint = milan&ib\n"
               "qos = normal\n"
               "account = proj01\n"
               "partition = batch\n"
               "cpus_per_task = cores\n"
               "cpu_bind = cores\n"
               "launcher = mpiexec\n"
               "mpi = default\n"
               "srun_inherits_c = yes\n"
               "prior = KMP_AFFINITY=granularity=fine,compact,1,0   KMP_BLOCKTIME=0\n"
               "prior_source = the centre's user guide\n");
    ck_assert_msg(bkm_profile_load_file(path, &p, &err) == BKM_OK, "%s", err.msg);
    unlink(path);
    ck_assert_str_eq(p.slurm_constraint, "milan&ib");
    ck_assert_str_eq(p.batch.site, "Tundra HPC centre");
    ck_assert_str_eq(p.batch.qos, "normal");
    ck_assert_str_eq(p.batch.account, "proj01");
    ck_assert_str_eq(p.batch.partition, "batch");
    ck_assert_int_eq(p.batch.c_rule, BKM_BATCH_C_CORES);
    ck_assert_str_eq(p.batch.cpu_bind, "cores");
    ck_assert_int_eq(p.batch.launcher, BKM_BATCH_LAUNCH_MPIEXEC);
    ck_assert_str_eq(p.batch.mpi, "");
    ck_assert_int_eq(p.batch.srun_inherits_c, 1);
    ck_assert_str_eq(p.batch.prior, "KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=0");
    ck_assert_str_eq(p.batch.prior_source, "the centre's user guide");
    /* a file that names no rules gets the defaults: no -q, the node rule, srun --mpi=pmi2 */
    write_temp(path, sizeof(path), ".prof", "name = plain\nsynthetic = pack:1 core:2 pu:1\nslurm_constraint = x\n");
    ck_assert_msg(bkm_profile_load_file(path, &p, &err) == BKM_OK, "%s", err.msg);
    unlink(path);
    ck_assert_str_eq(p.slurm_constraint, "x");
    ck_assert_str_eq(p.batch.qos, "");
    ck_assert_str_eq(p.batch.cpu_bind, "auto");
    ck_assert_str_eq(p.batch.mpi, "pmi2");
    ck_assert_int_eq(p.batch.launcher, BKM_BATCH_LAUNCH_SRUN);
}
END_TEST

static void expect_bad_profile(const char *text, const char *needle)
{
    char path[64];
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    write_temp(path, sizeof(path), ".prof", text);
    int rc = bkm_profile_load_file(path, &p, &err);
    unlink(path);
    ck_assert_msg(rc == BKM_EINVAL, "accepted: %s", text);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' does not name '%s'", err.msg, needle);
}

START_TEST(profile_file_bad)
{
    expect_bad_profile("name = x\nsynthetic = pu:2\ncolour = blue\n", "colour");
    expect_bad_profile("name = x\nsynthetic = pu:2\nthreads = 1,0\n", "'0'");
    expect_bad_profile("name = x\nsynthetic = pu:2\nthreads = 1,two\n", "two");
    expect_bad_profile("name = x\nsynthetic = pu:2\nblocktime = forever\n", "forever");
    expect_bad_profile("name = x\nsynthetic = pu:2\nisa = sse9\n", "sse9");
    expect_bad_profile("synthetic = pu:2\n", "name");
    expect_bad_profile("name = bad name!\nsynthetic = pu:2\n", "bad name!");
    expect_bad_profile("name = x\n", "synthetic");
    expect_bad_profile("name = x\nsynthetic = pu:2\nxml = a.xml\n", "exactly one");
    expect_bad_profile("name = x\nsynthetic = pack:2 widget:4\n", "widget:4");
    expect_bad_profile("name = x\nxml = /nonexistent.xml\n", "/nonexistent.xml");
    expect_bad_profile("just words\n", "just words");
    expect_bad_profile("name = x\nsynthetic = pu:2\nthreads = 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n", "too many");
    /* batch rules: every bad value names the line and the key */
    expect_bad_profile("name = x\nsynthetic = pu:2\nqos = a b\n", "line 3: bad qos 'a b'");
    expect_bad_profile("name = x\nsynthetic = pu:2\naccount = m1;rm\n", "line 3: bad account");
    expect_bad_profile("name = x\nsynthetic = pu:2\npartition = $(x)\n", "line 3: bad partition");
    expect_bad_profile("name = x\nsynthetic = pu:2\nconstraint = cpu'\n", "line 3: bad constraint");
    expect_bad_profile("name = x\nsynthetic = pu:2\ncpus_per_task = half\n", "line 3: bad cpus_per_task 'half'");
    expect_bad_profile("name = x\nsynthetic = pu:2\ncpu_bind = map_cpu\n", "line 3: bad cpu_bind 'map_cpu'");
    expect_bad_profile("name = x\nsynthetic = pu:2\nlauncher = aprun\n", "line 3: bad launcher 'aprun'");
    expect_bad_profile("name = x\nsynthetic = pu:2\nmpi = pmi 2\n", "line 3: bad mpi");
    expect_bad_profile("name = x\nsynthetic = pu:2\nsrun_inherits_c = maybe\n", "line 3: bad srun_inherits_c");
    expect_bad_profile("name = x\nsynthetic = pu:2\nprior = OMP_PLACES=bogus\n", "line 3: prior");
    expect_bad_profile("name = x\nsynthetic = pu:2\nprior = LD_PRELOAD=/x.so\n", "'LD_PRELOAD'");
    expect_bad_profile("name = x\nsynthetic = pu:2\nprior = KMP_AFFINITY=compact OMP_PROC_BIND=spread\n",
                       "cancel each other");
    expect_bad_profile("name = x\nsynthetic = pu:2\nprior = OMP_PLACES\n", "not NAME=value");
    expect_bad_profile("name = x\nsynthetic = pu:2\nqos = a\n# again\nqos = b\n", "line 5: key 'qos' is given "
                       "twice (first on line 3)");
    expect_bad_profile("name = x\nsynthetic = pu:2\nslurm_constraint = a\nconstraint = b\n", "given twice");
    expect_bad_profile("name = x\nsynthetic = pu:2\nlauncher = srun\nmpi=\n", "line 4: bad mpi ''");
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_profile_load_file("/tmp", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));
    ck_assert_int_eq(bkm_profile_load_file("/nonexistent/profile", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/profile"));
}
END_TEST

/* Files that are not regular files, or too large, are refused before anything is read (issue 7:
 * /dev/zero as --xml grew memory forever; a FIFO blocked open(2)). The tcase has a short timeout,
 * so a regression fails instead of hanging. */
START_TEST(files_not_regular_or_too_large)
{
    char dir[64], fifo[96], prof[96], big[96], text[256];
    bkm_topo_t *t = NULL;
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    FILE *f;
    snprintf(dir, sizeof(dir), "/tmp/bkm_test_topo_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo.xml", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);

    ck_assert_int_eq(bkm_topo_open_xml(&t, "/dev/zero", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'/dev/zero' is not a regular file (a character device)"));
    ck_assert_ptr_null(t);
    ck_assert_int_eq(bkm_topo_open_xml(&t, fifo, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "(a FIFO)"));
    ck_assert_int_eq(bkm_topo_open_xml(&t, dir, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "(a directory)"));
    ck_assert_int_eq(bkm_profile_load_file(fifo, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "node profile"));
    ck_assert_ptr_nonnull(strstr(err.msg, "(a FIFO)"));
    ck_assert_int_eq(bkm_profile_load_file("/dev/zero", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "/dev/zero"));

    /* a profile whose xml = line names the FIFO (relative to the profile's folder) */
    snprintf(prof, sizeof(prof), "%s/node.prof", dir);
    ck_assert_ptr_nonnull(f = fopen(prof, "w"));
    fputs("name = fifo\nxml = fifo.xml\n", f);
    fclose(f);
    ck_assert_int_eq(bkm_profile_load_file(prof, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, fifo));
    ck_assert_ptr_nonnull(strstr(err.msg, "(a FIFO)"));

    /* sizes: sparse files, so nothing large is written */
    snprintf(big, sizeof(big), "%s/big.xml", dir);
    ck_assert_ptr_nonnull(f = fopen(big, "w"));
    fclose(f);
    ck_assert_int_eq(truncate(big, (off_t)BKM_TOPO_XML_MAX_BYTES + 1), 0);
    ck_assert_int_eq(bkm_topo_open_xml(&t, big, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "limit of 64 MiB"));
    ck_assert_ptr_nonnull(f = fopen(prof, "w"));
    fputs("name = big\nsynthetic = pu:2\n", f);
    fclose(f);
    ck_assert_int_eq(truncate(prof, (off_t)BKM_PROFILE_MAX_BYTES + 1), 0);
    ck_assert_int_eq(bkm_profile_load_file(prof, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "limit of 1024 KiB"));
    /* ... and at the limit it is read: the rest of the file is NUL bytes, named as such */
    ck_assert_int_eq(truncate(prof, (off_t)BKM_PROFILE_MAX_BYTES), 0);
    ck_assert_int_eq(bkm_profile_load_file(prof, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "NUL byte"));
    ck_assert_int_eq(truncate(prof, 28), 0);   /* "name = big\nsynthetic = pu:2\n" */
    ck_assert_msg(bkm_profile_load_file(prof, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(p.name, "big");

    snprintf(text, sizeof(text), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(text), 0);
}
END_TEST

START_TEST(profile_matches_host)
{
    bkm_topo_t *host = NULL;
    bkm_err_t err = {0};
    bkm_node_profile_t p;
    ck_assert_int_eq(bkm_topo_open_host(&host, &err), BKM_OK);
    bkm_topo_summary_t s;
    bkm_topo_summary(host, &s);
    ck_assert_int_eq(bkm_profile_builtin("auto", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_profile_matches_host(&p, host), 1);
    ck_assert_int_eq(bkm_profile_builtin("knl", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_profile_matches_host(&p, host), s.pus == 272 && strcmp(s.isa, "avx512") == 0);
    /* A uniform host is matched by the synthetic profile of its own shape and ISA, not by
     * the same shape with another ISA. */
    int cpp = s.cores / s.packages, tpc = s.pus / s.cores;
    if (s.packages * cpp * tpc == s.pus) {
        memset(&p, 0, sizeof(p));
        snprintf(p.name, sizeof(p.name), "same");
        snprintf(p.synthetic, sizeof(p.synthetic), "pack:%d core:%d pu:%d", s.packages, cpp, tpc);
        snprintf(p.isa, sizeof(p.isa), "%s", s.isa);
        ck_assert_int_eq(bkm_profile_matches_host(&p, host), 1);
        snprintf(p.isa, sizeof(p.isa), "%s", strcmp(s.isa, "avx2") == 0 ? "avx512" : "avx2");
        ck_assert_int_eq(bkm_profile_matches_host(&p, host), 0);
    }
    bkm_topo_close(host);
}
END_TEST

static Suite *topo_suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("synthetic");
    tcase_add_test(tc, haswell_counts_and_numbering);
    tcase_add_test(tc, knl_counts_tiles_and_numbering);
    tcase_add_test(tc, perlmutter_counts_numa_and_l3);
    tcase_add_test(tc, synthetic_without_cores_or_packages);
    tcase_add_test(tc, restrict_emulates_initial_mask);
    tcase_add_test(tc, json_has_counts_and_cores);
    suite_add_tcase(s, tc);
    tc = tcase_create("xml");
    tcase_add_test(tc, xml_round_trip);
    tcase_add_test(tc, xml_knl_flat_mcdram);
    suite_add_tcase(s, tc);
    tc = tcase_create("host");
    tcase_add_test(tc, host_matches_os_view);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, bad_inputs_are_named);
    suite_add_tcase(s, tc);
    tc = tcase_create("profiles");
    tcase_add_test(tc, builtin_profiles);
    tcase_add_test(tc, profile_file_good);
    tcase_add_test(tc, profile_file_bad);
    tcase_add_test(tc, profile_file_site_rules);
    tcase_add_test(tc, profile_matches_host);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_test(tc, files_not_regular_or_too_large);
    tcase_set_timeout(tc, 10);
    suite_add_tcase(s, tc);
    return s;
}

/* debugging: CK_FORK=no CK_RUN_CASE=xml ./test_topo */
BKM_CHECK_MAIN(topo_suite)
