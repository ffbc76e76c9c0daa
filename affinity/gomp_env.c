/* SPDX-License-Identifier: MIT */
/* The variables of GNU libgomp 12 as its constructor reads them (env.c initialize_env): each
 * parser accepts what libgomp accepts, with libgomp's number functions, and a value libgomp
 * rejects gives its message and leaves the variable unset. The order is libgomp's, so the
 * messages come out in the order libgomp prints them. */
#include "gomp_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/** gomp_supported_active_levels: the largest max-active-levels libgomp keeps. */
#define GOMP_SUPPORTED_ACTIVE_LEVELS 255UL

int bkm__gomp_isspace(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void bkm__gomp_msg(bkm__gomp_t *g, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (g->n_msg >= BKM__GOMP_MSG_MAX)
        return;
    if ((g->msg[g->n_msg] = bkm_strdup(buf)) == NULL) {
        g->oom = 1;
        return;
    }
    g->msg_var[g->n_msg++] = g->var;
}

void bkm__gomp_why(bkm__gomp_t *g, const char *fmt, ...)
{
    va_list ap;
    if (g->why[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(g->why, sizeof(g->why), fmt, ap);
    va_end(ap);
    g->why_var = g->var;
}

static const char *skip_ws(const char *s)
{
    while (bkm__gomp_isspace((unsigned char)*s))
        s++;
    return s;
}

static void invalid(bkm__gomp_t *g, const char *name)
{
    bkm__gomp_msg(g, "Invalid value for environment variable %s", name);
}

/* parse_unsigned_long_list (OMP_NUM_THREADS): positive numbers separated by commas. */
static int parse_nthreads(bkm__gomp_t *g, const char *val, bkm__gomp_icv_t *icv)
{
    const char *s = skip_ws(val);
    char *end;
    unsigned long v;
    int n = 0;
    if (*s == '\0') {
        bkm__gomp_why(g, "the value is empty");
        goto bad;
    }
    for (;;) {
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || (long)v <= 0) {
            bkm__gomp_why(g, "\"%.20s\" is not a thread count of at least 1", s);
            goto bad;
        }
        if (n < BKM__GOMP_LIST_MAX)
            icv->nthreads[n] = v;
        n++;
        s = skip_ws(end);
        if (*s == '\0')
            break;
        if (*s != ',') {
            bkm__gomp_why(g, "unexpected \"%.20s\" (thread counts are separated by ',')", s);
            goto bad;
        }
        s = skip_ws(s + 1);
        if (*s == '\0') {
            bkm__gomp_why(g, "a thread count is missing after the last ','");
            goto bad;
        }
    }
    icv->nthreads_len = n;
    icv->nthreads_set = 1;
    return 1;
bad:
    invalid(g, "OMP_NUM_THREADS");
    return 0;
}

/* parse_bind_var (OMP_PROC_BIND): false|true|master|primary|close|spread, then for nested levels
 * master|primary|close|spread only. */
static int parse_bind(bkm__gomp_t *g, const char *val, bkm__gomp_icv_t *icv)
{
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"false", GOMP_BIND_FALSE},    {"true", GOMP_BIND_TRUE},   {"master", GOMP_BIND_MASTER},
                 {"primary", GOMP_BIND_MASTER}, {"close", GOMP_BIND_CLOSE}, {"spread", GOMP_BIND_SPREAD}};
    const char *s = skip_ws(val);
    int n = 0;
    if (*s == '\0') {
        bkm__gomp_why(g, "the value is empty");
        goto bad;
    }
    for (;;) {
        size_t k, first = n == 0 ? 0 : 2;
        for (k = first; k < sizeof(kinds) / sizeof(kinds[0]); k++)
            if (strncasecmp(s, kinds[k].name, strlen(kinds[k].name)) == 0)
                break;
        if (k == sizeof(kinds) / sizeof(kinds[0])) {
            bkm__gomp_why(g, "\"%.20s\" is not a policy (%s)", s,
                          n == 0 ? "false, true, master, primary, close or spread"
                                 : "nested levels take master, primary, close or spread");
            goto bad;
        }
        if (n < BKM__GOMP_LIST_MAX)
            icv->bind[n] = kinds[k].kind;
        n++;
        s = skip_ws(s + strlen(kinds[k].name));
        if (*s == '\0')
            break;
        if (*s != ',') {
            bkm__gomp_why(g, "unexpected \"%.20s\" after a policy", s);
            goto bad;
        }
        if (n == 1 && (icv->bind[0] == GOMP_BIND_FALSE || icv->bind[0] == GOMP_BIND_TRUE)) {
            bkm__gomp_why(g, "a list of policies cannot start with %s", icv->bind[0] ? "true" : "false");
            goto bad;
        }
        s = skip_ws(s + 1);
        if (*s == '\0') {
            bkm__gomp_why(g, "a policy is missing after the last ','");
            goto bad;
        }
    }
    icv->bind_len = n;
    icv->bind_set = 1;
    return 1;
bad:
    invalid(g, "OMP_PROC_BIND");
    return 0;
}

/* parse_unsigned_long with zero allowed (OMP_MAX_ACTIVE_LEVELS). */
static int parse_levels(bkm__gomp_t *g, const char *val, unsigned long *out)
{
    const char *s = skip_ws(val);
    char *end;
    unsigned long v;
    if (*s == '\0') {
        bkm__gomp_why(g, "the value is empty");
        goto bad;
    }
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || end == s || (long)v < 0) {
        bkm__gomp_why(g, "\"%.20s\" is not a number of levels", s);
        goto bad;
    }
    s = skip_ws(end);
    if (*s != '\0') {
        bkm__gomp_why(g, "unexpected \"%.20s\" after the number", s);
        goto bad;
    }
    *out = v;
    return 1;
bad:
    invalid(g, "OMP_MAX_ACTIVE_LEVELS");
    return 0;
}

/* parse_boolean (OMP_NESTED). */
static int parse_bool(bkm__gomp_t *g, const char *name, const char *val, int *out)
{
    const char *s = skip_ws(val);
    if (strncasecmp(s, "true", 4) == 0) {
        *out = 1;
        s += 4;
    } else if (strncasecmp(s, "false", 5) == 0) {
        *out = 0;
        s += 5;
    } else {
        bkm__gomp_why(g, "\"%.20s\" is not true or false", s);
        invalid(g, name);
        return 0;
    }
    s = skip_ws(s);
    if (*s != '\0') {
        bkm__gomp_why(g, "unexpected \"%.20s\" after %s", s, *out ? "true" : "false");
        invalid(g, name);
        return 0;
    }
    return 1;
}

/* parse_wait_policy: 1 active, 0 passive, -1 unset or rejected. */
static int parse_wait(bkm__gomp_t *g, const char *val)
{
    const char *s = skip_ws(val);
    int r;
    if (strncasecmp(s, "active", 6) == 0) {
        r = 1;
        s += 6;
    } else if (strncasecmp(s, "passive", 7) == 0) {
        r = 0;
        s += 7;
    } else {
        bkm__gomp_why(g, "\"%.20s\" is not active or passive", s);
        invalid(g, "OMP_WAIT_POLICY");
        return -1;
    }
    s = skip_ws(s);
    if (*s != '\0') {
        bkm__gomp_why(g, "unexpected \"%.20s\" after %s", s, r ? "active" : "passive");
        invalid(g, "OMP_WAIT_POLICY");
        return -1;
    }
    return r;
}

/* parse_spincount (GOMP_SPINCOUNT): a number with an optional k/M/G/T suffix (powers of 1000),
 * or infinite/infinity; products that overflow become infinite. */
static int parse_spin(bkm__gomp_t *g, const char *val, unsigned long long *out)
{
    const char *s = skip_ws(val);
    unsigned long long v, mult = 1;
    char *end;
    if (*s == '\0') {
        bkm__gomp_why(g, "the value is empty");
        goto bad;
    }
    if (strncasecmp(s, "infinite", 8) == 0 || strncasecmp(s, "infinity", 8) == 0) {
        v = ULLONG_MAX;
        s += 8;
    } else {
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s) {
            bkm__gomp_why(g, "\"%.20s\" is not a spin count", s);
            goto bad;
        }
        s = skip_ws(end);
        if (*s == '\0')
            goto done;
        switch (tolower((unsigned char)*s)) {
        case 'k': mult = 1000ULL; break;
        case 'm': mult = 1000ULL * 1000ULL; break;
        case 'g': mult = 1000ULL * 1000ULL * 1000ULL; break;
        case 't': mult = 1000ULL * 1000ULL * 1000ULL * 1000ULL; break;
        default: bkm__gomp_why(g, "unknown suffix \"%.20s\" (k, M, G or T)", s); goto bad;
        }
        s++;
    }
    s = skip_ws(s);
    if (*s != '\0') {
        bkm__gomp_why(g, "unexpected \"%.20s\" at the end", s);
        goto bad;
    }
done:
    *out = v > ULLONG_MAX / mult ? ULLONG_MAX : v * mult;
    return 1;
bad:
    invalid(g, "GOMP_SPINCOUNT");
    return 0;
}

/* One variable's rejection, for the strict checks: "NAME='value': why". */
static int strict_fail(bkm__gomp_t *g, const char *name, const char *value, bkm_err_t *err)
{
    return bkm_err_set(err, BKM_EINVAL, "%s='%.200s': GNU libgomp 12 rejects it (%s) and treats it as unset", name,
                       value, g->why[0] ? g->why : "invalid value");
}

int bkm__gomp_env_apply(bkm__gomp_t *g, const bkm_aff_gomp_env_t *env, bkm__gomp_icv_t *icv)
{
    int ignore = 0, nested = 0, levels_set;
    memset(icv, 0, sizeof(*icv));
    icv->nthreads[0] = (unsigned long)g->popcount;
    icv->bind_var = GOMP_BIND_FALSE;
    icv->max_active_levels = 1;
    icv->wait_policy = -1;
    icv->places_src = BKM_AFF_GOMP_PLACES_NONE;

    g->var = "OMP_NUM_THREADS";
    if (env->omp_num_threads != NULL && !parse_nthreads(g, env->omp_num_threads, icv))
        icv->nthreads[0] = (unsigned long)g->popcount;
    g->var = "OMP_PROC_BIND";
    if (env->omp_proc_bind != NULL && parse_bind(g, env->omp_proc_bind, icv)) {
        icv->bind_var = icv->bind[0];
        if (icv->bind_var == GOMP_BIND_FALSE)
            ignore = 1;
    }
    /* OMP_NESTED is read only without a valid OMP_MAX_ACTIVE_LEVELS; lists make nesting active. */
    g->var = "OMP_MAX_ACTIVE_LEVELS";
    levels_set =
        env->omp_max_active_levels != NULL && parse_levels(g, env->omp_max_active_levels, &icv->max_active_levels);
    g->var = "OMP_NESTED";
    if (levels_set) {
        if (icv->max_active_levels > GOMP_SUPPORTED_ACTIVE_LEVELS)
            icv->max_active_levels = GOMP_SUPPORTED_ACTIVE_LEVELS;
    } else if (env->omp_nested != NULL && parse_bool(g, "OMP_NESTED", env->omp_nested, &nested)) {
        icv->max_active_levels = nested ? GOMP_SUPPORTED_ACTIVE_LEVELS : 1;
    } else if (icv->nthreads_len > 1 || icv->bind_len > 1) {
        icv->max_active_levels = GOMP_SUPPORTED_ACTIVE_LEVELS;
    }

    /* OMP_PLACES, then GOMP_CPU_AFFINITY; with OMP_PROC_BIND=false both are only syntax-checked,
     * and a valid OMP_PLACES leaves GOMP_CPU_AFFINITY syntax-checked only. */
    g->var = "OMP_PLACES";
    if (env->omp_places != NULL) {
        if (bkm__gomp_places_var(g, env->omp_places, ignore)) {
            icv->places_src = BKM_AFF_GOMP_PLACES_OMP;
            if (icv->bind_var == GOMP_BIND_FALSE)
                icv->bind_var = GOMP_BIND_TRUE;
            ignore = 1;
        } else if (ignore) {
            icv->places_ignored = 1;
        }
    }
    if (g->oom)
        return BKM_ENOMEM;
    g->var = "GOMP_CPU_AFFINITY";
    if (env->gomp_cpu_affinity != NULL) {
        int was_ignored = ignore;
        if (bkm__gomp_affinity_var(g, env->gomp_cpu_affinity, ignore)) {
            icv->places_src = BKM_AFF_GOMP_PLACES_GOMP;
            if (icv->bind_var == GOMP_BIND_FALSE)
                icv->bind_var = GOMP_BIND_TRUE;
        } else if (was_ignored) {
            icv->affinity_ignored = 1;
        }
    }
    if (g->oom)
        return BKM_ENOMEM;
    /* gomp_init_affinity: binding on without places takes `threads`, quietly. */
    g->var = "OMP_PROC_BIND";
    if (icv->bind_var != GOMP_BIND_FALSE && g->n_places == 0 && bkm__gomp_places_level(g, 1, (unsigned long)-1, 1))
        icv->places_src = BKM_AFF_GOMP_PLACES_DEFAULT;
    if (g->oom)
        return BKM_ENOMEM;

    g->var = "OMP_WAIT_POLICY";
    if (env->omp_wait_policy != NULL)
        icv->wait_policy = parse_wait(g, env->omp_wait_policy);
    g->var = "GOMP_SPINCOUNT";
    if (env->gomp_spincount != NULL && parse_spin(g, env->gomp_spincount, &icv->spin))
        icv->spin_set = 1;
    if (!icv->spin_set)
        icv->spin = icv->wait_policy > 0 ? 30000000000ULL : icv->wait_policy < 0 ? 300000ULL : 0;
    icv->throttled = icv->wait_policy > 0 ? 1000ULL : icv->wait_policy < 0 ? 100ULL : 0;
    if (icv->throttled > icv->spin)
        icv->throttled = icv->spin;
    return g->oom ? BKM_ENOMEM : BKM_OK;
}

int bkm_aff_gomp_env_check(const bkm_aff_gomp_env_t *env, bkm_err_t *err)
{
    bkm__gomp_t g;
    bkm__gomp_icv_t icv;
    unsigned long levels;
    unsigned long long spin;
    int rc = BKM_OK, nested;
    if (env == NULL)
        return BKM_OK;
    memset(&g, 0, sizeof(g));
    memset(&icv, 0, sizeof(icv));
    g.max = BKM_CPUSET_MAX; /* syntax only: CPU numbers are judged against a topology by the planner */
    g.popcount = 1;
    if (env->omp_num_threads != NULL && !parse_nthreads(&g, env->omp_num_threads, &icv))
        rc = strict_fail(&g, "OMP_NUM_THREADS", env->omp_num_threads, err);
    else if (env->omp_proc_bind != NULL && !parse_bind(&g, env->omp_proc_bind, &icv))
        rc = strict_fail(&g, "OMP_PROC_BIND", env->omp_proc_bind, err);
    else if (env->omp_max_active_levels != NULL && !parse_levels(&g, env->omp_max_active_levels, &levels))
        rc = strict_fail(&g, "OMP_MAX_ACTIVE_LEVELS", env->omp_max_active_levels, err);
    else if (env->omp_nested != NULL && !parse_bool(&g, "OMP_NESTED", env->omp_nested, &nested))
        rc = strict_fail(&g, "OMP_NESTED", env->omp_nested, err);
    else if (env->omp_places != NULL && (bkm__gomp_places_var(&g, env->omp_places, 1), g.n_msg > 0))
        rc = strict_fail(&g, "OMP_PLACES", env->omp_places, err);
    else if (env->gomp_cpu_affinity != NULL && (bkm__gomp_affinity_var(&g, env->gomp_cpu_affinity, 1), g.n_msg > 0))
        rc = strict_fail(&g, "GOMP_CPU_AFFINITY", env->gomp_cpu_affinity, err);
    else if (env->omp_wait_policy != NULL && parse_wait(&g, env->omp_wait_policy) < 0)
        rc = strict_fail(&g, "OMP_WAIT_POLICY", env->omp_wait_policy, err);
    else if (env->gomp_spincount != NULL && !parse_spin(&g, env->gomp_spincount, &spin))
        rc = strict_fail(&g, "GOMP_SPINCOUNT", env->gomp_spincount, err);
    for (int i = 0; i < g.n_msg; i++)
        bkm_free(g.msg[i]);
    bkm__gomp_places_clear(&g);
    return rc;
}
