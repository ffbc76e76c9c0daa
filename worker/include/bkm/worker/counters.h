/* SPDX-License-Identifier: MIT */
/** @file bkm/worker/counters.h
 * PAPI counters of a trial, counted per OpenMP thread inside the measured process, each in the
 * domain where it means something, and checked against the OS's own figures.
 */
#ifndef BKM_WORKER_COUNTERS_H
#define BKM_WORKER_COUNTERS_H

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default counter list: hardware events where the CPU offers them, then the perf_event
 *  software events that any Linux host offers. */
#define BKM_TUNE_COUNTERS_DEFAULT                                                                  \
    "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM,PAPI_L3_TCM,PAPI_FP_OPS,PAPI_SP_OPS,"      \
    "perf::TASK-CLOCK,perf::CPU-MIGRATIONS,perf::CONTEXT-SWITCHES,perf::PAGE-FAULTS"

#define BKM_TUNE_COUNTERS_MAX 32

/* One requested event and its outcome: bkm_counter_t (bkm/common.h). */

/** Counter session. It counts per OpenMP thread: each thread of the team opens its own event
 *  set (PAPI_thread_init), and values are summed over threads. PAPI's PAPI_INHERIT/PAPI_ATTACH
 *  are not used because PAPI's perf_event component probes them with a hardware event, which a
 *  VM without a PMU rejects, although the software events work. */
typedef struct bkm_tune_counters bkm_tune_counters_t;

/** Parse a comma-separated event list ("" or NULL = BKM_TUNE_COUNTERS_DEFAULT, "none" = no
 *  counters) into names. BKM_EINVAL names an empty or over-long item, or too many items. */
int bkm_tune_counters_parse(const char *list, char names[][64], int max, int *n, bkm_err_t *err);

/** Initialise PAPI and decide which of @p list are available (an unknown or unsupported event
 *  is recorded with PAPI's reason, not an error). Must be called before any OpenMP region that
 *  should be counted starts and outside any parallel region. *ctr is NULL on error.
 *  @return BKM_OK; BKM_EINVAL for a malformed list; BKM_EDEP when PAPI cannot initialise
 *  (err names PAPI's reason); BKM_ENOMEM. */
int bkm_tune_counters_open(bkm_tune_counters_t **ctr, const char *list, bkm_err_t *err);
/** Start counting on every thread of an OpenMP team of @p threads threads (runs a parallel
 *  region of that size). Call outside any parallel region. @return BKM_OK or BKM_EDEP. */
int bkm_tune_counters_start(bkm_tune_counters_t *ctr, int threads, bkm_err_t *err);
/** Stop counting (same team) and sum the values. @return BKM_OK or BKM_EDEP. */
int bkm_tune_counters_stop(bkm_tune_counters_t *ctr, bkm_err_t *err);
/** The requested events and their values, valid until close. */
const bkm_counter_t *bkm_tune_counters_values(const bkm_tune_counters_t *ctr, int *n);
/** Number of threads whose event sets were started (0 before start). */
int bkm_tune_counters_threads(const bkm_tune_counters_t *ctr);
/** Which of bkm's known perf software events @p name is (aliases and libpfm4 qualifiers
 *  accepted: "perf::CS:u=1"); -1 for any other event. *kernel_side = 1 for events that happen in
 *  kernel code (context switches, migrations, page faults), which PAPI's default user domain
 *  reads as 0 by construction: the session asks for them in the user and kernel domains, and
 *  where that is not permitted (kernel.perf_event_paranoid >= 2 without root or CAP_PERFMON)
 *  records them unavailable naming the sysctl, never as 0. */
int bkm_tune_counter_kind(const char *name, int *kernel_side);
/** The largest difference between a PAPI figure and the OS's figure for the same @p threads over
 *  the same region that is still agreement: 4 events (5 ms for times, @p time_ns) per thread for
 *  the snapshots that counting brackets, plus 5% of the larger figure; for times also 25 us per
 *  context switch of those threads (@p switches, < 0 unknown), the scheduler's path around a
 *  switch that perf's clock events leave out and the OS's CPU time includes. */
long long bkm_tune_counter_granularity(long long papi, long long os, int threads, int time_ns, long long switches);
/** Check one counted event against the OS's own figure @p os_value (< 0: none, nothing checked)
 *  from @p os_source: records both; beyond bkm_tune_counter_granularity marks it disagreeing
 *  with the reason (both figures). @return 1 when it disagrees, else 0. */
int bkm_tune_counter_check_os(bkm_counter_t *c, long long os_value, const char *os_source, int threads,
                              int time_ns, long long switches);
/** After the timed region: check every counted event that the OS also counts (context switches,
 *  migrations, page faults, task/CPU clock) against the noise evidence @p noise of the same
 *  threads and region (bkm_tune_noise_total). @return the number that disagree. */
typedef struct bkm_tune_noise bkm_tune_noise_t;   /* bkm/worker/noise.h */
int bkm_tune_counters_crosscheck(bkm_tune_counters_t *ctr, const bkm_tune_noise_t *noise);
/** Write {"threads_counted":N, "kernel_domain":"permitted"|"not asked for"|why not,
 *  "values":{name:value} (counted and not contradicted), "unavailable":{name:reason},
 *  "disagree":{name:{papi, os, os_source, reason}}, "domains":{name:"user+kernel"},
 *  "os_checked":{name:{os, os_source}}}. */
void bkm_tune_counters_to_json(const bkm_tune_counters_t *ctr, bkm_json_w_t *w);
/** Stop if running, free, and shut PAPI down. NULL is a no-op. */
void bkm_tune_counters_close(bkm_tune_counters_t *ctr);

#ifdef __cplusplus
}
#endif
#endif /* BKM_WORKER_COUNTERS_H */
