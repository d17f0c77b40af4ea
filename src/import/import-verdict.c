/* src/import/import-verdict.c — what an import's evidence amounts to: the lines that are evidence
 * without being calls (NCCL WARN lines, Ascend EI0002 wait-for edges, vLLM's own symptoms) made
 * diagnostics of their own with their source line quoted; the culprit candidates with their
 * reasons when the record does not determine a culprit; and the verdict — healthy, hang, or
 * inconclusive with what is missing and what to collect next time.
 *
 * Rules (doc/import.md "Outcomes"; facts: ../shared/reference/postmortem.md):
 * - HANG (exit 3): the record's diagnosis found a deadlock or mismatch, a watchdog said a call
 *   timed out, Ascend's EI0002 lines give wait-for edges, or NCCL printed a WARN naming a
 *   mismatch. The culprit is named when the evidence determines it; else a `candidates`
 *   diagnostic lists who could be and why (a rank that left no line for a call its peers time
 *   out in, members of a communicator the lines never show, the rank a WARN names, the sink of
 *   the wait-for graph), and the lines to search for in the other ranks' logs.
 * - HEALTHY (exit 0): nothing says hang, every rank of every group left calls, the groups'
 *   evidenced sizes are all seen, and completions were seen (an enqueue-only NCCL log never
 *   shows one) — else INCONCLUSIVE (exit 4): `inconclusive` replaces `no_hang` and says which
 *   ranks left nothing, which communicators could not be joined, and what to collect.
 * - A symptom (vLLM's shm_broadcast message, RPC timeouts, a dead worker) names no collective:
 *   alone it is inconclusive, quoted.
 *
 * Never fails; allocates freely (runs once per import).
 */
#include "import.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#include "../../sched/diagnose.h"

/* The longest quote of a source line in a message (the line stays whole in the detail). */
#define QUOTE_MAX 240
/* Wait-for graphs from EI0002 lines larger than this are summarised, not searched for cycles. */
#define WAIT_GRAPH_MAX 4096

const char *import_verdict_status(ImportVerdict v)
{
    switch (v) {
    case IMPORT_VERDICT_HANG:
        return "failed";
    case IMPORT_VERDICT_INCONCLUSIVE:
        return "inconclusive";
    default:
        return "ok";
    }
}

static char *quote(const ImportFinding *f)
{
    const char *t = f->text ? f->text : "";
    g_autofree char *cut = g_utf8_strlen(t, -1) > QUOTE_MAX
                               ? g_strdup_printf("%.*s…", (int)(g_utf8_offset_to_pointer(t, QUOTE_MAX) - t), t)
                               : g_strdup(t);
    return g_strdup_printf("%s: \"%s\"", f->source ? f->source : "(no source)", cut);
}

static char *json_text(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

static void add_diag(SchedOutcome *o, const char *kind, SchedSeverity sev, int32_t rank,
                     int32_t group, uint64_t seq, char *msg, char *detail)
{
    SchedDiag *d = sched_diag_new(kind, sev, rank, group, seq, -1, NULL, msg, detail);
    d->time_ns = o->end_ns;
    sched_outcome_add_diag(o, d);
    g_free(msg);
    g_free(detail);
}

/* A candidate culprit and why. */
typedef struct {
    int32_t rank; /* -1: a member whose global rank is unknown */
    char *reason;
} Candidate;

static void candidate_clear(gpointer p)
{
    g_free(((Candidate *)p)->reason);
}

static void add_candidate(GArray *c, int32_t rank, char *reason)
{
    for (guint i = 0; rank >= 0 && i < c->len; i++)
        if (g_array_index(c, Candidate, i).rank == rank) {
            g_free(reason);
            return;
        }
    Candidate k = {rank, reason};
    g_array_append_val(c, k);
}

/* ---- NCCL WARN lines ---- */

static const char *warn_meaning(const char *what)
{
    if (g_strcmp0(what, "mismatch") == 0)
        return "NCCL's own check saw calls that disagree at and around the rank it names: a "
               "program mismatch, or — with transport errors in the same log — the symptom of a "
               "failed connection (NVIDIA/nccl#214)";
    if (g_strcmp0(what, "size") == 0)
        return "a receive met a send of another size: the two ranks' calls disagree in count";
    if (g_strcmp0(what, "truncated") == 0)
        return "a message longer than the receive posted for it: the peers' counts disagree";
    return "NCCL reported an error";
}

static void warn_diags(const ImportSet *s, SchedOutcome *o, GArray *cands)
{
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        if (f->kind != IMPORT_FINDING_WARN)
            continue;
        g_autofree char *q = quote(f);
        g_autofree char *who = f->rank >= 0 ? g_strdup_printf(" on rank %d", f->rank)
                                            : g_strdup("");
        g_autofree char *names =
            f->peer >= 0 ? g_strdup_printf("; it names rank %d", f->peer) : g_strdup("");
        char *msg = g_strdup_printf("nccl_warn%s: %s%s.\n  %s", who, warn_meaning(f->what), names,
                                    q);
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "what");
        json_builder_add_string_value(b, f->what ? f->what : "");
        json_builder_set_member_name(b, "peer");
        json_builder_add_int_value(b, f->peer);
        json_builder_set_member_name(b, "source");
        json_builder_add_string_value(b, f->source ? f->source : "");
        json_builder_set_member_name(b, "line");
        json_builder_add_string_value(b, f->text ? f->text : "");
        json_builder_end_object(b);
        add_diag(o, "nccl_warn", SCHED_SEV_ERROR, f->rank, f->group, f->seq, msg, json_text(b));
        if (f->peer >= 0)
            add_candidate(cands, f->peer,
                          g_strdup_printf("named by NCCL's WARN%s (%s)", who,
                                          f->source ? f->source : "no source"));
    }
}

/* ---- EI0002 wait-for edges ---- */

/* Whether `to` is reachable from `from` over the edges (pairs), by breadth-first search. */
static bool reaches(const GArray *edges, int32_t from, int32_t to, uint32_t n)
{
    g_autofree bool *seen = g_new0(bool, n);
    g_autoptr(GArray) q = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_array_append_val(q, from);
    seen[from] = true;
    for (guint h = 0; h < q->len; h++) {
        int32_t v = g_array_index(q, int32_t, h);
        for (guint e = 0; e + 1 < edges->len; e += 2) {
            if (g_array_index(edges, int32_t, e) != v)
                continue;
            int32_t w = g_array_index(edges, int32_t, e + 1);
            if (w == to)
                return true;
            if (!seen[w]) {
                seen[w] = true;
                g_array_append_val(q, w);
            }
        }
    }
    return false;
}

/* One `wait_for` diagnostic over every EI0002 edge: the edges with their lines, the sinks
 * (waited for, waiting for nobody: the culprit when its own log was read and shows no wait, a
 * candidate when it was not) and the ranks on a cycle. */
static void wait_diag(const ImportSet *s, SchedOutcome *o, GArray *cands)
{
    g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(int32_t));
    GString *lines = g_string_new(NULL);
    uint32_t n = 0, shown = 0;
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        if (f->kind != IMPORT_FINDING_WAIT_EDGE || f->rank < 0 || f->peer < 0 ||
            f->rank >= WAIT_GRAPH_MAX || f->peer >= WAIT_GRAPH_MAX)
            continue;
        g_array_append_val(edges, f->rank);
        g_array_append_val(edges, f->peer);
        n = MAX(n, (uint32_t)MAX(f->rank, f->peer) + 1);
        if (shown++ < 6) {
            g_autofree char *q = quote(f);
            g_string_append_printf(lines, "\n  rank %d waits for rank %d — %s", f->rank, f->peer,
                                   q);
        }
    }
    if (!edges->len) {
        g_string_free(lines, TRUE);
        return;
    }
    if (shown > 6)
        g_string_append_printf(lines, "\n  ... and %u more edges", shown - 6);
    g_autofree bool *waits = g_new0(bool, n);
    g_autofree bool *waited = g_new0(bool, n);
    for (guint e = 0; e + 1 < edges->len; e += 2) {
        waits[g_array_index(edges, int32_t, e)] = true;
        waited[g_array_index(edges, int32_t, e + 1)] = true;
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    GString *verdict = g_string_new(NULL);
    int32_t culprit = -1;
    json_builder_set_member_name(b, "sinks");
    json_builder_begin_array(b);
    for (uint32_t r = 0; r < n; r++) {
        if (!waited[r] || waits[r])
            continue;
        json_builder_add_int_value(b, r);
        const ImportRank *ir = r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
        bool read = ir && ir->present;
        g_string_append_printf(verdict,
                               "\n  rank %u is waited for and waits for nobody: %s", r,
                               read ? "its own log shows no wait — the culprit"
                                    : "its log was not read — the candidate (its log would say "
                                      "whether it waits for someone else)");
        if (read && culprit < 0)
            culprit = (int32_t)r;
        add_candidate(cands, (int32_t)r,
                      g_strdup_printf("the rank the EI0002 wait-for edges end at%s",
                                      read ? "" : " (its own log was not read)"));
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "cycle");
    json_builder_begin_array(b);
    g_autoptr(GArray) cyc = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (uint32_t r = 0; r < n; r++)
        if (waits[r] && reaches(edges, (int32_t)r, (int32_t)r, n)) {
            g_array_append_val(cyc, r);
            json_builder_add_int_value(b, r);
        }
    json_builder_end_array(b);
    if (cyc->len) {
        g_autofree char *cs = sched_format_ranks((const int32_t *)(void *)cyc->data, cyc->len);
        g_string_append_printf(verdict,
                               "\n  cycle: ranks %s wait for each other (a deadlock: no rank is "
                               "the culprit by rule; fix the order of their calls)",
                               cs);
    }
    json_builder_set_member_name(b, "culprit");
    json_builder_add_int_value(b, culprit);
    json_builder_end_object(b);
    char *msg = g_strdup_printf("wait_for: Ascend's EI0002 lines (the Notify record a rank waits "
                                "for from a remote rank) give %u wait-for edge%s%s%s",
                                shown, shown == 1 ? "" : "s", lines->str, verdict->str);
    g_string_free(lines, TRUE);
    g_string_free(verdict, TRUE);
    add_diag(o, "wait_for", SCHED_SEV_ERROR, culprit, -1, 0, msg, json_text(b));
}

/* ---- vLLM's own symptoms ---- */

static const char *symptom_meaning(const char *what)
{
    if (g_strcmp0(what, "shm_broadcast") == 0)
        return "vLLM's shared-memory broadcast found no free block: a worker stopped reading the "
               "scheduler's messages — it hangs (or compiles); no collective is named";
    if (g_strcmp0(what, "rpc_timeout") == 0)
        return "vLLM's executor RPC timed out (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, 300 s, before "
               "PyTorch's 600 s watchdog): a worker did not finish its step";
    if (g_strcmp0(what, "ras_unresponsive") == 0)
        return "NCCL RAS could not reach the rank: its process hangs outside NCCL, died, or "
               "cannot be reached — a candidate";
    if (g_strcmp0(what, "ras_dead") == 0)
        return "NCCL RAS considers the rank dead: its peers wait on a process that is gone";
    if (g_strcmp0(what, "worker_died") == 0)
        return "a vLLM worker process died: the others then wait in their next collective";
    return "a sign of a hang that names no collective";
}

/* One `symptom` diagnostic per kind of line, quoting the first and counting the rest. */
static uint32_t symptom_diags(const ImportSet *s, SchedOutcome *o)
{
    uint32_t total = 0;
    g_autoptr(GHashTable) done = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        const char *what = f->what ? f->what : "symptom";
        if (f->kind != IMPORT_FINDING_SYMPTOM || g_hash_table_contains(done, what))
            continue;
        g_hash_table_add(done, (gpointer)what);
        uint32_t count = 0;
        for (guint j = i; j < s->findings->len; j++) {
            const ImportFinding *g = &g_array_index(s->findings, ImportFinding, j);
            count += g->kind == IMPORT_FINDING_SYMPTOM &&
                     g_strcmp0(g->what ? g->what : "symptom", what) == 0;
        }
        total += count;
        g_autofree char *q = quote(f);
        g_autofree char *more =
            count > 1 ? g_strdup_printf(" (and %u more such lines)", count - 1) : g_strdup("");
        char *msg = g_strdup_printf("symptom: %s.\n  %s%s", symptom_meaning(what), q, more);
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "what");
        json_builder_add_string_value(b, what);
        json_builder_set_member_name(b, "lines");
        json_builder_add_int_value(b, count);
        json_builder_set_member_name(b, "line");
        json_builder_add_string_value(b, f->text ? f->text : "");
        json_builder_end_object(b);
        add_diag(o, "symptom", SCHED_SEV_WARNING, f->rank, -1, 0, msg, json_text(b));
    }
    return total;
}

/* ---- what the record shows and lacks ---- */

/* The first diagnostic of `kind`, or NULL. */
static const SchedDiag *find_diag(const SchedOutcome *o, const char *kind)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, kind) == 0)
            return d;
    }
    return NULL;
}

/* Members a group's evidence says it has beyond those the lines show (size > seen), 0 none. */
static uint32_t unseen_members(const ImportGroup *g)
{
    return g->size > g->ranks->len ? g->size - g->ranks->len : 0;
}

static const ImportGroup *group_named(const ImportSet *s, const char *name)
{
    for (guint i = 0; name && i < s->groups->len; i++) {
        const ImportGroup *g = g_ptr_array_index(s->groups, i);
        g_autofree char *p2p = g_strdup_printf("%s p2p", g->name);
        if (strcmp(g->name, name) == 0 || (g->p2p && strcmp(p2p, name) == 0))
            return g;
    }
    return NULL;
}

/* The lines to search for in the other ranks' logs, for call `seq` of `group` (by format). */
static char *search_hint(const ImportSet *s, const char *group, uint64_t seq)
{
    switch (s->format) {
    case IMPORT_FORMAT_FR:
    case IMPORT_FORMAT_HCCL:
        return g_strdup_printf("the other ranks' dumps: entries of process group %s with "
                               "collective_seq_id %" G_GUINT64_FORMAT " (and its pg_status)",
                               group, seq);
    case IMPORT_FORMAT_NCCL:
        return g_strdup_printf("the other ranks' logs: the %s lines of `%s` (call %" G_GUINT64_FORMAT
                               " on it) and `NCCL WARN`",
                               "COLL", group, seq);
    default:
        return g_strdup_printf("the other ranks' logs: `SeqNum=%" G_GUINT64_FORMAT
                               "`, `Watchdog caught collective operation timeout`, `last "
                               "completed` (their PG status: did they finish it?), `NCCL WARN`, "
                               "`EI0002`",
                               seq);
    }
}

/* Candidates from the record's deadlock: the ranks others wait on that left no line for the
 * call (undecided), and the members of the hung groups the lines never show. */
static void deadlock_candidates(const ImportSet *s, const SchedDiag *dl, GArray *cands,
                                GString *search)
{
    g_autoptr(SchedDetail) det = dl ? sched_detail_parse(dl->detail) : NULL;
    if (!det)
        return;
    for (guint i = 0; i < det->unknown->len; i++) {
        int32_t r = g_array_index(det->unknown, int32_t, i);
        const ImportRank *ir = (guint)r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
        add_candidate(cands, r,
                      ir && ir->present
                          ? g_strdup("its log holds no line of the call its peers wait in: it "
                                     "never enqueued it (the usual culprit), or its log was cut")
                          : g_strdup("left no dump or log while its peers wait on it"));
    }
    for (guint k = 0; k < det->instances->len; k++) {
        const SchedDetailInstance *in = &g_array_index(det->instances, SchedDetailInstance, k);
        const ImportGroup *g = group_named(s, in->group);
        uint32_t unseen = g ? unseen_members(g) : 0;
        if (unseen)
            add_candidate(cands, -1,
                          g_strdup_printf("%u member%s of group %s that the lines never show "
                                          "(it has %u, %u seen; their global ranks are unknown)",
                                          unseen, unseen > 1 ? "s" : "", in->group, g->size,
                                          g->ranks->len));
        if (k < 3) {
            g_autofree char *h = search_hint(s, in->group, in->seq);
            g_string_append_printf(search, "\n  search %s", h);
        }
    }
}

/* Candidates from a mismatch the vote could not decide (a tie, or members that left no
 * record): each side's ranks, since one of the signatures is the odd one out. */
static void mismatch_candidates(const SchedOutcome *o, GArray *cands)
{
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "mismatch") != 0)
            continue;
        g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
        if (!det || det->culprits->len || det->signatures->len < 2)
            continue;
        for (guint k = 0; k < det->signatures->len; k++) {
            const SchedDetailSig *sg = &g_array_index(det->signatures, SchedDetailSig, k);
            for (guint j = 0; j < sg->ranks->len; j++)
                add_candidate(cands, g_array_index(sg->ranks, int32_t, j),
                              g_strdup_printf("brought %s %" G_GINT64_FORMAT " %s (%s) to %s "
                                              "call %" G_GUINT64_FORMAT ", where other ranks "
                                              "brought another signature; the ranks without a "
                                              "record would decide which is the odd one out",
                                              sg->kind ? sg->kind : "?", sg->count,
                                              sg->dtype ? sg->dtype : "?",
                                              sg->op ? sg->op : "?",
                                              det->group ? det->group : "?", det->seq));
        }
    }
}

/* The determined culprits: the record's (deadlock or mismatch) and the wait-for graph's. */
static uint32_t determined(const SchedOutcome *o)
{
    uint32_t n = 0;
    for (guint i = 0; i < o->diags->len; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
        if (!det)
            continue;
        if (strcmp(d->kind, "deadlock") == 0 || strcmp(d->kind, "mismatch") == 0)
            n += det->culprits->len;
        else if (strcmp(d->kind, "wait_for") == 0 && d->rank >= 0)
            n++;
    }
    return n;
}

static void candidates_diag(const ImportSet *s, SchedOutcome *o, GArray *cands, GString *search)
{
    if (!cands->len && !search->len)
        return;
    uint32_t fixed = determined(o);
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg, "candidates: %s",
                           fixed ? "the culprit above is what the evidence shows; these could "
                                   "still be involved"
                                 : "the evidence does not determine the culprit; it could be");
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "candidates");
    json_builder_begin_array(b);
    for (guint i = 0; i < cands->len; i++) {
        const Candidate *c = &g_array_index(cands, Candidate, i);
        if (i < 12) {
            if (c->rank >= 0)
                g_string_append_printf(msg, "\n  rank %d: %s", c->rank, c->reason);
            else
                g_string_append_printf(msg, "\n  %s", c->reason);
        }
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "rank");
        json_builder_add_int_value(b, c->rank);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, c->reason);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    if (cands->len > 12)
        g_string_append_printf(msg, "\n  ... and %u more", cands->len - 12);
    if (!cands->len)
        g_string_append(msg, "\n  (no rank beyond those named above)");
    g_string_append(msg, search->str);
    json_builder_end_object(b);
    int32_t first = cands->len ? g_array_index(cands, Candidate, 0).rank : -1;
    add_diag(o, "candidates", SCHED_SEV_WARNING, first, -1, 0, g_string_free(msg, FALSE),
             json_text(b));
}

/* What the set lacks for a verdict of health: appended to `msg` and `collect` (the settings and
 * lines to collect next time). Returns the number of gaps. */
static uint32_t gaps(const ImportSet *s, const SchedOutcome *o, uint32_t symptoms, GString *msg,
                     GPtrArray *collect)
{
    uint32_t n = 0;
    g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(int32_t));
    uint64_t calls = 0;
    bool enqueue_only = false;
    for (uint32_t r = 0; r < o->n_ranks; r++) {
        if (o->ranks[r].state == SCHED_RANK_UNKNOWN) {
            int32_t rr = (int32_t)r;
            g_array_append_val(missing, rr);
        }
        calls += o->ranks[r].ops;
    }
    for (guint r = 0; r < s->ranks->len && !enqueue_only; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint i = 0; ir->present && i < ir->entries->len && !enqueue_only; i++)
            enqueue_only = g_array_index(ir->entries, ImportEntry, i).state == IMPORT_STATE_UNKNOWN;
    }
    if (!calls) {
        n++;
        g_string_append(msg, "\n  no collective call was read from any rank");
    }
    if (missing->len) {
        n++;
        bool absent = false;
        for (guint i = 0; i < missing->len; i++) {
            int32_t r = g_array_index(missing, int32_t, i);
            const ImportRank *ir =
                (guint)r < s->ranks->len ? g_ptr_array_index(s->ranks, r) : NULL;
            absent |= !ir || !ir->present;
        }
        g_autofree char *ms =
            sched_format_ranks((const int32_t *)(void *)missing->data, missing->len);
        g_string_append_printf(msg, "\n  rank%s %s: no call read (%s)",
                               missing->len > 1 ? "s" : "", ms,
                               absent ? "no dump or log of them, or one without calls"
                                      : "their dumps or logs hold none");
        if (absent)
            g_ptr_array_add(collect,
                            g_strdup("every rank's log or dump, not only the first rank's"));
    }
    bool unjoined = false;
    for (guint i = 0; i < s->groups->len; i++) {
        const ImportGroup *g = g_ptr_array_index(s->groups, i);
        uint32_t unseen = unseen_members(g);
        if (!unseen && !g->inferred)
            continue;
        g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)g->ranks->data,
                                                 g->ranks->len);
        if (unseen) {
            n++;
            g_string_append_printf(msg,
                                   "\n  group %s has %u members, the lines show %u (rank%s %s): "
                                   "the other %u could not be joined",
                                   g->name, g->size, g->ranks->len, g->ranks->len > 1 ? "s" : "",
                                   rs, unseen);
        } else {
            g_string_append_printf(msg,
                                   "\n  group %s was joined without Init lines, from what its "
                                   "lines carry (ranks %s)",
                                   g->name, rs);
        }
        unjoined = true;
    }
    if (unjoined)
        g_ptr_array_add(collect, g_strdup("the NCCL Init lines (NCCL_DEBUG=INFO "
                                          "NCCL_DEBUG_SUBSYS=INIT,COLL from the job's start): "
                                          "their commId joins each communicator's members"));
    if (s->format == IMPORT_FORMAT_INSPECTOR) {
        n++;
        g_string_append(msg, "\n  NCCL Inspector writes completed calls only: a call every rank "
                             "started and none finished never shows in its files");
    }
    if (enqueue_only) {
        n++;
        g_string_append(msg, "\n  NCCL COLL lines are printed at enqueue, never at completion: "
                             "every call was made by every member seen, but whether the last "
                             "ones completed the log cannot show");
    }
    if (symptoms) {
        n++;
        g_string_append_printf(msg, "\n  %u symptom line%s (above) say a process stopped taking "
                                    "part, without naming a collective or a rank",
                               symptoms, symptoms > 1 ? "s" : "");
        g_ptr_array_add(collect, g_strdup("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL: vLLM's "
                                          "PyNccl and custom collectives bypass PyTorch's "
                                          "watchdog and Flight Recorder, only NCCL's lines "
                                          "show them"));
    }
    if (n)
        g_ptr_array_add(collect, g_strdup("the Flight Recorder: TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
                                          "(TORCH_FR_BUFFER_SIZE; 0 before torch 2.10), dumped on "
                                          "timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1; Ascend: "
                                          "TORCH_HCCL_TRACE_BUFFER_SIZE and "
                                          "TORCH_HCCL_DUMP_ON_TIMEOUT=1): it records completions"));
    return n;
}

/* Drops the record's `no_hang` warning (a finding of the import says more). */
static void drop_no_hang(SchedOutcome *o)
{
    for (guint i = 0; i < o->diags->len; i++) {
        SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (strcmp(d->kind, "no_hang") == 0) {
            sched_diag_free(g_ptr_array_steal_index(o->diags, i));
            break;
        }
    }
}

/* No hang shown, something missing: `inconclusive` replaces `no_hang`. */
static void inconclusive_diag(SchedOutcome *o, GString *why, GPtrArray *collect)
{
    drop_no_hang(o);
    GString *msg = g_string_new("inconclusive: the evidence neither shows a hang nor rules one "
                                "out; missing:");
    g_string_append(msg, why->str);
    g_string_append(msg, "\n  collect next time:");
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "collect");
    json_builder_begin_array(b);
    for (guint i = 0; i < collect->len; i++) {
        g_string_append_printf(msg, "\n  - %s", (const char *)g_ptr_array_index(collect, i));
        json_builder_add_string_value(b, g_ptr_array_index(collect, i));
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    add_diag(o, "inconclusive", SCHED_SEV_WARNING, -1, -1, 0, g_string_free(msg, FALSE),
             json_text(b));
}

/* Watchdog verdicts the record could not place (no group, or the rank blocked elsewhere): one
 * `hang` error quoting them, so that the run is a hang even without a placed call. */
static void unplaced_timeouts(const ImportSet *s, SchedOutcome *o)
{
    GString *lines = g_string_new(NULL);
    uint32_t n = 0;
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        if (f->kind != IMPORT_FINDING_TIMEOUT)
            continue;
        if (n++ < 6) {
            g_autofree char *q = quote(f);
            g_string_append_printf(lines, "\n  %s", q);
        }
    }
    if (!n) {
        g_string_free(lines, TRUE);
        return;
    }
    char *msg = g_strdup_printf("hang: %u watchdog line%s say a collective timed out, but the "
                                "lines do not place %s in a call the record holds%s",
                                n, n > 1 ? "s" : "", n > 1 ? "them" : "it", lines->str);
    g_string_free(lines, TRUE);
    add_diag(o, "hang", SCHED_SEV_ERROR, -1, -1, 0, msg, NULL);
}

/* ---- completed calls that disagree (a record without a hang) ---- */

/* What the members of one completed instance brought. */
typedef struct {
    const ImportEntry *first;
    int32_t first_rank;
    uint32_t members;
    bool disagree;
    GArray *ranks; /* int32_t: the members that recorded it */
} Done;

static void done_free(gpointer p)
{
    Done *d = p;
    g_array_unref(d->ranks);
    g_free(d);
}

static bool same_call(const ImportEntry *a, const ImportEntry *b)
{
    if (sched_op_is_p2p(a->kind) && sched_op_is_p2p(b->kind))
        return a->count == b->count && a->dtype == b->dtype;
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
           a->root == b->root;
}

/* The range of sequence numbers each rank recorded on each group, completed or not: one pass
 * over every entry, keyed by rank << 32 | group, so each look-up is a hash probe (a scan of the
 * rank's record per completed call was quadratic in a long record). */
typedef struct {
    uint64_t lo, hi;
} SeqRange;

static GHashTable *seq_ranges(const ImportSet *s)
{
    GHashTable *t = g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, g_free);
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint i = 0; ir->present && i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            gint64 key = (gint64)(((guint64)r << 32) | e->group);
            SeqRange *x = g_hash_table_lookup(t, &key);
            if (!x) {
                x = g_new(SeqRange, 1);
                *x = (SeqRange){e->seq, e->seq};
                g_hash_table_insert(t, g_memdup2(&key, sizeof key), x);
            }
            x->lo = MIN(x->lo, e->seq);
            x->hi = MAX(x->hi, e->seq);
        }
    }
    return t;
}

static bool seq_range(GHashTable *ranges, int32_t r, uint32_t g, uint64_t *lo, uint64_t *hi)
{
    gint64 key = (gint64)(((guint64)(uint32_t)r << 32) | g);
    const SeqRange *x = g_hash_table_lookup(ranges, &key);
    if (x) {
        *lo = x->lo;
        *hi = x->hi;
    }
    return x != NULL;
}

static gint cmp_i32(gconstpointer a, gconstpointer b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The detail of a completed instance's mismatch, in the shape sched_diagnose_mismatch writes
 * (group, seq, policy "recorded", signatures with their ranks, majority, culprits): the
 * signature with strictly the most ranks is the majority, the others its culprits; a tie
 * names none. */
static char *done_detail(const ImportSet *s, uint32_t g, uint64_t seq)
{
    const ImportGroup *grp = g_ptr_array_index(s->groups, g);
    g_autoptr(GPtrArray) sig = g_ptr_array_new();                          /* ImportEntry* */
    g_autoptr(GPtrArray) who = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint i = 0; ir->present && i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            if (e->group != g || e->seq != seq || e->state != IMPORT_STATE_COMPLETED)
                continue;
            guint k = 0;
            while (k < sig->len && !same_call(g_ptr_array_index(sig, k), e))
                k++;
            if (k == sig->len) {
                g_ptr_array_add(sig, (gpointer)e);
                g_ptr_array_add(who, g_array_new(FALSE, FALSE, sizeof(int32_t)));
            }
            int32_t rr = (int32_t)r;
            g_array_append_val((GArray *)g_ptr_array_index(who, k), rr);
        }
    }
    int major = -1;
    guint best = 0;
    bool tie = false;
    for (guint k = 0; k < who->len; k++) {
        guint n = ((GArray *)g_ptr_array_index(who, k))->len;
        tie = n == best ? true : (n > best ? false : tie);
        if (n > best) {
            best = n;
            major = (int)k;
        }
    }
    if (tie)
        major = -1;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "group");
    json_builder_add_string_value(b, grp->name);
    json_builder_set_member_name(b, "seq");
    json_builder_add_int_value(b, (gint64)seq);
    json_builder_set_member_name(b, "policy");
    json_builder_add_string_value(b, "recorded");
    json_builder_set_member_name(b, "signatures");
    json_builder_begin_array(b);
    for (guint k = 0; k < sig->len; k++) {
        const ImportEntry *e = g_ptr_array_index(sig, k);
        GArray *rs = g_ptr_array_index(who, k);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "kind");
        json_builder_add_string_value(b, sched_op_kind_name(e->kind));
        json_builder_set_member_name(b, "count");
        json_builder_add_int_value(b, (gint64)e->count);
        json_builder_set_member_name(b, "dtype");
        json_builder_add_string_value(b, sched_dtype_name(e->dtype));
        json_builder_set_member_name(b, "root");
        json_builder_add_null_value(b);
        json_builder_set_member_name(b, "op");
        json_builder_add_string_value(b, e->name ? e->name : "?");
        json_builder_set_member_name(b, "layer");
        json_builder_add_null_value(b);
        json_builder_set_member_name(b, "ranks");
        json_builder_begin_array(b);
        for (guint i = 0; i < rs->len; i++)
            json_builder_add_int_value(b, g_array_index(rs, int32_t, i));
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "majority");
    if (major >= 0)
        json_builder_add_int_value(b, major);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "culprits");
    json_builder_begin_array(b);
    for (guint k = 0; major >= 0 && k < who->len; k++) {
        GArray *rs = g_ptr_array_index(who, k);
        for (guint i = 0; (int)k != major && i < rs->len; i++)
            json_builder_add_int_value(b, g_array_index(rs, int32_t, i));
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    return json_text(b);
}

/* One finding for a completed instance: members that disagree (`mismatch`: NCCL does not
 * compare counts, so the call completed with wrong data), or a member whose record spans the
 * group's calls before it but stops short of it (`unmatched`: a record that cannot be whole —
 * a collective completes only when every member makes it). */
static void done_finding(const ImportSet *s, SchedOutcome *o, uint32_t g, uint64_t seq,
                         const Done *d, GHashTable *ranges, uint32_t *shown)
{
    const ImportGroup *grp = g_ptr_array_index(s->groups, g);
    if (d->disagree && (*shown)++ < 8) {
        GString *sig = g_string_new(NULL);
        for (guint r = 0; r < s->ranks->len; r++) {
            const ImportRank *ir = g_ptr_array_index(s->ranks, r);
            for (guint i = 0; ir->present && i < ir->entries->len; i++) {
                const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
                if (e->group == g && e->seq == seq && e->state == IMPORT_STATE_COMPLETED)
                    g_string_append_printf(sig, "%s rank %u: %s %" G_GUINT64_FORMAT " %s",
                                           sig->len ? ";" : "", r, e->name ? e->name : "?",
                                           e->count, e->dtype_name ? e->dtype_name : "");
            }
        }
        char *msg = g_strdup_printf(
            "mismatch in group %s seq %" G_GUINT64_FORMAT " (completed): the members' calls "
            "disagree —%s. NCCL does not compare counts across ranks: the call completed with "
            "wrong or partial data (undefined behaviour), and a later call may hang on it",
            grp->name, seq, sig->str);
        g_string_free(sig, TRUE);
        add_diag(o, "mismatch", SCHED_SEV_ERROR, d->first_rank, (int32_t)g, seq, msg,
                 done_detail(s, g, seq));
    }
    for (guint j = 0; j < grp->ranks->len; j++) {
        int32_t m = g_array_index(grp->ranks, int32_t, j);
        /* d->ranks is ascending (ranks are read in order): a binary search */
        bool has = d->ranks->len &&
                   bsearch(&m, d->ranks->data, d->ranks->len, sizeof(int32_t), cmp_i32);
        const ImportRank *ir = (guint)m < s->ranks->len ? g_ptr_array_index(s->ranks, m) : NULL;
        uint64_t lo = 0, hi = 0;
        if (has || !ir || !ir->present || !seq_range(ranges, m, g, &lo, &hi) || lo > seq ||
            hi >= seq || (*shown)++ >= 8)
            continue;
        char *msg = g_strdup_printf(
            "unmatched: call %" G_GUINT64_FORMAT " of group %s (%s) completed on rank %d, but "
            "rank %d's record of the group ends at call %" G_GUINT64_FORMAT ": a collective "
            "completes only when every member takes part, so rank %d is behind — it skipped "
            "the call or hangs in it — unless its record lost the entry",
            seq, grp->name, d->first->name ? d->first->name : "?", d->first_rank, m, hi, m);
        add_diag(o, "unmatched", SCHED_SEV_ERROR, m, (int32_t)g, seq, msg, NULL);
    }
}

/* Completed calls of a record without a hang, compared across members (only then: a hang's own
 * diagnosis comes first, and this costs one pass over every call). */
static void completed_checks(const ImportSet *s, SchedOutcome *o)
{
    g_autoptr(GHashTable) seen =
        g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, done_free);
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(gint64));
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint i = 0; ir->present && i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            if (e->state != IMPORT_STATE_COMPLETED || e->group >= (1u << 23))
                continue;
            gint64 key = (gint64)(((guint64)e->group << 40) ^ e->seq);
            Done *d = g_hash_table_lookup(seen, &key);
            if (!d) {
                d = g_new0(Done, 1);
                d->first = e;
                d->first_rank = (int32_t)r;
                d->ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
                g_hash_table_insert(seen, g_memdup2(&key, sizeof key), d);
                g_array_append_val(order, key);
            }
            d->disagree |= !same_call(d->first, e);
            d->members++;
            int32_t rr = (int32_t)r;
            g_array_append_val(d->ranks, rr);
        }
    }
    uint32_t shown = 0;
    g_autoptr(GHashTable) ranges = seq_ranges(s);
    for (guint k = 0; k < order->len; k++) {
        gint64 key = g_array_index(order, gint64, k);
        const Done *d = g_hash_table_lookup(seen, &key);
        done_finding(s, o, (uint32_t)((guint64)key >> 40), d->first->seq, d, ranges, &shown);
    }
}

/* ---- counts apart (PG status or NCCL RAS counts without calls) ---- */

/* A group whose members' status counts differ, with no call to place them: the ranks below the
 * others are behind — the usual signature of a hang (postmortem.md (f): one rank one collective
 * ahead or behind). Counts are the last completed call when any member's status gives one,
 * else the calls launched (RAS's collective counts). One `behind` error per group (8 at most). */
typedef struct {
    int32_t rank;
    const ImportPgStatus *ps;
} StatusRef;

/* Every rank's status lines by group (rank order within each): one pass, so that the groups
 * below cost what their own lines cost. */
static void array_unref0(gpointer a)
{
    if (a)
        g_array_unref(a);
}

static GPtrArray *status_by_group(const ImportSet *s)
{
    GPtrArray *by = g_ptr_array_new_with_free_func(array_unref0);
    g_ptr_array_set_size(by, (gint)s->groups->len);
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        for (guint k = 0; ir->present && ir->pg_status && k < ir->pg_status->len; k++) {
            const ImportPgStatus *ps = &g_array_index(ir->pg_status, ImportPgStatus, k);
            if (ps->group >= s->groups->len)
                continue;
            GArray *a = g_ptr_array_index(by, ps->group);
            if (!a)
                a = by->pdata[ps->group] = g_array_new(FALSE, FALSE, sizeof(StatusRef));
            StatusRef ref = {(int32_t)r, ps};
            g_array_append_val(a, ref);
        }
    }
    return by;
}

static void status_apart(const ImportSet *s, SchedOutcome *o)
{
    uint32_t shown = 0;
    g_autoptr(GPtrArray) by = status_by_group(s);
    for (guint g = 0; g < s->groups->len && shown < 8; g++) {
        const GArray *refs = g_ptr_array_index(by, g);
        if (!refs)
            continue;
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_autoptr(GArray) vals = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        bool completed = false;
        for (guint i = 0; i < refs->len; i++)
            completed |= g_array_index(refs, StatusRef, i).ps->last_completed > 0;
        for (guint i = 0; i < refs->len; i++) {
            const StatusRef *ref = &g_array_index(refs, StatusRef, i);
            uint64_t v = completed ? ref->ps->last_completed : ref->ps->last_enqueued;
            g_array_append_val(ranks, ref->rank);
            g_array_append_val(vals, v);
        }
        uint64_t hi = 0, lo = UINT64_MAX;
        for (guint i = 0; i < vals->len; i++) {
            hi = MAX(hi, g_array_index(vals, uint64_t, i));
            lo = MIN(lo, g_array_index(vals, uint64_t, i));
        }
        if (vals->len < 2 || hi == lo)
            continue;
        g_autoptr(GArray) behind = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_autoptr(GArray) ahead = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (guint i = 0; i < vals->len; i++)
            g_array_append_val(g_array_index(vals, uint64_t, i) < hi ? behind : ahead,
                               g_array_index(ranks, int32_t, i));
        const ImportGroup *grp = g_ptr_array_index(s->groups, g);
        g_autofree char *bs = sched_format_ranks((const int32_t *)(void *)behind->data,
                                                 behind->len);
        g_autofree char *as = sched_format_ranks((const int32_t *)(void *)ahead->data,
                                                 ahead->len);
        char *msg = g_strdup_printf(
            "behind: in group %s, rank%s %s %s %" G_GUINT64_FORMAT " call%s, rank%s %s fewer "
            "(down to %" G_GUINT64_FORMAT "): rank%s %s %s behind — %s never reached (or never "
            "finished) call %" G_GUINT64_FORMAT " that the others did",
            grp->name, ahead->len > 1 ? "s" : "", as, completed ? "completed" : "launched", hi,
            hi == 1 ? "" : "s", behind->len > 1 ? "s" : "", bs, lo, behind->len > 1 ? "s" : "",
            bs, behind->len > 1 ? "are" : "is", behind->len > 1 ? "they" : "it", lo + 1);
        shown++;
        add_diag(o, "behind", SCHED_SEV_ERROR, g_array_index(behind, int32_t, 0), (int32_t)g,
                 lo + 1, msg, NULL);
    }
}

void import_verdict_apply(ImportRun *run, const ImportSet *s)
{
    SchedOutcome *o = run->outcome;
    g_autoptr(GArray) cands = g_array_new(FALSE, FALSE, sizeof(Candidate));
    g_array_set_clear_func(cands, candidate_clear);
    uint32_t timeouts = 0;
    for (guint i = 0; i < s->findings->len; i++)
        timeouts += g_array_index(s->findings, ImportFinding, i).kind == IMPORT_FINDING_TIMEOUT;
    warn_diags(s, o, cands);
    wait_diag(s, o, cands);
    uint32_t symptoms = symptom_diags(s, o);
    if (timeouts && !o->failed)
        unplaced_timeouts(s, o);
    if (!o->failed)
        completed_checks(s, o);
    if (!o->failed)
        status_apart(s, o);
    if (o->failed) {
        drop_no_hang(o);
        for (guint i = 0; i < o->diags->len; i++) {
            const SchedDiag *d = g_ptr_array_index(o->diags, i);
            if ((strcmp(d->kind, "behind") == 0 || strcmp(d->kind, "unmatched") == 0) &&
                d->rank >= 0)
                add_candidate(cands, d->rank,
                              g_strdup_printf("behind its peers in group %s: it never reached "
                                              "(or never finished) call %" G_GUINT64_FORMAT,
                                              d->group >= 0 && (guint)d->group < o->groups->len
                                                  ? (const char *)g_ptr_array_index(o->groups,
                                                                                    d->group)
                                                  : "?",
                                              d->seq));
        }
        for (guint i = 0; i < s->findings->len; i++) {
            const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
            if (f->kind == IMPORT_FINDING_SYMPTOM && f->rank >= 0)
                add_candidate(cands, f->rank, g_strdup_printf("%s (%s)", f->text ? f->text : "",
                                                              f->source ? f->source : ""));
        }
        g_autoptr(GString) search = g_string_new(NULL);
        mismatch_candidates(o, cands);
        deadlock_candidates(s, find_diag(o, "deadlock"), cands, search);
        if (!determined(o) || cands->len)
            candidates_diag(s, o, cands, search);
        run->verdict = IMPORT_VERDICT_HANG;
        return;
    }
    g_autoptr(GString) why = g_string_new(NULL);
    g_autoptr(GPtrArray) collect = g_ptr_array_new_with_free_func(g_free);
    if (gaps(s, o, symptoms, why, collect)) {
        inconclusive_diag(o, why, collect);
        run->verdict = IMPORT_VERDICT_INCONCLUSIVE;
    } else {
        run->verdict = IMPORT_VERDICT_HEALTHY;
    }
}
