/* SPDX-License-Identifier: MIT */
/* Where this `tune` is, and where it finds what it loads or preloads (docs/install.md). No
 * absolute path is compiled in: an installed tune is PREFIX/BINDIR/tune and finds its files under
 * PREFIX/PKGLIBDIR (BINDIR and PKGLIBDIR as the build was configured, relative to the prefix,
 * "bin" and "lib/bkm" by default); a tune in its build tree finds them beside itself. The trial
 * worker is this same executable (`tune worker`). */
#ifndef BKM_CLI_HOME_H
#define BKM_CLI_HOME_H

#include <limits.h>
#include <stddef.h>

#include "bkm/common.h"

/** The layout around one tune executable. */
typedef struct bkm_cli_home {
    char exe[PATH_MAX];    /**< the executable (absolute) */
    char prefix[PATH_MAX]; /**< installed: the prefix (exe without "/BINDIR/tune"); else "" */
    char shim[PATH_MAX];   /**< where its team shim libbkm_team.so belongs (it may be missing) */
    char rt[PATH_MAX];     /**< the folder of its libgomp.so.1 -> libomp.so.5 link (its DT_RPATH) */
    int installed;         /**< 1: exe is PREFIX/BINDIR/NAME and PREFIX/PKGLIBDIR is a folder */
} bkm_cli_home_t;

/** The layout around @p exe (an absolute path) for the install folders @p bindir and
 *  @p pkglibdir (relative to a prefix, e.g. "bin" and "lib/bkm"; @p rtdir, e.g. "lib/bkm/rt"):
 *  installed when exe's folder ends in "/BINDIR" and PREFIX/PKGLIBDIR is a folder, else a build
 *  tree (shim and rt beside exe: BUILD/libbkm_team.so, BUILD/rt). @return BKM_OK; BKM_EINVAL
 *  naming @p exe when it is not absolute or a resulting path does not fit PATH_MAX. */
int bkm_cli_home_of(const char *exe, const char *bindir, const char *pkglibdir, const char *rtdir,
                    bkm_cli_home_t *h, bkm_err_t *err);

/** bkm_cli_home_of @p exe with the install folders this build was configured with. */
int bkm_cli_home_exe(const char *exe, bkm_cli_home_t *h, bkm_err_t *err);
/** bkm_cli_home_exe of this process (/proc/self/exe, as the kernel resolved it). @return BKM_OK;
 *  BKM_EDEP when /proc/self/exe cannot be read; BKM_EINVAL as bkm_cli_home_of. */
int bkm_cli_home_self(bkm_cli_home_t *h, bkm_err_t *err);

/** What a batch script's header says about the tune it runs (@p version: this bkm's):
 *  "bkm VERSION installed under PREFIX", or "a build tree, not an installed bkm: the job needs
 *  that build where it is". */
void bkm_cli_home_note(const bkm_cli_home_t *h, const char *version, char *out, size_t n);

#endif
