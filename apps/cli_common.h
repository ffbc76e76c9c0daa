/* SPDX-License-Identifier: MIT */
/* Helpers shared by the `tune` commands (apps/cmd_*.c): the only place besides the commands
 * that reads the environment or the command line. */
#ifndef BKM_CLI_COMMON_H
#define BKM_CLI_COMMON_H

#include <signal.h>

#include "bkm/affinity.h"

/** The results database: @p opt (--db) if given, else $BKM_DB if set and not empty, else
 *  BKM_DB_DEFAULT_PATH. */
const char *bkm_cli_db_path(const char *opt);
/** 1 when the database @p path is a regular file or does not exist yet; else prints "tune CMD:
 *  results database 'PATH' is not a regular file (a FIFO)" and returns 0 (exit 2). Called before
 *  SQLite or the header check open it: open(2) of a FIFO without a writer blocks forever. */
int bkm_cli_db_check(const char *cmd, const char *path);

/** Read the OpenMP affinity variables of this process's environment into @p env (unset ones
 *  are NULL): KMP_AFFINITY, KMP_HW_SUBSET, KMP_PLACE_THREADS, KMP_BLOCKTIME, OMP_PLACES,
 *  OMP_PROC_BIND, GOMP_CPU_AFFINITY, OMP_WAIT_POLICY. */
void bkm_cli_aff_env_read(bkm_aff_env_t *env);

/** 1 when option argv[i] = @p opt has a value after it; else prints
 *  "tune CMD: option 'OPT' needs a value" and returns 0. */
int bkm_cli_need_value(const char *cmd, int i, int argc, const char *opt);

/** Where the topology comes from: at most one of these options is given (none: this host). */
typedef struct bkm_cli_topo_src {
    const char *node, *profile, *xml, *synthetic; /**< --node, --profile, --xml, --synthetic */
} bkm_cli_topo_src_t;
/** The member of @p src that option @p opt sets, or NULL when @p opt is none of the four. */
const char **bkm_cli_topo_src_slot(bkm_cli_topo_src_t *src, const char *opt);
/** 1 when at most one source is set; else prints "tune CMD: give at most one of --node,
 *  --profile, --xml, --synthetic" and returns 0. */
int bkm_cli_topo_src_check(const char *cmd, const bkm_cli_topo_src_t *src);

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
