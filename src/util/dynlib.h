/* src/util/dynlib.h — a table of function pointers filled from a library loaded at run time
 * (GModule), as the plotter loads cairo and `sweep --mpi` loads MPI: each entry names a symbol
 * and where its address goes in the caller's table. */
#ifndef SRC_UTIL_DYNLIB_H
#define SRC_UTIL_DYNLIB_H

#include <gmodule.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *symbol;
    size_t offset;  /* in the caller's table */
    bool optional;  /* missing: its slot NULL; otherwise missing is a failure */
} DynlibSymbol;

/* Writes each symbol's address of `m` at `table` + offset. Returns NULL, or the first required
 * symbol that `m` lacks (the table then partly filled). */
const char *dynlib_fill(GModule *m, const DynlibSymbol *symbols, size_t n, void *table);

#endif
