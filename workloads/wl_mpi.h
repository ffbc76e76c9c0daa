/* SPDX-License-Identifier: MIT */
/* Private to workloads/ (and its tests): the MPI pieces of `fmnist-sgd`. Only workloads/ includes
 * mpi.h. */
#ifndef BKM_WL_MPI_H
#define BKM_WL_MPI_H

#include <mpi.h>
#include <stddef.h>

/* In-place sum of @p n floats over @p comm by a ring: reduce-scatter then allgather, 2(P-1) steps of
 * point-to-point exchanges with the neighbours, each of about n/P floats (segments differ by at most
 * one element; any n including 0 and 1, any P). @p tmp holds at least n/P + 1 floats. Every rank
 * ends with bit-identical sums (each segment is summed once, by one rank, then copied). Returns
 * MPI_SUCCESS or the MPI error code (MPI_ERR_COUNT when a segment exceeds INT_MAX elements). */
int bkm__ring_allreduce_f32(float *buf, size_t n, float *tmp, MPI_Comm comm);

#endif /* BKM_WL_MPI_H */
