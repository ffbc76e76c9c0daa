/* SPDX-License-Identifier: MIT */
/** @file bkm/worker/noise.h
 * Noise evidence of a trial from the operating system (with or without PAPI): what disturbed
 * the measured threads over the timed region, read inside the measured process.
 */
#ifndef BKM_WORKER_NOISE_H
#define BKM_WORKER_NOISE_H

#include <stdint.h>

#include "bkm/common.h"
#include "bkm/trial.h"   /* BKM_TUNE_NOISE_SHARE_DEFAULT */

#ifdef __cplusplus
extern "C" {
#endif

/* Over the timed region, per OpenMP thread (each thread reads its own values before and after:
 * getrusage(RUSAGE_THREAD), /proc/self/task/<tid>/schedstat and .../sched) and for the process
 * (getrusage(RUSAGE_SELF), /proc/stat steal time of the CPUs the team may run on). Every value
 * is grouped under the source it comes from: "rusage", "proc-schedstat", "proc-sched",
 * "proc-stat"; a source that cannot be read is "unavailable" with the reason. Reading /proc is OS
 * evidence, not configuration: nothing here reads the environment. */


/** One CPU line of /proc/stat, in USER_HZ ticks. */
typedef struct bkm_tune_stat_ticks {
    uint64_t steal;     /**< 8th field; absent on kernels before 2.6.11 */
    uint64_t total;     /**< user + nice + system + idle + iowait + irq + softirq + steal */
    int cpus;           /**< CPU lines summed */
} bkm_tune_stat_ticks_t;

/** Sum the "cpuN" lines of /proc/stat text @p text for the CPUs in @p cpus (NULL: the aggregate
 *  "cpu" line). @return BKM_OK; BKM_EINVAL naming a malformed line or a CPU of @p cpus that has
 *  no line; BKM_ENOTSUP when the lines have no steal field (err says so). */
int bkm_tune_noise_parse_stat(const char *text, const bkm_cpuset_t *cpus, bkm_tune_stat_ticks_t *out,
                              bkm_err_t *err);
/** Parse /proc/<pid>/task/<tid>/schedstat: "run_ns wait_ns timeslices" (time on the CPU, time
 *  runnable on a run queue, times scheduled in). @return BKM_OK or BKM_EINVAL. */
int bkm_tune_noise_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices,
                                   bkm_err_t *err);
/** The integer of line "@p field : value" of /proc/<pid>/task/<tid>/sched (e.g.
 *  "se.nr_migrations"). @return BKM_OK; BKM_ENOTSUP when the field is absent; BKM_EINVAL when
 *  its value is not an integer. */
int bkm_tune_noise_parse_sched(const char *text, const char *field, long long *value, bkm_err_t *err);

/** A noise session for one timed region of a team of threads. */
typedef struct bkm_tune_noise bkm_tune_noise_t;

/** Create a session for a team of @p threads threads; @p proc_root is where procfs is mounted
 *  (NULL = "/proc"; tests give a directory of their own); @p share_threshold (0..1; <= 0 means
 *  BKM_TUNE_NOISE_SHARE_DEFAULT) decides the disturbed mark. Allocates everything it will need.
 *  @return BKM_OK; BKM_EINVAL (threads < 1, threshold > 1); BKM_ENOMEM. */
int bkm_tune_noise_open(bkm_tune_noise_t **noise, int threads, const char *proc_root, double share_threshold,
                        bkm_err_t *err);
/** Snapshot before the timed region: a parallel region of the session's team size in which
 *  every thread reads its own values, then the process's. Call outside any parallel region. */
void bkm_tune_noise_begin(bkm_tune_noise_t *noise);
/** Snapshot after the timed region (same team), then the deltas, shares and the mark. */
void bkm_tune_noise_end(bkm_tune_noise_t *noise);
/** Per-thread begin/end for a caller that runs its own parallel region (@p t: the thread's index
 *  in the team; each thread calls it for itself). bkm_tune_noise_begin/end use these. */
void bkm_tune_noise_thread_begin(bkm_tune_noise_t *noise, int t);
void bkm_tune_noise_thread_end(bkm_tune_noise_t *noise, int t);
/** Process-level snapshots and the evaluation, for callers of the per-thread functions. */
void bkm_tune_noise_process_begin(bkm_tune_noise_t *noise);
void bkm_tune_noise_process_end(bkm_tune_noise_t *noise);
/** After end: the disturbed share (max over threads of run-queue wait / wall, plus the steal share
 *  of the team's CPUs; NaN when no source gave it) and the mark (1 disturbed, 0 not, -1 unknown). */
double bkm_tune_noise_share(const bkm_tune_noise_t *noise);
int bkm_tune_noise_disturbed(const bkm_tune_noise_t *noise);
/** Sum over threads of a per-thread value: "voluntary_switches", "involuntary_switches",
 *  "minor_faults", "major_faults", "cpu_ns" (user + system CPU time, rusage), "migrations"
 *  (proc-sched); -1 when unavailable. */
long long bkm_tune_noise_total(const bkm_tune_noise_t *noise, const char *name);
/** Write the session as one JSON object (see docs/measurement.md, "Noise evidence"). */
void bkm_tune_noise_to_json(const bkm_tune_noise_t *noise, bkm_json_w_t *w);
/** Free. NULL is a no-op. */
void bkm_tune_noise_close(bkm_tune_noise_t *noise);

#ifdef __cplusplus
}
#endif
#endif /* BKM_WORKER_NOISE_H */
