/* src/util/outfile.c — outputs through temp + rename or in place; see outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct OutFile {
    char *path;
    char *tmp_path; /* NULL: written in place (or stdout) */
    FILE *f;
    bool is_stdout;
    int err;        /* first errno seen, 0 if none */
};

/* ---- temporary files removed on SIGINT, SIGTERM, SIGHUP ----
 *
 * A signal that kills the process would leave FILE.tmp-XXXXXX behind (`trace -o` of a big run
 * interrupted with Ctrl-C). While a temporary file exists its path sits in one of these slots;
 * the handler unlinks every path it finds (unlink is async-signal-safe), then restores the
 * default action and raises the signal again, so the process still dies of it. The handler is
 * installed once, and only over the default action (a command that handles SIGINT itself, as
 * sweep does through libuv, keeps its own). The slots are the one process-wide state here:
 * a signal handler has no other way to find the paths. More than TMP_SLOTS outputs at once are
 * written without this cover. */
#define TMP_SLOTS 8
static const char *volatile tmp_slots[TMP_SLOTS];

static void remove_tmp_on_signal(int sig)
{
    for (int i = 0; i < TMP_SLOTS; i++) {
        const char *p = tmp_slots[i];
        if (p)
            unlink(p);
    }
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void install_signal_cover(void)
{
    static gsize installed = 0;
    if (!g_once_init_enter(&installed))
        return;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_handler = remove_tmp_on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    g_once_init_leave(&installed, 1);
}

static void tmp_register(const char *path)
{
    install_signal_cover();
    for (int i = 0; i < TMP_SLOTS; i++)
        if (g_atomic_pointer_compare_and_exchange((gpointer *)&tmp_slots[i], NULL,
                                                  (gpointer)path))
            return;
}

static void tmp_unregister(const char *path)
{
    for (int i = 0; path && i < TMP_SLOTS; i++)
        if (g_atomic_pointer_compare_and_exchange((gpointer *)&tmp_slots[i], (gpointer)path,
                                                  NULL))
            return;
}

static bool fail(GError **error, const char *path, int err)
{
    if (err == 0)
        err = EIO;
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "cannot write %s: %s", path,
                g_strerror(err));
    return false;
}

OutFile *out_file_open(const char *path, GError **error)
{
    OutFile *o = g_new0(OutFile, 1);
    o->path = g_strdup(path);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        o->is_stdout = true;
        return o;
    }
    struct stat sb;
    bool exists = lstat(path, &sb) == 0;
    if (!exists && errno != ENOENT) {
        fail(error, path, errno);
        g_free(o->path);
        g_free(o);
        return NULL;
    }
    if (!exists || S_ISREG(sb.st_mode)) {
        o->tmp_path = g_strdup_printf("%s.tmp-XXXXXX", path);
        int fd = g_mkstemp_full(o->tmp_path, O_WRONLY | O_CLOEXEC, 0666);
        if (fd < 0) {
            fail(error, path, errno);
            g_free(o->tmp_path);
            g_free(o->path);
            g_free(o);
            return NULL;
        }
        tmp_register(o->tmp_path);
        /* The new file gets the old one's mode, or what a plain create would give. */
        mode_t mode;
        if (exists) {
            mode = sb.st_mode & 07777;
        } else {
            mode_t mask = umask(0);
            umask(mask);
            mode = 0666 & ~mask;
        }
        if (fchmod(fd, mode) != 0) { /* best effort */
        }
        o->f = fdopen(fd, "wb");
    } else {
        /* a symlink, device, FIFO or socket: in place, following the link */
        o->f = fopen(path, "wb");
    }
    if (!o->f) {
        int e = errno;
        if (o->tmp_path)
            g_unlink(o->tmp_path);
        tmp_unregister(o->tmp_path);
        fail(error, path, e);
        g_free(o->tmp_path);
        g_free(o->path);
        g_free(o);
        return NULL;
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 16);
    return o;
}

FILE *out_file_stream(OutFile *o)
{
    return o->f;
}

/* After the temporary file is renamed or removed: its path leaves the signal slots. */
static void out_file_free(OutFile *o)
{
    tmp_unregister(o->tmp_path);
    g_free(o->tmp_path);
    g_free(o->path);
    g_free(o);
}

bool out_file_close(OutFile *o, GError **error)
{
    bool ok = true;
    int err = 0;
    if (o->is_stdout) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            err = errno;
            ok = false;
        }
    } else {
        bool had_error = ferror(o->f) != 0;
        int e1 = errno;
        if (fclose(o->f) != 0 || had_error) {
            err = had_error ? e1 : errno;
            ok = false;
        }
    }
    if (ok && o->tmp_path && g_rename(o->tmp_path, o->path) != 0) {
        err = errno;
        ok = false;
    }
    if (!ok) {
        if (o->tmp_path)
            g_unlink(o->tmp_path);
        fail(error, o->is_stdout ? "to stdout" : o->path, err);
    }
    out_file_free(o);
    return ok;
}

void out_file_abort(OutFile *o)
{
    if (!o)
        return;
    if (o->is_stdout)
        fflush(stdout);
    else
        fclose(o->f);
    if (o->tmp_path)
        g_unlink(o->tmp_path);
    out_file_free(o);
}

bool out_file_write_all(const char *path, const char *data, size_t len, GError **error)
{
    OutFile *o = out_file_open(path, error);
    if (!o)
        return false;
    if (len && fwrite(data, 1, len, o->f) != len) {
        int e = errno;
        out_file_abort(o);
        return fail(error, strcmp(path, "-") == 0 ? "to stdout" : path, e);
    }
    return out_file_close(o, error);
}

bool out_file_flush_stdout(GError **error)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno ? errno : EIO;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "writing to stdout: %s",
                    g_strerror(e));
        return false;
    }
    return true;
}
