/* SPDX-License-Identifier: MIT */
/* Private to bkm::worker: what its source files share. */
#ifndef BKM_WORKER_INT_H
#define BKM_WORKER_INT_H

#include "bkm/worker.h"

/* The worker of an MPI training trial (spec.ranks >= 1): worker_train.c, see bkm_tune_worker_run. */
int bkm__tune_worker_train(const bkm_tune_worker_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err);

#endif
