/* SPDX-License-Identifier: MIT */
/* Units of bkm::reports: escaping, and rendering of documents built here (empty, hostile,
 * degenerate) — every section present, nothing from the document emitted as markup. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/reports.h"

static char *esc(const char *s)
{
    bkm_buf_t b;
    bkm_buf_init(&b);
    bkm_rep_escape(&b, s);
    bkm_buf_puts(&b, ""); /* "" for an empty result */
    return bkm_buf_take(&b);
}

START_TEST(escape_html_specials_and_bad_bytes)
{
    char *s = esc("<script>alert('x')</script> & \"q\"");
    ck_assert_str_eq(s, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    free(s);
    /* invalid UTF-8 (a lone continuation byte, an overlong '<', a surrogate) becomes U+FFFD, never '<' */
    s = esc("a\x80" "b\xc0\xbc" "c\xed\xa0\x80" "d");
    ck_assert_str_eq(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d");
    free(s);
    /* valid multi-byte text passes; control characters other than tab/newline are dropped */
    s = esc("caf\xc3\xa9 \xe2\x82\xac\x01\x1b[31m\tx\n");
    ck_assert_str_eq(s, "caf\xc3\xa9 \xe2\x82\xac[31m\tx\n");
    free(s);
    s = esc(NULL);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

static char *render(const char *doc, int *rc)
{
    bkm_buf_t out;
    bkm_err_t err = {0};
    bkm_rep_cfg_t cfg;
    bkm_rep_cfg_defaults(&cfg);
    cfg.title = "<b>t</b>";
    bkm_buf_init(&out);
    *rc = bkm_rep_html_render(doc, &cfg, &out, &err);
    if (*rc < 0) {
        bkm_buf_free(&out);
        return NULL;
    }
    return bkm_buf_take(&out);
}

static void all_sections(const char *html)
{
    char want[64];
    for (int i = 0; bkm_rep_sections[i]; i++) {
        snprintf(want, sizeof want, "data-bkm-section=\"%s\"", bkm_rep_sections[i]);
        ck_assert_msg(strstr(html, want) != NULL, "section %s missing", bkm_rep_sections[i]);
    }
}

START_TEST(empty_document_has_every_section)
{
    int rc;
    char *h = render("{\"schema\":4,\"sweeps\":[],\"trials\":[],\"best\":[],\"gates\":[]}", &rc);
    ck_assert_int_eq(rc, BKM_OK);
    all_sections(h);
    ck_assert_ptr_nonnull(strstr(h, "&lt;b&gt;t&lt;/b&gt;")); /* the title, escaped */
    ck_assert_ptr_null(strstr(h, "<script"));
    ck_assert_ptr_nonnull(strstr(h, "No trial stored noise evidence")); /* the noise section says why it is empty */
    free(h);
}
END_TEST

/* Every string field of every object holds markup: none of it may reach the page as markup. */
static const char hostile_doc[] =
    "{\"schema\":4,\"sweeps\":[{\"id\":1,\"uuid\":\"<script>u</script>\",\"label\":\"<script>alert(1)</script>\","
    "\"node\":\"<i>n</i>\",\"workload\":\"<img src=x onerror=alert(2)>\",\"strategy\":\"s\",\"git_revision\":"
    "\"<svg onload=alert(3)>\",\"command\":\"c\",\"started_at\":\"<b>\",\"finished_at\":null,\"status\":\"done\","
    "\"host\":{\"hostname\":\"<script>h</script>\",\"cpu_model\":\"<style>*{}</style>\",\"fingerprint\":\"f\","
    "\"topology\":{\"cpu_model\":\"<x>\",\"isa\":\"<y>\",\"packages\":1,\"cores\":1,\"pus\":1,\"cores_list\":"
    "[{\"core\":0,\"pkg\":0,\"pus\":[0]}]}}}],"
    "\"trials\":[{\"id\":1,\"sweep\":1,\"config\":{\"threads\":1,\"env\":{\"KMP_AFFINITY\":\"<script>k</script>\"},"
    "\"params\":{\"m\":\"<script>p</script>\"},\"default\":true},\"status\":\"ok\",\"role\":\"search\",\"round\":0,"
    "\"median_ms\":1.5,\"gflops\":2,\"binding\":{\"bound\":true,\"runtimes\":\"<script>r</script>\",\"threads\":"
    "[{\"thread\":0,\"tid\":1,\"cpu\":0,\"planned\":\"<script>\",\"actual\":\"0\",\"match\":true}]},"
    "\"layers\":[{\"layer\":\"<script>l</script>\",\"kind\":\"conv\",\"direction\":\"fwd\",\"ms\":1,\"gflops\":1}],"
    "\"counters\":[{\"name\":\"<script>c</script>\",\"state\":\"unavailable\",\"value\":null,\"reason\":"
    "\"<script>why</script>\"},{\"name\":\"perf::CS\",\"state\":\"disagrees\",\"value\":null,\"papi_value\":0,"
    "\"os_value\":16155,\"reason\":\"<b>PAPI 0</b>, the OS 16155\"},{\"name\":\"perf::TASK-CLOCK\",\"state\":"
    "\"counted\",\"value\":4242,\"domain\":\"<i>user</i>\"}],"
    "\"noise_share\":0.55,\"disturbed\":true,\"noise\":{\"share\":0.55,\"threshold\":0.1,\"wait_share\":0.5,"
    "\"steal_share\":null,\"totals\":{\"involuntary_switches\":7,\"migrations\":null},\"process\":{\"rusage\":"
    "{\"cpu_per_wall\":0.25},\"proc-stat\":{\"unavailable\":\"<script>st</script>\"}},\"threads\":[{\"proc-sched\":"
    "{\"unavailable\":\"<script>sc</script>\"}}]}},"
    "{\"id\":2,\"sweep\":1,\"config\":{\"threads\":2,\"env\":{},\"params\":{}},\"status\":\"crashed\","
    "\"error\":\"<script>e</script>\",\"stderr_tail\":\"</pre><script>t</script>\",\"exit_info\":\"<x>\","
    "\"median_ms\":null,\"counters\":[]}],"
    "\"best\":[],\"gates\":[{\"id\":1,\"created_at\":\"<script>\",\"mode\":\"<script>\",\"hostname\":\"h\","
    "\"git_revision\":\"<script>\",\"reference\":\"<script>\",\"threshold\":0.1,\"regressions\":0,"
    "\"verdict\":\"<script>v</script>\",\"results\":[{\"workload\":\"<script>w</script>\",\"ratio\":1}]}]}";

START_TEST(hostile_strings_stay_text)
{
    int rc;
    char *h = render(hostile_doc, &rc);
    ck_assert_int_eq(rc, BKM_OK);
    all_sections(h);
    ck_assert_msg(strstr(h, "<script") == NULL, "a <script> reached the page");
    ck_assert_ptr_null(strstr(h, "<img"));
    ck_assert_ptr_null(strstr(h, "<svg onload"));
    ck_assert_ptr_null(strstr(h, "<style>*"));
    ck_assert_ptr_nonnull(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    ck_assert_ptr_nonnull(strstr(h, "&lt;/pre&gt;&lt;script&gt;t&lt;/script&gt;")); /* the stderr tail */
    ck_assert_ptr_nonnull(strstr(h, "unavailable: &lt;script&gt;why&lt;/script&gt;"));
    /* a counter the OS contradicts: the disagreement, never PAPI's figure as its value */
    ck_assert_ptr_nonnull(strstr(h, "<td>perf::CS</td><td><span class=\"na\">disagrees with the OS: "
                                    "&lt;b&gt;PAPI 0&lt;/b&gt;, the OS 16155</span></td>"));
    ck_assert_ptr_nonnull(strstr(h, "<td>perf::TASK-CLOCK</td><td>4242 <span class=\"na\">(&lt;i&gt;user&lt;/i&gt;)"));
    free(h);
}
END_TEST

/* The noise section: per sweep the disturbed count, the most disturbed trial with each value or
 * its source's reason (escaped), and the box plot marking the disturbed process. */
START_TEST(noise_evidence_shown)
{
    int rc;
    char *h = render(hostile_doc, &rc), *sec;
    ck_assert_int_eq(rc, BKM_OK);
    sec = strstr(h, "data-bkm-section=\"noise\"");
    ck_assert_ptr_nonnull(sec);
    ck_assert_ptr_null(strstr(sec, "No trial stored noise evidence"));
    /* sweep 1: 1 ok process, 1 disturbed, 0 not, 0 without a mark, largest share 0.55, threshold 0.1 */
    ck_assert_ptr_nonnull(strstr(sec, "<td>1</td><td class=\"bad\">1</td><td>0</td><td>0</td><td>0.55</td><td>0.1</td>"));
    /* the trial row: share, mark, wait share, steal (its reason), switches, migrations (its reason), CPU/wall */
    ck_assert_ptr_nonnull(strstr(sec, "<td>0.55</td><td class=\"bad\">yes</td><td>0.5</td>"));
    ck_assert_ptr_nonnull(strstr(sec, "unavailable: &lt;script&gt;st&lt;/script&gt;</span></td><td>7</td>"));
    ck_assert_ptr_nonnull(strstr(sec, "unavailable: &lt;script&gt;sc&lt;/script&gt;</span></td><td>0.25</td>"));
    ck_assert_ptr_nonnull(strstr(h, "class=\"pt dist\"")); /* the box plot's dot */
    ck_assert_ptr_nonnull(strstr(h, "(1, 1 disturbed)"));
    ck_assert_msg(strstr(h, "<script") == NULL, "a <script> reached the page");
    free(h);
}
END_TEST

/* What the sequential confirmation decided, in the summary: the decision, the winner's test and
 * repeated interval, what it cost, each candidate's statement (escaped). */
static const char decided_doc[] =
    "{\"schema\":7,\"sweeps\":[{\"id\":1,\"node\":\"n\",\"workload\":\"w\",\"status\":\"done\"},"
    "{\"id\":2,\"node\":\"n\",\"workload\":\"v\",\"status\":\"done\"}],"
    "\"trials\":[{\"id\":1,\"sweep\":1,\"config\":{\"threads\":2,\"env\":{},\"params\":{},\"default\":true},"
    "\"status\":\"ok\",\"role\":\"confirm\",\"round\":1,\"median_ms\":1.5,\"counters\":[]},"
    "{\"id\":2,\"sweep\":2,\"config\":{\"threads\":2,\"env\":{},\"params\":{},\"default\":true},"
    "\"status\":\"ok\",\"role\":\"confirm\",\"round\":1,\"median_ms\":1.5,\"counters\":[]}],"
    "\"best\":[{\"node\":\"n\",\"workload\":\"w\",\"sweep\":1,\"median_ms\":1.5,\"speedup\":1,"
    "\"significant\":false,\"decision\":\"not-better\",\"not_better_than\":1.013,\"confirm_processes\":66,"
    "\"looks\":4,\"evidence\":{\"replicates\":6,\"replicates_max\":24,\"processes_per_side\":24,"
    "\"confirm_processes\":66,\"order\":\"abba-shuffled\",\"alpha_familywise\":0.01,\"design\":{\"looks\":4,"
    "\"spending\":\"lan-demets-obrien-fleming\"},\"winner\":null,\"candidates\":[{\"arm\":1,\"decision\":"
    "\"not-better\",\"statement\":\"not better by more than 1.3% <script>x</script>\"}]}},"
    "{\"node\":\"n\",\"workload\":\"v\",\"sweep\":2,\"median_ms\":1.0,\"speedup\":1.5,"
    "\"significant\":true,\"decision\":\"claimed\",\"evidence\":{\"replicates\":6,\"replicates_max\":24,"
    "\"processes_per_side\":12,\"confirm_processes\":24,\"design\":{\"looks\":2},\"winner\":1,"
    "\"candidates\":[{\"arm\":1,\"decision\":\"claimed\",\"p\":0.0001,\"nominal_level\":0.0046,\"looks\":2,"
    "\"ratio_rci\":[1.1,1.4],\"statement\":\"claimed 1.5x\"}]}}],\"gates\":[]}";

START_TEST(sequential_decision_shown)
{
    int rc;
    char *h = render(decided_doc, &rc);
    ck_assert_int_eq(rc, BKM_OK);
    all_sections(h);
    ck_assert_ptr_nonnull(strstr(h, "<b>not better</b>: the default stands; no setting tested is better by more "
                                    "than 1.3%"));
    ck_assert_ptr_nonnull(strstr(h, "66 confirmation processes, 4 look(s), 24 per side (blocks of 6, at most 24)"));
    ck_assert_ptr_nonnull(strstr(h, "<br>candidate 1 (not-better): not better by more than 1.3% "
                                    "&lt;script&gt;x&lt;/script&gt;"));
    ck_assert_ptr_nonnull(strstr(h, "<b>claimed</b>: beats the default beyond the noise; one-sided Mann-Whitney p "
                                    "0.0001 &le; 0.0046 at look 2"));
    ck_assert_ptr_nonnull(strstr(h, "1.500x [1.1, 1.4]"));   /* the repeated interval */
    ck_assert_msg(strstr(h, "<script") == NULL, "a <script> reached the page");
    free(h);
}
END_TEST

START_TEST(malformed_documents_refused)
{
    int rc;
    ck_assert_ptr_null(render("not json", &rc));
    ck_assert_int_eq(rc, BKM_EINVAL);
    ck_assert_ptr_null(render("{\"sweeps\":[]}", &rc));
    ck_assert_int_eq(rc, BKM_EINVAL);
    ck_assert_ptr_null(render("{\"sweeps\":{},\"trials\":[],\"best\":[],\"gates\":[]}", &rc));
    ck_assert_int_eq(rc, BKM_EINVAL);
}
END_TEST

/* Odd but valid content: trials of an unknown sweep, configs without env or threads, NaN-free
 * nulls everywhere, a topology without cores: rendered, nothing crashes. */
START_TEST(degenerate_documents_render)
{
    int rc;
    char *h = render("{\"sweeps\":[{\"id\":1,\"node\":\"n\",\"workload\":\"w\",\"host\":{\"topology\":{}}}],"
                     "\"trials\":[{\"sweep\":9,\"config\":{}},{\"sweep\":1,\"config\":{}},{\"sweep\":1,\"config\":7},"
                     "{\"sweep\":1,\"config\":{\"threads\":-3},\"status\":\"ok\",\"median_ms\":0}],"
                     "\"best\":[{\"node\":\"n\",\"workload\":\"w\",\"evidence\":\"text\"}],\"gates\":[{}]}",
                     &rc);
    ck_assert_int_eq(rc, BKM_OK);
    all_sections(h);
    free(h);
}
END_TEST

/* A stored topology is data: 200000 packages and 100000 cores are drawn in part (the caption
 * says so), never one box each; a note of the report document is shown. */
START_TEST(drawing_is_bounded)
{
    int rc;
    bkm_buf_t doc;
    char *h;
    bkm_buf_init(&doc);
    bkm_buf_puts(&doc, "{\"sweeps\":[{\"id\":1,\"node\":\"n\",\"workload\":\"w\",\"host\":{\"topology\":"
                       "{\"packages\":200000,\"cores_list\":[");
    for (int i = 0; i < 100000; i++)
        bkm_buf_printf(&doc, "%s{\"pkg\":%d,\"core\":%d,\"pus\":[%d]}", i ? "," : "", i % 200000, i, i);
    bkm_buf_puts(&doc, "]}}}],\"trials\":[],\"best\":[],\"gates\":[],\"notes\":[\"trial 3: left out\"]}");
    h = render(bkm_buf_str(&doc), &rc);
    ck_assert_int_eq(rc, BKM_OK);
    ck_assert_msg(strlen(h) < 4u << 20, "the page is %zu bytes", strlen(h));
    ck_assert_ptr_nonnull(strstr(h, "drawn in part"));
    ck_assert_ptr_nonnull(strstr(h, "trial 3: left out"));
    free(h);
    bkm_buf_free(&doc);
}
END_TEST

static Suite *reports_suite(void)
{
    Suite *s = suite_create("reports");
    TCase *tc = tcase_create("html");
    tcase_add_test(tc, escape_html_specials_and_bad_bytes);
    tcase_add_test(tc, drawing_is_bounded);
    tcase_add_test(tc, empty_document_has_every_section);
    tcase_add_test(tc, hostile_strings_stay_text);
    tcase_add_test(tc, noise_evidence_shown);
    tcase_add_test(tc, sequential_decision_shown);
    tcase_add_test(tc, malformed_documents_refused);
    tcase_add_test(tc, degenerate_documents_render);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(reports_suite)
