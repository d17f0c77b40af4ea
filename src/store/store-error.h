/* src/store/store-error.h — the results database's error domain (STORE_ERROR), shared by every
 * module of src/store/ that writes (store.c, store-ops.c, store-prune.c), so none of them needs
 * another's header for it.
 *
 * Codes say who can fix the failure: STORE_ERROR_FAILED is the machine's (exit 1), the others
 * the user's (exit 2; store_error_is_user). Messages name the database path and SQLite's
 * message.
 */
#ifndef SRC_STORE_ERROR_H
#define SRC_STORE_ERROR_H

#include <glib.h>
#include <stdbool.h>

#define STORE_ERROR (store_error_quark())
GQuark store_error_quark(void);

typedef enum {
    STORE_ERROR_FAILED = 0, /* SQLite or I/O failure (exit 1) */
    STORE_ERROR_FOREIGN,    /* not a ranksim database, or not a regular file (exit 2) */
    STORE_ERROR_NEWER,      /* written by a newer ranksim (exit 2) */
    STORE_ERROR_MISSING,    /* store_open_readonly: no such file (exit 2) */
    STORE_ERROR_OLDER,      /* an older schema where it is not upgraded (a merge's input;
                               exit 2) */
} StoreErrorCode;

/* What an SQLite result code (primary or extended) means for the user and what to do, as a
 * tail for a message (" — the disk is full: ..."), or "" when SQLite's message says it all.
 * Static; never NULL. */
const char *store_error_advice(int sqlite_rc);

/* Whether `err` is the user's to fix (a foreign, newer or missing database): exit 2, not 1. */
bool store_error_is_user(const GError *err);

#endif
