/* SPDX-License-Identifier: MIT */
/* Shared by the benchmarks: the per-layer, per-direction table of two workloads of the same
 * network (native and oneDNN, built with layers=1) side by side, from bkm_wl_layers_json (prints
 * to stdout; asserts nothing), and the host's cache sizes for the native kernels' blocking. */
#ifndef BKM_BENCH_COMMON_H
#define BKM_BENCH_COMMON_H

#include <stdint.h>

#include "bkm/workloads.h"

/** Print one row per layer and direction: native ms, oneDNN ms, oneDNN ms / native ms (the
 *  speed ratio). Either workload may be NULL (its column then reads 0). */
void bkm_bench_print_layers(const bkm_wl_t *native, const bkm_wl_t *onednn);

/** Cache sizes of this host (hwloc; one instance of L1d, L2, L3; 0 where unknown). Call before the
 *  first OpenMP parallel region (bkm_topo_open_host). Prints nothing; zeros when hwloc fails. */
void bkm_bench_host_caches(int64_t *l1d, int64_t *l2, int64_t *l3);

#endif
