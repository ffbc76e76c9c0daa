/* SPDX-License-Identifier: MIT */
/* Export of every trial as CSV (RFC 4180) or JSON, for spreadsheets and scripts; both always
 * valid UTF-8, whatever bytes a stored error text holds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results_int.h"

/* A text cell, quoted when needed; always valid UTF-8 (ill-formed bytes of an error text become
 * U+FFFD). A text that a spreadsheet would take for a formula (OWASP's rule: beginning with =, +,
 * -, @, a tab or a carriage return) is written as data: a single quote before it, the whole cell
 * in double quotes. */
static void csv_str(bkm_buf_t *b, const char *s)
{
    int formula;
    if (s == NULL)
        return;
    formula = s[0] != '\0' && strchr("=+-@\t\r", s[0]) != NULL;
    if (!formula && strpbrk(s, ",\"\r\n") == NULL) {
        bkm_buf_append_utf8(b, s, strlen(s));
        return;
    }
    bkm_buf_puts(b, formula ? "\"'" : "\"");
    for (const char *p = s;;) {
        size_t n = strcspn(p, "\"");
        bkm_buf_append_utf8(b, p, n);
        if (p[n] == '\0')
            break;
        bkm_buf_puts(b, "\"\"");
        p += n + 1;
    }
    bkm_buf_puts(b, "\"");
}

static void csv_num(bkm_buf_t *b, double v)
{
    if (isfinite(v))
        bkm_buf_printf(b, "%.17g", v);
}

/* The noise evidence's totals and steal share as four cells (each preceded by a comma; empty when
 * the trial has none or the source was unavailable). */
const bkm_json_t *bkm_db_noise_totals(const bkm_json_t *noise)
{
    const bkm_json_t *t = noise && noise->type == BKM_JSON_OBJ ? bkm_json_get(noise, "totals") : NULL, *team, *all;
    if (t == NULL || t->type != BKM_JSON_OBJ)
        return NULL;
    team = bkm_json_get(t, "team");
    all = bkm_json_get(t, "all");
    if (team == NULL && all == NULL)
        return t;   /* a worker's */
    if (team != NULL && team->type == BKM_JSON_OBJ && bkm_json_get_num(team, "threads", 0) > 0)
        return team;
    return all != NULL && all->type == BKM_JSON_OBJ ? all : NULL;
}

static void csv_noise(bkm_buf_t *b, const char *noise_json)
{
    static const char *const tot[] = {"voluntary_switches", "involuntary_switches", "migrations"};
    bkm_json_t *doc = NULL;
    const bkm_json_t *t = NULL;
    if (noise_json != NULL && bkm_json_parse(noise_json, &doc, NULL) == BKM_OK)
        t = bkm_db_noise_totals(doc);
    for (size_t i = 0; i < sizeof tot / sizeof tot[0]; i++) {
        const bkm_json_t *v = t ? bkm_json_get(t, tot[i]) : NULL;
        bkm_buf_puts(b, ",");
        if (v != NULL && v->type == BKM_JSON_NUM)
            csv_num(b, v->num);
    }
    bkm_buf_puts(b, ",");
    if (doc != NULL)
        csv_num(b, bkm_json_get_num(doc, "steal_share", NAN));
    bkm_json_free(doc);
}

/* The stored counters of one trial, read through @p st (SELECT name, value, unavailable,
 * domain, os_value, os_source, disagrees ... WHERE trial_id = ?1). A disagreeing counter is
 * exported with both figures and the reason, never as a plain value. */
static int export_counters_csv(bkm_db_t *db, sqlite3_stmt *st, int64_t trial_id, bkm_buf_t *cell, bkm_err_t *err)
{
    int rc;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, trial_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (cell->len > 0)
            bkm_buf_puts(cell, ";");
        bkm_buf_puts(cell, name ? name : "");
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            bkm_buf_puts(cell, "=unavailable");
        else if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            bkm_buf_printf(cell, "=disagrees(papi %.17g/os %.17g)", sqlite3_column_double(st, 1),
                           sqlite3_column_double(st, 4));
        else
            bkm_buf_printf(cell, "=%.17g", sqlite3_column_double(st, 1));
    }
    return rc == SQLITE_DONE ? BKM_OK : bkm__db_err(db, rc, "read counters", err);
}

static int export_counters_json(bkm_db_t *db, sqlite3_stmt *st, int64_t trial_id, bkm_json_w_t *w, bkm_err_t *err)
{
    int rc;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, trial_id);
    bkm_json_key(w, "counters");
    bkm_json_arr_begin(w);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        bkm__db_counter_json(st, w);
    bkm_json_arr_end(w);
    return rc == SQLITE_DONE ? BKM_OK : bkm__db_err(db, rc, "read counters", err);
}

/* A stored JSON text as one cell, re-serialised (never spliced: a database may hold anything);
 * empty when it is missing or unreadable. */
static void csv_json(bkm_buf_t *b, const char *text)
{
    bkm_json_t *doc = NULL;
    bkm_buf_t cell;
    bkm_json_w_t w;
    if (text == NULL || bkm_json_parse(text, &doc, NULL) < 0)
        return;
    bkm_buf_init(&cell);
    bkm_json_w_init(&w, &cell, 0);
    if (bkm_json_write_tree(&w, doc) == BKM_OK)
        csv_str(b, bkm_buf_str(&cell));
    bkm_buf_free(&cell);
    bkm_json_free(doc);
}

/* The three cells of a program's trial (runtime, program, exe_sha256), from its binding evidence:
 * the runtime it was planned for, its argv (words joined by blanks), the hash of its executable;
 * empty for bkm's own workloads. Each preceded by a comma. */
static void csv_program(bkm_buf_t *b, const char *binding)
{
    bkm_json_t *doc = NULL;
    const bkm_json_t *pg = NULL, *rt = NULL, *av;
    bkm_buf_t argv;
    bkm_buf_init(&argv);
    if (binding != NULL && bkm_json_parse(binding, &doc, NULL) == BKM_OK && doc->type == BKM_JSON_OBJ) {
        pg = bkm_json_get(doc, "program");
        rt = bkm_json_get(doc, "runtime");
    }
    av = pg ? bkm_json_get(pg, "argv") : NULL;
    for (const bkm_json_t *x = av && av->type == BKM_JSON_ARR ? av->child : NULL; x; x = x->next)
        if (x->type == BKM_JSON_STR)
            bkm_buf_printf(&argv, "%s%s", argv.len ? " " : "", x->str);
    bkm_buf_puts(b, ",");
    csv_str(b, rt && rt->type == BKM_JSON_OBJ ? bkm_json_get_str(rt, "planned_for") : NULL);
    bkm_buf_puts(b, ",");
    csv_str(b, argv.len ? bkm_buf_str(&argv) : NULL);
    bkm_buf_puts(b, ",");
    csv_str(b, pg ? bkm_json_get_str(pg, "sha256") : NULL);
    bkm_buf_free(&argv);
    bkm_json_free(doc);
}

static void csv_row(bkm_buf_t *b, const bkm_db_trial_row_t *r, const char *counters)
{
    bkm_buf_printf(b, "%lld,", (long long)r->id);
    csv_str(b, r->sweep_uuid);
    bkm_buf_puts(b, ",");
    csv_str(b, r->node);
    bkm_buf_puts(b, ",");
    csv_str(b, r->workload);
    bkm_buf_printf(b, ",%s,", bkm_trial_status_name(r->status));
    csv_str(b, r->role);
    bkm_buf_printf(b, ",%d,", r->round);
    csv_str(b, r->config_json);
    bkm_buf_printf(b, ",%lld,", (long long)r->n_samples);
    csv_num(b, r->median_ms);
    bkm_buf_puts(b, ",");
    csv_num(b, r->min_ms);
    bkm_buf_puts(b, ",");
    csv_num(b, r->mad_ms);
    bkm_buf_puts(b, ",");
    csv_num(b, r->ci_lo_ms);
    bkm_buf_puts(b, ",");
    csv_num(b, r->ci_hi_ms);
    bkm_buf_puts(b, ",");
    csv_num(b, r->gflops);
    bkm_buf_puts(b, ",");
    csv_str(b, r->impl);
    bkm_buf_puts(b, ",");
    csv_str(b, r->error);
    bkm_buf_puts(b, ",");
    if (r->disturbed >= 0)
        bkm_buf_printf(b, "%d", r->disturbed);
    bkm_buf_puts(b, ",");
    csv_num(b, r->noise_share);
    csv_noise(b, r->noise_json);
    bkm_buf_puts(b, ",");
    csv_str(b, counters);
    bkm_buf_puts(b, ",");
    csv_str(b, r->git_revision);
    csv_program(b, r->binding_json);
    bkm_buf_puts(b, ",");
    csv_json(b, r->binding_json);
    bkm_buf_puts(b, "\r\n");
}

/* A stored JSON text (NULL: null) parsed and written again: null, with a line in @p notes, when
 * it does not parse or would nest deeper than bkm's JSON limit. */
static void json_stored(bkm_json_w_t *w, const char *text, const char *what, bkm_buf_t *notes)
{
    bkm_json_t *doc = NULL;
    bkm_err_t e = {0};
    if (text == NULL)
        bkm_json_null(w);
    else if (bkm_json_parse(text, &doc, &e) < 0) {
        bkm_json_null(w);
        bkm_buf_printf(notes, "%s: the stored text is not JSON (%s): left out\n", what, e.msg);
    } else if (bkm_json_write_tree(w, doc) < 0)
        bkm_buf_printf(notes, "%s: the stored JSON nests %d levels, deeper than the %d bkm's JSON holds here: left "
                       "out\n", what, bkm_json_depth(doc), BKM_JSON_MAX_DEPTH - w->depth);
    bkm_json_free(doc);
}

static void json_row(bkm_json_w_t *w, const bkm_db_trial_row_t *r, bkm_buf_t *notes)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "id");
    bkm_json_int(w, r->id);
    bkm_json_key(w, "sweep");
    bkm_json_str(w, r->sweep_uuid);
    bkm_json_key(w, "node");
    bkm_json_str(w, r->node);
    bkm_json_key(w, "workload");
    bkm_json_str(w, r->workload);
    bkm_json_key(w, "status");
    bkm_json_str(w, bkm_trial_status_name(r->status));
    bkm_json_key(w, "role");
    bkm_json_str(w, r->role);
    bkm_json_key(w, "round");
    bkm_json_int(w, r->round);
    bkm_json_key(w, "config");   /* re-serialised: a foreign database's text is never spliced in */
    json_stored(w, r->config_json, "config", notes);
    bkm_json_key(w, "n_samples");
    bkm_json_int(w, r->n_samples);
    bkm_json_key(w, "median_ms");
    bkm_json_double(w, r->median_ms);
    bkm_json_key(w, "min_ms");
    bkm_json_double(w, r->min_ms);
    bkm_json_key(w, "mad_ms");
    bkm_json_double(w, r->mad_ms);
    bkm_json_key(w, "ci95");
    bkm_json_arr_begin(w);
    bkm_json_double(w, r->ci_lo_ms);
    bkm_json_double(w, r->ci_hi_ms);
    bkm_json_arr_end(w);
    bkm_json_key(w, "gflops");
    bkm_json_double(w, r->gflops);
    bkm_json_key(w, "impl");
    bkm_json_str(w, r->impl);
    bkm_json_key(w, "error");
    bkm_json_str(w, r->error);
    bkm_json_key(w, "disturbed");
    if (r->disturbed >= 0)
        bkm_json_bool(w, r->disturbed);
    else
        bkm_json_null(w);
    bkm_json_key(w, "noise_share");
    bkm_json_double(w, r->noise_share);
    bkm_json_key(w, "noise");   /* the worker's object, re-serialised (null if unreadable) */
    json_stored(w, r->noise_json, "noise", notes);
    bkm_json_key(w, "git_revision");
    bkm_json_str(w, r->git_revision);
    bkm_json_key(w, "binding");   /* threads against the plan; a program's argv, hash and runtime */
    json_stored(w, r->binding_json, "binding", notes);
    if (notes->len) {   /* what was left out of this row, and why */
        bkm_json_key(w, "notes");
        bkm_json_arr_begin(w);
        for (const char *p = bkm_buf_str(notes); *p;) {
            size_t n = strcspn(p, "\n");
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
            bkm_json_str(w, line);
            p += n + (p[n] == '\n');
        }
        bkm_json_arr_end(w);
    }
}

int bkm_db_export(bkm_db_t *db, const bkm_db_filter_t *f, bkm_db_export_fmt_t fmt, bkm_buf_t *out, bkm_err_t *err)
{
    bkm_db_trial_list_t l = {0};
    sqlite3_stmt *ctr = NULL;
    bkm_buf_t cell;
    bkm_json_w_t w;
    int ret;
    bkm_buf_init(&cell);
    if (fmt != BKM_DB_EXPORT_CSV && fmt != BKM_DB_EXPORT_JSON)
        return bkm_err_set(err, BKM_EINVAL, "unknown export format %d", (int)fmt);
    if ((ret = bkm_db_trials_query(db, f, &l, err)) < 0)
        return ret;
    /* a database read as it is may predate the counters' domain and OS check (schema 6) */
    if ((ret = bkm__db_prepare(db, bkm__db_has_column(db, "main", "counter", "disagrees")
                                       ? "SELECT " BKM__DB_COUNTER_COLS("") " FROM counter WHERE trial_id = ?1 "
                                         "ORDER BY name"
                                       : "SELECT " BKM__DB_COUNTER_COLS_LEGACY("") " FROM counter WHERE "
                                         "trial_id = ?1 ORDER BY name",
                               &ctr, err)) < 0)
        goto out;
    if (fmt == BKM_DB_EXPORT_CSV) {
        bkm_buf_puts(out, "id,sweep,node,workload,status,role,round,config,n_samples,median_ms,min_ms,mad_ms,"
                          "ci_lo_ms,ci_hi_ms,gflops,impl,error,disturbed,noise_share,"
                          "voluntary_switches,involuntary_switches,migrations,steal_share,counters,git_revision,"
                          "runtime,program,exe_sha256,binding\r\n");
        for (size_t i = 0; i < l.n && ret == BKM_OK; i++) {
            bkm_buf_free(&cell);
            bkm_buf_init(&cell);
            if ((ret = export_counters_csv(db, ctr, l.rows[i].id, &cell, err)) == BKM_OK)
                csv_row(out, &l.rows[i], bkm_buf_str(&cell));
        }
    } else {
        bkm_buf_t notes;
        bkm_buf_init(&notes);
        bkm_json_w_init(&w, out, 1);
        bkm_json_arr_begin(&w);
        for (size_t i = 0; i < l.n && ret == BKM_OK; i++) {
            bkm_buf_free(&notes);
            json_row(&w, &l.rows[i], &notes);
            ret = export_counters_json(db, ctr, l.rows[i].id, &w, err);
            bkm_json_obj_end(&w);
        }
        bkm_json_arr_end(&w);
        bkm_buf_free(&notes);
        bkm_buf_puts(out, "\n");
    }
    if (ret == BKM_OK && (out->oom || cell.oom))
        ret = bkm_err_set(err, BKM_ENOMEM, "out of memory exporting %zu trials of %s", l.n, db->path);
out:
    sqlite3_finalize(ctr);
    bkm_buf_free(&cell);
    bkm_db_trial_list_free(&l);
    return ret;
}
