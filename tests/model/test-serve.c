/* tests/model/test-serve.c — model/serve: the closed-loop client (max_concurrency, vllm bench
 * serve --max-concurrency), the mean TTFT / TPOT of the summary, and the coarse step cache of
 * validation replays. Llama-3.1-8B on one flat device, a KV cache large enough for every test
 * (no preemption), so the schedule depends only on arrivals and the client's slots. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../model/serve.h"

typedef struct {
    ModelArch arch;
    ModelPlan *plan;
    ModelEngine engine;
    ModelCost *cost;
    ModelLowerInput lower;
    ModelServeInput in;
} Fixture;

static void setup(Fixture *f)
{
    memset(f, 0, sizeof *f);
    GError *err = NULL;
    cr_assert(model_arch_load_preset("llama-3.1-8b", &f->arch, &err), "%s",
              err ? err->message : "");
    ModelParallel par;
    model_parallel_defaults(&par);
    f->plan = model_plan_new(&par, &f->arch, &err);
    cr_assert_not_null(f->plan, "%s", err ? err->message : "");
    model_engine_defaults(&f->engine);
    f->engine.max_model_len = 8192;
    f->cost = model_cost_new(net_hardware_flat(), NULL);
    f->lower = (ModelLowerInput){.arch = &f->arch,
                                 .plan = f->plan,
                                 .engine = &f->engine,
                                 .cost = f->cost,
                                 .hw = net_hardware_flat(),
                                 .broken = MODEL_BREAK_NONE};
    f->in =
        (ModelServeInput){.lower = &f->lower, .sim = sched_config_default(), .kv_tokens = 1 << 20};
    f->in.sim.fabric.hw = net_hardware_flat();
    f->in.sim.fabric.n_ranks = f->plan->world;
}

static void teardown(Fixture *f)
{
    model_plan_free(f->plan);
    model_cost_free(f->cost);
}

static ModelServe *serve(const Fixture *f, const ModelRequest *r, uint32_t n)
{
    GError *err = NULL;
    ModelServe *s = model_serve_run(&f->in, r, n, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_null(s->stopped, "%s", s->stopped);
    return s;
}

static const ModelServeRequest *req(const ModelServe *s, uint32_t i)
{
    return &g_array_index(s->requests, ModelServeRequest, i);
}

/* Requests in flight (sent, not finished) at time t. */
static uint32_t in_flight(const ModelServe *s, int64_t t)
{
    uint32_t k = 0;
    for (guint i = 0; i < s->requests->len; i++)
        k += req(s, i)->arrival_ns <= t && req(s, i)->finish_ns > t;
    return k;
}

Test(serve, never_more_than_max_concurrency_requests_in_flight)
{
    Fixture f;
    setup(&f);
    ModelRequest r[12];
    for (uint32_t i = 0; i < 12; i++) /* all at 0 (rate inf), outputs of different lengths */
        r[i] = (ModelRequest){.prompt = 64 + 16 * i, .output = 3 + i % 5};
    f.in.max_concurrency = 3;
    g_autoptr(ModelServe) s = serve(&f, r, 12);
    uint32_t most = 0;
    for (guint i = 0; i < s->requests->len; i++) {
        cr_assert_eq(req(s, i)->generated, r[i].output, "request %u unfinished", i);
        most = MAX(most, in_flight(s, req(s, i)->arrival_ns));
    }
    cr_assert_eq(most, 3, "at most 3 in flight, and the slots are used: %u", most);
    for (guint i = 0; i < s->steps->len; i++)
        cr_assert_leq(g_array_index(s->steps, ModelServeStep, i).seqs, 3);
    teardown(&f);
}

Test(serve, a_freed_slot_sends_the_next_request_at_that_steps_end)
{
    Fixture f;
    setup(&f);
    ModelRequest r[3] = {{.prompt = 128, .output = 4},
                         {.prompt = 256, .output = 4},
                         {.prompt = 128, .output = 2, .arrival_ns = 100000000000}};
    f.in.max_concurrency = 1;
    g_autoptr(ModelServe) s = serve(&f, r, 3);
    /* the second waits for the first's last token; its clock starts then */
    cr_assert_eq(req(s, 1)->arrival_ns, req(s, 0)->finish_ns);
    cr_assert_gt(req(s, 1)->first_token_ns, req(s, 1)->arrival_ns);
    /* the step that starts at that moment carries its prompt */
    bool found = false;
    for (guint i = 0; i < s->steps->len; i++) {
        const ModelServeStep *x = &g_array_index(s->steps, ModelServeStep, i);
        if (x->start_ns == req(s, 0)->finish_ns)
            found = x->prefill_tokens == 256 && x->seqs == 1;
    }
    cr_assert(found, "no step of the second request's prompt at the first's finish");
    /* a request arriving after a slot freed keeps its own arrival */
    cr_assert_eq(req(s, 2)->arrival_ns, r[2].arrival_ns);
    teardown(&f);
}

Test(serve, a_limit_at_least_the_requests_is_the_open_loop)
{
    Fixture f;
    setup(&f);
    ModelRequest r[6];
    for (uint32_t i = 0; i < 6; i++)
        r[i] = (ModelRequest){.prompt = 200 + 50 * i, .output = 5, .arrival_ns = 3000000 * i};
    g_autoptr(ModelServe) open = serve(&f, r, 6);
    f.in.max_concurrency = 6;
    g_autoptr(ModelServe) closed = serve(&f, r, 6);
    cr_assert_eq(open->steps->len, closed->steps->len);
    for (uint32_t i = 0; i < 6; i++) {
        cr_assert_eq(req(open, i)->arrival_ns, req(closed, i)->arrival_ns);
        cr_assert_eq(req(open, i)->first_token_ns, req(closed, i)->first_token_ns);
        cr_assert_eq(req(open, i)->finish_ns, req(closed, i)->finish_ns);
    }
    /* and a limit below changes the schedule: later requests wait */
    f.in.max_concurrency = 1;
    g_autoptr(ModelServe) one = serve(&f, r, 6);
    cr_assert_gt(req(one, 5)->arrival_ns, r[5].arrival_ns);
    teardown(&f);
}

Test(serve, the_summary_means_are_vllm_bench_means)
{
    ModelServeRequest q[3] = {
        {.arrival_ns = 0, .first_token_ns = 100, .finish_ns = 1100, .output = 11, .generated = 11},
        {.arrival_ns = 50, .first_token_ns = 350, .finish_ns = 650, .output = 4, .generated = 4},
        {.arrival_ns = 0, .first_token_ns = 200, .finish_ns = 200, .output = 1, .generated = 1},
    };
    ModelServeSummary s;
    model_serve_summarize(q, 3, &s);
    /* TTFT over all three; TPOT over those with more than one token: (100 + 100) / 2 ns */
    cr_assert_float_eq(s.ttft_mean, (100 + 300 + 200) / 3.0 / 1e9, 1e-15);
    cr_assert_float_eq(s.tpot_mean, 100 / 1e9, 1e-15);
}

Test(serve, coarse_contexts_keep_the_schedule_and_simulate_fewer_steps)
{
    Fixture f;
    setup(&f);
    ModelRequest r[4];
    for (uint32_t i = 0; i < 4; i++)
        r[i] = (ModelRequest){.prompt = 1000 + 7 * i, .output = 300};
    f.in.max_concurrency = 2;
    g_autoptr(ModelServe) exact = serve(&f, r, 4);
    f.in.coarse_contexts = true;
    g_autoptr(ModelServe) coarse = serve(&f, r, 4);
    cr_assert_eq(exact->steps->len, coarse->steps->len);
    cr_assert_lt(coarse->simulated * 4, exact->simulated,
                 "%" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT, coarse->simulated,
                 exact->simulated);
    ModelServeSummary a, b;
    model_serve_summarize((const ModelServeRequest *)(const void *)exact->requests->data, 4, &a);
    model_serve_summarize((const ModelServeRequest *)(const void *)coarse->requests->data, 4, &b);
    cr_assert_float_eq(b.tpot_mean, a.tpot_mean, 0.005 * a.tpot_mean, "%g vs %g", b.tpot_mean,
                       a.tpot_mean);
    cr_assert_float_eq(b.ttft_mean, a.ttft_mean, 0.005 * a.ttft_mean, "%g vs %g", b.ttft_mean,
                       a.ttft_mean);
    teardown(&f);
}

/* The scheduler's work is linear in what the steps touch (issue 27: it must not grow with the
 * requests served so far): many requests, each with a prefix of its own so the prefix cache
 * fills and evicts, cost a few visits per scheduled sequence and per request, counted by
 * ModelServe.visits — a scan of every cached prefix per look-up, or of the running list per
 * finished request, would be ~N^2 / 2 = 4.5 million here. */
Test(serve, scheduler_work_is_linear_in_what_the_steps_touch)
{
    Fixture f;
    setup(&f);
    f.engine.enable_prefix_caching = true;
    f.in.kv_tokens = 1 << 16; /* 4,096 blocks: the prefixes do not all fit, some are evicted */
    enum { N = 3000 };
    g_autofree ModelRequest *r = g_new0(ModelRequest, N);
    for (uint32_t i = 0; i < N; i++)
        r[i] = (ModelRequest){.prompt = 256,
                              .output = 2,
                              .arrival_ns = (int64_t)i * 200000,
                              .prefix_id = i + 1,
                              .prefix = 128};
    ModelServe *s = serve(&f, r, N);
    uint64_t seqs = 0;
    for (guint i = 0; i < s->steps->len; i++)
        seqs += g_array_index(s->steps, ModelServeStep, i).seqs;
    for (uint32_t i = 0; i < N; i++)
        cr_assert_geq(req(s, i)->finish_ns, 0, "request %u never finished", i);
    cr_assert_leq(s->visits, 4 * seqs + 8 * (uint64_t)N,
                  "%" G_GUINT64_FORMAT " visits for %" G_GUINT64_FORMAT " scheduled seqs",
                  s->visits, seqs);
    model_serve_free(s);
    teardown(&f);
}
