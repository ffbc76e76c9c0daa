/* SPDX-License-Identifier: MIT */
/* Files: user-given input files (only a regular file is opened for reading, never a FIFO, device,
 * socket or directory: a FIFO without a writer blocks open(2) and read(2) forever; /dev/zero never
 * ends; and no more than a stated number of bytes is read), and the one way bkm writes a file
 * (a new name created exclusively, never through a link, then renamed into place); and the
 * lookup of an executable on a PATH the caller passes. */
#define _GNU_SOURCE
#include "bkm/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* "64 MiB" / "1 MiB" / "4096 bytes" for the limits in messages. */
static void fmt_bytes(char *b, size_t n, size_t v)
{
    if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(b, n, "%zu MiB", v >> 20);
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(b, n, "%zu KiB", v >> 10);
    else
        snprintf(b, n, "%zu bytes", v);
}

int bkm_file_open_regular(const char *path, const char *what, size_t max_bytes, int *fd, bkm_err_t *err)
{
    struct stat st;
    char lim[32];
    int f, flags;
    if (fd == NULL || what == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_file_open_regular: NULL argument");
    *fd = -1;
    if (path == NULL || path[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "%s: the path is empty", what);
    /* O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting */
    f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0)
        return bkm_err_set(err, BKM_EINVAL, "cannot read %s '%.400s': %s", what, path, strerror(errno));
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return bkm_err_set(err, BKM_EIO, "cannot read %s '%.400s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is not a regular file (%s)", what, path,
                           file_kind(st.st_mode));
    }
    fmt_bytes(lim, sizeof lim, max_bytes);
    if ((unsigned long long)st.st_size > (unsigned long long)max_bytes) {
        close(f);
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is %lld bytes, more than the limit of %s", what, path,
                           (long long)st.st_size, lim);
    }
    if ((flags = fcntl(f, F_GETFL)) >= 0)
        (void)fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    return BKM_OK;
}

int bkm_file_read_regular(const char *path, const char *what, size_t max_bytes, char **data, size_t *len,
                          bkm_err_t *err)
{
    char *buf = NULL, lim[32];
    size_t n = 0, cap = 0;
    int fd = -1, rc;
    if (data == NULL || len == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_file_read_regular: NULL argument");
    *data = NULL;
    *len = 0;
    if ((rc = bkm_file_open_regular(path, what, max_bytes, &fd, err)) < 0)
        return rc;
    fmt_bytes(lim, sizeof lim, max_bytes);
    for (;;) {
        ssize_t r;
        if (n == cap) {
            /* one byte past the limit tells a file that grew beyond it since fstat */
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            char *nb;
            if (ncap > max_bytes + 1)
                ncap = max_bytes + 1;
            if (ncap <= cap) {
                rc = bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is more than the limit of %s", what, path, lim);
                goto out;
            }
            if ((nb = bkm_realloc(buf, ncap + 1)) == NULL) {
                rc = bkm_err_set(err, BKM_ENOMEM, "out of memory reading %s '%.400s'", what, path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = bkm_err_set(err, BKM_EIO, "cannot read %s '%.400s': %s", what, path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max_bytes) {
        rc = bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is more than the limit of %s", what, path, lim);
        goto out;
    }
    if (buf == NULL && (buf = bkm_malloc(1)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory reading %s '%.400s'", what, path);
        goto out;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    buf = NULL;
    rc = BKM_OK;
out:
    bkm_free(buf);
    close(fd);
    return rc;
}

int bkm_file_check_regular_or_absent(const char *path, const char *what, bkm_err_t *err)
{
    struct stat st;
    if (path == NULL || path[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "%s: the path is empty", what ? what : "file");
    /* stat(2) follows links as the later open will, and never blocks on a FIFO */
    if (stat(path, &st) != 0)
        return BKM_OK; /* absent (or unreachable): the caller's open reports it */
    if (!S_ISREG(st.st_mode))
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is not a regular file (%s)", what ? what : "file", path,
                           file_kind(st.st_mode));
    return BKM_OK;
}

/* Write all @p len bytes of @p text to @p fd. */
static int write_all(int fd, const char *text, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

int bkm_file_write_new(const char *dir, const char *prefix, const char *text, size_t len, unsigned mode, char *path,
                       size_t path_n, bkm_err_t *err)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    int fd = -1, e;
    if (dir == NULL || prefix == NULL || text == NULL || path == NULL || path_n == 0)
        return bkm_err_set(err, BKM_EINVAL, "bkm_file_write_new: NULL argument");
    path[0] = '\0';
    for (int attempt = 0; fd < 0; attempt++) {
        unsigned char rnd[6];
        char suffix[7];
        if (attempt == 100)
            return bkm_err_set(err, BKM_EIO, "cannot create a new file %s/%sXXXXXX: every name tried exists", dir,
                               prefix);
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            return bkm_err_set(err, BKM_EIO, "cannot create a new file in '%.400s': getrandom: %s", dir,
                               strerror(errno));
        for (size_t i = 0; i < sizeof rnd; i++)
            suffix[i] = alnum[rnd[i] % (sizeof alnum - 1)];
        suffix[6] = '\0';
        if ((size_t)snprintf(path, path_n, "%s/%s%s", dir, prefix, suffix) >= path_n) {
            path[0] = '\0';
            return bkm_err_set(err, BKM_EINVAL, "a new file in '%.400s': path too long", dir);
        }
        /* O_EXCL with O_CREAT never follows a link planted at the name: it fails with EEXIST,
         * and the next name is tried */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, (mode_t)(mode & 07777));
        if (fd < 0 && errno != EEXIST) {
            e = errno;
            bkm_err_set(err, BKM_EIO, "cannot create '%s': %s", path, strerror(e));
            path[0] = '\0';
            return BKM_EIO;
        }
    }
    if (write_all(fd, text, len) != 0 || fsync(fd) != 0) {
        e = errno;
        close(fd);
        unlink(path);
        bkm_err_set(err, BKM_EIO, "cannot write '%s': %s", path, strerror(e));
        path[0] = '\0';
        return BKM_EIO;
    }
    if (close(fd) != 0) {
        e = errno;
        unlink(path);
        bkm_err_set(err, BKM_EIO, "cannot write '%s': %s", path, strerror(e));
        path[0] = '\0';
        return BKM_EIO;
    }
    return BKM_OK;
}

/* 1 when @p path, or a link on the way from it, names an open descriptor (/dev/stdout ->
 * /proc/self/fd/1, /dev/fd/N, /proc/PID/fd/N): writing there means writing to that descriptor's
 * file, wherever it is, never replacing the name. */
static int names_descriptor(const char *path)
{
    char cur[4096], next[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0; hop < 16; hop++) {
        struct stat st;
        ssize_t n;
        if (strncmp(cur, "/dev/fd/", 8) == 0 || (strncmp(cur, "/proc/", 6) == 0 && strstr(cur, "/fd/") != NULL))
            return 1;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        if ((n = readlink(cur, next, sizeof next - 1)) <= 0)
            return 0;
        next[n] = '\0';
        if (next[0] == '/') {
            snprintf(cur, sizeof cur, "%s", next);
        } else {
            char *slash = strrchr(cur, '/');
            char joined[4096];
            if (slash == NULL)
                snprintf(joined, sizeof joined, "%s", next);
            else if ((size_t)snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - cur), cur, next) >=
                     sizeof joined)
                return 0;
            snprintf(cur, sizeof cur, "%s", joined);
        }
    }
    return 0;
}

/* A character device bkm writes an output to: a terminal, /dev/null, or what this process's
 * standard output or error is. Any other device (a disk, /dev/mem, a tape) is refused. */
static int device_ok(const struct stat *st)
{
    struct stat fd_st;
    unsigned maj = major(st->st_rdev);
    if (st->st_rdev == makedev(1, 3))
        return 1;
    if (maj == 4 || maj == 5 || (maj >= 136 && maj <= 143))
        return 1;
    for (int fd = 1; fd <= 2; fd++)
        if (fstat(fd, &fd_st) == 0 && fd_st.st_dev == st->st_dev && fd_st.st_ino == st->st_ino)
            return 1;
    return 0;
}

/* Write into the existing FIFO, terminal or descriptor @p path itself (no temporary, no rename). */
static int write_direct(const char *path, const char *what, const char *text, size_t len, int append,
                        bkm_err_t *err)
{
    struct stat st;
    int fd, flags, e;
    fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0));
    if (fd < 0) {
        if (errno == ENXIO)
            return bkm_err_set(err, BKM_EIO, "%s '%.400s': a FIFO that nobody reads", what, path);
        return bkm_err_set(err, BKM_EIO, "%s: cannot write '%.400s': %s", what, path, strerror(errno));
    }
    if (fstat(fd, &st) != 0) {
        e = errno;
        close(fd);
        return bkm_err_set(err, BKM_EIO, "%s: cannot write '%.400s': %s", what, path, strerror(e));
    }
    if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) || (S_ISCHR(st.st_mode) && !device_ok(&st))) {
        close(fd);
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is not a file bkm writes (%s)", what, path,
                           file_kind(st.st_mode));
    }
    if ((flags = fcntl(fd, F_GETFL)) >= 0)
        (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (write_all(fd, text, len) != 0) {
        e = errno;
        close(fd);
        return bkm_err_set(err, BKM_EIO, "%s: cannot write '%.400s': %s", what, path, strerror(e));
    }
    if (close(fd) != 0)
        return bkm_err_set(err, BKM_EIO, "%s: cannot write '%.400s': %s", what, path, strerror(errno));
    return BKM_OK;
}

int bkm_file_write_output(const char *path, const char *what, const char *text, size_t len, unsigned mode,
                          bkm_err_t *err)
{
    struct stat st;
    char dir[4096], prefix[300], tmp[4096];
    const char *slash, *base;
    int rc;
    if (what == NULL || text == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_file_write_output: NULL argument");
    if (path == NULL || path[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "%s: the path is empty", what);
    /* stat(2) follows links: what is there, whatever name leads to it */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISFIFO(st.st_mode) || (S_ISCHR(st.st_mode) && device_ok(&st)))
            return write_direct(path, what, text, len, 0, err);
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' is not a regular file (%s)", what, path,
                           file_kind(st.st_mode));
    }
    if (names_descriptor(path))
        return write_direct(path, what, text, len, 1, err);
    slash = strrchr(path, '/');
    base = slash ? slash + 1 : path;
    if (*base == '\0')
        return bkm_err_set(err, BKM_EINVAL, "%s '%.400s' names a folder, not a file", what, path);
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if ((size_t)snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path) >= sizeof dir)
        return bkm_err_set(err, BKM_EINVAL, "%s '%.200s...': path too long", what, path);
    if ((size_t)snprintf(prefix, sizeof prefix, ".%.200s.tmp-", base) >= sizeof prefix)
        return bkm_err_set(err, BKM_EINVAL, "%s '%.200s...': name too long", what, path);
    /* the temporary: a new name in the target's folder (O_EXCL, never through a link), written
     * and flushed to disk; then renamed over the target, so a reader sees the old file or the
     * new one, never half of it; on failure the target is untouched */
    if ((rc = bkm_file_write_new(dir, prefix, text, len, mode, tmp, sizeof tmp, err)) < 0)
        return bkm_err_prefix(err, "%s '%.400s'", what, path);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return bkm_err_set(err, e == EISDIR ? BKM_EINVAL : BKM_EIO, "%s: cannot write '%.400s': %s", what, path,
                           strerror(e));
    }
    return BKM_OK;
}

int bkm_path_find_program(const char *prog, const char *path, char *found, size_t n, bkm_err_t *err)
{
    const char *p = path ? path : "";
    while (1) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len > 0 && len + strlen(prog) + 2 <= n) {
            snprintf(found, n, "%.*s/%s", (int)len, p, prog);
            if (access(found, X_OK) == 0)
                return BKM_OK;
        }
        if (!c)
            break;
        p = c + 1;
    }
    if (n > 0)
        found[0] = '\0';
    return bkm_err_set(err, BKM_EDEP, "'%s' is not installed (not on PATH)", prog);
}
