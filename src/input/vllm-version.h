/* src/input/vllm-version.h — the vLLM version table (model/presets/vllm-versions.yaml, embedded in
 * the binary) and the scenario keys that choose a vLLM: `engine.vllm_version` and
 * `engine.vllm_without: [PR, ...]`. The table maps PRs to the behaviours of model/vllm.h they
 * introduced; doc/lifecycle.md has it. */
#ifndef SRC_VLLM_VERSION_H
#define SRC_VLLM_VERSION_H

#include <glib.h>

#include "../../model/vllm.h"
#include "yamldoc.h"

/* Reads `engine.vllm_version` and `engine.vllm_without` of the engine mapping `m` into
 * *absent (the behaviours that vLLM lacks). A PR whose behaviours ranksim does not model adds a
 * note to `notes` (char*): the run is simulated as vLLM main there. `engine.vllm_version` (a
 * release tag, or main) sets *release and marks absent what the table dates after it. Fails
 * (exit 2) for a tag outside the table's range or a PR the table does not know, listing what is
 * valid. */
bool vllm_version_apply(YamlDoc *d, const YamlDocNode *m, ModelVllmAbsent *absent,
                        ModelVllmRelease *release, GPtrArray *notes);

/* A release tag ("0.19.0") or "main" into *rel (0 for main), adding to *absent the behaviours
 * of every table row dated after it. False with `error` for a tag outside the table's range. */
bool vllm_version_release(const char *s, ModelVllmRelease *rel, ModelVllmAbsent *absent,
                          GError **error);

/* The PR numbers the table knows, ascending, as "40996, 48446, ..." (static storage). */
const char *vllm_version_known_prs(void);

#endif
