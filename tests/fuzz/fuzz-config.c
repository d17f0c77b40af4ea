/* tests/fuzz/fuzz-config.c — libFuzzer target: a Hugging Face config.json (model_arch_load_string),
 * then for each of four fixed vLLM layouts on four devices: the plan (model_plan_new), vLLM's
 * engine defaults, the lowering of a fixed workload (model_lower), the layout check, the memory
 * plan, and — when it stays under FUZZ_MAX_RANK_OPS — the simulation of the lowered program.
 *
 * Layouts (world <= 8): TP1 on an H100; DP2 x TP4 with expert and sequence parallelism on an
 * Ascend 910B; TP2 + DCP2 with an fp8 KV cache on a B200; PCP2 + DCP2 with the all-to-all DCP
 * backend on an MI300X. Engine settings are vLLM's defaults otherwise.
 * Workload: a prefill step of prompts 200 and 57, a decode step of contexts 300 and 1, a mixed
 * step (prefill 16, decode 64).
 */
#include "fuzz-common.h"

#include "../../model/cost.h"
#include "../../model/lower.h"
#include "../../model/memory.h"
#include "../../model/plan.h"
#include "../../src/input/hardware.h"
#include "../../src/output/report.h"

typedef struct {
    const char *hardware;
    uint32_t tp, dp, pcp, dcp;
    bool ep, sp;
    ModelDcpBackend dcp_backend;
    SchedDtype kv_cache_dtype;
} Layout;

static const Layout layouts[] = {
    {"h100", 1, 1, 1, 1, false, false, MODEL_DCP_AG_RS, SCHED_DTYPE_BF16},
    {"ascend-910b", 4, 2, 1, 1, true, true, MODEL_DCP_AG_RS, SCHED_DTYPE_BF16},
    {"b200", 2, 1, 1, 2, false, false, MODEL_DCP_AG_RS, SCHED_DTYPE_FP8},
    {"mi300x", 1, 1, 2, 2, true, false, MODEL_DCP_A2A, SCHED_DTYPE_BF16},
};
#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

static NetHardware hardware[N_LAYOUTS];
static ModelArch arch;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    for (size_t i = 0; i < N_LAYOUTS; i++) {
        GError *err = NULL;
        if (!hardware_load_preset(layouts[i].hardware, &hardware[i], &err)) {
            fprintf(stderr, "fuzz: preset %s: %s\n", layouts[i].hardware, err->message);
            abort();
        }
    }
    return 0;
}

static void add_step(ModelWorkload *w, const uint32_t *prefill, guint np, const uint32_t *decode,
                     guint nd)
{
    GPtrArray *per = g_ptr_array_new();
    ModelBatch *b = model_batch_new();
    g_array_append_vals(b->prefill, prefill, np);
    g_array_append_vals(b->decode, decode, nd);
    g_ptr_array_add(per, b);
    model_workload_add_step(w, per);
}

static void run_layout(size_t li, const ModelWorkload *wl)
{
    const Layout *l = &layouts[li];
    const NetHardware *hw = &hardware[li];
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = l->tp;
    par.data_parallel_size = l->dp;
    par.prefill_context_parallel_size = l->pcp;
    par.decode_context_parallel_size = l->dcp;
    par.enable_expert_parallel = l->ep;
    par.enable_sequence_parallel = l->sp;
    par.dcp_comm_backend = l->dcp_backend;

    GError *err = NULL;
    ModelPlan *plan = model_plan_new(&par, &arch, &err);
    fuzz_check_error("model_plan_new", plan != NULL, err);
    if (!plan) {
        g_error_free(err);
        return;
    }
    ModelEngine engine;
    model_engine_defaults(&engine);
    engine.kv_cache_dtype = l->kv_cache_dtype;
    model_engine_apply_vllm_defaults(&engine, &arch, hw);
    ModelCost *cost = model_cost_new(hw, NULL);
    ModelLowerInput in = {&arch, plan, &engine, wl, cost, hw, MODEL_BREAK_NONE};
    SchedProgram *p = model_lower(&in, &err);
    fuzz_check_error("model_lower", p != NULL, err);
    if (!p) {
        g_error_free(err);
        /* the memory plan does not need a program */
        model_memory_plan_free(model_memory_plan(&arch, plan, &engine, hw, NULL));
        model_cost_free(cost);
        model_plan_free(plan);
        return;
    }
    if (!sched_program_validate(p, &err)) {
        fprintf(stderr, "fuzz: the lowered program is invalid: %s\n", err->message);
        abort();
    }
    GPtrArray *findings = model_layout_check(p, &in);
    if (findings)
        g_ptr_array_free(findings, TRUE);
    ModelMemPlan *mem = model_memory_plan(&arch, plan, &engine, hw, p);
    report_memory_text(fuzz_devnull, mem, true);
    if (sched_program_total_op_count(p) <= FUZZ_MAX_RANK_OPS) {
        SchedConfig cfg = sched_config_default();
        cfg.timeline = SCHED_TIMELINE_NONE;
        cfg.fabric.hw = hw;
        cfg.fabric.n_ranks = p->n_ranks;
        sched_outcome_free(sched_engine_run(p, &cfg));
    }
    model_memory_plan_free(mem);
    sched_program_free(p);
    model_cost_free(cost);
    model_plan_free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    GError *err = NULL;
    memset(&arch, 0, sizeof arch);
    bool ok = model_arch_load_string(text, "config.json", &arch, &err);
    fuzz_check_error("model_arch_load_string", ok, err);
    if (!ok) {
        g_error_free(err);
        return 0;
    }
    ModelWorkload *wl = model_workload_new();
    add_step(wl, (const uint32_t[]){200, 57}, 2, NULL, 0);
    add_step(wl, NULL, 0, (const uint32_t[]){300, 1}, 2);
    add_step(wl, (const uint32_t[]){16}, 1, (const uint32_t[]){64}, 1);
    for (size_t i = 0; i < N_LAYOUTS; i++)
        run_layout(i, wl);
    model_workload_free(wl);
    return 0;
}
