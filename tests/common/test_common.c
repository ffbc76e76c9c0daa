/* SPDX-License-Identifier: MIT */
/* Unit tests of common/: errors, buffers, JSON writer and reader, CPU sets, number parsing. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

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
    ck_assert_str_eq(bkm_buf_str(&b), "{\"threads\":2,\"plan\":[{\"thread\":0,\"cpus\":[0]},{\"thread\":1,\"cpus\":[1]}],"
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
    tcase_add_test(tc, cpuset_format_and_parse);
    tcase_add_test(tc, strict_numbers);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, files_setup, files_teardown);
    tcase_add_test(tc, file_read_regular_bounded);
    tcase_add_test(tc, file_check_regular_or_absent);
    tcase_set_timeout(tc, 10);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(common_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
