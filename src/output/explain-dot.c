/* src/output/explain-dot.c — the wait-for graph as Graphviz DOT (explain_dot in explain.h), folded:
 * ranks that look alike in the hang are one node with their ranks and count, so the 1,024-rank
 * crash draws a few boxes, not 16,143 edges.
 *
 * Nodes: per instance, the ranks left waiting in it, split by the signature they brought (when
 * the instance is a mismatch: the per-rank signatures of the mismatch diagnostic) and by
 * whether they are culprits; then the ranks waited for that wait for nothing themselves,
 * folded by what they were doing (finished / crashed / computing, the same text). Edges: one
 * per pair of nodes, labelled with the instance and the number of rank-to-rank waits it
 * stands for; red when it lies on a cycle. A mismatch whose members all arrived has no wait
 * edge; a dashed red edge joins its disagreeing signatures instead. */
#include "explain-private.h"
#include "explain.h"
#include "../util/textwrap.h"

#include <string.h>

/* `text` as a DOT string; what a terminal would obey (the text comes from input) is escaped
 * first (text_escape_append), so `--dot -` is safe to print. */
static void dot_quote(GString *g, const char *text)
{
    g_autoptr(GString) safe = g_string_new(NULL);
    text_escape_append(safe, text ? text : "", -1, true);
    g_string_append_c(g, '"');
    for (const char *p = safe->str; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(g, '\\');
        if (*p == '\n')
            g_string_append(g, "\\n");
        else
            g_string_append_c(g, *p);
    }
    g_string_append_c(g, '"');
}

/* One drawn node: ranks that share how they appear in the hang. */
typedef struct {
    char *key;    /* what makes them alike */
    char *detail; /* the label's second line */
    GArray *ranks;
    bool culprit, crashed, finished, computing;
    int inst; /* the instance they wait in, -1: waited for */
} Node;

static void node_free(gpointer p)
{
    Node *n = p;
    g_free(n->key);
    g_free(n->detail);
    g_array_unref(n->ranks);
    g_free(n);
}

static Node *node_for(GPtrArray *nodes, GHashTable *by_key, const char *key)
{
    Node *n = g_hash_table_lookup(by_key, key);
    if (!n) {
        n = g_new0(Node, 1);
        n->key = g_strdup(key);
        n->ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        n->inst = -1;
        g_ptr_array_add(nodes, n);
        g_hash_table_insert(by_key, n->key, n);
    }
    return n;
}

/* The signature each rank brought to the mismatch `d` (kind count dtype), NULL elsewhere: an
 * array of `n_ranks` with NULL holes, freed with signatures_free (not g_strfreev, which stops
 * at the first hole). */
static char **signatures(const SchedDiag *d, int32_t n_ranks)
{
    if (!d || strcmp(d->kind, "mismatch") != 0 || !d->detail || n_ranks <= 0)
        return NULL;
    g_autoptr(SchedDetail) det = sched_detail_parse(d->detail);
    if (!det || !det->signatures->len)
        return NULL;
    char **out = g_new0(char *, (gsize)n_ranks + 1);
    for (guint i = 0; i < det->signatures->len; i++) {
        const SchedDetailSig *sg = &g_array_index(det->signatures, SchedDetailSig, i);
        g_autofree char *text = g_strdup_printf("%s %" G_GINT64_FORMAT " %s",
                                                sg->kind ? sg->kind : "?", sg->count,
                                                sg->dtype ? sg->dtype : "?");
        for (guint k = 0; k < sg->ranks->len; k++) {
            int32_t r = g_array_index(sg->ranks, int32_t, k);
            if (r >= 0 && r < n_ranks && !out[r])
                out[r] = g_strdup(text);
        }
    }
    return out;
}

static void signatures_free(char **sig, int32_t n_ranks)
{
    for (int32_t r = 0; sig && r < n_ranks; r++)
        g_free(sig[r]);
    g_free(sig);
}

static void write_node(GString *g, const Node *n, guint id, const char *indent)
{
    g_autofree char *rs = explain_fmt_ranks(n->ranks);
    g_autofree char *count =
        n->ranks->len > 1 ? g_strdup_printf(" (%u)", n->ranks->len) : g_strdup("");
    g_autofree char *label =
        g_strdup_printf("%s %s%s%s\n%s", n->ranks->len == 1 ? "rank" : "ranks", rs, count,
                        n->culprit ? " — culprit" : "", n->detail ? n->detail : "");
    g_string_append_printf(g, "%sn%u [label=", indent, id);
    dot_quote(g, label);
    if (n->inst < 0) /* waited for: finished rounded, crashed octagon, computing dashed */
        g_string_append_printf(g, ", shape=%s, style=\"%s%s\"", n->crashed ? "octagon" : "box",
                               n->crashed    ? "solid"
                               : n->finished ? "rounded"
                                             : "dashed",
                               n->culprit ? ",filled" : "");
    else if (n->culprit)
        g_string_append(g, ", style=filled");
    if (n->culprit)
        g_string_append_printf(g, ", fillcolor=\"%s\", penwidth=2",
                               n->crashed ? "#ff6961" : "#ffb347");
    g_string_append(g, "];\n");
}

char *explain_dot(const char *title, const SchedOutcome *o)
{
    g_return_val_if_fail(o != NULL, NULL);
    g_autoptr(Story) s = explain_story_new(o);
    g_autofree int32_t *cyc = explain_cycle_of(s);
    g_autofree int32_t *waits = explain_waits_in(s);
    GString *g = g_string_new("digraph ");
    dot_quote(g, title);
    g_string_append(g, " {\n  // ranksim explain: an edge A -> B means the ranks of A wait for "
                       "the ranks of B (each needs every one of its targets); red edges lie on\n"
                       "  // a cycle; filled nodes are culprits; alike ranks are one node.\n"
                       "  rankdir=LR; labelloc=t; fontname=\"Helvetica\";\n"
                       "  node [shape=box, fontname=\"Helvetica\"];"
                       " edge [style=solid, fontname=\"Helvetica\", fontsize=10];\n");
    const SchedDiag *first = NULL;
    for (guint i = 0; i < o->diags->len && !first; i++) {
        const SchedDiag *d = g_ptr_array_index(o->diags, i);
        if (d->severity == SCHED_SEV_ERROR)
            first = d;
    }
    g_autofree char *headline = NULL;
    if (!o->failed) {
        headline = g_strdup_printf("%s: healthy, no rank waits", title);
    } else {
        g_autofree char *msg = first ? g_strdup(first->message) : g_strdup("failed");
        char *nl = strchr(msg, '\n');
        if (nl)
            *nl = '\0';
        headline = g_strdup_printf("%s: %s", title, msg);
    }
    g_string_append(g, "  label=");
    dot_quote(g, headline);
    g_string_append(g, ";\n");

    g_autoptr(GPtrArray) nodes = g_ptr_array_new_with_free_func(node_free);
    g_autoptr(GHashTable) by_key = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree int32_t *node_of = g_new(int32_t, s->n > 0 ? s->n : 1);
    for (int32_t r = 0; r < s->n; r++)
        node_of[r] = -1;
    char **sig = signatures(s->divergence, s->n);

    /* waiting ranks, by instance, signature and culprit */
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        for (guint i = 0; i < in->waiting->len; i++) {
            int32_t r = g_array_index(in->waiting, int32_t, i);
            if (r < 0 || r >= s->n || waits[r] != (int32_t)k || node_of[r] >= 0)
                continue;
            bool culprit = explain_culprit_of(s, r) != NULL;
            const char *sg = in->mismatched && sig ? sig[r] : NULL;
            g_autofree char *key = g_strdup_printf("w%u|%s|%d", k, sg ? sg : "", culprit);
            Node *n = node_for(nodes, by_key, key);
            n->inst = (int)k;
            n->culprit = culprit;
            if (!n->detail)
                n->detail = sg ? g_strdup_printf("brought %s", sg) : g_strdup("waiting");
            g_array_append_val(n->ranks, r);
            node_of[r] = (int32_t)nodes->len - 1;
        }
    }
    /* ranks waited for that wait for nothing: by what they were doing */
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        for (guint i = 0; i < in->missing->len; i++) {
            const Missing *m = &g_array_index(in->missing, Missing, i);
            if (m->rank < 0 || m->rank >= s->n || waits[m->rank] >= 0 || node_of[m->rank] >= 0)
                continue;
            bool culprit = explain_culprit_of(s, m->rank) != NULL;
            const char *doing = m->doing ? m->doing : m->state;
            g_autofree char *key = g_strdup_printf("m|%s|%s|%d", m->state ? m->state : "",
                                                   doing ? doing : "", culprit);
            Node *n = node_for(nodes, by_key, key);
            n->culprit = culprit;
            n->crashed = g_strcmp0(m->state, "crashed") == 0;
            n->finished = g_strcmp0(m->state, "finished") == 0;
            if (!n->detail)
                n->detail = g_strdup(doing ? doing : "?");
            g_array_append_val(n->ranks, m->rank);
            node_of[m->rank] = (int32_t)nodes->len - 1;
        }
    }
    /* culprits nothing lists (a crashed rank no collective names as missing) */
    for (guint i = 0; i < s->culprits->len; i++) {
        const Culprit *c = &g_array_index(s->culprits, Culprit, i);
        if (c->rank < 0 || c->rank >= s->n || node_of[c->rank] >= 0)
            continue;
        g_autofree char *key = g_strdup_printf("c|%s", c->reason ? c->reason : "");
        Node *n = node_for(nodes, by_key, key);
        n->culprit = true;
        n->crashed = g_strcmp0(c->reason, "crashed") == 0;
        if (!n->detail)
            n->detail = g_strdup(c->reason ? c->reason : "?");
        g_array_append_val(n->ranks, c->rank);
        node_of[c->rank] = (int32_t)nodes->len - 1;
    }

    /* one cluster per instance with its waiting nodes; the others outside */
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        bool any = false;
        for (guint i = 0; i < nodes->len && !any; i++)
            any = ((Node *)g_ptr_array_index(nodes, i))->inst == (int)k;
        if (!any)
            continue;
        g_autofree char *where = explain_fmt_where(in->op, in->group, in->seq, in->layer);
        g_autofree char *cl =
            g_strdup_printf("%s%s", where, in->mismatched ? " — signatures disagree" : "");
        g_string_append_printf(g, "  subgraph cluster_%u {\n    label=", k);
        dot_quote(g, cl);
        g_string_append_printf(g, ";%s\n", in->mismatched ? " color=red; fontcolor=red;" : "");
        for (guint i = 0; i < nodes->len; i++)
            if (((Node *)g_ptr_array_index(nodes, i))->inst == (int)k)
                write_node(g, g_ptr_array_index(nodes, i), i, "    ");
        g_string_append(g, "  }\n");
    }
    for (guint i = 0; i < nodes->len; i++)
        if (((Node *)g_ptr_array_index(nodes, i))->inst < 0)
            write_node(g, g_ptr_array_index(nodes, i), i, "  ");

    /* edges between nodes: how many rank-to-rank waits each stands for, red on a cycle */
    guint nn = nodes->len;
    g_autofree guint *count = g_new0(guint, (gsize)MAX(nn * nn, 1));
    g_autofree bool *red = g_new0(bool, (gsize)MAX(nn * nn, 1));
    g_autofree int *inst_of = g_new0(int, (gsize)MAX(nn * nn, 1));
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        for (guint i = 0; i < in->waiting->len; i++) {
            int32_t a = g_array_index(in->waiting, int32_t, i);
            if (a < 0 || a >= s->n || waits[a] != (int32_t)k || node_of[a] < 0)
                continue;
            for (guint j = 0; j < in->missing->len; j++) {
                int32_t b = g_array_index(in->missing, Missing, j).rank;
                if (b < 0 || b >= s->n || node_of[b] < 0)
                    continue;
                guint e = (guint)node_of[a] * nn + (guint)node_of[b];
                count[e]++;
                inst_of[e] = (int)k;
                red[e] = red[e] || (cyc[a] && cyc[a] == cyc[b]);
            }
        }
    }
    /* an instance nobody is missing from, not a mismatch: its members wait for the culprits
     * that arrived and died in it (a crash inside the collective) */
    for (guint k = 0; k < s->insts->len; k++) {
        const Inst *in = g_ptr_array_index(s->insts, k);
        if (in->missing->len || in->mismatched)
            continue;
        for (guint c = 0; c < in->arrived->len; c++) {
            int32_t b = g_array_index(in->arrived, int32_t, c);
            if (b < 0 || b >= s->n || waits[b] == (int32_t)k || node_of[b] < 0 ||
                !explain_culprit_of(s, b))
                continue;
            for (guint i = 0; i < in->waiting->len; i++) {
                int32_t a = g_array_index(in->waiting, int32_t, i);
                if (a < 0 || a >= s->n || waits[a] != (int32_t)k || node_of[a] < 0)
                    continue;
                guint e = (guint)node_of[a] * nn + (guint)node_of[b];
                count[e]++;
                inst_of[e] = (int)k;
            }
        }
    }
    for (guint e = 0; e < nn * nn; e++) {
        if (!count[e])
            continue;
        const Inst *in = g_ptr_array_index(s->insts, (guint)inst_of[e]);
        g_autofree char *n_waits =
            count[e] > 1 ? g_strdup_printf(" (%u waits)", count[e]) : g_strdup("");
        g_autofree char *label =
            g_strdup_printf("%s %s #%" G_GINT64_FORMAT "%s", in->op ? in->op : "?",
                            in->group ? in->group : "?", in->seq, n_waits);
        g_string_append_printf(g, "  n%u -> n%u [label=", e / nn, e % nn);
        dot_quote(g, label);
        g_string_append_printf(g, "%s];\n", red[e] ? ", color=red, penwidth=2" : "");
    }
    /* a mismatch every member reached: its signatures joined, minority to the others */
    for (guint i = 0; i < nn; i++) {
        const Node *a = g_ptr_array_index(nodes, i);
        if (a->inst < 0 || !a->culprit || !sig)
            continue;
        const Inst *in = g_ptr_array_index(s->insts, (guint)a->inst);
        if (!in->mismatched || in->missing->len)
            continue;
        for (guint j = 0; j < nn; j++) {
            const Node *b = g_ptr_array_index(nodes, j);
            if (j != i && b->inst == a->inst && !b->culprit)
                g_string_append_printf(g,
                                       "  n%u -> n%u [dir=none, style=dashed, color=red,"
                                       " label=\"sizes disagree\"];\n",
                                       i, j);
        }
    }
    signatures_free(sig, s->n);
    g_string_append(g, "}\n");
    return g_string_free(g, FALSE);
}
