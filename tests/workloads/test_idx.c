/* SPDX-License-Identifier: MIT */
/* IDX reading (workloads/idx.c): plain and gzip files, every bad-file rule refused naming the file
 * (bad magic, zero dimension, truncated plain and gzip data, trailing data, a label out of range, a
 * FIFO), the four-file set with mismatched counts, and the installed Fashion-MNIST when present. */
#define _XOPEN_SOURCE 700 /* mkdtemp, truncate, mkfifo */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bkm_check.h"
#include "bkm/workloads.h"

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bkm_idx_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* An IDX byte image: magic 0x000008nd, dims, then data (n bytes of value v + i % mod). */
static size_t idx_bytes(unsigned char *b, int nd, const uint32_t *dims, unsigned mod)
{
    size_t n = 1, o = 0;
    b[o++] = 0, b[o++] = 0, b[o++] = 8, b[o++] = (unsigned char)nd;
    for (int i = 0; i < nd; i++) {
        b[o++] = (unsigned char)(dims[i] >> 24), b[o++] = (unsigned char)(dims[i] >> 16);
        b[o++] = (unsigned char)(dims[i] >> 8), b[o++] = (unsigned char)dims[i];
        n *= dims[i];
    }
    for (size_t i = 0; i < n; i++)
        b[o++] = (unsigned char)(i % mod);
    return o;
}

static const char *put(const char *name, const unsigned char *b, size_t n, int gz)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(gzwrite(f, b, (unsigned)n), (int)n);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(b, 1, n, f), n);
        fclose(f);
    }
    return path;
}

static void refused(const char *path, int nd, int64_t classes, const char *needle)
{
    bkm_idx_t f;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_idx_load(path, nd, classes, &f, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message does not name %s: %s", path, err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message lacks '%s': %s", needle, err.msg);
    ck_assert_ptr_null(f.data);
}

START_TEST(plain_and_gzip_read)
{
    unsigned char b[4096];
    uint32_t dims[3] = {5, 7, 9};
    bkm_idx_t f;
    bkm_err_t err = {0};
    size_t n = idx_bytes(b, 3, dims, 251);
    for (int gz = 0; gz < 2; gz++) {
        const char *p = put(gz ? "a.gz" : "a", b, n, gz);
        ck_assert_msg(bkm_idx_load(p, 3, 0, &f, &err) == BKM_OK, "%s", err.msg);
        ck_assert_int_eq(f.ndims, 3);
        ck_assert_uint_eq(f.dims[0], 5);
        ck_assert_uint_eq(f.dims[2], 9);
        ck_assert_uint_eq(f.n, 315);
        ck_assert_int_eq(memcmp(f.data, b + 16, 315), 0);
        bkm_idx_free(&f);
    }
}
END_TEST

START_TEST(bad_files_named)
{
    unsigned char b[4096];
    uint32_t dims[3] = {4, 3, 3}, zero[3] = {4, 0, 3}, lab[1] = {20};
    size_t n = idx_bytes(b, 3, dims, 200);
    const char *p;
    /* wrong dimension count in the magic, wrong type byte */
    refused(put("m1", b, n, 0), 1, 0, "bad magic");
    b[2] = 0x0d;
    refused(put("m2.gz", b, n, 1), 3, 0, "bad magic");
    b[2] = 0x08;
    /* truncated: plain, and gzip (a cut stream) */
    refused(put("t1", b, n - 5, 0), 3, 0, "truncated");
    refused(put("t2", b, 10, 0), 3, 0, "header");
    p = put("t3.gz", b, n, 1);
    {
        struct stat st;
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(truncate(p, st.st_size - 12), 0);
        bkm_idx_t f;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_idx_load(p, 3, 0, &f, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, p));
    }
    /* trailing data */
    b[n] = 7;
    refused(put("x1", b, n + 1, 0), 3, 0, "continues after");
    /* a zero dimension */
    n = idx_bytes(b, 3, zero, 200);
    refused(put("z1", b, n, 0), 3, 0, "dimension 1 is 0");
    /* labels: 20 labels 0..19, 10 classes */
    n = idx_bytes(b, 1, lab, 20);
    refused(put("l1.gz", b, n, 1), 1, 10, "label 10 is 10");
    /* a FIFO is refused, not waited on */
    {
        char fifo[300];
        snprintf(fifo, sizeof fifo, "%s/fifo", dir);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        refused(fifo, 1, 10, "fifo");
    }
    /* a missing file */
    {
        char miss[300];
        snprintf(miss, sizeof miss, "%s/missing", dir);
        refused(miss, 1, 10, "missing");
    }
}
END_TEST

START_TEST(set_counts_must_agree)
{
    unsigned char b[100000];
    uint32_t im[3] = {6, 28, 28}, la[1] = {6}, la5[1] = {5};
    bkm_mnist_t m;
    bkm_err_t err = {0};
    size_t n = idx_bytes(b, 3, im, 256);
    put("train-images-idx3-ubyte.gz", b, n, 1);
    put("t10k-images-idx3-ubyte", b, n, 0); /* plain is found when .gz is absent */
    n = idx_bytes(b, 1, la, 10);
    put("train-labels-idx1-ubyte.gz", b, n, 1);
    n = idx_bytes(b, 1, la5, 10);
    put("t10k-labels-idx1-ubyte.gz", b, n, 1);
    ck_assert_int_eq(bkm_mnist_load(dir, &m, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, "6 test images but 5 labels") != NULL, "%s", err.msg);
    n = idx_bytes(b, 1, la, 10);
    put("t10k-labels-idx1-ubyte.gz", b, n, 1);
    ck_assert_msg(bkm_mnist_load(dir, &m, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(m.n_train, 6);
    ck_assert_int_eq(m.n_test, 6);
    ck_assert_int_eq(m.h, 28);
    bkm_mnist_free(&m);
    /* a missing file names the .gz it looked for */
    {
        char p[400];
        snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", dir);
        ck_assert_int_eq(unlink(p), 0);
        ck_assert_int_eq(bkm_mnist_load(dir, &m, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "t10k-labels-idx1-ubyte.gz: no such file"));
    }
}
END_TEST

START_TEST(installed_fashion_mnist)
{
    const char *d = "/usr/share/datasets/fashion-mnist";
    bkm_mnist_t m;
    bkm_err_t err = {0};
    if (access(d, R_OK) != 0) {
        printf("skipped: %s not installed (Debian package dataset-fashion-mnist)\n", d);
        return;
    }
    ck_assert_msg(bkm_mnist_load(d, &m, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(m.n_train, 60000);
    ck_assert_int_eq(m.n_test, 10000);
    ck_assert_int_eq(m.h, 28);
    ck_assert_int_eq(m.w, 28);
    bkm_mnist_free(&m);
}
END_TEST

static Suite *idx_suite(void)
{
    Suite *s = suite_create("idx");
    TCase *tc = tcase_create("idx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, plain_and_gzip_read);
    tcase_add_test(tc, bad_files_named);
    tcase_add_test(tc, set_counts_must_agree);
    tcase_add_test(tc, installed_fashion_mnist);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(idx_suite)
