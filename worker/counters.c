/* SPDX-License-Identifier: MIT */
/* PAPI counters of a trial, counted per OpenMP thread and summed. Each event is counted in the
 * domain in which it means something, or recorded as unavailable with the reason; after the
 * timed region, the events the operating system also counts are checked against its figure. */
#include <omp.h>
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/worker.h"

/* Software events of Linux's perf PMU that bkm knows by meaning. A kernel-side event happens in
 * kernel code (the scheduler switches or migrates a thread, the fault handler runs), so PAPI's
 * default domain (user only) reads 0 for it by construction: it is asked for in the user and
 * kernel domains (libpfm4's ":u=1:k=1" qualifiers), or recorded unavailable where that is not
 * permitted. os_total names the noise evidence's totals (bkm_tune_noise_total) that count the
 * same thing for the same threads and region. */
typedef struct counters_kind {
    const char *names[3];     /* spellings after "perf::" */
    int kernel_side;
    const char *os_total[2];  /* summed; os_total[0] NULL: no OS figure */
    const char *os_source;
    int time_ns;              /* the value is a time in ns (coarser granularity) */
} counters_kind_t;

static const counters_kind_t counters_kinds[] = {
    {{"CONTEXT-SWITCHES", "CS", "PERF_COUNT_SW_CONTEXT_SWITCHES"}, 1,
     {"voluntary_switches", "involuntary_switches"}, "rusage voluntary+involuntary switches", 0},
    {{"CPU-MIGRATIONS", "MIGRATIONS", "PERF_COUNT_SW_CPU_MIGRATIONS"}, 1, {"migrations", NULL},
     "proc-sched se.nr_migrations", 0},
    {{"PAGE-FAULTS", "FAULTS", "PERF_COUNT_SW_PAGE_FAULTS"}, 1, {"minor_faults", "major_faults"},
     "rusage minor+major faults", 0},
    {{"MINOR-FAULTS", "PERF_COUNT_SW_PAGE_FAULTS_MIN", NULL}, 1, {"minor_faults", NULL}, "rusage minor faults", 0},
    {{"MAJOR-FAULTS", "PERF_COUNT_SW_PAGE_FAULTS_MAJ", NULL}, 1, {"major_faults", NULL}, "rusage major faults", 0},
    {{"CGROUP-SWITCHES", "PERF_COUNT_SW_CGROUP_SWITCHES", NULL}, 1, {NULL, NULL}, NULL, 0},
    {{"ALIGNMENT-FAULTS", "PERF_COUNT_SW_ALIGNMENT_FAULTS", NULL}, 1, {NULL, NULL}, NULL, 0},
    {{"EMULATION-FAULTS", "PERF_COUNT_SW_EMULATION_FAULTS", NULL}, 1, {NULL, NULL}, NULL, 0},
    {{"TASK-CLOCK", "PERF_COUNT_SW_TASK_CLOCK", NULL}, 0, {"cpu_ns", NULL}, "rusage user+system CPU time (ns)", 1},
    {{"CPU-CLOCK", "PERF_COUNT_SW_CPU_CLOCK", NULL}, 0, {"cpu_ns", NULL}, "rusage user+system CPU time (ns)", 1},
};
#define COUNTERS_N_KINDS (int)(sizeof counters_kinds / sizeof counters_kinds[0])

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
    char papi_name[BKM_TUNE_COUNTERS_MAX][96]; /* the name given to PAPI (domain qualifiers added) */
    int kind[BKM_TUNE_COUNTERS_MAX];           /* index into counters_kinds, -1 unknown */
    int n_ev;
    int avail_idx[BKM_TUNE_COUNTERS_MAX]; /* indexes into ev[] of the available events */
    int n_avail;
    counters_slot_t *slot;
    int n_slot;
    int running;
    int papi_up;
    char kernel_domain[200];   /* "permitted", or why not */
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

/* ---------------------------------------------------------------------------------------- */
/* Event names: kind and domain qualifiers                                                   */

/* Split @p name ("perf::CONTEXT-SWITCHES:u=1") into its event (after a "perf::" prefix, if any;
 * *pmu_ok is 0 for another PMU) and its user/kernel qualifiers: *u, *k = 1 given true, 0 given
 * false, -1 not given. */
static void counters_split(const char *name, char *event, size_t cap, int *pmu_ok, int *u, int *k)
{
    const char *sep = strstr(name, "::"), *p = sep ? sep + 2 : name, *q;
    size_t len;
    *pmu_ok = sep == NULL || ((size_t)(sep - name) == 4 && strncmp(name, "perf", 4) == 0);
    *u = *k = -1;
    q = strchr(p, ':');
    len = q ? (size_t)(q - p) : strlen(p);
    if (len >= cap)
        len = cap - 1;
    memcpy(event, p, len);
    event[len] = '\0';
    while (q != NULL) {
        const char *item = q + 1, *next = strchr(item, ':');
        size_t il = next ? (size_t)(next - item) : strlen(item);
        int *flag = NULL;
        if (il >= 1 && (item[0] == 'u' || item[0] == 'k') && (il == 1 || item[1] == '='))
            flag = item[0] == 'u' ? u : k;
        if (flag != NULL)
            *flag = il == 1 || !(il == 3 && item[2] == '0');
        q = next;
    }
}

int bkm_tune_counter_kind(const char *name, int *kernel_side)
{
    char event[64];
    int pmu_ok, u, k;
    *kernel_side = 0;
    counters_split(name, event, sizeof event, &pmu_ok, &u, &k);
    if (!pmu_ok)
        return -1;
    for (int i = 0; i < COUNTERS_N_KINDS; i++)
        for (int j = 0; j < 3 && counters_kinds[i].names[j]; j++)
            if (strcmp(event, counters_kinds[i].names[j]) == 0) {
                *kernel_side = counters_kinds[i].kernel_side;
                return i;
            }
    return -1;
}

static void counters_domain_name(int dom, char *out, size_t cap)
{
    static const struct { int bit; const char *name; } doms[] = {
        {PAPI_DOM_USER, "user"}, {PAPI_DOM_KERNEL, "kernel"}, {PAPI_DOM_SUPERVISOR, "supervisor"},
        {PAPI_DOM_OTHER, "other"}};
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof doms / sizeof doms[0]; i++)
        if (dom & doms[i].bit)
            used += (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s%s", used ? "+" : "", doms[i].name);
}

/* Why kernel-domain counting is not permitted to this process, from the sysctl PAPI and the
 * kernel consult (perf_event_paranoid >= 2 forbids it to processes without root/CAP_PERFMON). */
static void counters_kernel_refusal(char *out, size_t cap, const char *papi_msg)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int level = 0, got = f != NULL && fscanf(f, "%d", &level) == 1;
    if (f != NULL)
        fclose(f);
    if (got)
        snprintf(out, cap, "not permitted: /proc/sys/kernel/perf_event_paranoid = %d (needs <= 1, or root or "
                 "CAP_PERFMON; PAPI: %s)", level, papi_msg);
    else
        snprintf(out, cap, "not permitted (/proc/sys/kernel/perf_event_paranoid unreadable; PAPI: %s)", papi_msg);
}

/* The kernel domain is asked for: its outcome is unknown until an event is added (then
 * "permitted") or refused (then why). */
static void counters_kernel_asked(bkm_tune_counters_t *c)
{
    if (strcmp(c->kernel_domain, "not asked for") == 0)
        snprintf(c->kernel_domain, sizeof c->kernel_domain, "unknown: no event asking for it could be added");
}

/* Choose the name given to PAPI and the domain of event @p i; 0, or -1 when the event cannot
 * mean anything in the domain asked for (then it is unavailable, with the reason). */
static int counters_resolve(bkm_tune_counters_t *c, int i)
{
    bkm_counter_t *e = &c->ev[i];
    char event[64];
    int pmu_ok, u, k, kernel_side, code = 0;
    c->kind[i] = bkm_tune_counter_kind(e->name, &kernel_side);
    counters_split(e->name, event, sizeof event, &pmu_ok, &u, &k);
    snprintf(c->papi_name[i], sizeof c->papi_name[i], "%s", e->name);
    if (u >= 0 || k >= 0) {           /* the user's own qualifiers: the domain they name */
        int dom = (u == 1 ? PAPI_DOM_USER : 0) | (k == 1 ? PAPI_DOM_KERNEL : 0);
        counters_domain_name(dom, e->domain, sizeof e->domain);
        if (k == 1)
            counters_kernel_asked(c);
        if (kernel_side && k != 1) {
            snprintf(e->reason, sizeof e->reason, "asked for in the %s domain only, where it reads 0 by "
                     "construction: %s happens in the kernel (add :k=1 or leave the domain to bkm)",
                     e->domain[0] ? e->domain : "no", event);
            return -1;
        }
        return 0;
    }
    if (kernel_side) {
        counters_kernel_asked(c);
        snprintf(c->papi_name[i], sizeof c->papi_name[i], "%s:u=1:k=1", e->name);
        snprintf(e->domain, sizeof e->domain, "user+kernel");
        return 0;
    }
    if (PAPI_event_name_to_code(e->name, &code) == PAPI_OK) {
        const PAPI_component_info_t *ci = PAPI_get_component_info(PAPI_get_event_component(code));
        if (ci != NULL)
            counters_domain_name(ci->default_domain, e->domain, sizeof e->domain);
    }
    return 0;
}

/* The reason an event could not be added: PAPI's message, with the component's own reason when
 * PAPI has no enabled component at all (no perf_event support on this host), and the sysctl when
 * the kernel domain was refused. */
static void counters_add_failed(bkm_tune_counters_t *c, int i, int rc)
{
    bkm_counter_t *e = &c->ev[i];
    int kernel_side = 0;
    bkm_tune_counter_kind(e->name, &kernel_side);
    if (rc == PAPI_EPERM && strcmp(c->papi_name[i], e->name) != 0) {
        char why[160];
        counters_kernel_refusal(why, sizeof why, PAPI_strerror(rc));
        snprintf(e->reason, sizeof e->reason, "happens in the kernel, so it needs the kernel domain: %s", why);
        snprintf(c->kernel_domain, sizeof c->kernel_domain, "%s", why);
        return;
    }
    if (rc == PAPI_ENOEVNT) {
        int ncmp = PAPI_num_components();
        for (int k = 0; k < ncmp; k++) {
            const PAPI_component_info_t *ci = PAPI_get_component_info(k);
            if (ci != NULL && strcmp(ci->name, "perf_event") == 0 && ci->disabled) {
                snprintf(e->reason, sizeof e->reason, "%s (PAPI's perf_event component is disabled: %s)",
                         PAPI_strerror(rc), ci->disabled_reason[0] ? ci->disabled_reason : "no reason given");
                return;
            }
        }
    }
    snprintf(e->reason, sizeof e->reason, "%s", PAPI_strerror(rc));
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
        if (counters_resolve(c, i) < 0)
            continue;
        rc = PAPI_add_named_event(es, c->papi_name[i]);
        if (rc != PAPI_OK) {
            counters_add_failed(c, i, rc);
            continue;
        }
        c->ev[i].available = 1;
        c->avail_idx[c->n_avail++] = i;
        if (strstr(c->ev[i].domain, "kernel") != NULL)
            snprintf(c->kernel_domain, sizeof c->kernel_domain, "permitted");
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
    snprintf(c->kernel_domain, sizeof c->kernel_domain, "not asked for");
    for (int i = 0; i < n; i++) {
        snprintf(c->ev[i].name, sizeof c->ev[i].name, "%s", names[i]);
        c->kind[i] = -1;
    }
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
    counters_probe(c);   /* records in kernel_domain whether the kernel domain was granted */
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
        rc = PAPI_add_named_event(s->eventset, c->papi_name[c->avail_idx[k]]);
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

/* ---------------------------------------------------------------------------------------- */
/* Cross-check against the operating system                                                  */

long long bkm_tune_counter_granularity(long long papi, long long os, int threads, int time_ns, long long switches)
{
    long long big = papi > os ? papi : os, g;
    /* Counting brackets the OS snapshots (started before, stopped after): the snapshots' own
     * parallel regions and reads add a few events per thread, or a few ms of CPU time. perf's
     * clock events also leave out the scheduler's own path around each switch (measured 6-10 us
     * a switch on a KVM guest with thousands of switches), which the OS's CPU time includes. */
    g = (time_ns ? 5000000ll : 4ll) * (threads > 0 ? threads : 1) + big / 20;
    if (time_ns && switches > 0)
        g += 25000ll * switches;
    return g;
}

int bkm_tune_counter_check_os(bkm_counter_t *e, long long os_value, const char *os_source, int threads,
                              int time_ns, long long switches)
{
    long long g, diff;
    if (e == NULL || !e->available || os_value < 0)
        return 0;
    e->os_value = os_value;
    snprintf(e->os_source, sizeof e->os_source, "%s", os_source ? os_source : "the OS");
    g = bkm_tune_counter_granularity(e->value, os_value, threads, time_ns, switches);
    diff = e->value > os_value ? e->value - os_value : os_value - e->value;
    if (diff <= g)
        return 0;
    e->disagrees = 1;
    snprintf(e->reason, sizeof e->reason,
             "PAPI counted %lld in the %s domain, the OS (%s) %lld for the same threads and region: "
             "they differ by %lld, beyond the granularity %lld",
             e->value, e->domain[0] ? e->domain : "default", e->os_source, os_value, diff, g);
    return 1;
}

int bkm_tune_counters_crosscheck(bkm_tune_counters_t *c, const bkm_tune_noise_t *noise)
{
    int n = 0;
    long long vol = bkm_tune_noise_total(noise, "voluntary_switches"),
              inv = bkm_tune_noise_total(noise, "involuntary_switches"), switches = vol < 0 || inv < 0 ? -1 : vol + inv;
    for (int i = 0; c != NULL && noise != NULL && i < c->n_ev; i++) {
        const counters_kind_t *kd = c->kind[i] >= 0 ? &counters_kinds[c->kind[i]] : NULL;
        long long os = 0;
        if (kd == NULL || kd->os_total[0] == NULL || !c->ev[i].available)
            continue;
        for (int j = 0; j < 2 && kd->os_total[j] && os >= 0; j++) {
            long long v = bkm_tune_noise_total(noise, kd->os_total[j]);
            os = v < 0 ? -1 : os + v;
        }
        n += bkm_tune_counter_check_os(&c->ev[i], os, kd->os_source, c->n_slot, kd->time_ns, switches);
    }
    return n;
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
    bkm_json_key(w, "kernel_domain");
    bkm_json_str(w, c ? c->kernel_domain : "not asked for");
    bkm_json_key(w, "values");
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++) {
        if (bkm_counter_presentable(&c->ev[i])) {
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
    bkm_json_key(w, "disagree");   /* counted, contradicted by the OS: both figures, never a value */
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++) {
        const bkm_counter_t *e = &c->ev[i];
        if (!e->available || !e->disagrees)
            continue;
        bkm_json_key(w, e->name);
        bkm_json_obj_begin(w);
        bkm_json_key(w, "papi"), bkm_json_int(w, e->value);
        bkm_json_key(w, "os"), bkm_json_int(w, e->os_value);
        bkm_json_key(w, "os_source"), bkm_json_str(w, e->os_source);
        bkm_json_key(w, "reason"), bkm_json_str(w, e->reason);
        bkm_json_obj_end(w);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "domains");
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++)
        if (c->ev[i].available && c->ev[i].domain[0])
            bkm_json_key(w, c->ev[i].name), bkm_json_str(w, c->ev[i].domain);
    bkm_json_obj_end(w);
    bkm_json_key(w, "os_checked");   /* the OS figure each agreeing event was checked against */
    bkm_json_obj_begin(w);
    for (int i = 0; c && i < c->n_ev; i++) {
        const bkm_counter_t *e = &c->ev[i];
        if (!bkm_counter_presentable(e) || e->os_source[0] == '\0')
            continue;
        bkm_json_key(w, e->name);
        bkm_json_obj_begin(w);
        bkm_json_key(w, "os"), bkm_json_int(w, e->os_value);
        bkm_json_key(w, "os_source"), bkm_json_str(w, e->os_source);
        bkm_json_obj_end(w);
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
