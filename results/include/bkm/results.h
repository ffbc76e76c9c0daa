/* SPDX-License-Identifier: MIT */
/** @file bkm/results.h
 * The results database: every host, sweep, trial, sample, counter and best-known setting that
 * bkm measures, in one SQLite file (WAL mode), plus merge and export.
 *
 * Contract: functions return BKM_OK or a negative BKM_E* code and fill the optional bkm_err_t
 * with a message naming the offending value (the database path, the configuration, ...).
 * A bkm_db_t is one SQLite connection: use it from one thread at a time. Several processes may
 * write one database at once (WAL, busy timeout, BEGIN IMMEDIATE with retries); each finished
 * trial is stored with its samples and counters in one transaction, so a crash never leaves a
 * partial trial (WAL with synchronous=NORMAL: a committed trial survives kill -9 of the process;
 * the last commits before a power loss may not). Strings returned through output structs are
 * owned by the caller and released with the matching *_free / *_clear function. Nothing here may
 * be called inside an OpenMP parallel region.
 *
 * A file that is not a bkm database (not SQLite, or SQLite without the bkm application_id), or
 * that fails `PRAGMA quick_check`, is refused with BKM_ECORRUPT and is never modified: its header
 * is read with plain read(2) before SQLite opens it. A database written by a newer bkm (schema
 * version above BKM_DB_SCHEMA_VERSION) is refused with BKM_ENOTSUP naming both versions.
 *
 * Only results/ includes sqlite3.h.
 */
#ifndef BKM_RESULTS_H
#define BKM_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Current schema version (PRAGMA user_version). Older databases are migrated on open. */
#define BKM_DB_SCHEMA_VERSION 7
/** Oldest schema a read-only open reads as it is (version 3 only widened the sweep status
 *  CHECK to 'interrupted'); an older one must be migrated by a read-write open first. */
#define BKM_DB_SCHEMA_READ_MIN 2
/** PRAGMA application_id of every bkm database: "bkm!" (0x626b6d21). */
#define BKM_DB_APPLICATION_ID 0x626b6d21
/** Default database path, relative to the current directory. */
#define BKM_DB_DEFAULT_PATH "results/bkm.sqlite"
/** How long a writer waits for another process's lock before BKM_EIO, in milliseconds. */
#define BKM_DB_BUSY_TIMEOUT_MS 30000

typedef struct bkm_db bkm_db_t;

/** bkm_db_open flags. */
enum {
    BKM_DB_CREATE = 1u << 0,   /**< create the file (and its parent folder) when missing        */
    BKM_DB_READONLY = 1u << 1, /**< open read-only; no migration (a schema older than
                                    BKM_DB_SCHEMA_READ_MIN: BKM_ENOTSUP) */
    BKM_DB_SHARED_FS_OK = 1u << 2 /**< the caller is the one writer from one host (a merge run
                                    by hand): on a shared network file system open with a
                                    bkm_db_warning() instead of refusing */
};

/** Open (and with BKM_DB_CREATE create) the database at @p path.
 *  Checks the file header and bkm marker without modifying the file, then opens it, enables
 *  WAL, foreign keys and a busy timeout, runs `PRAGMA quick_check` and applies pending
 *  migrations (one transaction each).
 *
 *  A read-write open refuses a database on a file system that other hosts share (NFS, Lustre,
 *  GPFS, CIFS/SMB, BeeGFS, Ceph, AFS, GFS2, OCFS2, PanFS: bkm_db_fs_classify), where SQLite's WAL
 *  mode corrupts a database that processes on two hosts write, with BKM_ENOTSUP and a message
 *  that says what to do (a node-local path, then `tune merge`); with BKM_DB_SHARED_FS_OK it opens
 *  with a warning instead. On FUSE, 9p and virtiofs it opens and bkm_db_warning() says why to be
 *  careful.
 *
 *  With BKM_DB_READONLY nothing is ever written next to the database, and it works on a
 *  read-only file in a read-only folder: no migration, no WAL switch, no -wal or -shm created.
 *  When no writer has it open and no -wal holds commits, the whole database is in its file and
 *  SQLite reads it as immutable, while a read lock (the one SQLite readers hold) keeps a writer
 *  that opens it meanwhile from checkpointing into the file when it closes, until bkm_db_close.
 *  When a writer has it open (a -wal beside a -shm) or a -wal holds commits (a writer crashed),
 *  SQLite reads it the normal way, through the -shm index: a missing -shm is then created by
 *  SQLite if the folder is writable (the database and -wal are not modified), and in a
 *  read-only folder the open fails with BKM_EIO saying what to do.
 *  @return BKM_OK; BKM_EIO missing file (without CREATE) or unreadable/uncreatable path;
 *          BKM_ECORRUPT not a bkm database or damaged; BKM_ENOTSUP newer schema, or a read-write
 *          open on a shared network file system; BKM_EDEP SQLite error; BKM_ENOMEM. */
int bkm_db_open(bkm_db_t **db, const char *path, unsigned flags, bkm_err_t *err);
/** A warning about where the database lives (FUSE, 9p or virtiofs: maybe shared with another
 *  host; a shared file system opened with BKM_DB_SHARED_FS_OK) for the caller to show, or NULL.
 *  Borrowed; valid until bkm_db_close. */
const char *bkm_db_warning(const bkm_db_t *db);

/** File system classes of bkm_db_fs_classify. */
enum {
    BKM_DB_FS_LOCAL = 0,        /**< ext4, xfs, btrfs, tmpfs, overlay, zfs, ...: fine           */
    BKM_DB_FS_MAYBE_SHARED = 1, /**< fuse, 9p, virtiofs: may be another host's; warn           */
    BKM_DB_FS_SHARED = 2        /**< nfs, lustre, gpfs, cifs/smb, beegfs, ceph, afs, gfs2,
                                     ocfs2, panfs: shared between hosts; refuse to write       */
};
/** Class of a file system by its statfs(2) f_type magic; *name (may be NULL) is its short name
 *  ("nfs", "lustre", ..., "local" for any other). Pure: no I/O. */
int bkm_db_fs_classify(unsigned long f_type, const char **name);
/** Close; NULL is a no-op. */
void bkm_db_close(bkm_db_t *db);
/** Path the database was opened with (borrowed). */
const char *bkm_db_path(const bkm_db_t *db);
/** Schema version of the open database (after migrations). */
int bkm_db_schema_version(bkm_db_t *db, int *version, bkm_err_t *err);
/** `PRAGMA integrity_check`: BKM_OK when it says "ok", else BKM_ECORRUPT with its first line. */
int bkm_db_integrity_check(bkm_db_t *db, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Canonical form of a JSON object (members sorted by key, no whitespace, numbers as %.17g
 *  trimmed). Two configurations are the same trial exactly when their canonical forms are
 *  equal. *out is freed with bkm_free. BKM_EINVAL when @p json does not parse or is not an
 *  object. */
int bkm_db_config_canonical(const char *json, char **out, bkm_err_t *err);
/** Sweep key: FNV-1a 64-bit hash, as 16 hex digits, of the canonical search space, the node
 *  profile name and the workload. The same command gives the same key, so it resumes. */
int bkm_db_sweep_key(const char *space_json, const char *node, const char *workload, char key[17],
                     bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Host the sweep runs on. Hosts are unique by (hostname, fingerprint). */
typedef struct bkm_db_host {
    const char *hostname;
    const char *cpu_model;
    const char *topology_json;  /**< topology summary, JSON; may be NULL */
    const char *fingerprint;    /**< topology fingerprint (hwloc); may be NULL = "" */
} bkm_db_host_t;
/** Insert or update the host; *host_id is its row id. */
int bkm_db_host_upsert(bkm_db_t *db, const bkm_db_host_t *host, int64_t *host_id, bkm_err_t *err);

/** A sweep: one run of `tune` over a search space. */
typedef struct bkm_db_sweep {
    const char *key;           /**< bkm_db_sweep_key(); required */
    const char *uuid;          /**< NULL: a random one; else this uuid (the shards of one sweep
                                    share theirs, so `tune merge` folds them into one sweep) */
    const char *command;       /**< full command line */
    const char *label;         /**< user label; may be NULL */
    const char *node;          /**< node profile name; required */
    const char *workload;      /**< required */
    const char *strategy;      /**< search strategy name */
    const char *git_revision;  /**< bkm revision (BKM_GIT_REVISION from the build); NULL = "unknown" */
    int64_t host_id;           /**< 0 = none */
} bkm_db_sweep_t;
/** Resume the newest sweep with info->key, or create one (always create when @p fresh).
 *  A resumed sweep is marked running again. *resumed (may be NULL) is 1 when resumed. */
int bkm_db_sweep_open(bkm_db_t *db, const bkm_db_sweep_t *info, int fresh, int64_t *sweep_id,
                      int *resumed, bkm_err_t *err);
/** Mark the sweep finished now with @p status: "done", "partial" (some trials failed),
 *  "interrupted" (stopped by SIGINT/SIGTERM; the same command resumes it) or "failed". */
int bkm_db_sweep_finish(bkm_db_t *db, int64_t sweep_id, const char *status, bkm_err_t *err);

/** A list of owned strings. */
typedef struct bkm_db_strv {
    char **v;
    size_t n;
} bkm_db_strv_t;
void bkm_db_strv_free(bkm_db_strv_t *s);
/** Canonical config keys of every stored trial of @p sweep_id with @p role ("search" or
 *  "confirm") and @p round, sorted. Every stored trial counts, whatever its status: a crashed
 *  configuration is not run again on resume. */
int bkm_db_sweep_done_keys(bkm_db_t *db, int64_t sweep_id, const char *role, int round,
                           bkm_db_strv_t *keys, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** A finished trial, as the tuner hands it over. Doubles that are NaN are stored as NULL. */
typedef struct bkm_db_trial {
    int64_t sweep_id;
    const char *config_json;     /**< JSON object; canonicalised to form the trial key */
    int status;                  /**< bkm_trial_status_t (bkm/common.h), a stored one */
    const char *role;            /**< "search" (NULL) or "confirm" */
    int round;                   /**< confirmation round; 0 for search */
    const char *error;           /**< error text; may be NULL */
    const char *stderr_tail;     /**< last lines of the worker's stderr; may be NULL */
    const char *exit_info;       /**< "exit 0", "signal 9", ...; may be NULL */
    const char *started_at;      /**< ISO-8601 UTC; NULL = now */
    const char *finished_at;     /**< ISO-8601 UTC; NULL = now */
    const double *samples_ms;    /**< every timed sample, in order */
    size_t n_samples;
    double median_ms, min_ms, mad_ms, ci_lo_ms, ci_hi_ms, gflops;
    const char *check_json;      /**< correctness check result, JSON; may be NULL */
    const char *binding_json;    /**< binding verification, JSON; may be NULL */
    const char *effective_json;  /**< effective settings (env the worker saw), JSON; may be NULL */
    const char *impl;            /**< implementation that ran (e.g. oneDNN impl name); may be NULL */
    const char *layers_json;     /**< per-layer times (JSON array of the worker's "layers"); may be NULL */
    const bkm_counter_t *counters;  /**< unavailable ones are stored as NULL with their reason */
    size_t n_counters;
    const char *noise_json;      /**< the worker's noise evidence (OS sources), JSON; may be NULL */
    double noise_share;          /**< its disturbed share; NaN = unknown */
    int disturbed;               /**< 1 disturbed, 0 not, -1 unknown (stored NULL) */
} bkm_db_trial_t;
/** Zero @p t and set every double to NaN (unknown). */
void bkm_db_trial_init(bkm_db_trial_t *t);
/** Store a finished trial with its samples and counters in ONE transaction. When the sweep
 *  already holds the same (role, round, configuration), nothing is written, *was_new is 0 and
 *  *trial_id is the stored trial. Either pointer may be NULL. A sample that is NaN or infinite
 *  is BKM_EINVAL naming it, before anything is written. */
int bkm_db_trial_insert(bkm_db_t *db, const bkm_db_trial_t *t, int64_t *trial_id, int *was_new,
                        bkm_err_t *err);

/** A stored trial as read back (owned strings; NaN for NULL doubles). */
typedef struct bkm_db_trial_row {
    int64_t id, sweep_id;
    char *sweep_uuid, *node, *workload, *config_json, *role, *error, *impl;
    int status, round;
    int64_t n_samples;
    double median_ms, min_ms, mad_ms, ci_lo_ms, ci_hi_ms, gflops;
    double noise_share;          /**< NaN when unknown */
    int disturbed;               /**< 1, 0, -1 unknown */
    char *noise_json;            /**< NULL when none */
    char *binding_json;          /**< the binding evidence (a program's: its argv, hash, runtime); NULL none */
    char *git_revision;          /**< the bkm revision of the sweep */
} bkm_db_trial_row_t;
typedef struct bkm_db_trial_list {
    bkm_db_trial_row_t *rows;
    size_t n;
} bkm_db_trial_list_t;
/** Which trials to read; zero/NULL fields match everything. */
typedef struct bkm_db_filter {
    int64_t sweep_id;
    const char *node;
    const char *workload;
} bkm_db_filter_t;
/** Trials matching @p f (NULL = all), ordered by id. Free with bkm_db_trial_list_free. */
int bkm_db_trials_query(bkm_db_t *db, const bkm_db_filter_t *f, bkm_db_trial_list_t *out,
                        bkm_err_t *err);
void bkm_db_trial_list_free(bkm_db_trial_list_t *l);
/** The samples of a trial in order; *ms is freed with bkm_free. */
int bkm_db_trial_samples(bkm_db_t *db, int64_t trial_id, double **ms, size_t *n, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Best-known setting of a (node, workload), with its evidence. */
typedef struct bkm_db_best {
    const char *node;
    const char *workload;
    int64_t sweep_id;
    const char *config_json;          /**< JSON object */
    double median_ms, ci_lo_ms, ci_hi_ms;
    double default_median_ms;         /**< the default setting's median; NaN if unknown */
    double speedup;                   /**< default median / best median */
    int significant;                  /**< beat the default beyond the noise (tuner.h rule) */
    const char *decision;             /**< "claimed", "not-better", "undecided" (the sequential
                                           confirmation, schema 7); NULL: not recorded (older rows) */
    double speedup_rci_lo, speedup_rci_hi; /**< the claim's repeated confidence interval; NaN if none */
    double not_better_than;           /**< no candidate tested is better than the default by more than
                                           this ratio (largest upper end of their repeated intervals);
                                           NaN if unknown */
    int64_t confirm_processes;        /**< processes the confirmation ran; -1 unknown */
    int64_t looks;                    /**< looks of the sequential confirmation; -1 unknown */
    const char *evidence_json;        /**< p-value, sample counts, ratio CI, ...; may be NULL */
    const char *created_at;           /**< read back only */
    const char *sweep_uuid;           /**< read back only */
    const char *hostname;             /**< read back only: the host the sweep ran on, or NULL */
    const char *git_revision;         /**< read back only: the bkm revision of the sweep, or NULL */
} bkm_db_best_t;
/** Store a new best-known setting (history is kept; the newest one counts). */
int bkm_db_best_store(bkm_db_t *db, const bkm_db_best_t *best, bkm_err_t *err);
/** Read the newest best-known setting for (node, workload). *found is 0 when none is stored
 *  (then @p best is zeroed). Free the strings with bkm_db_best_clear. */
int bkm_db_best_get(bkm_db_t *db, const char *node, const char *workload, bkm_db_best_t *best,
                    int *found, bkm_err_t *err);
void bkm_db_best_clear(bkm_db_best_t *best);

/** One counter over the processes (ok trials) of one configuration of a sweep: how many counted
 *  it (and agreed with the OS), found it unavailable, or were contradicted by the OS; the median
 *  of the counted values only. */
typedef struct bkm_db_counter_summary {
    char name[64];
    char domain[16];      /**< counting domain of the first process that recorded one; "" unknown */
    int counted, unavailable, disagrees;
    double median;        /**< of the counted values; NaN when none */
    char reason[200];     /**< the first unavailable or disagreement reason; "" when none */
} bkm_db_counter_summary_t;
/** The counters of the ok trials of sweep @p sweep_id whose configuration is @p config_json
 *  (canonical JSON, as in bkm_db_best_t), one summary per event, by name. *out (free with
 *  bkm_free) is NULL and *n 0 when there are none. @return BKM_OK, or a database error. */
int bkm_db_config_counters(bkm_db_t *db, int64_t sweep_id, const char *config_json, bkm_db_counter_summary_t **out,
                           size_t *n, bkm_err_t *err);
/** The stored binding evidence (JSON text, bkm_free) of the newest ok trial of configuration
 *  @p config_json in sweep @p sweep_id; *binding_json NULL when none. A program's trials carry
 *  the program and the runtime it loaded there. @return BKM_OK or a database error. */
int bkm_db_config_binding(bkm_db_t *db, int64_t sweep_id, const char *config_json, char **binding_json,
                          bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Check that @p path is a bkm database of the current schema without modifying it (header,
 *  marker, quick_check). Same codes as bkm_db_open; a missing file is BKM_EIO. */
int bkm_db_validate(const char *path, bkm_err_t *err);
/** *same = 1 when @p a and @p b name the same file (device and inode: a symlink, a hard link,
 *  `./x/../a.sqlite`); 0 when they differ or either does not exist. */
void bkm_db_same_file(const char *a, const char *b, int *same);

/** What a merge copied. */
typedef struct bkm_db_merge_stats {
    int64_t sweeps_new, sweeps_known;   /**< sweeps created / already present (by uuid) */
    int64_t trials_new, trials_known;   /**< trials copied / already present */
    int64_t samples, counters, best;    /**< rows copied */
} bkm_db_merge_stats_t;
/** Bounds on reading one source database in a merge. */
typedef struct bkm_db_merge_limits {
    double time_s;       /**< the whole merge of one source, checks included (default 600 s) */
    int64_t max_rows;    /**< rows of any one table (default 100 000 000) */
    int64_t max_text;    /**< bytes of any one text value (default 16 MiB) */
} bkm_db_merge_limits_t;
/** The defaults above. */
void bkm_db_merge_limits_default(bkm_db_merge_limits_t *lim);

/** Merge the bkm database @p in_path into @p db in one transaction: hosts, sweeps, trials,
 *  samples, counters and best-known settings get new ids; each sweep keeps its uuid and records
 *  the source file. Idempotent: sweeps are matched by uuid and trials by (role, round, config),
 *  so merging the same input twice copies nothing the second time. @p st may be NULL (counts are
 *  added to it otherwise). The input is validated first (bkm_db_validate) and read as
 *  bkm_db_open reads with BKM_DB_READONLY: it stays byte-identical, and a leftover -wal is read,
 *  never checkpointed into it. BKM_EINVAL naming both paths when @p in_path is @p db's file.
 *
 *  A source is data bkm did not necessarily write (a colleague's file, a shard from a shared
 *  node): before anything is copied, inside the transaction, it must be bkm's schema of its
 *  version exactly (the migrations up to it, run in memory, are the reference): plain tables with
 *  bkm's columns, types, collations and indexes, and nothing else (no view, no trigger: their SQL
 *  would run when read; SQLite's statistics tables are allowed); every table within the row
 *  limit and every value of its declared type (text never a blob, numbers finite, NOT NULL where
 *  bkm's schema says so, text within the size limit and without a NUL byte); and every row one the
 *  store would write (the checks of bkm_db_sweep_open, bkm_db_trial_insert and
 *  bkm_db_best_store; a trial's config_key its configuration's canonical form). A source that
 *  fails is refused with BKM_ECORRUPT naming the table, the row and the reason (BKM_ENOTSUP for a
 *  schema version this tune does not merge); everything runs under bkm_db_merge_limits_default()'s
 *  time limit (a progress handler: BKM_EIO "time limit"). A refusal rolls back: @p db is
 *  untouched and unlocked. */
int bkm_db_merge(bkm_db_t *db, const char *in_path, bkm_db_merge_stats_t *st, bkm_err_t *err);
/** bkm_db_merge with the bounds @p lim (NULL: the defaults). */
int bkm_db_merge_limited(bkm_db_t *db, const char *in_path, const bkm_db_merge_limits_t *lim,
                         bkm_db_merge_stats_t *st, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Everything `tune report` shows, as one JSON object appended to @p out, for the trials
 *  matching @p f (NULL = all; with a sweep id, that sweep only):
 *  {"schema": N, "sweeps": [{id, uuid, label, node, workload, strategy, git_revision, command,
 *  started_at, finished_at, status, host: {hostname, cpu_model, fingerprint, topology}}],
 *  "trials": [{id, sweep, config, status, role, round, error, stderr_tail, exit_info, n_samples,
 *  median_ms, min_ms, mad_ms, ci95: [lo, hi], gflops, impl, binding, effective, check, layers,
 *  noise_share, disturbed (bool or null), noise (the worker's noise object or null),
 *  counters: [{name, value, unavailable}]}], "best": [{node, workload, sweep, config, median_ms,
 *  ci95, default_median_ms, speedup, significant, evidence, created_at, decision, speedup_rci,
 *  not_better_than, confirm_processes, looks}], "gates": [{id,
 *  created_at, mode, hostname, fingerprint, git_revision, reference, threshold, alpha,
 *  regressions, verdict, results}], "notes": [text]}. Stored JSON texts (config, topology,
 *  binding, ...) are embedded as JSON when they parse, else as strings; one that parses but would
 *  nest deeper than BKM_JSON_MAX_DEPTH there is null, and "notes" says which and why (one row
 *  never makes the whole document unreadable); null for unknown numbers. Works read-only
 *  on schema BKM_DB_SCHEMA_READ_MIN and later (older schemas have no noise evidence, layers or
 *  gates: null / empty). */
int bkm_db_report_json(bkm_db_t *db, const bkm_db_filter_t *f, bkm_buf_t *out, bkm_err_t *err);

/** One run of the regression gate, as stored for the report's history. */
typedef struct bkm_db_gate_run {
    const char *mode;          /**< "baseline" (against a recorded file) or "ab" (against a build) */
    const char *hostname, *fingerprint, *git_revision;
    const char *reference;     /**< the baseline file or the reference build */
    double threshold, alpha;
    int regressions;           /**< workloads found slower */
    const char *verdict;       /**< "pass", "regression" */
    const char *results_json;  /**< JSON array of per-workload results; required */
} bkm_db_gate_run_t;
/** Store a gate run (created now). */
int bkm_db_gate_store(bkm_db_t *db, const bkm_db_gate_run_t *g, bkm_err_t *err);

/** The totals of a stored noise object (switches, migrations, faults): a worker's "totals", or
 *  for a program trial its OpenMP team's ("totals.team") when a team was found, else all its
 *  threads' ("totals.all"). NULL when there are none. Borrowed from @p noise. */
const bkm_json_t *bkm_db_noise_totals(const bkm_json_t *noise);

/** Export formats. */
typedef enum { BKM_DB_EXPORT_CSV = 0, BKM_DB_EXPORT_JSON = 1 } bkm_db_export_fmt_t;
/** Append every trial matching @p f (NULL = all) to @p out.
 *  CSV: a header row, then one row per trial: id,sweep,node,workload,status,role,round,config,
 *  n_samples,median_ms,min_ms,mad_ms,ci_lo_ms,ci_hi_ms,gflops,impl,error,disturbed,noise_share,
 *  voluntary_switches,involuntary_switches,migrations,steal_share,counters,git_revision,runtime,
 *  program,exe_sha256,binding (config and binding as JSON text; RFC 4180
 *  quoting; a text cell a spreadsheet would take for a formula (beginning with =, +, -, @, a tab
 *  or a carriage return: OWASP's rule) gets a single quote before it, in a quoted cell; empty
 *  cell for unknown numbers; switches to steal from the noise evidence (bkm_db_noise_totals);
 *  runtime, program (argv joined by blanks) and exe_sha256 from a program trial's binding).
 *  JSON: a list of objects {id, sweep, node, workload, status, role, round, config (object),
 *  n_samples, median_ms, min_ms, mad_ms, ci95: [lo, hi], gflops, impl, error, disturbed,
 *  noise_share, noise (the worker's noise object), git_revision, binding}; null for unknown. Stored JSON (config, noise)
 *  is parsed and written again, never spliced in: one that does not parse or nests too deep is
 *  null, and the row then has "notes": [text] saying why. */
int bkm_db_export(bkm_db_t *db, const bkm_db_filter_t *f, bkm_db_export_fmt_t fmt, bkm_buf_t *out,
                  bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_RESULTS_H */
