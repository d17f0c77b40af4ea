/* src/input/scenario-types.c — freeing a Scenario and the engine configuration it gives
 * (src/input/scenario-types.h). */
#include "scenario-types.h"

#include <string.h>

#include "scenario-pending.h"

void scenario_free(Scenario *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->text);
    g_free(s->name);
    g_free(s->kind);
    sched_program_free(s->program);
    if (s->faults)
        g_array_free(s->faults, TRUE);
    if (s->link_faults)
        g_array_free(s->link_faults, TRUE);
    g_free(s->hardware_source);
    g_free(s->arch);
    g_free(s->model_source);
    model_plan_free(s->plan);
    model_workload_free(s->workload);
    if (s->requests)
        g_array_free(s->requests, TRUE);
    g_free(s->requests_from);
    model_serve_free(s->serve);
    scenario_pending_free(s->pending);
    model_cost_free(s->cost);
    g_free(s->op_profile);
    if (s->perf_db)
        g_ptr_array_unref(s->perf_db);
    if (s->findings) {
        g_ptr_array_set_free_func(s->findings, (GDestroyNotify)sched_diag_free);
        g_ptr_array_unref(s->findings);
    }
    if (s->ignored_flags)
        g_ptr_array_unref(s->ignored_flags);
    if (s->override_notes)
        g_ptr_array_unref(s->override_notes);
    g_free(s);
}

SchedConfig scenario_engine_config(const Scenario *s)
{
    SchedConfig cfg = sched_config_default();
    cfg.on_mismatch = s->on_mismatch;
    cfg.collective_timeout_ns = s->collective_timeout_ns;
    /* Ascend: torch_npu's ProcessGroupHCCL, whose timeout defaults to 1800 s (its API
     * documentation; vllm-ascend's NPUCommunicator keeps the base class, so vLLM's collectives
     * go through it) */
    if (s->hardware.platform == NET_PLATFORM_NPU) {
        cfg.watchdog_hccl = true;
        if (!s->watchdog_given)
            cfg.collective_timeout_ns = 1800ll * 1000000000ll;
    }
    cfg.straggler_threshold_ns = s->straggler_threshold_ns;
    cfg.fabric.hw = &s->hardware;
    cfg.fabric.n_ranks = s->program->n_ranks;
    cfg.fabric.nodes = s->nodes;
    memcpy(cfg.fabric.algo, s->algo, sizeof cfg.fabric.algo);
    cfg.fabric.contention = s->contention;
    cfg.fabric.faults = (const NetLinkFault *)(const void *)s->link_faults->data;
    cfg.fabric.n_faults = s->link_faults->len;
    cfg.faults = (const SchedFault *)(const void *)s->faults->data;
    cfg.n_faults = s->faults->len;
    return cfg;
}
