/* src/cli/cmd-sweep.c — `ranksim sweep`: one scenario under the cross product of --vary lists, run
 * on a libuv thread pool and stored in the results database by a single writer.
 *
 * Threads: variants are loaded, lowered and simulated in uv_queue_work workers (pure
 * computation on a Scenario each worker owns; records go to a per-variant GArray). The
 * after-work callback runs on the loop thread, the only one that touches the Store: it commits
 * each run in its own transaction (runner_store / runner_store_invalid), so runs are never lost
 * or interleaved whatever the completion order. At most `jobs` variants are in flight; the
 * pool has `jobs` threads (UV_THREADPOOL_SIZE, set before the pool's first use).
 *
 * Ctrl-C (SIGINT through a uv_signal_t): nothing new is queued, the variants in flight finish
 * and are committed, the summary is printed, exit 130. A second Ctrl-C gets the default action
 * (the signal watcher is stopped after the first), which loses only uncommitted runs.
 *
 * `workload.prefill=N,...` and `workload.decode=B:CTX,...` are special keys: the variant's
 * workload becomes one step of that batch. When the file has a top-level `workload:` block its
 * lines are replaced in the variant's text (blank lines keep every other line number, so error
 * messages still point into the file); otherwise the batch goes through ScenarioExtras like
 * --prefill/--decode.
 *
 * Costs: memory is O(variants) for the summary plus, per variant in flight, its scenario and
 * its records (small with the default --timeline none).
 */
#include <gio/gio.h>
#include <signal.h>
#include <stdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli.h"
#include "cmd-common.h"
#include "../util/inputfile.h"
#include "../store/query.h"
#include "../output/report.h"
#include "../run/runner.h"
#include "../input/scenario.h"
#include "../store/store.h"

/* Upper bounds that turn mistakes into messages instead of hour-long sweeps. */
#define MAX_VARIANTS 1000000
#define MAX_JOBS 1024 /* libuv's own cap on UV_THREADPOOL_SIZE */
#define EXIT_INTERRUPTED 130

#include "../run/sweep.h"

static void vary_free(gpointer p)
{
    Vary *v = p;
    g_free(v->key);
    if (v->values) /* NULL when parsing stopped before the values */
        g_ptr_array_unref(v->values);
    g_free(v);
}

/* ---- the axes ---- */

/* The first --zip key stands for the zip axis; the other --zip keys follow it. */
static bool axis_head(const GPtrArray *varies, guint k)
{
    const Vary *vy = g_ptr_array_index(varies, k);
    if (!vy->zip)
        return true;
    for (guint j = 0; j < k; j++)
        if (((const Vary *)g_ptr_array_index(varies, j))->zip)
            return false;
    return true;
}

guint64 sweep_variant_count(const GPtrArray *varies)
{
    guint64 n = 1;
    guint zip_len = 0;
    for (guint k = 0; k < varies->len; k++) {
        const Vary *vy = g_ptr_array_index(varies, k);
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

void sweep_variant_choice(const Sweep *sw, guint i, guint *choice)
{
    guint nv = sw->varies->len;
    guint rest = i, zip = 0;
    for (guint k = nv; k-- > 0;) {
        const Vary *vy = g_ptr_array_index(sw->varies, k);
        if (!axis_head(sw->varies, k))
            continue;
        choice[k] = rest % vy->values->len;
        rest /= vy->values->len;
        if (vy->zip)
            zip = choice[k];
    }
    for (guint k = 0; k < nv; k++)
        if (((const Vary *)g_ptr_array_index(sw->varies, k))->zip)
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

/* Parses "KEY=V1,V2,..." (`zip`: of a --zip). Returns NULL after printing the error. */
static Vary *vary_parse(const char *arg, const GPtrArray *seen, bool zip)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        cli_error("--vary '%s': expected KEY=V1,V2,... e.g. --vary "
                  "parallel.prefill_context_parallel_size=1,2,4",
                  arg);
        return NULL;
    }
    g_autofree char *key = g_strstrip(g_strndup(arg, (gsize)(eq - arg)));
    bool plain = true; /* no space or control character */
    for (const char *c = key; *c; c++)
        plain = plain && (unsigned char)*c > ' ' && *c != 0x7f;
    if (!*key || !plain || g_str_has_prefix(key, ".") || g_str_has_suffix(key, ".") ||
        strstr(key, "..")) {
        cli_error("--vary '%s': '%s' is not a dotted scenario key (e.g. engine.attention_backend)",
                  arg, key);
        return NULL;
    }
    for (guint i = 0; i < seen->len; i++)
        if (strcmp(((Vary *)g_ptr_array_index(seen, i))->key, key) == 0) {
            cli_error("--vary '%s': key '%s' is varied twice; give all its values in one --vary",
                      arg, key);
            return NULL;
        }
    Vary *v = g_new0(Vary, 1);
    v->key = g_steal_pointer(&key);
    v->zip = zip;
    v->kind = strcmp(v->key, "workload.prefill") == 0  ? VARY_PREFILL
              : strcmp(v->key, "workload.decode") == 0 ? VARY_DECODE
                                                       : VARY_SET;
    if (v->kind == VARY_SET && g_str_has_prefix(v->key, "workload.")) {
        cli_error("--vary '%s': the workload can be varied only as workload.prefill=N,... (a "
                  "one-step prefill of N tokens) or workload.decode=B:CTX,... (a one-step "
                  "decode)",
                  arg);
        vary_free(v);
        return NULL;
    }
    v->values = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) vals = g_strsplit(eq + 1, ",", -1);
    for (char **p = vals; *p; p++) {
        char *val = g_strstrip(g_strdup(*p));
        bool ok = *val != '\0';
        if (ok && v->kind == VARY_PREFILL)
            ok = check_prefill(val);
        if (ok && v->kind == VARY_DECODE)
            ok = check_decode(val);
        if (!ok) {
            cli_error("--vary '%s': value %u '%s' is %s", arg, (guint)(p - vals) + 1, val,
                      !*val                     ? "empty; write KEY=V1,V2 without empty entries"
                      : v->kind == VARY_PREFILL ? "not a prompt length in tokens, 1..10000000"
                                                : "not BATCH:CONTEXT, e.g. 8:4096");
            g_free(val);
            vary_free(v);
            return NULL;
        }
        g_ptr_array_add(v->values, val);
    }
    if (v->values->len == 0) {
        cli_error("--vary '%s': no values after '='; expected KEY=V1,V2,... (at least one value)",
                  arg);
        vary_free(v);
        return NULL;
    }
    return v;
}

/* ---- the workload block of the scenario text ---- */

/* Finds the top-level `workload:` block: its first line and one past its last (0-based line
 * numbers into `lines`). Returns false when the file has none. */
static bool find_workload_block(char **lines, guint *first, guint *end)
{
    guint n = g_strv_length(lines);
    for (guint i = 0; i < n; i++) {
        const char *l = lines[i];
        if (!g_str_has_prefix(l, "workload"))
            continue;
        const char *p = l + strlen("workload");
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        guint j = i + 1;
        /* The block: indented lines, blank lines and comments up to the next top-level line
         * (a column-0 comment stays outside unless indented lines follow it). */
        guint last = i + 1;
        for (; j < n; j++) {
            const char *x = lines[j];
            if (x[0] == ' ' || x[0] == '\t') {
                const char *t = x;
                while (*t == ' ' || *t == '\t')
                    t++;
                if (*t && *t != '#')
                    last = j + 1;
                continue;
            }
            if (x[0] == '\0' || x[0] == '#' || x[0] == '\r')
                continue;
            break;
        }
        *first = i;
        *end = last;
        return true;
    }
    return false;
}

/* The batch of one step as YAML flow text: "{prefill: [512], decode: [633, 633]}". */
static char *step_yaml(const GArray *prefill, const GArray *decode)
{
    GString *s = g_string_new("{");
    const GArray *lists[2] = {prefill, decode};
    const char *names[2] = {"prefill", "decode"};
    for (int k = 0; k < 2; k++) {
        if (!lists[k] || !lists[k]->len)
            continue;
        g_string_append_printf(s, "%s%s: [", s->len > 1 ? ", " : "", names[k]);
        for (guint i = 0; i < lists[k]->len; i++)
            g_string_append_printf(s, "%s%u", i ? ", " : "", g_array_index(lists[k], uint32_t, i));
        g_string_append_c(s, ']');
    }
    g_string_append_c(s, '}');
    return g_string_free(s, FALSE);
}

/* `text` with its workload block replaced by one step (same line count), or NULL when the text
 * has no workload block. */
static char *replace_workload(const char *text, const GArray *prefill, const GArray *decode,
                              const char *label)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    guint first, end;
    if (!find_workload_block(lines, &first, &end))
        return NULL;
    g_autofree char *step = step_yaml(prefill, decode);
    GString *out = g_string_new(NULL);
    for (guint i = 0; lines[i]; i++) {
        if (i)
            g_string_append_c(out, '\n');
        if (i == first)
            g_string_append_printf(out, "workload: {steps: [%s]}  # ranksim sweep: %s", step,
                                   label);
        else if (i < first || i >= end)
            g_string_append(out, lines[i]);
    }
    return g_string_free(out, FALSE);
}

/* ---- variants ---- */

static void variant_clear_work(Variant *v)
{
    g_clear_pointer(&v->sc, scenario_free);
    g_clear_error(&v->error);
    g_clear_pointer(&v->res, runner_result_free);
    g_clear_pointer(&v->records, g_array_unref);
    g_clear_pointer(&v->text, g_free);
    g_clear_pointer(&v->prefill, g_array_unref);
    g_clear_pointer(&v->decode, g_array_unref);
    g_clear_pointer(&v->overrides, g_strfreev);
}

static void variant_clear(Variant *v)
{
    variant_clear_work(v);
    g_free(v->label);
    g_free(v->first_diag);
}

static void parse_u32(const char *s, GArray **into)
{
    guint64 x = 0;
    g_ascii_string_to_unsigned(s, 10, 1, G_MAXUINT32, &x, NULL);
    uint32_t v = (uint32_t)x;
    if (!*into)
        *into = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_array_append_val(*into, v);
}

/* Builds what the worker needs for variant `v` from the sweep's immutable inputs: its choice
 * of one value per --vary (the first --vary varies slowest), label, overrides, workload and
 * text (the file's, workload replaced when one is varied, plus a trailing comment naming the
 * variant so the stored scenario says which one it was). */
static void variant_build(const Sweep *sw, Variant *v)
{
    guint nv = sw->varies->len;
    g_autofree guint *choice = g_new0(guint, nv);
    sweep_variant_choice(sw, v->index, choice);
    GString *label = g_string_new(NULL);
    g_autoptr(GPtrArray) ov = g_ptr_array_new_with_free_func(g_free);
    for (char **s = sw->sets; s && *s; s++)
        g_ptr_array_add(ov, g_strdup(*s));
    bool workload = false;
    for (guint k = 0; k < nv; k++) {
        const Vary *vy = g_ptr_array_index(sw->varies, k);
        const char *val = g_ptr_array_index(vy->values, choice[k]);
        g_string_append_printf(label, "%s%s=%s", k ? ", " : "", vy->key, val);
        if (vy->kind == VARY_SET) {
            g_ptr_array_add(ov, g_strdup_printf("%s=%s", vy->key, val));
        } else if (vy->kind == VARY_PREFILL) {
            workload = true;
            parse_u32(val, &v->prefill);
        } else {
            workload = true;
            g_auto(GStrv) parts = g_strsplit(val, ":", 2);
            guint64 b = 0;
            g_ascii_string_to_unsigned(parts[0], 10, 1, 65536, &b, NULL);
            for (guint64 i = 0; i < b; i++)
                parse_u32(parts[1], &v->decode);
        }
    }
    v->label = g_string_free(label, FALSE);
    /* The flags' batch, or with a varied workload its other half: a varied prefill with
     * --decode makes a mixed step, and the reverse. */
    const GArray *fp = sw->flag_prefill, *fd = sw->flag_decode;
    bool flags = (fp && fp->len) || (fd && fd->len);
    if (!v->prefill && fp && fp->len)
        v->prefill = g_array_copy((GArray *)fp);
    if (!v->decode && fd && fd->len)
        v->decode = g_array_copy((GArray *)fd);
    /* Varied alone, the field goes into the file's steps and the rest of its workload stays;
     * with --prefill/--decode the variant's batch is one step that replaces them. */
    v->merge_workload = workload && !flags;
    g_autofree char *replaced =
        workload && flags ? replace_workload(sw->base_text, v->prefill, v->decode, v->label) : NULL;
    if (replaced) {
        /* The batch is in the text now; as extras it would only be noted as ignored. */
        g_clear_pointer(&v->prefill, g_array_unref);
        g_clear_pointer(&v->decode, g_array_unref);
    }
    const char *body = replaced ? replaced : sw->base_text;
    GString *text = g_string_new(body);
    if (text->len && text->str[text->len - 1] != '\n')
        g_string_append_c(text, '\n');
    g_string_append_printf(text, "# ranksim sweep variant: %s\n", v->label);
    if (ov->len || v->merge_workload) {
        g_string_append(text, "# applied as:");
        for (guint i = 0; i < ov->len; i++)
            g_string_append_printf(text, " --set %s", (const char *)g_ptr_array_index(ov, i));
        for (guint i = 0; v->merge_workload && v->prefill && i < v->prefill->len; i++)
            g_string_append_printf(text, " --prefill %u", g_array_index(v->prefill, uint32_t, i));
        if (v->merge_workload && v->decode && v->decode->len)
            g_string_append_printf(text, " --decode %u:%u", v->decode->len,
                                   g_array_index(v->decode, uint32_t, 0));
        if (v->merge_workload)
            g_string_append(text, " (into the workload's steps)");
        g_string_append_c(text, '\n');
    }
    v->text = g_string_free(text, FALSE);
    g_ptr_array_add(ov, NULL);
    v->overrides = (GStrv)g_ptr_array_steal(ov, NULL);
}

/* ---- workers (thread pool) ---- */

static void work_cb(uv_work_t *req)
{
    Variant *v = req->data;
    Sweep *sw = v->sweep;
    gint64 t0 = g_get_monotonic_time();
    variant_build(sw, v);
    ScenarioExtras x = {(const char *const *)v->overrides,
                        sw->hardware,
                        sw->max_rank_ops,
                        v->prefill,
                        v->decode,
                        NULL,
                        false,
                        false,
                        v->merge_workload};
    v->sc = scenario_load_string_extras(v->text, sw->path, &x, &v->error);
    if (v->sc && !runner_check_work(v->sc, sw->max_rank_ops, &v->error))
        g_clear_pointer(&v->sc, scenario_free); /* too big: an invalid variant */
    if (v->sc) {
        v->records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        v->res =
            runner_simulate(v->sc, sw->timeline, runner_collect_record, v->records, NULL, NULL);
        ModelMemPlan *m = v->res->memory;
        /* Without --memory-detail a sweep stores the memory plan per component, not its tensor
         * list (memory_items: items x ranks rows, which cost as much to store as a 1,024-rank
         * run takes to simulate). */
        for (uint32_t r = 0; m && !sw->memory_detail && r < m->world; r++)
            g_clear_pointer(&m->ranks[r].items, g_ptr_array_unref);
    }
    v->work_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
}

/* ---- progress (stderr) ---- */

static char *fmt_clock(double s)
{
    guint64 t = (guint64)(s + 0.5);
    if (t >= 3600)
        return g_strdup_printf("%" G_GUINT64_FORMAT ":%02u:%02u", t / 3600, (guint)(t / 60 % 60),
                               (guint)(t % 60));
    return g_strdup_printf("%u:%02u", (guint)(t / 60), (guint)(t % 60));
}

static void progress_bar(Sweep *sw)
{
    if (!sw->tty || sw->quiet)
        return;
    double elapsed = (double)(g_get_monotonic_time() - sw->t0) / 1e6;
    guint total = sw->interrupted ? sw->next : sw->n;
    const int width = 24;
    int fill = total ? (int)((double)sw->done / total * width) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    g_autofree char *el = fmt_clock(elapsed);
    g_autofree char *eta = sw->interrupted ? g_strdup("finishing the runs in flight")
                           : sw->done      ? fmt_clock(elapsed / sw->done * (sw->n - sw->done))
                                           : g_strdup("?");
    fprintf(stderr, "\r[%s] %u/%u done, %u failing, %s elapsed, ETA %s\033[K", bar, sw->done, sw->n,
            sw->failed + sw->invalid + sw->errors, el, eta);
    fflush(stderr);
    sw->bar_shown = true;
}

static void progress_clear(Sweep *sw)
{
    if (sw->bar_shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        sw->bar_shown = false;
    }
}

static void progress_line(Sweep *sw, const Variant *v)
{
    if (sw->tty || sw->quiet)
        return;
    g_autofree char *end = v->end_ns >= 0 ? sched_format_ns(v->end_ns) : g_strdup("-");
    fprintf(stderr, "[%u/%u] %s: %s", sw->done, sw->n, v->label, sweep_outcome_names[v->outcome]);
    if (v->run_id >= 0)
        fprintf(stderr, " (run %" G_GINT64_FORMAT ", %s)", v->run_id, end);
    if (v->first_diag && v->outcome != OUT_OK) {
        g_autofree char *cut = query_short_message(v->first_diag, 110);
        fprintf(stderr, " — %s", cut);
    }
    fputc('\n', stderr);
    fflush(stderr);
}

static void tick_cb(uv_timer_t *t)
{
    progress_bar(t->data);
}

/* ---- the loop thread: storing, queuing ---- */

static void queue_next(Sweep *sw);

static void note_flags(Sweep *sw, const Scenario *sc)
{
    for (guint i = 0; sc->ignored_flags && i < sc->ignored_flags->len; i++) {
        const char *n = g_ptr_array_index(sc->ignored_flags, i);
        if (!g_ptr_array_find_with_equal_func(sw->notes, n, g_str_equal, NULL))
            g_ptr_array_add(sw->notes, g_strdup(n));
    }
}

static void store_variant(Sweep *sw, Variant *v)
{
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GError) err = NULL;
    const char *tl = cli_timeline_name(sw->timeline);
    /* the run is named by what it varied: base[key=value, ...] */
    g_auto(GStrv) parts = g_strsplit(v->label, ", ", -1);
    g_autofree char *file = g_path_get_basename(sw->path);
    char *ext = strrchr(file, '.');
    if (ext && ext != file)
        *ext = '\0';
    g_autofree char *name = cli_run_name(v->sc ? v->sc->name : file, (const char *const *)parts);
    if (!v->sc) {
        g_autofree char *msg = g_strdup_printf("sweep variant %s: %s", v->label,
                                               v->error ? v->error->message : "rejected");
        v->outcome = OUT_INVALID;
        /* The table names the file once; the message need not repeat it. */
        const char *m = v->error ? v->error->message : "rejected";
        size_t pl = strlen(sw->path);
        g_autofree char *shortened = NULL;
        if (strncmp(m, sw->path, pl) == 0 && m[pl] == ':')
            shortened = g_ascii_isdigit(m[pl + 1]) ? g_strdup_printf("line %s", m + pl + 1)
                                                   : g_strdup(m + pl + 1 + (m[pl + 1] == ' '));
        v->first_diag = query_diag_summary("config", shortened ? shortened : m, 4096);
        v->run_id = runner_store_invalid_as(sw->store, sw->path, name, tl, msg, v->label,
                                            sw->sweep_id ? sw->sweep_id : -1, &err);
    } else {
        note_flags(sw, v->sc);
        const SchedOutcome *o = v->res->outcome;
        v->outcome = o->failed ? OUT_FAILED : OUT_OK;
        v->end_ns = o->end_ns;
        const SchedDiag *d = query_first_diag(o);
        if (d)
            v->first_diag = query_diag_summary(d->kind, d->message, 4096);
        const ModelMemPlan *m = v->res->memory;
        if (m && m->world) {
            v->has_kv = true;
            v->kv_min_bytes = m->ranks[0].kv_budget_bytes;
            for (uint32_t r = 1; r < m->world; r++)
                v->kv_min_bytes = MIN(v->kv_min_bytes, m->ranks[r].kv_budget_bytes);
        }
        double wall = v->work_ms + (double)(g_get_monotonic_time() - t0) / 1000.0;
        g_free(v->sc->name);
        v->sc->name = g_steal_pointer(&name);
        v->run_id = runner_store_as(sw->store, v->sc, tl, v->res, v->records, wall, v->label,
                                    sw->sweep_id ? sw->sweep_id : -1, &err);
    }
    if (v->run_id > 0 && !sw->sweep_id)
        sw->sweep_id = v->run_id;
    if (v->run_id < 0) {
        progress_clear(sw);
        cli_error("sweep variant %s: not stored: %s", v->label,
                  err ? err->message : "unknown error");
        v->outcome = OUT_ERROR;
    }
    switch (v->outcome) {
    case OUT_OK:
        sw->ok++;
        break;
    case OUT_FAILED:
        sw->failed++;
        break;
    case OUT_INVALID:
        sw->invalid++;
        break;
    default:
        sw->errors++;
        break;
    }
}

static void after_work_cb(uv_work_t *req, int status)
{
    Variant *v = req->data;
    Sweep *sw = v->sweep;
    g_assert(status == 0); /* variants are never cancelled: they are not queued instead */
    sw->in_flight--;
    /* Refill the pool first, so the workers compute while this thread stores. */
    queue_next(sw);
    store_variant(sw, v);
    variant_clear_work(v);
    sw->done++;
    progress_line(sw, v);
    progress_bar(sw);
}

static void queue_next(Sweep *sw)
{
    while (!sw->interrupted && sw->next < sw->n && sw->in_flight < sw->jobs) {
        Variant *v = &sw->variants[sw->next++];
        int rc = uv_queue_work(&sw->loop, &v->req, work_cb, after_work_cb);
        g_assert(rc == 0);
        sw->in_flight++;
    }
    if (sw->in_flight == 0 && (sw->interrupted || sw->next == sw->n)) {
        /* Nothing left: let uv_run return. */
        if (!uv_is_closing((uv_handle_t *)&sw->sigint))
            uv_close((uv_handle_t *)&sw->sigint, NULL);
        if (!uv_is_closing((uv_handle_t *)&sw->tick))
            uv_close((uv_handle_t *)&sw->tick, NULL);
    }
}

static void sigint_cb(uv_signal_t *h, int signum)
{
    Sweep *sw = h->data;
    sw->interrupted = true;
    /* Stopping the only SIGINT watcher restores the default action: a second Ctrl-C kills. */
    uv_signal_stop(h);
    progress_clear(sw);
    fprintf(stderr,
            "\nranksim: interrupted: finishing the %u run%s in flight (Ctrl-C again abandons "
            "them)\n",
            sw->in_flight, sw->in_flight == 1 ? "" : "s");
    fflush(stderr);
    queue_next(sw);
}

/* ---- the command ---- */

typedef struct {
    char **varies;
    char **zips;
    gboolean csv;
    int jobs;
    char *db;
    char *timeline;
    char **sets;
    char *hardware;
    char **prefill;
    char **decode;
    gboolean quiet;
    gboolean memory_detail;
    char *max_rank_ops;
    char *fail_on;
    gboolean json;
} SweepOptions;

static void sweep_options_clear(SweepOptions *o)
{
    g_strfreev(o->varies);
    g_strfreev(o->zips);
    g_free(o->db);
    g_free(o->timeline);
    g_strfreev(o->sets);
    g_free(o->hardware);
    g_strfreev(o->prefill);
    g_strfreev(o->decode);
    g_free(o->max_rank_ops);
    g_free(o->fail_on);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SweepOptions, sweep_options_clear)

static int sweep_run(Sweep *sw, SweepOptions *o);

int cli_sweep(int argc, char **argv)
{
    g_auto(SweepOptions) o = {0};
    o.jobs = -1;
    GOptionEntry entries[] = {
        {"vary", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.varies,
         "Values of a scenario key (repeatable: the cross product); workload.prefill=N,... or "
         "workload.decode=B:CTX,... replace the workload by one step",
         "KEY=V1,V2,..."},
        {"zip", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.zips,
         "Linked values (repeatable): every --zip key takes its i-th value in the same variant, "
         "e.g. --zip parallel.prefill_context_parallel_size=1,2,4 --zip "
         "parallel.decode_context_parallel_size=1,2,4; crossed with the --vary keys",
         "KEY=V1,V2,..."},
        {"csv", 0, 0, G_OPTION_ARG_NONE, &o.csv,
         "Print the variants as CSV (one row per variant, a header row) instead of the table",
         NULL},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &o.jobs,
         "Variants simulated in parallel (default: the number of CPUs)", "N"},
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &o.db, "Results database (default " CLI_DEFAULT_DB ")",
         "FILE"},
        {"timeline", 0, 0, G_OPTION_ARG_STRING, &o.timeline,
         "Ops to store per run: none (default for sweeps), collectives, full", "LEVEL"},
        {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.sets,
         "Override a scenario key in every variant, e.g. --set watchdog.collective_timeout_s=300",
         "KEY=VALUE"},
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &o.hardware,
         "Hardware preset or file, for scenarios that name none (vLLM eval configs)", "NAME|FILE"},
        {"prefill", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.prefill,
         "A prefill step of N tokens, for scenarios without a workload (repeatable)", "N"},
        {"decode", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.decode,
         "A decode step of B sequences at context CTX, for scenarios without a workload", "B:CTX"},
        {"memory-detail", 0, 0, G_OPTION_ARG_NONE, &o.memory_detail,
         "Also store every tensor of each memory plan (memory_items; slow for large runs)", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o.quiet, "No progress on stderr; only the table",
         NULL},
        {"max-rank-ops", 0, 0, G_OPTION_ARG_STRING, &o.max_rank_ops,
         "A variant of more rank-ops (repeats expanded) than N is stored as invalid, not "
         "simulated (default 1000000000; 0: no limit)",
         "N"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &o.json,
         "Print the variants and the summary as one JSON object instead of the table", NULL},
        {"fail-on", 0, 0, G_OPTION_ARG_STRING, &o.fail_on,
         "Exit 3 when a variant failed (failed), was rejected (invalid), or either (any): for CI",
         "failed|invalid|any"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO --vary KEY=V1,V2,... - run a scenario's variants");
    g_option_context_set_summary(
        ctx,
        "Runs every combination of the --vary values (the first --vary varies slowest) on a\n"
        "pool of worker threads and stores each variant as a run; a variant rejected by the\n"
        "scenario rules (e.g. vLLM's parallel-layout checks) is stored with status 'invalid'.\n"
        "Prints progress on stderr and, at the end, a table of every variant: its outcome,\n"
        "first diagnostic, simulated step time and KV budget.");
    g_option_context_set_description(
        ctx, "Example:\n"
             "  ranksim sweep scenarios/glm52-b200-tp1-pcp4-dcp4-flashmla.yaml \\\n"
             "    --vary parallel.prefill_context_parallel_size=1,2,4 \\\n"
             "    --vary workload.prefill=512,633,4096 -j 4\n"
             "\n"
             "Ctrl-C stops queuing, finishes and stores the variants in flight, prints the\n"
             "table and exits 130. Exit status: 0 the sweep ran (even if variants failed;\n"
             "with --fail-on, 3 when a variant is what it names), 2 bad arguments, an\n"
             "unreadable scenario or a --vary key the scenario does not have (nothing is\n"
             "stored then), 1 internal error (e.g. the database).\n"
             "Details: doc/cli.md.\n");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc != 2) {
        cli_error(argc < 2 ? "sweep: missing SCENARIO (try 'ranksim sweep --help')"
                           : "sweep: exactly one SCENARIO expected");
        return CLI_EXIT_INVALID;
    }
    Sweep sw = {0};
    sw.path = argv[1];
    return sweep_run(&sw, &o);
}

static int sweep_run(Sweep *sw, SweepOptions *o)
{
    if ((!o->varies || !o->varies[0]) && (!o->zips || !o->zips[0])) {
        cli_error("sweep: no --vary KEY=V1,V2,... given (a sweep needs at least one, or --zip)");
        return CLI_EXIT_INVALID;
    }
    if (o->csv && o->json) {
        cli_error("sweep: --csv and --json both given; choose one");
        return CLI_EXIT_INVALID;
    }
    if (o->jobs == -1)
        o->jobs = (int)CLAMP(g_get_num_processors(), 1, MAX_JOBS);
    if (o->jobs < 1 || o->jobs > MAX_JOBS) {
        cli_error("-j %d: expected 1..%d worker threads", o->jobs, MAX_JOBS);
        return CLI_EXIT_INVALID;
    }
    sw->jobs = (guint)o->jobs;
    g_autoptr(GError) lerr = NULL;
    if (!cli_max_rank_ops_parse(o->max_rank_ops, &sw->max_rank_ops, &lerr)) {
        cli_error("%s", lerr->message);
        return CLI_EXIT_INVALID;
    }
    static const char *const fail_names[] = {"failed", "invalid", "any", NULL};
    int fail_on = -1;
    if (o->fail_on) {
        for (int k = 0; fail_names[k] && fail_on < 0; k++)
            if (strcmp(o->fail_on, fail_names[k]) == 0)
                fail_on = k;
        if (fail_on < 0) {
            cli_error("--fail-on '%s': valid: failed, invalid, any", o->fail_on);
            return CLI_EXIT_INVALID;
        }
    }
    sw->timeline = SCHED_TIMELINE_NONE;
    if (o->timeline && !cli_timeline_parse(o->timeline, &sw->timeline)) {
        cli_error("--timeline '%s': unknown level; valid: none, collectives, full", o->timeline);
        return CLI_EXIT_INVALID;
    }
    g_autoptr(GPtrArray) varies = g_ptr_array_new_with_free_func(vary_free);
    guint64 n = 1;
    for (int z = 0; z < 2; z++)
        for (char **a = z ? o->zips : o->varies; a && *a; a++) {
            Vary *v = vary_parse(*a, varies, z == 1);
            if (!v)
                return CLI_EXIT_INVALID;
            g_ptr_array_add(varies, v);
            n = sweep_variant_count(varies);
            if (n == 0) {
                const Vary *z0 = NULL;
                for (guint k = 0; k < varies->len && !z0; k++)
                    if (((const Vary *)g_ptr_array_index(varies, k))->zip)
                        z0 = g_ptr_array_index(varies, k);
                cli_error("--zip '%s': %u values, but --zip %s has %u; linked keys take one "
                          "value each per variant, so give them equally many",
                          *a, v->values->len, z0->key, z0->values->len);
                return CLI_EXIT_INVALID;
            }
            if (n > MAX_VARIANTS) {
                cli_error("sweep: more than %d variants; split the sweep", MAX_VARIANTS);
                return CLI_EXIT_INVALID;
            }
        }
    g_autoptr(GArray) prefill = NULL;
    g_autoptr(GArray) decode = NULL;
    g_autoptr(GError) err = NULL;
    if (!cli_workload_parse(o->prefill, o->decode, &prefill, &decode, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    /* The file is read once; an unreadable file is a bad argument, not n invalid runs. */
    g_autofree char *text = NULL;
    if (!(text = input_file_read(sw->path, 0, NULL, &err)) ||
        !cli_input_paths_check(NULL, o->hardware, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    /* Every --vary key must be one the scenario has: each is tried alone with its first value
     * before anything runs, and a key the loader does not know (a typo) is exit 2 with its
     * suggestion, nothing stored. A value the rules refuse is not a typo: that variant is an
     * invalid run like any other. */
    for (guint k = 0; k < varies->len; k++) {
        const Vary *vy = g_ptr_array_index(varies, k);
        if (vy->kind != VARY_SET)
            continue;
        g_autoptr(GPtrArray) ov = g_ptr_array_new_with_free_func(g_free);
        for (char **s = o->sets; s && *s; s++)
            g_ptr_array_add(ov, g_strdup(*s));
        g_ptr_array_add(
            ov, g_strdup_printf("%s=%s", vy->key, (const char *)g_ptr_array_index(vy->values, 0)));
        g_ptr_array_add(ov, NULL);
        ScenarioExtras x = {(const char *const *)ov->pdata,
                            o->hardware,
                            sw->max_rank_ops,
                            prefill,
                            decode,
                            NULL,
                            false,
                            false,
                            false};
        g_autoptr(GError) verr = NULL;
        g_autoptr(Scenario) probe = scenario_load_string_extras(text, sw->path, &x, &verr);
        if (!probe && verr && strstr(verr->message, "unknown key")) {
            cli_error("--vary %s: %s", vy->key, verr->message);
            return CLI_EXIT_INVALID;
        }
    }
    sw->base_text = text;
    sw->varies = varies;
    sw->hardware = o->hardware;
    sw->sets = o->sets;
    sw->flag_prefill = prefill;
    sw->flag_decode = decode;
    sw->quiet = o->quiet;
    sw->memory_detail = o->memory_detail;
    sw->db_path = o->db ? o->db : CLI_DEFAULT_DB;
    sw->n = (guint)n;
    g_autoptr(Store) store = store_open(sw->db_path, &err);
    if (!store) {
        cli_error("%s", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    sw->store = store;
    sw->variants = g_new0(Variant, sw->n);
    for (guint i = 0; i < sw->n; i++) {
        Variant *v = &sw->variants[i];
        v->sweep = sw;
        v->index = i;
        v->run_id = -1;
        v->end_ns = -1;
        v->req.data = v;
    }
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    sw->notes = notes;

    /* The pool reads UV_THREADPOOL_SIZE once, at its first use (the first uv_queue_work). */
    g_autofree char *pool = g_strdup_printf("%u", sw->jobs);
    g_setenv("UV_THREADPOOL_SIZE", pool, TRUE);
    int rc = uv_loop_init(&sw->loop);
    g_assert(rc == 0);
    uv_signal_init(&sw->loop, &sw->sigint);
    sw->sigint.data = sw;
    uv_signal_start(&sw->sigint, sigint_cb, SIGINT);
    uv_timer_init(&sw->loop, &sw->tick);
    sw->tick.data = sw;
    sw->tty = isatty(STDERR_FILENO);
    sw->t0 = g_get_monotonic_time();
    if (sw->tty && !sw->quiet)
        uv_timer_start(&sw->tick, tick_cb, 250, 250);
    if (!sw->quiet)
        fprintf(stderr, "ranksim: sweep of %s: %u variant%s with -j %u, stored in %s\n", sw->path,
                sw->n, sw->n == 1 ? "" : "s", sw->jobs, sw->db_path);
    progress_bar(sw);
    queue_next(sw);
    uv_run(&sw->loop, UV_RUN_DEFAULT);
    uv_loop_close(&sw->loop);
    progress_clear(sw);
    double wall_s = (double)(g_get_monotonic_time() - sw->t0) / 1e6;

    fflush(stderr);
    for (guint i = 0; i < sw->notes->len; i++)
        fprintf(stderr, "ranksim: note: %s\n", (const char *)g_ptr_array_index(sw->notes, i));
    if (o->json) {
        sweep_print_json(sw, wall_s);
    } else if (o->csv) {
        sweep_print_csv(sw);
    } else {
        sweep_print_table(sw);
        sweep_print_summary(sw, wall_s);
    }
    fflush(stdout);
    for (guint i = 0; i < sw->n; i++)
        variant_clear(&sw->variants[i]);
    g_free(sw->variants);
    if (sw->interrupted)
        return EXIT_INTERRUPTED;
    if (sw->errors)
        return CLI_EXIT_INTERNAL;
    bool fail = (fail_on == 0 && sw->failed) || (fail_on == 1 && sw->invalid) ||
                (fail_on == 2 && (sw->failed || sw->invalid));
    return fail ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
