/* SPDX-License-Identifier: MIT */
/* The table of backends: for each one its name and what it can create (benchmark ops, LSTM stacks,
 * the engine of image networks). Every creator in kernels/ goes through this table. */
#include "net_int.h"

#include <string.h>

static const bkm__backend_t backends[] = {
    [BKM_BACKEND_NATIVE] = {"native", bkm__kern_native_conv2d_op_create, bkm__kern_native_gemm_op_create,
                            bkm__lstm_native_create, &bkm__net_native_vtbl},
    [BKM_BACKEND_ONEDNN] = {"onednn", bkm__kern_onednn_conv2d_op_create, bkm__kern_onednn_gemm_op_create,
                            bkm__lstm_onednn_create, &bkm__net_onednn_vtbl},
    [BKM_BACKEND_REF] = {"ref", NULL, NULL, bkm__lstm_ref_create, &bkm__net_ref_vtbl},
};

_Static_assert(BKM_NET_NATIVE == BKM_BACKEND_NATIVE && BKM_NET_ONEDNN == BKM_BACKEND_ONEDNN &&
                   BKM_NET_REF == BKM_BACKEND_REF,
               "network engines are backends");

const bkm__backend_t *bkm__backend(int be)
{
    return be >= 0 && (size_t)be < sizeof backends / sizeof backends[0] ? &backends[be] : NULL;
}

const char *bkm_kern_backend_name(bkm_backend_t be)
{
    const bkm__backend_t *b = bkm__backend((int)be);
    return b != NULL ? b->name : "unknown";
}

const char *bkm_net_engine_name(bkm_net_engine_t eng)
{
    const bkm__backend_t *b = bkm__backend((int)eng);
    return b != NULL ? b->name : "?";
}

int bkm_kern_backend_parse(const char *name, bkm_backend_t *be, bkm_err_t *err)
{
    if (name == NULL || be == NULL)
        return bkm_err_set(err, BKM_EINVAL, "backend: NULL argument");
    if (strcmp(name, "dnnl") == 0)
        name = "onednn";
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i].conv2d_op != NULL && strcmp(name, backends[i].name) == 0) {
            *be = (bkm_backend_t)i;
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL, "backend '%s' is unknown (expected native or onednn)", name);
}
