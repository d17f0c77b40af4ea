/* src/cli/cli.h — the `ranksim` command line: the dispatcher (cli.c) that picks a subcommand
 * (commands.h), answers --help and --version, and turns a failed write to stdout into exit 1.
 * Exit codes: exit-codes.h.
 */
#ifndef SRC_CLI_H
#define SRC_CLI_H

/* Runs the command line; returns the process exit code. */
int cli_main(int argc, char **argv);

#endif
