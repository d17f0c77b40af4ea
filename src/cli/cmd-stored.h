/* src/cli/cmd-stored.h — what the commands that read stored runs share (report, runs,
 * explain, trace, diff, plot): their option parsing with --db, opening an existing database
 * and the runs named on the command line, a run's title, and the --json object of a command
 * that wrote a file. None of them simulates; each refuses to create a database.
 *
 * Exit codes (exit-codes.h): 0 the command did its job (whatever the stored run's outcome),
 * 2 bad arguments, an unknown run or a missing database, 1 the database or an output file
 * cannot be read or written. Functions that fail print the error (cli_error) first.
 */
#ifndef SRC_CLI_CMD_STORED_H
#define SRC_CLI_CMD_STORED_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

#include "../store/query.h"
#include "../store/store.h"

/* Parses the options of a read-only command: --db (into *db), then the command's own
 * `entries` (NULL: none). Returns false after printing the error (exit 2). */
bool cli_stored_parse(const char *params, const char *summary, char **db,
                      const GOptionEntry *entries, int *argc, char ***argv);

/* What a command opened: the database and the runs it loaded from it (owned). */
typedef struct {
    const char *db_path; /* borrowed: the --db value or CLI_DEFAULT_DB */
    Store *st;
    QueryRun *run[2];
} CliOpened;

void cli_opened_clear(CliOpened *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CliOpened, cli_opened_clear)

/* Opens the database `db` names (CLI_DEFAULT_DB when NULL), which must exist, then loads
 * runs `run_a` and `run_b` (each NULL: not wanted). Returns false after printing the error,
 * *code set; true with *code CLI_EXIT_OK. */
bool cli_stored_open(CliOpened *o, const char *db, const char *run_a, const char *run_b, int *code);

/* "run 12 (name)". Caller frees. */
char *cli_run_title(const QueryRun *r);
/* Whether the run was stored as `invalid` (its scenario was refused), and its config error. */
bool cli_run_is_invalid(const QueryRun *r);
const char *cli_run_invalid_message(const QueryRun *r);

/* `--json` of a command that wrote a file: an object opened with the run, the file (under
 * `key`) and its size; the caller adds its own members and prints it with
 * cli_print_json_object, which closes the object. */
JsonBuilder *cli_written_json(int64_t run_id, const char *key, const char *path);
void cli_print_json_object(JsonBuilder *jb);

#endif
