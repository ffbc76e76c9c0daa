/* SPDX-License-Identifier: MIT */
/* Internals shared by the results/ sources: the connection handle and SQLite helpers. */
#ifndef BKM_RESULTS_INT_H
#define BKM_RESULTS_INT_H

#include <sqlite3.h>

#include "bkm/results.h"

struct bkm_db {
    sqlite3 *h;
    char *path;
    int readonly;
    int lock_fd;        /* read-only open of a database without a -wal: the shared read lock */
    char warning[512];  /* bkm_db_warning(); "" when none */
};

/* The URI for reading @p path read-only: "file:PATH?mode=ro" when a -wal holds commits or a
 * writer has the database open (a -wal beside a -shm), else "file:PATH?immutable=1" with
 * *lock_fd holding SQLite's shared read lock (close it after the connection). *lock_fd is -1
 * when no lock is held. */
int bkm__db_ro_uri(const char *path, bkm_buf_t *uri, int *lock_fd, bkm_err_t *err);
/* Hint for a read-only database that failed to open: its -wal needs a -shm that cannot be
 * created. Appends to @p err's message when that is the case. */
void bkm__db_ro_hint(const char *path, bkm_err_t *err);
/* BKM_ENOTSUP naming the file system when @p path is on one shared between hosts (a warning
 * instead with @p shared_ok); a warning in @p warning (may be NULL) for FUSE/9p/virtiofs. */
int bkm__db_fs_check(const char *path, int shared_ok, char *warning, size_t n, bkm_err_t *err);
/* SQLite's shared read lock on @p path through a new descriptor (*fd, -1 when none). */
int bkm__db_shared_lock(const char *path, int *fd, bkm_err_t *err);

/* Counters stored before schema 6 were counted in PAPI's default domain, user only: the
 * kernel-side events among them (context switches, migrations) read 0 there by construction.
 * Migration 6 and a merge of an older source fix such rows up (BKM__DB_COUNTER_LEGACY_FIX, from
 * trial id @p first_trial on: a literal, or "%lld" for a format); a database read as it is is
 * read through BKM__DB_COUNTER_COLS_LEGACY, which presents them the same way. */
#define BKM__DB_KERNEL_SIDE_NAMES                                                                    \
    "('perf::CONTEXT-SWITCHES', 'perf::CS', 'perf::PERF_COUNT_SW_CONTEXT_SWITCHES', "                  \
    "'perf::CPU-MIGRATIONS', 'perf::MIGRATIONS', 'perf::PERF_COUNT_SW_CPU_MIGRATIONS', "               \
    "'perf::CGROUP-SWITCHES', 'perf::PERF_COUNT_SW_CGROUP_SWITCHES')"
#define BKM__DB_LEGACY_REASON                                                                        \
    "'counted in the user domain only (bkm before schema 6), where this kernel-side event reads 0 "   \
    "by construction'"
#define BKM__DB_COUNTER_LEGACY_FIX(first_trial)                                                      \
    "UPDATE main.counter SET value = NULL, unavailable = " BKM__DB_LEGACY_REASON " WHERE trial_id >= " \
    first_trial " AND unavailable IS NULL AND domain IS NULL AND name IN " BKM__DB_KERNEL_SIDE_NAMES ";" \
    "UPDATE main.counter SET domain = 'user' WHERE trial_id >= " first_trial                          \
    " AND unavailable IS NULL AND domain IS NULL;"
/* The select list name, value, unavailable, domain, os_value, os_source, disagrees of the counter
 * table (columns prefixed with @p p, e.g. "c."), for the current schema and for an older one. */
#define BKM__DB_COUNTER_COLS(p)                                                                      \
    p "name, " p "value, " p "unavailable, " p "domain, " p "os_value, " p "os_source, " p "disagrees"
#define BKM__DB_COUNTER_COLS_LEGACY(p)                                                               \
    p "name, CASE WHEN " p "unavailable IS NULL AND " p "name IN " BKM__DB_KERNEL_SIDE_NAMES           \
    " THEN NULL ELSE " p "value END, CASE WHEN " p "unavailable IS NULL AND " p "name IN "             \
    BKM__DB_KERNEL_SIDE_NAMES " THEN " BKM__DB_LEGACY_REASON " ELSE " p "unavailable END, "            \
    "CASE WHEN " p "unavailable IS NULL THEN 'user' END, NULL, NULL, NULL"

/* Write the counter row at @p st (columns as BKM__DB_COUNTER_COLS) as {name, state: "counted" |
 * "unavailable" | "disagrees", value (null unless counted), domain, papi_value (disagreeing
 * only), os_value, os_source, reason}. */
void bkm__db_counter_json(sqlite3_stmt *st, bkm_json_w_t *w);

/* A new in-memory database holding bkm's schema of @p version, built by running the migrations
 * up to it: what a database of that version must look like (the merge compares a source with
 * it). Close *mem with sqlite3_close. */
int bkm__db_schema_reference(int version, sqlite3 **mem, bkm_err_t *err);

/* The checks a row passes when bkm stores it, shared by the store and the merge (which applies
 * them to every row of a source database). BKM_EINVAL with the reason. */
/* A trial: @p status a stored status name, @p role "search" or "confirm", @p round and
 * @p n_samples >= 0, @p config_json a JSON object; *key (may be NULL; bkm_free) its canonical form. */
int bkm__db_trial_check(const char *config_json, const char *status, const char *role, int64_t round,
                        int64_t n_samples, char **key, bkm_err_t *err);
/* A best-known setting's decision: NULL, "claimed", "not-better" or "undecided"; else BKM_EINVAL. */
int bkm__db_best_decision_check(const char *decision, bkm_err_t *err);
/* A best-known setting: node and workload named (one line each), a finite median, @p config_json a JSON object;
 * *canon (may be NULL; bkm_free) its canonical form. */
int bkm__db_best_check(const char *node, const char *workload, double median_ms, const char *config_json,
                       char **canon, bkm_err_t *err);
/* A value of one line: no control character (NULL passes). */
int bkm__db_one_line(const char *what, const char *s, bkm_err_t *err);
/* A host: a hostname; hostname, CPU model and fingerprint one line each. */
int bkm__db_host_check(const char *hostname, const char *cpu_model, const char *fingerprint, bkm_err_t *err);
/* A sweep: key, node and workload named (and @p uuid, when not NULL, not empty); those, the
 * strategy and the git revision one line each. */
int bkm__db_sweep_check(const char *key, const char *node, const char *workload, const char *uuid,
                        const char *strategy, const char *git_revision, bkm_err_t *err);

/* The checks of a merge's source, attached as "src" to @p db (bkm_db_merge says which). */
int bkm__db_merge_check(bkm_db_t *db, const bkm_db_merge_limits_t *lim, bkm_err_t *err);

/* Map an SQLite result code to a bkm status and message naming the database and @p what. */
int bkm__db_err(bkm_db_t *db, int rc, const char *what, bkm_err_t *err);
/* Run SQL without results. */
int bkm__db_exec(bkm_db_t *db, const char *sql, bkm_err_t *err);
int bkm__db_prepare(bkm_db_t *db, const char *sql, sqlite3_stmt **st, bkm_err_t *err);
/* 1 when table @p table of schema @p schema ("main", "src") has column @p col: a database read
 * as it is (older schema, read-only) may lack a later migration's columns. 0 otherwise. */
int bkm__db_has_column(bkm_db_t *db, const char *schema, const char *table, const char *col);
/* BEGIN IMMEDIATE, retried on SQLITE_BUSY until BKM_DB_BUSY_TIMEOUT_MS has passed. */
int bkm__db_begin(bkm_db_t *db, bkm_err_t *err);
int bkm__db_commit(bkm_db_t *db, bkm_err_t *err);
/* Roll back the open transaction, if any; keeps the first error already in @p err. */
void bkm__db_rollback(bkm_db_t *db);
/* Bind NULL for a NULL string / a NaN double. */
int bkm__bind_text(sqlite3_stmt *st, int i, const char *s);
int bkm__bind_double(sqlite3_stmt *st, int i, double v);
/* Column as an owned string (NULL for SQL NULL; *oom set when allocation failed). */
char *bkm__col_strdup(sqlite3_stmt *st, int i, int *oom);
/* Column as a double, NaN for SQL NULL. */
double bkm__col_double(sqlite3_stmt *st, int i);

#endif /* BKM_RESULTS_INT_H */
