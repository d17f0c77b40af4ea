/* tests/src/run-binary.h — runs the built `ranksim` (RANKSIM_BINARY) and captures its exit code,
 * stdout and stderr; shared by the CLI, sweep and query tests. Header-only (static functions). */
#ifndef TESTS_SRC_RUN_BINARY_H
#define TESTS_SRC_RUN_BINARY_H

#include <criterion/criterion.h>
#include <glib.h>
#include <sys/wait.h>

typedef struct {
    int code;
    char *out;
    char *err;
} Result;

/* Runs `ranksim ARGS...` (NULL-terminated) to completion; asserts it exited normally. */
static inline Result ranksim(const char *const *args)
{
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)RANKSIM_BINARY);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (gpointer)*a);
    g_ptr_array_add(argv, NULL);
    Result r = {0};
    GError *err = NULL;
    int status = 0;
    /* Reports fold at the terminal's width (80 when unknown); the tests read whole lines, so
     * they run wide unless a test says otherwise (COLUMNS in the environment). */
    g_auto(GStrv) env = g_get_environ();
    if (!g_environ_getenv(env, "COLUMNS"))
        env = g_environ_setenv(env, "COLUMNS", "100000", TRUE);
    gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, &r.out,
                               &r.err, &status, &err);
    cr_assert(ok, "spawn: %s", err ? err->message : "");
    cr_assert(WIFEXITED(status), "ranksim did not exit normally (status %d): %s", status, r.err);
    r.code = WEXITSTATUS(status);
    g_ptr_array_free(argv, TRUE);
    return r;
}

static inline void result_clear(Result *r)
{
    g_free(r->out);
    g_free(r->err);
}

#define SCN(name) RANKSIM_SOURCE_DIR "/scenarios/" name

#endif
