/* SPDX-License-Identifier: MIT */
/* Binding probe: what the kernel says about every thread of an OpenMP team, which other threads
 * the process has, and which OpenMP runtimes are mapped (docs/affinity.md §3.1, §3.2). */
#include "affinity_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <omp.h>

/* Spin long enough (~2 ms) for the scheduler to place a runnable thread on a CPU it may use. */
#define PROBE_SPIN_NS 2000000ull

static void mask_from_cpuset(const cpu_set_t *cs, bkm_cpuset_t *out)
{
    bkm_cpuset_zero(out);
    for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
        if (CPU_ISSET(c, cs))
            bkm_cpuset_set(out, c);
}

/* Inside the parallel region: no allocation, no printing, only syscalls and the omp_* queries. */
static void record_self(bkm_aff_probe_t *p)
{
    int me = omp_get_thread_num();
    bkm_aff_probe_thread_t *t = &p->thread[me];
    cpu_set_t cs;
    t->omp_thread = me;
    t->tid = (int)syscall(SYS_gettid);
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof(cs), &cs) == 0)
        mask_from_cpuset(&cs, &t->mask);
    uint64_t end = bkm_now_ns() + PROBE_SPIN_NS;
    volatile unsigned sink = 0;
    while (bkm_now_ns() < end)
        sink++;
    t->cpu = sched_getcpu();
    t->place = omp_get_place_num();
}

static int read_small_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

/* Cpus_allowed_list and comm of task @p tid. */
static void read_task(int tid, bkm_aff_probe_foreign_t *f)
{
    char path[64], buf[4096];
    f->tid = tid;
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    if (read_small_file(path, buf, sizeof(f->name)) == 0) {
        buf[strcspn(buf, "\n")] = '\0';
        snprintf(f->name, sizeof(f->name), "%s", buf);
    }
    bkm_cpuset_zero(&f->mask);
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
    if (read_small_file(path, buf, sizeof(buf)) != 0)
        return;
    char *line = strstr(buf, "Cpus_allowed_list:");
    if (!line)
        return;
    line += strlen("Cpus_allowed_list:");
    line[strcspn(line, "\n")] = '\0';
    bkm_cpuset_parse(&f->mask, line, NULL);
}

static int in_team(const bkm_aff_probe_t *p, int tid)
{
    for (int i = 0; i < p->n_threads; i++)
        if (p->thread[i].tid == tid)
            return 1;
    return 0;
}

static int list_foreign(bkm_aff_probe_t *p, bkm_err_t *err)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return bkm_err_set(err, BKM_EIO, "cannot list /proc/self/task: %s", strerror(errno));
    int rc = BKM_OK, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long long tid;
        if (bkm_parse_int(e->d_name, 1, INT_MAX, &tid) != BKM_OK)
            continue;
        p->n_tasks++;
        if (tid == p->caller_tid || in_team(p, (int)tid))
            continue;
        if (p->n_foreign == cap) {
            int ncap = cap ? 2 * cap : 8;
            void *q = bkm_realloc(p->foreign, (size_t)ncap * sizeof(*p->foreign));
            if (!q) {
                rc = bkm_err_set(err, BKM_ENOMEM, "out of memory listing threads");
                goto out;
            }
            p->foreign = q;
            cap = ncap;
        }
        bkm_aff_probe_foreign_t *f = &p->foreign[p->n_foreign++];
        memset(f, 0, sizeof(*f));
        read_task((int)tid, f);
    }
out:
    closedir(d);
    return rc;
}

/* The OpenMP runtimes mapped in this process: the one maps parser and classifier of
 * bkm_aff_runtime_detect_pid (a file counts by what it is, so a libgomp.so.1 link to libomp is
 * libomp). */
static int scan_maps(bkm_aff_probe_t *p, bkm_err_t *err)
{
    bkm_aff_runtime_result_t r;
    int rc;
    bkm_aff_runtime_result_init(&r);
    if ((rc = bkm_aff_runtime_detect_pid(0, NULL, &r, err)) < 0)
        return rc;
    for (int k = 0; k < r.n_runtimes; k++) {
        const bkm_aff_runtime_obj_t *o = &r.obj[r.runtime[k]];
        size_t used = strlen(p->runtimes);
        p->has_libomp |= o->kind == BKM_AFF_RUNTIME_LIBOMP;
        p->has_libgomp |= o->kind == BKM_AFF_RUNTIME_LIBGOMP;
        p->has_libiomp5 |= o->kind == BKM_AFF_RUNTIME_LIBIOMP5;
        snprintf(p->runtimes + used, sizeof(p->runtimes) - used, "%s%s", used ? ";" : "", o->real);
    }
    bkm_aff_runtime_result_free(&r);
    return BKM_OK;
}

int bkm_aff_probe_run(int n_threads, bkm_aff_probe_t **probe, bkm_err_t *err)
{
    bkm_aff_probe_t *p = NULL;
    int rc;
    if (!probe)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_probe_run: probe is NULL");
    *probe = NULL;
    if (n_threads < 1 || n_threads > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "probe thread count %d is out of range 1..%d", n_threads, BKM_CPUSET_MAX);
    if (omp_in_parallel())
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_probe_run called inside a parallel region");
    p = bkm_calloc(1, sizeof(*p));
    if (!p || !(p->thread = bkm_calloc((size_t)n_threads, sizeof(*p->thread)))) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for a %d-thread probe", n_threads);
        goto out;
    }
    p->requested = n_threads;
    p->caller_tid = (int)syscall(SYS_gettid);
    for (int i = 0; i < n_threads; i++)
        p->thread[i].omp_thread = -1;

#pragma omp parallel num_threads(n_threads)
    {
#pragma omp single
        p->n_threads = omp_get_num_threads();
        /* implicit barrier: the whole team exists before anyone spins */
        record_self(p);
    }
    p->num_places = omp_get_num_places();
    cpu_set_t cs;
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof(cs), &cs) == 0)
        mask_from_cpuset(&cs, &p->caller_mask_after);
    if ((rc = list_foreign(p, err)) < 0 || (rc = scan_maps(p, err)) < 0)
        goto out;
    *probe = p;
    p = NULL;
    rc = BKM_OK;
out:
    bkm_aff_probe_free(p);
    return rc;
}

void bkm_aff_probe_free(bkm_aff_probe_t *probe)
{
    if (!probe)
        return;
    bkm_free(probe->thread);
    bkm_free(probe->foreign);
    bkm_free(probe);
}

int bkm_aff_probe_check_single_runtime(const bkm_aff_probe_t *probe, bkm_err_t *err)
{
    if (!probe)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_probe_check_single_runtime: probe is NULL");
    if (probe->has_libomp && !probe->has_libgomp && !probe->has_libiomp5)
        return BKM_OK;
    return bkm_err_set(err, BKM_EVERIFY, "expected exactly one OpenMP runtime (LLVM libomp), found: %s",
                       probe->runtimes[0] ? probe->runtimes : "none");
}

static void json_mask(bkm_json_w_t *w, const bkm_cpuset_t *s)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(s, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_buf_free(&b);
}

int bkm_aff_probe_to_json(const bkm_aff_probe_t *p, bkm_json_w_t *w, bkm_err_t *err)
{
    if (!p || !w)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_probe_to_json: NULL argument");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "requested"), bkm_json_int(w, p->requested);
    bkm_json_key(w, "threads"), bkm_json_int(w, p->n_threads);
    bkm_json_key(w, "num_places"), bkm_json_int(w, p->num_places);
    bkm_json_key(w, "caller_tid"), bkm_json_int(w, p->caller_tid);
    bkm_json_key(w, "caller_mask_after"), json_mask(w, &p->caller_mask_after);
    bkm_json_key(w, "team");
    bkm_json_arr_begin(w);
    for (int i = 0; i < p->n_threads; i++) {
        const bkm_aff_probe_thread_t *t = &p->thread[i];
        bkm_json_obj_begin(w);
        bkm_json_key(w, "thread"), bkm_json_int(w, t->omp_thread);
        bkm_json_key(w, "tid"), bkm_json_int(w, t->tid);
        bkm_json_key(w, "cpu"), bkm_json_int(w, t->cpu);
        bkm_json_key(w, "place"), bkm_json_int(w, t->place);
        bkm_json_key(w, "mask"), json_mask(w, &t->mask);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "tasks"), bkm_json_int(w, p->n_tasks);
    bkm_json_key(w, "foreign");
    bkm_json_arr_begin(w);
    for (int i = 0; i < p->n_foreign; i++) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "tid"), bkm_json_int(w, p->foreign[i].tid);
        bkm_json_key(w, "name"), bkm_json_str(w, p->foreign[i].name);
        bkm_json_key(w, "mask"), json_mask(w, &p->foreign[i].mask);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "runtimes");
    bkm_json_arr_begin(w);
    char buf[sizeof(p->runtimes)];
    snprintf(buf, sizeof(buf), "%s", p->runtimes);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
        bkm_json_str(w, tok);
    bkm_json_arr_end(w);
    bkm_json_key(w, "libomp"), bkm_json_bool(w, p->has_libomp);
    bkm_json_key(w, "libgomp"), bkm_json_bool(w, p->has_libgomp);
    bkm_json_key(w, "libiomp5"), bkm_json_bool(w, p->has_libiomp5);
    bkm_json_obj_end(w);
    if (w->out && w->out->oom)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory writing probe JSON");
    return BKM_OK;
}
