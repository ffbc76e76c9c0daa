/* SPDX-License-Identifier: MIT */
/* Which counting variant this host is in, from PAPI itself (not through bkm): whether the
 * perf_event component is enabled (and why not), its default domain, and what
 * perf::CONTEXT-SWITCHES reads in that default domain over 20 sleeps of this thread, beside the
 * OS's count of the same thread's switches. One line of JSON on stdout. */
#include <papi.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

int main(void)
{
    const PAPI_component_info_t *ci = NULL;
    struct rusage a, b;
    long long v = -1;
    int es = PAPI_NULL, rc, cidx;
    if ((rc = PAPI_library_init(PAPI_VER_CURRENT)) != PAPI_VER_CURRENT) {
        printf("{\"component\":null,\"error\":\"PAPI_library_init: %d\"}\n", rc);
        return 0;
    }
    cidx = PAPI_get_component_index("perf_event");
    ci = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
    if (ci == NULL || ci->disabled) {
        printf("{\"component\":null,\"error\":\"perf_event disabled: %s\"}\n", ci ? ci->disabled_reason : "absent");
        return 0;
    }
    rc = PAPI_create_eventset(&es);
    if (rc == PAPI_OK)
        rc = PAPI_add_named_event(es, "perf::CONTEXT-SWITCHES");
    getrusage(RUSAGE_THREAD, &a);
    if (rc == PAPI_OK)
        rc = PAPI_start(es);
    for (int i = 0; i < 20; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc == PAPI_OK)
        rc = PAPI_stop(es, &v);
    getrusage(RUSAGE_THREAD, &b);
    printf("{\"component\":\"perf_event\",\"default_domain\":%d,\"user_only\":%s,\"papi\":%lld,\"error\":\"%s\","
           "\"rusage\":%ld}\n",
           ci->default_domain, ci->default_domain == PAPI_DOM_USER ? "true" : "false", rc == PAPI_OK ? v : -1,
           rc == PAPI_OK ? "" : PAPI_strerror(rc), (b.ru_nvcsw - a.ru_nvcsw) + (b.ru_nivcsw - a.ru_nivcsw));
    return 0;
}
