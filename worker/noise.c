/* SPDX-License-Identifier: MIT */
/* Noise evidence of a trial from the operating system: per OpenMP thread getrusage(RUSAGE_THREAD)
 * and /proc/self/task/<tid>/{schedstat,sched}, per process getrusage(RUSAGE_SELF) and the steal
 * time of /proc/stat; each value under the source it came from, a source that cannot be read
 * "unavailable" with the reason. Snapshots are taken before and after the timed region; the
 * region itself is never touched (no allocation: every buffer is on the stack or allocated at
 * open). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bkm/worker.h"

#define NOISE_WHY 128
#define NOISE_PATH 512

/* ---------------------------------------------------------------------------------------- */
/* Parsers                                                                                   */

/* Parse up to @p max unsigned fields after the label of one /proc/stat line; returns the count. */
static int stat_fields(const char *p, uint64_t *v, int max)
{
    int n = 0;
    while (n < max) {
        char *end;
        unsigned long long x;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            break;
        errno = 0;
        x = strtoull(p, &end, 10);
        if (errno != 0 || end == p)
            break;
        v[n++] = (uint64_t)x;
        p = end;
    }
    return n;
}

int bkm_tune_noise_parse_stat(const char *text, const bkm_cpuset_t *cpus, bkm_tune_stat_ticks_t *out,
                              bkm_err_t *err)
{
    bkm_cpuset_t seen;
    const char *line = text;
    memset(out, 0, sizeof *out);
    bkm_cpuset_zero(&seen);
    if (text == NULL)
        return bkm_err_set(err, BKM_EINVAL, "/proc/stat: no text");
    while (*line) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, "cpu", 3) == 0) {
            const char *p = line + 3;
            int cpu = -1, want;
            uint64_t v[8];
            int nf;
            if (*p >= '0' && *p <= '9') {
                char *end;
                long c = strtol(p, &end, 10);
                if (c < 0 || c >= BKM_CPUSET_MAX)
                    return bkm_err_set(err, BKM_EINVAL, "/proc/stat: CPU number in '%.40s' out of range", line);
                cpu = (int)c;
                p = end;
            } else if (*p != ' ') {
                goto next;
            }
            want = cpus == NULL ? cpu < 0 : cpu >= 0 && bkm_cpuset_isset(cpus, cpu);
            if (!want)
                goto next;
            nf = stat_fields(p, v, 8);
            if (nf < 4)
                return bkm_err_set(err, BKM_EINVAL, "/proc/stat: line '%.40s' has %d numbers, at least 4 expected",
                                   line, nf);
            if (nf < 8)
                return bkm_err_set(err, BKM_ENOTSUP, "/proc/stat: line '%.40s' has no steal field (%d fields; "
                                   "the kernel predates 2.6.11)", line, nf);
            out->steal += v[7];
            for (int i = 0; i < 8; i++)
                out->total += v[i];
            out->cpus++;
            if (cpu >= 0)
                bkm_cpuset_set(&seen, cpu);
        }
    next:
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    if (cpus == NULL && out->cpus == 0)
        return bkm_err_set(err, BKM_EINVAL, "/proc/stat: no aggregate 'cpu' line");
    if (cpus != NULL) {
        for (int c = bkm_cpuset_first(cpus); c >= 0; c = bkm_cpuset_next(cpus, c))
            if (!bkm_cpuset_isset(&seen, c))
                return bkm_err_set(err, BKM_EINVAL, "/proc/stat: no line for cpu%d", c);
    }
    return BKM_OK;
}

int bkm_tune_noise_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices,
                                   bkm_err_t *err)
{
    uint64_t v[3];
    if (text == NULL || stat_fields(text, v, 3) != 3)
        return bkm_err_set(err, BKM_EINVAL, "schedstat: '%.60s' is not three numbers (run_ns wait_ns timeslices)",
                           text ? text : "(null)");
    *run_ns = v[0], *wait_ns = v[1], *slices = v[2];
    return BKM_OK;
}

int bkm_tune_noise_parse_sched(const char *text, const char *field, long long *value, bkm_err_t *err)
{
    size_t fl = strlen(field);
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n'), *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, field, fl) == 0 && (p[fl] == ' ' || p[fl] == '\t' || p[fl] == ':')) {
            char *end;
            long long x;
            p += fl;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ':')
                return bkm_err_set(err, BKM_EINVAL, "sched: field %s has no ':'", field);
            p++;
            errno = 0;
            x = strtoll(p, &end, 10);
            if (errno != 0 || end == p || (*end != '\n' && *end != '\0' && *end != ' ' && *end != '\r'))
                return bkm_err_set(err, BKM_EINVAL, "sched: field %s: '%.30s' is not an integer", field, p);
            *value = x;
            return BKM_OK;
        }
        line = nl ? nl + 1 : NULL;
    }
    return bkm_err_set(err, BKM_ENOTSUP, "sched: no field %s (kernel without it)", field);
}

/* ---------------------------------------------------------------------------------------- */
/* Session                                                                                   */

/* One snapshot of one thread. */
typedef struct noise_snap {
    uint64_t t_ns;
    struct rusage ru;
    int ru_ok;
    uint64_t run_ns, wait_ns, slices;
    int ss_ok;
    long long migrations;
    int sc_ok;
    int cpu;
} noise_snap_t;

typedef struct noise_slot {
    int tid;
    int begun, ended;
    noise_snap_t a, b;
    bkm_cpuset_t mask;         /* the thread's affinity at begin */
    char why_ru[NOISE_WHY], why_ss[NOISE_WHY], why_sc[NOISE_WHY];
} noise_slot_t;

struct bkm_tune_noise {
    int n;
    noise_slot_t *slot;
    char root[256];
    double threshold;
    /* process */
    uint64_t t0_ns, t1_ns;
    struct rusage pa, pb;
    int p_ok;
    char why_p[NOISE_WHY];
    bkm_cpuset_t cpus;         /* union of the threads' masks */
    bkm_tune_stat_ticks_t sa, sb;
    char *stat_buf;            /* /proc/stat text, allocated at open */
    size_t stat_cap;
    int st_ok;
    char why_st[NOISE_WHY];
    int done;
    double share, wait_share, steal_share;
    int worst_thread;
    int disturbed;
};

/* Read @p path into @p buf (NUL-terminated) with open/read/close only. */
static int noise_read(const char *path, char *buf, size_t n, char *why)
{
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, NOISE_WHY, "%.80s: %s", path, strerror(errno));
        return -1;
    }
    while (len + 1 < n) {
        ssize_t got = read(fd, buf + len, n - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, NOISE_WHY, "%.80s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    return 0;
}

int bkm_tune_noise_open(bkm_tune_noise_t **out, int threads, const char *proc_root, double share_threshold,
                        bkm_err_t *err)
{
    bkm_tune_noise_t *n;
    *out = NULL;
    if (threads < 1 || threads > BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "noise: thread count %d out of range 1..%d", threads, BKM_CPUSET_MAX);
    if (!(share_threshold <= 1.0))
        return bkm_err_set(err, BKM_EINVAL, "noise: disturbed share %g out of range (0, 1]", share_threshold);
    if (proc_root == NULL)
        proc_root = "/proc";
    if (strlen(proc_root) >= sizeof n->root)
        return bkm_err_set(err, BKM_EINVAL, "noise: procfs path '%.60s...' too long", proc_root);
    if ((n = bkm_calloc(1, sizeof *n)) == NULL || (n->slot = bkm_calloc((size_t)threads, sizeof *n->slot)) == NULL) {
        bkm_free(n);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for the noise session of %d threads", threads);
    }
    /* /proc/stat grows with the CPU count: about 100 bytes per CPU line */
    n->stat_cap = 4096 + (size_t)BKM_CPUSET_MAX * 128;
    if ((n->stat_buf = bkm_malloc(n->stat_cap)) == NULL) {
        bkm_free(n->slot);
        bkm_free(n);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for the noise session of %d threads", threads);
    }
    n->n = threads;
    snprintf(n->root, sizeof n->root, "%s", proc_root);
    n->threshold = share_threshold > 0 ? share_threshold : BKM_TUNE_NOISE_SHARE_DEFAULT;
    n->share = n->wait_share = n->steal_share = NAN;
    n->disturbed = -1;
    n->worst_thread = -1;
    *out = n;
    return BKM_OK;
}

static void noise_snap_thread(const bkm_tune_noise_t *n, noise_slot_t *s, noise_snap_t *x)
{
    char path[NOISE_PATH], buf[8192];
    bkm_err_t e = {0};
    x->cpu = sched_getcpu();
    x->ru_ok = getrusage(RUSAGE_THREAD, &x->ru) == 0;
    if (!x->ru_ok)
        snprintf(s->why_ru, NOISE_WHY, "getrusage(RUSAGE_THREAD): %s", strerror(errno));
    snprintf(path, sizeof path, "%s/self/task/%d/schedstat", n->root, s->tid);
    x->ss_ok = noise_read(path, buf, sizeof buf, s->why_ss) == 0;
    if (x->ss_ok && bkm_tune_noise_parse_schedstat(buf, &x->run_ns, &x->wait_ns, &x->slices, &e) < 0) {
        x->ss_ok = 0;
        snprintf(s->why_ss, NOISE_WHY, "%s", e.msg);
    }
    snprintf(path, sizeof path, "%s/self/task/%d/sched", n->root, s->tid);
    x->sc_ok = noise_read(path, buf, sizeof buf, s->why_sc) == 0;
    if (x->sc_ok && bkm_tune_noise_parse_sched(buf, "se.nr_migrations", &x->migrations, &e) < 0) {
        x->sc_ok = 0;
        snprintf(s->why_sc, NOISE_WHY, "%s", e.msg);
    }
    x->t_ns = bkm_now_ns();
}

void bkm_tune_noise_thread_begin(bkm_tune_noise_t *n, int t)
{
    noise_slot_t *s;
    cpu_set_t cs;
    if (n == NULL || t < 0 || t >= n->n)
        return;
    s = &n->slot[t];
    s->tid = (int)syscall(SYS_gettid);
    bkm_cpuset_zero(&s->mask);
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof cs, &cs) == 0)
        for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
            if (CPU_ISSET(c, &cs))
                bkm_cpuset_set(&s->mask, c);
    s->why_ru[0] = s->why_ss[0] = s->why_sc[0] = '\0';
    noise_snap_thread(n, s, &s->a);
    s->begun = 1;
    s->ended = 0;
}

void bkm_tune_noise_thread_end(bkm_tune_noise_t *n, int t)
{
    noise_slot_t *s;
    if (n == NULL || t < 0 || t >= n->n || !n->slot[t].begun)
        return;
    s = &n->slot[t];
    if ((int)syscall(SYS_gettid) != s->tid) {
        /* another thread took this index: its values would be someone else's */
        snprintf(s->why_ru, NOISE_WHY, "OpenMP thread %d ran on another kernel thread after the region", t);
        snprintf(s->why_ss, NOISE_WHY, "%s", s->why_ru);
        snprintf(s->why_sc, NOISE_WHY, "%s", s->why_ru);
        s->a.ru_ok = s->a.ss_ok = s->a.sc_ok = 0;
    }
    noise_snap_thread(n, s, &s->b);
    s->ended = 1;
}

static void noise_stat_snap(bkm_tune_noise_t *n, bkm_tune_stat_ticks_t *out)
{
    char path[NOISE_PATH];
    bkm_err_t e = {0};
    char *buf = n->stat_buf;
    if (!n->st_ok)
        return;
    snprintf(path, sizeof path, "%s/stat", n->root);
    if (noise_read(path, buf, n->stat_cap, n->why_st) < 0) {
        n->st_ok = 0;
    } else if (bkm_tune_noise_parse_stat(buf, bkm_cpuset_is_empty(&n->cpus) ? NULL : &n->cpus, out, &e) < 0) {
        n->st_ok = 0;
        snprintf(n->why_st, NOISE_WHY, "%s", e.msg);
    }
}

void bkm_tune_noise_process_begin(bkm_tune_noise_t *n)
{
    if (n == NULL)
        return;
    n->done = 0;
    bkm_cpuset_zero(&n->cpus);
    for (int t = 0; t < n->n; t++)
        if (n->slot[t].begun)
            bkm_cpuset_or(&n->cpus, &n->slot[t].mask);
    n->p_ok = getrusage(RUSAGE_SELF, &n->pa) == 0;
    if (!n->p_ok)
        snprintf(n->why_p, NOISE_WHY, "getrusage(RUSAGE_SELF): %s", strerror(errno));
    n->st_ok = 1;
    n->why_st[0] = '\0';
    noise_stat_snap(n, &n->sa);
    n->t0_ns = bkm_now_ns();
}

static double tv_s(const struct timeval *a)
{
    return (double)a->tv_sec + (double)a->tv_usec * 1e-6;
}

static double ru_cpu_s(const struct rusage *a, const struct rusage *b)
{
    return tv_s(&b->ru_utime) - tv_s(&a->ru_utime) + tv_s(&b->ru_stime) - tv_s(&a->ru_stime);
}

static int slot_ok(const noise_slot_t *s, int which)
{
    if (!s->begun || !s->ended)
        return 0;
    switch (which) {
    case 0: return s->a.ru_ok && s->b.ru_ok;
    case 1: return s->a.ss_ok && s->b.ss_ok;
    default: return s->a.sc_ok && s->b.sc_ok;
    }
}

static double slot_wall_s(const noise_slot_t *s)
{
    return (double)(s->b.t_ns - s->a.t_ns) * 1e-9;
}

void bkm_tune_noise_process_end(bkm_tune_noise_t *n)
{
    double wmax = NAN;
    if (n == NULL)
        return;
    n->t1_ns = bkm_now_ns();
    if (n->p_ok && getrusage(RUSAGE_SELF, &n->pb) != 0) {
        n->p_ok = 0;
        snprintf(n->why_p, NOISE_WHY, "getrusage(RUSAGE_SELF): %s", strerror(errno));
    }
    noise_stat_snap(n, &n->sb);
    /* the share: run-queue wait of the worst thread, plus what the hypervisor stole */
    for (int t = 0; t < n->n; t++) {
        const noise_slot_t *s = &n->slot[t];
        double wall = slot_wall_s(s), w;
        if (!slot_ok(s, 1) || !(wall > 0))
            continue;
        w = (double)(s->b.wait_ns - s->a.wait_ns) * 1e-9 / wall;
        if (isnan(wmax) || w > wmax)
            wmax = w, n->worst_thread = t;
    }
    n->wait_share = wmax;
    n->steal_share = NAN;
    if (n->st_ok && n->sb.total > n->sa.total)
        n->steal_share = (double)(n->sb.steal - n->sa.steal) / (double)(n->sb.total - n->sa.total);
    else if (n->st_ok)
        n->steal_share = 0.0;   /* no tick passed: nothing could be stolen at tick granularity */
    if (isnan(n->wait_share) && isnan(n->steal_share))
        n->share = NAN;
    else
        n->share = (isnan(n->wait_share) ? 0.0 : n->wait_share) + (isnan(n->steal_share) ? 0.0 : n->steal_share);
    n->disturbed = isnan(n->share) ? -1 : n->share > n->threshold;
    n->done = 1;
}

void bkm_tune_noise_begin(bkm_tune_noise_t *n)
{
    if (n == NULL)
        return;
#pragma omp parallel num_threads(n->n)
    bkm_tune_noise_thread_begin(n, omp_get_thread_num());
    bkm_tune_noise_process_begin(n);
}

void bkm_tune_noise_end(bkm_tune_noise_t *n)
{
    if (n == NULL)
        return;
#pragma omp parallel num_threads(n->n)
    bkm_tune_noise_thread_end(n, omp_get_thread_num());
    bkm_tune_noise_process_end(n);
}

double bkm_tune_noise_share(const bkm_tune_noise_t *n)
{
    return n && n->done ? n->share : NAN;
}

int bkm_tune_noise_disturbed(const bkm_tune_noise_t *n)
{
    return n && n->done ? n->disturbed : -1;
}

static long long slot_value(const noise_slot_t *s, const char *name, int *ok)
{
    *ok = 1;
    if (strcmp(name, "migrations") == 0) {
        *ok = slot_ok(s, 2);
        return s->b.migrations - s->a.migrations;
    }
    *ok = slot_ok(s, 0);
    if (strcmp(name, "voluntary_switches") == 0)
        return s->b.ru.ru_nvcsw - s->a.ru.ru_nvcsw;
    if (strcmp(name, "involuntary_switches") == 0)
        return s->b.ru.ru_nivcsw - s->a.ru.ru_nivcsw;
    if (strcmp(name, "minor_faults") == 0)
        return s->b.ru.ru_minflt - s->a.ru.ru_minflt;
    if (strcmp(name, "major_faults") == 0)
        return s->b.ru.ru_majflt - s->a.ru.ru_majflt;
    if (strcmp(name, "cpu_ns") == 0)
        return (long long)(ru_cpu_s(&s->a.ru, &s->b.ru) * 1e9 + 0.5);
    *ok = 0;
    return 0;
}

long long bkm_tune_noise_total(const bkm_tune_noise_t *n, const char *name)
{
    long long sum = 0;
    if (n == NULL || !n->done)
        return -1;
    for (int t = 0; t < n->n; t++) {
        int ok;
        long long v = slot_value(&n->slot[t], name, &ok);
        if (!ok)
            return -1;
        sum += v;
    }
    return sum;
}

static void json_unavailable(bkm_json_w_t *w, const char *why)
{
    bkm_json_key(w, "unavailable");
    bkm_json_str(w, why[0] ? why : "not measured (the thread did not take part in the region)");
}

static void json_rusage(bkm_json_w_t *w, const struct rusage *a, const struct rusage *b, double wall)
{
    double cpu = ru_cpu_s(a, b);
    bkm_json_key(w, "voluntary_switches"), bkm_json_int(w, b->ru_nvcsw - a->ru_nvcsw);
    bkm_json_key(w, "involuntary_switches"), bkm_json_int(w, b->ru_nivcsw - a->ru_nivcsw);
    bkm_json_key(w, "minor_faults"), bkm_json_int(w, b->ru_minflt - a->ru_minflt);
    bkm_json_key(w, "major_faults"), bkm_json_int(w, b->ru_majflt - a->ru_majflt);
    bkm_json_key(w, "cpu_s"), bkm_json_double(w, cpu);
    bkm_json_key(w, "cpu_per_wall"), bkm_json_double(w, wall > 0 ? cpu / wall : NAN);
}

static void json_thread(bkm_json_w_t *w, const noise_slot_t *s, int t)
{
    double wall = slot_wall_s(s);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "thread"), bkm_json_int(w, t);
    bkm_json_key(w, "tid"), bkm_json_int(w, s->begun ? s->tid : -1);
    bkm_json_key(w, "cpu_begin"), bkm_json_int(w, s->begun ? s->a.cpu : -1);
    bkm_json_key(w, "cpu_end"), bkm_json_int(w, s->ended ? s->b.cpu : -1);
    bkm_json_key(w, "wall_s"), bkm_json_double(w, s->begun && s->ended ? wall : NAN);
    bkm_json_key(w, "rusage");
    bkm_json_obj_begin(w);
    if (slot_ok(s, 0))
        json_rusage(w, &s->a.ru, &s->b.ru, wall);
    else
        json_unavailable(w, s->why_ru);
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-schedstat");
    bkm_json_obj_begin(w);
    if (slot_ok(s, 1)) {
        double ws = (double)(s->b.wait_ns - s->a.wait_ns) * 1e-9;
        bkm_json_key(w, "run_s"), bkm_json_double(w, (double)(s->b.run_ns - s->a.run_ns) * 1e-9);
        bkm_json_key(w, "wait_s"), bkm_json_double(w, ws);
        bkm_json_key(w, "timeslices"), bkm_json_int(w, (int64_t)(s->b.slices - s->a.slices));
        bkm_json_key(w, "wait_share"), bkm_json_double(w, wall > 0 ? ws / wall : NAN);
    } else {
        json_unavailable(w, s->why_ss);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-sched");
    bkm_json_obj_begin(w);
    if (slot_ok(s, 2)) {
        bkm_json_key(w, "migrations"), bkm_json_int(w, s->b.migrations - s->a.migrations);
    } else {
        json_unavailable(w, s->why_sc);
    }
    bkm_json_obj_end(w);
    bkm_json_obj_end(w);
}

void bkm_tune_noise_to_json(const bkm_tune_noise_t *n, bkm_json_w_t *w)
{
    static const char *const totals[] = {"voluntary_switches", "involuntary_switches", "minor_faults",
                                         "major_faults", "migrations"};
    double wall = n ? (double)(n->t1_ns - n->t0_ns) * 1e-9 : NAN;
    bkm_json_obj_begin(w);
    if (n == NULL || !n->done) {
        bkm_json_key(w, "unavailable");
        bkm_json_str(w, "no timed region was measured");
        bkm_json_obj_end(w);
        return;
    }
    bkm_json_key(w, "disturbed");
    if (n->disturbed < 0)
        bkm_json_null(w);
    else
        bkm_json_bool(w, n->disturbed);
    bkm_json_key(w, "share"), bkm_json_double(w, n->share);
    bkm_json_key(w, "threshold"), bkm_json_double(w, n->threshold);
    bkm_json_key(w, "share_kind");
    bkm_json_str(w, "run-queue wait of the worst thread / its wall time (proc-schedstat) + steal ticks / all ticks "
                    "of the team's CPUs (proc-stat), over the timed region");
    bkm_json_key(w, "wait_share"), bkm_json_double(w, n->wait_share);
    bkm_json_key(w, "worst_thread");
    if (n->worst_thread >= 0)
        bkm_json_int(w, n->worst_thread);
    else
        bkm_json_null(w);
    bkm_json_key(w, "steal_share"), bkm_json_double(w, n->steal_share);
    bkm_json_key(w, "wall_s"), bkm_json_double(w, wall);
    bkm_json_key(w, "totals");   /* sums over the team's threads */
    bkm_json_obj_begin(w);
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
        long long v = bkm_tune_noise_total(n, totals[i]);
        bkm_json_key(w, totals[i]);
        if (v < 0)
            bkm_json_null(w);
        else
            bkm_json_int(w, v);
    }
    bkm_json_key(w, "source");
    bkm_json_str(w, "rusage (switches, faults), proc-sched (migrations)");
    bkm_json_obj_end(w);
    bkm_json_key(w, "process");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "rusage");
    bkm_json_obj_begin(w);
    if (n->p_ok)
        json_rusage(w, &n->pa, &n->pb, wall);
    else
        json_unavailable(w, n->why_p);
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-stat");
    bkm_json_obj_begin(w);
    if (n->st_ok) {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_cpuset_format(&n->cpus, &b);
        bkm_json_key(w, "cpus"), bkm_json_str(w, bkm_cpuset_is_empty(&n->cpus) ? "all" : bkm_buf_str(&b));
        bkm_buf_free(&b);
        bkm_json_key(w, "steal_ticks"), bkm_json_int(w, (int64_t)(n->sb.steal - n->sa.steal));
        bkm_json_key(w, "total_ticks"), bkm_json_int(w, (int64_t)(n->sb.total - n->sa.total));
        bkm_json_key(w, "ticks_per_s"), bkm_json_int(w, sysconf(_SC_CLK_TCK));
        bkm_json_key(w, "steal_share"), bkm_json_double(w, n->steal_share);
    } else {
        json_unavailable(w, n->why_st);
    }
    bkm_json_obj_end(w);
    bkm_json_obj_end(w);
    bkm_json_key(w, "threads");
    bkm_json_arr_begin(w);
    for (int t = 0; t < n->n; t++)
        json_thread(w, &n->slot[t], t);
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}

void bkm_tune_noise_close(bkm_tune_noise_t *n)
{
    if (n == NULL)
        return;
    bkm_free(n->slot);
    bkm_free(n->stat_buf);
    bkm_free(n);
}
