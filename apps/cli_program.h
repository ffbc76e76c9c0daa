/* SPDX-License-Identifier: MIT */
/* `tune run|sweep ... -- CMD ARGS`: the user's program on the command line, resolved and
 * described for the tuner (bkm/tuner/program.h). The CLI layer: it reads PATH and the
 * environment once, here, and passes the result down. */
#ifndef BKM_CLI_PROGRAM_H
#define BKM_CLI_PROGRAM_H

#include <limits.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"

/** The options every command that runs a program takes (members of the command's options
 *  struct @p T: const char *metric, *metric_unit, *runtime; int metric_higher; double
 *  probe_timeout). */
#define BKM_CLI_PROGRAM_OPTS(T)                                                                                   \
    {.name = "metric", .kind = BKM_CLI_STR, .metavar = "REGEX", .off = offsetof(T, metric),                    \
     .help = "with -- CMD: the figure of merit is every number the program prints\n"                          \
             "that REGEX (extended, exactly one capture group) matches in its\n"                              \
             "stdout and stderr, each a sample of that process (default: the\n"                               \
             "process's wall time, ms)", .example = "avg time ([0-9.]+) millisecond"},                         \
    {.name = "metric-unit", .kind = BKM_CLI_STR, .metavar = "U", .off = offsetof(T, metric_unit),             \
     .help = "the unit of --metric's numbers (default ms)", .example = "ms"},                                   \
    {.name = "metric-higher", .kind = BKM_CLI_FLAG, .off = offsetof(T, metric_higher),                        \
     .help = "--metric is a throughput: higher is better (stored as 1/value)"},                                \
    {.name = "runtime", .kind = BKM_CLI_STR, .metavar = "KIND", .off = offsetof(T, runtime),                   \
     .help = "with -- CMD: the OpenMP runtime the program loads, instead of what bkm\n"                         \
             "finds (libgomp, libomp, libiomp5, none)", .example = "libgomp"},                                  \
    {.name = "probe-timeout", .kind = BKM_CLI_DURATION, .metavar = "SEC", .off = offsetof(T, probe_timeout),   \
     .lo = 0.1, .hi = 3600,                                                                                     \
     .help = "with -- CMD of an interpreter (python3 ...): the program is started\n"                          \
             "once, up to SEC, to see which OpenMP runtime it loads (default 20)",                             \
     .example = "5"}

/** A program named on the command line, resolved. */
typedef struct bkm_cli_program {
    bkm_tune_program_t pg;           /**< what the tuner gets (points into the members below) */
    const char *argv[BKM_TUNE_PROGRAM_ARGS_MAX + 1];
    char exe[PATH_MAX];
    char name[64];
    char sha256[65];
    char how[512];
    char shim[PATH_MAX];
    bkm_aff_runtime_result_t detected; /**< static detection, or the probe's */
    int probed;
    int forced;                      /**< --runtime's kind, -1 none */
} bkm_cli_program_t;

/** Split @p argv at its first "--": *argc_opts = the words before it (the options), *prog_argv /
 *  *prog_argc the program after it (0 when there is no "--"). A "--" with nothing after it is
 *  BKM_EINVAL. */
int bkm_cli_program_split(int argc, char **argv, int *argc_opts, char ***prog_argv, int *prog_argc, bkm_err_t *err);

/** Resolve the program (PATH lookup of a bare name, as execvp does), hash it, find the OpenMP
 *  runtime it loads (@p runtime when not NULL, as --runtime names it; else its ELF closure; for
 *  an interpreter, a probe run of up to @p probe_timeout_s with this process's environment), the
 *  team shim of @p self (this executable: bkm_cli_home_exe), and fill
 *  p->pg with @p name (NULL: derived from the program), the metric options and @p topo. Says
 *  on stderr when it probes. @return BKM_OK; BKM_EINVAL naming the bad value; BKM_EIO. */
int bkm_cli_program_open(bkm_cli_program_t *p, int argc, char **argv, const char *name, const char *metric,
                         const char *unit, int higher, const char *runtime, double probe_timeout_s, const char *self,
                         const struct bkm_topo *topo, bkm_err_t *err);
void bkm_cli_program_close(bkm_cli_program_t *p);

/** The runtime of @p p, as the space builder and the scripts take it. */
int bkm_cli_program_runtime(const bkm_cli_program_t *p);

#endif
