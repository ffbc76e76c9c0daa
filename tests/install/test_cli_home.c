/* SPDX-License-Identifier: MIT */
/* Unit tests of where a tune executable finds its files (apps/cli_home.c): the installed layout
 * (PREFIX/BINDIR/tune with PREFIX/PKGLIBDIR), a build tree (files beside tune), folders named like
 * an install that are not one, other BINDIR depths, and the batch-script note. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bkm_check.h"
#include "cli_home.h"

static char root[PATH_MAX];

static void mkdirs(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void setup(void)
{
    snprintf(root, sizeof root, "%s/bkm-home-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static void expect(const char *exe_rel, const char *bindir, int installed, const char *prefix_rel,
                   const char *shim_rel, const char *rt_rel)
{
    char exe[PATH_MAX], want[PATH_MAX];
    bkm_cli_home_t h;
    bkm_err_t err = {0};
    snprintf(exe, sizeof exe, "%s/%s", root, exe_rel);
    ck_assert_int_eq(bkm_cli_home_of(exe, bindir, "lib/bkm", "lib/bkm/rt", &h, &err), BKM_OK);
    ck_assert_str_eq(h.exe, exe);
    ck_assert_int_eq(h.installed, installed);
    if (prefix_rel) {
        snprintf(want, sizeof want, "%s/%s", root, prefix_rel);
        ck_assert_str_eq(h.prefix, want);
    } else {
        ck_assert_str_eq(h.prefix, "");
    }
    snprintf(want, sizeof want, "%s/%s", root, shim_rel);
    ck_assert_str_eq(h.shim, want);
    snprintf(want, sizeof want, "%s/%s", root, rt_rel);
    ck_assert_str_eq(h.rt, want);
}

START_TEST(installed_layout)
{
    mkdirs("opt/bin");
    mkdirs("opt/lib/bkm");
    expect("opt/bin/tune", "bin", 1, "opt", "opt/lib/bkm/libbkm_team.so", "opt/lib/bkm/rt");
    /* the same with a BINDIR given as ./bin/ */
    expect("opt/bin/tune", "./bin/", 1, "opt", "opt/lib/bkm/libbkm_team.so", "opt/lib/bkm/rt");
}
END_TEST

START_TEST(build_tree)
{
    mkdirs("build/rt");
    expect("build/tune", "bin", 0, NULL, "build/libbkm_team.so", "build/rt");
    /* a folder called bin without PREFIX/lib/bkm is no install either */
    mkdirs("x/bin");
    expect("x/bin/tune", "bin", 0, NULL, "x/bin/libbkm_team.so", "x/bin/rt");
    /* nor is a folder whose name only ends in "bin" */
    mkdirs("y/sbin");
    mkdirs("y/lib/bkm");
    expect("y/sbin/tune", "bin", 0, NULL, "y/sbin/libbkm_team.so", "y/sbin/rt");
}
END_TEST

START_TEST(deeper_bindir)
{
    mkdirs("p/tools/bin");
    mkdirs("p/lib/bkm");
    expect("p/tools/bin/tune", "tools/bin", 1, "p", "p/lib/bkm/libbkm_team.so", "p/lib/bkm/rt");
    expect("p/tools/bin/tune", "bin", 0, NULL, "p/tools/bin/libbkm_team.so", "p/tools/bin/rt");
}
END_TEST

START_TEST(bad_exe)
{
    bkm_cli_home_t h;
    bkm_err_t err = {0};
    char longp[PATH_MAX + 8];
    ck_assert_int_eq(bkm_cli_home_of("tune", "bin", "lib/bkm", "lib/bkm/rt", &h, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'tune' is not an absolute path"));
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    ck_assert_int_eq(bkm_cli_home_of(longp, "bin", "lib/bkm", "lib/bkm/rt", &h, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "longer than PATH_MAX"));
}
END_TEST

START_TEST(note_and_self)
{
    bkm_cli_home_t h;
    bkm_err_t err = {0};
    char note[512];
    mkdirs("q/bin");
    mkdirs("q/lib/bkm");
    expect("q/bin/tune", "bin", 1, "q", "q/lib/bkm/libbkm_team.so", "q/lib/bkm/rt");
    snprintf(note, sizeof note, "%s/q/bin/tune", root);
    ck_assert_int_eq(bkm_cli_home_of(note, "bin", "lib/bkm", "lib/bkm/rt", &h, &err), BKM_OK);
    bkm_cli_home_note(&h, "9.8.7", note, sizeof note);
    ck_assert_ptr_nonnull(strstr(note, "bkm 9.8.7 installed under "));
    ck_assert_ptr_nonnull(strstr(note, h.prefix));
    /* this test program is in the build tree: it is not installed */
    ck_assert_int_eq(bkm_cli_home_self(&h, &err), BKM_OK);
    ck_assert_int_eq(h.installed, 0);
    bkm_cli_home_note(&h, "9.8.7", note, sizeof note);
    ck_assert_str_eq(note, "a build tree, not an installed bkm: the job needs that build where it is");
}
END_TEST

static Suite *home_suite(void)
{
    Suite *s = suite_create("cli_home");
    TCase *tc = tcase_create("layout");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, installed_layout);
    tcase_add_test(tc, build_tree);
    tcase_add_test(tc, deeper_bindir);
    tcase_add_test(tc, bad_exe);
    tcase_add_test(tc, note_and_self);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(home_suite)
