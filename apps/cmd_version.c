/* SPDX-License-Identifier: MIT */
/* `tune version`: the version and the compiled-in features and runtime in use. */
#include <stdio.h>
#include <string.h>
#include <omp.h>

#include "cli_opt.h"
#include "bkm_revision.h"

const char bkm_cli_version_summary[] = "print the version, OpenMP runtime and build features";

static const bkm_cli_cmd_spec_t version_cmd = {
    .name = "version",
    .usage = "tune version",
    .about = "Prints the bkm version, the git revision it was built from (stored with\n"
             "every sweep), the OpenMP version of the runtime this binary\n"
             "runs on (LLVM libomp), and the build options.",
};

int bkm_cli_version(int argc, char **argv)
{
    int ret;
    if (bkm_cli_opt_parse_cmd(&version_cmd, argc, argv, NULL, &ret))
        return ret;
    printf("tune %s\nrevision %s\nopenmp %d (LLVM libomp)\n", BKM_VERSION, BKM_BUILD_REVISION, _OPENMP);
#ifdef __SANITIZE_ADDRESS__
    printf("sanitizers: address,undefined\n");
#endif
    return 0;
}
