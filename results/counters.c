/* SPDX-License-Identifier: MIT */
/* Counters read back: one JSON form of a stored counter (export and the report's document), and
 * per-event summaries over the processes of one configuration of a sweep (the best-known
 * setting's own processes). The state of each event is kept apart: a value is presented or
 * summarised only where it was counted and not contradicted by the OS. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results_int.h"

static void put_text_col(bkm_json_w_t *w, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        bkm_json_null(w);
    else
        bkm_json_str(w, (const char *)sqlite3_column_text(st, col));
}

void bkm__db_counter_json(sqlite3_stmt *st, bkm_json_w_t *w)
{
    int unavailable = sqlite3_column_type(st, 2) != SQLITE_NULL, disagrees = sqlite3_column_type(st, 6) != SQLITE_NULL;
    bkm_json_obj_begin(w);
    bkm_json_key(w, "name"), put_text_col(w, st, 0);
    bkm_json_key(w, "state");
    bkm_json_str(w, unavailable ? "unavailable" : disagrees ? "disagrees" : "counted");
    bkm_json_key(w, "value");   /* a measurement only when counted */
    if (!unavailable && !disagrees)
        bkm_json_double(w, sqlite3_column_double(st, 1));
    else
        bkm_json_null(w);
    bkm_json_key(w, "domain"), put_text_col(w, st, 3);
    if (disagrees)
        bkm_json_key(w, "papi_value"), bkm_json_double(w, sqlite3_column_double(st, 1));
    bkm_json_key(w, "os_value");
    if (sqlite3_column_type(st, 4) != SQLITE_NULL)
        bkm_json_double(w, sqlite3_column_double(st, 4));
    else
        bkm_json_null(w);
    bkm_json_key(w, "os_source"), put_text_col(w, st, 5);
    bkm_json_key(w, "reason"), put_text_col(w, st, unavailable ? 2 : 6);
    bkm_json_obj_end(w);
}

static bkm_db_counter_summary_t *summary_find(bkm_db_counter_summary_t *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

/* Median of each summary's counted values: @p vals holds them in row order, @p owner the index
 * of the summary each belongs to. */
static void summary_medians(bkm_db_counter_summary_t *v, size_t n, double *vals, const size_t *owner, size_t nv,
                            double *tmp)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        for (size_t j = 0; j < nv; j++)
            if (owner[j] == i)
                tmp[k++] = vals[j];
        v[i].median = bkm_median(tmp, k);
    }
}

int bkm_db_config_counters(bkm_db_t *db, int64_t sweep_id, const char *config_json, bkm_db_counter_summary_t **out,
                           size_t *n_out, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    bkm_db_counter_summary_t *v = NULL;
    double *vals = NULL, *tmp = NULL;
    size_t *owner = NULL, n = 0, nv = 0, rows = 0;
    int ret, rc, checked = bkm__db_has_column(db, "main", "counter", "disagrees");
    *out = NULL;
    *n_out = 0;
    ret = bkm__db_prepare(db, checked ? "SELECT " BKM__DB_COUNTER_COLS("c.") " FROM counter c JOIN trial t ON "
                                        "t.id = c.trial_id WHERE t.sweep_id = ?1 AND t.config_json = ?2 AND "
                                        "t.status = 'ok' ORDER BY c.name, t.id"
                                      : "SELECT " BKM__DB_COUNTER_COLS_LEGACY("c.") " FROM counter c JOIN trial t "
                                        "ON t.id = c.trial_id WHERE t.sweep_id = ?1 AND t.config_json = ?2 AND "
                                        "t.status = 'ok' ORDER BY c.name, t.id",
                          &st, err);
    if (ret < 0)
        return ret;
    sqlite3_bind_int64(st, 1, sweep_id);
    bkm__bind_text(st, 2, config_json);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        rows++;
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "read counters", err);
        goto out;
    }
    if (rows == 0)
        goto out;
    v = bkm_calloc(rows, sizeof *v);
    vals = bkm_calloc(rows, sizeof *vals);
    tmp = bkm_calloc(rows, sizeof *tmp);
    owner = bkm_calloc(rows, sizeof *owner);
    if (v == NULL || vals == NULL || tmp == NULL || owner == NULL) {
        ret = bkm_err_set(err, BKM_ENOMEM, "out of memory for %zu counter rows", rows);
        goto out;
    }
    sqlite3_reset(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *why = NULL;
        bkm_db_counter_summary_t *s = summary_find(v, n, name ? name : "");
        if (s == NULL) {
            s = &v[n++];
            snprintf(s->name, sizeof s->name, "%s", name ? name : "");
            s->median = NAN;
        }
        if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
            s->unavailable++;
            why = (const char *)sqlite3_column_text(st, 2);
        } else if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
            s->disagrees++;
            why = (const char *)sqlite3_column_text(st, 6);
        } else {
            s->counted++;
            vals[nv] = sqlite3_column_double(st, 1);
            owner[nv++] = (size_t)(s - v);
        }
        if (why != NULL && s->reason[0] == '\0')
            snprintf(s->reason, sizeof s->reason, "%s", why);
        if (sqlite3_column_type(st, 3) != SQLITE_NULL && s->domain[0] == '\0')
            snprintf(s->domain, sizeof s->domain, "%s", (const char *)sqlite3_column_text(st, 3));
    }
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "read counters", err);
        goto out;
    }
    summary_medians(v, n, vals, owner, nv, tmp);
    *out = v;
    *n_out = n;
    v = NULL;
out:
    sqlite3_finalize(st);
    bkm_free(v);
    bkm_free(vals);
    bkm_free(tmp);
    bkm_free(owner);
    return ret;
}

int bkm_db_config_binding(bkm_db_t *db, int64_t sweep_id, const char *config_json, char **binding_json, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    *binding_json = NULL;
    ret = bkm__db_prepare(db, "SELECT binding_json FROM trial WHERE sweep_id = ?1 AND config_json = ?2 AND "
                              "status = 'ok' AND binding_json IS NOT NULL ORDER BY id DESC LIMIT 1", &st, err);
    if (ret < 0)
        return ret;
    sqlite3_bind_int64(st, 1, sweep_id);
    bkm__bind_text(st, 2, config_json);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL) {
        if ((*binding_json = bkm_strdup((const char *)sqlite3_column_text(st, 0))) == NULL)
            ret = bkm_err_set(err, BKM_ENOMEM, "out of memory reading a trial's binding");
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "read a trial's binding", err);
    }
    sqlite3_finalize(st);
    return ret;
}
