/* SPDX-License-Identifier: MIT */
/** @file bkm/common.h
 * Status codes, error buffer, monotonic clock, logging callback, growable string buffer,
 * a small JSON writer and reader, CPU sets, and the allocation wrappers that every bkm module
 * uses.
 *
 * Contract for all of bkm: a function returns an int status (BKM_OK = 0, or a negative
 * BKM_E* code) and, when given a non-NULL bkm_err_t, fills it with the code and a message that
 * names the offending value. Library code never prints, never exits and never reads the
 * environment; it reports through its return value, the error buffer, and an optional
 * bkm_log_t callback supplied by the caller.
 */
#ifndef BKM_COMMON_H
#define BKM_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BKM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BKM_PRINTF(f, a)
#endif

/* ---------------------------------------------------------------------------------------- */
/** Status codes. */
typedef enum {
    BKM_OK = 0,
    BKM_EINVAL = -1,   /**< bad argument, configuration value or parse error        */
    BKM_ENOMEM = -2,   /**< allocation failed                                      */
    BKM_EIO = -3,      /**< file / database / pipe I/O                             */
    BKM_ENOTSUP = -4,  /**< valid request this build or node cannot do: skip it    */
    BKM_EDEP = -5,     /**< hwloc/PAPI/SQLite/oneDNN/MPI reported an error          */
    BKM_EVERIFY = -6,  /**< output or binding failed its check                     */
    BKM_ECORRUPT = -7, /**< a file is not a bkm database, or is damaged            */
    BKM_EFAIL = -8     /**< a check ran and failed (e.g. regression found)         */
} bkm_status_t;

/** Error buffer: code plus a human-readable message naming the bad value. */
typedef struct bkm_err {
    int code;
    char msg[512];
} bkm_err_t;

/** Record @p code and a printf-style message in @p err (may be NULL); returns @p code. */
int bkm_err_set(bkm_err_t *err, int code, const char *fmt, ...) BKM_PRINTF(3, 4);
/** Prefix the message already in @p err with "prefix: "; returns err->code (or BKM_OK). */
int bkm_err_prefix(bkm_err_t *err, const char *fmt, ...) BKM_PRINTF(2, 3);
/** Static name of a status code, never NULL ("invalid argument", ...). */
const char *bkm_strerror(int code);
/** Exit code of `tune` for a status (docs/architecture.md, "Exit codes"): 0 ok, 1 check failed, 2 bad input,
 *  3 environment problem. */
int bkm_status_exit_code(int code);

/* ---------------------------------------------------------------------------------------- */
/** A key=value pair: one shape and one limit for every layer that passes one on (a trial's
 *  environment variable, a configuration's, a trial's, a workload's and a kernel's parameter),
 *  so a pair one layer accepts is never refused for its length by the next. */
#define BKM_KV_KEY_MAX 64     /**< key buffer: at most 63 characters */
#define BKM_KV_VALUE_MAX 256  /**< value buffer: at most 255 characters */
typedef struct bkm_kv {
    char key[BKM_KV_KEY_MAX];
    char value[BKM_KV_VALUE_MAX];
} bkm_kv_t;
/** Set @p kv to the first @p key_len bytes of @p key and to @p value. BKM_EINVAL naming them
 *  (@p what: "parameter", "env", ...) when the key is empty or over 63 characters, or the value
 *  over 255. */
int bkm_kv_set(bkm_kv_t *kv, const char *key, size_t key_len, const char *value, const char *what,
               bkm_err_t *err);
/** Split @p text "key=value" (the first '=') into @p kv: as bkm_kv_set, and BKM_EINVAL naming the
 *  text when it has no '='. */
int bkm_kv_parse(bkm_kv_t *kv, const char *text, const char *what, bkm_err_t *err);
/** Index of the pair whose key is the first @p key_len bytes of @p key in tab[0..n), or -1. */
int bkm_kv_find(const bkm_kv_t *tab, int n, const char *key, size_t key_len);

/* ---------------------------------------------------------------------------------------- */
/** Outcome of a trial: one type for the runner that produces it (bkm/tuner.h) and the store
 *  that keeps it (bkm/results.h). The statuses up to BKM_TRIAL_BINDING_MISMATCH are results:
 *  they are stored, as their names. BKM_TRIAL_INTERRUPTED is the runner's "no result" (the
 *  tuner was stopped while the trial ran): it is never stored (bkm_db_trial_insert refuses it,
 *  bkm_trial_status_parse does not accept it), and the resumed sweep measures that trial. */
typedef enum {
    BKM_TRIAL_OK = 0,
    BKM_TRIAL_CRASHED,           /**< killed by a signal (signal_name) */
    BKM_TRIAL_TIMEOUT,           /**< exceeded spec.timeout_s; process group SIGKILLed */
    BKM_TRIAL_FAILED,            /**< non-zero exit, or a result that does not parse */
    BKM_TRIAL_BINDING_MISMATCH,  /**< the threads were not bound as planned */
    BKM_TRIAL_INTERRUPTED        /**< cut short by a stop of the tuner: not a result */
} bkm_trial_status_t;
/** Number of stored statuses: 0 <= status < BKM_TRIAL_N_STORED. */
#define BKM_TRIAL_N_STORED BKM_TRIAL_INTERRUPTED
/** "ok", "crashed", "timeout", "failed", "binding-mismatch", "interrupted"; NULL when
 *  @p status is none of them. */
const char *bkm_trial_status_name(int status);
/** 1 when @p status is a result that is stored (BKM_TRIAL_OK .. BKM_TRIAL_BINDING_MISMATCH). */
int bkm_trial_status_stored(int status);
/** Parse the name of a stored status; BKM_EINVAL naming it otherwise ("interrupted" too). */
int bkm_trial_status_parse(const char *name, int *status, bkm_err_t *err);

/** One counter reading over a trial (a PAPI event summed over the trial's threads): one record
 *  from the worker's measurement (bkm/tuner.h) through the runner's result to the store
 *  (bkm/results.h, column REAL). An event is in one of three states: counted (available, not
 *  disagreeing: value is a measurement), unavailable (reason says why; value is not a
 *  measurement), or counted but contradicted by the operating system's own figure for the same
 *  threads and region beyond its granularity (disagrees: value and os_value are both kept, reason
 *  says by how much; neither is presented as the event's value). */
typedef struct bkm_counter {
    char name[64];         /**< PAPI preset or native name, e.g. "perf::TASK-CLOCK" */
    int available;         /**< 1: counted; 0: unavailable, see reason (value is ignored) */
    int disagrees;         /**< 1: counted, but the OS's figure contradicts it (see reason) */
    long long value;       /**< sum over all counted threads (task-clock: ns) */
    long long os_value;    /**< the OS's figure it was checked against (when os_source is set) */
    char os_source[64];    /**< where os_value came from ("rusage voluntary+involuntary switches"); "" not checked */
    char domain[16];       /**< counting domain in effect: "user", "kernel", "user+kernel"; "" unknown */
    char reason[200];      /**< why unavailable or why it disagrees; "" when counted and agreeing */
} bkm_counter_t;

/** 1 when @p c holds a measurement to present (counted, and not contradicted by the OS). */
int bkm_counter_presentable(const bkm_counter_t *c);

/** xorshift64*: reproducible random numbers (strategies, claim orders, replay) from a state the
 *  caller keeps; a state of 0 stays 0. */
static inline uint64_t bkm_rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/** The median of the @p n values at @p v (sorted in place, ascending; the mean of the two middle
 *  values when @p n is even); NaN when @p n is 0. The values must not be NaN. */
double bkm_median(double *v, size_t n);
/** qsort() comparison of two doubles, ascending (NaN-free input). */
int bkm_cmp_double(const void *a, const void *b);

/** SHA-256 of @p n bytes at @p data as 64 lowercase hex digits (and a NUL) into @p hex. */
void bkm_sha256_hex(const void *data, size_t n, char hex[65]);
/** SHA-256 of the regular file @p path (the exact executable a trial ran). @return BKM_OK;
 *  BKM_EINVAL when it is not a regular file; BKM_EIO naming the path and the reason. */
int bkm_sha256_file(const char *path, char hex[65], bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Monotonic clock (CLOCK_MONOTONIC) in nanoseconds. Never clock() or gettimeofday(). */
uint64_t bkm_now_ns(void);
/** Resolution of the monotonic clock in nanoseconds. */
uint64_t bkm_clock_resolution_ns(void);
/** Wall-clock time as an ISO-8601 UTC string "2026-11-30T04:00:00Z" into buf (>= 21 bytes). */
void bkm_utc_iso8601(char *buf, size_t n);

/* ---------------------------------------------------------------------------------------- */
/** Logging: libraries call the caller's callback; NULL callback = silent. */
typedef enum { BKM_LOG_ERROR = 0, BKM_LOG_WARN = 1, BKM_LOG_INFO = 2, BKM_LOG_DEBUG = 3 } bkm_log_level_t;
typedef struct bkm_log {
    void (*fn)(void *ud, int level, const char *msg);
    void *ud;
    int level; /**< messages above this level are dropped */
} bkm_log_t;
void bkm_log(const bkm_log_t *log, int level, const char *fmt, ...) BKM_PRINTF(3, 4);

/* ---------------------------------------------------------------------------------------- */
/** Allocation wrappers (NULL-safe free). bkm_aligned_alloc memory is freed with bkm_free. */
void *bkm_malloc(size_t n);
void *bkm_calloc(size_t count, size_t size);
void *bkm_realloc(void *p, size_t n);
void *bkm_aligned_alloc(size_t alignment, size_t n);
char *bkm_strdup(const char *s);
void bkm_free(void *p);

/* ---------------------------------------------------------------------------------------- */
/** Growable NUL-terminated string buffer; a plain value (zero-initialise or bkm_buf_init). */
typedef struct bkm_buf {
    char *data; /**< NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int oom;    /**< set once an allocation failed; further appends are ignored */
} bkm_buf_t;
void bkm_buf_init(bkm_buf_t *b);
int bkm_buf_append(bkm_buf_t *b, const char *s, size_t n);
int bkm_buf_puts(bkm_buf_t *b, const char *s);
int bkm_buf_printf(bkm_buf_t *b, const char *fmt, ...) BKM_PRINTF(2, 3);
int bkm_buf_vprintf(bkm_buf_t *b, const char *fmt, va_list ap);
/** Transfer ownership of the string (never NULL unless out of memory) and reset @p b. */
char *bkm_buf_take(bkm_buf_t *b);
void bkm_buf_free(bkm_buf_t *b);
/** Contents, never NULL ("" when empty). */
const char *bkm_buf_str(const bkm_buf_t *b);
/** Append @p n bytes of @p s, each ill-formed UTF-8 sequence (overlong, surrogate, truncated,
 *  above U+10FFFF, a stray continuation byte, C0/C1/F5..FF) replaced by U+FFFD, so that @p b
 *  receives only valid UTF-8 whatever bytes @p s holds (a stderr tail, a host name). */
void bkm_buf_append_utf8(bkm_buf_t *b, const char *s, size_t n);
/** 1 when the @p n bytes at @p s are well-formed UTF-8 (RFC 3629), else 0. */
int bkm_utf8_valid(const char *s, size_t n);

/* ---------------------------------------------------------------------------------------- */
/** JSON writer over a bkm_buf_t. Commas are inserted automatically. Doubles that are not
 *  finite are written as null. The output is always valid UTF-8: in strings (and keys) each
 *  ill-formed UTF-8 sequence becomes U+FFFD and control characters are escaped; raw JSON gets
 *  the same UTF-8 repair. */
/** The one nesting limit of bkm's JSON: the reader refuses a document nested deeper, the writer
 *  writes up to this many levels (bkm_json_write_tree writes null for a value that would go
 *  deeper), so that whatever bkm writes, bkm reads back. */
#define BKM_JSON_MAX_DEPTH 64
#define BKM_JSON_MAX_DEPTH_TEXT "64"
typedef struct bkm_json_w {
    bkm_buf_t *out;
    int depth;
    unsigned char need_comma[BKM_JSON_MAX_DEPTH + 1];
    int after_key;
    int pretty;   /**< indent with two spaces per level */
    int too_deep; /**< set when a begin went beyond BKM_JSON_MAX_DEPTH: the output is not valid */
} bkm_json_w_t;
void bkm_json_w_init(bkm_json_w_t *w, bkm_buf_t *out, int pretty);
void bkm_json_obj_begin(bkm_json_w_t *w);
void bkm_json_obj_end(bkm_json_w_t *w);
void bkm_json_arr_begin(bkm_json_w_t *w);
void bkm_json_arr_end(bkm_json_w_t *w);
void bkm_json_key(bkm_json_w_t *w, const char *key);
void bkm_json_str(bkm_json_w_t *w, const char *s);   /**< NULL writes null */
void bkm_json_int(bkm_json_w_t *w, int64_t v);
void bkm_json_double(bkm_json_w_t *w, double v);
void bkm_json_bool(bkm_json_w_t *w, int v);
void bkm_json_null(bkm_json_w_t *w);
/** Insert already-serialised JSON text as the next value. */
void bkm_json_raw(bkm_json_w_t *w, const char *json);
/** Append @p s as a JSON string literal (with quotes and escapes) to @p b. */
void bkm_json_escape(bkm_buf_t *b, const char *s);

/** JSON reader: parses a whole document into a tree. */
typedef enum { BKM_JSON_NULL, BKM_JSON_BOOL, BKM_JSON_NUM, BKM_JSON_STR, BKM_JSON_ARR, BKM_JSON_OBJ } bkm_json_type_t;
typedef struct bkm_json bkm_json_t;
struct bkm_json {
    bkm_json_type_t type;
    int boolean;
    double num;
    char *str;          /**< BKM_JSON_STR: value; NUL-terminated */
    char *key;          /**< member name when the parent is an object, else NULL */
    bkm_json_t *child;  /**< first element / member */
    bkm_json_t *next;   /**< next sibling */
    size_t n_children;
};
/** Parse @p text (NUL-terminated, RFC 8259: NaN/Infinity and non-JSON number forms are errors;
 *  a number beyond a double reads as +-inf; a \u surrogate pair is one code point, a lone
 *  surrogate U+FFFD). On error *out is NULL and err names the byte offset. */
int bkm_json_parse(const char *text, bkm_json_t **out, bkm_err_t *err);
void bkm_json_free(bkm_json_t *j);
/** Member @p key of object @p j, or NULL. */
const bkm_json_t *bkm_json_get(const bkm_json_t *j, const char *key);
/** Element @p i of array @p j, or NULL. */
const bkm_json_t *bkm_json_at(const bkm_json_t *j, size_t i);
/** Convenience: number member or @p dflt; string member or NULL. */
double bkm_json_get_num(const bkm_json_t *j, const char *key, double dflt);
const char *bkm_json_get_str(const bkm_json_t *j, const char *key);
/** Re-serialise the parsed value @p j through @p w as its next value: members in document
 *  order, integral numbers below 9e15 in magnitude as integers, others as doubles. When @p j would
 *  nest deeper than BKM_JSON_MAX_DEPTH where it goes, null is written instead and BKM_EINVAL
 *  returned (the document stays valid; the caller says what was left out). */
int bkm_json_write_tree(bkm_json_w_t *w, const bkm_json_t *j);
/** Levels of nesting of @p j: 0 for a scalar, 1 for [] or {} of scalars, ... */
int bkm_json_depth(const bkm_json_t *j);

/* ---------------------------------------------------------------------------------------- */
/** CPU set of OS processor indexes, a plain copyable value. */
#define BKM_CPUSET_MAX 2048
typedef struct bkm_cpuset {
    uint64_t w[BKM_CPUSET_MAX / 64];
} bkm_cpuset_t;
void bkm_cpuset_zero(bkm_cpuset_t *s);
int bkm_cpuset_set(bkm_cpuset_t *s, int cpu);      /**< BKM_EINVAL when cpu is out of range */
void bkm_cpuset_clr(bkm_cpuset_t *s, int cpu);
int bkm_cpuset_isset(const bkm_cpuset_t *s, int cpu);
int bkm_cpuset_count(const bkm_cpuset_t *s);
int bkm_cpuset_first(const bkm_cpuset_t *s);       /**< -1 when empty */
int bkm_cpuset_next(const bkm_cpuset_t *s, int prev); /**< next set cpu after prev, or -1 */
int bkm_cpuset_equal(const bkm_cpuset_t *a, const bkm_cpuset_t *b);
int bkm_cpuset_is_empty(const bkm_cpuset_t *s);
void bkm_cpuset_or(bkm_cpuset_t *dst, const bkm_cpuset_t *src);
void bkm_cpuset_and(bkm_cpuset_t *dst, const bkm_cpuset_t *src);
/** Compact list form "0-3,8,10-11" ("" for empty) into @p b. */
void bkm_cpuset_format(const bkm_cpuset_t *s, bkm_buf_t *b);
/** Parse the list form ("0-3,8"; whitespace allowed); err names the bad token. */
int bkm_cpuset_parse(bkm_cpuset_t *s, const char *list, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/* Files a user names (topology XML, node profiles, databases). A FIFO, device, socket or
 * directory is refused before anything is read from it: a FIFO without a writer would block
 * open(2) forever and /dev/zero never ends. @p what names the file in messages ("hwloc XML"). */

/** Open @p path read-only when it is a regular file of at most @p max_bytes bytes. The open
 * cannot block (O_NONBLOCK, cleared again afterwards) and fstat(2) of the open descriptor decides,
 * so a file swapped after a check is still judged. On success *fd is the caller's to close.
 * @return BKM_OK; BKM_EINVAL when it cannot be opened, is not a regular file (the message says
 * what it is) or is larger than the limit (the message states the size and the limit);
 * BKM_EIO when fstat fails. */
int bkm_file_open_regular(const char *path, const char *what, size_t max_bytes, int *fd, bkm_err_t *err);
/** Read all of the regular file @p path (bkm_file_open_regular) into *data, NUL-terminated
 * (*len bytes without the NUL; the caller bkm_free()s it); never more than @p max_bytes + 1
 * bytes are read, so a file that grows past the limit while it is read is refused too.
 * @return BKM_OK; BKM_EINVAL (as bkm_file_open_regular, or over the limit); BKM_EIO; BKM_ENOMEM. */
int bkm_file_read_regular(const char *path, const char *what, size_t max_bytes, char **data, size_t *len,
                          bkm_err_t *err);
/** For a path another library opens (SQLite): BKM_OK when @p path does not exist yet (or stat(2)
 * fails: the opener reports that) or is a regular file, following links; BKM_EINVAL naming it
 * when it is a FIFO, device, socket or directory. Opens nothing; the opener must still cope with
 * a file replaced after this check. */
int bkm_file_check_regular_or_absent(const char *path, const char *what, bkm_err_t *err);
/** Create a new file "<dir>/<prefix>XXXXXX" (six random letters and digits) holding the @p len
 * bytes of @p text, with permissions @p mode less the umask: opened O_CREAT|O_EXCL|O_NOFOLLOW, so a
 * name that exists (a link planted at it included) is never opened, and another name is tried;
 * written, fsync(2)ed and closed. @p path (of @p path_n bytes) receives the name.
 * @return BKM_OK; BKM_EINVAL when the name is too long; BKM_EIO naming the file and the system's
 * reason (nothing is left behind). */
int bkm_file_write_new(const char *dir, const char *prefix, const char *text, size_t len, unsigned mode, char *path,
                       size_t path_n, bkm_err_t *err);
/** The one way bkm writes an output file (a script, a report, a baseline, an export): the @p len
 * bytes of @p text reach @p path whole or not at all. A temporary is created in the same folder by
 * bkm_file_write_new (@p mode: 0666 for data, 0777 for a script, less the umask), then renamed over
 * @p path: a reader sees the old file or the new one, never half of one; on failure @p path is
 * untouched. A link at @p path is replaced, never written through: the file it points to stays as
 * it was. When @p path is (or leads to) something that is not a regular file, it is written
 * directly, never replaced: a FIFO (one that nobody reads is refused, never waited on), a
 * terminal, /dev/null, or this process's standard output or error; a link chain through /dev/fd or
 * /proc/PID/fd (/dev/stdout) writes to that descriptor's file, appending. A directory, a block or
 * any other device is refused. @p what names the file in messages ("-o").
 * @return BKM_OK; BKM_EINVAL (empty path, a folder, a device, a name too long); BKM_EIO naming the
 * path and the system's reason. */
int bkm_file_write_output(const char *path, const char *what, const char *text, size_t len, unsigned mode,
                          bkm_err_t *err);

/** Find the executable @p prog in the colon-separated folder list @p path (a PATH value the
 * caller read; NULL or "" searches nothing) into @p found (@p n bytes): the first "<dir>/<prog>"
 * that access(2) says is executable. @return BKM_OK; BKM_EDEP saying "'PROG' is not installed (not
 * on PATH)" when it is nowhere (callers add how to install it). */
int bkm_path_find_program(const char *prog, const char *path, char *found, size_t n, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/** Strict number parsing: the whole string must be the number. */
int bkm_parse_int(const char *s, long long min, long long max, long long *out);
int bkm_parse_double(const char *s, double *out);

#ifdef __cplusplus
}
#endif
#endif /* BKM_COMMON_H */
