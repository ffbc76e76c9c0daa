/* SPDX-License-Identifier: MIT */
/* IDX files (the MNIST / Fashion-MNIST format, http://yann.lecun.com/exdb/mnist/), gzip or plain:
 * zlib's gzread reads both. Every rule is checked and a file that breaks one is refused naming the
 * file: the magic number (two zero bytes, type 0x08 = unsigned byte, the number of dimensions the
 * caller expects), every dimension positive and within the caller's limits, the data exactly as
 * long as the dimensions say (a truncated file and trailing bytes are both refused), and, for label
 * files, every label below the number of classes. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "bkm/workloads.h"

#define IDX_MAX_FILE ((size_t)1 << 30)   /* 1 GiB on disk */
#define IDX_MAX_DATA ((uint64_t)1 << 32) /* 4 GiB of data after decompression */

void bkm_idx_free(bkm_idx_t *f)
{
    if (!f)
        return;
    bkm_free(f->data);
    memset(f, 0, sizeof *f);
}

/* Read exactly @p n bytes; 0 on success, -1 on a short read (error text into @p why). */
static int gz_read_all(gzFile gz, void *buf, uint64_t n, char *why, size_t why_n)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(gz, p, chunk);
        if (got <= 0) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            snprintf(why, why_n, "%s", got == 0 || zerr == Z_OK ? "the file ends early (truncated)" : msg);
            return -1;
        }
        p += got;
        n -= (uint64_t)got;
    }
    return 0;
}

int bkm_idx_load(const char *path, int ndims, int64_t classes, bkm_idx_t *out, bkm_err_t *err)
{
    unsigned char hdr[4 + 4 * BKM_IDX_MAX_DIMS], extra;
    char why[160] = "";
    gzFile gz = NULL;
    int fd = -1, rc;
    uint64_t total = 1;

    memset(out, 0, sizeof *out);
    if (ndims < 1 || ndims > BKM_IDX_MAX_DIMS)
        return bkm_err_set(err, BKM_EINVAL, "IDX %s: %d dimensions asked, 1..%d supported", path, ndims,
                           BKM_IDX_MAX_DIMS);
    if ((rc = bkm_file_open_regular(path, "IDX file", IDX_MAX_FILE, &fd, err)) < 0)
        return rc;
    if (!(gz = gzdopen(fd, "rb"))) {
        close(fd);
        return bkm_err_set(err, BKM_ENOMEM, "IDX %s: cannot start reading (zlib)", path);
    }
    if (gz_read_all(gz, hdr, 4 + 4 * (uint64_t)ndims, why, sizeof why) < 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: header: %s", path, why);
        goto out;
    }
    if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || hdr[3] != ndims) {
        rc = bkm_err_set(err, BKM_EINVAL,
                         "IDX %s: bad magic number 0x%02x%02x%02x%02x (expected 0x000008%02x: unsigned bytes, %d "
                         "dimension%s)",
                         path, hdr[0], hdr[1], hdr[2], hdr[3], ndims, ndims, ndims == 1 ? "" : "s");
        goto out;
    }
    out->ndims = ndims;
    for (int i = 0; i < ndims; i++) {
        const unsigned char *b = hdr + 4 + 4 * i;
        uint32_t v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        if (v == 0 || v > (uint32_t)INT32_MAX) {
            rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: dimension %d is %u (must be 1..%d)", path, i, v, INT32_MAX);
            goto out;
        }
        out->dims[i] = v;
        total *= v;
        if (total > IDX_MAX_DATA) {
            rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: more than %llu bytes of data declared", path,
                             (unsigned long long)IDX_MAX_DATA);
            goto out;
        }
    }
    if (!(out->data = bkm_malloc((size_t)total))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "IDX %s: cannot allocate %llu bytes", path, (unsigned long long)total);
        goto out;
    }
    out->n = (size_t)total;
    if (gz_read_all(gz, out->data, total, why, sizeof why) < 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: %llu data bytes expected from the header: %s", path,
                         (unsigned long long)total, why);
        goto out;
    }
    if (gzread(gz, &extra, 1) != 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: data continues after the %llu bytes the header declares", path,
                         (unsigned long long)total);
        goto out;
    }
    for (size_t i = 0; classes > 0 && i < out->n; i++)
        if (out->data[i] >= classes) {
            rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: label %zu is %u, outside [0, %lld)", path, i, out->data[i],
                             (long long)classes);
            goto out;
        }
    rc = BKM_OK;
out:
    if (gz && gzclose(gz) != Z_OK && rc == BKM_OK)
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: damaged compressed data", path);
    if (rc < 0)
        bkm_idx_free(out);
    return rc;
}

/* dir/NAME.gz if it exists, else dir/NAME (the message of a missing file names the .gz one). */
static int mnist_file(const char *dir, const char *name, int ndims, int64_t classes, bkm_idx_t *f, bkm_err_t *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.gz", dir, name) >= (int)sizeof path)
        return bkm_err_set(err, BKM_EINVAL, "data folder name too long: %.80s...", dir);
    if (access(path, F_OK) != 0) {
        char plain[4096];
        snprintf(plain, sizeof plain, "%s/%s", dir, name);
        if (access(plain, F_OK) != 0)
            return bkm_err_set(err, BKM_EINVAL, "IDX %s: no such file (nor %s)", path, plain);
        memcpy(path, plain, sizeof path);
    }
    return bkm_idx_load(path, ndims, classes, f, err);
}

void bkm_mnist_free(bkm_mnist_t *m)
{
    if (!m)
        return;
    bkm_idx_free(&m->train_x);
    bkm_idx_free(&m->train_y);
    bkm_idx_free(&m->test_x);
    bkm_idx_free(&m->test_y);
}

int bkm_mnist_load(const char *dir, bkm_mnist_t *m, bkm_err_t *err)
{
    int rc;
    memset(m, 0, sizeof *m);
    if ((rc = mnist_file(dir, "train-images-idx3-ubyte", 3, 0, &m->train_x, err)) < 0 ||
        (rc = mnist_file(dir, "train-labels-idx1-ubyte", 1, 10, &m->train_y, err)) < 0 ||
        (rc = mnist_file(dir, "t10k-images-idx3-ubyte", 3, 0, &m->test_x, err)) < 0 ||
        (rc = mnist_file(dir, "t10k-labels-idx1-ubyte", 1, 10, &m->test_y, err)) < 0)
        goto out;
    if (m->train_x.dims[0] != m->train_y.dims[0] || m->test_x.dims[0] != m->test_y.dims[0]) {
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: %u training images but %u labels, %u test images but %u labels",
                         dir, m->train_x.dims[0], m->train_y.dims[0], m->test_x.dims[0], m->test_y.dims[0]);
        goto out;
    }
    if (m->train_x.dims[1] != m->test_x.dims[1] || m->train_x.dims[2] != m->test_x.dims[2]) {
        rc = bkm_err_set(err, BKM_EINVAL, "IDX %s: training images are %ux%u, test images %ux%u", dir,
                         m->train_x.dims[1], m->train_x.dims[2], m->test_x.dims[1], m->test_x.dims[2]);
        goto out;
    }
    m->n_train = m->train_x.dims[0];
    m->n_test = m->test_x.dims[0];
    m->h = m->train_x.dims[1];
    m->w = m->train_x.dims[2];
    rc = BKM_OK;
out:
    if (rc < 0)
        bkm_mnist_free(m);
    return rc;
}
