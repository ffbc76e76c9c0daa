/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim that makes the real LLVM libomp 14 believe it runs on a fake machine and records
 * the mask each thread asked to be bound to, instead of applying it.
 *
 * Test-only code: it reads its configuration from the environment once, at load time.
 *   BKM_FAKE_NCPUS  number of OS processors of the fake machine (OS ids 0..N-1), 1..BKM_FAKE_MAX
 *   BKM_FAKE_MASK   optional initial process mask ("0-3,32-35"), as taskset/srun would leave it;
 *                   default: every processor.
 *   BKM_FAKE_CPUINFO optional: what libomp's DEFAULT topology method finds on this fake machine, as
 *                   a cpuinfo file. CPUID cannot be intercepted (no CPUID faulting in these VMs),
 *                   so a machine whose CPUID lies is emulated by giving libomp this file whenever
 *                   the process itself names no KMP_CPUINFO_FILE: the constructor sets
 *                   KMP_CPUINFO_FILE to it then (libomp reads its environment later, at its first
 *                   OpenMP call). A process started with its own KMP_CPUINFO_FILE (bkm's topology
 *                   correction) keeps it.
 * Combined with KMP_CPUINFO_FILE (libomp's cpuinfo topology method) this gives libomp an arbitrary
 * topology. libomp 14 queries and sets affinity through libc's syscall() with
 * __NR_sched_{get,set}affinity (KMPNativeAffinity in kmp_affinity.h) and sizes the machine with
 * sysconf(_SC_NPROCESSORS_CONF/ONLN) (__kmp_get_xproc); those are answered here. The glibc wrappers
 * sched_{get,set}affinity and pthread_{get,set}affinity_np are answered too, so nothing reaches
 * the real 2-CPU kernel mask.
 *
 * Read-back: bkm_shim_thread_mask() (looked up with dlsym by the probe) returns the calling
 * thread's last recorded mask, or the initial mask when it never set one.
 *
 * GNU libgomp (tests/affinity/gomp) binds the threads it creates through pthread_attr_setaffinity_np
 * on the attribute it passes to pthread_create: the shim keeps that mask per attribute object and
 * gives it to the new thread (glibc would apply it with the real syscall, which refuses the fake
 * CPUs). With BKM_FAKE_CPUSET=1 the initial mask is a cpuset the process cannot leave, as under
 * Slurm's cgroup: a mask keeps only its CPUs of the initial mask, and one with none of them is
 * EINVAL (pthread_create then fails with EINVAL, as glibc's does); without it any CPU of the fake
 * machine may be set, as after taskset. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define BKM_FAKE_MAX 2048
#define BKM_FAKE_WORDS (BKM_FAKE_MAX / 64)

typedef struct fake_mask {
    uint64_t w[BKM_FAKE_WORDS];
} fake_mask_t;

/* Configuration, written once by the constructor before any thread exists, then read-only. */
static int g_ncpus = 0;
static fake_mask_t g_initial;
static int g_cpuset = 0; /* BKM_FAKE_CPUSET=1: masks are confined to g_initial */

/* Per-thread record of the last mask set by (or for) the calling thread. */
static __thread fake_mask_t t_mask;
static __thread int t_has_mask = 0;
static __thread int t_set_count = 0;

static size_t mask_bytes(void)
{
    /* What the kernel reports: nr_cpu_ids rounded up to whole longs. */
    return (size_t)((g_ncpus + 63) / 64) * 8;
}

static int parse_list(const char *s, fake_mask_t *m)
{
    memset(m, 0, sizeof(*m));
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10);
        long b = a;
        if (end == s || a < 0 || a >= BKM_FAKE_MAX)
            return -1;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a || b >= BKM_FAKE_MAX)
                return -1;
            s = end;
        }
        for (long i = a; i <= b; i++)
            m->w[i / 64] |= (uint64_t)1 << (i % 64);
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return 0;
}

static void shim_setup(void)
{
    const char *n = getenv("BKM_FAKE_NCPUS");
    const char *m = getenv("BKM_FAKE_MASK");
    const char *ci = getenv("BKM_FAKE_CPUINFO");
    const char *cs = getenv("BKM_FAKE_CPUSET");
    long v = n ? strtol(n, NULL, 10) : 0;
    g_cpuset = cs && strcmp(cs, "1") == 0;
    if (ci && *ci && !getenv("KMP_CPUINFO_FILE"))
        setenv("KMP_CPUINFO_FILE", ci, 0);
    if (v < 1 || v > BKM_FAKE_MAX)
        return; /* not configured: every call goes to libc unchanged */
    g_ncpus = (int)v;
    memset(&g_initial, 0, sizeof(g_initial));
    if (m && *m && parse_list(m, &g_initial) == 0)
        return;
    for (int i = 0; i < g_ncpus; i++)
        g_initial.w[i / 64] |= (uint64_t)1 << (i % 64);
}

/* The configuration is read once, at the first call that needs it or in the constructor, whichever
 * comes first: GNU libgomp asks for the affinity in its own constructor, which may run before this
 * one. A call before libc has set up the environment (a sanitizer runtime starting up) is answered
 * by libc and reads nothing. */
extern char **environ;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int configured(void)
{
    if (environ != NULL)
        pthread_once(&g_once, shim_setup);
    return g_ncpus;
}

__attribute__((constructor)) static void shim_init(void)
{
    configured();
}

static const fake_mask_t *current(void)
{
    return t_has_mask ? &t_mask : &g_initial;
}

/* Kernel semantics of sched_getaffinity: EINVAL if the buffer is smaller than the mask,
 * else copy the mask and return its size in bytes. */
static long fake_get(size_t len, void *buf)
{
    size_t need = mask_bytes();
    if (len < need) {
        errno = EINVAL;
        return -1;
    }
    if (!buf) {
        errno = EFAULT;
        return -1;
    }
    memcpy(buf, current()->w, need);
    return (long)need;
}

/* The mask the kernel would give a thread that asks for @p buf: its CPUs of the machine (of the
 * cpuset with BKM_FAKE_CPUSET=1). -1 with EINVAL when none is left. */
static int fake_effective(size_t len, const void *buf, fake_mask_t *m)
{
    memset(m, 0, sizeof(*m));
    memcpy(m->w, buf, len < sizeof(m->w) ? len : sizeof(m->w));
    int any = 0;
    for (int i = 0; i < BKM_FAKE_MAX; i++) {
        uint64_t bit = (uint64_t)1 << (i % 64);
        if (i >= g_ncpus || (g_cpuset && !(g_initial.w[i / 64] & bit)))
            m->w[i / 64] &= ~bit;
        else if (m->w[i / 64] & bit)
            any = 1;
    }
    if (!any) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static long fake_set(size_t len, const void *buf)
{
    fake_mask_t m;
    if (!buf) {
        errno = EFAULT;
        return -1;
    }
    if (fake_effective(len, buf, &m) < 0)
        return -1;
    t_mask = m;
    t_has_mask = 1;
    t_set_count++;
    return 0;
}

static int is_self(long pid)
{
    return pid == 0 || pid == (long)gettid();
}

long syscall(long no, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, no);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (configured() > 0 && no == SYS_sched_getaffinity && is_self(a[0]))
        return fake_get((size_t)a[1], (void *)a[2]);
    if (configured() > 0 && no == SYS_sched_setaffinity && is_self(a[0]))
        return fake_set((size_t)a[1], (const void *)a[2]);
    static long (*real)(long, ...);
    if (!real)
        real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(no, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int sched_getaffinity(pid_t pid, size_t len, cpu_set_t *set)
{
    if (configured() > 0 && is_self(pid))
        return fake_get(len, set) < 0 ? -1 : 0;
    /* glibc's contract, not the raw syscall's: 0 on success (the kernel returns the bytes it
     * copied) and the rest of the caller's set cleared. */
    long r = syscall(SYS_sched_getaffinity, (long)pid, (long)len, (long)set);
    if (r < 0)
        return -1;
    if ((size_t)r < len)
        memset((char *)set + r, 0, len - (size_t)r);
    return 0;
}

int sched_setaffinity(pid_t pid, size_t len, const cpu_set_t *set)
{
    if (configured() > 0 && is_self(pid))
        return fake_set(len, set) < 0 ? -1 : 0;
    return syscall(SYS_sched_setaffinity, (long)pid, (long)len, (long)set) < 0 ? -1 : 0;
}

int pthread_getaffinity_np(pthread_t th, size_t len, cpu_set_t *set)
{
    if (configured() > 0 && pthread_equal(th, pthread_self()))
        return fake_get(len, set) < 0 ? errno : 0;
    static int (*real)(pthread_t, size_t, cpu_set_t *);
    if (!real)
        real = (int (*)(pthread_t, size_t, cpu_set_t *))dlsym(RTLD_NEXT, "pthread_getaffinity_np");
    return real(th, len, set);
}

int pthread_setaffinity_np(pthread_t th, size_t len, const cpu_set_t *set)
{
    if (configured() > 0 && pthread_equal(th, pthread_self()))
        return fake_set(len, set) < 0 ? errno : 0;
    static int (*real)(pthread_t, size_t, const cpu_set_t *);
    if (!real)
        real = (int (*)(pthread_t, size_t, const cpu_set_t *))dlsym(RTLD_NEXT, "pthread_setaffinity_np");
    return real(th, len, set);
}

/* Affinity kept per pthread_attr_t (pthread_attr_setaffinity_np), never handed to glibc. Nested
 * libgomp teams start concurrently, each with its own attribute: one slot per attribute alive. */
#define ATTR_SLOTS 16384
static struct {
    const void *attr;
    fake_mask_t mask;
    size_t len;
} g_attr[ATTR_SLOTS];
static int g_attr_used; /* slots at or above are free */
static pthread_mutex_t g_attr_lock = PTHREAD_MUTEX_INITIALIZER;

/* Slot of @p attr (with @p create: a free one when it has none), or -1. Caller holds the lock. A
 * full table aborts the process: a thread created without its mask would be a wrong answer. */
static int attr_slot(const void *attr, int create)
{
    int free_slot = -1;
    for (int i = 0; i < g_attr_used; i++) {
        if (g_attr[i].attr == attr)
            return i;
        if (!g_attr[i].attr && free_slot < 0)
            free_slot = i;
    }
    if (!create)
        return -1;
    if (free_slot < 0) {
        if (g_attr_used == ATTR_SLOTS) {
            static const char msg[] = "bkm shim: more than 16384 thread attributes with an affinity alive\n";
            if (write(2, msg, sizeof(msg) - 1) < 0)
                abort();
            abort();
        }
        free_slot = g_attr_used++;
    }
    g_attr[free_slot].attr = attr;
    return free_slot;
}

int pthread_attr_setaffinity_np(pthread_attr_t *attr, size_t len, const cpu_set_t *set)
{
    typedef int (*set_fn_t)(pthread_attr_t *, size_t, const cpu_set_t *);
    static set_fn_t real;
    if (configured() <= 0) {
        if (!real)
            real = (set_fn_t)dlsym(RTLD_NEXT, "pthread_attr_setaffinity_np");
        return real(attr, len, set);
    }
    pthread_mutex_lock(&g_attr_lock);
    int i = attr_slot(attr, 1);
    if (i >= 0) {
        memset(&g_attr[i].mask, 0, sizeof(g_attr[i].mask));
        memcpy(g_attr[i].mask.w, set, len < sizeof(g_attr[i].mask.w) ? len : sizeof(g_attr[i].mask.w));
        g_attr[i].len = len;
    }
    pthread_mutex_unlock(&g_attr_lock);
    return i >= 0 ? 0 : ENOMEM;
}

int pthread_attr_destroy(pthread_attr_t *attr)
{
    static int (*real)(pthread_attr_t *);
    if (!real)
        real = (int (*)(pthread_attr_t *))dlsym(RTLD_NEXT, "pthread_attr_destroy");
    if (configured() > 0) {
        pthread_mutex_lock(&g_attr_lock);
        int i = attr_slot(attr, 0);
        if (i >= 0)
            g_attr[i].attr = NULL;
        pthread_mutex_unlock(&g_attr_lock);
    }
    return real(attr);
}

/* Threads inherit the creating thread's mask, as the kernel does on clone(). */
typedef struct tramp {
    void *(*fn)(void *);
    void *arg;
    fake_mask_t mask;
    int has_mask;
    int set_count; /* 1 when the attribute bound the thread */
} tramp_t;

static void *tramp_start(void *p)
{
    tramp_t t = *(tramp_t *)p;
    free(p);
    t_mask = t.mask;
    t_has_mask = t.has_mask;
    t_set_count = t.set_count;
    return t.fn(t.arg);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    if (configured() <= 0)
        return real(th, attr, fn, arg);
    tramp_t *t = malloc(sizeof(*t));
    if (!t)
        return EAGAIN;
    t->fn = fn;
    t->arg = arg;
    t->mask = *current();
    t->has_mask = t_has_mask;
    t->set_count = 0;
    if (attr) { /* an affinity set on the attribute: the new thread's mask, as the kernel keeps it */
        pthread_mutex_lock(&g_attr_lock);
        int i = attr_slot(attr, 0);
        fake_mask_t want;
        size_t len = 0;
        if (i >= 0) {
            want = g_attr[i].mask;
            len = g_attr[i].len;
        }
        pthread_mutex_unlock(&g_attr_lock);
        if (i >= 0) {
            if (fake_effective(len, want.w, &t->mask) < 0) {
                free(t);
                return EINVAL;
            }
            t->has_mask = 1;
            t->set_count = 1;
        }
    }
    int rc = real(th, attr, tramp_start, t);
    if (rc != 0)
        free(t);
    return rc;
}

static long fake_sysconf(int name, long (*real)(int))
{
    if (configured() > 0 && (name == _SC_NPROCESSORS_CONF || name == _SC_NPROCESSORS_ONLN))
        return g_ncpus;
    return real(name);
}

long sysconf(int name)
{
    static long (*real)(int);
    if (!real)
        real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    return fake_sysconf(name, real);
}

long __sysconf(int name)
{
    static long (*real)(int);
    if (!real)
        real = (long (*)(int))dlsym(RTLD_NEXT, "__sysconf");
    return fake_sysconf(name, real);
}

int get_nprocs(void)
{
    static int (*real)(void);
    if (configured() > 0)
        return g_ncpus;
    if (!real)
        real = (int (*)(void))dlsym(RTLD_NEXT, "get_nprocs");
    return real();
}

int get_nprocs_conf(void)
{
    static int (*real)(void);
    if (configured() > 0)
        return g_ncpus;
    if (!real)
        real = (int (*)(void))dlsym(RTLD_NEXT, "get_nprocs_conf");
    return real();
}

/* Read-back for the probe: copies the calling thread's current fake mask into @p words
 * (@p n_words 64-bit words) and returns how many times this thread set its mask (0 = never
 * bound: the initial mask was copied), or -1 when the shim is not configured. */
int bkm_shim_thread_mask(uint64_t *words, int n_words)
{
    if (configured() <= 0 || n_words < 0)
        return -1;
    const fake_mask_t *m = current();
    int n = n_words < BKM_FAKE_WORDS ? n_words : BKM_FAKE_WORDS;
    memset(words, 0, (size_t)n_words * sizeof(uint64_t));
    memcpy(words, m->w, (size_t)n * sizeof(uint64_t));
    return t_set_count;
}

/* The initial mask (what an unbound thread may run on). */
int bkm_shim_initial_mask(uint64_t *words, int n_words)
{
    if (configured() <= 0 || n_words < 0)
        return -1;
    int n = n_words < BKM_FAKE_WORDS ? n_words : BKM_FAKE_WORDS;
    memset(words, 0, (size_t)n_words * sizeof(uint64_t));
    memcpy(words, g_initial.w, (size_t)n * sizeof(uint64_t));
    return g_ncpus;
}
