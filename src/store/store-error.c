/* src/store/store-error.c — the STORE_ERROR domain; see store-error.h. */
#include "store-error.h"

#include <sqlite3.h>

G_DEFINE_QUARK(ranksim - store - error - quark, store_error)

bool store_error_is_user(const GError *err)
{
    return err && err->domain == STORE_ERROR &&
           (err->code == STORE_ERROR_FOREIGN || err->code == STORE_ERROR_NEWER ||
            err->code == STORE_ERROR_MISSING || err->code == STORE_ERROR_OLDER);
}

const char *store_error_advice(int sqlite_rc)
{
    switch (sqlite_rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return " — another ranksim (or another program) is writing to this database and holds "
               "its write lock; try again when it has finished, or use another --db file";
    case SQLITE_FULL:
        return " — the disk is full: free some space or use another --db file, then try again";
    case SQLITE_IOERR:
        return " — the file system refused a read or a write (a full disk, removed media or a "
               "read-only mount?); check the disk, then try again";
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return " — the file cannot be written (read-only file, folder or media); use another "
               "--db file";
    case SQLITE_CANTOPEN:
        return " — the file cannot be opened (permissions, or a folder that cannot be written)";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return " — the file is damaged; keep a copy for inspection and use another --db file";
    case SQLITE_NOMEM:
        return " — out of memory";
    default:
        return "";
    }
}
