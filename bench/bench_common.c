/* SPDX-License-Identifier: MIT */
/* Helpers of the benchmarks (see bench_common.h). */
#include "bench_common.h"

#include <stdio.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/common.h"

enum { L_NATIVE, L_ONEDNN, L_COUNT };

void bkm_bench_print_layers(const bkm_wl_t *native, const bkm_wl_t *onednn)
{
    const bkm_wl_t *wl[L_COUNT] = {native, onednn};
    bkm_json_t *j[L_COUNT] = {NULL, NULL};
    bkm_err_t err = {0};
    const bkm_json_t *rows;
    double sum[L_COUNT] = {0.0, 0.0};
    for (int b = 0; b < L_COUNT; b++) {
        bkm_buf_t buf;
        bkm_buf_init(&buf);
        if (wl[b] && bkm_wl_layers_json(wl[b], &buf) == 1 && !buf.oom && buf.data)
            (void)bkm_json_parse(buf.data, &j[b], &err);
        bkm_buf_free(&buf);
    }
    if (!(rows = j[L_NATIVE] ? j[L_NATIVE] : j[L_ONEDNN]))
        goto out;
    printf("\nper layer and direction, ms per step (iteration) after the first (nat/dnn: oneDNN ms / native ms)\n"
           "%-14s %-6s %10s %10s %8s\n",
           "layer", "dir", "native", "onednn", "nat/dnn");
    for (size_t i = 0; i < rows->n_children; i++) {
        const bkm_json_t *r = bkm_json_at(rows, i);
        const char *name = bkm_json_get_str(r, "layer"), *dir = bkm_json_get_str(r, "direction");
        double ms[L_COUNT] = {0.0, 0.0};
        char ratio[32] = "-";
        for (int b = 0; b < L_COUNT; b++)
            for (size_t k = 0; j[b] && name && dir && k < j[b]->n_children; k++) {
                const bkm_json_t *o = bkm_json_at(j[b], k);
                const char *n2 = bkm_json_get_str(o, "layer"), *d2 = bkm_json_get_str(o, "direction");
                if (n2 && d2 && !strcmp(n2, name) && !strcmp(d2, dir))
                    ms[b] = bkm_json_get_num(o, "ms", 0.0);
            }
        for (int b = 0; b < L_COUNT; b++)
            sum[b] += ms[b];
        if (ms[L_NATIVE] > 0.0 && ms[L_ONEDNN] > 0.0)
            snprintf(ratio, sizeof ratio, "%.2f", ms[L_ONEDNN] / ms[L_NATIVE]);
        printf("%-14s %-6s %10.2f %10.2f %8s\n", name ? name : "?", dir ? dir : "?", ms[L_NATIVE], ms[L_ONEDNN],
               ratio);
    }
    if (sum[L_NATIVE] > 0.0 && sum[L_ONEDNN] > 0.0)
        printf("%-14s %-6s %10.2f %10.2f %8.2f\n", "sum", "", sum[L_NATIVE], sum[L_ONEDNN],
               sum[L_ONEDNN] / sum[L_NATIVE]);
out:
    for (int b = 0; b < L_COUNT; b++)
        bkm_json_free(j[b]);
}

void bkm_bench_host_caches(int64_t *l1d, int64_t *l2, int64_t *l3)
{
    bkm_topo_t *topo = NULL;
    bkm_err_t err = {0};
    if (bkm_topo_open_host(&topo, &err) < 0)
        topo = NULL; /* the kernels then use their built-in defaults */
    bkm_topo_cache_sizes(topo, l1d, l2, l3);
    bkm_topo_close(topo);
}
