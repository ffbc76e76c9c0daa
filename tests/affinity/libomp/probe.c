/* SPDX-License-Identifier: MIT */
/* Probe for the fake-topology harness: runs one parallel region with N threads under the real
 * libomp and prints, as JSON in the shape of `tune affinity explain --json`, the mask each OpenMP
 * thread was bound to, read back from the LD_PRELOAD shim (shim.c).
 *
 * usage: probe N
 * output: {"threads":N,"bound":true|false,"plan":[{"thread":0,"cpus":[0]},...]}
 *   "bound" is true when at least one thread's mask differs from the initial process mask.
 * Exit 0 on success, 2 on bad usage, 3 when the shim is not preloaded/configured. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_WORDS 32 /* 2048 CPUs, as BKM_FAKE_MAX in shim.c */
#define PROBE_MAX_THREADS 4096

typedef int (*mask_fn_t)(uint64_t *words, int n_words);

static void print_mask(const uint64_t *w)
{
    int first = 1;
    putchar('[');
    for (int i = 0; i < PROBE_WORDS * 64; i++) {
        if (w[i / 64] >> (i % 64) & 1) {
            printf(first ? "%d" : ",%d", i);
            first = 0;
        }
    }
    putchar(']');
}

int main(int argc, char **argv)
{
    int rc = 0;
    uint64_t (*masks)[PROBE_WORDS] = NULL;
    char *end = NULL;
    long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || !end || *end || n < 1 || n > PROBE_MAX_THREADS) {
        fprintf(stderr, "usage: probe N (1..%d threads); got '%s'\n", PROBE_MAX_THREADS,
                argc > 1 ? argv[1] : "");
        return 2;
    }
    mask_fn_t thread_mask = (mask_fn_t)dlsym(RTLD_DEFAULT, "bkm_shim_thread_mask");
    mask_fn_t initial_mask = (mask_fn_t)dlsym(RTLD_DEFAULT, "bkm_shim_initial_mask");
    uint64_t initial[PROBE_WORDS];
    if (!thread_mask || !initial_mask || initial_mask(initial, PROBE_WORDS) < 0) {
        fprintf(stderr, "probe: the shim is not preloaded or BKM_FAKE_NCPUS is not set\n");
        return 3;
    }
    masks = calloc((size_t)n, sizeof(*masks));
    if (!masks) {
        fprintf(stderr, "probe: out of memory for %ld threads\n", n);
        return 3;
    }
    int got = 0;
#pragma omp parallel num_threads(n)
    {
        int t = omp_get_thread_num();
        thread_mask(masks[t], PROBE_WORDS);
#pragma omp single
        got = omp_get_num_threads();
    }
    if (got != n) {
        fprintf(stderr, "probe: asked for %ld threads, the runtime gave %d\n", n, got);
        rc = 3;
        goto out;
    }
    int bound = 0;
    for (long t = 0; t < n; t++)
        if (memcmp(masks[t], initial, sizeof(initial)) != 0)
            bound = 1;
    printf("{\"threads\":%ld,\"bound\":%s,\"plan\":[", n, bound ? "true" : "false");
    for (long t = 0; t < n; t++) {
        printf("%s{\"thread\":%ld,\"cpus\":", t ? "," : "", t);
        print_mask(masks[t]);
        putchar('}');
    }
    printf("]}\n");
out:
    free(masks);
    return rc;
}
