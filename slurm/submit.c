/* SPDX-License-Identifier: MIT */
/* Submission through sbatch: a clean environment (no inherited SBATCH_* / SLURM_* that would
 * silently change the job), Slurm's own message when it refuses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/slurm.h"

static int drops(const char *kv)
{
    if (strncmp(kv, "SBATCH_", 7) == 0)
        return 1;
    /* SLURM_CONF only names the cluster's configuration file: keep it */
    return strncmp(kv, "SLURM_", 6) == 0 && strncmp(kv, "SLURM_CONF=", 11) != 0;
}

int bkm_slurm_submit_env(char *const *envp, char ***out, int *n_cleared, bkm_err_t *err)
{
    size_t n = 0, k = 0;
    int cleared = 0;
    char **v;
    while (envp && envp[n])
        n++;
    if ((v = bkm_calloc(n + 1, sizeof *v)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "submit: out of memory");
    for (size_t i = 0; i < n; i++)
        if (drops(envp[i]))
            cleared++;
        else
            v[k++] = envp[i];
    v[k] = NULL;
    *out = v;
    if (n_cleared)
        *n_cleared = cleared;
    return BKM_OK;
}

int bkm_slurm_find_program(const char *prog, const char *path, char *found, size_t n, bkm_err_t *err)
{
    if (bkm_path_find_program(prog, path, found, n, err) == BKM_OK)
        return BKM_OK;
    return bkm_err_set(err, BKM_EDEP, "'%s' is not installed (not on PATH): install Slurm's client commands "
                       "(Debian: apt-get install slurm-client), or run on a login node of the cluster", prog);
}

/* Run argv with envp, stdout+stderr into @p msg; *status = wait status. */
static int spawn_capture(char *const argv[], char *const envp[], bkm_buf_t *msg, int *status, bkm_err_t *err)
{
    int fd[2];
    pid_t pid;
    char buf[4096];
    ssize_t r;
    if (pipe2(fd, O_CLOEXEC) < 0)
        return bkm_err_set(err, BKM_EIO, "sbatch: pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return bkm_err_set(err, BKM_EIO, "sbatch: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    close(fd[1]);
    while ((r = read(fd[0], buf, sizeof buf)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (msg->len < (1u << 20))
            bkm_buf_append(msg, buf, (size_t)r);
    }
    close(fd[0]);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return bkm_err_set(err, BKM_EIO, "sbatch: waitpid: %s", strerror(errno));
    return BKM_OK;
}

int bkm_slurm_submit_run(const bkm_slurm_submit_t *s, long long *job_id, bkm_buf_t *msg, bkm_err_t *err)
{
    char *argv[8], dep[256], script[4096];
    int a = 0, status = 0, rc;
    size_t len;
    *job_id = 0;
    if (s->sbatch == NULL || s->script == NULL || s->script[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "submit: sbatch and script are required");
    /* the script is sbatch's first argument that is not an option: a name starting with '-'
     * would be read as one */
    if ((size_t)snprintf(script, sizeof script, "%s%s", s->script[0] == '-' ? "./" : "", s->script) >= sizeof script)
        return bkm_err_set(err, BKM_EINVAL, "submit: script path '%.200s...' is too long", s->script);
    argv[a++] = (char *)s->sbatch;
    argv[a++] = "--parsable";
    if (s->test_only)
        argv[a++] = "--test-only";
    if (s->dependency) {
        snprintf(dep, sizeof dep, "--dependency=%s", s->dependency);
        argv[a++] = dep;
    }
    argv[a++] = script;
    argv[a] = NULL;
    if ((rc = spawn_capture(argv, s->envp, msg, &status, err)) < 0)
        return rc;
    len = msg->len;
    while (len > 0 && (msg->data[len - 1] == '\n' || msg->data[len - 1] == ' '))
        msg->data[--len] = '\0';
    msg->len = len;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && len == 0)
            return bkm_err_set(err, BKM_EDEP, "cannot run %s", s->sbatch);
        return bkm_err_set(err, BKM_EDEP, "Slurm refused the job (sbatch exit %d): %s",
                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), bkm_buf_str(msg));
    }
    if (!s->test_only) {
        /* --parsable: "JOBID" or "JOBID;CLUSTER" on the last line */
        const char *last = strrchr(bkm_buf_str(msg), '\n');
        last = last ? last + 1 : bkm_buf_str(msg);
        char *end;
        long long id = strtoll(last, &end, 10);
        if (end == last || id <= 0 || (*end && *end != ';'))
            return bkm_err_set(err, BKM_EDEP, "sbatch said no job id: %s", bkm_buf_str(msg));
        *job_id = id;
    }
    return BKM_OK;
}
