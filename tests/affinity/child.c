/* SPDX-License-Identifier: MIT */
/* Test helper: re-execute this test binary with a controlled OpenMP environment (libomp reads
 * its environment once per process, so each setting needs a fresh process). */
#define _GNU_SOURCE
#include "child.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int bkm_test_run_child(const char *const *env, const char *const *args, bkm_buf_t *out)
{
    static const char *const clear[] = {"KMP_AFFINITY", "OMP_PLACES",      "OMP_PROC_BIND", "GOMP_CPU_AFFINITY",
                                        "KMP_HW_SUBSET", "OMP_NUM_THREADS", "KMP_PLACE_THREADS", NULL};
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        for (int i = 0; clear[i]; i++)
            unsetenv(clear[i]);
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
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}
