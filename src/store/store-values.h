/* src/store/store-values.h — values read back from a database, checked as if they were input
 * (for the modules of src/store/ only). A database is a file anyone can edit: a schema-valid
 * file may hold a rank of 2^40, a negative size, text that is not UTF-8 or JSON nested 100,000
 * levels deep. The readers turn such values into "not there" (a row skipped, a detail dropped,
 * a text with U+FFFD for its bad bytes) rather than trust them for an allocation, a loop bound
 * or a recursive parser. Costs: one pass over each text read.
 */
#ifndef SRC_STORE_VALUES_H
#define SRC_STORE_VALUES_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The most ranks a stored run can have: MAX_RANKS of src/input/input-limits.h (no scenario or
 * import asks for more), so a rank read back is in [0, STORE_MAX_RANKS). */
#define STORE_MAX_RANKS 1048576
/* The most distinct names (op names) a run's name table holds when read back: ids are dense
 * from 0, one per distinct name; 2^24 is far above any run's (a 1,024-rank GLM-5 prefill has
 * a few thousand). */
#define STORE_MAX_NAMES 16777216
/* JSON stored by ranksim (group members, diagnostic details) nests a few levels; what nests
 * deeper than YAML's limit (64, src/input) is not ranksim's and is not parsed. */
#define STORE_MAX_JSON_DEPTH 64
/* The largest JSON text parsed back (a diagnostic's detail, a group's members), bytes. */
#define STORE_MAX_JSON_BYTES (16u << 20)

/* A copy of `t` that is valid UTF-8 (bad bytes become U+FFFD); NULL for NULL. Caller frees. */
char *store_value_text(const unsigned char *t);
/* Whether `t` may be handed to a JSON parser: valid UTF-8, at most STORE_MAX_JSON_BYTES, nested
 * at most STORE_MAX_JSON_DEPTH levels (counted without parsing, strings skipped). */
bool store_value_json_ok(const char *t);
/* Whether `v` is a rank: 0 <= v < STORE_MAX_RANKS. */
static inline bool store_value_rank_ok(int64_t v)
{
    return v >= 0 && v < STORE_MAX_RANKS;
}

#endif
