/* SPDX-License-Identifier: MIT */
/* What `tune report` shows, read in one pass as one JSON document (bkm_db_report_json), and the
 * regression gate's runs (bkm_db_gate_store). The report library renders the document; all SQL
 * stays here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results_int.h"

/* A stored JSON text as JSON when it parses, else as a string (an older or foreign writer). A
 * value that parses but would nest deeper than bkm's JSON limit where it goes is left out (null)
 * and named in @p notes (one line each: "what id: why"), so that one row never spoils the whole
 * document. */
static void put_json_text(bkm_json_w_t *w, bkm_buf_t *notes, const char *text, const char *what, int64_t id)
{
    bkm_json_t *doc = NULL;
    if (text == NULL) {
        bkm_json_null(w);
        return;
    }
    if (bkm_json_parse(text, &doc, NULL) != BKM_OK)
        bkm_json_str(w, text);
    else if (bkm_json_write_tree(w, doc) < 0)
        bkm_buf_printf(notes, "%s %lld: the stored JSON nests %d levels, deeper than the %d the report holds at "
                       "that place: left out\n", what, (long long)id, bkm_json_depth(doc),
                       BKM_JSON_MAX_DEPTH - w->depth);
    bkm_json_free(doc);
}

static void put_col_text(bkm_json_w_t *w, sqlite3_stmt *st, int i)
{
    bkm_json_str(w, sqlite3_column_type(st, i) == SQLITE_NULL ? NULL : (const char *)sqlite3_column_text(st, i));
}

static void put_col_json(bkm_json_w_t *w, bkm_buf_t *notes, sqlite3_stmt *st, int i, const char *what, int64_t id)
{
    put_json_text(w, notes, sqlite3_column_type(st, i) == SQLITE_NULL ? NULL : (const char *)sqlite3_column_text(st, i),
                  what, id);
}

static void put_col_num(bkm_json_w_t *w, sqlite3_stmt *st, int i)
{
    double v = bkm__col_double(st, i);
    if (isfinite(v))
        bkm_json_double(w, v);
    else
        bkm_json_null(w);
}

/* The WHERE clause every query shares: sweep id (?1, 0 = any), node (?2), workload (?3). */
#define REPORT_WHERE "(?1 = 0 OR s.id = ?1) AND (?2 IS NULL OR s.node = ?2) AND (?3 IS NULL OR s.workload = ?3)"

static void bind_filter(sqlite3_stmt *st, const bkm_db_filter_t *f)
{
    sqlite3_bind_int64(st, 1, f ? f->sweep_id : 0);
    bkm__bind_text(st, 2, f ? f->node : NULL);
    bkm__bind_text(st, 3, f ? f->workload : NULL);
}

static int report_sweeps(bkm_db_t *db, const bkm_db_filter_t *f, bkm_json_w_t *w, bkm_buf_t *notes, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    ret = bkm__db_prepare(db,
                          "SELECT s.id, s.uuid, s.label, s.node, s.workload, s.strategy, s.git_revision, s.command, "
                          "s.started_at, s.finished_at, s.status, h.hostname, h.cpu_model, h.fingerprint, "
                          "h.topology_json FROM sweep s LEFT JOIN host h ON h.id = s.host_id WHERE " REPORT_WHERE
                          " ORDER BY s.id",
                          &st, err);
    if (ret < 0)
        return ret;
    bind_filter(st, f);
    bkm_json_key(w, "sweeps");
    bkm_json_arr_begin(w);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        static const char *const keys[] = {"uuid",    "label",      "node",        "workload", "strategy",
                                           "git_revision", "command", "started_at", "finished_at", "status"};
        bkm_json_obj_begin(w);
        bkm_json_key(w, "id"), bkm_json_int(w, sqlite3_column_int64(st, 0));
        for (int i = 0; i < 10; i++)
            bkm_json_key(w, keys[i]), put_col_text(w, st, i + 1);
        bkm_json_key(w, "host");
        bkm_json_obj_begin(w);
        bkm_json_key(w, "hostname"), put_col_text(w, st, 11);
        bkm_json_key(w, "cpu_model"), put_col_text(w, st, 12);
        bkm_json_key(w, "fingerprint"), put_col_text(w, st, 13);
        bkm_json_key(w, "topology"), put_col_json(w, notes, st, 14, "topology of the host of sweep", sqlite3_column_int64(st, 0));
        bkm_json_obj_end(w);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read sweeps", err);
    sqlite3_finalize(st);
    return ret;
}

static int report_counters(bkm_db_t *db, sqlite3_stmt *ctr, int64_t trial_id, bkm_json_w_t *w, bkm_err_t *err)
{
    int rc;
    sqlite3_reset(ctr);
    sqlite3_bind_int64(ctr, 1, trial_id);
    bkm_json_key(w, "counters");
    bkm_json_arr_begin(w);
    while ((rc = sqlite3_step(ctr)) == SQLITE_ROW)
        bkm__db_counter_json(ctr, w);
    bkm_json_arr_end(w);
    return rc == SQLITE_DONE ? BKM_OK : bkm__db_err(db, rc, "read counters", err);
}

static int report_trials(bkm_db_t *db, const bkm_db_filter_t *f, bkm_json_w_t *w, bkm_buf_t *notes, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL, *ctr = NULL;
    int ret, rc = SQLITE_DONE;
    char sql[1024];
    /* a database read as it is may predate the noise evidence (schema 4), the per-layer times
     * (schema 5) or the counters' domain and OS check (schema 6): their columns read as NULL there */
    int noise = bkm__db_has_column(db, "main", "trial", "noise_json"),
        layers = bkm__db_has_column(db, "main", "trial", "layers_json"),
        checked = bkm__db_has_column(db, "main", "counter", "disagrees");
    snprintf(sql, sizeof sql,
             "SELECT t.id, t.sweep_id, t.config_json, t.status, t.role, t.round, t.error, t.stderr_tail, "
             "t.exit_info, t.n_samples, t.median_ms, t.min_ms, t.mad_ms, t.ci_lo_ms, t.ci_hi_ms, t.gflops, "
             "t.impl, t.binding_json, t.effective_json, t.check_json, %s, %s FROM trial t JOIN "
             "sweep s ON s.id = t.sweep_id WHERE " REPORT_WHERE " ORDER BY t.id",
             layers ? "t.layers_json" : "NULL", noise ? "t.noise_share, t.disturbed, t.noise_json" : "NULL, NULL, NULL");
    if ((ret = bkm__db_prepare(db, sql, &st, err)) < 0 ||
        (ret = bkm__db_prepare(db, checked ? "SELECT " BKM__DB_COUNTER_COLS("") " FROM counter WHERE trial_id = ?1 "
                                             "ORDER BY name"
                                           : "SELECT " BKM__DB_COUNTER_COLS_LEGACY("") " FROM counter WHERE "
                                             "trial_id = ?1 ORDER BY name",
                               &ctr, err)) < 0)
        goto out;
    bind_filter(st, f);
    bkm_json_key(w, "trials");
    bkm_json_arr_begin(w);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        static const char *const texts[] = {"status", "role", NULL, "error", "stderr_tail", "exit_info"};
        bkm_json_obj_begin(w);
        bkm_json_key(w, "id"), bkm_json_int(w, sqlite3_column_int64(st, 0));
        bkm_json_key(w, "sweep"), bkm_json_int(w, sqlite3_column_int64(st, 1));
        bkm_json_key(w, "config"), put_col_json(w, notes, st, 2, "configuration of trial", sqlite3_column_int64(st, 0));
        for (int i = 0; i < 6; i++)
            if (texts[i])
                bkm_json_key(w, texts[i]), put_col_text(w, st, i + 3);
        bkm_json_key(w, "round"), bkm_json_int(w, sqlite3_column_int(st, 5));
        bkm_json_key(w, "n_samples"), bkm_json_int(w, sqlite3_column_int64(st, 9));
        bkm_json_key(w, "median_ms"), put_col_num(w, st, 10);
        bkm_json_key(w, "min_ms"), put_col_num(w, st, 11);
        bkm_json_key(w, "mad_ms"), put_col_num(w, st, 12);
        bkm_json_key(w, "ci95");
        bkm_json_arr_begin(w), put_col_num(w, st, 13), put_col_num(w, st, 14), bkm_json_arr_end(w);
        bkm_json_key(w, "gflops"), put_col_num(w, st, 15);
        bkm_json_key(w, "impl"), put_col_text(w, st, 16);
        bkm_json_key(w, "binding"), put_col_json(w, notes, st, 17, "binding of trial", sqlite3_column_int64(st, 0));
        bkm_json_key(w, "effective"), put_col_json(w, notes, st, 18, "effective of trial", sqlite3_column_int64(st, 0));
        bkm_json_key(w, "check"), put_col_json(w, notes, st, 19, "check of trial", sqlite3_column_int64(st, 0));
        bkm_json_key(w, "layers"), put_col_json(w, notes, st, 20, "layers of trial", sqlite3_column_int64(st, 0));
        bkm_json_key(w, "noise_share"), put_col_num(w, st, 21);
        bkm_json_key(w, "disturbed");
        if (sqlite3_column_type(st, 22) == SQLITE_NULL)
            bkm_json_null(w);
        else
            bkm_json_bool(w, sqlite3_column_int(st, 22) != 0);
        bkm_json_key(w, "noise"), put_col_json(w, notes, st, 23, "noise of trial", sqlite3_column_int64(st, 0));
        if ((ret = report_counters(db, ctr, sqlite3_column_int64(st, 0), w, err)) < 0)
            goto out;
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read trials", err);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(ctr);
    return ret;
}

static int report_best(bkm_db_t *db, const bkm_db_filter_t *f, bkm_json_w_t *w, bkm_buf_t *notes, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    /* the newest best-known setting of each (node, workload) the filter selects */
    ret = bkm__db_prepare(db,
                          bkm__db_has_column(db, "main", "best", "decision")
                              ? "SELECT b.node, b.workload, b.sweep_id, b.config_json, b.median_ms, b.ci_lo_ms, "
                                "b.ci_hi_ms, b.default_median_ms, b.speedup, b.significant, b.evidence_json, "
                                "b.created_at, b.decision, b.speedup_rci_lo, b.speedup_rci_hi, b.not_better_than, "
                                "b.confirm_processes, b.looks FROM best b "
                                "WHERE b.id IN (SELECT max(x.id) FROM best x GROUP BY x.node, x.workload) AND "
                                "(?2 IS NULL OR b.node = ?2) AND (?3 IS NULL OR b.workload = ?3) AND "
                                "(?1 = 0 OR b.sweep_id = ?1) ORDER BY b.node, b.workload"
                              : "SELECT b.node, b.workload, b.sweep_id, b.config_json, b.median_ms, b.ci_lo_ms, "
                                "b.ci_hi_ms, b.default_median_ms, b.speedup, b.significant, b.evidence_json, "
                                "b.created_at, NULL, NULL, NULL, NULL, NULL, NULL FROM best b "
                                "WHERE b.id IN (SELECT max(x.id) FROM best x GROUP BY x.node, x.workload) AND "
                                "(?2 IS NULL OR b.node = ?2) AND (?3 IS NULL OR b.workload = ?3) AND "
                                "(?1 = 0 OR b.sweep_id = ?1) ORDER BY b.node, b.workload",
                          &st, err);
    if (ret < 0)
        return ret;
    bind_filter(st, f);
    bkm_json_key(w, "best");
    bkm_json_arr_begin(w);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "node"), put_col_text(w, st, 0);
        bkm_json_key(w, "workload"), put_col_text(w, st, 1);
        bkm_json_key(w, "sweep"), bkm_json_int(w, sqlite3_column_int64(st, 2));
        bkm_json_key(w, "config"), put_col_json(w, notes, st, 3, "configuration of the best-known setting of sweep", sqlite3_column_int64(st, 2));
        bkm_json_key(w, "median_ms"), put_col_num(w, st, 4);
        bkm_json_key(w, "ci95");
        bkm_json_arr_begin(w), put_col_num(w, st, 5), put_col_num(w, st, 6), bkm_json_arr_end(w);
        bkm_json_key(w, "default_median_ms"), put_col_num(w, st, 7);
        bkm_json_key(w, "speedup"), put_col_num(w, st, 8);
        bkm_json_key(w, "significant"), bkm_json_bool(w, sqlite3_column_int(st, 9));
        bkm_json_key(w, "evidence"), put_col_json(w, notes, st, 10, "evidence of the best-known setting of sweep", sqlite3_column_int64(st, 2));
        bkm_json_key(w, "created_at"), put_col_text(w, st, 11);
        /* the sequential confirmation (schema 7; null before) */
        bkm_json_key(w, "decision"), put_col_text(w, st, 12);
        bkm_json_key(w, "speedup_rci");
        bkm_json_arr_begin(w), put_col_num(w, st, 13), put_col_num(w, st, 14), bkm_json_arr_end(w);
        bkm_json_key(w, "not_better_than"), put_col_num(w, st, 15);
        bkm_json_key(w, "confirm_processes"), put_col_num(w, st, 16);
        bkm_json_key(w, "looks"), put_col_num(w, st, 17);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read best-known settings", err);
    sqlite3_finalize(st);
    return ret;
}

static int report_gates(bkm_db_t *db, bkm_json_w_t *w, bkm_buf_t *notes, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    bkm_json_key(w, "gates");
    bkm_json_arr_begin(w);
    if (!bkm__db_has_column(db, "main", "gate_run", "id")) { /* no gate runs before schema 5 */
        bkm_json_arr_end(w);
        return BKM_OK;
    }
    ret = bkm__db_prepare(db,
                          "SELECT id, created_at, mode, hostname, fingerprint, git_revision, reference, threshold, "
                          "alpha, regressions, verdict, results_json FROM gate_run ORDER BY id",
                          &st, err);
    if (ret < 0)
        return ret;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        static const char *const texts[] = {"created_at", "mode", "hostname", "fingerprint", "git_revision", "reference"};
        bkm_json_obj_begin(w);
        bkm_json_key(w, "id"), bkm_json_int(w, sqlite3_column_int64(st, 0));
        for (int i = 0; i < 6; i++)
            bkm_json_key(w, texts[i]), put_col_text(w, st, i + 1);
        bkm_json_key(w, "threshold"), put_col_num(w, st, 7);
        bkm_json_key(w, "alpha"), put_col_num(w, st, 8);
        bkm_json_key(w, "regressions"), bkm_json_int(w, sqlite3_column_int(st, 9));
        bkm_json_key(w, "verdict"), put_col_text(w, st, 10);
        bkm_json_key(w, "results"), put_col_json(w, notes, st, 11, "results of gate run", sqlite3_column_int64(st, 0));
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    ret = rc == SQLITE_DONE ? BKM_OK : bkm__db_err(db, rc, "read gate runs", err);
    sqlite3_finalize(st);
    return ret;
}

int bkm_db_report_json(bkm_db_t *db, const bkm_db_filter_t *f, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_json_w_t w;
    bkm_buf_t notes;
    int schema = 0, ret;
    if (db == NULL || out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "report: NULL argument");
    if ((ret = bkm_db_schema_version(db, &schema, err)) < 0)
        return ret;
    bkm_buf_init(&notes);
    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "schema"), bkm_json_int(&w, schema);
    if ((ret = report_sweeps(db, f, &w, &notes, err)) < 0 || (ret = report_trials(db, f, &w, &notes, err)) < 0 ||
        (ret = report_best(db, f, &w, &notes, err)) < 0 || (ret = report_gates(db, &w, &notes, err)) < 0) {
        bkm_buf_free(&notes);
        return ret;
    }
    /* what was left out, one string each */
    bkm_json_key(&w, "notes");
    bkm_json_arr_begin(&w);
    for (const char *p = bkm_buf_str(&notes); *p;) {
        size_t n = strcspn(p, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        bkm_json_str(&w, line);
        p += n + (p[n] == '\n');
    }
    bkm_json_arr_end(&w);
    bkm_buf_free(&notes);
    bkm_json_obj_end(&w);
    return BKM_OK;
}

int bkm_db_gate_store(bkm_db_t *db, const bkm_db_gate_run_t *g, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    if (db == NULL || g == NULL || g->mode == NULL || g->verdict == NULL || g->results_json == NULL)
        return bkm_err_set(err, BKM_EINVAL, "gate run: mode, verdict and results are required");
    ret = bkm__db_prepare(db,
                          "INSERT INTO gate_run(created_at, mode, hostname, fingerprint, git_revision, reference, "
                          "threshold, alpha, regressions, verdict, results_json) VALUES(strftime('%Y-%m-%dT%H:%M:%SZ', "
                          "'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                          &st, err);
    if (ret < 0)
        return ret;
    bkm__bind_text(st, 1, g->mode);
    bkm__bind_text(st, 2, g->hostname);
    bkm__bind_text(st, 3, g->fingerprint);
    bkm__bind_text(st, 4, g->git_revision);
    bkm__bind_text(st, 5, g->reference);
    bkm__bind_double(st, 6, g->threshold);
    bkm__bind_double(st, 7, g->alpha);
    sqlite3_bind_int(st, 8, g->regressions);
    bkm__bind_text(st, 9, g->verdict);
    bkm__bind_text(st, 10, g->results_json);
    if ((rc = sqlite3_step(st)) != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "store gate run", err);
    sqlite3_finalize(st);
    return ret;
}
