/* SPDX-License-Identifier: MIT */
/* Unit tests of issue 8: package/core hardware ids in the PU table (permuted, non-contiguous,
 * repeated across dies), the planner ordering by them as libomp does, the cpuinfo text bkm gives
 * libomp, the parser of libomp's verbose map, its comparison with hwloc, and the correction file. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/affinity.h"

static bkm_topo_t *synth(const char *desc)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_topo_open_synthetic(&t, desc, &err) == BKM_OK, "%s: %s", desc, err.msg);
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

/* The OS PU of omp thread @p k in a plan of @p n threads for KMP_AFFINITY @p kmp. */
static int plan_pu(const bkm_topo_t *t, const char *kmp, int n, int k)
{
    bkm_aff_env_t env = {.kmp_affinity = kmp};
    bkm_aff_plan_t *p = NULL;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_aff_plan_create(t, &env, n, &p, &err) == BKM_OK, "%s", err.msg);
    int os = bkm_cpuset_first(bkm_aff_plan_cpus(p, k));
    bkm_aff_plan_free(p);
    return os;
}

/* ---------------------------------------------------------------------------------------- */
START_TEST(hardware_ids_are_os_indexes)
{
    /* Package P#3 holds PUs 0-5, P#1 holds 6-11 (the 4-socket AMD case of the issue, smaller). */
    bkm_topo_t *t = synth("pack:2(indexes=3,1) core:3(indexes=5,0,9,7,2,4) pu:2");
    ck_assert_int_eq(find_pu(t, 0)->pkg, 0);
    ck_assert_int_eq(find_pu(t, 0)->pkg_id, 3);
    ck_assert_int_eq(find_pu(t, 0)->core_id, 5);
    ck_assert_int_eq(find_pu(t, 1)->core_id, 5);
    ck_assert_int_eq(find_pu(t, 2)->core_id, 0);
    ck_assert_int_eq(find_pu(t, 4)->core_id, 9);
    ck_assert_int_eq(find_pu(t, 6)->pkg_id, 1);
    ck_assert_int_eq(find_pu(t, 6)->core_id, 7);
    ck_assert_int_eq(find_pu(t, 11)->core_id, 4);
    bkm_topo_close(t);
}
END_TEST

START_TEST(core_ids_repeated_across_dies_become_die_major)
{
    /* Linux gives the cores of both dies the ids 4 and 1; libomp must not merge them. */
    bkm_topo_t *t = synth("pack:1 die:2 core:2(indexes=4,1,4,1) pu:1");
    ck_assert_int_eq(find_pu(t, 0)->core_id, 4);
    ck_assert_int_eq(find_pu(t, 1)->core_id, 1);
    ck_assert_int_eq(find_pu(t, 2)->core_id, 5 + 4);
    ck_assert_int_eq(find_pu(t, 3)->core_id, 5 + 1);
    /* libomp's order: die 0 (core 1, core 4), then die 1 (core 1, core 4). */
    ck_assert_int_eq(plan_pu(t, "granularity=fine,compact", 4, 0), 1);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,compact", 4, 1), 0);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,compact", 4, 2), 3);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,compact", 4, 3), 2);
    bkm_topo_close(t);
}
END_TEST

START_TEST(plan_orders_packages_and_cores_by_hardware_id)
{
    bkm_topo_t *t = synth("pack:2(indexes=3,1) core:3(indexes=5,0,9,7,2,4) pu:2");
    /* compact over threads: package id 1 first (PUs 6-11), its cores by id 2 (8,9), 4 (10,11), 7 (6,7). */
    static const int compact[] = {8, 9, 10, 11, 6, 7, 2, 3, 0, 1, 4, 5};
    for (int k = 0; k < 12; k++)
        ck_assert_int_eq(plan_pu(t, "granularity=fine,compact", 12, k), compact[k]);
    /* scatter: alternate packages (id 1 first), their cores in id order (2 then 4; 0 then 5). */
    ck_assert_int_eq(plan_pu(t, "granularity=fine,scatter", 4, 0), 8);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,scatter", 4, 1), 2);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,scatter", 4, 2), 10);
    ck_assert_int_eq(plan_pu(t, "granularity=fine,scatter", 4, 3), 0);
    bkm_topo_close(t);
}
END_TEST

START_TEST(cpuinfo_text_has_hardware_ids_in_os_order)
{
    bkm_topo_t *t = synth("pack:2(indexes=3,1) core:1(indexes=8,2) pu:2(indexes=0,2,1,3)");
    bkm_buf_t b;
    bkm_err_t err = {0};
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_topo_cpuinfo_write(t, &b, &err), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), "processor\t: 0\nphysical id\t: 3\ncore id\t\t: 8\n\n"
                                      "processor\t: 1\nphysical id\t: 1\ncore id\t\t: 2\n\n"
                                      "processor\t: 2\nphysical id\t: 3\ncore id\t\t: 8\n\n"
                                      "processor\t: 3\nphysical id\t: 1\ncore id\t\t: 2\n\n");
    bkm_buf_free(&b);
    bkm_topo_close(t);
}
END_TEST

/* What libomp 14 printed on the issue's VM. */
static const char issue_text[] =
    "OMP: Info #155: KMP_AFFINITY: Initial OS proc set respected: 0,1\n"
    "OMP: Info #216: KMP_AFFINITY: decoding legacy APIC ids.\n"
    "OMP: Info #157: KMP_AFFINITY: 2 available OS procs\n"
    "OMP: Info #191: KMP_AFFINITY: 1 socket x 1 core/socket x 2 threads/core (1 total cores)\n"
    "OMP: Info #218: KMP_AFFINITY: OS proc to physical thread map:\n"
    "OMP: Info #172: KMP_AFFINITY: OS proc 1 maps to socket 0 core 0 thread 6 \n"
    "OMP: Info #172: KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 95 \n"
    "OMP: Info #254: KMP_AFFINITY: pid 2178 tid 2178 thread 0 bound to OS proc set 1\n";

START_TEST(parse_the_issue_output)
{
    bkm_aff_libomp_view_t v;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_aff_libomp_view_parse(issue_text, &v, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(v.method, "decoding legacy APIC ids");
    ck_assert_str_eq(v.shape, "1 socket x 1 core/socket x 2 threads/core (1 total cores)");
    ck_assert_int_eq(v.n, 2);
    ck_assert_int_eq(v.proc[0].os, 1);
    ck_assert_int_eq(v.proc[0].thread, 6);
    ck_assert_int_eq(v.proc[1].os, 0);
    ck_assert_int_eq(v.proc[1].thread, 95);
    bkm_aff_libomp_view_free(&v);
    /* other layers between the ids, and the -1 libomp prints for an unset thread id */
    ck_assert_int_eq(bkm_aff_libomp_view_parse("OMP: Info #172: KMP_AFFINITY: OS proc 7 maps to socket 2 die 1 core 3 "
                                               "L2 cache 9 thread -1 \n",
                                               &v, &err),
                     BKM_OK);
    ck_assert_int_eq(v.n, 1);
    ck_assert_int_eq(v.proc[0].os, 7);
    ck_assert_int_eq(v.proc[0].socket, 2);
    ck_assert_int_eq(v.proc[0].core, 3);
    ck_assert_int_eq(v.proc[0].thread, -1);
    bkm_aff_libomp_view_free(&v);
}
END_TEST

START_TEST(parse_errors_are_named)
{
    bkm_aff_libomp_view_t v;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_libomp_view_parse("OMP: Info #155: KMP_AFFINITY: Initial OS proc set respected: 0,1\n", &v,
                                               &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "maps to"));
    ck_assert_ptr_null(v.proc);
    ck_assert_int_eq(bkm_aff_libomp_view_parse("OMP: Info #172: KMP_AFFINITY: OS proc 3 maps to socket 0 thread 0\n",
                                               &v, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "OS proc 3"));
    ck_assert_int_eq(
        bkm_aff_libomp_view_parse("OMP: Info #172: KMP_AFFINITY: OS proc 3 maps to socket 0 core 0 thread 0\n"
                                  "OMP: Info #172: KMP_AFFINITY: OS proc 3 maps to socket 0 core 1 thread 0\n",
                                  &v, &err),
        BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "twice"));
}
END_TEST

START_TEST(compare_finds_the_issue_and_accepts_agreement)
{
    bkm_topo_t *t = synth("pack:1 core:2 pu:1");
    bkm_aff_libomp_view_t v;
    bkm_buf_t why;
    bkm_err_t err = {0};
    bkm_buf_init(&why);
    ck_assert_int_eq(bkm_aff_libomp_view_parse(issue_text, &v, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_compare(t, &v, &why, &err), BKM_EVERIFY);
    ck_assert_str_eq(bkm_buf_str(&why), "libomp (decoding legacy APIC ids): 1 package x 1 core x 2 threads (1 cores), "
                                        "procs in the order 1,0; hwloc: 1 package x 2 cores x 1 thread (2 cores), "
                                        "order 0,1");
    bkm_aff_libomp_view_free(&v);
    /* same order but one core: still a disagreement (the partition differs) */
    ck_assert_int_eq(bkm_aff_libomp_view_parse("KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 0 core 0 thread 1\n",
                                               &v, &err),
                     BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_compare(t, &v, NULL, &err), BKM_EVERIFY);
    bkm_aff_libomp_view_free(&v);
    /* x2APIC ids of a healthy VM: agreement (ids need not be equal, only partition and order) */
    ck_assert_int_eq(bkm_aff_libomp_view_parse("KMP_AFFINITY: decoding x2APIC ids.\n"
                                               "KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 0 core 4 thread 0\n",
                                               &v, &err),
                     BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_compare(t, &v, NULL, &err), BKM_OK);
    bkm_aff_libomp_view_free(&v);
    /* a proc hwloc does not allow */
    ck_assert_int_eq(bkm_aff_libomp_view_parse("KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n", &v, &err),
                     BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_compare(t, &v, NULL, &err), BKM_EVERIFY);
    bkm_aff_libomp_view_free(&v);
    bkm_buf_free(&why);
    bkm_topo_close(t);
}
END_TEST

START_TEST(compare_uses_hardware_order)
{
    /* hwloc: package P#1 holds PUs 2,3; libomp lists it first: they agree. */
    bkm_topo_t *t = synth("pack:2(indexes=1,0) core:1 pu:2");
    bkm_aff_libomp_view_t v;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_libomp_view_parse("KMP_AFFINITY: OS proc 2 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 3 maps to socket 0 core 0 thread 1\n"
                                               "KMP_AFFINITY: OS proc 0 maps to socket 1 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 1 core 0 thread 1\n",
                                               &v, &err),
                     BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_compare(t, &v, NULL, &err), BKM_OK);
    bkm_aff_libomp_view_free(&v);
    bkm_topo_close(t);
}
END_TEST

START_TEST(fix_writes_a_file_only_when_needed)
{
    bkm_topo_t *t = synth("pack:1 core:2 pu:1");
    bkm_aff_libomp_view_t bad, good;
    bkm_aff_topo_fix_t fix;
    bkm_err_t err = {0};
    char dir[] = "/tmp/bkm_test_fix_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(bkm_aff_libomp_view_parse(issue_text, &bad, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_libomp_view_parse("KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 0 core 1 thread 0\n",
                                               &good, &err),
                     BKM_OK);
    /* auto + agreement: nothing */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &good, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_OK);
    ck_assert(!fix.applied && !fix.disagreed && fix.path[0] == '\0' && fix.env_method[0] == '\0');
    /* never + disagreement: noted, nothing written */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &bad, BKM_AFF_TOPO_FIX_NEVER, dir, &fix, &err), BKM_OK);
    ck_assert(!fix.applied && fix.disagreed && fix.path[0] == '\0');
    ck_assert_ptr_nonnull(strstr(fix.why, "order 1,0"));
    /* auto + disagreement: the file, the two variables; release removes it */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &bad, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_OK);
    ck_assert(fix.applied && fix.disagreed);
    ck_assert_str_eq(fix.env_method, "KMP_TOPOLOGY_METHOD=cpuinfo");
    ck_assert_ptr_eq(strstr(fix.env_file, "KMP_CPUINFO_FILE="), fix.env_file);
    ck_assert_str_eq(fix.env_file + strlen("KMP_CPUINFO_FILE="), fix.path);
    ck_assert_ptr_eq(strstr(fix.path, dir), fix.path);
    struct stat st;
    ck_assert_int_eq(stat(fix.path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    char text[256] = "";
    FILE *f = fopen(fix.path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_str_eq(text, "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\n"
                           "processor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n");
    char path[4096];
    snprintf(path, sizeof(path), "%s", fix.path);
    bkm_aff_topo_fix_release(&fix);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert(!fix.applied && fix.path[0] == '\0');
    /* always, even without a view */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, NULL, BKM_AFF_TOPO_FIX_ALWAYS, dir, &fix, &err), BKM_OK);
    ck_assert(fix.applied && !fix.disagreed);
    bkm_aff_topo_fix_release(&fix);
    /* a "directory" that is a regular file (ENOTDIR, even for root) is an I/O error naming the path */
    char notdir[4200];
    snprintf(notdir, sizeof(notdir), "%s/plainfile", dir);
    FILE *pf = fopen(notdir, "w");
    ck_assert_ptr_nonnull(pf);
    fclose(pf);
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &bad, BKM_AFF_TOPO_FIX_AUTO, notdir, &fix, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, notdir));
    ck_assert(!fix.applied && fix.path[0] == '\0');
    ck_assert_int_eq(unlink(notdir), 0);
    /* auto needs a view */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, NULL, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_EINVAL);
    bkm_aff_topo_fix_release(NULL);
    ck_assert_int_eq(rmdir(dir), 0); /* empty: nothing leaked */
    bkm_aff_libomp_view_free(&bad);
    bkm_aff_libomp_view_free(&good);
    bkm_topo_close(t);
}
END_TEST

START_TEST(fix_corrects_legacy_apic_views_on_vm_guests)
{
    /* The issue's VM on a good day: legacy APIC ids that happen to agree with hwloc. */
    bkm_topo_t *t = synth("pack:1 core:2 pu:1");
    bkm_aff_libomp_view_t v;
    bkm_aff_topo_fix_t fix;
    bkm_err_t err = {0};
    char dir[] = "/tmp/bkm_test_fix_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(bkm_aff_libomp_view_parse("OMP: Info #216: KMP_AFFINITY: decoding legacy APIC ids.\n"
                                               "KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 0 core 1 thread 0\n",
                                               &v, &err),
                     BKM_OK);
    ck_assert_int_eq(v.vm_guest, 0); /* a plain parse does not know */
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &v, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_OK);
    ck_assert(!fix.applied && !fix.unstable);
    v.vm_guest = 1;
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &v, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_OK);
    ck_assert(fix.applied && fix.unstable && !fix.disagreed);
    ck_assert_ptr_nonnull(strstr(fix.why, "legacy APIC ids"));
    bkm_aff_topo_fix_release(&fix);
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &v, BKM_AFF_TOPO_FIX_NEVER, dir, &fix, &err), BKM_OK);
    ck_assert(!fix.applied);
    bkm_aff_libomp_view_free(&v);
    /* x2APIC ids on a VM guest are the guest's own: nothing changes */
    ck_assert_int_eq(bkm_aff_libomp_view_parse("OMP: Info #216: KMP_AFFINITY: decoding x2APIC ids.\n"
                                               "KMP_AFFINITY: OS proc 0 maps to socket 0 core 0 thread 0\n"
                                               "KMP_AFFINITY: OS proc 1 maps to socket 0 core 1 thread 0\n",
                                               &v, &err),
                     BKM_OK);
    v.vm_guest = 1;
    ck_assert_int_eq(bkm_aff_topo_fix_prepare(t, &v, BKM_AFF_TOPO_FIX_AUTO, dir, &fix, &err), BKM_OK);
    ck_assert(!fix.applied && !fix.unstable);
    bkm_aff_libomp_view_free(&v);
    ck_assert_int_eq(rmdir(dir), 0);
    bkm_topo_close(t);
}
END_TEST

START_TEST(fix_collect_removes_files_of_dead_processes_only)
{
    char dir[] = "/tmp/bkm_test_collect_XXXXXX", path[4200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pid_t dead = fork();
    ck_assert_int_ge(dead, 0);
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    const char *names[3];
    char n_dead[64], n_live[64];
    snprintf(n_dead, sizeof(n_dead), "bkm-cpuinfo-%ld-Ab12Cd", (long)dead);
    snprintf(n_live, sizeof(n_live), "bkm-cpuinfo-%ld-Ef34Gh", (long)getpid());
    names[0] = n_dead, names[1] = n_live, names[2] = "bkm-cpuinfo-notapid";
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
    }
    ck_assert_int_eq(bkm_aff_topo_fix_collect(dir), 1);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        ck_assert_int_eq(access(path, F_OK) == 0, i != 0);
        unlink(path);
    }
    ck_assert_int_eq(bkm_aff_topo_fix_collect("/nonexistent-bkm-dir"), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(fix_modes_parse)
{
    bkm_aff_topo_fix_mode_t m;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_topo_fix_mode_parse("never", &m, &err), BKM_OK);
    ck_assert_int_eq(m, BKM_AFF_TOPO_FIX_NEVER);
    ck_assert_str_eq(bkm_aff_topo_fix_mode_name(m), "never");
    ck_assert_int_eq(bkm_aff_topo_fix_mode_parse("always", &m, &err), BKM_OK);
    ck_assert_int_eq(m, BKM_AFF_TOPO_FIX_ALWAYS);
    ck_assert_int_eq(bkm_aff_topo_fix_mode_parse("auto", &m, &err), BKM_OK);
    ck_assert_int_eq(m, BKM_AFF_TOPO_FIX_AUTO);
    ck_assert_int_eq(bkm_aff_topo_fix_mode_parse("sometimes", &m, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sometimes"));
}
END_TEST

static Suite *view_suite(void)
{
    Suite *s = suite_create("libomp_view");
    TCase *tc = tcase_create("ids");
    tcase_add_test(tc, hardware_ids_are_os_indexes);
    tcase_add_test(tc, core_ids_repeated_across_dies_become_die_major);
    tcase_add_test(tc, plan_orders_packages_and_cores_by_hardware_id);
    tcase_add_test(tc, cpuinfo_text_has_hardware_ids_in_os_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("view");
    tcase_add_test(tc, parse_the_issue_output);
    tcase_add_test(tc, parse_errors_are_named);
    tcase_add_test(tc, compare_finds_the_issue_and_accepts_agreement);
    tcase_add_test(tc, compare_uses_hardware_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("fix");
    tcase_add_test(tc, fix_writes_a_file_only_when_needed);
    tcase_add_test(tc, fix_corrects_legacy_apic_views_on_vm_guests);
    tcase_add_test(tc, fix_collect_removes_files_of_dead_processes_only);
    tcase_add_test(tc, fix_modes_parse);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(view_suite)
