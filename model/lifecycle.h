/* model/lifecycle.h — vLLM's start-up after the KV cache is allocated, as memory: the MoE
 * backend's autotuning forward (FlashInfer CUTLASS / TRTLLM), which allocates the MoE runner's
 * workspace outside the KV budget (seed 004: TP2/PCP2 at 0.92 needs 12.22 GiB with ~7.6 GiB
 * free). doc/lifecycle.md has the phases and the formulas.
 */
#ifndef MODEL_LIFECYCLE_H
#define MODEL_LIFECYCLE_H

#include "../net/hardware.h"
#include "arch.h"
#include "lower.h"
#include "memory.h"
#include "plan.h"

/* Adds the `oom` findings of the phases after the KV cache (phase `moe_autotune`) to m->diags:
 * an error when the workspace is larger than the free memory, a warning when it fits only
 * within ranksim's non-KV uncertainty (MODEL_MEM_NON_KV_UNDERESTIMATE). */
void model_lifecycle_check(ModelMemPlan *m, const ModelArch *a, const ModelPlan *plan,
                           const ModelEngine *e, const NetHardware *hw);

#endif
