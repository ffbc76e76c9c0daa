/* SPDX-License-Identifier: MIT */
/* What a source database must be before `tune merge` copies anything from it: bkm's schema of
 * its version, exactly (plain tables, bkm's columns and indexes; no view, no trigger: a view's
 * query runs when it is read, and one can be endless), within the row and text limits, and every
 * row one that bkm would have stored (the store's own checks). The reference schema is built by
 * running the migrations up to the source's version, so a new migration needs nothing here. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results_int.h"

/* A table's shape as lines of text, the same for two tables exactly when their columns (name,
 * declared type, NOT NULL, primary key, hidden, collation), kind (plain, WITHOUT ROWID, STRICT)
 * and indexes (name, unique, origin, partial, key columns) are. Defaults and CHECK constraints
 * only act when a row is written, which a merge never does to its source; the rows are checked
 * instead. */
static int describe_table(sqlite3 *h, const char *schema, const char *table, bkm_buf_t *out, int *exists,
                          bkm_err_t *err)
{
    sqlite3_stmt *st = NULL, *ix = NULL;
    int rc, ret = BKM_OK;
    *exists = 0;
    if (sqlite3_prepare_v2(h, "SELECT type, wr, strict FROM pragma_table_list WHERE schema = ?1 AND name = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        goto sqlerr;
    bkm__bind_text(st, 1, schema);
    bkm__bind_text(st, 2, table);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *exists = 1;
        bkm_buf_printf(out, "table %s: %s%s%s\n", table, (const char *)sqlite3_column_text(st, 0),
                       sqlite3_column_int(st, 1) ? ", without rowid" : "", sqlite3_column_int(st, 2) ? ", strict" : "");
    } else if (rc != SQLITE_DONE) {
        goto sqlerr;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (!*exists)
        return BKM_OK;
    if (sqlite3_prepare_v2(h, "SELECT cid, name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?1, ?2) ORDER BY cid",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlerr;
    bkm__bind_text(st, 1, table);
    bkm__bind_text(st, 2, schema);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1), *coll = NULL;
        if (name == NULL ||
            sqlite3_table_column_metadata(h, schema, table, name, NULL, &coll, NULL, NULL, NULL) != SQLITE_OK)
            coll = "?";
        bkm_buf_printf(out, "column %d: %s %s%s%s%s, collation %s\n", sqlite3_column_int(st, 0), name ? name : "",
                       sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "",
                       sqlite3_column_int(st, 3) ? " NOT NULL" : "", sqlite3_column_int(st, 4) ? " PRIMARY KEY" : "",
                       sqlite3_column_int(st, 5) ? " (hidden)" : "", coll ? coll : "BINARY");
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(h, "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1, ?2) ORDER BY name", -1,
                           &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h, "SELECT name, \"desc\", coll, key, cid FROM pragma_index_xinfo(?1, ?2) ORDER BY seqno", -1,
                           &ix, NULL) != SQLITE_OK)
        goto sqlerr;
    bkm__bind_text(st, 1, table);
    bkm__bind_text(st, 2, schema);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *iname = (const char *)sqlite3_column_text(st, 0);
        int first = 1;
        bkm_buf_printf(out, "index %s: %s, origin %s%s:", iname ? iname : "", sqlite3_column_int(st, 1) ? "unique" : "not unique",
                       sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "",
                       sqlite3_column_int(st, 3) ? ", partial" : "");
        sqlite3_reset(ix);
        bkm__bind_text(ix, 1, iname);
        bkm__bind_text(ix, 2, schema);
        while ((rc = sqlite3_step(ix)) == SQLITE_ROW) {
            if (!sqlite3_column_int(ix, 3))
                continue;   /* the rowid the index carries */
            bkm_buf_printf(out, "%s %s%s %s", first ? "" : ",",
                           sqlite3_column_int(ix, 4) == -2 ? "(an expression)"
                           : sqlite3_column_text(ix, 0)    ? (const char *)sqlite3_column_text(ix, 0)
                                                           : "",
                           sqlite3_column_int(ix, 1) ? " DESC" : "",
                           sqlite3_column_text(ix, 2) ? (const char *)sqlite3_column_text(ix, 2) : "");
            first = 0;
        }
        if (rc != SQLITE_DONE)
            goto sqlerr;
        bkm_buf_puts(out, "\n");
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    goto out;
sqlerr:
    ret = bkm_err_set(err, (sqlite3_errcode(h) & 0xff) == SQLITE_INTERRUPT ? BKM_EIO : BKM_ECORRUPT,
                      "reading the %s schema of table %s: %s", schema, table, sqlite3_errmsg(h));
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ix);
    return ret;
}

/* The first line where @p got and @p want differ, for the message. */
static void first_difference(const char *got, const char *want, char *g, char *w, size_t n)
{
    while (*got || *want) {
        size_t lg = strcspn(got, "\n"), lw = strcspn(want, "\n");
        if (lg != lw || strncmp(got, want, lg) != 0) {
            snprintf(g, n, "%.*s", (int)lg, got);
            snprintf(w, n, "%.*s", (int)lw, want);
            if (!*g)
                snprintf(g, n, "nothing");
            if (!*w)
                snprintf(w, n, "nothing");
            return;
        }
        got += lg + (got[lg] == '\n');
        want += lw + (want[lw] == '\n');
    }
    snprintf(g, n, "?");
    snprintf(w, n, "?");
}

/* 1 when @p name is a table of @p ref's schema. */
static int ref_has_table(sqlite3 *ref, const char *name)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(ref, "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        bkm__bind_text(st, 1, name);
        has = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return has;
}

/* Every object of the source: a table or an index of bkm's schema, or SQLite's statistics. */
static int check_objects(bkm_db_t *db, sqlite3 *ref, int version, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret = BKM_OK, rc;
    if ((ret = bkm__db_prepare(db, "SELECT type, name, tbl_name FROM src.sqlite_schema ORDER BY rowid", &st, err)) < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0), *name = (const char *)sqlite3_column_text(st, 1);
        const char *tbl = (const char *)sqlite3_column_text(st, 2);
        type = type ? type : "";
        name = name ? name : "";
        tbl = tbl ? tbl : "";
        if (strcmp(type, "view") == 0 || strcmp(type, "trigger") == 0) {
            ret = bkm_err_set(err, BKM_ECORRUPT, "it holds a %s '%.100s', which no bkm database has (its SQL would run "
                              "when the database is read)", type, name);
            break;
        }
        if (strcmp(type, "table") == 0 && !ref_has_table(ref, name) && strcmp(name, "sqlite_stat1") != 0 &&
            strcmp(name, "sqlite_stat4") != 0) {
            ret = bkm_err_set(err, BKM_ECORRUPT, "it holds a table '%.100s', which bkm's schema version %d has not",
                              name, version);
            break;
        }
        if (strcmp(type, "index") == 0 && !ref_has_table(ref, tbl)) {
            ret = bkm_err_set(err, BKM_ECORRUPT, "it holds an index '%.100s' on '%.100s', which bkm's schema version "
                              "%d has not", name, tbl, version);
            break;
        }
        if (strcmp(type, "table") && strcmp(type, "index")) {
            ret = bkm_err_set(err, BKM_ECORRUPT, "it holds a %.40s '%.100s', which no bkm database has", type, name);
            break;
        }
    }
    if (ret == BKM_OK && rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read the source's schema", err);
    sqlite3_finalize(st);
    return ret;
}

/* The table's rows in the limits: at most lim->max_rows, each column of the declared type (a
 * TEXT column holds text, never a blob; a REAL one a finite number), NOT NULL where bkm's schema
 * says so, every text at most lim->max_text bytes and without a NUL byte. */
static int check_cells(bkm_db_t *db, sqlite3 *ref, const char *table, const bkm_db_merge_limits_t *lim, bkm_err_t *err)
{
    sqlite3_stmt *cols = NULL, *st = NULL;
    bkm_buf_t id, sql;
    int ret = BKM_OK, rc, has_id = 0;
    bkm_buf_init(&id);
    bkm_buf_init(&sql);
    if (sqlite3_prepare_v2(ref, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid", -1, &cols,
                           NULL) != SQLITE_OK) {
        ret = bkm_err_set(err, BKM_EDEP, "bkm's schema of table %s: %s", table, sqlite3_errmsg(ref));
        goto out;
    }
    bkm__bind_text(cols, 1, table);
    /* how a row is named in messages: its id, else its primary key */
    while ((rc = sqlite3_step(cols)) == SQLITE_ROW)
        has_id |= strcmp((const char *)sqlite3_column_text(cols, 0), "id") == 0;
    sqlite3_reset(cols);
    if (has_id)
        bkm_buf_puts(&id, "'id ' || quote(id)");
    else
        while ((rc = sqlite3_step(cols)) == SQLITE_ROW)
            if (sqlite3_column_int(cols, 3))
                bkm_buf_printf(&id, "%s'%s ' || quote(\"%s\")", id.len ? " || ', ' || " : "",
                               (const char *)sqlite3_column_text(cols, 0), (const char *)sqlite3_column_text(cols, 0));
    if (id.len == 0)
        bkm_buf_puts(&id, "'rowid ' || rowid");
    sqlite3_reset(cols);
    bkm_buf_printf(&sql, "SELECT count(*) FROM src.\"%s\"", table);
    if ((ret = bkm__db_prepare(db, bkm_buf_str(&sql), &st, err)) < 0)
        goto out;
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        ret = bkm__db_err(db, rc, "count the source's rows", err);
        goto out;
    }
    if (sqlite3_column_int64(st, 0) > lim->max_rows) {
        ret = bkm_err_set(err, BKM_ECORRUPT, "table %s has %lld rows, more than the limit of %lld", table,
                          (long long)sqlite3_column_int64(st, 0), (long long)lim->max_rows);
        goto out;
    }
    sqlite3_finalize(st);
    st = NULL;
    while ((rc = sqlite3_step(cols)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(cols, 0), *type = (const char *)sqlite3_column_text(cols, 1);
        int notnull = sqlite3_column_int(cols, 2);
        const char *types = strcmp(type, "TEXT") == 0 ? "'text'" : strcmp(type, "INTEGER") == 0 ? "'integer'"
                            : strcmp(type, "REAL") == 0 ? "'real', 'integer'" : "'text', 'integer', 'real'";
        bkm_buf_free(&sql);
        bkm_buf_printf(&sql,
                       "SELECT %s, typeof(\"%s\"), length(CAST(\"%s\" AS BLOB)) FROM src.\"%s\" WHERE NOT ("
                       "typeof(\"%s\") IN (%s%s) AND (typeof(\"%s\") <> 'real' OR abs(\"%s\") <= 1.7976931348623157e308) "
                       "AND (typeof(\"%s\") <> 'text' OR (length(CAST(\"%s\" AS BLOB)) <= ?1 AND "
                       "instr(CAST(\"%s\" AS BLOB), x'00') = 0))) LIMIT 1",
                       bkm_buf_str(&id), c, c, table, c, types, notnull ? "" : ", 'null'", c, c, c, c, c);
        if ((ret = bkm__db_prepare(db, bkm_buf_str(&sql), &st, err)) < 0)
            goto out;
        sqlite3_bind_int64(st, 1, lim->max_text);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *row = (const char *)sqlite3_column_text(st, 0), *got = (const char *)sqlite3_column_text(st, 1);
            long long len = sqlite3_column_int64(st, 2);
            got = got ? got : "?";
            if (strcmp(got, "null") == 0)
                ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, %.100s: %s is NULL", table, row ? row : "?", c);
            else if (strcmp(got, "real") == 0 && strstr(types, "real"))
                ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, %.100s: %s is not a finite number", table,
                                  row ? row : "?", c);
            else if (strcmp(got, "text") == 0 && strstr(types, "text") && len > lim->max_text)
                ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, %.100s: %s is %lld bytes, more than the limit of %lld",
                                  table, row ? row : "?", c, len, (long long)lim->max_text);
            else if (strcmp(got, "text") == 0 && strstr(types, "text"))
                ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, %.100s: %s holds a NUL byte", table, row ? row : "?", c);
            else
                ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, %.100s: %s is %s, not %s", table, row ? row : "?", c,
                                  got, type);
            goto out;
        }
        if (rc != SQLITE_DONE) {
            ret = bkm__db_err(db, rc, "read the source's rows", err);
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (rc != SQLITE_DONE)
        ret = bkm_err_set(err, BKM_EDEP, "bkm's schema of table %s: %s", table, sqlite3_errmsg(ref));
out:
    sqlite3_finalize(cols);
    sqlite3_finalize(st);
    bkm_buf_free(&id);
    bkm_buf_free(&sql);
    return ret;
}

/* One query over the source whose rows are the offenders: refused naming the first (column 0 is
 * its id, column 1 the offending value). */
static int check_none(bkm_db_t *db, const char *sql, const char *table, const char *reason, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    if ((ret = bkm__db_prepare(db, sql, &st, err)) < 0)
        return ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, id %lld: %s ('%.100s')", table,
                          (long long)sqlite3_column_int64(st, 0), reason,
                          sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "NULL");
    else if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read the source's rows", err);
    sqlite3_finalize(st);
    return ret;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Every row through the checks the store applies when bkm writes it (bkm__db_*_check). */
static int check_rows(bkm_db_t *db, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    bkm_err_t why = {0};
    int ret = BKM_OK, rc;
    char *key = NULL;
    const char *table = "host";
    int64_t id = 0;
    /* hosts */
    table = "host";
    if ((ret = bkm__db_prepare(db, "SELECT id, hostname, cpu_model, fingerprint, first_seen FROM src.host ORDER BY id",
                               &st, err)) < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        if (bkm__db_host_check(col_text(st, 1), col_text(st, 2), col_text(st, 3), &why) < 0 ||
            bkm__db_one_line("first_seen", col_text(st, 4), &why) < 0)
            goto refuse;
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    /* sweeps */
    table = "sweep";
    if ((ret = bkm__db_prepare(db, "SELECT id, key, node, workload, uuid, status, strategy, git_revision, started_at, "
                               "finished_at FROM src.sweep ORDER BY id", &st, err)) < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *status = col_text(st, 5);
        id = sqlite3_column_int64(st, 0);
        if (bkm__db_sweep_check(col_text(st, 1), col_text(st, 2), col_text(st, 3), col_text(st, 4) ? col_text(st, 4) : "",
                                col_text(st, 6), col_text(st, 7), &why) < 0 ||
            bkm__db_one_line("started_at", col_text(st, 8), &why) < 0 ||
            bkm__db_one_line("finished_at", col_text(st, 9), &why) < 0)
            goto refuse;
        if (status == NULL || (strcmp(status, "running") && strcmp(status, "done") && strcmp(status, "partial") &&
                               strcmp(status, "interrupted") && strcmp(status, "failed"))) {
            bkm_err_set(&why, BKM_EINVAL, "sweep status '%.64s' is not running, done, partial, interrupted or failed",
                        status ? status : "NULL");
            goto refuse;
        }
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    /* trials: the configuration is a JSON object whose canonical form is the stored key */
    table = "trial";
    if ((ret = bkm__db_prepare(db, "SELECT id, config_json, config_key, status, role, round, n_samples FROM src.trial "
                               "ORDER BY id", &st, err)) < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        if (bkm__db_trial_check(col_text(st, 1), col_text(st, 3), col_text(st, 4), sqlite3_column_int64(st, 5),
                                sqlite3_column_int64(st, 6), &key, &why) < 0)
            goto refuse;
        if (col_text(st, 2) == NULL || strcmp(key, col_text(st, 2)) != 0) {
            bkm_err_set(&why, BKM_EINVAL, "config_key '%.100s' is not its configuration's canonical form '%.100s'",
                        col_text(st, 2) ? col_text(st, 2) : "NULL", key);
            goto refuse;
        }
        bkm_free(key);
        key = NULL;
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    st = NULL;
    if (bkm__db_has_column(db, "src", "trial", "disturbed") &&
        (ret = check_none(db, "SELECT id, disturbed FROM src.trial WHERE disturbed IS NOT NULL AND disturbed NOT IN (0, 1)",
                          "trial", "disturbed is not 0, 1 or NULL", err)) < 0)
        return ret;
    /* samples and counters */
    if ((ret = check_none(db, "SELECT trial_id, idx FROM src.sample WHERE idx < 0", "sample", "negative sample index",
                          err)) < 0 ||
        (ret = check_none(db, "SELECT trial_id, name FROM src.counter WHERE length(name) NOT BETWEEN 1 AND 63",
                          "counter", "a counter name is 1 to 63 bytes", err)) < 0)
        return ret;
    /* best-known settings: stored in canonical form */
    table = "best";
    if ((ret = bkm__db_prepare(db, "SELECT id, node, workload, median_ms, config_json, significant, created_at FROM "
                               "src.best ORDER BY id", &st, err)) < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        if (bkm__db_best_check(col_text(st, 1), col_text(st, 2), bkm__col_double(st, 3), col_text(st, 4), &key, &why) <
                0 ||
            bkm__db_one_line("created_at", col_text(st, 6), &why) < 0)
            goto refuse;
        if (strcmp(key, col_text(st, 4)) != 0) {
            bkm_err_set(&why, BKM_EINVAL, "config_json is not in canonical form ('%.100s')", key);
            goto refuse;
        }
        if (sqlite3_column_type(st, 5) != SQLITE_INTEGER || sqlite3_column_int64(st, 5) < 0 ||
            sqlite3_column_int64(st, 5) > 1) {
            bkm_err_set(&why, BKM_EINVAL, "significant is not 0 or 1");
            goto refuse;
        }
        bkm_free(key);
        key = NULL;
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    st = NULL;
    /* the sequential confirmation's decision (schema 7): what the store writes */
    if (bkm__db_has_column(db, "src", "best", "decision") &&
        ((ret = check_none(db, "SELECT id, decision FROM src.best WHERE decision IS NOT NULL AND decision NOT IN "
                           "('claimed', 'not-better', 'undecided')", "best",
                           "decision is not claimed, not-better, undecided or NULL", err)) < 0 ||
         (ret = check_none(db, "SELECT id, coalesce(confirm_processes, looks) FROM src.best WHERE confirm_processes < 0 "
                           "OR looks < 0", "best", "a negative count of processes or looks", err)) < 0 ||
         (ret = check_none(db, "SELECT id, decision FROM src.best WHERE decision IS NULL AND (speedup_rci_lo IS NOT NULL "
                           "OR speedup_rci_hi IS NOT NULL OR not_better_than IS NOT NULL OR confirm_processes IS NOT "
                           "NULL OR looks IS NOT NULL)", "best", "sequential figures without a decision", err)) < 0))
        return ret;
    return BKM_OK;
refuse:
    ret = bkm_err_set(err, BKM_ECORRUPT, "table %s, id %lld: %s", table, (long long)id, why.msg);
    sqlite3_finalize(st);
    bkm_free(key);
    return ret;
sqlerr:
    ret = bkm__db_err(db, rc, "read the source's rows", err);
    sqlite3_finalize(st);
    bkm_free(key);
    return ret;
}

int bkm__db_merge_check(bkm_db_t *db, const bkm_db_merge_limits_t *lim, bkm_err_t *err)
{
    sqlite3 *ref = NULL;
    sqlite3_stmt *st = NULL, *tables = NULL;
    bkm_buf_t got, want;
    int ret, rc, version = 0;
    bkm_buf_init(&got);
    bkm_buf_init(&want);
    if ((ret = bkm__db_prepare(db, "PRAGMA src.user_version", &st, err)) < 0)
        goto out;
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        ret = bkm__db_err(db, rc, "read the source's schema version", err);
        goto out;
    }
    version = sqlite3_column_int(st, 0);
    if (version < BKM_DB_SCHEMA_READ_MIN || version > BKM_DB_SCHEMA_VERSION) {
        ret = bkm_err_set(err, BKM_ENOTSUP, "its schema version %d is not one this tune merges (%d..%d)", version,
                          BKM_DB_SCHEMA_READ_MIN, BKM_DB_SCHEMA_VERSION);
        goto out;
    }
    if ((ret = bkm__db_schema_reference(version, &ref, err)) < 0 || (ret = check_objects(db, ref, version, err)) < 0)
        goto out;
    if (sqlite3_prepare_v2(ref, "SELECT name FROM main.sqlite_schema WHERE type = 'table' ORDER BY name", -1, &tables,
                           NULL) != SQLITE_OK) {
        ret = bkm_err_set(err, BKM_EDEP, "bkm's schema version %d: %s", version, sqlite3_errmsg(ref));
        goto out;
    }
    while ((rc = sqlite3_step(tables)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(tables, 0);
        int ref_exists = 0, src_exists = 0;
        bkm_buf_free(&got);
        bkm_buf_free(&want);
        if ((ret = describe_table(ref, "main", t, &want, &ref_exists, err)) < 0 ||
            (ret = describe_table(db->h, "src", t, &got, &src_exists, err)) < 0)
            goto out;
        if (!src_exists) {
            ret = bkm_err_set(err, BKM_ECORRUPT, "it has no table %s (bkm's schema version %d)", t, version);
            goto out;
        }
        if (strcmp(bkm_buf_str(&got), bkm_buf_str(&want)) != 0) {
            char g[200], w[200];
            first_difference(bkm_buf_str(&got), bkm_buf_str(&want), g, w, sizeof g);
            ret = bkm_err_set(err, BKM_ECORRUPT, "table %s is not bkm's (schema version %d): it has %s where bkm's "
                              "has %s", t, version, g, w);
            goto out;
        }
        if ((ret = check_cells(db, ref, t, lim, err)) < 0)
            goto out;
    }
    if (rc != SQLITE_DONE) {
        ret = bkm_err_set(err, BKM_EDEP, "bkm's schema version %d: %s", version, sqlite3_errmsg(ref));
        goto out;
    }
    ret = check_rows(db, err);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(tables);
    if (ref)
        sqlite3_close(ref);
    bkm_buf_free(&got);
    bkm_buf_free(&want);
    return ret;
}
