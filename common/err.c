/* SPDX-License-Identifier: MIT */
/* Status codes and the error buffer. */
#include "bkm/common.h"

#include <stdio.h>
#include <string.h>

int bkm_err_set(bkm_err_t *err, int code, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

int bkm_err_prefix(bkm_err_t *err, const char *fmt, ...)
{
    char prefix[256];
    char old[sizeof(err->msg)];
    va_list ap;
    if (err == NULL)
        return BKM_OK;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    return err->code;
}

const char *bkm_strerror(int code)
{
    switch (code) {
    case BKM_OK: return "success";
    case BKM_EINVAL: return "invalid argument";
    case BKM_ENOMEM: return "out of memory";
    case BKM_EIO: return "I/O error";
    case BKM_ENOTSUP: return "not supported";
    case BKM_EDEP: return "dependency error";
    case BKM_EVERIFY: return "verification failed";
    case BKM_ECORRUPT: return "corrupt or foreign file";
    case BKM_EFAIL: return "check failed";
    default: return "unknown error";
    }
}

int bkm_status_exit_code(int code)
{
    switch (code) {
    case BKM_OK: return 0;
    case BKM_EFAIL:
    case BKM_EVERIFY: return 1;
    case BKM_EINVAL: return 2;
    default: return 3; /* ENOMEM, EIO, ENOTSUP, EDEP, ECORRUPT: the environment */
    }
}
