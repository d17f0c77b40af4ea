/* src/cli/main.c — entry point; everything lives in cli.c. */
#include <locale.h>

#include "cli.h"

int main(int argc, char **argv)
{
    /* The terminal's charset only (LC_CTYPE): help and messages know whether they may print
     * UTF-8 (src/cli/help.h). Numbers keep the C locale: JSON, CSV and SQL need '.' decimals. */
    setlocale(LC_CTYPE, "");
    return cli_main(argc, argv);
}
