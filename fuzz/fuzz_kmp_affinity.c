/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the affinity settings parsers and the planner: the input bytes, cut at the
 * first NUL, are fed to every parser (KMP_AFFINITY, KMP_HW_SUBSET, OMP_PLACES, OMP_PROC_BIND,
 * GOMP_CPU_AFFINITY, KMP_BLOCKTIME) and, as each of those variables, to the planner on a small
 * synthetic topology. Any crash, leak, or ASan/UBSan report is a bug; parse errors are expected.
 *
 * Built with -fsanitize=fuzzer,address,undefined when -DBKM_FUZZ=ON (fuzz/CMakeLists.txt); the
 * same entry point is replayed over fuzz/corpus/ by fuzz_replay.c in the normal build. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bkm/affinity.h"

/* Synthetic machine of the planning step: 2 sockets x 3 cores x 2 threads, Cori-style numbering
 * (PU i+6 is the sibling of PU i), so OS and logical order differ. */
#define FUZZ_TOPO "pack:2 core:3 pu:2(indexes=0,6,1,7,2,8,3,9,4,10,5,11)"
#define FUZZ_MAX_INPUT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One planning run with @p env; the result is checked for internal consistency only. */
static void fuzz_plan(const bkm_topo_t *topo, const bkm_aff_env_t *env, int n_threads)
{
    bkm_aff_plan_t *plan = NULL;
    bkm_err_t err = {0};
    if (bkm_aff_plan_create(topo, env, n_threads, &plan, &err) == BKM_OK) {
        int n = bkm_aff_plan_threads(plan);
        for (int t = 0; t < n; t++)
            (void)bkm_cpuset_count(bkm_aff_plan_cpus(plan, t));
        bkm_buf_t out = {0};
        bkm_json_w_t w;
        bkm_json_w_init(&w, &out, 0);
        bkm_aff_plan_to_json(plan, topo, &w, &err);
        bkm_aff_plan_explain(plan, topo, &out, &err);
        bkm_buf_free(&out);
    }
    bkm_aff_plan_free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[FUZZ_MAX_INPUT + 1];
    char proclist[BKM_AFF_PROCLIST_MAX];
    bkm_err_t err = {0};
    bkm_topo_t *topo = NULL;
    if (size > FUZZ_MAX_INPUT)
        size = FUZZ_MAX_INPUT; /* environment values are short; longer inputs add nothing */
    memcpy(s, data, size);
    s[size] = '\0';

    bkm_aff_kmp_t kmp;
    bkm_aff_hw_subset_t hw;
    bkm_aff_places_t places;
    bkm_aff_proc_bind_t bind;
    int ms = 0;
    (void)bkm_aff_kmp_parse(s, &kmp, &err);
    (void)bkm_aff_hw_subset_parse(s, &hw, &err);
    (void)bkm_aff_places_parse(s, &places, &err);
    (void)bkm_aff_proc_bind_parse(s, &bind, &err);
    (void)bkm_aff_gomp_parse(s, proclist, sizeof(proclist), &err);
    (void)bkm_aff_blocktime_parse(s, &ms, &err);

    /* The topology is opened per input: no state survives between inputs. */
    if (bkm_topo_open_synthetic(&topo, FUZZ_TOPO, &err) != BKM_OK)
        return 0;
    int n_threads = 1 + (int)(size % 29); /* 1..29: fewer and more threads than the 12 PUs */
    const bkm_aff_env_t variants[] = {
        {.kmp_affinity = s},
        {.kmp_hw_subset = s, .kmp_affinity = "granularity=fine,compact"},
        {.omp_places = s, .omp_proc_bind = "spread"},
        {.omp_proc_bind = s, .omp_places = "cores"},
        {.gomp_cpu_affinity = s},
        {.kmp_blocktime = s, .omp_wait_policy = "active"},
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
        fuzz_plan(topo, &variants[i], n_threads);
    bkm_topo_close(topo);
    return 0;
}
