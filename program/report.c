/* SPDX-License-Identifier: MIT */
/* The samples and the team log merged: every thread classified, the OpenMP teams in team order,
 * the comparison of the team's masks with a plan, and both evidences as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program_int.h"

struct bkm_prog_report {
    int pid;
    const bkm_prog_sampler_t *s;
    bkm_prog_thread_t *th;
    int n_th, cap_th;
    bkm_prog_team_t *team;
    int n_team, cap_team;
    int main_team;            /* index into team, -1 none */
    char runtimes[256];
    uint64_t t0_ns;           /* time origin of the JSON */
    uint64_t rt_seen_ns;      /* when the parent first saw a runtime mapped; 0 unknown */
    /* the log */
    int log_given;
    size_t records, malformed;
    char first_bad[80];
    int truncated;
    int started;              /* a start (or fork) record of pid */
    char prog[BKM_PROG_NAME_MAX];
    int ompt_tool, ompt_version;
    char ompt_runtime[BKM_PROG_NAME_MAX];
    int lost_shapes;
    int *child;               /* other processes that wrote records (the first REPORT_CHILDREN_MAX) */
    int n_child, children_lost;
    int threads_lost, teams_lost;   /* log entries beyond the limits below */
    long team_slots;          /* sum of the teams' sizes */
    int *slot;                /* tid -> index + 1 into th, open addressing; [slot_cap] */
    int slot_cap;
};

/* Limits on what a log (data a program could write) makes the report hold. */
#define REPORT_THREADS_MAX 65536
#define REPORT_TEAMS_MAX 256
#define REPORT_TEAM_SLOTS_MAX (1L << 20)
#define REPORT_CHILDREN_MAX 64

const char *bkm_prog_class_name(int cls)
{
    static const char *const names[] = {"team", "team-other", "omp-helper", "main", "python", "torch", "other",
                                        "unknown"};
    return cls >= 0 && cls <= BKM_PROG_CLASS_UNKNOWN ? names[cls] : NULL;
}

const char *bkm_prog_verdict_name(int v)
{
    static const char *const names[] = {"match", "mismatch", "unsampled", "missing", "no-team"};
    return v >= 0 && v <= BKM_PROG_NO_TEAM ? names[v] : NULL;
}

static const char *api_name(int api)
{
    switch (api) {
    case BKM_PROG_API_GOMP: return "gomp";
    case BKM_PROG_API_OMPT: return "ompt";
    case BKM_PROG_API_ORDER: return "creation-order";
    default: return "none";
    }
}

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* An OpenMP runtime's object: GNU libgomp (also pip's vendored libgomp-<hash>.so.1), LLVM libomp,
 * Intel libiomp5. */
static int is_runtime_object(const char *name)
{
    return starts_with(name, "libgomp") || starts_with(name, "libomp") || starts_with(name, "libiomp");
}

static int is_python_object(const char *name)
{
    return starts_with(name, "python") || starts_with(name, "libpython");
}

static int is_torch_object(const char *name)
{
    return starts_with(name, "libtorch") || starts_with(name, "libc10");
}

/* ---------------------------------------------------------------------------------------- */
/* Building                                                                                  */

/* The first thread with @p tid (a reused TID keeps its first entry), by the hash of TIDs. */
static int thread_index(const bkm_prog_report_t *r, int tid)
{
    if (r->slot_cap == 0)
        return -1;
    for (unsigned h = ((unsigned)tid * 2654435761u) & (unsigned)(r->slot_cap - 1);; h = (h + 1) & (unsigned)(r->slot_cap - 1)) {
        int i = r->slot[h] - 1;
        if (i < 0)
            return -1;
        if (r->th[i].tid == tid)
            return i;
    }
}

static bkm_prog_thread_t *thread_of(bkm_prog_report_t *r, int tid)
{
    int i = thread_index(r, tid);
    return i >= 0 ? &r->th[i] : NULL;
}

static void slot_put(bkm_prog_report_t *r, int i)
{
    unsigned h = ((unsigned)r->th[i].tid * 2654435761u) & (unsigned)(r->slot_cap - 1);
    while (r->slot[h] != 0) {
        if (r->th[r->slot[h] - 1].tid == r->th[i].tid)
            return;   /* a reused TID: the first entry stays the one found */
        h = (h + 1) & (unsigned)(r->slot_cap - 1);
    }
    r->slot[h] = i + 1;
}

/* Append a thread; NULL when out of memory. The table stays at most half full. */
static bkm_prog_thread_t *thread_add(bkm_prog_report_t *r, int tid, const bkm_prog_task_t *task)
{
    bkm_prog_thread_t *t;
    if (r->n_th == r->cap_th) {
        int ncap = r->cap_th ? r->cap_th * 2 : 32;
        bkm_prog_thread_t *g = bkm_realloc(r->th, (size_t)ncap * sizeof *g);
        if (g == NULL)
            return NULL;
        r->th = g;
        r->cap_th = ncap;
    }
    if (2 * (r->n_th + 1) > r->slot_cap) {
        int ncap = r->slot_cap ? r->slot_cap * 2 : 64;
        int *g = bkm_calloc((size_t)ncap, sizeof *g);
        if (g == NULL)
            return NULL;
        bkm_free(r->slot);
        r->slot = g;
        r->slot_cap = ncap;
        for (int i = 0; i < r->n_th; i++)
            slot_put(r, i);
    }
    t = &r->th[r->n_th++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->task = task;
    t->is_main = tid == r->pid;
    t->team_index = t->team_size = -1;
    t->cls = BKM_PROG_CLASS_UNKNOWN;
    slot_put(r, r->n_th - 1);
    return t;
}

/* The team of that shape, created when new; NULL with *lost set when over the limits, NULL
 * alone when out of memory. */
static bkm_prog_team_t *team_get(bkm_prog_report_t *r, int api, int primary, int size, int level, const char *rt,
                                 int *lost)
{
    bkm_prog_team_t *t;
    *lost = 0;
    for (int i = 0; i < r->n_team; i++) {
        t = &r->team[i];
        if (t->api == api && t->primary == primary && t->size == size && t->level == level)
            return t;
    }
    if (r->n_team == REPORT_TEAMS_MAX || r->team_slots + size > REPORT_TEAM_SLOTS_MAX) {
        *lost = 1;
        return NULL;
    }
    if (r->n_team == r->cap_team) {
        int ncap = r->cap_team ? r->cap_team * 2 : 8;
        bkm_prog_team_t *g = bkm_realloc(r->team, (size_t)ncap * sizeof *g);
        if (g == NULL)
            return NULL;
        r->team = g;
        r->cap_team = ncap;
    }
    t = &r->team[r->n_team];
    memset(t, 0, sizeof *t);
    t->tid = bkm_malloc((size_t)size * sizeof *t->tid);
    t->joined_ns = bkm_calloc((size_t)size, sizeof *t->joined_ns);
    if (t->tid == NULL || t->joined_ns == NULL) {
        bkm_free(t->tid);
        bkm_free(t->joined_ns);
        return NULL;
    }
    r->n_team++;
    r->team_slots += size;
    for (int i = 0; i < size; i++)
        t->tid[i] = -1;
    t->api = api, t->primary = primary, t->size = size, t->level = level;
    snprintf(t->rt, sizeof t->rt, "%s", rt);
    return t;
}

static void runtime_add(bkm_prog_report_t *r, const char *name)
{
    char key[BKM_PROG_NAME_MAX + 2];
    size_t n = strlen(r->runtimes);
    if (name[0] == '\0' || strcmp(name, "?") == 0)
        return;
    snprintf(key, sizeof key, "%s;", name);
    if (strstr(r->runtimes, key) != NULL)
        return;
    if (n + strlen(key) < sizeof r->runtimes)
        memcpy(r->runtimes + n, key, strlen(key) + 1);
}

static int child_add(bkm_prog_report_t *r, int pid)
{
    int *g;
    for (int i = 0; i < r->n_child; i++)
        if (r->child[i] == pid)
            return 0;
    if (r->n_child == REPORT_CHILDREN_MAX) {
        r->children_lost = 1;
        return 0;
    }
    if ((g = bkm_realloc(r->child, (size_t)(r->n_child + 1) * sizeof *g)) == NULL)
        return -1;
    r->child = g;
    r->child[r->n_child++] = pid;
    return 0;
}

/* Members of teams from the log; the threads the log knows that the sampler never saw. */
static int merge_log(bkm_prog_report_t *r, const bkm_prog_log_t *log, bkm_err_t *err)
{
    for (size_t i = 0; i < log->n; i++) {
        const bkm_prog_rec_t *rec = &log->rec[i];
        bkm_prog_thread_t *t;
        if (rec->pid != r->pid) {
            if (child_add(r, rec->pid) < 0)
                return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
            continue;
        }
        if (rec->t_ns > 0 && (r->t0_ns == 0 || rec->t_ns < r->t0_ns))
            r->t0_ns = rec->t_ns;
        switch (rec->kind) {
        case BKM_PROG_REC_START:
        case BKM_PROG_REC_FORK:
            r->started = 1;
            if (rec->kind == BKM_PROG_REC_START)
                snprintf(r->prog, sizeof r->prog, "%s", rec->lib);
            continue;
        case BKM_PROG_REC_TOOL:
            r->ompt_tool = 1;
            r->ompt_version = rec->version;
            snprintf(r->ompt_runtime, sizeof r->ompt_runtime, "%s", rec->rt);
            continue;
        case BKM_PROG_REC_OMPT:
            runtime_add(r, rec->rt);
            continue;
        case BKM_PROG_REC_LOST:
            r->lost_shapes++;
            continue;
        default:
            break;
        }
        if ((t = thread_of(r, rec->tid)) == NULL) {
            if (r->n_th >= REPORT_THREADS_MAX) {
                r->threads_lost++;
                continue;
            }
            if ((t = thread_add(r, rec->tid, NULL)) == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
        }
        if (rec->kind == BKM_PROG_REC_THREAD && !t->created) {
            t->created = 1;
            t->creator = rec->creator;
            t->seq = rec->seq;
            t->lib_is_exe = rec->exe;
            snprintf(t->via, sizeof t->via, "%s", rec->via);
            snprintf(t->lib, sizeof t->lib, "%s", rec->lib);
            if (is_runtime_object(rec->via))
                runtime_add(r, rec->via);
        } else if (rec->kind == BKM_PROG_REC_OTHREAD) {
            t->ompt_type = rec->type;
        } else if (rec->kind == BKM_PROG_REC_TEAM) {
            int lost;
            bkm_prog_team_t *team = team_get(r, rec->api, rec->primary, rec->size, rec->level, rec->rt, &lost);
            if (team == NULL && lost) {
                r->teams_lost++;
                continue;
            }
            if (team == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "report: out of memory for team of %d", rec->size);
            runtime_add(r, rec->rt);
            t->n_teams++;
            if (team->t_ns == 0 || rec->t_ns < team->t_ns)
                team->t_ns = rec->t_ns;
            if (rec->index >= rec->size) {
                team->conflicts++;
            } else if (team->tid[rec->index] < 0) {
                team->tid[rec->index] = rec->tid;
                team->joined_ns[rec->index] = rec->t_ns;
                team->n_found++;
            } else if (team->tid[rec->index] != rec->tid) {
                team->conflicts++;
            }
        }
    }
    return BKM_OK;
}

static int created_by_runtime(const bkm_prog_thread_t *t)
{
    return t != NULL && t->created && (is_runtime_object(t->via) || is_runtime_object(t->lib));
}

/* Without any team record, the runtime's threads in creation order: thread 0 is the thread that
 * created the first of them, then the ones it created, by sequence number. */
static int infer_team(bkm_prog_report_t *r, bkm_err_t *err)
{
    const bkm_prog_thread_t *first = NULL;
    int n = 0, primary, lost;
    bkm_prog_team_t *team;
    for (int i = 0; i < r->n_th; i++)
        if (created_by_runtime(&r->th[i]) && (first == NULL || r->th[i].seq < first->seq))
            first = &r->th[i];
    if (first == NULL)
        return BKM_OK;
    primary = first->creator;
    for (int i = 0; i < r->n_th; i++)
        if (created_by_runtime(&r->th[i]) && r->th[i].creator == primary)
            n++;
    if ((team = team_get(r, BKM_PROG_API_ORDER, primary, n + 1, 1, first->via, &lost)) == NULL)
        return lost ? BKM_OK : bkm_err_set(err, BKM_ENOMEM, "report: out of memory for team of %d", n + 1);
    team->tid[0] = primary;
    team->n_found = 1;
    for (int k = 1; k <= n; k++) {
        const bkm_prog_thread_t *next = NULL;
        long long after = k == 1 ? 0 : bkm_prog_report_find(r, team->tid[k - 1])->seq;
        for (int i = 0; i < r->n_th; i++) {
            const bkm_prog_thread_t *t = &r->th[i];
            if (created_by_runtime(t) && t->creator == primary && t->seq > after &&
                (next == NULL || t->seq < next->seq))
                next = t;
        }
        if (next == NULL)
            break;
        team->tid[k] = next->tid;
        team->n_found++;
    }
    return BKM_OK;
}

/* The main team: level 1 (or unknown), more than one thread, not the runtime's own; led by the
 * main thread first, then the largest, the most complete, the earliest. */
static void pick_main_team(bkm_prog_report_t *r)
{
    int best = -1;
    for (int i = 0; i < r->n_team; i++) {
        const bkm_prog_team_t *t = &r->team[i], *b = best >= 0 ? &r->team[best] : NULL;
        if (t->helper || (t->level != 1 && t->level != -1))
            continue;
        if (b == NULL) {
            best = i;
            continue;
        }
        int tm = t->primary == r->pid, bm = b->primary == r->pid, tl = t->size > 1, bl = b->size > 1;
        if (tl != bl ? tl > bl
            : tm != bm ? tm > bm
            : t->size != b->size ? t->size > b->size
            : t->n_found != b->n_found ? t->n_found > b->n_found
            : t->t_ns < b->t_ns)
            best = i;
    }
    r->main_team = best;
}

/* Team membership of every thread (one pass over the teams' members), then its class. */
static int classify(bkm_prog_report_t *r, bkm_err_t *err)
{
    const bkm_prog_team_t *main_team = r->main_team >= 0 ? &r->team[r->main_team] : NULL;
    enum { IN_APP = 1, IN_HELPER = 2 };
    unsigned char *member = bkm_calloc((size_t)r->n_th + 1, 1);
    if (member == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "report: out of memory for %d threads", r->n_th);
    for (int k = 0; k < r->n_team; k++) {
        const bkm_prog_team_t *team = &r->team[k];
        for (int j = 0; j < team->size; j++) {
            int i = team->tid[j] >= 0 ? thread_index(r, team->tid[j]) : -1;
            bkm_prog_thread_t *t;
            if (i < 0)
                continue;
            t = &r->th[i];
            if (team == main_team) {
                t->team_index = j;
                t->team_size = team->size;
                t->team_t_ns = team->joined_ns[j];
            }
            member[i] |= team->helper ? IN_HELPER : IN_APP;
        }
    }
    for (int i = 0; i < r->n_th; i++) {
        bkm_prog_thread_t *t = &r->th[i];
        if (t->team_index >= 0)
            t->cls = BKM_PROG_CLASS_TEAM;
        else if (member[i] & IN_APP)
            t->cls = BKM_PROG_CLASS_TEAM_OTHER;
        else if ((member[i] & IN_HELPER) || created_by_runtime(t) || t->ompt_type == BKM_PROG_OMPT_WORKER ||
                 t->ompt_type == BKM_PROG_OMPT_OTHER)
            t->cls = BKM_PROG_CLASS_OMP_HELPER;
        else if (t->is_main)
            t->cls = BKM_PROG_CLASS_MAIN;
        else if (!t->created)
            t->cls = BKM_PROG_CLASS_UNKNOWN;
        else if (is_python_object(t->lib))
            t->cls = BKM_PROG_CLASS_PYTHON;
        else if (is_torch_object(t->lib))
            t->cls = BKM_PROG_CLASS_TORCH;
        else
            t->cls = BKM_PROG_CLASS_OTHER;
    }
    bkm_free(member);
    return BKM_OK;
}

int bkm_prog_report_build(const bkm_prog_sampler_t *s, const bkm_prog_log_t *log, int pid, bkm_prog_report_t **out,
                          bkm_err_t *err)
{
    bkm_prog_report_t *r;
    int rc = BKM_OK;
    *out = NULL;
    if (pid < 1)
        return bkm_err_set(err, BKM_EINVAL, "report: pid %d is not a process id", pid);
    if ((r = bkm_calloc(1, sizeof *r)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
    r->pid = pid;
    r->s = s;
    r->main_team = -1;
    if (s != NULL) {
        r->t0_ns = s->t_open_ns;
        for (int i = 0; i < s->n; i++)
            if (thread_add(r, s->task[i].tid, &s->task[i]) == NULL) {
                rc = bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
                goto out;
            }
    }
    if (log != NULL) {
        int any_team = 0;
        r->log_given = 1;
        r->records = log->n;
        r->malformed = log->malformed;
        r->truncated = log->truncated;
        snprintf(r->first_bad, sizeof r->first_bad, "%s", log->first_bad);
        if ((rc = merge_log(r, log, err)) < 0)
            goto out;
        for (int i = 0; i < r->n_team; i++)
            any_team |= r->team[i].api != BKM_PROG_API_NONE;
        if (!any_team && (rc = infer_team(r, err)) < 0)
            goto out;
    }
    /* a level-1 team led by a thread the runtime created is the runtime's own (hidden helpers) */
    for (int i = 0; i < r->n_team; i++) {
        bkm_prog_team_t *team = &r->team[i];
        const bkm_prog_thread_t *p = thread_of(r, team->primary);
        team->helper = team->level <= 1 && team->api != BKM_PROG_API_ORDER && created_by_runtime(p);
    }
    pick_main_team(r);
    if ((rc = classify(r, err)) < 0)
        goto out;
    *out = r;
    return BKM_OK;
out:
    bkm_prog_report_free(r);
    return rc;
}

void bkm_prog_report_free(bkm_prog_report_t *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->n_team; i++) {
        bkm_free(r->team[i].tid);
        bkm_free(r->team[i].joined_ns);
    }
    bkm_free(r->team);
    bkm_free(r->th);
    bkm_free(r->slot);
    bkm_free(r->child);
    bkm_free(r);
}

int bkm_prog_report_n_threads(const bkm_prog_report_t *r)
{
    return r ? r->n_th : 0;
}

const bkm_prog_thread_t *bkm_prog_report_thread(const bkm_prog_report_t *r, int i)
{
    return r && i >= 0 && i < r->n_th ? &r->th[i] : NULL;
}

const bkm_prog_thread_t *bkm_prog_report_find(const bkm_prog_report_t *r, int tid)
{
    int i = r ? thread_index(r, tid) : -1;
    return i >= 0 ? &r->th[i] : NULL;
}

int bkm_prog_report_n_teams(const bkm_prog_report_t *r)
{
    return r ? r->n_team : 0;
}

const bkm_prog_team_t *bkm_prog_report_team(const bkm_prog_report_t *r, int i)
{
    return r && i >= 0 && i < r->n_team ? &r->team[i] : NULL;
}

const bkm_prog_team_t *bkm_prog_report_main_team(const bkm_prog_report_t *r)
{
    return r && r->main_team >= 0 ? &r->team[r->main_team] : NULL;
}

const char *bkm_prog_report_runtimes(const bkm_prog_report_t *r)
{
    return r ? r->runtimes : "";
}

/* ---------------------------------------------------------------------------------------- */
/* Check against a plan                                                                      */

static void all_masks(const bkm_prog_report_t *r, bkm_cpuset_t *u)
{
    bkm_cpuset_zero(u);
    for (int i = 0; i < r->n_th; i++) {
        const bkm_prog_task_t *t = r->th[i].task;
        for (int k = 0; t && k < t->n_masks; k++)
            bkm_cpuset_or(u, &t->mask[k].cpus);
    }
}

static const bkm_prog_team_t *team_for_plan(const bkm_prog_report_t *r, int n)
{
    const bkm_prog_team_t *m = bkm_prog_report_main_team(r), *best = NULL;
    if (m != NULL && m->size == n)
        return m;
    for (int i = 0; i < r->n_team; i++) {
        const bkm_prog_team_t *t = &r->team[i];
        if (t->size != n || t->helper || (t->level != 1 && t->level != -1))
            continue;
        if (best == NULL || (t->primary == r->pid && best->primary != r->pid))
            best = t;
    }
    return best;
}

static void fmt_set(const bkm_cpuset_t *c, char *out, size_t n)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(c, &b);
    snprintf(out, n, "%s", bkm_cpuset_is_empty(c) ? "none" : bkm_buf_str(&b));
    bkm_buf_free(&b);
}

int bkm_prog_report_check(const bkm_prog_report_t *r, const bkm_cpuset_t *planned, int n, const bkm_cpuset_t *allowed,
                          bkm_prog_check_t **out, bkm_err_t *err)
{
    bkm_prog_check_t *c;
    const bkm_prog_team_t *team;
    size_t used = 0;
    *out = NULL;
    if (r == NULL || planned == NULL || n < 1)
        return bkm_err_set(err, BKM_EINVAL, "check: %s", r == NULL ? "no report" : planned == NULL ? "no plan"
                                                                                  : "plan of fewer than 1 thread");
    for (int i = 0; i < n; i++)
        if (bkm_cpuset_is_empty(&planned[i]))
            return bkm_err_set(err, BKM_EINVAL, "check: the plan's set for team thread %d is empty", i);
    if ((c = bkm_calloc(1, sizeof *c)) == NULL || (c->member = bkm_calloc((size_t)n, sizeof *c->member)) == NULL) {
        bkm_free(c);
        return bkm_err_set(err, BKM_ENOMEM, "check: out of memory for %d threads", n);
    }
    c->team_size = n;
    if (allowed != NULL && !bkm_cpuset_is_empty(allowed))
        c->allowed = *allowed;
    else
        all_masks(r, &c->allowed);
    team = team_for_plan(r, n);
    c->initial_only = team == NULL && n == 1 && r->rt_seen_ns != 0 && bkm_prog_report_find(r, r->pid) != NULL;
    c->api = team ? team->api : BKM_PROG_API_NONE;
    c->primary = team ? team->primary : c->initial_only ? r->pid : -1;
    for (int i = 0; i < n; i++) {
        bkm_prog_check_member_t *m = &c->member[i];
        const bkm_prog_thread_t *t;
        m->index = i;
        m->planned = planned[i];
        m->tid = team ? team->tid[i] : c->initial_only ? r->pid : -1;
        if (m->tid < 0 || (t = bkm_prog_report_find(r, m->tid)) == NULL) {
            m->verdict = BKM_PROG_MISSING;
            c->n_missing++;
            continue;
        }
        uint64_t joined = team ? team->joined_ns[i] : r->rt_seen_ns;
        const bkm_prog_task_t *task = t->task;
        int mismatch = 0;
        for (int k = 0; task && k < task->n_masks; k++) {
            const bkm_prog_mask_t *mk = &task->mask[k];
            int dup = 0;
            if (mk->last_ns < joined)
                continue;   /* only seen before the thread joined the team */
            for (int j = 0; j < m->n_observed; j++)
                dup |= bkm_cpuset_equal(&m->observed[j], &mk->cpus);
            if (!dup)
                m->observed[m->n_observed++] = mk->cpus;
            mismatch |= !bkm_cpuset_equal(&mk->cpus, &planned[i]);
            m->unbound |= bkm_cpuset_equal(&mk->cpus, &c->allowed);
        }
        if (task && task->masks_lost > 0 && m->n_observed > 0)
            mismatch = 1;   /* it changed more often than kept: not a stable binding */
        m->verdict = m->n_observed == 0 ? BKM_PROG_UNSAMPLED : mismatch ? BKM_PROG_MISMATCH : BKM_PROG_MATCH;
        c->n_match += m->verdict == BKM_PROG_MATCH;
        c->n_mismatch += m->verdict == BKM_PROG_MISMATCH;
        c->n_unsampled += m->verdict == BKM_PROG_UNSAMPLED;
        c->n_unbound += m->unbound;
    }
    if (team == NULL && !c->initial_only)
        c->verdict = BKM_PROG_NO_TEAM;
    else if (c->n_mismatch > 0)
        c->verdict = BKM_PROG_MISMATCH;
    else if (c->n_match == n)
        c->verdict = BKM_PROG_MATCH;
    else
        c->verdict = c->n_missing > 0 ? BKM_PROG_MISSING : BKM_PROG_UNSAMPLED;
    /* one line for people */
    if (team == NULL && !c->initial_only) {
        snprintf(c->summary, sizeof c->summary, "no OpenMP team of %d threads ran (%d team shapes seen)", n,
                 r->n_team);
    } else if (c->initial_only && c->verdict == BKM_PROG_MATCH) {
        snprintf(c->summary, sizeof c->summary, "1 of 1 team threads bound as planned (the initial thread: a team "
                 "of one starts no thread)");
    } else if (c->verdict == BKM_PROG_MATCH) {
        snprintf(c->summary, sizeof c->summary, "%d of %d team threads bound as planned (%s, %s)", n, n, team->rt,
                 api_name(team->api));
    } else {
        used = (size_t)snprintf(c->summary, sizeof c->summary, "%d of %d team threads as planned", c->n_match, n);
        for (int i = 0; i < n && used < sizeof c->summary; i++) {
            const bkm_prog_check_member_t *m = &c->member[i];
            char p[64], o[64];
            if (m->verdict == BKM_PROG_MATCH)
                continue;
            fmt_set(&m->planned, p, sizeof p);
            if (m->verdict == BKM_PROG_MISMATCH) {
                const bkm_cpuset_t *bad = &m->observed[0];
                for (int j = 0; j < m->n_observed; j++)
                    if (!bkm_cpuset_equal(&m->observed[j], &m->planned)) {
                        bad = &m->observed[j];
                        break;
                    }
                fmt_set(bad, o, sizeof o);
                used += (size_t)snprintf(c->summary + used, sizeof c->summary - used, "; thread %d (tid %d) on %s, "
                                         "planned %s", i, m->tid, o, p);
            } else {
                used += (size_t)snprintf(c->summary + used, sizeof c->summary - used, "; thread %d %s", i,
                                         bkm_prog_verdict_name(m->verdict));
            }
        }
    }
    *out = c;
    return BKM_OK;
}

void bkm_prog_report_set_runtime_seen(bkm_prog_report_t *r, uint64_t t_ns)
{
    if (r != NULL)
        r->rt_seen_ns = t_ns;
}

void bkm_prog_check_free(bkm_prog_check_t *c)
{
    if (c == NULL)
        return;
    bkm_free(c->member);
    bkm_free(c);
}

/* ---------------------------------------------------------------------------------------- */
/* JSON                                                                                      */

static void json_set(bkm_json_w_t *w, const bkm_cpuset_t *c)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_cpuset_format(c, &b);
    bkm_json_str(w, bkm_buf_str(&b));
    bkm_buf_free(&b);
}

static double rel_s(const bkm_prog_report_t *r, uint64_t t_ns)
{
    return ((double)t_ns - (double)r->t0_ns) * 1e-9;
}

static void json_team(const bkm_prog_report_t *r, const bkm_prog_team_t *t, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "api"), bkm_json_str(w, api_name(t->api));
    bkm_json_key(w, "rt"), bkm_json_str(w, t->rt);
    bkm_json_key(w, "size"), bkm_json_int(w, t->size);
    bkm_json_key(w, "level"), bkm_json_int(w, t->level);
    bkm_json_key(w, "primary"), bkm_json_int(w, t->primary);
    bkm_json_key(w, "helper"), bkm_json_bool(w, t->helper);
    bkm_json_key(w, "complete"), bkm_json_bool(w, t->n_found == t->size);
    bkm_json_key(w, "conflicts"), bkm_json_int(w, t->conflicts);
    bkm_json_key(w, "members");
    bkm_json_arr_begin(w);
    for (int i = 0; i < t->size; i++) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "index"), bkm_json_int(w, i);
        bkm_json_key(w, "tid");
        if (t->tid[i] >= 0)
            bkm_json_int(w, t->tid[i]);
        else
            bkm_json_null(w);
        bkm_json_key(w, "joined_s");
        if (t->joined_ns[i] > 0)
            bkm_json_double(w, rel_s(r, t->joined_ns[i]));
        else
            bkm_json_null(w);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}

static const char *ompt_type_name(int type)
{
    switch (type) {
    case BKM_PROG_OMPT_INITIAL: return "initial";
    case BKM_PROG_OMPT_WORKER: return "worker";
    case BKM_PROG_OMPT_OTHER: return "other";
    case BKM_PROG_OMPT_UNKNOWN: return "unknown";
    default: return NULL;
    }
}

static void json_thread(const bkm_prog_report_t *r, const bkm_prog_thread_t *t, bkm_json_w_t *w)
{
    const bkm_prog_task_t *k = t->task;
    bkm_json_obj_begin(w);
    bkm_json_key(w, "tid"), bkm_json_int(w, t->tid);
    bkm_json_key(w, "comm"), bkm_json_str(w, k ? k->comm : NULL);
    bkm_json_key(w, "class"), bkm_json_str(w, bkm_prog_class_name(t->cls));
    bkm_json_key(w, "main"), bkm_json_bool(w, t->is_main);
    bkm_json_key(w, "team_index");
    if (t->team_index >= 0)
        bkm_json_int(w, t->team_index);
    else
        bkm_json_null(w);
    bkm_json_key(w, "team_size");
    if (t->team_size >= 0)
        bkm_json_int(w, t->team_size);
    else
        bkm_json_null(w);
    bkm_json_key(w, "teams"), bkm_json_int(w, t->n_teams);
    bkm_json_key(w, "created_by");
    if (t->created) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "tid"), bkm_json_int(w, t->creator);
        bkm_json_key(w, "seq"), bkm_json_int(w, t->seq);
        bkm_json_key(w, "via"), bkm_json_str(w, t->via);
        bkm_json_key(w, "lib"), bkm_json_str(w, t->lib);
        bkm_json_key(w, "lib_is_program"), bkm_json_bool(w, t->lib_is_exe);
        bkm_json_obj_end(w);
    } else {
        bkm_json_null(w);
    }
    bkm_json_key(w, "ompt_type"), bkm_json_str(w, ompt_type_name(t->ompt_type));
    bkm_json_key(w, "samples"), bkm_json_int(w, k ? k->samples : 0);
    if (k != NULL) {
        bkm_json_key(w, "first_s"), bkm_json_double(w, rel_s(r, k->first_ns));
        bkm_json_key(w, "last_s"), bkm_json_double(w, rel_s(r, k->last_ns));
        bkm_json_key(w, "masks");
        bkm_json_arr_begin(w);
        for (int i = 0; i < k->n_masks; i++) {
            bkm_json_obj_begin(w);
            bkm_json_key(w, "cpus"), json_set(w, &k->mask[i].cpus);
            bkm_json_key(w, "first_s"), bkm_json_double(w, rel_s(r, k->mask[i].t_ns));
            bkm_json_key(w, "last_s"), bkm_json_double(w, rel_s(r, k->mask[i].last_ns));
            bkm_json_obj_end(w);
        }
        bkm_json_arr_end(w);
        bkm_json_key(w, "masks_lost"), bkm_json_int(w, k->masks_lost);
        bkm_json_key(w, "cpus_ran"), json_set(w, &k->ran_on);
        bkm_json_key(w, "last_cpu"), bkm_json_int(w, k->last_cpu);
        if (k->why[0])
            bkm_json_key(w, "unreadable"), bkm_json_str(w, k->why);
    }
    bkm_json_obj_end(w);
}

static void json_check(const bkm_prog_check_t *c, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "verdict"), bkm_json_str(w, bkm_prog_verdict_name(c->verdict));
    bkm_json_key(w, "summary"), bkm_json_str(w, c->summary);
    bkm_json_key(w, "team_size"), bkm_json_int(w, c->team_size);
    bkm_json_key(w, "api"), bkm_json_str(w, api_name(c->api));
    bkm_json_key(w, "initial_only"), bkm_json_bool(w, c->initial_only);
    bkm_json_key(w, "primary");
    if (c->primary >= 0)
        bkm_json_int(w, c->primary);
    else
        bkm_json_null(w);
    bkm_json_key(w, "allowed"), json_set(w, &c->allowed);
    bkm_json_key(w, "match"), bkm_json_int(w, c->n_match);
    bkm_json_key(w, "mismatch"), bkm_json_int(w, c->n_mismatch);
    bkm_json_key(w, "unsampled"), bkm_json_int(w, c->n_unsampled);
    bkm_json_key(w, "missing"), bkm_json_int(w, c->n_missing);
    bkm_json_key(w, "unbound"), bkm_json_int(w, c->n_unbound);
    bkm_json_key(w, "members");
    bkm_json_arr_begin(w);
    for (int i = 0; i < c->team_size; i++) {
        const bkm_prog_check_member_t *m = &c->member[i];
        bkm_json_obj_begin(w);
        bkm_json_key(w, "index"), bkm_json_int(w, m->index);
        bkm_json_key(w, "tid");
        if (m->tid >= 0)
            bkm_json_int(w, m->tid);
        else
            bkm_json_null(w);
        bkm_json_key(w, "verdict"), bkm_json_str(w, bkm_prog_verdict_name(m->verdict));
        bkm_json_key(w, "planned"), json_set(w, &m->planned);
        bkm_json_key(w, "observed");
        bkm_json_arr_begin(w);
        for (int j = 0; j < m->n_observed; j++)
            json_set(w, &m->observed[j]);
        bkm_json_arr_end(w);
        bkm_json_key(w, "unbound"), bkm_json_bool(w, m->unbound);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}

void bkm_prog_report_binding_json(const bkm_prog_report_t *r, const bkm_prog_check_t *check, bkm_json_w_t *w)
{
    const bkm_prog_sampler_t *s = r->s;
    const bkm_prog_team_t *m = bkm_prog_report_main_team(r);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "pid"), bkm_json_int(w, r->pid);
    bkm_json_key(w, "sampler");
    if (s != NULL) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "source"), bkm_json_str(w, s->live ? "/proc/PID/task/TID/{stat,schedstat,status,sched,comm}, "
                                                             "masks by sched_getaffinity(2)"
                                                           : "/proc/PID/task/TID/{stat,schedstat,status,sched,comm}, "
                                                             "masks from status (Cpus_allowed_list)");
        bkm_json_key(w, "interval_ms"), bkm_json_int(w, (int64_t)(s->interval_ns / 1000000u));
        bkm_json_key(w, "samples"), bkm_json_int(w, s->samples);
        bkm_json_key(w, "pass_us"), bkm_json_double(w, (double)bkm_prog_sampler_pass_ns(s) * 1e-3);
        bkm_json_key(w, "threads_lost"), bkm_json_int(w, s->tasks_lost);
        bkm_json_obj_end(w);
    } else {
        bkm_json_null(w);
    }
    bkm_json_key(w, "shim");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "log"), bkm_json_bool(w, r->log_given);
    bkm_json_key(w, "started"), bkm_json_bool(w, r->started);
    bkm_json_key(w, "prog"), bkm_json_str(w, r->prog[0] ? r->prog : NULL);
    bkm_json_key(w, "records"), bkm_json_int(w, (int64_t)r->records);
    bkm_json_key(w, "malformed"), bkm_json_int(w, (int64_t)r->malformed);
    if (r->malformed > 0)
        bkm_json_key(w, "first_malformed"), bkm_json_str(w, r->first_bad);
    bkm_json_key(w, "truncated"), bkm_json_bool(w, r->truncated);
    bkm_json_key(w, "lost_shapes"), bkm_json_int(w, r->lost_shapes);
    bkm_json_key(w, "threads_lost"), bkm_json_int(w, r->threads_lost);
    bkm_json_key(w, "teams_lost"), bkm_json_int(w, r->teams_lost);
    bkm_json_key(w, "ompt");
    if (r->ompt_tool) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "runtime"), bkm_json_str(w, r->ompt_runtime);
        bkm_json_key(w, "omp_version"), bkm_json_int(w, r->ompt_version);
        bkm_json_obj_end(w);
    } else {
        bkm_json_null(w);
    }
    bkm_json_key(w, "other_processes");
    bkm_json_arr_begin(w);
    for (int i = 0; i < r->n_child; i++)
        bkm_json_int(w, r->child[i]);
    bkm_json_arr_end(w);
    bkm_json_key(w, "other_processes_lost"), bkm_json_bool(w, r->children_lost);
    bkm_json_obj_end(w);
    bkm_json_key(w, "runtimes");
    bkm_json_arr_begin(w);
    for (const char *p = r->runtimes; *p;) {
        const char *e = strchr(p, ';');
        char name[BKM_PROG_NAME_MAX];
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        bkm_json_str(w, name);
        p += n + (e ? 1 : 0);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "main_team");
    if (m != NULL)
        json_team(r, m, w);
    else
        bkm_json_null(w);
    bkm_json_key(w, "teams");
    bkm_json_arr_begin(w);
    for (int i = 0; i < r->n_team; i++)
        json_team(r, &r->team[i], w);
    bkm_json_arr_end(w);
    bkm_json_key(w, "threads");
    bkm_json_arr_begin(w);
    for (int i = 0; i < r->n_th; i++)
        json_thread(r, &r->th[i], w);
    bkm_json_arr_end(w);
    if (check != NULL) {
        bkm_json_key(w, "check");
        json_check(check, w);
    }
    bkm_json_obj_end(w);
}

/* ---------------------------------------------------------------------------------------- */
/* Noise                                                                                     */

typedef struct noise_sum {
    int threads;
    int have[4];            /* threads with stat, status, schedstat, sched deltas */
    double cpu_s, run_s, wait_s;
    long long minflt, majflt, vol, invol, slices, migrations;
} noise_sum_t;

static double task_wall_s(const bkm_prog_task_t *k)
{
    return k->last.t_ns > k->first.t_ns ? (double)(k->last.t_ns - k->first.t_ns) * 1e-9 : 0.0;
}

static void noise_add(noise_sum_t *n, const bkm_prog_task_t *k, long tps)
{
    const bkm_prog_counters_t *a = &k->first, *b = &k->last;
    n->threads++;
    if (a->stat_ok && b->stat_ok) {
        n->have[0]++;
        n->cpu_s += (double)((b->utime + b->stime) - (a->utime + a->stime)) / (double)tps;
        n->minflt += (long long)(b->minflt - a->minflt);
        n->majflt += (long long)(b->majflt - a->majflt);
    }
    if (a->status_ok && b->status_ok) {
        n->have[1]++;
        n->vol += (long long)(b->vol_switches - a->vol_switches);
        n->invol += (long long)(b->invol_switches - a->invol_switches);
    }
    if (a->schedstat_ok && b->schedstat_ok) {
        n->have[2]++;
        n->run_s += (double)(b->run_ns - a->run_ns) * 1e-9;
        n->wait_s += (double)(b->wait_ns - a->wait_ns) * 1e-9;
        n->slices += (long long)(b->slices - a->slices);
    }
    if (a->sched_ok && b->sched_ok) {
        n->have[3]++;
        n->migrations += b->migrations - a->migrations;
    }
}

static void json_total(bkm_json_w_t *w, const char *key, int have, int threads, double v, int is_int)
{
    bkm_json_key(w, key);
    if (have < threads || threads == 0)
        bkm_json_null(w);
    else if (is_int)
        bkm_json_int(w, (int64_t)v);
    else
        bkm_json_double(w, v);
}

static void json_sum(bkm_json_w_t *w, const noise_sum_t *n)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "threads"), bkm_json_int(w, n->threads);
    json_total(w, "cpu_s", n->have[0], n->threads, n->cpu_s, 0);
    json_total(w, "minor_faults", n->have[0], n->threads, (double)n->minflt, 1);
    json_total(w, "major_faults", n->have[0], n->threads, (double)n->majflt, 1);
    json_total(w, "voluntary_switches", n->have[1], n->threads, (double)n->vol, 1);
    json_total(w, "involuntary_switches", n->have[1], n->threads, (double)n->invol, 1);
    json_total(w, "run_s", n->have[2], n->threads, n->run_s, 0);
    json_total(w, "wait_s", n->have[2], n->threads, n->wait_s, 0);
    json_total(w, "timeslices", n->have[2], n->threads, (double)n->slices, 1);
    json_total(w, "migrations", n->have[3], n->threads, (double)n->migrations, 1);
    bkm_json_obj_end(w);
}

/* Steal over the run on the CPUs any thread may run on: NaN with @p why when not measured. */
static double steal_share(const bkm_prog_report_t *r, long long *steal, long long *total, bkm_cpuset_t *cpus,
                          const char **why)
{
    const bkm_prog_sampler_t *s = r->s;
    uint64_t st = 0, tot = 0;
    all_masks(r, cpus);
    *steal = *total = 0;
    *why = NULL;
    if (s == NULL || !s->finished) {
        *why = "the run was not finished (bkm_prog_sampler_finish): no end reading of /proc/stat";
        return NAN;
    }
    if (!s->stat_a.ok || !s->stat_b.ok) {
        *why = !s->stat_a.ok ? s->stat_a.why : s->stat_b.why;
        return NAN;
    }
    for (int c = bkm_cpuset_first(cpus); c >= 0; c = bkm_cpuset_next(cpus, c)) {
        if (!bkm_cpuset_isset(&s->stat_a.present, c) || !bkm_cpuset_isset(&s->stat_b.present, c)) {
            *why = "a CPU the threads may run on has no line in /proc/stat";
            return NAN;
        }
        st += s->stat_b.steal[c] - s->stat_a.steal[c];
        tot += s->stat_b.total[c] - s->stat_a.total[c];
    }
    *steal = (long long)st, *total = (long long)tot;
    return tot > 0 ? (double)st / (double)tot : 0.0;
}

/* The worst wait share among the team's threads (all threads when there is no team). */
static double wait_share(const bkm_prog_report_t *r, int *worst_tid)
{
    double worst = NAN;
    int team = bkm_prog_report_main_team(r) != NULL;
    *worst_tid = -1;
    for (int i = 0; i < r->n_th; i++) {
        const bkm_prog_thread_t *t = &r->th[i];
        const bkm_prog_task_t *k = t->task;
        double wall, ws;
        if (k == NULL || (team && t->cls != BKM_PROG_CLASS_TEAM) || !k->first.schedstat_ok || !k->last.schedstat_ok)
            continue;
        wall = task_wall_s(k);
        if (!(wall > 0))
            continue;
        ws = (double)(k->last.wait_ns - k->first.wait_ns) * 1e-9 / wall;
        if (isnan(worst) || ws > worst)
            worst = ws, *worst_tid = t->tid;
    }
    return worst;
}

double bkm_prog_report_noise_share(const bkm_prog_report_t *r)
{
    long long st, tot;
    bkm_cpuset_t cpus;
    const char *why;
    int worst;
    double ws, ss;
    if (r == NULL)
        return NAN;
    ws = wait_share(r, &worst);
    ss = steal_share(r, &st, &tot, &cpus, &why);
    if (isnan(ws) && isnan(ss))
        return NAN;
    return (isnan(ws) ? 0.0 : ws) + (isnan(ss) ? 0.0 : ss);
}

int bkm_prog_report_disturbed(const bkm_prog_report_t *r, double share_threshold)
{
    double share = bkm_prog_report_noise_share(r);
    if (share_threshold <= 0)
        share_threshold = BKM_PROG_NOISE_SHARE_DEFAULT;
    return isnan(share) ? -1 : share > share_threshold;
}

static void json_unavailable(bkm_json_w_t *w, const char *why)
{
    bkm_json_key(w, "unavailable");
    bkm_json_str(w, why);
}

static void json_noise_thread(const bkm_prog_report_t *r, const bkm_prog_thread_t *t, long tps, bkm_json_w_t *w)
{
    const bkm_prog_task_t *k = t->task;
    const bkm_prog_counters_t *a = &k->first, *b = &k->last;
    const char *why = k->why[0] ? k->why : "not read at the thread's first and last sample";
    double wall = task_wall_s(k);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "tid"), bkm_json_int(w, t->tid);
    bkm_json_key(w, "class"), bkm_json_str(w, bkm_prog_class_name(t->cls));
    bkm_json_key(w, "team_index");
    if (t->team_index >= 0)
        bkm_json_int(w, t->team_index);
    else
        bkm_json_null(w);
    bkm_json_key(w, "from_start"), bkm_json_bool(w, k->born_sampled);
    bkm_json_key(w, "first_s"), bkm_json_double(w, rel_s(r, a->t_ns));
    bkm_json_key(w, "last_s"), bkm_json_double(w, rel_s(r, b->t_ns));
    bkm_json_key(w, "wall_s"), bkm_json_double(w, wall);
    bkm_json_key(w, "proc-task-stat");
    bkm_json_obj_begin(w);
    if (a->stat_ok && b->stat_ok) {
        double cpu = (double)((b->utime + b->stime) - (a->utime + a->stime)) / (double)tps;
        bkm_json_key(w, "cpu_s"), bkm_json_double(w, cpu);
        bkm_json_key(w, "cpu_per_wall"), bkm_json_double(w, wall > 0 ? cpu / wall : NAN);
        bkm_json_key(w, "minor_faults"), bkm_json_int(w, (int64_t)(b->minflt - a->minflt));
        bkm_json_key(w, "major_faults"), bkm_json_int(w, (int64_t)(b->majflt - a->majflt));
    } else {
        json_unavailable(w, why);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-status");
    bkm_json_obj_begin(w);
    if (a->status_ok && b->status_ok) {
        bkm_json_key(w, "until_s"), bkm_json_double(w, rel_s(r, b->heavy_t_ns));
        bkm_json_key(w, "voluntary_switches"), bkm_json_int(w, (int64_t)(b->vol_switches - a->vol_switches));
        bkm_json_key(w, "involuntary_switches"), bkm_json_int(w, (int64_t)(b->invol_switches - a->invol_switches));
    } else {
        json_unavailable(w, why);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-schedstat");
    bkm_json_obj_begin(w);
    if (a->schedstat_ok && b->schedstat_ok) {
        double ws = (double)(b->wait_ns - a->wait_ns) * 1e-9;
        bkm_json_key(w, "run_s"), bkm_json_double(w, (double)(b->run_ns - a->run_ns) * 1e-9);
        bkm_json_key(w, "wait_s"), bkm_json_double(w, ws);
        bkm_json_key(w, "timeslices"), bkm_json_int(w, (int64_t)(b->slices - a->slices));
        bkm_json_key(w, "wait_share"), bkm_json_double(w, wall > 0 ? ws / wall : NAN);
    } else {
        json_unavailable(w, why);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-sched");
    bkm_json_obj_begin(w);
    if (a->sched_ok && b->sched_ok) {
        bkm_json_key(w, "until_s"), bkm_json_double(w, rel_s(r, b->heavy_t_ns));
        bkm_json_key(w, "migrations"), bkm_json_int(w, b->migrations - a->migrations);
    } else
        json_unavailable(w, why);
    bkm_json_obj_end(w);
    bkm_json_obj_end(w);
}

void bkm_prog_report_noise_json(const bkm_prog_report_t *r, double share_threshold, bkm_json_w_t *w)
{
    const bkm_prog_sampler_t *s = r->s;
    noise_sum_t team = {0}, all = {0};
    long long st, tot;
    bkm_cpuset_t cpus;
    const char *why;
    int worst, disturbed;
    double ws, ss, share;
    long tps = s ? s->ticks_per_s : 100;
    bkm_json_obj_begin(w);
    if (s == NULL || s->samples == 0) {
        json_unavailable(w, "the program's threads were not sampled");
        bkm_json_obj_end(w);
        return;
    }
    if (share_threshold <= 0)
        share_threshold = BKM_PROG_NOISE_SHARE_DEFAULT;
    ws = wait_share(r, &worst);
    ss = steal_share(r, &st, &tot, &cpus, &why);
    share = bkm_prog_report_noise_share(r);
    disturbed = bkm_prog_report_disturbed(r, share_threshold);
    bkm_json_key(w, "source");
    bkm_json_str(w, "parent: /proc/PID/task/TID/{stat,schedstat} every sample, {status,sched} every heavy_every-th "
                    "(until_s), /proc/stat at the start and the end; per thread from its first sample (its start when "
                    "born while sampled) to its last");
    bkm_json_key(w, "interval_ms"), bkm_json_int(w, (int64_t)(s->interval_ns / 1000000u));
    bkm_json_key(w, "heavy_every"), bkm_json_int(w, s->heavy_every);
    bkm_json_key(w, "samples"), bkm_json_int(w, s->samples);
    bkm_json_key(w, "disturbed");
    if (disturbed < 0)
        bkm_json_null(w);
    else
        bkm_json_bool(w, disturbed);
    bkm_json_key(w, "share"), bkm_json_double(w, share);
    bkm_json_key(w, "threshold"), bkm_json_double(w, share_threshold);
    bkm_json_key(w, "share_kind");
    bkm_json_str(w, "run-queue wait of the worst team thread / its sampled wall time (proc-schedstat) + steal ticks / "
                    "all ticks of the CPUs the threads may run on (proc-stat), over the run");
    bkm_json_key(w, "wait_share"), bkm_json_double(w, ws);
    bkm_json_key(w, "worst_tid");
    if (worst >= 0)
        bkm_json_int(w, worst);
    else
        bkm_json_null(w);
    bkm_json_key(w, "steal_share"), bkm_json_double(w, ss);
    for (int i = 0; i < r->n_th; i++) {
        const bkm_prog_thread_t *t = &r->th[i];
        if (t->task == NULL)
            continue;
        noise_add(&all, t->task, tps);
        if (t->cls == BKM_PROG_CLASS_TEAM)
            noise_add(&team, t->task, tps);
    }
    bkm_json_key(w, "totals");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "team"), json_sum(w, &team);
    bkm_json_key(w, "all"), json_sum(w, &all);
    bkm_json_obj_end(w);
    bkm_json_key(w, "proc-stat");
    bkm_json_obj_begin(w);
    if (isnan(ss)) {
        json_unavailable(w, why);
    } else {
        bkm_json_key(w, "cpus"), json_set(w, &cpus);
        bkm_json_key(w, "steal_ticks"), bkm_json_int(w, st);
        bkm_json_key(w, "total_ticks"), bkm_json_int(w, tot);
        bkm_json_key(w, "ticks_per_s"), bkm_json_int(w, tps);
        bkm_json_key(w, "steal_share"), bkm_json_double(w, ss);
    }
    bkm_json_obj_end(w);
    bkm_json_key(w, "threads");
    bkm_json_arr_begin(w);
    for (int i = 0; i < r->n_th; i++)
        if (r->th[i].task != NULL)
            json_noise_thread(r, &r->th[i], tps, w);
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
}
