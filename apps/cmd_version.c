/* SPDX-License-Identifier: MIT */
/* `tune version`: the version and the compiled-in features and runtime in use. */
#include <stdio.h>
#include <string.h>
#include <omp.h>

#include "bkm_revision.h"

const char bkm_cli_version_summary[] = "print the version, OpenMP runtime and build features";

int bkm_cli_version(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: tune version\n\nPrints the bkm version, the git revision it was built from (stored with\n"
               "every sweep), the OpenMP version of the runtime this binary\n"
               "runs on (LLVM libomp), and the build options.\n");
        return 0;
    }
    printf("tune %s\nrevision %s\nopenmp %d (LLVM libomp)\n", BKM_VERSION, BKM_BUILD_REVISION, _OPENMP);
#ifdef __SANITIZE_ADDRESS__
    printf("sanitizers: address,undefined\n");
#endif
    return 0;
}
