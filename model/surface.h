/* model/surface.h — how a collective surfaces on hardware when it hangs: which communicator
 * vLLM runs it on, by platform and vLLM version, and so whether PyTorch's watchdog (and its
 * Flight Recorder) ever sees it; the process group's SeqNum counted from its creation; and
 * what vLLM itself prints when no watchdog line will come.
 *
 * Facts: ../shared/reference/postmortem.md (a) "Not in FR, and no watchdog line" and "What a
 * vLLM user sees instead"; vllm/distributed/device_communicators/cuda_communicator.py
 * (CudaCommunicator); vLLM PRs #40996 (all_gather onto PyNccl on CUDA) and #48446 (ROCm keeps
 * the base class). doc/lifecycle.md, "What the operator sees".
 *
 * Knowledge the lowering consults, not a consumer of it: it depends on the engine arguments
 * (model/engine-args.h) and on a built SchedProgram only, and model_lower() calls
 * model_surface_groups() on the program it has just built; the run calls model_surface_hang()
 * on the outcome.
 */
#ifndef MODEL_SURFACE_H
#define MODEL_SURFACE_H

#include "../net/hardware.h"
#include "../sched/engine.h"
#include "../sched/program.h"
#include "arch.h"
#include "engine-args.h"

/* Bit 1 << SchedOpKind for each collective kind vLLM runs outside PyTorch's process group on
 * a group of kind `group_kind` ("tp", "pcp", "dcp", "dp", "ep"); `*via` names what carries them
 * (static text), NULL when every kind is watched. */
uint32_t model_surface_unwatched(const ModelEngine *e, const NetHardware *hw,
                                 const char *group_kind, const char **via);

/* The forwards vLLM runs before the first request, each issuing one forward's collectives:
 * the profile run, the MoE autotuning's dummy run (FlashInfer MoE backends), and per CUDA-graph
 * capture size one eager warm-up and one captured run (cudagraph_num_of_warmups = 1).
 * Assumption (doc/lifecycle.md): the process group counts a captured call in its SeqNum like
 * an eager one. */
uint32_t model_surface_startup_forwards(const ModelEngine *e, const NetHardware *hw,
                                        const ModelArch *a);

/* Sets every group of the lowered program `p` (sched_program_group_watch): its unwatched kinds,
 * and as seq_base the watched collectives its first member issues in one forward (the first
 * workload step) times `startup_forwards`, the eager and captured forwards vLLM runs before
 * the first request (model/lifecycle.h). */
void model_surface_groups(SchedProgram *p, const ModelEngine *e, const NetHardware *hw,
                          uint32_t startup_forwards);

/* When the outcome hangs (a deadlock or timeout diagnostic), what the operator reads instead
 * of — or before — a watchdog line: vLLM's shm-broadcast wait message every 60 s, the
 * executor's RPC timeout after VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300 s), and on Ascend
 * HCCL's own timeout. A `hang_surface` warning (SchedDiag*, caller owns), or NULL when nothing
 * hangs. */
SchedDiag *model_surface_hang(const SchedOutcome *o, const SchedProgram *p, const ModelEngine *e,
                              const NetHardware *hw, uint32_t world);

#endif
