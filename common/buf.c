/* SPDX-License-Identifier: MIT */
/* Growable string buffer. */
#include "bkm/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bkm_buf_init(bkm_buf_t *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->oom = 0;
}

static int reserve(bkm_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    size_t cap;
    char *d;
    if (b->oom)
        return BKM_ENOMEM;
    if (need <= b->cap)
        return BKM_OK;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    d = realloc(b->data, cap);
    if (d == NULL) {
        b->oom = 1;
        return BKM_ENOMEM;
    }
    b->data = d;
    b->cap = cap;
    return BKM_OK;
}

int bkm_buf_append(bkm_buf_t *b, const char *s, size_t n)
{
    if (reserve(b, n) != BKM_OK)
        return BKM_ENOMEM;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return BKM_OK;
}

int bkm_buf_puts(bkm_buf_t *b, const char *s) { return bkm_buf_append(b, s, strlen(s)); }

int bkm_buf_vprintf(bkm_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return BKM_EINVAL;
    if (reserve(b, (size_t)n) != BKM_OK)
        return BKM_ENOMEM;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return BKM_OK;
}

int bkm_buf_printf(bkm_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = bkm_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *bkm_buf_take(bkm_buf_t *b)
{
    char *s = b->data;
    if (s == NULL && !b->oom) {
        s = malloc(1);
        if (s != NULL)
            s[0] = '\0';
    }
    if (b->oom) {
        free(s);
        s = NULL;
    }
    bkm_buf_init(b);
    return s;
}

void bkm_buf_free(bkm_buf_t *b)
{
    free(b->data);
    bkm_buf_init(b);
}

const char *bkm_buf_str(const bkm_buf_t *b) { return b->data != NULL ? b->data : ""; }
