/* SPDX-License-Identifier: MIT */
/* Helpers shared by the `tune` commands: database path, affinity environment, option values. */
#include "cli_common.h"

#include <stdio.h>
#include <stdlib.h>

#include "bkm/results.h"

const char *bkm_cli_db_path(const char *opt)
{
    const char *env = getenv("BKM_DB");
    if (opt != NULL)
        return opt;
    return env && env[0] ? env : BKM_DB_DEFAULT_PATH;
}

void bkm_cli_aff_env_read(bkm_aff_env_t *env)
{
    env->kmp_affinity = getenv("KMP_AFFINITY");
    env->kmp_hw_subset = getenv("KMP_HW_SUBSET");
    env->kmp_place_threads = getenv("KMP_PLACE_THREADS");
    env->kmp_blocktime = getenv("KMP_BLOCKTIME");
    env->omp_places = getenv("OMP_PLACES");
    env->omp_proc_bind = getenv("OMP_PROC_BIND");
    env->gomp_cpu_affinity = getenv("GOMP_CPU_AFFINITY");
    env->omp_wait_policy = getenv("OMP_WAIT_POLICY");
}

int bkm_cli_need_value(const char *cmd, int i, int argc, const char *opt)
{
    if (i + 1 >= argc) {
        fprintf(stderr, "tune %s: option '%s' needs a value\n", cmd, opt);
        return 0;
    }
    return 1;
}
