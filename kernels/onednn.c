/* SPDX-License-Identifier: MIT */
/* What the oneDNN backend's files share (onednn_int.h): status mapping, memory and reorder
 * creation, user-managed scratchpads, implementation names and plain descriptors. */
#include <stdio.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "onednn_int.h"

int bkm__kern_onednn_status(int st, const char *what, bkm_err_t *err)
{
    const char *name = dnnl_status2str((dnnl_status_t)st);
    switch ((dnnl_status_t)st) {
    case dnnl_success:
        return BKM_OK;
    case dnnl_out_of_memory:
        return bkm_err_set(err, BKM_ENOMEM, "oneDNN: %s: %s", what, name);
    case dnnl_unimplemented:
        return bkm_err_set(err, BKM_ENOTSUP, "oneDNN has no implementation (%s): %s", name, what);
    case dnnl_invalid_arguments:
        return bkm_err_set(err, BKM_EINVAL, "oneDNN rejected the arguments (%s): %s", name, what);
    default:
        return bkm_err_set(err, BKM_EDEP, "oneDNN failed (%s): %s", name, what);
    }
}

int bkm__odnn_mem(dnnl_memory_t *mem, const dnnl_memory_desc_t *md, dnnl_engine_t eng, void *handle,
                  bkm_err_t *err)
{
    int rc = BKM_OK;
    void *p = NULL;
    *mem = NULL;
    BKM_ODNN_TRY(dnnl_memory_create(mem, md, eng, handle ? handle : DNNL_MEMORY_ALLOCATE));
    if (!handle) {
        BKM_ODNN_TRY(dnnl_memory_get_data_handle(*mem, &p));
        /* zeroed by the team under a static schedule (first touch: each page on the socket of a
         * thread that works on that part, not all on the master's) */
        if (p) {
            size_t bytes = dnnl_memory_desc_get_size(md);
            bkm__kern_zero_team(p, bytes / sizeof(float));
            memset((char *)p + bytes / sizeof(float) * sizeof(float), 0, bytes % sizeof(float));
        }
    }
out:
    if (rc != BKM_OK && *mem) {
        dnnl_memory_destroy(*mem);
        *mem = NULL;
    }
    return rc;
}

int bkm__odnn_reorder(dnnl_primitive_t *prim, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                      dnnl_engine_t eng, bkm_err_t *err)
{
    int rc = BKM_OK;
    dnnl_primitive_desc_t pd = NULL;
    *prim = NULL;
    BKM_ODNN_TRY(dnnl_reorder_primitive_desc_create(&pd, src, eng, dst, eng, NULL));
    BKM_ODNN_TRY(dnnl_primitive_create(prim, pd));
out:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

int bkm__odnn_attr(dnnl_primitive_attr_t *attr, bkm_err_t *err)
{
    int rc = BKM_OK;
    *attr = NULL;
    BKM_ODNN_TRY(dnnl_primitive_attr_create(attr));
    BKM_ODNN_TRY(dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user));
out:
    if (rc != BKM_OK && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return rc;
}

int bkm__odnn_scratch(dnnl_memory_t *mem, const_dnnl_primitive_desc_t pd, dnnl_engine_t eng, bkm_err_t *err)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    *mem = NULL;
    if (!md || dnnl_memory_desc_get_size(md) == 0)
        return BKM_OK;
    return bkm__odnn_mem(mem, md, eng, NULL, err);
}

void bkm__odnn_impl_name(const_dnnl_primitive_desc_t pd, char *buf, size_t n)
{
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
        s = "unknown";
    snprintf(buf, n, "onednn:%s", s);
}

int bkm__odnn_plain_md(dnnl_memory_desc_t *md, int ndims, const dnnl_dim_t *dims, bkm_err_t *err)
{
    static const dnnl_format_tag_t tags[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
    int rc = BKM_OK;
    if (ndims < 1 || ndims > 5)
        return bkm_err_set(err, BKM_EINVAL, "plain memory descriptor: %d dimensions (1..5)", ndims);
    BKM_ODNN_TRY(dnnl_memory_desc_init_by_tag(md, ndims, dims, dnnl_f32, tags[ndims]));
out:
    return rc;
}
