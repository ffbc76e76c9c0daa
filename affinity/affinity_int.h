/* SPDX-License-Identifier: MIT */
/* Private declarations shared by the affinity sources (not installed, not part of the API). */
#ifndef BKM_AFFINITY_INT_H
#define BKM_AFFINITY_INT_H

#include "bkm/affinity.h"

/** Overwrite the summary's source ("profile", ...) and, when @p isa is non-empty, its ISA. */
void bkm__topo_set_origin(bkm_topo_t *topo, const char *source, const char *isa);

/** 1 when the "NAME=value" string @p kv sets a variable that steers an OpenMP runtime's affinity
 *  or topology (KMP_AFFINITY, ..., KMP_TOPOLOGY_METHOD, KMP_CPUINFO_FILE, OMP_NUM_THREADS): those
 *  are removed from a probe child's environment before bkm adds its own. */
int bkm__aff_is_runtime_var(const char *kv);

/** Run @p exe with @p argv and @p envp (stdin /dev/null) and capture what it writes on descriptor
 *  @p fd (1: stdout, 2: stderr; the other one goes to /dev/null when @p fd is 2) into @p out,
 *  keeping at most @p cap bytes. *status gets its wait status. @p what names the child in errors.
 *  @return BKM_OK (whatever the child's exit), BKM_EIO (pipe/fork), BKM_ENOMEM. */
int bkm__aff_child_capture(const char *what, const char *exe, char *const argv[], char *const envp[], int fd,
                           size_t cap, bkm_buf_t *out, int *status, bkm_err_t *err);

#endif /* BKM_AFFINITY_INT_H */
