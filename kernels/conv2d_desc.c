/* SPDX-License-Identifier: MIT */
/* conv2d problem descriptors: benchdnn grammar, named torchvision AlexNet layers, FLOP count. */
#include "bkm/kernels.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest accepted dimension and tensor size: keeps every index product inside int64_t. */
#define CONV_DIM_MAX   (1LL << 24)
#define CONV_ELEMS_MAX (1LL << 36)

/* torchvision AlexNet ("one weird trick" variant, docs/workloads.md §3): no groups, no LRN. */
static const struct {
    const char *name;
    int64_t ic, ih, oc, kh, sh, ph;
} alexnet_layers[] = {
    {"alexnet:conv1", 3, 224, 64, 11, 4, 2},
    {"alexnet:conv2", 64, 27, 192, 5, 1, 2},
    {"alexnet:conv3", 192, 13, 384, 3, 1, 1},
    {"alexnet:conv4", 384, 13, 256, 3, 1, 1},
    {"alexnet:conv5", 256, 13, 256, 3, 1, 1},
};
#define ALEXNET_MB_DEFAULT 128 /* the NERSC seed batch (docs/workloads.md §3) */

/* Which descriptor entries were written explicitly. */
enum { F_G, F_MB, F_IC, F_IH, F_IW, F_OC, F_OH, F_OW, F_KH, F_KW, F_SH, F_SW, F_PH, F_PW, F_COUNT };
static const char *const key_names[F_COUNT] = {"g", "mb", "ic", "ih", "iw", "oc", "oh",
                                               "ow", "kh", "kw", "sh", "sw", "ph", "pw"};

static int64_t *field_ptr(bkm_conv2d_desc_t *d, int f)
{
    int64_t *p[F_COUNT] = {&d->g, &d->mb, &d->ic, &d->ih, &d->iw, &d->oc, &d->oh,
                           &d->ow, &d->kh, &d->kw, &d->sh, &d->sw, &d->ph, &d->pw};
    return p[f];
}

/* Output size along one axis; may be <= 0 for impossible shapes. */
static int64_t out_size(int64_t i, int64_t k, int64_t s, int64_t p)
{
    int64_t span = i + 2 * p - k;
    return span < 0 ? 0 : span / s + 1;
}

/* Checks shared by parsed and named descriptors: positivity, groups, sizes, consistency. */
static int desc_check(const bkm_conv2d_desc_t *d, bkm_err_t *err)
{
    const int64_t pos[] = {d->g, d->mb, d->ic, d->ih, d->iw, d->oc, d->kh, d->kw, d->sh, d->sw};
    const int pos_f[] = {F_G, F_MB, F_IC, F_IH, F_IW, F_OC, F_KH, F_KW, F_SH, F_SW};
    for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
        if (pos[i] <= 0 || pos[i] > CONV_DIM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "conv2d: %s%lld is out of range (1..%lld)",
                               key_names[pos_f[i]], (long long)pos[i], CONV_DIM_MAX);
    if (d->ph < 0 || d->pw < 0 || d->ph > CONV_DIM_MAX || d->pw > CONV_DIM_MAX)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: padding ph%lld pw%lld is out of range",
                           (long long)d->ph, (long long)d->pw);
    if (d->ic % d->g != 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: groups g%lld do not divide ic%lld",
                           (long long)d->g, (long long)d->ic);
    if (d->oc % d->g != 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: groups g%lld do not divide oc%lld",
                           (long long)d->g, (long long)d->oc);
    if (d->oh <= 0 || d->ow <= 0)
        return bkm_err_set(err, BKM_EINVAL,
                           "conv2d: output size oh%lld ow%lld is not positive (ih%lld kh%lld sh%lld ph%lld, "
                           "iw%lld kw%lld sw%lld pw%lld)",
                           (long long)d->oh, (long long)d->ow, (long long)d->ih, (long long)d->kh,
                           (long long)d->sh, (long long)d->ph, (long long)d->iw, (long long)d->kw,
                           (long long)d->sw, (long long)d->pw);
    if (d->mb * d->ic > CONV_ELEMS_MAX / (d->ih * d->iw) || d->mb * d->oc > CONV_ELEMS_MAX / (d->oh * d->ow) ||
        d->oc * (d->ic / d->g) > CONV_ELEMS_MAX / (d->kh * d->kw))
        return bkm_err_set(err, BKM_EINVAL, "conv2d: tensors of mb%lld ic%lld oc%lld are too large",
                           (long long)d->mb, (long long)d->ic, (long long)d->oc);
    return BKM_OK;
}

static int named_layer(const char *text, int64_t mb_override, bkm_conv2d_desc_t *d, bkm_err_t *err)
{
    for (size_t i = 0; i < sizeof(alexnet_layers) / sizeof(alexnet_layers[0]); i++) {
        if (strcmp(text, alexnet_layers[i].name) != 0)
            continue;
        memset(d, 0, sizeof(*d));
        d->mb = mb_override > 0 ? mb_override : ALEXNET_MB_DEFAULT;
        d->g = 1;
        d->ic = alexnet_layers[i].ic;
        d->ih = d->iw = alexnet_layers[i].ih;
        d->oc = alexnet_layers[i].oc;
        d->kh = d->kw = alexnet_layers[i].kh;
        d->sh = d->sw = alexnet_layers[i].sh;
        d->ph = d->pw = alexnet_layers[i].ph;
        d->oh = d->ow = out_size(d->ih, d->kh, d->sh, d->ph);
        d->has_bias = 1;
        snprintf(d->name, sizeof(d->name), "%s", text);
        return desc_check(d, err);
    }
    return bkm_err_set(err, BKM_EINVAL, "conv2d: unknown layer '%s' (known: alexnet:conv1 .. alexnet:conv5)", text);
}

/* Parse n"name" or nNAME (to the end); returns the position after it. */
static const char *parse_name(const char *p, bkm_conv2d_desc_t *d, bkm_err_t *err, int *rc)
{
    const char *start, *end;
    p++; /* 'n' */
    if (*p == '"') {
        start = ++p;
        end = strchr(p, '"');
        if (end == NULL) {
            *rc = bkm_err_set(err, BKM_EINVAL, "conv2d: unterminated name 'n\"%s'", start);
            return p;
        }
        p = end + 1;
    } else {
        start = p;
        end = p + strlen(p);
        p = end;
    }
    if ((size_t)(end - start) >= sizeof(d->name)) {
        *rc = bkm_err_set(err, BKM_EINVAL, "conv2d: name '%.*s' is longer than %zu characters", (int)(end - start),
                          start, sizeof(d->name) - 1);
        return p;
    }
    memcpy(d->name, start, (size_t)(end - start));
    d->name[end - start] = '\0';
    *rc = BKM_OK;
    return p;
}

int bkm_kern_conv2d_desc_parse(const char *text, int64_t mb_override, bkm_conv2d_desc_t *d, bkm_err_t *err)
{
    bkm_conv2d_desc_t t;
    int given[F_COUNT] = {0};
    const char *p;
    int rc = BKM_OK;

    if (text == NULL || d == NULL)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: no descriptor given");
    if (mb_override < 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: batch override %lld is negative", (long long)mb_override);
    if (strncmp(text, "alexnet:", 8) == 0)
        return named_layer(text, mb_override, d, err);

    memset(&t, 0, sizeof(t));
    t.g = 1;
    t.mb = 2;
    t.sh = t.sw = 1;
    t.has_bias = 1;
    p = text;
    while (*p != '\0') {
        const char *key = p, *num;
        char *end = NULL;
        long long v;
        int f = -1;
        size_t klen;

        if (*p == '_' || *p == ' ') {
            p++;
            continue;
        }
        if (*p == 'n' && !(p[1] >= 'a' && p[1] <= 'z')) {
            p = parse_name(p, &t, err, &rc);
            if (rc != BKM_OK)
                return rc;
            continue;
        }
        while (*p >= 'a' && *p <= 'z')
            p++;
        klen = (size_t)(p - key);
        num = p;
        if (klen == 0 || !isdigit((unsigned char)*num))
            return bkm_err_set(err, BKM_EINVAL, "conv2d: cannot parse '%s' in descriptor '%s' (expected e.g. ic64)",
                               key, text);
        errno = 0;
        v = strtoll(num, &end, 10);
        p = end;
        if (errno != 0 || v > CONV_DIM_MAX)
            return bkm_err_set(err, BKM_EINVAL, "conv2d: value of '%.*s' is too large", (int)(p - key), key);
        if (klen == 2 && key[0] == 'd' && (key[1] == 'h' || key[1] == 'w'))
            return bkm_err_set(err, BKM_EINVAL, "conv2d: dilation '%.*s' is not supported (remove it)",
                               (int)(p - key), key);
        if (klen == 2 && (key[0] == 'i' || key[0] == 'o' || key[0] == 'k' || key[0] == 's' || key[0] == 'p' ||
                          key[0] == 'd') && key[1] == 'd')
            return bkm_err_set(err, BKM_EINVAL, "conv2d: '%.*s' makes it a 3-D problem; conv2d is 2-D only",
                               (int)(p - key), key);
        for (int i = 0; i < F_COUNT; i++)
            if (strlen(key_names[i]) == klen && strncmp(key_names[i], key, klen) == 0)
                f = i;
        if (f < 0)
            return bkm_err_set(err, BKM_EINVAL, "conv2d: unknown entry '%.*s' in descriptor '%s'", (int)(p - key),
                               key, text);
        if (given[f])
            return bkm_err_set(err, BKM_EINVAL, "conv2d: entry '%.*s' is given twice", (int)(p - key), key);
        given[f] = 1;
        *field_ptr(&t, f) = v;
    }

    if (!given[F_IC] || !given[F_OC] || !given[F_IH] || !given[F_KH])
        return bkm_err_set(err, BKM_EINVAL, "conv2d: descriptor '%s' lacks %s", text,
                           !given[F_IC] ? "ic" : !given[F_OC] ? "oc" : !given[F_IH] ? "ih" : "kh");
    /* Missing w entries copy h (square problem); outputs and padding are deduced. */
    if (!given[F_IW])
        t.iw = t.ih;
    if (!given[F_KW])
        t.kw = t.kh;
    if (!given[F_SW])
        t.sw = t.sh;
    if (t.sh <= 0 || t.sw <= 0)
        return bkm_err_set(err, BKM_EINVAL, "conv2d: stride sh%lld sw%lld must be positive", (long long)t.sh,
                           (long long)t.sw);
    if (!given[F_PH])
        t.ph = given[F_OH] ? ((t.oh - 1) * t.sh - t.ih + t.kh) / 2 : 0;
    if (t.ph < 0)
        t.ph = 0;
    if (!given[F_PW]) {
        if (given[F_OW])
            t.pw = ((t.ow - 1) * t.sw - t.iw + t.kw) / 2;
        else if (given[F_OH] && !given[F_IW] && !given[F_KW] && !given[F_SW])
            t.pw = t.ph; /* fully square problem */
        else
            t.pw = given[F_PH] ? t.ph : 0;
    }
    if (t.pw < 0)
        t.pw = 0;
    {
        int64_t oh = out_size(t.ih, t.kh, t.sh, t.ph), ow = out_size(t.iw, t.kw, t.sw, t.pw);
        if (given[F_OH] && t.oh != oh)
            return bkm_err_set(err, BKM_EINVAL,
                               "conv2d: oh%lld is inconsistent with ih%lld kh%lld sh%lld ph%lld (expected oh%lld)",
                               (long long)t.oh, (long long)t.ih, (long long)t.kh, (long long)t.sh, (long long)t.ph,
                               (long long)oh);
        if (given[F_OW] && t.ow != ow)
            return bkm_err_set(err, BKM_EINVAL,
                               "conv2d: ow%lld is inconsistent with iw%lld kw%lld sw%lld pw%lld (expected ow%lld)",
                               (long long)t.ow, (long long)t.iw, (long long)t.kw, (long long)t.sw, (long long)t.pw,
                               (long long)ow);
        t.oh = oh;
        t.ow = ow;
    }
    if (mb_override > 0)
        t.mb = mb_override;
    rc = desc_check(&t, err);
    if (rc != BKM_OK)
        return rc;
    *d = t;
    return BKM_OK;
}

void bkm_kern_conv2d_desc_format(const bkm_conv2d_desc_t *d, bkm_buf_t *out)
{
    bkm_buf_printf(out, "mb%lld_g%lldic%lldoc%lld_ih%lldoh%lldkh%lldsh%lldph%lld_iw%lldow%lldkw%lldsw%lldpw%lld",
                   (long long)d->mb, (long long)d->g, (long long)d->ic, (long long)d->oc, (long long)d->ih,
                   (long long)d->oh, (long long)d->kh, (long long)d->sh, (long long)d->ph, (long long)d->iw,
                   (long long)d->ow, (long long)d->kw, (long long)d->sw, (long long)d->pw);
    if (d->name[0] != '\0')
        bkm_buf_printf(out, "_n\"%s\"", d->name);
}

double bkm_kern_conv2d_flops(const bkm_conv2d_desc_t *d)
{
    return 2.0 * (double)d->mb * (double)d->oc * (double)(d->ic / d->g) * (double)d->kh * (double)d->kw *
           (double)d->oh * (double)d->ow;
}
