/* SPDX-License-Identifier: MIT */
/* Unit tests of common/: errors, buffers, JSON writer and reader, CPU sets, number parsing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/common.h"

START_TEST(err_names_value_and_maps_exit_codes)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_err_set(&err, BKM_EINVAL, "bad value '%s'", "xyz"), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "bad value 'xyz'");
    bkm_err_prefix(&err, "--threads");
    ck_assert_str_eq(err.msg, "--threads: bad value 'xyz'");
    ck_assert_int_eq(bkm_status_exit_code(BKM_EINVAL), 2);
    ck_assert_int_eq(bkm_status_exit_code(BKM_EIO), 3);
    ck_assert_int_eq(bkm_status_exit_code(BKM_ECORRUPT), 3);
    ck_assert_int_eq(bkm_status_exit_code(BKM_EFAIL), 1);
    ck_assert_int_eq(bkm_status_exit_code(BKM_OK), 0);
    ck_assert_str_eq(bkm_strerror(BKM_ENOMEM), "out of memory");
    ck_assert_int_eq(bkm_err_set(NULL, BKM_EIO, "x"), BKM_EIO);
}
END_TEST

START_TEST(clock_is_monotonic)
{
    uint64_t a = bkm_now_ns(), b = bkm_now_ns();
    ck_assert_uint_ge(b, a);
    ck_assert_uint_gt(bkm_clock_resolution_ns(), 0);
    char iso[32];
    bkm_utc_iso8601(iso, sizeof iso);
    ck_assert_int_eq(strlen(iso), 20);
    ck_assert_int_eq(iso[19], 'Z');
}
END_TEST

START_TEST(buf_grows)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    ck_assert_str_eq(bkm_buf_str(&b), "");
    for (int i = 0; i < 1000; i++)
        bkm_buf_printf(&b, "%d,", i);
    ck_assert_uint_gt(b.len, 3000);
    ck_assert(strncmp(b.data, "0,1,2,", 6) == 0);
    char *s = bkm_buf_take(&b);
    ck_assert_ptr_null(b.data);
    ck_assert(strstr(s, "999,") != NULL);
    free(s);
}
END_TEST

START_TEST(json_writer_round_trips)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "threads");
    bkm_json_int(&w, 2);
    bkm_json_key(&w, "plan");
    bkm_json_arr_begin(&w);
    for (int t = 0; t < 2; t++) {
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "thread");
        bkm_json_int(&w, t);
        bkm_json_key(&w, "cpus");
        bkm_json_arr_begin(&w);
        bkm_json_int(&w, t);
        bkm_json_arr_end(&w);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "name");
    bkm_json_str(&w, "a\"b\\c\n\x01");
    bkm_json_key(&w, "nan");
    bkm_json_double(&w, 0.0 / 0.0);
    bkm_json_key(&w, "x");
    bkm_json_double(&w, 1.5);
    bkm_json_key(&w, "empty");
    bkm_json_arr_begin(&w);
    bkm_json_arr_end(&w);
    bkm_json_obj_end(&w);
    ck_assert_str_eq(bkm_buf_str(&b),
                     "{\"threads\":2,\"plan\":[{\"thread\":0,\"cpus\":[0]},{\"thread\":1,\"cpus\":[1]}],"
                     "\"name\":\"a\\\"b\\\\c\\n\\u0001\",\"nan\":null,\"x\":1.5,\"empty\":[]}");
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, &err), BKM_OK);
    ck_assert_double_eq(bkm_json_get_num(j, "threads", -1), 2);
    const bkm_json_t *plan = bkm_json_get(j, "plan");
    ck_assert_ptr_nonnull(plan);
    ck_assert_uint_eq(plan->n_children, 2);
    ck_assert_double_eq(bkm_json_at(bkm_json_get(bkm_json_at(plan, 1), "cpus"), 0)->num, 1);
    ck_assert_str_eq(bkm_json_get_str(j, "name"), "a\"b\\c\n\x01");
    ck_assert_int_eq(bkm_json_get(j, "nan")->type, BKM_JSON_NULL);
    ck_assert_uint_eq(bkm_json_get(j, "empty")->n_children, 0);
    bkm_json_free(j);
    bkm_buf_free(&b);
}
END_TEST

START_TEST(json_pretty_is_valid)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "a");
    bkm_json_arr_begin(&w);
    bkm_json_int(&w, 1);
    bkm_json_bool(&w, 1);
    bkm_json_null(&w);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "o");
    bkm_json_obj_begin(&w);
    bkm_json_obj_end(&w);
    bkm_json_obj_end(&w);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, NULL), BKM_OK);
    ck_assert_int_eq(bkm_json_at(bkm_json_get(j, "a"), 1)->boolean, 1);
    bkm_json_free(j);
    bkm_buf_free(&b);
}
END_TEST

START_TEST(json_tree_writes_back_what_was_parsed)
{
    /* Compact canonical input: writing the parsed tree back must give the same bytes. */
    static const char *const docs[] = {
        ("{\"threads\":2,\"plan\":[{\"thread\":0,\"cpus\":[0,1]},{}],\"name\":\"a\\\"b\\\\c\\n\\u0001\","
         "\"x\":1.5,\"neg\":-3,\"t\":true,\"f\":false,\"n\":null,\"empty\":[],\"big\":1e+20}"),
        "[]",
        "\"s\"",
        "-0.25",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        bkm_buf_t b;
        bkm_json_w_t w;
        bkm_json_t *j = NULL;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_json_parse(docs[i], &j, &err), BKM_OK);
        bkm_buf_init(&b);
        bkm_json_w_init(&w, &b, 0);
        bkm_json_write_tree(&w, j);
        ck_assert_str_eq(bkm_buf_str(&b), docs[i]);
        bkm_json_free(j);
        bkm_buf_free(&b);
    }
    /* Inside a writer scope the tree is one value: commas and keys still placed by the writer. */
    {
        bkm_buf_t b;
        bkm_json_w_t w;
        bkm_json_t *j = NULL;
        ck_assert_int_eq(bkm_json_parse("{\"k\":[1,2.5]}", &j, NULL), BKM_OK);
        bkm_buf_init(&b);
        bkm_json_w_init(&w, &b, 0);
        bkm_json_arr_begin(&w);
        bkm_json_int(&w, 7);
        bkm_json_write_tree(&w, j);
        bkm_json_write_tree(&w, bkm_json_get(j, "k"));
        bkm_json_arr_end(&w);
        ck_assert_str_eq(bkm_buf_str(&b), "[7,{\"k\":[1,2.5]},[1,2.5]]");
        bkm_json_free(j);
        bkm_buf_free(&b);
    }
}
END_TEST

START_TEST(json_reader_rejects_garbage)
{
    const char *bad[] = {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1}x", "\"abc", "tru", "[1 2]", "{1:2}", "\"\\q\"", "-"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bkm_json_t *j = (bkm_json_t *)1;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_json_parse(bad[i], &j, &err), BKM_EINVAL);
        ck_assert_ptr_null(j);
        ck_assert(strstr(err.msg, "byte") != NULL);
    }
    /* deep nesting is refused, not a stack overflow */
    char deep[400];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    bkm_json_t *j = NULL;
    ck_assert_int_eq(bkm_json_parse(deep, &j, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_json_parse(" {\"u\":\"\\u00e9\", \"n\":-1.5e3} ", &j, NULL), BKM_OK);
    ck_assert_str_eq(bkm_json_get_str(j, "u"), "\xc3\xa9");
    ck_assert_double_eq(bkm_json_get_num(j, "n", 0), -1500.0);
    bkm_json_free(j);
}
END_TEST

/* A strict UTF-8 validator written independently of common/json.c: decode each code point and
 * check it against RFC 3629 (shortest form, no surrogates, at most U+10FFFF). */
static int strict_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp, len;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
            len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
            len = 4, cp = c & 0x07;
        else
            return 0;
        if (i + len > n)
            return 0;
        for (unsigned k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

/* @p in written as a JSON string: valid UTF-8, no raw control character, parses back. */
static void check_escaped(const char *in, size_t n, bkm_buf_t *b)
{
    char s[512];
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    ck_assert_uint_lt(n, sizeof s);
    memcpy(s, in, n);
    s[n] = '\0';
    bkm_buf_init(b);
    bkm_json_escape(b, s);
    ck_assert_msg(strict_utf8((const unsigned char *)b->data, b->len), "invalid UTF-8 written for input of %zu bytes",
                  n);
    size_t ctl = 0;   /* counted, then asserted once: every Check assertion writes to a pipe */
    for (size_t i = 0; i < b->len; i++)
        ctl += (unsigned char)b->data[i] < 0x20 || b->data[i] == 0x7F;
    ck_assert_msg(ctl == 0, "%zu raw control bytes written: %s", ctl, b->data);
    ck_assert_msg(bkm_json_parse(b->data, &j, &err) == BKM_OK, "%s: %s", err.msg, b->data);
    ck_assert_int_eq(j->type, BKM_JSON_STR);
    ck_assert(strict_utf8((const unsigned char *)j->str, strlen(j->str)));
    if (strict_utf8((const unsigned char *)s, strlen(s)))   /* valid text comes back unchanged */
        ck_assert_str_eq(j->str, s);
    bkm_json_free(j);
}

START_TEST(json_writer_output_is_valid_utf8)
{
    static const struct {
        const char *in, *out;   /* out: the JSON literal expected */
    } cases[] = {
        {"plain", "\"plain\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},  /* é € 😀 kept */
        {"a\xc0\xaf" "b", "\"a\xef\xbf\xbd\xef\xbf\xbd" "b\""},                   /* overlong '/' */
        {"\xe0\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},           /* overlong, 3 bytes */
        {"\xf0\x80\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
        {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},           /* surrogate U+D800 */
        {"x\xe2\x82", "\"x\xef\xbf\xbd\""},                                       /* truncated at the end */
        {"\xf0\x9f\x98" "A", "\"\xef\xbf\xbd" "A\""},                             /* truncated before ASCII */
        {"\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* above U+10FFFF */
        {"\xf5\xff\xfe", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
        {"\x80" "z", "\"\xef\xbf\xbd" "z\""},                                     /* stray continuation */
        {"\x01\x1f\x7f\t", "\"\\u0001\\u001f\\u007f\\t\""},                       /* control characters */
    };
    bkm_buf_t b;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_escaped(cases[i].in, strlen(cases[i].in), &b);
        ck_assert_msg(strcmp(b.data, cases[i].out) == 0, "case %zu: got %s", i, b.data);
        ck_assert_int_eq(bkm_utf8_valid(cases[i].in, strlen(cases[i].in)),
                         strict_utf8((const unsigned char *)cases[i].in, strlen(cases[i].in)));
        bkm_buf_free(&b);
    }
    /* every byte value, and seeded random byte strings biased to UTF-8 lead/continuation bytes */
    for (unsigned c = 1; c < 256; c++) {
        char one[2] = {(char)c, 0};
        check_escaped(one, 1, &b);
        bkm_buf_free(&b);
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int agree = 0, repaired = 0, n_valid = 0;
    for (int round = 0; round < 4000; round++) {
        unsigned char s[24];
        size_t n = 1 + round % 23;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = (unsigned char)(x % 3 == 0   ? 0x80 + (x >> 8) % 64
                                   : x % 3 == 1 ? 0xC0 + (x >> 8) % 64
                                                : 1 + (x >> 8) % 255);
            if (s[i] == 0)
                s[i] = 'a';
        }
        check_escaped((const char *)s, n, &b);
        bkm_buf_free(&b);
        agree += bkm_utf8_valid((const char *)s, n) == strict_utf8(s, n);
        n_valid += strict_utf8(s, n);
        /* the buffer form too, as raw JSON gets it */
        bkm_buf_init(&b);
        bkm_buf_append_utf8(&b, (const char *)s, n);
        repaired += strict_utf8((const unsigned char *)b.data, b.len);
        bkm_buf_free(&b);
    }
    ck_assert_int_eq(agree, 4000);
    ck_assert_int_eq(repaired, 4000);
    ck_assert_msg(n_valid > 20 && n_valid < 3980, "%d of 4000 random strings valid: not a mix", n_valid);
    /* keys and raw JSON (e.g. a configuration read back from a database) are repaired as well */
    {
        bkm_json_w_t w;
        bkm_json_t *j = NULL;
        bkm_buf_init(&b);
        bkm_json_w_init(&w, &b, 1);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "host\xff");
        bkm_json_str(&w, "nid\xc3(");
        bkm_json_key(&w, "raw");
        bkm_json_raw(&w, "{\"k\":\"\xed\xb0\x80\"}");
        bkm_json_obj_end(&w);
        ck_assert(strict_utf8((const unsigned char *)b.data, b.len));
        ck_assert_int_eq(bkm_json_parse(b.data, &j, NULL), BKM_OK);
        ck_assert_str_eq(bkm_json_get_str(j, "host\xef\xbf\xbd"), "nid\xef\xbf\xbd(");
        bkm_json_free(j);
        bkm_buf_free(&b);
    }
}
END_TEST

START_TEST(json_reader_numbers_and_escapes)
{
    static const char *const bad[] = {"NaN", "-NaN", "Infinity", "-Infinity", "inf", "-inf", "-nan", "0x10",
                                      "+1", "01", "1.", ".5", "1e", "1e+", "[1,NaN]", "{\"a\":-Infinity}"};
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(bkm_json_parse(bad[i], &j, &err) == BKM_EINVAL, "'%s' accepted", bad[i]);
        ck_assert_ptr_null(j);
    }
    ck_assert_int_eq(bkm_json_parse("[1,NaN]", &j, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, "non-finite number 'NaN'") != NULL, "%s", err.msg);
    /* beyond a double: +-inf, for the caller to refuse (a worker's sample, for one) */
    ck_assert_int_eq(bkm_json_parse("[1e999,-1e999,0,-0.5e-3,2E+2]", &j, &err), BKM_OK);
    ck_assert(isinf(bkm_json_at(j, 0)->num) && bkm_json_at(j, 0)->num > 0);
    ck_assert(isinf(bkm_json_at(j, 1)->num) && bkm_json_at(j, 1)->num < 0);
    ck_assert_double_eq(bkm_json_at(j, 3)->num, -0.0005);
    ck_assert_double_eq(bkm_json_at(j, 4)->num, 200);
    bkm_json_free(j);
    /* a surrogate pair is one code point; a lone surrogate is U+FFFD, never CESU-8 */
    ck_assert_int_eq(bkm_json_parse("[\"\\ud83d\\ude00\",\"a\\ud800b\",\"\\udc00\"]", &j, &err), BKM_OK);
    ck_assert_str_eq(bkm_json_at(j, 0)->str, "\xf0\x9f\x98\x80");
    ck_assert_str_eq(bkm_json_at(j, 1)->str, "a\xef\xbf\xbd" "b");
    ck_assert_str_eq(bkm_json_at(j, 2)->str, "\xef\xbf\xbd");
    bkm_json_free(j);
}
END_TEST

START_TEST(cpuset_format_and_parse)
{
    bkm_cpuset_t s, t;
    bkm_buf_t b;
    bkm_err_t err = {0};
    bkm_buf_init(&b);
    bkm_cpuset_zero(&s);
    ck_assert_int_eq(bkm_cpuset_first(&s), -1);
    bkm_cpuset_format(&s, &b);
    ck_assert_str_eq(bkm_buf_str(&b), "");
    int cpus[] = {0, 1, 2, 3, 8, 63, 64, 65, 271};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        ck_assert_int_eq(bkm_cpuset_set(&s, cpus[i]), BKM_OK);
    ck_assert_int_eq(bkm_cpuset_set(&s, BKM_CPUSET_MAX), BKM_EINVAL);
    ck_assert_int_eq(bkm_cpuset_count(&s), 9);
    bkm_cpuset_format(&s, &b);
    ck_assert_str_eq(bkm_buf_str(&b), "0-3,8,63-65,271");
    ck_assert_int_eq(bkm_cpuset_parse(&t, " 0-3, 8 ,63-65,271", &err), BKM_OK);
    ck_assert(bkm_cpuset_equal(&s, &t));
    ck_assert_int_eq(bkm_cpuset_next(&s, 8), 63);
    ck_assert_int_eq(bkm_cpuset_parse(&t, "0-x", &err), BKM_EINVAL);
    ck_assert(strstr(err.msg, "0-x") != NULL);
    ck_assert_int_eq(bkm_cpuset_parse(&t, "3-1", &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_cpuset_parse(&t, "99999", &err), BKM_EINVAL);
    bkm_buf_free(&b);
}
END_TEST

START_TEST(kv_one_limit)
{
    char key[BKM_KV_KEY_MAX + 1], val[BKM_KV_VALUE_MAX + 1], text[BKM_KV_KEY_MAX + BKM_KV_VALUE_MAX + 2];
    bkm_kv_t kv, tab[2];
    bkm_err_t err = {0};
    memset(key, 'k', sizeof key - 1), key[sizeof key - 1] = '\0';
    memset(val, 'v', sizeof val - 1), val[sizeof val - 1] = '\0';
    /* the longest key (63) and value (255) pass, one more character of either does not */
    ck_assert_int_eq(bkm_kv_set(&kv, key, BKM_KV_KEY_MAX - 1, val + 1, "parameter", &err), BKM_OK);
    ck_assert_uint_eq(strlen(kv.key), BKM_KV_KEY_MAX - 1);
    ck_assert_uint_eq(strlen(kv.value), BKM_KV_VALUE_MAX - 1);
    ck_assert_int_eq(bkm_kv_set(&kv, key, BKM_KV_KEY_MAX, "1", "parameter", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1-63 characters"));
    ck_assert_int_eq(bkm_kv_set(&kv, "m", 1, val, "parameter", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "longer than 255"));
    ck_assert_int_eq(bkm_kv_set(&kv, "", 0, "1", "parameter", &err), BKM_EINVAL);
    snprintf(text, sizeof text, "%.*s=%s", BKM_KV_KEY_MAX - 1, key, val + 1);
    ck_assert_int_eq(bkm_kv_parse(&kv, text, "parameter", &err), BKM_OK);
    ck_assert_str_eq(kv.value, val + 1);
    ck_assert_int_eq(bkm_kv_parse(&kv, "m=a=b", "parameter", &err), BKM_OK);  /* the first '=' splits */
    ck_assert_str_eq(kv.key, "m");
    ck_assert_str_eq(kv.value, "a=b");
    ck_assert_int_eq(bkm_kv_parse(&kv, "m=", "parameter", &err), BKM_OK);
    ck_assert_str_eq(kv.value, "");
    ck_assert_int_eq(bkm_kv_parse(&kv, "novalue", "parameter", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'novalue' is not key=value"));
    ck_assert_int_eq(bkm_kv_parse(&kv, "=3", "parameter", &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_kv_parse(&tab[0], "m=1", "parameter", &err), BKM_OK);
    ck_assert_int_eq(bkm_kv_parse(&tab[1], "mc=2", "parameter", &err), BKM_OK);
    ck_assert_int_eq(bkm_kv_find(tab, 2, "mc=9", 2), 1);
    ck_assert_int_eq(bkm_kv_find(tab, 2, "m", 1), 0);
    ck_assert_int_eq(bkm_kv_find(tab, 2, "n", 1), -1);
    ck_assert_int_eq(bkm_kv_find(tab, 0, "m", 1), -1);
}
END_TEST

START_TEST(trial_status_names)
{
    static const char *const names[] = {"ok", "crashed", "timeout", "failed", "binding-mismatch"};
    bkm_err_t err = {0};
    int st;
    ck_assert_int_eq(BKM_TRIAL_N_STORED, 5);
    for (int i = 0; i < BKM_TRIAL_N_STORED; i++) {
        ck_assert_str_eq(bkm_trial_status_name(i), names[i]);
        ck_assert_int_eq(bkm_trial_status_stored(i), 1);
        st = -1;
        ck_assert_int_eq(bkm_trial_status_parse(names[i], &st, &err), BKM_OK);
        ck_assert_int_eq(st, i);
    }
    /* interrupted has a name but is not a stored result */
    ck_assert_str_eq(bkm_trial_status_name(BKM_TRIAL_INTERRUPTED), "interrupted");
    ck_assert_int_eq(bkm_trial_status_stored(BKM_TRIAL_INTERRUPTED), 0);
    ck_assert_int_eq(bkm_trial_status_parse("interrupted", &st, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "interrupted"));
    ck_assert_ptr_null(bkm_trial_status_name(-1));
    ck_assert_ptr_null(bkm_trial_status_name(BKM_TRIAL_INTERRUPTED + 1));
    ck_assert_int_eq(bkm_trial_status_stored(-1), 0);
    ck_assert_int_eq(bkm_trial_status_parse(NULL, &st, &err), BKM_EINVAL);
}
END_TEST

START_TEST(strict_numbers)
{
    long long v;
    double d;
    ck_assert_int_eq(bkm_parse_int("42", 0, 100, &v), BKM_OK);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(bkm_parse_int("42x", 0, 100, &v), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_int(" 4", 0, 100, &v), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_int("101", 0, 100, &v), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_int("", 0, 100, &v), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_int("99999999999999999999999", 0, 100, &v), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_double("1e-3", &d), BKM_OK);
    ck_assert_double_eq(d, 1e-3);
    ck_assert_int_eq(bkm_parse_double("nan", &d), BKM_EINVAL);
    ck_assert_int_eq(bkm_parse_double("1.0.0", &d), BKM_EINVAL);
}
END_TEST

/* A temporary folder holding a regular file, a FIFO and a sparse file over a small limit. */
static char dir[64];
static void files_setup(void)
{
    char p[128];
    FILE *f;
    snprintf(dir, sizeof dir, "/tmp/bkm_test_file_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/ok.txt", dir);
    ck_assert_ptr_nonnull(f = fopen(p, "w"));
    fputs("hello\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    snprintf(p, sizeof p, "%s/big", dir);
    {
        int fd = open(p, O_WRONLY | O_CREAT, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, 4097), 0);
        close(fd);
    }
}
static void files_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void expect_refused(const char *name, size_t limit, const char *needle)
{
    char p[128], *data = (char *)1;
    size_t len = 7;
    int fd = 5;
    bkm_err_t err = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    ck_assert_int_eq(bkm_file_read_regular(p, "test input", limit, &data, &len, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, needle) && strstr(err.msg, "test input"), "'%s' not named in: %s", needle,
                  err.msg);
    ck_assert_ptr_null(data);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(bkm_file_open_regular(p, "test input", limit, &fd, &err), BKM_EINVAL);
    ck_assert_int_eq(fd, -1);
}

/* Only regular files are read, never more than the limit; a FIFO without a writer does not
 * block (the test's timeout catches a hang). */
START_TEST(file_read_regular_bounded)
{
    char p[128], *data = NULL;
    size_t len = 0;
    bkm_err_t err = {0};
    snprintf(p, sizeof p, "%s/ok.txt", dir);
    ck_assert_int_eq(bkm_file_read_regular(p, "test input", 6, &data, &len, &err), BKM_OK);
    ck_assert_uint_eq(len, 6);
    ck_assert_str_eq(data, "hello\n");
    bkm_free(data);
    expect_refused("ok.txt", 5, "limit of 5 bytes");
    expect_refused("fifo", 1 << 20, "not a regular file (a FIFO)");
    expect_refused(".", 1 << 20, "a directory");
    expect_refused("big", 4096, "4097 bytes, more than the limit of 4 KiB");
    expect_refused("missing", 4096, "No such file");
    ck_assert_int_eq(bkm_file_read_regular("/dev/zero", "test input", 1 << 20, &data, &len, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "character device"));
    ck_assert_int_eq(bkm_file_read_regular("", "test input", 1, &data, &len, &err), BKM_EINVAL);
    /* a regular file whose size stat(2) does not know is still bounded by what is read */
    ck_assert_int_eq(bkm_file_read_regular("/proc/self/maps", "test input", 16, &data, &len, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than the limit of 16 bytes"));
}
END_TEST

START_TEST(file_check_regular_or_absent)
{
    char p[128];
    bkm_err_t err = {0};
    snprintf(p, sizeof p, "%s/ok.txt", dir);
    ck_assert_int_eq(bkm_file_check_regular_or_absent(p, "db", &err), BKM_OK);
    snprintf(p, sizeof p, "%s/not-yet.sqlite", dir);
    ck_assert_int_eq(bkm_file_check_regular_or_absent(p, "db", &err), BKM_OK);
    snprintf(p, sizeof p, "%s/fifo", dir);
    ck_assert_int_eq(bkm_file_check_regular_or_absent(p, "db", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, p));
    ck_assert_ptr_nonnull(strstr(err.msg, "a FIFO"));
    ck_assert_int_eq(bkm_file_check_regular_or_absent(dir, "db", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "a directory"));
    ck_assert_int_eq(bkm_file_check_regular_or_absent("/dev/null", "db", &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "character device"));
    /* a link is judged by what it points to */
    {
        char l[128], t[128];
        snprintf(l, sizeof l, "%s/link", dir);
        snprintf(t, sizeof t, "%s/fifo", dir);
        ck_assert_int_eq(symlink(t, l), 0);
        ck_assert_int_eq(bkm_file_check_regular_or_absent(l, "db", &err), BKM_EINVAL);
    }
}
END_TEST

/* The whole content of @p path ("" when unreadable), for comparisons. */
static void slurp_to(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = 0;
    out[0] = '\0';
    if (f) {
        k = fread(out, 1, n - 1, f);
        out[k] = '\0';
        fclose(f);
    }
}

/* The one output writer: whole or nothing, a link at the path replaced (its target untouched),
 * FIFOs and /dev/null written directly, a FIFO without reader refused at once, folders and other
 * devices refused, nothing left behind. */
START_TEST(file_write_output_safe)
{
    char p[128], t[128], got[256], name[256];
    struct stat st;
    bkm_err_t err = {0};
    /* a new file, then replaced */
    snprintf(p, sizeof p, "%s/out.txt", dir);
    ck_assert_msg(bkm_file_write_output(p, "-o", "one\n", 4, 0666, &err) == BKM_OK, "%s", err.msg);
    slurp_to(p, got, sizeof got);
    ck_assert_str_eq(got, "one\n");
    ck_assert_int_eq(bkm_file_write_output(p, "-o", "two\n", 4, 0777, &err), BKM_OK);
    slurp_to(p, got, sizeof got);
    ck_assert_str_eq(got, "two\n");
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_msg(st.st_mode & S_IXUSR, "a script (0777) is not executable");
    /* a link planted at the output: replaced, its target untouched */
    snprintf(t, sizeof t, "%s/ok.txt", dir);
    snprintf(p, sizeof p, "%s/planted", dir);
    ck_assert_int_eq(symlink(t, p), 0);
    ck_assert_int_eq(bkm_file_write_output(p, "-o", "new\n", 4, 0666, &err), BKM_OK);
    slurp_to(t, got, sizeof got);
    ck_assert_str_eq(got, "hello\n");
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    /* a link planted at a predictable temporary name (<path>.tmp.<pid>): never followed */
    snprintf(p, sizeof p, "%s/report.html", dir);
    snprintf(name, sizeof name, "%s/report.html.tmp.%ld", dir, (long)getpid());
    ck_assert_int_eq(symlink(t, name), 0);
    ck_assert_int_eq(bkm_file_write_output(p, "-o", "<html>\n", 7, 0666, &err), BKM_OK);
    slurp_to(t, got, sizeof got);
    ck_assert_str_eq(got, "hello\n");
    slurp_to(p, got, sizeof got);
    ck_assert_str_eq(got, "<html>\n");
    /* a FIFO without reader: refused at once, never waited on; with a reader: written to it */
    snprintf(p, sizeof p, "%s/fifo", dir);
    ck_assert_int_eq(bkm_file_write_output(p, "-o", "x", 1, 0666, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "nobody reads"));
    {
        int fd = open(p, O_RDONLY | O_NONBLOCK);
        char buf[16] = "";
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bkm_file_write_output(p, "-o", "piped", 5, 0666, &err), BKM_OK);
        ck_assert_int_eq((int)read(fd, buf, sizeof buf - 1), 5);
        ck_assert_str_eq(buf, "piped");
        close(fd);
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert(S_ISFIFO(st.st_mode));   /* never replaced by a file */
    }
    ck_assert_int_eq(bkm_file_write_output("/dev/null", "-o", "gone", 4, 0666, &err), BKM_OK);
    ck_assert_int_eq(bkm_file_write_output(dir, "-o", "x", 1, 0666, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "a directory"));
    ck_assert_int_eq(bkm_file_write_output("/dev/zero", "-o", "x", 1, 0666, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_file_write_output("", "-o", "x", 1, 0666, &err), BKM_EINVAL);
    snprintf(p, sizeof p, "%s/nosuch/out.txt", dir);
    ck_assert_int_eq(bkm_file_write_output(p, "-o", "x", 1, 0666, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, p));
    /* nothing is left behind: only the files written above */
    {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q tmp- && exit 1; exit 0", dir);
        ck_assert_int_eq(system(cmd), 0);
    }
}
END_TEST

/* A new file under a random name: a link planted at the prefix is never followed. */
START_TEST(file_write_new_exclusive)
{
    char path[256], got[64], t[128];
    struct stat st;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_file_write_new(dir, "bkm-x-", "abc", 3, 0600, path, sizeof path, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(strncmp(path, dir, strlen(dir)), 0);
    ck_assert_uint_eq(strlen(path), strlen(dir) + strlen("/bkm-x-") + 6);
    slurp_to(path, got, sizeof got);
    ck_assert_str_eq(got, "abc");
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    snprintf(t, sizeof t, "%s/nosuch-dir", dir);
    ck_assert_int_eq(bkm_file_write_new(t, "x-", "a", 1, 0600, path, sizeof path, &err), BKM_EIO);
    ck_assert_str_eq(path, "");
}
END_TEST

/* One nesting limit: what the writer writes, the reader reads; a tree too deep for where it
 * goes is null (and said so), never invalid output. */
/* SHA-256 against FIPS 180-4's examples, across block boundaries, and of a file. */
START_TEST(sha256_known_vectors)
{
    char hex[65];
    bkm_err_t err = {0};
    static char big[1000000];
    bkm_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    bkm_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    bkm_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    memset(big, 'a', sizeof big);
    bkm_sha256_hex(big, sizeof big, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    {
        const char *p = "/tmp/bkm-test-sha256.txt";
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fputs("abc", f);
        fclose(f);
        ck_assert_int_eq(bkm_sha256_file(p, hex, &err), BKM_OK);
        ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        unlink(p);
    }
    ck_assert_int_eq(bkm_sha256_file("/nonexistent/x", hex, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/x"));
    ck_assert_int_eq(bkm_sha256_file("/tmp", hex, &err), BKM_EINVAL);
}
END_TEST

START_TEST(json_one_depth_limit)
{
    bkm_buf_t b, doc;
    bkm_json_w_t w;
    bkm_json_t *j = NULL, *back = NULL;
    bkm_err_t err = {0};
    bkm_buf_init(&doc);
    for (int i = 0; i < BKM_JSON_MAX_DEPTH; i++)
        bkm_buf_puts(&doc, "[");
    for (int i = 0; i < BKM_JSON_MAX_DEPTH; i++)
        bkm_buf_puts(&doc, "]");
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&doc), &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_json_depth(j), BKM_JSON_MAX_DEPTH);
    /* at the top: written whole, and read back */
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_json_write_tree(&w, j), BKM_OK);
    ck_assert_str_eq(bkm_buf_str(&b), bkm_buf_str(&doc));
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &back, &err), BKM_OK);
    bkm_json_free(back);
    back = NULL;
    bkm_buf_free(&b);
    /* one level down it would exceed the limit: null, and the document stays valid */
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "deep");
    ck_assert_int_eq(bkm_json_write_tree(&w, j), BKM_EINVAL);
    bkm_json_key(&w, "next");
    bkm_json_int(&w, 1);
    bkm_json_obj_end(&w);
    ck_assert_int_eq(w.too_deep, 0);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &back, &err) == BKM_OK, "%s: %s", err.msg, bkm_buf_str(&b));
    ck_assert_int_eq(bkm_json_get(back, "deep")->type, BKM_JSON_NULL);
    ck_assert_double_eq(bkm_json_get_num(back, "next", 0), 1);
    bkm_json_free(back);
    bkm_buf_free(&b);
    /* the writer nests the limit directly, with correct commas; the reader refuses one more */
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    for (int i = 0; i < BKM_JSON_MAX_DEPTH; i++)
        bkm_json_arr_begin(&w), bkm_json_int(&w, i);
    for (int i = 0; i < BKM_JSON_MAX_DEPTH; i++)
        bkm_json_arr_end(&w);
    ck_assert_int_eq(w.too_deep, 0);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &back, &err) == BKM_OK, "%s", err.msg);
    bkm_json_free(back);
    bkm_buf_free(&b);
    bkm_buf_puts(&doc, "");
    {
        bkm_buf_t deeper;
        bkm_buf_init(&deeper);
        bkm_buf_printf(&deeper, "[%s]", bkm_buf_str(&doc));
        ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&deeper), &back, &err), BKM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "deeper than " BKM_JSON_MAX_DEPTH_TEXT));
        bkm_buf_free(&deeper);
    }
    bkm_json_free(j);
    bkm_buf_free(&doc);
}
END_TEST

/* The PATH lookup every launcher and sbatch search goes through. */
START_TEST(path_find_program)
{
    char found[64];
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_path_find_program("sh", "/nonexistent::/bin:/usr/bin", found, sizeof found, &err), BKM_OK);
    ck_assert_str_eq(found, "/bin/sh");
    ck_assert_int_eq(bkm_path_find_program("sh", "/nonexistent", found, sizeof found, &err), BKM_EDEP);
    ck_assert_str_eq(err.msg, "'sh' is not installed (not on PATH)");
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(bkm_path_find_program("sh", "", found, sizeof found, &err), BKM_EDEP);
    ck_assert_int_eq(bkm_path_find_program("sh", NULL, found, sizeof found, &err), BKM_EDEP);
    /* a name that does not fit the buffer is not found, never truncated into another file */
    ck_assert_int_eq(bkm_path_find_program("sh", "/bin", found, 7, &err), BKM_EDEP);
    ck_assert_int_eq(bkm_path_find_program("sh", "/bin", found, 8, &err), BKM_OK);
    /* a file that is not executable is not a program */
    ck_assert_int_eq(bkm_path_find_program("passwd", "/etc", found, sizeof found, &err), BKM_EDEP);
}
END_TEST

static Suite *common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, err_names_value_and_maps_exit_codes);
    tcase_add_test(tc, clock_is_monotonic);
    tcase_add_test(tc, buf_grows);
    tcase_add_test(tc, json_writer_round_trips);
    tcase_add_test(tc, json_pretty_is_valid);
    tcase_add_test(tc, json_tree_writes_back_what_was_parsed);
    tcase_add_test(tc, json_reader_rejects_garbage);
    tcase_add_test(tc, json_writer_output_is_valid_utf8);
    tcase_add_test(tc, json_reader_numbers_and_escapes);
    tcase_add_test(tc, cpuset_format_and_parse);
    tcase_add_test(tc, strict_numbers);
    tcase_add_test(tc, trial_status_names);
    tcase_add_test(tc, kv_one_limit);
    tcase_add_test(tc, json_one_depth_limit);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, files_setup, files_teardown);
    tcase_add_test(tc, file_read_regular_bounded);
    tcase_add_test(tc, file_check_regular_or_absent);
    tcase_add_test(tc, file_write_output_safe);
    tcase_add_test(tc, file_write_new_exclusive);
    tcase_add_test(tc, sha256_known_vectors);
    tcase_add_test(tc, path_find_program);
    tcase_set_timeout(tc, 10);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(common_suite)
