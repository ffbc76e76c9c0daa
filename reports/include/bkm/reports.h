/* SPDX-License-Identifier: MIT */
/** @file bkm/reports.h
 * The HTML report of `tune report`: ONE self-contained file (inline CSS and inline SVG; no
 * script, no external stylesheet, font or image, so it opens from disk with no network) made
 * from the document bkm_db_report_json reads from a results database.
 *
 * Sections, each a <section data-bkm-section="NAME"> present in every report (with a sentence
 * saying why it is empty when the database holds nothing for it): host (hosts, topology drawn
 * with the PUs of the best setting and of the default side by side, sweeps with their labels),
 * summary (per workload: best setting, median and interval, speedup over the default with its
 * evidence, GFLOP/s and % of the measured peak), heatmap (threads x affinity coloured by
 * median), blocktime, scaling (GFLOP/s against threads with the peak line), boxplots
 * (per-process values of the top configurations and the default, disturbed processes marked),
 * noise (per sweep the processes marked disturbed by their OS noise evidence, and the most
 * disturbed trials with each value under its source), layers, counters (PAPI,
 * unavailable events marked with their reason), binding (planned vs actual masks), failed
 * (failed trials with their errors), history (regression gate runs).
 *
 * Every string that reaches the page (labels, parameters, host names, error tails, ...) is
 * escaped for HTML text and attribute context (& < > " ' ); nothing from the database is ever
 * emitted as markup. Library code: no printing, no environment, no clock.
 */
#ifndef BKM_REPORTS_H
#define BKM_REPORTS_H

#include <stddef.h>

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The names of the sections, in page order (NULL-terminated; static). */
extern const char *const bkm_rep_sections[];

/** Most thread counts a measured peak can be given for. */
#define BKM_REP_PEAK_MAX 64

/** What the caller adds to the document. */
typedef struct bkm_rep_cfg {
    const char *title;           /**< page title; NULL = "bkm report" */
    const char *source;          /**< the database path, shown; may be NULL */
    const char *generated_at;    /**< ISO-8601 time of generation, shown; may be NULL */
    const char *command;         /**< the command that made the report, shown; may be NULL */
    /** Measured FP32 peak (GFLOP/s) with t threads at peak_gflops[t - 1] (NaN or 0 = not
     *  measured), for n_peak thread counts, measured on the host named peak_host: "% of peak"
     *  and the scaling curve's peak line are given only for trials of that host. */
    double peak_gflops[BKM_REP_PEAK_MAX];
    int n_peak;
    const char *peak_host;
} bkm_rep_cfg_t;
/** Zero @p cfg and mark every peak as not measured. */
void bkm_rep_cfg_defaults(bkm_rep_cfg_t *cfg);

/** Append @p s escaped for HTML text and attribute values (&amp; &lt; &gt; &quot; &#39;) to
 *  @p out; bytes that are not valid UTF-8 become U+FFFD and control characters other than tab
 *  and newline are dropped. NULL appends nothing. */
void bkm_rep_escape(bkm_buf_t *out, const char *s);

/** Render the report of the document @p report_json (bkm_db_report_json's format) into @p out.
 *  @return BKM_OK; BKM_EINVAL when the document does not parse or lacks its arrays;
 *          BKM_ENOMEM. */
int bkm_rep_html_render(const char *report_json, const bkm_rep_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_REPORTS_H */
