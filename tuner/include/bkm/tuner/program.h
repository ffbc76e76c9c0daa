/* SPDX-License-Identifier: MIT */
/** @file bkm/tuner/program.h
 * The user's own program as a trial (`tune run ... -- CMD ARGS`, `tune sweep ... -- CMD ARGS`):
 * each trial starts the program in a fresh process with the setting's environment, supervised
 * like bkm's workers (its own process group, timeout, output limit, stderr tail, a non-zero exit
 * is a failed trial); its figure of merit is its wall time, or the numbers its output prints
 * (--metric); its threads' binding is proven from the outside (/proc/PID/task and a small
 * LD_PRELOAD shim that names the OpenMP team), checked against the plan of the OpenMP runtime it
 * loads; the runtime it really loaded (/proc/PID/maps) and its noise evidence are stored with the
 * trial. The process is the unit of evidence, exactly as for bkm's own workloads.
 */
#ifndef BKM_TUNER_PROGRAM_H
#define BKM_TUNER_PROGRAM_H

#include <regex.h>
#include <stddef.h>

#include "bkm/common.h"
#include "bkm/tuner/runner.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bkm_topo;

/** Most arguments of a program. */
#define BKM_TUNE_PROGRAM_ARGS_MAX 256
/** Default cap on what a program may write to stdout+stderr (a trial that writes more fails). */
#define BKM_TUNE_PROGRAM_OUTPUT_MAX ((size_t)64 << 20)
/** Longest output line the metric is matched on (a longer one is matched in pieces). */
#define BKM_TUNE_PROGRAM_LINE_MAX 4096

/** What the tuner knows of the program before it runs it. All strings are borrowed. */
typedef struct bkm_tune_program {
    const char *const *argv;     /**< the command and its arguments; argv[0] an absolute path */
    int argc;
    const char *name;            /**< the workload name it is stored under */
    const char *exe_sha256;      /**< SHA-256 of argv[0] (64 hex digits) */
    const char *metric;          /**< NULL: the figure is the process's wall time (ms, lower is
                                      better); else a POSIX extended regular expression with exactly
                                      one capture group: every match in the program's stdout and
                                      stderr is a sample of that process */
    const char *metric_unit;     /**< the unit of a metric ("ms" when NULL) */
    int metric_higher;           /**< 1: higher is better (a throughput): each value v is stored as
                                      1/v, so that every statistic (medians, ratios, rank tests)
                                      reads "lower is better" unchanged; the values as printed are
                                      kept in the trial's "metric" */
    int runtime;                 /**< the OpenMP runtime it loads (bkm_aff_runtime_kind_t: static
                                      detection, or a probe run): decides the plan the binding is
                                      checked against */
    const char *runtime_how;     /**< how that was found ("ELF closure: ...", "probe run"), for the record */
    const struct bkm_topo *topo; /**< this host (the plan is made on it) */
    const char *team_shim;       /**< absolute path of the team shim (libbkm_team.so) that the
                                      program gets in LD_PRELOAD; NULL: no shim (the team is
                                      inferred from /proc only) */
    const char *log_dir;         /**< where the shim's per-trial log is created (NULL: /tmp) */
    size_t output_max;           /**< 0 = BKM_TUNE_PROGRAM_OUTPUT_MAX */
    int sample_ms;               /**< /proc sampling interval; 0 = 20 ms */
} bkm_tune_program_t;

/** Check @p p before any trial: argv (1..BKM_TUNE_PROGRAM_ARGS_MAX, argv[0] absolute and
 *  executable), the name (letters, digits, '-', '_', '.'), the metric (compiles, exactly one
 *  capture group), the unit (printable, short). @return BKM_OK or BKM_EINVAL naming the value. */
int bkm_tune_program_check(const bkm_tune_program_t *p, bkm_err_t *err);

/** Check a trial of program @p p in the parent: the spec's ranges, its threads against the PUs
 *  of @p topo, and its OpenMP variables against the runtime the program loads: a variable that
 *  runtime ignores is named in @p ignored (NULL: not wanted; "" when none), the others must be
 *  accepted by that runtime's planner for the thread count. @return BKM_OK or BKM_EINVAL naming
 *  the value. */
int bkm_tune_program_trial_check(const bkm_tune_program_t *p, const bkm_tune_trial_spec_t *spec,
                                 const struct bkm_topo *topo, bkm_buf_t *ignored, bkm_err_t *err);

/** The program's argv as a JSON array of strings (each word as it is: data, never a command). */
void bkm_tune_program_argv_json(const bkm_tune_program_t *p, bkm_json_w_t *w);
/** The default workload name for a program: the file name of the script an interpreter runs
 *  (`python3 bench.py` -> "bench"), else of the executable, reduced to letters, digits, '-',
 *  '_', '.' (at most 63 characters), prefixed "program-" when nothing is left. */
void bkm_tune_program_default_name(const char *const *argv, int argc, char *out, size_t n);

/** Match one line of a program's output (no newline) against @p metric (regcomp of the metric with
 *  REG_EXTENDED): every match appends its capture, read as a number (strtod: "12", "1.5e3", an
 *  optional sign), to @p values while *n < @p max. @return BKM_OK, or BKM_EINVAL naming a capture
 *  that is not a finite number. */
int bkm_tune_program_metric_scan(const regex_t *metric, const char *line, double *values, size_t max, size_t *n,
                                 bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_TUNER_PROGRAM_H */
