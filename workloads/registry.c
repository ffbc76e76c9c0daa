/* SPDX-License-Identifier: MIT */
/* Workload registry: lookup, the merged parameter list, configuration parsing and validation,
 * and the generic bkm_wl_* calls that dispatch to a workload's hooks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "wl_int.h"

static const bkm_wl_entry_t *const registry[] = {&bkm__wl_gemm, &bkm__wl_conv2d, &bkm__wl_alexnet, &bkm__wl_conv3d,
                                               &bkm__wl_lstm};
#define N_REGISTRY (sizeof registry / sizeof registry[0])

size_t bkm_wl_count(void)
{
    return N_REGISTRY;
}

const bkm_wl_info_t *bkm_wl_info_at(size_t i)
{
    return i < N_REGISTRY ? &registry[i]->info : NULL;
}

static const bkm_wl_entry_t *find_entry(const char *name)
{
    for (size_t i = 0; name && i < N_REGISTRY; i++)
        if (strcmp(registry[i]->info.name, name) == 0)
            return registry[i];
    return NULL;
}

static int unknown_workload(const char *name, bkm_err_t *err)
{
    bkm_buf_t known;
    int rc;
    bkm_buf_init(&known);
    for (size_t i = 0; i < N_REGISTRY; i++)
        bkm_buf_printf(&known, "%s%s", i ? ", " : "", registry[i]->info.name);
    rc = bkm_err_set(err, BKM_EINVAL, "unknown workload '%s' (known: %s)", name ? name : "(null)", bkm_buf_str(&known));
    bkm_buf_free(&known);
    return rc;
}

int bkm_wl_find(const char *name, const bkm_wl_info_t **info, bkm_err_t *err)
{
    const bkm_wl_entry_t *e = find_entry(name);
    if (!e)
        return unknown_workload(name, err);
    if (info)
        *info = &e->info;
    return BKM_OK;
}

static size_t entry_params(const bkm_wl_entry_t *e, bkm_wl_param_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n_own && n < BKM_WL_MAX_PARAMS; i++)
        out[n++] = e->own[i];
    if (e->tunables)
        n += e->tunables(out + n, BKM_WL_MAX_PARAMS - n);
    return n;
}

int bkm_wl_params(const char *name, bkm_wl_param_t *out, size_t *n, bkm_err_t *err)
{
    const bkm_wl_entry_t *e = find_entry(name);
    if (!e)
        return unknown_workload(name, err);
    *n = entry_params(e, out);
    return BKM_OK;
}

size_t bkm__wl_tunables_from(const bkm_param_desc_t *desc, size_t nd, bkm_wl_param_t *out, size_t cap)
{
    size_t n = 0;
    if (cap > 0) {
        bkm_wl_param_t *p = &out[n++];
        memset(p, 0, sizeof *p);
        p->name = "isa";
        p->type = BKM_WL_ENUM;
        snprintf(p->def, sizeof p->def, "auto");
        p->choices = "auto|generic|avx2|avx512";
        p->help = "instruction set of the native kernels (auto = the best this CPU has)";
        p->kernel_tunable = 1;
    }
    for (size_t i = 0; i < nd && n < cap; i++) {
        bkm_wl_param_t *p = &out[n++];
        memset(p, 0, sizeof *p);
        p->name = desc[i].name;
        p->type = BKM_WL_INT;
        snprintf(p->def, sizeof p->def, "%d", (int)desc[i].def);
        p->min = desc[i].min;
        p->max = desc[i].max;
        p->mult_of = desc[i].mult_of > 0 ? desc[i].mult_of : 1;
        p->help = desc[i].help;
        p->kernel_tunable = 1;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                              */

void bkm_wl_config_init(bkm_wl_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

int bkm_wl_config_add(bkm_wl_config_t *cfg, const char *kv, bkm_err_t *err)
{
    bkm_kv_t p;
    int rc;
    if ((rc = bkm_kv_parse(&p, kv, "parameter", err)) < 0)
        return rc;
    if (bkm_kv_find(cfg->kv, cfg->n, p.key, strlen(p.key)) >= 0)
        return bkm_err_set(err, BKM_EINVAL, "parameter '%s' is given twice", p.key);
    if (cfg->n >= BKM_WL_MAX_KV)
        return bkm_err_set(err, BKM_EINVAL, "parameter '%s': too many parameters (at most %d)", kv, BKM_WL_MAX_KV);
    cfg->kv[cfg->n++] = p;
    return BKM_OK;
}

const char *bkm_wl_config_get(const bkm_wl_config_t *cfg, const char *key)
{
    for (int i = 0; cfg && i < cfg->n; i++)
        if (strcmp(cfg->kv[i].key, key) == 0)
            return cfg->kv[i].value;
    return NULL;
}

static int choice_ok(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    const char *p = choices;
    while (p && *p) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == vl && strncmp(p, v, l) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int check_value(const char *wname, const bkm_wl_param_t *p, const char *v, bkm_err_t *err)
{
    long long x;
    if (p->type == BKM_WL_INT) {
        if (bkm_parse_int(v, INT64_MIN, INT64_MAX, &x) != BKM_OK)
            return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s='%s' is not an integer", wname, p->name, v);
        /* a kernel tunable's bounds and multiples depend on the ISA chosen (the published ones are
         * this CPU's best): the workload's validate hook applies the kernel's own check */
        if (p->kernel_tunable)
            return BKM_OK;
        if (x < p->min || x > p->max)
            return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s=%lld is out of range [%lld, %lld]", wname, p->name,
                               x, (long long)p->min, (long long)p->max);
        if (p->mult_of > 1 && x % p->mult_of != 0)
            return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s=%lld is not a multiple of %lld", wname, p->name, x,
                               (long long)p->mult_of);
    } else if (p->type == BKM_WL_ENUM) {
        if (!choice_ok(p->choices, v))
            return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s='%s' is not one of %s", wname, p->name, v,
                               p->choices);
    } else if (v[0] == '\0') {
        return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s is empty", wname, p->name);
    }
    return BKM_OK;
}

/* Fill wl->params/vals/be/kp from @p cfg, checking every key and value. */
static int resolve(bkm_wl_t *wl, const bkm_wl_entry_t *e, const bkm_wl_config_t *cfg, bkm_err_t *err)
{
    const char *wname = e->info.name;
    int rc;
    wl->e = e;
    wl->n_params = entry_params(e, wl->params);
    for (size_t i = 0; i < wl->n_params; i++)
        snprintf(wl->vals[i], BKM_WL_VAL_MAX, "%s", wl->params[i].def);
    for (int j = 0; cfg && j < cfg->n; j++) {
        size_t i;
        for (i = 0; i < wl->n_params; i++)
            if (strcmp(wl->params[i].name, cfg->kv[j].key) == 0)
                break;
        if (i == wl->n_params) {
            bkm_buf_t known;
            bkm_buf_init(&known);
            for (size_t k = 0; k < wl->n_params; k++)
                bkm_buf_printf(&known, "%s%s", k ? ", " : "", wl->params[k].name);
            rc = bkm_err_set(err, BKM_EINVAL, "%s: unknown parameter '%s' (known: %s)", wname, cfg->kv[j].key,
                             bkm_buf_str(&known));
            bkm_buf_free(&known);
            return rc;
        }
        if ((rc = check_value(wname, &wl->params[i], cfg->kv[j].value, err)) < 0)
            return rc;
        snprintf(wl->vals[i], BKM_WL_VAL_MAX, "%s", cfg->kv[j].value);
    }
    if ((rc = bkm_kern_backend_parse(bkm__wl_val(wl, "backend"), &wl->be, err)) < 0)
        return rc;
    bkm_kern_params_init(&wl->kp);
    if (cfg) {
        wl->kp.cache.l1d = cfg->cache_l1d;
        wl->kp.cache.l2 = cfg->cache_l2;
        wl->kp.cache.l3 = cfg->cache_l3;
    }
    for (int j = 0; cfg && j < cfg->n; j++) {
        char kv[BKM_KV_KEY_MAX + BKM_KV_VALUE_MAX];
        size_t i;
        for (i = 0; i < wl->n_params; i++)
            if (strcmp(wl->params[i].name, cfg->kv[j].key) == 0)
                break;
        if (!wl->params[i].kernel_tunable)
            continue;
        if (wl->be != BKM_BACKEND_NATIVE)
            return bkm_err_set(err, BKM_EINVAL, "%s: parameter %s=%s is a native kernel tunable; backend=%s has none",
                               wname, cfg->kv[j].key, cfg->kv[j].value, bkm_kern_backend_name(wl->be));
        snprintf(kv, sizeof kv, "%s=%s", cfg->kv[j].key, cfg->kv[j].value);
        if ((rc = bkm_kern_params_add(&wl->kp, kv, err)) < 0)
            return bkm_err_prefix(err, "%s", wname);
    }
    return BKM_OK;
}

/* Read one byte count from @p path ("max" = no limit): 1 when read. */
static int read_limit(const char *path, double *bytes)
{
    FILE *f = fopen(path, "r");
    char line[64];
    int ok = 0;
    if (!f)
        return 0;
    if (fgets(line, sizeof line, f) && strncmp(line, "max", 3) != 0) {
        char *end = NULL;
        double v = strtod(line, &end);
        if (end != line && v > 0.0)
            *bytes = v, ok = 1;
    }
    fclose(f);
    return ok;
}

double bkm__wl_mem_limit(const char *proc_cgroup, const char *cgroup_root, double phys, char *src, size_t src_n)
{
    FILE *f = fopen(proc_cgroup, "r");
    char line[512], path[1024];
    double best = phys, v;
    snprintf(src, src_n, "physical memory");
    if (!f)
        return best;
    while (fgets(line, sizeof line, f)) {
        /* v2 "0::/path", v1 "N:memory:/path" (or "N:...,memory,...:/path") */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl;
        int v2;
        if (!c2)
            continue;
        if ((nl = strchr(c2, '\n')))
            *nl = '\0';
        v2 = c2 == c1 + 1;
        *c2 = '\0';
        if (!v2 && !strstr(c1 + 1, "memory"))
            continue;
        *c2 = ':';
        /* the process's own group and each parent up to the root: the tightest limit applies */
        for (char *cut = c2 + strlen(c2); cut > c2; ) {
            *cut = '\0';
            snprintf(path, sizeof path, v2 ? "%s%s/memory.max" : "%s/memory%s/memory.limit_in_bytes", cgroup_root,
                     c2 + 1);
            if (read_limit(path, &v) && v < best) {
                best = v;
                snprintf(src, src_n, "the cgroup limit (%s)", path);
            }
            cut = strrchr(c2 + 1, '/');
            if (!cut)
                break;
        }
        snprintf(path, sizeof path, v2 ? "%s/memory.max" : "%s/memory/memory.limit_in_bytes", cgroup_root);
        if (read_limit(path, &v) && v < best) {
            best = v;
            snprintf(src, src_n, "the cgroup limit (%s)", path);
        }
    }
    fclose(f);
    return best;
}

/* The soft limit @p res of this process (ulimit -v, ulimit -d) in bytes, or @p have when it
 * is unlimited or larger. */
static double rlimit_below(int res, double have)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < have)
        return (double)rl.rlim_cur;
    return have;
}

/* Refuse a configuration whose buffers cannot fit in the memory this process may use (physical
 * memory, lowered by the tightest cgroup limit and by RLIMIT_AS / RLIMIT_DATA) as bad input,
 * BKM_EINVAL naming both sizes and where the limit comes from, rather than
 * letting the allocation succeed on overcommit and the fill be killed. */
static int check_memory(const bkm_wl_t *wl, bkm_err_t *err)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    double need, have;
    char src[1200];
    if (!wl->e->bytes || pages <= 0 || psz <= 0)
        return BKM_OK;
    need = wl->e->bytes(wl);
    have = bkm__wl_mem_limit("/proc/self/cgroup", "/sys/fs/cgroup", (double)pages * (double)psz, src, sizeof src);
    if (rlimit_below(RLIMIT_DATA, rlimit_below(RLIMIT_AS, have)) < have) {
        have = rlimit_below(RLIMIT_DATA, rlimit_below(RLIMIT_AS, have));
        snprintf(src, sizeof src, "the process's resource limit, ulimit -v / -d");
    }
    if (need > 0.9 * have)
        return bkm_err_set(err, BKM_EINVAL, "%s: this configuration needs about %.1f GiB, more than 90%% of the "
                           "%.1f GiB this process may use (%s)", wl->e->info.name, need / 1073741824.0,
                           have / 1073741824.0, src);
    return BKM_OK;
}

int bkm_wl_config_check(const char *name, const bkm_wl_config_t *cfg, bkm_err_t *err)
{
    return bkm_wl_config_check_threads(name, cfg, 0, err);
}

int bkm_wl_config_check_threads(const char *name, const bkm_wl_config_t *cfg, int n_threads, bkm_err_t *err)
{
    const bkm_wl_entry_t *e = find_entry(name);
    bkm_wl_t *wl;
    int rc;
    if (!e)
        return unknown_workload(name, err);
    if (!(wl = bkm_calloc(1, sizeof *wl)))
        return bkm_err_set(err, BKM_ENOMEM, "workload %s: out of memory", name);
    wl->n_threads = n_threads > 0 ? n_threads : 0;
    rc = resolve(wl, e, cfg, err);
    if (rc == BKM_OK && e->validate)
        rc = e->validate(wl, err);
    if (rc == BKM_OK)
        rc = check_memory(wl, err);
    bkm_free(wl);
    return rc;
}

const char *bkm__wl_val(const bkm_wl_t *wl, const char *name)
{
    for (size_t i = 0; i < wl->n_params; i++)
        if (strcmp(wl->params[i].name, name) == 0)
            return wl->vals[i];
    return NULL;
}

int64_t bkm__wl_int(const bkm_wl_t *wl, const char *name)
{
    long long v = 0;
    const char *s = bkm__wl_val(wl, name);
    if (!s || bkm_parse_int(s, INT64_MIN, INT64_MAX, &v) != BKM_OK)
        return 0;
    return v;
}

/* ---------------------------------------------------------------------------------------- */
/* Workload object                                                                            */

int bkm_wl_create(bkm_wl_t **out, const char *name, const bkm_wl_config_t *cfg, uint64_t seed, bkm_err_t *err)
{
    const bkm_wl_entry_t *e = find_entry(name);
    bkm_wl_t *wl = NULL;
    int rc;
    *out = NULL;
    if (!e)
        return unknown_workload(name, err);
    if (!(wl = bkm_calloc(1, sizeof *wl)))
        return bkm_err_set(err, BKM_ENOMEM, "workload %s: out of memory", name);
    wl->seed = seed;
    if ((rc = resolve(wl, e, cfg, err)) < 0)
        goto out;
    if (e->validate && (rc = e->validate(wl, err)) < 0)
        goto out;
    if ((rc = check_memory(wl, err)) < 0)
        goto out;
    if ((rc = e->create(wl, err)) < 0)
        goto out;
    *out = wl;
    wl = NULL;
out:
    bkm_wl_destroy(wl);
    return rc;
}

int bkm_wl_run(bkm_wl_t *wl, bkm_wl_sample_t *s, bkm_err_t *err)
{
    bkm_wl_sample_t tmp;
    int rc;
    if (!s)
        s = &tmp;
    memset(s, 0, sizeof *s);
    if ((rc = wl->e->run(wl, s, err)) < 0)
        return rc;
    if (wl->runs == 0)
        wl->first_loss = s->loss;
    wl->runs++;
    return BKM_OK;
}

int bkm_wl_check_value(bkm_wl_t *wl, double *value, bkm_err_t *err)
{
    if (wl->runs == 0)
        return bkm_err_set(err, BKM_EINVAL, "%s: no iteration has run yet, nothing to check", wl->e->info.name);
    return wl->e->check(wl, value, err);
}

int bkm_wl_check(bkm_wl_t *wl, bkm_buf_t *out, bkm_err_t *err)
{
    double v = 0.0;
    bkm_json_w_t w;
    int rc;
    if ((rc = bkm_wl_check_value(wl, &v, err)) < 0)
        return rc;
    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, wl->e->info.check_key);
    bkm_json_double(&w, v);
    bkm_json_obj_end(&w);
    return out->oom ? bkm_err_set(err, BKM_ENOMEM, "check: out of memory") : BKM_OK;
}

double bkm_wl_flops(const bkm_wl_t *wl)
{
    return wl->e->flops(wl);
}

const char *bkm_wl_impl(const bkm_wl_t *wl)
{
    return wl->impl;
}

const char *bkm_wl_name(const bkm_wl_t *wl)
{
    return wl->e->info.name;
}

int bkm_wl_layers_json(const bkm_wl_t *wl, bkm_buf_t *out)
{
    bkm_json_w_t w;
    if (!wl->e->layers_json)
        return 0;
    bkm_json_w_init(&w, out, 0);
    return wl->e->layers_json(wl, &w);
}

double bkm_wl_items_per_iter(const bkm_wl_t *wl, const char **unit)
{
    *unit = NULL;
    return wl->e->items ? wl->e->items(wl, unit) : 0.0;
}

void bkm_wl_params_json(const bkm_wl_t *wl, bkm_buf_t *out)
{
    bkm_json_w_t w;
    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    for (size_t i = 0; i < wl->n_params; i++) {
        bkm_json_key(&w, wl->params[i].name);
        if (wl->params[i].type == BKM_WL_INT)
            bkm_json_int(&w, bkm__wl_int(wl, wl->params[i].name));
        else
            bkm_json_str(&w, wl->vals[i]);
    }
    bkm_json_obj_end(&w);
}

void bkm_wl_destroy(bkm_wl_t *wl)
{
    if (!wl)
        return;
    if (wl->e && wl->priv)
        wl->e->destroy(wl);
    bkm_free(wl);
}

/* ---------------------------------------------------------------------------------------- */
/* Deterministic generators                                                                  */

uint64_t bkm__wl_hash(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL ^ (stream + 1) * 0xd1b54a32d192ed03ULL;
    z += i * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit(uint64_t h)
{
    return (double)(h >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
}

void bkm__wl_fill_uniform(float *p, size_t n, float bound, uint64_t seed, uint64_t stream)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((2.0 * unit(bkm__wl_hash(seed, stream, i)) - 1.0) * bound);
}

void bkm__wl_fill_normal(float *p, size_t n, uint64_t seed, uint64_t stream)
{
    const double two_pi = 6.283185307179586;
    for (size_t i = 0; i < n; i += 2) {
        double u1 = 1.0 - unit(bkm__wl_hash(seed, stream, i)); /* (0, 1] */
        double u2 = unit(bkm__wl_hash(seed, stream, i + 1));
        double r = sqrt(-2.0 * log(u1));
        p[i] = (float)(r * cos(two_pi * u2));
        if (i + 1 < n)
            p[i + 1] = (float)(r * sin(two_pi * u2));
    }
}
