/* SPDX-License-Identifier: MIT */
/* Where this tune is and where it finds its files (see cli_home.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_home.h"

#ifndef BKM_INSTALL_BINDIR
#error "BKM_INSTALL_BINDIR (apps/CMakeLists.txt) is not defined"
#endif

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* @p dir (no trailing '/') without its trailing "/SUB" into @p prefix: 1 when it ends so. A SUB of
 * "" or "." is @p dir itself. */
static int strip_suffix(const char *dir, const char *sub, char *prefix, size_t n)
{
    size_t ld = strlen(dir), ls;
    while (sub[0] == '.' && sub[1] == '/')
        sub += 2;
    ls = strlen(sub);
    while (ls > 0 && sub[ls - 1] == '/')
        ls--;
    if (ls == 0 || (ls == 1 && sub[0] == '.')) {
        snprintf(prefix, n, "%s", dir);
        return 1;
    }
    if (ld < ls + 1 || dir[ld - ls - 1] != '/' || strncmp(dir + ld - ls, sub, ls) != 0)
        return 0;
    snprintf(prefix, n, "%.*s", (int)(ld - ls - 1), dir);
    return 1;
}

int bkm_cli_home_of(const char *exe, const char *bindir, const char *pkglibdir, const char *rtdir,
                    bkm_cli_home_t *h, bkm_err_t *err)
{
    char dir[PATH_MAX], lib[PATH_MAX];
    const char *slash;
    int n;
    memset(h, 0, sizeof *h);
    if (exe == NULL || exe[0] != '/')
        return bkm_err_set(err, BKM_EINVAL, "the tune executable '%s' is not an absolute path", exe ? exe : "");
    if (strlen(exe) >= sizeof h->exe)
        return bkm_err_set(err, BKM_EINVAL, "the tune executable '%.200s...' is longer than PATH_MAX", exe);
    snprintf(h->exe, sizeof h->exe, "%s", exe);
    slash = strrchr(exe, '/');
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - exe), exe);   /* "" for /tune */
    if (strip_suffix(dir, bindir, h->prefix, sizeof h->prefix) &&
        snprintf(lib, sizeof lib, "%s/%s", h->prefix, pkglibdir) < (int)sizeof lib && is_dir(lib)) {
        h->installed = 1;
        n = snprintf(h->shim, sizeof h->shim, "%s/libbkm_team.so", lib);
        if (n >= 0 && n < (int)sizeof h->shim)
            n = snprintf(h->rt, sizeof h->rt, "%s/%s", h->prefix, rtdir);
    } else {
        h->prefix[0] = '\0';
        n = snprintf(h->shim, sizeof h->shim, "%s/libbkm_team.so", dir);
        if (n >= 0 && n < (int)sizeof h->shim)
            n = snprintf(h->rt, sizeof h->rt, "%s/rt", dir);
    }
    if (n < 0 || n >= (int)sizeof h->rt)
        return bkm_err_set(err, BKM_EINVAL, "the files beside the tune executable '%.200s' do not fit PATH_MAX", exe);
    return BKM_OK;
}

int bkm_cli_home_exe(const char *exe, bkm_cli_home_t *h, bkm_err_t *err)
{
    return bkm_cli_home_of(exe, BKM_INSTALL_BINDIR, BKM_INSTALL_PKGLIBDIR, BKM_INSTALL_RT_DIR, h, err);
}

int bkm_cli_home_self(bkm_cli_home_t *h, bkm_err_t *err)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return bkm_err_set(err, BKM_EDEP, "cannot find the tune executable (/proc/self/exe): %s", strerror(errno));
    self[n] = '\0';
    return bkm_cli_home_exe(self, h, err);
}

void bkm_cli_home_note(const bkm_cli_home_t *h, const char *version, char *out, size_t n)
{
    if (h->installed)
        snprintf(out, n, "bkm %s installed under %s", version, h->prefix[0] ? h->prefix : "/");
    else
        snprintf(out, n, "a build tree, not an installed bkm: the job needs that build where it is");
}
