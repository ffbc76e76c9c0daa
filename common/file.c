/* SPDX-License-Identifier: MIT */
/* User-given input files: only a regular file is opened for reading, never a FIFO, device,
 * socket or directory (a FIFO without a writer blocks open(2) and read(2) forever; /dev/zero never
 * ends), and no more than a stated number of bytes is read. */
#define _POSIX_C_SOURCE 200809L
#include "bkm/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

int bkm_file_write_atomic(const char *path, const char *what, const char *text, bkm_err_t *err)
{
    char tmp[4096];
    FILE *f;
    int ok, e;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return bkm_err_set(err, BKM_EINVAL, "%s '%s': path too long", what, path);
    if ((f = fopen(tmp, "w")) == NULL)
        return bkm_err_set(err, BKM_EIO, "%s: cannot write '%s': %s", what, path, strerror(errno));
    ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) == 0)
        return BKM_OK;
    e = errno;
    unlink(tmp);
    return bkm_err_set(err, BKM_EIO, "%s: cannot write '%s': %s", what, path, strerror(e));
}
