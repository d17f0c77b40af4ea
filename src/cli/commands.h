/* src/cli/commands.h — the entry point of each `ranksim` subcommand, for the dispatcher
 * (cli.c). Each command file defines its own and includes this header so the compiler checks
 * the signature; none calls another's. Each parses its own options with a GOptionContext:
 * `argv[0]` is the command name, the rest its arguments. Each prints what it has to say and
 * returns the process exit code (exit-codes.h).
 */
#ifndef SRC_CLI_COMMANDS_H
#define SRC_CLI_COMMANDS_H

#include "exit-codes.h"

int cli_run(int argc, char **argv);     /* src/cli/cmd-run.c */
int cli_sweep(int argc, char **argv);   /* src/cli/cmd-sweep.c */
int cli_report(int argc, char **argv);  /* src/cli/cmd-report.c */
int cli_runs(int argc, char **argv);    /* src/cli/cmd-runs.c */
int cli_explain(int argc, char **argv); /* src/cli/cmd-explain.c */
int cli_trace(int argc, char **argv);   /* src/cli/cmd-trace.c */
int cli_plot(int argc, char **argv);    /* src/cli/cmd-plot.c */
int cli_prune(int argc, char **argv);   /* src/cli/cmd-prune.c */
int cli_merge(int argc, char **argv);   /* src/cli/cmd-merge.c */
int cli_diff(int argc, char **argv);    /* src/cli/cmd-diff.c */
int cli_list(int argc, char **argv);    /* src/cli/cmd-list.c */
int cli_import(int argc, char **argv);  /* src/cli/cmd-import.c */
int cli_match(int argc, char **argv);   /* src/cli/cmd-match.c */
int cli_cost(int argc, char **argv);    /* src/cli/cmd-cost.c */
int cli_nccl_tests(int argc, char **argv); /* src/cli/cmd-nccl-tests.c */

#endif
