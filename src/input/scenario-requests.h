/* src/input/scenario-requests.h — a workload of requests (workload.requests,
 * .trace, .poisson, --requests), read and kept for vLLM's scheduler to serve after loading.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_REQUESTS_H
#define SRC_SCENARIO_REQUESTS_H

#include "request-formats.h"
#include "scenario-common.h"

/* Whether `workload:` (may be NULL) gives requests, a trace or poisson arrivals. */
bool scenario_workload_has_requests(const YamlDocNode *w);
/* workload.requests, .trace and .poisson appended to `out` (ModelRequest). */
bool scenario_load_requests(Loader *ld, const YamlDocNode *w, GArray *out);
/* workload.max_concurrency (vllm bench serve --max-concurrency: at most N requests in flight)
 * into *out when given; left alone when absent. Only with requests. */
bool scenario_load_max_concurrency(Loader *ld, const YamlDocNode *w, uint32_t *out);
/* How a trace is read and cut (--requests-format, --requests-rate, --requests-limit, or
 * workload.trace's mapping); all zero: detected, as recorded, whole. */
typedef struct {
    RequestFormat format; /* AUTO: by content */
    double rate_per_s;    /* > 0: arrivals at this mean rate (scaled, or Poisson for a trace
                             without times) */
    uint32_t limit;       /* > 0: the first `limit` requests only */
} ScenarioTraceOptions;

/* A trace file (--requests FILE) appended to `out`; `o` may be NULL. */
bool scenario_load_requests_file(Loader *ld, const char *path, const ScenarioTraceOptions *o,
                                 GArray *out);
/* Keeps `reqs` (ModelRequest; a reference is taken) as s->requests, and where they came from
 * as s->requests_from: `at` / `key` ("FILE:LINE: key 'KEY'"), or with a NULL `at` the
 * command-line flag named by `key` ("FILE: KEY"). Loads the fabric settings serving needs
 * (collective_algorithm, contention). Serves nothing. */
bool scenario_keep_requests(Loader *ld, const YamlDocNode *root, const YamlDocNode *at,
                           const char *key, Scenario *s, GArray *reqs);

#endif
