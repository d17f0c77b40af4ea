/* src/input/vllm-version.c — the embedded vLLM version table, read once, and the engine keys that
 * pick a vLLM from it. */
#include "vllm-version.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario-error.h"

typedef struct {
    int64_t pr; /* 0: a default flipped at a release, named by `id` */
    char *id;
    ModelVllmRelease release; /* the first release that has it */
    char *title;
    GPtrArray *changes; /* char*: behaviour ids */
} PrRow;

typedef struct {
    char *id;
    char *what;
} BehaviourRow;

typedef struct {
    GPtrArray *prs;        /* PrRow*, ascending */
    GPtrArray *behaviours; /* BehaviourRow* */
    char *known;           /* "40996, 48446, ..." */
    ModelVllmRelease first, newest; /* the release tags engine.vllm_version accepts */
} Table;

static gint cmp_pr(gconstpointer a, gconstpointer b)
{
    const PrRow *x = *(PrRow *const *)a, *y = *(PrRow *const *)b;
    return (x->pr > y->pr) - (x->pr < y->pr);
}

static ModelVllmRelease release_of(const YamlDocNode *n, const char *what)
{
    ModelVllmRelease r = 0;
    if (!n || !n->text || !model_vllm_release_parse(n->text, &r))
        g_error("vllm-versions.yaml: %s needs a release tag (\"0.19.0\")", what);
    return r;
}

/* The table is ranksim's own data: a malformed one is a build error, caught by the tests. */
static Table *load_table(void)
{
    Table *t = g_new0(Table, 1);
    t->prs = g_ptr_array_new();
    t->behaviours = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    g_autoptr(GBytes) bytes = g_resources_lookup_data("/org/ranksim/vllm/versions.yaml",
                                                      G_RESOURCE_LOOKUP_FLAGS_NONE, &err);
    if (!bytes)
        g_error("the built-in vLLM version table is missing: %s", err->message);
    gsize len = 0;
    const char *text = g_bytes_get_data(bytes, &len);
    YamlDoc doc = {"vllm-versions.yaml (built in)", "version table", NULL, &err};
    g_autoptr(YamlDocNode) root = yamldoc_parse(&doc, text, len);
    if (!root)
        g_error("%s", err->message);
    const YamlDocNode *prs = yamldoc_map_get(root, "prs");
    const YamlDocNode *bs = yamldoc_map_get(root, "behaviours");
    if (!prs || prs->type != YAMLDOC_SEQ || !bs || bs->type != YAMLDOC_SEQ)
        g_error("vllm-versions.yaml: prs and behaviours must be lists");
    const YamlDocNode *rels = yamldoc_map_get(root, "releases");
    if (!rels || rels->type != YAMLDOC_MAP)
        g_error("vllm-versions.yaml: releases must be a mapping of first and newest");
    t->first = release_of(yamldoc_map_get(rels, "first"), "releases.first");
    t->newest = release_of(yamldoc_map_get(rels, "newest"), "releases.newest");
    for (guint i = 0; i < bs->items->len; i++) {
        const YamlDocNode *b = g_ptr_array_index(bs->items, i);
        const YamlDocNode *id = yamldoc_map_get(b, "id"), *what = yamldoc_map_get(b, "what");
        if (!id || !id->text || !what || !what->text)
            g_error("vllm-versions.yaml:%u: a behaviour needs id and what", b->line);
        BehaviourRow *r = g_new0(BehaviourRow, 1);
        r->id = g_strdup(id->text);
        r->what = g_strdup(what->text);
        g_ptr_array_add(t->behaviours, r);
    }
    for (guint i = 0; i < prs->items->len; i++) {
        const YamlDocNode *p = g_ptr_array_index(prs->items, i);
        const YamlDocNode *n = yamldoc_map_get(p, "pr"), *title = yamldoc_map_get(p, "title");
        const YamlDocNode *ch = yamldoc_map_get(p, "changes");
        const YamlDocNode *id = yamldoc_map_get(p, "id");
        if ((!n || !n->text) == (!id || !id->text) || !title || !title->text || !ch ||
            ch->type != YAMLDOC_SEQ)
            g_error("vllm-versions.yaml:%u: a row needs pr (or id), title and changes", p->line);
        PrRow *r = g_new0(PrRow, 1);
        r->pr = n && n->text ? g_ascii_strtoll(n->text, NULL, 10) : 0;
        r->id = id && id->text ? g_strdup(id->text) : NULL;
        r->release = release_of(yamldoc_map_get(p, "release"), "every row");
        r->title = g_strdup(title->text);
        r->changes = g_ptr_array_new();
        for (guint k = 0; k < ch->items->len; k++) {
            const YamlDocNode *c = g_ptr_array_index(ch->items, k);
            bool found = false;
            for (guint j = 0; j < t->behaviours->len && c->text; j++)
                found |=
                    strcmp(((BehaviourRow *)g_ptr_array_index(t->behaviours, j))->id, c->text) == 0;
            if (!found)
                g_error("vllm-versions.yaml:%u: PR %" G_GINT64_FORMAT " changes '%s', which "
                        "the behaviours list does not describe",
                        c->line, r->pr, c->text ? c->text : "");
            g_ptr_array_add(r->changes, g_strdup(c->text));
        }
        g_ptr_array_add(t->prs, r);
    }
    g_ptr_array_sort(t->prs, cmp_pr);
    GString *known = g_string_new(NULL);
    for (guint i = 0; i < t->prs->len; i++)
        if (((PrRow *)g_ptr_array_index(t->prs, i))->pr)
            g_string_append_printf(known, "%s%" G_GINT64_FORMAT, known->len ? ", " : "",
                                   ((PrRow *)g_ptr_array_index(t->prs, i))->pr);
    t->known = g_string_free(known, FALSE);
    return t;
}

static const Table *table(void)
{
    static gsize once = 0;
    static Table *t = NULL;
    if (g_once_init_enter(&once)) {
        t = load_table();
        g_once_init_leave(&once, 1);
    }
    return t;
}

const char *vllm_version_known_prs(void)
{
    return table()->known;
}

static const BehaviourRow *behaviour(const Table *t, const char *id)
{
    for (guint j = 0; j < t->behaviours->len; j++) {
        const BehaviourRow *b = g_ptr_array_index(t->behaviours, j);
        if (strcmp(b->id, id) == 0)
            return b;
    }
    return NULL;
}

/* The behaviours a release lacks: those of every row the table dates after it. */
static void release_absent(const Table *t, ModelVllmRelease rel, ModelVllmAbsent *absent)
{
    for (guint i = 0; i < t->prs->len; i++) {
        const PrRow *row = g_ptr_array_index(t->prs, i);
        if (row->release <= rel)
            continue;
        for (guint k = 0; k < row->changes->len; k++) {
            ModelVllmBehaviour b;
            if (model_vllm_behaviour_parse(g_ptr_array_index(row->changes, k), &b))
                *absent |= 1u << b;
        }
    }
}

bool vllm_version_release(const char *s, ModelVllmRelease *rel, ModelVllmAbsent *absent,
                          GError **error)
{
    const Table *t = table();
    *rel = 0;
    if (strcmp(s, "main") == 0)
        return true;
    char a[24], b[24];
    if (!model_vllm_release_parse(s, rel) || *rel < t->first ||
        (*rel & 0xffff0000u) > (t->newest & 0xffff0000u)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "'%s' is not a vLLM release ranksim's version table covers; valid: a "
                    "release tag from %s to %s.x (e.g. 0.19.0), or main",
                    s, model_vllm_release_format(t->first, a, sizeof a),
                    model_vllm_release_format(t->newest & 0xffff0000u, b, sizeof b));
        *rel = 0;
        return false;
    }
    release_absent(t, *rel, absent);
    return true;
}

bool vllm_version_apply(YamlDoc *d, const YamlDocNode *m, ModelVllmAbsent *absent,
                        ModelVllmRelease *release, GPtrArray *notes)
{
    const Table *t = table();
    const YamlDocNode *v = yamldoc_map_get(m, "vllm_version");
    *release = 0;
    if (v) {
        const char *s = NULL;
        if (!yamldoc_get_string(d, v, "vllm_version", "main or a release tag", &s))
            return false;
        g_autoptr(GError) e = NULL;
        if (!vllm_version_release(s, release, absent, &e))
            return yamldoc_fail(d, v, "vllm_version",
                                "%s (for vLLM before given PRs, engine.vllm_without: [PR, "
                                "...] with PRs %s)",
                                e->message, t->known);
    }
    const YamlDocNode *w = yamldoc_map_get(m, "vllm_without");
    if (!w)
        return true;
    g_autofree char *valid = g_strdup_printf("a list of vLLM PR numbers (known: %s)", t->known);
    /* A list, or one scalar "50791" / "50791,55879" / "[50791]" (what --set gives). */
    g_auto(GStrv) parts = NULL;
    guint n_items;
    if (w->type == YAMLDOC_SCALAR) {
        g_autofree char *body = g_strstrip(g_strdup(w->text));
        size_t bl = strlen(body);
        if (bl >= 2 && body[0] == '[' && body[bl - 1] == ']') {
            body[bl - 1] = '\0';
            memmove(body, body + 1, bl - 1);
        }
        parts = g_strsplit(body, ",", -1);
        n_items = g_strv_length(parts);
    } else if (!yamldoc_expect_seq(d, w, "vllm_without", valid)) {
        return false;
    } else {
        n_items = w->items->len;
    }
    for (guint i = 0; i < n_items; i++) {
        const YamlDocNode *n = parts ? w : g_ptr_array_index(w->items, i);
        const char *text = parts                       ? g_strstrip(parts[i])
                           : n->type == YAMLDOC_SCALAR ? n->text
                                                       : NULL;
        if (parts && !*text)
            continue;
        if (text && text[0] == '#')
            text++;
        char *end = NULL;
        int64_t pr = text ? g_ascii_strtoll(text, &end, 10) : -1;
        if (text && (end == text || *end) && behaviour(t, text)) {
            /* A behaviour id: one change of a PR without the rest (vLLM in between). */
            ModelVllmBehaviour b;
            if (model_vllm_behaviour_parse(text, &b))
                *absent |= 1u << b;
            else
                g_ptr_array_add(notes, g_strdup_printf("engine.vllm_without '%s' (%s) is not "
                                                       "modelled yet: simulated as in vLLM main",
                                                       text, behaviour(t, text)->what));
            continue;
        }
        if (!text || end == text || *end)
            return yamldoc_fail(d, n, "vllm_without",
                                "'%s' is neither a PR number nor a behaviour id; valid PRs: %s "
                                "(behaviour ids: doc/lifecycle.md)",
                                text ? text : "a list or mapping", t->known);
        const PrRow *row = NULL;
        for (guint k = 0; k < t->prs->len && !row; k++)
            if (((PrRow *)g_ptr_array_index(t->prs, k))->pr == pr)
                row = g_ptr_array_index(t->prs, k);
        if (!row)
            return yamldoc_fail(d, n, "vllm_without",
                                "PR %" G_GINT64_FORMAT " is not in ranksim's vLLM version table; "
                                "known: %s",
                                pr, t->known);
        if (!row->changes->len)
            g_ptr_array_add(notes, g_strdup_printf("engine.vllm_without %" G_GINT64_FORMAT
                                                   " (%s): it changes no runtime behaviour",
                                                   pr, row->title));
        for (guint k = 0; k < row->changes->len; k++) {
            const char *id = g_ptr_array_index(row->changes, k);
            ModelVllmBehaviour b;
            if (model_vllm_behaviour_parse(id, &b)) {
                *absent |= 1u << b;
            } else {
                const BehaviourRow *br = behaviour(t, id);
                g_ptr_array_add(notes,
                                g_strdup_printf("engine.vllm_without %" G_GINT64_FORMAT ": '%s' "
                                                "(%s) is not modelled yet: simulated as in vLLM "
                                                "main",
                                                pr, id, br ? br->what : "?"));
            }
        }
    }
    return true;
}
