/* src/output/report.c — text and JSON reports of one run; see report.h. */
#include "report.h"
#include "../../sched/json-bounded.h"

#include "explain.h"
#include "../util/textwrap.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static bool same_row(const SchedRankStats *a, const SchedRankStats *b)
{
    return a->state == b->state && a->end_ns == b->end_ns && a->compute_ns == b->compute_ns &&
           a->comm_ns == b->comm_ns && a->wait_ns == b->wait_ns && a->ops == b->ops;
}

/* The one-line outcome: what failed, where, the culprit — "NAME: FAILED — mismatch in dcp0
 * seq 1 (dcp_lse_all_gather, layer 0); culprit rank 0" — cut to the terminal's width. The
 * full diagnostic follows under "diagnostics". */
static char *headline(const StoreRunInfo *run, const SchedOutcome *o, const SchedDiag *first)
{
    g_autofree char *where = NULL, *culprit = NULL, *op = NULL;
    if (first && o->failed) {
        const char *g = first->group >= 0 && (guint)first->group < o->groups->len
                            ? g_ptr_array_index(o->groups, first->group)
                            : NULL;
        if (g && first->seq)
            where = g_strdup_printf(" in %s seq %" G_GUINT64_FORMAT, g, first->seq);
        else if (first->rank >= 0)
            where = g_strdup_printf(" on rank %d", first->rank);
        g_autoptr(GArray) culprits = explain_culprits(o);
        if (culprits->len) {
            g_autofree char *who =
                sched_format_ranks((const int32_t *)(const void *)culprits->data, culprits->len);
            culprit =
                g_strdup_printf("; culprit %s %s", culprits->len == 1 ? "rank" : "ranks", who);
        }
        if (first->op_name && first->layer >= 0)
            op = g_strdup_printf(" (%s, layer %d)", first->op_name, first->layer);
        else if (first->op_name)
            op = g_strdup_printf(" (%s)", first->op_name);
    }
    /* the richest form that fits: without the op, then without the place (the diagnostics
     * below give both), then cut */
    int w = text_width();
    char *h = NULL;
    g_autofree char *name = g_strdup(run->name);
    g_autofree char *h0 = NULL; /* the shortest form with the whole name */
    for (int level = 0; level < 4; level++) {
        g_clear_pointer(&h, g_free);
        if (level == 3) { /* a long name (a sweep variant's) gives way in its middle, never the
                             outcome after it */
            long room = w - (g_utf8_strlen(h0, -1) - g_utf8_strlen(run->name, -1));
            long n = g_utf8_strlen(run->name, -1);
            if (room < 12 || room >= n)
                break;
            long head = (room - 1) / 2, tail = room - 1 - head;
            g_autofree char *start = g_utf8_substring(run->name, 0, head);
            g_free(name);
            name = g_strconcat(start, "…", g_utf8_offset_to_pointer(run->name, n - tail), NULL);
        }
        GString *s = g_string_new(NULL);
        bool inconclusive = g_strcmp0(run->status, "inconclusive") == 0;
        g_string_append_printf(s, "%s: %s", name,
                               inconclusive ? "INCONCLUSIVE"
                               : o->failed  ? "FAILED"
                                            : "HEALTHY");
        if (inconclusive && level < 2)
            g_string_append(s, " — neither a hang nor its absence is shown: see what is "
                               "missing below");
        if (first && o->failed) {
            g_string_append_printf(s, " — %s", first->kind);
            if (level < 2 && where)
                g_string_append(s, where);
            if (culprit)
                g_string_append(s, culprit);
            if (level < 1 && op)
                g_string_append(s, op);
        }
        h = g_string_free(s, FALSE);
        if (g_utf8_strlen(h, -1) <= w)
            return h;
        if (level == 2)
            h0 = g_strdup(h);
    }
    if (!h) /* the name could not give way: cut the shortest form */
        h = g_steal_pointer(&h0);
    char *cut = g_utf8_offset_to_pointer(h, w - 1);
    *cut = '\0';
    char *out = g_strconcat(h, "…", NULL);
    g_free(h);
    return out;
}

/* "1,508,352": a count with thousands separators, into `buf`. */
static const char *thousands(uint64_t v, char *buf, size_t n)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%" G_GUINT64_FORMAT, v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

static void rank_row(FILE *out, const char *label, const char *state, int64_t end, int64_t compute,
                     int64_t comm, int64_t wait, uint64_t ops)
{
    g_autofree char *e = sched_format_ns(end);
    g_autofree char *c = sched_format_ns(compute);
    g_autofree char *m = sched_format_ns(comm);
    g_autofree char *w = sched_format_ns(wait);
    char nops[32];
    fprintf(out, "  %-10s %-8s %11s %11s %11s %11s %8s\n", label, state, e, c, m, w,
            thousands(ops, nops, sizeof nops));
}

/* Rows of ranks identical apart from their number, folded: how many rows the table has. */
static uint32_t rank_rows(const SchedOutcome *o)
{
    uint32_t rows = 0;
    for (uint32_t r = 0; r < o->n_ranks; r++)
        rows += r == 0 || !same_row(&o->ranks[r - 1], &o->ranks[r]);
    return rows;
}

/* One row per state: its ranks (cut to the label's width), the latest end, the largest
 * compute, comm and wait, the ops summed. */
static void rank_rows_by_state(FILE *out, const SchedOutcome *o)
{
    for (int st = 0; st <= (int)SCHED_RANK_UNKNOWN; st++) {
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        int64_t end = 0, compute = 0, comm = 0, wait = 0;
        uint64_t ops = 0;
        for (uint32_t r = 0; r < o->n_ranks; r++) {
            const SchedRankStats *s = &o->ranks[r];
            if ((int)s->state != st)
                continue;
            int32_t rr = (int32_t)r;
            g_array_append_val(ranks, rr);
            end = MAX(end, s->end_ns);
            compute = MAX(compute, s->compute_ns);
            comm = MAX(comm, s->comm_ns);
            wait = MAX(wait, s->wait_ns);
            ops += s->ops;
        }
        if (!ranks->len)
            continue;
        g_autofree char *label =
            sched_format_ranks_brief((const int32_t *)(void *)ranks->data, ranks->len, 10);
        if (strlen(label) > 10) {
            g_free(label);
            label = g_strdup_printf("%u ranks", ranks->len);
        }
        rank_row(out, label, sched_rank_state_name((SchedRankState)st), end, compute, comm, wait,
                 ops);
    }
}

/* The per-rank table: identical ranks folded into a range; past REPORT_RANK_ROWS rows (a large
 * import, where every rank's times differ), one row per state unless `all_ranks`. */
static void rank_table(FILE *out, const StoreRunInfo *run, const SchedOutcome *o, bool all_ranks)
{
    uint32_t rows = rank_rows(o);
    if (!all_ranks && rows > REPORT_RANK_ROWS) {
        char nr[32], nrows[32];
        g_autofree char *each =
            run->id > 0 ? g_strdup_printf("; each rank: ranksim report %" G_GINT64_FORMAT
                                          " --all-ranks",
                                          run->id)
                        : g_strdup("");
        fprintf(out,
                "\nranks (%s in %s rows, folded by state: the latest end, the largest compute, "
                "comm and wait, the ops summed%s):\n",
                thousands(o->n_ranks, nr, sizeof nr), thousands(rows, nrows, sizeof nrows), each);
        fprintf(out, "  %-10s %-8s %11s %11s %11s %11s %8s\n", "ranks", "state", "end", "compute",
                "comm", "wait", "ops");
        rank_rows_by_state(out, o);
        return;
    }
    fprintf(out, "\nranks:\n  %-10s %-8s %11s %11s %11s %11s %8s\n", "rank", "state", "end",
            "compute", "comm", "wait", "ops");
    for (uint32_t r = 0; r < o->n_ranks;) {
        uint32_t j = r;
        while (j + 1 < o->n_ranks && same_row(&o->ranks[r], &o->ranks[j + 1]))
            j++;
        const SchedRankStats *s = &o->ranks[r];
        g_autofree char *label = j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j);
        rank_row(out, label, sched_rank_state_name(s->state), s->end_ns, s->compute_ns, s->comm_ns,
                 s->wait_ns, s->ops);
        r = j + 1;
    }
}

void report_text_ranks(FILE *out, const StoreRunInfo *run, const SchedOutcome *o, bool all_ranks)
{
    guint errors = 0, warnings = 0;
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            errors++;
        else
            warnings++;
    }
    const SchedDiag *first = NULL;
    for (guint i = 0; i < o->diags->len && !first; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            first = d;
    }
    if (!first && o->diags->len)
        first = g_ptr_array_index(o->diags, 0);

    g_autofree char *end = sched_format_ns(o->end_ns);
    g_autofree char *head = headline(run, o, first);
    fprintf(out, "%s\n", head);
    /* An imported run was recorded, not simulated: its figures say so. */
    bool imported = g_strcmp0(run->kind, "import") == 0;
    char nr[32], nops[32], nev[32];
    thousands(o->n_ranks, nr, sizeof nr);
    thousands(o->rank_ops, nops, sizeof nops);
    thousands(o->events, nev, sizeof nev);
    if (imported)
        fprintf(out, "  %s ranks, recorded span %s, %s calls, read in %.1f ms, exit %d\n", nr, end,
                nops, run->wall_ms, run->exit_code);
    else
        fprintf(out, "  %s ranks, simulated %s, %s rank-ops, %s events, wall %.1f ms, exit %d\n",
                nr, end, nops, nev, run->wall_ms, run->exit_code);
    if (run->model)
        fprintf(out, "  model: %s\n", run->model);
    if (run->weights && *run->weights)
        fprintf(out, "  weights as stored: %s\n", run->weights);
    if (run->layout)
        fprintf(out, "  layout: %s\n", run->layout);
    if (run->vllm)
        fprintf(out, "  vLLM: %s\n", run->vllm);
    if (run->hardware)
        fprintf(out, "  %s: %s\n", imported ? "source" : "hardware", run->hardware);
    if (run->overrides)
        fprintf(out, "  overrides: %s\n", run->overrides);
    for (guint i = 0; run->not_simulated && i < run->not_simulated->len; i++)
        fprintf(out, "  %s: %s\n", imported ? "note" : "not simulated",
                (const char *)g_ptr_array_index(run->not_simulated, i));

    if (o->diags->len) {
        fprintf(out, "\ndiagnostics (%u error%s, %u warning%s):\n", errors, errors == 1 ? "" : "s",
                warnings, warnings == 1 ? "" : "s");
        for (guint i = 0; i < o->diags->len; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            /* Every message starts with its kind; continuation lines are indented under it. */
            const char *p = d->message;
            fprintf(out, "  [%s] ", sched_severity_name(d->severity));
            if (!g_str_has_prefix(p, d->kind))
                fprintf(out, "%s: ", d->kind);
            for (; *p; p++) {
                fputc(*p, out);
                if (*p == '\n')
                    fputs("   ", out);
            }
            fputc('\n', out);
        }
    }

    rank_table(out, run, o, all_ranks);
}

void report_text(FILE *out, const StoreRunInfo *run, const SchedOutcome *o)
{
    report_text_ranks(out, run, o, false);
}

void report_footer(FILE *out, const StoreRunInfo *run)
{
    if (run->db_path && run->id > 0) {
        fprintf(out, "\nstored as run %" G_GINT64_FORMAT " in %s\n", run->id, run->db_path);
        /* where to go from here: the story of a failure, the time line otherwise */
        bool failed = run->exit_code != 0;
        if (failed)
            fprintf(out, "next: ranksim explain %" G_GINT64_FORMAT " (why, and what to collect)\n",
                    run->id);
        else
            fprintf(out, "next: ranksim report %" G_GINT64_FORMAT " --json (every figure)\n",
                    run->id);
        if (!run->trace_path)
            fprintf(out, "      ranksim trace %" G_GINT64_FORMAT " -o run%" G_GINT64_FORMAT
                         ".json (the time line, for https://ui.perfetto.dev)\n",
                    run->id, run->id);
    }
    if (run->trace_path)
        fprintf(out, "trace: %s (open in https://ui.perfetto.dev)\n", run->trace_path);
}

static void add_str(JsonBuilder *b, const char *k, const char *v)
{
    json_builder_set_member_name(b, k);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void add_int(JsonBuilder *b, const char *k, int64_t v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_int_value(b, v);
}

static void add_us(JsonBuilder *b, const char *k, int64_t ns)
{
    json_builder_set_member_name(b, k);
    json_builder_add_double_value(b, (double)ns / 1e3);
}

static void add_memory_json(JsonBuilder *b, const ModelMemPlan *m, bool detail);

char *report_json(const StoreRunInfo *run, const SchedOutcome *o)
{
    return report_json_with_memory(run, o, NULL, false);
}

char *report_json_with_memory(const StoreRunInfo *run, const SchedOutcome *o, const ModelMemPlan *m,
                              bool detail)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "run_id");
    if (run->id > 0)
        json_builder_add_int_value(b, run->id);
    else
        json_builder_add_null_value(b);
    add_str(b, "name", run->name);
    add_str(b, "kind", run->kind);
    add_str(b, "scenario", run->path);
    add_str(b, "status", run->status);
    add_int(b, "exit_code", run->exit_code);
    add_int(b, "ranks", o->n_ranks);
    add_us(b, "sim_end_us", o->end_ns);
    add_int(b, "events", (int64_t)o->events);
    add_int(b, "rank_ops", (int64_t)o->rank_ops);
    json_builder_set_member_name(b, "wall_ms");
    json_builder_add_double_value(b, run->wall_ms);
    add_str(b, "db", run->db_path);
    add_str(b, "trace", run->trace_path);
    add_str(b, "hardware", run->hardware);
    add_str(b, "model", run->model);
    add_str(b, "weights", run->weights);
    add_str(b, "layout", run->layout);
    add_str(b, "vllm", run->vllm);
    add_str(b, "overrides", run->overrides);
    json_builder_set_member_name(b, "not_simulated");
    json_builder_begin_array(b);
    for (guint i = 0; run->not_simulated && i < run->not_simulated->len; i++)
        json_builder_add_string_value(b, g_ptr_array_index(run->not_simulated, i));
    json_builder_end_array(b);

    json_builder_set_member_name(b, "diagnostics");
    json_builder_begin_array(b);
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        json_builder_begin_object(b);
        add_str(b, "kind", d->kind);
        add_str(b, "severity", sched_severity_name(d->severity));
        json_builder_set_member_name(b, "rank");
        if (d->rank >= 0)
            json_builder_add_int_value(b, d->rank);
        else
            json_builder_add_null_value(b);
        add_str(b, "group",
                d->group >= 0 ? (const char *)g_ptr_array_index(o->groups, (guint)d->group) : NULL);
        json_builder_set_member_name(b, "seq");
        if (d->seq)
            json_builder_add_int_value(b, (int64_t)d->seq);
        else
            json_builder_add_null_value(b);
        json_builder_set_member_name(b, "layer");
        if (d->layer >= 0)
            json_builder_add_int_value(b, d->layer);
        else
            json_builder_add_null_value(b);
        add_str(b, "op", d->op_name);
        add_us(b, "time_us", d->time_ns);
        add_str(b, "message", d->message);
        json_builder_set_member_name(b, "detail");
        JsonNode *detail = d->detail ? sched_json_from_string(d->detail, NULL) : NULL;
        if (detail)
            json_builder_add_value(b, detail);
        else
            json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "rank_stats");
    json_builder_begin_array(b);
    for (uint32_t r = 0; r < o->n_ranks; r++) {
        const SchedRankStats *s = &o->ranks[r];
        json_builder_begin_object(b);
        add_int(b, "rank", r);
        add_str(b, "state", sched_rank_state_name(s->state));
        add_us(b, "end_us", s->end_ns);
        add_us(b, "compute_us", s->compute_ns);
        add_us(b, "comm_us", s->comm_ns);
        add_us(b, "wait_us", s->wait_ns);
        add_int(b, "ops", (int64_t)s->ops);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    if (run->serve)
        report_serve_json(b, run->serve);
    if (m)
        add_memory_json(b, m, detail);
    json_builder_end_object(b);

    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

/* ---- memory ---- */

static double gib(double bytes)
{
    return bytes / (1024.0 * 1024.0 * 1024.0);
}

/* The non-KV memory of a rank as the budget counts it: every component but the KV cache, the
 * CUDA-graph estimate only when the profiler subtracts it, the communicators only when they are
 * made after vLLM's first snapshot. */
static uint64_t non_kv(const ModelMemPlan *m, const ModelMemRank *r)
{
    uint64_t t = 0;
    for (int c = 0; c < MODEL_MEM_COUNT; c++)
        if (model_mem_in_non_kv((ModelMemComponent)c, m->cudagraph_in_budget,
                                m->reserved_in_budget))
            t += r->bytes[c];
    return t;
}

static bool same_mem(const ModelMemRank *a, const ModelMemRank *b)
{
    return memcmp(a->bytes, b->bytes, sizeof a->bytes) == 0 &&
           a->kv_budget_bytes == b->kv_budget_bytes;
}

/* Thousands separators, as vLLM prints token counts ("1,234,567"). Writes into buf. */

/* The first start-up phase that failed on rank `r` (the plan's phases), or MODEL_PHASE_COUNT. */
static int failed_phase(const ModelMemPlan *m, int r)
{
    for (int k = 0; m->phases && k < MODEL_PHASE_COUNT; k++)
        if (m->phases[r][k].status == MODEL_PHASE_FAILED)
            return k;
    return MODEL_PHASE_COUNT;
}

/* What vLLM's log says where the start-up stops: the line after which nothing follows. */
static void vllm_stops(FILE *out, int phase)
{
    fprintf(out, "  (vLLM stops here: the %s phase fails, see the diagnostics; nothing after it "
                 "is printed or served)\n",
            model_phase_name((ModelPhase)phase));
}

static void report_vllm_lines(FILE *out, const ModelMemPlan *m)
{
    const ModelVllmLines *v = &m->vllm;
    if (v->rank < 0)
        return;
    int failed = failed_phase(m, v->rank);
    char rel[24];
    fprintf(out, "\nvLLM start-up as its log would read (vLLM %s; rank %d, the tightest):\n",
            model_vllm_release_format(m->vllm_release, rel, sizeof rel), v->rank);
    if (v->state_page_bytes > 0) { /* HybridAttentionMambaModelConfig (hybrid models) */
        fprintf(out,
                "  Setting attention block size to %u tokens to ensure that attention page size "
                "is >= mamba page size.\n",
                v->kv_block_size);
        if (v->padded_page_bytes > v->state_page_bytes)
            fprintf(out,
                    "  Padding mamba page size by %.2f%% to ensure that mamba page size and "
                    "attention page size are exactly equal.\n",
                    100.0 * (double)(v->padded_page_bytes - v->state_page_bytes) /
                        (double)v->state_page_bytes);
    }
    if (failed == MODEL_PHASE_LOAD_WEIGHTS) {
        vllm_stops(out, failed);
        return;
    }
    /* "Model loading took X GiB and S seconds" with four decimals up to 0.10, "X GiB memory"
     * with two from 0.11 (gpu_model_runner.py load_model; the logs of tests/data/memory) */
    bool old = m->vllm_release && m->vllm_release < MODEL_VLLM_RELEASE(0, 11, 0, 0);
    if (old)
        fprintf(out, "  Model loading took %.4f GiB\n", gib((double)v->loading_bytes));
    else
        fprintf(out, "  Model loading took %.2f GiB memory\n", gib((double)v->loading_bytes));
    if (failed == MODEL_PHASE_PROFILE_RUN) {
        vllm_stops(out, failed);
        return;
    }
    const ModelMemRank *x = &m->ranks[v->rank];
    /* gpu_worker.py determine_available_memory's DEBUG line (VLLM_LOGGING_LEVEL=DEBUG), from
     * utils/mem_utils.py MemoryProfilingResult: vLLM's own split of the non-KV memory */
    ModelVllmSplit sp;
    model_mem_vllm_split(m, x, &sp);
    fprintf(out,
            "  (DEBUG) Memory profiling takes - seconds. Total non KV cache memory: %.2fGiB; "
            "torch peak memory increase: %.2fGiB; non-torch forward increase memory: %.2fGiB; "
            "weights memory: %.2fGiB.\n",
            gib((double)(sp.total - sp.cudagraph)), gib((double)sp.torch_peak),
            gib((double)sp.non_torch), gib((double)sp.weights));
    if (sp.cudagraph)
        fprintf(out, "  Estimated CUDA graph memory: %.2f GiB total\n", gib((double)sp.cudagraph));
    /* the band: ranksim's non-KV has been up to MODEL_MEM_NON_KV_UNDERESTIMATE low and its
     * median KV error is a few percent high (doc/validation.md) */
    double band = MODEL_MEM_NON_KV_UNDERESTIMATE * (double)non_kv(m, x);
    fprintf(out,
            "  Available KV cache memory: %.2f GiB (on hardware down to %.2f GiB: ranksim's "
            "non-KV has been up to %.1f %% low, doc/validation.md)\n",
            gib((double)v->kv_budget_bytes), gib((double)v->kv_budget_bytes - band),
            100.0 * MODEL_MEM_NON_KV_UNDERESTIMATE);
    if (failed == MODEL_PHASE_CUDAGRAPH_PROFILE) {
        vllm_stops(out, failed);
        return;
    }
    /* gpu_worker.py: the CUDA-graph estimate as a share of the device, added to (and taken from)
     * the utilization, rounded to 4 places */
    uint64_t cg = x->bytes[MODEL_MEM_CUDAGRAPH];
    if (m->cudagraph_in_budget && cg > 0 && m->hbm_bytes > 0) {
        double delta = (double)cg / (double)m->hbm_bytes;
        fprintf(out,
                "  CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                "--gpu-memory-utilization=%.4f is equivalent to --gpu-memory-utilization=%.4f "
                "without CUDA graph memory profiling. To maintain the same effective KV cache "
                "size as before, increase --gpu-memory-utilization to %.4f.\n",
                m->utilization, round((m->utilization - delta) * 1e4) / 1e4,
                MIN(round((m->utilization + delta) * 1e4) / 1e4, 1.0));
    }
    if (failed == MODEL_PHASE_KV_CACHE) { /* determine_available_memory logged the lines above;
                                             the KV cache's allocation fails after them */
        vllm_stops(out, failed);
        return;
    }
    if (v->kv_budget_bytes > 0) {
        char a[40], b[40];
        fprintf(out, "  GPU KV cache size: %s tokens\n", thousands(v->kv_tokens, a, sizeof a));
        fprintf(out, "  Maximum concurrency for %s tokens per request: %.2fx\n",
                thousands(m->max_model_len, b, sizeof b), v->max_concurrency);
    }
}

static void fmt_dur(char *buf, size_t n, int64_t ns)
{
    if (ns < 0)
        g_strlcpy(buf, "-", n);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.2f s", (double)ns / 1e9);
}

/* vLLM's start-up and serving, phase by phase, for the tightest rank: the story in the order
 * of vLLM's log, and where it stopped. */
static void report_phases(FILE *out, const ModelMemPlan *m)
{
    int32_t r = m->vllm.rank >= 0 ? m->vllm.rank : 0;
    if (!m->phases || (uint32_t)r >= m->world)
        return;
    fprintf(out,
            "\nphases (rank %d; times exclude loading, which storage decides; memory on the "
            "device in GiB of %.2f):\n",
            r, gib((double)m->hbm_bytes));
    fprintf(out, "  %-17s %-11s %8s %8s %8s %8s %8s\n", "phase", "status", "start", "time", "alloc",
            "peak", "free");
    for (int k = 0; k < MODEL_PHASE_COUNT; k++) {
        const ModelPhaseRow *ph = &m->phases[r][k];
        const char *st = model_phase_status_name((ModelPhaseStatus)ph->status);
        if (ph->status == MODEL_PHASE_SKIPPED) {
            fprintf(out, "  %-17s %-11s\n", model_phase_name((ModelPhase)k), st);
            continue;
        }
        /* a phase never reached has no time; its memory is what it would have needed */
        bool reached = ph->status != MODEL_PHASE_NOT_REACHED;
        char a[32], b[32];
        fmt_dur(a, sizeof a, k == MODEL_PHASE_LOAD_WEIGHTS || !reached ? -1 : ph->start_ns);
        fmt_dur(b, sizeof b, reached ? ph->dur_ns : -1);
        fprintf(out, "  %-17s %-11s %8s %8s %8.2f %8.2f %8.2f\n", model_phase_name((ModelPhase)k),
                st, a, b, gib((double)ph->allocated_bytes), gib((double)ph->peak_bytes),
                gib((double)ph->free_bytes));
    }
}

static void memory_rows(FILE *out, const ModelMemPlan *m, const char *const *short_names,
                        bool detail);

/* The narrow layout (an 80-column terminal): one row per component, one column per rank class
 * (identical ranks folded), in blocks that fit the width. */
static void memory_columns(FILE *out, const ModelMemPlan *m, const char *const *short_names)
{
    g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autoptr(GPtrArray) labels = g_ptr_array_new_with_free_func(g_free);
    for (uint32_t r = 0; r < m->world;) {
        uint32_t j = r;
        while (j + 1 < m->world && same_mem(&m->ranks[r], &m->ranks[j + 1]))
            j++;
        g_array_append_val(first, r);
        g_ptr_array_add(labels, j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j));
        r = j + 1;
    }
    guint per = (guint)MAX(1, (text_width() - 14) / 12);
    for (guint b = 0; b < first->len; b += per) {
        guint e = MIN(first->len, b + per);
        fprintf(out, "  %-12s", "rank");
        for (guint k = b; k < e; k++)
            fprintf(out, " %11s", (const char *)g_ptr_array_index(labels, k));
        fputc('\n', out);
        for (int c = 0; c < MODEL_MEM_COUNT + 2; c++) {
            fprintf(out, "  %-12s",
                    c < MODEL_MEM_COUNT    ? short_names[c]
                    : c == MODEL_MEM_COUNT ? "non-KV"
                                           : "KV budget");
            for (guint k = b; k < e; k++) {
                const ModelMemRank *x = &m->ranks[g_array_index(first, uint32_t, k)];
                double v = c < MODEL_MEM_COUNT    ? (double)x->bytes[c]
                           : c == MODEL_MEM_COUNT ? (double)non_kv(m, x)
                                                  : (double)x->kv_budget_bytes;
                fprintf(out, " %11.2f", gib(v));
            }
            fputc('\n', out);
        }
    }
}

void report_memory_text(FILE *out, const ModelMemPlan *m, bool detail)
{
    if (!m || !m->world)
        return;
    fprintf(out,
            "\nmemory per rank (GiB; HBM %.2f, requested at %.4g utilization %.2f; runtime "
            "context %.2f%s outside the budget):\n",
            gib((double)m->hbm_bytes), m->utilization, gib((double)m->requested_bytes),
            gib((double)m->context_bytes), m->reserved_in_budget ? "" : " and reserved");
    static const char *const short_names[MODEL_MEM_COUNT] = {"weights",   "scales",   "derived",
                                                             "kv_cache",  "attn_ws",  "activ",
                                                             "cudagraph", "reserved", "outside"};
    /* the wide layout's line: "  " + rank (10) + each component " %9" + non-KV " %9" + KV
     * budget " %10" (memory_rows) */
    const int wide = 2 + 10 + 10 * MODEL_MEM_COUNT + 10 + 11;
    if (text_width() < wide) {
        memory_columns(out, m, short_names);
    } else {
        memory_rows(out, m, short_names, detail);
        return;
    }
    for (uint32_t r = 0; detail && r < m->world;) {
        uint32_t j = r;
        while (j + 1 < m->world && same_mem(&m->ranks[r], &m->ranks[j + 1]))
            j++;
        const ModelMemRank *x = &m->ranks[r];
        g_autofree char *label = j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j);
        fprintf(out, "  tensors of rank %s:\n", label);
        for (guint i = 0; x->items && i < x->items->len; i++) {
            const ModelMemItem *it = g_ptr_array_index(x->items, i);
            fprintf(out, "    %-9s %s %s %s %.4f GiB\n", model_mem_component_name(it->component),
                    it->name, it->shape ? it->shape : "", it->dtype ? it->dtype : "",
                    gib((double)it->bytes));
        }
        r = j + 1;
    }
    report_vllm_lines(out, m);
    report_phases(out, m);
}

/* The wide layout: one row per rank class, one column per component. */
static void memory_rows(FILE *out, const ModelMemPlan *m, const char *const *short_names,
                        bool detail)
{
    fprintf(out, "  %-10s", "rank");
    for (int c = 0; c < MODEL_MEM_COUNT; c++)
        fprintf(out, " %9s", short_names[c]);
    fprintf(out, " %9s %10s\n", "non-KV", "KV budget");
    for (uint32_t r = 0; r < m->world;) {
        uint32_t j = r;
        while (j + 1 < m->world && same_mem(&m->ranks[r], &m->ranks[j + 1]))
            j++;
        const ModelMemRank *x = &m->ranks[r];
        g_autofree char *label = j == r ? g_strdup_printf("%u", r) : g_strdup_printf("%u-%u", r, j);
        fprintf(out, "  %-10s", label);
        for (int c = 0; c < MODEL_MEM_COUNT; c++)
            fprintf(out, " %9.2f", gib((double)x->bytes[c]));
        fprintf(out, " %9.2f %10.2f\n", gib((double)non_kv(m, x)), gib((double)x->kv_budget_bytes));
        if (detail && x->items) {
            for (guint i = 0; i < x->items->len; i++) {
                const ModelMemItem *it = g_ptr_array_index(x->items, i);
                fprintf(out, "      %-9s %-52s %-28s %-8s %12.4f\n",
                        model_mem_component_name(it->component), it->name,
                        it->shape ? it->shape : "", it->dtype ? it->dtype : "",
                        gib((double)it->bytes));
            }
        }
        r = j + 1;
    }
    report_vllm_lines(out, m);
    report_phases(out, m);
}

static void add_memory_json(JsonBuilder *b, const ModelMemPlan *m, bool detail)
{
    json_builder_set_member_name(b, "memory");
    json_builder_begin_object(b);
    add_int(b, "hbm_bytes", (int64_t)m->hbm_bytes);
    add_int(b, "requested_bytes", (int64_t)m->requested_bytes);
    json_builder_set_member_name(b, "utilization");
    json_builder_add_double_value(b, m->utilization);
    add_int(b, "max_model_len", m->max_model_len);
    add_int(b, "context_bytes", (int64_t)m->context_bytes);
    if (m->weights_format)
        add_str(b, "weights_format", m->weights_format);
    if (m->vllm.rank >= 0) {
        /* the start-up log lines of the tightest rank (doc/memory.md, "vLLM's accounting") */
        json_builder_set_member_name(b, "vllm");
        json_builder_begin_object(b);
        add_int(b, "rank", m->vllm.rank);
        add_int(b, "model_loading_bytes", (int64_t)m->vllm.loading_bytes);
        add_int(b, "available_kv_cache_bytes", m->vllm.kv_budget_bytes);
        add_int(b, "kv_cache_tokens", (int64_t)m->vllm.kv_tokens);
        json_builder_set_member_name(b, "max_concurrency");
        json_builder_add_double_value(b, m->vllm.max_concurrency);
        add_int(b, "kv_block_size", m->vllm.kv_block_size);
        ModelVllmSplit sp;
        model_mem_vllm_split(m, &m->ranks[m->vllm.rank], &sp);
        add_int(b, "torch_peak_increase_bytes", (int64_t)sp.torch_peak);
        add_int(b, "non_torch_increase_bytes", (int64_t)sp.non_torch);
        add_int(b, "weights_memory_bytes", (int64_t)sp.weights);
        json_builder_end_object(b);
    }
    json_builder_set_member_name(b, "ranks");
    json_builder_begin_array(b);
    for (uint32_t r = 0; r < m->world; r++) {
        const ModelMemRank *x = &m->ranks[r];
        json_builder_begin_object(b);
        add_int(b, "rank", r);
        json_builder_set_member_name(b, "bytes");
        json_builder_begin_object(b);
        for (int c = 0; c < MODEL_MEM_COUNT; c++)
            add_int(b, model_mem_component_name((ModelMemComponent)c), (int64_t)x->bytes[c]);
        json_builder_end_object(b);
        add_int(b, "non_kv_bytes", (int64_t)non_kv(m, x));
        add_int(b, "kv_budget_bytes", x->kv_budget_bytes);
        add_int(b, "kv_bytes_per_token", (int64_t)x->kv_bytes_per_token);
        if (m->phases) {
            /* vLLM's start-up and serving, phase by phase (doc/database.md, `phases`) */
            json_builder_set_member_name(b, "phases");
            json_builder_begin_array(b);
            for (int k = 0; k < MODEL_PHASE_COUNT; k++) {
                const ModelPhaseRow *ph = &m->phases[r][k];
                json_builder_begin_object(b);
                add_str(b, "phase", model_phase_name((ModelPhase)k));
                add_str(b, "status", model_phase_status_name((ModelPhaseStatus)ph->status));
                if (ph->status != MODEL_PHASE_SKIPPED) {
                    json_builder_set_member_name(b, "start_us");
                    json_builder_add_double_value(b, (double)ph->start_ns / 1e3);
                    json_builder_set_member_name(b, "dur_us");
                    if (ph->dur_ns >= 0)
                        json_builder_add_double_value(b, (double)ph->dur_ns / 1e3);
                    else
                        json_builder_add_null_value(b);
                    add_int(b, "allocated_bytes", (int64_t)ph->allocated_bytes);
                    add_int(b, "peak_bytes", (int64_t)ph->peak_bytes);
                    add_int(b, "free_bytes", ph->free_bytes);
                }
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
        }
        if (detail && x->items) {
            json_builder_set_member_name(b, "items");
            json_builder_begin_array(b);
            for (guint i = 0; i < x->items->len; i++) {
                const ModelMemItem *it = g_ptr_array_index(x->items, i);
                json_builder_begin_object(b);
                add_str(b, "component", model_mem_component_name(it->component));
                add_str(b, "name", it->name);
                add_str(b, "shape", it->shape);
                add_str(b, "dtype", it->dtype);
                add_int(b, "bytes", (int64_t)it->bytes);
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}
