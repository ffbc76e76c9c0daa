/* SPDX-License-Identifier: MIT */
/** @file bkm/program.h
 * Binding and noise evidence for a program bkm did not write (`tune ... -- CMD ARGS`).
 *
 * Three parts, on both sides of the process boundary:
 *  - the team log: libbkm_team.so, preloaded into the program (LD_PRELOAD), appends one line per
 *    event to the file named by BKM_TEAM_LOG: each thread's creation and creator, and each
 *    thread's index in each OpenMP team shape it runs in (GNU libgomp through GOMP_parallel,
 *    LLVM libomp / Intel libiomp5 through OMPT). bkm_prog_log_* reads it back as data.
 *  - the sampler: the parent reads /proc/PID/task/<tid>/{status,stat,schedstat,sched,comm} of the
 *    running program every few tens of milliseconds: each thread's CPU masks (every change, with
 *    its time), the CPUs it ran on, and its noise counters (switches, run-queue wait, migrations,
 *    CPU time, faults); /proc/stat steal over the run.
 *  - the report: the two merged. Each thread is classified (a member of the OpenMP team, with its
 *    index and the team size; the runtime's other threads; PyTorch's pools; Python's or the
 *    program's main thread; any other thread, naming the object that created it), the team is
 *    listed in team order, and bkm_prog_report_check compares the team's masks with a placement
 *    plan. Both evidences are JSON for the trial's record.
 *
 * Contract as in bkm/common.h: int status, a bkm_err_t naming the bad value; nothing here prints,
 * exits or reads the environment (the caller passes the shim's path, the log's path, the PID and
 * procfs's root). None of it may be called from inside an OpenMP parallel region, and a sampler or
 * report is used by one thread at a time.
 */
#ifndef BKM_PROGRAM_H
#define BKM_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================== */
/* Team log: what libbkm_team.so writes                                                      */
/* ======================================================================================== */

/** The environment variable that names the team log (an existing file the shim appends to; when
 *  it is unset, empty or cannot be opened for appending when the program loads, the shim only
 *  forwards every call and writes nothing). */
#define BKM_PROG_LOG_ENV "BKM_TEAM_LOG"
/** First token of every record, and the format's version. */
#define BKM_PROG_LOG_MAGIC "bkmteam1"
#define BKM_PROG_LOG_VERSION 1
/** A record is one line of at most this many bytes (newline included), written by one write(2). */
#define BKM_PROG_LOG_LINE_MAX 512
/** Longest name a record carries (object basenames, the runtime's version string), NUL included;
 *  bytes outside [A-Za-z0-9._+-] are written as '_'. */
#define BKM_PROG_NAME_MAX 64

/** Largest team size a record may give (a larger one is not a record). */
#define BKM_PROG_TEAM_SIZE_MAX 65536

/** OMPT thread types (OpenMP 5.0 ompt_thread_t), as the "othread" record names them. */
enum {
    BKM_PROG_OMPT_NONE = 0,     /**< no OMPT record for the thread */
    BKM_PROG_OMPT_INITIAL = 1,  /**< "initial": the thread that started the runtime */
    BKM_PROG_OMPT_WORKER = 2,   /**< "worker": a runtime thread that runs implicit tasks */
    BKM_PROG_OMPT_OTHER = 3,    /**< "other": a runtime thread that does not (a helper) */
    BKM_PROG_OMPT_UNKNOWN = 4   /**< "unknown" */
};

/** Kinds of record. Every record is
 *    "bkmteam1 KIND pid=P tid=T t=NS FIELD=VALUE ...\n"
 *  with P = getpid() of the writing process (so an exec'd or forked child is told apart), T the
 *  writing thread's kernel TID, NS its CLOCK_MONOTONIC time in nanoseconds (the same clock as
 *  bkm_now_ns in the parent), and the fields of its kind:
 *   - start   ppid=N prog=NAME version=1           the shim loaded in process P (T = P), whose
 *                         executable is NAME (argv[0]'s basename)
 *   - thread  creator=TID seq=N via=NAME lib=NAME exe=0|1
 *                         thread T started; TID created it, as the N-th creation in P; "via" is the
 *                         object that called pthread_create, "lib" the first object up the stack
 *                         outside libc/libstdc++/libgcc_s (std::thread's user); exe=1 when that
 *                         is the main program
 *   - team    api=gomp|ompt index=I size=S level=L primary=TID rt=NAME
 *                         T ran as thread I of a team of S threads at nesting level L (-1 unknown)
 *                         whose primary is TID, in runtime object NAME; once per thread and shape
 *   - othread type=initial|worker|other|unknown rt=NAME     OMPT thread_begin for T
 *   - tool    omp_version=N runtime=NAME           the runtime activated the shim's OMPT tool
 *   - ompt    rt=NAME thread_begin=R parallel_begin=R implicit_task=R   callbacks set (ompt_set_result_t)
 *   - fork    ppid=N parent_tid=TID                P is a forked child of N (first record of P)
 *   - lost    what=team-shapes max=N               T ran in more shapes than it records
 *  ('what' is kept in via; a field this version does not know is ignored, a repeated one is not;
 *  index < size <= BKM_PROG_TEAM_SIZE_MAX.)
 */
typedef enum {
    BKM_PROG_REC_START = 0,
    BKM_PROG_REC_THREAD,
    BKM_PROG_REC_TEAM,
    BKM_PROG_REC_OTHREAD,
    BKM_PROG_REC_TOOL,
    BKM_PROG_REC_OMPT,
    BKM_PROG_REC_FORK,
    BKM_PROG_REC_LOST
} bkm_prog_rec_kind_t;

/** Team-record API: which interface reported the team. */
typedef enum {
    BKM_PROG_API_NONE = 0,
    BKM_PROG_API_GOMP,    /**< the interposed GOMP_parallel* entry points (libgomp, or libomp's GOMP layer) */
    BKM_PROG_API_OMPT,    /**< OMPT implicit-task callbacks (libomp, libiomp5) */
    BKM_PROG_API_ORDER    /**< no team records: inferred from the runtime's thread-creation order */
} bkm_prog_api_t;

/** One parsed record; the fields its kind does not have are 0 / "". */
typedef struct bkm_prog_rec {
    int kind;                        /**< bkm_prog_rec_kind_t */
    int pid, tid;
    uint64_t t_ns;
    int ppid;                        /**< start, fork */
    int creator;                     /**< thread: creating TID; fork: parent_tid */
    long long seq;                   /**< thread */
    int exe;                         /**< thread: lib is the main program */
    char via[BKM_PROG_NAME_MAX];     /**< thread */
    char lib[BKM_PROG_NAME_MAX];     /**< thread; start: prog */
    int version;                     /**< start: the log format; tool: the runtime's omp_version */
    int api;                         /**< team: bkm_prog_api_t */
    int index, size, level, primary; /**< team */
    int type;                        /**< othread: BKM_PROG_OMPT_* */
    char rt[BKM_PROG_NAME_MAX];      /**< team, othread, ompt; tool: the runtime's version string */
} bkm_prog_rec_t;

/** A parsed log. A plain value: zero-initialise, then bkm_prog_log_parse/read; bkm_prog_log_free. */
typedef struct bkm_prog_log {
    bkm_prog_rec_t *rec;   /**< [n], in file order */
    size_t n;
    size_t malformed;      /**< lines that are not a well-formed record (skipped) */
    char first_bad[80];    /**< the first of them, bytes outside printable ASCII as '?' */
    int truncated;         /**< the file was longer than the limit; the rest was not read */
} bkm_prog_log_t;

/** Default limit on the log's size (bytes) for bkm_prog_log_read. */
#define BKM_PROG_LOG_MAX_BYTES (16u << 20)

/** Parse @p len bytes of log text (not necessarily NUL-terminated; the program may write to the
 *  file too, so it is data): every well-formed record is appended to @p log, every other line is
 *  counted in log->malformed. A last line without its newline is a record cut by the end of the
 *  process and is counted as malformed. @return BKM_OK; BKM_ENOMEM. */
int bkm_prog_log_parse(bkm_prog_log_t *log, const char *text, size_t len, bkm_err_t *err);
/** Read the log file @p path (a regular file of at most @p max_bytes bytes, 0 = the default; a
 *  longer one is read up to the limit and log->truncated set) and parse it. @return BKM_OK;
 *  BKM_EINVAL (not a regular file, cannot be opened); BKM_EIO; BKM_ENOMEM. */
int bkm_prog_log_read(bkm_prog_log_t *log, const char *path, size_t max_bytes, bkm_err_t *err);
void bkm_prog_log_free(bkm_prog_log_t *log);

/** Create an empty team log at @p path for the shim to append to (O_CREAT|O_EXCL, mode 0600: never
 *  through a planted link or over an existing file). @return BKM_OK; BKM_EINVAL (path too long);
 *  BKM_EIO naming the path and the reason. */
int bkm_prog_log_create(const char *path, bkm_err_t *err);

/** The value of LD_PRELOAD for the program: @p shim_path first, then @p existing (the value the
 *  program would have had; NULL or "" for none), separated by ':', into @p out. @return BKM_OK;
 *  BKM_EINVAL when @p shim_path is not absolute or contains ':' or whitespace (ld.so splits the
 *  list there), or when @p out is too small. */
int bkm_prog_preload_value(const char *shim_path, const char *existing, char *out, size_t out_len,
                           bkm_err_t *err);

/* ======================================================================================== */
/* Sampler: /proc/PID/task from the parent                                                   */
/* ======================================================================================== */

/** Masks kept per thread: every change up to this many; later ones are counted, not kept. */
#define BKM_PROG_MASKS_MAX 16
/** Default sampling interval (ms) and the range accepted. */
#define BKM_PROG_INTERVAL_MS_DEFAULT 20
#define BKM_PROG_INTERVAL_MS_MIN 1
#define BKM_PROG_INTERVAL_MS_MAX 10000
/** Default period of the costly files, in samples (with the default interval: every 200 ms). */
#define BKM_PROG_HEAVY_EVERY_DEFAULT 10
/** Default cap on the distinct threads one sampler keeps. */
#define BKM_PROG_THREADS_MAX_DEFAULT 4096

typedef struct bkm_prog_sampler_opts {
    const char *proc_root;   /**< where procfs is mounted; NULL = "/proc" (tests give a directory) */
    int interval_ms;         /**< time between samples (bkm_prog_sampler_due_ns); 0 = default */
    int heavy_every;         /**< read the costly files (.../status: switches, .../sched:
                                  migrations, .../comm) every this many samples and at a thread's
                                  first; 0 or 1 = every sample; default BKM_PROG_HEAVY_EVERY_DEFAULT */
    int max_threads;         /**< distinct threads kept; 0 = BKM_PROG_THREADS_MAX_DEFAULT */
} bkm_prog_sampler_opts_t;
void bkm_prog_sampler_opts_defaults(bkm_prog_sampler_opts_t *o);

/** The noise counters of one thread at one sample (absent ones are flagged per source). */
typedef struct bkm_prog_counters {
    uint64_t t_ns;                       /**< when sampled (bkm_now_ns) */
    int stat_ok;                         /**< .../stat: */
    uint64_t utime, stime;               /**<   CPU time in clock ticks (sysconf(_SC_CLK_TCK)) */
    uint64_t minflt, majflt;             /**<   page faults */
    int status_ok;                       /**< .../status: */
    uint64_t vol_switches, invol_switches; /**<  voluntary_ctxt_switches, nonvoluntary_ctxt_switches */
    int schedstat_ok;                    /**< .../schedstat: */
    uint64_t run_ns, wait_ns, slices;    /**<   on a CPU, runnable on a run queue, times scheduled */
    int sched_ok;                        /**< .../sched: */
    long long migrations;                /**<   se.nr_migrations */
    uint64_t heavy_t_ns;                 /**< when status/sched were last read (every heavy_every samples) */
} bkm_prog_counters_t;

/** A CPU mask a thread had, over consecutive samples. */
typedef struct bkm_prog_mask {
    bkm_cpuset_t cpus;
    uint64_t t_ns;          /**< first sample that saw it (bkm_now_ns) */
    uint64_t last_ns;       /**< last sample that saw it before it changed */
} bkm_prog_mask_t;

/** What the sampler saw of one thread (one TID with one start time). */
typedef struct bkm_prog_task {
    int tid;
    unsigned long long start_ticks;   /**< start time (stat field 22): a reused TID is a new task */
    char comm[32];                    /**< the last name seen */
    int samples;
    uint64_t first_ns, last_ns;       /**< first and last sample that saw it */
    int born_sampled;                 /**< absent from the first sample: started while sampled, so
                                           its counters count from its start (first = zero) */
    int n_masks;
    int masks_lost;                   /**< changes beyond BKM_PROG_MASKS_MAX */
    bkm_prog_mask_t mask[BKM_PROG_MASKS_MAX];
    bkm_cpuset_t ran_on;              /**< CPUs it was on at a sample (stat field 39) */
    int last_cpu;
    bkm_prog_counters_t first, last;
    char why[128];                    /**< the first source that could not be read, "" none */
} bkm_prog_task_t;

typedef struct bkm_prog_sampler bkm_prog_sampler_t;

/** Start sampling process @p pid: open its task directory, read /proc/stat (steal, start) and
 *  take the first sample. Each sample lists the task directory and reads, per thread, .../stat
 *  (CPU, CPU time, faults, start time) and .../schedstat, and its mask: sched_getaffinity(2) on
 *  the live /proc (proc_root NULL or "/proc": the mask the scheduler applies, without formatting a
 *  status file), Cpus_allowed_list of .../status under another root; every heavy_every-th sample
 *  (and at a thread's first) also .../status (switches), .../sched (migrations) and .../comm: a
 *  sample is a directory listing plus two file reads and a system call per thread
 *  (bkm_prog_sampler_pass_ns tells what it cost). @p opts may be NULL (defaults). @return BKM_OK; BKM_EINVAL (pid < 1,
 *  options out of range naming the value, no such process); BKM_ENOMEM. */
int bkm_prog_sampler_open(bkm_prog_sampler_t **s, int pid, const bkm_prog_sampler_opts_t *opts, bkm_err_t *err);
/** One pass over the process's threads. Once the process is gone (its task directory empty or
 *  unreadable) nothing more is recorded and bkm_prog_sampler_gone says so. @return BKM_OK;
 *  BKM_ENOMEM. A thread that vanishes between listing and reading is not an error. */
int bkm_prog_sampler_sample(bkm_prog_sampler_t *s, bkm_err_t *err);
/** bkm_now_ns time at which the next sample is due (the caller's poll timeout). */
uint64_t bkm_prog_sampler_due_ns(const bkm_prog_sampler_t *s);
/** 1 once a pass found the process gone. */
int bkm_prog_sampler_gone(const bkm_prog_sampler_t *s);
/** End of the run (call when the program has exited, before or after reaping it): reads
 *  /proc/stat again for the steal over the run. Idempotent. @return BKM_OK. */
int bkm_prog_sampler_finish(bkm_prog_sampler_t *s, bkm_err_t *err);
/** Samples taken; threads kept (index 0..n-1, in order of first sighting); one of them (borrowed,
 *  valid until close). */
int bkm_prog_sampler_samples(const bkm_prog_sampler_t *s);
int bkm_prog_sampler_n_tasks(const bkm_prog_sampler_t *s);
const bkm_prog_task_t *bkm_prog_sampler_task(const bkm_prog_sampler_t *s, int i);
/** Mean wall time of one pass (ns), for the sampler's own cost; 0 before the first. */
uint64_t bkm_prog_sampler_pass_ns(const bkm_prog_sampler_t *s);
void bkm_prog_sampler_close(bkm_prog_sampler_t *s);

/** Parsers of the procfs files, exposed for tests. Each returns BKM_OK or BKM_EINVAL naming
 *  what is malformed. */
/** .../status: Cpus_allowed_list, voluntary_ctxt_switches, nonvoluntary_ctxt_switches. */
int bkm_prog_parse_status(const char *text, bkm_cpuset_t *mask, uint64_t *vol, uint64_t *invol, bkm_err_t *err);
/** .../stat: the name between the first '(' and the last ')' may hold anything; after it, field 3
 *  (state), 10/12 (minflt, majflt), 14/15 (utime, stime), 22 (starttime), 39 (processor). */
int bkm_prog_parse_stat(const char *text, bkm_prog_counters_t *c, unsigned long long *start_ticks, int *cpu,
                        char *state, bkm_err_t *err);
/** .../schedstat: "run_ns wait_ns timeslices". */
int bkm_prog_parse_schedstat(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices, bkm_err_t *err);
/** .../sched: the integer of line "se.nr_migrations : N" (BKM_ENOTSUP when absent). */
int bkm_prog_parse_sched_migrations(const char *text, long long *migrations, bkm_err_t *err);

/* ======================================================================================== */
/* Report: threads classified, the team, the check against a plan                           */
/* ======================================================================================== */

/** What a thread is. */
typedef enum {
    BKM_PROG_CLASS_TEAM = 0,    /**< "team": a member of the main OpenMP team */
    BKM_PROG_CLASS_TEAM_OTHER,  /**< "team-other": a member of another team only (nested, or led by another thread) */
    BKM_PROG_CLASS_OMP_HELPER,  /**< "omp-helper": an OpenMP runtime's thread that is in no application
                                     team (OMPT type "other", libomp's hidden helpers, an idle pool thread) */
    BKM_PROG_CLASS_MAIN,        /**< "main": the process's main thread (TID = PID), not in the team */
    BKM_PROG_CLASS_PYTHON,      /**< "python": created by the Python interpreter (threading) */
    BKM_PROG_CLASS_TORCH,       /**< "torch": created by PyTorch (libtorch*, libc10*: its pools) */
    BKM_PROG_CLASS_OTHER,       /**< "other": created by any other code (lib names it; the program's own pthread) */
    BKM_PROG_CLASS_UNKNOWN      /**< "unknown": no record of its creation (shim absent, created before
                                     the shim loaded, or not through pthread_create) */
} bkm_prog_class_t;
/** "team", "team-other", ...; NULL for a value out of range. */
const char *bkm_prog_class_name(int cls);

/** One OpenMP team shape seen in the program's main process. */
typedef struct bkm_prog_team {
    int api;                       /**< bkm_prog_api_t */
    int primary;                   /**< TID of the primary (thread 0) */
    int size, level;               /**< level -1: unknown */
    char rt[BKM_PROG_NAME_MAX];    /**< runtime object ("libgomp.so.1", "libomp.so.5") */
    int helper;                    /**< led by a thread the runtime created for itself (libomp's
                                        hidden helper team), not by the program */
    int *tid;                      /**< [size]: tid[index], -1 when no thread reported the index */
    uint64_t *joined_ns;           /**< [size]: its first record at that index (0: inferred) */
    int n_found;                   /**< indexes with a thread */
    int conflicts;                 /**< an index claimed by two threads (the first kept) */
    uint64_t t_ns;                 /**< the earliest record of the team */
} bkm_prog_team_t;

/** One thread of the report. */
typedef struct bkm_prog_thread {
    int tid;
    int cls;                       /**< bkm_prog_class_t */
    int is_main;                   /**< TID = PID */
    const bkm_prog_task_t *task;   /**< what the sampler saw; NULL when never sampled (short-lived) */
    int created;                   /**< the shim saw its creation: */
    int creator;                   /**<   the creating TID */
    long long seq;                 /**<   creation order */
    int lib_is_exe;
    char via[BKM_PROG_NAME_MAX];
    char lib[BKM_PROG_NAME_MAX];
    int ompt_type;                 /**< BKM_PROG_OMPT_* */
    int team_index, team_size;     /**< in the main team; -1 when not a member */
    uint64_t team_t_ns;            /**< its first record in the main team (0 when inferred) */
    int n_teams;                   /**< team shapes it ran in (any team) */
} bkm_prog_thread_t;

typedef struct bkm_prog_report bkm_prog_report_t;

/** Merge the samples of @p s (may be NULL: log only) and the log @p log (may be NULL: samples only;
 *  every thread is then "unknown" or "main") for the process @p pid into a report. What a log
 *  (data the program could have written) makes it hold is bounded: 65536 threads the sampler did
 *  not see, 256 team shapes, 2^20 team slots in all, 64 other processes; the rest is counted
 *  ("threads_lost", "teams_lost", "other_processes_lost" in the JSON). The main team
 *  is the level-1 team of more than one thread led by the main thread, else by any thread, the
 *  largest first (the team of one thread when no larger one ran). The report borrows @p s: keep
 *  the sampler open while the report is used. @return BKM_OK; BKM_EINVAL (pid < 1); BKM_ENOMEM. */
int bkm_prog_report_build(const bkm_prog_sampler_t *s, const bkm_prog_log_t *log, int pid,
                          bkm_prog_report_t **r, bkm_err_t *err);
void bkm_prog_report_free(bkm_prog_report_t *r);
/** Threads (those sampled, then those only the log knows), borrowed until free. */
int bkm_prog_report_n_threads(const bkm_prog_report_t *r);
const bkm_prog_thread_t *bkm_prog_report_thread(const bkm_prog_report_t *r, int i);
/** The thread with TID @p tid, or NULL. */
const bkm_prog_thread_t *bkm_prog_report_find(const bkm_prog_report_t *r, int tid);
/** Teams seen; the main team (NULL when the program ran no OpenMP team the shim saw, and none
 *  could be inferred). */
int bkm_prog_report_n_teams(const bkm_prog_report_t *r);
const bkm_prog_team_t *bkm_prog_report_team(const bkm_prog_report_t *r, int i);
const bkm_prog_team_t *bkm_prog_report_main_team(const bkm_prog_report_t *r);
/** The OpenMP runtimes that reported teams or threads, ';'-separated object names ("" none). */
const char *bkm_prog_report_runtimes(const bkm_prog_report_t *r);

/** Verdict of the comparison with a plan, per member and overall. */
typedef enum {
    BKM_PROG_MATCH = 0,      /**< "match": every mask sampled while a member equals the plan's set */
    BKM_PROG_MISMATCH,       /**< "mismatch": a mask sampled while a member differs */
    BKM_PROG_UNSAMPLED,      /**< "unsampled": the member was never sampled after it joined the team */
    BKM_PROG_MISSING,        /**< "missing": no thread reported this index */
    BKM_PROG_NO_TEAM         /**< "no-team" (overall only): no team of the plan's size ran */
} bkm_prog_verdict_t;
const char *bkm_prog_verdict_name(int v);

typedef struct bkm_prog_check_member {
    int index, tid;
    int verdict;
    bkm_cpuset_t planned;
    int n_observed;                         /**< distinct masks sampled while a member */
    bkm_cpuset_t observed[BKM_PROG_MASKS_MAX];
    int unbound;                            /**< a mask seen was the process's whole allowed set */
} bkm_prog_check_member_t;

typedef struct bkm_prog_check {
    int verdict;                    /**< overall: mismatch if any member mismatches; else
                                         match only when every member matches; else the first of
                                         missing/unsampled; no-team when no team of size n */
    int team_size;                  /**< n, the plan's size */
    int api;                        /**< how the compared team was found (bkm_prog_api_t) */
    int primary;
    int initial_only;               /**< a team of one judged by the initial thread (no team recorded) */
    bkm_cpuset_t allowed;           /**< the process's allowed set used for "unbound" */
    bkm_prog_check_member_t *member; /**< [team_size] */
    int n_match, n_mismatch, n_unsampled, n_missing, n_unbound;
    char summary[256];              /**< one line: "2 of 2 team threads bound as planned" or what differs */
} bkm_prog_check_t;

/** Compare the team of @p n threads (the main team when it has n threads, else the first team of n
 *  threads at level 1) with @p planned[0..n) (the CPU set of each team index; from a planner such as
 *  bkm_aff_plan_cpus). A member's masks are those sampled at or after its first record in the team
 *  (all its samples for an inferred team). @p allowed (may be NULL or empty: the union of every
 *  mask sampled in the process) is the set the program was started with: a member mask equal to
 *  it is "unbound". On success *out is the caller's (bkm_prog_check_free). @return BKM_OK (the
 *  verdict is in the check); BKM_EINVAL (n < 1, planned NULL, an empty planned set naming its
 *  index); BKM_ENOMEM. */
int bkm_prog_report_check(const bkm_prog_report_t *r, const bkm_cpuset_t *planned, int n,
                          const bkm_cpuset_t *allowed, bkm_prog_check_t **out, bkm_err_t *err);
void bkm_prog_check_free(bkm_prog_check_t *c);

/** When the parent first saw an OpenMP runtime mapped in the process (bkm_now_ns; 0 = never seen,
 *  the default). A team of one starts no thread and may run no parallel region at all (PyTorch runs
 *  its operators inline at one thread), so no team of one is recorded: when a runtime was seen,
 *  bkm_prog_report_check then compares the initial thread with planned[0], over the masks it held
 *  from this time on (the runtime places the initial thread when it loads; before, it had the
 *  inherited mask). Without a runtime seen, such a check stays "no-team". */
void bkm_prog_report_set_runtime_seen(bkm_prog_report_t *r, uint64_t t_ns);

/** The binding evidence as one JSON object (documented in the "Binding evidence" section of the
 *  program documentation): process, shim, runtimes, teams, the main team in team order, every
 *  thread with its class, origin, team index, masks with times, CPUs run on; and @p check (may be
 *  NULL) under "check". Times are seconds since the first sample (or the first record). */
void bkm_prog_report_binding_json(const bkm_prog_report_t *r, const bkm_prog_check_t *check, bkm_json_w_t *w);

/** The noise evidence as one JSON object: per thread the deltas from its first to its last sample
 *  (from its start for a thread born while sampled) by source ("proc-task-stat": cpu_s,
 *  minor_faults, major_faults; "proc-status": voluntary/involuntary switches; "proc-schedstat":
 *  run_s, wait_s, timeslices, wait_share; "proc-sched": migrations), totals over the team and over
 *  all threads, /proc/stat steal of the CPUs the threads may run on, and the disturbed mark:
 *  share = the worst team thread's run-queue wait / its sampled wall time + the steal share,
 *  disturbed when above @p share_threshold (<= 0: BKM_PROG_NOISE_SHARE_DEFAULT). */
#define BKM_PROG_NOISE_SHARE_DEFAULT 0.10
void bkm_prog_report_noise_json(const bkm_prog_report_t *r, double share_threshold, bkm_json_w_t *w);
/** The share and mark of bkm_prog_report_noise_json (NaN / -1 when no source gave them). */
double bkm_prog_report_noise_share(const bkm_prog_report_t *r);
int bkm_prog_report_disturbed(const bkm_prog_report_t *r, double share_threshold);

#ifdef __cplusplus
}
#endif
#endif /* BKM_PROGRAM_H */
