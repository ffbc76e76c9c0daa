/* SPDX-License-Identifier: MIT */
/* Probe for the libgomp harness, built with gcc -fopenmp so that it runs on the real GNU libgomp:
 * one parallel region per nesting level, every thread records its place, its partition and the
 * mask it is bound to (read back from the fake-machine shim, tests/affinity/libomp/shim.c).
 *
 * usage: gomp_probe T1 [T2 [T3 [T4]]]     Ti = num_threads of the region at depth i, 0 = none
 * output (stdout, one JSON object):
 *   {"runtime":"/usr/lib/.../libgomp.so.1","initial":[cpus],"places":[[cpus],...],
 *    "threads":[{"path":"0.1","team_size":2,"place":1,"partition":[0,1],"cpus":[1]},...]}
 *   "initial" is the main thread's mask before the first region (after libgomp's constructor);
 *   "runtime" the file that provides omp_get_place_num (the harness checks it is libgomp).
 * Exit 0, 2 on bad usage, 3 when the shim is missing; libgomp itself exits 1 on a fatal error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_WORDS       32 /* 2048 CPUs, as BKM_FAKE_MAX in the shim */
#define PROBE_MAX_LEVELS  4
#define PROBE_MAX_RECORDS 70000

typedef int (*mask_fn_t)(uint64_t *words, int n_words);

typedef struct record {
    int path[PROBE_MAX_LEVELS];
    int depth, team_size, place, n_part;
    int *part;
    uint64_t mask[PROBE_WORDS];
} record_t;

static int g_levels;
static int g_threads[PROBE_MAX_LEVELS];
static record_t *g_rec;
static int g_n_rec;
static int g_overflow;
static mask_fn_t g_thread_mask;

static void print_words(const uint64_t *w)
{
    int first = 1;
    putchar('[');
    for (int i = 0; i < PROBE_WORDS * 64; i++)
        if (w[i / 64] >> (i % 64) & 1) {
            printf(first ? "%d" : ",%d", i);
            first = 0;
        }
    putchar(']');
}

static void record_me(int depth)
{
    int slot = __atomic_fetch_add(&g_n_rec, 1, __ATOMIC_RELAXED);
    if (slot >= PROBE_MAX_RECORDS) {
        __atomic_store_n(&g_overflow, 1, __ATOMIC_RELAXED);
        return;
    }
    record_t *r = &g_rec[slot];
    r->depth = depth;
    for (int l = 1; l <= depth; l++)
        r->path[l - 1] = omp_get_ancestor_thread_num(l);
    r->team_size = omp_get_num_threads();
    r->place = omp_get_place_num();
    r->n_part = omp_get_partition_num_places();
    r->part = r->n_part > 0 ? calloc((size_t)r->n_part, sizeof(int)) : NULL;
    if (r->part)
        omp_get_partition_place_nums(r->part);
    else
        r->n_part = 0;
    g_thread_mask(r->mask, PROBE_WORDS);
}

static void region(int depth);

static void body(int depth)
{
    record_me(depth);
    if (depth < g_levels)
        region(depth + 1);
}

static void region(int depth)
{
    if (g_threads[depth - 1] > 0) {
#pragma omp parallel num_threads(g_threads[depth - 1])
        body(depth);
    } else {
#pragma omp parallel
        body(depth);
    }
}

static int rec_cmp(const void *a, const void *b)
{
    const record_t *x = a, *y = b;
    for (int l = 0; l < PROBE_MAX_LEVELS; l++) {
        int u = l < x->depth ? x->path[l] : -1, v = l < y->depth ? y->path[l] : -1;
        if (u != v)
            return u < v ? -1 : 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t initial[PROBE_WORDS];
    Dl_info info;
    if (argc < 2 || argc > 1 + PROBE_MAX_LEVELS) {
        fprintf(stderr, "usage: gomp_probe T1 [T2 [T3 [T4]]] (Ti = num_threads at depth i, 0 = none)\n");
        return 2;
    }
    g_levels = argc - 1;
    for (int i = 0; i < g_levels; i++) {
        char *end;
        long v = strtol(argv[i + 1], &end, 10);
        if (*end || end == argv[i + 1] || v < 0 || v > 4096) {
            fprintf(stderr, "gomp_probe: '%s' is not a team size 0..4096\n", argv[i + 1]);
            return 2;
        }
        g_threads[i] = (int)v;
    }
    g_thread_mask = (mask_fn_t)dlsym(RTLD_DEFAULT, "bkm_shim_thread_mask");
    if (!g_thread_mask || g_thread_mask(initial, PROBE_WORDS) < 0) {
        fprintf(stderr, "gomp_probe: the shim is not preloaded or BKM_FAKE_NCPUS is not set\n");
        return 3;
    }
    g_rec = calloc(PROBE_MAX_RECORDS, sizeof(*g_rec));
    if (!g_rec) {
        fprintf(stderr, "gomp_probe: out of memory\n");
        return 3;
    }
    region(1);
    if (g_overflow) {
        fprintf(stderr, "gomp_probe: more than %d threads\n", PROBE_MAX_RECORDS);
        return 3;
    }
    qsort(g_rec, (size_t)g_n_rec, sizeof(*g_rec), rec_cmp);
    printf("{\"runtime\":\"%s\",\"initial\":",
           dladdr((void *)omp_get_place_num, &info) && info.dli_fname ? info.dli_fname : "");
    print_words(initial);
    printf(",\"places\":[");
    for (int p = 0; p < omp_get_num_places(); p++) {
        int n = omp_get_place_num_procs(p);
        int *ids = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
        printf(p ? ",[" : "[");
        if (ids) {
            omp_get_place_proc_ids(p, ids);
            for (int k = 0; k < n; k++)
                printf(k ? ",%d" : "%d", ids[k]);
        }
        putchar(']');
        free(ids);
    }
    printf("],\"threads\":[");
    for (int i = 0; i < g_n_rec; i++) {
        const record_t *r = &g_rec[i];
        printf("%s{\"path\":\"", i ? "," : "");
        for (int l = 0; l < r->depth; l++)
            printf(l ? ".%d" : "%d", r->path[l]);
        printf("\",\"team_size\":%d,\"place\":%d,\"partition\":[", r->team_size, r->place);
        for (int k = 0; k < r->n_part; k++)
            printf(k ? ",%d" : "%d", r->part[k]);
        printf("],\"cpus\":");
        print_words(r->mask);
        putchar('}');
    }
    printf("]}\n");
    return 0;
}
