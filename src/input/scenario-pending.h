/* src/input/scenario-pending.h — the rest of a model scenario's load, kept in the Scenario while
 * its request workload waits to be served (Scenario.pending, src/input/scenario-types.h):
 * loading never serves, so the lowering and the run settings, whose errors point into the file,
 * are finished afterwards (scenario_finish_served, src/input/scenario.h) from this.
 *
 * Ownership: the Scenario owns its ScenarioPending, which owns the parsed tree; everything else
 * in it points into that tree or at static text. Part of the scenario loader.
 */
#ifndef SRC_SCENARIO_PENDING_H
#define SRC_SCENARIO_PENDING_H

#include <glib.h>

#include "yamldoc.h"

typedef struct ScenarioPending ScenarioPending;

struct ScenarioPending {
    YamlDoc doc;                /* where messages point; `file` and `error` set on resuming */
    YamlDocNode *root;          /* the parsed tree with --set applied, owned; NULL until kept */
    const YamlDocNode *engine_at; /* lowering errors about the engine, when the file has no */
    const char *engine_key;       /* `engine:` (an eval config's server_args or model_name) */
    uint64_t max_rank_ops;      /* ScenarioExtras.max_rank_ops */
    bool merge_refused;         /* --vary workload.prefill/decode met requests: refused after
                                   serving, where loading refused it when it served */
};

/* A pending load with nothing kept yet. Caller owns it (scenario_pending_free). */
ScenarioPending *scenario_pending_new(void);
void scenario_pending_free(ScenarioPending *p);
/* Hands over the parsed tree, which `p` owns from now (a tree kept before is freed). */
void scenario_pending_keep_tree(ScenarioPending *p, YamlDocNode *root);

#endif
