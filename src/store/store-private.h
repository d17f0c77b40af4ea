/* src/store/store-private.h — the inside of store.h, for the modules of src/store/ (and tests)
 * only: the open SQLite connection of a Store. Nothing outside src/store/ speaks SQL; the rest
 * of the program reads and writes the database through src/store/'s functions.
 */
#ifndef SRC_STORE_PRIVATE_H
#define SRC_STORE_PRIVATE_H

#include <sqlite3.h>

#include "store.h"

/* The connection of `s` (owned by `s`, closed by store_close). */
sqlite3 *store_db(Store *s);

#endif
