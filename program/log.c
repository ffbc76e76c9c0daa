/* SPDX-License-Identifier: MIT */
/* The team log of libbkm_team.so, read back as data (format: bkm/program.h), and the two things
 * the runner needs to hand the shim to a program: an empty log file and the LD_PRELOAD value. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/program.h"

/* Fields a record may carry; each kind requires a set of them. */
enum {
    F_PID = 1 << 0, F_TID = 1 << 1, F_T = 1 << 2, F_PPID = 1 << 3, F_CREATOR = 1 << 4, F_SEQ = 1 << 5,
    F_VIA = 1 << 6, F_LIB = 1 << 7, F_EXE = 1 << 8, F_API = 1 << 9, F_INDEX = 1 << 10, F_SIZE = 1 << 11,
    F_LEVEL = 1 << 12, F_PRIMARY = 1 << 13, F_RT = 1 << 14, F_TYPE = 1 << 15, F_VERSION = 1 << 16,
    F_RUNTIME = 1 << 17, F_PARENT_TID = 1 << 18, F_WHAT = 1 << 19
};
#define F_COMMON (F_PID | F_TID | F_T)

static const struct {
    const char *name;
    int kind;
    int required;
} kinds[] = {
    {"start", BKM_PROG_REC_START, F_COMMON | F_PPID | F_LIB | F_VERSION},
    {"thread", BKM_PROG_REC_THREAD, F_COMMON | F_CREATOR | F_SEQ | F_VIA | F_LIB | F_EXE},
    {"team", BKM_PROG_REC_TEAM, F_COMMON | F_API | F_INDEX | F_SIZE | F_LEVEL | F_PRIMARY | F_RT},
    {"othread", BKM_PROG_REC_OTHREAD, F_COMMON | F_TYPE},
    {"tool", BKM_PROG_REC_TOOL, F_COMMON | F_RUNTIME},
    {"ompt", BKM_PROG_REC_OMPT, F_COMMON | F_RT},
    {"fork", BKM_PROG_REC_FORK, F_COMMON | F_PPID | F_PARENT_TID},
    {"lost", BKM_PROG_REC_LOST, F_COMMON | F_WHAT},
};

static int parse_ll(const char *s, long long min, long long max, long long *out)
{
    return bkm_parse_int(s, min, max, out) == BKM_OK ? 0 : -1;
}

static int parse_i(const char *s, long long min, long long max, int *out)
{
    long long v;
    if (parse_ll(s, min, max, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A name token: 1..63 bytes of [A-Za-z0-9._+-], or "?" (unknown). */
static int parse_name(const char *s, char out[BKM_PROG_NAME_MAX])
{
    size_t n = strlen(s);
    if (n == 0 || n >= BKM_PROG_NAME_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '+' || c == '-' || (c == '?' && n == 1)))
            return -1;
    }
    memcpy(out, s, n + 1);
    return 0;
}

static int parse_othread_type(const char *s, int *type)
{
    static const char *const names[] = {"initial", "worker", "other", "unknown"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *type = BKM_PROG_OMPT_INITIAL + i;
            return 0;
        }
    return -1;
}

/* One field "key=value" into @p r; returns its F_ bit, 0 for a key this version does not know
 * (ignored, so that a later shim can add fields), -1 for a bad value. */
static int parse_field(char *tok, bkm_prog_rec_t *r)
{
    char *eq = strchr(tok, '=');
    const char *k = tok, *v;
    if (eq == NULL || eq == tok || eq[1] == '\0')
        return -1;
    *eq = '\0';
    v = eq + 1;
#define INT_FIELD(name, bit, min, max, dst) \
    if (strcmp(k, name) == 0)               \
        return parse_i(v, min, max, dst) < 0 ? -1 : bit;
    INT_FIELD("pid", F_PID, 1, INT_MAX, &r->pid)
    INT_FIELD("tid", F_TID, 1, INT_MAX, &r->tid)
    INT_FIELD("ppid", F_PPID, 0, INT_MAX, &r->ppid)
    INT_FIELD("creator", F_CREATOR, 0, INT_MAX, &r->creator)
    INT_FIELD("parent_tid", F_PARENT_TID, 0, INT_MAX, &r->creator)
    INT_FIELD("exe", F_EXE, 0, 1, &r->exe)
    INT_FIELD("index", F_INDEX, 0, BKM_PROG_TEAM_SIZE_MAX - 1, &r->index)
    INT_FIELD("size", F_SIZE, 1, BKM_PROG_TEAM_SIZE_MAX, &r->size)
    INT_FIELD("level", F_LEVEL, -1, INT_MAX, &r->level)
    INT_FIELD("primary", F_PRIMARY, 0, INT_MAX, &r->primary)
    INT_FIELD("version", F_VERSION, 1, INT_MAX, &r->version)
    INT_FIELD("omp_version", F_VERSION, 0, INT_MAX, &r->version)
#undef INT_FIELD
    if (strcmp(k, "t") == 0) {
        long long t;
        if (parse_ll(v, 0, LLONG_MAX, &t) < 0)
            return -1;
        r->t_ns = (uint64_t)t;
        return F_T;
    }
    if (strcmp(k, "seq") == 0)
        return parse_ll(v, 1, LLONG_MAX, &r->seq) < 0 ? -1 : F_SEQ;
    if (strcmp(k, "via") == 0)
        return parse_name(v, r->via) < 0 ? -1 : F_VIA;
    if (strcmp(k, "lib") == 0)
        return parse_name(v, r->lib) < 0 ? -1 : F_LIB;
    if (strcmp(k, "prog") == 0)
        return parse_name(v, r->lib) < 0 ? -1 : F_LIB;
    if (strcmp(k, "rt") == 0)
        return parse_name(v, r->rt) < 0 ? -1 : F_RT;
    if (strcmp(k, "runtime") == 0)
        return parse_name(v, r->rt) < 0 ? -1 : F_RUNTIME;
    if (strcmp(k, "type") == 0)
        return parse_othread_type(v, &r->type) < 0 ? -1 : F_TYPE;
    if (strcmp(k, "what") == 0)
        return parse_name(v, r->via) < 0 ? -1 : F_WHAT;
    if (strcmp(k, "api") == 0) {
        if (strcmp(v, "gomp") == 0)
            r->api = BKM_PROG_API_GOMP;
        else if (strcmp(v, "ompt") == 0)
            r->api = BKM_PROG_API_OMPT;
        else
            return -1;
        return F_API;
    }
    return 0;
}

/* One line (without its newline, at most BKM_PROG_LOG_LINE_MAX - 1 bytes, NUL-terminated in a
 * scratch copy) into @p r. @return 0 or -1 when it is not a well-formed record. */
static int parse_line(char *line, bkm_prog_rec_t *r)
{
    char *save = NULL, *tok;
    int seen = 0, kind = -1;
    size_t mlen = strlen(BKM_PROG_LOG_MAGIC);
    memset(r, 0, sizeof *r);
    r->level = -1;
    if (strncmp(line, BKM_PROG_LOG_MAGIC, mlen) != 0 || line[mlen] != ' ')
        return -1;
    tok = strtok_r(line + mlen + 1, " ", &save);
    if (tok == NULL)
        return -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(tok, kinds[i].name) == 0)
            kind = (int)i;
    if (kind < 0)
        return -1;
    r->kind = kinds[kind].kind;
    while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
        int bit = parse_field(tok, r);
        if (bit < 0 || (bit != 0 && (seen & bit)))
            return -1;
        seen |= bit;
    }
    return (seen & kinds[kind].required) == kinds[kind].required ? 0 : -1;
}

static void note_bad(bkm_prog_log_t *log, const char *line, size_t n)
{
    if (log->malformed++ > 0)
        return;
    if (n >= sizeof log->first_bad)
        n = sizeof log->first_bad - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        log->first_bad[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    log->first_bad[n] = '\0';
}

int bkm_prog_log_parse(bkm_prog_log_t *log, const char *text, size_t len, bkm_err_t *err)
{
    size_t pos = 0, cap = log->n;
    char line[BKM_PROG_LOG_LINE_MAX];
    if (text == NULL && len > 0)
        return bkm_err_set(err, BKM_EINVAL, "team log: no text");
    while (pos < len) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        bkm_prog_rec_t r;
        pos += n + (nl ? 1 : 0);
        if (n == 0 && nl)
            continue;
        if (nl == NULL || n >= sizeof line || memchr(start, '\0', n) != NULL) {
            note_bad(log, start, n);
            continue;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        if (parse_line(line, &r) < 0) {
            note_bad(log, start, n);
            continue;
        }
        if (log->n == cap || cap == 0) {
            size_t ncap = log->n < 64 ? 64 : log->n * 2;
            bkm_prog_rec_t *g = bkm_realloc(log->rec, ncap * sizeof *g);
            if (g == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "team log: out of memory for %zu records", ncap);
            log->rec = g;
            cap = ncap;
        }
        log->rec[log->n++] = r;
    }
    return BKM_OK;
}

int bkm_prog_log_read(bkm_prog_log_t *log, const char *path, size_t max_bytes, bkm_err_t *err)
{
    int fd = -1, rc;
    char *buf = NULL;
    size_t len = 0;
    if (max_bytes == 0)
        max_bytes = BKM_PROG_LOG_MAX_BYTES;
    rc = bkm_file_open_regular(path, "team log", SIZE_MAX / 2, &fd, err);
    if (rc < 0)
        return rc;
    if ((buf = bkm_malloc(max_bytes + 1)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "team log: out of memory for %zu bytes", max_bytes);
        goto out;
    }
    for (;;) {
        ssize_t got = read(fd, buf + len, max_bytes + 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = bkm_err_set(err, BKM_EIO, "team log %s: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
        if (len > max_bytes) {
            log->truncated = 1;
            len = max_bytes;
            break;
        }
    }
    /* a cut record at the limit is not one: parse up to the last complete line */
    if (log->truncated) {
        while (len > 0 && buf[len - 1] != '\n')
            len--;
    }
    rc = bkm_prog_log_parse(log, buf, len, err);
out:
    bkm_free(buf);
    close(fd);
    return rc;
}

void bkm_prog_log_free(bkm_prog_log_t *log)
{
    if (log == NULL)
        return;
    bkm_free(log->rec);
    memset(log, 0, sizeof *log);
}

int bkm_prog_log_create(const char *path, bkm_err_t *err)
{
    int fd;
    if (path == NULL || path[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "team log: empty path");
    if (strlen(path) >= 4096)
        return bkm_err_set(err, BKM_EINVAL, "team log path '%.60s...' is too long (the shim takes 4095 bytes)", path);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return bkm_err_set(err, BKM_EIO, "team log %s: %s", path, strerror(errno));
    close(fd);
    return BKM_OK;
}

int bkm_prog_preload_value(const char *shim_path, const char *existing, char *out, size_t out_len,
                           bkm_err_t *err)
{
    int n;
    if (shim_path == NULL || shim_path[0] != '/')
        return bkm_err_set(err, BKM_EINVAL, "team shim path '%s' is not absolute", shim_path ? shim_path : "(null)");
    if (strpbrk(shim_path, ": \t\n") != NULL)
        return bkm_err_set(err, BKM_EINVAL, "team shim path '%s' contains ':' or whitespace, which LD_PRELOAD "
                           "splits on", shim_path);
    if (existing != NULL && existing[0] != '\0')
        n = snprintf(out, out_len, "%s:%s", shim_path, existing);
    else
        n = snprintf(out, out_len, "%s", shim_path);
    if (n < 0 || (size_t)n >= out_len)
        return bkm_err_set(err, BKM_EINVAL, "LD_PRELOAD value for '%s' does not fit in %zu bytes", shim_path, out_len);
    return BKM_OK;
}
