/* sched/diagnose.c — findings made from a run's record: mismatch, divergence, straggler,
 * timeout, crash and deadlock diagnostics with a human message and a JSON detail object (the
 * reader of that detail is diagnose-detail.c). See diagnose.h for the rules and costs.
 */
#include "diagnose.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* ---- small formatting helpers ---- */

static char *fmt_layer(int32_t layer)
{
    return layer >= 0 ? g_strdup_printf(", layer %d", layer) : g_strdup("");
}

static const char *group_name(const SchedRunRecord *rec, int32_t gid)
{
    return rec->groups[gid]->name;
}

static const SchedGroup *group_of(const SchedRunRecord *rec, const SchedInstance *inst)
{
    return rec->groups[inst->group];
}

static const char *name_of(const SchedRunRecord *rec, uint32_t id)
{
    return sched_program_name_str(rec->names, id);
}

/* Whether calls of `kind` on `g` run under the process group's watchdog (a Flight Recorder
 * entry, a SeqNum, a timeout line). */
static bool watched(const SchedGroup *g, uint8_t kind)
{
    return !(g->unwatched_kinds & (1u << kind));
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Formats a rank array (sorted in place) for a message: "0-3,5", a strided set "0,8,...,600",
 * at most MSG_RANKS_CHARS characters (the detail's arrays have every rank). */
#define MSG_RANKS_CHARS 120
static char *fmt_rank_array(GArray *ranks)
{
    g_array_sort(ranks, cmp_i32);
    return sched_format_ranks_brief((const int32_t *)(void *)ranks->data, ranks->len,
                                    MSG_RANKS_CHARS);
}

static void json_add_ranks(JsonBuilder *b, const char *member, GArray *ranks)
{
    json_builder_set_member_name(b, member);
    json_builder_begin_array(b);
    for (guint i = 0; i < ranks->len; i++)
        json_builder_add_int_value(b, g_array_index(ranks, int32_t, i));
    json_builder_end_array(b);
}

static void json_add_layer(JsonBuilder *b, int32_t layer)
{
    json_builder_set_member_name(b, "layer");
    if (layer >= 0)
        json_builder_add_int_value(b, layer);
    else
        json_builder_add_null_value(b);
}

/* A detail object opened with the instance's "group" and "seq". */
static JsonBuilder *json_begin_instance(const SchedGroup *g, const SchedInstance *inst)
{
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "group");
    json_builder_add_string_value(b, g->name);
    json_builder_set_member_name(b, "seq");
    json_builder_add_int_value(b, (gint64)inst->seq);
    return b;
}

static char *json_finish(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

/* Appends a finding at rec->now_ns; `message` and `detail` are taken over. */
static void diag_add(const SchedRunRecord *rec, SchedOutcome *out, const char *kind,
                     SchedSeverity sev, int32_t rank, int32_t group, uint64_t seq, int32_t layer,
                     const char *op_name, char *message, char *detail)
{
    SchedDiag *d = sched_diag_new(kind, sev, rank, group, seq, layer, op_name, NULL, NULL);
    d->message = message; /* taken over, not copied */
    d->detail = detail;
    d->time_ns = rec->now_ns;
    sched_outcome_add_diag(out, d);
}

/* PyTorch's OpType spelling for a kind, as its watchdog prints it. */
static const char *op_type(uint8_t kind)
{
    switch (kind) {
    case SCHED_OP_ALL_REDUCE:
        return "ALLREDUCE";
    case SCHED_OP_REDUCE_SCATTER:
        return "_REDUCE_SCATTER_BASE";
    case SCHED_OP_ALL_GATHER:
        return "_ALLGATHER_BASE";
    case SCHED_OP_ALL_TO_ALL:
        return "ALLTOALL_BASE";
    case SCHED_OP_BROADCAST:
        return "BROADCAST";
    case SCHED_OP_BARRIER:
        return "BARRIER";
    case SCHED_OP_SEND:
        return "SEND";
    case SCHED_OP_RECV:
        return "RECV";
    default:
        return "UNKNOWN";
    }
}

static uint64_t numel_out(uint8_t kind, uint64_t count, uint32_t n)
{
    switch (kind) {
    case SCHED_OP_ALL_GATHER:
        return count * n;
    case SCHED_OP_REDUCE_SCATTER:
        return n ? count / n : count;
    default:
        return count;
    }
}

static char *work_nccl(const SchedRunRecord *rec, const SchedInstance *inst, uint32_t mi)
{
    const SchedArrival *a = &inst->arr[mi];
    /* SeqNum is the process group's own count on this rank (SchedArrival.pg_seq: the
     * engine's seq_base + watched calls, a record's recorded sequence number). */
    uint64_t seq = a->pg_seq ? a->pg_seq : inst->seq;
    int64_t ms = (rec->timeout_ns > 0 ? rec->timeout_ns : (int64_t)600000000000LL) / 1000000;
    /* torch_npu's ProcessGroupHCCL prints no element counts (vllm-ascend issue 382) */
    if (rec->watchdog_hccl)
        return g_strdup_printf("WorkHCCL(SeqNum=%" G_GUINT64_FORMAT
                               ", OpType=%s, Timeout(ms)=%" G_GINT64_FORMAT ")",
                               seq, op_type(a->kind), ms);
    return g_strdup_printf(
        "WorkNCCL(SeqNum=%" G_GUINT64_FORMAT ", OpType=%s, NumelIn=%" G_GUINT64_FORMAT
        ", NumelOut=%" G_GUINT64_FORMAT ", Timeout(ms)=%" G_GINT64_FORMAT ")",
        seq, op_type(a->kind), a->count, numel_out(a->kind, a->count, inst->n), ms);
}

/* "blocked in X (group g, seq s, layer l) since t", "finished at ...", ...; caller frees. */
static char *describe_rank(const SchedRunRecord *rec, uint32_t rank)
{
    const SchedRankSeen *s = &rec->ranks[rank];
    g_autofree char *t = sched_format_ns(s->end_ns);
    switch (s->state) {
    case SCHED_SEEN_DONE:
        return g_strdup_printf("finished at %s", t);
    case SCHED_SEEN_IDLE:
        return g_strdup_printf("idle: its last recorded call completed at %s and it made "
                               "no further call",
                               t);
    case SCHED_SEEN_CRASHED:
        return g_strdup_printf("crashed at %s", t);
    case SCHED_SEEN_UNKNOWN:
        return g_strdup("no record: its dump or log is missing");
    case SCHED_SEEN_BLOCKED: {
        const SchedInstance *inst = s->waiting;
        int32_t mi = sched_group_index_of(group_of(rec, inst), (int32_t)rank);
        const SchedArrival *ar = &inst->arr[mi];
        g_autofree char *layer = fmt_layer(ar->layer);
        g_autofree char *since = sched_format_ns(ar->arrive_ns);
        return g_strdup_printf("blocked in %s (group %s, seq %" G_GUINT64_FORMAT "%s) since %s",
                               name_of(rec, ar->name), group_name(rec, inst->group), inst->seq,
                               layer, since);
    }
    case SCHED_SEEN_COMPUTING: {
        g_autofree char *layer = fmt_layer(s->doing_layer);
        g_autofree char *until = sched_format_ns(s->doing_until_ns);
        return g_strdup_printf("computing %s%s until %s", name_of(rec, s->doing_name), layer,
                               until);
    }
    case SCHED_SEEN_DELAYING:
        return g_strdup("delayed before its next op (injected delay)");
    default:
        return g_strdup("running");
    }
}

static const char *rank_state_word(const SchedRunRecord *rec, uint32_t rank)
{
    switch (rec->ranks[rank].state) {
    case SCHED_SEEN_DONE:
        return "finished";
    case SCHED_SEEN_IDLE:
        return "idle";
    case SCHED_SEEN_CRASHED:
        return "crashed";
    case SCHED_SEEN_BLOCKED:
        return "blocked";
    case SCHED_SEEN_UNKNOWN:
        return "unknown";
    case SCHED_SEEN_COMPUTING:
    case SCHED_SEEN_DELAYING:
        return "computing";
    default:
        return "running";
    }
}

/* ---- mismatch ---- */

typedef struct {
    const SchedArrival *sig;
    GArray *ranks; /* int32 global ranks */
} Signature;

static void signature_clear(gpointer data)
{
    Signature *s = data;
    g_array_unref(s->ranks);
}

static char *fmt_signature(const SchedRunRecord *rec, const SchedArrival *a)
{
    GString *s = g_string_new(sched_op_kind_name((SchedOpKind)a->kind));
    g_string_append_printf(s, " %" G_GUINT64_FORMAT " %s", a->count,
                           sched_dtype_name((SchedDtype)a->dtype));
    if (a->kind == SCHED_OP_BROADCAST)
        g_string_append_printf(s, " root %d", a->root);
    g_string_append_printf(s, " (%s)", name_of(rec, a->name));
    return g_string_free(s, FALSE);
}

/* Members that did not arrive and have no evidence: they could bring any signature. */
static uint32_t unknown_members(const SchedRunRecord *rec, const SchedInstance *inst, GArray *out)
{
    const SchedGroup *g = group_of(rec, inst);
    uint32_t u = 0;
    for (uint32_t i = 0; i < inst->n; i++)
        if (!inst->arr[i].present && rec->ranks[g->ranks[i]].state == SCHED_SEEN_UNKNOWN) {
            u++;
            if (out)
                g_array_append_val(out, g->ranks[i]);
        }
    return u;
}

/* The majority among signature counts c[0..k): the index whose count beats every other count
 * even if the `u` members without a record all joined that other signature, and beats `u` (they
 * could all bring one more signature). -1 when no signature wins so (a tie, with u = 0). */
static int decisive_majority(const guint *c, guint k, uint32_t u)
{
    int best = -1;
    for (guint i = 0; i < k; i++)
        if (best < 0 || c[i] > c[best])
            best = (int)i;
    if (best < 0 || c[best] <= u)
        return -1;
    for (guint i = 0; i < k; i++)
        if ((int)i != best && c[i] + u >= c[best])
            return -1;
    return best;
}

/* Every rank passes the same count, which the group cannot split: a `shape` finding. */
static void mismatch_shape(const SchedRunRecord *rec, const SchedInstance *inst,
                           const SchedArrival *a0, JsonBuilder *b, SchedOutcome *out)
{
    const SchedGroup *g = group_of(rec, inst);
    g_autofree char *layer = fmt_layer(a0->layer);
    g_autofree char *sig = fmt_signature(rec, a0);
    char *msg = g_strdup_printf(
        "shape: %s in group %s seq %" G_GUINT64_FORMAT "%s: every rank passes %" G_GUINT64_FORMAT
        " elements, which a group of %u cannot split evenly (the input of %s must be a "
        "multiple of the group size)",
        sig, g->name, inst->seq, layer, a0->count, inst->n,
        sched_op_kind_name((SchedOpKind)a0->kind));
    json_builder_set_member_name(b, "count");
    json_builder_add_int_value(b, (gint64)a0->count);
    json_builder_set_member_name(b, "group_size");
    json_builder_add_int_value(b, inst->n);
    json_builder_end_object(b);
    diag_add(rec, out, "shape", SCHED_SEV_ERROR, g->ranks[0], inst->group, inst->seq, a0->layer,
             name_of(rec, a0->name), msg, json_finish(b));
}

/* The distinct signatures the present members brought, in member order, with their ranks. */
static GArray *group_signatures(const SchedRunRecord *rec, const SchedInstance *inst, bool p2p)
{
    const SchedGroup *g = group_of(rec, inst);
    GArray *sigs = g_array_new(FALSE, FALSE, sizeof(Signature));
    g_array_set_clear_func(sigs, signature_clear);
    for (uint32_t i = 0; i < inst->n; i++) {
        const SchedArrival *a = &inst->arr[i];
        if (!a->present || a->done || a->nosig) /* a signature not on record: no vote */
            continue;
        guint k;
        for (k = 0; k < sigs->len; k++)
            if (sched_arrival_same_signature(g_array_index(sigs, Signature, k).sig, a, p2p))
                break;
        if (k == sigs->len) {
            Signature s = {a, g_array_new(FALSE, FALSE, sizeof(int32_t))};
            g_array_append_val(sigs, s);
        }
        g_array_append_val(g_array_index(sigs, Signature, k).ranks, g->ranks[i]);
    }
    return sigs;
}

static void json_add_signature(JsonBuilder *b, const SchedRunRecord *rec, const Signature *s)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "kind");
    json_builder_add_string_value(b, sched_op_kind_name((SchedOpKind)s->sig->kind));
    json_builder_set_member_name(b, "count");
    json_builder_add_int_value(b, (gint64)s->sig->count);
    json_builder_set_member_name(b, "dtype");
    json_builder_add_string_value(b, sched_dtype_name((SchedDtype)s->sig->dtype));
    json_builder_set_member_name(b, "root");
    if (s->sig->kind == SCHED_OP_BROADCAST)
        json_builder_add_int_value(b, s->sig->root);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, name_of(rec, s->sig->name));
    if (s->sig->tokens > 0) { /* the rows the call carries, when its op says */
        json_builder_set_member_name(b, "tokens");
        json_builder_add_int_value(b, (gint64)s->sig->tokens);
    }
    json_add_layer(b, s->sig->layer);
    json_add_ranks(b, "ranks", s->ranks);
    json_builder_end_object(b);
}

void sched_diagnose_mismatch(const SchedRunRecord *rec, const SchedInstance *inst,
                             bool shape_only, SchedOutcome *out)
{
    const SchedGroup *g = group_of(rec, inst);
    /* The first member that arrived (in a recorded run member 0 may have left no record). */
    uint32_t i0 = 0;
    while (i0 + 1 < inst->n && !inst->arr[i0].present)
        i0++;
    const SchedArrival *a0 = &inst->arr[i0];
    bool p2p = sched_op_is_p2p(a0->kind);
    g_autofree char *layer = fmt_layer(a0->layer);
    g_autoptr(JsonBuilder) b = json_begin_instance(g, inst);
    json_builder_set_member_name(b, "policy");
    json_builder_add_string_value(b, rec->mismatch_policy);

    if (shape_only) {
        mismatch_shape(rec, inst, a0, b, out);
        return;
    }

    g_autoptr(GArray) sigs = group_signatures(rec, inst, p2p);
    /* Majority by rank count; a tie for the most ranks means there is no majority, and so does
     * a lead that members without a record could overturn. */
    g_autoptr(GArray) unknown = g_array_new(FALSE, FALSE, sizeof(int32_t));
    uint32_t u = unknown_members(rec, inst, unknown);
    g_autofree guint *counts = g_new0(guint, sigs->len + 1);
    for (guint k = 0; k < sigs->len; k++)
        counts[k] = g_array_index(sigs, Signature, k).ranks->len;
    int majority = decisive_majority(counts, sigs->len, u);
    g_autoptr(GArray) culprits = g_array_new(FALSE, FALSE, sizeof(int32_t));
    GString *msg = g_string_new(NULL);
    g_string_append_printf(
        msg, "mismatch in group %s seq %" G_GUINT64_FORMAT "%s: %u signatures among %u ranks",
        g->name, inst->seq, layer, sigs->len, inst->n - u);
    json_builder_set_member_name(b, "signatures");
    json_builder_begin_array(b);
    for (guint k = 0; k < sigs->len; k++) {
        Signature *s = &g_array_index(sigs, Signature, k);
        g_autofree char *sig = fmt_signature(rec, s->sig);
        g_autofree char *ranks = fmt_rank_array(s->ranks);
        g_string_append_printf(msg, "%s %s on rank%s %s%s", k ? ";" : " —", sig,
                               s->ranks->len > 1 ? "s" : "", ranks,
                               (int)k == majority ? " (majority)" : "");
        if (majority >= 0 && (int)k != majority)
            g_array_append_vals(culprits, s->ranks->data, s->ranks->len);
        json_add_signature(b, rec, s);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "majority");
    if (majority >= 0)
        json_builder_add_int_value(b, majority);
    else
        json_builder_add_null_value(b);
    g_array_sort(culprits, cmp_i32);
    json_add_ranks(b, "culprits", culprits);
    if (u)
        json_add_ranks(b, "unknown", unknown);
    json_builder_end_object(b);
    if (majority < 0 && u) {
        g_autofree char *us = fmt_rank_array(unknown);
        g_string_append_printf(msg,
                               ". The vote cannot decide: rank%s %s left no record and could "
                               "bring either signature",
                               u > 1 ? "s" : "", us);
    } else if (majority >= 0) {
        g_autofree char *c =
            sched_format_ranks((const int32_t *)(void *)culprits->data, culprits->len);
        g_string_append_printf(msg, ". Culprit%s (minority): rank%s %s",
                               culprits->len > 1 ? "s" : "", culprits->len > 1 ? "s" : "", c);
    } else {
        g_string_append(msg, ". No majority (tie): the culprit cannot be decided by vote");
    }
    int32_t rank = culprits->len ? g_array_index(culprits, int32_t, 0) : g->ranks[i0];
    const SchedArrival *ref = majority >= 0 ? g_array_index(sigs, Signature, majority).sig : a0;
    diag_add(rec, out, "mismatch", SCHED_SEV_ERROR, rank, inst->group, inst->seq, ref->layer,
             name_of(rec, ref->name), g_string_free(msg, FALSE), json_finish(b));
}

/* ---- divergence (signatures agree, the ops behind them do not) ---- */

void sched_diagnose_divergence(const SchedRunRecord *rec, const SchedInstance *inst,
                               SchedOutcome *out)
{
    const SchedGroup *g = group_of(rec, inst);
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg,
                           "divergence in group %s seq %" G_GUINT64_FORMAT ": the signatures agree "
                           "but the ranks are at different ops —",
                           g->name, inst->seq);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "members");
    json_builder_begin_array(b);
    g_autofree bool *done = g_new0(bool, inst->n);
    for (uint32_t i = 0; i < inst->n; i++) {
        if (done[i])
            continue;
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t j = i; j < inst->n; j++) {
            if (!done[j] && inst->arr[j].name == inst->arr[i].name &&
                inst->arr[j].layer == inst->arr[i].layer) {
                done[j] = true;
                g_array_append_val(ranks, g->ranks[j]);
            }
        }
        g_autofree char *rs = fmt_rank_array(ranks);
        g_autofree char *layer = fmt_layer(inst->arr[i].layer);
        g_string_append_printf(msg, "%s %s%s on rank%s %s", i ? ";" : "",
                               name_of(rec, inst->arr[i].name), layer, ranks->len > 1 ? "s" : "", rs);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "op");
        json_builder_add_string_value(b, name_of(rec, inst->arr[i].name));
        json_add_layer(b, inst->arr[i].layer);
        json_add_ranks(b, "ranks", ranks);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_string_append(msg, ". NCCL matches calls by order only, so this runs on with the wrong "
                         "data (reported once per group)");
    diag_add(rec, out, "divergence", SCHED_SEV_WARNING, g->ranks[0], inst->group, inst->seq,
             inst->arr[0].layer, name_of(rec, inst->arr[0].name), g_string_free(msg, FALSE),
             json_finish(b));
}

/* ---- straggler ---- */

void sched_diagnose_straggler(const SchedRunRecord *rec, const SchedInstance *inst,
                              int64_t threshold_ns, SchedOutcome *out)
{
    const SchedGroup *g = group_of(rec, inst);
    int64_t thr = threshold_ns;
    g_autoptr(GArray) late = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].arrive_ns - inst->first_arrive_ns > thr)
            g_array_append_val(late, g->ranks[i]);
    g_autofree char *rs = fmt_rank_array(late);
    g_autofree char *spread = sched_format_ns(inst->last_arrive_ns - inst->first_arrive_ns);
    g_autofree char *thr_s = sched_format_ns(thr);
    g_autofree char *layer = fmt_layer(inst->arr[0].layer);
    char *msg =
        g_strdup_printf("straggler in %s (group %s, seq %" G_GUINT64_FORMAT "%s): rank%s %s "
                        "arrived up to %s after the first member (threshold %s); the "
                        "others waited",
                        name_of(rec, inst->arr[0].name), g->name, inst->seq, layer,
                        late->len > 1 ? "s" : "", rs, spread, thr_s);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_add_ranks(b, "late", late);
    json_builder_set_member_name(b, "spread_us");
    json_builder_add_double_value(b, (double)(inst->last_arrive_ns - inst->first_arrive_ns) / 1e3);
    json_builder_end_object(b);
    diag_add(rec, out, "straggler", SCHED_SEV_WARNING, g_array_index(late, int32_t, 0), inst->group,
             inst->seq, inst->arr[0].layer, name_of(rec, inst->arr[0].name), msg, json_finish(b));
}

/* ---- crash ---- */

void sched_diagnose_crash(const SchedRunRecord *rec, uint32_t rank, int32_t layer,
                          const char *why, const char *reason, SchedOutcome *out)
{
    g_autofree char *t = sched_format_ns(rec->now_ns);
    g_autofree char *cause =
        reason ? g_strdup_printf(": %s", reason) : g_strdup(" (injected fault)");
    char *msg =
        why ? g_strdup_printf("crash: rank %u crashed at %s on reaching %s%s", rank, t, why, cause)
            : g_strdup_printf("crash: rank %u crashed at %s%s", rank, t, cause);
    diag_add(rec, out, "crash", SCHED_SEV_ERROR, (int32_t)rank, -1, 0, layer, why, msg,
             NULL);
}

/* ---- timeout ---- */

/* Appends "rank 3 (computing x until 2 s)" for each missing member of inst. */
static void append_missing(const SchedRunRecord *rec, const SchedInstance *inst, GString *s, JsonBuilder *b,
                           uint32_t limit)
{
    const SchedGroup *g = group_of(rec, inst);
    uint32_t shown = 0, missing = 0;
    json_builder_set_member_name(b, "missing");
    json_builder_begin_array(b);
    for (uint32_t i = 0; i < inst->n; i++) {
        if (inst->arr[i].present)
            continue;
        uint32_t r = (uint32_t)g->ranks[i];
        g_autofree char *what = describe_rank(rec, r);
        missing++;
        if (shown < limit) {
            g_string_append_printf(s, "%srank %u (%s)", shown ? ", " : "", r, what);
            shown++;
        }
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "rank");
        json_builder_add_int_value(b, r);
        json_builder_set_member_name(b, "state");
        json_builder_add_string_value(b, rank_state_word(rec, r));
        json_builder_set_member_name(b, "doing");
        json_builder_add_string_value(b, what);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    if (missing > shown)
        g_string_append_printf(s, " and %u more", missing - shown);
    if (missing == 0) {
        bool crashed = false;
        for (uint32_t i = 0; i < inst->n; i++)
            crashed |= inst->arr[i].present && rec->ranks[g->ranks[i]].state == SCHED_SEEN_CRASHED;
        g_autoptr(GArray) done = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t i = 0; i < inst->n; i++)
            if (inst->arr[i].done)
                g_array_append_val(done, g->ranks[i]);
        if (inst->mismatched) {
            g_string_append(s, "none — every member arrived but their signatures disagree");
        } else if (done->len) {
            g_autofree char *ds = fmt_rank_array(done);
            g_string_append_printf(s,
                                   "none — rank%s %s completed %s side and went on; the "
                                   "blocked member%s never finished it (one call behind)",
                                   done->len > 1 ? "s" : "", ds,
                                   done->len > 1 ? "their" : "its",
                                   inst->n - done->len > 1 ? "s" : "");
        }
        else if (crashed)
            g_string_append(s,
                            "none — every member arrived but one crashed, so it never completes");
        else if (inst->completing)
            g_string_append(s, "none — every member arrived and the transfer is still under way");
        else
            g_string_append(s, "none — every member arrived with the same signature, yet it never "
                               "completed: look below the program (transport, device, or a "
                               "collective the record cannot see)");
    }
}

static void arrived_ranks(const SchedRunRecord *rec, const SchedInstance *inst, GArray *out)
{
    const SchedGroup *g = group_of(rec, inst);
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].present)
            g_array_append_val(out, g->ranks[i]);
}

bool sched_diagnose_timeout(const SchedRunRecord *rec, const SchedInstance *inst,
                            SchedOutcome *out)
{
    const int64_t timeout = rec->timeout_ns, at_ns = rec->now_ns;
    const SchedGroup *g = group_of(rec, inst);
    /* The victims: members whose own wait has reached the timeout (crashed ones print
     * nothing). One diagnostic per instance names them all. */
    g_autoptr(GArray) waiting = g_array_new(FALSE, FALSE, sizeof(int32_t));
    uint32_t ref = 0;
    for (uint32_t i = 0; i < inst->n; i++) {
        const SchedArrival *ar = &inst->arr[i];
        if (!ar->present || ar->arrive_ns + timeout > at_ns ||
            rec->ranks[g->ranks[i]].state == SCHED_SEEN_CRASHED)
            continue;
        if (!waiting->len)
            ref = i;
        g_array_append_val(waiting, g->ranks[i]);
    }
    if (!waiting->len)
        return false;
    const SchedArrival *ar = &inst->arr[ref];
    int32_t culprit = g_array_index(waiting, int32_t, 0);
    for (uint32_t i = 0; i < inst->n; i++)
        if (!inst->arr[i].present) {
            culprit = g->ranks[i];
            break;
        }
    g_autofree char *layer = fmt_layer(ar->layer);
    g_autofree char *t = sched_format_ns(timeout);
    g_autofree char *work = work_nccl(rec, inst, ref);
    g_autofree char *victims = fmt_rank_array(waiting);
    g_autoptr(JsonBuilder) b = json_begin_instance(g, inst);
    json_builder_set_member_name(b, "arrive_us");
    json_builder_add_double_value(b, (double)ar->arrive_ns / 1e3);
    json_add_ranks(b, "waiting", waiting);
    g_autoptr(GArray) arrived = g_array_new(FALSE, FALSE, sizeof(int32_t));
    arrived_ranks(rec, inst, arrived);
    json_add_ranks(b, "arrived", arrived);
    GString *msg = g_string_new(NULL);
    g_string_append_printf(
        msg, "timeout: rank%s %s waited %s in %s (group %s, seq %" G_GUINT64_FORMAT "%s); late: ",
        waiting->len > 1 ? "s" : "", victims, t, name_of(rec, ar->name), g->name, inst->seq,
        layer);
    append_missing(rec, inst, msg, b, 8);
    bool on_watch = watched(g, ar->kind);
    if (on_watch)
        g_string_append_printf(msg,
                               ".\n  on hardware, each of them: Watchdog caught collective "
                               "operation timeout: %s ran for %" G_GINT64_FORMAT
                               " milliseconds before timing out",
                               work, timeout / 1000000);
    else
        g_string_append_printf(msg,
                               ".\n  on hardware: no watchdog line — %s (group %s) runs on %s, "
                               "outside PyTorch's process group",
                               name_of(rec, ar->name), g->name,
                               g->unwatched_via ? g->unwatched_via
                                                : "a communicator the watchdog does not track");
    json_builder_set_member_name(b, "hardware");
    if (on_watch)
        json_builder_add_string_value(b, work);
    else
        json_builder_add_null_value(b);
    json_builder_end_object(b);
    diag_add(rec, out, "timeout", SCHED_SEV_ERROR, culprit, inst->group, inst->seq, ar->layer,
             name_of(rec, ar->name), g_string_free(msg, FALSE), json_finish(b));
    return true;
}

/* ---- deadlock ---- */

typedef struct {
    uint32_t n;
    GArray **adj; /* per rank: GArray<int32_t> of ranks it waits for (blocked ones only) */
} Graph;

/* Iterative Tarjan: appends every SCC that is a real cycle (size > 1 or a self-loop) to
 * `cycles` as a sorted GArray<int32_t>. */
static void find_cycles(const Graph *gr, const bool *blocked, GPtrArray *cycles)
{
    uint32_t n = gr->n;
    g_autofree int32_t *index = g_new(int32_t, n);
    g_autofree int32_t *low = g_new(int32_t, n);
    g_autofree bool *on_stack = g_new0(bool, n);
    g_autofree int32_t *stack = g_new(int32_t, n);
    g_autofree int32_t *call_v = g_new(int32_t, n);
    g_autofree uint32_t *call_i = g_new(uint32_t, n);
    for (uint32_t v = 0; v < n; v++)
        index[v] = -1;
    int32_t next_index = 0;
    uint32_t sp = 0;
    for (uint32_t root = 0; root < n; root++) {
        if (!blocked[root] || index[root] >= 0)
            continue;
        uint32_t depth = 0;
        call_v[0] = (int32_t)root;
        call_i[0] = 0;
        index[root] = low[root] = next_index++;
        stack[sp++] = (int32_t)root;
        on_stack[root] = true;
        while (true) {
            int32_t v = call_v[depth];
            GArray *adj = gr->adj[v];
            if (adj && call_i[depth] < adj->len) {
                int32_t w = g_array_index(adj, int32_t, call_i[depth]++);
                if (index[w] < 0) {
                    index[w] = low[w] = next_index++;
                    stack[sp++] = w;
                    on_stack[w] = true;
                    depth++;
                    call_v[depth] = w;
                    call_i[depth] = 0;
                } else if (on_stack[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            if (low[v] == index[v]) {
                GArray *comp = g_array_new(FALSE, FALSE, sizeof(int32_t));
                int32_t w;
                do {
                    w = stack[--sp];
                    on_stack[w] = false;
                    g_array_append_val(comp, w);
                } while (w != v);
                bool self_loop = false;
                if (comp->len == 1 && adj)
                    for (guint k = 0; k < adj->len; k++)
                        self_loop |= g_array_index(adj, int32_t, k) == v;
                if (comp->len > 1 || self_loop) {
                    g_array_sort(comp, cmp_i32);
                    g_ptr_array_add(cycles, comp);
                } else {
                    g_array_unref(comp);
                }
            }
            if (depth == 0)
                break;
            depth--;
            int32_t parent = call_v[depth];
            if (low[v] < low[parent])
                low[parent] = low[v];
        }
    }
}

static int cmp_cycle(gconstpointer a, gconstpointer b)
{
    const GArray *x = *(GArray *const *)a, *y = *(GArray *const *)b;
    return cmp_i32(x->data, y->data);
}

/* Minority ranks of a poisoned (mismatched) instance; empty when there is no majority. */
static void minority_ranks(const SchedRunRecord *rec, const SchedInstance *inst, GArray *out)
{
    const SchedGroup *g = group_of(rec, inst);
    bool p2p = false;
    const SchedArrival *first = NULL;
    for (uint32_t i = 0; i < inst->n && !first; i++)
        if (inst->arr[i].present)
            first = &inst->arr[i];
    if (!first)
        return;
    p2p = sched_op_is_p2p(first->kind);
    /* Distinct signatures with their counts (O(n^2), diagnosis only). */
    g_autofree uint32_t *rep = g_new(uint32_t, inst->n);
    g_autofree guint *counts = g_new0(guint, inst->n);
    guint k = 0;
    for (uint32_t i = 0; i < inst->n; i++) {
        if (!inst->arr[i].present || inst->arr[i].done || inst->arr[i].nosig)
            continue;
        guint j = 0;
        while (j < k && !sched_arrival_same_signature(&inst->arr[rep[j]], &inst->arr[i], p2p))
            j++;
        if (j == k)
            rep[k++] = i;
        counts[j]++;
    }
    int best = decisive_majority(counts, k, unknown_members(rec, inst, NULL));
    if (best < 0 || k < 2)
        return;
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].present && !inst->arr[i].done && !inst->arr[i].nosig &&
            !sched_arrival_same_signature(&inst->arr[i], &inst->arr[rep[best]], p2p))
            g_array_append_val(out, g->ranks[i]);
}

/* The deadlock analysis in progress: the blocked ranks, the instances that hold them, the
 * wait-for graph and the culprits found so far, and the message and detail being written. */
typedef struct {
    const SchedRunRecord *rec;
    uint32_t n;
    bool *blocked;
    bool *undecided;       /* ranks others wait on that left no record: never culprits */
    int8_t *culprit;       /* CULPRIT_* by rank */
    Graph gr;
    GPtrArray *insts;      /* SchedInstance* holding blocked ranks, first-arrival order */
    JsonBuilder *b;
    GString *msg;
    GPtrArray *cycles;     /* sorted GArray<int32_t> */
} Deadlock;

enum {
    CULPRIT_NONE = 0,
    CULPRIT_FINISHED,
    CULPRIT_CRASHED,
    CULPRIT_MISMATCH,
    CULPRIT_IDLE,
    CULPRIT_BEHIND, /* blocked in a call every other member arrived in and some completed */
};

static const SchedArrival *first_present(const SchedInstance *inst)
{
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].present)
            return &inst->arr[i];
    return NULL;
}

/* Whether every rank's state was simulated (the engine's) rather than read from files. */
static bool all_simulated(const SchedRunRecord *rec)
{
    for (uint32_t r = 0; r < rec->n_ranks; r++)
        if (rec->ranks[r].evidence != SCHED_EVIDENCE_SIMULATED)
            return false;
    return true;
}

/* Step 1: who is blocked, which instances hold them, and the headline. */
static void deadlock_begin(Deadlock *d)
{
    const SchedRunRecord *rec = d->rec;
    uint32_t n_blocked = 0, n_done = 0, n_idle = 0, n_crashed = 0, n_unknown = 0;
    for (uint32_t r = 0; r < d->n; r++) {
        SchedSeen st = rec->ranks[r].state;
        d->blocked[r] = st == SCHED_SEEN_BLOCKED;
        n_blocked += d->blocked[r];
        n_done += st == SCHED_SEEN_DONE;
        n_idle += st == SCHED_SEEN_IDLE;
        n_crashed += st == SCHED_SEEN_CRASHED;
        n_unknown += st == SCHED_SEEN_UNKNOWN;
    }
    for (guint k = 0; k < rec->instances->len; k++) {
        SchedInstance *inst = g_ptr_array_index(rec->instances, k);
        const SchedGroup *g = group_of(rec, inst);
        bool holds = false;
        for (uint32_t i = 0; i < inst->n && !holds; i++)
            holds = inst->arr[i].present && d->blocked[g->ranks[i]];
        if (holds)
            g_ptr_array_add(d->insts, inst);
    }
    g_autofree char *now = sched_format_ns(rec->now_ns);
    if (all_simulated(rec))
        g_string_append_printf(d->msg,
                               "deadlock at %s: %u rank%s blocked forever (%u finished, %u "
                               "crashed); no event is pending",
                               now, n_blocked, n_blocked == 1 ? "" : "s", n_done, n_crashed);
    else
        g_string_append_printf(d->msg,
                               "deadlock (recorded): %u rank%s blocked in collectives that never "
                               "completed (%u idle, %u without a record)",
                               n_blocked, n_blocked == 1 ? "" : "s", n_done + n_idle, n_unknown);
}

/* The wait-for edges out of `inst`'s blocked members, and the culprits it shows. */
static void deadlock_judge_instance(Deadlock *d, const SchedInstance *inst)
{
    const SchedRunRecord *rec = d->rec;
    const SchedGroup *g = group_of(rec, inst);
    for (uint32_t i = 0; i < inst->n; i++) {
        int32_t r = g->ranks[i];
        if (!inst->arr[i].present || !d->blocked[r])
            continue;
        if (!d->gr.adj[r])
            d->gr.adj[r] = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t j = 0; j < inst->n; j++) {
            if (inst->arr[j].present)
                continue;
            int32_t m = g->ranks[j];
            SchedSeen st = rec->ranks[m].state;
            if (d->blocked[m])
                g_array_append_val(d->gr.adj[r], m);
            else if (st == SCHED_SEEN_DONE)
                d->culprit[m] = CULPRIT_FINISHED;
            else if (st == SCHED_SEEN_IDLE)
                d->culprit[m] = CULPRIT_IDLE;
            else if (st == SCHED_SEEN_CRASHED)
                d->culprit[m] = CULPRIT_CRASHED;
            else if (st == SCHED_SEEN_UNKNOWN)
                d->undecided[m] = true;
        }
    }
    for (uint32_t i = 0; i < inst->n; i++)
        if (inst->arr[i].present && rec->ranks[g->ranks[i]].state == SCHED_SEEN_CRASHED)
            d->culprit[g->ranks[i]] = CULPRIT_CRASHED;
    /* One call behind: every member is accounted for, some completed their side, the blocked
     * ones never finished theirs (vllm#23448: SeqNum 5729 vs 5730). */
    uint32_t present = 0, done = 0;
    for (uint32_t i = 0; i < inst->n; i++) {
        present += inst->arr[i].present;
        done += inst->arr[i].done;
    }
    if (!inst->mismatched && present == inst->n && done > 0)
        for (uint32_t i = 0; i < inst->n; i++)
            if (!inst->arr[i].done && d->blocked[g->ranks[i]])
                d->culprit[g->ranks[i]] = CULPRIT_BEHIND;
    if (inst->mismatched) {
        g_autoptr(GArray) minority = g_array_new(FALSE, FALSE, sizeof(int32_t));
        minority_ranks(rec, inst, minority);
        for (guint i = 0; i < minority->len; i++)
            d->culprit[g_array_index(minority, int32_t, i)] = CULPRIT_MISMATCH;
    }
}

/* Step 2: per instance, its edges and culprits, its detail object and its message line. */
static void deadlock_instances(Deadlock *d)
{
    const SchedRunRecord *rec = d->rec;
    JsonBuilder *b = d->b;
    const uint32_t max_lines = 12;
    json_builder_set_member_name(b, "instances");
    json_builder_begin_array(b);
    for (guint k = 0; k < d->insts->len; k++) {
        const SchedInstance *inst = g_ptr_array_index(d->insts, k);
        const SchedGroup *g = group_of(rec, inst);
        const SchedArrival *ref = first_present(inst);
        g_autoptr(GArray) arrived = g_array_new(FALSE, FALSE, sizeof(int32_t));
        arrived_ranks(rec, inst, arrived);
        deadlock_judge_instance(d, inst);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "group");
        json_builder_add_string_value(b, g->name);
        json_builder_set_member_name(b, "seq");
        json_builder_add_int_value(b, (gint64)inst->seq);
        json_builder_set_member_name(b, "op");
        json_builder_add_string_value(b, name_of(rec, ref->name));
        json_add_layer(b, ref->layer);
        json_builder_set_member_name(b, "mismatched");
        json_builder_add_boolean_value(b, inst->mismatched);
        json_add_ranks(b, "arrived", arrived);
        GString *line = g_string_new(NULL);
        append_missing(rec, inst, line, b, 4);
        json_builder_set_member_name(b, "hardware");
        g_autofree char *work = work_nccl(rec, inst, (uint32_t)(ref - inst->arr));
        if (watched(g, ref->kind))
            json_builder_add_string_value(b, work);
        else
            json_builder_add_null_value(b); /* outside the process group: no watchdog line */
        json_builder_end_object(b);
        if (k < max_lines) {
            g_autofree char *rs = fmt_rank_array(arrived);
            g_autofree char *layer = fmt_layer(ref->layer);
            g_string_append_printf(
                d->msg, "\n  %s (group %s, seq %" G_GUINT64_FORMAT "%s): arrived %s; missing %s",
                name_of(rec, ref->name), g->name, inst->seq, layer, rs, line->str);
        }
        g_string_free(line, TRUE);
    }
    json_builder_end_array(b);
    if (d->insts->len > max_lines)
        g_string_append_printf(d->msg, "\n  ... and %u more blocked instances",
                               d->insts->len - max_lines);
}

/* Step 3: per blocked rank, where it waits (instances carry the arrived/missing sets). */
static void deadlock_blocked(Deadlock *d)
{
    const SchedRunRecord *rec = d->rec;
    JsonBuilder *b = d->b;
    json_builder_set_member_name(b, "blocked");
    json_builder_begin_array(b);
    for (uint32_t r = 0; r < d->n; r++) {
        if (!d->blocked[r])
            continue;
        const SchedInstance *inst = rec->ranks[r].waiting;
        guint k = 0;
        while (k < d->insts->len && g_ptr_array_index(d->insts, k) != inst)
            k++;
        int32_t mi = sched_group_index_of(group_of(rec, inst), (int32_t)r);
        const SchedArrival *ar = &inst->arr[mi];
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "rank");
        json_builder_add_int_value(b, r);
        json_builder_set_member_name(b, "group");
        json_builder_add_string_value(b, group_name(rec, inst->group));
        json_builder_set_member_name(b, "seq");
        json_builder_add_int_value(b, (gint64)inst->seq);
        json_builder_set_member_name(b, "op");
        json_builder_add_string_value(b, name_of(rec, ar->name));
        json_add_layer(b, ar->layer);
        json_builder_set_member_name(b, "since_us");
        json_builder_add_double_value(b, (double)ar->arrive_ns / 1e3);
        json_builder_set_member_name(b, "instance");
        json_builder_add_int_value(b, k);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* The member of `inst` that `r` waits for within the cycle `in` (a missing, blocked one), or
 * -1. */
static int32_t chain_next(const Deadlock *d, const SchedInstance *inst, const bool *in)
{
    const SchedGroup *g = group_of(d->rec, inst);
    for (uint32_t i = 0; i < inst->n; i++)
        if (!inst->arr[i].present && in[g->ranks[i]] && d->blocked[g->ranks[i]])
            return g->ranks[i];
    return -1;
}

/* Names the calls of one cycle: "rank 0 waits in X (group a, seq 1) for rank 1, which waits in
 * Y (group b, seq 1) for rank 0". A cycle across groups whose every waited-for member called
 * the call too, queued behind its own blocked one, is an ordering deadlock: each call is
 * matched, the launch orders differ (NVIDIA/nccl#899). */
static void cycle_chain(Deadlock *d, const GArray *c)
{
    const SchedRunRecord *rec = d->rec;
    g_autofree bool *in = g_new0(bool, d->n);
    for (guint i = 0; i < c->len; i++)
        in[g_array_index(c, int32_t, i)] = true;
    int32_t start = g_array_index(c, int32_t, 0), cur = start, first_group = -1;
    bool cross = false, matched = true;
    GString *chain = g_string_new(NULL);
    for (guint step = 0; step < c->len; step++) {
        const SchedInstance *inst = rec->ranks[cur].waiting;
        int32_t next = inst ? chain_next(d, inst, in) : -1;
        if (next < 0)
            break;
        int32_t mi = sched_group_index_of(group_of(rec, inst), next);
        bool queued = inst->arr[mi].queued;
        matched &= queued;
        if (first_group < 0)
            first_group = inst->group;
        cross |= inst->group != first_group;
        const SchedArrival *ref = first_present(inst);
        if (!step)
            g_string_append_printf(chain, "rank %d", cur);
        g_string_append_printf(chain, "%s waits in %s (group %s, seq %" G_GUINT64_FORMAT
                                      ") for rank %d%s",
                               step ? ", which" : "", name_of(rec, ref->name),
                               group_name(rec, inst->group), inst->seq, next,
                               queued ? " (called too, queued behind its own blocked call)" : "");
        cur = next;
        if (cur == start)
            break;
    }
    if (chain->len)
        g_string_append_printf(d->msg, ":\n    %s", chain->str);
    if (cross && matched && chain->len)
        g_string_append(d->msg,
                        "\n    a cross-communicator ordering deadlock: every call is matched, yet "
                        "the ranks launched them on different communicators in opposite orders "
                        "and each stream runs its calls in order (NVIDIA/nccl#899); fix: one "
                        "launch order on every rank, or the communicators on separate streams");
    g_string_free(chain, TRUE);
}

/* Step 4: the wait-for edges and their cycles. */
static void deadlock_graph(Deadlock *d)
{
    JsonBuilder *b = d->b;
    find_cycles(&d->gr, d->blocked, d->cycles);
    g_ptr_array_sort(d->cycles, cmp_cycle);
    json_builder_set_member_name(b, "edges");
    json_builder_begin_array(b);
    GString *edges = g_string_new(NULL);
    uint32_t n_edges = 0;
    for (uint32_t r = 0; r < d->n; r++) {
        if (!d->gr.adj[r])
            continue;
        for (guint k = 0; k < d->gr.adj[r]->len; k++) {
            int32_t m = g_array_index(d->gr.adj[r], int32_t, k);
            json_builder_begin_array(b);
            json_builder_add_int_value(b, r);
            json_builder_add_int_value(b, m);
            json_builder_end_array(b);
            if (n_edges < 16)
                g_string_append_printf(edges, "%s%u->%d", n_edges ? ", " : "", r, m);
            n_edges++;
        }
    }
    json_builder_end_array(b);
    if (n_edges > 16)
        g_string_append_printf(edges, ", ... (%u edges in all)", n_edges);
    if (n_edges)
        g_string_append_printf(d->msg, "\n  wait-for (AND) edges between blocked ranks: %s",
                               edges->str);
    g_string_free(edges, TRUE);
    json_builder_set_member_name(b, "cycles");
    json_builder_begin_array(b);
    for (guint k = 0; k < d->cycles->len; k++) {
        GArray *c = g_ptr_array_index(d->cycles, k);
        json_builder_begin_array(b);
        for (guint i = 0; i < c->len; i++)
            json_builder_add_int_value(b, g_array_index(c, int32_t, i));
        json_builder_end_array(b);
        if (k < 8) {
            g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)c->data, c->len);
            g_string_append_printf(d->msg, "\n  cycle: ranks %s wait on each other", rs);
            cycle_chain(d, c);
        }
    }
    json_builder_end_array(b);
}

/* Step 5: the culprits and the undecided ranks. Returns the first culprit, or -1. */
static int32_t deadlock_culprits(Deadlock *d)
{
    static const char *const reasons[] = {"", "finished", "crashed", "mismatch", "idle", "behind"};
    JsonBuilder *b = d->b;
    g_autoptr(GArray) unknown = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (uint32_t r = 0; r < d->n; r++)
        if (d->undecided[r])
            g_array_append_val(unknown, r);
    json_add_ranks(b, "unknown", unknown);
    json_builder_set_member_name(b, "culprits");
    json_builder_begin_array(b);
    GString *cul = g_string_new(NULL);
    int32_t first_culprit = -1;
    for (uint32_t r = 0; r < d->n; r++) {
        if (!d->culprit[r])
            continue;
        if (first_culprit < 0)
            first_culprit = (int32_t)r;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "rank");
        json_builder_add_int_value(b, r);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, reasons[d->culprit[r]]);
        json_builder_end_object(b);
        g_autofree char *what = describe_rank(d->rec, r);
        if (d->culprit[r] == CULPRIT_MISMATCH)
            g_string_append_printf(cul, "%srank %u (brought a minority signature; %s)",
                                   cul->len ? ", " : "", r, what);
        else if (d->culprit[r] == CULPRIT_BEHIND)
            g_string_append_printf(cul,
                                   "%srank %u (%s: it never finished a call its peers "
                                   "completed)",
                                   cul->len ? ", " : "", r, what);
        else
            g_string_append_printf(cul, "%srank %u (%s while others wait on it)",
                                   cul->len ? ", " : "", r, what);
    }
    json_builder_end_array(b);
    if (cul->len)
        g_string_append_printf(d->msg, "\n  culprits: %s", cul->str);
    if (unknown->len) {
        g_autofree char *us =
            sched_format_ranks((const int32_t *)(void *)unknown->data, unknown->len);
        g_string_append_printf(d->msg,
                               "\n  undecided: rank%s %s left no record; whether %s the culprit "
                               "cannot be decided from the evidence",
                               unknown->len > 1 ? "s" : "", us,
                               unknown->len > 1 ? "any of them is" : "it is");
    }
    if (!cul->len && !unknown->len && d->cycles->len)
        g_string_append(d->msg, "\n  culprits: none by rule — the ranks entered their groups in "
                                "different orders (a cycle); fix the order, not a rank");
    else if (!cul->len && !unknown->len)
        g_string_append(d->msg, "\n  culprits: none identified");
    g_string_free(cul, TRUE);
    return first_culprit;
}

/* One watchdog line and the blocked ranks (victims) that print it. */
typedef struct {
    char *work;     /* the line; "\001..." when no watchdog watches the call */
    int64_t first;  /* the earliest blocked arrival in its instance */
    bool recorded;  /* the victims' state was read from files: the line as they printed it */
    GArray *victims;
} HwLine;

static void hw_line_clear(gpointer data)
{
    HwLine *h = data;
    g_free(h->work);
    g_array_unref(h->victims);
}

/* The line blocked member i of `inst` prints: its own (NumelIn/NumelOut are its own, so in a
 * mismatch they differ), or, for a call of a kind the group runs outside its process group's
 * watchdog, a sentence saying it prints nothing. */
static char *hw_work(const SchedRunRecord *rec, const SchedInstance *inst, uint32_t i)
{
    const SchedGroup *g = group_of(rec, inst);
    if (watched(g, inst->arr[i].kind))
        return work_nccl(rec, inst, i);
    g_autofree char *op = g_strdup_printf("%s %s",
                                          sched_op_kind_name((SchedOpKind)inst->arr[i].kind),
                                          name_of(rec, inst->arr[i].name));
    return g_strdup_printf("\001%s (group %s) runs on %s, outside PyTorch's process group: no "
                           "Flight Recorder entry, no watchdog timeout",
                           op, g->name,
                           g->unwatched_via ? g->unwatched_via
                                            : "a communicator the watchdog does not track");
}

/* The watchdog lines of the blocked instances, on their victims; lines printed the same at the
 * same time are merged. */
static GArray *deadlock_hw_lines(const Deadlock *d)
{
    const SchedRunRecord *rec = d->rec;
    GArray *hwl = g_array_new(FALSE, FALSE, sizeof(HwLine));
    g_array_set_clear_func(hwl, hw_line_clear);
    for (guint k = 0; k < d->insts->len; k++) {
        const SchedInstance *inst = g_ptr_array_index(d->insts, k);
        const SchedGroup *g = group_of(rec, inst);
        int64_t t_first = INT64_MAX;
        for (uint32_t i = 0; i < inst->n; i++)
            if (inst->arr[i].present && d->blocked[g->ranks[i]] &&
                inst->arr[i].arrive_ns < t_first)
                t_first = inst->arr[i].arrive_ns;
        if (t_first == INT64_MAX)
            continue;
        for (uint32_t i = 0; i < inst->n; i++) {
            if (!inst->arr[i].present || !d->blocked[g->ranks[i]])
                continue;
            char *work = hw_work(rec, inst, i);
            HwLine *line = NULL;
            for (guint j = 0; j < hwl->len && !line; j++) {
                HwLine *h = &g_array_index(hwl, HwLine, j);
                if (h->first == t_first && strcmp(h->work, work) == 0)
                    line = h;
            }
            if (line) {
                g_free(work);
            } else {
                HwLine h = {
                    .work = work,
                    .first = t_first,
                    .recorded = rec->ranks[g->ranks[i]].evidence != SCHED_EVIDENCE_SIMULATED,
                    .victims = g_array_new(FALSE, FALSE, sizeof(int32_t)),
                };
                g_array_append_val(hwl, h);
                line = &g_array_index(hwl, HwLine, hwl->len - 1);
            }
            g_array_append_val(line->victims, g->ranks[i]);
        }
    }
    return hwl;
}

/* Step 6: how it surfaces on hardware: the watchdog line of each blocked instance. */
static void deadlock_hardware(Deadlock *d)
{
    const SchedRunRecord *rec = d->rec;
    g_autoptr(GArray) hwl = deadlock_hw_lines(d);
    GString *hw = g_string_new(NULL);
    int64_t timeout = rec->timeout_ns;
    for (guint j = 0; j < hwl->len && j < 6; j++) {
        HwLine *h = &g_array_index(hwl, HwLine, j);
        g_autofree char *rs = fmt_rank_array(h->victims);
        const char *pl = h->victims->len > 1 ? "s" : "";
        if (h->work[0] == '\001') {
            g_string_append_printf(hw, "\n  on hardware: no watchdog line on rank%s %s: %s", pl,
                                   rs, h->work + 1);
        } else if (h->recorded) {
            /* Only a record from PyTorch's process group has a watchdog (and a timeout). */
            if (timeout > 0)
                g_string_append_printf(hw, "\n  watchdog line on rank%s %s: %s", pl, rs, h->work);
        } else if (timeout > 0) {
            g_autofree char *t = sched_format_ns(timeout);
            g_autofree char *at = sched_format_ns(h->first + timeout);
            g_string_append_printf(hw,
                                   "\n  on hardware: %s watchdog would fire on rank%s %s "
                                   "after %s (at t=%s): %s",
                                   rec->watchdog_hccl ? "torch_npu's" : "PyTorch's", pl, rs, t,
                                   at, h->work);
        } else {
            g_string_append_printf(hw,
                                   "\n  on hardware: rank%s %s would hang in %s forever (the "
                                   "watchdog is disabled)",
                                   pl, rs, h->work);
        }
    }
    if (hwl->len > 6)
        g_string_append_printf(hw, "\n  ... and %u more watchdog lines", hwl->len - 6);
    g_string_append(d->msg, hw->str);
    json_builder_set_member_name(d->b, "hardware");
    json_builder_add_string_value(d->b, hw->len ? hw->str + 3 : "");
    g_string_free(hw, TRUE);
}

void sched_diagnose_deadlock(const SchedRunRecord *rec, SchedOutcome *out)
{
    const uint32_t n = rec->n_ranks;
    g_autofree bool *blocked = g_new0(bool, n);
    g_autofree bool *undecided = g_new0(bool, n);
    g_autofree int8_t *culprit = g_new0(int8_t, n);
    g_autoptr(GPtrArray) insts = g_ptr_array_new();
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(GPtrArray) cycles = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    Deadlock d = {
        .rec = rec,
        .n = n,
        .blocked = blocked,
        .undecided = undecided,
        .culprit = culprit,
        .gr = {n, g_new0(GArray *, n)},
        .insts = insts,
        .b = b,
        .msg = g_string_new(NULL),
        .cycles = cycles,
    };
    json_builder_begin_object(b);
    deadlock_begin(&d);
    deadlock_instances(&d);
    deadlock_blocked(&d);
    deadlock_graph(&d);
    int32_t rank = deadlock_culprits(&d);
    deadlock_hardware(&d);
    json_builder_end_object(b);

    for (uint32_t r = 0; r < n; r++)
        if (d.gr.adj[r])
            g_array_unref(d.gr.adj[r]);
    g_free(d.gr.adj);

    const SchedInstance *first = insts->len ? g_ptr_array_index(insts, 0) : NULL;
    const SchedArrival *ref = first ? first_present(first) : NULL;
    diag_add(rec, out, "deadlock", SCHED_SEV_ERROR, rank, first ? first->group : -1,
             first ? first->seq : 0, ref ? ref->layer : -1, ref ? name_of(rec, ref->name) : NULL,
             g_string_free(d.msg, FALSE), json_finish(b));
}

/* ---- a record no engine ran ---- */

/* Whether every present member brought the same signature. */
static bool members_agree(const SchedInstance *inst)
{
    const SchedArrival *ref = NULL;
    for (uint32_t i = 0; i < inst->n; i++) {
        if (!inst->arr[i].present || inst->arr[i].done || inst->arr[i].nosig)
            continue;
        if (!ref)
            ref = &inst->arr[i];
        else if (!sched_arrival_same_signature(ref, &inst->arr[i], sched_op_is_p2p(ref->kind)))
            return false;
    }
    return true;
}

/* The outcome's per-rank part: states, calls, ends and waits as the record shows them. */
static void record_stats(const SchedRunRecord *rec, SchedOutcome *o)
{
    o->end_ns = rec->now_ns;
    for (uint32_t r = 0; r < rec->n_ranks; r++) {
        const SchedRankSeen *seen = &rec->ranks[r];
        SchedRankStats *st = &o->ranks[r];
        o->rank_ops += seen->calls;
        st->ops = seen->calls;
        st->end_ns = seen->end_ns;
        st->state = seen->state == SCHED_SEEN_BLOCKED   ? SCHED_RANK_BLOCKED
                    : seen->state == SCHED_SEEN_UNKNOWN ? SCHED_RANK_UNKNOWN
                    : seen->state == SCHED_SEEN_CRASHED ? SCHED_RANK_CRASHED
                                                        : SCHED_RANK_DONE;
        if (seen->state == SCHED_SEEN_BLOCKED)
            st->wait_ns = rec->now_ns > seen->end_ns ? rec->now_ns - seen->end_ns : 0;
    }
}

SchedOutcome *sched_diagnose_record(SchedRunRecord *rec)
{
    SchedOutcome *out = sched_outcome_new(rec->n_ranks);
    for (uint32_t i = 0; i < rec->n_groups; i++)
        sched_outcome_add_group(out, rec->groups[i]->name, rec->groups[i]->ranks,
                                rec->groups[i]->n);
    record_stats(rec, out);
    /* Signatures: an instance whose members all arrived, or left no record, and disagree. */
    for (guint k = 0; k < rec->instances->len; k++) {
        SchedInstance *inst = g_ptr_array_index(rec->instances, k);
        const SchedGroup *g = group_of(rec, inst);
        uint32_t accounted = 0;
        for (uint32_t m = 0; m < inst->n; m++)
            accounted +=
                inst->arr[m].present || rec->ranks[g->ranks[m]].state == SCHED_SEEN_UNKNOWN;
        if (accounted == inst->n && inst->arrived >= 2 && !members_agree(inst)) {
            inst->mismatched = inst->poisoned = true;
            sched_diagnose_mismatch(rec, inst, false, out);
        }
    }
    uint32_t n = rec->n_ranks, unknown = 0, blocked = 0;
    for (uint32_t r = 0; r < n; r++) {
        unknown += rec->ranks[r].state == SCHED_SEEN_UNKNOWN;
        blocked += rec->ranks[r].state == SCHED_SEEN_BLOCKED;
    }
    if (blocked) {
        sched_diagnose_deadlock(rec, out);
        return out;
    }
    char *msg = g_strdup_printf(
        "no hang in the record: every recorded collective of the %u rank%s read completed%s. "
        "A hang, if there was one, lies outside what was recorded: CPU-side, or in "
        "collectives the record cannot see (CUDA-graph replays, PyNccl and custom "
        "all-reduce bypass the Flight Recorder)",
        n - unknown, n - unknown == 1 ? "" : "s", unknown ? " (some ranks left no record)" : "");
    diag_add(rec, out, "no_hang", SCHED_SEV_WARNING, -1, -1, 0, -1, NULL, msg, NULL);
    return out;
}
