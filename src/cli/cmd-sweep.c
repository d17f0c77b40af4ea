/* src/cli/cmd-sweep.c — `ranksim sweep`: its options, the variants (src/run/sweep.h) run on a
 * libuv thread pool and stored in the results database by a single writer, progress on stderr,
 * and the table at the end (sweep-output.c).
 *
 * Threads: variants are loaded, lowered and simulated in uv_queue_work workers (pure
 * computation on a Scenario each worker owns; records go to a per-variant GArray). The
 * after-work callback runs on the loop thread, the only one that touches the Store. It stores
 * the runs in variant order (a variant computed early waits for those before it), so run ids
 * and rows are those of `-j 1` whatever the completion order, and it stores them in batches:
 * up to BATCH_RUNS consecutive runs in one transaction (store_sweep_batch_begin; each run in
 * a savepoint of its own, so one that cannot be written is the only one lost). A batch is
 * written when BATCH_RUNS are ready, when their records reach BATCH_BYTES, when nothing else
 * is in flight, or FLUSH_MS after a run became ready (so readers and the progress lines are
 * never far behind). The pool has `jobs` threads (UV_THREADPOOL_SIZE, set before the pool's
 * first use) and more variants are queued than it has threads (AHEAD_PER_JOB each, plus a
 * batch): a worker that finishes takes the next variant from the pool's queue at once, never
 * waiting for the loop thread, which on a busy machine may not be scheduled for a while.
 *
 * Why (issue 29): with one variant per worker and one commit per run, `-j 2` on 2 cores gained
 * 1.2x on the README's sweep widened to 204 variants: each worker got its next variant only
 * once the loop thread had been scheduled and had stored the last one, the per-run
 * BEGIN/COMMIT was 40 % of the loop thread's time (perf), and the runs' ids followed the
 * completion order, not the variants'.
 *
 * Ctrl-C (SIGINT through a uv_signal_t): nothing new is queued, the variants queued but not
 * started are taken off the pool (uv_cancel), those being simulated finish and are committed,
 * the summary is printed, exit 130. A second Ctrl-C gets the default action (the signal
 * watcher is stopped after the first), which loses only uncommitted runs (at most a batch and
 * the variants in flight).
 *
 * Costs: memory is O(variants) for the summary plus, per variant queued or waiting for its
 * batch (at most jobs x AHEAD_PER_JOB + HELD_RUNS), its scenario and records; no variant is
 * queued while those waiting hold BATCH_BYTES of records (--timeline full).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "commands.h"
#include "cmd-common.h"
#include "cmd-sweep-mpi.h"
#include "help.h"
#include "sweep-output.h"
#include "../input/scenario.h"
#include "../run/runner.h"
#include "../run/sweep.h"
#include "../run/sweep-shard.h"
#include "../store/query.h"
#include "../store/store.h"
#include "../store/store-sweep.h"
#include "../util/inputfile.h"
#include "../util/textwrap.h"

#define MAX_JOBS 1024 /* libuv's own cap on UV_THREADPOOL_SIZE */
#define EXIT_INTERRUPTED 130
/* Runs per transaction: the per-run commit (about 14 WAL pages, 40 % of the loop thread's time
 * on the 204-variant sweep) is paid once per 16 runs, which brings it to 8 % of that time
 * (perf); the inserts themselves are then most of it, so larger batches would only delay
 * what readers see. */
#define BATCH_RUNS 16
/* Records waiting to be stored before their batch is written at once and nothing more is
 * queued (--timeline full runs): bounds the memory the batches add. */
#define BATCH_BYTES ((size_t)64 << 20)
/* How late a computed run may be stored: readers (`ranksim runs`) and the progress lines see
 * it within this time even when the next variants are slow. */
#define FLUSH_MS 250
/* Variants queued per worker thread beyond a batch: enough that a worker never idles while the
 * loop thread is storing or not scheduled (2: one being computed, one waiting). */
#define AHEAD_PER_JOB 2
/* Computed variants that may wait for one before them: runs are stored in variant order, so a
 * slow variant holds back the batch after it, and with room for only one batch the other
 * workers ran out of variants behind it (perf sched: CPUs idle 15 % of a -j 2 sweep). */
#define HELD_RUNS (4 * BATCH_RUNS)

static void variant_clear_work(CliSweepVariant *v)
{
    g_clear_pointer(&v->sc, scenario_free);
    g_clear_error(&v->error);
    g_clear_pointer(&v->res, runner_result_free);
    g_clear_pointer(&v->records, g_array_unref);
}

static void variant_clear(CliSweepVariant *v)
{
    variant_clear_work(v);
    g_free(v->label);
    g_free(v->first_diag);
}

/* ---- workers (thread pool) ---- */

static void work_cb(uv_work_t *req)
{
    CliSweepVariant *v = req->data;
    const CliSweep *sw = v->sweep;
    gint64 t0 = g_get_monotonic_time();
    v->label = sweep_variant_label(&sw->in, v->index);
    v->sc = sweep_variant_load(&sw->in, v->index, &v->error);
    if (v->sc) {
        v->records = g_array_new(FALSE, FALSE, sizeof(SchedRecord));
        v->res = sweep_variant_simulate(v->sc, sw->timeline, sw->memory_detail, v->records);
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

static void progress_bar(CliSweep *sw)
{
    if (!sw->tty || sw->quiet)
        return;
    double elapsed = (double)(g_get_monotonic_time() - sw->t0) / 1e6;
    guint total = sw->interrupted ? sw->next : sw->n;
    const int width = 24;
    guint done = MAX(sw->done, sw->computed); /* computed, if not yet stored */
    int fill = total ? (int)((double)done / total * width) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    g_autofree char *el = fmt_clock(elapsed);
    g_autofree char *eta = sw->interrupted ? g_strdup("finishing the runs in flight")
                           : done          ? fmt_clock(elapsed / done * (sw->n - done))
                                           : g_strdup("?");
    g_autofree char *shard =
        sw->shard.source ? g_strdup_printf(" of shard %u/%u", sw->shard.index + 1, sw->shard.count)
                         : g_strdup("");
    fprintf(stderr, "\r[%s] %u/%u%s done, %u failing, %s elapsed, ETA %s\033[K", bar, done, sw->n,
            shard, sw->failed + sw->invalid + sw->errors, el, eta);
    fflush(stderr);
    sw->bar_shown = true;
}

static void progress_clear(CliSweep *sw)
{
    if (sw->bar_shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        sw->bar_shown = false;
    }
}

static void progress_line(CliSweep *sw, const CliSweepVariant *v)
{
    if (sw->tty || sw->quiet)
        return;
    g_autofree char *end = v->end_ns >= 0 ? sched_format_ns(v->end_ns) : g_strdup("-");
    /* one line of the terminal's width: the variant and its outcome, then the finding in what
     * is left, or under it when little is */
    g_autoptr(GString) line = g_string_new(NULL);
    if (sw->shard.source)
        g_string_printf(line, "[%u/%u, shard %u/%u] %s: %s", sw->done, sw->n, sw->shard.index + 1,
                        sw->shard.count, v->label, cli_sweep_outcome_names[v->outcome]);
    else
        g_string_printf(line, "[%u/%u] %s: %s", sw->done, sw->n, v->label,
                        cli_sweep_outcome_names[v->outcome]);
    if (v->run_id >= 0)
        g_string_append_printf(line, " (run %" G_GINT64_FORMAT ", %s)", v->run_id, end);
    int width = text_width();
    if (v->first_diag && v->outcome != CLI_SWEEP_OK) {
        int left = width - (int)g_utf8_strlen(line->str, -1) - 3;
        bool under = left < 24;
        g_autofree char *cut =
            cli_sweep_finding(v->first_diag, (guint)MAX(8, under ? width - 4 : left));
        if (under) { /* the variant, folded; the finding on a line of its own */
            text_fold_line(stderr, line->str, line->len, width);
            fprintf(stderr, "    %s\n", cut);
            fflush(stderr);
            return;
        }
        g_string_append_printf(line, " — %s", cut);
    }
    text_fold_line(stderr, line->str, line->len, width);
    fflush(stderr);
}

static void tick_cb(uv_timer_t *t)
{
    progress_bar(t->data);
}

/* ---- the loop thread: storing, queuing ---- */

static void queue_next(CliSweep *sw);

static void note_once(CliSweep *sw, const GPtrArray *notes)
{
    for (guint i = 0; notes && i < notes->len; i++) {
        const char *n = g_ptr_array_index(notes, i);
        if (!g_ptr_array_find_with_equal_func(sw->notes, n, g_str_equal, NULL))
            g_ptr_array_add(sw->notes, g_strdup(n));
    }
}

static void note_flags(CliSweep *sw, const Scenario *sc)
{
    note_once(sw, sc->override_notes);
    note_once(sw, sc->ignored_flags);
}

/* Writes the variant's run (valid or refused) and fills its summary; run_id -1 and
 * CLI_SWEEP_ERROR, told on stderr, when it could not be written. Inside a batch the run is a
 * savepoint of the batch's transaction. */
static void store_row(CliSweep *sw, CliSweepVariant *v)
{
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GError) err = NULL;
    const char *tl = cli_timeline_name(sw->timeline);
    /* the run is named by what it varied: base[key=value, ...] */
    g_auto(GStrv) parts = g_strsplit(v->label, ", ", -1);
    g_autofree char *file = g_path_get_basename(sw->in.path);
    char *ext = strrchr(file, '.');
    if (ext && ext != file)
        *ext = '\0';
    g_autofree char *name = cli_run_name(v->sc ? v->sc->name : file, (const char *const *)parts);
    if (!v->sc) {
        g_autofree char *msg = g_strdup_printf("sweep variant %s: %s", v->label,
                                               v->error ? v->error->message : "rejected");
        v->outcome = CLI_SWEEP_INVALID;
        /* The table names the file once; the message need not repeat it. */
        const char *m = v->error ? v->error->message : "rejected";
        size_t pl = strlen(sw->in.path);
        g_autofree char *shortened = NULL;
        if (strncmp(m, sw->in.path, pl) == 0 && m[pl] == ':')
            shortened = g_ascii_isdigit(m[pl + 1]) ? g_strdup_printf("line %s", m + pl + 1)
                                                   : g_strdup(m + pl + 1 + (m[pl + 1] == ' '));
        v->first_diag = query_diag_summary("config", shortened ? shortened : m, 4096);
        v->run_id = runner_store_invalid_as(sw->store, sw->in.path, sw->in.text, name, tl, msg,
                                            v->label, sw->sweep_id ? sw->sweep_id : -1, &err);
    } else {
        note_flags(sw, v->sc);
        const SchedOutcome *o = v->res->outcome;
        v->outcome = o->failed ? CLI_SWEEP_FAILED : CLI_SWEEP_OK;
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
        v->outcome = CLI_SWEEP_ERROR;
    }
}

static void count_outcome(CliSweep *sw, const CliSweepVariant *v)
{
    switch (v->outcome) {
    case CLI_SWEEP_OK:
        sw->ok++;
        break;
    case CLI_SWEEP_FAILED:
        sw->failed++;
        break;
    case CLI_SWEEP_INVALID:
        sw->invalid++;
        break;
    default:
        sw->errors++;
        break;
    }
}

/* One variant in its own transaction (the MPI rank 0's hook: cmd-sweep-mpi.c). */
static void store_variant(CliSweep *sw, CliSweepVariant *v)
{
    store_row(sw, v);
    count_outcome(sw, v);
}

/* How many variants from `drained` on are back from the pool (a prefix: storing waits for the
 * first still computing), and the bytes of their records. */
static guint ready_count(const CliSweep *sw, size_t *bytes)
{
    guint k = sw->drained;
    *bytes = 0;
    for (; k < sw->next && sw->variants[k].computed; k++)
        if (sw->variants[k].records)
            *bytes += (size_t)sw->variants[k].records->len * sizeof(SchedRecord);
    return k - sw->drained;
}

/* The bytes of the records of every computed variant not yet stored (in order or not). */
static size_t waiting_bytes(const CliSweep *sw)
{
    size_t bytes = 0;
    for (guint k = sw->drained; k < sw->next; k++) /* a worker owns those not computed */
        if (sw->variants[k].computed && sw->variants[k].records)
            bytes += (size_t)sw->variants[k].records->len * sizeof(SchedRecord);
    return bytes;
}

/* Variants [drained, drained + n) stored in one transaction (a savepoint each), then counted,
 * shown and freed. A batch that cannot be opened is stored one transaction per run; one that
 * cannot be committed loses its runs, each then reported as not stored. */
static void store_batch(CliSweep *sw, guint n)
{
    CliSweepVariant *vs = &sw->variants[sw->drained];
    int64_t sweep_id = sw->sweep_id;
    g_autoptr(GError) err = NULL;
    bool batch = n > 1 && store_sweep_batch_begin(sw->store, &err);
    g_clear_error(&err); /* each run then opens its own and reports the same error */
    for (guint i = 0; i < n; i++)
        if (!vs[i].cancelled)
            store_row(sw, &vs[i]);
    if (batch && !store_sweep_batch_commit(sw->store, &err)) {
        progress_clear(sw);
        sw->sweep_id = sweep_id; /* the batch's first run, if it named the sweep, is gone */
        for (guint i = 0; i < n; i++) {
            if (vs[i].cancelled || vs[i].run_id < 0)
                continue;
            cli_error("sweep variant %s: not stored: %s", vs[i].label, err->message);
            vs[i].run_id = -1;
            vs[i].outcome = CLI_SWEEP_ERROR;
        }
    }
    for (guint i = 0; i < n; i++) {
        CliSweepVariant *v = &vs[i];
        variant_clear_work(v);
        if (v->cancelled)
            continue;
        count_outcome(sw, v);
        sw->done++;
        progress_line(sw, v);
    }
    sw->drained += n;
    progress_bar(sw);
}

/* Every variant ready to store, in batches of BATCH_RUNS. */
static void store_ready(CliSweep *sw)
{
    size_t bytes;
    for (guint n; (n = ready_count(sw, &bytes)) > 0;)
        store_batch(sw, MIN(n, BATCH_RUNS));
}

static void flush_cb(uv_timer_t *t)
{
    CliSweep *sw = t->data;
    store_ready(sw);
    queue_next(sw);
}

/* Stores what is ready when a batch is full, big, or every variant is queued (the last ones are
 * stored while the workers compute those after them, not all after the last: that tail was
 * 5 % of a -j 2 sweep, perf sched); otherwise stores it FLUSH_MS from now at the latest. */
static void store_due(CliSweep *sw)
{
    size_t bytes;
    guint n = ready_count(sw, &bytes);
    if (!n)
        return;
    if (n >= BATCH_RUNS || bytes >= BATCH_BYTES || sw->next == sw->n || sw->interrupted)
        store_ready(sw);
    else if (!uv_is_active((uv_handle_t *)&sw->flush))
        uv_timer_start(&sw->flush, flush_cb, FLUSH_MS, 0);
}

static void after_work_cb(uv_work_t *req, int status)
{
    CliSweepVariant *v = req->data;
    CliSweep *sw = v->sweep;
    /* only Ctrl-C cancels, and only variants no worker had started */
    g_assert(status == 0 || status == UV_ECANCELED);
    sw->in_flight--;
    v->computed = true;
    v->cancelled = status == UV_ECANCELED;
    sw->computed += !v->cancelled;
    queue_next(sw); /* the pool first: its workers compute while this thread stores */
    store_due(sw);
    queue_next(sw); /* the window moved with what was stored */
}

static void close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void queue_next(CliSweep *sw)
{
    /* queued or waiting for their batch; no more while the waiting hold BATCH_BYTES */
    guint window = sw->jobs * AHEAD_PER_JOB + HELD_RUNS;
    size_t bytes = waiting_bytes(sw);
    while (!sw->interrupted && sw->next < sw->n && sw->next - sw->drained < window &&
           bytes < BATCH_BYTES) {
        CliSweepVariant *v = &sw->variants[sw->next++];
        int rc = uv_queue_work(&sw->loop, &v->req, work_cb, after_work_cb);
        g_assert(rc == 0);
        sw->in_flight++;
    }
    if (sw->in_flight == 0 && (sw->interrupted || sw->next == sw->n)) {
        /* Nothing left: store what waits, then let uv_run return. */
        store_ready(sw);
        close_handle((uv_handle_t *)&sw->sigint);
        close_handle((uv_handle_t *)&sw->tick);
        close_handle((uv_handle_t *)&sw->flush);
    }
}

static void sigint_cb(uv_signal_t *h, int signum)
{
    CliSweep *sw = h->data;
    sw->interrupted = true;
    /* Stopping the only SIGINT watcher restores the default action: a second Ctrl-C kills. */
    uv_signal_stop(h);
    /* The variants no worker has started come back cancelled (after_work_cb). */
    guint running = sw->in_flight;
    for (guint i = sw->drained; i < sw->next; i++)
        if (!sw->variants[i].computed && uv_cancel((uv_req_t *)&sw->variants[i].req) == 0)
            running--;
    progress_clear(sw);
    fprintf(stderr,
            "\nranksim: interrupted: finishing the %u run%s in flight (Ctrl-C again abandons "
            "them)\n",
            running, running == 1 ? "" : "s");
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
    char **perf_db; /* --perf-db, repeatable */
    char **prefill;
    char **decode;
    gboolean quiet;
    gboolean memory_detail;
    char *max_rank_ops;
    char *fail_on;
    gboolean json;
    char *shard;     /* --shard K/N */
    int shard_count; /* --shard-count N (with JOB_COMPLETION_INDEX) */
    gboolean mpi;    /* --mpi: variants computed by MPI ranks (cmd-sweep-mpi.c) */
} SweepOptions;

static void sweep_options_clear(SweepOptions *o)
{
    g_strfreev(o->varies);
    g_strfreev(o->zips);
    g_free(o->db);
    g_free(o->timeline);
    g_strfreev(o->sets);
    g_free(o->hardware);
    g_strfreev(o->perf_db);
    g_strfreev(o->prefill);
    g_strfreev(o->decode);
    g_free(o->max_rank_ops);
    g_free(o->fail_on);
    g_free(o->shard);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SweepOptions, sweep_options_clear)

static int sweep_run(CliSweep *sw, SweepOptions *o);

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
        {"perf-db", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.perf_db,
         "A measured table of kernel times (ranksim's CSV, AIConfigurator's tables, nccl-tests "
         "output, an op profile) that overrides the cost model where it covers a shape "
         "(repeatable)",
         "PATH"},
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
        {"shard", 0, 0, G_OPTION_ARG_STRING, &o.shard,
         "Run only the K-th of N contiguous slices of the variants (1 <= K <= N), each shard "
         "into its own --db, merged after with 'ranksim merge' (default: from "
         "SLURM_ARRAY_TASK_ID/_COUNT, or JOB_COMPLETION_INDEX with --shard-count, when set)",
         "K/N"},
        {"shard-count", 0, 0, G_OPTION_ARG_INT, &o.shard_count,
         "How many shards, for a Kubernetes Indexed Job (JOB_COMPLETION_INDEX names the shard, "
         "0-based)",
         "N"},
        {"mpi", 0, 0, G_OPTION_ARG_NONE, &o.mpi,
         "Under mpirun: rank 0 deals the variants to the other ranks and stores every run "
         "(mpirun -np N ranksim sweep --mpi ...; doc/scale-out.md)",
         NULL},
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
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (argc != 2) {
        cli_error(argc < 2 ? "sweep: missing SCENARIO (try 'ranksim sweep --help')"
                           : "sweep: exactly one SCENARIO expected");
        return CLI_EXIT_INVALID;
    }
    CliSweep sw = {0};
    sw.in.path = argv[1];
    return sweep_run(&sw, &o);
}

/* The options that need no file: --vary given, one output format, -j, --max-rank-ops,
 * --fail-on (into *fail_on: -1 none, 0 failed, 1 invalid, 2 any), --timeline. Returns false
 * after printing the error. */
static bool sweep_options_check(CliSweep *sw, SweepOptions *o, int *fail_on)
{
    if ((!o->varies || !o->varies[0]) && (!o->zips || !o->zips[0])) {
        cli_error("sweep: no --vary KEY=V1,V2,... given (a sweep needs at least one, or --zip)");
        return false;
    }
    if (o->csv && o->json) {
        cli_error("sweep: --csv and --json both given; choose one");
        return false;
    }
    if (o->jobs == -1)
        o->jobs = (int)CLAMP(g_get_num_processors(), 1, MAX_JOBS);
    if (o->jobs < 1 || o->jobs > MAX_JOBS) {
        cli_error("-j %d: expected 1..%d worker threads", o->jobs, MAX_JOBS);
        return false;
    }
    sw->jobs = (guint)o->jobs;
    g_autoptr(GError) lerr = NULL;
    if (!cli_max_rank_ops_parse(o->max_rank_ops, &sw->in.max_rank_ops, &lerr)) {
        cli_error("%s", lerr->message);
        return false;
    }
    static const char *const fail_names[] = {"failed", "invalid", "any", NULL};
    *fail_on = -1;
    if (o->fail_on) {
        for (int k = 0; fail_names[k] && *fail_on < 0; k++)
            if (strcmp(o->fail_on, fail_names[k]) == 0)
                *fail_on = k;
        if (*fail_on < 0) {
            cli_error("--fail-on '%s': valid: failed, invalid, any", o->fail_on);
            return false;
        }
    }
    SweepShardEnv env;
    sweep_shard_env_get(&env);
    if (o->shard_count < 0) {
        cli_error("--shard-count %d: expected 1..%d shards", o->shard_count, SWEEP_SHARD_MAX);
        return false;
    }
    if (!sweep_shard_resolve(o->shard, (guint)o->shard_count, &env, &sw->shard, &lerr)) {
        cli_error("%s", lerr->message);
        return false;
    }
    sw->timeline = SCHED_TIMELINE_NONE;
    if (o->timeline && !cli_timeline_parse(o->timeline, &sw->timeline)) {
        cli_error("--timeline '%s': unknown level; valid: none, collectives, full", o->timeline);
        return false;
    }
    return true;
}

/* The variants' inputs into sw->in: the axes, the --prefill/--decode batch and the file's
 * text (read once: an unreadable file is a bad argument, not n invalid runs), then every
 * --vary key checked against the scenario before anything runs (a typo is exit 2 with the
 * loader's suggestion, nothing stored). sw->in borrows *axes, *prefill, *decode and *text,
 * which the caller owns. Returns false after printing the error. */
static bool sweep_inputs(CliSweep *sw, SweepOptions *o, GPtrArray **axes, GArray **prefill,
                         GArray **decode, char **text)
{
    g_autoptr(GError) err = NULL;
    if (!(*axes = sweep_axes_parse(o->varies, o->zips, &sw->n, &err)) ||
        !cli_workload_parse(o->prefill, o->decode, prefill, NULL, decode, &err) ||
        !(*text = input_file_read(sw->in.path, 0, NULL, &err)) ||
        !cli_input_paths_check(NULL, o->hardware, &err)) {
        cli_error("%s", err->message);
        return false;
    }
    sw->in.text = *text;
    sw->in.varies = *axes;
    sw->in.sets = (const char *const *)o->sets;
    sw->in.hardware = o->hardware;
    sw->in.perf_db = (const char *const *)o->perf_db;
    sw->in.flag_prefill = *prefill;
    sw->in.flag_decode = *decode;
    if (!sweep_check_keys(&sw->in, &err)) {
        cli_error("%s", err->message);
        return false;
    }
    return true;
}

/* Runs every variant on the pool until all are stored or Ctrl-C drained the pool. */
static void sweep_loop(CliSweep *sw)
{
    /* a shard runs its slice; each variant keeps its index in the whole sweep */
    guint lo = 0, hi = sw->n;
    sw->total = sw->n;
    sweep_shard_range(&sw->shard, sw->total, &lo, &hi);
    sw->first = lo;
    sw->n = hi - lo;
    sw->variants = g_new0(CliSweepVariant, MAX(sw->n, 1));
    for (guint i = 0; i < sw->n; i++) {
        CliSweepVariant *v = &sw->variants[i];
        v->sweep = sw;
        v->index = lo + i;
        v->run_id = -1;
        v->end_ns = -1;
        v->req.data = v;
    }
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
    uv_timer_init(&sw->loop, &sw->flush);
    sw->flush.data = sw;
    sw->tty = isatty(STDERR_FILENO);
    sw->t0 = g_get_monotonic_time();
    if (sw->tty && !sw->quiet)
        uv_timer_start(&sw->tick, tick_cb, 250, 250);
    if (!sw->quiet) {
        g_autofree char *shard = cli_sweep_shard_words(sw);
        g_autofree char *head = g_strdup_printf(
            "ranksim: sweep of %s: %s%u variant%s with -j %u, stored in %s", sw->in.path, shard,
            sw->n, sw->n == 1 ? "" : "s", sw->jobs, sw->db_path);
        text_fold_line(stderr, head, strlen(head), text_width());
    }
    progress_bar(sw);
    queue_next(sw);
    uv_run(&sw->loop, UV_RUN_DEFAULT);
    uv_loop_close(&sw->loop);
    progress_clear(sw);
}

/* The notes, then the table (or JSON, CSV); returns the exit status. */
static int sweep_finish(CliSweep *sw, const SweepOptions *o, int fail_on)
{
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

/* ---- --mpi: cmd-sweep-mpi.c runs the sweep with this file's storing and printing ---- */

typedef struct {
    const SweepOptions *o;
    int fail_on;
} MpiFinish;

static int mpi_finish(CliSweep *sw, void *data)
{
    const MpiFinish *f = data;
    return sweep_finish(sw, f->o, f->fail_on);
}

static void mpi_progress(CliSweep *sw, const CliSweepVariant *v)
{
    if (v)
        progress_line(sw, v);
    progress_bar(sw);
}

static int sweep_run_mpi(CliSweep *sw, const SweepOptions *o, int fail_on)
{
    MpiFinish f = {.o = o, .fail_on = fail_on};
    CliSweepMpiHooks hooks = {.store = store_variant,
                              .progress = mpi_progress,
                              .progress_clear = progress_clear,
                              .finish = mpi_finish,
                              .data = &f};
    return cli_sweep_mpi(sw, &hooks);
}

static int sweep_run(CliSweep *sw, SweepOptions *o)
{
    int fail_on = -1;
    if (!sweep_options_check(sw, o, &fail_on))
        return CLI_EXIT_INVALID;
    g_autoptr(GPtrArray) axes = NULL;
    g_autoptr(GArray) prefill = NULL;
    g_autoptr(GArray) decode = NULL;
    g_autofree char *text = NULL;
    if (!sweep_inputs(sw, o, &axes, &prefill, &decode, &text))
        return CLI_EXIT_INVALID;
    sw->quiet = o->quiet;
    sw->memory_detail = o->memory_detail;
    sw->db_path = o->db ? o->db : CLI_DEFAULT_DB;
    if (o->mpi)
        return sweep_run_mpi(sw, o, fail_on);
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) store = cli_store_open_write(sw->db_path, &err);
    if (!store) {
        cli_error("%s", err->message);
        return store_error_is_user(err) ? CLI_EXIT_INVALID : CLI_EXIT_INTERNAL;
    }
    sw->store = store;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    sw->notes = notes;
    sweep_loop(sw);
    return sweep_finish(sw, o, fail_on);
}
