/* tests/fuzz/fuzz-logs.c — libFuzzer target: the text hang reports hold, read by import_logs_files
 * (src/import/import-logs.c, with import-nccl.c for NCCL lines), one file or several, as
 * excerpts of one log.
 *
 * Input: bytes, NUL bytes included. When it starts with a header line "==> NAME <==" (what
 * `head`/`tail` print for several files), each header starts a file named fuzz/NAME (at most
 * MAX_FILES; NAMEs may repeat); otherwise the whole input is one file, fuzz/rank0.log.
 *
 * Checks, on every input: failure <=> a GError with a one-line message; a set that holds
 * together (entries point at existing groups with seq >= 1, in line order, state STARTED or
 * UNKNOWN; group, root and peer ranks inside the set; a present rank has a path, an absent one
 * no entries and no PG status; findings and PG-status lines point at existing groups, their
 * texts valid UTF-8); and the same result with the files given in reverse order.
 */
#include "fuzz-common.h"

#include "../../src/import/import.h"

#define MAX_FILES 64

typedef struct {
    GPtrArray *paths; /* char* */
    GPtrArray *data;  /* GBytes* */
} Files;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static void add_file(Files *f, const uint8_t *name, size_t name_len, const uint8_t *data,
                     size_t len)
{
    GString *p = g_string_new("fuzz/");
    for (size_t i = 0; i < name_len && i < 64; i++)
        g_string_append_c(p, (name[i] > 0x20 && name[i] < 0x7f) ? (char)name[i] : '_');
    if (!name_len)
        g_string_append(p, "rank.log");
    g_ptr_array_add(f->paths, g_string_free(p, FALSE));
    g_ptr_array_add(f->data, g_bytes_new(data, len));
}

static void split_input(const uint8_t *data, size_t size, Files *f)
{
    if (size < 4 || memcmp(data, "==> ", 4) != 0) {
        add_file(f, (const uint8_t *)"rank0.log", 9, data, size);
        return;
    }
    size_t pos = 0;
    while (pos < size && f->paths->len < MAX_FILES) {
        /* at a header line */
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t hend = nl ? (size_t)(nl - data) : size;
        const uint8_t *name = data + pos + 4;
        size_t name_len = hend - pos - 4;
        if (name_len >= 4 && memcmp(name + name_len - 4, " <==", 4) == 0)
            name_len -= 4;
        size_t body = nl ? hend + 1 : size;
        /* up to the next header */
        size_t end = body;
        while (end < size) {
            if (size - end >= 5 && data[end] == '\n' && memcmp(data + end + 1, "==> ", 4) == 0) {
                end++;
                break;
            }
            end++;
        }
        add_file(f, name, name_len, data + body, end - body);
        pos = end;
    }
}

static void check_set(const ImportSet *s)
{
    guint n = s->ranks->len;
    for (guint g = 0; g < s->groups->len; g++) {
        const ImportGroup *gr = g_ptr_array_index(s->groups, g);
        if (!gr->name || !gr->name[0])
            abort();
        for (guint k = 0; k < gr->ranks->len; k++) {
            int32_t r = g_array_index(gr->ranks, int32_t, k);
            if (r < 0 || (guint)r >= n) {
                fprintf(stderr, "fuzz: group %s holds rank %d of %u\n", gr->name, r, n);
                abort();
            }
        }
    }
    for (guint r = 0; r < n; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        if (ir->rank != (int32_t)r || (ir->present != (ir->path != NULL)) ||
            (!ir->present && ir->entries->len)) {
            fprintf(stderr, "fuzz: rank %u is inconsistent\n", r);
            abort();
        }
        uint64_t last = 0;
        if (!ir->present && ir->pg_status->len)
            abort();
        for (guint i = 0; i < ir->pg_status->len; i++)
            if (g_array_index(ir->pg_status, ImportPgStatus, i).group >= s->groups->len)
                abort();
        for (guint i = 0; i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            if (e->group >= s->groups->len || e->seq < 1 || e->order < last ||
                e->kind >= SCHED_OP_KIND_COUNT || e->dtype >= SCHED_DTYPE_COUNT || !e->name ||
                !e->source || (e->root < -1 || e->root >= (int32_t)n) ||
                (e->peer < -1 || e->peer >= (int32_t)n) ||
                (e->state != IMPORT_STATE_UNKNOWN && e->state != IMPORT_STATE_STARTED)) {
                fprintf(stderr, "fuzz: rank %u entry %u is inconsistent (%s)\n", r, i,
                        e->source ? e->source : "?");
                abort();
            }
            last = e->order;
        }
    }
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        if (f->group < -1 || f->group >= (int32_t)s->groups->len || !f->text || !f->what ||
            !f->source || !g_utf8_validate(f->text, -1, NULL) || f->rank < -1 ||
            f->rank >= IMPORT_MAX_RANKS || f->peer < -1 || f->peer >= IMPORT_MAX_RANKS) {
            fprintf(stderr, "fuzz: finding %u is inconsistent\n", i);
            abort();
        }
    }
}

/* A text digest of a set, sources and warnings included (the file order must not show). */
static char *digest(const ImportSet *s)
{
    GString *d = g_string_new(s->format_detail);
    for (guint g = 0; g < s->groups->len; g++) {
        const ImportGroup *gr = g_ptr_array_index(s->groups, g);
        g_string_append_printf(d, "\ng %s %s", gr->name, gr->desc ? gr->desc : "-");
        for (guint k = 0; k < gr->ranks->len; k++)
            g_string_append_printf(d, " %d", g_array_index(gr->ranks, int32_t, k));
    }
    for (guint r = 0; r < s->ranks->len; r++) {
        const ImportRank *ir = g_ptr_array_index(s->ranks, r);
        g_string_append_printf(d, "\nr %u %d %s %s", r, ir->present, ir->path ? ir->path : "-",
                               ir->version ? ir->version : "-");
        for (guint i = 0; i < ir->entries->len; i++) {
            const ImportEntry *e = &g_array_index(ir->entries, ImportEntry, i);
            g_string_append_printf(d,
                                   "\n %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                                   " %d %d %d %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                                   " %d %d %s %s %" G_GINT64_FORMAT " %s",
                                   e->group, e->seq, e->order, e->kind, e->dtype, e->dtype_known,
                                   e->count, e->count_out, e->root, e->peer, e->name,
                                   e->dtype_name ? e->dtype_name : "-", e->created_ns, e->source);
        }
    }
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = &g_array_index(s->findings, ImportFinding, i);
        g_string_append_printf(d, "\nf %d %d %d %d %" G_GUINT64_FORMAT " %s %s %s", f->kind,
                               f->rank, f->peer, f->group, f->seq, f->what, f->source, f->text);
    }
    for (guint w = 0; w < s->warnings->len; w++)
        g_string_append_printf(d, "\nw %s", (const char *)g_ptr_array_index(s->warnings, w));
    return g_string_free(d, FALSE);
}

/* The set's digest, or "error: MESSAGE". */
static char *import(const Files *f)
{
    ImportSet *s = import_set_new(IMPORT_FORMAT_LOGS);
    GError *err = NULL;
    bool ok = import_logs_files(s, (const char *const *)f->paths->pdata,
                                (const GBytes *const *)f->data->pdata, f->paths->len,
                                IMPORT_FORMAT_AUTO, true, &err);
    fuzz_check_error("import_logs_files", ok, err);
    char *d;
    if (ok) {
        check_set(s);
        d = digest(s);
    } else {
        if (strchr(err->message, '\n') || err->domain != IMPORT_ERROR) {
            fprintf(stderr, "fuzz: not a one-line import error: %s\n", err->message);
            abort();
        }
        d = g_strdup_printf("error: %s", err->message);
        g_error_free(err);
    }
    import_set_free(s);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Files f = {g_ptr_array_new_with_free_func(g_free),
               g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref)};
    split_input(data, size, &f);
    char *a = import(&f);
    if (f.paths->len > 1) {
        for (guint i = 0, j = f.paths->len - 1; i < j; i++, j--) {
            gpointer t = f.paths->pdata[i];
            f.paths->pdata[i] = f.paths->pdata[j];
            f.paths->pdata[j] = t;
            t = f.data->pdata[i];
            f.data->pdata[i] = f.data->pdata[j];
            f.data->pdata[j] = t;
        }
        char *b = import(&f);
        if (strcmp(a, b) != 0) {
            fprintf(stderr,
                    "fuzz: the file order changed the result:\n--- given\n%s\n--- "
                    "reversed\n%s\n",
                    a, b);
            abort();
        }
        g_free(b);
    }
    g_free(a);
    g_ptr_array_unref(f.paths);
    g_ptr_array_unref(f.data);
    return 0;
}
