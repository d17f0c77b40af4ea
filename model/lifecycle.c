/* model/lifecycle.c — the start-up phases after the KV cache (model/lifecycle.h). */
#include "lifecycle.h"

#include "vllm.h"

#include <math.h>
#include <string.h>

/* How far the autotuning phase's free memory has been from what the real OOMs printed: 23 % at
 * most over vLLM issue 51071 and PRs 53186 and 55879 (doc/lifecycle.md), rounded up. */
#define MODEL_AUTOTUNE_FREE_UNCERTAINTY 0.25

static double gib(double b)
{
    return b / (1024.0 * 1024.0 * 1024.0);
}

static const char *const phase_names[MODEL_PHASE_COUNT] = {
    "load_weights", "profile_run", "cudagraph_profile", "kv_cache",
    "moe_autotune", "jit_warmup",  "cudagraph_capture", "serve",
};

const char *model_phase_name(ModelPhase p)
{
    return (unsigned)p < MODEL_PHASE_COUNT ? phase_names[p] : "?";
}

const char *model_phase_status_name(ModelPhaseStatus s)
{
    static const char *const n[] = {"ok", "skipped", "failed", "not_reached"};
    return (unsigned)s < G_N_ELEMENTS(n) ? n[s] : "?";
}

uint32_t model_lifecycle_indexer_warmup_keys(const ModelArch *a, const ModelPlan *plan,
                                             const ModelEngine *e)
{
    if (!a->dsa)
        return 0;
    bool fixed = model_vllm_has(e->vllm_absent, MODEL_VLLM_INDEXER_WARMUP_KEYS);
    bool pcp_dcp =
        plan->par.prefill_context_parallel_size > 1 && plan->par.decode_context_parallel_size > 1;
    uint32_t cases = fixed && pcp_dcp ? 2 : 1, variants = fixed ? 4 : 2;
    return 3 * 3 * cases * variants;
}

/* Compute per token of the first workload step on `rank` (ns), from the lowered ops up to the
 * second top-level `embed`, and that step's rows. */
static void first_step(const SchedOp *ops, uint32_t n, int32_t embed, uint64_t mult, bool top,
                       int *embeds, double *ns, uint64_t *rows, bool *done)
{
    for (uint32_t i = 0; i < n && !*done; i++) {
        const SchedOp *op = &ops[i];
        if (op->kind == SCHED_OP_REPEAT) {
            first_step(op + 1, op->body_len, embed, mult * op->times, false, embeds, ns, rows,
                       done);
            i += op->body_len;
            continue;
        }
        if (op->kind != SCHED_OP_COMPUTE)
            continue;
        if (top && (int32_t)op->name == embed) {
            if (++*embeds > 1) {
                *done = true;
                return;
            }
            *rows = op->tokens;
        }
        *ns += (double)op->dur_ns * (double)mult;
    }
}

typedef struct {
    double weights_ns; /* reading the rank's weights once */
    double per_token_ns;
} Fwd;

static int64_t fwd_ns(const Fwd *f, uint64_t tokens)
{
    return (int64_t)MAX(f->weights_ns, f->per_token_ns * (double)tokens);
}

/* The `oom` finding of the MoE autotuning phase on rank `r`: the workspace is one allocation
 * on top of what the phase already holds (the KV cache and the dummy forward's live tensors). */
static void autotune_check(ModelMemPlan *m, const ModelEngine *e, uint32_t r,
                           const ModelMoeWorkspace *w, uint64_t before, uint64_t held,
                           uint32_t tune_max)
{
    int64_t free_b = (int64_t)m->hbm_bytes - (int64_t)before;
    /* The free memory here does not depend on the non-KV estimate (the KV cache absorbs it);
     * its error is the rule's: within 23 % of the three real OOMs (doc/lifecycle.md). */
    double band = MODEL_AUTOTUNE_FREE_UNCERTAINTY * (double)MAX(free_b, 0);
    bool oom = (double)w->bytes > (double)free_b;
    bool tight = !oom && (double)w->bytes > (double)free_b - band;
    if (!oom && !tight)
        return;
    /* the utilization that leaves the workspace and the band free: each step of utilization
     * moves the KV cache, and with it the free memory, by HBM x step */
    double short_b = (double)w->bytes + band - (double)free_b;
    double u_fit = floor((m->utilization - short_b / (double)m->hbm_bytes) * 1e4) / 1e4;
    g_autofree char *why =
        tight ? g_strdup_printf(": it fits, but not within ranksim's uncertainty (its free memory "
                                "at this phase has been up to %.0f %% off the real OOMs', %.2f "
                                "GiB here)",
                                100.0 * MODEL_AUTOTUNE_FREE_UNCERTAINTY, gib(band))
              : g_strdup("");
    g_autofree char *msg = g_strdup_printf(
        "%s during MoE autotuning (%s, after the KV cache) on rank %u: Tried to allocate %.2f "
        "GiB, the CUTLASS MoE runner's workspace for the dummy forward of "
        "max_num_batched_tokens=%u (%" G_GUINT64_FORMAT " rows per rank after the dispatch "
        "gather, %u local experts), and %.2f GiB of the device's %.2f GiB are free: the KV cache "
        "took %.2f GiB at gpu_memory_utilization %.4g, what no budget counts holds %.2f GiB, and "
        "the tuner keeps %.2f GiB of profile workspace from its %u-token bucket%s. Lower "
        "gpu_memory_utilization to %.4f or below, or max_num_batched_tokens.",
        oom ? "CUDA out of memory" : "Possible CUDA out of memory",
        model_moe_backend_name(e->moe_backend), r, gib((double)w->bytes), e->max_num_batched_tokens,
        w->tokens, w->local_experts, gib((double)free_b), gib((double)m->hbm_bytes),
        gib((double)m->ranks[r].bytes[MODEL_MEM_KV_CACHE]), m->utilization,
        gib((double)(m->ranks[r].bytes[MODEL_MEM_OUTSIDE_BUDGET] + m->context_bytes +
                     (m->reserved_in_budget ? 0 : m->ranks[r].bytes[MODEL_MEM_RESERVED]))),
        gib((double)held), tune_max, why, u_fit);
    g_autofree char *detail = g_strdup_printf(
        "{\"phase\":\"moe_autotune\",\"moe_backend\":\"%s\",\"needed_bytes\":%" G_GUINT64_FORMAT
        ",\"free_bytes\":%" G_GINT64_FORMAT
        ",\"uncertainty_bytes\":%.0f,\"rows\":%" G_GUINT64_FORMAT
        ",\"local_experts\":%u,\"permuted_in_bytes\":%" G_GUINT64_FORMAT
        ",\"permuted_out_bytes\":%" G_GUINT64_FORMAT ",\"scale_bytes\":%" G_GUINT64_FORMAT
        ",\"routing_bytes\":%" G_GUINT64_FORMAT ",\"tuner_held_bytes\":%" G_GUINT64_FORMAT
        ",\"tune_max_num_tokens\":%u,\"gpu_memory_utilization_fit\":%.4f}",
        model_moe_backend_name(e->moe_backend), w->bytes, free_b, band, w->tokens, w->local_experts,
        w->permuted_in, w->permuted_out, w->scales, w->routing, held, tune_max, u_fit);
    g_ptr_array_add(m->diags, sched_diag_new("oom", oom ? SCHED_SEV_ERROR : SCHED_SEV_WARNING,
                                             (int32_t)r, -1, 0, -1, "moe_autotune", msg, detail));
}

/* The `oom` of the KV-cache phase on rank `r`: the KV cache fills the budget, and what no budget
 * counts (the attention builders' workspaces, the V2 sampler's state) no longer fits beside it. */
static void outside_check(ModelMemPlan *m, uint32_t r, uint64_t live)
{
    const ModelMemRank *x = &m->ranks[r];
    uint64_t outside = x->bytes[MODEL_MEM_OUTSIDE_BUDGET];
    uint64_t over = live - m->hbm_bytes;
    double u_fit = floor((m->utilization - (double)over / (double)m->hbm_bytes) * 1e4) / 1e4;
    const char *big = "";
    uint64_t big_b = 0;
    for (guint i = 0; x->items && i < x->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(x->items, i);
        if (it->component == MODEL_MEM_OUTSIDE_BUDGET && it->bytes > big_b) {
            big_b = it->bytes;
            big = it->name;
        }
    }
    g_autofree char *msg = g_strdup_printf(
        "CUDA out of memory while initializing the KV cache on rank %u: the KV cache takes the "
        "whole budget left at gpu_memory_utilization %.4g (%.2f GiB), and the %.2f GiB no budget "
        "counts (largest: %s, %.2f GiB) need %.2f GiB more than the device's %.2f GiB. Lower "
        "gpu_memory_utilization to %.4f or below, or max_num_batched_tokens.",
        r, m->utilization, gib((double)x->bytes[MODEL_MEM_KV_CACHE]), gib((double)outside), big,
        gib((double)big_b), gib((double)over), gib((double)m->hbm_bytes), u_fit);
    g_autofree char *detail = g_strdup_printf(
        "{\"phase\":\"kv_cache\",\"needed_bytes\":%" G_GUINT64_FORMAT
        ",\"free_bytes\":%" G_GINT64_FORMAT ",\"outside_budget_bytes\":%" G_GUINT64_FORMAT
        ",\"gpu_memory_utilization_fit\":%.4f}",
        outside, (int64_t)outside - (int64_t)over, outside, u_fit);
    g_ptr_array_add(m->diags, sched_diag_new("oom", SCHED_SEV_ERROR, (int32_t)r, -1, 0, -1,
                                             "kv_cache", msg, detail));
}

void model_lifecycle_plan(ModelMemPlan *m, const ModelArch *a, const ModelPlan *plan,
                          const ModelEngine *e, const NetHardware *hw, const SchedProgram *p)
{
    if (!m || !m->world)
        return;
    g_free(m->phases);
    m->phases = g_malloc0_n(m->world, sizeof *m->phases);
    int32_t embed = p ? sched_program_find_name(p, "embed") : -1;
    uint32_t largest = 0;
    uint32_t n_sizes = e->cudagraph_mode == MODEL_CUDAGRAPH_NONE
                           ? 0
                           : model_engine_cudagraph_sizes(e, hw, UINT32_MAX, &largest);
    ModelMoeWorkspace ws;
    bool autotune = a->moe && model_moe_backend_autotunes(e->moe_backend) &&
                    model_moe_cutlass_workspace(a, &plan->par, e->max_num_batched_tokens,
                                                m->experts_nvfp4, &ws);
    uint32_t keys = model_lifecycle_indexer_warmup_keys(a, plan, e);
    uint32_t tune_max = model_moe_tune_max_num_tokens(
        &plan->par, e->max_num_batched_tokens,
        model_vllm_has(e->vllm_absent, MODEL_VLLM_MOE_TUNE_TO_SCHEDULER_LIMIT));
    for (uint32_t r = 0; r < m->world; r++) {
        const ModelMemRank *mr = &m->ranks[r];
        const uint64_t *b = mr->bytes;
        Fwd f = {0, 0};
        uint64_t wbytes =
            b[MODEL_MEM_WEIGHTS] + b[MODEL_MEM_QUANT_SCALES] + b[MODEL_MEM_DERIVED_WEIGHTS];
        if (hw && hw->hbm_bw_bytes_per_s > 0)
            f.weights_ns = (double)wbytes / hw->hbm_bw_bytes_per_s * 1e9;
        if (p && embed >= 0 && r < p->n_ranks) {
            const SchedOpList *l = sched_program_ops(p, r);
            int embeds = 0;
            double ns = 0;
            uint64_t rows = 0;
            bool done = false;
            first_step(l->ops, l->len, embed, 1, true, &embeds, &ns, &rows, &done);
            if (rows > 0)
                f.per_token_ns = ns / (double)rows;
        }
        ModelPhaseRow *ph = m->phases[r];
        uint64_t live = m->context_bytes + b[MODEL_MEM_RESERVED] + wbytes;
        int64_t t = 0;
#define PHASE(P, PEAK, DUR)                                                                        \
    do {                                                                                           \
        ph[P].status = MODEL_PHASE_OK;                                                             \
        ph[P].start_ns = t;                                                                        \
        ph[P].dur_ns = (DUR);                                                                      \
        ph[P].peak_bytes = (PEAK);                                                                 \
        ph[P].free_bytes = (int64_t)m->hbm_bytes - (int64_t)ph[P].peak_bytes;                      \
        if (ph[P].dur_ns > 0)                                                                      \
            t += ph[P].dur_ns;                                                                     \
    } while (0)
        PHASE(MODEL_PHASE_LOAD_WEIGHTS, live, -1);
        ph[MODEL_PHASE_LOAD_WEIGHTS].allocated_bytes = live;
        PHASE(MODEL_PHASE_PROFILE_RUN,
              live + b[MODEL_MEM_ATTN_WORKSPACE] + b[MODEL_MEM_ACTIVATIONS],
              fwd_ns(&f, MAX(1u, e->max_num_batched_tokens)));
        live += b[MODEL_MEM_ATTN_WORKSPACE];
        ph[MODEL_PHASE_PROFILE_RUN].allocated_bytes = live;
        if (n_sizes && e->cudagraph_memory_profiling) {
            /* V1 captures the two largest sizes into a throwaway pool; V2 captures them all
             * (research notes, cudagraph-memory.md): timed as the two largest */
            PHASE(MODEL_PHASE_CUDAGRAPH_PROFILE, live + b[MODEL_MEM_CUDAGRAPH],
                  4 * fwd_ns(&f, largest));
            ph[MODEL_PHASE_CUDAGRAPH_PROFILE].allocated_bytes = live;
        } else {
            ph[MODEL_PHASE_CUDAGRAPH_PROFILE].status = MODEL_PHASE_SKIPPED;
        }
        /* the KV cache, and what no budget counts: the attention builders' workspaces made in
         * initialize_kv_cache, the V2 sampler's state (shown here, made in load_model) */
        live += b[MODEL_MEM_KV_CACHE] + b[MODEL_MEM_OUTSIDE_BUDGET];
        PHASE(MODEL_PHASE_KV_CACHE, live, 0);
        ph[MODEL_PHASE_KV_CACHE].allocated_bytes = live;
        if (r == (uint32_t)MAX(0, m->vllm.rank) && mr->kv_budget_bytes > 0 && live > m->hbm_bytes)
            outside_check(m, r, live);
        if (autotune) {
            /* At the runner's workspace request the device holds what the KV-cache phase left,
             * the profile's activation peak and the tuner's kept profile workspace. vLLM sized
             * the KV cache for the peak to be reused, but the three real autotuning OOMs of
             * doc/lifecycle.md saw only HBM x (1 - utilization) less what no budget counts
             * free: ranksim counts the peak as not reusable there (the mechanism is not
             * established; doc/decisions.md). */
            uint64_t held =
                model_moe_cutlass_profile_workspace(a, &plan->par, tune_max, m->experts_nvfp4);
            uint64_t before = live + b[MODEL_MEM_ACTIVATIONS] + held;
            PHASE(MODEL_PHASE_MOE_AUTOTUNE, before + ws.bytes,
                  fwd_ns(&f, MAX(1u, e->max_num_batched_tokens)));
            ph[MODEL_PHASE_MOE_AUTOTUNE].allocated_bytes = live + held;
            if (r == (uint32_t)MAX(0, m->vllm.rank) && mr->kv_budget_bytes > 0 &&
                live <= m->hbm_bytes)
                autotune_check(m, e, r, &ws, before, held, tune_max);
            live += held;
        } else {
            ph[MODEL_PHASE_MOE_AUTOTUNE].status = MODEL_PHASE_SKIPPED;
        }
        if (keys) {
            PHASE(MODEL_PHASE_JIT_WARMUP, live, (int64_t)(keys * e->jit_compile_s * 1e9));
            ph[MODEL_PHASE_JIT_WARMUP].allocated_bytes = live;
        } else {
            ph[MODEL_PHASE_JIT_WARMUP].status = MODEL_PHASE_SKIPPED;
        }
        if (n_sizes) {
            int64_t cap = 0;
            for (uint32_t s = 1; s <= largest;) {
                cap += 2 * fwd_ns(&f, s);
                s = s < 4 ? s * 2 : s < 8 ? 8 : s < 256 ? s + 8 : s + 16;
            }
            live += b[MODEL_MEM_CUDAGRAPH];
            PHASE(MODEL_PHASE_CUDAGRAPH_CAPTURE, live, cap);
            ph[MODEL_PHASE_CUDAGRAPH_CAPTURE].allocated_bytes = live;
        } else {
            ph[MODEL_PHASE_CUDAGRAPH_CAPTURE].status = MODEL_PHASE_SKIPPED;
        }
        PHASE(MODEL_PHASE_SERVE, live + b[MODEL_MEM_ACTIVATIONS], 0);
        ph[MODEL_PHASE_SERVE].allocated_bytes = live;
#undef PHASE
    }
}

/* The phase a finding belongs to: its detail's "phase" (doc/lifecycle.md), else serving (a
 * step's crash, jit or timeout). */
static int diag_phase(const SchedDiag *d)
{
    const char *ph = d->detail ? strstr(d->detail, "\"phase\":\"") : NULL;
    if (!ph)
        return MODEL_PHASE_SERVE;
    ph += strlen("\"phase\":\"");
    for (int k = 0; k < MODEL_PHASE_COUNT; k++) {
        size_t n = strlen(phase_names[k]);
        if (strncmp(ph, phase_names[k], n) == 0 && ph[n] == '"')
            return k;
    }
    return MODEL_PHASE_SERVE;
}

void model_lifecycle_finish(ModelMemPlan *m, const SchedOutcome *o)
{
    if (!m || !m->phases)
        return;
    int failed = -1;
    for (guint i = 0; o && i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity != SCHED_SEV_ERROR)
            continue;
        int at = diag_phase(d);
        if (failed < 0 || at < failed)
            failed = at;
    }
    for (uint32_t r = 0; r < m->world; r++) {
        ModelPhaseRow *ph = m->phases[r];
        if (o && failed != MODEL_PHASE_SERVE)
            ph[MODEL_PHASE_SERVE].dur_ns = failed < 0 ? o->end_ns : 0;
        else if (o)
            ph[MODEL_PHASE_SERVE].dur_ns = o->end_ns;
        if (failed < 0)
            continue;
        ph[failed].status = MODEL_PHASE_FAILED;
        for (int k = failed + 1; k < MODEL_PHASE_COUNT; k++)
            if (ph[k].status != MODEL_PHASE_SKIPPED)
                ph[k].status = MODEL_PHASE_NOT_REACHED;
    }
}

bool model_lifecycle_serves(const ModelMemPlan *m)
{
    for (guint i = 0; m && m->diags && i < m->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(m->diags, i);
        if (d->severity == SCHED_SEV_ERROR && diag_phase(d) != MODEL_PHASE_SERVE)
            return false; /* a start-up phase failed */
    }
    return true;
}
