/* SPDX-License-Identifier: MIT */
/* `tune version`: the version and the compiled-in features, where this tune is and what it loads
 * (the team shim, the OpenMP runtime mapped in this process). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>

#include "bkm/affinity.h"
#include "cli_home.h"
#include "cli_opt.h"
#include "bkm_revision.h"

const char bkm_cli_version_summary[] = "print the version, OpenMP runtime and build features";

static const bkm_cli_cmd_spec_t version_cmd = {
    .name = "version",
    .usage = "tune version",
    .about = "Prints the bkm version, the git revision it was built from (stored with\n"
             "every sweep), the OpenMP version of the runtime this binary\n"
             "runs on (LLVM libomp), and the build options; then where this tune is\n"
             "(installed under a prefix, or a build tree), the team shim it preloads into\n"
             "a program it measures, and the OpenMP runtime(s) mapped in this process\n"
             "(from /proc/self/maps: exactly one, LLVM libomp, also behind oneDNN).",
    .more = "exit status: 0; 3 when this process maps no OpenMP runtime or more than one\n"
            "(e.g. GNU libgomp preloaded beside libomp), or /proc cannot be read.\n",
};

/* The runtimes mapped in this process, one line; 0 when exactly one is, else 3. */
static int runtimes_print(void)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    bkm_err_t err = {0};
    int ret = 0;
    bkm_aff_runtime_cfg_init(&cfg);
    bkm_aff_runtime_result_init(&r);
    if (bkm_aff_runtime_detect_pid(0, &cfg, &r, &err) < 0) {
        fprintf(stderr, "tune version: %s\n", err.msg);
        return 3;
    }
    printf("openmp runtimes mapped:");
    for (int i = 0; i < r.n_runtimes; i++)
        printf(" %s", r.obj[r.runtime[i]].path);
    printf("%s\n", r.n_runtimes == 0 ? " none" : "");
    if (r.n_runtimes != 1) {
        fprintf(stderr, "tune version: %d OpenMP runtimes are mapped in this process, 1 (LLVM libomp) expected\n",
                r.n_runtimes);
        ret = 3;
    }
    bkm_aff_runtime_result_free(&r);
    return ret;
}

int bkm_cli_version(int argc, char **argv)
{
    int ret;
    bkm_cli_home_t home;
    bkm_err_t err = {0};
    if (bkm_cli_opt_parse_cmd(&version_cmd, argc, argv, NULL, &ret))
        return ret;
    printf("tune %s\nrevision %s\nopenmp %d (LLVM libomp)\n", BKM_VERSION, BKM_BUILD_REVISION, _OPENMP);
#ifdef __SANITIZE_ADDRESS__
    printf("sanitizers: address,undefined\n");
#endif
    if (bkm_cli_home_self(&home, &err) < 0) {
        fprintf(stderr, "tune version: %s\n", err.msg);
        return 3;
    }
    if (home.installed)
        printf("executable %s (installed under %s)\n", home.exe, home.prefix[0] ? home.prefix : "/");
    else
        printf("executable %s (a build tree, not installed)\n", home.exe);
    printf("team shim %s%s\n", home.shim, access(home.shim, R_OK) == 0 ? "" : " (missing)");
    return runtimes_print();
}
