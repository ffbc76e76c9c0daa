/* SPDX-License-Identifier: MIT */
/* The parent's sampler of a running program: /proc/PID/task/<tid>/{stat,status,schedstat,sched,
 * comm} every few tens of milliseconds, and /proc/stat at the start and the end of the run. Files
 * are opened relative to the task directory's descriptor and read into one buffer allocated at
 * open, so a pass costs a few system calls per thread and no allocation once the thread is known. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bkm/program.h"
#include "program_int.h"

#define SAMPLER_BUF (64u * 1024u)
#define SAMPLER_STAT_BUF (4096u + BKM_CPUSET_MAX * 128u)

/* ---------------------------------------------------------------------------------------- */
/* Parsers                                                                                   */

/* The unsigned number at *p (after spaces); advances *p. */
static int read_u64(const char **p, uint64_t *v)
{
    const char *s = *p;
    char *end;
    unsigned long long x;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    *v = (uint64_t)x;
    *p = end;
    return 0;
}

/* The value after "\n<key>:" (or at the start of @p text), as a NUL-terminated copy of the rest of
 * its line in @p out (at most @p n bytes). */
static int status_field(const char *text, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    const char *p = text;
    while (p != NULL && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
            const char *v = p + kl + 1, *e = strchr(v, '\n');
            size_t len = e ? (size_t)(e - v) : strlen(v);
            while (len > 0 && (*v == ' ' || *v == '\t'))
                v++, len--;
            if (len >= n)
                return -2;
            memcpy(out, v, len);
            out[len] = '\0';
            return 0;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

int bkm_prog_parse_status(const char *text, bkm_cpuset_t *mask, uint64_t *vol, uint64_t *invol, bkm_err_t *err)
{
    char val[16384];
    const char *p;
    bkm_err_t e = {0};
    if (text == NULL)
        return bkm_err_set(err, BKM_EINVAL, "status: no text");
    int rc = status_field(text, "Cpus_allowed_list", val, sizeof val);
    if (rc < 0)
        return bkm_err_set(err, BKM_EINVAL, "status: %s Cpus_allowed_list", rc == -1 ? "no" : "overlong");
    if (bkm_cpuset_parse(mask, val, &e) < 0)
        return bkm_err_set(err, BKM_EINVAL, "status: Cpus_allowed_list: %s", e.msg);
    if (status_field(text, "voluntary_ctxt_switches", val, 64) < 0 || (p = val, read_u64(&p, vol)) < 0 || *p)
        return bkm_err_set(err, BKM_EINVAL, "status: no voluntary_ctxt_switches number");
    if (status_field(text, "nonvoluntary_ctxt_switches", val, 64) < 0 || (p = val, read_u64(&p, invol)) < 0 || *p)
        return bkm_err_set(err, BKM_EINVAL, "status: no nonvoluntary_ctxt_switches number");
    return BKM_OK;
}

int bkm_prog_parse_stat(const char *text, bkm_prog_counters_t *c, unsigned long long *start_ticks, int *cpu,
                        char *state, bkm_err_t *err)
{
    const char *p = text ? strrchr(text, ')') : NULL;
    uint64_t f[40];
    if (p == NULL || strchr(text, '(') == NULL || strchr(text, '(') > p)
        return bkm_err_set(err, BKM_EINVAL, "stat: '%.40s' has no (name)", text ? text : "(null)");
    p++;
    while (*p == ' ')
        p++;
    if (*p == '\0' || p[1] != ' ')
        return bkm_err_set(err, BKM_EINVAL, "stat: no state after the name");
    *state = *p;
    p += 1;
    /* fields 4..39 are numbers (priority and nice may be negative, rsslim may be 2^64-1); only
     * the ones used are converted, the others need only be there */
    for (int k = 4; k <= 39; k++) {
        const char *tok;
        size_t len;
        while (*p == ' ')
            p++;
        tok = p;
        len = strcspn(p, " \n");
        if (len == 0)
            return bkm_err_set(err, BKM_EINVAL, "stat: %d fields, 39 expected", k - 1);
        p += len;
        if (k == 10 || k == 12 || k == 14 || k == 15 || k == 22 || k == 39) {
            const char *q = tok;
            if (read_u64(&q, &f[k]) < 0 || q != p)
                return bkm_err_set(err, BKM_EINVAL, "stat: field %d '%.*s' is not a number", k,
                                   (int)(len < 30 ? len : 30), tok);
        }
    }
    c->minflt = f[10], c->majflt = f[12];
    c->utime = f[14], c->stime = f[15];
    *start_ticks = f[22];
    if (f[39] >= BKM_CPUSET_MAX)
        return bkm_err_set(err, BKM_EINVAL, "stat: processor %llu out of range", (unsigned long long)f[39]);
    *cpu = (int)f[39];
    return BKM_OK;
}

int bkm_prog_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices, bkm_err_t *err)
{
    const char *p = text;
    if (text == NULL || read_u64(&p, run_ns) < 0 || read_u64(&p, wait_ns) < 0 || read_u64(&p, slices) < 0)
        return bkm_err_set(err, BKM_EINVAL, "schedstat: '%.60s' is not three numbers (run_ns wait_ns timeslices)",
                           text ? text : "(null)");
    return BKM_OK;
}

int bkm_prog_parse_sched_migrations(const char *text, long long *migrations, bkm_err_t *err)
{
    static const char key[] = "se.nr_migrations";
    const char *line = text;
    while (line != NULL && *line) {
        const char *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, key, sizeof key - 1) == 0 && (p[sizeof key - 1] == ' ' || p[sizeof key - 1] == ':')) {
            char *end;
            long long x;
            p += sizeof key - 1;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p++ != ':')
                return bkm_err_set(err, BKM_EINVAL, "sched: %s has no ':'", key);
            errno = 0;
            x = strtoll(p, &end, 10);
            if (end == p || errno != 0 || (*end != '\n' && *end != '\0'))
                return bkm_err_set(err, BKM_EINVAL, "sched: %s: '%.30s' is not an integer", key, p);
            *migrations = x;
            return BKM_OK;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return bkm_err_set(err, BKM_ENOTSUP, "sched: no %s line", key);
}

/* Per-CPU steal and total ticks of /proc/stat text into @p st (arrays of BKM_CPUSET_MAX). */
static int parse_proc_stat(const char *text, bkm__prog_stat_t *st, char *why, size_t why_n)
{
    const char *line = text;
    int lines = 0;
    bkm_cpuset_zero(&st->present);
    while (line && *line) {
        if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
            const char *p = line + 3;
            char *end;
            long c = strtol(p, &end, 10);
            uint64_t v[8];
            int nf = 0;
            if (c < 0 || c >= BKM_CPUSET_MAX) {
                snprintf(why, why_n, "/proc/stat: CPU number in '%.30s' out of range", line);
                return -1;
            }
            p = end;
            while (nf < 8 && read_u64(&p, &v[nf]) == 0)
                nf++;
            if (nf < 8) {
                snprintf(why, why_n, "/proc/stat: line '%.30s' has %d numbers, 8 (through steal) expected", line, nf);
                return -1;
            }
            st->steal[c] = v[7];
            st->total[c] = 0;
            for (int i = 0; i < 8; i++)
                st->total[c] += v[i];
            bkm_cpuset_set(&st->present, (int)c);
            lines++;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (lines == 0) {
        snprintf(why, why_n, "/proc/stat: no cpuN line");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Reading                                                                                   */

/* Read @p name (relative to @p dirfd) into s->buf, NUL-terminated; -1 with errno on failure. */
static int read_at(bkm_prog_sampler_t *s, int dirfd, const char *name, size_t *len)
{
    size_t n = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    while (n + 1 < s->buf_cap) {
        ssize_t got = read(fd, s->buf + n, s->buf_cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    s->buf[n] = '\0';
    if (len)
        *len = n;
    return 0;
}

/* /proc/stat into its own buffer: the CPU lines come first, so one the size of 2048 CPU lines
 * holds them all even when the interrupt counts after them do not fit. */
static void read_proc_stat(bkm_prog_sampler_t *s, bkm__prog_stat_t *st)
{
    char *save = s->buf;
    size_t save_cap = s->buf_cap;
    int rc;
    s->buf = s->stat_buf, s->buf_cap = SAMPLER_STAT_BUF;
    rc = read_at(s, AT_FDCWD, s->stat_path, NULL);
    s->buf = save, s->buf_cap = save_cap;
    st->ok = 0;
    if (rc < 0) {
        snprintf(st->why, sizeof st->why, "%s: %s", s->stat_path, strerror(errno));
        return;
    }
    st->t_ns = bkm_now_ns();
    st->ok = parse_proc_stat(s->stat_buf, st, st->why, sizeof st->why) == 0;
}

void bkm_prog_sampler_opts_defaults(bkm_prog_sampler_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->interval_ms = BKM_PROG_INTERVAL_MS_DEFAULT;
    o->heavy_every = BKM_PROG_HEAVY_EVERY_DEFAULT;
    o->max_threads = BKM_PROG_THREADS_MAX_DEFAULT;
}

int bkm_prog_sampler_open(bkm_prog_sampler_t **out, int pid, const bkm_prog_sampler_opts_t *opts, bkm_err_t *err)
{
    bkm_prog_sampler_opts_t o;
    bkm_prog_sampler_t *s = NULL;
    char path[512];
    struct timespec mono, boot;
    int rc;
    *out = NULL;
    if (opts == NULL)
        bkm_prog_sampler_opts_defaults(&o);
    else
        o = *opts;
    if (o.interval_ms == 0)
        o.interval_ms = BKM_PROG_INTERVAL_MS_DEFAULT;
    if (o.max_threads == 0)
        o.max_threads = BKM_PROG_THREADS_MAX_DEFAULT;
    if (pid < 1)
        return bkm_err_set(err, BKM_EINVAL, "sampler: pid %d is not a process id", pid);
    if (o.interval_ms < BKM_PROG_INTERVAL_MS_MIN || o.interval_ms > BKM_PROG_INTERVAL_MS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "sampler: interval %d ms out of range %d..%d", o.interval_ms,
                           BKM_PROG_INTERVAL_MS_MIN, BKM_PROG_INTERVAL_MS_MAX);
    if (o.heavy_every < 0)
        return bkm_err_set(err, BKM_EINVAL, "sampler: heavy_every %d is negative", o.heavy_every);
    if (o.max_threads < 1 || o.max_threads > 1 << 20)
        return bkm_err_set(err, BKM_EINVAL, "sampler: max_threads %d out of range 1..%d", o.max_threads, 1 << 20);
    if (o.proc_root == NULL)
        o.proc_root = "/proc";
    if ((s = bkm_calloc(1, sizeof *s)) == NULL || (s->buf = bkm_malloc(SAMPLER_BUF)) == NULL ||
        (s->stat_buf = bkm_malloc(SAMPLER_STAT_BUF)) == NULL ||
        (s->stat_a.steal = bkm_calloc(4 * BKM_CPUSET_MAX, sizeof(uint64_t))) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "sampler: out of memory");
        goto fail;
    }
    s->buf_cap = SAMPLER_BUF;
    s->stat_a.total = s->stat_a.steal + BKM_CPUSET_MAX;
    s->stat_b.steal = s->stat_a.steal + 2 * BKM_CPUSET_MAX;
    s->stat_b.total = s->stat_a.steal + 3 * BKM_CPUSET_MAX;
    s->pid = pid;
    s->interval_ns = (uint64_t)o.interval_ms * 1000000u;
    s->heavy_every = o.heavy_every;
    s->live = strcmp(o.proc_root, "/proc") == 0;
    s->max_tasks = o.max_threads;
    s->ticks_per_s = sysconf(_SC_CLK_TCK);
    if (s->ticks_per_s <= 0)
        s->ticks_per_s = 100;
    if (snprintf(s->stat_path, sizeof s->stat_path, "%s/stat", o.proc_root) >= (int)sizeof s->stat_path ||
        snprintf(path, sizeof path, "%s/%d/task", o.proc_root, pid) >= (int)sizeof path) {
        rc = bkm_err_set(err, BKM_EINVAL, "sampler: procfs path '%.60s...' too long", o.proc_root);
        goto fail;
    }
    snprintf(s->root, sizeof s->root, "%s", o.proc_root);
    if ((s->dir = opendir(path)) == NULL) {
        rc = bkm_err_set(err, BKM_EINVAL, "sampler: no process %d (%s: %s)", pid, path, strerror(errno));
        goto fail;
    }
    /* A thread's start time is in ticks since boot (CLOCK_BOOTTIME); bkm_now_ns is CLOCK_MONOTONIC. */
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    s->boot_minus_mono_ns = ((int64_t)boot.tv_sec - mono.tv_sec) * 1000000000ll + (boot.tv_nsec - mono.tv_nsec);
    read_proc_stat(s, &s->stat_a);
    s->t_open_ns = bkm_now_ns();
    if ((rc = bkm_prog_sampler_sample(s, err)) < 0)
        goto fail;
    *out = s;
    return BKM_OK;
fail:
    bkm_prog_sampler_close(s);
    return rc;
}

static bkm_prog_task_t *task_new(bkm_prog_sampler_t *s, int tid, unsigned long long start)
{
    if (s->n == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 16;
        bkm_prog_task_t *g;
        if (ncap > s->max_tasks)
            ncap = s->max_tasks;
        if (s->n == ncap)
            return NULL;
        if ((g = bkm_realloc(s->task, (size_t)ncap * sizeof *g)) == NULL)
            return NULL;
        s->task = g;
        s->cap = ncap;
    }
    bkm_prog_task_t *t = &s->task[s->n++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->start_ticks = start;
    t->last_cpu = -1;
    return t;
}

/* The live entry for (tid, start): search from the hint, since the directory lists in order. */
static bkm_prog_task_t *task_find(bkm_prog_sampler_t *s, int tid, unsigned long long start, int *hint)
{
    for (int k = 0; k < s->n; k++) {
        int i = (*hint + k) % s->n;
        if (s->task[i].tid == tid && s->task[i].start_ticks == start) {
            *hint = i + 1;
            return &s->task[i];
        }
    }
    return NULL;
}

/* A mask seen at @p t_ns: the last one again extends it, another is a change. */
static void note_mask(bkm_prog_task_t *t, const bkm_cpuset_t *mask, uint64_t t_ns)
{
    if (t->n_masks > 0 && bkm_cpuset_equal(&t->mask[t->n_masks - 1].cpus, mask)) {
        t->mask[t->n_masks - 1].last_ns = t_ns;
    } else if (t->n_masks < BKM_PROG_MASKS_MAX) {
        t->mask[t->n_masks].cpus = *mask;
        t->mask[t->n_masks].t_ns = t->mask[t->n_masks].last_ns = t_ns;
        t->n_masks++;
    } else {
        t->masks_lost++;   /* the last kept entry is not extended past a change it missed */
    }
}

static void why_once(bkm_prog_task_t *t, const char *what, int e)
{
    if (t->why[0] == '\0')
        snprintf(t->why, sizeof t->why, "%s: %s", what, strerror(e));
}

/* One thread at one pass. A file that vanished means the thread ended: nothing is recorded. */
static int sample_task(bkm_prog_sampler_t *s, int tid, uint64_t t_ns, int *hint, int *live)
{
    char name[64];
    bkm_prog_counters_t c;
    bkm_prog_task_t *t;
    unsigned long long start;
    int cpu, is_new = 0, heavy, have_mask = 0;
    char state;
    bkm_err_t e = {0};
    bkm_cpuset_t mask, smask;
    cpu_set_t cs;
    memset(&c, 0, sizeof c);
    c.t_ns = t_ns;
    snprintf(name, sizeof name, "%d/stat", tid);
    if (read_at(s, s->dirfd, name, NULL) < 0 || bkm_prog_parse_stat(s->buf, &c, &start, &cpu, &state, &e) < 0)
        return 0;
    if (state == 'Z' || state == 'X')
        return 0;
    ++*live;
    c.stat_ok = 1;
    if ((t = task_find(s, tid, start, hint)) == NULL) {
        if ((t = task_new(s, tid, start)) == NULL) {
            if (s->n >= s->max_tasks) {
                s->tasks_lost++;
                return 0;
            }
            return -1;
        }
        is_new = 1;
        t->born_sampled = s->samples > 0;
    }
    heavy = is_new || s->heavy_every <= 1 || s->samples % s->heavy_every == 0;
    if (s->live && sched_getaffinity(tid, sizeof cs, &cs) == 0) {
        bkm_cpuset_zero(&mask);
        for (int k = 0; k < CPU_SETSIZE && k < BKM_CPUSET_MAX; k++)
            if (CPU_ISSET(k, &cs))
                bkm_cpuset_set(&mask, k);
        note_mask(t, &mask, t_ns);
        have_mask = 1;
    }
    if (heavy || !have_mask) {
        snprintf(name, sizeof name, "%d/status", tid);
        if (read_at(s, s->dirfd, name, NULL) == 0 &&
            bkm_prog_parse_status(s->buf, &smask, &c.vol_switches, &c.invol_switches, &e) == 0) {
            c.status_ok = 1;
            if (!have_mask)
                note_mask(t, &smask, t_ns);
        } else if (e.msg[0]) {
            if (t->why[0] == '\0')
                snprintf(t->why, sizeof t->why, "status: %s", e.msg);
        } else {
            why_once(t, "status", errno);
        }
    }
    snprintf(name, sizeof name, "%d/schedstat", tid);
    if (read_at(s, s->dirfd, name, NULL) == 0 &&
        bkm_prog_parse_schedstat(s->buf, &c.run_ns, &c.wait_ns, &c.slices, &e) == 0)
        c.schedstat_ok = 1;
    else
        why_once(t, "schedstat", errno);
    if (heavy) {
        snprintf(name, sizeof name, "%d/sched", tid);
        if (read_at(s, s->dirfd, name, NULL) == 0 && bkm_prog_parse_sched_migrations(s->buf, &c.migrations, &e) == 0)
            c.sched_ok = 1;
        else
            why_once(t, "sched", errno);
        snprintf(name, sizeof name, "%d/comm", tid);
        if (read_at(s, s->dirfd, name, NULL) == 0) {
            size_t l = strcspn(s->buf, "\n");
            if (l >= sizeof t->comm)
                l = sizeof t->comm - 1;
            memcpy(t->comm, s->buf, l);
            t->comm[l] = '\0';
        }
    }
    if (is_new) {
        if (t->born_sampled) {
            /* born while sampled: its counters started at zero, at its start time */
            int64_t start_ns = (int64_t)(start * 1000000000ull / (unsigned long long)s->ticks_per_s) -
                               s->boot_minus_mono_ns;
            memset(&t->first, 0, sizeof t->first);
            t->first.t_ns = start_ns > 0 && (uint64_t)start_ns < t_ns ? (uint64_t)start_ns : t_ns;
            t->first.heavy_t_ns = t->first.t_ns;
            t->first.stat_ok = t->first.status_ok = t->first.schedstat_ok = t->first.sched_ok = 1;
        } else {
            t->first = c;
            t->first.heavy_t_ns = t_ns;
        }
        t->first_ns = t_ns;
        t->last.t_ns = t_ns;
    }
    /* Each source's last values are those of the last pass that read it (a thread may end between
     * two of its files); the delta of a source needs its first and its last reading. */
    t->last.t_ns = t_ns;
    t->last.stat_ok = 1;
    t->last.utime = c.utime, t->last.stime = c.stime, t->last.minflt = c.minflt, t->last.majflt = c.majflt;
    if (c.status_ok || c.sched_ok)
        t->last.heavy_t_ns = t_ns;
    if (c.status_ok) {
        t->last.status_ok = 1;
        t->last.vol_switches = c.vol_switches, t->last.invol_switches = c.invol_switches;
    }
    if (c.schedstat_ok) {
        t->last.schedstat_ok = 1;
        t->last.run_ns = c.run_ns, t->last.wait_ns = c.wait_ns, t->last.slices = c.slices;
    }
    if (c.sched_ok) {
        t->last.sched_ok = 1;
        t->last.migrations = c.migrations;
    }
    t->last_ns = t_ns;
    t->samples++;
    bkm_cpuset_set(&t->ran_on, cpu);
    t->last_cpu = cpu;
    return 0;
}

int bkm_prog_sampler_sample(bkm_prog_sampler_t *s, bkm_err_t *err)
{
    struct dirent *de;
    uint64_t t0;
    int hint = 0, live = 0, listed = 0;
    if (s == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sampler: NULL");
    t0 = bkm_now_ns();
    s->next_due_ns = t0 + s->interval_ns;
    if (s->gone)
        return BKM_OK;
    s->dirfd = dirfd(s->dir);
    rewinddir(s->dir);
    errno = 0;
    while ((de = readdir(s->dir)) != NULL) {
        long long tid;
        if (de->d_name[0] < '1' || de->d_name[0] > '9' || bkm_parse_int(de->d_name, 1, 0x7fffffff, &tid) < 0)
            continue;
        listed++;
        if (sample_task(s, (int)tid, t0, &hint, &live) < 0)
            return bkm_err_set(err, BKM_ENOMEM, "sampler: out of memory for thread %lld", tid);
    }
    if (listed == 0 || live == 0) {
        s->gone = 1;
        return BKM_OK;
    }
    s->samples++;
    s->pass_ns_sum += bkm_now_ns() - t0;
    return BKM_OK;
}

uint64_t bkm_prog_sampler_due_ns(const bkm_prog_sampler_t *s)
{
    return s ? s->next_due_ns : 0;
}

int bkm_prog_sampler_gone(const bkm_prog_sampler_t *s)
{
    return s ? s->gone : 1;
}

int bkm_prog_sampler_finish(bkm_prog_sampler_t *s, bkm_err_t *err)
{
    if (s == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sampler: NULL");
    if (!s->finished) {
        read_proc_stat(s, &s->stat_b);
        s->finished = 1;
    }
    return BKM_OK;
}

int bkm_prog_sampler_samples(const bkm_prog_sampler_t *s)
{
    return s ? s->samples : 0;
}

int bkm_prog_sampler_n_tasks(const bkm_prog_sampler_t *s)
{
    return s ? s->n : 0;
}

const bkm_prog_task_t *bkm_prog_sampler_task(const bkm_prog_sampler_t *s, int i)
{
    return s && i >= 0 && i < s->n ? &s->task[i] : NULL;
}

uint64_t bkm_prog_sampler_pass_ns(const bkm_prog_sampler_t *s)
{
    return s && s->samples > 0 ? s->pass_ns_sum / (uint64_t)s->samples : 0;
}

void bkm_prog_sampler_close(bkm_prog_sampler_t *s)
{
    if (s == NULL)
        return;
    if (s->dir)
        closedir(s->dir);
    bkm_free(s->task);
    bkm_free(s->buf);
    bkm_free(s->stat_buf);
    bkm_free(s->stat_a.steal);
    bkm_free(s);
}
