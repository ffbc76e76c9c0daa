/* SPDX-License-Identifier: MIT */
/* Internals of reports/: drawing helpers shared by the report's sources. */
#ifndef BKM_REPORTS_INT_H
#define BKM_REPORTS_INT_H

#include <stddef.h>
#include <stdio.h>

#include "bkm/common.h"

/* The colour of t in [0, 1] on the report's scale (green fast .. red slow) as "#rrggbb". */
void bkm__rep_colour(double t, char rgb[8]);
/* min, first quartile, median, third quartile, max of v[0..n) (not modified): 0, or -1 when
 * n is 0 or memory runs out. */
int bkm__rep_five(const double *v, size_t n, double five[5]);
/* v formatted with fmt, or an en dash when v is not finite. */
void bkm__rep_num(bkm_buf_t *out, double v, const char *fmt);

#endif
