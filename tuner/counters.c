/* SPDX-License-Identifier: MIT */
/* PAPI counters of a trial, counted per OpenMP thread and summed; unavailable events are kept
 * with PAPI's reason. */
#include <omp.h>
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/tuner.h"

/* One event set per team thread. PAPI allows one running event set per thread, and each
 * thread counts only itself (no PAPI_ATTACH/PAPI_INHERIT, see tuner.h). */
typedef struct counters_slot {
    int eventset;
    int started;
    int rc;              /* first PAPI error of this thread, 0 if none */
    long long values[BKM_TUNE_COUNTERS_MAX];
} counters_slot_t;

struct bkm_tune_counters {
    bkm_counter_t ev[BKM_TUNE_COUNTERS_MAX];
    int n_ev;
    int avail_idx[BKM_TUNE_COUNTERS_MAX]; /* indexes into ev[] of the available events */
    int n_avail;
    counters_slot_t *slot;
    int n_slot;
    int running;
    int papi_up;
};

static unsigned long counters_thread_id(void)
{
    return (unsigned long)pthread_self();
}

int bkm_tune_counters_parse(const char *list, char names[][64], int max, int *n, bkm_err_t *err)
{
    const char *p;
    *n = 0;
    if (list == NULL || list[0] == '\0')
        list = BKM_TUNE_COUNTERS_DEFAULT;
    if (strcmp(list, "none") == 0)
        return BKM_OK;
    p = list;
    while (1) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return bkm_err_set(err, BKM_EINVAL, "counter list '%s': empty item", list);
        if (len >= 64)
            return bkm_err_set(err, BKM_EINVAL, "counter list '%s': name '%.*s' is longer than 63 characters",
                               list, (int)len, p);
        if (*n >= max)
            return bkm_err_set(err, BKM_EINVAL, "counter list '%s': more than %d events", list, max);
        memcpy(names[*n], p, len);
        names[*n][len] = '\0';
        (*n)++;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return BKM_OK;
}

/* Decide the available events: each is tried alone (unknown name, no PMU), then added to a
 * probe set in order (conflicts with the ones before it), then the probe set is started once
 * (perf_event_open happens there). */
static void counters_probe(bkm_tune_counters_t *c)
{
    int es = PAPI_NULL, rc;
    long long dummy[BKM_TUNE_COUNTERS_MAX];
    rc = PAPI_create_eventset(&es);
    if (rc != PAPI_OK) {
        for (int i = 0; i < c->n_ev; i++)
            snprintf(c->ev[i].reason, sizeof c->ev[i].reason, "PAPI_create_eventset: %s", PAPI_strerror(rc));
        return;
    }
    for (int i = 0; i < c->n_ev; i++) {
        rc = PAPI_add_named_event(es, c->ev[i].name);
        if (rc != PAPI_OK) {
            snprintf(c->ev[i].reason, sizeof c->ev[i].reason, "%s", PAPI_strerror(rc));
            continue;
        }
        c->ev[i].available = 1;
        c->avail_idx[c->n_avail++] = i;
    }
    if (c->n_avail > 0) {
        rc = PAPI_start(es);
        if (rc == PAPI_OK) {
            PAPI_stop(es, dummy);
        } else {
            for (int k = 0; k < c->n_avail; k++) {
                bkm_counter_t *e = &c->ev[c->avail_idx[k]];
                e->available = 0;
                snprintf(e->reason, sizeof e->reason, "PAPI_start: %s", PAPI_strerror(rc));
            }
            c->n_avail = 0;
        }
    }
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
}

int bkm_tune_counters_open(bkm_tune_counters_t **ctr, const char *list, bkm_err_t *err)
{
    char names[BKM_TUNE_COUNTERS_MAX][64];
    int n = 0, rc = BKM_OK, prc;
    bkm_tune_counters_t *c = NULL;
    *ctr = NULL;
    rc = bkm_tune_counters_parse(list, names, BKM_TUNE_COUNTERS_MAX, &n, err);
    if (rc < 0)
        goto out;
    c = bkm_calloc(1, sizeof *c);
    if (c == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the counter session");
        goto out;
    }
    c->n_ev = n;
    for (int i = 0; i < n; i++)
        snprintf(c->ev[i].name, sizeof c->ev[i].name, "%s", names[i]);
    if (n == 0) {
        *ctr = c;
        c = NULL;
        goto out;
    }
    prc = PAPI_library_init(PAPI_VER_CURRENT);
    if (prc != PAPI_VER_CURRENT) {
        rc = bkm_err_set(err, BKM_EDEP, "PAPI_library_init: %s",
                         prc > 0 ? "version mismatch between papi.h and libpapi" : PAPI_strerror(prc));
        goto out;
    }
    c->papi_up = 1;
    prc = PAPI_thread_init(counters_thread_id);
    if (prc != PAPI_OK) {
        rc = bkm_err_set(err, BKM_EDEP, "PAPI_thread_init: %s", PAPI_strerror(prc));
        goto out;
    }
    counters_probe(c);
    *ctr = c;
    c = NULL;
out:
    bkm_tune_counters_close(c);
    return rc;
}

/* Body run by every team thread: create, fill and start its own event set. */
static void counters_slot_start(bkm_tune_counters_t *c, counters_slot_t *s)
{
    int rc;
    s->eventset = PAPI_NULL;
    rc = PAPI_register_thread();
    if (rc == PAPI_OK)
        rc = PAPI_create_eventset(&s->eventset);
    for (int k = 0; rc == PAPI_OK && k < c->n_avail; k++)
        rc = PAPI_add_named_event(s->eventset, c->ev[c->avail_idx[k]].name);
    if (rc == PAPI_OK)
        rc = PAPI_start(s->eventset);
    s->started = rc == PAPI_OK;
    s->rc = rc;
}

static void counters_slot_stop(counters_slot_t *s)
{
    if (s->started) {
        int rc = PAPI_stop(s->eventset, s->values);
        if (rc != PAPI_OK && s->rc == PAPI_OK)
            s->rc = rc;
        s->started = 0;
    }
    if (s->eventset != PAPI_NULL) {
        PAPI_cleanup_eventset(s->eventset);
        PAPI_destroy_eventset(&s->eventset);
    }
    PAPI_unregister_thread();
}

int bkm_tune_counters_start(bkm_tune_counters_t *c, int threads, bkm_err_t *err)
{
    int rc = BKM_OK;
    if (c == NULL || c->n_avail == 0)
        return BKM_OK;
    if (c->running)
        return bkm_err_set(err, BKM_EINVAL, "counters already started");
    if (threads < 1)
        return bkm_err_set(err, BKM_EINVAL, "counters: thread count %d must be >= 1", threads);
    bkm_free(c->slot);
    c->slot = bkm_calloc((size_t)threads, sizeof *c->slot);
    if (c->slot == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d counter slots", threads);
    c->n_slot = threads;
    for (int t = 0; t < threads; t++)
        c->slot[t].eventset = PAPI_NULL;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        if (t < c->n_slot)
            counters_slot_start(c, &c->slot[t]);
    }
    c->running = 1;
    for (int t = 0; t < threads; t++) {
        if (!c->slot[t].started) {
            rc = bkm_err_set(err, BKM_EDEP, "counters on OpenMP thread %d: %s", t,
                             PAPI_strerror(c->slot[t].rc));
            bkm_tune_counters_stop(c, NULL);
            break;
        }
    }
    return rc;
}

int bkm_tune_counters_stop(bkm_tune_counters_t *c, bkm_err_t *err)
{
    int rc = BKM_OK;
    if (c == NULL || !c->running)
        return BKM_OK;
#pragma omp parallel num_threads(c->n_slot)
    {
        int t = omp_get_thread_num();
        if (t < c->n_slot)
            counters_slot_stop(&c->slot[t]);
    }
    c->running = 0;
    for (int k = 0; k < c->n_avail; k++)
        c->ev[c->avail_idx[k]].value = 0;
    for (int t = 0; t < c->n_slot; t++) {
        if (c->slot[t].rc != PAPI_OK && rc == BKM_OK)
            rc = bkm_err_set(err, BKM_EDEP, "counters on OpenMP thread %d: %s", t, PAPI_strerror(c->slot[t].rc));
        for (int k = 0; k < c->n_avail; k++)
            c->ev[c->avail_idx[k]].value += c->slot[t].values[k];
    }
    return rc;
}

const bkm_counter_t *bkm_tune_counters_values(const bkm_tune_counters_t *c, int *n)
{
    *n = c ? c->n_ev : 0;
    return c ? c->ev : NULL;
}

int bkm_tune_counters_threads(const bkm_tune_counters_t *c)
{
    return c ? c->n_slot : 0;
}

void bkm_tune_counters_to_json(const bkm_tune_counters_t *c, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "threads_counted");
    bkm_json_int(w, c ? c->n_slot : 0);
    bkm_json_key(w, "values");
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++) {
        if (c->ev[i].available) {
            bkm_json_key(w, c->ev[i].name);
            bkm_json_int(w, c->ev[i].value);
        }
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "unavailable");
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++) {
        if (!c->ev[i].available) {
            bkm_json_key(w, c->ev[i].name);
            bkm_json_str(w, c->ev[i].reason);
        }
    }
    bkm_json_obj_end(w);
    bkm_json_obj_end(w);
}

void bkm_tune_counters_close(bkm_tune_counters_t *c)
{
    if (c == NULL)
        return;
    bkm_tune_counters_stop(c, NULL);
    bkm_free(c->slot);
    if (c->papi_up)
        PAPI_shutdown();
    bkm_free(c);
}
