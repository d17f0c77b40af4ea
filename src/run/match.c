/* src/run/match.c — `ranksim match`'s use case: an imported run against a scenario's
 * simulation, paired group by group and judged; see match.h. The sides are built by
 * match-sides.c (match-private.h).
 */
#include "match-private.h"

#include <string.h>

#include "../input/scenario.h"
#include "runner.h"

G_DEFINE_QUARK(ranksim - match - error - quark, match_error)

static bool same_members(const Group *a, const Group *b)
{
    return a->ranks->len == b->ranks->len &&
           memcmp(a->ranks->data, b->ranks->data, a->ranks->len * sizeof(int32_t)) == 0;
}

/* Whether the dump's silence about (seq, rank) says nothing: the rank left no record, or its
 * ring buffer starts after seq in this group. */
static bool dump_silent(const Side *imp, const Group *ig, uint64_t seq, int32_t rank)
{
    if (imp->unknown && rank >= 0 && (uint32_t)rank < imp->n_ranks && imp->unknown[rank])
        return true;
    gpointer f = g_hash_table_lookup(ig->first, GINT_TO_POINTER(rank + 1));
    return !f || seq < (uint64_t)GPOINTER_TO_SIZE(f);
}

/* Agreeing minus disagreeing (rank, instance) pairs when simulated seq s stands for imported
 * s + off, over the calls both sides have. */
static int64_t score(const Group *imp, const Group *sim, uint64_t off)
{
    int64_t n = 0;
    for (guint k = 0; k < sim->seqs->len; k++) {
        uint64_t s = g_array_index(sim->seqs, uint64_t, k);
        for (guint i = 0; i < imp->ranks->len; i++) {
            int32_t r = g_array_index(imp->ranks, int32_t, i);
            const Call *a = match_group_call(imp, s + off, r), *b = match_group_call(sim, s, r);
            if (a && b)
                n += match_same_call(a, b) ? 1 : -1;
        }
    }
    return n;
}

typedef struct {
    int sim; /* paired simulated group, -1 */
    uint64_t off;
    int64_t score;
} Pair;

/* The offsets worth scoring: those that line up one agreeing call of the group's first member
 * (at most the first 16 simulated instances of it), plus the one that lines up the two hangs.
 * Bounded by 16 x the dump's calls of that member, whatever the seq numbers are. */
static GArray *candidate_offsets(const Side *imp, const Side *sim, const Group *ig, int gi,
                                 const Group *sg, int k)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    int32_t r0 = g_array_index(ig->ranks, int32_t, 0);
    for (guint j = 0; j < sg->seqs->len && j < 16; j++) {
        uint64_t s = g_array_index(sg->seqs, uint64_t, j);
        const Call *b = match_group_call(sg, s, r0);
        if (!b)
            continue;
        for (guint m = 0; m < ig->seqs->len; m++) {
            uint64_t si = g_array_index(ig->seqs, uint64_t, m);
            const Call *a = match_group_call(ig, si, r0);
            if (si >= s && a && match_same_call(a, b)) {
                uint64_t off = si - s;
                g_array_append_val(out, off);
            }
        }
    }
    if (imp->hang && sim->hang && imp->hang_group == gi && sim->hang_group == k &&
        imp->hang_seq >= sim->hang_seq) {
        uint64_t off = imp->hang_seq - sim->hang_seq;
        g_array_append_val(out, off);
    }
    g_array_sort(out, match_cmp_u64);
    return out;
}

/* The best pairing of imported group gi. Only a positive score pairs a group, except the
 * hang's group (`any`), which takes its best alignment anyway so that the first divergence can
 * be told. */
static Pair best_pair(const Side *imp, const Side *sim, guint gi, bool *used, bool any)
{
    const Group *ig = g_ptr_array_index(imp->groups, gi);
    Pair best = {-1, 0, 0};
    if (!ig->seqs->len || !ig->ranks->len)
        return best;
    for (guint k = 0; k < sim->groups->len; k++) {
        const Group *sg = g_ptr_array_index(sim->groups, k);
        if (used[k] || !same_members(ig, sg) || !sg->seqs->len)
            continue;
        g_autoptr(GArray) offs = candidate_offsets(imp, sim, ig, (int)gi, sg, (int)k);
        for (guint j = 0; j < offs->len; j++) {
            uint64_t off = g_array_index(offs, uint64_t, j);
            if (j && off == g_array_index(offs, uint64_t, j - 1))
                continue;
            int64_t sc = score(ig, sg, off);
            bool hang_aligned = imp->hang && sim->hang && imp->hang_group == (int)gi &&
                                sim->hang_group == (int)k && sim->hang_seq + off == imp->hang_seq;
            if ((sc > 0 || any) &&
                (best.sim < 0 || sc > best.score || (sc == best.score && hang_aligned)))
                best = (Pair){(int)k, off, sc};
        }
    }
    return best;
}

/* The first (seq, rank) of a paired group where the two sides differ: a different call, a call
 * on one side only, or completion on one side only. Walks the seqs either side has (never the
 * integer range between them) within the simulated span: before it the dump's start-up
 * collectives, after it steps the scenario does not model. The dump's silence where it says
 * nothing (dump_silent) is no difference. */
static bool first_divergence(const Side *imp, const Group *ig, const Group *sg, uint64_t off,
                             uint64_t *seq, int32_t *rank)
{
    guint a = 0, b = 0;
    while (a < ig->seqs->len || b < sg->seqs->len) {
        uint64_t sa = a < ig->seqs->len ? g_array_index(ig->seqs, uint64_t, a) : UINT64_MAX;
        uint64_t sb = b < sg->seqs->len ? g_array_index(sg->seqs, uint64_t, b) + off : UINT64_MAX;
        uint64_t s = MIN(sa, sb);
        if (sa == s)
            a++;
        if (sb == s)
            b++;
        if (s < g_array_index(sg->seqs, uint64_t, 0) + off ||
            s > g_array_index(sg->seqs, uint64_t, sg->seqs->len - 1) + off)
            continue;
        for (guint i = 0; i < ig->ranks->len; i++) {
            int32_t r = g_array_index(ig->ranks, int32_t, i);
            const Call *x = match_group_call(ig, s, r);
            const Call *y = s > off ? match_group_call(sg, s - off, r) : NULL;
            if (!x && (!y || dump_silent(imp, ig, s, r)))
                continue;
            if (!x || !y || !match_same_call(x, y) || x->done != y->done) {
                *seq = s;
                *rank = r;
                return true;
            }
        }
    }
    return false;
}

/* ---- the use case ---- */

static void match_pair_free(gpointer p)
{
    MatchPair *x = p;
    g_free(x->dump_group);
    g_free(x->sim_group);
    g_free(x);
}

struct MatchImport {
    Side side;
    int64_t id;
    char *name; /* the imported run's name, may be NULL */
};

void match_import_free(MatchImport *mi)
{
    if (!mi)
        return;
    match_side_clear(&mi->side);
    g_free(mi->name);
    g_free(mi);
}

MatchImport *match_import_load(Store *st, int64_t id, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(QueryRun) qr = query_run_load(st, id, &local);
    if (!qr) {
        g_set_error_literal(error, MATCH_ERROR,
                            g_error_matches(local, QUERY_ERROR, QUERY_ERROR_SQL)
                                ? MATCH_ERROR_FAILED
                                : MATCH_ERROR_INVALID,
                            local->message);
        return NULL;
    }
    if (g_strcmp0(qr->info.kind, "import") != 0) {
        g_set_error(error, MATCH_ERROR, MATCH_ERROR_INVALID,
                    "match: run %" G_GINT64_FORMAT " is a %s run, not an imported one (ranksim "
                    "import makes those)",
                    id, qr->info.kind ? qr->info.kind : "?");
        return NULL;
    }
    g_autoptr(MatchImport) mi = g_new0(MatchImport, 1);
    mi->id = id;
    mi->name = g_strdup(qr->info.name);
    if (!match_load_import(st, id, qr, &mi->side, &local)) {
        g_set_error_literal(error, MATCH_ERROR, MATCH_ERROR_FAILED, local->message);
        return NULL;
    }
    return g_steal_pointer(&mi);
}

/* Pairs each imported group with a simulated one: the hang's group first, then the others in
 * order. Returns imp->groups->len pairs (caller frees). */
static Pair *pair_groups(const Side *imp, const Side *sim)
{
    g_autofree bool *used = g_new0(bool, sim->groups->len + 1);
    Pair *pairs = g_new0(Pair, imp->groups->len + 1);
    for (guint i = 0; i < imp->groups->len; i++)
        pairs[i].sim = -1;
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
    if (imp->hang_group >= 0) {
        guint h = (guint)imp->hang_group;
        g_array_append_val(order, h);
    }
    for (guint i = 0; i < imp->groups->len; i++)
        if ((int)i != imp->hang_group)
            g_array_append_val(order, i);
    for (guint k = 0; k < order->len; k++) {
        guint gi = g_array_index(order, guint, k);
        pairs[gi] = best_pair(imp, sim, gi, used, (int)gi == imp->hang_group);
        if (pairs[gi].sim >= 0)
            used[pairs[gi].sim] = true;
    }
    return pairs;
}

/* A deadlock holds ranks in several instances, and which comes "first" depends on the hosts'
 * clocks: the same set of instances under the pairing is the same hang. */
static bool same_blocked_set(const Side *imp, const Side *sim, const Pair *pairs)
{
    if (strcmp(imp->hang_kind, "deadlock") != 0 || g_strcmp0(sim->hang_kind, "deadlock") != 0 ||
        !imp->blocked->len || imp->blocked->len != sim->blocked->len)
        return false;
    for (guint i = 0; i < sim->blocked->len; i++) {
        Inst x = g_array_index(sim->blocked, Inst, i);
        bool found = false;
        for (guint j = 0; !found && j < imp->groups->len; j++)
            if (pairs[j].sim == x.group)
                for (guint m = 0; !found && m < imp->blocked->len; m++) {
                    Inst y = g_array_index(imp->blocked, Inst, m);
                    found = y.group == (int)j && y.seq == x.seq + pairs[j].off;
                }
        if (!found)
            return false;
    }
    return true;
}

/* Both sides hang and the dump's hang group has a pairing `hp` with simulated group `sg`: the
 * four tests of the verdict, and the reason when one fails. */
static void judge_hangs(MatchVerdict *v, const Side *imp, const Side *sim, const Pair *pairs,
                        const Group *ig, const Group *sg, const Pair *hp, GString *why)
{
    v->same_group = sim->hang_group == hp->sim;
    v->same_instance = v->same_group && sim->hang_seq + hp->off == imp->hang_seq;
    if (!v->same_instance && same_blocked_set(imp, sim, pairs))
        v->same_group = v->same_instance = true;
    v->same_sizes = v->same_instance;
    for (guint i = 0; v->same_sizes && i < ig->ranks->len; i++) {
        int32_t r = g_array_index(ig->ranks, int32_t, i);
        const Call *a = match_group_call(ig, imp->hang_seq, r), *b = match_group_call(sg, sim->hang_seq, r);
        v->same_sizes = (!a && !b) || (a && b && match_same_call(a, b)) ||
                        (!a && dump_silent(imp, ig, imp->hang_seq, r));
    }
    v->same_culprits = imp->culprits->len == sim->culprits->len &&
                       (!imp->culprits->len || memcmp(imp->culprits->data, sim->culprits->data,
                                                      imp->culprits->len * sizeof(int32_t)) == 0);
    v->reproduced = v->same_group && v->same_instance && v->same_sizes && v->same_culprits;
    if (!v->same_group) {
        const Group *shg =
            sim->hang_group >= 0 ? g_ptr_array_index(sim->groups, (guint)sim->hang_group) : NULL;
        g_string_append_printf(why,
                               "the simulation hangs in group %s, the dump in %s (paired "
                               "with simulated %s)",
                               shg ? shg->name : "?", ig->name, sg->name);
    } else if (!v->same_instance) {
        g_string_append_printf(why,
                               "the simulation hangs at seq %" G_GUINT64_FORMAT
                               " (dump seq %" G_GUINT64_FORMAT " at offset %" G_GUINT64_FORMAT
                               "), the dump at seq %" G_GUINT64_FORMAT,
                               sim->hang_seq, sim->hang_seq + hp->off, hp->off, imp->hang_seq);
    } else if (!v->same_sizes) {
        g_string_append(why, "the same instance, but the per-rank sizes differ");
    } else if (!v->same_culprits) {
        g_string_append_printf(why,
                               "the same instance and sizes, but the culprits differ: "
                               "dump %s, simulation %s",
                               v->dump_culprits, v->sim_culprits);
    }
}

/* What each side's hang was, in words, and the pairs. */
static void describe_sides(MatchVerdict *v, const Side *imp, const Side *sim, const Pair *pairs,
                           const Group *ig)
{
    v->dump_hang = imp->hang;
    v->dump_hang_kind = g_strdup(imp->hang_kind);
    v->dump_hang_group = ig ? g_strdup(ig->name) : NULL;
    v->dump_hang_seq = imp->hang_seq;
    v->dump_culprits = match_fmt_ranks(imp->culprits);
    v->n_dump_culprits = imp->culprits->len;
    const Call *c = ig && imp->culprits->len
                        ? match_group_call(ig, imp->hang_seq, g_array_index(imp->culprits, int32_t, 0))
                        : NULL;
    v->culprit_call = c ? match_fmt_call(c) : NULL;
    v->sim_hang = sim->hang;
    v->sim_hang_kind = g_strdup(sim->hang_kind);
    v->sim_hang_group =
        sim->hang_group >= 0
            ? g_strdup(((Group *)g_ptr_array_index(sim->groups, (guint)sim->hang_group))->name)
            : NULL;
    v->sim_hang_seq = sim->hang_seq;
    v->sim_culprits = match_fmt_ranks(sim->culprits);
    v->pairs = g_ptr_array_new_with_free_func(match_pair_free);
    for (guint i = 0; i < imp->groups->len; i++) {
        const Group *g = g_ptr_array_index(imp->groups, i);
        if (!g->max_seq)
            continue;
        MatchPair *p = g_new0(MatchPair, 1);
        *p = (MatchPair){
            .dump_group = g_strdup(g->name),
            .sim_group = pairs[i].sim >= 0
                             ? g_strdup(((Group *)g_ptr_array_index(sim->groups,
                                                                    (guint)pairs[i].sim))
                                            ->name)
                             : NULL,
            .offset = pairs[i].off,
            .agreeing = pairs[i].score,
            .hang = (int)i == imp->hang_group,
        };
        g_ptr_array_add(v->pairs, p);
    }
}

/* The verdict of `imp` against `sim`. */
static MatchVerdict *judge(const Side *imp, const Side *sim)
{
    g_autofree Pair *pairs = pair_groups(imp, sim);
    MatchVerdict *v = g_new0(MatchVerdict, 1);
    const Group *ig =
        imp->hang_group >= 0 ? g_ptr_array_index(imp->groups, (guint)imp->hang_group) : NULL;
    const Pair *hp = imp->hang_group >= 0 ? &pairs[imp->hang_group] : NULL;
    const Group *sg = hp && hp->sim >= 0 ? g_ptr_array_index(sim->groups, (guint)hp->sim) : NULL;
    describe_sides(v, imp, sim, pairs, ig);
    GString *why = g_string_new(NULL);
    if (!imp->hang)
        g_string_append(why, "the imported run shows no hang to reproduce");
    else if (!ig)
        g_string_append_printf(why, "the dump's %s names no group", imp->hang_kind);
    else if (!sim->hang)
        g_string_append_printf(why,
                               "the simulation is healthy: it does not hang, while the dump "
                               "hangs in group %s seq %" G_GUINT64_FORMAT,
                               ig->name, imp->hang_seq);
    else if (!sg)
        g_string_append_printf(why,
                               "no simulated group has the members of the dump's group %s "
                               "with any agreeing call",
                               ig->name);
    else
        judge_hangs(v, imp, sim, pairs, ig, sg, hp, why);
    v->reason = g_string_free(why, FALSE);
    if (sg) {
        v->paired_group = g_strdup(sg->name);
        v->paired_offset = hp->off;
    }
    /* Where the paired hang group first diverges (also when reproduced: nothing, or before). */
    uint64_t dseq = 0;
    int32_t drank = -1;
    v->diverges = ig && sg && first_divergence(imp, ig, sg, hp->off, &dseq, &drank);
    if (v->diverges) {
        v->divergence_seq = dseq;
        v->divergence_rank = drank;
        v->divergence_dump = match_fmt_call(match_group_call(ig, dseq, drank));
        v->divergence_sim = match_fmt_call(dseq > hp->off ? match_group_call(sg, dseq - hp->off, drank) : NULL);
    }
    return v;
}

/* Stores the simulated run in `db_path`. Returns its id or -1 with `error`. */
static int64_t store_simulation(const char *db_path, const Scenario *sc, const RunnerResult *res,
                                GArray *recs, gint64 t0, GError **error)
{
    g_autoptr(Store) wst = store_open(db_path, error);
    if (!wst)
        return -1;
    return runner_store(wst, sc, "collectives", res, recs,
                        (double)(g_get_monotonic_time() - t0) / 1000.0, error);
}

MatchVerdict *match_simulate(const MatchImport *mi, const MatchRequest *req, GError **error)
{
    ScenarioExtras extras = {.overrides = req->sets,
                             .hardware = req->hardware,
                             .max_rank_ops = RUNNER_DEFAULT_MAX_RANK_OPS};
    g_autoptr(GError) local = NULL;
    g_autoptr(Scenario) sc = runner_load(req->scenario_path, &extras, &local);
    if (sc && !runner_check_work(sc, RUNNER_DEFAULT_MAX_RANK_OPS, &local))
        g_clear_pointer(&sc, scenario_free);
    if (!sc) {
        g_set_error_literal(error, MATCH_ERROR, MATCH_ERROR_INVALID, local->message);
        return NULL;
    }
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GArray) recs = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
    g_autoptr(RunnerResult) res =
        runner_simulate(sc, SCHED_TIMELINE_COLLECTIVES, runner_collect_record, recs, NULL, NULL);
    Side sim = {0};
    match_load_sim(sc->program, res->outcome, recs, &sim);
    int64_t sim_id = store_simulation(req->db_path, sc, res, recs, t0, &local);
    if (sim_id < 0) {
        g_set_error_literal(error, MATCH_ERROR, MATCH_ERROR_FAILED, local->message);
        match_side_clear(&sim);
        return NULL;
    }
    MatchVerdict *v = judge(&mi->side, &sim);
    match_side_clear(&sim);
    v->imported_run = mi->id;
    v->simulated_run = sim_id;
    v->imported_name = g_strdup(mi->name ? mi->name : "");
    v->scenario_name = g_strdup(sc->name);
    return v;
}

void match_verdict_free(MatchVerdict *v)
{
    if (!v)
        return;
    g_free(v->imported_name);
    g_free(v->scenario_name);
    g_free(v->reason);
    if (v->pairs)
        g_ptr_array_unref(v->pairs);
    g_free(v->dump_hang_kind);
    g_free(v->dump_hang_group);
    g_free(v->dump_culprits);
    g_free(v->culprit_call);
    g_free(v->sim_hang_kind);
    g_free(v->sim_hang_group);
    g_free(v->sim_culprits);
    g_free(v->paired_group);
    g_free(v->divergence_dump);
    g_free(v->divergence_sim);
    g_free(v);
}
