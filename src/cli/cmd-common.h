/* src/cli/cmd-common.h — what the subcommands share: the default database, one error format
 * ("ranksim: error: ..." on stderr), --timeline and --prefill/--decode parsing, and opening an
 * existing results database for the read-only commands (report, runs, explain, trace, diff).
 *
 * Exit codes are exit-codes.h's: a user error (bad option, unknown run, missing database) is
 * 2, an environment error (the database cannot be read) is 1.
 */
#ifndef SRC_CMD_COMMON_H
#define SRC_CMD_COMMON_H

#include <glib.h>
#include <stdint.h>

#include "../../sched/engine.h"
#include "../input/scenario.h"
#include "../store/store.h"

#define CLI_DEFAULT_DB "results/ranksim.db"

/* Prints "ranksim: error: MESSAGE" on stderr, on one line: newlines, tabs and control
 * characters in MESSAGE are escaped (input_escape). */
void cli_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* "none" | "collectives" | "full" -> *out. Returns false for anything else. */
bool cli_timeline_parse(const char *s, SchedTimeline *out);
const char *cli_timeline_name(SchedTimeline t);

/* Appends --prefill N values (prompt lengths, 1..10,000,000) to *prefill and --decode B:CTX
 * values (B copies of CTX) to *decode, creating the arrays (uint32) when needed. --prefill
 * N@C (N new tokens after C cached ones, 0..10,000,000: a later chunk of a chunked prefill)
 * appends C to *prefill_ctx, one entry per --prefill (0 for a plain N); with `prefill_ctx`
 * NULL (a command that takes no cached context) N@C with C > 0 is refused. Either flag list
 * may be NULL. Returns false with a SCENARIO_ERROR naming the flag on a malformed value. */
bool cli_workload_parse(char **prefill_flags, char **decode_flags, GArray **prefill,
                        GArray **prefill_ctx, GArray **decode, GError **error);

/* The input-file rules (src/util/inputfile.h: a regular file, within the size limit) for the files
 * named on the command line, before a loader reads them: the scenario (may be NULL) and
 * --hardware when it is a path (contains '/' or ends in .yaml / .yml; may be NULL). A FIFO,
 * device or directory is refused at once instead of blocking or growing memory. Returns false
 * with a one-line INPUT_ERROR. */
bool cli_input_paths_check(const char *scenario, const char *hardware, GError **error);

/* The name of a run with overrides: `base[k=v, k2=v2]` for the assignments "dotted.key=value"
 * (NULL-terminated; may be NULL), each key by its last component and a path value by its
 * basename (`engine.attention_backend=FLASHMLA_SPARSE` -> `attention_backend=FLASHMLA_SPARSE`,
 * `model=/x/config.json` -> `model=config.json`); `base` alone without any. Caller frees. */
char *cli_run_name(const char *base, const char *const *assignments);
/* The bracket's contents alone ("attention_backend=FLASHINFER_MLA_SPARSE, prefill=633"), or
 * NULL without assignments. Caller frees. */
char *cli_overrides_text(const char *const *assignments);

/* --max-rank-ops VALUE: a count 0 (no limit) .. 2^64-1; NULL gives the default
 * (RUNNER_DEFAULT_MAX_RANK_OPS). Returns false with a SCENARIO_ERROR naming the flag. */
bool cli_max_rank_ops_parse(const char *value, uint64_t *out, GError **error);

/* Opens the database at `path` for writing (store_open) with a wait notice: when another
 * ranksim holds the write lock for a while, "ranksim: note: ..." on stderr says so. NULL with
 * `error` set on failure. */
Store *cli_store_open_write(const char *path, GError **error);

/* Opens the database at `path` read-only (store_open_readonly: never writes, never waits for
 * a writer). A missing, foreign or newer file is a user error (exit 2); a file that cannot be
 * read is exit 1. Returns NULL after printing the error and setting *exit_code. */
Store *cli_store_open_existing(const char *path, int *exit_code);

/* Opens the database and resolves the RUN argument ("12" or "latest"). Returns the run id, or
 * -1 after printing the error and setting *exit_code (2 for an unknown run or a bad RUN, 1
 * when the database cannot be read). */
int64_t cli_run_resolve(Store *st, const char *arg, int *exit_code);

#endif
