/* SPDX-License-Identifier: MIT */
/* The watcher of the live binding-proof tests (watch.h). */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_until(uint64_t t_ns)
{
    uint64_t now = bkm_now_ns();
    if (t_ns > now) {
        struct timespec ts = {(time_t)((t_ns - now) / 1000000000u), (long)((t_ns - now) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

int watch_run(char *const argv[], const watch_opts_t *o, watch_result_t *res)
{
    char log_path[128], out_path[128], preload[512], env_log[600], env_home[128];
    char env_preload[600];
    const char *envp[64];
    int n = 0, fd, st = 0;
    posix_spawn_file_actions_t fa;
    bkm_prog_sampler_opts_t so;
    bkm_err_t err = {0};
    uint64_t deadline;
    pid_t pid;
    memset(res, 0, sizeof *res);
    snprintf(res->dir, sizeof res->dir, "/tmp/bkm_watch_XXXXXX");
    if (mkdtemp(res->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(log_path, sizeof log_path, "%s/team.log", res->dir);
    snprintf(out_path, sizeof out_path, "%s/stdout", res->dir);
    if (bkm_prog_log_create(log_path, &err) < 0) {
        fprintf(stderr, "watch: %s\n", err.msg);
        return -1;
    }
    envp[n++] = "PATH=/usr/bin:/bin";
    snprintf(env_home, sizeof env_home, "HOME=%s", res->dir);
    envp[n++] = env_home;
    if (o->shim != NULL) {
        if (bkm_prog_preload_value(o->shim, NULL, preload, sizeof preload, &err) < 0) {
            fprintf(stderr, "watch: %s\n", err.msg);
            return -1;
        }
        snprintf(env_preload, sizeof env_preload, "LD_PRELOAD=%s", preload);
        envp[n++] = env_preload;
        snprintf(env_log, sizeof env_log, "%s=%s", BKM_PROG_LOG_ENV, o->log_path ? o->log_path : log_path);
        envp[n++] = env_log;
    }
    for (int i = 0; o->env && o->env[i] && n < 62; i++)
        envp[n++] = o->env[i];
    envp[n] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, (char *const *)envp) != 0) {
        fprintf(stderr, "watch: cannot start %s\n", argv[0]);
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    res->pid = pid;
    bkm_prog_sampler_opts_defaults(&so);
    if (o->interval_ms > 0)
        so.interval_ms = o->interval_ms;
    if (bkm_prog_sampler_open(&res->s, pid, &so, &err) < 0) {
        fprintf(stderr, "watch: %s\n", err.msg);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    deadline = bkm_now_ns() + (uint64_t)((o->timeout_s > 0 ? o->timeout_s : 120.0) * 1e9);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (bkm_now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "watch: %s timed out\n", argv[0]);
            break;
        }
        sleep_until(bkm_prog_sampler_due_ns(res->s));
        if (bkm_prog_sampler_sample(res->s, &err) < 0) {
            fprintf(stderr, "watch: %s\n", err.msg);
            return -1;
        }
    }
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    bkm_prog_sampler_finish(res->s, &err);
    if ((fd = open(out_path, O_RDONLY)) >= 0) {
        /* the tail: a program's summary line comes last, after any number of progress lines */
        off_t end = lseek(fd, 0, SEEK_END);
        off_t keep = (off_t)sizeof res->out - 1;
        ssize_t got;
        lseek(fd, end > keep ? end - keep : 0, SEEK_SET);
        got = read(fd, res->out, sizeof res->out - 1);
        res->out[got > 0 ? got : 0] = '\0';
        close(fd);
    }
    if (bkm_prog_log_read(&res->log, log_path, 0, &err) < 0 ||
        bkm_prog_report_build(res->s, &res->log, pid, &res->r, &err) < 0) {
        fprintf(stderr, "watch: %s\n", err.msg);
        return -1;
    }
    return 0;
}

void watch_free(watch_result_t *res)
{
    char cmd[128];
    bkm_prog_report_free(res->r);
    bkm_prog_log_free(&res->log);
    bkm_prog_sampler_close(res->s);
    if (res->dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", res->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "watch: cannot remove %s\n", res->dir);
    }
    memset(res, 0, sizeof *res);
}

void watch_allowed(bkm_cpuset_t *set)
{
    cpu_set_t cs;
    bkm_cpuset_zero(set);
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof cs, &cs) == 0)
        for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
            if (CPU_ISSET(c, &cs))
                bkm_cpuset_set(set, c);
}

void watch_core_places(const bkm_cpuset_t *allowed, bkm_cpuset_t place[2])
{
    int n = 0;
    bkm_cpuset_t covered;
    bkm_cpuset_zero(&covered);
    bkm_cpuset_zero(&place[0]);
    bkm_cpuset_zero(&place[1]);
    for (int c = bkm_cpuset_first(allowed); c >= 0 && n < 2; c = bkm_cpuset_next(allowed, c)) {
        char path[128], text[256] = "";
        bkm_cpuset_t sib;
        bkm_err_t err = {0};
        FILE *f;
        if (bkm_cpuset_isset(&covered, c))
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        bkm_cpuset_zero(&sib);
        if ((f = fopen(path, "r")) != NULL) {
            if (fgets(text, sizeof text, f) != NULL)
                text[strcspn(text, "\n")] = '\0';
            fclose(f);
        }
        if (text[0] == '\0' || bkm_cpuset_parse(&sib, text, &err) < 0) {
            bkm_cpuset_zero(&sib);
            bkm_cpuset_set(&sib, c);
        }
        bkm_cpuset_and(&sib, allowed);
        bkm_cpuset_or(&covered, &sib);
        place[n++] = sib;
    }
    if (n == 1)
        place[1] = place[0];
}
