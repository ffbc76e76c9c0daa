/* SPDX-License-Identifier: MIT */
/* Private helpers shared by the oneDNN backend files (onednn_*.c) only: status mapping, memory
 * and reorder creation, user-managed scratchpads. Nothing here runs inside a timed region except
 * what the callers choose to execute there. */
#ifndef BKM_ONEDNN_INT_H
#define BKM_ONEDNN_INT_H

#include <oneapi/dnnl/dnnl.h>

#include "backend_int.h"

/* Map a dnnl_status_t (passed as int) to a BKM code with a message naming @p what. */
int bkm__kern_onednn_status(int st, const char *what, bkm_err_t *err);

/* Evaluate a dnnl call; on failure map its status (naming the call) and jump to `out`. Needs
 * `int rc` and `bkm_err_t *err` in scope. */
#define BKM_ODNN_TRY(call)                                                                    \
    do {                                                                                      \
        dnnl_status_t st_ = (call);                                                           \
        if (st_ != dnnl_success) {                                                            \
            rc = bkm__kern_onednn_status((int)st_, #call, err);                                \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)

/* Memory object over @p handle (NULL: oneDNN allocates it, zero-filled here). Untimed. */
int bkm__odnn_mem(dnnl_memory_t *mem, const dnnl_memory_desc_t *md, dnnl_engine_t eng, void *handle,
                  bkm_err_t *err);
/* Reorder primitive src_md -> dst_md on @p eng. Untimed. */
int bkm__odnn_reorder(dnnl_primitive_t *prim, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                      dnnl_engine_t eng, bkm_err_t *err);
/* Attribute with a user-managed scratchpad, so that no primitive allocates while it executes. */
int bkm__odnn_attr(dnnl_primitive_attr_t *attr, bkm_err_t *err);
/* Scratchpad memory for @p pd (NULL *mem when the primitive needs none). */
int bkm__odnn_scratch(dnnl_memory_t *mem, const_dnnl_primitive_desc_t pd, dnnl_engine_t eng, bkm_err_t *err);
/* "onednn:<impl_info_str>" of @p pd into @p buf (e.g. "onednn:jit:avx512_core"). */
void bkm__odnn_impl_name(const_dnnl_primitive_desc_t pd, char *buf, size_t n);
/* Plain descriptor ("abcd..." order) of @p ndims dims. */
int bkm__odnn_plain_md(dnnl_memory_desc_t *md, int ndims, const dnnl_dim_t *dims, bkm_err_t *err);

#endif /* BKM_ONEDNN_INT_H */
