/* SPDX-License-Identifier: MIT */
/* Search space: dimensions from the node profile, the topology and the workload's parameters,
 * narrowed by the user; affinity settings planned at every thread count so that rejected ones
 * are dropped and identical plans are measured once; the default configuration first. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"
#include "bkm/workloads.h"

#define SPACE_MAX_CONFIGS 200000
#define MAX_NOTES 256

typedef struct aff_setting {
    char label[192];
    char kmp[128], places[64], bind[32], gomp[128];
} aff_setting_t;

typedef struct param_dim {   /* key and values within the one key=value limit (bkm_kv_t) */
    char key[BKM_KV_KEY_MAX];
    int n;
    char value[BKM_TUNE_SPACE_MAX_VALUES][BKM_KV_VALUE_MAX];
    char def[BKM_KV_VALUE_MAX]; /* the workload's default text for this key */
    int n_grid;            /* values [0, n_grid) form the grid; the rest are extras (default) */
    int default_index;
} param_dim_t;

/* A cause of dropped or merged settings; pub.text is "<count> dropped: <head>[ with <threads>
 * threads]<tail>", rendered once the space is built. */
typedef struct cause {
    bkm_tune_space_cause_t pub;
    char *head, *tail;
    int threads[BKM_TUNE_SPACE_MAX_THREADS + 1];
    int n_threads;
} cause_t;

/* Merged-settings note under construction: "A = B at t1,t2 threads". */
typedef struct merge_note {
    int a, b, h_a, h_b;
    char threads[96];
} merge_note_t;

struct bkm_tune_space {
    bkm_tune_config_t *cfg;
    size_t n, cap;
    int dim_size[BKM_TUNE_MAX_DIMS];
    int n_dims;
    char **notes;
    size_t n_notes, cap_notes;
    cause_t *causes;
    size_t n_causes, cap_causes;
    size_t merged, dropped;
    bkm_buf_t json;        /* canonical space description */
};

/* ---------------------------------------------------------------------------------------- */

static int add_note(bkm_tune_space_t *sp, const char *fmt, ...) BKM_PRINTF(2, 3);
static int add_note(bkm_tune_space_t *sp, const char *fmt, ...)
{
    bkm_buf_t b;
    va_list ap;
    char *s;
    if (sp->n_notes == sp->cap_notes) {
        size_t cap = sp->cap_notes ? 2 * sp->cap_notes : 64;
        char **p = bkm_realloc(sp->notes, cap * sizeof *p);
        if (p == NULL)
            return BKM_ENOMEM;
        sp->notes = p, sp->cap_notes = cap;
    }
    bkm_buf_init(&b);
    va_start(ap, fmt);
    bkm_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    s = bkm_buf_take(&b);
    if (s == NULL)
        return BKM_ENOMEM;
    sp->notes[sp->n_notes++] = s;
    return BKM_OK;
}

/* Count one dropped (@p merged 0) or merged setting under its cause, "<head>[ with <threads>
 * threads]<tail>"; @p threads < 1 keeps the thread count out of the cause. Equal causes are one. */
static int cause_add(bkm_tune_space_t *sp, int merged, int threads, const char *head, const char *tail)
{
    cause_t *c = NULL;
    int k;
    if (merged)
        sp->merged++;
    else
        sp->dropped++;
    if (tail == NULL)
        tail = "";
    for (size_t i = 0; i < sp->n_causes && c == NULL; i++)
        if (sp->causes[i].pub.merged == merged && strcmp(sp->causes[i].head, head) == 0 &&
            strcmp(sp->causes[i].tail, tail) == 0)
            c = &sp->causes[i];
    if (c == NULL) {
        if (sp->n_causes == sp->cap_causes) {
            size_t cap = sp->cap_causes ? 2 * sp->cap_causes : 16;
            cause_t *p = bkm_realloc(sp->causes, cap * sizeof *p);
            if (p == NULL)
                return BKM_ENOMEM;
            sp->causes = p, sp->cap_causes = cap;
        }
        c = &sp->causes[sp->n_causes];
        memset(c, 0, sizeof *c);
        c->head = bkm_strdup(head);
        c->tail = bkm_strdup(tail);
        sp->n_causes++;
        if (c->head == NULL || c->tail == NULL)
            return BKM_ENOMEM;
        c->pub.merged = merged;
    }
    c->pub.count++;
    for (k = 0; threads > 0 && k < c->n_threads && c->threads[k] < threads; k++)
        ;
    if (threads > 0 && (k == c->n_threads || c->threads[k] != threads) &&
        c->n_threads < (int)(sizeof c->threads / sizeof c->threads[0])) {
        memmove(&c->threads[k + 1], &c->threads[k], (size_t)(c->n_threads - k) * sizeof c->threads[0]);
        c->threads[k] = threads;
        c->n_threads++;
    }
    return BKM_OK;
}

/* Render every cause's text, the most frequent first (ties in order of appearance). */
static int causes_finish(bkm_tune_space_t *sp)
{
    for (size_t i = 1; i < sp->n_causes; i++)
        for (size_t j = i; j > 0 && sp->causes[j].pub.count > sp->causes[j - 1].pub.count; j--) {
            cause_t t = sp->causes[j];
            sp->causes[j] = sp->causes[j - 1];
            sp->causes[j - 1] = t;
        }
    for (size_t i = 0; i < sp->n_causes; i++) {
        cause_t *c = &sp->causes[i];
        bkm_buf_t b;
        bkm_buf_init(&b);
        bkm_buf_printf(&b, "%zu %s: %s", c->pub.count, c->pub.merged ? "merged" : "dropped", c->head);
        for (int k = 0; k < c->n_threads; k++)
            bkm_buf_printf(&b, "%s%d", k ? "/" : " with ", c->threads[k]);
        if (c->n_threads > 0)
            bkm_buf_printf(&b, " thread%s", c->n_threads == 1 && c->threads[0] == 1 ? "" : "s");
        bkm_buf_puts(&b, c->tail);
        bkm_free((char *)c->pub.text);
        if ((c->pub.text = bkm_buf_take(&b)) == NULL)
            return BKM_ENOMEM;
    }
    return BKM_OK;
}

/* Length of NAME when @p w starts with "NAME=" and NAME is written as an environment variable
 * (capitals, digits, '_'), else 0. */
static size_t var_name_len(const char *w)
{
    size_t n = 0;
    while ((w[n] >= 'A' && w[n] <= 'Z') || w[n] == '_' || (n > 0 && w[n] >= '0' && w[n] <= '9'))
        n++;
    return n > 0 && w[n] == '=' ? n : 0;
}

/* An --affinity value: "default", a KMP_AFFINITY value, or "VAR=value VAR=value ..." for
 * KMP_AFFINITY, OMP_PLACES and OMP_PROC_BIND. A variable starts at a word "NAME="; the words
 * after it up to the next such word are its value, spaces included, so that the affinity
 * parsers judge "OMP_PLACES={0:2}, {2:2}" (valid: libomp skips blanks) or
 * "OMP_PROC_BIND=close spread" (invalid: names "spread") as one value. */
static int setting_parse(const char *text, aff_setting_t *a, int gomp, bkm_err_t *err)
{
    bkm_aff_env_t env;
    bkm_aff_setting_t st;
    memset(a, 0, sizeof *a);
    if (text == NULL || text[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "--affinity: empty setting (use 'default' for no variable)");
    if (strlen(text) >= sizeof a->label)
        return bkm_err_set(err, BKM_EINVAL, "--affinity '%.60s...' is longer than %zu characters", text,
                           sizeof a->label - 1);
    snprintf(a->label, sizeof a->label, "%s", text);
    if (strcmp(text, "default") == 0)
        return BKM_OK;
    if (strncmp(text, "KMP_AFFINITY=", 13) == 0 || strncmp(text, "OMP_PLACES=", 11) == 0 ||
        strncmp(text, "OMP_PROC_BIND=", 14) == 0 || (gomp && strncmp(text, "GOMP_CPU_AFFINITY=", 18) == 0)) {
        const char *p = text;
        while (*p) {
            size_t nl = var_name_len(p);
            const char *val = p + nl + 1, *q = val, *end;
            char name[32];
            char *dst;
            size_t cap;
            /* the words up to the next "NAME=" are this variable's value, spaces included */
            for (;;) {
                while (*q && *q != ' ')
                    q++;
                end = q;
                while (*q == ' ')
                    q++;
                if (*q == '\0' || var_name_len(q) > 0)
                    break;
            }
            snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), p);
            if (strcmp(name, "KMP_AFFINITY") == 0)
                dst = a->kmp, cap = sizeof a->kmp;
            else if (strcmp(name, "OMP_PLACES") == 0)
                dst = a->places, cap = sizeof a->places;
            else if (strcmp(name, "OMP_PROC_BIND") == 0)
                dst = a->bind, cap = sizeof a->bind;
            else if (gomp && strcmp(name, "GOMP_CPU_AFFINITY") == 0)
                dst = a->gomp, cap = sizeof a->gomp;
            else
                return bkm_err_set(err, BKM_EINVAL, "--affinity '%s': variable '%s' is not KMP_AFFINITY, "
                                   "OMP_PLACES%s or OMP_PROC_BIND", text, name, gomp ? ", GOMP_CPU_AFFINITY" : "");
            if (dst[0] != '\0')
                return bkm_err_set(err, BKM_EINVAL, "--affinity '%s': %s is given twice", text, name);
            if (end == val || *val == ' ' || (size_t)(end - val) >= cap)
                return bkm_err_set(err, BKM_EINVAL, "--affinity '%s': %s needs a value (at most %zu "
                                   "characters)", text, name, cap - 1);
            snprintf(dst, cap, "%.*s", (int)(end - val), val);
            p = q;
        }
    } else {
        if (strlen(text) >= sizeof a->kmp)
            return bkm_err_set(err, BKM_EINVAL, "--affinity '%.60s...' is too long", text);
        snprintf(a->kmp, sizeof a->kmp, "%s", text);
    }
    if (gomp) {   /* libgomp's own strict check; KMP_AFFINITY is dropped by the caller */
        bkm_aff_gomp_env_t genv = {0};
        genv.omp_places = a->places[0] ? a->places : NULL;
        genv.omp_proc_bind = a->bind[0] ? a->bind : NULL;
        genv.gomp_cpu_affinity = a->gomp[0] ? a->gomp : NULL;
        if (bkm_aff_gomp_env_check(&genv, err) < 0)
            return bkm_err_prefix(err, "--affinity '%s'", text);
        return BKM_OK;
    }
    memset(&env, 0, sizeof env);
    env.kmp_affinity = a->kmp[0] ? a->kmp : NULL;
    env.omp_places = a->places[0] ? a->places : NULL;
    env.omp_proc_bind = a->bind[0] ? a->bind : NULL;
    if (bkm_aff_setting_resolve(&env, &st, err) < 0)
        return bkm_err_prefix(err, "--affinity '%s'", text);
    return BKM_OK;
}

static int setting_is_default(const aff_setting_t *a)
{
    return a->kmp[0] == '\0' && a->places[0] == '\0' && a->bind[0] == '\0' && a->gomp[0] == '\0';
}

/* On a chiplet machine (more L3 caches or NUMA nodes than packages: Perlmutter's EPYC 7763
 * has 16 L3 and 8 NUMA nodes on 2 sockets), OMP_PLACES=ll_caches and numa_domains with close and
 * spread (libomp 14 without hwloc makes them the sockets and the cores: the plans merge them), and
 * the explicit place lists of the L3 groups and NUMA nodes, which do place by them. */
static int settings_chiplet(aff_setting_t *out, int n, int cap, const bkm_topo_t *topo)
{
    static const char *const binds[] = {"close", "spread"};
    bkm_topo_summary_t ts;
    char kinds[4][64] = {"ll_caches", "numa_domains", "", ""};
    int n_kinds = 2, n_c = 0, level = 0;
    const bkm_topo_cache_t *c = bkm_topo_caches(topo, &n_c);
    bkm_topo_summary(topo, &ts);
    for (int i = 0; i < n_c; i++)
        if (c[i].type != 'i' && c[i].level > level)
            level = c[i].level;
    /* an L2 shared by a KNL tile is not a chiplet: tiles have granularity=tile */
    if ((level < 3 || bkm_topo_groups(topo, BKM_TOPO_GROUP_LLC, NULL, 0) <= ts.packages) &&
        bkm_topo_groups(topo, BKM_TOPO_GROUP_NUMA, NULL, 0) <= ts.packages)
        return n;
    for (int k = 0; k < 2; k++) {
        bkm_buf_t b;
        bkm_buf_init(&b);
        if (bkm_topo_group_places(topo, k == 0 ? BKM_TOPO_GROUP_LLC : BKM_TOPO_GROUP_NUMA, &b, NULL) == BKM_OK &&
            b.len < sizeof kinds[0] && b.len < sizeof out[0].places)
            snprintf(kinds[n_kinds++], sizeof kinds[0], "%s", bkm_buf_str(&b));
        bkm_buf_free(&b);
    }
    for (int p = 0; p < n_kinds; p++)
        for (int b = 0; b < 2 && n < cap - 1; b++) {
            snprintf(out[n].places, sizeof out[0].places, "%s", kinds[p]);
            snprintf(out[n].bind, sizeof out[0].bind, "%s", binds[b]);
            snprintf(out[n].label, sizeof out[0].label, "OMP_PLACES=%s OMP_PROC_BIND=%s", kinds[p], binds[b]);
            n++;
        }
    return n;
}

/* The generated affinity settings, "default" first; granularity=tile only where cores are
 * grouped in tiles (KNL); the chiplet places where last-level caches or NUMA nodes subdivide the
 * packages. */
static int settings_generate(aff_setting_t *out, int cap, int tiles, const bkm_topo_t *topo)
{
    static const char *const types[] = {"compact", "scatter", "balanced"};
    static const char *const grans[] = {"fine", "core", "tile"};
    static const char *const places[] = {"threads", "cores"};
    static const char *const binds[] = {"close", "spread"};
    int n = 0;
    memset(out, 0, (size_t)cap * sizeof *out);
    snprintf(out[n++].label, sizeof out[0].label, "default");
    snprintf(out[n].label, sizeof out[0].label, "none");
    snprintf(out[n++].kmp, sizeof out[0].kmp, "none");
    for (int t = 0; t < 3; t++)
        for (int g = 0; g < (tiles ? 3 : 2); g++)
            for (int p = 0; p < 2 && n < cap - 4; p++) {
                if (p == 0)
                    snprintf(out[n].kmp, sizeof out[0].kmp, "granularity=%s,%s", grans[g], types[t]);
                else
                    snprintf(out[n].kmp, sizeof out[0].kmp, "granularity=%s,%s,1,0", grans[g], types[t]);
                snprintf(out[n].label, sizeof out[0].label, "%s", out[n].kmp);
                n++;
            }
    for (int p = 0; p < 2; p++)
        for (int b = 0; b < 2; b++) {
            snprintf(out[n].places, sizeof out[0].places, "%s", places[p]);
            snprintf(out[n].bind, sizeof out[0].bind, "%s", binds[b]);
            snprintf(out[n].label, sizeof out[0].label, "OMP_PLACES=%s OMP_PROC_BIND=%s", places[p], binds[b]);
            n++;
        }
    return settings_chiplet(out, n, cap, topo);
}

/* The generated settings of a libgomp program, "default" first: every abstract place kind libgomp
 * 12 knows with close and spread, then binding with its default places (OMP_PROC_BIND=true). */
static int settings_generate_gomp(aff_setting_t *out, int cap)
{
    static const char *const places[] = {"threads", "cores", "sockets", "ll_caches", "numa_domains"};
    static const char *const binds[] = {"close", "spread"};
    int n = 0;
    memset(out, 0, (size_t)cap * sizeof *out);
    snprintf(out[n++].label, sizeof out[0].label, "default");
    for (size_t p = 0; p < sizeof places / sizeof places[0]; p++)
        for (size_t b = 0; b < sizeof binds / sizeof binds[0] && n < cap - 1; b++) {
            snprintf(out[n].places, sizeof out[0].places, "%s", places[p]);
            snprintf(out[n].bind, sizeof out[0].bind, "%s", binds[b]);
            snprintf(out[n].label, sizeof out[0].label, "OMP_PLACES=%s OMP_PROC_BIND=%s", places[p], binds[b]);
            n++;
        }
    snprintf(out[n].bind, sizeof out[0].bind, "true");   /* last: an equal named setting represents it */
    snprintf(out[n].label, sizeof out[0].label, "OMP_PROC_BIND=true");
    n++;
    return n;
}

/* Round v down to a multiple of m within [lo, hi]; -1 when none. */
static long long round_mult(long long v, long long m, long long lo, long long hi)
{
    if (m < 1)
        m = 1;
    if (v > hi)
        v = hi;
    v = (v / m) * m;
    if (v < lo) {
        v = ((lo + m - 1) / m) * m;
        if (v > hi)
            return -1;
    }
    return v;
}

static int pdim_add(param_dim_t *d, const char *v)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->value[i], v) == 0)
            return i;
    if (d->n >= BKM_TUNE_SPACE_MAX_VALUES)
        return -1;
    snprintf(d->value[d->n], sizeof d->value[0], "%s", v);
    return d->n++;
}

/* Check key=value against the workload (with the backend, if any). */
static int check_value(const char *workload, const char *backend, const char *key, const char *value,
                       bkm_err_t *err)
{
    bkm_wl_config_t c;
    char kv[128];
    bkm_wl_config_init(&c);
    if (backend && backend[0] && strcmp(key, "backend") != 0) {
        snprintf(kv, sizeof kv, "backend=%s", backend);
        if (bkm_wl_config_add(&c, kv, err) < 0)
            return BKM_EINVAL;
    }
    snprintf(kv, sizeof kv, "%s=%s", key, value);
    if (bkm_wl_config_add(&c, kv, err) < 0)
        return BKM_EINVAL;
    return bkm_wl_config_check(workload, &c, err);
}

/* Start parameter dimension dims[n] from --param @p kv ("key=v1,v2"): its key, checked (form,
 * length, at most @p max dimensions, not twice, not the backend). */
static int pdim_begin(param_dim_t *dims, int n, int max, const char *kv, bkm_err_t *err)
{
    const char *eq = strchr(kv, '=');
    param_dim_t *d = &dims[n < max ? n : 0];
    if (eq == NULL || eq == kv)
        return bkm_err_set(err, BKM_EINVAL, "--param '%s' is not key=v1,v2,...", kv);
    if ((size_t)(eq - kv) >= sizeof d->key)
        return bkm_err_set(err, BKM_EINVAL, "--param '%.60s...': the key is longer than %d characters", kv,
                           BKM_KV_KEY_MAX - 1);
    if (n >= max)
        return bkm_err_set(err, BKM_EINVAL, "--param '%s': more than %d parameters", kv, max);
    memset(d, 0, sizeof *d);
    memcpy(d->key, kv, (size_t)(eq - kv));
    for (int k = 0; k < n; k++)
        if (strcmp(dims[k].key, d->key) == 0)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s': parameter '%s' is given twice", kv, d->key);
    if (strcmp(d->key, "backend") == 0)
        return bkm_err_set(err, BKM_EINVAL, "--param '%s': use --backend to choose the backend", kv);
    return BKM_OK;
}

static int params_build(const bkm_tune_space_opts_t *o, param_dim_t *dims, int *n_dims, bkm_tune_space_t *sp,
                        bkm_err_t *err)
{
    bkm_wl_param_t wp[BKM_WL_MAX_PARAMS];
    size_t n_wp = 0;
    int rc, isa_given = 0;
    *n_dims = 0;
    if (o->program)   /* the user's program has no bkm parameters */
        return BKM_OK;
    for (int i = 0; i < o->n_params; i++)
        isa_given |= strncmp(o->params[i], "isa=", 4) == 0;
    if ((rc = bkm_wl_params(o->workload, wp, &n_wp, err)) < 0)
        return rc;
    for (int i = 0; i < o->n_params; i++) {
        const char *kv = o->params[i], *eq = strchr(kv, '=');
        param_dim_t *d = &dims[*n_dims];
        char vals[BKM_TUNE_SPACE_MAX_VALUES * BKM_KV_VALUE_MAX], *save = NULL, *tok;
        size_t j;
        if ((rc = pdim_begin(dims, *n_dims, BKM_TUNE_SPACE_MAX_PARAMS, kv, err)) < 0)
            return rc;
        for (j = 0; j < n_wp; j++)
            if (strcmp(wp[j].name, d->key) == 0)
                break;
        if (j == n_wp)
            return check_value(o->workload, o->backend, d->key, eq + 1, err) < 0
                       ? BKM_EINVAL
                       : bkm_err_set(err, BKM_EINVAL, "--param '%s': unknown parameter '%s'", kv, d->key);
        snprintf(d->def, sizeof d->def, "%s", wp[j].def);
        if (strlen(eq + 1) >= sizeof vals)
            return bkm_err_set(err, BKM_EINVAL, "--param '%.60s...' is too long", kv);
        snprintf(vals, sizeof vals, "%s", eq + 1);
        /* conv2d shapes contain no commas; every parameter value list is comma separated */
        for (tok = strtok_r(vals, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (strlen(tok) >= sizeof d->value[0])
                return bkm_err_set(err, BKM_EINVAL, "--param %s: value '%.60s...' is longer than %d characters",
                                   d->key, tok, BKM_KV_VALUE_MAX - 1);
            /* an integer tunable refused on its own may be right for another --param isa: the
             * combinations decide (params_validate refuses values no combination can run) */
            if ((rc = check_value(o->workload, o->backend, d->key, tok, err)) < 0 &&
                !(wp[j].kernel_tunable && wp[j].type == BKM_WL_INT && isa_given))
                return bkm_err_prefix(err, "--param %s", d->key);
            if (pdim_add(d, tok) < 0)
                return bkm_err_set(err, BKM_EINVAL, "--param %s: more than %d values", d->key,
                                   BKM_TUNE_SPACE_MAX_VALUES);
        }
        if (d->n == 0)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s': no value", kv);
        d->n_grid = d->n;
        d->default_index = 0;
        if (wp[j].kernel_tunable) {
            int k = pdim_add(d, d->def);   /* the default tunable value is always in the space */
            d->default_index = k < 0 ? 0 : k;
        }
        (*n_dims)++;
    }
    if (!o->sweep_tunables || (o->backend && strcmp(o->backend, "onednn") == 0))
        return BKM_OK;
    for (size_t j = 0; j < n_wp; j++) {
        param_dim_t *d;
        long long def, cand[3];
        int named = 0;
        if (!wp[j].kernel_tunable || wp[j].type != BKM_WL_INT)
            continue;
        for (int k = 0; k < *n_dims; k++)
            named |= strcmp(dims[k].key, wp[j].name) == 0;
        if (named || *n_dims >= BKM_TUNE_SPACE_MAX_PARAMS)
            continue;
        if (bkm_parse_int(wp[j].def, LLONG_MIN, LLONG_MAX, &def) < 0)
            continue;
        d = &dims[*n_dims];
        memset(d, 0, sizeof *d);
        snprintf(d->key, sizeof d->key, "%s", wp[j].name);
        snprintf(d->def, sizeof d->def, "%s", wp[j].def);
        pdim_add(d, wp[j].def);
        cand[0] = def / 2, cand[1] = def * 2, cand[2] = -1;
        for (int c = 0; c < 2; c++) {
            long long v = round_mult(cand[c], wp[j].mult_of, wp[j].min, wp[j].max);
            char txt[40];
            bkm_err_t e2 = {0};
            if (v < 0 || v == def)
                continue;
            snprintf(txt, sizeof txt, "%lld", v);
            if (check_value(o->workload, o->backend, d->key, txt, &e2) < 0) {
                if ((rc = cause_add(sp, 0, 0, e2.msg, NULL)) < 0 ||
                    (rc = add_note(sp, "dropped %s=%s: %s", d->key, txt, e2.msg)) < 0)
                    return bkm_err_set(err, rc, "search space: out of memory");
                continue;
            }
            pdim_add(d, txt);
        }
        d->n_grid = d->n;
        d->default_index = 0;
        if (d->n > 1)
            (*n_dims)++;
    }
    return BKM_OK;
}

static const char *bt_text(int bt, char *buf, size_t n)
{
    if (bt == BKM_TUNE_BLOCKTIME_UNSET)
        snprintf(buf, n, "default");
    else if (bt == BKM_TUNE_BLOCKTIME_INFINITE)
        snprintf(buf, n, "infinite");
    else
        snprintf(buf, n, "%d", bt);
    return buf;
}

static void topo_words(const bkm_topo_t *topo, char *buf, size_t n)
{
    bkm_topo_summary_t s;
    bkm_topo_summary(topo, &s);
    snprintf(buf, n, "%d package%s, %d cores, %d thread%s/core", s.packages, s.packages == 1 ? "" : "s", s.cores,
             s.pus_per_core_max, s.pus_per_core_max == 1 ? "" : "s");
}

static int space_push(bkm_tune_space_t *sp, const bkm_tune_config_t *c, bkm_err_t *err)
{
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 64;
        bkm_tune_config_t *p;
        if (sp->n >= SPACE_MAX_CONFIGS)
            return bkm_err_set(err, BKM_EINVAL, "the search space has more than %d configurations: narrow it "
                               "with --threads, --affinity, --blocktime, --hw-subset or --param",
                               SPACE_MAX_CONFIGS);
        p = bkm_realloc(sp->cfg, cap * sizeof *p);
        if (p == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        sp->cfg = p, sp->cap = cap;
    }
    sp->cfg[sp->n++] = *c;
    return BKM_OK;
}

/* In a libgomp space the wait dimension (the blocktime slot) holds OMP_WAIT_POLICY: unset
 * (BKM_TUNE_BLOCKTIME_UNSET), active or passive. */
#define BKM__WAIT_ACTIVE (-100)
#define BKM__WAIT_PASSIVE (-101)

/* Fill the setting fields of a configuration from its coordinates. */
static void config_fill(bkm_tune_config_t *c, const int *threads, const aff_setting_t *aff, const int *bt,
                        const char hw[][32], const param_dim_t *pd, int n_pd, const char *backend)
{
    const aff_setting_t *a = &aff[c->coord[BKM_TUNE_DIM_AFFINITY]];
    c->threads = threads[c->coord[BKM_TUNE_DIM_THREADS]];
    snprintf(c->affinity, sizeof c->affinity, "%s", a->label);
    snprintf(c->kmp_affinity, sizeof c->kmp_affinity, "%s", a->kmp);
    snprintf(c->omp_places, sizeof c->omp_places, "%s", a->places);
    snprintf(c->omp_proc_bind, sizeof c->omp_proc_bind, "%s", a->bind);
    snprintf(c->kmp_hw_subset, sizeof c->kmp_hw_subset, "%s", hw[c->coord[BKM_TUNE_DIM_HW_SUBSET]]);
    snprintf(c->gomp_cpu_affinity, sizeof c->gomp_cpu_affinity, "%s", a->gomp);
    c->blocktime_ms = bt[c->coord[BKM_TUNE_DIM_BLOCKTIME]];
    c->omp_wait_policy[0] = '\0';
    if (c->blocktime_ms == BKM__WAIT_ACTIVE || c->blocktime_ms == BKM__WAIT_PASSIVE) {   /* a libgomp space */
        snprintf(c->omp_wait_policy, sizeof c->omp_wait_policy, "%s",
                 c->blocktime_ms == BKM__WAIT_ACTIVE ? "active" : "passive");
        c->blocktime_ms = BKM_TUNE_BLOCKTIME_UNSET;
    }
    snprintf(c->backend, sizeof c->backend, "%s", backend ? backend : "");
    c->n_params = 0;
    for (int k = 0; k < n_pd; k++) {
        const char *v = pd[k].value[c->coord[BKM_TUNE_DIM_PARAM0 + k]];
        if (strcmp(v, pd[k].def) == 0)
            continue;   /* a default value is not written: same setting, same key */
        snprintf(c->params[c->n_params].key, sizeof c->params[0].key, "%s", pd[k].key);
        snprintf(c->params[c->n_params].value, sizeof c->params[0].value, "%s", v);
        c->n_params++;
    }
}

/* The dimensions while the space is built. Index 0 of affinity, blocktime and hw_subset is
 * "nothing set"; a value whose grid flag is 0 is there only for the default configuration. */
typedef struct dims {
    int threads[BKM_TUNE_SPACE_MAX_THREADS + 1], n_thr, n_thr_grid, thr_def;
    aff_setting_t aff[BKM_TUNE_SPACE_MAX_AFFINITY + 1];
    unsigned char aff_grid[BKM_TUNE_SPACE_MAX_AFFINITY + 1];
    int n_aff;
    int aff_user;           /* the settings are the user's (--affinity), not generated */
    int bt[BKM_TUNE_SPACE_MAX_BLOCKTIME + 1], n_bt;
    unsigned char bt_grid[BKM_TUNE_SPACE_MAX_BLOCKTIME + 1];
    char hw[BKM_TUNE_SPACE_MAX_HW_SUBSET + 1][32];
    unsigned char hw_grid[BKM_TUNE_SPACE_MAX_HW_SUBSET + 1];
    int n_hw;
    param_dim_t pd[BKM_TUNE_SPACE_MAX_PARAMS];
    int n_pd;
    size_t n_pcomb;
    int *rep;               /* [thread][hw][aff]: index hw*n_aff+aff of the kept pair, -1 = dropped */
    unsigned char *eq_def;  /* [thread][hw][aff]: same plan as the default setting */
    unsigned char *pvalid;  /* [parameter combination]: the workload accepts it */
    char words[128];        /* "1 package, 2 cores, 1 thread/core" */
    bkm_aff_plan_opts_t popts;  /* planner options of the target node (KNL: libomp's mic defaults) */
} dims_t;

/* threads: the user's or the profile's; the default (one per core) is always present */
static int dims_threads(dims_t *d, const bkm_tune_space_opts_t *o, const bkm_node_profile_t *prof, int n_pus,
                        int cores, bkm_err_t *err)
{
    int n = o->n_threads ? o->n_threads : prof->n_threads, k;
    for (int i = 0; i < n; i++) {
        int t = o->n_threads ? o->threads[i] : prof->threads[i], dup = 0;
        if (t < 1 || t > n_pus)
            return bkm_err_set(err, BKM_EINVAL, "--threads %d is beyond node '%s' (1..%d PUs: %s)", t, prof->name,
                               n_pus, d->words);
        for (k = 0; k < d->n_thr; k++)
            dup |= d->threads[k] == t;
        if (!dup && d->n_thr < BKM_TUNE_SPACE_MAX_THREADS)
            d->threads[d->n_thr++] = t;
    }
    d->n_thr_grid = d->n_thr;
    for (k = 0; k < d->n_thr && d->threads[k] != cores; k++)
        ;
    if (k == d->n_thr)
        d->threads[d->n_thr++] = cores;
    d->thr_def = k;
    return BKM_OK;
}

/* affinity settings: "default" first; in the grid unless the user's list omits it */
static int dims_affinity(dims_t *d, const bkm_tune_space_opts_t *o, int tiles, const bkm_topo_t *topo,
                         bkm_tune_space_t *sp, bkm_err_t *err)
{
    int rc;
    if (o->no_openmp) {   /* no runtime reads an affinity variable: the default only */
        snprintf(d->aff[0].label, sizeof d->aff[0].label, "default");
        d->aff_grid[0] = 1;
        d->n_aff = 1;
        if (o->n_affinity > 0 && (rc = add_note(sp, "--affinity: the program loads no OpenMP runtime, so no affinity "
                                                "variable acts: not swept")) < 0)
            return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        return BKM_OK;
    }
    if (o->n_affinity == 0) {
        d->n_aff = o->gomp ? settings_generate_gomp(d->aff, BKM_TUNE_SPACE_MAX_AFFINITY)
                           : settings_generate(d->aff, BKM_TUNE_SPACE_MAX_AFFINITY, tiles, topo);
        memset(d->aff_grid, 1, (size_t)d->n_aff);
        return BKM_OK;
    }
    snprintf(d->aff[0].label, sizeof d->aff[0].label, "default");
    d->n_aff = 1;
    d->aff_user = 1;
    for (int i = 0; i < o->n_affinity && i < BKM_TUNE_SPACE_MAX_AFFINITY; i++) {
        aff_setting_t a;
        int dup = 0;
        if ((rc = setting_parse(o->affinity[i], &a, o->gomp, err)) < 0)
            return rc;
        if (o->gomp && a.kmp[0]) {   /* GNU libgomp reads no KMP_* variable: never swept */
            const char *why = "KMP_AFFINITY is ignored by GNU libgomp, which the program loads (its placement "
                              "variables are OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY): not swept";
            if ((rc = add_note(sp, "--affinity '%s': %s", a.label, why)) < 0 || (rc = cause_add(sp, 0, 0, why, NULL)) < 0)
                return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
            continue;
        }
        if (setting_is_default(&a)) {
            d->aff_grid[0] = 1;
            continue;
        }
        for (int k = 1; k < d->n_aff; k++)
            dup |= strcmp(d->aff[k].label, a.label) == 0;
        if (!dup) {
            d->aff[d->n_aff] = a;
            d->aff_grid[d->n_aff++] = 1;
        }
    }
    return BKM_OK;
}

/* blocktime: unset first; 200 ms is the runtime's default, so it is unset */
static int dims_blocktime(dims_t *d, const bkm_tune_space_opts_t *o, const bkm_node_profile_t *prof,
                          bkm_tune_space_t *sp)
{
    int n = o->n_blocktime ? o->n_blocktime : prof->n_blocktime, rc;
    if (o->no_openmp) {
        d->bt[0] = BKM_TUNE_BLOCKTIME_UNSET;
        d->bt_grid[0] = 1;
        d->n_bt = 1;
        return BKM_OK;
    }
    if (o->gomp) {   /* libgomp: OMP_WAIT_POLICY is its counterpart; KMP_BLOCKTIME does nothing */
        if (o->n_blocktime > 0) {
            const char *why = "KMP_BLOCKTIME is ignored by GNU libgomp, which the program loads (its wait "
                              "variables are OMP_WAIT_POLICY/GOMP_SPINCOUNT): --blocktime not swept";
            if ((rc = add_note(sp, "%s", why)) < 0 || (rc = cause_add(sp, 0, 0, why, NULL)) < 0)
                return rc;
        }
        d->bt[0] = BKM_TUNE_BLOCKTIME_UNSET, d->bt[1] = BKM__WAIT_ACTIVE, d->bt[2] = BKM__WAIT_PASSIVE;
        memset(d->bt_grid, 1, 3);
        d->n_bt = 3;
        return BKM_OK;
    }
    d->bt_grid[0] = o->n_blocktime == 0;
    d->bt[d->n_bt++] = BKM_TUNE_BLOCKTIME_UNSET;
    for (int i = 0; i < n; i++) {
        int v = o->n_blocktime ? o->blocktime_ms[i] : prof->blocktime_ms[i], dup = 0;
        if (v == INT_MAX || v == -1)
            v = BKM_TUNE_BLOCKTIME_INFINITE;
        if (v == 200) {
            const char *why = "KMP_BLOCKTIME=200 \u2261 default (the runtime's default is 200 ms): measured once";
            if ((rc = add_note(sp, "%s", why)) < 0 || (rc = cause_add(sp, 1, 0, why, NULL)) < 0)
                return rc;
            v = BKM_TUNE_BLOCKTIME_UNSET;
        }
        for (int k = 0; k < d->n_bt; k++)
            if (d->bt[k] == v)
                dup = 1, d->bt_grid[k] = 1;
        if (!dup && d->n_bt <= BKM_TUNE_SPACE_MAX_BLOCKTIME) {
            d->bt_grid[d->n_bt] = 1;
            d->bt[d->n_bt++] = v;
        }
    }
    return BKM_OK;
}

/* KMP_HW_SUBSET: unset first; generated: 1..smt-1 threads of every core (per package) */
static int dims_hw_subset(dims_t *d, const bkm_tune_space_opts_t *o, const bkm_topo_summary_t *ts,
                          bkm_tune_space_t *sp, bkm_err_t *err)
{
    d->hw_grid[0] = o->n_hw_subset == 0 || o->gomp || o->no_openmp;
    d->hw[d->n_hw++][0] = '\0';
    if (o->no_openmp)
        return BKM_OK;
    if (o->gomp) {   /* libgomp has no KMP_HW_SUBSET */
        const char *why = "KMP_HW_SUBSET is ignored by GNU libgomp, which the program loads: --hw-subset not swept";
        if (o->n_hw_subset > 0 && (add_note(sp, "%s", why) < 0 || cause_add(sp, 0, 0, why, NULL) < 0))
            return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        return BKM_OK;
    }
    for (int i = 0; i < o->n_hw_subset && d->n_hw <= BKM_TUNE_SPACE_MAX_HW_SUBSET; i++) {
        bkm_aff_hw_subset_t hs;
        const char *v = o->hw_subset[i];
        if (strcmp(v, "none") == 0) {
            d->hw_grid[0] = 1;
            continue;
        }
        if (strlen(v) >= sizeof d->hw[0])
            return bkm_err_set(err, BKM_EINVAL, "--hw-subset '%s' is too long", v);
        if (bkm_aff_hw_subset_parse(v, &hs, err) < 0)
            return bkm_err_prefix(err, "--hw-subset '%s'", v);
        d->hw_grid[d->n_hw] = 1;
        snprintf(d->hw[d->n_hw++], sizeof d->hw[0], "%s", v);
    }
    for (int t = 1; o->n_hw_subset == 0 && t < ts->pus_per_core_max && d->n_hw <= BKM_TUNE_SPACE_MAX_HW_SUBSET;
         t++) {
        d->hw_grid[d->n_hw] = 1;
        if (ts->packages > 1)
            snprintf(d->hw[d->n_hw++], sizeof d->hw[0], "%ds,%dc,%dt", ts->packages, ts->cores / ts->packages, t);
        else
            snprintf(d->hw[d->n_hw++], sizeof d->hw[0], "%dc,%dt", ts->cores, t);
    }
    return BKM_OK;
}

/* Record "setting a = setting b at t threads" in the merge notes (one note per pair). */
static void merge_record(merge_note_t *mn, int *n_mn, int a, int ha, int b, int hb, int threads)
{
    int m;
    size_t l;
    for (m = 0; m < *n_mn; m++)
        if (mn[m].a == a && mn[m].h_a == ha && mn[m].b == b && mn[m].h_b == hb)
            break;
    if (m == *n_mn) {
        if (*n_mn >= MAX_NOTES)
            return;
        mn[m].a = a, mn[m].h_a = ha, mn[m].b = b, mn[m].h_b = hb;
        mn[m].threads[0] = '\0';
        (*n_mn)++;
    }
    l = strlen(mn[m].threads);
    snprintf(mn[m].threads + l, sizeof mn[m].threads - l, "%s%d", l ? "," : "", threads);
}

/* The error for user setting @p ai that no (thread count, KMP_HW_SUBSET) pair could plan: the
 * planner's reason at the first thread count without KMP_HW_SUBSET. */
static int never_planned(const dims_t *d, int ai, const bkm_topo_t *topo, bkm_err_t *err)
{
    const aff_setting_t *a = &d->aff[ai];
    bkm_aff_env_t env;
    bkm_aff_plan_t *plan = NULL;
    bkm_err_t e2 = {0};
    memset(&env, 0, sizeof env);
    env.kmp_affinity = a->kmp[0] ? a->kmp : NULL;
    env.omp_places = a->places[0] ? a->places : NULL;
    env.omp_proc_bind = a->bind[0] ? a->bind : NULL;
    if (bkm_aff_plan_create_ex(topo, &env, d->threads[0], &d->popts, &plan, &e2) < 0)
        return bkm_err_set(err, BKM_EINVAL, "--affinity '%s' cannot be planned at any thread count on this node "
                           "(%s): %s", a->label, d->words, e2.msg);
    bkm_aff_plan_free(plan);
    return bkm_err_set(err, BKM_EINVAL, "--affinity '%s' cannot be planned with any --threads/--hw-subset value "
                       "on this node (%s)", a->label, d->words);
}

/* Plan every (hw subset, affinity) pair at every thread count: drop what the planner rejects or
 * what oversubscribes the PUs KMP_HW_SUBSET leaves; merge pairs with identical plans into the
 * first such pair of the grid. */
static int plans_dedup(dims_t *d, const bkm_topo_t *topo, bkm_tune_space_t *sp, bkm_err_t *err)
{
    int n_pairs = d->n_hw * d->n_aff, n_mn = 0, rc = BKM_OK;
    merge_note_t *mn = bkm_calloc(MAX_NOTES, sizeof *mn);
    bkm_aff_plan_t **plans = bkm_calloc((size_t)n_pairs, sizeof *plans);
    d->rep = bkm_malloc((size_t)d->n_thr * (size_t)n_pairs * sizeof *d->rep);
    d->eq_def = bkm_calloc((size_t)d->n_thr * (size_t)n_pairs, 1);
    if (mn == NULL || plans == NULL || d->rep == NULL || d->eq_def == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        goto out;
    }
    for (int ti = 0; ti < d->n_thr; ti++) {
        int t = d->threads[ti];
        for (int idx = 0; idx < n_pairs; idx++) {
            int hi = idx / d->n_aff, ai = idx % d->n_aff, *r = &d->rep[ti * n_pairs + idx], allowed;
            const aff_setting_t *a = &d->aff[ai];
            bkm_aff_env_t env;
            bkm_err_t e2 = {0};
            memset(&env, 0, sizeof env);
            env.kmp_affinity = a->kmp[0] ? a->kmp : NULL;
            env.omp_places = a->places[0] ? a->places : NULL;
            env.omp_proc_bind = a->bind[0] ? a->bind : NULL;
            env.kmp_hw_subset = d->hw[hi][0] ? d->hw[hi] : NULL;
            *r = -1;
            if (bkm_aff_plan_create_ex(topo, &env, t, &d->popts, &plans[idx], &e2) < 0) {
                char head[256], tail[300];
                snprintf(head, sizeof head, "%s%s%s%s", a->kmp[0] ? "KMP_AFFINITY=" : "", a->label,
                         d->hw[hi][0] ? " KMP_HW_SUBSET=" : "", d->hw[hi]);
                snprintf(tail, sizeof tail, ": %s", e2.msg);
                if ((rc = cause_add(sp, 0, t, head, tail)) < 0 ||
                    (rc = add_note(sp, "dropped %s%s%s at %d threads: %s", a->label,
                                   d->hw[hi][0] ? " KMP_HW_SUBSET=" : "", d->hw[hi], t, e2.msg)) < 0)
                    goto oom;
                continue;
            }
            allowed = bkm_cpuset_count(bkm_aff_plan_allowed(plans[idx]));
            if (allowed < t) {
                char head[64], tail[64];
                bkm_aff_plan_free(plans[idx]);
                plans[idx] = NULL;
                snprintf(head, sizeof head, "KMP_HW_SUBSET=%s", d->hw[hi]);
                snprintf(tail, sizeof tail, " oversubscribes its %d PUs", allowed);
                if ((rc = cause_add(sp, 0, t, head, tail)) < 0 ||
                    (rc = add_note(sp, "dropped %s KMP_HW_SUBSET=%s at %d threads: only %d PUs allowed "
                                   "(oversubscribed)", a->label, d->hw[hi], t, allowed)) < 0)
                    goto oom;
                continue;
            }
            d->eq_def[ti * n_pairs + idx] = idx == 0 || bkm_aff_plan_equal(plans[0], plans[idx]);
            *r = idx;
            for (int k = 0; k < idx && *r == idx; k++)
                if (plans[k] && d->aff_grid[k % d->n_aff] && d->hw_grid[k / d->n_aff] &&
                    bkm_aff_plan_equal(plans[k], plans[idx]))
                    *r = k;
            if (*r != idx) {
                char head[256];
                snprintf(head, sizeof head, "settings that place every thread as an earlier setting does on this "
                         "topology (%s): measured once", d->words);
                if ((rc = cause_add(sp, 1, 0, head, NULL)) < 0)
                    goto oom;
                merge_record(mn, &n_mn, ai, hi, *r % d->n_aff, *r / d->n_aff, t);
            }
        }
        for (int k = 0; k < n_pairs; k++) {
            bkm_aff_plan_free(plans[k]);
            plans[k] = NULL;
        }
    }
    /* A setting the user asked for that the planner rejects at every thread count can never be
     * measured: bad input, named with the planner's reason, not a silent drop. */
    for (int ai = 1; d->aff_user && ai < d->n_aff; ai++) {
        int ever = 0;
        for (int i = 0; i < d->n_thr * n_pairs && !ever; i++)
            ever = d->rep[i] >= 0 && (i % n_pairs) % d->n_aff == ai;
        if (!ever) {
            rc = never_planned(d, ai, topo, err);
            goto out;
        }
    }
    for (int m = 0; m < n_mn; m++) {
        const aff_setting_t *a = &d->aff[mn[m].a], *b = &d->aff[mn[m].b];
        const char *ha = d->hw[mn[m].h_a], *hb = d->hw[mn[m].h_b];
        if ((rc = add_note(sp, "%s%s%s%s \u2261 %s%s%s at %s thread%s on this topology (%s): measured once",
                           a->kmp[0] ? "KMP_AFFINITY=" : "", a->label, ha[0] ? " KMP_HW_SUBSET=" : "", ha, b->label,
                           hb[0] ? " KMP_HW_SUBSET=" : "", hb, mn[m].threads,
                           strcmp(mn[m].threads, "1") == 0 ? "" : "s", d->words)) < 0)
            goto oom;
    }
    rc = BKM_OK;
    goto out;
oom:
    rc = bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
out:
    for (int k = 0; plans != NULL && k < n_pairs; k++)
        bkm_aff_plan_free(plans[k]);
    bkm_free(plans);
    bkm_free(mn);
    return rc;
}

/* The libgomp plan of setting @p a at @p t threads on @p topo (NULL with the planner's reason in
 * @p e when libgomp would not run it: a fatal setting). */
static bkm_aff_gomp_plan_t *gomp_plan(const aff_setting_t *a, int t, const bkm_topo_t *topo, bkm_err_t *e)
{
    bkm_aff_gomp_env_t env = {0};
    bkm_aff_gomp_opts_t opts = {0};
    bkm_aff_gomp_plan_t *plan = NULL;
    char nt[16];
    snprintf(nt, sizeof nt, "%d", t);
    env.omp_places = a->places[0] ? a->places : NULL;
    env.omp_proc_bind = a->bind[0] ? a->bind : NULL;
    env.gomp_cpu_affinity = a->gomp[0] ? a->gomp : NULL;
    env.omp_num_threads = nt;
    opts.strict = 1;
    if (bkm_aff_gomp_plan_create(topo, &env, &opts, &plan, e) < 0)
        return NULL;
    if (bkm_aff_gomp_plan_fatal(plan) != NULL) {
        bkm_err_set(e, BKM_EINVAL, "%s", bkm_aff_gomp_plan_fatal(plan));
        bkm_aff_gomp_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* plans_dedup for a libgomp program: drop what libgomp would refuse, merge settings whose plans
 * (places, policies, every thread's CPUs, the constructor's pin) are equal. */
static int plans_dedup_gomp(dims_t *d, const bkm_topo_t *topo, bkm_tune_space_t *sp, bkm_err_t *err)
{
    int n_pairs = d->n_hw * d->n_aff, rc = BKM_OK;
    bkm_aff_gomp_plan_t **plans = bkm_calloc((size_t)n_pairs, sizeof *plans);
    d->rep = bkm_malloc((size_t)d->n_thr * (size_t)n_pairs * sizeof *d->rep);
    d->eq_def = bkm_calloc((size_t)d->n_thr * (size_t)n_pairs, 1);
    if (plans == NULL || d->rep == NULL || d->eq_def == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        goto out;
    }
    for (int ti = 0; ti < d->n_thr; ti++) {
        int t = d->threads[ti];
        for (int ai = 0; ai < n_pairs; ai++) {   /* one hw value (unset): pairs are settings */
            int *r = &d->rep[ti * n_pairs + ai];
            bkm_err_t e2 = {0};
            *r = -1;
            if ((plans[ai] = gomp_plan(&d->aff[ai], t, topo, &e2)) == NULL) {
                char tail[300];
                snprintf(tail, sizeof tail, ": %s", e2.msg);
                if ((rc = cause_add(sp, 0, t, d->aff[ai].label, tail)) < 0 ||
                    (rc = add_note(sp, "dropped %s at %d threads: %s", d->aff[ai].label, t, e2.msg)) < 0)
                    goto out;
                continue;
            }
            d->eq_def[ti * n_pairs + ai] = ai == 0 || (plans[0] && bkm_aff_gomp_plan_equal(plans[0], plans[ai]));
            *r = ai;
            for (int k = 0; k < ai && *r == ai; k++)
                if (plans[k] && d->aff_grid[k] && bkm_aff_gomp_plan_equal(plans[k], plans[ai]))
                    *r = k;
            if (*r != ai) {
                char head[256];
                snprintf(head, sizeof head, "settings that libgomp 12 places exactly as an earlier setting on this "
                         "topology (%s): measured once", d->words);
                if ((rc = cause_add(sp, 1, 0, head, NULL)) < 0 ||
                    (rc = add_note(sp, "%s \u2261 %s at %d thread%s (libgomp 12 on %s): measured once",
                                   d->aff[ai].label, d->aff[*r].label, t, t == 1 ? "" : "s", d->words)) < 0)
                    goto out;
            }
        }
        for (int k = 0; k < n_pairs; k++) {
            bkm_aff_gomp_plan_free(plans[k]);
            plans[k] = NULL;
        }
    }
out:
    for (int k = 0; plans != NULL && k < n_pairs; k++)
        bkm_aff_gomp_plan_free(plans[k]);
    bkm_free(plans);
    if (rc < 0 && rc != BKM_ENOMEM && err && err->msg[0] == '\0')
        bkm_err_set(err, rc, "search space: out of memory");
    return rc;
}

/* Parameter combination @p pc as coordinates (value index per parameter dimension). */
static void pcomb_coords(const dims_t *d, size_t pc, int *v)
{
    for (int k = 0; k < d->n_pd; k++) {
        v[k] = (int)(pc % (size_t)d->pd[k].n);
        pc /= (size_t)d->pd[k].n;
    }
}

/* Check parameter combination @p v with the workload, for a run on @p threads (0 = any). */
static int pcomb_check(const dims_t *d, const bkm_tune_space_opts_t *o, const int *v, int threads, bkm_err_t *err)
{
    bkm_wl_config_t wc;
    char kv[128];
    if (o->program)
        return BKM_OK;
    bkm_wl_config_init(&wc);
    if (o->backend && o->backend[0]) {
        snprintf(kv, sizeof kv, "backend=%s", o->backend);
        bkm_wl_config_add(&wc, kv, NULL);
    }
    for (int k = 0; k < d->n_pd; k++) {
        snprintf(kv, sizeof kv, "%s=%s", d->pd[k].key, d->pd[k].value[v[k]]);
        bkm_wl_config_add(&wc, kv, NULL);
    }
    return bkm_wl_config_check_threads(o->workload, &wc, threads, err);
}

/* Which parameter combinations the workload, and the kernels under it, accept together at each
 * thread count (the rules bkm_wl_config_check_threads applies in the worker's pre-check). A
 * refused combination of the grid is dropped with a note; one that only the default uses is
 * never measured, so it is not counted. */
static int params_validate(dims_t *d, const bkm_tune_space_opts_t *o, bkm_tune_space_t *sp, bkm_err_t *err)
{
    int v[BKM_TUNE_SPACE_MAX_PARAMS], rc;
    size_t n_grid = 0, n_grid_dropped = 0;
    bkm_err_t first = {0};
    d->n_pcomb = 1;
    for (int k = 0; k < d->n_pd; k++)
        d->n_pcomb *= (size_t)d->pd[k].n;
    if (d->n_pcomb * (size_t)d->n_thr > SPACE_MAX_CONFIGS)
        return bkm_err_set(err, BKM_EINVAL, "--param: %zu parameter combinations at %d thread counts is too many",
                           d->n_pcomb, d->n_thr);
    d->pvalid = bkm_malloc(d->n_pcomb * (size_t)d->n_thr);
    if (d->pvalid == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
    for (size_t pc = 0; pc < d->n_pcomb; pc++) {
        bkm_err_t e2 = {0};
        int in_grid = 1, ok, runs = 0;
        pcomb_coords(d, pc, v);
        for (int k = 0; k < d->n_pd; k++)
            in_grid &= v[k] < d->pd[k].n_grid;
        ok = pcomb_check(d, o, v, 0, &e2) == BKM_OK;
        n_grid += in_grid;
        if (!ok && in_grid && first.msg[0] == '\0')
            first = e2;
        if (!ok && in_grid &&
            ((rc = cause_add(sp, 0, 0, e2.msg, NULL)) < 0 || (rc = add_note(sp, "dropped parameters: %s", e2.msg)) < 0))
            return bkm_err_set(err, rc, "search space: out of memory");
        for (int ti = 0; ti < d->n_thr; ti++) {
            bkm_err_t e3 = {0};
            unsigned char *valid = &d->pvalid[(size_t)ti * d->n_pcomb + pc];
            *valid = ok && pcomb_check(d, o, v, d->threads[ti], &e3) == BKM_OK;
            runs += *valid && ti < d->n_thr_grid;
            if (!ok || *valid || !in_grid || ti >= d->n_thr_grid)
                continue;
            if (first.msg[0] == '\0')
                first = e3;
            if ((rc = cause_add(sp, 0, 0, e3.msg, NULL)) < 0 ||
                (rc = add_note(sp, "dropped parameters at %d thread%s: %s", d->threads[ti],
                               d->threads[ti] == 1 ? "" : "s", e3.msg)) < 0)
                return bkm_err_set(err, rc, "search space: out of memory");
        }
        n_grid_dropped += in_grid && runs == 0;
    }
    /* values the user gave of which no combination can run are bad input, not a silent drop */
    if (n_grid > 0 && n_grid_dropped == n_grid)
        return bkm_err_set(err, BKM_EINVAL, "--param: no combination of the values given can run: %s", first.msg);
    return BKM_OK;
}

static void config_at(const dims_t *d, bkm_tune_config_t *c, const char *backend)
{
    config_fill(c, d->threads, d->aff, d->bt, d->hw, d->pd, d->n_pd, backend);
}

/* The default configuration: configuration 0 of every space. */
static int push_default(const dims_t *d, const bkm_tune_space_opts_t *o, bkm_tune_space_t *sp, bkm_err_t *err)
{
    bkm_tune_config_t c;
    memset(&c, 0, sizeof c);
    c.coord[BKM_TUNE_DIM_THREADS] = d->thr_def;
    for (int k = 0; k < d->n_pd; k++)
        c.coord[BKM_TUNE_DIM_PARAM0 + k] = d->pd[k].default_index;
    config_at(d, &c, o->backend);
    c.is_default = 1;
    return space_push(sp, &c, err);
}

/* The default configuration first, then every grid point that is not a merged duplicate. */
static int grid_build(const dims_t *d, const bkm_tune_space_opts_t *o, bkm_tune_space_t *sp, bkm_err_t *err)
{
    int n_pairs = d->n_hw * d->n_aff, v[BKM_TUNE_SPACE_MAX_PARAMS], rc;
    bkm_tune_config_t c;
    if ((rc = push_default(d, o, sp, err)) < 0)
        return rc;
    for (int ti = 0; ti < d->n_thr_grid; ti++)
        for (int idx = 0; idx < n_pairs; idx++) {
            int hi = idx / d->n_aff, ai = idx % d->n_aff;
            if (!d->aff_grid[ai] || !d->hw_grid[hi] || d->rep[ti * n_pairs + idx] != idx)
                continue;
            for (int bi = 0; bi < d->n_bt; bi++)
                for (size_t pc = 0; pc < d->n_pcomb && d->bt_grid[bi]; pc++) {
                    int is_def = ti == d->thr_def && d->eq_def[ti * n_pairs + idx] && bi == 0, extra = 0;
                    if (!d->pvalid[(size_t)ti * d->n_pcomb + pc])
                        continue;
                    pcomb_coords(d, pc, v);
                    memset(&c, 0, sizeof c);
                    c.coord[BKM_TUNE_DIM_THREADS] = ti;
                    c.coord[BKM_TUNE_DIM_AFFINITY] = ai;
                    c.coord[BKM_TUNE_DIM_BLOCKTIME] = bi;
                    c.coord[BKM_TUNE_DIM_HW_SUBSET] = hi;
                    for (int k = 0; k < d->n_pd; k++) {
                        extra |= v[k] >= d->pd[k].n_grid;   /* a value only the default uses */
                        is_def &= v[k] == d->pd[k].default_index;
                        c.coord[BKM_TUNE_DIM_PARAM0 + k] = v[k];
                    }
                    if (is_def || extra)
                        continue;   /* the default configuration, already first */
                    config_at(d, &c, o->backend);
                    if ((rc = space_push(sp, &c, err)) < 0)
                        return rc;
                }
        }
    return BKM_OK;
}

/* Is the target node a Xeon Phi (KNL)? There libomp 14 starts with its "mic" defaults
 * (scatter, granularity=fine when neither KMP_AFFINITY nor OMP_PROC_BIND is set), so the
 * default configuration is bound there, not unbound. The built-in profile "knl", or any profile
 * whose Slurm constraint asks for knl (a user's KNL profile file). */
static int profile_is_knl(const bkm_node_profile_t *prof)
{
    const char *c = prof->slurm_constraint;
    if (strcmp(prof->name, "knl") == 0)
        return 1;
    return strncmp(c, "knl", 3) == 0 && (c[3] == '\0' || c[3] == ',');
}

/* The causes' texts, the dimension sizes and the canonical description of a built space. */
static int space_finish(bkm_tune_space_t *sp, const dims_t *d, const bkm_tune_space_opts_t *o, bkm_err_t *err)
{
    bkm_json_w_t w;
    int rc;
    if ((rc = causes_finish(sp)) < 0)
        return bkm_err_set(err, rc, "search space: out of memory");
    sp->n_dims = BKM_TUNE_DIM_PARAM0 + d->n_pd;
    sp->dim_size[BKM_TUNE_DIM_THREADS] = d->n_thr;
    sp->dim_size[BKM_TUNE_DIM_AFFINITY] = d->n_aff;
    sp->dim_size[BKM_TUNE_DIM_BLOCKTIME] = d->n_bt;
    sp->dim_size[BKM_TUNE_DIM_HW_SUBSET] = d->n_hw;
    for (int k = 0; k < d->n_pd; k++)
        sp->dim_size[BKM_TUNE_DIM_PARAM0 + k] = d->pd[k].n;
    /* canonical description of the space: the input of the sweep key */
    bkm_json_w_init(&w, &sp->json, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "workload"), bkm_json_str(&w, o->workload);
    bkm_json_key(&w, "backend"), bkm_json_str(&w, o->backend ? o->backend : "");
    bkm_json_key(&w, "configs");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < sp->n; i++)
        bkm_tune_config_to_json(&sp->cfg[i], &w);
    bkm_json_arr_end(&w);
    bkm_json_obj_end(&w);
    return BKM_OK;
}

static int space_create_train(bkm_tune_space_t **space, const bkm_topo_t *topo, const bkm_tune_space_opts_t *o,
                              bkm_err_t *err);

int bkm_tune_space_create(bkm_tune_space_t **space, const bkm_topo_t *topo, const bkm_node_profile_t *prof,
                          const bkm_tune_space_opts_t *o, bkm_err_t *err)
{
    bkm_tune_space_t *sp = NULL;
    dims_t *d = NULL;
    bkm_topo_summary_t ts;
    int n_pus = 0, rc;

    if (space == NULL || topo == NULL || prof == NULL || o == NULL || o->workload == NULL)
        return bkm_err_set(err, BKM_EINVAL, "space_create: NULL argument");
    *space = NULL;
    if (bkm_tune_workload_is_mpi(o->workload))
        return space_create_train(space, topo, o, err);
    if (o->n_ranks > 0)
        return bkm_err_set(err, BKM_EINVAL, "--ranks applies to the MPI workload %s only, not %s",
                           BKM_TUNE_TRAIN_WORKLOAD, o->workload);
    if (o->program && (o->n_params > 0 || (o->backend && o->backend[0])))
        return bkm_err_set(err, BKM_EINVAL, "--%s does not apply to a program (%s): it has no bkm parameters",
                           o->n_params > 0 ? "param" : "backend", o->workload);
    if (!o->program && (rc = bkm_wl_find(o->workload, NULL, err)) < 0)
        return rc;
    if (!o->program && o->backend && o->backend[0] &&
        (rc = check_value(o->workload, NULL, "backend", o->backend, err)) < 0)
        return bkm_err_prefix(err, "--backend");
    bkm_topo_summary(topo, &ts);
    bkm_topo_pus(topo, &n_pus);
    sp = bkm_calloc(1, sizeof *sp);
    d = bkm_calloc(1, sizeof *d);
    if (sp == NULL || d == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        goto out;
    }
    bkm_buf_init(&sp->json);
    topo_words(topo, d->words, sizeof d->words);
    d->popts.mic = profile_is_knl(prof);
    if ((rc = dims_threads(d, o, prof, n_pus, ts.cores > 0 ? ts.cores : 1, err)) < 0 ||
        (rc = dims_affinity(d, o, ts.tiles > 0, topo, sp, err)) < 0 || (rc = dims_blocktime(d, o, prof, sp)) < 0 ||
        (rc = dims_hw_subset(d, o, &ts, sp, err)) < 0 || (rc = params_build(o, d->pd, &d->n_pd, sp, err)) < 0 ||
        (rc = params_validate(d, o, sp, err)) < 0 ||
        (rc = o->gomp ? plans_dedup_gomp(d, topo, sp, err) : plans_dedup(d, topo, sp, err)) < 0 ||
        (rc = grid_build(d, o, sp, err)) < 0)
        goto out;
    if ((rc = space_finish(sp, d, o, err)) < 0)
        goto out;
    *space = sp;
    sp = NULL;
    rc = BKM_OK;
out:
    if (d) {
        bkm_free(d->rep);
        bkm_free(d->eq_def);
        bkm_free(d->pvalid);
    }
    bkm_free(d);
    bkm_tune_space_free(sp);
    return rc;
}

void bkm_tune_space_free(bkm_tune_space_t *sp)
{
    if (sp == NULL)
        return;
    for (size_t i = 0; i < sp->n_notes; i++)
        bkm_free(sp->notes[i]);
    bkm_free(sp->notes);
    for (size_t i = 0; i < sp->n_causes; i++) {
        bkm_free(sp->causes[i].head);
        bkm_free(sp->causes[i].tail);
        bkm_free((char *)sp->causes[i].pub.text);
    }
    bkm_free(sp->causes);
    bkm_free(sp->cfg);
    bkm_buf_free(&sp->json);
    bkm_free(sp);
}

size_t bkm_tune_space_size(const bkm_tune_space_t *sp)
{
    return sp ? sp->n : 0;
}

const bkm_tune_config_t *bkm_tune_space_config(const bkm_tune_space_t *sp, size_t i)
{
    return sp && i < sp->n ? &sp->cfg[i] : NULL;
}

int bkm_tune_space_dims(const bkm_tune_space_t *sp, int *dim_size)
{
    if (dim_size)
        memcpy(dim_size, sp->dim_size, (size_t)sp->n_dims * sizeof *dim_size);
    return sp->n_dims;
}

size_t bkm_tune_space_n_notes(const bkm_tune_space_t *sp)
{
    return sp ? sp->n_notes : 0;
}

const char *bkm_tune_space_note(const bkm_tune_space_t *sp, size_t i)
{
    return sp && i < sp->n_notes ? sp->notes[i] : NULL;
}

size_t bkm_tune_space_n_causes(const bkm_tune_space_t *sp)
{
    return sp ? sp->n_causes : 0;
}

const bkm_tune_space_cause_t *bkm_tune_space_cause(const bkm_tune_space_t *sp, size_t i)
{
    return sp && i < sp->n_causes ? &sp->causes[i].pub : NULL;
}

void bkm_tune_space_counts(const bkm_tune_space_t *sp, size_t *merged, size_t *dropped)
{
    if (merged)
        *merged = sp->merged;
    if (dropped)
        *dropped = sp->dropped;
}

int bkm_tune_space_to_json(const bkm_tune_space_t *sp, bkm_json_w_t *w)
{
    bkm_json_raw(w, bkm_buf_str(&sp->json));
    return BKM_OK;
}

int bkm_tune_space_problem(const bkm_tune_space_t *sp, bkm_tune_problem_t *pb, int **coord, bkm_err_t *err)
{
    int *c = bkm_malloc((sp->n ? sp->n : 1) * (size_t)sp->n_dims * sizeof *c);
    if (c == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
    for (size_t i = 0; i < sp->n; i++)
        memcpy(&c[i * (size_t)sp->n_dims], sp->cfg[i].coord, (size_t)sp->n_dims * sizeof *c);
    pb->n = sp->n;
    pb->n_dims = sp->n_dims;
    pb->coord = c;
    pb->default_index = 0;
    *coord = c;
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */

void bkm_tune_config_to_json(const bkm_tune_config_t *c, bkm_json_w_t *w)
{
    char b[32];
    bkm_json_obj_begin(w);
    bkm_json_key(w, "threads"), bkm_json_int(w, c->threads);
    bkm_json_key(w, "env");
    bkm_json_obj_begin(w);
    if (c->kmp_affinity[0])
        bkm_json_key(w, "KMP_AFFINITY"), bkm_json_str(w, c->kmp_affinity);
    if (c->blocktime_ms != BKM_TUNE_BLOCKTIME_UNSET)
        bkm_json_key(w, "KMP_BLOCKTIME"), bkm_json_str(w, bt_text(c->blocktime_ms, b, sizeof b));
    if (c->kmp_hw_subset[0])
        bkm_json_key(w, "KMP_HW_SUBSET"), bkm_json_str(w, c->kmp_hw_subset);
    if (c->omp_places[0])
        bkm_json_key(w, "OMP_PLACES"), bkm_json_str(w, c->omp_places);
    if (c->omp_proc_bind[0])
        bkm_json_key(w, "OMP_PROC_BIND"), bkm_json_str(w, c->omp_proc_bind);
    if (c->gomp_cpu_affinity[0])
        bkm_json_key(w, "GOMP_CPU_AFFINITY"), bkm_json_str(w, c->gomp_cpu_affinity);
    if (c->omp_wait_policy[0])
        bkm_json_key(w, "OMP_WAIT_POLICY"), bkm_json_str(w, c->omp_wait_policy);
    bkm_json_obj_end(w);
    bkm_json_key(w, "params");
    bkm_json_obj_begin(w);
    for (int i = 0; i < c->n_params; i++)
        bkm_json_key(w, c->params[i].key), bkm_json_str(w, c->params[i].value);
    bkm_json_obj_end(w);
    if (c->backend[0])
        bkm_json_key(w, "backend"), bkm_json_str(w, c->backend);
    if (c->is_default)
        bkm_json_key(w, "default"), bkm_json_bool(w, 1);
    bkm_json_obj_end(w);
}

int bkm_tune_config_key(const bkm_tune_config_t *c, char **key, bkm_err_t *err)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    int rc;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_config_to_json(c, &w);
    rc = bkm_db_config_canonical(bkm_buf_str(&b), key, err);
    bkm_buf_free(&b);
    return rc;
}

void bkm_tune_config_label(const bkm_tune_config_t *c, char *buf, size_t n)
{
    size_t l;
    char b[32];
    snprintf(buf, n, "threads=%d", c->threads);
#define APPEND(...) (l = strlen(buf), l < n ? (void)snprintf(buf + l, n - l, __VA_ARGS__) : (void)0)
    if (c->kmp_affinity[0])
        APPEND(" KMP_AFFINITY=%s", c->kmp_affinity);
    if (c->omp_places[0])
        APPEND(" OMP_PLACES=%s", c->omp_places);
    if (c->omp_proc_bind[0])
        APPEND(" OMP_PROC_BIND=%s", c->omp_proc_bind);
    if (c->kmp_hw_subset[0])
        APPEND(" KMP_HW_SUBSET=%s", c->kmp_hw_subset);
    if (c->gomp_cpu_affinity[0])
        APPEND(" GOMP_CPU_AFFINITY=%s", c->gomp_cpu_affinity);
    if (c->omp_wait_policy[0])
        APPEND(" OMP_WAIT_POLICY=%s", c->omp_wait_policy);
    if (c->blocktime_ms != BKM_TUNE_BLOCKTIME_UNSET)
        APPEND(" KMP_BLOCKTIME=%s", bt_text(c->blocktime_ms, b, sizeof b));
    for (int i = 0; i < c->n_params; i++)
        APPEND(" %s=%s", c->params[i].key, c->params[i].value);
    if (c->is_default)
        APPEND(" (default)");
#undef APPEND
}

int bkm_tune_config_to_spec(const bkm_tune_config_t *c, const char *workload, bkm_tune_trial_spec_t *spec,
                            bkm_err_t *err)
{
    char b[32], kv[160];
    int rc;
    snprintf(spec->workload, sizeof spec->workload, "%s", workload);
    snprintf(spec->backend, sizeof spec->backend, "%s", c->backend);
    spec->threads = c->threads;
    spec->n_env = 0;
    spec->n_params = 0;
    if (c->kmp_affinity[0] && (rc = bkm_tune_trial_spec_setenv(spec, "KMP_AFFINITY", c->kmp_affinity, err)) < 0)
        return rc;
    if (c->blocktime_ms != BKM_TUNE_BLOCKTIME_UNSET &&
        (rc = bkm_tune_trial_spec_setenv(spec, "KMP_BLOCKTIME", bt_text(c->blocktime_ms, b, sizeof b), err)) < 0)
        return rc;
    if (c->kmp_hw_subset[0] && (rc = bkm_tune_trial_spec_setenv(spec, "KMP_HW_SUBSET", c->kmp_hw_subset, err)) < 0)
        return rc;
    if (c->omp_places[0] && (rc = bkm_tune_trial_spec_setenv(spec, "OMP_PLACES", c->omp_places, err)) < 0)
        return rc;
    if (c->omp_proc_bind[0] && (rc = bkm_tune_trial_spec_setenv(spec, "OMP_PROC_BIND", c->omp_proc_bind, err)) < 0)
        return rc;
    if (c->gomp_cpu_affinity[0] &&
        (rc = bkm_tune_trial_spec_setenv(spec, "GOMP_CPU_AFFINITY", c->gomp_cpu_affinity, err)) < 0)
        return rc;
    if (c->omp_wait_policy[0] && (rc = bkm_tune_trial_spec_setenv(spec, "OMP_WAIT_POLICY", c->omp_wait_policy, err)) < 0)
        return rc;
    spec->ranks = bkm_tune_workload_is_mpi(workload) ? 1 : 0;
    for (int i = 0; i < c->n_params; i++) {
        if (spec->ranks > 0 && strcmp(c->params[i].key, "ranks") == 0) {
            long long p;
            if (bkm_parse_int(c->params[i].value, 1, BKM_TUNE_RANKS_MAX, &p) < 0)
                return bkm_err_set(err, BKM_EINVAL, "ranks '%s' is not in 1..%d", c->params[i].value,
                                   BKM_TUNE_RANKS_MAX);
            spec->ranks = (int)p;
            continue;
        }
        snprintf(kv, sizeof kv, "%s=%s", c->params[i].key, c->params[i].value);
        if ((rc = bkm_tune_trial_spec_param(spec, kv, err)) < 0)
            return rc;
    }
    return BKM_OK;
}

int bkm_tune_space_specs_check(const bkm_tune_space_t *sp, const char *workload, const bkm_tune_trial_spec_t *base,
                               bkm_err_t *err)
{
    /* 3^12: beyond any rung a budget of 10^8 trials reaches; the scaled values are clamped anyway */
    static const int scales[] = {1, 531441};
    if (sp == NULL || workload == NULL || base == NULL)
        return bkm_err_set(err, BKM_EINVAL, "space_specs_check: NULL argument");
    for (size_t i = 0; i < sp->n; i++)
        for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
            bkm_tune_trial_spec_t spec = *base;
            char label[256];
            int rc;
            bkm_tune_strategy_spec_scale(&spec, scales[k]);
            if ((rc = bkm_tune_config_to_spec(&sp->cfg[i], workload, &spec, err)) < 0 ||
                (rc = bkm_tune_trial_spec_validate(&spec, err)) < 0) {
                bkm_tune_config_label(&sp->cfg[i], label, sizeof label);
                return bkm_err_prefix(err, "configuration %zu (%s)%s", i, label,
                                      scales[k] > 1 ? " re-measured at a larger scale" : "");
            }
        }
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The MPI training workload (BKM_TUNE_TRAIN_WORKLOAD): ranks x threads per rank x its
 * parameters. The launcher binds each rank to `threads` cores of its own (mpiexec -bind-to
 * core:T), so a setting whose ranks x threads exceed the node's cores is dropped; the OpenMP
 * affinity dimensions do not apply (one value each: nothing set). Ranks are the first parameter
 * dimension ("ranks", default 1); the default configuration is 1 rank x one thread per core,
 * every parameter at its default. */

static int train_param_def(const char *key, const char **def)
{
    size_t n = 0;
    const bkm_train_param_t *tp = bkm_train_params(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(tp[i].name, key) == 0) {
            *def = tp[i].def;
            return 1;
        }
    return 0;
}

static int train_value_check(const char *key, const char *value, bkm_err_t *err)
{
    bkm_wl_config_t c;
    char kv[BKM_KV_KEY_MAX + BKM_KV_VALUE_MAX];
    bkm_wl_config_init(&c);
    snprintf(kv, sizeof kv, "%s=%s", key, value);
    if (bkm_wl_config_add(&c, kv, err) < 0)
        return BKM_EINVAL;
    return bkm_train_config_check(&c, err);
}

/* The "ranks" dimension and one per --param of the training workload into d->pd. */
static int train_dims(dims_t *d, const bkm_tune_space_opts_t *o, int cores, bkm_err_t *err)
{
    param_dim_t *r = &d->pd[0];
    char v[16];
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "ranks");
    snprintf(r->def, sizeof r->def, "1");
    for (int i = 0; i < (o->n_ranks > 0 ? o->n_ranks : 1); i++) {
        int p = o->n_ranks > 0 ? o->ranks[i] : 1;
        if (p < 1 || p > cores)
            return bkm_err_set(err, BKM_EINVAL, "--ranks %d: out of range 1..%d (one core per rank at least: the node "
                               "has %d cores)", p, cores, cores);
        snprintf(v, sizeof v, "%d", p);
        if (pdim_add(r, v) < 0)
            return bkm_err_set(err, BKM_EINVAL, "--ranks: more than %d values", BKM_TUNE_SPACE_MAX_VALUES);
    }
    d->n_pd = 1;
    for (int i = 0; i < o->n_params; i++) {
        const char *kv = o->params[i], *eq = strchr(kv, '='), *def = NULL;
        char vals[BKM_TUNE_SPACE_MAX_VALUES * BKM_KV_VALUE_MAX], *save = NULL, *tok;
        param_dim_t *p = &d->pd[d->n_pd];
        int rc;
        if (strncmp(kv, "ranks=", 6) == 0)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s': give the rank counts with --ranks", kv);
        if ((rc = pdim_begin(d->pd, d->n_pd, BKM_TUNE_SPACE_MAX_PARAMS, kv, err)) < 0)
            return rc;
        if (!train_param_def(p->key, &def))
            return train_value_check(p->key, eq + 1, err) < 0
                       ? BKM_EINVAL
                       : bkm_err_set(err, BKM_EINVAL, "--param '%s': unknown parameter '%s'", kv, p->key);
        snprintf(p->def, sizeof p->def, "%s", def);
        if (strlen(eq + 1) >= sizeof vals)
            return bkm_err_set(err, BKM_EINVAL, "--param '%.60s...' is too long", kv);
        snprintf(vals, sizeof vals, "%s", eq + 1);
        for (tok = strtok_r(vals, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (strlen(tok) >= sizeof p->value[0])
                return bkm_err_set(err, BKM_EINVAL, "--param %s: value '%.60s...' is too long", p->key, tok);
            if ((rc = train_value_check(p->key, tok, err)) < 0)
                return bkm_err_prefix(err, "--param %s", p->key);
            if (pdim_add(p, tok) < 0)
                return bkm_err_set(err, BKM_EINVAL, "--param %s: more than %d values", p->key,
                                   BKM_TUNE_SPACE_MAX_VALUES);
        }
        if (p->n == 0)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s': no value", kv);
        d->n_pd++;
    }
    /* the default configuration: 1 rank (an extra value only it uses when --ranks lacks 1), and
     * the first value of each --param (as for every workload) */
    r->n_grid = r->n;
    r->default_index = pdim_add(r, r->def);
    if (r->default_index < 0)
        return bkm_err_set(err, BKM_EINVAL, "--ranks: more than %d values", BKM_TUNE_SPACE_MAX_VALUES - 1);
    for (int k = 1; k < d->n_pd; k++) {
        d->pd[k].n_grid = d->pd[k].n;
        d->pd[k].default_index = 0;
    }
    return BKM_OK;
}

static int train_threads(dims_t *d, const bkm_tune_space_opts_t *o, int cores, bkm_err_t *err)
{
    d->n_thr = 0;
    for (int i = 0; i < (o->n_threads > 0 ? o->n_threads : 1); i++) {
        int t = o->n_threads > 0 ? o->threads[i] : cores, k;
        if (t < 1 || t > cores)
            return bkm_err_set(err, BKM_EINVAL, "--threads %d: out of range 1..%d (threads per rank, each on a core of "
                               "its own: the node has %d cores)", t, cores, cores);
        for (k = 0; k < d->n_thr && d->threads[k] != t; k++)
            ;
        if (k == d->n_thr)
            d->threads[d->n_thr++] = t;
    }
    d->n_thr_grid = d->n_thr;
    for (d->thr_def = 0; d->thr_def < d->n_thr && d->threads[d->thr_def] != cores; d->thr_def++)
        ;
    if (d->thr_def == d->n_thr)
        d->threads[d->n_thr++] = cores;
    return BKM_OK;
}

static int train_grid(dims_t *d, const bkm_tune_space_opts_t *o, int cores, bkm_tune_space_t *sp, bkm_err_t *err)
{
    bkm_tune_config_t c;
    size_t total = (size_t)d->n_thr_grid;
    int rc;
    for (int k = 0; k < d->n_pd; k++)
        total *= (size_t)d->pd[k].n_grid;
    if ((rc = push_default(d, o, sp, err)) < 0)
        return rc;
    for (size_t i = 0; i < total; i++) {
        size_t x = i;
        int is_def = 1, ranks;
        memset(&c, 0, sizeof c);
        for (int k = d->n_pd - 1; k >= 0; k--) {
            c.coord[BKM_TUNE_DIM_PARAM0 + k] = (int)(x % (size_t)d->pd[k].n_grid);
            x /= (size_t)d->pd[k].n_grid;
            is_def &= c.coord[BKM_TUNE_DIM_PARAM0 + k] == d->pd[k].default_index;
        }
        c.coord[BKM_TUNE_DIM_THREADS] = (int)x;
        is_def &= (int)x == d->thr_def;
        if (is_def)
            continue;   /* the default configuration, already first */
        ranks = atoi(d->pd[0].value[c.coord[BKM_TUNE_DIM_PARAM0]]);
        config_at(d, &c, o->backend);
        if (ranks * d->threads[x] > cores) {
            char label[256];
            bkm_tune_config_label(&c, label, sizeof label);
            if ((rc = cause_add(sp, 0, 0, "ranks x threads per rank beyond the node's cores", "")) < 0 ||
                (rc = add_note(sp, "dropped: %s: %d ranks x %d threads need %d cores; the node has %d", label, ranks,
                               d->threads[x], ranks * d->threads[x], cores)) < 0)
                return bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
            continue;
        }
        if ((rc = space_push(sp, &c, err)) < 0)
            return rc;
    }
    return BKM_OK;
}

static int space_create_train(bkm_tune_space_t **space, const bkm_topo_t *topo, const bkm_tune_space_opts_t *o,
                              bkm_err_t *err)
{
    bkm_tune_space_t *sp = NULL;
    dims_t *d = NULL;
    bkm_topo_summary_t ts;
    int rc, cores;
    if (o->n_affinity > 0 || o->n_blocktime > 0 || o->n_hw_subset > 0 || o->sweep_tunables)
        return bkm_err_set(err, BKM_EINVAL, "workload %s: --%s does not apply: the launcher binds every rank to cores "
                           "of its own (sweep --ranks, --threads and --param)", o->workload,
                           o->n_affinity ? "affinity" : o->n_blocktime ? "blocktime"
                                                      : o->n_hw_subset ? "hw-subset" : "sweep-tunables");
    if (o->backend && o->backend[0] && (rc = train_value_check("backend", o->backend, err)) < 0)
        return bkm_err_prefix(err, "--backend");
    bkm_topo_summary(topo, &ts);
    cores = ts.cores > 0 ? ts.cores : 1;
    sp = bkm_calloc(1, sizeof *sp);
    d = bkm_calloc(1, sizeof *d);
    if (sp == NULL || d == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "search space: out of memory");
        goto out;
    }
    bkm_buf_init(&sp->json);
    d->n_aff = d->n_bt = d->n_hw = 1;
    snprintf(d->aff[0].label, sizeof d->aff[0].label, "default");
    d->bt[0] = BKM_TUNE_BLOCKTIME_UNSET;
    if ((rc = train_threads(d, o, cores, err)) < 0 || (rc = train_dims(d, o, cores, err)) < 0 ||
        (rc = train_grid(d, o, cores, sp, err)) < 0)
        goto out;
    if ((rc = space_finish(sp, d, o, err)) < 0)
        goto out;
    *space = sp;
    sp = NULL;
    rc = BKM_OK;
out:
    bkm_free(d);
    bkm_tune_space_free(sp);
    return rc;
}
