/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner.h
 * The tuner, the parent of every trial, one header per feature: the trial runner (one fresh
 * process per trial) and the MPI launcher of its MPI trials, the search space, strategies, the
 * sweep, replay and the regression gate.
 * It includes the trial contract (bkm/trial.h) and the statistics (bkm/stats.h) it decides
 * with. What runs inside a measured process is bkm/worker.h.
 *
 * Error convention: see bkm/common.h. A trial that crashes, hangs, exits non-zero or fails its
 * binding check is a *result* (a status in bkm_tune_trial_result_t), never an error of the
 * runner: the runner returns a negative status only when it could not run the trial at all
 * (no worker executable, no pipes, out of memory). Nothing here reads the environment: the CLI
 * passes the parent environment in.
 */
#ifndef BKM_TUNER_H
#define BKM_TUNER_H

#include "bkm/stats.h"
#include "bkm/trial.h"
#include "bkm/tuner/launcher.h"
#include "bkm/tuner/program.h"
#include "bkm/tuner/regress.h"
#include "bkm/tuner/replay.h"
#include "bkm/tuner/runner.h"
#include "bkm/tuner/space.h"
#include "bkm/tuner/strategy.h"
#include "bkm/tuner/sweep.h"

#endif /* BKM_TUNER_H */
