/* SPDX-License-Identifier: MIT */
/* The GNU libgomp 12 planner: the constructor's view of the machine (config/linux/proc.c
 * gomp_init_num_threads), its variables and place list (gomp_env.c, gomp_places.c), the pin of
 * the initial thread (gomp_init_affinity), the team sizes (parallel.c gomp_resolve_num_threads)
 * and the places of a team's threads and their partitions (team.c gomp_team_start, new threads),
 * level by level; then the plan's accessors, key, JSON and explanation. */
#include "gomp_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NOTES 48

struct bkm_aff_gomp_plan {
    bkm_cpuset_t mask;
    bkm_cpuset_t *places;
    int n_places;
    int places_src;
    int levels;
    int bind[BKM_AFF_GOMP_MAX_LEVELS];
    int team_size[BKM_AFF_GOMP_MAX_LEVELS]; /* of the first team of each level */
    char bind_display[BKM__GOMP_LIST_MAX * 8 + 8];
    char nthreads_display[BKM__GOMP_LIST_MAX * 22 + 8];
    int max_active_levels;
    int pinned;
    bkm_cpuset_t initial; /* the initial thread's mask after the constructor */
    bkm_aff_gomp_thread_t *th;
    int n_th;
    char *fatal;
    char *msg[BKM__GOMP_MSG_MAX];
    int n_msg;
    char *note[MAX_NOTES];
    int n_note;
    bkm_aff_gomp_wait_t wait;
};

/* libgomp's state of one thread that matters for placement (struct gomp_thread, team state). */
typedef struct tstate {
    unsigned place;    /* 1-based, 0 = none */
    unsigned off, len; /* place partition */
    bkm_cpuset_t mask;
    unsigned active_level;
    unsigned long nthreads_var;
    int bind_var;
} tstate_t;

static void note(bkm_aff_gomp_plan_t *p, const char *fmt, ...) BKM_PRINTF(2, 3);
static void note(bkm_aff_gomp_plan_t *p, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    if (p->n_note >= MAX_NOTES)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if ((p->note[p->n_note] = bkm_strdup(buf)) != NULL)
        p->n_note++;
}

void bkm_aff_gomp_plan_free(bkm_aff_gomp_plan_t *plan)
{
    if (plan == NULL)
        return;
    bkm_free(plan->places);
    bkm_free(plan->th);
    bkm_free(plan->fatal);
    for (int i = 0; i < plan->n_msg; i++)
        bkm_free(plan->msg[i]);
    for (int i = 0; i < plan->n_note; i++)
        bkm_free(plan->note[i]);
    bkm_free(plan);
}

static const char *bind_upper(int b)
{
    static const char *const names[] = {"FALSE", "TRUE", "MASTER", "CLOSE", "SPREAD"};
    return b >= 0 && b <= GOMP_BIND_SPREAD ? names[b] : "?";
}

static const char *bind_lower(int b)
{
    static const char *const names[] = {"false", "true", "primary", "close", "spread"};
    return b >= 0 && b <= GOMP_BIND_SPREAD ? names[b] : "?";
}

static void cpus_str(const bkm_cpuset_t *s, char *out, size_t n)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(s, &b);
    snprintf(out, n, "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
}

/* ---- Teams (team.c gomp_team_start for new threads, parallel.c gomp_resolve_num_threads) -- */

typedef struct planner {
    bkm_aff_gomp_plan_t *p;
    const bkm__gomp_icv_t *icv;
    const bkm_aff_gomp_opts_t *opts;
    tstate_t *st; /* libgomp state of each planned thread (plan->th order) */
    int cap;
    unsigned long managed; /* gomp_managed_threads */
} planner_t;

static unsigned resolve_num_threads(const planner_t *pl, const tstate_t *enc, int depth)
{
    unsigned specified = (unsigned)pl->opts->num_threads[depth - 1];
    unsigned long max_active = pl->icv->max_active_levels;
    if (specified == 1)
        return 1;
    if (enc->active_level >= 1 && max_active <= 1)
        return 1;
    if (enc->active_level >= max_active)
        return 1;
    return specified ? specified : (unsigned)enc->nthreads_var;
}

static int add_thread(planner_t *pl, bkm_err_t *err)
{
    bkm_aff_gomp_plan_t *p = pl->p;
    if (p->n_th >= BKM_AFF_GOMP_MAX_THREADS)
        return bkm_err_set(err, BKM_EINVAL, "the planned teams have more than %d threads in all",
                           BKM_AFF_GOMP_MAX_THREADS);
    if (p->n_th == pl->cap) {
        int cap = pl->cap ? pl->cap * 2 : 64;
        bkm_aff_gomp_thread_t *th = bkm_realloc(p->th, (size_t)cap * sizeof(*th));
        if (th == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d threads", cap);
        p->th = th;
        tstate_t *st = bkm_realloc(pl->st, (size_t)cap * sizeof(*st));
        if (st == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d threads", cap);
        pl->st = st;
        pl->cap = cap;
    }
    memset(&p->th[p->n_th], 0, sizeof(p->th[0]));
    memset(&pl->st[p->n_th], 0, sizeof(pl->st[0]));
    return p->n_th++;
}

/* Start the team of depth @p depth that thread @p enc_i (-1: the initial thread @p init)
 * encounters. */
static int team_start(planner_t *pl, int depth, int enc_i, const tstate_t *init, bkm_err_t *err)
{
    bkm_aff_gomp_plan_t *p = pl->p;
    const bkm__gomp_icv_t *icv = pl->icv;
    tstate_t enc = enc_i < 0 ? *init : pl->st[enc_i];
    unsigned nthreads = resolve_num_threads(pl, &enc, depth);
    unsigned level = (unsigned)depth; /* ts.level once the team started */
    unsigned long nthreads_var = enc.nthreads_var;
    int bind = enc.bind_var, bind_var = enc.bind_var;
    unsigned s = 0, rest = 0, k = 0, pp = 0;
    unsigned off0 = enc.off, len0 = enc.len; /* team->prev_ts: the partition before the team */
    tstate_t prim = enc;
    int first;

    if (nthreads == 0)
        return bkm_err_set(err, BKM_EINVAL, "OMP_NUM_THREADS: a thread count of 4294967296 or more is %s at level %d",
                           "what libgomp truncates to an empty team", depth);
    if (nthreads > BKM_AFF_GOMP_MAX_TEAM)
        return bkm_err_set(err, BKM_EINVAL,
                           "a team of %u threads at level %d (OMP_NUM_THREADS or num_threads) is more "
                           "than the planner plans (%d)",
                           nthreads, depth, BKM_AFF_GOMP_MAX_TEAM);
    if (icv->nthreads_len > 1 && level < (unsigned)icv->nthreads_len && level < BKM__GOMP_LIST_MAX)
        nthreads_var = icv->nthreads[level];
    if (icv->bind_len > 1 && level < (unsigned)icv->bind_len && level < BKM__GOMP_LIST_MAX)
        bind_var = icv->bind[level];
    prim.active_level = enc.active_level + (nthreads > 1);
    prim.nthreads_var = nthreads_var;
    prim.bind_var = bind_var;
    if (depth - 1 < BKM_AFF_GOMP_MAX_LEVELS && (enc_i < 0 || p->team_size[depth - 1] == 0)) {
        p->team_size[depth - 1] = (int)nthreads;
        p->bind[depth - 1] = p->n_places > 0 ? bind : GOMP_BIND_FALSE;
    }

    if (nthreads > 1 && p->n_places > 0) {
        pp = prim.place - 1;
        switch (bind) {
        case GOMP_BIND_TRUE:
        case GOMP_BIND_CLOSE:
            if (nthreads > prim.len) {
                s = nthreads / prim.len;
                rest = nthreads % prim.len;
            } else {
                s = 1;
            }
            k = 1;
            break;
        case GOMP_BIND_MASTER: break;
        case GOMP_BIND_SPREAD:
            if (nthreads <= prim.len) {
                s = prim.len / nthreads;
                rest = prim.len % nthreads;
                rest = (s + 1) * rest + prim.off;
                if (pp < rest) {
                    pp -= (pp - prim.off) % (s + 1);
                    prim.len = s + 1;
                } else {
                    pp -= (pp - rest) % s;
                    prim.len = s;
                }
                prim.off = pp;
            } else {
                s = nthreads / prim.len;
                rest = nthreads % prim.len;
                prim.off = pp;
                prim.len = 1;
                k = 1;
            }
            break;
        }
    } else if (p->n_places == 0) {
        bind = GOMP_BIND_FALSE;
    }

    /* The team's primary: the encountering thread, with the team's partition. */
    if ((first = add_thread(pl, err)) < 0)
        return first;
    pl->st[first] = prim;
    p->th[first].level = depth;
    p->th[first].num = 0;
    p->th[first].team_size = (int)nthreads;
    p->th[first].parent = enc_i;

    for (unsigned i = 1; i < nthreads; i++) {
        tstate_t t = prim;
        int idx;
        t.place = 0;
        if (bind != GOMP_BIND_FALSE) {
            switch (bind) {
            case GOMP_BIND_TRUE:
            case GOMP_BIND_CLOSE:
                if (k == s) {
                    if (++pp == off0 + len0)
                        pp = off0;
                    k = 1;
                    if (i == nthreads - rest)
                        s = 1;
                } else {
                    ++k;
                }
                break;
            case GOMP_BIND_MASTER: break;
            case GOMP_BIND_SPREAD:
                if (k == 0) {
                    pp += pp < rest ? s + 1 : s;
                    if (pp == off0 + len0)
                        pp = off0;
                    t.off = pp;
                    t.len = pp < rest ? s + 1 : s;
                } else {
                    if (k == s) {
                        if (++pp == off0 + len0)
                            pp = off0;
                        k = 1;
                        if (i == nthreads - rest)
                            s = 1;
                    } else {
                        ++k;
                    }
                    t.off = pp;
                    t.len = 1;
                }
                break;
            }
            t.place = pp + 1;
            /* pthread_attr_setaffinity_np: the kernel keeps the CPUs of the initial cpuset */
            t.mask = p->places[pp];
            bkm_cpuset_and(&t.mask, &p->mask);
            if (bkm_cpuset_is_empty(&t.mask)) {
                p->fatal = bkm_strdup("Thread creation failed: Invalid argument");
                return p->fatal ? BKM_OK : bkm_err_set(err, BKM_ENOMEM, "out of memory");
            }
        }
        t.active_level = prim.active_level;
        t.nthreads_var = nthreads_var;
        t.bind_var = bind_var;
        if ((idx = add_thread(pl, err)) < 0)
            return idx;
        pl->st[idx] = t;
        p->th[idx].level = depth;
        p->th[idx].num = (int)i;
        p->th[idx].team_size = (int)nthreads;
        p->th[idx].parent = enc_i;
        pl->managed++;
    }
    return BKM_OK;
}

/* ---- Plan ------------------------------------------------------------------------------ */

static void displays(bkm_aff_gomp_plan_t *p, const bkm__gomp_icv_t *icv)
{
    size_t n = 0;
    if (icv->bind_len > 1) {
        for (int i = 0; i < icv->bind_len && i < BKM__GOMP_LIST_MAX; i++)
            n += (size_t)snprintf(p->bind_display + n, sizeof(p->bind_display) - n, "%s%s", i ? "," : "",
                                  bind_upper(icv->bind[i]));
    } else {
        snprintf(p->bind_display, sizeof(p->bind_display), "%s", bind_upper(icv->bind_var));
    }
    n = (size_t)snprintf(p->nthreads_display, sizeof(p->nthreads_display), "%lu", icv->nthreads[0]);
    for (int i = 1; i < icv->nthreads_len && i < BKM__GOMP_LIST_MAX; i++)
        n += (size_t)snprintf(p->nthreads_display + n, sizeof(p->nthreads_display) - n, ",%lu", icv->nthreads[i]);
}

/* How many distinct last-level caches the CPUs of @p mask have. */
static int llc_groups(const bkm_topo_t *topo, const bkm_cpuset_t *mask)
{
    int n = 0, groups = 0;
    const bkm_topo_pu_t *pu = bkm_topo_pus(topo, &n);
    bkm_cpuset_t seen;
    bkm_cpuset_zero(&seen);
    for (int i = 0; i < n; i++)
        if (pu[i].llc >= 0 && pu[i].llc < BKM_CPUSET_MAX && bkm_cpuset_isset(mask, pu[i].os) &&
            !bkm_cpuset_isset(&seen, pu[i].llc)) {
            bkm_cpuset_set(&seen, pu[i].llc);
            groups++;
        }
    return groups;
}

/* libgomp's test for an abstract place kind: blanks, then the name in any case. */
static int starts_with_ci(const char *s, const char *word)
{
    while (bkm__gomp_isspace((unsigned char)*s))
        s++;
    return strncasecmp(s, word, strlen(word)) == 0;
}

/* Notes on the environment: what libgomp ignored and why, where the places and the policy come
 * from. */
static void notes_env(bkm_aff_gomp_plan_t *p, const bkm_aff_gomp_env_t *env, const bkm__gomp_icv_t *icv,
                      const bkm__gomp_t *g)
{
    char buf[512];
    for (const char *const *f = env->foreign; f != NULL && *f != NULL; f++) {
        size_t len = strcspn(*f, "=");
        if (strncmp(*f, "KMP_", 4) == 0)
            note(p,
                 "%s is ignored: GNU libgomp reads no KMP_* variable (its placement variables are OMP_PLACES, "
                 "OMP_PROC_BIND and GOMP_CPU_AFFINITY; OMP_WAIT_POLICY and GOMP_SPINCOUNT set its waiting)",
                 *f);
        else
            note(p, "%.*s is not read by GNU libgomp", (int)len, *f);
    }
    if (icv->places_ignored)
        note(p, "OMP_PLACES is only checked for its syntax: OMP_PROC_BIND=false turns binding off");
    if (icv->affinity_ignored)
        note(p, "GOMP_CPU_AFFINITY is only checked for its syntax: %s",
             icv->bind_var == GOMP_BIND_FALSE && icv->bind_set ? "OMP_PROC_BIND=false turns binding off"
                                                               : "OMP_PLACES gave the places, which take precedence");
    if (p->places_src == BKM_AFF_GOMP_PLACES_DEFAULT)
        note(p, "no place list: with binding on libgomp uses one place per hardware thread (its `threads`)");
    if (p->n_places > 0 && !icv->bind_set)
        note(p,
             "OMP_PROC_BIND %s: binding is on because %s gave places; its policy `true` places threads like "
             "close",
             env->omp_proc_bind ? "was rejected" : "is unset",
             p->places_src == BKM_AFF_GOMP_PLACES_OMP ? "OMP_PLACES" : "GOMP_CPU_AFFINITY");
    if (env->omp_places != NULL && p->places_src == BKM_AFF_GOMP_PLACES_OMP &&
        starts_with_ci(env->omp_places, "ll_caches")) {
        int groups = llc_groups(g->topo, &g->mask);
        if (groups > 1)
            note(p,
                 "OMP_PLACES=ll_caches gives 1 place in libgomp 12.2 (it reads the first CPU's cache list for "
                 "every CPU), not one per last-level cache (the initial mask spans %d)",
                 groups);
    }
    if (g->dropped > 0)
        note(p, "GOMP_CPU_AFFINITY: %d CPU number%s beyond libgomp's CPU set (0-%lu) %s dropped silently", g->dropped,
             g->dropped > 1 ? "s" : "", g->max - 1, g->dropped > 1 ? "are" : "is");
    if (p->places_src == BKM_AFF_GOMP_PLACES_GOMP) {
        int outside = 0;
        for (int i = 0; i < p->n_places; i++) {
            bkm_cpuset_t t = p->places[i];
            bkm_cpuset_and(&t, &p->mask);
            if (bkm_cpuset_is_empty(&t) && outside++ == 0) {
                cpus_str(&p->places[i], buf, sizeof(buf));
                note(p,
                     "GOMP_CPU_AFFINITY place %d {%s} is outside the initial mask (libgomp does not check it): "
                     "a thread bound there cannot be created",
                     i, buf);
            }
        }
    }
}

/* Notes on the teams: the constructor's pin, threads sharing places, inactive nested levels. */
static void notes_teams(bkm_aff_gomp_plan_t *p, const bkm__gomp_icv_t *icv, int req_levels)
{
    char buf[512], mask[512];
    if (p->pinned) {
        cpus_str(&p->places[0], buf, sizeof(buf));
        cpus_str(&p->mask, mask, sizeof(mask));
        if (bkm_cpuset_equal(&p->initial, &p->mask) && !bkm_cpuset_equal(&p->places[0], &p->mask))
            note(p,
                 "libgomp's constructor tries to pin the initial thread to place 0 {%s}, outside the initial "
                 "mask: the pin fails and the initial thread keeps %s",
                 buf, mask);
        else
            note(p,
                 "libgomp's constructor pins the initial thread to place 0 {%s} before main(): threads and "
                 "processes it starts later inherit that mask",
                 buf);
    }
    for (int lv = 1; lv <= p->levels && p->n_places > 0; lv++) {
        /* threads per place in the first team of the level */
        int *count = bkm_calloc((size_t)p->n_places, sizeof(int));
        int shared = 0, worst = -1, team_first = -1;
        if (count == NULL)
            return;
        for (int i = 0; i < p->n_th; i++)
            if (p->th[i].level == lv && p->th[i].num == 0) {
                team_first = i;
                break;
            }
        for (int i = team_first; i >= 0 && i < p->n_th && p->th[i].level == lv; i++) {
            if (i > team_first && p->th[i].num == 0)
                break;
            if (p->th[i].place >= 0 && p->th[i].place < p->n_places && ++count[p->th[i].place] == 2)
                shared++;
            if (p->th[i].place >= 0 && (worst < 0 || count[p->th[i].place] > count[worst]))
                worst = p->th[i].place;
        }
        if (shared > 0 && worst >= 0) {
            cpus_str(&p->places[worst], buf, sizeof(buf));
            note(p, "level %d: threads share places (%d place%s with more than one thread; up to %d on place %d {%s})",
                 lv, shared, shared > 1 ? "s" : "", count[worst], worst, buf);
        }
        bkm_free(count);
    }
    for (int lv = 2; lv <= req_levels && lv <= p->levels; lv++)
        if (p->team_size[lv - 1] == 1 && p->team_size[lv - 2] > 1 && icv->max_active_levels < (unsigned long)lv)
            note(p,
                 "level %d teams have 1 thread: max-active-levels is %lu (set OMP_MAX_ACTIVE_LEVELS, or give "
                 "OMP_NUM_THREADS or OMP_PROC_BIND a list)",
                 lv, icv->max_active_levels);
    if (p->team_size[0] > bkm_cpuset_count(&p->mask))
        note(p, "the team has %d threads for %d CPUs of the initial mask", p->team_size[0], bkm_cpuset_count(&p->mask));
}

/* Strict mode: the first thing libgomp would complain about, as an error. */
static int strict_check(const bkm__gomp_t *g, const bkm_aff_gomp_env_t *env, const bkm_aff_gomp_plan_t *p,
                        bkm_err_t *err)
{
    const char *var = NULL, *value = NULL, *what = NULL;
    if (g->n_msg > 0) {
        var = g->msg_var[0];
        what = g->msg[0];
    } else if (g->dropped > 0) {
        var = "GOMP_CPU_AFFINITY";
    } else if (p->fatal != NULL ||
               (p->pinned && bkm_cpuset_equal(&p->initial, &p->mask) && !bkm_cpuset_equal(&p->places[0], &p->mask))) {
        var = p->places_src == BKM_AFF_GOMP_PLACES_GOMP ? "GOMP_CPU_AFFINITY" : "OMP_PLACES";
        return bkm_err_set(err, BKM_EINVAL, "%s='%.200s': a place is outside the initial mask, so libgomp 12 %s", var,
                           var[0] == 'G' ? env->gomp_cpu_affinity : env->omp_places,
                           p->fatal ? "cannot create a thread bound to it and exits (\"Thread creation failed: "
                                      "Invalid argument\")"
                                    : "cannot pin the initial thread to it");
    } else {
        return BKM_OK;
    }
    if (var == NULL)
        var = "OMP_PLACES";
    value = !strcmp(var, "OMP_PLACES")              ? env->omp_places
            : !strcmp(var, "GOMP_CPU_AFFINITY")     ? env->gomp_cpu_affinity
            : !strcmp(var, "OMP_PROC_BIND")         ? env->omp_proc_bind
            : !strcmp(var, "OMP_NUM_THREADS")       ? env->omp_num_threads
            : !strcmp(var, "OMP_MAX_ACTIVE_LEVELS") ? env->omp_max_active_levels
            : !strcmp(var, "OMP_NESTED")            ? env->omp_nested
            : !strcmp(var, "OMP_WAIT_POLICY")       ? env->omp_wait_policy
                                                    : env->gomp_spincount;
    if (what == NULL)
        return bkm_err_set(err, BKM_EINVAL, "%s='%.200s': %s; libgomp 12 drops it silently", var, value ? value : "",
                           g->why[0] ? g->why : "a CPU is out of range");
    return bkm_err_set(err, BKM_EINVAL, "%s='%.200s': %s; libgomp 12 prints \"%s\"%s", var, value ? value : "",
                       g->why[0] && g->why_var == var ? g->why : "rejected", what,
                       strncmp(what, "Number of places reduced", 24) == 0 ? "" : " and treats the variable as unset");
}

int bkm_aff_gomp_plan_create(const bkm_topo_t *topo, const bkm_aff_gomp_env_t *env, const bkm_aff_gomp_opts_t *opts,
                             bkm_aff_gomp_plan_t **plan, bkm_err_t *err)
{
    static const bkm_aff_gomp_opts_t default_opts;
    static const bkm_aff_gomp_env_t no_env;
    bkm__gomp_t g;
    bkm__gomp_icv_t icv;
    planner_t pl;
    bkm_aff_gomp_plan_t *p = NULL;
    tstate_t init;
    int rc, levels, hi;
    if (plan == NULL || topo == NULL)
        return bkm_err_set(err, BKM_EINVAL, "libgomp plan: no topology or no result pointer");
    *plan = NULL;
    if (env == NULL)
        env = &no_env;
    if (opts == NULL)
        opts = &default_opts;
    levels = opts->n_levels == 0 ? 1 : opts->n_levels;
    if (levels < 1 || levels > BKM_AFF_GOMP_MAX_LEVELS)
        return bkm_err_set(err, BKM_EINVAL, "libgomp plan: %d nesting levels (1..%d)", opts->n_levels,
                           BKM_AFF_GOMP_MAX_LEVELS);
    for (int i = 0; i < BKM_AFF_GOMP_MAX_LEVELS; i++)
        if (opts->num_threads[i] < 0 || opts->num_threads[i] > BKM_AFF_GOMP_MAX_TEAM)
            return bkm_err_set(err, BKM_EINVAL, "libgomp plan: %d threads at level %d (0..%d)", opts->num_threads[i],
                               i + 1, BKM_AFF_GOMP_MAX_TEAM);
    memset(&g, 0, sizeof(g));
    memset(&pl, 0, sizeof(pl));
    g.topo = topo;
    bkm_topo_allowed(topo, &g.mask);
    g.popcount = bkm_cpuset_count(&g.mask);
    if (g.popcount == 0)
        return bkm_err_set(err, BKM_EINVAL, "libgomp plan: the initial mask is empty");
    /* gomp_cpuset_size = CPU_ALLOC_SIZE(highest CPU of the mask + 1): whole 64-bit words */
    for (hi = BKM_CPUSET_MAX - 1; hi > 0 && !bkm_cpuset_isset(&g.mask, hi); hi--)
        ;
    g.max = (unsigned long)((hi + 64) / 64) * 64;

    if ((p = bkm_calloc(1, sizeof(*p))) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for a libgomp plan");
    p->mask = g.mask;
    if ((rc = bkm__gomp_env_apply(&g, env, &icv)) < 0) {
        rc = bkm_err_set(err, rc, "libgomp plan: out of memory");
        goto out;
    }
    p->places = g.places;
    p->n_places = g.n_places;
    g.places = NULL;
    p->places_src = icv.places_src;
    p->max_active_levels = (int)icv.max_active_levels;
    p->levels = levels;
    displays(p, &icv);

    /* gomp_init_affinity: the initial thread is pinned to place 0 when binding is on. */
    memset(&init, 0, sizeof(init));
    init.mask = g.mask;
    init.nthreads_var = icv.nthreads[0];
    init.bind_var = icv.bind_var;
    if (icv.bind_var != GOMP_BIND_FALSE && p->n_places > 0) {
        bkm_cpuset_t pin = p->places[0];
        bkm_cpuset_and(&pin, &g.mask);
        p->pinned = 1;
        if (!bkm_cpuset_is_empty(&pin))
            init.mask = pin;
        init.place = 1;
        init.off = 0;
        init.len = (unsigned)p->n_places;
    }
    p->initial = init.mask;

    /* The teams, level by level: each thread of a level starts a team of the next level. */
    pl.p = p;
    pl.icv = &icv;
    pl.opts = opts;
    pl.managed = 1;
    if ((rc = team_start(&pl, 1, -1, &init, err)) < 0)
        goto out;
    for (int d = 2, from = 0; d <= levels && p->fatal == NULL; d++) {
        int to = p->n_th;
        for (int i = from; i < to && p->fatal == NULL; i++)
            if ((rc = team_start(&pl, d, i, NULL, err)) < 0)
                goto out;
        from = to;
    }
    for (int i = 0; i < p->n_th; i++) {
        p->th[i].place = (int)pl.st[i].place - 1;
        p->th[i].part_off = p->n_places > 0 ? (int)pl.st[i].off : 0;
        p->th[i].part_len = p->n_places > 0 ? (int)pl.st[i].len : 0;
        p->th[i].cpus = pl.st[i].mask;
    }

    /* Waiting (config/linux/wait.h do_spin): the throttled count once libgomp manages more threads
     * than the initial mask has CPUs. */
    p->wait.policy = icv.wait_policy;
    p->wait.spin_count = icv.spin;
    p->wait.throttled_count = icv.throttled;
    p->wait.throttled = pl.managed > (unsigned long)g.popcount;
    p->wait.effective = p->wait.throttled ? icv.throttled : icv.spin;

    if (opts->strict && (rc = strict_check(&g, env, p, err)) < 0)
        goto out;
    for (int i = 0; i < g.n_msg; i++) {
        p->msg[i] = g.msg[i];
        g.msg[i] = NULL;
    }
    p->n_msg = g.n_msg;
    notes_env(p, env, &icv, &g);
    notes_teams(p, &icv, levels);
    *plan = p;
    p = NULL;
    rc = BKM_OK;
out:
    for (int i = 0; i < g.n_msg; i++)
        bkm_free(g.msg[i]);
    bkm__gomp_places_clear(&g);
    bkm_free(pl.st);
    bkm_aff_gomp_plan_free(p);
    return rc;
}

/* ---- Accessors ------------------------------------------------------------------------- */

int bkm_aff_gomp_plan_n_places(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->n_places : 0;
}
const bkm_cpuset_t *bkm_aff_gomp_plan_place(const bkm_aff_gomp_plan_t *plan, int i)
{
    return plan && i >= 0 && i < plan->n_places ? &plan->places[i] : NULL;
}
bkm_aff_gomp_places_src_t bkm_aff_gomp_plan_places_source(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? (bkm_aff_gomp_places_src_t)plan->places_src : BKM_AFF_GOMP_PLACES_NONE;
}
int bkm_aff_gomp_plan_levels(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->levels : 0;
}
bkm_aff_bind_t bkm_aff_gomp_plan_bind(const bkm_aff_gomp_plan_t *plan, int level)
{
    if (plan == NULL || level < 1 || level > plan->levels)
        return BKM_AFF_BIND_FALSE;
    return (bkm_aff_bind_t)plan->bind[level - 1];
}
int bkm_aff_gomp_plan_team_size(const bkm_aff_gomp_plan_t *plan, int level)
{
    return plan && level >= 1 && level <= plan->levels ? plan->team_size[level - 1] : 0;
}
const char *bkm_aff_gomp_plan_bind_display(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->bind_display : "";
}
const char *bkm_aff_gomp_plan_nthreads_display(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->nthreads_display : "";
}
int bkm_aff_gomp_plan_max_active_levels(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->max_active_levels : 0;
}
int bkm_aff_gomp_plan_initial_pin(const bkm_aff_gomp_plan_t *plan, bkm_cpuset_t *cpus)
{
    if (plan == NULL)
        return 0;
    if (cpus != NULL)
        *cpus = plan->initial;
    return plan->pinned;
}
const bkm_cpuset_t *bkm_aff_gomp_plan_mask(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? &plan->mask : NULL;
}
int bkm_aff_gomp_plan_n_threads(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->n_th : 0;
}
const bkm_aff_gomp_thread_t *bkm_aff_gomp_plan_thread(const bkm_aff_gomp_plan_t *plan, int i)
{
    return plan && i >= 0 && i < plan->n_th ? &plan->th[i] : NULL;
}
void bkm_aff_gomp_plan_thread_path(const bkm_aff_gomp_plan_t *plan, int i, bkm_buf_t *out)
{
    int chain[BKM_AFF_GOMP_MAX_LEVELS + 1], n = 0;
    if (plan == NULL || i < 0 || i >= plan->n_th)
        return;
    for (int j = i; j >= 0 && n <= BKM_AFF_GOMP_MAX_LEVELS; j = plan->th[j].parent)
        chain[n++] = j;
    for (int k = n - 1; k >= 0; k--)
        bkm_buf_printf(out, k == n - 1 ? "%d" : ".%d", plan->th[chain[k]].num);
}
int bkm_aff_gomp_plan_bound(const bkm_aff_gomp_plan_t *plan)
{
    if (plan == NULL)
        return 0;
    for (int i = 0; i < plan->n_th; i++)
        if (plan->th[i].place >= 0 || !bkm_cpuset_equal(&plan->th[i].cpus, &plan->mask))
            return 1;
    return 0;
}
const char *bkm_aff_gomp_plan_fatal(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->fatal : NULL;
}
int bkm_aff_gomp_plan_n_messages(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->n_msg : 0;
}
const char *bkm_aff_gomp_plan_message(const bkm_aff_gomp_plan_t *plan, int i)
{
    return plan && i >= 0 && i < plan->n_msg ? plan->msg[i] : NULL;
}
int bkm_aff_gomp_plan_n_notes(const bkm_aff_gomp_plan_t *plan)
{
    return plan ? plan->n_note : 0;
}
const char *bkm_aff_gomp_plan_note(const bkm_aff_gomp_plan_t *plan, int i)
{
    return plan && i >= 0 && i < plan->n_note ? plan->note[i] : NULL;
}
void bkm_aff_gomp_plan_wait(const bkm_aff_gomp_plan_t *plan, bkm_aff_gomp_wait_t *wait)
{
    if (wait == NULL)
        return;
    memset(wait, 0, sizeof(*wait));
    if (plan != NULL)
        *wait = plan->wait;
}

/* gomp_affinity_print_place: runs of consecutive CPUs as "start:length". */
static void place_format(const bkm_cpuset_t *s, bkm_buf_t *out)
{
    int first = 1;
    for (int c = bkm_cpuset_first(s); c >= 0;) {
        int len = 1;
        while (bkm_cpuset_isset(s, c + len))
            len++;
        bkm_buf_printf(out, first ? "%d" : ",%d", c);
        if (len > 1)
            bkm_buf_printf(out, ":%d", len);
        first = 0;
        c = bkm_cpuset_next(s, c + len - 1);
    }
}

void bkm_aff_gomp_plan_places_format(const bkm_aff_gomp_plan_t *plan, bkm_buf_t *out)
{
    for (int i = 0; plan != NULL && i < plan->n_places; i++) {
        bkm_buf_puts(out, i ? ",{" : "{");
        place_format(&plan->places[i], out);
        bkm_buf_puts(out, "}");
    }
}

void bkm_aff_gomp_plan_key(const bkm_aff_gomp_plan_t *plan, bkm_buf_t *out)
{
    int level = 0;
    if (plan == NULL)
        return;
    bkm_buf_puts(out, "pin:");
    bkm_cpuset_format(&plan->initial, out);
    bkm_buf_printf(out, ";spin:%llu/%llu;%s", plan->wait.spin_count, plan->wait.throttled_count,
                   plan->fatal ? "fatal" : "ok");
    for (int i = 0; i < plan->n_th; i++) {
        if (plan->th[i].level != level) {
            level = plan->th[i].level;
            bkm_buf_printf(out, ";L%d:", level);
        } else {
            bkm_buf_puts(out, "|");
        }
        bkm_cpuset_format(&plan->th[i].cpus, out);
    }
}

int bkm_aff_gomp_plan_equal(const bkm_aff_gomp_plan_t *a, const bkm_aff_gomp_plan_t *b)
{
    bkm_buf_t ka, kb;
    int same;
    if (a == NULL || b == NULL)
        return 0;
    bkm_buf_init(&ka);
    bkm_buf_init(&kb);
    bkm_aff_gomp_plan_key(a, &ka);
    bkm_aff_gomp_plan_key(b, &kb);
    same = !ka.oom && !kb.oom && strcmp(bkm_buf_str(&ka), bkm_buf_str(&kb)) == 0;
    bkm_buf_free(&ka);
    bkm_buf_free(&kb);
    return same;
}

/* ---- JSON and text ---------------------------------------------------------------------- */

static const char *places_src_name(int src)
{
    switch (src) {
    case BKM_AFF_GOMP_PLACES_OMP: return "OMP_PLACES";
    case BKM_AFF_GOMP_PLACES_GOMP: return "GOMP_CPU_AFFINITY";
    case BKM_AFF_GOMP_PLACES_DEFAULT: return "default";
    default: return "none";
    }
}

static void json_cpus(bkm_json_w_t *w, const bkm_cpuset_t *s)
{
    bkm_json_arr_begin(w);
    for (int c = bkm_cpuset_first(s); c >= 0; c = bkm_cpuset_next(s, c))
        bkm_json_int(w, c);
    bkm_json_arr_end(w);
}

/* The distinct logical cores (@p pkg 0) or packages (1) of the PUs in @p s, as a set. */
static void levels_of(const bkm_topo_pu_t *pu, int n_pu, const bkm_cpuset_t *s, int pkg, bkm_cpuset_t *out)
{
    bkm_cpuset_zero(out);
    for (int i = 0; i < n_pu; i++) {
        int v = pkg ? pu[i].pkg : pu[i].core;
        if (v >= 0 && v < BKM_CPUSET_MAX && bkm_cpuset_isset(s, pu[i].os))
            bkm_cpuset_set(out, v);
    }
}

static const char *policy_name(int policy)
{
    return policy > 0 ? "active" : policy == 0 ? "passive" : "unset";
}

static void json_ull(bkm_json_w_t *w, const char *key, unsigned long long v)
{
    char num[32];
    snprintf(num, sizeof(num), "%llu", v);
    bkm_json_key(w, key);
    bkm_json_raw(w, num);
}

int bkm_aff_gomp_plan_to_json(const bkm_aff_gomp_plan_t *plan, const bkm_topo_t *topo, bkm_json_w_t *w, bkm_err_t *err)
{
    const bkm_topo_pu_t *pu = NULL;
    int n_pu = 0, rc;
    bkm_buf_t b;
    if (plan == NULL || w == NULL)
        return bkm_err_set(err, BKM_EINVAL, "libgomp plan: nothing to write");
    if (topo != NULL)
        pu = bkm_topo_pus(topo, &n_pu);
    bkm_buf_init(&b);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "runtime");
    bkm_json_str(w, "libgomp");
    bkm_json_key(w, "threads");
    bkm_json_int(w, plan->team_size[0]);
    bkm_json_key(w, "levels");
    bkm_json_int(w, plan->levels);
    bkm_json_key(w, "bound");
    bkm_json_bool(w, bkm_aff_gomp_plan_bound(plan));
    bkm_json_key(w, "places_source");
    bkm_json_str(w, places_src_name(plan->places_src));
    bkm_json_key(w, "places");
    bkm_json_arr_begin(w);
    for (int i = 0; i < plan->n_places; i++)
        json_cpus(w, &plan->places[i]);
    bkm_json_arr_end(w);
    bkm_json_key(w, "places_display");
    bkm_aff_gomp_plan_places_format(plan, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_json_key(w, "proc_bind");
    bkm_json_arr_begin(w);
    for (int l = 0; l < plan->levels; l++)
        bkm_json_str(w, bind_lower(plan->bind[l]));
    bkm_json_arr_end(w);
    bkm_json_key(w, "proc_bind_display");
    bkm_json_str(w, plan->bind_display);
    bkm_json_key(w, "nthreads_display");
    bkm_json_str(w, plan->nthreads_display);
    bkm_json_key(w, "max_active_levels");
    bkm_json_int(w, plan->max_active_levels);
    bkm_json_key(w, "mask");
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    bkm_cpuset_format(&plan->mask, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_json_key(w, "initial_pin");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "pinned");
    bkm_json_bool(w, plan->pinned);
    bkm_json_key(w, "cpus");
    json_cpus(w, &plan->initial);
    bkm_json_obj_end(w);
    bkm_json_key(w, "wait");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "policy");
    bkm_json_str(w, policy_name(plan->wait.policy));
    json_ull(w, "spin_count", plan->wait.spin_count);
    json_ull(w, "throttled_spin_count", plan->wait.throttled_count);
    bkm_json_key(w, "throttled");
    bkm_json_bool(w, plan->wait.throttled);
    json_ull(w, "effective", plan->wait.effective);
    bkm_json_obj_end(w);
    bkm_json_key(w, "plan");
    bkm_json_arr_begin(w);
    for (int i = 0; i < plan->n_th; i++) {
        const bkm_aff_gomp_thread_t *t = &plan->th[i];
        bkm_buf_t path;
        bkm_buf_init(&path);
        bkm_aff_gomp_plan_thread_path(plan, i, &path);
        bkm_json_obj_begin(w);
        bkm_json_key(w, "thread");
        bkm_json_int(w, t->num);
        bkm_json_key(w, "path");
        bkm_json_str(w, bkm_buf_str(&path));
        bkm_json_key(w, "level");
        bkm_json_int(w, t->level);
        bkm_json_key(w, "parent");
        bkm_json_int(w, t->parent);
        bkm_json_key(w, "team_size");
        bkm_json_int(w, t->team_size);
        bkm_json_key(w, "place");
        bkm_json_int(w, t->place);
        bkm_json_key(w, "partition");
        bkm_json_arr_begin(w);
        for (int k = 0; k < t->part_len; k++)
            bkm_json_int(w, t->part_off + k);
        bkm_json_arr_end(w);
        bkm_json_key(w, "cpus");
        json_cpus(w, &t->cpus);
        if (pu != NULL) {
            bkm_cpuset_t lv;
            levels_of(pu, n_pu, &t->cpus, 0, &lv);
            bkm_json_key(w, "cores");
            json_cpus(w, &lv);
            levels_of(pu, n_pu, &t->cpus, 1, &lv);
            bkm_json_key(w, "sockets");
            json_cpus(w, &lv);
        }
        bkm_json_obj_end(w);
        bkm_buf_free(&path);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "messages");
    bkm_json_arr_begin(w);
    for (int i = 0; i < plan->n_msg; i++)
        bkm_json_str(w, plan->msg[i]);
    bkm_json_arr_end(w);
    bkm_json_key(w, "fatal");
    bkm_json_str(w, plan->fatal);
    bkm_json_key(w, "notes");
    bkm_json_arr_begin(w);
    for (int i = 0; i < plan->n_note; i++)
        bkm_json_str(w, plan->note[i]);
    bkm_json_arr_end(w);
    bkm_json_key(w, "key");
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    bkm_aff_gomp_plan_key(plan, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_json_obj_end(w);
    rc = b.oom || w->out->oom ? bkm_err_set(err, BKM_ENOMEM, "libgomp plan: out of memory") : BKM_OK;
    bkm_buf_free(&b);
    return rc;
}

/* "0-7" of the logical cores or packages of @p s. */
static void fmt_levels(bkm_buf_t *out, const bkm_topo_pu_t *pu, int n_pu, const bkm_cpuset_t *s, int pkg)
{
    bkm_cpuset_t lv;
    levels_of(pu, n_pu, s, pkg, &lv);
    bkm_cpuset_format(&lv, out);
}

static void spin_text(bkm_buf_t *out, unsigned long long v)
{
    if (v == ULLONG_MAX)
        bkm_buf_puts(out, "infinite");
    else
        bkm_buf_printf(out, "%llu", v);
}

int bkm_aff_gomp_plan_explain(const bkm_aff_gomp_plan_t *plan, const bkm_topo_t *topo, bkm_buf_t *out, bkm_err_t *err)
{
    const bkm_topo_pu_t *pu = NULL;
    int n_pu = 0;
    if (plan == NULL || out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "libgomp plan: nothing to explain");
    if (topo != NULL)
        pu = bkm_topo_pus(topo, &n_pu);
    bkm_buf_puts(out, "runtime:        GNU libgomp 12 (GCC 12.2)\n");
    bkm_buf_printf(out, "places from:    %s", places_src_name(plan->places_src));
    bkm_buf_printf(out, " (%d place%s)\n", plan->n_places, plan->n_places == 1 ? "" : "s");
    bkm_buf_puts(out, "places:         ");
    if (plan->n_places > 0)
        bkm_aff_gomp_plan_places_format(plan, out);
    else
        bkm_buf_puts(out, "(none: threads are not bound)");
    bkm_buf_printf(out, "\nOMP_PROC_BIND:  %s (as OMP_DISPLAY_ENV shows it)\n", plan->bind_display);
    bkm_buf_puts(out, "policy:        ");
    for (int l = 0; l < plan->levels; l++)
        bkm_buf_printf(out, " level %d %s (%d thread%s)%s", l + 1, bind_lower(plan->bind[l]), plan->team_size[l],
                       plan->team_size[l] == 1 ? "" : "s", l + 1 < plan->levels ? "," : "");
    bkm_buf_printf(out, "\nOMP_NUM_THREADS: %s, max-active-levels %d\n", plan->nthreads_display,
                   plan->max_active_levels);
    bkm_buf_puts(out, "initial mask:   ");
    bkm_cpuset_format(&plan->mask, out);
    bkm_buf_puts(out, "\ninitial thread: ");
    if (plan->pinned) {
        bkm_buf_puts(out, "pinned to ");
        bkm_cpuset_format(&plan->initial, out);
        bkm_buf_puts(out, " by libgomp's constructor, before main()\n");
    } else {
        bkm_buf_puts(out, "not pinned\n");
    }
    bkm_buf_printf(out, "waiting:        OMP_WAIT_POLICY %s, spin ", policy_name(plan->wait.policy));
    spin_text(out, plan->wait.spin_count);
    bkm_buf_puts(out, " (");
    spin_text(out, plan->wait.throttled_count);
    bkm_buf_printf(out, " with more threads than CPUs): these teams spin ");
    spin_text(out, plan->wait.effective);
    bkm_buf_puts(out, "\n\n");
    bkm_buf_printf(out, "%-9s  %-6s  %-16s  %-24s  %-12s  %s\n", "thread", "place", "partition", "CPUs", "core",
                   "socket");
    for (int i = 0; i < plan->n_th; i++) {
        const bkm_aff_gomp_thread_t *t = &plan->th[i];
        bkm_buf_t path, part, cpus, core, sock;
        char place[16];
        bkm_buf_init(&path);
        bkm_buf_init(&part);
        bkm_buf_init(&cpus);
        bkm_buf_init(&core);
        bkm_buf_init(&sock);
        bkm_aff_gomp_plan_thread_path(plan, i, &path);
        if (t->part_len > 1)
            bkm_buf_printf(&part, "%d-%d", t->part_off, t->part_off + t->part_len - 1);
        else if (t->part_len == 1)
            bkm_buf_printf(&part, "%d", t->part_off);
        else
            bkm_buf_puts(&part, "-");
        snprintf(place, sizeof(place), t->place >= 0 ? "%d" : "-", t->place);
        bkm_cpuset_format(&t->cpus, &cpus);
        if (pu != NULL) {
            fmt_levels(&core, pu, n_pu, &t->cpus, 0);
            fmt_levels(&sock, pu, n_pu, &t->cpus, 1);
        }
        bkm_buf_printf(out, "%-9s  %-6s  %-16s  %-24s  %-12s  %s\n", bkm_buf_str(&path), place, bkm_buf_str(&part),
                       bkm_buf_str(&cpus), bkm_buf_str(&core), bkm_buf_str(&sock));
        bkm_buf_free(&path);
        bkm_buf_free(&part);
        bkm_buf_free(&cpus);
        bkm_buf_free(&core);
        bkm_buf_free(&sock);
    }
    if (plan->fatal != NULL)
        bkm_buf_printf(out, "\nlibgomp aborts the program: \"%s\" (exit status 1)\n", plan->fatal);
    if (plan->n_msg > 0) {
        bkm_buf_puts(out, "\nlibgomp prints (stderr), then treats each rejected variable as unset:\n");
        for (int i = 0; i < plan->n_msg; i++)
            bkm_buf_printf(out, "  libgomp: %s\n", plan->msg[i]);
    }
    if (plan->n_note > 0) {
        bkm_buf_puts(out, "\nnotes:\n");
        for (int i = 0; i < plan->n_note; i++)
            bkm_buf_printf(out, "  - %s\n", plan->note[i]);
    }
    return out->oom ? bkm_err_set(err, BKM_ENOMEM, "libgomp plan: out of memory") : BKM_OK;
}
