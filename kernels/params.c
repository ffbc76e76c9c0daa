/* SPDX-License-Identifier: MIT */
/* Tunable parameter sets (--param key=value): building one, reading one value, and resolving one
 * against a kernel's published descriptors (bounds and multiple-of rules). */
#include "kernels_int.h"

#include <string.h>

void bkm_kern_params_init(bkm_kern_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->isa = BKM_ISA_AUTO;
}

int bkm_kern_params_add(bkm_kern_params_t *p, const char *kv, bkm_err_t *err)
{
    const char *eq;
    size_t klen;
    long long v;
    if (p == NULL || kv == NULL)
        return bkm_err_set(err, BKM_EINVAL, "param: NULL argument");
    eq = strchr(kv, '=');
    if (eq == NULL || eq == kv)
        return bkm_err_set(err, BKM_EINVAL, "param '%s' is not key=value", kv);
    klen = (size_t)(eq - kv);
    if (klen >= sizeof(p->kv[0].key))
        return bkm_err_set(err, BKM_EINVAL, "param key '%.*s' is too long", (int)klen, kv);
    if (klen == 3 && strncmp(kv, "isa", 3) == 0)
        return bkm_kern_isa_parse(eq + 1, &p->isa, err);
    if (bkm_parse_int(eq + 1, INT32_MIN, INT32_MAX, &v) != BKM_OK)
        return bkm_err_set(err, BKM_EINVAL, "param %.*s='%s' is not an integer", (int)klen, kv, eq + 1);
    for (int i = 0; i < p->n; i++)
        if (strlen(p->kv[i].key) == klen && strncmp(p->kv[i].key, kv, klen) == 0)
            return bkm_err_set(err, BKM_EINVAL, "param '%.*s' is given twice", (int)klen, kv);
    if (p->n >= (int)(sizeof(p->kv) / sizeof(p->kv[0])))
        return bkm_err_set(err, BKM_EINVAL, "param '%s': too many parameters (at most %zu)", kv,
                           sizeof(p->kv) / sizeof(p->kv[0]));
    memcpy(p->kv[p->n].key, kv, klen);
    p->kv[p->n].key[klen] = '\0';
    p->kv[p->n].value = (int32_t)v;
    p->n++;
    return BKM_OK;
}

int32_t bkm__kern_params_value(const bkm_kern_params_t *p, const char *key, int32_t def)
{
    for (int i = 0; p != NULL && i < p->n; i++)
        if (strcmp(p->kv[i].key, key) == 0)
            return p->kv[i].value;
    return def;
}

int bkm_kern_params_resolve(const bkm_kern_params_t *p, const bkm_param_desc_t *desc, size_t n_desc, int32_t *vals,
                            bkm_err_t *err)
{
    for (size_t i = 0; i < n_desc; i++)
        vals[i] = desc[i].def;
    if (p == NULL)
        return BKM_OK;
    for (int j = 0; j < p->n; j++) {
        const char *key = p->kv[j].key;
        const int32_t v = p->kv[j].value;
        size_t i;
        for (i = 0; i < n_desc; i++)
            if (strcmp(desc[i].name, key) == 0)
                break;
        if (i == n_desc) {
            bkm_buf_t known = {0};
            int rc;
            for (size_t k = 0; k < n_desc; k++)
                bkm_buf_printf(&known, "%s%s", k ? ", " : "", desc[k].name);
            rc = bkm_err_set(err, BKM_EINVAL, "unknown parameter %s=%d (known: %s)", key, (int)v,
                             n_desc ? bkm_buf_str(&known) : "none");
            bkm_buf_free(&known);
            return rc;
        }
        if (v < desc[i].min || v > desc[i].max)
            return bkm_err_set(err, BKM_EINVAL, "parameter %s=%d is out of range [%d, %d]", key, (int)v,
                               (int)desc[i].min, (int)desc[i].max);
        if (desc[i].mult_of > 1 && v % desc[i].mult_of != 0)
            return bkm_err_set(err, BKM_EINVAL, "parameter %s=%d is not a multiple of %d", key, (int)v,
                               (int)desc[i].mult_of);
        vals[i] = v;
    }
    return BKM_OK;
}
