/* SPDX-License-Identifier: MIT */
/* Shared by the network benchmarks (bench_alexnet, bench_conv3d): the per-layer, per-direction
 * table of two workloads of the same network (native and oneDNN, built with layers=1) side by
 * side, from bkm_wl_layers_json. Prints to stdout; asserts nothing. */
#ifndef BKM_BENCH_LAYERS_H
#define BKM_BENCH_LAYERS_H

#include "bkm/workloads.h"

/** Print one row per layer and direction: native ms, oneDNN ms, oneDNN ms / native ms (the
 *  speed ratio). Either workload may be NULL (its column then reads 0). */
void bkm_bench_print_layers(const bkm_wl_t *native, const bkm_wl_t *onednn);

#endif
