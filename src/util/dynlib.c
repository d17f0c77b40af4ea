/* src/util/dynlib.c — function tables filled from a loaded library; see dynlib.h. */
#include "dynlib.h"

#include <string.h>

const char *dynlib_fill(GModule *m, const DynlibSymbol *symbols, size_t n, void *table)
{
    for (size_t i = 0; i < n; i++) {
        gpointer fn = NULL;
        if ((!g_module_symbol(m, symbols[i].symbol, &fn) || !fn) && !symbols[i].optional)
            return symbols[i].symbol;
        memcpy((char *)table + symbols[i].offset, &fn, sizeof fn);
    }
    return NULL;
}
