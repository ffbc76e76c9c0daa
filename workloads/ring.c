/* SPDX-License-Identifier: MIT */
/* Ring allreduce over point-to-point messages (Patarasuk & Yuan; Baidu's ring allreduce): P-1 steps
 * of reduce-scatter, after which rank r holds the sum of segment r+1, then P-1 steps of allgather
 * that pass the summed segments around the ring. Bandwidth-optimal: each rank sends 2(P-1)/P of
 * the buffer whatever P. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/workloads.h"
#include "wl_mpi.h"

/* Start of segment @p i of @p n elements split in @p p segments (the first n % p one longer). */
static size_t seg_off(size_t n, int p, int i)
{
    size_t q = n / (size_t)p, r = n % (size_t)p, ui = (size_t)i;
    return ui * q + (ui < r ? ui : r);
}

static int seg_len(size_t n, int p, int i)
{
    return (int)(seg_off(n, p, i + 1) - seg_off(n, p, i));
}

/* The ring on floats (@p dbl 0) or doubles (@p dbl 1): the same exchanges, the type only in the
 * MPI datatype, the element size and the sum. */
static int ring_allreduce(void *vbuf, size_t n, void *vtmp, int dbl, MPI_Comm comm)
{
    int p, r, rc, right, left;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    char *buf = vbuf;
    MPI_Datatype ty = dbl ? MPI_DOUBLE : MPI_FLOAT;
    if ((rc = MPI_Comm_size(comm, &p)) != MPI_SUCCESS || (rc = MPI_Comm_rank(comm, &r)) != MPI_SUCCESS)
        return rc;
    if (p == 1 || n == 0)
        return MPI_SUCCESS;
    if (n / (size_t)p + 1 > (size_t)INT_MAX)
        return MPI_ERR_COUNT;
    right = (r + 1) % p;
    left = (r + p - 1) % p;
    for (int s = 0; s < p - 1; s++) { /* reduce-scatter */
        int send = ((r - s) % p + p) % p, recv = ((r - s - 1) % p + p) % p;
        int nr = seg_len(n, p, recv);
        char *dst = buf + seg_off(n, p, recv) * es;
        rc = MPI_Sendrecv(buf + seg_off(n, p, send) * es, seg_len(n, p, send), ty, right, 71, vtmp, nr, ty, left, 71,
                          comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        if (dbl)
            for (int i = 0; i < nr; i++)
                ((double *)(void *)dst)[i] += ((const double *)vtmp)[i];
        else
            for (int i = 0; i < nr; i++)
                ((float *)(void *)dst)[i] += ((const float *)vtmp)[i];
    }
    for (int s = 0; s < p - 1; s++) { /* allgather */
        int send = ((r + 1 - s) % p + p) % p, recv = ((r - s) % p + p) % p;
        rc = MPI_Sendrecv(buf + seg_off(n, p, send) * es, seg_len(n, p, send), ty, right, 72,
                          buf + seg_off(n, p, recv) * es, seg_len(n, p, recv), ty, left, 72, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int bkm__ring_allreduce_f32(float *buf, size_t n, float *tmp, MPI_Comm comm)
{
    return ring_allreduce(buf, n, tmp, 0, comm);
}

int bkm__ring_allreduce_f64(double *buf, size_t n, double *tmp, MPI_Comm comm)
{
    return ring_allreduce(buf, n, tmp, 1, comm);
}

/* ---------------------------------------------------------------------------------------- */
/* Ring vs MPI_Allreduce, interleaved (bench/bench_allreduce.c). */


static void spread(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof *v, bkm_cmp_double);
    out[0] = v[0];
    out[1] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out[2] = v[n - 1];
}

int bkm_allreduce_bench(size_t n, int reps, bkm_allreduce_bench_t *out, bkm_err_t *err)
{
    int rank, size, rc = BKM_OK, mrc = MPI_SUCCESS;
    float *a = NULL, *b = NULL, *tmp = NULL;
    double *tm = NULL, *tr = NULL;
    memset(out, 0, sizeof *out);
    if (reps < 1 || n > (size_t)INT_MAX)
        return bkm_err_set(err, BKM_EINVAL, "allreduce bench: reps=%d, n=%zu (1.. and at most %d)", reps, n, INT_MAX);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    a = bkm_malloc((n + 1) * sizeof(float));
    b = bkm_malloc((n + 1) * sizeof(float));
    tmp = bkm_malloc((n / (size_t)size + 1) * sizeof(float));
    tm = bkm_malloc((size_t)reps * sizeof(double));
    tr = bkm_malloc((size_t)reps * sizeof(double));
    if (!a || !b || !tmp || !tm || !tr) {
        rc = bkm_err_set(err, BKM_ENOMEM, "allreduce bench: out of memory for %zu floats", n);
        goto out;
    }
    out->exact = 1;
    for (int r = 0; r < reps && mrc == MPI_SUCCESS; r++) {
        double t[2], tmax[2];
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = (float)((int)(i % 251) - rank);
        MPI_Barrier(MPI_COMM_WORLD);
        t[0] = MPI_Wtime();
        mrc = MPI_Allreduce(MPI_IN_PLACE, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[0] = MPI_Wtime() - t[0];
        if (mrc != MPI_SUCCESS)
            break;
        MPI_Barrier(MPI_COMM_WORLD);
        t[1] = MPI_Wtime();
        mrc = bkm__ring_allreduce_f32(a, n, tmp, MPI_COMM_WORLD);
        t[1] = MPI_Wtime() - t[1];
        if (mrc != MPI_SUCCESS)
            break;
        if (memcmp(a, b, n * sizeof(float)) != 0)
            out->exact = 0;
        mrc = MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        tm[r] = tmax[0] * 1e3;
        tr[r] = tmax[1] * 1e3;
    }
    if (mrc != MPI_SUCCESS) {
        rc = bkm_err_set(err, BKM_EDEP, "allreduce bench: MPI error %d", mrc);
        goto out;
    }
    spread(tm, reps, out->mpi_ms);
    spread(tr, reps, out->ring_ms);
    out->mpi_gbs = (double)n * sizeof(float) / (out->mpi_ms[1] * 1e-3) * 1e-9;
    out->ring_gbs = (double)n * sizeof(float) / (out->ring_ms[1] * 1e-3) * 1e-9;
    out->ratio = out->ring_gbs / out->mpi_gbs;
out:
    bkm_free(a);
    bkm_free(b);
    bkm_free(tmp);
    bkm_free(tm);
    bkm_free(tr);
    return rc;
}
