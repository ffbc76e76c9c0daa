/* SPDX-License-Identifier: MIT */
/* Backend names of the benchmark operations. */
#include "bkm/kernels.h"

#include <string.h>

const char *bkm_kern_backend_name(bkm_backend_t be)
{
    switch (be) {
    case BKM_BACKEND_NATIVE: return "native";
    case BKM_BACKEND_ONEDNN: return "onednn";
    default: return "unknown";
    }
}

int bkm_kern_backend_parse(const char *name, bkm_backend_t *be, bkm_err_t *err)
{
    if (name == NULL || be == NULL)
        return bkm_err_set(err, BKM_EINVAL, "backend: NULL argument");
    if (strcmp(name, "native") == 0) {
        *be = BKM_BACKEND_NATIVE;
        return BKM_OK;
    }
    if (strcmp(name, "onednn") == 0 || strcmp(name, "dnnl") == 0) {
        *be = BKM_BACKEND_ONEDNN;
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "backend '%s' is unknown (expected native or onednn)", name);
}
