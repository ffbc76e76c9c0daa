/* SPDX-License-Identifier: MIT */
/* Private to workloads/ (and its tests): the MPI pieces of `fmnist-sgd`. Only workloads/ includes
 * mpi.h. */
#ifndef BKM_WL_MPI_H
#define BKM_WL_MPI_H

#include <mpi.h>
#include <stddef.h>

#include "bkm/workloads.h"

/* In-place sum of @p n floats over @p comm by a ring: reduce-scatter then allgather, 2(P-1) steps of
 * point-to-point exchanges with the neighbours, each of about n/P floats (segments differ by at most
 * one element; any n including 0 and 1, any P). @p tmp holds at least n/P + 1 floats. Every rank
 * ends with bit-identical sums (each segment is summed once, by one rank, then copied). Returns
 * MPI_SUCCESS or the MPI error code (MPI_ERR_COUNT when a segment exceeds INT_MAX elements). */
int bkm__ring_allreduce_f32(float *buf, size_t n, float *tmp, MPI_Comm comm);
/* The same on doubles (the exact-gradient path of fmnist-sgd); @p tmp holds n/P + 1 doubles. */
int bkm__ring_allreduce_f64(double *buf, size_t n, double *tmp, MPI_Comm comm);

/* Test hooks of fmnist-sgd (tests/workloads/mpi_check only): at the end of epoch perturb_epoch
 * (1-based; 0 = never), rank perturb_rank moves one parameter by one ulp before the checksum, so
 * that the per-epoch parameter check must stop every rank. */
typedef struct bkm__train_hooks {
    int perturb_epoch, perturb_rank;
} bkm__train_hooks_t;

/* bkm_train_run with test hooks (NULL: none). */
int bkm__train_run_hooked(const bkm_wl_config_t *cfg, int n_threads, bkm_train_log_fn log, void *log_ctx,
                          bkm_buf_t *json, int *rank, const bkm__train_hooks_t *hooks, bkm_err_t *err);

#endif /* BKM_WL_MPI_H */
