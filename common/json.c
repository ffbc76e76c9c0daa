/* SPDX-License-Identifier: MIT */
/* Small JSON writer and reader (RFC 8259). The writer's output is always valid UTF-8: invalid
 * sequences in strings become U+FFFD and control characters are escaped. */
#include "bkm/common.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ writer */

void bkm_json_w_init(bkm_json_w_t *w, bkm_buf_t *out, int pretty)
{
    memset(w, 0, sizeof(*w));
    w->out = out;
    w->pretty = pretty;
}

static void indent(bkm_json_w_t *w)
{
    if (!w->pretty)
        return;
    bkm_buf_puts(w->out, "\n");
    for (int i = 0; i < w->depth; i++)
        bkm_buf_puts(w->out, "  ");
}

/* Called before every value or key: writes the separating comma and indentation. */
static void pre_value(bkm_json_w_t *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            bkm_buf_puts(w->out, ",");
        w->need_comma[w->depth] = 1;
        indent(w);
    }
}

static void open_scope(bkm_json_w_t *w, const char *c)
{
    pre_value(w);
    bkm_buf_puts(w->out, c);
    if (w->depth < BKM_JSON_MAX_DEPTH)
        w->depth++;
    else
        w->too_deep = 1;   /* the caller nests beyond the limit: its output is not valid */
    w->need_comma[w->depth] = 0;
}

static void close_scope(bkm_json_w_t *w, const char *c)
{
    int had = w->need_comma[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had)
        indent(w);
    bkm_buf_puts(w->out, c);
}

void bkm_json_obj_begin(bkm_json_w_t *w) { open_scope(w, "{"); }
void bkm_json_obj_end(bkm_json_w_t *w) { close_scope(w, "}"); }
void bkm_json_arr_begin(bkm_json_w_t *w) { open_scope(w, "["); }
void bkm_json_arr_end(bkm_json_w_t *w) { close_scope(w, "]"); }

/* One step of a strict UTF-8 decoder (Unicode table 3-7: no overlongs, no surrogates, nothing
 * above U+10FFFF) over @p n > 0 bytes at @p p. Returns the bytes of the well-formed sequence there
 * (*ok = 1), or those of its maximal ill-formed subpart (*ok = 0), which one U+FFFD replaces (as
 * Python's errors="replace" and the WHATWG decoder do). */
static size_t utf8_step(const unsigned char *p, size_t n, int *ok)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t need;
    *ok = 0;
    if (c < 0x80) {
        *ok = 1;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;   /* E0 80..9F: overlong */
        hi = c == 0xED ? 0x9F : 0xBF;   /* ED A0..BF: surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;   /* F0 80..8F: overlong */
        hi = c == 0xF4 ? 0x8F : 0xBF;   /* F4 90..: above U+10FFFF */
    } else {
        return 1;                       /* C0, C1 (overlong), F5..FF, a stray continuation byte */
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n || p[i] < lo || p[i] > hi)
            return i;
        lo = 0x80;
        hi = 0xBF;
    }
    *ok = 1;
    return need + 1;
}

#define UTF8_REPLACEMENT "\xEF\xBF\xBD"   /* U+FFFD */

int bkm_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    int ok = 1;
    for (size_t i = 0; i < n && ok;)
        i += utf8_step(p + i, n - i, &ok);
    return ok;
}

void bkm_buf_append_utf8(bkm_buf_t *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = 0;
    while (i < n) {
        int ok;
        size_t k = utf8_step(p + i, n - i, &ok);
        if (!ok) {
            bkm_buf_append(b, s + start, i - start);
            bkm_buf_puts(b, UTF8_REPLACEMENT);
            start = i + k;
        }
        i += k;
    }
    bkm_buf_append(b, s + start, n - start);
}

void bkm_json_escape(bkm_buf_t *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    bkm_buf_puts(b, "\"");
    for (size_t i = 0; i < n;) {
        int ok;
        size_t k = utf8_step(p + i, n - i, &ok);
        if (!ok) {
            bkm_buf_puts(b, UTF8_REPLACEMENT);
        } else if (k > 1) {
            bkm_buf_append(b, s + i, k);
        } else {
            switch (p[i]) {
            case '"': bkm_buf_puts(b, "\\\""); break;
            case '\\': bkm_buf_puts(b, "\\\\"); break;
            case '\n': bkm_buf_puts(b, "\\n"); break;
            case '\r': bkm_buf_puts(b, "\\r"); break;
            case '\t': bkm_buf_puts(b, "\\t"); break;
            default:
                if (p[i] < 0x20 || p[i] == 0x7F)
                    bkm_buf_printf(b, "\\u%04x", p[i]);
                else
                    bkm_buf_append(b, s + i, 1);
            }
        }
        i += k;
    }
    bkm_buf_puts(b, "\"");
}

void bkm_json_key(bkm_json_w_t *w, const char *key)
{
    pre_value(w);
    bkm_json_escape(w->out, key);
    bkm_buf_puts(w->out, w->pretty ? ": " : ":");
    w->after_key = 1;
}

void bkm_json_str(bkm_json_w_t *w, const char *s)
{
    pre_value(w);
    if (s == NULL)
        bkm_buf_puts(w->out, "null");
    else
        bkm_json_escape(w->out, s);
}

void bkm_json_int(bkm_json_w_t *w, int64_t v)
{
    pre_value(w);
    bkm_buf_printf(w->out, "%lld", (long long)v);
}

void bkm_json_double(bkm_json_w_t *w, double v)
{
    pre_value(w);
    if (!isfinite(v))
        bkm_buf_puts(w->out, "null");
    else
        bkm_buf_printf(w->out, "%.17g", v);
}

void bkm_json_bool(bkm_json_w_t *w, int v)
{
    pre_value(w);
    bkm_buf_puts(w->out, v ? "true" : "false");
}

void bkm_json_null(bkm_json_w_t *w)
{
    pre_value(w);
    bkm_buf_puts(w->out, "null");
}

void bkm_json_raw(bkm_json_w_t *w, const char *json)
{
    pre_value(w);
    bkm_buf_append_utf8(w->out, json, strlen(json));   /* JSON from elsewhere: keep it UTF-8 */
}

int bkm_json_depth(const bkm_json_t *j)
{
    int d = 0;
    if (j == NULL || (j->type != BKM_JSON_ARR && j->type != BKM_JSON_OBJ))
        return 0;
    for (const bkm_json_t *c = j->child; c; c = c->next) {
        int k = bkm_json_depth(c);
        if (k > d)
            d = k;
    }
    return d + 1;
}

static void write_tree(bkm_json_w_t *w, const bkm_json_t *j);

int bkm_json_write_tree(bkm_json_w_t *w, const bkm_json_t *j)
{
    if (w->depth + bkm_json_depth(j) > BKM_JSON_MAX_DEPTH) {
        bkm_json_null(w);
        return BKM_EINVAL;
    }
    write_tree(w, j);
    return BKM_OK;
}

static void write_tree(bkm_json_w_t *w, const bkm_json_t *j)
{
    switch (j->type) {
    case BKM_JSON_NULL: bkm_json_null(w); break;
    case BKM_JSON_BOOL: bkm_json_bool(w, j->boolean); break;
    case BKM_JSON_STR: bkm_json_str(w, j->str); break;
    case BKM_JSON_NUM:
        if (j->num == floor(j->num) && fabs(j->num) < 9e15)
            bkm_json_int(w, (int64_t)j->num);
        else
            bkm_json_double(w, j->num);
        break;
    case BKM_JSON_ARR:
        bkm_json_arr_begin(w);
        for (const bkm_json_t *c = j->child; c; c = c->next)
            write_tree(w, c);
        bkm_json_arr_end(w);
        break;
    case BKM_JSON_OBJ:
        bkm_json_obj_begin(w);
        for (const bkm_json_t *c = j->child; c; c = c->next) {
            bkm_json_key(w, c->key);
            write_tree(w, c);
        }
        bkm_json_obj_end(w);
        break;
    }
}

/* ------------------------------------------------------------------ reader */

typedef struct {
    const char *s;
    size_t pos;
    int depth;
    bkm_err_t *err;
} parser_t;

static void skip_ws(parser_t *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r')
        p->pos++;
}

static int fail(parser_t *p, const char *what)
{
    return bkm_err_set(p->err, BKM_EINVAL, "JSON parse error at byte %zu: %s", p->pos, what);
}

static int parse_value(parser_t *p, bkm_json_t *out);

static void put_utf8(bkm_buf_t *b, unsigned cp)
{
    char t[4];
    if (cp < 0x80) {
        t[0] = (char)cp;
        bkm_buf_append(b, t, 1);
    } else if (cp < 0x800) {
        t[0] = (char)(0xC0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3F));
        bkm_buf_append(b, t, 2);
    } else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[2] = (char)(0x80 | (cp & 0x3F));
        bkm_buf_append(b, t, 3);
    } else {
        t[0] = (char)(0xF0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[3] = (char)(0x80 | (cp & 0x3F));
        bkm_buf_append(b, t, 4);
    }
}

/* The 4 hex digits at @p h as a code unit, or -1. */
static long hex4(const char *h)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        if (!isxdigit((unsigned char)h[i]))
            return -1;
        v = v * 16 + (isdigit((unsigned char)h[i]) ? h[i] - '0' : tolower((unsigned char)h[i]) - 'a' + 10);
    }
    return v;
}

static int parse_string(parser_t *p, char **out)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    if (p->s[p->pos] != '"')
        return fail(p, "expected '\"'");
    p->pos++;
    for (;;) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '\0') {
            bkm_buf_free(&b);
            return fail(p, "unterminated string");
        }
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            bkm_buf_free(&b);
            return fail(p, "control character in string");
        }
        if (c == '\\') {
            char e = p->s[p->pos + 1];
            p->pos += 2;
            switch (e) {
            case '"': bkm_buf_puts(&b, "\""); break;
            case '\\': bkm_buf_puts(&b, "\\"); break;
            case '/': bkm_buf_puts(&b, "/"); break;
            case 'b': bkm_buf_puts(&b, "\b"); break;
            case 'f': bkm_buf_puts(&b, "\f"); break;
            case 'n': bkm_buf_puts(&b, "\n"); break;
            case 'r': bkm_buf_puts(&b, "\r"); break;
            case 't': bkm_buf_puts(&b, "\t"); break;
            case 'u': {
                /* a surrogate pair is one code point; a lone surrogate becomes U+FFFD */
                long cp = hex4(p->s + p->pos), lo;
                if (cp < 0) {
                    bkm_buf_free(&b);
                    return fail(p, "bad \\u escape");
                }
                p->pos += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u' &&
                    (lo = hex4(p->s + p->pos + 2)) >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->pos += 6;
                } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                    cp = 0xFFFD;
                }
                put_utf8(&b, (unsigned)cp);
                break;
            }
            default:
                bkm_buf_free(&b);
                return fail(p, "bad escape");
            }
            continue;
        }
        bkm_buf_append(&b, (const char *)&p->s[p->pos], 1);
        p->pos++;
    }
    *out = bkm_buf_take(&b);
    return *out ? BKM_OK : bkm_err_set(p->err, BKM_ENOMEM, "out of memory parsing JSON");
}

static int parse_container(parser_t *p, bkm_json_t *out, int is_obj)
{
    bkm_json_t **tail = &out->child;
    char close = is_obj ? '}' : ']';
    out->type = is_obj ? BKM_JSON_OBJ : BKM_JSON_ARR;
    if (++p->depth > BKM_JSON_MAX_DEPTH)
        return fail(p, "nesting deeper than " BKM_JSON_MAX_DEPTH_TEXT " levels");
    p->pos++;
    skip_ws(p);
    if (p->s[p->pos] == close) {
        p->pos++;
        p->depth--;
        return BKM_OK;
    }
    for (;;) {
        bkm_json_t *c = calloc(1, sizeof(*c));
        char *key = NULL;
        int rc;
        if (c == NULL)
            return bkm_err_set(p->err, BKM_ENOMEM, "out of memory parsing JSON");
        *tail = c;
        tail = &c->next;
        out->n_children++;
        skip_ws(p);
        if (is_obj) {
            rc = parse_string(p, &key);
            if (rc != BKM_OK)
                return rc;
            c->key = key;
            skip_ws(p);
            if (p->s[p->pos] != ':')
                return fail(p, "expected ':'");
            p->pos++;
        }
        rc = parse_value(p, c);
        if (rc != BKM_OK)
            return rc;
        skip_ws(p);
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == close) {
            p->pos++;
            p->depth--;
            return BKM_OK;
        }
        return fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(parser_t *p, bkm_json_t *out)
{
    const char *s;
    skip_ws(p);
    s = p->s + p->pos;
    switch (*s) {
    case '{': return parse_container(p, out, 1);
    case '[': return parse_container(p, out, 0);
    case '"': out->type = BKM_JSON_STR; return parse_string(p, &out->str);
    case 't':
        if (strncmp(s, "true", 4) != 0)
            return fail(p, "bad literal");
        out->type = BKM_JSON_BOOL;
        out->boolean = 1;
        p->pos += 4;
        return BKM_OK;
    case 'f':
        if (strncmp(s, "false", 5) != 0)
            return fail(p, "bad literal");
        out->type = BKM_JSON_BOOL;
        p->pos += 5;
        return BKM_OK;
    case 'n':
        if (strncmp(s, "null", 4) != 0)
            return fail(p, "bad literal");
        out->type = BKM_JSON_NULL;
        p->pos += 4;
        return BKM_OK;
    default: {
        /* RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; strtod alone would also take
         * nan, inf, hex and a leading '+'. A number beyond a double reads as +-inf. */
        const char *q = s + (*s == '-');
        char *end = NULL;
        if (strncmp(q, "NaN", 3) == 0 || strncmp(q, "Infinity", 8) == 0 || strncasecmp(q, "nan", 3) == 0 ||
            strncasecmp(q, "inf", 3) == 0) {
            size_t len = strspn(s, "-+.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
            return bkm_err_set(p->err, BKM_EINVAL, "JSON parse error at byte %zu: non-finite number '%.*s' (JSON has "
                               "no NaN or Infinity)", p->pos, (int)(len > 16 ? 16 : len), s);
        }
        if (!isdigit((unsigned char)*q))
            return fail(p, "unexpected character");
        if (*q == '0')
            q++;
        else
            q += strspn(q, "0123456789");
        if (*q == '.') {
            if (!isdigit((unsigned char)q[1]))
                return fail(p, "bad number");
            q += 1 + strspn(q + 1, "0123456789");
        }
        if (*q == 'e' || *q == 'E') {
            q += 1 + (q[1] == '+' || q[1] == '-');
            if (!isdigit((unsigned char)*q))
                return fail(p, "bad number");
            q += strspn(q, "0123456789");
        }
        out->type = BKM_JSON_NUM;
        out->num = strtod(s, &end);
        if (end != q)
            return fail(p, "bad number");
        p->pos += (size_t)(end - s);
        return BKM_OK;
    }
    }
}

int bkm_json_parse(const char *text, bkm_json_t **out, bkm_err_t *err)
{
    parser_t p = {text, 0, 0, err};
    bkm_json_t *root;
    int rc;
    *out = NULL;
    if (text == NULL)
        return bkm_err_set(err, BKM_EINVAL, "JSON text is NULL");
    root = calloc(1, sizeof(*root));
    if (root == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory parsing JSON");
    rc = parse_value(&p, root);
    if (rc == BKM_OK) {
        skip_ws(&p);
        if (text[p.pos] != '\0')
            rc = fail(&p, "trailing characters");
    }
    if (rc != BKM_OK) {
        bkm_json_free(root);
        return rc;
    }
    *out = root;
    return BKM_OK;
}

void bkm_json_free(bkm_json_t *j)
{
    while (j != NULL) {
        bkm_json_t *next = j->next;
        bkm_json_free(j->child);
        free(j->str);
        free(j->key);
        free(j);
        j = next;
    }
}

const bkm_json_t *bkm_json_get(const bkm_json_t *j, const char *key)
{
    if (j == NULL || j->type != BKM_JSON_OBJ)
        return NULL;
    for (const bkm_json_t *c = j->child; c; c = c->next)
        if (c->key && strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

const bkm_json_t *bkm_json_at(const bkm_json_t *j, size_t i)
{
    const bkm_json_t *c;
    if (j == NULL || j->type != BKM_JSON_ARR)
        return NULL;
    for (c = j->child; c && i > 0; c = c->next)
        i--;
    return c;
}

double bkm_json_get_num(const bkm_json_t *j, const char *key, double dflt)
{
    const bkm_json_t *c = bkm_json_get(j, key);
    return (c && c->type == BKM_JSON_NUM) ? c->num : dflt;
}

const char *bkm_json_get_str(const bkm_json_t *j, const char *key)
{
    const bkm_json_t *c = bkm_json_get(j, key);
    return (c && c->type == BKM_JSON_STR) ? c->str : NULL;
}
