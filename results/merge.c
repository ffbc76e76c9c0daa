/* SPDX-License-Identifier: MIT */
/* Merging one bkm database into another (array jobs write one file each), with provenance. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "results_int.h"

#define TRIAL_COLS                                                                                             \
    "config_key, config_json, status, error, stderr_tail, exit_info, started_at, finished_at, n_samples, "     \
    "median_ms, min_ms, mad_ms, ci_lo_ms, ci_hi_ms, gflops, check_json, binding_json, effective_json, impl, " \
    "role, round"
/* Columns added by later migrations: a source of an older schema (read as it is) gives NULL for
 * those it lacks. */
static const char *const trial_cols_later[] = {"noise_json", "noise_share", "disturbed", "layers_json"};

/* Run a prepared statement with up to two int64 parameters to completion; adds the number of
 * changed rows to *changes when given. */
static int run2(bkm_db_t *db, sqlite3_stmt *st, int64_t a, int64_t b, int64_t *changes, const char *what,
                bkm_err_t *err)
{
    int rc;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        return bkm__db_err(db, rc, what, err);
    if (changes)
        *changes += sqlite3_changes(db->h);
    return BKM_OK;
}

/* The statement that copies one source trial (?1) into destination sweep ?2, with NULL for the
 * later columns the source's schema lacks. */
static int trial_copy_sql(bkm_db_t *db, char *sql, size_t cap, bkm_err_t *err)
{
    char dst[256] = "", src[256] = "";
    size_t i, nd = 0, ns = 0;
    for (i = 0; i < sizeof trial_cols_later / sizeof trial_cols_later[0]; i++) {
        const char *c = trial_cols_later[i];
        nd += (size_t)snprintf(dst + nd, sizeof dst - nd, ", %s", c);
        ns += (size_t)snprintf(src + ns, sizeof src - ns, ", %s", bkm__db_has_column(db, "src", "trial", c) ? c : "NULL");
    }
    if (nd >= sizeof dst || ns >= sizeof src ||
        (size_t)snprintf(sql, cap, "INSERT INTO main.trial(sweep_id, " TRIAL_COLS "%s) SELECT ?2, " TRIAL_COLS
                         "%s FROM src.trial WHERE id = ?1 ON CONFLICT(sweep_id, role, round, config_key) DO NOTHING",
                         dst, src) >= cap)
        return bkm_err_set(err, BKM_EINVAL, "merge: trial copy statement too long");
    return BKM_OK;
}

/* Copy the trials of source sweep @p src_id into destination sweep @p dst_id. */
static int merge_trials(bkm_db_t *db, int64_t src_id, int64_t dst_id, bkm_db_merge_stats_t *st, bkm_err_t *err)
{
    sqlite3_stmt *list = NULL, *ins = NULL, *smp = NULL, *cnt = NULL;
    char sql[2048];
    int ret, rc, legacy = !bkm__db_has_column(db, "src", "counter", "domain");
    int64_t first_new = 0;   /* the first trial copied from an older source: its counters get the fix-up */
    if ((ret = bkm__db_prepare(db, "SELECT id FROM src.trial WHERE sweep_id = ?1 ORDER BY id", &list, err)) < 0 ||
        (ret = trial_copy_sql(db, sql, sizeof sql, err)) < 0 || (ret = bkm__db_prepare(db, sql, &ins, err)) < 0 ||
        (ret = bkm__db_prepare(db,
                               "INSERT INTO main.sample(trial_id, idx, ms) SELECT ?2, idx, ms FROM src.sample "
                               "WHERE trial_id = ?1",
                               &smp, err)) < 0 ||
        (ret = bkm__db_prepare(db, legacy ? "INSERT INTO main.counter(trial_id, name, value, unavailable) SELECT ?2, "
                                            "name, value, unavailable FROM src.counter WHERE trial_id = ?1"
                                          : "INSERT INTO main.counter(trial_id, name, value, unavailable, domain, "
                                            "os_value, os_source, disagrees) SELECT ?2, name, value, unavailable, "
                                            "domain, os_value, os_source, disagrees FROM src.counter WHERE "
                                            "trial_id = ?1",
                               &cnt, err)) < 0)
        goto out;
    sqlite3_bind_int64(list, 1, src_id);
    while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(list, 0), added = 0, nid;
        if ((ret = run2(db, ins, old, dst_id, &added, "copy trial", err)) < 0)
            goto out;
        if (added == 0) {
            st->trials_known++;
            continue;
        }
        nid = sqlite3_last_insert_rowid(db->h);
        if (first_new == 0)
            first_new = nid;
        st->trials_new++;
        if ((ret = run2(db, smp, old, nid, &st->samples, "copy samples", err)) < 0 ||
            (ret = run2(db, cnt, old, nid, &st->counters, "copy counters", err)) < 0)
            goto out;
    }
    if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "read source trials", err);
    if (ret == BKM_OK && legacy && first_new > 0) {   /* the trial id is ours: formatted, not foreign text */
        char fix[1536];
        if ((size_t)snprintf(fix, sizeof fix, BKM__DB_COUNTER_LEGACY_FIX("%lld"), (long long)first_new,
                             (long long)first_new) >= sizeof fix)
            ret = bkm_err_set(err, BKM_EINVAL, "merge: counter fix-up statement too long");
        else
            ret = bkm__db_exec(db, fix, err);
    }
out:
    sqlite3_finalize(list);
    sqlite3_finalize(ins);
    sqlite3_finalize(smp);
    sqlite3_finalize(cnt);
    return ret;
}

static int merge_all(bkm_db_t *db, const char *in_path, bkm_db_merge_stats_t *st, bkm_err_t *err)
{
    sqlite3_stmt *list = NULL, *find = NULL, *ins = NULL, *best = NULL;
    int ret, rc;
    ret = bkm__db_exec(db,
                       "INSERT INTO main.host(hostname, cpu_model, topology_json, fingerprint, first_seen) "
                       "SELECT hostname, cpu_model, topology_json, fingerprint, first_seen FROM src.host WHERE true "
                       "ON CONFLICT(hostname, fingerprint) DO NOTHING",
                       err);
    if (ret < 0)
        return ret;
    if ((ret = bkm__db_prepare(db, "SELECT id, uuid FROM src.sweep ORDER BY id", &list, err)) < 0 ||
        (ret = bkm__db_prepare(db, "SELECT id FROM main.sweep WHERE uuid = ?1", &find, err)) < 0 ||
        (ret = bkm__db_prepare(
             db,
             "INSERT INTO main.sweep(uuid, key, command, label, node, workload, strategy, git_revision, "
             "host_id, started_at, finished_at, status, source_file, merged_at) SELECT s.uuid, s.key, "
             "s.command, s.label, s.node, s.workload, s.strategy, s.git_revision, (SELECT m.id FROM "
             "main.host m JOIN src.host h ON h.hostname = m.hostname AND h.fingerprint = m.fingerprint "
             "WHERE h.id = s.host_id), s.started_at, s.finished_at, s.status, coalesce(s.source_file, "
             "?2), strftime('%Y-%m-%dT%H:%M:%SZ', 'now') FROM src.sweep s WHERE s.id = ?1",
             &ins, err)) < 0)
        goto out;
    while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
        int64_t sid = sqlite3_column_int64(list, 0), did;
        sqlite3_reset(find);
        bkm__bind_text(find, 1, (const char *)sqlite3_column_text(list, 1));
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            did = sqlite3_column_int64(find, 0);
            st->sweeps_known++;
        } else if (rc == SQLITE_DONE) {
            sqlite3_reset(ins);
            sqlite3_bind_int64(ins, 1, sid);
            bkm__bind_text(ins, 2, in_path);
            if ((rc = sqlite3_step(ins)) != SQLITE_DONE) {
                ret = bkm__db_err(db, rc, "copy sweep", err);
                goto out;
            }
            did = sqlite3_last_insert_rowid(db->h);
            st->sweeps_new++;
        } else {
            ret = bkm__db_err(db, rc, "find sweep", err);
            goto out;
        }
        if ((ret = merge_trials(db, sid, did, st, err)) < 0)
            goto out;
    }
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "read source sweeps", err);
        goto out;
    }
    /* Best-known settings: one row per (node, workload, config, created_at); a source of schema 6
     * or older has no decision columns (NULL: not recorded). */
    ret = bkm__db_prepare(db,
                          bkm__db_has_column(db, "src", "best", "decision")
                              ? "INSERT INTO main.best(node, workload, sweep_id, config_json, median_ms, ci_lo_ms, "
                                "ci_hi_ms, default_median_ms, speedup, significant, evidence_json, created_at, "
                                "decision, speedup_rci_lo, speedup_rci_hi, not_better_than, confirm_processes, looks) "
                                "SELECT b.node, b.workload, (SELECT m.id FROM main.sweep m JOIN src.sweep s ON "
                                "s.uuid = m.uuid WHERE s.id = b.sweep_id), b.config_json, b.median_ms, b.ci_lo_ms, "
                                "b.ci_hi_ms, b.default_median_ms, b.speedup, b.significant, b.evidence_json, "
                                "b.created_at, b.decision, b.speedup_rci_lo, b.speedup_rci_hi, b.not_better_than, "
                                "b.confirm_processes, b.looks FROM src.best b WHERE NOT EXISTS (SELECT 1 FROM "
                                "main.best x WHERE x.node = b.node AND x.workload = b.workload AND x.config_json = "
                                "b.config_json AND x.created_at = b.created_at) ORDER BY b.id"
                              : "INSERT INTO main.best(node, workload, sweep_id, config_json, median_ms, ci_lo_ms, "
                                "ci_hi_ms, default_median_ms, speedup, significant, evidence_json, created_at) SELECT "
                                "b.node, b.workload, (SELECT m.id FROM main.sweep m JOIN src.sweep s ON s.uuid = "
                                "m.uuid WHERE s.id = b.sweep_id), b.config_json, b.median_ms, b.ci_lo_ms, b.ci_hi_ms, "
                                "b.default_median_ms, b.speedup, b.significant, b.evidence_json, b.created_at FROM "
                                "src.best b WHERE NOT EXISTS (SELECT 1 FROM main.best x WHERE x.node = b.node AND "
                                "x.workload = b.workload AND x.config_json = b.config_json AND x.created_at = "
                                "b.created_at) ORDER BY b.id",
                          &best, err);
    if (ret < 0)
        goto out;
    if ((rc = sqlite3_step(best)) != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "copy best-known settings", err);
    else
        st->best += sqlite3_changes(db->h);
out:
    sqlite3_finalize(list);
    sqlite3_finalize(find);
    sqlite3_finalize(ins);
    sqlite3_finalize(best);
    return ret;
}

void bkm_db_merge_limits_default(bkm_db_merge_limits_t *lim)
{
    lim->time_s = 600;
    lim->max_rows = 100000000;
    lim->max_text = 16 << 20;
}

/* The merge's clock: SQLite calls this every few thousand steps of any statement. */
typedef struct merge_clock {
    uint64_t deadline_ns;
    int expired;
} merge_clock_t;

static int merge_progress(void *ud)
{
    merge_clock_t *c = ud;
    if (bkm_now_ns() > c->deadline_ns)
        c->expired = 1;
    return c->expired;
}

int bkm_db_merge(bkm_db_t *db, const char *in_path, bkm_db_merge_stats_t *stats, bkm_err_t *err)
{
    return bkm_db_merge_limited(db, in_path, NULL, stats, err);
}

int bkm_db_merge_limited(bkm_db_t *db, const char *in_path, const bkm_db_merge_limits_t *limits,
                         bkm_db_merge_stats_t *stats, bkm_err_t *err)
{
    sqlite3_stmt *att = NULL;
    bkm_db_merge_stats_t local = {0};
    bkm_db_merge_limits_t lim;
    merge_clock_t clock = {0, 0};
    bkm_buf_t uri;
    int ret, rc, attached = 0, lock_fd = -1, same = 0, in_txn = 0;
    if (db->readonly)
        return bkm_err_set(err, BKM_EINVAL, "cannot merge into %s: opened read-only", db->path);
    bkm_db_same_file(db->path, in_path, &same);
    if (same)
        return bkm_err_set(err, BKM_EINVAL, "cannot merge %s into %s: they are the same file", in_path, db->path);
    if (limits)
        lim = *limits;
    else
        bkm_db_merge_limits_default(&lim);
    if (!(lim.time_s > 0) || lim.max_rows < 0 || lim.max_text < 0)
        return bkm_err_set(err, BKM_EINVAL, "merge limits: time %g s, %lld rows, %lld bytes", lim.time_s,
                           (long long)lim.max_rows, (long long)lim.max_text);
    if ((ret = bkm_db_validate(in_path, err)) < 0)
        return ret;
    clock.deadline_ns = bkm_now_ns() + (uint64_t)(lim.time_s * 1e9);
    sqlite3_progress_handler(db->h, 1000, merge_progress, &clock);
    /* Read-only, as bkm_db_open(BKM_DB_READONLY) reads: a read-write ATTACH would checkpoint a
     * leftover -wal into the input when it detaches. */
    bkm_buf_init(&uri);
    if ((ret = bkm__db_ro_uri(in_path, &uri, &lock_fd, err)) < 0)
        goto out;
    if ((ret = bkm__db_prepare(db, "ATTACH DATABASE ?1 AS src", &att, err)) < 0)
        goto out;
    bkm__bind_text(att, 1, uri.data);
    rc = sqlite3_step(att);
    sqlite3_finalize(att);
    if (rc != SQLITE_DONE) {
        ret = bkm__db_err(db, rc, "attach", err);
        bkm__db_ro_hint(in_path, err);
        goto out;
    }
    attached = 1;
    if ((ret = bkm__db_begin(db, err)) < 0)
        goto out;
    in_txn = 1;
    /* the source is checked inside the transaction, so that what is copied is what was checked */
    if ((ret = bkm__db_merge_check(db, &lim, err)) < 0) {
        bkm_err_prefix(err, "refused (nothing merged)");
        goto out;
    }
    if ((ret = merge_all(db, in_path, &local, err)) < 0)
        goto out;
    ret = bkm__db_commit(db, err);
    in_txn = 0;
out:
    sqlite3_progress_handler(db->h, 0, NULL, NULL);   /* a rollback or detach is never cut short */
    if (in_txn)
        bkm__db_rollback(db);
    if (attached)
        sqlite3_exec(db->h, "DETACH DATABASE src", NULL, NULL, NULL);
    if (lock_fd >= 0)
        close(lock_fd);
    bkm_buf_free(&uri);
    if (clock.expired && ret < 0)
        ret = bkm_err_set(err, BKM_EIO, "reading it took longer than the time limit of %g s: stopped, nothing "
                          "merged", lim.time_s);
    if (ret < 0)
        return bkm_err_prefix(err, "merging %s", in_path);
    if (stats) {
        stats->sweeps_new += local.sweeps_new;
        stats->sweeps_known += local.sweeps_known;
        stats->trials_new += local.trials_new;
        stats->trials_known += local.trials_known;
        stats->samples += local.samples;
        stats->counters += local.counters;
        stats->best += local.best;
    }
    return BKM_OK;
}
