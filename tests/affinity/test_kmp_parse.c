/* SPDX-License-Identifier: MIT */
/* Strict parsing of KMP_AFFINITY, KMP_BLOCKTIME, KMP_HW_SUBSET, OMP_PLACES, OMP_PROC_BIND,
 * GOMP_CPU_AFFINITY and the precedence rules (docs/affinity.md §1). Every case libomp 14
 * only warns about must be an error whose message names the offending token. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/affinity.h"

/* KMP_AFFINITY @p s must fail with BKM_EINVAL and a message containing @p token. */
static void reject(const char *s, const char *token)
{
    bkm_aff_kmp_t k;
    bkm_err_t err = {0};
    int rc = bkm_aff_kmp_parse(s, &k, &err);
    ck_assert_msg(rc == BKM_EINVAL, "KMP_AFFINITY=%s accepted", s);
    ck_assert_msg(strstr(err.msg, token) != NULL, "KMP_AFFINITY=%s: message \"%s\" does not name \"%s\"", s,
                  err.msg, token);
}

static bkm_aff_kmp_t accept(const char *s)
{
    bkm_aff_kmp_t k;
    bkm_err_t err = {0};
    int rc = bkm_aff_kmp_parse(s, &k, &err);
    ck_assert_msg(rc == BKM_OK, "KMP_AFFINITY=%s rejected: %s", s, err.msg);
    return k;
}

START_TEST(kmp_grammar_full)
{
    bkm_aff_kmp_t k = accept(" Granularity = Fine , COMPACT , 1 , 0 ");
    ck_assert_int_eq(k.type, BKM_AFF_TYPE_COMPACT);
    ck_assert_int_eq(k.gran, BKM_AFF_GRAN_THREAD);
    ck_assert_int_eq(k.permute, 1);
    ck_assert_int_eq(k.offset, 0);
    ck_assert_int_eq(k.n_ints, 2);
    k = accept("verbose,nowarnings,norespect,nodups,gran=core,scatter");
    ck_assert_int_eq(k.verbose, 1);
    ck_assert_int_eq(k.warnings, 0);
    ck_assert_int_eq(k.respect, 0);
    ck_assert_int_eq(k.dups, 0);
    ck_assert_int_eq(k.gran, BKM_AFF_GRAN_CORE);
    ck_assert_int_eq(k.type, BKM_AFF_TYPE_SCATTER);
    k = accept("2,compact"); /* integers may come first */
    ck_assert_int_eq(k.permute, 2);
    k = accept("explicit,proclist=[0,{1,2},3-7:2, 8-4:-2]");
    ck_assert_int_eq(k.type, BKM_AFF_TYPE_EXPLICIT);
    ck_assert_str_eq(k.proclist, "0,{1,2},3-7:2, 8-4:-2");
    k = accept("granularity=2,balanced");
    ck_assert_int_eq(k.gran, BKM_AFF_GRAN_LEVELS);
    ck_assert_int_eq(k.gran_levels, 2);
    k = accept("logical,3");
    ck_assert_int_eq(k.offset, 3);
    k = accept("granularity=package,physical");
    ck_assert_int_eq(k.gran, BKM_AFF_GRAN_SOCKET);
    k = accept("duplicates,granularity=tile,compact");
    ck_assert_int_eq(k.dups, 1);
    ck_assert_int_eq(k.gran, BKM_AFF_GRAN_TILE);
    k = accept("");
    ck_assert_int_eq(k.type, BKM_AFF_TYPE_UNSET);
    k = accept("verbose");
    ck_assert_int_eq(k.type, BKM_AFF_TYPE_UNSET);
    ck_assert_int_eq(k.respect, -1);
}
END_TEST

/* §1.4, one assertion per row/case. */
START_TEST(kmp_unknown_token) { reject("granularity=core,foo", "foo"); }
END_TEST
START_TEST(kmp_abbreviation) { reject("comp", "comp"); }
END_TEST
START_TEST(kmp_fine_without_granularity) { reject("fine,compact", "fine"); }
END_TEST
START_TEST(kmp_reset_not_in_14) { reject("reset,compact", "reset"); }
END_TEST
START_TEST(kmp_negative_int) { reject("compact,-1", "-1"); }
END_TEST
START_TEST(kmp_keyword_junk) { reject("compactx", "compactx"); }
END_TEST
START_TEST(kmp_keyword_space_junk) { reject("compact foo", "foo"); }
END_TEST
START_TEST(kmp_second_type) { reject("compact,scatter", "scatter"); }
END_TEST
START_TEST(kmp_second_modifier) { reject("verbose,noverbose,compact", "noverbose"); }
END_TEST
START_TEST(kmp_second_granularity) { reject("granularity=core,granularity=fine,compact", "fine"); }
END_TEST
START_TEST(kmp_gran_bogus) { reject("granularity=bogus,compact", "bogus"); }
END_TEST
START_TEST(kmp_sideways) { reject("granularity=core,sideways", "sideways"); }
END_TEST
START_TEST(kmp_three_ints) { reject("compact,1,2,3", "3"); }
END_TEST
START_TEST(kmp_int_for_none) { reject("none,1", "none"); }
END_TEST
START_TEST(kmp_int_for_disabled) { reject("disabled,1", "disabled"); }
END_TEST
START_TEST(kmp_int_for_explicit) { reject("explicit,proclist=[0],2", "explicit"); }
END_TEST
START_TEST(kmp_second_int_logical) { reject("logical,1,2", "logical"); }
END_TEST
START_TEST(kmp_second_int_physical) { reject("physical,1,2", "physical"); }
END_TEST
START_TEST(kmp_int_without_type) { reject("granularity=fine,1", "1"); }
END_TEST
START_TEST(kmp_explicit_without_proclist) { reject("explicit", "explicit"); }
END_TEST
START_TEST(kmp_proclist_without_type) { reject("proclist=[0,1]", "proclist"); }
END_TEST
START_TEST(kmp_proclist_with_compact) { reject("proclist=[3,5],compact", "compact"); }
END_TEST
START_TEST(kmp_compact_with_proclist) { reject("compact,proclist=[3,5]", "compact"); }
END_TEST
START_TEST(kmp_proclist_with_none) { reject("none,proclist=[3]", "none"); }
END_TEST
START_TEST(kmp_unbalanced_bracket) { reject("explicit,proclist=[0,1", "'['"); }
END_TEST
START_TEST(kmp_unbalanced_brace) { reject("explicit,proclist=[{0,1]", "{"); }
END_TEST
START_TEST(kmp_proclist_bad_item) { reject("explicit,proclist=[0,x]", "x"); }
END_TEST
START_TEST(kmp_proclist_zero_stride) { reject("explicit,proclist=[0-4:0]", "stride"); }
END_TEST
START_TEST(kmp_empty_item) { reject("compact,,1", "empty"); }
END_TEST
START_TEST(kmp_trailing_comma) { reject("compact,", "trailing"); }
END_TEST
START_TEST(kmp_granularity_without_value) { reject("granularity,compact", "granularity"); }
END_TEST

START_TEST(kmp_never_crashes_on_prefixes)
{
    /* Every prefix of some valid and invalid settings: no crash, and a clean status. */
    static const char *const s[] = {"granularity=fine,compact,1,0", "explicit,proclist=[{0,1},2-9:3,4]",
                                    "verbose,granularity=l2_cache,scatter,1", "proclist=[", "[[[]]]", ",=,=", "=",
                                    "granularity= ", "explicit,proclist=[{", "99999999999999999999,compact"};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        char buf[128];
        size_t n = strlen(s[i]);
        for (size_t j = 0; j <= n; j++) {
            bkm_aff_kmp_t k;
            bkm_err_t err = {0};
            memcpy(buf, s[i], j);
            buf[j] = '\0';
            int rc = bkm_aff_kmp_parse(buf, &k, &err);
            ck_assert(rc == BKM_OK || rc == BKM_EINVAL);
            ck_assert(rc == BKM_OK || err.msg[0] != '\0');
        }
    }
}
END_TEST

/* §1.6 */
START_TEST(blocktime_table)
{
    static const struct {
        const char *s;
        int ms;
    } ok[] = {{"0", 0},           {"200", 200},        {"1s", 1000},       {"5m", 300000}, {"1h", 3600000},
              {"1d", 86400000},   {"infinite", INT_MAX}, {"INFINITY", INT_MAX}, {"Infinite", INT_MAX},
              {"2147483646", 2147483646}};
    static const char *const bad[] = {"ms", "10ms", "5us", "-1", "abc", " 200", "200 ", "", "1x",
                                      "2147483647", "99999999999", "25d"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int ms = -7;
        bkm_err_t err = {0};
        ck_assert_msg(bkm_aff_blocktime_parse(ok[i].s, &ms, &err) == BKM_OK, "%s: %s", ok[i].s, err.msg);
        ck_assert_int_eq(ms, ok[i].ms);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int ms = 0;
        bkm_err_t err = {0};
        ck_assert_msg(bkm_aff_blocktime_parse(bad[i], &ms, &err) == BKM_EINVAL, "KMP_BLOCKTIME=%s accepted", bad[i]);
        ck_assert_msg(strstr(err.msg, bad[i]) != NULL, "message \"%s\" does not name \"%s\"", err.msg, bad[i]);
    }
}
END_TEST

/* §1.7 syntax (filtering is tested in test_plan). */
START_TEST(hw_subset_syntax)
{
    bkm_aff_hw_subset_t h;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_hw_subset_parse("1s@1,4c@2,1t@1", &h, &err), BKM_OK);
    ck_assert_int_eq(h.n, 3);
    ck_assert_int_eq(h.item[0].layer, BKM_AFF_GRAN_SOCKET);
    ck_assert_int_eq(h.item[0].offset, 1);
    ck_assert_int_eq(h.item[1].num, 4);
    ck_assert_int_eq(h.item[1].offset, 2);
    ck_assert_int_eq(h.item[2].layer, BKM_AFF_GRAN_THREAD);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("1T,4C", &h, &err), BKM_OK); /* any order, any case */
    ck_assert_int_eq(h.item[0].layer, BKM_AFF_GRAN_THREAD);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("64c@4,1t", &h, &err), BKM_OK);
    ck_assert_int_eq(h.item[0].offset, 4);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("2L2", &h, &err), BKM_OK);
    ck_assert_int_eq(h.item[0].layer, BKM_AFF_GRAN_L2);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("1s1o", &h, &err), BKM_EINVAL); /* old offset form */
    ck_assert_ptr_nonnull(strstr(err.msg, "1s1o"));
    ck_assert_int_eq(bkm_aff_hw_subset_parse("0c", &h, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "0c"));
    ck_assert_int_eq(bkm_aff_hw_subset_parse("4q", &h, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "4q"));
    ck_assert_int_eq(bkm_aff_hw_subset_parse("2c,3c", &h, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("2c,", &h, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_hw_subset_parse("", &h, &err), BKM_EINVAL);
}
END_TEST

/* §1.8 grammar */
START_TEST(places_syntax)
{
    bkm_aff_places_t p;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_places_parse("cores", &p, &err), BKM_OK);
    ck_assert_int_eq(p.kind, BKM_AFF_GRAN_CORE);
    ck_assert_int_eq(p.count, 0);
    ck_assert_int_eq(bkm_aff_places_parse("Threads(4)", &p, &err), BKM_OK);
    ck_assert_int_eq(p.kind, BKM_AFF_GRAN_THREAD);
    ck_assert_int_eq(p.count, 4);
    ck_assert_int_eq(bkm_aff_places_parse("ll_caches", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("{0:4},{16:4}", &p, &err), BKM_OK);
    ck_assert_int_eq(p.kind, BKM_AFF_GRAN_UNSET);
    ck_assert_str_eq(p.list, "{0:4},{16:4}");
    ck_assert_int_eq(bkm_aff_places_parse("{0:2}:4:2", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("{0,1},{2,3}", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("!0,1,2", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("{0:4:-1}", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("{0-3}", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'-' ranges"));
    ck_assert_int_eq(bkm_aff_places_parse("0-3", &p, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_places_parse("bogus", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "bogus"));
    ck_assert_int_eq(bkm_aff_places_parse("cores(", &p, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_places_parse("cores(0)", &p, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_places_parse("{0,1", &p, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_places_parse("{}", &p, &err), BKM_EINVAL);
}
END_TEST

START_TEST(proc_bind_syntax)
{
    bkm_aff_proc_bind_t b;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_proc_bind_parse("spread,close", &b, &err), BKM_OK);
    ck_assert_int_eq(b.n, 2);
    ck_assert_int_eq(b.level[0], BKM_AFF_BIND_SPREAD);
    ck_assert_int_eq(b.level[1], BKM_AFF_BIND_CLOSE);
    ck_assert_int_eq(bkm_aff_proc_bind_parse("MASTER", &b, &err), BKM_OK);
    ck_assert_int_eq(b.level[0], BKM_AFF_BIND_PRIMARY);
    ck_assert_int_eq(bkm_aff_proc_bind_parse("false", &b, &err), BKM_OK);
    ck_assert_int_eq(b.level[0], BKM_AFF_BIND_FALSE);
    ck_assert_int_eq(bkm_aff_proc_bind_parse("bogus", &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "bogus"));
    ck_assert_int_eq(bkm_aff_proc_bind_parse("spread,false", &b, &err), BKM_EINVAL);
}
END_TEST

/* Values with blanks, as a user writes them in one shell word (issue 7: these crashed the sweep's
 * --affinity splitter before they reached the parsers): libomp skips blanks between places and
 * after commas, but a second word is an error naming it. */
START_TEST(values_with_blanks)
{
    bkm_aff_places_t p;
    bkm_aff_proc_bind_t b;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_places_parse("{0:2}, {2:2}", &p, &err), BKM_OK);
    ck_assert_str_eq(p.list, "{0:2}, {2:2}");
    ck_assert_int_eq(bkm_aff_places_parse(" {0:2} ,{2:2} ", &p, &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_places_parse("cores close", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "close"));
    ck_assert_int_eq(bkm_aff_places_parse("cores(2) spread", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "spread"));
    ck_assert_int_eq(bkm_aff_places_parse("{0:2} {2:2}", &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "{2:2}"));
    ck_assert_int_eq(bkm_aff_proc_bind_parse("close spread", &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "spread"));
    ck_assert_int_eq(bkm_aff_proc_bind_parse("close,spread master", &b, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "master"));
    ck_assert_int_eq(bkm_aff_proc_bind_parse("close, spread", &b, &err), BKM_OK);
    ck_assert_int_eq(b.n, 2);
    ck_assert_int_eq(b.level[1], BKM_AFF_BIND_SPREAD);
}
END_TEST

START_TEST(gomp_syntax)
{
    char pl[64];
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_gomp_parse("0 5 7-9", pl, sizeof(pl), &err), BKM_OK);
    ck_assert_str_eq(pl, "0 5 7-9");
    ck_assert_int_eq(bkm_aff_gomp_parse("0-30:10", pl, sizeof(pl), &err), BKM_OK);
    ck_assert_int_eq(bkm_aff_gomp_parse("0,a", pl, sizeof(pl), &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "a"));
    ck_assert_int_eq(bkm_aff_gomp_parse("9-3", pl, sizeof(pl), &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_gomp_parse("{0,1}", pl, sizeof(pl), &err), BKM_EINVAL);
}
END_TEST

/* §1.3 */
START_TEST(precedence)
{
    bkm_aff_setting_t st;
    bkm_err_t err = {0};
    bkm_aff_env_t env = {0};
    env.kmp_affinity = "compact";
    env.gomp_cpu_affinity = "3";
    env.omp_places = "cores";
    env.omp_proc_bind = "spread";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.src, BKM_AFF_SRC_KMP);
    ck_assert_int_eq(st.n_ignored, 3);

    env.kmp_affinity = "verbose,granularity=fine"; /* no type: does not compete */
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.src, BKM_AFF_SRC_GOMP);
    ck_assert_int_eq(st.kmp.type, BKM_AFF_TYPE_EXPLICIT);
    ck_assert_str_eq(st.kmp.proclist, "3");
    ck_assert_int_eq(st.kmp.verbose, 1);
    ck_assert_int_eq(st.n_ignored, 2);

    env.gomp_cpu_affinity = NULL;
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.src, BKM_AFF_SRC_OMP);
    ck_assert_int_eq(st.places_set, 1);
    ck_assert_int_eq(st.proc_bind_set, 1);

    env.kmp_hw_subset = "1s";
    env.kmp_place_threads = "2s";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.hw_subset.item[0].num, 1);
    ck_assert_str_eq(st.ignored[0], "KMP_PLACE_THREADS");

    /* a loser with a bad value is still an error */
    env.kmp_affinity = "compact";
    env.omp_places = "bogus";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "bogus"));
}
END_TEST

START_TEST(blocktime_wait_policy)
{
    bkm_aff_setting_t st;
    bkm_err_t err = {0};
    bkm_aff_env_t env = {0};
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.blocktime_ms, 200);
    env.omp_wait_policy = "active";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.blocktime_ms, INT_MAX);
    env.omp_wait_policy = "PASSIVE";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.blocktime_ms, 0);
    env.kmp_blocktime = "1s"; /* explicit KMP_BLOCKTIME wins */
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_OK);
    ck_assert_int_eq(st.blocktime_ms, 1000);
    env.omp_wait_policy = "sometimes";
    ck_assert_int_eq(bkm_aff_setting_resolve(&env, &st, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sometimes"));
}
END_TEST

static Suite *parse_suite(void)
{
    Suite *s = suite_create("affinity_parse");
    TCase *tc = tcase_create("kmp");
    tcase_add_test(tc, kmp_grammar_full);
    tcase_add_test(tc, kmp_unknown_token);
    tcase_add_test(tc, kmp_abbreviation);
    tcase_add_test(tc, kmp_fine_without_granularity);
    tcase_add_test(tc, kmp_reset_not_in_14);
    tcase_add_test(tc, kmp_negative_int);
    tcase_add_test(tc, kmp_keyword_junk);
    tcase_add_test(tc, kmp_keyword_space_junk);
    tcase_add_test(tc, kmp_second_type);
    tcase_add_test(tc, kmp_second_modifier);
    tcase_add_test(tc, kmp_second_granularity);
    tcase_add_test(tc, kmp_gran_bogus);
    tcase_add_test(tc, kmp_sideways);
    tcase_add_test(tc, kmp_three_ints);
    tcase_add_test(tc, kmp_int_for_none);
    tcase_add_test(tc, kmp_int_for_disabled);
    tcase_add_test(tc, kmp_int_for_explicit);
    tcase_add_test(tc, kmp_second_int_logical);
    tcase_add_test(tc, kmp_second_int_physical);
    tcase_add_test(tc, kmp_int_without_type);
    tcase_add_test(tc, kmp_explicit_without_proclist);
    tcase_add_test(tc, kmp_proclist_without_type);
    tcase_add_test(tc, kmp_proclist_with_compact);
    tcase_add_test(tc, kmp_compact_with_proclist);
    tcase_add_test(tc, kmp_proclist_with_none);
    tcase_add_test(tc, kmp_unbalanced_bracket);
    tcase_add_test(tc, kmp_unbalanced_brace);
    tcase_add_test(tc, kmp_proclist_bad_item);
    tcase_add_test(tc, kmp_proclist_zero_stride);
    tcase_add_test(tc, kmp_empty_item);
    tcase_add_test(tc, kmp_trailing_comma);
    tcase_add_test(tc, kmp_granularity_without_value);
    tcase_add_test(tc, kmp_never_crashes_on_prefixes);
    suite_add_tcase(s, tc);
    tc = tcase_create("other_vars");
    tcase_add_test(tc, blocktime_table);
    tcase_add_test(tc, hw_subset_syntax);
    tcase_add_test(tc, places_syntax);
    tcase_add_test(tc, proc_bind_syntax);
    tcase_add_test(tc, values_with_blanks);
    tcase_add_test(tc, gomp_syntax);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, blocktime_wait_policy);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(parse_suite)
