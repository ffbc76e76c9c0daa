/* SPDX-License-Identifier: MIT */
/* Ring allreduce over point-to-point messages (Patarasuk & Yuan; Baidu's ring allreduce): P-1 steps
 * of reduce-scatter, after which rank r holds the sum of segment r+1, then P-1 steps of allgather
 * that pass the summed segments around the ring. Bandwidth-optimal: each rank sends 2(P-1)/P of
 * the buffer whatever P. */
#include <limits.h>

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

int bkm__ring_allreduce_f32(float *buf, size_t n, float *tmp, MPI_Comm comm)
{
    int p, r, rc, right, left;
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
        float *dst = buf + seg_off(n, p, recv);
        rc = MPI_Sendrecv(buf + seg_off(n, p, send), seg_len(n, p, send), MPI_FLOAT, right, 71, tmp, nr, MPI_FLOAT,
                          left, 71, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        for (int i = 0; i < nr; i++)
            dst[i] += tmp[i];
    }
    for (int s = 0; s < p - 1; s++) { /* allgather */
        int send = ((r + 1 - s) % p + p) % p, recv = ((r - s) % p + p) % p;
        rc = MPI_Sendrecv(buf + seg_off(n, p, send), seg_len(n, p, send), MPI_FLOAT, right, 72,
                          buf + seg_off(n, p, recv), seg_len(n, p, recv), MPI_FLOAT, left, 72, comm,
                          MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
