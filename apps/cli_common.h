/* SPDX-License-Identifier: MIT */
/* Helpers shared by the `tune` commands (apps/cmd_*.c): the only place besides the commands
 * that reads the environment or the command line. */
#ifndef BKM_CLI_COMMON_H
#define BKM_CLI_COMMON_H

#include <signal.h>
#include <stddef.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"
#include "cli_opt.h"

/** The results database: @p opt (--db) if given, else $BKM_DB if set and not empty, else
 *  BKM_DB_DEFAULT_PATH. */
const char *bkm_cli_db_path(const char *opt);
/** 1 when the database @p path is a regular file or does not exist yet; else prints "tune CMD:
 *  results database 'PATH' is not a regular file (a FIFO)" and returns 0 (exit 2). Called before
 *  SQLite or the header check open it: open(2) of a FIFO without a writer blocks forever. */
int bkm_cli_db_check(const char *cmd, const char *path);

/** A trial runner that starts this very executable's `worker` command with this process's
 *  environment; @p self (of @p cap bytes) receives the executable's path and must outlive the runner.
 *  @return BKM_OK; BKM_EDEP when /proc/self/exe cannot be read. */
int bkm_cli_runner_self(bkm_tune_runner_t *runner, char *self, size_t cap, bkm_err_t *err);

/** Write an output of command @p cmd (the option @p opt that names it, "-o") to @p path with
 *  bkm_file_write_output (@p mode 0666 for data, 0777 for a script); "-" is the standard output.
 *  0, or the exit code after printing why (2 a path that is no file to write, 3 the system
 *  refused). */
int bkm_cli_output_write(const char *cmd, const char *opt, const char *path, const char *text, unsigned mode);

/** Read the OpenMP affinity variables of this process's environment into @p env (unset ones
 *  are NULL): KMP_AFFINITY, KMP_HW_SUBSET, KMP_PLACE_THREADS, KMP_BLOCKTIME, OMP_PLACES,
 *  OMP_PROC_BIND, GOMP_CPU_AFFINITY, OMP_WAIT_POLICY. */
void bkm_cli_aff_env_read(bkm_aff_env_t *env);

/** The option-table entries of a topology source, shared by `tune topo` and `tune affinity
 *  explain`: --node, --profile, --xml, --synthetic into the bkm_topo_source_t member @p SRC of the
 *  options struct @p T, and --mask (old spelling --allowed) into its const char * member @p MASK. */
#define BKM_CLI_TOPO_OPTS(T, SRC, MASK)                                                                         \
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NAME", .off = offsetof(T, SRC.node),                     \
     .help = "node profile: auto (this host, default), haswell, knl, perlmutter-cpu,\n"                     \
             "or a profile file",                                                                               \
     .example = "knl"},                                                                                         \
    {.name = "profile", .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(T, SRC.profile),               \
     .help = "a node profile file, or an hwloc XML file (lstopo --of xml)", .example = "nosuch.prof"},         \
    {.name = "xml", .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(T, SRC.xml),                       \
     .help = "an hwloc XML topology", .example = "nosuch.xml"},                                                 \
    {.name = "synthetic", .kind = BKM_CLI_STR, .metavar = "DESC", .off = offsetof(T, SRC.synthetic),           \
     .help = "an hwloc synthetic description, with optional OS numbering,\n"                                 \
             "e.g. \"pack:2 core:4 pu:2(indexes=0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15)\"",                    \
     .example = "pack:1 core:2 pu:1"},                                                                          \
    {.name = "mask", .kind = BKM_CLI_STR, .metavar = "LIST", .off = offsetof(T, MASK), .alias = "allowed",    \
     .help = "emulate an initial process mask (taskset/srun), e.g. 0-3,32-35", .example = "0"}

/** Open the topology @p src names (bkm_topo_open_source; @p p optional, as there), restricted to
 *  the CPU list @p mask when not NULL (a bad or empty mask is BKM_EINVAL naming "--mask 'LIST'"). */
int bkm_cli_topo_open(const bkm_topo_source_t *src, const char *mask, bkm_node_profile_t *p, bkm_topo_t **t,
                      bkm_err_t *err);

/** The --db entry of an option table: the results database path into const char * member @p F. */
#define BKM_CLI_DB_OPT(T, F)                                                                                      \
    {.name = "db", .kind = BKM_CLI_STR, .metavar = "PATH", .off = offsetof(T, F),                                \
     .help = "results database (default: $BKM_DB, else " BKM_DB_DEFAULT_PATH ")", .example = "x.sqlite"}

/** BKM_CLI_CALL parser of --counters: "none" or a comma-separated list of event names
 *  (bkm_tune_counters_parse), copied into the char array (of a bkm_tune_trial_spec_t's counters
 *  size) at cfg + opt->off; "is longer than N characters" or the list's fault otherwise. */
int bkm_cli_opt_counters(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err);

/** The trial protocol options that `tune run` and `tune sweep` share, into the
 *  bkm_tune_trial_spec_t member @p SPEC of the options struct @p T: --min-samples (old spelling
 *  --iters), --max-samples, --min-time, --trial-timeout, --disturbed-share, --counters and
 *  --data-seed (the seed of the workload's input data, spec.seed; @p SEED_ALIAS: an old
 *  spelling of it, or NULL). */
#define BKM_CLI_TRIAL_OPTS(T, SPEC, SEED_ALIAS)                                                                  \
    {.name = "min-samples", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(T, SPEC.min_samples), .lo = 1, \
     .hi = BKM_TUNE_SAMPLES_MAX, .help = "at least N timed samples per trial (default 5)", .alias = "iters"},   \
    {.name = "max-samples", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(T, SPEC.max_samples), .lo = 1, \
     .hi = BKM_TUNE_SAMPLES_MAX, .help = "cap of the adaptive repetition (default 50)"},                        \
    {.name = "min-time", .kind = BKM_CLI_DURATION, .metavar = "SEC", .off = offsetof(T, SPEC.min_time_s),       \
     .lo = 0, .hi = BKM_TUNE_TIME_MAX_S,                                                                        \
     .help = "the timed loop of a trial lasts at least SEC (default 0.5; 90s, 5m;\n"                          \
             "below --trial-timeout)", .example = "0.01"},                                                     \
    {.name = "trial-timeout", .kind = BKM_CLI_DURATION, .metavar = "SEC", .off = offsetof(T, SPEC.timeout_s),   \
     .lo = 0.001, .hi = BKM_TUNE_TIMEOUT_MAX_S,                                                                 \
     .help = "a trial running longer is killed and recorded as timeout (default 600).\n"                      \
             "In a sweep, a trial re-measured at k x the samples (halving rungs)\n"                            \
             "gets k x the timeout; samples and time stay within the limits"},                                 \
    {.name = "disturbed-share", .kind = BKM_CLI_NUM, .metavar = "X", .off = offsetof(T, SPEC.noise_share),      \
     .lo = 0.001, .hi = 1,                                                                                      \
     .help = "a trial's process is marked disturbed when its worst thread waited on a\n"                      \
             "run queue, plus the steal time of its CPUs, for more than X of the timed\n"                      \
             "region (default 0.10; from the OS, with or without PAPI)", .example = "0.2"},                    \
    {.name = "counters", .kind = BKM_CLI_CALL, .metavar = "LIST", .off = offsetof(T, SPEC.counters),            \
     .call = bkm_cli_opt_counters,                                                                              \
     .help = "PAPI events per trial, comma-separated; 'none' disables (default:\n"                            \
             "cycles, instructions, cache misses, FP ops and the perf:: software\n"                            \
             "events; unavailable ones are reported with PAPI's reason)",                                       \
     .example = "none"},                                                                                        \
    {.name = "data-seed", .kind = BKM_CLI_I64, .metavar = "S", .off = offsetof(T, SPEC.seed), .lo = 0,          \
     .hi = 9.2e18, .alias = (SEED_ALIAS),                                                                       \
     .help = "seed of the workload's input data, the same in every trial (default 1)"}

/** BKM_CLI_CALL parser of --strategy: one of bkm_tune_strategy_names(), stored as const char * at
 *  cfg + opt->off; "is unknown (grid, ...)" otherwise. */
int bkm_cli_opt_strategy(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err);

/** Parse the comma-separated integers @p s into out[0..cap) (*n of them): thread counts
 *  (1..BKM_CPUSET_MAX, the library's limit), or with @p blocktime milliseconds (0..INT_MAX-1,
 *  "infinite"). BKM_OK, or BKM_EINVAL with err naming the bad element (the option layer adds
 *  the option and the whole value). */
int bkm_cli_parse_int_list(const char *s, int *out, int cap, int *n, int blocktime, bkm_err_t *err);

/** Catch SIGINT, SIGTERM and SIGHUP (SIGHUP only when not ignored, as under nohup) for a
 *  command that runs trials: the first one sets the returned flag to its number (pass it to the
 *  sweep and the trial runner: the running worker's process group is killed at once and the
 *  command winds down, keeping what is complete); a second one terminates the process at once,
 *  by that signal (the worker dies with it: PR_SET_PDEATHSIG). The flag is the one global of
 *  the CLI (set only by the handler). The three are unblocked, whatever mask was inherited. */
const volatile sig_atomic_t *bkm_cli_stop_signals_catch(void);

/** Put SIGCHLD back to SIG_DFL (a parent may have left it ignored, which would make the kernel
 *  reap the workers and lose their exit status). Called first thing by main(). */
void bkm_cli_sigchld_reset(void);

#endif
