/* SPDX-License-Identifier: MIT */
/* Strict parsers for the OpenMP affinity environment (KMP_AFFINITY, KMP_BLOCKTIME, KMP_HW_SUBSET,
 * OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY) and the precedence rules between them, following
 * LLVM libomp 14 (docs/affinity.md §1). Where libomp only warns, bkm fails and names the
 * token, so that the tuner never emits a setting the runtime would silently change. */
#include "planner_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Largest integer accepted anywhere in these variables (ids, counts, permute, offset). */
#define NUM_MAX 1000000

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static int is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Case-insensitive comparison of the word [w, w+n) with @p kw. */
static int word_is(const char *w, size_t n, const char *kw)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (kw[i] == '\0' || tolower((unsigned char)w[i]) != tolower((unsigned char)kw[i]))
            return 0;
    }
    return kw[n] == '\0';
}

/* Read decimal digits at *p (at least one); BKM_EINVAL when too large. */
static int read_num(const char **p, int *out)
{
    long v = 0;
    const char *s = *p;
    if (!isdigit((unsigned char)*s))
        return BKM_EINVAL;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > NUM_MAX)
            return BKM_EINVAL;
        s++;
    }
    *p = s;
    *out = (int)v;
    return BKM_OK;
}

/* Copy at most 40 chars of [s, s+n) for messages. */
static void tok_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

const char *bkm__aff_gran_keyword(bkm_aff_gran_t g)
{
    switch (g) {
    case BKM_AFF_GRAN_THREAD: return "thread";
    case BKM_AFF_GRAN_CORE: return "core";
    case BKM_AFF_GRAN_TILE: return "tile";
    case BKM_AFF_GRAN_SOCKET: return "socket";
    case BKM_AFF_GRAN_DIE: return "die";
    case BKM_AFF_GRAN_MODULE: return "module";
    case BKM_AFF_GRAN_NUMA: return "numa_domain";
    case BKM_AFF_GRAN_L1: return "l1_cache";
    case BKM_AFF_GRAN_L2: return "l2_cache";
    case BKM_AFF_GRAN_L3: return "l3_cache";
    case BKM_AFF_GRAN_LL: return "ll_cache";
    case BKM_AFF_GRAN_PROC_GROUP: return "proc_group";
    case BKM_AFF_GRAN_CORE_TYPE: return "core_type";
    case BKM_AFF_GRAN_LEVELS: return "unknown";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Proclist (KMP_AFFINITY proclist=[...] and GOMP_CPU_AFFINITY)                              */

#define MAX_SET 256

int bkm__aff_proclist_walk(const char *var, const char *text, bkm__aff_ids_cb cb, void *ud,
                           bkm_err_t *err)
{
    const char *p = text;
    int ids[MAX_SET];
    int rc = BKM_OK;
    int empty = 1;

    for (;;) {
        int start, end, stride = 1;
        p = skip_ws(p);
        if (*p == '\0')
            break;
        if (*p == '{') {
            int n = 0;
            p = skip_ws(p + 1);
            for (;;) {
                const char *t = p;
                if (read_num(&p, &ids[n]) != BKM_OK)
                    return bkm_err_set(err, BKM_EINVAL, "%s: expected an OS proc id in {...} at \"%.20s\"",
                                       var, t);
                if (ids[n] > BKM__AFF_MAX_ID)
                    return bkm_err_set(err, BKM_EINVAL, "%s: OS proc id %d is too large", var, ids[n]);
                n++;
                p = skip_ws(p);
                if (*p == '}') {
                    p++;
                    break;
                }
                if (*p == ',')
                    p = skip_ws(p + 1);
                if (n >= MAX_SET)
                    return bkm_err_set(err, BKM_EINVAL, "%s: more than %d ids in one {...} set", var, MAX_SET);
                if (*p == '\0')
                    return bkm_err_set(err, BKM_EINVAL, "%s: unbalanced '{' (missing '}')", var);
            }
            if (cb != NULL && (rc = cb(ud, ids, n, err)) != BKM_OK)
                return rc;
            empty = 0;
            p = skip_ws(p);
            if (*p == ',')
                p++;
            continue;
        }
        if (!isdigit((unsigned char)*p)) {
            char tok[41];
            size_t n = strcspn(p, ", \t");
            tok_copy(tok, sizeof(tok), p, n == 0 ? 1 : n);
            return bkm_err_set(err, BKM_EINVAL, "%s: invalid proc list item \"%s\"", var, tok);
        }
        {
            const char *t = p;
            if (read_num(&p, &start) != BKM_OK || start > BKM__AFF_MAX_ID)
                return bkm_err_set(err, BKM_EINVAL, "%s: OS proc id \"%.12s\" is too large", var, t);
        }
        p = skip_ws(p);
        end = start;
        if (*p == '-') {
            const char *t;
            p = skip_ws(p + 1);
            t = p;
            if (read_num(&p, &end) != BKM_OK || end > BKM__AFF_MAX_ID)
                return bkm_err_set(err, BKM_EINVAL, "%s: bad range end at \"%.20s\"", var, t);
            p = skip_ws(p);
            if (*p == ':') {
                int sign = 1;
                p = skip_ws(p + 1);
                if (*p == '-') {
                    sign = -1;
                    p = skip_ws(p + 1);
                }
                t = p;
                if (read_num(&p, &stride) != BKM_OK)
                    return bkm_err_set(err, BKM_EINVAL, "%s: bad stride at \"%.20s\"", var, t);
                stride *= sign;
            }
            if (stride == 0)
                return bkm_err_set(err, BKM_EINVAL, "%s: zero stride in range %d-%d", var, start, end);
            if (stride > 0 && start > end)
                return bkm_err_set(err, BKM_EINVAL, "%s: range start %d > end %d", var, start, end);
            if (stride < 0 && start < end)
                return bkm_err_set(err, BKM_EINVAL, "%s: range start %d < end %d with negative stride",
                                   var, start, end);
        }
        if (cb != NULL) {
            int id;
            for (id = start; stride > 0 ? id <= end : id >= end; id += stride) {
                if ((rc = cb(ud, &id, 1, err)) != BKM_OK)
                    return rc;
            }
        }
        empty = 0;
        p = skip_ws(p);
        if (*p == ',')
            p++;
        else if (*p != '\0' && !isdigit((unsigned char)*p) && *p != '{') {
            char tok[41];
            tok_copy(tok, sizeof(tok), p, strcspn(p, ", \t") == 0 ? 1 : strcspn(p, ", \t"));
            return bkm_err_set(err, BKM_EINVAL, "%s: invalid proc list item \"%s\"", var, tok);
        }
    }
    if (empty)
        return bkm_err_set(err, BKM_EINVAL, "%s: empty proc list", var);
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* KMP_AFFINITY                                                                              */

static const struct {
    const char *name;
    bkm_aff_type_t type;
} kmp_types[] = {
    {"none", BKM_AFF_TYPE_NONE},         {"compact", BKM_AFF_TYPE_COMPACT},
    {"scatter", BKM_AFF_TYPE_SCATTER},   {"balanced", BKM_AFF_TYPE_BALANCED},
    {"explicit", BKM_AFF_TYPE_EXPLICIT}, {"disabled", BKM_AFF_TYPE_DISABLED},
    {"logical", BKM_AFF_TYPE_LOGICAL},   {"physical", BKM_AFF_TYPE_PHYSICAL},
};

static const struct {
    const char *name;
    bkm_aff_gran_t gran;
} gran_names[] = {
    {"fine", BKM_AFF_GRAN_THREAD},       {"thread", BKM_AFF_GRAN_THREAD},
    {"core", BKM_AFF_GRAN_CORE},         {"tile", BKM_AFF_GRAN_TILE},
    {"socket", BKM_AFF_GRAN_SOCKET},     {"package", BKM_AFF_GRAN_SOCKET},
    {"die", BKM_AFF_GRAN_DIE},           {"module", BKM_AFF_GRAN_MODULE},
    {"numa_domain", BKM_AFF_GRAN_NUMA},  {"node", BKM_AFF_GRAN_NUMA},
    {"l1_cache", BKM_AFF_GRAN_L1},       {"l2_cache", BKM_AFF_GRAN_L2},
    {"l3_cache", BKM_AFF_GRAN_L3},       {"ll_cache", BKM_AFF_GRAN_LL},
    {"proc_group", BKM_AFF_GRAN_PROC_GROUP}, {"core_type", BKM_AFF_GRAN_CORE_TYPE},
};

const char *bkm_aff_type_name(bkm_aff_type_t t);
const char *bkm_aff_type_name(bkm_aff_type_t t)
{
    size_t i;
    for (i = 0; i < sizeof(kmp_types) / sizeof(kmp_types[0]); i++)
        if (kmp_types[i].type == t)
            return kmp_types[i].name;
    return "default";
}

/* A boolean modifier pair: which field, and the value each spelling sets. */
static int set_flag(int *field, int value, const char *tok, bkm_err_t *err)
{
    if (*field != -1)
        return bkm_err_set(err, BKM_EINVAL,
                           "KMP_AFFINITY: \"%s\" conflicts with an earlier modifier of the same kind "
                           "(libomp keeps the first)", tok);
    *field = value;
    return BKM_OK;
}

/* proclist=[...]: *pp points just after "proclist"; on success *pp is after ']'. */
static int parse_proclist(const char **pp, bkm_aff_kmp_t *out, bkm_err_t *err)
{
    const char *p = skip_ws(*pp);
    const char *open, *close;
    size_t len;
    int rc;
    if (*p != '=')
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: \"proclist\" must be followed by '=[...]'");
    p = skip_ws(p + 1);
    if (*p != '[')
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: proclist must be bracketed: \"proclist=[%.20s\"", p);
    open = p + 1;
    close = strchr(open, ']');
    if (close == NULL)
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: unbalanced '[' in proclist (missing ']')");
    {
        const char *q;
        for (q = open; q < close; q++) {
            if (*q == '[')
                return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: unbalanced '[' in proclist");
        }
    }
    len = (size_t)(close - open);
    if (len >= sizeof(out->proclist))
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: proclist longer than %d characters",
                           (int)sizeof(out->proclist) - 1);
    if (out->proclist[0] != '\0')
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: \"proclist\" given twice");
    memcpy(out->proclist, open, len);
    out->proclist[len] = '\0';
    /* Normalise: trim, and reject empty lists. */
    rc = bkm__aff_proclist_walk("KMP_AFFINITY proclist", out->proclist, NULL, NULL, err);
    if (rc != BKM_OK)
        return rc;
    *pp = close + 1;
    return BKM_OK;
}

static int parse_gran(const char **pp, bkm_aff_kmp_t *out, bkm_err_t *err)
{
    const char *p = skip_ws(*pp);
    const char *w;
    size_t n, i;
    if (*p != '=')
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: \"granularity\" must be followed by '=<level>'");
    p = skip_ws(p + 1);
    if (out->gran != BKM_AFF_GRAN_UNSET)
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: granularity given twice (at \"%.20s\")", p);
    w = p;
    while (is_word_char(*p))
        p++;
    n = (size_t)(p - w);
    if (n == 0) {
        char tok[41];
        tok_copy(tok, sizeof(tok), w, strcspn(w, ",") == 0 ? 1 : strcspn(w, ","));
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid granularity \"%s\"", tok);
    }
    if (isdigit((unsigned char)*w)) {
        const char *q = w;
        int v;
        if (read_num(&q, &v) != BKM_OK || q != p) {
            char tok[41];
            tok_copy(tok, sizeof(tok), w, n);
            return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid granularity \"%s\"", tok);
        }
        out->gran = BKM_AFF_GRAN_LEVELS;
        out->gran_levels = v;
        *pp = p;
        return BKM_OK;
    }
    for (i = 0; i < sizeof(gran_names) / sizeof(gran_names[0]); i++) {
        if (word_is(w, n, gran_names[i].name)) {
            out->gran = gran_names[i].gran;
            *pp = p;
            return BKM_OK;
        }
    }
    {
        char tok[41];
        tok_copy(tok, sizeof(tok), w, n);
        return bkm_err_set(err, BKM_EINVAL,
                           "KMP_AFFINITY: invalid granularity \"%s\" (fine, thread, core, tile, socket, "
                           "package, die, module, numa_domain, node, l1_cache, l2_cache, l3_cache, "
                           "ll_cache, or a number of levels)", tok);
    }
}

/* One item of KMP_AFFINITY: the word @p w (@p n characters, @p tok its copy for messages) and,
 * for granularity= and proclist=, its value from *pp on (*pp is moved past it); an integer goes
 * to ints[*n_ints]. */
static int parse_item(const char *w, size_t n, const char *tok, const char **pp, int ints[2], int *n_ints,
                      bkm_aff_kmp_t *out, bkm_err_t *err)
{
    const char *p = *pp;
    int rc = BKM_OK;

    if (isdigit((unsigned char)*w)) {
        const char *q = w;
        int v;
        if (read_num(&q, &v) != BKM_OK) {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid number \"%s\"", tok);
            goto out;
        }
        if (q != p) {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid token \"%s\"", tok);
            goto out;
        }
        if (*n_ints >= 2) {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: too many integers: \"%s\" is a third "
                             "(only permute and offset are allowed)", tok);
            goto out;
        }
        ints[(*n_ints)++] = v;
    } else if (word_is(w, n, "granularity") || word_is(w, n, "gran")) {
        if ((rc = parse_gran(&p, out, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "proclist")) {
        if ((rc = parse_proclist(&p, out, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "verbose") || word_is(w, n, "noverbose")) {
        if ((rc = set_flag(&out->verbose, tok[0] != 'n' && tok[0] != 'N', tok, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "warnings") || word_is(w, n, "nowarnings")) {
        if ((rc = set_flag(&out->warnings, tok[0] != 'n' && tok[0] != 'N', tok, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "respect") || word_is(w, n, "norespect")) {
        if ((rc = set_flag(&out->respect, tok[0] != 'n' && tok[0] != 'N', tok, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "duplicates") || word_is(w, n, "dups") ||
               word_is(w, n, "noduplicates") || word_is(w, n, "nodups")) {
        if ((rc = set_flag(&out->dups, tok[0] != 'n' && tok[0] != 'N', tok, err)) != BKM_OK)
            goto out;
    } else if (word_is(w, n, "reset") || word_is(w, n, "noreset")) {
        rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: \"%s\" is not supported by libomp 14 "
                         "(added in a later release)", tok);
        goto out;
    } else {
        size_t i;
        bkm_aff_type_t t = BKM_AFF_TYPE_UNSET;
        for (i = 0; i < sizeof(kmp_types) / sizeof(kmp_types[0]); i++)
            if (word_is(w, n, kmp_types[i].name))
                t = kmp_types[i].type;
        if (t == BKM_AFF_TYPE_UNSET) {
            if (word_is(w, n, "fine") || word_is(w, n, "core") || word_is(w, n, "thread") ||
                word_is(w, n, "socket") || word_is(w, n, "package"))
                rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: unknown token \"%s\" (a granularity "
                                 "must be written granularity=%s)", tok, tok);
            else
                rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: unknown token \"%s\"", tok);
            goto out;
        }
        if (out->type != BKM_AFF_TYPE_UNSET) {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: second affinity type \"%s\" (type %s was "
                             "already given; libomp keeps the first)", tok, bkm_aff_type_name(out->type));
            goto out;
        }
        out->type = t;
    }
out:
    *pp = p;
    return rc;
}

/* The rules between the items of KMP_AFFINITY, once all are read, and where the integers go. */
static int cross_rules(bkm_aff_kmp_t *out, const int ints[2], int n_ints, bkm_err_t *err)
{
    int rc = BKM_OK;

    /* libomp W#59..W#64 */
    if (out->proclist[0] != '\0' && out->type == BKM_AFF_TYPE_UNSET) {
        rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: proclist without a type (write \"explicit\")");
        goto out;
    }
    if (out->proclist[0] != '\0' && out->type != BKM_AFF_TYPE_EXPLICIT) {
        rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: proclist with type \"%s\" (only \"explicit\" takes "
                         "a proclist; libomp 14 crashes on this)", bkm_aff_type_name(out->type));
        goto out;
    }
    if (out->type == BKM_AFF_TYPE_EXPLICIT && out->proclist[0] == '\0') {
        rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: \"explicit\" without proclist=[...]");
        goto out;
    }
    if (n_ints > 0) {
        switch (out->type) {
        case BKM_AFF_TYPE_UNSET:
        case BKM_AFF_TYPE_NONE:
        case BKM_AFF_TYPE_EXPLICIT:
        case BKM_AFF_TYPE_DISABLED:
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: integer %d given but type \"%s\" takes none",
                             ints[0], bkm_aff_type_name(out->type));
            goto out;
        case BKM_AFF_TYPE_LOGICAL:
        case BKM_AFF_TYPE_PHYSICAL:
            if (n_ints > 1) {
                rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: second integer %d given but type \"%s\" "
                                 "takes only an offset", ints[1], bkm_aff_type_name(out->type));
                goto out;
            }
            out->offset = ints[0];
            break;
        default:
            out->permute = ints[0];
            if (n_ints > 1)
                out->offset = ints[1];
            break;
        }
    }
    out->n_ints = n_ints;
out:
    return rc;
}

int bkm_aff_kmp_parse(const char *s, bkm_aff_kmp_t *out, bkm_err_t *err)
{
    const char *p;
    int ints[2] = {0, 0};
    int n_ints = 0;
    int rc = BKM_OK;

    if (out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: no output");
    memset(out, 0, sizeof(*out));
    out->verbose = out->warnings = out->respect = out->dups = -1;
    if (s == NULL)
        return BKM_OK;
    p = skip_ws(s);
    if (*p == '\0')
        return BKM_OK;

    for (;;) {
        const char *item = skip_ws(p);
        const char *w = item;
        size_t n;
        char tok[41];

        if (*w == ',' || *w == '\0') {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: empty item in \"%.60s\"", s);
            goto out;
        }
        if (*w == '-' || *w == '+') {
            tok_copy(tok, sizeof(tok), w, strcspn(w, ", \t") == 0 ? 1 : strcspn(w, ", \t"));
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid token \"%s\" (only non-negative "
                             "integers are allowed)", tok);
            goto out;
        }
        p = w;
        while (is_word_char(*p))
            p++;
        n = (size_t)(p - w);
        if (n == 0) {
            tok_copy(tok, sizeof(tok), w, strcspn(w, ",") == 0 ? 1 : strcspn(w, ","));
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: invalid token \"%s\"", tok);
            goto out;
        }
        tok_copy(tok, sizeof(tok), w, n);

        if ((rc = parse_item(w, n, tok, &p, ints, &n_ints, out, err)) != BKM_OK)
            goto out;

        p = skip_ws(p);
        if (*p == '\0')
            break;
        if (*p != ',') {
            char junk[41];
            tok_copy(junk, sizeof(junk), p, strcspn(p, ",") == 0 ? 1 : strcspn(p, ","));
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: unexpected \"%s\" after \"%s\"", junk, tok);
            goto out;
        }
        p++;
        if (*skip_ws(p) == '\0') {
            rc = bkm_err_set(err, BKM_EINVAL, "KMP_AFFINITY: trailing ',' in \"%.60s\"", s);
            goto out;
        }
    }

    rc = cross_rules(out, ints, n_ints, err);
out:
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* KMP_BLOCKTIME                                                                             */

int bkm_aff_blocktime_parse(const char *s, int *ms, bkm_err_t *err)
{
    const char *p;
    long long v = 0;
    long long mult = 1;
    if (s == NULL || ms == NULL)
        return bkm_err_set(err, BKM_EINVAL, "KMP_BLOCKTIME: no value");
    if (word_is(s, strlen(s), "infinite") || word_is(s, strlen(s), "infinity")) {
        *ms = INT_MAX;
        return BKM_OK;
    }
    p = s;
    if (!isdigit((unsigned char)*p))
        return bkm_err_set(err, BKM_EINVAL, "KMP_BLOCKTIME: invalid value \"%.40s\" (milliseconds, with an "
                           "optional s/m/h/d suffix, or infinite)", s);
    while (isdigit((unsigned char)*p)) {
        v = v * 10 + (*p - '0');
        if (v > INT_MAX)
            return bkm_err_set(err, BKM_EINVAL, "KMP_BLOCKTIME: value \"%.40s\" is too large "
                               "(largest finite value 2147483646 ms)", s);
        p++;
    }
    if (*p != '\0') {
        switch (tolower((unsigned char)*p)) {
        case 's': mult = 1000; break;
        case 'm': mult = 60000; break;
        case 'h': mult = 3600000; break;
        case 'd': mult = 86400000; break;
        default: mult = 0; break;
        }
        if (mult == 0 || p[1] != '\0')
            return bkm_err_set(err, BKM_EINVAL, "KMP_BLOCKTIME: invalid value \"%.40s\" (suffix \"%.10s\"; "
                               "libomp 14 accepts only s, m, h, d)", s, p);
    }
    v *= mult;
    if (v > 2147483646LL)
        return bkm_err_set(err, BKM_EINVAL, "KMP_BLOCKTIME: value \"%.40s\" is too large "
                           "(largest finite value 2147483646 ms)", s);
    *ms = (int)v;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* KMP_HW_SUBSET                                                                             */

static const struct {
    const char *name;
    bkm_aff_gran_t layer;
} hw_names[] = {
    {"s", BKM_AFF_GRAN_SOCKET},       {"socket", BKM_AFF_GRAN_SOCKET},
    {"sockets", BKM_AFF_GRAN_SOCKET}, {"c", BKM_AFF_GRAN_CORE},
    {"core", BKM_AFF_GRAN_CORE},      {"cores", BKM_AFF_GRAN_CORE},
    {"t", BKM_AFF_GRAN_THREAD},       {"thread", BKM_AFF_GRAN_THREAD},
    {"threads", BKM_AFF_GRAN_THREAD}, {"n", BKM_AFF_GRAN_NUMA},
    {"numa", BKM_AFF_GRAN_NUMA},      {"numa_domain", BKM_AFF_GRAN_NUMA},
    {"numa_domains", BKM_AFF_GRAN_NUMA}, {"l1", BKM_AFF_GRAN_L1},
    {"l2", BKM_AFF_GRAN_L2},          {"l3", BKM_AFF_GRAN_L3},
    {"l1_cache", BKM_AFF_GRAN_L1},    {"l2_cache", BKM_AFF_GRAN_L2},
    {"l3_cache", BKM_AFF_GRAN_L3},    {"die", BKM_AFF_GRAN_DIE},
    {"dice", BKM_AFF_GRAN_DIE},       {"module", BKM_AFF_GRAN_MODULE},
    {"modules", BKM_AFF_GRAN_MODULE}, {"tile", BKM_AFF_GRAN_TILE},
    {"tiles", BKM_AFF_GRAN_TILE},     {"ll", BKM_AFF_GRAN_LL},
    {"llc", BKM_AFF_GRAN_LL},         {"ll_cache", BKM_AFF_GRAN_LL},
    {"ll_caches", BKM_AFF_GRAN_LL},
};

int bkm_aff_hw_subset_parse(const char *s, bkm_aff_hw_subset_t *out, bkm_err_t *err)
{
    const char *p;
    if (out == NULL || s == NULL)
        return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: no value");
    memset(out, 0, sizeof(*out));
    p = skip_ws(s);
    if (*p == '\0')
        return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: empty value");
    for (;;) {
        bkm_aff_hw_item_t it = {BKM_AFF_GRAN_UNSET, 0, 0};
        const char *item = skip_ws(p), *w;
        size_t n, i;
        char tok[41];
        int j;
        p = item;
        tok_copy(tok, sizeof(tok), item, strcspn(item, ",xX") == 0 ? 1 : strcspn(item, ",xX"));
        if (read_num(&p, &it.num) != BKM_OK || it.num <= 0)
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: item \"%s\" must start with a positive "
                               "count (e.g. 2s, 16c, 1t)", tok);
        p = skip_ws(p);
        w = p;
        while (isalnum((unsigned char)*p) || *p == '_') {
            /* 'x' is libomp's old level delimiter (2sx4cx2t) unless it ends a keyword. */
            if ((*p == 'x' || *p == 'X') && p > w)
                break;
            p++;
        }
        n = (size_t)(p - w);
        for (i = 0; i < sizeof(hw_names) / sizeof(hw_names[0]); i++)
            if (n > 0 && word_is(w, n, hw_names[i].name))
                it.layer = hw_names[i].layer;
        if (it.layer == BKM_AFF_GRAN_UNSET && n > 0 && tolower((unsigned char)*w) == 'p')
            /* libomp 14 matches layer names by prefix: p... is its (Windows) processor group, a layer
             * Linux never has, so it warns (W#286) and ignores the whole variable */
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: libomp 14 reads the layer of item \"%s\" as a "
                               "processor group, which Linux has not, and ignores the variable: a socket is s", tok);
        if (it.layer == BKM_AFF_GRAN_UNSET)
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: unknown layer in item \"%s\" (s, c, t, n, "
                               "l1, l2, l3, ll, die, module, tile)", tok);
        p = skip_ws(p);
        if (*p == '@') {
            p = skip_ws(p + 1);
            if (read_num(&p, &it.offset) != BKM_OK)
                return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: bad offset in item \"%s\"", tok);
            p = skip_ws(p);
        }
        for (j = 0; j < out->n; j++)
            if (out->item[j].layer == it.layer)
                return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: layer of item \"%s\" given twice", tok);
        if (out->n >= (int)(sizeof(out->item) / sizeof(out->item[0])))
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: too many items");
        out->item[out->n++] = it;
        if (*p == '\0')
            break;
        if (*p != ',' && *p != 'x' && *p != 'X')
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: unexpected \"%.20s\" in item \"%s\"", p, tok);
        p++;
        if (*skip_ws(p) == '\0')
            return bkm_err_set(err, BKM_EINVAL, "KMP_HW_SUBSET: trailing delimiter in \"%.60s\"", s);
    }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY                                               */

static const struct {
    const char *name;
    bkm_aff_gran_t kind;
} place_names[] = {
    {"threads", BKM_AFF_GRAN_THREAD},  {"cores", BKM_AFF_GRAN_CORE},
    {"sockets", BKM_AFF_GRAN_SOCKET},  {"ll_caches", BKM_AFF_GRAN_LL},
    {"numa_domains", BKM_AFF_GRAN_NUMA}, {"tiles", BKM_AFF_GRAN_TILE},
    {"dice", BKM_AFF_GRAN_DIE},        {"modules", BKM_AFF_GRAN_MODULE},
    {"l1_caches", BKM_AFF_GRAN_L1},    {"l2_caches", BKM_AFF_GRAN_L2},
    {"l3_caches", BKM_AFF_GRAN_L3},
};

int bkm_aff_places_parse(const char *s, bkm_aff_places_t *out, bkm_err_t *err)
{
    const char *p, *w;
    size_t n, i, len;
    if (out == NULL || s == NULL)
        return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: no value");
    memset(out, 0, sizeof(*out));
    p = skip_ws(s);
    if (*p == '\0')
        return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: empty value");
    if (isalpha((unsigned char)*p)) {
        w = p;
        while (is_word_char(*p))
            p++;
        n = (size_t)(p - w);
        for (i = 0; i < sizeof(place_names) / sizeof(place_names[0]); i++)
            if (word_is(w, n, place_names[i].name))
                out->kind = place_names[i].kind;
        if (out->kind == BKM_AFF_GRAN_UNSET) {
            char tok[41];
            tok_copy(tok, sizeof(tok), w, n);
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: unknown place kind \"%s\" (threads, cores, "
                               "sockets, ll_caches, numa_domains, tiles, l2_caches, ...)", tok);
        }
        p = skip_ws(p);
        if (*p == '(') {
            p = skip_ws(p + 1);
            if (read_num(&p, &out->count) != BKM_OK || out->count <= 0)
                return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: bad count in \"%.40s\" (a positive integer)", s);
            p = skip_ws(p);
            if (*p != ')')
                return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: missing ')' in \"%.40s\"", s);
            p = skip_ws(p + 1);
        }
        if (*p != '\0')
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: unexpected \"%.20s\" after the place kind", p);
        return BKM_OK;
    }
    len = strlen(p);
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len >= sizeof(out->list))
        return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: list longer than %d characters",
                           (int)sizeof(out->list) - 1);
    memcpy(out->list, p, len);
    out->list[len] = '\0';
    return bkm__aff_placelist_check(out->list, err);
}

int bkm_aff_proc_bind_parse(const char *s, bkm_aff_proc_bind_t *out, bkm_err_t *err)
{
    const char *p;
    if (out == NULL || s == NULL)
        return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: no value");
    memset(out, 0, sizeof(*out));
    p = skip_ws(s);
    if (*p == '\0')
        return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: empty value");
    for (;;) {
        const char *w = skip_ws(p);
        size_t n;
        bkm_aff_bind_t b;
        char tok[41];
        p = w;
        while (is_word_char(*p))
            p++;
        n = (size_t)(p - w);
        tok_copy(tok, sizeof(tok), w, n == 0 ? (strcspn(w, ",") == 0 ? 1 : strcspn(w, ",")) : n);
        if (word_is(w, n, "false"))
            b = BKM_AFF_BIND_FALSE;
        else if (word_is(w, n, "true"))
            b = BKM_AFF_BIND_TRUE;
        else if (word_is(w, n, "primary") || word_is(w, n, "master"))
            b = BKM_AFF_BIND_PRIMARY;
        else if (word_is(w, n, "close"))
            b = BKM_AFF_BIND_CLOSE;
        else if (word_is(w, n, "spread"))
            b = BKM_AFF_BIND_SPREAD;
        else
            return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: invalid value \"%s\" (false, true, primary, "
                               "master, close, spread, or a comma list for nested levels)", tok);
        if ((b == BKM_AFF_BIND_FALSE || b == BKM_AFF_BIND_TRUE) && out->n > 0)
            return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: \"%s\" is only valid alone, not in a list", tok);
        if (out->n > 0 && (out->level[0] == BKM_AFF_BIND_FALSE || out->level[0] == BKM_AFF_BIND_TRUE))
            return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: \"%s\" after true/false", tok);
        if (out->n >= (int)(sizeof(out->level) / sizeof(out->level[0])))
            return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: more than 8 nesting levels");
        out->level[out->n++] = b;
        p = skip_ws(p);
        if (*p == '\0')
            break;
        if (*p != ',')
            return bkm_err_set(err, BKM_EINVAL, "OMP_PROC_BIND: unexpected \"%.20s\" after \"%s\"", p, tok);
        p++;
    }
    return BKM_OK;
}

int bkm_aff_gomp_parse(const char *s, char *proclist, size_t n, bkm_err_t *err)
{
    const char *p;
    size_t len;
    int rc;
    if (s == NULL || proclist == NULL || n == 0)
        return bkm_err_set(err, BKM_EINVAL, "GOMP_CPU_AFFINITY: no value");
    p = skip_ws(s);
    len = strlen(p);
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n'))
        len--;
    if (len + 1 > n)
        return bkm_err_set(err, BKM_EINVAL, "GOMP_CPU_AFFINITY: longer than %d characters", (int)n - 1);
    memcpy(proclist, p, len);
    proclist[len] = '\0';
    if (strchr(proclist, '{') != NULL || strchr(proclist, '}') != NULL)
        return bkm_err_set(err, BKM_EINVAL, "GOMP_CPU_AFFINITY: \"{\" sets are not part of its syntax "
                           "(N, N-M, N-M:S separated by spaces or commas)");
    rc = bkm__aff_proclist_walk("GOMP_CPU_AFFINITY", proclist, NULL, NULL, err);
    if (rc != BKM_OK)
        proclist[0] = '\0';
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Precedence (docs/affinity.md §1.3)                                                        */

static int wait_policy_parse(const char *s, int *active, bkm_err_t *err)
{
    const char *p = skip_ws(s), *w = p;
    size_t n;
    while (is_word_char(*p))
        p++;
    n = (size_t)(p - w);
    if (*skip_ws(p) == '\0' && word_is(w, n, "active")) {
        *active = 1;
        return BKM_OK;
    }
    if (*skip_ws(p) == '\0' && word_is(w, n, "passive")) {
        *active = 0;
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "OMP_WAIT_POLICY: invalid value \"%.40s\" (active or passive)", s);
}

int bkm_aff_setting_resolve(const bkm_aff_env_t *env, bkm_aff_setting_t *out, bkm_err_t *err)
{
    bkm_aff_kmp_t kmp;
    int rc = BKM_OK;
    const char *hw;
    if (env == NULL || out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "affinity settings: no environment given");
    memset(out, 0, sizeof(*out));

    if ((rc = bkm_aff_kmp_parse(env->kmp_affinity, &kmp, err)) != BKM_OK)
        return rc;
    out->kmp = kmp;

    hw = env->kmp_hw_subset != NULL ? env->kmp_hw_subset : env->kmp_place_threads;
    if (env->kmp_hw_subset != NULL && env->kmp_place_threads != NULL)
        out->ignored[out->n_ignored++] = "KMP_PLACE_THREADS";
    if (hw != NULL) {
        if ((rc = bkm_aff_hw_subset_parse(hw, &out->hw_subset, err)) != BKM_OK)
            return rc;
        out->hw_subset_set = 1;
    }

    out->blocktime_ms = 200;
    if (env->omp_wait_policy != NULL) {
        int active = 0;
        if ((rc = wait_policy_parse(env->omp_wait_policy, &active, err)) != BKM_OK)
            return rc;
        out->blocktime_ms = active ? INT_MAX : 0;
    }
    if (env->kmp_blocktime != NULL &&
        (rc = bkm_aff_blocktime_parse(env->kmp_blocktime, &out->blocktime_ms, err)) != BKM_OK)
        return rc;

    /* Parse every variable even when it loses, so that a bad value is still reported. */
    {
        char gomp[BKM_AFF_PROCLIST_MAX];
        bkm_aff_places_t places;
        bkm_aff_proc_bind_t bind;
        if (env->gomp_cpu_affinity != NULL &&
            (rc = bkm_aff_gomp_parse(env->gomp_cpu_affinity, gomp, sizeof(gomp), err)) != BKM_OK)
            return rc;
        if (env->omp_places != NULL && (rc = bkm_aff_places_parse(env->omp_places, &places, err)) != BKM_OK)
            return rc;
        if (env->omp_proc_bind != NULL && (rc = bkm_aff_proc_bind_parse(env->omp_proc_bind, &bind, err)) != BKM_OK)
            return rc;

        if (kmp.type != BKM_AFF_TYPE_UNSET) {
            out->src = BKM_AFF_SRC_KMP;
            if (env->gomp_cpu_affinity != NULL)
                out->ignored[out->n_ignored++] = "GOMP_CPU_AFFINITY";
            if (env->omp_places != NULL)
                out->ignored[out->n_ignored++] = "OMP_PLACES";
            if (env->omp_proc_bind != NULL)
                out->ignored[out->n_ignored++] = "OMP_PROC_BIND";
        } else if (env->gomp_cpu_affinity != NULL) {
            out->src = BKM_AFF_SRC_GOMP;
            out->kmp.type = BKM_AFF_TYPE_EXPLICIT;
            /* A typeless KMP_AFFINITY exported after it (bkm's order) overrides the fine granularity. */
            if (out->kmp.gran == BKM_AFF_GRAN_UNSET)
                out->kmp.gran = BKM_AFF_GRAN_THREAD;
            snprintf(out->kmp.proclist, sizeof(out->kmp.proclist), "%s", gomp);
            if (env->omp_places != NULL)
                out->ignored[out->n_ignored++] = "OMP_PLACES";
            if (env->omp_proc_bind != NULL)
                out->ignored[out->n_ignored++] = "OMP_PROC_BIND";
        } else if (env->omp_places != NULL || env->omp_proc_bind != NULL) {
            out->src = BKM_AFF_SRC_OMP;
            if (env->omp_places != NULL) {
                out->places_set = 1;
                out->places = places;
            }
            if (env->omp_proc_bind != NULL) {
                out->proc_bind_set = 1;
                out->proc_bind = bind;
            }
        } else {
            out->src = BKM_AFF_SRC_DEFAULT;
        }
    }
    return BKM_OK;
}

int bkm_aff_env_export(const bkm_aff_env_t *env, const char *names[8], const char *values[8])
{
    const char *const n[8] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_HW_SUBSET",
                              "KMP_PLACE_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME", "OMP_WAIT_POLICY"};
    const char *v[8];
    int i, k = 0;
    if (env == NULL)
        return 0;
    v[0] = env->omp_proc_bind;
    v[1] = env->omp_places;
    v[2] = env->gomp_cpu_affinity;
    v[3] = env->kmp_hw_subset;
    v[4] = env->kmp_place_threads;
    v[5] = env->kmp_affinity;
    v[6] = env->kmp_blocktime;
    v[7] = env->omp_wait_policy;
    for (i = 0; i < 8; i++) {
        if (v[i] == NULL)
            continue;
        names[k] = n[i];
        values[k] = v[i];
        k++;
    }
    return k;
}
