/* SPDX-License-Identifier: MIT */
/* The host a sweep's trials run on, stored with the sweep: name, CPU model, topology, fingerprint. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"

int bkm_tune_sweep_host_store(struct bkm_db *db, const struct bkm_topo *topo, int64_t *host_id, bkm_err_t *err)
{
    bkm_db_host_t h;
    bkm_topo_summary_t ts;
    bkm_buf_t tj;
    bkm_json_w_t w;
    char hostname[256] = "unknown", fp[128];
    int rc;
    gethostname(hostname, sizeof hostname - 1);
    bkm_topo_summary(topo, &ts);
    snprintf(fp, sizeof fp, "%dp/%dn/%dc/%dt/%s", ts.packages, ts.numa_nodes, ts.cores, ts.pus, ts.isa);
    bkm_buf_init(&tj);
    bkm_json_w_init(&w, &tj, 0);
    rc = bkm_topo_to_json(topo, &w, NULL);
    memset(&h, 0, sizeof h);
    h.hostname = hostname;
    h.cpu_model = ts.cpu_model;
    h.topology_json = rc == BKM_OK ? bkm_buf_str(&tj) : NULL; /* stored without it rather than not at all */
    h.fingerprint = fp;
    rc = bkm_db_host_upsert(db, &h, host_id, err);
    bkm_buf_free(&tj);
    return rc;
}
