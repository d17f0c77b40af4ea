/* src/cli/main.c — entry point; everything lives in cli.c. */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
