/* src/store/store-stage.c — a run streamed from the engine while it simulates (store_run_begin,
 * store_run_record, store_run_finish); see store.h.
 *
 * Design note (doc/reliability.md has the promises): a run never holds the database's write
 * lock while it simulates. Its op records stream from the engine to a writer thread that
 * appends them, raw, to a private staging file (created in g_get_tmp_dir() and unlinked at
 * once, so a killed run leaves nothing behind). When the outcome is known, store_run_finish
 * hands everything to store_commit_run (store-run.c), which writes the run in ONE short
 * transaction, op rows read back from the staging file. A second writer waits only for such a
 * commit; readers (WAL) never wait.
 *
 * Costs: with shared time lines (the default) each record is hashed on the engine's thread as
 * it arrives (store_timelines_add_one) and only a record no rank has made before is staged:
 * ranks that run the same ops at the same times share one copy. Rows per rank
 * (RANKSIM_OPS_PER_RANK) stage every record. Staging is a sequential write of 64 B per staged
 * record (page cache); memory stays bounded (MAX_CHUNKS chunks) whatever the run length.
 */
#include "store-private.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <uv.h>

/* Records per chunk and chunks in flight: 4 x 16384 x 64 B = 4 MiB at most, whatever the run
 * length. */
#define CHUNK_RECORDS 16384
#define MAX_CHUNKS 4

typedef struct Chunk {
    struct Chunk *next;
    uint32_t n;
    SchedRecord recs[CHUNK_RECORDS];
} Chunk;

/* A chunk in one transparent huge page where the kernel gives one: its first use is then one
 * page fault, not 288 (a served run's time line faulted ~1,150 times on its 4 chunks, perf). */
#define CHUNK_ALIGN ((size_t)2 << 20)
_Static_assert(sizeof(Chunk) <= CHUNK_ALIGN, "a chunk fits in a huge page");

static Chunk *chunk_new(void)
{
    void *p = NULL;
    if (posix_memalign(&p, CHUNK_ALIGN, CHUNK_ALIGN) != 0)
        g_error("out of memory (a 2 MiB staging chunk)");
#ifdef MADV_HUGEPAGE
    madvise(p, CHUNK_ALIGN, MADV_HUGEPAGE); /* advice: without it, ordinary pages */
#endif
    return p;
}

static void chunk_free(Chunk *c)
{
    free(c);
}

struct StoreRun {
    Store *store;
    /* what the run row needs, copied at begin: info's strings point into `strings` */
    StoreRunInfo info;
    GStringChunk *strings;
    char *created_at;
    GPtrArray *not_simulated; /* char*, copied (may be NULL) */
    GPtrArray *names;         /* char*, the program's name table, copied */
    /* staging */
    int fd;            /* unlinked temp file of raw SchedRecords; -1 until the first chunk */
    uint64_t n_staged; /* records written to fd */
    uv_thread_t thread;
    bool thread_started;
    uv_mutex_t mu;
    uv_cond_t cv_work;
    uv_cond_t cv_free;
    Chunk *queue_head, *queue_tail;
    Chunk *free_list;
    uint32_t n_chunks;
    bool closing;
    Chunk *cur;
    char *writer_error;         /* first error seen by the writer, under mu */
    const ModelMemPlan *memory; /* borrowed, may be NULL */
    StoreTimelines *lines;      /* hashed on the engine's thread; NULL: rows per rank */
    uint64_t n_records;         /* records handed to store_run_record */
};

/* ---- the staging writer ---- */

/* Appends a chunk to the staging file (opened on first use). Returns NULL or an error text. */
static char *stage_chunk(StoreRun *r, const Chunk *c)
{
    if (r->fd < 0) {
        g_autoptr(GError) err = NULL;
        g_autofree char *name = NULL;
        r->fd = g_file_open_tmp("ranksim-run-XXXXXX.stage", &name, &err);
        if (r->fd < 0)
            return g_strdup_printf("cannot create the run's staging file in %s: %s",
                                   g_get_tmp_dir(), err->message);
        g_unlink(name); /* private: gone with the process, whatever happens */
    }
    const char *p = (const char *)c->recs;
    size_t left = (size_t)c->n * sizeof(SchedRecord);
    while (left) {
        ssize_t k = write(r->fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return g_strdup_printf("writing the run's staging file in %s: %s", g_get_tmp_dir(),
                                   g_strerror(errno));
        p += k;
        left -= (size_t)k;
    }
    r->n_staged += c->n;
    return NULL;
}

static void writer_main(void *arg)
{
    StoreRun *r = arg;
    for (;;) {
        uv_mutex_lock(&r->mu);
        while (!r->queue_head && !r->closing)
            uv_cond_wait(&r->cv_work, &r->mu);
        Chunk *c = r->queue_head;
        if (!c) {
            uv_mutex_unlock(&r->mu);
            return;
        }
        r->queue_head = c->next;
        if (!r->queue_head)
            r->queue_tail = NULL;
        bool failed = r->writer_error != NULL;
        uv_mutex_unlock(&r->mu);

        char *why = failed ? NULL : stage_chunk(r, c);

        uv_mutex_lock(&r->mu);
        if (why && !r->writer_error)
            r->writer_error = why;
        else
            g_free(why);
        c->n = 0;
        c->next = r->free_list;
        r->free_list = c;
        uv_cond_signal(&r->cv_free);
        uv_mutex_unlock(&r->mu);
    }
}

static void run_free(StoreRun *r)
{
    if (r->fd >= 0)
        close(r->fd);
    g_string_chunk_free(r->strings);
    g_free(r->created_at);
    if (r->not_simulated)
        g_ptr_array_unref(r->not_simulated);
    if (r->names)
        g_ptr_array_unref(r->names);
    g_free(r->writer_error);
    store_timelines_free(r->lines);
    g_free(r);
}

StoreRun *store_run_begin(Store *s, const StoreRunInfo *info, const SchedProgram *p, GError **error)
{
    g_return_val_if_fail(!s->readonly, NULL);
    StoreRun *r = g_new0(StoreRun, 1);
    r->store = s;
    r->fd = -1;
    r->strings = g_string_chunk_new(256);
    GStringChunk *k = r->strings;
    r->info = (StoreRunInfo){
        .name = info->name ? g_string_chunk_insert(k, info->name) : NULL,
        .kind = info->kind ? g_string_chunk_insert(k, info->kind) : NULL,
        .path = info->path ? g_string_chunk_insert(k, info->path) : NULL,
        .scenario = info->scenario ? g_string_chunk_insert(k, info->scenario) : NULL,
        .timeline = info->timeline ? g_string_chunk_insert(k, info->timeline) : NULL,
        .hardware = info->hardware ? g_string_chunk_insert(k, info->hardware) : NULL,
        .serve = info->serve,
        .model = info->model ? g_string_chunk_insert(k, info->model) : NULL,
        .layout = info->layout ? g_string_chunk_insert(k, info->layout) : NULL,
        .vllm = info->vllm ? g_string_chunk_insert(k, info->vllm) : NULL,
        .overrides = info->overrides ? g_string_chunk_insert(k, info->overrides) : NULL,
        .sweep_id = info->sweep_id,
    };
    if (info->not_simulated) {
        r->not_simulated = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < info->not_simulated->len; i++)
            g_ptr_array_add(r->not_simulated, g_strdup(g_ptr_array_index(info->not_simulated, i)));
        r->info.not_simulated = r->not_simulated;
    }
    r->created_at = store_now_iso8601();
    r->names = store_copy_names(p);
    r->lines = s->per_rank ? NULL : store_timelines_new(p);
    uv_mutex_init(&r->mu);
    uv_cond_init(&r->cv_work);
    uv_cond_init(&r->cv_free);
    r->cur = chunk_new();
    r->cur->n = 0;
    r->cur->next = NULL;
    r->n_chunks = 1;
    if (uv_thread_create(&r->thread, writer_main, r) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: cannot start the writer thread",
                    s->path);
        store_run_abort(r);
        return NULL;
    }
    r->thread_started = true;
    return r;
}

/* Hands the current chunk to the writer and takes an empty one (waiting while MAX_CHUNKS are
 * in flight). */
static void submit_chunk(StoreRun *r)
{
    Chunk *c = r->cur;
    uv_mutex_lock(&r->mu);
    c->next = NULL;
    if (r->queue_tail)
        r->queue_tail->next = c;
    else
        r->queue_head = c;
    r->queue_tail = c;
    uv_cond_signal(&r->cv_work);
    while (!r->free_list && r->n_chunks >= MAX_CHUNKS)
        uv_cond_wait(&r->cv_free, &r->mu);
    Chunk *next = r->free_list;
    if (next) {
        r->free_list = next->next;
    } else {
        next = chunk_new();
        r->n_chunks++;
    }
    uv_mutex_unlock(&r->mu);
    next->n = 0;
    next->next = NULL;
    r->cur = next;
}

void store_run_record(void *run, const SchedRecord *rec)
{
    StoreRun *r = run;
    r->n_records++;
    if (!r->lines)
        r->cur->recs[r->cur->n] = *rec;
    else if (!store_timelines_add_one(r->lines, rec, &r->cur->recs[r->cur->n]))
        return; /* a record some rank made before: nothing to stage */
    if (++r->cur->n == CHUNK_RECORDS)
        submit_chunk(r);
}

StoreTimelinesSize store_run_size(StoreRun *r)
{
    if (r->lines)
        return store_timelines_size(r->lines);
    return (StoreTimelinesSize){.records = r->n_records, .rows = r->n_records,
                                .staged = r->n_records};
}

void store_run_set_progress(StoreRun *r, StoreProgressFn fn, void *data)
{
    if (r->lines)
        store_timelines_set_progress(r->lines, fn, data);
}

/* Flushes the last chunk, stops the writer and frees the chunks. Returns the writer's error
 * (caller frees) or NULL. */
static char *stop_writer(StoreRun *r)
{
    if (r->thread_started) {
        if (r->cur && r->cur->n)
            submit_chunk(r);
        uv_mutex_lock(&r->mu);
        r->closing = true;
        uv_cond_signal(&r->cv_work);
        uv_mutex_unlock(&r->mu);
        uv_thread_join(&r->thread);
        r->thread_started = false;
    }
    chunk_free(r->cur);
    r->cur = NULL;
    while (r->free_list) {
        Chunk *c = r->free_list;
        r->free_list = c->next;
        chunk_free(c);
    }
    while (r->queue_head) { /* only if the thread never ran */
        Chunk *c = r->queue_head;
        r->queue_head = c->next;
        chunk_free(c);
    }
    uv_mutex_destroy(&r->mu);
    uv_cond_destroy(&r->cv_work);
    uv_cond_destroy(&r->cv_free);
    return g_steal_pointer(&r->writer_error);
}

void store_run_set_memory(StoreRun *r, const ModelMemPlan *m)
{
    r->memory = m;
}

void store_run_set_serve(StoreRun *r, const ModelServe *serve)
{
    if (!r->info.serve)
        r->info.serve = serve;
}

void store_run_abort(StoreRun *r)
{
    if (!r)
        return;
    g_free(stop_writer(r));
    run_free(r);
}

int64_t store_run_finish(StoreRun *r, const SchedOutcome *o, const char *status, int exit_code,
                         double wall_ms, GError **error)
{
    Store *s = r->store;
    g_autofree char *werr = stop_writer(r);
    int64_t id = -1;
    if (werr) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", s->path, werr);
    } else {
        StoreRecordSource src = {NULL, 0, r->fd, r->n_staged};
        id = store_commit_run(s, &r->info, r->created_at, r->names, &src, r->lines, o, r->memory, status,
                        exit_code, wall_ms, error);
    }
    run_free(r);
    return id;
}
