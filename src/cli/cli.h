/* src/cli/cli.h — the `ranksim` command line: subcommand dispatch, options, exit codes.
 *
 * Exit codes (a contract, doc/scenario-format.md): 0 the simulated cluster is healthy;
 * 2 invalid input (scenario, options); 3 the simulated cluster fails (any error diagnostic);
 * 1 internal or environment error (e.g. the database cannot be written).
 */
#ifndef SRC_CLI_H
#define SRC_CLI_H

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_INTERNAL = 1,
    CLI_EXIT_INVALID = 2,
    CLI_EXIT_FAILED = 3,
};

/* Runs the command line; returns the process exit code. */
int cli_main(int argc, char **argv);

/* The subcommands other than `run`, each with its own GOptionContext: `argv[0]` is the
 * command name, the rest its arguments. Each returns the process exit code. */
int cli_sweep(int argc, char **argv);   /* src/cli/cmd-sweep.c */
int cli_report(int argc, char **argv);  /* src/cli/cmd-query.c */
int cli_runs(int argc, char **argv);    /* src/cli/cmd-query.c */
int cli_explain(int argc, char **argv); /* src/cli/cmd-query.c */
int cli_trace(int argc, char **argv);   /* src/cli/cmd-query.c */
int cli_plot(int argc, char **argv);    /* src/cli/cmd-query.c */
int cli_prune(int argc, char **argv);   /* src/cli/cmd-prune.c */
int cli_diff(int argc, char **argv);    /* src/cli/cmd-query.c */
int cli_list(int argc, char **argv);    /* src/cli/cmd-list.c */
int cli_import(int argc, char **argv);  /* src/cli/cmd-import.c */
int cli_match(int argc, char **argv);   /* src/cli/cmd-match.c */

#endif
