/* SPDX-License-Identifier: MIT */
/* Test double, LD_PRELOADed by test_db_netfs.sh: statfs(2) reports the file system type in
 * $BKM_TEST_FSTYPE (e.g. 0x6969, NFS) for every path, so that the network file system checks run
 * without an NFS or Lustre mount. Only tests load it; bkm itself has no such hook. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

static void fake_type(struct statfs *sf)
{
    const char *t = getenv("BKM_TEST_FSTYPE");
    if (t && *t)
        sf->f_type = (__fsword_t)strtoul(t, NULL, 0);
}

int statfs(const char *path, struct statfs *sf)
{
    int rc = (int)syscall(SYS_statfs, path, sf);
    if (rc == 0)
        fake_type(sf);
    return rc;
}

int statfs64(const char *path, struct statfs64 *sf)
{
    int rc = (int)syscall(SYS_statfs, path, sf);
    if (rc == 0)
        fake_type((struct statfs *)sf);
    return rc;
}
