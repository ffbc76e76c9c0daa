/* SPDX-License-Identifier: MIT */
/* `tune lint SCRIPT`: what a batch script asks of the OpenMP runtime and of srun, checked against
 * the runtime the program of each srun line loads, and the placement it produces on its node,
 * explained. */
#define _GNU_SOURCE /* realpath, PATH_MAX, environ */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/slurm.h"
#include "cli_opt.h"

extern char **environ;

const char bkm_cli_lint_summary[] = "check a batch script's OpenMP/KMP settings and srun line, explain its placement";

/* The largest script read (a batch script is a few kB). */
#define LINT_MAX_BYTES (4u << 20)

typedef struct lint_opts {
    const char *node, *script;
    int json, probe;
    double probe_timeout_s;
} lint_opts_t;

static int lint_script(void *cfg, const char *arg, bkm_err_t *err)
{
    lint_opts_t *o = cfg;
    if (o->script)
        return bkm_err_set(err, BKM_EINVAL, "tune lint: one script at a time ('%s' and '%s')", o->script, arg);
    o->script = arg;
    return BKM_OK;
}

static const bkm_cli_opt_t lint_table[] = {
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(lint_opts_t, node),
     .help = "check against this node profile (default: from the script's -C:\nknl, haswell or cpu = perlmutter-cpu)", .example = "knl"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(lint_opts_t, json),
     .help = "print {\"script\",\"node\",\"constraint\",\"threads\",\"srun_c\",\"errors\",\n"
             "\"warnings\",\"findings\":[{\"line\",\"severity\",\"code\",\"message\"}],\n"
             "\"placement\": the planner's JSON, \"explanation\",\n"
             "\"programs\":[{\"line\",\"program\",\"path\",\"kind\",\"static\",\"probe\"}]}"},
    {.name = "probe", .kind = BKM_CLI_FLAG, .off = offsetof(lint_opts_t, probe),
     .help = "start the program of each srun line briefly (its own process group,\n"
             "stdin /dev/null, the script's exports) and read the OpenMP runtimes\n"
             "it maps from /proc/PID/maps: this EXECUTES the program"},
    {.name = "probe-timeout", .kind = BKM_CLI_DURATION, .metavar = "SEC", .off = offsetof(lint_opts_t, probe_timeout_s),
     .lo = 0.1, .hi = 600, .help = "how long --probe lets each program run (default 5 s)", .example = "1"},
};

static const bkm_cli_cmd_spec_t lint_cmd = {
    .name = "lint",
    .usage = "tune lint SCRIPT [--node NODE] [--json]",
    .about = "Reads a batch script (or any shell script) and reports, with line numbers: OpenMP/KMP\n"
             "variables that no runtime reads (KMP_BLOCKTIM, OMP_NUM_THREAD: near-misses by edit distance\n"
             "against the variables libomp 14 and libgomp read), values the strict parsers reject,\n"
             "settings that cancel each other (OMP_PROC_BIND or OMP_PLACES beside KMP_AFFINITY: libomp\n"
             "applies them in environment order), thread counts that do not fit the node of its -C\n"
             "constraint or srun's -c, srun without --cpu-bind where NERSC's rules need it; the OpenMP\n"
             "runtime the program of each srun line loads, from its ELF dependencies (GNU libgomp, LLVM\n"
             "libomp, Intel libiomp5; found relative to the script's directory or in PATH), and every\n"
             "variable the script sets that this runtime ignores (KMP_* for libgomp); an interpreter\n"
             "(python3 x.py) cannot be told without running it: --probe does; then the placement the\n"
             "script produces on that node (the planner's explanation, rank 0).",
    BKM_CLI_TABLE(lint_table),
    .positional = "arguments:\n  SCRIPT  the batch script to check",
    .positional_fn = lint_script,
    .more = "examples:\n"
            "  tune lint run_alexnet_knl.sh\n"
            "  tune lint job.sbatch --node haswell --json\n"
            "  tune lint train.sbatch --probe --probe-timeout 10\n\n"
            "exit codes: 0 no error found (warnings and notes may be printed), 1 an error was found,\n"
            "            2 bad usage, or the script cannot be read\n",
};

int bkm_cli_lint(int argc, char **argv)
{
    static const char *const sev[] = {"note", "warning", "error"};
    lint_opts_t o;
    bkm_slurm_lint_cfg_t cfg;
    char dir[PATH_MAX];
    bkm_slurm_lint_t r;
    bkm_err_t err = {0};
    char *text = NULL;
    size_t len = 0;
    int ret, rc;
    memset(&o, 0, sizeof o);
    if (bkm_cli_opt_parse_cmd(&lint_cmd, argc, argv, &o, &ret))
        return ret;
    if (o.script == NULL) {
        fprintf(stderr, "tune lint: which script? (tune lint SCRIPT)\n");
        return 2;
    }
    if ((rc = bkm_file_read_regular(o.script, "script", LINT_MAX_BYTES, &text, &len, &err)) < 0) {
        fprintf(stderr, "tune lint: cannot read script '%s': %s\n", o.script, err.msg);
        return 2;
    }
    if (memchr(text, '\0', len) != NULL) {
        fprintf(stderr, "tune lint: '%s' is not a text script (it holds NUL bytes)\n", o.script);
        bkm_free(text);
        return 2;
    }
    /* the programs of its srun lines are found from the script's directory and this environment */
    {
        char *slash;
        if (realpath(o.script, dir) == NULL) {
            fprintf(stderr, "tune lint: cannot resolve '%s'\n", o.script);
            bkm_free(text);
            return 2;
        }
        slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = '\0';
        else if (slash)
            *slash = '\0';
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.node = o.node;
    cfg.script_dir = dir;
    cfg.runtime.path = getenv("PATH");
    cfg.runtime.ld_library_path = getenv("LD_LIBRARY_PATH");
    cfg.runtime.ld_preload = getenv("LD_PRELOAD");
    cfg.probe = o.probe;
    cfg.probe_timeout_s = o.probe_timeout_s;
    cfg.probe_envp = environ;
    if ((rc = bkm_slurm_lint_run_cfg(text, &cfg, &r, &err)) < 0) {
        fprintf(stderr, "tune lint: %s\n", err.msg);
        bkm_free(text);
        return bkm_status_exit_code(rc);
    }
    if (o.json) {
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_slurm_lint_to_json(&r, o.script, &b);
        printf("%s\n", bkm_buf_str(&b));
        bkm_buf_free(&b);
    } else {
        for (size_t i = 0; i < r.n; i++)
            printf("%s:%d: %s: %s [%s]\n", o.script, r.f[i].line, sev[r.f[i].sev], r.f[i].msg, r.f[i].code);
        printf("%s: %d error(s), %d warning(s)%s%s\n", o.script, r.errors, r.warnings, r.node[0] ? "; node " : "",
               r.node);
        if (r.plan_text)
            printf("\n%s", r.plan_text);
    }
    ret = r.errors > 0 ? 1 : 0;
    bkm_slurm_lint_free(&r);
    bkm_free(text);
    return ret;
}
