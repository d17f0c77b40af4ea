/* src/import/import-private.h — inside the import module: the NCCL log reader a line at a time.
 *
 * Private to src/import/: import-nccl.c reads NCCL_DEBUG=INFO lines; import-logs.c reads every
 * other line shape of a hang report (watchdog, CANN, vLLM, NCCL WARN) in the same pass over each
 * file and hands each line to import_nccl_line first. A reader in `excerpts` mode treats the
 * files as pieces of one log (a process may continue in the next file), reads COLL lines that
 * lost their HOST:PID:TID [DEV] prefix, and treats a malformed NCCL line as damage (skipped,
 * counted in one warning) rather than refusing the file.
 */
#ifndef SRC_IMPORT_PRIVATE_H
#define SRC_IMPORT_PRIVATE_H

#include "import.h"

typedef struct NcclReader NcclReader;
typedef struct NcclFile NcclFile;

/* A reader filling `s` (borrowed) from the files `paths` (borrowed, indexed by `file`). */
NcclReader *import_nccl_reader_new(ImportSet *s, const char *const *paths, bool excerpts);
void import_nccl_reader_free(NcclReader *r);
/* Starts file `file` (its position in read order `file_rank`); ends it (frees it). */
NcclFile *import_nccl_file_begin(NcclReader *r, guint file, guint file_rank, const char *path);
void import_nccl_file_end(NcclFile *f);
/* Reads one line [lp, le) (no newline): 0 not an NCCL line, 1 an NCCL INFO line (read), 2 an
 * NCCL WARN line (for the caller to read), 3 a malformed NCCL line of an excerpt (not read: the
 * caller may join it with the next line and try again, or give it up with import_nccl_damaged,
 * which counts it for a warning), -1 refused (`error` set). */
int import_nccl_line(NcclFile *f, const char *lp, const char *le, uint32_t line,
                     bool last_unterminated, GError **error);
void import_nccl_damaged(NcclFile *f, uint32_t line);
/* Joins communicators and, when `build`, places ranks and adds groups, ranks and entries to the
 * set with its warnings. False with `error` on logs of different jobs or a rank present twice. */
bool import_nccl_reader_finish(NcclReader *r, bool build, GError **error);
/* COLL lines read so far; the largest nranks among the communicators identified. */
uint64_t import_nccl_reader_coll_lines(const NcclReader *r);
int32_t import_nccl_reader_largest(const NcclReader *r);

/* The order text logs are read in: file indices 0..n-1 by path, then (the same path twice) by
 * their bytes, so any order of the same files reads the same. Caller unrefs (guint). */
GArray *import_file_order(const char *const *paths, const GBytes *const *data, guint n);

#endif
