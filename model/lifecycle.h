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
#include "../sched/program.h"

/* Plans the phases of every rank into m->phases (model/memory.h ModelPhase): each phase's
 * memory from the plan's components, and its time from the lowered program: a forward of T
 * tokens takes max(the rank's weights / HBM bandwidth, T x the first workload step's compute
 * per token); a CUDA-graph capture size is two forwards (warm-up and capture); the JIT warm-up
 * is its keys x engine.jit_compile_s. Loading is storage-bound: not timed. The MoE autotuning
 * phase adds its `oom` finding to m->diags (phase `moe_autotune`): an error when the CUTLASS
 * workspace is larger than the free memory, a warning when it fits only within ranksim's
 * non-KV uncertainty (MODEL_MEM_NON_KV_UNDERESTIMATE). */
void model_lifecycle_plan(ModelMemPlan *m, const ModelArch *a, const ModelPlan *plan,
                          const ModelEngine *e, const NetHardware *hw, const SchedProgram *p);

/* After the simulation: the phase that failed (the earliest error finding whose detail names a
 * phase; else `serve` when the outcome failed) and the ones not reached; serve's duration is
 * the simulated time. */
void model_lifecycle_finish(ModelMemPlan *m, const SchedOutcome *o);

/* The Triton warm-up keys of the sparse-attention indexer's prefill-chunk metadata kernel on a
 * rank (vLLM indexer.py BuildPrefillChunkMetadataKernel.get_warmup_keys): 3 query-slice starts
 * x 3 stops x the DCP cases x the pointer-alignment variants — 2 variants and the rank's own DCP
 * case before PR #55879; 4 variants and, under PCP + DCP, the normalized case (0, 1) too with it.
 * 0 when the model has no indexer. */
uint32_t model_lifecycle_indexer_warmup_keys(const ModelArch *a, const ModelPlan *plan,
                                             const ModelEngine *e);

/* Whether vLLM reaches serving: no error of the plan (m->diags) fails a start-up phase (loading
 * the weights, the profile run, the KV cache, MoE autotuning, warm-up, graph capture). False
 * when the model cannot start: then nothing is served and no step runs. */
bool model_lifecycle_serves(const ModelMemPlan *m);

#endif
