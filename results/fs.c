/* SPDX-License-Identifier: MIT */
/* Where the database lives: the file system type under a path (SQLite's WAL must not be shared
 * between hosts), the same file under two spellings, and the shared lock that keeps a writer's
 * closing checkpoint away from an immutable reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "results_int.h"

/* f_type magic numbers (linux/magic.h and the file systems' own sources; not all are there). */
static const struct {
    unsigned long magic;
    const char *name;
    int kind;
} fs_types[] = {
    {0x6969UL, "nfs", BKM_DB_FS_SHARED},
    {0x0BD00BD0UL, "lustre", BKM_DB_FS_SHARED},
    {0x47504653UL, "gpfs", BKM_DB_FS_SHARED},
    {0xFF534D42UL, "cifs", BKM_DB_FS_SHARED},
    {0xFE534D42UL, "smb2", BKM_DB_FS_SHARED},
    {0x517BUL, "smb", BKM_DB_FS_SHARED},
    {0x19830326UL, "beegfs", BKM_DB_FS_SHARED},
    {0x00C36400UL, "ceph", BKM_DB_FS_SHARED},
    {0x5346414FUL, "afs", BKM_DB_FS_SHARED},
    {0x6B414653UL, "afs", BKM_DB_FS_SHARED},      /* kAFS */
    {0x01161970UL, "gfs2", BKM_DB_FS_SHARED},
    {0x7461636FUL, "ocfs2", BKM_DB_FS_SHARED},
    {0xAAD7AAEAUL, "panfs", BKM_DB_FS_SHARED},
    {0x65735546UL, "fuse", BKM_DB_FS_MAYBE_SHARED}, /* sshfs, glusterfs, s3fs ... or local */
    {0x01021997UL, "9p", BKM_DB_FS_MAYBE_SHARED},   /* a folder shared with the VM host */
    {0x6A656A63UL, "virtiofs", BKM_DB_FS_MAYBE_SHARED},
};

int bkm_db_fs_classify(unsigned long f_type, const char **name)
{
    for (size_t i = 0; i < sizeof fs_types / sizeof fs_types[0]; i++) {
        if (fs_types[i].magic == (f_type & 0xFFFFFFFFUL)) {
            if (name)
                *name = fs_types[i].name;
            return fs_types[i].kind;
        }
    }
    if (name)
        *name = "local";
    return BKM_DB_FS_LOCAL;
}

/* statfs of @p path, or of its nearest existing ancestor folder when it does not exist yet
 * (the database and its folders are about to be created there). */
static int fs_type_of(const char *path, unsigned long *f_type, bkm_err_t *err)
{
    char buf[PATH_MAX];
    struct statfs sf;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return bkm_err_set(err, BKM_EINVAL, "results database path is longer than %d bytes: %.80s...", PATH_MAX,
                           path);
    for (;;) {
        char *slash;
        if (statfs(buf, &sf) == 0) {
            *f_type = (unsigned long)sf.f_type;
            return BKM_OK;
        }
        if (errno != ENOENT && errno != ENOTDIR)
            return bkm_err_set(err, BKM_EIO, "cannot inspect the file system of results database %s (%s): %s", path,
                               buf, strerror(errno));
        slash = strrchr(buf, '/');
        if (slash == NULL) {
            snprintf(buf, sizeof buf, ".");
        } else if (slash == buf) {
            buf[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
}

int bkm__db_fs_check(const char *path, int shared_ok, char *warning, size_t n, bkm_err_t *err)
{
    unsigned long f_type = 0;
    const char *name = NULL;
    int ret = fs_type_of(path, &f_type, err), kind;
    if (warning && n)
        warning[0] = '\0';
    if (ret < 0)
        return ret;
    kind = bkm_db_fs_classify(f_type, &name);
    if (kind == BKM_DB_FS_SHARED && !shared_ok)
        return bkm_err_set(err, BKM_ENOTSUP,
                           "results database %s is on a network file system (%s, f_type 0x%lx): SQLite's WAL mode "
                           "breaks when processes on different hosts share a database there. Write to a node-local "
                           "path instead (e.g. --db $TMPDIR/bkm.sqlite, or the node's local disk), one file per "
                           "job, and combine them afterwards with `tune merge OUT.sqlite IN.sqlite...`",
                           path, name, f_type);
    if (kind == BKM_DB_FS_SHARED && warning && n)
        snprintf(warning, n,
                 "results database %s is on a network file system (%s, f_type 0x%lx): fine for this merge from "
                 "one host, but never let processes on several hosts write it at once (SQLite's WAL mode breaks "
                 "there): sweeps write node-local files (e.g. $TMPDIR) that `tune merge` combines",
                 path, name, f_type);
    if (kind == BKM_DB_FS_MAYBE_SHARED && warning && n)
        snprintf(warning, n,
                 "results database %s is on a %s file system (f_type 0x%lx): if another host (or the VM host) "
                 "opens it at the same time, SQLite's WAL mode can corrupt it; a node-local path (e.g. "
                 "$TMPDIR) and `tune merge` afterwards are safe",
                 path, name, f_type);
    return BKM_OK;
}

void bkm_db_same_file(const char *a, const char *b, int *same)
{
    struct stat sa, sb;
    *same = a != NULL && b != NULL && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
            sa.st_ino == sb.st_ino;
}

/* SQLite's unix VFS locks the database file at these offsets (os_unix.c: PENDING_BYTE
 * 0x40000000, RESERVED_BYTE + 1, SHARED_FIRST + 2, SHARED_SIZE 510). A reader holds a read lock on
 * the shared range; the last connection to close takes a write lock on it before it checkpoints
 * the WAL into the database file and deletes the WAL, and skips both when it cannot. */
#define SQLITE_SHARED_FIRST (0x40000000L + 2)
#define SQLITE_SHARED_SIZE 510

int bkm__db_shared_lock(const char *path, int *fd_out, bkm_err_t *err)
{
    struct flock fl;
    struct timespec pause = {0, 10 * 1000000L};
    int fd, waited_ms = 0;
    *fd_out = -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return bkm_err_set(err, BKM_EIO, "cannot read results database %s: %s", path, strerror(errno));
    for (;;) {
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_RDLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = SQLITE_SHARED_FIRST;
        fl.l_len = SQLITE_SHARED_SIZE;
        /* An open-file-description lock: closing it never drops a lock SQLite holds on the same
         * file in this process (a classic POSIX lock would be dropped by any close). */
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
            break;
        if ((errno != EAGAIN && errno != EACCES) || waited_ms >= BKM_DB_BUSY_TIMEOUT_MS) {
            /* EINVAL (no OFD locks), ENOLCK (no lock manager): read without the guard */
            if (errno == EAGAIN || errno == EACCES) {
                close(fd);
                return bkm_err_set(err, BKM_EIO, "%s: still locked by a closing writer after %d ms", path,
                                   BKM_DB_BUSY_TIMEOUT_MS);
            }
            break;
        }
        nanosleep(&pause, NULL);
        waited_ms += 10;
    }
    *fd_out = fd;
    return BKM_OK;
}
