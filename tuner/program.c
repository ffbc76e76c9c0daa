/* SPDX-License-Identifier: MIT */
/* The user's own program as a trial: placeholder until the program trial lands. */
#include "tuner_int.h"

int bkm__tune_program_run(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, bkm_tune_trial_result_t *r,
                          bkm_err_t *err)
{
    (void)rn, (void)spec, (void)r;
    return bkm_err_set(err, BKM_ENOTSUP, "program trials are not built yet");
}
