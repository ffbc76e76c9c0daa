/* SPDX-License-Identifier: MIT */
/* Opening the results database: header check before SQLite touches the file, atomic creation,
 * WAL, busy handling, quick_check and the ordered schema migrations. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "results_int.h"

/* Schema migrations, in order: step i brings the database from version i to version i + 1.
 * Each runs in its own transaction together with the user_version update. Never edit a step
 * that has shipped; append a new one and raise BKM_DB_SCHEMA_VERSION. */
static const char *const migrations[BKM_DB_SCHEMA_VERSION] = {
    /* 0 -> 1: the initial schema. Times are ISO-8601 UTC text, durations milliseconds. */
    "CREATE TABLE bkm_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO bkm_meta(key, value) VALUES('application', 'bkm results database'),"
    "  ('created_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'));"
    "CREATE TABLE host(id INTEGER PRIMARY KEY, hostname TEXT NOT NULL, cpu_model TEXT,"
    "  topology_json TEXT, fingerprint TEXT NOT NULL DEFAULT '',"
    "  first_seen TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
    "  UNIQUE(hostname, fingerprint));"
    "CREATE TABLE sweep(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, key TEXT NOT NULL,"
    "  command TEXT, label TEXT, node TEXT NOT NULL, workload TEXT NOT NULL, strategy TEXT,"
    "  git_revision TEXT NOT NULL DEFAULT 'unknown', host_id INTEGER REFERENCES host(id),"
    "  started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL DEFAULT 'running'"
    "  CHECK(status IN ('running', 'done', 'partial', 'failed')));"
    "CREATE INDEX sweep_by_key ON sweep(key, id);"
    "CREATE TABLE trial(id INTEGER PRIMARY KEY,"
    "  sweep_id INTEGER NOT NULL REFERENCES sweep(id) ON DELETE CASCADE,"
    "  config_key TEXT NOT NULL, config_json TEXT NOT NULL, status TEXT NOT NULL"
    "  CHECK(status IN ('ok', 'crashed', 'timeout', 'failed', 'binding-mismatch')),"
    "  error TEXT, stderr_tail TEXT, exit_info TEXT, started_at TEXT, finished_at TEXT,"
    "  n_samples INTEGER NOT NULL DEFAULT 0, median_ms REAL, min_ms REAL, mad_ms REAL,"
    "  ci_lo_ms REAL, ci_hi_ms REAL, gflops REAL, check_json TEXT, binding_json TEXT,"
    "  effective_json TEXT, impl TEXT,"
    "  role TEXT NOT NULL DEFAULT 'search' CHECK(role IN ('search', 'confirm')),"
    "  round INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE(sweep_id, role, round, config_key));"
    "CREATE TABLE sample(trial_id INTEGER NOT NULL REFERENCES trial(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL, ms REAL NOT NULL, PRIMARY KEY(trial_id, idx)) WITHOUT ROWID;"
    "CREATE TABLE counter(trial_id INTEGER NOT NULL REFERENCES trial(id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL, value REAL, unavailable TEXT, PRIMARY KEY(trial_id, name)) WITHOUT ROWID;",
    /* 1 -> 2: best-known settings with their evidence, and merge provenance of sweeps. */
    "ALTER TABLE sweep ADD COLUMN source_file TEXT;"
    "ALTER TABLE sweep ADD COLUMN merged_at TEXT;"
    "CREATE TABLE best(id INTEGER PRIMARY KEY, node TEXT NOT NULL, workload TEXT NOT NULL,"
    "  sweep_id INTEGER REFERENCES sweep(id) ON DELETE SET NULL, config_json TEXT NOT NULL,"
    "  median_ms REAL NOT NULL, ci_lo_ms REAL, ci_hi_ms REAL, default_median_ms REAL,"
    "  speedup REAL, significant INTEGER NOT NULL, evidence_json TEXT, created_at TEXT NOT NULL);"
    "CREATE INDEX best_by_node ON best(node, workload, id);"
    "CREATE INDEX trial_by_sweep_status ON trial(sweep_id, status);",
    /* 2 -> 3: sweep status 'interrupted' (stopped by SIGINT/SIGTERM; the same command resumes
     * it). SQLite cannot alter a CHECK constraint: the table is rebuilt (new table, copy, drop,
     * rename) with foreign keys off, and foreign_key_check runs before the commit. */
    "CREATE TABLE sweep_v3(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, key TEXT NOT NULL,"
    "  command TEXT, label TEXT, node TEXT NOT NULL, workload TEXT NOT NULL, strategy TEXT,"
    "  git_revision TEXT NOT NULL DEFAULT 'unknown', host_id INTEGER REFERENCES host(id),"
    "  started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL DEFAULT 'running'"
    "  CHECK(status IN ('running', 'done', 'partial', 'interrupted', 'failed')),"
    "  source_file TEXT, merged_at TEXT);"
    "INSERT INTO sweep_v3(id, uuid, key, command, label, node, workload, strategy, git_revision, host_id,"
    "  started_at, finished_at, status, source_file, merged_at)"
    "  SELECT id, uuid, key, command, label, node, workload, strategy, git_revision, host_id,"
    "  started_at, finished_at, status, source_file, merged_at FROM sweep;"
    "DROP TABLE sweep;"
    "ALTER TABLE sweep_v3 RENAME TO sweep;"
    "CREATE INDEX sweep_by_key ON sweep(key, id);",
    /* 3 -> 4: noise evidence of each trial from the OS (rusage, /proc schedstat/sched/stat: the
     * worker's "noise" object), its disturbed share and mark (NULL: not measured). */
    "ALTER TABLE trial ADD COLUMN noise_json TEXT;"
    "ALTER TABLE trial ADD COLUMN noise_share REAL;"
    "ALTER TABLE trial ADD COLUMN disturbed INTEGER CHECK(disturbed IN (0, 1));",
    /* 4 -> 5: the per-layer times of a trial (a network workload run with layers=1), and the
     * runs of the regression gate (`tune regress`), shown as history by `tune report`. */
    "ALTER TABLE trial ADD COLUMN layers_json TEXT;"
    "CREATE TABLE gate_run(id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, mode TEXT NOT NULL,"
    "  hostname TEXT, fingerprint TEXT, git_revision TEXT, reference TEXT, threshold REAL, alpha REAL,"
    "  regressions INTEGER NOT NULL, verdict TEXT NOT NULL, results_json TEXT NOT NULL);",
    /* 5 -> 6: the counting domain of each counter and its check against the OS's own figure for
     * the same threads and region (os_value from os_source); disagrees is NULL when they agree or
     * nothing was checked, else why they contradict (value then holds PAPI's figure, which is not
     * a measurement to present). Older rows: see BKM__DB_COUNTER_LEGACY_FIX. */
    "ALTER TABLE counter ADD COLUMN domain TEXT;"
    "ALTER TABLE counter ADD COLUMN os_value REAL;"
    "ALTER TABLE counter ADD COLUMN os_source TEXT;"
    "ALTER TABLE counter ADD COLUMN disagrees TEXT;" BKM__DB_COUNTER_LEGACY_FIX("0"),
    /* 6 -> 7: what the sequential confirmation decided (docs/measurement.md, "What is decided"):
     * 'claimed', 'not-better' (no candidate better by more than not_better_than) or 'undecided'
     * at the budget; the winner's repeated confidence interval; the confirmation processes and
     * looks it took. NULL in rows stored before: a fixed round, decided by significant alone. */
    "ALTER TABLE best ADD COLUMN decision TEXT CHECK(decision IN ('claimed', 'not-better', 'undecided'));"
    "ALTER TABLE best ADD COLUMN speedup_rci_lo REAL;"
    "ALTER TABLE best ADD COLUMN speedup_rci_hi REAL;"
    "ALTER TABLE best ADD COLUMN not_better_than REAL;"
    "ALTER TABLE best ADD COLUMN confirm_processes INTEGER;"
    "ALTER TABLE best ADD COLUMN looks INTEGER;",
};

int bkm__db_schema_reference(int version, sqlite3 **mem, bkm_err_t *err)
{
    int rc;
    *mem = NULL;
    if (version < 1 || version > BKM_DB_SCHEMA_VERSION)
        return bkm_err_set(err, BKM_ENOTSUP, "no bkm schema of version %d (this tune knows 1..%d)", version,
                           BKM_DB_SCHEMA_VERSION);
    if ((rc = sqlite3_open_v2(":memory:", mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL)) != SQLITE_OK) {
        sqlite3_close(*mem);
        *mem = NULL;
        return bkm_err_set(err, BKM_EDEP, "in-memory SQLite database: %s", sqlite3_errstr(rc));
    }
    for (int v = 0; v < version; v++)
        if ((rc = sqlite3_exec(*mem, migrations[v], NULL, NULL, NULL)) != SQLITE_OK) {
            bkm_err_set(err, BKM_EDEP, "bkm's schema version %d: migration %d: %s", version, v + 1,
                        sqlite3_errmsg(*mem));
            sqlite3_close(*mem);
            *mem = NULL;
            return BKM_EDEP;
        }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
int bkm__db_err(bkm_db_t *db, int rc, const char *what, bkm_err_t *err)
{
    const char *msg = db && db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc);
    const char *path = db && db->path ? db->path : "(database)";
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return bkm_err_set(err, BKM_ECORRUPT, "%s is damaged or not a bkm database (%s: %s)", path, what, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return bkm_err_set(err, BKM_EIO, "%s: %s: still locked by another process after %d ms (%s)", path,
                           what, BKM_DB_BUSY_TIMEOUT_MS, msg);
    case SQLITE_NOMEM: return bkm_err_set(err, BKM_ENOMEM, "%s: %s: out of memory", path, what);
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_PERM: return bkm_err_set(err, BKM_EIO, "%s: %s: %s", path, what, msg);
    default: return bkm_err_set(err, BKM_EDEP, "%s: %s: SQLite error %d: %s", path, what, rc, msg);
    }
}

int bkm__db_exec(bkm_db_t *db, const char *sql, bkm_err_t *err)
{
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? BKM_OK : bkm__db_err(db, rc, "exec", err);
}

int bkm__db_prepare(bkm_db_t *db, const char *sql, sqlite3_stmt **st, bkm_err_t *err)
{
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    return rc == SQLITE_OK ? BKM_OK : bkm__db_err(db, rc, "prepare", err);
}

int bkm__db_has_column(bkm_db_t *db, const char *schema, const char *table, const char *col)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    bkm__bind_text(st, 1, table);
    bkm__bind_text(st, 2, schema);
    bkm__bind_text(st, 3, col);
    if (sqlite3_step(st) == SQLITE_ROW)
        has = sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    return has;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int bkm__db_begin(bkm_db_t *db, bkm_err_t *err)
{
    /* The busy handler covers most waits, but some SQLITE_BUSY cases in WAL mode (another
     * connection running recovery) return at once, so BEGIN IMMEDIATE is retried here too. */
    uint64_t deadline = bkm_now_ns() + (uint64_t)BKM_DB_BUSY_TIMEOUT_MS * 1000000u;
    int rc;
    for (;;) {
        rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY || bkm_now_ns() > deadline)
            break;
        sleep_ms(5);
    }
    return rc == SQLITE_OK ? BKM_OK : bkm__db_err(db, rc, "begin transaction", err);
}

int bkm__db_commit(bkm_db_t *db, bkm_err_t *err)
{
    int rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int st = bkm__db_err(db, rc, "commit", err);
        bkm__db_rollback(db);
        return st;
    }
    return BKM_OK;
}

void bkm__db_rollback(bkm_db_t *db)
{
    if (db && db->h && !sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

int bkm__bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int bkm__bind_double(sqlite3_stmt *st, int i, double v)
{
    return isfinite(v) ? sqlite3_bind_double(st, i, v) : sqlite3_bind_null(st, i);
}

char *bkm__col_strdup(sqlite3_stmt *st, int i, int *oom)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    char *d;
    if (s == NULL)
        return NULL;
    d = bkm_strdup((const char *)s);
    if (d == NULL)
        *oom = 1;
    return d;
}

double bkm__col_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* ---------------------------------------------------------------------------------------- */
static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Read the 100-byte SQLite header with plain read(2): the file is never modified and SQLite
 * never creates -wal/-shm files next to a foreign file. *exists = 0 for a missing file. */
static int check_header(const char *path, int *exists, int *version, bkm_err_t *err)
{
    unsigned char h[100];
    struct stat sb;
    ssize_t n = 0, r;
    int ret = BKM_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO must not block */
    *exists = 0;
    if (fd < 0) {
        if (errno == ENOENT)
            return BKM_OK;
        return bkm_err_set(err, BKM_EIO, "cannot read results database %s: %s", path, strerror(errno));
    }
    *exists = 1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ret = bkm_err_set(err, BKM_EINVAL, "results database %s is not a regular file", path);
        goto out;
    }
    while (n < (ssize_t)sizeof h && (r = read(fd, h + n, sizeof h - (size_t)n)) > 0)
        n += r;
    if (n == 0) {
        ret = bkm_err_set(err, BKM_ECORRUPT, "%s is an empty file, not a bkm results database", path);
        goto out;
    }
    if (n < (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0) {
        ret = bkm_err_set(err, BKM_ECORRUPT, "%s is not a bkm results database (not an SQLite file)", path);
        goto out;
    }
    if (be32(h + 68) != (uint32_t)BKM_DB_APPLICATION_ID) {
        ret = bkm_err_set(err, BKM_ECORRUPT,
                          "%s is an SQLite database but not a bkm results database (application_id 0x%08x, "
                          "expected 0x%08x)", path, (unsigned)be32(h + 68), (unsigned)BKM_DB_APPLICATION_ID);
        goto out;
    }
    *version = (int)be32(h + 60);
    if (*version > BKM_DB_SCHEMA_VERSION) {
        ret = bkm_err_set(err, BKM_ENOTSUP, "%s has schema version %d; this tune knows versions up to %d "
                          "(use a newer bkm)", path, *version, BKM_DB_SCHEMA_VERSION);
        goto out;
    }
out:
    close(fd);
    return ret;
}

/* mkdir -p of the folder that holds @p path. */
static int make_parent(const char *path, bkm_err_t *err)
{
    char *dir = bkm_strdup(path);
    int ret = BKM_OK;
    char *slash, *p;
    if (dir == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        goto out;
    *slash = '\0';
    for (p = dir + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            ret = bkm_err_set(err, BKM_EIO, "cannot create folder %s for results database %s: %s", dir, path,
                              strerror(errno));
            goto out;
        }
        *p = c;
        if (c == '\0')
            break;
    }
out:
    bkm_free(dir);
    return ret;
}

static int user_version(bkm_db_t *db, int *v, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret = bkm__db_prepare(db, "PRAGMA user_version", &st, err);
    int rc;
    if (ret < 0)
        return ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int(st, 0);
    else
        ret = bkm__db_err(db, rc, "read schema version", err);
    sqlite3_finalize(st);
    return ret;
}

/* Does any row break a foreign key (PRAGMA foreign_key_check)? BKM_ECORRUPT naming the table. */
static int foreign_keys_check(bkm_db_t *db, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret = bkm__db_prepare(db, "PRAGMA foreign_key_check", &st, err), rc;
    if (ret < 0)
        return ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        ret = bkm_err_set(err, BKM_ECORRUPT, "%s: table %s has a row (rowid %lld) whose %s is missing", db->path,
                          (const char *)sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1),
                          (const char *)sqlite3_column_text(st, 2));
    else if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "foreign_key_check", err);
    sqlite3_finalize(st);
    return ret;
}

/* Apply migrations above the current version, one transaction each. The version is read again
 * inside the write transaction, so two processes opening an old database migrate it once.
 * Foreign keys are off while migrating (a table rebuild drops the referenced table, which would
 * otherwise cascade) and checked before each commit. */
static int migrate(bkm_db_t *db, int target, bkm_err_t *err)
{
    int ret = BKM_OK;
    if ((ret = bkm__db_exec(db, "PRAGMA foreign_keys = OFF", err)) < 0)
        return ret;
    for (;;) {
        int v = 0;
        char sql[64];
        if ((ret = bkm__db_begin(db, err)) < 0)
            goto out;
        if ((ret = user_version(db, &v, err)) < 0)
            goto fail;
        if (v >= target) {
            bkm__db_rollback(db);
            break;
        }
        if ((ret = bkm__db_exec(db, migrations[v], err)) < 0 || (ret = foreign_keys_check(db, err)) < 0) {
            bkm_err_prefix(err, "migrating %s from schema version %d to %d", db->path, v, v + 1);
            goto fail;
        }
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
        if ((ret = bkm__db_exec(db, sql, err)) < 0 || (ret = bkm__db_commit(db, err)) < 0)
            goto fail;
    }
    goto out;
fail:
    bkm__db_rollback(db);
out:
    /* on for every open handle (open_existing); a fresh database's build handle is closed next */
    if (ret == BKM_OK)
        return bkm__db_exec(db, "PRAGMA foreign_keys = ON", err);
    sqlite3_exec(db->h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);   /* keep the first error */
    return ret;
}

/* Append @p path to @p uri as the path of a "file:" URI: '%', '?' and '#' escaped; an absolute
 * path gets an empty authority ("file:///abs"), so that "//x" is never read as a host. */
static void uri_of(bkm_buf_t *uri, const char *path, const char *query)
{
    bkm_buf_puts(uri, path[0] == '/' ? "file://" : "file:");
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            bkm_buf_printf(uri, "%%%02X", (unsigned)(unsigned char)*p);
        else
            bkm_buf_append(uri, p, 1);
    }
    if (query)
        bkm_buf_puts(uri, query);
}

/* Open @p path through a URI (URI filenames also let ATTACH take "?mode=ro"). */
static int open_handle(bkm_db_t *db, const char *path, const char *query, int sqlite_flags, bkm_err_t *err)
{
    bkm_buf_t uri;
    int rc;
    bkm_buf_init(&uri);
    uri_of(&uri, path, query);
    if (uri.oom) {
        bkm_buf_free(&uri);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
    rc = sqlite3_open_v2(uri.data, &db->h, sqlite_flags | SQLITE_OPEN_URI, NULL);
    bkm_buf_free(&uri);
    if (rc != SQLITE_OK)
        return bkm__db_err(db, rc, "open", err);
    sqlite3_extended_result_codes(db->h, 0);
    sqlite3_busy_timeout(db->h, BKM_DB_BUSY_TIMEOUT_MS);
    return BKM_OK;
}

/* Size of "<path><suffix>", or -1 when it does not exist. */
static long long side_file_size(const char *path, const char *suffix)
{
    char buf[4096];
    struct stat sb;
    snprintf(buf, sizeof buf, "%s%s", path, suffix);
    return stat(buf, &sb) == 0 ? (long long)sb.st_size : -1;
}

int bkm__db_ro_uri(const char *path, bkm_buf_t *uri, int *lock_fd, bkm_err_t *err)
{
    long long wal;
    int ret;
    *lock_fd = -1;
    /* Lock first, then look: a writer that closes meanwhile either finished its checkpoint and
     * deleted the -wal before the lock (the file is then complete), or cannot checkpoint. */
    if ((ret = bkm__db_shared_lock(path, lock_fd, err)) < 0)
        return ret;
    /* A -wal with commits, or one beside its -shm (a writer has the database open: its automatic
     * checkpoints are coordinated through the -shm only), is read the normal way. */
    wal = side_file_size(path, "-wal");
    if (wal > 0 || (wal == 0 && side_file_size(path, "-shm") >= 0)) {
        close(*lock_fd);
        *lock_fd = -1;
        uri_of(uri, path, "?mode=ro");
    } else {
        uri_of(uri, path, "?immutable=1");
    }
    if (uri->oom) {
        if (*lock_fd >= 0)
            close(*lock_fd);
        *lock_fd = -1;
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
    return BKM_OK;
}

void bkm__db_ro_hint(const char *path, bkm_err_t *err)
{
    if (err == NULL || side_file_size(path, "-wal") <= 0 || side_file_size(path, "-shm") >= 0)
        return;
    bkm_err_prefix(err, "%s has a -wal file (%lld bytes of commits not yet in the database file) but no -shm "
                   "index, which SQLite must create to read it and cannot here (read-only folder?): copy %s and "
                   "%s-wal to a writable folder and read them there", path, side_file_size(path, "-wal"), path,
                   path);
}

/* Create a complete, empty bkm database at @p path: built under a temporary name in rollback
 * mode (so the marker and schema are in the main file, never only in a -wal), switched to WAL,
 * then linked into place. link(2) fails if another process created the database meanwhile; then
 * that one is used. */
static int create_db(const char *path, int target, bkm_err_t *err)
{
    bkm_db_t tmp = {0};
    size_t n = strlen(path) + 16;
    int ret, fd = -1;
    char sql[64];
    if ((ret = make_parent(path, err)) < 0)
        return ret;
    tmp.path = bkm_malloc(n);
    if (tmp.path == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    snprintf(tmp.path, n, "%s.new-XXXXXX", path);
    fd = mkstemp(tmp.path);
    if (fd < 0) {
        ret = bkm_err_set(err, BKM_EIO, "cannot create results database %s: %s", path, strerror(errno));
        bkm_free(tmp.path);
        return ret;
    }
    close(fd);
    if ((ret = open_handle(&tmp, tmp.path, NULL, SQLITE_OPEN_READWRITE, err)) < 0)
        goto out;
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d", (int)BKM_DB_APPLICATION_ID);
    if ((ret = bkm__db_exec(&tmp, sql, err)) < 0 || (ret = migrate(&tmp, target, err)) < 0 ||
        (ret = bkm__db_exec(&tmp, "PRAGMA journal_mode = WAL", err)) < 0)
        goto out;
    sqlite3_close(tmp.h);
    tmp.h = NULL;
    if (link(tmp.path, path) != 0 && errno != EEXIST)
        ret = bkm_err_set(err, BKM_EIO, "cannot create results database %s: %s", path, strerror(errno));
out:
    if (tmp.h)
        sqlite3_close(tmp.h);
    unlink(tmp.path);
    bkm_free(tmp.path);
    return ret;
}

/* Run a check pragma (quick_check / integrity_check) that answers "ok" or the problems. */
static int check_pragma(bkm_db_t *db, const char *pragma, const char *what, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret = bkm__db_prepare(db, pragma, &st, err);
    int rc;
    if (ret < 0)
        return ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(st, 0);
        if (r == NULL || strcmp(r, "ok") != 0)
            ret = bkm_err_set(err, BKM_ECORRUPT, "%s is damaged (%s): %s", db->path, what, r ? r : "(no result)");
    } else {
        ret = bkm__db_err(db, rc, what, err);
    }
    sqlite3_finalize(st);
    return ret;
}

/* 1 when "<path><suffix>" exists. */
static int side_file_exists(const char *path, const char *suffix)
{
    return side_file_size(path, suffix) >= 0;
}

/* quick_check through an immutable read-only connection: it creates no -wal/-shm file, so a
 * damaged file is refused untouched. Only valid while no -wal exists (nobody has the database
 * open and nothing is left to recover); the caller re-checks through a normal connection when
 * a -wal appeared meanwhile. */
static int prescreen(bkm_db_t *db, bkm_err_t *err)
{
    bkm_db_t ro = {.path = db->path};
    int ret = open_handle(&ro, db->path, "?immutable=1", SQLITE_OPEN_READONLY, err);
    if (ret == BKM_OK)
        ret = check_pragma(&ro, "PRAGMA quick_check(1)", "quick_check", err);
    if (ro.h)
        sqlite3_close(ro.h);
    return ret;
}

/* Read-only: immutable (with the shared lock) or mode=ro, never anything written. */
static int open_readonly(bkm_db_t *db, bkm_err_t *err)
{
    bkm_buf_t uri;
    int ret, rc;
    bkm_buf_init(&uri);
    if ((ret = bkm__db_ro_uri(db->path, &uri, &db->lock_fd, err)) < 0)
        goto out;
    rc = sqlite3_open_v2(uri.data, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc != SQLITE_OK) {
        ret = bkm__db_err(db, rc, "open read-only", err);
        goto out;
    }
    sqlite3_extended_result_codes(db->h, 0);
    sqlite3_busy_timeout(db->h, BKM_DB_BUSY_TIMEOUT_MS);
    if ((ret = check_pragma(db, "PRAGMA quick_check(1)", "quick_check", err)) < 0)
        goto out;
    ret = bkm__db_exec(db, "PRAGMA foreign_keys = ON", err);
out:
    if (ret < 0 && ret != BKM_ECORRUPT)
        bkm__db_ro_hint(db->path, err);
    bkm_buf_free(&uri);
    return ret;
}

/* Open an existing file whose header passed check_header. */
static int open_existing(bkm_db_t *db, int target, bkm_err_t *err)
{
    int ret, v = 0, checked = 0;
    if (db->readonly) {
        if ((ret = open_readonly(db, err)) < 0)
            return ret;
    } else {
        if (!side_file_exists(db->path, "-wal")) {
            ret = prescreen(db, err);
            if (ret < 0 && (ret != BKM_ECORRUPT || !side_file_exists(db->path, "-wal")))
                return ret;
            checked = ret == BKM_OK;
        }
        if ((ret = open_handle(db, db->path, NULL, SQLITE_OPEN_READWRITE, err)) < 0)
            return ret;
        if ((ret = bkm__db_exec(db, "PRAGMA foreign_keys = ON", err)) < 0)
            return ret;
        if (!checked && (ret = check_pragma(db, "PRAGMA quick_check(1)", "quick_check", err)) < 0)
            return ret;
        if ((ret = bkm__db_exec(db, "PRAGMA journal_mode = WAL", err)) < 0 ||
            (ret = bkm__db_exec(db, "PRAGMA synchronous = NORMAL", err)) < 0)
            return ret;
    }
    if ((ret = user_version(db, &v, err)) < 0)
        return ret;
    if (v > BKM_DB_SCHEMA_VERSION)
        return bkm_err_set(err, BKM_ENOTSUP, "%s has schema version %d; this tune knows versions up to %d",
                           db->path, v, BKM_DB_SCHEMA_VERSION);
    if (v < target) {
        if (db->readonly && v >= BKM_DB_SCHEMA_READ_MIN)
            return BKM_OK;   /* readable as it is */
        if (db->readonly)
            return bkm_err_set(err, BKM_ENOTSUP, "%s has schema version %d, not %d: a read-write open migrates it "
                               "(a `tune` sweep with --db %s)", db->path, v, target, db->path);
        return migrate(db, target, err);
    }
    return BKM_OK;
}

/* Open or create @p path and bring it to schema version @p target. */
static int db_open_version(bkm_db_t **out, const char *path, unsigned flags, int target, bkm_err_t *err)
{
    bkm_db_t *db = NULL;
    int ret, exists = 0, version = 0;
    char warning[sizeof db->warning] = "";
    *out = NULL;
    if (path == NULL || path[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "empty results database path");
    if ((ret = check_header(path, &exists, &version, err)) < 0)
        return ret;
    if (!exists && (!(flags & BKM_DB_CREATE) || (flags & BKM_DB_READONLY)))
        return bkm_err_set(err, BKM_EIO, "no results database at %s (run a sweep first, or pass --db)", path);
    /* before anything is created there */
    if (!(flags & BKM_DB_READONLY) &&
        (ret = bkm__db_fs_check(path, (flags & BKM_DB_SHARED_FS_OK) != 0, warning, sizeof warning, err)) < 0)
        return ret;
    if (!exists) {
        if ((ret = create_db(path, target, err)) < 0 || (ret = check_header(path, &exists, &version, err)) < 0)
            return ret;
    }
    db = bkm_calloc(1, sizeof *db);
    if (db != NULL)
        db->lock_fd = -1;
    if (db == NULL || (db->path = bkm_strdup(path)) == NULL) {
        ret = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    db->readonly = (flags & BKM_DB_READONLY) != 0;
    memcpy(db->warning, warning, sizeof warning);
    ret = open_existing(db, target, err);
out:
    if (ret < 0) {
        bkm_db_close(db);
        return ret;
    }
    *out = db;
    return BKM_OK;
}

int bkm_db_open(bkm_db_t **db, const char *path, unsigned flags, bkm_err_t *err)
{
    if (db == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_db_open: NULL handle pointer");
    return db_open_version(db, path, flags, BKM_DB_SCHEMA_VERSION, err);
}

void bkm_db_close(bkm_db_t *db)
{
    if (db == NULL)
        return;
    if (db->h)
        sqlite3_close(db->h);
    if (db->lock_fd >= 0)
        close(db->lock_fd);   /* after the connection: the lock guarded its reads */
    bkm_free(db->path);
    bkm_free(db);
}

const char *bkm_db_warning(const bkm_db_t *db)
{
    return db && db->warning[0] ? db->warning : NULL;
}

const char *bkm_db_path(const bkm_db_t *db)
{
    return db ? db->path : NULL;
}

int bkm_db_schema_version(bkm_db_t *db, int *version, bkm_err_t *err)
{
    return user_version(db, version, err);
}

int bkm_db_integrity_check(bkm_db_t *db, bkm_err_t *err)
{
    sqlite3_stmt *st = NULL;
    int ret = check_pragma(db, "PRAGMA integrity_check(1)", "integrity_check", err);
    int rc;
    if (ret < 0)
        return ret;
    /* Foreign keys are part of integrity: every sample/counter belongs to a stored trial. */
    if ((ret = bkm__db_prepare(db, "PRAGMA foreign_key_check", &st, err)) < 0)
        return ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        ret = bkm_err_set(err, BKM_ECORRUPT, "%s: row %lld of table %s has a dangling reference", db->path,
                          (long long)sqlite3_column_int64(st, 1), (const char *)sqlite3_column_text(st, 0));
    else if (rc != SQLITE_DONE)
        ret = bkm__db_err(db, rc, "foreign_key_check", err);
    sqlite3_finalize(st);
    return ret;
}

int bkm_db_validate(const char *path, bkm_err_t *err)
{
    bkm_db_t *db = NULL;
    int ret = db_open_version(&db, path, BKM_DB_READONLY, BKM_DB_SCHEMA_VERSION, err);
    bkm_db_close(db);
    return ret;
}
