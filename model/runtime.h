/* model/runtime.h — failures a configuration's vLLM meets while it runs, from the mechanism's
 * formula (doc/lifecycle.md), as engine faults plus the finding that says why.
 *
 * So far: the FlashInfer sparse-MLA softmax-stats slab of vLLM before PR #50791 (landed through
 * #55879). The launcher carves 8 B x gathered heads x step tokens x 256 + 1 MiB out of the fixed
 * 394 MiB workspace, of which its 8 MiB counter carve leaves 386 MiB; a step whose slab does not
 * fit writes past the buffer and every DCP worker dies (vLLM issue #50781). And the empty DCP
 * shard of vLLM before PR #55879: a DCP rank holding no local KV token of any sequence of a
 * step crashes in mask_dcp_empty_shards_ (seed 004).
 */
#ifndef MODEL_RUNTIME_H
#define MODEL_RUNTIME_H

#include "../sched/engine.h"
#include "lower.h"

/* The workspace the slab is carved from, after the counter carve (vLLM's upstream test
 * tests/v1/attention/test_flashinfer_sparse_mla_workspace.py: 394 MiB - 8 MiB = 404,750,336 B). */
#define MODEL_TRTLLM_SLAB_AVAILABLE_BYTES (394ull * 1048576ull - 8ull * 1048576ull)

/* The slab of one step: 8 B x gathered heads x tokens x 256 + 1 MiB. */
uint64_t model_trtllm_slab_bytes(uint64_t gathered_heads, uint64_t tokens);

/* The runtime failures of lowered program `p` (from `in`): appends crash faults (SchedFault,
 * at the step's first op, "embed", on every rank that fails; `reason` is an interned string) to
 * `faults` and one `crash` finding (SchedDiag*) per failing step to `findings`. Nothing when
 * the configuration's vLLM has the fix or the mechanism does not apply. */
void model_runtime_faults(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                          GPtrArray *findings);

#endif
