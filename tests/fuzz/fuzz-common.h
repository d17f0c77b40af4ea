/* tests/fuzz/fuzz-common.h — what every libFuzzer target shares (doc/fuzzing.md).
 *
 * GLib criticals and warnings abort (a g_return_if_fail on user input is a bug the fuzzer
 * should report, not a line on stderr); reports and graphs are written to /dev/null; the
 * loaders' contract "NULL/false <=> an error is set" is checked on every input.
 */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most rank-ops (repeats expanded) one input may simulate: keeps each execution in the
 * milliseconds (the engine does about 40 M rank-ops/s) whatever the input asks for. */
#define FUZZ_MAX_RANK_OPS UINT64_C(200000)

static FILE *fuzz_devnull;

static void fuzz_log_abort(const gchar *domain, GLogLevelFlags level, const gchar *message,
                           gpointer data)
{
    if (!(level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))) {
        g_log_default_handler(domain, level, message, data);
        return;
    }
    fprintf(stderr, "fuzz: GLib %s from %s: %s\n",
            (level & G_LOG_LEVEL_WARNING) ? "warning" : "critical/error", domain ? domain : "-",
            message);
    abort();
}

static inline void fuzz_init(void)
{
    fuzz_devnull = fopen("/dev/null", "w");
    if (!fuzz_devnull)
        abort();
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    g_log_set_default_handler(fuzz_log_abort, NULL);
    /* Inputs read from files by a scenario (model: PATH, hardware: PATH) stay small. */
    g_setenv("RANKSIM_MAX_INPUT_BYTES", "1048576", TRUE);
}

/* The input as a NUL-terminated string, or NULL when it holds a NUL byte (the file readers
 * refuse those before any loader sees them, so they are no input a loader can get). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    if (memchr(data, 0, size))
        return NULL;
    return g_strndup((const char *)data, size);
}

/* A loader returned `ok`; its GError must be set exactly when it failed, with a message. */
static inline void fuzz_check_error(const char *what, gboolean ok, const GError *err)
{
    if (ok && err) {
        fprintf(stderr, "fuzz: %s succeeded but set an error: %s\n", what, err->message);
        abort();
    }
    if (!ok && (!err || !err->message || !err->message[0])) {
        fprintf(stderr, "fuzz: %s failed without an error message\n", what);
        abort();
    }
}

#endif
