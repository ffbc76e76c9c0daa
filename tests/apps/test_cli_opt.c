/* SPDX-License-Identifier: MIT */
/* Unit tests of the option-table layer every `tune` command parses with (apps/cli_opt.c). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "cli_opt.h"

typedef struct cfg {
    int json, threads, nparams;
    long long seed;
    double min_time, timeout;
    const char *workload, *backend, *db;
    const char *params[4];
    const char *pos[4];
    int npos;
} cfg_t;

static int add_param(void *c, const bkm_cli_opt_t *o, const char *v, bkm_err_t *err)
{
    cfg_t *cf = c;
    if (strchr(v, '=') == NULL)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is not key=value", v);
    if (cf->nparams >= 4)
        return bkm_err_set(err, BKM_EINVAL, "at most 4 parameters");
    cf->params[cf->nparams++] = v;
    return BKM_OK;
}

static int add_pos(void *c, const char *arg, bkm_err_t *err)
{
    cfg_t *cf = c;
    if (cf->npos >= 4)
        return bkm_err_set(err, BKM_EINVAL, "too many arguments ('%s')", arg);
    cf->pos[cf->npos++] = arg;
    return BKM_OK;
}

static const bkm_cli_opt_t opts[] = {
    {.name = "workload", .short_name = 'w', .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(cfg_t, workload),
     .help = "the workload"},
    {.name = "threads", .short_name = 't', .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(cfg_t, threads),
     .lo = 1, .hi = 4096, .help = "OpenMP threads"},
    {.name = "seed", .kind = BKM_CLI_I64, .metavar = "S", .off = offsetof(cfg_t, seed), .lo = 0, .hi = 9.2e18,
     .help = "seed"},
    {.name = "min-time", .kind = BKM_CLI_NUM, .metavar = "SEC", .off = offsetof(cfg_t, min_time), .lo = 0, .hi = 86400,
     .help = "at least SEC seconds"},
    {.name = "trial-timeout", .kind = BKM_CLI_DURATION, .metavar = "T", .off = offsetof(cfg_t, timeout), .lo = 0.001,
     .hi = 604800, .help = "kill after T"},
    {.name = "backend", .kind = BKM_CLI_CHOICE, .metavar = "B", .off = offsetof(cfg_t, backend),
     .choices = "native|onednn", .help = "backend"},
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "K=V", .call = add_param, .flags = BKM_CLI_REPEAT,
     .help = "a parameter\nsecond line"},
    {.name = "db", .kind = BKM_CLI_STR, .metavar = "PATH", .off = offsetof(cfg_t, db), .alias = "database",
     .help = "database"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(cfg_t, json), .help = "JSON"},
};
static const bkm_cli_cmd_spec_t cmd = {.name = "demo", .usage = "tune demo [options] [ARG...]",
                                       .about = "A demo command.", .opts = opts,
                                       .n_opts = sizeof opts / sizeof opts[0], .positional = "ARG  anything",
                                       .positional_fn = add_pos, .more = "exit codes: 0 ok\n"};

static int parse(cfg_t *c, bkm_err_t *err, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    memset(c, 0, sizeof *c);
    memset(err, 0, sizeof *err);
    argv[argc++] = (char *)"demo";
    va_start(ap, err);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    return bkm_cli_opt_parse(&cmd, argc, argv, c, err);
}

START_TEST(both_spellings_and_short_forms)
{
    cfg_t c;
    bkm_err_t err;
    /* given again, a single-value option's later value wins (every command) */
    ck_assert_int_eq(parse(&c, &err, "--workload", "gemm", "--threads=8", "-t", "4", "--json", NULL), 0);
    ck_assert_int_eq(c.threads, 4);
    ck_assert_int_eq(parse(&c, &err, "--workload=gemm", "-t8", "--seed", "12345678901", "--min-time=0.25",
                           "--trial-timeout", "5m", "--backend=onednn", "--param", "m=1", "--param=n=2", "--json",
                           "pos1", "--", "--pos2", NULL),
                     0);
    ck_assert_str_eq(c.workload, "gemm");
    ck_assert_int_eq(c.threads, 8);
    ck_assert(c.seed == 12345678901LL);
    ck_assert_double_eq(c.min_time, 0.25);
    ck_assert_double_eq(c.timeout, 300.0);
    ck_assert_str_eq(c.backend, "onednn");
    ck_assert_int_eq(c.nparams, 2);
    ck_assert_str_eq(c.params[1], "n=2");
    ck_assert_int_eq(c.json, 1);
    ck_assert_int_eq(c.npos, 2);
    ck_assert_str_eq(c.pos[1], "--pos2");
    ck_assert_int_eq(parse(&c, &err, "--database", "x.sqlite", NULL), 0);   /* the old spelling */
    ck_assert_str_eq(c.db, "x.sqlite");
}
END_TEST

START_TEST(bad_values_name_option_value_and_range)
{
    static const struct {
        const char *a, *b, *needle;
    } bad[] = {
        {"--threads", "0", "--threads '0' is not an integer in 1..4096"},
        {"--threads", "4097", "--threads '4097' is not an integer in 1..4096"},
        {"--threads", "2x", "'2x'"},
        {"--threads", "", "--threads '' is not an integer"},
        {"--seed", "-1", "--seed '-1'"},
        {"--min-time", "nan", "--min-time 'nan' is not a number in 0..86400"},
        {"--min-time", "inf", "'inf'"},
        {"--min-time", "86401", "'86401'"},
        {"--trial-timeout", "0", "--trial-timeout '0' is not a duration in 0.001..604800 s"},
        {"--trial-timeout", "5 m", "'5 m'"},
        {"--trial-timeout", "1e308h", "'1e308h'"},
        {"--trial-timeout", "-5m", "'-5m'"},
        {"--backend", "cuda", "--backend 'cuda' is not one of native|onednn"},
        {"--param", "novalue", "--param 'novalue': 'novalue' is not key=value"},
        {"--workload", "", "--workload needs a non-empty value"},
        {"--json=1", NULL, "--json takes no value"},
        {"--nope", NULL, "unknown option '--nope'"},
        {"--nope=3", NULL, "unknown option '--nope'"},
        {"-x", NULL, "unknown option '-x'"},
        {"--threads", NULL, "--threads needs a value (N)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cfg_t c;
        bkm_err_t err;
        ck_assert_int_eq(parse(&c, &err, bad[i].a, bad[i].b, NULL), BKM_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "%s %s: got '%s', want '%s'", bad[i].a,
                      bad[i].b ? bad[i].b : "", err.msg, bad[i].needle);
        ck_assert_msg(strncmp(err.msg, "tune demo: ", 11) == 0, "%s", err.msg);
    }
}
END_TEST

static char *capture(int json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    if (json)
        bkm_cli_opt_help_json(&cmd, f);
    else
        bkm_cli_opt_help(&cmd, f);
    fclose(f);
    return buf;
}

START_TEST(help_comes_from_the_table)
{
    char *h = capture(0), *j = capture(1);
    ck_assert_ptr_nonnull(strstr(h, "usage: tune demo [options] [ARG...]"));
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "--%s", opts[i].name);
        ck_assert_msg(strstr(h, want) != NULL, "help lacks %s", want);
        snprintf(want, sizeof want, "\"name\":\"%s\"", opts[i].name);
        ck_assert_msg(strstr(j, want) != NULL, "JSON lacks %s", want);
    }
    ck_assert_ptr_nonnull(strstr(h, "-t, --threads N"));
    ck_assert_ptr_nonnull(strstr(h, "[1..4096]"));
    ck_assert_ptr_nonnull(strstr(h, "(repeatable)"));
    ck_assert_ptr_nonnull(strstr(h, "--database, its former name"));
    ck_assert_ptr_nonnull(strstr(h, "\n                      second line"));   /* continuation indented */
    ck_assert_ptr_nonnull(strstr(h, "exit codes: 0 ok"));
    ck_assert_ptr_nonnull(strstr(j, "\"lo\":1,\"hi\":4096"));
    ck_assert_ptr_nonnull(strstr(j, "\"choices\":\"native|onednn\""));
    free(h);
    free(j);
}
END_TEST

START_TEST(help_wins_and_stops_parsing)
{
    cfg_t c;
    bkm_err_t err;
    FILE *saved = stdout;
    char *buf = NULL;
    size_t len = 0;
    stdout = open_memstream(&buf, &len);
    ck_assert_int_eq(parse(&c, &err, "--threads", "0", "--help", NULL), 1);   /* no error for the bad value */
    ck_assert_int_eq(parse(&c, &err, "-h", "--json", NULL), 1);
    fclose(stdout);
    stdout = saved;
    ck_assert_ptr_nonnull(strstr(buf, "usage: tune demo"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"command\":\"demo\""));
    free(buf);
}
END_TEST

START_TEST(durations)
{
    static const struct {
        const char *s;
        double sec;
    } ok[] = {{"0.5", 0.5}, {"90s", 90}, {"5m", 300}, {"5min", 300}, {"2h", 7200}, {"0", 0}};
    static const char *const bad[] = {"", "m", "5x", "-1", "+1", " 1", "1e400", "nan", "inf", "1e308h", "5 m"};
    double v;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ck_assert_int_eq(bkm_cli_opt_duration(ok[i].s, &v), 0);
        ck_assert_double_eq(v, ok[i].sec);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(bkm_cli_opt_duration(bad[i], &v) == -1, "'%s' accepted", bad[i]);
}
END_TEST

static int pick(void *c, const bkm_cli_opt_t *o, const char *v, bkm_err_t *err)
{
    if (strcmp(v, "grid") != 0)
        return bkm_err_set(err, BKM_EINVAL, "is unknown (grid)");
    *(const char **)(void *)((char *)c + o->off) = v;
    return BKM_OK;
}

START_TEST(required_alias_spelling_and_call_messages)
{
    static const bkm_cli_opt_t ropts[] = {
        {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(cfg_t, workload),
         .flags = BKM_CLI_REQUIRED, .help = "the workload"},
        {.name = "min-samples", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(cfg_t, threads), .lo = 1,
         .hi = 100, .alias = "iters", .help = "samples"},
        {.name = "strategy", .kind = BKM_CLI_CALL, .metavar = "S", .off = offsetof(cfg_t, backend), .call = pick,
         .help = "strategy"},
    };
    static const bkm_cli_cmd_spec_t rcmd = {.name = "req", .usage = "tune req", .opts = ropts,
                                            .n_opts = sizeof ropts / sizeof ropts[0]};
    char *none[] = {"req", NULL};
    char *alias_bad[] = {"req", "--workload", "w", "--iters", "0", NULL};
    char *alias_ok[] = {"req", "--workload=w", "--iters=7", NULL};
    char *call_bad[] = {"req", "--workload", "w", "--strategy", "annealing", NULL};
    char *help[] = {"req", "--help", NULL};
    char *again[] = {"req", "--workload", "a", "--workload=b", NULL};
    cfg_t c;
    bkm_err_t err = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 1, none, &c, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "tune req: --workload is required (see tune req --help)");
    /* the message names the spelling that was typed */
    ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 5, alias_bad, &c, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "tune req: --iters '0' is not an integer in 1..100");
    ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 3, alias_ok, &c, &err), 0);
    /* given again: the later value replaces the earlier one */
    ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 4, again, &c, &err), 0);
    ck_assert_str_eq(c.workload, "b");
    ck_assert_int_eq(c.threads, 7);
    /* a CALL message that reads on from the value ("is ...") follows it without a colon */
    ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 5, call_bad, &c, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "tune req: --strategy 'annealing' is unknown (grid)");
    /* help: required and the old spelling are shown; --help needs no required option */
    f = open_memstream(&buf, &len);
    bkm_cli_opt_help(&rcmd, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "(required)"));
    ck_assert_ptr_nonnull(strstr(buf, "(--iters, its former name, still works)"));
    free(buf);
    f = open_memstream(&buf, &len);
    bkm_cli_opt_help_json(&rcmd, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"required\":true"));
    ck_assert_ptr_nonnull(strstr(buf, "\"alias\":\"iters\""));
    free(buf);
    {
        FILE *saved = stdout;
        buf = NULL;
        stdout = open_memstream(&buf, &len);
        ck_assert_int_eq(bkm_cli_opt_parse(&rcmd, 2, help, &c, &err), 1);
        fclose(stdout);
        stdout = saved;
        free(buf);
    }
}
END_TEST

/* The parse reports which options were given, how often, with their values as written and the
 * spelling used: what a command needs to pass its options on (the sweep's batch job line). */
START_TEST(given_options_are_reported)
{
    char *argv[] = {"demo", "--threads=8", "-t", "4", "--param", "m=1", "pos", "--json", "--database", "x.sqlite",
                    "--trial-timeout", "5m", "-wgemm", "--", "--threads", NULL};
    char *bad[] = {"demo", "--threads", "2", "--nope", NULL};
    bkm_cli_given_t g;
    cfg_t c;
    bkm_err_t err = {0};
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(bkm_cli_opt_parse_given(&cmd, 15, argv, &c, &g, &err), 0);
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "threads"), 2);   /* "--threads" after "--" is positional */
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "param"), 1);
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "db"), 1);
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "database"), 0);   /* names, not old spellings */
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "seed"), 0);
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "nosuch"), 0);
    ck_assert_uint_eq(g.n, 7);
    ck_assert_str_eq(opts[g.list[0].opt].name, "threads");
    ck_assert_str_eq(g.list[0].value, "8");
    ck_assert_str_eq(g.list[1].value, "4");
    ck_assert_str_eq(g.list[2].value, "m=1");
    ck_assert_str_eq(opts[g.list[3].opt].name, "json");
    ck_assert_ptr_null(g.list[3].value);
    ck_assert_str_eq(opts[g.list[4].opt].name, "db");
    ck_assert_int_eq(g.list[4].by_alias, 1);
    ck_assert_int_eq(g.list[0].by_alias, 0);
    ck_assert_str_eq(g.list[5].value, "5m");   /* as written, not the parsed 300 s */
    ck_assert_str_eq(g.list[6].value, "gemm");
    /* the argv word that named each: a value is never taken for an option */
    ck_assert_int_eq(g.list[0].argi, 1);
    ck_assert_int_eq(g.list[1].argi, 2);
    ck_assert_int_eq(g.list[2].argi, 4);
    ck_assert_int_eq(g.list[3].argi, 7);
    ck_assert_int_eq(g.list[6].argi, 12);
    ck_assert_int_eq(c.npos, 2);
    bkm_cli_given_free(&g);
    ck_assert_ptr_null(g.list);
    ck_assert_uint_eq(g.n, 0);
    bkm_cli_given_free(&g);   /* twice is harmless */
    /* an error leaves nothing to free, and the message is the plain parser's */
    ck_assert_int_eq(bkm_cli_opt_parse_given(&cmd, 4, bad, &c, &g, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "tune demo: unknown option '--nope' (see tune demo --help)");
    ck_assert_ptr_null(g.list);
    ck_assert_uint_eq(bkm_cli_given_count(&cmd, &g, "threads"), 0);
    bkm_cli_given_free(&g);
}
END_TEST

static Suite *cli_opt_suite(void)
{
    Suite *s = suite_create("cli_opt");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, both_spellings_and_short_forms);
    tcase_add_test(tc, bad_values_name_option_value_and_range);
    tcase_add_test(tc, help_comes_from_the_table);
    tcase_add_test(tc, help_wins_and_stops_parsing);
    tcase_add_test(tc, durations);
    tcase_add_test(tc, required_alias_spelling_and_call_messages);
    tcase_add_test(tc, given_options_are_reported);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(cli_opt_suite)
