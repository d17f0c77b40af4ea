/* src/cli/exit-codes.h — the exit status of every `ranksim` command (a contract,
 * doc/scenario-format.md): 0 the simulated cluster is healthy; 2 invalid input (scenario,
 * options); 3 the simulated cluster fails (any error diagnostic); 1 internal or environment
 * error (e.g. the database cannot be written); 4 (`import` only) inconclusive: the evidence
 * neither shows a hang nor rules one out (doc/import.md "Outcomes"). A header of constants only: every file of the
 * cli wing may include it.
 */
#ifndef SRC_CLI_EXIT_CODES_H
#define SRC_CLI_EXIT_CODES_H

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_INTERNAL = 1,
    CLI_EXIT_INVALID = 2,
    CLI_EXIT_FAILED = 3,
    CLI_EXIT_INCONCLUSIVE = 4,
};

#endif
