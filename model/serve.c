/* model/serve.c — vLLM V1's scheduler over simulated steps; see serve.h and doc/serving.md.
 *
 * The scheduler follows vllm/v1/core/sched/scheduler.py Scheduler.schedule(): first the running
 * requests in order (decodes and the next chunk of partly prefilled prompts), each taking
 * min(what it has left, the token budget); a request whose KV blocks cannot be allocated
 * preempts the last running request (its blocks freed, recomputed from scratch later, put back
 * at the head of the waiting queue) until it fits or preempts itself. Then, when nothing was
 * preempted this step, waiting requests in order while the budget lasts, fewer than
 * max_num_seqs run and their blocks fit; chunked prefill gives a prompt larger than the budget
 * the budget and the rest in later steps. KV blocks: ceil(tokens / block) per request
 * (KVCacheManager.allocate_slots), from a pool of num_gpu_blocks - 1 (block 0 is the null
 * block, vllm/v1/core/block_pool.py).
 */
#include "serve.h"

#include <math.h>
#include <string.h>

#include "memory.h"

G_DEFINE_QUARK(ranksim - model - serve - error - quark, model_serve_error)

enum { REQ_PENDING = 0, REQ_WAITING, REQ_RUNNING, REQ_DONE };

typedef struct {
    uint32_t computed; /* num_computed_tokens */
    uint32_t blocks;   /* KV blocks held of its own */
    uint32_t shared;   /* blocks of its prefix's cache entry it uses (not in `blocks`) */
    bool refs_prefix;  /* it holds a reference on its prefix's entry */
    uint8_t state;
    uint32_t epoch; /* preemptions so far: a batch in flight from before is void for it */
} Req;

/* A cached prefix: the full blocks of a shared prefix, computed once. Referenced by the
 * running requests that use it; unreferenced, its blocks count as free but stay cached until
 * the pool needs them (least recently used first), as vLLM's free block queue keeps a freed
 * block's hash until the block is reused. */
typedef struct {
    uint32_t id;
    uint32_t blocks;
    uint32_t refs;
    uint64_t used; /* the step it was last released */
    GList *lru;    /* its link in Dp.lru while unreferenced, else NULL */
} Prefix;

typedef struct {
    GQueue waiting;       /* request ids (GUINT_TO_POINTER(id + 1)) */
    GArray *running;      /* uint32 ids, in scheduling order */
    uint32_t free_blocks; /* includes `evictable` */
    uint32_t evictable;   /* blocks of unreferenced cached prefixes */
    GHashTable *prefixes; /* prefix id -> Prefix* (owned): one probe per look-up */
    GQueue lru;           /* the unreferenced Prefix*, least recently released first (release
                             times only grow, so appending keeps the order) */
} Dp;

/* One request's part of a scheduled batch. vLLM advances num_computed_tokens when it schedules
 * (Scheduler._update_after_schedule), so a decode whose token is still in flight has nothing
 * to schedule, and a prompt's next chunk can go into the next batch at once. */
typedef struct {
    uint32_t id, tokens;
    uint32_t before; /* computed tokens before this batch */
    uint32_t epoch;  /* the request's epoch when scheduled */
    bool decode;     /* one new token after a sampled one */
    bool samples;    /* the batch computes the last known token: its end samples one */
} Sched;

/* A batch in flight (PP keeps up to PP of them: vLLM's batch queue). */
typedef struct {
    uint32_t step;     /* 0-based index in the workload */
    int64_t done_ns;   /* when its last stage finishes */
    GPtrArray *scheds; /* GArray<Sched> per DP rank, owned */
} Flight;

typedef struct {
    const ModelServeInput *in;
    const ModelRequest *reqs;
    ModelServe *out;
    Req *st;
    Dp *dp;
    uint32_t n_dp;
    GHashTable *cache; /* step key -> int64 duration (boxed) */
    GString *key;
    bool validated;
    uint64_t step_no;
    GArray *slots; /* max_concurrency: int64 times the client's free slots freed, oldest
                      first from `slot_head` (NULL: open loop) */
    guint slot_head;
} Srv;

static Prefix *prefix_find(Srv *v, Dp *d, uint32_t id)
{
    v->out->visits++;
    return id ? g_hash_table_lookup(d->prefixes, GUINT_TO_POINTER(id)) : NULL;
}

/* An unreferenced entry referenced again leaves the eviction order. */
static void prefix_revive(Dp *d, Prefix *p)
{
    if (p->lru)
        g_queue_delete_link(&d->lru, p->lru);
    p->lru = NULL;
}

/* Takes `need` blocks from the free pool (the caller checked they are there), evicting the
 * least recently released unreferenced prefixes whose blocks that takes. */
static void take_blocks(Dp *d, uint32_t need, uint64_t *visits)
{
    d->free_blocks -= need;
    while (d->evictable > d->free_blocks) {
        (*visits)++;
        Prefix *p = g_queue_pop_head(&d->lru);
        if (!p)
            break; /* cannot happen: evictable counts unreferenced entries only */
        d->evictable -= p->blocks;
        g_hash_table_remove(d->prefixes, GUINT_TO_POINTER(p->id)); /* frees p */
    }
}

/* A request gives back its blocks and its prefix reference. */
static void release(Srv *v, Dp *d, uint32_t id)
{
    Req *r = &v->st[id];
    d->free_blocks += r->blocks;
    r->blocks = 0;
    if (r->refs_prefix) {
        Prefix *p = prefix_find(v, d, v->reqs[id].prefix_id);
        if (p && --p->refs == 0) {
            d->free_blocks += p->blocks;
            d->evictable += p->blocks;
            p->used = v->step_no;
            g_queue_push_tail(&d->lru, p);
            p->lru = d->lru.tail;
        }
    }
    r->refs_prefix = false;
    r->shared = 0;
}

uint32_t model_serve_pick_dp(const uint32_t *waiting, const uint32_t *running, uint32_t dp)
{
    uint32_t best = 0;
    uint64_t best_score = UINT64_MAX;
    for (uint32_t d = 0; d < dp; d++) {
        uint64_t score = (uint64_t)waiting[d] * 4 + running[d];
        if (score < best_score)
            best = d, best_score = score;
    }
    return best;
}

static uint32_t req_tokens(const Srv *v, uint32_t id)
{
    return v->reqs[id].prompt + g_array_index(v->out->requests, ModelServeRequest, id).generated;
}

static uint32_t blocks_for(const Srv *v, uint64_t tokens)
{
    uint64_t b = v->out->block_tokens;
    return (uint32_t)((tokens + b - 1) / b);
}

static ModelServeRequest *rec(Srv *v, uint32_t id)
{
    return &g_array_index(v->out->requests, ModelServeRequest, id);
}

static void place(Srv *v, uint32_t id)
{
    uint32_t waiting[v->n_dp ? v->n_dp : 1], running[v->n_dp ? v->n_dp : 1];
    for (uint32_t d = 0; d < v->n_dp; d++) {
        waiting[d] = v->dp[d].waiting.length;
        running[d] = v->dp[d].running->len;
    }
    uint32_t d = model_serve_pick_dp(waiting, running, v->n_dp);
    rec(v, id)->dp = d;
    v->st[id].state = REQ_WAITING;
    g_queue_push_tail(&v->dp[d].waiting, GUINT_TO_POINTER(id + 1));
}

static void preempt(Srv *v, Dp *d, uint32_t id)
{
    release(v, d, id);
    v->st[id].computed = 0;
    v->st[id].epoch++;
    v->st[id].state = REQ_WAITING;
    rec(v, id)->preemptions++;
    g_queue_push_head(&d->waiting, GUINT_TO_POINTER(id + 1));
}

static void cache_prefix(Srv *v, Dp *d, uint32_t id);

/* Records a scheduled request and advances it, as vLLM does when it schedules. */
static void take(Srv *v, Dp *d, GArray *out, uint32_t id, uint32_t n)
{
    Req *r = &v->st[id];
    ModelServeRequest *q = rec(v, id);
    Sched s = {id,
               n,
               r->computed,
               r->epoch,
               q->generated > 0 && n == 1 && r->computed + 1 == req_tokens(v, id),
               r->computed + n == req_tokens(v, id)};
    g_array_append_val(out, s);
    if (r->computed < v->reqs[id].prompt)
        q->chunks++;
    r->computed += n;
    cache_prefix(v, d, id);
}

/* One DP rank's share of the next step, in V1's order. */
static void schedule_dp(Srv *v, Dp *d, GArray *out)
{
    const ModelEngine *e = v->in->lower->engine;
    uint32_t budget = e->max_num_batched_tokens;
    bool preempted = false;
    for (guint i = 0; i < d->running->len && budget > 0;) {
        uint32_t id = g_array_index(d->running, uint32_t, i);
        Req *r = &v->st[id];
        v->out->visits++;
        uint32_t n = MIN(req_tokens(v, id) - r->computed, budget);
        if (n == 0) {
            i++;
            continue;
        }
        bool ok = false;
        for (;;) {
            uint32_t need = blocks_for(v, (uint64_t)r->computed + n);
            need = need > r->blocks + r->shared ? need - r->blocks - r->shared : 0;
            if (need <= d->free_blocks) {
                take_blocks(d, need, &v->out->visits);
                r->blocks += need;
                ok = true;
                break;
            }
            uint32_t victim = g_array_index(d->running, uint32_t, d->running->len - 1);
            g_array_set_size(d->running, d->running->len - 1);
            preempt(v, d, victim);
            preempted = true;
            if (victim == id)
                break;
        }
        if (!ok)
            break;
        take(v, d, out, id, n);
        budget -= n;
        i++;
    }
    if (preempted)
        return;
    while (d->waiting.length && budget > 0 && d->running->len < e->max_num_seqs) {
        uint32_t id = GPOINTER_TO_UINT(g_queue_peek_head(&d->waiting)) - 1;
        Req *r = &v->st[id];
        v->out->visits++;
        /* Prefix cache (KVCacheManager.get_computed_blocks): the full blocks of its prefix
         * that are cached, but never the whole prompt (its last token is computed). */
        const ModelRequest *rq = &v->reqs[id];
        Prefix *p = e->enable_prefix_caching ? prefix_find(v, d, rq->prefix_id) : NULL;
        uint32_t hit = 0;
        if (p && r->computed == 0) {
            uint32_t usable = MIN(rq->prefix, req_tokens(v, id) - 1);
            hit = MIN(p->blocks, usable / v->out->block_tokens);
        }
        uint32_t computed = r->computed + hit * v->out->block_tokens;
        uint32_t n = MIN(req_tokens(v, id) - computed, budget);
        uint32_t need = blocks_for(v, (uint64_t)computed + n) - hit;
        uint32_t revive = hit && p->refs == 0 ? p->blocks : 0; /* an unreferenced entry's
                                                                  blocks leave the free pool */
        if (need + revive > d->free_blocks)
            break;
        g_queue_pop_head(&d->waiting);
        if (hit) {
            if (p->refs++ == 0) {
                d->free_blocks -= p->blocks;
                d->evictable -= p->blocks;
                prefix_revive(d, p);
            }
            r->refs_prefix = true;
            r->shared = hit;
            r->computed = computed;
            if (rec(v, id)->chunks == 0 && rec(v, id)->preemptions == 0)
                rec(v, id)->cached_tokens = computed;
        }
        take_blocks(d, need, &v->out->visits);
        r->blocks = need;
        r->state = REQ_RUNNING;
        g_array_append_val(d->running, id);
        take(v, d, out, id, n);
        budget -= n;
    }
}

/* The batch a DP rank's scheduled requests make: decodes (one new token after a sampled one)
 * and prefills (a prompt, a chunk of it, or a preempted request's recompute). */
static ModelBatch *batch_of(Srv *v, const GArray *sched)
{
    ModelBatch *b = model_batch_new();
    (void)v;
    for (guint i = 0; i < sched->len; i++) {
        const Sched *s = &g_array_index(sched, Sched, i);
        if (s->decode) {
            uint32_t ctx = s->before + 1;
            g_array_append_val(b->decode, ctx);
        } else {
            model_batch_add_prefill(b, s->tokens, s->before);
        }
    }
    return b;
}

/* The step-time cache's key: the step's shape as fixed-width binary words (the padding, then
 * per DP rank its prefill count and (tokens, cached) pairs, its decode count and contexts) —
 * unambiguous without separators, and no text formatting per sequence. */
static void key_word(GString *k, uint32_t w)
{
    g_string_append_len(k, (const char *)&w, sizeof w);
}

static void key_append(GString *k, const ModelStep *st)
{
    key_word(k, st->pad_tokens);
    for (guint d = 0; d < st->per_dp->len; d++) {
        const ModelBatch *b = g_ptr_array_index(st->per_dp, d);
        key_word(k, b->prefill->len);
        for (guint i = 0; i < b->prefill->len; i++) {
            key_word(k, g_array_index(b->prefill, uint32_t, i));
            key_word(k, model_batch_prefill_ctx(b, i));
        }
        key_word(k, b->decode->len);
        g_string_append_len(k, (const char *)b->decode->data,
                            (gssize)(b->decode->len * sizeof(uint32_t)));
    }
}

static void key_free(gpointer k)
{
    g_string_free(k, TRUE);
}

static GHashTable *step_cache_new(void)
{
    return g_hash_table_new_full((GHashFunc)g_string_hash, (GEqualFunc)g_string_equal, key_free,
                                 g_free);
}

/* Lowers and simulates one step alone (every rank starting together): its duration, or -1 with
 * *why set when it does not complete (a hang or a crash the lowering predicts). */
static uint32_t n_stages(const Srv *v)
{
    return MAX(1u, v->in->lower->plan->par.pipeline_parallel_size);
}

/* Lowers and simulates one step alone (every rank starting together): fills `stage_ns` with
 * each pipeline stage's share (the time from the previous stage's end to its own) and returns
 * the whole step's duration, or -1 with *why set when it does not complete (a hang or a crash
 * the lowering predicts). */
static int64_t step_ns_exact(Srv *v, const ModelStep *st, char **why, int64_t *stage_ns);

/* ModelServeInput.coarse_contexts: a context's stand-in, the middle of its bucket — buckets
 * 1/16 of the context's power of two wide (exact below 32 tokens), never past max_model_len. A
 * decode's attention time is about linear in its context, so over a run that sweeps a bucket
 * the stand-in's errors cancel to first order. */
static uint32_t coarse_context(uint32_t ctx, uint32_t max_len)
{
    if (ctx < 32)
        return ctx;
    uint32_t w = 1u << (g_bit_storage(ctx) - 1 - 4);
    uint32_t mid = ctx / w * w + w / 2;
    return MAX(1u, MIN(mid, max_len));
}

/* The step with its decodes' contexts replaced by the stand-in of their mean (decode attention
 * reads every sequence's KV: about linear in the sum of the contexts) and every prefill cached
 * context by its own stand-in; prefill lengths stay exact. */
static ModelStep *coarse_step(const Srv *v, const ModelStep *st)
{
    uint32_t max_len = v->in->lower->engine->max_model_len;
    ModelStep *c = g_new(ModelStep, 1);
    *c = *st;
    c->per_dp = g_ptr_array_new_with_free_func((GDestroyNotify)model_batch_free);
    for (guint d = 0; d < st->per_dp->len; d++) {
        const ModelBatch *b = g_ptr_array_index(st->per_dp, d);
        ModelBatch *x = model_batch_new();
        x->skip_dummy = b->skip_dummy;
        x->skip_drafter = b->skip_drafter;
        x->pad_tokens = b->pad_tokens;
        for (guint i = 0; i < b->prefill->len; i++) {
            uint32_t ctx = model_batch_prefill_ctx(b, i),
                     len = g_array_index(b->prefill, uint32_t, i);
            uint32_t room = max_len > len ? max_len - len : 0;
            model_batch_add_prefill(x, len, ctx ? coarse_context(ctx, room) : 0);
        }
        uint64_t sum = 0;
        for (guint i = 0; i < b->decode->len; i++)
            sum += g_array_index(b->decode, uint32_t, i);
        uint32_t mean =
            b->decode->len ? (uint32_t)((sum + b->decode->len / 2) / b->decode->len) : 0;
        uint32_t ctx = coarse_context(MAX(mean, 1u), max_len);
        for (guint i = 0; i < b->decode->len; i++)
            g_array_append_val(x->decode, ctx);
        g_ptr_array_add(c->per_dp, x);
    }
    return c;
}

static int64_t step_ns(Srv *v, const ModelStep *st, char **why, int64_t *stage_ns)
{
    if (!v->in->coarse_contexts)
        return step_ns_exact(v, st, why, stage_ns);
    ModelStep *c = coarse_step(v, st);
    int64_t ns = step_ns_exact(v, c, why, stage_ns);
    g_ptr_array_unref(c->per_dp);
    g_free(c);
    return ns;
}

static int64_t step_ns_exact(Srv *v, const ModelStep *st, char **why, int64_t *stage_ns)
{
    uint32_t S = n_stages(v);
    if (!v->in->exact) {
        g_string_truncate(v->key, 0);
        key_append(v->key, st);
        gpointer hit = g_hash_table_lookup(v->cache, v->key);
        if (hit) {
            v->out->reused++;
            memcpy(stage_ns, hit, S * sizeof(int64_t));
            int64_t total = 0;
            for (uint32_t s = 0; s < S; s++)
                total += stage_ns[s];
            return total;
        }
    }
    ModelWorkload one = {g_ptr_array_new()};
    g_ptr_array_add(one.steps, (gpointer)st);
    ModelLowerInput li = *v->in->lower;
    li.workload = &one;
    g_autoptr(GError) err = NULL;
    g_autoptr(SchedProgram) p = model_lower(&li, &err);
    g_ptr_array_unref(one.steps);
    if (!p) {
        *why = g_strdup(err->message);
        return -1;
    }
    if (!v->validated) {
        if (!sched_program_validate(p, &err)) {
            *why = g_strdup_printf("the lowered step is not a valid program: %s", err->message);
            return -1;
        }
        v->validated = true;
    }
    SchedConfig cfg = v->in->sim;
    cfg.faults = NULL;
    cfg.n_faults = 0;
    cfg.timeline = SCHED_TIMELINE_NONE;
    cfg.record = NULL;
    cfg.progress = NULL;
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &cfg);
    v->out->simulated++;
    if (o->failed) {
        *why = model_serve_failure_why(o);
        return -1;
    }
    /* each stage's last rank's last op (the run's end may precede it when no event was queued
     * after the last compute) */
    int64_t *end = g_new0(int64_t, S);
    for (uint32_t r = 0; r < o->n_ranks; r++) {
        uint32_t s = v->in->lower->plan->coord[r].pp;
        end[s] = MAX(end[s], o->ranks[r].end_ns);
    }
    int64_t ns = 0;
    for (uint32_t s = 0; s < S; s++) {
        int64_t e = MAX(end[s], ns);
        stage_ns[s] = e - ns;
        ns = e;
    }
    g_free(end);
    if (!v->in->exact)
        g_hash_table_insert(v->cache, g_string_new_len(v->key->str, (gssize)v->key->len),
                            g_memdup2(stage_ns, S * sizeof(int64_t)));
    return ns;
}

/* The rows every DP rank runs with CUDA graphs on: the largest DP batch (vLLM's
 * coordinate_batch_across_dp pads to the maximum across DP only when CUDA graphs are used —
 * MoE models, whose DP ranks share collectives; dense DP replicas are independent engines),
 * rounded up to the capture size that holds it (the cudagraph dispatcher pads the batch to
 * the bucket). Without CUDA graphs nothing is padded. */
static uint32_t pad_of(const Srv *v, const GArray *tokens)
{
    const ModelLowerInput *li = v->in->lower;
    if (li->plan->par.prefill_context_parallel_size > 1)
        return 0;
    uint32_t most = 0;
    for (guint d = 0; d < tokens->len; d++)
        most = MAX(most, g_array_index(tokens, uint32_t, d));
    if (li->engine->cudagraph_mode == MODEL_CUDAGRAPH_NONE)
        return 0;
    uint32_t bucket = model_engine_cudagraph_bucket(li->engine, li->hw, MAX(most, 1u));
    if (bucket)
        return bucket;
    return v->n_dp > 1 && li->arch->moe ? most : 0;
}

/* Once a request has computed the full blocks of its prefix, they become the prefix's cache
 * entry (vLLM hashes every full block; ranksim, without token contents, the declared prefix):
 * the blocks move from the request to the entry, which the request then references. An entry
 * that already holds them is left alone (a request admitted before it existed keeps its own
 * copy, as vLLM's does). */
static void cache_prefix(Srv *v, Dp *d, uint32_t id)
{
    const ModelRequest *rq = &v->reqs[id];
    Req *r = &v->st[id];
    if (!v->in->lower->engine->enable_prefix_caching || !rq->prefix_id)
        return;
    uint32_t full = MIN(rq->prefix, rq->prompt) / v->out->block_tokens;
    if (full == 0 || r->computed < full * v->out->block_tokens)
        return;
    Prefix *p = prefix_find(v, d, rq->prefix_id);
    if (p && (p->blocks >= full || !r->refs_prefix || r->shared != p->blocks))
        return;
    uint32_t move = full - (p ? p->blocks : 0);
    if (move > r->blocks)
        return;
    if (!p) {
        p = g_new0(Prefix, 1);
        *p = (Prefix){.id = rq->prefix_id, .refs = 1};
        g_hash_table_insert(d->prefixes, GUINT_TO_POINTER(p->id), p);
        r->refs_prefix = true;
    }
    p->blocks += move;
    r->blocks -= move;
    r->shared = p->blocks;
}

/* Drops the finished requests from a DP rank's running list (a pass over it, as a step makes). */
static void running_compact(Srv *v, Dp *dp)
{
    guint k = 0;
    v->out->visits += dp->running->len;
    for (guint i = 0; i < dp->running->len; i++) {
        uint32_t id = g_array_index(dp->running, uint32_t, i);
        if (v->st[id].state != REQ_DONE)
            g_array_index(dp->running, uint32_t, k++) = id;
    }
    g_array_set_size(dp->running, k);
}

/* A batch's end: every request whose last known token it computed samples one (its first:
 * the TTFT; its last: done, its blocks freed and its client slot free from `end_ns`). Entries
 * of requests preempted since are void. Returns the requests it finished. */
static uint32_t finish_flight(Srv *v, GPtrArray *scheds, int64_t end_ns)
{
    uint32_t done = 0;
    for (uint32_t d = 0; d < v->n_dp; d++) {
        GArray *sc = g_ptr_array_index(scheds, d);
        Dp *dp = &v->dp[d];
        bool gone = false;
        v->out->visits += sc->len;
        for (guint i = 0; i < sc->len; i++) {
            const Sched *s = &g_array_index(sc, Sched, i);
            Req *r = &v->st[s->id];
            ModelServeRequest *q = rec(v, s->id);
            if (s->epoch != r->epoch || !s->samples || r->state == REQ_DONE)
                continue;
            q->generated++;
            if (q->first_token_ns < 0)
                q->first_token_ns = end_ns;
            if (q->generated < q->output)
                continue;
            q->finish_ns = end_ns;
            r->state = REQ_DONE;
            done++;
            if (v->slots)
                g_array_append_val(v->slots, end_ns);
            release(v, dp, s->id);
            gone = true;
        }
        if (gone) /* the finished leave `running` in one pass, its order kept */
            running_compact(v, dp);
    }
    return done;
}

/* Sends the requests that have arrived by `now` to the server (its load balancer), in order of
 * arrival — with a max_concurrency, only while the client has a free slot. vllm bench serve
 * (vllm/benchmarks/serve.py, benchmark()) creates one task per request at its arrival time
 * (get_request); each task waits on asyncio.Semaphore(max_concurrency), whose waiters are woken
 * in order, and only then starts the request's clock (request_func's st = perf_counter()): the
 * request reaches the server, and its TTFT and latency count, from when its slot freed. A slot
 * frees when the client has the request's last token: the end of the step that sampled it. */
static void send_arrived(Srv *v, uint32_t n, const uint32_t *order, uint32_t *next, int64_t now)
{
    while (*next < n && v->reqs[order[*next]].arrival_ns <= now) {
        uint32_t id = order[*next];
        if (v->slots) {
            if (v->slot_head >= v->slots->len)
                return; /* every slot taken: it waits for one */
            int64_t freed = g_array_index(v->slots, int64_t, v->slot_head++);
            rec(v, id)->arrival_ns = MAX(v->reqs[id].arrival_ns, freed);
        }
        place(v, id);
        (*next)++;
    }
}

static void flight_clear(gpointer p)
{
    Flight *f = p;
    g_ptr_array_unref(f->scheds);
}

static int cmp_arrival(gconstpointer a, gconstpointer b, gpointer data)
{
    const ModelRequest *r = data;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (r[x].arrival_ns != r[y].arrival_ns)
        return r[x].arrival_ns < r[y].arrival_ns ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* vLLM V1's engine loop (EngineCore.step, or step_with_batch_queue with PP): schedule a batch
 * and launch it; with room in the batch queue (PP batches with synchronous scheduling:
 * max_concurrent_batches) schedule the next at once; otherwise — or when nothing more can be
 * scheduled — wait for the oldest batch and take its output. A batch goes through the
 * pipeline stages in order, each stage busy with one batch at a time. */
static void serve_loop(Srv *v, uint32_t n, const uint32_t *order)
{
    ModelServe *out = v->out;
    const ModelLowerInput *li = v->in->lower;
    uint32_t S = n_stages(v), Q = S; /* batch queue size */
    int64_t now = 0, last_done = 0;
    int32_t waited_for = -1; /* the step whose output the engine last waited for, if it has
                                not scheduled since */
    uint32_t next = 0, finished = 0;
    uint64_t step_no = 0;
    g_autofree int64_t *stage = g_new0(int64_t, S), *stage_free = g_new0(int64_t, S);
    g_autoptr(GArray) flights = g_array_new(FALSE, FALSE, sizeof(Flight));
    g_array_set_clear_func(flights, flight_clear);
    g_autoptr(GArray) tokens = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    while (finished < n) {
        send_arrived(v, n, order, &next, now);
        uint64_t scheduled = 0;
        GPtrArray *scheds = NULL;
        if (flights->len < Q) {
            scheds = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
            g_array_set_size(tokens, 0);
            for (uint32_t d = 0; d < v->n_dp; d++) {
                GArray *sc = g_array_new(FALSE, FALSE, sizeof(Sched));
                g_ptr_array_add(scheds, sc);
                schedule_dp(v, &v->dp[d], sc);
                uint32_t t = 0;
                for (guint i = 0; i < sc->len; i++)
                    t += g_array_index(sc, Sched, i).tokens;
                g_array_append_val(tokens, t);
                scheduled += sc->len;
            }
        }
        if (scheduled == 0) {
            if (scheds)
                g_ptr_array_unref(scheds);
            if (flights->len) { /* wait for the oldest batch and take its output */
                Flight *f = &g_array_index(flights, Flight, 0);
                now = MAX(now, f->done_ns);
                last_done = MAX(last_done, f->done_ns);
                waited_for = (int32_t)f->step;
                finished += finish_flight(v, f->scheds, f->done_ns);
                g_array_remove_index(flights, 0);
                if (v->in->progress)
                    v->in->progress(v->in->progress_data, step_no, finished, n);
                continue;
            }
            bool work = false;
            for (uint32_t d = 0; d < v->n_dp && !work; d++)
                work = v->dp[d].waiting.length || v->dp[d].running->len;
            if (!work && next < n) {
                now = MAX(now, v->reqs[order[next]].arrival_ns); /* idle until it arrives */
                continue;
            }
            out->stopped = g_strdup_printf(
                "no request fits in the KV cache (%u blocks of %u tokens per DP rank): "
                "the scheduler cannot make progress; %u of %u requests finished",
                out->kv_blocks, out->block_tokens, finished, n);
            return;
        }
        g_autoptr(GPtrArray) per_dp = g_ptr_array_new();
        for (uint32_t d = 0; d < v->n_dp; d++)
            g_ptr_array_add(per_dp, batch_of(v, g_ptr_array_index(scheds, d)));
        ModelStep probe = {.per_dp = per_dp, .pad_tokens = pad_of(v, tokens), .sched_after = -1};
        char *why = NULL;
        int64_t dur = step_ns(v, &probe, &why, stage);
        uint32_t index = (uint32_t)step_no++;
        v->step_no = step_no;
        /* the pipeline: stage s starts the batch when it is free and stage s - 1 is done */
        int64_t start = MAX(now, stage_free[0]), t = start;
        for (uint32_t s = 0; s < S && dur >= 0; s++) {
            t = MAX(t, stage_free[s]) + stage[s];
            stage_free[s] = t;
        }
        int64_t end = dur >= 0 ? t : start;
        for (uint32_t d = 0; d < v->n_dp; d++) {
            const GArray *sc = g_ptr_array_index(scheds, d);
            const ModelBatch *b = g_ptr_array_index(per_dp, d);
            uint32_t own = g_array_index(tokens, uint32_t, d);
            if (own == 0 && !li->arch->moe)
                continue; /* an idle DP rank of a dense model runs nothing */
            uint32_t used =
                v->dp[d].free_blocks <= out->kv_blocks ? out->kv_blocks - v->dp[d].free_blocks : 0;
            uint32_t pfl = 0;
            for (guint i = 0; i < b->prefill->len; i++)
                pfl += g_array_index(b->prefill, uint32_t, i);
            ModelServeStep row = {(uint32_t)step_no,
                                  d,
                                  start,
                                  end,
                                  pfl,
                                  b->decode->len,
                                  sc->len,
                                  MAX(own, MAX(probe.pad_tokens, own == 0 ? 1u : 0u)),
                                  used,
                                  own == 0};
            g_array_append_val(out->steps, row);
        }
        /* the step joins the workload (batches taken over) */
        g_autoptr(GPtrArray) keep = g_ptr_array_new();
        for (guint d = 0; d < per_dp->len; d++)
            g_ptr_array_add(keep, g_ptr_array_index(per_dp, d));
        g_ptr_array_set_size(per_dp, 0);
        model_workload_add_step(out->workload, g_steal_pointer(&keep));
        ModelStep *made = g_ptr_array_index(out->workload->steps, out->workload->steps->len - 1);
        /* the engine idled since the last output when nothing was in flight */
        made->idle_ns = flights->len == 0 && start > last_done ? start - last_done : 0;
        made->pad_tokens = probe.pad_tokens;
        made->sched_after = waited_for;
        waited_for = -1;
        if (dur < 0) {
            g_ptr_array_unref(scheds);
            out->stopped = g_strdup_printf("step %" G_GUINT64_FORMAT " does not complete (%s): "
                                           "scheduling stopped there",
                                           step_no, why);
            g_free(why);
            return;
        }
        Flight f = {index, end, scheds};
        g_array_append_val(flights, f);
    }
}

ModelServe *model_serve_run(const ModelServeInput *in, const ModelRequest *reqs, uint32_t n,
                            GError **error)
{
    g_return_val_if_fail(in && in->lower && (reqs || n == 0), NULL);
    const ModelLowerInput *li = in->lower;
    const ModelEngine *e = li->engine;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len = (uint64_t)reqs[i].prompt + reqs[i].output;
        if (reqs[i].prompt == 0 || reqs[i].output == 0 || len > e->max_model_len) {
            g_set_error(error, MODEL_SERVE_ERROR, 0,
                        "request %u: prompt %u + output %u tokens%s; vLLM refuses a request "
                        "longer than max_model_len=%u (valid: prompt >= 1, output >= 1, "
                        "prompt + output <= %u)",
                        i + 1, reqs[i].prompt, reqs[i].output,
                        len > e->max_model_len ? " exceed max_model_len" : "", e->max_model_len,
                        e->max_model_len);
            return NULL;
        }
    }
    ModelServe *out = g_new0(ModelServe, 1);
    out->workload = model_workload_new();
    out->steps = g_array_new(FALSE, FALSE, sizeof(ModelServeStep));
    out->requests = g_array_sized_new(FALSE, TRUE, sizeof(ModelServeRequest), n);
    const ModelParallel *par = &li->plan->par;
    ModelBackend be = model_engine_backend(li->arch, e, par, li->hw);
    out->block_tokens = model_engine_kv_block_size(li->arch, be, li->hw) *
                        par->decode_context_parallel_size * par->prefill_context_parallel_size;
    uint64_t blocks = in->kv_tokens / MAX(1u, out->block_tokens);
    if (e->num_gpu_blocks_override) /* vLLM: the override replaces the profiled block count */
        blocks = e->num_gpu_blocks_override;
    out->kv_blocks = blocks > 1 ? (uint32_t)MIN(blocks - 1, (uint64_t)UINT32_MAX) : 0;
    for (uint32_t i = 0; i < n; i++) {
        ModelServeRequest q = {
            i, 0, reqs[i].arrival_ns, -1, -1, reqs[i].prompt, reqs[i].output, 0, 0, 0, 0};
        g_array_append_val(out->requests, q);
    }
    Srv v = {
        .in = in,
        .reqs = reqs,
        .out = out,
        .st = g_new0(Req, MAX(n, 1u)),
        .n_dp = MAX(1u, par->data_parallel_size),
        .cache = step_cache_new(),
        .key = g_string_new(NULL),
    };
    if (in->max_concurrency) { /* the client's slots, all free at the start */
        uint32_t k = MIN(in->max_concurrency, n);
        v.slots = g_array_sized_new(FALSE, TRUE, sizeof(int64_t), k + n);
        g_array_set_size(v.slots, k);
    }
    v.dp = g_new0(Dp, v.n_dp);
    for (uint32_t d = 0; d < v.n_dp; d++) {
        g_queue_init(&v.dp[d].waiting);
        v.dp[d].running = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        v.dp[d].free_blocks = out->kv_blocks;
        v.dp[d].prefixes = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_queue_init(&v.dp[d].lru);
    }
    uint32_t *order = g_new(uint32_t, MAX(n, 1u));
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    g_qsort_with_data(order, (gint)n, sizeof(uint32_t), cmp_arrival, (gpointer)reqs);
    uint32_t too_big = UINT32_MAX;
    for (uint32_t i = 0; i < n && too_big == UINT32_MAX; i++)
        if (blocks_for(&v, (uint64_t)reqs[i].prompt + reqs[i].output) > out->kv_blocks)
            too_big = i;
    if (too_big != UINT32_MAX)
        out->stopped = g_strdup_printf(
            "request %u needs %u KV blocks of %u tokens for prompt %u + output %u, more than "
            "the %u the KV cache holds: vLLM would never schedule it to the end",
            too_big + 1, blocks_for(&v, (uint64_t)reqs[too_big].prompt + reqs[too_big].output),
            out->block_tokens, reqs[too_big].prompt, reqs[too_big].output, out->kv_blocks);
    else
        serve_loop(&v, n, order);
    g_free(order);
    for (uint32_t d = 0; d < v.n_dp; d++) {
        g_queue_clear(&v.dp[d].waiting);
        g_array_unref(v.dp[d].running);
        g_queue_clear(&v.dp[d].lru);
        g_hash_table_unref(v.dp[d].prefixes);
    }
    g_free(v.dp);
    g_free(v.st);
    g_hash_table_unref(v.cache);
    g_string_free(v.key, TRUE);
    if (v.slots)
        g_array_unref(v.slots);
    return out;
}

/* The rows of a timed step: one per DP rank that runs something (a dense model's idle DP rank
 * does not step; an MoE model's runs a dummy batch). */
static void step_rows_of(ModelServe *out, const ModelLowerInput *li, const ModelStep *st,
                         uint32_t n_dp, uint32_t step_no, int64_t start, int64_t end)
{
    for (uint32_t d = 0; d < n_dp; d++) {
        const ModelBatch *b = model_step_batch(st, d);
        uint64_t own = model_batch_tokens(b);
        if (own == 0 && !li->arch->moe)
            continue;
        uint32_t pfl = 0;
        for (guint i = 0; b && i < b->prefill->len; i++)
            pfl += g_array_index(b->prefill, uint32_t, i);
        uint32_t dec = b ? b->decode->len : 0;
        uint32_t pad = b && b->pad_tokens ? b->pad_tokens : st->pad_tokens;
        ModelServeStep row = {
            .step = step_no,
            .dp = d,
            .start_ns = start,
            .end_ns = end,
            .prefill_tokens = pfl,
            .decode_tokens = dec,
            .seqs = (b ? b->prefill->len : 0) + dec,
            .padded_tokens =
                (uint32_t)MIN(MAX(own, (uint64_t)pad) + (own == 0), (uint64_t)UINT32_MAX),
            .kv_blocks_used = 0,
            .dummy = own == 0,
        };
        g_array_append_val(out->steps, row);
    }
}

ModelServe *model_serve_time_steps(const ModelServeInput *in, const ModelWorkload *w)
{
    g_return_val_if_fail(in != NULL && in->lower != NULL && w != NULL, NULL);
    const ModelLowerInput *li = in->lower;
    ModelServe *out = g_new0(ModelServe, 1);
    out->workload = model_workload_new();
    out->steps = g_array_new(FALSE, FALSE, sizeof(ModelServeStep));
    out->requests = g_array_new(FALSE, TRUE, sizeof(ModelServeRequest));
    uint32_t n_dp = MAX(1u, li->plan->par.data_parallel_size);
    Srv v = {
        .in = in,
        .out = out,
        .n_dp = n_dp,
        .cache = step_cache_new(),
        .key = g_string_new(NULL),
    };
    g_autofree int64_t *stage = g_new0(int64_t, n_stages(&v));
    int64_t now = 0;
    for (guint j = 0; j < w->steps->len; j++) {
        const ModelStep *st = g_ptr_array_index(w->steps, j);
        char *why = NULL;
        now += st->idle_ns > 0 ? st->idle_ns : 0;
        int64_t dur = step_ns(&v, st, &why, stage);
        if (dur < 0) {
            out->stopped = g_strdup_printf("step %u does not complete (%s): the steps after it "
                                           "are not timed",
                                           j + 1, why);
            g_free(why);
            break;
        }
        step_rows_of(out, li, st, n_dp, j + 1, now, now + dur);
        now += dur;
    }
    g_hash_table_unref(v.cache);
    g_string_free(v.key, TRUE);
    return out;
}

char *model_serve_failure_why(const SchedOutcome *o)
{
    const SchedDiag *d0 = NULL;
    for (guint i = 0; i < o->diags->len && !d0; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            d0 = d;
    }
    return g_strdup_printf("%s%s%s", d0 ? d0->kind : "failed", d0 ? ": " : "",
                           d0 ? d0->message : "");
}

ModelServe *model_serve_one_step(const ModelLowerInput *li, const ModelStep *st, int64_t dur_ns,
                                 const char *why)
{
    g_return_val_if_fail(li != NULL && st != NULL, NULL);
    ModelServe *out = g_new0(ModelServe, 1);
    out->workload = model_workload_new();
    out->steps = g_array_new(FALSE, FALSE, sizeof(ModelServeStep));
    out->requests = g_array_new(FALSE, TRUE, sizeof(ModelServeRequest));
    out->simulated = 1; /* the run that timed it */
    if (dur_ns < 0) {
        out->stopped = g_strdup_printf("step 1 does not complete (%s): the steps after it are "
                                       "not timed",
                                       why ? why : "failed");
        return out;
    }
    int64_t start = st->idle_ns > 0 ? st->idle_ns : 0;
    step_rows_of(out, li, st, MAX(1u, li->plan->par.data_parallel_size), 1, start, start + dur_ns);
    return out;
}

void model_serve_free(ModelServe *s)
{
    if (!s)
        return;
    model_workload_free(s->workload);
    g_array_unref(s->steps);
    g_array_unref(s->requests);
    g_free(s->stopped);
    g_free(s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double model_percentile(double *v, uint32_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    double pos = p / 100.0 * (double)(n - 1);
    uint32_t lo = (uint32_t)floor(pos);
    uint32_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

void model_serve_summarize(const ModelServeRequest *reqs, uint32_t n, ModelServeSummary *out)
{
    memset(out, 0, sizeof *out);
    double *ttft = g_new(double, MAX(n, 1u)), *tpot = g_new(double, MAX(n, 1u));
    uint32_t nt = 0, np = 0;
    int64_t first = INT64_MAX, last = 0;
    double gen = 0, all = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ModelServeRequest *q = &reqs[i];
        first = MIN(first, q->arrival_ns);
        if (q->finish_ns < 0)
            continue;
        out->finished++;
        last = MAX(last, q->finish_ns);
        ttft[nt++] = (double)(q->first_token_ns - q->arrival_ns) / 1e9;
        if (q->output > 1)
            tpot[np++] = (double)(q->finish_ns - q->first_token_ns) / 1e9 / (q->output - 1);
        gen += q->generated;
        all += (double)q->prompt + q->generated;
    }
    for (uint32_t i = 0; i < nt; i++)
        out->ttft_mean += ttft[i] / nt;
    for (uint32_t i = 0; i < np; i++)
        out->tpot_mean += tpot[i] / np;
    out->ttft_p50 = model_percentile(ttft, nt, 50);
    out->ttft_p90 = model_percentile(ttft, nt, 90);
    out->ttft_p99 = model_percentile(ttft, nt, 99);
    out->tpot_p50 = model_percentile(tpot, np, 50);
    out->tpot_p90 = model_percentile(tpot, np, 90);
    out->tpot_p99 = model_percentile(tpot, np, 99);
    if (out->finished && last > first) {
        out->duration_s = (double)(last - first) / 1e9;
        out->output_tok_per_s = gen / out->duration_s;
        out->total_tok_per_s = all / out->duration_s;
    }
    g_free(ttft);
    g_free(tpot);
}
