/* SPDX-License-Identifier: MIT */
/* libgomp 12's place list: OMP_PLACES (abstract kinds from the sysfs view of the topology, or an
 * explicit list), GOMP_CPU_AFFINITY, and the default `threads`. Each step follows the libgomp
 * function named in its comment (env.c, config/linux/affinity.c), with libgomp's arithmetic:
 * numbers are read with strtoul/strtol as libgomp reads them, CPU numbers are unsigned long and
 * range-checked against 8 x the CPU set size libgomp allocates. */
#include "gomp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- The place list -------------------------------------------------------------------- */

void bkm__gomp_places_clear(bkm__gomp_t *g)
{
    bkm_free(g->places);
    g->places = NULL;
    g->n_places = g->cap_places = 0;
}

/* A new empty place at the end of the list; NULL when out of memory or over the limit. */
static bkm_cpuset_t *place_push(bkm__gomp_t *g)
{
    if (g->n_places >= BKM__GOMP_PLACES_MAX) {
        g->oom = 1;
        return NULL;
    }
    if (g->n_places == g->cap_places) {
        int cap = g->cap_places ? g->cap_places * 2 : 64;
        bkm_cpuset_t *n = bkm_realloc(g->places, (size_t)cap * sizeof(*n));
        if (n == NULL) {
            g->oom = 1;
            return NULL;
        }
        g->places = n;
        g->cap_places = cap;
    }
    bkm_cpuset_zero(&g->places[g->n_places]);
    return &g->places[g->n_places++];
}

/* gomp_affinity_add_cpus: CPUs num, num+stride, ... (len of them). 0 when one is out of range
 * (message unless quiet). A zero stride sets the one CPU (libgomp sets it len times). */
static int add_cpus(bkm__gomp_t *g, bkm_cpuset_t *p, unsigned long num, unsigned long len, long stride, int quiet)
{
    for (;;) {
        if (num >= g->max) {
            if (!quiet)
                bkm__gomp_msg(g, "Logical CPU number %lu out of range", num);
            bkm__gomp_why(g, "CPU %lu is out of range (libgomp's CPU set holds CPUs 0-%lu)", num, g->max - 1);
            return 0;
        }
        bkm_cpuset_set(p, (int)num);
        if (--len == 0 || stride == 0)
            return 1;
        if ((stride < 0 && num + (unsigned long)stride > num) || (stride > 0 && num + (unsigned long)stride < num)) {
            if (!quiet)
                bkm__gomp_msg(g, "Logical CPU number %lu+%ld out of range", num, stride);
            bkm__gomp_why(g, "CPU %lu%+ld is out of range", num, stride);
            return 0;
        }
        num += (unsigned long)stride;
    }
}

/* gomp_affinity_remove_cpu (messages always). */
static int remove_cpu(bkm__gomp_t *g, bkm_cpuset_t *p, unsigned long num)
{
    if (num >= g->max) {
        bkm__gomp_msg(g, "Logical CPU number %lu out of range", num);
        bkm__gomp_why(g, "CPU %lu to exclude is out of range (libgomp's CPU set holds CPUs 0-%lu)", num, g->max - 1);
        return 0;
    }
    if (!bkm_cpuset_isset(p, (int)num)) {
        bkm__gomp_msg(g, "Logical CPU %lu to be removed is not in the set", num);
        bkm__gomp_why(g, "!%lu excludes a CPU that is not in the place", num);
        return 0;
    }
    bkm_cpuset_clr(p, (int)num);
    return 1;
}

/* gomp_affinity_copy_place: @p dst = @p src shifted by @p stride. */
static int copy_place(bkm__gomp_t *g, bkm_cpuset_t *dst, const bkm_cpuset_t *src, long stride)
{
    bkm_cpuset_zero(dst);
    for (int c = bkm_cpuset_first(src); c >= 0; c = bkm_cpuset_next(src, c)) {
        unsigned long i = (unsigned long)c, j = i + (unsigned long)stride;
        if ((stride < 0 && j > i) || (stride > 0 && (j < i || j >= g->max))) {
            bkm__gomp_msg(g, "Logical CPU number %lu+%ld out of range", i, stride);
            bkm__gomp_why(g, "replicating the place moves CPU %lu by %ld out of range (0-%lu)", i, stride, g->max - 1);
            return 0;
        }
        bkm_cpuset_set(dst, (int)j);
    }
    return 1;
}

/* gomp_affinity_finalize_place_list: each place AND the initial mask, empty ones dropped. */
static int finalize(bkm__gomp_t *g, int quiet)
{
    int j = 0;
    for (int i = 0; i < g->n_places; i++) {
        bkm_cpuset_and(&g->places[i], &g->mask);
        if (!bkm_cpuset_is_empty(&g->places[i]))
            g->places[j++] = g->places[i];
    }
    if (j == 0) {
        if (!quiet)
            bkm__gomp_msg(g, "None of the places contain usable logical CPUs");
        bkm__gomp_why(g, "no place holds a CPU of the initial mask");
        return 0;
    }
    if (j < g->n_places) {
        if (!quiet)
            bkm__gomp_msg(g,
                          "Number of places reduced from %ld to %ld because some places didn't contain any usable "
                          "logical CPUs",
                          (long)g->n_places, (long)j);
        bkm__gomp_why(g, "%d of the %d places hold no CPU of the initial mask", g->n_places - j, g->n_places);
    }
    g->n_places = j;
    return 1;
}

/* ---- Explicit OMP_PLACES lists (env.c parse_one_place, parse_places_var) ---------------- */

static const char *skip_ws(const char *s)
{
    while (bkm__gomp_isspace((unsigned char)*s))
        s++;
    return s;
}

/* A number with strtoul/strtol as libgomp reads it; 0 when libgomp rejects it. @p need_digits:
 * libgomp checks that a digit was read (otherwise "" reads as 0). */
static int read_ulong(const char **s, unsigned long *v, int need_digits)
{
    char *end;
    errno = 0;
    *v = strtoul(*s, &end, 10);
    if (errno || (need_digits && end == *s))
        return 0;
    *s = end;
    return 1;
}

static int read_long(const char **s, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(*s, &end, 10);
    if (errno || end == *s)
        return 0;
    *s = end;
    return 1;
}

typedef struct one_place {
    int negate;
    unsigned long len;
    long stride;
} one_place_t;

/* One place at *pp: [!](NUM | {res,...})[:len[:stride]], res = NUM[:len[:stride]] | !NUM. @p p:
 * the place being built (NULL: the syntax pass, nothing is evaluated). 0 when invalid. */
static int parse_one_place(bkm__gomp_t *g, const char **pp, bkm_cpuset_t *p, one_place_t *o, const char *all)
{
    const char *s = skip_ws(*pp), *start;
    int braces = 1, any_negate = 0;
    o->negate = 0;
    o->len = 1;
    o->stride = 1;
    if (*s == '!') {
        o->negate = 1;
        s = skip_ws(s + 1);
    }
    if (*s != '{') {
        unsigned long num;
        if (!read_ulong(&s, &num, 1)) {
            bkm__gomp_why(g, "expected a place ({...}, !place or a CPU number) at \"%.20s\"", *s ? s : "(end)");
            return 0;
        }
        s--; /* on the number's last digit: the common tail below steps over it */
        braces = 0;
        if (p != NULL && !add_cpus(g, p, num, 1, 1, 0))
            return 0;
    } else {
        s = skip_ws(s + 1);
    }
    start = s;
    /* With an exclusion inside the braces libgomp reads them twice: additions, then removals. */
    for (int pass = 0; pass < (any_negate ? 2 : braces); pass++) {
        s = start;
        for (;;) {
            unsigned long num, len = 1;
            long stride = 1;
            int neg = *s == '!';
            if (neg) {
                if (p != NULL)
                    any_negate = 1;
                s = skip_ws(s + 1);
            }
            if (!read_ulong(&s, &num, 1)) {
                bkm__gomp_why(g, "expected a CPU number at \"%.20s\"%s", *s ? s : "(end)",
                              *s == '-' ? " ('-' ranges are not part of the grammar: write {start:length})" : "");
                return 0;
            }
            s = skip_ws(s);
            if (*s == ':') {
                s++;
                if (neg) {
                    bkm__gomp_why(g, "an excluded CPU (!%lu) takes no length", num);
                    return 0;
                }
                s = skip_ws(s);
                if (!read_ulong(&s, &len, 0) || len == 0) {
                    bkm__gomp_why(g, "expected a length of at least 1 after %lu:", num);
                    return 0;
                }
                s = skip_ws(s);
                if (*s == ':') {
                    s = skip_ws(s + 1);
                    if (!read_long(&s, &stride)) {
                        bkm__gomp_why(g, "expected a stride after %lu:%lu:", num, len);
                        return 0;
                    }
                    s = skip_ws(s);
                }
            }
            if (p != NULL && pass == neg) {
                if (neg ? !remove_cpu(g, p, num) : !add_cpus(g, p, num, len, stride, 0))
                    return 0;
            }
            if (*s == '}')
                break;
            if (*s != ',') {
                bkm__gomp_why(g, "unexpected \"%.20s\" in a place (expected ',' or '}')%s", *s ? s : "(end)",
                              *s == '-' ? ": '-' ranges are not part of the grammar, write {start:length}" : "");
                return 0;
            }
            s++;
        }
    }
    s = skip_ws(s + 1);
    if (*s == ':') {
        if (o->negate) {
            bkm__gomp_why(g, "an excluded place (!...) takes no count");
            return 0;
        }
        s = skip_ws(s + 1);
        if (!read_ulong(&s, &o->len, 0) || o->len == 0 || o->len >= 65536) {
            bkm__gomp_why(g, "expected a place count of 1..65535 after ':' in \"%.60s\"", all);
            return 0;
        }
        s = skip_ws(s);
        if (*s == ':') {
            s = skip_ws(s + 1);
            if (!read_long(&s, &o->stride)) {
                bkm__gomp_why(g, "expected a stride after the place count in \"%.60s\"", all);
                return 0;
            }
            s = skip_ws(s);
        }
    }
    *pp = s;
    return 1;
}

/* The syntax pass over an explicit list: 1 when libgomp accepts it. */
static int places_syntax(bkm__gomp_t *g, const char *list)
{
    const char *s = list;
    unsigned long count = 0;
    int any_negate = 0;
    for (;;) {
        one_place_t o;
        if (!parse_one_place(g, &s, NULL, &o, list))
            return 0;
        if (o.negate) {
            if (!any_negate)
                count++;
            any_negate = 1;
        } else {
            count += o.len;
        }
        if (count > 65536) {
            bkm__gomp_why(g, "more than 65536 places");
            return 0;
        }
        if (*s == '\0')
            return 1;
        if (*s != ',') {
            bkm__gomp_why(g, "unexpected \"%.20s\" after a place (expected ',')%s", s,
                          *s == '-' ? ": '-' ranges are not part of the grammar, write {start:length}" : "");
            return 0;
        }
        s++;
    }
}

/* The evaluation pass (the syntax is known to be good): 1 when it gave a place list. */
static int places_eval(bkm__gomp_t *g, const char *list)
{
    const char *s = list;
    bkm_cpuset_t scratch;
    for (;;) {
        one_place_t o;
        bkm_cpuset_zero(&scratch);
        if (!parse_one_place(g, &s, &scratch, &o, list))
            return 0;
        if (o.negate) {
            int k;
            for (k = 0; k < g->n_places; k++)
                if (bkm_cpuset_equal(&g->places[k], &scratch))
                    break;
            if (k == g->n_places) {
                bkm__gomp_msg(g, "Trying to remove a non-existing place from list of places");
                bkm__gomp_why(g, "an excluded place (!...) is not in the list before it");
                return 0;
            }
            memmove(&g->places[k], &g->places[k + 1], (size_t)(g->n_places - k - 1) * sizeof(g->places[0]));
            g->n_places--;
        } else {
            bkm_cpuset_t *first = place_push(g);
            if (first == NULL)
                return 0;
            *first = scratch;
            for (unsigned long r = 1; r < o.len; r++) {
                bkm_cpuset_t *next = place_push(g);
                if (next == NULL || !copy_place(g, next, &g->places[g->n_places - 2], o.stride))
                    return 0;
            }
        }
        if (*s == '\0')
            break;
        s++;
    }
    if (g->n_places == 0) {
        bkm__gomp_msg(g, "All places have been removed");
        bkm__gomp_why(g, "every place is excluded again");
        return 0;
    }
    return finalize(g, 0);
}

/* ---- Abstract kinds from sysfs (config/linux/affinity.c) --------------------------------- */

/* The sysfs lists libgomp reads for CPU @p os: thread_siblings_list (the PUs of its core),
 * core_siblings_list (the PUs of its package), the shared_cpu_list of its highest-level cache.
 * Ascending, as the kernel prints them. */
enum { LIST_THREAD_SIBLINGS, LIST_CORE_SIBLINGS, LIST_LLC };

static int pu_index(const bkm_topo_pu_t *pu, int n, int os)
{
    for (int i = 0; i < n; i++)
        if (pu[i].os == os)
            return i;
    return -1;
}

/* 1 when CPU @p os has the file (it is a PU of the topology; for LIST_LLC, one with a cache). */
static int sysfs_list(const bkm_topo_t *topo, int kind, int os, bkm_cpuset_t *out)
{
    int n = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(topo, &n);
    int me = pu_index(pu, n, os);
    bkm_cpuset_zero(out);
    if (me < 0 || (kind == LIST_LLC && pu[me].llc < 0))
        return 0;
    for (int i = 0; i < n; i++) {
        int same = kind == LIST_THREAD_SIBLINGS ? pu[i].core == pu[me].core && pu[i].pkg == pu[me].pkg
                   : kind == LIST_CORE_SIBLINGS ? pu[i].pkg == pu[me].pkg
                                                : pu[i].llc == pu[me].llc;
        if (same)
            bkm_cpuset_set(out, pu[i].os);
    }
    return 1;
}

typedef struct level_walk {
    bkm__gomp_t *g;
    int level; /* 1 threads, 2 cores, 3 sockets, 4 ll_caches */
    unsigned long count;
    bkm_cpuset_t copy; /* CPUs not yet placed */
    int llc_cpu;       /* ll_caches: the CPU whose cache list every CPU reads, -1 before */
} level_walk_t;

/* gomp_affinity_init_level_1: walk the CPUs left in ascending order; @p this_level 3 reads the
 * package lists, 2 the core lists, 4 the cache list. For threads and cores the package pass only
 * starts the core pass, which then takes every CPU left, whatever its package. */
static int level_1(level_walk_t *w, int this_level)
{
    bkm__gomp_t *g = w->g;
    for (unsigned long i = 0; i < g->max && (unsigned long)g->n_places < w->count; i++) {
        bkm_cpuset_t list, cur;
        int counted_slot = 0;
        if (!bkm_cpuset_isset(&w->copy, (int)i))
            continue;
        if (w->level == 4) {
            /* The bug of 12.2: the path is formatted for the first CPU with a cache only. */
            if (w->llc_cpu < 0) {
                if (!sysfs_list(g->topo, LIST_LLC, (int)i, &list)) {
                    bkm_cpuset_clr(&w->copy, (int)i);
                    continue;
                }
                w->llc_cpu = (int)i;
            }
            sysfs_list(g->topo, LIST_LLC, w->llc_cpu, &list);
        } else if (!sysfs_list(g->topo, this_level == 3 ? LIST_CORE_SIBLINGS : LIST_THREAD_SIBLINGS, (int)i, &list)) {
            bkm_cpuset_clr(&w->copy, (int)i);
            continue;
        }
        bkm_cpuset_zero(&cur);
        for (int c = bkm_cpuset_first(&list); c >= 0; c = bkm_cpuset_next(&list, c)) {
            if (!bkm_cpuset_isset(&w->copy, c))
                continue;
            if (this_level == 3 && w->level < 3) {
                if (level_1(w, 2) < 0)
                    return -1;
                continue;
            }
            if (w->level == 1) {
                bkm_cpuset_t *p = place_push(g);
                if (p == NULL)
                    return -1;
                bkm_cpuset_set(p, c);
                bkm_cpuset_clr(&w->copy, c);
                if ((unsigned long)g->n_places >= w->count)
                    return 0;
                continue;
            }
            if ((unsigned long)c < g->max) {
                bkm_cpuset_set(&cur, c);
                bkm_cpuset_clr(&w->copy, c);
                counted_slot = 1;
            }
        }
        /* The place counts when CPU i itself was in it (always on a consistent sysfs). */
        if (w->level == this_level && counted_slot && !bkm_cpuset_isset(&w->copy, (int)i)) {
            bkm_cpuset_t *p = place_push(g);
            if (p == NULL)
                return -1;
            *p = cur;
        }
        bkm_cpuset_clr(&w->copy, (int)i);
    }
    return 0;
}

/* gomp_affinity_init_numa_domains: one place per node (ascending ids, as node/online lists them)
 * with CPUs left. */
static void numa_domains(level_walk_t *w)
{
    bkm__gomp_t *g = w->g;
    int n_numa = 0;
    const bkm_topo_numa_t *numa = bkm_topo_numas(g->topo, &n_numa);
    int last = -1;
    for (;;) {
        int next = -1;
        for (int k = 0; k < n_numa; k++)
            if (numa[k].os > last && (next < 0 || numa[k].os < numa[next].os))
                next = k;
        if (next < 0 || (unsigned long)g->n_places >= w->count)
            return;
        last = numa[next].os;
        bkm_cpuset_t *p = NULL;
        for (int c = bkm_cpuset_first(&numa[next].cpus); c >= 0; c = bkm_cpuset_next(&numa[next].cpus, c)) {
            if (!bkm_cpuset_isset(&w->copy, c))
                continue;
            if (p == NULL && (p = place_push(g)) == NULL)
                return;
            bkm_cpuset_set(p, c);
            bkm_cpuset_clr(&w->copy, c);
        }
    }
}

int bkm__gomp_places_level(bkm__gomp_t *g, int level, unsigned long count, int quiet)
{
    level_walk_t w;
    bkm__gomp_places_clear(g);
    if (count > (unsigned long)g->popcount)
        count = (unsigned long)g->popcount;
    memset(&w, 0, sizeof(w));
    w.g = g;
    w.level = level;
    w.count = count;
    w.copy = g->mask;
    w.llc_cpu = -1;
    if (level == 5)
        numa_domains(&w);
    else if (level_1(&w, level > 3 ? level : 3) < 0)
        return 0;
    if (g->oom)
        return 0;
    if (g->n_places == 0) {
        if (!quiet)
            bkm__gomp_msg(g, "Error reading core/socket topology");
        bkm__gomp_why(g, "the topology gives no place of this kind%s",
                      level == 4   ? " (no cache is listed)"
                      : level == 5 ? " (no NUMA node with a CPU of the mask)"
                                   : "");
        bkm__gomp_places_clear(g);
        return 0;
    }
    return 1;
}

/* ---- OMP_PLACES (parse_places_var) ------------------------------------------------------ */

static const struct {
    const char *name;
    int level;
} kinds[] = {{"threads", 1}, {"cores", 2}, {"sockets", 3}, {"ll_caches", 4}, {"numa_domains", 5}};

int bkm__gomp_places_var(bkm__gomp_t *g, const char *value, int ignore)
{
    const char *s = skip_ws(value);
    int level = 0;
    bkm__gomp_places_clear(g);
    if (*s == '\0') {
        bkm__gomp_why(g, "the value is empty");
        goto invalid;
    }
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n = strlen(kinds[k].name);
        if (strncasecmp(s, kinds[k].name, n) == 0) {
            level = kinds[k].level;
            s += n;
            break;
        }
    }
    if (level) {
        unsigned long count = (unsigned long)-1;
        s = skip_ws(s);
        if (*s != '\0') {
            if (*s++ != '(') {
                bkm__gomp_why(g, "unexpected \"%.20s\" after the place kind (expected \"(count)\")", s - 1);
                goto invalid;
            }
            s = skip_ws(s);
            if (!read_ulong(&s, &count, 1)) {
                bkm__gomp_why(g, "expected a place count in \"(...)\"");
                goto invalid;
            }
            s = skip_ws(s);
            if (*s != ')') {
                bkm__gomp_why(g, "expected ')' after the place count, not \"%.20s\"", *s ? s : "(end)");
                goto invalid;
            }
            s = skip_ws(s + 1);
            if (*s != '\0') {
                bkm__gomp_why(g, "unexpected \"%.20s\" after the place count", s);
                goto invalid;
            }
        }
        if (ignore)
            return 0;
        return bkm__gomp_places_level(g, level, count, 0);
    }
    if (!places_syntax(g, s))
        goto invalid;
    if (ignore)
        return 0;
    if (places_eval(g, s))
        return 1;
    if (g->oom)
        return 0;
invalid:
    bkm__gomp_places_clear(g);
    bkm__gomp_msg(g, "Invalid value for environment variable OMP_PLACES");
    return 0;
}

/* ---- GOMP_CPU_AFFINITY (parse_affinity) ------------------------------------------------- */

/* A CPU number as parse_affinity reads it: strtoul base 0 (hex 0x.., octal 0..). */
static int read_cpu(const char **s, unsigned long *v)
{
    char *end;
    errno = 0;
    *v = strtoul(*s, &end, 0);
    if (errno || end == *s)
        return 0;
    *s = end;
    return 1;
}

int bkm__gomp_affinity_var(bkm__gomp_t *g, const char *value, int ignore)
{
    for (int pass = 0; pass < 2; pass++) {
        const char *s = value;
        if (pass == 1) {
            if (ignore)
                return 0;
            bkm__gomp_places_clear(g);
        }
        for (;;) {
            unsigned long beg, end, stride = 1;
            s = skip_ws(s);
            if (!read_cpu(&s, &beg) || beg >= 65536) {
                bkm__gomp_why(g, "expected a CPU number 0..65535 at \"%.20s\"", *s ? s : "(end)");
                goto invalid;
            }
            end = beg;
            if (*s == '-') {
                s++;
                if (!read_cpu(&s, &end) || end >= 65536 || end < beg) {
                    bkm__gomp_why(g, "expected a last CPU %lu..65535 after \"%lu-\"", beg, beg);
                    goto invalid;
                }
                if (*s == ':') {
                    char *e;
                    s++;
                    errno = 0;
                    stride = strtoul(s, &e, 0);
                    if (errno || stride == 0 || stride >= 65536) {
                        bkm__gomp_why(g, "expected a stride 1..65535 after \"%lu-%lu:\"", beg, end);
                        goto invalid;
                    }
                    s = e;
                }
            }
            if (pass == 1) {
                for (unsigned long n = (end - beg) / stride + 1; n > 0; n--, beg += stride) {
                    bkm_cpuset_t one;
                    bkm_cpuset_zero(&one);
                    if (add_cpus(g, &one, beg, 1, 0, 1)) {
                        bkm_cpuset_t *p = place_push(g);
                        if (p == NULL)
                            return 0;
                        *p = one;
                    } else {
                        g->dropped++;
                    }
                }
            }
            s = skip_ws(s);
            if (*s == ',')
                s++;
            else if (*s == '\0')
                break;
        }
    }
    if (g->n_places == 0) {
        bkm__gomp_why(g, "every CPU is beyond libgomp's CPU set (0-%lu) and dropped", g->max - 1);
        return 0;
    }
    return 1;
invalid:
    bkm__gomp_msg(g, "Invalid value for enviroment variable GOMP_CPU_AFFINITY");
    return 0;
}
