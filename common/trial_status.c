/* SPDX-License-Identifier: MIT */
/* Names of trial statuses and the counter states, shared by the runner (tuner/) and the store (results/). */
#include <string.h>

#include "bkm/common.h"

static const char *const status_names[] = {"ok", "crashed", "timeout", "failed", "binding-mismatch", "interrupted"};
_Static_assert(sizeof status_names / sizeof status_names[0] == BKM_TRIAL_INTERRUPTED + 1,
               "one name per bkm_trial_status_t");

const char *bkm_trial_status_name(int status)
{
    return status >= 0 && status <= BKM_TRIAL_INTERRUPTED ? status_names[status] : NULL;
}

int bkm_trial_status_stored(int status)
{
    return status >= 0 && status < BKM_TRIAL_N_STORED;
}

int bkm_trial_status_parse(const char *name, int *status, bkm_err_t *err)
{
    for (int i = 0; name && i < BKM_TRIAL_N_STORED; i++)
        if (strcmp(name, status_names[i]) == 0) {
            *status = i;
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL, "unknown trial status '%s' (ok, crashed, timeout, failed, binding-mismatch)",
                       name ? name : "(null)");
}

int bkm_counter_presentable(const bkm_counter_t *c)
{
    return c != NULL && c->available && !c->disagrees;
}
