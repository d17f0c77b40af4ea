/* src/run/sweep.c — the variants of `ranksim sweep` (sweep.h): the axes from --vary / --zip,
 * their cross product, labels, and each variant loaded through the scenario loader with its
 * overrides and workload extras. Prints nothing.
 */
#include "sweep.h"

#include <string.h>

G_DEFINE_QUARK(ranksim-sweep-error-quark, sweep_error)

static void vary_free(gpointer p)
{
    SweepVary *v = p;
    g_free(v->key);
    if (v->values) /* NULL when parsing stopped before the values */
        g_ptr_array_unref(v->values);
    g_free(v);
}

/* ---- the axes ---- */

/* The first --zip key stands for the zip axis; the other --zip keys follow it. */
static bool axis_head(const GPtrArray *varies, guint k)
{
    const SweepVary *vy = g_ptr_array_index(varies, k);
    if (!vy->zip)
        return true;
    for (guint j = 0; j < k; j++)
        if (((const SweepVary *)g_ptr_array_index(varies, j))->zip)
            return false;
    return true;
}

guint64 sweep_variant_count(const GPtrArray *varies)
{
    guint64 n = 1;
    guint zip_len = 0;
    for (guint k = 0; k < varies->len; k++) {
        const SweepVary *vy = g_ptr_array_index(varies, k);
        if (vy->zip) {
            if (zip_len && zip_len != vy->values->len)
                return 0;
            zip_len = vy->values->len;
        }
        if (axis_head(varies, k))
            n *= vy->values->len;
    }
    return n;
}

void sweep_variant_choice(const GPtrArray *varies, guint i, guint *choice)
{
    guint nv = varies->len;
    guint rest = i, zip = 0;
    for (guint k = nv; k-- > 0;) {
        const SweepVary *vy = g_ptr_array_index(varies, k);
        if (!axis_head(varies, k))
            continue;
        choice[k] = rest % vy->values->len;
        rest /= vy->values->len;
        if (vy->zip)
            zip = choice[k];
    }
    for (guint k = 0; k < nv; k++)
        if (((const SweepVary *)g_ptr_array_index(varies, k))->zip)
            choice[k] = zip;
}

/* ---- arguments ---- */

static bool check_prefill(const char *s)
{
    return g_ascii_string_to_unsigned(s, 10, 1, 10000000, NULL, NULL);
}

static bool check_decode(const char *s)
{
    g_auto(GStrv) parts = g_strsplit(s, ":", 2);
    return g_strv_length(parts) == 2 &&
           g_ascii_string_to_unsigned(parts[0], 10, 1, 65536, NULL, NULL) &&
           g_ascii_string_to_unsigned(parts[1], 10, 1, 10000000, NULL, NULL);
}

/* The key of "KEY=V1,..." (`eq` at its '='), checked: dotted, printable, not varied before.
 * Returns NULL with a SWEEP_ERROR_ARGUMENT. */
static char *vary_key(const char *arg, const char *eq, const GPtrArray *seen, GError **error)
{
    g_autofree char *key = g_strstrip(g_strndup(arg, (gsize)(eq - arg)));
    bool plain = true; /* no space or control character */
    for (const char *c = key; *c; c++)
        plain = plain && (unsigned char)*c > ' ' && *c != 0x7f;
    if (!*key || !plain || g_str_has_prefix(key, ".") || g_str_has_suffix(key, ".") ||
        strstr(key, "..")) {
        g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                    "--vary '%s': '%s' is not a dotted scenario key (e.g. "
                    "engine.attention_backend)",
                    arg, key);
        return NULL;
    }
    for (guint i = 0; i < seen->len; i++)
        if (strcmp(((SweepVary *)g_ptr_array_index(seen, i))->key, key) == 0) {
            g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                        "--vary '%s': key '%s' is varied twice; give all its values in one "
                        "--vary",
                        arg, key);
            return NULL;
        }
    return g_steal_pointer(&key);
}

/* The values after '=' into v->values, each checked for the key's kind. */
static bool vary_values(const char *arg, const char *list, SweepVary *v, GError **error)
{
    v->values = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) vals = g_strsplit(list, ",", -1);
    for (char **p = vals; *p; p++) {
        char *val = g_strstrip(g_strdup(*p));
        bool ok = *val != '\0';
        if (ok && v->kind == SWEEP_VARY_PREFILL)
            ok = check_prefill(val);
        if (ok && v->kind == SWEEP_VARY_DECODE)
            ok = check_decode(val);
        if (!ok) {
            g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                        "--vary '%s': value %u '%s' is %s", arg, (guint)(p - vals) + 1, val,
                        !*val ? "empty; write KEY=V1,V2 without empty entries"
                        : v->kind == SWEEP_VARY_PREFILL
                            ? "not a prompt length in tokens, 1..10000000"
                            : "not BATCH:CONTEXT, e.g. 8:4096");
            g_free(val);
            return false;
        }
        g_ptr_array_add(v->values, val);
    }
    if (v->values->len == 0)
        return g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                           "--vary '%s': no values after '='; expected KEY=V1,V2,... (at least "
                           "one value)",
                           arg),
               false;
    return true;
}

/* Parses "KEY=V1,V2,..." (`zip`: of a --zip). Returns NULL with a SWEEP_ERROR_ARGUMENT. */
static SweepVary *vary_parse(const char *arg, const GPtrArray *seen, bool zip, GError **error)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                    "--vary '%s': expected KEY=V1,V2,... e.g. --vary "
                    "parallel.prefill_context_parallel_size=1,2,4",
                    arg);
        return NULL;
    }
    char *key = vary_key(arg, eq, seen, error);
    if (!key)
        return NULL;
    SweepVary *v = g_new0(SweepVary, 1);
    v->key = key;
    v->zip = zip;
    v->kind = strcmp(key, "workload.prefill") == 0  ? SWEEP_VARY_PREFILL
              : strcmp(key, "workload.decode") == 0 ? SWEEP_VARY_DECODE
                                                    : SWEEP_VARY_SET;
    if (v->kind == SWEEP_VARY_SET && g_str_has_prefix(key, "workload.")) {
        g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                    "--vary '%s': the workload can be varied only as workload.prefill=N,... (a "
                    "one-step prefill of N tokens) or workload.decode=B:CTX,... (a one-step "
                    "decode)",
                    arg);
        vary_free(v);
        return NULL;
    }
    if (!vary_values(arg, eq + 1, v, error)) {
        vary_free(v);
        return NULL;
    }
    return v;
}

/* After adding `v` (from `arg`) to `varies`: the variant count, or 0 with a SWEEP_ERROR when
 * the --zip lists differ in length or the sweep grew too big. */
static guint64 axes_count(const GPtrArray *varies, const char *arg, const SweepVary *v,
                          GError **error)
{
    guint64 n = sweep_variant_count(varies);
    if (n == 0) {
        const SweepVary *z0 = NULL;
        for (guint k = 0; k < varies->len && !z0; k++)
            if (((const SweepVary *)g_ptr_array_index(varies, k))->zip)
                z0 = g_ptr_array_index(varies, k);
        g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_ARGUMENT,
                    "--zip '%s': %u values, but --zip %s has %u; linked keys take one value "
                    "each per variant, so give them equally many",
                    arg, v->values->len, z0->key, z0->values->len);
        return 0;
    }
    if (n > SWEEP_MAX_VARIANTS) {
        g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_TOO_MANY,
                    "sweep: more than %d variants; split the sweep", SWEEP_MAX_VARIANTS);
        return 0;
    }
    return n;
}

GPtrArray *sweep_axes_parse(char **varies, char **zips, guint *n_variants, GError **error)
{
    g_autoptr(GPtrArray) axes = g_ptr_array_new_with_free_func(vary_free);
    guint64 n = 1;
    for (int z = 0; z < 2; z++)
        for (char **a = z ? zips : varies; a && *a; a++) {
            SweepVary *v = vary_parse(*a, axes, z == 1, error);
            if (!v)
                return NULL;
            g_ptr_array_add(axes, v);
            if (!(n = axes_count(axes, *a, v, error)))
                return NULL;
        }
    *n_variants = (guint)n;
    return g_steal_pointer(&axes);
}

/* ---- checking the keys ---- */

bool sweep_check_keys(const SweepInputs *in, GError **error)
{
    for (guint k = 0; k < in->varies->len; k++) {
        const SweepVary *vy = g_ptr_array_index(in->varies, k);
        if (vy->kind != SWEEP_VARY_SET)
            continue;
        g_autoptr(GPtrArray) ov = g_ptr_array_new_with_free_func(g_free);
        for (const char *const *s = in->sets; s && *s; s++)
            g_ptr_array_add(ov, g_strdup(*s));
        g_ptr_array_add(
            ov, g_strdup_printf("%s=%s", vy->key, (const char *)g_ptr_array_index(vy->values, 0)));
        g_ptr_array_add(ov, NULL);
        ScenarioExtras x = {
            .overrides = (const char *const *)ov->pdata,
            .hardware = in->hardware,
            .max_rank_ops = in->max_rank_ops,
            .prefill = in->flag_prefill,
            .decode = in->flag_decode,
        };
        g_autoptr(GError) verr = NULL;
        g_autoptr(Scenario) probe = runner_load_string(in->text, in->path, &x, &verr);
        if (!probe && scenario_error_is_unknown_key(verr))
            return g_set_error(error, SWEEP_ERROR, SWEEP_ERROR_UNKNOWN_KEY, "--vary %s: %s",
                               vy->key, verr->message),
                   false;
    }
    return true;
}

/* ---- one variant ---- */

char *sweep_variant_label(const SweepInputs *in, guint index)
{
    guint nv = in->varies->len;
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    sweep_variant_choice(in->varies, index, choice);
    GString *label = g_string_new(NULL);
    for (guint k = 0; k < nv; k++) {
        const SweepVary *vy = g_ptr_array_index(in->varies, k);
        g_string_append_printf(label, "%s%s=%s", k ? ", " : "", vy->key,
                               (const char *)g_ptr_array_index(vy->values, choice[k]));
    }
    return g_string_free(label, FALSE);
}

/* What a variant is loaded from (variant_make). */
typedef struct {
    char *label;
    GPtrArray *overrides; /* char*: --set ones, then one per SWEEP_VARY_SET key; NULL-ended */
    GArray *prefill;      /* extras (uint32), may be NULL */
    GArray *decode;
    bool workload;       /* a workload key is varied */
    bool merge_workload; /* ... alone: the batch goes into the file's steps */
    char *text;          /* the file's text and the comment naming the variant */
} VariantSpec;

static void variant_clear(VariantSpec *v)
{
    g_free(v->label);
    g_clear_pointer(&v->overrides, g_ptr_array_unref);
    g_clear_pointer(&v->prefill, g_array_unref);
    g_clear_pointer(&v->decode, g_array_unref);
    g_free(v->text);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(VariantSpec, variant_clear)

static void append_u32(const char *s, GArray **into)
{
    guint64 x = 0;
    g_ascii_string_to_unsigned(s, 10, 1, G_MAXUINT32, &x, NULL);
    uint32_t v = (uint32_t)x;
    if (!*into)
        *into = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_array_append_val(*into, v);
}

/* One varied value into the variant: an override, or half of the workload's batch. */
static void variant_take(VariantSpec *v, const SweepVary *vy, const char *val)
{
    if (vy->kind == SWEEP_VARY_SET) {
        g_ptr_array_add(v->overrides, g_strdup_printf("%s=%s", vy->key, val));
    } else if (vy->kind == SWEEP_VARY_PREFILL) {
        v->workload = true;
        append_u32(val, &v->prefill);
    } else {
        v->workload = true;
        g_auto(GStrv) parts = g_strsplit(val, ":", 2);
        guint64 b = 0;
        g_ascii_string_to_unsigned(parts[0], 10, 1, 65536, &b, NULL);
        for (guint64 i = 0; i < b; i++)
            append_u32(parts[1], &v->decode);
    }
}

/* " --prefill N ... --decode B:CTX ...": the batch as the flags that make it (a decode flag
 * per run of equal contexts). */
static void append_batch_flags(GString *s, const GArray *prefill, const GArray *decode)
{
    for (guint i = 0; prefill && i < prefill->len; i++)
        g_string_append_printf(s, " --prefill %u", g_array_index(prefill, uint32_t, i));
    for (guint i = 0; decode && i < decode->len;) {
        uint32_t ctx = g_array_index(decode, uint32_t, i);
        guint j = i;
        while (j < decode->len && g_array_index(decode, uint32_t, j) == ctx)
            j++;
        g_string_append_printf(s, " --decode %u:%u", j - i, ctx);
        i = j;
    }
}

/* The stored text: the file's, then "# ranksim sweep variant: LABEL" and how it was applied. */
static char *variant_text(const SweepInputs *in, const VariantSpec *v)
{
    GString *text = g_string_new(in->text);
    if (text->len && text->str[text->len - 1] != '\n')
        g_string_append_c(text, '\n');
    g_string_append_printf(text, "# ranksim sweep variant: %s\n", v->label);
    guint n_ov = v->overrides->len - 1; /* without the NULL */
    if (n_ov || v->workload) {
        g_string_append(text, "# applied as:");
        for (guint i = 0; i < n_ov; i++)
            g_string_append_printf(text, " --set %s",
                                   (const char *)g_ptr_array_index(v->overrides, i));
        if (v->workload)
            append_batch_flags(text, v->prefill, v->decode);
        if (v->merge_workload)
            g_string_append(text, " (into the workload's steps)");
        g_string_append_c(text, '\n');
    }
    return g_string_free(text, FALSE);
}

/* VariantSpec `index` from the sweep's inputs: its label, overrides, workload and text. */
static void variant_make(const SweepInputs *in, guint index, VariantSpec *v)
{
    guint nv = in->varies->len;
    g_autofree guint *choice = g_new0(guint, MAX(nv, 1));
    sweep_variant_choice(in->varies, index, choice);
    v->label = sweep_variant_label(in, index);
    v->overrides = g_ptr_array_new_with_free_func(g_free);
    for (const char *const *s = in->sets; s && *s; s++)
        g_ptr_array_add(v->overrides, g_strdup(*s));
    for (guint k = 0; k < nv; k++) {
        const SweepVary *vy = g_ptr_array_index(in->varies, k);
        variant_take(v, vy, g_ptr_array_index(vy->values, choice[k]));
    }
    g_ptr_array_add(v->overrides, NULL);
    /* The flags' batch, or with a varied workload its other half: a varied prefill with
     * --decode makes a mixed step, and the reverse. */
    const GArray *fp = in->flag_prefill, *fd = in->flag_decode;
    bool flags = (fp && fp->len) || (fd && fd->len);
    if (!v->prefill && fp && fp->len)
        v->prefill = g_array_copy(in->flag_prefill);
    if (!v->decode && fd && fd->len)
        v->decode = g_array_copy(in->flag_decode);
    /* Varied alone, the field goes into the file's steps and the rest of its workload stays;
     * with --prefill/--decode the variant's batch is one step that replaces the file's
     * workload (the loader notes that it did, as for `run --prefill`). */
    v->merge_workload = v->workload && !flags;
    v->text = variant_text(in, v);
}

Scenario *sweep_variant_load(const SweepInputs *in, guint index, GError **error)
{
    g_auto(VariantSpec) v = {0};
    variant_make(in, index, &v);
    ScenarioExtras x = {
        .overrides = (const char *const *)v.overrides->pdata,
        .hardware = in->hardware,
        .perf_db = in->perf_db,
        .max_rank_ops = in->max_rank_ops,
        .prefill = v.prefill,
        .decode = v.decode,
        .merge_workload = v.merge_workload,
    };
    g_autoptr(Scenario) sc = runner_load_string(v.text, in->path, &x, error);
    if (sc && !runner_check_work(sc, in->max_rank_ops, error))
        return NULL; /* too big: an invalid variant */
    return g_steal_pointer(&sc);
}

RunnerResult *sweep_variant_simulate(const Scenario *sc, SchedTimeline timeline, bool memory_detail,
                                     GArray *records)
{
    RunnerResult *res = runner_simulate(sc, timeline, runner_collect_record, records, NULL, NULL);
    ModelMemPlan *m = res->memory;
    for (uint32_t r = 0; m && !memory_detail && r < m->world; r++)
        g_clear_pointer(&m->ranks[r].items, g_ptr_array_unref);
    return res;
}
