/* SPDX-License-Identifier: MIT */
/* Private declarations shared by the settings parser (kmp_parse.c), the place-list code (places.c)
 * and the planner (plan.c). Not part of the API. */
#ifndef BKM_PLANNER_INT_H
#define BKM_PLANNER_INT_H

#include "bkm/affinity.h"

/** Largest OS processor id a list may name (ids at or above are errors naming them). */
#define BKM__AFF_MAX_ID (BKM_CPUSET_MAX - 1)

/** Called once per mask of a proclist: @p ids[0..n) are the OS ids of one mask ({..} sets have
 *  several, plain ids and range members one). Return BKM_OK to go on. */
typedef int (*bkm__aff_ids_cb)(void *ud, const int *ids, int n, bkm_err_t *err);

/** Parse a KMP proclist / GOMP_CPU_AFFINITY list (items N, N-M[:[-]S], {N,N,...}; separated by
 *  commas or blanks) and call @p cb per mask (cb may be NULL: syntax check only). @p var names the
 *  variable in messages. */
int bkm__aff_proclist_walk(const char *var, const char *text, bkm__aff_ids_cb cb, void *ud,
                           bkm_err_t *err);

/** Validate an explicit OMP_PLACES list (syntax only). */
int bkm__aff_placelist_check(const char *text, bkm_err_t *err);

/** Granularity mask of OS id @p os (valid ids only). */
typedef const bkm_cpuset_t *(*bkm__aff_mask_of_fn)(void *ud, int os);

/** Expand an explicit OMP_PLACES list as libomp's __kmp_affinity_process_placelist does: an id is
 *  valid when it is in @p valid and stands for its granularity mask @p mask_of(ud, id); invalid ids
 *  are errors naming them. @p all is the set of every PU of the machine (complements of `!place`
 *  are clipped to it). On success *masks (caller frees with bkm_free) holds *n_masks sets. */
int bkm__aff_placelist_eval(const char *text, const bkm_cpuset_t *valid, const bkm_cpuset_t *all,
                            bkm__aff_mask_of_fn mask_of, void *ud, bkm_cpuset_t **masks, int *n_masks,
                            bkm_err_t *err);

/** libomp keyword of a granularity ("thread", "core", "socket", ...). */
const char *bkm__aff_gran_keyword(bkm_aff_gran_t g);

#endif /* BKM_PLANNER_INT_H */
