/* model/surface.c — how a hung collective surfaces on hardware (model/surface.h). */
#include "surface.h"

#include <string.h>

#include "moe.h"
#include "vllm.h"

#define KIND(k) (1u << (k))

/* vLLM's executor RPC timeout, VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (vllm/envs.py, 300) and the
 * shm-broadcast wait message interval, VLLM_RINGBUFFER_WARNING_INTERVAL (60)
 * (../shared/reference/postmortem.md (b), "What a vLLM user sees instead"). */
#define RPC_TIMEOUT_S 300
#define SHM_WARNING_S 60
/* HCCL_EXEC_TIMEOUT's default on Atlas A2/A3 (CANN environment-variable reference
 * envref_07_0078; 1091 s in AIV mode) */
#define HCCL_EXEC_TIMEOUT_S 1836

uint32_t model_surface_unwatched(const ModelEngine *e, const NetHardware *hw,
                                 const char *group_kind, const char **via)
{
    *via = NULL;
    if (strncmp(group_kind, "sched", 5) == 0) {
        /* the engine core's SchedulerOutput reaches the workers through its shared-memory
         * MessageQueue (vllm/distributed/device_communicators/shm_broadcast.py), no
         * process group */
        *via = "the engine core's shared-memory MessageQueue (SchedulerOutput)";
        return KIND(SCHED_OP_BROADCAST);
    }
    NetPlatform pf = hw ? hw->platform : NET_PLATFORM_CUDA;
    /* vllm-ascend's NPUCommunicator keeps the base class: everything goes through
     * ProcessGroupHCCL. Gaudi and XPU likewise use torch.distributed's own backends. */
    if (pf != NET_PLATFORM_CUDA && pf != NET_PLATFORM_ROCM)
        return 0;
    /* CudaCommunicator: all_reduce tries the custom kernels (tp groups) and then PyNccl;
     * reduce_scatter, all_gatherv, send/recv on PyNccl; the EP all-to-all is an all2all
     * manager's (all_gatherv / reduce_scatterv on PyNccl, or DeepEP's own buffers). */
    uint32_t m = KIND(SCHED_OP_ALL_REDUCE) | KIND(SCHED_OP_REDUCE_SCATTER) |
                 KIND(SCHED_OP_ALL_TO_ALL) | KIND(SCHED_OP_SEND) | KIND(SCHED_OP_RECV);
    /* all_gather: PyNccl on CUDA since PR #40996; on ROCm the base class again after #48446. */
    bool ag_pynccl = model_vllm_has(e->vllm_absent, MODEL_VLLM_ALL_GATHER_ON_PYNCCL);
    if (pf == NET_PLATFORM_ROCM &&
        model_vllm_has(e->vllm_absent, MODEL_VLLM_ROCM_ALL_GATHER_ON_PROCESS_GROUP))
        ag_pynccl = false;
    if (ag_pynccl)
        m |= KIND(SCHED_OP_ALL_GATHER);
    bool tp = strncmp(group_kind, "tp", 2) == 0;
    *via = tp ? (pf == NET_PLATFORM_ROCM ? "vLLM's custom all-reduce or PyNccl (RCCL)"
                                         : "vLLM's custom all-reduce or PyNccl")
              : (pf == NET_PLATFORM_ROCM ? "PyNccl (RCCL)" : "PyNccl");
    return m;
}

uint32_t model_surface_startup_forwards(const ModelEngine *e, const NetHardware *hw,
                                        const ModelArch *a)
{
    uint32_t n = 1; /* profile_run */
    if (a && a->moe && model_moe_backend_autotunes(e->moe_backend))
        n++;
    if (e->cudagraph_mode != MODEL_CUDAGRAPH_NONE) {
        uint32_t largest = 0, graphs = 0;
        if (e->cudagraph_mode != MODEL_CUDAGRAPH_FULL)
            graphs += model_engine_cudagraph_sizes(e, hw, UINT32_MAX, &largest);
        if (e->cudagraph_mode == MODEL_CUDAGRAPH_FULL)
            graphs += model_engine_cudagraph_sizes(e, hw, UINT32_MAX, &largest);
        else if (e->cudagraph_mode == MODEL_CUDAGRAPH_FULL_AND_PIECEWISE)
            graphs += model_engine_cudagraph_sizes(e, hw, MAX(1u, e->max_num_seqs), &largest);
        n += 2 * graphs;
    }
    return n;
}

/* Watched collectives of group `gid` in ops[0..n), times `mult`, stopping at the second
 * top-level `embed` (the next step). Returns false once the step has ended. */
static bool count_step(const SchedOp *ops, uint32_t n, int32_t gid, uint32_t unwatched,
                       int32_t embed, uint64_t mult, bool top, int *embeds, uint64_t *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const SchedOp *op = &ops[i];
        if (op->kind == SCHED_OP_REPEAT) {
            if (!count_step(op + 1, op->body_len, gid, unwatched, embed, mult * op->times, false,
                            embeds, out))
                return false;
            i += op->body_len;
            continue;
        }
        if (top && op->kind == SCHED_OP_COMPUTE && (int32_t)op->name == embed && ++*embeds > 1)
            return false;
        if (sched_op_is_collective((SchedOpKind)op->kind) && !sched_op_is_p2p(op->kind) &&
            op->group == gid && !(unwatched & KIND(op->kind)))
            *out += mult;
    }
    return true;
}

void model_surface_groups(SchedProgram *p, const ModelEngine *e, const NetHardware *hw,
                          uint32_t startup_forwards)
{
    int32_t embed = sched_program_find_name(p, "embed");
    for (guint g = 0; g < p->groups->len; g++) {
        const SchedGroup *grp = sched_program_group(p, (int32_t)g);
        char kind[8] = {0};
        for (int i = 0; i < 7 && grp->name[i] && !g_ascii_isdigit(grp->name[i]); i++)
            kind[i] = grp->name[i];
        const char *via = NULL;
        uint32_t unwatched = model_surface_unwatched(e, hw, kind, &via);
        uint64_t per_forward = 0;
        if (embed >= 0 && startup_forwards > 0) {
            const SchedOpList *l = sched_program_ops(p, (uint32_t)grp->ranks[0]);
            int embeds = 0;
            count_step(l->ops, l->len, (int32_t)g, unwatched, embed, 1, true, &embeds,
                       &per_forward);
        }
        sched_program_group_watch(p, (int32_t)g, unwatched, per_forward * startup_forwards, via);
    }
}

/* The kind of the op named `name` that `rank` calls on group `gid` (the first such op). */
static int op_kind(const SchedProgram *p, uint32_t rank, int32_t gid, const char *name)
{
    int32_t id = sched_program_find_name(p, name);
    if (id < 0 || rank >= p->n_ranks)
        return -1;
    const SchedOpList *l = sched_program_ops(p, rank);
    for (uint32_t i = 0; i < l->len; i++)
        if (l->ops[i].kind != SCHED_OP_REPEAT && l->ops[i].name == (uint32_t)id &&
            l->ops[i].group == gid)
            return l->ops[i].kind;
    return -1;
}

SchedDiag *model_surface_hang(const SchedOutcome *o, const SchedProgram *p, const ModelEngine *e,
                              const NetHardware *hw, uint32_t world)
{
    const SchedDiag *hang = NULL;
    for (guint i = 0; i < o->diags->len && !hang; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "deadlock") == 0 || strcmp(d->kind, "timeout") == 0)
            hang = d;
    }
    if (!hang)
        return NULL;
    NetPlatform pf = hw ? hw->platform : NET_PLATFORM_CUDA;
    bool watched = true;
    const char *via = NULL;
    if (hang->group >= 0 && (guint)hang->group < p->groups->len && hang->op_name) {
        const SchedGroup *g = sched_program_group(p, hang->group);
        int k = op_kind(p, (uint32_t)(hang->rank >= 0 ? hang->rank : g->ranks[0]), hang->group,
                        hang->op_name);
        watched = k < 0 || !(g->unwatched_kinds & KIND(k));
        via = g->unwatched_via;
    }
    /* the hang began at the first arrival: a timeout is found when the watchdog fires */
    double t0 = (double)hang->time_ns / 1e9;
    const char *arr = hang->detail ? strstr(hang->detail, "\"arrive_us\":") : NULL;
    if (strcmp(hang->kind, "timeout") == 0 && arr)
        t0 = g_ascii_strtod(arr + strlen("\"arrive_us\":"), NULL) / 1e6;
    GString *m = g_string_new(NULL);
    GString *d = g_string_new("{");
    bool npu = pf == NET_PLATFORM_NPU;
    if (npu)
        g_string_append(m, "What the operator sees on Ascend: the collective runs on torch_npu's "
                           "ProcessGroupHCCL (vllm-ascend's NPUCommunicator keeps the base "
                           "class), so each rank prints its own watchdog line above at the "
                           "process group's timeout (1800 s by default) — but vLLM gives up "
                           "first. ");
    else if (watched)
        g_string_append(m, "What the operator sees on hardware: the collective runs on "
                           "PyTorch's process group, so the watchdog lines above would "
                           "come at its timeout — but vLLM gives up first. ");
    else
        g_string_append_printf(
            m,
            "What the operator sees on hardware: no NCCL watchdog line and no Flight "
            "Recorder entry — %s in group %s runs on %s, outside PyTorch's process group; "
            "the GPUs spin at full SM load, 0 tokens/s. ",
            hang->op_name ? hang->op_name : "the collective",
            hang->group >= 0 ? sched_program_group(p, hang->group)->name : "?",
            via ? via : "a communicator the watchdog does not track");
    /* vLLM's own messages: the same executor on every platform */
    g_string_append_printf(
        m,
        "From t=%.0f s the engine core logs, every %d s: \"No available shared memory "
        "broadcast block found in %d seconds. This typically happens when some processes "
        "are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
        "quantization).\"",
        t0 + SHM_WARNING_S, SHM_WARNING_S, SHM_WARNING_S);
    if (world > 1)
        g_string_append_printf(
            m,
            " At t=%.0f s (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=%d) the executor raises "
            "\"RPC call to sample_tokens timed out.\", then \"EngineCore encountered a "
            "fatal error.\" and EngineDeadError: the engine is dead%s.",
            t0 + RPC_TIMEOUT_S, RPC_TIMEOUT_S,
            watched ? " before the process group's watchdog would fire" : "");
    if (npu)
        g_string_append_printf(
            m,
            " If the workers outlive it, HCCL itself reports the stalled task after "
            "HCCL_EXEC_TIMEOUT (1836 s on A2/A3, t=%.0f s): \"EI0002: The wait execution of the "
            "Notify register times out. Reason: The Notify register has not received the "
            "Notify record from remote rank ...\", and torch_npu's watchdog follows its line "
            "with \"Some HCCL operations have failed or timed out. ... To avoid data "
            "inconsistency, we are taking the entire process down.\"",
            t0 + HCCL_EXEC_TIMEOUT_S);
    g_string_append_printf(d,
                           "\"platform\":\"%s\",\"watchdog\":%s,\"via\":%s%s%s,"
                           "\"shm_broadcast_first_s\":%.3f,\"rpc_timeout_s\":",
                           npu                       ? "npu"
                           : pf == NET_PLATFORM_ROCM ? "rocm"
                                                     : "cuda",
                           watched ? "true" : "false", via && !watched ? "\"" : "",
                           via && !watched ? via : "null", via && !watched ? "\"" : "",
                           t0 + SHM_WARNING_S);
    if (world > 1)
        g_string_append_printf(d, "%.3f", t0 + RPC_TIMEOUT_S);
    else
        g_string_append(d, "null");
    if (npu)
        g_string_append_printf(d, ",\"hccl_exec_timeout_s\":%.3f", t0 + HCCL_EXEC_TIMEOUT_S);
    g_string_append(d, "}");
    SchedDiag *out = sched_diag_new("hang_surface", SCHED_SEV_WARNING, hang->rank, hang->group,
                                    hang->seq, hang->layer, hang->op_name, m->str, d->str);
    g_string_free(m, TRUE);
    g_string_free(d, TRUE);
    return out;
}
