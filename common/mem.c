/* SPDX-License-Identifier: MIT */
/* Allocation wrappers and the logging callback. */
#define _POSIX_C_SOURCE 200809L
#include "bkm/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <errno.h>

void *bkm_malloc(size_t n) { return malloc(n ? n : 1); }
void *bkm_calloc(size_t count, size_t size) { return calloc(count ? count : 1, size ? size : 1); }
void *bkm_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
void bkm_free(void *p) { free(p); }

void *bkm_aligned_alloc(size_t alignment, size_t n)
{
    void *p = NULL;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    if (posix_memalign(&p, alignment, n ? n : 1) != 0)
        return NULL;
    return p;
}

char *bkm_strdup(const char *s)
{
    size_t n;
    char *d;
    if (s == NULL)
        return NULL;
    n = strlen(s) + 1;
    d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

void bkm_log(const bkm_log_t *log, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (log == NULL || log->fn == NULL || level > log->level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log->fn(log->ud, level, msg);
}

int bkm_parse_int(const char *s, long long min, long long max, long long *out)
{
    char *end = NULL;
    long long v;
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return BKM_EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return BKM_EINVAL;
    *out = v;
    return BKM_OK;
}

int bkm_parse_double(const char *s, double *out)
{
    char *end = NULL;
    double v;
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return BKM_EINVAL;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || v != v)
        return BKM_EINVAL;
    *out = v;
    return BKM_OK;
}
