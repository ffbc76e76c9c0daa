/* SPDX-License-Identifier: MIT */
/* The main() of every Check test program, and the way a test says it is skipped.
 *
 *   static Suite *gemm_suite(void) { ... }
 *   BKM_CHECK_MAIN(gemm_suite)
 *
 * runs the suite (CK_NORMAL output; CK_FORK, CK_RUN_SUITE and CK_RUN_CASE as Check reads them) and
 * exits 0 when every test passed, 1 otherwise. A program whose suite depends on its arguments or on
 * what the host has uses BKM_CHECK_MAIN_ARGS with a function that may return no suite and the exit
 * status instead: BKM_CHECK_SKIP (77, CTest's SKIP_RETURN_CODE) after bkm_check_skip() has said
 * why, 2 for bad usage, or the status of a mode that is not a test run (a child process). */
#ifndef BKM_TESTS_CHECK_H
#define BKM_TESTS_CHECK_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>

#define BKM_CHECK_SKIP 77

/* Run @p s: 0 when every test passed, 1 otherwise. */
static inline int bkm_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

/* Say on stdout why the test cannot run here ("skip: <reason>") and return BKM_CHECK_SKIP. */
static inline int bkm_check_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("skip: ", stdout);
    vprintf(fmt, ap);
    fputs("\n", stdout);
    va_end(ap);
    fflush(stdout);
    return BKM_CHECK_SKIP;
}

/* main() running the suite that Suite *suite_fn(void) builds. */
#define BKM_CHECK_MAIN(suite_fn)                                                                        \
    int main(void)                                                                                      \
    {                                                                                                   \
        return bkm_check_run(suite_fn());                                                               \
    }

/* main() running the suite that Suite *fn(int argc, char **argv, int *status) builds from its
 * arguments; when fn returns NULL, main() exits with *status instead. */
#define BKM_CHECK_MAIN_ARGS(fn)                                                                         \
    int main(int argc, char **argv)                                                                     \
    {                                                                                                   \
        int status_ = 0;                                                                                \
        Suite *suite_ = fn(argc, argv, &status_);                                                       \
        return suite_ != NULL ? bkm_check_run(suite_) : status_;                                        \
    }

#endif /* BKM_TESTS_CHECK_H */
