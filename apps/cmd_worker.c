/* SPDX-License-Identifier: MIT */
/* `tune worker` (internal): run one trial in this process and write its JSON (to --result-fd, else
 * stdout). The trial runner starts it in a fresh process with the trial's environment; people use
 * `tune run`. */
#define _GNU_SOURCE   /* getppid, pid_t */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/worker.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_worker_summary[] = "(internal) one trial in this process; started by tune run and sweeps";

typedef struct worker_opts {
    const char *spec;
    long long parent;
    int result_fd;
} worker_opts_t;

static const bkm_cli_opt_t worker_table[] = {
    {.name = "spec", .kind = BKM_CLI_STR, .metavar = "JSON", .off = offsetof(worker_opts_t, spec),
     .help = "the trial (workload, threads, env, params, protocol; see tuner.h) (required)",
     .example = "{\"workload\":\"nope\"}"},
    {.name = "parent", .kind = BKM_CLI_I64, .metavar = "PID", .off = offsetof(worker_opts_t, parent), .lo = 1,
     .hi = 2147483647.0,
     .help = "the tuner's pid: exit at once if it is no longer the parent (it died\n"
             "before this worker started); without it, a closed result pipe says so"},
    {.name = "result-fd", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(worker_opts_t, result_fd), .lo = 0,
     .hi = 1 << 20,
     .help = "write the JSON to open descriptor N, not stdout: whatever a library\n"
             "prints on stdout (ONEDNN_VERBOSE=1, ...) cannot corrupt it; the runner\n"
             "passes 3 and sends stdout and stderr to its stderr capture"},
};

static const bkm_cli_cmd_spec_t worker_cmd = {
    .name = "worker",
    .usage = "tune worker --spec JSON [--parent PID] [--result-fd N]",
    .about = "INTERNAL: the trial worker. `tune run` and the sweep start it in a fresh process, one per\n"
             "trial, with the trial's OpenMP/affinity variables and OMP_NUM_THREADS in its environment;\n"
             "use `tune run` instead.\n\n"
             "It plans the binding from its environment (KMP_AFFINITY, KMP_HW_SUBSET, KMP_BLOCKTIME,\n"
             "OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY) before OpenMP starts, verifies every thread's\n"
             "mask against the plan, builds the workload, warms up, times samples, reads PAPI counters\n"
             "and writes ONE JSON object to the result descriptor (stdout without --result-fd).",
    BKM_CLI_TABLE(worker_table),
    .more = "environment (what the runner passes; tune run --help): the trial's OMP_*/KMP_*/GOMP_*\n"
            "variables exactly (none inherited), no HWLOC_* variable (they would change the topology\n"
            "the binding is planned on), everything else (ONEDNN_*, DNNL_*, LD_PRELOAD, ...) as the\n"
            "tuner got it.\n\n"
            "exit codes: 0 ok, 5 binding mismatch (JSON with plan vs actual still printed),\n"
            "            2 bad spec or parameter, 3 environment problem, 1 other failure\n\n"
            "example (what `tune run --workload gemm --threads 2` starts):\n"
            "  OMP_NUM_THREADS=2 tune worker --spec '{\"workload\":\"gemm\",\"threads\":2}'\n",
};

/* Without --parent: the runner reads our result descriptor through a pipe, so a pipe whose
 * reading end is closed everywhere (poll says POLLERR) means the tuner is gone. pid 1 as the
 * parent proves nothing: in a container tune itself may be pid 1. */
static int result_reader_gone(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

/* All @p n bytes of @p s to @p fd. 0, or -1 (errno). */
static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int bkm_cli_worker(int argc, char **argv)
{
    bkm_tune_worker_cfg_t cfg;
    bkm_aff_env_t env;
    bkm_err_t err = {0};
    bkm_buf_t out;
    worker_opts_t o = {NULL, 0, 1};
    const char *nt;
    long long v;
    int rc;

    /* The worker runs in its own process group, so a kill -9 of the tuner does not reach it:
     * die with the parent instead of finishing the trial as an orphan. The parent may have died
     * before this line, so look at it once more after arming the signal. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (bkm_cli_opt_parse_cmd(&worker_cmd, argc, argv, &o, &rc))
        return rc;
    if (fcntl(o.result_fd, F_SETFD, FD_CLOEXEC) < 0) {
        fprintf(stderr, "tune worker: --result-fd '%d' is not an open descriptor\n", o.result_fd);
        return 2;
    }
    if (o.parent > 0 ? getppid() != (pid_t)o.parent : result_reader_gone(o.result_fd)) {
        fprintf(stderr, "tune worker: the tuner that started this worker is gone (parent now pid %lld); "
                "not running the trial\n", (long long)getppid());
        return 3;
    }
    if (o.spec == NULL) {
        fprintf(stderr, "tune worker: --spec JSON is required (see tune worker --help)\n");
        return 2;
    }
    memset(&cfg, 0, sizeof cfg);
    if (bkm_tune_trial_spec_from_json(o.spec, &cfg.spec, &err) < 0) {
        fprintf(stderr, "tune worker: --spec: %s\n", err.msg);
        return 2;
    }
    /* The environment is read once, here. */
    bkm_cli_aff_env_read(&env);
    cfg.aff_env = &env;
    nt = getenv("OMP_NUM_THREADS");
    if (nt != NULL && bkm_parse_int(nt, 1, BKM_CPUSET_MAX, &v) == BKM_OK)
        cfg.omp_num_threads = (int)v;

    bkm_buf_init(&out);
    rc = bkm_tune_worker_run(&cfg, &out, &err);
    if (out.len > 0 && (rc == BKM_OK || rc == BKM_EVERIFY)) {
        bkm_buf_puts(&out, "\n");
        fflush(stdout);   /* a library's pending output, if the result goes to stdout too */
        if (out.oom || write_all(o.result_fd, out.data, out.len) < 0) {
            fprintf(stderr, "tune worker: cannot write the result to descriptor %d: %s\n", o.result_fd,
                    out.oom ? "out of memory" : strerror(errno));
            bkm_buf_free(&out);
            return 3;
        }
    }
    bkm_buf_free(&out);
    if (rc == BKM_OK)
        return BKM_WORKER_EXIT_OK;
    fprintf(stderr, "tune worker: %s\n", err.msg);
    if (rc == BKM_EVERIFY)
        return BKM_WORKER_EXIT_BINDING;
    return bkm_status_exit_code(rc) ? bkm_status_exit_code(rc) : 1;
}
