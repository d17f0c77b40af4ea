/* src/input/scenario.h — loads a scenario file (YAML) into an immutable Scenario.
 *
 * Two kinds: `kind: program` (hand-written per-rank schedules) and `kind: model` (the default:
 * a model, a vLLM parallel layout, engine settings and a workload, lowered by model/lower into
 * a program). A vLLM eval config (tests/evals/gsm8k/configs/NAME.yaml: `model_name` +
 * `server_args`) is read as a model scenario. Every user error is reported as one GError in
 * SCENARIO_ERROR whose message names the file, the line, the key and what would be valid, e.g.
 *   "scenarios/x.yaml:7: key 'grups': unknown key; did you mean 'groups'? (valid: name, kind, ...)"
 * The caller maps SCENARIO_ERROR to exit code 2. Loading never aborts on bad input.
 */
#ifndef SRC_SCENARIO_H
#define SRC_SCENARIO_H

#include <glib.h>

#include "scenario-error.h"
#include "scenario-types.h"

/* Loads and validates `path`. `overrides` is a NULL-terminated list of "dotted.key=value"
 * strings (from --set) applied to the YAML tree before validation, or NULL. Returns NULL and
 * sets `error` on any problem. Caller owns the result. */
Scenario *scenario_load(const char *path, const char *const *overrides, GError **error);
/* Loads with command-line extras (see ScenarioExtras); `extras` may be NULL. A vLLM eval
 * config (top-level `model_name` + `server_args`) is accepted as a model scenario. */
Scenario *scenario_load_extras(const char *path, const ScenarioExtras *extras, GError **error);

/* Same, from text already in memory; `display_name` stands in for the path in messages. */
Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error);
/* From text in memory, with command-line extras (`extras` may be NULL). */
Scenario *scenario_load_string_extras(const char *text, const char *display_name,
                                      const ScenarioExtras *extras, GError **error);

/* Finishes a load left pending (Scenario.pending: a request workload) once s->serve and
 * s->workload hold the served steps: the work limit (ScenarioExtras.max_rank_ops), lowering,
 * the run settings (faults checked against the program) and the runtime faults, with the
 * errors and notes loading gives a workload of steps. Clears s->pending on success; false
 * with a SCENARIO_ERROR otherwise. runner_prepare (src/run/runner.h) calls it. */
bool scenario_finish_served(Scenario *s, GError **error);

#endif
