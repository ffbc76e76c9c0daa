/* SPDX-License-Identifier: MIT */
/* libbkm_team.so: an LD_PRELOAD module that bkm injects into a program it did not write, so the
 * parent can tell the program's OpenMP team apart from its other threads. It records, one line per
 * event into the file named by BKM_TEAM_LOG (format: bkm/program.h, "Team log"):
 *   - every thread created through pthread_create: its TID, the creating thread, and the objects
 *     the creation came from (the direct caller, and the first caller outside libc/libstdc++);
 *   - GNU libgomp teams: GOMP_parallel and the combined constructs GCC emits are interposed; each
 *     thread of a region records (index, team size, level, primary) the first time it runs in a
 *     team of that shape;
 *   - LLVM libomp / Intel libiomp5 teams: an OMPT tool (ompt_start_tool) with thread_begin,
 *     parallel_begin and implicit_task callbacks records the same, and each runtime thread's kind.
 *
 * It links libc and libdl only, never an OpenMP runtime: the omp_* queries are taken from the
 * runtime object that defines the interposed entry point. It never changes what the program does
 * (only how long a little of it takes: the records, and libomp's OMPT paths once a tool is active):
 * errno is preserved, no signal is touched, cancellation is disabled while a record is written,
 * and when the log cannot be opened at load time every wrapper only forwards. A record is written
 * by open(2) + one write(2) + close(2), O_APPEND: one write of a line under PIPE_BUF bytes is
 * atomic, and no descriptor stays open that the program could close or that a fork could share.
 *
 * State (an interposer needs some; nothing else is global):
 *   shim      configuration set once by the constructor before the program's code runs (log path,
 *             load addresses of the program and of this object), read-only afterwards;
 *   real_*    the next definitions of the interposed functions, resolved once (pthread_once or an
 *             idempotent atomic store);
 *   seq       an atomic counter of thread creations (creation order);
 *   tls_*     per thread: the cached TID (reset in a forked child) and the team shapes already
 *             recorded, so a region costs one call and a short loop per thread after the first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bkm/program.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_NAME_MAX 64   /* object names in records, NUL included */
#define SHIM_SEEN_MAX 16   /* team shapes recorded per thread */

/* ---------------------------------------------------------------------------------------- */
/* OMPT, the subset this tool uses (OpenMP 5.0, section 4: omp-tools.h). Written out so that the
 * shim builds with any C compiler; where the runtime's header is at hand the values are checked. */
typedef union shim_ompt_data { uint64_t value; void *ptr; } shim_ompt_data_t;
typedef void (*shim_ompt_fn_t)(void);
typedef shim_ompt_fn_t (*shim_ompt_lookup_t)(const char *name);
typedef int (*shim_ompt_init_t)(shim_ompt_lookup_t lookup, int initial_device_num, shim_ompt_data_t *tool_data);
typedef void (*shim_ompt_fini_t)(shim_ompt_data_t *tool_data);
typedef struct shim_ompt_result {
    shim_ompt_init_t initialize;
    shim_ompt_fini_t finalize;
    shim_ompt_data_t tool_data;
} shim_ompt_result_t;
typedef int (*shim_ompt_set_callback_t)(int event, shim_ompt_fn_t callback);
enum {
    SHIM_OMPT_CB_THREAD_BEGIN = 1,
    SHIM_OMPT_CB_PARALLEL_BEGIN = 3,
    SHIM_OMPT_CB_IMPLICIT_TASK = 7,
    SHIM_OMPT_SCOPE_BEGIN = 1,
    SHIM_OMPT_TASK_INITIAL = 0x1,
    SHIM_OMPT_SET_NEVER = 1
};
#if defined(__has_include)
#if __has_include(<omp-tools.h>)
#include <omp-tools.h>
_Static_assert(SHIM_OMPT_CB_THREAD_BEGIN == ompt_callback_thread_begin, "OMPT thread_begin");
_Static_assert(SHIM_OMPT_CB_PARALLEL_BEGIN == ompt_callback_parallel_begin, "OMPT parallel_begin");
_Static_assert(SHIM_OMPT_CB_IMPLICIT_TASK == ompt_callback_implicit_task, "OMPT implicit_task");
_Static_assert(SHIM_OMPT_SCOPE_BEGIN == ompt_scope_begin, "OMPT scope_begin");
_Static_assert(SHIM_OMPT_TASK_INITIAL == ompt_task_initial, "OMPT task_initial");
_Static_assert(SHIM_OMPT_SET_NEVER == ompt_set_never, "OMPT set_never");
_Static_assert(BKM_PROG_OMPT_INITIAL == ompt_thread_initial && BKM_PROG_OMPT_WORKER == ompt_thread_worker &&
               BKM_PROG_OMPT_OTHER == ompt_thread_other && BKM_PROG_OMPT_UNKNOWN == ompt_thread_unknown,
               "OMPT thread types");
_Static_assert(sizeof(shim_ompt_result_t) == sizeof(ompt_start_tool_result_t), "OMPT start tool result");
#endif
#endif

/* ---------------------------------------------------------------------------------------- */
/* State                                                                                     */

static struct {
    int on;                       /* the log opened at load time */
    char log[4096];               /* BKM_TEAM_LOG */
    int defer_ompt;               /* OMP_TOOL_LIBRARIES names another tool: let it run */
    const void *exe_base;         /* load address of the main program */
    const void *own_base;         /* load address of this object */
} shim;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn real_pthread_create;
static unsigned long seq;

static __thread int tls_tid;
static __thread struct {
    int n, lost;
    struct { int size, index, level, primary; } k[SHIM_SEEN_MAX];
} tls_seen;

static int self_tid(void)
{
    if (tls_tid == 0)
        tls_tid = (int)syscall(SYS_gettid);
    return tls_tid;
}

static unsigned long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------- */
/* Records                                                                                   */

/* Write one record: "bkmteam1 KIND pid=P tid=T t=NS " + the formatted fields + "\n", with one
 * write(2). errno and the cancellation state are the caller's again on return. */
static void rec_emit(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_emit(const char *kind, const char *fmt, ...)
{
    char line[BKM_PROG_LOG_LINE_MAX];
    int saved = errno, cancel, n, m, fd;
    va_list ap;
    if (!shim.on)
        return;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    n = snprintf(line, sizeof line, "%s %s pid=%d tid=%d t=%llu ", BKM_PROG_LOG_MAGIC, kind, (int)getpid(),
                 self_tid(), mono_ns());
    va_start(ap, fmt);
    m = n > 0 && (size_t)n < sizeof line ? vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap) : -1;
    va_end(ap);
    if (m >= 0 && (size_t)(n + m) + 1 < sizeof line) {
        line[n + m] = '\n';
        fd = open(shim.log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd >= 0) {
            ssize_t w;
            do
                w = write(fd, line, (size_t)(n + m) + 1);
            while (w < 0 && errno == EINTR);
            close(fd);
        }
    }
    pthread_setcancelstate(cancel, NULL);
    errno = saved;
}

/* The basename of @p path with every byte outside [A-Za-z0-9._+-] replaced by '_', so that a
 * name is one token of a record whatever the file system allows. */
static void name_of(const char *path, char out[SHIM_NAME_MAX])
{
    const char *b = path ? strrchr(path, '/') : NULL;
    size_t i = 0;
    b = b ? b + 1 : path;
    if (b == NULL || *b == '\0')
        b = "?";
    for (; b[i] != '\0' && i + 1 < SHIM_NAME_MAX; i++) {
        unsigned char c = (unsigned char)b[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '+' || c == '-';
        out[i] = ok ? (char)c : '_';
    }
    out[i] = '\0';
}

/* Objects a thread creation passes through on its way to pthread_create, not its creator. */
static int is_system_object(const char *name)
{
    static const char *const prefix[] = {"libc.so", "libstdc++.so", "libpthread.so", "libgcc_s.so",
                                         "ld-linux", "libc++.so", "libc++abi.so"};
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        if (strncmp(name, prefix[i], strlen(prefix[i])) == 0)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Threads                                                                                   */

typedef struct start_box {
    void *(*fn)(void *);
    void *arg;
    int creator;
    unsigned long seq;
    int exe;
    char via[SHIM_NAME_MAX];
    char lib[SHIM_NAME_MAX];
} start_box_t;

/* Where a thread creation came from: the object of the direct caller (@p ret), and the first
 * object up the stack that is neither this one nor a system library (std::thread's caller). */
static void describe_caller(const void *ret, start_box_t *b)
{
    void *frame[12];
    int n = backtrace(frame, 12), have_via = 0;
    Dl_info di;
    snprintf(b->via, sizeof b->via, "?");
    snprintf(b->lib, sizeof b->lib, "?");
    b->exe = 0;
    if (ret != NULL && dladdr(ret, &di) != 0) {
        name_of(di.dli_fname, b->via);
        have_via = 1;
    }
    for (int i = 0; i < n; i++) {
        char name[SHIM_NAME_MAX];
        if (dladdr(frame[i], &di) == 0 || di.dli_fbase == shim.own_base)
            continue;
        name_of(di.dli_fname, name);
        if (!have_via) {
            memcpy(b->via, name, sizeof name);
            have_via = 1;
        }
        if (is_system_object(name))
            continue;
        memcpy(b->lib, name, sizeof name);
        b->exe = di.dli_fbase == shim.exe_base;
        return;
    }
    memcpy(b->lib, b->via, sizeof b->via);
}

static void *start_trampoline(void *p)
{
    start_box_t b = *(start_box_t *)p;
    free(p);
    rec_emit("thread", "creator=%d seq=%lu via=%s lib=%s exe=%d", b.creator, b.seq, b.via, b.lib, b.exe);
    return b.fn(b.arg);
}

static pthread_create_fn resolve_pthread_create(void)
{
    pthread_create_fn f = __atomic_load_n(&real_pthread_create, __ATOMIC_ACQUIRE);
    if (f == NULL) {
        f = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        __atomic_store_n(&real_pthread_create, f, __ATOMIC_RELEASE);
    }
    return f;
}

SHIM_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int saved = errno, rc;
    pthread_create_fn real = resolve_pthread_create();
    start_box_t *b;
    if (real == NULL)
        return EAGAIN;
    if (!shim.on || (b = malloc(sizeof *b)) == NULL) {
        errno = saved;
        return real(thread, attr, fn, arg);
    }
    b->fn = fn;
    b->arg = arg;
    b->creator = self_tid();
    b->seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    describe_caller(__builtin_return_address(0), b);
    errno = saved;
    rc = real(thread, attr, start_trampoline, b);
    if (rc != 0)
        free(b);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Team shapes (both runtimes)                                                               */

/* Record (index, size, level, primary) once per thread and shape. */
static void team_note(const char *api, const char *rt, int index, int size, int level, int primary)
{
    int i;
    for (i = 0; i < tls_seen.n; i++)
        if (tls_seen.k[i].size == size && tls_seen.k[i].index == index && tls_seen.k[i].level == level &&
            tls_seen.k[i].primary == primary)
            return;
    if (tls_seen.n == SHIM_SEEN_MAX) {
        if (!tls_seen.lost) {
            tls_seen.lost = 1;
            rec_emit("lost", "what=team-shapes max=%d", SHIM_SEEN_MAX);
        }
        return;
    }
    tls_seen.k[i].size = size, tls_seen.k[i].index = index, tls_seen.k[i].level = level;
    tls_seen.k[i].primary = primary;
    tls_seen.n++;
    rec_emit("team", "api=%s index=%d size=%d level=%d primary=%d rt=%s", api, index, size, level, primary, rt);
}

/* ---------------------------------------------------------------------------------------- */
/* GNU libgomp: GOMP_parallel and the combined constructs                                    */

typedef void (*gomp_body_t)(void *);
typedef int (*omp_int_fn)(void);

static struct {
    pthread_once_t once;
    int ok;
    char rt[SHIM_NAME_MAX];
    omp_int_fn thread_num, num_threads, level;
    void (*parallel)(gomp_body_t, void *, unsigned, unsigned);
    unsigned (*parallel_reductions)(gomp_body_t, void *, unsigned, unsigned);
    void (*loop_static)(gomp_body_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_dynamic)(gomp_body_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_guided)(gomp_body_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_dynamic)(gomp_body_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_guided)(gomp_body_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_runtime)(gomp_body_t, void *, unsigned, long, long, long, unsigned);
    void (*loop_nonmonotonic_runtime)(gomp_body_t, void *, unsigned, long, long, long, unsigned);
    void (*loop_maybe_nonmonotonic_runtime)(gomp_body_t, void *, unsigned, long, long, long, unsigned);
    void (*sections)(gomp_body_t, void *, unsigned, unsigned, unsigned);
} gomp = {.once = PTHREAD_ONCE_INIT};

/* The omp_* queries of the runtime object @p entry lies in (libgomp, or libomp's GOMP layer), so a
 * process with two runtimes asks the one that runs the region. */
static void gomp_resolve_queries(const void *entry)
{
    Dl_info di;
    void *h;
    snprintf(gomp.rt, sizeof gomp.rt, "?");
    if (entry == NULL || dladdr(entry, &di) == 0 || di.dli_fname == NULL)
        return;
    name_of(di.dli_fname, gomp.rt);
    if ((h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) == NULL)
        return;
    gomp.thread_num = (omp_int_fn)dlsym(h, "omp_get_thread_num");
    gomp.num_threads = (omp_int_fn)dlsym(h, "omp_get_num_threads");
    gomp.level = (omp_int_fn)dlsym(h, "omp_get_level");
    dlclose(h);   /* RTLD_NOLOAD took a reference to an object that stays loaded */
    gomp.ok = gomp.thread_num != NULL && gomp.num_threads != NULL;
}

static void gomp_resolve(void)
{
    int saved = errno;
#define GOMP_NEXT(field, name) *(void **)&gomp.field = dlsym(RTLD_NEXT, name)
    GOMP_NEXT(parallel, "GOMP_parallel");
    GOMP_NEXT(parallel_reductions, "GOMP_parallel_reductions");
    GOMP_NEXT(loop_static, "GOMP_parallel_loop_static");
    GOMP_NEXT(loop_dynamic, "GOMP_parallel_loop_dynamic");
    GOMP_NEXT(loop_guided, "GOMP_parallel_loop_guided");
    GOMP_NEXT(loop_nonmonotonic_dynamic, "GOMP_parallel_loop_nonmonotonic_dynamic");
    GOMP_NEXT(loop_nonmonotonic_guided, "GOMP_parallel_loop_nonmonotonic_guided");
    GOMP_NEXT(loop_runtime, "GOMP_parallel_loop_runtime");
    GOMP_NEXT(loop_nonmonotonic_runtime, "GOMP_parallel_loop_nonmonotonic_runtime");
    GOMP_NEXT(loop_maybe_nonmonotonic_runtime, "GOMP_parallel_loop_maybe_nonmonotonic_runtime");
    GOMP_NEXT(sections, "GOMP_parallel_sections");
#undef GOMP_NEXT
    gomp_resolve_queries((const void *)gomp.parallel);
    errno = saved;
}

/* What the dynamic linker does when a lazily bound symbol has no definition. */
static void gomp_missing(const char *name) __attribute__((noreturn));
static void gomp_missing(const char *name)
{
    char msg[160];
    int n = snprintf(msg, sizeof msg, "symbol lookup error: undefined symbol: %s (libbkm_team.so found no "
                     "OpenMP runtime that defines it)\n", name);
    if (n > 0)
        (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    _exit(127);
}

/* The body's real function and data, passed as the data of gomp_trampoline. Its first word is the
 * first word of the real data: GOMP_parallel_reductions reads the task reductions' descriptor
 * through it (*(uintptr_t **)data, in libgomp and in libomp's GOMP layer) before the team starts. */
typedef struct gomp_box {
    void *first_word;
    gomp_body_t fn;
    void *data;
    int primary;
} gomp_box_t;

static int gomp_level(void)
{
    return gomp.level ? gomp.level() : -1;
}

/* Runs on every thread of the team, the primary included; the box lives on the primary's stack
 * until the region's final barrier, which every thread passes before the primary returns. */
static void gomp_trampoline(void *p)
{
    const gomp_box_t *b = p;
    if (gomp.ok)
        team_note("gomp", gomp.rt, gomp.thread_num(), gomp.num_threads(), gomp_level(), b->primary);
    b->fn(b->data);
}

/* Sets up the box for one region and resolves the next definition once; fn/data are what the
 * runtime will call. */
#define GOMP_ENTER(field, name)                                                                   \
    pthread_once(&gomp.once, gomp_resolve);                                                       \
    if (gomp.field == NULL)                                                                       \
        gomp_missing(name);                                                                       \
    gomp_box_t box = {NULL, fn, data, shim.on ? self_tid() : 0};                                  \
    gomp_body_t call_fn = shim.on ? gomp_trampoline : fn;                                         \
    void *call_data = shim.on ? (void *)&box : data

SHIM_EXPORT void GOMP_parallel(gomp_body_t fn, void *data, unsigned num_threads, unsigned flags)
{
    GOMP_ENTER(parallel, "GOMP_parallel");
    gomp.parallel(call_fn, call_data, num_threads, flags);
}

SHIM_EXPORT unsigned GOMP_parallel_reductions(gomp_body_t fn, void *data, unsigned num_threads, unsigned flags)
{
    GOMP_ENTER(parallel_reductions, "GOMP_parallel_reductions");
    box.first_word = *(void **)data;
    return gomp.parallel_reductions(call_fn, call_data, num_threads, flags);
}

#define GOMP_LOOP_CHUNKED(sym, field)                                                             \
    SHIM_EXPORT void sym(gomp_body_t fn, void *data, unsigned num_threads, long start, long end,   \
                         long incr, long chunk_size, unsigned flags)                              \
    {                                                                                             \
        GOMP_ENTER(field, #sym);                                                                  \
        gomp.field(call_fn, call_data, num_threads, start, end, incr, chunk_size, flags);          \
    }
#define GOMP_LOOP_RUNTIME(sym, field)                                                             \
    SHIM_EXPORT void sym(gomp_body_t fn, void *data, unsigned num_threads, long start, long end,   \
                         long incr, unsigned flags)                                               \
    {                                                                                             \
        GOMP_ENTER(field, #sym);                                                                  \
        gomp.field(call_fn, call_data, num_threads, start, end, incr, flags);                      \
    }

GOMP_LOOP_CHUNKED(GOMP_parallel_loop_static, loop_static)
GOMP_LOOP_CHUNKED(GOMP_parallel_loop_dynamic, loop_dynamic)
GOMP_LOOP_CHUNKED(GOMP_parallel_loop_guided, loop_guided)
GOMP_LOOP_CHUNKED(GOMP_parallel_loop_nonmonotonic_dynamic, loop_nonmonotonic_dynamic)
GOMP_LOOP_CHUNKED(GOMP_parallel_loop_nonmonotonic_guided, loop_nonmonotonic_guided)
GOMP_LOOP_RUNTIME(GOMP_parallel_loop_runtime, loop_runtime)
GOMP_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime, loop_nonmonotonic_runtime)
GOMP_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime)

SHIM_EXPORT void GOMP_parallel_sections(gomp_body_t fn, void *data, unsigned num_threads, unsigned count,
                                        unsigned flags)
{
    GOMP_ENTER(sections, "GOMP_parallel_sections");
    gomp.sections(call_fn, call_data, num_threads, count, flags);
}

/* ---------------------------------------------------------------------------------------- */
/* LLVM libomp / Intel libiomp5: the OMPT tool                                               */

static struct {
    char rt[SHIM_NAME_MAX];
    omp_int_fn level;
} ompt;

static const char *ompt_thread_name(int type)
{
    switch (type) {
    case BKM_PROG_OMPT_INITIAL: return "initial";
    case BKM_PROG_OMPT_WORKER: return "worker";
    case BKM_PROG_OMPT_OTHER: return "other";
    default: return "unknown";
    }
}

static void ompt_on_thread_begin(int type, shim_ompt_data_t *thread_data)
{
    (void)thread_data;
    rec_emit("othread", "type=%s rt=%s", ompt_thread_name(type), ompt.rt);
}

/* Each team remembers its primary: the TID of the thread that encountered the region. */
static void ompt_on_parallel_begin(shim_ompt_data_t *encountering_task_data, const void *encountering_task_frame,
                                   shim_ompt_data_t *parallel_data, unsigned requested, int flags,
                                   const void *codeptr_ra)
{
    (void)encountering_task_data, (void)encountering_task_frame, (void)requested, (void)flags, (void)codeptr_ra;
    if (parallel_data != NULL)
        parallel_data->value = (uint64_t)self_tid();
}

static int ompt_level(void)
{
    return ompt.level ? ompt.level() : -1;
}

static void ompt_on_implicit_task(int endpoint, shim_ompt_data_t *parallel_data, shim_ompt_data_t *task_data,
                                  unsigned actual_parallelism, unsigned index, int flags)
{
    (void)task_data;
    if (endpoint != SHIM_OMPT_SCOPE_BEGIN || (flags & SHIM_OMPT_TASK_INITIAL))
        return;
    team_note("ompt", ompt.rt, (int)index, (int)actual_parallelism, ompt_level(),
              parallel_data != NULL ? (int)parallel_data->value : 0);
}

static int ompt_initialize(shim_ompt_lookup_t lookup, int initial_device_num, shim_ompt_data_t *tool_data)
{
    shim_ompt_set_callback_t set_cb = (shim_ompt_set_callback_t)lookup("ompt_set_callback");
    Dl_info di;
    int saved = errno;
    (void)initial_device_num, (void)tool_data;
    snprintf(ompt.rt, sizeof ompt.rt, "?");
    if (dladdr((const void *)lookup, &di) != 0 && di.dli_fname != NULL) {
        void *h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        name_of(di.dli_fname, ompt.rt);
        if (h != NULL) {
            ompt.level = (omp_int_fn)dlsym(h, "omp_get_level");
            dlclose(h);
        }
    }
    if (set_cb == NULL) {
        errno = saved;
        return 0;   /* not a usable OMPT runtime: deactivate the tool */
    }
    int a = set_cb(SHIM_OMPT_CB_THREAD_BEGIN, (shim_ompt_fn_t)ompt_on_thread_begin);
    int b = set_cb(SHIM_OMPT_CB_PARALLEL_BEGIN, (shim_ompt_fn_t)ompt_on_parallel_begin);
    int c = set_cb(SHIM_OMPT_CB_IMPLICIT_TASK, (shim_ompt_fn_t)ompt_on_implicit_task);
    rec_emit("ompt", "rt=%s thread_begin=%d parallel_begin=%d implicit_task=%d", ompt.rt, a, b, c);
    errno = saved;
    return 1;
}

static void ompt_finalize(shim_ompt_data_t *tool_data)
{
    (void)tool_data;
}

static shim_ompt_result_t ompt_result = {ompt_initialize, ompt_finalize, {0}};

/* The runtime calls this once at its initialisation. Another tool comes first: one that the next
 * object in the lookup order offers, or one named by OMP_TOOL_LIBRARIES (which the runtime only
 * consults when this returns NULL), so the program's own tool runs as it would without the shim. */
SHIM_EXPORT shim_ompt_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    typedef shim_ompt_result_t *(*start_fn)(unsigned int, const char *);
    start_fn next;
    int saved = errno;
    shim_ompt_result_t *r;
    char ver[SHIM_NAME_MAX];
    if (!shim.on)
        return NULL;
    next = (start_fn)dlsym(RTLD_NEXT, "ompt_start_tool");
    if (next != NULL && (r = next(omp_version, runtime_version)) != NULL) {
        errno = saved;
        return r;
    }
    errno = saved;
    if (shim.defer_ompt)
        return NULL;
    name_of(runtime_version, ver);
    rec_emit("tool", "omp_version=%u runtime=%s", omp_version, ver);
    return &ompt_result;
}

/* ---------------------------------------------------------------------------------------- */
/* Load and fork                                                                             */

static void after_fork_child(void)
{
    int parent_tid = tls_tid;
    tls_tid = 0;
    tls_seen.n = tls_seen.lost = 0;
    rec_emit("fork", "ppid=%d parent_tid=%d", (int)getppid(), parent_tid);
}

/* OMP_TOOL_LIBRARIES that names anything but this object makes the shim's tool step aside. */
static int tool_libraries_defer(const char *list, const char *own)
{
    const char *p = list;
    if (list == NULL || *list == '\0')
        return 0;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && (own == NULL || strlen(own) != n || strncmp(p, own, n) != 0))
            return 1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

__attribute__((constructor)) static void shim_load(void)
{
    int saved = errno, fd;
    const char *log = getenv(BKM_PROG_LOG_ENV);
    Dl_info di;
    const void *phdr = (const void *)getauxval(AT_PHDR);
    char exe[SHIM_NAME_MAX];
    if (log == NULL || log[0] == '\0' || strlen(log) >= sizeof shim.log)
        goto out;
    fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0)
        goto out;
    close(fd);
    memcpy(shim.log, log, strlen(log) + 1);
    if (dladdr((const void *)shim_load, &di) != 0) {
        shim.own_base = di.dli_fbase;
        shim.defer_ompt = tool_libraries_defer(getenv("OMP_TOOL_LIBRARIES"), di.dli_fname);
    }
    snprintf(exe, sizeof exe, "?");
    if (phdr != NULL && dladdr(phdr, &di) != 0) {
        shim.exe_base = di.dli_fbase;
        name_of(di.dli_fname, exe);
    }
    resolve_pthread_create();
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
        goto out;
    shim.on = 1;
    rec_emit("start", "ppid=%d prog=%s version=%d", (int)getppid(), exe, BKM_PROG_LOG_VERSION);
out:
    errno = saved;
}
