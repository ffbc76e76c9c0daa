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

#endif /* BKM_AFFINITY_INT_H */
