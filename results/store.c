/* SPDX-License-Identifier: MIT */
/* Writing and reading hosts, sweeps, trials (with samples and counters) and best-known settings. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results_int.h"

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"

/* ---------------------------------------------------------------------------------------- */
static int cmp_member(const void *a, const void *b)
{
    const bkm_json_t *x = *(const bkm_json_t *const *)a, *y = *(const bkm_json_t *const *)b;
    return strcmp(x->key, y->key);
}

static int canon(const bkm_json_t *j, bkm_buf_t *b, int depth)
{
    const bkm_json_t **m = NULL;
    size_t i = 0;
    int ret = BKM_OK;
    if (depth > BKM_JSON_MAX_DEPTH)
        return BKM_EINVAL;
    switch (j->type) {
    case BKM_JSON_NULL: bkm_buf_puts(b, "null"); break;
    case BKM_JSON_BOOL: bkm_buf_puts(b, j->boolean ? "true" : "false"); break;
    case BKM_JSON_STR: bkm_json_escape(b, j->str); break;
    case BKM_JSON_NUM:
        if (!isfinite(j->num))
            bkm_buf_puts(b, "null");
        else if (j->num == floor(j->num) && fabs(j->num) < 9007199254740992.0)
            bkm_buf_printf(b, "%lld", (long long)j->num);
        else
            bkm_buf_printf(b, "%.17g", j->num);
        break;
    case BKM_JSON_ARR:
        bkm_buf_puts(b, "[");
        for (const bkm_json_t *c = j->child; c && ret == BKM_OK; c = c->next, i++) {
            if (i)
                bkm_buf_puts(b, ",");
            ret = canon(c, b, depth + 1);
        }
        bkm_buf_puts(b, "]");
        break;
    case BKM_JSON_OBJ:
        if (j->n_children && (m = bkm_malloc(j->n_children * sizeof *m)) == NULL)
            return BKM_ENOMEM;
        for (const bkm_json_t *c = j->child; c; c = c->next)
            m[i++] = c;
        if (i)
            qsort(m, i, sizeof *m, cmp_member);
        bkm_buf_puts(b, "{");
        for (size_t k = 0; k < i && ret == BKM_OK; k++) {
            if (k)
                bkm_buf_puts(b, ",");
            bkm_json_escape(b, m[k]->key);
            bkm_buf_puts(b, ":");
            ret = canon(m[k], b, depth + 1);
        }
        bkm_buf_puts(b, "}");
        bkm_free(m);
        break;
    }
    return ret;
}

int bkm_db_config_canonical(const char *json, char **out, bkm_err_t *err)
{
    bkm_json_t *j = NULL;
    bkm_buf_t b;
    int ret;
    bkm_buf_init(&b);
    *out = NULL;
    if (json == NULL)
        return bkm_err_set(err, BKM_EINVAL, "configuration is missing (NULL JSON)");
    if ((ret = bkm_json_parse(json, &j, err)) < 0) {
        bkm_err_prefix(err, "configuration '%.200s' is not valid JSON", json);
        goto out;
    }
    if (j->type != BKM_JSON_OBJ) {
        ret = bkm_err_set(err, BKM_EINVAL, "configuration '%.200s' is not a JSON object", json);
        goto out;
    }
    ret = canon(j, &b, 0);
    if (ret == BKM_OK && b.oom)
        ret = BKM_ENOMEM;
    if (ret < 0) {
        bkm_err_set(err, ret, "cannot canonicalise configuration '%.200s': %s", json, bkm_strerror(ret));
        goto out;
    }
    *out = bkm_buf_take(&b);
out:
    bkm_buf_free(&b);
    bkm_json_free(j);
    return ret;
}

static void fnv1a(uint64_t *h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        *h ^= *p;
        *h *= 1099511628211ull;
    }
    *h ^= 0xff; /* field separator that cannot occur in UTF-8 text */
    *h *= 1099511628211ull;
}

int bkm_db_sweep_key(const char *space_json, const char *node, const char *workload, char key[17], bkm_err_t *err)
{
    char *space = NULL;
    uint64_t h = 14695981039346656037ull;
    int ret;
    if (node == NULL || workload == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep key needs a node and a workload");
    if ((ret = bkm_db_config_canonical(space_json, &space, err)) < 0)
        return bkm_err_prefix(err, "search space");
    fnv1a(&h, space);
    fnv1a(&h, node);
    fnv1a(&h, workload);
    snprintf(key, 17, "%016llx", (unsigned long long)h);
    bkm_free(space);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
int bkm__db_one_line(const char *what, const char *s, bkm_err_t *err)
{
    if (s == NULL)
        return BKM_OK;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            char shown[101];
            size_t i;
            /* the value as the message shows it: its control characters as '?' */
            for (i = 0; s[i] && i < sizeof shown - 1; i++)
                shown[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
            shown[i] = '\0';
            return bkm_err_set(err, BKM_EINVAL, "%s '%s' holds a control character (0x%02x)", what, shown, *p);
        }
    return BKM_OK;
}

int bkm__db_host_check(const char *hostname, const char *cpu_model, const char *fingerprint, bkm_err_t *err)
{
    int ret;
    if (hostname == NULL || hostname[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "host without a hostname");
    if ((ret = bkm__db_one_line("hostname", hostname, err)) < 0 || (ret = bkm__db_one_line("cpu model", cpu_model, err)) < 0 ||
        (ret = bkm__db_one_line("topology fingerprint", fingerprint, err)) < 0)
        return ret;
    return BKM_OK;
}

int bkm__db_sweep_check(const char *key, const char *node, const char *workload, const char *uuid,
                        const char *strategy, const char *git_revision, bkm_err_t *err)
{
    int ret;
    if (key == NULL || key[0] == '\0' || node == NULL || node[0] == '\0' || workload == NULL || workload[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "sweep needs a key, a node and a workload");
    if (uuid != NULL && uuid[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "sweep uuid is empty");
    if ((ret = bkm__db_one_line("sweep key", key, err)) < 0 || (ret = bkm__db_one_line("node", node, err)) < 0 ||
        (ret = bkm__db_one_line("workload", workload, err)) < 0 || (ret = bkm__db_one_line("sweep uuid", uuid, err)) < 0 ||
        (ret = bkm__db_one_line("strategy", strategy, err)) < 0 ||
        (ret = bkm__db_one_line("git revision", git_revision, err)) < 0)
        return ret;
    return BKM_OK;
}

int bkm__db_trial_check(const char *config_json, const char *status, const char *role, int64_t round,
                        int64_t n_samples, char **key, bkm_err_t *err)
{
    int st;
    char *k = NULL;
    int ret;
    if (key)
        *key = NULL;
    if (status == NULL || bkm_trial_status_parse(status, &st, NULL) < 0)
        return bkm_err_set(err, BKM_EINVAL, "trial status '%.64s' is not a stored trial status", status ? status : "");
    if (role == NULL || (strcmp(role, "search") && strcmp(role, "confirm")))
        return bkm_err_set(err, BKM_EINVAL, "trial role '%.64s' is not search or confirm", role ? role : "");
    if (round < 0)
        return bkm_err_set(err, BKM_EINVAL, "trial round %lld is negative", (long long)round);
    if (n_samples < 0)
        return bkm_err_set(err, BKM_EINVAL, "trial sample count %lld is negative", (long long)n_samples);
    if ((ret = bkm_db_config_canonical(config_json, &k, err)) < 0)
        return ret;
    if (key)
        *key = k;
    else
        bkm_free(k);
    return BKM_OK;
}

int bkm__db_best_decision_check(const char *decision, bkm_err_t *err)
{
    if (decision == NULL || strcmp(decision, "claimed") == 0 || strcmp(decision, "not-better") == 0 ||
        strcmp(decision, "undecided") == 0)
        return BKM_OK;
    return bkm_err_set(err, BKM_EINVAL, "best-known decision '%.64s' is not claimed, not-better or undecided",
                       decision);
}

int bkm__db_best_check(const char *node, const char *workload, double median_ms, const char *config_json,
                       char **canon, bkm_err_t *err)
{
    if (canon)
        *canon = NULL;
    if (node == NULL || node[0] == '\0' || workload == NULL || workload[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "best-known setting needs a node and a workload");
    if (bkm__db_one_line("node", node, err) < 0 || bkm__db_one_line("workload", workload, err) < 0)
        return BKM_EINVAL;
    if (!isfinite(median_ms))
        return bkm_err_set(err, BKM_EINVAL, "best-known setting for %.64s/%.64s has no median", node, workload);
    if (canon)
        return bkm_db_config_canonical(config_json, canon, err);
    {
        char *c = NULL;
        int ret = bkm_db_config_canonical(config_json, &c, err);
        bkm_free(c);
        return ret;
    }
}

int bkm_db_host_upsert(bkm_db_t *db, const bkm_db_host_t *host, int64_t *host_id, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    if (host == NULL)
        return bkm_err_set(err, BKM_EINVAL, "host without a hostname");
    if ((ret = bkm__db_host_check(host->hostname, host->cpu_model, host->fingerprint, err)) < 0)
        return ret;
    ret = bkm__db_prepare(db,
                          "INSERT INTO host(hostname, cpu_model, topology_json, fingerprint) VALUES(?1, ?2, ?3, ?4) "
                          "ON CONFLICT(hostname, fingerprint) DO UPDATE SET cpu_model = excluded.cpu_model, "
                          "topology_json = excluded.topology_json RETURNING id",
                          &st, err);
    if (ret < 0)
        return ret;
    bkm__bind_text(st, 1, host->hostname);
    bkm__bind_text(st, 2, host->cpu_model);
    bkm__bind_text(st, 3, host->topology_json);
    bkm__bind_text(st, 4, host->fingerprint ? host->fingerprint : "");
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *host_id = sqlite3_column_int64(st, 0);
        rc = sqlite3_step(st);
    }
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "store host", err);
    sqlite3_finalize(st);
    return ret;
}

int bkm_db_sweep_open(bkm_db_t *db, const bkm_db_sweep_t *info, int fresh, int64_t *sweep_id, int *resumed,
                      bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    if (info == NULL)
        return bkm_err_set(err, BKM_EINVAL, "sweep needs a key, a node and a workload");
    if ((ret = bkm__db_sweep_check(info->key, info->node, info->workload, info->uuid, info->strategy,
                                   info->git_revision, err)) < 0)
        return ret;
    if (resumed)
        *resumed = 0;
    if ((ret = bkm__db_begin(db, err)) < 0)
        return ret;
    if (!fresh) {
        if ((ret = bkm__db_prepare(db, "SELECT id FROM sweep WHERE key = ?1 ORDER BY id DESC LIMIT 1", &st, err)) < 0)
            goto out;
        bkm__bind_text(st, 1, info->key);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *sweep_id = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
            st = NULL;
            if (resumed)
                *resumed = 1;
            if ((ret = bkm__db_prepare(db, "UPDATE sweep SET status = 'running', finished_at = NULL, "
                                       "label = coalesce(?2, label) WHERE id = ?1", &st, err)) < 0)
                goto out;
            sqlite3_bind_int64(st, 1, *sweep_id);
            bkm__bind_text(st, 2, info->label);
            if ((rc = sqlite3_step(st)) != SQLITE_DONE)
                ret = bkm__db_err(db, rc, "resume sweep", err);
            goto out;
        }
        if (rc != SQLITE_DONE) {
            ret = bkm__db_err(db, rc, "find sweep", err);
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    ret =
        bkm__db_prepare(db,
                        "INSERT INTO sweep(uuid, key, command, label, node, workload, strategy, git_revision, host_id, "
                        "started_at) VALUES(coalesce(?9, lower(hex(randomblob(16)))), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, " NOW_SQL ")",
                        &st, err);
    if (ret < 0)
        goto out;
    bkm__bind_text(st, 1, info->key);
    bkm__bind_text(st, 2, info->command);
    bkm__bind_text(st, 3, info->label);
    bkm__bind_text(st, 4, info->node);
    bkm__bind_text(st, 5, info->workload);
    bkm__bind_text(st, 6, info->strategy);
    bkm__bind_text(st, 7, info->git_revision ? info->git_revision : "unknown");
    if (info->host_id > 0)
        sqlite3_bind_int64(st, 8, info->host_id);
    if (info->uuid)
        bkm__bind_text(st, 9, info->uuid);
    if ((rc = sqlite3_step(st)) != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "create sweep", err);
        goto out;
    }
    *sweep_id = sqlite3_last_insert_rowid(db->h);
out:
    sqlite3_finalize(st);
    if (ret == BKM_OK)
        return bkm__db_commit(db, err);
    bkm__db_rollback(db);
    return ret;
}

int bkm_db_sweep_finish(bkm_db_t *db, int64_t sweep_id, const char *status, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc;
    if (status == NULL || (strcmp(status, "done") && strcmp(status, "partial") && strcmp(status, "interrupted") &&
                           strcmp(status, "failed")))
        return bkm_err_set(err, BKM_EINVAL, "sweep status '%s' is not done, partial, interrupted or failed",
                           status ? status : "");
    if ((ret = bkm__db_prepare(db, "UPDATE sweep SET status = ?1, finished_at = " NOW_SQL " WHERE id = ?2", &st,
                               err)) < 0)
        return ret;
    bkm__bind_text(st, 1, status);
    sqlite3_bind_int64(st, 2, sweep_id);
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "finish sweep", err);
    else if (sqlite3_changes(db->h) == 0)
        ret = bkm_err_set(err, BKM_EINVAL, "no sweep with id %lld in %s", (long long)sweep_id, db->path);
    sqlite3_finalize(st);
    return ret;
}

void bkm_db_strv_free(bkm_db_strv_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        bkm_free(s->v[i]);
    bkm_free(s->v);
    s->v = NULL;
    s->n = 0;
}

int bkm_db_sweep_done_keys(bkm_db_t *db, int64_t sweep_id, const char *role, int round, bkm_db_strv_t *keys,
                           bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int ret, rc, oom = 0;
    keys->v = NULL;
    keys->n = 0;
    if ((ret = bkm__db_prepare(db, "SELECT config_key FROM trial WHERE sweep_id = ?1 AND role = ?2 AND round = ?3 "
                               "ORDER BY config_key", &st, err)) < 0)
        return ret;
    sqlite3_bind_int64(st, 1, sweep_id);
    bkm__bind_text(st, 2, role ? role : "search");
    sqlite3_bind_int(st, 3, round);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (keys->n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            char **nv = bkm_realloc(keys->v, ncap * sizeof *nv);
            if (nv == NULL) {
                oom = 1;
                break;
            }
            keys->v = nv;
            cap = ncap;
        }
        keys->v[keys->n] = bkm__col_strdup(st, 0, &oom);
        if (oom)
            break;
        keys->n++;
    }
    if (oom)
        ret = bkm_err_set(err, BKM_ENOMEM, "out of memory listing trials of sweep %lld", (long long)sweep_id);
    else if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "list completed trials", err);
    sqlite3_finalize(st);
    if (ret < 0)
        bkm_db_strv_free(keys);
    return ret;
}

/* ---------------------------------------------------------------------------------------- */
void bkm_db_trial_init(bkm_db_trial_t *t)
{
    memset(t, 0, sizeof *t);
    t->median_ms = t->min_ms = t->mad_ms = t->ci_lo_ms = t->ci_hi_ms = t->gflops = NAN;
    t->noise_share = NAN;
    t->disturbed = -1;
}

static int insert_children(bkm_db_t *db, const bkm_db_trial_t *t, int64_t id, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc = SQLITE_DONE;
    if ((ret = bkm__db_prepare(db, "INSERT INTO sample(trial_id, idx, ms) VALUES(?1, ?2, ?3)", &st, err)) < 0)
        return ret;
    for (size_t i = 0; i < t->n_samples && rc == SQLITE_DONE; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
        bkm__bind_double(st, 3, t->samples_ms[i]);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return bkm__db_err(db, rc, "store samples", err);
    if ((ret = bkm__db_prepare(db,
                               "INSERT INTO counter(trial_id, name, value, unavailable, domain, os_value, os_source, "
                               "disagrees) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                               &st, err)) < 0)
        return ret;
    for (size_t i = 0; i < t->n_counters && rc == SQLITE_DONE; i++) {
        const bkm_counter_t *c = &t->counters[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        bkm__bind_text(st, 2, c->name);
        if (c->available)
            sqlite3_bind_int64(st, 3, (sqlite3_int64)c->value);   /* stored REAL (column affinity) */
        else
            sqlite3_bind_null(st, 3);
        bkm__bind_text(st, 4, c->available ? NULL : (c->reason[0] ? c->reason : "unavailable"));
        bkm__bind_text(st, 5, c->available && c->domain[0] ? c->domain : NULL);
        if (c->available && c->os_source[0])
            sqlite3_bind_int64(st, 6, (sqlite3_int64)c->os_value);
        else
            sqlite3_bind_null(st, 6);
        bkm__bind_text(st, 7, c->available && c->os_source[0] ? c->os_source : NULL);
        bkm__bind_text(st, 8, c->available && c->disagrees ? (c->reason[0] ? c->reason : "disagrees with the OS")
                                                           : NULL);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return bkm__db_err(db, rc, "store counters", err);
    return BKM_OK;
}

int bkm_db_trial_insert(bkm_db_t *db, const bkm_db_trial_t *t, int64_t *trial_id, int *was_new, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    char *key = NULL;
    const char *status = t && bkm_trial_status_stored(t->status) ? bkm_trial_status_name(t->status) : NULL;
    const char *role = t && t->role ? t->role : "search";
    int64_t id = 0;
    int ret, rc, fresh = 0;
    if (t == NULL || status == NULL)
        return bkm_err_set(err, BKM_EINVAL, "trial status %d is not a stored bkm_trial_status_t", t ? t->status : -1);
    if (t->n_samples && t->samples_ms == NULL)
        return bkm_err_set(err, BKM_EINVAL, "trial has %zu samples but no sample array", t->n_samples);
    for (size_t i = 0; i < t->n_samples; i++)
        if (!isfinite(t->samples_ms[i]))
            return bkm_err_set(err, BKM_EINVAL, "trial %s: non-finite sample %zu (%g ms): store it as a failed "
                               "trial without samples", t->config_json ? t->config_json : "(no config)", i,
                               t->samples_ms[i]);
    if ((ret = bkm__db_trial_check(t->config_json, status, role, t->round, (int64_t)t->n_samples, &key, err)) < 0)
        return ret;
    if ((ret = bkm__db_begin(db, err)) < 0)
        goto out;
    ret = bkm__db_prepare(db,
                          "INSERT INTO trial(sweep_id, config_key, config_json, status, error, stderr_tail, exit_info, "
                          "started_at, finished_at, n_samples, median_ms, min_ms, mad_ms, ci_lo_ms, ci_hi_ms, gflops, "
                          "check_json, binding_json, effective_json, impl, role, round, noise_json, noise_share, disturbed, "
                          "layers_json) VALUES(?1, ?2, ?2, ?3, ?4, ?5, "
                          "?6, coalesce(?7, " NOW_SQL "), coalesce(?8, " NOW_SQL "), ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                          "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25) ON CONFLICT(sweep_id, role, round, config_key) DO NOTHING",
                          &st, err);
    if (ret < 0)
        goto out;
    sqlite3_bind_int64(st, 1, t->sweep_id);
    bkm__bind_text(st, 2, key);
    bkm__bind_text(st, 3, status);
    bkm__bind_text(st, 4, t->error);
    bkm__bind_text(st, 5, t->stderr_tail);
    bkm__bind_text(st, 6, t->exit_info);
    bkm__bind_text(st, 7, t->started_at);
    bkm__bind_text(st, 8, t->finished_at);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)t->n_samples);
    bkm__bind_double(st, 10, t->median_ms);
    bkm__bind_double(st, 11, t->min_ms);
    bkm__bind_double(st, 12, t->mad_ms);
    bkm__bind_double(st, 13, t->ci_lo_ms);
    bkm__bind_double(st, 14, t->ci_hi_ms);
    bkm__bind_double(st, 15, t->gflops);
    bkm__bind_text(st, 16, t->check_json);
    bkm__bind_text(st, 17, t->binding_json);
    bkm__bind_text(st, 18, t->effective_json);
    bkm__bind_text(st, 19, t->impl);
    bkm__bind_text(st, 20, role);
    sqlite3_bind_int(st, 21, t->round);
    bkm__bind_text(st, 22, t->noise_json);
    bkm__bind_double(st, 23, t->noise_share);
    if (t->disturbed == 0 || t->disturbed == 1)
        sqlite3_bind_int(st, 24, t->disturbed);
    else
        sqlite3_bind_null(st, 24);
    bkm__bind_text(st, 25, t->layers_json);
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "store trial", err);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
            ret = bkm_err_set(err, BKM_EINVAL, "cannot store trial %s in %s: no sweep %lld (%s)", key, db->path,
                              (long long)t->sweep_id, sqlite3_errmsg(db->h));
        goto out;
    }
    fresh = sqlite3_changes(db->h) > 0;
    sqlite3_finalize(st);
    st = NULL;
    if (fresh) {
        id = sqlite3_last_insert_rowid(db->h);
        if ((ret = insert_children(db, t, id, err)) < 0) {
            bkm_err_prefix(err, "trial %s", key);
            goto out;
        }
    } else {
        if ((ret = bkm__db_prepare(db, "SELECT id FROM trial WHERE sweep_id = ?1 AND role = ?2 AND round = ?3 AND "
                                   "config_key = ?4", &st, err)) < 0)
            goto out;
        sqlite3_bind_int64(st, 1, t->sweep_id);
        bkm__bind_text(st, 2, role);
        sqlite3_bind_int(st, 3, t->round);
        bkm__bind_text(st, 4, key);
        if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
            ret = bkm__db_err(db, rc, "find stored trial", err);
            goto out;
        }
        id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    ret = bkm__db_commit(db, err);
out:
    sqlite3_finalize(st);
    if (ret < 0)
        bkm__db_rollback(db);
    else {
        if (trial_id)
            *trial_id = id;
        if (was_new)
            *was_new = fresh;
    }
    bkm_free(key);
    return ret;
}

/* ---------------------------------------------------------------------------------------- */
void bkm_db_trial_list_free(bkm_db_trial_list_t *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++) {
        bkm_db_trial_row_t *r = &l->rows[i];
        bkm_free(r->sweep_uuid);
        bkm_free(r->node);
        bkm_free(r->workload);
        bkm_free(r->config_json);
        bkm_free(r->role);
        bkm_free(r->error);
        bkm_free(r->impl);
        bkm_free(r->noise_json);
        bkm_free(r->binding_json);
        bkm_free(r->git_revision);
    }
    bkm_free(l->rows);
    l->rows = NULL;
    l->n = 0;
}

int bkm_db_trials_query(bkm_db_t *db, const bkm_db_filter_t *f, bkm_db_trial_list_t *out, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int ret, rc, oom = 0;
    out->rows = NULL;
    out->n = 0;
    /* a database read as it is (schema 3 or older, read-only) has no noise columns */
    ret = bkm__db_prepare(db,
                          bkm__db_has_column(db, "main", "trial", "noise_json")
                              ? "SELECT t.id, t.sweep_id, s.uuid, s.node, s.workload, t.config_json, t.status, t.role, "
                                "t.round, t.error, t.impl, t.n_samples, t.median_ms, t.min_ms, t.mad_ms, t.ci_lo_ms, "
                                "t.ci_hi_ms, t.gflops, t.noise_share, t.disturbed, t.noise_json, t.binding_json, "
                                "s.git_revision FROM trial t JOIN "
                                "sweep s ON s.id = t.sweep_id WHERE (?1 = 0 OR t.sweep_id = ?1) AND (?2 IS NULL OR "
                                "s.node = ?2) AND (?3 IS NULL OR s.workload = ?3) ORDER BY t.id"
                              : "SELECT t.id, t.sweep_id, s.uuid, s.node, s.workload, t.config_json, t.status, t.role, "
                                "t.round, t.error, t.impl, t.n_samples, t.median_ms, t.min_ms, t.mad_ms, t.ci_lo_ms, "
                                "t.ci_hi_ms, t.gflops, NULL, NULL, NULL, t.binding_json, s.git_revision FROM trial t "
                                "JOIN sweep s ON s.id = "
                                "t.sweep_id WHERE (?1 = 0 OR t.sweep_id = ?1) AND (?2 IS NULL OR s.node = ?2) AND "
                                "(?3 IS NULL OR s.workload = ?3) ORDER BY t.id",
                          &st, err);
    if (ret < 0)
        return ret;
    sqlite3_bind_int64(st, 1, f ? f->sweep_id : 0);
    bkm__bind_text(st, 2, f ? f->node : NULL);
    bkm__bind_text(st, 3, f ? f->workload : NULL);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bkm_db_trial_row_t *r;
        if (out->n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            bkm_db_trial_row_t *nr = bkm_realloc(out->rows, ncap * sizeof *nr);
            if (nr == NULL) {
                oom = 1;
                break;
            }
            out->rows = nr;
            cap = ncap;
        }
        r = &out->rows[out->n++];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(st, 0);
        r->sweep_id = sqlite3_column_int64(st, 1);
        r->sweep_uuid = bkm__col_strdup(st, 2, &oom);
        r->node = bkm__col_strdup(st, 3, &oom);
        r->workload = bkm__col_strdup(st, 4, &oom);
        r->config_json = bkm__col_strdup(st, 5, &oom);
        if (bkm_trial_status_parse((const char *)sqlite3_column_text(st, 6), &r->status, NULL) < 0)
            r->status = BKM_TRIAL_FAILED; /* the CHECK constraint makes this unreachable */
        r->role = bkm__col_strdup(st, 7, &oom);
        r->round = sqlite3_column_int(st, 8);
        r->error = bkm__col_strdup(st, 9, &oom);
        r->impl = bkm__col_strdup(st, 10, &oom);
        r->n_samples = sqlite3_column_int64(st, 11);
        r->median_ms = bkm__col_double(st, 12);
        r->min_ms = bkm__col_double(st, 13);
        r->mad_ms = bkm__col_double(st, 14);
        r->ci_lo_ms = bkm__col_double(st, 15);
        r->ci_hi_ms = bkm__col_double(st, 16);
        r->gflops = bkm__col_double(st, 17);
        r->noise_share = bkm__col_double(st, 18);
        r->disturbed = sqlite3_column_type(st, 19) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 19) != 0;
        r->noise_json = bkm__col_strdup(st, 20, &oom);
        r->binding_json = bkm__col_strdup(st, 21, &oom);
        r->git_revision = bkm__col_strdup(st, 22, &oom);
        if (oom)
            break;
    }
    if (oom)
        ret = bkm_err_set(err, BKM_ENOMEM, "out of memory reading trials of %s", db->path);
    else if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read trials", err);
    sqlite3_finalize(st);
    if (ret < 0)
        bkm_db_trial_list_free(out);
    return ret;
}

int bkm_db_trial_samples(bkm_db_t *db, int64_t trial_id, double **ms, size_t *n, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int ret, rc;
    *ms = NULL;
    *n = 0;
    if ((ret = bkm__db_prepare(db, "SELECT ms FROM sample WHERE trial_id = ?1 ORDER BY idx", &st, err)) < 0)
        return ret;
    sqlite3_bind_int64(st, 1, trial_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t ncap = cap ? 2 * cap : 32;
            double *nv = bkm_realloc(*ms, ncap * sizeof *nv);
            if (nv == NULL) {
                ret = bkm_err_set(err, BKM_ENOMEM, "out of memory reading samples of trial %lld", (long long)trial_id);
                goto out;
            }
            *ms = nv;
            cap = ncap;
        }
        (*ms)[(*n)++] = sqlite3_column_double(st, 0);
    }
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read samples", err);
out:
    sqlite3_finalize(st);
    if (ret < 0) {
        bkm_free(*ms);
        *ms = NULL;
        *n = 0;
    }
    return ret;
}

/* ---------------------------------------------------------------------------------------- */
int bkm_db_best_store(bkm_db_t *db, const bkm_db_best_t *b, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    char *cfg = NULL;
    int ret, rc;
    if (b == NULL)
        return bkm_err_set(err, BKM_EINVAL, "best-known setting needs a node and a workload");
    if ((ret = bkm__db_best_check(b->node, b->workload, b->median_ms, b->config_json, &cfg, err)) < 0)
        return ret;
    if ((ret = bkm__db_best_decision_check(b->decision, err)) < 0)
        goto out;
    ret = bkm__db_prepare(db,
                          "INSERT INTO best(node, workload, sweep_id, config_json, median_ms, ci_lo_ms, ci_hi_ms, "
                          "default_median_ms, speedup, significant, evidence_json, created_at, decision, "
                          "speedup_rci_lo, speedup_rci_hi, not_better_than, confirm_processes, looks) VALUES(?1, ?2, "
                          "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?12, ?13, ?14, "
                          "?15, ?16, ?17)",
                          &st, err);
    if (ret < 0)
        goto out;
    bkm__bind_text(st, 1, b->node);
    bkm__bind_text(st, 2, b->workload);
    if (b->sweep_id > 0)
        sqlite3_bind_int64(st, 3, b->sweep_id);
    bkm__bind_text(st, 4, cfg);
    bkm__bind_double(st, 5, b->median_ms);
    bkm__bind_double(st, 6, b->ci_lo_ms);
    bkm__bind_double(st, 7, b->ci_hi_ms);
    bkm__bind_double(st, 8, b->default_median_ms);
    bkm__bind_double(st, 9, b->speedup);
    sqlite3_bind_int(st, 10, b->significant != 0);
    bkm__bind_text(st, 11, b->evidence_json);
    if (b->decision) {   /* the sequential confirmation's figures, only with its decision */
        bkm__bind_text(st, 12, b->decision);
        bkm__bind_double(st, 13, b->speedup_rci_lo);
        bkm__bind_double(st, 14, b->speedup_rci_hi);
        bkm__bind_double(st, 15, b->not_better_than);
        if (b->confirm_processes >= 0)
            sqlite3_bind_int64(st, 16, b->confirm_processes);
        if (b->looks >= 0)
            sqlite3_bind_int64(st, 17, b->looks);
    }
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "store best-known setting", err);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
            ret = bkm_err_set(err, BKM_EINVAL, "best-known setting refers to sweep %lld, not in %s",
                              (long long)b->sweep_id, db->path);
    }
out:
    sqlite3_finalize(st);
    bkm_free(cfg);
    return ret;
}

void bkm_db_best_clear(bkm_db_best_t *b)
{
    if (b == NULL)
        return;
    bkm_free((void *)b->node);
    bkm_free((void *)b->workload);
    bkm_free((void *)b->config_json);
    bkm_free((void *)b->evidence_json);
    bkm_free((void *)b->decision);
    bkm_free((void *)b->created_at);
    bkm_free((void *)b->sweep_uuid);
    bkm_free((void *)b->hostname);
    bkm_free((void *)b->git_revision);
    memset(b, 0, sizeof *b);
}

int bkm_db_best_get(bkm_db_t *db, const char *node, const char *workload, bkm_db_best_t *b, int *found,
                    bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret, rc, oom = 0, seq;
    memset(b, 0, sizeof *b);
    *found = 0;
    /* a database of schema 6 or older (read-only: not migrated) has no decision columns */
    seq = bkm__db_has_column(db, "main", "best", "decision");
    ret = bkm__db_prepare(db,
                          seq ? "SELECT b.node, b.workload, b.sweep_id, b.config_json, b.median_ms, b.ci_lo_ms, "
                                "b.ci_hi_ms, b.default_median_ms, b.speedup, b.significant, b.evidence_json, "
                                "b.created_at, s.uuid, h.hostname, s.git_revision, b.decision, b.speedup_rci_lo, "
                                "b.speedup_rci_hi, b.not_better_than, b.confirm_processes, b.looks "
                                "FROM best b LEFT JOIN sweep s ON s.id = b.sweep_id LEFT JOIN host h ON h.id = "
                                "s.host_id WHERE b.node = ?1 AND b.workload = ?2 "
                                "ORDER BY b.created_at DESC, b.id DESC LIMIT 1"
                              : "SELECT b.node, b.workload, b.sweep_id, b.config_json, b.median_ms, b.ci_lo_ms, "
                                "b.ci_hi_ms, b.default_median_ms, b.speedup, b.significant, b.evidence_json, "
                                "b.created_at, s.uuid, h.hostname, s.git_revision, NULL, NULL, NULL, NULL, NULL, NULL "
                                "FROM best b LEFT JOIN sweep s ON s.id = b.sweep_id LEFT JOIN host h ON h.id = "
                                "s.host_id WHERE b.node = ?1 AND b.workload = ?2 "
                                "ORDER BY b.created_at DESC, b.id DESC LIMIT 1",
                          &st, err);
    if (ret < 0)
        return ret;
    bkm__bind_text(st, 1, node);
    bkm__bind_text(st, 2, workload);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        b->node = bkm__col_strdup(st, 0, &oom);
        b->workload = bkm__col_strdup(st, 1, &oom);
        b->sweep_id = sqlite3_column_int64(st, 2);
        b->config_json = bkm__col_strdup(st, 3, &oom);
        b->median_ms = bkm__col_double(st, 4);
        b->ci_lo_ms = bkm__col_double(st, 5);
        b->ci_hi_ms = bkm__col_double(st, 6);
        b->default_median_ms = bkm__col_double(st, 7);
        b->speedup = bkm__col_double(st, 8);
        b->significant = sqlite3_column_int(st, 9);
        b->evidence_json = bkm__col_strdup(st, 10, &oom);
        b->created_at = bkm__col_strdup(st, 11, &oom);
        b->sweep_uuid = bkm__col_strdup(st, 12, &oom);
        b->hostname = bkm__col_strdup(st, 13, &oom);
        b->git_revision = bkm__col_strdup(st, 14, &oom);
        b->decision = bkm__col_strdup(st, 15, &oom);
        b->speedup_rci_lo = bkm__col_double(st, 16);
        b->speedup_rci_hi = bkm__col_double(st, 17);
        b->not_better_than = bkm__col_double(st, 18);
        b->confirm_processes = sqlite3_column_type(st, 19) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 19);
        b->looks = sqlite3_column_type(st, 20) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 20);
        *found = 1;
        if (oom)
            ret = bkm_err_set(err, BKM_ENOMEM, "out of memory reading the best-known setting");
    } else if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "read best-known setting", err);
    }
    sqlite3_finalize(st);
    if (ret < 0) {
        bkm_db_best_clear(b);
        *found = 0;
    }
    return ret;
}
