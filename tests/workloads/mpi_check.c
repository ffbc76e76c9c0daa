/* SPDX-License-Identifier: MIT */
/* MPI checks of fmnist-sgd's pieces, run by test_mpi.sh under `mpiexec -n P` (not a Check suite:
 * libcheck forks each test, which MPI does not survive). Prints one line per check on rank 0 and
 * exits 0 when every check passed on every rank, 1 otherwise.
 *   mpi_check ring   the ring allreduce gives exact sums (integer-valued floats, so any summation
 *                    order is exact) equal to MPI_Allreduce's, bit-identical on every rank, for
 *                    counts 0, 1, P-1, P, P+1, odd, large
 *   mpi_check avg    gradients of the seed CNN on each rank's slice of a global batch, summed by
 *                    the ring and divided by P, equal one executor's gradients on the whole batch
 *                    (rank 0 computes that reference); reduce=sum is P times it
 *   mpi_check mismatch [DATA]   a 2-epoch training (1280 images of DATA, default the installed
 *                    Fashion-MNIST) where the last rank moves one parameter by one ulp at the end of
 *                    epoch 2: every rank must return BKM_EVERIFY naming epoch 2 (printed on stderr
 *                    as "[rank r] message"), none may hang (test_mpi.sh runs it under a timeout) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/net.h"
#include "wl_mpi.h"

static int rank, size;

static int all_ok(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static int check_ring(void)
{
    size_t sizes[] = {0, 1, (size_t)size - 1, (size_t)size, (size_t)size + 1, 7, 1001, 65537, (1u << 20) + 3};
    int failed = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k], bad = 0;
        float *a = malloc((n + 1) * sizeof(float)), *b = malloc((n + 1) * sizeof(float));
        float *tmp = malloc((n / (size_t)size + 1) * sizeof(float));
        double ident[2], identmax[2];
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = (float)((rank + 1) * (int)(i % 97) - 3 * rank);
        int rc = bkm__ring_allreduce_f32(a, n, tmp, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) {
            double want = (double)(i % 97) * size * (size + 1) / 2.0 - 3.0 * size * (size - 1) / 2.0;
            if (a[i] != (float)want || a[i] != b[i])
                bad++;
        }
        /* every rank holds the same bits: a checksum compared by max and -min */
        ident[0] = 0.0;
        for (size_t i = 0; i < n; i++)
            ident[0] += (double)a[i] * (double)(1 + i % 13);
        ident[1] = -ident[0];
        MPI_Allreduce(ident, identmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int ok = all_ok(rc == MPI_SUCCESS && bad == 0 && identmax[0] == -identmax[1]);
        if (rank == 0)
            printf("%s ring P=%d n=%zu%s\n", ok ? "ok  " : "FAIL", size, n, ok ? "" : " (wrong sums or ranks differ)");
        failed += !ok;
        free(a);
        free(b);
        free(tmp);
    }
    return failed;
}

static void fill_batch(float *in, int32_t *lab, int64_t from, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t s = from + j;
        for (int64_t k = 0; k < 784; k++)
            in[j * 784 + k] = (float)sin(0.37 * (double)(s * 784 + k)) * 0.8f;
        lab[j] = (int32_t)((s * 7 + 3) % 10);
    }
}

static void fill_params(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)cos(0.11 * (double)i) * 0.05f;
}

static bkm_net_exec_t *cnn(int64_t mb, int64_t from)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    size_t np;
    bkm_net_step_t st;
    bkm_net_desc_mnist_cnn(&d, mb, 0.0f);
    if (bkm_net_init(&net, &d, &err) < 0 || bkm_net_exec_create(&ex, &net, BKM_NET_NATIVE, NULL, &err) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return NULL;
    }
    fill_batch(bkm_net_exec_input(ex, NULL), bkm_net_exec_labels(ex, NULL), from, mb);
    fill_params(bkm_net_exec_params(ex, &np), np);
    if (bkm_net_exec_prepare(ex, &err) < 0 || bkm_net_exec_step(ex, &st, &err) < 0 ||
        bkm_net_exec_finish(ex, &err) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        bkm_net_exec_destroy(ex);
        return NULL;
    }
    return ex;
}

static int check_avg(void)
{
    const int64_t global = 24;
    int64_t local = global / size;
    size_t np;
    int failed = 0;
    if (global % size) {
        if (rank == 0)
            printf("skip avg: P=%d does not divide %lld\n", size, (long long)global);
        return 0;
    }
    bkm_net_exec_t *ex = cnn(local, rank * local), *ref = rank == 0 ? cnn(global, 0) : NULL;
    if (!all_ok(ex != NULL && (rank != 0 || ref != NULL)))
        return 1;
    const float *g = bkm_net_exec_grads(ex, &np);
    float *sum = malloc(np * sizeof(float)), *tmp = malloc((np / (size_t)size + 1) * sizeof(float));
    memcpy(sum, g, np * sizeof(float));
    bkm__ring_allreduce_f32(sum, np, tmp, MPI_COMM_WORLD);
    double md = 0.0, mx = 0.0, mds = 0.0;
    if (rank == 0) {
        const float *rg = bkm_net_exec_grads(ref, NULL);
        for (size_t i = 0; i < np; i++) {
            md = fmax(md, fabs((double)sum[i] / size - (double)rg[i]));  /* reduce=mean */
            mds = fmax(mds, fabs((double)sum[i] - (double)size * rg[i])); /* reduce=sum: P times */
            mx = fmax(mx, fabs((double)rg[i]));
        }
    }
    int ok = all_ok(rank != 0 || (mx > 0.0 && md <= 1e-5 * mx && mds <= 1e-5 * size * mx));
    if (rank == 0)
        printf("%s avg P=%d: averaged gradients vs one rank on the whole batch: max diff %.3g (max |g| %.3g); sum vs "
               "P x: %.3g\n",
               ok ? "ok  " : "FAIL", size, md, mx, mds);
    failed += !ok;
    free(sum);
    free(tmp);
    bkm_net_exec_destroy(ex);
    bkm_net_exec_destroy(ref);
    return failed;
}

static int check_mismatch(const char *data)
{
    bkm_wl_config_t cfg;
    bkm_err_t err;
    bkm_buf_t json;
    char dkv[600];
    const char *kv[] = {"epochs=3", "train_limit=1280", "test_limit=250", "model=mlp", dkv};
    bkm__train_hooks_t hooks = {2, size - 1};
    int rc = BKM_OK, ok;
    memset(&err, 0, sizeof err);
    snprintf(dkv, sizeof dkv, "data=%s", data);
    bkm_wl_config_init(&cfg);
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && rc == BKM_OK; i++)
        rc = bkm_wl_config_add(&cfg, kv[i], &err);
    bkm_buf_init(&json);
    if (rc == BKM_OK)
        rc = bkm__train_run_hooked(&cfg, 1, NULL, NULL, &json, NULL, &hooks, &err);
    fprintf(stderr, "[rank %d] %s\n", rank, rc == BKM_OK ? "ok (no error)" : err.msg);
    ok = rc == BKM_EVERIFY && strstr(err.msg, "epoch 2:") && strstr(err.msg, "differ between ranks") &&
         json.len == 0;
    bkm_buf_free(&json);
    ok = all_ok(ok);
    if (rank == 0)
        printf("%s mismatch: every rank stopped at epoch 2 with the parameter check's error (P=%d)\n",
               ok ? "ok  " : "FAIL", size);
    return !ok;
}

int main(int argc, char **argv)
{
    int provided, failed = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "ring") && strcmp(argv[1], "avg") && strcmp(argv[1], "mismatch"))) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_check ring|avg|mismatch [DATA]\n");
        MPI_Finalize();
        return 2;
    }
    if (strcmp(argv[1], "mismatch") == 0)
        failed = check_mismatch(argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist");
    else
        failed = strcmp(argv[1], "ring") == 0 ? check_ring() : check_avg();
    MPI_Finalize();
    return failed ? 1 : 0;
}
