/* SPDX-License-Identifier: MIT */
/* `tune affinity verify`: start the binding probe in a process with exactly the setting's
 * environment, compare the plan with what it saw, and render the comparison (text or JSON). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "affinity_int.h"

/* Variables that steer the affinity of an OpenMP runtime: removed from the probe's environment
 * before the setting under test is added. */
static const char *const aff_vars[] = {
    "KMP_AFFINITY", "KMP_HW_SUBSET", "KMP_PLACE_THREADS", "KMP_BLOCKTIME", "OMP_PLACES",
    "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "OMP_WAIT_POLICY", "KMP_TOPOLOGY_METHOD", "KMP_CPUINFO_FILE",
    "OMP_DISPLAY_AFFINITY", "OMP_DISPLAY_ENV", "KMP_SETTINGS", "OMP_NUM_THREADS", "KMP_HIDDEN_HELPER_AFFINITY",
    NULL};

int bkm__aff_is_runtime_var(const char *kv)
{
    int i;
    for (i = 0; aff_vars[i]; i++) {
        size_t n = strlen(aff_vars[i]);
        if (strncmp(kv, aff_vars[i], n) == 0 && kv[n] == '=')
            return 1;
    }
    return 0;
}

int bkm__aff_child_capture(const char *what, const char *exe, char *const argv[], char *const envp[], int fd,
                           size_t cap, bkm_buf_t *out, int *status, bkm_err_t *err)
{
    int pfd[2];
    pid_t pid;
    if (pipe(pfd) != 0)
        return bkm_err_set(err, BKM_EIO, "%s: pipe: %s", what, strerror(errno));
    pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return bkm_err_set(err, BKM_EIO, "%s: fork: %s", what, strerror(errno));
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            if (fd == STDERR_FILENO)
                dup2(devnull, STDOUT_FILENO);
        }
        dup2(pfd[1], fd);
        close(pfd[0]);
        close(pfd[1]);
        execve(exe, argv, envp);
        _exit(127);
    }
    close(pfd[1]);
    for (;;) {
        char chunk[4096];
        ssize_t r = read(pfd[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (out->len < cap)
            bkm_buf_append(out, chunk, (size_t)r);
    }
    close(pfd[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return out->oom ? bkm_err_set(err, BKM_ENOMEM, "%s: out of memory", what) : BKM_OK;
}

static int env_add(char **envp, int *n, const char *name, const char *val)
{
    bkm_buf_t b;
    if (val == NULL)
        return BKM_OK;
    bkm_buf_init(&b);
    bkm_buf_printf(&b, "%s=%s", name, val);
    if (b.oom)
        return BKM_ENOMEM;
    envp[(*n)++] = bkm_buf_take(&b);
    return BKM_OK;
}

int bkm_aff_probe_spawn(const char *exe, char *const argv[], char *const *environment, const bkm_aff_env_t *env,
                        char **out, bkm_err_t *err)
{
    return bkm_aff_probe_spawn_ex(exe, argv, environment, env, NULL, out, err);
}

int bkm_aff_probe_spawn_ex(const char *exe, char *const argv[], char *const *environment, const bkm_aff_env_t *env,
                           char *const *extra, char **out, bkm_err_t *err)
{
    char **envp = NULL;
    int n_env = 0, n_own = 0, i, rc = BKM_OK, status = 0;
    bkm_buf_t b;
    bkm_buf_init(&b);
    for (i = 0; environment[i]; i++)
        ;
    size_t n_extra = 0;
    while (extra && extra[n_extra])
        n_extra++;
    envp = bkm_calloc((size_t)i + n_extra + 12, sizeof(char *));
    if (envp == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    for (i = 0; environment[i]; i++)
        if (!bkm__aff_is_runtime_var(environment[i]))
            envp[n_env++] = environment[i];
    n_own = n_env;
    {
        /* In the order the planner assumes (libomp 14 applies the variables in environment order). */
        const char *names[8], *values[8];
        int k, n_set = bkm_aff_env_export(env, names, values);
        for (k = 0; k < n_set; k++) {
            if (env_add(envp, &n_env, names[k], values[k]) != BKM_OK) {
                rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
                goto out;
            }
        }
    }
    /* The topology correction (bkm_aff_topo_fix_t), borrowed: not freed below. */
    for (int k = 0; extra && extra[k]; k++)
        envp[n_env++] = extra[k];
    if ((rc = bkm__aff_child_capture("verify", exe, argv, envp, STDOUT_FILENO, SIZE_MAX, &b, &status, err)) < 0)
        goto out;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = bkm_err_set(err, BKM_EDEP, "verify: the probe process failed (%s %d)",
                         WIFEXITED(status) ? "exit status" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        goto out;
    }
    *out = bkm_buf_take(&b);
out:
    for (i = n_own; i < n_env; i++) {
        int borrowed = 0;
        for (int k = 0; extra && extra[k]; k++)
            if (envp[i] == extra[k])
                borrowed = 1;
        if (!borrowed)
            bkm_free(envp[i]);
    }
    bkm_free(envp);
    bkm_buf_free(&b);
    return rc;
}

int bkm_aff_plan_verify(const bkm_aff_plan_t *plan, int threads, const bkm_json_t *probe, bkm_buf_t *out, int json,
                        bkm_err_t *err)
{
    const bkm_json_t *team = bkm_json_get(probe, "team");
    const bkm_json_t *foreign = bkm_json_get(probe, "foreign");
    int n_team = (int)bkm_json_get_num(probe, "threads", -1), t, mismatches = 0, n_foreign = 0;
    int libgomp = 0, libiomp = 0;
    const bkm_json_t *v;
    bkm_json_w_t w;
    if (team == NULL || team->type != BKM_JSON_ARR)
        return bkm_err_set(err, BKM_EDEP, "verify: the probe output has no team");
    if (foreign != NULL && foreign->type == BKM_JSON_ARR)
        n_foreign = (int)foreign->n_children;
    if ((v = bkm_json_get(probe, "libgomp")) != NULL && v->type == BKM_JSON_BOOL)
        libgomp = v->boolean;
    if ((v = bkm_json_get(probe, "libiomp5")) != NULL && v->type == BKM_JSON_BOOL)
        libiomp = v->boolean;
    bkm_json_w_init(&w, out, 0);
    if (json) {
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "threads");
        bkm_json_int(&w, threads);
        bkm_json_key(&w, "effective");
        bkm_json_str(&w, bkm_aff_plan_effective(plan));
        bkm_json_key(&w, "bound");
        bkm_json_bool(&w, bkm_aff_plan_bound(plan));
        bkm_json_key(&w, "compare");
        bkm_json_arr_begin(&w);
    } else {
        bkm_buf_printf(out, "effective: KMP_AFFINITY='%s'  (%s)\n", bkm_aff_plan_effective(plan),
                       bkm_aff_plan_bound(plan) ? "bound" : "not bound: threads keep the whole usable mask");
        bkm_buf_printf(out, "%-7s  %-20s  %-20s  %s\n", "thread", "planned", "actual", "");
    }
    if (n_team != threads)
        mismatches++;
    for (t = 0; t < threads; t++) {
        const bkm_cpuset_t *want = bkm_aff_plan_cpus(plan, t);
        const bkm_json_t *th = bkm_json_at(team, (size_t)t);
        const char *mask = th ? bkm_json_get_str(th, "mask") : NULL;
        bkm_cpuset_t got;
        bkm_buf_t a, b;
        int ok = 0;
        bkm_buf_init(&a);
        bkm_buf_init(&b);
        bkm_cpuset_format(want, &a);
        if (mask != NULL && bkm_cpuset_parse(&got, mask, NULL) == BKM_OK) {
            ok = bkm_cpuset_equal(&got, want);
            bkm_cpuset_format(&got, &b);
        } else {
            bkm_buf_puts(&b, "(missing)");
        }
        if (!ok)
            mismatches++;
        if (json) {
            bkm_json_obj_begin(&w);
            bkm_json_key(&w, "thread");
            bkm_json_int(&w, t);
            bkm_json_key(&w, "planned");
            bkm_json_str(&w, bkm_buf_str(&a));
            bkm_json_key(&w, "actual");
            bkm_json_str(&w, bkm_buf_str(&b));
            bkm_json_key(&w, "match");
            bkm_json_bool(&w, ok);
            bkm_json_obj_end(&w);
        } else {
            bkm_buf_printf(out, "%-7d  %-20s  %-20s  %s\n", t, bkm_buf_str(&a), bkm_buf_str(&b),
                           ok ? "ok" : "MISMATCH");
        }
        bkm_buf_free(&a);
        bkm_buf_free(&b);
    }
    /* libomp's own hidden helper threads (8 by default, plus their team's main thread) are not a
     * problem; threads of another OpenMP runtime are. */
    if (libgomp || libiomp)
        mismatches++;
    if (json) {
        bkm_json_arr_end(&w);
        bkm_json_key(&w, "team_size");
        bkm_json_int(&w, n_team);
        bkm_json_key(&w, "foreign_threads");
        bkm_json_int(&w, n_foreign);
        bkm_json_key(&w, "second_runtime");
        bkm_json_bool(&w, libgomp || libiomp);
        bkm_json_key(&w, "match");
        bkm_json_bool(&w, mismatches == 0);
        bkm_json_obj_end(&w);
        bkm_buf_puts(out, "\n");
    } else {
        if (n_team != threads)
            bkm_buf_printf(out, "team size: planned %d, actual %d: MISMATCH\n", threads, n_team);
        if (libgomp || libiomp)
            bkm_buf_printf(out, "a second OpenMP runtime is loaded (%s%s): its threads are not placed by libomp: "
                           "MISMATCH\n", libgomp ? "libgomp" : "", libiomp ? " libiomp5" : "");
        if (n_foreign > 0)
            bkm_buf_printf(out, "note: %d other thread%s in the process (libomp hidden helpers or library pools)\n",
                           n_foreign, n_foreign == 1 ? "" : "s");
        bkm_buf_printf(out, "%s\n", mismatches == 0 ? "binding matches the plan" : "binding does NOT match the plan");
    }
    return mismatches == 0 ? BKM_OK : bkm_err_set(err, BKM_EVERIFY, "verify: %d mismatch%s", mismatches,
                                                   mismatches == 1 ? "" : "es");
}
