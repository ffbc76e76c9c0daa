/* SPDX-License-Identifier: MIT */
/* Fixed-size CPU sets of OS processor indexes. */
#include "bkm/common.h"

#include <ctype.h>
#include <string.h>

void bkm_cpuset_zero(bkm_cpuset_t *s) { memset(s, 0, sizeof(*s)); }

int bkm_cpuset_set(bkm_cpuset_t *s, int cpu)
{
    if (cpu < 0 || cpu >= BKM_CPUSET_MAX)
        return BKM_EINVAL;
    s->w[cpu / 64] |= 1ull << (cpu % 64);
    return BKM_OK;
}

void bkm_cpuset_clr(bkm_cpuset_t *s, int cpu)
{
    if (cpu >= 0 && cpu < BKM_CPUSET_MAX)
        s->w[cpu / 64] &= ~(1ull << (cpu % 64));
}

int bkm_cpuset_isset(const bkm_cpuset_t *s, int cpu)
{
    if (cpu < 0 || cpu >= BKM_CPUSET_MAX)
        return 0;
    return (s->w[cpu / 64] >> (cpu % 64)) & 1u;
}

int bkm_cpuset_count(const bkm_cpuset_t *s)
{
    int n = 0;
    for (size_t i = 0; i < sizeof(s->w) / sizeof(s->w[0]); i++)
        n += __builtin_popcountll(s->w[i]);
    return n;
}

int bkm_cpuset_next(const bkm_cpuset_t *s, int prev)
{
    int cpu = prev + 1;
    if (cpu < 0)
        cpu = 0;
    while (cpu < BKM_CPUSET_MAX) {
        uint64_t word = s->w[cpu / 64] >> (cpu % 64);
        if (word != 0)
            return cpu + __builtin_ctzll(word);
        cpu = (cpu / 64 + 1) * 64;
    }
    return -1;
}

int bkm_cpuset_first(const bkm_cpuset_t *s) { return bkm_cpuset_next(s, -1); }

int bkm_cpuset_equal(const bkm_cpuset_t *a, const bkm_cpuset_t *b)
{
    return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

int bkm_cpuset_is_empty(const bkm_cpuset_t *s) { return bkm_cpuset_first(s) < 0; }

void bkm_cpuset_or(bkm_cpuset_t *dst, const bkm_cpuset_t *src)
{
    for (size_t i = 0; i < sizeof(dst->w) / sizeof(dst->w[0]); i++)
        dst->w[i] |= src->w[i];
}

void bkm_cpuset_and(bkm_cpuset_t *dst, const bkm_cpuset_t *src)
{
    for (size_t i = 0; i < sizeof(dst->w) / sizeof(dst->w[0]); i++)
        dst->w[i] &= src->w[i];
}

void bkm_cpuset_format(const bkm_cpuset_t *s, bkm_buf_t *b)
{
    int cpu = bkm_cpuset_first(s);
    int first = 1;
    while (cpu >= 0) {
        int end = cpu;
        while (bkm_cpuset_isset(s, end + 1))
            end++;
        if (end == cpu)
            bkm_buf_printf(b, "%s%d", first ? "" : ",", cpu);
        else
            bkm_buf_printf(b, "%s%d-%d", first ? "" : ",", cpu, end);
        first = 0;
        cpu = bkm_cpuset_next(s, end);
    }
    if (first)
        bkm_buf_puts(b, "");
}

static int read_num(const char **p, long *out)
{
    long v = 0;
    int digits = 0;
    while (isdigit((unsigned char)**p)) {
        v = v * 10 + (**p - '0');
        if (v >= BKM_CPUSET_MAX)
            return BKM_EINVAL;
        (*p)++;
        digits++;
    }
    if (digits == 0)
        return BKM_EINVAL;
    *out = v;
    return BKM_OK;
}

int bkm_cpuset_parse(bkm_cpuset_t *s, const char *list, bkm_err_t *err)
{
    const char *p = list;
    bkm_cpuset_zero(s);
    if (list == NULL)
        return bkm_err_set(err, BKM_EINVAL, "CPU list is NULL");
    while (*p) {
        const char *tok = p;
        long a, b;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0')
            break;
        if (read_num(&p, &a) != BKM_OK)
            goto bad;
        b = a;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '-') {
            p++;
            while (isspace((unsigned char)*p))
                p++;
            if (read_num(&p, &b) != BKM_OK || b < a)
                goto bad;
        }
        for (long c = a; c <= b; c++)
            bkm_cpuset_set(s, (int)c);
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '\0')
            goto bad;
        continue;
    bad:
        return bkm_err_set(err, BKM_EINVAL, "bad CPU list '%s' at '%s' (expected N, N-M, comma-separated, N < %d)",
                           list, tok, BKM_CPUSET_MAX);
    }
    return BKM_OK;
}
