/* SPDX-License-Identifier: MIT */
/* HTML escaping and the small drawing helpers of the report (colour scale, box-plot
 * quartiles). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/reports.h"
#include "reports_int.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;
    unsigned cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0)
        n = 2, cp = s[0] & 0x1f;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, cp = s[0] & 0x0f;
    else if ((s[0] & 0xf8) == 0xf0)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and code points beyond U+10FFFF are not valid */
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void bkm_rep_escape(bkm_buf_t *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (s == NULL)
        return;
    while (*p) {
        size_t n;
        switch (*p) {
        case '&': bkm_buf_puts(out, "&amp;"), p++; continue;
        case '<': bkm_buf_puts(out, "&lt;"), p++; continue;
        case '>': bkm_buf_puts(out, "&gt;"), p++; continue;
        case '"': bkm_buf_puts(out, "&quot;"), p++; continue;
        case '\'': bkm_buf_puts(out, "&#39;"), p++; continue;
        default: break;
        }
        if (*p < 0x20 && *p != '\t' && *p != '\n') {
            p++;
            continue;
        }
        if (*p == 0x7f) {
            p++;
            continue;
        }
        if ((n = utf8_len(p)) == 0) {
            bkm_buf_puts(out, "\xef\xbf\xbd"); /* U+FFFD */
            p++;
            continue;
        }
        bkm_buf_append(out, (const char *)p, n);
        p += n;
    }
}

void bkm__rep_colour(double t, char rgb[8])
{
    /* green (fast) -> yellow -> red (slow) */
    static const double stops[3][3] = {{26, 152, 80}, {254, 224, 139}, {215, 48, 39}};
    double c[3];
    int i;
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    i = t < 0.5 ? 0 : 1;
    t = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    for (int k = 0; k < 3; k++)
        c[k] = stops[i][k] + t * (stops[i + 1][k] - stops[i][k]);
    snprintf(rgb, 8, "#%02x%02x%02x", (int)lround(c[0]), (int)lround(c[1]), (int)lround(c[2]));
}


/* Linear interpolation between order statistics (type 7, as R's default). */
static double quantile_sorted(const double *x, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n)
        return x[n - 1];
    return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}

int bkm__rep_five(const double *v, size_t n, double five[5])
{
    double *x;
    if (n == 0 || (x = malloc(n * sizeof *x)) == NULL)
        return -1;
    memcpy(x, v, n * sizeof *x);
    qsort(x, n, sizeof *x, bkm_cmp_double);
    five[0] = x[0];
    five[1] = quantile_sorted(x, n, 0.25);
    five[2] = quantile_sorted(x, n, 0.5);
    five[3] = quantile_sorted(x, n, 0.75);
    five[4] = x[n - 1];
    free(x);
    return 0;
}

void bkm__rep_num(bkm_buf_t *out, double v, const char *fmt)
{
    if (isfinite(v))
        bkm_buf_printf(out, fmt, v);
    else
        bkm_buf_puts(out, "&ndash;");
}
