/* SPDX-License-Identifier: MIT */
/* Private declarations shared by the runtime detection sources (runtime*.c, probe.c). */
#ifndef BKM_AFFINITY_RUNTIME_INT_H
#define BKM_AFFINITY_RUNTIME_INT_H

#include <sys/types.h>

#include "bkm/affinity/runtime.h"

/** The runtime a file name or SONAME names: "libgomp.so.1", "libgomp-a34b3233.so.1" (a bundled
 *  copy), "libomp.so.5", "libiomp5.so"; NONE for anything else, including libgomp's offloading
 *  plugins (libgomp-plugin-*), libompd, libgompd and libomptarget. */
bkm_aff_runtime_kind_t bkm__rt_kind_from_name(const char *name);

/** bkm_aff_runtime_classify_file, also giving the file's DT_SONAME (*soname: bkm_free; NULL when it
 *  has none; @p soname may be NULL). */
int bkm__rt_classify_path(const char *path, bkm_aff_runtime_kind_t *kind, char *how, size_t how_size, char **soname,
                          bkm_err_t *err);

/** Append one object to @p r (strings copied; @p soname, @p real may be NULL). Returns its index,
 *  or BKM_ENOMEM. */
int bkm__rt_result_add(bkm_aff_runtime_result_t *r, const char *name, const char *path, const char *real,
                       const char *soname, int parent, int depth, const char *via, bkm_aff_runtime_kind_t kind,
                       const char *how);
/** Append a warning (formatted); BKM_ENOMEM. */
int bkm__rt_result_warn(bkm_aff_runtime_result_t *r, const char *fmt, ...) BKM_PRINTF(2, 3);
/** Fill r->runtime, r->n_runtimes and, unless it is already UNKNOWN, r->kind from the objects;
 *  add the two-runtimes warning. BKM_ENOMEM. */
int bkm__rt_result_finish(bkm_aff_runtime_result_t *r);

#endif /* BKM_AFFINITY_RUNTIME_INT_H */
