/* SPDX-License-Identifier: MIT */
/* Dynamic runtime detection: the files a process maps (/proc/PID/maps, one parser for bkm's own
 * binding probe and for a program bkm did not write), classified; and a program started briefly
 * to see what it maps. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime_int.h"

#define MAPS_MAX_FILES 65536
#define MAPS_LINE_MAX 8192   /* the kernel prints a path of at most a page */

void bkm_aff_maps_free(bkm_aff_maps_file_t *files, int n_files)
{
    for (int i = 0; files && i < n_files; i++)
        bkm_free(files[i].path);
    bkm_free(files);
}

static int parse_hex(const char **p, unsigned long long *v)
{
    const char *s = *p;
    unsigned long long x = 0;
    int n = 0;
    for (;; s++, n++) {
        int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
        if (d < 0 || n > 16)
            break;
        x = x * 16 + (unsigned)d;
    }
    *p = s;
    *v = x;
    return n > 0 && n <= 16;
}

static const char *skip_field(const char *s)
{
    while (*s && *s != ' ')
        s++;
    while (*s == ' ')
        s++;
    return s;
}

/* One line "start-end perms offset major:minor inode [path]". Returns 1 with a path, 0 without, -1 malformed. */
static int maps_line(const char *line, bkm_aff_maps_file_t *f)
{
    const char *s = line;
    unsigned long long a, b, maj, min, ino = 0;
    size_t n;
    if (!parse_hex(&s, &a) || *s++ != '-' || !parse_hex(&s, &b) || *s != ' ')
        return -1;
    s = skip_field(s + 1);           /* perms */
    s = skip_field(s);               /* offset */
    if (!parse_hex(&s, &maj) || *s++ != ':' || !parse_hex(&s, &min) || *s != ' ')
        return -1;
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (ino > (~0ull - 9) / 10)
            return -1;
        ino = ino * 10 + (unsigned)(*s - '0');
    }
    while (*s == ' ')
        s++;
    if (*s != '/')
        return 0;                    /* anonymous, [heap], [stack], [vdso], memfd: ... */
    n = strlen(s);
    f->deleted = n > 10 && strcmp(s + n - 10, " (deleted)") == 0;
    if (f->deleted)
        n -= 10;
    f->inode = ino;
    f->dev_major = (unsigned)maj;
    f->dev_minor = (unsigned)min;
    f->path = bkm_malloc(n + 1);
    if (f->path == NULL)
        return -2;
    memcpy(f->path, s, n);
    f->path[n] = '\0';
    return 1;
}

int bkm_aff_maps_read(const char *proc_root, int pid, bkm_aff_maps_file_t **files, int *n_files, bkm_err_t *err)
{
    char path[PATH_MAX], line[MAPS_LINE_MAX];
    bkm_aff_maps_file_t *v = NULL;
    int n = 0, cap = 0, rc = BKM_OK, lineno = 0;
    FILE *fp;
    if (files == NULL || n_files == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_maps_read: NULL argument");
    *files = NULL;
    *n_files = 0;
    if (pid < 0)
        return bkm_err_set(err, BKM_EINVAL, "process id %d is negative", pid);
    if (pid == 0)
        snprintf(path, sizeof path, "%s/self/maps", proc_root ? proc_root : "/proc");
    else
        snprintf(path, sizeof path, "%s/%d/maps", proc_root ? proc_root : "/proc", pid);
    if ((fp = fopen(path, "re")) == NULL)
        return bkm_err_set(err, BKM_EIO, "cannot read %s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, fp)) {
        bkm_aff_maps_file_t f;
        size_t len = strlen(line);
        int k, dup = 0;
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(fp)) {
            rc = bkm_err_set(err, BKM_EINVAL, "%s: line %d is longer than %d bytes", path, lineno, MAPS_LINE_MAX - 1);
            goto out;
        }
        memset(&f, 0, sizeof f);
        if ((k = maps_line(line, &f)) == -1) {
            rc = bkm_err_set(err, BKM_EINVAL, "%s: line %d is not a mapping ('%.60s')", path, lineno, line);
            goto out;
        }
        if (k == -2) {
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory reading %s", path);
            goto out;
        }
        if (k == 0)
            continue;
        /* a file is mapped once per segment: keep its first line */
        for (int i = n - 1; i >= 0 && !dup; i--)
            dup = f.inode != 0 ? v[i].inode == f.inode && v[i].dev_major == f.dev_major && v[i].dev_minor == f.dev_minor
                               : strcmp(v[i].path, f.path) == 0;
        if (dup) {
            bkm_free(f.path);
            continue;
        }
        if (n >= MAPS_MAX_FILES) {
            bkm_free(f.path);
            rc = bkm_err_set(err, BKM_EINVAL, "%s maps more than %d files", path, MAPS_MAX_FILES);
            goto out;
        }
        if (n == cap) {
            int ncap = cap ? 2 * cap : 64;
            void *q = bkm_realloc(v, (size_t)ncap * sizeof *v);
            if (q == NULL) {
                bkm_free(f.path);
                rc = bkm_err_set(err, BKM_ENOMEM, "out of memory reading %s", path);
                goto out;
            }
            v = q;
            cap = ncap;
        }
        v[n++] = f;
    }
    if (ferror(fp))
        rc = bkm_err_set(err, BKM_EIO, "cannot read %s: %s", path, strerror(errno));
out:
    fclose(fp);
    if (rc < 0) {
        bkm_aff_maps_free(v, n);
        return rc;
    }
    *files = v;
    *n_files = n;
    return BKM_OK;
}

/* Add the mapped files of @p files not yet in @p r (by path), classified. */
static int add_mapped(bkm_aff_runtime_result_t *r, const bkm_aff_maps_file_t *files, int n, bkm_err_t *err)
{
    for (int i = 0; i < n; i++) {
        const bkm_aff_maps_file_t *f = &files[i];
        bkm_aff_runtime_kind_t kind = BKM_AFF_RUNTIME_NONE;
        char how[96] = "", *soname = NULL;
        bkm_err_t why = {0};
        int seen = 0, rc = BKM_OK, k;
        for (k = 0; k < r->n_obj && !seen; k++)
            seen = strcmp(r->obj[k].path, f->path) == 0;
        if (seen)
            continue;
        if (!f->deleted)
            rc = bkm__rt_classify_path(f->path, &kind, how, sizeof how, &soname, &why);
        if (rc == BKM_ENOMEM)
            return bkm_err_set(err, rc, "%s", why.msg);
        if (f->deleted || rc < 0) {
            /* the file is gone, unreadable or malformed here: its name is all there is */
            kind = bkm__rt_kind_from_name(f->path);
            if (kind != BKM_AFF_RUNTIME_NONE)
                snprintf(how, sizeof how, "file name (%s)", f->deleted ? "deleted since it was mapped" : "unreadable");
        }
        k = bkm__rt_result_add(r, f->path, f->path, f->path, soname, -1, 0, "mapped", kind, how);
        bkm_free(soname);
        if (k < 0)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
    return BKM_OK;
}

static int set_program(bkm_aff_runtime_result_t *r, const char *proc_root, int pid)
{
    char link[PATH_MAX], target[PATH_MAX];
    ssize_t k;
    if (pid == 0)
        snprintf(link, sizeof link, "%s/self/exe", proc_root);
    else
        snprintf(link, sizeof link, "%s/%d/exe", proc_root, pid);
    if ((k = readlink(link, target, sizeof target - 1)) <= 0)
        return BKM_OK;   /* not ours to read, or gone: the maps still tell */
    target[k] = '\0';
    bkm_free(r->program);
    return (r->program = bkm_strdup(target)) ? BKM_OK : BKM_ENOMEM;
}

int bkm_aff_runtime_detect_pid(int pid, const bkm_aff_runtime_cfg_t *cfg, bkm_aff_runtime_result_t *r,
                               bkm_err_t *err)
{
    const char *root = cfg && cfg->proc_root ? cfg->proc_root : "/proc";
    bkm_aff_maps_file_t *files = NULL;
    int n = 0, rc;
    if (r == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_runtime_detect_pid: NULL argument");
    bkm_aff_runtime_result_free(r);
    r->dynamic = 1;
    if ((rc = bkm_aff_maps_read(root, pid, &files, &n, err)) < 0)
        goto out;
    if ((rc = add_mapped(r, files, n, err)) < 0)
        goto out;
    if (set_program(r, root, pid) < 0 || bkm__rt_result_finish(r) < 0)
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
out:
    bkm_aff_maps_free(files, n);
    if (rc < 0) {
        bkm_aff_runtime_result_free(r);
        r->dynamic = 1;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* 1 when the child has ended (reaped: *status set). */
static int reaped(pid_t pid, int *status)
{
    pid_t w;
    while ((w = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR)
        ;
    return w == pid || (w < 0 && errno == ECHILD);
}

int bkm_aff_runtime_probe_run(const char *exe, char *const argv[], const bkm_aff_runtime_probe_cfg_t *cfg,
                              bkm_aff_runtime_result_t *r, bkm_err_t *err)
{
    static const unsigned delays_ms[] = {20, 30, 50, 100, 150, 150, 250, 250};
    const unsigned nd = sizeof delays_ms / sizeof delays_ms[0];
    static char *const empty_env[] = {NULL};
    const char *root = cfg && cfg->proc_root ? cfg->proc_root : "/proc";
    double timeout_s = cfg && cfg->timeout_s > 0 ? cfg->timeout_s : 5.0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int fa_init = 0, attr_init = 0, rc = BKM_OK, src, status = 0, done = 0;
    sigset_t none, dflt;
    pid_t pid = -1, pgid = -1;
    uint64_t t0 = bkm_now_ns(), deadline;
    if (exe == NULL || argv == NULL || argv[0] == NULL || r == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_runtime_probe_run: NULL argument");
    bkm_aff_runtime_result_free(r);
    r->dynamic = 1;
    if ((src = posix_spawn_file_actions_init(&fa)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn_file_actions_init: %s", strerror(src));
        goto out;
    }
    fa_init = 1;
    if ((src = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
        (src = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)) != 0 ||
        (src = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) != 0 ||
        (cfg && cfg->cwd && (src = posix_spawn_file_actions_addchdir_np(&fa, cfg->cwd)) != 0)) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawn file actions: %s", strerror(src));
        goto out;
    }
    if ((src = posix_spawnattr_init(&attr)) != 0) {
        rc = bkm_err_set(err, BKM_ENOMEM, "posix_spawnattr_init: %s", strerror(src));
        goto out;
    }
    attr_init = 1;
    sigemptyset(&none);
    sigfillset(&dflt);
    sigdelset(&dflt, SIGKILL);
    sigdelset(&dflt, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    deadline = t0 + (uint64_t)(timeout_s * 1e9);
    src = posix_spawn(&pid, exe, &fa, &attr, argv, cfg && cfg->envp ? cfg->envp : empty_env);
    if (src != 0) {
        pid = -1;
        rc = bkm_err_set(err, BKM_EINVAL, "cannot start '%s'%s%s: %s", exe, cfg && cfg->cwd ? " in " : "",
                         cfg && cfg->cwd ? cfg->cwd : "", strerror(src));
        goto out;
    }
    pgid = pid;
    if ((r->program = bkm_strdup(exe)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    for (unsigned k = 0; !done; k++) {
        bkm_aff_maps_file_t *files = NULL;
        int n = 0;
        uint64_t now;
        /* every 2 ms for the first 200 ms: a short program (a script that execs a 60 ms binary)
         * maps its runtime for a few tens of ms, which reads 20 ms apart could miss; then
         * growing intervals */
        if (k > 0)
            sleep_ns(k <= 100 ? 2000000u : (uint64_t)delays_ms[k - 101 < nd ? k - 101 : nd - 1] * 1000000u);
        if (reaped(pid, &status)) {
            r->exited = 1;
            r->exit_status = status;
            pid = -1;
            break;
        }
        if (bkm_aff_maps_read(root, (int)pid, &files, &n, NULL) == BKM_OK) {
            r->samples++;
            rc = add_mapped(r, files, n, err);
            bkm_aff_maps_free(files, n);
            if (rc < 0)
                goto out;
        }
        now = bkm_now_ns();
        done = now >= deadline;
    }
out:
    if (pid > 0) {
        /* the whole group: the program and whatever it started */
        kill(-pgid, SIGTERM);
        for (int i = 0; i < 20 && !reaped(pid, &status); i++)
            sleep_ns(10000000u);
        kill(-pgid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    } else if (pgid > 0) {
        kill(-pgid, SIGKILL);   /* what the program left running when it ended */
    }
    r->ran_s = (double)(bkm_now_ns() - t0) * 1e-9;
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    if (rc == BKM_OK && bkm__rt_result_finish(r) < 0)
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
    if (rc < 0) {
        bkm_aff_runtime_result_free(r);
        r->dynamic = 1;
    }
    return rc;
}
