/* SPDX-License-Identifier: MIT */
/* Helpers shared by the `tune` commands: database path, affinity environment, option values. */
#define _GNU_SOURCE
#include "cli_common.h"
#include "cli_opt.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "bkm/worker.h"   /* bkm_tune_counters_parse: --counters is checked when it is parsed */

const char *bkm_cli_db_path(const char *opt)
{
    const char *env = getenv("BKM_DB");
    if (opt != NULL)
        return opt;
    return env && env[0] ? env : BKM_DB_DEFAULT_PATH;
}

int bkm_cli_db_check(const char *cmd, const char *path)
{
    bkm_err_t err = {0};
    if (bkm_file_check_regular_or_absent(path, "results database", &err) < 0) {
        fprintf(stderr, "tune%s%s: %s\n", cmd[0] ? " " : "", cmd, err.msg);
        return 0;
    }
    return 1;
}

int bkm_cli_output_write(const char *cmd, const char *opt, const char *path, const char *text, unsigned mode)
{
    bkm_err_t err = {0};
    int rc;
    if (strcmp(path, "-") == 0) {
        size_t len = strlen(text);
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "tune %s: cannot write the standard output: %s\n", cmd, strerror(errno));
            return 3;
        }
        return 0;
    }
    if ((rc = bkm_file_write_output(path, opt, text, strlen(text), mode, &err)) < 0) {
        fprintf(stderr, "tune %s: %s\n", cmd, err.msg);
        return bkm_status_exit_code(rc);
    }
    return 0;
}

void bkm_cli_aff_env_read(bkm_aff_env_t *env)
{
    env->kmp_affinity = getenv("KMP_AFFINITY");
    env->kmp_hw_subset = getenv("KMP_HW_SUBSET");
    env->kmp_place_threads = getenv("KMP_PLACE_THREADS");
    env->kmp_blocktime = getenv("KMP_BLOCKTIME");
    env->omp_places = getenv("OMP_PLACES");
    env->omp_proc_bind = getenv("OMP_PROC_BIND");
    env->gomp_cpu_affinity = getenv("GOMP_CPU_AFFINITY");
    env->omp_wait_policy = getenv("OMP_WAIT_POLICY");
}

int bkm_cli_topo_open(const bkm_topo_source_t *src, const char *mask, bkm_node_profile_t *p, bkm_topo_t **t,
                      bkm_err_t *err)
{
    bkm_cpuset_t m;
    int rc = bkm_topo_open_source(t, src, p, err);
    if (rc < 0 || mask == NULL)
        return rc;
    if ((rc = bkm_cpuset_parse(&m, mask, err)) < 0 || (rc = bkm_topo_restrict(*t, &m, err)) < 0) {
        bkm_err_prefix(err, "--mask '%s'", mask);
        bkm_topo_close(*t);
        *t = NULL;
    }
    return rc;
}

int bkm_cli_opt_strategy(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    const char *const *nm = bkm_tune_strategy_names();
    while (*nm && strcmp(*nm, v) != 0)
        nm++;
    if (*nm == NULL)
        return bkm_err_set(err, BKM_EINVAL, "is unknown (grid, random, halving, local)");
    *(const char **)(void *)((char *)cfg + opt->off) = v;
    return BKM_OK;
}

int bkm_cli_opt_counters(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    char names[64][64];
    int nn = 0;
    const size_t cap = sizeof ((bkm_tune_trial_spec_t *)0)->counters;
    if (strlen(v) >= cap)
        return bkm_err_set(err, BKM_EINVAL, "is longer than %zu characters", cap - 1);
    if (strcmp(v, "none") != 0 && bkm_tune_counters_parse(v, names, 64, &nn, err) < 0)
        return BKM_EINVAL;
    snprintf((char *)cfg + opt->off, cap, "%s", v);
    return BKM_OK;
}

int bkm_cli_parse_int_list(const char *s, int *out, int cap, int *n, int blocktime, bkm_err_t *err)
{
    char buf[512], *save = NULL, *tok;
    long long v, lo = blocktime ? 0 : 1, hi = blocktime ? INT_MAX - 1 : BKM_CPUSET_MAX;
    if (strlen(s) >= sizeof buf)
        return bkm_err_set(err, BKM_EINVAL, "is longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (blocktime && (strcmp(tok, "infinite") == 0 || strcmp(tok, "infinity") == 0))
            v = BKM_TUNE_BLOCKTIME_INFINITE;
        else if (bkm_parse_int(tok, lo, hi, &v) < 0)
            return bkm_err_set(err, BKM_EINVAL, "'%s' is not a valid value (%lld..%lld%s)", tok, lo, hi,
                               blocktime ? " ms or infinite" : "");
        if (*n >= cap)
            return bkm_err_set(err, BKM_EINVAL, "more than %d values", cap);
        out[(*n)++] = (int)v;
    }
    if (*n == 0)
        return bkm_err_set(err, BKM_EINVAL, "no value");
    return BKM_OK;
}

/* The only global of the CLI: set by the first SIGINT/SIGTERM/SIGHUP, read by the sweep and the
 * trial runner through the pointer bkm_cli_stop_signals_catch returns. */
static volatile sig_atomic_t g_stop;

static void on_stop_signal(int sig)
{
    if (g_stop != 0) {
        /* the second one: exit at once, by this signal (blocked in the handler, so it is
         * delivered with the default action as the handler returns) */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop = sig;
}

const volatile sig_atomic_t *bkm_cli_stop_signals_catch(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old;
    sigset_t unblock;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;   /* no SA_RESTART: poll and waits return EINTR at once */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&sa.sa_mask, sigs[i]);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        if (sigs[i] == SIGHUP && sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
    /* a parent may have left them blocked (the mask survives exec): a stop must get through */
    sigemptyset(&unblock);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&unblock, sigs[i]);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    return &g_stop;
}

void bkm_cli_sigchld_reset(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;   /* and no SA_NOCLDWAIT */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
}

int bkm_cli_runner_self(bkm_tune_runner_t *runner, char *self, size_t cap, bkm_err_t *err)
{
    ssize_t ln = readlink("/proc/self/exe", self, cap - 1);
    if (ln <= 0)
        return bkm_err_set(err, BKM_EDEP, "cannot find the tune executable (/proc/self/exe): %s", strerror(errno));
    self[ln] = '\0';
    memset(runner, 0, sizeof *runner);
    runner->worker_path = self;
    runner->worker_cmd = "worker";
    runner->environ = environ;
    return BKM_OK;
}
