/* SPDX-License-Identifier: MIT */
/* Internals of bkm::program shared by its files (not installed, not for other modules). */
#ifndef BKM_PROGRAM_INT_H
#define BKM_PROGRAM_INT_H

#include <dirent.h>

#include "bkm/program.h"

/* /proc/stat at one moment: per CPU steal and total ticks (arrays of BKM_CPUSET_MAX). */
typedef struct bkm__prog_stat {
    int ok;
    char why[160];
    uint64_t t_ns;
    bkm_cpuset_t present;   /* CPUs with a line */
    uint64_t *steal, *total;
} bkm__prog_stat_t;

struct bkm_prog_sampler {
    int pid;
    char root[256];
    char stat_path[300];
    uint64_t interval_ns;
    int heavy_every;
    int live;                     /* the live /proc: masks by sched_getaffinity(2) */
    int max_tasks;
    long ticks_per_s;
    int64_t boot_minus_mono_ns;   /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at open */
    DIR *dir;                     /* <root>/<pid>/task */
    int dirfd;
    bkm_prog_task_t *task;
    int n, cap;
    int tasks_lost;               /* threads beyond max_tasks */
    int samples;
    int gone, finished;
    uint64_t t_open_ns, next_due_ns, pass_ns_sum;
    char *buf;                    /* one file's text */
    size_t buf_cap;
    char *stat_buf;               /* /proc/stat's text */
    bkm__prog_stat_t stat_a, stat_b;   /* at open, at finish */
};

#endif /* BKM_PROGRAM_INT_H */
