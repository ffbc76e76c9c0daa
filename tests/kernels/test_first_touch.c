/* SPDX-License-Identifier: MIT */
/* First touch of the network executor's buffers: which OpenMP thread first wrote each page of the
 * input, parameters, gradients and the native engine's activations and input gradients.
 *
 * On a one-node machine the NUMA node of a page cannot tell threads apart, so the test watches the
 * touches themselves: while the executor is created, this program's posix_memalign (it interposes
 * the C library's, so bkm_aligned_alloc lands here) hands out fresh mappings without access; the
 * first write to each page faults, and the SIGSEGV handler records omp_get_thread_num() of the
 * faulting thread and opens the page. A buffer is first-touched "with the compute's schedule" when
 * every page is first written by a thread whose static chunk of the flat array overlaps that page
 * (the static schedule of `omp for` over the elements), and the second thread wrote some of them.
 * The FC layer's GEMM workspace is checked against the GEMM's own split (thread 0 packs at its
 * start, the last thread at its end), and the oneDNN engine's activations (allocated by oneDNN
 * through posix_memalign, zeroed by bkm) against the static schedule. The reference engine is
 * serial: the thread that computes on its buffers is the one that first writes them.
 * Interposing the allocator does not mix with ASan: labelled nosan. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "bkm/net.h"

#define MAX_REGIONS 128
#define TRACK_MIN_BYTES (16 * 4096)   /* smaller requests go to the C library */

typedef struct region {
    char *base;
    size_t bytes, map_bytes, pages;
    int *owner;   /* per page: the OpenMP thread that first wrote it, -1 = not yet */
    int live;
} region_t;

static region_t regions[MAX_REGIONS];
static int n_regions;
static volatile sig_atomic_t tracking;
static size_t page_bytes;
static int (*real_posix_memalign)(void **, size_t, size_t);
static void (*real_free)(void *);

static region_t *region_of(const void *p)
{
    for (int i = 0; i < n_regions; i++)
        if (regions[i].live && (const char *)p >= regions[i].base &&
            (const char *)p < regions[i].base + regions[i].map_bytes)
            return &regions[i];
    return NULL;
}

int posix_memalign(void **out, size_t alignment, size_t n)
{
    region_t *r;
    if (real_posix_memalign == NULL)
        real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    if (!tracking || n < TRACK_MIN_BYTES || n_regions >= MAX_REGIONS || alignment > page_bytes)
        return real_posix_memalign(out, alignment, n);
    r = &regions[n_regions];
    r->bytes = n;
    r->pages = (n + page_bytes - 1) / page_bytes;
    r->map_bytes = r->pages * page_bytes;
    r->base = mmap(NULL, r->map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r->base == MAP_FAILED)
        return real_posix_memalign(out, alignment, n);
    r->owner = malloc(r->pages * sizeof *r->owner);
    if (r->owner == NULL) {
        munmap(r->base, r->map_bytes);
        return real_posix_memalign(out, alignment, n);
    }
    for (size_t i = 0; i < r->pages; i++)
        r->owner[i] = -1;
    r->live = 1;
    n_regions++;
    *out = r->base;
    return 0;
}

void free(void *p)
{
    region_t *r = p ? region_of(p) : NULL;
    if (r != NULL && p == r->base) {
        munmap(r->base, r->map_bytes);
        r->live = 0;   /* its owner record stays for the checks */
        return;
    }
    if (real_free == NULL)
        real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    if (real_free)
        real_free(p);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    region_t *r = region_of(si->si_addr);
    size_t pg;
    (void)uc;
    if (r == NULL) {
        signal(sig, SIG_DFL);   /* a real fault: let it kill the test */
        return;
    }
    pg = (size_t)((char *)si->si_addr - r->base) / page_bytes;
    if (r->owner[pg] < 0)
        r->owner[pg] = omp_get_thread_num();
    mprotect(r->base + pg * page_bytes, page_bytes, PROT_READ | PROT_WRITE);
}

static void watch_start(void)
{
    struct sigaction sa;
    page_bytes = (size_t)sysconf(_SC_PAGESIZE);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    /* the team exists before the watch, so its own start-up allocations are not watched */
    omp_set_num_threads(2);
#pragma omp parallel
    {
        (void)omp_get_thread_num();
    }
    n_regions = 0;
    tracking = 1;
}

/* The static schedule of `omp for` over n elements on T threads (libomp: the first n % T threads
 * get one more), as [lo, hi) of thread t. */
static void static_chunk(size_t n, int T, int t, size_t *lo, size_t *hi)
{
    size_t q = n / (size_t)T, r = n % (size_t)T, tt = (size_t)t;
    *lo = tt * q + (tt < r ? tt : r);
    *hi = *lo + q + (tt < r ? 1 : 0);
}

/* 1 when every page of r was first written by a thread whose chunk of the r->bytes / esize
 * elements overlaps the page; *by_second counts the pages thread 1 wrote, *untouched those nobody
 * wrote. */
static int follows_static(const region_t *r, size_t esize, int T, size_t *by_second, size_t *untouched)
{
    size_t n = r->bytes / esize;
    *by_second = *untouched = 0;
    for (size_t pg = 0; pg < r->pages; pg++) {
        size_t e0 = pg * page_bytes / esize, e1 = ((pg + 1) * page_bytes + esize - 1) / esize;
        int ok = 0;
        if (r->owner[pg] < 0) {
            ++*untouched;
            continue;
        }
        *by_second += r->owner[pg] == 1;
        for (int t = 0; t < T; t++) {
            size_t lo, hi;
            static_chunk(n, T, t, &lo, &hi);
            if (r->owner[pg] == t && lo < e1 && e0 < hi)
                ok = 1;
        }
        if (!ok)
            return 0;
    }
    return 1;
}

static region_t *region_at(const void *p)
{
    region_t *r = region_of(p);
    ck_assert_msg(r != NULL && p == r->base, "buffer %p was not allocated through posix_memalign while watched", p);
    return r;
}

/* The instrument itself: a serial write is the master's everywhere, a parallel static loop splits. */
START_TEST(watch_tells_threads_apart)
{
    float *a = NULL, *b = NULL;
    const size_t n = 64 * 1024;
    size_t second, untouched;
    watch_start();
    ck_assert_int_eq(posix_memalign((void **)&a, 64, n * sizeof *a), 0);
    ck_assert_int_eq(posix_memalign((void **)&b, 64, n * sizeof *b), 0);
    memset(a, 0, n * sizeof *a);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        b[i] = 1.0f;
    tracking = 0;
    ck_assert(follows_static(region_at(b), sizeof(float), 2, &second, &untouched));
    ck_assert_uint_gt(second, 0);
    ck_assert_uint_eq(untouched, 0);
    ck_assert(!follows_static(region_at(a), sizeof(float), 2, &second, &untouched));
    ck_assert_uint_eq(second, 0);
    free(a);
    free(b);
}
END_TEST

/* conv (8 -> 16 channels, 64 x 64, batch 2), relu, max pool, fc: the input (256 KiB), parameters
 * and gradients (~650 KiB each), the conv output (512 KiB), the pool output (128 KiB) and the
 * input gradients of pool and fc are all several pages. */
static void first_touch_net(bkm_net_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->mb = 2, d->c = 8, d->h = 64, d->w = 64, d->lr = 0.01f;
    bkm_net_desc_add(d, BKM_NET_CONV, "conv1", 16, 3, 1, 1);
    bkm_net_desc_add(d, BKM_NET_RELU, "relu1", 0, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_MAXPOOL, "pool1", 0, 2, 2, 0);
    bkm_net_desc_add(d, BKM_NET_FC, "fc2", 10, 0, 0, 0);
    bkm_net_desc_add(d, BKM_NET_LOSS, "loss", 0, 0, 0, 0);
}

START_TEST(native_executor_buffers_touched_by_the_team)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    size_t second, untouched, n_act = 0, n_act_ok = 0;
    const void *own[3];
    first_touch_net(&d);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    watch_start();
    ck_assert_msg(bkm_net_exec_create(&ex, &net, BKM_NET_NATIVE, NULL, &err) == BKM_OK, "%s", err.msg);
    tracking = 0;
    own[0] = bkm_net_exec_input(ex, NULL);
    own[1] = bkm_net_exec_params(ex, NULL);
    own[2] = bkm_net_exec_grads(ex, NULL);
    for (int k = 0; k < 3; k++) {
        const region_t *r = region_at(own[k]);
        ck_assert_msg(follows_static(r, sizeof(float), 2, &second, &untouched),
                      "buffer %d (%zu bytes): a page was first written outside its static chunk", k, r->bytes);
        ck_assert_msg(second > 0, "buffer %d (%zu bytes): thread 1 first-touched none of %zu pages", k, r->bytes,
                      r->pages);
        ck_assert_uint_eq(untouched, 0);
    }
    /* the engine's activations (conv, pool and fc outputs) and input gradients (pool, fc): every
     * watched buffer of exactly that size */
    for (int i = 0; i < net.d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net.li[i];
        bkm_net_kind_t kd = net.d.layer[i].kind;
        size_t sizes[2] = {0, 0};
        if (kd != BKM_NET_CONV && kd != BKM_NET_MAXPOOL && kd != BKM_NET_FC)
            continue;
        sizes[0] = (size_t)(net.d.mb * li->out.c * li->out.d * li->out.h * li->out.w) * sizeof(float);
        if (li->need_bwd_d)
            sizes[1] = (size_t)(net.d.mb * li->in.c * li->in.d * li->in.h * li->in.w) * sizeof(float);
        for (int s = 0; s < 2; s++) {
            int found = 0;
            if (sizes[s] < TRACK_MIN_BYTES)
                continue;
            for (int q = 0; q < n_regions; q++) {
                if (regions[q].bytes != sizes[s] || regions[q].base == own[0] || regions[q].base == own[1] ||
                    regions[q].base == own[2])
                    continue;
                found = 1;
                n_act++;
                if (follows_static(&regions[q], sizeof(float), 2, &second, &untouched) && second > 0 &&
                    untouched == 0)
                    n_act_ok++;
                else
                    ck_abort_msg("layer %s: a %zu-byte buffer was not first-touched by the team (thread 1 wrote "
                                 "%zu of %zu pages)", net.d.layer[i].name, sizes[s], second, regions[q].pages);
            }
            ck_assert_msg(found, "layer %s: no %zu-byte buffer was allocated", net.d.layer[i].name, sizes[s]);
        }
    }
    ck_assert_uint_ge(n_act, 4);   /* conv out, pool out, pool in-gradient, fc in-gradient */
    ck_assert_uint_eq(n_act_ok, n_act);
    bkm_net_exec_destroy(ex);
}
END_TEST

/* The FC layer's GEMM workspace: [packed B of each JC group][packed A of each thread], zeroed by
 * the team as bkm_kern_sgemm splits it (bkm_kern_gemm_workspace_touch): with 2 threads thread 0
 * first writes the start (its group's packed B), thread 1 the end (its own packed A), every page
 * is written, and thread 1 a good share of them (the old memset by the master wrote all). */
START_TEST(fc_workspace_touched_by_the_team)
{
    bkm_fc_desc_t d = {.mb = 64, .in = 256, .out = 128, .has_bias = 1};
    bkm_kern_fc_t *fc = NULL;
    bkm_err_t err = {0};
    const region_t *ws = NULL;
    size_t by1 = 0;
    watch_start();
    ck_assert_msg(bkm_kern_fc_create(&fc, &d, NULL, &err) == BKM_OK, "%s", err.msg);
    tracking = 0;
    for (int q = 0; q < n_regions; q++)
        if (regions[q].live) {
            ck_assert_msg(ws == NULL, "fc_create allocated more than one large buffer");
            ws = &regions[q];
        }
    ck_assert_msg(ws != NULL, "no watched workspace (smaller than %d bytes?)", TRACK_MIN_BYTES);
    for (size_t pg = 0; pg < ws->pages; pg++) {
        ck_assert_msg(ws->owner[pg] >= 0, "workspace page %zu of %zu was never written", pg, ws->pages);
        by1 += ws->owner[pg] == 1;
    }
    ck_assert_int_eq(ws->owner[0], 0);
    ck_assert_msg(ws->owner[ws->pages - 1] == 1, "the last page (thread 1's packed A) was first written by %d",
                  ws->owner[ws->pages - 1]);
    ck_assert_msg(by1 * 8 >= ws->pages, "thread 1 first wrote %zu of %zu pages", by1, ws->pages);
    bkm_kern_fc_destroy(fc);
}
END_TEST

/* The oneDNN engine: its activations (conv and pool outputs, oneDNN-allocated) are zeroed by the
 * team under the static schedule: at least one buffer of each size follows it with thread 1
 * taking part (oneDNN's own scratch buffers may have the same size and are not ours to touch) */
START_TEST(onednn_executor_buffers_touched_by_the_team)
{
    bkm_net_desc_t d;
    bkm_net_t net;
    bkm_net_exec_t *ex = NULL;
    bkm_err_t err = {0};
    size_t second, untouched;
    first_touch_net(&d);
    ck_assert_int_eq(bkm_net_init(&net, &d, &err), BKM_OK);
    watch_start();
    ck_assert_msg(bkm_net_exec_create(&ex, &net, BKM_NET_ONEDNN, NULL, &err) == BKM_OK, "%s", err.msg);
    tracking = 0;
    for (int i = 0; i < net.d.n_layers; i++) {
        const bkm_net_layer_info_t *li = &net.li[i];
        bkm_net_kind_t kd = net.d.layer[i].kind;
        size_t bytes = (size_t)(net.d.mb * li->out.c * li->out.d * li->out.h * li->out.w) * sizeof(float);
        int ok = 0, seen = 0;
        if ((kd != BKM_NET_CONV && kd != BKM_NET_MAXPOOL) || bytes < TRACK_MIN_BYTES)
            continue;
        for (int q = 0; q < n_regions; q++)
            if (regions[q].bytes == bytes) {
                seen++;
                ok |= follows_static(&regions[q], sizeof(float), 2, &second, &untouched) && second > 0 &&
                      untouched == 0;
            }
        ck_assert_msg(seen > 0, "layer %s: no %zu-byte buffer was allocated through posix_memalign",
                      net.d.layer[i].name, bytes);
        ck_assert_msg(ok, "layer %s: none of %d %zu-byte buffers was first-touched by the team",
                      net.d.layer[i].name, seen, bytes);
    }
    bkm_net_exec_destroy(ex);
}
END_TEST

static Suite *first_touch_suite(void)
{
    Suite *s = suite_create("first_touch");
    TCase *tc = tcase_create("net");
    tcase_add_test(tc, watch_tells_threads_apart);
    tcase_add_test(tc, native_executor_buffers_touched_by_the_team);
    tcase_add_test(tc, fc_workspace_touched_by_the_team);
    tcase_add_test(tc, onednn_executor_buffers_touched_by_the_team);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(first_touch_suite)
