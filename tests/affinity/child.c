/* SPDX-License-Identifier: MIT */
/* Test helper: re-execute this test binary with a controlled OpenMP environment (libomp reads
 * its environment once per process, so each setting needs a fresh process). */
#define _GNU_SOURCE
#include "child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/affinity.h"

/* This host's hwloc topology as a cpuinfo file in $TMPDIR; @p path gets its name. 0 or -1. */
static int host_cpuinfo(char *path, size_t n)
{
    bkm_topo_t *t = NULL;
    bkm_buf_t b;
    bkm_err_t err = {0};
    const char *tmp = getenv("TMPDIR");
    int fd = -1, rc = -1;
    bkm_buf_init(&b);
    snprintf(path, n, "%s/bkm-test-cpuinfo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (bkm_topo_open_host(&t, &err) < 0 || bkm_topo_cpuinfo_write(t, &b, &err) < 0) {
        fprintf(stderr, "child: %s\n", err.msg);
        goto out;
    }
    if ((fd = mkstemp(path)) < 0) {
        perror("child: mkstemp");
        goto out;
    }
    if (write(fd, b.data, b.len) != (ssize_t)b.len) {
        perror("child: write");
        unlink(path);
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        path[0] = '\0';
    bkm_buf_free(&b);
    bkm_topo_close(t);
    return rc;
}

int bkm_test_run_child(const char *const *env, const char *const *args, bkm_buf_t *out)
{
    static const char *const clear[] = {"KMP_AFFINITY", "OMP_PLACES",      "OMP_PROC_BIND", "GOMP_CPU_AFFINITY",
                                        "KMP_HW_SUBSET", "OMP_NUM_THREADS", "KMP_PLACE_THREADS", NULL};
    int fds[2];
    char cpuinfo[4096];
    if (host_cpuinfo(cpuinfo, sizeof(cpuinfo)) < 0)
        return -1;
    if (pipe(fds) != 0) {
        unlink(cpuinfo);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        unlink(cpuinfo);
        return -1;
    }
    if (pid == 0) {
        for (int i = 0; clear[i]; i++)
            unsetenv(clear[i]);
        int disabled = 0;
        for (int i = 0; env[i]; i++)
            if (strncmp(env[i], "KMP_AFFINITY=", 13) == 0 && !bkm_aff_topo_fix_wanted(env[i] + 13))
                disabled = 1;
        if (!disabled) { /* as bkm: libomp 14 aborts with the cpuinfo method when disabled */
            setenv("KMP_TOPOLOGY_METHOD", "cpuinfo", 1);
            setenv("KMP_CPUINFO_FILE", cpuinfo, 1);
        }
        for (int i = 0; env[i]; i++)
            putenv((char *)env[i]);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv("/proc/self/exe", (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    char chunk[4096];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof(chunk))) > 0)
        bkm_buf_append(out, chunk, (size_t)r);
    close(fds[0]);
    int st = 0;
    pid_t w = waitpid(pid, &st, 0);
    unlink(cpuinfo);
    if (w != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}
