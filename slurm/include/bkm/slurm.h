/* SPDX-License-Identifier: MIT */
/** @file bkm/slurm.h
 * Slurm: batch scripts from a setting (best-known, the profile's default or the seed's published
 * one), job arrays that spread a sweep over nodes with a merge job, submission through `sbatch`,
 * and a linter for the batch scripts people already have.
 *
 * Contract: BKM_OK or a negative BKM_E* code with the bkm_err_t naming the bad value. Nothing here
 * prints, exits or reads the environment: the caller passes the environment (for submission) and
 * the PATH to search for `sbatch`. Scripts are written into a bkm_buf_t; the caller writes files.
 */
#ifndef BKM_SLURM_H
#define BKM_SLURM_H

#include <stddef.h>

#include "bkm/affinity.h"
#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================== */
/* Settings and the srun layout                                                              */
/* ======================================================================================== */

#define BKM_SLURM_MAX_PARAMS 32

/** One runtime setting as a script exports it (strings, "" = unset). */
typedef struct bkm_slurm_setting {
    int threads;                  /**< OMP_NUM_THREADS, >= 1 */
    char kmp_affinity[256];
    char kmp_blocktime[32];
    char kmp_hw_subset[64];
    char omp_places[256];
    char omp_proc_bind[64];
    char gomp_cpu_affinity[256];  /**< GNU libgomp's (libomp converts it) */
    char omp_wait_policy[16];
    char gomp_spincount[32];      /**< GNU libgomp only */
    int runtime;                  /**< the OpenMP runtime of the program the job runs
                                       (bkm_aff_runtime_kind_t): LIBGOMP: only the variables libgomp
                                       reads; any other: the libomp rules (bkm's own workloads, with
                                       NONE (0), run on LLVM libomp); a program job's comment names it */
    char backend[16];             /**< "" = the workload's default */
    char params[BKM_SLURM_MAX_PARAMS][128];   /**< "key=value" workload parameters / tunables */
    int n_params;
} bkm_slurm_setting_t;

/** Read a stored configuration ({"threads":N,"env":{...},"params":{...},"backend":...}, as the
 *  tuner stores it) into @p s. BKM_EINVAL naming the member that is missing or unusable. */
int bkm_slurm_setting_from_config(const char *config_json, bkm_slurm_setting_t *s, bkm_err_t *err);
/** The setting the seed published for Cori (docs/affinity.md §5):
 *  KMP_AFFINITY=granularity=fine,compact,1,0, KMP_BLOCKTIME=1, 32 threads on "haswell" and 68 on
 *  "knl". BKM_EINVAL naming @p node for any other node. */
int bkm_slurm_setting_seed(const char *node, bkm_slurm_setting_t *s, bkm_err_t *err);
/** Check @p s: every variable through the strict parsers of the runtime it is for (s->runtime:
 *  GNU libgomp's, where a KMP_* variable is refused as ignored; else libomp's, where
 *  GOMP_SPINCOUNT is), and no rival variables that would cancel each other (KMP_AFFINITY with a
 *  type beside OMP_PLACES/OMP_PROC_BIND: libomp applies them in environment order and one
 *  silently loses); each parameter key=value of letters, digits and =_.,:+-; the backend a name
 *  (letters, digits, _ and -). BKM_EINVAL naming them. */
int bkm_slurm_setting_check(const bkm_slurm_setting_t *s, bkm_err_t *err);

/** srun's CPUs per task and binding for @p ranks_per_node ranks on a node of @p pus logical CPUs
 *  and @p cores cores, by NERSC's rules (docs/affinity.md §5): -c = pus / R when R divides the cores
 *  (or, beyond one rank per core, the CPUs), else floor(cores / R) x (pus / cores); --cpu-bind=
 *  threads when R exceeds the cores, else cores. BKM_EINVAL when R is 0 or above @p pus. */
typedef struct bkm_slurm_layout {
    int cpus_per_task;            /**< srun -c */
    const char *cpu_bind;         /**< "cores" or "threads" (static) */
    int packed;                   /**< 1: the ranks cover every core of the node */
    char why[256];                /**< the rule that applied, for the script's comment */
} bkm_slurm_layout_t;
int bkm_slurm_layout(int pus, int cores, int ranks_per_node, bkm_slurm_layout_t *l, bkm_err_t *err);
/** The layout by a site's batch rules (a node profile's): -c by @p rules->c_rule (node: as
 *  bkm_slurm_layout; threads: -c = @p threads; cores: @p threads x hardware threads per core), the
 *  binding @p rules->cpu_bind ("auto": as bkm_slurm_layout; else that value, which l->cpu_bind
 *  points to: @p rules must outlive @p l). @p rules NULL: bkm_slurm_layout. BKM_EINVAL when the
 *  ranks' CPUs exceed the node's, naming the counts. */
int bkm_slurm_layout_rules(const bkm_batch_rules_t *rules, int pus, int cores, int ranks_per_node, int threads,
                           bkm_slurm_layout_t *l, bkm_err_t *err);

/* ======================================================================================== */
/* Batch scripts                                                                              */
/* ======================================================================================== */

/** Where a setting comes from: written into the script's provenance comment. */
typedef enum {
    BKM_SLURM_FROM_BEST = 0,      /**< measured: a stored best-known setting */
    BKM_SLURM_FROM_DEFAULT,       /**< the profile's default setting, not measured */
    BKM_SLURM_FROM_SEED,          /**< published by the seed for Cori, not measured by bkm */
    BKM_SLURM_FROM_SITE           /**< the site's recommended setting (the profile's prior), not measured */
} bkm_slurm_origin_t;

/** Provenance of a measured setting (BKM_SLURM_FROM_BEST); strings may be NULL (unknown). */
typedef struct bkm_slurm_provenance {
    const char *sweep;            /**< sweep uuid */
    double median_ms, ci_lo_ms, ci_hi_ms;
    double default_median_ms, speedup;
    int significant;
    const char *host;             /**< host the sweep ran on */
    const char *measured_at;      /**< when the best-known setting was stored */
    const char *git_revision;     /**< bkm revision of the sweep */
    const char *db;               /**< database it was read from */
} bkm_slurm_provenance_t;

/** A batch job. Strings are checked (bkm_slurm_job_check): Slurm option values may not hold
 *  blanks, quotes or shell metacharacters; the tune path is absolute; none may hold a control
 *  character. Every other value is quoted (bkm_slurm_sh_quote) or, in comments, escaped
 *  (bkm_slurm_sh_comment) where it is written; `command` is the one value written as shell code. */
typedef struct bkm_slurm_job {
    const char *node;             /**< profile name ("knl") */
    const bkm_batch_rules_t *rules; /**< the site's batch rules (the node profile's): the -c rule,
                                       --cpu-bind, the launcher, the Slurm semantics, the prior's
                                       source; NULL: NERSC's rules for Cori (node -c rule, automatic
                                       --cpu-bind, srun). -q, -A, -p and --mpi are the fields below,
                                       which the caller fills from the rules' defaults */
    const char *constraint;       /**< -C; NULL or "" = none */
    int pus, cores;               /**< the node's logical CPUs and cores (for srun -c) */
    const char *workload;
    int nodes;                    /**< -N, >= 1 */
    int ranks_per_node;           /**< >= 1 */
    const char *account;          /**< -A; NULL = none */
    const char *qos;              /**< -q; NULL = none */
    const char *partition;        /**< -p; NULL = the cluster's default partition */
    const char *time;             /**< -t, a Slurm time (MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]) */
    const char *job_name;         /**< -J */
    const char *output;           /**< -o; NULL = "<job_name>-%j.out" */
    const char *mpi;              /**< srun --mpi=TYPE ("pmi2" for MPICH); NULL or "" = omitted */
    const char *command;          /**< the user's program instead of `tune run`; NULL = tune run */
    const char *const *program_argv; /**< the user's program as stored by a sweep of it (`tune ...
                                       -- CMD ARGS`): each word quoted; NULL = none */
    int program_argc;
    int train;                    /**< 1: the workload is the MPI training run: the ranks run
                                       `tune train --threads T --param ...` instead of `tune run` */
    int check_binding;            /**< 1: before the run, every rank runs `tune affinity verify --env`
                                       under the same launcher, layout and setting, printing its CPU
                                       mask and each thread's CPUs against the plan; a mismatch stops
                                       the job (libomp settings only) */
    const char *tune;             /**< path of the tune executable the job runs */
    const char *tune_note;        /**< what that tune is, for the header ("bkm 0.1.0 installed under
                                       /opt/bkm"); NULL: no such line */
    const char *generated_by;     /**< "tune sbatch ..." (the command line), for the comment */
    const char *generated_at;     /**< ISO-8601 UTC */
    const char *generator_revision; /**< bkm revision writing the script */
    const char *generator_host;
    bkm_slurm_setting_t setting;
    bkm_slurm_origin_t origin;
    bkm_slurm_provenance_t prov;
} bkm_slurm_job_t;

/** How every value that is not from a closed set gets into a script: @p s appended to @p out as
 *  one shell word, as it is when @p always is 0 and it is a non-empty run of letters, digits and
 *  _-./=:,+@% (nothing the shell expands), else in single quotes with each ' written '\''. */
void bkm_slurm_sh_quote(bkm_buf_t *out, const char *s, int always);
/** How text gets into a comment of a script: @p s appended with every control character escaped
 *  (\n, \r, \t, \xHH) and ill-formed UTF-8 as U+FFFD, so that a comment
 *  line never ends before the script's own newline. */
void bkm_slurm_sh_comment(bkm_buf_t *out, const char *s);

/** Defaults: 1 node, 1 rank per node, -t 00:30:00, -q regular, --mpi=pmi2, no rules (NERSC's for
 *  Cori). */
void bkm_slurm_job_defaults(bkm_slurm_job_t *job);
/** Check every field of @p job (values, Slurm time syntax, the setting, the layout). */
int bkm_slurm_job_check(const bkm_slurm_job_t *job, bkm_err_t *err);
/** Append the batch script of @p job to @p out: `#!/bin/bash`, the provenance comment, the
 *  #SBATCH lines, the exported setting (in the order libomp applies, bkm_aff_env_export), the
 *  planned world size, with check_binding the binding check step, and one launcher line (srun -n
 *  --ntasks-per-node -c --cpu-bind [--mpi], always with -c: Slurm 22.05 and later do not pass the
 *  job's --cpus-per-task to srun; or mpiexec -n -ppn -bind-to) whose every rank prints "bkm rank R
 *  of N on HOST: <the settings it sees>" before it runs `tune run` (which prints the result line:
 *  median time, GFLOP/s) or the user's command. */
int bkm_slurm_script_write(const bkm_slurm_job_t *job, bkm_buf_t *out, bkm_err_t *err);

/** A sweep spread over a job array of @p shards shards plus a merge job. */
typedef struct bkm_slurm_array {
    int shards;                   /**< K >= 1 */
    const char *const *sweep_argv; /**< the sweep's options, one word each (each is quoted when
                                       written), without --db/--shard */
    int sweep_argc;
    const char *db;               /**< the merged database (an absolute path on shared storage) */
    const char *shard_dir;        /**< where finished shards are copied (absolute, shared storage) */
    const char *group;            /**< the shards' common sweep group (a random token made when the
                                       script is written: resubmitting the same script resumes into
                                       the same sweep, another script never collides) */
} bkm_slurm_array_t;
/** The array job's script: shard $SLURM_ARRAY_TASK_ID of K runs `tune sweep ... --shard I/K
 *  --shard-group GROUP` into a node-local SQLite file (in a new folder that `mktemp -d` makes in
 *  $TMPDIR or /tmp, never the shared file system), then copies the closed file to
 *  SHARD_DIR/shard-I-of-K.sqlite. */
int bkm_slurm_array_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err);
/** The job that runs the whole sweep on one node (`tune --sbatch FILE`): `tune sweep ...` into a
 *  node-local SQLite file, then `tune merge DB` of it and `tune best`; @p a's shards and shard_dir
 *  are not used. */
int bkm_slurm_sweep_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err);
/** The merge job's script (run with --dependency=afterany:ARRAYID, so that it also runs after a
 *  failed shard, or by hand): names every shard file that is missing, i.e. whose task failed or
 *  never ran (exit 4 after merging the others into DB), else `tune merge`s them into DB and
 *  re-runs the unsplit sweep on DB, which finds every search trial stored and only confirms and
 *  derives the best-known setting. */
int bkm_slurm_merge_script_write(const bkm_slurm_job_t *job, const bkm_slurm_array_t *a, bkm_buf_t *out,
                                 bkm_err_t *err);

/** The batch job(s) that run a sweep on its node rather than here (`tune --sbatch FILE`, `tune
 *  --slurm-array K`): one job, or a job array of K shards plus its merge job. */
typedef struct bkm_slurm_sweep_jobs_cfg {
    const bkm_slurm_job_t *job;   /**< node, constraint, workload, account, qos, partition and the
                                       generator fields; time NULL: 02:00:00; job_name NULL: bkm-WORKLOAD */
    int shards;                   /**< 0: one job runs the whole sweep; K >= 1: a job array of K shards */
    const char *const *sweep_argv; /**< the sweep's own options for the job's `tune sweep` line, one
                                        word each, without --db and --shard* (the jobs set them) */
    int sweep_argc;
    const char *strategy;         /**< the --strategy given, NULL when none was: a job array splits
                                       the grid (and adds --strategy grid), no other strategy */
    int shard_count;              /**< the sweep's own --shard I/K count (0: none): refused here */
    const char *db;               /**< --db, the database the results are merged into */
    const char *cwd;              /**< the caller's current folder, when db is relative */
    const char *script;           /**< the (array) job's file; NULL: bkm-NODE-WORKLOAD[-array].sbatch */
    const char *group;            /**< the shards' sweep group; NULL: a random token (getrandom) */
} bkm_slurm_sweep_jobs_cfg_t;

/** The scripts of a sweep's job(s) and where they go. Free with bkm_slurm_sweep_jobs_free. */
typedef struct bkm_slurm_sweep_jobs {
    int array;                    /**< 1: a job array (script) and a merge job (merge) */
    char script[4096];            /**< the (array) job's file */
    char merge[4096 + 16];        /**< the merge job's file: the script's name with -merge before its
                                       extension */
    bkm_buf_t script_text, merge_text;
    bkm_buf_t db;                 /**< the database, absolute */
    bkm_buf_t shard_dir;          /**< where the shards are collected: DB.shards */
    bkm_buf_t how;                /**< the command that submits them by hand (each path one shell word) */
    char group[17];
} bkm_slurm_sweep_jobs_t;

/** Build the job(s) of @p cfg into @p out: the checks (a job array splits the grid only: another
 *  strategy is BKM_EINVAL, as is --shard), the job's defaults, the absolute database, the group,
 *  the scripts (bkm_slurm_sweep_script_write, or bkm_slurm_array_script_write and
 *  bkm_slurm_merge_script_write) and their file names. @return BKM_OK; BKM_EINVAL naming the value;
 *  BKM_EIO (no random group). @p out is to be freed in every case. */
int bkm_slurm_sweep_jobs_build(const bkm_slurm_sweep_jobs_cfg_t *cfg, bkm_slurm_sweep_jobs_t *out, bkm_err_t *err);
void bkm_slurm_sweep_jobs_free(bkm_slurm_sweep_jobs_t *j);

/* ======================================================================================== */
/* Submission                                                                                 */
/* ======================================================================================== */

/** The environment for `sbatch`: @p environ without the SBATCH_* and SLURM_* variables that would
 *  silently change a submission (SLURM_CONF, which only names the cluster's configuration, is
 *  kept). *out is a NULL-terminated array of pointers into @p envp (bkm_free the array);
 *  *n_cleared (may be NULL) counts what was removed. */
int bkm_slurm_submit_env(char *const *envp, char ***out, int *n_cleared, bkm_err_t *err);
/** Find @p prog ("sbatch") in the colon-separated @p path into @p found. BKM_EDEP saying which
 *  Debian package to install when it is nowhere. */
int bkm_slurm_find_program(const char *prog, const char *path, char *found, size_t n, bkm_err_t *err);

typedef struct bkm_slurm_submit {
    const char *sbatch;           /**< absolute path of sbatch (bkm_slurm_find_program) */
    char *const *envp;            /**< from bkm_slurm_submit_env */
    const char *script;           /**< path of the script */
    const char *dependency;       /**< --dependency value, or NULL */
    int test_only;                /**< sbatch --test-only */
} bkm_slurm_submit_t;
/** Run sbatch (--parsable) on the script. On success *job_id is the job's id (0 under
 *  --test-only) and @p msg gets sbatch's output. When sbatch refuses, BKM_EDEP with Slurm's own
 *  message verbatim in @p err (and in @p msg). */
int bkm_slurm_submit_run(const bkm_slurm_submit_t *s, long long *job_id, bkm_buf_t *msg, bkm_err_t *err);
/** Submit a sweep's written job scripts (bkm_slurm_sweep_jobs_build) with @p how's sbatch and
 *  environment (its script and dependency are set here): the job, then the merge job with
 *  --dependency=afterany:ID. ids[0], ids[1]: the job ids (0 when not submitted); after a failure,
 *  those that were. Errors as bkm_slurm_submit_run. */
int bkm_slurm_sweep_jobs_submit(const bkm_slurm_sweep_jobs_t *j, const bkm_slurm_submit_t *how, long long ids[2],
                                bkm_err_t *err);

/* ======================================================================================== */
/* Lint                                                                                       */
/* ======================================================================================== */

typedef enum { BKM_SLURM_NOTE = 0, BKM_SLURM_WARNING = 1, BKM_SLURM_ERROR = 2 } bkm_slurm_sev_t;

typedef struct bkm_slurm_finding {
    int line;                     /**< 1-based; 0 = the whole script */
    bkm_slurm_sev_t sev;
    char code[32];                /**< "unknown-variable", "bad-value", "cancelling", "threads",
                                       "cpu-bind", "node", "program", "runtime", "ignored-variable",
                                       "probe" */
    char msg[512];
} bkm_slurm_finding_t;

/** The program of one srun line and what is known of the OpenMP runtime it loads. */
typedef struct bkm_slurm_lint_program {
    int line;                     /**< the srun line */
    char word[256];               /**< the program as the script writes it ("./app", "python3") */
    char *path;                   /**< where it was found, or NULL (not found, or a shell expansion) */
    int checked;                  /**< 1: rt holds its static detection */
    bkm_aff_runtime_result_t rt;  /**< from its ELF dependencies (bkm_aff_runtime_detect_static) */
    int probed;                   /**< 1: probe holds what it mapped while it ran (--probe) */
    bkm_aff_runtime_result_t probe;
    bkm_aff_runtime_kind_t kind;  /**< the runtime the variables were checked against: what the probe
                                       saw, else the static answer; UNKNOWN when neither tells */
} bkm_slurm_lint_program_t;

/** A lint report: the findings and what the script sets. */
typedef struct bkm_slurm_lint {
    bkm_slurm_finding_t *f;
    size_t n, cap;
    int errors, warnings;
    char node[32];                /**< the node checked against ("" = none known) */
    char constraint[128];         /**< #SBATCH -C */
    int threads;                  /**< OMP_NUM_THREADS (first level), 0 = unset */
    int srun_c;                   /**< srun -c / --cpus-per-task (or #SBATCH -c), 0 = none */
    int ranks_per_node;           /**< 0 = unknown */
    char *plan_text;              /**< the planner's explanation on that node, or NULL */
    char *plan_json;              /**< the same as JSON, or NULL */
    bkm_slurm_lint_program_t *programs; /**< [n_programs]: the programs of the srun lines (program checks on) */
    int n_programs;
} bkm_slurm_lint_t;

/** What bkm_slurm_lint_run_cfg checks besides the script's text. Zero it, then set what applies. */
typedef struct bkm_slurm_lint_cfg {
    const char *node;             /**< as bkm_slurm_lint_run's @p node */
    const char *script_dir;       /**< the script's directory: a relative program (and srun --chdir)
                                       is taken from it, a bare name from PATH and then from it.
                                       NULL: the programs of srun lines are not checked */
    bkm_aff_runtime_cfg_t runtime;/**< PATH, LD_LIBRARY_PATH and LD_PRELOAD of the environment the job
                                       starts from; the script's own static exports of them win */
    int probe;                    /**< start each program briefly to see the runtimes it maps
                                       (bkm_aff_runtime_probe_run): it executes the program */
    double probe_timeout_s;       /**< how long each may run; 0: 5 s */
    char *const *probe_envp;      /**< the environment the programs start with; the script's
                                       exports are added (NULL: only those) */
} bkm_slurm_lint_cfg_t;
void bkm_slurm_lint_free(bkm_slurm_lint_t *r);

/** Lint the script @p text: OpenMP/KMP variables no runtime reads (edit distance against the
 *  variables libomp 14 and libgomp read), values the strict parsers reject, settings that cancel
 *  each other, thread counts that do not fit the node or srun -c, srun without --cpu-bind where
 *  NERSC's rules need it; then the planner's explanation of the placement on the node. @p node
 *  (NULL: from -C: knl, haswell, cpu) names a profile (bkm_profile_resolve). BKM_OK whatever was
 *  found (r->errors counts the errors); BKM_EINVAL when @p node is unknown. */
int bkm_slurm_lint_run(const char *text, const char *node, bkm_slurm_lint_t *r, bkm_err_t *err);
/** bkm_slurm_lint_run with the programs of the script's srun lines checked too (cfg->script_dir
 *  set): each program (the first word after srun's options and wrappers such as env, numactl,
 *  taskset) is found and its OpenMP runtime named from its ELF dependencies ("runtime" note); an
 *  interpreter cannot be told statically (a note saying that --probe would tell); every variable
 *  the script sets that this runtime ignores is an "ignored-variable" finding on its line (an
 *  error for placement, wait, thread-count and stack variables, a warning for the others); two
 *  runtimes in one program are a warning. A program loading GNU libgomp only gets no libomp
 *  cancellation check and no placement explanation (the planner models libomp): a note says so.
 *  With cfg->probe each program found is started (never through a shell; not when its command
 *  line holds shell expansions) with the script's exports, and what it maps decides. */
int bkm_slurm_lint_run_cfg(const char *text, const bkm_slurm_lint_cfg_t *cfg, bkm_slurm_lint_t *r, bkm_err_t *err);
/** The report as JSON: {"node","constraint","threads","srun_c","errors","warnings",
 *  "findings":[{"line","severity","code","message"}],"placement": plan JSON or null,
 *  "explanation", "programs":[{"line","program","path","kind","static": detection or null,
 *  "probe": detection or null}]} (detections as bkm_aff_runtime_result_to_json). */
int bkm_slurm_lint_to_json(const bkm_slurm_lint_t *r, const char *script, bkm_buf_t *out);
/** The closest variable name libomp or libgomp reads within edit distance 2 of @p name, or NULL
 *  when @p name is one of them or none is that close. */
const char *bkm_slurm_var_suggest(const char *name, int *known);
/** Optimal-string-alignment (Damerau) edit distance between @p a and @p b. */
int bkm_slurm_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif /* BKM_SLURM_H */
