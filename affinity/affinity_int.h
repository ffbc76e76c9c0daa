/* SPDX-License-Identifier: MIT */
/* Private declarations shared by the affinity sources (not installed, not part of the API). */
#ifndef BKM_AFFINITY_INT_H
#define BKM_AFFINITY_INT_H

#include "bkm/affinity.h"

/** Overwrite the summary's source ("profile", ...) and, when @p isa is non-empty, its ISA. */
void bkm__topo_set_origin(bkm_topo_t *topo, const char *source, const char *isa);

#endif /* BKM_AFFINITY_INT_H */
