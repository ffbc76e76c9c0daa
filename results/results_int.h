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
};

/* Map an SQLite result code to a bkm status and message naming the database and @p what. */
int bkm__db_err(bkm_db_t *db, int rc, const char *what, bkm_err_t *err);
/* Run SQL without results. */
int bkm__db_exec(bkm_db_t *db, const char *sql, bkm_err_t *err);
int bkm__db_prepare(bkm_db_t *db, const char *sql, sqlite3_stmt **st, bkm_err_t *err);
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
