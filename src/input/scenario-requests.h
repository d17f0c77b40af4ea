/* src/input/scenario-requests.h — a workload of requests (workload.requests,
 * .trace, .poisson, --requests) and serving it with vLLM's scheduler into steps.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_REQUESTS_H
#define SRC_SCENARIO_REQUESTS_H

#include "scenario-common.h"

/* Whether `workload:` (may be NULL) gives requests, a trace or poisson arrivals. */
bool scenario_workload_has_requests(const YamlDocNode *w);
/* workload.requests, .trace and .poisson appended to `out` (ModelRequest). */
bool scenario_load_requests(Loader *ld, const YamlDocNode *w, GArray *out);
/* A trace file (--requests FILE) appended to `out`. */
bool scenario_load_requests_file(Loader *ld, const char *path, GArray *out);
/* Serves `reqs` with vLLM's scheduler: s->workload becomes the scheduled steps, s->serve the
 * rows. Errors point at `at` / `key` (NULL `at`: a command-line flag named by `key`). Needs the
 * plan, engine, cost and placement. */
bool scenario_serve(Loader *ld, const YamlDocNode *root, const YamlDocNode *at, const char *key,
                    Scenario *s, const GArray *reqs);

#endif
