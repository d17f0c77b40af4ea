/* src/util/inputfile.h — reading an input file (scenario, hardware, model config) the one safe way,
 * and rendering user text on one line.
 *
 * input_file_read() accepts only a regular file (a directory, FIFO, device or socket is refused
 * with what it is: `hardware: /dev/zero` cannot grow memory, a FIFO cannot block, since the file
 * is opened O_NONBLOCK and checked with fstat before any read), at most the input size limit
 * (input_max_bytes(): 16 MiB unless RANKSIM_MAX_INPUT_BYTES says otherwise), and only UTF-8
 * text (a byte-order mark, UTF-16/32 or invalid UTF-8 is refused with the reason and where).
 *
 * Costs: one open, one fstat, reads of at most the limit plus one byte, one UTF-8 pass.
 */
#ifndef SRC_INPUTFILE_H
#define SRC_INPUTFILE_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

#define INPUT_ERROR (input_error_quark())
GQuark input_error_quark(void);

typedef enum {
    INPUT_ERROR_OPEN,        /* missing, unreadable (the message has strerror) */
    INPUT_ERROR_NOT_REGULAR, /* a directory, FIFO, device or socket */
    INPUT_ERROR_TOO_BIG,     /* over the input size limit */
    INPUT_ERROR_ENCODING,    /* not UTF-8 text */
    INPUT_ERROR_LIMIT,       /* RANKSIM_MAX_INPUT_BYTES is malformed */
} InputErrorCode;

/* The default input size limit (16 MiB) and the environment variable that overrides it. */
#define INPUT_DEFAULT_MAX_BYTES ((gsize)16 << 20)
#define INPUT_MAX_BYTES_ENV "RANKSIM_MAX_INPUT_BYTES"

/* The input size limit: RANKSIM_MAX_INPUT_BYTES (a byte count, 1 .. 2^40) or the default.
 * Returns 0 with INPUT_ERROR_LIMIT when the variable is malformed. */
gsize input_max_bytes(GError **error);

/* Reads `path` whole (NUL-terminated; *len without the NUL, `len` may be NULL). `max_bytes` 0
 * means input_max_bytes(). Returns NULL with an INPUT_ERROR whose one-line message starts with
 * the path. Caller frees. */
char *input_file_read(const char *path, gsize max_bytes, gsize *len, GError **error);

/* input_file_read without the text checks, for binary inputs (pickled Flight Recorder dumps):
 * the same file-kind and size checks; the bytes are NUL-terminated but may hold NULs. */
char *input_file_read_bytes(const char *path, gsize max_bytes, gsize *len, GError **error);

/* The reason part of an input_file_read error about `path`: the message without its leading
 * "PATH: " (static storage of `e`; valid while `e` lives). */
const char *input_reason(const GError *e, const char *path);

/* The checks of input_file_read without the read: `path` opens, is a regular file and within
 * the limit. For paths read by code that does its own reading. Returns false with the error. */
bool input_file_check(const char *path, gsize max_bytes, GError **error);

/* Why `text` (`len` bytes) is not UTF-8 text without a byte-order mark and NUL bytes, or NULL
 * when it is; *offset is where (0 for a BOM). Caller frees. */
char *input_utf8_problem(const char *text, gsize len, gsize *offset);
/* The same as an INPUT_ERROR_ENCODING "WHAT:LINE: reason" error. */
bool input_check_utf8(const char *what, const char *text, gsize len, GError **error);

/* `text` on one line for messages: newlines, tabs and control characters escaped (\n, \t,
 * \x1b), cut after `max_chars` characters with "..." (0: no cut). Caller frees. */
char *input_escape(const char *text, size_t max_chars);

#endif
