/* model/serve.h — requests served the way vLLM V1 serves them: each DP rank's scheduler builds
 * every step (token budget, max_num_seqs, chunked prefill, KV blocks, preemption by recompute),
 * the DP ranks step together, and each step is lowered and simulated on every rank to learn how
 * long it takes, which decides what has arrived by the next one.
 *
 * The result is the workload of steps the scheduler made (lowered and simulated as one program
 * by the caller, like a hand-written workload) with the per-step and per-request rows the store
 * keeps (tables `steps` and `requests`, doc/database.md). doc/serving.md has the rules and
 * their sources in vLLM, and what is approximated.
 *
 * Costs: one lowering and one simulation of one step per distinct step (cached by the step's
 * exact contents unless `exact`); scheduler work per step linear in the requests the step
 * touches (its batch, its finished requests, the prefix-cache entries it looks up or evicts).
 */
#ifndef MODEL_SERVE_H
#define MODEL_SERVE_H

#include <glib.h>
#include <stdint.h>

#include "../sched/engine.h"
#include "lower.h"

#define MODEL_SERVE_ERROR (model_serve_error_quark())
GQuark model_serve_error_quark(void);

typedef struct {
    uint32_t prompt;    /* prompt tokens, >= 1 */
    uint32_t output;    /* tokens to generate, >= 1 */
    int64_t arrival_ns; /* when the request reaches the server (>= 0) */
    uint32_t prefix_id; /* requests with the same id > 0 share their first `prefix` tokens (a
                           system prompt, a conversation's history); 0: none */
    uint32_t prefix;    /* tokens of the shared prefix, <= prompt */
} ModelRequest;

/* A request's record of its life. */
typedef struct {
    uint32_t id;            /* 0-based, in the order given (the trace's order) */
    uint32_t dp;            /* the DP rank vLLM's load balancer placed it on */
    int64_t arrival_ns;     /* when it reached the server: its arrival, or with a
                               max_concurrency the moment a slot freed for it, if later */
    int64_t first_token_ns; /* end of the step that sampled its first token; -1: never */
    int64_t finish_ns;      /* end of the step that sampled its last token; -1: never */
    uint32_t prompt, output;
    uint32_t generated;     /* tokens sampled (== output when it finished) */
    uint32_t preemptions;   /* times its KV blocks were taken back (recomputed after) */
    uint32_t chunks;        /* prefill steps it took (more than one: chunked) */
    uint32_t cached_tokens; /* prompt tokens found in the prefix cache when it was first
                               scheduled (not computed) */
} ModelServeRequest;

/* One DP rank's part of one step. */
typedef struct {
    uint32_t step; /* 1-based */
    uint32_t dp;
    int64_t start_ns, end_ns; /* the step's (the same for every DP rank: they step together) */
    uint32_t prefill_tokens;  /* new prompt tokens scheduled (chunks included) */
    uint32_t decode_tokens;   /* sequences decoding one token */
    uint32_t seqs;            /* sequences in the batch */
    uint32_t padded_tokens;   /* tokens the rank runs: its own, padded across DP and to the
                                 CUDA-graph size; 0 rows of its own = a dummy batch */
    uint32_t kv_blocks_used;  /* blocks held after the step, of ModelServe.kv_blocks */
    bool dummy;               /* an idle DP rank running a dummy batch */
} ModelServeStep;

typedef struct {
    ModelWorkload *workload; /* the steps, owned: lower this */
    GArray *steps;           /* ModelServeStep, per step x DP rank (idle DP ranks of a dense
                                model have none) */
    GArray *requests;        /* ModelServeRequest, by id */
    uint32_t kv_blocks;      /* usable KV blocks of each DP rank (vLLM's num_gpu_blocks - 1) */
    uint32_t block_tokens;   /* tokens per block as the scheduler counts them (block_size x
                                DCP x PCP) */
    uint64_t simulated;      /* steps lowered and simulated */
    uint64_t reused;         /* steps whose time came from the cache */
    uint64_t visits;         /* the scheduler's work: requests it looked at (scheduled,
                                admitted, finished, kept running), prefix-cache look-ups and
                                evictions. Linear: a few per scheduled sequence and per
                                request (tests check it) */
    char *stopped;           /* why scheduling stopped before every request finished (a step
                                that hangs, KV too small for a request), or NULL; owned */
} ModelServe;

typedef struct {
    const ModelLowerInput *lower; /* arch, plan, engine, cost, hw; its workload is ignored */
    SchedConfig sim;              /* the fabric and watchdog for the step simulations (faults
                                     and recording are cleared: the schedule is the one vLLM
                                     makes on fault-free hardware) */
    uint64_t kv_tokens;           /* KV-cache capacity of one DP rank in tokens (vLLM's "GPU KV
                                     cache size: N tokens"); 0: no KV cache */
    bool exact;                   /* simulate every step, even one seen before */
    uint32_t max_concurrency;     /* a closed-loop client (vllm bench serve --max-concurrency):
                                     at most this many requests sent and not finished; a request
                                     whose arrival finds every slot taken is sent when one frees
                                     (the end of the step that finished a request) and its
                                     ModelServeRequest.arrival_ns is that moment. 0: open loop */
    bool coarse_contexts;         /* time a step by a representative of its neighbours: every
                                     decode at the mean decode context of its DP rank, and that
                                     and every prefill cached context rounded to the middle of
                                     its bucket (1/16 of its power of two wide), for the
                                     simulation and the step cache; the schedule and the
                                     workload keep the exact contexts. APPROXIMATION for
                                     validation replays of long runs; off by default */
    /* called after every step with the steps made and the requests finished; may be NULL */
    void (*progress)(void *data, uint64_t steps, uint32_t finished, uint32_t total);
    void *progress_data;
} ModelServeInput;

/* Serves `reqs` (n of them, any order of arrival). Fails (MODEL_SERVE_ERROR, a message naming
 * the request) only for a request vLLM would refuse on arrival: prompt + output longer than
 * max_model_len. Caller frees the result. */
ModelServe *model_serve_run(const ModelServeInput *in, const ModelRequest *reqs, uint32_t n,
                            GError **error);
/* Times the steps of a hand-written workload `w` the way serving times its own: each step
 * lowered and simulated alone, fault-free, one after the other (a step's `idle_ns` before it),
 * identical steps simulated once. The result has one `steps` row per step and DP rank that
 * runs it, no requests, kv_blocks 0; `stopped` says which step does not complete, the steps
 * after it are not timed. Never fails. Caller frees. */
ModelServe *model_serve_time_steps(const ModelServeInput *in, const ModelWorkload *w);
/* The rows of a workload of one step `st` whose time is already known (`dur_ns`: the run that
 * simulated it fault-free), or, dur_ns < 0, a ModelServe saying it does not complete (`why`). */
/* Why a step's simulation did not complete, as the `steps` rows word it: the first error
 * diagnostic's "kind: message", or "failed". Caller frees. */
char *model_serve_failure_why(const SchedOutcome *o);
ModelServe *model_serve_one_step(const ModelLowerInput *li, const ModelStep *st, int64_t dur_ns,
                                 const char *why);
void model_serve_free(ModelServe *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ModelServe, model_serve_free)

/* The DP rank vLLM's load balancer gives a new request: the lowest waiting x 4 + running
 * (vllm/v1/engine/core_client.py DPLBAsyncMPClient.get_core_engine_for_request), the first
 * such rank on a tie. `waiting` and `running` have `dp` entries. */
uint32_t model_serve_pick_dp(const uint32_t *waiting, const uint32_t *running, uint32_t dp);

/* Latency summary of finished requests (seconds): time to first token, time per output token
 * after the first ((finish - first) / (output - 1), requests with output > 1), and the
 * inter-token latencies are step gaps. */
typedef struct {
    uint32_t finished;
    double ttft_mean, tpot_mean; /* means over requests, as vllm bench serve's mean_ttft_ms and
                                    mean_tpot_ms */
    double ttft_p50, ttft_p90, ttft_p99;
    double tpot_p50, tpot_p90, tpot_p99;
    double duration_s;       /* first arrival to last finish */
    double output_tok_per_s; /* generated tokens / duration */
    double total_tok_per_s;  /* (prompt + generated) / duration */
} ModelServeSummary;

void model_serve_summarize(const ModelServeRequest *reqs, uint32_t n, ModelServeSummary *out);
/* The p-th percentile (0..100) of `v` (n values, sorted in place), linear between ranks as
 * numpy's default; 0 for n == 0. */
double model_percentile(double *v, uint32_t n, double p);

#endif
