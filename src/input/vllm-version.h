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
 * note to `notes` (char*): the run is simulated as vLLM main there. Fails (exit 2) for a
 * version other than `main` or a PR the table does not know, listing what is valid. */
bool vllm_version_apply(YamlDoc *d, const YamlDocNode *m, ModelVllmAbsent *absent,
                        GPtrArray *notes);

/* The PR numbers the table knows, ascending, as "40996, 48446, ..." (static storage). */
const char *vllm_version_known_prs(void);

#endif
