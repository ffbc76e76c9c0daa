/* SPDX-License-Identifier: MIT */
/** @file bkm/worker.h
 * Everything that runs inside the measured process of a bkm trial, one header per feature:
 * the worker itself, the measurement protocol, PAPI counters and the OS noise evidence. The
 * parent side (the runner, space, strategies, sweep) is bkm/tuner.h; the contract between the
 * two is bkm/trial.h.
 */
#ifndef BKM_WORKER_H
#define BKM_WORKER_H

#include "bkm/trial.h"
#include "bkm/worker/counters.h"
#include "bkm/worker/measure.h"
#include "bkm/worker/noise.h"
#include "bkm/worker/worker.h"

#endif /* BKM_WORKER_H */
