/* SPDX-License-Identifier: MIT */
/* Explicit OMP_PLACES lists ("{0:4},{16:4}", "{0:2}:4:2", "!0,1,2"): syntax check and expansion
 * into masks exactly as libomp 14's __kmp_affinity_process_placelist does (fine granularity).
 * Ranges written with '-' are not part of the grammar and are rejected. */
#include "planner_int.h"

#include <ctype.h>
#include <string.h>

#define NUM_MAX 1000000

typedef struct {
    const char *s;          /* whole list, for messages */
    const char *p;          /* cursor */
    const bkm_cpuset_t *valid;   /* NULL: syntax check only */
    const bkm_cpuset_t *all;
    bkm__aff_mask_of_fn mask_of;  /* granularity mask of an OS id (libomp's osId2Mask) */
    void *ud;
    bkm_cpuset_t *masks;
    int n_masks, cap;
    int depth;              /* '!' nesting guard */
} pl_t;

static void pl_ws(pl_t *pl)
{
    while (*pl->p == ' ' || *pl->p == '\t' || *pl->p == '\n' || *pl->p == '\r')
        pl->p++;
}

static int pl_num(pl_t *pl, int *out, const char *what, bkm_err_t *err)
{
    long v = 0;
    pl_ws(pl);
    if (!isdigit((unsigned char)*pl->p)) {
        if (*pl->p == '-')
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: '-' ranges are not valid in \"%.60s\" "
                               "(write {start:length})", pl->s);
        return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: expected %s at \"%.20s\" in \"%.60s\"", what,
                           *pl->p ? pl->p : "(end)", pl->s);
    }
    while (isdigit((unsigned char)*pl->p)) {
        v = v * 10 + (*pl->p - '0');
        if (v > NUM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: number too large in \"%.60s\"", pl->s);
        pl->p++;
    }
    *out = (int)v;
    return BKM_OK;
}

static int pl_signed(pl_t *pl, int *out, bkm_err_t *err)
{
    int sign = 1, rc;
    for (;;) {
        pl_ws(pl);
        if (*pl->p == '+') {
            pl->p++;
            continue;
        }
        if (*pl->p == '-') {
            sign = -sign;
            pl->p++;
            continue;
        }
        break;
    }
    if ((rc = pl_num(pl, out, "a stride", err)) != BKM_OK)
        return rc;
    *out *= sign;
    return BKM_OK;
}

/* ':' count [':' signed stride], the cursor being on the first ':'. */
static int pl_count_stride(pl_t *pl, int *count, int *stride, const char *what, bkm_err_t *err)
{
    int rc;
    pl->p++;
    if ((rc = pl_num(pl, count, what, err)) != BKM_OK)
        return rc;
    pl_ws(pl);
    if (*pl->p == ':') {
        pl->p++;
        if ((rc = pl_signed(pl, stride, err)) != BKM_OK)
            return rc;
        pl_ws(pl);
    }
    return BKM_OK;
}

static int pl_id_ok(const pl_t *pl, int id)
{
    return id >= 0 && id < BKM_CPUSET_MAX && bkm_cpuset_isset(pl->valid, id);
}

static int pl_bad_id(const pl_t *pl, int id, bkm_err_t *err)
{
    return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: OS proc %d in \"%.60s\" is not an allowed PU of this "
                       "topology", id, pl->s);
}

/* Add ids start, start+stride, ... (count of them) to @p m. */
static int pl_add_run(pl_t *pl, bkm_cpuset_t *m, int start, int count, int stride, int *set_size,
                      bkm_err_t *err)
{
    int i;
    if (pl->valid == NULL)
        return BKM_OK;
    for (i = 0; i < count; i++) {
        if (!pl_id_ok(pl, start))
            return pl_bad_id(pl, start, err);
        bkm_cpuset_or(m, pl->mask_of(pl->ud, start));
        (*set_size)++;
        start += stride;
    }
    return BKM_OK;
}

static int pl_subplaces(pl_t *pl, bkm_cpuset_t *m, int *set_size, bkm_err_t *err)
{
    int rc;
    for (;;) {
        int start, count = 1, stride = 1;
        if ((rc = pl_num(pl, &start, "an OS proc id", err)) != BKM_OK)
            return rc;
        pl_ws(pl);
        if (*pl->p == ':' && (rc = pl_count_stride(pl, &count, &stride, "a count", err)) != BKM_OK)
            return rc;
        if ((rc = pl_add_run(pl, m, start, count, stride, set_size, err)) != BKM_OK)
            return rc;
        if (*pl->p == '}')
            return BKM_OK;
        if (*pl->p != ',')
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: unexpected \"%.20s\" in \"%.60s\"%s",
                               *pl->p ? pl->p : "(end: missing '}')", pl->s,
                               *pl->p == '-' ? " ('-' ranges are not valid; write {start:length})" : "");
        pl->p++;
    }
}

static int pl_place(pl_t *pl, bkm_cpuset_t *m, int *set_size, bkm_err_t *err)
{
    int rc;
    pl_ws(pl);
    if (*pl->p == '{') {
        pl->p++;
        if ((rc = pl_subplaces(pl, m, set_size, err)) != BKM_OK)
            return rc;
        pl->p++; /* '}' */
        return BKM_OK;
    }
    if (*pl->p == '!') {
        bkm_cpuset_t inner;
        int inner_size = 0;
        if (++pl->depth > 64)
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: too many '!' in \"%.60s\"", pl->s);
        pl->p++;
        bkm_cpuset_zero(&inner);
        if ((rc = pl_place(pl, &inner, &inner_size, err)) != BKM_OK)
            return rc;
        pl->depth--;
        if (pl->valid != NULL) {
            /* libomp complements the whole mask; the kernel clips it to the machine's CPUs. */
            int c;
            bkm_cpuset_t comp;
            bkm_cpuset_zero(&comp);
            for (c = bkm_cpuset_first(pl->all); c >= 0; c = bkm_cpuset_next(pl->all, c))
                if (!bkm_cpuset_isset(&inner, c) && !bkm_cpuset_isset(m, c))
                    bkm_cpuset_set(&comp, c);
            *m = comp;
            *set_size = bkm_cpuset_count(&comp);
        }
        return BKM_OK;
    }
    {
        int id;
        if ((rc = pl_num(pl, &id, "a place ({...}, !place or an OS proc id)", err)) != BKM_OK)
            return rc;
        return pl_add_run(pl, m, id, 1, 1, set_size, err);
    }
}

static int pl_push(pl_t *pl, const bkm_cpuset_t *m, bkm_err_t *err)
{
    if (pl->valid == NULL)
        return BKM_OK;
    if (pl->n_masks >= 65536)
        return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: more than 65536 places in \"%.60s\"", pl->s);
    if (pl->n_masks == pl->cap) {
        int cap = pl->cap ? pl->cap * 2 : 16;
        bkm_cpuset_t *nm = bkm_realloc(pl->masks, (size_t)cap * sizeof(*nm));
        if (nm == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "OMP_PLACES: out of memory");
        pl->masks = nm;
        pl->cap = cap;
    }
    pl->masks[pl->n_masks++] = *m;
    return BKM_OK;
}

static int pl_list(pl_t *pl, bkm_err_t *err)
{
    int rc;
    for (;;) {
        bkm_cpuset_t m;
        int set_size = 0;
        bkm_cpuset_zero(&m);
        if ((rc = pl_place(pl, &m, &set_size, err)) != BKM_OK)
            return rc;
        pl_ws(pl);
        if (*pl->p == ':') {
            int count = 0, stride = 1, i;
            if ((rc = pl_count_stride(pl, &count, &stride, "a place count", err)) != BKM_OK)
                return rc;
            for (i = 0; i < count && pl->valid != NULL; i++) {
                bkm_cpuset_t next;
                int j;
                if (set_size == 0)
                    break;
                if ((rc = pl_push(pl, &m, err)) != BKM_OK)
                    return rc;
                bkm_cpuset_zero(&next);
                set_size = 0;
                for (j = bkm_cpuset_first(&m); j >= 0; j = bkm_cpuset_next(&m, j)) {
                    int k = j + stride;
                    if (k < 0 || !pl_id_ok(pl, k) || !bkm_cpuset_isset(pl->valid, j)) {
                        if (i < count - 1)
                            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: replication in \"%.60s\" "
                                               "reaches OS proc %d, which is not an allowed PU", pl->s, k);
                        continue;
                    }
                    bkm_cpuset_set(&next, k);
                    set_size++;
                }
                m = next;
            }
        } else if (set_size > 0) {
            if ((rc = pl_push(pl, &m, err)) != BKM_OK)
                return rc;
        }
        pl_ws(pl);
        if (*pl->p == '\0')
            return BKM_OK;
        if (*pl->p != ',')
            return bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: unexpected \"%.20s\" in \"%.60s\"%s", pl->p, pl->s,
                               *pl->p == '-' ? " ('-' ranges are not valid; write {start:length})" : "");
        pl->p++;
    }
}

int bkm__aff_placelist_check(const char *text, bkm_err_t *err)
{
    pl_t pl;
    memset(&pl, 0, sizeof(pl));
    pl.s = pl.p = text;
    return pl_list(&pl, err);
}

int bkm__aff_placelist_eval(const char *text, const bkm_cpuset_t *valid, const bkm_cpuset_t *all,
                            bkm__aff_mask_of_fn mask_of, void *ud, bkm_cpuset_t **masks, int *n_masks,
                            bkm_err_t *err)
{
    pl_t pl;
    int rc;
    memset(&pl, 0, sizeof(pl));
    pl.s = pl.p = text;
    pl.valid = valid;
    pl.all = all;
    pl.mask_of = mask_of;
    pl.ud = ud;
    rc = pl_list(&pl, err);
    if (rc == BKM_OK && pl.n_masks == 0)
        rc = bkm_err_set(err, BKM_EINVAL, "OMP_PLACES: \"%.60s\" gives no place", text);
    if (rc != BKM_OK) {
        bkm_free(pl.masks);
        *masks = NULL;
        *n_masks = 0;
        return rc;
    }
    *masks = pl.masks;
    *n_masks = pl.n_masks;
    return BKM_OK;
}
