/* src/util/outfile.h — writing an output file (--dot, --trace, trace -o) without clobbering.
 *
 * A regular file or an absent path is written through a temporary file in the same folder and
 * renamed over the target only once everything was written and closed: a failed write leaves
 * the old file as it was, never a half file. Anything else is written in place: a symlink
 * stays a symlink (its target is rewritten), a device (/dev/null, /dev/stdout) or a FIFO stays
 * what it is. "-" is stdout. Every write error — stdout's included — is reported with the
 * path and strerror.
 *
 * SIGINT, SIGTERM or SIGHUP while a temporary file exists removes it before the process dies
 * of the signal (unless the program handles that signal itself), so an interrupted
 * `trace -o FILE` leaves neither FILE changed nor FILE.tmp-XXXXXX.
 *
 * Costs: one lstat, one temp file and one rename per output; no copy of the data.
 */
#ifndef SRC_OUTFILE_H
#define SRC_OUTFILE_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct OutFile OutFile;

/* Opens `path` ("-": stdout) for writing as above. Returns NULL with a G_IO_ERROR ("cannot
 * write PATH: reason"). */
OutFile *out_file_open(const char *path, GError **error);
/* The stream to write to (buffered). */
FILE *out_file_stream(OutFile *o);
/* Flushes and closes; renames the temporary file into place. Returns false with the first
 * write error (the temporary file is removed, the target untouched). Frees `o`. */
bool out_file_close(OutFile *o, GError **error);
/* Gives up: removes the temporary file (an in-place target keeps what was written). Frees
 * `o`. */
void out_file_abort(OutFile *o);

/* Writes `len` bytes of `data` to `path` through out_file_*. */
bool out_file_write_all(const char *path, const char *data, size_t len, GError **error);

/* Flushes stdout; false with "writing to stdout: reason" when any write to it failed. */
bool out_file_flush_stdout(GError **error);

#endif
