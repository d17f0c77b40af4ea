/* src/cli/cmd-sweep-mpi.c — `ranksim sweep --mpi`; see cmd-sweep-mpi.h.
 *
 * A variant's result travels as one GVariant "(uxbxsasay)": its outcome, simulated end (ns,
 * -1 none), whether it has a KV budget and the smallest, its first diagnostic ("" none), the
 * notes of ignored flags, and the bytes of the worker's temporary database holding its one run
 * (empty when the worker could not store it). GVariant checks what it reads, so a damaged
 * message reads as defaults, never out of bounds.
 *
 * Why a database and not the simulation's structures: the run's rows are whatever store_run_*
 * writes (names, op rows, memory, diagnostics, serving rows ...); shipping the file lets the
 * worker use the one writer the local sweep uses and rank 0 the one merge `ranksim merge`
 * uses, so there is no second serialisation of a run to keep in step with the schema.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cmd-sweep-mpi.h"
#include "cmd-common.h"
#include "exit-codes.h"
#include "../run/sweep-mpi.h"
#include "../store/store-merge.h"
#include "../store/store-sweep.h"
#include "../util/inputfile.h"
#include "../util/outfile.h"
#include "../util/textwrap.h"

#define RESULT_TYPE "(uxbxsasay)"
#define EXIT_INTERRUPTED 130
/* Rank 0 commits at least this often while results keep coming. */
#define COMMIT_US G_USEC_PER_SEC
/* A temporary database is read back whole; a run bigger than this is not sent. */
#define MAX_RESULT_BYTES ((gsize)1 << 40)

/* One rank's state (rank 0 uses every field, a worker `sw`, `hooks` and `tmp`). */
typedef struct {
    CliSweep *sw;
    const CliSweepMpiHooks *hooks;
    char *tmp;           /* a private temporary folder */
    char **paths;        /* rank 0, [sw->n]: a result's database, waiting to be merged */
    guint merged;        /* rank 0: variants[0..merged) are merged (or could not be) */
    StoreMerge *merge;   /* rank 0: the open transaction, NULL when none */
    gint64 merge_t0;     /* ... since when */
    GArray *in_merge;    /* guint: the variants merged in the open transaction */
    GBytes *empty;       /* an empty database of this schema, copied for each variant (creating
                            the schema anew costs ~100 ms on a loaded machine); NULL until the
                            first variant. One variant at a time per process uses it. */
} MpiSweep;

/* ---- computing a variant (workers, and rank 0 when alone) ---- */

/* Writes `len` bytes to `path` through the project's writer. */
static bool write_file(const char *path, const void *bytes, gsize len, GError **error)
{
    OutFile *f = out_file_open(path, error);
    if (!f)
        return false;
    if (fwrite(bytes, 1, len, out_file_stream(f)) != len) {
        out_file_abort(f);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot write %s", path);
        return false;
    }
    return out_file_close(f, error);
}

/* A new database at `path`: a copy of ms->empty (made by the first call). */
static Store *open_empty(MpiSweep *ms, const char *path, GError **error)
{
    if (!ms->empty) {
        g_autofree char *tpl = g_strdup_printf("%s/empty.db", ms->tmp);
        g_autoptr(Store) s = store_open(tpl, error);
        if (!s || !store_sweep_scratch(s, error))
            return NULL;
        g_clear_pointer(&s, store_close);
        gsize len = 0;
        char *bytes = input_file_read_bytes(tpl, MAX_RESULT_BYTES, &len, error);
        g_unlink(tpl);
        if (!bytes)
            return NULL;
        ms->empty = g_bytes_new_take(bytes, len);
    }
    gsize len = 0;
    const void *bytes = g_bytes_get_data(ms->empty, &len);
    if (!write_file(path, bytes, len, error))
        return NULL;
    g_autoptr(Store) s = store_open(path, error);
    if (!s || !store_sweep_scratch(s, error))
        return NULL;
    return g_steal_pointer(&s);
}

/* Loads, simulates and stores variant `index` into a fresh database at `path` as the local
 * sweep would; `v` gets the summary. */
static void compute_into(MpiSweep *ms, guint index, const char *path, CliSweep *wsw,
                         CliSweepVariant *v)
{
    gint64 t0 = g_get_monotonic_time();
    v->label = sweep_variant_label(&wsw->in, index);
    v->sc = sweep_variant_load(&wsw->in, index, &v->error);
    if (v->sc) {
        v->records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        v->res = sweep_variant_simulate(v->sc, wsw->timeline, wsw->memory_detail, v->records);
    }
    v->work_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) store = open_empty(ms, path, &err);
    if (!store) {
        cli_error("sweep variant %s: not stored: %s", v->label, err->message);
        v->outcome = CLI_SWEEP_ERROR;
        return;
    }
    wsw->store = store;
    ms->hooks->store(wsw, v);
    wsw->store = NULL;
}

/* The database file's bytes (and its removal), "" when it could not be read. */
static GVariant *take_file(const char *path, bool stored)
{
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    g_autofree char *bytes = stored ? input_file_read_bytes(path, MAX_RESULT_BYTES, &len, &err)
                                    : NULL;
    if (stored && !bytes)
        cli_error("sweep --mpi: %s", err->message);
    for (const char *const *x = (const char *const[]){"", "-wal", "-shm", NULL}; *x; x++) {
        g_autofree char *f = g_strconcat(path, *x, NULL);
        g_unlink(f);
    }
    return g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, bytes ? bytes : "", bytes ? len : 0,
                                     1);
}

static GBytes *work_cb(guint index, void *data)
{
    MpiSweep *ms = data;
    CliSweep wsw = *ms->sw; /* the inputs are shared read-only; the tallies are this copy's */
    wsw.sweep_id = 0;
    wsw.ok = wsw.failed = wsw.invalid = wsw.errors = 0;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    wsw.notes = notes;
    wsw.quiet = true;
    wsw.bar_shown = false;
    CliSweepVariant v = {.sweep = &wsw, .index = index, .run_id = -1, .end_ns = -1};
    g_autofree char *path = g_strdup_printf("%s/variant-%u.db", ms->tmp, index + 1);
    compute_into(ms, index, path, &wsw, &v);
    g_ptr_array_add(notes, NULL);
    GVariant *db = take_file(path, v.run_id > 0);
    GVariant *res = g_variant_new("(uxbxs^as@ay)", (guint32)v.outcome, (gint64)v.end_ns,
                                  (gboolean)v.has_kv, (gint64)v.kv_min_bytes,
                                  v.first_diag ? v.first_diag : "", (char **)notes->pdata, db);
    g_variant_ref_sink(res);
    GBytes *out = g_variant_get_data_as_bytes(res);
    g_variant_unref(res);
    g_clear_pointer(&v.sc, scenario_free);
    g_clear_error(&v.error);
    g_clear_pointer(&v.res, runner_result_free);
    g_clear_pointer(&v.records, g_array_unref);
    g_free(v.label);
    g_free(v.first_diag);
    return out;
}

/* ---- rank 0: merging results in variant order ---- */

static void tally(CliSweep *sw, CliSweepOutcome o, int by)
{
    guint *count = o == CLI_SWEEP_OK        ? &sw->ok
                   : o == CLI_SWEEP_FAILED  ? &sw->failed
                   : o == CLI_SWEEP_INVALID ? &sw->invalid
                                            : &sw->errors;
    *count = (guint)((int)*count + by);
}

/* Commits the open transaction; on failure its variants are "not stored". */
static void commit(MpiSweep *ms)
{
    if (!ms->merge)
        return;
    CliSweep *sw = ms->sw;
    g_autoptr(GError) err = NULL;
    bool ok = store_merge_commit(g_steal_pointer(&ms->merge), &err);
    if (!ok) {
        ms->hooks->progress_clear(sw);
        cli_error("sweep --mpi: %u variant%s not stored: %s", ms->in_merge->len,
                  ms->in_merge->len == 1 ? "" : "s", err->message);
        for (guint i = 0; i < ms->in_merge->len; i++) {
            CliSweepVariant *v = &sw->variants[g_array_index(ms->in_merge, guint, i)];
            tally(sw, v->outcome, -1);
            tally(sw, CLI_SWEEP_ERROR, 1);
            if (v->run_id == sw->sweep_id)
                sw->sweep_id = 0;
            v->outcome = CLI_SWEEP_ERROR;
            v->run_id = -1;
        }
    }
    g_array_set_size(ms->in_merge, 0);
}

/* Merges the database at `path` (one run) into the open transaction (begun if none is) and
 * puts its run in the sweep being built. Returns the run id, or -1 with `error` set. */
static int64_t merge_add(MpiSweep *ms, const char *path, GError **error)
{
    CliSweep *sw = ms->sw;
    if (!ms->merge) {
        if (!(ms->merge = store_merge_begin(sw->store, error)))
            return -1;
        ms->merge_t0 = g_get_monotonic_time();
    }
    StoreMergeStats st = {0};
    if (!store_merge_add(ms->merge, path, &st, error))
        return -1;
    if (st.added != 1) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED,
                    "its run is already in %s (the same run merged twice?)", sw->db_path);
        return -1;
    }
    int64_t sweep = sw->sweep_id > 0 ? sw->sweep_id : st.first_id;
    if (!store_sweep_assign(sw->store, st.first_id, st.first_id, sweep, error))
        return -1;
    sw->sweep_id = sweep;
    return st.first_id;
}

/* Merges variant `v`'s database; returns its run id, or -1 after printing why. */
static int64_t merge_one(MpiSweep *ms, CliSweepVariant *v, const char *path)
{
    g_autoptr(GError) err = NULL;
    int64_t id = merge_add(ms, path, &err);
    if (id < 0) {
        ms->hooks->progress_clear(ms->sw);
        cli_error("sweep variant %s: not stored: %s", v->label, err->message);
    }
    return id;
}

/* Merges variant i's result (its database, or the failure the worker reported). */
static void merge_variant(MpiSweep *ms, guint i)
{
    CliSweep *sw = ms->sw;
    CliSweepVariant *v = &sw->variants[i];
    char *path = ms->paths[i];
    if (*path) {
        v->run_id = merge_one(ms, v, path);
        if (v->run_id > 0)
            g_array_append_val(ms->in_merge, i);
        g_unlink(path);
    }
    if (v->run_id < 0)
        v->outcome = CLI_SWEEP_ERROR;
    tally(sw, v->outcome, 1);
    sw->done++;
    ms->hooks->progress(sw, v);
}

/* Merges every variant whose result is in and whose predecessors are merged; with `flush`
 * (the dealing is over) also those after a gap — a variant never computed because Ctrl-C
 * stopped the dealing before a dead worker's variant was dealt again stays "not run". */
static void merge_ready(MpiSweep *ms, bool flush)
{
    CliSweep *sw = ms->sw;
    while (ms->merged < sw->n && (ms->paths[ms->merged] || flush)) {
        guint i = ms->merged++;
        if (ms->paths[i])
            merge_variant(ms, i);
    }
    if (ms->merge && g_get_monotonic_time() - ms->merge_t0 >= COMMIT_US)
        commit(ms);
}

static void note_once(CliSweep *sw, const char *note)
{
    if (!g_ptr_array_find_with_equal_func(sw->notes, note, g_str_equal, NULL))
        g_ptr_array_add(sw->notes, g_strdup(note));
}

/* Writes a result's database where rank 0 merges it from; "" when there is none. */
static char *keep_db(MpiSweep *ms, guint index, GVariant *db)
{
    gsize len = 0;
    const void *bytes = g_variant_get_fixed_array(db, &len, 1);
    if (!len)
        return g_strdup("");
    g_autofree char *path = g_strdup_printf("%s/in-%u.db", ms->tmp, index + 1);
    g_autoptr(GError) err = NULL;
    if (!write_file(path, bytes, len, &err)) {
        ms->hooks->progress_clear(ms->sw);
        cli_error("sweep --mpi: %s", err->message);
        return g_strdup("");
    }
    return g_steal_pointer(&path);
}

static void result_cb(guint index, GBytes *result, void *data)
{
    MpiSweep *ms = data;
    CliSweep *sw = ms->sw;
    guint i = index - sw->first;
    CliSweepVariant *v = &sw->variants[i];
    g_autoptr(GVariant) res =
        g_variant_ref_sink(g_variant_new_from_bytes(G_VARIANT_TYPE(RESULT_TYPE), result, FALSE));
    guint32 outcome = 0;
    gint64 end_ns = -1, kv = 0;
    gboolean has_kv = FALSE;
    const char *diag = NULL;
    g_autofree const char **notes = NULL;
    g_autoptr(GVariant) db = NULL;
    g_variant_get(res, "(uxbx&s^a&s@ay)", &outcome, &end_ns, &has_kv, &kv, &diag, &notes, &db);
    v->outcome = outcome <= CLI_SWEEP_ERROR ? (CliSweepOutcome)outcome : CLI_SWEEP_ERROR;
    v->end_ns = end_ns;
    v->has_kv = has_kv;
    v->kv_min_bytes = kv;
    v->first_diag = *diag ? g_strdup(diag) : NULL;
    for (const char **n = notes; n && *n; n++)
        note_once(sw, *n);
    ms->paths[i] = keep_db(ms, index, db);
    merge_ready(ms, false);
}

/* ---- rank 0: signals, progress, dead workers ---- */

static void sigint_cb(uv_signal_t *h, int signum)
{
    (void)signum;
    MpiSweep *ms = h->data;
    ms->sw->interrupted = true;
    uv_signal_stop(h); /* a second Ctrl-C kills */
    ms->hooks->progress_clear(ms->sw);
    fprintf(stderr, "\nranksim: interrupted: no more variants are dealt; storing those in "
                    "flight (Ctrl-C again abandons them)\n");
    fflush(stderr);
}

static void tick_cb(uv_timer_t *t)
{
    MpiSweep *ms = t->data;
    ms->hooks->progress(ms->sw, NULL);
}

static bool poll_cb(void *data)
{
    MpiSweep *ms = data;
    uv_run(&ms->sw->loop, UV_RUN_NOWAIT);
    commit(ms); /* every result waiting was handled: store what is merged */
    return ms->sw->interrupted;
}

static void dead_cb(int rank, guint index, void *data)
{
    MpiSweep *ms = data;
    ms->hooks->progress_clear(ms->sw);
    g_autofree char *label = sweep_variant_label(&ms->sw->in, index);
    fprintf(stderr,
            "ranksim: MPI rank %d sent nothing for %d s while computing variant %u (%s): taken "
            "for dead; the variant is dealt again\n",
            rank, SWEEP_MPI_DEAD_S, index + 1, label);
    fflush(stderr);
}

/* ---- the command ---- */

/* The variants of this process's shard (as cmd-sweep.c's loop sets them). */
static void variants_init(CliSweep *sw)
{
    guint lo = 0, hi = sw->n;
    sw->total = sw->n;
    sweep_shard_range(&sw->shard, sw->total, &lo, &hi);
    sw->first = lo;
    sw->n = hi - lo;
    sw->next = sw->n;
    sw->variants = g_new0(CliSweepVariant, MAX(sw->n, 1));
    for (guint i = 0; i < sw->n; i++)
        sw->variants[i] = (CliSweepVariant){
            .sweep = sw,
            .index = lo + i,
            .run_id = -1,
            .end_ns = -1,
            .label = sweep_variant_label(&sw->in, lo + i),
        };
}

static void head_line(CliSweep *sw, int size)
{
    if (sw->quiet)
        return;
    g_autofree char *shard = cli_sweep_shard_words(sw);
    g_autofree char *who =
        size > 1 ? g_strdup_printf("%d MPI worker%s (ranks 1-%d)", size - 1, size == 2 ? "" : "s",
                                   size - 1)
                 : g_strdup("MPI rank 0 alone (-np 1)");
    g_autofree char *head = g_strdup_printf("ranksim: sweep of %s: %s%u variant%s on %s, stored "
                                            "in %s by rank 0",
                                            sw->in.path, shard, sw->n, sw->n == 1 ? "" : "s", who,
                                            sw->db_path);
    text_fold_line(stderr, head, strlen(head), text_width());
}

/* Rank 0: deals, merges, then MPI ends; the caller prints. */
static void deal_all(MpiSweep *ms, SweepMpi *m)
{
    CliSweep *sw = ms->sw;
    ms->paths = g_new0(char *, MAX(sw->n, 1));
    ms->in_merge = g_array_new(FALSE, FALSE, sizeof(guint));
    int rc = uv_loop_init(&sw->loop);
    g_assert(rc == 0);
    uv_signal_init(&sw->loop, &sw->sigint);
    sw->sigint.data = ms;
    uv_signal_start(&sw->sigint, sigint_cb, SIGINT);
    uv_timer_init(&sw->loop, &sw->tick);
    sw->tick.data = ms;
    sw->tty = isatty(STDERR_FILENO);
    sw->t0 = g_get_monotonic_time();
    if (sw->tty && !sw->quiet)
        uv_timer_start(&sw->tick, tick_cb, 250, 250);
    head_line(sw, sweep_mpi_size(m));
    SweepMpiHandlers h = {
        .work = work_cb, .result = result_cb, .poll = poll_cb, .dead = dead_cb, .data = ms};
    SweepMpiStats st = {0};
    sweep_mpi_deal(m, sw->first, sw->first + sw->n, &h, &st);
    merge_ready(ms, true);
    commit(ms);
    uv_close((uv_handle_t *)&sw->sigint, NULL);
    uv_close((uv_handle_t *)&sw->tick, NULL);
    uv_run(&sw->loop, UV_RUN_DEFAULT);
    uv_loop_close(&sw->loop);
    ms->hooks->progress_clear(sw);
    if (st.died)
        g_ptr_array_add(sw->notes,
                        g_strdup_printf("%u MPI worker%s taken for dead, %u variant%s dealt again",
                                        st.died, st.died == 1 ? "" : "s", st.redealt,
                                        st.redealt == 1 ? "" : "s"));
    for (guint i = 0; i < sw->n; i++)
        g_free(ms->paths[i]);
    g_free(ms->paths);
    g_array_unref(ms->in_merge);
}

/* Rank 0: opens the database, deals, ends MPI, prints. */
static int rank0(MpiSweep *ms, SweepMpi *m)
{
    CliSweep *sw = ms->sw;
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) store = cli_store_open_write(sw->db_path, &err);
    if (!store) {
        sweep_mpi_stop_all(m);
        sweep_mpi_finish(m);
        cli_error("%s", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    sw->store = store;
    sw->jobs = (guint)MAX(1, sweep_mpi_size(m) - 1);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    sw->notes = notes;
    variants_init(sw);
    deal_all(ms, m);
    sweep_mpi_finish(m);
    return ms->hooks->finish(sw, ms->hooks->data);
}

int cli_sweep_mpi(CliSweep *sw, const CliSweepMpiHooks *hooks)
{
    g_autoptr(GError) err = NULL;
    SweepMpi *m = sweep_mpi_start(NULL, NULL, &err);
    if (!m) {
        cli_error("%s", err->message);
        return g_error_matches(err, SWEEP_MPI_ERROR, SWEEP_MPI_ERROR_UNAVAILABLE)
                   ? CLI_EXIT_INVALID
                   : CLI_EXIT_INTERNAL;
    }
    MpiSweep ms = {.sw = sw, .hooks = hooks};
    ms.tmp = g_dir_make_tmp("ranksim-mpi-XXXXXX", &err);
    if (!ms.tmp) {
        cli_error("sweep --mpi: no temporary folder: %s", err->message);
        if (sweep_mpi_rank(m) == 0)
            sweep_mpi_stop_all(m);
        sweep_mpi_finish(m);
        return CLI_EXIT_INTERNAL;
    }
    int rc = CLI_EXIT_OK;
    if (sweep_mpi_rank(m) == 0) {
        rc = rank0(&ms, m);
    } else {
        SweepMpiHandlers h = {.work = work_cb, .data = &ms};
        sweep_mpi_work(m, &h);
        sweep_mpi_finish(m);
    }
    g_clear_pointer(&ms.empty, g_bytes_unref);
    g_rmdir(ms.tmp);
    g_free(ms.tmp);
    return rc;
}
