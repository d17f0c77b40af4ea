/* src/cli/cli.c — the `ranksim` dispatcher: the table of subcommands (commands.h; each parses
 * its own options with a GOptionContext, so `ranksim run --help` works), `help [COMMAND]`,
 * `--version`, and stdout folded at the terminal's width and flushed with its errors checked.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "cmd-common.h"
#include "commands.h"
#include "revision.h"
#include "../util/outfile.h"
#include "../util/textwrap.h"

static void print_error(const char *msg)
{
    cli_error("%s", msg);
}

/* The command list: on stdout for a help request (exit 0), on stderr after a missing command. */
static void usage(FILE *to)
{
    fprintf(to,
            "Usage: ranksim COMMAND [OPTIONS]\n"
            "\n"
            "Simulates every rank of an LLM-inference cluster and reports hangs, collective\n"
            "mismatches, timeouts and the time line.\n"
            "\n"
            "Commands:\n"
            "  run SCENARIO            simulate one scenario file and store the result\n"
            "  sweep SCENARIO --vary KEY=V1,V2,...\n"
            "                          run every combination of the values on a thread pool\n"
            "  runs                    list the stored runs\n"
            "  report [RUN|latest]     print the report of a stored run\n"
            "  explain RUN             tell why a run failed: first divergence, wait-for graph\n"
            "                          (--dot FILE for Graphviz), cycles, culprits, watchdog\n"
            "  trace RUN -o FILE.json  write the Chrome/Perfetto trace of a stored run\n"
            "  plot RUN -o FILE.png    draw its time line (.png, .svg, .pdf): lanes per rank,\n"
            "                          the culprit marked\n"
            "  diff RUN_A RUN_B        compare two stored runs\n"
            "  prune RUN...|--sweep N|--older-than AGE\n"
            "                          delete stored runs from every table at once\n"
            "  merge OUT.db IN.db...   merge result databases (a sweep's --shard K/N parts)\n"
            "                          into one, in one transaction\n"
            "  import PATH...          diagnose a real hang from Flight Recorder dumps or NCCL\n"
            "                          logs and store it as a run\n"
            "  match RUN SCENARIO      replay a hypothesis: does the scenario reproduce the\n"
            "                          imported hang (same group, instance, sizes, culprit)?\n"
            "  cost --hardware HW KIND key=value...\n"
            "                          one kernel's or collective's predicted time (gemm,\n"
            "                          attention, moe, collective)\n"
            "  nccl-tests --hardware HW --op all_reduce -b 8 -e 8G -f 2 -g 8\n"
            "                          the table nccl-tests prints, predicted for the hardware\n"
            "  list models|hardware|backends\n"
            "                          what this binary knows: presets, checkpoints, devices\n"
            "  help [COMMAND]          show help\n"
            "\n"
            "Options:\n"
            "  --version        print the version\n"
            "\n"
            "Run 'ranksim COMMAND --help' for the options of a command.\n");
}

static int dispatch(int argc, char **argv);

/* Whether the command's stdout is text for a person (folded at the terminal's width): not
 * JSON, DOT or a trace written to stdout (`--json`, `-o -`, `--dot -`), nor nccl-tests' table,
 * nor after `--` (a
 * pasted vLLM command line is read, not printed, but its flags are not ranksim's to judge). */
static bool text_output(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nccl-tests") == 0) /* a table to compare column by column */
        return false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--csv") == 0 ||
            strcmp(argv[i], "-o-") == 0 || strcmp(argv[i], "--dot=-") == 0 ||
            strcmp(argv[i], "--output=-") == 0)
            return false;
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--dot") == 0 ||
             strcmp(argv[i], "--output") == 0) &&
            i + 1 < argc && strcmp(argv[i + 1], "-") == 0)
            return false;
    }
    return true;
}

int cli_main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    bool wrapped = text_output(argc, argv) && text_wrap_stdout();
    int code = dispatch(argc, argv);
    int werr = wrapped ? text_wrap_finish() : 0;
    if (werr) {
        if (code != CLI_EXIT_INTERNAL) {
            g_autofree char *msg = g_strdup_printf("writing to stdout: %s", g_strerror(werr));
            print_error(msg);
        }
        return CLI_EXIT_INTERNAL;
    }
    /* A failed write to stdout (a full disk, a closed pipe) is an environment error, whatever
     * the command did: exit 1 with the reason rather than a silent truncated output. */
    g_autoptr(GError) err = NULL;
    if (!out_file_flush_stdout(&err)) {
        if (code != CLI_EXIT_INTERNAL) /* else the command has said why already */
            print_error(err->message);
        return CLI_EXIT_INTERNAL;
    }
    return code;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_INVALID;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("ranksim %s (%s)\n", RANKSIM_VERSION, RANKSIM_REVISION);
        return CLI_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
    } commands[] = {
        {"run", cli_run},       {"sweep", cli_sweep},     {"runs", cli_runs},
        {"report", cli_report}, {"explain", cli_explain}, {"trace", cli_trace},
        {"diff", cli_diff},     {"plot", cli_plot},       {"list", cli_list},
        {"import", cli_import}, {"match", cli_match},     {"prune", cli_prune},
        {"cost", cli_cost},     {"merge", cli_merge},
        {"nccl-tests", cli_nccl_tests},
    };
    /* GLib's usage line starts with the program name: "ranksim run [OPTION...] SCENARIO". */
    g_autofree char *prg =
        g_strdup_printf("ranksim %s", argc >= 3 && strcmp(cmd, "help") == 0 ? argv[2] : cmd);
    g_set_prgname(prg);
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc < 3) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        char *args[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(2, args);
        g_autofree char *msg =
            g_strdup_printf("help: unknown command '%s'; valid: run, sweep, runs, report, explain, "
                            "trace, plot, diff, list, import, match, cost, nccl-tests",
                            argv[2]);
        print_error(msg);
        return CLI_EXIT_INVALID;
    }
    g_autofree char *msg =
        g_strdup_printf("unknown command '%s'; valid: run, sweep, runs, report, explain, trace, "
                        "plot, diff, list, import, match, cost, nccl-tests, help",
                        cmd);
    print_error(msg);
    return CLI_EXIT_INVALID;
}
