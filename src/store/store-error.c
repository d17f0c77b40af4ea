/* src/store/store-error.c — the STORE_ERROR domain; see store-error.h. */
#include "store-error.h"

G_DEFINE_QUARK(ranksim - store - error - quark, store_error)

bool store_error_is_user(const GError *err)
{
    return err && err->domain == STORE_ERROR &&
           (err->code == STORE_ERROR_FOREIGN || err->code == STORE_ERROR_NEWER ||
            err->code == STORE_ERROR_MISSING);
}
