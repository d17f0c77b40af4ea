/* src/output/report-serve.c — the serving part of a report: latency percentiles, throughput, the load
 * of each DP rank and how the schedule was simulated (report.h). */
#include <string.h>

#include "report.h"

/* Seconds as the report prints latencies: ms below 10 s. */
static void lat(FILE *out, double s)
{
    if (s < 10.0)
        fprintf(out, "%10.1f ms", s * 1e3);
    else
        fprintf(out, "%10.2f s ", s);
}

typedef struct {
    uint32_t requests, steps, dummy;
    uint64_t prefill, decode;
} DpLoad;

static DpLoad *dp_loads(const ModelServe *sv, uint32_t *n_dp)
{
    uint32_t n = 1;
    for (guint i = 0; i < sv->steps->len; i++)
        n = MAX(n, g_array_index(sv->steps, ModelServeStep, i).dp + 1);
    for (guint i = 0; i < sv->requests->len; i++)
        n = MAX(n, g_array_index(sv->requests, ModelServeRequest, i).dp + 1);
    DpLoad *l = g_new0(DpLoad, n);
    for (guint i = 0; i < sv->steps->len; i++) {
        const ModelServeStep *x = &g_array_index(sv->steps, ModelServeStep, i);
        l[x->dp].steps++;
        l[x->dp].dummy += x->dummy;
        l[x->dp].prefill += x->prefill_tokens;
        l[x->dp].decode += x->decode_tokens;
    }
    for (guint i = 0; i < sv->requests->len; i++)
        l[g_array_index(sv->requests, ModelServeRequest, i).dp].requests++;
    *n_dp = n;
    return l;
}

static uint32_t n_steps(const ModelServe *sv)
{
    uint32_t n = 0;
    for (guint i = 0; i < sv->steps->len; i++)
        n = MAX(n, g_array_index(sv->steps, ModelServeStep, i).step);
    return n;
}

/* Durations as the report prints them. */
static void dur(FILE *out, int64_t ns)
{
    if (ns < 1000000)
        fprintf(out, "%10.3f us", (double)ns / 1e3);
    else
        fprintf(out, "%10.3f ms", (double)ns / 1e6);
}

/* Hand-written steps (no requests): each step's time, as the `steps` table has it. */
#define STEPS_SHOWN 8

static void steps_text(FILE *out, const ModelServe *sv)
{
    uint32_t n = n_steps(sv);
    if (n == 0) /* a start-up-only run: nothing to time */
        return;
    fprintf(out, "\nsteps (%u, each timed alone without faults; the `steps` table):\n", n);
    if (sv->stopped)
        fprintf(out, "  stopped: %s\n", sv->stopped);
    fprintf(out, "  %-6s %13s %13s %9s %9s %6s\n", "step", "start", "time", "prefill", "decode",
            "seqs");
    int64_t total = 0;
    uint32_t shown = 0, last = 0;
    for (guint i = 0; i < sv->steps->len; i++) {
        const ModelServeStep *x = &g_array_index(sv->steps, ModelServeStep, i);
        if (x->step == last)
            continue; /* one line per step: DP ranks step together */
        last = x->step;
        total += x->end_ns - x->start_ns;
        if (shown++ >= STEPS_SHOWN)
            continue;
        fprintf(out, "  %-6u ", x->step);
        dur(out, x->start_ns), fprintf(out, "  "), dur(out, x->end_ns - x->start_ns);
        fprintf(out, " %9u %9u %6u\n", x->prefill_tokens, x->decode_tokens, x->seqs);
    }
    if (shown > STEPS_SHOWN)
        fprintf(out, "  ... %u more steps\n", shown - STEPS_SHOWN);
    if (shown > 1) {
        fprintf(out, "  mean step time");
        dur(out, total / shown);
        fprintf(out, "\n");
    }
}

void report_serve_text(FILE *out, const ModelServe *sv)
{
    if (!sv)
        return;
    if (sv->requests->len == 0) {
        steps_text(out, sv);
        return;
    }
    ModelServeSummary s;
    model_serve_summarize((const ModelServeRequest *)(const void *)sv->requests->data,
                          sv->requests->len, &s);
    uint32_t preempted = 0, chunked = 0;
    uint64_t cached = 0, prompt = 0;
    for (guint i = 0; i < sv->requests->len; i++) {
        const ModelServeRequest *q = &g_array_index(sv->requests, ModelServeRequest, i);
        preempted += q->preemptions > 0;
        chunked += q->chunks > 1;
        cached += q->cached_tokens;
        prompt += q->prompt;
    }
    fprintf(out,
            "\nserving (vLLM V1 scheduler; %u requests, %u steps, KV cache %u blocks of %u "
            "tokens per DP rank):\n",
            sv->requests->len, n_steps(sv), sv->kv_blocks, sv->block_tokens);
    fprintf(out, "  finished %u of %u", s.finished, sv->requests->len);
    if (chunked)
        fprintf(out, "; %u prefilled in chunks", chunked);
    if (preempted)
        fprintf(out, "; %u preempted (recomputed)", preempted);
    if (cached)
        fprintf(out,
                "; prefix cache: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " prompt tokens (%.1f %%)",
                cached, prompt, 100.0 * (double)cached / (double)MAX(prompt, 1u));
    fprintf(out, "\n");
    if (sv->stopped)
        fprintf(out, "  stopped: %s\n", sv->stopped);
    if (s.finished) {
        fprintf(out, "  %-18s %13s %13s %13s\n", "latency", "p50", "p90", "p99");
        fprintf(out, "  %-18s", "TTFT");
        lat(out, s.ttft_p50), lat(out, s.ttft_p90), lat(out, s.ttft_p99);
        fprintf(out, "\n  %-18s", "TPOT (ITL mean)");
        lat(out, s.tpot_p50), lat(out, s.tpot_p90), lat(out, s.tpot_p99);
        fprintf(out, "\n  throughput: %.1f output tokens/s, %.1f total tokens/s over %.2f s\n",
                s.output_tok_per_s, s.total_tok_per_s, s.duration_s);
    }
    uint32_t n_dp = 0;
    g_autofree DpLoad *l = dp_loads(sv, &n_dp);
    if (n_dp > 1) {
        fprintf(out, "  %-8s %9s %9s %9s %14s %14s\n", "DP rank", "requests", "steps", "dummy",
                "prefill tok", "decode tok");
        for (uint32_t d = 0; d < n_dp; d++)
            fprintf(out, "  %-8u %9u %9u %9u %14" G_GUINT64_FORMAT " %14" G_GUINT64_FORMAT "\n", d,
                    l[d].requests, l[d].steps, l[d].dummy, l[d].prefill, l[d].decode);
    }
    fprintf(out,
            "  steps simulated: %" G_GUINT64_FORMAT
            ", reused from an identical step: %" G_GUINT64_FORMAT "\n",
            sv->simulated, sv->reused);
}

static void num(JsonBuilder *b, const char *k, double v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_double_value(b, v);
}

static void inum(JsonBuilder *b, const char *k, int64_t v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_int_value(b, v);
}

void report_serve_json(JsonBuilder *b, const ModelServe *sv)
{
    ModelServeSummary s;
    model_serve_summarize((const ModelServeRequest *)(const void *)sv->requests->data,
                          sv->requests->len, &s);
    if (sv->requests->len == 0) { /* hand-written steps: their times */
        json_builder_set_member_name(b, "steps");
        json_builder_begin_array(b);
        uint32_t last = 0;
        for (guint i = 0; i < sv->steps->len; i++) {
            const ModelServeStep *x = &g_array_index(sv->steps, ModelServeStep, i);
            if (x->step == last)
                continue;
            last = x->step;
            json_builder_begin_object(b);
            inum(b, "step", x->step);
            num(b, "start_us", (double)x->start_ns / 1e3);
            num(b, "end_us", (double)x->end_ns / 1e3);
            inum(b, "prefill_tokens", x->prefill_tokens);
            inum(b, "decode_tokens", x->decode_tokens);
            inum(b, "seqs", x->seqs);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        return;
    }
    json_builder_set_member_name(b, "serving");
    json_builder_begin_object(b);
    inum(b, "requests", sv->requests->len);
    inum(b, "finished", s.finished);
    inum(b, "steps", n_steps(sv));
    inum(b, "kv_blocks", sv->kv_blocks);
    inum(b, "block_tokens", sv->block_tokens);
    uint64_t cached = 0;
    for (guint i = 0; i < sv->requests->len; i++)
        cached += g_array_index(sv->requests, ModelServeRequest, i).cached_tokens;
    inum(b, "prefix_cached_tokens", (int64_t)cached);
    inum(b, "simulated_steps", (int64_t)sv->simulated);
    inum(b, "reused_steps", (int64_t)sv->reused);
    json_builder_set_member_name(b, "stopped");
    if (sv->stopped)
        json_builder_add_string_value(b, sv->stopped);
    else
        json_builder_add_null_value(b);
    num(b, "ttft_p50_s", s.ttft_p50);
    num(b, "ttft_p90_s", s.ttft_p90);
    num(b, "ttft_p99_s", s.ttft_p99);
    num(b, "tpot_p50_s", s.tpot_p50);
    num(b, "tpot_p90_s", s.tpot_p90);
    num(b, "tpot_p99_s", s.tpot_p99);
    num(b, "duration_s", s.duration_s);
    num(b, "output_tokens_per_s", s.output_tok_per_s);
    num(b, "total_tokens_per_s", s.total_tok_per_s);
    uint32_t n_dp = 0;
    g_autofree DpLoad *l = dp_loads(sv, &n_dp);
    json_builder_set_member_name(b, "per_dp_rank");
    json_builder_begin_array(b);
    for (uint32_t d = 0; d < n_dp; d++) {
        json_builder_begin_object(b);
        inum(b, "dp", d);
        inum(b, "requests", l[d].requests);
        inum(b, "steps", l[d].steps);
        inum(b, "dummy_steps", l[d].dummy);
        inum(b, "prefill_tokens", (int64_t)l[d].prefill);
        inum(b, "decode_tokens", (int64_t)l[d].decode);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}
