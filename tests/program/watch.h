/* SPDX-License-Identifier: MIT */
/* Runs a real program the way bkm's program trial runner does for the binding proof: a clean
 * environment, libbkm_team.so preloaded with a team log, /proc sampled until it exits. */
#ifndef BKM_TEST_WATCH_H
#define BKM_TEST_WATCH_H

#include "bkm/program.h"

typedef struct watch_opts {
    const char *shim;          /* libbkm_team.so; NULL: the program runs without it */
    const char *log_path;      /* BKM_TEAM_LOG to give instead of a fresh log (a path that cannot be opened) */
    const char *const *env;    /* extra "K=V", NULL-terminated (may be NULL) */
    int interval_ms;           /* sampling interval; 0 = the library's default */
    double timeout_s;          /* killed after this (0 = 120 s) */
} watch_opts_t;

typedef struct watch_result {
    int pid;
    int status;                /* exit status, 128 + signal when killed */
    char out[4096];            /* the last 4095 bytes of stdout, NUL-terminated */
    char dir[64];              /* private folder: team log, stdout */
    bkm_prog_sampler_t *s;
    bkm_prog_log_t log;
    bkm_prog_report_t *r;
} watch_result_t;

/* Run argv[0] (an absolute path) with @p o; fills @p res. Returns 0, or -1 with a message on stderr
 * when the program could not be run or watched. */
int watch_run(char *const argv[], const watch_opts_t *o, watch_result_t *res);
void watch_free(watch_result_t *res);
/* The CPUs this process may run on. */
void watch_allowed(bkm_cpuset_t *set);
/* The first two places of OMP_PLACES=cores over @p allowed, as GNU libgomp forms them from sysfs
 * (thread_siblings_list): place[1] = place[0] when all allowed CPUs are one core. */
void watch_core_places(const bkm_cpuset_t *allowed, bkm_cpuset_t place[2]);

#endif
