/* SPDX-License-Identifier: MIT */
/* Unit and robustness tests of the results database: schema and migration, refusal of foreign
 * or damaged files (unchanged, no -wal/-shm), resume, one-transaction trials, concurrent
 * writers, kill -9 of a writer, merge, export and best-known settings.
 *
 * This test includes sqlite3.h only to build fixtures that bkm itself never writes (a foreign
 * SQLite file, a version-1 database as an older bkm wrote it, a "newer" database). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/results.h"

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bkm-test-results-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *pth(const char *name)
{
    static char buf[16][512];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* FNV-1a over the whole file: equal before and after means byte-for-byte unchanged. */
static unsigned long long file_hash(const char *p, long *size)
{
    FILE *f = fopen(p, "rb");
    unsigned long long h = 14695981039346656037ull;
    int c;
    *size = 0;
    ck_assert_ptr_nonnull(f);
    while ((c = fgetc(f)) != EOF) {
        h = (h ^ (unsigned)c) * 1099511628211ull;
        (*size)++;
    }
    fclose(f);
    return h;
}

static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
}

static int64_t new_sweep(bkm_db_t *db, const char *key, int fresh)
{
    bkm_db_sweep_t s = {.key = key, .command = "tune --node knl --workload gemm", .node = "knl",
                        .workload = "gemm", .strategy = "exhaustive", .git_revision = BKM_GIT_REVISION};
    int64_t id = 0;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_db_sweep_open(db, &s, fresh, &id, NULL, &err) == BKM_OK, "%s", err.msg);
    return id;
}

/* Store trial number @p i of a sweep: config {"threads": i, "affinity": "compact"}, 5 samples. */
static int put_trial(bkm_db_t *db, int64_t sweep, int i, bkm_err_t *err)
{
    char cfg[128];
    double ms[5];
    bkm_db_trial_t t;
    bkm_counter_t c[2] = {{.name = "perf::TASK-CLOCK", .value = 1e6 * i, .available = 1},
                             {.name = "PAPI_TOT_CYC", .available = 0, .reason = "no PMU"}};
    bkm_db_trial_init(&t);
    snprintf(cfg, sizeof cfg, "{\"threads\": %d, \"affinity\": \"compact,\\\"1\\\"\"}", i);
    for (int k = 0; k < 5; k++)
        ms[k] = 10.0 + i + 0.1 * k;
    t.sweep_id = sweep;
    t.config_json = cfg;
    t.status = i % 7 == 3 ? BKM_TRIAL_CRASHED : BKM_TRIAL_OK;
    t.error = t.status ? "worker killed by SIGSEGV" : NULL;
    t.samples_ms = ms;
    t.n_samples = 5;
    t.median_ms = ms[2];
    t.min_ms = ms[0];
    t.mad_ms = 0.1;
    t.ci_lo_ms = ms[0];
    t.ci_hi_ms = ms[4];
    t.gflops = 100.0 / (10.0 + i);
    t.counters = c;
    t.n_counters = 2;
    if (i % 2 == 0) {   /* noise evidence on even trials; odd ones have none (unknown) */
        t.noise_json = "{\"disturbed\":true,\"share\":0.4,\"steal_share\":0.01,\"totals\":{\"voluntary_switches\":1,"
                       "\"involuntary_switches\":7,\"migrations\":2}}";
        t.noise_share = 0.4;
        t.disturbed = 1;
    }
    if (i == 4)   /* a program's trial: its runtime, argv and hash travel in the binding evidence */
        t.binding_json = "{\"bound\":2,\"runtime\":{\"planned_for\":\"libgomp\"},\"program\":{\"argv\":"
                         "[\"/usr/bin/python3\",\"a \\\"b\\\".py\"],\"sha256\":\"ab12\"}}";
    return bkm_db_trial_insert(db, &t, NULL, NULL, err);
}

static size_t count_trials(bkm_db_t *db, int64_t sweep)
{
    bkm_db_trial_list_t l;
    bkm_db_filter_t f = {.sweep_id = sweep};
    size_t n;
    ck_assert_int_eq(bkm_db_trials_query(db, &f, &l, NULL), BKM_OK);
    n = l.n;
    bkm_db_trial_list_free(&l);
    return n;
}

/* ---------------------------------------------------------------------------------------- */
START_TEST(create_and_reopen)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    int v = 0;
    const char *p = pth("results/sub/bkm.sqlite");
    ck_assert_int_eq(bkm_db_open(&db, p, 0, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, p));
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_schema_version(db, &v, &err), BKM_OK);
    ck_assert_int_eq(v, BKM_DB_SCHEMA_VERSION);
    ck_assert_str_eq(bkm_db_path(db), p);
    new_sweep(db, "k1", 0);
    bkm_db_close(db);
    ck_assert_int_eq(bkm_db_open(&db, p, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    bkm_db_close(db);
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_READONLY, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_validate(p, &err), BKM_OK);
    bkm_db_close(db);
    /* no temporary files left behind by the atomic creation */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls '%s/results/sub' | grep new-)\"", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Tables of the older-schema fixtures that versions 1 and 2 share (as those versions created
 * them): the marker and host table before the sweep table; trial, sample and counter after it. */
#define FIXTURE_HEAD                                                                                      \
    "PRAGMA application_id = 1651207457;" /* 0x626b6d21 */                                               \
    "CREATE TABLE bkm_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"                                   \
    "INSERT INTO bkm_meta VALUES('application', 'bkm results database');"                                 \
    "CREATE TABLE host(id INTEGER PRIMARY KEY, hostname TEXT NOT NULL, cpu_model TEXT, topology_json TEXT," \
    " fingerprint TEXT NOT NULL DEFAULT '', first_seen TEXT NOT NULL DEFAULT '', UNIQUE(hostname, fingerprint));"
#define FIXTURE_TRIAL_TABLES                                                                              \
    "CREATE TABLE trial(id INTEGER PRIMARY KEY, sweep_id INTEGER NOT NULL REFERENCES sweep(id) ON DELETE" \
    " CASCADE, config_key TEXT NOT NULL, config_json TEXT NOT NULL, status TEXT NOT NULL, error TEXT,"    \
    " stderr_tail TEXT, exit_info TEXT, started_at TEXT, finished_at TEXT, n_samples INTEGER NOT NULL"   \
    " DEFAULT 0, median_ms REAL, min_ms REAL, mad_ms REAL, ci_lo_ms REAL, ci_hi_ms REAL, gflops REAL,"   \
    " check_json TEXT, binding_json TEXT, effective_json TEXT, impl TEXT, role TEXT NOT NULL DEFAULT"    \
    " 'search', round INTEGER NOT NULL DEFAULT 0, UNIQUE(sweep_id, role, round, config_key));"          \
    "CREATE TABLE sample(trial_id INTEGER NOT NULL REFERENCES trial(id) ON DELETE CASCADE, idx INTEGER NOT" \
    " NULL, ms REAL NOT NULL, PRIMARY KEY(trial_id, idx)) WITHOUT ROWID;"                                \
    "CREATE TABLE counter(trial_id INTEGER NOT NULL REFERENCES trial(id) ON DELETE CASCADE, name TEXT NOT" \
    " NULL, value REAL, unavailable TEXT, PRIMARY KEY(trial_id, name)) WITHOUT ROWID;"

/* What schema version 2 added (merge provenance, best-known settings). */
#define FIXTURE_V2_TABLES                                                                                 \
    "ALTER TABLE sweep ADD COLUMN source_file TEXT; ALTER TABLE sweep ADD COLUMN merged_at TEXT;"          \
    "CREATE TABLE best(id INTEGER PRIMARY KEY, node TEXT NOT NULL, workload TEXT NOT NULL,"               \
    " sweep_id INTEGER REFERENCES sweep(id) ON DELETE SET NULL, config_json TEXT NOT NULL,"               \
    " median_ms REAL NOT NULL, ci_lo_ms REAL, ci_hi_ms REAL, default_median_ms REAL,"                     \
    " speedup REAL, significant INTEGER NOT NULL, evidence_json TEXT, created_at TEXT NOT NULL);"

START_TEST(migrates_version_1)
{
    const char *p = pth("old.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_list_t l;
    int v = 0, found = -1;
    bkm_db_best_t b;
    /* A database as bkm schema version 1 wrote it, with one sweep and one trial. */
    raw_sql(p, FIXTURE_HEAD
               "CREATE TABLE sweep(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, key TEXT NOT NULL, command TEXT,"
               " label TEXT, node TEXT NOT NULL, workload TEXT NOT NULL, strategy TEXT, git_revision TEXT NOT NULL"
               " DEFAULT 'unknown', host_id INTEGER REFERENCES host(id), started_at TEXT NOT NULL, finished_at TEXT,"
               " status TEXT NOT NULL DEFAULT 'running');"
               "CREATE INDEX sweep_by_key ON sweep(key, id);"
               FIXTURE_TRIAL_TABLES
               "INSERT INTO sweep(uuid, key, node, workload, started_at) VALUES('u1', 'k1', 'knl', 'gemm', 'x');"
               "INSERT INTO trial(sweep_id, config_key, config_json, status, n_samples, median_ms)"
               " VALUES(1, '{\"t\":1}', '{\"t\":1}', 'ok', 1, 2.5);"
               "INSERT INTO sample VALUES(1, 0, 2.5);"
               "PRAGMA user_version = 1;");
    ck_assert_msg(bkm_db_open(&db, p, 0, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_schema_version(db, &v, &err), BKM_OK);
    ck_assert_int_eq(v, BKM_DB_SCHEMA_VERSION);
    ck_assert_int_eq(bkm_db_trials_query(db, NULL, &l, &err), BKM_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_double_eq(l.rows[0].median_ms, 2.5);
    ck_assert_str_eq(l.rows[0].sweep_uuid, "u1");
    bkm_db_trial_list_free(&l);
    /* the version-2 table exists */
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "gemm", &b, &found, &err), BKM_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    bkm_db_close(db);
}
END_TEST

/* The first column of the first row of @p sql on @p path, as text ("" when none). */
static void raw_text(const char *path, const char *sql, char *out, size_t n)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(h));
    out[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

START_TEST(migrates_version_2)
{
    const char *p = pth("v2.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_list_t l;
    bkm_db_best_t b;
    int v = 0, found = 0;
    char txt[64];
    /* A database as bkm schema version 2 wrote it (sweep status CHECK without 'interrupted'):
     * a finished sweep with a trial, its samples and a best-known setting that points at it. */
    raw_sql(p, FIXTURE_HEAD
               "CREATE TABLE sweep(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, key TEXT NOT NULL, command TEXT,"
               " label TEXT, node TEXT NOT NULL, workload TEXT NOT NULL, strategy TEXT, git_revision TEXT NOT NULL"
               " DEFAULT 'unknown', host_id INTEGER REFERENCES host(id), started_at TEXT NOT NULL, finished_at TEXT,"
               " status TEXT NOT NULL DEFAULT 'running' CHECK(status IN ('running', 'done', 'partial', 'failed')));"
               "CREATE INDEX sweep_by_key ON sweep(key, id);"
               FIXTURE_TRIAL_TABLES
               FIXTURE_V2_TABLES
               "CREATE INDEX best_by_node ON best(node, workload, id);"
               "CREATE INDEX trial_by_sweep_status ON trial(sweep_id, status);"
               "INSERT INTO sweep(uuid, key, node, workload, started_at, status, source_file)"
               " VALUES('u2', 'k2', 'knl', 'gemm', 'x', 'done', 'a.sqlite');"
               "INSERT INTO trial(sweep_id, config_key, config_json, status, n_samples, median_ms)"
               " VALUES(1, '{\"t\":1}', '{\"t\":1}', 'ok', 1, 2.5);"
               "INSERT INTO sample VALUES(1, 0, 2.5);"
               "INSERT INTO best(node, workload, sweep_id, config_json, median_ms, significant, created_at)"
               " VALUES('knl', 'gemm', 1, '{\"t\":1}', 2.5, 0, 'x');"
               "PRAGMA user_version = 2;");
    /* read-only: read as it is (recordings of version 2 replay without a migration); its
     * best-known setting has no decision columns: not recorded */
    ck_assert_msg(bkm_db_open(&db, p, BKM_DB_READONLY, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_schema_version(db, &v, &err), BKM_OK);
    ck_assert_int_eq(v, 2);
    ck_assert_msg(bkm_db_best_get(db, "knl", "gemm", &b, &found, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(found, 1);
    ck_assert_ptr_null(b.decision);
    ck_assert_int_eq(b.looks, -1);
    bkm_db_best_clear(&b);
    bkm_db_close(db);
    {   /* merged as it is into a current database: the later columns (noise) arrive unknown */
        bkm_db_t *m = NULL;
        ck_assert_msg(bkm_db_open(&m, pth("v2m.sqlite"), BKM_DB_CREATE, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg(bkm_db_merge(m, p, NULL, &err) == BKM_OK, "%s", err.msg);
        ck_assert_int_eq(bkm_db_trials_query(m, NULL, &l, &err), BKM_OK);
        ck_assert_uint_eq(l.n, 1);
        ck_assert_int_eq(l.rows[0].disturbed, -1);
        ck_assert(isnan(l.rows[0].noise_share));
        ck_assert_ptr_null(l.rows[0].noise_json);
        bkm_db_trial_list_free(&l);
        ck_assert_int_eq(bkm_db_best_get(m, "knl", "gemm", &b, &found, &err), BKM_OK);
        ck_assert_int_eq(found, 1);
        ck_assert_ptr_null(b.decision);
        ck_assert_int_eq(b.confirm_processes, -1);
        bkm_db_best_clear(&b);
        bkm_db_close(m);
    }
    ck_assert_msg(bkm_db_open(&db, p, 0, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_schema_version(db, &v, &err), BKM_OK);
    ck_assert_int_eq(v, BKM_DB_SCHEMA_VERSION); /* and on to the latest */
    /* the rebuilt sweep table kept its row, id and columns; nothing cascaded */
    ck_assert_int_eq(bkm_db_trials_query(db, NULL, &l, &err), BKM_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.rows[0].sweep_uuid, "u2");
    bkm_db_trial_list_free(&l);
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "gemm", &b, &found, &err), BKM_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(b.sweep_id, 1);
    bkm_db_best_clear(&b);
    /* 'interrupted' is accepted now, anything else still refused */
    ck_assert_msg(bkm_db_sweep_finish(db, 1, "interrupted", &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_sweep_finish(db, 1, "stopped", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'stopped'"));
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    bkm_db_close(db);
    raw_text(p, "SELECT status || ' ' || source_file FROM sweep WHERE id = 1", txt, sizeof txt);
    ck_assert_str_eq(txt, "interrupted a.sqlite");
    raw_text(p, "SELECT count(*) FROM pragma_foreign_key_check", txt, sizeof txt);
    ck_assert_str_eq(txt, "0");
    raw_text(p, "SELECT count(*) FROM sqlite_schema WHERE name IN ('sweep_by_key', 'sweep_v3')", txt, sizeof txt);
    ck_assert_str_eq(txt, "1");
    /* the CHECK constraint is still there */
    {
        sqlite3 *h = NULL;
        ck_assert_int_eq(sqlite3_open(p, &h), SQLITE_OK);
        ck_assert_int_ne(sqlite3_exec(h, "UPDATE sweep SET status = 'bogus'", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(h);
    }
}
END_TEST

/* A file bkm must refuse: BKM_ECORRUPT (or @p code), message naming it, bytes unchanged,
 * no -wal/-shm created. */
static void assert_refused(const char *p, int code)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    long s0, s1;
    char side[600];
    unsigned long long h0 = file_hash(p, &s0);
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_CREATE, &err), code);
    ck_assert_ptr_null(db);
    ck_assert_msg(strstr(err.msg, p) != NULL, "message '%s' does not name %s", err.msg, p);
    ck_assert_int_eq(bkm_db_validate(p, &err), code);
    ck_assert(file_hash(p, &s1) == h0 && s1 == s0);
    snprintf(side, sizeof side, "%s-wal", p);
    ck_assert_msg(!exists(side), "%s was created", side);
    snprintf(side, sizeof side, "%s-shm", p);
    ck_assert_msg(!exists(side), "%s was created", side);
}

START_TEST(refuses_foreign_and_damaged_files)
{
    const char *good = pth("good.sqlite"), *foreign = pth("foreign.sqlite"), *text = pth("notes.txt");
    const char *garbled = pth("garbled.sqlite"), *trunc = pth("truncated.sqlite"), *empty = pth("empty.sqlite");
    const char *newer = pth("newer.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    char cmd[1400];
    FILE *f;

    raw_sql(foreign,
            "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES(1, 'x');");
    assert_refused(foreign, BKM_ECORRUPT);
    f = fopen(text, "w");
    fputs("this is not a database\n", f);
    fclose(f);
    assert_refused(text, BKM_ECORRUPT);
    f = fopen(empty, "w");
    fclose(f);
    assert_refused(empty, BKM_ECORRUPT);

    /* A real bkm database with enough data to span many pages, closed cleanly. */
    ck_assert_int_eq(bkm_db_open(&db, good, BKM_DB_CREATE, &err), BKM_OK);
    int64_t s = new_sweep(db, "k", 0);
    for (int i = 0; i < 300; i++)
        ck_assert_int_eq(put_trial(db, s, i, &err), BKM_OK);
    bkm_db_close(db);
    ck_assert(!exists(pth("good.sqlite-wal")));
    /* Garbled: 4 KiB of 0x5a over the middle of the file, header intact. */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && size=$(stat -c %%s '%s') && "
             "head -c 4096 /dev/zero | tr '\\0' 'Z' | dd of='%s' bs=1 seek=$((size / 2)) conv=notrunc status=none",
             good, garbled, garbled, garbled);
    ck_assert_int_eq(system(cmd), 0);
    assert_refused(garbled, BKM_ECORRUPT);
    /* Truncated to its first half. */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && truncate -s $(( $(stat -c %%s '%s') / 2 / 4096 * 4096 )) '%s'", good,
             trunc, good, trunc);
    ck_assert_int_eq(system(cmd), 0);
    assert_refused(trunc, BKM_ECORRUPT);
    /* Written by a newer bkm: refused with both versions named. */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", good, newer);
    ck_assert_int_eq(system(cmd), 0);
    raw_sql(newer, "PRAGMA journal_mode = DELETE; PRAGMA user_version = 99;");
    assert_refused(newer, BKM_ENOTSUP);
    ck_assert_int_eq(bkm_db_open(&db, newer, 0, &err), BKM_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "99"));
    /* A folder is not a database: bad input, as the CLI says for --db (exit 2). */
    ck_assert_int_eq(bkm_db_open(&db, dir, BKM_DB_CREATE, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));
    ck_assert_int_eq(bkm_db_open(&db, "", BKM_DB_CREATE, &err), BKM_EINVAL);
}
END_TEST

START_TEST(resume_and_duplicates)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_strv_t keys;
    bkm_db_trial_t t;
    int64_t s1, s2, s3, id1 = 0, id2 = 0;
    int resumed = -1, was_new = -1;
    char key[17], key2[17];
    bkm_db_sweep_t info = {.key = key, .node = "knl", .workload = "gemm"};
    ck_assert_int_eq(bkm_db_open(&db, pth("r.sqlite"), BKM_DB_CREATE, &err), BKM_OK);
    /* the sweep key ignores member order and whitespace of the search space */
    ck_assert_int_eq(bkm_db_sweep_key("{\"threads\":[1,2],\"aff\":\"compact\"}", "knl", "gemm", key, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_sweep_key("{ \"aff\": \"compact\", \"threads\": [1, 2] }", "knl", "gemm", key2, &err),
                     BKM_OK);
    ck_assert_str_eq(key, key2);
    ck_assert_int_eq(bkm_db_sweep_key("{\"threads\":[1,2],\"aff\":\"compact\"}", "knl", "conv2d", key2, &err), BKM_OK);
    ck_assert_str_ne(key, key2);
    ck_assert_int_eq(bkm_db_sweep_key("[1", "knl", "gemm", key2, &err), BKM_EINVAL);

    ck_assert_int_eq(bkm_db_sweep_open(db, &info, 0, &s1, &resumed, &err), BKM_OK);
    ck_assert_int_eq(resumed, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(put_trial(db, s1, i, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_sweep_finish(db, s1, "done", &err), BKM_OK);
    ck_assert_int_eq(bkm_db_sweep_open(db, &info, 0, &s2, &resumed, &err), BKM_OK);
    ck_assert_int_eq(resumed, 1);
    ck_assert_int_eq(s2, s1);
    ck_assert_int_eq(bkm_db_sweep_done_keys(db, s1, "search", 0, &keys, &err), BKM_OK);
    ck_assert_uint_eq(keys.n, 3);
    ck_assert_str_eq(keys.v[0], "{\"affinity\":\"compact,\\\"1\\\"\",\"threads\":0}");
    bkm_db_strv_free(&keys);
    ck_assert_int_eq(bkm_db_sweep_open(db, &info, 1, &s3, &resumed, &err), BKM_OK);
    ck_assert_int_eq(resumed, 0);
    ck_assert_int_ne(s3, s1);
    ck_assert_int_eq(bkm_db_sweep_done_keys(db, s3, "search", 0, &keys, &err), BKM_OK);
    ck_assert_uint_eq(keys.n, 0);
    bkm_db_strv_free(&keys);
    /* the same configuration written differently is the same trial: ignored, same id */
    bkm_db_trial_init(&t);
    t.sweep_id = s3;
    t.config_json = "{\"b\": 1, \"a\": 2.5}";
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, &id1, &was_new, &err), BKM_OK);
    ck_assert_int_eq(was_new, 1);
    t.config_json = "{\"a\":2.5,\"b\":1.0}";
    t.status = BKM_TRIAL_TIMEOUT;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, &id2, &was_new, &err), BKM_OK);
    ck_assert_int_eq(was_new, 0);
    ck_assert_int_eq(id1, id2);
    /* a confirmation round of the same configuration is a separate trial */
    t.role = "confirm";
    t.round = 1;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, &id2, &was_new, &err), BKM_OK);
    ck_assert_int_eq(was_new, 1);
    ck_assert_uint_eq(count_trials(db, s3), 2);
    /* bad input is named */
    t.config_json = "[1, 2]";
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "[1, 2]"));
    t.config_json = "{\"a\":1}";
    t.role = "warmup";
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "warmup"));
    t.role = NULL;
    t.status = 42;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    /* the runner's "no result" is never stored */
    t.status = BKM_TRIAL_INTERRUPTED;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "trial status 5"));
    t.status = 0;
    t.sweep_id = 9999;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "9999"));
    ck_assert_int_eq(bkm_db_sweep_finish(db, s3, "sideways", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sideways"));
    int st = -1;
    ck_assert_int_eq(bkm_trial_status_parse("binding-mismatch", &st, &err), BKM_OK);
    ck_assert_int_eq(st, BKM_TRIAL_BINDING_MISMATCH);
    ck_assert_int_eq(bkm_trial_status_parse("exploded", &st, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_trial_status_parse("interrupted", &st, &err), BKM_EINVAL);
    bkm_db_close(db);
}
END_TEST

START_TEST(trial_is_one_transaction)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_t t;
    double ms[3] = {1, 2, 3};
    bkm_counter_t c[2] = {{.name = "x", .value = 1, .available = 1}, {.name = "x", .value = 2, .available = 1}};
    bkm_db_strv_t keys;
    ck_assert_int_eq(bkm_db_open(&db, pth("a.sqlite"), BKM_DB_CREATE, &err), BKM_OK);
    int64_t s = new_sweep(db, "k", 0);
    bkm_db_trial_init(&t);
    t.sweep_id = s;
    t.config_json = "{\"threads\":2}";
    t.samples_ms = ms;
    t.n_samples = 3;
    t.counters = c;
    t.n_counters = 2; /* the second counter violates the primary key after trial and samples are written */
    ck_assert_int_ne(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "threads"));
    ck_assert_uint_eq(count_trials(db, s), 0);
    ck_assert_int_eq(bkm_db_sweep_done_keys(db, s, NULL, 0, &keys, &err), BKM_OK);
    ck_assert_uint_eq(keys.n, 0);
    /* a NaN sample fails after the trial row is written: nothing stays either */
    ms[1] = NAN;
    t.n_counters = 1;
    ck_assert_int_ne(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_OK);
    ck_assert_uint_eq(count_trials(db, s), 0);
    /* the connection is usable afterwards, and the trial can be stored */
    ms[1] = 2;
    int64_t id = 0;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, &id, NULL, &err), BKM_OK);
    double *back = NULL;
    size_t n = 0;
    ck_assert_int_eq(bkm_db_trial_samples(db, id, &back, &n, &err), BKM_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_double_eq(back[2], 3.0);
    bkm_free(back);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    bkm_db_close(db);
}
END_TEST

/* Child process: open @p path, resume sweep @p key and store trials first..first+n-1 that are not
 * stored yet. Exits 0 on success. */
static void writer(const char *path, const char *key, int first, int n)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_strv_t done;
    int rc = 0;
    if (bkm_db_open(&db, path, BKM_DB_CREATE, &err) < 0)
        _exit(10);
    int64_t s = new_sweep(db, key, 0);
    if (bkm_db_sweep_done_keys(db, s, "search", 0, &done, &err) < 0)
        _exit(11);
    for (int i = first; i < first + n && rc == 0; i++) {
        char cfg[128];
        int skip = 0;
        snprintf(cfg, sizeof cfg, "{\"affinity\":\"compact,\\\"1\\\"\",\"threads\":%d}", i);
        for (size_t k = 0; k < done.n && !skip; k++)
            skip = strcmp(done.v[k], cfg) == 0;
        if (!skip && put_trial(db, s, i, &err) < 0) {
            fprintf(stderr, "writer: %s\n", err.msg);
            rc = 12;
        }
    }
    if (rc == 0 && bkm_db_sweep_finish(db, s, "done", &err) < 0)
        rc = 13;
    bkm_db_strv_free(&done);
    bkm_db_close(db);
    _exit(rc);
}

static void assert_complete(bkm_db_t *db, int64_t sweep, size_t expect)
{
    bkm_db_trial_list_t l;
    bkm_db_filter_t f = {.sweep_id = sweep};
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_db_trials_query(db, &f, &l, &err), BKM_OK);
    if (expect != (size_t)-1)
        ck_assert_uint_eq(l.n, expect);
    for (size_t i = 0; i < l.n; i++) {
        double *ms = NULL;
        size_t n = 0;
        ck_assert_int_eq(bkm_db_trial_samples(db, l.rows[i].id, &ms, &n, &err), BKM_OK);
        ck_assert_int_eq((int64_t)n, l.rows[i].n_samples);
        bkm_free(ms);
    }
    bkm_db_trial_list_free(&l);
}

START_TEST(two_writers_at_once)
{
    const char *p = pth("results/shared.sqlite");
    pid_t a, b;
    int st;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    /* both processes create the database if needed: only one creation wins */
    if ((a = fork()) == 0)
        writer(p, "sweep-a", 0, 200);
    if ((b = fork()) == 0)
        writer(p, "sweep-b", 1000, 200);
    ck_assert_int_eq(waitpid(a, &st, 0), a);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer a: %d", st);
    ck_assert_int_eq(waitpid(b, &st, 0), b);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer b: %d", st);
    ck_assert_int_eq(bkm_db_open(&db, p, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    assert_complete(db, 0, 400);
    bkm_db_close(db);
}
END_TEST

START_TEST(kill_9_then_resume)
{
    const char *p = pth("k.sqlite");
    pid_t w;
    int st;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_list_t l;
    size_t before;
    struct timespec ts = {0, 150 * 1000000L};
    if ((w = fork()) == 0)
        writer(p, "sweep-k", 0, 100000);
    /* let it store some trials, then kill it wherever it is */
    for (int tries = 0; tries < 200; tries++) {
        nanosleep(&ts, NULL);
        if (exists(p) && bkm_db_open(&db, p, 0, &err) == BKM_OK) {
            size_t n = count_trials(db, 0);
            bkm_db_close(db);
            db = NULL;
            if (n >= 50)
                break;
        }
    }
    ck_assert_int_eq(kill(w, SIGKILL), 0);
    ck_assert_int_eq(waitpid(w, &st, 0), w);
    ck_assert(WIFSIGNALED(st));
    ck_assert_int_eq(bkm_db_open(&db, p, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    assert_complete(db, 0, (size_t)-1);
    before = count_trials(db, 0);
    ck_assert_uint_ge(before, 1);
    ck_assert_uint_lt(before, 100000);
    bkm_db_close(db);
    /* the same command again: a bounded sweep of before + 20 configurations completes */
    if ((w = fork()) == 0)
        writer(p, "sweep-k", 0, (int)before + 20);
    ck_assert_int_eq(waitpid(w, &st, 0), w);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(bkm_db_open(&db, p, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    assert_complete(db, 0, before + 20);
    ck_assert_int_eq(bkm_db_trials_query(db, NULL, &l, &err), BKM_OK);
    ck_assert_int_eq(l.rows[0].sweep_id, l.rows[l.n - 1].sweep_id); /* one sweep, resumed */
    bkm_db_trial_list_free(&l);
    bkm_db_close(db);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
static void make_db(const char *p, const char *key, const char *node, int n)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_host_t h = {.hostname = "nid00042", .cpu_model = "Xeon Phi 7250", .fingerprint = "1x68x4"};
    int64_t hid = 0;
    bkm_db_sweep_t s = {.key = key, .node = node, .workload = "gemm", .command = "tune", .strategy = "random"};
    int64_t sid = 0;
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_host_upsert(db, &h, &hid, &err), BKM_OK);
    s.host_id = hid;
    ck_assert_int_eq(bkm_db_sweep_open(db, &s, 0, &sid, NULL, &err), BKM_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(put_trial(db, sid, i, &err), BKM_OK);
    bkm_db_best_t b = {.node = node, .workload = "gemm", .sweep_id = sid, .config_json = "{\"threads\":1}",
                       .median_ms = 11.2, .ci_lo_ms = 11.0, .ci_hi_ms = 11.4, .default_median_ms = 14.0,
                       .speedup = 1.25, .significant = 1, .evidence_json = "{\"p\":0.001}",
                       .decision = "claimed", .speedup_rci_lo = 1.1, .speedup_rci_hi = 1.4, .not_better_than = 1.4,
                       .confirm_processes = 48, .looks = 2};
    ck_assert_int_eq(bkm_db_best_store(db, &b, &err), BKM_OK);
    bkm_db_close(db);
}

/* A counter contradicted by the OS is stored with both figures and its reason, and every reader
 * (export JSON and CSV, the report's document, the per-configuration summary behind `tune best`)
 * shows the disagreement, never the PAPI figure as a value; an agreeing one carries its domain and
 * the OS figure it was checked against. */
START_TEST(counter_states_round_trip)
{
    const char *p = pth("cs.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_t *j = NULL;
    bkm_db_counter_summary_t *cs = NULL;
    size_t n = 0;
    double ms[3] = {1.0, 1.1, 1.2};
    bkm_counter_t c[3] = {
        {.name = "perf::CONTEXT-SWITCHES", .available = 1, .disagrees = 1, .value = 0, .os_value = 16155,
         .os_source = "rusage voluntary+involuntary switches", .domain = "user",
         .reason = "PAPI counted 0 in the user domain, the OS 16155"},
        {.name = "perf::TASK-CLOCK", .available = 1, .value = 5000000, .os_value = 5100000,
         .os_source = "rusage user+system CPU time (ns)", .domain = "user"},
        {.name = "perf::CPU-MIGRATIONS", .available = 0,
         .reason = "happens in the kernel, so it needs the kernel domain: not permitted"}};
    bkm_db_trial_t t;
    int64_t sid;
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_CREATE, &err), BKM_OK);
    sid = new_sweep(db, "kc", 0);
    bkm_db_trial_init(&t);
    t.sweep_id = sid;
    t.config_json = "{\"threads\":2}";
    t.status = BKM_TRIAL_OK;
    t.samples_ms = ms;
    t.n_samples = 3;
    t.median_ms = 1.1;
    t.counters = c;
    t.n_counters = 3;
    ck_assert_msg(bkm_db_trial_insert(db, &t, NULL, NULL, &err) == BKM_OK, "%s", err.msg);
    /* export JSON: states, the disagreeing value null with both figures, the reason */
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_JSON, &b, &err), BKM_OK);
    ck_assert_msg(bkm_json_parse(b.data, &j, &err) == BKM_OK, "%s", err.msg);
    {
        const bkm_json_t *ctr = bkm_json_get(bkm_json_at(j, 0), "counters");
        ck_assert_uint_eq(ctr->n_children, 3);
        for (const bkm_json_t *e = ctr->child; e; e = e->next) {
            const char *name = bkm_json_get_str(e, "name"), *state = bkm_json_get_str(e, "state");
            if (strcmp(name, "perf::CONTEXT-SWITCHES") == 0) {
                ck_assert_str_eq(state, "disagrees");
                ck_assert_int_eq(bkm_json_get(e, "value")->type, BKM_JSON_NULL);
                ck_assert_double_eq(bkm_json_get_num(e, "papi_value", -1), 0);
                ck_assert_double_eq(bkm_json_get_num(e, "os_value", -1), 16155);
                ck_assert_ptr_nonnull(strstr(bkm_json_get_str(e, "reason"), "16155"));
            } else if (strcmp(name, "perf::TASK-CLOCK") == 0) {
                ck_assert_str_eq(state, "counted");
                ck_assert_double_eq(bkm_json_get_num(e, "value", -1), 5000000);
                ck_assert_double_eq(bkm_json_get_num(e, "os_value", -1), 5100000);
                ck_assert_str_eq(bkm_json_get_str(e, "domain"), "user");
            } else {
                ck_assert_str_eq(state, "unavailable");
                ck_assert_int_eq(bkm_json_get(e, "value")->type, BKM_JSON_NULL);
                ck_assert_ptr_nonnull(strstr(bkm_json_get_str(e, "reason"), "kernel domain"));
            }
        }
    }
    bkm_json_free(j);
    bkm_buf_free(&b);
    /* export CSV: the counters cell */
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_CSV, &b, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(b.data, ",perf::CONTEXT-SWITCHES=disagrees(papi 0/os 16155);"
                                         "perf::CPU-MIGRATIONS=unavailable;perf::TASK-CLOCK=5000000,"));
    bkm_buf_free(&b);
    /* the report's document */
    ck_assert_int_eq(bkm_db_report_json(db, NULL, &b, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "\"state\":\"disagrees\",\"value\":null,\"domain\":\"user\",\"papi_value\":0,"
                                         "\"os_value\":16155,\"os_source\":\"rusage voluntary+involuntary switches\","
                                         "\"reason\":\"PAPI counted 0 in the user domain, the OS 16155\""));
    bkm_buf_free(&b);
    /* the summary `tune best` shows */
    ck_assert_int_eq(bkm_db_config_counters(db, sid, "{\"threads\":2}", &cs, &n, &err), BKM_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(cs[0].name, "perf::CONTEXT-SWITCHES");
    ck_assert_int_eq(cs[0].counted, 0);
    ck_assert_int_eq(cs[0].disagrees, 1);
    ck_assert(isnan(cs[0].median));
    ck_assert_str_eq(cs[1].name, "perf::CPU-MIGRATIONS");
    ck_assert_int_eq(cs[1].unavailable, 1);
    ck_assert_int_eq(cs[2].counted, 1);
    ck_assert_double_eq(cs[2].median, 5000000);
    ck_assert_str_eq(cs[2].domain, "user");
    bkm_free(cs);
    bkm_db_close(db);
}
END_TEST

/* Counters stored before schema 6 were counted in the user domain: a kernel-side event's 0 there
 * is no measurement. Read as it is, merged, or migrated, it is unavailable with that reason; the
 * other events keep their value, in the user domain. */
START_TEST(legacy_counters_are_not_measurements)
{
    const char *p = pth("v2c.sqlite");
    bkm_db_t *db = NULL, *m = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_db_counter_summary_t *cs = NULL;
    size_t n = 0;
    raw_sql(p, FIXTURE_HEAD
               "CREATE TABLE sweep(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, key TEXT NOT NULL, command TEXT,"
               " label TEXT, node TEXT NOT NULL, workload TEXT NOT NULL, strategy TEXT, git_revision TEXT NOT NULL"
               " DEFAULT 'unknown', host_id INTEGER REFERENCES host(id), started_at TEXT NOT NULL, finished_at TEXT,"
               " status TEXT NOT NULL DEFAULT 'running' CHECK(status IN ('running', 'done', 'partial', 'failed')));"
               "CREATE INDEX sweep_by_key ON sweep(key, id);"
               FIXTURE_TRIAL_TABLES
               FIXTURE_V2_TABLES
               "CREATE INDEX best_by_node ON best(node, workload, id);"
               "CREATE INDEX trial_by_sweep_status ON trial(sweep_id, status);"
               "INSERT INTO sweep(uuid, key, node, workload, started_at, status) VALUES('u5', 'k5', 'knl', 'gemm', 'x', 'done');"
               "INSERT INTO trial(sweep_id, config_key, config_json, status, n_samples, median_ms)"
               " VALUES(1, '{\"t\":1}', '{\"t\":1}', 'ok', 1, 2.5);"
               "INSERT INTO sample VALUES(1, 0, 2.5);"
               "INSERT INTO counter VALUES(1, 'perf::CONTEXT-SWITCHES', 0.0, NULL), (1, 'perf::CPU-MIGRATIONS', 0.0, NULL),"
               " (1, 'perf::TASK-CLOCK', 123.0, NULL), (1, 'PAPI_TOT_CYC', NULL, 'Event does not exist');"
               "PRAGMA user_version = 2;");
    /* read as it is */
    ck_assert_msg(bkm_db_open(&db, p, BKM_DB_READONLY, &err) == BKM_OK, "%s", err.msg);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_CSV, &b, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(b.data, ",PAPI_TOT_CYC=unavailable;perf::CONTEXT-SWITCHES=unavailable;"
                                         "perf::CPU-MIGRATIONS=unavailable;perf::TASK-CLOCK=123,"));
    bkm_buf_free(&b);
    ck_assert_int_eq(bkm_db_config_counters(db, 1, "{\"t\":1}", &cs, &n, &err), BKM_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(cs[1].name, "perf::CONTEXT-SWITCHES");
    ck_assert_int_eq(cs[1].unavailable, 1);
    ck_assert_ptr_nonnull(strstr(cs[1].reason, "user domain only"));
    ck_assert_str_eq(cs[3].domain, "user");
    bkm_free(cs);
    bkm_db_close(db);
    /* merged into a current database */
    ck_assert_msg(bkm_db_open(&m, pth("v2cm.sqlite"), BKM_DB_CREATE, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_db_merge(m, p, NULL, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_report_json(m, NULL, &b, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "{\"name\":\"perf::CONTEXT-SWITCHES\",\"state\":\"unavailable\",\"value\":null,"
                                         "\"domain\":null,\"os_value\":null,\"os_source\":null,\"reason\":"
                                         "\"counted in the user domain only"));
    ck_assert_ptr_nonnull(strstr(b.data, "{\"name\":\"perf::TASK-CLOCK\",\"state\":\"counted\",\"value\":123,"
                                         "\"domain\":\"user\""));
    bkm_buf_free(&b);
    bkm_db_close(m);
    /* migrated in place */
    ck_assert_msg(bkm_db_open(&db, p, 0, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_report_json(db, NULL, &b, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "{\"name\":\"perf::CPU-MIGRATIONS\",\"state\":\"unavailable\",\"value\":null,"
                                         "\"domain\":null,\"os_value\":null,\"os_source\":null,\"reason\":"
                                         "\"counted in the user domain only"));
    ck_assert_ptr_nonnull(strstr(b.data, "{\"name\":\"PAPI_TOT_CYC\",\"state\":\"unavailable\",\"value\":null,"
                                         "\"domain\":null,\"os_value\":null,\"os_source\":null,\"reason\":"
                                         "\"Event does not exist\""));
    bkm_buf_free(&b);
    bkm_db_close(db);
}
END_TEST

START_TEST(merge_is_idempotent)
{
    const char *a = pth("a.sqlite"), *b = pth("b.sqlite"), *out = pth("out/all.sqlite"), *bad = pth("bad.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_merge_stats_t st = {0};
    bkm_db_best_t best;
    int found = 0;
    make_db(a, "ka", "knl", 7);
    make_db(b, "kb", "haswell", 5);
    ck_assert_int_eq(bkm_db_open(&db, out, BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_msg(bkm_db_merge(db, a, &st, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_merge(db, b, &st, &err), BKM_OK);
    ck_assert_int_eq(st.sweeps_new, 2);
    ck_assert_int_eq(st.trials_new, 12);
    ck_assert_int_eq(st.samples, 60);
    ck_assert_int_eq(st.counters, 24);
    ck_assert_int_eq(st.best, 2);
    memset(&st, 0, sizeof st);
    ck_assert_int_eq(bkm_db_merge(db, a, &st, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_merge(db, b, &st, &err), BKM_OK);
    ck_assert_int_eq(st.sweeps_new + st.trials_new + st.samples + st.counters + st.best, 0);
    ck_assert_int_eq(st.sweeps_known, 2);
    ck_assert_int_eq(st.trials_known, 12);
    assert_complete(db, 0, 12);
    ck_assert_int_eq(bkm_db_best_get(db, "haswell", "gemm", &best, &found, &err), BKM_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(best.config_json, "{\"threads\":1}");
    ck_assert_ptr_nonnull(best.sweep_uuid);
    /* the sequential confirmation's decision comes along (schema 7) */
    ck_assert_str_eq(best.decision, "claimed");
    ck_assert_double_eq(best.speedup_rci_lo, 1.1);
    ck_assert_double_eq(best.speedup_rci_hi, 1.4);
    ck_assert_double_eq(best.not_better_than, 1.4);
    ck_assert_int_eq(best.confirm_processes, 48);
    ck_assert_int_eq(best.looks, 2);
    bkm_db_best_clear(&best);
    /* a foreign input is refused by name and nothing is merged */
    raw_sql(bad, "CREATE TABLE t(x);");
    ck_assert_int_eq(bkm_db_merge(db, bad, &st, &err), BKM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, bad));
    ck_assert_int_eq(bkm_db_merge(db, pth("missing.sqlite"), &st, &err), BKM_EIO);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    bkm_db_close(db);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

/* No write transaction of anyone holds @p path: another connection can write it at once. */
static void assert_unlocked(const char *path)
{
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(h, "BEGIN IMMEDIATE; COMMIT;", NULL, NULL, NULL) == SQLITE_OK, "%s is locked: %s", path,
                  sqlite3_errmsg(h));
    sqlite3_close(h);
}

/* A crafted source is refused before anything is copied, naming what is wrong (the object, or
 * the table, row and reason), and the destination stays untouched and unlocked. */
START_TEST(merge_refuses_crafted_sources)
{
    static const struct {
        const char *sql, *needle;
    } cases[] = {
        {"DROP TABLE best; CREATE VIEW best AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
         "SELECT n AS id FROM r;", "a view 'best'"},
        {"CREATE TRIGGER tr AFTER INSERT ON host BEGIN SELECT 1; END;", "a trigger 'tr'"},
        {"CREATE TABLE extra(x);", "a table 'extra'"},
        {"CREATE VIRTUAL TABLE v USING fts4(x);", "a table 'v'"},
        {"DROP INDEX best_by_node;", "table best is not bkm's"},
        {"CREATE INDEX mine ON trial(median_ms);", "table trial is not bkm's"},
        {"ALTER TABLE host ADD COLUMN x TEXT;", "table host is not bkm's"},
        {"DROP TABLE gate_run;", "no table gate_run"},
        {"UPDATE trial SET status = 'evil' WHERE id = 1;", "table trial, id 1: trial status 'evil'"},
        {"UPDATE trial SET role = 'x' WHERE id = 2;", "table trial, id 2: trial role 'x'"},
        {"UPDATE trial SET round = -1 WHERE id = 1;", "table trial, id 1: trial round -1"},
        {"UPDATE trial SET config_json = '[1]', config_key = '[1]' WHERE id = 1;", "not a JSON object"},
        {"UPDATE trial SET config_key = 'x' WHERE id = 1;", "table trial, id 1: config_key 'x'"},
        {"UPDATE trial SET disturbed = 5 WHERE id = 1;", "disturbed is not 0, 1 or NULL"},
        {"UPDATE sweep SET node = 'k' || char(10) || 'x';", "table sweep, id 1: node 'k?x' holds a control"},
        {"UPDATE sweep SET status = 'gone';", "sweep status 'gone'"},
        {"UPDATE sweep SET git_revision = 'a' || char(27) || '[2J';", "git revision"},
        {"UPDATE host SET hostname = 'a' || char(13);", "table host, id 1: hostname"},
        {"UPDATE sample SET ms = 9e999 WHERE idx = 0;", "ms is not a finite number"},
        {"UPDATE sample SET idx = -5 WHERE idx = 0 AND trial_id = 1;", "negative sample index"},
        {"UPDATE counter SET name = '' WHERE trial_id = 1 AND name = (SELECT min(name) FROM counter WHERE trial_id = 1);",
         "counter name"},
        {"UPDATE best SET median_ms = 'fast';", "table best, id 1: median_ms is text, not REAL"},
        {"UPDATE best SET config_json = '{\"threads\":1,\"a\":2}';", "not in canonical form"},
        {"UPDATE best SET significant = 7;", "significant is not 0 or 1"},
        {"UPDATE best SET decision = 'maybe';", "table best, id 1: decision is not claimed, not-better, undecided"},
        {"UPDATE best SET looks = -3;", "table best, id 1: a negative count of processes or looks"},
        {"UPDATE best SET decision = NULL;", "table best, id 1: sequential figures without a decision"},
        {"UPDATE sweep SET label = x'00ff';", "table sweep, id 1: label is blob, not TEXT"},
        {"UPDATE sweep SET command = 'a' || char(0) || 'b';", "command holds a NUL byte"},
        {"UPDATE trial SET n_samples = 'many' WHERE id = 1;", "n_samples is text, not INTEGER"},
    };
    const char *base = pth("base.sqlite"), *src = pth("src.sqlite"), *out = pth("out.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_merge_stats_t st = {0};
    unsigned long long h0;
    long size;
    make_db(base, "kb", "knl", 3);
    ck_assert_int_eq(bkm_db_open(&db, out, BKM_DB_CREATE, &err), BKM_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char sql[1024];
        unlink(src);
        copy_file(base, src);
        snprintf(sql, sizeof sql, "PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF; %s", cases[i].sql);
        raw_sql(src, sql);
        h0 = file_hash(out, &size);
        memset(&err, 0, sizeof err);
        ck_assert_msg(bkm_db_merge(db, src, &st, &err) == BKM_ECORRUPT, "case %zu (%s): %s", i, cases[i].sql, err.msg);
        ck_assert_msg(strstr(err.msg, cases[i].needle) != NULL, "case %zu: '%s' does not say '%s'", i, err.msg,
                      cases[i].needle);
        ck_assert_ptr_nonnull(strstr(err.msg, "nothing merged"));
        ck_assert_msg(file_hash(out, &size) == h0, "case %zu changed the destination", i);
        assert_unlocked(out);
    }
    ck_assert_int_eq(st.sweeps_new + st.trials_new + st.samples + st.best, 0);
    /* the clean source merges into the same handle afterwards */
    ck_assert_msg(bkm_db_merge(db, base, &st, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(st.trials_new, 3);
    bkm_db_close(db);
}
END_TEST

/* Reads of a source are bounded: the time limit (a progress handler), rows per table, bytes per
 * text; a stop at any of them rolls back and leaves the destination unlocked. */
START_TEST(merge_is_bounded)
{
    const char *a = pth("a.sqlite"), *out = pth("out.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_merge_limits_t lim;
    unsigned long long h0;
    long size;
    make_db(a, "ka", "knl", 40);
    ck_assert_int_eq(bkm_db_open(&db, out, BKM_DB_CREATE, &err), BKM_OK);
    h0 = file_hash(out, &size);
    bkm_db_merge_limits_default(&lim);
    lim.time_s = 1e-9;
    ck_assert_int_eq(bkm_db_merge_limited(db, a, &lim, NULL, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "time limit"));
    ck_assert(file_hash(out, &size) == h0);
    assert_unlocked(out);
    bkm_db_merge_limits_default(&lim);
    lim.max_rows = 39;
    ck_assert_int_eq(bkm_db_merge_limited(db, a, &lim, NULL, &err), BKM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than the limit of 39"));
    bkm_db_merge_limits_default(&lim);
    lim.max_text = 8;
    ck_assert_int_eq(bkm_db_merge_limited(db, a, &lim, NULL, &err), BKM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than the limit of 8"));
    lim.time_s = 0;
    ck_assert_int_eq(bkm_db_merge_limited(db, a, &lim, NULL, &err), BKM_EINVAL);
    ck_assert(file_hash(out, &size) == h0);
    assert_unlocked(out);
    ck_assert_msg(bkm_db_merge_limited(db, a, NULL, NULL, &err) == BKM_OK, "%s", err.msg);
    bkm_db_close(db);
}
END_TEST

/* What the merge refuses, the store refuses when bkm writes: one-line names and revisions. */
START_TEST(store_refuses_multi_line_names)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_host_t h = {.hostname = "nid1\ntouch x", .cpu_model = "x", .fingerprint = "f"};
    bkm_db_sweep_t s = {.key = "k", .node = "knl\n", .workload = "gemm"};
    bkm_db_best_t b = {.node = "knl", .workload = "ge\rmm", .config_json = "{}", .median_ms = 1};
    int64_t id = 0;
    ck_assert_int_eq(bkm_db_open(&db, pth("s.sqlite"), BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_host_upsert(db, &h, &id, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "hostname 'nid1?touch x'"));
    ck_assert_int_eq(bkm_db_sweep_open(db, &s, 0, &id, NULL, &err), BKM_EINVAL);
    s.node = "knl";
    s.git_revision = "abc\n";
    ck_assert_int_eq(bkm_db_sweep_open(db, &s, 0, &id, NULL, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_db_best_store(db, &b, &err), BKM_EINVAL);
    bkm_db_close(db);
}
END_TEST

START_TEST(export_parses_back)
{
    const char *p = pth("e.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t b;
    bkm_json_t *j = NULL;
    size_t lines = 0;
    make_db(p, "ke", "knl", 10);
    ck_assert_int_eq(bkm_db_open(&db, p, BKM_DB_READONLY, &err), BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_JSON, &b, &err), BKM_OK);
    ck_assert_msg(bkm_json_parse(b.data, &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(j->type, BKM_JSON_ARR);
    ck_assert_uint_eq(j->n_children, 10);
    for (size_t i = 0; i < 10; i++) {
        const bkm_json_t *o = bkm_json_at(j, i), *cfg = bkm_json_get(o, "config"), *ci = bkm_json_get(o, "ci95");
        const char *status = bkm_json_get_str(o, "status");
        ck_assert(bkm_json_get_num(o, "id", -1) > 0);
        ck_assert_ptr_nonnull(cfg);
        ck_assert_int_eq(cfg->type, BKM_JSON_OBJ);
        ck_assert_double_eq(bkm_json_get_num(cfg, "threads", -1), (double)i);
        ck_assert_str_eq(bkm_json_get_str(cfg, "affinity"), "compact,\"1\"");
        ck_assert_str_eq(status, i % 7 == 3 ? "crashed" : "ok");
        ck_assert_double_eq_tol(bkm_json_get_num(o, "median_ms", -1), 10.2 + i, 1e-9);
        ck_assert_double_eq(bkm_json_get_num(o, "n_samples", -1), 5);
        ck_assert_uint_eq(ci->n_children, 2);
        ck_assert_str_eq(bkm_json_get_str(o, "node"), "knl");
        ck_assert_str_eq(bkm_json_get_str(o, "git_revision"), "unknown");
        if (i == 4)   /* a program's binding evidence, embedded as JSON */
            ck_assert_str_eq(bkm_json_get_str(bkm_json_get(bkm_json_get(o, "binding"), "program"), "sha256"), "ab12");
        else
            ck_assert_int_eq(bkm_json_get(o, "binding")->type, BKM_JSON_NULL);
        /* the noise evidence as stored, or null */
        if (i % 2 == 0) {
            ck_assert_int_eq(bkm_json_get(o, "disturbed")->type, BKM_JSON_BOOL);
            ck_assert_int_eq(bkm_json_get(o, "disturbed")->boolean, 1);
            ck_assert_double_eq(bkm_json_get_num(o, "noise_share", -1), 0.4);
            ck_assert_double_eq(bkm_json_get_num(bkm_json_get(bkm_json_get(o, "noise"), "totals"),
                                                 "involuntary_switches", -1), 7);
        } else {
            ck_assert_int_eq(bkm_json_get(o, "disturbed")->type, BKM_JSON_NULL);
            ck_assert_int_eq(bkm_json_get(o, "noise")->type, BKM_JSON_NULL);
        }
    }
    bkm_json_free(j);
    bkm_buf_free(&b);
    /* CSV: header + one row per trial; the config cell is quoted with doubled quotes */
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_CSV, &b, &err), BKM_OK);
    for (const char *s = b.data; (s = strstr(s, "\r\n")) != NULL; s += 2)
        lines++;
    ck_assert_uint_eq(lines, 11);
    ck_assert(strncmp(b.data, "id,sweep,node,workload,status,", 30) == 0);
    ck_assert_ptr_nonnull(strstr(b.data, ",\"{\"\"affinity\"\":\"\"compact,\\\"\"1\\\"\"\"\",\"\"threads\"\":3}\","));
    ck_assert_ptr_nonnull(strstr(b.data, ",crashed,search,0,"));
    ck_assert_ptr_nonnull(strstr(b.data, ",error,disturbed,noise_share,voluntary_switches,involuntary_switches,"
                                         "migrations,steal_share,counters,git_revision,runtime,program,"
                                         "exe_sha256,binding\r\n"));
    ck_assert_ptr_nonnull(strstr(b.data, ",1,0.40000000000000002,1,7,2,0.01,PAPI_TOT_CYC=unavailable;"
                                         "perf::TASK-CLOCK=2000000,unknown,,,,\r\n"));
    /* a trial without evidence: empty cells */
    ck_assert_ptr_nonnull(strstr(b.data, ",,,,,,PAPI_TOT_CYC=unavailable;perf::TASK-CLOCK=1000000,unknown,,,,\r\n"));
    /* a program's trial: runtime, argv (a quote in a word doubled by CSV), hash, the evidence re-serialised */
    ck_assert_ptr_nonnull(strstr(b.data, "perf::TASK-CLOCK=4000000,unknown,libgomp,\"/usr/bin/python3 a \"\"b\"\".py\","
                                         "ab12,\"{\"\"bound\"\":2,"));
    bkm_buf_free(&b);
    /* filters */
    bkm_db_filter_t f = {.node = "haswell"};
    ck_assert_int_eq(bkm_db_export(db, &f, BKM_DB_EXPORT_JSON, &b, &err), BKM_OK);
    ck_assert_int_eq(bkm_json_parse(b.data, &j, &err), BKM_OK);
    ck_assert_uint_eq(j->n_children, 0);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_db_close(db);
}
END_TEST

START_TEST(best_store_and_get)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_best_t b;
    int found = -1;
    ck_assert_int_eq(bkm_db_open(&db, pth("b.sqlite"), BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "alexnet", &b, &found, &err), BKM_OK);
    ck_assert_int_eq(found, 0);
    bkm_db_best_t in = {.node = "knl", .workload = "alexnet", .config_json = "{\"KMP_BLOCKTIME\":\"0\",\"threads\":68}",
                        .median_ms = 50, .ci_lo_ms = 49, .ci_hi_ms = 51, .default_median_ms = 60, .speedup = 1.2,
                        .significant = 1, .evidence_json = "{\"p\":0.0001}"};
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_OK);
    in.median_ms = 45;
    in.significant = 0;
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "alexnet", &b, &found, &err), BKM_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_double_eq(b.median_ms, 45); /* the newest counts */
    ck_assert_int_eq(b.significant, 0);
    ck_assert_double_eq(b.default_median_ms, 60);
    ck_assert_str_eq(b.evidence_json, "{\"p\":0.0001}");
    /* stored without a decision (a fixed round): the sequential figures are unknown */
    ck_assert_ptr_null(b.decision);
    ck_assert(isnan(b.speedup_rci_lo) && isnan(b.not_better_than));
    ck_assert_int_eq(b.confirm_processes, -1);
    ck_assert_int_eq(b.looks, -1);
    bkm_db_best_clear(&b);
    /* with the sequential confirmation's decision */
    in.decision = "not-better";
    in.speedup_rci_lo = in.speedup_rci_hi = NAN;
    in.not_better_than = 1.013;
    in.confirm_processes = 66;
    in.looks = 4;
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "alexnet", &b, &found, &err), BKM_OK);
    ck_assert_str_eq(b.decision, "not-better");
    ck_assert(isnan(b.speedup_rci_lo) && isnan(b.speedup_rci_hi));
    ck_assert_double_eq(b.not_better_than, 1.013);
    ck_assert_int_eq(b.confirm_processes, 66);
    ck_assert_int_eq(b.looks, 4);
    bkm_db_best_clear(&b);
    in.decision = "maybe";
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'maybe'"));
    in.decision = NULL;
    in.median_ms = NAN;
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_EINVAL);
    in.median_ms = 1;
    in.config_json = "not json";
    ck_assert_int_eq(bkm_db_best_store(db, &in, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not json"));
    bkm_db_close(db);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Databases as users keep them: read-only opens write nothing, merge inputs stay identical. */

/* A writer that stores trials @p first..@p first+n-1 of sweep "crash" and dies without closing:
 * the trials are committed in @p p's -wal, not yet in the database file. */
static void crashed_writer(const char *p, int first, int n)
{
    pid_t w = fork();
    int st;
    ck_assert_int_ge(w, 0);
    if (w == 0) {
        bkm_db_t *db = NULL;
        bkm_err_t err = {0};
        int64_t sid;
        if (bkm_db_open(&db, p, BKM_DB_CREATE, &err) < 0)
            _exit(1);
        sid = new_sweep(db, "crash", 0);
        for (int i = first; i < first + n; i++)
            if (put_trial(db, sid, i, &err) < 0)
                _exit(2);
        _exit(0);   /* no bkm_db_close: no checkpoint, the -wal stays */
    }
    ck_assert_int_eq(waitpid(w, &st, 0), w);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crashed writer: status %d", st);
}

static long long fsize(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Everything a read-only open can do, on @p p: schema version, trials, samples, export, best. */
static size_t read_everything(const char *p)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_list_t l;
    bkm_db_best_t b;
    bkm_buf_t out;
    double *ms = NULL;
    size_t n, ns = 0;
    int v = 0, found = 0;
    ck_assert_msg(bkm_db_open(&db, p, BKM_DB_READONLY, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_db_schema_version(db, &v, &err), BKM_OK);
    ck_assert_int_eq(v, BKM_DB_SCHEMA_VERSION);
    ck_assert_int_eq(bkm_db_trials_query(db, NULL, &l, &err), BKM_OK);
    n = l.n;
    if (n > 0) {
        ck_assert_int_eq(bkm_db_trial_samples(db, l.rows[0].id, &ms, &ns, &err), BKM_OK);
        ck_assert_uint_eq(ns, 5);
        bkm_free(ms);
    }
    bkm_db_trial_list_free(&l);
    bkm_buf_init(&out);
    ck_assert_int_eq(bkm_db_export(db, NULL, BKM_DB_EXPORT_JSON, &out, &err), BKM_OK);
    bkm_buf_free(&out);
    ck_assert_int_eq(bkm_db_best_get(db, "knl", "gemm", &b, &found, &err), BKM_OK);
    if (found)
        bkm_db_best_clear(&b);
    ck_assert_int_eq(bkm_db_integrity_check(db, &err), BKM_OK);
    /* read-only means read-only */
    ck_assert_int_ne(put_trial(db, 1, 99, &err), BKM_OK);
    ck_assert_ptr_null(bkm_db_warning(db));
    bkm_db_close(db);
    return n;
}

START_TEST(readonly_open_writes_nothing)
{
    const char *p = pth("ro/r.sqlite"), *wal = pth("ro/r.sqlite-wal"), *shm = pth("ro/r.sqlite-shm");
    long s0, s1;
    unsigned long long h0;
    char d[600];
    make_db(p, "kr", "knl", 6);
    ck_assert(!exists(wal) && !exists(shm));
    /* a read-only file in a read-only folder (root ignores the bits: the checks below prove that
     * nothing was written all the same) */
    snprintf(d, sizeof d, "%s/ro", dir);
    ck_assert_int_eq(chmod(p, 0444), 0);
    ck_assert_int_eq(chmod(d, 0555), 0);
    h0 = file_hash(p, &s0);
    ck_assert_uint_eq(read_everything(p), 6);
    ck_assert_msg(!exists(wal) && !exists(shm), "a read-only open created -wal/-shm");
    ck_assert(file_hash(p, &s1) == h0 && s1 == s0);
    /* a schema-2 file is read as it is: no migration (header bytes unchanged above too) */
    ck_assert_int_eq(bkm_db_validate(p, NULL), BKM_OK);
    ck_assert(!exists(wal) && !exists(shm));
    ck_assert_int_eq(chmod(d, 0755), 0);
}
END_TEST

START_TEST(readonly_open_reads_a_leftover_wal)
{
    const char *p = pth("w.sqlite"), *wal = pth("w.sqlite-wal"), *shm = pth("w.sqlite-shm");
    long s0, s1, w0, w1;
    unsigned long long h0, hw0;
    make_db(p, "kw", "knl", 3);
    crashed_writer(p, 10, 4);
    ck_assert_msg(fsize(wal) > 0, "the crashed writer left no -wal");
    h0 = file_hash(p, &s0);
    hw0 = file_hash(wal, &w0);
    /* with its -shm (as the writer left it), then without (copied without it: SQLite needs one) */
    for (int round = 0; round < 2; round++) {
        ck_assert_uint_eq(read_everything(p), 3 + 4);
        ck_assert(file_hash(p, &s1) == h0 && s1 == s0);
        ck_assert(file_hash(wal, &w1) == hw0 && w1 == w0);
        ck_assert_int_eq(unlink(shm), 0);
    }
}
END_TEST

/* A writer has the database open (its -wal beside its -shm): a read-only open reads its commits
 * through the -shm, and writes nothing. */
START_TEST(readonly_open_beside_a_live_writer)
{
    const char *p = pth("live.sqlite"), *wal = pth("live.sqlite-wal"), *shm = pth("live.sqlite-shm");
    bkm_db_t *rw = NULL;
    bkm_err_t err = {0};
    long s0, s1;
    unsigned long long h0;
    make_db(p, "kv", "knl", 2);
    ck_assert_int_eq(bkm_db_open(&rw, p, 0, &err), BKM_OK);
    ck_assert_int_eq(put_trial(rw, 1, 60, &err), BKM_OK);
    ck_assert(exists(wal) && exists(shm));
    h0 = file_hash(p, &s0);
    ck_assert_uint_eq(read_everything(p), 3);
    ck_assert(file_hash(p, &s1) == h0 && s1 == s0);
    ck_assert_int_eq(put_trial(rw, 1, 61, &err), BKM_OK);   /* the writer goes on */
    ck_assert_uint_eq(read_everything(p), 4);
    bkm_db_close(rw);
    ck_assert(!exists(wal) && !exists(shm));                /* its checkpoint on close still ran */
}
END_TEST

/* While a read-only handle without -wal reads the file as immutable, its read lock keeps the
 * last writer from checkpointing into the file when it closes. */
START_TEST(readonly_open_holds_off_checkpoints)
{
    const char *p = pth("l.sqlite"), *wal = pth("l.sqlite-wal");
    bkm_db_t *ro = NULL, *rw = NULL;
    bkm_err_t err = {0};
    long s0, s1;
    unsigned long long h0;
    pid_t w;
    int st;
    make_db(p, "kl", "knl", 2);
    h0 = file_hash(p, &s0);
    ck_assert_int_eq(bkm_db_open(&ro, p, BKM_DB_READONLY, &err), BKM_OK);
    if ((w = fork()) == 0) {
        int ok = bkm_db_open(&rw, p, 0, &err) == BKM_OK && put_trial(rw, 1, 50, &err) == BKM_OK;
        bkm_db_close(rw);
        _exit(ok ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(w, &st, 0), w);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer: %d", st);
    ck_assert_msg(fsize(wal) > 0, "the writer checkpointed although a reader held the lock");
    ck_assert(file_hash(p, &s1) == h0 && s1 == s0);
    ck_assert_uint_eq(count_trials(ro, 0), 2);   /* the snapshot it opened */
    bkm_db_close(ro);
    ck_assert_uint_eq(read_everything(p), 3);    /* the -wal is read now */
}
END_TEST

START_TEST(merge_leaves_inputs_identical)
{
    const char *a = pth("in/a.sqlite"), *wal = pth("in/a.sqlite-wal"), *out = pth("out.sqlite");
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_merge_stats_t st = {0};
    long s0, s1, w0, w1;
    unsigned long long h0, hw0;
    make_db(a, "ka", "knl", 3);
    crashed_writer(a, 20, 2);
    h0 = file_hash(a, &s0);
    hw0 = file_hash(wal, &w0);
    ck_assert_int_eq(bkm_db_open(&db, out, BKM_DB_CREATE, &err), BKM_OK);
    ck_assert_msg(bkm_db_merge(db, a, &st, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(st.trials_new, 5);   /* the two in the -wal too */
    bkm_db_close(db);
    ck_assert_msg(file_hash(a, &s1) == h0 && s1 == s0, "merge modified its input");
    ck_assert_msg(file_hash(wal, &w1) == hw0 && w1 == w0, "merge checkpointed the input's -wal");
    /* without a -wal: no side file appears */
    make_db(pth("b.sqlite"), "kb", "knl", 2);
    h0 = file_hash(pth("b.sqlite"), &s0);
    ck_assert_int_eq(bkm_db_open(&db, out, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_db_merge(db, pth("b.sqlite"), &st, &err), BKM_OK);
    bkm_db_close(db);
    ck_assert(file_hash(pth("b.sqlite"), &s1) == h0 && s1 == s0);
    ck_assert(!exists(pth("b.sqlite-wal")) && !exists(pth("b.sqlite-shm")));
}
END_TEST

START_TEST(merge_refuses_itself_under_other_names)
{
    const char *out = pth("x/all.sqlite");
    char other[4][600];
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    int same = 0;
    long s0, s1;
    unsigned long long h0;
    make_db(out, "ko", "knl", 2);
    ck_assert_int_eq(symlink("all.sqlite", pth("x/link.sqlite")), 0);
    ck_assert_int_eq(link(out, pth("hard.sqlite")), 0);
    snprintf(other[0], sizeof other[0], "%s/x/../x/all.sqlite", dir);
    snprintf(other[1], sizeof other[1], "%s", pth("x/link.sqlite"));
    snprintf(other[2], sizeof other[2], "%s", pth("hard.sqlite"));
    snprintf(other[3], sizeof other[3], "%s", out);
    ck_assert_int_eq(bkm_db_open(&db, out, 0, &err), BKM_OK);
    h0 = file_hash(out, &s0);
    for (int i = 0; i < 4; i++) {
        bkm_db_same_file(other[i], out, &same);
        ck_assert_msg(same, "%s not recognised as %s", other[i], out);
        ck_assert_int_eq(bkm_db_merge(db, other[i], NULL, &err), BKM_EINVAL);
        ck_assert_msg(strstr(err.msg, other[i]) && strstr(err.msg, out), "message '%s' names not both", err.msg);
    }
    bkm_db_close(db);
    ck_assert(file_hash(out, &s1) == h0 && s1 == s0);
    make_db(pth("y.sqlite"), "ky", "knl", 1);
    bkm_db_same_file(pth("y.sqlite"), out, &same);
    ck_assert_int_eq(same, 0);
    bkm_db_same_file(pth("missing.sqlite"), out, &same);
    ck_assert_int_eq(same, 0);
}
END_TEST

/* A NaN or infinite sample is refused by name before anything is written (the tuner stores
 * such a trial as failed, without samples). */
START_TEST(non_finite_sample_is_refused)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_db_trial_t t;
    double ms[3] = {1.0, INFINITY, 2.0};
    int64_t sid;
    ck_assert_int_eq(bkm_db_open(&db, pth("n.sqlite"), BKM_DB_CREATE, &err), BKM_OK);
    sid = new_sweep(db, "kn", 0);
    bkm_db_trial_init(&t);
    t.sweep_id = sid;
    t.config_json = "{\"threads\":1}";
    t.samples_ms = ms;
    t.n_samples = 3;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, "non-finite sample 1") != NULL, "%s", err.msg);
    ms[1] = NAN;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_EINVAL);
    ck_assert_uint_eq(count_trials(db, sid), 0);
    t.status = BKM_TRIAL_FAILED;
    t.error = "non-finite sample 1 in samples_ms (nan)";
    t.n_samples = 0;
    ck_assert_int_eq(bkm_db_trial_insert(db, &t, NULL, NULL, &err), BKM_OK);
    ck_assert_uint_eq(count_trials(db, sid), 1);
    bkm_db_close(db);
}
END_TEST

START_TEST(fs_classify_table)
{
    static const struct {
        unsigned long magic;
        const char *name;
        int kind;
    } t[] = {
        {0x6969, "nfs", BKM_DB_FS_SHARED},           {0x0BD00BD0, "lustre", BKM_DB_FS_SHARED},
        {0x47504653, "gpfs", BKM_DB_FS_SHARED},      {0xFF534D42, "cifs", BKM_DB_FS_SHARED},
        {0xFE534D42, "smb2", BKM_DB_FS_SHARED},      {0x19830326, "beegfs", BKM_DB_FS_SHARED},
        {0x00C36400, "ceph", BKM_DB_FS_SHARED},      {0x65735546, "fuse", BKM_DB_FS_MAYBE_SHARED},
        {0x01021997, "9p", BKM_DB_FS_MAYBE_SHARED},  {0x6A656A63, "virtiofs", BKM_DB_FS_MAYBE_SHARED},
        {0xEF53, "local", BKM_DB_FS_LOCAL} /* ext4 */, {0x58465342, "local", BKM_DB_FS_LOCAL} /* xfs */,
        {0x01021994, "local", BKM_DB_FS_LOCAL} /* tmpfs */, {0x794C7630, "local", BKM_DB_FS_LOCAL} /* overlay */,
        {0, "local", BKM_DB_FS_LOCAL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *name = NULL;
        ck_assert_int_eq(bkm_db_fs_classify(t[i].magic, &name), t[i].kind);
        ck_assert_str_eq(name, t[i].name);
    }
    /* a sign-extended 32-bit f_type (statfs on some ABIs) is the same file system */
    ck_assert_int_eq(bkm_db_fs_classify(0xFFFFFFFFFF534D42UL, NULL), BKM_DB_FS_SHARED);
}
END_TEST

/* Schema 4: a trial's per-layer times and the gate's runs come back in the report document, the
 * sweep's label too, and a resumed sweep takes a new label. */
START_TEST(report_document_and_gate_runs)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t out;
    bkm_json_t *doc = NULL;
    bkm_db_trial_t t;
    bkm_db_filter_t f = {0};
    double ms[1] = {1.5};
    bkm_db_sweep_t s = {.key = "kl", .node = "knl", .workload = "alexnet", .label = "<b>first</b>"};
    bkm_db_gate_run_t g = {.mode = "baseline", .hostname = "h", .fingerprint = "1p/1n/2c/2t/avx512",
                           .git_revision = "abc", .reference = "base.json", .threshold = 0.1, .alpha = 0.01,
                           .regressions = 1, .verdict = "regression",
                           .results_json = "[{\"workload\":\"gemm\",\"ratio\":1.5,\"regression\":true}]"};
    int64_t id = 0;
    const bkm_json_t *x;
    ck_assert_msg(bkm_db_open(&db, pth("r.sqlite"), BKM_DB_CREATE, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_db_sweep_open(db, &s, 0, &id, NULL, &err) == BKM_OK, "%s", err.msg);
    s.label = "second";
    ck_assert_msg(bkm_db_sweep_open(db, &s, 0, &id, NULL, &err) == BKM_OK, "%s", err.msg);
    bkm_db_trial_init(&t);
    t.sweep_id = id;
    t.config_json = "{\"threads\":2}";
    t.samples_ms = ms;
    t.n_samples = 1;
    t.median_ms = 1.5;
    t.layers_json = "[{\"layer\":\"conv1\",\"direction\":\"fwd\",\"ms\":0.5}]";
    ck_assert_msg(bkm_db_trial_insert(db, &t, NULL, NULL, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_db_gate_store(db, &g, &err) == BKM_OK, "%s", err.msg);
    g.results_json = NULL;
    ck_assert_int_eq(bkm_db_gate_store(db, &g, &err), BKM_EINVAL);
    bkm_buf_init(&out);
    f.workload = "alexnet";
    ck_assert_msg(bkm_db_report_json(db, &f, &out, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&out), &doc, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq((int)bkm_json_get_num(doc, "schema", 0), BKM_DB_SCHEMA_VERSION);
    x = bkm_json_at(bkm_json_get(doc, "sweeps"), 0);
    ck_assert_str_eq(bkm_json_get_str(x, "label"), "second");
    x = bkm_json_at(bkm_json_get(doc, "trials"), 0);
    ck_assert_str_eq(bkm_json_get_str(bkm_json_at(bkm_json_get(x, "layers"), 0), "layer"), "conv1");
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_get(x, "config"), "threads", 0), 2);
    x = bkm_json_at(bkm_json_get(doc, "gates"), 0);
    ck_assert_str_eq(bkm_json_get_str(x, "verdict"), "regression");
    ck_assert(bkm_json_get(bkm_json_at(bkm_json_get(x, "results"), 0), "regression")->boolean);
    ck_assert_ptr_null(bkm_json_at(bkm_json_get(doc, "gates"), 1));
    bkm_json_free(doc);
    doc = NULL;
    /* another workload: no sweep, no trial; the gate history is the database's */
    bkm_buf_free(&out);
    bkm_buf_init(&out);
    f.workload = "gemm";
    ck_assert_msg(bkm_db_report_json(db, &f, &out, &err) == BKM_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&out), "\"sweeps\":[],\"trials\":[]"));
    bkm_buf_free(&out);
    bkm_db_close(db);
}
END_TEST

static Suite *results_suite(void)
{
    Suite *s = suite_create("results");
    TCase *tc = tcase_create("db");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, create_and_reopen);
    tcase_add_test(tc, migrates_version_1);
    tcase_add_test(tc, migrates_version_2);
    tcase_add_test(tc, refuses_foreign_and_damaged_files);
    tcase_add_test(tc, resume_and_duplicates);
    tcase_add_test(tc, trial_is_one_transaction);
    tcase_add_test(tc, two_writers_at_once);
    tcase_add_test(tc, kill_9_then_resume);
    tcase_add_test(tc, merge_is_idempotent);
    tcase_add_test(tc, merge_refuses_crafted_sources);
    tcase_add_test(tc, merge_is_bounded);
    tcase_add_test(tc, store_refuses_multi_line_names);
    tcase_add_test(tc, export_parses_back);
    tcase_add_test(tc, counter_states_round_trip);
    tcase_add_test(tc, legacy_counters_are_not_measurements);
    tcase_add_test(tc, best_store_and_get);
    tcase_add_test(tc, report_document_and_gate_runs);
    tcase_add_test(tc, readonly_open_writes_nothing);
    tcase_add_test(tc, readonly_open_reads_a_leftover_wal);
    tcase_add_test(tc, readonly_open_holds_off_checkpoints);
    tcase_add_test(tc, readonly_open_beside_a_live_writer);
    tcase_add_test(tc, merge_leaves_inputs_identical);
    tcase_add_test(tc, merge_refuses_itself_under_other_names);
    tcase_add_test(tc, fs_classify_table);
    tcase_add_test(tc, non_finite_sample_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(results_suite)
