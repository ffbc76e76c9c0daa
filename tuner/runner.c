/* SPDX-License-Identifier: MIT */
/* The trial runner (parent side): one fresh worker process per trial (posix_spawn), with a
 * cleaned environment, JSON on a pipe of its own, the tail of stdout+stderr kept, a timeout, a
 * prompt stop, and every way a worker can end mapped to a trial status; and the result. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"
#include "tuner_int.h"

/* ---------------------------------------------------------------------------------------- */
/* Result                                                                                    */

void bkm_tune_trial_result_free(bkm_tune_trial_result_t *r)
{
    if (r == NULL)
        return;
    bkm_free(r->json);
    bkm_json_free(r->doc);
    bkm_free(r->samples_ms);
    bkm_free(r->counters);
    memset(r, 0, sizeof *r);
}

static void result_reset_numbers(bkm_tune_trial_result_t *r)
{
    r->median_ms = r->min_ms = r->mad_ms = r->ci95_lo_ms = r->ci95_hi_ms = NAN;
    r->flops_per_iter = r->gflops = r->check_value = NAN;
    r->disturbed = -1;
    r->noise_share = NAN;
}

/* The counter state of one event of the worker's "counters" object: "values" (counted),
 * "disagree" (counted, contradicted by the OS: both figures) or "unavailable" (with the reason);
 * "domains" and "os_checked" add the domain and the OS figure it was checked against. */
static int result_counter_number(const bkm_json_t *m, const char *what, long long *v, bkm_err_t *err)
{
    if (m == NULL || m->type != BKM_JSON_NUM) {
        *v = -1;
        return BKM_OK;
    }
    if (!(fabs(m->num) < 0x1p63))   /* NaN, Inf, beyond long long */
        return bkm_err_set(err, BKM_EINVAL, "non-finite or out-of-range value %g of counter %s", m->num, what);
    *v = (long long)m->num;
    return BKM_OK;
}

static int result_parse_counters(bkm_tune_trial_result_t *r, const bkm_json_t *c, bkm_err_t *err)
{
    const bkm_json_t *vals = bkm_json_get(c, "values"), *un = bkm_json_get(c, "unavailable"),
                     *dis = bkm_json_get(c, "disagree"), *dom = bkm_json_get(c, "domains"),
                     *chk = bkm_json_get(c, "os_checked");
    size_t n = (vals ? vals->n_children : 0) + (un ? un->n_children : 0) + (dis ? dis->n_children : 0);
    int rc;
    if (n == 0)
        return BKM_OK;
    r->counters = bkm_calloc(n, sizeof *r->counters);
    if (r->counters == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu counters", n);
    for (const bkm_json_t *m = vals ? vals->child : NULL; m; m = m->next) {
        bkm_counter_t *e = &r->counters[r->n_counters++];
        const bkm_json_t *ck = chk ? bkm_json_get(chk, m->key) : NULL;
        snprintf(e->name, sizeof e->name, "%s", m->key);
        e->available = 1;
        if ((rc = result_counter_number(m, m->key, &e->value, err)) < 0 ||
            (rc = result_counter_number(ck ? bkm_json_get(ck, "os") : NULL, m->key, &e->os_value, err)) < 0)
            return rc;
        if (e->value < 0)
            e->value = 0;
        if (e->os_value >= 0)   /* checked against the OS: its figure and source */
            snprintf(e->os_source, sizeof e->os_source, "%s",
                     bkm_json_get_str(ck, "os_source") ? bkm_json_get_str(ck, "os_source") : "the OS");
    }
    for (const bkm_json_t *m = dis ? dis->child : NULL; m; m = m->next) {
        bkm_counter_t *e = &r->counters[r->n_counters++];
        snprintf(e->name, sizeof e->name, "%s", m->key);
        e->available = e->disagrees = 1;
        if ((rc = result_counter_number(bkm_json_get(m, "papi"), m->key, &e->value, err)) < 0 ||
            (rc = result_counter_number(bkm_json_get(m, "os"), m->key, &e->os_value, err)) < 0)
            return rc;
        snprintf(e->os_source, sizeof e->os_source, "%s",
                 bkm_json_get_str(m, "os_source") ? bkm_json_get_str(m, "os_source") : "the OS");
        snprintf(e->reason, sizeof e->reason, "%s",
                 bkm_json_get_str(m, "reason") ? bkm_json_get_str(m, "reason") : "disagrees with the OS");
    }
    for (const bkm_json_t *m = un ? un->child : NULL; m; m = m->next) {
        bkm_counter_t *e = &r->counters[r->n_counters++];
        snprintf(e->name, sizeof e->name, "%s", m->key);
        snprintf(e->reason, sizeof e->reason, "%s", m->type == BKM_JSON_STR ? m->str : "unavailable");
    }
    for (int i = 0; dom && i < r->n_counters; i++) {
        const char *d = bkm_json_get_str(dom, r->counters[i].name);
        if (d != NULL)
            snprintf(r->counters[i].domain, sizeof r->counters[i].domain, "%s", d);
    }
    return BKM_OK;
}

int bkm_tune_trial_result_parse(bkm_tune_trial_result_t *r, const char *json, bkm_err_t *err)
{
    const bkm_json_t *v, *check;
    int rc;
    bkm_json_free(r->doc);
    r->doc = NULL;
    bkm_free(r->samples_ms);
    r->samples_ms = NULL;
    r->n_samples = 0;
    bkm_free(r->counters);
    r->counters = NULL;
    r->n_counters = 0;
    result_reset_numbers(r);
    rc = bkm_json_parse(json, &r->doc, err);
    if (rc < 0)
        return bkm_err_prefix(err, "worker output is not JSON");
    if (r->doc->type != BKM_JSON_OBJ)
        return bkm_err_set(err, BKM_EINVAL, "worker output is not a JSON object");
    v = bkm_json_get(r->doc, "samples_ms");
    if (v != NULL) {
        if (v->type != BKM_JSON_ARR)
            return bkm_err_set(err, BKM_EINVAL, "worker output: samples_ms is not an array");
        if (v->n_children > 0) {
            r->samples_ms = bkm_calloc(v->n_children, sizeof *r->samples_ms);
            if (r->samples_ms == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu samples", v->n_children);
        }
        for (const bkm_json_t *e = v->child; e; e = e->next) {
            /* null is how bkm's JSON writer spells a NaN or an infinity */
            if (e->type == BKM_JSON_NULL || (e->type == BKM_JSON_NUM && !isfinite(e->num))) {
                rc = bkm_err_set(err, BKM_EINVAL, "non-finite sample %d in samples_ms (%s)", r->n_samples,
                                 e->type == BKM_JSON_NULL ? "null" : isnan(e->num) ? "nan" : "inf");
                r->n_samples = 0;
                return rc;
            }
            if (e->type != BKM_JSON_NUM)
                return bkm_err_set(err, BKM_EINVAL, "worker output: sample %d is not a number", r->n_samples);
            r->samples_ms[r->n_samples++] = e->num;
        }
    }
    {
        static const char *const stats[] = {"median_ms", "min_ms", "mad_ms", "flops_per_iter", "gflops"};
        for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
            if (!isfinite(bkm_json_get_num(r->doc, stats[i], 0)))
                return bkm_err_set(err, BKM_EINVAL, "non-finite %s (%g) in the worker's result", stats[i],
                                   bkm_json_get_num(r->doc, stats[i], 0));
    }
    r->median_ms = bkm_json_get_num(r->doc, "median_ms", NAN);
    r->min_ms = bkm_json_get_num(r->doc, "min_ms", NAN);
    r->mad_ms = bkm_json_get_num(r->doc, "mad_ms", NAN);
    v = bkm_json_get(r->doc, "ci95_ms");
    if (v != NULL && v->type == BKM_JSON_ARR && v->n_children == 2) {
        r->ci95_lo_ms = bkm_json_at(v, 0)->type == BKM_JSON_NUM ? bkm_json_at(v, 0)->num : NAN;
        r->ci95_hi_ms = bkm_json_at(v, 1)->type == BKM_JSON_NUM ? bkm_json_at(v, 1)->num : NAN;
    }
    r->flops_per_iter = bkm_json_get_num(r->doc, "flops_per_iter", NAN);
    r->gflops = bkm_json_get_num(r->doc, "gflops", NAN);
    check = bkm_json_get(r->doc, "check");
    r->check_kind[0] = '\0';
    if (check != NULL && check->type == BKM_JSON_OBJ && check->child != NULL && check->child->type == BKM_JSON_NUM) {
        snprintf(r->check_kind, sizeof r->check_kind, "%s", check->child->key);
        r->check_value = check->child->num;
    }
    snprintf(r->impl, sizeof r->impl, "%s", bkm_json_get_str(r->doc, "impl") ? bkm_json_get_str(r->doc, "impl") : "");
    v = bkm_json_get(r->doc, "noise");
    if (v != NULL && v->type == BKM_JSON_OBJ) {
        const bkm_json_t *d = bkm_json_get(v, "disturbed");
        r->disturbed = d != NULL && d->type == BKM_JSON_BOOL ? d->boolean != 0 : -1;
        r->noise_share = bkm_json_get_num(v, "share", NAN);
    }
    v = bkm_json_get(r->doc, "counters");
    if (v != NULL && v->type == BKM_JSON_OBJ)
        return result_parse_counters(r, v, err);
    return BKM_OK;
}

void bkm_tune_trial_result_to_json(const bkm_tune_trial_result_t *r, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "status");
    bkm_json_str(w, bkm_trial_status_name(r->status));
    bkm_json_key(w, "message");
    bkm_json_str(w, r->message);
    bkm_json_key(w, "exit_code");
    bkm_json_int(w, r->exit_code);
    bkm_json_key(w, "signal");
    bkm_json_str(w, r->signal_name[0] ? r->signal_name : NULL);
    bkm_json_key(w, "wall_s");
    bkm_json_double(w, r->wall_s);
    bkm_json_key(w, "stderr_tail");
    bkm_json_str(w, r->stderr_tail);
    for (const bkm_json_t *m = r->doc && r->doc->type == BKM_JSON_OBJ ? r->doc->child : NULL; m; m = m->next) {
        if (strcmp(m->key, "status") == 0 || strcmp(m->key, "message") == 0)
            continue;
        bkm_json_key(w, m->key);
        bkm_json_write_tree(w, m);
    }
    bkm_json_obj_end(w);
}

/* ---------------------------------------------------------------------------------------- */
/* Runner                                                                                    */

/* Design note: what reaches the worker, and how a trial ends.
 *
 * Environment. The worker inherits the tuner's environment except (1) OMP_*, KMP_*, GOMP_*:
 * the trial's own settings are exported exactly, in the planner's order, with OMP_NUM_THREADS;
 * and (2) HWLOC_*: hwloc honours HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT, ... when it
 * discovers "this host", so the worker would plan its binding on another topology than the one
 * libomp binds on. The tuner itself refuses to measure under those (bkm_tune_env_check).
 * Everything else is inherited unchanged: ONEDNN_* / DNNL_* (the user's diagnostics or ISA
 * caps), LD_PRELOAD / LD_LIBRARY_PATH (a second OpenMP runtime fails the worker's
 * single-runtime check, status binding-mismatch), PATH, PAPI_*, ...
 *
 * Descriptors. stdin is /dev/null; the JSON goes to a pipe of its own (descriptor 3, named by
 * --result-fd), so a library printing on stdout (ONEDNN_VERBOSE=1) cannot corrupt it; stdout
 * and stderr share the second pipe, of which the last BKM_TUNE_STDERR_TAIL bytes are kept.
 *
 * End of a trial. The worker's exit is watched directly (a pidfd, else waitid every 50 ms), not
 * only EOF on the pipes: a grandchild may keep them open. The exit is observed with WNOWAIT, so
 * the worker stays a zombie, its pid and process group cannot be reused, and the whole group is
 * SIGKILLed before the worker is reaped. A stop of the tuner (SIGINT/SIGTERM, seen through
 * runner->stop) kills the group at once and the trial is "interrupted": it is not a result. A
 * batch system (Slurm's time limit, scancel) signals every process of the job at once, so the
 * worker may die of SIGTERM before the tuner's handler has run: a worker killed by SIGTERM,
 * SIGINT or SIGHUP is called crashed only when no stop follows within STOP_GRACE_NS. */

#define STOP_GRACE_NS 2000000000ull   /* see the note: a signal to the tuner that trails the worker's */
#define POLL_SLICE_MS 50              /* upper bound on noticing a stop that raced with poll() */

/* Position of @p key in the order the planner assumes libomp reads the affinity variables
 * (bkm_aff_env_export): 1..8, or 0 for any other variable. */
static int env_rank(const char *key)
{
    static const char set[] = "";
    const bkm_aff_env_t all = {.kmp_affinity = set, .kmp_hw_subset = set, .kmp_place_threads = set,
                               .kmp_blocktime = set, .omp_places = set, .omp_proc_bind = set,
                               .gomp_cpu_affinity = set, .omp_wait_policy = set};
    const char *names[8], *values[8];
    int n = bkm_aff_env_export(&all, names, values);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], key) == 0)
            return i + 1;
    return 0;
}

static int runner_build_env(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, char ***out,
                            bkm_err_t *err)
{
    size_t n_parent = 0, k = 0, len;
    char **env = NULL;
    int rc = BKM_OK, keep_hwloc = bkm_tune_env_hwloc_asserted(rn->environ);
    for (char *const *e = rn->environ; e && *e; e++)
        n_parent++;
    env = bkm_calloc(n_parent + (size_t)spec->n_env + 2, sizeof *env);
    if (env == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker environment");
        goto out;
    }
    for (size_t i = 0; i < n_parent; i++) {
        const char *s = rn->environ[i], *eq = strchr(s, '=');
        char name[256];
        len = eq ? (size_t)(eq - s) : strlen(s);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, s, len);
        name[len] = '\0';
        if (bkm_tune_env_is_openmp(name) || (bkm_tune_env_is_hwloc(name) && !keep_hwloc))
            continue;
        if ((env[k++] = bkm_strdup(s)) == NULL)
            goto oom;
    }
    /* libomp 14 applies OMP_PROC_BIND, OMP_PLACES and a type-less KMP_AFFINITY in environment
     * order, the last one winning; the planner assumes bkm_aff_env_export's order, so the trial's
     * variables are written in that order (others first, as given). */
    for (int rank = 0; rank <= 8; rank++) {
        for (int i = 0; i < spec->n_env; i++) {
            bkm_buf_t b;
            if (env_rank(spec->env[i].key) != rank)
                continue;
            bkm_buf_init(&b);
            bkm_buf_printf(&b, "%s=%s", spec->env[i].key, spec->env[i].value);
            if ((env[k++] = bkm_buf_take(&b)) == NULL)
                goto oom;
        }
    }
    {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_buf_printf(&b, "OMP_NUM_THREADS=%d", spec->threads);
        if ((env[k++] = bkm_buf_take(&b)) == NULL)
            goto oom;
    }
    *out = env;
    env = NULL;
    goto out;
oom:
    rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker environment");
out:
    for (size_t i = 0; env && env[i]; i++)
        bkm_free(env[i]);
    bkm_free(env);
    return rc;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        bkm_free(v[i]);
    bkm_free(v);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGQUIT: return "SIGQUIT";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return NULL;
    }
}

/* Keep only the last BKM_TUNE_STDERR_TAIL bytes of stderr. */
static void tail_append(char *tail, size_t *len, const char *data, size_t n)
{
    const size_t cap = BKM_TUNE_STDERR_TAIL;
    if (n >= cap) {
        memcpy(tail, data + n - cap, cap);
        *len = cap;
    } else {
        if (*len + n > cap) {
            size_t drop = *len + n - cap;
            memmove(tail, tail + drop, *len - drop);
            *len -= drop;
        }
        memcpy(tail + *len, data, n);
        *len += n;
    }
    tail[*len] = '\0';
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int stop_requested(const bkm_tune_runner_t *rn)
{
    return rn->stop != NULL && *rn->stop != 0;
}

/* SIGCHLD set to SIG_IGN (or SA_NOCLDWAIT) has the kernel reap children itself: the worker's
 * exit status would be lost. */
static int sigchld_ignored(void)
{
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) != 0)
        return 0;
    return (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN) || (sa.sa_flags & SA_NOCLDWAIT) != 0;
}

/* A close-on-exec pipe whose ends are above the three standard descriptors and the result
 * descriptor (a tuner started with 0-2 closed would otherwise get them, and dup2 onto the same
 * number keeps close-on-exec). The reading end is non-blocking. */
static int pipe_make(int p[2], bkm_err_t *err)
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return bkm_err_set(err, BKM_EIO, "pipe for the worker: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        if (p[i] <= BKM_WORKER_RESULT_FD) {
            int hi = fcntl(p[i], F_DUPFD_CLOEXEC, BKM_WORKER_RESULT_FD + 1);
            if (hi < 0)
                return bkm_err_set(err, BKM_EIO, "pipe for the worker: %s", strerror(errno));
            close(p[i]);
            p[i] = hi;
        }
    }
    if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
        return bkm_err_set(err, BKM_EIO, "pipe for the worker: %s", strerror(errno));
    return BKM_OK;
}

/* How the watch over a running process ended: tuner_int.h (END_EXIT, END_TIMEOUT, ...). */

typedef struct runner_io {
    int fd[2];                 /* [0] the JSON pipe (-1: none), [1] stdout+stderr; -1 once at EOF */
    bkm_buf_t *json;
    size_t json_max;
    size_t tail_len;
    int overflow;              /* the JSON (or a program's output) went past its cap */
    const bkm__tune_proc_t *proc; /* its output callback and cap */
    size_t output_len;         /* bytes of stdout+stderr so far */
} runner_io_t;

/* Read what @p io->fd[i] holds now (non-blocking; at most @p max_chunks reads, so that a worker
 * writing without pause cannot hold the watch) into the JSON buffer or the tail. */
static int runner_read(runner_io_t *io, int i, size_t max_chunks, bkm_tune_trial_result_t *r, bkm_err_t *err)
{
    char chunk[8192];
    for (size_t c = 0; c < max_chunks; c++) {
        ssize_t got = read(io->fd[i], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return BKM_OK;
        if (got <= 0) {
            close_fd(&io->fd[i]);
            return BKM_OK;
        }
        if (i == 1) {
            tail_append(r->stderr_tail, &io->tail_len, chunk, (size_t)got);
            io->output_len += (size_t)got;
            if (io->proc->output_max && io->output_len > io->proc->output_max)
                io->overflow = 1;
            else if (io->proc->on_output)
                io->proc->on_output(io->proc->ud, chunk, (size_t)got);
            continue;
        }
        if (io->overflow)
            continue;
        if (io->json->len + (size_t)got > io->json_max) {
            io->overflow = 1;
            return BKM_OK;
        }
        bkm_buf_append(io->json, chunk, (size_t)got);
        if (io->json->oom)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker's output");
    }
    return BKM_OK;
}

/* Has @p pid exited? (observed with WNOWAIT: it stays a zombie, so its process group id cannot
 * be reused before the group is killed). 1 yes, 0 no, -1 error (errno). */
static int child_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        if (errno != EINTR)
            return -1;
    return si.si_pid == pid;
}

/* Watch the worker until it exits, the deadline passes, a stop is requested or its JSON grows
 * past the cap, reading both pipes meanwhile. *how is one of END_*. */
static int runner_watch(const bkm_tune_runner_t *rn, pid_t pid, int pidfd, uint64_t deadline_ns, runner_io_t *io,
                        bkm_tune_trial_result_t *r, int *how, bkm_err_t *err)
{
    int rc;
    for (;;) {
        struct pollfd p[3];
        int np = 0, idx[3], ex, ms;
        uint64_t now;
        if (stop_requested(rn)) {
            *how = END_STOP;
            return BKM_OK;
        }
        if (io->overflow) {
            *how = END_OVERFLOW;
            return BKM_OK;
        }
        if ((ex = child_exited(pid)) < 0)
            return bkm_err_set(err, BKM_EIO, "waitid on the worker: %s", strerror(errno));
        if (ex) {
            *how = END_EXIT;
            return BKM_OK;
        }
        now = bkm_now_ns();
        if (now >= deadline_ns) {
            *how = END_TIMEOUT;
            return BKM_OK;
        }
        if (io->proc->on_tick)
            io->proc->on_tick(io->proc->ud, pid);
        ms = (int)((deadline_ns - now) / 1000000ull) + 1;
        if (ms > io->proc->slice_ms)
            ms = io->proc->slice_ms;
        for (int i = 0; i < 2; i++) {
            if (io->fd[i] >= 0) {
                p[np].fd = io->fd[i];
                p[np].events = POLLIN;
                p[np].revents = 0;
                idx[np++] = i;
            }
        }
        if (pidfd >= 0) {
            p[np].fd = pidfd;
            p[np].events = POLLIN;
            p[np].revents = 0;
            idx[np++] = -1;
        }
        if (poll(p, (nfds_t)np, ms) < 0) {
            if (errno == EINTR)
                continue;
            return bkm_err_set(err, BKM_EIO, "poll on the worker's pipes: %s", strerror(errno));
        }
        for (int j = 0; j < np; j++)
            if (idx[j] >= 0 && p[j].revents != 0 && (rc = runner_read(io, idx[j], 64, r, err)) < 0)
                return rc;
    }
}

/* waitpid that retries on EINTR; returns the pid or -1. */
static pid_t wait_child(pid_t pid, int *status)
{
    pid_t w;
    do {
        w = waitpid(pid, status, 0);
    } while (w < 0 && errno == EINTR);
    return w;
}

/* Kill the worker's whole process group, then reap the worker (the group id stays ours until
 * then). */
static pid_t kill_and_reap(pid_t pid, int *wstatus)
{
    kill(-pid, SIGKILL);
    return wait_child(pid, wstatus);
}

/* Last non-empty line of @p text into @p buf (the worker's final complaint). */
static const char *last_line(const char *text, char *buf, size_t n)
{
    size_t len = strlen(text), end, start;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    end = len;
    start = end;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    if (end - start >= n)
        start = end - (n - 1);
    memcpy(buf, text + start, end - start);
    buf[end - start] = '\0';
    return buf;
}

/* An MPI trial whose launcher exited non-zero: the signal that killed a rank, as the launcher
 * reports it (hydra, on its stdout: "... EXIT STRING: Killed (signal 9)"; srun: exit status
 * 128 + N), else 0. @p out: the launcher's stdout (may be NULL), @p tail: its stderr. */
static int launcher_rank_signal(const char *out, const char *tail, int exit_code)
{
    const char *p, *q = NULL;
    for (p = out; p != NULL && (p = strstr(p, "(signal ")) != NULL;)
        q = p++;
    for (p = tail; q == NULL && p != NULL && (p = strstr(p, "(signal ")) != NULL;)
        q = p++;
    if (q != NULL) {
        int sig = atoi(q + 8);
        if (sig > 0 && sig < 65)
            return sig;
    }
    return exit_code > 128 && exit_code < 128 + 65 ? exit_code - 128 : 0;
}

static void runner_classify(bkm_tune_trial_result_t *r, int wstatus, int timed_out, const char *json,
                            int ranks, bkm_err_t *perr)
{
    bkm_err_t jerr = {0};
    int have_output = json != NULL && json[0] != '\0';
    int parsed = BKM_EINVAL;
    if (have_output)
        parsed = bkm_tune_trial_result_parse(r, json, &jerr);
    if (timed_out) {
        r->status = BKM_TRIAL_TIMEOUT;
        r->exit_code = -1;
        r->signal = SIGKILL;
        snprintf(r->signal_name, sizeof r->signal_name, "SIGKILL");
        return;
    }
    if (WIFSIGNALED(wstatus)) {
        const char *nm = signal_name(WTERMSIG(wstatus));
        r->status = BKM_TRIAL_CRASHED;
        r->exit_code = -1;
        r->signal = WTERMSIG(wstatus);
        if (nm)
            snprintf(r->signal_name, sizeof r->signal_name, "%s", nm);
        else
            snprintf(r->signal_name, sizeof r->signal_name, "SIG%d", r->signal);
        snprintf(r->message, sizeof r->message, "worker killed by %s%s", r->signal_name,
                 WCOREDUMP(wstatus) ? " (core dumped)" : "");
        return;
    }
    r->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    if (ranks > 0 && r->exit_code != 0 && r->exit_code != BKM_WORKER_EXIT_BINDING &&
        launcher_rank_signal(json, r->stderr_tail, r->exit_code) > 0) {
        const char *nm;
        r->signal = launcher_rank_signal(json, r->stderr_tail, r->exit_code);
        nm = signal_name(r->signal);
        r->status = BKM_TRIAL_CRASHED;
        if (nm)
            snprintf(r->signal_name, sizeof r->signal_name, "%s", nm);
        else
            snprintf(r->signal_name, sizeof r->signal_name, "SIG%d", r->signal);
        snprintf(r->message, sizeof r->message, "a rank of the %d-rank job was killed by %s; the launcher ended "
                 "the job (exit code %d)", ranks, r->signal_name, r->exit_code);
        return;
    }
    if (r->exit_code == BKM_WORKER_EXIT_BINDING) {
        r->status = BKM_TRIAL_BINDING_MISMATCH;
        snprintf(r->message, sizeof r->message, "threads were not bound as planned%s",
                 parsed == BKM_OK ? "" : " (no JSON with the difference)");
        if (parsed == BKM_OK && bkm_json_get_str(r->doc, "error"))
            snprintf(r->message, sizeof r->message, "%s", bkm_json_get_str(r->doc, "error"));
        return;
    }
    if (r->exit_code != 0) {
        char last[256];
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker exited with code %d%s%s", r->exit_code,
                 last_line(r->stderr_tail, last, sizeof last)[0] ? ": " : "", last);
        return;
    }
    if (parsed != BKM_OK) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker result unusable: %s",
                 have_output ? jerr.msg : "no JSON on its result descriptor");
        return;
    }
    if (r->n_samples == 0) {
        r->status = BKM_TRIAL_FAILED;
        snprintf(r->message, sizeof r->message, "worker result has no samples_ms");
        return;
    }
    r->status = BKM_TRIAL_OK;
    (void)perr;
}

/* A worker killed by SIGTERM/SIGINT/SIGHUP: wait up to STOP_GRACE_NS for the stop that a batch
 * system's signal to the whole job brings to the tuner too. 1 if it came. */
static int stop_follows(const bkm_tune_runner_t *rn, int wstatus)
{
    uint64_t t0 = bkm_now_ns();
    int sig;
    if (rn->stop == NULL || !WIFSIGNALED(wstatus))
        return 0;
    sig = WTERMSIG(wstatus);
    if (sig != SIGTERM && sig != SIGINT && sig != SIGHUP)
        return 0;
    while (!stop_requested(rn) && bkm_now_ns() - t0 < STOP_GRACE_NS) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);   /* the signal itself cuts it short */
    }
    return stop_requested(rn);
}

static void result_interrupted(bkm_tune_trial_result_t *r, const bkm_tune_runner_t *rn)
{
    r->status = BKM_TRIAL_INTERRUPTED;
    r->exit_code = -1;
    r->signal = 0;
    r->signal_name[0] = '\0';
    snprintf(r->message, sizeof r->message, "trial interrupted: the tuner was stopped (signal %d); not a result",
             rn->stop ? (int)*rn->stop : 0);
}

int bkm_tune_clear_stale_kmp(const char *dir, bkm_err_t *err)
{
    static const char prefix[] = "__KMP_REGISTERED_LIB_";
    DIR *dp = opendir(dir != NULL ? dir : "/dev/shm");
    struct dirent *de;
    int removed = 0;
    if (dp == NULL)
        return bkm_err_set(err, BKM_EIO, "cannot read %s: %s", dir != NULL ? dir : "/dev/shm", strerror(errno));
    while ((de = readdir(dp)) != NULL) {
        struct stat st;
        char *end;
        long pid;
        if (strncmp(de->d_name, prefix, sizeof prefix - 1) != 0)
            continue;
        errno = 0;
        pid = strtol(de->d_name + sizeof prefix - 1, &end, 10);
        if (errno != 0 || end == de->d_name + sizeof prefix - 1 || *end != '_' || pid <= 0)
            continue;
        if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) /* alive (or not ours to judge) */
            continue;
        if (unlinkat(dirfd(dp), de->d_name, 0) == 0)
            removed++;
    }
    closedir(dp);
    return removed;
}

/* launcher (4-7 words) + worker, "worker", --spec, JSON, --parent, PID, --result-fd, N, NULL */
#define RUNNER_ARGV_MAX 20

int bkm__tune_supervise(const bkm_tune_runner_t *rn, const bkm__tune_proc_t *p, bkm_tune_trial_result_t *r,
                        bkm__tune_proc_end_t *end, bkm_err_t *err)
{
    int out_pipe[2] = {-1, -1}, res_pipe[2] = {-1, -1};
    int rc = BKM_OK, src, pidfd = -1, fa_init = 0, attr_init = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t dflt, none;
    runner_io_t io;
    pid_t pid = -1;
    uint64_t t0;

    end->how = END_EXIT;
    end->wstatus = 0;
    end->pid = -1;
    if ((rc = pipe_make(out_pipe, err)) < 0 || (p->result_fd >= 0 && (rc = pipe_make(res_pipe, err)) < 0))
        goto out;
    if ((src = posix_spawn_file_actions_init(&fa)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn_file_actions_init: %s", strerror(src));
        goto out;
    }
    fa_init = 1;
    /* dup2 clears O_CLOEXEC on the new descriptors (all above 3: pipe_make); the pipe ends
     * themselves close on exec. */
    if ((src = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
        (src = posix_spawn_file_actions_adddup2(&fa, p->stdout_is_result ? res_pipe[1] : out_pipe[1], 1)) != 0 ||
        (src = posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 2)) != 0 ||
        (p->result_fd >= 0 && !p->stdout_is_result &&
         (src = posix_spawn_file_actions_adddup2(&fa, res_pipe[1], p->result_fd)) != 0)) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn file actions: %s", strerror(src));
        goto out;
    }
    if ((src = posix_spawnattr_init(&attr)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawnattr_init: %s", strerror(src));
        goto out;
    }
    attr_init = 1;
    /* Own process group (the whole group is killed at the end of every trial); default signal
     * dispositions and an empty mask, whatever the parent has set. */
    sigfillset(&dflt);
    sigdelset(&dflt, SIGKILL);
    sigdelset(&dflt, SIGSTOP);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    t0 = bkm_now_ns();
    (void)bkm_tune_clear_stale_kmp("/dev/shm", NULL); /* best effort: a process must not die of one */
    src = posix_spawn(&pid, p->exe, &fa, &attr, p->argv, p->envp);
    if (src != 0) {
        pid = -1;
        rc = bkm_err_set(err, BKM_EDEP, "cannot start %s '%s': %s", p->what, p->exe, strerror(src));
        goto out;
    }
    end->pid = pid;
    close_fd(&out_pipe[1]);
    close_fd(&res_pipe[1]);
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);   /* -1 before Linux 5.3: waitid every slice */
    if (pidfd >= 0)
        fcntl(pidfd, F_SETFD, FD_CLOEXEC);
#endif
    if (p->on_start)
        p->on_start(p->ud, pid);

    io.fd[0] = res_pipe[0];
    io.fd[1] = out_pipe[0];
    io.json = p->json;
    io.json_max = p->json_max;
    io.tail_len = 0;
    io.overflow = 0;
    io.proc = p;
    io.output_len = 0;
    rc = runner_watch(rn, pid, pidfd, t0 + (uint64_t)(p->timeout_s * 1e9), &io, r, &end->how, err);
    end->wall_s = (double)(bkm_now_ns() - t0) * 1e-9;   /* spawn to exit: a program's figure */
    if (p->on_exit)
        p->on_exit(p->ud, pid);   /* still a zombie (WNOWAIT): its /proc entries are still there */
    if (kill_and_reap(pid, &end->wstatus) < 0) {
        pid = -1;
        if (rc == BKM_OK)
            rc = bkm_err_set(err, BKM_EIO, "waitpid on %s: %s", p->what, strerror(errno));
    }
    pid = -1;
    /* What the process wrote before it ended is in the pipes: take it, without waiting for an
     * EOF that a grandchild holding the pipes would withhold (the group is dead now anyway). */
    for (int i = 0; rc == BKM_OK && i < 2; i++)
        if (io.fd[i] >= 0)
            rc = runner_read(&io, i, SIZE_MAX, r, err);
    res_pipe[0] = io.fd[0];   /* -1 where closed at EOF; the rest is closed below */
    out_pipe[0] = io.fd[1];
    end->overflow = io.overflow;
    end->output_len = io.output_len;
    r->wall_s = (double)(bkm_now_ns() - t0) * 1e-9;
out:
    if (pid > 0)
        kill_and_reap(pid, &end->wstatus);
    if (pidfd >= 0)
        close(pidfd);
    close_fd(&out_pipe[0]);
    close_fd(&out_pipe[1]);
    close_fd(&res_pipe[0]);
    close_fd(&res_pipe[1]);
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    return rc;
}

int bkm__tune_supervise_end(const bkm_tune_runner_t *rn, const bkm__tune_proc_end_t *end, bkm_tune_trial_result_t *r)
{
    if (end->how == END_STOP || stop_requested(rn) || stop_follows(rn, end->wstatus)) {
        result_interrupted(r, rn);
        return 1;
    }
    return 0;
}

/* The argv of a worker trial: `<worker> worker --spec JSON --parent PID --result-fd 3`, under the
 * MPI launcher for an MPI trial (rank 0 writes the JSON to its stdout, which the launcher
 * forwards to ours: the result pipe). Strings the argv points into live in @p bufs. */
typedef struct worker_argv_bufs {
    char parent_pid[24], result_fd[8], nranks[16], bind[48];
} worker_argv_bufs_t;

static int worker_argv(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, char *spec_json, char **argv,
                       worker_argv_bufs_t *b, const char **exe, bkm_err_t *err)
{
    int k = 0;
    *exe = rn->worker_path;
    if (spec->ranks > 0) {
        /* An MPI trial: the launcher starts spec->ranks workers, rank r bound to its own
         * spec->threads cores; the launcher passes the trial's environment to every rank. */
        if (rn->launcher == NULL || rn->launcher[0] == '\0')
            return bkm_err_set(err, BKM_EDEP, "trial runner: workload %s runs under an MPI launcher, and none was "
                               "found (install MPICH: mpiexec; or run inside a Slurm allocation: srun)", spec->workload);
        *exe = rn->launcher;
        snprintf(b->nranks, sizeof b->nranks, "%d", spec->ranks);
        argv[k++] = (char *)rn->launcher;
        argv[k++] = (char *)"-n";
        argv[k++] = b->nranks;
        if (rn->slurm_job_id != NULL && rn->slurm_job_id[0]) {
            snprintf(b->bind, sizeof b->bind, "--cpus-per-task=%d", spec->threads);
            argv[k++] = b->bind;
            argv[k++] = (char *)"--cpu-bind=cores";
            argv[k++] = (char *)"--export=ALL";
            argv[k++] = (char *)"--mpi=pmi2";   /* MPICH under srun: else every rank is a world of its own */
        } else {
            snprintf(b->bind, sizeof b->bind, "core:%d", spec->threads);
            argv[k++] = (char *)"-bind-to";
            argv[k++] = b->bind;
        }
    }
    argv[k++] = (char *)rn->worker_path;
    argv[k++] = (char *)(rn->worker_cmd ? rn->worker_cmd : "worker");
    argv[k++] = (char *)"--spec";
    argv[k++] = spec_json;
    if (spec->ranks == 0) {
        /* The worker dies with the tuner (PR_SET_PDEATHSIG) and checks this pid to close the race
         * of a tuner killed before the worker armed it. (Under a launcher the parent is the
         * launcher's proxy; the launcher dies with its process group.) */
        snprintf(b->parent_pid, sizeof b->parent_pid, "%ld", (long)getpid());
        argv[k++] = (char *)"--parent";
        argv[k++] = b->parent_pid;
        snprintf(b->result_fd, sizeof b->result_fd, "%d", BKM_WORKER_RESULT_FD);
        argv[k++] = (char *)"--result-fd";
        argv[k++] = b->result_fd;
    }
    argv[k] = NULL;
    return BKM_OK;
}

/* Checks common to every trial before anything starts; 1 when the trial ends here (stopped). */
static int runner_precheck(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec,
                           bkm_tune_trial_result_t *r, int *rc, bkm_err_t *err)
{
    *rc = bkm_tune_trial_spec_validate(spec, err);
    if (*rc < 0)
        return 1;
    if (rn == NULL || ((rn->worker_path == NULL || rn->worker_path[0] == '\0') && rn->program == NULL)) {
        *rc = bkm_err_set(err, BKM_EINVAL, "trial runner: no worker executable given");
        return 1;
    }
    if (sigchld_ignored()) {
        *rc = bkm_err_set(err, BKM_EDEP, "trial runner: SIGCHLD is ignored in this process, so the exit status "
                          "would be lost; set it to SIG_DFL before running trials");
        return 1;
    }
    if (stop_requested(rn)) {
        result_interrupted(r, rn);
        return 1;
    }
    return 0;
}

int bkm__tune_runner_env(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec, char ***envp,
                         bkm_err_t *err)
{
    return runner_build_env(rn, spec, envp, err);
}

void bkm__tune_strv_free(char **v)
{
    strv_free(v);
}

int bkm_tune_trial_run(const bkm_tune_runner_t *rn, const bkm_tune_trial_spec_t *spec,
                       bkm_tune_trial_result_t *r, bkm_err_t *err)
{
    int rc = BKM_OK;
    char **envp = NULL;
    char *argv[RUNNER_ARGV_MAX] = {NULL};
    worker_argv_bufs_t bufs;
    bkm_buf_t spec_json, json;
    bkm_json_w_t w;
    bkm__tune_proc_t proc = {0};
    bkm__tune_proc_end_t end = {0};

    bkm_buf_init(&spec_json);
    bkm_buf_init(&json);
    bkm_tune_trial_result_free(r);
    result_reset_numbers(r);
    if (runner_precheck(rn, spec, r, &rc, err))
        goto out;
    if (rn->program != NULL) {   /* the user's own program: tuner/program.c */
        rc = bkm__tune_program_run(rn, spec, r, err);
        goto out;
    }
    if ((rc = runner_build_env(rn, spec, &envp, err)) < 0)
        goto out;
    bkm_json_w_init(&w, &spec_json, 0);
    bkm_tune_trial_spec_to_json(spec, &w);
    if (spec_json.oom) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the trial spec");
        goto out;
    }
    if ((rc = worker_argv(rn, spec, spec_json.data, argv, &bufs, &proc.exe, err)) < 0)
        goto out;
    proc.what = "the worker";
    proc.argv = argv;
    proc.envp = envp;
    proc.result_fd = BKM_WORKER_RESULT_FD;
    proc.stdout_is_result = spec->ranks > 0;
    proc.timeout_s = spec->timeout_s;
    proc.json = &json;
    proc.json_max = rn->max_result_bytes ? rn->max_result_bytes : BKM_TUNE_RESULT_MAX;
    proc.slice_ms = POLL_SLICE_MS;
    if ((rc = bkm__tune_supervise(rn, &proc, r, &end, err)) < 0 || bkm__tune_supervise_end(rn, &end, r))
        goto out;
    if (end.overflow) {
        r->status = BKM_TRIAL_FAILED;
        r->exit_code = -1;
        r->signal = SIGKILL;
        snprintf(r->signal_name, sizeof r->signal_name, "SIGKILL");
        snprintf(r->message, sizeof r->message, "worker wrote more than %zu bytes of JSON; killed", proc.json_max);
        goto out;
    }
    if (json.len > 0 && (r->json = bkm_buf_take(&json)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker's output");
        goto out;
    }
    runner_classify(r, end.wstatus, end.how == END_TIMEOUT, r->json, spec->ranks, err);
    if (end.how == END_TIMEOUT)
        snprintf(r->message, sizeof r->message, "worker exceeded the trial timeout of %g s; killed", spec->timeout_s);
out:
    strv_free(envp);
    bkm_buf_free(&spec_json);
    bkm_buf_free(&json);
    return rc;
}
