/* SPDX-License-Identifier: MIT */
/* key=value pairs: one shape and one limit for every layer. */
#include <string.h>

#include "bkm/common.h"

int bkm_kv_set(bkm_kv_t *kv, const char *key, size_t key_len, const char *value, const char *what,
               bkm_err_t *err)
{
    size_t vlen = value ? strlen(value) : 0;
    if (key == NULL || key_len == 0 || key_len >= sizeof kv->key)
        return bkm_err_set(err, BKM_EINVAL, "%s name '%.*s' must be 1-%zu characters", what,
                           key ? (int)key_len : 0, key ? key : "", sizeof kv->key - 1);
    if (vlen >= sizeof kv->value)
        return bkm_err_set(err, BKM_EINVAL, "%s %.*s: value '%.60s...' is longer than %zu characters", what,
                           (int)key_len, key, value, sizeof kv->value - 1);
    memcpy(kv->key, key, key_len);
    kv->key[key_len] = '\0';
    memcpy(kv->value, value ? value : "", vlen + 1);
    return BKM_OK;
}

int bkm_kv_parse(bkm_kv_t *kv, const char *text, const char *what, bkm_err_t *err)
{
    const char *eq = text ? strchr(text, '=') : NULL;
    if (eq == NULL)
        return bkm_err_set(err, BKM_EINVAL, "%s '%s' is not key=value", what, text ? text : "(null)");
    return bkm_kv_set(kv, text, (size_t)(eq - text), eq + 1, what, err);
}

int bkm_kv_find(const bkm_kv_t *tab, int n, const char *key, size_t key_len)
{
    for (int i = 0; i < n; i++)
        if (strlen(tab[i].key) == key_len && strncmp(tab[i].key, key, key_len) == 0)
            return i;
    return -1;
}
