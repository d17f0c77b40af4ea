/* src/import/import-read.c — reading PATHS for `ranksim import`: directories expanded, each file read
 * through inputfile.c's checks, the format decided by content, the readers dispatched. */
#include "import.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/inputfile.h"
#include "lite.h"

/* ---- format detection ---- */

bool import_looks_fr(const guint8 *data, gsize len)
{
    if (!data)
        return false;
    if (len >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5)
        return true; /* PROTO 2..5 */
    gsize i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
        i++;
    if (i >= len || data[i] != '{')
        return false;
    /* JSON: the keys every dump has; with torch's sorted keys "entries" or "version" comes
     * early, so a bounded prefix decides. */
    gsize n = MIN(len, (gsize)1 << 16);
    return memmem(data, n, "\"pg_config\"", 11) != NULL ||
           memmem(data, n, "\"entries\"", 9) != NULL || memmem(data, n, "\"version\"", 9) != NULL;
}

bool import_looks_nccl(const guint8 *data, gsize len)
{
    if (!data)
        return false;
    gsize n = MIN(len, (gsize)1 << 20);
    return memmem(data, n, "NCCL INFO", 9) != NULL || memmem(data, n, "NCCL WARN", 9) != NULL;
}

/* ---- PATHS ---- */

static int cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expands a directory into its regular files (sorted; hidden files and a `.pipe` FR trigger are
 * skipped); a file stays itself. */
static bool expand(const char *path, GPtrArray *files, GArray *in_dir, GError **error)
{
    gboolean no = FALSE, yes = TRUE;
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_IO, "%s: no such file or directory", path);
        return false;
    }
    if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
        /* A FIFO, device or socket is refused here, before any reader (the streaming
         * prescan included) opens it: a FIFO would block, /dev/zero never end. */
        g_autoptr(GError) ke = NULL;
        if (!input_file_check(path, 0, &ke)) {
            g_set_error(error, IMPORT_ERROR,
                        g_error_matches(ke, INPUT_ERROR, INPUT_ERROR_OPEN) ? IMPORT_ERROR_IO
                                                                          : IMPORT_ERROR_INVALID,
                        "%s", ke->message);
            return false;
        }
        g_ptr_array_add(files, g_strdup(path));
        if (in_dir)
            g_array_append_val(in_dir, no);
        return true;
    }
    g_autoptr(GError) e = NULL;
    g_autoptr(GDir) d = g_dir_open(path, 0, &e);
    if (!d) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_IO, "%s: cannot list it: %s", path,
                    e->message);
        return false;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *n;
    while ((n = g_dir_read_name(d))) {
        if (n[0] == '.' || g_str_has_suffix(n, ".pipe"))
            continue;
        char *full = g_build_filename(path, n, NULL);
        if (g_file_test(full, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(names, full);
        else
            g_free(full);
    }
    g_ptr_array_sort(names, cmp_str);
    if (!names->len) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                    "%s: an empty directory: no Flight Recorder dump or log to import", path);
        return false;
    }
    for (guint i = 0; i < names->len; i++) {
        g_ptr_array_add(files, g_strdup(g_ptr_array_index(names, i)));
        if (in_dir)
            g_array_append_val(in_dir, yes);
    }
    return true;
}

static const char *format_word(ImportFormat f)
{
    switch (f) {
    case IMPORT_FORMAT_FR:
        return "fr";
    case IMPORT_FORMAT_NCCL:
        return "nccl";
    case IMPORT_FORMAT_HCCL:
        return "hccl";
    case IMPORT_FORMAT_WATCHDOG:
        return "watchdog";
    case IMPORT_FORMAT_CANN:
        return "cann";
    case IMPORT_FORMAT_VLLM:
        return "vllm";
    case IMPORT_FORMAT_LOGS:
        return "logs";
    case IMPORT_FORMAT_INSPECTOR:
        return "inspector";
    default:
        return "auto";
    }
}

/* One file's work, done on a pool thread: read, recognise, and parse a dump. */
typedef struct {
    const char *path;
    ImportFormat want; /* --format */
    ImportFormat fmt;  /* what it is */
    GBytes *bytes;     /* text logs: kept for the joint reader */
    bool unknown;      /* none of the formats (the error says what each reader needs) */
    bool not_nccl;     /* a text log holding a shape other than NCCL's */
    FrDump *dump;      /* Flight Recorder: parsed */
    GError *error;
    gint *done;        /* jobs finished, shared (atomic) */
    GAsyncQueue *docs; /* LiteDoc* scratch documents, one per worker, lent to each job */
    GMutex *mu;        /* streaming: `finished` is set under it, `cond` signalled */
    GCond *cond;
    bool finished;
} FileJob;

static void file_job_run(FileJob *j);

static void file_job(gpointer data, gpointer user)
{
    FileJob *j = data;
    file_job_run(j);
    g_atomic_int_inc(j->done);
    if (j->mu) {
        g_mutex_lock(j->mu);
        j->finished = true;
        g_cond_broadcast(j->cond);
        g_mutex_unlock(j->mu);
    }
}

static void file_job_run(FileJob *j)
{
    gsize len = 0;
    char *buf = input_file_read_bytes(j->path, 0, &len, &j->error);
    if (!buf) {
        j->error->domain = IMPORT_ERROR;
        j->error->code = IMPORT_ERROR_IO;
        return;
    }
    ImportFormat fmt = j->want;
    bool fr = import_looks_fr((const guint8 *)buf, len);
    if (fmt == IMPORT_FORMAT_AUTO || (fmt == IMPORT_FORMAT_HCCL && !fr)) {
        /* hccl: torch_npu's dump, or its watchdog lines (WorkHCCL) */
        if (fr)
            fmt = IMPORT_FORMAT_FR;
        else if (import_looks_inspector((const guint8 *)buf, len) ||
                 import_looks_ras((const guint8 *)buf, len))
            fmt = IMPORT_FORMAT_INSPECTOR;
        else if (import_looks_logs((const guint8 *)buf, len))
            fmt = IMPORT_FORMAT_LOGS;
        else {
            g_set_error(&j->error, IMPORT_ERROR, IMPORT_ERROR_INVALID, "%s: %s", j->path,
                        IMPORT_LOGS_NEEDS);
            j->unknown = true;
            g_free(buf);
            return;
        }
    }
    if (fmt == IMPORT_FORMAT_INSPECTOR) { /* read as a whole set: import-inspector.c */
        j->fmt = fmt;
        j->bytes = g_bytes_new_take(buf, len);
        return;
    }
    if (fmt != IMPORT_FORMAT_FR && fmt != IMPORT_FORMAT_HCCL) {
        j->fmt = IMPORT_FORMAT_LOGS; /* every text log takes one path: import-logs.c */
        j->not_nccl = import_looks_logs_not_nccl((const guint8 *)buf, len);
        j->bytes = g_bytes_new_take(buf, len);
        return;
    }
    j->fmt = fmt;
    /* A scratch document from the pool's set: its arenas, grown by the largest dump so far,
     * are reused instead of faulted in again for every dump. */
    LiteDoc *doc = g_async_queue_pop(j->docs);
    j->dump = import_fr_parse(j->path, (guint8 *)buf, len, doc, &j->error);
    g_async_queue_push(j->docs, doc);
    g_free(buf);
}

/* A folder people import holds more than dumps and logs (a README, the text, a
 * SOURCE.md): a file found in a folder that is none of the formats is left out, by name, as long
 * as some file is read; a file named on the command line is never left out. Compacts `jobs`
 * (*n of them) and `files` to the ones kept; returns the names left out. */
static GPtrArray *skip_strangers(FileJob *jobs, guint *n, GPtrArray *files, const GArray *in_dir)
{
    GPtrArray *skipped = g_ptr_array_new_with_free_func(g_free);
    guint known = 0;
    for (guint i = 0; i < *n; i++)
        known += !(jobs[i].unknown && g_array_index(in_dir, gboolean, i));
    if (!known)
        return skipped; /* nothing would be read: every file's error stands */
    GPtrArray *kept = g_ptr_array_new_with_free_func(g_free);
    guint k = 0;
    for (guint i = 0; i < *n; i++) {
        char *path = g_ptr_array_index(files, i);
        if (jobs[i].unknown && g_array_index(in_dir, gboolean, i)) {
            g_clear_error(&jobs[i].error);
            g_ptr_array_add(skipped, g_path_get_basename(path));
            continue;
        }
        g_ptr_array_add(kept, g_strdup(path));
        jobs[k] = jobs[i];
        jobs[k].path = g_ptr_array_index(kept, kept->len - 1);
        k++;
    }
    g_ptr_array_set_size(files, 0);
    for (guint i = 0; i < kept->len; i++)
        g_ptr_array_add(files, g_strdup(g_ptr_array_index(kept, i)));
    for (guint i = 0; i < k; i++)
        jobs[i].path = g_ptr_array_index(files, i);
    g_ptr_array_unref(kept);
    *n = k;
    return skipped;
}

ImportSet *import_read(const char *const *paths, guint n_paths, ImportFormat format, GError **error)
{
    return import_read_progress(paths, n_paths, format, NULL, NULL, error);
}

ImportSet *import_read_progress(const char *const *paths, guint n_paths, ImportFormat format,
                                ImportProgressFn progress, void *data, GError **error)
{
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) in_dir = g_array_new(FALSE, FALSE, sizeof(gboolean));
    for (guint i = 0; i < n_paths; i++)
        if (!expand(paths[i], files, in_dir, error))
            return NULL;
    if (!files->len) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID, "nothing to import: no PATH given");
        return NULL;
    }
    /* Read and parse on a pool (dumps are independent); merge below in file order, so the
     * result and the error reported do not depend on scheduling. */
    guint n = files->len;
    g_autofree FileJob *jobs = g_new0(FileJob, n);
    gint done = 0;
    guint threads = MIN(MAX(g_get_num_processors(), 1u), 8u);
    GAsyncQueue *docs = g_async_queue_new_full((GDestroyNotify)lite_free);
    for (guint i = 0; i < threads; i++)
        g_async_queue_push(docs, lite_doc_new());
    GThreadPool *pool =
        threads > 1 && n > 1 ? g_thread_pool_new(file_job, NULL, (gint)threads, FALSE, NULL) : NULL;
    for (guint i = 0; i < n; i++) {
        jobs[i].path = g_ptr_array_index(files, i);
        jobs[i].want = format;
        jobs[i].done = &done;
        jobs[i].docs = docs;
        if (pool)
            g_thread_pool_push(pool, &jobs[i], NULL);
        else
            file_job(&jobs[i], NULL);
    }
    if (pool) {
        while (progress && (guint)g_atomic_int_get(&done) < n) {
            progress(data, (guint)g_atomic_int_get(&done), n);
            g_usleep(100000);
        }
        g_thread_pool_free(pool, FALSE, TRUE);
    }
    if (progress)
        progress(data, n, n);
    g_async_queue_unref(docs); /* frees the documents */
    g_autoptr(GPtrArray) skipped = skip_strangers(jobs, &n, files, in_dir);

    g_autoptr(ImportSet) s = NULL;
    GError *first = NULL;
    ImportFormat seen = IMPORT_FORMAT_AUTO;
    const char *seen_path = NULL;
    for (guint i = 0; i < n && !first; i++) {
        FileJob *j = &jobs[i];
        if (j->error) {
            first = g_steal_pointer(&j->error);
            break;
        }
        if (seen == IMPORT_FORMAT_AUTO) {
            seen = j->fmt;
            seen_path = j->path;
        } else if ((seen == IMPORT_FORMAT_LOGS) != (j->fmt == IMPORT_FORMAT_LOGS) ||
                   (seen == IMPORT_FORMAT_INSPECTOR) != (j->fmt == IMPORT_FORMAT_INSPECTOR)) {
            g_set_error(&first, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                        "%s: a %s file among %s files (%s is one): import one kind at a time",
                        j->path, format_word(j->fmt), format_word(seen), seen_path);
        }
    }
    if (!first) {
        s = import_set_new(
            seen == IMPORT_FORMAT_FR && format == IMPORT_FORMAT_HCCL ? IMPORT_FORMAT_HCCL : seen);
        for (guint i = 0; i < n; i++)
            g_ptr_array_add(s->paths, g_strdup(jobs[i].path));
        for (guint i = 0; i < skipped->len; i++)
            import_set_warn(s, "%s: not a dump or log, left out (it was in the folder)",
                            (const char *)g_ptr_array_index(skipped, i));
        if (seen == IMPORT_FORMAT_LOGS || seen == IMPORT_FORMAT_INSPECTOR) {
            g_autofree const GBytes **bytes = g_new0(const GBytes *, n);
            bool excerpts = format != IMPORT_FORMAT_NCCL;
            bool other = format == IMPORT_FORMAT_LOGS;
            for (guint i = 0; i < n; i++) {
                bytes[i] = jobs[i].bytes;
                other = other || jobs[i].not_nccl;
            }
            if (!(seen == IMPORT_FORMAT_LOGS
                      ? import_logs_files(s, (const char *const *)files->pdata, bytes, n, format,
                                          excerpts && other, &first)
                      : import_inspector_files(s, (const char *const *)files->pdata, bytes, n,
                                               &first)))
                g_clear_pointer(&s, import_set_free);
        } else {
            for (guint i = 0; i < n && s; i++)
                if (!import_fr_merge(s, jobs[i].dump, format == IMPORT_FORMAT_HCCL, &first))
                    g_clear_pointer(&s, import_set_free);
        }
    }
    for (guint i = 0; i < n; i++) {
        g_clear_error(&jobs[i].error);
        if (jobs[i].bytes)
            g_bytes_unref(jobs[i].bytes);
        import_fr_dump_free(jobs[i].dump);
    }
    if (first) {
        g_propagate_error(error, first);
        return NULL;
    }
    return g_steal_pointer(&s);
}

/* ---- streaming: merge each dump as soon as it and those before it are parsed ---- */

/* The first `"time_created_ns": N` in the first 64 KiB of a JSON dump: its oldest entry's
 * enqueue time (torch lists a rank's entries oldest first). False when the file is not such a
 * dump (a pickle, a log, no time in the prefix). */
static bool prescan_first_time(const char *path, int64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* never blocks (a FIFO) */
    if (fd < 0)
        return false;
    char buf[65536 + 1];
    ssize_t n = 0;
    while (n < (ssize_t)sizeof buf - 1) {
        ssize_t k = read(fd, buf + n, sizeof buf - 1 - (size_t)n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += k;
    }
    close(fd);
    buf[MAX(n, 0)] = 0;
    if (n <= 0 || !import_looks_fr((const guint8 *)buf, (gsize)n) || (guint8)buf[0] == 0x80)
        return false;
    const char *k = memmem(buf, (size_t)n, "\"time_created_ns\"", 17);
    if (!k)
        return false;
    k += 17;
    while (*k == ' ' || *k == ':' || *k == '\t' || *k == '\n' || *k == '\r')
        k++;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(k, &end, 10);
    if (end == k || errno || v <= 0)
        return false;
    *out = (int64_t)v;
    return true;
}

ImportSet *import_read_stream(const char *const *paths, guint n_paths, ImportFormat format,
                              const ImportStreamFns *fns, void *user, bool *streamed,
                              GError **error)
{
    *streamed = false;
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < n_paths; i++)
        if (!expand(paths[i], files, NULL, error))
            return NULL;
    guint n = files->len;
    /* Streaming needs the set's earliest enqueue before the first rank is laid out: every
     * file a JSON dump whose first time the prefix shows. Otherwise the ordinary read. */
    int64_t t0 = INT64_MAX;
    bool ok = n > 1 && (format == IMPORT_FORMAT_AUTO || format == IMPORT_FORMAT_FR ||
                        format == IMPORT_FORMAT_HCCL);
    for (guint i = 0; ok && i < n; i++) {
        int64_t t = 0;
        ok = prescan_first_time(g_ptr_array_index(files, i), &t);
        t0 = MIN(t0, t);
    }
    if (!ok)
        return import_read_progress(paths, n_paths, format, fns->progress, user, error);
    *streamed = true;
    g_autoptr(ImportSet) s =
        import_set_new(format == IMPORT_FORMAT_HCCL ? IMPORT_FORMAT_HCCL : IMPORT_FORMAT_FR);
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(s->paths, g_strdup(g_ptr_array_index(files, i)));
    if (!fns->begin(user, s, t0, error))
        return NULL;
    g_autofree FileJob *jobs = g_new0(FileJob, n);
    gint done = 0;
    GMutex mu;
    GCond cond;
    g_mutex_init(&mu);
    g_cond_init(&cond);
    guint threads = MIN(MAX(g_get_num_processors(), 1u), 8u);
    GAsyncQueue *docs = g_async_queue_new_full((GDestroyNotify)lite_free);
    for (guint i = 0; i < threads; i++)
        g_async_queue_push(docs, lite_doc_new());
    GThreadPool *pool = g_thread_pool_new(file_job, NULL, (gint)threads, FALSE, NULL);
    for (guint i = 0; i < n; i++) {
        jobs[i] = (FileJob){.path = g_ptr_array_index(files, i),
                            .want = format,
                            .done = &done,
                            .docs = docs,
                            .mu = &mu,
                            .cond = &cond};
        g_thread_pool_push(pool, &jobs[i], NULL);
    }
    /* In file order, as the ordinary read merges: the set and the first error are the same
     * whatever order the pool finishes in. */
    GError *first = NULL;
    for (guint i = 0; i < n && !first; i++) {
        FileJob *j = &jobs[i];
        g_mutex_lock(&mu);
        while (!j->finished)
            g_cond_wait(&cond, &mu);
        g_mutex_unlock(&mu);
        if (fns->progress)
            fns->progress(user, i + 1, n);
        if (j->error) {
            first = g_steal_pointer(&j->error);
        } else if (j->fmt == IMPORT_FORMAT_LOGS || j->fmt == IMPORT_FORMAT_INSPECTOR) {
            g_set_error(&first, IMPORT_ERROR, IMPORT_ERROR_INVALID,
                        "%s: a %s file among %s files (%s is one): import one kind at a time",
                        j->path, format_word(j->fmt), format_word(IMPORT_FORMAT_FR),
                        (const char *)g_ptr_array_index(files, 0));
        } else {
            int32_t rank = import_fr_dump_rank(j->dump);
            if (import_fr_merge(s, j->dump, format == IMPORT_FORMAT_HCCL, &first))
                fns->rank(user, s, rank, &first);
        }
        import_fr_dump_free(j->dump);
        j->dump = NULL;
        if (j->bytes)
            g_clear_pointer(&j->bytes, g_bytes_unref);
    }
    /* after an error the queued dumps are not parsed */
    g_thread_pool_free(pool, first != NULL, TRUE);
    g_async_queue_unref(docs);
    for (guint i = 0; i < n; i++) {
        g_clear_error(&jobs[i].error);
        if (jobs[i].bytes)
            g_bytes_unref(jobs[i].bytes);
        import_fr_dump_free(jobs[i].dump);
    }
    g_mutex_clear(&mu);
    g_cond_clear(&cond);
    if (first) {
        g_propagate_error(error, first);
        return NULL;
    }
    return g_steal_pointer(&s);
}
